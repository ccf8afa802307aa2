//! Inventory: `/inventory/assets`, `/inventory/assets/{id}`, `/inventory/software`,
//! `/inventory/cves` (docs/modules.md#inventory).

use chrono::{Duration, Utc};
use http::StatusCode;
use netops_shared::scope::Scope;
use serde_json::Value;

use crate::helpers::{TestApp, catch_up, time, walk};

async fn token(app: &TestApp) -> String {
    app.token("acme", &[Scope::ReadInventory]).await
}

fn strs<'a>(items: &'a [Value], field: &str) -> Vec<&'a str> {
    items.iter().filter_map(|i| i[field].as_str()).collect()
}

#[tokio::test]
async fn inventory_routes_need_the_read_inventory_scope() {
    let app = TestApp::shared();
    let other = app.token("acme", &[Scope::ReadMachines]).await;
    for path in [
        "/inventory/assets",
        "/inventory/assets/1001",
        "/inventory/software",
        "/inventory/cves",
    ] {
        let res = app.get(path, &other).await;
        assert_eq!(res.status, StatusCode::FORBIDDEN, "{path}");
        assert_eq!(res.body["scope"], "read:inventory");
    }
}

#[tokio::test]
async fn assets_are_the_fleet_machines_with_hardware_and_a_default_page_of_100() {
    let app = TestApp::shared();
    let t = token(app).await;
    let res = app.get("/inventory/assets", &t).await;
    assert_eq!(res.status, StatusCode::OK, "{}", res.body);
    assert_eq!(res.body["meta"]["limit"], 100);
    assert!(res.body["meta"]["next_cursor"].is_null());
    let items = res.items();
    assert_eq!(items.len(), 60);
    for a in items {
        for f in [
            "id",
            "hostname",
            "fqdn",
            "ips",
            "os",
            "hardware",
            "software_count",
            "last_inventory_at",
        ] {
            assert!(!a[f].is_null(), "asset lacks {f}: {a}");
        }
        assert!(a["hardware"]["model"].is_string() && a["hardware"]["memory_gb"].is_u64());
        assert!(
            a.get("search_ips").is_none(),
            "internal search field leaked"
        );
    }
    let full = app.full_token().await;
    let machines = app.get("/machines", &full).await;
    let mut hosts: Vec<&str> = strs(items, "hostname");
    let mut fleet: Vec<&str> = strs(machines.items(), "hostname");
    hosts.sort();
    fleet.sort();
    assert_eq!(hosts, fleet, "inventory and fleet know the same hosts");
    let ids: Vec<i64> = items.iter().filter_map(|a| a["id"].as_i64()).collect();
    assert!(
        ids.windows(2).all(|w| w[0] < w[1]),
        "assets are sorted by id"
    );
}

#[tokio::test]
async fn asset_search_looks_in_hostname_fqdn_ip_and_os() {
    let app = TestApp::shared();
    let t = token(app).await;
    let all = app.get("/inventory/assets", &t).await;
    let first = &all.items()[5];
    let ip = first["ips"][0].as_str().expect("ip");

    let by_host = walk(app, "/inventory/assets?q=par-lt&limit=3", &t).await;
    assert!(!by_host.is_empty());
    assert!(
        strs(&by_host, "hostname")
            .iter()
            .all(|h| h.starts_with("PAR-LT-"))
    );

    let by_ip = app.get(&format!("/inventory/assets?q={ip}"), &t).await;
    assert!(by_ip.items().iter().any(|a| a["id"] == first["id"]));
    assert!(
        by_ip
            .items()
            .iter()
            .all(|a| a["ips"].as_array().is_some_and(|ips| ips
                .iter()
                .any(|x| x.as_str().is_some_and(|s| s.contains(ip)))))
    );

    let by_os = app.get("/inventory/assets?q=ubuntu", &t).await;
    assert!(!by_os.items().is_empty());
    assert!(
        strs(by_os.items(), "os")
            .iter()
            .all(|o| o.starts_with("Ubuntu"))
    );

    let by_fqdn = app.get("/inventory/assets?q=.acme.local", &t).await;
    assert_eq!(by_fqdn.items().len(), 60);

    let none = app.get("/inventory/assets?q=nothing-like-this", &t).await;
    assert_eq!(none.status, StatusCode::OK);
    assert!(none.items().is_empty());
}

