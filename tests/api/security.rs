//! Security: logons, lockouts, account changes, risky accounts, anomalies, SIEM incidents
//! and rules (docs/modules.md#security).

use chrono::{DateTime, Datelike, Duration, DurationRound, Timelike, Utc};
use http::StatusCode;
use netops_demo::Produced;
use netops_shared::scope::Scope;
use netops_shared::store::Record;
use serde_json::{Value, json};

use crate::helpers::{TestApp, acme_ctx, catch_up, stamp, time, walk};

async fn token(app: &TestApp) -> String {
    app.token("acme", &[Scope::ReadSecurity]).await
}

fn span(body: &Value) -> Duration {
    time(&body["meta"]["window"]["to"]) - time(&body["meta"]["window"]["from"])
}

#[tokio::test]
async fn security_routes_need_the_read_security_scope() {
    let app = TestApp::shared();
    let other = app
        .token("acme", &[Scope::ReadInventory, Scope::ReadAlerts])
        .await;
    for path in [
        "/security/logons",
        "/security/lockouts",
        "/security/account-changes",
        "/security/risky-accounts",
        "/security/anomalies",
        "/security/incidents",
        "/security/incidents/1",
        "/security/rules",
    ] {
        let res = app.get(path, &other).await;
        assert_eq!(res.status, StatusCode::FORBIDDEN, "{path}");
        assert_eq!(res.body["scope"], "read:security");
    }
}

#[tokio::test]
async fn logons_default_to_the_last_24_hours_newest_first() {
    let app = TestApp::shared();
    let t = token(app).await;
    let res = app.get("/security/logons", &t).await;
    assert_eq!(res.status, StatusCode::OK, "{}", res.body);
    assert_eq!(res.body["meta"]["limit"], 100);
    assert_eq!(span(&res.body), Duration::hours(24));
    assert!(res.body["meta"].get("window_capped").is_none());
    assert!(res.body["meta"]["next_cursor"].is_string());
    let items = res.items();
    assert_eq!(items.len(), 100);
    let from = time(&res.body["meta"]["window"]["from"]);
    let times: Vec<DateTime<Utc>> = items.iter().map(|l| time(&l["ts"])).collect();
    assert!(times.iter().all(|t| *t >= from));
    assert!(times.windows(2).all(|w| w[0] >= w[1]), "newest first");
    for l in items {
        let ok = l["result"] == "success";
        assert_eq!(l["event_id"], if ok { 4624 } else { 4625 });
        for f in ["id", "user", "logon_type", "source_ip", "target_host", "dc"] {
            assert!(!l[f].is_null(), "logon lacks {f}: {l}");
        }
    }
}

#[tokio::test]
async fn logon_windows_are_capped_at_7_days() {
    let app = TestApp::shared();
    let t = token(app).await;
    let res = app.get("/security/logons?period=30d", &t).await;
    assert_eq!(res.status, StatusCode::OK);
    assert_eq!(res.body["meta"]["window_capped"], true);
    assert_eq!(span(&res.body), Duration::days(7));
    let res = app.get("/security/logons?period=3d", &t).await;
    assert!(res.body["meta"].get("window_capped").is_none());
    assert_eq!(span(&res.body), Duration::days(3));
    app.get("/security/logons?period=2w", &t)
        .await
        .assert_invalid("period");
    app.get("/security/logons?from=yesterday", &t)
        .await
        .assert_invalid("from");
}

