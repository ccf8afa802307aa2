//! Network flows (docs/modules.md#flows): detailed records, destinations, summary, talkers,
//! failed connections and the explorer, through HTTP as a user calls them.

use std::collections::HashMap;

use chrono::{DateTime, Duration, DurationRound, Utc};
use http::StatusCode;
use netops_flows::model::{Direction, RECORDS, StoredFlow};
use netops_flows::talkers::{self, Talkers};
use netops_shared::scope::Scope;
use netops_shared::store::Filter;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{Value, json};

use crate::helpers::{TestApp, edge_windows, stamp, walk};

async fn flows_token(app: &TestApp) -> String {
    app.token("acme", &[Scope::ReadFlows]).await
}

fn enc(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or(0)
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or(0.0)
}

fn t(v: &Value) -> DateTime<Utc> {
    v.as_str().and_then(|s| s.parse().ok()).expect("date-time")
}

// ---------- /flows ----------

#[tokio::test]
async fn flows_lists_records_newest_first_with_every_field_and_the_default_window() {
    let app = TestApp::shared();
    let token = flows_token(app).await;
    let res = app.get("/flows", &token).await;
    assert_eq!(res.status, StatusCode::OK, "{}", res.body);
    assert_eq!(res.body["meta"]["limit"], 100);
    assert!(
        res.body["meta"]["next_cursor"].is_string(),
        "a day of flows holds more than 100 records"
    );
    assert!(res.body["meta"].get("window_capped").is_none());
    let w = &res.body["meta"]["window"];
    assert_eq!(
        (t(&w["to"]) - t(&w["from"])).num_hours(),
        24,
        "default period is 24h"
    );
    let items = res.items();
    assert_eq!(items.len(), 100);
    for r in items {
        for field in [
            "id",
            "time",
            "machine",
            "process",
            "user",
            "local_ip",
            "local_port",
            "remote_ip",
            "remote_port",
            "protocol",
            "direction",
            "bytes",
            "listening",
            "country",
            "operator",
        ] {
            assert!(!r[field].is_null(), "record lacks {field}: {r}");
        }
        assert!(r.get("remote_host").is_some());
        assert_eq!(
            r["listening"], false,
            "listening sockets are hidden by default"
        );
    }
    let times: Vec<DateTime<Utc>> = items.iter().map(|r| t(&r["time"])).collect();
    assert!(times.windows(2).all(|p| p[0] >= p[1]), "newest first");
}

#[tokio::test]
async fn flows_window_longer_than_seven_days_is_cut_back_and_flagged() {
    let app = TestApp::shared();
    let token = flows_token(app).await;
    let res = app.get("/flows?period=30d&limit=5", &token).await;
    assert_eq!(res.status, StatusCode::OK);
    assert_eq!(res.body["meta"]["window_capped"], true);
    let w = &res.body["meta"]["window"];
    assert_eq!((t(&w["to"]) - t(&w["from"])).num_days(), 7);
    let res = app.get("/flows?period=7d&limit=5", &token).await;
    assert!(res.body["meta"].get("window_capped").is_none());
    app.get("/flows?period=2h", &token)
        .await
        .assert_invalid("period");
    app.get("/flows?from=yesterday", &token)
        .await
        .assert_invalid("from");
}

#[tokio::test]
async fn flows_listening_sockets_appear_only_with_include_listening_1() {
    let app = TestApp::shared();
    let token = flows_token(app).await;
    let host = "PAR-SRV-0001";
    // One window for both walks: the default one ends at each request's now, and a record
    // leaving it between the walks would miscount.
    let to = Utc::now();
    let window = format!("from={}&to={}", stamp(to - Duration::hours(24)), stamp(to));
    let hidden = walk(
        app,
        &format!("/flows?machine={host}&limit=500&{window}"),
        &token,
    )
    .await;
    assert!(hidden.iter().all(|r| r["listening"] == false));
    let shown = walk(
        app,
        &format!("/flows?machine={host}&limit=500&include_listening=1&{window}"),
        &token,
    )
    .await;
    let listening: Vec<&Value> = shown.iter().filter(|r| r["listening"] == true).collect();
    assert!(!listening.is_empty(), "servers have listening sockets");
    assert_eq!(shown.len(), hidden.len() + listening.len());
    app.get("/flows?include_listening=2", &token)
        .await
        .assert_invalid("include_listening");
    app.get("/flows?include_listening=yes", &token)
        .await
        .assert_invalid("include_listening");
}

#[tokio::test]
async fn flows_machine_filter_is_exact_and_an_unknown_machine_finds_nothing() {
    let app = TestApp::shared();
    let token = flows_token(app).await;
    let res = app
        .get("/flows?machine=PAR-SRV-0001&limit=200", &token)
        .await;
    assert!(!res.items().is_empty());
    assert!(res.items().iter().all(|r| r["machine"] == "PAR-SRV-0001"));
    for other in ["PAR-SRV-000", "par-srv-0001", "NOPE"] {
        let res = app.get(&format!("/flows?machine={other}"), &token).await;
        assert_eq!(res.status, StatusCode::OK);
        assert!(res.items().is_empty(), "{other} is not an exact host name");
    }
}

#[tokio::test]
async fn flows_filters_protocol_direction_port_and_reject_bad_values() {
    let app = TestApp::shared();
    let token = flows_token(app).await;
    let udp = app.get("/flows?protocol=UDP&limit=300", &token).await;
    assert!(!udp.items().is_empty());
    assert!(udp.items().iter().all(|r| r["protocol"] == "UDP"));
    let inbound = app.get("/flows?direction=inbound&limit=300", &token).await;
    assert!(!inbound.items().is_empty());
    assert!(inbound.items().iter().all(|r| r["direction"] == "inbound"));
    let https = app.get("/flows?remote_port=443&limit=300", &token).await;
    assert!(!https.items().is_empty());
    assert!(https.items().iter().all(|r| r["remote_port"] == 443));
    app.get("/flows?protocol=ICMP", &token)
        .await
        .assert_invalid("protocol");
    app.get("/flows?direction=sideways", &token)
        .await
        .assert_invalid("direction");
    app.get("/flows?remote_port=https", &token)
        .await
        .assert_invalid("remote_port");
    app.get("/flows?remote_port=70000", &token)
        .await
        .assert_invalid("remote_port");
}

