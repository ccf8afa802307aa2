//! Writes and the write log (docs/writes.md#the-write-log): every write
//! request, accepted or refused, is logged. An accepted write commits its state changes and
//! its entry together; the gate logs the refusals the handler did not commit itself.
//!
//! The log is bounded, so that no caller can grow it faster than the quota allows:
//! - a body is kept up to [`LOGGED_BODY_MAX`] bytes of JSON text; a longer one is kept as a
//!   string of its first bytes, with its whole length and SHA-256;
//! - the path is kept up to [`LOGGED_PATH_MAX`] bytes;
//! - refusals before authentication (401) and over the rate limit (429) keep no body and are
//!   coalesced per token (or client address, when no token is known) and rate-limit window
//!   into one entry with a count;
//! - entries expire `NETOPS_WRITE_LOG_DAYS` after their time.
//!
//! A write refused because the store failed (503) cannot be logged either: it is said in the
//! process log instead, and the store is not asked again.

use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Utc};
use http::StatusCode;
use serde::Serialize;
use serde_json::Value;

use crate::auth::{Caller, sha256_hex};
use crate::envelope::Envelope;
use crate::error::ApiError;
use crate::request::{RequestCtx, WriteBody};
use crate::state::AppState;
use crate::store::{Change, KeptAnswer, StoreError, WriteLogEntry};

/// The most JSON text a kept body takes in an entry, bytes.
pub const LOGGED_BODY_MAX: usize = 4096;

/// The most JSON text a kept path takes in an entry, bytes.
pub const LOGGED_PATH_MAX: usize = 1024;

/// The most bytes an entry takes in the log (its line of `netops writes`) besides its tenant
/// id and token name: the kept body and path, the longest digest, address, request id and
/// times, and the field names (checked by a test against the largest entry).
pub const ENTRY_MAX_FIXED: usize = LOGGED_BODY_MAX + LOGGED_PATH_MAX + 512;

/// The most bytes an entry takes whose tenant id and token name take `names` bytes.
pub fn entry_bound(names: usize) -> usize {
    ENTRY_MAX_FIXED + names
}

/// Marks a response whose write-log entry was committed by the handler.
#[derive(Clone, Copy)]
pub struct Logged;

/// A body as the log keeps it: the value, and the whole length and digest when the value is
/// not all of it.
struct Kept {
    body: Value,
    length: Option<u64>,
    sha256: Option<String>,
}

impl WriteBody {
    fn kept(&self) -> Kept {
        let bytes = match self {
            WriteBody::TooLarge { length } => {
                return Kept {
                    body: Value::Null,
                    length: Some(*length),
                    sha256: None,
                };
            }
            WriteBody::Read(bytes) if bytes.is_empty() => {
                return Kept {
                    body: Value::Null,
                    length: None,
                    sha256: None,
                };
            }
            WriteBody::Read(bytes) => bytes,
        };
        if bytes.len() <= LOGGED_BODY_MAX {
            // The JSON value, or the raw text when it is not JSON.
            let whole = serde_json::from_slice(bytes)
                .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(bytes).into_owned()));
            if json_len(&whole) <= LOGGED_BODY_MAX {
                return Kept {
                    body: whole,
                    length: None,
                    sha256: None,
                };
            }
        }
        Kept {
            body: Value::String(fit(&String::from_utf8_lossy(bytes), LOGGED_BODY_MAX).to_owned()),
            length: Some(bytes.len() as u64),
            sha256: Some(sha256_hex(bytes)),
        }
    }
}

fn json_len(v: &impl Serialize) -> usize {
    serde_json::to_vec(v).map_or(usize::MAX, |t| t.len())
}

/// The longest start of `text` whose JSON string (quotes and escapes included) takes at most
/// `max` bytes.
fn fit(text: &str, max: usize) -> &str {
    let mut used = 2;
    for (i, c) in text.char_indices() {
        used += json_char_len(c);
        if used > max {
            return &text[..i];
        }
    }
    text
}

/// Bytes of `c` in a JSON string as serde_json writes it: two for the short escapes, six for
/// the other controls (`\u0001`), its UTF-8 length otherwise.
fn json_char_len(c: char) -> usize {
    match c {
        '"' | '\\' | '\u{8}' | '\u{c}' | '\n' | '\r' | '\t' => 2,
        c if c < ' ' => 6,
        c => c.len_utf8(),
    }
}

/// When an entry made at `at` leaves the log.
fn expiry(state: &AppState, at: DateTime<Utc>) -> i64 {
    at.timestamp() + i64::from(state.config.write_log_days) * 86_400
}

/// The entry of `caller`'s write `request` answered with `status`, its body kept as the log
/// keeps it.
pub fn entry(
    state: &AppState,
    caller: &Caller,
    request: &RequestCtx,
    status: StatusCode,
) -> WriteLogEntry {
    let at = Utc::now();
    let kept = request.body.kept();
    WriteLogEntry {
        tenant: caller.tenant.clone(),
        at,
        request_id: request.request_id.clone(),
        token_name: caller.token_name.clone(),
        method: request.route.method.to_string(),
        path: fit(&request.path, LOGGED_PATH_MAX).to_owned(),
        body: kept.body,
        status: status.as_u16(),
        body_length: kept.length,
        body_sha256: kept.sha256,
        expires_at: expiry(state, at),
        ..WriteLogEntry::default()
    }
}

