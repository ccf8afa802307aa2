//! The deployment port in DynamoDB: secrets in the control table, emptiness, and clearing a
//! tenant (an administrative scan, for seeding only), counting and deleting one.

use async_trait::async_trait;
use aws_sdk_dynamodb::types::AttributeValue;

use super::DynamoStore;
use super::client::{backend, is_condition_failed};
use super::item::{Item, log_pk, s, tenant_prefix};
use netops_store::{Deployment, ExportPage, Pace, StoreError, StoreResult, Tokens};
use serde_json::{Value, json};

/// Keys asked of one page of the Scan that finds a tenant's items.
const SCAN_PAGE: i32 = 1_000;

impl DynamoStore {
    /// Deletes every item of the data table whose partition key starts with `prefix` but
    /// `keep`, page by page of a Scan (keys only) as `pace` allows: an administrative Scan,
    /// which reads the whole table (its filter is applied after the read). Deletes of items
    /// already gone are no-ops, so a run stopped half-way is finished by running it again.
    async fn delete_with_prefix(&self, prefix: &str, keep: &str, pace: &Pace) -> StoreResult<()> {
        let mut pages = self
            .client
            .scan()
            .table_name(self.data.as_ref())
            .filter_expression("begins_with(pk, :p)")
            .expression_attribute_values(":p", s(prefix))
            .projection_expression("pk, sk")
            .limit(SCAN_PAGE)
            .into_paginator()
            .send();
        while let Some(page) = pages.next().await {
            let page = page.map_err(backend)?;
            // The page's reads are paced as its deletes are: on a table shared with other
            // tenants, a Scan reads far more than it deletes.
            pace.examined(usize::try_from(page.scanned_count()).unwrap_or(0))
                .await;
            let keys = page.items.unwrap_or_default();
            let keys: Vec<Item> = keys
                .into_iter()
                .filter(|k| !matches!(k.get("pk"), Some(AttributeValue::S(pk)) if pk == keep))
                .collect();
            self.delete_paced(&self.data, keys, "data", pace).await?;
            if pace.stopped() {
                return Ok(());
            }
        }
        Ok(())
    }

    /// Deletes the items of `keys` from `table` in batches as `pace` allows, up to where it
    /// stops the run.
    async fn delete_paced(
        &self,
        table: &str,
        mut keys: Vec<Item>,
        what: &str,
        pace: &Pace,
    ) -> StoreResult<()> {
        while !keys.is_empty() {
            let n = pace.allowance(keys.len().min(100));
            if n == 0 {
                return Ok(());
            }
            let rest = keys.split_off(n);
            let batch = std::mem::replace(&mut keys, rest);
            let requests = batch
                .into_iter()
                .map(Self::delete_request)
                .collect::<StoreResult<Vec<_>>>()?;
            self.batch_write(table, requests).await?;
            pace.removed(what, n).await;
        }
        Ok(())
    }
}

/// Where an export page starts: in the data table after the key `after` (none: at its
/// start), or at the tokens.
#[derive(serde::Serialize, serde::Deserialize)]
#[serde(tag = "table", rename_all = "lowercase")]
enum ExportPosition {
    Data {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        after: Option<(String, String)>,
    },
    Tokens,
}

