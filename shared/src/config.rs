//! Typed configuration, read once from the environment; a bad value fails fast naming
//! its variable.

use std::path::PathBuf;

use crate::oauth::OAuthConfig;

pub use netops_store::config::{
    DEFAULT_EMBEDDED_RETENTION_DAYS, DEFAULT_RETENTION_DAYS, DEFAULT_WRITE_LOG_DAYS, DynamoConfig,
    STORE_TIMEOUT_SECS, StoreKind, TimestreamConfig,
};

/// How long a tenant may send nothing before the scheduled pass counts it stale, by default
/// (`NETOPS_STALE_AFTER_MINUTES`).
pub const DEFAULT_STALE_AFTER_MINUTES: u32 = 60;

/// The agent loop's timings (docs/agent.md#timings), in seconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AgentTimings {
    /// How often an agent syncs (`NETOPS_AGENT_POLL_SECONDS`, 30; 1 to 30): the agents learn
    /// it from each sync.
    pub poll_secs: u32,
    /// How long a queued action waits for its agent's claim before it expires
    /// (`NETOPS_ACTION_CLAIM_SECONDS`, 300).
    pub claim_secs: u32,
    /// How long a claim holds an action before its result must be in
    /// (`NETOPS_ACTION_LEASE_SECONDS`, 180).
    pub lease_secs: u32,
    /// How often `netops serve` runs the scheduled pass (`NETOPS_PASS_EVERY_SECONDS`, 60; on
    /// AWS the template's schedule, every minute).
    pub pass_every_secs: u32,
}

impl Default for AgentTimings {
    fn default() -> Self {
        Self {
            poll_secs: 30,
            claim_secs: 300,
            lease_secs: 180,
            pass_every_secs: 60,
        }
    }
}

impl AgentTimings {
    fn from_env() -> Result<Self, ConfigError> {
        let d = Self::default();
        let bounded = |var: &'static str, default: u32, max: u32| -> Result<u32, ConfigError> {
            let v = parse::<u32>(var)?.unwrap_or(default);
            if v == 0 || v > max {
                return Err(ConfigError {
                    var,
                    reason: format!("{v} is not between 1 and {max} seconds"),
                });
            }
            Ok(v)
        };
        Ok(Self {
            poll_secs: bounded("NETOPS_AGENT_POLL_SECONDS", d.poll_secs, 30)?,
            claim_secs: bounded("NETOPS_ACTION_CLAIM_SECONDS", d.claim_secs, 86_400)?,
            lease_secs: bounded("NETOPS_ACTION_LEASE_SECONDS", d.lease_secs, 3_600)?,
            pass_every_secs: bounded("NETOPS_PASS_EVERY_SECONDS", d.pass_every_secs, 3_600)?,
        })
    }
}

