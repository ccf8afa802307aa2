//! The requests the ports share: writes in batches, transactions retried on conflict, and the
//! paging every read of several pages goes through ([`Page`]: [`each_item`] for reads of a
//! whole Query, [`take_in_order`] for reads that want some items of one or more Queries).

use std::collections::VecDeque;
use std::ops::ControlFlow;
use std::time::Duration;

use aws_sdk_dynamodb::error::ProvideErrorMetadata;
use aws_sdk_dynamodb::operation::query::builders::QueryFluentBuilder;
use aws_sdk_dynamodb::types::{DeleteRequest, Put, PutRequest, TransactWriteItem, WriteRequest};
use tokio::task::JoinSet;

use super::DynamoStore;
use super::client::backend;
use super::item::Item;
use netops_store::usage::Usage;
use netops_store::{StoreError, StoreResult};

/// The most items a page sized from what a read still wants asks for, and the fewest a
/// filtered read's page asks for.
const PAGE_MOST: usize = 1000;
const PAGE_LEAST: usize = 50;
/// The most Queries of one sequence ([`take_in_order`]) in flight at once.
const AHEAD: usize = 4;

/// One page of a Query: its items, and the Query of the next page when there is one.
pub(super) struct Page {
    items: Vec<Item>,
    next: Option<QueryFluentBuilder>,
    /// The `Limit` it asked for (none: the Query's own, or up to 1 MB).
    limit: Option<usize>,
}

impl Page {
    /// The page `query` starts with, asking for `limit` items when given.
    async fn read(query: QueryFluentBuilder, limit: Option<usize>) -> StoreResult<Page> {
        let query = match limit {
            Some(l) => query.limit(l as i32),
            None => query,
        };
        let out = query.clone().send().await.map_err(backend)?;
        let next = out
            .last_evaluated_key
            .filter(|key| !key.is_empty())
            .map(|key| query.set_exclusive_start_key(Some(key)));
        Ok(Page {
            items: out.items.unwrap_or_default(),
            next,
            limit,
        })
    }
}

/// Hands `each` the items of a Query in order, page after page (following
/// `LastEvaluatedKey`), until it breaks or the pages end; each page asks for the Query's own
/// `Limit`, if any. A page is asked for only once the previous one has been read: a read
/// that stops early sends no request for the pages it does not need.
pub(super) async fn each_item(
    query: QueryFluentBuilder,
    mut each: impl FnMut(Item) -> StoreResult<ControlFlow<()>>,
) -> StoreResult<()> {
    let mut page = Page::read(query, None).await?;
    loop {
        for item in page.items {
            if each(item)?.is_break() {
                return Ok(());
            }
        }
        match page.next {
            Some(next) => page = Page::read(next, None).await?,
            None => return Ok(()),
        }
    }
}

/// How many items a page asks for when its read wants `need` more items, `every` when it
/// takes every item it reads: that many; else, having read `read` items and taken `taken`,
/// what that rate of taking says the need takes, and a quarter more, but at most twice the
/// last page (`last`; the first asks for the need and a quarter more: the filters of the
/// routes' defaults, such as `/flows` leaving listening sockets out, drop few records, and a
/// selective filter's pages double from there), at least [`PAGE_LEAST`]. At most
/// [`PAGE_MOST`] either way.
pub(super) fn page_limit(
    need: usize,
    every: bool,
    last: Option<usize>,
    read: usize,
    taken: usize,
) -> usize {
    let limit = match (every, last) {
        (true, _) => need,
        (false, None) => (need.saturating_mul(5) / 4).max(PAGE_LEAST),
        (false, Some(last)) => {
            let by_rate = match taken {
                0 => usize::MAX,
                _ => (need.saturating_mul(read).div_ceil(taken)).saturating_mul(5) / 4,
            };
            by_rate.min(2 * last).max(PAGE_LEAST)
        }
    };
    limit.clamp(1, PAGE_MOST)
}

/// The most items a read that may stop short ([`netops_store::SeriesRead::scan_bounded`])
/// examines: about 4 MB of records (1,000 to 2,000 read units), in 10 Queries of a page of
/// [`PAGE_MOST`]. A filter that few records match over a long window would otherwise read the
/// whole window for one page.
pub(super) const SCAN_BUDGET: usize = 10_000;

