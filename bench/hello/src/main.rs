//! The cold-start baseline of `bench/cold_start.py`: a `lambda_http` function that makes the
//! one store read every function's first answer makes, its caller's token (one DynamoDB
//! GetItem, through the DynamoDB adapter built at init from the same configuration and SDK
//! settings as the functions'), then answers a fixed JSON body. Built with the profile and
//! dependencies of the real functions, so the difference is what a function does besides.

use lambda_http::{Body, Error, Request, Response, run, service_fn};
use netops_shared::auth::hash_token;
use netops_shared::config::Config;
use netops_shared::store::Tokens;
use netops_store_dynamodb::DynamoStore;

#[tokio::main]
async fn main() -> Result<(), Error> {
    let config = Config::from_env()?;
    let store = DynamoStore::connect(&config.dynamodb, config.retention_days()).await?;
    run(service_fn(move |req: Request| {
        let store = store.clone();
        async move {
            let token = req
                .headers()
                .get("authorization")
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.strip_prefix("Bearer "))
                .unwrap_or_default();
            let known = store.by_hash(&hash_token(token)).await?.is_some();
            let (status, body) = if known {
                (200, r#"{"data":"hello"}"#)
            } else {
                (401, r#"{"error":"unknown token"}"#)
            };
            Response::builder()
                .status(status)
                .header("content-type", "application/json")
                .body(Body::from(body))
                .map_err(Error::from)
        }
    }))
    .await
}
