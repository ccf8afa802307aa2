//! Shared files: access events and summary (docs/modules.md#files).

use std::collections::{BTreeMap, HashMap, HashSet};

use chrono::Duration;
use http::StatusCode;
use netops_files::model::{FileAction, FileEvent};
use netops_shared::scope::Scope;
use netops_shared::store::Filter;
use serde_json::{Value, json};

use crate::helpers::{TestApp, acme_ctx, catch_up, edge_windows, stamp, time, walk};

async fn token(app: &TestApp) -> String {
    app.token("acme", &[Scope::ReadFiles]).await
}

#[tokio::test]
async fn file_routes_need_the_read_files_scope() {
    let app = TestApp::shared();
    let other = app.token("acme", &[Scope::ReadDns]).await;
    for path in ["/files/events", "/files/summary"] {
        let res = app.get(path, &other).await;
        assert_eq!(res.status, StatusCode::FORBIDDEN, "{path}");
        assert_eq!(res.body["scope"], "read:files");
    }
}

#[tokio::test]
async fn events_say_who_did_what_newest_first_with_cursor_pages() {
    let app = TestApp::shared();
    let token = token(app).await;
    let res = app.get("/files/events?period=7d", &token).await;
    assert_eq!(res.status, StatusCode::OK);
    assert_eq!(res.body["meta"]["limit"], 100);
    assert!(res.body["meta"]["next_cursor"].is_string());
    let items = res.items();
    for f in [
        "id",
        "at",
        "type",
        "user",
        "server",
        "share",
        "path",
        "folder",
        "client_ip",
    ] {
        assert!(!items[0][f].is_null(), "{f}");
    }
    let all = walk(app, "/files/events?period=3d&limit=50", &token).await;
    let ids: HashSet<&str> = all.iter().filter_map(|e| e["id"].as_str()).collect();
    assert_eq!(ids.len(), all.len(), "no event twice across pages");
    let times: Vec<&str> = all.iter().filter_map(|e| e["at"].as_str()).collect();
    assert!(times.windows(2).all(|w| w[0] >= w[1]));
    let month = walk(app, "/files/events?period=30d&limit=1000", &token).await;
    let types: HashSet<&str> = month.iter().filter_map(|e| e["type"].as_str()).collect();
    assert_eq!(
        types,
        HashSet::from(["read", "create", "modify", "delete", "rename"])
    );
    assert_eq!(
        app.get("/files/events?limit=5000", &token).await.body["meta"]["limit"],
        1000
    );
}

#[tokio::test]
async fn event_filters_user_path_and_type() {
    let app = TestApp::shared();
    let token = token(app).await;
    let renamed = walk(
        app,
        "/files/events?type=rename&period=30d&limit=500",
        &token,
    )
    .await;
    assert!(!renamed.is_empty());
    assert!(
        renamed
            .iter()
            .all(|e| e["type"] == "rename" && e["new_path"].is_string())
    );
    let user = renamed[0]["user"].as_str().expect("user").to_owned();
    let part = &user.chars().take(5).collect::<String>().to_uppercase();
    let mine = walk(
        app,
        &format!(
            "/files/events?user={}&period=30d&limit=500",
            form_urlencoded::byte_serialize(part.as_bytes()).collect::<String>()
        ),
        &token,
    )
    .await;
    assert!(!mine.is_empty());
    assert!(mine.iter().all(|e| {
        e["user"]
            .as_str()
            .is_some_and(|u| u.to_uppercase().contains(part.as_str()))
    }));
    let rh = walk(
        app,
        "/files/events?path=%5CRH%5C&period=7d&limit=500",
        &token,
    )
    .await;
    assert!(!rh.is_empty());
    assert!(
        rh.iter()
            .all(|e| e["path"].as_str().is_some_and(|p| p.contains("\\RH\\")))
    );
    let v2 = walk(app, "/files/events?path=-v2.&period=30d&limit=500", &token).await;
    assert!(
        !v2.is_empty() && v2.iter().all(|e| e["type"] == "rename"),
        "path also searches the new path"
    );
    let both = walk(
        app,
        "/files/events?type=delete&path=Projets&period=30d&limit=500",
        &token,
    )
    .await;
    assert!(both.iter().all(
        |e| e["type"] == "delete" && e["path"].as_str().is_some_and(|p| p.contains("Projets"))
    ));
}

#[tokio::test]
async fn a_cursor_works_only_with_its_own_filters() {
    let app = TestApp::shared();
    let token = token(app).await;
    let first = app
        .get("/files/events?type=read&period=7d&limit=5", &token)
        .await;
    let cursor = first.body["meta"]["next_cursor"].as_str().expect("cursor");
    let same = app
        .get(
            &format!("/files/events?type=read&period=7d&limit=5&cursor={cursor}"),
            &token,
        )
        .await;
    assert_eq!(same.status, StatusCode::OK);
    let other = app
        .get(
            &format!("/files/events?type=modify&period=7d&limit=5&cursor={cursor}"),
            &token,
        )
        .await;
    assert_eq!(other.status, StatusCode::BAD_REQUEST);
    assert_eq!(other.error(), "invalid_cursor");
}

