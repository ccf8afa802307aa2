//! Geolocation as a user meets it (docs/geolocation.md): the real `netops serve` stores flows
//! collected over HTTP with the country and operator of the pinned tables, which
//! `/flows/destinations` and `/flows/explore` answer; `netops geo lookup` and `info` read a
//! compiled file; a file that cannot be read stops the server before it serves.

use std::path::Path;
use std::process::Command;

use chrono::{Duration, DurationRound, Utc};
use serde_json::{Value, json};

use crate::helpers::stamp;
use crate::serve::get_json;
use crate::serve::served::{self, Serve, create_token, stdout_of};

/// Posts NDJSON lines of `kind` with a new collect credential; every line is accepted.
async fn collect(served: &served::Served, kind: &str, lines: &[Value]) {
    let token = create_token(&served.db, &["--name", kind, "--scopes", "collect:flows"]);
    let body: Vec<String> = lines.iter().map(Value::to_string).collect();
    let res = reqwest::Client::new()
        .post(format!("{}/collect/{kind}", served.base))
        .bearer_auth(token)
        .header("content-type", "application/x-ndjson")
        .body(body.join("\n"))
        .send()
        .await
        .expect("collect");
    let status = res.status();
    let answer: Value = res.json().await.expect("json");
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["data"]["refused"], 0, "{answer}");
}

/// An agent flow of the first machine to each of `remotes`, a minute ago.
async fn agent_flows(served: &served::Served, remotes: &[&str]) {
    let (status, machines) = get_json(served, "/machines?limit=1").await;
    assert_eq!(status, 200, "{machines}");
    let host = machines["data"][0]["hostname"].clone();
    // A minute ago, but within the current hour: a one-hour window reads the hourly
    // aggregates of the hours that start in it, so a flow of the previous hour would fall out
    // of it when the test runs in the first minute of an hour.
    let now = Utc::now();
    let hour = now.duration_trunc(Duration::hours(1)).expect("an hour");
    let at = (now - Duration::seconds(60)).max(hour);
    let lines: Vec<Value> = remotes
        .iter()
        .map(|ip| {
            json!({"start": stamp(at), "machine": host,
                "process": "geo-test.exe", "local_port": 50000, "remote_ip": ip,
                "remote_port": 443, "protocol": "TCP", "direction": "outbound", "bytes": 4096})
        })
        .collect();
    collect(served, "flow", &lines).await;
}

/// Country and operator of `ip` in `/flows/destinations`.
async fn destination(served: &served::Served, ip: &str) -> (Value, Value) {
    let (status, body) = get_json(served, "/flows/destinations?limit=500&period=1h").await;
    assert_eq!(status, 200, "{body}");
    let d = body["data"]
        .as_array()
        .expect("items")
        .iter()
        .find(|d| d["remote_ip"] == ip)
        .unwrap_or_else(|| panic!("{ip} not among the destinations: {body}"));
    (d["country"].clone(), d["operator"].clone())
}

