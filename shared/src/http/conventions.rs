//! What HTTP clients expect of a public API beyond its contract (docs/http-conventions.md,
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
//! 4. [`compression`]: tower-http's gzip, for textual answers of at least
//!    [`COMPRESS_MIN_BYTES`].
//! 5. [`brotli`], only in a process that offers brotli ([`offer_brotli`]: the local process,
//!    never a Lambda function): the answers [`negotiate`] gives `br`, encoded as tower-http
//!    would; tower-http's layer, outside, leaves an encoded answer alone.
//! 6. [`etag`]: the strong `ETag` of a JSON answer, the SHA-256 of its exact bytes.
//!
//! Brotli in the local process only. A Lambda package compresses with gzip alone: a brotli
//! encoder weighs 0.46 MB of every package zipped (fleet 3.16 -> 2.70 MB), and API Gateway's
//! clients get gzip, or brotli from a CDN in front of it. Brotli was once a feature of this
//! crate (`tower-http/compression-br`) that the local process enabled; but cargo compiles a
//! crate once per build, with every feature its dependents in that build ask for, so `cargo
//! build --workspace` (or `cargo lambda build` from the root) compiled brotli into every
//! function too, and what a package held depended on where it was built from. So no feature
//! of this crate or of tower-http depends on the local process: the local process links the
//! `brotli` crate itself (local/src/br.rs), which no function links, and hands the step over
//! its [`Encoder`] to [`offer_brotli`] when it builds its app. [`super::app`] then adds the
//! [`brotli`] step at the position of the compression, just inside tower-http's layer. The
//! step shares what tower-http decides from: the one predicate ([`worth_compressing`]), the
//! content-coding negotiation of a brotli-enabled tower-http ([`negotiate`]), its headers
//! (`Content-Encoding: br`, `Vary: Accept-Encoding`, no `Content-Length`) and its streaming (a
//! body encoded frame by frame, flushed whenever its source waits; an export is never held
//! whole). The functions never offer brotli: they get tower-http's gzip layer alone, as before.
//!
//! ETags and content-codings. A strong validator names one representation (RFC 9110 8.8.1),
//! and the gzip and brotli bodies of an answer are other representations than its identity
//! body. tower-http's compression leaves an `ETag` as it is, which would give all three the
//! same strong tag; so the tag is computed once, on the identity bytes, and the coding is
//! appended to it (`"<hash>-gzip"`, `"<hash>-br"`), as Apache's mod_deflate does. Since
//! `If-None-Match` compares weakly (RFC 9110 13.1.2), any of the three tags of the same bytes
//! matches, whichever coding the client holds (Apache's own default, which never matched the
//! suffixed tags, is the mistake avoided here).

use std::io;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use http::header::{
    ACCEPT_ENCODING, ACCEPT_LANGUAGE, ACCEPT_RANGES, AUTHORIZATION, CACHE_CONTROL,
    CONTENT_ENCODING, CONTENT_LENGTH, CONTENT_RANGE, CONTENT_TYPE, ETAG, IF_NONE_MATCH, ORIGIN,
    RETRY_AFTER, VARY,
};
use http::{Extensions, HeaderMap, HeaderName, HeaderValue, Method, StatusCode, Version};
use http_body::Frame;
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
    vary(res.headers_mut(), ORIGIN);
    res
}

/// Adds `name` to the answer's `Vary`, unless one of its `Vary` fields lists it already.
fn vary(headers: &mut HeaderMap, name: HeaderName) {
    let varies = headers
        .get_all(VARY)
        .iter()
        .any(|v| v.to_str().is_ok_and(|v| lists(v, name.as_str())));
    if !varies {
        headers.append(VARY, HeaderValue::from(name));
    }
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

/// Which answers are compressed, whatever the coding.
pub type WorthCompressing = And<SizeAbove, Compressible>;

/// The one predicate of tower-http's gzip and of the local process's brotli: textual answers
/// of at least [`COMPRESS_MIN_BYTES`], by their exact size (`Content-Length` or the body's
/// size hint); an answer streamed without a known size (an export) counts as large.
pub fn worth_compressing() -> WorthCompressing {
    SizeAbove::new(COMPRESS_MIN_BYTES).and(compressible as Compressible)
}

/// tower-http's compression: gzip as `Accept-Encoding` prefers (identity for any other or
/// malformed value), at tower-http's default level (6), for [`worth_compressing`] answers;
/// those answers say `Vary: Accept-Encoding` whatever the coding. tower-http is built without
/// its brotli (no `compression-br` feature anywhere in the workspace), so `br` counts here as
/// any other unknown coding; in the local process, the [`brotli`] step inside this layer
/// answers it, and this layer leaves its encoded answers alone (as it does any answer that
/// has a `Content-Encoding`).
pub fn compression() -> CompressionLayer<WorthCompressing> {
    CompressionLayer::new().compress_when(worth_compressing())
}

/// The content-codings of an answer, least preferred first: tower-http's order (its
/// `Encoding`), by which equal q-values prefer `br` to `gzip` and `gzip` to `identity`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Coding {
    Identity,
    Gzip,
    Br,
}

