//! Inventory module (docs/modules.md#inventory): assets with their hardware and installed
//! software, the tenant's software list with end-of-life status, and software x CVE records.

mod handlers;
pub mod model;

use netops_shared::routes::Function;
use netops_shared::{AppState, Module};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

pub use model::{Asset, AssetDetail, CveRecord, Software};

pub const MODULE: Module = Module {
    function: Function::Inventory,
    routes,
};

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(handlers::list_assets))
        .routes(routes!(handlers::get_asset))
        .routes(routes!(handlers::list_software))
        .routes(routes!(handlers::list_cves))
}
