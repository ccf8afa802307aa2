//! The modules' kinds of the collection API (docs/collect.md#kinds) beyond the firewall's
//! and DNS's: each posted with a collect credential and read back through its public routes,
//! counted once when sent again, its bad lines refused with their codes, and invisible to
//! another tenant.

use chrono::{DateTime, Duration, Utc};
use http::{Method, StatusCode};
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

/// The scheduled pass (docs/collect.md#the-scheduled-pass) marks `offline` a machine whose
/// heartbeats stopped more than 10 minutes before, keeping its last sighting, and its next
/// heartbeat brings it back.
#[tokio::test]
async fn a_machine_whose_heartbeats_stop_goes_offline_at_the_pass_and_back_online() {
    let app = TestApp::with_modules(&[]).await;
    let read = app.token("acme", &[Scope::ReadMachines]).await;
    let collect = app.token("acme", &[Scope::CollectFleet]).await;
    // To the millisecond, as the heartbeats send it.
    let now = time(&json!(stamp(Utc::now())));
    let (silent_at, recent_at) = (now - Duration::minutes(15), now - Duration::minutes(2));
    let lines = [
        heartbeat("SILENT-LT-0001", silent_at, "9.9.0", "online"),
        heartbeat("RECENT-LT-0001", recent_at, "9.9.0", "online"),
    ];
    assert_taken(
        &post_lines(&app, "machine-heartbeat", &collect, &lines).await,
        2,
        &[],
    );
    let silence = Duration::minutes(netops_fleet::SILENT_MINUTES);
    let pass = |at: DateTime<Utc>| {
        netops_shared::pass::run(
            &app.stores,
            at,
            Duration::hours(1),
            &[netops_fleet::OFFLINE],
        )
    };
    let status = |host: &'static str| {
        let (app, read) = (&app, &read);
        async move {
            let m = machine(app, read, host).await.body["data"].clone();
            (
                m["status"].as_str().unwrap_or_default().to_owned(),
                time(&m["last_seen_at"]),
            )
        }
    };
    // Ten minutes of silence exactly: still online.
    pass(silent_at + silence).await.expect("pass");
    assert_eq!(status("SILENT-LT-0001").await.0, "online");
    // A second more: offline, its last sighting kept; the other one stays online.
    let report = pass(silent_at + silence + Duration::seconds(1))
        .await
        .expect("pass");
    assert!(report.failures.is_empty(), "{report:?}");
    let marked = report
        .tasks
        .iter()
        .find(|(name, _)| name == "machines_offline");
    assert!(marked.is_some_and(|(_, n)| *n >= 1), "{report:?}");
    let (state, seen) = status("SILENT-LT-0001").await;
    assert_eq!(state, "offline");
    assert_eq!(stamp(seen), stamp(silent_at));
    assert_eq!(status("RECENT-LT-0001").await.0, "online");
    let offline = walk(&app, "/machines?status=offline&limit=500", &read).await;
    assert!(offline.iter().any(|m| m["hostname"] == "SILENT-LT-0001"));
    // Its next heartbeat brings it back online; a later pass leaves it so.
    let back = [heartbeat("SILENT-LT-0001", now, "9.9.1", "online")];
    assert_taken(
        &post_lines(&app, "machine-heartbeat", &collect, &back).await,
        1,
        &[],
    );
    pass(now).await.expect("pass");
    assert_eq!(status("SILENT-LT-0001").await.0, "online");
    // The other one goes too once silent for as long.
    pass(recent_at + silence + Duration::seconds(1))
        .await
        .expect("pass");
    assert_eq!(status("RECENT-LT-0001").await.0, "offline");
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

