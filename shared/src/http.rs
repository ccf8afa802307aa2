//! The HTTP shell shared by every function and the local process: the versioned base, the
//! gate (request id, language, body size, token, rate limit, route, scope), JSON 404/405, and
//! around it the HTTP conventions of [`conventions`] (CORS, compression, ETags and 304).
//!
//! Order of checks (docs/http-conventions.md#order-of-checks): token (401), rate limit (429),
//! scope (403), then the handler's own validation (400) and lookups (404). A CORS preflight is
//! answered before the gate; a conditional GET answered 304 went through every check, and its
//! call is given back.

pub mod conventions;

use std::sync::Arc;
use std::time::Instant;

use axum::Router;
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Utc};
use http::{HeaderMap, HeaderName, HeaderValue};
use tracing::Instrument;

use self::conventions::{CorsPolicy, NotModified};
use crate::auth::{Caller, authenticate_any};
use crate::error::{ApiError, Rendered};
use crate::extract::BODY_LIMIT;
use crate::lang::Lang;
use crate::oauth::{self, AccessTokens, METADATA_PATH};
use crate::request::{RequestCtx, WriteBody};
use crate::routes::{self, Access, BASE_PATH, Kind, Match, Route};
use crate::scope::Scope;
use crate::state::AppState;
use crate::store::{TokenRecord, UNAUTHENTICATED};
use crate::write::{Logged, Sender, Source, log_refusal};

pub const X_REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");
pub const X_RATELIMIT_LIMIT: HeaderName = HeaderName::from_static("x-ratelimit-limit");
pub const X_RATELIMIT_REMAINING: HeaderName = HeaderName::from_static("x-ratelimit-remaining");
pub const X_RATELIMIT_RESET: HeaderName = HeaderName::from_static("x-ratelimit-reset");

/// The routes under the base with what runs inside the gate, innermost last: exports (which
/// read the routes' own pages, [`crate::export`]) and idempotent writes
/// ([`crate::idempotency`]).
fn admitted(router: Router<AppState>, state: &AppState) -> Router {
    let api: Router = Router::new()
        .nest(BASE_PATH, router)
        .fallback(|| async { ApiError::unknown_path() })
        .layer(DefaultBodyLimit::max(BODY_LIMIT))
        .with_state(state.clone());
    api.clone()
        .layer(middleware::from_fn_with_state(
            state.clone(),
            crate::idempotency::replay,
        ))
        .layer(middleware::from_fn_with_state(api, crate::export::pages))
}

/// The full application: `router` (paths relative to the base) mounted under `/api/v1`, its
/// answers following the HTTP conventions (module [`conventions`], layers in the order it
/// gives).
pub fn app(router: Router<AppState>, state: AppState) -> Router {
    let app = admitted(router, &state).layer(middleware::from_fn(conventions::etag));
    // Brotli where the process offers it (the local process), inside tower-http's gzip.
    let app = match conventions::brotli_offered() {
        Some(step) => step(app),
        None => app,
    };
    let app = app
        .layer(conventions::compression())
        .layer(middleware::from_fn(conventions::conditional))
        .layer(middleware::from_fn_with_state(state.clone(), gate));
    let app = match CorsPolicy::new(&state.config.cors_origins) {
        Some(policy) => app.layer(middleware::from_fn_with_state(policy, conventions::cors)),
        None => app,
    };
    // The MCP endpoint's OAuth metadata, at the well-known path and at it followed by the
    // endpoint's path (RFC 9728 §3.1), outside the versioned base and the gate.
    match &state.access_tokens {
        Some(verifier) => Router::new()
            .route(METADATA_PATH, axum::routing::get(resource_metadata))
            .route(
                &verifier.config().metadata_path(),
                axum::routing::get(resource_metadata),
            )
            .with_state(verifier.clone())
            .fallback_service(app),
        None => app,
    }
}

/// [`app`] without the HTTP conventions, for requests sent in process on behalf of a caller
/// ([`OnBehalfOf`], the MCP function's tool calls): no client sees their HTTP answers, whose
/// bodies become tool results, so there is nothing to tag, compress or share across origins.
pub fn in_process_app(router: Router<AppState>, state: AppState) -> Router {
    admitted(router, &state).layer(middleware::from_fn_with_state(state, gate))
}

