//! Inventory DTOs (docs/modules.md#inventory).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

/// Asset documents, keyed by the zero-padded asset id (so key order is id order).
pub const ASSETS: &str = "inventory_assets";
/// Installed software of each asset, one document per asset (same key).
pub const ASSET_SOFTWARE: &str = "inventory_asset_software";
/// Software catalogue of the tenant, keyed by the zero-padded software id.
pub const SOFTWARE: &str = "inventory_software";
/// Software x CVE records, keyed so that key order is CVSS descending, then CVE id.
pub const CVE_RECORDS: &str = "inventory_cves";

/// At most this many installed software entries in an asset (`get_asset` in the OpenAPI
/// description).
pub const ASSET_SOFTWARE_MAX: usize = 500;

pub fn asset_key(id: i64) -> String {
    format!("{id:012}")
}

/// Hardware of an asset.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Hardware {
    #[schema(example = "Dell Inc.")]
    pub manufacturer: String,
    #[schema(example = "Latitude 5440")]
    pub model: String,
    pub serial_number: String,
    #[schema(example = "13th Gen Intel(R) Core(TM) i5-1345U")]
    pub cpu: String,
    pub cpu_cores: u32,
    pub memory_gb: u32,
    pub disk_gb: u32,
}

/// An inventoried computer (the same hosts as `/machines`).
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Asset {
    pub id: i64,
    #[schema(example = "PAR-LT-0004")]
    pub hostname: String,
    #[schema(example = "par-lt-0004.acme.local")]
    pub fqdn: String,
    /// Every address of the asset, the main one first.
    #[schema(example = json!(["10.10.30.11", "fe80::1c2a:7bff:fe41:9a10"]))]
    pub ips: Vec<String>,
    #[schema(example = "Windows 11 Pro 24H2")]
    pub os: String,
    #[schema(example = "10.0.26100")]
    pub os_build: String,
    /// `laptop`, `workstation` or `server`.
    pub kind: AssetKind,
    /// Site code.
    #[schema(example = "PAR")]
    pub site: String,
    pub hardware: Hardware,
    /// Number of installed software entries.
    pub software_count: u32,
    /// Number of distinct CVEs affecting its installed software.
    pub cve_count: u32,
    pub last_inventory_at: DateTime<Utc>,
}

/// Kind of computer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum AssetKind {
    Laptop,
    Workstation,
    Server,
}

/// End-of-life status of a software version (spec 3.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum EolStatus {
    Eol,
    Warning,
    Unknown,
}

/// One installed software entry of an asset.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct InstalledSoftware {
    pub software_id: i64,
    pub name: String,
    pub publisher: String,
    pub version: String,
    pub installed_at: DateTime<Utc>,
    /// `eol`, `warning` or `unknown`.
    pub eol_status: EolStatus,
}

/// `GET /inventory/assets/{id}`: the asset and its installed software (at most 500).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct AssetDetail {
    #[serde(flatten)]
    pub asset: Asset,
    pub software: Vec<InstalledSoftware>,
}

/// The stored list of an asset's software.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AssetSoftwareDoc {
    pub software: Vec<InstalledSoftware>,
}

/// A software title and version found on the tenant's machines.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Software {
    pub id: i64,
    #[schema(example = "7-Zip")]
    pub name: String,
    #[schema(example = "Igor Pavlov")]
    pub publisher: String,
    #[schema(example = "19.00")]
    pub version: String,
    /// Number of assets where it is installed.
    pub install_count: u32,
    /// End-of-life status: `eol` (support ended), `warning` (ends within 12 months) or
    /// `unknown` (no end of life reached or announced within 12 months).
    #[schema(example = "unknown")]
    pub eol_status: EolStatus,
    /// End of support, when known.
    #[schema(value_type = Option<String>, format = Date)]
    pub eol_date: Option<String>,
    /// Number of CVEs affecting this version.
    pub cve_count: u32,
    /// Highest CVSS base score among its CVEs.
    pub max_cvss: Option<f64>,
}

/// A software x CVE record.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct CveRecord {
    /// `<cve_id>:<software_id>`.
    #[schema(example = "CVE-2025-0411:101006")]
    pub id: String,
    #[schema(example = "CVE-2025-0411")]
    pub cve_id: String,
    pub software_id: i64,
    pub software: String,
    pub publisher: String,
    pub version: String,
    pub description: String,
    /// CVSS v3 base score, 0 to 10.
    #[schema(example = 7.0)]
    pub cvss: f64,
    /// EPSS probability of exploitation in the next 30 days, 0 to 1.
    #[schema(example = 0.18)]
    pub epss: f64,
    /// Listed in the CISA Known Exploited Vulnerabilities catalogue.
    pub known_exploited: bool,
    /// `open`, `acknowledged` or `mitigated`.
    #[schema(example = "open")]
    pub status: CveStatus,
    /// Number of assets running the affected version.
    pub affected_assets: u32,
    #[schema(value_type = String, format = Date)]
    pub published_at: String,
    pub first_seen_at: DateTime<Utc>,
}

/// A 0/1 switch parameter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub enum Flag {
    #[serde(rename = "0")]
    Off,
    #[serde(rename = "1")]
    On,
}

/// Filters of `GET /inventory/assets`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct AssetsQuery {
    /// Text searched (case-insensitive, partial) in hostname, FQDN, IP addresses and OS.
    pub q: Option<String>,
}

/// Filters of `GET /inventory/software`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct SoftwareQuery {
    /// Text searched (case-insensitive, partial) in name and publisher.
    pub q: Option<String>,
    /// `1`: only software with at least one CVE; `0` or absent: no filter.
    #[param(value_type = Option<String>, pattern = "^[01]$")]
    pub has_cve: Option<Flag>,
    /// `1`: only end-of-life status `eol` or `warning` (never `unknown`); `0` or absent: no filter.
    #[param(value_type = Option<String>, pattern = "^[01]$")]
    pub eol: Option<Flag>,
}

/// Status of a CVE record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum CveStatus {
    Open,
    Acknowledged,
    Mitigated,
}

impl CveStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            CveStatus::Open => "open",
            CveStatus::Acknowledged => "acknowledged",
            CveStatus::Mitigated => "mitigated",
        }
    }
}

/// Filters of `GET /inventory/cves`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct CvesQuery {
    /// Minimum CVSS base score, 0 to 10.
    #[param(minimum = 0, maximum = 10)]
    pub min_cvss: Option<f64>,
    /// Record status: `open`, `acknowledged` or `mitigated`.
    #[param(inline)]
    pub status: Option<CveStatus>,
}

/// The id of a software title, the same on every asset and in every tenant: made of its name,
/// publisher and version, below 10^12 (its key is [`asset_key`]).
pub fn software_id(name: &str, publisher: &str, version: &str) -> i64 {
    let digest =
        netops_shared::auth::sha256_hex(format!("{name}\n{publisher}\n{version}").as_bytes());
    i64::from_str_radix(&digest[..12], 16).unwrap_or_default() % 1_000_000_000_000
}

/// The key of a software x CVE record: CVSS descending, then CVE id, then software id.
pub fn cve_key(cvss: f64, cve_id: &str, software_id: i64) -> String {
    format!(
        "{:03}|{cve_id}|{software_id:012}",
        100 - (cvss * 10.0).round() as i64
    )
}

/// The field of a software document that lists the assets it is installed on (their ids,
/// sorted): its `install_count` is their number, so that an inventory taken in again counts
/// nothing twice. Not part of the answer.
pub const INSTALLED_ON: &str = "installed_on";