#[tokio::test]
async fn flows_remote_ip_is_a_prefix_process_a_partial_match_and_destination_searches_address_and_host()
 {
    let app = TestApp::shared();
    let token = flows_token(app).await;
    let res = app.get("/flows?remote_ip=52.&limit=300", &token).await;
    assert!(!res.items().is_empty());
    assert!(res.items().iter().all(|r| {
        r["remote_ip"]
            .as_str()
            .is_some_and(|ip| ip.starts_with("52."))
    }));
    let res = app.get("/flows?process=TEAMS&limit=300", &token).await;
    assert!(!res.items().is_empty());
    assert!(res.items().iter().all(|r| {
        r["process"]
            .as_str()
            .is_some_and(|p| p.to_lowercase().contains("teams"))
    }));
    let by_host = app
        .get("/flows?destination=MICROSOFT&limit=300", &token)
        .await;
    assert!(!by_host.items().is_empty());
    assert!(by_host.items().iter().all(|r| {
        r["remote_host"]
            .as_str()
            .is_some_and(|h| h.contains("microsoft"))
            || r["remote_ip"]
                .as_str()
                .is_some_and(|i| i.contains("microsoft"))
    }));
    let by_ip = app.get("/flows?destination=8.8.8&limit=300", &token).await;
    assert!(!by_ip.items().is_empty());
    assert!(
        by_ip
            .items()
            .iter()
            .all(|r| r["remote_ip"].as_str().is_some_and(|i| i.contains("8.8.8")))
    );
}

#[tokio::test]
async fn flows_pages_walk_every_record_once_and_cursors_are_bound_to_filters() {
    let app = TestApp::shared();
    let token = flows_token(app).await;
    let all = walk(app, "/flows?machine=PAR-SRV-0001&limit=500", &token).await;
    let paged = walk(app, "/flows?machine=PAR-SRV-0001&limit=37", &token).await;
    let ids = |v: &Vec<Value>| {
        v.iter()
            .map(|r| r["id"].as_str().unwrap_or("").to_owned())
            .collect::<Vec<_>>()
    };
    assert!(all.len() > 37);
    assert_eq!(
        ids(&all),
        ids(&paged),
        "small pages give the same records in the same order"
    );
    let unique: std::collections::HashSet<_> = ids(&all).into_iter().collect();
    assert_eq!(unique.len(), all.len());
    let res = app.get("/flows?limit=2000", &token).await;
    assert_eq!(res.body["meta"]["limit"], 500, "limit is clamped to 500");
    app.get("/flows?limit=0", &token)
        .await
        .assert_invalid("limit");
    let first = app.get("/flows?protocol=TCP&limit=5", &token).await;
    let cursor = first.body["meta"]["next_cursor"]
        .as_str()
        .expect("cursor")
        .to_owned();
    let res = app
        .get(
            &format!("/flows?protocol=UDP&limit=5&cursor={cursor}"),
            &token,
        )
        .await;
    assert_eq!(res.status, StatusCode::BAD_REQUEST);
    assert_eq!(res.body["error"], "invalid_cursor");
    // The cursor is bound to the window parameters too: a next page asked with another
    // window is refused rather than read over the first page's window without a word.
    let first = app.get("/flows?period=24h&limit=5", &token).await;
    let cursor = first.body["meta"]["next_cursor"]
        .as_str()
        .expect("cursor")
        .to_owned();
    let same = app
        .get(
            &format!("/flows?period=24h&limit=5&cursor={cursor}"),
            &token,
        )
        .await;
    assert_eq!(same.status, StatusCode::OK, "{}", same.body);
    for other in ["period=7d", "period=1h", "from=2026-01-01T00:00:00Z", ""] {
        let res = app
            .get(&format!("/flows?{other}&limit=5&cursor={cursor}"), &token)
            .await;
        assert_eq!(res.status, StatusCode::BAD_REQUEST, "{other}");
        assert_eq!(res.body["error"], "invalid_cursor", "{other}");
    }
}

#[tokio::test]
async fn every_flows_route_needs_the_read_flows_scope() {
    let app = TestApp::shared();
    let token = app.token("acme", &[Scope::ReadMachines]).await;
    for path in [
        "/flows",
        "/flows/destinations",
        "/flows/summary",
        "/flows/talkers",
        "/flows/blocked",
        "/flows/explore",
    ] {
        let res = app.get(path, &token).await;
        assert_eq!(res.status, StatusCode::FORBIDDEN, "{path}");
        assert_eq!(res.body["scope"], "read:flows", "{path}");
    }
}

#[tokio::test]
async fn a_tenant_sees_only_its_own_flows() {
    let app = TestApp::shared();
    let token = app.token("globex", &[Scope::ReadFlows]).await;
    let res = app.get("/flows?limit=500", &token).await;
    assert!(!res.items().is_empty());
    assert!(
        res.items()
            .iter()
            .all(|r| r["machine"].as_str().is_some_and(|m| m.starts_with("gx-")))
    );
    let res = app.get("/flows?machine=PAR-SRV-0001", &token).await;
    assert!(res.items().is_empty());
    let talkers = app.get("/flows/talkers?limit=200", &token).await;
    assert!(
        talkers
            .items()
            .iter()
            .all(|r| r["machine"].as_str().is_some_and(|m| m.starts_with("gx-")))
    );
}

