//! Alerts and availability: `/alerts`, `/alerts/{id}/ack`, `/monitors`, `/monitors/{id}`,
//! `/monitors/{id}/incidents` (docs/modules.md#alerts-and-availability).

use std::collections::HashSet;

use chrono::{DateTime, Duration, SubsecRound, Utc};
use http::{Method, StatusCode};
use netops_shared::routes::Function;
use netops_shared::scope::Scope;
use serde_json::{Value, json};

use crate::helpers::{TestApp, TestResponse, acme_ctx_of, assert_resolved_between, catch_up, time};

fn ids(res: &TestResponse) -> Vec<String> {
    res.items()
        .iter()
        .map(|a| a["id"].as_str().unwrap_or("").to_owned())
        .collect()
}

/// NetDiag alerts as the netdiag module writes them: one open, one resolved in the last
/// day, one resolved long ago.
async fn put_netdiag_alerts(app: &TestApp) {
    let now = Utc::now();
    let alert = |n: u32,
                 hostname: &str,
                 status: &str,
                 opened: DateTime<Utc>,
                 resolved: Option<DateTime<Utc>>,
                 severity: &str| {
        let id = format!("nd-{hostname}-{n}");
        (
            id.clone(),
            json!({
                "id": id, "hostname": hostname, "verdict": "WAN", "cause": "Perte de paquets vers la passerelle FAI",
                "severity": severity, "status": status, "title": "Accès Internet dégradé",
                "opened_at": opened, "resolved_at": resolved,
            }),
        )
    };
    let docs = vec![
        alert(
            1,
            "PAR-LT-0001",
            "open",
            now - Duration::hours(3),
            None,
            "info",
        ),
        alert(
            2,
            "PAR-LT-0001",
            "resolved",
            now - Duration::hours(5),
            Some(now - Duration::hours(4)),
            "high",
        ),
        alert(
            3,
            "LYO-LT-0001",
            "resolved",
            now - Duration::days(20),
            Some(now - Duration::days(20) + Duration::hours(1)),
            "low",
        ),
    ];
    app.stores
        .docs
        .put("acme", "netdiag_alerts", docs)
        .await
        .expect("netdiag alerts");
}

async fn alerts(app: &TestApp, token: &str, query: &str) -> TestResponse {
    let res = app.get(&format!("/alerts{query}"), token).await;
    assert_eq!(res.status, StatusCode::OK, "/alerts{query}: {}", res.body);
    res
}

#[tokio::test]
async fn the_feed_merges_three_origins_with_spec_fields_newest_first() {
    let app = TestApp::with_modules(&[Function::Alerts, Function::Netdiag]).await;
    put_netdiag_alerts(&app).await;
    let token = app.token("acme", &[Scope::ReadAlerts]).await;
    let res = alerts(&app, &token, "?period=30d").await;
    assert_eq!(res.body["meta"]["limit"], 200);
    assert!(res.body["meta"]["window"]["from"].is_string());
    let items = res.items();
    let kinds: HashSet<&str> = items.iter().filter_map(|a| a["kind"].as_str()).collect();
    assert_eq!(kinds, HashSet::from(["netdiag", "hostmonitor", "siem"]));
    for a in items {
        for f in [
            "id",
            "kind",
            "severity",
            "status",
            "title",
            "target",
            "details",
            "opened_at",
        ] {
            assert!(!a[f].is_null(), "alert lacks {f}: {a}");
        }
        assert!(a["acknowledged"].is_boolean(), "{a}");
        if a["kind"] == "netdiag" {
            assert_eq!(a["acknowledged"], false, "a NetDiag alert closes by itself");
        }
        if a["details"]["status"] == "acknowledged" || a["details"]["state"] == "ACKNOWLEDGED" {
            assert_eq!(a["acknowledged"], true, "{a}");
        }
        let id = a["id"].as_str().unwrap_or("");
        let prefix = match a["kind"].as_str() {
            Some("hostmonitor") => "hm-",
            Some("siem") => "siem-",
            _ => "nd-",
        };
        assert!(id.starts_with(prefix), "{id} has the prefix of its origin");
        assert!(
            ["critical", "high", "medium", "low", "info"]
                .contains(&a["severity"].as_str().unwrap_or(""))
        );
        assert!(["open", "resolved"].contains(&a["status"].as_str().unwrap_or("")));
        assert!(a["details"].is_object());
    }
    let severities: HashSet<&str> = items
        .iter()
        .filter_map(|a| a["severity"].as_str())
        .collect();
    assert_eq!(severities.len(), 5, "every severity occurs: {severities:?}");
    let times: Vec<DateTime<Utc>> = items.iter().map(|a| time(&a["opened_at"])).collect();
    assert!(times.windows(2).all(|w| w[0] >= w[1]), "newest first");
    // The NetDiag resolved alert of 20 days ago is in the 30-day window, not in the default one.
    // The NetDiag origin alone, at the largest page: the demo's own alerts come on top of these.
    let netdiag = |period: &'static str| {
        let app = &app;
        let token = &token;
        async move {
            let res = alerts(app, token, &format!("?kind=netdiag&limit=500{period}")).await;
            assert!(
                res.body["meta"]["total"].as_u64() <= Some(500),
                "one page holds them all"
            );
            ids(&res)
        }
    };
    let month = netdiag("&period=30d").await;
    assert!(month.contains(&"nd-LYO-LT-0001-3".to_owned()));
    let day = netdiag("").await;
    assert!(!day.contains(&"nd-LYO-LT-0001-3".to_owned()));
    assert!(
        day.contains(&"nd-PAR-LT-0001-2".to_owned()),
        "resolved 5 h ago: in the 24 h history"
    );
}

