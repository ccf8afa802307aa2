//! The Timestream option for series reads (aws-sdk-timestreamquery), selected with
//! `NETOPS_SERIES_STORE=timestream`, never the default: AWS closed Timestream for
//! LiveAnalytics to new customers on 2025-06-20, so it serves accounts that already have it.
//!
//! [`TimestreamSeries`] wraps the main store: reads of the series named in the configuration
//! go to Timestream, everything else (and every write) to the main store. Each series is a
//! Timestream table of the configured database, one multi-measure record per series record:
//! dimensions `tenant`, `partition` and `id`, `time` in milliseconds, measure `body`
//! (VARCHAR, the record's JSON). The collector that writes those tables is not part of the API.
//!
//! A read is one SQL query, newest first (`time DESC, id DESC`, the embedded order), paged
//! by a hand-written `NextToken` loop; rows are parsed through their `ColumnInfo` into typed
//! [`Cell`]s. Predicates are checked with [`Filter::matches`] on the decoded body, so the
//! query carries `LIMIT` only when there is no predicate.

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use async_trait::async_trait;
use aws_sdk_timestreamquery::Client;
use aws_sdk_timestreamquery::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_timestreamquery::types::{ColumnInfo, Datum, ScalarType, Type};
use serde_json::Value;

use super::*;
pub use crate::config::TimestreamConfig;

/// A typed value of a query result, parsed according to its column's type.
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    Null,
    Varchar(String),
    BigInt(i64),
    Integer(i64),
    Double(f64),
    Boolean(bool),
    /// Milliseconds since the epoch (Timestream returns nanosecond text, UTC).
    Timestamp(i64),
    /// Types kept as their text: DATE, TIME, intervals, UNKNOWN.
    Text(String),
    Array(Vec<Cell>),
    Row(Vec<Cell>),
    /// `(time ms, value)` points of a TIMESERIES column.
    TimeSeries(Vec<(i64, Cell)>),
}

impl Cell {
    fn as_str(&self) -> Option<&str> {
        match self {
            Cell::Varchar(s) | Cell::Text(s) => Some(s),
            _ => None,
        }
    }
}

fn data_err(msg: impl Into<String>) -> StoreError {
    StoreError::Data(msg.into())
}

/// Parses Timestream's timestamp text (`2024-05-01 12:34:56.789000000`) into milliseconds.
pub fn parse_timestamp(text: &str) -> StoreResult<i64> {
    let t = chrono::NaiveDateTime::parse_from_str(text, "%Y-%m-%d %H:%M:%S%.f")
        .map_err(|_| data_err(format!("bad timestamp '{text}'")))?;
    Ok(t.and_utc().timestamp_millis())
}

