//! The requests the ports share: writes in batches, transactions retried on conflict, and the
//! one paginator every read of several pages goes through.

use std::ops::ControlFlow;
use std::time::Duration;

use aws_sdk_dynamodb::error::ProvideErrorMetadata;
use aws_sdk_dynamodb::operation::query::builders::QueryFluentBuilder;
use aws_sdk_dynamodb::types::{Put, PutRequest, TransactWriteItem, WriteRequest};
use tokio::task::JoinSet;

use super::DynamoStore;
use super::client::backend;
use super::item::Item;
use crate::store::{StoreError, StoreResult};
use crate::usage::Usage;

/// Hands `each` the items of a Query in order, page after page, until it breaks or the pages
/// end. The pages are the SDK's paginator, which follows `LastEvaluatedKey` and asks for a
/// page only when the previous one has been read: a read that stops early sends no request
/// for the pages it does not need.
pub(super) async fn each_item(
    query: QueryFluentBuilder,
    mut each: impl FnMut(Item) -> StoreResult<ControlFlow<()>>,
) -> StoreResult<()> {
    let mut items = query.into_paginator().items().send();
    while let Some(item) = items.next().await {
        if each(item.map_err(backend)?)?.is_break() {
            break;
        }
    }
    Ok(())
}

/// The timeouts of a batch write. Batch writes load data in bulk (the seed, the day's rollups)
/// rather than answer a caller, and a loaded table may take seconds for 25 items: each
/// attempt gets 30 s and the operation a minute, in place of a request's 3 and 6 s
/// ([`super::client::sdk_config`]).
fn bulk_timeouts() -> aws_sdk_dynamodb::config::Builder {
    let timeouts = aws_sdk_dynamodb::config::timeout::TimeoutConfig::builder()
        .operation_attempt_timeout(Duration::from_secs(30))
        .operation_timeout(Duration::from_secs(60))
        .build();
    aws_sdk_dynamodb::config::Builder::default().timeout_config(timeouts)
}

impl DynamoStore {
    /// Writes items with `BatchWriteItem`, 25 per request, a few requests in flight,
    /// retrying what DynamoDB leaves unprocessed.
    pub(super) async fn batch_write(
        &self,
        table: &str,
        requests: Vec<WriteRequest>,
    ) -> StoreResult<()> {
        const IN_FLIGHT: usize = 8;
        let mut chunks: Vec<Vec<WriteRequest>> = Vec::new();
        let mut rest = requests;
        while !rest.is_empty() {
            let tail = rest.split_off(rest.len().min(25));
            chunks.push(std::mem::replace(&mut rest, tail));
        }
        let mut tasks = JoinSet::new();
        for chunk in chunks {
            if tasks.len() >= IN_FLIGHT
                && let Some(done) = tasks.join_next().await
            {
                done.map_err(|e| StoreError::Backend(e.to_string()))??;
            }
            let client = self.client.clone();
            let table = table.to_owned();
            tasks.spawn(Usage::carried(async move {
                let mut pending = chunk;
                for attempt in 0..12u32 {
                    let out = client
                        .batch_write_item()
                        .request_items(&table, pending)
                        .customize()
                        .config_override(bulk_timeouts())
                        .send()
                        .await
                        .map_err(backend)?;
                    pending = out
                        .unprocessed_items
                        .and_then(|mut m| m.remove(&table))
                        .unwrap_or_default();
                    if pending.is_empty() {
                        return Ok(());
                    }
                    tokio::time::sleep(Duration::from_millis(25 << attempt.min(6))).await;
                }
                Err(StoreError::Backend(
                    "batch write left items unprocessed".into(),
                ))
            }));
        }
        while let Some(done) = tasks.join_next().await {
            done.map_err(|e| StoreError::Backend(e.to_string()))??;
        }
        Ok(())
    }

    pub(super) fn put_request(item: Item) -> StoreResult<WriteRequest> {
        Ok(WriteRequest::builder()
            .put_request(
                PutRequest::builder()
                    .set_item(Some(item))
                    .build()
                    .map_err(|e| StoreError::Backend(e.to_string()))?,
            )
            .build())
    }

    pub(super) async fn tx_write(&self, items: Vec<TransactWriteItem>) -> StoreResult<()> {
        // Concurrent transactions on one item cancel each other (TransactionConflict):
        // retried, after which the condition decides.
        for attempt in 0..6u32 {
            match self
                .client
                .transact_write_items()
                .set_transact_items(Some(items.clone()))
                .send()
                .await
            {
                Ok(_) => return Ok(()),
                Err(e) => {
                    let reasons: Vec<String> = match e.as_service_error() {
                        Some(aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError::TransactionCanceledException(c)) => c
                            .cancellation_reasons()
                            .iter()
                            .filter_map(|r| r.code().map(str::to_owned))
                            .collect(),
                        _ => Vec::new(),
                    };
                    if reasons.iter().any(|c| c == "ConditionalCheckFailed") {
                        return Err(StoreError::ConditionFailed);
                    }
                    let conflict = reasons.iter().any(|c| c == "TransactionConflict")
                        || e.code() == Some("TransactionInProgressException");
                    if conflict && attempt < 5 {
                        let jitter = rand::random::<u64>() % 20;
                        tokio::time::sleep(Duration::from_millis(10 * (1 << attempt) + jitter))
                            .await;
                        continue;
                    }
                    return Err(backend(e));
                }
            }
        }
        Err(StoreError::Backend("transaction kept conflicting".into()))
    }
}

pub(super) fn tx_put(
    table: &str,
    item: Item,
    condition: Option<&str>,
) -> StoreResult<TransactWriteItem> {
    let put = Put::builder()
        .table_name(table)
        .set_item(Some(item))
        .set_condition_expression(condition.map(str::to_owned))
        .build()
        .map_err(|e| StoreError::Backend(e.to_string()))?;
    Ok(TransactWriteItem::builder().put(put).build())
}
