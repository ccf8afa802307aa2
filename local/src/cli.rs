//! The command line. Its interface is a contract that scripts rely on: keep it stable.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use chrono::{DateTime, Duration, Utc};
use clap::{Args, Parser, Subcommand};
use netops::server::{self, Limits};
use netops::{SeedSize, live, open_configured, seed_configured, seed_demo};
use netops_shared::AppState;
use netops_shared::config::{Config, StoreKind};
use netops_shared::scope::{Scope, parse_list};
use netops_shared::store::{StoreError, Stores};

#[derive(Parser)]
#[command(
    name = "netops",
    version,
    about = "Network Operations Public API v1, on one machine"
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Args, Clone)]
struct DbArg {
    /// SQLite file of the embedded store.
    #[arg(long, env = "NETOPS_DB", default_value = "netops.db")]
    db: PathBuf,
    /// Store to use: `embedded` (the SQLite file) or `dynamodb` (the tables named by
    /// NETOPS_DYNAMODB_TABLE_PREFIX, created when missing). Default: NETOPS_STORE, else embedded.
    #[arg(long, value_parser = ["embedded", "dynamodb"])]
    store: Option<String>,
}

impl DbArg {
    /// The configuration with the store these arguments name.
    fn config(&self, config: &Config) -> Config {
        let mut config = config.clone();
        if let Some(kind) = self.store.as_deref().and_then(StoreKind::parse) {
            config.store = kind;
        }
        config.db_path = self.db.clone();
        config
    }

    /// The stores these arguments name, with the configuration's settings.
    async fn open(&self, config: &Config) -> Result<Stores, Failure> {
        Ok(open_configured(&self.config(config)).await?)
    }
}

/// The API's base URL, as the commands that call it over HTTP take it.
#[derive(clap::Args, Debug)]
struct ApiUrl {
    /// The API's base URL.
    #[arg(
        long,
        env = "NETOPS_URL",
        default_value = "http://127.0.0.1:8080/api/v1"
    )]
    url: String,
}

/// The simulated agents `netops serve` runs for the demo tenants (docs/agent.md).
#[derive(Parser, Debug)]
struct AgentsArg {
    /// Run no simulated agent: the demo machines' actions then end by expiry.
    #[arg(long, env = "NETOPS_NO_AGENTS", value_parser = clap::builder::FalseyValueParser::new())]
    no_agents: bool,
    #[command(flatten)]
    delay: ActionDelay,
}

/// How long a simulated agent takes to run an action.
#[derive(clap::Args, Debug)]
struct ActionDelay {
    /// Seconds a simulated agent takes to run an action (at most 180); unset: a random 60
    /// to 180 s, the contract's delay. A demo or a test shortens it.
    #[arg(long, env = "NETOPS_AGENT_ACTION_DELAY_SECONDS", value_parser = clap::value_parser!(u32).range(0..=180))]
    action_delay_secs: Option<u32>,
}