/// The content-coding `Accept-Encoding` prefers among identity, gzip and br: the choice of
/// tower-http 0.6 built with gzip and brotli, by its own rules (its `content_encoding.rs`),
/// so that the local process answers `br` exactly where tower-http's brotli did:
///
/// - every `Accept-Encoding` field is read, but a field that is not visible ASCII is skipped
///   whole; its items are split at `,`, and each item at its first `;`;
/// - the coding is `gzip` (or `x-gzip`), `br` or `identity`, case aside; any other (`*`
///   included) is ignored;
/// - what follows the `;` must be `q=` (or `Q=`) and a q-value (`0` or `1`, a point and up to
///   three digits, at most 1): anything else drops the item (`gzip;q=abc`, `gzip;q =0.5`,
///   `gzip;;q=1`, `gzip;q=0.5;x=1`); without it, q is 1;
/// - items of q 0 are out; the highest q wins, equal ones by [`Coding`]'s order; none left:
///   identity.
pub fn negotiate(headers: &HeaderMap) -> Coding {
    headers
        .get_all(ACCEPT_ENCODING)
        .iter()
        .filter_map(|field| field.to_str().ok())
        .flat_map(|field| field.split(','))
        .filter_map(|item| {
            let (name, param) = match item.split_once(';') {
                Some((name, param)) => (name, Some(param)),
                None => (item, None),
            };
            let coding = coding(name.trim())?;
            let q = match param {
                Some(param) => qvalue(param.trim())?,
                None => 1000,
            };
            Some((coding, q))
        })
        .filter(|(_, q)| *q > 0)
        .max_by_key(|&(coding, q)| (q, coding))
        .map_or(Coding::Identity, |(coding, _)| coding)
}

/// The coding `name` names, case aside; `None` for one we do not produce.
fn coding(name: &str) -> Option<Coding> {
    let is = |coding: &str| name.eq_ignore_ascii_case(coding);
    if is("gzip") || is("x-gzip") {
        Some(Coding::Gzip)
    } else if is("br") {
        Some(Coding::Br)
    } else if is("identity") {
        Some(Coding::Identity)
    } else {
        None
    }
}

/// A `q=` parameter's weight in thousandths (RFC 9110 12.4.2), as tower-http reads it.
fn qvalue(param: &str) -> Option<u16> {
    let value = param
        .strip_prefix("q=")
        .or_else(|| param.strip_prefix("Q="))?;
    let (whole, fraction) = match value.split_once('.') {
        Some((whole, fraction)) => (whole, fraction),
        None => (value, ""),
    };
    let mut q: u16 = match whole {
        "0" => 0,
        "1" => 1000,
        _ => return None,
    };
    if fraction.len() > 3 || !fraction.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    for (digit, weight) in fraction.bytes().zip([100, 10, 1]) {
        q += u16::from(digit - b'0') * weight;
    }
    (q <= 1000).then_some(q)
}

/// The encoder of one answer's body in a content-coding that the process brings itself (the
/// local process's brotli, local/src/br.rs). Each call gives back the encoded bytes it has
/// ready, maybe none.
pub trait Encoder: Send {
    /// Takes the next bytes of the body.
    fn encode(&mut self, input: &[u8]) -> io::Result<Vec<u8>>;
    /// Gives back all it has of what it took, decodable as it is; the stream goes on.
    fn flush(&mut self) -> io::Result<Vec<u8>>;
    /// Ends the stream.
    fn finish(&mut self) -> io::Result<Vec<u8>>;
}

/// Makes the [`Encoder`] of one `br` answer.
pub type NewEncoder = fn() -> Box<dyn Encoder>;

/// What a process adds to its app to answer brotli: the [`brotli`] step over its encoders.
pub type BrotliStep = fn(axum::Router) -> axum::Router;

static BROTLI: OnceLock<BrotliStep> = OnceLock::new();