#[tokio::test]
async fn logon_filters_match_user_and_host_partially_and_source_ip_exactly() {
    let app = TestApp::shared();
    let t = token(app).await;
    let sample = app
        .get("/security/logons?period=3d&result=success", &t)
        .await;
    let one = sample
        .items()
        .iter()
        .find(|l| l["logon_type"] == 3 && l["source_host"].is_string())
        .expect("a network logon");
    let user = one["user"].as_str().expect("user");
    let part: String = user.chars().take(5).collect::<String>().to_uppercase();
    let by_user = walk(
        app,
        &format!("/security/logons?period=3d&user={}", urlenc(&part)),
        &t,
    )
    .await;
    assert!(by_user.iter().any(|l| l["user"] == user));
    assert!(by_user.iter().all(|l| {
        l["user"]
            .as_str()
            .is_some_and(|u| u.to_uppercase().contains(&part))
    }));

    let target = one["target_host"].as_str().expect("target");
    let by_host = walk(
        app,
        &format!(
            "/security/logons?period=24h&host={}",
            &target[..target.len() - 1].to_lowercase()
        ),
        &t,
    )
    .await;
    assert!(!by_host.is_empty());
    let needle = target[..target.len() - 1].to_lowercase();
    assert!(
        by_host
            .iter()
            .all(|l| [&l["source_host"], &l["target_host"]].iter().any(|h| h
                .as_str()
                .is_some_and(|h| h.to_lowercase().contains(&needle))))
    );
    let source = one["source_host"].as_str().expect("source");
    let as_source = walk(
        app,
        &format!("/security/logons?period=3d&host={source}"),
        &t,
    )
    .await;
    assert!(
        as_source
            .iter()
            .any(|l| l["source_host"] == source && l["target_host"] != source),
        "source side matches"
    );

    let ip = one["source_ip"].as_str().expect("ip");
    let by_ip = walk(
        app,
        &format!("/security/logons?period=3d&source_ip={ip}"),
        &t,
    )
    .await;
    assert!(!by_ip.is_empty() && by_ip.iter().all(|l| l["source_ip"] == ip));
    let partial_ip = app
        .get(
            &format!(
                "/security/logons?period=3d&source_ip={}",
                &ip[..ip.len() - 1]
            ),
            &t,
        )
        .await;
    assert!(
        partial_ip.items().iter().all(|l| l["source_ip"] != ip),
        "source_ip is exact"
    );

    let failures = walk(
        app,
        "/security/logons?period=24h&result=failure&limit=50",
        &t,
    )
    .await;
    assert!(!failures.is_empty());
    assert!(
        failures
            .iter()
            .all(|l| l["event_id"] == 4625 && l["failure_reason"].is_string())
    );
    app.get("/security/logons?result=maybe", &t)
        .await
        .assert_invalid("result");
}

/// A text for a query string: logins and groups have accents and spaces.
fn urlenc(s: &str) -> String {
    form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

#[tokio::test]
async fn logon_pages_follow_each_other_without_repeats() {
    let app = TestApp::shared();
    let t = token(app).await;
    let all = walk(app, "/security/logons?period=6h&limit=40", &t).await;
    let mut ids: Vec<&str> = all.iter().filter_map(|l| l["id"].as_str()).collect();
    let n = ids.len();
    assert!(n > 40, "several pages");
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), n, "no logon repeated");
    assert_eq!(
        app.get("/security/logons?limit=10000", &t).await.body["meta"]["limit"],
        500
    );
    app.get("/security/logons?limit=0", &t)
        .await
        .assert_invalid("limit");
    let first = app.get("/security/logons?limit=5", &t).await;
    let cursor = first.body["meta"]["next_cursor"].as_str().expect("cursor");
    let res = app
        .get(
            &format!("/security/logons?limit=5&result=failure&cursor={cursor}"),
            &t,
        )
        .await;
    assert_eq!(res.error(), "invalid_cursor");
}

