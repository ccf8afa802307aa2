//! DNS: resolutions, top domains, threats, server queries (docs/modules.md#dns).

use std::collections::{BTreeMap, HashSet};

use chrono::{DateTime, Duration, DurationRound, Utc};
use http::StatusCode;
use netops_shared::scope::Scope;
use netops_shared::store::Record;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{Value, json};

use crate::helpers::{TestApp, acme_ctx, catch_up, edge_windows, stamp, time};

async fn token(app: &TestApp) -> String {
    app.token("acme", &[Scope::ReadDns]).await
}

#[tokio::test]
async fn resolutions_default_to_100_newest_first_within_24_hours() {
    let app = TestApp::shared();
    let token = token(app).await;
    let res = app.get("/dns/resolutions", &token).await;
    assert_eq!(res.status, StatusCode::OK);
    assert_eq!(res.body["meta"]["limit"], 100);
    let items = res.items();
    assert_eq!(items.len(), 100);
    let times: Vec<&str> = items.iter().filter_map(|r| r["at"].as_str()).collect();
    assert!(times.windows(2).all(|w| w[0] >= w[1]));
    let from = res.body["meta"]["window"]["from"].as_str().expect("from");
    assert!(times.iter().all(|t| *t >= from));
    for f in [
        "id",
        "at",
        "machine",
        "machine_ip",
        "domain",
        "query_type",
        "response_code",
        "answers",
        "resolver",
        "latency_ms",
    ] {
        assert!(!items[0][f].is_null(), "{f}");
    }
    assert_eq!(
        app.get("/dns/resolutions?limit=5000", &token).await.body["meta"]["limit"],
        1000
    );
}

#[tokio::test]
async fn resolutions_filter_by_exact_machine_and_partial_domain() {
    let app = TestApp::shared();
    let token = token(app).await;
    let one = app
        .get(
            "/dns/resolutions?machine=PAR-LT-0001&period=7d&limit=1000",
            &token,
        )
        .await;
    assert_eq!(one.status, StatusCode::OK);
    assert!(!one.items().is_empty());
    assert!(one.items().iter().all(|r| r["machine"] == "PAR-LT-0001"));
    let ms = app
        .get(
            "/dns/resolutions?domain=MICROSOFT&period=3d&limit=1000",
            &token,
        )
        .await;
    assert!(!ms.items().is_empty());
    assert!(ms.items().iter().all(|r| {
        r["domain"]
            .as_str()
            .is_some_and(|d| d.contains("microsoft"))
    }));
    let unknown = app
        .get("/dns/resolutions?machine=par-lt-0001", &token)
        .await;
    assert_eq!(
        unknown.status,
        StatusCode::NOT_FOUND,
        "the host name is exact"
    );
    assert_eq!(unknown.error(), "not_found");
}

#[tokio::test]
async fn resolutions_window_is_capped_at_7_days() {
    let app = TestApp::shared();
    let token = token(app).await;
    let res = app.get("/dns/resolutions?period=30d", &token).await;
    assert_eq!(res.body["meta"]["window_capped"], true);
    let from = chrono::DateTime::parse_from_rfc3339(
        res.body["meta"]["window"]["from"].as_str().expect("f"),
    )
    .expect("d");
    let to =
        chrono::DateTime::parse_from_rfc3339(res.body["meta"]["window"]["to"].as_str().expect("t"))
            .expect("d");
    assert_eq!((to - from).num_days(), 7);
}

