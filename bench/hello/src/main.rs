//! The cold-start baseline of `bench/cold_start.py`: a `lambda_http` function that answers
//! every request with a fixed JSON body, built with the profile and dependencies of the real
//! functions, so the difference is what a function does before its first answer.

use lambda_http::{Body, Error, Request, Response, run, service_fn};

#[tokio::main]
async fn main() -> Result<(), Error> {
    run(service_fn(|_: Request| async {
        Response::builder()
            .status(200)
            .header("content-type", "application/json")
            .body(Body::from(r#"{"data":"hello"}"#))
            .map_err(Error::from)
    }))
    .await
}
