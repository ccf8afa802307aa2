//! Operations DTOs (docs/modules.md#operations): maintenance windows, heartbeats, profiles of
//! format profile/1 and their deployments.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use utoipa::{IntoParams, ToSchema};

/// Maintenance windows, keyed by zero-padded id.
pub const MAINTENANCE: &str = "maintenance_windows";
/// Heartbeats (scheduled jobs that signal each run), keyed by zero-padded id.
pub const HEARTBEATS: &str = "heartbeats";
/// Profile documents (format profile/1), keyed by zero-padded id.
pub const PROFILES: &str = "profiles";
/// Profile deployments with the state last observed on the machine, keyed by zero-padded id.
pub const DEPLOYMENTS: &str = "profile_deployments";
/// How many deployments each profile has in each [`DeploymentState`], keyed by the profile's
/// zero-padded id: written with the deployments, so that no answer counts them by reading
/// them.
pub const DEPLOYMENT_COUNTS: &str = "profile_deployments.counts";

pub fn num_key(n: i64) -> String {
    format!("{n:010}")
}

/// The field of an entry of a ranked collection that a deployment has left for another key
/// (its state changed): such an entry is no deployment, and the reads skip it (the document
/// port has no delete).
pub const MOVED: &str = "moved";

/// The collection of one profile's deployments as the answers show them (without what the
/// agent observed), keyed in the order they are shown (`deployments::ranked_key`): a read of its first
/// keys is the answer's first deployments, whatever the size of the fleet.
pub fn ranked_collection(profile_id: i64) -> String {
    format!("profile_deployments.ranked/{}", num_key(profile_id))
}

/// A maintenance window as stored.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MaintenanceDoc {
    pub id: i64,
    pub title: String,
    pub description: String,
    pub starts_at: DateTime<Utc>,
    pub ends_at: DateTime<Utc>,
    pub probes: Vec<String>,
    pub created_by: String,
}

/// A maintenance window (spec 2.5): alerts of the covered probes are silenced while it runs.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct MaintenanceWindow {
    #[schema(example = 1001)]
    pub id: i64,
    #[schema(example = "Mise à jour du cœur de réseau")]
    pub title: String,
    pub description: String,
    pub starts_at: DateTime<Utc>,
    pub ends_at: DateTime<Utc>,
    /// Hostnames of the covered probes; an empty list means the whole tenant.
    pub probes: Vec<String>,
    /// `all` (empty list, or every probe of the tenant), `some`, or `none` (no listed probe
    /// exists any more in the tenant).
    #[schema(example = "all")]
    pub covers: Coverage,
    /// True when `starts_at <= now < ends_at`.
    pub active_now: bool,
    /// `planned`, `active` or `ended`.
    #[schema(example = "active")]
    pub state: WindowState,
    pub created_by: String,
}

/// Which of the tenant's probes a maintenance window covers (spec 2.5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Coverage {
    All,
    Some,
    None,
}

/// Where a maintenance window stands at the time of the request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum WindowState {
    Planned,
    Active,
    Ended,
}

/// Filters of `GET /maintenance`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct MaintenanceQuery {
    /// `1`: only windows active now; `0`: only windows not active now.
    #[param(value_type = Option<u8>, example = 1)]
    pub active: Option<String>,
}

/// A heartbeat as stored.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct HeartbeatDoc {
    pub id: i64,
    pub name: String,
    pub hostname: String,
    pub period_s: i64,
    pub grace_s: i64,
    pub last_signal_at: Option<DateTime<Utc>>,
    pub exit_code: Option<i32>,
    pub last_duration_s: Option<i64>,
}

