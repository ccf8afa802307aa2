//! Security module (docs/modules.md#security): directory logons, lockouts and account changes,
//! accounts ranked by risk from the logon graph, anomalies, SIEM incidents and detection rules.

pub mod collect;
pub mod derive;
mod handlers;
pub mod model;
pub mod risk;
mod rules;

use netops_shared::Module;
use netops_shared::routes::Function;

pub use model::{AccountChange, Incident, IncidentDetail, Lockout, Logon, RiskyAccount, Rule};

pub const MODULE: Module = Module {
    function: Function::Security,
    routes,
};

netops_shared::module_routes! {
    reads: [
        handlers::list_logons,
        handlers::list_lockouts,
        handlers::list_account_changes,
        handlers::list_risky_accounts,
        handlers::list_security_anomalies,
        handlers::list_security_incidents,
        handlers::get_security_incident,
        handlers::list_security_rules,
    ],
}
