//! The collection API (docs/collect.md): collect credentials post batches of raw
//! observations, which appear in the public routes; each line accepted or refused on its own;
//! a batch sent again (or by two senders at once) counted once; the limits; and the
//! credentials kept apart from the public API.

use std::io::Write;

use axum::body::Body;
use chrono::{DateTime, Duration, Utc};
use http::{Method, Request, StatusCode};
use netops_shared::routes::Function;
use netops_shared::scope::Scope;
use serde_json::{Value, json};
use tower::ServiceExt;

use crate::helpers::{TestApp, TestResponse, into_test_response};

/// `POST /collect/{kind}` with `content_type` and extra headers.
pub(crate) async fn post(
    app: &TestApp,
    kind: &str,
    token: &str,
    content_type: &str,
    body: Vec<u8>,
    headers: &[(&str, &str)],
) -> TestResponse {
    let mut req = Request::builder()
        .method(Method::POST)
        .uri(format!("/api/v1/collect/{kind}"))
        .header("authorization", format!("Bearer {token}"))
        .header("content-type", content_type);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let req = req.body(Body::from(body)).expect("request");
    into_test_response(app.router.clone().oneshot(req).await.expect("infallible")).await
}

/// A FortiGate SSL-VPN login failure of `account` from an outside address, by `device`.
fn vpn_failure(device: &str, at: DateTime<Utc>, account: &str) -> String {
    format!(
        "<189>date={} time={} devname=\"{device}\" devid=\"FG100FTK20009999\" eventtime={}000000 \
         logid=\"0101039426\" type=\"event\" subtype=\"vpn\" level=\"alert\" action=\"ssl-login-fail\" \
         status=\"failure\" remip=198.51.100.77 user=\"{account}\" msg=\"SSL VPN login fail\"",
        at.format("%Y-%m-%d"),
        at.format("%H:%M:%S"),
        at.timestamp_millis(),
    )
}

/// A FortiGate denied connection by `device`.
fn denied(device: &str, at: DateTime<Utc>, port: u16) -> String {
    format!(
        "<189>date={} time={} devname=\"{device}\" devid=\"FG100FTK20009999\" eventtime={}000000 \
         logid=\"0000000013\" type=\"traffic\" subtype=\"forward\" level=\"notice\" srcip=10.10.30.14 \
         srcport=51234 dstip=203.0.113.50 dstport={port} action=\"deny\" service=\"SMB\" proto=6 \
         policyid=12 msg=\"Denied by policy\"",
        at.format("%Y-%m-%d"),
        at.format("%H:%M:%S"),
        at.timestamp_millis(),
    )
}

/// The name and id of tenant acme's first firewall.
async fn firewall(app: &TestApp, read: &str) -> (String, i64) {
    let res = app.get("/firewall/devices", read).await;
    assert_eq!(res.status, StatusCode::OK, "{}", res.body);
    let d = &res.items()[0];
    (
        d["name"].as_str().expect("name").to_owned(),
        d["id"].as_i64().expect("id"),
    )
}

/// The events of the last hour of `device` whose account is `account`.
async fn events_of(app: &TestApp, read: &str, device: i64, port: Option<u16>) -> Vec<Value> {
    let res = app
        .get(
            &format!("/firewall/events?device_id={device}&period=1h&limit=1000"),
            read,
        )
        .await;
    assert_eq!(res.status, StatusCode::OK, "{}", res.body);
    res.items()
        .iter()
        .filter(|e| {
            e["account"] == "collect.test"
                || port.is_some_and(|p| e["dst_port"] == json!(p) && e["src_ip"] == "10.10.30.14")
        })
        .cloned()
        .collect()
}

async fn report_summary(app: &TestApp, read: &str) -> Value {
    let res = app.get("/firewall/report?period=24h", read).await;
    assert_eq!(res.status, StatusCode::OK, "{}", res.body);
    res.body["data"]["summary"].clone()
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    enc.write_all(bytes).expect("gzip");
    enc.finish().expect("gzip")
}

