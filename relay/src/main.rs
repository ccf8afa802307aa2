//! `netops-relay --config FILE`: the site relay (docs/relay.md).

use std::path::PathBuf;

use clap::Parser;

#[derive(Parser)]
#[command(
    name = "netops-relay",
    version,
    about = "Relays a site's syslog, NetFlow and IPFIX to the collection API"
)]
struct Args {
    /// The TOML configuration (docs/relay.md).
    #[arg(long, env = "NETOPS_RELAY_CONFIG")]
    config: PathBuf,
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let args = Args::parse();
    let result = match netops_relay::config::Config::load(&args.config) {
        Ok(config) => netops_relay::run(config).await,
        Err(e) => Err(e),
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("netops-relay: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
