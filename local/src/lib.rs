//! netops, the one local process: the whole API in one server over the embedded store, the
//! token commands, the demo seeder and the write log.

use axum::Router;
use netops_shared::config::{Config, StoreKind};
use netops_shared::store::{StoreResult, Stores};
use netops_shared::{AppState, Module};
use netops_store_dynamodb::DynamoStore;
use netops_store_sqlite::SqliteStore;

mod br;
pub mod geo;
pub mod server;

pub use netops_demo::{SeedSize, live, seed_demo};

/// Every module served by the local process.
pub fn modules() -> Vec<&'static Module> {
    let mut all: Vec<&'static Module> = netops_api::MODULES.to_vec();
    all.push(&netops_docs::MODULE);
    all.push(&netops_mcp::MODULE);
    all.push(&netops_collect::MODULE);
    all.push(&netops_agent::MODULE);
    all
}

/// The whole API, every module mounted under `/api/v1`, answering in brotli besides gzip:
/// from here on, this process offers brotli ([`br`]).
pub fn app(state: AppState) -> Router {
    br::offer();
    let (router, _) = netops_api::router_of(&modules()).split_for_parts();
    netops_shared::http::app(router, state)
}

/// The scheduled pass's tasks beside the staleness check: the actions' expiry, and the
/// machines whose heartbeats stopped going offline.
pub static PASS_TASKS: &[netops_shared::pass::Task] =
    &[netops_netdiag::EXPIRY, netops_fleet::OFFLINE];

/// Starts the background worker of the local process: the scheduled pass.
pub fn spawn_workers(state: &AppState) {
    tokio::spawn(netops_shared::pass::worker(state.clone(), PASS_TASKS));
}

/// Makes a token of `tenant` named `<prefix>-<UTC second>` with `scopes`, valid `valid`, and
/// returns its secret. Another in the same second (or after the clock went back) takes the
/// next free suffix rather than fail; `Exists` when 100 are taken.
pub async fn stamped_token(
    stores: &Stores,
    tenant: &str,
    prefix: &str,
    scopes: Vec<netops_shared::Scope>,
    valid: chrono::Duration,
    now: chrono::DateTime<chrono::Utc>,
) -> StoreResult<String> {
    let stamp = format!("{prefix}-{}", now.format("%Y%m%d-%H%M%S"));
    for n in 1..=100 {
        let name = match n {
            1 => stamp.clone(),
            n => format!("{stamp}-{n}"),
        };
        match netops_shared::auth::create_token(
            stores.tokens.as_ref(),
            tenant,
            &name,
            scopes.clone(),
            valid,
        )
        .await
        {
            Ok((secret, _)) => return Ok(secret),
            Err(netops_shared::store::StoreError::Exists) => continue,
            Err(e) => return Err(e),
        }
    }
    Err(netops_shared::store::StoreError::Exists)
}

/// The stores of an embedded file.
pub fn open_store(path: &std::path::Path) -> StoreResult<Stores> {
    Ok(Stores::of(SqliteStore::open(path)?))
}

/// Seeds the store the configuration names ([`seed_demo`]). The embedded file is opened
/// for a bulk load, unsynced, and synced once when the seed is done.
pub async fn seed_configured(config: &Config, size: SeedSize) -> StoreResult<()> {
    if config.store == StoreKind::Embedded {
        let file = SqliteStore::open_for_load(&config.db_path)?;
        seed_demo(&Stores::of(file.clone()), size).await?;
        return file.settle().await;
    }
    seed_demo(&open_configured(config).await?, size).await
}

/// The store the configuration names: the embedded file, or DynamoDB tables, created when
/// missing, so a fresh account can be tried at once with `netops seed --store dynamodb`; the
/// series reads from Timestream when `NETOPS_SERIES_STORE` says so. (The Lambda functions open
/// theirs with netops-lambda, which never links SQLite unless asked.)
pub async fn open_configured(config: &Config) -> StoreResult<Stores> {
    let mut stores = match config.store {
        StoreKind::Embedded => Stores::of(SqliteStore::open_retaining(
            &config.db_path,
            config.retention_days(),
        )?),
        StoreKind::Dynamodb => {
            let tables = DynamoStore::connect(&config.dynamodb, config.retention_days()).await?;
            tables.ensure_tables().await?;
            Stores::of(tables)
        }
    };
    if let Some(ts) = &config.timestream {
        netops_store_timestream::read_series_from_timestream(&mut stores, ts).await?;
    }
    Ok(stores)
}
