//! What leaves the embedded file with time, off the request path: expired write-log and
//! ingestion-log entries (`NETOPS_WRITE_LOG_DAYS`), and series records, rollups and ended documents older than the
//! retention (`NETOPS_RETENTION_DAYS`), a batch per transaction so a write never waits long
//! behind one.

use std::sync::{Weak, mpsc};
use std::time::Duration;

use rusqlite::{Connection, OptionalExtension, params};

use super::conn::{Inner, backend};
use super::sql::json_path;
use netops_store::StoreResult;
use netops_store::ports::docs::{AGING, Aging};

/// Rows deleted per transaction (at least: the rows of the last time kept go with their batch).
const SWEEP_BATCH: i64 = 1000;

/// How often the sweep runs while the store is open.
const SWEEP_EVERY: Duration = Duration::from_secs(3600);

/// The tables whose rows age out, with their time column (ms).
const AGED: [(&str, &str); 2] = [("series", "ts"), ("rollups", "hour")];

/// Runs `delete` (which deletes at most about [`SWEEP_BATCH`] rows) until it deletes fewer,
/// giving writers the lock between two batches; returns the rows deleted.
fn in_batches(inner: &Inner, mut delete: impl FnMut() -> StoreResult<usize>) -> StoreResult<usize> {
    let mut swept = 0;
    loop {
        inner.check_file()?;
        let deleted = delete()?;
        swept += deleted;
        if (deleted as i64) < SWEEP_BATCH {
            return Ok(swept);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Deletes the write-log entries, the idempotency keys and the ingestion-log entries expired
/// at `now` (s).
fn expired_entries(inner: &Inner, conn: &Connection, now: i64) -> StoreResult<usize> {
    const DELETES: [&str; 3] = [
        "DELETE FROM idempotency WHERE (tenant, key) IN \
         (SELECT tenant, key FROM idempotency WHERE expires <= ?1 LIMIT ?2)",
        "DELETE FROM writes WHERE seq IN (SELECT seq FROM writes WHERE expires <= ?1 LIMIT ?2)",
        "DELETE FROM ingested WHERE (tenant, batch) IN \
         (SELECT tenant, batch FROM ingested WHERE expires <= ?1 LIMIT ?2)",
    ];
    let mut deleted = 0;
    for sql in DELETES {
        deleted += in_batches(inner, || {
            conn.prepare_cached(sql)
                .and_then(|mut s| s.execute(params![now, SWEEP_BATCH]))
                .map_err(backend)
        })?;
    }
    Ok(deleted)
}

/// Deletes the series records and rollups older than `cutoff` (ms), one (tenant, series)
/// after another: each delete is a range of the primary key's order, never a scan of the
/// table, and the next pair is found by a seek past the last one.
fn aged_rows(inner: &Inner, conn: &Connection, cutoff: i64) -> StoreResult<usize> {
    let mut swept = 0;
    for (table, time) in AGED {
        let next = format!(
            "SELECT tenant, series FROM {table} WHERE (tenant, series) > (?1, ?2) \
             ORDER BY tenant, series LIMIT 1"
        );
        let delete = format!(
            "DELETE FROM {table} WHERE tenant = ?1 AND series = ?2 AND {time} <= \
             (SELECT max({time}) FROM (SELECT {time} FROM {table} \
              WHERE tenant = ?1 AND series = ?2 AND {time} < ?3 ORDER BY {time} LIMIT ?4))"
        );
        let (mut tenant, mut series) = (String::new(), String::new());
        loop {
            let found = conn
                .prepare_cached(&next)
                .and_then(|mut s| {
                    s.query_row(params![tenant, series], |r| Ok((r.get(0)?, r.get(1)?)))
                        .optional()
                })
                .map_err(backend)?;
            let Some(pair) = found else { break };
            (tenant, series) = pair;
            swept += in_batches(inner, || {
                conn.prepare_cached(&delete)
                    .and_then(|mut s| s.execute(params![tenant, series, cutoff, SWEEP_BATCH]))
                    .map_err(backend)
            })?;
        }
    }
    Ok(swept)
}

/// Deletes the documents of the collections that age out ([`AGING`]) that ended before
/// `cutoff` (ms). The documents table is small next to the series: one pass per collection.
fn ended_docs(inner: &Inner, conn: &Connection, cutoff: i64) -> StoreResult<usize> {
    // The cutoff as a Julian day, what SQLite's julianday() gives of any RFC 3339 date.
    let cutoff = cutoff as f64 / 86_400_000.0 + 2_440_587.5;
    let mut swept = 0;
    for Aging { collection, ended } in AGING {
        let path = json_path(ended)?;
        swept += in_batches(inner, || {
            conn.prepare_cached(&format!(
                "DELETE FROM docs WHERE (tenant, coll, key) IN (SELECT tenant, coll, key \
                 FROM docs WHERE coll = ?1 AND julianday(json_extract(body, {path})) < ?2 \
                 LIMIT ?3)"
            ))
            .and_then(|mut s| s.execute(params![collection, cutoff, SWEEP_BATCH]))
            .map_err(backend)
        })?;
    }
    Ok(swept)
}

/// One pass of the sweep at `now` (ms): (write-log entries, aged rows and documents) deleted.
pub(super) fn sweep(inner: &Inner, now: i64) -> StoreResult<(usize, usize)> {
    let conn = inner.connection()?;
    let out = expired_entries(inner, &conn, now.div_euclid(1000)).and_then(|entries| {
        let cutoff = now - inner.retention_days * 86_400_000;
        let rows = aged_rows(inner, &conn, cutoff)? + ended_docs(inner, &conn, cutoff)?;
        Ok((entries, rows))
    });
    inner.give_back(conn);
    out
}

/// One pass of the sweep now, its outcome logged.
fn sweep_now(inner: &Inner) {
    match sweep(inner, chrono::Utc::now().timestamp_millis()) {
        Ok((0, 0)) => {}
        Ok((entries, rows)) => {
            tracing::info!(
                entries,
                rows,
                "expired write-log entries and aged data deleted"
            )
        }
        Err(e) => tracing::warn!(cause = %e, "sweep failed; tried again later"),
    }
}

/// Sweeps once before the store is handed out (what is older than the retention is never
/// read, and what a caller writes after the open is not swept under it for an hour), then
/// every [`SWEEP_EVERY`] on a thread of its own, until the store is dropped.
pub(super) fn spawn_sweeper(store: Weak<Inner>, stopped: mpsc::Receiver<()>) {
    if let Some(inner) = store.upgrade() {
        sweep_now(&inner);
    }
    let run = move || {
        while stopped.recv_timeout(SWEEP_EVERY) == Err(mpsc::RecvTimeoutError::Timeout) {
            let Some(inner) = store.upgrade() else { return };
            sweep_now(&inner);
        }
    };
    if let Err(e) = std::thread::Builder::new()
        .name("netops-sweep".into())
        .spawn(run)
    {
        tracing::warn!(cause = %e, "no sweep in this process");
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;

    use super::*;
    use crate::SqliteStore;
    use crate::testing::entry;
    use netops_store::{
        Documents, Filter, Record, Rollup, Rollups, SeriesQuery, SeriesRead, SeriesWrite, WriteLog,
        WriteLogEntry,
    };

    #[tokio::test]
    async fn expired_write_log_entries_are_hidden_then_swept_in_batches() {
        // Opened for a load, which runs no sweeper of its own: this test sweeps by hand.
        let d = tempfile::tempdir().expect("tempdir");
        let s = SqliteStore::open_for_load(d.path().join("t.db")).expect("open");
        let now = chrono::Utc::now().timestamp();
        let aged = |i: usize, expires_at: i64| WriteLogEntry {
            request_id: format!("r{i}"),
            expires_at,
            ..entry("a")
        };
        for i in 0..(SWEEP_BATCH as usize * 2 + 500) {
            s.commit(aged(i, now - 10), Vec::new())
                .await
                .expect("commit");
        }
        for i in 0..3 {
            s.commit(aged(i, now + 3600), Vec::new())
                .await
                .expect("commit");
        }
        assert_eq!(s.entries("a").await.expect("log").len(), 3);
        let (swept, _) = sweep(&s.inner, now * 1000).expect("sweep");
        assert_eq!(swept, SWEEP_BATCH as usize * 2 + 500);
        let rows: i64 = s
            .with(|c| {
                c.query_row("SELECT count(*) FROM writes", [], |r| r.get(0))
                    .map_err(backend)
            })
            .await
            .expect("count");
        assert_eq!(rows, 3);
        assert_eq!(sweep(&s.inner, now * 1000).expect("sweep"), (0, 0));
    }

    #[tokio::test]
    async fn expired_ingestion_log_entries_are_swept_with_the_write_log() {
        use netops_store::{IngestEntry, IngestLog};
        let d = tempfile::tempdir().expect("tempdir");
        let s = SqliteStore::open_for_load(d.path().join("t.db")).expect("open");
        let now = chrono::Utc::now();
        let batch = |id: &str, expires_at: i64| IngestEntry {
            tenant: "a".into(),
            batch_id: id.into(),
            kind: "firewall-syslog".into(),
            token_name: "relay".into(),
            request_id: "r".into(),
            at: now,
            accepted: 1,
            refused: 0,
            refusals: Vec::new(),
            expires_at,
        };
        let now_s = now.timestamp();
        for (id, expires_at) in [("old", now_s - 10), ("kept", now_s + 3600)] {
            assert!(
                s.record(batch(id, expires_at))
                    .await
                    .expect("record")
                    .is_none()
            );
        }
        let (swept, _) = sweep(&s.inner, now_s * 1000).expect("sweep");
        assert_eq!(swept, 1);
        let rows: i64 = s
            .with(|c| {
                c.query_row("SELECT count(*) FROM ingested", [], |r| r.get(0))
                    .map_err(backend)
            })
            .await
            .expect("count");
        assert_eq!(rows, 1);
        assert_eq!(s.ingested("a").await.expect("log").len(), 1);
    }

    #[tokio::test]
    async fn opening_sweeps_what_has_expired() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("t.db");
        let s = SqliteStore::open(&path).expect("open");
        let old = WriteLogEntry {
            expires_at: 1,
            ..entry("a")
        };
        s.commit(old, Vec::new()).await.expect("commit");
        s.commit(entry("a"), Vec::new()).await.expect("commit");
        drop(s);
        let s = SqliteStore::open(&path).expect("reopen");
        let rows = || {
            s.with(|c| {
                c.query_row("SELECT count(*) FROM writes", [], |r| r.get::<_, i64>(0))
                    .map_err(backend)
            })
        };
        assert_eq!(rows().await.expect("count"), 1, "swept before open returns");
    }

    #[tokio::test]
    async fn records_and_rollups_older_than_the_retention_are_swept_per_series() {
        let d = tempfile::tempdir().expect("tempdir");
        let s = SqliteStore::open_for_load(d.path().join("t.db")).expect("open");
        let day = 86_400_000;
        let now = 1_800_000_000_000_i64;
        let kept_days = s.inner.retention_days;
        // Two tenants, two series, records a day apart from well past the retention to now.
        let days = kept_days + 3;
        for tenant in ["a", "b"] {
            for series in ["s1", "s2"] {
                let records = (0..days * 3)
                    .map(|i| Record {
                        partition: format!("m{}", i % 3),
                        ts: now - (i / 3) * day,
                        id: format!("r{i}"),
                        body: json!({"i": i}),
                    })
                    .collect();
                s.append(tenant, series, records).await.expect("append");
                let rollups = (0..days)
                    .map(|i| Rollup {
                        hour: now - i * day,
                        key: "k".into(),
                        dims: Arc::new(json!({})),
                        measures: [("n".to_owned(), 1.0)].into(),
                    })
                    .collect();
                s.add(tenant, series, rollups).await.expect("rollups");
            }
        }
        let (_, rows) = sweep(&s.inner, now).expect("sweep");
        // Per pair: the records of the 2 days before the cutoff, 3 a day, and each day's
        // rollup (the records at the cutoff itself are kept).
        let gone_days = days - kept_days - 1;
        assert_eq!(rows as i64, 4 * (gone_days * 3 + gone_days));
        let cutoff = now - kept_days * day;
        let left = s
            .scan(&SeriesQuery {
                tenant: "b",
                series: "s2",
                partition: None,
                from: 0,
                to: now + 1,
                filter: &Filter::all(),
                after: None,
                limit: 100_000,
            })
            .await
            .expect("scan");
        assert_eq!(left.records.len() as i64, (kept_days + 1) * 3);
        assert!(left.records.iter().all(|r| r.ts >= cutoff));
        let rollups = s
            .rows("a", "s1", 0, now + 1, &Filter::all())
            .await
            .expect("rows");
        assert_eq!(rollups.len() as i64, kept_days + 1);
        assert_eq!(sweep(&s.inner, now).expect("again"), (0, 0));
    }

    #[tokio::test]
    async fn ended_documents_of_aging_collections_leave_after_the_retention() {
        let d = tempfile::tempdir().expect("tempdir");
        let s = SqliteStore::open_for_load(d.path().join("t.db")).expect("open");
        let now = chrono::Utc::now();
        let ago = |days: i64| (now - chrono::Duration::days(days)).to_rfc3339();
        let kept = s.inner.retention_days;
        let docs = vec![
            ("old".to_owned(), json!({"resolved_at": ago(kept + 1)})),
            (
                "old-offset".to_owned(),
                json!({"resolved_at": "2001-01-01T10:00:00+02:00"}),
            ),
            ("recent".to_owned(), json!({"resolved_at": ago(kept - 1)})),
            ("open".to_owned(), json!({"opened_at": ago(kept + 5)})),
        ];
        s.put("t", "netdiag_alerts", docs.clone())
            .await
            .expect("put");
        // Another collection with the same dates is not touched.
        s.put("t", "machines", docs).await.expect("put");
        let (_, rows) = sweep(&s.inner, now.timestamp_millis()).expect("sweep");
        assert_eq!(rows, 2);
        let keys =
            |docs: Vec<netops_store::Doc>| docs.into_iter().map(|d| d.key).collect::<Vec<_>>();
        let alerts = s
            .list("t", "netdiag_alerts", &Filter::all(), None, 100)
            .await
            .expect("list");
        assert_eq!(keys(alerts), ["open", "recent"]);
        let machines = s
            .list("t", "machines", &Filter::all(), None, 100)
            .await
            .expect("list");
        assert_eq!(machines.len(), 4);
    }
}
