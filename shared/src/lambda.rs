//! The body of every function's `main.rs`: telemetry, configuration and state once per cold
//! start, then the module's router under `lambda_http`, with one EMF line per request.

use utoipa_axum::router::OpenApiRouter;

use crate::config::Config;
use crate::state::AppState;

pub use lambda_http::Error;

pub async fn run(routes: OpenApiRouter<AppState>) -> Result<(), lambda_http::Error> {
    let config = Config::from_env()?;
    crate::telemetry::init(config.json_logs);
    let state = AppState::from_config(config).await?;
    let (router, _) = routes.split_for_parts();
    // The name Lambda gives the function (`<stack>-fleet`), the metrics' `Function` dimension.
    let function: std::sync::Arc<str> = std::env::var("AWS_LAMBDA_FUNCTION_NAME")
        .unwrap_or_default()
        .into();
    let app = crate::http::app(router, state).layer(axum::middleware::from_fn_with_state(
        function,
        crate::metrics::emit,
    ));
    // Outside the router, which sets its own `Content-Length` on every answer.
    let app = tower::ServiceExt::<lambda_http::Request>::map_response(
        app,
        crate::http::conventions::leaving,
    );
    lambda_http::run(app).await
}
