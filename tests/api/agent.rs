//! The agent loop through the real `netops serve` (docs/agent.md), with its timings shortened
//! by configuration: agents sync every second (`NETOPS_AGENT_POLL_SECONDS=1`), an action
//! waits 2 s for its claim (`NETOPS_ACTION_CLAIM_SECONDS=2`), a claim's lease lasts 2 s
//! (`NETOPS_ACTION_LEASE_SECONDS=2`) and the scheduled pass runs every second
//! (`NETOPS_PASS_EVERY_SECONDS=1`). The store side (claims, results, expiry) is also checked
//! on DynamoDB by the store suite (tests/store/agent_loop.rs).

use std::time::Duration;

use reqwest::{Client, Method, StatusCode};
use serde_json::{Value, json};

use crate::serve::served::{Serve, Served, Store, create_token, create_token_on, netops};

struct Call<'a> {
    http: Client,
    served: &'a Served,
}

impl Call<'_> {
    async fn send(
        &self,
        method: Method,
        path: &str,
        token: &str,
        body: Option<Value>,
    ) -> (StatusCode, reqwest::header::HeaderMap, Value) {
        let mut req = self
            .http
            .request(method, format!("{}{path}", self.served.base))
            .bearer_auth(token);
        if let Some(b) = body {
            req = req.json(&b);
        }
        let res = req.send().await.expect("request");
        let (status, headers) = (res.status(), res.headers().clone());
        let body = res.json().await.unwrap_or(Value::Null);
        (status, headers, body)
    }

    async fn get(&self, path: &str, token: &str) -> (StatusCode, Value) {
        let (s, _, b) = self.send(Method::GET, path, token, None).await;
        (s, b)
    }

    async fn post(&self, path: &str, token: &str, body: Value) -> (StatusCode, Value) {
        let (s, _, b) = self.send(Method::POST, path, token, Some(body)).await;
        (s, b)
    }

    async fn enroll(&self, token: &str, hostname: &str) -> (StatusCode, Value) {
        self.post(
            "/agent/enroll",
            token,
            json!({"hostname": hostname, "ip": "10.10.99.7", "os": "Windows 11 Pro 24H2", "agent_version": "5.0.0"}),
        )
        .await
    }

    /// The events of `host` about action `id`, waiting up to `secs` for at least one.
    async fn events_of(&self, host: &str, id: &str, secs: u64) -> Vec<Value> {
        let deadline = std::time::Instant::now() + Duration::from_secs(secs);
        loop {
            let (_, body) = self
                .get(
                    &format!(
                        "/netdiag/machines/{host}/events?period=1h&source=trace,speed,capture"
                    ),
                    &self.served.token,
                )
                .await;
            let found: Vec<Value> = body["data"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|e| e["details"]["action_id"] == id)
                .cloned()
                .collect();
            if !found.is_empty() || std::time::Instant::now() > deadline {
                return found;
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }

    async fn queue(&self, host: &str, body: Value) -> String {
        let (status, body) = self
            .post(
                &format!("/netdiag/machines/{host}/actions"),
                &self.served.token,
                body,
            )
            .await;
        assert_eq!(status, StatusCode::ACCEPTED, "{body}");
        body["data"]["action_id"].as_str().expect("id").to_owned()
    }
}

fn start() -> Served {
    Serve::seeded()
        .env("NETOPS_AGENT_POLL_SECONDS", 1)
        .env("NETOPS_ACTION_CLAIM_SECONDS", 2)
        .env("NETOPS_ACTION_LEASE_SECONDS", 2)
        .env("NETOPS_PASS_EVERY_SECONDS", 1)
        .start()
}

#[tokio::test]
async fn agents_enroll_sync_apply_settings_and_return_their_actions_once() {
    let served = start();
    let call = Call {
        http: Client::new(),
        served: &served,
    };
    let public = served.token.clone();
    let enroller = create_token(
        &served.db,
        &["--name", "enroll", "--scopes", "agent:enroll"],
    );
    // A machine of the demo and a new one.
    let (_, machines) = call.get("/netdiag/machines", &public).await;
    let host = machines["data"][0]["hostname"]
        .as_str()
        .expect("a machine")
        .to_owned();
    let (status, body) = call.enroll(&public, &host).await;
    assert_eq!(
        status,
        StatusCode::FORBIDDEN,
        "a public token enrolls nothing: {body}"
    );
    let (status, a) = call.enroll(&enroller, &host).await;
    assert_eq!(status, StatusCode::OK, "{a}");
    assert_eq!(a["data"]["machine_created"], false);
    assert_eq!(a["data"]["poll_seconds"], 1);
    let a = a["data"]["credential"]
        .as_str()
        .expect("credential")
        .to_owned();
    let (status, b) = call.enroll(&enroller, "AGT-NEW-0001").await;
    assert_eq!(status, StatusCode::OK, "{b}");
    assert_eq!(b["data"]["machine_created"], true);
    let b = b["data"]["credential"]
        .as_str()
        .expect("credential")
        .to_owned();
    let (status, _) = call.get("/machines/AGT-NEW-0001", &public).await;
    assert_eq!(status, StatusCode::OK, "enrollment created the machine");

    // Borders: an agent credential calls no public route, a public token no agent route,
    // an enrollment token nothing but the enrollment.
    for path in [
        "/me",
        "/machines",
        &format!("/netdiag/machines/{host}/events"),
    ] {
        let (status, body) = call.get(path, &a).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{path}: {body}");
        assert_eq!(body["error"], "forbidden");
    }
    let (status, _) = call
        .post(
            &format!("/netdiag/machines/{host}/actions"),
            &a,
            json!({"action": "speed"}),
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    for token in [&public, &enroller] {
        let (status, body) = call.get("/agent/sync", token).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    }

    // Sync: the same answer again is a 304 with If-None-Match.
    let (status, headers, first) = call.send(Method::GET, "/agent/sync", &a, None).await;
    assert_eq!(status, StatusCode::OK, "{first}");
    assert_eq!(first["data"]["hostname"], host.as_str());
    let etag = headers["etag"].to_str().expect("etag").to_owned();
    let sync_since = async |etag: &str| {
        call.http
            .get(format!("{}/agent/sync", served.base))
            .bearer_auth(&a)
            .header("If-None-Match", etag)
            .send()
            .await
            .expect("sync")
    };
    assert_eq!(sync_since(&etag).await.status(), StatusCode::NOT_MODIFIED);

    // Settings saved by the public API are seen at the agent's next sync (within its poll
    // interval: the sync answers from the store, so at once).
    let (status, _, body) = call
        .send(
            Method::PUT,
            &format!("/netdiag/machines/{host}/settings"),
            &public,
            Some(json!({"extraProbes": ["erp.acme.local:443"]})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let changed = sync_since(&etag).await;
    assert_eq!(changed.status(), StatusCode::OK, "a new settings version");
    let changed: Value = changed.json().await.expect("json");
    let version = changed["data"]["settings_version"]
        .as_u64()
        .expect("version");
    assert!(version > first["data"]["settings_version"].as_u64().expect("version"));
    let (_, settings) = call.get("/agent/settings", &a).await;
    assert_eq!(settings["data"]["version"], version);
    assert_eq!(
        settings["data"]["settings"]["extraProbes"],
        json!(["erp.acme.local:443"])
    );
    let (status, _) = call
        .post(
            "/agent/settings/applied",
            &a,
            json!({"settings_version": version + 1, "agent_version": "5.0.0"}),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "a version never saved");
    let (status, body) = call
        .post(
            "/agent/settings/applied",
            &a,
            json!({"settings_version": version, "agent_version": "5.0.1"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (_, machines) = call.get("/netdiag/machines", &public).await;
    let seen = machines["data"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|m| m["hostname"] == host.as_str())
        .expect("the machine")["agent"]
        .clone();
    assert_eq!(seen["settings_applied_version"], version, "{seen}");
    assert_eq!(seen["agent_version"], "5.0.1");
    assert!(seen["settings_applied_at"].is_string());

    // An action of the public API: two claims at once, one wins; the other machine's agent
    // neither claims it nor posts its result; the result comes back once.
    let id = call
        .queue(
            &host,
            json!({"action": "trace", "target": "www.example.com"}),
        )
        .await;
    let (_, synced) = call.get("/agent/sync", &a).await;
    assert_eq!(
        synced["data"]["actions"][0]["action_id"],
        id.as_str(),
        "{synced}"
    );
    let (_, other) = call.post("/agent/actions/claim", &b, json!({})).await;
    assert_eq!(
        other["data"],
        json!([]),
        "another machine's agent claims none"
    );
    let ((s1, c1), (s2, c2)) = tokio::join!(
        call.post("/agent/actions/claim", &a, json!({"max": 5})),
        call.post("/agent/actions/claim", &a, json!({"max": 5})),
    );
    assert_eq!((s1, s2), (StatusCode::OK, StatusCode::OK));
    let claims: Vec<Value> = [c1, c2]
        .iter()
        .flat_map(|c| c["data"].as_array().cloned().unwrap_or_default())
        .collect();
    assert_eq!(claims.len(), 1, "one claimant wins: {claims:?}");
    let claim_id = claims[0]["claim_id"].as_str().expect("claim").to_owned();
    assert_eq!(claims[0]["status"], "running");
    let result = json!({"claim_id": claim_id, "trace": {"target": "www.example.com", "hops": [
        {"hop": 1, "address": "10.10.99.1", "ms": 1.2},
        {"hop": 2, "address": null, "ms": null},
        {"hop": 3, "address": "93.184.215.14", "ms": 18.4},
    ]}});
    let path = format!("/agent/actions/{id}/result");
    let (status, _) = call.post(&path, &b, result.clone()).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "another machine's action");
    let (status, body) = call
        .post(&path, &a, json!({"claim_id": claim_id, "speed": {"down_mbps": 1.0, "up_mbps": 1.0, "server": "x"}}))
        .await;
    assert_eq!(
        status,
        StatusCode::BAD_REQUEST,
        "the field of another kind: {body}"
    );
    let (status, headers, done) = call
        .send(Method::POST, &path, &a, Some(result.clone()))
        .await;
    assert_eq!(status, StatusCode::OK, "{done}");
    assert_eq!(done["data"]["action"]["status"], "completed");
    assert_eq!(done["data"]["event_id"], format!("ev-{id}"));
    assert!(!headers.contains_key("idempotent-replayed"));
    let (status, headers, _) = call.send(Method::POST, &path, &a, Some(result)).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(headers["idempotent-replayed"], "true");
    let events = call.events_of(&host, &id, 5).await;
    assert_eq!(events.len(), 1, "the result once: {events:?}");
    assert_eq!(events[0]["source"], "trace");
    assert_eq!(events[0]["details"]["hops"][2]["address"], "93.184.215.14");

    // A claimed action whose result never comes: its lease runs out, an event says so, and
    // a late result is refused.
    let lapsed = call.queue(&host, json!({"action": "speed"})).await;
    let (_, claimed) = call.post("/agent/actions/claim", &a, json!({})).await;
    let late_claim = claimed["data"][0]["claim_id"]
        .as_str()
        .expect("claim")
        .to_owned();
    let events = call.events_of(&host, &lapsed, 10).await;
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0]["details"]["outcome"], "lease_expired");
    assert_eq!(events[0]["source"], "speed");
    let (status, _) = call
        .post(
            &format!("/agent/actions/{lapsed}/result"),
            &a,
            json!({"claim_id": late_claim, "speed": {"down_mbps": 10.0, "up_mbps": 5.0, "server": "s.example"}}),
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT);

    // The new machine's agent never claims: its action expires with an event.
    let offline = call
        .queue("AGT-NEW-0001", json!({"action": "capture", "seconds": 10}))
        .await;
    let events = call.events_of("AGT-NEW-0001", &offline, 10).await;
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0]["details"]["outcome"], "unclaimed");
    assert_eq!(events[0]["source"], "capture");

    // Rotation: the new credential works, the old one for the overlap; a revoked one never.
    let (status, rotated) = call.post("/agent/credential/rotate", &a, json!({})).await;
    assert_eq!(status, StatusCode::OK, "{rotated}");
    let a2 = rotated["data"]["credential"].as_str().expect("credential");
    assert_eq!(call.get("/agent/sync", a2).await.0, StatusCode::OK);
    assert_eq!(call.get("/agent/sync", &a).await.0, StatusCode::OK);
    let out = netops(
        &[
            "token",
            "revoke",
            "--tenant",
            "acme",
            "--name",
            "agent:AGT-NEW-0001",
        ],
        &served.db,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        call.get("/agent/sync", &b).await.0,
        StatusCode::UNAUTHORIZED
    );
}

/// The machine `host` of `GET /netdiag/machines`'s `agent` field once `until` holds of it,
/// within 15 s.
async fn agent_of(call: &Call<'_>, host: &str, until: impl Fn(&Value) -> bool) -> Value {
    let deadline = std::time::Instant::now() + Duration::from_secs(15);
    loop {
        let (_, machines) = call.get("/netdiag/machines", &call.served.token).await;
        let agent = machines["data"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|m| m["hostname"] == host)
            .map(|m| m["agent"].clone())
            .unwrap_or_default();
        if until(&agent) || std::time::Instant::now() > deadline {
            return agent;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// `netops serve` (what `cargo run` runs) starts the agents of the demo tenants' online
/// machines itself, with a 1 s action delay (`NETOPS_AGENT_ACTION_DELAY_SECONDS=1`) and the
/// shortened timings above (a 4 s claim deadline here): the online machine's actions come
/// back as events with their results; the offline machine, without an agent, has its action
/// end by expiry.
#[tokio::test]
async fn serve_runs_the_agents_of_the_demo_machines_online_only() {
    let served = Serve::seeded()
        .env("NETOPS_NO_AGENTS", "0")
        .env("NETOPS_AGENT_ACTION_DELAY_SECONDS", 1)
        .env("NETOPS_AGENT_POLL_SECONDS", 1)
        .env("NETOPS_ACTION_CLAIM_SECONDS", 4)
        .env("NETOPS_PASS_EVERY_SECONDS", 1)
        .start();
    let call = Call {
        http: Client::new(),
        served: &served,
    };
    let (_, machines) = call.get("/netdiag/machines", &served.token).await;
    let host_where = |status: &str| {
        machines["data"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|m| m["status"] == status)
            .and_then(|m| m["hostname"].as_str())
            .unwrap_or_else(|| panic!("a {status} machine"))
            .to_owned()
    };
    let (online, offline) = (host_where("online"), host_where("offline"));
    let agent = agent_of(&call, &online, |a| a["settings_applied_version"].is_u64()).await;
    // The demo agent reports the machine's own version, as its heartbeats do.
    let (_, machine) = call
        .get(&format!("/machines/{online}"), &served.token)
        .await;
    assert_eq!(
        agent["agent_version"], machine["data"]["agent_version"],
        "{agent}"
    );
    assert!(agent["agent_version"].is_string(), "{agent}");
    assert!(agent_of(&call, &offline, |_| true).await.is_null());

    let mut ids = Vec::new();
    for body in [
        json!({"action": "trace", "target": "www.example.com"}),
        json!({"action": "speed"}),
        json!({"action": "capture", "seconds": 10}),
    ] {
        ids.push(call.queue(&online, body).await);
    }
    let unclaimed = call.queue(&offline, json!({"action": "speed"})).await;
    let mut results = Vec::new();
    for id in &ids {
        let events = call.events_of(&online, id, 15).await;
        assert_eq!(events.len(), 1, "{id}: {events:?}");
        results.push(events[0].clone());
    }
    let [trace, speed, capture] = &results[..] else {
        unreachable!("three actions")
    };
    assert_eq!(trace["source"], "trace");
    assert_eq!(trace["details"]["target"], "www.example.com");
    let hops = trace["details"]["hops"].as_array().expect("hops");
    assert!(
        hops.len() >= 2
            && hops
                .iter()
                .all(|h| h["address"].is_string() && h["ms"].as_f64().is_some()),
        "{trace}"
    );
    assert_eq!(speed["source"], "speed");
    assert!(
        speed["details"]["down_mbps"].as_f64() > Some(0.0),
        "{speed}"
    );
    assert_eq!(capture["source"], "capture");
    assert_eq!(capture["details"]["seconds"], 10);
    assert!(
        capture["details"]["packets"].as_u64() > Some(0),
        "{capture}"
    );

    let events = call.events_of(&offline, &unclaimed, 15).await;
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0]["details"]["outcome"], "unclaimed", "{events:?}");
}

/// The real `netops serve` and the real `netops agent` (its simulated agents, real HTTP
/// clients), on the store the suite runs on (the
/// embedded file, or DynamoDB tables of their own when `NETOPS_TEST_STORE=dynamodb`), with
/// the shortened timings above (a 3 s claim deadline and lease here) and a 1 s action delay:
/// settings saved through the public API are applied by the agent within its 1 s poll, an
/// action comes back as an event with its result, and the action of a machine whose agent
/// never runs ends by expiry. The store holds one machine's NetDiag state and nothing else,
/// so that the server seeds no demo data (minutes on moto).
#[tokio::test]
async fn the_real_server_and_agent_close_the_loop_on_the_suites_store() {
    use netops_netdiag::model::{STATES, State, Verdict};
    use netops_shared::store::Stores;

    const ONLINE: &str = "AGT-E2E-0001";
    const OFFLINE: &str = "AGT-E2E-0002";
    let dir = std::sync::Arc::new(tempfile::tempdir().expect("dir"));
    let mut serve = Serve::new()
        .in_dir(dir.clone())
        .env("NETOPS_NO_LIVE", "1")
        .env("NETOPS_AGENT_POLL_SECONDS", 1)
        .env("NETOPS_ACTION_CLAIM_SECONDS", 3)
        .env("NETOPS_ACTION_LEASE_SECONDS", 3)
        .env("NETOPS_PASS_EVERY_SECONDS", 1);
    let (stores, store) = match crate::helpers::dynamo_test_endpoint() {
        Some(endpoint) => {
            let prefix = format!("e{:016x}-", crate::helpers::rand_u64());
            let tables = netops_store_dynamodb::DynamoStore::connect(
                &netops_store_dynamodb::DynamoConfig {
                    table_prefix: prefix.clone(),
                    endpoint: Some(endpoint.clone()),
                    region: Some("us-east-1".into()),
                    ..Default::default()
                },
                netops_shared::config::DEFAULT_RETENTION_DAYS,
            )
            .await
            .expect("connect");
            tables.ensure_tables().await.expect("tables");
            serve = serve
                .env("NETOPS_STORE", "dynamodb")
                .env("NETOPS_DYNAMODB_ENDPOINT", &endpoint)
                .env("NETOPS_DYNAMODB_TABLE_PREFIX", &prefix);
            (Stores::of(tables), Store::Dynamodb { endpoint, prefix })
        }
        None => {
            let db = dir.path().join("netops.db");
            let file = netops_store_sqlite::SqliteStore::open(&db).expect("open");
            (Stores::of(file), Store::File(db))
        }
    };
    let now = chrono::Utc::now();
    let state = State {
        hostname: ONLINE.into(),
        verdict: Verdict::OK,
        cause: None,
        since: now,
        last_measure_at: now,
        first_measure_at: now,
        open_alert: None,
    };
    stores
        .docs
        .put(
            "acme",
            STATES,
            vec![(ONLINE.into(), serde_json::to_value(state).expect("json"))],
        )
        .await
        .expect("state");
    let served = serve.start();
    let call = Call {
        http: Client::new(),
        served: &served,
    };
    let enroller = create_token_on(
        &store,
        "acme",
        &["--name", "enroll", "--scopes", "agent:enroll"],
    );
    let (status, _) = call.enroll(&enroller, OFFLINE).await;
    assert_eq!(status, StatusCode::OK);
    let mut agent = std::process::Command::new(env!("CARGO_BIN_EXE_netops"))
        .args(["agent", "--url", &served.base, "--token", &enroller])
        .args(["--hostname", ONLINE, "--action-delay-secs", "1"])
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("netops agent");
    let first = agent_of(&call, ONLINE, |a| a["settings_applied_version"].is_u64()).await;
    assert_eq!(first["agent_version"], "5.0.0-sim", "{first}");
    let before = first["settings_applied_version"]
        .as_u64()
        .unwrap_or_else(|| panic!("applied at the first sync: {first}"));
    let (status, _, _) = call
        .send(
            Method::PUT,
            &format!("/netdiag/machines/{ONLINE}/settings"),
            &served.token,
            Some(json!({"apps": ["erp.exe"]})),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let after = agent_of(&call, ONLINE, |a| {
        a["settings_applied_version"].as_u64() > Some(before)
    })
    .await;
    let id = call.queue(ONLINE, json!({"action": "speed"})).await;
    let unclaimed = call.queue(OFFLINE, json!({"action": "trace"})).await;
    let events = call.events_of(ONLINE, &id, 15).await;
    let expired = call.events_of(OFFLINE, &unclaimed, 15).await;
    agent.kill().expect("stop the agent");
    let _ = agent.wait();
    assert_eq!(after["settings_applied_version"], before + 1, "{after}");
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0]["source"], "speed");
    assert!(events[0]["details"]["down_mbps"].as_f64() > Some(0.0));
    assert_eq!(expired.len(), 1, "{expired:?}");
    assert_eq!(expired[0]["details"]["outcome"], "unclaimed", "{expired:?}");
    // The agent sent its machine's heartbeat through the collection API, with its credential.
    let beat = stores
        .docs
        .get("acme", netops_shared::pass::ACTIVITY, "machine-heartbeat")
        .await
        .expect("read")
        .unwrap_or_else(|| panic!("no heartbeat batch from the agent"));
    let at = beat.body["last_batch_at"].as_str().expect("last_batch_at");
    assert!(crate::helpers::time(&json!(at)) >= now, "{at}");
}
