//! What one request cost its store, counted where the store is called and read where the
//! request's metrics line is written ([`crate::metrics`]). It names no other module, so the
//! store adapters can count without depending on the HTTP layer.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// What one request cost its store so far: the DynamoDB adapter adds to the usage of the
/// request it runs for ([`Usage::add_call`], [`Usage::add_units`]), which [`crate::metrics::emit`] puts in
/// scope around each request.
#[derive(Debug, Default)]
pub struct Usage {
    calls: AtomicU64,
    /// Capacity units in thousandths (DynamoDB reports halves and, for transactions, more).
    read_milli: AtomicU64,
    write_milli: AtomicU64,
}

tokio::task_local! {
    static USAGE: Arc<Usage>;
}

impl Usage {
    /// One request sent to DynamoDB by the request in scope (none: a background task).
    pub fn add_call() {
        let _ = USAGE.try_with(|u| u.calls.fetch_add(1, Ordering::Relaxed));
    }

    /// Capacity units consumed for the request in scope.
    pub fn add_units(read: f64, write: f64) {
        let milli = |units: f64| (units.max(0.0) * 1000.0).round() as u64;
        let _ = USAGE.try_with(|u| {
            u.read_milli.fetch_add(milli(read), Ordering::Relaxed);
            u.write_milli.fetch_add(milli(write), Ordering::Relaxed);
        });
    }

    /// `work`, counted for the request in scope here wherever it runs (a spawned task
    /// leaves the scope of the task that spawns it).
    pub fn carried<T>(work: impl Future<Output = T>) -> impl Future<Output = T> {
        let usage = USAGE.try_with(Arc::clone).ok();
        async move {
            match usage {
                Some(usage) => USAGE.scope(usage, work).await,
                None => work.await,
            }
        }
    }

    /// Runs `work` with a usage of its own, and returns both.
    pub async fn measure<T>(work: impl Future<Output = T>) -> (T, Counted) {
        let usage = Arc::new(Usage::default());
        let out = USAGE.scope(usage.clone(), work).await;
        let counted = Counted {
            calls: usage.calls.load(Ordering::Relaxed),
            read_units: usage.read_milli.load(Ordering::Relaxed) as f64 / 1000.0,
            write_units: usage.write_milli.load(Ordering::Relaxed) as f64 / 1000.0,
        };
        (out, counted)
    }
}

/// A request's [`Usage`] once it is answered.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Counted {
    pub calls: u64,
    pub read_units: f64,
    pub write_units: f64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn usage_is_counted_for_the_request_in_scope_only() {
        let ((), counted) = Usage::measure(async {
            Usage::add_call();
            Usage::add_units(0.5, 0.0);
            Usage::add_call();
            Usage::add_units(0.0, 2.0);
        })
        .await;
        assert_eq!(
            counted,
            Counted {
                calls: 2,
                read_units: 0.5,
                write_units: 2.0
            }
        );
        // Outside a request (a background task) nothing is counted, and nothing fails.
        Usage::add_call();
        let ((), none) = Usage::measure(async {}).await;
        assert_eq!(none, Counted::default());
    }
}
