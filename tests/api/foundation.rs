//! What every route shares: authentication, scopes, the order of checks, rate limit, paging
//! and cursors, languages, JSON errors, request ids, tenant isolation.

use chrono::Utc;
use http::{Method, StatusCode};
use netops_shared::config::{Config, StoreKind};
use netops_shared::scope::Scope;
use serde_json::Value;

use crate::helpers::{TestApp, TestResponse, walk};

#[tokio::test]
async fn every_401_case_answers_unauthorized_with_a_distinct_message() {
    let app = TestApp::shared();
    let expired = {
        let (secret, _) = netops_shared::auth::create_token(
            app.stores.tokens.as_ref(),
            "acme",
            "expired-one",
            vec![Scope::ReadMachines],
            chrono::Duration::seconds(-5),
        )
        .await
        .expect("token");
        secret
    };
    let revoked = app.token("acme", &[Scope::ReadMachines]).await;
    let name = app.get("/me", &revoked).await.body["data"]["name"]
        .as_str()
        .expect("name")
        .to_owned();
    assert!(
        app.stores
            .tokens
            .revoke("acme", &name, chrono::Utc::now().timestamp())
            .await
            .expect("revoke")
    );
    let unknown = format!("nop_{}", "A".repeat(40));
    let cases: Vec<(&str, Vec<(&str, String)>)> = vec![
        ("missing", vec![]),
        (
            "basic scheme",
            vec![("authorization", "Basic dXNlcjpwYXNz".to_owned())],
        ),
        (
            "empty bearer",
            vec![("authorization", "Bearer ".to_owned())],
        ),
        (
            "garbage",
            vec![("authorization", "Bearer not-a-token".to_owned())],
        ),
        (
            "unknown",
            vec![("authorization", format!("Bearer {unknown}"))],
        ),
        (
            "expired",
            vec![("authorization", format!("Bearer {expired}"))],
        ),
        (
            "revoked",
            vec![("authorization", format!("Bearer {revoked}"))],
        ),
    ];
    let mut messages = std::collections::HashSet::new();
    for (case, headers) in &cases {
        let headers: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let res = app
            .request(Method::GET, "/machines", None, None, &headers)
            .await;
        assert_eq!(res.status, StatusCode::UNAUTHORIZED, "{case}");
        assert_eq!(res.error(), "unauthorized", "{case}");
        assert_eq!(res.header("www-authenticate"), Some("Bearer"), "{case}");
        assert!(res.header("x-request-id").is_some(), "{case}");
        assert_eq!(
            res.header("x-ratelimit-limit"),
            Some("600"),
            "{case}: calls without a valid token are counted too"
        );
        messages.insert(res.body["message"].as_str().unwrap_or("").to_owned());
    }
    assert!(messages.iter().any(|m| m.contains("expiré")));
    assert!(messages.iter().any(|m| m.contains("révoqué")));
    assert!(messages.iter().any(|m| m.contains("manquant")));
    // /mcp needs a token too.
    let res = app
        .request(Method::POST, "/mcp", None, Some(b"{}".to_vec()), &[])
        .await;
    assert_eq!(res.status, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn a_missing_scope_gives_403_naming_the_scope() {
    let app = TestApp::shared();
    let token = app.token("acme", &[Scope::ReadDns]).await;
    for (method, path, scope) in [
        (Method::GET, "/machines", "read:machines"),
        (Method::GET, "/machines/PAR-LT-0001", "read:machines"),
        (Method::GET, "/flows/summary", "read:flows"),
        (
            Method::GET,
            "/netdiag/machines/PAR-LT-0001/report.pdf",
            "report:pdf",
        ),
        (Method::POST, "/alerts/hm-1/ack", "write:alerts"),
        (
            Method::PUT,
            "/netdiag/machines/PAR-LT-0001/settings",
            "write:netdiag",
        ),
    ] {
        let res = app
            .request(method, path, Some(&token), Some(b"{}".to_vec()), &[])
            .await;
        assert_eq!(res.status, StatusCode::FORBIDDEN, "{path}");
        assert_eq!(res.error(), "forbidden");
        assert_eq!(res.body["scope"], scope, "{path}");
    }
    // Refused writes are logged too, under the token's name, with their body.
    let name = app.get("/me", &token).await.body["data"]["name"]
        .as_str()
        .expect("name")
        .to_owned();
    let log = app.stores.writes.entries("acme").await.expect("log");
    let mine: Vec<_> = log.iter().filter(|e| e.token_name == name).collect();
    assert_eq!(mine.len(), 2, "{mine:?}");
    assert!(
        mine.iter()
            .all(|e| e.status == 403 && e.body == serde_json::json!({}))
    );
    assert_eq!(mine[0].path, "/api/v1/alerts/hm-1/ack");
    assert_eq!(mine[1].method, "PUT");
}

#[tokio::test]
async fn checks_run_in_the_documented_order() {
    let app = TestApp::shared();
    // 401 before 404: an unknown path without a token.
    let res = app
        .request(Method::GET, "/no/such/route", None, None, &[])
        .await;
    assert_eq!(res.status, StatusCode::UNAUTHORIZED);
    // 403 before 400: a bad limit with a token lacking the scope.
    let dns = app.token("acme", &[Scope::ReadDns]).await;
    assert_eq!(
        app.get("/machines?limit=abc", &dns).await.status,
        StatusCode::FORBIDDEN
    );
    // 400 before 404.
    let full = app.full_token().await;
    assert_eq!(
        app.get("/machines?limit=abc", &full).await.status,
        StatusCode::BAD_REQUEST
    );
}

#[tokio::test]
async fn unknown_paths_and_methods_answer_in_the_json_error_shape() {
    let app = TestApp::shared();
    let token = app.full_token().await;
    let res = app.get("/no/such/route", &token).await;
    assert_eq!(res.status, StatusCode::NOT_FOUND);
    assert_eq!(res.error(), "not_found");
    let res = app
        .request(Method::DELETE, "/machines", Some(&token), None, &[])
        .await;
    assert_eq!(res.status, StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(res.error(), "method_not_allowed");
    assert_eq!(res.header("allow"), Some("GET, HEAD"));
    let res = app
        .request(Method::GET, "/mcp", Some(&token), None, &[])
        .await;
    assert_eq!(res.status, StatusCode::METHOD_NOT_ALLOWED);
    let res = app
        .request(Method::GET, "/elsewhere", Some(&token), None, &[])
        .await;
    assert_eq!(res.status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn bodies_over_64_kib_are_refused_with_413() {
    let app = TestApp::shared();
    let token = app.full_token().await;
    let big = serde_json::json!({ "note": "x".repeat(70 * 1024) });
    let res = app
        .send(Method::POST, "/alerts/hm-1/ack", &token, big)
        .await;
    assert_eq!(res.status, StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(res.error(), "payload_too_large");
}

#[tokio::test]
async fn messages_are_french_by_default_and_english_on_request() {
    let app = TestApp::shared();
    let token = app.full_token().await;
    let fr = app.get("/machines?limit=0", &token).await;
    assert_eq!(fr.status, StatusCode::BAD_REQUEST);
    assert_eq!(fr.error(), "invalid_parameter");
    assert!(
        fr.body["message"]
            .as_str()
            .unwrap_or("")
            .contains("Paramètre « limit »"),
        "{}",
        fr.body
    );
    for accept in ["en", "en-US,en;q=0.9", "de-DE,en;q=0.8,fr;q=0.2"] {
        let en = app
            .request(
                Method::GET,
                "/machines?limit=0",
                Some(&token),
                None,
                &[("accept-language", accept)],
            )
            .await;
        assert_eq!(en.status, StatusCode::BAD_REQUEST);
        assert_eq!(en.error(), "invalid_parameter");
        assert!(
            en.body["message"]
                .as_str()
                .unwrap_or("")
                .contains("Invalid parameter 'limit'"),
            "{accept}: {}",
            en.body
        );
        assert_eq!(
            en.header("x-ratelimit-limit"),
            Some("600"),
            "headers survive the translation"
        );
    }
    let still_fr = app
        .request(
            Method::GET,
            "/nowhere",
            Some(&token),
            None,
            &[("accept-language", "fr-FR,en;q=0.5")],
        )
        .await;
    assert!(
        still_fr.body["message"]
            .as_str()
            .unwrap_or("")
            .contains("Aucune route")
    );
    let en_401 = app
        .request(
            Method::GET,
            "/machines",
            None,
            None,
            &[("accept-language", "en")],
        )
        .await;
    assert!(
        en_401.body["message"]
            .as_str()
            .unwrap_or("")
            .starts_with("Missing token")
    );
}

#[tokio::test]
async fn limits_default_clamp_to_the_maximum_and_reject_bad_values() {
    let app = TestApp::shared();
    let token = app.full_token().await;
    let res = app.get("/machines?limit=100000", &token).await;
    assert_eq!(res.status, StatusCode::OK);
    assert_eq!(res.body["meta"]["limit"], 500);
    let res = app.get("/machines?limit=3", &token).await;
    assert_eq!(res.body["meta"]["limit"], 3);
    assert_eq!(res.items().len(), 3);
    for bad in [
        "0",
        "-5",
        "abc",
        "1.5",
        "9999999999999999999999",
        "",
        "%2B5",
        "+5",
        "5%20",
        "5&limit=500",
    ] {
        let res = app.get(&format!("/machines?limit={bad}"), &token).await;
        assert_eq!(res.status, StatusCode::BAD_REQUEST, "limit={bad}");
        assert_eq!(res.error(), "invalid_parameter");
        assert_eq!(res.body["parameter"], "limit");
    }
    let res = app.get("/machines?limit=5&cursor=&cursor=x", &token).await;
    res.assert_invalid("cursor");
    let res = app.get("/flows?period=1h&period=7d", &token).await;
    res.assert_invalid("period");
    // An empty value of a known parameter is refused too, naming it (the page's, the
    // window's and the route's own alike): `?to=` is no date, and reading it as absent would
    // answer another question. An unknown parameter stays ignored, empty or not.
    for (path, name) in [
        ("/machines?cursor=", "cursor"),
        ("/flows?to=", "to"),
        ("/flows?period=&from=2026-11-20T00:00:00Z", "period"),
        ("/inventory/software?has_cve=", "has_cve"),
        ("/inventory/software?q=", "q"),
        ("/firewall/report?period=", "period"),
    ] {
        let res = app.get(path, &token).await;
        res.assert_invalid(name);
        assert!(
            res.body["message"]
                .as_str()
                .is_some_and(|m| m.contains("vide")),
            "{path}"
        );
    }
    let res = app
        .request(
            Method::GET,
            "/flows?to=",
            Some(&token),
            None,
            &[("accept-language", "en")],
        )
        .await;
    res.assert_invalid("to");
    assert!(
        res.body["message"]
            .as_str()
            .is_some_and(|m| m.contains("empty value"))
    );
    assert_eq!(
        app.get("/machines?colour=", &token).await.status,
        StatusCode::OK
    );
    // Unknown parameters are ignored.
    assert_eq!(
        app.get("/machines?colour=blue", &token).await.status,
        StatusCode::OK
    );
}

#[tokio::test]
async fn walking_pages_repeats_and_skips_nothing() {
    let app = TestApp::shared();
    let token = app.full_token().await;
    let all = app.get("/machines?limit=500", &token).await;
    let expected: Vec<Value> = all.items().clone();
    for size in [1, 7, 59, 60] {
        let walked = walk(app, &format!("/machines?limit={size}"), &token).await;
        assert_eq!(walked, expected, "page size {size}");
    }
}

#[tokio::test]
async fn tampered_foreign_and_mismatched_cursors_are_refused() {
    let app = TestApp::shared();
    let acme = app.full_token().await;
    let globex = app.token("globex", Scope::ALL).await;
    let first = app.get("/machines?status=online&limit=5", &acme).await;
    let cursor = first.body["meta"]["next_cursor"]
        .as_str()
        .expect("cursor")
        .to_owned();
    assert_eq!(
        app.get(
            &format!("/machines?status=online&limit=5&cursor={cursor}"),
            &acme
        )
        .await
        .status,
        StatusCode::OK
    );
    let mut tampered = cursor.clone().into_bytes();
    let i = tampered.len() / 2;
    tampered[i] = if tampered[i] == b'A' { b'B' } else { b'A' };
    let tampered = String::from_utf8(tampered).expect("ascii");
    for (case, path, token) in [
        (
            "tampered",
            format!("/machines?status=online&limit=5&cursor={tampered}"),
            &acme,
        ),
        (
            "other filters",
            format!("/machines?status=offline&limit=5&cursor={cursor}"),
            &acme,
        ),
        (
            "filter dropped",
            format!("/machines?limit=5&cursor={cursor}"),
            &acme,
        ),
        (
            "other tenant",
            format!("/machines?status=online&limit=5&cursor={cursor}"),
            &globex,
        ),
        ("garbage", "/machines?cursor=%%%".to_owned(), &acme),
    ] {
        let res = app.get(&path, token).await;
        assert_eq!(res.status, StatusCode::BAD_REQUEST, "{case}");
        assert_eq!(res.error(), "invalid_cursor", "{case}");
    }
}

#[tokio::test]
async fn tenants_never_see_each_other() {
    let app = TestApp::shared();
    let acme = app.full_token().await;
    let globex = app.token("globex", Scope::ALL).await;
    let a = walk(app, "/machines?limit=500", &acme).await;
    let g = walk(app, "/machines?limit=500", &globex).await;
    assert!(!a.is_empty() && !g.is_empty());
    assert!(
        g.iter()
            .all(|m| m["hostname"].as_str().is_some_and(|h| h.starts_with("gx-")))
    );
    assert!(a.iter().all(|m| {
        !g.iter()
            .any(|x| x["hostname"] == m["hostname"] || x["id"] == m["id"])
    }));
    assert_eq!(
        app.get("/machines/PAR-LT-0001", &globex).await.status,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        app.get("/me", &globex).await.body["data"]["tenant"],
        "globex"
    );
}

#[tokio::test]
async fn the_601st_call_in_a_window_gets_429_with_its_headers() {
    // A long window so the count cannot roll over while the test runs.
    let app = TestApp::with_config(Config {
        rate_window_secs: 1_000_000,
        ..Config::default()
    })
    .await;
    let token = app.token("acme", &[Scope::ReadMachines]).await;
    for i in 1..=600u32 {
        // Errors count too: every call of the token uses the quota.
        let path = if i % 2 == 0 { "/me" } else { "/machines/NOPE" };
        let res = app.get(path, &token).await;
        assert_ne!(res.status, StatusCode::TOO_MANY_REQUESTS, "call {i}");
        assert_eq!(res.header("x-ratelimit-limit"), Some("600"));
        assert_eq!(
            res.header("x-ratelimit-remaining"),
            Some((600 - i).to_string().as_str())
        );
    }
    let res = app.get("/me", &token).await;
    assert_eq!(res.status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(res.error(), "rate_limited");
    assert_eq!(res.header("x-ratelimit-remaining"), Some("0"));
    let retry: u64 = res
        .header("retry-after")
        .and_then(|v| v.parse().ok())
        .expect("Retry-After");
    let reset: u64 = res
        .header("x-ratelimit-reset")
        .and_then(|v| v.parse().ok())
        .expect("reset");
    assert!(retry >= 1 && retry == reset);
    // Another token of the same tenant has its own quota.
    let other = app.token("acme", &[Scope::ReadMachines]).await;
    assert_eq!(app.get("/me", &other).await.status, StatusCode::OK);
    // Calls without a valid token share one quota per client address.
    for i in 1..=600u32 {
        let res = app.request(Method::GET, "/me", None, None, &[]).await;
        assert_eq!(res.status, StatusCode::UNAUTHORIZED, "anonymous call {i}");
    }
    let res = app.request(Method::GET, "/me", None, None, &[]).await;
    assert_eq!(res.status, StatusCode::TOO_MANY_REQUESTS);
    assert!(res.header("retry-after").is_some());
    assert_eq!(
        app.get("/me", &other).await.status,
        StatusCode::OK,
        "tokens keep their own quota"
    );
}

#[tokio::test]
async fn every_answer_carries_rate_limit_headers_and_a_request_id() {
    let app = TestApp::shared();
    let token = app.full_token().await;
    let res = app.get("/machines?limit=1", &token).await;
    assert_eq!(res.header("x-ratelimit-limit"), Some("600"));
    assert_eq!(res.header("x-ratelimit-remaining"), Some("599"));
    let reset: i64 = res
        .header("x-ratelimit-reset")
        .and_then(|v| v.parse().ok())
        .expect("reset");
    assert!((1..=60).contains(&reset));
    let a = res.header("x-request-id").expect("id").to_owned();
    let b = app.get("/no/such", &token).await;
    assert!(b.header("x-ratelimit-remaining").is_some());
    assert_ne!(b.header("x-request-id"), Some(a.as_str()));
}

#[tokio::test]
async fn self_description_is_public() {
    let app = TestApp::shared();
    let res = app
        .request(Method::GET, "/openapi.json", None, None, &[])
        .await;
    assert_eq!(res.status, StatusCode::OK);
    assert_eq!(res.body["info"]["version"], "1.7.0");
    assert_eq!(
        res.header("content-length"),
        Some(res.bytes.len().to_string().as_str())
    );
    assert!(
        res.body["openapi"]
            .as_str()
            .is_some_and(|v| v.starts_with("3.1"))
    );
    let res = app.request(Method::GET, "/docs", None, None, &[]).await;
    assert_eq!(res.status, StatusCode::OK);
    assert!(
        res.header("content-type")
            .is_some_and(|c| c.starts_with("text/html"))
    );
}

#[tokio::test]
async fn the_openapi_document_matches_the_route_table() {
    let app = TestApp::shared();
    let doc = app
        .request(Method::GET, "/openapi.json", None, None, &[])
        .await
        .body;
    let mut documented = 0;
    for route in netops_shared::routes::ROUTES {
        let op = &doc["paths"][route.path][route.method.as_str().to_lowercase()];
        assert!(
            op.is_object(),
            "{} {} is not documented",
            route.method,
            route.path
        );
        documented += 1;
        assert_eq!(op["operationId"], route.op, "{}", route.path);
        match route.scope() {
            Some(scope) => {
                assert_eq!(
                    op["security"][0]["bearer"][0],
                    scope.as_str(),
                    "{}",
                    route.op
                );
                assert!(!op["responses"]["403"].is_null(), "{}", route.op);
            }
            None => assert!(op["security"].is_array(), "{}", route.op),
        }
        if let Some(p) = route.paging {
            let limit = op["parameters"]
                .as_array()
                .and_then(|ps| ps.iter().find(|p| p["name"] == "limit"))
                .expect("limit parameter");
            assert_eq!(limit["schema"]["default"], p.default, "{}", route.op);
        }
    }
    let ops: usize = doc["paths"]
        .as_object()
        .map(|p| {
            p.values()
                .map(|i| i.as_object().map_or(0, |o| o.len()))
                .sum()
        })
        .unwrap_or(0);
    assert_eq!(
        ops, documented,
        "every documented operation is in the route table"
    );
    assert_eq!(documented, netops_shared::routes::ROUTES.len());
}

#[tokio::test]
async fn a_bad_path_parameter_is_named_after_its_placeholder() {
    let app = TestApp::shared();
    let token = app.full_token().await;
    for (path, name, integer) in [
        ("/monitors/abc", "id", true),
        ("/network/devices/1x/metrics", "id", true),
        ("/netdiag/machines/%FF/summary", "hostname", false),
    ] {
        let res = app.get(path, &token).await;
        assert_eq!(res.status, StatusCode::BAD_REQUEST, "{path}: {}", res.body);
        assert_eq!(res.error(), "invalid_parameter", "{path}");
        assert_eq!(res.body["parameter"], name, "{path}");
        let message = res.body["message"].as_str().unwrap_or("");
        assert_eq!(message.contains("entier"), integer, "{path}: {message}");
    }
}

#[tokio::test]
async fn every_scoped_route_refuses_a_token_without_its_scope_naming_it() {
    let app = TestApp::shared();
    for route in netops_shared::routes::ROUTES {
        let Some(scope) = route.scope() else { continue };
        let others: Vec<Scope> = Scope::ALL.iter().copied().filter(|s| *s != scope).collect();
        let token = app.token("acme", &others).await;
        let path: String = route
            .path
            .split('/')
            .map(|seg| if seg.starts_with('{') { "1" } else { seg })
            .collect::<Vec<_>>()
            .join("/");
        let res = app
            .request(
                route.method.clone(),
                &path,
                Some(&token),
                Some(b"{}".to_vec()),
                &[("content-type", "application/json")],
            )
            .await;
        assert_eq!(res.status, StatusCode::FORBIDDEN, "{} {path}", route.method);
        assert_eq!(res.error(), "forbidden", "{path}");
        assert_eq!(res.body["scope"], scope.as_str(), "{path}");
    }
}

#[tokio::test]
async fn no_window_reaches_past_the_retention() {
    let app = TestApp::with_config(Config {
        retention_days: Some(2),
        ..Config::default()
    })
    .await;
    let token = app.full_token().await;
    let days = |res: &TestResponse| {
        let at = |k: &str| {
            chrono::DateTime::parse_from_rfc3339(res.body["meta"]["window"][k].as_str().expect(k))
                .expect("date")
        };
        (at("to") - at("from")).num_hours()
    };
    // A route without a cap of its own, asked from the epoch, starts at the retention.
    let long = app
        .get("/dns/top-domains?from=1970-01-01T00:00:00Z", &token)
        .await;
    assert_eq!(long.status, StatusCode::OK);
    assert_eq!(long.body["meta"]["window_capped"], true);
    assert_eq!(days(&long), 48);
    // A window wholly older than the retention is empty.
    let old = app
        .get(
            "/dns/top-domains?from=2000-01-01T00:00:00Z&to=2000-01-02T00:00:00Z",
            &token,
        )
        .await;
    assert_eq!(old.status, StatusCode::OK);
    assert_eq!(days(&old), 0);
    assert_eq!(old.items().len(), 0);
    // Within the retention nothing changes.
    let day = app.get("/dns/top-domains?period=24h", &token).await;
    assert!(day.body["meta"].get("window_capped").is_none());
    assert_eq!(days(&day), 24);
}

/// A new user's file levels off: the embedded store keeps 90 days unless told otherwise (the
/// longest window a route allows, lockouts and account changes), DynamoDB 400.
#[tokio::test]
async fn the_default_retention_is_the_longest_route_window_in_the_embedded_store() {
    let app = TestApp::with_config(Config::default()).await;
    let token = app.full_token().await;
    let hours = |res: &TestResponse| {
        let at = |k: &str| {
            chrono::DateTime::parse_from_rfc3339(res.body["meta"]["window"][k].as_str().expect(k))
                .expect("date")
        };
        (at("to") - at("from")).num_hours()
    };
    let kept_days = match app.state.config.store {
        StoreKind::Embedded => 90,
        StoreKind::Dynamodb => 400,
    };
    assert_eq!(app.state.config.retention_days(), kept_days);
    let long = app
        .get("/dns/top-domains?from=1970-01-01T00:00:00Z", &token)
        .await;
    assert_eq!(long.status, StatusCode::OK);
    assert_eq!(long.body["meta"]["window_capped"], true);
    assert_eq!(hours(&long), i64::from(kept_days) * 24);
    // The longest window a route allows is whole: not cut by the retention.
    let from = (Utc::now() - chrono::Duration::days(90) + chrono::Duration::minutes(1))
        .format("%Y-%m-%dT%H:%M:%SZ");
    let lockouts = app
        .get(&format!("/security/lockouts?from={from}"), &token)
        .await;
    assert_eq!(lockouts.status, StatusCode::OK, "{}", lockouts.body);
    assert!(lockouts.body["meta"].get("window_capped").is_none());
}