#[tokio::test]
async fn syslog_lines_collected_appear_in_the_events_and_the_report_once() {
    let app = TestApp::with_modules(&[Function::Firewall]).await;
    let read = app.token("acme", &[Scope::ReadFirewall]).await;
    let collect = app.token("acme", &[Scope::CollectFirewall]).await;
    let (device, device_id) = firewall(&app, &read).await;
    let before = report_summary(&app, &read).await;
    let now = Utc::now();
    let body = [
        vpn_failure(&device, now - Duration::seconds(90), "collect.test"),
        String::new(),
        "this is no firewall log".to_owned(),
        denied(&device, now - Duration::seconds(60), 4455),
        denied("NO-SUCH-FW", now - Duration::seconds(60), 4455),
        denied(&device, now + Duration::minutes(30), 4455),
        denied(&device, now - Duration::days(400), 4455),
    ]
    .join("\n");
    let first = post(
        &app,
        "firewall-syslog",
        &collect,
        "text/plain",
        body.clone().into_bytes(),
        &[],
    )
    .await;
    assert_eq!(first.status, StatusCode::OK, "{}", first.body);
    let data = &first.body["data"];
    assert_eq!(data["kind"], "firewall-syslog");
    assert_eq!(data["accepted"], 2, "{data}");
    assert_eq!(data["refused"], 4, "{data}");
    let refusals = refusals(data);
    assert_eq!(
        refusals,
        [
            (3, "unreadable_line"),
            (5, "unknown_reference"),
            (6, "time_out_of_range"),
            (7, "time_out_of_range")
        ]
    );
    assert!(
        data["refusals"][1]["message"]
            .as_str()
            .is_some_and(|m| m.contains("NO-SUCH-FW") && m.contains("aucun pare-feu")),
        "{data}"
    );
    assert!(first.header("idempotent-replayed").is_none());
    assert_eq!(first.header("x-ratelimit-remaining"), Some("599"));

    // The events, with the fields the parsers read.
    let events = events_of(&app, &read, device_id, Some(4455)).await;
    assert_eq!(events.len(), 2, "{events:?}");
    let vpn = events
        .iter()
        .find(|e| e["category"] == "vpn")
        .expect("vpn event");
    assert_eq!(vpn["action"], "failure");
    assert_eq!(vpn["format"], "fortigate");
    assert_eq!(vpn["src_ip"], "198.51.100.77");
    assert_eq!(vpn["device"], device.as_str());
    let deny = events
        .iter()
        .find(|e| e["category"] == "deny")
        .expect("deny event");
    assert_eq!(deny["action"], "blocked");
    assert_eq!(deny["dst_ip"], "203.0.113.50");
    assert_eq!(deny["service"], "smb");
    // The rare categories' index serves filters on them.
    let res = app
        .get(
            "/firewall/events?category=vpn&user=collect.test&period=1h",
            &read,
        )
        .await;
    assert_eq!(res.items().len(), 1, "{}", res.body);

    // The report counts them.
    let after = report_summary(&app, &read).await;
    let delta = |v: &Value, b: &Value| v.as_f64().unwrap_or(0.0) - b.as_f64().unwrap_or(0.0);
    assert_eq!(
        delta(&after["events"], &before["events"]),
        2.0,
        "{before} {after}"
    );
    assert_eq!(
        delta(&after["by_category"]["vpn"], &before["by_category"]["vpn"]),
        1.0
    );
    assert_eq!(delta(&after["blocked"], &before["blocked"]), 1.0);

    // The device's syslog channel is receiving.
    let res = app.get("/firewall/devices", &read).await;
    let dev = res
        .items()
        .iter()
        .find(|d| d["id"] == device_id)
        .expect("device");
    assert_eq!(dev["syslog"]["status"], "active");

    // The same batch again, gzip-compressed this time: its identity is its decompressed body.
    // It changes nothing and answers as the first time.
    let again = post(
        &app,
        "firewall-syslog",
        &collect,
        "text/plain",
        gzip(body.as_bytes()),
        &[("content-encoding", "gzip")],
    )
    .await;
    assert_eq!(again.status, StatusCode::OK, "{}", again.body);
    assert_eq!(again.header("idempotent-replayed"), Some("true"));
    assert_eq!(again.body, first.body);
    assert_eq!(events_of(&app, &read, device_id, Some(4455)).await.len(), 2);
    assert_eq!(report_summary(&app, &read).await["events"], after["events"]);

    // The same lines in another batch (NDJSON, another order) are stored and counted once.
    let ndjson = [
        json!({"line": denied(&device, now - Duration::seconds(60), 4455)}),
        json!({"line": vpn_failure(&device, now - Duration::seconds(90), "collect.test"), "device_id": device_id}),
    ]
    .iter()
    .map(Value::to_string)
    .collect::<Vec<_>>()
    .join("\n");
    let res = post(
        &app,
        "firewall-syslog",
        &collect,
        "application/x-ndjson",
        ndjson.into_bytes(),
        &[],
    )
    .await;
    assert_eq!(res.status, StatusCode::OK, "{}", res.body);
    assert_eq!(res.body["data"]["accepted"], 2);
    assert!(res.header("idempotent-replayed").is_none());
    assert_eq!(events_of(&app, &read, device_id, Some(4455)).await.len(), 2);
    assert_eq!(report_summary(&app, &read).await["events"], after["events"]);

    // The ingestion log holds each batch once.
    let log = app.stores.ingest.ingested("acme").await.expect("log");
    assert_eq!(log.len(), 2, "{log:?}");
    assert_eq!((log[0].accepted, log[0].refused), (2, 4));
    assert_eq!(log[0].refusals.len(), 4);
    assert!(log[0].batch_id.starts_with("firewall-syslog/sha256/"));
    assert!(
        app.stores
            .ingest
            .ingested("globex")
            .await
            .expect("log")
            .is_empty()
    );
}

