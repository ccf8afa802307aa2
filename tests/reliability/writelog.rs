//! The write log under abuse and store faults (docs/writes.md#the-write-log): a flood
//! of refused writes grows it by at most the bound docs/writes.md states while another tenant's
//! writes go on; a locked file makes a write wait one busy timeout, not two; a file deleted
//! while serving refuses writes instead of writing into a new empty file.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use netops_shared::write::entry_bound;
use serde_json::{Value, json};

use crate::netdiag_host;
use crate::served::{Serve, Served, Store, create_token_on, netops, netops_ok};

/// The log entries of `tenant` (`None`: the refusals without a known token), each with the
/// length of its line as `netops writes` prints it.
fn log_lines(served: &Served, tenant: Option<&str>) -> Vec<(Value, usize)> {
    let args = match tenant {
        Some(t) => vec!["writes", "--tenant", t],
        None => vec!["writes", "--unauthenticated"],
    };
    netops_ok(&args, &Store::File(served.db.clone()))
        .lines()
        .map(|l| {
            (
                serde_json::from_str(l).expect("one JSON object per line"),
                l.len(),
            )
        })
        .collect()
}

fn token(served: &Served, tenant: &str, name: &str, scopes: &str) -> String {
    create_token_on(
        &Store::File(served.db.clone()),
        tenant,
        &["--name", name, "--scopes", scopes],
    )
}

/// Sends acks with `body` until `stop`; returns how many answers of each status came back.
async fn flood(
    http: reqwest::Client,
    url: String,
    token: String,
    body: Arc<Vec<u8>>,
    stop: Arc<AtomicBool>,
) -> HashMap<u16, u64> {
    let mut seen = HashMap::new();
    while !stop.load(Ordering::Relaxed) {
        let res = http
            .post(&url)
            .bearer_auth(&token)
            .header("content-type", "application/json")
            .body(body.as_ref().clone())
            .send()
            .await;
        if let Ok(res) = res {
            *seen.entry(res.status().as_u16()).or_default() += 1;
        }
    }
    seen
}

