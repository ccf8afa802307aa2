//! The demo data stays alive: after the first seed, each tenant's modules go on producing
//! their time-stamped data as time passes, from where the last run stopped (the catch-up of
//! `netops serve` on an existing file), then while serving (a background task).
//!
//! Each tenant keeps a watermark document: the end of the last batch written. A batch is an
//! interval `[until, end)` of at most one hour, ending on an hour boundary or at the present;
//! its records are appended (a record with the partition, time and id of a stored one
//! replaces it, so writing one again changes nothing), its rollups are added together with
//! the batch's marker ([`netops_shared::store::Rollups::add_once`], once per batch), then the
//! watermark moves to `end`. Before a batch is written its end is noted in the watermark
//! (`pending`): a process killed in the middle of a batch resumes with that same batch, whose
//! records come out the same (each hour is drawn from its own generator) and whose rollups
//! are skipped if they were added already. Documents that API writes change too (incidents,
//! acknowledged through the API) are opened and resolved by [`crate::DocChange`]:
//! a put conditional on the version read, so a write between the read and the put is kept, and
//! a batch run again finds its changes made and leaves them.

use crate::{Produced, SeedCtx, TENANTS, Tenant};
use chrono::{DateTime, Duration, Utc};
use netops_shared::module::BoxFuture;
use netops_shared::routes::Function;
use netops_shared::store::{Rollup, StoreError, StoreResult, Stores};
use serde::{Deserialize, Serialize};

use crate::SeedSize;

/// The collection of the watermark documents (one per tenant, key [`WATERMARK`]).
pub const COLLECTION: &str = "live";
pub const WATERMARK: &str = "watermark";

/// How often the background task writes the time that passed.
pub const EVERY: std::time::Duration = std::time::Duration::from_secs(60);

/// Where a tenant's produced data ends, and the size it was seeded at (the producers go on
/// with the same roster).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Watermark {
    /// The end of the last batch written: the data before it is in the store.
    pub until: DateTime<Utc>,
    /// The end of the batch being written from `until`, while it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending: Option<DateTime<Utc>>,
    pub machines: usize,
    pub days: u32,
    pub seed: u64,
    /// When the tenant was seeded (the producers go on from what the seed left in
    /// progress). A watermark of an earlier version has none: its `until` stands for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seeded_at: Option<DateTime<Utc>>,
}

/// Produces one module's data of an interval `[from, to)`: drawn at once, or by a
/// generator that runs as the seed's does (flows).
#[derive(Clone, Copy)]
enum Producer {
    Drawn(fn(&SeedCtx, DateTime<Utc>, DateTime<Utc>) -> Produced),
    Run(RunProducer),
}

/// A producer that runs as its module's seed does, writing nothing itself.
type RunProducer =
    for<'a> fn(&'a SeedCtx, DateTime<Utc>, DateTime<Utc>) -> BoxFuture<'a, StoreResult<Produced>>;

impl Producer {
    async fn produce(
        self,
        ctx: &SeedCtx,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> StoreResult<Produced> {
        match self {
            Producer::Drawn(f) => Ok(f(ctx, from, to)),
            Producer::Run(f) => f(ctx, from, to).await,
        }
    }
}

/// The modules whose data goes on as time passes. The others keep what the seed wrote.
const PRODUCERS: [(Function, Producer); 12] = [
    (Function::Flows, Producer::Run(crate::flows::produce)),
    (
        Function::Firewall,
        Producer::Drawn(crate::firewall::produce),
    ),
    (Function::Dns, Producer::Drawn(crate::dns::produce)),
    (Function::Files, Producer::Drawn(crate::files::produce)),
    (Function::Network, Producer::Drawn(crate::network::produce)),
    (
        Function::Databases,
        Producer::Drawn(crate::databases::produce),
    ),
    (Function::Fleet, Producer::Drawn(crate::fleet::produce)),
    (
        Function::Operations,
        Producer::Drawn(crate::operations::produce),
    ),
    (Function::Alerts, Producer::Drawn(crate::alerts::produce)),
    (Function::Netdiag, Producer::Run(crate::netdiag::produce)),
    (
        Function::Security,
        Producer::Drawn(crate::security::produce),
    ),
    (
        Function::Inventory,
        Producer::Drawn(crate::inventory::produce),
    ),
];

/// Notes that `tenant` was seeded at `size` up to `now`: its producers start there.
pub async fn mark_seeded(
    stores: &Stores,
    tenant: &Tenant,
    size: SeedSize,
    now: DateTime<Utc>,
) -> StoreResult<()> {
    put(
        stores,
        tenant.id,
        &Watermark {
            until: now,
            pending: None,
            machines: size.machines,
            days: size.days,
            seed: size.seed,
            seeded_at: Some(now),
        },
    )
    .await
}

/// A tenant's watermark, if it has one (a tenant seeded by an earlier version has none, and
/// keeps its data as it is).
pub async fn watermark(stores: &Stores, tenant: &str) -> StoreResult<Option<Watermark>> {
    let Some(doc) = stores.docs.get(tenant, COLLECTION, WATERMARK).await? else {
        return Ok(None);
    };
    serde_json::from_value(doc.body)
        .map(Some)
        .map_err(|e| StoreError::Data(format!("watermark of {tenant}: {e}")))
}

async fn put(stores: &Stores, tenant: &str, mark: &Watermark) -> StoreResult<()> {
    let body = serde_json::to_value(mark).map_err(|e| StoreError::Data(e.to_string()))?;
    stores
        .docs
        .put(tenant, COLLECTION, vec![(WATERMARK.to_owned(), body)])
        .await
}

/// How far a catch-up has come, for its progress line.
#[derive(Debug, Clone, Copy)]
pub struct Progress<'a> {
    pub tenant: &'a str,
    /// The interval being caught up, and where it stands.
    pub from: DateTime<Utc>,
    pub done: DateTime<Utc>,
    pub to: DateTime<Utc>,
}

