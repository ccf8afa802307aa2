//! The ingestion-log port: one entry per batch of observations a collector sent
//! (docs/collect.md#the-ingestion-log), recorded once by its batch id, kept for the write log's
//! retention (`NETOPS_WRITE_LOG_DAYS`). The public write log stays for the three public writes.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::StoreResult;

/// At most this many refused lines are kept in an entry (and listed in the answer): the
/// counts stay exact, the list is cut.
pub const KEPT_REFUSALS: usize = 100;

/// A refused line of a batch: its number (from 1), its error code and message in both
/// languages the API speaks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LineRefusal {
    pub line: u64,
    pub error: String,
    pub message_fr: String,
    pub message_en: String,
}

/// One batch as it was taken in: what its answer says, so that the same batch sent again
/// gets the same answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IngestEntry {
    pub tenant: String,
    /// The batch's identity: its kind and its `Idempotency-Key`, or else the SHA-256 of its
    /// decompressed body.
    pub batch_id: String,
    pub kind: String,
    /// The name of the collect credential that sent it.
    pub token_name: String,
    pub request_id: String,
    pub at: chrono::DateTime<chrono::Utc>,
    pub accepted: u64,
    pub refused: u64,
    /// The first [`KEPT_REFUSALS`] refused lines, in line order.
    pub refusals: Vec<LineRefusal>,
    /// When the entry leaves the log (s since the epoch): kept by the store beside the entry.
    #[serde(skip)]
    pub expires_at: i64,
}

/// The ingestion log.
#[async_trait]
pub trait IngestLog: Send + Sync + 'static {
    /// Records `entry` unless an unexpired entry of its tenant has its batch id: `None` when
    /// recorded, else the entry recorded first (one conditional insert).
    async fn record(&self, entry: IngestEntry) -> StoreResult<Option<IngestEntry>>;
    /// The unexpired entry of `batch_id` in `tenant`'s log.
    async fn batch(&self, tenant: &str, batch_id: &str) -> StoreResult<Option<IngestEntry>>;
    /// The tenant's ingestion log, oldest first, without the expired entries.
    async fn ingested(&self, tenant: &str) -> StoreResult<Vec<IngestEntry>>;
}