#[tokio::test]
async fn top_domains_rank_by_queries_with_default_50() {
    let app = TestApp::shared();
    let token = token(app).await;
    let res = app.get("/dns/top-domains?period=30d", &token).await;
    assert_eq!(res.status, StatusCode::OK);
    assert_eq!(res.body["meta"]["limit"], 50);
    let items = res.items();
    assert!(items.len() > 10);
    let q: Vec<f64> = items.iter().filter_map(|d| d["queries"].as_f64()).collect();
    assert!(q.windows(2).all(|w| w[0] >= w[1]), "by queries");
    assert!(items[0]["machines"].as_u64().is_some_and(|m| m > 1));
    let small = app.get("/dns/top-domains?period=30d&limit=3", &token).await;
    assert_eq!(small.items().len(), 3);
    assert_eq!(small.items()[0]["domain"], items[0]["domain"]);
    let one = app
        .get("/dns/top-domains?period=30d&machine=PAR-LT-0001", &token)
        .await;
    assert!(!one.items().is_empty());
    assert!(one.items().iter().all(|d| d["machines"] == 1));
    assert!(one.items()[0]["queries"].as_f64() < items[0]["queries"].as_f64());
    assert_eq!(
        app.get("/dns/top-domains?machine=NOPE-0001", &token)
            .await
            .status,
        StatusCode::NOT_FOUND
    );
    // The last 24 hours count less than the month.
    let day = app.get("/dns/top-domains", &token).await;
    assert!(day.items()[0]["queries"].as_f64() < items[0]["queries"].as_f64());
}

/// Over whole hours, a domain's queries and machines are those of its resolutions.
#[tokio::test]
async fn top_domains_count_the_queries_and_machines_of_the_resolutions() {
    let app = TestApp::shared();
    let token = token(app).await;
    let to = chrono::Utc::now()
        .duration_trunc(chrono::Duration::hours(1))
        .expect("hour");
    let stamp = |t: chrono::DateTime<chrono::Utc>| t.format("%Y-%m-%dT%H:%M:%SZ").to_string();
    let window = format!(
        "from={}&to={}",
        stamp(to - chrono::Duration::hours(24)),
        stamp(to)
    );
    let top = app.get(&format!("/dns/top-domains?{window}"), &token).await;
    assert_eq!(top.status, StatusCode::OK);
    for d in top.items().iter().take(3) {
        let domain = d["domain"].as_str().expect("domain");
        let res = app
            .get(
                &format!("/dns/resolutions?{window}&limit=1000&domain={domain}"),
                &token,
            )
            .await;
        assert!(res.items().len() < 1000, "all of them in one page");
        let exact: Vec<&serde_json::Value> = res
            .items()
            .iter()
            .filter(|r| r["domain"] == domain)
            .collect();
        let machines: std::collections::HashSet<&str> =
            exact.iter().filter_map(|r| r["machine"].as_str()).collect();
        assert_eq!(d["queries"].as_f64(), Some(exact.len() as f64), "{domain}");
        assert_eq!(
            d["machines"].as_u64(),
            Some(machines.len() as u64),
            "{domain}"
        );
        assert!(machines.len() > 1, "{domain}");
    }
}

#[tokio::test]
async fn threats_filter_on_acknowledged() {
    let app = TestApp::shared();
    let token = token(app).await;
    let all = app.get("/dns/threats?period=30d", &token).await;
    assert_eq!(all.status, StatusCode::OK);
    let items = all.items();
    assert!(items.len() >= 5);
    let acked = app
        .get("/dns/threats?period=30d&acknowledged=1", &token)
        .await;
    let open = app
        .get("/dns/threats?period=30d&acknowledged=0", &token)
        .await;
    assert!(!acked.items().is_empty() && acked.items().iter().all(|t| t["acknowledged"] == true));
    assert!(!open.items().is_empty() && open.items().iter().all(|t| t["acknowledged"] == false));
    assert_eq!(acked.items().len() + open.items().len(), items.len());
    let day = app.get("/dns/threats", &token).await;
    assert!(!day.items().is_empty(), "two threats are still going on");
    let from = day.body["meta"]["window"]["from"].as_str().expect("from");
    assert!(
        day.items()
            .iter()
            .all(|t| t["last_seen_at"].as_str().is_some_and(|l| l >= from))
    );
    let fleet = app.token("acme", &[Scope::ReadMachines]).await;
    for t in items {
        let m = app
            .get(
                &format!("/machines/{}", t["machine"].as_str().expect("machine")),
                &fleet,
            )
            .await;
        assert_eq!(
            m.status,
            StatusCode::OK,
            "threat machines are fleet machines"
        );
    }
}