#[derive(Subcommand)]
enum Command {
    /// Serve the whole API (the default).
    Serve {
        /// Address to listen on.
        #[arg(long, env = "NETOPS_ADDR", default_value = "127.0.0.1:8080")]
        addr: SocketAddr,
        #[command(flatten)]
        db: DbArg,
        /// Keep the demo data as it is: no catch-up of the time the server was stopped, no
        /// data produced while it runs (for tests that need fixed data).
        #[arg(long, env = "NETOPS_NO_LIVE", value_parser = clap::builder::FalseyValueParser::new())]
        no_live: bool,
        #[command(flatten)]
        agents: AgentsArg,
        #[command(flatten)]
        geo: GeoArg,
    },
    /// The geolocation of flows' addresses (docs/geolocation.md).
    Geo {
        #[command(subcommand)]
        command: GeoCommand,
    },
    /// Manage access tokens.
    Token {
        #[command(subcommand)]
        command: TokenCommand,
    },
    /// List tenants, or delete one with everything it holds.
    Tenant {
        #[command(subcommand)]
        command: TenantCommand,
    },
    /// Replace the demo tenants' data with generated data (bigger for benchmarks).
    Seed {
        #[command(flatten)]
        db: DbArg,
        /// Machines of tenant acme.
        #[arg(long, default_value_t = netops_demo::DEMO_MACHINES)]
        machines: usize,
        /// Days of history.
        #[arg(long, default_value_t = netops_demo::DEMO_DAYS)]
        days: u32,
        /// Generator seed: the same seed gives the same data.
        #[arg(long, default_value_t = 42)]
        seed: u64,
    },
    /// Send observations to the collection API (bulk import, cron jobs): the lines of FILE,
    /// or of standard input (`-` or none), in gzip batches within the API's limits; one JSON
    /// object per batch on stdout.
    Collect {
        /// The kind of the observations, as in `POST /collect/{kind}`.
        #[arg(long)]
        kind: String,
        #[command(flatten)]
        api: ApiUrl,
        /// A collect credential (`netops token create --scopes collect:<module>`).
        #[arg(long, env = "NETOPS_TOKEN", hide_env_values = true)]
        token: String,
        /// Raw lines (`text/plain`, syslog kinds) rather than NDJSON.
        #[arg(long)]
        text: bool,
        /// The file to send; `-` or none: standard input.
        file: Option<PathBuf>,
    },
    /// Run simulated agents of a tenant against a base URL (docs/agent.md#simulated-agents).
    Agent {
        #[command(flatten)]
        api: ApiUrl,
        /// The tenant's enrollment token (`netops token create --scopes agent:enroll`).
        #[arg(long, env = "NETOPS_TOKEN", hide_env_values = true)]
        token: String,
        /// How many agents, with machines named `<prefix>-0001` and on.
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1000))]
        count: u32,
        #[arg(long, default_value = "SIM")]
        prefix: String,
        /// The machines of the agents, by host name, instead of `--count` new ones
        /// (repeated).
        #[arg(long = "hostname")]
        hostnames: Vec<String>,
        #[command(flatten)]
        delay: ActionDelay,
    },
    /// Print a tenant's write log, one JSON object per line.
    Writes {
        #[arg(long, required_unless_present = "unauthenticated")]
        tenant: Option<String>,
        /// Print the write refusals without a known token instead (401 and 429, counted per
        /// client address and rate-limit window).
        #[arg(long, conflicts_with = "tenant")]
        unauthenticated: bool,
        #[command(flatten)]
        db: DbArg,
    },
}

#[derive(Args, Clone)]
struct GeoArg {
    /// Geolocation file (`netops geo refresh`). Default: ./netops-geo.bin when it exists,
    /// else the checked-in sample.
    #[arg(long = "geo", env = "NETOPS_GEO_FILE")]
    file: Option<PathBuf>,
}

#[derive(Subcommand)]
enum GeoCommand {
    /// Download the pinned geolocation tables with npm and compile them into FILE (and its
    /// notice into FILE.NOTICE).
    Refresh {
        #[arg(long, default_value = netops::geo::DEFAULT_FILE)]
        out: PathBuf,
        /// The newest published tables instead of the pinned ones.
        #[arg(long)]
        latest: bool,
    },
    /// Country and operator of addresses, one JSON object per address.
    Lookup {
        #[command(flatten)]
        geo: GeoArg,
        #[arg(required = true)]
        addresses: Vec<String>,
    },
    /// The file's size, ranges and notice (sources, licences, attribution).
    Info {
        #[command(flatten)]
        geo: GeoArg,
    },
}

#[derive(Subcommand)]
enum TokenCommand {
    /// Create a token and print it alone on stdout.
    Create {
        #[arg(long)]
        tenant: String,
        #[arg(long)]
        name: String,
        /// Comma-separated scopes, `all` (every scope of the public API) or `collect` (every
        /// collect scope: a collect credential, which sends observations and reads nothing).
        #[arg(long)]
        scopes: String,
        /// Lifetime such as 90s, 30m, 12h or 30d.
        #[arg(long, default_value = "90d")]
        expires_in: String,
        #[command(flatten)]
        db: DbArg,
    },
    /// Revoke a tenant's active token by name.
    Revoke {
        #[arg(long)]
        tenant: String,
        #[arg(long)]
        name: String,
        #[command(flatten)]
        db: DbArg,
    },
    /// List a tenant's tokens.
    List {
        #[arg(long)]
        tenant: String,
        #[command(flatten)]
        db: DbArg,
    },
    /// Give a token a new secret, same name and scopes, and print it alone on stdout; the
    /// old secret keeps working for the overlap, then is refused as expired.
    Rotate {
        #[arg(long)]
        tenant: String,
        #[arg(long)]
        name: String,
        /// How long the old secret keeps working, such as 90s, 30m, 12h or 30d.
        #[arg(long, default_value = "24h")]
        overlap: String,
        #[command(flatten)]
        db: DbArg,
    },
}

