//! Firewall: devices, parsed events, traffic, threats, report (docs/modules.md#firewall).

use std::collections::{BTreeMap, HashMap, HashSet};

use chrono::{DateTime, Duration, DurationRound, Utc};
use http::StatusCode;
use netops_shared::scope::Scope;
use netops_shared::time;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{Value, json};

use crate::helpers::{TestApp, edge_windows, stamp};

async fn token(app: &TestApp) -> String {
    app.token("acme", &[Scope::ReadFirewall]).await
}

fn strs<'a>(items: &'a [Value], field: &str) -> HashSet<&'a str> {
    items.iter().filter_map(|i| i[field].as_str()).collect()
}

#[tokio::test]
async fn devices_are_the_firewalls_and_gateways_of_the_network_with_their_collection() {
    let app = TestApp::shared();
    let token = token(app).await;
    let res = app.get("/firewall/devices", &token).await;
    assert_eq!(res.status, StatusCode::OK);
    let devices = res.items();
    assert_eq!(devices.len(), 8, "one firewall and one gateway per site");
    assert_eq!(
        strs(devices, "type"),
        HashSet::from(["firewall", "gateway"])
    );
    let formats: HashSet<&str> = devices
        .iter()
        .filter_map(|d| d["syslog"]["format"].as_str())
        .collect();
    assert_eq!(
        formats,
        HashSet::from(["fortigate", "paloalto", "cef", "leef", "kv"])
    );
    let statuses: HashSet<&str> = devices
        .iter()
        .filter_map(|d| d["syslog"]["status"].as_str())
        .collect();
    assert!(statuses.contains("active") && statuses.contains("stale"));
    let network = app.token("acme", &[Scope::ReadNetwork]).await;
    for d in devices {
        let id = d["id"].as_i64().expect("id");
        let same = app.get(&format!("/network/devices/{id}"), &network).await;
        assert_eq!(
            same.body["data"]["name"], d["name"],
            "same device in /network"
        );
        assert!(d["relay_agent"].as_str().is_some_and(|h| !h.is_empty()));
    }
}

#[tokio::test]
async fn events_cover_every_category_and_action_in_the_last_day() {
    let app = TestApp::shared();
    let token = token(app).await;
    let res = app.get("/firewall/events?limit=1000", &token).await;
    assert_eq!(res.status, StatusCode::OK);
    assert_eq!(res.body["meta"]["limit"], 1000);
    assert!(res.body["meta"]["window"]["from"].is_string());
    let items = res.items();
    let cats = strs(items, "category");
    for c in [
        "auth", "vpn", "tunnel", "ids", "deny", "allow", "admin", "system", "other",
    ] {
        assert!(cats.contains(c), "category {c} missing");
    }
    let acts = strs(items, "action");
    for a in [
        "success", "failure", "blocked", "allowed", "detected", "changed", "up", "down", "info",
    ] {
        assert!(acts.contains(a), "action {a} missing");
    }
    assert_eq!(
        strs(items, "format"),
        HashSet::from(["fortigate", "paloalto", "cef", "leef", "kv"])
    );
    let times: Vec<&str> = items.iter().filter_map(|e| e["at"].as_str()).collect();
    assert!(times.windows(2).all(|w| w[0] >= w[1]), "newest first");
    for f in [
        "id",
        "at",
        "device_id",
        "device",
        "category",
        "action",
        "message",
        "ad_events",
    ] {
        assert!(!items[0][f].is_null(), "{f}");
    }
    assert!(
        items.iter().all(|e| e.get("ips").is_none()),
        "storage fields stay inside"
    );
    let default = app.get("/firewall/events", &token).await;
    assert_eq!(default.body["meta"]["limit"], 100);
    assert_eq!(default.items().len(), 100);
}

#[tokio::test]
async fn ad_events_are_directory_events_of_the_same_account_within_15_seconds() {
    let app = TestApp::shared();
    let token = token(app).await;
    let res = app
        .get("/firewall/events?category=vpn&period=7d&limit=1000", &token)
        .await;
    let with: Vec<&Value> = res
        .items()
        .iter()
        .filter(|e| !e["ad_events"].as_array().is_none_or(Vec::is_empty))
        .collect();
    assert!(
        !with.is_empty(),
        "some VPN logins are matched to directory events"
    );
    for e in with {
        for ad in e["ad_events"].as_array().expect("ad_events") {
            assert_eq!(
                ad["account"].as_str().map(str::to_lowercase),
                e["account"].as_str().map(str::to_lowercase)
            );
            assert!(
                ad["offset_seconds"].as_i64().is_some_and(|o| o.abs() <= 15),
                "{ad}"
            );
            assert!(
                ad["event_id"]
                    .as_u64()
                    .is_some_and(|id| (4600..4800).contains(&id))
            );
            let at =
                chrono::DateTime::parse_from_rfc3339(ad["at"].as_str().expect("at")).expect("date");
            let ev =
                chrono::DateTime::parse_from_rfc3339(e["at"].as_str().expect("at")).expect("date");
            assert!((at - ev).num_seconds().abs() <= 15);
        }
    }
}