/// One datum, read according to the column type.
pub fn parse_datum(ty: Option<&Type>, datum: &Datum) -> StoreResult<Cell> {
    if datum.null_value() == Some(true) {
        return Ok(Cell::Null);
    }
    let Some(ty) = ty else {
        return Err(data_err("column without a type"));
    };
    if let Some(inner) = ty.array_column_info() {
        return datum
            .array_value()
            .iter()
            .map(|d| parse_datum(inner.r#type(), d))
            .collect::<StoreResult<_>>()
            .map(Cell::Array);
    }
    if !ty.row_column_info().is_empty() {
        let row = datum
            .row_value()
            .ok_or_else(|| data_err("row column without a row value"))?;
        if row.data().len() != ty.row_column_info().len() {
            return Err(data_err("row value and row type differ in length"));
        }
        return ty
            .row_column_info()
            .iter()
            .zip(row.data())
            .map(|(c, d)| parse_datum(c.r#type(), d))
            .collect::<StoreResult<_>>()
            .map(Cell::Row);
    }
    if let Some(inner) = ty.time_series_measure_value_column_info() {
        return datum
            .time_series_value()
            .iter()
            .map(|p| {
                let value = match p.value() {
                    Some(v) => parse_datum(inner.r#type(), v)?,
                    None => Cell::Null,
                };
                Ok((parse_timestamp(p.time())?, value))
            })
            .collect::<StoreResult<_>>()
            .map(Cell::TimeSeries);
    }
    let scalar = ty
        .scalar_type()
        .ok_or_else(|| data_err("column type without a kind"))?;
    let text = datum
        .scalar_value()
        .ok_or_else(|| data_err("scalar column without a value"))?;
    let bad = || data_err(format!("'{text}' is not a valid {}", scalar.as_str()));
    Ok(match scalar {
        ScalarType::Varchar => Cell::Varchar(text.to_owned()),
        ScalarType::Bigint => Cell::BigInt(text.parse().map_err(|_| bad())?),
        ScalarType::Integer => Cell::Integer(text.parse().map_err(|_| bad())?),
        ScalarType::Double => Cell::Double(text.parse().map_err(|_| bad())?),
        ScalarType::Boolean => Cell::Boolean(text.parse().map_err(|_| bad())?),
        ScalarType::Timestamp => Cell::Timestamp(parse_timestamp(text)?),
        _ => Cell::Text(text.to_owned()),
    })
}

/// The rows of a result as maps from column name to typed cell.
pub fn parse_rows(
    columns: &[ColumnInfo],
    rows: &[aws_sdk_timestreamquery::types::Row],
) -> StoreResult<Vec<HashMap<String, Cell>>> {
    rows.iter()
        .map(|row| {
            if row.data().len() != columns.len() {
                return Err(data_err("row and column info differ in length"));
            }
            columns
                .iter()
                .zip(row.data())
                .map(|(c, d)| {
                    let name = c.name().ok_or_else(|| data_err("column without a name"))?;
                    Ok((name.to_owned(), parse_datum(c.r#type(), d)?))
                })
                .collect()
        })
        .collect()
}

use std::collections::HashMap;

/// A SQL string literal.
fn literal(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

/// A quoted identifier.
fn ident(s: &str) -> String {
    format!("\"{}\"", s.replace('"', "\"\""))
}

/// The query for one newest-first read (every shape: with or without partition, position,
/// and `LIMIT`).
pub fn series_sql(database: &str, q: &SeriesQuery<'_>) -> String {
    let mut sql = format!(
        "SELECT \"partition\", \"id\", \"time\", \"body\" FROM {}.{} WHERE \"tenant\" = {} AND \"time\" >= from_milliseconds({}) AND \"time\" < from_milliseconds({})",
        ident(database),
        ident(q.series),
        literal(q.tenant),
        q.from,
        q.to
    );
    if let Some(p) = q.partition {
        sql.push_str(&format!(" AND \"partition\" = {}", literal(p)));
    }
    if let Some(pos) = q.after {
        sql.push_str(&format!(
            " AND (\"time\" < from_milliseconds({ts}) OR (\"time\" = from_milliseconds({ts}) AND \"id\" < {id}))",
            ts = pos.ts,
            id = literal(&pos.id)
        ));
    }
    sql.push_str(" ORDER BY \"time\" DESC, \"id\" DESC");
    if q.filter.0.is_empty() {
        sql.push_str(&format!(" LIMIT {}", q.limit.saturating_add(1)));
    }
    sql
}

/// Series reads from Timestream; every other primitive goes to the wrapped store.
pub struct TimestreamSeries {
    inner: DynStore,
    client: Client,
    database: String,
    series: HashSet<String>,
    calls: Arc<AtomicU64>,
}

impl TimestreamSeries {
    pub async fn connect(inner: DynStore, config: &TimestreamConfig) -> StoreResult<Self> {
        let sdk =
            super::dynamo::sdk_config(config.region.as_deref(), config.endpoint.as_deref()).await;
        Ok(Self::with_client(inner, Client::new(&sdk), config))
    }

    /// Over a given client (endpoint discovery, when the account needs it, is set up by the
    /// caller with `Client::with_endpoint_discovery_enabled`).
    pub fn with_client(inner: DynStore, client: Client, config: &TimestreamConfig) -> Self {
        Self {
            inner,
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
    pub async fn scan_timestream(&self, q: &SeriesQuery<'_>) -> StoreResult<SeriesPage> {
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
        let next = if records.len() > q.limit {
            records.truncate(q.limit);
            records.last().map(|r| Position {
                ts: r.ts,
                id: r.id.clone(),
            })
        } else {
            None
        };
        Ok(SeriesPage { records, next })
    }
}

#[async_trait]
impl Counters for TimestreamSeries {
    async fn incr(&self, key: &str, expires_at: i64) -> StoreResult<u64> {
        self.inner.incr(key, expires_at).await
    }
}

#[async_trait]
impl Store for TimestreamSeries {
    async fn token_by_hash(&self, hash: &str) -> StoreResult<Option<TokenRecord>> {
        self.inner.token_by_hash(hash).await
    }
    async fn insert_token(&self, token: &TokenRecord) -> StoreResult<()> {
        self.inner.insert_token(token).await
    }
    async fn revoke_token(&self, tenant: &str, name: &str, at: i64) -> StoreResult<bool> {
        self.inner.revoke_token(tenant, name, at).await
    }
    async fn list_tokens(&self, tenant: &str) -> StoreResult<Vec<TokenRecord>> {
        self.inner.list_tokens(tenant).await
    }
    async fn get_doc(&self, tenant: &str, collection: &str, key: &str) -> StoreResult<Option<Doc>> {
        self.inner.get_doc(tenant, collection, key).await
    }
    async fn list_docs(
        &self,
        tenant: &str,
        collection: &str,
        filter: &Filter,
        after: Option<&str>,
        limit: usize,
    ) -> StoreResult<Vec<Doc>> {
        self.inner
            .list_docs(tenant, collection, filter, after, limit)
            .await
    }
    async fn put_docs(
        &self,
        tenant: &str,
        collection: &str,
        docs: Vec<(String, Value)>,
    ) -> StoreResult<()> {
        self.inner.put_docs(tenant, collection, docs).await
    }
    async fn append(&self, tenant: &str, series: &str, records: Vec<Record>) -> StoreResult<()> {
        self.inner.append(tenant, series, records).await
    }
    async fn scan(&self, query: &SeriesQuery<'_>) -> StoreResult<SeriesPage> {
        if self.series.contains(query.series) {
            self.scan_timestream(query).await
        } else {
            self.inner.scan(query).await
        }
    }
    async fn add_rollups(&self, tenant: &str, series: &str, rows: Vec<Rollup>) -> StoreResult<()> {
        self.inner.add_rollups(tenant, series, rows).await
    }

    async fn load_rollups(&self, tenant: &str, series: &str, rows: Vec<Rollup>) -> StoreResult<()> {
        self.inner.load_rollups(tenant, series, rows).await
    }
    async fn rollups(
        &self,
        tenant: &str,
        series: &str,
        from: i64,
        to: i64,
        filter: &Filter,
    ) -> StoreResult<Vec<Rollup>> {
        self.inner.rollups(tenant, series, from, to, filter).await
    }
    async fn rollup_sums(
        &self,
        tenant: &str,
        series: &str,
        from: i64,
        to: i64,
        filter: &Filter,
    ) -> StoreResult<Vec<Rollup>> {
        self.inner
            .rollup_sums(tenant, series, from, to, filter)
            .await
    }
    async fn rollup_groups(
        &self,
        tenant: &str,
        series: &str,
        from: i64,
        to: i64,
        filter: &Filter,
        by: &[&str],
    ) -> StoreResult<Vec<RollupGroup>> {
        self.inner
            .rollup_groups(tenant, series, from, to, filter, by)
            .await
    }
    async fn commit(&self, log: WriteLogEntry, changes: Vec<Change>) -> StoreResult<()> {
        self.inner.commit(log, changes).await
    }
    async fn coalesce(
        &self,
        since: chrono::DateTime<chrono::Utc>,
        key: &str,
        log: WriteLogEntry,
    ) -> StoreResult<()> {
        self.inner.coalesce(since, key, log).await
    }
    async fn write_log(&self, tenant: &str) -> StoreResult<Vec<WriteLogEntry>> {
        self.inner.write_log(tenant).await
    }
    async fn secret(&self, name: &str) -> StoreResult<Vec<u8>> {
        self.inner.secret(name).await
    }
    async fn is_empty(&self) -> StoreResult<bool> {
        self.inner.is_empty().await
    }
    async fn clear_tenant(&self, tenant: &str) -> StoreResult<()> {
        self.inner.clear_tenant(tenant).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn query<'a>(
        filter: &'a Filter,
        partition: Option<&'a str>,
        after: Option<&'a Position>,
    ) -> SeriesQuery<'a> {
        SeriesQuery {
            tenant: "acme",
            series: "flows",
            partition,
            from: 1_000,
            to: 2_000,
            filter,
            after,
            limit: 50,
        }
    }

    #[test]
    fn the_sql_of_a_first_page_without_predicates_carries_a_limit_of_one_more() {
        let f = Filter::all();
        assert_eq!(
            series_sql("netops", &query(&f, None, None)),
            "SELECT \"partition\", \"id\", \"time\", \"body\" FROM \"netops\".\"flows\" WHERE \"tenant\" = 'acme' AND \"time\" >= from_milliseconds(1000) AND \"time\" < from_milliseconds(2000) ORDER BY \"time\" DESC, \"id\" DESC LIMIT 51"
        );
    }

    #[test]
    fn the_sql_of_a_partition_resumed_after_a_position_is_strictly_older() {
        let f = Filter::all().and(Pred::Eq("proto", serde_json::json!("TCP")));
        let pos = Position {
            ts: 1_500,
            id: "o'brien".into(),
        };
        let sql = series_sql("db", &query(&f, Some("PAR-LT-0001"), Some(&pos)));
        assert!(sql.contains(" AND \"partition\" = 'PAR-LT-0001'"), "{sql}");
        assert!(
            sql.contains(" AND (\"time\" < from_milliseconds(1500) OR (\"time\" = from_milliseconds(1500) AND \"id\" < 'o''brien'))"),
            "{sql}"
        );
        assert!(
            sql.ends_with("ORDER BY \"time\" DESC, \"id\" DESC"),
            "predicates are checked client-side, so no LIMIT: {sql}"
        );
    }

    #[test]
    fn identifiers_and_literals_are_quoted() {
        let f = Filter::all();
        let mut q = query(&f, None, None);
        q.tenant = "a'; DROP";
        q.series = "we\"ird";
        let sql = series_sql("d", &q);
        assert!(sql.contains("FROM \"d\".\"we\"\"ird\""), "{sql}");
        assert!(sql.contains("\"tenant\" = 'a''; DROP'"), "{sql}");
    }

    #[test]
    fn timestamps_parse_to_milliseconds() {
        assert_eq!(
            parse_timestamp("1970-01-01 00:00:01.500000000").ok(),
            Some(1_500)
        );
        assert_eq!(
            parse_timestamp("2024-05-01 12:00:00").ok(),
            Some(1_714_564_800_000)
        );
        assert!(parse_timestamp("yesterday").is_err());
    }
}
