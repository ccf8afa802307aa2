//! What reads of series and rollups cost over a DynamoDB-protocol server (moto, at
//! `NETOPS_TEST_DYNAMODB_ENDPOINT`; skipped without one unless `NETOPS_REQUIRE_AWS_TESTS` is
//! set): the Queries a page sends, the items they read and those items' read units, and how
//! many Queries are in flight at once.
//!
//! moto reports a fixed `ConsumedCapacity` per call (1 unit a Query, whatever it read), so
//! the read units here are computed from the items each Query returned, as DynamoDB charges
//! them: their size by its rules, rounded up to 4 KB per Query (a strongly consistent read;
//! the `by_partition` index's eventually consistent reads cost half). The adapter sends no
//! `FilterExpression`, so the items a Query returns are the items it read.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

use aws_sdk_dynamodb::config::interceptors::{
    AfterDeserializationInterceptorContextRef, BeforeDeserializationInterceptorContextRef,
    BeforeTransmitInterceptorContextRef,
};
use aws_sdk_dynamodb::config::{ConfigBag, Intercept, RuntimeComponents};
use aws_sdk_dynamodb::error::BoxError;
use aws_sdk_dynamodb::operation::query::QueryOutput;
use aws_sdk_dynamodb::types::AttributeValue;
use serde_json::json;

use super::DynamoStore;
use super::item::Item;
use super::packs::SHARDS;
use netops_store::config::DynamoConfig;
use netops_store::usage::Usage;
use netops_store::{
    Filter, Position, Pred, Record, Rollup, Rollups, SeriesQuery, SeriesRead, SeriesWrite,
};

#[derive(Debug, Default)]
pub(super) struct Reads {
    queries: AtomicU64,
    items: AtomicU64,
    units: AtomicU64,
    in_flight: AtomicI64,
    most_in_flight: AtomicI64,
}

impl Reads {
    /// What the Queries since the last call read: (Queries, items, read units).
    fn take(&self) -> (u64, u64, u64) {
        self.most_in_flight.store(0, Ordering::Relaxed);
        (
            self.queries.swap(0, Ordering::Relaxed),
            self.items.swap(0, Ordering::Relaxed),
            self.units.swap(0, Ordering::Relaxed),
        )
    }
}

/// An item's size as DynamoDB counts it: each attribute's name and value (a number about
/// one byte per two digits, plus one).
fn item_size(item: &Item) -> u64 {
    item.iter()
        .map(|(k, v)| {
            k.len() as u64
                + match v {
                    AttributeValue::S(s) => s.len() as u64,
                    AttributeValue::N(n) => n.len() as u64 / 2 + 1,
                    _ => 1,
                }
        })
        .sum()
}

#[derive(Debug, Clone)]
struct Measuring(Arc<Reads>);

impl Intercept for Measuring {
    fn name(&self) -> &'static str {
        "netops-test-reads"
    }

    fn read_before_transmit(
        &self,
        _: &BeforeTransmitInterceptorContextRef<'_>,
        _: &RuntimeComponents,
        _: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let now = self.0.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        self.0.most_in_flight.fetch_max(now, Ordering::SeqCst);
        Ok(())
    }

    fn read_before_deserialization(
        &self,
        _: &BeforeDeserializationInterceptorContextRef<'_>,
        _: &RuntimeComponents,
        _: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        self.0.in_flight.fetch_sub(1, Ordering::SeqCst);
        Ok(())
    }

    fn read_after_deserialization(
        &self,
        context: &AfterDeserializationInterceptorContextRef<'_>,
        _: &RuntimeComponents,
        _: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        if let Ok(output) = context.output_or_error()
            && let Some(q) = output.downcast_ref::<QueryOutput>()
        {
            let bytes: u64 = q.items().iter().map(item_size).sum();
            self.0.queries.fetch_add(1, Ordering::Relaxed);
            self.0
                .items
                .fetch_add(q.scanned_count as u64, Ordering::Relaxed);
            self.0
                .units
                .fetch_add(bytes.div_ceil(4096).max(1), Ordering::Relaxed);
        }
        Ok(())
    }
}

