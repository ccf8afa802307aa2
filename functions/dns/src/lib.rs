//! DNS module (docs/modules.md#dns): resolutions seen by the agents, most-asked domains, threat
//! domains, and the query logs of the DNS servers where their collection is active; how the
//! resolutions collected are written ([`collect`]) and the threats derived from them
//! ([`threats`]).

pub mod collect;
pub mod domains;
mod handlers;
pub mod model;
pub mod threats;

use netops_shared::Module;
use netops_shared::routes::Function;

pub const MODULE: Module = Module {
    function: Function::Dns,
    routes,
};

netops_shared::module_routes! {
    reads: [
        handlers::list_resolutions,
        handlers::list_top_domains,
        handlers::list_threats,
        handlers::list_server_queries,
    ],
}
