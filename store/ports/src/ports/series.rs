//! The series ports: time-ordered records by `(tenant, series, partition)`, read newest first.
//! Reads and appends are two ports, so that reads alone can come from another backend.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{Filter, StoreResult};

/// One time-ordered record. `ts` is in milliseconds since the epoch; `id` breaks ties. A
/// record is identified by its partition, `ts` and `id`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    pub partition: String,
    pub ts: i64,
    pub id: String,
    pub body: Value,
}

/// Where a newest-first read stopped: the last record returned.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Position {
    pub ts: i64,
    pub id: String,
}

/// A newest-first read of one series.
#[derive(Debug, Clone)]
pub struct SeriesQuery<'a> {
    pub tenant: &'a str,
    pub series: &'a str,
    /// `None` reads every partition of the series.
    pub partition: Option<&'a str>,
    /// Inclusive lower bound, ms.
    pub from: i64,
    /// Exclusive upper bound, ms.
    pub to: i64,
    pub filter: &'a Filter,
    pub after: Option<&'a Position>,
    pub limit: usize,
}

#[derive(Debug, Clone, Default)]
pub struct SeriesPage {
    pub records: Vec<Record>,
    /// Set when more records may follow.
    pub next: Option<Position>,
}

impl SeriesPage {
    /// The page of a read that took up to one record more than `limit`: that one more, when
    /// there, tells that more follow from the last record kept.
    pub fn cut(mut records: Vec<Record>, limit: usize) -> Self {
        let next = if records.len() > limit {
            records.truncate(limit);
            records.last().map(|r| Position {
                ts: r.ts,
                id: r.id.clone(),
            })
        } else {
            None
        };
        SeriesPage { records, next }
    }
}

/// Reads of series.
#[async_trait]
pub trait SeriesRead: Send + Sync + 'static {
    /// The query's records newest first (ties by id, descending), at most its limit.
    async fn scan(&self, query: &SeriesQuery<'_>) -> StoreResult<SeriesPage>;

    /// As [`Self::scan`], for a page its caller can resume or say is cut: a store that bills
    /// each record a read examines (DynamoDB) stops once a read has examined a bounded number
    /// of them, and answers the records it found, fewer than the limit, with `next` at the
    /// last record it examined. A filter that few records match over a long window then costs
    /// a bounded read per page instead of the window's every record. The embedded store
    /// examines records locally, without a bill, and does not stop.
    async fn scan_bounded(&self, query: &SeriesQuery<'_>) -> StoreResult<SeriesPage> {
        self.scan(query).await
    }
}

/// Appends to series (collection, seeding, the agent simulator); a record with the partition,
/// time and id of a stored one replaces it.
#[async_trait]
pub trait SeriesWrite: Send + Sync + 'static {
    async fn append(&self, tenant: &str, series: &str, records: Vec<Record>) -> StoreResult<()>;
}
