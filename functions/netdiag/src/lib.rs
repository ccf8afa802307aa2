//! NetDiag module (docs/modules.md#netdiag): per-machine network diagnostics. Verdicts and
//! their causes, the event feed, followed applications, the PDF report, settings and diagnostic
//! actions (with the agent simulator that completes them in the local process).

mod actions;
pub mod collect;
pub mod derive;
mod handlers;
pub mod model;
mod pdf;
mod report;
mod service;
mod settings;

use netops_shared::routes::Function;
use netops_shared::{AppState, Module};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

pub use model::{Alert, Settings, Verdict};

pub const MODULE: Module = Module {
    function: Function::Netdiag,
    routes,
};

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(handlers::list_netdiag_machines))
        .routes(routes!(handlers::get_netdiag_summary))
        .routes(routes!(handlers::list_netdiag_events))
        .routes(routes!(handlers::list_netdiag_apps))
        .routes(routes!(handlers::get_netdiag_report))
        .routes(routes!(handlers::update_netdiag_settings))
        .routes(routes!(handlers::start_netdiag_action))
}