/// Marks a request sent in process on behalf of a caller the gate already admitted (the MCP
/// function's tool calls). Its token was checked when the carrying message came in, and the
/// call counted by the MCP function (the message's own count, or [`count_call`]), so the gate
/// neither authenticates nor counts it again; route, scope, validation and the write log apply
/// as for any request. Only code in the process can set it: extensions never come from the wire.
#[derive(Debug, Clone)]
pub struct OnBehalfOf {
    pub caller: Caller,
    /// The outer request's id, which the inner one shares.
    pub request_id: String,
}

/// A write refused before its token was accepted (401, or 429 counted per client address),
/// kept by the gate to log it: under the token's tenant when the token is known (expired or
/// revoked), else by client address.
#[derive(Debug, Clone)]
struct Unauthenticated {
    route: &'static Route,
    known: Option<Box<TokenRecord>>,
    client: String,
    path: String,
}

impl Unauthenticated {
    fn sender<'a>(&'a self, request_id: &'a str) -> Sender<'a> {
        let (tenant, token_name, source) = match &self.known {
            Some(t) => (
                t.tenant.as_str(),
                t.name.as_str(),
                Source::Token { hash: &t.hash },
            ),
            None => (UNAUTHENTICATED, "", Source::Address(&self.client)),
        };
        Sender {
            tenant,
            token_name,
            source,
            method: self.route.method.as_str(),
            path: &self.path,
            request_id,
        }
    }
}

/// Rate-limit state of the caller for this request. A handler that counts further calls of
/// its caller ([`count_call`]) puts the latest in its response's extensions, and the gate
/// answers with it.
#[derive(Debug, Clone, Copy)]
pub struct Quota {
    pub limit: u64,
    pub remaining: u64,
    pub reset: i64,
    pub exceeded: bool,
}

impl Quota {
    /// Puts the rate-limit headers every answer carries: `X-RateLimit-Limit`,
    /// `X-RateLimit-Remaining`, `X-RateLimit-Reset`, and `Retry-After` past the quota.
    pub fn put(&self, headers: &mut HeaderMap) {
        headers.insert(X_RATELIMIT_LIMIT, HeaderValue::from(self.limit));
        headers.insert(X_RATELIMIT_REMAINING, HeaderValue::from(self.remaining));
        headers.insert(X_RATELIMIT_RESET, HeaderValue::from(self.reset));
        if self.exceeded {
            headers.insert(http::header::RETRY_AFTER, HeaderValue::from(self.reset));
        }
    }
}

fn request_id(req: &Request) -> String {
    // A call made on behalf of a caller keeps the request id of the message that carried it.
    if let Some(on_behalf) = req.extensions().get::<OnBehalfOf>() {
        return on_behalf.request_id.clone();
    }
    // Under Lambda, API Gateway's request id ties our log to its own.
    if let Some(ctx) = req
        .extensions()
        .get::<lambda_http::request::RequestContext>()
        && let lambda_http::request::RequestContext::ApiGatewayV2(c) = ctx
        && let Some(id) = &c.request_id
    {
        return id.clone();
    }
    format!("{:016x}", rand::random::<u64>())
}

