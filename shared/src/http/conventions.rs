//! What HTTP clients expect of a public API beyond its contract (README "HTTP conventions",
//! and the OpenAPI description): CORS for an allow-list of origins, gzip and brotli
//! compression, strong `ETag`s and conditional GET. `HEAD` is not here: the route table finds
//! the `GET` route for it (`routes::find`) and axum answers it with the `GET` handler's head.
//!
//! [`super::app`] stacks the layers around the gate, outermost first:
//!
//! 1. [`cors`] (only with `NETOPS_CORS_ORIGINS`): a preflight from an allowed origin is
//!    answered here, before the gate, so it needs no token and costs no call; the other
//!    answers to an allowed origin get the CORS headers, errors included.
//! 2. the gate: token, rate limit, route, scope; it gives back the call of a 304.
//! 3. [`conditional`]: names the representation's content-coding in its `ETag` and answers
//!    `If-None-Match` with a 304, dropping the body unread (so a compressed body is never
//!    compressed).
//! 4. [`compression`]: tower-http's gzip, and brotli in builds with the `brotli` feature (the
//!    local process; not the Lambda packages), for textual answers of at least
//!    [`COMPRESS_MIN_BYTES`].
//! 5. [`etag`]: the strong `ETag` of a JSON answer, the SHA-256 of its exact bytes.
//!
//! ETags and content-codings. A strong validator names one representation (RFC 9110 8.8.1),
//! and the gzip and brotli bodies of an answer are other representations than its identity
//! body. tower-http's compression leaves an `ETag` as it is, which would give all three the
//! same strong tag; so the tag is computed once, on the identity bytes, and the coding is
//! appended to it (`"<hash>-gzip"`, `"<hash>-br"`), as Apache's mod_deflate does. Since
//! `If-None-Match` compares weakly (RFC 9110 13.1.2), any of the three tags of the same bytes
//! matches, whichever coding the client holds (Apache's own default, which never matched the
//! suffixed tags, is the mistake avoided here).

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http::header::{
    ACCEPT_LANGUAGE, AUTHORIZATION, CACHE_CONTROL, CONTENT_ENCODING, CONTENT_LENGTH, CONTENT_TYPE,
    ETAG, IF_NONE_MATCH, ORIGIN, RETRY_AFTER, VARY,
};
use http::{Extensions, HeaderMap, HeaderName, HeaderValue, Method, StatusCode, Version};
use http_body_util::BodyExt;
use sha2::{Digest, Sha256};
use tower::{Layer, ServiceExt};
use tower_http::compression::CompressionLayer;
use tower_http::compression::predicate::{And, Predicate, SizeAbove};
use tower_http::cors::{AllowOrigin, CorsLayer};

use super::{X_RATELIMIT_LIMIT, X_RATELIMIT_REMAINING, X_RATELIMIT_RESET, X_REQUEST_ID};
use crate::error::ApiError;

/// Answers smaller than this go uncompressed: they fit in one packet, where compression
/// saves no round trip and costs time on both ends.
pub const COMPRESS_MIN_BYTES: u16 = 1024;

/// How long a browser may keep a preflight's answer (Chromium keeps it at most 2 h).
const PREFLIGHT_MAX_AGE: Duration = Duration::from_secs(3600);

/// What [`etag`] sets on a JSON answer without a `Cache-Control` of its own: a browser may
/// keep it for this user only, and asks again (with `If-None-Match`) before each use.
const REVALIDATE: &str = "private, no-cache";

/// Marks an answer [`conditional`] turned into a 304: the gate gives its call back to the
/// caller's quota.
#[derive(Debug, Clone, Copy)]
pub struct NotModified;

// CORS ---------------------------------------------------------------------------------------

/// The CORS rules of `NETOPS_CORS_ORIGINS` (parsed by `config::parse_origins`).
#[derive(Clone)]
pub struct CorsPolicy {
    origins: Arc<[HeaderValue]>,
    layer: CorsLayer,
}

impl CorsPolicy {
    /// `None` when no origin is allowed: CORS is off.
    pub fn new(origins: &[String]) -> Option<CorsPolicy> {
        let origins: Arc<[HeaderValue]> = origins
            .iter()
            .filter_map(|o| HeaderValue::from_str(o).ok())
            .collect();
        if origins.is_empty() {
            return None;
        }
        let layer = CorsLayer::new()
            .allow_origin(AllowOrigin::list(origins.iter().cloned()))
            .allow_methods([Method::GET, Method::HEAD, Method::POST, Method::PUT])
            // Bearer tokens, not cookies: no credentials mode.
            .allow_headers([
                AUTHORIZATION,
                ACCEPT_LANGUAGE,
                CONTENT_TYPE,
                IF_NONE_MATCH,
                crate::idempotency::IDEMPOTENCY_KEY,
                HeaderName::from_static("mcp-protocol-version"),
            ])
            .expose_headers([
                X_RATELIMIT_LIMIT,
                X_RATELIMIT_REMAINING,
                X_RATELIMIT_RESET,
                RETRY_AFTER,
                X_REQUEST_ID,
                ETAG,
                crate::idempotency::IDEMPOTENT_REPLAYED,
                crate::export::X_EXPORT_MAX_ROWS,
                crate::export::X_EXPORT_TRUNCATED,
            ])
            .max_age(PREFLIGHT_MAX_AGE);
        Some(CorsPolicy { origins, layer })
    }

