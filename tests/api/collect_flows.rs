//! The flows kinds of the collection API (docs/collect.md): agent flows, gateway flows and
//! failed connections posted by collect credentials appear in the flows routes with their
//! bytes, counted once however often they are sent; bad lines are refused with their codes.

use chrono::{Duration, Utc};
use http::StatusCode;
use netops_shared::routes::Function;
use netops_shared::scope::Scope;
use netops_shared::store::usage::Usage;
use serde_json::{Value, json};

use crate::collect::{post, refusals};
use crate::helpers::{TestApp, stamp};

const NDJSON: &str = "application/x-ndjson";

/// The remote address the agent flows of these tests reach, and its host name.
const REMOTE: &str = "198.51.100.201";
const REMOTE_HOST: &str = "collect-flows.example";
/// The remote address of the gateway flows.
const GATEWAY_REMOTE: &str = "203.0.113.9";

fn lines(lines: &[Value]) -> Vec<u8> {
    lines
        .iter()
        .map(Value::to_string)
        .collect::<Vec<_>>()
        .join("\n")
        .into_bytes()
}

/// The first machine of tenant acme: host name and address.
async fn machine(app: &TestApp, read: &str) -> (String, String) {
    let res = app.get("/machines?limit=1", read).await;
    assert_eq!(res.status, StatusCode::OK, "{}", res.body);
    let m = &res.items()[0];
    (
        m["hostname"].as_str().expect("hostname").to_owned(),
        m["ip"].as_str().expect("ip").to_owned(),
    )
}

/// Bytes and flows of `ip` in `/flows/destinations` with `query`; zero when absent.
async fn destination(app: &TestApp, read: &str, query: &str, ip: &str) -> (u64, u64, Value) {
    let res = app
        .get(&format!("/flows/destinations?limit=500&{query}"), read)
        .await;
    assert_eq!(res.status, StatusCode::OK, "{}", res.body);
    res.items()
        .iter()
        .find(|d| d["remote_ip"] == ip)
        .map(|d| {
            (
                d["bytes"].as_u64().expect("bytes"),
                d["flows"].as_u64().expect("flows"),
                d["seen_by"].clone(),
            )
        })
        .unwrap_or((0, 0, Value::Null))
}

/// The total of `/flows/explore` over the last 24 hours for `source` and `filter`.
async fn explored(app: &TestApp, read: &str, dims: &str, source: &str, filter: &str) -> f64 {
    let res = app
        .get(
            &format!(
                "/flows/explore?dims={dims}&source={source}&period=24h&filter={}",
                filter.replace(' ', "%20").replace('=', "%3D")
            ),
            read,
        )
        .await;
    assert_eq!(res.status, StatusCode::OK, "{}", res.body);
    res.body["data"]["total"].as_f64().expect("total")
}

/// `machine`'s bytes sent in `/flows/talkers` over the last 24 hours.
async fn bytes_out(app: &TestApp, read: &str, machine: &str) -> u64 {
    let res = app.get("/flows/talkers?period=24h&limit=200", read).await;
    assert_eq!(res.status, StatusCode::OK, "{}", res.body);
    res.items()
        .iter()
        .find(|t| t["machine"] == machine)
        .map_or(0, |t| t["bytes_out"].as_u64().expect("bytes_out"))
}

/// `machine`'s total bytes in `/flows/summary` over the last 24 hours.
async fn summary_bytes(app: &TestApp, read: &str, machine: &str) -> u64 {
    let res = app
        .get(
            &format!("/flows/summary?period=24h&machine={machine}"),
            read,
        )
        .await;
    assert_eq!(res.status, StatusCode::OK, "{}", res.body);
    res.body["data"]["totals"]["bytes"].as_u64().expect("bytes")
}

