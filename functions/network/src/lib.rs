//! Network infrastructure module (docs/modules.md#network-infrastructure): sites, devices with
//! WAN links and interfaces, device metrics, inter-site VPN tunnels, network alerts and ports.

pub mod collect;
pub mod derive;
mod handlers;
pub mod model;

use netops_shared::Module;
use netops_shared::routes::Function;

pub const MODULE: Module = Module {
    function: Function::Network,
    routes,
};

/// The enums its query parameters refer to by name (parameters do not register their
/// schemas; `meta` names the same enums).
#[derive(utoipa::OpenApi)]
#[openapi(components(schemas(model::AlertStatus)))]
struct NamedParameters;

netops_shared::module_routes! {
    openapi: <NamedParameters as utoipa::OpenApi>::openapi(),
    reads: [
        handlers::list_sites,
        handlers::list_devices,
        handlers::get_device,
        handlers::get_device_metrics,
        handlers::list_tunnels,
        handlers::list_alerts,
        handlers::list_ports,
    ],
}
