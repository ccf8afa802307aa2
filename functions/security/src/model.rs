//! Security DTOs (docs/modules.md#security).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::{IntoParams, ToSchema};

pub use netops_domain::states::{Criticality, SiemSeverity, SiemStatus};

/// Directory logon events 4624/4625, partition = target host.
pub const LOGONS: &str = "security_logons";
/// Lockout events 4740/4767, partition = account.
pub const LOCKOUTS: &str = "security_lockouts";
/// Account, group, computer, policy and directory changes, partition = type.
pub const CHANGES: &str = "security_account_changes";
/// Behaviour anomalies, partition = kind.
pub const ANOMALIES: &str = "security_anomalies";
/// The logon graph: one document per account with its edges to machines (last 30 days).
pub const GRAPH: &str = "security_logon_graph";
/// The ranking of risky accounts made from the graph, keyed by rank.
pub const RANKING: &str = "security_risk_ranking";
/// Tenant detection rules.
pub const RULES: &str = "security_rules";
/// SIEM incidents, keyed by incident id: opened by the detection rules over the security
/// events collected ([`crate::derive`]), acknowledged through the alerts module.
pub const INCIDENTS: &str = "siem_incidents";
/// Events correlated to each incident, partition = incident id.
pub const INCIDENT_EVENTS: &str = "siem_events";

/// Events of a list without paging are capped at this many; `meta.truncated` says so.
pub const UNPAGED_MAX: usize = 1000;
/// Correlated events returned with an incident (`get_security_incident` in the OpenAPI
/// description).
pub const INCIDENT_EVENTS_MAX: usize = 200;

/// A directory logon event.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Logon {
    pub id: String,
    pub ts: DateTime<Utc>,
    /// 4624 (success) or 4625 (failure).
    #[schema(example = 4624)]
    pub event_id: u32,
    /// `success` or `failure`.
    #[schema(example = "success")]
    pub result: LogonResult,
    #[schema(example = "julie.martin")]
    pub user: String,
    #[schema(example = "ACME")]
    pub domain: String,
    /// Windows logon type: 2 interactive, 3 network, 5 service, 7 unlock, 10 remote
    /// interactive, 11 cached interactive.
    pub logon_type: u32,
    #[schema(example = "PAR-LT-0004")]
    pub source_host: Option<String>,
    #[schema(example = "10.10.30.11")]
    pub source_ip: String,
    #[schema(example = "PAR-SRV-0002")]
    pub target_host: String,
    #[schema(example = "Kerberos")]
    pub auth_package: String,
    /// For failures: the NTSTATUS code and its meaning.
    pub failure_reason: Option<String>,
    /// Domain controller that recorded the event.
    pub dc: String,
}

/// A lockout (4740) or unlock (4767) event.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Lockout {
    pub id: String,
    pub ts: DateTime<Utc>,
    /// 4740 (locked out) or 4767 (unlocked).
    #[schema(example = 4740)]
    pub event_id: u32,
    /// `locked` or `unlocked`.
    pub action: LockoutAction,
    pub user: String,
    /// Machine where the failed attempts came from (4740).
    pub caller_host: Option<String>,
    /// Who unlocked the account (4767).
    pub author: Option<String>,
    pub dc: String,
}

/// What a lockout event did to the account.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum LockoutAction {
    Locked,
    Unlocked,
}

/// An account, group, computer, policy or directory change.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct AccountChange {
    pub id: String,
    pub ts: DateTime<Utc>,
    /// Event of the 47xx family or 5136 to 5141.
    #[schema(example = 4728)]
    pub event_id: u32,
    /// `account`, `group`, `computer`, `policy` or `directory`.
    #[serde(rename = "type")]
    #[schema(example = "group")]
    pub kind: ChangeType,
    #[schema(example = "member_added")]
    pub action: String,
    /// Account that made the change.
    pub author: String,
    /// Account or computer changed, when there is one.
    pub target: Option<String>,
    /// Group, policy or directory object changed.
    pub object: Option<String>,
    pub details: String,
    pub dc: String,
}