#[tokio::test]
async fn asset_pages_clamp_the_limit_and_reject_bad_values() {
    let app = TestApp::shared();
    let t = token(app).await;
    let res = app.get("/inventory/assets?limit=9999", &t).await;
    assert_eq!(res.body["meta"]["limit"], 500);
    for bad in ["limit=0", "limit=abc"] {
        let res = app.get(&format!("/inventory/assets?{bad}"), &t).await;
        assert_eq!(res.status, StatusCode::BAD_REQUEST);
        assert_eq!(res.body["parameter"], "limit");
    }
    let walked = walk(app, "/inventory/assets?limit=7", &t).await;
    assert_eq!(walked.len(), 60);
    let page = app.get("/inventory/assets?limit=7", &t).await;
    let cursor = page.body["meta"]["next_cursor"].as_str().expect("cursor");
    let res = app
        .get(
            &format!("/inventory/assets?limit=7&q=PAR&cursor={cursor}"),
            &t,
        )
        .await;
    assert_eq!(res.status, StatusCode::BAD_REQUEST);
    assert_eq!(res.error(), "invalid_cursor");
}

#[tokio::test]
async fn one_asset_with_its_software_or_404_within_the_tenant() {
    let app = TestApp::shared();
    let t = token(app).await;
    let all = app.get("/inventory/assets", &t).await;
    let laptop = all
        .items()
        .iter()
        .find(|a| a["kind"] == "laptop")
        .expect("laptop");
    let id = laptop["id"].as_i64().expect("id");
    let res = app.get(&format!("/inventory/assets/{id}"), &t).await;
    assert_eq!(res.status, StatusCode::OK, "{}", res.body);
    let data = &res.body["data"];
    assert_eq!(data["hostname"], laptop["hostname"]);
    let software = data["software"].as_array().expect("software");
    assert!(!software.is_empty());
    assert_eq!(
        software.len() as u64,
        data["software_count"].as_u64().expect("count")
    );
    for s in software {
        for f in [
            "software_id",
            "name",
            "publisher",
            "version",
            "installed_at",
            "eol_status",
        ] {
            assert!(!s[f].is_null(), "entry lacks {f}: {s}");
        }
    }

    let res = app.get("/inventory/assets/999999", &t).await;
    assert_eq!(res.status, StatusCode::NOT_FOUND);
    assert_eq!(res.error(), "not_found");
    let res = app.get("/inventory/assets/abc", &t).await;
    assert_eq!(res.status, StatusCode::BAD_REQUEST);

    // An asset of globex does not exist for acme.
    let globex = app.token("globex", &[Scope::ReadInventory]).await;
    let theirs = app.get("/inventory/assets", &globex).await;
    let their_id = theirs.items()[0]["id"].as_i64().expect("id");
    assert_eq!(
        app.get(&format!("/inventory/assets/{their_id}"), &globex)
            .await
            .status,
        StatusCode::OK
    );
    assert_eq!(
        app.get(&format!("/inventory/assets/{their_id}"), &t)
            .await
            .status,
        StatusCode::NOT_FOUND
    );
}

#[tokio::test]
async fn an_asset_shows_at_most_500_software_entries() {
    let app = TestApp::shared();
    let t = token(app).await;
    let all = walk(app, "/inventory/assets", &t).await;
    let big = all
        .iter()
        .find(|a| a["software_count"].as_u64().unwrap_or(0) > 500)
        .expect("the demo has an asset with more than 500 entries");
    let res = app
        .get(&format!("/inventory/assets/{}", big["id"]), &t)
        .await;
    assert_eq!(
        res.body["data"]["software"].as_array().map(Vec::len),
        Some(500)
    );
    assert_eq!(res.body["meta"]["software_truncated"], true);
    let small = all
        .iter()
        .find(|a| a["software_count"].as_u64().unwrap_or(0) < 500)
        .expect("small");
    let res = app
        .get(&format!("/inventory/assets/{}", small["id"]), &t)
        .await;
    assert!(res.body["meta"].get("software_truncated").is_none());
}

