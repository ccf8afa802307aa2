//! The DynamoDB adapter: every port over two tables (see `infra/README.md` for the table
//! design and the access pattern each key serves), a file per port; the SDK client
//! ([`client`]), items and keys ([`item`]), the requests shared by the ports ([`requests`]:
//! batches, transactions, the paging of every Query) and the tables' creation ([`tables`]) apart.
//!
//! - `{prefix}control`: tokens (by hash; GSI `by_tenant` lists them), token-name guards,
//!   rate-limit counters (atomic `ADD`, TTL), deployment secrets.
//! - `{prefix}data`: documents, time-bucketed series (records packed several to a compressed
//!   item, [`packs`], in four item collections per series and UTC day; GSI `by_partition`
//!   reads one partition), hourly rollups, the write log.
//!
//! Predicates are evaluated here with [`netops_store::Filter::matches`] on the decoded body,
//! page by page, so their semantics are exactly the embedded adapter's. Pages follow
//! `LastEvaluatedKey` inside a call ([`requests::each_item`], [`requests::take_in_order`]
//! for reads of documents that want a page, [`requests::Lane`] for the merged Queries of a
//! series read: each Query asks for about what the page still needs); the
//! position handed back ([`netops_store::Position`] or the document key) is the last item
//! returned, from which the next call rebuilds an `ExclusiveStartKey`.
//!
//! Token lookups are cached per instance for at most `token_cache_secs` (30 s by default), so
//! a revocation made elsewhere takes effect within that time; a revocation made through this
//! instance drops its cache entry at once. Unknown tokens are never cached.

mod client;
mod counters;
mod deployment;
mod docs;
#[cfg(test)]
mod former_layout;
mod ingest;
mod item;
mod once;
mod packs;
#[cfg(test)]
mod read_costs;
mod requests;
mod rollups;
mod series;
mod tables;
mod tokens;
#[cfg(test)]
mod write_costs;
mod writes;

use std::sync::Arc;
use std::time::Duration;

use aws_sdk_dynamodb::Client;

pub use client::http_client;
pub use client::sdk_config;
use client::{CallCounter, Counting};
use tokens::TokenCache;

use netops_store::StoreResult;

pub use netops_store::config::DynamoConfig;

/// The DynamoDB store. Cheap to clone; the SDK client is built once.
#[derive(Clone)]
pub struct DynamoStore {
    client: Client,
    control: Arc<str>,
    data: Arc<str>,
    cache: Arc<TokenCache>,
    calls: Arc<CallCounter>,
    retention_secs: i64,
    /// The most items a bounded series read examines ([`requests::SCAN_BUDGET`]).
    scan_budget: usize,
}

impl DynamoStore {
    /// Connects to the tables named by the configuration (they must exist; see
    /// [`DynamoStore::ensure_tables`]). The SDK client is built here, once. Series items and
    /// rollups carry a TTL of `retention_days` after their time.
    pub async fn connect(config: &DynamoConfig, retention_days: u32) -> StoreResult<Self> {
        let sdk = sdk_config(
            config.region.as_deref(),
            config.endpoint.as_deref(),
            Duration::from_secs(config.timeout_secs),
        )
        .await?;
        let calls = Arc::new(CallCounter::default());
        let conf = aws_sdk_dynamodb::config::Builder::from(&sdk)
            .interceptor(Counting(calls.clone()))
            .build();
        Ok(Self {
            client: Client::from_conf(conf),
            control: format!("{}control", config.table_prefix).into(),
            data: format!("{}data", config.table_prefix).into(),
            cache: Arc::new(TokenCache::new(Duration::from_secs(
                config.token_cache_secs,
            ))),
            calls,
            retention_secs: i64::from(retention_days) * 86_400,
            scan_budget: requests::SCAN_BUDGET,
        })
    }

    /// Requests sent to DynamoDB by this instance so far (retries included).
    pub fn calls(&self) -> u64 {
        self.calls.count()
    }

    pub fn table_names(&self) -> (&str, &str) {
        (&self.control, &self.data)
    }
}