#[tokio::test]
async fn server_queries_when_collection_is_active() {
    let app = TestApp::shared();
    let token = token(app).await;
    let res = app.get("/dns/server-queries", &token).await;
    assert_eq!(res.status, StatusCode::OK);
    assert_eq!(res.body["meta"]["server_collection"], "active");
    assert!(
        res.body["meta"]["servers"]
            .as_array()
            .is_some_and(|s| !s.is_empty())
    );
    assert!(!res.items().is_empty());
    let suspicious = app
        .get("/dns/server-queries?suspicious=1&period=7d", &token)
        .await;
    assert!(!suspicious.items().is_empty());
    assert!(
        suspicious
            .items()
            .iter()
            .all(|q| q["suspicious"] == true && q["reason"].is_string())
    );
    let all = app
        .get("/dns/server-queries?suspicious=0&period=7d", &token)
        .await;
    assert!(all.items().iter().any(|q| q["suspicious"] == false));
    let dom = app
        .get("/dns/server-queries?domain=office365&period=3d", &token)
        .await;
    assert!(!dom.items().is_empty());
    assert!(dom.items().iter().all(|q| {
        q["domain"]
            .as_str()
            .is_some_and(|d| d.contains("office365"))
    }));
    let week = app.get("/dns/server-queries?period=7d", &token).await;
    assert_eq!(week.items().len(), 500);
    assert_eq!(week.body["meta"]["truncated"], true);
}

#[tokio::test]
async fn server_queries_are_an_empty_list_flagged_inactive_without_collection() {
    let app = TestApp::shared();
    let token = app.token("globex", &[Scope::ReadDns]).await;
    let res = app.get("/dns/server-queries?period=7d", &token).await;
    assert_eq!(res.status, StatusCode::OK);
    assert!(res.items().is_empty());
    assert_eq!(res.body["meta"]["server_collection"], "inactive");
    let resolutions = app.get("/dns/resolutions", &token).await;
    assert!(
        resolutions
            .items()
            .iter()
            .all(|r| r["machine"].as_str().is_some_and(|m| m.starts_with("gx-")))
    );
    assert_eq!(
        app.get("/dns/resolutions?machine=PAR-LT-0001", &token)
            .await
            .status,
        StatusCode::NOT_FOUND
    );
}

#[tokio::test]
async fn bad_dns_parameters_give_400_naming_them() {
    let app = TestApp::shared();
    let token = token(app).await;
    for (path, name) in [
        ("/dns/threats?acknowledged=yes", "acknowledged"),
        ("/dns/threats?acknowledged=2", "acknowledged"),
        ("/dns/server-queries?suspicious=true", "suspicious"),
        ("/dns/resolutions?limit=zero", "limit"),
        ("/dns/top-domains?limit=0", "limit"),
        ("/dns/resolutions?from=2026-13-01T00:00:00Z", "from"),
        ("/dns/top-domains?period=2w", "period"),
    ] {
        let res = app.get(path, &token).await;
        assert_eq!(res.status, StatusCode::BAD_REQUEST, "{path}");
        assert_eq!(res.error(), "invalid_parameter");
        assert!(
            res.body["message"]
                .as_str()
                .is_some_and(|m| m.contains(name)),
            "{path}: {}",
            res.body
        );
    }
}

