//! The bounded write log (docs/writes.md#the-write-log): bodies kept up to 4 KiB,
//! refusals before authentication and over the rate limit coalesced per token (or client
//! address) and window with a count, bodies over 64 KiB refused after the token and rate-limit
//! checks and logged without their body.

use http::{Method, StatusCode};
use netops_shared::config::Config;
use netops_shared::routes::Function;
use netops_shared::scope::Scope;
use netops_shared::store::{UNAUTHENTICATED, WriteLogEntry};
use netops_shared::write::LOGGED_BODY_MAX;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::helpers::TestApp;

fn hex_sha256(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The entries of `tenant`'s log written by the token named `name`.
async fn entries_of(app: &TestApp, tenant: &str, name: &str) -> Vec<WriteLogEntry> {
    app.stores
        .writes
        .entries(tenant)
        .await
        .expect("log")
        .into_iter()
        .filter(|e| e.token_name == name)
        .collect()
}

async fn name_of(app: &TestApp, token: &str) -> String {
    app.get("/me", token).await.body["data"]["name"]
        .as_str()
        .expect("name")
        .to_owned()
}

/// How many refusals an entry stands for.
fn refusals(e: &WriteLogEntry) -> u64 {
    e.count.unwrap_or(1)
}

#[tokio::test]
async fn bodies_over_4_kib_are_logged_truncated_with_their_length_and_sha256() {
    let app = TestApp::with_modules(&[Function::Alerts]).await;
    let token = app.token("acme", &[Scope::WriteAlerts]).await;
    let name = name_of(&app, &token).await;
    let small = json!({"note": "x".repeat(3000)}).to_string().into_bytes();
    let big = json!({"note": "é".repeat(5000)}).to_string().into_bytes();
    // Not JSON, under 4 KiB, but each control byte takes six bytes of JSON text.
    let controls = vec![1u8; 3000];
    for body in [&small, &big, &controls] {
        let res = app
            .request(
                Method::POST,
                "/alerts/hm-999999/ack",
                Some(&token),
                Some(body.clone()),
                &[],
            )
            .await;
        assert!(res.status.is_client_error(), "{}", res.body);
    }
    let log = entries_of(&app, "acme", &name).await;
    assert_eq!(log.len(), 3, "{log:?}");
    // A body within the bound is kept whole, as JSON, with no length or digest.
    assert_eq!(
        log[0].body,
        serde_json::from_slice::<Value>(&small).expect("json")
    );
    assert_eq!((log[0].body_length, &log[0].body_sha256), (None, &None));
    for (entry, sent) in [(&log[1], &big), (&log[2], &controls)] {
        let kept = entry
            .body
            .as_str()
            .expect("a truncated body is kept as text");
        let text = serde_json::to_string(kept).expect("text");
        assert!(text.len() <= LOGGED_BODY_MAX, "{} bytes", text.len());
        assert!(String::from_utf8_lossy(sent).starts_with(kept));
        assert!(kept.len() > LOGGED_BODY_MAX / 8, "the first bytes are kept");
        assert_eq!(entry.body_length, Some(sent.len() as u64));
        assert_eq!(
            entry.body_sha256.as_deref(),
            Some(hex_sha256(sent).as_str())
        );
        assert_eq!(entry.count, None);
    }
}

#[tokio::test]
async fn a_chunked_body_over_64_kib_gets_413_with_rate_limit_headers_and_is_logged() {
    let app = TestApp::with_modules(&[Function::Alerts]).await;
    let token = app.token("acme", &[Scope::WriteAlerts]).await;
    let name = name_of(&app, &token).await;
    // No Content-Length: the gate reads the body as it comes, as it does a chunked one.
    let res = app
        .request(
            Method::POST,
            "/alerts/hm-1/ack",
            Some(&token),
            Some(vec![b' '; 80 * 1024]),
            &[],
        )
        .await;
    assert_eq!(res.status, StatusCode::PAYLOAD_TOO_LARGE, "{}", res.body);
    assert_eq!(res.error(), "payload_too_large");
    for h in [
        "x-ratelimit-limit",
        "x-ratelimit-remaining",
        "x-ratelimit-reset",
    ] {
        assert!(res.header(h).is_some(), "{h} on a 413");
    }
    // A declared length over the limit is refused without reading the body.
    let res = app
        .request(
            Method::PUT,
            "/netdiag/machines/PAR-LT-0001/settings",
            Some(&token),
            Some(b"{}".to_vec()),
            &[("content-length", "1000000")],
        )
        .await;
    assert_eq!(res.status, StatusCode::PAYLOAD_TOO_LARGE, "{}", res.body);
    assert!(res.header("x-ratelimit-remaining").is_some());
    let log = entries_of(&app, "acme", &name).await;
    let got: Vec<(u16, &str, &Value)> = log
        .iter()
        .map(|e| (e.status, e.path.as_str(), &e.body))
        .collect();
    assert_eq!(
        got,
        vec![
            (413, "/api/v1/alerts/hm-1/ack", &Value::Null),
            (
                413,
                "/api/v1/netdiag/machines/PAR-LT-0001/settings",
                &Value::Null
            )
        ]
    );
    assert!(log[0].body_length.is_some_and(|n| n > 64 * 1024), "{log:?}");
    assert_eq!(log[1].body_length, Some(1_000_000));
}

#[tokio::test]
async fn refusals_over_the_rate_limit_are_one_entry_per_token_and_window_with_a_count() {
    let app = TestApp::with_config(Config {
        rate_limit: 3,
        ..Config::default()
    })
    .await;
    let token = app.token("acme", &[Scope::WriteAlerts]).await;
    let name = name_of(&app, &token).await; // the first call of the window
    let note = json!({"note": "n".repeat(10_000)});
    let mut limited = 0;
    for _ in 0..12 {
        let res = app
            .send(Method::POST, "/alerts/hm-999999/ack", &token, note.clone())
            .await;
        if res.status == StatusCode::TOO_MANY_REQUESTS {
            limited += 1;
        }
    }
    assert!(limited >= 8, "{limited} calls over the limit");
    let log = entries_of(&app, "acme", &name).await;
    let (over, under): (Vec<_>, Vec<_>) = log.iter().partition(|e| e.status == 429);
    // A window may end during the test: then two windows hold the calls.
    assert!((1..=2).contains(&over.len()), "{over:?}");
    assert_eq!(over.iter().map(|e| refusals(e)).sum::<u64>(), limited);
    for e in &over {
        assert_eq!(e.body, Value::Null, "no body kept for a 429");
        assert!(
            e.count.is_some() && e.last_at.is_some_and(|t| t >= e.at),
            "{e:?}"
        );
    }
    assert_eq!(
        under.len() as u64,
        12 - limited,
        "each admitted call has its entry"
    );
    assert!(under.iter().all(|e| e.status == 400 && e.count.is_none()));
}

#[tokio::test]
async fn entries_expire_after_the_configured_days() {
    let app = TestApp::with_config(Config {
        write_log_days: 30,
        ..Config::default()
    })
    .await;
    let token = app.token("acme", &[Scope::WriteAlerts]).await;
    let name = name_of(&app, &token).await;
    let res = app
        .send(Method::POST, "/alerts/hm-999999/ack", &token, json!({}))
        .await;
    assert_eq!(res.status, StatusCode::NOT_FOUND, "{}", res.body);
    let log = entries_of(&app, "acme", &name).await;
    assert_eq!(log.len(), 1);
    assert_eq!(log[0].expires_at, log[0].at.timestamp() + 30 * 86_400);
}

#[tokio::test]
async fn refusals_before_authentication_on_write_routes_are_coalesced_per_token_or_address() {
    let app = TestApp::with_modules(&[]).await;
    let token = app.token("acme", &[Scope::WriteAlerts]).await;
    let name = name_of(&app, &token).await;
    assert!(
        app.stores
            .tokens
            .revoke("acme", &name, chrono::Utc::now().timestamp())
            .await
            .expect("revoke")
    );
    let unknown = format!("nop_{}", "Z".repeat(40));
    let body = json!({"note": "n".repeat(20_000)});
    for t in [&token, &unknown] {
        for _ in 0..6 {
            let res = app
                .send(Method::POST, "/alerts/hm-1/ack", t, body.clone())
                .await;
            assert_eq!(res.status, StatusCode::UNAUTHORIZED);
        }
    }
    // Without a token at all, and on a read route (never logged).
    let res = app
        .request(
            Method::POST,
            "/alerts/hm-1/ack",
            None,
            Some(b"{}".to_vec()),
            &[],
        )
        .await;
    assert_eq!(res.status, StatusCode::UNAUTHORIZED);
    assert_eq!(
        app.get("/machines", &unknown).await.status,
        StatusCode::UNAUTHORIZED
    );

    // The revoked token's refusals, under its tenant and name.
    let revoked = entries_of(&app, "acme", &name).await;
    assert!((1..=2).contains(&revoked.len()), "{revoked:?}");
    assert_eq!(revoked.iter().map(refusals).sum::<u64>(), 6);
    assert!(
        revoked.iter().all(|e| e.status == 401
            && e.body == Value::Null
            && e.path == "/api/v1/alerts/hm-1/ack")
    );
    // The others, per client address, in the log partition no tenant can have.
    let anonymous = app
        .stores
        .writes
        .entries(UNAUTHENTICATED)
        .await
        .expect("log");
    assert!((1..=2).contains(&anonymous.len()), "{anonymous:?}");
    assert_eq!(anonymous.iter().map(refusals).sum::<u64>(), 7);
    assert!(anonymous.iter().all(|e| e.status == 401
        && e.body == Value::Null
        && e.token_name.is_empty()
        && e.client.is_some()));
    assert!(
        app.stores
            .writes
            .entries("globex")
            .await
            .expect("log")
            .is_empty()
    );
}
