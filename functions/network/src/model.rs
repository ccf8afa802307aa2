//! Network infrastructure DTOs (docs/modules.md#network-infrastructure).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

// Devices and tunnels, which the firewall module reads too, are shared.
pub use netops_domain::network::{
    DEVICES, Device, DeviceDetail, DeviceType, Interface, LinkStatus, TUNNELS, Tunnel, TunnelEnd,
    WanLink, WanRole,
};
pub use netops_domain::states::{AlertState, Severity};

/// Sites, keyed by zero-padded id.
pub const SITES: &str = "network_sites";
/// Ports seen open, closed or filtered, keyed by zero-padded address and port.
pub const PORTS: &str = "network_ports";
/// Hourly device metrics, one partition per device id.
pub const METRICS: &str = "network_metrics";
/// The collected metric samples, one partition per device id: the hours of
/// [`METRICS`] are derived from them.
pub const METRIC_SAMPLES: &str = "network_metric_samples";
/// The collected traffic of the tunnels as their local end reports it, one partition per
/// tunnel id: a tunnel's traffic over 24 h is derived from them.
pub const TUNNEL_SAMPLES: &str = "network_tunnel_samples";
/// Network alerts, time of opening, one partition.
pub const ALERTS: &str = "network_alerts";

/// Document key of a port of `ip` (an IPv4 address's octets zero-padded, so that key order
/// is address order; another address as it is).
pub fn port_key(ip: &str, port: u16, protocol: &str) -> String {
    let padded = match ip.parse::<std::net::IpAddr>() {
        Ok(std::net::IpAddr::V4(v4)) => v4.octets().map(|o| format!("{o:03}")).join("."),
        _ => ip.to_owned(),
    };
    format!("{padded}:{port:05}/{protocol}")
}

/// Document key of a numeric id: zero-padded so that key order is numeric order.
pub fn key(id: i64) -> String {
    format!("{id:012}")
}

/// A site of the tenant.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Site {
    pub id: i64,
    #[schema(example = "PAR")]
    pub code: String,
    #[schema(example = "Paris")]
    pub name: String,
    #[schema(example = "Paris")]
    pub city: String,
    #[schema(example = "10.10.0.0/16")]
    pub subnet: String,
    /// Network devices of the site.
    pub device_count: u32,
    /// Agent-equipped machines of the site.
    pub machine_count: u32,
    /// `up` when every device is up, `degraded` when one is degraded or down.
    #[schema(example = "up")]
    pub status: SiteStatus,
}

/// State of a site, from the states of its devices.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum SiteStatus {
    Up,
    Degraded,
}

/// One point of device metrics (averages over the bucket).
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[schema(as = DeviceMetricPoint)]
pub struct MetricPoint {
    /// Start of the bucket.
    pub at: DateTime<Utc>,
    pub cpu_pct: f64,
    pub memory_pct: f64,
    pub in_bps: f64,
    pub out_bps: f64,
    pub latency_ms: f64,
    pub errors: f64,
}

/// Metrics of one device.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct DeviceMetrics {
    pub device_id: i64,
    /// Seconds covered by each point (3600 or a multiple, so at most 500 points).
    pub step_seconds: i64,
    pub points: Vec<MetricPoint>,
}

/// A network alert.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct NetworkAlert {
    #[schema(example = "net-1042")]
    pub id: String,
    /// `device_down`, `wan_down`, `tunnel_down`, `high_cpu`, `interface_errors`, `high_latency`.
    pub kind: NetworkAlertKind,
    /// `critical`, `high`, `medium`, `low`, `info`.
    pub severity: Severity,
    /// `open` or `resolved`.
    pub status: AlertState,
    pub title: String,
    pub device_id: i64,
    pub device: String,
    pub site_id: i64,
    pub opened_at: DateTime<Utc>,
    pub resolved_at: Option<DateTime<Utc>>,
}

/// What a network alert is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum NetworkAlertKind {
    DeviceDown,
    WanDown,
    TunnelDown,
    HighCpu,
    InterfaceErrors,
    HighLatency,
}

impl NetworkAlertKind {
    pub fn as_str(self) -> &'static str {
        match self {
            NetworkAlertKind::DeviceDown => "device_down",
            NetworkAlertKind::WanDown => "wan_down",
            NetworkAlertKind::TunnelDown => "tunnel_down",
            NetworkAlertKind::HighCpu => "high_cpu",
            NetworkAlertKind::InterfaceErrors => "interface_errors",
            NetworkAlertKind::HighLatency => "high_latency",
        }
    }
}

/// A port seen by the discovery scans.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Port {
    #[schema(example = "10.10.10.10")]
    pub ip: String,
    /// Machine or device name at that address, when known.
    pub host: Option<String>,
    pub port: u16,
    /// `tcp` or `udp`.
    pub protocol: String,
    /// `open`, `closed` or `filtered`.
    pub state: PortState,
    #[schema(example = "https")]
    pub service: Option<String>,
    pub first_seen_at: DateTime<Utc>,
    pub last_seen_at: DateTime<Utc>,
}

/// Filters of `GET /network/sites`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct SitesQuery {
    /// Text searched in the site name or city (partial, case-insensitive).
    pub q: Option<String>,
}

/// Filters of `GET /network/devices`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct DevicesQuery {
    /// Site id.
    pub site_id: Option<i64>,
    /// Device type.
    #[serde(rename = "type")]
    #[param(rename = "type", inline)]
    pub device_type: Option<DeviceType>,
    /// Device state.
    #[param(inline)]
    pub status: Option<LinkStatus>,
    /// Text searched in the name, IP address or model (partial, case-insensitive).
    pub q: Option<String>,
}

/// Filters of `GET /network/tunnels`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct TunnelsQuery {
    /// Tunnel state.
    #[param(inline)]
    pub status: Option<LinkStatus>,
    /// Site id at either end of the tunnel.
    pub site_id: Option<i64>,
}

/// `open` or `all`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum AlertStatus {
    Open,
    All,
}

/// Filters of `GET /network/alerts`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct AlertsQuery {
    /// `open`: alerts in progress now, whenever they were opened; `all` (default): alerts
    /// opened in the window, resolved or not.
    pub status: Option<AlertStatus>,
}

/// Port state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum PortState {
    Open,
    Closed,
    Filtered,
}

impl PortState {
    pub fn as_str(self) -> &'static str {
        match self {
            PortState::Open => "open",
            PortState::Closed => "closed",
            PortState::Filtered => "filtered",
        }
    }
}

/// Filters of `GET /network/ports`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PortsQuery {
    /// Exact IP address.
    pub ip: Option<String>,
    /// Port number.
    pub port: Option<u16>,
    /// Port state.
    #[param(inline)]
    pub state: Option<PortState>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn port_keys_sort_by_address_then_port() {
        assert!(port_key("10.10.2.9", 443, "tcp") < port_key("10.10.10.1", 22, "tcp"));
        assert_eq!(port_key("10.1.0.1", 22, "tcp"), "010.001.000.001:00022/tcp");
        assert_eq!(port_key("fd00::1", 53, "udp"), "fd00::1:00053/udp");
    }
}
