//! Alerts and availability DTOs (docs/modules.md#alerts-and-availability): what is stored and
//! what is answered.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::{IntoParams, ToSchema};

pub use netops_domain::network::LinkStatus;
pub use netops_domain::states::{AlertState, Severity, SiemSeverity, SiemStatus};

/// Availability monitors, keyed by their id zero-padded to ten digits (so key order is id order).
pub const MONITORS: &str = "monitors";
/// Availability-monitor incidents, keyed by their number zero-padded to ten digits.
pub const MONITOR_INCIDENTS: &str = "monitor_incidents";
/// Hourly check counts over the last week: one row per hour (key `all`) with the measures
/// `<monitor id>:checks`, `<monitor id>:degraded` and `<monitor id>:down` of every monitor.
pub const CHECKS_HOURLY: &str = "monitor_checks_hourly";
/// Daily check counts, same shape (rollup `hour` = start of the UTC day).
pub const CHECKS_DAILY: &str = "monitor_checks_daily";
/// SIEM incidents, keyed by incident id (read by the security module too).
pub const SIEM_INCIDENTS: &str = "siem_incidents";
/// Events correlated into SIEM incidents, partition = incident id.
pub const SIEM_EVENTS: &str = "siem_events";
/// NetDiag alerts, written by the netdiag module.
pub const NETDIAG_ALERTS: &str = "netdiag_alerts";

/// Document key of a monitor or a monitor incident.
pub fn num_key(n: i64) -> String {
    format!("{n:010}")
}

/// The last check of a monitor.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct LastCheck {
    pub at: DateTime<Utc>,
    /// Result of the check: `up`, `down` or `degraded`.
    #[schema(example = "up")]
    pub status: LinkStatus,
    /// Response time in milliseconds; null when the target did not answer.
    pub response_ms: Option<u32>,
    /// What the check saw, e.g. `HTTP 200`, `timeout`, `connection refused`.
    #[schema(example = "HTTP 200")]
    pub message: String,
}

/// A monitor as stored.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MonitorDoc {
    pub id: i64,
    pub name: String,
    #[serde(rename = "type")]
    pub kind: MonitorType,
    pub target: String,
    pub site: String,
    pub active: bool,
    pub status: LinkStatus,
    pub interval_s: u32,
    pub created_at: DateTime<Utc>,
    pub last_check: Option<LastCheck>,
    /// The failed checks in a row since the last good one, of the collected checks
    /// (docs/collect.md#monitor-check); never returned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failing: Option<netops_domain::runs::Failing>,
}

/// What a monitor checks with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum MonitorType {
    Http,
    Ping,
    Tcp,
    Dns,
}

/// Availability in percent of successful checks (degraded answers count as available);
/// null when the monitor made no check in that span.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Availability {
    /// Over the last 24 hours (whole hours, the current one included).
    #[serde(rename = "24h")]
    #[schema(example = 99.93)]
    pub h24: Option<f64>,
    /// Over the last 7 UTC days, today included.
    #[serde(rename = "7d")]
    pub d7: Option<f64>,
    /// Over the last 30 UTC days, today included.
    #[serde(rename = "30d")]
    pub d30: Option<f64>,
}

/// An availability monitor (spec 4.6): state, last check, availability over 24 h, 7 d, 30 d.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Monitor {
    #[schema(example = 1003)]
    pub id: i64,
    #[schema(example = "Intranet (HTTPS)")]
    pub name: String,
    /// Check type: `http`, `ping`, `tcp` or `dns`.
    #[serde(rename = "type")]
    #[schema(example = "http")]
    pub kind: MonitorType,
    /// What is checked: URL, host, host:port or name to resolve.
    #[schema(example = "https://intranet.acme.local/health")]
    pub target: String,
    /// Site whose probe runs the check.
    #[schema(example = "PAR")]
    pub site: String,
    /// False when the monitor is paused: it keeps its last state and makes no checks.
    pub active: bool,
    /// Current state: `up`, `down` or `degraded`.
    #[schema(example = "up")]
    pub status: LinkStatus,
    /// Seconds between two checks.
    #[schema(example = 60)]
    pub interval_s: u32,
    pub created_at: DateTime<Utc>,
    pub last_check: Option<LastCheck>,
    pub availability: Availability,
    /// The ongoing incident (`hm-<n>`), if any.
    #[schema(example = "hm-10004")]
    pub open_incident: Option<String>,
}

/// An availability-monitor incident (spec 3.1: unresolved, acknowledged; resolved).
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct MonitorIncident {
    /// Incident number.
    #[schema(example = 10004)]
    pub id: i64,
    /// Id of the incident in the alert feed, used to acknowledge it.
    #[schema(example = "hm-10004")]
    pub alert_id: String,
    pub monitor_id: i64,
    pub monitor_name: String,
    /// What the monitor checks.
    pub target: String,
    /// `down` (no answer) or `degraded` (slow or partial answers).
    #[schema(example = "down")]
    pub kind: MonitorIncidentKind,
    /// `critical`, `high`, `medium`, `low` or `info`.
    #[schema(example = "high")]
    pub severity: Severity,
    /// `unresolved`, `acknowledged` or `resolved`.
    #[schema(example = "unresolved")]
    pub status: MonitorIncidentStatus,
    pub started_at: DateTime<Utc>,
    pub resolved_at: Option<DateTime<Utc>>,
    /// Seconds from start to resolution, or to now while ongoing.
    #[serde(default)]
    pub duration_s: i64,
    /// What the failing checks reported.
    #[schema(example = "connection timed out after 10 s")]
    pub error: String,
    pub acknowledged_at: Option<DateTime<Utc>>,
    /// Name of the token that acknowledged it.
    pub acknowledged_by: Option<String>,
    /// Notes of the incident (set by the first acknowledgement that carries a note).
    pub notes: Option<String>,
}

