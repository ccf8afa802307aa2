//! The netdiag Lambda function.

#[tokio::main]
async fn main() -> Result<(), netops_shared::lambda::Error> {
    netops_shared::lambda::run(netops_netdiag::routes()).await
}
