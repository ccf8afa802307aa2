//! The embedded adapter: one SQLite file (WAL), schema created on open.
//!
//! Connections are pooled; every call runs on the blocking pool so a slow read never
//! stalls the async workers. Filters become SQL over `json_extract`, so only matching
//! rows leave SQLite.
//!
//! Faults (DECISIONS "Writes and the write log": a write that cannot be logged fails with
//! 503 and changes nothing): a write waits at most [`BUSY_TIMEOUT`] for another connection's
//! lock; only the first open may create the file, and a file deleted or replaced while the
//! store is open refuses every write instead of taking it into a file no one will read again.
//! Expired write-log entries are swept off the request path ([`spawn_sweeper`]).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak, mpsc};
use std::time::Duration;

use async_trait::async_trait;
use rusqlite::functions::FunctionFlags;
use rusqlite::types::{Value as SqlValue, ValueRef};
use rusqlite::{
    Connection, OpenFlags, OptionalExtension, TransactionBehavior, params, params_from_iter,
};
use serde_json::Value;

use super::filter::contains_folded;
use super::*;

const SCHEMA: &str = r#"
CREATE TABLE IF NOT EXISTS tokens (
    hash TEXT PRIMARY KEY,
    tenant TEXT NOT NULL,
    name TEXT NOT NULL,
    scopes TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL,
    revoked_at INTEGER
);
CREATE INDEX IF NOT EXISTS tokens_by_name ON tokens (tenant, name);
CREATE TABLE IF NOT EXISTS counters (
    key TEXT PRIMARY KEY,
    value INTEGER NOT NULL,
    expires_at INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS docs (
    tenant TEXT NOT NULL,
    coll TEXT NOT NULL,
    key TEXT NOT NULL,
    version INTEGER NOT NULL,
    body TEXT NOT NULL,
    PRIMARY KEY (tenant, coll, key)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS series (
    tenant TEXT NOT NULL,
    series TEXT NOT NULL,
    part TEXT NOT NULL,
    ts INTEGER NOT NULL,
    id TEXT NOT NULL,
    body TEXT NOT NULL,
    PRIMARY KEY (tenant, series, ts, id, part)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS series_by_part ON series (tenant, series, part, ts, id);
CREATE TABLE IF NOT EXISTS rollups (
    tenant TEXT NOT NULL,
    series TEXT NOT NULL,
    hour INTEGER NOT NULL,
    key TEXT NOT NULL,
    dims TEXT NOT NULL,
    measures TEXT NOT NULL,
    PRIMARY KEY (tenant, series, hour, key)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS writes (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    tenant TEXT NOT NULL,
    entry TEXT NOT NULL,
    expires INTEGER,
    ckey TEXT,
    count INTEGER,
    last_at TEXT
);
CREATE INDEX IF NOT EXISTS writes_by_tenant ON writes (tenant, seq);
CREATE INDEX IF NOT EXISTS writes_by_expiry ON writes (expires);
CREATE UNIQUE INDEX IF NOT EXISTS writes_coalesced ON writes (ckey);
CREATE TABLE IF NOT EXISTS meta (
    key TEXT PRIMARY KEY,
    value BLOB NOT NULL
);
"#;

/// The embedded store.
#[derive(Clone)]
pub struct SqliteStore {
    inner: Arc<Inner>,
}

struct Inner {
    path: PathBuf,
    sync: Durability,
    /// The file opened first: the store's only file.
    file: FileId,
    /// Set while the file at `path` is not `file` (said once in the process log).
    lost: AtomicBool,
    pool: Mutex<Vec<Connection>>,
    /// A connection for the token lookup of every request, run inline ([`SqliteStore::inline`]).
    inline: Mutex<Option<Connection>>,
    /// Dropped with the store, which ends its sweeper ([`spawn_sweeper`]).
    _stop_sweeper: Option<mpsc::Sender<()>>,
}

/// A file by device and inode: a file deleted and created again at the same path, or another
/// file moved there, is another file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct FileId(u64, u64);

impl FileId {
    fn of(path: &Path) -> Option<FileId> {
        let meta = std::fs::metadata(path).ok()?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            Some(FileId(meta.dev(), meta.ino()))
        }
        // Elsewhere only the file's presence is checked.
        #[cfg(not(unix))]
        {
            let _ = meta;
            Some(FileId(0, 0))
        }
    }
}

impl Inner {
    /// Fails while the file at the path is not the one the store opened (deleted or
    /// replaced): a write would land in an unlinked file, gone when the process stops, or in
    /// a stranger's. One `stat`, before each write and before a new connection is opened.
    fn check_file(&self) -> StoreResult<()> {
        if FileId::of(&self.path) == Some(self.file) {
            if self.lost.swap(false, Ordering::Relaxed) {
                tracing::warn!(path = %self.path.display(), "the database file is back: writes resume");
            }
            return Ok(());
        }
        if !self.lost.swap(true, Ordering::Relaxed) {
            tracing::error!(
                path = %self.path.display(),
                "the database file was deleted or replaced while serving: writes are refused \
                 with 503 until netops is restarted on its file"
            );
        }
        Err(StoreError::Backend(format!(
            "database file {} deleted or replaced",
            self.path.display()
        )))
    }

    /// A pooled connection, or a new one (which never creates the file).
    fn connection(&self) -> StoreResult<Connection> {
        let pooled = self.pool.lock().map_err(backend)?.pop();
        match pooled {
            Some(c) => Ok(c),
            None => {
                self.check_file()?;
                open(&self.path, self.sync, Create::No)
            }
        }
    }

    /// Puts a connection back into the pool (at most 16 are kept).
    fn give_back(&self, conn: Connection) {
        if let Ok(mut pool) = self.pool.lock()
            && pool.len() < 16
        {
            pool.push(conn);
        }
    }
}

/// When a connection's commits reach the disk.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Durability {
    /// `synchronous = NORMAL` (WAL): a commit survives a crash of the process, and the
    /// file is synced at each checkpoint.
    Durable,
    /// `synchronous = OFF`, for a bulk load: never synced until [`SqliteStore::settle`]
    /// (a seed of 1,000 machines spent 15 s of its 2 minutes waiting for syncs).
    Loading,
}

fn backend(e: impl std::fmt::Display) -> StoreError {
    StoreError::Backend(e.to_string())
}

/// How long a statement waits for another connection's lock before it fails: the one
/// bounded wait of a write on a locked file, after which it is refused with 503.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// Whether opening may create the file: only the store's first connection may.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Create {
    Yes,
    No,
}

fn open(path: &Path, sync: Durability, create: Create) -> StoreResult<Connection> {
    let mut flags = OpenFlags::SQLITE_OPEN_READ_WRITE
        | OpenFlags::SQLITE_OPEN_URI
        | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    if create == Create::Yes {
        flags |= OpenFlags::SQLITE_OPEN_CREATE;
    }
    let conn = Connection::open_with_flags(path, flags).map_err(backend)?;
    conn.busy_timeout(BUSY_TIMEOUT).map_err(backend)?;
    let synchronous = match sync {
        Durability::Durable => "NORMAL",
        Durability::Loading => "OFF",
    };
    // The write-ahead log is cut back to 64 MiB after each checkpoint, so a burst of writes
    // does not leave a big file behind.
    conn.execute_batch(&format!(
        "PRAGMA journal_mode = WAL; PRAGMA synchronous = {synchronous}; \
         PRAGMA journal_size_limit = 67108864; \
         PRAGMA cache_size = -65536; PRAGMA temp_store = MEMORY; PRAGMA mmap_size = 1073741824;"
    ))
    .map_err(backend)?;
    add_functions(&conn)?;
    Ok(conn)
}

/// The subtype SQLite's JSON functions give the JSON text of an array or object.
const JSON_SUBTYPE: std::ffi::c_uint = b'J' as std::ffi::c_uint;

/// SQL functions of every connection. `netops_contains(text, needle)`: the text filter of
/// [`Pred::Contains`], `needle` folded by [`super::filter::fold`], computed by the same
/// [`contains_folded`] as [`Filter::matches`] (SQLite's `lower()` folds ASCII only, so `É`
/// stayed `É`). As there, only a string matches: not a number, nor the JSON text of an array
/// or object.
fn add_functions(conn: &Connection) -> StoreResult<()> {
    conn.create_scalar_function(
        "netops_contains",
        2,
        FunctionFlags::SQLITE_UTF8
            | FunctionFlags::SQLITE_DETERMINISTIC
            | FunctionFlags::SQLITE_INNOCUOUS
            | FunctionFlags::SQLITE_SUBTYPE,
        |ctx| {
            if ctx.get_subtype(0) == JSON_SUBTYPE {
                return Ok(false);
            }
            Ok(match (ctx.get_raw(0), ctx.get_raw(1)) {
                (ValueRef::Text(text), ValueRef::Text(needle)) => {
                    match (std::str::from_utf8(text), std::str::from_utf8(needle)) {
                        (Ok(text), Ok(needle)) => contains_folded(text, needle),
                        _ => false,
                    }
                }
                _ => false,
            })
        },
    )
    .map_err(backend)
}

/// Layout of the file (`PRAGMA user_version`): 3 gives write-log entries an expiry and
/// coalesced refusals their key, count and last time; 2 keeps series records in time order (a
/// read of every partition walks the table itself, filters included, instead of an index and
/// one lookup per record); 0 is a new file or the first layout, keyed by partition first.
const LAYOUT: i64 = 3;

/// Brings a file of an earlier layout to [`LAYOUT`], records included, in one transaction.
fn migrate(conn: &mut Connection) -> StoreResult<()> {
    let version: i64 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .map_err(backend)?;
    if version >= LAYOUT {
        return Ok(());
    }
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(backend)?;
    let count =
        |sql: &str| -> StoreResult<i64> { tx.query_row(sql, [], |r| r.get(0)).map_err(backend) };
    let unbounded_log =
        count("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'writes'")? > 0
            && count("SELECT count(*) FROM pragma_table_info('writes') WHERE name = 'expires'")?
                == 0;
    if unbounded_log {
        // Entries logged before expiry existed expire the default time after theirs.
        tx.execute_batch(
            "ALTER TABLE writes ADD COLUMN expires INTEGER; \
             ALTER TABLE writes ADD COLUMN ckey TEXT; \
             ALTER TABLE writes ADD COLUMN count INTEGER; \
             ALTER TABLE writes ADD COLUMN last_at TEXT;",
        )
        .map_err(backend)?;
        tx.execute(
            "UPDATE writes SET expires = unixepoch(json_extract(entry, '$.at')) + ?1",
            [i64::from(crate::config::DEFAULT_WRITE_LOG_DAYS) * 86_400],
        )
        .map_err(backend)?;
    }
    let first_layout: i64 = tx
        .query_row(
            "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = 'series_by_time'",
            [],
            |r| r.get(0),
        )
        .map_err(backend)?;
    if first_layout > 0 {
        tx.execute_batch("ALTER TABLE series RENAME TO series_first_layout;")
            .map_err(backend)?;
        tx.execute_batch(SCHEMA).map_err(backend)?;
        tx.execute_batch(
            "INSERT INTO series (tenant, series, part, ts, id, body) \
             SELECT tenant, series, part, ts, id, body FROM series_first_layout; \
             DROP TABLE series_first_layout;",
        )
        .map_err(backend)?;
    }
    tx.execute_batch(&format!("PRAGMA user_version = {LAYOUT};"))
        .map_err(backend)?;
    tx.commit().map_err(backend)
}

impl SqliteStore {
    /// Opens (or creates) the database file and its schema.
    pub fn open(path: impl AsRef<Path>) -> StoreResult<Self> {
        Self::open_with(path.as_ref(), Durability::Durable)
    }

    /// [`SqliteStore::open`] for a bulk load (`netops seed`): nothing is synced to the disk
    /// until [`SqliteStore::settle`], so a crash of the machine (not of the process) before
    /// then can lose or damage the load; the load is simply run again.
    pub fn open_for_load(path: impl AsRef<Path>) -> StoreResult<Self> {
        Self::open_with(path.as_ref(), Durability::Loading)
    }

    fn open_with(path: &Path, sync: Durability) -> StoreResult<Self> {
        let mut conn = open(path, sync, Create::Yes)?;
        migrate(&mut conn)?;
        conn.execute_batch(SCHEMA).map_err(backend)?;
        let file = FileId::of(path).ok_or_else(|| {
            StoreError::Backend(format!("{} vanished once opened", path.display()))
        })?;
        // A bulk load has no log to sweep.
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

    /// [`SqliteStore::with`] for a call that writes: refused while the file is not the one
    /// opened, and a failure checks the file again so that the process log says why.
    async fn with_write<T, F>(&self, f: F) -> StoreResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> StoreResult<T> + Send + 'static,
    {
        let inner = self.inner.clone();
        self.with(move |c| {
            inner.check_file()?;
            let out = f(c);
            if matches!(out, Err(StoreError::Backend(_))) {
                let _ = inner.check_file();
            }
            out
        })
        .await
    }
}

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
fn spawn_sweeper(store: Weak<Inner>, stopped: mpsc::Receiver<()>) {
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

fn json_text(v: &Value) -> String {
    v.to_string()
}

/// Adds the stored measures `text` (a JSON object of numbers) into `sums`, reading the
/// names in place: a name already there costs no allocation.
fn add_measures(text: &str, sums: &mut BTreeMap<String, f64>) -> StoreResult<()> {
    struct AddInto<'s>(&'s mut BTreeMap<String, f64>);
    impl<'de> serde::de::Visitor<'de> for AddInto<'_> {
        type Value = ();
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("an object of measures")
        }
        fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
            while let Some(name) = map.next_key::<&'de str>()? {
                let v: f64 = map.next_value()?;
                match self.0.get_mut(name) {
                    Some(sum) => *sum += v,
                    None => {
                        self.0.insert(name.to_owned(), v);
                    }
                }
            }
            Ok(())
        }
    }
    let data = |e: serde_json::Error| StoreError::Data(e.to_string());
    if text.contains('\\') {
        // An escaped name cannot be read in place.
        add_into(sums, serde_json::from_str(text).map_err(data)?);
        return Ok(());
    }
    from_json_text(text, AddInto(sums))
}

