//! Rollups in DynamoDB: one item collection of the data table per series, sorted by hour and
//! key, each measure an attribute of its own (`m_<name>`) that `ADD` adds into. The sums per
//! key and per group use the port's defaults (added up here).

use std::collections::{BTreeMap, HashMap};
use std::ops::ControlFlow;
use std::sync::Arc;

use async_trait::async_trait;
use aws_sdk_dynamodb::types::{AttributeValue, TransactWriteItem, Update};
use tokio::task::JoinSet;

use super::DynamoStore;
use super::client::{backend, is_condition_failed};
use super::item::{Item, MEASURE, get_json, get_n, get_s, n, rollup_pk, s, ts_key, ts_key_last};
use super::once::{NOT_MADE, SET_ONCE, once};
use super::requests::{each_item, tx_put};
use netops_store::ports::rollups::add_into;
use netops_store::{BATCHES, Filter, Rollup, Rollups, StoreError, StoreResult};

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

/// At most this many rows are added in one transaction of [`Rollups::add_once`], beside its
/// marker: DynamoDB takes 100 items a transaction.
const TX_ROWS: usize = 99;

/// The change that adds a row into its item (an `UpdateItem` or a transaction's `Update`
/// alike): its sort key, and its expression's names and values.
struct RowAdd {
    sk: String,
    adds: Vec<String>,
    names: HashMap<String, String>,
    values: HashMap<String, AttributeValue>,
}

impl RowAdd {
    fn of(row: &Rollup, retention_secs: i64) -> StoreResult<Self> {
        let dims = serde_json::to_string(&row.dims).map_err(|e| StoreError::Data(e.to_string()))?;
        let mut names = HashMap::from([("#ttl".to_owned(), "ttl".to_owned())]);
        let mut values = HashMap::from([
            (":d".to_owned(), s(dims)),
            (":h".to_owned(), n(row.hour)),
            (":k".to_owned(), s(row.key.clone())),
            (
                ":ttl".to_owned(),
                n(row.hour.div_euclid(1000) + retention_secs),
            ),
        ]);
        let mut adds = Vec::new();
        for (i, (name, value)) in row.measures.iter().enumerate() {
            names.insert(format!("#m{i}"), format!("{MEASURE}{name}"));
            values.insert(format!(":m{i}"), n(value));
            adds.push(format!("#m{i} :m{i}"));
        }
        Ok(Self {
            sk: format!("{}|{}", ts_key(row.hour), row.key),
            adds,
            names,
            values,
        })
    }

    /// `SET` the dimensions (and `set`, if any), `ADD` the measures.
    fn expression(&self, set: Option<&str>) -> String {
        let mut expr = "SET d = :d, hr = :h, rk = :k, #ttl = :ttl".to_owned();
        if let Some(set) = set {
            expr.push_str(", ");
            expr.push_str(set);
        }
        if !self.adds.is_empty() {
            expr.push_str(" ADD ");
            expr.push_str(&self.adds.join(", "));
        }
        expr
    }
}

/// A row as a whole item of partition `pk` (a bulk load, a batch's marker).
fn whole_item(pk: &str, row: &Rollup, retention_secs: i64) -> StoreResult<Item> {
    let dims = serde_json::to_string(&row.dims).map_err(|e| StoreError::Data(e.to_string()))?;
    let mut item = HashMap::from([
        ("pk".to_owned(), s(pk)),
        (
            "sk".to_owned(),
            s(format!("{}|{}", ts_key(row.hour), row.key)),
        ),
        ("d".to_owned(), s(dims)),
        ("hr".to_owned(), n(row.hour)),
        ("rk".to_owned(), s(row.key.clone())),
        (
            "ttl".to_owned(),
            n(row.hour.div_euclid(1000) + retention_secs),
        ),
    ]);
    for (name, value) in &row.measures {
        item.insert(format!("{MEASURE}{name}"), n(value));
    }
    Ok(item)
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
            let change = RowAdd::of(&row, self.retention_secs)?;
            // Added once whatever the SDK retries.
            let update = once(
                self.client
                    .update_item()
                    .table_name(self.data.as_ref())
                    .key("pk", s(pk.clone()))
                    .update_expression(change.expression(Some(SET_ONCE)))
                    .key("sk", s(change.sk))
                    .set_expression_attribute_names(Some(change.names))
                    .set_expression_attribute_values(Some(change.values))
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

    /// The batch's rows in transactions of [`TX_ROWS`] rows and a marker each: a chunk whose
    /// marker is written has its rows added, and the other way round, so that neither two
    /// senders of the batch at once nor a process stopped half-way count a row twice. The
    /// chunks are cut the same way whenever the same rows come (sorted by item key), the
    /// first's marker being `marker`'s key and the next ones `<key>#<n>`.
    async fn add_once(
        &self,
        tenant: &str,
        marker: Rollup,
        series: Vec<(String, Vec<Rollup>)>,
    ) -> StoreResult<bool> {
        let mut changes = Vec::new();
        for (name, rows) in series {
            let pk = rollup_pk(tenant, &name);
            for row in merge_rollups(rows) {
                changes.push((pk.clone(), RowAdd::of(&row, self.retention_secs)?));
            }
        }
        changes.sort_by(|(pa, a), (pb, b)| (pa, &a.sk).cmp(&(pb, &b.sk)));
        let marker_pk = rollup_pk(tenant, BATCHES);
        let mut added = false;
        let chunks: Vec<_> = changes.chunks(TX_ROWS).collect();
        for (i, chunk) in chunks.iter().enumerate() {
            let key = match i {
                0 => marker.key.clone(),
                _ => format!("{}#{i}", marker.key),
            };
            let mark = Rollup {
                key,
                ..marker.clone()
            };
            let mut items = vec![tx_put(
                &self.data,
                whole_item(&marker_pk, &mark, self.retention_secs)?,
                Some("attribute_not_exists(pk)"),
            )?];
            for (pk, change) in chunk.iter() {
                let update = Update::builder()
                    .table_name(self.data.as_ref())
                    .key("pk", s(pk.clone()))
                    .key("sk", s(change.sk.clone()))
                    .update_expression(change.expression(None))
                    .set_expression_attribute_names(Some(change.names.clone()))
                    .set_expression_attribute_values(Some(change.values.clone()))
                    .build()
                    .map_err(|e| StoreError::Backend(e.to_string()))?;
                items.push(TransactWriteItem::builder().update(update).build());
            }
            match self.tx_write(items).await {
                Ok(()) => added = true,
                // Its marker is there: another sending of the batch added this chunk.
                Err(StoreError::ConditionFailed) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(added)
    }

    async fn load(&self, tenant: &str, series: &str, rows: Vec<Rollup>) -> StoreResult<()> {
        let pk = rollup_pk(tenant, series);
        let mut requests = Vec::new();
        for row in merge_rollups(rows) {
            let item = whole_item(&pk, &row, self.retention_secs)?;
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
