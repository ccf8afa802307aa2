//! Bearer tokens (docs/http-conventions.md#authentication): `nop_` + 40 base62 characters; only
//! the SHA-256 is stored; lookups compare in constant time.

use axum::extract::FromRequestParts;
use chrono::{DateTime, Utc};
use http::request::Parts;
use rand::Rng;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::error::ApiError;
use crate::oauth::AccessTokens;
use crate::scope::Scope;
use crate::store::{LAST_USED_EVERY_SECS, StoreError, TokenRecord, Tokens};

pub const TOKEN_PREFIX: &str = "nop_";
const TOKEN_CHARS: usize = 40;
const BASE62: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/// A fresh random token.
pub fn generate_token() -> String {
    let mut rng = rand::rng();
    let body: String = (0..TOKEN_CHARS)
        .map(|_| BASE62[rng.random_range(0..BASE62.len())] as char)
        .collect();
    format!("{TOKEN_PREFIX}{body}")
}

/// Hex SHA-256 of a token: the only form kept in storage.
pub fn hash_token(token: &str) -> String {
    sha256_hex(token.as_bytes())
}

/// Hex SHA-256 of some bytes.
pub fn sha256_hex(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// Creates and stores a token; returns the secret, shown once.
pub async fn create_token(
    tokens: &dyn Tokens,
    tenant: &str,
    name: &str,
    scopes: Vec<Scope>,
    ttl: chrono::Duration,
) -> Result<(String, TokenRecord), StoreError> {
    let (secret, record) = new_token(tenant, name, scopes, ttl);
    tokens.insert(&record).await?;
    Ok((secret, record))
}

/// A fresh secret and the record of its token, created now.
fn new_token(
    tenant: &str,
    name: &str,
    scopes: Vec<Scope>,
    ttl: chrono::Duration,
) -> (String, TokenRecord) {
    let secret = generate_token();
    let now = Utc::now().timestamp();
    let record = TokenRecord {
        hash: hash_token(&secret),
        tenant: tenant.to_owned(),
        name: name.to_owned(),
        scopes,
        created_at: now,
        expires_at: now + ttl.num_seconds(),
        revoked_at: None,
        last_used_at: None,
    };
    (secret, record)
}

/// When this process last had a token's use recorded, by hash.
static NOTED: std::sync::LazyLock<std::sync::Mutex<std::collections::HashMap<String, i64>>> =
    std::sync::LazyLock::new(Default::default);

/// Entries past which [`NOTED`] drops the ones older than the span, on the next use noted.
const NOTED_SWEPT_AT: usize = 10_000;

/// Records an accepted token's use for its last-used time, off the request's path (a task of
/// its own) and at most once per [`LAST_USED_EVERY_SECS`] per token and process: the store's
/// write is conditional too ([`Tokens::touch`]), so all processes together write a token's
/// time at most once per span, and a burst of requests costs one write at most.
pub fn note_use(tokens: &std::sync::Arc<dyn Tokens>, hash: &str, now: i64) {
    {
        let Ok(mut noted) = NOTED.lock() else {
            return;
        };
        if noted
            .get(hash)
            .is_some_and(|at| now - at < LAST_USED_EVERY_SECS)
        {
            return;
        }
        if noted.len() > NOTED_SWEPT_AT {
            noted.retain(|_, at| now - *at < LAST_USED_EVERY_SECS);
        }
        noted.insert(hash.to_owned(), now);
    }
    let (tokens, hash) = (tokens.clone(), hash.to_owned());
    tokio::spawn(async move {
        if let Err(e) = tokens.touch(&hash, now).await {
            tracing::warn!(error = %e, "a token's last-used time was not recorded");
        }
    });
}

/// Rotates the tenant's active token `name`: a new secret with the same scopes and the same
/// lifetime from now, while the old one keeps working for `overlap` (never past its own
/// expiry), then is refused as expired. `None` when the name has no active token (or it
/// changed meanwhile).
pub async fn rotate_token(
    tokens: &dyn Tokens,
    tenant: &str,
    name: &str,
    overlap: chrono::Duration,
) -> Result<Option<(String, TokenRecord)>, StoreError> {
    let now = Utc::now().timestamp();
    let active = tokens
        .list(tenant)
        .await?
        .into_iter()
        .filter(|t| t.name == name && t.revoked_at.is_none() && t.expires_at > now)
        .max_by_key(|t| (t.created_at, t.expires_at));
    let Some(old) = active else {
        return Ok(None);
    };
    rotate_record(tokens, &old, overlap).await
}

/// Rotates the token `old` as [`rotate_token`] does, given its record (an agent rotating its
/// own credential, whose record its hash finds: no listing of the tenant's tokens). `None`
/// when it was rotated or revoked meanwhile.
pub async fn rotate_record(
    tokens: &dyn Tokens,
    old: &TokenRecord,
    overlap: chrono::Duration,
) -> Result<Option<(String, TokenRecord)>, StoreError> {
    let lifetime = chrono::Duration::seconds(old.expires_at - old.created_at);
    let (secret, record) = new_token(&old.tenant, &old.name, old.scopes.clone(), lifetime);
    let until = record.created_at + overlap.num_seconds();
    Ok(tokens
        .rotate(old, &record, until)
        .await?
        .then_some((secret, record)))
}

/// Who calls: the token's tenant, name and scopes, placed in the request by the gate after the
/// token, rate-limit and scope checks (what the request is, route and body, is apart:
/// [`crate::request::RequestCtx`]). Handlers take it to learn their tenant: no tenant data
/// can be read without it.
#[derive(Debug, Clone)]
pub struct Caller {
    pub tenant: String,
    pub token_name: String,
    pub token_hash: String,
    pub scopes: Vec<Scope>,
    pub expires_at: DateTime<Utc>,
}

/// The token name of a machine's agent credential: this, then the machine's host name
/// (docs/agent.md#credentials).
pub const AGENT_TOKEN_PREFIX: &str = "agent:";

impl Caller {
    /// The machine a machine's agent credential (scope `agent`) is bound to; `None` for any
    /// other token.
    pub fn agent_machine(&self) -> Option<&str> {
        self.token_name
            .strip_prefix(AGENT_TOKEN_PREFIX)
            .filter(|h| !h.is_empty() && self.scopes.contains(&Scope::Agent))
    }
}

impl<S: Send + Sync> FromRequestParts<S> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        parts
            .extensions
            .get::<Caller>()
            .cloned()
            .ok_or_else(|| ApiError::internal(&"route served without the auth layer"))
    }
}