/// The values of the `by` dimensions in the stored dimensions `text` (a JSON object), null
/// where absent: the other dimensions are skipped unread.
fn pick_dims(text: &str, by: &[&str]) -> StoreResult<Vec<Value>> {
    struct Pick<'b>(&'b [&'b str]);
    impl<'de> serde::de::Visitor<'de> for Pick<'_> {
        type Value = Vec<Value>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("an object of dimensions")
        }
        fn visit_map<A: serde::de::MapAccess<'de>>(
            self,
            mut map: A,
        ) -> Result<Vec<Value>, A::Error> {
            let mut out = vec![Value::Null; self.0.len()];
            while let Some(name) = map.next_key::<&'de str>()? {
                match self.0.iter().position(|f| *f == name) {
                    Some(i) => out[i] = map.next_value()?,
                    None => {
                        map.next_value::<serde::de::IgnoredAny>()?;
                    }
                }
            }
            Ok(out)
        }
    }
    if text.contains('\\') {
        // An escaped name cannot be read in place.
        return Ok(pick(&parse_json(text)?, by));
    }
    from_json_text(text, Pick(by))
}

/// Runs `visitor` over the JSON object `text`, which must hold nothing after it.
fn from_json_text<'de, V: serde::de::Visitor<'de>>(
    text: &'de str,
    visitor: V,
) -> StoreResult<V::Value> {
    use serde::Deserializer as _;
    let data = |e: serde_json::Error| StoreError::Data(e.to_string());
    let mut de = serde_json::Deserializer::from_str(text);
    let out = de.deserialize_map(visitor).map_err(data)?;
    de.end().map_err(data)?;
    Ok(out)
}

