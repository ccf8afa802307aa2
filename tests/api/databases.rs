//! Databases: instances, metrics, slow and top queries, sessions, blocking chains, alerts,
//! checks and their results (docs/modules.md#databases).

use chrono::{DateTime, Duration, Utc};
use http::StatusCode;
use netops_shared::scope::Scope;
use serde_json::Value;

use crate::helpers::{TestApp, TestResponse, time};

async fn token(app: &TestApp) -> String {
    app.token("acme", &[Scope::ReadDatabases]).await
}

fn span(res: &TestResponse) -> Duration {
    time(&res.body["meta"]["window"]["to"]) - time(&res.body["meta"]["window"]["from"])
}

async fn instances(app: &TestApp, t: &str) -> Vec<Value> {
    app.get("/databases/instances", t).await.items().clone()
}

/// The first instance: online, with every kind of data.
async fn first_instance(app: &TestApp, t: &str) -> i64 {
    instances(app, t).await[0]["id"].as_i64().expect("id")
}

#[tokio::test]
async fn database_routes_need_the_read_databases_scope() {
    let app = TestApp::shared();
    let other = app.token("acme", &[Scope::ReadSecurity]).await;
    for path in [
        "/databases/instances",
        "/databases/instances/1/metrics",
        "/databases/instances/1/slow-queries",
        "/databases/instances/1/top-queries",
        "/databases/instances/1/sessions",
        "/databases/instances/1/blocking",
        "/databases/alerts",
        "/databases/checks",
        "/databases/checks/1/results",
    ] {
        let res = app.get(path, &other).await;
        assert_eq!(res.status, StatusCode::FORBIDDEN, "{path}");
        assert_eq!(res.body["scope"], "read:databases");
    }
}

#[tokio::test]
async fn instances_show_version_edition_and_state_but_never_the_stored_credentials() {
    let app = TestApp::shared();
    let t = token(app).await;
    let res = app.get("/databases/instances", &t).await;
    assert_eq!(res.status, StatusCode::OK, "{}", res.body);
    let items = res.items();
    assert!(items.len() >= 3);
    for i in items {
        for f in [
            "id", "name", "host", "engine", "version", "edition", "state", "port",
        ] {
            assert!(!i[f].is_null(), "instance lacks {f}: {i}");
        }
        assert!(i.get("login").is_none() && i.get("password").is_none());
    }
    let text = String::from_utf8_lossy(&res.bytes);
    for secret in ["password", "svc-netops-sql", "netops_monitor", "Np!"] {
        assert!(!text.contains(secret), "the body leaks {secret}");
    }
    for state in ["online", "degraded", "offline"] {
        assert!(
            items.iter().any(|i| i["state"] == state),
            "no {state} instance"
        );
    }
    let full = app.full_token().await;
    let machines = app.get("/machines", &full).await;
    for i in items {
        assert!(
            machines.items().iter().any(|m| m["hostname"] == i["host"]),
            "host {} is a fleet machine",
            i["host"]
        );
    }
}

#[tokio::test]
async fn metrics_of_the_last_day_come_as_five_minute_points() {
    let app = TestApp::shared();
    let t = token(app).await;
    let id = first_instance(app, &t).await;
    let res = app
        .get(&format!("/databases/instances/{id}/metrics"), &t)
        .await;
    assert_eq!(res.status, StatusCode::OK, "{}", res.body);
    assert_eq!(span(&res), Duration::hours(24));
    assert_eq!(res.body["meta"]["resolution_seconds"], 300);
    assert_eq!(res.body["meta"]["source"], "samples_5m");
    let points = res.items();
    assert!(
        points.len() > 250 && points.len() <= 289,
        "{}",
        points.len()
    );
    for p in points {
        for f in [
            "ts",
            "cpu_pct",
            "memory_pct",
            "connections",
            "read_latency_ms",
            "write_latency_ms",
        ] {
            assert!(p[f].is_number() || f == "ts", "point lacks {f}: {p}");
        }
        for w in ["cpu", "io", "lock", "network", "other"] {
            assert!(p["waits"][w].is_number(), "{p}");
        }
        let cpu = p["cpu_pct"].as_f64().unwrap_or(-1.0);
        assert!((0.0..=100.0).contains(&cpu));
    }
    let ts: Vec<DateTime<Utc>> = points.iter().map(|p| time(&p["ts"])).collect();
    assert!(ts.windows(2).all(|w| w[0] < w[1]), "oldest to newest");
}

