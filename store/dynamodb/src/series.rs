//! Series in DynamoDB: records in packs ([`super::packs`]: several records of one partition
//! and one second in one compressed item), in [`SHARDS`] item collections of the data table
//! per series and UTC day, the `by_partition` index reading one partition, and an extent item
//! holding the first and last day a series has records for.
//!
//! A read of a window merges the Queries of a day's shards, newest first, sent together: it
//! takes the pack whose newest record is newest among the shards' next ones, and passes on
//! the records it holds that are newer than every pack not read yet (none can hold a newer
//! one), until the page is full. A read resuming from a position reads the packs of the
//! position's second again, at most.
//!
//! Records written before packs (one item per record, in the day's item collection without
//! shard) are read beside them, for the days up to the last one the series had when it was
//! first written in packs (`ol` of the extent item), until the retention deletes them: no
//! migration is needed, and a series written in packs alone sends no Query for them.

use std::collections::BTreeMap;
use std::collections::btree_map::Entry;
use std::ops::ControlFlow;

use async_trait::async_trait;
use aws_sdk_dynamodb::operation::query::builders::QueryFluentBuilder;
use aws_sdk_dynamodb::operation::update_item::builders::UpdateItemFluentBuilder;
use serde_json::Value;

use super::DynamoStore;
use super::client::{backend, wrote};
use super::item::{
    Item, bucket_pk, day_of, extent_pk, get_n, n, partition_pk, s, ts_key, ts_key_last,
};
use super::packs::{SHARDS, newest_of, pack_items, records_of, shard_pk, span_last};
use super::requests::{Lane, page_limit};
use netops_store::{
    Filter, Position, Record, SeriesPage, SeriesQuery, SeriesRead, SeriesWrite, StoreResult,
};

/// The days a series has records for, and the last one that may hold records of the former
/// layout (`None`: every day, the series never having been written in packs; -1: none).
pub(super) struct Extent {
    lo: i64,
    hi: i64,
    pub(super) old: Option<i64>,
}

impl DynamoStore {
    /// The items of `records` in `series`, written now.
    pub(super) fn series_items(
        &self,
        tenant: &str,
        series: &str,
        records: Vec<Record>,
    ) -> StoreResult<Vec<Item>> {
        let written = chrono::Utc::now().timestamp_micros();
        pack_items(tenant, series, records, written, self.retention_secs)
    }

    /// The Query reading newest first one item collection (a day's shard, or one partition
    /// in the `by_partition` index) between two sort keys.
    fn newest_first(
        &self,
        index: Option<&str>,
        key_attr: &str,
        key: String,
        lo: String,
        hi: String,
    ) -> QueryFluentBuilder {
        let sk_attr = if index.is_some() { "gs" } else { "sk" };
        self.client
            .query()
            .table_name(self.data.as_ref())
            .set_index_name(index.map(str::to_owned))
            .key_condition_expression("#k = :k AND #s BETWEEN :lo AND :hi")
            .expression_attribute_names("#k", key_attr)
            .expression_attribute_names("#s", sk_attr)
            .expression_attribute_values(":k", s(key))
            .expression_attribute_values(":lo", s(lo))
            .expression_attribute_values(":hi", s(hi))
            .scan_index_forward(false)
            .set_consistent_read(index.is_none().then_some(true))
    }

    /// Widens the days a series has records for to include `lo..=hi`: a read of the extent,
    /// then a conditional update of each bound that does not cover its day yet (none, most of
    /// the time). The first append in packs also records the last day that may hold records
    /// of the former layout.
    pub(super) async fn widen_extent(
        &self,
        tenant: &str,
        series: &str,
        lo: i64,
        hi: i64,
    ) -> StoreResult<()> {
        let stored = self.extent(tenant, series).await?;
        for (attr, day, cmp, covered) in [
            ("lo", lo, ">", stored.as_ref().is_some_and(|e| e.lo <= lo)),
            ("hi", hi, "<", stored.as_ref().is_some_and(|e| e.hi >= hi)),
        ] {
            if covered {
                continue;
            }
            let out = self
                .extent_update(tenant, series)
                .update_expression(format!("SET {attr} = :d"))
                .condition_expression(format!("attribute_not_exists({attr}) OR {attr} {cmp} :d"))
                .expression_attribute_values(":d", n(day))
                .send()
                .await;
            wrote(out)?;
        }
        if stored.as_ref().is_none_or(|e| e.old.is_none()) {
            let old = stored.as_ref().map_or(-1, |e| e.hi);
            let out = self
                .extent_update(tenant, series)
                .update_expression("SET ol = if_not_exists(ol, :o)")
                .expression_attribute_values(":o", n(old))
                .send()
                .await;
            wrote(out)?;
        }
        Ok(())
    }

    /// An update of the extent item of a series.
    fn extent_update(&self, tenant: &str, series: &str) -> UpdateItemFluentBuilder {
        self.client
            .update_item()
            .table_name(self.data.as_ref())
            .key("pk", s(extent_pk(tenant, series)))
            .key("sk", s("extent"))
    }