#[tokio::test]
async fn event_filters_each_keep_only_what_they_name() {
    let app = TestApp::shared();
    let token = token(app).await;
    let deny = app
        .get("/firewall/events?category=deny&period=7d&limit=200", &token)
        .await;
    assert!(!deny.items().is_empty() && deny.items().iter().all(|e| e["category"] == "deny"));
    let failure = app
        .get("/firewall/events?action=failure&period=7d", &token)
        .await;
    assert!(
        !failure.items().is_empty() && failure.items().iter().all(|e| e["action"] == "failure")
    );
    let devices = app.get("/firewall/devices", &token).await;
    let id = devices.items()[1]["id"].as_i64().expect("id");
    let one = app
        .get(
            &format!("/firewall/events?device_id={id}&period=7d"),
            &token,
        )
        .await;
    assert!(!one.items().is_empty() && one.items().iter().all(|e| e["device_id"] == id));
    let user = app
        .get("/firewall/events?user=ADMINISTR&period=7d", &token)
        .await;
    assert!(!user.items().is_empty());
    assert!(user.items().iter().all(|e| {
        e["account"]
            .as_str()
            .is_some_and(|a| a.contains("administr"))
    }));
    let ip = deny.items()[0]["src_ip"].as_str().expect("src").to_owned();
    let by_ip = app
        .get(
            &format!("/firewall/events?ip={ip}&period=7d&limit=1000"),
            &token,
        )
        .await;
    assert!(!by_ip.items().is_empty());
    assert!(
        by_ip
            .items()
            .iter()
            .all(|e| e["src_ip"] == ip.as_str() || e["dst_ip"] == ip.as_str())
    );
    let prefix = &ip[..ip.len() - 1];
    let exact = app
        .get(&format!("/firewall/events?ip={prefix}&period=7d"), &token)
        .await;
    assert!(
        exact
            .items()
            .iter()
            .all(|e| e["src_ip"] == prefix || e["dst_ip"] == prefix),
        "ip is exact, not a prefix"
    );
    let both = app
        .get(
            "/firewall/events?category=vpn&action=success&period=7d",
            &token,
        )
        .await;
    assert!(
        both.items()
            .iter()
            .all(|e| e["category"] == "vpn" && e["action"] == "success")
    );
}

#[tokio::test]
async fn events_window_is_capped_at_7_days() {
    let app = TestApp::shared();
    let token = token(app).await;
    let res = app.get("/firewall/events?period=30d", &token).await;
    assert_eq!(res.status, StatusCode::OK);
    assert_eq!(res.body["meta"]["window_capped"], true);
    let w = &res.body["meta"]["window"];
    let from = chrono::DateTime::parse_from_rfc3339(w["from"].as_str().expect("from")).expect("d");
    let to = chrono::DateTime::parse_from_rfc3339(w["to"].as_str().expect("to")).expect("d");
    assert_eq!((to - from).num_days(), 7);
    let week = app.get("/firewall/events?period=7d", &token).await;
    assert!(week.body["meta"].get("window_capped").is_none());
}