#[tokio::test]
async fn long_metric_windows_are_downsampled_to_at_most_500_points_and_capped_at_31_days() {
    let app = TestApp::shared();
    let t = token(app).await;
    let id = first_instance(app, &t).await;
    let week = app
        .get(&format!("/databases/instances/{id}/metrics?period=7d"), &t)
        .await;
    assert_eq!(week.body["meta"]["resolution_seconds"], 3600);
    assert_eq!(week.body["meta"]["source"], "rollups_1h");
    assert!(week.items().len() >= 160 && week.items().len() <= 169);
    let month = app
        .get(&format!("/databases/instances/{id}/metrics?period=30d"), &t)
        .await;
    assert_eq!(month.body["meta"]["resolution_seconds"], 7200);
    assert!(month.items().len() <= 500 && month.items().len() > 300);
    assert!(month.body["meta"].get("window_capped").is_none());
    let from = (Utc::now() - Duration::days(45)).to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let capped = app
        .get(
            &format!("/databases/instances/{id}/metrics?from={from}"),
            &t,
        )
        .await;
    assert_eq!(capped.status, StatusCode::OK);
    assert_eq!(capped.body["meta"]["window_capped"], true);
    assert_eq!(span(&capped), Duration::days(31));
    assert!(capped.items().len() <= 500);
    let hours = app
        .get(&format!("/databases/instances/{id}/metrics?period=1h"), &t)
        .await;
    assert!(hours.items().len() <= 13 && !hours.items().is_empty());
    // Downsampling keeps the level: the day's mean CPU is close at both resolutions.
    let day5 = app
        .get(&format!("/databases/instances/{id}/metrics?period=24h"), &t)
        .await;
    let mean = |r: &TestResponse| {
        let v: Vec<f64> = r
            .items()
            .iter()
            .filter_map(|p| p["memory_pct"].as_f64())
            .collect();
        v.iter().sum::<f64>() / v.len() as f64
    };
    assert!((mean(&day5) - mean(&week)).abs() < 5.0);
    (app.get(&format!("/databases/instances/{id}/metrics?period=1y"), &t)
        .await)
        .assert_invalid("period");
}

#[tokio::test]
async fn per_instance_routes_answer_404_outside_the_tenant_and_400_on_a_bad_id() {
    let app = TestApp::shared();
    let t = token(app).await;
    let globex = app.token("globex", &[Scope::ReadDatabases]).await;
    let theirs = first_instance(app, &globex).await;
    for route in [
        "metrics",
        "slow-queries",
        "top-queries",
        "sessions",
        "blocking",
    ] {
        let res = app
            .get(&format!("/databases/instances/{theirs}/{route}"), &t)
            .await;
        assert_eq!(res.status, StatusCode::NOT_FOUND, "{route}");
        assert_eq!(res.error(), "not_found");
        assert_eq!(
            app.get(&format!("/databases/instances/{theirs}/{route}"), &globex)
                .await
                .status,
            StatusCode::OK
        );
        assert_eq!(
            app.get(&format!("/databases/instances/abc/{route}"), &t)
                .await
                .status,
            StatusCode::BAD_REQUEST
        );
    }
}

#[tokio::test]
async fn slow_queries_are_sorted_by_duration_without_plan() {
    let app = TestApp::shared();
    let t = token(app).await;
    let id = first_instance(app, &t).await;
    let res = app
        .get(
            &format!("/databases/instances/{id}/slow-queries?period=7d"),
            &t,
        )
        .await;
    assert_eq!(res.status, StatusCode::OK, "{}", res.body);
    assert_eq!(res.body["meta"]["limit"], 50);
    let items = res.items();
    assert!(items.len() > 10);
    let d: Vec<u64> = items
        .iter()
        .filter_map(|q| q["duration_ms"].as_u64())
        .collect();
    assert!(d.windows(2).all(|w| w[0] >= w[1]), "longest first");
    assert!(!String::from_utf8_lossy(&res.bytes).contains("ShowPlanXML"));
    assert!(
        items
            .iter()
            .all(|q| q.get("plan_xml").is_none() && q["statement"].is_string())
    );

    let min = d[d.len() / 2];
    let res = app
        .get(
            &format!("/databases/instances/{id}/slow-queries?period=7d&min_ms={min}"),
            &t,
        )
        .await;
    assert!(!res.items().is_empty());
    assert!(
        res.items()
            .iter()
            .all(|q| q["duration_ms"].as_u64().unwrap_or(0) >= min)
    );
    let res = app
        .get(
            &format!("/databases/instances/{id}/slow-queries?period=7d&limit=3"),
            &t,
        )
        .await;
    assert_eq!(res.items().len(), 3);
    assert_eq!(res.items()[0]["duration_ms"], items[0]["duration_ms"]);
    let res = app
        .get(
            &format!("/databases/instances/{id}/slow-queries?limit=100000"),
            &t,
        )
        .await;
    assert_eq!(res.body["meta"]["limit"], 500);
    (app.get(
        &format!("/databases/instances/{id}/slow-queries?min_ms=-5"),
        &t,
    )
    .await)
        .assert_invalid("min_ms");
    (app.get(
        &format!("/databases/instances/{id}/slow-queries?min_ms=slow"),
        &t,
    )
    .await)
        .assert_invalid("min_ms");
}