async fn gate(State(state): State<AppState>, mut req: Request, next: Next) -> Response {
    let started = Instant::now();
    let id = request_id(&req);
    let lang = Lang::from_headers(req.headers());
    let span = tracing::info_span!("request", request_id = %id, method = %req.method(), path = %req.uri().path());
    async move {
        let now = Utc::now();
        // The MCP endpoint's 401 names its OAuth metadata when an issuer is configured.
        let challenge = challenge_of(&state, &req);
        let (outcome, quota) = admit(&state, &mut req, &id, now).await;
        let caller = req.extensions().get::<Caller>().cloned();
        let request = req.extensions().get::<RequestCtx>().cloned();
        let unauthenticated = req.extensions_mut().remove::<Unauthenticated>();
        let mut res = match outcome {
            Ok(()) => next.run(req).await,
            Err(e) => e.to_response(lang),
        };
        #[cfg(debug_assertions)]
        if let (Some(r), Some(keys)) = (
            &request,
            res.extensions().get::<crate::envelope::MetaKeysAnswered>(),
        ) {
            for key in &keys.0 {
                debug_assert!(
                    crate::envelope::route_answers(r.route, key),
                    "{} answered meta.{key}, which the document does not declare for it",
                    r.route.op
                );
            }
        }
        // A handler that counted more calls (an MCP batch) answers with the latest count.
        let mut quota = res.extensions().get::<Quota>().copied().or(quota);
        // A conditional GET answered 304 costs nothing (as on GitHub's REST API): its call,
        // counted before the handler ran (the 429 comes before it), is given back.
        if res.extensions().get::<NotModified>().is_some()
            && let (Some(c), Some(q)) = (&caller, quota.as_mut())
        {
            match refund(&state, &token_bucket(&c.token_hash), now.timestamp()).await {
                Ok(()) => q.remaining = (q.remaining + 1).min(q.limit),
                Err(e) => tracing::warn!(error = %e, "rate-limit refund failed"),
            }
        }
        if let (Some(c), Some(r)) = (&caller, &request)
            && r.route.kind == Kind::Write
            && res.extensions().get::<Logged>().is_none()
        {
            log_refusal(&state, &Sender::caller(c, r), Some(&r.body), res.status()).await;
        } else if let Some(u) = &unauthenticated {
            log_refusal(&state, &u.sender(&id), None, res.status()).await;
        }
        if lang == Lang::En
            && let Some(Rendered(e)) = res.extensions().get::<Rendered>().cloned()
        {
            let headers = res.headers().clone();
            res = e.to_response(Lang::En);
            for (k, v) in &headers {
                if k != http::header::CONTENT_LENGTH && k != http::header::CONTENT_ENCODING {
                    res.headers_mut().insert(k, v.clone());
                }
            }
        }
        let status = res.status();
        let h = res.headers_mut();
        if let Ok(v) = HeaderValue::from_str(&id) {
            h.insert(X_REQUEST_ID, v);
        }
        if let Some(q) = quota {
            q.put(h);
        }
        if status == http::StatusCode::UNAUTHORIZED {
            let value = match &challenge {
                Some((verifier, token_sent)) => verifier.config().challenge(*token_sent),
                None => HeaderValue::from_static("Bearer"),
            };
            h.insert(http::header::WWW_AUTHENTICATE, value);
        }
        tracing::info!(
            status = status.as_u16(),
            micros = started.elapsed().as_micros() as u64,
            "served"
        );
        // Who called, for the metrics line outside the gate (shared/src/metrics.rs).
        if let Some(c) = caller {
            res.extensions_mut().insert(c);
        }
        res
    }
    .instrument(span)
    .await
}

/// The verifier of OAuth access tokens when `found` is a route that takes them and the
/// process has one.
fn oauth_route<'a>(state: &'a AppState, found: &Match) -> Option<&'a Arc<dyn AccessTokens>> {
    match found {
        Match::Found(route) if oauth::takes_access_tokens(route.function) => {
            state.access_tokens.as_ref()
        }
        _ => None,
    }
}

/// For a request to a route that takes OAuth access tokens: the issuer's configuration, for
/// the challenge of a 401, and whether a token was sent.
fn challenge_of(state: &AppState, req: &Request) -> Option<(Arc<dyn AccessTokens>, bool)> {
    state.access_tokens.as_ref()?;
    let rest = req.uri().path().strip_prefix(BASE_PATH)?;
    let verifier = oauth_route(state, &routes::find(req.method(), rest))?;
    let token_sent = req.headers().contains_key(http::header::AUTHORIZATION);
    Some((verifier.clone(), token_sent))
}

/// Protected resource metadata (RFC 9728), public: it names the issuer and the scopes, no
/// tenant data. Any origin may read it (a browser-based MCP client discovers it).
async fn resource_metadata(State(verifier): State<Arc<dyn AccessTokens>>) -> Response {
    let mut res = axum::Json(verifier.config().metadata()).into_response();
    res.headers_mut().insert(
        http::header::ACCESS_CONTROL_ALLOW_ORIGIN,
        HeaderValue::from_static("*"),
    );
    res
}

