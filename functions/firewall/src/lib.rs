//! Firewall module (docs/modules.md#firewall): firewalls and gateways relayed by site agents,
//! events parsed from their logs (with directory-controller correlation), IPFIX / NetFlow v9
//! traffic, threats and the perimeter report; how syslog lines collected are written
//! ([`collect`]).

pub mod collect;
pub mod correlate;
mod handlers;
pub mod model;
pub mod parse;
pub mod report;
pub mod traffic;

use netops_shared::routes::Function;
use netops_shared::{AppState, Module};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

pub const MODULE: Module = Module {
    function: Function::Firewall,
    routes,
};

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(handlers::list_devices))
        .routes(routes!(handlers::list_events))
        .routes(routes!(handlers::get_traffic))
        .routes(routes!(handlers::list_threats))
        .routes(routes!(handlers::get_report))
}