#[tokio::test]
async fn top_queries_rank_by_cpu_duration_or_reads_over_at_most_7_days() {
    let app = TestApp::shared();
    let t = token(app).await;
    let id = first_instance(app, &t).await;
    let res = app
        .get(&format!("/databases/instances/{id}/top-queries"), &t)
        .await;
    assert_eq!(res.status, StatusCode::OK, "{}", res.body);
    assert_eq!(res.body["meta"]["limit"], 20);
    assert_eq!(res.body["meta"]["by"], "cpu");
    assert_eq!(span(&res), Duration::hours(24));
    let items = res.items();
    assert!(!items.is_empty());
    let cpu: Vec<f64> = items
        .iter()
        .filter_map(|q| q["total_cpu_ms"].as_f64())
        .collect();
    assert!(cpu.windows(2).all(|w| w[0] >= w[1]));
    for (field, by) in [
        ("total_duration_ms", "duration"),
        ("total_logical_reads", "reads"),
    ] {
        let res = app
            .get(
                &format!("/databases/instances/{id}/top-queries?by={by}&period=3d"),
                &t,
            )
            .await;
        let v: Vec<f64> = res
            .items()
            .iter()
            .filter_map(|q| q[field].as_f64())
            .collect();
        assert!(!v.is_empty() && v.windows(2).all(|w| w[0] >= w[1]), "{by}");
        assert_eq!(res.items()[0]["rank"], 1);
    }
    let week = app
        .get(
            &format!("/databases/instances/{id}/top-queries?period=30d"),
            &t,
        )
        .await;
    assert_eq!(week.body["meta"]["window_capped"], true);
    assert_eq!(span(&week), Duration::days(7));
    let execs = |r: &TestResponse| {
        r.items()
            .iter()
            .filter_map(|q| q["executions"].as_u64())
            .sum::<u64>()
    };
    assert!(
        execs(&week) > execs(&res),
        "a longer window accumulates more snapshots"
    );
    let res = app
        .get(
            &format!("/databases/instances/{id}/top-queries?limit=2"),
            &t,
        )
        .await;
    assert_eq!(res.items().len(), 2);
    (app.get(
        &format!("/databases/instances/{id}/top-queries?by=memory"),
        &t,
    )
    .await)
        .assert_invalid("by");
}

#[tokio::test]
async fn sessions_filter_on_login_partially() {
    let app = TestApp::shared();
    let t = token(app).await;
    let id = first_instance(app, &t).await;
    let res = app
        .get(&format!("/databases/instances/{id}/sessions?period=7d"), &t)
        .await;
    assert_eq!(res.status, StatusCode::OK, "{}", res.body);
    assert_eq!(res.body["meta"]["limit"], 100);
    let items = res.items();
    assert!(!items.is_empty());
    for s in items {
        for f in [
            "session_id",
            "login",
            "host",
            "program",
            "database",
            "status",
            "login_at",
        ] {
            assert!(!s[f].is_null(), "session lacks {f}: {s}");
        }
    }
    let res = app
        .get(
            &format!("/databases/instances/{id}/sessions?period=7d&login=APP_"),
            &t,
        )
        .await;
    assert!(!res.items().is_empty());
    assert!(
        res.items()
            .iter()
            .all(|s| s["login"].as_str().is_some_and(|l| l.starts_with("app_")))
    );
    let res = app
        .get(
            &format!("/databases/instances/{id}/sessions?period=7d&limit=5"),
            &t,
        )
        .await;
    assert_eq!(res.items().len(), 5);
    assert_eq!(res.body["meta"]["truncated"], true);
    let day = app
        .get(&format!("/databases/instances/{id}/sessions"), &t)
        .await;
    assert_eq!(span(&day), Duration::hours(24));
    assert!(day.items().len() < items.len());
}

