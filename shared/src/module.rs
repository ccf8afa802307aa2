//! What a module crate contributes to the whole: its routes (with their OpenAPI, and its JSON
//! reads without it). Its part of
//! the demo data is in the demo crate (netops-demo), which the local process alone links.

use std::future::Future;
use std::pin::Pin;

use utoipa_axum::router::OpenApiRouter;

use crate::routes::Function;
use crate::state::AppState;

pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

pub struct Module {
    pub function: Function,
    /// Routes relative to the versioned base, with their OpenAPI operations. Its JSON reads
    /// without them are its crate's `reads` ([`module_routes`]), kept apart from this table:
    /// code that takes them links no OpenAPI operation.
    pub routes: fn() -> OpenApiRouter<AppState>,
}

/// A module's handlers, listed once: its JSON reads (the routes MCP tools call), then the
/// others (writes, documents). Defines `routes()`, every route with its OpenAPI operation, and
/// `reads()`, the JSON reads alone as a plain router without OpenAPI, at the paths of their
/// `#[route]` (the MCP function's in-process tool calls: its package then carries neither the
/// operations' code nor the handlers no tool calls, such as the PDF report's).
///
/// ```text
/// netops_shared::module_routes! {
///     openapi: <NamedParameters as utoipa::OpenApi>::openapi(),   // optional: a base document
///     reads: [handlers::list_alerts, handlers::get_monitor],
///     others: [handlers::acknowledge_alert],
/// }
/// ```
///
/// The crate needs `axum`, `utoipa` and `utoipa-axum` among its dependencies.
#[macro_export]
macro_rules! module_routes {
    (
        $(openapi: $base:expr,)?
        reads: [$($rm:ident :: $rh:ident),* $(,)?]
        $(, others: [$($om:ident :: $oh:ident),* $(,)?])? $(,)?
    ) => {
        /// Every route of the module, with its OpenAPI operation.
        pub fn routes() -> ::utoipa_axum::router::OpenApiRouter<$crate::AppState> {
            #[allow(unused_mut, unused_assignments)]
            let mut base = ::utoipa::openapi::OpenApi::default();
            $(base = $base;)?
            ::utoipa_axum::router::OpenApiRouter::with_openapi(base)
                $(.routes(::utoipa_axum::routes!($rm::$rh)))*
                $($(.routes(::utoipa_axum::routes!($om::$oh)))*)?
        }

        /// The module's JSON reads without their OpenAPI operations.
        pub fn reads() -> ::axum::Router<$crate::AppState> {
            ::axum::Router::new()
                $(.route(
                    &$crate::module::read_path(::utoipa_axum::paste! {
                        <$rm::[<__path_ $rh>] as ::utoipa::Path>::path()
                    }),
                    ::axum::routing::get($rm::$rh),
                ))*
        }
    };
}

/// The path of a handler listed among a module's reads, checked (in debug builds) to be a JSON
/// read of the route table.
pub fn read_path(path: String) -> String {
    debug_assert!(
        matches!(
            crate::routes::find(&http::Method::GET, &path),
            crate::routes::Match::Found(r) if r.kind == crate::routes::Kind::Read
        ),
        "{path} is listed among the reads but is no JSON read of the route table"
    );
    path
}
