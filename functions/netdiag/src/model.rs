//! NetDiag DTOs and storage names (docs/modules.md#netdiag).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

pub use netops_domain::states::{AgentStatus, AlertState, Severity};
pub use netops_shared::lookup::MACHINES;
/// Current diagnostic state per machine, keyed by hostname.
pub const STATES: &str = "netdiag_state";
/// NetDiag alerts, keyed by alert id `nd-<hostname>-<n>` (read by the alerts module too).
pub const ALERTS: &str = "netdiag_alerts";
/// Followed applications per machine, keyed by hostname.
pub const APPS: &str = "netdiag_apps";
/// Settings per machine, keyed by hostname (absent: defaults).
pub const SETTINGS: &str = "netdiag_settings";
/// Diagnostic actions, keyed by action id.
pub const ACTIONS: &str = "netdiag_actions";
/// The diagnostic actions requested, partition = hostname, one record per action (its id):
/// what an agent's sync and claim read, the requests of the claim deadline only, by
/// partition and time (docs/agent.md#cost), and the scheduled pass's expiry.
pub const ACTION_REQUESTS: &str = "netdiag_action_requests";
/// The enrolled agents (docs/agent.md), keyed by host name: [`AgentInfo`].
pub const AGENTS: &str = "netdiag_agents";
/// Raw measurements, partition = hostname.
pub const MEASURES: &str = "netdiag_measures";
/// The event feed, partition = hostname.
pub const EVENTS: &str = "netdiag_events";

/// Verdict periods (non-OK episodes), partition = hostname, ordered by start: the
/// collector's record of each change of verdict, from which distributions over any window
/// are exact to the measurement.
pub const PERIODS: &str = "netdiag_periods";

/// Longest period the reads look back for (a period longer than this is split by the collector).
pub const MAX_PERIOD_DAYS: i64 = 7;

/// Minutes between two measurements of the agent.
pub const SAMPLE_MINUTES: i64 = 15;

/// NetDiag verdict of a measurement: where the problem lies.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, ToSchema,
)]
pub enum Verdict {
    OK,
    PC,
    LAN,
    INFRA,
    WAN,
    DNS,
    SERVICE,
}

impl Verdict {
    pub const ALL: [Verdict; 7] = [
        Verdict::OK,
        Verdict::PC,
        Verdict::LAN,
        Verdict::INFRA,
        Verdict::WAN,
        Verdict::DNS,
        Verdict::SERVICE,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::OK => "OK",
            Verdict::PC => "PC",
            Verdict::LAN => "LAN",
            Verdict::INFRA => "INFRA",
            Verdict::WAN => "WAN",
            Verdict::DNS => "DNS",
            Verdict::SERVICE => "SERVICE",
        }
    }

    pub fn parse(s: &str) -> Option<Verdict> {
        Verdict::ALL.into_iter().find(|v| v.as_str() == s)
    }

    /// What the verdict means, for people.
    pub fn label(self, en: bool) -> &'static str {
        match (self, en) {
            (Verdict::OK, false) => "Tout fonctionne",
            (Verdict::OK, true) => "All good",
            (Verdict::PC, false) => "Problème sur le poste",
            (Verdict::PC, true) => "Problem on the computer",
            (Verdict::LAN, false) => "Réseau local",
            (Verdict::LAN, true) => "Local network",
            (Verdict::INFRA, false) => "Infrastructure réseau",
            (Verdict::INFRA, true) => "Network infrastructure",
            (Verdict::WAN, false) => "Accès Internet (WAN)",
            (Verdict::WAN, true) => "Internet access (WAN)",
            (Verdict::DNS, false) => "Résolution DNS",
            (Verdict::DNS, true) => "DNS resolution",
            (Verdict::SERVICE, false) => "Service applicatif",
            (Verdict::SERVICE, true) => "Application service",
        }
    }
}