#[tokio::test]
async fn status_open_lists_what_is_in_progress_whatever_its_start() {
    let app = TestApp::with_modules(&[Function::Alerts, Function::Netdiag]).await;
    put_netdiag_alerts(&app).await;
    let token = app.token("acme", &[Scope::ReadAlerts]).await;
    let open = alerts(&app, &token, "?status=open&period=1h").await;
    assert!(!open.items().is_empty());
    assert!(open.items().iter().all(|a| a["status"] == "open"));
    let ids_open = ids(&open);
    assert!(ids_open.contains(&"nd-PAR-LT-0001-1".to_owned()));
    assert!(!ids_open.contains(&"nd-PAR-LT-0001-2".to_owned()));
    // Open items started long before the 1-hour window are still listed.
    let hour_ago = Utc::now() - Duration::hours(1);
    assert!(
        open.items()
            .iter()
            .any(|a| time(&a["opened_at"]) < hour_ago)
    );
    // Every SIEM state in progress and every open monitor state appear.
    let siem_states: HashSet<&str> = open
        .items()
        .iter()
        .filter(|a| a["kind"] == "siem")
        .filter_map(|a| a["details"]["state"].as_str())
        .collect();
    assert_eq!(
        siem_states,
        HashSet::from(["OPEN", "ACKNOWLEDGED", "INVESTIGATING"])
    );
    let hm_states: HashSet<&str> = open
        .items()
        .iter()
        .filter(|a| a["kind"] == "hostmonitor")
        .filter_map(|a| a["details"]["status"].as_str())
        .collect();
    assert_eq!(hm_states, HashSet::from(["unresolved", "acknowledged"]));
    // `all` is a superset of `open` over the same window.
    let all = alerts(&app, &token, "?status=all&period=1h").await;
    let all_ids: HashSet<String> = ids(&all).into_iter().collect();
    assert!(ids_open.iter().all(|i| all_ids.contains(i)));
    // One page holds them all here: the total counts each alert once, open or not.
    assert!(all.items().len() < 200);
    assert_eq!(all_ids.len(), all.items().len());
    assert_eq!(
        all.body["meta"]["total"].as_u64(),
        Some(all.items().len() as u64)
    );
    assert_eq!(
        open.body["meta"]["total"].as_u64(),
        Some(open.items().len() as u64)
    );
}

#[tokio::test]
async fn status_all_adds_resolved_history_of_the_window() {
    let app = TestApp::shared();
    let token = app.token("acme", &[Scope::ReadAlerts]).await;
    let res = alerts(app, &token, "?status=all&period=30d&limit=500").await;
    let resolved: Vec<&Value> = res
        .items()
        .iter()
        .filter(|a| a["status"] == "resolved")
        .collect();
    assert!(!resolved.is_empty());
    assert!(resolved.iter().all(|a| !a["resolved_at"].is_null()));
    let states: HashSet<&str> = res
        .items()
        .iter()
        .filter(|a| a["kind"] == "siem")
        .filter_map(|a| a["details"]["state"].as_str())
        .collect();
    for s in [
        "OPEN",
        "ACKNOWLEDGED",
        "INVESTIGATING",
        "RESOLVED",
        "CLOSED",
    ] {
        assert!(states.contains(s), "SIEM state {s} in 30 days: {states:?}");
    }
    // A past window keeps only what was opened in it (plus what is still in progress).
    let from = Utc::now() - Duration::days(20);
    let to = Utc::now() - Duration::days(10);
    let q = format!(
        "?from={}&to={}",
        from.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        to.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
    );
    let past = alerts(app, &token, &q).await;
    for a in past.items() {
        let opened = time(&a["opened_at"]);
        assert!(
            a["status"] == "open" || (opened >= from - Duration::seconds(1) && opened < to),
            "{a}"
        );
    }
}

#[tokio::test]
async fn kind_filter_takes_a_comma_separated_list() {
    let app = TestApp::shared();
    let token = app.token("acme", &[Scope::ReadAlerts]).await;
    let res = alerts(app, &token, "?kind=siem&period=30d").await;
    assert!(!res.items().is_empty() && res.items().iter().all(|a| a["kind"] == "siem"));
    let res = alerts(app, &token, "?kind=hostmonitor,siem&period=30d").await;
    let kinds: HashSet<&str> = res
        .items()
        .iter()
        .filter_map(|a| a["kind"].as_str())
        .collect();
    assert_eq!(kinds, HashSet::from(["hostmonitor", "siem"]));
    let res = alerts(app, &token, "?kind=netdiag").await;
    assert!(res.items().iter().all(|a| a["kind"] == "netdiag"));
}

#[tokio::test]
async fn limit_defaults_to_200_and_is_clamped_to_500() {
    let app = TestApp::shared();
    let token = app.token("acme", &[Scope::ReadAlerts]).await;
    let res = alerts(app, &token, "?period=30d&limit=3").await;
    assert_eq!(res.items().len(), 3);
    assert_eq!(res.body["meta"]["limit"], 3);
    assert!(res.body["meta"]["total"].as_u64().unwrap_or(0) > 3);
    let res = alerts(app, &token, "?limit=9999").await;
    assert_eq!(res.body["meta"]["limit"], 500);
}

