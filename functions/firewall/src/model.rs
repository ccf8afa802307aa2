//! Firewall DTOs (docs/modules.md#firewall).

use chrono::{DateTime, NaiveDate, Utc};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

pub use netops_domain::network::LinkStatus;
pub use netops_domain::states::{Criticality, SiemStatus};

use crate::parse::{Action, Category, Format};

/// Firewalls and gateways, keyed by zero-padded id.
pub const DEVICES: &str = "firewall_devices";
/// Parsed events, one partition per device id.
pub const EVENTS: &str = "firewall_events";
/// Events outside the bulk categories (allow, deny), one partition per category: an index
/// that keeps filters on rare categories and actions fast on a busy tenant.
pub const EVENTS_RARE: &str = "firewall_events_rare";
/// Directory-controller events collected for correlation, one partition per account.
pub const DIRECTORY: &str = "firewall_directory_events";
/// The accounts the directory events name, keyed by account: what the report's `known` is
/// read from, in one request for the accounts it lists.
pub const DIRECTORY_ACCOUNTS: &str = "firewall_directory_accounts";
/// Threat rows, time = start of their day.
pub const THREATS: &str = "firewall_threats";

pub fn key(id: i64) -> String {
    format!("{id:012}")
}

/// State of one collection channel of a device.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Channel {
    /// `syslog`: log format read; `ipfix`: `IPFIX` or `NetFlow v9`.
    #[schema(example = "fortigate")]
    pub format: String,
    /// `active` (data within the last 15 minutes), `stale` or `inactive`.
    #[schema(example = "active")]
    pub status: ChannelStatus,
    pub last_received_at: Option<DateTime<Utc>>,
}

/// State of a collection channel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ChannelStatus {
    Active,
    Stale,
    Inactive,
}

/// Type of a device that relays logs and flows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum FirewallDeviceType {
    Firewall,
    Gateway,
}

/// A firewall or gateway whose syslog and flows are relayed by a site agent.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct FirewallDevice {
    /// Same id as in `/network/devices`.
    pub id: i64,
    #[schema(example = "PAR-FW-01")]
    pub name: String,
    /// `firewall` or `gateway`.
    #[serde(rename = "type")]
    pub device_type: FirewallDeviceType,
    pub vendor: String,
    pub model: String,
    pub firmware: String,
    pub ip: String,
    pub site_id: i64,
    pub site: String,
    /// Agent machine that relays the device's syslog and flows.
    #[schema(example = "PAR-SRV-0001")]
    pub relay_agent: String,
    pub syslog: Channel,
    pub flows: Channel,
}

/// A directory-controller event matched to a firewall event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct AdEvent {
    pub at: DateTime<Utc>,
    /// Windows event id: 4624, 4625, 4740, 4768, 4771, 4776.
    #[schema(example = 4625)]
    pub event_id: u32,
    /// Domain controller that logged it.
    #[schema(example = "PAR-SRV-0001")]
    pub controller: String,
    pub account: String,
    /// `success` or `failure`.
    pub outcome: Outcome,
    pub source_ip: Option<String>,
    /// Seconds between the firewall event and this one (negative: before it).
    pub offset_seconds: i64,
}

/// Outcome of a directory-controller event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Success,
    Failure,
}

/// A firewall event parsed from a log line (spec 2.5).
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct FirewallEvent {
    #[schema(example = "fw-1795338942000-1001-000042")]
    pub id: String,
    pub at: DateTime<Utc>,
    pub device_id: i64,
    pub device: String,
    /// Format of the log line the event was parsed from.
    pub format: Format,
    pub category: Category,
    pub action: Action,
    pub account: Option<String>,
    pub src_ip: Option<String>,
    pub src_port: Option<u16>,
    pub dst_ip: Option<String>,
    pub dst_port: Option<u16>,
    pub service: Option<String>,
    pub protocol: Option<String>,
    pub rule: Option<String>,
    pub message: String,
    /// Directory-controller events on the same account within 15 seconds.
    pub ad_events: Vec<AdEvent>,
}

/// The stored form: the event plus the addresses it involves, so that `ip` filters on
/// either end with one predicate.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StoredEvent {
    #[serde(flatten)]
    pub event: FirewallEvent,
    pub ips: Vec<String>,
}

/// A sender or destination with its volumes.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct TrafficEntry {
    #[schema(example = "10.10.30.14")]
    pub ip: String,
    /// Machine name for senders, when known; when several machines sent from the address
    /// within the window (an address leased again), the one that sent the most bytes.
    pub host: Option<String>,
    pub bytes: f64,
    pub packets: f64,
    pub flows: f64,
}

/// Volume of one full hour.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct TrafficHour {
    pub hour: DateTime<Utc>,
    pub bytes: f64,
    pub flows: f64,
}

/// Totals of the window.
#[derive(Debug, Clone, Default, Serialize, ToSchema)]
pub struct TrafficTotals {
    pub bytes: f64,
    pub packets: f64,
    pub flows: f64,
}

/// `GET /firewall/traffic`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Traffic {
    pub totals: TrafficTotals,
    /// Volume by export protocol: `IPFIX`, `NetFlow v9`.
    pub by_protocol: std::collections::BTreeMap<String, f64>,
    /// Top senders (internal addresses), by bytes, `limit` at most.
    pub top_senders: Vec<TrafficEntry>,
    /// Top destinations, by bytes, `limit` at most.
    pub top_destinations: Vec<TrafficEntry>,
    /// Hour by hour.
    pub hours: Vec<TrafficHour>,
}

/// The internal end of a threat.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct InternalDevice {
    pub ip: String,
    pub hostname: Option<String>,
    /// Id of the agent machine, when the device runs the agent.
    pub machine_id: Option<i64>,
    pub mac: Option<String>,
    /// How the device was identified: `agent`, `dhcp_lease` or `ip_only`.
    pub identification: Identification,
}