// ---------- /flows/destinations ----------

#[tokio::test]
async fn destinations_are_sorted_by_volume_and_default_to_agent_data() {
    let app = TestApp::shared();
    let token = flows_token(app).await;
    let res = app.get("/flows/destinations", &token).await;
    assert_eq!(res.status, StatusCode::OK, "{}", res.body);
    assert_eq!(res.body["meta"]["limit"], 100);
    assert_eq!(res.body["meta"]["source"], "agent");
    let items = res.items();
    assert!(!items.is_empty());
    assert!(
        items.iter().all(|d| d.get("seen_by").is_none()),
        "seen_by only with source=all"
    );
    let bytes: Vec<u64> = items.iter().map(|d| u(&d["bytes"])).collect();
    assert!(bytes.windows(2).all(|p| p[0] >= p[1]), "volume descending");
    for d in items {
        for field in ["remote_ip", "country", "operator", "bytes", "flows"] {
            assert!(!d[field].is_null(), "{field}: {d}");
        }
    }
    assert_eq!(
        app.get("/flows/destinations?limit=9999", &token).await.body["meta"]["limit"],
        500
    );
    assert_eq!(
        app.get("/flows/destinations?limit=3", &token)
            .await
            .items()
            .len(),
        3
    );
    app.get("/flows/destinations?source=firewall", &token)
        .await
        .assert_invalid("source");
    app.get("/flows/destinations?limit=-4", &token)
        .await
        .assert_invalid("limit");
}

#[tokio::test]
async fn destinations_under_all_count_agent_machines_once_and_say_who_saw_them() {
    let app = TestApp::shared();
    let token = flows_token(app).await;
    let get = |source: &'static str| {
        let token = token.clone();
        async move {
            app.get(
                &format!("/flows/destinations?source={source}&period=7d&limit=500"),
                &token,
            )
            .await
        }
    };
    let (agent, gateway, all) = (get("agent").await, get("gateway").await, get("all").await);
    let by_ip = |res: &crate::helpers::TestResponse| {
        res.items()
            .iter()
            .map(|d| (d["remote_ip"].as_str().unwrap_or("").to_owned(), d.clone()))
            .collect::<std::collections::HashMap<_, _>>()
    };
    let (agent, gateway, all) = (by_ip(&agent), by_ip(&gateway), by_ip(&all));
    assert!(!gateway.is_empty());
    let mut both = 0;
    for (ip, d) in &all {
        let seen: Vec<&str> = d["seen_by"]
            .as_array()
            .expect("seen_by")
            .iter()
            .filter_map(Value::as_str)
            .collect();
        assert!(!seen.is_empty());
        let a = agent.get(ip).map(|x| u(&x["bytes"])).unwrap_or(0);
        let g = gateway.get(ip).map(|x| u(&x["bytes"])).unwrap_or(0);
        match seen.as_slice() {
            ["agent"] => assert_eq!(u(&d["bytes"]), a, "{ip}: internal traffic, agents only"),
            ["gateway"] => assert_eq!(u(&d["bytes"]), g, "{ip}: devices without agent only"),
            ["agent", "gateway"] => {
                both += 1;
                assert!(u(&d["bytes"]) >= a, "{ip}");
                assert!(
                    u(&d["bytes"]) < a + g,
                    "{ip}: agent traffic seen by the gateway is not counted twice"
                );
            }
            other => panic!("unexpected seen_by {other:?}"),
        }
    }
    assert!(both > 0);
    // Internal servers are seen by agents only (LAN traffic does not cross a gateway).
    assert!(
        all.values()
            .any(|d| d["country"] == "local" && d["seen_by"] == serde_json::json!(["agent"]))
    );
}

#[tokio::test]
async fn destinations_of_one_machine_and_windows_up_to_31_days() {
    let app = TestApp::shared();
    let token = flows_token(app).await;
    let tenant = app
        .get("/flows/destinations?period=30d&limit=500", &token)
        .await;
    assert!(tenant.body["meta"].get("window_capped").is_none());
    let machine = app
        .get(
            "/flows/destinations?period=30d&limit=500&machine=PAR-SRV-0001",
            &token,
        )
        .await;
    assert!(!machine.items().is_empty());
    let tenant_ips: std::collections::HashMap<String, u64> = tenant
        .items()
        .iter()
        .map(|d| {
            (
                d["remote_ip"].as_str().unwrap_or("").to_owned(),
                u(&d["bytes"]),
            )
        })
        .collect();
    for d in machine.items() {
        let ip = d["remote_ip"].as_str().unwrap_or("");
        assert!(
            u(&d["bytes"]) <= tenant_ips.get(ip).copied().unwrap_or(0),
            "{ip}"
        );
    }
    let unknown = app.get("/flows/destinations?machine=NOPE", &token).await;
    assert_eq!(unknown.status, StatusCode::OK);
    assert!(unknown.items().is_empty());
    let from = (Utc::now() - Duration::days(45)).to_rfc3339();
    let capped = app
        .get(&format!("/flows/destinations?from={}", enc(&from)), &token)
        .await;
    assert_eq!(capped.body["meta"]["window_capped"], true);
    let w = &capped.body["meta"]["window"];
    assert_eq!((t(&w["to"]) - t(&w["from"])).num_days(), 31);
    // globex collects no gateway data.
    let globex = app.token("globex", &[Scope::ReadFlows]).await;
    let res = app.get("/flows/destinations?source=gateway", &globex).await;
    assert_eq!(res.status, StatusCode::OK);
    assert!(res.items().is_empty());
}

// ---------- /flows/summary ----------