#[tokio::test]
async fn agent_flows_collected_appear_in_every_flows_route_once() {
    let app = TestApp::with_modules(&[Function::Flows]).await;
    let read = app
        .token("acme", &[Scope::ReadFlows, Scope::ReadMachines])
        .await;
    let collect = app.token("acme", &[Scope::CollectFlows]).await;
    let (host, ip) = machine(&app, &read).await;
    let (talked, summed) = (
        bytes_out(&app, &read, &host).await,
        summary_bytes(&app, &read, &host).await,
    );
    let now = Utc::now();
    let flow = |secs: i64, bytes: u64| {
        json!({"start": stamp(now - Duration::seconds(secs)),
            "end": stamp(now - Duration::seconds(secs - 5)), "machine": host,
            "process": "collect-test.exe", "user": "julie.martin", "local_port": 51234,
            "remote_ip": REMOTE, "remote_port": 443, "remote_host": REMOTE_HOST,
            "protocol": "TCP", "direction": "outbound", "bytes": bytes, "packets": 12})
    };
    let mut bad_ip = flow(40, 1);
    bad_ip["remote_ip"] = json!("not.an.address");
    let mut unknown = flow(40, 1);
    unknown["machine"] = json!("NO-SUCH-HOST");
    let mut backwards = flow(40, 1);
    backwards["end"] = json!(stamp(now - Duration::seconds(400)));
    let mut missing = flow(40, 1);
    missing.as_object_mut().expect("object").remove("bytes");
    let mut body = lines(&[
        flow(60, 1000),
        flow(50, 2500),
        flow(60, 1000),
        unknown,
        bad_ip,
        backwards,
        missing,
        flow(-3600, 7),
        flow(100 * 86_400, 7),
        // Late, within the retention: counted in its own hour.
        flow(3 * 86_400, 40),
    ]);
    body.extend_from_slice(b"\n{not json");
    let first = post(&app, "flow", &collect, NDJSON, body.clone(), &[]).await;
    assert_eq!(first.status, StatusCode::OK, "{}", first.body);
    let data = &first.body["data"];
    // The repeated line is accepted, and stored and counted once.
    assert_eq!(data["accepted"], 4, "{data}");
    assert_eq!(
        refusals(data),
        [
            (4, "unknown_reference"),
            (5, "invalid_observation"),
            (6, "invalid_observation"),
            (7, "invalid_observation"),
            (8, "time_out_of_range"),
            (9, "time_out_of_range"),
            (11, "invalid_line"),
        ]
    );
    let records = app
        .get(
            &format!("/flows?machine={host}&remote_ip={REMOTE}&period=1h"),
            &read,
        )
        .await;
    assert_eq!(records.status, StatusCode::OK, "{}", records.body);
    let mut bytes: Vec<u64> = records
        .items()
        .iter()
        .map(|f| f["bytes"].as_u64().expect("bytes"))
        .collect();
    bytes.sort_unstable();
    assert_eq!(bytes, [1000, 2500], "{}", records.body);
    let r = &records.items()[0];
    assert_eq!(
        (&r["local_ip"], &r["remote_host"], &r["process"]),
        (&json!(ip), &json!(REMOTE_HOST), &json!("collect-test.exe"))
    );
    let mine = format!("period=24h&machine={host}");
    assert_eq!(destination(&app, &read, &mine, REMOTE).await.0, 3500);
    assert_eq!(destination(&app, &read, "period=24h", REMOTE).await.0, 3500);
    assert_eq!(destination(&app, &read, "period=24h", REMOTE).await.1, 2);
    assert_eq!(destination(&app, &read, "period=7d", REMOTE).await.0, 3540);
    assert_eq!(bytes_out(&app, &read, &host).await, talked + 3500);
    assert_eq!(summary_bytes(&app, &read, &host).await, summed + 3500);
    let filter = format!("externe = {REMOTE_HOST}");
    assert_eq!(
        explored(&app, &read, "processus", "agent", &filter).await,
        3500.0
    );
    assert_eq!(
        explored(&app, &read, "service", "all", &filter).await,
        3500.0
    );
    // The same batch again changes nothing; the same flow in another batch is counted once.
    let again = post(&app, "flow", &collect, NDJSON, body, &[]).await;
    assert_eq!(again.header("idempotent-replayed"), Some("true"));
    let other = post(
        &app,
        "flow",
        &collect,
        NDJSON,
        lines(&[flow(50, 2500), flow(30, 100)]),
        &[],
    )
    .await;
    assert_eq!(other.body["data"]["accepted"], 2, "{}", other.body);
    assert_eq!(destination(&app, &read, "period=24h", REMOTE).await.0, 3600);
    assert_eq!(bytes_out(&app, &read, &host).await, talked + 3600);
    assert_eq!(
        explored(&app, &read, "processus", "agent", &filter).await,
        3600.0
    );
    // Another tenant sees none of it.
    let globex = app.token("globex", &[Scope::ReadFlows]).await;
    assert_eq!(destination(&app, &globex, "period=24h", REMOTE).await.0, 0);
    // A DNS credential does not send flows.
    let dns = app.token("acme", &[Scope::CollectDns]).await;
    let res = post(&app, "flow", &dns, NDJSON, lines(&[flow(10, 1)]), &[]).await;
    assert_eq!(res.status, StatusCode::FORBIDDEN);
    assert_eq!(res.body["scope"], "collect:flows");
}