#[derive(Subcommand)]
enum TenantCommand {
    /// The tenants (those holding a token), with their tokens by state and, on the embedded
    /// store, the items they hold.
    List {
        #[command(flatten)]
        db: DbArg,
    },
    /// Export every item of a tenant as NDJSON (docs/cli.md#tenant-export), to FILE or to
    /// standard output; stopped, it goes on where it was when run again on the same FILE.
    Export {
        #[arg(long)]
        tenant: String,
        /// The file to write (created, or finished when a run stopped); `-` or none: stdout.
        #[arg(long)]
        output: Option<PathBuf>,
        /// Items read per second at most (on DynamoDB, every tenant's items the Scan reads,
        /// about half a read unit each).
        #[arg(long, default_value_t = DELETE_RATE)]
        rate: u32,
        /// Stop after reading this many items (run again on the same FILE to go on).
        #[arg(long)]
        max_items: Option<u64>,
        #[command(flatten)]
        db: DbArg,
    },
    /// Delete a tenant: its data, write log and tokens. Needs a complete export first
    /// (`--export FILE`, checked) or `--no-export`; asks for the tenant's name unless `--yes`;
    /// stopped, it goes on where it was when run again.
    Delete {
        #[arg(long)]
        tenant: String,
        /// A complete export of the tenant, by `netops tenant export --output FILE`.
        #[arg(long)]
        export: Option<PathBuf>,
        /// Delete without an export: the tenant's data is lost.
        #[arg(long, conflicts_with = "export")]
        no_export: bool,
        /// Do not ask for confirmation.
        #[arg(long)]
        yes: bool,
        /// Items deleted per second at most (on DynamoDB, about one write unit each).
        #[arg(long, default_value_t = DELETE_RATE)]
        rate: u32,
        /// Stop after this many items (run again to go on).
        #[arg(long)]
        max_items: Option<u64>,
        #[command(flatten)]
        db: DbArg,
    },
}

/// The default pace of `netops tenant delete`, in items a second: 200 write units a second
/// on DynamoDB, a small share of what an on-demand table serves at once (4,000 a second
/// before it adapts), so the other tenants' writes are not throttled.
const DELETE_RATE: u32 = 200;

/// A failure to report: message and exit code.
#[derive(Debug)]
struct Failure(String, u8);

impl From<StoreError> for Failure {
    fn from(e: StoreError) -> Self {
        Failure(format!("store error: {e}"), 1)
    }
}

fn usage(msg: impl Into<String>) -> Failure {
    Failure(msg.into(), 2)
}

/// Parses `90s`, `30m`, `12h`, `30d`.
pub fn parse_duration(s: &str) -> Option<Duration> {
    let s = s.trim();
    let (num, unit) = s.split_at(s.len().checked_sub(1)?);
    let n: i64 = num.parse().ok().filter(|n| *n > 0)?;
    match unit {
        "s" => Some(Duration::seconds(n)),
        "m" => Some(Duration::minutes(n)),
        "h" => Some(Duration::hours(n)),
        "d" => Some(Duration::days(n)),
        _ => None,
    }
}

fn check_tenant(tenant: &str) -> Result<(), Failure> {
    let ok = !tenant.is_empty()
        && tenant.len() <= 64
        && tenant
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_');
    if ok {
        Ok(())
    } else {
        Err(usage(format!(
            "invalid tenant id '{tenant}': use a-z, 0-9, '-' or '_'"
        )))
    }
}

pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("netops: cannot start the runtime: {e}");
            return ExitCode::from(1);
        }
    };
    match runtime.block_on(run(cli.command)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure(msg, code)) => {
            eprintln!("netops: {msg}");
            ExitCode::from(code)
        }
    }
}