#[tokio::test]
async fn bad_alert_parameters_give_400_naming_them() {
    let app = TestApp::shared();
    let token = app.token("acme", &[Scope::ReadAlerts]).await;
    for (query, param) in [
        ("?status=closed", "status"),
        ("?kind=siem,firewall", "kind"),
        ("?period=2d", "period"),
        ("?from=yesterday", "from"),
        ("?limit=0", "limit"),
        ("?limit=abc", "limit"),
    ] {
        let res = app.get(&format!("/alerts{query}"), &token).await;
        assert_eq!(res.status, StatusCode::BAD_REQUEST, "{query}");
        assert_eq!(res.error(), "invalid_parameter");
        assert_eq!(res.body["parameter"], param, "{query}");
    }
}

#[tokio::test]
async fn alert_routes_need_their_scopes() {
    let app = TestApp::shared();
    let token = app.token("acme", &[Scope::ReadMonitors]).await;
    let res = app.get("/alerts", &token).await;
    assert_eq!(res.status, StatusCode::FORBIDDEN);
    assert_eq!(res.body["scope"], "read:alerts");
    let res = app
        .send(Method::POST, "/alerts/hm-1/ack", &token, json!({}))
        .await;
    assert_eq!(res.status, StatusCode::FORBIDDEN);
    assert_eq!(res.body["scope"], "write:alerts");
    let token = app.token("acme", &[Scope::ReadAlerts]).await;
    assert_eq!(
        app.get("/monitors", &token).await.status,
        StatusCode::FORBIDDEN
    );
}

#[tokio::test]
async fn tenants_see_only_their_alerts() {
    let app = TestApp::shared();
    let acme = app.token("acme", &[Scope::ReadAlerts]).await;
    let globex = app.token("globex", &[Scope::ReadAlerts]).await;
    let a: HashSet<String> = ids(&alerts(app, &acme, "?period=30d&limit=500").await)
        .into_iter()
        .collect();
    let g: HashSet<String> = ids(&alerts(app, &globex, "?period=30d&limit=500").await)
        .into_iter()
        .collect();
    assert!(!a.is_empty() && !g.is_empty());
    assert!(a.is_disjoint(&g));
}

/// The first alert of `kind` whose origin state is `state`.
pub(crate) async fn find_alert(app: &TestApp, kind: &str, field: &str, state: &str) -> Value {
    let token = app.token("acme", &[Scope::ReadAlerts]).await;
    let res = alerts(app, &token, &format!("?kind={kind}&period=30d&limit=500")).await;
    res.items()
        .iter()
        .find(|a| a["details"][field] == state)
        .cloned()
        .unwrap_or_else(|| panic!("no {kind} alert in state {state}"))
}