/// A heartbeat (spec 2.5): a scheduled job that signals each run; last signal, exit code, state.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Heartbeat {
    #[schema(example = 1002)]
    pub id: i64,
    #[schema(example = "Sauvegarde nocturne SQL")]
    pub name: String,
    /// Machine that runs the job.
    pub hostname: String,
    /// Expected seconds between two signals.
    #[schema(example = 86400)]
    pub period_s: i64,
    /// Tolerated delay after the expected time, in seconds.
    #[schema(example = 1800)]
    pub grace_s: i64,
    /// Time of the last signal; null if none was ever received.
    pub last_signal_at: Option<DateTime<Utc>>,
    /// Exit code of the last run (0 = success); null if none was ever received.
    pub exit_code: Option<i32>,
    /// Duration of the last run, seconds.
    pub last_duration_s: Option<i64>,
    /// When the next signal is due (last signal + period).
    pub next_expected_at: Option<DateTime<Utc>>,
    /// `pending` (never signalled), `late` (no signal within period + grace), `failed` (last
    /// exit code not 0), `ok`; evaluated at the time of the request in that order.
    #[schema(example = "ok")]
    pub state: HeartbeatState,
}

/// State of a heartbeat (spec 2.5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum HeartbeatState {
    Pending,
    Late,
    Failed,
    Ok,
}

/// One item of a profile: what must hold on the machine.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct ProfileItem {
    /// Key of the item within the profile.
    #[schema(example = "svc-windows-update")]
    pub key: String,
    /// `service`, `registry`, `firewall_rule`, `package`, `file` or `setting`.
    #[serde(rename = "type")]
    #[schema(example = "service")]
    pub kind: ItemType,
    /// What the item applies to: service name, registry path, rule name, package name...
    pub target: String,
    /// Profile version that added the item.
    pub since_version: u32,
    /// Expected field values.
    #[schema(value_type = Object)]
    pub expected: Map<String, Value>,
}

/// What a profile item applies to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ItemType {
    Service,
    Registry,
    FirewallRule,
    Package,
    File,
    Setting,
}

impl ItemType {
    pub fn as_str(self) -> &'static str {
        match self {
            ItemType::Service => "service",
            ItemType::Registry => "registry",
            ItemType::FirewallRule => "firewall_rule",
            ItemType::Package => "package",
            ItemType::File => "file",
            ItemType::Setting => "setting",
        }
    }
}

/// One step of the verification trace of a profile.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct TraceStep {
    pub step: u32,
    pub at: DateTime<Utc>,
    /// Item key, or null for a check of the whole document.
    pub item: Option<String>,
    pub check: String,
    /// `ok`, `warning` or `error`.
    pub result: StepResult,
    pub detail: String,
}

/// Result of one verification step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum StepResult {
    Ok,
    Warning,
    Error,
}

/// Result of the verification of a profile.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum VerificationResult {
    Passed,
    PassedWithWarnings,
    Failed,
}

/// Verification of a profile before deployment.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Verification {
    pub verified_at: DateTime<Utc>,
    /// `passed`, `passed_with_warnings` or `failed`.
    pub result: VerificationResult,
    pub trace: Vec<TraceStep>,
}

/// The full definition document of a profile, format `profile/1` (spec 2.5).
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct ProfileDoc {
    /// Always `profile/1`.
    #[schema(example = "profile/1")]
    pub format: String,
    #[schema(example = 1001)]
    pub id: i64,
    pub name: String,
    pub description: String,
    /// `windows`, `macos` or `linux`.
    pub os: ProfileOs,
    pub version: u32,
    pub author: String,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub items: Vec<ProfileItem>,
    pub verification: Verification,
}

/// Operating system a profile applies to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ProfileOs {
    Windows,
    Macos,
    Linux,
}

/// What the agent last reported for one item.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Observed {
    pub present: Option<bool>,
    #[serde(default)]
    pub fields: Map<String, Value>,
    pub error: Option<String>,
}

/// A deployment as stored: profile version applied on one machine, and what was observed.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DeploymentDoc {
    pub id: i64,
    pub profile_id: i64,
    pub profile_version: u32,
    pub hostname: String,
    pub deployed_at: DateTime<Utc>,
    pub deployed_by: String,
    pub status: DeploymentStatus,
    pub observed_at: Option<DateTime<Utc>>,
    #[serde(default)]
    pub observed: Map<String, Value>,
}

/// Outcome of a deployment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum DeploymentStatus {
    Deployed,
    Failed,
}