async fn run(command: Option<Command>) -> Result<(), Failure> {
    let config = Config::from_env().map_err(|e| usage(e.to_string()))?;
    netops_shared::telemetry::init(config.json_logs);
    let command = match command {
        Some(command) => command,
        None => Command::Serve {
            addr: std::env::var("NETOPS_ADDR")
                .ok()
                .and_then(|a| a.parse().ok())
                .unwrap_or_else(|| SocketAddr::from(([127, 0, 0, 1], 8080))),
            db: DbArg {
                db: config.db_path.clone(),
                store: None,
            },
            no_live: no_live_from_env(),
            agents: AgentsArg::try_parse_from(["netops"]).map_err(|e| usage(e.to_string()))?,
            geo: GeoArg {
                file: config.geo_file.clone(),
            },
        },
    };
    match command {
        Command::Serve {
            addr,
            db,
            no_live,
            agents,
            geo,
        } => serve(addr, db, config, geo, !no_live, agents).await,
        Command::Geo { command } => geo(command),
        Command::Token { command } => token(command, &config).await,
        Command::Tenant { command } => tenant(command, &config).await,
        Command::Seed {
            db,
            machines,
            days,
            seed,
        } => {
            if machines == 0 || days == 0 {
                return Err(usage("--machines and --days must be at least 1"));
            }
            let started = std::time::Instant::now();
            seed_configured(
                &db.config(&config),
                SeedSize {
                    machines,
                    days,
                    seed,
                },
            )
            .await?;
            eprintln!(
                "netops: seeded acme ({machines} machines, {days} days) and globex in {:.1} s",
                started.elapsed().as_secs_f64()
            );
            Ok(())
        }
        Command::Collect {
            kind,
            api: ApiUrl { url },
            token,
            text,
            file,
        } => {
            let target = crate::send::Target {
                base: url,
                token,
                kind,
                text,
            };
            let sent = match file.filter(|f| f.as_os_str() != "-") {
                Some(path) => {
                    let file = std::fs::File::open(&path)
                        .map_err(|e| usage(format!("{}: {e}", path.display())))?;
                    crate::send::send(&target, std::io::BufReader::new(file)).await
                }
                None => crate::send::send(&target, std::io::stdin().lock()).await,
            }
            .map_err(|e| Failure(e, 1))?;
            eprintln!(
                "netops: {} batches sent ({} refused): {} lines accepted, {} refused",
                sent.batches, sent.refused_batches, sent.accepted, sent.refused
            );
            if sent.refused_batches > 0 {
                return Err(Failure("some batches held no valid line".into(), 1));
            }
            Ok(())
        }
        Command::Agent {
            api: ApiUrl { url },
            token,
            count,
            prefix,
            hostnames,
            delay: ActionDelay { action_delay_secs },
        } => {
            let hostnames = if hostnames.is_empty() {
                (1..=count).map(|i| format!("{prefix}-{i:04}")).collect()
            } else {
                hostnames
            };
            crate::agent::run(crate::agent::Options {
                base: url,
                enroll_token: token,
                machines: hostnames
                    .into_iter()
                    .map(crate::agent::Machine::named)
                    .collect(),
                action_delay_secs,
            })
            .await
            .map_err(|e| Failure(e, 1))
        }
        Command::Writes {
            tenant,
            unauthenticated: _,
            db,
        } => {
            // Without --tenant, clap has made sure --unauthenticated is given.
            let partition = match &tenant {
                Some(t) => {
                    check_tenant(t)?;
                    t.as_str()
                }
                None => netops_shared::store::UNAUTHENTICATED,
            };
            let stores = db.open(&config).await?;
            for entry in stores.writes.entries(partition).await? {
                println!("{}", serde_json::to_string(&entry).unwrap_or_default());
            }
            Ok(())
        }
    }
}