#[tokio::test]
async fn a_flood_of_refused_writes_grows_the_log_by_at_most_the_bound_while_another_tenant_writes()
{
    const LIMIT: u64 = 20;
    const WINDOW: i64 = 2;
    let served = Serve::seeded()
        .env("NETOPS_RATE_LIMIT", LIMIT)
        .env("NETOPS_RATE_WINDOW_SECS", WINDOW)
        .start();
    let http = reqwest::Client::new();
    let revoked = token(&served, "acme", "revoked", "write:alerts");
    let out = netops(
        &["token", "revoke", "--tenant", "acme", "--name", "revoked"],
        &served.db,
    );
    assert!(out.status.success());
    let unknown = format!("nop_{}", "Q".repeat(40));
    let globex = token(&served, "globex", "other", "all");
    let globex_host = {
        let list: Value = http
            .get(format!("{}/netdiag/machines", served.base))
            .bearer_auth(&globex)
            .send()
            .await
            .expect("machines")
            .json()
            .await
            .expect("json");
        list["data"][0]["hostname"]
            .as_str()
            .expect("host")
            .to_owned()
    };
    let before_acme = log_lines(&served, Some("acme")).len();
    let before_anonymous = log_lines(&served, None).len();
    let files = || {
        ["", "-wal"]
            .iter()
            .map(|suffix| {
                let path = format!("{}{suffix}", served.db.display());
                std::fs::metadata(path).map_or(0, |m| m.len())
            })
            .sum::<u64>()
    };
    let before_files = files();

    // A 60 KB note, as in the report that found the log filling the disk.
    let body = Arc::new(json!({"note": "x".repeat(60_000)}).to_string().into_bytes());
    let url = format!("{}/alerts/hm-999999/ack", served.base);
    let stop = Arc::new(AtomicBool::new(false));
    let started = chrono::Utc::now().timestamp();
    let mut floods = Vec::new();
    for t in [&served.token, &revoked, &unknown] {
        let mut loops = Vec::new();
        for _ in 0..4 {
            loops.push(tokio::spawn(flood(
                http.clone(),
                url.clone(),
                t.clone(),
                body.clone(),
                stop.clone(),
            )));
        }
        floods.push(loops);
    }
    // Meanwhile the other tenant changes settings, about five times a second.
    let settings = format!("{}/netdiag/machines/{globex_host}/settings", served.base);
    // A client of its own, as another tenant's tool has: the flood's connections are closed
    // by the server after each refusal whose body it does not read.
    let other_http = reqwest::Client::new();
    let mut other = Vec::new();
    let until = Instant::now() + Duration::from_secs(4);
    while Instant::now() < until {
        let t = Instant::now();
        let res = other_http
            .put(&settings)
            .bearer_auth(&globex)
            .json(&json!({"apps": ["ok.exe"]}))
            .send()
            .await
            .expect("the other tenant's write");
        other.push((res.status().as_u16(), t.elapsed()));
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    stop.store(true, Ordering::Relaxed);
    let mut answers: Vec<HashMap<u16, u64>> = Vec::new();
    for loops in floods {
        let mut sum = HashMap::new();
        for l in loops {
            for (status, n) in l.await.expect("flood") {
                *sum.entry(status).or_default() += n;
            }
        }
        answers.push(sum);
    }
    let ended = chrono::Utc::now().timestamp();
    let total = |m: &HashMap<u16, u64>| m.values().sum::<u64>();

    assert!(
        other.iter().all(|(s, _)| *s == 200),
        "the other tenant's writes go on: {other:?}"
    );
    let slowest = other.iter().map(|(_, d)| *d).max().unwrap_or_default();
    assert!(slowest < Duration::from_secs(1), "slowest: {slowest:?}");

    // Windows the flood touched, and the bound per window: the quota's calls each with its
    // entry, plus one coalesced entry per kind of refusal (401, 429) per token or address.
    let windows =
        ((ended - ended.rem_euclid(WINDOW)) - (started - started.rem_euclid(WINDOW))) / WINDOW + 1;
    let windows = windows as u64;
    let acme = log_lines(&served, Some("acme"));
    let anonymous = log_lines(&served, None);
    let added_acme = &acme[before_acme..];
    let added_anonymous = &anonymous[before_anonymous..];
    let bound_acme = windows * (LIMIT + 1) + windows * 2;
    let bound_anonymous = windows * 2;
    let sent = total(&answers[0]) + total(&answers[1]) + total(&answers[2]);
    eprintln!(
        "reliability: flood: {sent} answers {answers:?} over {windows} windows; log +{} acme entries \
         ({} bytes), +{} without a token ({} bytes); file and WAL +{} bytes; other tenant's \
         slowest write {slowest:?}",
        added_acme.len(),
        added_acme.iter().map(|(_, n)| n).sum::<usize>(),
        added_anonymous.len(),
        added_anonymous.iter().map(|(_, n)| n).sum::<usize>(),
        files().saturating_sub(before_files),
    );
    assert!(
        sent > 5 * (bound_acme + bound_anonymous),
        "the flood must dwarf the bound to mean anything: {sent}"
    );
    assert!(
        added_acme.len() as u64 <= bound_acme,
        "{} entries > {bound_acme}",
        added_acme.len()
    );
    assert!(added_anonymous.len() as u64 <= bound_anonymous);
    for (entry, len) in added_acme.iter().chain(added_anonymous) {
        let names = entry["tenant"].as_str().map_or(0, str::len)
            + entry["token_name"].as_str().map_or(0, str::len);
        assert!(*len <= entry_bound(names), "{len} bytes: {entry}");
    }

    // Every refusal is counted: the entries' counts add up to the answers each caller got.
    let counted = |entries: &[(Value, usize)], name: &str| -> u64 {
        entries
            .iter()
            .filter(|(e, _)| e["token_name"] == name)
            .map(|(e, _)| e["count"].as_u64().unwrap_or(1))
            .sum()
    };
    let demo_name = added_acme
        .iter()
        .map(|(e, _)| e["token_name"].as_str().unwrap_or_default())
        .find(|n| n.starts_with("demo-"))
        .expect("the demo token's entries")
        .to_owned();
    assert_eq!(counted(added_acme, &demo_name), total(&answers[0]));
    assert_eq!(counted(added_acme, "revoked"), total(&answers[1]));
    assert_eq!(counted(added_anonymous, ""), total(&answers[2]));
    for (entry, _) in added_acme.iter().chain(added_anonymous) {
        if matches!(entry["status"].as_u64(), Some(401 | 429)) {
            assert_eq!(entry["body"], Value::Null, "{entry}");
        }
    }
}

#[tokio::test]
async fn a_write_on_a_locked_file_waits_one_busy_timeout_then_gets_503_and_is_not_logged() {
    let served = Serve::seeded().start();
    let http = reqwest::Client::new();
    let host = netdiag_host(&http, &served).await;
    let url = format!("{}/netdiag/machines/{host}/settings", served.base);
    let lock = rusqlite::Connection::open(&served.db).expect("open");
    lock.execute_batch("BEGIN IMMEDIATE").expect("write lock");
    let started = Instant::now();
    let res = http
        .put(&url)
        .bearer_auth(&served.token)
        .json(&json!({"apps": ["locked.exe"]}))
        .send()
        .await
        .expect("put");
    let waited = started.elapsed();
    lock.execute_batch("ROLLBACK").expect("unlock");
    assert_eq!(res.status().as_u16(), 503);
    assert!(res.headers().contains_key("retry-after"));
    let request_id = res.headers()["x-request-id"]
        .to_str()
        .expect("ascii")
        .to_owned();
    let body: Value = res.json().await.expect("json");
    assert_eq!(body["error"], "service_unavailable");
    assert!(
        waited >= Duration::from_millis(4500) && waited < Duration::from_millis(7000),
        "one busy timeout of 5 s: {waited:?}"
    );
    // The write and its refusal wrote nothing; the process log says why.
    let logged = log_lines(&served, Some("acme"));
    assert!(
        logged
            .iter()
            .all(|(e, _)| e["request_id"] != request_id.as_str()),
        "{logged:?}"
    );
    let log = served.log_text();
    assert!(
        log.contains(&request_id) && log.contains("not logged"),
        "{log}"
    );
    // Once the lock is gone, writes go through again.
    let res = http
        .put(&url)
        .bearer_auth(&served.token)
        .json(&json!({"apps": ["free.exe"]}))
        .send()
        .await
        .expect("put");
    assert_eq!(res.status().as_u16(), 200);
}

#[tokio::test]
async fn a_failure_that_cannot_be_said_in_the_log_still_gets_its_503() {
    // The store seeded beforehand: the server has nothing to say on start.
    let dir = Arc::new(tempfile::tempdir().expect("tempdir"));
    let seeded = netops(&["seed"], &dir.path().join("netops.db"));
    assert!(seeded.status.success());
    let served = Serve::seeded().in_dir(dir).log_to("/dev/full").start();
    let http = reqwest::Client::new();
    let host = netdiag_host(&http, &served).await;
    let url = format!("{}/netdiag/machines/{host}/settings", served.base);
    let lock = rusqlite::Connection::open(&served.db).expect("open");
    lock.execute_batch("BEGIN IMMEDIATE").expect("write lock");
    let res = http
        .put(&url)
        .bearer_auth(&served.token)
        .json(&json!({"apps": ["locked.exe"]}))
        .send()
        .await
        .expect("an answer, though the log is full");
    lock.execute_batch("ROLLBACK").expect("unlock");
    assert_eq!(res.status().as_u16(), 503);
    let body: Value = res.json().await.expect("json");
    assert_eq!(body["error"], "service_unavailable");
}

#[tokio::test]
async fn a_database_file_deleted_while_serving_refuses_writes_and_no_new_file_appears() {
    let served = Serve::seeded().start();
    let http = reqwest::Client::new();
    let host = netdiag_host(&http, &served).await;
    let url = format!("{}/netdiag/machines/{host}/settings", served.base);
    let put = |apps: &str| {
        http.put(&url)
            .bearer_auth(&served.token)
            .json(&json!({ "apps": [apps] }))
            .send()
    };
    assert_eq!(put("before.exe").await.expect("put").status().as_u16(), 200);
    std::fs::remove_file(&served.db).expect("delete the file");
    for n in 0..3 {
        let res = put(&format!("after-{n}.exe")).await.expect("put");
        assert_eq!(res.status().as_u16(), 503, "write {n} after the deletion");
        let body: Value = res.json().await.expect("json");
        assert_eq!(body["error"], "service_unavailable");
        assert!(!served.db.exists(), "no new file at the path");
    }
    // A file put in its place is not the one the server opened: still refused, left untouched.
    std::fs::write(&served.db, b"").expect("an empty file in its place");
    assert_eq!(
        put("replaced.exe").await.expect("put").status().as_u16(),
        503
    );
    assert_eq!(std::fs::metadata(&served.db).expect("file").len(), 0);
    let log = served.log_text();
    assert_eq!(
        log.matches("database file was deleted or replaced").count(),
        1,
        "said once: {log}"
    );
}
