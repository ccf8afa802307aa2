//! Network infrastructure: sites, devices, metrics, tunnels, alerts, ports
//! (docs/modules.md#network-infrastructure).

use chrono::{DateTime, Duration, DurationRound, Utc};
use http::StatusCode;
use netops_shared::scope::Scope;

use crate::helpers::{
    TestApp, assert_alerts_the_same_however_time_is_cut, assert_recent_alerts_after_catch_up, walk,
};

async fn token(app: &TestApp) -> String {
    app.token("acme", &[Scope::ReadNetwork]).await
}

#[tokio::test]
async fn sites_list_every_site_and_q_searches_name_or_city() {
    let app = TestApp::shared();
    let token = token(app).await;
    let all = app.get("/network/sites", &token).await;
    assert_eq!(all.status, StatusCode::OK);
    assert_eq!(all.items().len(), 4);
    for s in all.items() {
        for f in [
            "id",
            "code",
            "name",
            "city",
            "subnet",
            "device_count",
            "machine_count",
            "status",
        ] {
            assert!(!s[f].is_null(), "site lacks {f}: {s}");
        }
    }
    let lyon = app.get("/network/sites?q=lYo", &token).await;
    assert_eq!(lyon.items().len(), 1);
    assert_eq!(lyon.items()[0]["city"], "Lyon");
    let by_name = app.get("/network/sites?q=acme", &token).await;
    assert_eq!(
        by_name.items().len(),
        4,
        "the site name carries the company name"
    );
    assert!(
        app.get("/network/sites?q=tokyo", &token)
            .await
            .items()
            .is_empty()
    );
}

#[tokio::test]
async fn globex_sees_only_its_own_sites_and_devices() {
    let app = TestApp::shared();
    let token = app.token("globex", &[Scope::ReadNetwork]).await;
    let sites = app.get("/network/sites", &token).await;
    assert_eq!(sites.items().len(), 3);
    assert!(sites.items().iter().all(|s| s["code"] != "PAR"));
    let devices = walk(app, "/network/devices", &token).await;
    assert!(
        devices
            .iter()
            .all(|d| d["name"].as_str().is_some_and(|n| n.starts_with("gx-")))
    );
    let acme = walk(app, "/network/devices", &self::token(app).await).await;
    let id = acme[0]["id"].as_i64().expect("id");
    assert_eq!(
        app.get(&format!("/network/devices/{id}"), &token)
            .await
            .status,
        StatusCode::NOT_FOUND
    );
}

#[tokio::test]
async fn devices_page_by_cursor_and_every_filter_holds() {
    let app = TestApp::shared();
    let token = token(app).await;
    let first = app.get("/network/devices", &token).await;
    assert_eq!(first.status, StatusCode::OK);
    assert_eq!(first.body["meta"]["limit"], 100);
    let all = walk(app, "/network/devices?limit=3", &token).await;
    assert_eq!(all.len(), first.items().len());
    let ids: Vec<i64> = all.iter().filter_map(|d| d["id"].as_i64()).collect();
    let mut sorted = ids.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(ids, sorted, "sorted by id, no repeat across pages");
    for t in ["firewall", "router", "switch", "access_point"] {
        let some = walk(app, &format!("/network/devices?type={t}"), &token).await;
        assert!(!some.is_empty(), "{t}");
        assert!(some.iter().all(|d| d["type"] == t));
    }
    for s in ["up", "down", "degraded"] {
        let some = walk(app, &format!("/network/devices?status={s}"), &token).await;
        assert!(!some.is_empty(), "{s}");
        assert!(some.iter().all(|d| d["status"] == s));
    }
    let site = all[0]["site_id"].as_i64().expect("site");
    let at_site = walk(app, &format!("/network/devices?site_id={site}"), &token).await;
    assert!(!at_site.is_empty() && at_site.iter().all(|d| d["site_id"] == site));
    let fortigate = walk(app, "/network/devices?q=fortigate", &token).await;
    assert!(
        !fortigate.is_empty()
            && fortigate
                .iter()
                .all(|d| d["model"].as_str().is_some_and(|m| m.contains("FortiGate")))
    );
    let by_ip = walk(app, "/network/devices?q=10.20.0.", &token).await;
    assert!(
        !by_ip.is_empty()
            && by_ip
                .iter()
                .all(|d| d["ip"].as_str().is_some_and(|m| m.starts_with("10.20.0.")))
    );
    let by_name = walk(app, "/network/devices?q=par-fw", &token).await;
    assert_eq!(by_name.len(), 1);
}

