//! What HTTP clients expect beyond the contract (docs/http-conventions.md): CORS for an
//! allow-list of origins, `HEAD` on every `GET` route, gzip and brotli compression, strong
//! `ETag`s with conditional GET, and bad input to all of them. Over the store the suite runs
//! on (`NETOPS_TEST_STORE`), and through the real binary where hyper's own handling counts.

use std::io::Read;

use axum::body::Body;
use http::{HeaderValue, Method, StatusCode};
use netops_shared::config::Config;
use netops_shared::routes::ROUTES;
use netops_shared::scope::Scope;
use serde_json::Value;
use sha2::{Digest, Sha256};
use tower::ServiceExt;

use crate::helpers::{TestApp, TestResponse, into_test_response};
use crate::serve::served::Serve;

const DASHBOARD: &str = "https://dashboard.example.com";
const LOCAL_PAGE: &str = "http://localhost:5173";

fn gunzip(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(bytes)
        .read_to_end(&mut out)
        .expect("gzip");
    out
}

fn unbrotli(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    brotli::Decompressor::new(bytes, 4096)
        .read_to_end(&mut out)
        .expect("brotli");
    out
}

/// The body as the client reads it, decoded as its `Content-Encoding` says.
fn decoded(res: &TestResponse) -> Vec<u8> {
    match res.header("content-encoding") {
        None => res.bytes.to_vec(),
        Some("gzip") => gunzip(&res.bytes),
        Some("br") => unbrotli(&res.bytes),
        Some(other) => panic!("unexpected coding {other}"),
    }
}

/// The quoted start of the SHA-256 of `bytes`, as the server tags them.
fn tag_of(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    let hex: String = digest[..16].iter().map(|b| format!("{b:02x}")).collect();
    format!("\"{hex}\"")
}

fn remaining(res: &TestResponse) -> u64 {
    res.header("x-ratelimit-remaining")
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no X-RateLimit-Remaining: {:?}", res.headers))
}

fn cors_headers(res: &TestResponse) -> Vec<String> {
    res.headers
        .keys()
        .map(|k| k.as_str().to_owned())
        .filter(|k| k.starts_with("access-control-"))
        .collect()
}

fn varies_on(res: &TestResponse, name: &str) -> bool {
    res.headers
        .get_all("vary")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|v| v.trim().eq_ignore_ascii_case(name))
}

/// An app whose CORS list holds the two test origins, with a rate limit of `limit`.
async fn cors_app(limit: u64) -> TestApp {
    TestApp::with_config(Config {
        cors_origins: vec![DASHBOARD.into(), LOCAL_PAGE.into()],
        rate_limit: limit,
        ..Config::default()
    })
    .await
}

async fn preflight(app: &TestApp, path: &str, origin: &str) -> TestResponse {
    app.request(
        Method::OPTIONS,
        path,
        None,
        None,
        &[
            ("origin", origin),
            ("access-control-request-method", "GET"),
            (
                "access-control-request-headers",
                "authorization, accept-language",
            ),
        ],
    )
    .await
}

// CORS ---------------------------------------------------------------------------------------

#[tokio::test]
async fn cors_is_off_by_default_and_options_answers_as_before() {
    let app = TestApp::shared();
    for path in ["/machines", "/mcp", "/openapi.json"] {
        let res = preflight(app, path, DASHBOARD).await;
        assert!(cors_headers(&res).is_empty(), "{path}: {:?}", res.headers);
        assert!(!res.status.is_success(), "{path}: {}", res.status);
        assert!(!varies_on(&res, "origin"), "{path}");
    }
    let token = app.full_token().await;
    let res = app
        .request(
            Method::GET,
            "/machines",
            Some(&token),
            None,
            &[("origin", DASHBOARD)],
        )
        .await;
    assert_eq!(res.status, StatusCode::OK);
    assert!(cors_headers(&res).is_empty(), "{:?}", res.headers);
}