#[tokio::test]
async fn gateway_flows_collected_count_devices_without_agent_and_agent_machines_once() {
    let app = TestApp::with_modules(&[Function::Flows, Function::Firewall]).await;
    let read = app
        .token(
            "acme",
            &[Scope::ReadFlows, Scope::ReadMachines, Scope::ReadFirewall],
        )
        .await;
    let collect = app.token("acme", &[Scope::CollectFlows]).await;
    let (host, machine_ip) = machine(&app, &read).await;
    let devices = app.get("/firewall/devices", &read).await;
    assert_eq!(devices.status, StatusCode::OK, "{}", devices.body);
    let device = &devices.items()[0];
    let (exporter, device_name) = (
        device["ip"].as_str().expect("ip").to_owned(),
        device["name"].as_str().expect("name").to_owned(),
    );
    let now = Utc::now();
    let flow = |src: &str, bytes: u64| {
        json!({"start": stamp(now - Duration::seconds(60)), "end": stamp(now - Duration::seconds(30)),
            "exporter": exporter, "input_if": 1, "output_if": 2, "src_ip": src, "src_port": 51234,
            "dst_ip": GATEWAY_REMOTE, "dst_port": 443, "protocol": 6, "bytes": bytes, "packets": 90})
    };
    // A device without agent, an agent machine, and a ping named by its device.
    let agentless = flow("10.99.50.7", 123_456);
    let of_agent = flow(&machine_ip, 1000);
    let ping = json!({"start": stamp(now - Duration::seconds(20)), "end": stamp(now - Duration::seconds(19)),
        "exporter": "192.0.2.77", "device": device_name, "src_ip": "10.99.50.7",
        "dst_ip": GATEWAY_REMOTE, "protocol": 1, "bytes": 10, "packets": 1});
    let mut unknown = flow("10.99.50.8", 5);
    unknown["exporter"] = json!("192.0.2.250");
    let mut stranger = flow("10.99.50.8", 5);
    stranger["sampling"] = json!(1);
    let mut no_port = flow("10.99.50.8", 5);
    no_port["dst_port"] = json!("https");
    let first = post(
        &app,
        "gateway-flow",
        &collect,
        NDJSON,
        lines(&[
            agentless.clone(),
            of_agent,
            ping,
            unknown,
            stranger,
            no_port,
        ]),
        &[],
    )
    .await;
    assert_eq!(first.status, StatusCode::OK, "{}", first.body);
    let data = &first.body["data"];
    assert_eq!(data["accepted"], 3, "{data}");
    assert_eq!(
        refusals(data),
        [
            (4, "unknown_reference"),
            (5, "invalid_observation"),
            (6, "invalid_observation"),
        ]
    );
    // The gateways saw the three flows; under `all` the agent machine's is the agent's.
    let gateway = destination(&app, &read, "period=24h&source=gateway", GATEWAY_REMOTE).await;
    assert_eq!((gateway.0, gateway.1), (124_466, 3));
    let all = destination(&app, &read, "period=24h&source=all", GATEWAY_REMOTE).await;
    assert_eq!((all.0, all.2), (123_466, json!(["gateway"])));
    assert_eq!(
        destination(&app, &read, "period=24h", GATEWAY_REMOTE)
            .await
            .0,
        0
    );
    let filter = format!("externe = {GATEWAY_REMOTE}");
    assert_eq!(
        explored(&app, &read, "interne", "gateway", &filter).await,
        124_466.0
    );
    assert_eq!(
        explored(&app, &read, "proto", "all", &filter).await,
        123_466.0
    );
    assert_eq!(
        explored(
            &app,
            &read,
            "interne",
            "gateway",
            &format!("{filter} et interne = {host}")
        )
        .await,
        1000.0
    );
    assert_eq!(
        explored(
            &app,
            &read,
            "passerelle",
            "gateway",
            &format!("{filter} et passerelle = {device_name}")
        )
        .await,
        124_466.0
    );
    assert_eq!(
        explored(
            &app,
            &read,
            "proto",
            "gateway",
            &format!("{filter} et proto = ICMP")
        )
        .await,
        10.0
    );
    // The same flow in another batch is counted once.
    let again = post(
        &app,
        "gateway-flow",
        &collect,
        NDJSON,
        lines(&[agentless]),
        &[],
    )
    .await;
    assert_eq!(again.body["data"]["accepted"], 1, "{}", again.body);
    let gateway = destination(&app, &read, "period=24h&source=gateway", GATEWAY_REMOTE).await;
    assert_eq!(gateway.0, 124_466);
}