#[derive(Debug, Clone)]
pub struct Config {
    /// `NETOPS_DB`: the embedded store's file.
    pub db_path: PathBuf,
    /// `NETOPS_RATE_LIMIT`: calls per window per token (600).
    pub rate_limit: u64,
    /// `NETOPS_RATE_WINDOW_SECS`: the rate-limit window (60).
    pub rate_window_secs: i64,
    /// `NETOPS_CURSOR_SECRET`: the cursor signing key; generated and kept in the store when
    /// unset (and no secret ARN is given).
    pub cursor_secret: Option<Vec<u8>>,
    /// `NETOPS_CURSOR_SECRET_ARN`: the Secrets Manager secret whose versions are the cursor
    /// key ring (a function reads it at start and again every few minutes; infra/README.md,
    /// "Rotating the cursor key"), with `NETOPS_SECRETS_ENDPOINT` to reach another endpoint
    /// than AWS's (tests).
    pub cursor_secret_arn: Option<String>,
    pub secrets_endpoint: Option<String>,
    /// `NETOPS_CURSOR_REFRESH_SECS`: how often a warm instance reads that ring again (300).
    pub cursor_refresh_secs: u64,
    /// `NETOPS_CURSOR_VALID_HOURS`: how long a cursor stays valid (24, at most 720).
    pub cursor_valid_hours: u32,
    /// `NETOPS_WRITE_LOG_DAYS`: write-log entries expire this many days after their time
    /// (400; DynamoDB TTL, swept in the SQLite file).
    pub write_log_days: u32,
    /// `NETOPS_STALE_AFTER_MINUTES`: a tenant none of whose collected kinds arrived for this
    /// long is stale for the scheduled pass (60; docs/collect.md#the-scheduled-pass).
    pub stale_after_minutes: u32,
    /// `NETOPS_GEO_FILE`: the geolocation file (`netops geo refresh`) a process that
    /// collects flows loads at start (docs/geolocation.md); none: the collect function
    /// stores public addresses with an unknown country and operator, the local process uses
    /// its checked-in sample.
    pub geo_file: Option<PathBuf>,
    /// The agent loop's timings (docs/agent.md#timings).
    pub agent: AgentTimings,
    /// `NETOPS_RETENTION_DAYS`: measurements, events and rollups older than this many days
    /// leave the store (DynamoDB TTL, swept in the SQLite file) and no window reaches past
    /// it. `None`: the store's default ([`Config::retention_days`]).
    pub retention_days: Option<u32>,
    /// `NETOPS_LOG_FORMAT`: `json` (default under Lambda) or `text`.
    pub json_logs: bool,
    /// `NETOPS_STORE`: `embedded` (default) or `dynamodb`.
    pub store: StoreKind,
    /// `NETOPS_DYNAMODB_TABLE_PREFIX` (`netops-`), `NETOPS_DYNAMODB_ENDPOINT`,
    /// `NETOPS_AWS_REGION`, `NETOPS_TOKEN_CACHE_SECS` (30, at most 30),
    /// `NETOPS_DYNAMODB_TIMEOUT_SECS` (6): the DynamoDB adapter.
    pub dynamodb: DynamoConfig,
    /// `NETOPS_CORS_ORIGINS`: the origins whose pages may call the API from a browser
    /// (comma-separated, each `scheme://host[:port]`, lowercase); empty: CORS is off.
    pub cors_origins: Vec<String>,
    /// `NETOPS_SERIES_STORE=timestream` with `NETOPS_TIMESTREAM_DATABASE`,
    /// `NETOPS_TIMESTREAM_SERIES` and `NETOPS_TIMESTREAM_ENDPOINT`: series reads from
    /// Timestream for LiveAnalytics (never the default).
    pub timestream: Option<TimestreamConfig>,
    /// `NETOPS_OAUTH_ISSUER` with `NETOPS_OAUTH_RESOURCE` (and the claims' names): the
    /// authorization server whose access tokens the MCP endpoint accepts beside `nop_` tokens
    /// ([`OAuthConfig`]); none by default.
    pub oauth: Option<OAuthConfig>,
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
            cursor_secret_arn: None,
            secrets_endpoint: None,
            cursor_refresh_secs: 300,
            cursor_valid_hours: crate::cursor::DEFAULT_VALID_HOURS,
            write_log_days: DEFAULT_WRITE_LOG_DAYS,
            stale_after_minutes: DEFAULT_STALE_AFTER_MINUTES,
            agent: AgentTimings::default(),
            retention_days: None,
            geo_file: None,
            json_logs: false,
            store: StoreKind::Embedded,
            dynamodb: DynamoConfig::default(),
            cors_origins: Vec::new(),
            timestream: None,
            oauth: None,
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
    /// The days data is kept: `NETOPS_RETENTION_DAYS`, else the default of the store
    /// ([`DEFAULT_EMBEDDED_RETENTION_DAYS`] in the embedded store, [`DEFAULT_RETENTION_DAYS`]
    /// on DynamoDB).
    pub fn retention_days(&self) -> u32 {
        self.retention_days.unwrap_or(match self.store {
            StoreKind::Embedded => DEFAULT_EMBEDDED_RETENTION_DAYS,
            StoreKind::Dynamodb => DEFAULT_RETENTION_DAYS,
        })
    }

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
        let cursor_valid_hours =
            parse("NETOPS_CURSOR_VALID_HOURS")?.unwrap_or(d.cursor_valid_hours);
        if !(1..=720).contains(&cursor_valid_hours) {
            return Err(ConfigError {
                var: "NETOPS_CURSOR_VALID_HOURS",
                reason: format!("{cursor_valid_hours} is not between 1 and 720 hours"),
            });
        }
        if rate_limit == 0 || rate_window_secs <= 0 {
            return Err(ConfigError {
                var: "NETOPS_RATE_LIMIT",
                reason: "limit and window must be positive".into(),
            });
        }
        let write_log_days = parse("NETOPS_WRITE_LOG_DAYS")?.unwrap_or(d.write_log_days);
        if write_log_days == 0 {
            return Err(ConfigError {
                var: "NETOPS_WRITE_LOG_DAYS",
                reason: "entries must be kept at least one day".into(),
            });
        }
        let stale_after_minutes =
            parse("NETOPS_STALE_AFTER_MINUTES")?.unwrap_or(d.stale_after_minutes);
        if stale_after_minutes == 0 {
            return Err(ConfigError {
                var: "NETOPS_STALE_AFTER_MINUTES",
                reason: "a tenant must be given at least a minute".into(),
            });
        }
        let retention_days = parse("NETOPS_RETENTION_DAYS")?.or(d.retention_days);
        if retention_days == Some(0) {
            return Err(ConfigError {
                var: "NETOPS_RETENTION_DAYS",
                reason: "data must be kept at least one day".into(),
            });
        }
        let store = match var("NETOPS_STORE") {
            None => d.store,
            Some(v) => StoreKind::parse(&v).ok_or_else(|| ConfigError {
                var: "NETOPS_STORE",
                reason: format!("'{v}' is neither embedded nor dynamodb"),
            })?,
        };
        let dd = DynamoConfig::default();
        let token_cache_secs = parse("NETOPS_TOKEN_CACHE_SECS")?.unwrap_or(dd.token_cache_secs);
        if token_cache_secs > 30 {
            return Err(ConfigError {
                var: "NETOPS_TOKEN_CACHE_SECS",
                reason: "a revocation must take effect within 30 s: at most 30".into(),
            });
        }
        let dynamodb = DynamoConfig {
            table_prefix: var("NETOPS_DYNAMODB_TABLE_PREFIX").unwrap_or(dd.table_prefix),
            endpoint: var("NETOPS_DYNAMODB_ENDPOINT"),
            region: var("NETOPS_AWS_REGION"),
            token_cache_secs,
            timeout_secs: parse("NETOPS_DYNAMODB_TIMEOUT_SECS")?
                .filter(|s| *s > 0)
                .unwrap_or(dd.timeout_secs),
        };
        let timestream = match var("NETOPS_SERIES_STORE").as_deref() {
            None | Some("default") => None,
            Some("timestream") => Some(TimestreamConfig {
                database: var("NETOPS_TIMESTREAM_DATABASE").ok_or_else(|| ConfigError {
                    var: "NETOPS_TIMESTREAM_DATABASE",
                    reason: "required with NETOPS_SERIES_STORE=timestream".into(),
                })?,
                series: var("NETOPS_TIMESTREAM_SERIES")
                    .map(|v| v.split(',').map(|s| s.trim().to_owned()).filter(|s| !s.is_empty()).collect())
                    .ok_or_else(|| ConfigError {
                        var: "NETOPS_TIMESTREAM_SERIES",
                        reason: "required with NETOPS_SERIES_STORE=timestream: the series read from Timestream, comma-separated".into(),
                    })?,
                endpoint: var("NETOPS_TIMESTREAM_ENDPOINT"),
                region: var("NETOPS_AWS_REGION"),
            }),
            Some(other) => {
                return Err(ConfigError {
                    var: "NETOPS_SERIES_STORE",
                    reason: format!("'{other}' is neither default nor timestream"),
                });
            }
        };
        let cors_origins = match var("NETOPS_CORS_ORIGINS") {
            None => Vec::new(),
            Some(v) => parse_origins(&v).map_err(|reason| ConfigError {
                var: "NETOPS_CORS_ORIGINS",
                reason,
            })?,
        };
        let oauth = oauth_from_env()?;
        Ok(Config {
            oauth,
            store,
            dynamodb,
            cors_origins,
            timestream,
            db_path: var("NETOPS_DB").map(PathBuf::from).unwrap_or(d.db_path),
            rate_limit,
            rate_window_secs,
            cursor_secret: var("NETOPS_CURSOR_SECRET").map(String::into_bytes),
            cursor_secret_arn: var("NETOPS_CURSOR_SECRET_ARN"),
            secrets_endpoint: var("NETOPS_SECRETS_ENDPOINT"),
            cursor_refresh_secs: parse("NETOPS_CURSOR_REFRESH_SECS")?
                .filter(|s| *s > 0)
                .unwrap_or(d.cursor_refresh_secs),
            cursor_valid_hours,
            write_log_days,
            stale_after_minutes,
            agent: AgentTimings::from_env()?,
            retention_days,
            geo_file: var("NETOPS_GEO_FILE").map(PathBuf::from),
            json_logs,
        })
    }
}

