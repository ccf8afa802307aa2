//! The docs Lambda function: `/openapi.json` and `/docs`.

#[tokio::main]
async fn main() -> Result<(), netops_shared::lambda::Error> {
    netops_shared::lambda::run(netops_docs::routes()).await
}
