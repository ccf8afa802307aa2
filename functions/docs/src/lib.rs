//! Self-description (docs/modules.md#self-description): the OpenAPI document, generated from
//! the code of every module when this crate is built, and the documentation page.

mod page;

use netops_shared::routes::Function;
use netops_shared::{AppState, Module};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

/// The OpenAPI document as `netops_api::openapi` makes it, written when this crate is built
/// (`build.rs`): the docs function serves it without linking the module crates, which keeps
/// its package small.
pub static OPENAPI_JSON: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/openapi.json"));

pub const MODULE: Module = Module {
    function: Function::Docs,
    routes,
};

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(page::get_openapi))
        .routes(routes!(page::get_docs))
        .routes(routes!(page::get_docs_asset))
}