/// A token refused by [`authenticate`]: the error, and the token's record when it is known
/// (expired or revoked), so that a refused write is logged under its tenant and name.
pub struct Refused {
    pub error: ApiError,
    pub known: Option<Box<TokenRecord>>,
}

impl From<ApiError> for Refused {
    fn from(error: ApiError) -> Self {
        Refused { error, known: None }
    }
}

/// The token of an `Authorization: Bearer <token>` header.
fn bearer(header: Option<&http::HeaderValue>) -> Result<&str, ApiError> {
    let Some(value) = header else {
        return Err(ApiError::unauthorized(
            "Jeton manquant : envoyez l'en-tête Authorization: Bearer <jeton>.",
            "Missing token: send the header Authorization: Bearer <token>.",
        ));
    };
    value
        .to_str()
        .ok()
        .and_then(|v| {
            let (scheme, rest) = v.trim().split_once(' ')?;
            scheme.eq_ignore_ascii_case("bearer").then(|| rest.trim())
        })
        .filter(|t| !t.is_empty())
        .ok_or_else(|| {
            ApiError::unauthorized(
                "En-tête Authorization mal formé : attendu « Bearer <jeton> ».",
                "Malformed Authorization header: expected 'Bearer <token>'.",
            )
        })
}

/// Checks the `Authorization` header: a `nop_` token against the store ([`authenticate`]),
/// any other token through `access_tokens` when the route takes OAuth access tokens (the MCP
/// endpoint, docs/mcp.md#oauth) and an issuer is configured.
pub async fn authenticate_any(
    tokens: &dyn Tokens,
    access_tokens: Option<&dyn AccessTokens>,
    header: Option<&http::HeaderValue>,
    now: i64,
) -> Result<TokenRecord, Refused> {
    if let Some(verifier) = access_tokens {
        let token = bearer(header)?;
        if !token.starts_with(TOKEN_PREFIX) {
            return Ok(verifier.verify(token, now).await?);
        }
    }
    authenticate(tokens, header, now).await
}

