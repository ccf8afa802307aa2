//! The body of every function's `main.rs`: telemetry, configuration and state once per cold
//! start, then the module's router under `lambda_http`, with one EMF line per request.

use std::time::Duration;

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
    // The runtime loop, polled again when the Runtime API answered a poll without an
    // invocation. Lambda never does; `cargo lambda watch` does when a function waits longer
    // than its `timeout` (the workspace sets 10 s, so that a request whose function cannot
    // answer gets a 408 rather than a hang): the emulator's timeout covers the poll too and
    // answers it with an empty 408, on which `lambda_runtime` panics. Without this loop every
    // function idle for 10 s under `cargo lambda watch` died and all its later requests got
    // 408. The Lambda packages abort on panic (`panic = "abort"`): nothing changes there.
    // The loop is a local task (its future is not `Send`), whose panic ends the task alone.
    quiet_no_invocation_panics();
    let local = tokio::task::LocalSet::new();
    local
        .run_until(async move {
            loop {
                let started = std::time::Instant::now();
                match tokio::task::spawn_local(lambda_http::run(app.clone())).await {
                    Ok(result) => return result,
                    // A panic at once would be a fault of the loop itself, not an idle poll:
                    // no spin.
                    Err(e) if e.is_panic() && started.elapsed() >= Duration::from_secs(1) => {
                        tracing::debug!("the Runtime API answered a poll without an invocation");
                    }
                    Err(e) => return Err(e.into()),
                }
            }
        })
        .await
}

/// The message with which `lambda_runtime` (1.5) panics when the Runtime API answers a poll for
/// the next invocation without one.
const NO_INVOCATION: &str = "missing lambda-runtime-aws-request-id header";

/// Keeps the panic of an idle poll ([`NO_INVOCATION`]) out of the output; every other panic is
/// reported as before.
fn quiet_no_invocation_panics() {
    let report = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let message = info
            .payload()
            .downcast_ref::<&str>()
            .copied()
            .or_else(|| info.payload().downcast_ref::<String>().map(String::as_str));
        if message != Some(NO_INVOCATION) {
            report(info);
        }
    }));
}