    /// The days a series has records for, if it has any.
    pub(super) async fn extent(&self, tenant: &str, series: &str) -> StoreResult<Option<Extent>> {
        let out = self
            .client
            .get_item()
            .table_name(self.data.as_ref())
            .key("pk", s(extent_pk(tenant, series)))
            .key("sk", s("extent"))
            .consistent_read(true)
            .send()
            .await
            .map_err(backend)?;
        let Some(item) = out
            .item
            .filter(|i| i.contains_key("lo") && i.contains_key("hi"))
        else {
            return Ok(None);
        };
        Ok(Some(Extent {
            lo: get_n(&item, "lo")?,
            hi: get_n(&item, "hi")?,
            old: match item.contains_key("ol") {
                true => Some(get_n(&item, "ol")?),
                false => None,
            },
        }))
    }
}

#[async_trait]
impl SeriesRead for DynamoStore {
    async fn scan(&self, q: &SeriesQuery<'_>) -> StoreResult<SeriesPage> {
        self.read_series(q, usize::MAX).await
    }

    async fn scan_bounded(&self, q: &SeriesQuery<'_>) -> StoreResult<SeriesPage> {
        self.read_series(q, self.scan_budget).await
    }
}

impl DynamoStore {
    /// The query's page, from at most about `budget` records read.
    async fn read_series(&self, q: &SeriesQuery<'_>, budget: usize) -> StoreResult<SeriesPage> {
        // A position newer than the window resumes from its top, one older than the window
        // has nothing left.
        let after = q.after.filter(|pos| pos.ts < q.to);
        let exhausted = q.after.is_some_and(|pos| pos.ts < q.from);
        if q.to <= q.from || q.to <= 0 || exhausted {
            return Ok(SeriesPage::default());
        }
        // The newest record the read may take, and the newest pack that may hold it.
        let top = after.map_or(q.to - 1, |pos| pos.ts.min(q.to - 1));
        let (lo, hi) = (ts_key(q.from), ts_key_last(span_last(top)));
        let mut merge = Merge::new(q, after, budget);
        match q.partition {
            Some(p) => {
                let gp = partition_pk(q.tenant, q.series, p);
                let query = self.newest_first(Some("by_partition"), "gp", gp, lo, hi);
                let _ = merge.run(vec![Lane::new(query)]).await?;
            }
            None => {
                // The day buckets from the newest, within the days the series has records
                // for (a window opened to the epoch or to the end of time reads those days
                // only), each bucket its shards and, on the days that may hold some, the
                // records of the former layout.
                let Some(extent) = self.extent(q.tenant, q.series).await? else {
                    return Ok(SeriesPage::default());
                };
                let first = day_of(q.from.max(0)).max(extent.lo);
                for day in (first..=day_of(top).min(extent.hi)).rev() {
                    let mut lanes: Vec<Lane> = (0..SHARDS)
                        .map(|shard| {
                            let pk = shard_pk(q.tenant, q.series, day, shard);
                            Lane::new(self.newest_first(None, "pk", pk, lo.clone(), hi.clone()))
                        })
                        .collect();
                    if extent.old.is_none_or(|old| day <= old) {
                        let pk = bucket_pk(q.tenant, q.series, day);
                        lanes.push(Lane::new(self.newest_first(
                            None,
                            "pk",
                            pk,
                            lo.clone(),
                            hi.clone(),
                        )));
                    }
                    if merge.run(lanes).await?.is_break() {
                        break;
                    }
                }
            }
        }
        Ok(merge.page(q.limit))
    }
}

/// The merge of a read's Queries into its page, newest first (ties by id, then partition,
/// descending).
struct Merge<'a> {
    from: i64,
    to: i64,
    filter: &'a Filter,
    after: Option<&'a Position>,
    /// The records the page wants: its limit and one more.
    want: usize,
    budget: usize,
    /// Records read and not passed on yet, by time, id and partition: the copy written
    /// last, and when.
    held: BTreeMap<(i64, String, String), (i64, Value)>,
    records: Vec<Record>,
    /// The last record passed on, matching or not.
    examined: Option<Position>,
    /// Items read and held (their records read), and items read in all (some not held
    /// yet).
    items: usize,
    read: usize,
    fetched: usize,
    /// Stopped by the budget.
    short: bool,
}

impl<'a> Merge<'a> {
    fn new(q: &'a SeriesQuery<'_>, after: Option<&'a Position>, budget: usize) -> Self {
        Merge {
            from: q.from,
            to: q.to,
            filter: q.filter,
            after,
            want: q.limit.saturating_add(1),
            budget,
            held: BTreeMap::new(),
            records: Vec::new(),
            examined: None,
            items: 0,
            read: 0,
            fetched: 0,
            short: false,
        }
    }

    /// Records per item so far.
    fn per_item(&self) -> usize {
        match self.items {
            0 => 1,
            items => self.read.div_ceil(items).max(1),
        }
    }

