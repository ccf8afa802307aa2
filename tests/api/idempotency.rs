//! Idempotent writes (docs/writes.md#idempotency; IETF httpapi draft "The
//! Idempotency-Key HTTP Header Field"): a retry with the same key and body gets the first
//! answer again, marked `Idempotent-Replayed: true`, without a second state change or log
//! entry; the same key with another request is 422; a key in flight is 409; keys are per
//! token. Run on both stores like the rest of the suite.

use http::{Method, StatusCode};
use netops_shared::routes::Function;
use netops_shared::scope::Scope;
use netops_shared::store::{Filter, WriteLogEntry};
use serde_json::{Value, json};

use crate::helpers::{TestApp, TestResponse, rand_u64};

const ACTIONS: &str = "/netdiag/machines/PAR-LT-0001/actions";

async fn post(app: &TestApp, path: &str, token: &str, body: &Value, key: &str) -> TestResponse {
    app.request(
        Method::POST,
        path,
        Some(token),
        Some(body.to_string().into_bytes()),
        &[("idempotency-key", key)],
    )
    .await
}

/// The actions queued for the machine of [`ACTIONS`].
async fn actions(app: &TestApp) -> Vec<Value> {
    app.stores
        .docs
        .list("acme", "netdiag_actions", &Filter::all(), None, 1000)
        .await
        .expect("actions")
        .into_iter()
        .map(|d| d.body)
        .collect()
}

/// The log entries written by the token `token`.
async fn log_of(app: &TestApp, token: &str) -> Vec<WriteLogEntry> {
    let name = app.get("/me", token).await.body["data"]["name"]
        .as_str()
        .expect("name")
        .to_owned();
    app.stores
        .writes
        .entries("acme")
        .await
        .expect("log")
        .into_iter()
        .filter(|e| e.token_name == name)
        .collect()
}

fn key() -> String {
    format!("test-{:016x}", rand_u64())
}

#[tokio::test]
async fn a_retry_with_the_same_key_replays_the_first_answer_and_writes_nothing() {
    let app = TestApp::with_modules(&[Function::Netdiag]).await;
    let token = app.token("acme", &[Scope::WriteNetdiag]).await;
    let body = json!({"action": "trace", "target": "8.8.8.8"});
    let key = key();
    let first = post(&app, ACTIONS, &token, &body, &key).await;
    assert_eq!(first.status, StatusCode::ACCEPTED, "{}", first.body);
    assert_eq!(first.header("idempotent-replayed"), None);
    for _ in 0..3 {
        let again = post(&app, ACTIONS, &token, &body, &key).await;
        assert_eq!(again.status, StatusCode::ACCEPTED, "{}", again.body);
        assert_eq!(again.body, first.body);
        assert_eq!(again.header("idempotent-replayed"), Some("true"));
        assert!(
            again
                .header("content-type")
                .is_some_and(|t| t.starts_with("application/json"))
        );
        assert!(again.header("x-ratelimit-remaining").is_some());
    }
    // The key as a Structured Field string is the same key.
    let quoted = post(&app, ACTIONS, &token, &body, &format!("\"{key}\"")).await;
    assert_eq!(quoted.body, first.body);
    assert_eq!(actions(&app).await.len(), 1);
    let log = log_of(&app, &token).await;
    assert_eq!(log.len(), 1, "{log:?}");
    assert_eq!(log[0].status, 202);

    // Without a key, or with another one, the same body is another action.
    let other = post(&app, ACTIONS, &token, &body, &self::key()).await;
    assert_ne!(
        other.body["data"]["action_id"],
        first.body["data"]["action_id"]
    );
    let plain = app.send(Method::POST, ACTIONS, &token, body).await;
    assert_eq!(plain.status, StatusCode::ACCEPTED);
    assert_eq!(actions(&app).await.len(), 3);
}

