//! The collection API (docs/collect.md): `POST /collect/{kind}`, the raw observations of one
//! kind per batch, from collect credentials and machines' agent credentials only. The batch is taken in by the kit's shell
//! (`netops_shared::collect`), each kind written by its module's writer, the kinds listed
//! once in netops-api's `KINDS`; the operation is described in the OpenAPI document from
//! that list.

use axum::body::Body;
use axum::extract::State;
use axum::response::Response;
use http::HeaderMap;
use netops_shared::collect::{Posted, take_in};
use netops_shared::routes::Function;
use netops_shared::{AppState, Caller, Module, Path, RequestCtx};
use utoipa_axum::router::OpenApiRouter;

pub const MODULE: Module = Module {
    function: Function::Collect,
    routes,
};

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().route("/collect/{kind}", axum::routing::post(collect))
}

async fn collect(
    State(state): State<AppState>,
    caller: Caller,
    ctx: RequestCtx,
    Path(kind): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let posted = Posted {
        kind: &kind,
        request_id: &ctx.request_id,
        headers: &headers,
        body,
    };
    take_in(&state, &caller, netops_api::KINDS, posted).await
}
