//! Writes the demo data: every module's part for one tenant ([`seed_tenant`]) or both demo
//! tenants ([`seed_demo`]), in the order of [`SEEDERS`], from the roster and one seed.

use chrono::{DateTime, Utc};
use netops_shared::module::BoxFuture;
use netops_shared::routes::Function;
use netops_shared::store::{StoreResult, Stores};

use crate::{SeedCtx, TENANTS, Tenant};

/// Writes one module's demo data for one tenant.
pub type Seeder = for<'a> fn(&'a SeedCtx) -> BoxFuture<'a, StoreResult<()>>;

/// The demo data of every data module, in the order they are written (the route table's),
/// written by `cargo xtask routes`.
pub const SEEDERS: &[(Function, Seeder)] = &[
    // BEGIN generated: data modules
    (Function::Fleet, crate::fleet::seed),
    (Function::Flows, crate::flows::seed),
    (Function::Netdiag, crate::netdiag::seed),
    (Function::Alerts, crate::alerts::seed),
    (Function::Inventory, crate::inventory::seed),
    (Function::Operations, crate::operations::seed),
    (Function::Security, crate::security::seed),
    (Function::Databases, crate::databases::seed),
    (Function::Firewall, crate::firewall::seed),
    (Function::Dns, crate::dns::seed),
    (Function::Files, crate::files::seed),
    (Function::Network, crate::network::seed),
    // END generated: data modules
];

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
            machines: crate::DEMO_MACHINES,
            days: crate::DEMO_DAYS,
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
/// its live data starts ([`crate::live::mark_seeded`]).
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
    for &(function, seed) in SEEDERS.iter().filter(|(f, _)| wanted(*f)) {
        let started = std::time::Instant::now();
        seed(&ctx).await?;
        tracing::debug!(
            tenant = tenant.id,
            module = function.name(),
            ms = started.elapsed().as_millis() as u64,
            "seeded"
        );
    }
    crate::live::mark_seeded(stores, tenant, size, now).await
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
