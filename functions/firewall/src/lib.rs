//! Firewall module (docs/modules.md#firewall): firewalls and gateways relayed by site agents,
//! events parsed from their logs (with directory-controller correlation), IPFIX / NetFlow v9
//! traffic, threats and the perimeter report; how syslog lines collected are written
//! ([`collect`]).

pub mod collect;
pub mod correlate;
mod handlers;
pub mod model;
pub mod parse;
pub mod report;
pub mod traffic;

use netops_shared::Module;
use netops_shared::routes::Function;

pub const MODULE: Module = Module {
    function: Function::Firewall,
    routes,
};

netops_shared::module_routes! {
    reads: [
        handlers::list_devices,
        handlers::list_events,
        handlers::get_traffic,
        handlers::list_threats,
        handlers::get_report,
    ],
}