/// A store over tables of its own, whose Queries `Reads` measures.
pub(super) async fn store() -> Option<(DynamoStore, Arc<Reads>)> {
    let endpoint = match std::env::var("NETOPS_TEST_DYNAMODB_ENDPOINT") {
        Ok(e) if !e.is_empty() => e,
        _ => {
            assert!(
                std::env::var("NETOPS_REQUIRE_AWS_TESTS").is_err(),
                "NETOPS_TEST_DYNAMODB_ENDPOINT is required"
            );
            eprintln!("skipped: no DynamoDB endpoint");
            return None;
        }
    };
    let config = DynamoConfig {
        table_prefix: format!("c{:016x}-", rand::random::<u64>()),
        endpoint: Some(endpoint),
        region: Some("us-east-1".into()),
        timeout_secs: 60,
        ..DynamoConfig::default()
    };
    let mut store = DynamoStore::connect(&config, netops_store::config::DEFAULT_RETENTION_DAYS)
        .await
        .expect("connect");
    store.ensure_tables().await.expect("tables");
    let reads = Arc::new(Reads::default());
    let conf = store
        .client
        .config()
        .to_builder()
        .interceptor(Measuring(reads.clone()))
        .build();
    store.client = aws_sdk_dynamodb::Client::from_conf(conf);
    Some((store, reads))
}

const DAY: i64 = 86_400_000;
/// Midnight UTC of the first day seeded (2026-01-01).
const START: i64 = 1_767_225_600_000;

/// `per_day` records a day over `days` days, two partitions, ids unique, times sometimes
/// shared; `pad` bytes of padding each. `rare` holds for one record in 97, `common` for
/// every other one.
fn records(days: i64, per_day: i64, pad: usize) -> Vec<Record> {
    let padding = "x".repeat(pad);
    (0..days * per_day)
        .map(|i| {
            let (day, k) = (i / per_day, i % per_day);
            Record {
                partition: format!("p{}", i % 2),
                ts: START + day * DAY + (k / 2) * (DAY / per_day),
                id: format!("r{:05}", (i * 7919) % 100_000),
                body: json!({"n": i, "rare": i % 97 == 5, "common": i % 2 == 0, "pad": padding}),
            }
        })
        .collect()
}

/// Every page of a read of `series` with `filter`, `limit` records each, cursor after cursor;
/// `bounded` reads each page as a route does ([`SeriesRead::scan_bounded`]).
async fn walk(
    store: &DynamoStore,
    series: &str,
    partition: Option<&str>,
    (from, to): (i64, i64),
    filter: &Filter,
    limit: usize,
    bounded: bool,
) -> Vec<Vec<Record>> {
    let mut pages = Vec::new();
    let mut after: Option<Position> = None;
    loop {
        let q = SeriesQuery {
            tenant: "t",
            series,
            partition,
            from,
            to,
            filter,
            after: after.as_ref(),
            limit,
        };
        let page = if bounded {
            store.scan_bounded(&q).await
        } else {
            store.scan(&q).await
        }
        .expect("scan");
        pages.push(page.records);
        match page.next {
            Some(next) => after = Some(next),
            None => return pages,
        }
    }
}

/// What the embedded store answers: the matching records of the window, newest first, ties
/// by id descending.
fn expected(
    all: &[Record],
    partition: Option<&str>,
    (from, to): (i64, i64),
    filter: &Filter,
) -> Vec<Record> {
    let mut out: Vec<Record> = all
        .iter()
        .filter(|r| partition.is_none_or(|p| r.partition == p))
        .filter(|r| r.ts >= from && r.ts < to && filter.matches(&r.body))
        .cloned()
        .collect();
    out.sort_by(|a, b| (b.ts, &b.id).cmp(&(a.ts, &a.id)));
    out
}

fn first_page<'a>(series: &'a str, filter: &'a Filter) -> SeriesQuery<'a> {
    SeriesQuery {
        tenant: "t",
        series,
        partition: None,
        from: 0,
        to: i64::MAX,
        filter,
        after: None,
        limit: 10,
    }
}

