//! Fleet: `/me`, `/machines`, `/machines/{hostname}` (docs/modules.md#fleet).

use http::StatusCode;
use netops_shared::scope::Scope;

use crate::helpers::{TestApp, walk};

#[tokio::test]
async fn me_returns_the_token_identity_with_any_valid_token() {
    let app = TestApp::shared();
    let token = app.token("acme", &[Scope::ReadDns]).await;
    let res = app.get("/me", &token).await;
    assert_eq!(res.status, StatusCode::OK);
    let me = &res.body["data"];
    assert_eq!(me["tenant"], "acme");
    assert_eq!(me["scopes"], serde_json::json!(["read:dns"]));
    assert!(me["name"].as_str().is_some_and(|n| n.starts_with("test-")));
    assert!(me["expires_at"].as_str().is_some());
}

#[tokio::test]
async fn machines_list_carries_the_spec_fields_and_default_page_size() {
    let app = TestApp::shared();
    let token = app.full_token().await;
    let res = app.get("/machines", &token).await;
    assert_eq!(res.status, StatusCode::OK);
    assert_eq!(res.body["meta"]["limit"], 100);
    assert!(
        res.body["meta"]["next_cursor"].is_null(),
        "60 machines fit in one page of 100"
    );
    let items = res.items();
    assert_eq!(items.len(), 60);
    for m in items {
        for field in [
            "id",
            "hostname",
            "ip",
            "os",
            "agent_version",
            "status",
            "last_seen_at",
            "modules",
        ] {
            assert!(!m[field].is_null(), "machine lacks {field}: {m}");
        }
    }
    let hostnames: Vec<&str> = items
        .iter()
        .filter_map(|m| m["hostname"].as_str())
        .collect();
    let mut sorted = hostnames.clone();
    sorted.sort();
    assert_eq!(hostnames, sorted, "machines are sorted by hostname");
}

#[tokio::test]
async fn status_filter_keeps_only_matching_machines_across_pages() {
    let app = TestApp::shared();
    let token = app.full_token().await;
    let online = walk(app, "/machines?status=online&limit=7", &token).await;
    let offline = walk(app, "/machines?status=offline&limit=7", &token).await;
    assert!(!online.is_empty() && !offline.is_empty());
    assert!(online.iter().all(|m| m["status"] == "online"));
    assert!(offline.iter().all(|m| m["status"] == "offline"));
    assert_eq!(online.len() + offline.len(), 60);
    let none = app.get("/machines?status=rebooting", &token).await;
    assert_eq!(none.status, StatusCode::OK);
    assert!(none.items().is_empty());
}

#[tokio::test]
async fn one_machine_by_exact_hostname_or_404() {
    let app = TestApp::shared();
    let token = app.full_token().await;
    let res = app.get("/machines/PAR-LT-0001", &token).await;
    assert_eq!(res.status, StatusCode::OK);
    assert_eq!(res.body["data"]["hostname"], "PAR-LT-0001");
    for unknown in [
        "/machines/par-lt-0001",
        "/machines/NOPE-0001",
        "/machines/gx-nyc-lt001",
    ] {
        let res = app.get(unknown, &token).await;
        assert_eq!(res.status, StatusCode::NOT_FOUND, "{unknown}");
        assert_eq!(res.error(), "not_found");
    }
}
