//! Storage ports. Modules never write backend code: they use these primitives, which each
//! adapter implements once. They follow DynamoDB's access patterns so that every primitive
//! maps onto a key lookup or a partition + sort-key range:
//!
//! - **documents** by `(tenant, collection, key)`, versioned for conditional updates;
//! - **series**: time-ordered records by `(tenant, series, partition)`, read newest first over
//!   a time range with simple predicates, resumable from a [`Position`];
//! - **rollups**: hourly aggregates by `(tenant, series, hour, dimension key)`, measures added;
//! - **counters**: atomic increments with an expiry (the rate limit);
//! - **writes**: conditional state changes committed together with their write-log entry.

pub mod dynamo;
pub mod filter;
pub mod memory;
#[cfg(feature = "embedded")]
pub mod sqlite;
#[cfg(feature = "timestream")]
pub mod timestream;

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use filter::{Filter, Pred};

use crate::scope::Scope;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The backend failed (I/O, SQL, SDK). Never shown to callers.
    #[error("store backend: {0}")]
    Backend(String),
    /// A conditional change found another state than expected; nothing was written.
    #[error("condition failed")]
    ConditionFailed,
    /// A stored item does not have the expected shape.
    #[error("stored data: {0}")]
    Data(String),
    /// An item that must be unique exists already.
    #[error("already exists")]
    Exists,
}

pub type StoreResult<T> = Result<T, StoreError>;

/// A token as stored: only the SHA-256 of the secret is kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenRecord {
    pub hash: String,
    pub tenant: String,
    pub name: String,
    pub scopes: Vec<Scope>,
    pub created_at: i64,
    pub expires_at: i64,
    pub revoked_at: Option<i64>,
}

/// A versioned JSON document.
#[derive(Debug, Clone, PartialEq)]
pub struct Doc {
    pub key: String,
    pub version: u64,
    pub body: Value,
}

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

/// An hourly aggregate: measures summed over one hour and one combination of dimensions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Rollup {
    /// Start of the hour, ms.
    pub hour: i64,
    /// Identifies the combination of dimensions within the hour.
    pub key: String,
    /// Shared: the rows of one combination carry the same dimensions, so an adapter may
    /// decode them once per read.
    pub dims: Arc<Value>,
    pub measures: BTreeMap<String, f64>,
}

/// Adds `measures` into `sums`, name by name.
pub(crate) fn add_into(sums: &mut BTreeMap<String, f64>, measures: BTreeMap<String, f64>) {
    for (name, v) in measures {
        *sums.entry(name).or_insert(0.0) += v;
    }
}

/// An index by text of the rows being added up: read once per aggregate, so hashed fast
/// (the texts come from the store, not from callers).
type TextIndex = std::collections::HashMap<String, usize, foldhash::fast::RandomState>;

/// Rollup rows added up per dimension key ([`Store::rollup_sums`]).
#[derive(Default)]
pub(crate) struct KeySums {
    index: TextIndex,
    rows: Vec<Rollup>,
}

impl KeySums {
    /// Adds one aggregate: `dims` is called for the first aggregate of a key only, `measures`
    /// adds the aggregate's measures into the key's sums.
    pub(crate) fn add(
        &mut self,
        hour: i64,
        key: &str,
        dims: impl FnOnce() -> StoreResult<Arc<Value>>,
        measures: impl FnOnce(&mut BTreeMap<String, f64>) -> StoreResult<()>,
    ) -> StoreResult<()> {
        let i = match self.index.get(key) {
            Some(&i) => {
                self.rows[i].hour = self.rows[i].hour.max(hour);
                i
            }
            None => {
                self.index.insert(key.to_owned(), self.rows.len());
                self.rows.push(Rollup {
                    hour,
                    key: key.to_owned(),
                    dims: dims()?,
                    measures: BTreeMap::new(),
                });
                self.rows.len() - 1
            }
        };
        measures(&mut self.rows[i].measures)
    }

    pub(crate) fn into_rows(mut self) -> Vec<Rollup> {
        self.rows.sort_by(|a, b| a.key.cmp(&b.key));
        self.rows
    }
}

/// The aggregates of a window whose dimensions agree on the grouping ones, added up
/// ([`Store::rollup_groups`]).
#[derive(Debug, Clone, PartialEq)]
pub struct RollupGroup {
    /// The grouping dimensions' values, in the order asked (null where an aggregate lacks one).
    pub dims: Vec<Value>,
    /// How many distinct dimension keys the group covers.
    pub keys: usize,
    /// Start of the hour of its latest aggregate, ms.
    pub hour: i64,
    pub measures: BTreeMap<String, f64>,
}

/// The values of the `by` dimensions of `dims`, null where absent.
pub(crate) fn pick(dims: &Value, by: &[&str]) -> Vec<Value> {
    by.iter()
        .map(|f| dims.get(f).cloned().unwrap_or(Value::Null))
        .collect()
}

