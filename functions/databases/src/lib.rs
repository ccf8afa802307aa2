//! Databases module (docs/modules.md#databases): monitored instances, their metrics
//! (downsampled to at most 500 points), slow and top queries, sessions, blocking chains,
//! alerts, and business checks with their results.

mod handlers;
pub mod model;

use netops_shared::routes::Function;
use netops_shared::{AppState, Module};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

pub use model::{Check, Instance, MetricPoint};

pub const MODULE: Module = Module {
    function: Function::Databases,
    routes,
};

/// The enums its query parameters refer to by name (parameters do not register their
/// schemas; `meta` names the same enums).
#[derive(utoipa::OpenApi)]
#[openapi(components(schemas(model::AlertStatus, model::TopBy)))]
struct NamedParameters;

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::with_openapi(<NamedParameters as utoipa::OpenApi>::openapi())
        .routes(routes!(handlers::list_database_instances))
        .routes(routes!(handlers::get_database_metrics))
        .routes(routes!(handlers::list_slow_queries))
        .routes(routes!(handlers::list_top_queries))
        .routes(routes!(handlers::list_database_sessions))
        .routes(routes!(handlers::list_blocking_chains))
        .routes(routes!(handlers::list_database_alerts))
        .routes(routes!(handlers::list_database_checks))
        .routes(routes!(handlers::list_database_check_results))
}
