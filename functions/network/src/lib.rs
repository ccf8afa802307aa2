//! Network infrastructure module (docs/modules.md#network-infrastructure): sites, devices with
//! WAN links and interfaces, device metrics, inter-site VPN tunnels, network alerts and ports.

mod handlers;
pub mod model;

use netops_shared::routes::Function;
use netops_shared::{AppState, Module};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

pub const MODULE: Module = Module {
    function: Function::Network,
    routes,
};

/// The enums its query parameters refer to by name (parameters do not register their
/// schemas; `meta` names the same enums).
#[derive(utoipa::OpenApi)]
#[openapi(components(schemas(model::AlertStatus)))]
struct NamedParameters;

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::with_openapi(<NamedParameters as utoipa::OpenApi>::openapi())
        .routes(routes!(handlers::list_sites))
        .routes(routes!(handlers::list_devices))
        .routes(routes!(handlers::get_device))
        .routes(routes!(handlers::get_device_metrics))
        .routes(routes!(handlers::list_tunnels))
        .routes(routes!(handlers::list_alerts))
        .routes(routes!(handlers::list_ports))
}
