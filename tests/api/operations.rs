//! Operations: `/maintenance`, `/heartbeats`, `/profiles`, `/profiles/{id}`,
//! `/profiles/deployments/{id}/compare` (docs/modules.md#operations).

use std::collections::{HashMap, HashSet};

use chrono::{DateTime, Duration, Utc};
use http::StatusCode;
use netops_shared::scope::Scope;
use serde_json::Value;

use crate::helpers::{TestApp, acme_ctx, time};

async fn monitors_token(app: &TestApp) -> String {
    app.token("acme", &[Scope::ReadMonitors]).await
}

#[tokio::test]
async fn maintenance_windows_carry_covers_and_active_now() {
    let app = TestApp::shared();
    let token = monitors_token(app).await;
    let res = app.get("/maintenance", &token).await;
    assert_eq!(res.status, StatusCode::OK, "{}", res.body);
    let items = res.items();
    let covers: HashSet<&str> = items.iter().filter_map(|w| w["covers"].as_str()).collect();
    assert_eq!(covers, HashSet::from(["all", "some", "none"]));
    let now = Utc::now();
    for w in items {
        let active = time(&w["starts_at"]) <= now && now < time(&w["ends_at"]);
        assert_eq!(w["active_now"], active, "{w}");
        let empty = w["probes"].as_array().is_some_and(Vec::is_empty);
        if empty {
            assert_eq!(
                w["covers"], "all",
                "an empty probe list covers the whole tenant"
            );
        }
        assert!(["planned", "active", "ended"].contains(&w["state"].as_str().unwrap_or("")));
    }
    assert!(
        items.iter().any(|w| w["active_now"] == true)
            && items.iter().any(|w| w["active_now"] == false)
    );
    let starts: Vec<DateTime<Utc>> = items.iter().map(|w| time(&w["starts_at"])).collect();
    assert!(starts.windows(2).all(|p| p[0] >= p[1]), "newest first");
}

#[tokio::test]
async fn maintenance_active_filter_keeps_windows_active_now() {
    let app = TestApp::shared();
    let token = monitors_token(app).await;
    let all = app.get("/maintenance", &token).await.items().len();
    let on = app.get("/maintenance?active=1", &token).await;
    let off = app.get("/maintenance?active=0", &token).await;
    assert!(!on.items().is_empty());
    assert!(on.items().iter().all(|w| w["active_now"] == true));
    assert!(off.items().iter().all(|w| w["active_now"] == false));
    assert_eq!(on.items().len() + off.items().len(), all);
    let res = app.get("/maintenance?active=true", &token).await;
    assert_eq!(res.status, StatusCode::BAD_REQUEST);
    assert_eq!(res.body["parameter"], "active");
}

#[tokio::test]
async fn heartbeats_give_last_signal_exit_code_and_every_state() {
    let app = TestApp::shared();
    let token = monitors_token(app).await;
    let res = app.get("/heartbeats", &token).await;
    assert_eq!(res.status, StatusCode::OK);
    let items = res.items();
    let states: HashSet<&str> = items.iter().filter_map(|h| h["state"].as_str()).collect();
    assert_eq!(states, HashSet::from(["ok", "failed", "late", "pending"]));
    for h in items {
        match h["state"].as_str() {
            Some("pending") => assert!(h["last_signal_at"].is_null() && h["exit_code"].is_null()),
            Some("failed") => assert_ne!(h["exit_code"], 0),
            Some("ok") => {
                assert_eq!(h["exit_code"], 0);
                assert!(time(&h["next_expected_at"]) > time(&h["last_signal_at"]));
            }
            _ => assert!(h["last_signal_at"].is_string()),
        }
        assert!(h["hostname"].is_string() && h["period_s"].is_number());
    }
}

/// A heartbeat's state at `now` as docs/data.md#module-values defines it.
fn heartbeat_state(h: &Value, now: DateTime<Utc>) -> &'static str {
    let Some(last) = h["last_signal_at"]
        .as_str()
        .and_then(|t| t.parse::<DateTime<Utc>>().ok())
    else {
        return "pending";
    };
    let due = last + Duration::seconds(h["period_s"].as_i64().unwrap_or_default());
    if now > due + Duration::seconds(h["grace_s"].as_i64().unwrap_or_default()) {
        "late"
    } else if h["exit_code"] != 0 {
        "failed"
    } else {
        "ok"
    }
}