/// An item in DynamoDB's own JSON form (`{"S": ...}`, `{"N": ...}`, ...), as the AWS CLI and
/// an export to S3 write it: every type kept.
fn dynamodb_json(item: &Item) -> Value {
    fn value(v: &AttributeValue) -> Value {
        match v {
            AttributeValue::S(s) => json!({ "S": s }),
            AttributeValue::N(n) => json!({ "N": n }),
            AttributeValue::B(b) => json!({ "B": aws_smithy_types::base64::encode(b.as_ref()) }),
            AttributeValue::Bool(b) => json!({ "BOOL": b }),
            AttributeValue::Null(_) => json!({ "NULL": true }),
            AttributeValue::Ss(l) => json!({ "SS": l }),
            AttributeValue::Ns(l) => json!({ "NS": l }),
            AttributeValue::Bs(l) => json!({
                "BS": l.iter().map(|b| aws_smithy_types::base64::encode(b.as_ref())).collect::<Vec<_>>()
            }),
            AttributeValue::L(l) => json!({ "L": l.iter().map(value).collect::<Vec<_>>() }),
            AttributeValue::M(m) => json!({ "M": dynamodb_json(m) }),
            _ => Value::Null,
        }
    }
    Value::Object(item.iter().map(|(k, v)| (k.clone(), value(v))).collect())
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

    /// An administrative Scan (seeding only): every data item of the tenant but its write log.
    async fn clear_tenant(&self, tenant: &str) -> StoreResult<()> {
        self.delete_with_prefix(&tenant_prefix(tenant), &log_pk(tenant), &Pace::unbounded())
            .await
    }

    /// No count without reading the items: a Scan of the whole table.
    async fn tenant_items(&self, _tenant: &str) -> StoreResult<Option<u64>> {
        Ok(None)
    }

    /// The data table's items under `<tenant>|` (one Scan of the table, keys only: tenants
    /// share the table, and a tenant's partitions, one per collection, series and day, are not
    /// listed anywhere), then its tokens and their name guards in the control table, found by
    /// a Query of the tenant index (no Scan).
    async fn delete_tenant(&self, tenant: &str, pace: &Pace) -> StoreResult<()> {
        // No partition key is empty: nothing is kept.
        self.delete_with_prefix(&tenant_prefix(tenant), "", pace)
            .await?;
        if pace.stopped() {
            return Ok(());
        }
        let mut guards = std::collections::BTreeSet::new();
        let mut tokens = Vec::new();
        for token in self.list(tenant).await? {
            guards.insert(format!("TOKNAME|{tenant}|{}", token.name));
            tokens.push(format!("TOKEN|{}", token.hash));
            self.cache.forget(&token.hash);
        }
        // The guards first: a run stopped between the two still lists the tenant.
        let keys: Vec<Item> = guards
            .into_iter()
            .chain(tokens)
            .map(|pk| Item::from([("pk".to_owned(), s(pk))]))
            .collect();
        self.delete_paced(&self.control, keys, "tokens", pace).await
    }

    /// The data table's items under `<tenant>|`, a page of a Scan at a time (`limit` items
    /// read, every tenant's, then filtered: the page's `read`), then the token items, found
    /// by a Query of the tenant index. The name guards, derived from the tokens, are left out.
    async fn export_page(
        &self,
        tenant: &str,
        from: Option<&str>,
        limit: usize,
    ) -> StoreResult<ExportPage> {
        let after = match ExportPage::position(from, ExportPosition::Data { after: None })? {
            ExportPosition::Data { after } => after,
            ExportPosition::Tokens => {
                let items: Vec<Item> = self
                    .client
                    .query()
                    .table_name(self.control.as_ref())
                    .index_name("by_tenant")
                    .key_condition_expression("gt = :t")
                    .expression_attribute_values(":t", s(tenant))
                    .into_paginator()
                    .items()
                    .send()
                    .try_collect()
                    .await
                    .map_err(backend)?;
                let items = items.iter().map(|i| ("control", dynamodb_json(i)));
                return Ok(ExportPage::of(items.collect(), 0, None::<ExportPosition>));
            }
        };
        let mut scan = self
            .client
            .scan()
            .table_name(self.data.as_ref())
            .filter_expression("begins_with(pk, :p)")
            .expression_attribute_values(":p", s(tenant_prefix(tenant)))
            .limit(i32::try_from(limit.max(1)).unwrap_or(SCAN_PAGE));
        if let Some((pk, sk)) = after {
            scan = scan
                .exclusive_start_key("pk", s(pk))
                .exclusive_start_key("sk", s(sk));
        }
        let out = scan.send().await.map_err(backend)?;
        let last = out
            .last_evaluated_key()
            .and_then(|k| match (k.get("pk"), k.get("sk")) {
                (Some(AttributeValue::S(pk)), Some(AttributeValue::S(sk))) => {
                    Some((pk.clone(), sk.clone()))
                }
                _ => None,
            });
        let next = match last {
            Some(after) => ExportPosition::Data { after: Some(after) },
            None => ExportPosition::Tokens,
        };
        let read = usize::try_from(out.scanned_count()).unwrap_or(0);
        let items = out.items().iter().map(|i| ("data", dynamodb_json(i)));
        Ok(ExportPage::of(items.collect(), read, Some(next)))
    }
}