/// How an internal device was identified.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Identification {
    Agent,
    DhcpLease,
    IpOnly,
}

/// What marked the external address.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Indicator {
    /// `ids_signature`, `ip_reputation` or `dns_blocklist`.
    #[serde(rename = "type")]
    pub kind: IndicatorType,
    pub value: String,
    /// Feed or engine that provided it.
    pub source: String,
}

/// Type of a threat indicator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum IndicatorType {
    IdsSignature,
    IpReputation,
    DnsBlocklist,
}

/// The SIEM incident raised for a threat.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct SiemRef {
    #[schema(example = "siem-fw-3")]
    pub id: String,
    pub status: SiemStatus,
}

/// One internal device, external address and day.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Threat {
    pub id: String,
    pub day: NaiveDate,
    pub internal: InternalDevice,
    pub external_ip: String,
    /// Observation sources: `gateway`, `firewall`, `agent`.
    pub sources: Vec<String>,
    pub indicator: Indicator,
    pub severity: Criticality,
    pub hits: u32,
    pub first_seen_at: DateTime<Utc>,
    pub last_seen_at: DateTime<Utc>,
    /// `open` or `acknowledged`.
    pub status: ThreatStatus,
    pub siem_incident: Option<SiemRef>,
}

/// Filters of `GET /firewall/events`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct EventsQuery {
    #[param(inline)]
    pub category: Option<Category>,
    #[param(inline)]
    pub action: Option<Action>,
    /// Firewall or gateway id (see `/firewall/devices`).
    pub device_id: Option<i64>,
    /// Account name (partial, case-insensitive).
    pub user: Option<String>,
    /// Exact IP address, source or destination.
    pub ip: Option<String>,
}

/// Filters of `GET /firewall/traffic`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct TrafficQuery {
    /// Firewall or gateway id.
    pub device_id: Option<i64>,
}

/// Threat row state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ThreatStatus {
    Open,
    Acknowledged,
}

impl ThreatStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            ThreatStatus::Open => "open",
            ThreatStatus::Acknowledged => "acknowledged",
        }
    }
}

/// Filters of `GET /firewall/threats`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ThreatsQuery {
    #[param(inline)]
    pub status: Option<ThreatStatus>,
}

/// Period of the report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, ToSchema)]
pub enum ReportPeriod {
    #[serde(rename = "24h")]
    H24,
    #[default]
    #[serde(rename = "7d")]
    D7,
    #[serde(rename = "30d")]
    D30,
    #[serde(rename = "90d")]
    D90,
}

impl ReportPeriod {
    pub fn seconds(self) -> i64 {
        match self {
            ReportPeriod::H24 => 86_400,
            ReportPeriod::D7 => 7 * 86_400,
            ReportPeriod::D30 => 30 * 86_400,
            ReportPeriod::D90 => 90 * 86_400,
        }
    }
}

/// Query of `GET /firewall/report`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ReportQuery {
    /// `24h`, `7d` (default), `30d` or `90d`.
    #[param(inline)]
    pub period: Option<ReportPeriod>,
}

/// Counts of the report period.
#[derive(Debug, Clone, Default, Serialize, ToSchema)]
pub struct ReportSummary {
    pub events: f64,
    pub by_category: std::collections::BTreeMap<String, f64>,
    pub by_action: std::collections::BTreeMap<String, f64>,
    pub blocked: f64,
    pub auth_failures: f64,
    pub vpn_logins: f64,
    pub intrusions: f64,
    pub open_threats: u32,
}

/// An account targeted by failed logins.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct TargetedAccount {
    pub account: String,
    pub failures: f64,
    pub successes: f64,
    /// Distinct source addresses of the failures.
    pub sources: u32,
    /// True when the account exists in the directory.
    pub known: bool,
}

/// An external address behind hostile events.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct AttackingAddress {
    pub ip: String,
    pub events: f64,
    pub categories: Vec<String>,
    pub blocked: f64,
}

/// A successful login from outside (VPN or authentication).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct SuccessfulConnection {
    pub account: String,
    pub src_ip: String,
    pub category: String,
    pub count: f64,
    pub last_hour: DateTime<Utc>,
}

/// Blocked traffic by service.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct BlockedService {
    pub service: String,
    pub dst_port: Option<u16>,
    pub count: f64,
}

/// A tunnel's changes over the period and its state now.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct TunnelReport {
    pub name: String,
    pub ups: f64,
    pub downs: f64,
    /// State now (`up`, `down`, `degraded`), from the network inventory.
    pub status: Option<LinkStatus>,
}

/// Collection state of a device over the period.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct CollectionState {
    pub device_id: i64,
    pub device: String,
    pub events: f64,
    pub syslog: Channel,
    pub flows: Channel,
}

/// `GET /firewall/report`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Report {
    /// `24h`, `7d`, `30d` or `90d`.
    pub period: ReportPeriod,
    pub from: DateTime<Utc>,
    pub to: DateTime<Utc>,
    pub summary: ReportSummary,
    pub targeted_accounts: Vec<TargetedAccount>,
    pub attacking_addresses: Vec<AttackingAddress>,
    pub successful_connections: Vec<SuccessfulConnection>,
    /// Threat rows of the period, most hits first (20 at most).
    pub threats: Vec<Threat>,
    pub blocked_traffic: Vec<BlockedService>,
    pub tunnels: Vec<TunnelReport>,
    pub collection: Vec<CollectionState>,
    /// SIEM incidents raised by the period's threats.
    pub incidents: Vec<SiemRef>,
}
