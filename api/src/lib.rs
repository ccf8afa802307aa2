//! The API as a whole, written once: [`MODULES`], the list of its data modules; [`KINDS`], the
//! kinds of observations collected; [`router`], their routes merged; [`openapi`], the document
//! generated from them and the route table. The local process, the MCP function (which runs
//! every module's router) and the docs function's build script (which writes the document)
//! all take them from here, so no function crate depends on another.

mod collect;
mod modules;
mod openapi;
mod tidy;

use netops_shared::{AppState, Module};
use utoipa_axum::router::OpenApiRouter;

pub use collect::KINDS;
pub use modules::{MODULES, READS};
pub use openapi::openapi;

/// Every data module's routes, merged (the docs and MCP functions' own routes are not among
/// them).
pub fn router() -> OpenApiRouter<AppState> {
    router_of(MODULES)
}

/// Every data module's JSON reads, merged, without their OpenAPI operations: what the MCP
/// function's tool calls go through (its package then carries neither the operations' code nor
/// the handlers no tool calls).
pub fn reads() -> axum::Router<AppState> {
    READS
        .iter()
        .fold(axum::Router::new(), |router, reads| router.merge(reads()))
}

/// The routes of `modules`, merged.
pub fn router_of(modules: &[&Module]) -> OpenApiRouter<AppState> {
    modules.iter().fold(OpenApiRouter::new(), |router, module| {
        router.merge((module.routes)())
    })
}
