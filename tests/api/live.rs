//! The demo data stays alive: what the producers write after the seed, caught up to the
//! present from a store seeded in the past (the clock is the time given to
//! `netops::live::advance`, so no test sleeps).

use chrono::{DateTime, Duration, DurationRound, Utc};
use http::StatusCode;
use netops::live::{self, Watermark};
use netops_shared::scope::Scope;
use netops_shared::store::daily::Span;
use netops_shared::store::{Filter, Position, SeriesQuery, Stores};
use serde_json::{Value, json};

use crate::helpers::{SMALL_ACME, TestApp, acme_ctx, catch_up, stamp, time};

/// Every item of a listing, page after page (a listing without cursor must hold them all).
async fn all_items(app: &TestApp, path: &str, token: &str) -> Vec<Value> {
    let mut items = Vec::new();
    let mut next = path.to_owned();
    loop {
        let res = app.get(&next, token).await;
        assert_eq!(res.status, StatusCode::OK, "{path}: {}", res.body);
        assert_ne!(res.body["meta"]["truncated"], true, "{path}");
        items.extend(res.items().iter().cloned());
        match res.body["meta"]["next_cursor"].as_str() {
            Some(cursor) => next = format!("{path}&cursor={cursor}"),
            None => return items,
        }
    }
}

/// Acknowledges an alert through the API with a note.
async fn ack(app: &TestApp, token: &str, id: &str, note: &str) -> crate::helpers::TestResponse {
    app.send(
        http::Method::POST,
        &format!("/alerts/{id}/ack"),
        token,
        json!({ "note": note }),
    )
    .await
}

fn hour_floor(t: DateTime<Utc>) -> DateTime<Utc> {
    t.duration_trunc(Duration::hours(1)).expect("hour")
}

#[tokio::test]
async fn a_store_seeded_two_days_ago_is_caught_up_and_its_default_windows_fill_again() {
    let seeded = Utc::now() - Duration::days(2);
    let app = TestApp::acme_seeded_at(seeded).await;
    let token = app
        .token(
            "acme",
            &[Scope::ReadDns, Scope::ReadFirewall, Scope::ReadFlows],
        )
        .await;
    let routes = [
        "/flows",
        "/flows/destinations",
        "/dns/resolutions",
        "/dns/top-domains",
        "/firewall/events",
    ];
    for path in routes {
        let res = app.get(path, &token).await;
        assert_eq!(res.status, StatusCode::OK);
        assert!(res.items().is_empty(), "{path} before the catch-up");
    }
    let now = Utc::now();
    assert!(catch_up(&app.stores, now).await > 1000);
    let mark = live::watermark(&app.stores, "acme")
        .await
        .expect("read")
        .expect("watermark");
    assert_eq!((mark.until, mark.pending), (now, None));
    for path in routes {
        let res = app.get(path, &token).await;
        assert!(res.items().len() > 10, "{path} after the catch-up");
    }
    // The newest event is the newest the producer drew until now: the live data reaches the
    // present (the firewall's evenings can be quiet for more than an hour, so its newest
    // event is not always within the hour).
    let res = app.get("/firewall/events?limit=1", &token).await;
    let newest = time(&res.items()[0]["at"]);
    let (ctx, _dir) = acme_ctx(now);
    let drawn = netops_demo::firewall::produce(&ctx.seeded(seeded), seeded, now)
        .records
        .into_iter()
        .filter(|(series, _)| series == netops_firewall::model::EVENTS)
        .flat_map(|(_, records)| records)
        .map(|r| r.ts)
        .max()
        .expect("events drawn");
    assert_eq!(newest.timestamp_millis(), drawn, "{newest}");
    assert!(now - newest < Duration::hours(12), "{newest}");
    // The present state: the jobs that run more than once a day signalled since the seed
    // (two days of runs all missed is not drawn), the online machines seen moments ago.
    let token = app
        .token("acme", &[Scope::ReadMonitors, Scope::ReadMachines])
        .await;
    let beats = app.get("/heartbeats", &token).await;
    let frequent: Vec<&Value> = beats
        .items()
        .iter()
        .filter(|b| b["period_s"].as_i64().is_some_and(|p| p < 86_400))
        .collect();
    assert!(frequent.len() >= 3, "{}", beats.body);
    for b in frequent {
        assert!(time(&b["last_signal_at"]) > seeded, "{b}");
    }
    let machines = app.get("/machines?status=online&limit=5", &token).await;
    for m in machines.items() {
        let seen: DateTime<Utc> = m["last_seen_at"]
            .as_str()
            .and_then(|t| t.parse().ok())
            .expect("seen");
        assert!(now - seen < Duration::minutes(5), "{m}");
    }
    // Nothing more to write at the same time.
    assert_eq!(catch_up(&app.stores, now).await, 0);
}

