//! How a deployment reaches its stores: which adapter, where, how long data is kept. Plain
//! values, read from the environment by the process's configuration (netops-shared's
//! `Config`).

/// Which adapter holds the data (`NETOPS_STORE`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StoreKind {
    /// One SQLite file (the default).
    #[default]
    Embedded,
    /// DynamoDB tables (the AWS deployment).
    Dynamodb,
}

impl StoreKind {
    pub fn parse(s: &str) -> Option<StoreKind> {
        match s {
            "embedded" => Some(StoreKind::Embedded),
            "dynamodb" => Some(StoreKind::Dynamodb),
            _ => None,
        }
    }

    /// The name [`StoreKind::parse`] reads.
    pub fn as_str(self) -> &'static str {
        match self {
            StoreKind::Embedded => "embedded",
            StoreKind::Dynamodb => "dynamodb",
        }
    }
}

/// Days a write-log entry is kept by default (docs/writes.md#the-write-log).
pub const DEFAULT_WRITE_LOG_DAYS: u32 = 400;

/// Days measurements, events and rollups are kept by default on DynamoDB
/// (`NETOPS_RETENTION_DAYS`).
pub const DEFAULT_RETENTION_DAYS: u32 = 400;

/// Days they are kept by default in the embedded store: the longest window a route allows
/// (lockouts and account changes, 90 days, docs/modules.md#route-table), so every window can be
/// full, and no more, so that a laptop's file levels off after three months (bench/live-results.md) instead of
/// growing for over a year with the live demo data.
pub const DEFAULT_EMBEDDED_RETENTION_DAYS: u32 = 90;

/// Where the Timestream series live (the adapter, feature `timestream`, is
/// netops-store-timestream).
#[derive(Debug, Clone)]
pub struct TimestreamConfig {
    pub database: String,
    /// The series read from Timestream (one table each, named like the series).
    pub series: Vec<String>,
    pub endpoint: Option<String>,
    pub region: Option<String>,
}

/// How the adapter reaches its tables.
#[derive(Debug, Clone)]
pub struct DynamoConfig {
    /// Table names are `{prefix}control` and `{prefix}data`.
    pub table_prefix: String,
    /// Endpoint override (a DynamoDB-protocol server for tests); the regional endpoint otherwise.
    pub endpoint: Option<String>,
    /// Region; the SDK's usual sources (`AWS_REGION`, profile) when unset.
    pub region: Option<String>,
    /// How long a token read stays cached in this instance (0 disables the cache).
    pub token_cache_secs: u64,
    /// The most one DynamoDB operation may take, retries included (each attempt half of it):
    /// past it the request answers 503 rather than wait ([`STORE_TIMEOUT_SECS`]).
    pub timeout_secs: u64,
}

/// The most one operation of an AWS store (DynamoDB, Timestream) may take by default,
/// retries included: past it the request answers 503 rather than wait, well within the
/// functions' 10 s.
pub const STORE_TIMEOUT_SECS: u64 = 6;

impl Default for DynamoConfig {
    fn default() -> Self {
        Self {
            table_prefix: "netops-".into(),
            endpoint: None,
            region: None,
            token_cache_secs: 30,
            timeout_secs: STORE_TIMEOUT_SECS,
        }
    }
}