#[tokio::test]
async fn a_filtered_page_reads_about_what_it_returns() {
    let Some((store, reads)) = store().await else {
        return;
    };
    // Three days of 1,200 records of about 1 KB: more than 1 MB per day bucket.
    let all = records(3, 1200, 900);
    store.append("t", "dense", all.clone()).await.expect("seed");
    let mut figures = BTreeMap::new();
    for (name, filter) in [
        ("none", Filter::all()),
        ("common", Filter::all().and(Pred::Eq("common", json!(true)))),
        ("rare", Filter::all().and(Pred::Eq("rare", json!(true)))),
    ] {
        reads.take();
        let (page, usage) = Usage::measure(store.scan(&first_page("dense", &filter))).await;
        let page = page.expect("scan");
        assert_eq!(
            page.records,
            expected(&all, None, (0, i64::MAX), &filter)[..10],
            "{name}"
        );
        let (queries, items, units) = reads.take();
        eprintln!(
            "dense {name}: {} calls ({queries} Queries), {items} items read, {units} read units \
             (moto says {})",
            usage.calls, usage.read_units
        );
        figures.insert(name, (usage.calls, queries, items, units));
    }
    // Unfiltered: the 11 records the page needs (one more tells that more follow), shared
    // by the day's shards, each read a page ahead (the item after tells whether the
    // shard's next record is newer than another's), one shard read again: 19 packs of one
    // record (these records are 72 seconds apart).
    assert_eq!(figures["none"], (6, 5, 19, 5));
    // One record in two matches: a Query of 14 items per shard, not a page of 1 MB (256
    // units).
    let (calls, queries, items, units) = figures["common"];
    assert_eq!((calls, queries), (5, 4));
    assert!(items <= 60 && units <= 16, "{:?}", figures["common"]);
    // One in 97: 11 matches need about 1,070 records. Pages sized from the rate of matches
    // so far read little more than that, in a few more Queries per shard than two pages of
    // 1 MB (which read 1,200 records, 312 units, in 2 Queries).
    let (_, queries, items, units) = figures["rare"];
    assert!(queries <= 6 * SHARDS, "{:?}", figures["rare"]);
    assert!(items <= 1150 && units <= 300, "{:?}", figures["rare"]);
}

#[tokio::test]
async fn a_sparse_filter_over_many_days_pages_as_before() {
    let Some((store, reads)) = store().await else {
        return;
    };
    // 60 days of 40 records: a Query per day bucket for a filter matching one in 97.
    let all = records(60, 40, 20);
    store
        .append("t", "sparse", all.clone())
        .await
        .expect("seed");
    let rare = Filter::all().and(Pred::Eq("rare", json!(true)));
    let common = Filter::all().and(Pred::Eq("common", json!(true)));
    let windows = [
        (0, i64::MAX),
        (START + 3 * DAY + 5, START + 52 * DAY + DAY / 3),
    ];
    for window in windows {
        for (filter, limit) in [
            (&rare, 4),
            (&rare, 100),
            (&common, 33),
            (&Filter::all(), 250),
        ] {
            for partition in [None, Some("p1")] {
                let want = expected(&all, partition, window, filter);
                let pages = walk(&store, "sparse", partition, window, filter, limit, false).await;
                assert!(pages.iter().all(|p| p.len() <= limit));
                let got: Vec<Record> = pages.concat();
                assert_eq!(got.len(), want.len(), "{window:?} {filter:?} {partition:?}");
                assert!(got == want, "{window:?} {filter:?} {partition:?}");
                // Every page but the last is full (the last may be empty).
                let full = pages.len().saturating_sub(1);
                assert!(pages[..full].iter().all(|p| p.len() == limit));
            }
        }
    }
    // A sparse first page: the day buckets are read one after another, the shards of each
    // together: never more than 4 Queries in flight.
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    reads.take();
    let page = store
        .scan(&first_page("sparse", &rare))
        .await
        .expect("scan");
    assert_eq!(page.records, expected(&all, None, windows[0], &rare)[..10]);
    // (What the Queries sent ahead and not needed read too, once they have ended.)
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    let most = reads.most_in_flight.load(Ordering::SeqCst);
    let (queries, items, units) = reads.take();
    eprintln!(
        "sparse rare: {queries} Queries, {items} items read, {units} read units, \
         at most {most} in flight"
    );
    assert_eq!(most as u64, SHARDS, "{most} Queries in flight");
}

