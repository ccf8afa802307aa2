//! Operations module (docs/modules.md#operations): maintenance windows, heartbeats,
//! configuration profiles (format profile/1) and the comparison of their deployments.

mod compare;
pub mod deployments;
mod handlers;
pub mod model;

use netops_shared::routes::Function;
use netops_shared::{AppState, Module};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

pub const MODULE: Module = Module {
    function: Function::Operations,
    routes,
};

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(handlers::list_maintenance_windows))
        .routes(routes!(handlers::list_heartbeats))
        .routes(routes!(handlers::list_profiles))
        .routes(routes!(handlers::get_profile))
        .routes(routes!(handlers::compare_profile_deployment))
}