/// Why a commit did not happen.
pub enum CommitError {
    /// A conditional change found another state: nothing was written.
    Conflict,
    /// The store or the log failed: nothing was written (503).
    Failed(ApiError),
}

/// Commits `changes` with the log entry of an accepted write and, when the request holds an
/// idempotency key, the answer kept for its retries; gives the answer back to be sent.
pub async fn commit<T: Serialize>(
    state: &AppState,
    caller: &Caller,
    request: &RequestCtx,
    answer: Committed<T>,
    mut changes: Vec<Change>,
) -> Result<Committed<T>, CommitError> {
    if let Some(held) = &request.idempotency {
        let body = crate::time::to_vec(&answer.1)
            .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
            .map_err(|e| CommitError::Failed(ApiError::internal(&e)))?;
        changes.push(Change::Remember {
            key: held.key.clone(),
            claim: held.claim.clone(),
            answer: KeptAnswer {
                status: answer.0.as_u16(),
                body,
            },
        });
    }
    match state
        .stores
        .writes
        .commit(entry(state, caller, request, answer.0), changes)
        .await
    {
        Ok(()) => Ok(answer),
        Err(StoreError::ConditionFailed) => Err(CommitError::Conflict),
        Err(e) => Err(CommitError::Failed(ApiError::unavailable(&e))),
    }
}

/// An accepted write's answer: its status and body. Once [`commit`] gives it back, its log
/// entry is committed, which its response says to the gate ([`Logged`]).
pub struct Committed<T>(pub StatusCode, pub Envelope<T>);

impl<T: Serialize> IntoResponse for Committed<T> {
    fn into_response(self) -> Response {
        let mut res = (self.0, self.1).into_response();
        res.extensions_mut().insert(Logged);
        res
    }
}

/// Who sent a refused write, as far as the gate knows it.
pub struct Sender<'a> {
    /// The token's tenant, or [`crate::store::UNAUTHENTICATED`].
    pub tenant: &'a str,
    /// Empty when no token is known.
    pub token_name: &'a str,
    /// What refusals are coalesced by: the token's hash, or the client address.
    pub source: Source<'a>,
    pub method: &'a str,
    pub path: &'a str,
    pub request_id: &'a str,
}

/// What a sender's refusals are coalesced by.
pub enum Source<'a> {
    Token {
        hash: &'a str,
    },
    /// No token known: the client's address (an IPv6 client's /64, which one client holds
    /// whole).
    Address(&'a str),
}

impl<'a> Sender<'a> {
    /// A caller admitted by the gate (its token valid), sending `r`.
    pub fn caller(c: &'a Caller, r: &'a RequestCtx) -> Self {
        Sender {
            tenant: &c.tenant,
            token_name: &c.token_name,
            source: Source::Token {
                hash: &c.token_hash,
            },
            method: r.route.method.as_str(),
            path: &r.path,
            request_id: &r.request_id,
        }
    }
}

/// Logs a write refused with `status` that the handler did not commit: `body` is the one the
/// gate read (none before authentication). A 401 or 429 counts in its sender's coalesced
/// entry of the window; a 503 (the store failed) is said in the process log only; any other
/// refusal has its own entry.
pub async fn log_refusal(
    state: &AppState,
    sender: &Sender<'_>,
    body: Option<&WriteBody>,
    status: StatusCode,
) {
    if status == StatusCode::SERVICE_UNAVAILABLE {
        tracing::error!(
            request_id = sender.request_id,
            tenant = sender.tenant,
            path = sender.path,
            "write refused with 503 and not logged: the store is unavailable"
        );
        return;
    }
    let at = Utc::now();
    let mut entry = WriteLogEntry {
        tenant: sender.tenant.to_owned(),
        at,
        request_id: sender.request_id.to_owned(),
        token_name: sender.token_name.to_owned(),
        method: sender.method.to_owned(),
        path: fit(sender.path, LOGGED_PATH_MAX).to_owned(),
        status: status.as_u16(),
        expires_at: expiry(state, at),
        ..WriteLogEntry::default()
    };
    let logged = if matches!(
        status,
        StatusCode::UNAUTHORIZED | StatusCode::TOO_MANY_REQUESTS
    ) {
        let window = state.config.rate_window_secs;
        let start = at.timestamp() - at.timestamp().rem_euclid(window);
        let source = match &sender.source {
            Source::Token { hash } => hash[..16.min(hash.len())].to_owned(),
            Source::Address(address) => {
                let address = coalescing_address(address);
                entry.client = Some(address.clone());
                address
            }
        };
        let since = DateTime::from_timestamp(start, 0).unwrap_or(at);
        let key = format!("{source}|{start}|{}", status.as_u16());
        state.stores.writes.coalesce(since, &key, entry).await
    } else {
        if let Some(body) = body {
            let kept = body.kept();
            entry.body = kept.body;
            entry.body_length = kept.length;
            entry.body_sha256 = kept.sha256;
        }
        state.stores.writes.commit(entry, Vec::new()).await
    };
    if let Err(e) = logged {
        tracing::error!(cause = %e, request_id = sender.request_id, "write log unavailable for a refused write");
    }
}