#[tokio::test]
async fn blocking_chains_show_the_head_and_the_waiting_sessions() {
    let app = TestApp::shared();
    let t = token(app).await;
    let id = first_instance(app, &t).await;
    let res = app
        .get(&format!("/databases/instances/{id}/blocking"), &t)
        .await;
    assert_eq!(res.status, StatusCode::OK, "{}", res.body);
    assert_eq!(span(&res), Duration::hours(24));
    let items = res.items();
    assert!(!items.is_empty());
    for c in items {
        let head = c["head"]["session_id"].as_u64().expect("head");
        let blocked = c["blocked"].as_array().expect("blocked");
        assert!(!blocked.is_empty());
        assert!(blocked.iter().all(|b| {
            b["blocked_by"] == head
                && b["wait_type"]
                    .as_str()
                    .is_some_and(|w| w.starts_with("LCK_M_"))
        }));
    }
}

#[tokio::test]
async fn database_alerts_open_ignore_the_window_and_all_follow_it() {
    let app = TestApp::shared();
    let t = token(app).await;
    let open = app.get("/databases/alerts?status=open", &t).await;
    assert_eq!(open.status, StatusCode::OK, "{}", open.body);
    assert!(!open.items().is_empty());
    assert!(
        open.items()
            .iter()
            .all(|a| a["status"] == "open" && a["resolved_at"].is_null())
    );
    assert!(open.items().iter().any(|a| a["kind"] == "instance_down"));
    let open_hour = app.get("/databases/alerts?status=open&period=1h", &t).await;
    assert_eq!(
        open_hour.items().len(),
        open.items().len(),
        "open alerts whatever the window"
    );
    assert_open_alerts_are_those_of_the_history(app, &t, "/databases/alerts", &open).await;

    let all = app.get("/databases/alerts", &t).await;
    assert_eq!(all.body["meta"]["status"], "all");
    assert_eq!(span(&all), Duration::hours(24));
    let from = time(&all.body["meta"]["window"]["from"]);
    assert!(all.items().iter().all(|a| time(&a["opened_at"]) >= from));
    assert!(all.items().iter().any(|a| a["status"] == "resolved"));
    let month = app.get("/databases/alerts?status=all&period=30d", &t).await;
    assert!(month.items().len() > all.items().len());
    app.get("/databases/alerts?status=closed", &t)
        .await
        .assert_invalid("status");
}

#[tokio::test]
async fn checks_carry_their_query_and_last_result() {
    let app = TestApp::shared();
    let t = token(app).await;
    let res = app.get("/databases/checks", &t).await;
    assert_eq!(res.status, StatusCode::OK, "{}", res.body);
    let items = res.items();
    assert!(items.len() >= 3);
    for c in items {
        assert!(
            c["query"]
                .as_str()
                .is_some_and(|q| q.trim_start().to_uppercase().starts_with("SELECT")),
            "read-only: {c}"
        );
        assert!(c["last_result"]["status"].is_string(), "{c}");
    }
    assert!(items.iter().any(|c| c["enabled"] == false));
}

#[tokio::test]
async fn check_results_follow_the_window_and_404_for_an_unknown_check() {
    let app = TestApp::shared();
    let t = token(app).await;
    let checks = app.get("/databases/checks", &t).await;
    let id = checks.items()[0]["id"].as_i64().expect("id");
    let res = app
        .get(&format!("/databases/checks/{id}/results"), &t)
        .await;
    assert_eq!(res.status, StatusCode::OK, "{}", res.body);
    assert_eq!(span(&res), Duration::hours(24));
    let items = res.items();
    assert!(
        items.len() >= 20 && items.len() <= 25,
        "hourly runs: {}",
        items.len()
    );
    let at: Vec<DateTime<Utc>> = items.iter().map(|r| time(&r["at"])).collect();
    assert!(at.windows(2).all(|w| w[0] > w[1]), "newest first");
    for status in ["ok", "warning", "failed", "error"] {
        assert!(items.iter().any(|r| r["status"] == status), "no {status}");
    }
    assert_eq!(items[0]["at"], checks.items()[0]["last_result"]["at"]);
    let week = app
        .get(&format!("/databases/checks/{id}/results?period=7d"), &t)
        .await;
    assert!(week.items().len() > 150);
    let res = app.get("/databases/checks/42/results", &t).await;
    assert_eq!(res.status, StatusCode::NOT_FOUND);
    let globex = app.token("globex", &[Scope::ReadDatabases]).await;
    assert_eq!(
        app.get(&format!("/databases/checks/{id}/results"), &globex)
            .await
            .status,
        StatusCode::NOT_FOUND
    );
}

