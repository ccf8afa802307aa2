//! Security module (docs/modules.md#security): directory logons, lockouts and account changes,
//! accounts ranked by risk from the logon graph, anomalies, SIEM incidents and detection rules.

mod handlers;
pub mod model;
pub mod risk;
mod rules;

use netops_shared::routes::Function;
use netops_shared::{AppState, Module};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

pub use model::{AccountChange, Incident, IncidentDetail, Lockout, Logon, RiskyAccount, Rule};

pub const MODULE: Module = Module {
    function: Function::Security,
    routes,
};

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(handlers::list_logons))
        .routes(routes!(handlers::list_lockouts))
        .routes(routes!(handlers::list_account_changes))
        .routes(routes!(handlers::list_risky_accounts))
        .routes(routes!(handlers::list_security_anomalies))
        .routes(routes!(handlers::list_security_incidents))
        .routes(routes!(handlers::get_security_incident))
        .routes(routes!(handlers::list_security_rules))
}
