//! The body of every function's `main.rs`: telemetry, configuration and state once per cold
//! start, then the module's router under `lambda_http`.

use utoipa_axum::router::OpenApiRouter;

use crate::config::Config;
use crate::state::AppState;

pub use lambda_http::Error;

pub async fn run(routes: OpenApiRouter<AppState>) -> Result<(), lambda_http::Error> {
    let config = Config::from_env()?;
    crate::telemetry::init(config.json_logs);
    let state = AppState::from_config(config).await?;
    let (router, _) = routes.split_for_parts();
    lambda_http::run(crate::http::app(router, state)).await
}
