//! Series in the embedded store: the `series` table, kept in time order, with an index per
//! partition.

use async_trait::async_trait;
use rusqlite::params;
use rusqlite::params_from_iter;
use rusqlite::types::Value as SqlValue;

use super::SqliteStore;
use super::conn::backend;
use super::sql::{filter_sql, json_text, parse_json};
use netops_store::{Record, SeriesPage, SeriesQuery, SeriesRead, SeriesWrite, StoreResult};

/// The SQL of a series read and its parameters: the window newest first, one more record
/// than the page holds (it tells whether another page follows).
fn scan_sql(q: &SeriesQuery<'_>) -> StoreResult<(String, Vec<SqlValue>)> {
    let mut args = vec![
        SqlValue::Text(q.tenant.to_owned()),
        SqlValue::Text(q.series.to_owned()),
    ];
    // One partition: its index, whose order is the partition's time order (left to itself,
    // the planner would walk every partition's records of the window).
    let from_table = match q.partition {
        Some(_) => "series INDEXED BY series_by_part",
        None => "series",
    };
    let mut sql =
        format!("SELECT part, ts, id, body FROM {from_table} WHERE tenant = ? AND series = ?");
    if let Some(p) = q.partition {
        sql.push_str(" AND part = ?");
        args.push(SqlValue::Text(p.to_owned()));
    }
    sql.push_str(" AND ts >= ? AND ts < ?");
    args.push(SqlValue::Integer(q.from));
    args.push(SqlValue::Integer(q.to));
    if let Some(pos) = q.after {
        sql.push_str(" AND (ts < ? OR (ts = ? AND id < ?))");
        args.push(SqlValue::Integer(pos.ts));
        args.push(SqlValue::Integer(pos.ts));
        args.push(SqlValue::Text(pos.id.clone()));
    }
    sql.push_str(&filter_sql(q.filter, "body", &mut args)?);
    sql.push_str(" ORDER BY ts DESC, id DESC LIMIT ?");
    args.push(SqlValue::Integer(q.limit as i64 + 1));
    Ok((sql, args))
}

/// A record as its row is written: the body already JSON text.
pub(super) struct RecordRow {
    partition: String,
    ts: i64,
    id: String,
    body: String,
}

impl From<Record> for RecordRow {
    fn from(r: Record) -> Self {
        Self {
            body: json_text(&r.body),
            partition: r.partition,
            ts: r.ts,
            id: r.id,
        }
    }
}

