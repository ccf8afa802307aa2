//! Rollups in DynamoDB: one item collection of the data table per series, sorted by hour and
//! key, each measure an attribute of its own (`m_<name>`) that `ADD` adds into. The sums per
//! key and per group use the port's defaults (added up here).

use std::collections::{BTreeMap, HashMap};
use std::ops::ControlFlow;
use std::sync::Arc;

use async_trait::async_trait;
use aws_sdk_dynamodb::types::AttributeValue;
use tokio::task::JoinSet;

use super::DynamoStore;
use super::client::{backend, is_condition_failed};
use super::item::{MEASURE, get_json, get_n, get_s, n, rollup_pk, s, ts_key, ts_key_last};
use super::once::{NOT_MADE, SET_ONCE, once};
use super::requests::each_item;
use netops_store::ports::rollups::add_into;
use netops_store::{Filter, Rollup, Rollups, StoreError, StoreResult};

/// Rows of one (hour, key) summed into one, in first-seen order.
fn merge_rollups(rows: Vec<Rollup>) -> Vec<Rollup> {
    let mut merged: Vec<Rollup> = Vec::new();
    let mut index: HashMap<(i64, String), usize> = HashMap::new();
    for row in rows {
        match index.get(&(row.hour, row.key.clone())) {
            Some(&i) => add_into(&mut merged[i].measures, row.measures),
            None => {
                index.insert((row.hour, row.key.clone()), merged.len());
                merged.push(row);
            }
        }
    }
    merged
}

#[async_trait]
impl Rollups for DynamoStore {
    async fn add(&self, tenant: &str, series: &str, rows: Vec<Rollup>) -> StoreResult<()> {
        const IN_FLIGHT: usize = 16;
        // Rows of one (hour, key) are added together first: one update each.
        let pk = rollup_pk(tenant, series);
        let mut tasks = JoinSet::new();
        for row in merge_rollups(rows) {
            if tasks.len() >= IN_FLIGHT
                && let Some(done) = tasks.join_next().await
            {
                done.map_err(|e| StoreError::Backend(e.to_string()))??;
            }
            let dims =
                serde_json::to_string(&row.dims).map_err(|e| StoreError::Data(e.to_string()))?;
            let mut update = self
                .client
                .update_item()
                .table_name(self.data.as_ref())
                .key("pk", s(pk.clone()))
                .key("sk", s(format!("{}|{}", ts_key(row.hour), row.key)))
                .expression_attribute_names("#ttl", "ttl")
                .expression_attribute_values(":d", s(dims))
                .expression_attribute_values(":h", n(row.hour))
                .expression_attribute_values(":k", s(row.key.clone()))
                .expression_attribute_values(
                    ":ttl",
                    n(row.hour.div_euclid(1000) + self.retention_secs),
                );
            let mut adds = Vec::new();
            for (i, (name, value)) in row.measures.iter().enumerate() {
                update = update
                    .expression_attribute_names(format!("#m{i}"), format!("{MEASURE}{name}"))
                    .expression_attribute_values(format!(":m{i}"), n(value));
                adds.push(format!("#m{i} :m{i}"));
            }
            let mut expr = format!("SET d = :d, hr = :h, rk = :k, #ttl = :ttl, {SET_ONCE}");
            if !adds.is_empty() {
                expr.push_str(" ADD ");
                expr.push_str(&adds.join(", "));
            }
            // Added once whatever the SDK retries.
            let update = once(
                update
                    .update_expression(expr)
                    .condition_expression(NOT_MADE),
            );
            tasks.spawn(async move {
                match update.send().await {
                    Err(e) if !is_condition_failed(&e) => Err(backend(e)),
                    _ => Ok(()),
                }
            });
        }
        while let Some(done) = tasks.join_next().await {
            done.map_err(|e| StoreError::Backend(e.to_string()))??;
        }
        Ok(())
    }

    async fn load(&self, tenant: &str, series: &str, rows: Vec<Rollup>) -> StoreResult<()> {
        let pk = rollup_pk(tenant, series);
        let mut requests = Vec::new();
        for row in merge_rollups(rows) {
            let dims =
                serde_json::to_string(&row.dims).map_err(|e| StoreError::Data(e.to_string()))?;
            let mut item = HashMap::from([
                ("pk".to_owned(), s(pk.clone())),
                (
                    "sk".to_owned(),
                    s(format!("{}|{}", ts_key(row.hour), row.key)),
                ),
                ("d".to_owned(), s(dims)),
                ("hr".to_owned(), n(row.hour)),
                ("rk".to_owned(), s(row.key)),
                (
                    "ttl".to_owned(),
                    n(row.hour.div_euclid(1000) + self.retention_secs),
                ),
            ]);
            for (name, value) in row.measures {
                item.insert(format!("{MEASURE}{name}"), n(value));
            }
            requests.push(Self::put_request(item)?);
        }
        self.batch_write(&self.data, requests).await
    }

    async fn rows(
        &self,
        tenant: &str,
        series: &str,
        from: i64,
        to: i64,
        filter: &Filter,
    ) -> StoreResult<Vec<Rollup>> {
        let mut out = Vec::new();
        if to <= from || to <= 0 {
            return Ok(out);
        }
        let query = self
            .client
            .query()
            .table_name(self.data.as_ref())
            .key_condition_expression("pk = :pk AND sk BETWEEN :lo AND :hi")
            .expression_attribute_values(":pk", s(rollup_pk(tenant, series)))
            .expression_attribute_values(":lo", s(ts_key(from)))
            .expression_attribute_values(":hi", s(ts_key_last(to - 1)))
            .consistent_read(true);
        each_item(query, |item| {
            let dims = get_json(&item, "d")?;
            if filter.matches(&dims) {
                let mut measures = BTreeMap::new();
                for (k, v) in &item {
                    if let (Some(name), AttributeValue::N(x)) = (k.strip_prefix(MEASURE), v) {
                        let x: f64 = x.parse().map_err(|_| {
                            StoreError::Data(format!("measure {name} is not a number"))
                        })?;
                        measures.insert(name.to_owned(), x);
                    }
                }
                out.push(Rollup {
                    hour: get_n(&item, "hr")?,
                    key: get_s(&item, "rk")?.to_owned(),
                    dims: Arc::new(dims),
                    measures,
                });
            }
            Ok(ControlFlow::Continue(()))
        })
        .await?;
        Ok(out)
    }
}
