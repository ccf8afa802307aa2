//! Self-description (spec 4.16): the OpenAPI document, generated from the code of every
//! module, and the documentation page. This crate also holds [`MODULES`], the list of every
//! data module, which the local process and the MCP function mount.

mod openapi;
mod page;

use netops_shared::routes::Function;
use netops_shared::{AppState, Module};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

pub use openapi::openapi;

/// Every data module of the API.
pub static MODULES: &[&Module] = &[
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
];

pub const MODULE: Module = Module {
    function: Function::Docs,
    routes,
};

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(page::get_openapi))
        .routes(routes!(page::get_docs))
        .routes(routes!(page::get_docs_asset))
}