#[tokio::test]
async fn failed_connections_collected_appear_in_the_blocked_list_once() {
    let app = TestApp::with_modules(&[Function::Flows]).await;
    let read = app
        .token("acme", &[Scope::ReadFlows, Scope::ReadMachines])
        .await;
    let collect = app.token("acme", &[Scope::CollectFlows]).await;
    let (host, _) = machine(&app, &read).await;
    let at = stamp(Utc::now() - Duration::seconds(30));
    let failure = json!({"at": at, "machine": host, "type": "timeout", "process": "collect-test.exe",
        "remote_ip": REMOTE, "remote_port": 8443, "protocol": "TCP"});
    let mut bad = failure.clone();
    bad["type"] = json!("lost");
    let res = post(
        &app,
        "flow-failure",
        &collect,
        NDJSON,
        lines(&[failure.clone(), bad, failure.clone()]),
        &[],
    )
    .await;
    assert_eq!(res.status, StatusCode::OK, "{}", res.body);
    assert_eq!(refusals(&res.body["data"]), [(2, "invalid_observation")]);
    let again = post(
        &app,
        "flow-failure",
        &collect,
        NDJSON,
        lines(&[failure]),
        &[],
    )
    .await;
    assert_eq!(again.status, StatusCode::OK, "{}", again.body);
    let blocked = app
        .get(
            &format!("/flows/blocked?machine={host}&type=timeout&period=1h&limit=1000"),
            &read,
        )
        .await;
    assert_eq!(blocked.status, StatusCode::OK, "{}", blocked.body);
    let mine: Vec<&Value> = blocked
        .items()
        .iter()
        .filter(|b| b["process"] == "collect-test.exe")
        .collect();
    assert_eq!(mine.len(), 1, "{}", blocked.body);
    assert_eq!(
        (
            &mine[0]["remote_ip"],
            &mine[0]["remote_port"],
            &mine[0]["user"]
        ),
        (&json!(REMOTE), &json!(8443), &json!("inconnu"))
    );
}

