//! netops, the one local process: the whole API in one server over the embedded store, the
//! token commands, the demo seeder and the write log.

use axum::Router;
use chrono::{DateTime, Utc};
use netops_shared::config::{Config, StoreKind};
use netops_shared::demo::{SeedCtx, TENANTS, Tenant};
use netops_shared::module::BoxFuture;
use netops_shared::routes::Function;
use netops_shared::store::{StoreResult, Stores};
use netops_shared::{AppState, Module};
use netops_store_dynamodb::DynamoStore;
use netops_store_sqlite::SqliteStore;

pub mod live;
pub mod server;

/// Every module served by the local process.
pub fn modules() -> Vec<&'static Module> {
    let mut all: Vec<&'static Module> = netops_api::MODULES.to_vec();
    all.push(&netops_docs::MODULE);
    all.push(&netops_mcp::MODULE);
    all
}

/// Writes one module's demo data for one tenant.
type Seeder = for<'a> fn(&'a SeedCtx) -> BoxFuture<'a, StoreResult<()>>;

/// The demo data of every module that has some, in the order they are written. The modules
/// compile their seeders only with their feature `demo`, which this process alone enables.
const SEEDERS: [(Function, Seeder); 12] = [
    (Function::Fleet, netops_fleet::seed::seed),
    (Function::Flows, netops_flows::seed::seed),
    (Function::Netdiag, netops_netdiag::seed::seed),
    (Function::Alerts, netops_alerts::seed::seed),
    (Function::Inventory, netops_inventory::seed::seed),
    (Function::Operations, netops_operations::seed::seed),
    (Function::Security, netops_security::seed::seed),
    (Function::Databases, netops_databases::seed::seed),
    (Function::Firewall, netops_firewall::seed::seed),
    (Function::Dns, netops_dns::seed::seed),
    (Function::Files, netops_files::seed::seed),
    (Function::Network, netops_network::seed::seed),
];

/// The whole API, every module mounted under `/api/v1`.
pub fn app(state: AppState) -> Router {
    let (router, _) = netops_api::router_of(&modules()).split_for_parts();
    netops_shared::http::app(router, state)
}

/// Starts the background workers of the local process: the NetDiag agent simulator.
pub fn spawn_workers(state: &AppState) {
    tokio::spawn(netops_netdiag::simulator::worker(state.clone()));
}

/// How much demo data to write.
#[derive(Debug, Clone, Copy)]
pub struct SeedSize {
    pub machines: usize,
    pub days: u32,
    pub seed: u64,
}

impl Default for SeedSize {
    fn default() -> Self {
        Self {
            machines: netops_shared::demo::DEMO_MACHINES,
            days: netops_shared::demo::DEMO_DAYS,
            seed: 42,
        }
    }
}

/// Replaces one tenant's data with freshly generated demo data, module by module.
pub async fn seed_tenant(
    stores: &Stores,
    tenant: &'static Tenant,
    size: SeedSize,
) -> StoreResult<()> {
    seed_tenant_at(stores, tenant, size, Utc::now()).await
}

/// [`seed_tenant`] as if it ran at `now` (tests of the live data seed in the past).
pub async fn seed_tenant_at(
    stores: &Stores,
    tenant: &'static Tenant,
    size: SeedSize,
    now: DateTime<Utc>,
) -> StoreResult<()> {
    stores.deployment.clear_tenant(tenant.id).await?;
    fill_tenant(stores, tenant, size, None, now).await
}

/// Writes one (cleared) tenant's demo data, module by module, as of `now`, and notes where
/// its live data starts ([`live::mark_seeded`]).
async fn fill_tenant(
    stores: &Stores,
    tenant: &'static Tenant,
    size: SeedSize,
    only: Option<&[Function]>,
    now: DateTime<Utc>,
) -> StoreResult<()> {
    let ctx = SeedCtx::new(
        stores.clone(),
        tenant,
        now,
        size.machines,
        size.days,
        size.seed,
    );
    let wanted = |f: Function| f == Function::Fleet || only.is_none_or(|o| o.contains(&f));
    for (function, seed) in SEEDERS.into_iter().filter(|(f, _)| wanted(*f)) {
        let started = std::time::Instant::now();
        seed(&ctx).await?;
        tracing::debug!(
            tenant = tenant.id,
            module = function.name(),
            ms = started.elapsed().as_millis() as u64,
            "seeded"
        );
    }
    live::mark_seeded(stores, tenant, size, now).await
}

/// Seeds both demo tenants: `acme` at the given size, `globex` at the demo size.
pub async fn seed_demo(stores: &Stores, size: SeedSize) -> StoreResult<()> {
    seed_demo_modules(stores, size, None).await
}

/// [`seed_demo`] with the data of the fleet and of the modules `only` names (every module
/// when `None`): tests that need a store of their own seed just what they read.
pub async fn seed_demo_modules(
    stores: &Stores,
    size: SeedSize,
    only: Option<&[Function]>,
) -> StoreResult<()> {
    // Every tenant is cleared before any is written: on DynamoDB clearing scans the table,
    // which costs least while it is still empty.
    for tenant in TENANTS {
        stores.deployment.clear_tenant(tenant.id).await?;
    }
    for tenant in TENANTS {
        let size = if tenant.id == "acme" {
            size
        } else {
            SeedSize {
                seed: size.seed,
                ..SeedSize::default()
            }
        };
        fill_tenant(stores, tenant, size, only, Utc::now()).await?;
    }
    Ok(())
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
/// missing, so a fresh account can be tried at once with `netops seed --store dynamodb`.
/// (Timestream series reads are an option of the Lambda functions, netops-lambda.)
pub async fn open_configured(config: &Config) -> StoreResult<Stores> {
    match config.store {
        StoreKind::Embedded => Ok(Stores::of(SqliteStore::open_retaining(
            &config.db_path,
            config.retention_days(),
        )?)),
        StoreKind::Dynamodb => {
            let tables = DynamoStore::connect(&config.dynamodb, config.retention_days()).await?;
            tables.ensure_tables().await?;
            Ok(Stores::of(tables))
        }
    }
}
