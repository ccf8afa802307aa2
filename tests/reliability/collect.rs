//! Crash safety of the collection API (docs/collect.md#idempotency): `kill -9` while a
//! shipper posts batches of firewall syslog; after a restart the shipper sends every batch
//! again, as a shipper that got no answer does, and each line is then stored once and counted
//! once in the report, whichever batch the kill cut.

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::served::{Serve, Served, create_token};

const BATCHES: usize = 30;
const LINES: usize = 200;

/// Batch `b`: [`LINES`] denied connections of `device`, each line its own (its time and
/// destination port).
fn batch(device: &str, now: DateTime<Utc>, b: usize) -> String {
    (0..LINES)
        .map(|i| {
            let n = (b * LINES + i) as i64;
            let at = now - chrono::Duration::milliseconds(1_000 + n * 5);
            format!(
                "<189>date={} time={} devname=\"{device}\" devid=\"FG100FTK20001234\" \
                 eventtime={}000000 logid=\"0000000013\" type=\"traffic\" subtype=\"forward\" \
                 level=\"notice\" srcip=10.10.30.14 srcport={} dstip=203.0.113.50 dstport=9{} \
                 action=\"deny\" service=\"crash\" proto=6 policyid=12 msg=\"Denied by policy\"\n",
                at.format("%Y-%m-%d"),
                at.format("%H:%M:%S"),
                at.timestamp_millis(),
                1024 + i,
                b % 10,
            )
        })
        .collect()
}

async fn post(
    http: &reqwest::Client,
    base: &str,
    token: &str,
    body: &str,
) -> reqwest::Result<reqwest::Response> {
    http.post(format!("{base}/collect/firewall-syslog"))
        .bearer_auth(token)
        .header("content-type", "text/plain")
        .body(body.to_owned())
        .timeout(Duration::from_secs(10))
        .send()
        .await
}

async fn summary(http: &reqwest::Client, served: &Served) -> Value {
    let body: Value = http
        .get(format!("{}/firewall/report?period=24h", served.base))
        .bearer_auth(&served.token)
        .send()
        .await
        .expect("report")
        .json()
        .await
        .expect("json");
    body["data"]["summary"].clone()
}

#[tokio::test]
async fn kill_9_while_batches_arrive_loses_nothing_and_counts_nothing_twice() {
    let dir = Arc::new(tempfile::tempdir().expect("tempdir"));
    let served = Serve::seeded()
        .in_dir(dir.clone())
        .env("NETOPS_NO_LIVE", "1")
        .env("NETOPS_RATE_LIMIT", 1_000_000)
        .start();
    let token = create_token(
        &served.db,
        &["--name", "relay", "--scopes", "collect:firewall"],
    );
    let http = reqwest::Client::new();
    let devices: Value = http
        .get(format!("{}/firewall/devices", served.base))
        .bearer_auth(&served.token)
        .send()
        .await
        .expect("devices")
        .json()
        .await
        .expect("json");
    let device = devices["data"][0]["name"]
        .as_str()
        .expect("name")
        .to_owned();
    let before = summary(&http, &served).await;
    let now = Utc::now();
    let bodies: Arc<Vec<String>> = Arc::new((0..BATCHES).map(|b| batch(&device, now, b)).collect());

    // The shipper posts batch after batch until the server goes away.
    let shipper = {
        let (http, base, token, bodies) = (
            http.clone(),
            served.base.clone(),
            token.clone(),
            bodies.clone(),
        );
        tokio::spawn(async move {
            let mut acked = 0;
            for body in bodies.iter() {
                let Ok(res) = post(&http, &base, &token, body).await else {
                    break;
                };
                // An answer counts once read whole.
                if res.status() != 200 || res.bytes().await.is_err() {
                    break;
                }
                acked += 1;
            }
            acked
        })
    };
    tokio::time::sleep(Duration::from_millis(800)).await;
    let status = std::process::Command::new("kill")
        .args(["-KILL", &served.pid()])
        .status()
        .expect("kill");
    assert!(status.success());
    let acked = shipper.await.expect("shipper");
    drop(served);
    assert!(acked >= 1, "the shipper sent batches before the kill");

    // After the restart every batch is sent again: those acknowledged get their first answer,
    // the others are taken in now.
    let served = Serve::seeded()
        .in_dir(dir.clone())
        .env("NETOPS_NO_LIVE", "1")
        .env("NETOPS_RATE_LIMIT", 1_000_000)
        .start();
    for (b, body) in bodies.iter().enumerate() {
        let res = post(&http, &served.base, &token, body).await.expect("post");
        assert_eq!(res.status(), 200, "batch {b}");
        let replayed = res.headers().contains_key("idempotent-replayed");
        assert!(
            replayed || b >= acked,
            "batch {b} was acknowledged before the kill"
        );
        let answer: Value = res.json().await.expect("json");
        assert_eq!(answer["data"]["accepted"], LINES, "batch {b}");
    }
    let after = summary(&http, &served).await;
    let delta = |k: &str| after[k].as_f64().unwrap_or(0.0) - before[k].as_f64().unwrap_or(0.0);
    assert_eq!(
        delta("events"),
        (BATCHES * LINES) as f64,
        "{before} {after}"
    );
    assert_eq!(delta("blocked"), (BATCHES * LINES) as f64);
    // Each line is one stored event: read in windows of 4 s (800 lines at most), within the
    // events route's page of 1,000.
    let mut stored = 0;
    let mut from = now - chrono::Duration::seconds(2 + (BATCHES * LINES) as i64 * 5 / 1000);
    while from < now {
        let to = from + chrono::Duration::seconds(4);
        let page: Value = http
            .get(format!("{}/firewall/events", served.base))
            .query(&[
                ("category", "deny"),
                ("limit", "1000"),
                ("from", &from.to_rfc3339()),
                ("to", &to.to_rfc3339()),
            ])
            .bearer_auth(&served.token)
            .send()
            .await
            .expect("events")
            .json()
            .await
            .expect("json");
        let items = page["data"].as_array().expect("events");
        assert!(items.len() < 1000, "a window of 4 s holds less than a page");
        stored += items.iter().filter(|e| e["service"] == "crash").count();
        from = to;
    }
    assert_eq!(stored, BATCHES * LINES);
    eprintln!(
        "reliability: kill -9 after {acked} of {BATCHES} collect batches acknowledged: every \
         batch sent again, {} lines stored and counted once",
        BATCHES * LINES
    );
}
