//! Documents in the embedded store: the `docs` table, keyed by tenant, collection and key.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use rusqlite::types::Value as SqlValue;
use rusqlite::{Connection, OptionalExtension, params, params_from_iter};
use serde_json::Value;

use super::SqliteStore;
use super::conn::backend;
use super::sql::{filter_sql, json_path, json_text, parse_json, sql_limit};

use netops_store::ports::docs::{aging_or_refused, distinct};
use netops_store::{
    All, Doc, DocText, Documents, Expect, Filter, READ_ALL, StoreError, StoreResult,
};

/// Runs `sql`, which selects `key, version, body` from `docs`, into documents.
fn read_docs(c: &Connection, sql: &str, args: Vec<SqlValue>) -> StoreResult<Vec<Doc>> {
    read_rows(c, sql, args, |key, version, body| {
        Ok(Doc {
            key,
            version,
            body: parse_json(&body)?,
        })
    })
}

/// Runs `sql`, which selects `key, version, body` from `docs`, each row through `row`.
fn read_rows<T>(
    c: &Connection,
    sql: &str,
    args: Vec<SqlValue>,
    row: impl Fn(String, u64, String) -> StoreResult<T>,
) -> StoreResult<Vec<T>> {
    let mut s = c.prepare_cached(sql).map_err(backend)?;
    let mut rows = s.query(params_from_iter(args)).map_err(backend)?;
    let mut out = Vec::new();
    while let Some(r) = rows.next().map_err(backend)? {
        out.push(row(
            r.get(0).map_err(backend)?,
            r.get(1).map_err(backend)?,
            r.get(2).map_err(backend)?,
        )?);
    }
    Ok(out)
}

