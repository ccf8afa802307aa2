//! The deployment port: what belongs to the deployment itself rather than to a tenant.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use async_trait::async_trait;

use crate::{StoreError, StoreResult};

/// Settings and upkeep of the deployment.
#[async_trait]
pub trait Deployment: Send + Sync + 'static {
    /// A random secret of 32 bytes created on first use and kept (cursor signing).
    async fn secret(&self, name: &str) -> StoreResult<Vec<u8>>;
    /// True when the store holds no tenant data yet.
    async fn is_empty(&self) -> StoreResult<bool>;
    /// Every tenant that holds a token (revoked and expired ones included), in name order:
    /// the tenants the scheduled pass goes over. An administrative read (a scan of the
    /// tokens on DynamoDB), made once a pass, never on a request.
    async fn tenants(&self) -> StoreResult<Vec<String>>;
    /// Removes a tenant's data (documents, series, rollups); tokens and the write log stay.
    async fn clear_tenant(&self, tenant: &str) -> StoreResult<()>;
    /// The items a tenant holds, where the store can count them without reading them all
    /// (SQLite: row counts over the tenant's index ranges); `None` where it cannot
    /// (DynamoDB: only a Scan of the whole table would tell).
    async fn tenant_items(&self, tenant: &str) -> StoreResult<Option<u64>>;
    /// Removes every item of a tenant: documents, series, rollups, idempotency keys,
    /// ingestion log, write log, then its tokens last (a tenant is listed while it holds a
    /// token, so one whose removal was interrupted stays listed until it is run again).
    /// Deletes are idempotent: a run after an interruption finds what is left and goes on.
    /// Paced by `pace` (items per second), which also logs progress and may stop the run
    /// early ([`Pace::stopped`]).
    async fn delete_tenant(&self, tenant: &str, pace: &Pace) -> StoreResult<()>;
    /// One page of a tenant's export: its items among at most `limit` read, as the store holds them,
    /// from `from` (`None`: the start; else the `next` of the page before), the items
    /// `delete_tenant` removes in the same order of kinds (its tokens last). An administrative
    /// read, paced by the caller.
    async fn export_page(
        &self,
        tenant: &str,
        from: Option<&str>,
        limit: usize,
    ) -> StoreResult<ExportPage>;
}

/// A page of a tenant's export ([`Deployment::export_page`]).
#[derive(Debug, Default)]
pub struct ExportPage {
    /// The items: the table each comes from, and the item as a JSON object.
    pub items: Vec<(&'static str, serde_json::Value)>,
    /// Where the next page starts (opaque); `None` once every item has been read.
    pub next: Option<String>,
    /// The items the store read for the page, the tenant's and others' (a DynamoDB Scan
    /// reads every tenant's): what the caller paces.
    pub read: usize,
}

impl ExportPage {
    /// An adapter's position read back from `from` (`start` when none): its own JSON.
    pub fn position<P: serde::de::DeserializeOwned>(
        from: Option<&str>,
        start: P,
    ) -> StoreResult<P> {
        match from {
            None => Ok(start),
            Some(p) => serde_json::from_str(p)
                .map_err(|_| StoreError::Data("export position: not one of this store".into())),
        }
    }

    /// A page of `items`, found among `read` items, whose next page starts at `next` (none:
    /// the export is over).
    pub fn of<P: serde::Serialize>(
        items: Vec<(&'static str, serde_json::Value)>,
        read: usize,
        next: Option<P>,
    ) -> ExportPage {
        ExportPage {
            read: read.max(items.len()),
            items,
            next: next.map(|p| serde_json::to_string(&p).unwrap_or_default()),
        }
    }
}

/// Where a [`Pace`] reports progress: what is being removed, and the items removed so far.
type Report = Box<dyn Fn(&str, u64) + Send + Sync>;

/// The pace of a long administrative removal or export: at most `per_sec` items a second on
/// average, the items a store examines to find them included ([`Pace::examined`]), at most
/// `max_items` removed in one run (then the run stops, to be run again), and a progress line
/// through `report` every [`Pace::REPORT_EVERY`] items.
pub struct Pace {
    per_sec: u32,
    max_items: Option<u64>,
    report: Report,
    state: Mutex<PaceState>,
}

struct PaceState {
    started: Instant,
    done: u64,
    /// Items read only to find those to remove (other tenants' items a Scan reads).
    examined: u64,
    reported: u64,
}

impl Pace {
    /// The items between two progress lines.
    pub const REPORT_EVERY: u64 = 1_000;