/// Event sources exposed by the feed, in the order of docs/data.md#netdiag-event-sources.
pub const SOURCES: [&str; 20] = [
    "verdict",
    "appv",
    "alert",
    "app",
    "teams",
    "ap",
    "vpn",
    "wlan",
    "driver",
    "trace",
    "speed",
    "capture",
    "netprofile",
    "switch",
    "dhcp",
    "power",
    "wan",
    "tcpfail",
    "proc",
    "install",
];

/// Sources the agent collects but the API never exposes (docs/data.md#netdiag-event-sources).
pub const HIDDEN_SOURCES: [&str; 2] = ["file", "fg"];

/// Physical link of the measurement.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[schema(as = NetdiagLink)]
pub struct Link {
    /// `wifi` or `ethernet`.
    #[schema(example = "wifi")]
    pub kind: LinkKind,
    pub connected: bool,
    /// Negotiated speed in Mbit/s (0 when disconnected).
    pub speed_mbps: u32,
    #[schema(example = "Intel(R) Wi-Fi 6 AX201 160MHz")]
    pub adapter: String,
}

/// Physical link type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum LinkKind {
    Wifi,
    Ethernet,
}

/// Wireless state, when the link is Wi-Fi.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Wireless {
    #[schema(example = "ACME-CORP")]
    pub ssid: String,
    /// Received signal, dBm.
    #[schema(example = -61)]
    pub signal_dbm: i32,
    /// `2.4 GHz`, `5 GHz` or `6 GHz`.
    #[schema(example = "5 GHz")]
    pub band: String,
    pub channel: u32,
    /// Access point the machine is associated with.
    #[schema(example = "AP-PAR-2F-03")]
    pub access_point: String,
    pub bssid: String,
}

/// Round-trip latencies in milliseconds (null when the target did not answer).
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Latencies {
    pub gateway: Option<f64>,
    pub dns: Option<f64>,
    pub internet: Option<f64>,
}

/// Packet loss in percent.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Loss {
    pub gateway: f64,
    pub internet: f64,
}

/// One probe of a measurement.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct ProbeResult {
    #[schema(example = "teams.microsoft.com:443")]
    pub target: String,
    /// `dns`, `tcp`, `http` or `icmp`.
    pub kind: ProbeKind,
    pub ok: bool,
    pub ms: Option<f64>,
    /// Why the probe failed.
    pub error: Option<String>,
}

/// What a probe checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ProbeKind {
    Dns,
    Tcp,
    Http,
    Icmp,
}

impl ProbeKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ProbeKind::Dns => "dns",
            ProbeKind::Tcp => "tcp",
            ProbeKind::Http => "http",
            ProbeKind::Icmp => "icmp",
        }
    }
}

/// One measurement of the agent (every 15 minutes).
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Measurement {
    pub at: DateTime<Utc>,
    pub verdict: Verdict,
    /// Cause behind a non-OK verdict.
    pub cause: Option<String>,
    pub link: Link,
    pub wireless: Option<Wireless>,
    pub latency_ms: Latencies,
    pub loss_pct: Loss,
    pub probes: Vec<ProbeResult>,
}

/// Current state of a machine, kept up to date by the collector.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct State {
    pub hostname: String,
    pub verdict: Verdict,
    pub cause: Option<String>,
    /// Since when the verdict holds.
    pub since: DateTime<Utc>,
    pub last_measure_at: DateTime<Utc>,
    /// First measurement kept for the machine.
    pub first_measure_at: DateTime<Utc>,
    /// Id of the NetDiag alert in progress.
    pub open_alert: Option<String>,
}

/// A non-OK period of a machine.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Period {
    pub start: DateTime<Utc>,
    /// Null while the period lasts.
    pub end: Option<DateTime<Utc>>,
    pub verdict: Verdict,
    pub cause: String,
    /// For SERVICE: the executable of the application hit.
    pub executable: Option<String>,
}

