//! The tokens port: API tokens, of which only the SHA-256 of the secret is kept.

use async_trait::async_trait;

use crate::StoreResult;
use netops_routes::scope::Scope;

/// A token as stored: only the SHA-256 of the secret is kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenRecord {
    pub hash: String,
    pub tenant: String,
    pub name: String,
    pub scopes: Vec<Scope>,
    pub created_at: i64,
    pub expires_at: i64,
    pub revoked_at: Option<i64>,
    /// When a request last used it, to within [`LAST_USED_EVERY_SECS`]; `None`: not since
    /// last-used times are kept.
    pub last_used_at: Option<i64>,
}

/// Last-used times are kept to within this many seconds: a token's time is written at most
/// once per this span, whatever the number of requests, processes or instances.
pub const LAST_USED_EVERY_SECS: i64 = 300;

/// API tokens (docs/http-conventions.md#authentication).
#[async_trait]
pub trait Tokens: Send + Sync + 'static {
    /// The token whose secret has this hash, if any (revoked and expired ones included).
    async fn by_hash(&self, hash: &str) -> StoreResult<Option<TokenRecord>>;
    /// Fails with [`crate::StoreError::Exists`] when the tenant has an active token of
    /// that name.
    async fn insert(&self, token: &TokenRecord) -> StoreResult<()>;
    /// Revokes the tenant's active token of that name; false when there is none.
    async fn revoke(&self, tenant: &str, name: &str, at: i64) -> StoreResult<bool>;
    /// Rotation: `new` (same tenant and name as `old`) becomes the name's active token, and
    /// `old` stays valid until `old_until` (its expiry brought forward, never pushed back).
    /// False, with nothing written, when `old` is no longer the name's active token.
    async fn rotate(
        &self,
        old: &TokenRecord,
        new: &TokenRecord,
        old_until: i64,
    ) -> StoreResult<bool>;
    /// Records that the token was used at `at`, unless a use at most [`LAST_USED_EVERY_SECS`]
    /// before was recorded (one conditional write); true when it wrote.
    async fn touch(&self, hash: &str, at: i64) -> StoreResult<bool>;
    /// The tenant's tokens, oldest first (ties by name).
    async fn list(&self, tenant: &str) -> StoreResult<Vec<TokenRecord>>;
}