#[tokio::test]
async fn one_batch_from_two_senders_at_once_is_stored_once_and_answered_alike() {
    let app = TestApp::with_modules(&[Function::Firewall]).await;
    let read = app.token("acme", &[Scope::ReadFirewall]).await;
    let (a, b) = (
        app.token("acme", &[Scope::CollectFirewall]).await,
        app.token("acme", &[Scope::CollectFirewall]).await,
    );
    let (device, device_id) = firewall(&app, &read).await;
    let before = report_summary(&app, &read).await;
    let now = Utc::now();
    let body: Vec<String> = (0..200)
        .map(|i| {
            denied(
                &device,
                now - Duration::milliseconds(100 * i + 1),
                7000 + i as u16,
            )
        })
        .collect();
    let body = body.join("\n").into_bytes();
    let key = [("idempotency-key", "batch-0001")];
    let (ra, rb) = tokio::join!(
        post(
            &app,
            "firewall-syslog",
            &a,
            "text/plain",
            body.clone(),
            &key
        ),
        post(
            &app,
            "firewall-syslog",
            &b,
            "text/plain",
            body.clone(),
            &key
        ),
    );
    assert_eq!(ra.status, StatusCode::OK, "{}", ra.body);
    assert_eq!(rb.status, StatusCode::OK, "{}", rb.body);
    assert_eq!(ra.body, rb.body);
    assert_eq!(ra.body["data"]["accepted"], 200);
    assert_eq!(
        ra.body["data"]["batch_id"],
        "firewall-syslog/key/batch-0001"
    );
    let replayed = [&ra, &rb]
        .iter()
        .filter(|r| r.header("idempotent-replayed").is_some())
        .count();
    assert!(replayed <= 1);
    let res = app
        .get(
            &format!("/firewall/events?device_id={device_id}&category=deny&period=1h&limit=1000"),
            &read,
        )
        .await;
    let ours = res
        .items()
        .iter()
        .filter(|e| {
            e["dst_port"]
                .as_u64()
                .is_some_and(|p| (7000..7200).contains(&p))
        })
        .count();
    assert_eq!(ours, 200);
    let after = report_summary(&app, &read).await;
    assert_eq!(
        after["blocked"].as_f64().unwrap_or(0.0) - before["blocked"].as_f64().unwrap_or(0.0),
        200.0
    );
    // The key is the batch's identity: another body under it gets the first answer.
    let other = post(
        &app,
        "firewall-syslog",
        &a,
        "text/plain",
        b"x".to_vec(),
        &key,
    )
    .await;
    assert_eq!(other.body, ra.body);
    assert_eq!(other.header("idempotent-replayed"), Some("true"));
}

