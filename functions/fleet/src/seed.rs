//! Fleet demo data: one document per machine of the roster, and the roster's count.

use netops_shared::demo::SeedCtx;
use netops_shared::lookup::{MACHINE_COUNT, MACHINE_COUNT_KEY};
use netops_shared::module::BoxFuture;
use netops_shared::store::StoreResult;

use crate::model::{AgentStatus, MACHINES, Machine};

pub fn seed(ctx: &SeedCtx) -> BoxFuture<'_, StoreResult<()>> {
    Box::pin(async move {
        let docs = ctx
            .machines
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
            .collect::<Vec<_>>();
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
