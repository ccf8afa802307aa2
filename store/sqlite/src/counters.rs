//! Rate-limit counters in the embedded store: the `counters` table, swept as windows end.

use async_trait::async_trait;
use rusqlite::params;

use super::SqliteStore;
use super::conn::backend;
use netops_store::{COUNTER_GRACE_SECS, Counters, StoreResult};

#[async_trait]
impl Counters for SqliteStore {
    async fn incr(&self, key: &str, expires_at: i64) -> StoreResult<u64> {
        let key = key.to_owned();
        self.with_write(move |c| {
            let value: i64 = c
                .prepare_cached(
                    "INSERT INTO counters (key, value, expires_at) VALUES (?1, 1, ?2)
                     ON CONFLICT (key) DO UPDATE SET value = value + 1 RETURNING value",
                )
                .and_then(|mut s| s.query_row(params![key, expires_at], |r| r.get(0)))
                .map_err(backend)?;
            if value == 1 {
                // A new window: drop the counters whose windows have ended.
                c.execute(
                    "DELETE FROM counters WHERE expires_at < ?1",
                    [expires_at - COUNTER_GRACE_SECS],
                )
                .map_err(backend)?;
            }
            Ok(value as u64)
        })
        .await
    }

    async fn refund(&self, key: &str) -> StoreResult<()> {
        let key = key.to_owned();
        self.with_write(move |c| {
            c.prepare_cached("UPDATE counters SET value = value - 1 WHERE key = ?1 AND value > 0")
                .and_then(|mut s| s.execute([key]))
                .map_err(backend)?;
            Ok(())
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use crate::testing::store;
    use netops_store::Counters;

    #[tokio::test]
    async fn counters_count_per_key() {
        let (_d, s) = store();
        assert_eq!(s.incr("k", 100).await.expect("incr"), 1);
        assert_eq!(s.incr("k", 100).await.expect("incr"), 2);
        assert_eq!(s.incr("other", 100).await.expect("incr"), 1);
    }

    #[tokio::test]
    async fn a_refund_takes_one_call_back_and_never_goes_below_zero() {
        let (_d, s) = store();
        assert_eq!(s.incr("k", 100).await.expect("incr"), 1);
        assert_eq!(s.incr("k", 100).await.expect("incr"), 2);
        s.refund("k").await.expect("refund");
        assert_eq!(s.incr("k", 100).await.expect("incr"), 2);
        for _ in 0..3 {
            s.refund("k").await.expect("refund");
        }
        s.refund("unknown").await.expect("refund");
        assert_eq!(s.incr("k", 100).await.expect("incr"), 1);
    }
}
