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
}

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
    /// The tenant's tokens, oldest first (ties by name).
    async fn list(&self, tenant: &str) -> StoreResult<Vec<TokenRecord>>;
}