/// The address refusals are coalesced by: an IPv4 address as it is, an IPv6 one as its /64
/// (a client usually holds a whole /64, and could otherwise make one entry per address).
fn coalescing_address(address: &str) -> String {
    match address.parse::<std::net::IpAddr>() {
        Ok(std::net::IpAddr::V6(v6)) if v6.to_ipv4_mapped().is_none() => {
            let s = v6.segments();
            format!("{:x}:{:x}:{:x}:{:x}::/64", s[0], s[1], s[2], s[3])
        }
        Ok(ip) => ip.to_canonical().to_string(),
        Err(_) => fit(address, 64).to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;

    use super::*;

    #[test]
    fn json_char_lengths_are_those_serde_json_writes() {
        let samples = (0..0x80u32)
            .chain([0xe9, 0x152, 0x2028, 0xfeff, 0x1f600])
            .filter_map(char::from_u32);
        for c in samples {
            assert_eq!(json_len(&c.to_string()), 2 + json_char_len(c), "{c:?}");
        }
    }

    #[test]
    fn fit_keeps_the_longest_start_within_the_json_bound() {
        assert_eq!(fit("abc", 5), "abc");
        assert_eq!(fit("abcd", 5), "abc");
        // Escapes count as they are written: a quote takes two bytes, a control six.
        assert_eq!(fit("a\"b", 5), "a\"");
        assert_eq!(fit("\u{1}\u{1}", 8), "\u{1}");
        // Never inside a character.
        assert_eq!(fit("éé", 5), "é");
        assert_eq!(fit("ééé", 1), "");
        let long = "\u{1}é\"x".repeat(3000);
        let kept = fit(&long, LOGGED_BODY_MAX);
        assert!(json_len(&kept) <= LOGGED_BODY_MAX);
        assert!(json_len(&kept) > LOGGED_BODY_MAX - 8, "{}", json_len(&kept));
    }

    #[test]
    fn big_or_escaped_bodies_are_kept_truncated_with_length_and_digest() {
        let small = WriteBody::Read(Bytes::from_static(br#"{"note": "vu"}"#));
        let kept = small.kept();
        assert_eq!(kept.body, serde_json::json!({"note": "vu"}));
        assert_eq!((kept.length, kept.sha256), (None, None));
        // 2,000 control bytes: small, but 12,000 bytes of JSON text.
        let controls = WriteBody::Read(Bytes::from(vec![2u8; 2000]));
        let kept = controls.kept();
        assert!(json_len(&kept.body) <= LOGGED_BODY_MAX);
        assert_eq!(kept.length, Some(2000));
        assert_eq!(kept.sha256, Some(sha256_hex(&[2u8; 2000])));
        let big = WriteBody::TooLarge { length: 70_000 };
        let kept = big.kept();
        assert_eq!((kept.body, kept.length), (Value::Null, Some(70_000)));
    }

    #[test]
    fn the_largest_entry_stays_within_the_stated_bound() {
        // Every field at its longest: a body of escapes, a path of quotes, a 64-byte
        // digest, the longest times and address, a long request id.
        let body = WriteBody::Read(Bytes::from(vec![1u8; 60_000])).kept();
        let entry = WriteLogEntry {
            tenant: "t".repeat(64),
            at: DateTime::<Utc>::MAX_UTC,
            request_id: "r".repeat(64),
            token_name: "n".repeat(100),
            method: "DELETE".into(),
            path: fit(&"\"".repeat(5000), LOGGED_PATH_MAX).to_owned(),
            body: body.body,
            status: 413,
            body_length: Some(u64::MAX),
            body_sha256: body.sha256,
            count: Some(u64::MAX),
            last_at: Some(DateTime::<Utc>::MAX_UTC),
            client: Some("ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255".into()),
            expires_at: i64::MAX,
        };
        let line = serde_json::to_string(&entry).expect("json");
        assert!(
            line.len() <= entry_bound(64 + 100),
            "{} > {}",
            line.len(),
            entry_bound(164)
        );
    }

    #[test]
    fn ipv6_clients_are_coalesced_per_64() {
        assert_eq!(coalescing_address("192.0.2.7"), "192.0.2.7");
        assert_eq!(coalescing_address("::ffff:192.0.2.7"), "192.0.2.7");
        assert_eq!(
            coalescing_address("2001:db8:1:2:aaaa::1"),
            coalescing_address("2001:db8:1:2:bbbb::9")
        );
        assert_eq!(coalescing_address("2001:db8:1:2::1"), "2001:db8:1:2::/64");
        assert_eq!(coalescing_address("unknown"), "unknown");
    }
}
