//! The write log in DynamoDB: one item collection of the data table per tenant, each entry
//! written in the `TransactWriteItems` of the changes it logs, coalesced refusals counted by
//! `ADD`, expiry by TTL. Idempotency keys are items of `<tenant>|I`, taken by a conditional
//! put and given their answer in the transaction of the write they answer.

use std::collections::HashMap;
use std::ops::ControlFlow;

use async_trait::async_trait;
use aws_sdk_dynamodb::types::{TransactWriteItem, Update};

use super::DynamoStore;
use super::client::{backend, is_condition_failed};
use super::item::{Item, day_of, get_n, get_s, idempotency_pk, log_pk, n, s, ts_key};
use super::once::{NOT_MADE, SET_ONCE, once};
use super::requests::{each_item, tx_put};
use netops_store::{
    ABANDONED_AFTER_SECS, Change, HeldKey, KeptAnswer, KeyClaim, StoreError, StoreResult, WriteLog,
    WriteLogEntry,
};

/// A stored entry, with its count and last time when it stands for coalesced refusals.
fn entry_of(item: &Item, expires_at: i64) -> StoreResult<WriteLogEntry> {
    let mut entry: WriteLogEntry =
        serde_json::from_str(get_s(item, "e")?).map_err(|e| StoreError::Data(e.to_string()))?;
    entry.expires_at = expires_at;
    if item.contains_key("c") {
        entry.count = Some(get_n(item, "c")?);
        entry.last_at = Some(
            chrono::DateTime::parse_from_rfc3339(get_s(item, "la")?)
                .map_err(|e| StoreError::Data(e.to_string()))?
                .to_utc(),
        );
    }
    Ok(entry)
}

#[async_trait]
impl WriteLog for DynamoStore {
    async fn commit(&self, log: WriteLogEntry, changes: Vec<Change>) -> StoreResult<()> {
        // One TransactWriteItems: the changes and the log entry land together or not at all.
        if changes.len() > 99 {
            return Err(StoreError::Backend(format!(
                "{} changes exceed one transaction",
                changes.len()
            )));
        }
        let mut items = Vec::with_capacity(changes.len() + 1);
        // The days of the records appended, per series: reads of every partition walk the
        // days a series' extent holds, widened before the records land, as appends do.
        let mut days: HashMap<&str, (i64, i64)> = HashMap::new();
        for change in &changes {
            if let Change::Append { series, record } = change {
                let day = day_of(record.ts);
                let (lo, hi) = days.entry(series.as_str()).or_insert((day, day));
                (*lo, *hi) = ((*lo).min(day), (*hi).max(day));
            }
        }
        for (series, (lo, hi)) in days {
            self.widen_extent(&log.tenant, series, lo, hi).await?;
        }
        for change in changes {
            match change {
                Change::PutDoc {
                    collection,
                    key,
                    body,
                    expect,
                } => {
                    let update = self.doc_update(&log.tenant, &collection, key, &body, expect)?;
                    items.push(TransactWriteItem::builder().update(update).build());
                }
                Change::Append { series, record } => {
                    for item in self.series_items(&log.tenant, &series, vec![record])? {
                        items.push(tx_put(&self.data, item, None)?);
                    }
                }
                Change::Remember { key, claim, answer } => {
                    let answer = serde_json::to_string(&answer)
                        .map_err(|e| StoreError::Data(e.to_string()))?;
                    let update = Update::builder()
                        .table_name(self.data.as_ref())
                        .key("pk", s(idempotency_pk(&log.tenant)))
                        .key("sk", s(key))
                        .update_expression("SET a = :a")
                        .condition_expression("c = :c AND attribute_not_exists(a)")
                        .expression_attribute_values(":a", s(answer))
                        .expression_attribute_values(":c", s(claim))
                        .build()
                        .map_err(|e| StoreError::Backend(e.to_string()))?;
                    items.push(TransactWriteItem::builder().update(update).build());
                }
            }
        }
        let entry = serde_json::to_string(&log).map_err(|e| StoreError::Data(e.to_string()))?;
        let sk = format!(
            "{}|{}|{:016x}",
            ts_key(log.at.timestamp_micros()),
            log.request_id,
            rand::random::<u64>()
        );
        let item = HashMap::from([
            ("pk".to_owned(), s(log_pk(&log.tenant))),
            ("sk".to_owned(), s(sk)),
            ("e".to_owned(), s(entry)),
            ("ttl".to_owned(), n(log.expires_at)),
        ]);
        items.push(tx_put(&self.data, item, Some("attribute_not_exists(pk)"))?);
        self.tx_write(items).await
    }

