//! The agent Lambda function.

#[tokio::main]
async fn main() -> Result<(), netops_lambda::Error> {
    netops_lambda::run(netops_agent::routes()).await
}