#[tokio::test]
async fn summary_totals_agree_with_its_breakdowns_and_its_hourly_series() {
    let app = TestApp::shared();
    let token = flows_token(app).await;
    let res = app.get("/flows/summary", &token).await;
    assert_eq!(res.status, StatusCode::OK, "{}", res.body);
    let s = &res.body["data"];
    let series = s["series"].as_array().expect("series");
    assert_eq!(
        series.len(),
        24,
        "one point per hour starting in the 24-hour window"
    );
    let total = u(&s["totals"]["bytes"]);
    assert!(total > 0);
    let sum = |v: &Value, k: &str| {
        v.as_array()
            .map(|a| a.iter().map(|x| u(&x[k])).sum::<u64>())
            .unwrap_or(0)
    };
    assert_eq!(sum(&s["series"], "bytes"), total);
    assert_eq!(sum(&s["by_protocol"], "bytes"), total);
    assert_eq!(sum(&s["by_direction"], "bytes"), total);
    assert_eq!(sum(&s["series"], "flows"), u(&s["totals"]["flows"]));
    assert_eq!(s["by_protocol"][0]["protocol"], "TCP");
    assert_eq!(s["by_direction"][1]["direction"], "outbound");
    let times: Vec<DateTime<Utc>> = series.iter().map(|p| t(&p["time"])).collect();
    assert!(times.windows(2).all(|p| p[1] - p[0] == Duration::hours(1)));
}

#[tokio::test]
async fn summary_series_has_at_most_744_points_with_zero_hours_present() {
    let app = TestApp::shared();
    let token = flows_token(app).await;
    let res = app.get("/flows/summary?period=30d", &token).await;
    assert_eq!(
        res.body["data"]["series"].as_array().map(Vec::len),
        Some(720)
    );
    let from = (Utc::now() - Duration::days(60)).to_rfc3339();
    let res = app
        .get(
            &format!("/flows/summary?from={}&machine=PAR-LT-0001", enc(&from)),
            &token,
        )
        .await;
    assert_eq!(res.body["meta"]["window_capped"], true);
    let series = res.body["data"]["series"].as_array().expect("series");
    assert_eq!(series.len(), 744);
    assert!(
        series.iter().any(|p| u(&p["bytes"]) == 0),
        "a laptop is silent at night"
    );
    assert!(series.iter().any(|p| u(&p["bytes"]) > 0));
    assert_eq!(res.body["data"]["machine"], "PAR-LT-0001");
    let unknown = app.get("/flows/summary?machine=NOPE", &token).await;
    assert_eq!(unknown.status, StatusCode::OK);
    assert_eq!(unknown.body["data"]["totals"]["bytes"], 0);
}

#[tokio::test]
async fn summary_of_a_machine_matches_its_detailed_records_hour_for_hour() {
    let app = TestApp::shared();
    let token = flows_token(app).await;
    let to = Utc::now().duration_trunc(Duration::hours(1)).expect("hour") - Duration::hours(1);
    let from = to - Duration::hours(12);
    let q = format!(
        "from={}&to={}",
        enc(&from.to_rfc3339()),
        enc(&to.to_rfc3339())
    );
    let host = "PAR-SRV-0001";
    let records = walk(app, &format!("/flows?machine={host}&limit=500&{q}"), &token).await;
    let summary = app
        .get(&format!("/flows/summary?machine={host}&{q}"), &token)
        .await;
    let s = &summary.body["data"];
    assert_eq!(s["series"].as_array().map(Vec::len), Some(12));
    assert_eq!(
        records.iter().map(|r| u(&r["bytes"])).sum::<u64>(),
        u(&s["totals"]["bytes"])
    );
    assert_eq!(records.len() as u64, u(&s["totals"]["flows"]));
    // The machine's destinations add up to the same traffic.
    let destinations = app
        .get(
            &format!("/flows/destinations?machine={host}&limit=500&{q}"),
            &token,
        )
        .await;
    assert!(destinations.items().len() < 500, "one page holds them all");
    assert_eq!(
        destinations
            .items()
            .iter()
            .map(|x| u(&x["bytes"]))
            .sum::<u64>(),
        u(&s["totals"]["bytes"])
    );
    // And the talkers agree with the tenant summary.
    let talkers = app
        .get(&format!("/flows/talkers?limit=200&{q}"), &token)
        .await;
    let tenant = app.get(&format!("/flows/summary?{q}"), &token).await;
    assert_eq!(
        talkers.items().iter().map(|x| u(&x["bytes"])).sum::<u64>(),
        u(&tenant.body["data"]["totals"]["bytes"])
    );
}

// ---------- /flows/talkers ----------

#[tokio::test]
async fn talkers_rank_machines_by_total_volume() {
    let app = TestApp::shared();
    let token = flows_token(app).await;
    let res = app.get("/flows/talkers?period=7d", &token).await;
    assert_eq!(res.status, StatusCode::OK, "{}", res.body);
    assert_eq!(res.body["meta"]["limit"], 50);
    let items = res.items();
    assert!(
        items.len() > 40 && items.len() <= 50,
        "{} machines had traffic",
        items.len()
    );
    for (i, x) in items.iter().enumerate() {
        assert_eq!(u(&x["rank"]), i as u64 + 1);
        assert_eq!(u(&x["bytes"]), u(&x["bytes_in"]) + u(&x["bytes_out"]));
    }
    let bytes: Vec<u64> = items.iter().map(|x| u(&x["bytes"])).collect();
    assert!(bytes.windows(2).all(|p| p[0] >= p[1]));
    assert_eq!(
        app.get("/flows/talkers?limit=1000", &token).await.body["meta"]["limit"],
        200
    );
    app.get("/flows/talkers?limit=x", &token)
        .await
        .assert_invalid("limit");
    let capped = app
        .get("/flows/talkers?from=2026-01-01T00:00:00Z", &token)
        .await;
    assert_eq!(
        capped.body["meta"]["window_capped"], true,
        "{}",
        capped.body
    );
}

