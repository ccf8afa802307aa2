//! What a module crate contributes to the whole: its routes (with their OpenAPI) and its
//! part of the demo data.

use std::future::Future;
use std::pin::Pin;

use utoipa_axum::router::OpenApiRouter;

use crate::demo::SeedCtx;
use crate::routes::Function;
use crate::state::AppState;
use crate::store::StoreResult;

pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

pub struct Module {
    pub function: Function,
    /// Routes relative to the versioned base, with their OpenAPI operations.
    pub routes: fn() -> OpenApiRouter<AppState>,
    /// Writes this module's demo data for one tenant.
    pub seed: for<'a> fn(&'a SeedCtx) -> BoxFuture<'a, StoreResult<()>>,
    /// A background task the local process runs beside the server (e.g. the agent
    /// simulator that completes queued diagnostic actions). Lambda functions run none.
    pub worker: Option<fn(AppState) -> BoxFuture<'static, ()>>,
}