/// `NETOPS_OAUTH_*` ([`OAuthConfig`]): none without an issuer; with one, the resource is
/// required.
fn oauth_from_env() -> Result<Option<OAuthConfig>, ConfigError> {
    let Some(issuer) = var("NETOPS_OAUTH_ISSUER") else {
        return Ok(None);
    };
    let config = OAuthConfig {
        issuer,
        resource: var("NETOPS_OAUTH_RESOURCE").ok_or_else(|| ConfigError {
            var: "NETOPS_OAUTH_RESOURCE",
            reason: "required with NETOPS_OAUTH_ISSUER: the MCP endpoint's URL, the audience of its tokens".into(),
        })?,
        tenant_claim: var("NETOPS_OAUTH_TENANT_CLAIM").unwrap_or_else(|| "tenant".into()),
        scope_claim: var("NETOPS_OAUTH_SCOPE_CLAIM").unwrap_or_else(|| "scope".into()),
        scope_prefix: var("NETOPS_OAUTH_SCOPE_PREFIX").unwrap_or_default(),
        jwks_refetch_secs: parse("NETOPS_OAUTH_JWKS_REFETCH_SECS")?
            .unwrap_or(crate::oauth::JWKS_REFETCH_SECS),
    };
    if !(1..=3600).contains(&config.jwks_refetch_secs) {
        return Err(ConfigError {
            var: "NETOPS_OAUTH_JWKS_REFETCH_SECS",
            reason: "from 1 to 3600 seconds".into(),
        });
    }
    config
        .validate()
        .map_err(|(var, reason)| ConfigError { var, reason })?;
    Ok(Some(config))
}