#[tokio::test]
async fn acking_an_open_siem_incident_appends_the_note_to_its_actions() {
    let app = TestApp::with_modules(&[Function::Alerts, Function::Netdiag]).await;
    let alert = find_alert(&app, "siem", "state", "OPEN").await;
    let id = alert["id"].as_str().unwrap_or("");
    let before = alert["details"]["actions"]
        .as_array()
        .map(Vec::len)
        .unwrap_or(0);
    let token = app.token("acme", &[Scope::WriteAlerts]).await;
    let res = app
        .send(
            Method::POST,
            &format!("/alerts/{id}/ack"),
            &token,
            json!({"note": "Vu, j'enquête."}),
        )
        .await;
    assert_eq!(res.status, StatusCode::OK, "{}", res.body);
    let data = &res.body["data"];
    assert_eq!(data["id"], id);
    assert_eq!(data["status"], "open", "acknowledged is still in progress");
    assert_eq!(data["details"]["state"], "ACKNOWLEDGED");
    assert_eq!(alert["acknowledged"], false, "{alert}");
    assert!(alert["acknowledged_by"].is_null() && alert["acknowledged_at"].is_null());
    assert_eq!(data["acknowledged"], true);
    assert!(
        data["acknowledged_by"]
            .as_str()
            .is_some_and(|b| b.starts_with("test-"))
    );
    assert!(data["acknowledged_at"].is_string());
    let actions = data["details"]["actions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(actions.len(), before + 1);
    let last = &actions[before];
    assert_eq!(last["action"], "ack");
    assert_eq!(last["note"], "Vu, j'enquête.");
    assert!(
        last["by"].as_str().is_some_and(|b| b.starts_with("test-")),
        "by is the token name"
    );
    assert!(last["at"].is_string());
    // The stored incident (read by the security module) changed too.
    let sid = id.trim_start_matches("siem-");
    let doc = app
        .stores
        .docs
        .get("acme", "siem_incidents", sid)
        .await
        .expect("doc")
        .expect("exists");
    assert_eq!(doc.body["status"], "ACKNOWLEDGED");
    // The feed says so at top level: a client listing what is open skips it.
    let reader = app.token("acme", &[Scope::ReadAlerts]).await;
    let open = alerts(&app, &reader, "?kind=siem&status=open").await;
    let listed = open
        .items()
        .iter()
        .find(|a| a["id"] == id)
        .cloned()
        .unwrap_or_default();
    assert_eq!(listed["status"], "open");
    assert_eq!(listed["acknowledged"], true);
    assert_eq!(listed["acknowledged_by"], data["acknowledged_by"]);
    assert_eq!(listed["acknowledged_at"], data["acknowledged_at"]);
    // A second ack is a conflict.
    let again = app
        .send(
            Method::POST,
            &format!("/alerts/{id}/ack"),
            &token,
            json!({}),
        )
        .await;
    assert_eq!(again.status, StatusCode::CONFLICT);
    assert_eq!(again.error(), "conflict");
}

#[tokio::test]
async fn acking_a_siem_incident_not_open_gives_409() {
    let app = TestApp::shared();
    let token = app.token("acme", &[Scope::WriteAlerts]).await;
    for state in ["ACKNOWLEDGED", "INVESTIGATING", "RESOLVED", "CLOSED"] {
        let alert = find_alert(app, "siem", "state", state).await;
        let id = alert["id"].as_str().unwrap_or("");
        let res = app
            .send(
                Method::POST,
                &format!("/alerts/{id}/ack"),
                &token,
                json!({"note": "x"}),
            )
            .await;
        assert_eq!(res.status, StatusCode::CONFLICT, "{state}: {}", res.body);
        assert_eq!(res.body["current_status"], state);
    }
}

#[tokio::test]
async fn acking_an_unresolved_monitor_incident_stores_the_note_only_when_notes_are_empty() {
    let app = TestApp::with_modules(&[Function::Alerts, Function::Netdiag]).await;
    let token = app
        .token("acme", &[Scope::WriteAlerts, Scope::ReadMonitors])
        .await;
    let reader = app.token("acme", &[Scope::ReadAlerts]).await;
    let open = alerts(&app, &reader, "?kind=hostmonitor&status=open").await;
    let unresolved: Vec<&Value> = open
        .items()
        .iter()
        .filter(|a| a["details"]["status"] == "unresolved")
        .collect();
    let empty = unresolved
        .iter()
        .find(|a| a["details"]["notes"].is_null())
        .expect("unresolved without notes");
    let noted = unresolved
        .iter()
        .find(|a| a["details"]["notes"].is_string())
        .expect("unresolved with notes");

    let id = empty["id"].as_str().unwrap_or("");
    let res = app
        .send(
            Method::POST,
            &format!("/alerts/{id}/ack"),
            &token,
            json!({"note": "Redémarrage du service demandé."}),
        )
        .await;
    assert_eq!(res.status, StatusCode::OK, "{}", res.body);
    let d = &res.body["data"]["details"];
    assert_eq!(res.body["data"]["acknowledged"], true);
    assert_eq!(res.body["data"]["acknowledged_by"], d["acknowledged_by"]);
    assert_eq!(res.body["data"]["acknowledged_at"], d["acknowledged_at"]);
    assert_eq!(d["status"], "acknowledged");
    assert_eq!(d["notes"], "Redémarrage du service demandé.");
    assert!(d["acknowledged_at"].is_string());
    assert!(
        d["acknowledged_by"]
            .as_str()
            .is_some_and(|b| b.starts_with("test-"))
    );
    // The monitor's incident list shows the new state.
    let monitor = d["monitor_id"].as_i64().unwrap_or(0);
    let list = app
        .get(&format!("/monitors/{monitor}/incidents"), &token)
        .await;
    let inc = list
        .items()
        .iter()
        .find(|i| i["alert_id"] == id)
        .cloned()
        .unwrap_or_default();
    assert_eq!(inc["status"], "acknowledged");

    let id = noted["id"].as_str().unwrap_or("");
    let notes = noted["details"]["notes"].clone();
    let res = app
        .send(
            Method::POST,
            &format!("/alerts/{id}/ack"),
            &token,
            json!({"note": "Autre note"}),
        )
        .await;
    assert_eq!(res.status, StatusCode::OK, "{}", res.body);
    assert_eq!(
        res.body["data"]["details"]["notes"], notes,
        "existing notes are kept"
    );
    assert_eq!(res.body["data"]["details"]["status"], "acknowledged");

    let again = app
        .send(
            Method::POST,
            &format!("/alerts/{id}/ack"),
            &token,
            json!({}),
        )
        .await;
    assert_eq!(again.status, StatusCode::CONFLICT);
    assert_eq!(again.body["current_status"], "acknowledged");
}

#[tokio::test]
async fn acking_a_monitor_incident_already_acknowledged_or_resolved_gives_409() {
    let app = TestApp::shared();
    let token = app.token("acme", &[Scope::WriteAlerts]).await;
    for state in ["acknowledged", "resolved"] {
        let alert = find_alert(app, "hostmonitor", "status", state).await;
        let id = alert["id"].as_str().unwrap_or("");
        let res = app
            .send(
                Method::POST,
                &format!("/alerts/{id}/ack"),
                &token,
                json!({}),
            )
            .await;
        assert_eq!(res.status, StatusCode::CONFLICT, "{state}: {}", res.body);
        assert_eq!(res.body["current_status"], state);
    }
}

#[tokio::test]
async fn ack_answers_400_for_malformed_and_netdiag_ids_and_404_for_unknown_ones() {
    let app = TestApp::with_modules(&[Function::Alerts, Function::Netdiag]).await;
    put_netdiag_alerts(&app).await;
    let token = app.token("acme", &[Scope::WriteAlerts]).await;
    for id in [
        "nd-PAR-LT-0001-1",
        "nd-whatever",
        "hm-",
        "hm-abc",
        "hm--3",
        "siem-",
        "siem-a_b",
        "12",
        "incident-4",
        "HM-12",
    ] {
        let res = app
            .send(
                Method::POST,
                &format!("/alerts/{id}/ack"),
                &token,
                json!({}),
            )
            .await;
        assert_eq!(res.status, StatusCode::BAD_REQUEST, "{id}: {}", res.body);
        assert_eq!(res.error(), "invalid_parameter");
        assert_eq!(res.body["parameter"], "id");
    }
    for id in ["hm-999999999", "siem-1999-0001"] {
        let res = app
            .send(
                Method::POST,
                &format!("/alerts/{id}/ack"),
                &token,
                json!({}),
            )
            .await;
        assert_eq!(res.status, StatusCode::NOT_FOUND, "{id}: {}", res.body);
        assert_eq!(res.error(), "not_found");
    }
    // Another tenant's open incident is unknown here.
    let globex = app.token("globex", &[Scope::ReadAlerts]).await;
    let g = alerts(&app, &globex, "?status=open&kind=siem").await;
    let foreign = ids(&g)
        .into_iter()
        .next()
        .expect("globex has open SIEM incidents");
    let res = app
        .send(
            Method::POST,
            &format!("/alerts/{foreign}/ack"),
            &token,
            json!({}),
        )
        .await;
    assert_eq!(res.status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn ack_note_is_optional_and_at_most_2000_characters() {
    let app = TestApp::with_modules(&[Function::Alerts, Function::Netdiag]).await;
    let token = app.token("acme", &[Scope::WriteAlerts]).await;
    let alert = find_alert(&app, "siem", "state", "OPEN").await;
    let id = alert["id"].as_str().unwrap_or("").to_owned();
    for bad in [
        json!({"note": "é".repeat(2001)}),
        json!({"note": 12}),
        json!([1]),
    ] {
        let res = app
            .send(Method::POST, &format!("/alerts/{id}/ack"), &token, bad)
            .await;
        assert_eq!(res.status, StatusCode::BAD_REQUEST, "{}", res.body);
        assert_eq!(res.error(), "invalid_body");
    }
    let res = app
        .request(
            Method::POST,
            &format!("/alerts/{id}/ack"),
            Some(&token),
            Some(b"not json".to_vec()),
            &[],
        )
        .await;
    assert_eq!(res.status, StatusCode::BAD_REQUEST);
    // No body at all is an ack without note; 2,000 characters exactly are accepted elsewhere.
    let res = app
        .request(
            Method::POST,
            &format!("/alerts/{id}/ack"),
            Some(&token),
            None,
            &[],
        )
        .await;
    assert_eq!(res.status, StatusCode::OK, "{}", res.body);
    let actions = res.body["data"]["details"]["actions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(
        actions
            .last()
            .is_some_and(|a| a["action"] == "ack" && a["note"].is_null())
    );
    let other = find_alert(&app, "siem", "state", "OPEN").await;
    let oid = other["id"].as_str().unwrap_or("");
    let res = app
        .send(
            Method::POST,
            &format!("/alerts/{oid}/ack"),
            &token,
            json!({"note": "é".repeat(2000)}),
        )
        .await;
    assert_eq!(res.status, StatusCode::OK, "{}", res.body);
}

#[tokio::test]
async fn concurrent_acks_of_one_incident_give_exactly_one_200() {
    let app = TestApp::with_modules(&[Function::Alerts, Function::Netdiag]).await;
    let token = app.token("acme", &[Scope::WriteAlerts]).await;
    for (kind, field, state) in [
        ("siem", "state", "OPEN"),
        ("hostmonitor", "status", "unresolved"),
    ] {
        let alert = find_alert(&app, kind, field, state).await;
        let path = format!("/alerts/{}/ack", alert["id"].as_str().unwrap_or(""));
        let calls = (0..12).map(|k| {
            app.send(
                Method::POST,
                &path,
                &token,
                json!({"note": format!("note {k}")}),
            )
        });
        let results = futures_join_all(calls).await;
        let ok = results
            .iter()
            .filter(|r| r.status == StatusCode::OK)
            .count();
        let conflicts = results
            .iter()
            .filter(|r| r.status == StatusCode::CONFLICT)
            .count();
        assert_eq!(
            (ok, conflicts),
            (1, 11),
            "{kind}: {:?}",
            results.iter().map(|r| r.status).collect::<Vec<_>>()
        );
    }
}

async fn futures_join_all<F: std::future::Future<Output = TestResponse>>(
    calls: impl Iterator<Item = F>,
) -> Vec<TestResponse> {
    let set: Vec<_> = calls.collect();
    let mut out = Vec::new();
    // Poll them together on one task: the store runs each call on the blocking pool.
    let mut pinned: Vec<std::pin::Pin<Box<F>>> = set.into_iter().map(Box::pin).collect();
    let mut done: Vec<Option<TestResponse>> = (0..pinned.len()).map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let mut pending = false;
        for (i, f) in pinned.iter_mut().enumerate() {
            if done[i].is_none() {
                match f.as_mut().poll(cx) {
                    std::task::Poll::Ready(r) => done[i] = Some(r),
                    std::task::Poll::Pending => pending = true,
                }
            }
        }
        if pending {
            std::task::Poll::Pending
        } else {
            std::task::Poll::Ready(())
        }
    })
    .await;
    out.extend(done.into_iter().flatten());
    out
}

#[tokio::test]
async fn every_ack_is_in_the_write_log_with_its_status() {
    let app = TestApp::with_modules(&[Function::Alerts, Function::Netdiag]).await;
    let token = app.token("acme", &[Scope::WriteAlerts]).await;
    let alert = find_alert(&app, "siem", "state", "OPEN").await;
    let path = format!("/alerts/{}/ack", alert["id"].as_str().unwrap_or(""));
    assert_eq!(
        app.send(Method::POST, &path, &token, json!({"note": "n1"}))
            .await
            .status,
        StatusCode::OK
    );
    assert_eq!(
        app.send(Method::POST, &path, &token, json!({"note": "n2"}))
            .await
            .status,
        StatusCode::CONFLICT
    );
    assert_eq!(
        app.send(Method::POST, "/alerts/nd-x/ack", &token, json!({}))
            .await
            .status,
        StatusCode::BAD_REQUEST
    );
    let log = app.stores.writes.entries("acme").await.expect("log");
    let statuses: Vec<(u16, Value)> = log.iter().map(|e| (e.status, e.body.clone())).collect();
    assert_eq!(
        statuses,
        vec![
            (200, json!({"note": "n1"})),
            (409, json!({"note": "n2"})),
            (400, json!({}))
        ]
    );
    assert!(
        log.iter()
            .all(|e| e.method == "POST" && e.path.ends_with("/ack"))
    );
}

#[tokio::test]
async fn monitors_list_state_last_check_and_availability() {
    let app = TestApp::shared();
    let token = app.token("acme", &[Scope::ReadMonitors]).await;
    let res = app.get("/monitors", &token).await;
    assert_eq!(res.status, StatusCode::OK, "{}", res.body);
    let items = res.items();
    assert!(items.len() >= 10);
    let statuses: HashSet<&str> = items.iter().filter_map(|m| m["status"].as_str()).collect();
    assert_eq!(statuses, HashSet::from(["up", "down", "degraded"]));
    let types: HashSet<&str> = items.iter().filter_map(|m| m["type"].as_str()).collect();
    assert_eq!(types, HashSet::from(["http", "ping", "tcp", "dns"]));
    for m in items.iter().filter(|m| m["active"] == true) {
        for span in ["24h", "7d", "30d"] {
            let a = m["availability"][span].as_f64().unwrap_or(-1.0);
            assert!(
                (0.0..=100.0).contains(&a),
                "{span} availability of {}: {a}",
                m["id"]
            );
        }
        assert!(m["last_check"]["at"].is_string() && m["last_check"]["status"] == m["status"]);
    }
    for m in items
        .iter()
        .filter(|m| m["status"] != "up" && m["active"] == true)
    {
        assert!(
            m["open_incident"]
                .as_str()
                .is_some_and(|i| i.starts_with("hm-")),
            "{m}"
        );
    }
    let paused = items
        .iter()
        .find(|m| m["active"] == false)
        .expect("a paused monitor");
    assert!(
        paused["availability"]["24h"].is_null(),
        "no checks while paused"
    );
    assert!(paused["availability"]["30d"].is_number());
    let ids: Vec<i64> = items.iter().filter_map(|m| m["id"].as_i64()).collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "sorted by id");
}