#[tokio::test]
async fn bad_firewall_parameters_give_400_naming_them_and_unknown_devices_404() {
    let app = TestApp::shared();
    let token = token(app).await;
    for (path, name) in [
        ("/firewall/events?category=web", "category"),
        ("/firewall/events?action=exploded", "action"),
        ("/firewall/events?device_id=abc", "device_id"),
        ("/firewall/events?ip=10.0.0", "ip"),
        ("/firewall/events?limit=-3", "limit"),
        ("/firewall/events?period=1w", "period"),
        ("/firewall/traffic?device_id=x", "device_id"),
        ("/firewall/traffic?from=yesterday", "from"),
        ("/firewall/threats?status=closed", "status"),
        ("/firewall/report?period=3d", "period"),
        ("/firewall/report?period=1y", "period"),
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
    for path in [
        "/firewall/events?device_id=999999999",
        "/firewall/traffic?device_id=999999999",
    ] {
        assert_eq!(
            app.get(path, &token).await.status,
            StatusCode::NOT_FOUND,
            "{path}"
        );
    }
}

#[tokio::test]
async fn traffic_gives_top_senders_and_destinations_by_full_hour() {
    let app = TestApp::shared();
    let token = token(app).await;
    let res = app.get("/firewall/traffic", &token).await;
    assert_eq!(res.status, StatusCode::OK);
    assert_eq!(res.body["meta"]["limit"], 20);
    let d = &res.body["data"];
    let senders = d["top_senders"].as_array().expect("senders");
    assert_eq!(senders.len(), 20);
    let bytes: Vec<f64> = senders.iter().filter_map(|s| s["bytes"].as_f64()).collect();
    assert!(bytes.windows(2).all(|w| w[0] >= w[1]), "by volume");
    assert!(
        senders
            .iter()
            .all(|s| s["ip"].as_str().is_some_and(|ip| ip.starts_with("10.")))
    );
    assert!(!d["top_destinations"].as_array().expect("dests").is_empty());
    let protocols = d["by_protocol"].as_object().expect("by_protocol");
    assert!(protocols.contains_key("IPFIX") && protocols.contains_key("NetFlow v9"));
    let hours = d["hours"].as_array().expect("hours");
    assert!((24..=25).contains(&hours.len()), "{}", hours.len());
    assert!(hours.iter().all(|h| {
        h["hour"]
            .as_str()
            .is_some_and(|t| t.ends_with(":00:00.000Z"))
    }));
    let total: f64 = hours.iter().filter_map(|h| h["bytes"].as_f64()).sum();
    assert!((total - d["totals"]["bytes"].as_f64().expect("total")).abs() < 1.0);

    let small = app.get("/firewall/traffic?limit=3", &token).await;
    assert_eq!(
        small.body["data"]["top_senders"].as_array().map(Vec::len),
        Some(3)
    );
    assert_eq!(
        app.get("/firewall/traffic?limit=900", &token).await.body["meta"]["limit"],
        200
    );
    let capped = app
        .get("/firewall/traffic?from=2026-01-01T00:00:00Z", &token)
        .await;
    assert_eq!(capped.body["meta"]["window_capped"], true);
    let devices = app.get("/firewall/devices", &token).await;
    let gw = devices
        .items()
        .iter()
        .find(|d| d["type"] == "gateway")
        .expect("gateway");
    let one = app
        .get(&format!("/firewall/traffic?device_id={}", gw["id"]), &token)
        .await;
    let protos = one.body["data"]["by_protocol"]
        .as_object()
        .expect("by_protocol");
    assert_eq!(protos.keys().collect::<Vec<_>>(), vec!["NetFlow v9"]);
    assert!(one.body["data"]["totals"]["bytes"].as_f64() < d["totals"]["bytes"].as_f64());
}

#[tokio::test]
async fn threats_are_one_row_per_internal_device_external_address_and_day() {
    let app = TestApp::shared();
    let token = token(app).await;
    let res = app.get("/firewall/threats", &token).await;
    assert_eq!(res.status, StatusCode::OK);
    assert_eq!(res.body["meta"]["limit"], 100);
    let from = chrono::DateTime::parse_from_rfc3339(
        res.body["meta"]["window"]["from"].as_str().expect("from"),
    )
    .expect("d");
    let to = chrono::DateTime::parse_from_rfc3339(
        res.body["meta"]["window"]["to"].as_str().expect("to"),
    )
    .expect("d");
    assert_eq!((to - from).num_days(), 30, "30 days by default");
    let rows = res.items();
    assert!(rows.len() >= 3);
    let mut keys = HashSet::new();
    for t in rows {
        assert!(
            keys.insert((
                t["internal"]["ip"].clone().to_string(),
                t["external_ip"].to_string(),
                t["day"].to_string()
            )),
            "duplicate row {t}"
        );
        for f in [
            "id",
            "day",
            "internal",
            "external_ip",
            "sources",
            "indicator",
            "status",
            "hits",
            "first_seen_at",
            "last_seen_at",
        ] {
            assert!(!t[f].is_null(), "{f}");
        }
        assert!(t["sources"].as_array().is_some_and(|s| {
            s.iter()
                .all(|x| ["gateway", "firewall", "agent"].contains(&x.as_str().unwrap_or("")))
        }));
    }
    let ids: HashSet<&str> = rows
        .iter()
        .filter_map(|t| t["internal"]["identification"].as_str())
        .collect();
    assert!(ids.contains("agent") && ids.len() >= 2, "{ids:?}");
    assert!(rows.iter().any(|t| t["siem_incident"]["id"].is_string()));
    let days: Vec<&str> = rows.iter().filter_map(|t| t["day"].as_str()).collect();
    assert!(days.windows(2).all(|w| w[0] >= w[1]), "recent days first");
    for s in ["open", "acknowledged"] {
        let some = app
            .get(&format!("/firewall/threats?status={s}"), &token)
            .await;
        assert!(!some.items().is_empty(), "{s}");
        assert!(some.items().iter().all(|t| t["status"] == s));
    }
    let today = app.get("/firewall/threats?period=24h", &token).await;
    assert!(!today.items().is_empty(), "one campaign is going on");
    assert!(today.items().len() < rows.len());
    assert_eq!(
        app.get("/firewall/threats?limit=2", &token)
            .await
            .items()
            .len(),
        2
    );
    assert_eq!(
        app.get("/firewall/threats?limit=9999", &token).await.body["meta"]["limit"],
        500
    );
    // The events behind a threat row are there.
    let t = &today.items()[0];
    let ev = app
        .get(
            &format!(
                "/firewall/events?ip={}&category=ids&period=7d",
                t["external_ip"].as_str().expect("ip")
            ),
            &token,
        )
        .await;
    assert!(!ev.items().is_empty());
}

#[tokio::test]
async fn report_defaults_to_7_days_and_holds_every_section() {
    let app = TestApp::shared();
    let token = token(app).await;
    let res = app.get("/firewall/report", &token).await;
    assert_eq!(res.status, StatusCode::OK);
    let r = &res.body["data"];
    assert_eq!(r["period"], "7d");
    for section in [
        "summary",
        "targeted_accounts",
        "attacking_addresses",
        "successful_connections",
        "threats",
        "blocked_traffic",
        "tunnels",
        "collection",
        "incidents",
    ] {
        assert!(!r[section].is_null(), "{section}");
        if section != "summary" {
            assert!(
                !r[section].as_array().expect("array").is_empty(),
                "{section} is empty"
            );
        }
    }
    let s = &r["summary"];
    assert!(s["events"].as_f64().is_some_and(|n| n > 100.0));
    let by_cat: f64 = s["by_category"]
        .as_object()
        .expect("by_category")
        .values()
        .filter_map(Value::as_f64)
        .sum();
    assert_eq!(by_cat, s["events"].as_f64().expect("events"));
    assert!(s["auth_failures"].as_f64().is_some_and(|n| n > 0.0));
    assert_eq!(r["collection"].as_array().map(Vec::len), Some(8));
    assert!(
        r["targeted_accounts"][0]["failures"]
            .as_f64()
            .is_some_and(|n| n > 0.0)
    );
    assert!(
        r["successful_connections"]
            .as_array()
            .expect("c")
            .iter()
            .all(|c| !c["src_ip"].as_str().unwrap_or("10.").starts_with("10."))
    );
    let tunnel_status: HashSet<&str> = r["tunnels"]
        .as_array()
        .expect("t")
        .iter()
        .filter_map(|t| t["status"].as_str())
        .collect();
    assert!(tunnel_status.contains("down"));

    let mut previous = 0.0;
    for p in ["24h", "7d", "30d", "90d"] {
        let res = app
            .get(&format!("/firewall/report?period={p}"), &token)
            .await;
        assert_eq!(res.status, StatusCode::OK, "{p}");
        assert_eq!(res.body["data"]["period"], p);
        let n = res.body["data"]["summary"]["events"]
            .as_f64()
            .expect("events");
        assert!(n >= previous, "{p}: longer periods count more");
        previous = n;
    }
}

#[tokio::test]
async fn globex_firewall_data_is_its_own() {
    let app = TestApp::shared();
    let token = app.token("globex", &[Scope::ReadFirewall]).await;
    let devices = app.get("/firewall/devices", &token).await;
    assert_eq!(devices.items().len(), 6);
    assert!(
        devices
            .items()
            .iter()
            .all(|d| d["name"].as_str().is_some_and(|n| n.starts_with("gx-")))
    );
    let events = app.get("/firewall/events?limit=1000", &token).await;
    assert!(
        events
            .items()
            .iter()
            .all(|e| e["device"].as_str().is_some_and(|n| n.starts_with("gx-")))
    );
    let acme = app.get("/firewall/devices", &self::token(app).await).await;
    let acme_id = acme.items()[0]["id"].as_i64().expect("id");
    assert_eq!(
        app.get(&format!("/firewall/events?device_id={acme_id}"), &token)
            .await
            .status,
        StatusCode::NOT_FOUND
    );
}

#[tokio::test]
async fn rare_category_and_action_filters_combine_with_the_device() {
    let app = TestApp::shared();
    let token = token(app).await;
    let devices = app.get("/firewall/devices", &token).await;
    let fw = devices
        .items()
        .iter()
        .find(|d| d["type"] == "firewall")
        .expect("firewall");
    let id = fw["id"].as_i64().expect("id");
    for q in [
        "category=vpn",
        "category=auth&action=failure",
        "action=up",
        "action=changed",
        "category=ids&action=blocked",
    ] {
        let all = app
            .get(
                &format!("/firewall/events?{q}&period=7d&limit=1000"),
                &token,
            )
            .await;
        let mine = app
            .get(
                &format!("/firewall/events?{q}&device_id={id}&period=7d&limit=1000"),
                &token,
            )
            .await;
        assert_eq!(mine.status, StatusCode::OK, "{q}");
        assert!(!mine.items().is_empty(), "{q}");
        assert!(mine.items().iter().all(|e| e["device_id"] == id), "{q}");
        let expected = all.items().iter().filter(|e| e["device_id"] == id).count();
        assert_eq!(
            mine.items().len(),
            expected,
            "{q}: the device filter keeps exactly its events"
        );
    }
}

/// One flow export written through the aggregation the seed and a collector use.
struct Flow {
    at: DateTime<Utc>,
    device: i64,
    protocol: &'static str,
    src: (&'static str, Option<&'static str>),
    dst: &'static str,
    bytes: f64,
    packets: f64,
    flows: f64,
}

/// The traffic of `exports` over the hours `[a, b)` (of `device` only when given), with
/// `limit` senders and destinations, added up straight from them.
fn traffic_of(exports: &[Flow], a: i64, b: i64, device: Option<i64>, limit: usize) -> Value {
    let hour_ms = 3_600_000;
    let mut totals = (0.0, 0.0, 0.0);
    let mut by_protocol: BTreeMap<&str, f64> = BTreeMap::new();
    let mut senders: HashMap<&str, (Option<&str>, f64, f64, f64)> = HashMap::new();
    let mut dests: HashMap<&str, (Option<&str>, f64, f64, f64)> = HashMap::new();
    // An address's machines and their bytes: the address is named after the top one.
    let mut hosts: HashMap<&str, BTreeMap<&str, f64>> = HashMap::new();
    let mut hours: BTreeMap<i64, (f64, f64)> = (a..b)
        .step_by(hour_ms as usize)
        .map(|h| (h, (0.0, 0.0)))
        .collect();
    for e in exports {
        let h = e.at.timestamp_millis().div_euclid(hour_ms) * hour_ms;
        if h < a || h >= b || device.is_some_and(|d| d != e.device) {
            continue;
        }
        totals.0 += e.bytes;
        totals.1 += e.packets;
        totals.2 += e.flows;
        *by_protocol.entry(e.protocol).or_default() += e.bytes;
        if let (ip, Some(host)) = e.src {
            *hosts.entry(ip).or_default().entry(host).or_default() += e.bytes;
        }
        for (map, ip) in [(&mut senders, e.src.0), (&mut dests, e.dst)] {
            let s = map.entry(ip).or_insert((None, 0.0, 0.0, 0.0));
            s.1 += e.bytes;
            s.2 += e.packets;
            s.3 += e.flows;
        }
        let x = hours.entry(h).or_default();
        x.0 += e.bytes;
        x.1 += e.flows;
    }
    for (ip, hosts) in hosts {
        let mut hosts: Vec<_> = hosts.into_iter().collect();
        hosts.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(b.0)));
        if let Some(s) = senders.get_mut(ip) {
            s.0 = Some(hosts[0].0);
        }
    }
    let top = |map: HashMap<&str, (Option<&str>, f64, f64, f64)>| {
        let mut v: Vec<_> = map.into_iter().collect();
        v.sort_by(|x, y| y.1.1.total_cmp(&x.1.1).then_with(|| x.0.cmp(y.0)));
        v.into_iter()
            .take(limit)
            .map(|(ip, (host, bytes, packets, flows))| {
                json!({"ip": ip, "host": host, "bytes": bytes, "packets": packets, "flows": flows})
            })
            .collect::<Vec<_>>()
    };
    json!({
        "totals": {"bytes": totals.0, "packets": totals.1, "flows": totals.2},
        "by_protocol": by_protocol,
        "top_senders": top(senders),
        "top_destinations": top(dests),
        "hours": hours
            .into_iter()
            .map(|(h, (bytes, flows))| {
                json!({"hour": time::format(DateTime::<Utc>::from_timestamp_millis(h).expect("hour")),
                    "bytes": bytes, "flows": flows})
            })
            .collect::<Vec<_>>(),
    })
}

