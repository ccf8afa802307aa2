//! Documents in DynamoDB: one item collection of the data table per tenant and collection,
//! sorted by key. A document of a collection that ages out is also on the `by_partition`
//! index, in its collection's "in progress" partition or, once ended, in its "ended" one by
//! end date ([`doc_index`]), so [`Documents::live_since`] reads what is in progress and what
//! ended since a date, never the collection's history. The index is eventually consistent:
//! a change shows there within about a second (reads by key are consistent).

use std::collections::HashMap;
use std::ops::ControlFlow;

use async_trait::async_trait;
use aws_sdk_dynamodb::types::{KeysAndAttributes, TransactWriteItem, Update};
use chrono::{DateTime, Utc};
use serde_json::Value;

use super::DynamoStore;
use super::client::backend;
use super::item::{Item, doc_pk, get_json, get_n, get_s, n, s, ts_key};
use super::requests::{each_item, take_in_order};
use netops_store::ports::docs::{aging, aging_or_refused, distinct, ended_at};
use netops_store::{
    All, Doc, DocText, Documents, Expect, Filter, READ_ALL, StoreError, StoreResult,
};

impl DynamoStore {
    /// The TTL (s) of a document of a collection that ages out, once it has ended.
    pub(super) fn doc_ttl(&self, collection: &str, body: &Value) -> Option<i64> {
        ended_at(collection, body).map(|t| t.timestamp() + self.retention_secs)
    }

    /// The conditional update that puts a document, its version raised by one, for a
    /// transaction: a write's change ([`netops_store::WriteLog::commit`]) or a producer's
    /// ([`Documents::put_if`]).
    pub(super) fn doc_update(
        &self,
        tenant: &str,
        collection: &str,
        key: String,
        body: &Value,
        expect: Expect,
    ) -> StoreResult<Update> {
        let text = serde_json::to_string(body).map_err(|e| StoreError::Data(e.to_string()))?;
        // A document that has ended (a resolved alert) takes its TTL; one that has not keeps
        // none. One of a collection that ages out moves to the index partition of its state.
        let ttl = self.doc_ttl(collection, body);
        let index = doc_index(tenant, collection, &key, body);
        let mut set = vec!["b = :b"];
        if ttl.is_some() {
            set.push("#ttl = :ttl");
        }
        if index.is_some() {
            set.extend(["gp = :gp", "gs = :gs"]);
        }
        let remove = if ttl.is_none() { " REMOVE #ttl" } else { "" };
        let mut update = Update::builder()
            .table_name(self.data.as_ref())
            .key("pk", s(doc_pk(tenant, collection)))
            .key("sk", s(key))
            .update_expression(format!("SET {} ADD v :one{remove}", set.join(", ")))
            .expression_attribute_names("#ttl", "ttl")
            .expression_attribute_values(":b", s(text))
            .expression_attribute_values(":one", n(1));
        if let Some(ttl) = ttl {
            update = update.expression_attribute_values(":ttl", n(ttl));
        }
        if let Some((gp, gs)) = index {
            update = update
                .expression_attribute_values(":gp", s(gp))
                .expression_attribute_values(":gs", s(gs));
        }
        update = match expect {
            Expect::Any => update,
            Expect::Absent => update.condition_expression("attribute_not_exists(pk)"),
            Expect::Version(v) => update
                .condition_expression("v = :expected")
                .expression_attribute_values(":expected", n(v)),
        };
        update
            .build()
            .map_err(|e| StoreError::Backend(e.to_string()))
    }
}

/// The `by_partition` index entry (`gp`, `gs`) of a document of a collection that ages out:
/// while in progress, the collection's `open` partition by key; once ended, its `ended`
/// partition by end time, then key. None for other collections.
pub(super) fn doc_index(
    tenant: &str,
    collection: &str,
    key: &str,
    body: &Value,
) -> Option<(String, String)> {
    aging(collection)?;
    let pk = doc_pk(tenant, collection);
    Some(match ended_at(collection, body) {
        None => (format!("{pk}|open"), key.to_owned()),
        Some(end) => (
            format!("{pk}|ended"),
            format!("{}|{key}", ts_key(end.timestamp_millis())),
        ),
    })
}

/// A document from an item of the table or of the `by_partition` index (which holds every
/// attribute).
fn doc_of(item: &Item) -> StoreResult<Doc> {
    Ok(Doc {
        key: get_s(item, "sk")?.to_owned(),
        version: get_n(item, "v")?,
        body: get_json(item, "b")?,
    })
}