    fn allows(&self, origin: Option<&HeaderValue>) -> bool {
        origin.is_some_and(|o| self.origins.contains(o))
    }
}

/// tower-http's CORS for a request from an allowed origin; any other request passes as if
/// CORS were off, without a CORS header (tower-http would answer every `OPTIONS` itself, and
/// give an unknown origin the allowed methods and headers). A preflight is an `OPTIONS` with
/// `Access-Control-Request-Method`: a bare `OPTIONS` goes on to the gate. Every answer says
/// `Vary: Origin`, so that no cache hands one origin's answer to another.
pub async fn cors(State(policy): State<CorsPolicy>, req: Request, next: Next) -> Response {
    let allowed = policy.allows(req.headers().get(ORIGIN));
    let bare_options = req.method() == Method::OPTIONS
        && !req
            .headers()
            .contains_key(http::header::ACCESS_CONTROL_REQUEST_METHOD);
    let mut res = if allowed && !bare_options {
        match policy.layer.layer(next).oneshot(req).await {
            Ok(res) => res,
            Err(never) => match never {},
        }
    } else {
        next.run(req).await
    };
    let varies = res
        .headers()
        .get_all(VARY)
        .iter()
        .any(|v| v.to_str().is_ok_and(|v| lists(v, "origin")));
    if !varies {
        res.headers_mut()
            .append(VARY, HeaderValue::from_static("origin"));
    }
    res
}

/// Whether the comma-separated `list` holds `name`, case aside.
fn lists(list: &str, name: &str) -> bool {
    list.split(',')
        .any(|item| item.trim().eq_ignore_ascii_case(name))
}

// Compression --------------------------------------------------------------------------------

/// Whether an answer is text that compresses: JSON, HTML, CSS, JavaScript. PDF reports
/// (already compressed inside) and anything binary are sent as they are.
fn textual(headers: &HeaderMap) -> bool {
    let Some(ct) = headers.get(CONTENT_TYPE).and_then(|v| v.to_str().ok()) else {
        return false;
    };
    let essence = ct.split(';').next().unwrap_or("").trim();
    essence.eq_ignore_ascii_case("application/json")
        || essence.to_ascii_lowercase().ends_with("+json")
        || essence.eq_ignore_ascii_case("application/javascript")
        || essence
            .get(..5)
            .is_some_and(|p| p.eq_ignore_ascii_case("text/"))
}

fn compressible(_: StatusCode, _: Version, headers: &HeaderMap, _: &Extensions) -> bool {
    textual(headers)
}

type Compressible = fn(StatusCode, Version, &HeaderMap, &Extensions) -> bool;

/// tower-http's compression: gzip or brotli as `Accept-Encoding` prefers (identity for any
/// other or malformed value), at tower-http's default levels (gzip 6, brotli 4), for textual
/// answers of at least [`COMPRESS_MIN_BYTES`]; those answers say `Vary: Accept-Encoding`
/// whatever the coding. Brotli only in builds with the `brotli` feature: without it, tower-http
/// offers gzip alone and `br` counts as any other unknown coding.
pub fn compression() -> CompressionLayer<And<SizeAbove, Compressible>> {
    CompressionLayer::new()
        .compress_when(SizeAbove::new(COMPRESS_MIN_BYTES).and(compressible as Compressible))
}

// ETags and conditional GET ------------------------------------------------------------------

/// The strong entity tag of `bytes`: the first 128 bits of their SHA-256, in hex, quoted.
pub fn strong_etag(bytes: &[u8]) -> HeaderValue {
    let digest = Sha256::digest(bytes);
    let mut tag = String::with_capacity(34);
    tag.push('"');
    for b in &digest[..16] {
        tag.push(char::from_digit(u32::from(b >> 4), 16).unwrap_or('0'));
        tag.push(char::from_digit(u32::from(b & 0xf), 16).unwrap_or('0'));
    }
    tag.push('"');
    HeaderValue::from_str(&tag).unwrap_or(HeaderValue::from_static("\"\""))
}

fn readable(method: &Method) -> bool {
    method == Method::GET || method == Method::HEAD
}

