//! Crash safety: `kill -9` in the middle of a write loop loses no acknowledged write, and no
//! state change survives without its write-log entry (docs/writes.md#atomicity-and-faults:
//! the entry and the change commit together).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use crate::netdiag_host;
use crate::served::{Serve, netops};

/// What a writer saw of one acknowledged write.
struct Acked {
    request_id: String,
    status: u16,
    app: String,
}

/// Writes settings with a value of its own (`apps: [w<writer>-<n>.exe]`) and queues actions,
/// one after the other, until the server goes away; returns what was acknowledged.
async fn write_until_killed(
    http: reqwest::Client,
    base: String,
    token: String,
    host: String,
    writer: usize,
) -> Vec<Acked> {
    let mut acked = Vec::new();
    for n in 0.. {
        let app = format!("w{writer}-{n}.exe");
        let (url, body, method) = if n % 3 == 2 {
            (
                format!("{base}/netdiag/machines/{host}/actions"),
                json!({"action": "speed"}),
                reqwest::Method::POST,
            )
        } else {
            (
                format!("{base}/netdiag/machines/{host}/settings"),
                json!({"apps": [app]}),
                reqwest::Method::PUT,
            )
        };
        let sent = http
            .request(method, url)
            .bearer_auth(&token)
            .json(&body)
            .timeout(Duration::from_secs(5))
            .send()
            .await;
        let Ok(res) = sent else { break };
        let status = res.status().as_u16();
        assert!(
            matches!(status, 200 | 202),
            "a write before the kill is accepted: {status}"
        );
        let request_id = res.headers()["x-request-id"]
            .to_str()
            .expect("ascii")
            .to_owned();
        // The answer must be read whole to count as acknowledged.
        if res.bytes().await.is_err() {
            break;
        }
        acked.push(Acked {
            request_id,
            status,
            app,
        });
    }
    acked
}

#[tokio::test]
async fn kill_9_during_a_write_loop_loses_no_acknowledged_write_and_logs_every_change() {
    let dir = Arc::new(tempfile::tempdir().expect("tempdir"));
    // A quota the loop cannot reach: this test is about crashes, not the rate limit.
    let served = Serve::seeded()
        .in_dir(dir.clone())
        .env("NETOPS_RATE_LIMIT", 1_000_000)
        .start();
    let http = reqwest::Client::new();
    let host = netdiag_host(&http, &served).await;
    let writers: Vec<_> = (0..4)
        .map(|w| {
            tokio::spawn(write_until_killed(
                http.clone(),
                served.base.clone(),
                served.token.clone(),
                host.clone(),
                w,
            ))
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let status = std::process::Command::new("kill")
        .args(["-KILL", &served.pid()])
        .status()
        .expect("kill");
    assert!(status.success());
    let mut acked = Vec::new();
    for w in writers {
        acked.extend(w.await.expect("writer"));
    }
    drop(served);
    assert!(
        acked.len() >= 20,
        "the loop wrote for a while before the kill: {} writes",
        acked.len()
    );

    // The file opens again after the crash, and its log holds every acknowledged write.
    let out = netops(
        &["writes", "--tenant", "acme"],
        &dir.path().join("netops.db"),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let log: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON object per line"))
        .collect();
    let by_id: HashMap<&str, &Value> = log
        .iter()
        .filter_map(|e| Some((e["request_id"].as_str()?, e)))
        .collect();
    for a in &acked {
        let entry = by_id
            .get(a.request_id.as_str())
            .unwrap_or_else(|| panic!("acknowledged write {} is in the log", a.request_id));
        assert_eq!(entry["status"], a.status, "{entry}");
        if a.status == 200 {
            assert_eq!(entry["body"]["apps"][0], a.app.as_str(), "{entry}");
        }
    }

    // The machine's settings are those of the last settings change in the log: no change
    // reached the state without its entry, and none is missing from it.
    let settings_path = format!("/api/v1/netdiag/machines/{host}/settings");
    let last_logged = log
        .iter()
        .rev()
        .find(|e| e["path"] == settings_path.as_str() && e["status"] == 200)
        .expect("settings changes in the log");
    let served = Serve::seeded().in_dir(dir.clone()).start();
    let now: Value = http
        .put(format!("{}/netdiag/machines/{host}/settings", served.base))
        .bearer_auth(&served.token)
        .json(&json!({}))
        .send()
        .await
        .expect("put")
        .json()
        .await
        .expect("json");
    assert_eq!(now["data"]["apps"], last_logged["body"]["apps"], "{now}");
    eprintln!(
        "reliability: kill -9 after {} acknowledged writes (4 writers): all {} in the log, \
         the state is the last logged change, 0 lost",
        acked.len(),
        acked.len()
    );
}