#[tokio::test]
async fn lockouts_default_to_7_days_and_cap_at_90() {
    let app = TestApp::shared();
    let t = token(app).await;
    let res = app.get("/security/lockouts", &t).await;
    assert_eq!(res.status, StatusCode::OK, "{}", res.body);
    assert_eq!(span(&res.body), Duration::days(7));
    let items = res.items();
    assert!(
        items.iter().any(|l| l["event_id"] == 4740
            && l["action"] == "locked"
            && l["caller_host"].is_string())
    );
    assert!(
        items
            .iter()
            .any(|l| l["event_id"] == 4767 && l["action"] == "unlocked" && l["author"].is_string())
    );
    let from =
        (Utc::now() - Duration::days(120)).to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let res = app
        .get(&format!("/security/lockouts?from={from}"), &t)
        .await;
    assert_eq!(res.body["meta"]["window_capped"], true);
    assert_eq!(span(&res.body), Duration::days(90));
    let res = app.get("/security/lockouts?period=30d", &t).await;
    assert!(res.body["meta"].get("window_capped").is_none());

    let user = items[0]["user"].as_str().expect("user");
    // The login without its first and last letters (logins have accents: not byte offsets).
    let chars: Vec<char> = user.chars().collect();
    let part: String = chars[1..chars.len() - 1].iter().collect();
    let part = part.as_str();
    let res = app
        .get(&format!("/security/lockouts?user={}", urlenc(part)), &t)
        .await;
    assert!(res.items().iter().any(|l| l["user"] == user));
    assert!(
        res.items()
            .iter()
            .all(|l| l["user"].as_str().is_some_and(|u| u.contains(part)))
    );
}

#[tokio::test]
async fn account_changes_cover_every_type_and_filter_on_it() {
    let app = TestApp::shared();
    let t = token(app).await;
    let res = app.get("/security/account-changes", &t).await;
    assert_eq!(res.status, StatusCode::OK, "{}", res.body);
    assert_eq!(res.body["meta"]["limit"], 100);
    assert_eq!(span(&res.body), Duration::days(7));
    let all = walk(app, "/security/account-changes?limit=100", &t).await;
    for kind in ["account", "group", "computer", "policy", "directory"] {
        let only = walk(
            app,
            &format!("/security/account-changes?type={kind}&limit=20"),
            &t,
        )
        .await;
        assert!(!only.is_empty(), "no {kind}");
        assert!(only.iter().all(|c| c["type"] == kind));
        assert_eq!(only.len(), all.iter().filter(|c| c["type"] == kind).count());
    }
    for c in &all {
        let ev = c["event_id"].as_u64().expect("event_id");
        assert!(
            (4700..4800).contains(&ev) || (5136..=5141).contains(&ev),
            "{ev}"
        );
    }
    app.get("/security/account-changes?type=printer", &t)
        .await
        .assert_invalid("type");
    let res = app.get("/security/account-changes?period=30d", &t).await;
    assert!(res.body["meta"].get("window_capped").is_none());
    let from =
        (Utc::now() - Duration::days(100)).to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    assert_eq!(
        app.get(&format!("/security/account-changes?from={from}"), &t)
            .await
            .body["meta"]["window_capped"],
        true
    );
}

#[tokio::test]
async fn account_changes_user_filter_looks_at_author_target_and_object() {
    let app = TestApp::shared();
    let t = token(app).await;
    let all = walk(app, "/security/account-changes?limit=500", &t).await;
    let group_change = all
        .iter()
        .find(|c| c["type"] == "group")
        .expect("group change");
    let group = group_change["object"].as_str().expect("object");
    let by_object = walk(
        app,
        &format!(
            "/security/account-changes?user={}",
            urlenc(&group.to_lowercase())
        ),
        &t,
    )
    .await;
    assert!(by_object.iter().any(|c| c["id"] == group_change["id"]));
    let target = group_change["target"].as_str().expect("target");
    let by_target = walk(app, &format!("/security/account-changes?user={target}"), &t).await;
    assert!(by_target.iter().any(|c| c["id"] == group_change["id"]));
    let author = group_change["author"].as_str().expect("author");
    let by_author = walk(app, &format!("/security/account-changes?user={author}"), &t).await;
    assert!(by_author.iter().any(|c| c["id"] == group_change["id"]));
    for c in &by_author {
        let hit = ["author", "target", "object"].iter().any(|f| {
            c[*f]
                .as_str()
                .is_some_and(|v| v.to_lowercase().contains(&author.to_lowercase()))
        });
        assert!(hit, "{c}");
    }
}