/// Rollup rows added up per group of dimensions ([`Store::rollup_groups`]).
pub(crate) struct Groups<'a> {
    by: &'a [&'a str],
    /// Each key seen, with its group.
    keys: TextIndex,
    /// Each group by the JSON text of its dimensions.
    index: TextIndex,
    groups: Vec<RollupGroup>,
}

impl<'a> Groups<'a> {
    pub(crate) fn new(by: &'a [&'a str]) -> Self {
        Groups {
            by,
            keys: Default::default(),
            index: Default::default(),
            groups: Vec::new(),
        }
    }

    /// Adds one aggregate: `dims` (given the grouping names, it returns their values) is
    /// called for the first aggregate of a key only, `measures` adds the aggregate's
    /// measures into its group's sums.
    pub(crate) fn add(
        &mut self,
        hour: i64,
        key: &str,
        dims: impl FnOnce(&[&str]) -> StoreResult<Vec<Value>>,
        measures: impl FnOnce(&mut BTreeMap<String, f64>) -> StoreResult<()>,
    ) -> StoreResult<()> {
        let i = match self.keys.get(key) {
            Some(&i) => i,
            None => {
                let dims = dims(self.by)?;
                let id =
                    serde_json::to_string(&dims).map_err(|e| StoreError::Data(e.to_string()))?;
                let i = match self.index.get(&id) {
                    Some(&i) => i,
                    None => {
                        self.index.insert(id, self.groups.len());
                        self.groups.push(RollupGroup {
                            dims,
                            keys: 0,
                            hour,
                            measures: BTreeMap::new(),
                        });
                        self.groups.len() - 1
                    }
                };
                self.groups[i].keys += 1;
                self.keys.insert(key.to_owned(), i);
                i
            }
        };
        let group = &mut self.groups[i];
        group.hour = group.hour.max(hour);
        measures(&mut group.measures)
    }

    /// The groups in the order of their dimensions' JSON text.
    pub(crate) fn into_groups(self) -> Vec<RollupGroup> {
        let mut order: Vec<_> = self.index.into_iter().collect();
        order.sort_unstable();
        let mut groups: Vec<Option<RollupGroup>> = self.groups.into_iter().map(Some).collect();
        order
            .into_iter()
            .filter_map(|(_, i)| groups[i].take())
            .collect()
    }
}

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
}

/// One entry of the write log (spec 1: every write is logged with its request body;
/// DECISIONS "Writes and the write log": bounded, see [`crate::write`]). Printed as is by
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

/// How long a rate-limit counter is kept after its window ends, seconds.
pub const COUNTER_GRACE_SECS: i64 = 3600;

/// Rate-limit counters. Every store keeps them, so that all functions and instances share one
/// count; the one local process counts in its own memory instead ([`memory::ProcessCounters`]).
#[async_trait]
pub trait Counters: Send + Sync + 'static {
    /// Adds one to `key` and returns the new value; the counter is dropped after `expires_at` (s)
    /// plus [`COUNTER_GRACE_SECS`].
    async fn incr(&self, key: &str, expires_at: i64) -> StoreResult<u64>;
}

/// The store: every primitive the modules use.
#[async_trait]
pub trait Store: Counters {
    // Tokens.
    async fn token_by_hash(&self, hash: &str) -> StoreResult<Option<TokenRecord>>;
    /// Fails with [`StoreError::Exists`] when the tenant has an active token of that name.
    async fn insert_token(&self, token: &TokenRecord) -> StoreResult<()>;
    /// Revokes the tenant's active token of that name; false when there is none.
    async fn revoke_token(&self, tenant: &str, name: &str, at: i64) -> StoreResult<bool>;
    async fn list_tokens(&self, tenant: &str) -> StoreResult<Vec<TokenRecord>>;

