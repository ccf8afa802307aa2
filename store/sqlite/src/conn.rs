//! The connections of the embedded store: how each is opened (WAL, bounded lock wait, the SQL
//! functions of the filters), their pool, and the identity of the file they open, so that a
//! file deleted or replaced under a running store refuses writes instead of losing them.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, mpsc};
use std::time::Duration;

use rusqlite::functions::FunctionFlags;
use rusqlite::types::ValueRef;
use rusqlite::{Connection, OpenFlags};

use netops_store::filter::contains_folded;
use netops_store::{StoreError, StoreResult};

pub(super) struct Inner {
    pub(super) path: PathBuf,
    pub(super) sync: Durability,
    /// The file opened first: the store's only file.
    pub(super) file: FileId,
    /// Set while the file at `path` is not `file` (said once in the process log).
    pub(super) lost: AtomicBool,
    pub(super) pool: Mutex<Vec<Connection>>,
    /// A connection for the token lookup of every request, run inline ([`super::SqliteStore::inline`]).
    pub(super) inline: Mutex<Option<Connection>>,
    /// Series records and rollups older than this many days are swept (`super::sweep`).
    pub(super) retention_days: i64,
    /// Dropped with the store, which ends its sweeper (`super::sweep::spawn_sweeper`).
    pub(super) _stop_sweeper: Option<mpsc::Sender<()>>,
}

/// A file by device and inode: a file deleted and created again at the same path, or another
/// file moved there, is another file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct FileId(u64, u64);

impl FileId {
    pub(super) fn of(path: &Path) -> Option<FileId> {
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
    pub(super) fn check_file(&self) -> StoreResult<()> {
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
    pub(super) fn connection(&self) -> StoreResult<Connection> {
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
    pub(super) fn give_back(&self, conn: Connection) {
        if let Ok(mut pool) = self.pool.lock()
            && pool.len() < 16
        {
            pool.push(conn);
        }
    }
}

/// When a connection's commits reach the disk.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Durability {
    /// `synchronous = NORMAL` (WAL): a commit survives a crash of the process, and the
    /// file is synced at each checkpoint.
    Durable,
    /// `synchronous = OFF`, for a bulk load: never synced until [`super::SqliteStore::settle`]
    /// (a seed of 1,000 machines spent 15 s of its 2 minutes waiting for syncs).
    Loading,
}

pub(super) fn backend(e: impl std::fmt::Display) -> StoreError {
    StoreError::Backend(e.to_string())
}

/// How long a statement waits for another connection's lock before it fails: the one
/// bounded wait of a write on a locked file, after which it is refused with 503.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// Whether opening may create the file: only the store's first connection may.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Create {
    Yes,
    No,
}

pub(super) fn open(path: &Path, sync: Durability, create: Create) -> StoreResult<Connection> {
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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::SqliteStore;
    use crate::testing::entry;
    use netops_store::{Documents, Tokens, WriteLog};

    #[tokio::test]
    async fn a_deleted_file_refuses_writes_and_is_not_created_again() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("t.db");
        let s = SqliteStore::open(&path).expect("open");
        s.commit(entry("a"), Vec::new()).await.expect("before");
        std::fs::remove_file(&path).expect("delete");
        assert!(s.commit(entry("a"), Vec::new()).await.is_err());
        assert!(
            s.put("a", "c", vec![("k".into(), json!({}))])
                .await
                .is_err()
        );
        // A new connection (the inline one is opened on first use) creates nothing.
        assert!(s.by_hash("x").await.is_err());
        assert!(!path.exists());
        // Nor does another file put in its place take the writes.
        std::fs::write(&path, b"").expect("empty file");
        assert!(s.commit(entry("a"), Vec::new()).await.is_err());
        assert_eq!(std::fs::metadata(&path).expect("file").len(), 0);
    }
}