/// Runs every check before the handler; on success the [`Caller`] is in the request.
async fn admit(
    state: &AppState,
    req: &mut Request,
    request_id: &str,
    now: DateTime<Utc>,
) -> (Result<(), ApiError>, Option<Quota>) {
    let Some(rest) = req.uri().path().strip_prefix(BASE_PATH) else {
        return (Err(ApiError::unknown_path()), None);
    };
    let found = routes::find(req.method(), if rest.is_empty() { "/" } else { rest });
    if let Match::Found(route) = &found
        && route.access == Access::Public
    {
        return (Ok(()), None);
    }
    let (token, quota) = match req.extensions_mut().remove::<OnBehalfOf>() {
        // An in-process call (an MCP tool) already admitted and counted by its caller.
        Some(OnBehalfOf { caller: c, .. }) => {
            let token = crate::store::TokenRecord {
                hash: c.token_hash,
                tenant: c.tenant,
                name: c.token_name,
                scopes: c.scopes,
                created_at: 0,
                expires_at: c.expires_at.timestamp(),
                revoked_at: None,
                last_used_at: None,
            };
            (token, None)
        }
        None => {
            let token = match authenticate_any(
                state.stores.tokens.as_ref(),
                oauth_route(state, &found).map(|v| v.as_ref()),
                req.headers().get(http::header::AUTHORIZATION),
                now.timestamp(),
            )
            .await
            {
                Ok(t) => {
                    crate::auth::note_use(&state.stores.tokens, &t.hash, now.timestamp());
                    t
                }
                Err(refused) => {
                    let client = client_address(req);
                    if let Match::Found(route) = &found
                        && route.kind == Kind::Write
                    {
                        let path = req.uri().path().to_owned();
                        req.extensions_mut().insert(Unauthenticated {
                            route,
                            known: refused.known,
                            client: client.clone(),
                            path,
                        });
                    }
                    // Calls without a valid token count per client address, with the same
                    // limit, so they carry the rate-limit headers too and cannot hammer the
                    // token lookup.
                    let e = refused.error;
                    return match count_address(state, &client, now).await {
                        Ok(q) if q.exceeded => {
                            (Err(ApiError::rate_limited(q.reset as u64)), Some(q))
                        }
                        Ok(q) => (Err(e), Some(q)),
                        Err(_) => (Err(e), None),
                    };
                }
            };
            match consume(state, &token_bucket(&token.hash), now.timestamp()).await {
                Ok(q) => (token, Some(q)),
                Err(e) => return (Err(e), None),
            }
        }
    };
    let exceeded = quota.as_ref().is_some_and(|q| q.exceeded);
    let rate_limited = || {
        let reset = quota.as_ref().map_or(0, |q| q.reset);
        ApiError::rate_limited(reset as u64)
    };
    let route = match found {
        Match::Found(r) => r,
        Match::NotFound if exceeded => return (Err(rate_limited()), quota),
        Match::NotFound => return (Err(ApiError::unknown_path()), quota),
        Match::MethodNotAllowed(_) if exceeded => return (Err(rate_limited()), quota),
        Match::MethodNotAllowed(allowed) => {
            let e = ApiError::method_not_allowed(allowed.join(", "));
            return (Err(e), quota);
        }
    };
    // Bodies over 64 KiB are refused after the token and the rate limit, so that the 413
    // carries the rate-limit headers and, on a write, is logged. A write's body is read for
    // the log, unless the call is over its quota (it is not read then); a declared length
    // over the limit is refused without reading. A collect batch has its own limits, which
    // its handler checks while reading (`crate::collect`).
    let declared = req
        .headers()
        .get(http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok())
        .filter(|n| *n > BODY_LIMIT as u64 && route.kind != Kind::Collect);
    let (body, unreadable) = match (route.kind, exceeded, declared) {
        (Kind::Write, false, Some(length)) => (WriteBody::TooLarge { length }, None),
        (Kind::Write, false, None) => match buffer_body(req).await {
            Ok(b) => (b, None),
            Err(e) => (WriteBody::default(), Some(e)),
        },
        _ => (WriteBody::default(), None),
    };
    let too_large = !exceeded && (declared.is_some() || matches!(body, WriteBody::TooLarge { .. }));
    let expires_at = DateTime::from_timestamp(token.expires_at, 0).unwrap_or(now);
    let path = req.uri().path().to_owned();
    tracing::Span::current().record("tenant", token.tenant.as_str());
    // A collect credential (a token holding any collect scope: `netops token create` never
    // mixes them with others) sends batches and reads nothing; only collect credentials and
    // machines' agent credentials send batches (the scope of the kind, or that agents send
    // it, is checked by the collect handler, which knows it).
    // An agent token (a machine's credential or a tenant's enrollment token) calls the agent
    // routes of its own scope, a machine's credential the collect route too, and nothing
    // else; no other token calls them.
    let collector = token.scopes.iter().any(|s| s.is_collect());
    let agent = token.scopes.iter().any(|s| s.is_agent());
    let scopes_ok = match route.access {
        Access::Scoped(scope) => token.scopes.contains(&scope) && !collector && !agent,
        Access::Token => !collector && !agent,
        Access::Collect => collector || token.scopes.contains(&Scope::Agent),
        Access::Agent(scope) => token.scopes.contains(&scope),
        Access::Public => true,
    };
    // The caller is known from here on: a refused write is logged under its name.
    req.extensions_mut().insert(Caller {
        tenant: token.tenant,
        token_name: token.name,
        token_hash: token.hash,
        scopes: token.scopes,
        expires_at,
    });
    req.extensions_mut().insert(RequestCtx {
        route,
        request_id: request_id.to_owned(),
        path,
        body,
        idempotency: None,
    });
    if exceeded {
        return (Err(rate_limited()), quota);
    }
    if too_large {
        return (Err(ApiError::payload_too_large()), quota);
    }
    if let Some(e) = unreadable {
        return (Err(e), quota);
    }
    if !scopes_ok {
        let e = match route.access {
            _ if agent => ApiError::agent_only(true),
            Access::Agent(scope) => ApiError::agent_only(false).with("scope", scope.as_str()),
            Access::Scoped(scope) => ApiError::forbidden(scope),
            Access::Collect => ApiError::collect_only(false),
            _ => ApiError::collect_only(true),
        };
        return (Err(e), quota);
    }
    (Ok(()), quota)
}