#[tokio::test]
async fn risky_accounts_are_ranked_with_their_factors() {
    let app = TestApp::shared();
    let t = token(app).await;
    let res = app.get("/security/risky-accounts", &t).await;
    assert_eq!(res.status, StatusCode::OK, "{}", res.body);
    assert_eq!(res.body["meta"]["limit"], 50);
    let items = res.items();
    assert_eq!(items.len(), 50);
    let scores: Vec<f64> = items.iter().filter_map(|a| a["score"].as_f64()).collect();
    assert!(
        scores.windows(2).all(|w| w[0] >= w[1]),
        "highest risk first"
    );
    for (i, a) in items.iter().enumerate() {
        assert_eq!(a["rank"], i + 1);
        for f in [
            "admin",
            "machines_reached",
            "servers_reached",
            "failures",
            "failure_ratio",
            "centrality",
        ] {
            assert!(!a["factors"][f].is_null(), "factors lack {f}: {a}");
        }
        let c = a["factors"]["centrality"].as_f64().expect("centrality");
        assert!((0.0..=1.0).contains(&c));
    }
    assert_eq!(
        items[0]["factors"]["admin"], true,
        "an administrator leads: {}",
        items[0]
    );
    assert!(items.iter().any(|a| a["factors"]["centrality"] == 1.0));
    let res = app.get("/security/risky-accounts?limit=1000", &t).await;
    assert_eq!(res.body["meta"]["limit"], 200);
    assert_eq!(res.items().len(), 200);
    app.get("/security/risky-accounts?limit=-3", &t)
        .await
        .assert_invalid("limit");
}

#[tokio::test]
async fn anomalies_filter_on_status_in_the_window() {
    let app = TestApp::shared();
    let t = token(app).await;
    let res = app.get("/security/anomalies", &t).await;
    assert_eq!(res.status, StatusCode::OK, "{}", res.body);
    assert_eq!(span(&res.body), Duration::hours(24));
    assert!(!res.items().is_empty());
    for status in ["new", "investigating", "confirmed", "dismissed"] {
        let only = app
            .get(&format!("/security/anomalies?status={status}"), &t)
            .await;
        assert!(!only.items().is_empty(), "no {status}");
        assert!(only.items().iter().all(|a| a["status"] == status));
    }
    let month = app.get("/security/anomalies?period=30d", &t).await;
    assert!(month.items().len() > res.items().len());
    app.get("/security/anomalies?status=closed", &t)
        .await
        .assert_invalid("status");
}

#[tokio::test]
async fn rules_list_global_then_tenant_rules() {
    let app = TestApp::shared();
    let t = token(app).await;
    let res = app.get("/security/rules", &t).await;
    assert_eq!(res.status, StatusCode::OK);
    let items = res.items();
    assert!(items.iter().any(|r| r["scope"] == "global"));
    assert!(items.iter().any(|r| r["scope"] == "tenant"));
    assert!(items.iter().any(|r| r["enabled"] == false));
    let globex = app.token("globex", &[Scope::ReadSecurity]).await;
    let theirs = app.get("/security/rules", &globex).await;
    let mine: Vec<&Value> = items
        .iter()
        .filter(|r| r["scope"] == "tenant")
        .map(|r| &r["id"])
        .collect();
    assert!(
        theirs.items().iter().all(|r| !mine.contains(&&r["id"])),
        "tenant rules stay in their tenant"
    );
}

fn incident(
    id: &str,
    status: &str,
    severity: &str,
    opened: Duration,
    closed: Option<Duration>,
) -> (String, Value) {
    let now = Utc::now();
    let opened_at = now - opened;
    let closed_at = closed.map(|c| now - c);
    (
        id.to_owned(),
        json!({
            "id": id, "title": format!("Incident {id}"), "severity": severity, "status": status,
            "rule_id": "gl-001", "rule_name": "Force brute sur un compte",
            "opened_at": opened_at, "updated_at": closed_at.unwrap_or(opened_at), "closed_at": closed_at,
            "accounts": ["administrateur"], "hosts": ["PAR-SRV-0001"], "source_ips": ["185.220.101.7"],
            "event_count": 250,
            "actions": [{"at": opened_at, "by": "siem", "action": "open", "note": null}],
        }),
    )
}