#[tokio::test]
async fn collect_credentials_send_batches_only_and_only_their_tenants() {
    let app = TestApp::shared();
    let collect = app.token("acme", &[Scope::CollectFirewall]).await;
    let full = app.full_token().await;
    // A collect credential reads nothing, /me and MCP included.
    for path in ["/me", "/firewall/events", "/machines"] {
        let res = app.get(path, &collect).await;
        assert_eq!(res.status, StatusCode::FORBIDDEN, "{path}: {}", res.body);
        assert_eq!(res.error(), "forbidden");
    }
    let res = app
        .send(
            Method::POST,
            "/mcp",
            &collect,
            json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}),
        )
        .await;
    assert_eq!(res.status, StatusCode::FORBIDDEN);
    // Another token sends nothing.
    let res = post(
        app,
        "firewall-syslog",
        &full,
        "text/plain",
        b"x".to_vec(),
        &[],
    )
    .await;
    assert_eq!(res.status, StatusCode::FORBIDDEN, "{}", res.body);
    assert!(
        res.body["message"]
            .as_str()
            .is_some_and(|m| m.contains("collecte"))
    );
    // An unknown kind, in English on request.
    let res = app
        .request(
            Method::POST,
            "/collect/nothing",
            Some(&collect),
            Some(b"{}".to_vec()),
            &[("accept-language", "en")],
        )
        .await;
    assert_eq!(res.status, StatusCode::NOT_FOUND, "{}", res.body);
    assert_eq!(
        res.body["admitted_kinds"],
        json!([
            "firewall-syslog",
            "dns-resolution",
            "dns-server-query",
            "machine-heartbeat",
            "netdiag-event",
            "netdiag-measurement",
            "flow",
            "gateway-flow",
            "flow-failure",
            "asset-inventory",
            "directory-logon",
            "account-lockout",
            "account-change",
            "siem-event",
            "file-access",
            "job-ping",
            "database-metrics",
            "database-session",
            "database-slow-query",
            "database-query-stats",
            "database-blocking",
            "database-check",
            "network-port",
            "network-device-metrics",
            "network-device-state",
            "network-tunnel",
            "monitor-check",
            "profile-deployment"
        ])
    );
    assert!(
        res.body["message"]
            .as_str()
            .is_some_and(|m| m.contains("not found"))
    );
    // A tenant's credential names its own devices only: acme's firewall is unknown to globex.
    let read = app.token("acme", &[Scope::ReadFirewall]).await;
    let (device, _) = firewall(app, &read).await;
    let globex = app.token("globex", &[Scope::CollectFirewall]).await;
    let line = denied(&device, Utc::now(), 4455);
    let res = post(
        app,
        "firewall-syslog",
        &globex,
        "text/plain",
        line.into_bytes(),
        &[],
    )
    .await;
    assert_eq!(res.status, StatusCode::BAD_REQUEST, "{}", res.body);
    assert_eq!(res.error(), "invalid_body");
    assert_eq!(res.body["refusals"][0]["error"], "unknown_reference");
}

