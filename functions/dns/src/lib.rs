//! DNS module (spec 4.12).
//!
//! Not yet implemented: its routes answer 404 until the module lands.

use netops_shared::routes::Function;
use netops_shared::{AppState, Module};
use utoipa_axum::router::OpenApiRouter;

pub const MODULE: Module = Module {
    function: Function::Dns,
    routes,
    seed: |_| Box::pin(async { Ok(()) }),
    worker: None,
};

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
}
