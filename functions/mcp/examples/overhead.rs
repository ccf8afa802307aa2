//! tools/call overhead over the same REST call, in process (no sockets): the whole API as
//! the local process mounts it, over a seeded store; REST and MCP requests interleaved so
//! that load on the machine hits both alike. Not a test: run it by hand (bench/mcp.sh).
//!
//! cargo run --release -p netops-mcp --example overhead -- DB [ITERATIONS]

use std::time::{Duration, Instant};

use axum::body::Body;
use http::{Method, Request};
use netops_shared::config::Config;
use netops_shared::store::Stores;
use netops_shared::{AppState, Scope};
use tower::ServiceExt;

fn percentile(v: &mut [Duration], p: f64) -> Duration {
    v.sort();
    v[((v.len() as f64 - 1.0) * p) as usize]
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let db = args.next().ok_or("usage: overhead DB [ITERATIONS]")?;
    let n: usize = args
        .next()
        .map(|s| s.parse())
        .transpose()?
        .unwrap_or(20_000);
    let stores = Stores::of(netops_store_sqlite::SqliteStore::open(&db)?);
    let config = Config {
        rate_limit: u64::MAX / 2,
        ..Config::default()
    };
    let state = AppState::new(&stores, config).await?;
    let (secret, _) = netops_shared::auth::create_token(
        stores.tokens.as_ref(),
        "acme",
        &format!("bench-mcp-{}", std::process::id()),
        Scope::ALL.to_vec(),
        chrono_days(),
    )
    .await?;
    let (router, _) = netops_api::router()
        .merge(netops_mcp::routes())
        .split_for_parts();
    let app = netops_shared::http::app(router, state);
    let auth = format!("Bearer {secret}");

    let send = |req: Request<Body>| {
        let app = app.clone();
        async move {
            let started = Instant::now();
            let res = app.oneshot(req).await.map_err(|e| match e {})?;
            let status = res.status();
            let bytes = axum::body::to_bytes(res.into_body(), usize::MAX).await?;
            Ok::<_, axum::Error>((started.elapsed(), status, bytes.len()))
        }
    };
    let rest = |uri: &str| {
        Request::builder()
            .method(Method::GET)
            .uri(format!("/api/v1{uri}"))
            .header("authorization", &auth)
            .body(Body::empty())
    };
    let mcp = |name: &str, args: &str| {
        Request::builder()
            .method(Method::POST)
            .uri("/api/v1/mcp")
            .header("authorization", &auth)
            .header("content-type", "application/json")
            .body(Body::from(format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"{name}","arguments":{args}}}}}"#
            )))
    };
    let host = {
        let res = app
            .clone()
            .oneshot(rest("/machines?limit=1")?)
            .await
            .map_err(|e| match e {})?;
        let bytes = axum::body::to_bytes(res.into_body(), usize::MAX).await?;
        let v: serde_json::Value = serde_json::from_slice(&bytes)?;
        v["data"][0]["hostname"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    };
    let cases = [
        (
            "get_machine",
            format!("/machines/{host}"),
            format!(r#"{{"hostname":"{host}"}}"#),
        ),
        (
            "list_machines limit=100",
            "/machines?limit=100".to_owned(),
            r#"{"limit":100}"#.to_owned(),
        ),
    ];
    println!("in-process, {n} interleaved pairs per case, db {db}");
    for (label, uri, args) in cases {
        let tool = label.split(' ').next().unwrap_or(label);
        let (mut a, mut b, mut d) = (
            Vec::with_capacity(n),
            Vec::with_capacity(n),
            Vec::with_capacity(n),
        );
        let (mut rest_bytes, mut mcp_bytes) = (0, 0);
        for i in 0..n + n / 10 {
            let (ra, sa, la) = send(rest(&uri)?).await?;
            let (rb, sb, lb) = send(mcp(tool, &args)?).await?;
            assert!(sa.is_success() && sb.is_success());
            if i >= n / 10 {
                a.push(ra);
                b.push(rb);
                d.push(rb.as_nanos() as i64 - ra.as_nanos() as i64);
                (rest_bytes, mcp_bytes) = (la, lb);
            }
        }
        let (ra50, rb50) = (percentile(&mut a, 0.5), percentile(&mut b, 0.5));
        let (ra10, rb10) = (percentile(&mut a, 0.1), percentile(&mut b, 0.1));
        let (ra99, rb99) = (percentile(&mut a, 0.99), percentile(&mut b, 0.99));
        println!(
            "{label:24} REST p10/p50/p99 {:>5}/{:>5}/{:>6} us ({rest_bytes} B) | MCP {:>5}/{:>5}/{:>6} us ({mcp_bytes} B) | overhead p50 {} us, p10 {} us, paired median {} us",
            ra10.as_micros(),
            ra50.as_micros(),
            ra99.as_micros(),
            rb10.as_micros(),
            rb50.as_micros(),
            rb99.as_micros(),
            rb50.as_micros() as i64 - ra50.as_micros() as i64,
            rb10.as_micros() as i64 - ra10.as_micros() as i64,
            {
                d.sort();
                d[d.len() / 2] / 1000
            },
        );
    }
    Ok(())
}

fn chrono_days() -> chrono::Duration {
    chrono::Duration::days(1)
}