#[tokio::test]
async fn the_counts_of_the_produced_hours_equal_their_records() {
    // An hour and more of simulated time after the seed: the full hours between are the
    // producers' alone.
    let seeded = Utc::now() - Duration::minutes(150);
    let app = TestApp::acme_seeded_at(seeded).await;
    let token = app
        .token(
            "acme",
            &[Scope::ReadDns, Scope::ReadFirewall, Scope::ReadFlows],
        )
        .await;
    // In steps, as the background task writes it.
    let now = Utc::now();
    for step in [
        seeded + Duration::minutes(7),
        seeded + Duration::minutes(61),
        now,
    ] {
        catch_up(&app.stores, step).await;
    }
    let from = hour_floor(seeded) + Duration::hours(1);
    let to = hour_floor(now);
    let window = format!("from={}&to={}", stamp(from), stamp(to));

    let resolutions = all_items(
        &app,
        &format!("/dns/resolutions?limit=1000&{window}"),
        &token,
    )
    .await;
    assert!(!resolutions.is_empty());
    let domains = all_items(
        &app,
        &format!("/dns/top-domains?limit=500&{window}"),
        &token,
    )
    .await;
    let counted: f64 = domains.iter().filter_map(|d| d["queries"].as_f64()).sum();
    assert_eq!(counted as usize, resolutions.len());
    let nx = resolutions
        .iter()
        .filter(|r| r["response_code"] == "NXDOMAIN")
        .count();
    let counted_nx: f64 = domains.iter().filter_map(|d| d["nxdomain"].as_f64()).sum();
    assert_eq!(counted_nx as usize, nx);

    let flows = all_items(&app, &format!("/flows?limit=500&{window}"), &token).await;
    assert!(!flows.is_empty());
    let summary = app.get(&format!("/flows/summary?{window}"), &token).await;
    assert_eq!(summary.status, StatusCode::OK, "{}", summary.body);
    let totals = &summary.body["data"]["totals"];
    assert_eq!(
        totals["flows"].as_u64(),
        Some(flows.len() as u64),
        "{totals}"
    );
    let bytes: u64 = flows.iter().filter_map(|f| f["bytes"].as_u64()).sum();
    assert_eq!(totals["bytes"].as_u64(), Some(bytes));

    // The firewall report reads its summary counts from day rows by period: here they are
    // added up over the same hours, as the report does.
    let events = all_items(
        &app,
        &format!("/firewall/events?limit=1000&{window}"),
        &token,
    )
    .await;
    assert!(!events.is_empty());
    let summed = netops_firewall::report::read(
        app.stores.rollups.as_ref(),
        "acme",
        Span::covering(from.timestamp_millis(), to.timestamp_millis()),
        20,
    )
    .await
    .expect("report counts")
    .summary
    .events;
    assert_eq!(summed as usize, events.len());
}

