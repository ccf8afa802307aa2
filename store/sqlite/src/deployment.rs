//! The deployment port of the embedded store: secrets in the `meta` table, emptiness, clearing a
//! tenant.

use async_trait::async_trait;
use rusqlite::params;
use rusqlite::types::{Value as SqlValue, ValueRef};
use serde_json::{Map, Value};

use super::SqliteStore;
use super::conn::backend;
use netops_store::{Deployment, ExportPage, Pace, StoreError, StoreResult};

/// The tables holding a tenant's data, each with the columns that key a row within the
/// tenant: what `clear_tenant` empties.
const TENANT_DATA: [(&str, &str); 5] = [
    ("docs", "coll, key"),
    ("series", "series, ts, id, part"),
    ("rollups", "series, hour, key"),
    ("idempotency", "key"),
    ("ingested", "batch"),
];

/// Every table with a `tenant` column, in the order `delete_tenant` empties them: the data,
/// the write log, then the tokens (the tenant's record) last.
const TENANT_ALL: [(&str, &str); 8] = [
    TENANT_DATA[0],
    TENANT_DATA[1],
    TENANT_DATA[2],
    TENANT_DATA[3],
    TENANT_DATA[4],
    ("writes", "seq"),
    ("token_use", "hash"),
    ("tokens", "hash"),
];

/// Rows removed by one write transaction of `delete_tenant`: short enough for the requests'
/// writes to go between two.
const DELETE_BATCH: usize = 500;

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
            for (table, _) in TENANT_DATA {
                tx.execute(&format!("DELETE FROM {table} WHERE tenant = ?1"), [&tenant])
                    .map_err(backend)?;
            }
            Ok(())
        })
        .await
    }

    /// Row counts over the tenant's range of each table's key or index.
    async fn tenant_items(&self, tenant: &str) -> StoreResult<Option<u64>> {
        let tenant = tenant.to_owned();
        self.with(move |c| {
            let mut total = 0u64;
            for (table, _) in TENANT_ALL {
                let n: i64 = c
                    .query_row(
                        &format!("SELECT COUNT(*) FROM {table} WHERE tenant = ?1"),
                        [&tenant],
                        |r| r.get(0),
                    )
                    .map_err(backend)?;
                total += n.max(0) as u64;
            }
            Ok(Some(total))
        })
        .await
    }

    /// Table by table, [`DELETE_BATCH`] rows a transaction, paced.
    async fn delete_tenant(&self, tenant: &str, pace: &Pace) -> StoreResult<()> {
        for (table, key) in TENANT_ALL {
            loop {
                let batch = pace.allowance(DELETE_BATCH);
                if batch == 0 {
                    return Ok(());
                }
                let tenant = tenant.to_owned();
                let removed = self
                    .with_write(move |tx| {
                        tx.execute(
                            &format!(
                                "DELETE FROM {table} WHERE tenant = ?1 AND ({key}) IN \
                                 (SELECT {key} FROM {table} WHERE tenant = ?1 LIMIT ?2)"
                            ),
                            params![tenant, batch as i64],
                        )
                        .map_err(backend)
                    })
                    .await?;
                pace.removed(table, removed).await;
                if removed < batch {
                    break;
                }
            }
        }
        Ok(())
    }

    /// Table by table in key order: a page ends at its table's end.
    async fn export_page(
        &self,
        tenant: &str,
        from: Option<&str>,
        limit: usize,
    ) -> StoreResult<ExportPage> {
        let start = ExportPosition {
            table: TENANT_ALL[0].0.to_owned(),
            after: Vec::new(),
        };
        let position = ExportPage::position(from, start)?;
        let index = TENANT_ALL
            .iter()
            .position(|(t, _)| *t == position.table)
            .ok_or_else(|| StoreError::Data("export position: unknown table".into()))?;
        let (table, key) = TENANT_ALL[index];
        let tenant = tenant.to_owned();
        let after = position.after;
        let limit = limit.max(1);
        let rows = self
            .with(move |c| export_rows(c, table, key, &tenant, &after, limit))
            .await?;
        // A short page ends its table: the next one starts the next table, if any.
        let next = match rows.last() {
            Some((_, last)) if rows.len() == limit => Some(ExportPosition {
                table: table.to_owned(),
                after: last.clone(),
            }),
            _ => TENANT_ALL.get(index + 1).map(|(t, _)| ExportPosition {
                table: (*t).to_owned(),
                after: Vec::new(),
            }),
        };
        let items = rows.into_iter().map(|(item, _)| (table, item)).collect();
        Ok(ExportPage::of(items, 0, next))
    }
}

/// Where an export page starts: a table of [`TENANT_ALL`], and the key of the last row read
/// in it (none: its first row).
#[derive(serde::Serialize, serde::Deserialize)]
struct ExportPosition {
    table: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    after: Vec<Value>,
}

fn json_of(v: ValueRef<'_>) -> Value {
    match v {
        ValueRef::Null => Value::Null,
        ValueRef::Integer(i) => i.into(),
        ValueRef::Real(f) => f.into(),
        ValueRef::Text(t) => String::from_utf8_lossy(t).into_owned().into(),
        // No tenant table holds a blob; said rather than lost if one ever does.
        ValueRef::Blob(b) => serde_json::json!({ "blob_bytes": b.len() }),
    }
}

fn sql_of(v: &Value) -> StoreResult<SqlValue> {
    match v {
        Value::String(s) => Ok(SqlValue::Text(s.clone())),
        Value::Number(n) => n
            .as_i64()
            .map(SqlValue::Integer)
            .ok_or_else(|| StoreError::Data("export position: a key is not an integer".into())),
        _ => Err(StoreError::Data(
            "export position: a key is not text or integer".into(),
        )),
    }
}

/// One table's rows of `tenant` after `after` in key order, `limit` at most, as JSON objects
/// (text columns as stored: the JSON bodies stay strings), each with its key.
fn export_rows(
    c: &rusqlite::Connection,
    table: &str,
    key: &str,
    tenant: &str,
    after: &[Value],
    limit: usize,
) -> StoreResult<Vec<(Value, Vec<Value>)>> {
    let columns: Vec<&str> = key.split(", ").collect();
    let mut args = vec![
        SqlValue::Text(tenant.to_owned()),
        SqlValue::Integer(limit as i64),
    ];
    let mut sql = format!("SELECT * FROM {table} WHERE tenant = ?1");
    if !after.is_empty() {
        if after.len() != columns.len() {
            return Err(StoreError::Data("export position: wrong key length".into()));
        }
        let marks: Vec<String> = (0..after.len()).map(|i| format!("?{}", i + 3)).collect();
        sql.push_str(&format!(" AND ({key}) > ({})", marks.join(", ")));
        for v in after {
            args.push(sql_of(v)?);
        }
    }
    sql.push_str(&format!(" ORDER BY {key} LIMIT ?2"));
    let mut s = c.prepare(&sql).map_err(backend)?;
    let names: Vec<String> = s.column_names().iter().map(|n| (*n).to_owned()).collect();
    let rows = s
        .query_map(rusqlite::params_from_iter(args), |r| {
            let mut item = Map::new();
            for (i, name) in names.iter().enumerate() {
                item.insert(name.clone(), json_of(r.get_ref(i)?));
            }
            Ok(item)
        })
        .map_err(backend)?;
    rows.map(|row| {
        let item = row.map_err(backend)?;
        let key = columns.iter().map(|c| item[*c].clone()).collect();
        Ok((Value::Object(item), key))
    })
    .collect()
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
