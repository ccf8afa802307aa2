//! The rate-limit counters port.

use async_trait::async_trait;

use crate::StoreResult;

/// How long a rate-limit counter is kept after its window ends, seconds.
pub const COUNTER_GRACE_SECS: i64 = 3600;

/// Rate-limit counters. Every store keeps them, so that all functions and instances share one
/// count; the one local process counts in its own memory instead
/// ([`crate::memory::ProcessCounters`]).
#[async_trait]
pub trait Counters: Send + Sync + 'static {
    /// Adds one to `key` and returns the new value; the counter is dropped after `expires_at` (s)
    /// plus [`COUNTER_GRACE_SECS`].
    async fn incr(&self, key: &str, expires_at: i64) -> StoreResult<u64>;

    /// Takes back one call that [`Counters::incr`] counted under `key` (a conditional GET
    /// answered 304, which costs its caller nothing); a counter never goes below zero, and a
    /// key no longer there (its window swept) is left alone.
    async fn refund(&self, key: &str) -> StoreResult<()>;
}