#[async_trait]
impl Documents for DynamoStore {
    async fn get(&self, tenant: &str, collection: &str, key: &str) -> StoreResult<Option<Doc>> {
        let out = self
            .client
            .get_item()
            .table_name(self.data.as_ref())
            .key("pk", s(doc_pk(tenant, collection)))
            .key("sk", s(key))
            .consistent_read(true)
            .send()
            .await
            .map_err(backend)?;
        out.item
            .map(|item| {
                Ok(Doc {
                    key: key.to_owned(),
                    version: get_n(&item, "v")?,
                    body: get_json(&item, "b")?,
                })
            })
            .transpose()
    }

    async fn get_many(
        &self,
        tenant: &str,
        collection: &str,
        keys: &[String],
    ) -> StoreResult<Vec<Doc>> {
        let pk = doc_pk(tenant, collection);
        let keys = distinct(keys);
        let mut out = Vec::with_capacity(keys.len());
        // BatchGetItem takes 100 keys a request; what it leaves unprocessed is asked again.
        for chunk in keys.chunks(100) {
            let mut pending: Vec<Item> = chunk
                .iter()
                .map(|k| {
                    HashMap::from([
                        ("pk".to_owned(), s(pk.clone())),
                        ("sk".to_owned(), s(k.as_str())),
                    ])
                })
                .collect();
            for attempt in 0.. {
                if pending.is_empty() {
                    break;
                }
                if attempt == 5 {
                    return Err(StoreError::Backend("batch get kept leaving keys".into()));
                }
                let request = KeysAndAttributes::builder()
                    .set_keys(Some(std::mem::take(&mut pending)))
                    .consistent_read(true)
                    .build()
                    .map_err(|e| StoreError::Backend(e.to_string()))?;
                let answer = self
                    .client
                    .batch_get_item()
                    .request_items(self.data.as_ref(), request)
                    .send()
                    .await
                    .map_err(backend)?;
                for item in answer
                    .responses
                    .and_then(|mut r| r.remove(self.data.as_ref()))
                    .unwrap_or_default()
                {
                    out.push(doc_of(&item)?);
                }
                pending = answer
                    .unprocessed_keys
                    .and_then(|mut u| u.remove(self.data.as_ref()))
                    .map(|k| k.keys)
                    .unwrap_or_default();
                if !pending.is_empty() {
                    tokio::time::sleep(std::time::Duration::from_millis(20 << attempt)).await;
                }
            }
        }
        Ok(out)
    }

    async fn list(
        &self,
        tenant: &str,
        collection: &str,
        filter: &Filter,
        after: Option<&str>,
        limit: usize,
    ) -> StoreResult<Vec<Doc>> {
        let (items, _) = self
            .read_docs(tenant, collection, filter, after, limit, usize::MAX)
            .await?;
        items
            .into_iter()
            .map(|(item, body)| match body {
                Some(body) => Ok(Doc {
                    key: get_s(&item, "sk")?.to_owned(),
                    version: get_n(&item, "v")?,
                    body,
                }),
                None => doc_of(&item),
            })
            .collect()
    }

    async fn list_bounded(
        &self,
        tenant: &str,
        collection: &str,
        filter: &Filter,
        after: Option<&str>,
        limit: usize,
    ) -> StoreResult<(Vec<DocText>, Option<String>)> {
        let (items, stopped) = self
            .read_docs(tenant, collection, filter, after, limit, self.scan_budget)
            .await?;
        let texts = items
            .iter()
            .map(|(item, _)| {
                Ok(DocText {
                    key: get_s(item, "sk")?.to_owned(),
                    body: get_s(item, "b")?.to_owned(),
                })
            })
            .collect::<StoreResult<_>>()?;
        Ok((texts, stopped))
    }