/// Three days of the heartbeats the producer writes, every five minutes after the seed (from
/// the producer itself: its checks do not depend on the store): the usual jobs turn late when
/// they miss a run and fail now and then, and recover at their next run; the first four keep
/// one state each, so every state shows at any time; a signal never goes back in time.
#[test]
fn heartbeats_turn_late_or_fail_and_recover_as_time_passes() {
    let seeded: DateTime<Utc> = "2026-11-02T08:00:00Z".parse().expect("time");
    let (ctx, _dir) = acme_ctx(seeded);
    let mut ctx = ctx.seeded(seeded);
    // The states each usual job went through, and its last signal.
    let mut states: HashMap<String, Vec<&str>> = HashMap::new();
    let mut last_signal: HashMap<String, DateTime<Utc>> = HashMap::new();
    for step in 0..3 * 24 * 12 {
        let now = seeded + Duration::minutes(5 * step);
        ctx.now = now;
        let produced = netops_demo::operations::produce(&ctx, now - Duration::minutes(5), now);
        let [(collection, docs)] = &produced.docs[..] else {
            panic!("one collection: {:?}", produced.docs)
        };
        assert_eq!(collection, "heartbeats");
        let (fixed, usual) = docs.split_at(4);
        let fixed: Vec<&str> = fixed.iter().map(|(_, h)| heartbeat_state(h, now)).collect();
        assert_eq!(fixed, ["ok", "failed", "late", "pending"], "at {now}");
        for (key, h) in usual {
            states
                .entry(key.clone())
                .or_default()
                .push(heartbeat_state(h, now));
            let signal = time(&h["last_signal_at"]);
            assert!(signal <= now, "{h} at {now}");
            let before = last_signal.insert(key.clone(), signal);
            assert!(
                before.is_none_or(|b| b <= signal),
                "{h} went back from {before:?}"
            );
        }
    }
    // Most of the time, the usual jobs are ok.
    let seen: Vec<&str> = states.values().flatten().copied().collect();
    let ok = seen.iter().filter(|s| **s == "ok").count();
    assert!(ok * 10 > seen.len() * 8, "{ok} of {}", seen.len());
    // Turned to `state` and back to ok later, for at least one usual job.
    let recovered = |state: &str| {
        states.values().any(|seen| {
            let turned = seen.windows(2).position(|w| w[0] == "ok" && w[1] == state);
            turned.is_some_and(|i| seen[i + 1..].contains(&"ok"))
        })
    };
    assert!(recovered("late"), "{states:?}");
    assert!(recovered("failed"), "{states:?}");
}

#[tokio::test]
async fn profiles_list_their_deployments() {
    let app = TestApp::shared();
    let token = monitors_token(app).await;
    let res = app.get("/profiles", &token).await;
    assert_eq!(res.status, StatusCode::OK);
    let items = res.items();
    assert!(items.len() >= 3);
    for p in items {
        assert_eq!(p["format"], "profile/1");
        assert!(p["item_count"].as_u64().unwrap_or(0) > 0);
        let deps = p["deployments"].as_array().cloned().unwrap_or_default();
        assert!(!deps.is_empty());
        assert!(
            deps.iter()
                .all(|d| d["profile_id"] == p["id"] && d["hostname"].is_string())
        );
    }
}