#[tokio::test]
async fn monitors_filter_by_status_and_active() {
    let app = TestApp::shared();
    let token = app.token("acme", &[Scope::ReadMonitors]).await;
    let all = app.get("/monitors", &token).await.items().len();
    let down = app.get("/monitors?status=down", &token).await;
    assert!(!down.items().is_empty() && down.items().iter().all(|m| m["status"] == "down"));
    let active = app.get("/monitors?active=1", &token).await;
    let paused = app.get("/monitors?active=0", &token).await;
    assert!(active.items().iter().all(|m| m["active"] == true));
    assert!(paused.items().iter().all(|m| m["active"] == false));
    assert_eq!(active.items().len() + paused.items().len(), all);
    assert!(
        app.get("/monitors?status=rebooting", &token)
            .await
            .items()
            .is_empty()
    );
    for q in ["?active=yes", "?active=2"] {
        let res = app.get(&format!("/monitors{q}"), &token).await;
        assert_eq!(res.status, StatusCode::BAD_REQUEST);
        assert_eq!(res.body["parameter"], "active");
    }
}

#[tokio::test]
async fn one_monitor_by_id_or_404() {
    let app = TestApp::shared();
    let token = app.token("acme", &[Scope::ReadMonitors]).await;
    let list = app.get("/monitors", &token).await;
    let first = &list.items()[0];
    let id = first["id"].as_i64().unwrap_or(0);
    let res = app.get(&format!("/monitors/{id}"), &token).await;
    assert_eq!(res.status, StatusCode::OK);
    assert_eq!(&res.body["data"], first);
    let globex = app.token("globex", &[Scope::ReadMonitors]).await;
    assert_eq!(
        app.get(&format!("/monitors/{id}"), &globex).await.status,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        app.get("/monitors/999999999", &token).await.status,
        StatusCode::NOT_FOUND
    );
    let res = app.get("/monitors/abc", &token).await;
    assert_eq!(res.status, StatusCode::BAD_REQUEST);
    assert_eq!(res.body["parameter"], "id");
}

