//! Inventory module (docs/modules.md#inventory): assets with their hardware and installed
//! software, the tenant's software list with end-of-life status, and software x CVE records.

pub mod catalog;
pub mod collect;
mod handlers;
pub mod model;

use netops_shared::Module;
use netops_shared::routes::Function;

pub use model::{Asset, AssetDetail, CveRecord, Software};

pub const MODULE: Module = Module {
    function: Function::Inventory,
    routes,
};

netops_shared::module_routes! {
    reads: [
        handlers::list_assets,
        handlers::get_asset,
        handlers::list_software,
        handlers::list_cves,
    ],
}
