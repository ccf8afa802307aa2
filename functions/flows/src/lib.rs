//! Network flows module (docs/modules.md#flows): detailed agent records, hourly aggregates
//! (agents, gateways, firewall), failed outbound connections and the multidimensional explorer.

pub mod collect;
pub mod cube;
pub mod derive;
mod explore;
pub mod expr;
mod handlers;
pub mod model;
pub mod talkers;
pub mod tiers;

use netops_shared::routes::Function;
use netops_shared::{AppState, Module};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

pub const MODULE: Module = Module {
    function: Function::Flows,
    routes,
};

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(handlers::list_flows))
        .routes(routes!(handlers::list_destinations))
        .routes(routes!(handlers::get_summary))
        .routes(routes!(handlers::list_talkers))
        .routes(routes!(handlers::list_blocked))
        .routes(routes!(handlers::explore_flows))
}