#[tokio::test]
async fn bad_bodies_are_refused_within_the_limits() {
    let app = TestApp::shared();
    let collect = app.token("acme", &[Scope::CollectFirewall]).await;
    let kind = "firewall-syslog";
    // NDJSON lines that are no JSON object, or miss the kind's fields, are refused one by one.
    let body = b"[1]\n{\"line\": 42}\n{oops\n{\"line\": \"x\", \"extra\": 1}\n".to_vec();
    let res = post(app, kind, &collect, "application/x-ndjson", body, &[]).await;
    assert_eq!(res.status, StatusCode::BAD_REQUEST, "{}", res.body);
    let errors: Vec<&str> = res.body["refusals"]
        .as_array()
        .expect("refusals")
        .iter()
        .map(|r| r["error"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(
        errors,
        [
            "invalid_line",
            "invalid_observation",
            "invalid_line",
            "invalid_observation"
        ]
    );
    assert_eq!(res.body["refused"], 4);
    // Nothing at all; an unknown type or coding; a bad key.
    for (content_type, encoding, body, key) in [
        ("text/plain", None, &b"\n\n"[..], None),
        ("application/json", None, &b"{}"[..], None),
        ("text/plain", Some("br"), &b"x"[..], None),
        ("text/plain", Some("gzip"), &b"not gzip"[..], None),
        ("text/plain", None, &b"x"[..], Some("a key")),
    ] {
        let mut headers = Vec::new();
        headers.extend(encoding.map(|e| ("content-encoding", e)));
        headers.extend(key.map(|k| ("idempotency-key", k)));
        let res = post(app, kind, &collect, content_type, body.to_vec(), &headers).await;
        assert_eq!(
            res.status,
            StatusCode::BAD_REQUEST,
            "{content_type} {encoding:?}: {}",
            res.body
        );
    }
    // Over 4 MiB on the wire, declared or not; a compression bomb over 16 MiB decompressed.
    let big = vec![b'x'; 4 * 1024 * 1024 + 1];
    let res = post(app, kind, &collect, "text/plain", big, &[]).await;
    assert_eq!(res.status, StatusCode::PAYLOAD_TOO_LARGE, "{}", res.body);
    assert_eq!(res.error(), "payload_too_large");
    let bomb = gzip(&vec![b'\n'; 17 * 1024 * 1024]);
    assert!(bomb.len() < 100 * 1024);
    let res = post(
        app,
        kind,
        &collect,
        "text/plain",
        bomb,
        &[("content-encoding", "gzip")],
    )
    .await;
    assert_eq!(res.status, StatusCode::PAYLOAD_TOO_LARGE, "{}", res.body);
    // Each batch, refused or not, counted one call.
    assert_eq!(res.header("x-ratelimit-remaining"), Some("592"));
}

#[tokio::test]
async fn dns_resolutions_collected_appear_in_the_resolutions_and_the_top_domains_once() {
    let app = TestApp::with_modules(&[Function::Dns]).await;
    let read = app
        .token("acme", &[Scope::ReadDns, Scope::ReadMachines])
        .await;
    let collect = app.token("acme", &[Scope::CollectDns]).await;
    let machines = app.get("/machines?limit=1", &read).await;
    let machine = machines.items()[0]["hostname"]
        .as_str()
        .expect("hostname")
        .to_owned();
    let ip = machines.items()[0]["ip"].as_str().expect("ip").to_owned();
    let now = Utc::now();
    let line = |secs: i64, domain: &str, code: &str| {
        json!({"at": crate::helpers::stamp(now - Duration::seconds(secs)), "machine": machine,
            "process": "collect-test.exe", "domain": domain, "query_type": "A",
            "response_code": code, "answers": [], "resolver": "10.10.0.53", "latency_ms": 4.2})
        .to_string()
    };
    let body = [
        line(30, "Collect-Test.Example.", "NOERROR"),
        line(20, "collect-test.example", "NXDOMAIN"),
        line(20, "collect-test.example", "NXDOMAIN"),
        json!({"at": crate::helpers::stamp(now), "machine": "NO-SUCH-HOST", "domain": "a.example",
            "query_type": "A", "response_code": "NOERROR", "resolver": "x", "latency_ms": 1.0})
        .to_string(),
        line(10, "not a name", "NOERROR"),
        line(10, "collect-test.example", "MAYBE"),
    ]
    .join("\n");
    // Not a syslog kind: raw lines are refused as such.
    let res = post(
        &app,
        "dns-resolution",
        &collect,
        "text/plain",
        body.clone().into_bytes(),
        &[],
    )
    .await;
    assert_eq!(res.status, StatusCode::BAD_REQUEST, "{}", res.body);
    let first = post(
        &app,
        "dns-resolution",
        &collect,
        "application/x-ndjson",
        body.clone().into_bytes(),
        &[],
    )
    .await;
    assert_eq!(first.status, StatusCode::OK, "{}", first.body);
    let data = &first.body["data"];
    // The repeated line is accepted, and stored once.
    assert_eq!(data["accepted"], 3, "{data}");
    let refusals = refusals(data);
    assert_eq!(
        refusals,
        [
            (4, "unknown_reference"),
            (5, "invalid_observation"),
            (6, "invalid_observation")
        ]
    );
    let resolutions = app
        .get(
            &format!("/dns/resolutions?machine={machine}&domain=collect-test&period=1h"),
            &read,
        )
        .await;
    assert_eq!(resolutions.status, StatusCode::OK, "{}", resolutions.body);
    let items = resolutions.items();
    assert_eq!(items.len(), 2, "{items:?}");
    assert!(
        items
            .iter()
            .all(|r| r["domain"] == "collect-test.example" && r["machine_ip"] == ip)
    );
    assert_eq!(items[0]["response_code"], "NXDOMAIN");
    assert_eq!(items[1]["process"], "collect-test.exe");
    let domain_row = |res: &TestResponse| {
        res.items()
            .iter()
            .find(|d| d["domain"] == "collect-test.example")
            .cloned()
            .expect("the domain is ranked")
    };
    let ranked = app.get("/dns/top-domains?period=1h&limit=500", &read).await;
    let row = domain_row(&ranked);
    assert_eq!(
        (row["queries"].as_f64(), row["nxdomain"].as_f64()),
        (Some(2.0), Some(1.0)),
        "{row}"
    );
    assert_eq!(row["machines"], 1);
    let mine = app
        .get(
            &format!("/dns/top-domains?period=1h&limit=500&machine={machine}"),
            &read,
        )
        .await;
    assert_eq!(domain_row(&mine)["queries"].as_f64(), Some(2.0));
    // The same resolutions in another batch are counted once.
    let again = [
        line(20, "collect-test.example", "NXDOMAIN"),
        line(30, "collect-test.example", "NOERROR"),
    ]
    .join("\n");
    let res = post(
        &app,
        "dns-resolution",
        &collect,
        "application/x-ndjson",
        again.into_bytes(),
        &[],
    )
    .await;
    assert_eq!(res.body["data"]["accepted"], 2, "{}", res.body);
    let ranked = app.get("/dns/top-domains?period=1h&limit=500", &read).await;
    assert_eq!(domain_row(&ranked)["queries"].as_f64(), Some(2.0));
    // A firewall credential does not send DNS resolutions.
    let firewall = app.token("acme", &[Scope::CollectFirewall]).await;
    let res = post(
        &app,
        "dns-resolution",
        &firewall,
        "application/x-ndjson",
        body.into_bytes(),
        &[],
    )
    .await;
    assert_eq!(res.status, StatusCode::FORBIDDEN);
    assert_eq!(res.body["scope"], "collect:dns");
}

/// The scheduled pass (docs/collect.md#the-scheduled-pass) finds a tenant stale once none of
/// its kinds has arrived for the stated time, and never a tenant that has not collected yet.
#[tokio::test]
async fn the_scheduled_pass_finds_the_tenants_whose_collected_data_stopped_arriving() {
    let app = TestApp::with_modules(&[Function::Dns]).await;
    let read = app.token("acme", &[Scope::ReadMachines]).await;
    let collect = app.token("acme", &[Scope::CollectDns]).await;
    app.token("globex", &[Scope::ReadMachines]).await;
    let machines = app.get("/machines?limit=1", &read).await;
    let machine = machines.items()[0]["hostname"].clone();
    let hour = Duration::minutes(60);
    let pass = |at: DateTime<Utc>| netops_shared::pass::run(&app.stores, at, hour, &[]);
    let now = Utc::now();
    let before = pass(now).await.expect("pass");
    assert_eq!(before.tenants, 2, "{before:?}");
    assert!(before.stale.is_empty(), "no tenant has collected yet");
    let line = json!({"at": crate::helpers::stamp(now), "machine": machine, "domain": "pass.example",
        "query_type": "A", "response_code": "NOERROR", "resolver": "10.10.0.53", "latency_ms": 1.0});
    let res = post(
        &app,
        "dns-resolution",
        &collect,
        "application/x-ndjson",
        line.to_string().into_bytes(),
        &[],
    )
    .await;
    assert_eq!(res.status, StatusCode::OK, "{}", res.body);
    let received =
        DateTime::parse_from_rfc3339(res.body["data"]["received_at"].as_str().expect("at"))
            .expect("time")
            .with_timezone(&Utc);
    assert!(pass(received + hour).await.expect("pass").stale.is_empty());
    let later = pass(received + hour + Duration::seconds(1))
        .await
        .expect("pass");
    assert_eq!(later.stale, ["acme"], "{later:?}");
    assert!(later.failures.is_empty());
}

/// The refused lines of a batch's answer: line number and error code.
pub(crate) fn refusals(data: &Value) -> Vec<(u64, &str)> {
    data["refusals"]
        .as_array()
        .expect("refusals")
        .iter()
        .map(|r| {
            (
                r["line"].as_u64().expect("line"),
                r["error"].as_str().expect("error"),
            )
        })
        .collect()
}
