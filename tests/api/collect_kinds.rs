//! The modules' kinds of the collection API (docs/collect.md#kinds) beyond the firewall's
//! and DNS's: each posted with a collect credential and read back through its public routes,
//! counted once when sent again, its bad lines refused with their codes, and invisible to
//! another tenant.

use chrono::{DateTime, Duration, Utc};
use http::StatusCode;
use netops_shared::routes::Function;
use netops_shared::scope::Scope;
use serde_json::json;

use crate::collect::{post, refusals};
use crate::helpers::{TestApp, TestResponse, stamp, time, walk};

const NDJSON: &str = "application/x-ndjson";

/// Posts NDJSON `lines` of `kind`.
async fn post_lines(app: &TestApp, kind: &str, token: &str, lines: &[String]) -> TestResponse {
    post(app, kind, token, NDJSON, lines.join("\n").into_bytes(), &[]).await
}

/// Asserts that a batch was taken in with `accepted` lines and these refused lines (line
/// number, error code).
fn assert_taken(res: &TestResponse, accepted: u64, refused: &[(u64, &str)]) {
    assert_eq!(res.status, StatusCode::OK, "{}", res.body);
    let data = &res.body["data"];
    assert_eq!(data["accepted"], accepted, "{data}");
    assert_eq!(refusals(data), refused, "{data}");
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
    assert_taken(
        &first,
        3,
        &[
            (4, "invalid_line"),
            (5, "invalid_observation"),
            (6, "time_out_of_range"),
            (7, "invalid_observation"),
            (8, "invalid_observation"),
            (9, "invalid_observation"),
        ],
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

/// An agent's event of `host`, `secs` seconds ago.
fn netdiag_event(host: &str, now: DateTime<Utc>, secs: i64, source: &str, message: &str) -> String {
    json!({"at": stamp(now - Duration::seconds(secs)), "machine": host, "source": source,
        "severity": "medium", "message": message, "details": {"ssid": "ACME-CORP"}})
    .to_string()
}

/// The events of the last hour of `host` whose message holds `q`.
async fn netdiag_events(app: &TestApp, read: &str, host: &str, q: &str) -> TestResponse {
    app.get(
        &format!("/netdiag/machines/{host}/events?period=1h&q={q}&limit=1000"),
        read,
    )
    .await
}

#[tokio::test]
async fn netdiag_events_collected_appear_in_the_machine_feed_once() {
    let app = TestApp::with_modules(&[Function::Netdiag]).await;
    let read = app
        .token("acme", &[Scope::ReadNetdiag, Scope::ReadMachines])
        .await;
    let collect = app.token("acme", &[Scope::CollectNetdiag]).await;
    let machines = app.get("/machines?limit=1", &read).await;
    let host = machines.items()[0]["hostname"]
        .as_str()
        .expect("hostname")
        .to_owned();
    let now = Utc::now();
    let lines = [
        netdiag_event(&host, now, 40, "wlan", "collecte-test itinérance"),
        netdiag_event(&host, now, 40, "wlan", "collecte-test itinérance"),
        netdiag_event(&host, now, 30, "file", "collecte-test fichier"),
        netdiag_event(&host, now, 30, "verdict", "collecte-test verdict"),
        netdiag_event("NO-SUCH-HOST", now, 30, "wlan", "collecte-test"),
        netdiag_event(&host, now, 30, "nope", "collecte-test"),
        netdiag_event(&host, now, 30, "wlan", "collecte-test").replace("medium", "grave"),
        netdiag_event(&host, now, -3600, "wlan", "collecte-test futur"),
    ];
    let first = post_lines(&app, "netdiag-event", &collect, &lines).await;
    assert_taken(
        &first,
        3,
        &[
            (4, "invalid_observation"),
            (5, "unknown_reference"),
            (6, "invalid_observation"),
            (7, "invalid_observation"),
            (8, "time_out_of_range"),
        ],
    );
    // The repeated line is stored once; the sensitive source is kept but never shown.
    let res = netdiag_events(&app, &read, &host, "collecte-test").await;
    assert_eq!(res.status, StatusCode::OK, "{}", res.body);
    let items = res.items();
    assert_eq!(items.len(), 1, "{items:?}");
    assert_eq!(
        (
            &items[0]["source"],
            &items[0]["severity"],
            &items[0]["details"]["ssid"]
        ),
        (&json!("wlan"), &json!("medium"), &json!("ACME-CORP"))
    );
    let res = app
        .get(
            &format!("/netdiag/machines/{host}/events?period=1h&source=file"),
            &read,
        )
        .await;
    assert_eq!(res.status, StatusCode::OK, "{}", res.body);
    assert!(res.items().is_empty(), "{}", res.body);
    // Sent again in another batch: still once.
    let res = post_lines(&app, "netdiag-event", &collect, &lines[..1]).await;
    assert_eq!(res.body["data"]["accepted"], 1, "{}", res.body);
    let res = netdiag_events(&app, &read, &host, "collecte-test").await;
    assert_eq!(res.items().len(), 1, "{}", res.body);
    // Another tenant neither reads nor writes acme's machine.
    let globex = app.token("globex", &[Scope::ReadNetdiag]).await;
    let res = netdiag_events(&app, &globex, &host, "collecte-test").await;
    assert_eq!(res.status, StatusCode::NOT_FOUND, "{}", res.body);
    let globex_collect = app.token("globex", &[Scope::CollectNetdiag]).await;
    let res = post_lines(&app, "netdiag-event", &globex_collect, &lines[..1]).await;
    assert_eq!(res.status, StatusCode::BAD_REQUEST, "{}", res.body);
    assert_eq!(res.body["refusals"][0]["error"], "unknown_reference");
    // A fleet credential does not send NetDiag events.
    let fleet = app.token("acme", &[Scope::CollectFleet]).await;
    let res = post_lines(&app, "netdiag-event", &fleet, &lines[..1]).await;
    assert_eq!(res.status, StatusCode::FORBIDDEN);
    assert_eq!(res.body["scope"], "collect:netdiag");
}

/// A NetDiag measurement of `host` at `at`, with `loss` % lost towards the Internet.
fn netdiag_measure(host: &str, at: DateTime<Utc>, loss: f64) -> String {
    json!({"at": stamp(at), "machine": host,
        "link": {"kind": "ethernet", "connected": true, "speed_mbps": 1000, "adapter": "Intel I219-LM"},
        "latency_ms": {"gateway": 1.2, "dns": 12.0, "internet": 25.0},
        "loss_pct": {"gateway": 0.0, "internet": loss},
        "probes": [{"target": "acme.local", "kind": "dns", "ok": true, "ms": 12.0, "error": null}]})
    .to_string()
}

/// The machine `host` as `/netdiag/machines` lists it.
async fn diag_machine(app: &TestApp, read: &str, host: &str) -> serde_json::Value {
    let res = app.get("/netdiag/machines", read).await;
    assert_eq!(res.status, StatusCode::OK, "{}", res.body);
    res.items()
        .iter()
        .find(|m| m["hostname"] == host)
        .cloned()
        .unwrap_or_else(|| panic!("{host} is not under diagnosis: {}", res.body))
}

/// The messages of `host`'s events of `source` over the last two hours.
async fn messages(app: &TestApp, read: &str, host: &str, source: &str) -> Vec<String> {
    let res = app
        .get(
            &format!("/netdiag/machines/{host}/events?period=3h&source={source}"),
            read,
        )
        .await;
    assert_eq!(res.status, StatusCode::OK, "{}", res.body);
    res.items()
        .iter()
        .map(|e| e["message"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[tokio::test]
async fn netdiag_measurements_collected_give_verdicts_periods_and_alerts_once() {
    let app = TestApp::with_modules(&[Function::Netdiag]).await;
    let read = app.token("acme", &[Scope::ReadNetdiag]).await;
    let collect = app
        .token("acme", &[Scope::CollectNetdiag, Scope::CollectFleet])
        .await;
    let host = "COLLECT-ND-0001";
    let now = Utc::now();
    let beat = json!({"at": stamp(now - Duration::hours(1)), "hostname": host, "ip": "10.10.30.77",
        "os": "Windows 11 Pro 24H2", "agent_version": "4.12.3", "modules": ["netdiag"]})
    .to_string();
    let res = post_lines(&app, "machine-heartbeat", &collect, &[beat]).await;
    assert_eq!(res.status, StatusCode::OK, "{}", res.body);
    let t = |min: i64| now - Duration::minutes(min);
    let lines = [
        netdiag_measure(host, t(50), 0.0),
        netdiag_measure(host, t(35), 20.0),
        netdiag_measure(host, t(20), 25.0),
        netdiag_measure(host, t(20), 25.0),
        netdiag_measure(host, t(10), 0.0)
            .replace("\"machine\"", "\"verdict\": \"OK\", \"machine\""),
        netdiag_measure(host, t(10), 150.0),
        netdiag_measure("NO-SUCH-HOST", t(10), 0.0),
    ];
    let first = post_lines(&app, "netdiag-measurement", &collect, &lines).await;
    assert_taken(
        &first,
        4,
        &[
            (5, "invalid_observation"),
            (6, "invalid_observation"),
            (7, "unknown_reference"),
        ],
    );
    // The product's verdict: the Internet access, with an alert in progress.
    let m = diag_machine(&app, &read, host).await;
    assert_eq!(
        (&m["verdict"], &m["alert_state"]),
        (&json!("WAN"), &json!("open")),
        "{m}"
    );
    assert_eq!(
        stamp(crate::helpers::time(&m["verdict_since"])),
        stamp(t(35))
    );
    let alert_id = m["alert"]["id"].as_str().expect("alert id").to_owned();
    assert!(alert_id.starts_with(&format!("nd-{host}-")), "{alert_id}");
    let summary = app
        .get(
            &format!("/netdiag/machines/{host}/summary?period=3h"),
            &read,
        )
        .await;
    assert_eq!(summary.status, StatusCode::OK, "{}", summary.body);
    let s = &summary.body["data"];
    assert_eq!(s["current"]["verdict"], "WAN");
    assert_eq!(s["latest"]["verdict"], "WAN");
    assert_eq!(s["latest"]["loss_pct"]["internet"], 25.0);
    assert!(
        s["current"]["cause"]
            .as_str()
            .is_some_and(|c| c.contains("25 %")),
        "{s}"
    );
    // Sent again, the same measurements change nothing.
    let res = post_lines(&app, "netdiag-measurement", &collect, &lines[..3]).await;
    assert_eq!(res.body["data"]["accepted"], 3, "{}", res.body);
    assert_eq!(messages(&app, &read, host, "verdict").await.len(), 1);
    assert_eq!(messages(&app, &read, host, "alert").await.len(), 1);
    assert_eq!(
        diag_machine(&app, &read, host).await["alert"]["id"],
        alert_id
    );
    // Back to OK: the period closes and the alert resolves.
    let res = post_lines(
        &app,
        "netdiag-measurement",
        &collect,
        &[netdiag_measure(host, t(5), 0.0)],
    )
    .await;
    assert_eq!(res.status, StatusCode::OK, "{}", res.body);
    let m = diag_machine(&app, &read, host).await;
    assert_eq!(
        (&m["verdict"], &m["alert_state"]),
        (&json!("OK"), &json!("none")),
        "{m}"
    );
    let verdicts = messages(&app, &read, host, "verdict").await;
    assert_eq!(verdicts.len(), 2, "{verdicts:?}");
    assert!(verdicts[0].starts_with("Verdict WAN → OK"), "{verdicts:?}");
    assert_eq!(messages(&app, &read, host, "alert").await.len(), 2);
    let summary = app
        .get(
            &format!("/netdiag/machines/{host}/summary?period=3h"),
            &read,
        )
        .await;
    let wan = summary.body["data"]["distribution"]
        .as_array()
        .expect("distribution")
        .iter()
        .find(|d| d["verdict"] == "WAN")
        .cloned()
        .expect("WAN share");
    assert_eq!(wan["samples"], 2, "{}", summary.body);
    // Another tenant sees none of it.
    let globex = app.token("globex", &[Scope::ReadNetdiag]).await;
    let res = app
        .get(&format!("/netdiag/machines/{host}/summary"), &globex)
        .await;
    assert_eq!(res.status, StatusCode::NOT_FOUND, "{}", res.body);
}