async fn token(command: TokenCommand, config: &Config) -> Result<(), Failure> {
    match command {
        TokenCommand::Create {
            tenant,
            name,
            scopes,
            expires_in,
            db,
        } => {
            check_tenant(&tenant)?;
            if name.trim().is_empty() {
                return Err(usage("--name must not be empty"));
            }
            let scopes = parse_list(&scopes).map_err(|e| {
                let known: Vec<&str> = Scope::ALL
                    .iter()
                    .chain(Scope::COLLECT)
                    .map(|s| s.as_str())
                    .collect();
                usage(format!(
                    "--scopes: {e}; known scopes: {}, all or collect",
                    known.join(", ")
                ))
            })?;
            let ttl = parse_duration(&expires_in).ok_or_else(|| {
                usage(format!(
                    "--expires-in: '{expires_in}' is not like 90s, 30m, 12h or 30d"
                ))
            })?;
            let stores = db.open(config).await?;
            match netops_shared::auth::create_token(
                stores.tokens.as_ref(),
                &tenant,
                &name,
                scopes,
                ttl,
            )
            .await
            {
                Ok((secret, _)) => {
                    println!("{secret}");
                    Ok(())
                }
                Err(StoreError::Exists) => Err(usage(format!(
                    "tenant '{tenant}' already has an active token named '{name}': revoke it first"
                ))),
                Err(e) => Err(e.into()),
            }
        }
        TokenCommand::Revoke { tenant, name, db } => {
            check_tenant(&tenant)?;
            let stores = db.open(config).await?;
            if stores
                .tokens
                .revoke(&tenant, &name, Utc::now().timestamp())
                .await?
            {
                eprintln!("netops: token '{name}' of tenant '{tenant}' revoked");
                Ok(())
            } else {
                Err(Failure(
                    format!("tenant '{tenant}' has no active token named '{name}'"),
                    1,
                ))
            }
        }
        TokenCommand::Rotate {
            tenant,
            name,
            overlap,
            db,
        } => {
            check_tenant(&tenant)?;
            let overlap = parse_duration(&overlap).ok_or_else(|| {
                usage(format!(
                    "--overlap: '{overlap}' is not like 90s, 30m, 12h or 30d"
                ))
            })?;
            let stores = db.open(config).await?;
            match netops_shared::auth::rotate_token(stores.tokens.as_ref(), &tenant, &name, overlap)
                .await?
            {
                Some((secret, _)) => {
                    println!("{secret}");
                    Ok(())
                }
                None => Err(Failure(
                    format!("tenant '{tenant}' has no active token named '{name}'"),
                    1,
                )),
            }
        }
        TokenCommand::List { tenant, db } => {
            check_tenant(&tenant)?;
            let stores = db.open(config).await?;
            let now = Utc::now().timestamp();
            println!("NAME\tSTATE\tEXPIRES\tSCOPES\tLAST_USED");
            for t in stores.tokens.list(&tenant).await? {
                let state = token_state(&t, now).as_str();
                let expires = chrono::DateTime::from_timestamp(t.expires_at, 0)
                    .map(|d| d.to_rfc3339())
                    .unwrap_or_default();
                let scopes: Vec<&str> = t.scopes.iter().map(|s| s.as_str()).collect();
                let used = t
                    .last_used_at
                    .and_then(|at| chrono::DateTime::from_timestamp(at, 0))
                    .map_or_else(|| "-".to_owned(), |d| d.to_rfc3339());
                println!(
                    "{}\t{state}\t{expires}\t{}\t{used}",
                    t.name,
                    scopes.join(",")
                );
            }
            Ok(())
        }
    }
}

