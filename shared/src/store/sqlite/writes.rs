//! The write log in the embedded store: the `writes` table, committed in the transaction of
//! the changes it logs, coalesced refusals keyed by `ckey`, expired entries swept off the
//! request path.

use std::sync::{Weak, mpsc};
use std::time::Duration;

use async_trait::async_trait;
use rusqlite::params;

use super::SqliteStore;
use super::conn::{Inner, backend};
use super::docs::put_doc;
use super::series::{RecordRow, insert_records};
use super::sql::text;
use crate::store::{Change, StoreError, StoreResult, WriteLog, WriteLogEntry};

/// Write-log entries deleted per transaction by the sweep: short transactions, so that a
/// write never waits long behind one.
const SWEEP_BATCH: i64 = 1000;

/// How often the sweep runs while the store is open.
const SWEEP_EVERY: Duration = Duration::from_secs(3600);

/// Deletes the write-log entries expired at `now` (s), [`SWEEP_BATCH`] per transaction;
/// returns how many.
fn sweep(inner: &Inner, now: i64) -> StoreResult<usize> {
    let conn = inner.connection()?;
    let batches = || -> StoreResult<usize> {
        let mut swept = 0;
        loop {
            inner.check_file()?;
            let deleted = conn
                .prepare_cached(
                    "DELETE FROM writes WHERE seq IN \
                     (SELECT seq FROM writes WHERE expires <= ?1 LIMIT ?2)",
                )
                .and_then(|mut s| s.execute(params![now, SWEEP_BATCH]))
                .map_err(backend)?;
            swept += deleted;
            if (deleted as i64) < SWEEP_BATCH {
                return Ok(swept);
            }
            // Writers get the lock between two batches.
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    let out = batches();
    inner.give_back(conn);
    out
}

/// Sweeps the expired write-log entries (DECISIONS: they expire after
/// `NETOPS_WRITE_LOG_DAYS`) at once and then every [`SWEEP_EVERY`], on a thread of its own,
/// until the store is dropped.
pub(super) fn spawn_sweeper(store: Weak<Inner>, stopped: mpsc::Receiver<()>) {
    let run = move || {
        loop {
            let Some(inner) = store.upgrade() else { return };
            match sweep(&inner, chrono::Utc::now().timestamp()) {
                Ok(0) => {}
                Ok(n) => tracing::info!(entries = n, "expired write-log entries deleted"),
                Err(e) => tracing::warn!(cause = %e, "write-log sweep failed; tried again later"),
            }
            drop(inner);
            if stopped.recv_timeout(SWEEP_EVERY) != Err(mpsc::RecvTimeoutError::Timeout) {
                return;
            }
        }
    };
    if let Err(e) = std::thread::Builder::new()
        .name("netops-log-sweep".into())
        .spawn(run)
    {
        tracing::warn!(cause = %e, "no write-log sweep in this process");
    }
}

/// A write-log entry as stored (its count and last time are columns of their own).
fn entry_text(log: &WriteLogEntry) -> rusqlite::Result<String> {
    serde_json::to_string(log).map_err(|e| rusqlite::Error::ToSqlConversionFailure(Box::new(e)))
}

fn parse_entry(text: &str) -> StoreResult<WriteLogEntry> {
    serde_json::from_str(text).map_err(|e| StoreError::Data(e.to_string()))
}

#[async_trait]
impl WriteLog for SqliteStore {
    async fn commit(&self, log: WriteLogEntry, changes: Vec<Change>) -> StoreResult<()> {
        self.with_write(move |tx| {
            for change in changes {
                match change {
                    Change::PutDoc {
                        collection,
                        key,
                        body,
                        expect,
                    } => put_doc(tx, &log.tenant, &collection, &key, &body, expect)?,
                    Change::Append { series, record } => {
                        insert_records(tx, &log.tenant, &series, &[RecordRow::from(record)])?
                    }
                }
            }
            tx.prepare_cached("INSERT INTO writes (tenant, entry, expires) VALUES (?1, ?2, ?3)")
                .and_then(|mut s| s.execute(params![log.tenant, entry_text(&log)?, log.expires_at]))
                .map_err(backend)?;
            Ok(())
        })
        .await
    }

    /// The entry keeps its place of first insertion: `since` orders nothing here.
    async fn coalesce(
        &self,
        _since: chrono::DateTime<chrono::Utc>,
        key: &str,
        log: WriteLogEntry,
    ) -> StoreResult<()> {
        let key = format!("{}|{key}", log.tenant);
        self.with_write(move |c| {
            c.prepare_cached(
                "INSERT INTO writes (tenant, entry, expires, ckey, count, last_at) \
                 VALUES (?1, ?2, ?3, ?4, 1, ?5) ON CONFLICT (ckey) DO UPDATE SET \
                 count = count + 1, last_at = excluded.last_at, expires = excluded.expires",
            )
            .and_then(|mut s| {
                s.execute(params![
                    log.tenant,
                    entry_text(&log)?,
                    log.expires_at,
                    key,
                    log.at.to_rfc3339()
                ])
            })
            .map_err(backend)?;
            Ok(())
        })
        .await
    }

    async fn entries(&self, tenant: &str) -> StoreResult<Vec<WriteLogEntry>> {
        let tenant = tenant.to_owned();
        let now = chrono::Utc::now().timestamp();
        self.with(move |c| {
            let mut s = c
                .prepare(
                    "SELECT entry, expires, count, last_at FROM writes \
                     WHERE tenant = ?1 AND (expires IS NULL OR expires > ?2) ORDER BY seq",
                )
                .map_err(backend)?;
            let mut rows = s.query(params![tenant, now]).map_err(backend)?;
            let mut out = Vec::new();
            while let Some(r) = rows.next().map_err(backend)? {
                let mut entry: WriteLogEntry = parse_entry(text(r, 0)?)?;
                entry.expires_at = r.get::<_, Option<i64>>(1).map_err(backend)?.unwrap_or(0);
                entry.count = r.get(2).map_err(backend)?;
                entry.last_at = match r.get_ref(3).map_err(backend)?.as_str_or_null() {
                    Ok(Some(t)) => Some(
                        chrono::DateTime::parse_from_rfc3339(t)
                            .map_err(|e| StoreError::Data(e.to_string()))?
                            .to_utc(),
                    ),
                    Ok(None) => None,
                    Err(e) => return Err(backend(e)),
                };
                out.push(entry);
            }
            Ok(out)
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use serde_json::{Value, json};

    use super::*;
    use crate::store::sqlite::testing::{entry, store};
    use crate::store::{Documents, Expect};

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
        let swept = sweep(&s.inner, now).expect("sweep");
        assert_eq!(swept, SWEEP_BATCH as usize * 2 + 500);
        let rows: i64 = s
            .with(|c| {
                c.query_row("SELECT count(*) FROM writes", [], |r| r.get(0))
                    .map_err(backend)
            })
            .await
            .expect("count");
        assert_eq!(rows, 3);
        assert_eq!(sweep(&s.inner, now).expect("sweep"), 0);
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
        let started = std::time::Instant::now();
        while rows().await.expect("count") != 1 {
            assert!(started.elapsed() < Duration::from_secs(5), "not swept");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    #[tokio::test]
    async fn coalesced_refusals_count_in_one_entry_per_key() {
        let (_d, s) = store();
        let since = chrono::Utc::now();
        let refusal = |n: i64| WriteLogEntry {
            at: since + chrono::Duration::milliseconds(n),
            request_id: format!("r{n}"),
            status: 429,
            body: Value::Null,
            ..entry("a")
        };
        for n in 0..5 {
            s.coalesce(since, "tok|0|429", refusal(n))
                .await
                .expect("coalesce");
        }
        s.coalesce(since, "tok|60|429", refusal(9))
            .await
            .expect("coalesce");
        // The same key in another tenant's log is another entry.
        s.coalesce(
            since,
            "tok|0|429",
            WriteLogEntry {
                tenant: "b".into(),
                ..refusal(7)
            },
        )
        .await
        .expect("coalesce");
        let log = s.entries("a").await.expect("log");
        let got: Vec<_> = log
            .iter()
            .map(|e| (e.request_id.as_str(), e.count, e.last_at))
            .collect();
        assert_eq!(
            got,
            vec![
                ("r0", Some(5), Some(refusal(4).at)),
                ("r9", Some(1), Some(refusal(9).at))
            ]
        );
        assert_eq!(s.entries("b").await.expect("log")[0].count, Some(1));
    }

    #[tokio::test]
    async fn conditional_commit_writes_all_or_nothing() {
        let (_d, s) = store();
        let put = |expect| Change::PutDoc {
            collection: "inc".into(),
            key: "1".into(),
            body: json!({"state": "ack"}),
            expect,
        };
        s.commit(entry("a"), vec![put(Expect::Absent)])
            .await
            .expect("first");
        let doc = s.get("a", "inc", "1").await.expect("get").expect("doc");
        assert_eq!(doc.version, 1);
        let err = s.commit(entry("a"), vec![put(Expect::Version(7))]).await;
        assert!(matches!(err, Err(StoreError::ConditionFailed)));
        assert_eq!(s.entries("a").await.expect("log").len(), 1);
        s.commit(entry("a"), vec![put(Expect::Version(1))])
            .await
            .expect("second");
        assert_eq!(
            s.get("a", "inc", "1")
                .await
                .expect("get")
                .expect("doc")
                .version,
            2
        );
        assert_eq!(s.entries("a").await.expect("log").len(), 2);
        assert!(s.entries("b").await.expect("log").is_empty());
    }
}