/// Reads the Queries of `queries` as one sequence, the items of each in order and the
/// Queries in turn, handing each item to `take` (which says whether it took it) until `want`
/// are taken, the Queries end, or `budget` items have been read. `every` tells that `take`
/// takes every item (no filter). Answers whether the budget stopped it with `want` not
/// reached: the items after the last one handed to `take` were not examined.
///
/// Each page asks for about what the rest of the read needs ([`page_limit`]), not for 1 MB,
/// and never for more than what the budget leaves once the pages in flight are counted, so
/// no more than `budget` items are read.
/// The first page of the next Queries is sent ahead, one more at a time after each Query
/// that leaves the read short, up to [`AHEAD`] in flight: a read its first Query fills sends
/// no other, one that a sparse filter makes walk many Queries waits for them a few at a time
/// rather than one after another. The items come out in the same order either way. Pages
/// sent ahead that the read does not need are awaited before it returns: their cost is spent
/// once sent, and the request that sent them counts it ([`Usage`]: its metrics line is
/// written when it answers, and would miss a page that ended after), and no page is left in
/// flight when Lambda freezes the function after the answer.
pub(super) async fn take_in_order(
    queries: impl IntoIterator<Item = QueryFluentBuilder>,
    want: usize,
    every: bool,
    budget: usize,
    mut take: impl FnMut(Item) -> StoreResult<bool>,
) -> StoreResult<bool> {
    let mut queries = queries.into_iter();
    let mut ahead = VecDeque::new();
    let (mut taken, mut width) = (0, 1);
    // Items read so far, and the items the pages in flight may still bring.
    let (mut read_all, mut in_flight) = (0usize, 0usize);
    let mut short = false;
    'read: while taken < want {
        while ahead.len() < width {
            let left = budget.saturating_sub(read_all + in_flight);
            if left == 0 {
                break;
            }
            let Some(query) = queries.next() else {
                break;
            };
            let limit = page_limit(want - taken, every, None, 0, 0).min(left);
            in_flight += limit;
            let page = Usage::carried(Page::read(query, Some(limit)));
            ahead.push_back((limit, tokio::spawn(page)));
        }
        let Some((asked, first)) = ahead.pop_front() else {
            // No Query left, or none the budget allows.
            short = read_all >= budget && queries.next().is_some();
            break;
        };
        in_flight -= asked;
        let mut page = first
            .await
            .map_err(|e| StoreError::Backend(e.to_string()))??;
        let (mut read, taken_before) = (0, taken);
        loop {
            for item in page.items {
                read += 1;
                read_all += 1;
                if take(item)? {
                    taken += 1;
                    if taken == want {
                        break 'read;
                    }
                }
            }
            let Some(next) = page.next else {
                break;
            };
            let left = budget.saturating_sub(read_all + in_flight);
            if left == 0 {
                short = true;
                break 'read;
            }
            let limit = page_limit(want - taken, every, page.limit, read, taken - taken_before);
            page = Page::read(next, Some(limit.min(left))).await?;
        }
        width = (width + 1).min(AHEAD);
    }
    for (_, unneeded) in ahead {
        let _ = unneeded.await;
    }
    Ok(short)
}

/// One newest-first Query read page by page as a merge pulls its items
/// ([`super::series`]): the items read and not yet taken, and the Query of its next page.
pub(super) struct Lane {
    items: VecDeque<Item>,
    next: Option<QueryFluentBuilder>,
    /// The `Limit` its last page asked for.
    last: Option<usize>,
}

impl Lane {
    pub(super) fn new(query: QueryFluentBuilder) -> Self {
        Lane {
            items: VecDeque::new(),
            next: Some(query),
            last: None,
        }
    }

    /// Its next item, when read.
    pub(super) fn front(&self) -> Option<&Item> {
        self.items.front()
    }

    pub(super) fn pop(&mut self) -> Option<Item> {
        self.items.pop_front()
    }

    /// Whether it has no item at hand but more to read.
    pub(super) fn wants_page(&self) -> bool {
        self.items.is_empty() && self.next.is_some()
    }

    /// Reads the next page of every lane out of items with more to read, at once, each
    /// asking for what `limit` says from the `Limit` of its last page. Answers how many
    /// items they brought.
    pub(super) async fn refill(
        lanes: &mut [Lane],
        limit: impl Fn(Option<usize>) -> usize,
    ) -> StoreResult<usize> {
        let mut reads = Vec::new();
        for (i, lane) in lanes.iter_mut().enumerate() {
            if lane.wants_page()
                && let Some(query) = lane.next.take()
            {
                let asked = limit(lane.last).clamp(1, PAGE_MOST);
                lane.last = Some(asked);
                reads.push((
                    i,
                    tokio::spawn(Usage::carried(Page::read(query, Some(asked)))),
                ));
            }
        }
        // Every page is awaited, even after an error: none is left in flight.
        let (mut failed, mut brought) = (None, 0);
        for (i, read) in reads {
            match read.await {
                Ok(Ok(page)) => {
                    brought += page.items.len();
                    lanes[i].items.extend(page.items);
                    lanes[i].next = page.next;
                }
                Ok(Err(e)) => failed = Some(e),
                Err(e) => failed = Some(StoreError::Backend(e.to_string())),
            }
        }
        failed.map_or(Ok(brought), Err)
    }
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

    pub(super) fn delete_request(key: Item) -> StoreResult<WriteRequest> {
        Ok(WriteRequest::builder()
            .delete_request(
                DeleteRequest::builder()
                    .set_key(Some(key))
                    .build()
                    .map_err(|e| StoreError::Backend(e.to_string()))?,
            )
            .build())
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

impl DynamoStore {
    /// A strongly consistent Query of every item of one partition (`pk`) of the data table.
    pub(super) fn partition_query(&self, pk: String) -> QueryFluentBuilder {
        self.client
            .query()
            .table_name(self.data.as_ref())
            .key_condition_expression("pk = :pk")
            .expression_attribute_values(":pk", super::item::s(pk))
            .consistent_read(true)
    }
}