    /// A pace of `per_sec` items a second (at least 1), `max_items` at most this run,
    /// `report(what, items done so far)` for progress.
    pub fn new(
        per_sec: u32,
        max_items: Option<u64>,
        report: impl Fn(&str, u64) + Send + Sync + 'static,
    ) -> Self {
        Pace {
            per_sec: per_sec.max(1),
            max_items,
            report: Box::new(report),
            state: Mutex::new(PaceState {
                started: Instant::now(),
                done: 0,
                examined: 0,
                reported: 0,
            }),
        }
    }

    /// Unpaced and silent (tests, seeding).
    pub fn unbounded() -> Self {
        Pace::new(u32::MAX, None, |_, _| {})
    }

    /// How many of `wanted` items the run may still remove (0 once stopped).
    pub fn allowance(&self, wanted: usize) -> usize {
        let done = self.done();
        match self.max_items {
            Some(max) => {
                wanted.min(usize::try_from(max.saturating_sub(done)).unwrap_or(usize::MAX))
            }
            None => wanted,
        }
    }

    /// True once the run has removed `max_items`.
    pub fn stopped(&self) -> bool {
        self.max_items.is_some_and(|max| self.done() >= max)
    }

    /// The items removed so far in this run.
    pub fn done(&self) -> u64 {
        self.state.lock().map(|s| s.done).unwrap_or(0)
    }

    /// Counts `n` items of `what` removed, reports progress, then waits as long as the
    /// average rate is above `per_sec`.
    pub async fn removed(&self, what: &str, n: usize) {
        self.count(n as u64, 0, what).await;
    }

    /// Counts `n` items read to find the ones to remove (on DynamoDB, the items of every
    /// tenant a Scan page reads), which the rate holds too, then waits as [`Pace::removed`].
    pub async fn examined(&self, n: usize) {
        self.count(0, n as u64, "").await;
    }

    async fn count(&self, removed: u64, examined: u64, what: &str) {
        let wait = {
            let Ok(mut s) = self.state.lock() else {
                return;
            };
            s.done += removed;
            s.examined += examined;
            if s.done >= s.reported + Self::REPORT_EVERY {
                s.reported = s.done;
                (self.report)(what, s.done);
            }
            let items = (s.done + s.examined) as f64;
            let due = Duration::from_secs_f64(items / f64::from(self.per_sec));
            due.saturating_sub(s.started.elapsed())
        };
        if !wait.is_zero() {
            tokio::time::sleep(wait).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU64, Ordering};

    use super::*;

    #[tokio::test]
    async fn a_pace_holds_the_average_rate_and_reports_every_thousand() {
        let last = Arc::new(AtomicU64::new(0));
        let seen = last.clone();
        let pace = Pace::new(100, None, move |_, n| seen.store(n, Ordering::Relaxed));
        let started = Instant::now();
        pace.removed("docs", 50).await;
        assert!(
            started.elapsed() >= Duration::from_millis(450),
            "50 items at 100/s"
        );
        assert_eq!(
            last.load(Ordering::Relaxed),
            0,
            "no report before a thousand"
        );
        let fast = Pace::new(u32::MAX, None, {
            let seen = last.clone();
            move |_, n| seen.store(n, Ordering::Relaxed)
        });
        fast.removed("docs", 999).await;
        fast.removed("docs", 2).await;
        assert_eq!(last.load(Ordering::Relaxed), 1_001);
    }

    #[tokio::test]
    async fn items_examined_are_paced_without_counting_as_removed() {
        let pace = Pace::new(100, Some(10), |_, _| {});
        let started = Instant::now();
        pace.examined(40).await;
        pace.removed("docs", 10).await;
        assert!(
            started.elapsed() >= Duration::from_millis(450),
            "40 read and 10 removed at 100/s"
        );
        assert_eq!(pace.done(), 10);
        assert!(pace.stopped());
    }

    #[test]
    fn a_pace_with_a_bound_allows_up_to_it_then_stops() {
        let pace = Pace::new(10, Some(5), |_, _| {});
        assert_eq!(pace.allowance(100), 5);
        assert!(!pace.stopped());
        let unbounded = Pace::unbounded();
        assert_eq!(unbounded.allowance(100), 100);
        assert!(!unbounded.stopped());
    }
}