/// A NetDiag alert as stored (shared contract with the alerts module).
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Alert {
    /// `nd-<hostname>-<n>`.
    #[schema(example = "nd-PAR-LT-0004-3")]
    pub id: String,
    pub hostname: String,
    pub verdict: Verdict,
    pub cause: String,
    /// critical, high, medium, low or info.
    pub severity: Severity,
    /// `open` while the machine is not OK, `resolved` once it is back to OK.
    pub status: AlertState,
    pub title: String,
    pub opened_at: DateTime<Utc>,
    pub resolved_at: Option<DateTime<Utc>>,
}

/// `GET /netdiag/machines`: a machine under diagnosis.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct DiagMachine {
    pub id: i64,
    pub hostname: String,
    pub ip: String,
    pub os: String,
    /// Agent state: `online` or `offline`.
    pub status: AgentStatus,
    pub last_seen_at: DateTime<Utc>,
    /// Verdict of the latest measurement.
    pub verdict: Verdict,
    pub cause: Option<String>,
    pub verdict_since: DateTime<Utc>,
    pub last_measure_at: DateTime<Utc>,
    /// `open` while a NetDiag alert is in progress, `none` otherwise.
    pub alert_state: DiagAlertState,
    /// The NetDiag alert in progress (null when none).
    pub alert: Option<Alert>,
    /// The machine's enrolled agent (docs/agent.md#applied-settings), absent when none is
    /// enrolled: the settings version it applied and when.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<AgentInfo>,
}

/// A machine's enrolled agent: when it enrolled, the version it runs and the settings it
/// applied (the `settings_version` the agent reported, and when).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct AgentInfo {
    pub enrolled_at: DateTime<Utc>,
    #[schema(example = "4.12.3")]
    pub agent_version: String,
    /// The settings version the agent applied: each saved change of the machine's settings
    /// raises the version by one (0: never saved, the tenant's defaults).
    pub settings_applied_version: Option<u64>,
    /// When the agent reported it applied them.
    pub settings_applied_at: Option<DateTime<Utc>>,
}

/// Whether a machine under diagnosis has an alert in progress.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum DiagAlertState {
    Open,
    None,
}

/// Share of one verdict over the window.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct VerdictShare {
    pub verdict: Verdict,
    /// Number of measurements with this verdict.
    pub samples: u64,
    /// Approximate time spent in this verdict (samples × 15 min).
    pub minutes: u64,
    /// Percent of the window's measurements, one decimal.
    pub share_pct: f64,
}

/// A cause behind non-OK verdicts over the window.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct CauseShare {
    pub verdict: Verdict,
    pub cause: String,
    pub samples: u64,
    pub minutes: u64,
    pub share_pct: f64,
}

/// The machine's current verdict.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Current {
    pub verdict: Verdict,
    pub cause: Option<String>,
    pub since: DateTime<Utc>,
}

/// `GET /netdiag/machines/{hostname}/summary`.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(as = NetdiagSummary)]
pub struct Summary {
    pub hostname: String,
    pub current: Current,
    /// Measurements in the window.
    pub samples: u64,
    /// Every verdict with its share of the window, in the order OK, PC, LAN, INFRA, WAN, DNS, SERVICE.
    pub distribution: Vec<VerdictShare>,
    /// Main causes of non-OK verdicts, most frequent first (at most 10).
    pub causes: Vec<CauseShare>,
    /// The latest measurement at or before the window's end.
    pub latest: Measurement,
    /// The NetDiag alert in progress, if any.
    pub alert: Option<Alert>,
}

/// One event of the machine feed.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Event {
    pub id: String,
    pub at: DateTime<Utc>,
    /// One of the twenty sources of spec 4.5.
    #[schema(example = "wlan")]
    pub source: String,
    /// critical, high, medium, low or info.
    pub severity: Severity,
    pub message: String,
    /// Source-specific details.
    #[schema(value_type = Object)]
    pub details: serde_json::Value,
}

/// A network dependency of an application.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Dependency {
    pub host: String,
    pub port: u16,
    /// `tcp` or `udp`.
    pub protocol: String,
}