#[tokio::test]
async fn a_key_belongs_to_its_token_and_to_one_request() {
    let app = TestApp::with_modules(&[Function::Netdiag]).await;
    let token = app.token("acme", &[Scope::WriteNetdiag]).await;
    let other_token = app.token("acme", &[Scope::WriteNetdiag]).await;
    let key = key();
    let trace = json!({"action": "trace"});
    let first = post(&app, ACTIONS, &token, &trace, &key).await;
    assert_eq!(first.status, StatusCode::ACCEPTED);

    // Another token's key of the same name is its own.
    let theirs = post(&app, ACTIONS, &other_token, &trace, &key).await;
    assert_eq!(theirs.status, StatusCode::ACCEPTED);
    assert_eq!(theirs.header("idempotent-replayed"), None);
    assert_ne!(
        theirs.body["data"]["action_id"],
        first.body["data"]["action_id"]
    );

    // The same key with another body, or on another path, is 422 and changes nothing.
    let speed = json!({"action": "speed"});
    let reused = post(&app, ACTIONS, &token, &speed, &key).await;
    assert_eq!(
        reused.status,
        StatusCode::UNPROCESSABLE_ENTITY,
        "{}",
        reused.body
    );
    assert_eq!(reused.error(), "idempotency_key_reused");
    assert!(
        reused.body["message"]
            .as_str()
            .is_some_and(|m| m.contains("clé"))
    );
    let elsewhere = "/netdiag/machines/PAR-LT-0002/actions";
    let moved = post(&app, elsewhere, &token, &trace, &key).await;
    assert_eq!(moved.status, StatusCode::UNPROCESSABLE_ENTITY);
    let english = app
        .request(
            Method::POST,
            ACTIONS,
            Some(&token),
            Some(speed.to_string().into_bytes()),
            &[("idempotency-key", key.as_str()), ("accept-language", "en")],
        )
        .await;
    assert!(
        english.body["message"]
            .as_str()
            .is_some_and(|m| m.contains("already used"))
    );
    assert_eq!(actions(&app).await.len(), 2);
    // Each refusal is logged as one.
    let statuses: Vec<u16> = log_of(&app, &token)
        .await
        .iter()
        .map(|e| e.status)
        .collect();
    assert_eq!(statuses, vec![202, 422, 422, 422]);
}