/// Checks the `Authorization` header against the store: every 401 case of
/// docs/http-conventions.md#authentication.
pub async fn authenticate(
    tokens: &dyn Tokens,
    header: Option<&http::HeaderValue>,
    now: i64,
) -> Result<TokenRecord, Refused> {
    let token = bearer(header)?;
    let unknown = || ApiError::unauthorized("Jeton inconnu.", "Unknown token.");
    if !token.starts_with(TOKEN_PREFIX) || token.len() != TOKEN_PREFIX.len() + TOKEN_CHARS {
        return Err(unknown().into());
    }
    let hash = hash_token(token);
    let record = tokens
        .by_hash(&hash)
        .await
        .map_err(ApiError::from)?
        .ok_or_else(unknown)?;
    if !bool::from(record.hash.as_bytes().ct_eq(hash.as_bytes())) {
        return Err(unknown().into());
    }
    let refused = |fr, en| {
        Err(Refused {
            error: ApiError::unauthorized(fr, en),
            known: Some(Box::new(record.clone())),
        })
    };
    if record.revoked_at.is_some() {
        return refused(
            "Jeton révoqué : créez-en un nouveau.",
            "Token revoked: create a new one.",
        );
    }
    if record.expires_at <= now {
        return refused(
            "Jeton expiré : créez-en un nouveau.",
            "Token expired: create a new one.",
        );
    }
    Ok(record)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;
    use crate::store::StoreResult;

    #[test]
    fn tokens_have_the_documented_shape() {
        let t = generate_token();
        assert!(t.starts_with("nop_"));
        assert_eq!(t.len(), 44);
        assert!(t[4..].bytes().all(|b| b.is_ascii_alphanumeric()));
        assert_ne!(t, generate_token());
        assert_eq!(hash_token("abc").len(), 64);
    }

    /// The embedded store's tokens, counting the last-used writes asked and made.
    struct Counted {
        store: netops_store_sqlite::SqliteStore,
        asked: AtomicUsize,
        written: AtomicUsize,
    }

    #[async_trait::async_trait]
    impl Tokens for Counted {
        async fn by_hash(&self, hash: &str) -> StoreResult<Option<TokenRecord>> {
            self.store.by_hash(hash).await
        }
        async fn insert(&self, token: &TokenRecord) -> StoreResult<()> {
            self.store.insert(token).await
        }
        async fn revoke(&self, tenant: &str, name: &str, at: i64) -> StoreResult<bool> {
            self.store.revoke(tenant, name, at).await
        }
        async fn rotate(
            &self,
            old: &TokenRecord,
            new: &TokenRecord,
            old_until: i64,
        ) -> StoreResult<bool> {
            self.store.rotate(old, new, old_until).await
        }
        async fn touch(&self, hash: &str, at: i64) -> StoreResult<bool> {
            self.asked.fetch_add(1, Ordering::SeqCst);
            let wrote = self.store.touch(hash, at).await?;
            if wrote {
                self.written.fetch_add(1, Ordering::SeqCst);
            }
            Ok(wrote)
        }
        async fn list(&self, tenant: &str) -> StoreResult<Vec<TokenRecord>> {
            self.store.list(tenant).await
        }
    }

    #[tokio::test]
    async fn a_burst_of_uses_writes_the_last_used_time_once_per_span() {
        let dir = tempfile::tempdir().expect("dir");
        let counted = Arc::new(Counted {
            store: netops_store_sqlite::SqliteStore::open(dir.path().join("t.db")).expect("open"),
            asked: AtomicUsize::new(0),
            written: AtomicUsize::new(0),
        });
        let tokens: Arc<dyn Tokens> = counted.clone();
        let (_, token) = create_token(
            tokens.as_ref(),
            "acme",
            "ci",
            vec![],
            chrono::Duration::days(1),
        )
        .await
        .expect("token");
        let t = Utc::now().timestamp();
        for i in 0..100 {
            note_use(&tokens, &token.hash, t + i % 3);
        }
        let used = async |want: i64| {
            for _ in 0..200 {
                let listed = tokens.list("acme").await.expect("list");
                if listed[0].last_used_at == Some(want) {
                    return;
                }
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            }
            panic!("last use never recorded as {want}");
        };
        used(t).await;
        assert_eq!(
            counted.asked.load(Ordering::SeqCst),
            1,
            "one write asked for 100 uses"
        );
        // A span later, once more.
        note_use(&tokens, &token.hash, t + LAST_USED_EVERY_SECS);
        used(t + LAST_USED_EVERY_SECS).await;
        assert_eq!(counted.written.load(Ordering::SeqCst), 2);
    }
}
