//! The modules' kinds of the collection API (docs/collect.md#kinds) beyond the firewall's
//! and DNS's: each posted with a collect credential and read back through its public routes,
//! counted once when sent again, its bad lines refused with their codes, and invisible to
//! another tenant.

use chrono::{DateTime, Duration, Utc};
use http::StatusCode;
use netops_shared::scope::Scope;
use serde_json::json;

use crate::collect::{post, refusals};
use crate::helpers::{TestApp, TestResponse, stamp, time, walk};

const NDJSON: &str = "application/x-ndjson";

/// Posts NDJSON `lines` of `kind`.
async fn post_lines(app: &TestApp, kind: &str, token: &str, lines: &[String]) -> TestResponse {
    post(app, kind, token, NDJSON, lines.join("\n").into_bytes(), &[]).await
}

/// A heartbeat of `host` at `at`.
fn heartbeat(host: &str, at: DateTime<Utc>, version: &str, status: &str) -> String {
    json!({"at": stamp(at), "hostname": host, "ip": "10.10.99.7", "os": "Windows 11 Pro 24H2",
        "agent_version": version, "status": status, "modules": ["netflow", "netdiag", "netflow"]})
    .to_string()
}

async fn machine(app: &TestApp, read: &str, host: &str) -> TestResponse {
    app.get(&format!("/machines/{host}"), read).await
}

#[tokio::test]
async fn machine_heartbeats_update_their_machine_and_create_new_ones_once() {
    let app = TestApp::with_modules(&[]).await;
    let read = app.token("acme", &[Scope::ReadMachines]).await;
    let collect = app.token("acme", &[Scope::CollectFleet]).await;
    let before = walk(&app, "/machines?limit=500", &read).await;
    let known = before[0]["hostname"].as_str().expect("hostname").to_owned();
    let known_id = before[0]["id"].as_i64().expect("id");
    let highest = before.iter().filter_map(|m| m["id"].as_i64()).max();
    let now = Utc::now();
    let new = "COLLECT-LT-0001";
    let lines = [
        heartbeat(&known, now - Duration::seconds(60), "9.9.1", "online"),
        heartbeat(&known, now - Duration::seconds(30), "9.9.2", "offline"),
        heartbeat(new, now - Duration::seconds(20), "9.9.0", "online"),
        "{oops".to_owned(),
        heartbeat(new, now, "9.9.0", "online").replace("10.10.99.7", "10.10.999.7"),
        heartbeat(&known, now + Duration::hours(1), "9.9.3", "online"),
        json!({"at": stamp(now), "hostname": new, "ip": "10.0.0.1", "agent_version": "1"})
            .to_string(),
        heartbeat("TWO WORDS", now, "9.9.0", "online"),
        heartbeat(new, now, "9.9.0", "asleep"),
    ];
    let first = post_lines(&app, "machine-heartbeat", &collect, &lines).await;
    assert_eq!(first.status, StatusCode::OK, "{}", first.body);
    let data = &first.body["data"];
    assert_eq!(data["accepted"], 3, "{data}");
    assert_eq!(
        refusals(data),
        [
            (4, "invalid_line"),
            (5, "invalid_observation"),
            (6, "time_out_of_range"),
            (7, "invalid_observation"),
            (8, "invalid_observation"),
            (9, "invalid_observation"),
        ]
    );
    // The known machine takes its latest heartbeat's state, and keeps its id.
    let res = machine(&app, &read, &known).await;
    assert_eq!(res.status, StatusCode::OK, "{}", res.body);
    let m = &res.body["data"];
    assert_eq!(
        (&m["id"], &m["agent_version"], &m["status"], &m["ip"]),
        (
            &json!(known_id),
            &json!("9.9.2"),
            &json!("offline"),
            &json!("10.10.99.7")
        ),
        "{m}"
    );
    assert_eq!(
        stamp(time(&m["last_seen_at"])),
        stamp(now - Duration::seconds(30))
    );
    assert_eq!(m["modules"], json!(["netdiag", "netflow"]));
    let offline = walk(&app, "/machines?status=offline&limit=500", &read).await;
    assert!(offline.iter().any(|m| m["hostname"] == known.as_str()));
    // The new machine is created with the tenant's next id.
    let res = machine(&app, &read, new).await;
    assert_eq!(res.status, StatusCode::OK, "{}", res.body);
    let created = res.body["data"].clone();
    assert_eq!(created["id"].as_i64(), highest.map(|h| h + 1), "{created}");
    assert_eq!(created["status"], "online");
    // Sent again, in another batch and with an older heartbeat: nothing changes, no machine
    // is created twice.
    let again = [
        heartbeat(new, now - Duration::seconds(20), "9.9.0", "online"),
        heartbeat(&known, now - Duration::seconds(120), "1.0.0", "online"),
    ];
    let res = post_lines(&app, "machine-heartbeat", &collect, &again).await;
    assert_eq!(res.body["data"]["accepted"], 2, "{}", res.body);
    let res = post_lines(&app, "machine-heartbeat", &collect, &again).await;
    assert_eq!(res.header("idempotent-replayed"), Some("true"));
    assert_eq!(machine(&app, &read, new).await.body["data"], created);
    let m = machine(&app, &read, &known).await.body["data"].clone();
    assert_eq!(m["agent_version"], "9.9.2");
    let after = walk(&app, "/machines?limit=500", &read).await;
    assert_eq!(after.len(), before.len() + 1);
    // A second new machine gets the id after.
    let res = post_lines(
        &app,
        "machine-heartbeat",
        &collect,
        &[heartbeat("COLLECT-LT-0002", now, "9.9.0", "online")],
    )
    .await;
    assert_eq!(res.status, StatusCode::OK, "{}", res.body);
    let second = machine(&app, &read, "COLLECT-LT-0002").await;
    assert_eq!(second.body["data"]["id"].as_i64(), highest.map(|h| h + 2));
    // Another tenant sees none of it, and its own heartbeat of the same name is its own.
    let globex = app.token("globex", &[Scope::ReadMachines]).await;
    assert_eq!(
        machine(&app, &globex, new).await.status,
        StatusCode::NOT_FOUND
    );
    let globex_collect = app.token("globex", &[Scope::CollectFleet]).await;
    let res = post_lines(
        &app,
        "machine-heartbeat",
        &globex_collect,
        &[heartbeat(new, now, "1.2.3", "online")],
    )
    .await;
    assert_eq!(res.status, StatusCode::OK, "{}", res.body);
    assert_eq!(
        machine(&app, &globex, new).await.body["data"]["agent_version"],
        "1.2.3"
    );
    assert_eq!(
        machine(&app, &read, new).await.body["data"]["agent_version"],
        "9.9.0"
    );
    // Another module's credential does not send heartbeats.
    let dns = app.token("acme", &[Scope::CollectDns]).await;
    let res = post_lines(&app, "machine-heartbeat", &dns, &again).await;
    assert_eq!(res.status, StatusCode::FORBIDDEN);
    assert_eq!(res.body["scope"], "collect:fleet");
    // Refusals in English on request.
    let res = post(
        &app,
        "machine-heartbeat",
        &collect,
        NDJSON,
        b"{\"at\": 1}".to_vec(),
        &[("accept-language", "en")],
    )
    .await;
    assert_eq!(res.status, StatusCode::BAD_REQUEST, "{}", res.body);
    let message = &res.body["refusals"][0]["message"];
    assert!(
        message
            .as_str()
            .is_some_and(|m| m.starts_with("invalid observation")),
        "{message}"
    );
}
