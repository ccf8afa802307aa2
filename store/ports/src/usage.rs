//! What one request cost its store, counted where the store is called and read where the
//! request's metrics line is written ([`crate::metrics`]). It names no other module, so the
//! store adapters can count without depending on the HTTP layer.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

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
    static TRACE: Arc<Mutex<Vec<TracedCall>>>;
}

/// One call to a store service made by a traced request: what an X-Ray subsegment says of it
/// (the Lambda entry sends them, `lambda/src/xray.rs`).
#[derive(Debug, Clone, PartialEq)]
pub struct TracedCall {
    /// The service (`DynamoDB`).
    pub service: String,
    /// The operation (`Query`).
    pub operation: String,
    /// Seconds since the epoch, when the attempt was sent and when its answer (or failure) came.
    pub start: f64,
    pub end: f64,
    /// The HTTP status of the answer; none when no answer came (a timeout, a lost connection).
    pub status: Option<u16>,
    /// The service's request id.
    pub request_id: Option<String>,
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

    /// `work`, counted (and traced) for the request in scope here wherever it runs (a spawned
    /// task leaves the scope of the task that spawns it).
    pub fn carried<T>(work: impl Future<Output = T>) -> impl Future<Output = T> {
        let usage = USAGE.try_with(Arc::clone).ok();
        let trace = TRACE.try_with(Arc::clone).ok();
        async move {
            let work = async move {
                match trace {
                    Some(trace) => TRACE.scope(trace, work).await,
                    None => work.await,
                }
            };
            match usage {
                Some(usage) => USAGE.scope(usage, work).await,
                None => work.await,
            }
        }
    }

    /// Whether the request in scope is traced: a store records its calls only then.
    pub fn traced() -> bool {
        TRACE.try_with(|_| ()).is_ok()
    }

    /// A call of the traced request in scope.
    pub fn add_traced(call: TracedCall) {
        let _ = TRACE.try_with(|t| t.lock().unwrap_or_else(|e| e.into_inner()).push(call));
    }

    /// Runs `work` traced, and returns the store calls it made.
    pub async fn tracing<T>(work: impl Future<Output = T>) -> (T, Vec<TracedCall>) {
        let trace = Arc::new(Mutex::new(Vec::new()));
        let out = TRACE.scope(trace.clone(), work).await;
        let calls = std::mem::take(&mut *trace.lock().unwrap_or_else(|e| e.into_inner()));
        (out, calls)
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

    #[tokio::test]
    async fn a_traced_request_keeps_its_calls_even_in_the_tasks_it_spawns() {
        fn call(operation: &str) -> TracedCall {
            TracedCall {
                service: "DynamoDB".into(),
                operation: operation.into(),
                start: 1.0,
                end: 2.0,
                status: Some(200),
                request_id: None,
            }
        }
        assert!(!Usage::traced());
        Usage::add_traced(call("Lost"));
        let (traced, calls) = Usage::tracing(async {
            Usage::add_traced(call("GetItem"));
            tokio::spawn(Usage::carried(async { Usage::add_traced(call("Query")) }))
                .await
                .expect("task");
            Usage::traced()
        })
        .await;
        assert!(traced);
        assert_eq!(
            calls
                .iter()
                .map(|c| c.operation.as_str())
                .collect::<Vec<_>>(),
            ["GetItem", "Query"]
        );
    }
}
