//! Series in DynamoDB: records in one item collection of the data table per series and UTC
//! day, the `by_partition` index reading one partition, and an extent item holding the first
//! and last day a series has records for.

use std::collections::HashMap;

use async_trait::async_trait;
use aws_sdk_dynamodb::operation::query::builders::QueryFluentBuilder;

use super::DynamoStore;
use super::client::{backend, wrote};
use super::item::{
    Item, bucket_pk, day_of, extent_pk, get_json, get_n, get_s, item_sk, n, partition_pk,
    record_sk, s, ts_key, ts_key_last,
};
use super::requests::take_in_order;
use netops_store::{
    Position, Record, SeriesPage, SeriesQuery, SeriesRead, SeriesWrite, StoreError, StoreResult,
};

impl DynamoStore {
    pub(super) fn series_item(&self, tenant: &str, series: &str, r: &Record) -> StoreResult<Item> {
        let sk = item_sk(r.ts, &r.id, &r.partition);
        let body = serde_json::to_string(&r.body).map_err(|e| StoreError::Data(e.to_string()))?;
        Ok(HashMap::from([
            ("pk".to_owned(), s(bucket_pk(tenant, series, day_of(r.ts)))),
            ("sk".to_owned(), s(sk.clone())),
            (
                "gp".to_owned(),
                s(partition_pk(tenant, series, &r.partition)),
            ),
            ("gs".to_owned(), s(sk)),
            ("p".to_owned(), s(r.partition.clone())),
            ("ts".to_owned(), n(r.ts)),
            ("id".to_owned(), s(r.id.clone())),
            ("b".to_owned(), s(body)),
            (
                "ttl".to_owned(),
                n(r.ts.div_euclid(1000) + self.retention_secs),
            ),
        ]))
    }

    fn record_of(item: &Item) -> StoreResult<Record> {
        Ok(Record {
            partition: get_s(item, "p")?.to_owned(),
            ts: get_n(item, "ts")?,
            id: get_s(item, "id")?.to_owned(),
            body: get_json(item, "b")?,
        })
    }

    /// The Query reading newest first one item collection (a day bucket, or one partition in
    /// the `by_partition` index) between two sort keys, from `start` when given.
    fn newest_first(
        &self,
        index: Option<&str>,
        key_attr: &str,
        key: String,
        lo: String,
        hi: String,
        start: Option<Item>,
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
            .set_exclusive_start_key(start)
            .set_consistent_read(index.is_none().then_some(true))
    }

    /// Widens the days a series has records for to include `lo..=hi`: two conditional
    /// updates, each a no-op when the bound already covers the day.
    pub(super) async fn widen_extent(
        &self,
        tenant: &str,
        series: &str,
        lo: i64,
        hi: i64,
    ) -> StoreResult<()> {
        for (attr, day, cmp) in [("lo", lo, ">"), ("hi", hi, "<")] {
            let out = self
                .client
                .update_item()
                .table_name(self.data.as_ref())
                .key("pk", s(extent_pk(tenant, series)))
                .key("sk", s("extent"))
                .update_expression(format!("SET {attr} = :d"))
                .condition_expression(format!("attribute_not_exists({attr}) OR {attr} {cmp} :d"))
                .expression_attribute_values(":d", n(day))
                .send()
                .await;
            wrote(out)?;
        }
        Ok(())
    }

    /// The first and last day a series has records for, if it has any.
    async fn extent(&self, tenant: &str, series: &str) -> StoreResult<Option<(i64, i64)>> {
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
        Ok(match out.item {
            Some(item) => Some((get_n(&item, "lo")?, get_n(&item, "hi")?)),
            None => None,
        })
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
    /// The query's page, from at most `budget` items read.
    async fn read_series(&self, q: &SeriesQuery<'_>, budget: usize) -> StoreResult<SeriesPage> {
        let want = q.limit.saturating_add(1);
        // The Queries of the read, in order; built only as the read reaches them.
        let mut queries: Box<dyn Iterator<Item = QueryFluentBuilder> + Send + '_> =
            Box::new(std::iter::empty());
        // DynamoDB refuses a start key outside the key condition: a position newer than the
        // window resumes from its top, one older than the window has nothing left.
        let after = q.after.filter(|pos| pos.ts < q.to);
        let exhausted = q.after.is_some_and(|pos| pos.ts < q.from);
        if q.to > q.from && q.to > 0 && !exhausted {
            let lo = ts_key(q.from);
            let hi = ts_key_last(q.to - 1);
            match q.partition {
                Some(p) => {
                    let gp = partition_pk(q.tenant, q.series, p);
                    let start = after.map(|pos| {
                        let sk = record_sk(pos.ts, &pos.id);
                        HashMap::from([
                            (
                                "pk".to_owned(),
                                s(bucket_pk(q.tenant, q.series, day_of(pos.ts))),
                            ),
                            ("sk".to_owned(), s(sk.clone())),
                            ("gp".to_owned(), s(gp.clone())),
                            ("gs".to_owned(), s(sk)),
                        ])
                    });
                    let query = self.newest_first(Some("by_partition"), "gp", gp, lo, hi, start);
                    queries = Box::new(std::iter::once(query));
                }
                None => {
                    // Day buckets from the newest, resuming inside the bucket of the position,
                    // within the days the series has records for (a window opened to the
                    // epoch or to the end of time reads those days only).
                    let (oldest, latest) = self.extent(q.tenant, q.series).await?.unwrap_or((1, 0));
                    let newest = match after {
                        Some(pos) => pos.ts.min(q.to - 1),
                        None => q.to - 1,
                    };
                    let first = day_of(q.from.max(0)).max(oldest);
                    let days = (first..=day_of(newest).min(latest)).rev();
                    queries = Box::new(days.map(move |day| {
                        let pk = bucket_pk(q.tenant, q.series, day);
                        let start = after.filter(|pos| day_of(pos.ts) == day).map(|pos| {
                            HashMap::from([
                                ("pk".to_owned(), s(pk.clone())),
                                ("sk".to_owned(), s(record_sk(pos.ts, &pos.id))),
                            ])
                        });
                        self.newest_first(None, "pk", pk, lo.clone(), hi.clone(), start)
                    }));
                }
            }
        }
        let mut records = Vec::new();
        let mut examined = None;
        let short = take_in_order(queries, want, q.filter.0.is_empty(), budget, |item| {
            let record = Self::record_of(&item)?;
            examined = Some(Position {
                ts: record.ts,
                id: record.id.clone(),
            });
            let matches = q.filter.matches(&record.body);
            if matches {
                records.push(record);
            }
            Ok(matches)
        })
        .await?;
        if short {
            // Stopped by the budget, short of a full page: the next page resumes after the
            // last record examined, matching or not.
            return Ok(SeriesPage {
                records,
                next: examined,
            });
        }
        Ok(SeriesPage::cut(records, q.limit))
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
        let mut seen = std::collections::HashSet::new();
        let mut requests = Vec::with_capacity(records.len());
        // Later duplicates of one (partition, ts, id) replace earlier ones, as in the embedded store.
        for r in records.iter().rev() {
            if seen.insert((r.ts, r.id.as_str(), r.partition.as_str())) {
                requests.push(Self::put_request(self.series_item(tenant, series, r)?)?);
            }
        }
        self.batch_write(&self.data, requests).await
    }
}
