//! Batches out: one forwarder per kind posts the oldest segment of the disk buffer to
//! `POST {base_url}/collect/{kind}` (gzip, the segment's bytes as they are) and removes it
//! once the API has answered for it. Tried again, byte-identical, with exponential backoff
//! (0.5 s doubling up to `tuning.max_backoff_secs`) on no answer, 5xx and 429 (after its
//! `Retry-After` when given); a credential or kind the API refuses (401, 403, 404) is retried
//! at the longest pause, never dropped: fixing the configuration delivers the buffer. A batch
//! with no valid line (400) or too large (413) is dropped with its lines counted.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use crate::spool::{Kind, Segment, Spool};
use crate::stats::{Loss, Stats};

pub struct Forwarder {
    pub client: reqwest::Client,
    pub base: String,
    pub token: String,
    pub spool: Arc<Spool>,
    pub stats: Arc<Stats>,
    pub max_backoff: Duration,
}

/// What to do with a batch after one try.
enum Outcome {
    Done {
        accepted: u64,
        refused: u64,
    },
    Dropped {
        refused: u64,
    },
    Retry(Option<Duration>),
    /// Refused for a reason that no retry soon will change.
    Stuck,
}

impl Forwarder {
    pub fn client() -> Result<reqwest::Client, String> {
        reqwest::Client::builder()
            .timeout(Duration::from_secs(60))
            .connect_timeout(Duration::from_secs(10))
            .build()
            .map_err(|e| format!("cannot make an HTTP client: {e}"))
    }

    /// Sends `kind`'s batches until `stop` is set and its buffer is empty, or `stop` is set
    /// and `draining` changes (the grace period is over).
    pub async fn run(
        self: Arc<Self>,
        kind: Kind,
        mut stop: watch::Receiver<bool>,
        mut give_up: watch::Receiver<bool>,
    ) {
        let url = format!(
            "{}/collect/{}",
            self.base.trim_end_matches('/'),
            kind.as_str()
        );
        let mut backoff = Duration::from_millis(500);
        loop {
            if *give_up.borrow() {
                return;
            }
            let Some(seg) = self.spool.oldest(kind) else {
                if *stop.borrow() {
                    return;
                }
                let added = self.spool.added.notified();
                tokio::select! {
                    _ = added => {}
                    _ = stop.changed() => {}
                    // A segment added between the look and the wait is seen here.
                    _ = tokio::time::sleep(Duration::from_millis(200)) => {}
                }
                continue;
            };
            let outcome = self.send(&url, kind, &seg).await;
            let pause = match outcome {
                Outcome::Done { accepted, refused } => {
                    if self.spool.remove(&seg) {
                        Stats::add(&self.stats.forwarded, accepted);
                        Stats::add(&self.stats.batches_forwarded, 1);
                        self.stats.lose(Loss::RefusedByApi, refused);
                    }
                    backoff = Duration::from_millis(500);
                    continue;
                }
                Outcome::Dropped { refused } => {
                    if self.spool.remove(&seg) {
                        self.stats.lose(Loss::RefusedByApi, refused);
                    }
                    continue;
                }
                Outcome::Retry(after) => after.unwrap_or(backoff),
                Outcome::Stuck => self.max_backoff,
            };
            Stats::add(&self.stats.retries, 1);
            backoff = (backoff * 2).min(self.max_backoff);
            tokio::select! {
                _ = tokio::time::sleep(pause.min(self.max_backoff)) => {}
                _ = give_up.changed() => return,
            }
        }
    }

    async fn send(&self, url: &str, kind: Kind, seg: &Segment) -> Outcome {
        let body = match tokio::fs::read(&seg.path).await {
            Ok(b) => b,
            Err(e) => {
                // Removed meanwhile to keep the bound (already counted), or unreadable.
                if self.spool.remove(seg) {
                    self.stats.lose(Loss::BufferWrite, seg.lines);
                    tracing::error!(error = %e, seq = seg.seq, "cannot read a buffered batch");
                }
                return Outcome::Dropped { refused: 0 };
            }
        };
        let res = self
            .client
            .post(url)
            .bearer_auth(&self.token)
            .header("content-type", kind.content_type())
            .header("content-encoding", "gzip")
            .body(body)
            .send()
            .await;
        let res = match res {
            Ok(r) => r,
            Err(e) => {
                tracing::warn!(kind = kind.as_str(), seq = seg.seq, error = %e, "no answer; trying again");
                return Outcome::Retry(None);
            }
        };
        let status = res.status().as_u16();
        let retry_after = res
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map(Duration::from_secs);
        let answer: serde_json::Value = res.json().await.unwrap_or_default();
        let count = |v: &serde_json::Value| v.as_u64().unwrap_or(0);
        match status {
            200 => {
                let refused = count(&answer["data"]["refused"]);
                if refused > 0 {
                    // The API's reasons (at most 100 of them): what to fix at the sender.
                    tracing::warn!(kind = kind.as_str(), seq = seg.seq, refused, refusals = %answer["data"]["refusals"], "lines refused by the API");
                }
                Outcome::Done {
                    accepted: count(&answer["data"]["accepted"]),
                    refused,
                }
            }
            400 => {
                tracing::warn!(kind = kind.as_str(), seq = seg.seq, lines = seg.lines, answer = %answer, "batch with no valid line");
                Outcome::Dropped { refused: seg.lines }
            }
            413 => {
                tracing::error!(
                    kind = kind.as_str(),
                    seq = seg.seq,
                    "batch over the API's limits"
                );
                Outcome::Dropped { refused: seg.lines }
            }
            429 => Outcome::Retry(retry_after),
            401 | 403 | 404 => {
                tracing::error!(kind = kind.as_str(), status, answer = %answer, "the API refuses this credential or kind; the buffer is kept");
                Outcome::Stuck
            }
            _ => {
                tracing::warn!(kind = kind.as_str(), seq = seg.seq, status, "trying again");
                Outcome::Retry(retry_after)
            }
        }
    }
}
