//! The throughput baseline of bench/throughput.sh: a bare axum server (`axum::serve`, no gate,
//! no store, no layer) answering every request with the bytes of one file, as JSON.
//!
//! `cargo run --release -p netops --example bare -- ADDR FILE`

use axum::Router;
use axum::body::Bytes;
use axum::routing::get;

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let (Some(addr), Some(file)) = (args.next(), args.next()) else {
        eprintln!("usage: bare ADDR FILE");
        std::process::exit(2);
    };
    let body = Bytes::from(std::fs::read(file)?);
    let app = Router::new().fallback(get(move || {
        let body = body.clone();
        async move { ([(http::header::CONTENT_TYPE, "application/json")], body) }
    }));
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    println!("listening on {}", listener.local_addr()?);
    axum::serve(listener, app).await
}