async fn tenant(command: TenantCommand, config: &Config) -> Result<(), Failure> {
    match command {
        TenantCommand::List { db } => {
            let stores = db.open(config).await?;
            let now = Utc::now().timestamp();
            println!("TENANT\tACTIVE\tREVOKED\tEXPIRED\tITEMS");
            for tenant in stores.deployment.tenants().await? {
                let mut counts = [0usize; 3];
                for t in stores.tokens.list(&tenant).await? {
                    counts[token_state(&t, now) as usize] += 1;
                }
                let items = match stores.deployment.tenant_items(&tenant).await? {
                    Some(n) => n.to_string(),
                    None => "-".to_owned(),
                };
                let [active, revoked, expired] = counts;
                println!("{tenant}\t{active}\t{revoked}\t{expired}\t{items}");
            }
            Ok(())
        }
        TenantCommand::Export {
            tenant,
            output,
            rate,
            max_items,
            db,
        } => {
            check_tenant(&tenant)?;
            if rate == 0 {
                return Err(usage("--rate must be at least 1"));
            }
            let path = output.filter(|p| p.as_os_str() != "-");
            let stores = db.open(config).await?;
            let started = std::time::Instant::now();
            let name = tenant.clone();
            let pace = netops_shared::store::Pace::new(rate, max_items, move |_, done| {
                eprintln!("netops: exporting tenant '{name}': {done} items read so far");
            });
            let store = db.config(config).store.as_str();
            let outcome = crate::export::export(
                stores.deployment.as_ref(),
                store,
                &tenant,
                path.as_deref(),
                &pace,
            )
            .await
            .map_err(|e| Failure(e, 1))?;
            let secs = started.elapsed().as_secs_f64();
            let to = path.map_or_else(|| "stdout".to_owned(), |p| p.display().to_string());
            if outcome.complete {
                eprintln!(
                    "netops: tenant '{tenant}' exported to {to}: {} items ({} this run, {secs:.1}s)",
                    outcome.items, outcome.this_run
                );
            } else {
                eprintln!(
                    "netops: tenant '{tenant}': {} items exported to {to} so far, stopped at \
                     --max-items: run again on the same file to go on",
                    outcome.items
                );
            }
            Ok(())
        }
        TenantCommand::Delete {
            tenant,
            export,
            no_export,
            yes,
            rate,
            max_items,
            db,
        } => {
            check_tenant(&tenant)?;
            if rate == 0 {
                return Err(usage("--rate must be at least 1"));
            }
            if export.is_none() && !no_export {
                return Err(usage(format!(
                    "tenant '{tenant}' not deleted: export its data first (netops tenant export \
                     --tenant {tenant} --output FILE) and pass --export FILE, or pass --no-export \
                     to delete it without"
                )));
            }
            if let Some(path) = &export {
                let items = crate::export::verify(path, &tenant)
                    .map_err(|e| usage(format!("tenant '{tenant}' not deleted: {e}")))?;
                eprintln!(
                    "netops: {} is a complete export of tenant '{tenant}' ({items} items)",
                    path.display()
                );
            }
            if !yes {
                confirm(&tenant)?;
            }
            let stores = db.open(config).await?;
            let started = std::time::Instant::now();
            let name = tenant.clone();
            let pace = netops_shared::store::Pace::new(rate, max_items, move |what, done| {
                eprintln!("netops: deleting tenant '{name}': {done} items so far ({what})");
            });
            stores.deployment.delete_tenant(&tenant, &pace).await?;
            let secs = started.elapsed().as_secs_f64();
            if pace.stopped() {
                eprintln!(
                    "netops: tenant '{tenant}': {} items deleted in {secs:.1}s, stopped at \
                     --max-items: run again to go on",
                    pace.done()
                );
            } else {
                eprintln!(
                    "netops: tenant '{tenant}' deleted: {} items in {secs:.1}s",
                    pace.done()
                );
            }
            Ok(())
        }
    }
}

/// Asks for the tenant's name on the terminal; anything else, or no input, refuses.
fn confirm(tenant: &str) -> Result<(), Failure> {
    eprint!(
        "netops: delete tenant '{tenant}' and everything it holds (export it first with \
         netops tenant export)? Type its name: "
    );
    let mut line = String::new();
    match std::io::stdin().read_line(&mut line) {
        Ok(_) if line.trim() == tenant => Ok(()),
        _ => Err(usage(format!(
            "tenant '{tenant}' not deleted: type its name to confirm, or pass --yes"
        ))),
    }
}

/// A token's state: what `netops token list` prints and `netops tenant list` counts.
#[derive(Clone, Copy)]
enum TokenState {
    Active,
    Revoked,
    Expired,
}

impl TokenState {
    fn as_str(self) -> &'static str {
        match self {
            TokenState::Active => "active",
            TokenState::Revoked => "revoked",
            TokenState::Expired => "expired",
        }
    }
}

fn token_state(t: &netops_shared::store::TokenRecord, now: i64) -> TokenState {
    if t.revoked_at.is_some() {
        TokenState::Revoked
    } else if t.expires_at <= now {
        TokenState::Expired
    } else {
        TokenState::Active
    }
}

