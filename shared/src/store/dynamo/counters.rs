//! Rate-limit counters in DynamoDB: one item of the control table per key, `ADD` and a TTL.

use async_trait::async_trait;
use aws_sdk_dynamodb::types::ReturnValue;

use super::DynamoStore;
use super::client::{backend, is_condition_failed};
use super::item::{get_n, n, s};
use crate::store::{COUNTER_GRACE_SECS, Counters, StoreResult};

#[async_trait]
impl Counters for DynamoStore {
    async fn incr(&self, key: &str, expires_at: i64) -> StoreResult<u64> {
        let out = self
            .client
            .update_item()
            .table_name(self.control.as_ref())
            .key("pk", s(format!("RL|{key}")))
            .update_expression("ADD n :one SET #ttl = :ttl")
            .expression_attribute_names("#ttl", "ttl")
            .expression_attribute_values(":one", n(1))
            .expression_attribute_values(":ttl", n(expires_at + COUNTER_GRACE_SECS))
            .return_values(ReturnValue::UpdatedNew)
            .send()
            .await
            .map_err(backend)?;
        let attrs = out.attributes.unwrap_or_default();
        get_n(&attrs, "n")
    }

    async fn refund(&self, key: &str) -> StoreResult<()> {
        // Only an existing counter above zero: a refund never creates an item nor goes negative.
        let out = self
            .client
            .update_item()
            .table_name(self.control.as_ref())
            .key("pk", s(format!("RL|{key}")))
            .update_expression("ADD n :minus_one")
            .condition_expression("n > :zero")
            .expression_attribute_values(":minus_one", n(-1))
            .expression_attribute_values(":zero", n(0))
            .send()
            .await;
        match out {
            Ok(_) => Ok(()),
            Err(e) if is_condition_failed(&e) => Ok(()),
            Err(e) => Err(backend(e)),
        }
    }
}