/// Offers brotli in every [`super::app`] built afterwards in this process (a first offer
/// stands): `step` adds the [`brotli`] step with the process's encoders, e.g.
/// `|app| app.layer(from_fn_with_state(new as NewEncoder, brotli))`. The local process calls
/// it when it builds its app, as a binary picks its allocator: a choice of the binary, which
/// the functions never make, and which changes no feature of any crate they link. The step
/// is built by the caller, so a binary that never offers brotli holds none of its code
/// (only this empty slot).
pub fn offer_brotli(step: BrotliStep) {
    let _ = BROTLI.set(step);
}

/// The brotli step offered in this process, if any.
pub(super) fn brotli_offered() -> Option<BrotliStep> {
    BROTLI.get().copied()
}

/// The brotli step, in a process that offers brotli ([`offer_brotli`]), just inside
/// [`compression`]: what tower-http built with brotli did for the answers [`negotiate`]
/// gives `br`. If the answer is [`worth_compressing`] and not already encoded nor a range
/// (tower-http's own conditions), its body is encoded as it streams, and the answer says
/// `Content-Encoding: br` and `Vary: Accept-Encoding`, without `Content-Length` (unknown
/// until the end) nor `Accept-Ranges`. Any other answer goes on as it is, to tower-http's
/// gzip or identity; tower-http's layer, outside, leaves an encoded answer alone.
pub async fn brotli(State(new): State<NewEncoder>, req: Request, next: Next) -> Response {
    let br = negotiate(req.headers()) == Coding::Br;
    let res = next.run(req).await;
    if !br
        || res.headers().contains_key(CONTENT_ENCODING)
        || res.headers().contains_key(CONTENT_RANGE)
        || !worth_compressing().should_compress(&res)
    {
        return res;
    }
    let (mut parts, body) = res.into_parts();
    vary(&mut parts.headers, ACCEPT_ENCODING);
    parts.headers.remove(ACCEPT_RANGES);
    parts.headers.remove(CONTENT_LENGTH);
    parts
        .headers
        .insert(CONTENT_ENCODING, HeaderValue::from_static("br"));
    Response::from_parts(parts, Body::new(Encoded::new(body, new())))
}

/// A body as an [`Encoder`] encodes it, frame by frame: never held whole. When its source
/// waits, what was taken since the last flush is flushed, as tower-http's encoders do
/// (async-compression), so a client reads a streamed answer as it is written.
struct Encoded {
    source: Body,
    encoder: Box<dyn Encoder>,
    /// Bytes were taken since the last flush.
    unflushed: bool,
    /// The source has ended (its trailers, if any, are kept for the end).
    ended: bool,
    trailers: Option<HeaderMap>,
}

impl Encoded {
    fn new(source: Body, encoder: Box<dyn Encoder>) -> Encoded {
        Encoded {
            source,
            encoder,
            unflushed: false,
            ended: false,
            trailers: None,
        }
    }
}

type Polled = Poll<Option<Result<Frame<Bytes>, axum::Error>>>;

fn data(bytes: io::Result<Vec<u8>>) -> Option<Polled> {
    match bytes {
        Ok(bytes) if bytes.is_empty() => None,
        Ok(bytes) => Some(Poll::Ready(Some(Ok(Frame::data(Bytes::from(bytes)))))),
        Err(e) => Some(Poll::Ready(Some(Err(axum::Error::new(e))))),
    }
}

impl http_body::Body for Encoded {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Polled {
        let this = self.get_mut();
        loop {
            if this.ended {
                return Poll::Ready(this.trailers.take().map(|t| Ok(Frame::trailers(t))));
            }
            match Pin::new(&mut this.source).poll_frame(cx) {
                Poll::Pending => {
                    if !this.unflushed {
                        return Poll::Pending;
                    }
                    this.unflushed = false;
                    // The source wakes this task when it has more.
                    return data(this.encoder.flush()).unwrap_or(Poll::Pending);
                }
                Poll::Ready(Some(Err(e))) => return Poll::Ready(Some(Err(e))),
                Poll::Ready(Some(Ok(frame))) => match frame.into_data() {
                    Ok(bytes) => {
                        if bytes.is_empty() {
                            continue;
                        }
                        this.unflushed = true;
                        if let Some(ready) = data(this.encoder.encode(&bytes)) {
                            return ready;
                        }
                    }
                    Err(frame) => {
                        this.trailers = frame.into_trailers().ok();
                        this.ended = true;
                        if let Some(ready) = data(this.encoder.finish()) {
                            return ready;
                        }
                    }
                },
                Poll::Ready(None) => {
                    this.ended = true;
                    if let Some(ready) = data(this.encoder.finish()) {
                        return ready;
                    }
                }
            }
        }
    }
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
    use axum::Router;
    use axum::routing::get;

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