/// Every record of a series, oldest first, as (partition, time, id, body).
async fn records(stores: &Stores, series: &str) -> Vec<(String, i64, String, Value)> {
    let filter = Filter::all();
    let mut out = Vec::new();
    let mut after: Option<Position> = None;
    loop {
        let page = stores
            .series
            .scan(&SeriesQuery {
                tenant: "acme",
                series,
                partition: None,
                from: 0,
                to: i64::MAX,
                filter: &filter,
                after: after.as_ref(),
                limit: 1000,
            })
            .await
            .expect("scan");
        out.extend(
            page.records
                .into_iter()
                .map(|r| (r.partition, r.ts, r.id, r.body)),
        );
        match page.next {
            Some(next) => after = Some(next),
            None => break,
        }
    }
    out.sort_by(|a, b| (a.1, &a.0, &a.2).cmp(&(b.1, &b.0, &b.2)));
    out
}

/// Every rollup of a series, as (hour, key, measures).
async fn rollups(stores: &Stores, series: &str) -> Vec<(i64, String, Value)> {
    stores
        .rollups
        .rows("acme", series, 0, i64::MAX, &Filter::all())
        .await
        .expect("rows")
        .into_iter()
        .map(|r| (r.hour, r.key, json!(r.measures)))
        .collect()
}

/// Every document of a collection, as (key, body).
async fn documents(stores: &Stores, collection: &str) -> Vec<(String, Value)> {
    stores
        .docs
        .list("acme", collection, &Filter::all(), None, 10_000)
        .await
        .expect("list")
        .into_iter()
        .map(|d| (d.key, d.body))
        .collect()
}

/// What the producers wrote, to compare two stores.
async fn produced(
    stores: &Stores,
) -> (
    Vec<Vec<(String, i64, String, Value)>>,
    Vec<Vec<(i64, String, Value)>>,
    Vec<Vec<(String, Value)>>,
) {
    let mut series = Vec::new();
    for name in [
        netops_flows::model::RECORDS,
        netops_dns::model::RESOLUTIONS,
        netops_dns::model::SERVER_QUERIES,
        netops_firewall::model::EVENTS,
        netops_firewall::model::DIRECTORY,
        netops_network::model::METRICS,
        "db_metrics",
        "siem_events",
        "netdiag_measures",
        "netdiag_periods",
        "netdiag_events",
    ] {
        series.push(records(stores, name).await);
    }
    let mut sums = Vec::new();
    for name in [
        "flows.sum.dh",
        "dns_domains.d",
        "dns_domains.dh",
        "firewall_report.d",
        "firewall_report.dh",
        "monitor_checks_hourly",
        "monitor_checks_daily",
    ] {
        sums.push(rollups(stores, name).await);
    }
    let mut docs = Vec::new();
    for name in [
        "monitor_incidents",
        "siem_incidents",
        "netdiag_alerts",
        "netdiag_state",
        netops_firewall::model::DIRECTORY_ACCOUNTS,
    ] {
        docs.push(documents(stores, name).await);
    }
    (series, sums, docs)
}

#[tokio::test]
async fn the_same_seed_and_clock_give_the_same_data_however_time_is_cut() {
    let seeded = hour_floor(Utc::now()) - Duration::hours(5) + Duration::minutes(13);
    let now = seeded + Duration::hours(4) + Duration::minutes(29);
    let one = TestApp::acme_seeded_at(seeded).await;
    catch_up(&one.stores, now).await;
    let steps = TestApp::acme_seeded_at(seeded).await;
    for minutes in [1, 2, 45, 60, 61, 179, 200] {
        catch_up(&steps.stores, seeded + Duration::minutes(minutes)).await;
    }
    catch_up(&steps.stores, now).await;
    let (a, b) = (produced(&one.stores).await, produced(&steps.stores).await);
    assert!(a.0.iter().all(|s| !s.is_empty()) && a.1.iter().all(|s| !s.is_empty()));
    for (i, (x, y)) in a.0.iter().zip(&b.0).enumerate() {
        assert!(x == y, "series {i} depends on how time was cut");
    }
    for (i, (x, y)) in a.1.iter().zip(&b.1).enumerate() {
        assert!(x == y, "rollups {i} depend on how time was cut");
    }
    for (i, (x, y)) in a.2.iter().zip(&b.2).enumerate() {
        let diff: Vec<_> = x.iter().filter(|d| !y.contains(d)).take(2).collect();
        assert!(x == y, "documents {i} depend on how time was cut: {diff:?}");
    }
}