/// What went wrong during a monitor incident.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum MonitorIncidentKind {
    Down,
    Degraded,
}

impl MonitorIncidentKind {
    /// The state of the monitor while the incident lasts.
    pub fn monitor_status(self) -> LinkStatus {
        match self {
            MonitorIncidentKind::Down => LinkStatus::Down,
            MonitorIncidentKind::Degraded => LinkStatus::Degraded,
        }
    }
}

/// State of a monitor incident (spec 3.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum MonitorIncidentStatus {
    Unresolved,
    Acknowledged,
    Resolved,
}

impl MonitorIncidentStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            MonitorIncidentStatus::Unresolved => "unresolved",
            MonitorIncidentStatus::Acknowledged => "acknowledged",
            MonitorIncidentStatus::Resolved => "resolved",
        }
    }
}

/// One action on a SIEM incident.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct SiemAction {
    pub at: DateTime<Utc>,
    pub by: String,
    /// e.g. `open`, `ack`, `investigate`, `resolve`, `close`, `comment`.
    pub action: String,
    pub note: Option<String>,
}

/// A SIEM incident as stored (shared with the security module).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SiemIncident {
    pub id: String,
    pub title: String,
    pub severity: SiemSeverity,
    pub status: SiemStatus,
    pub rule_id: String,
    pub rule_name: String,
    pub opened_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub closed_at: Option<DateTime<Utc>>,
    pub accounts: Vec<String>,
    pub hosts: Vec<String>,
    pub source_ips: Vec<String>,
    pub event_count: u64,
    pub actions: Vec<SiemAction>,
}

/// A NetDiag alert as the netdiag module stores it.
#[derive(Debug, Clone, Deserialize)]
pub struct NetdiagAlert {
    pub id: String,
    pub hostname: String,
    pub verdict: String,
    pub cause: String,
    pub severity: Severity,
    pub status: AlertState,
    pub title: String,
    pub opened_at: DateTime<Utc>,
    pub resolved_at: Option<DateTime<Utc>>,
}

/// One item of the unified alert feed (spec 2.4).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct AlertItem {
    /// Origin prefix: `hm-<n>` (monitor incident), `siem-<id>` (SIEM incident), `nd-<...>`
    /// (NetDiag alert).
    #[schema(example = "siem-2026-0142")]
    pub id: String,
    /// `netdiag`, `hostmonitor` or `siem`.
    #[schema(example = "siem")]
    pub kind: Origin,
    /// `critical`, `high`, `medium`, `low` or `info`.
    #[schema(example = "high")]
    pub severity: Severity,
    /// `open` while in progress, `resolved` afterwards.
    #[schema(example = "open")]
    pub status: AlertState,
    pub title: String,
    /// Monitor target, first host (or account) of a SIEM incident, or NetDiag hostname.
    pub target: String,
    pub opened_at: DateTime<Utc>,
    pub resolved_at: Option<DateTime<Utc>>,
    /// Whether someone acknowledged it (a monitor or SIEM incident; a NetDiag alert closes by
    /// itself and is never acknowledged). An open alert that is acknowledged answers the ack
    /// route with 409: a client listing `status=open` skips these.
    pub acknowledged: bool,
    /// Name of the token that acknowledged it, when known.
    pub acknowledged_by: Option<String>,
    /// When it was acknowledged, when known.
    pub acknowledged_at: Option<DateTime<Utc>>,
    /// Depends on the origin: the incident (monitor, SIEM) or the NetDiag verdict and cause.
    #[schema(value_type = Object)]
    pub details: Value,
}

/// Origin of an alert of the feed, in the spelling of the `kind` field and parameter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Origin {
    Netdiag,
    Hostmonitor,
    Siem,
}

impl Origin {
    pub const ALL: [Origin; 3] = [Origin::Netdiag, Origin::Hostmonitor, Origin::Siem];

    pub fn as_str(self) -> &'static str {
        match self {
            Origin::Netdiag => "netdiag",
            Origin::Hostmonitor => "hostmonitor",
            Origin::Siem => "siem",
        }
    }

    pub fn parse(s: &str) -> Option<Origin> {
        Origin::ALL.into_iter().find(|o| o.as_str() == s)
    }
}

/// Filters of `GET /alerts`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct AlertsQuery {
    /// `open` (in progress now, whatever its start) or `all` (adds what opened in the window).
    #[param(example = "all")]
    pub status: Option<String>,
    /// Comma-separated origins among `netdiag`, `hostmonitor`, `siem` (default: all three).
    #[param(example = "hostmonitor,siem")]
    pub kind: Option<String>,
}

/// Body of `POST /alerts/{id}/ack`.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
pub struct AckBody {
    /// Optional note, at most 2,000 characters.
    #[schema(example = "Pris en charge par l'astreinte réseau.", max_length = 2000)]
    pub note: Option<String>,
}

/// Filters of `GET /monitors`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct MonitorsQuery {
    /// Current state, e.g. `up`, `down`, `degraded` (exact match; other values find nothing).
    pub status: Option<String>,
    /// `1`: active monitors only; `0`: paused monitors only.
    #[param(value_type = Option<u8>, example = 1)]
    pub active: Option<String>,
}
