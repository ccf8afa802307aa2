//! The agent API (docs/agent.md): what the machines' agents call, apart from the public read
//! contract. A tenant's enrollment token (scope `agent:enroll`) enrolls a machine and gets its
//! agent credential (scope `agent`, named `agent:<hostname>`: bound to that machine); with it
//! the agent syncs, fetches its settings, reports the version it applied, claims its queued
//! actions under a lease and posts their results. No agent token calls another route, and no
//! other token calls these (the gate, `Access::Agent`).

mod handlers;

use netops_shared::Module;
use netops_shared::routes::Function;

pub use handlers::{ClaimRequest, Credential, Enrollment, SettingsApplied, Sync};

pub const MODULE: Module = Module {
    function: Function::Agent,
    routes,
};

netops_shared::module_routes! {
    reads: [],
    others: [
        handlers::enroll_agent,
        handlers::rotate_agent_credential,
        handlers::sync_agent,
        handlers::get_agent_settings,
        handlers::report_agent_settings,
        handlers::claim_agent_actions,
        handlers::post_agent_action_result,
    ],
}
