//! Shared-file access module (docs/modules.md#files): who read, created, modified, deleted or
//! renamed what on the file servers, and a summary of the activity.

pub mod activity;
pub mod collect;
mod handlers;
pub mod model;

use netops_shared::Module;
use netops_shared::routes::Function;

pub const MODULE: Module = Module {
    function: Function::Files,
    routes,
};

netops_shared::module_routes! {
    reads: [
        handlers::list_events,
        handlers::get_summary,
    ],
}
