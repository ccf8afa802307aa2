//! The ingestion log in DynamoDB: the item collection `<tenant>|G` of the data table, one item
//! per batch (sort key: its batch id) put on the condition that no unexpired one is there;
//! expiry by TTL.

use std::ops::ControlFlow;

use async_trait::async_trait;

use super::DynamoStore;
use super::client::{backend, is_condition_failed};
use super::item::{Item, get_n, get_s, ingest_pk, n, s};
use super::requests::each_item;
use netops_store::{IngestEntry, IngestLog, StoreError, StoreResult};

/// The entry of an item, unless it has expired (DynamoDB deletes expired items some time
/// after their TTL).
fn unexpired(item: &Item, now: i64) -> StoreResult<Option<IngestEntry>> {
    let expires_at: i64 = get_n(item, "ttl")?;
    if expires_at <= now {
        return Ok(None);
    }
    let mut entry: IngestEntry =
        serde_json::from_str(get_s(item, "e")?).map_err(|e| StoreError::Data(e.to_string()))?;
    entry.expires_at = expires_at;
    Ok(Some(entry))
}

#[async_trait]
impl IngestLog for DynamoStore {
    /// A conditional PutItem; when it fails, a consistent GetItem of the entry recorded first
    /// (twice at most: an expired one may be replaced between the two).
    async fn record(&self, entry: IngestEntry) -> StoreResult<Option<IngestEntry>> {
        let text = serde_json::to_string(&entry).map_err(|e| StoreError::Data(e.to_string()))?;
        let now = chrono::Utc::now().timestamp();
        for _ in 0..2 {
            let put = self
                .client
                .put_item()
                .table_name(self.data.as_ref())
                .item("pk", s(ingest_pk(&entry.tenant)))
                .item("sk", s(&entry.batch_id))
                .item("e", s(&text))
                .item("at", n(entry.at.timestamp_millis()))
                .item("ttl", n(entry.expires_at))
                .condition_expression("attribute_not_exists(pk) OR #ttl <= :now")
                .expression_attribute_names("#ttl", "ttl")
                .expression_attribute_values(":now", n(now))
                .send()
                .await;
            match put {
                Ok(_) => return Ok(None),
                Err(e) if is_condition_failed(&e) => {}
                Err(e) => return Err(backend(e)),
            }
            if let Some(first) = self.batch(&entry.tenant, &entry.batch_id).await? {
                return Ok(Some(first));
            }
        }
        Err(StoreError::Backend(
            "an ingestion-log entry kept expiring".into(),
        ))
    }

    async fn batch(&self, tenant: &str, batch_id: &str) -> StoreResult<Option<IngestEntry>> {
        let got = self
            .client
            .get_item()
            .table_name(self.data.as_ref())
            .key("pk", s(ingest_pk(tenant)))
            .key("sk", s(batch_id))
            .consistent_read(true)
            .send()
            .await
            .map_err(backend)?;
        match got.item {
            Some(item) => unexpired(&item, chrono::Utc::now().timestamp()),
            None => Ok(None),
        }
    }

    async fn ingested(&self, tenant: &str) -> StoreResult<Vec<IngestEntry>> {
        let now = chrono::Utc::now().timestamp();
        let query = self.partition_query(ingest_pk(tenant));
        let mut out = Vec::new();
        each_item(query, |item| {
            out.extend(unexpired(&item, now)?);
            Ok(ControlFlow::Continue(()))
        })
        .await?;
        out.sort_by(|a, b| a.at.cmp(&b.at).then_with(|| a.batch_id.cmp(&b.batch_id)));
        Ok(out)
    }
}
