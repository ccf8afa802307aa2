//! Documents in the embedded store: the `docs` table, keyed by tenant, collection and key.

use async_trait::async_trait;
use rusqlite::types::Value as SqlValue;
use rusqlite::{Connection, OptionalExtension, params, params_from_iter};
use serde_json::Value;

use super::SqliteStore;
use super::conn::backend;
use super::sql::{filter_sql, json_path, json_text, parse_json, sql_limit};
use crate::store::{DateQuery, DatedPage, Doc, Documents, Expect, Filter, StoreError, StoreResult};

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

pub(super) fn put_doc(
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

#[async_trait]
impl Documents for SqliteStore {
    async fn get(&self, tenant: &str, collection: &str, key: &str) -> StoreResult<Option<Doc>> {
        let (tenant, coll, key) = (tenant.to_owned(), collection.to_owned(), key.to_owned());
        self.with(move |c| doc_by_key(c, &tenant, &coll, key)).await
    }

    async fn list(
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
    async fn newest_by_date(&self, q: &DateQuery<'_>) -> StoreResult<DatedPage> {
        // Seconds with milliseconds, exact for millisecond bounds. Each document's date and
        // filter are computed once (a materialised pass over the collection, bodies read
        // once); the matches are sorted without their bodies, counted, and only the page's
        // bodies are then read, by key.
        let time = format!(
            "unixepoch(json_extract(body, {}), 'subsec')",
            json_path(q.field)?
        );
        let mut args = Vec::new();
        let or = match q.or {
            // `1 AND <predicates>`: the filter's conjunction as one term.
            Some(f) => format!("(1{})", filter_sql(f, "body", &mut args)?),
            None => "0".to_owned(),
        };
        args.extend([
            SqlValue::Text(q.tenant.to_owned()),
            SqlValue::Text(q.collection.to_owned()),
            SqlValue::Real(q.from.timestamp_millis() as f64 / 1000.0),
            SqlValue::Real(q.to.timestamp_millis() as f64 / 1000.0),
        ]);
        let matching = format!(
            "WITH d AS MATERIALIZED (SELECT key, {time} AS t, {or} AS also \
             FROM docs WHERE tenant = ? AND coll = ?) \
             SELECT key FROM d WHERE t IS NOT NULL AND ((t >= ? AND t < ?) OR also) \
             ORDER BY t DESC, key DESC"
        );
        let (tenant, collection, limit) = (q.tenant.to_owned(), q.collection.to_owned(), q.limit);
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
            Ok(DatedPage { docs: page, total })
        })
        .await
    }

    async fn put(
        &self,
        tenant: &str,
        collection: &str,
        docs: Vec<(String, Value)>,
    ) -> StoreResult<()> {
        let (tenant, coll) = (tenant.to_owned(), collection.to_owned());
        self.with_write(move |tx| {
            for (key, body) in &docs {
                put_doc(tx, &tenant, &coll, key, body, Expect::Any)?;
            }
            Ok(())
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::store::sqlite::testing::store;
    use crate::store::{DateQuery, Doc, Documents, Filter, Pred};

    #[tokio::test]
    async fn newest_by_date_orders_and_counts_by_a_date_field_within_the_window() {
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
        s.put("t", "c", docs).await.expect("put");
        let at = |t: &str| {
            chrono::DateTime::parse_from_rfc3339(t)
                .expect("date")
                .with_timezone(&chrono::Utc)
        };
        let (from, to) = (at("2026-11-01T00:00:00Z"), at("2026-11-02T00:00:00Z"));
        let keys = |docs: Vec<Doc>| docs.into_iter().map(|d| d.key).collect::<Vec<_>>();
        let open = Filter::all().and(Pred::Eq("status", json!("open")));
        let read = |tenant, or, limit| {
            let q = DateQuery {
                tenant,
                collection: "c",
                field: "opened_at",
                from,
                to,
                or,
                limit,
            };
            let s = s.clone();
            async move { s.newest_by_date(&q).await.expect("newest") }
        };
        let page = read("t", None, 3).await;
        assert_eq!(
            (keys(page.docs), page.total),
            (vec!["b".into(), "c".into(), "a".into()], 4)
        );
        let page = read("t", None, 0).await;
        assert_eq!((page.docs.len(), page.total), (0, 4));
        // Open ones count whatever their date (but never without one).
        let page = read("t", Some(&open), 10).await;
        let expected: Vec<String> = ["d", "b", "c", "a", "h", "e"].map(String::from).into();
        assert_eq!((keys(page.docs), page.total), (expected, 6));
        let page = read("other", Some(&open), 10).await;
        assert_eq!((page.docs.len(), page.total), (0, 0));
    }
}
