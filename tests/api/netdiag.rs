//! NetDiag (docs/modules.md#netdiag): machines under diagnosis, summary, events, applications,
//! PDF report, settings and diagnostic actions.

use std::collections::HashSet;

use chrono::{Duration, Utc};

use http::{Method, StatusCode};
use netops_shared::routes::Function;
use netops_shared::scope::Scope;
use netops_shared::store::Filter;
use serde_json::{Value, json};

use crate::helpers::{TestApp, TestResponse, assert_resolved_between, catch_up, stamp, time, walk};

const VERDICTS: [&str; 7] = ["OK", "PC", "LAN", "INFRA", "WAN", "DNS", "SERVICE"];
const SOURCES: [&str; 20] = [
    "verdict",
    "appv",
    "alert",
    "app",
    "teams",
    "ap",
    "vpn",
    "wlan",
    "driver",
    "trace",
    "speed",
    "capture",
    "netprofile",
    "switch",
    "dhcp",
    "power",
    "wan",
    "tcpfail",
    "proc",
    "install",
];
const SETTINGS_KEYS: [&str; 13] = [
    "apps",
    "extraProbes",
    "traceOnIncident",
    "captureOnIncident",
    "autoWatchApps",
    "flowsEnabled",
    "foregroundEnabled",
    "foregroundTitles",
    "fileEventsEnabled",
    "fileIncludeAppData",
    "installEventsEnabled",
    "processEventsEnabled",
    "windowsEventsEnabled",
];

async fn machines(app: &TestApp, token: &str) -> Vec<Value> {
    let res = app.get("/netdiag/machines", token).await;
    assert_eq!(res.status, StatusCode::OK, "{}", res.body);
    res.items().clone()
}

/// A machine under diagnosis with the given agent status and, if asked, a non-OK verdict.
async fn machine_where(app: &TestApp, token: &str, status: &str, not_ok: bool) -> String {
    machines(app, token)
        .await
        .into_iter()
        .find(|m| m["status"] == status && (m["verdict"] != "OK") == not_ok)
        .and_then(|m| m["hostname"].as_str().map(str::to_owned))
        .unwrap_or_else(|| panic!("no {status} machine with not_ok={not_ok}"))
}

fn assert_invalid(res: &TestResponse, parameter: &str) {
    assert_eq!(res.status, StatusCode::BAD_REQUEST, "{}", res.body);
    assert_eq!(res.error(), "invalid_parameter", "{}", res.body);
    assert_eq!(res.body["parameter"], parameter, "{}", res.body);
    assert!(
        res.body["message"]
            .as_str()
            .is_some_and(|m| m.contains(parameter)),
        "{}",
        res.body
    );
}

fn pdftotext(bytes: &[u8]) -> String {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("report.pdf");
    std::fs::write(&path, bytes).expect("write pdf");
    let out = std::process::Command::new("pdftotext")
        .arg("-layout")
        .arg(&path)
        .arg("-")
        .output()
        .expect("pdftotext (poppler-utils) must be installed");
    assert!(
        out.status.success(),
        "pdftotext failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8 text")
}

// ---------------------------------------------------------------- /netdiag/machines

#[tokio::test]
async fn machines_under_diagnosis_carry_their_verdict_and_alert_state() {
    let app = TestApp::shared();
    let token = app.token("acme", &[Scope::ReadNetdiag]).await;
    let list = machines(app, &token).await;
    assert!(list.len() > 20);
    let fleet = walk(app, "/machines?limit=500", &app.full_token().await).await;
    let with_module: HashSet<&str> = fleet
        .iter()
        .filter(|m| {
            m["modules"]
                .as_array()
                .is_some_and(|a| a.contains(&json!("netdiag")))
        })
        .filter_map(|m| m["hostname"].as_str())
        .collect();
    let listed: HashSet<&str> = list.iter().filter_map(|m| m["hostname"].as_str()).collect();
    assert_eq!(
        listed, with_module,
        "exactly the machines running the netdiag module"
    );
    let mut verdicts = HashSet::new();
    for m in &list {
        let verdict = m["verdict"].as_str().expect("verdict");
        assert!(VERDICTS.contains(&verdict), "{m}");
        verdicts.insert(verdict);
        for field in [
            "id",
            "ip",
            "os",
            "status",
            "last_seen_at",
            "verdict_since",
            "last_measure_at",
        ] {
            assert!(!m[field].is_null(), "{field} missing: {m}");
        }
        if verdict == "OK" {
            assert_eq!(m["alert_state"], "none", "{m}");
            assert!(m["alert"].is_null());
            assert!(m["cause"].is_null());
        } else {
            assert_eq!(m["alert_state"], "open", "{m}");
            let a = &m["alert"];
            assert_eq!(a["status"], "open");
            assert_eq!(a["verdict"], verdict);
            assert_eq!(a["cause"], m["cause"]);
            assert!(a["resolved_at"].is_null());
            assert!(a["id"].as_str().is_some_and(|id| {
                id.starts_with(&format!("nd-{}-", m["hostname"].as_str().unwrap_or("")))
            }));
        }
    }
    assert_eq!(
        verdicts.len(),
        7,
        "every verdict is current somewhere: {verdicts:?}"
    );
    let hostnames: Vec<&str> = list.iter().filter_map(|m| m["hostname"].as_str()).collect();
    let mut sorted = hostnames.clone();
    sorted.sort();
    assert_eq!(hostnames, sorted, "sorted by hostname");
}

