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

use netops_shared::Module;
use netops_shared::routes::Function;

pub const MODULE: Module = Module {
    function: Function::Flows,
    routes,
};

netops_shared::module_routes! {
    reads: [
        handlers::list_flows,
        handlers::list_destinations,
        handlers::get_summary,
        handlers::list_talkers,
        handlers::list_blocked,
        handlers::explore_flows,
    ],
}
