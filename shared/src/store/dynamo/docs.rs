//! Documents in DynamoDB: one item collection of the data table per tenant and collection,
//! sorted by key. The reads by date use the port's default (the whole collection, ordered
//! here).

use std::collections::HashMap;

use async_trait::async_trait;
use serde_json::Value;

use super::DynamoStore;
use super::client::backend;
use super::item::{doc_pk, get_json, get_n, get_s, n, s};
use super::requests::take_in_order;
use crate::store::ports::docs::ended_at;
use crate::store::{Doc, Documents, Filter, StoreError, StoreResult};

impl DynamoStore {
    /// The TTL (s) of a document of a collection that ages out, once it has ended.
    pub(super) fn doc_ttl(&self, collection: &str, body: &Value) -> Option<i64> {
        ended_at(collection, body).map(|t| t.timestamp() + self.retention_secs)
    }
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

    async fn list(
        &self,
        tenant: &str,
        collection: &str,
        filter: &Filter,
        after: Option<&str>,
        limit: usize,
    ) -> StoreResult<Vec<Doc>> {
        let mut out = Vec::new();
        if limit == 0 {
            return Ok(out);
        }
        let pk = doc_pk(tenant, collection);
        // Resuming after a key is resuming from it as the last evaluated key.
        let start = after
            .map(|a| HashMap::from([("pk".to_owned(), s(pk.clone())), ("sk".to_owned(), s(a))]));
        let query = self
            .client
            .query()
            .table_name(self.data.as_ref())
            .key_condition_expression("pk = :pk")
            .expression_attribute_values(":pk", s(pk))
            .consistent_read(true)
            .set_exclusive_start_key(start);
        // Each Query asks for about what the page still needs (a filtered one more, by the
        // rate of matches so far), not for 1 MB.
        take_in_order([query], limit, filter.0.is_empty(), |item| {
            let body = get_json(&item, "b")?;
            if !filter.matches(&body) {
                return Ok(false);
            }
            out.push(Doc {
                key: get_s(&item, "sk")?.to_owned(),
                version: get_n(&item, "v")?,
                body,
            });
            Ok(true)
        })
        .await?;
        Ok(out)
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
            let mut item = HashMap::from([
                ("pk".to_owned(), s(pk.clone())),
                ("sk".to_owned(), s(key)),
                ("v".to_owned(), n(version)),
                ("b".to_owned(), s(text)),
            ]);
            if let Some(ttl) = self.doc_ttl(collection, &body) {
                item.insert("ttl".to_owned(), n(ttl));
            }
            requests.push(Self::put_request(item)?);
        }
        self.batch_write(&self.data, requests).await
    }
}