#[tokio::test]
async fn monitor_incidents_default_to_30_days_and_always_include_ongoing_ones() {
    let app = TestApp::shared();
    let token = app.token("acme", &[Scope::ReadMonitors]).await;
    let down = app.get("/monitors?status=down", &token).await;
    let monitor = down.items()[0]["id"].as_i64().unwrap_or(0);
    let res = app
        .get(&format!("/monitors/{monitor}/incidents"), &token)
        .await;
    assert_eq!(res.status, StatusCode::OK);
    assert_eq!(res.body["meta"]["limit"], 100);
    let w = &res.body["meta"]["window"];
    assert_eq!((time(&w["to"]) - time(&w["from"])).num_days(), 30);
    let items = res.items();
    assert!(
        items.iter().any(|i| i["status"] != "resolved"),
        "the ongoing incident is listed"
    );
    for i in items {
        assert_eq!(i["monitor_id"], monitor);
        for f in [
            "id",
            "alert_id",
            "kind",
            "severity",
            "status",
            "started_at",
            "duration_s",
            "error",
        ] {
            assert!(!i[f].is_null(), "incident lacks {f}: {i}");
        }
    }
    let times: Vec<DateTime<Utc>> = items.iter().map(|i| time(&i["started_at"])).collect();
    assert!(times.windows(2).all(|w| w[0] >= w[1]));
    // A window far in the past still lists the ongoing incident.
    let res = app
        .get(
            &format!(
                "/monitors/{monitor}/incidents?from=2020-01-01T00:00:00Z&to=2020-01-02T00:00:00Z"
            ),
            &token,
        )
        .await;
    assert_eq!(res.status, StatusCode::OK);
    assert!(!res.items().is_empty() && res.items().iter().all(|i| i["status"] != "resolved"));
    // Limit and errors.
    let res = app
        .get(&format!("/monitors/{monitor}/incidents?limit=1"), &token)
        .await;
    assert_eq!(res.items().len(), 1);
    let res = app
        .get(
            &format!("/monitors/{monitor}/incidents?limit=10000"),
            &token,
        )
        .await;
    assert_eq!(res.body["meta"]["limit"], 500);
    assert_eq!(
        app.get("/monitors/999999999/incidents", &token)
            .await
            .status,
        StatusCode::NOT_FOUND
    );
    let res = app
        .get(&format!("/monitors/{monitor}/incidents?period=5d"), &token)
        .await;
    assert_eq!(res.status, StatusCode::BAD_REQUEST);
    assert_eq!(res.body["parameter"], "period");
}

