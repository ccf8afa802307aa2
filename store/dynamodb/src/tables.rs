//! The tables' creation, for tests and `netops seed` (deployments create them from
//! `infra/template.yaml`).

use std::time::Duration;

use aws_sdk_dynamodb::error::ProvideErrorMetadata;
use aws_sdk_dynamodb::types::{
    AttributeDefinition, BillingMode, GlobalSecondaryIndex, KeySchemaElement, KeyType, Projection,
    ProjectionType, ScalarAttributeType, TimeToLiveSpecification,
};

use super::DynamoStore;
use super::client::backend;
use netops_store::{StoreError, StoreResult};

impl DynamoStore {
    /// Creates both tables (on-demand, with their indexes and TTL) when they do not exist:
    /// for tests and `netops seed`; deployments create them from `infra/template.yaml`.
    pub async fn ensure_tables(&self) -> StoreResult<()> {
        let key = |name: &str, kind: KeyType| {
            KeySchemaElement::builder()
                .attribute_name(name)
                .key_type(kind)
                .build()
                .map_err(|e| StoreError::Backend(e.to_string()))
        };
        let attr = |name: &str| {
            AttributeDefinition::builder()
                .attribute_name(name)
                .attribute_type(ScalarAttributeType::S)
                .build()
                .map_err(|e| StoreError::Backend(e.to_string()))
        };
        let index = |name: &str, hash: &str, range: &str| -> StoreResult<GlobalSecondaryIndex> {
            GlobalSecondaryIndex::builder()
                .index_name(name)
                .key_schema(key(hash, KeyType::Hash)?)
                .key_schema(key(range, KeyType::Range)?)
                .projection(
                    Projection::builder()
                        .projection_type(ProjectionType::All)
                        .build(),
                )
                .build()
                .map_err(|e| StoreError::Backend(e.to_string()))
        };
        let tables = [
            (
                self.control.to_string(),
                vec![key("pk", KeyType::Hash)?],
                vec![attr("pk")?, attr("gt")?, attr("gs")?],
                index("by_tenant", "gt", "gs")?,
            ),
            (
                self.data.to_string(),
                vec![key("pk", KeyType::Hash)?, key("sk", KeyType::Range)?],
                vec![attr("pk")?, attr("sk")?, attr("gp")?, attr("gs")?],
                index("by_partition", "gp", "gs")?,
            ),
        ];
        for (name, keys, attrs, gsi) in tables {
            let exists = match self.client.describe_table().table_name(&name).send().await {
                Ok(_) => true,
                Err(e) if e.code() == Some("ResourceNotFoundException") => false,
                Err(e) => return Err(backend(e)),
            };
            if exists {
                continue;
            }
            let created = self
                .client
                .create_table()
                .table_name(&name)
                .billing_mode(BillingMode::PayPerRequest)
                .set_key_schema(Some(keys))
                .set_attribute_definitions(Some(attrs))
                .global_secondary_indexes(gsi)
                .send()
                .await;
            match created {
                Ok(_) => {}
                Err(e) if e.code() == Some("ResourceInUseException") => {}
                Err(e) => return Err(backend(e)),
            }
            for _ in 0..120 {
                let d = self
                    .client
                    .describe_table()
                    .table_name(&name)
                    .send()
                    .await
                    .map_err(backend)?;
                let active = d
                    .table()
                    .and_then(|t| t.table_status())
                    .is_some_and(|s| s.as_str() == "ACTIVE");
                if active {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
            self.client
                .update_time_to_live()
                .table_name(&name)
                .time_to_live_specification(
                    TimeToLiveSpecification::builder()
                        .attribute_name("ttl")
                        .enabled(true)
                        .build()
                        .map_err(|e| StoreError::Backend(e.to_string()))?,
                )
                .send()
                .await
                .map_err(backend)?;
        }
        Ok(())
    }
}
