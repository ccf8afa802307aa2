//! Alerts and availability monitors module (docs/modules.md#alerts-and-availability; states in
//! docs/data.md#shared-states): the unified alert feed, acknowledgement, monitors and their
//! incidents.

pub mod collect;
pub mod derive;
mod feed;
mod handlers;
pub mod model;
pub mod monitors;

use netops_shared::Module;
use netops_shared::routes::Function;

pub use model::{
    AlertItem, Monitor, MonitorIncident, NETDIAG_ALERTS, SIEM_EVENTS, SIEM_INCIDENTS, SiemAction,
    SiemIncident,
};

pub const MODULE: Module = Module {
    function: Function::Alerts,
    routes,
};

netops_shared::module_routes! {
    reads: [
        handlers::list_alerts,
        handlers::list_monitors,
        handlers::get_monitor,
        handlers::list_monitor_incidents,
    ],
    others: [
        handlers::acknowledge_alert,
    ],
}