/// The caller's address: API Gateway's source IP under Lambda, the peer address locally.
fn client_address(req: &Request) -> String {
    if let Some(lambda_http::request::RequestContext::ApiGatewayV2(c)) =
        req.extensions()
            .get::<lambda_http::request::RequestContext>()
        && let Some(ip) = &c.http.source_ip
    {
        return ip.clone();
    }
    req.extensions()
        .get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
        .map(|c| c.0.ip().to_string())
        .unwrap_or_else(|| "unknown".into())
}

/// Counts a call made without a valid token against its client address (the address's
/// bucket, with the tokens' limit): the gate's 401s, and the refusals the local server's HTTP
/// layer makes before a request reaches the gate (a head it cannot parse or that timed out).
pub async fn count_address(
    state: &AppState,
    client: &str,
    now: DateTime<Utc>,
) -> Result<Quota, ApiError> {
    consume(state, &format!("anon:{client}"), now.timestamp()).await
}

/// The rate-limit bucket of a token, named by the start of its hash.
fn token_bucket(hash: &str) -> String {
    format!("tok:{}", &hash[..16.min(hash.len())])
}

/// Counts one more call of `caller`'s token, as a REST call would be counted: the tool calls of
/// an MCP message beyond the first, which the message's own count covers (docs/mcp.md#quota).
pub async fn count_call(state: &AppState, caller: &Caller) -> Result<Quota, ApiError> {
    let bucket = token_bucket(&caller.token_hash);
    consume(state, &bucket, Utc::now().timestamp()).await
}

/// The counter of `bucket` for the window holding `now`, and the window's start.
fn counter(state: &AppState, bucket: &str, now: i64) -> (String, i64) {
    let start = now - now.rem_euclid(state.config.rate_window_secs);
    (format!("rl:{bucket}:{start}"), start)
}

/// Counts this call against the bucket's window (600 calls per 60 s by default), in the
/// store so that every function and instance shares the count (in memory for the one local
/// process).
async fn consume(state: &AppState, bucket: &str, now: i64) -> Result<Quota, ApiError> {
    let window = state.config.rate_window_secs;
    let (key, start) = counter(state, bucket, now);
    let count = state.stores.counters.incr(&key, start + window).await?;
    let limit = state.config.rate_limit;
    Ok(Quota {
        limit,
        remaining: limit.saturating_sub(count),
        reset: (start + window - now).max(1),
        exceeded: count > limit,
    })
}

/// Gives back the call [`consume`] counted at `now` (the same window, even if it has ended
/// since).
async fn refund(state: &AppState, bucket: &str, now: i64) -> crate::store::StoreResult<()> {
    let (key, _) = counter(state, bucket, now);
    state.stores.counters.refund(&key).await
}

/// Reads a write's body for the log and puts it back; past [`BODY_LIMIT`] bytes it stops
/// reading, and the body is [`WriteBody::TooLarge`] by the bytes received so far.
async fn buffer_body(req: &mut Request) -> Result<WriteBody, ApiError> {
    use http_body_util::BodyExt;
    let mut body = std::mem::take(req.body_mut());
    let mut bytes = bytes::BytesMut::new();
    while let Some(frame) = body.frame().await {
        let frame =
            frame.map_err(|_| ApiError::invalid_body("lecture impossible", "unreadable"))?;
        if let Ok(data) = frame.into_data() {
            let length = bytes.len() + data.len();
            if length > BODY_LIMIT {
                return Ok(WriteBody::TooLarge {
                    length: length as u64,
                });
            }
            bytes.extend_from_slice(&data);
        }
    }
    let bytes = bytes.freeze();
    *req.body_mut() = axum::body::Body::from(bytes.clone());
    Ok(WriteBody::Read(bytes))
}
