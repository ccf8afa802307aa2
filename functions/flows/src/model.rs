//! Flows DTOs (docs/modules.md#flows) and the names of what the module stores.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

/// Processes of agentless devices are unknown; so are their users.
pub const UNKNOWN: &str = "inconnu";

/// Detailed flow records seen by agents; partition = hostname.
pub const RECORDS: &str = "flows.records";
/// Flows seen by the site gateways (IPFIX, NetFlow) as their relays sent them, kept so that
/// one sent again is counted once; partition = the gateway's name.
pub const GATEWAY_RECORDS: &str = "flows.gateway";
/// The firewall module's devices (`/firewall/devices`): the gateways whose flows are relayed.
pub const GATEWAYS: &str = "firewall_devices";
/// Failed outbound connections seen by agents; partition = hostname.
pub const BLOCKED: &str = "flows.blocked";
/// Hourly totals of the tenant's agent traffic, one row per hour (hourly tier only).
pub const SUM: &str = "flows.sum";

/// The hourly totals of one machine's agent traffic, shaped like [`SUM`]: a machine's
/// summary reads its own series.
pub fn machine_sum(host: &str) -> String {
    format!("{SUM}/{host}")
}
/// Agent traffic per remote destination.
pub const DEST_AGENT: &str = "flows.dest.agent";
/// Gateway (IPFIX) traffic per remote destination, flagged when the device has an agent.
pub const DEST_GATEWAY: &str = "flows.dest.gateway";
/// Agent traffic of one machine per remote destination: one series per machine
/// ([`machine_destinations`]), so a machine's destinations read only its own rows.
pub const MACHINE_DEST: &str = "flows.mdest";

/// The series of `host`'s destinations.
pub fn machine_destinations(host: &str) -> String {
    format!("{MACHINE_DEST}/{host}")
}
/// The explore aggregates of the external side (every dimension but interne, processus and
/// utilisateur), agent and gateway rows; the internal side is in [`crate::cube`]'s families.
pub const CUBE_EXT: &str = "flows.cubex";
/// Firewall-log connections by action, rule and category.
pub const FIREWALL: &str = "flows.fw";
/// Documents: the tenant's collection settings (which sources are collected).
pub const SOURCES: &str = "flows.sources";
pub use netops_shared::lookup::MACHINES;

/// Stored measure names (short: they repeat in every row).
pub const BYTES: &str = "b";
pub const FLOWS: &str = "f";
pub const CONNECTIONS: &str = "c";

/// Attribution required by the CC BY 4.0 licence of the geolocation data: every source of
/// the compiled tables (docs/geolocation.md; geo/data/NOTICE, shipped with the file).
pub const GEO_ATTRIBUTION: &str = "Pays : IP to Country Lite de DB-IP (https://db-ip.com). \
    Opérateurs : noms des systèmes autonomes de RouteViews (https://www.routeviews.org), du NRO \
    (https://www.nro.net) et d'IP to ASN Lite de DB-IP, réunis par ip-location-db. Sous licence \
    Creative Commons Attribution 4.0 International (CC BY 4.0, \
    https://creativecommons.org/licenses/by/4.0/). IP Geolocation by DB-IP.";

/// Collection of failed connections starts on this day (`list_blocked_flows` in the OpenAPI
/// description).
pub const BLOCKED_COLLECTION_START: &str = "2026-09-27T00:00:00Z";

/// Network protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub enum Protocol {
    #[serde(rename = "TCP")]
    Tcp,
    #[serde(rename = "UDP")]
    Udp,
}

impl Protocol {
    pub fn as_str(self) -> &'static str {
        match self {
            Protocol::Tcp => "TCP",
            Protocol::Udp => "UDP",
        }
    }
}

/// Direction of a flow, seen from the machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    Inbound,
    Outbound,
}

impl Direction {
    pub fn as_str(self) -> &'static str {
        match self {
            Direction::Inbound => "inbound",
            Direction::Outbound => "outbound",
        }
    }
}

/// Failure types of an outbound connection (spec 2.5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum FailureType {
    Refused,
    Timeout,
    /// Blocked by the local firewall.
    Blocked,
    HostUnreachable,
    NetworkUnreachable,
    Reset,
    Aborted,
}