/// Writes every tenant's data up to `now`, batch by batch, from its watermark (no further
/// back than the retention: older data would leave the store at once). Returns the records
/// written.
pub async fn advance(
    stores: &Stores,
    now: DateTime<Utc>,
    retention_days: u32,
    progress: &mut (dyn FnMut(Progress<'_>) + Send),
) -> StoreResult<usize> {
    let mut written = 0;
    for tenant in TENANTS {
        written += advance_tenant(stores, tenant, now, retention_days, progress).await?;
    }
    Ok(written)
}

async fn advance_tenant(
    stores: &Stores,
    tenant: &'static Tenant,
    now: DateTime<Utc>,
    retention_days: u32,
    progress: &mut (dyn FnMut(Progress<'_>) + Send),
) -> StoreResult<usize> {
    let Some(mut mark) = watermark(stores, tenant.id).await? else {
        return Ok(0);
    };
    let oldest = now - Duration::days(i64::from(retention_days));
    if mark.pending.is_none() && mark.until < oldest {
        mark.until = oldest;
    }
    let from = mark.until;
    let seeded_at = *mark.seeded_at.get_or_insert(mark.until);
    let ctx = SeedCtx::new(
        stores.clone(),
        tenant,
        now,
        mark.machines,
        mark.days,
        mark.seed,
    )
    .seeded(seeded_at);
    let mut written = 0;
    loop {
        let end = match mark.pending {
            Some(end) => end,
            None => next_hour(mark.until).min(now),
        };
        if end <= mark.until {
            return Ok(written);
        }
        if mark.pending.is_none() {
            mark.pending = Some(end);
            put(stores, tenant.id, &mark).await?;
        }
        written += write_batch(&ctx, mark.until, end).await?;
        mark.until = end;
        mark.pending = None;
        put(stores, tenant.id, &mark).await?;
        progress(Progress {
            tenant: tenant.id,
            from,
            done: end,
            to: now,
        });
    }
}

/// The start of the hour after the one `t` is in.
fn next_hour(t: DateTime<Utc>) -> DateTime<Utc> {
    let next = (t.timestamp().div_euclid(3600) + 1) * 3600;
    DateTime::from_timestamp(next, 0).unwrap_or(t)
}

/// Writes every producer's data of `[from, to)`: the records and documents, then the
/// rollups with the batch's marker.
async fn write_batch(ctx: &SeedCtx, from: DateTime<Utc>, to: DateTime<Utc>) -> StoreResult<usize> {
    let tenant = ctx.tenant.id;
    let mut rollups = Vec::new();
    let mut written = 0;
    for (function, produce) in PRODUCERS {
        let produced = produce.produce(ctx, from, to).await?;
        tracing::debug!(
            tenant,
            module = function.name(),
            records = produced.len(),
            %from,
            %to,
            "produced"
        );
        written += produced.len();
        for (series, records) in produced.records {
            if !records.is_empty() {
                ctx.stores
                    .series_writes
                    .append(tenant, &series, records)
                    .await?;
            }
        }
        for (collection, docs) in produced.docs {
            ctx.stores.docs.put(tenant, &collection, docs).await?;
        }
        for change in &produced.changes {
            change.apply(&ctx.stores, tenant).await?;
        }
        rollups.extend(produced.rollups);
    }
    let from_ms = from.timestamp_millis();
    let marker = Rollup {
        hour: from_ms.div_euclid(3_600_000) * 3_600_000,
        key: from_ms.to_string(),
        dims: serde_json::json!({}).into(),
        measures: [("end".to_owned(), to.timestamp_millis() as f64)].into(),
    };
    ctx.stores.rollups.add_once(tenant, marker, rollups).await?;
    Ok(written)
}

/// The background task of `netops serve`: every [`EVERY`], writes the time that passed.
pub async fn worker(stores: Stores, retention_days: u32) {
    // The first tick a period from now: the catch-up has just written up to the start.
    let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + EVERY, EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        if let Err(e) = advance(&stores, Utc::now(), retention_days, &mut |_| {}).await {
            tracing::warn!(error = %e, "live demo data not written, tried again later");
        }
    }
}
