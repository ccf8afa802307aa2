//! How the file servers' access events are written (docs/collect.md#file-access): each stored
//! once under an id made of its content and counted once into the summary's aggregates
//! ([`crate::activity::Activity`]); its folder is derived from its path, never sent.

use chrono::{DateTime, Utc};
use netops_shared::collect::{Batch, CollectKind, LineError, bad_text, content_id, schema_of};
use netops_shared::module::BoxFuture;
use netops_shared::store::{LineRefusal, Record, StoreError, StoreResult};
use netops_shared::{Msg, Scope};
use serde::Deserialize;
use utoipa::ToSchema;

use crate::activity::Activity;
use crate::model::{EVENTS, FileAction, FileEvent};

/// `POST /collect/file-access`.
pub const FILE_ACCESS: CollectKind = CollectKind {
    name: "file-access",
    scope: Scope::CollectFiles,
    text_field: None,
    schema: schema_of::<FileAccessLine>,
    write: write_accesses,
    agents: false,
};

/// At most this many characters in a path.
const PATH_MAX: usize = 1_000;
/// At most this many characters in another text field.
const TEXT_MAX: usize = 300;

/// Un accès à un fichier partagé, tel que le serveur de fichiers l'a audité (événements 5145,
/// 4663 ou leur équivalent). Les serveurs, partages et utilisateurs qu'il nomme ne sont pas
/// tenus en liste par le compte : rien n'est refusé comme inconnu, rien n'est créé. Le
/// dossier est dérivé du chemin (ce qui précède son dernier `\` ou `/`) ; `new_path` n'est
/// admis et exigé que pour `rename`. Enregistré une fois sous un identifiant fait de son
/// contenu et compté une fois dans la synthèse. Alimente `/files/events` et
/// `/files/summary`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = CollectFileAccess)]
pub struct FileAccessLine {
    pub at: DateTime<Utc>,
    #[serde(rename = "type")]
    #[schema(inline)]
    pub action: FileAction,
    #[schema(example = "julie.martin")]
    pub user: String,
    /// Machine d'où venait l'accès.
    #[serde(default)]
    pub machine: Option<String>,
    #[schema(example = "10.10.30.11")]
    pub client_ip: String,
    #[schema(example = "PAR-SRV-0001")]
    pub server: String,
    #[schema(example = "Comptabilite")]
    pub share: String,
    #[schema(example = "\\\\PAR-SRV-0001\\Comptabilite\\2026\\factures-novembre.xlsx")]
    pub path: String,
    #[serde(default)]
    pub new_path: Option<String>,
    #[serde(default)]
    pub size_bytes: Option<u64>,
}

fn write_accesses<'a>(batch: &'a Batch<'a>) -> BoxFuture<'a, StoreResult<Vec<LineRefusal>>> {
    Box::pin(write(batch))
}

/// The folder of a path: what comes before its last separator; `None` when there is none.
fn folder(path: &str) -> Option<&str> {
    path.rfind(['\\', '/'])
        .map(|i| &path[..i])
        .filter(|f| !f.trim_matches(['\\', '/']).is_empty())
}

/// Why the line cannot be kept, naming the field at fault.
fn invalid(l: &FileAccessLine) -> Option<Msg> {
    let texts = bad_text(
        TEXT_MAX,
        [
            ("user", Some(l.user.as_str()), true),
            ("server", Some(l.server.as_str()), true),
            ("share", Some(l.share.as_str()), true),
            ("machine", l.machine.as_deref(), false),
        ],
    );
    let paths = || {
        bad_text(
            PATH_MAX,
            [
                ("path", Some(l.path.as_str()), true),
                ("new_path", l.new_path.as_deref(), false),
            ],
        )
    };
    if let Some(why) = texts.or_else(paths) {
        return Some(why);
    }
    if l.client_ip.parse::<std::net::IpAddr>().is_err() {
        return Some(Msg::new(
            "client_ip : adresse IP invalide",
            "client_ip: invalid IP address",
        ));
    }
    if folder(&l.path).is_none() {
        return Some(Msg::new(
            "path : chemin sans dossier",
            "path: a path without a folder",
        ));
    }
    if (l.action == FileAction::Rename) != l.new_path.is_some() {
        return Some(Msg::new(
            "new_path : exigé pour rename, et pour rename seulement",
            "new_path: required for rename, and for rename only",
        ));
    }
    None
}

async fn write(batch: &Batch<'_>) -> StoreResult<Vec<LineRefusal>> {
    let mut refused = Vec::new();
    let mut items = Vec::new();
    for (line, l) in batch.read::<FileAccessLine>(&mut refused) {
        if let Some(why) = invalid(&l) {
            refused.push(LineError::InvalidObservation.refuse(line, why));
            continue;
        }
        if let Err(r) = batch.check_time(line, l.at) {
            refused.push(r);
            continue;
        }
        let mut event = FileEvent {
            id: String::new(),
            at: l.at,
            action: l.action,
            user: l.user,
            machine: l.machine,
            client_ip: l.client_ip,
            server: l.server,
            share: l.share,
            folder: folder(&l.path).unwrap_or_default().to_owned(),
            path: l.path,
            new_path: l.new_path,
            size_bytes: l.size_bytes,
        };
        event.id = content_id("fa", l.at, &event)?;
        let record = Record {
            partition: event.server.clone(),
            ts: l.at.timestamp_millis(),
            id: event.id.clone(),
            body: serde_json::to_value(&event).map_err(|e| StoreError::Data(e.to_string()))?,
        };
        items.push((record, event));
    }
    batch
        .store_counted(EVENTS, items, |new| {
            let mut activity = Activity::default();
            for e in &new {
                activity.add(e);
            }
            activity.series()
        })
        .await?;
    Ok(refused)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_folder_is_what_precedes_the_last_separator() {
        assert_eq!(
            folder("\\\\SRV\\Compta\\2026\\f.xlsx"),
            Some("\\\\SRV\\Compta\\2026")
        );
        assert_eq!(folder("/srv/partage/f.txt"), Some("/srv/partage"));
        assert_eq!(folder("f.txt"), None);
        assert_eq!(folder("\\f.txt"), None);
    }
}
