//! The write log in the embedded store: the `writes` table, committed in the transaction of
//! the changes it logs, coalesced refusals keyed by `ckey`; expired entries are swept off the
//! request path (`super::sweep`). Idempotency keys are rows of `idempotency`, their answers
//! kept in the transaction of the write they answer.

use async_trait::async_trait;
use rusqlite::{OptionalExtension, params};

use super::SqliteStore;
use super::conn::backend;
use super::docs::put_doc;
use super::series::{RecordRow, insert_records};
use super::sql::text;
use netops_store::{
    ABANDONED_AFTER_SECS, Change, HeldKey, KeptAnswer, KeyClaim, StoreError, StoreResult, WriteLog,
    WriteLogEntry,
};

/// A write-log entry as stored (its count and last time are columns of their own).
fn entry_text(log: &WriteLogEntry) -> rusqlite::Result<String> {
    serde_json::to_string(log).map_err(|e| rusqlite::Error::ToSqlConversionFailure(Box::new(e)))
}

fn parse_entry(text: &str) -> StoreResult<WriteLogEntry> {
    serde_json::from_str(text).map_err(|e| StoreError::Data(e.to_string()))
}

#[async_trait]
impl WriteLog for SqliteStore {
    async fn commit(&self, log: WriteLogEntry, changes: Vec<Change>) -> StoreResult<()> {
        self.with_write(move |tx| {
            for change in changes {
                match change {
                    Change::PutDoc {
                        collection,
                        key,
                        body,
                        expect,
                    } => put_doc(tx, &log.tenant, &collection, &key, &body, expect)?,
                    Change::Append { series, record } => {
                        insert_records(tx, &log.tenant, &series, &[RecordRow::from(record)])?
                    }
                    Change::Remember { key, claim, answer } => {
                        let answer = serde_json::to_string(&answer)
                            .map_err(|e| StoreError::Data(e.to_string()))?;
                        let kept = tx
                            .prepare_cached(
                                "UPDATE idempotency SET answer = ?4 WHERE tenant = ?1 \
                                 AND key = ?2 AND claim = ?3 AND answer IS NULL",
                            )
                            .and_then(|mut s| s.execute(params![log.tenant, key, claim, answer]))
                            .map_err(backend)?;
                        if kept == 0 {
                            return Err(StoreError::ConditionFailed);
                        }
                    }
                }
            }
            tx.prepare_cached("INSERT INTO writes (tenant, entry, expires) VALUES (?1, ?2, ?3)")
                .and_then(|mut s| s.execute(params![log.tenant, entry_text(&log)?, log.expires_at]))
                .map_err(backend)?;
            Ok(())
        })
        .await
    }

    /// The entry is dated by its first refusal: `since` orders nothing here.
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

    async fn entries(&self, tenant: &str) -> StoreResult<Vec<WriteLogEntry>> {
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
            // Oldest first by their time (a coalesced entry's first refusal), whatever order
            // they were committed in; entries of one time in that order.
            out.sort_by_key(|e| e.at);
            Ok(out)
        })
        .await
    }

    async fn claim_key(&self, tenant: &str, claim: &KeyClaim) -> StoreResult<Option<HeldKey>> {
        let (tenant, claim) = (tenant.to_owned(), claim.clone());
        self.with_write(move |tx| {
            let held = tx
                .prepare_cached(
                    "SELECT fingerprint, answer, at, expires FROM idempotency \
                     WHERE tenant = ?1 AND key = ?2",
                )
                .and_then(|mut s| {
                    s.query_row(params![tenant, claim.key], |r| {
                        Ok((
                            r.get::<_, String>(0)?,
                            r.get::<_, Option<String>>(1)?,
                            r.get::<_, i64>(2)?,
                            r.get::<_, i64>(3)?,
                        ))
                    })
                    .optional()
                })
                .map_err(backend)?;
            if let Some((fingerprint, answer, at, expires)) = held {
                let abandoned = answer.is_none() && at + ABANDONED_AFTER_SECS <= claim.at;
                if expires > claim.at && !abandoned {
                    let answer = answer
                        .map(|a| serde_json::from_str::<KeptAnswer>(&a))
                        .transpose()
                        .map_err(|e| StoreError::Data(e.to_string()))?;
                    return Ok(Some(HeldKey {
                        fingerprint,
                        answer,
                    }));
                }
            }
            tx.prepare_cached(
                "INSERT OR REPLACE INTO idempotency \
                 (tenant, key, fingerprint, claim, at, expires, answer) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, NULL)",
            )
            .and_then(|mut s| {
                s.execute(params![
                    tenant,
                    claim.key,
                    claim.fingerprint,
                    claim.claim,
                    claim.at,
                    claim.expires_at
                ])
            })
            .map_err(backend)?;
            Ok(None)
        })
        .await
    }

    async fn release_key(&self, tenant: &str, key: &str, claim: &str) -> StoreResult<()> {
        let (tenant, key, claim) = (tenant.to_owned(), key.to_owned(), claim.to_owned());
        self.with_write(move |tx| {
            tx.prepare_cached(
                "DELETE FROM idempotency WHERE tenant = ?1 AND key = ?2 AND claim = ?3 \
                 AND answer IS NULL",
            )
            .and_then(|mut s| s.execute(params![tenant, key, claim]))
            .map_err(backend)?;
            Ok(())
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;
    use crate::testing::{entry, store};
    use netops_store::{Documents, Expect};

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
        let log = s.entries("a").await.expect("log");
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
        assert_eq!(s.entries("b").await.expect("log")[0].count, Some(1));
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
        let doc = s.get("a", "inc", "1").await.expect("get").expect("doc");
        assert_eq!(doc.version, 1);
        let err = s.commit(entry("a"), vec![put(Expect::Version(7))]).await;
        assert!(matches!(err, Err(StoreError::ConditionFailed)));
        assert_eq!(s.entries("a").await.expect("log").len(), 1);
        s.commit(entry("a"), vec![put(Expect::Version(1))])
            .await
            .expect("second");
        assert_eq!(
            s.get("a", "inc", "1")
                .await
                .expect("get")
                .expect("doc")
                .version,
            2
        );
        assert_eq!(s.entries("a").await.expect("log").len(), 2);
        assert!(s.entries("b").await.expect("log").is_empty());
    }
}
