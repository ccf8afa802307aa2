//! Fleet DTOs (docs/modules.md#fleet).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

pub use netops_domain::states::AgentStatus;
pub use netops_shared::lookup::MACHINES;

/// Ordinateur équipé de l'agent.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Machine {
    pub id: i64,
    /// Nom d'hôte, clé de chemin des routes par machine.
    #[schema(example = "PAR-LT-0001")]
    pub hostname: String,
    #[schema(example = "10.10.30.14")]
    pub ip: String,
    #[schema(example = "Windows 11 Pro 24H2")]
    pub os: String,
    #[schema(example = "4.12.3")]
    pub agent_version: String,
    /// État de l'agent : `online` ou `offline`.
    #[schema(example = "online")]
    pub status: AgentStatus,
    pub last_seen_at: DateTime<Utc>,
    /// Modules actifs sur la machine (`netflow`, `netdiag`).
    pub modules: Vec<String>,
}

/// `GET /me` : le jeton appelant.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Identity {
    /// Nom du jeton.
    pub name: String,
    /// Portées accordées au jeton.
    #[schema(example = json!(["read:machines", "read:flows"]))]
    pub scopes: Vec<String>,
    pub expires_at: DateTime<Utc>,
    /// Compte client (tenant) propriétaire du jeton.
    pub tenant: String,
}

/// Filtres de `GET /machines`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct MachinesQuery {
    /// État de l'agent, par exemple `online` ou `offline` (égalité exacte ; une autre valeur ne trouve rien).
    pub status: Option<String>,
}
