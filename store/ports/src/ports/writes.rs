//! The write-log port: every write's state changes committed together with its log entry,
//! refusals coalesced per sender and window, entries kept for a retention time
//! (docs/writes.md#the-write-log).

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{Record, StoreResult};

/// What a conditional change expects to find.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expect {
    Any,
    Absent,
    Version(u64),
}

/// One state change of a write.
#[derive(Debug, Clone)]
pub enum Change {
    PutDoc {
        collection: String,
        key: String,
        body: Value,
        expect: Expect,
    },
    Append {
        series: String,
        record: Record,
    },
    /// Keeps the answer of the write that holds the idempotency key `key` by the claim
    /// `claim` ([`WriteLog::claim_key`]); fails the commit when the claim is no longer held.
    Remember {
        key: String,
        claim: String,
        answer: KeptAnswer,
    },
}

/// An answer kept for the retries of an idempotent write: its status and its body as sent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeptAnswer {
    pub status: u16,
    pub body: String,
}

/// A request taking an idempotency key (docs/writes.md#idempotency).
#[derive(Debug, Clone)]
pub struct KeyClaim {
    /// The key as the store keeps it, scoped to the token: `<token hash prefix>|<key>`.
    pub key: String,
    /// What identifies the request: the SHA-256 of its method, path and body.
    pub fingerprint: String,
    /// This claim's own random id, which its answer is kept by and its release names.
    pub claim: String,
    /// When the claim is made, s.
    pub at: i64,
    /// When the key is free again, s.
    pub expires_at: i64,
}

/// Seconds after which a key still in flight is taken to be abandoned (its process stopped
/// before answering): a new request may take it over. Every request ends well before.
pub const ABANDONED_AFTER_SECS: i64 = 120;

/// A key held by an earlier request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeldKey {
    pub fingerprint: String,
    /// `None` while the first request is in flight.
    pub answer: Option<KeptAnswer>,
}

/// One entry of the write log (docs/writes.md#the-write-log: every write is logged with its
/// request body; bounded, see [`crate::write`]). Printed as is by
/// `netops writes`, one JSON object per line; the optional fields are absent when unset, so
/// readers of the first entries' shape read these too.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct WriteLogEntry {
    /// The tenant of the token, or [`UNAUTHENTICATED`].
    pub tenant: String,
    /// When the write came (the first refusal of a coalesced entry).
    pub at: chrono::DateTime<chrono::Utc>,
    pub request_id: String,
    /// Empty when no token is known.
    pub token_name: String,
    pub method: String,
    pub path: String,
    /// The request body as JSON; when it is longer than the log keeps, its first bytes as a
    /// string. Null when no body is kept (refusals before authentication or over the rate
    /// limit, bodies over 64 KiB).
    pub body: Value,
    pub status: u16,
    /// The body's length in bytes, when `body` is not all of it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body_length: Option<u64>,
    /// The SHA-256 (hex) of the whole body, when `body` is truncated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body_sha256: Option<String>,
    /// Coalesced refusals: how many this entry stands for (absent: one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<u64>,
    /// Coalesced refusals: when the last one came.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_at: Option<chrono::DateTime<chrono::Utc>>,
    /// Refusals without a known token: the client address (an IPv6 client's /64).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<String>,
    /// When the entry leaves the log (s since the epoch): kept by the store beside the entry.
    #[serde(skip)]
    pub expires_at: i64,
}

/// The write-log partition of refusals without a known token: no tenant can have this id
/// (tenant ids are `a-z`, `0-9`, `-` and `_`). `netops writes --unauthenticated` prints it.
pub const UNAUTHENTICATED: &str = "~unauthenticated";

/// The write log and the conditional changes committed with it.
#[async_trait]
pub trait WriteLog: Send + Sync + 'static {
    /// Commits the log entry and the changes together, or nothing. With a failed
    /// expectation nothing is written and [`crate::StoreError::ConditionFailed`] is
    /// returned.
    async fn commit(&self, log: WriteLogEntry, changes: Vec<Change>) -> StoreResult<()>;

    /// Counts one more refusal in the coalesced entry `key` of `log.tenant`'s log, which
    /// holds the refusals of a window starting at `since`: created from `log` with a count of
    /// 1, or its count raised by one, its `last_at` and expiry moved to `log`'s (one upsert).
    async fn coalesce(
        &self,
        since: chrono::DateTime<chrono::Utc>,
        key: &str,
        log: WriteLogEntry,
    ) -> StoreResult<()>;

    /// The tenant's write log, oldest first, without the expired entries.
    async fn entries(&self, tenant: &str) -> StoreResult<Vec<WriteLogEntry>>;

    /// Takes the idempotency key of `claim` for `tenant`, unless another request holds it:
    /// `None` when taken, else what holds it. An expired key, or one in flight for more than
    /// [`ABANDONED_AFTER_SECS`], is taken over.
    async fn claim_key(&self, tenant: &str, claim: &KeyClaim) -> StoreResult<Option<HeldKey>>;

    /// Frees a key taken by `claim` whose request committed nothing, so that a retry runs
    /// again; a key whose answer is kept, or taken over since, stays as it is.
    async fn release_key(&self, tenant: &str, key: &str, claim: &str) -> StoreResult<()>;
}