/// The origins of `NETOPS_CORS_ORIGINS`, comma-separated, each as a browser sends it in
/// `Origin` (lowercased here): `http` or `https`, a host, an optional port that is not the
/// scheme's default, and nothing else. A browser compares origins byte for byte, so a path,
/// a trailing slash or a default port would never match: they are refused rather than
/// silently never allowing anything. `*` is refused too: the list is an allow-list.
pub fn parse_origins(value: &str) -> Result<Vec<String>, String> {
    let mut origins: Vec<String> = Vec::new();
    for raw in value.split(',').map(str::trim).filter(|o| !o.is_empty()) {
        let origin = raw.to_ascii_lowercase();
        let bad = |why: &str| Err(format!("'{raw}' is not an origin: {why}"));
        if origin == "*" || origin == "null" {
            return bad("list each origin (scheme://host[:port]) allowed to call the API");
        }
        let Some((scheme, authority)) = origin.split_once("://") else {
            return bad("write it scheme://host[:port], e.g. https://dashboard.example.com");
        };
        let default_port = match scheme {
            "https" => "443",
            "http" => "80",
            _ => return bad("the scheme is http or https"),
        };
        if authority.contains(['/', '?', '#', '@']) {
            return bad("an origin has no path (not even a trailing /), query or user");
        }
        let (host, port) = match authority.rsplit_once(':') {
            // An IPv6 address without a port: its colons are inside the brackets.
            Some((host, port)) if !port.contains(']') => (host, Some(port)),
            _ => (authority, None),
        };
        let host_ok = !host.is_empty()
            && (host.starts_with('[') && host.ends_with(']')
                || host
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.'));
        if !host_ok || host.contains('*') {
            return bad("the host is a name or an address, without wildcards");
        }
        match port {
            Some(p) if p == default_port => {
                return bad(&format!(
                    "browsers leave out the default port {p}: write {scheme}://{host}"
                ));
            }
            Some(p) if p.parse::<u16>().map_or(true, |n| n == 0) || p.starts_with('0') => {
                return bad("the port is a number from 1 to 65535");
            }
            _ => {}
        }
        if !origins.contains(&origin) {
            origins.push(origin);
        }
    }
    Ok(origins)
}

#[cfg(test)]
mod tests {
    use super::parse_origins;

    #[test]
    fn cors_origins_are_exact_browser_origins() {
        assert_eq!(
            parse_origins(
                " https://Dash.Example.com , http://localhost:5173,https://dash.example.com,"
            )
            .expect("origins"),
            ["https://dash.example.com", "http://localhost:5173"]
        );
        assert_eq!(
            parse_origins("http://[::1]:8000, http://127.0.0.1:9").expect("origins"),
            ["http://[::1]:8000", "http://127.0.0.1:9"]
        );
        assert!(parse_origins("").expect("empty").is_empty());
        for bad in [
            "*",
            "null",
            "dash.example.com",
            "ftp://dash.example.com",
            "https://dash.example.com/",
            "https://dash.example.com/app",
            "https://dash.example.com:443",
            "http://localhost:80",
            "http://localhost:0",
            "http://localhost:99999",
            "http://localhost:08080",
            "https://*.example.com",
            "https://user@dash.example.com",
            "https://",
            "https://dash example.com",
        ] {
            let e = parse_origins(bad).expect_err(bad);
            assert!(e.contains("is not an origin"), "{bad}: {e}");
        }
    }
}