/// The aggregates of one series over `[from, to)` matching `filter`, in (hour, key) order.
fn rollup_query(
    tenant: &str,
    series: &str,
    from: i64,
    to: i64,
    filter: &Filter,
) -> StoreResult<(String, Vec<SqlValue>)> {
    let mut args = vec![
        SqlValue::Text(tenant.to_owned()),
        SqlValue::Text(series.to_owned()),
        SqlValue::Integer(from),
        SqlValue::Integer(to),
    ];
    let mut sql = String::from(
        "SELECT hour, key, dims, measures FROM rollups WHERE tenant = ? AND series = ? AND hour >= ? AND hour < ?",
    );
    sql.push_str(&filter_sql(filter, "dims", &mut args)?);
    sql.push_str(" ORDER BY hour, key");
    Ok((sql, args))
}

/// Runs a rollup read of [`rollup_query`] and hands `add` each aggregate's hour and key, and
/// its row, whose dimensions (column 2) and measures (column 3) [`text`] reads when wanted.
fn each_rollup(
    c: &Connection,
    sql: &str,
    args: Vec<SqlValue>,
    mut add: impl FnMut(i64, &str, &rusqlite::Row<'_>) -> StoreResult<()>,
) -> StoreResult<()> {
    let mut s = c.prepare_cached(sql).map_err(backend)?;
    let mut rows = s.query(params_from_iter(args)).map_err(backend)?;
    while let Some(r) = rows.next().map_err(backend)? {
        add(r.get(0).map_err(backend)?, text(r, 1)?, r)?;
    }
    Ok(())
}

/// Text column `i` of `r`, read in place.
fn text<'r>(r: &'r rusqlite::Row<'_>, i: usize) -> StoreResult<&'r str> {
    r.get_ref(i).and_then(|v| Ok(v.as_str()?)).map_err(backend)
}

fn parse_json(s: &str) -> StoreResult<Value> {
    serde_json::from_str(s).map_err(|e| StoreError::Data(e.to_string()))
}

fn sql_of(v: &Value) -> SqlValue {
    match v {
        Value::Null => SqlValue::Null,
        Value::Bool(b) => SqlValue::Integer(i64::from(*b)),
        Value::Number(n) => match n.as_i64() {
            Some(i) => SqlValue::Integer(i),
            None => SqlValue::Real(n.as_f64().unwrap_or(0.0)),
        },
        Value::String(s) => SqlValue::Text(s.clone()),
        other => SqlValue::Text(other.to_string()),
    }
}

fn json_path(field: &str) -> StoreResult<String> {
    if field.is_empty()
        || !field
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
    {
        return Err(StoreError::Data(format!("bad field name {field}")));
    }
    Ok(format!("'$.{field}'"))
}

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

/// A row count bound as SQL (`usize::MAX` means no bound).
fn sql_limit(limit: usize) -> SqlValue {
    SqlValue::Integer(limit.min(i64::MAX as usize) as i64)
}

/// Runs `sql`, which selects `key, version, body` from `docs`, into documents.
fn read_docs(c: &Connection, sql: &str, args: Vec<SqlValue>) -> StoreResult<Vec<Doc>> {
    let mut s = c.prepare_cached(sql).map_err(backend)?;
    let rows = s
        .query_map(params_from_iter(args), |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, u64>(1)?,
                r.get::<_, String>(2)?,
            ))
        })
        .map_err(backend)?;
    let mut out = Vec::new();
    for row in rows {
        let (key, version, body) = row.map_err(backend)?;
        out.push(Doc {
            key,
            version,
            body: parse_json(&body)?,
        });
    }
    Ok(out)
}

/// The document `key` of a collection, if any.
fn doc_by_key(c: &Connection, tenant: &str, coll: &str, key: String) -> StoreResult<Option<Doc>> {
    let row: Option<(u64, String)> = c
        .prepare_cached(
            "SELECT version, body FROM docs WHERE tenant = ?1 AND coll = ?2 AND key = ?3",
        )
        .and_then(|mut s| {
            s.query_row(params![tenant, coll, key], |r| Ok((r.get(0)?, r.get(1)?)))
                .optional()
        })
        .map_err(backend)?;
    row.map(|(version, body)| {
        Ok(Doc {
            key,
            version,
            body: parse_json(&body)?,
        })
    })
    .transpose()
}

/// True when every JSON writer of this file (serde_json, SQLite's JSON functions) writes
/// the string `s` between quotes exactly as it is: ASCII letters, digits and a few marks,
/// never escaped by either.
fn written_as_is(s: &str) -> bool {
    s.bytes()
        .all(|b| b.is_ascii_alphanumeric() || b" -_.:@/".contains(&b))
}