/// The statement and arguments of a page of a collection: documents in key order after
/// `after`, matching `filter`, at most `limit`.
fn list_sql(
    tenant: &str,
    collection: &str,
    filter: &Filter,
    after: Option<&str>,
    limit: usize,
) -> StoreResult<(String, Vec<SqlValue>)> {
    let mut args = vec![
        SqlValue::Text(tenant.to_owned()),
        SqlValue::Text(collection.to_owned()),
    ];
    let mut sql = String::from("SELECT key, version, body FROM docs WHERE tenant = ? AND coll = ?");
    if let Some(a) = after {
        sql.push_str(" AND key > ?");
        args.push(SqlValue::Text(a.to_owned()));
    }
    sql.push_str(&filter_sql(filter, "body", &mut args)?);
    sql.push_str(" ORDER BY key LIMIT ?");
    args.push(sql_limit(limit));
    Ok((sql, args))
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

    /// Key by key on one connection, one snapshot.
    async fn get_many(
        &self,
        tenant: &str,
        collection: &str,
        keys: &[String],
    ) -> StoreResult<Vec<Doc>> {
        let (tenant, coll, keys) = (tenant.to_owned(), collection.to_owned(), distinct(keys));
        self.with(move |c| {
            let c = c.transaction().map_err(backend)?;
            let mut out = Vec::with_capacity(keys.len());
            for key in keys {
                out.extend(doc_by_key(&c, &tenant, &coll, key)?);
            }
            c.commit().map_err(backend)?;
            Ok(out)
        })
        .await
    }

    async fn list(
        &self,
        tenant: &str,
        collection: &str,
        filter: &Filter,
        after: Option<&str>,
        limit: usize,
    ) -> StoreResult<Vec<Doc>> {
        let (sql, args) = list_sql(tenant, collection, filter, after, limit)?;
        self.with(move |c| read_docs(c, &sql, args)).await
    }

    /// The page's bodies as SQLite holds them: never parsed here.
    async fn list_bounded(
        &self,
        tenant: &str,
        collection: &str,
        filter: &Filter,
        after: Option<&str>,
        limit: usize,
    ) -> StoreResult<(Vec<DocText>, Option<String>)> {
        let (sql, args) = list_sql(tenant, collection, filter, after, limit)?;
        let texts = self
            .with(move |c| read_rows(c, &sql, args, |key, _, body| Ok(DocText { key, body })))
            .await?;
        Ok((texts, None))
    }

    /// Selected by SQLite, the end date compared as the sweep compares it.
    async fn live_since(
        &self,
        tenant: &str,
        collection: &str,
        since: Option<DateTime<Utc>>,
    ) -> StoreResult<All<Doc>> {
        let aging = aging_or_refused(collection)?;
        let end = format!("json_extract(body, {})", json_path(aging.ended)?);
        // The bound as a Julian day, what SQLite's julianday() gives of any RFC 3339 date.
        let since = since.map_or(f64::INFINITY, |t| {
            t.timestamp_millis() as f64 / 86_400_000.0 + 2_440_587.5
        });
        let sql = format!(
            "SELECT key, version, body FROM docs WHERE tenant = ? AND coll = ? \
             AND ({end} IS NULL OR julianday({end}) >= ?) ORDER BY key LIMIT ?"
        );
        let args = vec![
            SqlValue::Text(tenant.to_owned()),
            SqlValue::Text(collection.to_owned()),
            SqlValue::Real(since),
            sql_limit(READ_ALL + 1),
        ];
        let docs = self.with(move |c| read_docs(c, &sql, args)).await?;
        Ok(All::of_list(docs, tenant, collection))
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

    /// The version compared and the document put in one write transaction.
    async fn put_if(
        &self,
        tenant: &str,
        collection: &str,
        key: &str,
        body: Value,
        expect: Expect,
    ) -> StoreResult<()> {
        let (tenant, coll, key) = (tenant.to_owned(), collection.to_owned(), key.to_owned());
        self.with_write(move |tx| put_doc(tx, &tenant, &coll, &key, &body, expect))
            .await
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::testing::store;
    use netops_store::{Documents, StoreError};

    #[tokio::test]
    async fn get_many_returns_the_documents_of_the_keys_that_exist() {
        let (_d, s) = store();
        let docs = (0..5).map(|i| (format!("k{i}"), json!({"n": i}))).collect();
        s.put("t", "c", docs).await.expect("put");
        s.put("u", "c", vec![("k9".into(), json!({}))])
            .await
            .expect("put");
        let keys: Vec<String> = ["k3", "k1", "k9", "k3"].map(String::from).into();
        let mut got: Vec<String> = s
            .get_many("t", "c", &keys)
            .await
            .expect("get")
            .into_iter()
            .map(|d| d.key)
            .collect();
        got.sort();
        assert_eq!(
            got,
            ["k1", "k3"],
            "once each; another tenant's key is not found"
        );
    }

    #[tokio::test]
    async fn live_since_takes_what_is_in_progress_and_what_ended_since() {
        let (_d, s) = store();
        let doc = |closed: Option<&str>| json!({"opened_at": "2026-10-01T00:00:00Z", "closed_at": closed});
        let docs = vec![
            ("open".to_owned(), doc(None)),
            ("old".to_owned(), doc(Some("2026-10-31T23:59:59.999Z"))),
            ("edge".to_owned(), doc(Some("2026-11-01T00:00:00Z"))),
            // The same instant as the bound, in another offset.
            ("offset".to_owned(), doc(Some("2026-11-01T01:00:00+01:00"))),
            ("late".to_owned(), doc(Some("2026-11-03T00:00:00.5Z"))),
        ];
        s.put("t", "siem_incidents", docs).await.expect("put");
        let since = chrono::DateTime::parse_from_rfc3339("2026-11-01T00:00:00Z")
            .expect("date")
            .to_utc();
        let keys = |since| {
            let s = s.clone();
            async move {
                let all = s
                    .live_since("t", "siem_incidents", since)
                    .await
                    .expect("live");
                assert!(!all.cut);
                all.items.into_iter().map(|d| d.key).collect::<Vec<_>>()
            }
        };
        assert_eq!(keys(Some(since)).await, ["edge", "late", "offset", "open"]);
        assert_eq!(keys(None).await, ["open"]);
        let other = s
            .live_since("u", "siem_incidents", None)
            .await
            .expect("live");
        assert!(other.items.is_empty());
        assert!(matches!(
            s.live_since("t", "machines", None).await,
            Err(StoreError::Data(_))
        ));
    }
}