    fn accepting(fields: &[&str]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for field in fields {
            headers.append(
                ACCEPT_ENCODING,
                HeaderValue::from_str(field).expect("header"),
            );
        }
        headers
    }

    /// tower-http 0.6's own cases (its content_encoding.rs), for the codings it has here
    /// (`deflate` is unknown, as in a tower-http without `compression-deflate`), and the
    /// suite's.
    #[test]
    fn the_coding_is_negotiated_as_tower_http_does() {
        use Coding::{Br, Gzip, Identity};
        for (fields, expected) in [
            (&[][..], Identity),
            (&["gzip"][..], Gzip),
            (&["gzip,br"], Br),
            (&["gzip,x-gzip"], Gzip),
            (&["deflate,x-gzip"], Gzip),
            (&["gzip,deflate,br"], Br),
            (&["gzip;q=0.5,br"], Br),
            (&["gzip;q=0.5,deflate,br"], Br),
            (&["gzip;q=0.5", "br"], Br),
            (&["gzip;q=0.5,deflate", "br"], Br),
            (&["gzip;q=0.5", "deflate", "br"], Br),
            (&["gzip;q=0.5,br;q=0.8"], Br),
            (&["gzip;q=0.8,br;q=0.5"], Gzip),
            (&["gzip;q=0.995,br;q=0.999"], Br),
            (&["gzip;q=0.5,deflate;q=0.6,br;q=0.8"], Br),
            (&["gzip;q=0.8,deflate;q=0.6,br;q=0.5"], Gzip),
            (&["gzip;q=0.6,deflate;q=0.8,br;q=0.5"], Gzip),
            (&["gzip;q=0.995,deflate;q=0.997,br;q=0.999"], Br),
            (&["invalid,gzip"], Gzip),
            (&["gzip;q=0"], Identity),
            (&["gzip;q=0."], Identity),
            (&["gzip;q=0,br;q=0.5"], Br),
            (&["gZiP"], Gzip),
            (&["gzip;q=0.5,br;Q=0.8"], Br),
            (&[" gzip\t; q=0.5 ,\tbr ;\tq=0.8\t"], Br),
            (&["gzip;q =0.5"], Identity),
            (&["gzip;q= 0.5"], Identity),
            (&["gzip;q=-0.1"], Identity),
            (&["gzip;q=00.5"], Identity),
            (&["gzip;q=0.5000"], Identity),
            (&["gzip;q=.5"], Identity),
            (&["gzip;q=1.01"], Identity),
            (&["gzip;q=1.001"], Identity),
            // Equal weights: br, then gzip, then identity.
            (&["br;q=0.5, gzip;q=0.5"], Br),
            (&["identity, gzip"], Gzip),
            (&["identity;q=1, gzip;q=0.9, br;q=0.9"], Identity),
            (&["gzip;q=1.000, br;q=0.999"], Gzip),
            (&["br;q=1.", "gzip"], Br),
            // The suite's (tests/api/http_conventions.rs).
            (&["br"], Br),
            (&["br;q=0.5, gzip;q=0.9"], Gzip),
            (&["GZIP"], Gzip),
            (&["br;q=0, gzip;q=0"], Identity),
            (&["gzip;q=abc"], Identity),
            (&["gzip;q=2"], Identity),
            (&[";;;,,,"], Identity),
            (&["gzip;;q=1"], Identity),
            (&["gzip;q=0.5;x=1, br;q=0.1"], Br),
            (&["*"], Identity),
            (&["compress", "zstd", "deflate"], Identity),
        ] {
            assert_eq!(negotiate(&accepting(fields)), expected, "{fields:?}");
        }
        // A field that is not visible ASCII is skipped whole, the others still count.
        let mut headers = accepting(&["gzip;q=0.1"]);
        headers.append(
            ACCEPT_ENCODING,
            HeaderValue::from_bytes(b"br, \xffgzip").expect("obs-text"),
        );
        assert_eq!(negotiate(&headers), Coding::Gzip);
    }

    /// An encoder that keeps what it takes until a flush or the end, as a real one may, and
    /// marks the end.
    #[derive(Default)]
    struct Held(Vec<u8>);

    impl Encoder for Held {
        fn encode(&mut self, input: &[u8]) -> io::Result<Vec<u8>> {
            self.0.extend_from_slice(input);
            Ok(Vec::new())
        }
        fn flush(&mut self) -> io::Result<Vec<u8>> {
            Ok(std::mem::take(&mut self.0))
        }
        fn finish(&mut self) -> io::Result<Vec<u8>> {
            let mut rest = std::mem::take(&mut self.0);
            rest.extend_from_slice(b"<end>");
            Ok(rest)
        }
    }

