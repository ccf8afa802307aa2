//! The mcp Lambda function, accepting the OAuth access tokens of the configured issuer.

#[tokio::main]
async fn main() -> Result<(), netops_lambda::Error> {
    netops_lambda::run_accepting(netops_mcp::routes(), netops_mcp::oauth::verifier).await
}
