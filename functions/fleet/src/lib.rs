//! Fleet module (docs/modules.md#fleet): the token's identity and the agent-equipped machines.

pub mod collect;
mod handlers;
pub mod model;
mod silence;

use netops_shared::Module;
use netops_shared::routes::Function;

pub use model::{Identity, Machine};
pub use silence::{OFFLINE, SILENT_MINUTES};

pub const MODULE: Module = Module {
    function: Function::Fleet,
    routes,
};

netops_shared::module_routes! {
    reads: [
        handlers::get_me,
        handlers::list_machines,
        handlers::get_machine,
    ],
}
