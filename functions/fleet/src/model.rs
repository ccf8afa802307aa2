//! Fleet DTOs (spec 2.3).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

/// Collection of machine documents, keyed by hostname.
pub const MACHINES: &str = "machines";

/// A computer running the agent.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Machine {
    pub id: i64,
    /// Used as the path key of per-machine routes.
    #[schema(example = "PAR-LT-0001")]
    pub hostname: String,
    #[schema(example = "10.10.30.14")]
    pub ip: String,
    #[schema(example = "Windows 11 Pro 24H2")]
    pub os: String,
    #[schema(example = "4.12.3")]
    pub agent_version: String,
    /// Agent state: `online` or `offline`.
    #[schema(example = "online")]
    pub status: String,
    pub last_seen_at: DateTime<Utc>,
    /// Modules active on the machine (`netflow`, `netdiag`).
    pub modules: Vec<String>,
}

/// `GET /me`: the calling token.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Identity {
    /// Name of the token.
    pub name: String,
    /// Scopes granted to the token.
    #[schema(example = json!(["read:machines", "read:flows"]))]
    pub scopes: Vec<String>,
    pub expires_at: DateTime<Utc>,
    /// Customer account (tenant) owning the token.
    pub tenant: String,
}

/// Filters of `GET /machines`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct MachinesQuery {
    /// Agent state, e.g. `online` or `offline` (exact match; other values find nothing).
    pub status: Option<String>,
}