#[tokio::test]
async fn a_batch_stopped_after_its_rollups_is_resumed_without_counting_twice() {
    let seeded = hour_floor(Utc::now()) - Duration::hours(3) + Duration::minutes(20);
    let now = seeded + Duration::hours(2);
    let whole = TestApp::acme_sized_at(SMALL_ACME, seeded).await;
    catch_up(&whole.stores, now).await;

    // The second store is stopped in the middle of its second batch, after its records and
    // rollups were written and before its watermark moved on: what a kill leaves.
    let killed = TestApp::acme_sized_at(SMALL_ACME, seeded).await;
    let first_end = hour_floor(seeded) + Duration::hours(1);
    let second_end = first_end + Duration::hours(1);
    catch_up(&killed.stores, second_end).await;
    let mark = live::watermark(&killed.stores, "acme")
        .await
        .expect("read")
        .expect("watermark");
    let stopped = Watermark {
        until: first_end,
        pending: Some(second_end),
        ..mark
    };
    killed
        .stores
        .docs
        .put(
            "acme",
            live::COLLECTION,
            vec![(
                live::WATERMARK.to_owned(),
                serde_json::to_value(&stopped).expect("json"),
            )],
        )
        .await
        .expect("put");
    catch_up(&killed.stores, now).await;
    assert!(produced(&whole.stores).await == produced(&killed.stores).await);
}

#[tokio::test]
async fn an_acknowledgement_made_through_the_api_survives_the_producers() {
    let seeded = Utc::now() - Duration::hours(3);
    let app = TestApp::acme_sized_at(SMALL_ACME, seeded).await;
    let token = app.full_token().await;
    let list = "/alerts?kind=hostmonitor&status=open&limit=200";
    let open = app.get(list, &token).await;
    let alert = open
        .items()
        .iter()
        .find(|a| a["details"]["status"] == "unresolved")
        .cloned()
        .expect("an unresolved incident");
    let id = alert["id"].as_str().expect("id").to_owned();
    let res = ack(&app, &token, &id, "Vu.").await;
    assert_eq!(res.status, StatusCode::OK, "{}", res.body);
    catch_up(&app.stores, Utc::now()).await;
    // Resolved since (the seed's incidents end within three hours), its acknowledgement kept.
    let after = all_items(&app, "/alerts?kind=hostmonitor&period=24h", &token).await;
    let alert = after
        .iter()
        .find(|a| a["id"] == id.as_str())
        .cloned()
        .expect("still listed");
    assert_eq!(alert["details"]["status"], "resolved", "{alert}");
    assert_eq!(alert["acknowledged"], true, "{alert}");
    assert_eq!(alert["details"]["notes"], "Vu.");
}

/// Whether an alert id is one of the incidents produced after the seed (monitor incidents
/// numbered from the hour they start in, SIEM incidents dated by it).
fn produced_alert(alert: &Value) -> bool {
    let id = alert["id"].as_str().unwrap_or_default();
    id.strip_prefix("hm-").is_some_and(|n| n.len() > 12)
        || id.strip_prefix("siem-").is_some_and(|n| n.len() > 12)
}

/// What the alerts producer makes from a seed at `seeded` until `now` (no store needed).
fn produced_since(now: DateTime<Utc>, seeded: DateTime<Utc>) -> netops_demo::Produced {
    let (ctx, _dir) = acme_ctx(now);
    netops_demo::alerts::produce(&ctx.seeded(seeded), seeded, now)
}

/// The monitor incidents that `produced` opens and resolves, as (start, end).
fn monitor_incidents(produced: &netops_demo::Produced) -> Vec<(DateTime<Utc>, DateTime<Utc>)> {
    produced
        .changes
        .iter()
        .filter(|c| c.collection == "monitor_incidents")
        .filter_map(|c| {
            let body = c.created.as_ref()?;
            let start = body["started_at"].as_str()?.parse().ok()?;
            let end = body["resolved_at"].as_str()?.parse().ok()?;
            Some((start, end))
        })
        .collect()
}