#[tokio::test]
async fn software_lists_every_eol_status_with_install_counts() {
    let app = TestApp::shared();
    let t = token(app).await;
    let res = app.get("/inventory/software", &t).await;
    assert_eq!(res.status, StatusCode::OK);
    assert_eq!(res.body["meta"]["limit"], 200);
    let all = walk(app, "/inventory/software?limit=1000", &t).await;
    for status in ["eol", "warning", "unknown"] {
        assert!(all.iter().any(|s| s["eol_status"] == status), "no {status}");
    }
    for s in &all {
        assert!(s["install_count"].as_u64().unwrap_or(0) >= 1);
        for f in ["id", "name", "publisher", "version", "cve_count"] {
            assert!(!s[f].is_null(), "software lacks {f}: {s}");
        }
    }
    let res = app.get("/inventory/software?limit=5000", &t).await;
    assert_eq!(res.body["meta"]["limit"], 1000);
}

#[tokio::test]
async fn software_filters_on_text_cves_and_end_of_life() {
    let app = TestApp::shared();
    let t = token(app).await;
    let all = walk(app, "/inventory/software?limit=1000", &t).await;

    let with_cve = walk(app, "/inventory/software?has_cve=1&limit=10", &t).await;
    assert!(!with_cve.is_empty());
    assert!(
        with_cve
            .iter()
            .all(|s| s["cve_count"].as_u64().unwrap_or(0) >= 1)
    );
    assert_eq!(
        with_cve.len(),
        all.iter()
            .filter(|s| s["cve_count"].as_u64().unwrap_or(0) >= 1)
            .count()
    );

    let eol = walk(app, "/inventory/software?eol=1", &t).await;
    assert!(
        eol.iter().any(|s| s["eol_status"] == "eol")
            && eol.iter().any(|s| s["eol_status"] == "warning")
    );
    assert!(
        eol.iter().all(|s| s["eol_status"] != "unknown"),
        "unknown is never end of life"
    );

    let off = walk(app, "/inventory/software?eol=0&has_cve=0&limit=1000", &t).await;
    assert_eq!(off.len(), all.len(), "0 means no filter");

    let by_publisher = walk(app, "/inventory/software?q=igor%20PAVLOV", &t).await;
    assert!(!by_publisher.is_empty());
    assert!(by_publisher.iter().all(|s| s["publisher"] == "Igor Pavlov"));
    let by_name = walk(app, "/inventory/software?q=chrome", &t).await;
    assert!(strs(&by_name, "name").iter().all(|n| n.contains("Chrome")));

    for bad in ["has_cve=2", "eol=yes"] {
        let res = app.get(&format!("/inventory/software?{bad}"), &t).await;
        assert_eq!(res.status, StatusCode::BAD_REQUEST, "{bad}");
        assert_eq!(res.body["parameter"], bad.split('=').next().expect("name"));
    }
}