async fn demo_token(stores: &Stores, now: DateTime<Utc>) -> Result<String, Failure> {
    match netops::stamped_token(
        stores,
        "acme",
        "demo",
        Scope::ALL.to_vec(),
        Duration::days(90),
        now,
    )
    .await
    {
        Err(StoreError::Exists) => Err(Failure(
            format!(
                "a demo token named demo-{} exists 100 times over",
                now.format("%Y%m%d-%H%M%S")
            ),
            1,
        )),
        other => Ok(other?),
    }
}

/// `NETOPS_NO_LIVE` as clap reads it for `--no-live` (any value but a false one such as `0`,
/// `false`, `no` or `off`), for `netops` run without a command.
fn no_live_from_env() -> bool {
    std::env::var("NETOPS_NO_LIVE").is_ok_and(|v| {
        !matches!(
            v.trim().to_ascii_lowercase().as_str(),
            "" | "0" | "false" | "no" | "off" | "n" | "f"
        )
    })
}

/// Writes the demo data of the time the server was stopped, with a progress line each
/// second once it has taken one.
async fn catch_up(stores: &Stores, retention_days: u32) -> Result<(), Failure> {
    let started = std::time::Instant::now();
    let mut shown = std::time::Duration::ZERO;
    let mut report = |p: live::Progress<'_>| {
        let elapsed = started.elapsed();
        if elapsed.as_secs() > shown.as_secs() {
            shown = elapsed;
            let total = (p.to - p.from).num_seconds().max(1) as f64;
            let done = (p.done - p.from).num_seconds() as f64;
            eprintln!(
                "netops: catching up the demo data of tenant {} since {}: {:.0} %",
                p.tenant,
                p.from.format("%Y-%m-%d %H:%M UTC"),
                100.0 * done / total
            );
        }
    };
    let written = live::advance(stores, Utc::now(), retention_days, &mut report).await?;
    if !shown.is_zero() {
        eprintln!(
            "netops: caught up ({written} records in {:.1} s)",
            started.elapsed().as_secs_f64()
        );
    }
    Ok(())
}

fn geo(command: GeoCommand) -> Result<(), Failure> {
    match command {
        GeoCommand::Refresh { out, latest } => {
            let done = netops::geo::refresh(&out, latest).map_err(|e| Failure(e, 1))?;
            for (package, version) in &done.versions {
                eprintln!("netops: {package} {version}");
            }
            eprintln!(
                "netops: {} rows compiled into {} ({:.1} MB) in {:.1} s; notice in {}.NOTICE",
                done.rows,
                out.display(),
                done.bytes as f64 / 1e6,
                done.seconds,
                out.display()
            );
            Ok(())
        }
        GeoCommand::Lookup { geo, addresses } => {
            let (db, _) = netops::geo::load(geo.file.as_deref()).map_err(|e| Failure(e, 1))?;
            for raw in addresses {
                let ip: std::net::IpAddr = raw
                    .trim()
                    .parse()
                    .map_err(|_| usage(format!("{raw}: not an IP address")))?;
                let place = db.place(ip);
                out(&format!(
                    "{}\n",
                    serde_json::json!({"ip": ip, "country": place.country, "operator": place.operator})
                ));
            }
            Ok(())
        }
        GeoCommand::Info { geo } => {
            let (db, origin) = netops::geo::load(geo.file.as_deref()).map_err(|e| Failure(e, 1))?;
            let [c4, c6, o4, o6] = db.ranges();
            let (countries, operators) = db.names();
            out(&format!(
                "file: {origin}\nsize: {} bytes\nranges: countries {c4} IPv4, {c6} IPv6; \
                 operators {o4} IPv4, {o6} IPv6\nnames: {countries} countries, {operators} operators\n\n{}",
                db.size(),
                db.notice()
            ));
            Ok(())
        }
    }
}

/// Writes to stdout; a reader gone (`| head`) ends nothing but the output.
fn out(text: &str) {
    use std::io::Write;
    let _ = std::io::stdout().lock().write_all(text.as_bytes());
}

