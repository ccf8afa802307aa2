//! The docs Lambda function: `/openapi.json` and `/docs`.

#[tokio::main]
async fn main() -> Result<(), netops_lambda::Error> {
    netops_lambda::run(netops_docs::routes()).await
}
