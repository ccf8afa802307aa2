//! Shared-file access DTOs (docs/modules.md#files).

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

/// File access events, one partition per file server.
pub const EVENTS: &str = "file_events";

/// What was done to the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum FileAction {
    Read,
    Create,
    Modify,
    Delete,
    Rename,
}

impl FileAction {
    pub const ALL: [FileAction; 5] = [
        FileAction::Read,
        FileAction::Create,
        FileAction::Modify,
        FileAction::Delete,
        FileAction::Rename,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            FileAction::Read => "read",
            FileAction::Create => "create",
            FileAction::Modify => "modify",
            FileAction::Delete => "delete",
            FileAction::Rename => "rename",
        }
    }
}

/// Who read, created, modified, deleted or renamed what.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct FileEvent {
    pub id: String,
    pub at: DateTime<Utc>,
    /// `read`, `create`, `modify`, `delete` or `rename`.
    #[serde(rename = "type")]
    pub action: FileAction,
    #[schema(example = "julie.martin")]
    pub user: String,
    /// Machine the access came from.
    #[schema(example = "PAR-LT-0004")]
    pub machine: Option<String>,
    pub client_ip: String,
    /// File server.
    #[schema(example = "PAR-SRV-0001")]
    pub server: String,
    #[schema(example = "Comptabilite")]
    pub share: String,
    #[schema(example = "\\\\PAR-SRV-0001\\Comptabilite\\2026\\factures-novembre.xlsx")]
    pub path: String,
    /// Folder of the file.
    pub folder: String,
    /// New path of a renamed file.
    pub new_path: Option<String>,
    pub size_bytes: Option<u64>,
}

/// Volume of one action.
#[derive(Debug, Clone, Default, Serialize, ToSchema)]
#[schema(as = FileVolume)]
pub struct Volume {
    pub events: f64,
    pub bytes: f64,
}

/// A user ranked by activity.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ActiveUser {
    pub user: String,
    pub events: f64,
    pub by_action: BTreeMap<String, f64>,
}

/// A folder ranked by activity.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ActiveFolder {
    pub folder: String,
    pub events: f64,
    /// Distinct users who touched it.
    pub users: u32,
    pub by_action: BTreeMap<String, f64>,
}

/// `GET /files/summary`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct FileSummary {
    pub total: Volume,
    /// Every action, zero included.
    pub by_action: BTreeMap<String, Volume>,
    /// The 10 most active users.
    pub top_users: Vec<ActiveUser>,
    /// The 10 most active folders.
    pub top_folders: Vec<ActiveFolder>,
}

/// Filters of `GET /files/events`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct EventsQuery {
    /// Account name (partial, case-insensitive).
    pub user: Option<String>,
    /// Text searched in the path, or the new path of a renamed file (partial, case-insensitive).
    pub path: Option<String>,
    /// Action type.
    #[serde(rename = "type")]
    #[param(rename = "type", inline)]
    pub action: Option<FileAction>,
}