/// Where a deployment stands, worst first: the declaration order is the order the answers
/// list deployments in (and the rank in their ranked keys).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum DeploymentState {
    /// The deployment failed.
    Failed = 0,
    /// An item is modified or absent on the machine.
    Drifted = 1,
    /// An item could not be read by the agent, or the agent never reported.
    Unverified = 2,
    /// Conform as far as it goes, but an older version of the profile is deployed.
    Outdated = 3,
    /// Every item as the profile expects.
    Compliant = 4,
}

/// A profile's deployments counted by state: all of them, whether the answer lists them all or
/// not.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct DeploymentCounts {
    /// Every deployment of the profile.
    pub total: usize,
    pub failed: usize,
    pub drifted: usize,
    pub unverified: usize,
    pub outdated: usize,
    pub compliant: usize,
}

/// A deployment of a profile on a machine (stored as such in its profile's ranked collection).
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Deployment {
    #[schema(example = 10001)]
    pub id: i64,
    pub profile_id: i64,
    /// Version of the profile that was deployed.
    pub profile_version: u32,
    pub hostname: String,
    pub deployed_at: DateTime<Utc>,
    pub deployed_by: String,
    /// `deployed` or `failed`.
    pub status: DeploymentStatus,
    /// When the agent last reported the state of the items; null if never.
    pub observed_at: Option<DateTime<Utc>>,
    /// `failed`, `drifted` (an item modified or absent), `unverified` (an item unreadable, or
    /// no report), `outdated` (an older version of the profile deployed) or `compliant`: the
    /// comparison with the profile (`GET /profiles/deployments/{id}/compare`) as of the
    /// agent's last report.
    #[schema(example = "drifted")]
    pub state: DeploymentState,
}

/// A profile in the list, with its deployments.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ProfileSummary {
    pub id: i64,
    pub format: String,
    pub name: String,
    pub description: String,
    pub os: ProfileOs,
    pub version: u32,
    pub updated_at: DateTime<Utc>,
    pub item_count: usize,
    /// Result of the last verification.
    pub verification: VerificationResult,
    /// Its deployments counted by state, all of them.
    pub deployment_counts: DeploymentCounts,
    /// Its first deployments: problem states first, then by machine name (at most 10;
    /// `meta.deployments_truncated` when a profile has more).
    pub deployments: Vec<Deployment>,
}

/// `GET /profiles/{id}`: the profile/1 document and its deployments.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ProfileDetail {
    #[serde(flatten)]
    pub profile: ProfileDoc,
    /// Its deployments counted by state, all of them.
    pub deployment_counts: DeploymentCounts,
    /// Its first deployments: problem states first, then by machine name (at most 50;
    /// `meta.deployments_truncated` when it has more).
    pub deployments: Vec<Deployment>,
}

/// One field that differs from the profile.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Difference {
    pub field: String,
    pub expected: Value,
    pub actual: Value,
}

/// Comparison of one item.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ItemComparison {
    pub key: String,
    #[serde(rename = "type")]
    pub kind: ItemType,
    pub target: String,
    /// `conforme`, `modifie`, `absent`, `non_deploye` or `indetermine`.
    #[schema(example = "modifie")]
    pub result: CompareResult,
    /// For `modifie`: the first differing field, its expected and actual values.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expected: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub actual: Option<Value>,
    /// For `modifie`: every differing field.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub differences: Vec<Difference>,
    /// Why an item is `non_deploye` or `indetermine`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// How a deployed item compares with its profile (spec 2.5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum CompareResult {
    Conforme,
    Modifie,
    Absent,
    NonDeploye,
    Indetermine,
}

/// Count of items per result.
#[derive(Debug, Clone, Default, Serialize, ToSchema)]
pub struct CompareSummary {
    pub conforme: usize,
    pub modifie: usize,
    pub absent: usize,
    pub non_deploye: usize,
    pub indetermine: usize,
}

/// `GET /profiles/deployments/{id}/compare`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Comparison {
    pub deployment_id: i64,
    pub profile_id: i64,
    pub profile_name: String,
    /// Current version of the profile, compared against.
    pub profile_version: u32,
    /// Version deployed on the machine.
    pub deployed_version: u32,
    pub hostname: String,
    pub observed_at: Option<DateTime<Utc>>,
    pub summary: CompareSummary,
    pub items: Vec<ItemComparison>,
}
