//! The embedded adapter: one SQLite file (WAL), schema created on open; every port in a file of
//! its own, the connections ([`conn`]), the schema ([`schema`]) and the SQL of filters
//! ([`sql`]) apart.
//!
//! Connections are pooled; every call runs on the blocking pool so a slow read never
//! stalls the async workers. Filters become SQL over `json_extract`, so only matching
//! rows leave SQLite.
//!
//! Faults (docs/writes.md#atomicity-and-faults: a write that cannot be logged fails with
//! 503 and changes nothing): a write waits at most [`BUSY_TIMEOUT`] for another connection's
//! lock; only the first open may create the file, and a file deleted or replaced while the
//! store is open refuses every write instead of taking it into a file no one will read again.
//! Expired write-log entries and data older than the retention are swept off the request
//! path ([`sweep`]).

mod conn;
mod counters;
mod deployment;
mod docs;
mod ingest;
mod rollups;
mod schema;
mod series;
mod sql;
mod sweep;
mod tokens;
mod writes;

use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, mpsc};

use rusqlite::{Connection, Transaction, TransactionBehavior};

pub use conn::BUSY_TIMEOUT;
use conn::{Create, Durability, FileId, Inner, backend, open};
use schema::{SCHEMA, migrate};
use sweep::spawn_sweeper;

use netops_store::config::DEFAULT_EMBEDDED_RETENTION_DAYS;
use netops_store::{StoreError, StoreResult};

/// The embedded store.
#[derive(Clone)]
pub struct SqliteStore {
    inner: Arc<Inner>,
}

impl SqliteStore {
    /// Opens (or creates) the database file and its schema, keeping data for the default
    /// retention of the embedded store ([`DEFAULT_EMBEDDED_RETENTION_DAYS`]).
    pub fn open(path: impl AsRef<Path>) -> StoreResult<Self> {
        Self::open_retaining(path, DEFAULT_EMBEDDED_RETENTION_DAYS)
    }

    /// [`SqliteStore::open`], series records and rollups older than `retention_days` swept
    /// at once and then every hour (`NETOPS_RETENTION_DAYS`).
    pub fn open_retaining(path: impl AsRef<Path>, retention_days: u32) -> StoreResult<Self> {
        Self::open_with(path.as_ref(), Durability::Durable, retention_days)
    }

    /// [`SqliteStore::open`] for a bulk load (`netops seed`): nothing is synced to the disk
    /// until [`SqliteStore::settle`], so a crash of the machine (not of the process) before
    /// then can lose or damage the load; the load is simply run again.
    pub fn open_for_load(path: impl AsRef<Path>) -> StoreResult<Self> {
        Self::open_with(
            path.as_ref(),
            Durability::Loading,
            DEFAULT_EMBEDDED_RETENTION_DAYS,
        )
    }

    fn open_with(path: &Path, sync: Durability, retention_days: u32) -> StoreResult<Self> {
        let mut conn = open(path, sync, Create::Yes)?;
        migrate(&mut conn)?;
        conn.execute_batch(SCHEMA).map_err(backend)?;
        let file = FileId::of(path).ok_or_else(|| {
            StoreError::Backend(format!("{} vanished once opened", path.display()))
        })?;
        // A bulk load has nothing to sweep.
        let (stop, stopped) = match sync {
            Durability::Durable => {
                let (stop, stopped) = mpsc::channel();
                (Some(stop), Some(stopped))
            }
            Durability::Loading => (None, None),
        };
        let inner = Arc::new(Inner {
            path: path.to_path_buf(),
            sync,
            file,
            lost: AtomicBool::new(false),
            pool: Mutex::new(vec![conn]),
            inline: Mutex::new(None),
            retention_days: i64::from(retention_days),
            _stop_sweeper: stop,
        });
        if let Some(stopped) = stopped {
            spawn_sweeper(Arc::downgrade(&inner), stopped);
        }
        Ok(Self { inner })
    }

    /// Makes everything written so far durable: the write-ahead log is copied into the file,
    /// which is synced, and emptied.
    pub async fn settle(&self) -> StoreResult<()> {
        self.with(|c| {
            c.execute_batch("PRAGMA synchronous = FULL; PRAGMA wal_checkpoint(TRUNCATE);")
                .map_err(backend)
        })
        .await
    }

    /// Runs `f` on the calling thread with the inline connection, or on the blocking pool
    /// when another call holds it. Only for reads of a few rows by primary key (the token of
    /// every request): a hot page read takes a few microseconds, less than the hand-off to
    /// the blocking pool, and a reader of a WAL file never waits for writers.
    async fn inline<T, F>(&self, f: F) -> StoreResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> StoreResult<T> + Send + 'static,
    {
        if let Ok(mut slot) = self.inner.inline.try_lock() {
            let conn = match slot.as_mut() {
                Some(conn) => conn,
                None => {
                    self.inner.check_file()?;
                    slot.insert(open(&self.inner.path, self.inner.sync, Create::No)?)
                }
            };
            return f(conn);
        }
        self.with(f).await
    }