#[tokio::test]
async fn a_refused_write_keeps_no_answer_so_its_retry_is_judged_again() {
    let app = TestApp::with_modules(&[Function::Netdiag]).await;
    let token = app.token("acme", &[Scope::WriteNetdiag]).await;
    let key = key();
    let unknown = "/netdiag/machines/NOPE-0001/actions";
    let trace = json!({"action": "trace"});
    for _ in 0..2 {
        let res = post(&app, unknown, &token, &trace, &key).await;
        assert_eq!(res.status, StatusCode::NOT_FOUND, "{}", res.body);
        assert_eq!(res.header("idempotent-replayed"), None);
    }
    // So does a body refused as invalid, each time.
    let reboot = json!({"action": "reboot"});
    for _ in 0..2 {
        let bad = post(&app, ACTIONS, &token, &reboot, &key).await;
        assert_eq!(bad.status, StatusCode::BAD_REQUEST, "{}", bad.body);
        assert_eq!(bad.header("idempotent-replayed"), None);
    }
    assert!(actions(&app).await.is_empty());
    // The corrected request then runs under the same key, which keeps its answer from then on.
    let fixed = post(&app, ACTIONS, &token, &trace, &key).await;
    assert_eq!(fixed.status, StatusCode::ACCEPTED, "{}", fixed.body);
    let reused = post(&app, ACTIONS, &token, &reboot, &key).await;
    assert_eq!(reused.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(actions(&app).await.len(), 1);
    let statuses: Vec<u16> = log_of(&app, &token)
        .await
        .iter()
        .map(|e| e.status)
        .collect();
    assert_eq!(statuses, vec![404, 404, 400, 400, 202, 422]);
}

#[tokio::test]
async fn malformed_keys_are_refused_with_400_and_reads_ignore_the_header() {
    let app = TestApp::with_modules(&[Function::Netdiag]).await;
    let token = app
        .token("acme", &[Scope::WriteNetdiag, Scope::ReadNetdiag])
        .await;
    let long = "k".repeat(256);
    for bad in ["", "\"\"", "two words", long.as_str()] {
        let res = post(&app, ACTIONS, &token, &json!({"action": "trace"}), bad).await;
        res.assert_invalid("Idempotency-Key");
    }
    let res = app
        .request(
            Method::GET,
            "/netdiag/machines",
            Some(&token),
            None,
            &[("idempotency-key", "")],
        )
        .await;
    assert_eq!(res.status, StatusCode::OK);
    assert!(actions(&app).await.is_empty());
}

#[tokio::test]
async fn settings_and_acks_replay_too() {
    let app = TestApp::with_modules(&[Function::Alerts, Function::Netdiag]).await;
    let token = app
        .token("acme", &[Scope::WriteNetdiag, Scope::WriteAlerts])
        .await;
    let path = "/netdiag/machines/PAR-LT-0001/settings";
    let body = json!({"captureOnIncident": true});
    let key = key();
    let first = app
        .request(
            Method::PUT,
            path,
            Some(&token),
            Some(body.to_string().into_bytes()),
            &[("idempotency-key", &key)],
        )
        .await;
    assert_eq!(first.status, StatusCode::OK, "{}", first.body);
    let again = app
        .request(
            Method::PUT,
            path,
            Some(&token),
            Some(body.to_string().into_bytes()),
            &[("idempotency-key", &key)],
        )
        .await;
    assert_eq!(again.body, first.body);
    assert_eq!(again.header("idempotent-replayed"), Some("true"));

    // Without a key a second ack is 409; with the first ack's key it is the first answer.
    let alert = crate::alerts::find_alert(&app, "siem", "state", "OPEN").await;
    let ack = format!("/alerts/{}/ack", alert["id"].as_str().expect("id"));
    let note = json!({"note": "Vu."});
    let key = self::key();
    let first = post(&app, &ack, &token, &note, &key).await;
    assert_eq!(first.status, StatusCode::OK, "{}", first.body);
    let plain = app.send(Method::POST, &ack, &token, note.clone()).await;
    assert_eq!(plain.status, StatusCode::CONFLICT);
    let again = post(&app, &ack, &token, &note, &key).await;
    assert_eq!(again.status, StatusCode::OK);
    assert_eq!(again.body, first.body);
    let statuses: Vec<u16> = log_of(&app, &token)
        .await
        .iter()
        .map(|e| e.status)
        .collect();
    assert_eq!(statuses, vec![200, 200, 409]);
}

/// Twenty identical requests at once: one runs, the others get its answer or 409 while it is
/// in flight; one action is queued, one accepted entry logged.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_retries_make_one_state_change() {
    let app = TestApp::with_modules(&[Function::Netdiag]).await;
    let token = app.token("acme", &[Scope::WriteNetdiag]).await;
    let body = json!({"action": "speed"});
    let key = key();
    // Each on a task of its own, sent together.
    let app = std::sync::Arc::new(app);
    let start = std::sync::Arc::new(tokio::sync::Barrier::new(20));
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..20 {
        let (app, start, token, body, key) = (
            app.clone(),
            start.clone(),
            token.clone(),
            body.clone(),
            key.clone(),
        );
        tasks.spawn(async move {
            start.wait().await;
            post(&app, ACTIONS, &token, &body, &key).await
        });
    }
    let answers: Vec<TestResponse> = tasks.join_all().await;
    let accepted: Vec<&TestResponse> = answers
        .iter()
        .filter(|r| r.status == StatusCode::ACCEPTED)
        .collect();
    let in_flight = answers
        .iter()
        .filter(|r| r.status == StatusCode::CONFLICT)
        .count();
    assert_eq!(
        accepted.len() + in_flight,
        20,
        "{:?}",
        answers.iter().map(|r| r.status).collect::<Vec<_>>()
    );
    assert!(!accepted.is_empty());
    let ids: std::collections::HashSet<&Value> = accepted
        .iter()
        .map(|r| &r.body["data"]["action_id"])
        .collect();
    assert_eq!(ids.len(), 1);
    assert_eq!(
        accepted
            .iter()
            .filter(|r| r.header("idempotent-replayed").is_none())
            .count(),
        1
    );
    for r in answers.iter().filter(|r| r.status == StatusCode::CONFLICT) {
        assert_eq!(r.error(), "conflict");
        assert_eq!(r.header("retry-after"), Some("1"));
    }
    assert_eq!(actions(&app).await.len(), 1);
    let log = log_of(&app, &token).await;
    assert_eq!(log.iter().filter(|e| e.status == 202).count(), 1, "{log:?}");
    assert_eq!(log.iter().filter(|e| e.status == 409).count(), in_flight);
    // Once the first is done, every retry is its answer.
    let late = post(&app, ACTIONS, &token, &body, &key).await;
    assert_eq!(late.body, accepted[0].body);
}

