//! The rollups port: hourly aggregates by `(tenant, series, hour, dimension key)`, whose
//! measures are added up, and the two ways of adding them up over a window that adapters may
//! do where the data lives.

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{Filter, StoreError, StoreResult};

/// The rollup series of the markers of [`Rollups::add_once`]; no route reads it.
pub const BATCHES: &str = "~batches";

/// An hourly aggregate: measures summed over one hour and one combination of dimensions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Rollup {
    /// Start of the hour, ms.
    pub hour: i64,
    /// Identifies the combination of dimensions within the hour.
    pub key: String,
    /// Shared: the rows of one combination carry the same dimensions, so an adapter may
    /// decode them once per read.
    pub dims: Arc<Value>,
    pub measures: BTreeMap<String, f64>,
}

/// Which measures of a row [`Rollups::rows_keeping`] keeps, given the row's hour and the
/// measure's name; shared, as an adapter may apply it on another thread.
pub type KeepMeasure = Arc<dyn Fn(i64, &str) -> bool + Send + Sync>;

/// Adds `measures` into `sums`, name by name.
pub fn add_into(sums: &mut BTreeMap<String, f64>, measures: BTreeMap<String, f64>) {
    for (name, v) in measures {
        *sums.entry(name).or_insert(0.0) += v;
    }
}

/// An index by text of the rows being added up: read once per aggregate, so hashed fast
/// (the texts come from the store, not from callers).
type TextIndex = std::collections::HashMap<String, usize, foldhash::fast::RandomState>;

/// Rollup rows added up per dimension key ([`Rollups::sums_per_key`]).
#[derive(Default)]
pub struct KeySums {
    index: TextIndex,
    rows: Vec<Rollup>,
}

impl KeySums {
    /// Adds one aggregate: `dims` is called for the first aggregate of a key only, `measures`
    /// adds the aggregate's measures into the key's sums.
    pub fn add(
        &mut self,
        hour: i64,
        key: &str,
        dims: impl FnOnce() -> StoreResult<Arc<Value>>,
        measures: impl FnOnce(&mut BTreeMap<String, f64>) -> StoreResult<()>,
    ) -> StoreResult<()> {
        let i = match self.index.get(key) {
            Some(&i) => {
                self.rows[i].hour = self.rows[i].hour.max(hour);
                i
            }
            None => {
                self.index.insert(key.to_owned(), self.rows.len());
                self.rows.push(Rollup {
                    hour,
                    key: key.to_owned(),
                    dims: dims()?,
                    measures: BTreeMap::new(),
                });
                self.rows.len() - 1
            }
        };
        measures(&mut self.rows[i].measures)
    }

    pub fn into_rows(mut self) -> Vec<Rollup> {
        self.rows.sort_by(|a, b| a.key.cmp(&b.key));
        self.rows
    }
}

/// The aggregates of a window whose dimensions agree on the grouping ones, added up
/// ([`Rollups::sums_per_group`]).
#[derive(Debug, Clone, PartialEq)]
pub struct RollupGroup {
    /// The grouping dimensions' values, in the order asked (null where an aggregate lacks one).
    pub dims: Vec<Value>,
    /// How many distinct dimension keys the group covers.
    pub keys: usize,
    /// Start of the hour of its latest aggregate, ms.
    pub hour: i64,
    pub measures: BTreeMap<String, f64>,
}

/// The values of the `by` dimensions of `dims`, null where absent.
pub fn pick(dims: &Value, by: &[&str]) -> Vec<Value> {
    by.iter()
        .map(|f| dims.get(f).cloned().unwrap_or(Value::Null))
        .collect()
}

/// Rollup rows added up per group of dimensions ([`Rollups::sums_per_group`]).
pub struct Groups<'a> {
    by: &'a [&'a str],
    /// Each key seen, with its group.
    keys: TextIndex,
    /// Each group by the JSON text of its dimensions.
    index: TextIndex,
    groups: Vec<RollupGroup>,
}

impl<'a> Groups<'a> {
    pub fn new(by: &'a [&'a str]) -> Self {
        Groups {
            by,
            keys: Default::default(),
            index: Default::default(),
            groups: Vec::new(),
        }
    }

    /// Adds one aggregate: `dims` (given the grouping names, it returns their values) is
    /// called for the first aggregate of a key only, `measures` adds the aggregate's
    /// measures into its group's sums.
    pub fn add(
        &mut self,
        hour: i64,
        key: &str,
        dims: impl FnOnce(&[&str]) -> StoreResult<Vec<Value>>,
        measures: impl FnOnce(&mut BTreeMap<String, f64>) -> StoreResult<()>,
    ) -> StoreResult<()> {
        let i = match self.keys.get(key) {
            Some(&i) => i,
            None => {
                let dims = dims(self.by)?;
                let id =
                    serde_json::to_string(&dims).map_err(|e| StoreError::Data(e.to_string()))?;
                let i = match self.index.get(&id) {
                    Some(&i) => i,
                    None => {
                        self.index.insert(id, self.groups.len());
                        self.groups.push(RollupGroup {
                            dims,
                            keys: 0,
                            hour,
                            measures: BTreeMap::new(),
                        });
                        self.groups.len() - 1
                    }
                };
                self.groups[i].keys += 1;
                self.keys.insert(key.to_owned(), i);
                i
            }
        };
        let group = &mut self.groups[i];
        group.hour = group.hour.max(hour);
        measures(&mut group.measures)
    }

    /// The groups in the order of their dimensions' JSON text.
    pub fn into_groups(self) -> Vec<RollupGroup> {
        let mut order: Vec<_> = self.index.into_iter().collect();
        order.sort_unstable();
        let mut groups: Vec<Option<RollupGroup>> = self.groups.into_iter().map(Some).collect();
        order
            .into_iter()
            .filter_map(|(_, i)| groups[i].take())
            .collect()
    }
}

