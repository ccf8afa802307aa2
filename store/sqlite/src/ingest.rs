//! The ingestion log in the embedded store: the `ingested` table, one row per batch keyed by
//! tenant and batch id (a conditional insert records a batch once); expired entries are swept
//! off the request path (`super::sweep`).

use async_trait::async_trait;
use rusqlite::{OptionalExtension, params};

use super::SqliteStore;
use super::conn::backend;
use super::sql::text;
use netops_store::{IngestEntry, IngestLog, StoreError, StoreResult};

fn parse_entry(text: &str, expires_at: i64) -> StoreResult<IngestEntry> {
    let mut entry: IngestEntry =
        serde_json::from_str(text).map_err(|e| StoreError::Data(e.to_string()))?;
    entry.expires_at = expires_at;
    Ok(entry)
}

fn unexpired(
    c: &rusqlite::Connection,
    tenant: &str,
    batch: &str,
    now: i64,
) -> StoreResult<Option<IngestEntry>> {
    let row = c
        .prepare_cached(
            "SELECT entry, expires FROM ingested WHERE tenant = ?1 AND batch = ?2 AND expires > ?3",
        )
        .and_then(|mut s| {
            s.query_row(params![tenant, batch, now], |r| {
                Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?))
            })
            .optional()
        })
        .map_err(backend)?;
    row.map(|(entry, expires)| parse_entry(&entry, expires))
        .transpose()
}

#[async_trait]
impl IngestLog for SqliteStore {
    /// One transaction: an expired row of the same batch id is replaced, an unexpired one
    /// answered.
    async fn record(&self, entry: IngestEntry) -> StoreResult<Option<IngestEntry>> {
        let now = chrono::Utc::now().timestamp();
        self.with_write(move |tx| {
            if let Some(first) = unexpired(tx, &entry.tenant, &entry.batch_id, now)? {
                return Ok(Some(first));
            }
            let text =
                serde_json::to_string(&entry).map_err(|e| StoreError::Data(e.to_string()))?;
            tx.prepare_cached(
                "INSERT OR REPLACE INTO ingested (tenant, batch, at, expires, entry) \
                 VALUES (?1, ?2, ?3, ?4, ?5)",
            )
            .and_then(|mut s| {
                s.execute(params![
                    entry.tenant,
                    entry.batch_id,
                    entry.at.timestamp_millis(),
                    entry.expires_at,
                    text
                ])
            })
            .map_err(backend)?;
            Ok(None)
        })
        .await
    }

    async fn batch(&self, tenant: &str, batch_id: &str) -> StoreResult<Option<IngestEntry>> {
        let (tenant, batch) = (tenant.to_owned(), batch_id.to_owned());
        let now = chrono::Utc::now().timestamp();
        self.with(move |c| unexpired(c, &tenant, &batch, now)).await
    }

    async fn ingested(&self, tenant: &str) -> StoreResult<Vec<IngestEntry>> {
        let tenant = tenant.to_owned();
        let now = chrono::Utc::now().timestamp();
        self.with(move |c| {
            let mut s = c
                .prepare(
                    "SELECT entry, expires FROM ingested WHERE tenant = ?1 AND expires > ?2 \
                     ORDER BY at, batch",
                )
                .map_err(backend)?;
            let mut rows = s.query(params![tenant, now]).map_err(backend)?;
            let mut out = Vec::new();
            while let Some(r) = rows.next().map_err(backend)? {
                let expires: i64 = r.get(1).map_err(backend)?;
                out.push(parse_entry(text(r, 0)?, expires)?);
            }
            Ok(out)
        })
        .await
    }
}
