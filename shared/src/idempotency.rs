//! Idempotent writes (IETF httpapi draft "The Idempotency-Key HTTP Header Field";
//! docs/writes.md#idempotency). A write sent with `Idempotency-Key` takes the key, per token,
//! for 24 hours:
//!
//! - the first request with the key runs, and its accepted answer is kept in the transaction
//!   of its state change and log entry ([`crate::write::commit`]): an answer is kept exactly
//!   when the write happened;
//! - a retry with the same key, method, path and body gets that answer again, with
//!   `Idempotent-Replayed: true`, without reaching the handler: no second state change, no
//!   second log entry;
//! - the same key with another request is 422 `idempotency_key_reused`; a key whose first
//!   request is still in flight is 409 `conflict`; both are refusals, logged as such;
//! - a request that commits nothing (refused, or the store failed) frees the key, so that a
//!   retry is judged again: it changed nothing, so running it again changes nothing twice.
//!   A key whose process stopped in flight is taken over after
//!   [`crate::store::ABANDONED_AFTER_SECS`].
//!
//! Keys live beside the tenant's data with an expiry (TTL on DynamoDB, swept in the embedded
//! file). Only committed writes keep theirs, and writes are rate-limited, so a token holds
//! at most its quota's worth of keys a day.

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use chrono::Utc;
use http::{HeaderName, HeaderValue, StatusCode, header};

use crate::auth::{Caller, sha256_hex};
use crate::error::{ApiError, ErrorCode, Msg};
use crate::request::{ClaimedKey, RequestCtx, WriteBody};
use crate::routes::Kind;
use crate::state::AppState;
use crate::store::{HeldKey, KeyClaim};
use crate::write::Logged;

pub const IDEMPOTENCY_KEY: HeaderName = HeaderName::from_static("idempotency-key");
pub const IDEMPOTENT_REPLAYED: HeaderName = HeaderName::from_static("idempotent-replayed");

/// How long a key is kept, s.
pub const KEPT_SECS: i64 = 86_400;

/// The longest key taken, characters.
pub const KEY_MAX: usize = 255;

/// The key of a request's header: 1 to [`KEY_MAX`] visible ASCII characters, taken as sent
/// or as a quoted string (the draft's Structured Field form), which are the same key.
pub(crate) fn parse_key(value: &HeaderValue) -> Result<String, ApiError> {
    let invalid = || {
        ApiError::invalid_parameter(
            "Idempotency-Key",
            "de 1 à 255 caractères ASCII visibles attendus",
            "1 to 255 visible ASCII characters expected",
        )
    };
    let text = value.to_str().map_err(|_| invalid())?.trim();
    let key = text
        .strip_prefix('"')
        .and_then(|t| t.strip_suffix('"'))
        .unwrap_or(text);
    let visible = key.bytes().all(|b| b.is_ascii_graphic());
    if key.is_empty() || key.len() > KEY_MAX || !visible {
        return Err(invalid());
    }
    Ok(key.to_owned())
}

/// What identifies a request: its method, path (query included) and body.
fn fingerprint(req: &Request, body: &WriteBody) -> String {
    let target = req
        .uri()
        .path_and_query()
        .map_or(req.uri().path(), |p| p.as_str());
    let mut text = format!("{} {target}\n", req.method()).into_bytes();
    if let WriteBody::Read(bytes) = body {
        text.extend_from_slice(bytes);
    }
    sha256_hex(&text)
}

/// The middleware, after the gate: takes the key of an admitted write that sends one, or
/// answers for the request that holds it.
pub async fn replay(State(state): State<AppState>, mut req: Request, next: Next) -> Response {
    let (Some(ctx), Some(caller), Some(value)) = (
        req.extensions().get::<RequestCtx>(),
        req.extensions().get::<Caller>(),
        req.headers().get(IDEMPOTENCY_KEY),
    ) else {
        return next.run(req).await;
    };
    if ctx.route.kind != Kind::Write {
        return next.run(req).await;
    }
    let key = match parse_key(value) {
        Ok(k) => k,
        Err(e) => return e.into_response(),
    };
    let now = Utc::now().timestamp();
    let tenant = caller.tenant.clone();
    let claim = KeyClaim {
        key: format!(
            "{}|{key}",
            &caller.token_hash[..32.min(caller.token_hash.len())]
        ),
        fingerprint: fingerprint(&req, &ctx.body),
        claim: format!("{:032x}", rand::random::<u128>()),
        at: now,
        expires_at: now + KEPT_SECS,
    };
    match state.stores.writes.claim_key(&tenant, &claim).await {
        Err(e) => ApiError::unavailable(&e).into_response(),
        Ok(Some(held)) => answer_held(held, &claim.fingerprint, &key),
        Ok(None) => {
            if let Some(ctx) = req.extensions_mut().get_mut::<RequestCtx>() {
                ctx.idempotency = Some(ClaimedKey {
                    key: claim.key.clone(),
                    claim: claim.claim.clone(),
                });
            }
            let res = next.run(req).await;
            if res.extensions().get::<Logged>().is_none()
                && let Err(e) = state
                    .stores
                    .writes
                    .release_key(&tenant, &claim.key, &claim.claim)
                    .await
            {
                tracing::warn!(cause = %e, "an idempotency key could not be freed: it is taken over later");
            }
            res
        }
    }
}

/// The answer to a request whose key another request holds.
fn answer_held(held: HeldKey, fingerprint: &str, key: &str) -> Response {
    if held.fingerprint != fingerprint {
        return ApiError::new(
            ErrorCode::IdempotencyKeyReused,
            Msg::new(
                format!(
                    "La clé d'idempotence « {key} » a déjà servi à une autre requête (méthode, chemin ou corps différent)."
                ),
                format!(
                    "Idempotency key '{key}' was already used by another request (another method, path or body)."
                ),
            ),
        )
        .into_response();
    }
    let Some(answer) = held.answer else {
        let mut res = ApiError::conflict(
            format!("La requête de clé d'idempotence « {key} » est encore en cours : réessayez dans un instant."),
            format!("The request with idempotency key '{key}' is still in flight: retry in a moment."),
        )
        .into_response();
        res.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(1));
        return res;
    };
    let status = StatusCode::from_u16(answer.status).unwrap_or(StatusCode::OK);
    let mut res = (
        status,
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            ),
            (IDEMPOTENT_REPLAYED, HeaderValue::from_static("true")),
        ],
        answer.body,
    )
        .into_response();
    // The first answer's entry is the log's: a replay adds none.
    res.extensions_mut().insert(Logged);
    res
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_visible_ascii_of_1_to_255_characters() {
        let parse = |s: &str| parse_key(&HeaderValue::from_str(s).expect("header"));
        assert_eq!(parse("abc-123").expect("key"), "abc-123");
        assert_eq!(parse("\"8e03978e-40d5\"").expect("key"), "8e03978e-40d5");
        assert_eq!(parse(&"k".repeat(255)).expect("key").len(), 255);
        for bad in ["", "\"\"", "a b", &"k".repeat(256)] {
            assert!(parse(bad).is_err(), "{bad:?}");
        }
        let latin = HeaderValue::from_bytes(b"cl\xe9").expect("header");
        assert!(parse_key(&latin).is_err());
    }
}