#[tokio::test]
async fn a_profile_is_the_full_profile_1_document_with_its_verification_trace() {
    let app = TestApp::shared();
    let token = monitors_token(app).await;
    let list = app.get("/profiles", &token).await;
    let id = list.items()[0]["id"].as_i64().unwrap_or(0);
    let res = app.get(&format!("/profiles/{id}"), &token).await;
    assert_eq!(res.status, StatusCode::OK);
    let p = &res.body["data"];
    assert_eq!(p["format"], "profile/1");
    assert_eq!(p["id"], id);
    let items = p["items"].as_array().cloned().unwrap_or_default();
    assert!(
        items
            .iter()
            .all(|i| i["key"].is_string() && i["type"].is_string() && i["expected"].is_object())
    );
    let trace = p["verification"]["trace"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(
        trace.len() > items.len(),
        "one step per item plus the document check"
    );
    assert!(
        trace
            .iter()
            .all(|s| s["check"].is_string() && s["result"].is_string())
    );
    assert!(p["deployments"].as_array().is_some_and(|d| !d.is_empty()));
    assert_eq!(
        app.get("/profiles/999999999", &token).await.status,
        StatusCode::NOT_FOUND
    );
    let globex = app.token("globex", &[Scope::ReadMonitors]).await;
    assert_eq!(
        app.get(&format!("/profiles/{id}"), &globex).await.status,
        StatusCode::NOT_FOUND
    );
    let res = app.get("/profiles/abc", &token).await;
    assert_eq!(res.status, StatusCode::BAD_REQUEST);
    assert_eq!(res.body["parameter"], "id");
}

#[tokio::test]
async fn deployment_comparison_gives_every_result_per_item() {
    let app = TestApp::shared();
    let token = monitors_token(app).await;
    let list = app.get("/profiles", &token).await;
    let mut results = HashSet::new();
    for p in list.items() {
        for d in p["deployments"].as_array().cloned().unwrap_or_default() {
            let id = d["id"].as_i64().unwrap_or(0);
            let res = app
                .get(&format!("/profiles/deployments/{id}/compare"), &token)
                .await;
            assert_eq!(res.status, StatusCode::OK, "{}", res.body);
            let c = &res.body["data"];
            assert_eq!(c["deployment_id"], id);
            assert_eq!(c["hostname"], d["hostname"]);
            let items = c["items"].as_array().cloned().unwrap_or_default();
            let total: u64 = [
                "conforme",
                "modifie",
                "absent",
                "non_deploye",
                "indetermine",
            ]
            .iter()
            .map(|k| c["summary"][k].as_u64().unwrap_or(0))
            .sum();
            assert_eq!(total as usize, items.len());
            for i in &items {
                let r = i["result"].as_str().unwrap_or("");
                results.insert(r.to_owned());
                if r == "modifie" {
                    assert!(i["field"].is_string() && !i["expected"].is_null(), "{i}");
                    assert_ne!(i["expected"], i["actual"]);
                }
                if r == "non_deploye" || r == "indetermine" {
                    assert!(i["detail"].is_string(), "{i}");
                }
            }
        }
    }
    let expected: HashSet<String> = [
        "conforme",
        "modifie",
        "absent",
        "non_deploye",
        "indetermine",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    assert_eq!(results, expected);
}

/// The states of a deployment, worst first: the order profiles show their deployments in.
const STATES: [&str; 5] = ["failed", "drifted", "unverified", "outdated", "compliant"];

fn rank(d: &Value) -> usize {
    let state = d["state"].as_str().unwrap_or("");
    STATES
        .iter()
        .position(|s| *s == state)
        .unwrap_or_else(|| panic!("unknown state: {d}"))
}

/// Asserts that `deployments`, shown first among a profile's, are in the profile's order
/// (problem states first, then by machine name) and are exactly the first ones its
/// `counts` (`deployment_counts`) let come first.
fn assert_first_of(deployments: &[Value], counts: &Value, what: &str) {
    let order: Vec<(usize, &str)> = deployments
        .iter()
        .map(|d| (rank(d), d["hostname"].as_str().unwrap_or("")))
        .collect();
    assert!(
        order.windows(2).all(|w| w[0] <= w[1]),
        "{what}: problem states first, then by machine name: {order:?}"
    );
    let mut before = 0;
    for state in STATES {
        let count = counts[state].as_u64().unwrap_or(0) as usize;
        let shown = deployments.iter().filter(|d| d["state"] == state).count();
        let room = deployments.len().saturating_sub(before);
        assert_eq!(shown, count.min(room), "{what}: {state} of {counts}");
        before += count;
    }
    let total: u64 = STATES
        .iter()
        .map(|s| counts[*s].as_u64().unwrap_or(0))
        .sum();
    assert_eq!(counts["total"].as_u64(), Some(total), "{what}: {counts}");
}

#[tokio::test]
async fn profiles_show_their_first_deployments_problems_first_and_count_them_all() {
    // 100 machines: the laptops' profile is deployed on 60 of them, more than its detail
    // shows; the servers' on 15 and the workstations' on 25, more than the list shows.
    let size = netops::SeedSize {
        machines: 100,
        days: 1,
        seed: 42,
    };
    let app = TestApp::sized(size, &[netops_shared::routes::Function::Operations]).await;
    let token = monitors_token(&app).await;
    let list = app.get("/profiles", &token).await;
    assert_eq!(list.status, StatusCode::OK, "{}", list.body);
    assert_eq!(list.body["meta"]["deployments_truncated"], true);
    let mut totals = Vec::new();
    for p in list.items() {
        let counts = &p["deployment_counts"];
        let total = counts["total"].as_u64().unwrap_or(0) as usize;
        let shown = p["deployments"].as_array().cloned().unwrap_or_default();
        assert_eq!(shown.len(), total.min(10), "{}", p["id"]);
        assert!(shown.iter().all(|d| d["profile_id"] == p["id"]));
        assert_first_of(&shown, counts, "list");
        totals.push((p["id"].as_i64().unwrap_or(0), total, shown, counts.clone()));
    }
    let problems = |c: &Value| -> u64 {
        STATES[..4]
            .iter()
            .map(|s| c[*s].as_u64().unwrap_or(0))
            .sum()
    };
    assert!(
        totals.iter().any(|(_, _, _, c)| problems(c) > 0),
        "the demo deploys with problems"
    );
    let (big, total, first, counts) = totals
        .iter()
        .find(|(_, total, _, _)| *total > 50)
        .expect("a profile deployed on more than 50 machines");
    assert_eq!(*total, 60);
    let res = app.get(&format!("/profiles/{big}"), &token).await;
    assert_eq!(res.status, StatusCode::OK, "{}", res.body);
    assert_eq!(res.body["meta"]["deployments_truncated"], true);
    assert_eq!(&res.body["data"]["deployment_counts"], counts);
    let shown = res.body["data"]["deployments"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(shown.len(), 50);
    assert_first_of(&shown, counts, "detail");
    assert_eq!(
        &shown[..10],
        &first[..],
        "the list shows the detail's first ten"
    );

    // A profile whose detail shows every deployment: no cut, and each state is what its
    // comparison with the profile says.
    let (small, total, _, counts) = totals
        .iter()
        .find(|(_, total, _, _)| (11..=50).contains(total))
        .expect("a profile deployed on 11 to 50 machines");
    let res = app.get(&format!("/profiles/{small}"), &token).await;
    assert!(res.body["meta"].get("deployments_truncated").is_none());
    let shown = res.body["data"]["deployments"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(shown.len(), *total);
    assert_first_of(&shown, counts, "whole detail");
    let version = &res.body["data"]["version"];
    for d in &shown {
        let c = app
            .get(
                &format!("/profiles/deployments/{}/compare", d["id"]),
                &token,
            )
            .await;
        let n = |k: &str| c.body["data"]["summary"][k].as_u64().unwrap_or(0);
        let expected = if d["status"] == "failed" {
            "failed"
        } else if n("modifie") + n("absent") > 0 {
            "drifted"
        } else if n("indetermine") > 0 || d["observed_at"].is_null() {
            "unverified"
        } else if &d["profile_version"] != version {
            "outdated"
        } else {
            "compliant"
        };
        assert_eq!(d["state"], expected, "{d} / {}", c.body["data"]["summary"]);
    }
}

#[tokio::test]
async fn unknown_deployment_gives_404_and_bad_id_400() {
    let app = TestApp::shared();
    let token = monitors_token(app).await;
    let res = app
        .get("/profiles/deployments/999999999/compare", &token)
        .await;
    assert_eq!(res.status, StatusCode::NOT_FOUND);
    assert_eq!(res.error(), "not_found");
    let res = app.get("/profiles/deployments/x/compare", &token).await;
    assert_eq!(res.status, StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn operations_routes_need_read_monitors() {
    let app = TestApp::shared();
    let token = app.token("acme", &[Scope::ReadAlerts]).await;
    for path in [
        "/maintenance",
        "/heartbeats",
        "/profiles",
        "/profiles/1",
        "/profiles/deployments/1/compare",
    ] {
        let res = app.get(path, &token).await;
        assert_eq!(res.status, StatusCode::FORBIDDEN, "{path}");
        assert_eq!(res.body["scope"], "read:monitors");
    }
}

#[tokio::test]
async fn operations_data_stays_in_its_tenant() {
    let app = TestApp::shared();
    let acme = monitors_token(app).await;
    let globex = app.token("globex", &[Scope::ReadMonitors]).await;
    for path in ["/maintenance", "/heartbeats", "/profiles"] {
        let a: HashSet<i64> = app
            .get(path, &acme)
            .await
            .items()
            .iter()
            .filter_map(|x| x["id"].as_i64())
            .collect();
        let g: HashSet<i64> = app
            .get(path, &globex)
            .await
            .items()
            .iter()
            .filter_map(|x| x["id"].as_i64())
            .collect();
        assert!(
            !a.is_empty() && !g.is_empty() && a.is_disjoint(&g),
            "{path}"
        );
    }
}