#[tokio::test]
async fn a_big_tenant_reads_whole_days_from_day_totals_and_they_agree_with_the_hours() {
    // Over 100 machines the seed adds day totals, which destinations read for the whole days
    // of a window (its partial days come from the hourly rows), as the talkers do at any
    // size; the tenant summary reads hours only, so the three must agree to the byte.
    let size = netops::SeedSize {
        machines: 110,
        days: 3,
        seed: 7,
    };
    let app = TestApp::sized(size, &[netops_shared::routes::Function::Flows]).await;
    let token = flows_token(&app).await;
    let to = Utc::now().duration_trunc(Duration::hours(1)).expect("hour") - Duration::hours(2);
    let from = to - Duration::hours(40);
    let q = format!(
        "from={}&to={}",
        enc(&from.to_rfc3339()),
        enc(&to.to_rfc3339())
    );
    let summary = app.get(&format!("/flows/summary?{q}"), &token).await;
    let total = u(&summary.body["data"]["totals"]["bytes"]);
    assert!(total > 0, "{}", summary.body);
    let talkers = app
        .get(&format!("/flows/talkers?limit=200&{q}"), &token)
        .await;
    assert!(talkers.items().len() > 60, "{}", talkers.body);
    assert_eq!(
        talkers.items().iter().map(|x| u(&x["bytes"])).sum::<u64>(),
        total
    );
    let destinations = app
        .get(&format!("/flows/destinations?limit=500&{q}"), &token)
        .await;
    assert!(
        destinations.items().len() < 500,
        "every destination on one page"
    );
    assert_eq!(
        destinations
            .items()
            .iter()
            .map(|x| u(&x["bytes"]))
            .sum::<u64>(),
        total
    );
}

/// A machine's traffic as the talkers count it: one flow, or several of one hour.
#[derive(Clone, Copy)]
struct Seen<'a> {
    at: i64,
    machine: &'a str,
    inbound: bool,
    bytes: u64,
    flows: u64,
}