#[tokio::test]
async fn a_bounded_read_stops_at_its_budget_and_the_next_page_goes_on_from_there() {
    let Some((mut store, reads)) = store().await else {
        return;
    };
    store.scan_budget = 150;
    // 60 days of 40 records: 2,400 records, 25 of them rare.
    let all = records(60, 40, 20);
    store
        .append("t", "budget", all.clone())
        .await
        .expect("seed");
    let rare = Filter::all().and(Pred::Eq("rare", json!(true)));
    let window = (START + 3 * DAY + 5, START + 52 * DAY + DAY / 3);
    for (filter, limit) in [(&rare, 10), (&Filter::all(), 200)] {
        for partition in [None, Some("p1")] {
            let want = expected(&all, partition, window, filter);
            reads.take();
            let pages = walk(&store, "budget", partition, window, filter, limit, true).await;
            // Whatever the filter, a page reads at most the budget and a few items per shard
            // (the item after, which tells whether a shard's next record is newer, read one
            // at a time once the budget is spent): the read of every page together reads the
            // window once, never more than that a page.
            let (_, items, _) = reads.take();
            assert!(
                items <= (150 + 2 * SHARDS) * pages.len() as u64,
                "{items} items for {} pages",
                pages.len()
            );
            let got: Vec<Record> = pages.concat();
            assert!(got == want, "{filter:?} {partition:?}");
            // Pages stopped short of the limit, with a cursor, and the walk still found every
            // record.
            assert!(
                pages.len() > want.len().div_ceil(limit),
                "{filter:?} {partition:?}"
            );
            assert!(pages.iter().all(|p| p.len() <= limit));
        }
    }
    // Each page alone reads at most the budget.
    let mut after: Option<Position> = None;
    for _ in 0..5 {
        reads.take();
        let page = store
            .scan_bounded(&SeriesQuery {
                after: after.as_ref(),
                ..first_page("budget", &rare)
            })
            .await
            .expect("scan");
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        let (_, items, _) = reads.take();
        assert!(items <= 150 + 2 * SHARDS, "{items} items for one page");
        after = page.next;
    }
    // An unbounded read of the same page is not cut.
    let page = store
        .scan(&first_page("budget", &rare))
        .await
        .expect("scan");
    assert_eq!(
        page.records,
        expected(&all, None, (0, i64::MAX), &rare)[..10]
    );
}

#[tokio::test]
async fn a_bounded_list_of_documents_stops_at_its_budget_and_goes_on_from_the_last_key() {
    use netops_store::Documents;

    let Some((mut store, reads)) = store().await else {
        return;
    };
    store.scan_budget = 150;
    let docs: Vec<(String, serde_json::Value)> = (0..600)
        .map(|i| (format!("m{i:04}"), json!({"rare": i % 97 == 5})))
        .collect();
    store.put("t", "machines", docs).await.expect("put");
    let rare = Filter::all().and(Pred::Eq("rare", json!(true)));
    let want = [
        "m0005", "m0102", "m0199", "m0296", "m0393", "m0490", "m0587",
    ];
    // Pages of 3 (the route asks one more): each reads at most the budget, stops short with
    // the last key examined, and the walk finds every match once, in key order.
    let (mut got, mut after, mut pages) = (Vec::new(), None::<String>, 0);
    loop {
        reads.take();
        let (found, stopped) = store
            .list_bounded("t", "machines", &rare, after.as_deref(), 4)
            .await
            .expect("list");
        let (_, items, _) = reads.take();
        assert!(items <= 150, "{items} items for one page");
        pages += 1;
        let full = found.len() == 4;
        got.extend(found.iter().take(3).map(|d| d.key.clone()));
        after = match (full, stopped) {
            (true, _) => Some(found[2].key.clone()),
            (false, Some(last)) => Some(last),
            (false, None) => break,
        };
    }
    assert_eq!(got, want);
    assert!(
        pages >= 4,
        "600 documents in pages of at most 150 read: {pages} pages"
    );
    // Unbounded, the same list is one read of the whole collection.
    let all = store
        .list("t", "machines", &rare, None, 100)
        .await
        .expect("list");
    assert_eq!(all.iter().map(|d| d.key.as_str()).collect::<Vec<_>>(), want);
}

#[tokio::test]
async fn rollups_of_a_window_opened_to_the_epoch_read_the_rows_there_are() {
    let Some((store, reads)) = store().await else {
        return;
    };
    let rows: Vec<Rollup> = (0..300)
        .map(|i| Rollup {
            hour: START + (i / 3) * 3_600_000,
            key: format!("k{}", i % 3),
            dims: Arc::new(json!({"k": i % 3})),
            measures: BTreeMap::from([("bytes".to_owned(), i as f64)]),
        })
        .collect();
    store.load("t", "r", rows.clone()).await.expect("load");
    reads.take();
    let got = store
        .rows("t", "r", 0, i64::MAX, &Filter::all())
        .await
        .expect("rows");
    assert_eq!(got, rows);
    let (queries, items, _) = reads.take();
    // One item collection: the key condition's range costs nothing where there are no rows.
    assert_eq!((queries, items), (1, 300));
    let some = store
        .rows(
            "t",
            "r",
            START + 10 * 3_600_000,
            START + 20 * 3_600_000,
            &Filter::all(),
        )
        .await
        .expect("rows");
    assert_eq!(some, rows[30..60]);
    assert_eq!(reads.take().1, 30);
}

