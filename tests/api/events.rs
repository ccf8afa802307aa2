//! The API Gateway HTTP API (payload 2.0) events under `events/`: each parses with
//! `lambda_http`, is a route of the table in its own function's folder and, run through that
//! function's router as under Lambda, answers 2xx, its times in the one format of the answers;
//! and every route of the table has one.

use std::collections::BTreeSet;

use http::HeaderValue;
use netops_shared::routes::{self, Function, Match, ROUTES};
use netops_shared::scope::Scope;
use tower::ServiceExt;
use utoipa_axum::router::OpenApiRouter;

use crate::helpers::{TestApp, into_test_response};

/// The two devices (1001 with `port1` and `wan1`, and 1002) and the monitor (1001) that the
/// collect function's network and monitor events name.
async fn put_devices_and_monitor(app: &TestApp) {
    use serde_json::json;
    let now = chrono::Utc::now();
    let device = |id: i64| {
        json!({"id": id, "name": format!("PAR-FW-{id}"), "type": "firewall",
            "vendor": "Fortinet", "model": "FortiGate 100F", "ip": "10.10.0.1", "site_id": 1001,
            "site": "PAR", "status": "up", "firmware": "7.4.4", "serial": "FG0001",
            "last_seen_at": now, "uptime_seconds": 3600,
            "wan_links": [{"name": "wan1", "provider": "Orange Business", "medium": "fiber",
                "role": "primary", "bandwidth_down_mbps": 1000, "bandwidth_up_mbps": 1000,
                "public_ip": "198.51.100.1", "status": "up", "latency_ms": 5.0, "loss_pct": 0.0}],
            "interfaces": [{"name": "port1", "status": "up", "speed_mbps": 1000, "vlan": null,
                "description": "WAN", "in_bps": 0, "out_bps": 0, "errors_24h": 0}]})
    };
    let docs = app.stores.docs.as_ref();
    docs.put(
        "acme",
        netops_network::model::DEVICES,
        [1001, 1002]
            .into_iter()
            .map(|id| (netops_network::model::key(id), device(id)))
            .collect(),
    )
    .await
    .expect("devices");
    let monitor = json!({"id": 1001, "name": "Intranet", "type": "http",
        "target": "https://intranet.acme.local/health", "site": "PAR", "active": true,
        "status": "up", "interval_s": 60, "created_at": now, "last_check": null});
    docs.put(
        "acme",
        netops_alerts::model::MONITORS,
        vec![(netops_alerts::model::num_key(1001), monitor)],
    )
    .await
    .expect("monitor");
}