    /// Runs `f` with a pooled connection on the blocking pool.
    async fn with<T, F>(&self, f: F) -> StoreResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> StoreResult<T> + Send + 'static,
    {
        let inner = self.inner.clone();
        tokio::task::spawn_blocking(move || {
            let mut conn = inner.connection()?;
            let out = f(&mut conn);
            inner.give_back(conn);
            out
        })
        .await
        .map_err(backend)?
    }

    /// [`SqliteStore::with`] for a call that writes: `f` runs in one transaction, committed
    /// when it succeeds, that takes the write lock first (BEGIN IMMEDIATE: a transaction that
    /// read before writing would otherwise fail at once, without waiting, when another writer
    /// committed meanwhile). Refused while the file is not the one opened, and a failure
    /// checks the file again so that the process log says why.
    async fn with_write<T, F>(&self, f: F) -> StoreResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&Transaction<'_>) -> StoreResult<T> + Send + 'static,
    {
        let inner = self.inner.clone();
        self.with(move |c| {
            inner.check_file()?;
            let out = c
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(backend)
                .and_then(|tx| {
                    let value = f(&tx)?;
                    tx.commit().map_err(backend)?;
                    Ok(value)
                });
            if matches!(out, Err(StoreError::Backend(_))) {
                let _ = inner.check_file();
            }
            out
        })
        .await
    }
}

#[cfg(test)]
mod testing {
    use serde_json::json;

    use super::SqliteStore;
    use netops_store::WriteLogEntry;

    /// A store on a file of its own, removed with the directory.
    pub fn store() -> (tempfile::TempDir, SqliteStore) {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = SqliteStore::open(dir.path().join("t.db")).expect("open");
        (dir, store)
    }

    /// An accepted write's log entry of `tenant`, kept a day.
    pub fn entry(tenant: &str) -> WriteLogEntry {
        WriteLogEntry {
            tenant: tenant.into(),
            at: chrono::Utc::now(),
            request_id: "r1".into(),
            token_name: "t".into(),
            method: "POST".into(),
            path: "/x".into(),
            body: json!({}),
            status: 200,
            expires_at: chrono::Utc::now().timestamp() + 86_400,
            ..WriteLogEntry::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use netops_store::Documents;

    #[tokio::test]
    async fn a_load_settles_into_the_file() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("load.db");
        let load = SqliteStore::open_for_load(&path).expect("open");
        load.put("a", "c", vec![("k".into(), json!({"n": 1}))])
            .await
            .expect("put");
        load.settle().await.expect("settle");
        let wal = std::fs::metadata(dir.path().join("load.db-wal")).map_or(0, |m| m.len());
        assert_eq!(wal, 0, "the log is copied into the file and emptied");
        drop(load);
        let reopened = SqliteStore::open(&path).expect("reopen");
        let doc = reopened.get("a", "c", "k").await.expect("get");
        assert_eq!(doc.map(|d| d.body), Some(json!({"n": 1})));
    }

    #[tokio::test]
    async fn reads_of_everything_below_the_bound_take_everything_that_matches() {
        use netops_store::{Documents, Filter, Pred, Record, SeriesWrite, Stores};
        use serde_json::{Value, json};

        let dir = tempfile::tempdir().expect("tempdir");
        let store = SqliteStore::open(dir.path().join("t.db")).expect("open");
        let put: Vec<(String, Value)> = (0..1500)
            .map(|i| (format!("k{i:04}"), json!({"even": i % 2 == 0})))
            .collect();
        Documents::put(&store, "a", "c", put).await.expect("put");
        let records = (0..1200)
            .map(|i| Record {
                partition: format!("p{}", i % 2),
                ts: i,
                id: format!("{i:04}"),
                body: json!({}),
            })
            .collect();
        store.append("a", "s", records).await.expect("append");
        let stores = Stores::of(store);
        let even = Filter::all().and(Pred::Eq("even", json!(true)));
        let all = stores.docs.read_all("a", "c", &even).await.expect("docs");
        assert_eq!((all.items.len(), all.cut), (750, false));
        assert!(all.items.windows(2).all(|w| w[0].key < w[1].key));
        let none = stores.docs.read_all("b", "c", &even).await.expect("docs");
        assert_eq!((none.items.len(), none.cut), (0, false));
        let part = stores
            .series
            .read_all("a", "s", Some("p1"), 0, 1000, &Filter::all())
            .await
            .expect("records");
        assert_eq!((part.items.len(), part.cut), (500, false));
        assert_eq!(part.items[0].ts, 999, "newest first");
    }
}
