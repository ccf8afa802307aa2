//! The deployment port in DynamoDB: secrets in the control table, emptiness, and clearing a
//! tenant (an administrative scan, for seeding only).

use async_trait::async_trait;
use aws_sdk_dynamodb::types::{AttributeValue, DeleteRequest, WriteRequest};

use super::DynamoStore;
use super::client::{backend, is_condition_failed};
use super::item::{Item, log_pk, s, tenant_prefix};
use netops_store::{Deployment, StoreError, StoreResult};

impl DynamoStore {
    /// Every key (`pk`, `sk`) of the data table whose partition key starts with `prefix`.
    async fn keys_with_prefix(&self, prefix: &str) -> StoreResult<Vec<Item>> {
        self.client
            .scan()
            .table_name(self.data.as_ref())
            .filter_expression("begins_with(pk, :p)")
            .expression_attribute_values(":p", s(prefix))
            .projection_expression("pk, sk")
            .into_paginator()
            .items()
            .send()
            .try_collect()
            .await
            .map_err(backend)
    }
}

#[async_trait]
impl Deployment for DynamoStore {
    /// A scan of the control table's tenant index, which holds the tokens only (keys only:
    /// half a read unit per 4 KB of keys).
    async fn tenants(&self) -> StoreResult<Vec<String>> {
        let items: Vec<Item> = self
            .client
            .scan()
            .table_name(self.control.as_ref())
            .index_name("by_tenant")
            .projection_expression("gt")
            .into_paginator()
            .items()
            .send()
            .try_collect()
            .await
            .map_err(backend)?;
        let tenants: std::collections::BTreeSet<String> = items
            .iter()
            .filter_map(|i| match i.get("gt") {
                Some(AttributeValue::S(t)) => Some(t.clone()),
                _ => None,
            })
            .collect();
        Ok(tenants.into_iter().collect())
    }

    async fn secret(&self, name: &str) -> StoreResult<Vec<u8>> {
        let pk = format!("SECRET|{name}");
        let fresh: [u8; 32] = rand::random();
        let put = self
            .client
            .put_item()
            .table_name(self.control.as_ref())
            .item("pk", s(pk.clone()))
            .item("value", AttributeValue::B(fresh.to_vec().into()))
            .condition_expression("attribute_not_exists(pk)")
            .send()
            .await;
        match put {
            Ok(_) => return Ok(fresh.to_vec()),
            Err(e) if is_condition_failed(&e) => {}
            Err(e) => return Err(backend(e)),
        }
        let out = self
            .client
            .get_item()
            .table_name(self.control.as_ref())
            .key("pk", s(pk))
            .consistent_read(true)
            .send()
            .await
            .map_err(backend)?;
        match out.item.as_ref().and_then(|i| i.get("value")) {
            Some(AttributeValue::B(b)) => Ok(b.clone().into_inner()),
            _ => Err(StoreError::Data("secret without a binary value".into())),
        }
    }

    /// No document, series record or rollup of any tenant (what `clear_tenant` removes):
    /// the data table may hold write logs and idempotency keys. An administrative scan that
    /// stops at the first item found, which on a store with data is on its first page.
    async fn is_empty(&self) -> StoreResult<bool> {
        let mut pages = self
            .client
            .scan()
            .table_name(self.data.as_ref())
            .filter_expression("contains(pk, :d) OR contains(pk, :s) OR contains(pk, :r)")
            .expression_attribute_values(":d", s("|D|"))
            .expression_attribute_values(":s", s("|S|"))
            .expression_attribute_values(":r", s("|R|"))
            .projection_expression("pk")
            .limit(100)
            .into_paginator()
            .send();
        while let Some(page) = pages.next().await {
            if !page.map_err(backend)?.items().is_empty() {
                return Ok(false);
            }
        }
        Ok(true)
    }

    async fn clear_tenant(&self, tenant: &str) -> StoreResult<()> {
        // An administrative scan (seeding only): every data item of the tenant but its write log.
        let keep = log_pk(tenant);
        let keys = self.keys_with_prefix(&tenant_prefix(tenant)).await?;
        let mut requests = Vec::new();
        for key in keys {
            if matches!(key.get("pk"), Some(AttributeValue::S(pk)) if *pk == keep) {
                continue;
            }
            requests.push(
                WriteRequest::builder()
                    .delete_request(
                        DeleteRequest::builder()
                            .set_key(Some(key))
                            .build()
                            .map_err(|e| StoreError::Backend(e.to_string()))?,
                    )
                    .build(),
            );
        }
        self.batch_write(&self.data, requests).await
    }
}
