//! DNS DTOs (docs/modules.md#dns).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

pub use netops_domain::states::Criticality;

/// Resolutions seen by the agents, one partition per machine hostname.
pub const RESOLUTIONS: &str = "dns_resolutions";
/// Threat domains resolved by machines; time = last seen.
pub const THREATS: &str = "dns_threats";
/// Queries collected from the DNS servers, one partition per server.
pub const SERVER_QUERIES: &str = "dns_server_queries";
/// Collection settings of the tenant (document `servers`).
pub const COLLECTION: &str = "dns_collection";
pub use netops_shared::lookup::MACHINES;

/// One resolution made by a machine.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Resolution {
    pub id: String,
    pub at: DateTime<Utc>,
    #[schema(example = "PAR-LT-0004")]
    pub machine: String,
    pub machine_ip: String,
    /// Session user of the machine, when known.
    pub user: Option<String>,
    /// Process that asked, when known.
    pub process: Option<String>,
    #[schema(example = "login.microsoftonline.com")]
    pub domain: String,
    /// `A`, `AAAA`, `CNAME`, `MX`, `TXT`, `SRV`, `PTR`.
    pub query_type: String,
    /// `NOERROR`, `NXDOMAIN`, `SERVFAIL`, `REFUSED`.
    pub response_code: String,
    pub answers: Vec<String>,
    /// Server that answered.
    pub resolver: String,
    pub latency_ms: f64,
}

/// A domain ranked by number of queries.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct TopDomain {
    pub domain: String,
    pub queries: f64,
    /// Distinct machines that asked.
    pub machines: u32,
    pub nxdomain: f64,
    pub failures: f64,
    /// Last hour with a query.
    pub last_seen_hour: DateTime<Utc>,
}

/// A machine that resolved a threat domain: one machine, rule and UTC day, derived from its
/// resolutions (see `CollectDnsResolution`).
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct DnsThreat {
    pub id: String,
    pub domain: String,
    /// `malware`, `phishing`, `c2`, `dga`, `newly_registered`, `cryptomining`, `tunneling`.
    pub category: ThreatCategory,
    /// `critical`, `high`, `medium`, `low`.
    pub severity: Criticality,
    pub machine: String,
    pub machine_ip: String,
    pub user: Option<String>,
    /// The machine's resolutions the rule retained that day.
    pub queries: u32,
    /// True when the resolver answered with the sinkhole instead of the real address.
    pub blocked: bool,
    /// Feed that listed the domain.
    pub source: String,
    pub first_seen_at: DateTime<Utc>,
    pub last_seen_at: DateTime<Utc>,
    pub acknowledged: bool,
    pub acknowledged_at: Option<DateTime<Utc>>,
}

/// What a threat domain is listed for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ThreatCategory {
    Malware,
    Phishing,
    C2,
    Dga,
    NewlyRegistered,
    Cryptomining,
    Tunneling,
}

/// A query collected from a DNS server.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct ServerQuery {
    pub id: String,
    pub at: DateTime<Utc>,
    #[schema(example = "PAR-SRV-0001")]
    pub server: String,
    pub client_ip: String,
    /// Machine name of the client, when it runs the agent.
    pub client: Option<String>,
    pub domain: String,
    pub query_type: String,
    pub response_code: String,
    pub suspicious: bool,
    /// Why it is suspicious: `dga`, `known_bad`, `tunneling`, `newly_registered`.
    pub reason: Option<SuspicionReason>,
}

/// Why a server query is suspicious.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum SuspicionReason {
    Dga,
    KnownBad,
    Tunneling,
    NewlyRegistered,
}

/// DNS server collection of a tenant.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Collection {
    pub active: bool,
    /// DNS servers whose query logs are collected.
    pub servers: Vec<String>,
    pub since: Option<DateTime<Utc>>,
}

/// `0` or `1`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub enum Flag {
    #[serde(rename = "0")]
    No,
    #[serde(rename = "1")]
    Yes,
}

/// Filters of `GET /dns/resolutions`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ResolutionsQuery {
    /// Exact host name of a machine.
    pub machine: Option<String>,
    /// Text searched in the domain (partial, case-insensitive).
    pub domain: Option<String>,
}

/// Filters of `GET /dns/top-domains`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct TopDomainsQuery {
    /// Exact host name of a machine.
    pub machine: Option<String>,
}

/// Filters of `GET /dns/threats`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ThreatsQuery {
    /// `1`: only acknowledged threats; `0`: only those not acknowledged; absent: both.
    #[param(inline, value_type = Option<String>)]
    pub acknowledged: Option<Flag>,
}

/// Filters of `GET /dns/server-queries`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ServerQueriesQuery {
    /// Text searched in the domain (partial, case-insensitive).
    pub domain: Option<String>,
    /// `1`: only suspicious queries; `0` or absent: all.
    #[param(inline, value_type = Option<String>)]
    pub suspicious: Option<Flag>,
}
