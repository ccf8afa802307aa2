//! Typed configuration, read once from the environment; a bad value fails fast naming
//! its variable.

use std::path::PathBuf;

#[derive(Debug, Clone)]
pub struct Config {
    /// `NETOPS_DB`: the embedded store's file.
    pub db_path: PathBuf,
    /// `NETOPS_RATE_LIMIT`: calls per window per token (600).
    pub rate_limit: u64,
    /// `NETOPS_RATE_WINDOW_SECS`: the rate-limit window (60).
    pub rate_window_secs: i64,
    /// `NETOPS_CURSOR_SECRET`: the cursor signing key; generated and kept in the store when unset.
    pub cursor_secret: Option<Vec<u8>>,
    /// `NETOPS_LOG_FORMAT`: `json` (default under Lambda) or `text`.
    pub json_logs: bool,
}

#[derive(Debug, thiserror::Error)]
#[error("configuration variable {var}: {reason}")]
pub struct ConfigError {
    pub var: &'static str,
    pub reason: String,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            db_path: PathBuf::from("netops.db"),
            rate_limit: 600,
            rate_window_secs: 60,
            cursor_secret: None,
            json_logs: false,
        }
    }
}

fn var(name: &'static str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

fn parse<T: std::str::FromStr>(name: &'static str) -> Result<Option<T>, ConfigError> {
    var(name)
        .map(|v| {
            v.parse().map_err(|_| ConfigError {
                var: name,
                reason: format!("'{v}' is not a valid value"),
            })
        })
        .transpose()
}

impl Config {
    pub fn from_env() -> Result<Config, ConfigError> {
        let d = Config::default();
        let json_logs = match var("NETOPS_LOG_FORMAT").as_deref() {
            None => var("AWS_LAMBDA_FUNCTION_NAME").is_some(),
            Some("json") => true,
            Some("text") => false,
            Some(other) => {
                return Err(ConfigError {
                    var: "NETOPS_LOG_FORMAT",
                    reason: format!("'{other}' is neither json nor text"),
                });
            }
        };
        let rate_limit = parse("NETOPS_RATE_LIMIT")?.unwrap_or(d.rate_limit);
        let rate_window_secs = parse("NETOPS_RATE_WINDOW_SECS")?.unwrap_or(d.rate_window_secs);
        if rate_limit == 0 || rate_window_secs <= 0 {
            return Err(ConfigError {
                var: "NETOPS_RATE_LIMIT",
                reason: "limit and window must be positive".into(),
            });
        }
        Ok(Config {
            db_path: var("NETOPS_DB").map(PathBuf::from).unwrap_or(d.db_path),
            rate_limit,
            rate_window_secs,
            cursor_secret: var("NETOPS_CURSOR_SECRET").map(String::into_bytes),
            json_logs,
        })
    }
}
