//! Cost of the gate per request: token lookup, rate-limit count, route and scope checks,
//! measured in process through the router on `GET /me` (whose handler does nothing else)
//! over the embedded store. Run: `cargo bench -p netops --bench gate`.

use std::time::{Duration, Instant};

use axum::body::Body;
use http::Request;
use netops_shared::AppState;
use netops_shared::config::Config;
use netops_shared::scope::Scope;
use tower::ServiceExt;

const WARMUP: usize = 2_000;
const CALLS: usize = 20_000;

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

#[tokio::main]
async fn main() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("bench.db");
    let stores = netops::open_store(&path).expect("store");
    let config = Config {
        db_path: path,
        rate_limit: u64::MAX,
        ..Config::default()
    };
    // Counted as `netops serve` counts: in the process's memory.
    let state = AppState::new(&stores, config)
        .await
        .expect("state")
        .counting_in_process();
    let (token, _) = netops_shared::auth::create_token(
        stores.tokens.as_ref(),
        "acme",
        "bench",
        Scope::ALL.to_vec(),
        chrono::Duration::days(1),
    )
    .await
    .expect("token");
    let app = netops::app(state);
    let call = |path: &'static str| {
        let app = app.clone();
        let auth = format!("Bearer {token}");
        async move {
            let req = Request::get(format!("/api/v1{path}"))
                .header("authorization", auth)
                .body(Body::empty())
                .expect("request");
            let started = Instant::now();
            let res = app.oneshot(req).await.expect("infallible");
            let elapsed = started.elapsed();
            assert!(res.status().is_success() || res.status().is_client_error());
            elapsed
        }
    };
    for (label, path) in [
        ("GET /me (gate + trivial handler)", "/me"),
        ("unknown path after the gate (404)", "/nowhere"),
    ] {
        for _ in 0..WARMUP {
            call(path).await;
        }
        let mut times = Vec::with_capacity(CALLS);
        let started = Instant::now();
        for _ in 0..CALLS {
            times.push(call(path).await);
        }
        let total = started.elapsed();
        times.sort();
        println!(
            "{label}: {CALLS} calls, mean {:.1} µs, p50 {:.1} µs, p99 {:.1} µs",
            total.as_secs_f64() * 1e6 / CALLS as f64,
            percentile(&times, 0.50).as_secs_f64() * 1e6,
            percentile(&times, 0.99).as_secs_f64() * 1e6,
        );
    }
}
