//! The deployment port of the embedded store: secrets in the `meta` table, emptiness, clearing a
//! tenant.

use async_trait::async_trait;
use rusqlite::params;

use super::SqliteStore;
use super::conn::backend;
use netops_store::{Deployment, StoreResult};

#[async_trait]
impl Deployment for SqliteStore {
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

    /// No document, series record or rollup of any tenant: what `clear_tenant` removes.
    async fn is_empty(&self) -> StoreResult<bool> {
        self.with(|c| {
            c.query_row(
                "SELECT NOT EXISTS (SELECT 1 FROM docs) AND NOT EXISTS (SELECT 1 FROM series) \
                 AND NOT EXISTS (SELECT 1 FROM rollups)",
                [],
                |r| r.get(0),
            )
            .map_err(backend)
        })
        .await
    }

    async fn tenants(&self) -> StoreResult<Vec<String>> {
        self.with(|c| {
            let mut s = c
                .prepare("SELECT DISTINCT tenant FROM tokens ORDER BY tenant")
                .map_err(backend)?;
            let rows = s.query_map([], |r| r.get(0)).map_err(backend)?;
            rows.collect::<Result<Vec<String>, _>>().map_err(backend)
        })
        .await
    }

    async fn clear_tenant(&self, tenant: &str) -> StoreResult<()> {
        let tenant = tenant.to_owned();
        self.with_write(move |tx| {
            for table in ["docs", "series", "rollups", "idempotency", "ingested"] {
                tx.execute(&format!("DELETE FROM {table} WHERE tenant = ?1"), [&tenant])
                    .map_err(backend)?;
            }
            Ok(())
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::testing::store;
    use netops_store::{Deployment, Documents};

    #[tokio::test]
    async fn a_secret_is_created_once_and_kept() {
        let (_d, s) = store();
        let first = s.secret("c").await.expect("secret");
        assert_eq!(first.len(), 32);
        assert_eq!(s.secret("c").await.expect("secret"), first);
        assert_ne!(s.secret("other").await.expect("secret"), first);
    }

    #[tokio::test]
    async fn clearing_a_tenant_empties_only_its_data() {
        let (_d, s) = store();
        assert!(s.is_empty().await.expect("empty"));
        let doc = || vec![("k".to_owned(), json!({"n": 1}))];
        s.put("a", "c", doc()).await.expect("put");
        s.put("b", "c", doc()).await.expect("put");
        assert!(!s.is_empty().await.expect("empty"));
        s.clear_tenant("a").await.expect("clear");
        assert!(s.get("a", "c", "k").await.expect("get").is_none());
        assert!(s.get("b", "c", "k").await.expect("get").is_some());
    }
}
