//! The fleet's task of the scheduled pass (docs/collect.md#the-scheduled-pass): a machine
//! whose agent stopped sending heartbeats without announcing it (a crash, a pulled cable, a
//! machine switched off at the plug) is marked `offline` once [`SILENT_MINUTES`] have passed
//! since its last one. It keeps its `last_seen_at`; its next heartbeat brings it back
//! `online` (docs/collect.md#machine-heartbeat).

use chrono::{DateTime, Duration, Utc};
use netops_shared::module::BoxFuture;
use netops_shared::pass::Task;
use netops_shared::store::{Expect, Filter, Pred, StoreError, StoreResult, Stores};
use serde_json::json;

use crate::model::{AgentStatus, MACHINES, Machine};

/// Minutes without a heartbeat after which an online machine is offline: ten heartbeats of
/// an agent sending one a minute (docs/collect.md#machine-heartbeat), so that a few lost or
/// late ones, or a collect endpoint out of reach for a few minutes, change nothing.
pub const SILENT_MINUTES: i64 = 10;

/// Machines read per page, and pages read per tenant and pass: the online machines of a
/// fleet of up to 50,000 are gone over each minute (a larger one over several passes, from
/// the first host names on).
const PAGE: usize = 500;
const PAGES: usize = 100;

/// The pass's task: the silent machines go `offline`.
pub const OFFLINE: Task = Task {
    name: "machines_offline",
    run: mark_silent,
};

fn mark_silent<'a>(
    stores: &'a Stores,
    tenant: &'a str,
    now: DateTime<Utc>,
) -> BoxFuture<'a, StoreResult<usize>> {
    Box::pin(silent_offline(stores, tenant, now))
}

async fn silent_offline(stores: &Stores, tenant: &str, now: DateTime<Utc>) -> StoreResult<usize> {
    let cutoff = now - Duration::minutes(SILENT_MINUTES);
    let online = Filter::all().and(Pred::Eq("status", json!(AgentStatus::Online.as_str())));
    let mut after: Option<String> = None;
    let mut marked = 0;
    for _ in 0..PAGES {
        let page = stores
            .docs
            .list(tenant, MACHINES, &online, after.as_deref(), PAGE)
            .await?;
        for doc in &page {
            let mut machine: Machine = serde_json::from_value(doc.body.clone())
                .map_err(|e| StoreError::Data(e.to_string()))?;
            if machine.last_seen_at >= cutoff {
                continue;
            }
            machine.status = AgentStatus::Offline;
            let body =
                serde_json::to_value(&machine).map_err(|e| StoreError::Data(e.to_string()))?;
            // Only the document read: a heartbeat taken in meanwhile wins.
            match stores
                .docs
                .put_if(
                    tenant,
                    MACHINES,
                    &doc.key,
                    body,
                    Expect::Version(doc.version),
                )
                .await
            {
                Ok(()) => marked += 1,
                Err(StoreError::ConditionFailed) => {}
                Err(e) => return Err(e),
            }
        }
        if page.len() < PAGE {
            break;
        }
        after = page.last().map(|d| d.key.clone());
    }
    Ok(marked)
}