#[tokio::test]
async fn events_window_is_capped_at_31_days_and_bad_values_give_400() {
    let app = TestApp::shared();
    let token = token(app).await;
    let long = app
        .get("/files/events?from=2026-01-01T00:00:00Z", &token)
        .await;
    assert_eq!(long.status, StatusCode::OK);
    assert_eq!(long.body["meta"]["window_capped"], true);
    let from = chrono::DateTime::parse_from_rfc3339(
        long.body["meta"]["window"]["from"].as_str().expect("f"),
    )
    .expect("d");
    let to = chrono::DateTime::parse_from_rfc3339(
        long.body["meta"]["window"]["to"].as_str().expect("t"),
    )
    .expect("d");
    assert_eq!((to - from).num_days(), 31);
    assert!(
        app.get("/files/events?period=30d", &token).await.body["meta"]
            .get("window_capped")
            .is_none()
    );
    for (path, name) in [
        ("/files/events?type=copy", "type"),
        ("/files/events?limit=0", "limit"),
        ("/files/events?period=5d", "period"),
        ("/files/summary?to=tomorrow", "to"),
    ] {
        let res = app.get(path, &token).await;
        assert_eq!(res.status, StatusCode::BAD_REQUEST, "{path}");
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
async fn summary_gives_volumes_per_action_and_most_active_users_and_folders() {
    let app = TestApp::shared();
    let token = token(app).await;
    let res = app.get("/files/summary?period=7d", &token).await;
    assert_eq!(res.status, StatusCode::OK);
    assert!(res.body["meta"]["window"]["from"].is_string());
    let s = &res.body["data"];
    let by_action = s["by_action"].as_object().expect("by_action");
    assert_eq!(by_action.len(), 5);
    let sum: f64 = by_action
        .values()
        .filter_map(|v| v["events"].as_f64())
        .sum();
    assert_eq!(sum, s["total"]["events"].as_f64().expect("total"));
    let users = s["top_users"].as_array().expect("users");
    assert_eq!(users.len(), 10);
    let counts: Vec<f64> = users.iter().filter_map(|u| u["events"].as_f64()).collect();
    assert!(counts.windows(2).all(|w| w[0] >= w[1]));
    let folders = s["top_folders"].as_array().expect("folders");
    assert!(!folders.is_empty() && folders[0]["users"].as_u64().is_some_and(|n| n >= 1));
    // The summary counts what the event list shows.
    let week = walk(app, "/files/events?period=7d&limit=1000", &token).await;
    let w = &res.body["meta"]["window"];
    let from = w["from"].as_str().expect("from");
    let counted = s["total"]["events"].as_f64().expect("total");
    assert!(
        counted
            >= week
                .iter()
                .filter(|e| e["at"].as_str() >= Some(from))
                .count() as f64
    );
    let globex = app.token("globex", &[Scope::ReadFiles]).await;
    let theirs = app.get("/files/summary?period=7d", &globex).await;
    // The backup service account has the same name in both tenants; people do not.
    let acme_users: HashSet<&str> = users
        .iter()
        .filter_map(|u| u["user"].as_str())
        .filter(|u| *u != "svc-backup")
        .collect();
    assert!(
        theirs.body["data"]["top_users"]
            .as_array()
            .expect("u")
            .iter()
            .all(|u| !acme_users.contains(u["user"].as_str().unwrap_or("")))
    );
}

/// Windows of every shape over the seeded history: the default day, partial hours and partial
/// days at both edges, whole days alone, a few hours within one day, two partial days with no
/// whole one between, a month, and the whole retention.
/// Events, distinct users and events per action of a folder.
type FolderCount<'e> = (f64, HashSet<&'e str>, BTreeMap<&'e str, f64>);

/// The summary of `events`, added up straight from them.
fn summary_of(events: &[FileEvent]) -> Value {
    let mut total = (0.0, 0.0);
    let mut by_action: BTreeMap<&str, (f64, f64)> = FileAction::ALL
        .iter()
        .map(|a| (a.as_str(), (0.0, 0.0)))
        .collect();
    let mut users: HashMap<&str, (f64, BTreeMap<&str, f64>)> = HashMap::new();
    let mut folders: HashMap<&str, FolderCount> = HashMap::new();
    for e in events {
        let action = e.action.as_str();
        let bytes = match e.action {
            FileAction::Read | FileAction::Modify | FileAction::Create => {
                e.size_bytes.unwrap_or(0) as f64
            }
            _ => 0.0,
        };
        total.0 += 1.0;
        total.1 += bytes;
        let a = by_action.entry(action).or_default();
        a.0 += 1.0;
        a.1 += bytes;
        let u = users.entry(&e.user).or_default();
        u.0 += 1.0;
        *u.1.entry(action).or_default() += 1.0;
        let f = folders.entry(&e.folder).or_default();
        f.0 += 1.0;
        f.1.insert(&e.user);
        *f.2.entry(action).or_default() += 1.0;
    }
    let mut users: Vec<_> = users.into_iter().collect();
    users.sort_by(|a, b| b.1.0.total_cmp(&a.1.0).then_with(|| a.0.cmp(b.0)));
    let mut folders: Vec<_> = folders.into_iter().collect();
    folders.sort_by(|a, b| b.1.0.total_cmp(&a.1.0).then_with(|| a.0.cmp(b.0)));
    json!({
        "total": {"events": total.0, "bytes": total.1},
        "by_action": by_action
            .into_iter()
            .map(|(a, (events, bytes))| (a.to_owned(), json!({"events": events, "bytes": bytes})))
            .collect::<serde_json::Map<_, _>>(),
        "top_users": users
            .into_iter()
            .take(10)
            .map(|(user, (events, by_action))| json!({"user": user, "events": events, "by_action": by_action}))
            .collect::<Vec<_>>(),
        "top_folders": folders
            .into_iter()
            .take(10)
            .map(|(folder, (events, users, by_action))| {
                json!({"folder": folder, "events": events, "users": users.len(), "by_action": by_action})
            })
            .collect::<Vec<_>>(),
    })
}

/// The summary reads day aggregates, hour by hour at the edges: over any window it must say
/// exactly what the events of the hours overlapping the window say.
#[tokio::test]
async fn summary_over_any_window_adds_up_exactly_the_events_of_its_hours() {
    let app = TestApp::shared();
    let token = token(app).await;
    for (from, to) in edge_windows(app.seeded.0) {
        let res = app
            .get(
                &format!("/files/summary?from={}&to={}", stamp(from), stamp(to)),
                &token,
            )
            .await;
        assert_eq!(res.status, StatusCode::OK, "{from} {to}: {}", res.body);
        let (a, b) = res.window_hours();
        let events: Vec<FileEvent> = app
            .stores
            .series
            .read_all("acme", "file_events", None, a, b, &Filter::all())
            .await
            .expect("events")
            .items
            .into_iter()
            .map(|r| serde_json::from_value(r.body).expect("event"))
            .collect();
        assert!(
            !events.is_empty() || to - from < Duration::days(1),
            "{from} {to}"
        );
        assert_eq!(res.body["data"], summary_of(&events), "{from} {to}");
    }
}

/// A store seeded on a Friday and caught up to the Monday morning, before the office opens:
/// every 24-hour window of the weekend holds accesses (the nightly backup's reads, and some
/// people on weekend days), with the summary counting the same events.
#[tokio::test]
async fn every_24_hour_window_of_a_weekend_holds_accesses_after_the_catch_up() {
    let seeded = time(&json!("2026-11-20T09:30:00Z"));
    let monday = time(&json!("2026-11-23T07:00:00Z"));
    let app = TestApp::acme_seeded_at(seeded).await;
    let t = token(&app).await;
    catch_up(&app.stores, monday).await;
    let mut people = 0;
    // Windows on hour boundaries, as the summary counts whole hours.
    for hours in [10, 23, 27, 34, 44, 50, 55] {
        let to = time(&json!("2026-11-21T00:00:00Z")) + Duration::hours(hours);
        let window = format!("from={}&to={}", stamp(to - Duration::days(1)), stamp(to));
        let events = walk(&app, &format!("/files/events?limit=500&{window}"), &t).await;
        assert!(!events.is_empty(), "{window}");
        people += events.iter().filter(|e| e["user"] != "svc-backup").count();
        let summary = app.get(&format!("/files/summary?{window}"), &t).await;
        assert_eq!(summary.status, StatusCode::OK, "{}", summary.body);
        let total = summary.body["data"]["total"]["events"].as_f64();
        assert_eq!(
            total,
            Some(events.len() as f64),
            "{window}: {}",
            summary.body
        );
    }
    assert!(people > 0, "some people work on weekend days");
    let monday_window = format!(
        "from={}&to={}",
        stamp(monday - Duration::days(1)),
        stamp(monday)
    );
    let events = walk(
        &app,
        &format!("/files/events?limit=500&{monday_window}"),
        &t,
    )
    .await;
    assert!(events.iter().any(|e| e["user"] == "svc-backup"));
}

/// The producer draws each hour whole: two days drawn at once or cut at odd times give the
/// same accesses.
#[test]
fn file_accesses_are_the_same_however_time_is_cut() {
    let from = time(&json!("2026-11-21T00:00:00Z"));
    let (ctx, _dir) = acme_ctx(from + Duration::days(2));
    let ids = |produced: netops_demo::Produced| -> Vec<String> {
        let mut ids: Vec<String> = produced
            .records
            .into_iter()
            .flat_map(|(_, records)| records.into_iter().map(|r| r.id))
            .collect();
        ids.sort();
        ids
    };
    let whole = ids(netops_demo::files::produce(
        &ctx,
        from,
        from + Duration::days(2),
    ));
    let mut cut = Vec::new();
    let mut t = from;
    for minutes in [7, 53, 61, 600, 1, 2000].iter().cycle() {
        let next = (t + Duration::minutes(*minutes)).min(from + Duration::days(2));
        cut.extend(ids(netops_demo::files::produce(&ctx, t, next)));
        t = next;
        if t == from + Duration::days(2) {
            break;
        }
    }
    cut.sort();
    assert!(!whole.is_empty());
    assert_eq!(whole, cut);
}