/// Gives a JSON answer to `GET` (or `HEAD`) its strong `ETag`, from its exact bytes, and a
/// `Cache-Control` of `private, no-cache` unless it has one. Answers that set their own tag
/// (the docs function's, computed once) are left alone.
pub async fn etag(req: Request, next: Next) -> Response {
    let get = readable(req.method());
    let res = next.run(req).await;
    if !get
        || res.status() != StatusCode::OK
        || res.headers().contains_key(ETAG)
        || !textual(res.headers())
        || crate::export::is_export(res.headers())
    {
        // An export is streamed: it is never held whole to be tagged.
        return res;
    }
    let (mut parts, body) = res.into_parts();
    // JSON answers are built whole in memory: collecting them copies nothing.
    let bytes = match body.collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(e) => return ApiError::internal(&e).into_response(),
    };
    parts.headers.insert(ETAG, strong_etag(&bytes));
    parts
        .headers
        .entry(CACHE_CONTROL)
        .or_insert(HeaderValue::from_static(REVALIDATE));
    Response::from_parts(parts, Body::from(bytes))
}

/// The opaque part of a strong entity tag (quotes off); `None` for a weak or malformed one.
fn opaque(tag: &HeaderValue) -> Option<&str> {
    tag.to_str()
        .ok()?
        .strip_prefix('"')?
        .strip_suffix('"')
        .filter(|o| !o.contains('"'))
}

/// The content-codings [`compression`] may name in a tag.
const CODINGS: [&str; 2] = ["gzip", "br"];

/// Names the content-coding of a compressed answer in its `ETag`, then answers a matching
/// `If-None-Match` with `304 Not Modified` and no body. Only `GET` and `HEAD` answered 200
/// are concerned (RFC 9110 13.2.1: a condition is ignored for any other answer).
pub async fn conditional(req: Request, next: Next) -> Response {
    let get = readable(req.method());
    let conditions: Vec<HeaderValue> = if get {
        req.headers()
            .get_all(IF_NONE_MATCH)
            .iter()
            .cloned()
            .collect()
    } else {
        Vec::new()
    };
    let mut res = next.run(req).await;
    if !get || res.status() != StatusCode::OK {
        return res;
    }
    let Some(base) = res.headers().get(ETAG).and_then(opaque).map(str::to_owned) else {
        return res;
    };
    if let Some(coding) = res.headers().get(CONTENT_ENCODING).cloned()
        && let Ok(coding) = coding.to_str()
        && let Ok(tag) = HeaderValue::from_str(&format!("\"{base}-{coding}\""))
    {
        res.headers_mut().insert(ETAG, tag);
    }
    if !conditions.is_empty() && none_match(&conditions, &base) {
        return not_modified(res);
    }
    res
}

/// The 304 for an answer: its headers but those describing the body it no longer has
/// (RFC 9110 15.4.5); the body is dropped unread.
fn not_modified(res: Response) -> Response {
    let (mut parts, _unread) = res.into_parts();
    parts.status = StatusCode::NOT_MODIFIED;
    for name in [CONTENT_TYPE, CONTENT_LENGTH, CONTENT_ENCODING] {
        parts.headers.remove(name);
    }
    parts.extensions.insert(NotModified);
    Response::from_parts(parts, Body::empty())
}

/// axum writes a `Content-Length` from the body's size on every answer, so `0` on a 304,
/// which RFC 9110 8.6 forbids (it must be the 200's length, or absent) and which a cache
/// could take for the stored answer's new length: removed where the answer leaves the
/// process (the local server, the Lambda function).
pub fn leaving(mut res: Response) -> Response {
    if res.status() == StatusCode::NOT_MODIFIED {
        res.headers_mut().remove(CONTENT_LENGTH);
    }
    res
}

/// Whether the `If-None-Match` field (all its lines) matches the representation whose
/// identity tag is `"<base>"`. The comparison is the weak one RFC 9110 13.1.2 prescribes, so
/// `W/"x"` matches `"x"`, and a tag naming one of our codings (`"<base>-gzip"`) matches the
/// tag it was made from. `*` matches any current representation. A field that does not
/// parse as a list of entity tags is ignored: the answer is the full one.
pub fn none_match(fields: &[HeaderValue], base: &str) -> bool {
    let mut matched = false;
    for field in fields {
        match entity_tags(field.as_bytes()) {
            Some(Tags::Any) => matched = true,
            Some(Tags::List(tags)) => {
                matched |= tags.iter().any(|tag| {
                    *tag == base.as_bytes()
                        || CODINGS.iter().any(|c| {
                            tag.strip_suffix(c.as_bytes())
                                .and_then(|t| t.strip_suffix(b"-"))
                                .is_some_and(|t| t == base.as_bytes())
                        })
                });
            }
            None => return false,
        }
    }
    matched
}

enum Tags<'a> {
    Any,
    /// The opaque parts of the tags, quotes off.
    List(Vec<&'a [u8]>),
}