    fn held() -> Box<dyn Encoder> {
        Box::new(Held::default())
    }

    /// A body fed by a channel, as an export's is.
    struct Channel(tokio::sync::mpsc::Receiver<Bytes>);

    impl http_body::Body for Channel {
        type Data = Bytes;
        type Error = std::convert::Infallible;

        fn poll_frame(
            mut self: Pin<&mut Self>,
            cx: &mut Context<'_>,
        ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
            self.0.poll_recv(cx).map(|b| b.map(|b| Ok(Frame::data(b))))
        }
    }

    async fn next_data(body: &mut Encoded) -> Option<Bytes> {
        let frame = body.frame().await?.expect("frame");
        Some(frame.into_data().expect("data"))
    }

    #[tokio::test]
    async fn an_encoded_body_streams_and_flushes_whenever_its_source_waits() {
        let (tx, rx) = tokio::sync::mpsc::channel(4);
        let mut body = Encoded::new(Body::new(Channel(rx)), held());
        tx.send(Bytes::from_static(b"first ")).await.expect("send");
        tx.send(Bytes::from_static(b"page")).await.expect("send");
        // The source waits for its next page: what was taken goes out, the rest is unread.
        assert_eq!(
            next_data(&mut body).await.as_deref(),
            Some(&b"first page"[..])
        );
        let waiting = tokio::time::timeout(Duration::from_millis(50), body.frame()).await;
        assert!(
            waiting.is_err(),
            "nothing new to send while the source waits"
        );
        tx.send(Bytes::from_static(b"second")).await.expect("send");
        drop(tx);
        assert_eq!(
            next_data(&mut body).await.as_deref(),
            Some(&b"second<end>"[..])
        );
        assert!(body.frame().await.is_none());
    }

    fn fixed_app(content_type: &'static str, size: usize) -> Router {
        Router::new()
            .route(
                "/",
                get(move || async move { ([(CONTENT_TYPE, content_type)], "x".repeat(size)) }),
            )
            .layer(axum::middleware::from_fn_with_state(
                held as NewEncoder,
                brotli,
            ))
    }

    async fn call(app: &Router, accept: &str) -> (Response, Bytes) {
        let req = Request::builder()
            .uri("/")
            .header(ACCEPT_ENCODING, accept)
            .body(Body::empty())
            .expect("request");
        let res = app.clone().oneshot(req).await.expect("infallible");
        let (parts, body) = res.into_parts();
        let bytes = body.collect().await.expect("body").to_bytes();
        (Response::from_parts(parts, Body::empty()), bytes)
    }

    fn varies(res: &Response) -> Vec<&str> {
        res.headers()
            .get_all(VARY)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .collect()
    }

    #[tokio::test]
    async fn the_brotli_step_encodes_what_tower_http_would_and_leaves_the_rest() {
        let json = fixed_app("application/json", 2000);
        let (res, bytes) = call(&json, "gzip, br").await;
        assert_eq!(res.headers()[CONTENT_ENCODING], "br");
        assert!(!res.headers().contains_key(CONTENT_LENGTH));
        assert_eq!(varies(&res), ["accept-encoding"]);
        assert_eq!(bytes.len(), 2000 + b"<end>".len());
        // Any other coding, or an answer tower-http would not compress, goes on as it is.
        for (app, accept) in [
            (&json, "br;q=0.5, gzip;q=0.9"),
            (&json, "gzip"),
            (&json, "br;q=0"),
            (&fixed_app("application/json", 1023), "br"),
            (&fixed_app("application/pdf", 4000), "br"),
        ] {
            let (res, bytes) = call(app, accept).await;
            assert!(!res.headers().contains_key(CONTENT_ENCODING), "{accept}");
            assert!(varies(&res).is_empty(), "{accept}");
            assert!(!bytes.ends_with(b"<end>"), "{accept}");
        }
        // Inside tower-http's gzip, as in the app: each answer is encoded once, says so once.
        let stacked = json.layer(compression());
        for (accept, coding) in [
            ("br", Some("br")),
            ("gzip, br", Some("br")),
            ("br;q=0.5, gzip", Some("gzip")),
            ("identity", None),
        ] {
            let (res, bytes) = call(&stacked, accept).await;
            let encoding = res.headers().get(CONTENT_ENCODING);
            assert_eq!(
                encoding.map(|v| v.to_str().expect("ascii")),
                coding,
                "{accept}"
            );
            assert_eq!(varies(&res), ["accept-encoding"], "{accept}");
            assert_eq!(bytes.ends_with(b"<end>"), coding == Some("br"), "{accept}");
        }
    }
}
