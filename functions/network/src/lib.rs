//! Network infrastructure module (spec 4.14).
//!
//! Not yet implemented: its routes answer 404 until the module lands.

use netops_shared::routes::Function;
use netops_shared::{AppState, Module};
use utoipa_axum::router::OpenApiRouter;

pub const MODULE: Module = Module {
    function: Function::Network,
    routes,
    seed: |_| Box::pin(async { Ok(()) }),
    worker: None,
};

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
}