impl FailureType {
    pub const ALL: [FailureType; 7] = [
        FailureType::Refused,
        FailureType::Timeout,
        FailureType::Blocked,
        FailureType::HostUnreachable,
        FailureType::NetworkUnreachable,
        FailureType::Reset,
        FailureType::Aborted,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            FailureType::Refused => "refused",
            FailureType::Timeout => "timeout",
            FailureType::Blocked => "blocked",
            FailureType::HostUnreachable => "host_unreachable",
            FailureType::NetworkUnreachable => "network_unreachable",
            FailureType::Reset => "reset",
            FailureType::Aborted => "aborted",
        }
    }
}

/// One observed connection (spec 2.5 "Flow record").
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct FlowRecord {
    #[schema(example = "f-PAR-LT-0001-1763800000000-3")]
    pub id: String,
    pub time: DateTime<Utc>,
    /// Host name of the machine whose agent saw the flow.
    #[schema(example = "PAR-LT-0001")]
    pub machine: String,
    #[schema(example = "ms-teams.exe")]
    pub process: String,
    /// Account running the process.
    #[schema(example = "julie.martin")]
    pub user: String,
    #[schema(example = "10.10.30.14")]
    pub local_ip: String,
    pub local_port: u16,
    #[schema(example = "52.113.194.132")]
    pub remote_ip: String,
    pub remote_port: u16,
    /// Remote host name when known.
    #[schema(example = "teams.microsoft.com")]
    pub remote_host: Option<String>,
    pub protocol: Protocol,
    pub direction: Direction,
    /// Bytes sent and received.
    pub bytes: u64,
    /// True for a listening socket (hidden unless `include_listening=1`).
    pub listening: bool,
    /// ISO 3166 country code of the remote address (geolocation data, CC BY 4.0);
    /// `local` for private addresses.
    #[schema(example = "NL")]
    pub country: String,
    /// Network operator of the remote address (geolocation data, CC BY 4.0).
    #[schema(example = "Microsoft Corporation")]
    pub operator: String,
}

/// Stored body of a flow record: short keys, since this is by far the biggest series
/// (time and machine are the record's own time and partition).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StoredFlow {
    pub p: String,
    pub u: String,
    pub li: String,
    pub lp: u16,
    pub ri: String,
    pub rp: u16,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rh: Option<String>,
    pub t: Protocol,
    pub d: Direction,
    pub b: u64,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub l: bool,
    pub c: String,
    pub o: String,
}

/// Filters of `GET /flows`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct FlowsQuery {
    /// Exact host name of the machine; absent = every machine of the tenant.
    pub machine: Option<String>,
    /// `TCP` or `UDP`.
    #[param(value_type = Option<String>, example = "TCP")]
    pub protocol: Option<Protocol>,
    /// `inbound` or `outbound`.
    #[param(value_type = Option<String>, example = "outbound")]
    pub direction: Option<Direction>,
    /// Remote address or its beginning (`52.113.` finds the whole range).
    pub remote_ip: Option<String>,
    pub remote_port: Option<u16>,
    /// Part of the process name, case-insensitive.
    pub process: Option<String>,
    /// Text searched in the remote address and the remote host name, case-insensitive.
    pub destination: Option<String>,
    /// `1` to include listening sockets (hidden otherwise).
    #[param(value_type = Option<u8>, example = 1)]
    pub include_listening: Option<u8>,
}

/// Source of `GET /flows/destinations`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum DestSource {
    #[default]
    Agent,
    Gateway,
    All,
}

/// Filters of `GET /flows/destinations`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct DestinationsQuery {
    /// `agent` (default), `gateway` (IPFIX, including devices without agent) or `all`.
    #[param(value_type = Option<String>, example = "all")]
    pub source: Option<DestSource>,
    /// Exact host name of a machine of the tenant.
    pub machine: Option<String>,
}

/// One remote destination and its volume over the window.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Destination {
    #[schema(example = "52.113.194.132")]
    pub remote_ip: String,
    #[schema(example = "teams.microsoft.com")]
    pub remote_host: Option<String>,
    #[schema(example = "NL")]
    pub country: String,
    #[schema(example = "Microsoft Corporation")]
    pub operator: String,
    pub bytes: u64,
    pub flows: u64,
    /// With `source=all`: the sources that saw this destination (`agent`, `gateway`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seen_by: Option<Vec<String>>,
}

/// Filters of `GET /flows/summary`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct SummaryQuery {
    /// Exact host name of a machine; absent = the whole tenant.
    pub machine: Option<String>,
}

