//! MCP entry point (docs/mcp.md): every JSON read route of the route table as
//! a tool for AI assistants, over stateless streamable HTTP (`POST /mcp`). Tool calls go
//! through the REST routes themselves, so auth, scopes, the rate limit and the write log
//! apply exactly as for REST.

mod call;
mod english;
mod era;
pub mod oauth;
mod prompts;
mod rpc;
pub mod tools;

use netops_shared::routes::Function;
use netops_shared::{AppState, Module};
use utoipa_axum::router::OpenApiRouter;

pub use rpc::PROTOCOL_VERSIONS;

pub const MODULE: Module = Module {
    function: Function::Mcp,
    routes,
};

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().route("/mcp", axum::routing::post(rpc::mcp))
}