/// The newest monitor incident of the last two days that a seed half an hour before its
/// start leaves to the producers, as (start, end): the test seeds there and catches up
/// around it only. What the producers make depends on the seed's time (a monitor the seed
/// left failing opens nothing until its incident ends), so each candidate is checked with a
/// seed at that time.
fn a_recent_incident(now: DateTime<Utc>) -> (DateTime<Utc>, DateTime<Utc>) {
    let produced = produced_since(now, now - Duration::days(2));
    // SIEM incidents open too, and the analyst resolves some.
    let siem = produced
        .changes
        .iter()
        .filter(|c| c.collection == "siem_incidents");
    assert!(siem.clone().any(|c| c.created.is_some()));
    assert!(siem.clone().any(|c| c.update.is_some()));
    let mut candidates = monitor_incidents(&produced);
    candidates.retain(|(start, end)| {
        *end < now - Duration::minutes(5) && *end - *start > Duration::minutes(5)
    });
    candidates.sort_unstable();
    candidates
        .into_iter()
        .rev()
        .find(|&(start, end)| {
            let seeded = start - Duration::minutes(30);
            monitor_incidents(&produced_since(now, seeded)).contains(&(start, end))
        })
        .expect("an incident in two days")
}

#[tokio::test]
async fn alerts_open_and_resolve_as_time_passes_and_an_acknowledgement_between_is_kept() {
    let now = Utc::now();
    let (start, end) = a_recent_incident(now);
    let seeded = start - Duration::minutes(30);
    let app = TestApp::acme_seeded_at(seeded).await;
    let token = app.full_token().await;
    // Caught up to a minute after the incident opened: it is open in the default window.
    catch_up(&app.stores, start + Duration::minutes(1)).await;
    let open = all_items(&app, "/alerts?kind=hostmonitor&status=open", &token).await;
    let alert = open
        .iter()
        .find(|a| {
            produced_alert(a)
                && a["opened_at"]
                    .as_str()
                    .and_then(|t| t.parse::<DateTime<Utc>>().ok())
                    == Some(start)
        })
        .expect("the incident open");
    let id = alert["id"].as_str().expect("id").to_owned();
    assert_eq!(alert["resolved_at"], Value::Null);
    // Acknowledged through the API between two batches.
    let res = ack(&app, &token, &id, "Vu pendant la panne.").await;
    assert_eq!(res.status, StatusCode::OK, "{}", res.body);
    catch_up(&app.stores, now).await;
    // Resolved at its end by the producers, its acknowledgement kept.
    let all = all_items(&app, "/alerts?kind=hostmonitor&period=3d", &token).await;
    let alert = all
        .iter()
        .find(|a| a["id"] == id.as_str())
        .expect("the acknowledged incident");
    assert_eq!(alert["status"], "resolved", "{alert}");
    let resolved: DateTime<Utc> = alert["resolved_at"]
        .as_str()
        .and_then(|t| t.parse().ok())
        .expect("resolved_at");
    assert_eq!(resolved, end);
    assert_eq!(alert["acknowledged"], true, "{alert}");
    assert_eq!(alert["details"]["notes"], "Vu pendant la panne.", "{alert}");
    assert_eq!(
        alert["details"]["acknowledged_by"],
        res.body["data"]["acknowledged_by"]
    );
}

