//! netops-shared: what every module function and the local process have in common —
//! envelope, error codes, auth and scopes, rate limit, windows, paging and cursors, the route
//! table, configuration, telemetry, and the storage ports with their adapters.

pub mod auth;
pub mod config;
pub mod cursor;
#[cfg(feature = "demo")]
pub mod demo;
pub mod envelope;
pub mod error;
pub mod extract;
pub mod http;
pub mod lambda;
pub mod lang;
pub mod lookup;
pub mod metrics;
pub mod module;
pub mod network;
pub mod paging;
pub mod request;
pub mod state;
pub mod states;
pub mod store;
pub mod telemetry;
pub mod window;
pub mod write;

// The route table and the scopes live in a crate of their own (netops-routes) that the route
// list generator reads without this crate's dependencies; here they keep their paths.
pub use netops_routes as routes;
pub use netops_routes::scope;

pub use auth::Caller;
pub use envelope::{ApiResult, Envelope, Meta, ok};
pub use error::{ApiError, Msg};
pub use extract::{Json, Path, Query};
pub use module::Module;
pub use paging::Page;
pub use request::RequestCtx;
pub use scope::Scope;
pub use state::AppState;
pub use window::Window;