#[tokio::test]
async fn machines_of_another_tenant_never_show() {
    let app = TestApp::shared();
    let acme = machines(app, &app.token("acme", &[Scope::ReadNetdiag]).await).await;
    let globex = machines(app, &app.token("globex", &[Scope::ReadNetdiag]).await).await;
    assert!(!globex.is_empty());
    assert!(
        globex
            .iter()
            .all(|m| m["hostname"].as_str().is_some_and(|h| h.starts_with("gx-")))
    );
    assert!(
        acme.iter()
            .all(|m| !m["hostname"].as_str().unwrap_or("gx-").starts_with("gx-"))
    );
    let gx = globex[0]["hostname"].as_str().expect("hostname");
    let res = app
        .get(
            &format!("/netdiag/machines/{gx}/summary"),
            &app.full_token().await,
        )
        .await;
    assert_eq!(res.status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn netdiag_alerts_are_stored_in_the_shape_the_alerts_module_reads() {
    let app = TestApp::shared();
    let docs = app
        .stores
        .docs
        .list("acme", "netdiag_alerts", &Filter::all(), None, 100_000)
        .await
        .expect("alerts");
    assert!(docs.len() > 50);
    let (mut severities, mut statuses) = (HashSet::new(), HashSet::new());
    for d in &docs {
        let a = &d.body;
        let keys: HashSet<&str> = a
            .as_object()
            .expect("object")
            .keys()
            .map(String::as_str)
            .collect();
        let expected: HashSet<&str> = [
            "id",
            "hostname",
            "verdict",
            "cause",
            "severity",
            "status",
            "title",
            "opened_at",
            "resolved_at",
        ]
        .into();
        assert_eq!(keys, expected, "{a}");
        assert_eq!(a["id"], d.key.as_str());
        assert!(
            d.key
                .starts_with(&format!("nd-{}-", a["hostname"].as_str().unwrap_or("")))
        );
        assert!(
            VERDICTS[1..].contains(&a["verdict"].as_str().unwrap_or("")),
            "{a}"
        );
        severities.insert(a["severity"].as_str().unwrap_or("").to_owned());
        statuses.insert(a["status"].as_str().unwrap_or("").to_owned());
        let opened = a["opened_at"]
            .as_str()
            .expect("opened_at")
            .parse::<chrono::DateTime<chrono::Utc>>()
            .expect("rfc3339");
        match a["status"].as_str() {
            Some("open") => assert!(a["resolved_at"].is_null()),
            Some("resolved") => {
                let resolved = a["resolved_at"]
                    .as_str()
                    .expect("resolved_at")
                    .parse::<chrono::DateTime<chrono::Utc>>()
                    .expect("rfc3339");
                assert!(resolved > opened);
            }
            other => panic!("status {other:?}"),
        }
    }
    let all: HashSet<String> = ["critical", "high", "medium", "low", "info"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    assert_eq!(severities, all);
    assert_eq!(statuses.len(), 2);
}

// ---------------------------------------------------------------- summary

#[tokio::test]
async fn summary_gives_distribution_causes_and_latest_measurement() {
    let app = TestApp::shared();
    let token = app.token("acme", &[Scope::ReadNetdiag]).await;
    let host = machine_where(app, &token, "online", true).await;
    let res = app
        .get(
            &format!("/netdiag/machines/{host}/summary?period=30d"),
            &token,
        )
        .await;
    assert_eq!(res.status, StatusCode::OK, "{}", res.body);
    let s = &res.body["data"];
    assert_eq!(s["hostname"], host.as_str());
    let dist = s["distribution"].as_array().expect("distribution");
    let order: Vec<&str> = dist.iter().filter_map(|d| d["verdict"].as_str()).collect();
    assert_eq!(order, VERDICTS);
    let samples = s["samples"].as_u64().expect("samples");
    assert!(
        samples > 2500,
        "30 days of 15-minute measurements: {samples}"
    );
    assert_eq!(
        dist.iter()
            .filter_map(|d| d["samples"].as_u64())
            .sum::<u64>(),
        samples
    );
    let pct: f64 = dist.iter().filter_map(|d| d["share_pct"].as_f64()).sum();
    assert!((pct - 100.0).abs() < 0.5, "{pct}");
    let causes = s["causes"].as_array().expect("causes");
    assert!(!causes.is_empty());
    assert!(
        causes
            .iter()
            .all(|c| c["verdict"] != "OK" && c["cause"].as_str().is_some_and(|t| !t.is_empty()))
    );
    let counts: Vec<u64> = causes
        .iter()
        .filter_map(|c| c["samples"].as_u64())
        .collect();
    assert!(
        counts.windows(2).all(|w| w[0] >= w[1]),
        "most frequent first"
    );
    assert_ne!(s["current"]["verdict"], "OK");
    assert_eq!(s["alert"]["status"], "open");
    let latest = &s["latest"];
    for field in ["at", "verdict", "link", "latency_ms", "loss_pct", "probes"] {
        assert!(!latest[field].is_null(), "latest lacks {field}");
    }
    for field in ["gateway", "dns", "internet"] {
        assert!(latest["latency_ms"].get(field).is_some());
    }
    assert!(!latest["probes"].as_array().expect("probes").is_empty());
    assert!(res.body["meta"]["window"]["from"].is_string());
    assert!(res.body["meta"].get("window_capped").is_none());
}

#[tokio::test]
async fn summary_defaults_to_the_last_24_hours() {
    let app = TestApp::shared();
    let token = app.token("acme", &[Scope::ReadNetdiag]).await;
    let host = machine_where(app, &token, "online", false).await;
    let res = app
        .get(&format!("/netdiag/machines/{host}/summary"), &token)
        .await;
    assert_eq!(res.status, StatusCode::OK);
    let w = &res.body["meta"]["window"];
    let from: chrono::DateTime<chrono::Utc> =
        w["from"].as_str().expect("from").parse().expect("date");
    let to: chrono::DateTime<chrono::Utc> = w["to"].as_str().expect("to").parse().expect("date");
    assert_eq!((to - from).num_hours(), 24);
    let samples = res.body["data"]["samples"].as_u64().expect("samples");
    // A day of 15-minute measurements, less the quarters that passed since the data was made.
    let passed = (chrono::Utc::now() - app.seeded.0).num_minutes() / 15;
    let fewest = u64::try_from(94 - passed).unwrap_or(0);
    assert!(
        (fewest..=97).contains(&samples),
        "a day of 15-minute measurements: {samples}, {passed} quarters after seeding"
    );
}

#[tokio::test]
async fn summary_is_404_for_unknown_machines_and_machines_without_measurement() {
    let app = TestApp::shared();
    let token = app.token("acme", &[Scope::ReadNetdiag]).await;
    for path in [
        "/netdiag/machines/NOPE-0001/summary",
        "/netdiag/machines/par-lt-0001/summary",
        // A server: the netdiag module does not run there, so it has no measurement.
        "/netdiag/machines/PAR-SRV-0001/summary",
        // Long before the history starts.
        "/netdiag/machines/PAR-LT-0001/summary?from=2020-01-01T00:00:00Z&to=2020-01-02T00:00:00Z",
    ] {
        let res = app.get(path, &token).await;
        assert_eq!(res.status, StatusCode::NOT_FOUND, "{path}: {}", res.body);
        assert_eq!(res.error(), "not_found");
    }
    let res = app
        .get("/netdiag/machines/PAR-LT-0001/summary?period=2d", &token)
        .await;
    assert_invalid(&res, "period");
}

// ---------------------------------------------------------------- events

#[tokio::test]
async fn events_never_expose_file_or_fg_whatever_the_filter() {
    let app = TestApp::shared();
    let token = app.token("acme", &[Scope::ReadNetdiag]).await;
    let host = machine_where(app, &token, "online", true).await;
    let all = walk(
        app,
        &format!("/netdiag/machines/{host}/events?period=30d&limit=50"),
        &token,
    )
    .await;
    assert!(all.len() > 20);
    let sources: HashSet<&str> = all.iter().filter_map(|e| e["source"].as_str()).collect();
    assert!(sources.iter().all(|s| SOURCES.contains(s)), "{sources:?}");
    for asked in ["file", "fg", "file,fg", "fg,wlan"] {
        let res = app
            .get(
                &format!("/netdiag/machines/{host}/events?period=30d&source={asked}"),
                &token,
            )
            .await;
        assert_eq!(res.status, StatusCode::OK, "{asked}");
        assert!(
            res.items().iter().all(|e| e["source"] == "wlan"),
            "{asked}: {}",
            res.body
        );
    }
    let res = app
        .get(
            &format!("/netdiag/machines/{host}/events?q=budget&period=30d"),
            &token,
        )
        .await;
    assert!(
        res.items().is_empty(),
        "file events hold the word; they must not leak: {}",
        res.body
    );
}

#[tokio::test]
async fn every_exposed_source_occurs_in_the_demo() {
    let app = TestApp::shared();
    let token = app.token("acme", &[Scope::ReadNetdiag]).await;
    let mut seen = HashSet::new();
    for m in machines(app, &token).await {
        let host = m["hostname"].as_str().expect("hostname");
        let res = app
            .get(
                &format!("/netdiag/machines/{host}/events?period=30d&limit=1000"),
                &token,
            )
            .await;
        seen.extend(
            res.items()
                .iter()
                .filter_map(|e| e["source"].as_str().map(str::to_owned)),
        );
    }
    let missing: Vec<&str> = SOURCES
        .iter()
        .copied()
        .filter(|s| !seen.contains(*s))
        .collect();
    assert!(missing.is_empty(), "sources never seen: {missing:?}");
}

#[tokio::test]
async fn events_filter_by_source_and_text_newest_first() {
    let app = TestApp::shared();
    let token = app.token("acme", &[Scope::ReadNetdiag]).await;
    let host = machine_where(app, &token, "online", true).await;
    let base = format!("/netdiag/machines/{host}/events?period=30d");
    let verdicts = walk(app, &format!("{base}&source=verdict,alert"), &token).await;
    assert!(!verdicts.is_empty());
    assert!(
        verdicts
            .iter()
            .all(|e| e["source"] == "verdict" || e["source"] == "alert")
    );
    let times: Vec<&str> = verdicts.iter().filter_map(|e| e["at"].as_str()).collect();
    let mut sorted = times.clone();
    sorted.sort_by(|a, b| b.cmp(a));
    assert_eq!(times, sorted, "newest first");
    let found = walk(app, &format!("{base}&q=ALERTE"), &token).await;
    assert!(!found.is_empty());
    assert!(found.iter().all(|e| {
        e["message"]
            .as_str()
            .is_some_and(|m| m.to_lowercase().contains("alerte"))
    }));
    let res = app.get(&format!("{base}&source=wifi"), &token).await;
    assert_invalid(&res, "source");
    assert!(
        res.body["message"]
            .as_str()
            .is_some_and(|m| m.contains("tcpfail"))
    );
}

#[tokio::test]
async fn events_page_by_cursor_without_gaps_and_respect_limits() {
    let app = TestApp::shared();
    let token = app.token("acme", &[Scope::ReadNetdiag]).await;
    let host = machine_where(app, &token, "online", true).await;
    let base = format!("/netdiag/machines/{host}/events?period=30d");
    let one = app.get(&format!("{base}&limit=1000"), &token).await;
    assert_eq!(one.body["meta"]["limit"], 1000);
    let paged = walk(app, &format!("{base}&limit=7"), &token).await;
    let ids = |v: &[Value]| {
        v.iter()
            .filter_map(|e| e["id"].as_str().map(str::to_owned))
            .collect::<Vec<_>>()
    };
    assert_eq!(ids(&paged), ids(one.items()));
    assert_eq!(
        app.get(&format!("{base}&limit=99999"), &token).await.body["meta"]["limit"],
        1000
    );
    assert_eq!(app.get(&base, &token).await.body["meta"]["limit"], 200);
    assert_invalid(&app.get(&format!("{base}&limit=0"), &token).await, "limit");
    let first = app.get(&format!("{base}&limit=2"), &token).await;
    let cursor = first.body["meta"]["next_cursor"].as_str().expect("cursor");
    let res = app
        .get(
            &format!("{base}&limit=2&source=wlan&cursor={cursor}"),
            &token,
        )
        .await;
    assert_eq!(res.status, StatusCode::BAD_REQUEST);
    assert_eq!(res.error(), "invalid_cursor");
    let res = app.get("/netdiag/machines/NOPE-0001/events", &token).await;
    assert_eq!(res.status, StatusCode::NOT_FOUND);
}

// ---------------------------------------------------------------- apps

#[tokio::test]
async fn apps_show_verdicts_load_dependencies_probes_and_memory_trend() {
    let app = TestApp::shared();
    let token = app.token("acme", &[Scope::ReadNetdiag]).await;
    let host = machine_where(app, &token, "online", false).await;
    let res = app
        .get(&format!("/netdiag/machines/{host}/apps?period=3d"), &token)
        .await;
    assert_eq!(res.status, StatusCode::OK, "{}", res.body);
    let apps = res.items();
    assert!(apps.len() >= 3);
    assert!(apps.iter().any(|a| a["executable"] == "ms-teams.exe"));
    for a in apps {
        assert!(
            VERDICTS.contains(&a["verdict"].as_str().unwrap_or("")),
            "{a}"
        );
        assert_eq!(a["verdicts"].as_array().map(Vec::len), Some(7));
        assert!(
            a["load"]["cpu_avg_pct"].as_f64().is_some()
                && a["load"]["memory_avg_mb"].as_f64().is_some()
        );
        assert!(!a["dependencies"].as_array().expect("deps").is_empty());
        assert!(a["dependencies"][0]["port"].as_u64().is_some());
        let probes = a["probes"].as_array().expect("probes");
        assert!(!probes.is_empty() && probes.iter().all(|p| p["success_pct"].as_f64().is_some()));
        let trend = &a["memory_trend"];
        assert!(
            ["rising", "falling", "stable"].contains(&trend["direction"].as_str().unwrap_or(""))
        );
        let points = trend["points"].as_array().expect("points");
        assert!(!points.is_empty() && points.len() <= 48);
    }
    assert!(res.body["meta"]["window"].is_object());
    let res = app.get("/netdiag/machines/NOPE-0001/apps", &token).await;
    assert_eq!(res.status, StatusCode::NOT_FOUND);
}

// ---------------------------------------------------------------- report

#[tokio::test]
async fn report_is_a_real_pdf_in_french_by_default() {
    let app = TestApp::shared();
    let token = app.token("acme", &[Scope::ReportPdf]).await;
    let host = machine_where(app, &token_with_read(app).await, "online", true).await;
    let res = app
        .get(
            &format!("/netdiag/machines/{host}/report.pdf?period=7d"),
            &token,
        )
        .await;
    assert_eq!(
        res.status,
        StatusCode::OK,
        "{}",
        String::from_utf8_lossy(&res.bytes)
    );
    assert_eq!(res.header("content-type"), Some("application/pdf"));
    assert!(res.bytes.starts_with(b"%PDF-"));
    assert!(res.bytes.len() < 500 * 1024, "{} bytes", res.bytes.len());
    let text = pdftotext(&res.bytes);
    for expected in [
        "RAPPORT DE DIAGNOSTIC RÉSEAU",
        host.as_str(),
        "(Europe/Paris)",
        "Répartition des verdicts",
        "Principales causes",
        "Dernière mesure",
        "Évènements notables",
        "Chronologie",
        "SERVICE",
    ] {
        assert!(text.contains(expected), "missing {expected:?} in:\n{text}");
    }
    assert!(
        !text.contains("file") || !text.contains("budget.xlsx"),
        "hidden sources stay hidden"
    );
}

async fn token_with_read(app: &TestApp) -> String {
    app.token("acme", &[Scope::ReadNetdiag]).await
}

#[tokio::test]
async fn report_speaks_english_and_shows_times_in_the_asked_zone() {
    let app = TestApp::shared();
    let token = app.token("acme", &[Scope::ReportPdf]).await;
    // A day of the demo history, from noon to noon UTC.
    let day = (chrono::Utc::now() - chrono::Duration::days(10))
        .format("%Y-%m-%d")
        .to_string();
    let next = (chrono::Utc::now() - chrono::Duration::days(9))
        .format("%Y-%m-%d")
        .to_string();
    let path = format!(
        "/netdiag/machines/PAR-LT-0001/report.pdf?from={day}T12:00:00Z&to={next}T12:00:00Z"
    );
    let res = app
        .get(&format!("{path}&lang=en&tz=America/New_York"), &token)
        .await;
    assert_eq!(
        res.status,
        StatusCode::OK,
        "{}",
        String::from_utf8_lossy(&res.bytes)
    );
    let text = pdftotext(&res.bytes);
    assert!(text.contains("NETWORK DIAGNOSTIC REPORT"), "{text}");
    assert!(
        text.contains("Verdict distribution") && text.contains("Latest measurement"),
        "{text}"
    );
    let window_line = text
        .lines()
        .find(|l| l.contains("(America/New_York)"))
        .unwrap_or_else(|| panic!("{text}"));
    // Noon UTC is 07:00 or 08:00 in New York, depending on daylight saving time.
    assert!(
        window_line.contains(&format!("{day} 07:00"))
            || window_line.contains(&format!("{day} 08:00")),
        "{window_line}"
    );
    let res = app.get(&format!("{path}&tz=UTC"), &token).await;
    let text = pdftotext(&res.bytes);
    let fr_day = format!("{}/{}/{}", &day[8..10], &day[5..7], &day[0..4]);
    assert!(text.contains(&format!("Du {fr_day} 12:00 au")), "{text}");
    assert!(text.contains("(UTC)"), "{text}");
}

#[tokio::test]
async fn report_rejects_unknown_zone_and_language_and_needs_its_scope() {
    let app = TestApp::shared();
    let token = app.token("acme", &[Scope::ReportPdf]).await;
    let base = "/netdiag/machines/PAR-LT-0001/report.pdf";
    assert_invalid(
        &app.get(&format!("{base}?tz=Mars/Olympus"), &token).await,
        "tz",
    );
    assert_invalid(&app.get(&format!("{base}?lang=de"), &token).await, "lang");
    let res = app
        .get("/netdiag/machines/NOPE-0001/report.pdf", &token)
        .await;
    assert_eq!(res.status, StatusCode::NOT_FOUND);
    let read_only = app.token("acme", &[Scope::ReadNetdiag]).await;
    let res = app.get(base, &read_only).await;
    assert_eq!(res.status, StatusCode::FORBIDDEN);
    assert_eq!(res.body["scope"], "report:pdf");
    let res = app
        .get("/netdiag/machines/PAR-LT-0001/summary", &token)
        .await;
    assert_eq!(res.status, StatusCode::FORBIDDEN);
    assert_eq!(res.body["scope"], "read:netdiag");
}

#[tokio::test]
async fn report_renders_to_an_image() {
    let app = TestApp::shared();
    let token = app.token("acme", &[Scope::ReportPdf]).await;
    let res = app
        .get(
            "/netdiag/machines/PAR-LT-0001/report.pdf?period=30d",
            &token,
        )
        .await;
    assert_eq!(res.status, StatusCode::OK);
    // Beside the app's own database, in its temporary folder.
    let dir = tempfile::tempdir_in(app.dir.path()).expect("tempdir");
    let pdf = dir.path().join("r.pdf");
    std::fs::write(&pdf, &res.bytes).expect("write");
    let out = std::process::Command::new("pdftoppm")
        .args(["-r", "40", "-png", "-f", "1", "-l", "1"])
        .arg(&pdf)
        .arg(dir.path().join("page"))
        .output()
        .expect("pdftoppm (poppler-utils) must be installed");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).trim().is_empty(),
        "poppler complained: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let png = std::fs::read_dir(dir.path())
        .expect("dir")
        .filter_map(Result::ok)
        .find(|e| e.path().extension().is_some_and(|x| x == "png"));
    assert!(png.is_some_and(|p| p.metadata().map(|m| m.len() > 1000).unwrap_or(false)));
}

// ---------------------------------------------------------------- settings

#[tokio::test]
async fn settings_merge_partially_and_answer_the_full_result() {
    let app = TestApp::with_modules(&[Function::Netdiag]).await;
    let token = app.token("acme", &[Scope::WriteNetdiag]).await;
    let path = "/netdiag/machines/PAR-LT-0001/settings";
    let res = app
        .send(
            Method::PUT,
            path,
            &token,
            json!({"captureOnIncident": true, "apps": ["ms-teams.exe", "sap gui.exe"]}),
        )
        .await;
    assert_eq!(res.status, StatusCode::OK, "{}", res.body);
    let s = &res.body["data"];
    let keys: HashSet<&str> = s
        .as_object()
        .expect("object")
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(keys, SETTINGS_KEYS.into_iter().collect());
    assert_eq!(s["captureOnIncident"], true);
    assert_eq!(s["apps"], json!(["ms-teams.exe", "sap gui.exe"]));
    let res = app
        .send(
            Method::PUT,
            path,
            &token,
            json!({"extraProbes": ["*.acme.local:8443", "erp.acme.local"], "flowsEnabled": false}),
        )
        .await;
    assert_eq!(res.status, StatusCode::OK, "{}", res.body);
    let s = &res.body["data"];
    assert_eq!(s["captureOnIncident"], true, "earlier keys are kept");
    assert_eq!(s["apps"], json!(["ms-teams.exe", "sap gui.exe"]));
    assert_eq!(
        s["extraProbes"],
        json!(["*.acme.local:8443", "erp.acme.local"])
    );
    assert_eq!(s["flowsEnabled"], false);
    let res = app
        .send(Method::PUT, path, &token, json!({"apps": []}))
        .await;
    assert_eq!(
        res.body["data"]["apps"],
        json!([]),
        "empty list: back to the tenant default"
    );
    let log = app.stores.writes.entries("acme").await.expect("log");
    let puts: Vec<_> = log.iter().filter(|e| e.method == "PUT").collect();
    assert_eq!(puts.len(), 3);
    assert!(
        puts.iter()
            .all(|e| e.status == 200 && e.path.ends_with("/netdiag/machines/PAR-LT-0001/settings"))
    );
    assert_eq!(puts[1].body["flowsEnabled"], false, "the body is logged");
}

#[tokio::test]
async fn settings_refuse_unknown_keys_and_bad_values_listing_the_admitted_keys() {
    let app = TestApp::with_modules(&[Function::Netdiag]).await;
    let token = app.token("acme", &[Scope::WriteNetdiag]).await;
    let path = "/netdiag/machines/PAR-LT-0001/settings";
    let eleven: Vec<String> = (0..11).map(|i| format!("app{i}.exe")).collect();
    for (body, key) in [
        (json!({"verbose": true}), "verbose"),
        (json!({"apps": eleven}), "apps"),
        (json!({"apps": "ms-teams.exe"}), "apps"),
        (json!({"apps": [1]}), "apps"),
        (json!({"apps": ["C:\\Windows\\x.exe"]}), "apps"),
        (
            json!({"extraProbes": ["a.b", "c.d", "e.f", "g.h"]}),
            "extraProbes",
        ),
        (json!({"extraProbes": ["intranet"]}), "extraProbes"),
        (
            json!({"extraProbes": ["https://erp.acme.local"]}),
            "extraProbes",
        ),
        (
            json!({"extraProbes": ["erp.acme.local:70000"]}),
            "extraProbes",
        ),
        (json!({"traceOnIncident": "yes"}), "traceOnIncident"),
        (json!({"windowsEventsEnabled": 1}), "windowsEventsEnabled"),
        (json!({"flowsEnabled": true, "unknownKey": 1}), "unknownKey"),
    ] {
        let res = app.send(Method::PUT, path, &token, body.clone()).await;
        assert_eq!(res.status, StatusCode::BAD_REQUEST, "{body}: {}", res.body);
        assert_eq!(res.body["parameter"], key, "{body}: {}", res.body);
        assert_eq!(res.body["admitted_keys"], json!(SETTINGS_KEYS), "{body}");
    }
    // Nothing was written: the settings are still the defaults (a fresh PUT of nothing shows them).
    let res = app.send(Method::PUT, path, &token, json!({})).await;
    assert_eq!(res.body["data"]["flowsEnabled"], true);
    let res = app
        .send(
            Method::PUT,
            "/netdiag/machines/NOPE-0001/settings",
            &token,
            json!({"flowsEnabled": false}),
        )
        .await;
    assert_eq!(res.status, StatusCode::NOT_FOUND);
    let res = app
        .send(
            Method::PUT,
            "/netdiag/machines/gx-nyc-lt001/settings",
            &token,
            json!({"flowsEnabled": false}),
        )
        .await;
    assert_eq!(
        res.status,
        StatusCode::NOT_FOUND,
        "another tenant's machine is unknown here"
    );
    let log = app.stores.writes.entries("acme").await.expect("log");
    assert!(
        log.iter().filter(|e| e.status == 400).count() >= 12,
        "refusals are logged too"
    );
    let res = app
        .request(
            Method::PUT,
            path,
            Some(&token),
            Some(b"[1, 2]".to_vec()),
            &[],
        )
        .await;
    assert_eq!(res.status, StatusCode::BAD_REQUEST);
    let read = app.token("acme", &[Scope::ReadNetdiag]).await;
    let res = app
        .send(Method::PUT, path, &read, json!({"flowsEnabled": false}))
        .await;
    assert_eq!(res.status, StatusCode::FORBIDDEN);
    assert_eq!(res.body["scope"], "write:netdiag");
}

// ---------------------------------------------------------------- actions

#[tokio::test]
async fn actions_are_accepted_with_202_and_queued() {
    let app = TestApp::with_modules(&[Function::Netdiag]).await;
    let token = app.token("acme", &[Scope::WriteNetdiag]).await;
    let path = "/netdiag/machines/PAR-LT-0001/actions";
    for (body, seconds) in [
        (json!({"action": "trace"}), None),
        (json!({"action": "trace", "target": "8.8.8.8"}), None),
        (json!({"action": "speed"}), None),
        (json!({"action": "capture"}), Some(30)),
        (json!({"action": "capture", "seconds": 5}), Some(5)),
        (json!({"action": "capture", "seconds": 120}), Some(120)),
    ] {
        let res = app.send(Method::POST, path, &token, body.clone()).await;
        assert_eq!(res.status, StatusCode::ACCEPTED, "{body}: {}", res.body);
        let a = &res.body["data"];
        assert_eq!(a["action"], body["action"]);
        assert_eq!(a["status"], "queued");
        assert!(
            a["action_id"]
                .as_str()
                .is_some_and(|id| id.starts_with("act-"))
        );
        assert!(a["requested_at"].as_str().is_some());
        assert_eq!(a["seconds"].as_u64(), seconds);
    }
    let queued = app
        .stores
        .docs
        .list("acme", "netdiag_actions", &Filter::all(), None, 100)
        .await
        .expect("actions");
    assert_eq!(queued.len(), 6);
    assert!(queued.iter().all(|d| d.body["status"] == "queued"));
    let log = app.stores.writes.entries("acme").await.expect("log");
    assert_eq!(log.iter().filter(|e| e.status == 202).count(), 6);
}

#[tokio::test]
async fn anything_but_the_three_actions_is_refused() {
    let app = TestApp::with_modules(&[Function::Netdiag]).await;
    let token = app.token("acme", &[Scope::WriteNetdiag]).await;
    let path = "/netdiag/machines/PAR-LT-0001/actions";
    for (body, parameter) in [
        (json!({}), "action"),
        (json!({"action": "reboot"}), "action"),
        (json!({"action": "TRACE"}), "action"),
        (json!({"action": "capture", "seconds": 4}), "seconds"),
        (json!({"action": "capture", "seconds": 121}), "seconds"),
        (json!({"action": "capture", "seconds": 12.5}), "seconds"),
        (json!({"action": "speed", "seconds": 30}), "seconds"),
        (json!({"action": "speed", "target": "8.8.8.8"}), "target"),
        (json!({"action": "trace", "target": "not a host"}), "target"),
        (json!({"action": "trace", "extra": true}), "extra"),
    ] {
        let res = app.send(Method::POST, path, &token, body.clone()).await;
        assert_invalid(&res, parameter);
    }
    let res = app
        .send(
            Method::POST,
            "/netdiag/machines/NOPE-0001/actions",
            &token,
            json!({"action": "speed"}),
        )
        .await;
    assert_eq!(res.status, StatusCode::NOT_FOUND);
    let queued = app
        .stores
        .docs
        .list("acme", "netdiag_actions", &Filter::all(), None, 100)
        .await
        .expect("actions");
    assert!(queued.is_empty());
}

// ---------------------------------------------------------------- as time passes

/// A probe added in `extraProbes` is measured from the time the machine's agent applied it
/// (docs/agent.md#applied-settings): the producers read the applied settings. The agent
/// here is a client of the agent routes; the producers run up to an hour after it applied.
#[tokio::test]
async fn a_probe_the_agent_applied_is_measured_from_then_on() {
    let app = TestApp::acme_seeded_at(Utc::now() - Duration::hours(2)).await;
    let token = app.full_token().await;
    let enroller = app.token("acme", &[Scope::AgentEnroll]).await;
    let host = machine_where(&app, &token, "online", false).await;
    let res = app
        .send(
            Method::POST,
            "/agent/enroll",
            &enroller,
            json!({"hostname": host, "ip": "10.10.1.20", "os": "Windows 11 Pro 24H2", "agent_version": "5.0.0"}),
        )
        .await;
    assert_eq!(res.status, StatusCode::OK, "{}", res.body);
    let agent = res.body["data"]["credential"]
        .as_str()
        .expect("credential")
        .to_owned();
    let probe = "erp.example.com:443";
    let res = app
        .send(
            Method::PUT,
            &format!("/netdiag/machines/{host}/settings"),
            &token,
            json!({"extraProbes": [probe]}),
        )
        .await;
    assert_eq!(res.status, StatusCode::OK, "{}", res.body);
    let latest = async |to: chrono::DateTime<Utc>| {
        let path = format!(
            "/netdiag/machines/{host}/summary?from={}&to={}",
            stamp(to - Duration::hours(1)),
            stamp(to)
        );
        let res = app.get(&path, &token).await;
        assert_eq!(res.status, StatusCode::OK, "{}", res.body);
        res.body["data"]["latest"].clone()
    };
    let probed = |m: &Value| {
        m["probes"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|p| p["target"] == probe)
    };
    // Saved but not applied yet: not measured.
    catch_up(&app.stores, Utc::now() + Duration::minutes(20)).await;
    assert!(!probed(&latest(Utc::now() + Duration::minutes(20)).await));

    let res = app.get("/agent/settings", &agent).await;
    let version = res.body["data"]["version"].as_u64().expect("version");
    assert_eq!(res.body["data"]["settings"]["extraProbes"][0], probe);
    let res = app
        .send(
            Method::POST,
            "/agent/settings/applied",
            &agent,
            json!({"settings_version": version, "agent_version": "5.0.0"}),
        )
        .await;
    assert_eq!(res.status, StatusCode::OK, "{}", res.body);
    let applied = Utc::now();
    catch_up(&app.stores, applied + Duration::hours(1)).await;
    let before = latest(applied - Duration::seconds(1)).await;
    assert!(!probed(&before), "{before}");
    let after = latest(applied + Duration::hours(1)).await;
    assert!(probed(&after), "{after}");
    let p = after["probes"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|p| p["target"] == probe)
        .cloned()
        .unwrap_or_default();
    assert_eq!(p["kind"], "tcp", "{p}");
    assert_eq!(p["ok"], p["ms"].is_f64(), "{p}");
}

#[tokio::test]
async fn every_online_machine_goes_on_being_measured_and_the_seeds_episodes_end() {
    let seeded = Utc::now() - Duration::hours(6);
    let app = TestApp::acme_seeded_at(seeded).await;
    let token = app.full_token().await;
    // The machines the seed leaves in a non-OK verdict, with their open alert.
    let before = machines(&app, &token).await;
    let not_ok: Vec<&str> = before
        .iter()
        .filter(|m| m["status"] == "online" && m["verdict"] != "OK")
        .filter_map(|m| m["hostname"].as_str())
        .collect();
    assert!(not_ok.len() >= 10, "{not_ok:?}");
    let open = walk(&app, "/alerts?kind=netdiag&status=open", &token).await;
    let seeded_alerts: Vec<&Value> = open
        .iter()
        .filter(|a| not_ok.contains(&a["target"].as_str().unwrap_or_default()))
        .collect();
    assert_eq!(seeded_alerts.len(), not_ok.len(), "{open:?}");

    let now = Utc::now();
    catch_up(&app.stores, now).await;
    // Every machine online is measured up to the last quarter hour.
    let after = machines(&app, &token).await;
    for m in after.iter().filter(|m| m["status"] == "online") {
        let last = time(&m["last_measure_at"]);
        assert!(now - last < Duration::minutes(15), "{m}");
    }
    // The episodes of the seed have ended since (within three hours of it): their alerts
    // resolved, their machines' verdict changed after the seed.
    let alerts = walk(&app, "/alerts?kind=netdiag&period=24h", &token).await;
    for seeded_alert in seeded_alerts {
        let alert = assert_resolved_between(
            &alerts,
            &seeded_alert["id"],
            seeded,
            seeded + Duration::hours(4),
        );
        let resolved = time(&alert["resolved_at"]);
        let host = alert["target"].as_str().expect("hostname");
        let machine = after
            .iter()
            .find(|m| m["hostname"] == host)
            .expect("still listed");
        assert!(time(&machine["verdict_since"]) >= resolved, "{machine}");
        // Measured every quarter hour, in its episode (from before the seed), then out of it:
        // the 12 hours up to the catch-up's end (a default window would end at the clock's
        // present, minutes later on a slow store).
        let window = format!(
            "from={}&to={}",
            stamp(now - Duration::hours(12)),
            stamp(now)
        );
        let summary = app
            .get(
                &format!("/netdiag/machines/{host}/summary?{window}"),
                &token,
            )
            .await;
        assert_eq!(summary.status, StatusCode::OK, "{}", summary.body);
        let s = &summary.body["data"];
        assert!(s["samples"].as_u64().is_some_and(|n| n >= 46), "{s}");
        let samples = |ok: bool| -> u64 {
            s["distribution"]
                .as_array()
                .expect("distribution")
                .iter()
                .filter(|d| (d["verdict"] == "OK") == ok)
                .filter_map(|d| d["samples"].as_u64())
                .sum()
        };
        assert!(samples(true) > 0 && samples(false) > 0, "{s}");
    }
}
