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
use crate::store::{StoreError, TokenRecord, Tokens};

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
    };
    tokens.insert(&record).await?;
    Ok((secret, record))
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
    use super::*;

    #[test]
    fn tokens_have_the_documented_shape() {
        let t = generate_token();
        assert!(t.starts_with("nop_"));
        assert_eq!(t.len(), 44);
        assert!(t[4..].bytes().all(|b| b.is_ascii_alphanumeric()));
        assert_ne!(t, generate_token());
        assert_eq!(hash_token("abc").len(), 64);
    }
}