/// The store's side, on either store: a key in flight is held, one abandoned or expired is
/// taken over, and the request that lost it can neither keep its answer nor free it.
#[tokio::test]
async fn keys_expire_and_abandoned_ones_are_taken_over() {
    use netops_shared::idempotency::KEPT_SECS;
    use netops_shared::store::{
        ABANDONED_AFTER_SECS, Change, HeldKey, KeptAnswer, KeyClaim, StoreError,
    };

    let app = TestApp::with_modules(&[]).await;
    let writes = &app.stores.writes;
    let t0 = chrono::Utc::now().timestamp();
    let claim = |id: &str, at: i64| KeyClaim {
        key: "0123abcd|k".into(),
        fingerprint: "f1".into(),
        claim: id.into(),
        at,
        expires_at: at + KEPT_SECS,
    };
    let remember = |id: &str| Change::Remember {
        key: "0123abcd|k".into(),
        claim: id.into(),
        answer: KeptAnswer {
            status: 202,
            body: format!("{{\"by\":\"{id}\"}}"),
        },
    };
    let entry = || WriteLogEntry {
        tenant: "acme".into(),
        at: chrono::Utc::now(),
        request_id: format!("{:016x}", rand_u64()),
        status: 202,
        expires_at: t0 + 86_400,
        ..WriteLogEntry::default()
    };
    let held = |tenant: &'static str, id: &'static str, at: i64| {
        let claim = claim(id, at);
        async move { writes.claim_key(tenant, &claim).await.expect("claim") }
    };
    let in_flight = Some(HeldKey {
        fingerprint: "f1".into(),
        answer: None,
    });
    assert_eq!(held("acme", "a", t0).await, None);
    assert_eq!(held("acme", "b", t0 + 1).await, in_flight);
    // Another tenant's key of the same name is its own.
    assert_eq!(held("globex", "g", t0).await, None);
    // In flight for too long: abandoned, and taken over.
    let later = t0 + ABANDONED_AFTER_SECS;
    assert_eq!(held("acme", "b", later).await, None);
    let lost = writes.commit(entry(), vec![remember("a")]).await;
    assert!(matches!(lost, Err(StoreError::ConditionFailed)), "{lost:?}");
    writes
        .release_key("acme", "0123abcd|k", "a")
        .await
        .expect("release");
    assert_eq!(held("acme", "c", later).await, in_flight);
    writes
        .commit(entry(), vec![remember("b")])
        .await
        .expect("kept");
    // A kept answer is never abandoned, nor freed.
    writes
        .release_key("acme", "0123abcd|k", "b")
        .await
        .expect("release");
    let kept = Some(HeldKey {
        fingerprint: "f1".into(),
        answer: Some(KeptAnswer {
            status: 202,
            body: "{\"by\":\"b\"}".into(),
        }),
    });
    let much_later = later + ABANDONED_AFTER_SECS;
    assert_eq!(held("acme", "d", much_later).await, kept);
    // Until it expires.
    let next_day = later + KEPT_SECS;
    assert_eq!(held("acme", "e", next_day).await, None);
    // Only the lost claim's own log entry is missing: the commit was all or nothing.
    let log = writes.entries("acme").await.expect("log");
    assert_eq!(
        log.iter().filter(|e| e.expires_at == t0 + 86_400).count(),
        1
    );
}