#[test]
fn pages_ask_for_what_the_rest_of_the_read_needs() {
    use crate::requests::page_limit;
    // Unfiltered: the need itself, at most 1000.
    assert_eq!(page_limit(11, true, None, 0, 0), 11);
    assert_eq!(page_limit(11, true, Some(11), 11, 11), 11);
    assert_eq!(page_limit(5000, true, None, 0, 0), 1000);
    // Filtered, first page: the need and a quarter more, at least 50.
    assert_eq!(page_limit(11, false, None, 0, 0), 50);
    assert_eq!(page_limit(101, false, None, 0, 0), 126);
    // Then doubling while nothing matched...
    assert_eq!(page_limit(11, false, Some(50), 50, 0), 100);
    assert_eq!(page_limit(11, false, Some(800), 1550, 0), 1000);
    // ...else what the rate of matches says the rest takes, a quarter more.
    assert_eq!(page_limit(3, false, Some(400), 750, 8), 352);
    assert_eq!(page_limit(9, false, Some(50), 50, 1), 100);
    assert_eq!(page_limit(1, false, Some(50), 50, 25), 50);
}

#[tokio::test]
async fn documents_in_progress_and_ended_since_a_date_are_read_without_the_history() {
    use netops_store::{Change, Documents, Expect, WriteLog, WriteLogEntry};

    let Some((store, reads)) = store().await else {
        return;
    };
    let at = |day: i64| chrono::DateTime::from_timestamp_millis(START + day * DAY).expect("time");
    let incident = |closed: Option<i64>| json!({"opened_at": at(0), "closed_at": closed.map(at), "status": "x"});
    // 300 closed long ago, 3 in progress, 4 closed from day 50 on.
    let mut docs: Vec<(String, serde_json::Value)> = (0..300)
        .map(|i| (format!("old{i:03}"), incident(Some(i % 40))))
        .collect();
    docs.extend((0..3).map(|i| (format!("open{i}"), incident(None))));
    docs.extend((0..4).map(|i| (format!("late{i}"), incident(Some(50 + i)))));
    store.put("a", "siem_incidents", docs).await.expect("put");
    reads.take();
    let keys = |since| {
        let store = store.clone();
        async move {
            let all = store
                .live_since("a", "siem_incidents", since)
                .await
                .expect("live");
            let mut keys: Vec<String> = all.items.into_iter().map(|d| d.key).collect();
            keys.sort();
            keys
        }
    };
    let live = keys(Some(at(50))).await;
    assert_eq!(
        live,
        [
            "late0", "late1", "late2", "late3", "open0", "open1", "open2"
        ]
    );
    let (queries, items, _) = reads.take();
    assert_eq!((queries, items), (2, 7), "the history is not read");
    assert_eq!(keys(None).await, ["open0", "open1", "open2"]);
    assert_eq!(
        keys(Some(at(52))).await,
        ["late2", "late3", "open0", "open1", "open2"]
    );
    // A write that closes an incident moves it with the change; one that reopens moves it
    // back.
    let commit = |key: &str, body: serde_json::Value| {
        let store = store.clone();
        let change = Change::PutDoc {
            collection: "siem_incidents".into(),
            key: key.into(),
            body,
            expect: Expect::Any,
        };
        async move {
            let log = WriteLogEntry {
                tenant: "a".into(),
                at: chrono::Utc::now(),
                request_id: "r".into(),
                expires_at: chrono::Utc::now().timestamp() + 3600,
                ..WriteLogEntry::default()
            };
            store.commit(log, vec![change]).await.expect("commit")
        }
    };
    commit("open1", incident(Some(51))).await;
    commit("late3", incident(None)).await;
    assert_eq!(keys(None).await, ["late3", "open0", "open2"]);
    assert_eq!(
        keys(Some(at(51))).await,
        ["late1", "late2", "late3", "open0", "open1", "open2"]
    );
    assert!(keys(None).await.iter().all(|k| !k.starts_with("old")));
    let other = store
        .live_since("b", "siem_incidents", None)
        .await
        .expect("live");
    assert!(other.items.is_empty());
}