/// A tenant of its own (the demo seeds incidents for acme and globex), so the incidents of
/// these tests are the only ones.
const INCIDENTS_TENANT: &str = "initech";

async fn incidents_token(app: &TestApp) -> String {
    app.token(INCIDENTS_TENANT, &[Scope::ReadSecurity]).await
}

async fn app_with_incidents() -> TestApp {
    let app = TestApp::with_modules(&[]).await;
    let docs = vec![
        incident("9001", "OPEN", "HIGH", Duration::days(3), None),
        incident("9002", "ACKNOWLEDGED", "CRITICAL", Duration::hours(2), None),
        incident("9003", "INVESTIGATING", "MEDIUM", Duration::days(40), None),
        incident(
            "9004",
            "RESOLVED",
            "LOW",
            Duration::hours(5),
            Some(Duration::hours(1)),
        ),
        incident(
            "9005",
            "CLOSED",
            "HIGH",
            Duration::days(10),
            Some(Duration::days(9)),
        ),
    ];
    app.stores
        .docs
        .put(INCIDENTS_TENANT, "siem_incidents", docs)
        .await
        .expect("incidents");
    app.stores
        .docs
        .put(
            "globex",
            "siem_incidents",
            vec![incident("7001", "OPEN", "HIGH", Duration::hours(1), None)],
        )
        .await
        .expect("globex incident");
    let now = Utc::now();
    let events: Vec<Record> = (0..250)
        .map(|i| {
            let ts = now - Duration::minutes(300 - i);
            Record {
                partition: "9001".into(),
                ts: ts.timestamp_millis(),
                id: format!("ev-{i:04}"),
                body: json!({"ts": ts, "event_id": 4625, "account": "administrateur", "host": "PAR-SRV-0001",
                    "source_ip": "185.220.101.7", "message": format!("Échec de connexion n° {i}")}),
            }
        })
        .collect();
    app.stores
        .series_writes
        .append(INCIDENTS_TENANT, "siem_events", events)
        .await
        .expect("events");
    app
}

fn ids(items: &[Value]) -> Vec<&str> {
    let mut v: Vec<&str> = items.iter().filter_map(|i| i["id"].as_str()).collect();
    v.sort();
    v
}

#[tokio::test]
async fn incidents_open_means_every_incident_in_progress_whatever_the_window() {
    let app = app_with_incidents().await;
    let t = incidents_token(&app).await;
    let res = app.get("/security/incidents?status=open", &t).await;
    assert_eq!(res.status, StatusCode::OK, "{}", res.body);
    assert_eq!(ids(res.items()), vec!["9001", "9002", "9003"]);
    assert_eq!(res.body["meta"]["limit"], 100);
    assert!(res.body["meta"]["window"].is_object());
    let opened: Vec<DateTime<Utc>> = res.items().iter().map(|i| time(&i["opened_at"])).collect();
    assert!(
        opened.windows(2).all(|w| w[0] >= w[1]),
        "most recently opened first"
    );
}