#[tokio::test]
async fn device_filters_reject_bad_values_naming_the_parameter() {
    let app = TestApp::shared();
    let token = token(app).await;
    for (path, name) in [
        ("/network/devices?type=toaster", "type"),
        ("/network/devices?status=sleepy", "status"),
        ("/network/devices?site_id=paris", "site_id"),
        ("/network/devices?limit=0", "limit"),
        ("/network/tunnels?status=maybe", "status"),
        ("/network/tunnels?site_id=x", "site_id"),
        ("/network/alerts?status=closed", "status"),
        ("/network/alerts?period=2d", "period"),
        ("/network/ports?port=http", "port"),
        ("/network/ports?state=ajar", "state"),
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
    let cursor = app.get("/network/devices?cursor=forged", &token).await;
    assert_eq!(cursor.error(), "invalid_cursor");
}

#[tokio::test]
async fn a_device_comes_with_wan_links_and_interfaces_or_404() {
    let app = TestApp::shared();
    let token = token(app).await;
    let routers = walk(app, "/network/devices?type=router", &token).await;
    let id = routers[0]["id"].as_i64().expect("id");
    let res = app.get(&format!("/network/devices/{id}"), &token).await;
    assert_eq!(res.status, StatusCode::OK);
    let d = &res.body["data"];
    assert_eq!(d["id"], id);
    let links = d["wan_links"].as_array().expect("wan_links");
    assert_eq!(links.len(), 2);
    assert!(links.iter().any(|l| l["role"] == "backup"));
    assert!(!d["interfaces"].as_array().expect("interfaces").is_empty());
    assert_eq!(
        app.get("/network/devices/999999999", &token).await.status,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        app.get("/network/devices/abc", &token).await.status,
        StatusCode::BAD_REQUEST
    );
}

#[tokio::test]
async fn device_metrics_are_hourly_and_never_more_than_500_points() {
    let app = TestApp::shared();
    let token = token(app).await;
    let id = walk(app, "/network/devices?type=firewall", &token).await[0]["id"]
        .as_i64()
        .expect("id");
    let day = app
        .get(&format!("/network/devices/{id}/metrics"), &token)
        .await;
    assert_eq!(day.status, StatusCode::OK);
    let points = day.body["data"]["points"].as_array().expect("points");
    assert_eq!(day.body["data"]["step_seconds"], 3600);
    // One point per hour of the last 24 that has data: devices report each whole hour up to
    // the one before seeding, so time passed since then leaves the first hours out.
    let from: DateTime<Utc> = day.body["meta"]["window"]["from"]
        .as_str()
        .expect("from")
        .parse()
        .expect("date");
    let first = from.duration_round_up(Duration::hours(1)).expect("hour");
    let hours_of_data = |seeding: DateTime<Utc>| {
        let last = seeding.duration_trunc(Duration::hours(1)).expect("hour") - Duration::hours(1);
        usize::try_from((last - first).num_hours() + 1).unwrap_or(0)
    };
    let expected = hours_of_data(app.seeded.0)..=hours_of_data(app.seeded.1);
    assert!(
        expected.contains(&points.len()) && points.len() <= 24,
        "{} points, expected {expected:?}",
        points.len()
    );
    let times: Vec<DateTime<Utc>> = points
        .iter()
        .map(|p| p["at"].as_str().expect("at").parse().expect("date"))
        .collect();
    assert!(times.windows(2).all(|w| w[1] - w[0] == Duration::hours(1)));
    let month = app
        .get(&format!("/network/devices/{id}/metrics?period=30d"), &token)
        .await;
    let points = month.body["data"]["points"].as_array().expect("points");
    assert!(
        points.len() <= 500 && points.len() >= 300,
        "{}",
        points.len()
    );
    assert_eq!(month.body["data"]["step_seconds"], 7200);
    for f in [
        "at",
        "cpu_pct",
        "memory_pct",
        "in_bps",
        "out_bps",
        "latency_ms",
        "errors",
    ] {
        assert!(!points[0][f].is_null(), "{f}");
    }
    let year = app
        .get(
            &format!(
                "/network/devices/{id}/metrics?from=2025-11-01T00:00:00Z&to=2026-12-01T00:00:00Z"
            ),
            &token,
        )
        .await;
    assert!(
        year.body["data"]["points"]
            .as_array()
            .expect("points")
            .len()
            <= 500
    );
    assert_eq!(
        app.get("/network/devices/999999999/metrics", &token)
            .await
            .status,
        StatusCode::NOT_FOUND
    );
}

#[tokio::test]
async fn tunnels_filter_by_status_and_either_site() {
    let app = TestApp::shared();
    let token = token(app).await;
    let all = app.get("/network/tunnels", &token).await;
    assert_eq!(all.status, StatusCode::OK);
    assert!(all.items().len() >= 3);
    for s in ["up", "down", "degraded"] {
        let some = app
            .get(&format!("/network/tunnels?status={s}"), &token)
            .await;
        assert!(!some.items().is_empty(), "{s}");
        assert!(some.items().iter().all(|t| t["status"] == s));
    }
    let site = all.items()[0]["remote"]["site_id"].as_i64().expect("site");
    let at = app
        .get(&format!("/network/tunnels?site_id={site}"), &token)
        .await;
    assert!(!at.items().is_empty());
    assert!(
        at.items()
            .iter()
            .all(|t| t["local"]["site_id"] == site || t["remote"]["site_id"] == site)
    );
}

#[tokio::test]
async fn alerts_open_are_in_progress_and_all_follow_the_window() {
    let app = TestApp::shared();
    let token = token(app).await;
    let open = app.get("/network/alerts?status=open", &token).await;
    assert_eq!(open.status, StatusCode::OK);
    assert!(!open.items().is_empty());
    assert!(
        open.items()
            .iter()
            .all(|a| a["status"] == "open" && a["resolved_at"].is_null())
    );
    crate::databases::assert_open_alerts_are_those_of_the_history(
        app,
        &token,
        "/network/alerts",
        &open,
    )
    .await;
    let month = app
        .get("/network/alerts?status=all&period=30d", &token)
        .await;
    assert!(month.items().iter().any(|a| a["status"] == "resolved"));
    let from = month.body["meta"]["window"]["from"]
        .as_str()
        .expect("from")
        .to_owned();
    assert!(
        month
            .items()
            .iter()
            .all(|a| a["opened_at"].as_str().is_some_and(|t| t >= from.as_str()))
    );
    let day = app.get("/network/alerts", &token).await;
    assert!(day.items().len() <= month.items().len());
}

#[tokio::test]
async fn ports_filter_by_ip_port_and_state_with_default_page_of_200() {
    let app = TestApp::shared();
    let token = token(app).await;
    let res = app.get("/network/ports", &token).await;
    assert_eq!(res.status, StatusCode::OK);
    assert_eq!(res.body["meta"]["limit"], 200);
    assert_eq!(res.items().len(), 200);
    let ip = res.items()[0]["ip"].as_str().expect("ip").to_owned();
    let one = app
        .get(&format!("/network/ports?ip={ip}&limit=1000"), &token)
        .await;
    assert!(!one.items().is_empty() && one.items().iter().all(|p| p["ip"] == ip.as_str()));
    let rdp = app.get("/network/ports?port=3389&limit=1000", &token).await;
    assert!(!rdp.items().is_empty() && rdp.items().iter().all(|p| p["port"] == 3389));
    for s in ["open", "closed", "filtered"] {
        let some = app
            .get(&format!("/network/ports?state={s}&limit=5"), &token)
            .await;
        assert!(!some.items().is_empty(), "{s}");
        assert!(some.items().iter().all(|p| p["state"] == s));
    }
    assert_eq!(
        app.get("/network/ports?limit=5000", &token).await.body["meta"]["limit"],
        1000
    );
}

#[test]
fn passing_network_alerts_are_the_same_however_time_is_cut() {
    assert_alerts_the_same_however_time_is_cut(netops_demo::network::produce, "network_alerts");
}

/// Two days after the seed, the default day of alerts holds those that passed since: the
/// producer's, resolved, opened in the window.
#[tokio::test]
async fn a_store_seeded_two_days_ago_shows_recent_network_alerts_after_its_catch_up() {
    let app = TestApp::acme_seeded_at(Utc::now() - Duration::days(2)).await;
    let t = token(&app).await;
    assert_recent_alerts_after_catch_up(
        &app,
        &t,
        "/network/alerts",
        netops_demo::network::produce,
        "network_alerts",
    )
    .await;
}
