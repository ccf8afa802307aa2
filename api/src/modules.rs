//! The list of the API's data modules, written from `Function` (routes/src/lib.rs) by
//! `cargo xtask routes`.

use netops_shared::{AppState, Module};

/// Every data module of the API.
pub static MODULES: &[&Module] = &[
    // BEGIN generated: data modules
    &netops_fleet::MODULE,
    &netops_flows::MODULE,
    &netops_netdiag::MODULE,
    &netops_alerts::MODULE,
    &netops_inventory::MODULE,
    &netops_operations::MODULE,
    &netops_security::MODULE,
    &netops_databases::MODULE,
    &netops_firewall::MODULE,
    &netops_dns::MODULE,
    &netops_files::MODULE,
    &netops_network::MODULE,
    // END generated: data modules
];

/// Every data module's JSON reads without their OpenAPI operations (its crate's `reads`, from
/// `netops_shared::module_routes!`), apart from [`MODULES`], whose routes would link every
/// operation's OpenAPI code into the MCP function that takes these.
pub static READS: &[fn() -> axum::Router<AppState>] = &[
    // BEGIN generated: data module reads
    netops_fleet::reads,
    netops_flows::reads,
    netops_netdiag::reads,
    netops_alerts::reads,
    netops_inventory::reads,
    netops_operations::reads,
    netops_security::reads,
    netops_databases::reads,
    netops_firewall::reads,
    netops_dns::reads,
    netops_files::reads,
    netops_network::reads,
    // END generated: data module reads
];