/// A producer's change of a document is conditional on the version it read: a write made
/// through the API in between (an acknowledgement) fails the put, and the change made again
/// on the document as that write left it keeps the write.
#[tokio::test]
async fn a_producer_change_keeps_an_acknowledgement_made_since_its_read() {
    use netops_demo::DocChange;
    use netops_shared::store::{Expect, StoreError};

    fn resolve(body: &mut Value, end: &Value) -> bool {
        body["status"] = json!("resolved");
        body["resolved_at"] = end.clone();
        true
    }

    let app = TestApp::acme_sized_at(SMALL_ACME, Utc::now() - Duration::hours(1)).await;
    let token = app.full_token().await;
    let open = all_items(&app, "/alerts?kind=hostmonitor&status=open", &token).await;
    let alert = open
        .iter()
        .find(|a| a["details"]["status"] == "unresolved")
        .expect("an unresolved incident");
    let n: i64 = alert["details"]["id"].as_i64().expect("number");
    let key = format!("{n:010}");
    let collection = "monitor_incidents";
    // The producer's read.
    let stored = || async {
        app.stores
            .docs
            .get("acme", collection, &key)
            .await
            .expect("get")
            .expect("incident")
    };
    let read = stored().await;
    // The acknowledgement, between the read and the put.
    let res = ack(&app, &token, &format!("hm-{n}"), "Pris.").await;
    assert_eq!(res.status, StatusCode::OK, "{}", res.body);
    let end = json!(Utc::now());
    let mut stale = read.body.clone();
    resolve(&mut stale, &end);
    for expect in [Expect::Version(read.version), Expect::Absent] {
        let put = app
            .stores
            .docs
            .put_if("acme", collection, &key, stale.clone(), expect)
            .await;
        assert!(
            matches!(put, Err(StoreError::ConditionFailed)),
            "{expect:?}"
        );
    }
    let acked = stored().await;
    assert_eq!(acked.body["status"], "acknowledged");
    // Made again on what the write left.
    DocChange {
        collection,
        key: key.clone(),
        created: None,
        update: Some((resolve, end.clone())),
    }
    .apply(&app.stores, "acme")
    .await
    .expect("apply");
    let doc = stored().await;
    assert!(doc.version != acked.version);
    assert_eq!(doc.body["status"], "resolved");
    assert_eq!(doc.body["resolved_at"], end);
    assert_eq!(doc.body["notes"], "Pris.");
    assert_eq!(doc.body["acknowledged_at"], acked.body["acknowledged_at"]);
    // The current version is what a put may expect.
    app.stores
        .docs
        .put_if(
            "acme",
            collection,
            &key,
            doc.body.clone(),
            Expect::Version(doc.version),
        )
        .await
        .expect("put at the version read");
}

#[tokio::test]
async fn netdiag_goes_on_measuring_and_its_verdict_episodes_open_and_resolve_alerts() {
    let seeded = Utc::now() - Duration::hours(30);
    let app = TestApp::acme_seeded_at(seeded).await;
    let token = app.full_token().await;
    let now = Utc::now();
    catch_up(&app.stores, now).await;
    // NetDiag alerts numbered from the hour their episode started: the produced ones.
    let alerts = all_items(&app, "/alerts?kind=netdiag&period=3d", &token).await;
    let produced: Vec<&Value> = alerts
        .iter()
        .filter(|a| {
            a["id"]
                .as_str()
                .and_then(|id| id.rsplit('-').next())
                .is_some_and(|n| n.len() > 5)
        })
        .collect();
    assert!(
        produced.iter().any(|a| a["status"] == "resolved"),
        "{produced:?}"
    );
    // A machine measured lately has the events of its episodes in its feed.
    let machines = app.get("/netdiag/machines", &token).await;
    assert_eq!(machines.status, StatusCode::OK, "{}", machines.body);
    let recent: Vec<&Value> = machines
        .items()
        .iter()
        .filter(|m| {
            m["last_measure_at"]
                .as_str()
                .and_then(|t| t.parse::<DateTime<Utc>>().ok())
                .is_some_and(|t| now - t < Duration::minutes(16))
        })
        .collect();
    assert!(recent.len() > 5, "{}", machines.body);
    let host = produced[0]["target"].as_str().expect("hostname");
    let events = all_items(
        &app,
        &format!("/netdiag/machines/{host}/events?period=3d"),
        &token,
    )
    .await;
    let id = produced[0]["id"].as_str().expect("id");
    assert!(
        events
            .iter()
            .any(|e| e["details"]["alert_id"] == id && e["source"] == "alert"),
        "{id}: {events:?}"
    );
}
