//! MCP batches against the real server (docs/mcp.md#batches-and-answer-size): a batch
//! cannot multiply the work, the answer or the memory of one message, and every tool call it
//! holds is counted.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::served::{Serve, Served};

const MIB: u64 = 1024 * 1024;

/// A batch of `n` tool calls, `tools` taken in turn, as compact as a client would send it.
fn batch(n: usize, tools: &[&str], arguments: &Value) -> Vec<u8> {
    let calls: Vec<Value> = (0..n)
        .map(|id| {
            json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                "params": {"name": tools[id % tools.len()], "arguments": arguments}})
        })
        .collect();
    serde_json::to_vec(&calls).expect("JSON")
}

/// One answer to a POST of `body` on `/mcp`.
struct Answer {
    status: u16,
    remaining: Option<u64>,
    size: u64,
    body: Value,
    elapsed: Duration,
}

async fn post(request: reqwest::RequestBuilder, body: Vec<u8>) -> Answer {
    let started = Instant::now();
    let res = request
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .expect("POST /mcp");
    let status = res.status().as_u16();
    let remaining = res
        .headers()
        .get("x-ratelimit-remaining")
        .and_then(|v| v.to_str().ok()?.parse().ok());
    let bytes = res.bytes().await.expect("body");
    Answer {
        status,
        remaining,
        size: bytes.len() as u64,
        body: serde_json::from_slice(&bytes).unwrap_or(Value::Null),
        elapsed: started.elapsed(),
    }
}

/// `field` (RssAnon, VmRSS) of the server process, in bytes.
fn memory(served: &Served, field: &str) -> u64 {
    status_field(&served.pid(), field)
}

fn status_field(pid: &str, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("status");
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map(|kb| kb * 1024)
        .unwrap_or_else(|| panic!("no {field} in /proc status"))
}

/// The highest `field` (RssAnon: the heap, not the store's file pages the server maps) of
/// the server while `work` runs, sampled every millisecond.
async fn peak_while<T>(
    served: &Served,
    field: &'static str,
    work: impl Future<Output = T>,
) -> (T, u64) {
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let sampler = {
        let (stop, pid) = (stop.clone(), served.pid());
        std::thread::spawn(move || {
            let mut peak = 0;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                peak = peak.max(status_field(&pid, field));
                std::thread::sleep(Duration::from_millis(1));
            }
            peak
        })
    };
    let out = work.await;
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let peak = sampler.join().expect("sampler");
    (out, peak.max(status_field(&served.pid(), field)))
}

/// Sends `body` four times at once; answers in any order.
async fn four_at_once(served: &Served, body: &[u8]) -> Vec<Answer> {
    let http = reqwest::Client::new();
    let mut posts = tokio::task::JoinSet::new();
    for _ in 0..4 {
        let request = http
            .post(format!("{}/mcp", served.base))
            .bearer_auth(&served.token);
        posts.spawn(post(request, body.to_vec()));
    }
    posts.join_all().await
}

async fn remaining_now(served: &Served) -> u64 {
    let http = reqwest::Client::new();
    let res = http
        .get(format!("{}/me", served.base))
        .bearer_auth(&served.token)
        .send()
        .await
        .expect("GET /me");
    res.headers()
        .get("x-ratelimit-remaining")
        .and_then(|v| v.to_str().ok()?.parse().ok())
        .expect("X-RateLimit-Remaining")
}

#[tokio::test]
async fn four_floods_of_520_tool_calls_are_refused_at_once_each_counting_one_call() {
    let served = Serve::seeded().start();
    let body = batch(520, &["list_flows"], &json!({"limit": 500, "period": "7d"}));
    assert!(
        body.len() < 64 * 1024,
        "within the body limit: {}",
        body.len()
    );
    let before = remaining_now(&served).await;
    let heap = memory(&served, "RssAnon");
    let (answers, peak) = peak_while(&served, "RssAnon", four_at_once(&served, &body)).await;
    for a in &answers {
        assert_eq!(a.status, 400, "{} bytes", a.size);
        assert_eq!(a.body["error"]["code"], -32600, "{} bytes", a.size);
        assert!(a.size < 1024, "a small refusal: {} bytes", a.size);
        assert!(a.elapsed < Duration::from_secs(2), "{:?}", a.elapsed);
    }
    let mut left: Vec<u64> = answers.iter().filter_map(|a| a.remaining).collect();
    left.sort_unstable();
    assert_eq!(
        left,
        [before - 4, before - 3, before - 2, before - 1],
        "each message counts once"
    );
    eprintln!(
        "reliability: 4 x 520-call floods: {:?} slowest, heap {} MiB, peak {} MiB",
        answers.iter().map(|a| a.elapsed).max(),
        heap / MIB,
        peak / MIB
    );
    assert!(
        peak < heap + 32 * MIB,
        "the heap of {} MiB rose to {} MiB",
        heap / MIB,
        peak / MIB
    );
}

#[tokio::test]
async fn four_maximal_batches_at_once_answer_at_most_8_mib_each_in_bounded_memory() {
    let served = Serve::seeded().start();
    // About 700 KB a call with the demo data: twenty calls would answer twice the cap.
    let body = batch(
        20,
        &["list_firewall_events", "list_dns_resolutions"],
        &json!({"limit": 1000, "period": "7d"}),
    );
    let heap = memory(&served, "RssAnon");
    let (answers, peak) = peak_while(&served, "RssAnon", four_at_once(&served, &body)).await;
    for a in &answers {
        assert_eq!(a.status, 200);
        assert!(a.size <= 8 * MIB, "{} bytes", a.size);
        let calls = a.body.as_array().expect("one answer per call");
        assert_eq!(calls.len(), 20);
        let cut = calls
            .iter()
            .filter(|c| c["error"]["code"] == -32000)
            .count();
        assert!(cut > 0, "the cap was reached");
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let after = memory(&served, "RssAnon");
    eprintln!(
        "reliability: 4 x 20-call batches: {:?} slowest, {} bytes largest; heap {} MiB, peak {} MiB, {} MiB after",
        answers.iter().map(|a| a.elapsed).max(),
        answers.iter().map(|a| a.size).max().unwrap_or(0),
        heap / MIB,
        peak / MIB,
        after / MIB
    );
    // Four answers of 8 MiB, plus one call in the making for each (its store records, their
    // decoded events and the REST body: 20 to 30 MiB with the allocator's slack); measured
    // 100 to 130 MiB above the idle heap.
    assert!(
        peak < heap + 160 * MIB,
        "the heap of {} MiB rose to {} MiB",
        heap / MIB,
        peak / MIB
    );
}
