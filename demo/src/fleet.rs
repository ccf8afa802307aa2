//! Fleet demo data: one document per machine of the roster, and the roster's count.

use crate::{Produced, SeedCtx};
use chrono::{DateTime, Utc};
use netops_shared::lookup::{MACHINE_COUNT, MACHINE_COUNT_KEY};
use netops_shared::module::BoxFuture;
use netops_shared::store::StoreResult;

use netops_fleet::model::{AgentStatus, MACHINES, Machine};

/// One document per machine of the roster, as of the roster's time.
fn machine_docs(ctx: &SeedCtx) -> Vec<(String, serde_json::Value)> {
    ctx.machines
        .iter()
        .map(|m| {
            let machine = Machine {
                id: m.id,
                hostname: m.hostname.clone(),
                ip: m.ip.clone(),
                os: m.os.clone(),
                agent_version: m.agent_version.clone(),
                status: if m.online {
                    AgentStatus::Online
                } else {
                    AgentStatus::Offline
                },
                last_seen_at: m.last_seen_at,
                modules: m.modules.iter().map(|s| s.to_string()).collect(),
            };
            (
                m.hostname.clone(),
                serde_json::to_value(machine).unwrap_or_default(),
            )
        })
        .collect()
}

pub fn seed(ctx: &SeedCtx) -> BoxFuture<'_, StoreResult<()>> {
    Box::pin(async move {
        let docs = machine_docs(ctx);
        let count = serde_json::json!({"machines": docs.len()});
        ctx.stores.docs.put(ctx.tenant.id, MACHINES, docs).await?;
        ctx.stores
            .docs
            .put(
                ctx.tenant.id,
                MACHINE_COUNT,
                vec![(MACHINE_COUNT_KEY.to_owned(), count)],
            )
            .await
    })
}

/// The machines as of now, when a batch ends now: the online ones seen moments ago. No API
/// write changes a machine's document.
pub fn produce(ctx: &SeedCtx, _from: DateTime<Utc>, to: DateTime<Utc>) -> Produced {
    Produced::present(ctx, to, MACHINES, || machine_docs(ctx))
}