/// The (country, operator) pairs `/flows/explore` counts for the remote address `ip`.
async fn explored(served: &served::Served, ip: &str) -> Vec<(Value, Value)> {
    let (status, body) = get_json(
        served,
        &format!("/flows/explore?dims=pays,operateur&period=1h&filter=externe%20%3D%20{ip}"),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let attribution = body["meta"]["attribution"]["text"].as_str().unwrap_or("");
    assert!(
        attribution.contains("DB-IP") && attribution.contains("RouteViews"),
        "{attribution}"
    );
    body["data"]["top"]
        .as_array()
        .expect("top")
        .iter()
        .map(|t| {
            (
                t["values"]["pays"].clone(),
                t["values"]["operateur"].clone(),
            )
        })
        .collect()
}

#[tokio::test]
async fn a_flow_collected_by_serve_shows_the_country_and_operator_of_the_sample() {
    // No file named: the checked-in sample, an excerpt of the same pinned tables (its
    // answers are the whole tables' answers for these addresses).
    let served = Serve::seeded().start();
    agent_flows(
        &served,
        &["1.1.1.2", "2606:4700:4700::1001", "198.51.100.77"],
    )
    .await;
    assert_eq!(
        destination(&served, "1.1.1.2").await,
        (json!("AU"), json!("Cloudflare, Inc."))
    );
    assert_eq!(
        destination(&served, "2606:4700:4700::1001").await,
        (json!("CA"), json!("Cloudflare, Inc."))
    );
    assert_eq!(
        destination(&served, "198.51.100.77").await,
        (json!("inconnu"), json!("inconnu")),
        "a documentation address is in no table"
    );
    assert_eq!(
        explored(&served, "1.1.1.2").await,
        vec![(json!("AU"), json!("Cloudflare, Inc."))]
    );
}

#[test]
fn a_geolocation_file_that_cannot_be_read_stops_serve_naming_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let bad = dir.path().join("damaged.bin");
    std::fs::write(&bad, b"NOPGEO\x00\x01 not a table").expect("write");
    for file in [bad, dir.path().join("missing.bin")] {
        let out = Command::new(env!("CARGO_BIN_EXE_netops"))
            .args(["serve", "--addr", "127.0.0.1:0", "--db"])
            .arg(dir.path().join("netops.db"))
            .env("NETOPS_GEO_FILE", &file)
            .output()
            .expect("run netops serve");
        assert_eq!(out.status.code(), Some(1), "{file:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(&*file.to_string_lossy()), "{stderr}");
    }
    let out = Command::new(env!("CARGO_BIN_EXE_netops"))
        .args(["geo", "lookup", "1.1.1.1", "not-an-address"])
        .output()
        .expect("run netops geo lookup");
    assert_eq!(out.status.code(), Some(2), "a usage error");
    assert!(String::from_utf8_lossy(&out.stderr).contains("not-an-address"));
}

/// The whole pinned tables, compiled by `netops geo refresh` (the test command does it, and
/// names the file in `NETOPS_TEST_GEO_FILE`); without it the test says so and passes, unless
/// `NETOPS_REQUIRE_GEO_DATA=1` (the test command sets it) makes the absence a failure.
fn real_tables() -> Option<std::path::PathBuf> {
    match std::env::var_os("NETOPS_TEST_GEO_FILE") {
        Some(file) => Some(file.into()),
        None if std::env::var("NETOPS_REQUIRE_GEO_DATA").as_deref() == Ok("1") => {
            panic!("NETOPS_REQUIRE_GEO_DATA=1 without NETOPS_TEST_GEO_FILE")
        }
        None => {
            eprintln!("skipped: no NETOPS_TEST_GEO_FILE (`netops geo refresh --out FILE`)");
            None
        }
    }
}

fn lookup(file: &Path, ips: &[&str]) -> Vec<Value> {
    let out = Command::new(env!("CARGO_BIN_EXE_netops"))
        .args(["geo", "lookup", "--geo"])
        .arg(file)
        .args(ips)
        .output()
        .expect("run netops geo lookup");
    stdout_of(out)
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON object a line"))
        .collect()
}

#[tokio::test]
async fn the_refreshed_tables_place_addresses_the_sample_does_not_hold() {
    let Some(file) = real_tables() else { return };
    // Addresses of the pinned tables outside the sample: French, with a quoted name.
    let gitoyen = json!("Association \"Gitoyen\"");
    let found = lookup(&file, &["80.67.169.12", "2001:910:800::12", "9.9.9.9"]);
    assert_eq!(found[0]["country"], "FR");
    assert_eq!(found[0]["operator"], gitoyen);
    assert_eq!(found[1]["country"], "FR");
    assert_eq!(found[1]["operator"], gitoyen);
    assert_eq!(found[2]["operator"], "Quad9");
    let info = Command::new(env!("CARGO_BIN_EXE_netops"))
        .args(["geo", "info", "--geo"])
        .arg(&file)
        .output()
        .expect("run netops geo info");
    let info = stdout_of(info);
    for needle in [
        "@ip-location-db/dbip-country 2.3.2026060120",
        "@ip-location-db/asn 2.3.2026061719",
        "Creative Commons Attribution 4.0",
        "routeviews.org",
    ] {
        assert!(info.contains(needle), "{needle}: {info}");
    }

    let served = Serve::seeded()
        .env("NETOPS_GEO_FILE", file.display())
        .start();
    agent_flows(&served, &["80.67.169.12", "2001:910:800::12"]).await;
    for ip in ["80.67.169.12", "2001:910:800::12"] {
        assert_eq!(
            destination(&served, ip).await,
            (json!("FR"), gitoyen.clone())
        );
    }
    assert_eq!(
        explored(&served, "80.67.169.12").await,
        vec![(json!("FR"), gitoyen.clone())]
    );
}
