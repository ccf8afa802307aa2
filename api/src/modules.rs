//! The list of the API's data modules, written from `Function` (routes/src/lib.rs) by
//! `cargo xtask routes`.

use netops_shared::Module;

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