#[tokio::test]
async fn threats_read_page_by_page_until_the_list_is_full() {
    let app = TestApp::with_modules(&[]).await;
    let now = chrono::Utc::now();
    let threat = |id: String, first: chrono::DateTime<chrono::Utc>, last| Record {
        partition: "ZETA-LT-0001".into(),
        ts: chrono::DateTime::<chrono::Utc>::timestamp_millis(&last),
        id: id.clone(),
        body: serde_json::json!({"id": id, "domain": "bad.example", "category": "malware",
            "severity": "high", "machine": "ZETA-LT-0001", "machine_ip": "10.0.0.1", "user": null,
            "queries": 3, "blocked": true, "source": "feed", "first_seen_at": first,
            "last_seen_at": last, "acknowledged": false, "acknowledged_at": null}),
    };
    let (from, to) = (
        now - chrono::Duration::hours(36),
        now - chrono::Duration::hours(24),
    );
    // 650 active in the window, then 300 newer ones first seen after it: the newest records
    // of the series, which the list must read past.
    let mut records: Vec<Record> = (0..650)
        .map(|i| {
            let last = from + chrono::Duration::seconds(i);
            threat(format!("old-{i:03}"), now - chrono::Duration::days(3), last)
        })
        .collect();
    records.extend((0..300).map(|i| {
        let first = now - chrono::Duration::hours(12);
        threat(
            format!("late-{i:03}"),
            first,
            first + chrono::Duration::seconds(i),
        )
    }));
    app.stores
        .series_writes
        .append("zeta", "dns_threats", records)
        .await
        .expect("threats");
    let token = app.token("zeta", &[Scope::ReadDns]).await;
    let at =
        |t: chrono::DateTime<chrono::Utc>| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let res = app
        .get(
            &format!("/dns/threats?from={}&to={}", at(from), at(to)),
            &token,
        )
        .await;
    assert_eq!(res.status, StatusCode::OK, "{}", res.body);
    assert_eq!(res.items().len(), 500);
    assert_eq!(res.body["meta"]["truncated"], true);
    let ids: Vec<&str> = res
        .items()
        .iter()
        .filter_map(|t| t["id"].as_str())
        .collect();
    assert_eq!((ids[0], ids[499]), ("old-649", "old-150"), "newest first");
    // From the 600th second: the 50 last of them, all of it.
    let res = app
        .get(
            &format!(
                "/dns/threats?from={}&to={}",
                at(from + chrono::Duration::seconds(600)),
                at(to)
            ),
            &token,
        )
        .await;
    assert_eq!(res.items().len(), 50);
    assert_eq!(res.body["meta"]["truncated"], false);
}

/// One count of queries written through the aggregation the seed and a collector use.
struct Asked {
    at: DateTime<Utc>,
    host: String,
    domain: &'static str,
    code: &'static str,
    n: f64,
}

/// The top domains of `facts` over the hours `[a, b)` (of `machine` only when given), added
/// up straight from them.
fn top_of(facts: &[Asked], a: i64, b: i64, machine: Option<&str>) -> Vec<Value> {
    let hour = |t: DateTime<Utc>| t.timestamp_millis().div_euclid(3_600_000) * 3_600_000;
    let mut per: BTreeMap<&str, (f64, HashSet<&str>, f64, f64, i64)> = BTreeMap::new();
    for f in facts {
        let h = hour(f.at);
        if h < a || h >= b || machine.is_some_and(|m| m != f.host) {
            continue;
        }
        let d = per
            .entry(f.domain)
            .or_insert((0.0, HashSet::new(), 0.0, 0.0, h));
        d.0 += f.n;
        d.1.insert(&f.host);
        if f.code == "NXDOMAIN" {
            d.2 += f.n;
        }
        if matches!(f.code, "SERVFAIL" | "REFUSED") {
            d.3 += f.n;
        }
        d.4 = d.4.max(h);
    }
    let mut out: Vec<_> = per.into_iter().collect();
    out.sort_by(|x, y| y.1.0.total_cmp(&x.1.0).then_with(|| x.0.cmp(y.0)));
    out.into_iter()
        .map(|(domain, (queries, machines, nx, fail, last))| {
            json!({"domain": domain, "queries": queries, "machines": machines.len(),
                "nxdomain": nx, "failures": fail,
                "last_seen_hour": netops_shared::time::format(DateTime::<Utc>::from_timestamp_millis(last).expect("hour"))})
        })
        .collect()
}

