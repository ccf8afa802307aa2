//! The counters port (the rate limit): atomic increments per key, each returning the new
//! count, refunds that never go below zero, and counters kept through their window and its
//! grace. Served by every store, and by the local process in its own memory.

use std::sync::Arc;

use netops_shared::store::{COUNTER_GRACE_SECS, Counters};

use crate::adapters::Subject;

conformance! {
    [sqlite, dynamodb, process] [
        each_increment_returns_the_new_count_of_its_key,
        a_refund_takes_back_one_call_and_never_goes_below_zero,
        a_refund_of_a_key_never_counted_creates_nothing,
        concurrent_increments_are_each_counted_once,
        a_counter_is_kept_through_its_window_and_grace_while_later_windows_start,
    ]
    // The counters that sweep ended windows as a new one starts. DynamoDB drops a counter
    // by its TTL (`expires_at` plus the grace) some time after, which no read through the
    // port sees (moto keeps expired items): its windows are apart by their keys alone.
    [sqlite, process] [
        a_counter_whose_window_and_grace_ended_is_dropped_when_a_later_window_starts,
    ]
    // Counts shared by every instance over one store: the point of counting in the store.
    [sqlite, dynamodb] [
        two_instances_of_one_store_share_a_count,
    ]
}

/// The end of a rate-limit window starting now, s.
fn window_end() -> i64 {
    chrono::Utc::now().timestamp() + 60
}

async fn each_increment_returns_the_new_count_of_its_key(c: Arc<dyn Counters>) {
    let end = window_end();
    for n in 1..=5 {
        assert_eq!(c.incr("tok:a|w1", end).await.expect("incr"), n);
    }
    assert_eq!(
        c.incr("tok:b|w1", end).await.expect("incr"),
        1,
        "another key"
    );
    assert_eq!(
        c.incr("tok:a|w2", end + 60).await.expect("incr"),
        1,
        "another window"
    );
    assert_eq!(c.incr("tok:a|w1", end).await.expect("incr"), 6);
}

async fn a_refund_takes_back_one_call_and_never_goes_below_zero(c: Arc<dyn Counters>) {
    let end = window_end();
    assert_eq!(c.incr("k", end).await.expect("incr"), 1);
    assert_eq!(c.incr("k", end).await.expect("incr"), 2);
    c.refund("k").await.expect("refund");
    assert_eq!(
        c.incr("k", end).await.expect("incr"),
        2,
        "the refunded call is not counted"
    );
    for _ in 0..3 {
        c.refund("k").await.expect("refund");
    }
    assert_eq!(
        c.incr("k", end).await.expect("incr"),
        1,
        "refunds stop at zero"
    );
}

async fn a_refund_of_a_key_never_counted_creates_nothing(c: Arc<dyn Counters>) {
    let end = window_end();
    c.refund("never").await.expect("refund");
    c.refund("never").await.expect("refund");
    assert_eq!(c.incr("never", end).await.expect("incr"), 1);
}

async fn concurrent_increments_are_each_counted_once(c: Arc<dyn Counters>) {
    let end = window_end();
    let tasks: Vec<_> = (0..20)
        .map(|_| {
            let c = c.clone();
            tokio::spawn(async move { c.incr("hot", end).await })
        })
        .collect();
    let mut counts = Vec::new();
    for t in tasks {
        counts.push(t.await.expect("task").expect("incr"));
    }
    counts.sort();
    assert_eq!(
        counts,
        (1..=20).collect::<Vec<u64>>(),
        "each call sees its own count"
    );
    assert_eq!(c.incr("hot", end).await.expect("incr"), 21);
}

async fn a_counter_is_kept_through_its_window_and_grace_while_later_windows_start(
    c: Arc<dyn Counters>,
) {
    let end = window_end();
    assert_eq!(c.incr("w0", end).await.expect("incr"), 1);
    assert_eq!(c.incr("w0", end).await.expect("incr"), 2);
    // Later windows, the last starting as the first one's grace ends.
    for (i, later) in [end + 60, end + COUNTER_GRACE_SECS].into_iter().enumerate() {
        assert_eq!(
            c.incr(&format!("w{}", i + 1), later).await.expect("incr"),
            1
        );
    }
    assert_eq!(c.incr("w0", end).await.expect("incr"), 3, "still counted");
}

async fn a_counter_whose_window_and_grace_ended_is_dropped_when_a_later_window_starts(
    c: Arc<dyn Counters>,
) {
    let end = window_end();
    assert_eq!(c.incr("old", end).await.expect("incr"), 1);
    assert_eq!(c.incr("old", end).await.expect("incr"), 2);
    assert_eq!(
        c.incr("new", end + COUNTER_GRACE_SECS + 1)
            .await
            .expect("incr"),
        1
    );
    assert_eq!(
        c.incr("old", end).await.expect("incr"),
        1,
        "counted from nothing again"
    );
}

async fn two_instances_of_one_store_share_a_count(subject: Subject) {
    let end = window_end();
    let one = subject.stores().counters.clone();
    let other = subject.again().await.counters;
    assert_eq!(one.incr("shared", end).await.expect("incr"), 1);
    assert_eq!(other.incr("shared", end).await.expect("incr"), 2);
    other.refund("shared").await.expect("refund");
    assert_eq!(one.incr("shared", end).await.expect("incr"), 2);
}
