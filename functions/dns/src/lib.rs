//! DNS module (docs/modules.md#dns): resolutions seen by the agents, most-asked domains, threat
//! domains, and the query logs of the DNS servers where their collection is active; how the
//! resolutions collected are written ([`collect`]).

pub mod collect;
pub mod domains;
mod handlers;
pub mod model;

use netops_shared::routes::Function;
use netops_shared::{AppState, Module};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

pub const MODULE: Module = Module {
    function: Function::Dns,
    routes,
};

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(handlers::list_resolutions))
        .routes(routes!(handlers::list_top_domains))
        .routes(routes!(handlers::list_threats))
        .routes(routes!(handlers::list_server_queries))
}