/// Top domains read day aggregates, hour by hour at the edges, and a series per machine for
/// `machine=`: over any window, they must say exactly what the counts of the hours
/// overlapping the window say, the distinct machines and the last hour included.
#[tokio::test]
async fn top_domains_over_any_window_add_up_exactly_the_queries_of_their_hours() {
    let app = TestApp::with_modules(&[]).await;
    let token = token(&app).await;
    let full = app.full_token().await;
    let machines = app.get("/machines?limit=6", &full).await;
    let hosts: Vec<String> = machines
        .items()
        .iter()
        .filter_map(|m| m["hostname"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(hosts.len(), 6);
    let now = Utc::now();
    let start = now.duration_trunc(Duration::days(1)).expect("day") - Duration::days(12);
    let mut rng = StdRng::seed_from_u64(7);
    let domains = [
        "a.example",
        "b.example",
        "c.example",
        "d.example",
        "e.example",
    ];
    let codes = [
        "NOERROR", "NOERROR", "NOERROR", "NXDOMAIN", "SERVFAIL", "REFUSED",
    ];
    let span = (now - start).num_milliseconds();
    let mut facts: Vec<Asked> = (0..600)
        .map(|i| Asked {
            at: start + Duration::milliseconds(rng.random_range(0..span)),
            host: hosts[rng.random_range(0..hosts.len())].clone(),
            // Skewed, so that ranks differ with the window.
            domain: domains[rng.random_range(0..=i % domains.len())],
            code: codes[rng.random_range(0..codes.len())],
            n: rng.random_range(1..5) as f64,
        })
        .collect();
    // A domain asked once, long before: its last hour lies in a whole day of long windows.
    facts.push(Asked {
        at: start - Duration::days(20) + Duration::minutes(617),
        host: hosts[0].clone(),
        domain: "rare.example",
        code: "NOERROR",
        n: 1.0,
    });
    let mut queries = netops_dns::domains::Queries::default();
    for f in &facts {
        queries.add(f.at, &f.host, f.domain, f.code, f.n);
    }
    app.load_acme(queries.series()).await;
    for (from, to) in edge_windows(now) {
        for machine in [None, Some(hosts[2].as_str())] {
            let mut path = format!("/dns/top-domains?from={}&to={}", stamp(from), stamp(to));
            if let Some(m) = machine {
                path.push_str(&format!("&machine={m}"));
            }
            let res = app.get(&format!("{path}&limit=500"), &token).await;
            assert_eq!(res.status, StatusCode::OK, "{path}: {}", res.body);
            let (a, b) = res.window_hours();
            let want = top_of(&facts, a, b, machine);
            assert!(!want.is_empty() || machine.is_some(), "{path}");
            assert_eq!(res.items(), &want, "{path}");
            let two = app.get(&format!("{path}&limit=2"), &token).await;
            assert_eq!(two.items()[..], want[..2.min(want.len())], "{path}");
            assert_eq!(two.body["meta"]["truncated"], want.len() > 2, "{path}");
        }
    }
}

/// A store seeded on a Friday and caught up to the Sunday: every 24-hour window from a day
/// after the seed holds threats the producer drew (not the seed's), each with its queries
/// among the machine's resolutions.
#[tokio::test]
async fn threats_go_on_after_the_seed_so_every_day_holds_some() {
    let seeded = time(&json!("2026-11-20T09:30:00Z"));
    let sunday = seeded + Duration::days(2);
    let app = TestApp::acme_seeded_at(seeded).await;
    let t = token(&app).await;
    catch_up(&app.stores, sunday).await;
    for minutes in [0, 95, 600, 1000, 1440] {
        let to = seeded + Duration::days(1) + Duration::minutes(minutes);
        let window = format!("from={}&to={}", stamp(to - Duration::days(1)), stamp(to));
        let threats = app.get(&format!("/dns/threats?{window}"), &t).await;
        assert_eq!(threats.status, StatusCode::OK, "{}", threats.body);
        let live: Vec<&Value> = threats
            .items()
            .iter()
            .filter(|x| time(&x["first_seen_at"]) > seeded)
            .collect();
        assert!(!live.is_empty(), "{window}: {}", threats.body);
        let x = live[0];
        let machine = x["machine"].as_str().expect("machine");
        let domain = x["domain"].as_str().expect("domain");
        let resolutions = app
            .get(
                &format!("/dns/resolutions?machine={machine}&domain={domain}&{window}"),
                &t,
            )
            .await;
        assert!(!resolutions.items().is_empty(), "{}", resolutions.body);
    }
}

/// The live threats are drawn hour by hour: the same however time is cut, about eight a
/// day, and some in every 24-hour window of a month.
#[test]
fn live_threats_are_the_same_however_time_is_cut_and_come_every_day() {
    let from = time(&json!("2026-10-01T00:00:00Z"));
    let to = from + Duration::days(30);
    let (ctx, _dir) = acme_ctx(to);
    let threats = |from, to| -> Vec<Record> {
        netops_demo::dns::produce(&ctx, from, to)
            .records
            .into_iter()
            .filter(|(series, _)| series == "dns_threats")
            .flat_map(|(_, records)| records)
            .collect()
    };
    let whole = threats(from, to);
    let mut cut = Vec::new();
    let mut t = from;
    for minutes in [7, 53, 61, 600, 1, 2000].iter().cycle() {
        let next = (t + Duration::minutes(*minutes)).min(to);
        cut.extend(threats(t, next));
        t = next;
        if t == to {
            break;
        }
    }
    let ids = |records: &[Record]| records.iter().map(|r| r.id.clone()).collect::<Vec<_>>();
    let (mut a, mut b) = (ids(&whole), ids(&cut));
    a.sort();
    b.sort();
    assert_eq!(a, b);
    let per_day = whole.len() as f64 / 30.0;
    assert!((5.0..12.0).contains(&per_day), "{per_day}");
    let mut end = from + Duration::days(1);
    while end <= to {
        let start = end - Duration::days(1);
        assert!(
            whole
                .iter()
                .any(|r| start.timestamp_millis() <= r.ts && r.ts < end.timestamp_millis()),
            "{end}"
        );
        end += Duration::minutes(30);
    }
}

/// The demo's threats are derived from its resolutions by the collection's rules: each of
/// the last day's is one machine, domain and UTC day, whose queries are the machine's
/// resolutions of the domain from its first to its last sighting.
#[tokio::test]
async fn the_demo_threats_are_derived_from_its_resolutions() {
    let app = TestApp::shared();
    let t = token(app).await;
    let threats = app.get("/dns/threats", &t).await;
    assert!(!threats.items().is_empty(), "{}", threats.body);
    for x in threats.items() {
        let (first, last) = (time(&x["first_seen_at"]), time(&x["last_seen_at"]));
        assert_eq!(first.date_naive(), last.date_naive(), "one UTC day: {x}");
        let path = format!(
            "/dns/resolutions?machine={}&domain={}&from={}&to={}&limit=1000",
            x["machine"].as_str().expect("machine"),
            x["domain"].as_str().expect("domain"),
            stamp(first),
            stamp(last + Duration::seconds(1)),
        );
        let resolutions = app.get(&path, &t).await;
        assert_eq!(resolutions.status, StatusCode::OK, "{}", resolutions.body);
        assert_eq!(
            resolutions.items().len() as u64,
            x["queries"].as_u64().expect("queries"),
            "{x}"
        );
        let sinkholed = resolutions.items()[0]["answers"] == json!(["0.0.0.0"]);
        assert_eq!(x["blocked"], sinkholed, "{x}");
    }
}