/// What makes an account risky, as computed from the logon graph.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct RiskFactors {
    /// Member of an administrators group.
    pub admin: bool,
    /// Distinct machines the account logged on to.
    pub machines_reached: u32,
    /// Distinct servers among them.
    pub servers_reached: u32,
    /// Failed logons (4625).
    pub failures: u32,
    /// Failed logons over all logons, 0 to 1.
    pub failure_ratio: f64,
    /// Weighted degree of the account in the account x machine logon graph (each machine
    /// weighs ln(1 + number of accounts seen on it)), divided by the highest of the tenant: 0 to 1.
    pub centrality: f64,
}

/// An account ranked by risk.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct RiskyAccount {
    pub rank: u32,
    pub account: String,
    pub display_name: String,
    pub service_account: bool,
    /// 0 to 100: 30 if admin + 20 x min(machines/20, 1) + 25 x min(failures/25, 1) + 25 x centrality.
    pub score: f64,
    pub factors: RiskFactors,
    pub last_logon_at: Option<DateTime<Utc>>,
}

/// The logon graph is stored compactly: one document `hosts` listing the machines
/// (`{"names": [...], "servers": [bool...]}`) and documents `accounts-NNNN` holding up to
/// [`GRAPH_CHUNK`] accounts each as `[login, display_name, admin, service, [[host index,
/// successes, failures, last logon epoch seconds], ...]]`. Reading ~5,000 accounts is then
/// a dozen small documents of numbers.
pub const GRAPH_HOSTS: &str = "hosts";
pub const GRAPH_CHUNK: usize = 500;

/// The logons of one account on one machine (demo data).
#[derive(Debug, Clone)]
pub struct GraphEdge {
    pub host: String,
    pub server: bool,
    pub success: u32,
    pub failure: u32,
    pub last_at: DateTime<Utc>,
}

/// A behaviour anomaly.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Anomaly {
    pub id: String,
    pub detected_at: DateTime<Utc>,
    /// `brute_force`, `password_spray`, `off_hours_logon`, `new_admin_host`,
    /// `service_account_interactive`, `lateral_movement`, `impossible_travel`.
    pub kind: AnomalyKind,
    /// `critical`, `high`, `medium` or `low`.
    pub severity: Criticality,
    /// `new`, `investigating`, `confirmed` or `dismissed`.
    pub status: AnomalyStatus,
    pub account: Option<String>,
    pub host: Option<String>,
    pub source_ip: Option<String>,
    /// Deviation score, 0 to 100.
    pub score: u32,
    pub description: String,
}

/// What a behaviour anomaly is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum AnomalyKind {
    BruteForce,
    PasswordSpray,
    OffHoursLogon,
    NewAdminHost,
    ServiceAccountInteractive,
    LateralMovement,
    ImpossibleTravel,
}

impl AnomalyKind {
    pub fn as_str(self) -> &'static str {
        match self {
            AnomalyKind::BruteForce => "brute_force",
            AnomalyKind::PasswordSpray => "password_spray",
            AnomalyKind::OffHoursLogon => "off_hours_logon",
            AnomalyKind::NewAdminHost => "new_admin_host",
            AnomalyKind::ServiceAccountInteractive => "service_account_interactive",
            AnomalyKind::LateralMovement => "lateral_movement",
            AnomalyKind::ImpossibleTravel => "impossible_travel",
        }
    }
}

/// One action taken on a SIEM incident.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct IncidentAction {
    pub at: DateTime<Utc>,
    pub by: String,
    pub action: String,
    #[serde(default)]
    pub note: Option<String>,
}

/// A SIEM incident.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Incident {
    pub id: String,
    pub title: String,
    /// `CRITICAL`, `HIGH`, `MEDIUM` or `LOW`.
    #[schema(example = "HIGH")]
    pub severity: SiemSeverity,
    /// `OPEN`, `ACKNOWLEDGED`, `INVESTIGATING`, `RESOLVED` or `CLOSED`.
    #[schema(example = "OPEN")]
    pub status: SiemStatus,
    #[serde(default)]
    pub rule_id: Option<String>,
    #[serde(default)]
    pub rule_name: Option<String>,
    pub opened_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    /// Null unless resolved or closed.
    #[serde(default)]
    pub closed_at: Option<DateTime<Utc>>,
    #[serde(default)]
    pub accounts: Vec<String>,
    #[serde(default)]
    pub hosts: Vec<String>,
    #[serde(default)]
    pub source_ips: Vec<String>,
    #[serde(default)]
    pub event_count: u64,
    #[serde(default)]
    pub actions: Vec<IncidentAction>,
}