/// Traffic reads day aggregates of the tenant and of each device, none per machine: over any
/// window, it must say exactly what the exports of the hours overlapping the window say.
#[tokio::test]
async fn traffic_over_any_window_adds_up_exactly_the_exports_of_its_hours() {
    // Two devices of the demo, an IPFIX firewall and a NetFlow gateway.
    let shared = TestApp::shared();
    let listed = shared.get("/firewall/devices", &token(shared).await).await;
    let app = TestApp::with_modules(&[]).await;
    let token = token(&app).await;
    let pick = |kind: &str| {
        listed
            .items()
            .iter()
            .find(|d| d["type"] == kind)
            .cloned()
            .expect("device")
    };
    let (fw, gw) = (pick("firewall"), pick("gateway"));
    let id = |d: &Value| d["id"].as_i64().expect("id");
    app.stores
        .docs
        .put(
            "acme",
            netops_firewall::model::DEVICES,
            [&fw, &gw]
                .into_iter()
                .map(|d| (netops_firewall::model::key(id(d)), d.clone()))
                .collect(),
        )
        .await
        .expect("devices");
    let devices = [(id(&fw), "IPFIX"), (id(&gw), "NetFlow v9")];
    let senders = [
        ("10.1.0.11", Some("PAR-LT-0011")),
        ("10.1.0.12", Some("PAR-LT-0012")),
        ("10.1.0.13", Some("PAR-LT-0013")),
        ("10.1.0.14", Some("PAR-LT-0014")),
        ("10.1.50.21", None),
        ("10.2.0.15", Some("LYO-LT-0015")),
        // An address leased again to another machine.
        ("10.1.0.12", Some("PAR-LT-0112")),
    ];
    let dests = ["52.1.1.1", "13.2.2.2", "142.3.3.3", "185.4.4.4"];
    let now = Utc::now();
    let start = now.duration_trunc(Duration::days(1)).expect("day") - Duration::days(12);
    let span = (now - start).num_milliseconds();
    let mut rng = StdRng::seed_from_u64(11);
    let exports: Vec<Flow> = (0..500)
        .map(|i| {
            let (device, protocol) = devices[rng.random_range(0..devices.len())];
            Flow {
                at: start + Duration::milliseconds(rng.random_range(0..span)),
                device,
                protocol,
                src: senders[rng.random_range(0..=i % senders.len())],
                dst: dests[rng.random_range(0..dests.len())],
                bytes: rng.random_range(1_000..900_000_000) as f64,
                packets: rng.random_range(1..1_000_000) as f64,
                flows: rng.random_range(1..400) as f64,
            }
        })
        .collect();
    let mut aggregates = netops_firewall::traffic::Exports::default();
    for e in &exports {
        aggregates.add(&netops_firewall::traffic::Export {
            at: e.at,
            device_id: e.device,
            protocol: e.protocol,
            src_ip: e.src.0,
            src_host: e.src.1,
            dst_ip: e.dst,
            bytes: e.bytes,
            packets: e.packets,
            flows: e.flows,
        });
    }
    app.load_acme(aggregates.series()).await;
    for (from, to) in edge_windows(now) {
        for (device, limit) in [(None, 20), (None, 3), (Some(devices[1].0), 20)] {
            let mut path = format!(
                "/firewall/traffic?from={}&to={}&limit={limit}",
                stamp(from),
                stamp(to)
            );
            if let Some(id) = device {
                path.push_str(&format!("&device_id={id}"));
            }
            let res = app.get(&path, &token).await;
            assert_eq!(res.status, StatusCode::OK, "{path}: {}", res.body);
            let (a, b) = res.window_hours();
            let want = traffic_of(&exports, a, b, device, limit);
            assert!(want["totals"]["bytes"].as_f64() > Some(0.0), "{path}");
            assert_eq!(res.body["data"], want, "{path}");
        }
    }
}
