//! Network devices and the VPN tunnels between sites (docs/modules.md#network-infrastructure):
//! served by the network module and read by the firewall module, so they live here, as
//! machines do.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// Devices, keyed by zero-padded id (so key order is id order).
pub const DEVICES: &str = "network_devices";
/// Inter-site VPN tunnels, keyed by zero-padded id.
pub const TUNNELS: &str = "network_tunnels";
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

/// State of a device, WAN link, interface or tunnel, and of an availability monitor and its
/// last check: `up`, `down` or `degraded`.
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

/// Transmission medium of a WAN link.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum WanMedium {
    Fiber,
    Sdsl,
    Lte,
}

/// Role of a WAN link.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum WanRole {
    Primary,
    Backup,
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
    pub device_type: DeviceType,
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
    pub status: LinkStatus,
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
    /// `fiber`, `sdsl` or `lte`.
    #[schema(example = "fiber")]
    pub medium: WanMedium,
    /// `primary` or `backup`.
    pub role: WanRole,
    pub bandwidth_down_mbps: u32,
    pub bandwidth_up_mbps: u32,
    #[schema(example = "203.0.113.10")]
    pub public_ip: String,
    /// `up`, `down` or `degraded`.
    pub status: LinkStatus,
    pub latency_ms: Option<f64>,
    pub loss_pct: Option<f64>,
}

/// An interface of a device.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Interface {
    #[schema(example = "port1")]
    pub name: String,
    /// `up`, `down` or `degraded`.
    pub status: LinkStatus,
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
    pub status: LinkStatus,
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