    async fn live_since(
        &self,
        tenant: &str,
        collection: &str,
        since: Option<DateTime<Utc>>,
    ) -> StoreResult<All<Doc>> {
        aging_or_refused(collection)?;
        let pk = doc_pk(tenant, collection);
        let partition = |part: &str| {
            self.client
                .query()
                .table_name(self.data.as_ref())
                .index_name("by_partition")
                .key_condition_expression("gp = :gp")
                .expression_attribute_values(":gp", s(format!("{pk}|{part}")))
        };
        // Each read stops one past the bound, which tells that the bound was reached.
        let read = |query| async move {
            let mut docs = Vec::new();
            each_item(query, |item| {
                docs.push(doc_of(&item)?);
                Ok(if docs.len() > READ_ALL {
                    ControlFlow::Break(())
                } else {
                    ControlFlow::Continue(())
                })
            })
            .await?;
            StoreResult::Ok(docs)
        };
        let ended = async {
            match since {
                Some(since) => {
                    let from = ts_key(since.timestamp_millis());
                    read(
                        partition("ended")
                            .key_condition_expression("gp = :gp AND gs >= :from")
                            .expression_attribute_values(":from", s(from)),
                    )
                    .await
                }
                None => Ok(Vec::new()),
            }
        };
        let (mut docs, ended) = tokio::try_join!(read(partition("open")), ended)?;
        docs.extend(ended);
        Ok(All::of_list(docs, tenant, collection))
    }

    async fn put(
        &self,
        tenant: &str,
        collection: &str,
        docs: Vec<(String, Value)>,
    ) -> StoreResult<()> {
        // Unconditional puts carry a fresh version (the time in microseconds), so a
        // conditional change prepared against the previous version fails, as it should.
        let version = chrono::Utc::now().timestamp_micros().max(1);
        let pk = doc_pk(tenant, collection);
        let mut requests = Vec::with_capacity(docs.len());
        // BatchWriteItem refuses two puts of one key in a request: the last one wins anyway.
        let mut last: HashMap<String, Value> = HashMap::new();
        let mut order = Vec::new();
        for (k, v) in docs {
            if last.insert(k.clone(), v).is_none() {
                order.push(k);
            }
        }
        for key in order {
            let body = last.remove(&key).unwrap_or(Value::Null);
            let text = serde_json::to_string(&body).map_err(|e| StoreError::Data(e.to_string()))?;
            let index = doc_index(tenant, collection, &key, &body);
            let mut item = HashMap::from([
                ("pk".to_owned(), s(pk.clone())),
                ("sk".to_owned(), s(key)),
                ("v".to_owned(), n(version)),
                ("b".to_owned(), s(text)),
            ]);
            if let Some(ttl) = self.doc_ttl(collection, &body) {
                item.insert("ttl".to_owned(), n(ttl));
            }
            if let Some((gp, gs)) = index {
                item.insert("gp".to_owned(), s(gp));
                item.insert("gs".to_owned(), s(gs));
            }
            requests.push(Self::put_request(item)?);
        }
        self.batch_write(&self.data, requests).await
    }

    /// A transaction of one update, whose failed condition the transaction reports.
    async fn put_if(
        &self,
        tenant: &str,
        collection: &str,
        key: &str,
        body: Value,
        expect: Expect,
    ) -> StoreResult<()> {
        let update = self.doc_update(tenant, collection, key.to_owned(), &body, expect)?;
        self.tx_write(vec![TransactWriteItem::builder().update(update).build()])
            .await
    }
}

impl DynamoStore {
    /// Documents in key order after `after` matching `filter`, at most `limit`, from at most
    /// `budget` items read; with the last key examined when the budget stopped the read short.
    async fn read_docs(
        &self,
        tenant: &str,
        collection: &str,
        filter: &Filter,
        after: Option<&str>,
        limit: usize,
        budget: usize,
    ) -> StoreResult<(Vec<(Item, Option<Value>)>, Option<String>)> {
        let mut out = Vec::new();
        if limit == 0 {
            return Ok((out, None));
        }
        let pk = doc_pk(tenant, collection);
        // Resuming after a key is resuming from it as the last evaluated key.
        let start = after
            .map(|a| HashMap::from([("pk".to_owned(), s(pk.clone())), ("sk".to_owned(), s(a))]));
        let query = self.partition_query(pk).set_exclusive_start_key(start);
        // Each Query asks for about what the page still needs (a filtered one more, by the
        // rate of matches so far), not for 1 MB.
        let mut examined = None;
        let everything = filter.0.is_empty();
        let short = take_in_order([query], limit, everything, budget, |item| {
            // Only a filter needs the body parsed here; it is handed on, not parsed twice.
            let body = match everything {
                true => None,
                false => Some(get_json(&item, "b")?),
            };
            let matches = body.as_ref().is_none_or(|b| filter.matches(b));
            examined = Some(get_s(&item, "sk")?.to_owned());
            if matches {
                out.push((item, body));
            }
            Ok(matches)
        })
        .await?;
        Ok((out, examined.filter(|_| short)))
    }
}