#[tokio::test]
async fn every_event_routes_to_its_function_and_succeeds() {
    let shared = TestApp::shared();
    let token = shared.full_token().await;
    // The collect function's events post observations: over a store of their own, so that
    // the shared demo data stays as the other tests read it, with a collect credential. The
    // job pings name the operations module's heartbeats, the databases' observations its
    // instances and checks, which are seeded for them; the network's name two devices and
    // the checks a monitor, written alone (seeding those modules would cost a minute on
    // moto).
    let collecting = TestApp::with_modules(&[
        Function::Firewall,
        Function::Operations,
        Function::Databases,
    ])
    .await;
    put_devices_and_monitor(&collecting).await;
    let collector = collecting.token("acme", Scope::COLLECT).await;
    // The agent function's events: an enrollment token enrolls `PAR-LT-0042`, whose agent
    // credential calls the other routes, one of them posting the result of an action it
    // claimed.
    let agents = TestApp::with_modules(&[Function::Netdiag]).await;
    let (enroller, agent) = crate::helpers::agent_tokens(&agents.stores).await;
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../events");
    // The operation ids the events call.
    let mut covered = BTreeSet::new();
    // Times found in the answers, and those not in the one format.
    let (mut times, mut misshapen) = (0, Vec::new());
    let mut dirs: Vec<_> = std::fs::read_dir(&root)
        .expect("events/")
        .flatten()
        .collect();
    dirs.sort_by_key(|d| d.file_name());
    for dir in dirs {
        let function = dir.file_name().to_string_lossy().into_owned();
        let module = netops::modules()
            .into_iter()
            .find(|m| m.function.name() == function)
            .unwrap_or_else(|| panic!("events/{function}: no such function"));
        let (router, _) = OpenApiRouter::new()
            .merge((module.routes)())
            .split_for_parts();
        let (app, agent_token) = match module.function {
            Function::Collect => (&collecting, &collector),
            Function::Agent => (&agents, &agent),
            _ => (shared, &token),
        };
        let lambda = netops_shared::http::app(router, app.state.clone());
        let mut files: Vec<_> = std::fs::read_dir(dir.path())
            .expect("dir")
            .flatten()
            .collect();
        files.sort_by_key(|f| f.file_name());
        for file in files {
            let name = format!("events/{function}/{}", file.file_name().to_string_lossy());
            let text = crate::helpers::event_text(&file.path(), module.function);
            let mut req =
                lambda_http::request::from_str(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
            let event: serde_json::Value = serde_json::from_str(&text).expect("JSON");
            let gateway_id = event["requestContext"]["requestId"]
                .as_str()
                .map(str::to_owned);
            assert!(gateway_id.is_some(), "{name}: no requestContext.requestId");
            let path = req.uri().path().to_owned();
            let rest = path
                .strip_prefix(routes::BASE_PATH)
                .unwrap_or_else(|| panic!("{name}: not under the base"));
            let Match::Found(route) = routes::find(req.method(), rest) else {
                panic!("{name}: {} {path} is not in the route table", req.method())
            };
            assert_eq!(
                route.function.name(),
                function,
                "{name} routes to {}",
                route.function.name()
            );
            let token = if route.op == "enroll_agent" {
                &enroller
            } else {
                agent_token
            };
            req.headers_mut().insert(
                http::header::AUTHORIZATION,
                HeaderValue::from_str(&format!("Bearer {token}")).expect("header"),
            );
            let res =
                into_test_response(lambda.clone().oneshot(req).await.expect("infallible")).await;
            assert!(
                res.status.is_success(),
                "{name}: {} {}",
                res.status,
                res.body
            );
            assert_eq!(
                res.header("x-request-id"),
                gateway_id.as_deref(),
                "{name}: API Gateway's request id is ours"
            );
            times += check_times(&res.body, &name, &mut misshapen);
            covered.insert(route.op);
        }
    }
    assert!(
        misshapen.is_empty(),
        "times not in RFC 3339 UTC with milliseconds:\n{}",
        misshapen[..misshapen.len().min(40)].join("\n")
    );
    assert!(times > 1_000, "{times} times in the answers");
    let missing: Vec<String> = ROUTES
        .iter()
        .filter(|r| !covered.contains(r.op))
        .map(|r| {
            format!(
                "{} {}{}: events/{}/{}.json",
                r.method,
                routes::BASE_PATH,
                r.path,
                r.function.name(),
                r.op
            )
        })
        .collect();
    assert!(
        missing.is_empty(),
        "routes without an API Gateway event (`cargo xtask routes` writes one for each):\n{}",
        missing.join("\n")
    );
}

/// The times of an answer (its strings that begin as a date-time) are in the one format of
/// the answers, RFC 3339 in UTC with milliseconds (`2026-11-28T16:00:02.232Z`,
/// docs/http-conventions.md): puts those that are not in `misshapen` with their place, and
/// returns how many times it saw.
fn check_times(value: &serde_json::Value, place: &str, misshapen: &mut Vec<String>) -> usize {
    const SHAPE: &[u8] = b"0000-00-00T00:00:00.000Z";
    let fits = |text: &[u8], n: usize| {
        text.len() >= n
            && SHAPE[..n].iter().zip(text).all(|(s, t)| {
                if *s == b'0' {
                    t.is_ascii_digit()
                } else {
                    s == t
                }
            })
    };
    match value {
        serde_json::Value::String(text) if fits(text.as_bytes(), 11) => {
            if text.len() != SHAPE.len() || !fits(text.as_bytes(), SHAPE.len()) {
                misshapen.push(format!("{place}: {text}"));
            }
            1
        }
        serde_json::Value::Array(items) => items
            .iter()
            .map(|v| check_times(v, &format!("{place}[]"), misshapen))
            .sum(),
        serde_json::Value::Object(fields) => fields
            .iter()
            .map(|(k, v)| check_times(v, &format!("{place} {k}"), misshapen))
            .sum(),
        _ => 0,
    }
}