/// A probe configured for an application.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct ProbeDef {
    pub target: String,
    pub kind: ProbeKind,
}

/// The followed applications of a machine, as stored (collection [`APPS`], keyed by host name).
#[derive(Debug, Clone, Deserialize)]
pub struct AppsDoc {
    pub apps: Vec<AppDef>,
}

/// A followed application as configured on the machine.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AppDef {
    pub name: String,
    pub executable: String,
    pub dependencies: Vec<Dependency>,
    pub probes: Vec<ProbeDef>,
    /// Hourly averages reported by the agent.
    #[serde(default)]
    pub hourly: Option<AppHourly>,
}

/// Hourly averages of an application, one value per hour from `start`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct AppHourly {
    pub start: DateTime<Utc>,
    pub cpu_pct: Vec<f32>,
    pub memory_mb: Vec<f32>,
    /// Per probe, its average answer time per hour (null: no successful answer).
    pub probe_ms: Vec<Vec<Option<f32>>>,
}

/// Average load of an application over the window.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Load {
    pub cpu_avg_pct: f64,
    pub memory_avg_mb: f64,
    pub memory_max_mb: f64,
}

/// Probe results over the window.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ProbeStats {
    pub target: String,
    pub kind: ProbeKind,
    pub checks: u64,
    pub success_pct: f64,
    pub avg_ms: Option<f64>,
}

/// A point of the memory trend.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct MemoryPoint {
    pub at: DateTime<Utc>,
    pub mb: f64,
}

/// Memory trend over the window.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct MemoryTrend {
    /// `rising`, `falling` or `stable`.
    pub direction: Trend,
    /// Change from the first to the last quarter of the window, percent.
    pub change_pct: f64,
    /// Averages over evenly sized slices of the window (at most 48 points).
    pub points: Vec<MemoryPoint>,
}

/// Direction of a trend.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Trend {
    Rising,
    Falling,
    Stable,
}

/// `GET /netdiag/machines/{hostname}/apps`: a followed application.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct App {
    #[schema(example = "Microsoft Teams")]
    pub name: String,
    #[schema(example = "ms-teams.exe")]
    pub executable: String,
    /// Verdict of the latest hour with data (null when the window holds none).
    pub verdict: Option<Verdict>,
    /// Measurements of the application in the window.
    pub samples: u64,
    /// Every verdict with its share of the window.
    pub verdicts: Vec<VerdictShare>,
    pub load: Option<Load>,
    pub dependencies: Vec<Dependency>,
    pub probes: Vec<ProbeStats>,
    pub memory_trend: MemoryTrend,
}

/// NetDiag settings of a machine (spec 4.5, settings table).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Settings {
    /// Executables to follow; at most 10; empty means the tenant default.
    pub apps: Vec<String>,
    /// Extra probes `host.domain[:port]` or `*.domain[:port]`; at most 3.
    pub extra_probes: Vec<String>,
    pub trace_on_incident: bool,
    pub capture_on_incident: bool,
    pub auto_watch_apps: bool,
    pub flows_enabled: bool,
    pub foreground_enabled: bool,
    pub foreground_titles: bool,
    pub file_events_enabled: bool,
    pub file_include_app_data: bool,
    pub install_events_enabled: bool,
    pub process_events_enabled: bool,
    pub windows_events_enabled: bool,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            apps: Vec::new(),
            extra_probes: Vec::new(),
            trace_on_incident: true,
            capture_on_incident: false,
            auto_watch_apps: true,
            flows_enabled: true,
            foreground_enabled: false,
            foreground_titles: false,
            file_events_enabled: false,
            file_include_app_data: false,
            install_events_enabled: true,
            process_events_enabled: true,
            windows_events_enabled: true,
        }
    }
}