    /// About how many records the items read hold.
    fn spent(&self) -> usize {
        self.fetched.saturating_mul(self.per_item())
    }

    fn done(&self) -> bool {
        self.short || self.records.len() >= self.want
    }

    /// How many items the next page of one of `lanes` lanes asks for, its last page having
    /// asked `last`: what the records still wanted take, at the rate of records per item
    /// and of matches per record read so far ([`page_limit`]), shared by the lanes, and one
    /// more (the item after tells whether more records are newer than the next lane's), at
    /// most what the budget leaves.
    fn lane_limit(&self, last: Option<usize>, lanes: usize) -> usize {
        let per_item = self.per_item();
        let need = self.want.saturating_sub(self.records.len()).max(1);
        let records = page_limit(
            need,
            self.filter.0.is_empty(),
            last.map(|l| l.saturating_mul(per_item).saturating_mul(lanes)),
            self.read,
            self.records.len(),
        );
        let items = records.div_ceil(per_item).div_ceil(lanes) + 1;
        let left = self.budget.saturating_sub(self.spent()).div_ceil(per_item);
        items.min((left / lanes).max(1))
    }

    /// Merges `lanes` (which hold no record newer than any record read before) into the
    /// page: breaks once the page is full or the budget spent.
    async fn run(&mut self, mut lanes: Vec<Lane>) -> StoreResult<ControlFlow<()>> {
        let count = lanes.len();
        loop {
            // Past the budget, with a record examined to resume from: no more pages.
            if self.read >= self.budget && self.examined.is_some() {
                self.short = self.records.len() < self.want;
                return Ok(ControlFlow::Break(()));
            }
            while lanes.iter().any(Lane::wants_page) {
                self.fetched +=
                    Lane::refill(&mut lanes, |last| self.lane_limit(last, count)).await?;
            }
            // The lane whose next item is the newest: no record newer than its newest is
            // left unread.
            let mut newest: Option<(usize, i64)> = None;
            for (i, lane) in lanes.iter().enumerate() {
                if let Some(item) = lane.front() {
                    let ts = newest_of(item)?;
                    if newest.is_none_or(|(_, best)| ts > best) {
                        newest = Some((i, ts));
                    }
                }
            }
            self.pass(newest.map_or(i64::MIN, |(_, ts)| ts));
            if self.done() {
                return Ok(ControlFlow::Break(()));
            }
            let Some(item) = newest.and_then(|(i, _)| lanes[i].pop()) else {
                return Ok(ControlFlow::Continue(()));
            };
            self.hold(item)?;
        }
    }

    /// Holds the records of `item` in the read's window, after its position, each the copy
    /// written last.
    fn hold(&mut self, item: Item) -> StoreResult<()> {
        let (written, records) = records_of(&item)?;
        self.items += 1;
        self.read += records.len();
        for r in records {
            if r.ts < self.from || r.ts >= self.to {
                continue;
            }
            if self
                .after
                .is_some_and(|pos| (r.ts, r.id.as_str()) >= (pos.ts, pos.id.as_str()))
            {
                continue;
            }
            match self.held.entry((r.ts, r.id, r.partition)) {
                Entry::Vacant(e) => {
                    e.insert((written, r.body));
                }
                Entry::Occupied(mut e) => {
                    if written > e.get().0 {
                        e.insert((written, r.body));
                    }
                }
            }
        }
        Ok(())
    }

    /// Passes on the held records newer than `bound`, newest first, until the page is full
    /// or, past the budget, one record was examined.
    fn pass(&mut self, bound: i64) {
        while !self.done() {
            let Some(entry) = self.held.last_entry() else {
                return;
            };
            if entry.key().0 <= bound {
                return;
            }
            let ((ts, id, partition), (_, body)) = entry.remove_entry();
            self.examined = Some(Position { ts, id: id.clone() });
            if self.filter.matches(&body) {
                self.records.push(Record {
                    partition,
                    ts,
                    id,
                    body,
                });
            }
            self.short = self.read >= self.budget && self.records.len() < self.want;
        }
    }

    fn page(self, limit: usize) -> SeriesPage {
        if self.short {
            // Stopped by the budget, short of a full page: the next page resumes after the
            // last record examined, matching or not.
            return SeriesPage {
                records: self.records,
                next: self.examined,
            };
        }
        SeriesPage::cut(self.records, limit)
    }
}

#[async_trait]
impl SeriesWrite for DynamoStore {
    async fn append(&self, tenant: &str, series: &str, records: Vec<Record>) -> StoreResult<()> {
        if let (Some(lo), Some(hi)) = (
            records.iter().map(|r| day_of(r.ts)).min(),
            records.iter().map(|r| day_of(r.ts)).max(),
        ) {
            self.widen_extent(tenant, series, lo, hi).await?;
        }
        let mut requests = Vec::new();
        for item in self.series_items(tenant, series, records)? {
            requests.push(Self::put_request(item)?);
        }
        self.batch_write(&self.data, requests).await
    }
}
