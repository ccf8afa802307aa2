//! The collect Lambda function.

#[tokio::main]
async fn main() -> Result<(), netops_lambda::Error> {
    netops_lambda::run_geolocating(netops_collect::routes()).await
}