#[tokio::test]
async fn incidents_otherwise_are_those_active_in_the_window() {
    let app = app_with_incidents().await;
    let t = incidents_token(&app).await;
    let res = app.get("/security/incidents", &t).await;
    assert_eq!(
        ids(res.items()),
        vec!["9001", "9002", "9003", "9004"],
        "the closed one ended 9 days ago"
    );
    let res = app.get("/security/incidents?status=RESOLVED", &t).await;
    assert_eq!(ids(res.items()), vec!["9004"]);
    let res = app.get("/security/incidents?status=OPEN", &t).await;
    assert_eq!(ids(res.items()), vec!["9001"], "a precise status is exact");
    let res = app.get("/security/incidents?status=CLOSED", &t).await;
    assert!(res.items().is_empty());
    let res = app
        .get("/security/incidents?status=closed&period=30d", &t)
        .await;
    assert_eq!(ids(res.items()), vec!["9005"]);
    let res = app.get("/security/incidents?severity=critical", &t).await;
    assert_eq!(ids(res.items()), vec!["9002"]);
    let res = app.get("/security/incidents?limit=2", &t).await;
    assert_eq!(res.items().len(), 2);
    assert_eq!(res.body["meta"]["total"], 4);
    app.get("/security/incidents?status=done", &t)
        .await
        .assert_invalid("status");
    app.get("/security/incidents?severity=urgent", &t)
        .await
        .assert_invalid("severity");
    app.get("/security/incidents?limit=x", &t)
        .await
        .assert_invalid("limit");
}

#[tokio::test]
async fn incidents_stay_in_their_tenant() {
    let app = app_with_incidents().await;
    let t = incidents_token(&app).await;
    let res = app.get("/security/incidents?status=open", &t).await;
    assert!(ids(res.items()).iter().all(|id| *id != "7001"));
    assert_eq!(
        app.get("/security/incidents/7001", &t).await.status,
        StatusCode::NOT_FOUND
    );
    let globex = app.token("globex", &[Scope::ReadSecurity]).await;
    assert_eq!(
        app.get("/security/incidents/7001", &globex).await.status,
        StatusCode::OK
    );
    assert_eq!(
        app.get("/security/incidents/9001", &globex).await.status,
        StatusCode::NOT_FOUND
    );
}

#[tokio::test]
async fn an_incident_comes_with_its_last_200_correlated_events() {
    let app = app_with_incidents().await;
    let t = incidents_token(&app).await;
    let res = app.get("/security/incidents/9001", &t).await;
    assert_eq!(res.status, StatusCode::OK, "{}", res.body);
    let data = &res.body["data"];
    assert_eq!(data["id"], "9001");
    assert_eq!(data["status"], "OPEN");
    assert!(data["closed_at"].is_null());
    assert_eq!(data["actions"][0]["action"], "open");
    let events = data["events"].as_array().expect("events");
    assert_eq!(events.len(), 200);
    assert_eq!(
        events[0]["message"], "Échec de connexion n° 249",
        "newest first"
    );
    assert_eq!(events[199]["message"], "Échec de connexion n° 50");
    assert_eq!(events[0]["source_ip"], "185.220.101.7");
    assert_eq!(res.body["meta"]["events_truncated"], true);

    let by_alert_id = app.get("/security/incidents/siem-9004", &t).await;
    assert_eq!(by_alert_id.status, StatusCode::OK);
    assert_eq!(by_alert_id.body["data"]["events"], json!([]));
    let res = app.get("/security/incidents/nope", &t).await;
    assert_eq!(res.status, StatusCode::NOT_FOUND);
    assert_eq!(res.error(), "not_found");
}

/// A producer's records by series, as (series, partition, time, id, body), in order.
fn events(produced: &[Produced]) -> Vec<(String, String, i64, String, Value)> {
    let mut out: Vec<_> = produced
        .iter()
        .flat_map(|p| &p.records)
        .flat_map(|(series, records)| {
            records.iter().map(move |r| {
                let Record {
                    partition,
                    ts,
                    id,
                    body,
                } = r.clone();
                (series.clone(), partition, ts, id, body)
            })
        })
        .collect();
    out.sort_by(|a, b| (&a.0, a.2, &a.1, &a.3).cmp(&(&b.0, b.2, &b.1, &b.3)));
    out
}