#[tokio::test]
async fn a_preflight_from_an_allowed_origin_needs_no_token_and_costs_no_call() {
    let app = cors_app(600).await;
    for path in ["/machines", "/mcp", "/openapi.json", "/alerts/hm-1/ack"] {
        let res = preflight(&app, path, DASHBOARD).await;
        assert!(
            res.status.is_success(),
            "{path}: {} {}",
            res.status,
            res.body
        );
        assert!(res.bytes.is_empty(), "{path}");
        assert_eq!(res.header("access-control-allow-origin"), Some(DASHBOARD));
        let methods = res.header("access-control-allow-methods").unwrap_or("");
        for m in ["GET", "HEAD", "POST", "PUT"] {
            assert!(methods.contains(m), "{path}: {methods}");
        }
        let headers = res.header("access-control-allow-headers").unwrap_or("");
        for h in [
            "authorization",
            "accept-language",
            "content-type",
            "if-none-match",
        ] {
            assert!(headers.contains(h), "{path}: {headers}");
        }
        assert!(res.header("access-control-max-age").is_some(), "{path}");
        assert!(
            res.header("access-control-allow-credentials").is_none(),
            "bearer tokens, not cookies"
        );
        assert!(varies_on(&res, "origin"), "{path}");
        // Not counted: no rate-limit headers, and no call of the client's bucket.
        assert!(res.header("x-ratelimit-remaining").is_none(), "{path}");
    }
    let res = app.request(Method::GET, "/machines", None, None, &[]).await;
    assert_eq!(res.status, StatusCode::UNAUTHORIZED);
    assert_eq!(
        remaining(&res),
        599,
        "the preflights cost the client nothing"
    );

    // The other origin of the list is allowed as well, with its own value.
    let res = preflight(&app, "/machines", LOCAL_PAGE).await;
    assert_eq!(res.header("access-control-allow-origin"), Some(LOCAL_PAGE));
}

#[tokio::test]
async fn an_allowed_origin_reads_the_rate_limit_headers_of_answers_and_errors() {
    let app = cors_app(600).await;
    let token = app.token("acme", &[Scope::ReadMachines]).await;
    let origin = [("origin", DASHBOARD)];
    let res = app
        .request(Method::GET, "/machines", Some(&token), None, &origin)
        .await;
    assert_eq!(res.status, StatusCode::OK);
    assert_eq!(res.header("access-control-allow-origin"), Some(DASHBOARD));
    let exposed = res.header("access-control-expose-headers").unwrap_or("");
    for h in [
        "x-ratelimit-limit",
        "x-ratelimit-remaining",
        "x-ratelimit-reset",
        "retry-after",
        "x-request-id",
        "etag",
    ] {
        assert!(exposed.contains(h), "{exposed}");
    }
    assert!(varies_on(&res, "origin"));
    // Errors too: a page reads why it was refused and when to come back.
    for (path, token, status) in [
        ("/machines", None, StatusCode::UNAUTHORIZED),
        ("/flows", Some(token.as_str()), StatusCode::FORBIDDEN),
        ("/nowhere", Some(token.as_str()), StatusCode::NOT_FOUND),
    ] {
        let res = app.request(Method::GET, path, token, None, &origin).await;
        assert_eq!(res.status, status, "{path}");
        assert_eq!(
            res.header("access-control-allow-origin"),
            Some(DASHBOARD),
            "{path}"
        );
        assert!(res.header("x-ratelimit-remaining").is_some(), "{path}");
    }
}

