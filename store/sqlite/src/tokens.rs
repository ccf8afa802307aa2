//! Tokens in the embedded store: the `tokens` table, keyed by hash, and their last-used
//! times in `token_use` (a table of its own, so that files made before it need no migration).

use async_trait::async_trait;
use rusqlite::{OptionalExtension, params};

use super::SqliteStore;
use super::conn::backend;
use netops_routes::scope::Scope;
use netops_store::{LAST_USED_EVERY_SECS, StoreError, StoreResult, TokenRecord, Tokens};

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
        last_used_at: row.get(7)?,
    })
}

const TOKEN_COLS: &str = "hash, tenant, name, scopes, created_at, expires_at, revoked_at";

/// Tokens with their last-used time, as [`token_row`] reads them.
const TOKEN_SELECT: &str = "SELECT t.hash, t.tenant, t.name, t.scopes, t.created_at, t.expires_at, \
     t.revoked_at, u.at FROM tokens t LEFT JOIN token_use u ON u.hash = t.hash";

fn insert_row(tx: &rusqlite::Transaction<'_>, t: &TokenRecord) -> StoreResult<()> {
    let scopes: Vec<&str> = t.scopes.iter().map(|s| s.as_str()).collect();
    tx.execute(
        &format!("INSERT INTO tokens ({TOKEN_COLS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)"),
        params![
            t.hash,
            t.tenant,
            t.name,
            scopes.join(","),
            t.created_at,
            t.expires_at,
            t.revoked_at
        ],
    )
    .map_err(backend)?;
    Ok(())
}

#[async_trait]
impl Tokens for SqliteStore {
    async fn by_hash(&self, hash: &str) -> StoreResult<Option<TokenRecord>> {
        let hash = hash.to_owned();
        self.inline(move |c| {
            c.prepare_cached(&format!("{TOKEN_SELECT} WHERE t.hash = ?1"))
                .and_then(|mut s| s.query_row([hash], token_row).optional())
                .map_err(backend)
        })
        .await
    }

    async fn insert(&self, token: &TokenRecord) -> StoreResult<()> {
        let t = token.clone();
        self.with_write(move |tx| {
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
            insert_row(tx, &t)
        })
        .await
    }

    async fn revoke(&self, tenant: &str, name: &str, at: i64) -> StoreResult<bool> {
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

    async fn rotate(
        &self,
        old: &TokenRecord,
        new: &TokenRecord,
        old_until: i64,
    ) -> StoreResult<bool> {
        let (old, t) = (old.clone(), new.clone());
        self.with_write(move |tx| {
            let cut = tx
                .execute(
                    // The name's active token is its newest unrevoked, unexpired one (the
                    // tokens of a name rotated away from are older, in their overlap).
                    "UPDATE tokens SET expires_at = MIN(expires_at, ?2) \
                     WHERE hash = ?1 AND revoked_at IS NULL AND expires_at > ?3 \
                     AND NOT EXISTS (SELECT 1 FROM tokens o WHERE o.tenant = tokens.tenant \
                     AND o.name = tokens.name AND o.rowid > tokens.rowid \
                     AND o.revoked_at IS NULL AND o.expires_at > ?3)",
                    params![old.hash, old_until, t.created_at],
                )
                .map_err(backend)?;
            if cut == 0 {
                return Ok(false);
            }
            insert_row(tx, &t).map(|()| true)
        })
        .await
    }

    async fn touch(&self, hash: &str, at: i64) -> StoreResult<bool> {
        let hash = hash.to_owned();
        self.with_write(move |tx| {
            let n = tx
                .execute(
                    "INSERT INTO token_use (hash, tenant, at) SELECT hash, tenant, ?2 FROM tokens \
                     WHERE hash = ?1 ON CONFLICT (hash) DO UPDATE SET at = excluded.at \
                     WHERE token_use.at <= excluded.at - ?3",
                    params![hash, at, LAST_USED_EVERY_SECS],
                )
                .map_err(backend)?;
            Ok(n > 0)
        })
        .await
    }

    async fn list(&self, tenant: &str) -> StoreResult<Vec<TokenRecord>> {
        let tenant = tenant.to_owned();
        self.with(move |c| {
            let mut s = c
                .prepare(&format!(
                    "{TOKEN_SELECT} WHERE t.tenant = ?1 ORDER BY t.created_at, t.name"
                ))
                .map_err(backend)?;
            let rows = s.query_map([tenant], token_row).map_err(backend)?;
            rows.collect::<Result<Vec<_>, _>>().map_err(backend)
        })
        .await
    }
}