async fn serve(
    addr: SocketAddr,
    db: DbArg,
    config: Config,
    geo: GeoArg,
    live: bool,
    agents: AgentsArg,
) -> Result<(), Failure> {
    let fd_limit = server::raise_fd_limit();
    let limits = Limits::from_env(fd_limit).map_err(|e| usage(e.to_string()))?;
    let started = std::time::Instant::now();
    let (geo, origin) = netops::geo::load(geo.file.as_deref()).map_err(|e| Failure(e, 1))?;
    tracing::info!(
        bytes = geo.size(),
        ms = started.elapsed().as_millis() as u64,
        "geolocation: {origin}"
    );
    let stores = db.open(&config).await?;
    if stores.deployment.is_empty().await? {
        eprintln!("netops: empty store, seeding the demo tenants acme and globex...");
        seed_demo(&stores, SeedSize::default()).await?;
    }
    let retention_days = config.retention_days();
    let access_tokens = netops_mcp::oauth::verifier(&config);
    if live {
        catch_up(&stores, retention_days).await?;
    }
    let state = AppState::new(
        &stores,
        Config {
            db_path: db.db,
            ..config
        },
    )
    .await?
    .counting_in_process()
    .accepting(access_tokens)
    .geolocating(Some(std::sync::Arc::new(geo)));
    let listener =
        server::listen(addr).map_err(|e| Failure(format!("cannot listen on {addr}: {e}"), 1))?;
    let local = listener
        .local_addr()
        .map_err(|e| Failure(e.to_string(), 1))?;
    // Signal handlers are in place before the token is printed: a supervisor that reads
    // the token and stops the server at once still gets a clean stop.
    let stop =
        shutdown().map_err(|e| Failure(format!("cannot install signal handlers: {e}"), 1))?;
    let token = demo_token(&stores, Utc::now()).await?;
    let base = format!("http://{local}/api/v1");
    // One write, errors ignored: a closed stdout must not stop the server.
    let banner = format!(
        "netops: Network Operations API v1 listening\n\
         base URL: {base}\n\
         docs: {base}/docs\n\
         token: {token}\n\
         \x20 (tenant acme, every scope, valid 90 days)\n\
         try: curl -H 'Authorization: Bearer {token}' {base}/machines?limit=5\n"
    );
    {
        use std::io::Write;
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(banner.as_bytes()).and_then(|()| out.flush());
    }
    netops::spawn_workers(&state);
    if !agents.no_agents {
        tokio::spawn(crate::agent::run_demo(
            stores.clone(),
            base,
            agents.delay.action_delay_secs,
        ));
    }
    if live {
        tokio::spawn(live::worker(stores, retention_days));
    }
    tracing::info!(fd_limit, ?limits, "serving");
    server::serve(listener, netops::app(state.clone()), state, limits, stop).await;
    eprintln!("netops: stopped");
    Ok(())
}

/// Resolves on SIGINT or SIGTERM; the handlers are installed when this is called.
fn shutdown() -> std::io::Result<impl std::future::Future<Output = ()>> {
    #[cfg(unix)]
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    #[cfg(unix)]
    let mut int = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())?;
    Ok(async move {
        #[cfg(unix)]
        tokio::select! {
            _ = term.recv() => {},
            _ = int.recv() => {},
        }
        #[cfg(not(unix))]
        let _ = tokio::signal::ctrl_c().await;
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_like_the_contract() {
        assert_eq!(parse_duration("90s"), Some(Duration::seconds(90)));
        assert_eq!(parse_duration("30m"), Some(Duration::minutes(30)));
        assert_eq!(parse_duration("12h"), Some(Duration::hours(12)));
        assert_eq!(parse_duration("30d"), Some(Duration::days(30)));
        for bad in ["", "d", "0d", "-1d", "5w", "1.5h"] {
            assert_eq!(parse_duration(bad), None, "{bad}");
        }
    }

    #[tokio::test]
    async fn two_starts_in_one_second_each_get_a_demo_token() {
        let dir = tempfile::tempdir().expect("tempdir");
        let stores = netops::open_store(&dir.path().join("t.db")).expect("store");
        let now = Utc::now();
        let first = demo_token(&stores, now).await.expect("first");
        let second = demo_token(&stores, now).await.expect("second");
        assert_ne!(first, second);
        let names: Vec<String> = stores
            .tokens
            .list("acme")
            .await
            .expect("list")
            .into_iter()
            .map(|t| t.name)
            .collect();
        let stamp = format!("demo-{}", now.format("%Y%m%d-%H%M%S"));
        assert!(
            names.contains(&stamp) && names.contains(&format!("{stamp}-2")),
            "{names:?}"
        );
    }
}