/// `If-None-Match = "*" / #entity-tag`, `entity-tag = [ "W/" ] DQUOTE *etagc DQUOTE`,
/// `etagc = %x21 / %x23-7E / obs-text` (RFC 9110 8.8.3, 13.1.2); empty list elements and
/// optional whitespace are allowed (5.6.1).
fn entity_tags(field: &[u8]) -> Option<Tags<'_>> {
    let ows = |b: &u8| *b == b' ' || *b == b'\t';
    let trimmed = field.trim_ascii();
    if trimmed == b"*" {
        return Some(Tags::Any);
    }
    let mut tags = Vec::new();
    let mut rest = trimmed;
    loop {
        // Empty elements and the whitespace around them.
        while let Some((first, tail)) = rest.split_first()
            && (*first == b',' || ows(first))
        {
            rest = tail;
        }
        if rest.is_empty() {
            break;
        }
        let tag = rest.strip_prefix(b"W/").unwrap_or(rest);
        let tag = tag.strip_prefix(b"\"")?;
        let end = tag.iter().position(|b| *b == b'"')?;
        let (value, tail) = (&tag[..end], &tag[end + 1..]);
        if !value.iter().all(|b| *b == 0x21 || *b >= 0x23 && *b != 0x7f) {
            return None;
        }
        tags.push(value);
        rest = tail;
        while let Some((first, tail)) = rest.split_first()
            && ows(first)
        {
            rest = tail;
        }
        match rest.split_first() {
            None => break,
            Some((b',', tail)) => rest = tail,
            Some(_) => return None,
        }
    }
    if tags.is_empty() {
        return None;
    }
    Some(Tags::List(tags))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(values: &[&str]) -> Vec<HeaderValue> {
        values
            .iter()
            .map(|v| HeaderValue::from_str(v).expect("header"))
            .collect()
    }

    #[test]
    fn a_strong_etag_is_the_quoted_start_of_the_sha256() {
        let tag = strong_etag(b"{}");
        assert_eq!(tag, "\"44136fa355b3678a1146ad16f7e8649e\"");
        assert_eq!(opaque(&tag), Some("44136fa355b3678a1146ad16f7e8649e"));
        assert_ne!(strong_etag(b"{ }"), tag);
        assert_eq!(opaque(&HeaderValue::from_static("W/\"x\"")), None);
    }

    #[test]
    fn if_none_match_compares_weakly_and_across_our_codings() {
        let base = "abc123";
        for matching in [
            "\"abc123\"",
            "W/\"abc123\"",
            "\"abc123-gzip\"",
            "\"abc123-br\"",
            "\"other\", \"abc123\"",
            " ,\"x\" ,, W/\"abc123-br\" ",
            "*",
        ] {
            assert!(none_match(&fields(&[matching]), base), "{matching}");
        }
        assert!(none_match(&fields(&["\"x\"", "\"abc123\""]), base));
        for other in [
            "\"abc12\"",
            "\"abc123-zstd\"",
            "\"abc123-\"",
            "\"xabc123\"",
            "\"ABC123\"",
        ] {
            assert!(!none_match(&fields(&[other]), base), "{other}");
        }
    }

    #[test]
    fn a_malformed_if_none_match_is_ignored() {
        let base = "abc123";
        for malformed in [
            "abc123",
            "\"abc123",
            "\"abc123\" \"x\"",
            "\"abc123\"x",
            "w/\"abc123\"",
            "\"a b\", \"abc123\"",
            "*, \"abc123\"",
            "\"abc123\", *",
            "",
            ",",
        ] {
            assert!(!none_match(&fields(&[malformed]), base), "{malformed:?}");
        }
        // One malformed line spoils the field.
        assert!(!none_match(&fields(&["\"abc123\"", "nope"]), base));
        // Bytes past ASCII are obs-text, allowed in a tag.
        let obs = HeaderValue::from_bytes(b"\"\xe9t\xe9\", \"abc123\"").expect("header");
        assert!(none_match(&[obs], base));
    }

    #[test]
    fn textual_types_are_compressed_and_tagged_pdf_is_not() {
        let with = |ct: &str| {
            let mut h = HeaderMap::new();
            h.insert(CONTENT_TYPE, HeaderValue::from_str(ct).expect("ct"));
            textual(&h)
        };
        for yes in [
            "application/json",
            "application/json; charset=utf-8",
            "application/problem+json",
            "text/html; charset=utf-8",
            "text/javascript; charset=utf-8",
            "text/css; charset=utf-8",
            "Application/JSON",
        ] {
            assert!(with(yes), "{yes}");
        }
        for no in ["application/pdf", "image/png", "application/octet-stream"] {
            assert!(!with(no), "{no}");
        }
        assert!(!textual(&HeaderMap::new()));
    }
}
