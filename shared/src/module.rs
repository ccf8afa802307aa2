//! What a module crate contributes to the whole: its routes (with their OpenAPI). Its part of
//! the demo data is in the demo crate (netops-demo), which the local process alone links.

use std::future::Future;
use std::pin::Pin;

use utoipa_axum::router::OpenApiRouter;

use crate::routes::Function;
use crate::state::AppState;

pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

pub struct Module {
    pub function: Function,
    /// Routes relative to the versioned base, with their OpenAPI operations.
    pub routes: fn() -> OpenApiRouter<AppState>,
}