/// What a gateway's flows cost to store on DynamoDB, every write of the request counted
/// (the records' packs and their index copies, the rollups and their batch marker, the
/// series' extent, the ingestion log), as DynamoDB bills them by item size (the test
/// command's moto server reports that). The records cost a few hundredths of a unit each in
/// packs; the rollups cost 2 units per row a batch touches (a transaction), and the flows
/// module adds about four rows per distinct pair of outside endpoint and inside machine of
/// an hour: a batch whose flows share their pairs (a site's hosts reaching a few services)
/// stays under half a unit a flow (issue 34), one whose every flow is a new pair costs
/// 8 to 15. The figures are printed for `docs/cost-model.md`.
#[tokio::test]
async fn a_gateways_flows_cost_at_most_half_a_write_unit_each_on_dynamodb_when_they_share_endpoints()
 {
    let Some(endpoint) = crate::aws::endpoint() else {
        return;
    };
    // The firewall's devices alone: the gateway's exporter (the flows' own demo data would
    // take moto minutes to load).
    let app = TestApp::over_dynamodb(&endpoint, &[Function::Firewall]).await;
    let read = app.token("acme", &[Scope::ReadFirewall]).await;
    let collect = app.token("acme", &[Scope::CollectFlows]).await;
    let devices = app.get("/firewall/devices", &read).await;
    assert_eq!(devices.status, StatusCode::OK, "{}", devices.body);
    let exporter = devices.items()[0]["ip"].as_str().expect("ip").to_owned();
    const PORTS: [u32; 4] = [443, 80, 53, 22];
    let now = Utc::now();
    // Two seconds of a busy gateway sent in one batch (whole seconds, as exporters stamp
    // them): 3,000 flows of 20 inside addresses reaching 10 outside services, or 600 of 200
    // reaching 97 on four ports (every flow a pair of its own; fewer, so that its hundreds
    // of rollup transactions stay within moto's time beside the other tests).
    let batch = |minute: i64, count: u32, inside: u32, outside: u32| -> Vec<Value> {
        (0..count)
            .map(|i| {
                let start = now - Duration::seconds(60 * minute + i64::from(i % 2));
                json!({"start": stamp(start), "end": stamp(start + Duration::seconds(30)),
                    "exporter": exporter, "input_if": 1, "output_if": 2,
                    "src_ip": format!("10.99.{}.{}", i % inside % 50, 1 + i % inside / 50),
                    "src_port": 40_000 + i % 20_000,
                    "dst_ip": format!("203.0.113.{}", i % outside), "dst_port": PORTS[(i % 4) as usize],
                    "protocol": 6, "bytes": 1000 + i * 37, "packets": 1 + i % 90})
            })
            .collect()
    };
    let mut per_flow = Vec::new();
    for (name, flows) in [
        ("shared pairs", batch(2, 3000, 20, 10)),
        ("a pair each", batch(3, 600, 200, 97)),
    ] {
        let ((res, counted), calls) = Usage::tracing(Usage::measure(post(
            &app,
            "gateway-flow",
            &collect,
            NDJSON,
            lines(&flows),
            &[],
        )))
        .await;
        assert_eq!(res.status, StatusCode::OK, "{}", res.body);
        assert_eq!(res.body["data"]["accepted"], flows.len(), "{}", res.body);
        let mut ops = std::collections::BTreeMap::<&str, usize>::new();
        for call in &calls {
            *ops.entry(call.operation.as_str()).or_default() += 1;
        }
        let each = counted.write_units / flows.len() as f64;
        eprintln!(
            "{} gateway flows, {name}: {} write units ({each:.3} a flow), {} read units, \
             calls {ops:?}",
            flows.len(),
            counted.write_units,
            counted.read_units
        );
        per_flow.push(each);
    }
    assert!(per_flow[0] <= 0.5, "{per_flow:?} write units a flow");
    // The rollups' rows are what the second batch pays for: its records cost the first's.
    assert!(per_flow[1] > 4.0 * per_flow[0], "{per_flow:?}");
}
