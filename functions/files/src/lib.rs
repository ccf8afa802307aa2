//! Shared-file access module (docs/modules.md#files): who read, created, modified, deleted or
//! renamed what on the file servers, and a summary of the activity.

pub mod activity;
mod handlers;
pub mod model;

use netops_shared::routes::Function;
use netops_shared::{AppState, Module};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

pub const MODULE: Module = Module {
    function: Function::Files,
    routes,
};

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(handlers::list_events))
        .routes(routes!(handlers::get_summary))
}
