//! The scheduled pass's Lambda function (docs/collect.md#the-scheduled-pass): no route, an
//! EventBridge schedule invokes it every minute.

#[tokio::main]
async fn main() -> Result<(), netops_lambda::Error> {
    netops_lambda::run_pass(&[netops_netdiag::EXPIRY, netops_fleet::OFFLINE]).await
}