    /// One UpdateItem: the entry is written by the first refusal only, `ADD` counts them.
    async fn coalesce(
        &self,
        since: chrono::DateTime<chrono::Utc>,
        key: &str,
        log: WriteLogEntry,
    ) -> StoreResult<()> {
        let entry = serde_json::to_string(&log).map_err(|e| StoreError::Data(e.to_string()))?;
        let update = self
            .client
            .update_item()
            .table_name(self.data.as_ref())
            .key("pk", s(log_pk(&log.tenant)))
            .key(
                "sk",
                s(format!("{}|~{key}", ts_key(since.timestamp_micros()))),
            )
            .update_expression(format!(
                "SET e = if_not_exists(e, :e), la = :la, #ttl = :ttl, {SET_ONCE} ADD c :one"
            ))
            .condition_expression(NOT_MADE)
            .expression_attribute_names("#ttl", "ttl")
            .expression_attribute_values(":e", s(entry))
            .expression_attribute_values(":la", s(log.at.to_rfc3339()))
            .expression_attribute_values(":ttl", n(log.expires_at))
            .expression_attribute_values(":one", n(1));
        // Counted once whatever the SDK retries.
        match once(update).send().await {
            Err(e) if !is_condition_failed(&e) => Err(backend(e)),
            _ => Ok(()),
        }
    }

    /// Entries whose TTL has passed are left out: DynamoDB deletes them some time later. The
    /// items sort by time, but a coalesced entry's by its window's start (the key every
    /// refusal of the window finds): the entries are put in the order of their own time (a
    /// coalesced entry's first refusal), as the port says.
    async fn entries(&self, tenant: &str) -> StoreResult<Vec<WriteLogEntry>> {
        let now = chrono::Utc::now().timestamp();
        let query = self.partition_query(log_pk(tenant));
        let mut out = Vec::new();
        each_item(query, |item| {
            let expires_at = match item.get("ttl") {
                Some(_) => get_n(&item, "ttl")?,
                None => i64::MAX,
            };
            if expires_at > now {
                out.push(entry_of(&item, expires_at)?);
            }
            Ok(ControlFlow::Continue(()))
        })
        .await?;
        out.sort_by_key(|e| e.at);
        Ok(out)
    }

    /// A conditional PutItem; when it fails, a consistent GetItem of the holder (twice at
    /// most: a holder may be released between the two).
    async fn claim_key(&self, tenant: &str, claim: &KeyClaim) -> StoreResult<Option<HeldKey>> {
        for _ in 0..2 {
            let put = self
                .client
                .put_item()
                .table_name(self.data.as_ref())
                .item("pk", s(idempotency_pk(tenant)))
                .item("sk", s(&claim.key))
                .item("f", s(&claim.fingerprint))
                .item("c", s(&claim.claim))
                .item("at", n(claim.at))
                .item("ttl", n(claim.expires_at))
                .condition_expression(
                    "attribute_not_exists(pk) OR #ttl <= :now \
                     OR (attribute_not_exists(a) AND #at <= :abandoned)",
                )
                .expression_attribute_names("#ttl", "ttl")
                .expression_attribute_names("#at", "at")
                .expression_attribute_values(":now", n(claim.at))
                .expression_attribute_values(":abandoned", n(claim.at - ABANDONED_AFTER_SECS))
                .send()
                .await;
            match put {
                Ok(_) => return Ok(None),
                Err(e) if is_condition_failed(&e) => {}
                Err(e) => return Err(backend(e)),
            }
            let held = self
                .client
                .get_item()
                .table_name(self.data.as_ref())
                .key("pk", s(idempotency_pk(tenant)))
                .key("sk", s(&claim.key))
                .consistent_read(true)
                .send()
                .await
                .map_err(backend)?;
            if let Some(item) = held.item {
                let answer = match item.get("a") {
                    Some(_) => Some(
                        serde_json::from_str::<KeptAnswer>(get_s(&item, "a")?)
                            .map_err(|e| StoreError::Data(e.to_string()))?,
                    ),
                    None => None,
                };
                return Ok(Some(HeldKey {
                    fingerprint: get_s(&item, "f")?.to_owned(),
                    answer,
                }));
            }
        }
        Err(StoreError::Backend(
            "an idempotency key kept changing hands".into(),
        ))
    }

    async fn release_key(&self, tenant: &str, key: &str, claim: &str) -> StoreResult<()> {
        let deleted = self
            .client
            .delete_item()
            .table_name(self.data.as_ref())
            .key("pk", s(idempotency_pk(tenant)))
            .key("sk", s(key))
            .condition_expression("c = :c AND attribute_not_exists(a)")
            .expression_attribute_values(":c", s(claim))
            .send()
            .await;
        match deleted {
            Ok(_) => Ok(()),
            Err(e) if is_condition_failed(&e) => Ok(()),
            Err(e) => Err(backend(e)),
        }
    }
}