pub(super) fn insert_records(
    tx: &rusqlite::Transaction<'_>,
    tenant: &str,
    series: &str,
    rows: &[RecordRow],
) -> StoreResult<()> {
    let mut stmt = tx
        .prepare_cached(
            "INSERT OR REPLACE INTO series (tenant, series, part, ts, id, body) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        )
        .map_err(backend)?;
    for r in rows {
        stmt.execute(params![tenant, series, r.partition, r.ts, r.id, r.body])
            .map_err(backend)?;
    }
    Ok(())
}

/// Records encoded per chunk by [`SqliteStore::append`] while the previous chunk is written.
const APPEND_CHUNK: usize = 4096;

#[async_trait]
impl SeriesRead for SqliteStore {
    async fn scan(&self, q: &SeriesQuery<'_>) -> StoreResult<SeriesPage> {
        let (sql, args) = scan_sql(q)?;
        let limit = q.limit;
        self.with(move |c| {
            let mut s = c.prepare_cached(&sql).map_err(backend)?;
            let rows = s
                .query_map(params_from_iter(args), |r| {
                    Ok((
                        r.get::<_, String>(0)?,
                        r.get::<_, i64>(1)?,
                        r.get::<_, String>(2)?,
                        r.get::<_, String>(3)?,
                    ))
                })
                .map_err(backend)?;
            let mut records = Vec::new();
            for row in rows {
                let (partition, ts, id, body) = row.map_err(backend)?;
                records.push(Record {
                    partition,
                    ts,
                    id,
                    body: parse_json(&body)?,
                });
            }
            Ok(SeriesPage::cut(records, limit))
        })
        .await
    }
}

#[async_trait]
impl SeriesWrite for SqliteStore {
    async fn append(&self, tenant: &str, series: &str, records: Vec<Record>) -> StoreResult<()> {
        let (tenant, series) = (tenant.to_owned(), series.to_owned());
        // Bodies are encoded (and the records freed) on this task, a chunk ahead of the
        // inserts on the blocking pool, so a big append keeps two cores busy; all of it
        // lands in one transaction, or none of it.
        let (chunks, mut received) = tokio::sync::mpsc::channel::<Vec<RecordRow>>(2);
        let insert = self.with_write(move |tx| {
            while let Some(rows) = received.blocking_recv() {
                insert_records(tx, &tenant, &series, &rows)?;
            }
            Ok(())
        });
        let encode = async move {
            let mut records = records.into_iter();
            loop {
                let rows: Vec<RecordRow> = records
                    .by_ref()
                    .take(APPEND_CHUNK)
                    .map(RecordRow::from)
                    .collect();
                // An error on the insert side closes the channel; `insert` reports it.
                if rows.is_empty() || chunks.send(rows).await.is_err() {
                    break;
                }
            }
        };
        let ((), inserted) = tokio::join!(encode, insert);
        inserted
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::testing::store;
    use netops_store::{Filter, Position, Pred};

    #[tokio::test]
    async fn series_reads_walk_time_order_or_the_partition_index() {
        let (_d, s) = store();
        let plan = |partition: Option<&'static str>| {
            let filter = Filter::all().and(Pred::Eq("d", json!("inbound")));
            let (sql, args) = scan_sql(&SeriesQuery {
                tenant: "a",
                series: "ev",
                partition,
                from: 0,
                to: 10,
                filter: &filter,
                after: Some(&Position {
                    ts: 5,
                    id: "x".into(),
                }),
                limit: 100,
            })
            .expect("sql");
            s.with(move |c| {
                let mut st = c
                    .prepare(&format!("EXPLAIN QUERY PLAN {sql}"))
                    .map_err(backend)?;
                let rows = st
                    .query_map(params_from_iter(args), |r| r.get::<_, String>(3))
                    .map_err(backend)?
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(backend)?;
                Ok(rows.join("; "))
            })
        };
        let all = plan(None).await.expect("plan");
        assert!(all.contains("USING PRIMARY KEY"), "{all}");
        assert!(!all.contains("TEMP B-TREE"), "{all}");
        let one = plan(Some("m1")).await.expect("plan");
        assert!(one.contains("USING INDEX series_by_part"), "{one}");
        assert!(!one.contains("TEMP B-TREE"), "{one}");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_big_append_lands_whole_across_its_chunks() {
        let (_d, s) = store();
        let n = APPEND_CHUNK * 2 + 7;
        let recs = (0..n)
            .map(|i| Record {
                partition: format!("m{}", i % 5),
                ts: i as i64,
                id: format!("{i:06}"),
                body: json!({"n": i}),
            })
            .collect();
        s.append("a", "big", recs).await.expect("append");
        let page = s
            .scan(&SeriesQuery {
                tenant: "a",
                series: "big",
                partition: None,
                from: 0,
                to: i64::MAX,
                filter: &Filter::all(),
                after: None,
                limit: n + 1,
            })
            .await
            .expect("scan");
        let seen: Vec<i64> = page
            .records
            .iter()
            .map(|r| r.body["n"].as_i64().unwrap_or(-1))
            .collect();
        let expected: Vec<i64> = (0..n as i64).rev().collect();
        assert_eq!(seen, expected);
        assert!(page.next.is_none());
    }

    #[tokio::test]
    async fn scan_pages_newest_first_without_gaps() {
        let (_d, s) = store();
        let recs = (0..25)
            .map(|i| Record {
                partition: format!("m{}", i % 3),
                ts: 1000 + (i / 2) as i64,
                id: format!("{i:03}"),
                body: json!({"n": i, "even": i % 2 == 0}),
            })
            .collect();
        s.append("a", "ev", recs).await.expect("append");
        let filter = Filter::all().and(Pred::Eq("even", json!(true)));
        let mut seen = Vec::new();
        let mut after = None;
        loop {
            let page = s
                .scan(&SeriesQuery {
                    tenant: "a",
                    series: "ev",
                    partition: None,
                    from: 0,
                    to: i64::MAX,
                    filter: &filter,
                    after: after.as_ref(),
                    limit: 4,
                })
                .await
                .expect("scan");
            seen.extend(
                page.records
                    .iter()
                    .map(|r| r.body["n"].as_i64().unwrap_or(-1)),
            );
            match page.next {
                Some(p) => after = Some(p),
                None => break,
            }
        }
        let expected: Vec<i64> = (0..25).rev().filter(|i| i % 2 == 0).collect();
        assert_eq!(seen, expected);
        let other = s
            .scan(&SeriesQuery {
                tenant: "b",
                series: "ev",
                partition: None,
                from: 0,
                to: i64::MAX,
                filter: &Filter::all(),
                after: None,
                limit: 10,
            })
            .await
            .expect("scan");
        assert!(other.records.is_empty());
    }
}
