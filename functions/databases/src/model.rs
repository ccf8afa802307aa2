//! Databases DTOs (docs/modules.md#databases).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

pub use netops_domain::states::{AlertState, Criticality};

/// Instance documents (with the monitoring login and password, never returned), keyed by
/// the zero-padded id.
pub const INSTANCES: &str = "db_instances";
/// Five-minute metric samples, partition = instance id (kept [`RAW_DAYS`] days).
pub const METRICS: &str = "db_metrics";
/// Hourly metric rollups live in `db_metrics/<instance id>`.
pub const METRIC_ROLLUPS: &str = "db_metrics";
/// Hourly query-stat rollups live in `db_query_stats/<instance id>`, key = query hash.
pub const QUERY_STATS: &str = "db_query_stats";
pub const SLOW_QUERIES: &str = "db_slow_queries";
pub const SESSIONS: &str = "db_sessions";
pub const BLOCKING: &str = "db_blocking";
pub const ALERTS: &str = "db_alerts";
pub const CHECKS: &str = "db_checks";
pub const CHECK_RESULTS: &str = "db_check_results";

/// Days of five-minute samples kept; older windows read the hourly rollups.
pub const RAW_DAYS: i64 = 2;
/// At most this many metric points (`get_database_metrics` in the OpenAPI description).
pub const MAX_POINTS: i64 = 500;
/// Lists without paging return at most this many items; `meta.truncated` says so.
pub const UNPAGED_MAX: usize = 1000;

pub fn key(id: i64) -> String {
    format!("{id:012}")
}

pub fn rollup_series(base: &str, instance: i64) -> String {
    format!("{base}/{instance}")
}

/// A monitored database instance. The login and password the collector uses are stored
/// with it but are not part of this type, so they can never be returned.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Instance {
    pub id: i64,
    #[schema(example = "PAR-SRV-0002\\SQLPROD")]
    pub name: String,
    /// Machine hosting the instance (a hostname of `/machines`).
    #[schema(example = "PAR-SRV-0002")]
    pub host: String,
    pub port: u16,
    /// `sqlserver` or `postgresql`.
    #[schema(example = "sqlserver")]
    pub engine: Engine,
    #[schema(example = "Microsoft SQL Server 2019 (RTM-CU28) 15.0.4385.2")]
    pub version: String,
    #[schema(example = "Standard Edition (64-bit)")]
    pub edition: String,
    /// `online`, `degraded` or `offline`.
    #[schema(example = "online")]
    pub state: InstanceState,
    pub databases: u32,
    pub data_size_gb: f64,
    pub max_memory_gb: u32,
    pub started_at: DateTime<Utc>,
    pub last_backup_at: DateTime<Utc>,
    pub last_collected_at: DateTime<Utc>,
}

/// Database engine of an instance.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Engine {
    Sqlserver,
    Postgresql,
}

/// State of an instance (spec 2.5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum InstanceState {
    Online,
    Degraded,
    Offline,
}

/// Wait time by category, in milliseconds of waiting per second.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Waits {
    pub cpu: f64,
    pub io: f64,
    pub lock: f64,
    pub network: f64,
    pub other: f64,
}

/// One metric point: averages over the bucket starting at `ts`.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct MetricPoint {
    pub ts: DateTime<Utc>,
    pub cpu_pct: f64,
    pub memory_pct: f64,
    pub connections: f64,
    pub read_latency_ms: f64,
    pub write_latency_ms: f64,
    pub batch_requests_per_s: f64,
    pub waits: Waits,
}

/// A slow query (the execution plan is kept by the collector but never returned).
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct SlowQuery {
    pub id: String,
    pub ts: DateTime<Utc>,
    pub database: String,
    pub login: String,
    pub client_host: String,
    pub program: String,
    pub duration_ms: u64,
    pub cpu_ms: u64,
    pub logical_reads: u64,
    pub physical_reads: u64,
    pub writes: u64,
    pub row_count: u64,
    #[schema(example = "0x7A3F1C9E2B4D5A60")]
    pub query_hash: String,
    pub statement: String,
}

/// A query's accumulated statistics over the window.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct TopQuery {
    pub rank: u32,
    pub query_hash: String,
    pub database: String,
    pub statement: String,
    pub executions: u64,
    pub total_cpu_ms: f64,
    pub total_duration_ms: f64,
    pub total_logical_reads: f64,
    pub avg_cpu_ms: f64,
    pub avg_duration_ms: f64,
    pub avg_logical_reads: f64,
}

