//! Rate-limit counters in DynamoDB: one item of the control table per key, `ADD` and a TTL,
//! each change made once whatever the SDK retries ([`super::once`]).

use async_trait::async_trait;
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::{ReturnValue, ReturnValuesOnConditionCheckFailure};

use super::DynamoStore;
use super::client::{backend, is_condition_failed};
use super::item::{get_n, n, s};
use super::once::{NOT_MADE, SET_ONCE, once};
use netops_store::{COUNTER_GRACE_SECS, Counters, StoreResult};

#[async_trait]
impl Counters for DynamoStore {
    async fn incr(&self, key: &str, expires_at: i64) -> StoreResult<u64> {
        let update = self
            .client
            .update_item()
            .table_name(self.control.as_ref())
            .key("pk", s(format!("RL|{key}")))
            .update_expression(format!("ADD n :one SET #ttl = :ttl, {SET_ONCE}"))
            .condition_expression(NOT_MADE)
            .expression_attribute_names("#ttl", "ttl")
            .expression_attribute_values(":one", n(1))
            .expression_attribute_values(":ttl", n(expires_at + COUNTER_GRACE_SECS))
            .return_values(ReturnValue::UpdatedNew)
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld);
        match once(update).send().await {
            Ok(out) => get_n(&out.attributes.unwrap_or_default(), "n"),
            // A retry of this call, which had counted it: the count as it stands.
            Err(e) => match e.as_service_error() {
                Some(UpdateItemError::ConditionalCheckFailedException(made)) => {
                    get_n(made.item().unwrap_or(&Default::default()), "n")
                }
                _ => Err(backend(e)),
            },
        }
    }

    async fn refund(&self, key: &str) -> StoreResult<()> {
        // Only an existing counter above zero: a refund never creates an item nor goes negative.
        let update = self
            .client
            .update_item()
            .table_name(self.control.as_ref())
            .key("pk", s(format!("RL|{key}")))
            .update_expression(format!("ADD n :minus_one SET {SET_ONCE}"))
            .condition_expression(format!("n > :zero AND {NOT_MADE}"))
            .expression_attribute_values(":minus_one", n(-1))
            .expression_attribute_values(":zero", n(0));
        match once(update).send().await {
            Err(e) if !is_condition_failed(&e) => Err(backend(e)),
            _ => Ok(()),
        }
    }
}