#[tokio::test]
async fn siem_incidents_are_seeded_for_the_security_module() {
    let app = TestApp::shared();
    let docs = app
        .stores
        .docs
        .list("acme", "siem_incidents", &Default::default(), None, 10_000)
        .await
        .expect("docs");
    let states: HashSet<String> = docs
        .iter()
        .filter_map(|d| d.body["status"].as_str().map(str::to_owned))
        .collect();
    let severities: HashSet<String> = docs
        .iter()
        .filter_map(|d| d.body["severity"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(states.len(), 5, "{states:?}");
    assert_eq!(severities.len(), 4, "{severities:?}");
    let mut big = 0;
    for d in &docs {
        let b = &d.body;
        for f in [
            "id",
            "title",
            "severity",
            "status",
            "rule_id",
            "rule_name",
            "opened_at",
            "updated_at",
            "accounts",
            "hosts",
            "source_ips",
            "event_count",
            "actions",
        ] {
            assert!(!b[f].is_null(), "{f} missing in {b}");
        }
        let closed = matches!(b["status"].as_str(), Some("RESOLVED" | "CLOSED"));
        assert_eq!(b["closed_at"].is_null(), !closed, "{b}");
        if b["event_count"].as_u64().unwrap_or(0) > 200 {
            big += 1;
        }
    }
    assert!(
        big >= 1,
        "some incidents have more than 200 correlated events"
    );
}

#[tokio::test]
async fn ack_errors_speak_english_on_request() {
    let app = TestApp::shared();
    let token = app.token("acme", &[Scope::WriteAlerts]).await;
    let res = app
        .request(
            Method::POST,
            "/alerts/nd-PAR-LT-0001-1/ack",
            Some(&token),
            None,
            &[("accept-language", "en")],
        )
        .await;
    assert_eq!(res.status, StatusCode::BAD_REQUEST);
    assert!(
        res.body["message"]
            .as_str()
            .is_some_and(|m| m.contains("NetDiag") && m.contains("cannot be acknowledged")),
        "{}",
        res.body
    );
    let res = app
        .request(
            Method::POST,
            "/alerts/hm-999999999/ack",
            Some(&token),
            None,
            &[],
        )
        .await;
    assert!(
        res.body["message"]
            .as_str()
            .is_some_and(|m| m.contains("introuvable")),
        "{}",
        res.body
    );
}

// ---------------------------------------------------------------- as time passes

/// Every item of a listing of alerts of the last three days (one page holds them here).
async fn alerts_of_3_days(app: &TestApp, token: &str, kind: &str) -> Vec<Value> {
    let res = alerts(app, token, &format!("?kind={kind}&period=3d&limit=500")).await;
    assert_eq!(res.status, StatusCode::OK, "{}", res.body);
    assert!(res.body["meta"]["next_cursor"].is_null());
    res.items().clone()
}

/// The monitors as of `now`: each active one checked then, in the status of its open
/// incident (down or degraded) or up without one.
async fn assert_monitors_follow_their_incidents(app: &TestApp, token: &str, now: DateTime<Utc>) {
    let monitors = app.get("/monitors", token).await;
    assert_eq!(monitors.status, StatusCode::OK, "{}", monitors.body);
    let open = alerts_of_3_days(app, token, "hostmonitor").await;
    for m in monitors.items().iter().filter(|m| m["active"] == true) {
        // Answered to the millisecond.
        assert_eq!(time(&m["last_check"]["at"]), now.trunc_subsecs(3), "{m}");
        assert_eq!(m["last_check"]["status"], m["status"], "{m}");
        match m["open_incident"].as_str() {
            None => assert_eq!(m["status"], "up", "{m}"),
            Some(id) => {
                let incident = open
                    .iter()
                    .find(|a| a["id"] == id)
                    .unwrap_or_else(|| panic!("{id} listed"));
                assert_eq!(incident["status"], "open", "{incident}");
                assert_eq!(m["status"], incident["details"]["kind"], "{m} {incident}");
            }
        }
    }
}

#[tokio::test]
async fn monitors_and_incidents_go_on_from_the_seed_as_time_passes() {
    let seeded = Utc::now() - Duration::hours(5);
    let app = TestApp::acme_seeded_at(seeded).await;
    let token = app.full_token().await;
    // The monitor incidents the seed left in progress.
    let open_at_seed = alerts(&app, &token, "?status=open&kind=hostmonitor").await;
    assert!(open_at_seed.items().len() >= 4, "{}", open_at_seed.body);
    // Caught up in steps, as the background task does: at each, the monitors follow their
    // incidents, and a SIEM incident is in progress.
    let now = Utc::now();
    let steps = [1, 2, 3, 4].map(|h| seeded + Duration::hours(h));
    for step in steps.into_iter().chain([now]) {
        catch_up(&app.stores, step).await;
        assert_monitors_follow_their_incidents(&app, &token, step).await;
        let siem = alerts(&app, &token, "?status=open&kind=siem").await;
        assert!(!siem.items().is_empty(), "none in progress at {step}");
    }
    // Each has resolved since (within three hours of the seed), by itself.
    let all = alerts_of_3_days(&app, &token, "hostmonitor").await;
    for seeded_open in open_at_seed.items() {
        let alert = assert_resolved_between(
            &all,
            &seeded_open["id"],
            seeded,
            seeded + Duration::hours(3),
        );
        assert_eq!(alert["details"]["notes"], seeded_open["details"]["notes"]);
    }
}

/// The SIEM queue over two days and more after the seed, from the producer itself (its
/// checks do not depend on the store, and two days of catch-up take minutes on moto): the
/// incidents the seed left in progress are resolved by the analyst, new ones open, and one
/// at least is in progress at any time.
#[test]
fn the_siem_queue_always_holds_an_incident_in_progress_and_the_seeds_are_resolved() {
    let now = Utc::now();
    let seeded = now - Duration::hours(52);
    let (ctx, _dir) = acme_ctx_of(now, 60);
    let ctx = ctx.seeded(seeded);
    let produced = netops_demo::alerts::produce(&ctx, seeded, now);
    let siem = produced
        .changes
        .iter()
        .filter(|c| c.collection == "siem_incidents");
    // Resolved by the analyst: the seed's (documents it wrote) once the first produced one
    // has opened, the produced ones once the next one has.
    let resolution = |arg: &Value| time(&arg["at"]);
    let mut spans: Vec<(DateTime<Utc>, Option<DateTime<Utc>>)> = Vec::new();
    let mut seeds = 0;
    for change in siem {
        let resolved = change.update.as_ref().map(|(_, arg)| resolution(arg));
        match &change.created {
            None => {
                seeds += 1;
                let resolved = resolved.expect("the seed's incident resolved");
                assert!(seeded < resolved && resolved < now, "{resolved}");
                spans.push((seeded, Some(resolved)));
            }
            Some(doc) => {
                let opened = time(&doc["opened_at"]);
                assert!(seeded <= opened && opened < now, "{doc}");
                assert_eq!(resolved.is_some(), doc["status"] == "RESOLVED", "{doc}");
                spans.push((opened, resolved));
            }
        }
    }
    assert!(
        seeds >= 5,
        "the seed leaves five in progress at least: {seeds}"
    );
    assert!(
        spans.len() > seeds,
        "an incident opened since the seed: {spans:?}"
    );
    let mut t = seeded;
    while t < now {
        assert!(
            spans
                .iter()
                .any(|(from, to)| *from <= t && to.is_none_or(|to| t < to)),
            "none in progress at {t}"
        );
        t += Duration::minutes(10);
    }
}

/// Every active monitor is checked after the seed, however many there are (beyond 220
/// machines, the seed leaves more than the four incidents of fixed kind in progress).
#[tokio::test]
async fn every_active_monitor_is_checked_after_the_seed_at_any_size() {
    let now = Utc::now();
    for machines in [60, 300, 1000] {
        let (ctx, _dir) = acme_ctx_of(now, machines);
        let ctx = ctx.seeded(now - Duration::hours(2));
        let produced = netops_demo::alerts::produce(&ctx, now - Duration::hours(1), now);
        let monitors: Vec<&Value> = produced
            .docs
            .iter()
            .filter(|(collection, _)| collection == "monitors")
            .flat_map(|(_, docs)| docs.iter().map(|(_, m)| m))
            .collect();
        let defined = 8 + machines / 10;
        let paused = (0..defined).filter(|i| i % 23 == 6).count();
        assert_eq!(monitors.len(), defined - paused, "{machines}");
        let (_, hourly) = produced
            .rollups
            .iter()
            .find(|(series, _)| series == "monitor_checks_hourly")
            .expect("hourly counts");
        for m in monitors {
            assert_eq!(m["active"], true, "{m}");
            let checks: f64 = hourly
                .iter()
                .filter_map(|r| r.measures.get(&format!("{}:checks", m["id"])))
                .sum();
            let expected = 3600 / m["interval_s"].as_i64().expect("interval");
            assert_eq!(checks as i64, expected, "{machines}: {m}");
        }
    }
}
