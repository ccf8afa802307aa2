//! The security Lambda function.

#[tokio::main]
async fn main() -> Result<(), netops_shared::lambda::Error> {
    netops_shared::lambda::run(netops_security::routes()).await
}