/// SQL for `filter` over the JSON column `col`, with its parameters appended to `args`.
fn filter_sql(filter: &Filter, col: &str, args: &mut Vec<SqlValue>) -> StoreResult<String> {
    let mut sql = String::new();
    for pred in &filter.0 {
        let clause = match pred {
            Pred::Eq(f, v) => {
                let exact = format!("json_extract({col}, {}) = ?", json_path(f)?);
                match v.as_str().filter(|s| written_as_is(s)) {
                    // The text is searched for the quoted value before any JSON is parsed:
                    // a cheap necessary condition, so a rare value costs no parse per row.
                    Some(s) => {
                        args.push(SqlValue::Text(format!("\"{s}\"")));
                        args.push(sql_of(v));
                        format!("(instr({col}, ?) > 0 AND {exact})")
                    }
                    None => {
                        args.push(sql_of(v));
                        exact
                    }
                }
            }
            Pred::Ne(f, v) => {
                args.push(sql_of(v));
                format!("json_extract({col}, {}) IS NOT ?", json_path(f)?)
            }
            Pred::In(f, vs) => {
                let marks = vec!["?"; vs.len()].join(",");
                args.extend(vs.iter().map(sql_of));
                format!("json_extract({col}, {}) IN ({marks})", json_path(f)?)
            }
            Pred::Prefix(f, p) => {
                args.push(SqlValue::Integer(p.chars().count() as i64));
                args.push(SqlValue::Text(p.clone()));
                format!("substr(json_extract({col}, {}), 1, ?) = ?", json_path(f)?)
            }
            Pred::Contains(fs, needle) => {
                let needle = super::filter::fold(needle);
                let mut ors = Vec::new();
                for f in fs {
                    args.push(SqlValue::Text(needle.clone()));
                    ors.push(format!(
                        "netops_contains(json_extract({col}, {}), ?)",
                        json_path(f)?
                    ));
                }
                format!("({})", ors.join(" OR "))
            }
            Pred::Gte(f, n) => {
                args.push(SqlValue::Real(*n));
                format!("json_extract({col}, {}) >= ?", json_path(f)?)
            }
            Pred::Lte(f, n) => {
                args.push(SqlValue::Real(*n));
                format!("json_extract({col}, {}) <= ?", json_path(f)?)
            }
            Pred::Has(f, v) => {
                args.push(sql_of(v));
                format!(
                    "EXISTS (SELECT 1 FROM json_each({col}, {}) WHERE value = ?)",
                    json_path(f)?
                )
            }
        };
        sql.push_str(" AND ");
        sql.push_str(&clause);
    }
    Ok(sql)
}

/// A write-log entry as stored (its count and last time are columns of their own).
fn entry_text(log: &WriteLogEntry) -> rusqlite::Result<String> {
    serde_json::to_string(log).map_err(|e| rusqlite::Error::ToSqlConversionFailure(Box::new(e)))
}

fn parse_entry(text: &str) -> StoreResult<WriteLogEntry> {
    serde_json::from_str(text).map_err(|e| StoreError::Data(e.to_string()))
}

fn token_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<TokenRecord> {
    let scopes: String = row.get(3)?;
    Ok(TokenRecord {
        hash: row.get(0)?,
        tenant: row.get(1)?,
        name: row.get(2)?,
        scopes: scopes.split(',').filter_map(Scope::parse).collect(),
        created_at: row.get(4)?,
        expires_at: row.get(5)?,
        revoked_at: row.get(6)?,
    })
}

const TOKEN_COLS: &str = "hash, tenant, name, scopes, created_at, expires_at, revoked_at";

fn put_doc(
    tx: &rusqlite::Transaction<'_>,
    tenant: &str,
    coll: &str,
    key: &str,
    body: &Value,
    expect: Expect,
) -> StoreResult<()> {
    let current: Option<u64> = tx
        .query_row(
            "SELECT version FROM docs WHERE tenant = ?1 AND coll = ?2 AND key = ?3",
            params![tenant, coll, key],
            |r| r.get(0),
        )
        .optional()
        .map_err(backend)?;
    let ok = match expect {
        Expect::Any => true,
        Expect::Absent => current.is_none(),
        Expect::Version(v) => current == Some(v),
    };
    if !ok {
        return Err(StoreError::ConditionFailed);
    }
    tx.execute(
        "INSERT INTO docs (tenant, coll, key, version, body) VALUES (?1, ?2, ?3, ?4, ?5)
         ON CONFLICT (tenant, coll, key) DO UPDATE SET version = excluded.version, body = excluded.body",
        params![tenant, coll, key, current.unwrap_or(0) + 1, json_text(body)],
    )
    .map_err(backend)?;
    Ok(())
}