/// The talkers that `flows` of the hours `[a, b)` give, `limit` at most, as the route lists
/// them, and whether more machines had traffic.
fn talkers_of(flows: &[Seen<'_>], a: i64, b: i64, limit: usize) -> (Value, bool) {
    let mut machines: HashMap<&str, (u64, u64, u64)> = HashMap::new();
    for f in flows.iter().filter(|f| a <= f.at && f.at < b) {
        let m = machines.entry(f.machine).or_default();
        if f.inbound {
            m.0 += f.bytes;
        } else {
            m.1 += f.bytes;
        }
        m.2 += f.flows;
    }
    let mut ranked: Vec<_> = machines.into_iter().collect();
    ranked.sort_by(|x, y| {
        (y.1.0 + y.1.1)
            .cmp(&(x.1.0 + x.1.1))
            .then_with(|| x.0.cmp(y.0))
    });
    let more = ranked.len() > limit;
    let data = ranked
        .into_iter()
        .take(limit)
        .enumerate()
        .map(|(i, (machine, (bytes_in, bytes_out, flows)))| {
            json!({"rank": i + 1, "machine": machine, "bytes": bytes_in + bytes_out,
                "bytes_in": bytes_in, "bytes_out": bytes_out, "flows": flows})
        })
        .collect();
    (Value::Array(data), more)
}

/// The talkers read tenant-level day rows, hour by hour at the edges: over any window they
/// must rank exactly what the flows of the hours starting in the window say, ties by name.
#[tokio::test]
async fn talkers_over_any_window_rank_exactly_the_flows_of_the_hours_starting_in_it() {
    let app = TestApp::with_modules(&[]).await;
    let token = flows_token(&app).await;
    let machines = [
        "PAR-SRV-0001",
        "PAR-LT-0001",
        "PAR-LT-0002",
        "LYO-LT-0003",
        "LYO-LT-0004",
        "BDX-DT-0005",
        "BDX-SRV-0002",
    ];
    let now = Utc::now();
    // Beyond the 31 days a window keeps.
    let start = now.duration_trunc(Duration::days(1)).expect("day") - Duration::days(35);
    let (start, span) = (start.timestamp_millis(), (now - start).num_milliseconds());
    let mut rng = StdRng::seed_from_u64(17);
    let mut flows = Vec::new();
    for i in 0..2_000 {
        let f = Seen {
            at: start + rng.random_range(0..span),
            machine: machines[rng.random_range(0..=i % machines.len())],
            inbound: rng.random_bool(0.4),
            bytes: rng.random_range(60..900_000_000),
            flows: rng.random_range(1..40),
        };
        // A machine with the traffic of another: they tie in every window, the name decides.
        if f.machine == "LYO-LT-0003" {
            flows.push(Seen {
                machine: "LYO-LT-0013",
                ..f
            });
        }
        flows.push(f);
    }
    let mut aggregate = Talkers::default();
    for f in &flows {
        aggregate.add(&talkers::Flow {
            at: DateTime::from_timestamp_millis(f.at).expect("time"),
            machine: f.machine,
            direction: if f.inbound {
                Direction::Inbound
            } else {
                Direction::Outbound
            },
            bytes: f.bytes as f64,
            flows: f.flows as f64,
        });
    }
    app.load_acme(aggregate.series()).await;
    for (from, to) in edge_windows(now) {
        for limit in [200, 3] {
            let path = format!(
                "/flows/talkers?from={}&to={}&limit={limit}",
                stamp(from),
                stamp(to)
            );
            let res = app.get(&path, &token).await;
            assert_eq!(res.status, StatusCode::OK, "{path}: {}", res.body);
            let (a, b) = res.window_hours_starting();
            let (want, more) = talkers_of(&flows, a, b, limit);
            assert!(want.as_array().is_some_and(|w| !w.is_empty()), "{path}");
            assert_eq!(res.body["data"], want, "{path}");
            assert_eq!(res.body["meta"]["truncated"], more, "{path}");
        }
    }
}

/// Over the hours the demo's detailed records still cover (its last two days), the talkers
/// count exactly the records of the hours starting in the window, listening sockets aside.
#[tokio::test]
async fn talkers_agree_with_the_detailed_records_of_the_hours_starting_in_the_window() {
    let app = TestApp::shared();
    let token = flows_token(app).await;
    let end = app.seeded.1;
    let kept = end - Duration::days(2);
    // Windows starting and ending mid-day, mid-hour, within one day, across two, and one
    // holding a whole day.
    let windows: Vec<_> = edge_windows(end)
        .into_iter()
        .chain([(kept + Duration::minutes(17), end - Duration::minutes(20))])
        .filter(|(from, _)| *from >= kept)
        .collect();
    assert!(windows.len() >= 3, "{windows:?}");
    let records = app
        .stores
        .series
        .read_all(
            "acme",
            RECORDS,
            None,
            kept.timestamp_millis(),
            end.timestamp_millis(),
            &Filter::all(),
        )
        .await
        .expect("records");
    assert!(!records.cut);
    let flows: Vec<Seen> = records
        .items
        .iter()
        .filter_map(|r| {
            let s: StoredFlow = serde_json::from_value(r.body.clone()).expect("record");
            (!s.l).then_some(Seen {
                at: r.ts,
                machine: &r.partition,
                inbound: s.d == Direction::Inbound,
                bytes: s.b,
                flows: 1,
            })
        })
        .collect();
    for (from, to) in windows {
        let path = format!(
            "/flows/talkers?from={}&to={}&limit=200",
            stamp(from),
            stamp(to)
        );
        let res = app.get(&path, &token).await;
        assert_eq!(res.status, StatusCode::OK, "{path}: {}", res.body);
        let (a, b) = res.window_hours_starting();
        let (want, more) = talkers_of(&flows, a, b, 200);
        assert!(
            !more && want.as_array().is_some_and(|w| w.len() > 10),
            "{path}"
        );
        assert_eq!(res.body["data"], want, "{path}");
    }
}

// ---------- /flows/blocked ----------

#[tokio::test]
async fn blocked_lists_failed_connections_of_the_last_day_with_every_type() {
    let app = TestApp::shared();
    let token = flows_token(app).await;
    let res = app.get("/flows/blocked?limit=1000", &token).await;
    assert_eq!(res.status, StatusCode::OK, "{}", res.body);
    assert_eq!(res.body["meta"]["limit"], 1000);
    let w = &res.body["meta"]["window"];
    assert_eq!((t(&w["to"]) - t(&w["from"])).num_hours(), 24);
    let items = res.items();
    let types: std::collections::BTreeSet<&str> =
        items.iter().filter_map(|b| b["type"].as_str()).collect();
    assert_eq!(types.len(), 7, "every failure type: {types:?}");
    let times: Vec<DateTime<Utc>> = items.iter().map(|b| t(&b["time"])).collect();
    assert!(times.windows(2).all(|p| p[0] >= p[1]));
    for field in [
        "id",
        "time",
        "machine",
        "type",
        "process",
        "user",
        "remote_ip",
        "remote_port",
        "protocol",
    ] {
        assert!(!items[0][field].is_null(), "{field}");
    }
    assert_eq!(
        app.get("/flows/blocked", &token).await.body["meta"]["limit"],
        100
    );
    assert_eq!(
        app.get("/flows/blocked?limit=5000", &token).await.body["meta"]["limit"],
        1000
    );
}

#[tokio::test]
async fn blocked_filters_by_type_and_exact_machine_with_400_and_404() {
    let app = TestApp::shared();
    let token = flows_token(app).await;
    let res = app
        .get("/flows/blocked?type=timeout&period=7d&limit=1000", &token)
        .await;
    assert!(!res.items().is_empty());
    assert!(res.items().iter().all(|b| b["type"] == "timeout"));
    let res = app
        .get(
            "/flows/blocked?machine=PAR-SRV-0001&type=host_unreachable",
            &token,
        )
        .await;
    assert!(!res.items().is_empty());
    assert!(
        res.items()
            .iter()
            .all(|b| b["machine"] == "PAR-SRV-0001" && b["type"] == "host_unreachable")
    );
    app.get("/flows/blocked?type=dropped", &token)
        .await
        .assert_invalid("type");
    let res = app.get("/flows/blocked?machine=par-srv-0001", &token).await;
    assert_eq!(res.status, StatusCode::NOT_FOUND);
    assert_eq!(res.body["error"], "not_found");
    let globex = app.token("globex", &[Scope::ReadFlows]).await;
    assert_eq!(
        app.get("/flows/blocked?machine=PAR-SRV-0001", &globex)
            .await
            .status,
        StatusCode::NOT_FOUND
    );
    // Nothing is collected before 2026-09-27.
    let res = app
        .get(
            "/flows/blocked?from=2026-09-01T00:00:00Z&to=2026-09-27T00:00:00Z&limit=1000",
            &token,
        )
        .await;
    assert!(res.items().is_empty());
}

// ---------- /flows/explore ----------

#[tokio::test]
async fn explore_defaults_answer_a_stacked_series_links_top_and_the_attribution() {
    let app = TestApp::shared();
    let token = flows_token(app).await;
    let res = app.get("/flows/explore", &token).await;
    assert_eq!(res.status, StatusCode::OK, "{}", res.body);
    let d = &res.body["data"];
    assert_eq!(d["dims"], serde_json::json!(["service"]));
    assert_eq!(
        (
            d["source"].as_str(),
            d["period"].as_str(),
            d["measure"].as_str(),
            d["step"].as_str()
        ),
        (Some("all"), Some("24h"), Some("bytes"), Some("1h"))
    );
    let attribution = res.body["meta"]["attribution"]["text"]
        .as_str()
        .unwrap_or("");
    assert!(
        attribution.contains("CC BY 4.0") && attribution.contains("DB-IP"),
        "{attribution}"
    );
    assert!(res.body["meta"]["window"]["from"].is_string());
    let points = d["series"]["points"].as_array().expect("points");
    assert!((24..=25).contains(&points.len()));
    let stacked: f64 = points
        .iter()
        .flat_map(|p| p["values"].as_object().into_iter().flat_map(|m| m.values()))
        .map(f)
        .sum();
    assert!(
        (stacked - f(&d["total"])).abs() < 1.0,
        "the stacked series adds up to the total"
    );
    assert!(
        d["links"].as_array().is_some_and(Vec::is_empty),
        "one dimension has no links"
    );
    assert!(!d["top"].as_array().expect("top").is_empty());
}

#[tokio::test]
async fn explore_three_dims_with_a_filter_over_30_days() {
    let app = TestApp::shared();
    let token = flows_token(app).await;
    let filter = enc("sens = outbound et pays != FR");
    let res = app
        .get(
            &format!(
                "/flows/explore?dims=pays,operateur,service&period=30d&limit=5&filter={filter}"
            ),
            &token,
        )
        .await;
    assert_eq!(res.status, StatusCode::OK, "{}", res.body);
    let d = &res.body["data"];
    assert_eq!(d["step"], "1d");
    assert_eq!(d["series"]["points"].as_array().map(Vec::len), Some(31));
    let keys: Vec<&str> = d["series"]["keys"]
        .as_array()
        .expect("keys")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(keys.len() <= 6 && !keys.contains(&"FR"), "{keys:?}");
    if keys.len() == 6 {
        assert_eq!(keys[5], "autres");
    }
    for item in d["top"].as_array().expect("top") {
        assert_ne!(item["values"]["pays"], "FR");
        assert!(item["values"]["operateur"].is_string() && item["values"]["service"].is_string());
    }
    let links = d["links"].as_array().expect("links");
    assert!(!links.is_empty());
    for l in links {
        let pair = (
            l["from"]["dim"].as_str().unwrap_or(""),
            l["to"]["dim"].as_str().unwrap_or(""),
        );
        assert!(
            pair == ("pays", "operateur") || pair == ("operateur", "service"),
            "{pair:?}"
        );
    }
    let first: f64 = links
        .iter()
        .filter(|l| l["from"]["dim"] == "pays")
        .map(|l| f(&l["value"]))
        .sum();
    assert!(
        (first - f(&d["total"])).abs() < 1.0,
        "every unit of the total flows through the first links"
    );
}

/// Each internal dimension (interne, processus, utilisateur) is read from an aggregate of its
/// own, two or three of them together from another, the others from the external side's:
/// over windows of hours and of days, they count the same traffic, hour by hour, and what
/// one of them gives a value is what another gives it under a filter.
#[tokio::test]
async fn explore_internal_dimensions_count_the_traffic_the_external_side_counts() {
    let app = TestApp::shared();
    let token = flows_token(app).await;
    let data = |query: String| {
        let token = token.clone();
        async move {
            let res = app.get(&format!("/flows/explore?{query}"), &token).await;
            assert_eq!(res.status, StatusCode::OK, "{query}: {}", res.body);
            res.body["data"].clone()
        }
    };
    // The stacked series' sum at each point.
    let per_point = |d: &Value| -> Vec<f64> {
        d["series"]["points"]
            .as_array()
            .expect("points")
            .iter()
            .map(|p| {
                p["values"]
                    .as_object()
                    .expect("values")
                    .values()
                    .map(f)
                    .sum()
            })
            .collect()
    };
    for (period, source) in [
        ("6h", "all"),
        ("24h", "agent"),
        ("24h", "all"),
        ("30d", "all"),
    ] {
        let base = format!("period={period}&source={source}&limit=3");
        let outside = data(format!("{base}&dims=service")).await;
        assert!(f(&outside["total"]) > 0.0, "{base}");
        for dims in [
            "interne",
            "processus",
            "utilisateur",
            "processus,interne",
            "utilisateur,externe,processus",
        ] {
            let inside = data(format!("{base}&dims={dims}")).await;
            assert_eq!(inside["total"], outside["total"], "{base}&dims={dims}");
            assert_eq!(
                per_point(&inside),
                per_point(&outside),
                "{base}&dims={dims}"
            );
        }
        // The biggest machine's traffic, from the machines' aggregate and from the three
        // together's; the biggest process's, from the processes' and the three together's.
        for (dim, other) in [("interne", "processus"), ("processus", "utilisateur")] {
            let ranked = data(format!(
                "{base}&dims={dim}&filter={}",
                enc("sens != inbound")
            ))
            .await;
            let first = &ranked["top"][0];
            let value = first["values"][dim].as_str().expect("a value");
            let filter = enc(&format!("{dim} = {value} et sens != inbound"));
            let seen = data(format!("{base}&dims={other}&filter={filter}")).await;
            assert_eq!(seen["total"], first["value"], "{base}: {dim} = {value}");
        }
    }
}

#[tokio::test]
async fn explore_keeps_limit_values_per_dimension_and_sums_the_rest_in_autres() {
    let app = TestApp::shared();
    let token = flows_token(app).await;
    let res = app
        .get("/flows/explore?dims=externe&limit=3&period=7d", &token)
        .await;
    let keys = res.body["data"]["series"]["keys"]
        .as_array()
        .expect("keys")
        .clone();
    assert_eq!(keys.len(), 4);
    assert_eq!(keys[3], "autres");
    assert_eq!(res.body["data"]["top"].as_array().map(Vec::len), Some(3));
    for bad in ["2", "21", "abc", "-3"] {
        (app.get(&format!("/flows/explore?limit={bad}"), &token)
            .await)
            .assert_invalid("limit");
    }
    assert_eq!(
        app.get("/flows/explore?limit=20", &token).await.status,
        StatusCode::OK
    );
}

#[tokio::test]
async fn explore_validates_dims_period_metric_and_source() {
    let app = TestApp::shared();
    let token = flows_token(app).await;
    for bad in [
        "pays,port,service,site",
        "pays,continent",
        "pays,,port",
        "pays,pays",
        "action",
    ] {
        app.get(&format!("/flows/explore?dims={bad}"), &token)
            .await
            .assert_invalid("dims");
    }
    for bad in ["3h", "12h", "3d", "1w"] {
        (app.get(&format!("/flows/explore?period={bad}"), &token)
            .await)
            .assert_invalid("period");
    }
    app.get("/flows/explore?metric=packets", &token)
        .await
        .assert_invalid("metric");
    app.get("/flows/explore?source=ipfix", &token)
        .await
        .assert_invalid("source");
    let flows = app
        .get("/flows/explore?metric=flows&period=1h", &token)
        .await;
    assert_eq!(flows.body["data"]["measure"], "flows");
    let all_dims = "interne,externe,pays,operateur,port,service,proto,sens,source,passerelle,site,interface,processus,utilisateur";
    for dim in all_dims.split(',') {
        let res = app
            .get(&format!("/flows/explore?dims={dim}&period=6h"), &token)
            .await;
        assert_eq!(res.status, StatusCode::OK, "{dim}: {}", res.body);
        assert!(f(&res.body["data"]["total"]) > 0.0, "{dim}");
    }
}

#[tokio::test]
async fn explore_filter_errors_say_where_the_expression_failed() {
    let app = TestApp::shared();
    let token = flows_token(app).await;
    let res = app
        .get(&format!("/flows/explore?filter={}", enc("pays FR")), &token)
        .await;
    res.assert_invalid("filter");
    assert_eq!(res.body["position"], 6);
    assert_eq!(res.body["token"], "FR");
    let res = app
        .get(
            &format!("/flows/explore?filter={}", enc("pays = FR ou port = 443")),
            &token,
        )
        .await;
    assert_eq!(
        (res.body["position"].as_u64(), res.body["token"].as_str()),
        (Some(11), Some("ou"))
    );
    let res = app
        .get(
            &format!("/flows/explore?filter={}", enc("continent = EU")),
            &token,
        )
        .await;
    res.assert_invalid("filter");
    assert_eq!(res.body["token"], "continent");
    let res = app
        .request(
            http::Method::GET,
            &format!("/flows/explore?filter={}", enc("pays =")),
            Some(&token),
            None,
            &[("accept-language", "en")],
        )
        .await;
    assert!(
        res.body["message"]
            .as_str()
            .is_some_and(|m| m.contains("position 7")),
        "{}",
        res.body
    );
    let quoted = app
        .get(
            &format!(
                "/flows/explore?dims=operateur&filter={}",
                enc("operateur = \"Microsoft Corporation\"")
            ),
            &token,
        )
        .await;
    assert_eq!(quoted.status, StatusCode::OK);
    let top = quoted.body["data"]["top"].as_array().expect("top");
    assert_eq!(top.len(), 1);
    assert_eq!(top[0]["values"]["operateur"], "Microsoft Corporation");
}

#[tokio::test]
async fn explore_sources_count_agent_traffic_once_and_the_firewall_counts_connections() {
    let app = TestApp::shared();
    let token = flows_token(app).await;
    let total = |source: &'static str| {
        let token = token.clone();
        async move {
            f(&app
                .get(
                    &format!("/flows/explore?source={source}&period=7d&dims=source"),
                    &token,
                )
                .await
                .body["data"]["total"])
        }
    };
    let (all, agent, gateway) = (
        total("all").await,
        total("agent").await,
        total("gateway").await,
    );
    assert!(
        all > agent && all < agent + gateway,
        "all={all} agent={agent} gateway={gateway}"
    );
    let gw = app
        .get(
            "/flows/explore?source=gateway&dims=processus,utilisateur",
            &token,
        )
        .await;
    let top = gw.body["data"]["top"].as_array().expect("top");
    assert_eq!(top.len(), 1, "gateways know no process or user: {top:?}");
    assert_eq!(top[0]["values"]["processus"], "inconnu");
    let fw = app
        .get(
            "/flows/explore?source=firewall&dims=categorie,action,regle&period=7d",
            &token,
        )
        .await;
    assert_eq!(fw.status, StatusCode::OK, "{}", fw.body);
    assert_eq!(fw.body["data"]["measure"], "connections");
    let cats: Vec<&str> = fw.body["data"]["series"]["keys"]
        .as_array()
        .expect("keys")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        cats.contains(&"deny") && cats.contains(&"allow"),
        "{cats:?}"
    );
    let filtered = app
        .get(
            &format!(
                "/flows/explore?source=firewall&dims=regle&filter={}",
                enc("action = blocked")
            ),
            &token,
        )
        .await;
    assert!(
        filtered.body["data"]["top"]
            .as_array()
            .is_some_and(|t| !t.is_empty())
    );
    (app.get("/flows/explore?source=firewall&dims=pays", &token)
        .await)
        .assert_invalid("dims");
    (app.get("/flows/explore?source=firewall&metric=bytes", &token)
        .await)
        .assert_invalid("metric");
    (app.get(
        &format!("/flows/explore?source=firewall&filter={}", enc("pays = FR")),
        &token,
    )
    .await)
        .assert_invalid("filter");
    let globex = app.token("globex", &[Scope::ReadFlows]).await;
    let res = app.get("/flows/explore?source=gateway", &globex).await;
    assert_eq!(
        res.status,
        StatusCode::NOT_FOUND,
        "globex collects no gateway data"
    );
    assert_eq!(
        app.get("/flows/explore?source=agent", &globex).await.status,
        StatusCode::OK
    );
}
