//! What the tests write: two tenants, times within the retention of every adapter, and
//! records, aggregates and log entries built in one line.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use netops_shared::store::{Filter, Record, Rollup, SeriesQuery, Stores, WriteLogEntry};
use serde_json::{Value, json};

pub const ACME: &str = "acme";
pub const GLOBEX: &str = "globex";

pub const HOUR: i64 = 3_600_000;
pub const DAY: i64 = 24 * HOUR;

/// The start of the UTC day three days ago, ms: the data of the tests lies in the days after
/// it, well within the retention (the embedded store sweeps older records as it opens).
pub fn day0() -> i64 {
    let now = Utc::now().timestamp_millis();
    now.div_euclid(DAY) * DAY - 3 * DAY
}

pub fn record(partition: &str, ts: i64, id: &str, body: Value) -> Record {
    Record {
        partition: partition.into(),
        ts,
        id: id.into(),
        body,
    }
}

pub fn rollup(hour: i64, key: &str, dims: Value, measures: &[(&str, f64)]) -> Rollup {
    Rollup {
        hour,
        key: key.into(),
        dims: dims.into(),
        measures: measures.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
    }
}

pub fn measures(of: &[(&str, f64)]) -> BTreeMap<String, f64> {
    of.iter().map(|(k, v)| (k.to_string(), *v)).collect()
}

/// A log entry of an accepted write of `tenant`, kept a day.
pub fn entry(tenant: &str, request_id: &str) -> WriteLogEntry {
    let at = Utc::now();
    WriteLogEntry {
        tenant: tenant.into(),
        at,
        request_id: request_id.into(),
        token_name: "ops".into(),
        method: "POST".into(),
        path: "/api/v1/alerts/42/ack".into(),
        body: json!({"note": request_id}),
        status: 200,
        expires_at: at.timestamp() + 86_400,
        ..WriteLogEntry::default()
    }
}

/// A time `ms` milliseconds after `t`.
pub fn after(t: DateTime<Utc>, ms: i64) -> DateTime<Utc> {
    t + chrono::Duration::milliseconds(ms)
}

/// The keys of documents, in the order given.
pub fn keys(docs: &[netops_shared::store::Doc]) -> Vec<&str> {
    docs.iter().map(|d| d.key.as_str()).collect()
}

/// `(partition, ts, id)` of records, in the order given.
pub fn ids(records: &[Record]) -> Vec<(String, i64, String)> {
    records
        .iter()
        .map(|r| (r.partition.clone(), r.ts, r.id.clone()))
        .collect()
}

/// A newest-first read of `series` of `tenant` over `[from, to)`.
pub fn query<'a>(
    tenant: &'a str,
    series: &'a str,
    partition: Option<&'a str>,
    from: i64,
    to: i64,
    filter: &'a Filter,
    limit: usize,
) -> SeriesQuery<'a> {
    SeriesQuery {
        tenant,
        series,
        partition,
        from,
        to,
        filter,
        after: None,
        limit,
    }
}

/// Every record of a read, walked page by page from the position each page hands on.
pub async fn walk(stores: &Stores, first: SeriesQuery<'_>, bounded: bool) -> Vec<Record> {
    let mut out = Vec::new();
    let mut after = None;
    for _ in 0..10_000 {
        let q = SeriesQuery {
            after: after.as_ref(),
            ..first.clone()
        };
        let page = if bounded {
            stores.series.scan_bounded(&q).await
        } else {
            stores.series.scan(&q).await
        }
        .expect("scan");
        assert!(
            page.records.len() <= q.limit,
            "a page holds at most its limit"
        );
        out.extend(page.records);
        match page.next {
            Some(next) => after = Some(next),
            None => return out,
        }
    }
    panic!("the pages never end");
}

/// A token of `tenant` named `name`, valid a day, no scope, made as `netops token create`
/// makes it.
pub async fn new_token(s: &Stores, tenant: &str, name: &str) -> netops_shared::store::TokenRecord {
    let (_, token) = netops_shared::auth::create_token(
        s.tokens.as_ref(),
        tenant,
        name,
        vec![],
        chrono::Duration::days(1),
    )
    .await
    .expect("token");
    token
}

/// The tenant's active token `name` rotated as `netops token rotate` does: the new secret and
/// its record.
pub async fn rotated(
    s: &Stores,
    tenant: &str,
    name: &str,
    overlap: chrono::Duration,
) -> (String, netops_shared::store::TokenRecord) {
    netops_shared::auth::rotate_token(s.tokens.as_ref(), tenant, name, overlap)
        .await
        .expect("rotate")
        .expect("an active token to rotate")
}