/// Every key of the settings body.
pub const SETTINGS_KEYS: [&str; 13] = [
    "apps",
    "extraProbes",
    "traceOnIncident",
    "captureOnIncident",
    "autoWatchApps",
    "flowsEnabled",
    "foregroundEnabled",
    "foregroundTitles",
    "fileEventsEnabled",
    "fileIncludeAppData",
    "installEventsEnabled",
    "processEventsEnabled",
    "windowsEventsEnabled",
];

/// Body of `PUT /settings`: any subset of the settings keys (documented shape).
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)]
pub struct SettingsUpdate {
    pub apps: Option<Vec<String>>,
    pub extra_probes: Option<Vec<String>>,
    pub trace_on_incident: Option<bool>,
    pub capture_on_incident: Option<bool>,
    pub auto_watch_apps: Option<bool>,
    pub flows_enabled: Option<bool>,
    pub foreground_enabled: Option<bool>,
    pub foreground_titles: Option<bool>,
    pub file_events_enabled: Option<bool>,
    pub file_include_app_data: Option<bool>,
    pub install_events_enabled: Option<bool>,
    pub process_events_enabled: Option<bool>,
    pub windows_events_enabled: Option<bool>,
}

/// Body of `POST /actions` (documented shape).
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[allow(dead_code)]
pub struct ActionRequest {
    /// `trace`, `speed` or `capture`.
    #[schema(example = "trace")]
    pub action: ActionKind,
    /// Only for `trace`: host name or address; the gateway when absent.
    pub target: Option<String>,
    /// Only for `capture`: 5 to 120 seconds, default 30.
    pub seconds: Option<u32>,
}

/// A diagnostic action: traceroute, speed test or network capture.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ActionKind {
    Trace,
    Speed,
    Capture,
}

/// State of a diagnostic action (docs/agent.md#actions): `queued` until its machine's agent
/// claims it, `running` while the claim's lease holds, then `completed` (its result is an
/// event of the feed) or `expired` (unclaimed in time, or its lease ran out: an event says
/// so).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ActionStatus {
    Queued,
    Running,
    Completed,
    Expired,
}

/// A diagnostic action as stored and answered.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Action {
    #[schema(example = "act-19a8f3c2b4d-5e21a0")]
    pub action_id: String,
    /// `trace`, `speed` or `capture`.
    pub action: ActionKind,
    /// `queued` until the agent claims it, `running` while it runs it, then `completed` or
    /// `expired`.
    pub status: ActionStatus,
    pub requested_at: DateTime<Utc>,
    /// When it expires if no agent has claimed it (`NETOPS_ACTION_CLAIM_SECONDS` after the
    /// request, 300 s by default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claim_by: Option<DateTime<Utc>>,
    /// When the agent claimed it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claimed_at: Option<DateTime<Utc>>,
    /// When the claim's lease runs out (`NETOPS_ACTION_LEASE_SECONDS` after the claim, 180 s
    /// by default): the action expires unless its result is in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lease_until: Option<DateTime<Utc>>,
    /// The claim's id, which the agent's result names: only the claimant posts it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claim_id: Option<String>,
    pub hostname: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seconds: Option<u32>,
    /// When the agent reported the result, or when the action expired.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub completed_at: Option<DateTime<Utc>>,
    /// Id of the result event in the machine feed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub event_id: Option<String>,
    /// The message and details of the event it ended with (its result, or its expiry).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub result: Option<serde_json::Value>,
}

/// Query of `GET /events`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct EventsQuery {
    /// One source, or several separated by commas, among verdict, appv, alert, app, teams,
    /// ap, vpn, wlan, driver, trace, speed, capture, netprofile, switch, dhcp, power, wan,
    /// tcpfail, proc, install.
    pub source: Option<String>,
    /// Text searched in the message, case-insensitive.
    pub q: Option<String>,
}

/// Query of `GET /report.pdf`.
#[derive(Debug, Clone, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ReportQuery {
    /// `fr` (default) or `en`.
    pub lang: Option<String>,
    /// IANA time zone of the times shown (default `Europe/Paris`).
    pub tz: Option<String>,
}