#[test]
fn security_events_are_the_same_however_time_is_cut() {
    // Account changes are made on working days only: the 30 hours before a Saturday evening
    // or a Monday morning can hold none, so the window ends on the last Wednesday at 16:07
    // UTC, whatever the day and hour the suite runs.
    let today = Utc::now().duration_trunc(Duration::days(1)).expect("a day");
    let back = (today.weekday().num_days_from_monday() + 7 - 2) % 7;
    let now = today - Duration::days(i64::from(back)) + Duration::minutes(16 * 60 + 7);
    let now = if now > Utc::now() {
        now - Duration::days(7)
    } else {
        now
    };
    let (ctx, _dir) = acme_ctx(now);
    let from = now - Duration::hours(30) - Duration::minutes(7);
    let whole = netops_demo::security::produce(&ctx, from, now);
    let mut cut = Vec::new();
    let mut t = from;
    for minutes in [1, 59, 61, 180, 7, 600].into_iter().cycle() {
        let end = (t + Duration::minutes(minutes)).min(now);
        cut.push(netops_demo::security::produce(&ctx, t, end));
        if end == now {
            break;
        }
        t = end;
    }
    for (series, records) in &whole.records {
        assert!(!records.is_empty(), "no {series}");
    }
    assert!(events(std::slice::from_ref(&whole)) == events(&cut));
    // The graph and ranking are made as of the last hour boundary, by the one batch that
    // passes it.
    let mut with_docs = cut.iter().filter(|b| !b.docs.is_empty());
    let docs = &with_docs.next().expect("a batch with the graph").docs;
    assert!(with_docs.next().is_none());
    let collections: Vec<&str> = docs.iter().map(|(c, _)| c.as_str()).collect();
    assert_eq!(
        collections,
        ["security_logon_graph", "security_risk_ranking"]
    );
    assert!(&whole.docs == docs);
}

/// The local time of tenant acme (Paris, winter).
fn paris(t: DateTime<Utc>) -> DateTime<Utc> {
    t + Duration::hours(netops_demo::ACME.utc_offset_hours)
}

#[test]
fn security_events_follow_the_working_week() {
    // A fortnight of a fixed clock: Monday 16 to Monday 30 November 2026, Paris time.
    let now: DateTime<Utc> = "2026-11-29T23:00:00Z".parse().expect("date");
    let (ctx, _dir) = acme_ctx(now);
    let produced = netops_demo::security::produce(&ctx, now - Duration::days(14), now);
    let all = events(std::slice::from_ref(&produced));
    let local = |e: &(String, String, i64, String, Value)| {
        paris(DateTime::from_timestamp_millis(e.2).expect("time"))
    };
    let of = |series: &'static str| all.iter().filter(move |e| e.0 == series);
    // People log on in office hours: a weekday's core hours hold far more of their logons
    // than a Sunday's or a night's (the backup service works around the clock).
    let logons = |keep: &dyn Fn(DateTime<Utc>) -> bool| {
        of("security_logons")
            .filter(|e| e.4["user"] != "svc-backup" && keep(local(e)))
            .count()
    };
    let weekday_core = logons(&|t| t.weekday().number_from_monday() <= 5 && t.hour() == 10);
    let sunday_core = logons(&|t| t.weekday().number_from_monday() == 7 && t.hour() == 10);
    let weekday_night = logons(&|t| t.weekday().number_from_monday() <= 5 && t.hour() == 3);
    assert!(
        weekday_core > 10 * sunday_core / 2 * 2,
        "{weekday_core} {sunday_core}"
    );
    assert!(
        weekday_core > 3 * weekday_night,
        "{weekday_core} {weekday_night}"
    );
    // The administrators change the directory on weekdays, every type each day.
    let mut days: Vec<(u32, String)> = of("security_account_changes")
        .map(|e| (local(e).ordinal(), e.1.clone()))
        .collect();
    days.sort();
    days.dedup();
    assert_eq!(days.len(), 10 * 5, "{days:?}");
    assert!(of("security_account_changes").all(|e| local(e).weekday().number_from_monday() <= 5));
    // Every status of anomaly each day, lockouts each day.
    for day in 0..14 {
        let start = paris(now - Duration::days(14)) + Duration::days(day);
        let in_day = |e: &&(String, String, i64, String, Value)| {
            let t = local(e);
            start <= t && t < start + Duration::days(1)
        };
        let statuses: std::collections::BTreeSet<&str> = of("security_anomalies")
            .filter(in_day)
            .filter_map(|e| e.4["status"].as_str())
            .collect();
        assert_eq!(statuses.len(), 4, "day {day}: {statuses:?}");
        assert!(of("security_lockouts").filter(in_day).count() >= 2);
    }
}

