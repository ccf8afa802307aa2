//! One telemetry init for every binary and the tests: JSON lines under Lambda, text locally.

use tracing_subscriber::EnvFilter;

/// Installs the global subscriber once; later calls do nothing.
pub fn init(json: bool) {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    // A log that cannot be written (a full disk) is given up: reporting that on stderr
    // itself would panic the request being logged.
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .log_internal_errors(false);
    let _ = if json {
        builder
            .json()
            .with_current_span(true)
            .flatten_event(true)
            .try_init()
    } else {
        builder.compact().try_init()
    };
}