/// A session seen on the instance.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Session {
    pub session_id: u32,
    pub login: String,
    pub host: String,
    pub program: String,
    pub database: String,
    /// `running`, `runnable`, `suspended` or `sleeping`.
    pub status: SessionStatus,
    pub login_at: DateTime<Utc>,
    pub last_request_at: DateTime<Utc>,
    pub cpu_ms: u64,
    pub logical_reads: u64,
    pub open_transactions: u32,
    pub wait_type: Option<String>,
}

/// State of a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum SessionStatus {
    Running,
    Runnable,
    Suspended,
    Sleeping,
}

/// The session at the head of a blocking chain.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct BlockingHead {
    pub session_id: u32,
    pub login: String,
    pub host: String,
    pub program: String,
    /// `sleeping` with an open transaction is the classic culprit.
    pub status: SessionStatus,
    pub statement: String,
}

/// A session waiting in a blocking chain.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct BlockedSession {
    pub session_id: u32,
    pub blocked_by: u32,
    pub login: String,
    #[schema(example = "LCK_M_U")]
    pub wait_type: String,
    pub wait_ms: u64,
    pub statement: String,
}

/// A blocking chain observed on the instance.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct BlockingChain {
    pub id: String,
    pub detected_at: DateTime<Utc>,
    pub duration_ms: u64,
    pub database: String,
    pub head: BlockingHead,
    pub blocked: Vec<BlockedSession>,
    pub resolved_at: Option<DateTime<Utc>>,
}

/// A database alert.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct DbAlert {
    pub id: String,
    pub instance_id: i64,
    pub instance: String,
    /// `cpu_high`, `memory_pressure`, `blocking`, `deadlock`, `long_running_query`,
    /// `log_space`, `backup_missing`, `job_failed`, `instance_down`, `check_failed`.
    pub kind: DbAlertKind,
    /// `critical`, `high`, `medium` or `low`.
    pub severity: Criticality,
    /// `open` or `resolved`.
    pub status: AlertState,
    pub message: String,
    pub opened_at: DateTime<Utc>,
    pub resolved_at: Option<DateTime<Utc>>,
}

/// What a database alert is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum DbAlertKind {
    CpuHigh,
    MemoryPressure,
    Blocking,
    Deadlock,
    LongRunningQuery,
    LogSpace,
    BackupMissing,
    JobFailed,
    InstanceDown,
    CheckFailed,
}

/// Result of one run of a check.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct CheckResult {
    pub at: DateTime<Utc>,
    /// `ok`, `warning`, `failed` or `error`.
    pub status: CheckStatus,
    /// The value the query returned.
    pub value: Option<f64>,
    pub duration_ms: u64,
    pub message: String,
}

/// Outcome of a check run: `failed` when the result is out of bounds, `error` when the
/// query could not run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum CheckStatus {
    Ok,
    Warning,
    Failed,
    Error,
}

/// A read-only business query run on a schedule, with its last result.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Check {
    pub id: i64,
    pub name: String,
    pub description: String,
    pub instance_id: i64,
    pub instance: String,
    pub database: String,
    /// The read-only query (a single SELECT).
    pub query: String,
    /// What a good result looks like, e.g. `= 0`.
    pub expectation: String,
    pub schedule_minutes: u32,
    pub enabled: bool,
    pub last_result: Option<CheckResult>,
}

/// Query of `GET /databases/instances/{id}/slow-queries`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct SlowQueriesQuery {
    /// Minimum duration in milliseconds.
    // Signed, so that the document's 64-bit integer is what the server takes (a u64 would
    // take values past it); a negative value is refused by the handler.
    #[param(minimum = 0)]
    pub min_ms: Option<i64>,
}

/// Sort key of top queries.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum TopBy {
    #[default]
    Cpu,
    Duration,
    Reads,
}

/// Query of `GET /databases/instances/{id}/top-queries`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct TopQueriesQuery {
    /// `cpu` (default), `duration` or `reads`: total over the window.
    pub by: Option<TopBy>,
}

/// Query of `GET /databases/instances/{id}/sessions`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct SessionsQuery {
    /// Login, partial and case-insensitive.
    pub login: Option<String>,
}

/// `open` or `all`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum AlertStatus {
    Open,
    #[default]
    All,
}

/// Query of `GET /databases/alerts`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct AlertsQuery {
    /// `open`: alerts open now, whatever the window; `all` (default): alerts opened in the window.
    pub status: Option<AlertStatus>,
}

/// The measures of a metric point, in the order of the accumulator (and of the seed's
/// hourly rollups, which add the count of samples).
pub const MEASURES: [&str; 11] = [
    "cpu_pct",
    "memory_pct",
    "connections",
    "read_latency_ms",
    "write_latency_ms",
    "batch_requests_per_s",
    "wait_cpu",
    "wait_io",
    "wait_lock",
    "wait_network",
    "wait_other",
];