/// Bytes and flows.
#[derive(Debug, Clone, Copy, Default, Serialize, ToSchema)]
pub struct Volume {
    pub bytes: u64,
    pub flows: u64,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ProtocolVolume {
    pub protocol: Protocol,
    pub bytes: u64,
    pub flows: u64,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct DirectionVolume {
    pub direction: Direction,
    pub bytes: u64,
    pub flows: u64,
}

/// One hour of the summary series.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct HourPoint {
    /// Start of the hour.
    pub time: DateTime<Utc>,
    pub bytes: u64,
    pub flows: u64,
}

/// `GET /flows/summary` (spec 4.4 rule 3).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Summary {
    /// The machine, or null for the whole tenant.
    pub machine: Option<String>,
    pub totals: Volume,
    pub by_protocol: Vec<ProtocolVolume>,
    pub by_direction: Vec<DirectionVolume>,
    /// One point per hour of the window (hours without traffic are zero), at most 744.
    pub series: Vec<HourPoint>,
}

/// One machine ranked by volume.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Talker {
    pub rank: u32,
    #[schema(example = "PAR-SRV-0001")]
    pub machine: String,
    pub bytes: u64,
    pub bytes_in: u64,
    pub bytes_out: u64,
    pub flows: u64,
}

/// Filters of `GET /flows/blocked`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct BlockedQuery {
    /// Exact host name of a machine of the tenant (404 when unknown).
    pub machine: Option<String>,
    /// Failure type: refused, timeout, blocked, host_unreachable, network_unreachable,
    /// reset, aborted.
    #[param(value_type = Option<String>, example = "timeout")]
    #[serde(rename = "type")]
    pub kind: Option<FailureType>,
}

/// A failed outbound connection seen by an agent (spec 4.4 rule 5).
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct BlockedFlow {
    pub id: String,
    pub time: DateTime<Utc>,
    pub machine: String,
    #[serde(rename = "type")]
    pub kind: FailureType,
    pub process: String,
    pub user: String,
    pub remote_ip: String,
    pub remote_port: u16,
    pub remote_host: Option<String>,
    pub protocol: Protocol,
}

/// Query of `GET /flows/explore` (`explore_flows` in the OpenAPI description).
#[derive(Debug, Clone, Default, Serialize, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ExploreQuery {
    /// 1 to 3 comma-separated dimensions among interne, externe, pays, operateur, port,
    /// service, proto, sens, source, passerelle, site, interface, processus, utilisateur;
    /// with `source=firewall`: action, regle, categorie. Default `service` (`action` for
    /// the firewall).
    #[param(example = "pays,operateur,service")]
    pub dims: Option<String>,
    /// `all` (default), `agent`, `gateway` or `firewall`.
    #[param(example = "all")]
    pub source: Option<String>,
    /// `1h`, `6h`, `24h` (default), `7d` or `30d`.
    #[param(example = "30d")]
    pub period: Option<String>,
    /// `bytes` (default) or `flows`. The firewall measures connections: `bytes` is refused.
    #[param(example = "bytes")]
    pub metric: Option<String>,
    /// `<dimension> <operator> <value>` joined by `et`; operators `=` and `!=`; values
    /// with spaces between double quotes.
    #[param(example = "sens = outbound et pays != FR")]
    pub filter: Option<String>,
    /// Values kept per dimension, 3 to 20 (default 10); the rest is summed in `autres`.
    #[param(value_type = Option<u32>, example = 10)]
    pub limit: Option<String>,
}

/// The time series stacked by the first dimension.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct StackedSeries {
    /// The first dimension's kept values, biggest first, then `autres` when some remain.
    pub keys: Vec<String>,
    pub points: Vec<StackedPoint>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct StackedPoint {
    /// Start of the step (hour or day).
    pub time: DateTime<Utc>,
    pub values: BTreeMap<String, f64>,
}

/// One end of a Sankey link.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, ToSchema)]
pub struct Node {
    pub dim: String,
    pub value: String,
}

/// A Sankey link between values of two consecutive dimensions.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Link {
    pub from: Node,
    pub to: Node,
    pub value: f64,
}

/// One combination of the asked dimensions, ranked.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct TopItem {
    pub values: BTreeMap<String, String>,
    pub value: f64,
    /// Part of the total, 0 to 1.
    pub share: f64,
}

/// `GET /flows/explore`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Exploration {
    pub dims: Vec<String>,
    pub source: String,
    pub period: String,
    /// `bytes`, `flows` or, for the firewall, `connections`.
    pub measure: String,
    /// Step of the series: `1h` or `1d`.
    pub step: String,
    pub total: f64,
    pub series: StackedSeries,
    pub links: Vec<Link>,
    pub top: Vec<TopItem>,
}
