//! `netops collect` (docs/cli.md#collect): sends a file of observations, or standard input, to
//! the collection API of a base URL with a collect credential (bulk import, cron jobs). The
//! lines go in gzip-compressed batches of whole lines that stay within the API's limits; each
//! batch's identity is the SHA-256 of its lines, so a batch sent again (a retry, the same
//! import run twice) is counted once. One JSON object per batch on standard output: the
//! answer's `data`, or `{"error", "status", ...}` for a batch refused.

use std::io::{BufRead, Write};
use std::time::Duration;

use netops_shared::collect::WIRE_LIMIT;

/// Lines per batch at most this many bytes: gzip never grows its input by more than a few
/// bytes per 16 KiB block, so a compressed batch stays under the API's [`WIRE_LIMIT`].
const BATCH_BYTES: usize = WIRE_LIMIT - 64 * 1024;
/// Tries of a batch whose answer says to try again (429, 503, no answer).
const TRIES: u32 = 5;

/// Where and how to send.
pub struct Target {
    /// The API's base URL, `http(s)://host[:port]/api/v1`.
    pub base: String,
    pub token: String,
    pub kind: String,
    /// Raw lines (`text/plain`) rather than NDJSON.
    pub text: bool,
}

/// How an import went: batches sent, batches refused, lines accepted and refused.
#[derive(Debug, Default)]
pub struct Sent {
    pub batches: u64,
    pub refused_batches: u64,
    pub accepted: u64,
    pub refused: u64,
}

/// Sends every line of `input` in batches; stops at the first batch refused for a reason that
/// would refuse the next ones too (credential, kind, limits), and returns an error message.
pub async fn send(target: &Target, input: impl BufRead) -> Result<Sent, String> {
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(120))
        .build()
        .map_err(|e| format!("cannot make an HTTP client: {e}"))?;
    let url = format!(
        "{}/collect/{}",
        target.base.trim_end_matches('/'),
        target.kind
    );
    let mut sent = Sent::default();
    let mut batch = Vec::with_capacity(BATCH_BYTES);
    let mut lines = input.split(b'\n');
    loop {
        let line = lines
            .next()
            .transpose()
            .map_err(|e| format!("cannot read the input: {e}"))?;
        let full = line
            .as_ref()
            .is_some_and(|l| !batch.is_empty() && batch.len() + l.len() + 1 > BATCH_BYTES);
        if (line.is_none() || full) && !batch.is_empty() {
            post(&client, &url, target, &batch, &mut sent).await?;
            batch.clear();
        }
        match line {
            Some(l) => {
                batch.extend_from_slice(&l);
                batch.push(b'\n');
            }
            None => return Ok(sent),
        }
    }
}

/// Posts one batch, tried again while the API says to (429 after `Retry-After`, 503, no
/// answer): the batch's identity makes a retry count once.
async fn post(
    client: &reqwest::Client,
    url: &str,
    target: &Target,
    batch: &[u8],
    sent: &mut Sent,
) -> Result<(), String> {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(batch)
        .map_err(|e| format!("cannot compress: {e}"))?;
    let body = gz.finish().map_err(|e| format!("cannot compress: {e}"))?;
    let content_type = if target.text {
        "text/plain"
    } else {
        "application/x-ndjson"
    };
    sent.batches += 1;
    let mut wait = Duration::from_millis(500);
    for attempt in 1..=TRIES {
        let res = client
            .post(url)
            .bearer_auth(&target.token)
            .header("content-type", content_type)
            .header("content-encoding", "gzip")
            .body(body.clone())
            .send()
            .await;
        let res = match res {
            Ok(res) => res,
            Err(e) if attempt < TRIES => {
                eprintln!("netops: batch {}: {e}; trying again", sent.batches);
                tokio::time::sleep(wait).await;
                wait *= 2;
                continue;
            }
            Err(e) => return Err(format!("batch {}: {e}", sent.batches)),
        };
        let status = res.status().as_u16();
        let retry_after = res
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        let answer: serde_json::Value = res.json().await.unwrap_or_default();
        match status {
            200 => {
                let data = &answer["data"];
                sent.accepted += data["accepted"].as_u64().unwrap_or(0);
                sent.refused += data["refused"].as_u64().unwrap_or(0);
                println!("{data}");
                return Ok(());
            }
            429 | 503 if attempt < TRIES => {
                let pause = retry_after.map_or(wait, Duration::from_secs);
                eprintln!(
                    "netops: batch {}: {status}; trying again in {} s",
                    sent.batches,
                    pause.as_secs_f64()
                );
                tokio::time::sleep(pause).await;
                wait *= 2;
            }
            400 => {
                // No valid line in this batch: the next ones may have some.
                sent.refused_batches += 1;
                sent.refused += answer["refused"].as_u64().unwrap_or(0);
                let mut answer = answer;
                answer["status"] = status.into();
                println!("{answer}");
                return Ok(());
            }
            _ => {
                let message = answer["message"].as_str().unwrap_or("no answer body");
                return Err(format!("batch {}: {status} {message}", sent.batches));
            }
        }
    }
    Err(format!(
        "batch {}: the API kept asking to try again",
        sent.batches
    ))
}
