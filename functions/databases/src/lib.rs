//! Databases module (docs/modules.md#databases): monitored instances, their metrics
//! (downsampled to at most 500 points), slow and top queries, sessions, blocking chains,
//! alerts, and business checks with their results.

pub mod collect;
pub mod derive;
mod handlers;
pub mod model;

use netops_shared::Module;
use netops_shared::routes::Function;

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

netops_shared::module_routes! {
    openapi: <NamedParameters as utoipa::OpenApi>::openapi(),
    reads: [
        handlers::list_database_instances,
        handlers::get_database_metrics,
        handlers::list_slow_queries,
        handlers::list_top_queries,
        handlers::list_database_sessions,
        handlers::list_blocking_chains,
        handlers::list_database_alerts,
        handlers::list_database_checks,
        handlers::list_database_check_results,
    ],
}