/// A machine's agent credential sends the kinds of its own machine (docs/agent.md): a line
/// naming another machine is refused alike whether that machine exists or not, and the kinds
/// agents do not send are refused as to any token without their scope.
#[tokio::test]
async fn an_agent_credential_collects_for_its_own_machine_only() {
    let app = TestApp::with_modules(&[Function::Netdiag]).await;
    let read = app
        .token("acme", &[Scope::ReadNetdiag, Scope::ReadMachines])
        .await;
    let machines = app.get("/machines?limit=2", &read).await;
    let hosts: Vec<&str> = machines
        .items()
        .iter()
        .filter_map(|m| m["hostname"].as_str())
        .collect();
    let (own, other) = (hosts[0], hosts[1].to_owned());
    // The credential enrollment gives the machine's agent (docs/agent.md#credentials).
    let (agent, _) = netops_shared::auth::create_token(
        app.stores.tokens.as_ref(),
        "acme",
        &format!("{}{own}", netops_shared::auth::AGENT_TOKEN_PREFIX),
        vec![Scope::Agent],
        Duration::days(1),
    )
    .await
    .expect("agent credential");
    let enroller = app.token("acme", &[Scope::AgentEnroll]).await;
    let now = Utc::now();
    let lines = [
        netdiag_event(own, now, 40, "wlan", "agent-collecte"),
        netdiag_event(&other, now, 40, "wlan", "agent-collecte"),
        netdiag_event("NO-SUCH-HOST", now, 40, "wlan", "agent-collecte"),
    ];
    let res = post_lines(&app, "netdiag-event", &agent, &lines).await;
    assert_taken(
        &res,
        1,
        &[(2, "unknown_reference"), (3, "unknown_reference")],
    );
    let told = &res.body["data"]["refusals"];
    assert_eq!(told[0]["message"], told[1]["message"], "{told}");
    assert!(
        told[0]["message"].as_str().is_some_and(|m| m.contains(own)),
        "{told}"
    );
    let res = netdiag_events(&app, &read, own, "agent-collecte").await;
    assert_eq!(res.items().len(), 1, "{}", res.body);
    let res = netdiag_events(&app, &read, &other, "agent-collecte").await;
    assert!(res.items().is_empty(), "{}", res.body);
    // Its heartbeats: its own machine's only.
    let res = post_lines(
        &app,
        "machine-heartbeat",
        &agent,
        &[
            heartbeat(own, now, "5.0.9", "online"),
            heartbeat(&other, now, "5.0.9", "online"),
        ],
    )
    .await;
    assert_taken(&res, 1, &[(2, "unknown_reference")]);
    assert_eq!(
        machine(&app, &read, own).await.body["data"]["agent_version"],
        "5.0.9"
    );
    assert_ne!(
        machine(&app, &read, &other).await.body["data"]["agent_version"],
        "5.0.9"
    );
    // Not the kinds of a site or a server, nor with the tenant's enrollment token.
    let res = post(
        &app,
        "firewall-syslog",
        &agent,
        "text/plain",
        b"x".to_vec(),
        &[],
    )
    .await;
    assert_eq!(res.status, StatusCode::FORBIDDEN, "{}", res.body);
    assert_eq!(res.body["scope"], "collect:firewall");
    let res = post_lines(&app, "netdiag-event", &enroller, &lines[..1]).await;
    assert_eq!(res.status, StatusCode::FORBIDDEN, "{}", res.body);
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

/// An inventory of `host` at `at` listing `software` (name, publisher, version).
fn inventory(host: &str, at: DateTime<Utc>, software: &[(&str, &str, &str)]) -> String {
    let software: Vec<_> = software
        .iter()
        .map(|(name, publisher, version)| json!({"name": name, "publisher": publisher, "version": version}))
        .collect();
    json!({"at": stamp(at), "machine": host, "fqdn": format!("{}.acme.local", host.to_lowercase()),
        "ips": ["10.10.99.8", "fe80::1"], "os": "Windows 11 Pro 24H2", "os_build": "10.0.26100",
        "kind": "laptop", "site": "PAR",
        "hardware": {"manufacturer": "Dell Inc.", "model": "Latitude 5440", "serial_number": "INV1",
            "cpu": "13th Gen Intel(R) Core(TM) i5-1345U", "cpu_cores": 10, "memory_gb": 16, "disk_gb": 512},
        "software": software})
    .to_string()
}

/// The software of this name and version, as `/inventory/software` lists it.
async fn software(
    app: &TestApp,
    read: &str,
    name: &str,
    version: &str,
) -> Option<serde_json::Value> {
    walk(
        app,
        &format!(
            "/inventory/software?q={}&limit=1000",
            name.replace(' ', "%20")
        ),
        read,
    )
    .await
    .into_iter()
    .find(|s| s["name"] == name && s["version"] == version)
}

#[tokio::test]
async fn inventories_collected_make_assets_install_counts_and_cve_records_once() {
    let app = TestApp::with_modules(&[Function::Inventory]).await;
    let read = app
        .token("acme", &[Scope::ReadInventory, Scope::ReadMachines])
        .await;
    let collect = app
        .token("acme", &[Scope::CollectInventory, Scope::CollectFleet])
        .await;
    let now = Utc::now();
    let host = "INV-LT-0001";
    let hb = post_lines(
        &app,
        "machine-heartbeat",
        &collect,
        &[heartbeat(host, now - Duration::hours(1), "9.9.0", "online")],
    )
    .await;
    assert_taken(&hb, 1, &[]);
    let id = machine(&app, &read, host).await.body["data"]["id"]
        .as_i64()
        .expect("id");
    const ZIP: (&str, &str, &str) = ("7-Zip", "Igor Pavlov", "19.00");
    const OWN: (&str, &str, &str) = ("Outil maison INV", "ACME", "1.2.3");
    let zip_before = software(&app, &read, ZIP.0, ZIP.2).await;
    let installs_before = zip_before
        .as_ref()
        .map_or(0, |s| s["install_count"].as_u64().unwrap_or(0));
    let first = [
        inventory(host, now - Duration::minutes(30), &[ZIP, OWN, OWN]),
        inventory("NOBODY-KNOWS-ME", now - Duration::minutes(30), &[ZIP]),
        inventory(host, now, &[ZIP]).replace("10.10.99.8", "10.10.99.999"),
        inventory(host, now + Duration::hours(1), &[ZIP]),
        inventory(host, now - Duration::minutes(40), &[]),
    ];
    let res = post_lines(&app, "asset-inventory", &collect, &first).await;
    assert_taken(
        &res,
        2,
        &[
            (2, "unknown_reference"),
            (3, "invalid_observation"),
            (4, "time_out_of_range"),
        ],
    );
    // The asset is the machine's, as its latest inventory says; the older one changed nothing.
    let asset = app.get(&format!("/inventory/assets/{id}"), &read).await;
    assert_eq!(asset.status, StatusCode::OK, "{}", asset.body);
    let asset = &asset.body["data"];
    assert_eq!(asset["hostname"], host);
    assert_eq!(asset["software_count"], 2, "{asset}");
    assert_eq!(
        asset["cve_count"], 2,
        "7-Zip 19.00 has two CVEs in the catalogue"
    );
    assert_eq!(asset["ips"], json!(["10.10.99.8", "fe80::1"]));
    let names: Vec<&str> = asset["software"]
        .as_array()
        .expect("software")
        .iter()
        .filter_map(|s| s["name"].as_str())
        .collect();
    assert_eq!(names, ["7-Zip", "Outil maison INV"]);
    let by_q = walk(&app, "/inventory/assets?q=inv-lt-0001", &read).await;
    assert_eq!(by_q.len(), 1);
    // Install counts and CVE records derived, each asset counted once.
    let zip = software(&app, &read, ZIP.0, ZIP.2)
        .await
        .expect("7-Zip 19.00 listed");
    assert_eq!(zip["install_count"].as_u64(), Some(installs_before + 1));
    assert_eq!(zip["cve_count"], 2);
    let own = software(&app, &read, OWN.0, OWN.2)
        .await
        .expect("own tool listed");
    assert_eq!(
        (
            own["install_count"].as_u64(),
            own["eol_status"].as_str(),
            own["cve_count"].as_u64()
        ),
        (Some(1), Some("unknown"), Some(0))
    );
    let cve_id = format!("CVE-2025-0411:{}", zip["id"]);
    let record = || async {
        walk(&app, "/inventory/cves?limit=1000", &read)
            .await
            .into_iter()
            .find(|r| r["id"] == cve_id.as_str())
    };
    let cve = record().await.expect("CVE record of 7-Zip 19.00");
    assert_eq!(cve["affected_assets"], zip["install_count"]);
    // The same inventory again, in another batch, counts nothing twice.
    let again = post_lines(&app, "asset-inventory", &collect, &first[..1]).await;
    assert_taken(&again, 1, &[]);
    assert_eq!(
        software(&app, &read, ZIP.0, ZIP.2).await.expect("listed")["install_count"],
        zip["install_count"]
    );
    // A later inventory without them takes them off: the own tool is no longer listed.
    let later = post_lines(
        &app,
        "asset-inventory",
        &collect,
        &[inventory(
            host,
            now - Duration::minutes(10),
            &[("7-Zip", "Igor Pavlov", "24.09")],
        )],
    )
    .await;
    assert_taken(&later, 1, &[]);
    assert_eq!(
        software(&app, &read, ZIP.0, ZIP.2)
            .await
            .map_or(0, |s| s["install_count"].as_u64().unwrap_or(0)),
        installs_before
    );
    assert!(software(&app, &read, OWN.0, OWN.2).await.is_none());
    let asset = app.get(&format!("/inventory/assets/{id}"), &read).await;
    assert_eq!(
        (
            asset.body["data"]["software_count"].as_u64(),
            asset.body["data"]["cve_count"].as_u64()
        ),
        (Some(1), Some(0))
    );
    if installs_before == 0 {
        assert!(
            record().await.is_none(),
            "no asset runs 7-Zip 19.00 any more"
        );
    } else {
        assert_eq!(
            record().await.expect("record")["affected_assets"].as_u64(),
            Some(installs_before)
        );
    }
    // Another tenant sees none of it.
    let globex = app.token("globex", &[Scope::ReadInventory]).await;
    assert!(
        walk(&app, "/inventory/assets?q=inv-lt-0001", &globex)
            .await
            .is_empty()
    );
}

#[tokio::test]
async fn directory_events_collected_appear_in_their_routes_once() {
    let app = TestApp::with_modules(&[Function::Security]).await;
    let read = app.token("acme", &[Scope::ReadSecurity]).await;
    let collect = app.token("acme", &[Scope::CollectSecurity]).await;
    let now = Utc::now();
    let at = |min: i64| stamp(now - Duration::minutes(min));
    let logons = [
        json!({"at": at(5), "event_id": 4625, "user": "collecte.test", "domain": "ACME", "logon_type": 3,
            "source_host": "PAR-LT-0004", "source_ip": "10.10.30.11", "target_host": "PAR-SRV-0002",
            "auth_package": "NTLM", "failure_reason": "0xC000006A mauvais mot de passe", "dc": "PAR-DC-01"}),
        json!({"at": at(4), "event_id": 4624, "user": "collecte.test", "domain": "ACME", "logon_type": 10,
            "source_ip": "10.10.30.11", "target_host": "PAR-SRV-0002", "auth_package": "Kerberos", "dc": "PAR-DC-01"}),
        json!({"at": at(3), "event_id": 4624, "user": "collecte.test", "domain": "ACME", "logon_type": 3,
            "source_ip": "10.10.30.11", "target_host": "PAR-SRV-0002", "auth_package": "Kerberos",
            "failure_reason": "none", "dc": "PAR-DC-01"}),
        json!({"at": at(3), "event_id": 4634, "user": "collecte.test", "domain": "ACME", "logon_type": 3,
            "source_ip": "10.10.30.11", "target_host": "PAR-SRV-0002", "auth_package": "Kerberos", "dc": "PAR-DC-01"}),
        json!({"at": stamp(now + Duration::hours(1)), "event_id": 4624, "user": "collecte.test", "domain": "ACME",
            "logon_type": 3, "source_ip": "10.10.30.11", "target_host": "PAR-SRV-0002", "auth_package": "Kerberos", "dc": "PAR-DC-01"}),
    ]
    .map(|l| l.to_string());
    let res = post_lines(&app, "directory-logon", &collect, &logons).await;
    assert_taken(
        &res,
        2,
        &[
            (3, "invalid_observation"),
            (4, "invalid_observation"),
            (5, "time_out_of_range"),
        ],
    );
    // Sent again in another batch (a shipper's retry with one more line), stored once.
    let mut retry = logons[..2].to_vec();
    retry.push(String::new());
    assert_taken(
        &post_lines(&app, "directory-logon", &collect, &retry).await,
        2,
        &[],
    );
    let listed = walk(&app, "/security/logons?user=collecte.test", &read).await;
    assert_eq!(listed.len(), 2, "{listed:?}");
    assert_eq!(listed[0]["result"], "success");
    assert_eq!(
        (
            listed[1]["result"].as_str(),
            listed[1]["source_host"].as_str()
        ),
        (Some("failure"), Some("PAR-LT-0004"))
    );
    let failed = walk(
        &app,
        "/security/logons?user=collecte.test&result=failure",
        &read,
    )
    .await;
    assert_eq!(failed.len(), 1);

    let lockouts = [
        json!({"at": at(6), "event_id": 4740, "user": "collecte.test", "caller_host": "PAR-LT-0004", "dc": "PAR-DC-01"}),
        json!({"at": at(2), "event_id": 4767, "user": "collecte.test", "author": "admin.jean", "dc": "PAR-DC-01"}),
        json!({"at": at(2), "event_id": 4741, "user": "collecte.test", "dc": "PAR-DC-01"}),
    ]
    .map(|l| l.to_string());
    assert_taken(
        &post_lines(&app, "account-lockout", &collect, &lockouts).await,
        2,
        &[(3, "invalid_observation")],
    );
    let res = app
        .get("/security/lockouts?user=collecte.test", &read)
        .await;
    let actions: Vec<&str> = res.body["data"]
        .as_array()
        .expect("data")
        .iter()
        .filter_map(|l| l["action"].as_str())
        .collect();
    assert_eq!(actions, ["unlocked", "locked"], "{}", res.body);

    let changes = [
        json!({"at": at(7), "event_id": 4728, "type": "group", "action": "member_added", "author": "admin.jean",
            "target": "collecte.test", "object": "Admins du domaine", "details": "ajout", "dc": "PAR-DC-01"}),
        json!({"at": at(7), "event_id": 4624, "type": "group", "action": "member_added", "author": "admin.jean", "dc": "PAR-DC-01"}),
        json!({"at": at(7), "event_id": 4728, "type": "groupe", "action": "member_added", "author": "admin.jean", "dc": "PAR-DC-01"}),
    ]
    .map(|l| l.to_string());
    assert_taken(
        &post_lines(&app, "account-change", &collect, &changes).await,
        1,
        &[(2, "invalid_observation"), (3, "invalid_observation")],
    );
    let listed = walk(
        &app,
        "/security/account-changes?user=collecte.test&type=group",
        &read,
    )
    .await;
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(
        (listed[0]["action"].as_str(), listed[0]["object"].as_str()),
        (Some("member_added"), Some("Admins du domaine"))
    );

    // Another tenant sees none of it; a credential without the scope cannot send it.
    let globex = app.token("globex", &[Scope::ReadSecurity]).await;
    assert!(
        walk(&app, "/security/logons?user=collecte.test", &globex)
            .await
            .is_empty()
    );
    let other = app.token("acme", &[Scope::CollectInventory]).await;
    let res = post_lines(&app, "directory-logon", &other, &logons[..1]).await;
    assert_eq!(res.status, StatusCode::FORBIDDEN);
}

/// A failed logon (4625) of `account` from `ip`, `secs` seconds before `now`, as a SIEM sends it.
fn failure(now: DateTime<Utc>, secs: i64, account: &str, ip: &str) -> String {
    json!({"at": stamp(now - Duration::seconds(secs)), "event_id": 4625, "host": "PAR-DC-01",
        "account": account, "source_ip": ip, "logon_type": 3})
    .to_string()
}

/// The incidents in progress of rule `rule` naming `name` among their accounts or addresses.
async fn incidents_of(app: &TestApp, read: &str, rule: &str, name: &str) -> Vec<serde_json::Value> {
    let res = app
        .get("/security/incidents?status=open&limit=500", read)
        .await;
    assert_eq!(res.status, StatusCode::OK, "{}", res.body);
    res.items()
        .iter()
        .filter(|i| i["rule_id"] == rule)
        .filter(|i| {
            [&i["accounts"], &i["source_ips"]]
                .iter()
                .any(|l| l.as_array().is_some_and(|l| l.iter().any(|n| n == name)))
        })
        .cloned()
        .collect()
}

#[tokio::test]
async fn siem_events_collected_open_incidents_once_and_keep_their_ack() {
    let app = TestApp::with_modules(&[Function::Security, Function::Alerts]).await;
    let read = app
        .token("acme", &[Scope::ReadSecurity, Scope::ReadAlerts])
        .await;
    let collect = app.token("acme", &[Scope::CollectSecurity]).await;
    let now = Utc::now();
    let victim = "siem.collecte";
    let ip = "203.0.113.77";
    // Nine failures in two minutes (and two bad lines): under the threshold of 10 in 5 minutes.
    let mut nine: Vec<String> = (0..9)
        .map(|i| failure(now, 600 - i * 15, victim, ip))
        .collect();
    nine.push(json!({"at": stamp(now), "event_id": 0, "host": "DC"}).to_string());
    nine.push(
        json!({"at": stamp(now), "event_id": 4625, "host": "DC", "source_ip": "nulle part"})
            .to_string(),
    );
    assert_taken(
        &post_lines(&app, "siem-event", &collect, &nine).await,
        9,
        &[(10, "invalid_observation"), (11, "invalid_observation")],
    );
    assert!(incidents_of(&app, &read, "gl-001", victim).await.is_empty());
    // The tenth arrives late, dated before the others (its window is evaluated again), with
    // two more, one of them twice: one incident of the twelve events.
    let more = [
        failure(now, 630, victim, ip),
        failure(now, 400, victim, ip),
        failure(now, 390, victim, ip),
        failure(now, 390, victim, ip),
    ];
    assert_taken(
        &post_lines(&app, "siem-event", &collect, &more).await,
        4,
        &[],
    );
    let found = incidents_of(&app, &read, "gl-001", victim).await;
    assert_eq!(found.len(), 1, "{found:?}");
    let incident = &found[0];
    assert_eq!(
        (
            incident["status"].as_str(),
            incident["severity"].as_str(),
            incident["event_count"].as_u64()
        ),
        (Some("OPEN"), Some("HIGH"), Some(12)),
        "{incident}"
    );
    assert_eq!(incident["source_ips"], json!([ip]));
    let id = incident["id"].as_str().expect("id").to_owned();
    let detail = app
        .get(&format!("/security/incidents/siem-{id}"), &read)
        .await;
    assert_eq!(detail.status, StatusCode::OK, "{}", detail.body);
    let events = detail.body["data"]["events"].as_array().expect("events");
    assert_eq!(events.len(), 12);
    assert!(
        events
            .iter()
            .all(|e| e["event_id"] == 4625 && e["account"] == victim)
    );
    assert!(
        time(&events[0]["ts"]) > time(&events[11]["ts"]),
        "newest first"
    );
    // The same lines again, in one batch of another identity (a shipper's retry cut
    // otherwise), open nothing and count nothing twice.
    let retry: Vec<String> = nine.iter().chain(&more).cloned().collect();
    assert_taken(
        &post_lines(&app, "siem-event", &collect, &retry).await,
        13,
        &[(10, "invalid_observation"), (11, "invalid_observation")],
    );
    let again = incidents_of(&app, &read, "gl-001", victim).await;
    assert_eq!(again, found);
    // In the alert feed as siem-<id>; acknowledged there, it keeps its status when more
    // events of the episode arrive, which it counts.
    let feed = app
        .get("/alerts?kind=siem&status=open&limit=500", &read)
        .await;
    assert!(
        feed.items().iter().any(|a| a["id"] == format!("siem-{id}")),
        "{}",
        feed.body
    );
    let ack = app.token("acme", &[Scope::WriteAlerts]).await;
    let res = app
        .send(
            http::Method::POST,
            &format!("/alerts/siem-{id}/ack"),
            &ack,
            json!({"note": "Vu"}),
        )
        .await;
    assert_eq!(res.status, StatusCode::OK, "{}", res.body);
    let later = [failure(now, 300, victim, ip), failure(now, 200, victim, ip)];
    assert_taken(
        &post_lines(&app, "siem-event", &collect, &later).await,
        2,
        &[],
    );
    let acked = incidents_of(&app, &read, "gl-001", victim).await;
    assert_eq!(acked.len(), 1, "{acked:?}");
    assert_eq!(
        (
            acked[0]["status"].as_str(),
            acked[0]["event_count"].as_u64()
        ),
        (Some("ACKNOWLEDGED"), Some(14))
    );
    let actions: Vec<&str> = acked[0]["actions"]
        .as_array()
        .expect("actions")
        .iter()
        .filter_map(|a| a["action"].as_str())
        .collect();
    assert_eq!(actions, ["open", "ack"]);

    // The directory's logons feed the rules too: 15 accounts failing from one address in
    // 10 minutes is a password spray (one failure each: no brute force); 14 from another
    // address is not.
    let logon = |i: i64, source: &str| {
        json!({"at": stamp(now - Duration::seconds(500 - i * 20)), "event_id": 4625,
            "user": format!("spray.{i}"), "domain": "ACME", "logon_type": 3, "source_ip": source,
            "target_host": "PAR-DC-01", "auth_package": "NTLM", "dc": "PAR-DC-01"})
        .to_string()
    };
    let mut logons: Vec<String> = (0..15).map(|i| logon(i, "198.51.100.77")).collect();
    logons.extend((0..14).map(|i| logon(i, "198.51.100.78")));
    assert_taken(
        &post_lines(&app, "directory-logon", &collect, &logons).await,
        29,
        &[],
    );
    let spray = incidents_of(&app, &read, "gl-002", "198.51.100.77").await;
    assert_eq!(spray.len(), 1, "{spray:?}");
    assert_eq!(
        (
            spray[0]["severity"].as_str(),
            spray[0]["accounts"].as_array().map(Vec::len)
        ),
        (Some("CRITICAL"), Some(15))
    );
    assert!(
        incidents_of(&app, &read, "gl-002", "198.51.100.78")
            .await
            .is_empty()
    );
    assert!(
        incidents_of(&app, &read, "gl-001", "spray.0")
            .await
            .is_empty()
    );
    // Another tenant sees none of it.
    let globex = app.token("globex", &[Scope::ReadSecurity]).await;
    assert!(
        incidents_of(&app, &globex, "gl-001", victim)
            .await
            .is_empty()
    );
}

#[tokio::test]
async fn file_accesses_collected_are_listed_and_summed_once() {
    let app = TestApp::with_modules(&[Function::Files]).await;
    let read = app.token("acme", &[Scope::ReadFiles]).await;
    let collect = app.token("acme", &[Scope::CollectFiles]).await;
    let now = Utc::now();
    let user = "collecte.fichiers";
    let folder = "\\\\PAR-SRV-0001\\Collecte\\2026";
    let access = |min: i64, action: &str, file: &str, extra: serde_json::Value| {
        let mut l = json!({"at": stamp(now - Duration::minutes(min)), "type": action, "user": user,
            "client_ip": "10.10.30.11", "server": "PAR-SRV-0001", "share": "Collecte",
            "path": format!("{folder}\\{file}")});
        if let (Some(l), Some(extra)) = (l.as_object_mut(), extra.as_object()) {
            l.extend(extra.clone());
        }
        l.to_string()
    };
    let lines = [
        access(
            10,
            "read",
            "a.xlsx",
            json!({"size_bytes": 1000, "machine": "PAR-LT-0004"}),
        ),
        access(9, "modify", "a.xlsx", json!({"size_bytes": 500})),
        access(
            8,
            "rename",
            "a.xlsx",
            json!({"new_path": format!("{folder}\\b.xlsx")}),
        ),
        access(7, "rename", "b.xlsx", json!({})),
        access(7, "read", "b.xlsx", json!({"client_ip": "PAR-LT-0004"})),
        access(7, "copy", "b.xlsx", json!({})),
        access(-60, "read", "b.xlsx", json!({})),
    ];
    // The summary over a fixed window, so that the hour the test runs in changes nothing.
    let window = format!(
        "/files/summary?from={}&to={}",
        stamp(now - Duration::hours(2)),
        stamp(now)
    );
    let summary = || async {
        let res = app.get(&window, &read).await;
        assert_eq!(res.status, StatusCode::OK, "{}", res.body);
        let s = &res.body["data"];
        let f = |v: &serde_json::Value| v.as_f64().unwrap_or(0.0);
        [
            f(&s["total"]["events"]),
            f(&s["by_action"]["read"]["bytes"]),
            f(&s["by_action"]["delete"]["events"]),
        ]
    };
    let before = summary().await;
    let res = post_lines(&app, "file-access", &collect, &lines).await;
    assert_taken(
        &res,
        3,
        &[
            (4, "invalid_observation"),
            (5, "invalid_observation"),
            (6, "invalid_observation"),
            (7, "time_out_of_range"),
        ],
    );
    // Sent again with one more line, in another batch: stored and counted once.
    let mut retry = lines[..3].to_vec();
    retry.push(access(6, "delete", "b.xlsx", json!({})));
    assert_taken(
        &post_lines(&app, "file-access", &collect, &retry).await,
        4,
        &[],
    );
    let events = walk(&app, &format!("/files/events?user={user}"), &read).await;
    let actions: Vec<&str> = events.iter().filter_map(|e| e["type"].as_str()).collect();
    assert_eq!(
        actions,
        ["delete", "rename", "modify", "read"],
        "{events:?}"
    );
    assert_eq!(events[3]["folder"], folder);
    assert_eq!(events[1]["new_path"], format!("{folder}\\b.xlsx"));
    let after = summary().await;
    let grown: Vec<f64> = after.iter().zip(before).map(|(a, b)| a - b).collect();
    assert_eq!(grown, [4.0, 1000.0, 1.0], "events, bytes read, deletions");
    // Another tenant sees none of it.
    let globex = app.token("globex", &[Scope::ReadFiles]).await;
    assert!(
        walk(&app, &format!("/files/events?user={user}"), &globex)
            .await
            .is_empty()
    );
}

#[tokio::test]
async fn dns_server_queries_collected_join_their_server_and_are_judged_once() {
    let app = TestApp::with_modules(&[Function::Dns]).await;
    let read = app.token("acme", &[Scope::ReadDns]).await;
    let collect = app.token("acme", &[Scope::CollectDns]).await;
    let now = Utc::now();
    let query = |min: i64, domain: &str, ip: &str| {
        json!({"at": stamp(now - Duration::minutes(min)), "server": "COLLECT-DNS-01", "client_ip": ip,
            "domain": domain, "query_type": "A", "response_code": "NOERROR"})
        .to_string()
    };
    let tunnel = format!("{}.collecte-test.example", "a1b2c3d4e5".repeat(5));
    let lines = [
        query(5, "Intranet.Collecte-Test.example.", "10.10.30.11"),
        query(4, &tunnel, "10.10.30.11"),
        query(3, "xkq7vz3mpw9tb2hr.collecte-test", "10.10.30.12"),
        query(3, "intranet.collecte-test.example", "10.10.30.999"),
        query(3, "bad name.collecte-test.example", "10.10.30.11"),
        query(-60, "intranet.collecte-test.example", "10.10.30.11"),
    ];
    let res = post_lines(&app, "dns-server-query", &collect, &lines).await;
    assert_taken(
        &res,
        3,
        &[
            (4, "invalid_observation"),
            (5, "invalid_observation"),
            (6, "time_out_of_range"),
        ],
    );
    let mut retry = lines[..3].to_vec();
    retry.push(String::new());
    assert_taken(
        &post_lines(&app, "dns-server-query", &collect, &retry).await,
        3,
        &[],
    );
    let res = app
        .get("/dns/server-queries?domain=collecte-test", &read)
        .await;
    assert_eq!(res.status, StatusCode::OK, "{}", res.body);
    assert_eq!(res.body["meta"]["server_collection"], "active");
    assert!(
        res.body["meta"]["servers"]
            .as_array()
            .expect("servers")
            .contains(&json!("COLLECT-DNS-01")),
        "{}",
        res.body["meta"]
    );
    let got: Vec<(String, serde_json::Value)> = res.body["data"]
        .as_array()
        .expect("data")
        .iter()
        .map(|q| {
            (
                q["domain"].as_str().unwrap_or_default().to_owned(),
                q["reason"].clone(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            ("xkq7vz3mpw9tb2hr.collecte-test".to_owned(), json!("dga")),
            (tunnel.clone(), json!("tunneling")),
            ("intranet.collecte-test.example".to_owned(), json!(null)),
        ]
    );
    let suspicious = app
        .get(
            "/dns/server-queries?domain=collecte-test&suspicious=1",
            &read,
        )
        .await;
    assert_eq!(suspicious.body["data"].as_array().map(Vec::len), Some(2));
    // Another tenant sees none of it.
    let globex = app.token("globex", &[Scope::ReadDns]).await;
    let theirs = app
        .get("/dns/server-queries?domain=collecte-test", &globex)
        .await;
    assert_eq!(theirs.body["data"], json!([]));
}

/// The DNS threats of a machine in a window, by domain: (category, queries, blocked,
/// first seen, acknowledged).
async fn dns_threats_of(
    app: &TestApp,
    read: &str,
    host: &str,
    window: &str,
) -> Vec<serde_json::Value> {
    let res = app.get(&format!("/dns/threats?{window}"), read).await;
    assert_eq!(res.status, StatusCode::OK, "{}", res.body);
    let mut mine: Vec<serde_json::Value> = res
        .items()
        .iter()
        .filter(|t| t["machine"] == host)
        .cloned()
        .collect();
    mine.sort_by_key(|t| t["domain"].as_str().unwrap_or_default().to_owned());
    mine
}

#[tokio::test]
async fn dns_threats_are_derived_from_collected_resolutions_once_by_machine_rule_and_day() {
    let app = TestApp::with_modules(&[Function::Dns]).await;
    let read = app.token("acme", &[Scope::ReadDns]).await;
    let collect = app.token("acme", &[Scope::CollectDns]).await;
    let fleet = app.token("acme", &[Scope::CollectFleet]).await;
    let host = "COLLECT-THR-01";
    let now = Utc::now();
    assert_taken(
        &post_lines(
            &app,
            "machine-heartbeat",
            &fleet,
            &[heartbeat(host, now, "4.2.0", "online")],
        )
        .await,
        1,
        &[],
    );
    // Yesterday (UTC), from 02:00: whole in one day whatever the hour the test runs.
    let day = DateTime::from_timestamp(now.timestamp() - now.timestamp().rem_euclid(86_400), 0)
        .expect("day")
        - Duration::days(1);
    let t0 = day + Duration::hours(2);
    let window = format!("from={}&to={}", stamp(day), stamp(day + Duration::days(1)));
    let line = |min: i64, domain: &str, code: &str, answers: &[&str]| {
        json!({"at": stamp(t0 + Duration::minutes(min)), "machine": host, "domain": domain,
            "query_type": "A", "response_code": code, "answers": answers,
            "resolver": "10.10.0.53", "latency_ms": 2.0})
        .to_string()
    };
    let tunnel = |i: i64| {
        line(
            i,
            &format!("{}{i:03}.t.collecte-tunnel.example", "ab12cd34".repeat(5)),
            "NOERROR",
            &["10.9.9.9"],
        )
    };
    let dga = |i: i64| {
        let name = ["xkq7vz3mpw9tb2hr", "qz8rw2lmx5tk7vnp", "hj4wq9zr2xmc7tkb"][(i % 3) as usize];
        line(100 + i, &format!("{name}.com"), "NXDOMAIN", &[])
    };
    // Below their thresholds: 9 tunnelled names, 4 generated ones; a listed domain, sinkholed,
    // opens one at its first resolution; ordinary names open none.
    let mut first: Vec<String> = (0..9).map(tunnel).collect();
    first.extend((0..4).map(dga));
    first.push(line(50, "a.dl.payload-store.ru", "NOERROR", &["0.0.0.0"]));
    first.push(line(51, "www.collecte-ordinaire.example", "NXDOMAIN", &[]));
    assert_taken(
        &post_lines(&app, "dns-resolution", &collect, &first).await,
        15,
        &[],
    );
    let threats = dns_threats_of(&app, &read, host, &window).await;
    assert_eq!(threats.len(), 1, "{threats:?}");
    let listed = &threats[0];
    assert_eq!(
        (
            &listed["domain"],
            &listed["category"],
            &listed["severity"],
            &listed["queries"],
            &listed["blocked"],
            &listed["source"],
            &listed["machine_ip"]
        ),
        (
            &json!("dl.payload-store.ru"),
            &json!("malware"),
            &json!("critical"),
            &json!(1),
            &json!(true),
            &json!("URLhaus"),
            &json!("10.10.99.7")
        )
    );
    // The same batch again changes nothing.
    assert_taken(
        &post_lines(&app, "dns-resolution", &collect, &first).await,
        15,
        &[],
    );
    assert_eq!(dns_threats_of(&app, &read, host, &window).await, threats);
    // The thresholds reached: a tunnel under its registered domain, a DGA named by the
    // generated name asked most.
    let second = vec![tunnel(9), dga(4)];
    assert_taken(
        &post_lines(&app, "dns-resolution", &collect, &second).await,
        2,
        &[],
    );
    let threats = dns_threats_of(&app, &read, host, &window).await;
    let summary = |threats: &[serde_json::Value]| {
        threats
            .iter()
            .map(|t| {
                (
                    t["domain"].as_str().unwrap_or_default().to_owned(),
                    t["category"].as_str().unwrap_or_default().to_owned(),
                    t["queries"].as_u64().unwrap_or_default(),
                    time(&t["first_seen_at"]),
                )
            })
            .collect::<Vec<_>>()
    };
    let at = |min: i64| t0 + Duration::minutes(min);
    assert_eq!(
        summary(&threats),
        [
            (
                "collecte-tunnel.example".into(),
                "tunneling".into(),
                10,
                at(0)
            ),
            ("dl.payload-store.ru".into(), "malware".into(), 1, at(50)),
            ("qz8rw2lmx5tk7vnp.com".into(), "dga".into(), 5, at(100)),
        ]
    );
    assert_eq!(threats[2]["severity"], "high");
    assert_eq!(threats[0]["blocked"], false);
    // Sent again, nothing changes; a late resolution re-evaluates its day: the same threat,
    // one query more, first seen earlier. An acknowledgement stays.
    assert_taken(
        &post_lines(&app, "dns-resolution", &collect, &second).await,
        2,
        &[],
    );
    assert_eq!(dns_threats_of(&app, &read, host, &window).await, threats);
    let mut acked = threats[0].clone();
    acked["acknowledged"] = json!(true);
    acked["acknowledged_at"] = json!(stamp(t0 + Duration::minutes(30)));
    let stored = app
        .stores
        .series
        .read_all(
            "acme",
            "dns_threats",
            Some("all"),
            0,
            i64::MAX,
            &netops_shared::store::Filter::all(),
        )
        .await
        .expect("threats");
    let record = stored
        .items
        .into_iter()
        .find(|r| r.id == threats[0]["id"])
        .expect("stored");
    app.stores
        .series_writes
        .append(
            "acme",
            "dns_threats",
            vec![netops_shared::store::Record {
                body: acked,
                ..record
            }],
        )
        .await
        .expect("acknowledged");
    assert_taken(
        &post_lines(&app, "dns-resolution", &collect, &[tunnel(-30)]).await,
        1,
        &[],
    );
    let after = dns_threats_of(&app, &read, host, &window).await;
    assert_eq!(after.len(), 3, "{after:?}");
    assert_eq!(after[0]["id"], threats[0]["id"]);
    assert_eq!(
        summary(&after)[0],
        (
            "collecte-tunnel.example".into(),
            "tunneling".into(),
            11,
            at(-30)
        )
    );
    assert_eq!(after[0]["acknowledged"], true, "{}", after[0]);
    // Another tenant sees none of it.
    let globex = app.token("globex", &[Scope::ReadDns]).await;
    let theirs = dns_threats_of(&app, &globex, host, &window).await;
    assert!(theirs.is_empty(), "{theirs:?}");
}

#[tokio::test]
async fn job_pings_collected_set_their_heartbeat_once_the_latest_wins() {
    let app = TestApp::with_modules(&[Function::Operations]).await;
    let read = app.token("acme", &[Scope::ReadMonitors]).await;
    let collect = app.token("acme", &[Scope::CollectOperations]).await;
    let heartbeats = || async {
        let res = app.get("/heartbeats", &read).await;
        assert_eq!(res.status, StatusCode::OK, "{}", res.body);
        res.body["data"].as_array().expect("data").clone()
    };
    let before = heartbeats().await;
    let id = before[0]["id"].as_i64().expect("id");
    let now = Utc::now();
    let ping = |at: DateTime<Utc>, id: i64, extra: serde_json::Value| {
        let mut l = json!({"at": stamp(at), "heartbeat": id});
        if let (Some(l), Some(extra)) = (l.as_object_mut(), extra.as_object()) {
            l.extend(extra.clone());
        }
        l.to_string()
    };
    let lines = [
        ping(
            now - Duration::seconds(90),
            id,
            json!({"exit_code": 0, "duration_s": 10}),
        ),
        ping(
            now - Duration::seconds(30),
            id,
            json!({"exit_code": 3, "duration_s": 42}),
        ),
        ping(now - Duration::seconds(30), 999_999_999, json!({})),
        ping(now - Duration::seconds(30), id, json!({"duration_s": -1})),
        ping(now + Duration::hours(1), id, json!({})),
    ];
    let res = post_lines(&app, "job-ping", &collect, &lines).await;
    assert_taken(
        &res,
        2,
        &[
            (3, "unknown_reference"),
            (4, "invalid_observation"),
            (5, "time_out_of_range"),
        ],
    );
    let find =
        |all: Vec<serde_json::Value>| all.into_iter().find(|h| h["id"] == id).expect("heartbeat");
    let h = find(heartbeats().await);
    assert_eq!(
        (
            h["state"].as_str(),
            h["exit_code"].as_i64(),
            h["last_duration_s"].as_i64()
        ),
        (Some("failed"), Some(3), Some(42)),
        "{h}"
    );
    let signal = |h: &serde_json::Value| {
        h["last_signal_at"]
            .as_str()
            .and_then(|t| t.parse::<DateTime<Utc>>().ok())
    };
    let expected = stamp(now - Duration::seconds(30))
        .parse::<DateTime<Utc>>()
        .ok();
    assert_eq!(signal(&h), expected);
    // An older ping, sent late, changes nothing; a newer success sets it back to ok.
    let late = post_lines(
        &app,
        "job-ping",
        &collect,
        &[ping(now - Duration::seconds(60), id, json!({}))],
    )
    .await;
    assert_taken(&late, 1, &[]);
    assert_eq!(find(heartbeats().await)["exit_code"], 3);
    let ok = post_lines(
        &app,
        "job-ping",
        &collect,
        &[ping(now, id, json!({"duration_s": 12}))],
    )
    .await;
    assert_taken(&ok, 1, &[]);
    let h = find(heartbeats().await);
    assert_eq!(
        (h["state"].as_str(), h["exit_code"].as_i64()),
        (Some("ok"), Some(0)),
        "{h}"
    );
    assert!(signal(&h) > expected);
}

/// The data of `path`, asserting a 200.
async fn data_of(app: &TestApp, path: &str, read: &str) -> serde_json::Value {
    let res = app.get(path, read).await;
    assert_eq!(res.status, StatusCode::OK, "{path}: {}", res.body);
    res.body["data"].clone()
}

/// The alerts of `/databases/alerts` (`query`) of instance `id` and `kind`: (id, status,
/// opened, resolved).
async fn db_alerts_of(
    app: &TestApp,
    read: &str,
    query: &str,
    id: i64,
    kind: &str,
) -> Vec<(String, String, DateTime<Utc>, serde_json::Value)> {
    let data = data_of(app, &format!("/databases/alerts?{query}"), read).await;
    data.as_array()
        .expect("alerts")
        .iter()
        .filter(|a| a["instance_id"] == id && a["kind"] == kind)
        .map(|a| {
            (
                a["id"].as_str().unwrap_or_default().to_owned(),
                a["status"].as_str().unwrap_or_default().to_owned(),
                time(&a["opened_at"]),
                a["resolved_at"].clone(),
            )
        })
        .collect()
}

/// The state of instance `id` in `/databases/instances`.
async fn db_state(app: &TestApp, read: &str, id: i64) -> serde_json::Value {
    let instances = data_of(app, "/databases/instances", read).await;
    instances
        .as_array()
        .expect("instances")
        .iter()
        .find(|i| i["id"] == id)
        .map(|i| i["state"].clone())
        .expect("instance")
}

#[tokio::test]
async fn database_alerts_and_states_are_derived_from_collected_samples_and_checks() {
    let app = TestApp::with_modules(&[Function::Databases]).await;
    let read = app.token("acme", &[Scope::ReadDatabases]).await;
    let collect = app.token("acme", &[Scope::CollectDatabases]).await;
    let instances = data_of(&app, "/databases/instances", &read).await;
    let online = instances
        .as_array()
        .expect("instances")
        .iter()
        .find(|i| i["state"] == "online")
        .expect("an online instance");
    let id = online["id"].as_i64().expect("id");
    // After the demo's latest sample and result (20 seconds before its seed at the latest),
    // two seconds apart, all past (whole seconds, as sent).
    let now = time(&json!(stamp(Utc::now())));
    let t = |i: i64| now - Duration::seconds(18 - 2 * i);
    let sample = |i: i64, cpu: f64| {
        json!({"at": stamp(t(i)), "instance": id, "cpu_pct": cpu,
            "memory_pct": 50.0, "connections": 10.0, "read_latency_ms": 2.0, "write_latency_ms": 1.0,
            "batch_requests_per_s": 30.0,
            "waits": {"cpu": 1.0, "io": 2.0, "lock": 0.0, "network": 3.0, "other": 4.0}})
        .to_string()
    };
    // Two samples at the bound or above: nothing yet, the same batch again neither.
    let two = [sample(0, 95.0), sample(1, 90.0)];
    for _ in 0..2 {
        assert_taken(
            &post_lines(&app, "database-metrics", &collect, &two).await,
            2,
            &[],
        );
        assert!(
            db_alerts_of(&app, &read, "status=all", id, "cpu_high")
                .await
                .is_empty()
        );
        assert_eq!(db_state(&app, &read, id).await, "online");
    }
    // The third opens one, from the first; sent again, nothing more.
    for _ in 0..2 {
        assert_taken(
            &post_lines(&app, "database-metrics", &collect, &[sample(2, 99.0)]).await,
            1,
            &[],
        );
        let open = db_alerts_of(&app, &read, "status=open", id, "cpu_high").await;
        assert_eq!(open.len(), 1, "{open:?}");
        assert_eq!((open[0].1.as_str(), open[0].2), ("open", t(0)));
        assert_eq!(
            db_alerts_of(&app, &read, "status=all", id, "cpu_high").await,
            open
        );
        assert_eq!(db_state(&app, &read, id).await, "degraded");
    }
    let opened = db_alerts_of(&app, &read, "status=open", id, "cpu_high").await;
    // A sample below resolves it; an older one sent late changes nothing.
    let below = [sample(4, 40.0), sample(3, 97.0)];
    assert_taken(
        &post_lines(&app, "database-metrics", &collect, &below).await,
        2,
        &[],
    );
    assert_taken(
        &post_lines(&app, "database-metrics", &collect, &[sample(3, 97.0)]).await,
        1,
        &[],
    );
    assert!(
        db_alerts_of(&app, &read, "status=open", id, "cpu_high")
            .await
            .is_empty()
    );
    let all = db_alerts_of(&app, &read, "status=all", id, "cpu_high").await;
    assert_eq!(all.len(), 1, "{all:?}");
    assert_eq!((&all[0].0, all[0].1.as_str()), (&opened[0].0, "resolved"));
    assert_eq!(time(&all[0].3), t(4));
    assert_eq!(db_state(&app, &read, id).await, "online");

    // A check's failed run opens its alert on the instance, once; a good one resolves it.
    let checks = data_of(&app, "/databases/checks", &read).await;
    let check = checks
        .as_array()
        .expect("checks")
        .iter()
        .find(|c| c["instance_id"] == id)
        .expect("a check of the instance");
    let expectation = check["expectation"].as_str().expect("expectation");
    let (op, bound) = expectation.split_at(
        expectation
            .find(|c: char| c == '-' || c.is_ascii_digit())
            .expect("bound"),
    );
    let bound: f64 = bound.trim().parse().expect("bound");
    let good = match op.trim() {
        "<" | "<=" => bound - 1000.0,
        ">" | ">=" => bound + 1000.0,
        "!=" => bound + 1.0,
        _ => bound,
    };
    let result = |i: i64, outcome: serde_json::Value| {
        let mut line = json!({"at": stamp(t(i)), "check": check["id"], "duration_ms": 12});
        line.as_object_mut()
            .expect("line")
            .extend(outcome.as_object().expect("outcome").clone());
        line.to_string()
    };
    let failed = [result(5, json!({"error": "délai dépassé"}))];
    for _ in 0..2 {
        assert_taken(
            &post_lines(&app, "database-check", &collect, &failed).await,
            1,
            &[],
        );
        let open = db_alerts_of(&app, &read, "status=open", id, "check_failed").await;
        let ours: Vec<_> = open.iter().filter(|a| a.2 == t(5)).collect();
        assert_eq!(ours.len(), 1, "{open:?}");
    }
    assert_taken(
        &post_lines(
            &app,
            "database-check",
            &collect,
            &[result(6, json!({"value": good}))],
        )
        .await,
        1,
        &[],
    );
    let open = db_alerts_of(&app, &read, "status=open", id, "check_failed").await;
    assert!(open.iter().all(|a| a.2 != t(5)), "{open:?}");
    let all = db_alerts_of(&app, &read, "status=all", id, "check_failed").await;
    let ours: Vec<_> = all.iter().filter(|a| a.2 == t(5)).collect();
    assert_eq!(ours.len(), 1, "{all:?}");
    assert_eq!((ours[0].1.as_str(), time(&ours[0].3)), ("resolved", t(6)));
    // Another tenant sees none of it.
    let globex = app.token("globex", &[Scope::ReadDatabases]).await;
    let theirs = data_of(&app, "/databases/alerts?status=all", &globex).await;
    assert!(
        theirs
            .as_array()
            .expect("alerts")
            .iter()
            .all(|a| a["instance_id"] != id),
        "{theirs}"
    );
}

#[tokio::test]
async fn database_observations_collected_feed_their_routes_once() {
    let app = TestApp::with_modules(&[Function::Databases]).await;
    let read = app.token("acme", &[Scope::ReadDatabases]).await;
    let collect = app.token("acme", &[Scope::CollectDatabases]).await;
    let instances = data_of(&app, "/databases/instances", &read).await;
    // An offline instance: its samples stopped at least 90 minutes ago, so the last hour
    // holds only what is collected here.
    let offline = instances
        .as_array()
        .expect("instances")
        .iter()
        .find(|i| i["state"] == "offline")
        .expect("an offline instance");
    let id = offline["id"].as_i64().expect("id");
    let now = Utc::now();
    let ms = (now - Duration::minutes(5)).timestamp_millis();
    let hour = DateTime::from_timestamp_millis(ms - ms.rem_euclid(3_600_000)).expect("hour");
    let sample = |secs: i64, instance: i64, cpu: f64| {
        json!({"at": stamp(hour + Duration::seconds(secs)), "instance": instance, "cpu_pct": cpu,
            "memory_pct": 50.0, "connections": 10.0, "read_latency_ms": 2.0, "write_latency_ms": 1.0,
            "batch_requests_per_s": 30.0,
            "waits": {"cpu": 1.0, "io": 2.0, "lock": 0.0, "network": 3.0, "other": 4.0}})
        .to_string()
    };
    let lines = [
        sample(1, id, 10.0),
        sample(2, id, 30.0),
        sample(3, 999_999_999, 10.0),
        sample(4, id, 120.0),
        json!({"at": stamp(now + Duration::hours(1)), "instance": id}).to_string(),
        sample(3, id, 10.0).replace(
            &stamp(hour + Duration::seconds(3)),
            &stamp(now + Duration::hours(1)),
        ),
    ];
    assert_taken(
        &post_lines(&app, "database-metrics", &collect, &lines).await,
        2,
        &[
            (3, "unknown_reference"),
            (4, "invalid_observation"),
            (5, "invalid_observation"),
            (6, "time_out_of_range"),
        ],
    );
    // Sent again with a new sample: the first one is counted once in the hourly rollups.
    let retry = [sample(1, id, 10.0), sample(3, id, 80.0)];
    assert_taken(
        &post_lines(&app, "database-metrics", &collect, &retry).await,
        2,
        &[],
    );
    let raw = data_of(
        &app,
        &format!(
            "/databases/instances/{id}/metrics?from={}&to={}",
            stamp(hour),
            stamp(now)
        ),
        &read,
    )
    .await;
    assert_eq!(raw.as_array().map(Vec::len), Some(1), "{raw}");
    assert_eq!(raw[0]["cpu_pct"], 40.0);
    assert_eq!(raw[0]["waits"]["other"], 4.0);
    let hourly = data_of(
        &app,
        &format!(
            "/databases/instances/{id}/metrics?from={}&to={}",
            stamp(now - Duration::days(3)),
            stamp(now)
        ),
        &read,
    )
    .await;
    let point = hourly
        .as_array()
        .expect("points")
        .iter()
        .find(|p| time(&p["ts"]) == hour)
        .expect("the hour's point");
    assert_eq!(point["cpu_pct"], 40.0, "{point}");
    let instances = data_of(&app, "/databases/instances", &read).await;
    let collected = instances
        .as_array()
        .expect("instances")
        .iter()
        .find(|i| i["id"] == id)
        .expect("instance");
    assert_eq!(
        time(&collected["last_collected_at"]),
        hour + Duration::seconds(3)
    );

    // Sessions: observed again, a session replaces its previous observation.
    let session = |last: i64, status: &str| {
        json!({"instance": id, "session_id": 77, "login": "ACME\\collecte.test", "host": "PAR-LT-0004",
            "program": "DBeaver 24.2.5", "database": "ERP_PROD", "status": status,
            "login_at": stamp(now - Duration::minutes(10)), "last_request_at": stamp(now - Duration::minutes(last)),
            "cpu_ms": 120, "logical_reads": 5000, "open_transactions": 0})
        .to_string()
    };
    assert_taken(
        &post_lines(
            &app,
            "database-session",
            &collect,
            &[session(9, "sleeping"), session(11, "running")],
        )
        .await,
        1,
        &[(2, "invalid_observation")],
    );
    assert_taken(
        &post_lines(&app, "database-session", &collect, &[session(2, "running")]).await,
        1,
        &[],
    );
    let sessions = data_of(
        &app,
        &format!("/databases/instances/{id}/sessions?login=collecte.test"),
        &read,
    )
    .await;
    assert_eq!(sessions.as_array().map(Vec::len), Some(1), "{sessions}");
    assert_eq!(sessions[0]["status"], "running");

    // Slow queries: stored once, listed without their plan.
    let slow = json!({"at": stamp(now - Duration::minutes(3)), "instance": id, "database": "COLLECTE",
        "login": "app_erp", "client_host": "PAR-SRV-0002", "program": "ERP Service", "duration_ms": 987_654,
        "cpu_ms": 5000, "logical_reads": 1, "physical_reads": 2, "writes": 3, "row_count": 4,
        "query_hash": "0xC011EC7E", "statement": "SELECT 1", "plan_xml": "<ShowPlanXML/>"})
    .to_string();
    let blank_statement = slow.replace("SELECT 1", " ");
    assert_taken(
        &post_lines(
            &app,
            "database-slow-query",
            &collect,
            &[slow.clone(), blank_statement],
        )
        .await,
        1,
        &[(2, "invalid_observation")],
    );
    assert_taken(
        &post_lines(
            &app,
            "database-slow-query",
            &collect,
            &[slow.clone(), String::new()],
        )
        .await,
        1,
        &[],
    );
    let listed = data_of(
        &app,
        &format!("/databases/instances/{id}/slow-queries?min_ms=987654"),
        &read,
    )
    .await;
    assert_eq!(listed.as_array().map(Vec::len), Some(1), "{listed}");
    assert_eq!(listed[0]["database"], "COLLECTE");
    assert!(listed[0].get("plan_xml").is_none());

    // Query statistics: summed by query over the window, each snapshot once.
    let stats = |min: i64, executions: u64, cpu: f64| {
        json!({"at": stamp(now - Duration::minutes(min)), "instance": id, "query_hash": "0xC011EC7E",
            "database": "COLLECTE", "statement": "SELECT 1", "executions": executions, "cpu_ms": cpu,
            "duration_ms": cpu * 2.0, "logical_reads": 10.0})
        .to_string()
    };
    assert_taken(
        &post_lines(
            &app,
            "database-query-stats",
            &collect,
            &[stats(20, 10, 100.0), stats(10, 5, -1.0)],
        )
        .await,
        1,
        &[(2, "invalid_observation")],
    );
    assert_taken(
        &post_lines(
            &app,
            "database-query-stats",
            &collect,
            &[stats(20, 10, 100.0), stats(10, 5, 50.0)],
        )
        .await,
        2,
        &[],
    );
    let top = data_of(
        &app,
        &format!("/databases/instances/{id}/top-queries?limit=200"),
        &read,
    )
    .await;
    let q = top
        .as_array()
        .expect("top")
        .iter()
        .find(|q| q["query_hash"] == "0xC011EC7E")
        .expect("the collected query");
    assert_eq!(
        (&q["executions"], &q["total_cpu_ms"], &q["avg_cpu_ms"]),
        (&json!(15), &json!(150.0), &json!(10.0)),
        "{q}"
    );

    // Blocking chains: observed again (longer, then resolved), a chain replaces itself.
    let chain = |duration: u64, resolved: bool, blocked_by: u32| {
        let mut c = json!({"instance": id, "detected_at": stamp(now - Duration::minutes(15)),
            "duration_ms": duration, "database": "COLLECTE",
            "head": {"session_id": 61, "login": "ACME\\collecte.test", "host": "PAR-LT-0004",
                "program": "SSMS", "status": "sleeping", "statement": "BEGIN TRAN; UPDATE t SET a = 1"},
            "blocked": [{"session_id": 62, "blocked_by": blocked_by, "login": "app_erp",
                "wait_type": "LCK_M_U", "wait_ms": duration, "statement": "UPDATE t SET a = 2"}]});
        if resolved {
            c["resolved_at"] = json!(stamp(now - Duration::minutes(14)));
        }
        c.to_string()
    };
    assert_taken(
        &post_lines(
            &app,
            "database-blocking",
            &collect,
            &[chain(5000, false, 61), chain(5000, false, 99)],
        )
        .await,
        1,
        &[(2, "invalid_observation")],
    );
    assert_taken(
        &post_lines(
            &app,
            "database-blocking",
            &collect,
            &[chain(9000, true, 61)],
        )
        .await,
        1,
        &[],
    );
    let chains = data_of(&app, &format!("/databases/instances/{id}/blocking"), &read).await;
    let ours: Vec<&serde_json::Value> = chains
        .as_array()
        .expect("chains")
        .iter()
        .filter(|c| c["database"] == "COLLECTE")
        .collect();
    assert_eq!(ours.len(), 1, "{chains}");
    assert_eq!(ours[0]["duration_ms"], 9000);
    assert!(ours[0]["resolved_at"].is_string());

    // Check results: judged by the check's expectation, the latest one the check's last. They
    // are dated a minute ahead (admitted up to 5 minutes), after every seeded result.
    let checks = data_of(&app, "/databases/checks", &read).await;
    let check = checks
        .as_array()
        .expect("checks")
        .iter()
        .find(|c| c["expectation"] == "= 0")
        .expect("a check expecting 0");
    let check_id = check["id"].as_i64().expect("id");
    let result = |secs: i64, check: i64, outcome: serde_json::Value| {
        let mut r =
            json!({"at": stamp(now - Duration::seconds(secs)), "check": check, "duration_ms": 40});
        if let (Some(r), Some(o)) = (r.as_object_mut(), outcome.as_object()) {
            r.extend(o.clone());
        }
        r.to_string()
    };
    let results = [
        result(-50, check_id, json!({"value": 14.0})),
        result(-60, check_id, json!({"error": "délai dépassé"})),
        result(-60, 999_999_999, json!({"value": 0.0})),
        result(-60, check_id, json!({"value": 0.0, "error": "x"})),
        result(-60, check_id, json!({})),
    ];
    assert_taken(
        &post_lines(&app, "database-check", &collect, &results).await,
        2,
        &[
            (3, "unknown_reference"),
            (4, "invalid_observation"),
            (5, "invalid_observation"),
        ],
    );
    assert_taken(
        &post_lines(&app, "database-check", &collect, &results[..1]).await,
        1,
        &[],
    );
    let checks = data_of(&app, "/databases/checks", &read).await;
    let last = &checks
        .as_array()
        .expect("checks")
        .iter()
        .find(|c| c["id"] == check_id)
        .expect("check")["last_result"];
    assert_eq!(last["status"], "error", "{last}");
    assert_eq!(last["message"], "Exécution impossible : délai dépassé");
    let runs = data_of(
        &app,
        &format!(
            "/databases/checks/{check_id}/results?from={}&to={}",
            stamp(now),
            stamp(now + Duration::minutes(5))
        ),
        &read,
    )
    .await;
    let statuses: Vec<&str> = runs
        .as_array()
        .expect("runs")
        .iter()
        .filter_map(|r| r["status"].as_str())
        .collect();
    assert_eq!(statuses, ["error", "failed"], "{runs}");

    // Another tenant sees none of it; a credential without the scope cannot send it.
    let other = app.token("acme", &[Scope::CollectFleet]).await;
    let res = post_lines(&app, "database-metrics", &other, &lines[..1]).await;
    assert_eq!(res.status, StatusCode::FORBIDDEN);
    let globex = app.token("globex", &[Scope::CollectDatabases]).await;
    let res = post_lines(&app, "database-metrics", &globex, &lines[..1]).await;
    assert_eq!(res.status, StatusCode::BAD_REQUEST, "{}", res.body);
}

#[tokio::test]
async fn ports_collected_are_created_then_follow_their_latest_scan() {
    let app = TestApp::with_modules(&[Function::Network]).await;
    let read = app.token("acme", &[Scope::ReadNetwork]).await;
    let collect = app.token("acme", &[Scope::CollectNetwork]).await;
    let now = Utc::now();
    let port = |min: i64, port: u16, state: &str, extra: serde_json::Value| {
        let mut l = json!({"at": stamp(now - Duration::minutes(min)), "ip": "192.0.2.77",
            "port": port, "protocol": "tcp", "state": state});
        if let (Some(l), Some(extra)) = (l.as_object_mut(), extra.as_object()) {
            l.extend(extra.clone());
        }
        l.to_string()
    };
    let lines = [
        port(
            30,
            8443,
            "open",
            json!({"host": "COLLECT-SRV", "service": "https-alt"}),
        ),
        port(10, 8443, "filtered", json!({})),
        port(20, 22, "closed", json!({})),
        port(5, 22, "open", json!({"ip": "192.0.2.999"})),
        port(5, 22, "open", json!({"protocol": "sctp"})),
        port(5, 0, "open", json!({})),
        port(-60, 22, "open", json!({})),
        port(5, 22, "ajar", json!({})),
    ];
    assert_taken(
        &post_lines(&app, "network-port", &collect, &lines).await,
        3,
        &[
            (4, "invalid_observation"),
            (5, "invalid_observation"),
            (6, "invalid_observation"),
            (7, "time_out_of_range"),
            (8, "invalid_observation"),
        ],
    );
    // Sent late: an older scan only moves the first sighting back; sent again, nothing.
    let late = [port(50, 8443, "closed", json!({}))];
    assert_taken(
        &post_lines(&app, "network-port", &collect, &late).await,
        1,
        &[],
    );
    assert_taken(
        &post_lines(&app, "network-port", &collect, &lines[..1]).await,
        1,
        &[],
    );
    let ports = data_of(&app, "/network/ports?ip=192.0.2.77", &read).await;
    let ports = ports.as_array().expect("ports");
    assert_eq!(ports.len(), 2, "{ports:?}");
    let https = ports.iter().find(|p| p["port"] == 8443).expect("8443");
    assert_eq!(
        (&https["state"], &https["host"], &https["service"]),
        (
            &json!("filtered"),
            &json!("COLLECT-SRV"),
            &json!("https-alt")
        ),
        "{https}"
    );
    assert_eq!(
        time(&https["first_seen_at"]),
        time(&json!(stamp(now - Duration::minutes(50))))
    );
    assert_eq!(
        time(&https["last_seen_at"]),
        time(&json!(stamp(now - Duration::minutes(10))))
    );
    let globex = app.token("globex", &[Scope::ReadNetwork]).await;
    assert!(
        data_of(&app, "/network/ports?ip=192.0.2.77", &globex)
            .await
            .as_array()
            .is_some_and(Vec::is_empty)
    );
}

#[tokio::test]
async fn netops_collect_sends_siem_events_whose_incident_the_real_server_opens_once() {
    use crate::serve::get_json;
    use crate::serve::served::{Serve, create_token};

    let served = Serve::seeded().env("NETOPS_NO_LIVE", "1").start();
    let token = create_token(
        &served.db,
        &["--name", "siem", "--scopes", "collect:security"],
    );
    let now = Utc::now();
    let victim = "cli.collecte";
    let text: String = (0..10)
        .map(|i| failure(now, 200 - i * 10, victim, "203.0.113.78") + "\n")
        .collect();
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("siem.ndjson");
    std::fs::write(&file, text).expect("file");
    // The import twice (a cron job run again): one incident of the ten events.
    for _ in 0..2 {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_netops"))
            .args(["collect", "--kind", "siem-event", "--url", &served.base])
            .arg(&file)
            .env("NETOPS_TOKEN", &token)
            .output()
            .expect("netops collect");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{stderr}");
        assert!(stderr.contains("10 lines accepted, 0 refused"), "{stderr}");
    }
    let (status, listed) = get_json(&served, "/security/incidents?status=open&limit=500").await;
    assert_eq!(status, 200, "{listed}");
    let mine: Vec<&serde_json::Value> = listed["data"]
        .as_array()
        .expect("data")
        .iter()
        .filter(|i| i["rule_id"] == "gl-001" && i["accounts"] == json!([victim]))
        .collect();
    assert_eq!(mine.len(), 1, "{listed}");
    assert_eq!(mine[0]["event_count"], 10);
    let id = mine[0]["id"].as_str().expect("id");
    let (status, detail) = get_json(&served, &format!("/security/incidents/{id}")).await;
    assert_eq!(status, 200, "{detail}");
    assert_eq!(detail["data"]["events"].as_array().map(Vec::len), Some(10));
    let (_, feed) = get_json(&served, "/alerts?kind=siem&status=open&limit=500").await;
    let alert = feed["data"]
        .as_array()
        .expect("data")
        .iter()
        .find(|a| a["id"] == format!("siem-{id}"))
        .cloned()
        .unwrap_or_default();
    assert_eq!(
        (alert["severity"].as_str(), alert["status"].as_str()),
        (Some("high"), Some("open")),
        "{feed}"
    );
}

#[tokio::test]
async fn device_metrics_collected_make_the_hours_of_their_device() {
    let app = TestApp::with_modules(&[Function::Network]).await;
    let read = app.token("acme", &[Scope::ReadNetwork]).await;
    let collect = app.token("acme", &[Scope::CollectNetwork]).await;
    let devices = data_of(&app, "/network/devices?type=router", &read).await;
    let id = devices[0]["id"].as_i64().expect("a router");
    // The hour of two minutes ago, whatever the time: its samples are all in the past.
    let now = Utc::now();
    let ms = (now - Duration::minutes(2)).timestamp_millis();
    let hour = DateTime::from_timestamp_millis(ms - ms.rem_euclid(3_600_000)).expect("hour");
    let sample = |secs: i64, device: i64, cpu: f64, errors: f64| {
        json!({"at": stamp(hour + Duration::seconds(secs)), "device": device, "cpu_pct": cpu,
            "memory_pct": 50.0, "in_bps": 1000.0, "out_bps": 400.0, "latency_ms": 2.0,
            "errors": errors})
        .to_string()
    };
    let lines = [
        sample(0, id, 10.0, 2.0),
        sample(1, id, 21.0, 3.0),
        sample(1, 999_999, 21.0, 3.0),
        sample(2, id, 150.0, 0.0),
        json!({"at": stamp(now + Duration::hours(1)), "device": id, "cpu_pct": 1.0,
            "memory_pct": 1.0, "in_bps": 1.0, "out_bps": 1.0, "latency_ms": 1.0, "errors": 0.0})
        .to_string(),
    ];
    assert_taken(
        &post_lines(&app, "network-device-metrics", &collect, &lines).await,
        2,
        &[
            (3, "unknown_reference"),
            (4, "invalid_observation"),
            (5, "time_out_of_range"),
        ],
    );
    let point = async || {
        let metrics = data_of(&app, &format!("/network/devices/{id}/metrics"), &read).await;
        metrics["points"]
            .as_array()
            .expect("points")
            .iter()
            .find(|p| {
                // The points are aligned on the window's start: the hour's is the one it
                // starts in.
                let at = time(&p["at"]);
                at <= hour && hour < at + Duration::hours(1)
            })
            .cloned()
            .expect("the hour's point")
    };
    let p = point().await;
    assert_eq!(
        (&p["cpu_pct"], &p["errors"]),
        (&json!(15.5), &json!(5.0)),
        "{p}"
    );
    // A late sample of the hour derives it again; sent again, nothing changes.
    let late = [sample(2, id, 30.0, 1.0)];
    for _ in 0..2 {
        assert_taken(
            &post_lines(&app, "network-device-metrics", &collect, &late).await,
            1,
            &[],
        );
        assert_taken(
            &post_lines(&app, "network-device-metrics", &collect, &lines[..2]).await,
            2,
            &[],
        );
        let p = point().await;
        assert_eq!(
            (&p["cpu_pct"], &p["errors"]),
            (&json!(20.3), &json!(6.0)),
            "{p}"
        );
    }
    // Another tenant's collector does not know the device.
    let globex = app.token("globex", &[Scope::CollectNetwork]).await;
    let res = post_lines(&app, "network-device-metrics", &globex, &lines[..1]).await;
    assert_eq!(res.status, StatusCode::BAD_REQUEST, "{}", res.body);
}

#[tokio::test]
async fn device_states_collected_derive_their_device_and_site_state() {
    let app = TestApp::with_modules(&[Function::Network]).await;
    let read = app.token("acme", &[Scope::ReadNetwork]).await;
    let collect = app.token("acme", &[Scope::CollectNetwork]).await;
    let firewall =
        data_of(&app, "/network/devices?type=firewall&status=up", &read).await[0].clone();
    let id = firewall["id"].as_i64().expect("a firewall that is up");
    let site = firewall["site_id"].as_i64().expect("site");
    let seen =
        data_of(&app, &format!("/network/devices/{id}"), &read).await["last_seen_at"].clone();
    let now = Utc::now();
    let state = |min: i64, device: i64, extra: serde_json::Value| {
        let mut l = json!({"at": stamp(now - Duration::minutes(min)), "device": device,
            "reachable": true});
        if let (Some(l), Some(extra)) = (l.as_object_mut(), extra.as_object()) {
            l.extend(extra.clone());
        }
        l.to_string()
    };
    let lines = [
        state(
            30,
            id,
            json!({"uptime_seconds": 100, "firmware": "7.6.0",
                "wan_links": [{"name": "wan1", "status": "down"}],
                "interfaces": [{"name": "port2", "status": "up", "in_bps": 5, "out_bps": 6,
                    "errors_24h": 7}]}),
        ),
        state(30, 999_999, json!({})),
        state(
            30,
            id,
            json!({"interfaces": [{"name": "nope", "status": "up", "in_bps": 0,
                "out_bps": 0, "errors_24h": 0}]}),
        ),
        state(30, id, json!({"reachable": false, "uptime_seconds": 5})),
        state(
            30,
            id,
            json!({"wan_links": [{"name": "wan1", "status": "up", "loss_pct": 120.0}]}),
        ),
    ];
    assert_taken(
        &post_lines(&app, "network-device-state", &collect, &lines).await,
        1,
        &[
            (2, "unknown_reference"),
            (3, "unknown_reference"),
            (4, "invalid_observation"),
            (5, "invalid_observation"),
        ],
    );
    let device = data_of(&app, &format!("/network/devices/{id}"), &read).await;
    assert_eq!(
        (
            &device["status"],
            &device["uptime_seconds"],
            &device["firmware"]
        ),
        (&json!("degraded"), &json!(100), &json!("7.6.0")),
        "{device}"
    );
    assert_eq!(device["wan_links"][0]["status"], "down");
    let port2 = device["interfaces"]
        .as_array()
        .expect("interfaces")
        .iter()
        .find(|i| i["name"] == "port2")
        .expect("port2");
    assert_eq!(
        (&port2["in_bps"], &port2["errors_24h"]),
        (&json!(5), &json!(7))
    );
    let site_status = async || {
        data_of(&app, "/network/sites", &read)
            .await
            .as_array()
            .expect("sites")
            .iter()
            .find(|s| s["id"] == site)
            .expect("the site")["status"]
            .clone()
    };
    assert_eq!(site_status().await, "degraded");
    // Unreachable later: down, no uptime, its interfaces down; a state older than that,
    // sent late, changes nothing.
    let down = [state(10, id, json!({"reachable": false}))];
    assert_taken(
        &post_lines(&app, "network-device-state", &collect, &down).await,
        1,
        &[],
    );
    let late = [state(
        20,
        id,
        json!({"wan_links": [{"name": "wan1", "status": "up"}]}),
    )];
    assert_taken(
        &post_lines(&app, "network-device-state", &collect, &late).await,
        1,
        &[],
    );
    let device = data_of(&app, &format!("/network/devices/{id}"), &read).await;
    assert_eq!(
        (&device["status"], &device["uptime_seconds"]),
        (&json!("down"), &json!(0))
    );
    assert!(
        device["interfaces"]
            .as_array()
            .expect("interfaces")
            .iter()
            .all(|i| i["status"] == "down" && i["in_bps"] == 0)
    );
    assert_eq!(device["last_seen_at"], seen);
    // Back up with its link: up, and the site as its devices say.
    let up = [state(
        1,
        id,
        json!({"wan_links": [{"name": "wan1", "status": "up"}]}),
    )];
    assert_taken(
        &post_lines(&app, "network-device-state", &collect, &up).await,
        1,
        &[],
    );
    let device = data_of(&app, &format!("/network/devices/{id}"), &read).await;
    assert_eq!(device["status"], "up", "{device}");
    assert!(time(&device["last_seen_at"]) >= time(&json!(stamp(now - Duration::minutes(1)))));
    let others = data_of(
        &app,
        &format!("/network/devices?site_id={site}&limit=500"),
        &read,
    )
    .await;
    let expected = if others
        .as_array()
        .expect("devices")
        .iter()
        .all(|d| d["status"] == "up")
    {
        "up"
    } else {
        "degraded"
    };
    assert_eq!(site_status().await, expected);
}

#[tokio::test]
async fn tunnels_collected_are_created_between_known_devices_and_sum_their_local_traffic() {
    let app = TestApp::with_modules(&[Function::Network]).await;
    let read = app.token("acme", &[Scope::ReadNetwork]).await;
    let collect = app.token("acme", &[Scope::CollectNetwork]).await;
    let firewalls = data_of(&app, "/network/devices?type=firewall", &read).await;
    let ids: Vec<i64> = firewalls
        .as_array()
        .expect("firewalls")
        .iter()
        .filter_map(|d| d["id"].as_i64())
        .collect();
    let tunnels = data_of(&app, "/network/tunnels", &read).await;
    let linked = |a: i64, b: i64| {
        tunnels.as_array().expect("tunnels").iter().any(|t| {
            let ends = (
                t["local"]["device_id"].as_i64(),
                t["remote"]["device_id"].as_i64(),
            );
            ends == (Some(a), Some(b)) || ends == (Some(b), Some(a))
        })
    };
    let (a, b) = ids
        .iter()
        .flat_map(|a| ids.iter().map(move |b| (*a, *b)))
        .find(|(a, b)| a != b && !linked(*a, *b))
        .expect("two firewalls without a tunnel");
    let now = Utc::now();
    let seen = |min: i64, device: i64, peer: i64, status: &str, bytes: (u64, u64)| {
        json!({"at": stamp(now - Duration::minutes(min)), "device": device, "peer": peer,
            "status": status, "latency_ms": 12.0, "bytes_in": bytes.0, "bytes_out": bytes.1,
            "name": "COLLECT-T"})
        .to_string()
    };
    let lines = [
        seen(20, a, b, "up", (1000, 500)),
        seen(15, b, a, "up", (7, 7)),
        seen(10, a, b, "down", (100, 50)),
        seen(10, a, 999_999, "up", (1, 1)),
        seen(10, a, a, "up", (1, 1)),
    ];
    assert_taken(
        &post_lines(&app, "network-tunnel", &collect, &lines).await,
        3,
        &[(4, "unknown_reference"), (5, "invalid_observation")],
    );
    let tunnel = async || {
        data_of(&app, "/network/tunnels", &read)
            .await
            .as_array()
            .expect("tunnels")
            .iter()
            .find(|t| t["name"] == "COLLECT-T")
            .cloned()
            .expect("the tunnel made")
    };
    let t = tunnel().await;
    assert_eq!(
        (
            &t["local"]["device_id"],
            &t["remote"]["device_id"],
            &t["status"]
        ),
        (&json!(a), &json!(b), &json!("down")),
        "{t}"
    );
    assert_eq!(
        (&t["established_at"], &t["latency_ms"]),
        (&json!(null), &json!(null))
    );
    assert_eq!(
        time(&t["last_change_at"]),
        time(&json!(stamp(now - Duration::minutes(10))))
    );
    assert_eq!(
        (&t["bytes_in_24h"], &t["bytes_out_24h"]),
        (&json!(1100), &json!(550))
    );
    // Late: only its traffic counts; sent again, nothing; back up: established then.
    let late = [seen(30, a, b, "up", (1, 2))];
    for _ in 0..2 {
        assert_taken(
            &post_lines(&app, "network-tunnel", &collect, &late).await,
            1,
            &[],
        );
        assert_taken(
            &post_lines(&app, "network-tunnel", &collect, &lines).await,
            3,
            &[(4, "unknown_reference"), (5, "invalid_observation")],
        );
    }
    let t = tunnel().await;
    assert_eq!(t["status"], "down");
    assert_eq!(
        (&t["bytes_in_24h"], &t["bytes_out_24h"]),
        (&json!(1101), &json!(552))
    );
    let up = [seen(2, b, a, "up", (9, 9))];
    assert_taken(
        &post_lines(&app, "network-tunnel", &collect, &up).await,
        1,
        &[],
    );
    let t = tunnel().await;
    assert_eq!(
        (&t["status"], &t["latency_ms"]),
        (&json!("up"), &json!(12.0))
    );
    let changed = json!(stamp(now - Duration::minutes(2)));
    assert_eq!(time(&t["established_at"]), time(&changed));
    assert_eq!(time(&t["last_change_at"]), time(&changed));
    assert_eq!(t["bytes_in_24h"], 1101);
}

#[tokio::test]
async fn monitor_checks_collected_derive_state_availability_and_incidents() {
    let app = TestApp::with_modules(&[Function::Alerts]).await;
    let read = app.token("acme", &[Scope::ReadMonitors]).await;
    let collect = app.token("acme", &[Scope::CollectAlerts]).await;
    let monitors = data_of(&app, "/monitors", &read).await;
    let monitors = monitors.as_array().expect("monitors");
    let monitor = monitors
        .iter()
        .find(|m| m["active"] == true && m["status"] == "up" && m["open_incident"].is_null())
        .expect("an active monitor without incident");
    let id = monitor["id"].as_i64().expect("id");
    let paused = monitors
        .iter()
        .find(|m| m["active"] == false)
        .and_then(|m| m["id"].as_i64())
        .expect("a paused monitor");
    // The checks follow the monitor's last one, by the second.
    let base = time(&monitor["last_check"]["at"]);
    let at = |secs: i64| time(&json!(stamp(base + Duration::seconds(secs))));
    let check = |secs: i64, monitor: i64, ok: bool, ms: Option<u32>| {
        json!({"at": stamp(base + Duration::seconds(secs)), "monitor": monitor, "ok": ok,
            "response_ms": ms, "message": if ok { "HTTP 200" } else { "timeout" }})
        .to_string()
    };
    let lines = [
        check(1, id, true, Some(50)),
        check(2, id, false, None),
        check(3, id, false, None),
        check(3, 999_999, false, None),
        check(3, paused, false, None),
        check(3600, id, true, Some(5)),
        json!({"at": stamp(base + Duration::seconds(3)), "monitor": id, "ok": true, "message": ""})
            .to_string(),
    ];
    assert_taken(
        &post_lines(&app, "monitor-check", &collect, &lines).await,
        3,
        &[
            (4, "unknown_reference"),
            (5, "invalid_observation"),
            (6, "time_out_of_range"),
            (7, "invalid_observation"),
        ],
    );
    let state = async || data_of(&app, &format!("/monitors/{id}"), &read).await;
    // Two failures in a row: no incident yet.
    let m = state().await;
    assert_eq!(
        (&m["status"], &m["open_incident"]),
        (&json!("up"), &json!(null)),
        "{m}"
    );
    assert_eq!(m["last_check"]["status"], "down");
    assert_eq!(time(&m["last_check"]["at"]), at(3));
    // A third, slow: an incident from the first failure, degraded as the check opening it.
    let slow = [check(4, id, true, Some(1500))];
    assert_taken(
        &post_lines(&app, "monitor-check", &collect, &slow).await,
        1,
        &[],
    );
    let m = state().await;
    assert_eq!(m["status"], "degraded", "{m}");
    let alert = m["open_incident"].as_str().expect("an incident").to_owned();
    let incidents = data_of(&app, &format!("/monitors/{id}/incidents"), &read).await;
    let incident = incidents
        .as_array()
        .expect("incidents")
        .iter()
        .find(|i| i["alert_id"] == alert.as_str())
        .cloned()
        .expect("the incident");
    assert_eq!(
        (&incident["kind"], &incident["status"]),
        (&json!("degraded"), &json!("unresolved"))
    );
    assert_eq!(time(&incident["started_at"]), at(2));
    // Acknowledged through the public route, then resolved by a good check: the
    // acknowledgement stays.
    let write = app.token("acme", &[Scope::WriteAlerts]).await;
    let res = app
        .send(
            Method::POST,
            &format!("/alerts/{alert}/ack"),
            &write,
            json!({"note": "vu"}),
        )
        .await;
    assert_eq!(res.status, StatusCode::OK, "{}", res.body);
    let good = [check(5, id, true, Some(40))];
    assert_taken(
        &post_lines(&app, "monitor-check", &collect, &good).await,
        1,
        &[],
    );
    let m = state().await;
    assert_eq!(
        (&m["status"], &m["open_incident"]),
        (&json!("up"), &json!(null)),
        "{m}"
    );
    let incidents = data_of(&app, &format!("/monitors/{id}/incidents"), &read).await;
    let incident = incidents
        .as_array()
        .expect("incidents")
        .iter()
        .find(|i| i["alert_id"] == alert.as_str())
        .cloned()
        .expect("the incident");
    assert_eq!(incident["status"], "resolved", "{incident}");
    assert!(incident["acknowledged_by"].is_string(), "{incident}");
    assert_eq!(incident["notes"], "vu");
    assert_eq!(time(&incident["resolved_at"]), at(5));
    // A late failure counts in the availability only.
    let before = m["availability"]["24h"].as_f64().expect("availability");
    let late = [check(-600, id, false, None)];
    for _ in 0..2 {
        assert_taken(
            &post_lines(&app, "monitor-check", &collect, &late).await,
            1,
            &[],
        );
    }
    let m = state().await;
    assert_eq!(
        (&m["status"], &m["last_check"]["status"]),
        (&json!("up"), &json!("up"))
    );
    let after = m["availability"]["24h"].as_f64().expect("availability");
    assert!(after < before, "{before} {after}");
}

#[tokio::test]
async fn profile_deployments_collected_take_their_derived_state_and_counts() {
    let app = TestApp::with_modules(&[Function::Operations]).await;
    let read = app.token("acme", &[Scope::ReadMonitors]).await;
    let collect = app.token("acme", &[Scope::CollectOperations]).await;
    let fleet = app.token("acme", &[Scope::CollectFleet]).await;
    let now = Utc::now();
    // A machine of its own, first of the problems by name once failed.
    let host = "AAA-COLLECT-01";
    let beat = [heartbeat(
        host,
        now - Duration::minutes(30),
        "2.4.1",
        "online",
    )];
    assert_taken(
        &post_lines(&app, "machine-heartbeat", &fleet, &beat).await,
        1,
        &[],
    );
    let profiles = data_of(&app, "/profiles", &read).await;
    let id = profiles[0]["id"].as_i64().expect("a profile");
    let profile = data_of(&app, &format!("/profiles/{id}"), &read).await;
    let version = profile["version"].as_u64().expect("version");
    let counts = profile["deployment_counts"].clone();
    // Every item present with its expected values.
    let conform: serde_json::Map<String, serde_json::Value> = profile["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|i| {
            let key = i["key"].as_str().expect("key").to_owned();
            (key, json!({"present": true, "fields": i["expected"]}))
        })
        .collect();
    let report = |min: i64, machine: &str, v: u64, status: &str, items: serde_json::Value| {
        json!({"at": stamp(now - Duration::minutes(min)), "profile": id, "machine": machine,
            "profile_version": v, "status": status, "deployed_by": "collecte",
            "items": items})
        .to_string()
    };
    let lines = [
        report(20, host, version, "failed", json!({})),
        report(20, "NOWHERE-01", version, "deployed", json!({})),
        json!({"at": stamp(now), "profile": 999_999, "machine": host, "profile_version": 1})
            .to_string(),
        report(20, host, version + 1, "deployed", json!({})),
        report(
            20,
            host,
            version,
            "deployed",
            json!({"no-such-item": {"present": true}}),
        ),
        report(
            20,
            host,
            version,
            "deployed",
            json!({"x": {"present": "yes"}}),
        ),
    ];
    assert_taken(
        &post_lines(&app, "profile-deployment", &collect, &lines).await,
        1,
        &[
            (2, "unknown_reference"),
            (3, "unknown_reference"),
            (4, "invalid_observation"),
            (5, "invalid_observation"),
            (6, "invalid_observation"),
        ],
    );
    let count = |c: &serde_json::Value, k: &str| c[k].as_i64().unwrap_or(0);
    let detail = data_of(&app, &format!("/profiles/{id}"), &read).await;
    let c = &detail["deployment_counts"];
    assert_eq!(count(c, "total"), count(&counts, "total") + 1, "{c}");
    assert_eq!(count(c, "failed"), count(&counts, "failed") + 1, "{c}");
    let first = &detail["deployments"][0];
    assert_eq!(
        (&first["hostname"], &first["state"]),
        (&json!(host), &json!("failed")),
        "{first}"
    );
    let deployment = first["id"].as_i64().expect("id");
    // Deployed since, every item conform: compliant, moved out of the problems; a report
    // older than that, sent late, changes nothing.
    let fixed = [report(
        10,
        host,
        version,
        "deployed",
        serde_json::Value::Object(conform),
    )];
    assert_taken(
        &post_lines(&app, "profile-deployment", &collect, &fixed).await,
        1,
        &[],
    );
    let late = [report(15, host, version, "failed", json!({}))];
    assert_taken(
        &post_lines(&app, "profile-deployment", &collect, &late).await,
        1,
        &[],
    );
    let detail = data_of(&app, &format!("/profiles/{id}"), &read).await;
    let c = &detail["deployment_counts"];
    assert_eq!(count(c, "total"), count(&counts, "total") + 1, "{c}");
    assert_eq!(count(c, "failed"), count(&counts, "failed"), "{c}");
    assert_eq!(
        count(c, "compliant"),
        count(&counts, "compliant") + 1,
        "{c}"
    );
    let shown = detail["deployments"].as_array().expect("deployments");
    assert!(
        shown
            .iter()
            .all(|d| d["id"] != deployment || d["state"] == "compliant"),
        "{shown:?}"
    );
    let compared = data_of(
        &app,
        &format!("/profiles/deployments/{deployment}/compare"),
        &read,
    )
    .await;
    assert_eq!(compared["hostname"], host);
    assert_eq!(
        compared["summary"]["conforme"].as_u64(),
        profile["items"].as_array().map(|i| i.len() as u64)
    );
    assert_eq!(
        time(&compared["observed_at"]),
        time(&json!(stamp(now - Duration::minutes(10))))
    );
    let listed = data_of(&app, "/profiles", &read).await;
    let listed = listed
        .as_array()
        .expect("profiles")
        .iter()
        .find(|p| p["id"] == id)
        .cloned();
    assert_eq!(
        listed.map(|p| p["deployment_counts"].clone()),
        Some(c.clone())
    );
}