/// A record as its row is written: the body already JSON text.
struct RecordRow {
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

fn insert_records(
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
impl Counters for SqliteStore {
    async fn incr(&self, key: &str, expires_at: i64) -> StoreResult<u64> {
        let key = key.to_owned();
        self.with_write(move |c| {
            let value: i64 = c
                .prepare_cached(
                    "INSERT INTO counters (key, value, expires_at) VALUES (?1, 1, ?2)
                     ON CONFLICT (key) DO UPDATE SET value = value + 1 RETURNING value",
                )
                .and_then(|mut s| s.query_row(params![key, expires_at], |r| r.get(0)))
                .map_err(backend)?;
            if value == 1 {
                // A new window: drop the counters whose windows have ended.
                c.execute(
                    "DELETE FROM counters WHERE expires_at < ?1",
                    [expires_at - COUNTER_GRACE_SECS],
                )
                .map_err(backend)?;
            }
            Ok(value as u64)
        })
        .await
    }
}

#[async_trait]
impl Store for SqliteStore {
    async fn token_by_hash(&self, hash: &str) -> StoreResult<Option<TokenRecord>> {
        let hash = hash.to_owned();
        self.inline(move |c| {
            c.prepare_cached(&format!("SELECT {TOKEN_COLS} FROM tokens WHERE hash = ?1"))
                .and_then(|mut s| s.query_row([hash], token_row).optional())
                .map_err(backend)
        })
        .await
    }

    async fn insert_token(&self, token: &TokenRecord) -> StoreResult<()> {
        let t = token.clone();
        self.with_write(move |c| {
            let tx = c
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(backend)?;
            let active: bool = tx
                .query_row(
                    "SELECT EXISTS (SELECT 1 FROM tokens WHERE tenant = ?1 AND name = ?2 AND revoked_at IS NULL AND expires_at > ?3)",
                    params![t.tenant, t.name, t.created_at],
                    |r| r.get(0),
                )
                .map_err(backend)?;
            if active {
                return Err(StoreError::Exists);
            }
            let scopes: Vec<&str> = t.scopes.iter().map(|s| s.as_str()).collect();
            tx.execute(
                &format!("INSERT INTO tokens ({TOKEN_COLS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)"),
                params![t.hash, t.tenant, t.name, scopes.join(","), t.created_at, t.expires_at, t.revoked_at],
            )
            .map_err(backend)?;
            tx.commit().map_err(backend)
        })
        .await
    }

    async fn revoke_token(&self, tenant: &str, name: &str, at: i64) -> StoreResult<bool> {
        let (tenant, name) = (tenant.to_owned(), name.to_owned());
        self.with_write(move |c| {
            let n = c
                .execute(
                    "UPDATE tokens SET revoked_at = ?3 WHERE tenant = ?1 AND name = ?2 AND revoked_at IS NULL",
                    params![tenant, name, at],
                )
                .map_err(backend)?;
            Ok(n > 0)
        })
        .await
    }

    async fn list_tokens(&self, tenant: &str) -> StoreResult<Vec<TokenRecord>> {
        let tenant = tenant.to_owned();
        self.with(move |c| {
            let mut s = c
                .prepare(&format!(
                    "SELECT {TOKEN_COLS} FROM tokens WHERE tenant = ?1 ORDER BY created_at, name"
                ))
                .map_err(backend)?;
            let rows = s.query_map([tenant], token_row).map_err(backend)?;
            rows.collect::<Result<Vec<_>, _>>().map_err(backend)
        })
        .await
    }

    async fn get_doc(&self, tenant: &str, collection: &str, key: &str) -> StoreResult<Option<Doc>> {
        let (tenant, coll, key) = (tenant.to_owned(), collection.to_owned(), key.to_owned());
        self.with(move |c| doc_by_key(c, &tenant, &coll, key)).await
    }

    async fn list_docs(
        &self,
        tenant: &str,
        collection: &str,
        filter: &Filter,
        after: Option<&str>,
        limit: usize,
    ) -> StoreResult<Vec<Doc>> {
        let mut args = vec![
            SqlValue::Text(tenant.to_owned()),
            SqlValue::Text(collection.to_owned()),
        ];
        let mut sql =
            String::from("SELECT key, version, body FROM docs WHERE tenant = ? AND coll = ?");
        if let Some(a) = after {
            sql.push_str(" AND key > ?");
            args.push(SqlValue::Text(a.to_owned()));
        }
        sql.push_str(&filter_sql(filter, "body", &mut args)?);
        sql.push_str(" ORDER BY key LIMIT ?");
        args.push(sql_limit(limit));
        self.with(move |c| read_docs(c, &sql, args)).await
    }

    /// Ordered and counted by SQLite: only the page's bodies are read and parsed.
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
        // Seconds with milliseconds, exact for millisecond bounds. Each document's date and
        // filter are computed once (a materialised pass over the collection, bodies read
        // once); the matches are sorted without their bodies, counted, and only the page's
        // bodies are then read, by key.
        let time = format!(
            "unixepoch(json_extract(body, {}), 'subsec')",
            json_path(time_field)?
        );
        let mut args = Vec::new();
        let also = match also {
            // `1 AND <predicates>`: the filter's conjunction as one term.
            Some(f) => format!("(1{})", filter_sql(f, "body", &mut args)?),
            None => "0".to_owned(),
        };
        args.extend([
            SqlValue::Text(tenant.to_owned()),
            SqlValue::Text(collection.to_owned()),
            SqlValue::Real(from.timestamp_millis() as f64 / 1000.0),
            SqlValue::Real(to.timestamp_millis() as f64 / 1000.0),
        ]);
        let matching = format!(
            "WITH d AS MATERIALIZED (SELECT key, {time} AS t, {also} AS also \
             FROM docs WHERE tenant = ? AND coll = ?) \
             SELECT key FROM d WHERE t IS NOT NULL AND ((t >= ? AND t < ?) OR also) \
             ORDER BY t DESC, key DESC"
        );
        let (tenant, collection) = (tenant.to_owned(), collection.to_owned());
        self.with(move |c| {
            // One snapshot for the keys and the bodies.
            let c = c.transaction().map_err(backend)?;
            let mut keys = Vec::new();
            {
                let mut s = c.prepare_cached(&matching).map_err(backend)?;
                let mut rows = s.query(params_from_iter(args)).map_err(backend)?;
                while let Some(row) = rows.next().map_err(backend)? {
                    keys.push(row.get::<_, String>(0).map_err(backend)?);
                }
            }
            let total = keys.len();
            keys.truncate(limit);
            let mut page = Vec::with_capacity(keys.len());
            for key in keys {
                page.extend(doc_by_key(&c, &tenant, &collection, key)?);
            }
            c.commit().map_err(backend)?;
            Ok((page, total))
        })
        .await
    }

    async fn put_docs(
        &self,
        tenant: &str,
        collection: &str,
        docs: Vec<(String, Value)>,
    ) -> StoreResult<()> {
        let (tenant, coll) = (tenant.to_owned(), collection.to_owned());
        self.with_write(move |c| {
            let tx = c.transaction().map_err(backend)?;
            for (key, body) in &docs {
                put_doc(&tx, &tenant, &coll, key, body, Expect::Any)?;
            }
            tx.commit().map_err(backend)
        })
        .await
    }

    async fn append(&self, tenant: &str, series: &str, records: Vec<Record>) -> StoreResult<()> {
        let (tenant, series) = (tenant.to_owned(), series.to_owned());
        // Bodies are encoded (and the records freed) on this task, a chunk ahead of the
        // inserts on the blocking pool, so a big append keeps two cores busy; all of it
        // lands in one transaction, or none of it.
        let (chunks, mut received) = tokio::sync::mpsc::channel::<Vec<RecordRow>>(2);
        let insert = self.with_write(move |c| {
            let tx = c.transaction().map_err(backend)?;
            while let Some(rows) = received.blocking_recv() {
                insert_records(&tx, &tenant, &series, &rows)?;
            }
            tx.commit().map_err(backend)
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
            let next = if records.len() > limit {
                records.truncate(limit);
                records.last().map(|r| Position {
                    ts: r.ts,
                    id: r.id.clone(),
                })
            } else {
                None
            };
            Ok(SeriesPage { records, next })
        })
        .await
    }

    async fn add_rollups(&self, tenant: &str, series: &str, rows: Vec<Rollup>) -> StoreResult<()> {
        let (tenant, series) = (tenant.to_owned(), series.to_owned());
        self.with_write(move |c| {
            let tx = c.transaction().map_err(backend)?;
            {
                let mut get = tx
                    .prepare_cached(
                        "SELECT measures FROM rollups WHERE tenant = ?1 AND series = ?2 AND hour = ?3 AND key = ?4",
                    )
                    .map_err(backend)?;
                let mut put = tx
                    .prepare_cached(
                        "INSERT OR REPLACE INTO rollups (tenant, series, hour, key, dims, measures) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                    )
                    .map_err(backend)?;
                for row in rows {
                    let existing: Option<String> = get
                        .query_row(params![tenant, series, row.hour, row.key], |r| r.get(0))
                        .optional()
                        .map_err(backend)?;
                    let mut measures = row.measures;
                    if let Some(text) = existing {
                        add_measures(&text, &mut measures)?;
                    }
                    let measures = serde_json::to_string(&measures).map_err(|e| StoreError::Data(e.to_string()))?;
                    put.execute(params![tenant, series, row.hour, row.key, json_text(&row.dims), measures])
                        .map_err(backend)?;
                }
            }
            tx.commit().map_err(backend)
        })
        .await
    }

    async fn rollups(
        &self,
        tenant: &str,
        series: &str,
        from: i64,
        to: i64,
        filter: &Filter,
    ) -> StoreResult<Vec<Rollup>> {
        let (sql, args) = rollup_query(tenant, series, from, to, filter)?;
        self.with(move |c| {
            let mut out = Vec::new();
            // One combination's rows repeat its dimensions: each distinct text is decoded once.
            let mut decoded: HashMap<String, Arc<Value>> = HashMap::new();
            each_rollup(c, &sql, args, |hour, key, r| {
                let dims = text(r, 2)?;
                let dims = match decoded.get(dims) {
                    Some(d) => d.clone(),
                    None => {
                        let d = Arc::new(parse_json(dims)?);
                        decoded.insert(dims.to_owned(), d.clone());
                        d
                    }
                };
                out.push(Rollup {
                    hour,
                    key: key.to_owned(),
                    dims,
                    measures: serde_json::from_str(text(r, 3)?)
                        .map_err(|e| StoreError::Data(e.to_string()))?,
                });
                Ok(())
            })?;
            Ok(out)
        })
        .await
    }

    async fn rollup_sums(
        &self,
        tenant: &str,
        series: &str,
        from: i64,
        to: i64,
        filter: &Filter,
    ) -> StoreResult<Vec<Rollup>> {
        let (sql, args) = rollup_query(tenant, series, from, to, filter)?;
        self.with(move |c| {
            let mut sums = KeySums::default();
            // Added up as they are read: no row is kept, and a key's dimensions are decoded
            // once.
            each_rollup(c, &sql, args, |hour, key, r| {
                sums.add(
                    hour,
                    key,
                    || Ok(Arc::new(parse_json(text(r, 2)?)?)),
                    |into| add_measures(text(r, 3)?, into),
                )
            })?;
            Ok(sums.into_rows())
        })
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
        let (sql, args) = rollup_query(tenant, series, from, to, filter)?;
        let by: Vec<String> = by.iter().map(|f| f.to_string()).collect();
        self.with(move |c| {
            let by: Vec<&str> = by.iter().map(String::as_str).collect();
            let mut groups = Groups::new(&by);
            // As rollup_sums, and a key's grouping dimensions are picked from its text once.
            each_rollup(c, &sql, args, |hour, key, r| {
                groups.add(
                    hour,
                    key,
                    |by| pick_dims(text(r, 2)?, by),
                    |into| add_measures(text(r, 3)?, into),
                )
            })?;
            Ok(groups.into_groups())
        })
        .await
    }

    async fn commit(&self, log: WriteLogEntry, changes: Vec<Change>) -> StoreResult<()> {
        self.with_write(move |c| {
            let tx = c
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(backend)?;
            for change in changes {
                match change {
                    Change::PutDoc {
                        collection,
                        key,
                        body,
                        expect,
                    } => put_doc(&tx, &log.tenant, &collection, &key, &body, expect)?,
                    Change::Append { series, record } => {
                        insert_records(&tx, &log.tenant, &series, &[RecordRow::from(record)])?
                    }
                }
            }
            tx.prepare_cached("INSERT INTO writes (tenant, entry, expires) VALUES (?1, ?2, ?3)")
                .and_then(|mut s| s.execute(params![log.tenant, entry_text(&log)?, log.expires_at]))
                .map_err(backend)?;
            tx.commit().map_err(backend)
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

    async fn write_log(&self, tenant: &str) -> StoreResult<Vec<WriteLogEntry>> {
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

    async fn secret(&self, name: &str) -> StoreResult<Vec<u8>> {
        let key = format!("secret:{name}");
        self.with_write(move |c| {
            let fresh: [u8; 32] = rand::random();
            c.execute(
                "INSERT OR IGNORE INTO meta (key, value) VALUES (?1, ?2)",
                params![key, fresh.to_vec()],
            )
            .map_err(backend)?;
            c.query_row("SELECT value FROM meta WHERE key = ?1", [key], |r| r.get(0))
                .map_err(backend)
        })
        .await
    }

    async fn clear_tenant(&self, tenant: &str) -> StoreResult<()> {
        let tenant = tenant.to_owned();
        self.with_write(move |c| {
            let tx = c.transaction().map_err(backend)?;
            for table in ["docs", "series", "rollups"] {
                tx.execute(&format!("DELETE FROM {table} WHERE tenant = ?1"), [&tenant])
                    .map_err(backend)?;
            }
            tx.commit().map_err(backend)
        })
        .await
    }

    async fn is_empty(&self) -> StoreResult<bool> {
        self.with(|c| {
            c.query_row("SELECT NOT EXISTS (SELECT 1 FROM docs)", [], |r| r.get(0))
                .map_err(backend)
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn store() -> (tempfile::TempDir, SqliteStore) {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = SqliteStore::open(dir.path().join("t.db")).expect("open");
        (dir, store)
    }

    fn entry(tenant: &str) -> WriteLogEntry {
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

    #[tokio::test]
    async fn text_filters_in_sql_match_filter_matches_on_tricky_values() {
        let (_d, s) = store();
        let values = [
            json!("Windows : Échec de résolution DNS"),
            json!("échec"),
            json!("À LA CARTE, ÇA, ŒUVRE, Æ, Ÿ, Ǆ"),
            json!("à la carte, ça, œuvre, æ, ÿ, ǆ"),
            json!("Say \"Hi\" it's"),
            json!(r"C:\Program Files\Back"),
            json!("100% sure"),
            json!("100 sure"),
            json!("snake_case"),
            json!("snakeXcase"),
            json!("STRASSE Straße"),
            json!("ΟΔΟΣ Σ"),
            json!("1 \u{212a}elvin"),
            json!("tab\there\nline"),
            json!(""),
            json!(42),
            json!(["Échec"]),
            json!({"m": "Échec"}),
            json!(null),
            json!(true),
        ];
        let mut docs: Vec<(String, Value)> = values
            .iter()
            .enumerate()
            .map(|(i, v)| (format!("k{i:02}"), json!({ "f": v })))
            .collect();
        docs.push(("k99".into(), json!({"other": "Échec"})));
        s.put_docs("t", "c", docs.clone()).await.expect("put");
        let needles = [
            "échec",
            "ÉCHEC",
            "Échec",
            "éCHEC",
            "à la",
            "ÇA",
            "œuvre",
            "Œ",
            "æ",
            "ÿ",
            "ǆ",
            "\"hi\"",
            "'",
            r"\back",
            r"\",
            "%",
            "0%",
            "_",
            "e_c",
            "straße",
            "STRASSE",
            "σ",
            "οδος",
            "k",
            "\u{212a}",
            "\t",
            "\n",
            "42",
            "true",
            "null",
            "[",
            "{",
            "",
            "x%y",
            "'; DROP TABLE docs; --",
        ];
        for needle in needles {
            let filter = Filter::all().and(Pred::Contains(vec!["f"], needle.to_owned()));
            let got: Vec<String> = s
                .list_docs("t", "c", &filter, None, usize::MAX)
                .await
                .expect("list")
                .into_iter()
                .map(|d| d.key)
                .collect();
            let want: Vec<String> = docs
                .iter()
                .filter(|(_, body)| filter.matches(body))
                .map(|(k, _)| k.clone())
                .collect();
            assert_eq!(got, want, "needle {needle:?}");
        }
        // The French capitals the embedded store used to miss.
        let filter = Filter::all().and(Pred::Contains(vec!["f"], "ÉCHEC".into()));
        assert_eq!(
            s.list_docs("t", "c", &filter, None, 10)
                .await
                .expect("list")
                .len(),
            2
        );
    }

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
        assert_eq!(s.write_log("a").await.expect("log").len(), 3);
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
        let log = s.write_log("a").await.expect("log");
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
        assert_eq!(s.write_log("b").await.expect("log")[0].count, Some(1));
    }

    #[tokio::test]
    async fn a_log_without_expiry_is_migrated_and_expires_after_the_default_days() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("old.db");
        let at = chrono::Utc::now() - chrono::Duration::days(10);
        let old = Connection::open(&path).expect("open");
        old.execute_batch(
            "CREATE TABLE writes (seq INTEGER PRIMARY KEY AUTOINCREMENT, tenant TEXT NOT NULL, \
             entry TEXT NOT NULL); PRAGMA user_version = 2;",
        )
        .expect("layout 2");
        let first = serde_json::json!({
            "tenant": "a", "at": at, "request_id": "r", "token_name": "t", "method": "POST",
            "path": "/x", "body": {"note": "vu"}, "status": 200
        });
        old.execute(
            "INSERT INTO writes (tenant, entry) VALUES ('a', ?1)",
            [first.to_string()],
        )
        .expect("entry");
        drop(old);
        let s = SqliteStore::open(&path).expect("open");
        let log = s.write_log("a").await.expect("log");
        assert_eq!(log.len(), 1);
        assert_eq!(log[0].body, json!({"note": "vu"}));
        let days = i64::from(crate::config::DEFAULT_WRITE_LOG_DAYS);
        assert_eq!(log[0].expires_at, at.timestamp() + days * 86_400);
    }

    #[tokio::test]
    async fn a_deleted_file_refuses_writes_and_is_not_created_again() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("t.db");
        let s = SqliteStore::open(&path).expect("open");
        s.commit(entry("a"), Vec::new()).await.expect("before");
        std::fs::remove_file(&path).expect("delete");
        assert!(s.commit(entry("a"), Vec::new()).await.is_err());
        assert!(
            s.put_docs("a", "c", vec![("k".into(), json!({}))])
                .await
                .is_err()
        );
        // A new connection (the inline one is opened on first use) creates nothing.
        assert!(s.token_by_hash("x").await.is_err());
        assert!(!path.exists());
        // Nor does another file put in its place take the writes.
        std::fs::write(&path, b"").expect("empty file");
        assert!(s.commit(entry("a"), Vec::new()).await.is_err());
        assert_eq!(std::fs::metadata(&path).expect("file").len(), 0);
    }

    #[tokio::test]
    async fn a_file_of_the_first_layout_is_migrated_with_its_records() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("old.db");
        let old = Connection::open(&path).expect("open");
        old.execute_batch(
            "CREATE TABLE series (tenant TEXT NOT NULL, series TEXT NOT NULL, part TEXT NOT NULL, \
             ts INTEGER NOT NULL, id TEXT NOT NULL, body TEXT NOT NULL, \
             PRIMARY KEY (tenant, series, part, ts, id)) WITHOUT ROWID; \
             CREATE INDEX series_by_time ON series (tenant, series, ts, id); \
             INSERT INTO series VALUES ('a', 'ev', 'm1', 1000, 'x', '{\"n\":1}'); \
             INSERT INTO series VALUES ('a', 'ev', 'm2', 2000, 'y', '{\"n\":2}');",
        )
        .expect("first layout");
        drop(old);
        let s = SqliteStore::open(&path).expect("open");
        let page = s
            .scan(&SeriesQuery {
                tenant: "a",
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
        let ids: Vec<_> = page.records.iter().map(|r| r.id.as_str()).collect();
        assert_eq!(ids, ["y", "x"]);
        let layout = s
            .with(|c| {
                c.query_row(
                    "SELECT sql FROM sqlite_master WHERE name = 'series'",
                    [],
                    |r| r.get::<_, String>(0),
                )
                .map_err(backend)
            })
            .await
            .expect("schema");
        assert!(
            layout.contains("PRIMARY KEY (tenant, series, ts, id, part)"),
            "{layout}"
        );
        // Opening again leaves it as it is.
        drop(s);
        SqliteStore::open(&path).expect("reopen");
    }

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

    #[tokio::test]
    async fn newest_docs_orders_and_counts_by_a_date_field_within_the_window() {
        let (_d, s) = store();
        let doc = |at: Option<&str>, status: &str| match at {
            Some(at) => json!({"opened_at": at, "status": status}),
            None => json!({"status": status}),
        };
        let docs = vec![
            ("a".to_owned(), doc(Some("2026-11-01T10:00:00Z"), "open")),
            (
                "b".to_owned(),
                doc(Some("2026-11-01T10:00:00.500Z"), "closed"),
            ),
            // The same instant as `a` in another offset: ties go by key, descending.
            (
                "c".to_owned(),
                doc(Some("2026-11-01T12:00:00+02:00"), "closed"),
            ),
            ("d".to_owned(), doc(Some("2026-11-02T00:00:00Z"), "open")),
            (
                "e".to_owned(),
                doc(Some("2026-10-31T23:59:59.999Z"), "open"),
            ),
            ("f".to_owned(), doc(None, "open")),
            ("g".to_owned(), doc(Some("bogus"), "open")),
            ("h".to_owned(), doc(Some("2026-11-01T00:00:00Z"), "open")),
        ];
        s.put_docs("t", "c", docs).await.expect("put");
        let at = |t: &str| {
            chrono::DateTime::parse_from_rfc3339(t)
                .expect("date")
                .with_timezone(&chrono::Utc)
        };
        let (from, to) = (at("2026-11-01T00:00:00Z"), at("2026-11-02T00:00:00Z"));
        let keys = |docs: Vec<Doc>| docs.into_iter().map(|d| d.key).collect::<Vec<_>>();
        let (page, total) = s
            .newest_docs("t", "c", "opened_at", from, to, None, 3)
            .await
            .expect("newest");
        assert_eq!(
            (keys(page), total),
            (vec!["b".into(), "c".into(), "a".into()], 4)
        );
        let (page, total) = s
            .newest_docs("t", "c", "opened_at", from, to, None, 0)
            .await
            .expect("newest");
        assert_eq!((page.len(), total), (0, 4));
        // Open ones count whatever their date (but never without one).
        let open = Filter::all().and(Pred::Eq("status", json!("open")));
        let (page, total) = s
            .newest_docs("t", "c", "opened_at", from, to, Some(&open), 10)
            .await
            .expect("newest");
        let expected: Vec<String> = ["d", "b", "c", "a", "h", "e"].map(String::from).into();
        assert_eq!((keys(page), total), (expected, 6));
        let (page, total) = s
            .newest_docs("other", "c", "opened_at", from, to, Some(&open), 10)
            .await
            .expect("newest");
        assert_eq!((page.len(), total), (0, 0));
    }

    #[tokio::test]
    async fn a_load_settles_into_the_file() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("load.db");
        let load = SqliteStore::open_for_load(&path).expect("open");
        load.put_docs("a", "c", vec![("k".into(), json!({"n": 1}))])
            .await
            .expect("put");
        load.settle().await.expect("settle");
        let wal = std::fs::metadata(dir.path().join("load.db-wal")).map_or(0, |m| m.len());
        assert_eq!(wal, 0, "the log is copied into the file and emptied");
        drop(load);
        let reopened = SqliteStore::open(&path).expect("reopen");
        let doc = reopened.get_doc("a", "c", "k").await.expect("get");
        assert_eq!(doc.map(|d| d.body), Some(json!({"n": 1})));
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
        let doc = s.get_doc("a", "inc", "1").await.expect("get").expect("doc");
        assert_eq!(doc.version, 1);
        let err = s.commit(entry("a"), vec![put(Expect::Version(7))]).await;
        assert!(matches!(err, Err(StoreError::ConditionFailed)));
        assert_eq!(s.write_log("a").await.expect("log").len(), 1);
        s.commit(entry("a"), vec![put(Expect::Version(1))])
            .await
            .expect("second");
        assert_eq!(
            s.get_doc("a", "inc", "1")
                .await
                .expect("get")
                .expect("doc")
                .version,
            2
        );
        assert_eq!(s.write_log("a").await.expect("log").len(), 2);
        assert!(s.write_log("b").await.expect("log").is_empty());
    }

    #[tokio::test]
    async fn rollups_add_up_and_counters_count() {
        let (_d, s) = store();
        let row = |b: f64| Rollup {
            hour: 3_600_000,
            key: "tcp".into(),
            dims: json!({"proto": "TCP"}).into(),
            measures: [("bytes".to_string(), b)].into_iter().collect(),
        };
        s.add_rollups("a", "f", vec![row(2.0)]).await.expect("add");
        s.add_rollups("a", "f", vec![row(3.0)]).await.expect("add");
        let rows = s
            .rollups(
                "a",
                "f",
                0,
                i64::MAX,
                &Filter::all().and(Pred::Eq("proto", json!("TCP"))),
            )
            .await
            .expect("read");
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].measures["bytes"], 5.0);
        assert_eq!(s.incr("k", 100).await.expect("incr"), 1);
        assert_eq!(s.incr("k", 100).await.expect("incr"), 2);
        assert_eq!(
            s.secret("c").await.expect("s"),
            s.secret("c").await.expect("s")
        );
    }

    #[test]
    fn measures_add_in_place_and_escaped_names_still_count() {
        let mut sums: BTreeMap<String, f64> = [("b".to_string(), 1.0)].into();
        add_measures(r#"{"b": 2.5, "f": 3}"#, &mut sums).expect("plain");
        add_measures(r#"{"b": 1, "q\"x": 4}"#, &mut sums).expect("escaped");
        let want: BTreeMap<String, f64> = [
            ("b".to_string(), 4.5),
            ("f".to_string(), 3.0),
            ("q\"x".to_string(), 4.0),
        ]
        .into();
        assert_eq!(sums, want);
        assert!(add_measures(r#"{"b": "x"}"#, &mut sums).is_err());
        assert!(add_measures(r#"{"b": 1} trailing"#, &mut sums).is_err());
    }

    #[tokio::test]
    async fn rollup_sums_add_up_per_key_within_the_window() {
        let (_d, s) = store();
        let row = |hour: i64, key: &str, proto: &str, m: &[(&str, f64)]| Rollup {
            hour,
            key: key.into(),
            dims: json!({"proto": proto}).into(),
            measures: m.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
        };
        s.add_rollups(
            "a",
            "f",
            vec![
                row(1, "udp", "UDP", &[("bytes", 1.0)]),
                row(2, "tcp", "TCP", &[("bytes", 2.0), ("flows", 1.0)]),
                row(3, "tcp", "TCP", &[("bytes", 4.0)]),
                row(3, "udp", "UDP", &[("bytes", 8.0), ("flows", 2.0)]),
                row(9, "tcp", "TCP", &[("bytes", 16.0)]),
            ],
        )
        .await
        .expect("add");
        s.add_rollups("b", "f", vec![row(2, "tcp", "TCP", &[("bytes", 32.0)])])
            .await
            .expect("add");
        let sums = s
            .rollup_sums("a", "f", 1, 9, &Filter::all())
            .await
            .expect("sums");
        let got: Vec<_> = sums
            .iter()
            .map(|r| (r.key.as_str(), r.hour, r.dims["proto"].clone(), &r.measures))
            .collect();
        let tcp = [("bytes".to_string(), 6.0), ("flows".to_string(), 1.0)].into();
        let udp = [("bytes".to_string(), 9.0), ("flows".to_string(), 2.0)].into();
        assert_eq!(
            got,
            vec![
                ("tcp", 3, json!("TCP"), &tcp),
                ("udp", 3, json!("UDP"), &udp)
            ]
        );
        let udp_only = s
            .rollup_sums(
                "a",
                "f",
                0,
                100,
                &Filter::all().and(Pred::Eq("proto", json!("UDP"))),
            )
            .await
            .expect("sums");
        assert_eq!(udp_only.len(), 1);
        assert_eq!(udp_only[0].measures, udp);
    }

    #[test]
    fn grouping_dimensions_are_picked_from_the_text() {
        let by = ["domain", "site"];
        assert_eq!(
            pick_dims(
                r#"{"machine": "pc-1", "domain": "a.fr", "n": [1, {"x": 2}]}"#,
                &by
            )
            .expect("pick"),
            vec![json!("a.fr"), Value::Null]
        );
        assert_eq!(
            pick_dims(r#"{"site": 3, "dom\u0061in": "b\"c"}"#, &by).expect("escaped"),
            vec![json!("b\"c"), json!(3)]
        );
        assert!(pick_dims(r#"["domain"]"#, &by).is_err());
        assert!(pick_dims(r#"{"domain": "a"} trailing"#, &by).is_err());
    }

    #[tokio::test]
    async fn rollup_groups_add_up_keys_sharing_the_grouping_dimensions() {
        let (_d, s) = store();
        let row = |hour: i64, machine: &str, domain: &str, n: f64| Rollup {
            hour,
            key: format!("{machine}|{domain}"),
            dims: json!({"machine": machine, "domain": domain}).into(),
            measures: [("queries".to_string(), n)].into(),
        };
        s.add_rollups(
            "a",
            "d",
            vec![
                row(1, "pc-1", "b.fr", 1.0),
                row(2, "pc-1", "a.fr", 2.0),
                row(2, "pc-2", "a.fr", 4.0),
                row(3, "pc-1", "a.fr", 8.0),
                row(9, "pc-3", "a.fr", 16.0),
            ],
        )
        .await
        .expect("add");
        s.add_rollups("b", "d", vec![row(2, "pc-9", "a.fr", 32.0)])
            .await
            .expect("add");
        let got: Vec<_> = s
            .rollup_groups("a", "d", 1, 9, &Filter::all(), &["domain"])
            .await
            .expect("groups")
            .into_iter()
            .map(|g| (g.dims, g.keys, g.hour, g.measures["queries"]))
            .collect();
        assert_eq!(
            got,
            vec![
                (vec![json!("a.fr")], 2, 3, 14.0),
                (vec![json!("b.fr")], 1, 1, 1.0)
            ]
        );
        let one = s
            .rollup_groups(
                "a",
                "d",
                0,
                100,
                &Filter::all().and(Pred::Eq("machine", json!("pc-1"))),
                &["domain", "site"],
            )
            .await
            .expect("groups");
        let got: Vec<_> = one.iter().map(|g| (&g.dims, g.keys)).collect();
        assert_eq!(
            got,
            vec![
                (&vec![json!("a.fr"), Value::Null], 1),
                (&vec![json!("b.fr"), Value::Null], 1)
            ]
        );
    }
}