/// `status=open` of an alert list (`path`) answered `open`: the open alerts of the whole
/// history (a window as long as the retention), newest first.
pub async fn assert_open_alerts_are_those_of_the_history(
    app: &TestApp,
    token: &str,
    path: &str,
    open: &TestResponse,
) {
    let from =
        (Utc::now() - Duration::days(399)).to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let history = app
        .get(
            &format!("{path}?status=all&from={}", from.replace('+', "%2B")),
            token,
        )
        .await;
    assert_eq!(history.status, StatusCode::OK, "{}", history.body);
    let ids = |items: &[Value]| -> Vec<String> {
        items
            .iter()
            .map(|a| a["id"].as_str().expect("id").to_owned())
            .collect()
    };
    let open_in_history: Vec<Value> = history
        .items()
        .iter()
        .filter(|a| a["status"] == "open")
        .cloned()
        .collect();
    assert_eq!(
        ids(open.items()),
        ids(&open_in_history),
        "same alerts, newest first"
    );
}

#[test]
fn passing_database_alerts_are_the_same_however_time_is_cut() {
    crate::helpers::assert_alerts_the_same_however_time_is_cut(
        netops_demo::databases::produce,
        "db_alerts",
    );
}

/// Two days after the seed, the default day of alerts holds those that passed since: the
/// producer's, resolved, opened in the window.
#[tokio::test]
async fn a_store_seeded_two_days_ago_shows_recent_database_alerts_after_its_catch_up() {
    let app = TestApp::acme_seeded_at(Utc::now() - Duration::days(2)).await;
    let t = app.token("acme", &[Scope::ReadDatabases]).await;
    crate::helpers::assert_recent_alerts_after_catch_up(
        &app,
        &t,
        "/databases/alerts",
        netops_demo::databases::produce,
        "db_alerts",
    )
    .await;
}

/// The demo's instance states and sample alerts are derived from its samples by the
/// collection's rules: an instance is degraded exactly while a `cpu_high` or
/// `memory_pressure` alert of its is open, and each such alert opened at the first of three
/// samples in a row at its bound.
#[tokio::test]
async fn the_demo_instance_states_and_sample_alerts_are_derived_from_its_samples() {
    let app = TestApp::shared();
    let t = token(app).await;
    let open = app
        .get("/databases/alerts?status=open", &t)
        .await
        .items()
        .clone();
    let derived: Vec<&Value> = open
        .iter()
        .filter(|a| a["kind"] == "cpu_high" || a["kind"] == "memory_pressure")
        .collect();
    let mut degraded = 0;
    for inst in instances(app, &t).await {
        if inst["state"] == "offline" {
            continue;
        }
        let alerting = derived.iter().any(|a| a["instance_id"] == inst["id"]);
        assert_eq!(inst["state"] == "degraded", alerting, "{inst}");
        degraded += usize::from(alerting);
    }
    assert!(degraded > 0, "a degraded instance: {open:?}");
    for a in derived {
        let opened = time(&a["opened_at"]);
        let path = format!(
            "/databases/instances/{}/metrics?from={}&to={}",
            a["instance_id"],
            crate::helpers::stamp(opened),
            crate::helpers::stamp(opened + Duration::minutes(15)),
        );
        let points = app.get(&path, &t).await.items().clone();
        let (measure, bound) = if a["kind"] == "cpu_high" {
            ("cpu_pct", 90.0)
        } else {
            ("memory_pct", 95.0)
        };
        assert!(points.len() >= 3, "{points:?}");
        assert!(
            points[points.len() - 3..]
                .iter()
                .all(|p| p[measure].as_f64().is_some_and(|v| v >= bound)),
            "{a}: {points:?}"
        );
    }
}
