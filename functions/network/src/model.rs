//! Network infrastructure DTOs (spec 4.14).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

/// Sites, keyed by zero-padded id.
pub const SITES: &str = "network_sites";
/// Devices, keyed by zero-padded id (so key order is id order).
pub const DEVICES: &str = "network_devices";
/// Inter-site VPN tunnels, keyed by zero-padded id.
pub const TUNNELS: &str = "network_tunnels";
/// Ports seen open, closed or filtered, keyed by zero-padded address and port.
pub const PORTS: &str = "network_ports";
/// Hourly device metrics, one partition per device id.
pub const METRICS: &str = "network_metrics";
/// Network alerts, time of opening, one partition.
pub const ALERTS: &str = "network_alerts";

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
    pub status: String,
}

/// Device type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum DeviceType {
    Firewall,
    Router,
    Switch,
    AccessPoint,
}

impl DeviceType {
    pub fn as_str(self) -> &'static str {
        match self {
            DeviceType::Firewall => "firewall",
            DeviceType::Router => "router",
            DeviceType::Switch => "switch",
            DeviceType::AccessPoint => "access_point",
        }
    }
}

/// Device or link state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum LinkStatus {
    Up,
    Down,
    Degraded,
}

impl LinkStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            LinkStatus::Up => "up",
            LinkStatus::Down => "down",
            LinkStatus::Degraded => "degraded",
        }
    }
}

/// A network device (list form).
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Device {
    pub id: i64,
    #[schema(example = "PAR-FW-01")]
    pub name: String,
    /// `firewall`, `router`, `switch` or `access_point`.
    #[serde(rename = "type")]
    #[schema(example = "firewall")]
    pub device_type: String,
    #[schema(example = "Fortinet")]
    pub vendor: String,
    #[schema(example = "FortiGate 100F")]
    pub model: String,
    #[schema(example = "10.10.0.1")]
    pub ip: String,
    pub site_id: i64,
    #[schema(example = "PAR")]
    pub site: String,
    /// `up`, `down` or `degraded`.
    #[schema(example = "up")]
    pub status: String,
    #[schema(example = "7.4.4")]
    pub firmware: String,
    pub serial: String,
    pub last_seen_at: DateTime<Utc>,
    pub uptime_seconds: i64,
}

/// A WAN link of an edge device.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct WanLink {
    #[schema(example = "wan1")]
    pub name: String,
    #[schema(example = "Orange Business")]
    pub provider: String,
    /// `fiber`, `sdsl`, `lte`...
    #[schema(example = "fiber")]
    pub medium: String,
    /// `primary` or `backup`.
    pub role: String,
    pub bandwidth_down_mbps: u32,
    pub bandwidth_up_mbps: u32,
    #[schema(example = "203.0.113.10")]
    pub public_ip: String,
    /// `up`, `down` or `degraded`.
    pub status: String,
    pub latency_ms: Option<f64>,
    pub loss_pct: Option<f64>,
}

/// An interface of a device.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Interface {
    #[schema(example = "port1")]
    pub name: String,
    /// `up`, `down` or `degraded`.
    pub status: String,
    pub speed_mbps: u32,
    pub vlan: Option<u32>,
    pub description: String,
    pub in_bps: u64,
    pub out_bps: u64,
    pub errors_24h: u64,
}

/// A device with its WAN links and interfaces.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct DeviceDetail {
    #[serde(flatten)]
    pub device: Device,
    pub wan_links: Vec<WanLink>,
    pub interfaces: Vec<Interface>,
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

/// One end of a tunnel.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct TunnelEnd {
    pub site_id: i64,
    pub site: String,
    pub device_id: i64,
    pub device: String,
}

/// An inter-site VPN tunnel.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Tunnel {
    pub id: i64,
    #[schema(example = "PAR-LYO")]
    pub name: String,
    /// `up`, `down` or `degraded`.
    pub status: String,
    #[schema(example = "IPsec IKEv2")]
    pub protocol: String,
    pub local: TunnelEnd,
    pub remote: TunnelEnd,
    pub established_at: Option<DateTime<Utc>>,
    pub last_change_at: DateTime<Utc>,
    pub latency_ms: Option<f64>,
    pub bytes_in_24h: u64,
    pub bytes_out_24h: u64,
}

/// A network alert.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct NetworkAlert {
    #[schema(example = "net-1042")]
    pub id: String,
    /// `device_down`, `wan_down`, `tunnel_down`, `high_cpu`, `interface_errors`, `high_latency`.
    pub kind: String,
    /// `critical`, `high`, `medium`, `low`, `info`.
    pub severity: String,
    /// `open` or `resolved`.
    pub status: String,
    pub title: String,
    pub device_id: i64,
    pub device: String,
    pub site_id: i64,
    pub opened_at: DateTime<Utc>,
    pub resolved_at: Option<DateTime<Utc>>,
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
    pub state: String,
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
    #[param(inline)]
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