/// An event correlated to an incident.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct CorrelatedEvent {
    pub ts: DateTime<Utc>,
    /// The directory event number (4624, 4625, ...) as the SIEM recorded it.
    pub event_id: Value,
    pub account: Option<String>,
    pub host: Option<String>,
    pub source_ip: Option<String>,
    pub message: Option<String>,
}

/// `GET /security/incidents/{id}`: the incident and its last 200 correlated events.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct IncidentDetail {
    #[serde(flatten)]
    pub incident: Incident,
    /// Newest first, at most 200.
    pub events: Vec<CorrelatedEvent>,
}

/// A detection rule.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Rule {
    #[schema(example = "gl-001")]
    pub id: String,
    /// `global` (product rule, same for every account) or `tenant` (this account's rule).
    pub scope: RuleScope,
    pub name: String,
    pub description: String,
    /// `CRITICAL`, `HIGH`, `MEDIUM` or `LOW`: severity of the incidents it opens.
    pub severity: SiemSeverity,
    pub enabled: bool,
    /// Directory events it correlates.
    pub event_ids: Vec<u32>,
    /// Events needed within the window to fire.
    pub threshold: u32,
    pub window_minutes: u32,
    /// MITRE ATT&CK technique.
    #[schema(example = "T1110.001")]
    pub mitre_technique: String,
    pub updated_at: DateTime<Utc>,
}

/// Whose rule it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum RuleScope {
    Global,
    Tenant,
}

/// `success` or `failure`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum LogonResult {
    Success,
    Failure,
}

/// Filters of `GET /security/logons`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct LogonsQuery {
    /// Account name, partial and case-insensitive.
    pub user: Option<String>,
    /// Source or target machine name, partial and case-insensitive.
    pub host: Option<String>,
    /// Source IP address, exact.
    pub source_ip: Option<String>,
    /// `success` (4624) or `failure` (4625).
    #[param(inline)]
    pub result: Option<LogonResult>,
}

/// Filters of `GET /security/lockouts`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct LockoutsQuery {
    /// Account name, partial and case-insensitive.
    pub user: Option<String>,
}

/// Type of an account change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ChangeType {
    Account,
    Group,
    Computer,
    Policy,
    Directory,
}

impl ChangeType {
    pub fn as_str(self) -> &'static str {
        match self {
            ChangeType::Account => "account",
            ChangeType::Group => "group",
            ChangeType::Computer => "computer",
            ChangeType::Policy => "policy",
            ChangeType::Directory => "directory",
        }
    }
}

/// Filters of `GET /security/account-changes`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ChangesQuery {
    /// Author, target account or object, partial and case-insensitive.
    pub user: Option<String>,
    /// `account`, `group`, `computer`, `policy` or `directory`.
    #[serde(rename = "type")]
    #[param(rename = "type", inline)]
    pub kind: Option<ChangeType>,
}

/// Status of an anomaly.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum AnomalyStatus {
    New,
    Investigating,
    Confirmed,
    Dismissed,
}

impl AnomalyStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            AnomalyStatus::New => "new",
            AnomalyStatus::Investigating => "investigating",
            AnomalyStatus::Confirmed => "confirmed",
            AnomalyStatus::Dismissed => "dismissed",
        }
    }
}

/// Filters of `GET /security/anomalies`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct AnomaliesQuery {
    /// `new`, `investigating`, `confirmed` or `dismissed`.
    #[param(inline)]
    pub status: Option<AnomalyStatus>,
}

/// Filters of `GET /security/incidents`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct IncidentsQuery {
    /// `open` (in progress: OPEN, ACKNOWLEDGED or INVESTIGATING, whatever the window) or a
    /// precise status `OPEN`, `ACKNOWLEDGED`, `INVESTIGATING`, `RESOLVED`, `CLOSED` (incidents
    /// active in the window). Absent: every incident active in the window.
    pub status: Option<String>,
    /// `CRITICAL`, `HIGH`, `MEDIUM` or `LOW` (case-insensitive).
    pub severity: Option<String>,
}