#[tokio::test]
async fn an_origin_not_on_the_list_gets_no_cors_header() {
    let app = cors_app(600).await;
    let token = app.full_token().await;
    for origin in [
        "https://evil.example.com",
        "https://dashboard.example.com:8443",
        "http://dashboard.example.com",
        "https://DASHBOARD.example.com.evil.example",
        "null",
        "",
    ] {
        let res = preflight(&app, "/machines", origin).await;
        assert!(cors_headers(&res).is_empty(), "{origin}: {:?}", res.headers);
        // Answered as any OPTIONS: the gate's 401 without a token.
        assert_eq!(res.status, StatusCode::UNAUTHORIZED, "{origin}");
        assert!(
            varies_on(&res, "origin"),
            "{origin}: a cache keeps origins apart"
        );
        let res = app
            .request(
                Method::GET,
                "/machines",
                Some(&token),
                None,
                &[("origin", origin)],
            )
            .await;
        assert_eq!(res.status, StatusCode::OK, "{origin}");
        assert!(cors_headers(&res).is_empty(), "{origin}: {:?}", res.headers);
    }
    // A bare OPTIONS (no Access-Control-Request-Method) from an allowed origin is no preflight.
    let res = app
        .request(
            Method::OPTIONS,
            "/machines",
            Some(&token),
            None,
            &[("origin", DASHBOARD)],
        )
        .await;
    assert_eq!(res.status, StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(res.header("allow"), Some("GET, HEAD"));
}

// HEAD ---------------------------------------------------------------------------------------

/// A path for each placeholder of the demo data; windowed routes get a fixed window, so
/// that two calls read the same bytes.
fn example_path(route: &netops_shared::routes::Route) -> String {
    let path: String = route
        .path
        .split('/')
        .map(|seg| match seg {
            "{hostname}" => "PAR-LT-0001",
            "{asset}" => "init.js",
            s if s.starts_with('{') => "1",
            s => s,
        })
        .collect::<Vec<_>>()
        .join("/");
    if route.window.is_some() {
        format!("{path}?from=2026-01-01T00:00:00Z&to=2026-01-02T00:00:00Z")
    } else {
        path
    }
}

#[tokio::test]
async fn head_answers_every_get_route_with_its_status_and_headers_and_no_body() {
    let app = TestApp::shared();
    let token = app.full_token().await;
    let mut checked = 0;
    for route in ROUTES.iter().filter(|r| r.method == Method::GET) {
        let path = example_path(route);
        let get = app
            .request(Method::GET, &path, Some(&token), None, &[])
            .await;
        let head = app
            .request(Method::HEAD, &path, Some(&token), None, &[])
            .await;
        let again = app
            .request(Method::GET, &path, Some(&token), None, &[])
            .await;
        assert_eq!(head.status, get.status, "{path}");
        assert!(head.bytes.is_empty(), "HEAD {path} has a body");
        for name in ["content-type", "cache-control", "vary", "allow"] {
            assert_eq!(head.header(name), get.header(name), "{path}: {name}");
        }
        assert_eq!(
            head.header("content-length"),
            Some(get.bytes.len().to_string().as_str()),
            "{path}: the GET's length"
        );
        assert_eq!(
            head.header("etag").is_some(),
            get.header("etag").is_some(),
            "{path}"
        );
        // Answers read up to now (a default period) differ from one call to the next.
        if get.header("etag") == again.header("etag") {
            assert_eq!(head.header("etag"), get.header("etag"), "{path}");
        }
        if route.access != netops_shared::routes::Access::Public {
            assert!(head.header("x-ratelimit-remaining").is_some(), "{path}");
        }
        checked += 1;
    }
    assert!(checked > 60, "{checked}");
    // Errors as for GET, without their body.
    for (path, token, status) in [
        ("/machines", None, StatusCode::UNAUTHORIZED),
        ("/nowhere", Some(token.as_str()), StatusCode::NOT_FOUND),
        ("/mcp", Some(token.as_str()), StatusCode::METHOD_NOT_ALLOWED),
    ] {
        let res = app.request(Method::HEAD, path, token, None, &[]).await;
        assert_eq!(res.status, status, "{path}");
        assert!(res.bytes.is_empty(), "{path}");
    }
    let res = app
        .request(Method::HEAD, "/mcp", Some(&token), None, &[])
        .await;
    assert_eq!(res.header("allow"), Some("POST"));
    let res = app
        .request(Method::DELETE, "/openapi.json", Some(&token), None, &[])
        .await;
    assert_eq!(res.status, StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(res.header("allow"), Some("GET, HEAD"));
}

// Compression --------------------------------------------------------------------------------

#[tokio::test]
async fn large_text_answers_are_compressed_as_accept_encoding_asks() {
    let app = TestApp::shared();
    let token = app.full_token().await;
    for path in [
        "/flows?limit=500",
        "/openapi.json",
        "/docs/swagger-ui-bundle.js",
        "/docs/swagger-ui.css",
        "/machines?limit=100",
    ] {
        let plain = app.get(path, &token).await;
        assert_eq!(plain.status, StatusCode::OK, "{path}");
        assert!(plain.header("content-encoding").is_none(), "{path}");
        assert!(varies_on(&plain, "accept-encoding"), "{path}");
        for (accept, coding) in [
            ("gzip", "gzip"),
            ("br", "br"),
            ("gzip, deflate, br", "br"),
            ("br;q=0.5, gzip;q=0.9", "gzip"),
            ("GZIP", "gzip"),
        ] {
            let res = app
                .request(
                    Method::GET,
                    path,
                    Some(&token),
                    None,
                    &[("accept-encoding", accept)],
                )
                .await;
            assert_eq!(res.status, StatusCode::OK, "{path} {accept}");
            assert_eq!(
                res.header("content-encoding"),
                Some(coding),
                "{path} {accept}"
            );
            assert!(res.header("content-length").is_none(), "{path} {accept}");
            assert!(varies_on(&res, "accept-encoding"), "{path} {accept}");
            assert!(res.bytes.len() < plain.bytes.len() / 2, "{path} {accept}");
            let body = decoded(&res);
            if path.starts_with("/flows") {
                // Flows are read up to now: compare their shape, not their bytes.
                let json: Value = serde_json::from_slice(&body).expect("json");
                assert_eq!(json["data"].as_array().map(Vec::len), Some(500), "{path}");
            } else {
                assert_eq!(body, plain.bytes, "{path} {accept}: the same bytes");
            }
        }
    }
}

#[tokio::test]
async fn small_answers_pdf_and_errors_are_not_compressed() {
    let app = TestApp::shared();
    let token = app.full_token().await;
    let gzip = [("accept-encoding", "gzip, br")];
    for path in [
        "/me",
        "/machines?limit=1",
        "/netdiag/machines/PAR-LT-0001/report.pdf",
        "/machines/NOPE-0000",
        "/docs/init.js",
    ] {
        let res = app
            .request(Method::GET, path, Some(&token), None, &gzip)
            .await;
        assert!(res.header("content-encoding").is_none(), "{path}");
        if res.status == StatusCode::OK && res.bytes.len() < 1024 {
            assert!(!varies_on(&res, "accept-encoding"), "{path}");
        }
    }
    let pdf = app
        .request(
            Method::GET,
            "/netdiag/machines/PAR-LT-0001/report.pdf",
            Some(&token),
            None,
            &gzip,
        )
        .await;
    assert_eq!(pdf.status, StatusCode::OK);
    assert!(pdf.bytes.len() > 1024 && pdf.bytes.starts_with(b"%PDF"));
}

#[tokio::test]
async fn a_strange_accept_encoding_or_accept_gets_a_plain_answer_never_a_5xx() {
    let app = TestApp::shared();
    let token = app.full_token().await;
    let plain = app.get("/machines?limit=100", &token).await;
    for accept in [
        "identity",
        "*",
        "compress",
        "deflate",
        "zstd",
        "gzip;q=0",
        "br;q=0, gzip;q=0",
        "gzip;q=abc",
        "gzip;q=2",
        ";;;,,,",
        "gzip;;q=1",
        "x".repeat(4000).as_str(),
        "gzip\u{7f}",
    ] {
        let Ok(value) = HeaderValue::from_str(accept) else {
            continue;
        };
        let res = app
            .request(
                Method::GET,
                "/machines?limit=100",
                Some(&token),
                None,
                &[("accept-encoding", value.to_str().unwrap_or(""))],
            )
            .await;
        assert_eq!(res.status, StatusCode::OK, "{accept:?}");
        assert!(res.header("content-encoding").is_none(), "{accept:?}");
        assert_eq!(res.bytes, plain.bytes, "{accept:?}");
    }
    // Bytes past ASCII, which no &str header carries.
    let req = http::Request::builder()
        .uri("/api/v1/machines?limit=100")
        .header("authorization", format!("Bearer {token}"))
        .header(
            "accept-encoding",
            HeaderValue::from_bytes(b"gz\xffip").expect("obs-text"),
        )
        .header(
            "accept",
            HeaderValue::from_bytes(b"\xfe/\xff").expect("obs-text"),
        )
        .body(Body::empty())
        .expect("request");
    let res = into_test_response(app.router.clone().oneshot(req).await.expect("infallible")).await;
    assert_eq!(res.status, StatusCode::OK);
    // Accept is not negotiated: whatever it says, the answer is the JSON.
    for accept in [
        "text/html",
        "application/xml",
        "*/*;q=garbage",
        "application/json;q=0",
        ";;",
        "a/b/c",
    ] {
        let res = app
            .request(
                Method::GET,
                "/machines?limit=100",
                Some(&token),
                None,
                &[("accept", accept)],
            )
            .await;
        assert_eq!(res.status, StatusCode::OK, "{accept}");
        assert_eq!(res.header("content-type"), Some("application/json"));
    }
}

/// Under Lambda, a compressed answer leaves as binary (API Gateway's base64 body):
/// `lambda_http` decides on the `Content-Encoding` header. Real API Gateway events, with the
/// header a browser or curl sends.
#[tokio::test]
async fn under_lambda_a_compressed_answer_goes_out_as_binary() {
    let app = TestApp::shared();
    let token = app.full_token().await;
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../events");
    for (function, event, query, asset) in [
        ("fleet", "list_machines.json", Some("limit=100"), None),
        ("docs", "get_openapi.json", None, None),
        (
            "docs",
            "get_docs_asset.json",
            None,
            Some("swagger-ui-bundle.js"),
        ),
    ] {
        let module = netops::modules()
            .into_iter()
            .find(|m| m.function.name() == function)
            .expect("module");
        let (router, _) = utoipa_axum::router::OpenApiRouter::new()
            .merge((module.routes)())
            .split_for_parts();
        let lambda = netops_shared::http::app(router, app.state.clone());
        let text = std::fs::read_to_string(root.join(function).join(event)).expect("event");
        let mut payload: Value = serde_json::from_str(&text).expect("json");
        if let Some(q) = query {
            payload["rawQueryString"] = Value::from(q);
            payload["queryStringParameters"] = serde_json::json!({"limit": "100"});
        }
        if let Some(name) = asset {
            let path = format!("/api/v1/docs/{name}");
            payload["rawPath"] = Value::from(path.as_str());
            payload["requestContext"]["http"]["path"] = Value::from(path);
            payload["pathParameters"] = serde_json::json!({"asset": name});
        }
        let mut answers = Vec::new();
        for coding in [None, Some("gzip"), Some("br")] {
            let mut event = payload.clone();
            event["headers"]["authorization"] = Value::from(format!("Bearer {token}"));
            if let Some(c) = coding {
                event["headers"]["accept-encoding"] = Value::from(c);
            }
            let req = lambda_http::request::from_str(&event.to_string()).expect("event parses");
            let res = lambda.clone().oneshot(req).await.expect("infallible");
            assert_eq!(res.status(), StatusCode::OK, "{event}");
            let res = lambda_http::IntoResponse::into_response(res).await;
            let bytes = match (coding, res.body()) {
                (None, lambda_http::Body::Text(t)) => t.as_bytes().to_vec(),
                (Some("gzip"), lambda_http::Body::Binary(b)) => gunzip(b),
                (Some("br"), lambda_http::Body::Binary(b)) => unbrotli(b),
                (c, other) => panic!("{function}/{event} {c:?}: {other:?}"),
            };
            answers.push(bytes);
        }
        assert_eq!(answers[0], answers[1], "{function}/{event}");
        assert_eq!(answers[0], answers[2], "{function}/{event}");
    }
}

// Conditional GET ----------------------------------------------------------------------------

/// Routes whose answers stay the same from one second to the next: `/alerts` would not (the
/// `duration_s` of an ongoing incident grows with the clock, whatever the window), nor any
/// route read up to now.
#[tokio::test]
async fn every_json_answer_has_a_strong_etag_of_its_bytes_and_a_match_gets_304() {
    let app = TestApp::shared();
    let token = app.full_token().await;
    for path in [
        "/machines?limit=100",
        "/me",
        "/inventory/assets?limit=50",
        "/monitors",
        "/openapi.json",
        "/docs",
        "/docs/swagger-ui-bundle.js",
        "/docs/swagger-ui.css",
    ] {
        let res = app.get(path, &token).await;
        assert_eq!(res.status, StatusCode::OK, "{path}");
        let tag = res.header("etag").expect("etag").to_owned();
        assert_eq!(tag, tag_of(&res.bytes), "{path}: the SHA-256 of the bytes");
        if res.header("content-type") == Some("application/json") && !path.contains("openapi") {
            assert_eq!(
                res.header("cache-control"),
                Some("private, no-cache"),
                "{path}"
            );
        }
        for condition in [
            tag.clone(),
            format!("W/{tag}"),
            format!("\"nope\", {tag}"),
            "*".to_owned(),
        ] {
            let again = app
                .request(
                    Method::GET,
                    path,
                    Some(&token),
                    None,
                    &[("if-none-match", &condition)],
                )
                .await;
            assert_eq!(again.status, StatusCode::NOT_MODIFIED, "{path} {condition}");
            assert!(again.bytes.is_empty(), "{path}");
            assert_eq!(again.header("etag"), Some(tag.as_str()), "{path}");
            assert!(again.header("content-type").is_none(), "{path}");
            assert_eq!(
                again.header("cache-control"),
                res.header("cache-control"),
                "{path}"
            );
            assert!(again.header("x-request-id").is_some(), "{path}");
        }
        let other = app
            .request(
                Method::GET,
                path,
                Some(&token),
                None,
                &[("if-none-match", "\"0123456789abcdef0123456789abcdef\"")],
            )
            .await;
        assert_eq!(other.status, StatusCode::OK, "{path}");
        assert_eq!(other.bytes, res.bytes, "{path}");
    }
    // The PDF has no tag, and a write is never answered 304.
    let pdf = app
        .get("/netdiag/machines/PAR-LT-0001/report.pdf", &token)
        .await;
    assert!(pdf.header("etag").is_none());
    let pdf = app
        .request(
            Method::GET,
            "/netdiag/machines/PAR-LT-0001/report.pdf",
            Some(&token),
            None,
            &[("if-none-match", "*")],
        )
        .await;
    assert_eq!(pdf.status, StatusCode::OK);
}

#[tokio::test]
async fn each_content_coding_has_its_own_tag_and_any_of_them_revalidates() {
    let app = TestApp::shared();
    let token = app.full_token().await;
    let path = "/machines?limit=100";
    let plain = app.get(path, &token).await;
    let base = plain
        .header("etag")
        .expect("etag")
        .trim_matches('"')
        .to_owned();
    let mut tags = vec![format!("\"{base}\"")];
    for coding in ["gzip", "br"] {
        let res = app
            .request(
                Method::GET,
                path,
                Some(&token),
                None,
                &[("accept-encoding", coding)],
            )
            .await;
        assert_eq!(
            res.header("etag"),
            Some(format!("\"{base}-{coding}\"").as_str())
        );
        tags.push(format!("\"{base}-{coding}\""));
    }
    for held in &tags {
        for (accept, expected) in [
            (None, format!("\"{base}\"")),
            (Some("gzip"), format!("\"{base}-gzip\"")),
            (Some("br"), format!("\"{base}-br\"")),
        ] {
            let mut headers = vec![("if-none-match", held.as_str())];
            if let Some(a) = accept {
                headers.push(("accept-encoding", a));
            }
            let res = app
                .request(Method::GET, path, Some(&token), None, &headers)
                .await;
            assert_eq!(res.status, StatusCode::NOT_MODIFIED, "{held} {accept:?}");
            assert_eq!(
                res.header("etag"),
                Some(expected.as_str()),
                "{held} {accept:?}"
            );
            assert!(res.header("content-encoding").is_none());
            assert!(varies_on(&res, "accept-encoding"));
        }
    }
    // HEAD revalidates as GET does.
    let res = app
        .request(
            Method::HEAD,
            path,
            Some(&token),
            None,
            &[("if-none-match", tags[2].as_str())],
        )
        .await;
    assert_eq!(res.status, StatusCode::NOT_MODIFIED);
}

#[tokio::test]
async fn a_malformed_if_none_match_is_ignored_never_a_5xx() {
    let app = TestApp::shared();
    let token = app.full_token().await;
    let path = "/machines?limit=100";
    let plain = app.get(path, &token).await;
    let tag = plain.header("etag").expect("etag").to_owned();
    let bare = tag.trim_matches('"').to_owned();
    for malformed in [
        bare.clone(),
        format!("{tag} {tag}"),
        format!("{tag}x"),
        format!("w/{tag}"),
        format!("*, {tag}"),
        format!("\"a b\", {tag}"),
        "\"".to_owned(),
        ",,,".to_owned(),
        "W/".to_owned(),
        "\"unterminated".to_owned(),
        "x".repeat(8000),
    ] {
        let res = app
            .request(
                Method::GET,
                path,
                Some(&token),
                None,
                &[("if-none-match", &malformed)],
            )
            .await;
        assert_eq!(res.status, StatusCode::OK, "{malformed:?}");
        assert_eq!(res.bytes, plain.bytes, "{malformed:?}");
    }
    let req = http::Request::builder()
        .uri(format!("/api/v1{path}"))
        .header("authorization", format!("Bearer {token}"))
        .header(
            "if-none-match",
            HeaderValue::from_bytes(b"\"\xff\xfe\", \"\x80\"").expect("obs-text"),
        )
        .body(Body::empty())
        .expect("request");
    let res = into_test_response(app.router.clone().oneshot(req).await.expect("infallible")).await;
    assert_eq!(res.status, StatusCode::OK);
    // A condition on a write is not ours to answer 304.
    let res = app
        .request(
            Method::POST,
            "/alerts/hm-999999/ack",
            Some(&token),
            Some(b"{}".to_vec()),
            &[("if-none-match", "*")],
        )
        .await;
    assert_ne!(res.status, StatusCode::NOT_MODIFIED);
}

#[tokio::test]
async fn a_304_does_not_count_against_the_rate_limit_but_a_429_still_comes_first() {
    let app = cors_app(5).await;
    let token = app.token("acme", &[Scope::ReadMachines]).await;
    let path = "/machines?limit=100";
    let first = app.get(path, &token).await;
    assert_eq!(remaining(&first), 4);
    let tag = first.header("etag").expect("etag").to_owned();
    let conditional = [("if-none-match", tag.as_str())];
    for _ in 0..12 {
        let res = app
            .request(Method::GET, path, Some(&token), None, &conditional)
            .await;
        assert_eq!(res.status, StatusCode::NOT_MODIFIED);
        assert_eq!(remaining(&res), 4, "a 304 is given back");
        assert_eq!(res.header("x-ratelimit-limit"), Some("5"));
    }
    let res = app
        .request(Method::HEAD, path, Some(&token), None, &conditional)
        .await;
    assert_eq!(res.status, StatusCode::NOT_MODIFIED);
    assert_eq!(remaining(&res), 4);
    // Full answers count.
    for left in [3, 2, 1, 0] {
        let res = app.get(path, &token).await;
        assert_eq!(res.status, StatusCode::OK);
        assert_eq!(remaining(&res), left);
    }
    // Over the quota, the 429 comes before the handler and its comparison.
    let res = app
        .request(Method::GET, path, Some(&token), None, &conditional)
        .await;
    assert_eq!(res.status, StatusCode::TOO_MANY_REQUESTS);
    assert!(res.header("retry-after").is_some());
}

// Through the real binary --------------------------------------------------------------------

/// What hyper writes: a 304 and a HEAD carry no body, and a 304 no `Content-Length` (RFC 9110
/// 8.6); a bad `NETOPS_CORS_ORIGINS` stops the server at start, naming the variable.
#[tokio::test]
async fn over_http_a_304_has_no_content_length_and_a_bad_origin_list_stops_the_server() {
    let served = Serve::seeded()
        .env("NETOPS_CORS_ORIGINS", format!("{DASHBOARD},{LOCAL_PAGE}"))
        .start();
    let http = reqwest::Client::new();
    let url = format!("{}/machines?limit=100", served.base);
    let res = http
        .get(&url)
        .bearer_auth(&served.token)
        .send()
        .await
        .expect("get");
    let tag = res.headers()["etag"].clone();
    let length = res.headers()["content-length"].clone();
    for method in [reqwest::Method::GET, reqwest::Method::HEAD] {
        let res = http
            .request(method.clone(), &url)
            .bearer_auth(&served.token)
            .header("if-none-match", tag.clone())
            .header("accept-encoding", "gzip")
            .send()
            .await
            .expect("conditional");
        assert_eq!(res.status(), 304, "{method}");
        assert!(res.headers().get("content-length").is_none(), "{method}");
        assert_eq!(res.bytes().await.expect("body").len(), 0);
    }
    let head = http
        .head(&url)
        .bearer_auth(&served.token)
        .send()
        .await
        .expect("head");
    assert_eq!(head.status(), 200);
    assert_eq!(head.headers()["content-length"], length);
    let preflight = http
        .request(reqwest::Method::OPTIONS, &url)
        .header("origin", LOCAL_PAGE)
        .header("access-control-request-method", "GET")
        .send()
        .await
        .expect("preflight");
    assert!(preflight.status().is_success());
    assert_eq!(
        preflight.headers()["access-control-allow-origin"],
        LOCAL_PAGE
    );

    for bad in [
        "https://dashboard.example.com/",
        "*",
        "dashboard.example.com",
    ] {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_netops"))
            .args(["serve", "--addr", "127.0.0.1:0", "--db"])
            .arg(served.dir.path().join("other.db"))
            .env("NETOPS_CORS_ORIGINS", bad)
            .output()
            .expect("netops serve");
        assert!(!out.status.success(), "{bad}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("NETOPS_CORS_ORIGINS"), "{bad}: {stderr}");
    }
}
