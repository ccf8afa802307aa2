//! The documents port: versioned JSON documents by `(tenant, collection, key)`.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::store::{All, Filter, READ_ALL, StoreResult};

/// A versioned JSON document.
#[derive(Debug, Clone, PartialEq)]
pub struct Doc {
    pub key: String,
    pub version: u64,
    pub body: Value,
}

/// A read of a collection's documents by a date they hold ([`Documents::newest_by_date`]).
#[derive(Debug, Clone)]
pub struct DateQuery<'a> {
    pub tenant: &'a str,
    pub collection: &'a str,
    /// The field holding the document's date, RFC 3339. A document without a readable date
    /// there is never returned.
    pub field: &'a str,
    /// Inclusive lower bound of the date.
    pub from: DateTime<Utc>,
    /// Exclusive upper bound of the date.
    pub to: DateTime<Utc>,
    /// Documents matching it are taken whatever their date.
    pub or: Option<&'a Filter>,
    pub limit: usize,
}

/// The first documents of a [`DateQuery`], with the number of all that matched.
#[derive(Debug, Clone, Default)]
pub struct DatedPage {
    pub docs: Vec<Doc>,
    pub total: usize,
}

/// Documents, each in one collection of one tenant, keyed by text.
#[async_trait]
pub trait Documents: Send + Sync + 'static {
    async fn get(&self, tenant: &str, collection: &str, key: &str) -> StoreResult<Option<Doc>>;

    /// Documents in key order, after `after`, matching `filter`, at most `limit`.
    async fn list(
        &self,
        tenant: &str,
        collection: &str,
        filter: &Filter,
        after: Option<&str>,
        limit: usize,
    ) -> StoreResult<Vec<Doc>>;

    /// The documents whose date lies in the query's window, plus those matching its `or`
    /// filter whatever their date, newest first (ties by key, descending): the first `limit`,
    /// with the number of all. Adapters that can order and count where the data lives
    /// override this; the default reads the whole collection (up to [`READ_ALL`]).
    async fn newest_by_date(&self, q: &DateQuery<'_>) -> StoreResult<DatedPage> {
        let docs = self
            .list(q.tenant, q.collection, &Filter::all(), None, READ_ALL + 1)
            .await?;
        let docs = All::of_list(docs, q.tenant, q.collection).items;
        let mut dated: Vec<(DateTime<Utc>, Doc)> = docs
            .into_iter()
            .filter_map(|d| Some((doc_time(&d.body, q.field)?, d)))
            .filter(|(t, d)| {
                (*t >= q.from && *t < q.to) || q.or.is_some_and(|f| f.matches(&d.body))
            })
            .collect();
        let total = dated.len();
        dated.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| b.1.key.cmp(&a.1.key)));
        dated.truncate(q.limit);
        Ok(DatedPage {
            docs: dated.into_iter().map(|(_, d)| d).collect(),
            total,
        })
    }

    /// Unconditional puts (seeding, collection).
    async fn put(
        &self,
        tenant: &str,
        collection: &str,
        docs: Vec<(String, Value)>,
    ) -> StoreResult<()>;
}

/// The RFC 3339 date in `field` of a document body, if it holds one.
pub fn doc_time(body: &Value, field: &str) -> Option<DateTime<Utc>> {
    let text = body.get(field)?.as_str()?;
    DateTime::parse_from_rfc3339(text)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

/// The collections whose documents age out, each with the field dating a document's end: an
/// ended document leaves the store the retention (`NETOPS_RETENTION_DAYS`) after that date
/// (DynamoDB TTL, the embedded store's sweep); one still open (no date there) stays.
pub const AGING: [(&str, &str); 3] = [
    ("netdiag_alerts", "resolved_at"),
    ("monitor_incidents", "resolved_at"),
    ("siem_incidents", "closed_at"),
];

/// When a document of `collection` ended, for the collections of [`AGING`].
pub fn ended_at(collection: &str, body: &Value) -> Option<DateTime<Utc>> {
    let (_, field) = AGING.iter().find(|(c, _)| *c == collection)?;
    doc_time(body, field)
}