/// The security data of a store seeded two days ago, caught up to now, at the routes'
/// default windows: the newest logons, lockouts since the seed, the account changes the
/// producer drew for the two days, every status of anomaly, and a ranking made again of the
/// new logons.
#[tokio::test]
async fn a_store_seeded_two_days_ago_shows_recent_security_data_after_its_catch_up() {
    let seeded = Utc::now() - Duration::days(2);
    let app = TestApp::acme_seeded_at(seeded).await;
    let t = token(&app).await;
    assert!(app.get("/security/logons", &t).await.items().is_empty());
    assert!(app.get("/security/anomalies", &t).await.items().is_empty());
    let now = Utc::now();
    catch_up(&app.stores, now).await;

    let logons = app.get("/security/logons", &t).await;
    assert_eq!(logons.items().len(), 100, "{}", logons.body);
    let newest = time(&logons.items()[0]["ts"]);
    assert!(now - newest < Duration::hours(2), "{newest}");

    let lockouts = app.get("/security/lockouts", &t).await;
    assert!(
        lockouts
            .items()
            .iter()
            .any(|l| l["action"] == "locked" && time(&l["ts"]) > seeded),
        "{}",
        lockouts.body
    );

    let window = format!("from={}&to={}", stamp(seeded), stamp(now));
    let listed = walk(
        &app,
        &format!("/security/account-changes?limit=500&{window}"),
        &t,
    )
    .await;
    let (ctx, _dir) = acme_ctx(now);
    let drawn = netops_demo::security::produce(&ctx, seeded, now);
    let mut drawn: Vec<&str> = drawn
        .records
        .iter()
        .filter(|(series, _)| series == "security_account_changes")
        .flat_map(|(_, records)| records.iter().map(|r| r.id.as_str()))
        .collect();
    drawn.sort();
    assert_eq!(ids(&listed), drawn);

    for status in ["new", "investigating", "confirmed", "dismissed"] {
        let only = app
            .get(&format!("/security/anomalies?status={status}"), &t)
            .await;
        assert!(!only.items().is_empty(), "no {status}");
    }

    // The ranking was made again as of the last hour boundary: its accounts' last logons
    // are those listed up to then, new ones among them.
    let made = now.duration_trunc(Duration::hours(1)).expect("hour");
    let ranked = app.get("/security/risky-accounts?limit=20", &t).await;
    assert_eq!(ranked.items().len(), 20);
    let mut newer = 0;
    for a in ranked.items() {
        let Some(last) = a["last_logon_at"].as_str().and_then(|t| t.parse().ok()) else {
            continue;
        };
        let last: DateTime<Utc> = last;
        if made - last > Duration::days(6) {
            continue;
        }
        let login = a["account"].as_str().expect("account");
        let week = format!(
            "from={}&to={}",
            stamp(made - Duration::days(7)),
            stamp(made)
        );
        let theirs = walk(
            &app,
            &format!("/security/logons?{week}&limit=500&user={}", urlenc(login)),
            &t,
        )
        .await;
        let newest = theirs
            .iter()
            .filter(|l| l["user"] == login)
            .map(|l| time(&l["ts"]))
            .max()
            .expect("a logon");
        assert_eq!(newest.timestamp(), last.timestamp(), "{login}");
        newer += usize::from(last > seeded);
    }
    assert!(newer > 0, "{}", ranked.body);
}
