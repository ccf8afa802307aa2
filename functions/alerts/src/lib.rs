//! Alerts and availability monitors module (docs/modules.md#alerts-and-availability; states in
//! docs/data.md#shared-states): the unified alert feed, acknowledgement, monitors and their
//! incidents.

mod feed;
mod handlers;
pub mod model;
pub mod monitors;

use netops_shared::routes::Function;
use netops_shared::{AppState, Module};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

pub use model::{
    AlertItem, Monitor, MonitorIncident, NETDIAG_ALERTS, SIEM_EVENTS, SIEM_INCIDENTS, SiemAction,
    SiemIncident,
};

pub const MODULE: Module = Module {
    function: Function::Alerts,
    routes,
};

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(handlers::list_alerts))
        .routes(routes!(handlers::acknowledge_alert))
        .routes(routes!(handlers::list_monitors))
        .routes(routes!(handlers::get_monitor))
        .routes(routes!(handlers::list_monitor_incidents))
}
