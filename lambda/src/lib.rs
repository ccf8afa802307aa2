//! netops-lambda, the body of every function's `main.rs`: telemetry, configuration, the
//! stores and the state once per cold start, then the module's router under `lambda_http`,
//! with one EMF line per request.
//!
//! A function links the DynamoDB adapter, and the Timestream series reads with the feature
//! `timestream`. The embedded SQLite store enters a function binary only through this crate's
//! feature `embedded`, the one switch for running the functions over a local file
//! (`cargo lambda watch`, which the workspace's `[workspace.metadata.lambda.watch]` sets it
//! for). The local process does not link this crate, so what it compiles in (SQLite, the
//! demo) never reaches a function built in the same workspace.

mod cursor_keys;
mod xray;

use std::sync::Arc;
use std::time::Duration;

use netops_geo::GeoDb;
use netops_shared::AppState;
use netops_shared::config::{Config, ConfigError, StoreKind};
use netops_shared::oauth::AccessTokens;
use netops_shared::store::{StoreResult, Stores};
use netops_store_dynamodb::DynamoStore;
use utoipa_axum::router::OpenApiRouter;

pub use lambda_http::Error;

/// The stores the configuration names (`NETOPS_STORE`, and `NETOPS_SERIES_STORE` for series
/// reads, which then replace the main store's): SDK clients are built here, once per cold
/// start. A store this build was compiled without (features `embedded`, `timestream`) is
/// refused at once, naming the variable.
pub async fn open(config: &Config) -> StoreResult<Stores> {
    #[cfg_attr(not(feature = "timestream"), allow(unused_mut))]
    let mut stores = match config.store {
        #[cfg(feature = "embedded")]
        StoreKind::Embedded => Stores::of(netops_store_sqlite::SqliteStore::open_retaining(
            &config.db_path,
            config.retention_days(),
        )?),
        #[cfg(not(feature = "embedded"))]
        StoreKind::Embedded => return Err(not_built("NETOPS_STORE=embedded", "embedded")),
        StoreKind::Dynamodb => {
            Stores::of(DynamoStore::connect(&config.dynamodb, config.retention_days()).await?)
        }
    };
    match &config.timestream {
        #[cfg(feature = "timestream")]
        Some(ts) => netops_store_timestream::read_series_from_timestream(&mut stores, ts).await?,
        #[cfg(not(feature = "timestream"))]
        Some(_) => return Err(not_built("NETOPS_SERIES_STORE=timestream", "timestream")),
        None => {}
    }
    Ok(stores)
}

/// A store the configuration asks for but this build does not include.
#[cfg(not(all(feature = "embedded", feature = "timestream")))]
fn not_built(setting: &str, feature: &str) -> netops_shared::store::StoreError {
    netops_shared::store::StoreError::Backend(format!(
        "{setting}: this build does not include it (cargo feature netops-lambda/{feature})"
    ))
}

pub async fn run(routes: OpenApiRouter<AppState>) -> Result<(), lambda_http::Error> {
    serve(routes, |_| None, |_| Ok(None)).await
}

/// [`run`] for a function that accepts OAuth access tokens through the verifier `oauth` makes
/// of the configuration (the MCP function, netops_shared::oauth).
pub async fn run_accepting(
    routes: OpenApiRouter<AppState>,
    oauth: fn(&Config) -> Option<Arc<dyn AccessTokens>>,
) -> Result<(), lambda_http::Error> {
    serve(routes, oauth, |_| Ok(None)).await
}

/// [`run`] for the function that collects flows: the geolocation file `NETOPS_GEO_FILE` is
/// loaded at start (the layer only this function has, infra/template.yaml), and a file that
/// cannot be read fails the cold start, naming the variable. Only this function links the
/// loader, so no other package grows.
pub async fn run_geolocating(routes: OpenApiRouter<AppState>) -> Result<(), lambda_http::Error> {
    serve(routes, |_| None, open_geo).await
}