    // Documents.
    async fn get_doc(&self, tenant: &str, collection: &str, key: &str) -> StoreResult<Option<Doc>>;
    /// Documents in key order, after `after`, matching `filter`, at most `limit`.
    async fn list_docs(
        &self,
        tenant: &str,
        collection: &str,
        filter: &Filter,
        after: Option<&str>,
        limit: usize,
    ) -> StoreResult<Vec<Doc>>;
    /// The documents whose RFC 3339 date `time_field` lies in `[from, to)`, plus those
    /// matching `also` whatever their date; newest first (ties by key, descending), at most
    /// `limit`, with the number of all such documents. A document without a readable date
    /// there is left out. Adapters that can order and count where the data lives override
    /// this; the default reads the whole collection.
    #[allow(clippy::too_many_arguments)]
    async fn newest_docs(
        &self,
        tenant: &str,
        collection: &str,
        time_field: &'static str,
        from: chrono::DateTime<chrono::Utc>,
        to: chrono::DateTime<chrono::Utc>,
        also: Option<&Filter>,
        limit: usize,
    ) -> StoreResult<(Vec<Doc>, usize)> {
        let docs = self
            .list_docs(tenant, collection, &Filter::all(), None, usize::MAX)
            .await?;
        let mut dated: Vec<(chrono::DateTime<chrono::Utc>, Doc)> = docs
            .into_iter()
            .filter_map(|d| Some((doc_time(&d.body, time_field)?, d)))
            .filter(|(t, d)| (*t >= from && *t < to) || also.is_some_and(|f| f.matches(&d.body)))
            .collect();
        let total = dated.len();
        dated.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| b.1.key.cmp(&a.1.key)));
        dated.truncate(limit);
        Ok((dated.into_iter().map(|(_, d)| d).collect(), total))
    }
    /// Unconditional puts (seeding, collection).
    async fn put_docs(
        &self,
        tenant: &str,
        collection: &str,
        docs: Vec<(String, Value)>,
    ) -> StoreResult<()>;

    // Series.
    async fn append(&self, tenant: &str, series: &str, records: Vec<Record>) -> StoreResult<()>;
    async fn scan(&self, query: &SeriesQuery<'_>) -> StoreResult<SeriesPage>;

    // Rollups.
    /// Adds the measures into the existing aggregates (or creates them).
    async fn add_rollups(&self, tenant: &str, series: &str, rows: Vec<Rollup>) -> StoreResult<()>;
    /// Bulk load of aggregates that do not exist yet (a tenant being seeded after
    /// [`Store::clear_tenant`]): the same result as [`Store::add_rollups`] there, but an
    /// adapter may write each aggregate whole, in batches, instead of adding into it.
    async fn load_rollups(&self, tenant: &str, series: &str, rows: Vec<Rollup>) -> StoreResult<()> {
        self.add_rollups(tenant, series, rows).await
    }
    /// Aggregates with `from <= hour < to`, matching `filter` on their dimensions.
    async fn rollups(
        &self,
        tenant: &str,
        series: &str,
        from: i64,
        to: i64,
        filter: &Filter,
    ) -> StoreResult<Vec<Rollup>>;

    /// [`Store::rollups`] added up per dimension key: one row per key, holding the hour of
    /// its latest aggregate, the dimensions of its first and the sums of its measures, in key
    /// order. For reads of long windows that want totals only; adapters that can add up where
    /// the data lives override this, the default adds the rows up here.
    async fn rollup_sums(
        &self,
        tenant: &str,
        series: &str,
        from: i64,
        to: i64,
        filter: &Filter,
    ) -> StoreResult<Vec<Rollup>> {
        let mut sums = KeySums::default();
        for row in self.rollups(tenant, series, from, to, filter).await? {
            sums.add(
                row.hour,
                &row.key,
                || Ok(row.dims),
                |sums| {
                    add_into(sums, row.measures);
                    Ok(())
                },
            )?;
        }
        Ok(sums.into_rows())
    }

    /// The aggregates of a window added up per group: those whose dimensions agree on the
    /// `by` ones form a group, which holds their values, how many distinct keys it covers,
    /// the hour of its latest aggregate and the sums of its measures; groups in the order of
    /// their dimensions. For rankings over many combinations (top domains of many machines):
    /// adapters that can read dimensions in place override this, the default groups the
    /// [`Store::rollup_sums`] rows.
    async fn rollup_groups(
        &self,
        tenant: &str,
        series: &str,
        from: i64,
        to: i64,
        filter: &Filter,
        by: &[&str],
    ) -> StoreResult<Vec<RollupGroup>> {
        let mut groups = Groups::new(by);
        for row in self.rollup_sums(tenant, series, from, to, filter).await? {
            groups.add(
                row.hour,
                &row.key,
                |by| Ok(pick(&row.dims, by)),
                |sums| {
                    add_into(sums, row.measures);
                    Ok(())
                },
            )?;
        }
        Ok(groups.into_groups())
    }

    // Writes.
    /// Commits the log entry and the changes together, or nothing. With a failed
    /// expectation nothing is written and [`StoreError::ConditionFailed`] is returned.
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
    async fn write_log(&self, tenant: &str) -> StoreResult<Vec<WriteLogEntry>>;

    // Settings of the deployment itself.
    /// A random secret of 32 bytes created on first use and kept (cursor signing).
    async fn secret(&self, name: &str) -> StoreResult<Vec<u8>>;
    /// True when the store holds no tenant data yet.
    async fn is_empty(&self) -> StoreResult<bool>;
    /// Removes a tenant's data (documents, series, rollups); tokens and the write log stay.
    async fn clear_tenant(&self, tenant: &str) -> StoreResult<()>;
}

pub type DynStore = Arc<dyn Store>;

/// The RFC 3339 date in `field` of a document body, if it holds one.
pub fn doc_time(body: &Value, field: &str) -> Option<chrono::DateTime<chrono::Utc>> {
    let text = body.get(field)?.as_str()?;
    chrono::DateTime::parse_from_rfc3339(text)
        .ok()
        .map(|t| t.with_timezone(&chrono::Utc))
}

/// Milliseconds of a date-time.
pub fn ms(t: chrono::DateTime<chrono::Utc>) -> i64 {
    t.timestamp_millis()
}