/// Hourly aggregates of series.
#[async_trait]
pub trait Rollups: Send + Sync + 'static {
    /// Adds the measures into the existing aggregates (or creates them).
    async fn add(&self, tenant: &str, series: &str, rows: Vec<Rollup>) -> StoreResult<()>;

    /// Bulk load of aggregates that do not exist yet (a tenant being seeded after
    /// [`crate::Deployment::clear_tenant`]): the same result as [`Rollups::add`] there,
    /// but an adapter may write each aggregate whole, in batches, instead of adding into it.
    async fn load(&self, tenant: &str, series: &str, rows: Vec<Rollup>) -> StoreResult<()> {
        self.add(tenant, series, rows).await
    }

    /// Adds the rows of several series as one batch, once: `marker` names the batch (its
    /// hour and key in the series [`BATCHES`], where it is kept after the rows are added, and
    /// ages out with them). A batch whose marker is there already is skipped and `false`
    /// returned, so that a producer killed after its rollups were added and before it noted
    /// so, or two senders of one batch at once, count it once. The embedded store adds the
    /// rows and writes the marker in one transaction; DynamoDB in transactions of 99 rows and
    /// a marker each (the batch cut the same way each time it comes).
    async fn add_once(
        &self,
        tenant: &str,
        marker: Rollup,
        series: Vec<(String, Vec<Rollup>)>,
    ) -> StoreResult<bool>;

    /// Aggregates with `from <= hour < to`, matching `filter` on their dimensions, in (hour,
    /// key) order.
    async fn rows(
        &self,
        tenant: &str,
        series: &str,
        from: i64,
        to: i64,
        filter: &Filter,
    ) -> StoreResult<Vec<Rollup>>;

    /// [`Rollups::rows`] holding only the measures `keep` accepts (given the row's hour and
    /// the measure's name), for reads of wide rows that want few of their measures (one
    /// measure of a window's hours among a day's). The same items are read; an adapter that
    /// decodes measures one at a time copies only those kept, the default drops the others
    /// after the read.
    async fn rows_keeping(
        &self,
        tenant: &str,
        series: &str,
        from: i64,
        to: i64,
        filter: &Filter,
        keep: KeepMeasure,
    ) -> StoreResult<Vec<Rollup>> {
        let mut rows = self.rows(tenant, series, from, to, filter).await?;
        for row in &mut rows {
            row.measures.retain(|name, _| keep(row.hour, name));
        }
        Ok(rows)
    }

    /// [`Rollups::rows`] added up per dimension key: one row per key, holding the hour of its
    /// latest aggregate, the dimensions of its first and the sums of its measures, in key
    /// order. For reads of long windows that want totals only; adapters that can add up where
    /// the data lives override this, the default adds the rows up here.
    async fn sums_per_key(
        &self,
        tenant: &str,
        series: &str,
        from: i64,
        to: i64,
        filter: &Filter,
    ) -> StoreResult<Vec<Rollup>> {
        let mut sums = KeySums::default();
        for row in self.rows(tenant, series, from, to, filter).await? {
            sums.add(
                row.hour,
                &row.key,
                || Ok(row.dims),
                |sums| {
                    add_into(sums, row.measures);
                    Ok(())
                },
            )?;
        }
        Ok(sums.into_rows())
    }

    /// The aggregates of a window added up per group: those whose dimensions agree on the
    /// `by` ones form a group, which holds their values, how many distinct keys it covers,
    /// the hour of its latest aggregate and the sums of its measures; groups in the order of
    /// their dimensions. Where many keys share few groups (one key per pair of dimensions,
    /// grouped by one of them), adapters that can read dimensions in place override this; the
    /// default groups the [`Rollups::sums_per_key`] rows.
    async fn sums_per_group(
        &self,
        tenant: &str,
        series: &str,
        from: i64,
        to: i64,
        filter: &Filter,
        by: &[&str],
    ) -> StoreResult<Vec<RollupGroup>> {
        let mut groups = Groups::new(by);
        for row in self.sums_per_key(tenant, series, from, to, filter).await? {
            groups.add(
                row.hour,
                &row.key,
                |by| Ok(pick(&row.dims, by)),
                |sums| {
                    add_into(sums, row.measures);
                    Ok(())
                },
            )?;
        }
        Ok(groups.into_groups())
    }
}
