//! The file's schema and its migrations from earlier layouts.

use rusqlite::{Connection, TransactionBehavior};

use super::conn::backend;
use netops_store::StoreResult;

pub(super) const SCHEMA: &str = r#"
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
CREATE TABLE IF NOT EXISTS token_use (
    hash TEXT PRIMARY KEY,
    tenant TEXT NOT NULL,
    at INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS token_use_by_tenant ON token_use (tenant);
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
CREATE TABLE IF NOT EXISTS idempotency (
    tenant TEXT NOT NULL,
    key TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    claim TEXT NOT NULL,
    at INTEGER NOT NULL,
    expires INTEGER NOT NULL,
    answer TEXT,
    PRIMARY KEY (tenant, key)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS idempotency_by_expiry ON idempotency (expires);
CREATE TABLE IF NOT EXISTS ingested (
    tenant TEXT NOT NULL,
    batch TEXT NOT NULL,
    at INTEGER NOT NULL,
    expires INTEGER NOT NULL,
    entry TEXT NOT NULL,
    PRIMARY KEY (tenant, batch)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS ingested_by_expiry ON ingested (expires);
CREATE TABLE IF NOT EXISTS meta (
    key TEXT PRIMARY KEY,
    value BLOB NOT NULL
);
"#;

/// Layout of the file (`PRAGMA user_version`): 3 gives write-log entries an expiry and
/// coalesced refusals their key, count and last time; 2 keeps series records in time order (a
/// read of every partition walks the table itself, filters included, instead of an index and
/// one lookup per record); 0 is a new file or the first layout, keyed by partition first.
const LAYOUT: i64 = 3;

/// Brings a file of an earlier layout to [`LAYOUT`], records included, in one transaction.
pub(super) fn migrate(conn: &mut Connection) -> StoreResult<()> {
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
            [i64::from(netops_store::config::DEFAULT_WRITE_LOG_DAYS) * 86_400],
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

#[cfg(test)]
mod tests {
    use rusqlite::Connection;
    use serde_json::json;

    use crate::SqliteStore;
    use crate::conn::backend;
    use netops_store::{Filter, SeriesQuery, SeriesRead, WriteLog};

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
        let log = s.entries("a").await.expect("log");
        assert_eq!(log.len(), 1);
        assert_eq!(log[0].body, json!({"note": "vu"}));
        let days = i64::from(netops_store::config::DEFAULT_WRITE_LOG_DAYS);
        assert_eq!(log[0].expires_at, at.timestamp() + days * 86_400);
    }

    #[tokio::test]
    async fn a_file_of_the_first_layout_is_migrated_with_its_records() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("old.db");
        let old = Connection::open(&path).expect("open");
        // Recent records: older ones than the retention would be swept at open.
        let now = chrono::Utc::now().timestamp_millis();
        old.execute_batch(&format!(
            "CREATE TABLE series (tenant TEXT NOT NULL, series TEXT NOT NULL, part TEXT NOT NULL, \
             ts INTEGER NOT NULL, id TEXT NOT NULL, body TEXT NOT NULL, \
             PRIMARY KEY (tenant, series, part, ts, id)) WITHOUT ROWID; \
             CREATE INDEX series_by_time ON series (tenant, series, ts, id); \
             INSERT INTO series VALUES ('a', 'ev', 'm1', {}, 'x', '{{\"n\":1}}'); \
             INSERT INTO series VALUES ('a', 'ev', 'm2', {}, 'y', '{{\"n\":2}}');",
            now - 2000,
            now - 1000
        ))
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
}