#[tokio::test]
async fn cves_look_like_the_real_catalogue_and_sort_by_cvss() {
    let app = TestApp::shared();
    let t = token(app).await;
    let res = app.get("/inventory/cves", &t).await;
    assert_eq!(res.status, StatusCode::OK);
    assert_eq!(res.body["meta"]["limit"], 200);
    let all = walk(app, "/inventory/cves?limit=3", &t).await;
    assert!(!all.is_empty());
    for c in &all {
        let id = c["cve_id"].as_str().expect("cve_id");
        assert!(id.starts_with("CVE-20") && id.len() >= 13, "{id}");
        let cvss = c["cvss"].as_f64().expect("cvss");
        assert!((0.0..=10.0).contains(&cvss));
        let epss = c["epss"].as_f64().expect("epss");
        assert!((0.0..=1.0).contains(&epss));
        assert!(c["known_exploited"].is_boolean());
        assert!(c["description"].as_str().is_some_and(|d| d.len() > 20));
        assert!(!c["software"].is_null() && !c["version"].is_null());
    }
    let scores: Vec<f64> = all.iter().filter_map(|c| c["cvss"].as_f64()).collect();
    assert!(
        scores.windows(2).all(|w| w[0] >= w[1]),
        "sorted by CVSS, highest first"
    );
    assert!(all.iter().any(|c| c["known_exploited"] == true));
    for status in ["open", "acknowledged", "mitigated"] {
        assert!(all.iter().any(|c| c["status"] == status), "no {status}");
    }
    assert_eq!(
        app.get("/inventory/cves?limit=5000", &t).await.body["meta"]["limit"],
        1000
    );
}

#[tokio::test]
async fn cves_filter_on_minimum_cvss_and_status() {
    let app = TestApp::shared();
    let t = token(app).await;
    let high = walk(app, "/inventory/cves?min_cvss=9", &t).await;
    assert!(!high.is_empty());
    assert!(
        high.iter()
            .all(|c| c["cvss"].as_f64().unwrap_or(0.0) >= 9.0)
    );
    let frac = walk(app, "/inventory/cves?min_cvss=9.7", &t).await;
    assert!(
        frac.iter()
            .all(|c| c["cvss"].as_f64().unwrap_or(0.0) >= 9.7)
            && frac.len() < high.len()
    );
    let open = walk(app, "/inventory/cves?status=mitigated&min_cvss=0", &t).await;
    assert!(!open.is_empty() && open.iter().all(|c| c["status"] == "mitigated"));
    for (bad, name) in [
        ("min_cvss=11", "min_cvss"),
        ("min_cvss=-1", "min_cvss"),
        ("min_cvss=high", "min_cvss"),
        ("status=fixed", "status"),
    ] {
        let res = app.get(&format!("/inventory/cves?{bad}"), &t).await;
        assert_eq!(res.status, StatusCode::BAD_REQUEST, "{bad}");
        assert_eq!(res.body["parameter"], name);
        assert!(
            res.body["message"]
                .as_str()
                .is_some_and(|m| m.contains(name))
        );
    }
}

#[tokio::test]
async fn assets_are_inventoried_again_as_time_passes_and_keep_the_rest() {
    let seeded = Utc::now() - Duration::hours(8);
    let app = TestApp::acme_seeded_at(seeded).await;
    let token = app.full_token().await;
    let before = walk(&app, "/inventory/assets?limit=500", &token).await;
    assert!(
        before
            .iter()
            .all(|a| time(&a["last_inventory_at"]) <= seeded)
    );
    let now = Utc::now();
    catch_up(&app.stores, now).await;
    let after = walk(&app, "/inventory/assets?limit=500", &token).await;
    assert_eq!(after.len(), before.len());
    let machines = walk(&app, "/machines?limit=500", &token).await;
    for (old, new) in before.iter().zip(&after) {
        let machine = machines
            .iter()
            .find(|m| m["hostname"] == new["hostname"])
            .expect("a machine of the fleet");
        let last = time(&new["last_inventory_at"]);
        // Every six hours while online: within the last period of the time it was seen.
        let seen = time(&machine["last_seen_at"]);
        assert!(
            seen - Duration::hours(6) < last && last <= seen,
            "{new} {machine}"
        );
        if machine["status"] == "online" {
            // Seen moments ago: inventoried again since the seed, eight hours ago.
            assert!(seeded < last, "{new}");
        }
        // The rest as the seed drew it.
        let (mut old, mut new) = (old.clone(), new.clone());
        old["last_inventory_at"] = Value::Null;
        new["last_inventory_at"] = Value::Null;
        assert_eq!(old, new);
    }
}
