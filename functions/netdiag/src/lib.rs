//! NetDiag module (docs/modules.md#netdiag): per-machine network diagnostics. Verdicts and
//! their causes, the event feed, followed applications, the PDF report, settings and diagnostic
//! actions, which agents claim and whose results they post ([`agent`]).

mod actions;
pub mod agent;
pub mod collect;
pub mod derive;
mod handlers;
pub mod model;
mod pdf;
mod report;
mod service;
mod settings;

use netops_shared::Module;
use netops_shared::routes::Function;

pub use agent::EXPIRY;
pub use model::{Alert, Settings, Verdict};

pub const MODULE: Module = Module {
    function: Function::Netdiag,
    routes,
};

netops_shared::module_routes! {
    reads: [
        handlers::list_netdiag_machines,
        handlers::get_netdiag_summary,
        handlers::list_netdiag_events,
        handlers::list_netdiag_apps,
    ],
    others: [
        handlers::get_netdiag_report,
        handlers::update_netdiag_settings,
        handlers::start_netdiag_action,
    ],
}