/// The geolocation file the configuration names, read and checked.
fn open_geo(config: &Config) -> Result<Option<Arc<GeoDb>>, ConfigError> {
    let Some(path) = &config.geo_file else {
        return Ok(None);
    };
    let started = std::time::Instant::now();
    let geo = GeoDb::open(path).map_err(|e| ConfigError {
        var: "NETOPS_GEO_FILE",
        reason: format!("{}: {e}", path.display()),
    })?;
    tracing::info!(
        bytes = geo.size(),
        ms = started.elapsed().as_millis() as u64,
        "geolocation loaded"
    );
    Ok(Some(Arc::new(geo)))
}

async fn serve(
    routes: OpenApiRouter<AppState>,
    oauth: fn(&Config) -> Option<Arc<dyn AccessTokens>>,
    geo: fn(&Config) -> Result<Option<Arc<GeoDb>>, ConfigError>,
) -> Result<(), lambda_http::Error> {
    let config = Config::from_env()?;
    let access_tokens = oauth(&config);
    netops_shared::telemetry::init(config.json_logs);
    let geo = geo(&config)?;
    let stores = open(&config).await?;
    let (state, ring) = match cursor_keys::KeySource::of(&config).await? {
        // The ring is read beside the first request, not before it (cursor_keys::Ring::first_read).
        Some(source) => {
            let state = AppState::with_cursor_keys(&stores, config, Vec::new())
                .accepting(access_tokens)
                .geolocating(geo);
            let ring = Arc::new(cursor_keys::Ring::new(source, state.cursors.clone()));
            tokio::spawn(ring.clone().first_read());
            (state, Some(ring))
        }
        None => (
            AppState::new(&stores, config)
                .await?
                .accepting(access_tokens)
                .geolocating(geo),
            None,
        ),
    };
    let (router, _) = routes.split_for_parts();
    // The name Lambda gives the function (`<stack>-fleet`), the metrics' `Function` dimension.
    let function: Arc<str> = std::env::var("AWS_LAMBDA_FUNCTION_NAME")
        .unwrap_or_default()
        .into();
    let mut app = netops_shared::http::app(router, state);
    if let Some(ring) = ring {
        app = app.layer(axum::middleware::from_fn_with_state(
            ring,
            cursor_keys::refresh,
        ));
    }
    let mut app = app.layer(axum::middleware::from_fn_with_state(
        function,
        netops_shared::metrics::emit,
    ));
    if let Some(daemon) = xray::Daemon::from_env() {
        app = app.layer(axum::middleware::from_fn_with_state(
            Arc::new(daemon),
            xray::trace,
        ));
    }
    // Outside the router, which sets its own `Content-Length` on every answer.
    let app = tower::ServiceExt::<lambda_http::Request>::map_response(
        app,
        netops_shared::http::conventions::leaving,
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

use netops_shared::pass;

/// The scheduled pass's function (`functions/pass`, on an EventBridge schedule): for each
/// event, one pass over every tenant ([`netops_shared::pass`]) and its EMF line on stdout.
/// A pass that cannot list the tenants fails the invocation (Lambda's `Errors` metric and the
/// function's alarm); a tenant that cannot be read is counted in `PassFailures`. `tasks` run
/// for each tenant besides (the actions' expiry).
pub async fn run_pass(tasks: &'static [pass::Task]) -> Result<(), lambda_http::Error> {
    use lambda_http::{LambdaEvent, service_fn};

    let config = Config::from_env()?;
    netops_shared::telemetry::init(config.json_logs);
    let stores = open(&config).await?;
    let stale_after = chrono::Duration::minutes(i64::from(config.stale_after_minutes));
    let function: Arc<str> = std::env::var("AWS_LAMBDA_FUNCTION_NAME")
        .unwrap_or_default()
        .into();
    lambda_http::lambda_runtime::run(service_fn(move |_: LambdaEvent<serde_json::Value>| {
        let (stores, function) = (stores.clone(), function.clone());
        async move {
            let now = chrono::Utc::now();
            let report = pass::run(&stores, now, stale_after, tasks).await?;
            println!("{}", pass::metrics_line(&function, now, &report));
            Ok::<_, lambda_http::Error>(serde_json::to_value(&report)?)
        }
    }))
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
