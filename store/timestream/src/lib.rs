//! The Timestream option for series reads (aws-sdk-timestreamquery), selected with
//! `NETOPS_SERIES_STORE=timestream`, never the default: AWS closed Timestream for
//! LiveAnalytics to new customers on 2025-06-20, so it serves accounts that already have it.
//!
//! [`TimestreamSeries`] is a series read port alone, which takes the place of the main store's
//! in the state: reads of the series named in the configuration go to Timestream, those of
//! other series to the port it replaced; every other port, and every write, stays with the
//! main store. Each series is a
//! Timestream table of the configured database, one multi-measure record per series record:
//! dimensions `tenant`, `partition` and `id`, `time` in milliseconds, measure `body`
//! (VARCHAR, the record's JSON). The collector that writes those tables is not part of the API.
//!
//! A read is one SQL query, newest first (`time DESC, id DESC`, the embedded order), paged
//! by a hand-written `NextToken` loop; rows are parsed through their `ColumnInfo` into typed
//! [`Cell`]s ([`cells`]); the query is built in [`sql`]. Predicates are checked with [`Filter::matches`] on the decoded body, so the
//! query carries `LIMIT` only when there is no predicate.

mod cells;
mod sql;

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use async_trait::async_trait;
use aws_sdk_timestreamquery::Client;
use aws_sdk_timestreamquery::error::{ProvideErrorMetadata, SdkError};
use serde_json::Value;

use cells::data_err;
pub use cells::{Cell, parse_datum, parse_rows, parse_timestamp};
pub use sql::series_sql;

pub use netops_store::config::TimestreamConfig;
use netops_store::{Record, SeriesPage, SeriesQuery, SeriesRead, StoreError, StoreResult, Stores};

/// Puts Timestream's series reads in the place of `stores`' own, for the series `config`
/// names (`NETOPS_SERIES_STORE=timestream`); every other series is still read where it was.
pub async fn read_series_from_timestream(
    stores: &mut Stores,
    config: &TimestreamConfig,
) -> StoreResult<()> {
    let main = stores.series.clone();
    stores.series = Arc::new(TimestreamSeries::connect(main, config).await?);
    Ok(())
}

/// Series reads from Timestream, for the series the configuration names; the reads of every
/// other series go to the series port it replaces (`others`).
pub struct TimestreamSeries {
    others: Arc<dyn SeriesRead>,
    client: Client,
    database: String,
    series: HashSet<String>,
    calls: Arc<AtomicU64>,
}

impl TimestreamSeries {
    pub async fn connect(
        others: Arc<dyn SeriesRead>,
        config: &TimestreamConfig,
    ) -> StoreResult<Self> {
        let sdk = netops_store_dynamodb::sdk_config(
            config.region.as_deref(),
            config.endpoint.as_deref(),
            std::time::Duration::from_secs(netops_store::config::STORE_TIMEOUT_SECS),
        )
        .await?;
        Ok(Self::with_client(others, Client::new(&sdk), config))
    }

    /// Over a given client (endpoint discovery, when the account needs it, is set up by the
    /// caller with `Client::with_endpoint_discovery_enabled`).
    pub fn with_client(
        others: Arc<dyn SeriesRead>,
        client: Client,
        config: &TimestreamConfig,
    ) -> Self {
        Self {
            others,
            client,
            database: config.database.clone(),
            series: config.series.iter().cloned().collect(),
            calls: Arc::new(AtomicU64::new(0)),
        }
    }

    /// Query requests sent so far (one per page).
    pub fn calls(&self) -> u64 {
        self.calls.load(Ordering::Relaxed)
    }

    async fn query_page(
        &self,
        sql: &str,
        next: Option<String>,
    ) -> StoreResult<aws_sdk_timestreamquery::operation::query::QueryOutput> {
        self.calls.fetch_add(1, Ordering::Relaxed);
        self.client
            .query()
            .query_string(sql)
            .set_next_token(next)
            .send()
            .await
            .map_err(|e: SdkError<_>| match e.code() {
                Some(code) => {
                    StoreError::Backend(format!("timestream {code}: {}", e.message().unwrap_or("")))
                }
                None => StoreError::Backend(format!("timestream: {e:?}")),
            })
    }

    /// Runs the read: follows `NextToken` until `limit + 1` records match or the result ends.
    async fn scan_timestream(&self, q: &SeriesQuery<'_>) -> StoreResult<SeriesPage> {
        let sql = series_sql(&self.database, q);
        let want = q.limit.saturating_add(1);
        let mut records = Vec::new();
        let mut next: Option<String> = None;
        loop {
            let page = self.query_page(&sql, next.take()).await?;
            for row in parse_rows(page.column_info(), page.rows())? {
                let text = |k: &str| {
                    row.get(k)
                        .and_then(Cell::as_str)
                        .ok_or_else(|| data_err(format!("column {k} missing or not text")))
                };
                let ts = match row.get("time") {
                    Some(Cell::Timestamp(t)) => *t,
                    _ => return Err(data_err("column time missing or not a timestamp")),
                };
                let body: Value =
                    serde_json::from_str(text("body")?).map_err(|e| data_err(e.to_string()))?;
                if !q.filter.matches(&body) {
                    continue;
                }
                records.push(Record {
                    partition: text("partition")?.to_owned(),
                    ts,
                    id: text("id")?.to_owned(),
                    body,
                });
                if records.len() >= want {
                    break;
                }
            }
            // A page may be empty while the query still runs: keep following the token.
            match page.next_token {
                Some(t) if records.len() < want && !t.is_empty() => next = Some(t),
                _ => break,
            }
        }
        Ok(SeriesPage::cut(records, q.limit))
    }
}

#[async_trait]
impl SeriesRead for TimestreamSeries {
    async fn scan(&self, query: &SeriesQuery<'_>) -> StoreResult<SeriesPage> {
        if self.series.contains(query.series) {
            self.scan_timestream(query).await
        } else {
            self.others.scan(query).await
        }
    }
}
