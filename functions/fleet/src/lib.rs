//! Fleet module (docs/modules.md#fleet): the token's identity and the agent-equipped machines.

pub mod collect;
mod handlers;
pub mod model;

use netops_shared::routes::Function;
use netops_shared::{AppState, Module};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

pub use model::{Identity, Machine};

pub const MODULE: Module = Module {
    function: Function::Fleet,
    routes,
};

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(handlers::get_me))
        .routes(routes!(handlers::list_machines))
        .routes(routes!(handlers::get_machine))
}
