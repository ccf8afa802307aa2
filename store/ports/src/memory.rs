//! Rate-limit counters in this process's memory, for the one local process: it serves every
//! route itself, so no other process needs its counts, and a call costs a map update instead
//! of a write transaction. Functions run apart (Lambda, `infra/watch.sh`) count in the store.

use std::collections::HashMap;
use std::sync::Mutex;

use async_trait::async_trait;

use super::{COUNTER_GRACE_SECS, Counters, StoreError, StoreResult};

#[derive(Default)]
pub struct ProcessCounters {
    /// Key -> (count, expiry in seconds).
    counts: Mutex<HashMap<String, (u64, i64)>>,
}

#[async_trait]
impl Counters for ProcessCounters {
    async fn incr(&self, key: &str, expires_at: i64) -> StoreResult<u64> {
        let mut counts = self
            .counts
            .lock()
            .map_err(|_| StoreError::Backend("rate-limit counters poisoned".into()))?;
        if let Some((count, _)) = counts.get_mut(key) {
            *count += 1;
            return Ok(*count);
        }
        // A new window: drop the counters whose windows have ended, as the stores do.
        counts.retain(|_, (_, expiry)| *expiry >= expires_at - COUNTER_GRACE_SECS);
        counts.insert(key.to_owned(), (1, expires_at));
        Ok(1)
    }

    async fn refund(&self, key: &str) -> StoreResult<()> {
        let mut counts = self
            .counts
            .lock()
            .map_err(|_| StoreError::Backend("rate-limit counters poisoned".into()))?;
        if let Some((count, _)) = counts.get_mut(key) {
            *count = count.saturating_sub(1);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn counts_per_key_and_drops_ended_windows() {
        let c = ProcessCounters::default();
        assert_eq!(c.incr("a:0", 60).await.expect("incr"), 1);
        assert_eq!(c.incr("a:0", 60).await.expect("incr"), 2);
        assert_eq!(c.incr("b:0", 60).await.expect("incr"), 1);
        // A window starting more than an hour after the first one's end sweeps it.
        assert_eq!(c.incr("a:7200", 7260).await.expect("incr"), 1);
        let counts = c.counts.lock().expect("lock");
        assert_eq!(counts.len(), 1);
        assert!(counts.contains_key("a:7200"));
    }

    #[tokio::test]
    async fn a_refund_takes_one_call_back_and_never_goes_below_zero() {
        let c = ProcessCounters::default();
        assert_eq!(c.incr("a:0", 60).await.expect("incr"), 1);
        assert_eq!(c.incr("a:0", 60).await.expect("incr"), 2);
        c.refund("a:0").await.expect("refund");
        assert_eq!(c.incr("a:0", 60).await.expect("incr"), 2);
        for _ in 0..3 {
            c.refund("a:0").await.expect("refund");
        }
        c.refund("unknown").await.expect("refund");
        assert_eq!(c.incr("a:0", 60).await.expect("incr"), 1);
        assert!(!c.counts.lock().expect("lock").contains_key("unknown"));
    }
}
