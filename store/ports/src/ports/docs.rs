//! The documents port: versioned JSON documents by `(tenant, collection, key)`.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::{All, Expect, Filter, READ_ALL, StoreError, StoreResult};

/// A versioned JSON document.
#[derive(Debug, Clone, PartialEq)]
pub struct Doc {
    pub key: String,
    pub version: u64,
    pub body: Value,
}

/// A document as its stored JSON text, for a reader that decodes it straight into its type
/// (the pages of a list route), without the generic [`Value`] tree in between.
#[derive(Debug, Clone, PartialEq)]
pub struct DocText {
    pub key: String,
    pub body: String,
}

/// Documents, each in one collection of one tenant, keyed by text.
#[async_trait]
pub trait Documents: Send + Sync + 'static {
    async fn get(&self, tenant: &str, collection: &str, key: &str) -> StoreResult<Option<Doc>>;

    /// The documents of `keys` that exist, each once, in no particular order: one request per
    /// hundred keys where the adapter can batch them.
    async fn get_many(
        &self,
        tenant: &str,
        collection: &str,
        keys: &[String],
    ) -> StoreResult<Vec<Doc>> {
        let keys = distinct(keys);
        let mut out = Vec::with_capacity(keys.len());
        for key in &keys {
            out.extend(self.get(tenant, collection, key).await?);
        }
        Ok(out)
    }

    /// Documents in key order, after `after`, matching `filter`, at most `limit`.
    async fn list(
        &self,
        tenant: &str,
        collection: &str,
        filter: &Filter,
        after: Option<&str>,
        limit: usize,
    ) -> StoreResult<Vec<Doc>>;

    /// As [`Self::list`], for a page its caller can resume: a store that bills each document
    /// a read examines (DynamoDB) stops once a read has examined a bounded number of them,
    /// and answers the documents it found, fewer than `limit`, with the last key it examined,
    /// after which the next page goes on. A filter few documents match then costs a bounded
    /// read per page instead of the whole collection. The embedded store examines documents
    /// locally, without a bill, and does not stop (`None`). The documents come as their
    /// stored text: a list route decodes each one once, into its type.
    async fn list_bounded(
        &self,
        tenant: &str,
        collection: &str,
        filter: &Filter,
        after: Option<&str>,
        limit: usize,
    ) -> StoreResult<(Vec<DocText>, Option<String>)>;

    /// The documents of a collection that ages out ([`AGING`]) that were in progress at
    /// some time since `since`: those still in progress (no end date), and those that ended
    /// at or after `since`; with no `since`, those in progress only. Unordered. This is what
    /// a window starting at `since` can show, whatever the collection's history: adapters
    /// read it by an index (DynamoDB: an "in progress" partition and the ended documents by
    /// end date); the default reads the whole collection (up to [`READ_ALL`]).
    async fn live_since(
        &self,
        tenant: &str,
        collection: &str,
        since: Option<DateTime<Utc>>,
    ) -> StoreResult<All<Doc>> {
        aging_or_refused(collection)?;
        let docs = self
            .list(tenant, collection, &Filter::all(), None, READ_ALL + 1)
            .await?;
        let mut all = All::of_list(docs, tenant, collection);
        all.items.retain(|d| live(collection, &d.body, since));
        Ok(all)
    }

    /// Unconditional puts (seeding, collection).
    async fn put(
        &self,
        tenant: &str,
        collection: &str,
        docs: Vec<(String, Value)>,
    ) -> StoreResult<()>;

    /// Puts one document if the stored one is as `expect` says (none, or still at the version
    /// read), its version raised by one, outside the write log: how the demo producers change
    /// a document that API writes also change (an alert resolving), so that a write made
    /// between their read and their put is kept. With a failed expectation nothing is
    /// written and [`StoreError::ConditionFailed`] is returned.
    async fn put_if(
        &self,
        tenant: &str,
        collection: &str,
        key: &str,
        body: Value,
        expect: Expect,
    ) -> StoreResult<()>;
}

/// The RFC 3339 date in `field` of a document body, if it holds one.
pub fn doc_time(body: &Value, field: &str) -> Option<DateTime<Utc>> {
    let text = body.get(field)?.as_str()?;
    DateTime::parse_from_rfc3339(text)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

/// A collection whose documents age out: each opens, may end, and leaves the store the
/// retention (`NETOPS_RETENTION_DAYS`) after it ended (DynamoDB TTL, the embedded store's
/// sweep); one still open (no end date) stays.
#[derive(Debug, Clone, Copy)]
pub struct Aging {
    pub collection: &'static str,
    /// The field dating the document's end, RFC 3339; absent or null while in progress.
    pub ended: &'static str,
}

/// The collections whose documents age out.
pub const AGING: [Aging; 3] = [
    Aging {
        collection: "netdiag_alerts",
        ended: "resolved_at",
    },
    Aging {
        collection: "monitor_incidents",
        ended: "resolved_at",
    },
    Aging {
        collection: "siem_incidents",
        ended: "closed_at",
    },
];

/// The collection's entry of [`AGING`], if its documents age out.
pub fn aging(collection: &str) -> Option<&'static Aging> {
    AGING.iter().find(|a| a.collection == collection)
}

/// The collection's entry of [`AGING`], or the error of a read by end date of another
/// collection ([`Documents::live_since`]).
pub fn aging_or_refused(collection: &str) -> StoreResult<&'static Aging> {
    aging(collection).ok_or_else(|| StoreError::Data(format!("{collection} does not age out")))
}

/// Keys sorted, each once ([`Documents::get_many`] reads each once).
pub fn distinct(keys: &[String]) -> Vec<String> {
    let mut keys = keys.to_vec();
    keys.sort();
    keys.dedup();
    keys
}

/// When a document of `collection` ended, for the collections of [`AGING`].
pub fn ended_at(collection: &str, body: &Value) -> Option<DateTime<Utc>> {
    doc_time(body, aging(collection)?.ended)
}

/// Whether a document of an aging collection was in progress at some time since `since`
/// (with no `since`: is in progress now), as [`Documents::live_since`] selects them.
pub fn live(collection: &str, body: &Value, since: Option<DateTime<Utc>>) -> bool {
    match (ended_at(collection, body), since) {
        (None, _) => true,
        (Some(end), Some(since)) => end >= since,
        (Some(_), None) => false,
    }
}
