//! Operations module (docs/modules.md#operations): maintenance windows, heartbeats,
//! configuration profiles (format profile/1) and the comparison of their deployments.

pub mod collect;
mod compare;
pub mod deployments;
mod handlers;
pub mod model;

use netops_shared::Module;
use netops_shared::routes::Function;

pub const MODULE: Module = Module {
    function: Function::Operations,
    routes,
};

netops_shared::module_routes! {
    reads: [
        handlers::list_maintenance_windows,
        handlers::list_heartbeats,
        handlers::list_profiles,
        handlers::get_profile,
        handlers::compare_profile_deployment,
    ],
}
