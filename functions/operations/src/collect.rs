//! How the operations' observations are written (docs/collect.md#job-ping): the scheduled
//! jobs' pings, each taking its heartbeat's last signal, exit code and duration unless a
//! later one did (the heartbeat's state is evaluated when it is read, never sent); and what
//! the agents report of the profiles deployed on their machines, written by
//! [`crate::deployments::record`] (the state of a deployment is derived, never sent).

use std::collections::{BTreeMap, HashMap};

use chrono::{DateTime, Utc};
use netops_shared::collect::{Batch, CollectKind, LineError, bad_text, schema_of};
use netops_shared::module::BoxFuture;
use netops_shared::store::{LineRefusal, StoreError, StoreResult};
use netops_shared::{Msg, Scope};
use serde::Deserialize;
use serde_json::{Map, Value};
use utoipa::ToSchema;

use crate::deployments::record;
use crate::model::{
    DeploymentDoc, DeploymentStatus, HEARTBEATS, HeartbeatDoc, Observed, PROFILES, ProfileDoc,
    num_key,
};

/// `POST /collect/job-ping`.
pub const JOB_PING: CollectKind = CollectKind {
    name: "job-ping",
    scope: Scope::CollectOperations,
    text_field: None,
    schema: schema_of::<PingLine>,
    write: write_pings,
    agents: false,
};

/// Le signal d'une exécution d'une tâche planifiée, envoyé par la tâche à sa fin (`curl`
/// en fin de script). Le heartbeat doit exister dans le compte : il porte la période et la
/// tolérance que le signal ne dit pas ; un signal d'un heartbeat inconnu est refusé
/// (`unknown_reference`). Le heartbeat prend le dernier signal, son code de sortie et sa
/// durée ; un signal plus ancien que le dernier appliqué (en retard, ou renvoyé) est accepté
/// et ne change rien. L'état (`ok`, `failed`, `late`, `pending`) est évalué à la lecture.
/// Alimente `/heartbeats`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = CollectJobPing)]
pub struct PingLine {
    pub at: DateTime<Utc>,
    /// Identifiant du heartbeat (celui de `/heartbeats`).
    #[schema(example = 1002)]
    pub heartbeat: i64,
    /// Code de sortie de l'exécution (0 = succès) ; 0 par défaut.
    #[serde(default)]
    pub exit_code: i32,
    /// Durée de l'exécution, en secondes.
    #[serde(default)]
    pub duration_s: Option<i64>,
}

fn write_pings<'a>(batch: &'a Batch<'a>) -> BoxFuture<'a, StoreResult<Vec<LineRefusal>>> {
    Box::pin(write(batch))
}

async fn write(batch: &Batch<'_>) -> StoreResult<Vec<LineRefusal>> {
    let mut refused = Vec::new();
    let mut latest: std::collections::BTreeMap<i64, (u64, PingLine)> = Default::default();
    for (line, l) in batch.read::<PingLine>(&mut refused) {
        if l.duration_s.is_some_and(|d| d < 0) {
            refused.push(LineError::InvalidObservation.refuse(
                line,
                Msg::new(
                    "duration_s : nombre positif attendu",
                    "duration_s: a positive number is expected",
                ),
            ));
        } else if let Err(r) = batch.check_time(line, l.at) {
            refused.push(r);
        } else if latest.get(&l.heartbeat).is_none_or(|(_, k)| k.at < l.at) {
            latest.insert(l.heartbeat, (line, l));
        }
    }
    let data = |e: serde_json::Error| StoreError::Data(e.to_string());
    for (id, (line, l)) in latest {
        let mut known = true;
        batch
            .update_doc(HEARTBEATS, &num_key(id), |stored| {
                let Some(stored) = stored else {
                    known = false;
                    return Ok(None);
                };
                let mut doc: HeartbeatDoc = serde_json::from_value(stored.clone()).map_err(data)?;
                if doc.last_signal_at.is_some_and(|t| t >= l.at) {
                    return Ok(None);
                }
                doc.last_signal_at = Some(l.at);
                doc.exit_code = Some(l.exit_code);
                doc.last_duration_s = l.duration_s;
                let mut body = stored.clone();
                if let (Some(body), serde_json::Value::Object(new)) = (
                    body.as_object_mut(),
                    serde_json::to_value(doc).map_err(data)?,
                ) {
                    body.extend(new);
                }
                Ok(Some(body))
            })
            .await?;
        if !known {
            refused.push(LineError::UnknownReference.refuse(
                line,
                Msg::new(
                    format!("aucun heartbeat {id} dans ce compte"),
                    format!("no heartbeat {id} in this account"),
                ),
            ));
        }
    }
    Ok(refused)
}

/// `POST /collect/profile-deployment`.
pub const DEPLOYMENT: CollectKind = CollectKind {
    name: "profile-deployment",
    scope: Scope::CollectOperations,
    text_field: None,
    schema: schema_of::<DeploymentLine>,
    write: write_deployments,
    agents: false,
};

/// At most this many items observed in one report.
const ITEMS_MAX: usize = 1000;
/// At most this many characters in who deployed.
const NAME_MAX: usize = 256;

/// Ce que l'agent d'une machine relève d'un profil qui y est déployé : la version déployée,
/// l'issue du déploiement, et pour chaque élément du profil s'il est présent, ses valeurs
/// relevées ou pourquoi il n'a pas pu être lu. Le profil doit exister dans le compte et la
/// machine y être connue (`unknown_reference` sinon) : les profils sont la configuration du
/// compte, les machines viennent des heartbeats de leurs agents. Le déploiement est celui du
/// profil sur la machine ; inconnu, il est créé (son identifiant fait du profil et de la
/// machine). L'état (`failed`, `drifted`, `unverified`, `outdated`, `compliant`) et la
/// comparaison élément par élément sont dérivés, jamais envoyés. Un relevé pas plus récent que
/// le dernier du déploiement (en retard, ou renvoyé) est accepté et ne change rien. Version
/// de 1 à celle du profil, élément absent du profil, relevé d'élément mal formé, plus de 1000
/// éléments : `invalid_observation`. Alimente `/profiles`, `/profiles/{id}` et
/// `/profiles/deployments/{id}/compare`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = CollectProfileDeployment)]
pub struct DeploymentLine {
    /// Quand l'agent a relevé l'état des éléments.
    pub at: DateTime<Utc>,
    /// Identifiant du profil (celui de `/profiles`).
    #[schema(example = 1001)]
    pub profile: i64,
    /// Nom de la machine.
    #[schema(example = "PAR-LT-0042")]
    pub machine: String,
    /// Version du profil déployée.
    #[schema(example = 3)]
    pub profile_version: u32,
    /// `deployed` (par défaut) ou `failed`.
    #[serde(default)]
    #[schema(inline)]
    pub status: Option<DeploymentStatus>,
    /// Date du déploiement ; par défaut celle déjà connue, ou `at`.
    #[serde(default)]
    pub deployed_at: Option<DateTime<Utc>>,
    /// Qui a déployé ; par défaut celui déjà connu, ou `inconnu`.
    #[serde(default)]
    pub deployed_by: Option<String>,
    /// Par clé d'élément du profil : `present` (booléen), `fields` (valeurs relevées) ou
    /// `error` (pourquoi l'élément n'a pas pu être lu).
    #[serde(default)]
    #[schema(value_type = Object)]
    pub items: Map<String, Value>,
}

fn write_deployments<'a>(batch: &'a Batch<'a>) -> BoxFuture<'a, StoreResult<Vec<LineRefusal>>> {
    Box::pin(deployments(batch))
}

impl DeploymentLine {
    fn bad(&self) -> Option<Msg> {
        if self.items.len() > ITEMS_MAX {
            return Some(Msg::new(
                "items : 1000 éléments au plus",
                "items: 1000 items at most",
            ));
        }
        if self.deployed_at.is_some_and(|d| d > self.at) {
            return Some(Msg::new(
                "deployed_at : postérieur à at",
                "deployed_at: after at",
            ));
        }
        if let Some(key) = self.items.iter().find_map(|(k, v)| {
            serde_json::from_value::<Observed>(v.clone())
                .is_err()
                .then_some(k)
        }) {
            return Some(Msg::new(
                format!("items.{key} : present, fields ou error attendus"),
                format!("items.{key}: present, fields or error expected"),
            ));
        }
        bad_text(
            NAME_MAX,
            [
                ("machine", Some(self.machine.as_str()), true),
                ("deployed_by", self.deployed_by.as_deref(), false),
            ],
        )
    }

    /// Why `profile` cannot take this report, if it cannot.
    fn unfit(&self, profile: &ProfileDoc) -> Option<Msg> {
        if self.profile_version == 0 || self.profile_version > profile.version {
            return Some(Msg::new(
                format!("profile_version : de 1 à {} attendu", profile.version),
                format!("profile_version: 1 to {} expected", profile.version),
            ));
        }
        self.items
            .keys()
            .find(|k| !profile.items.iter().any(|i| &i.key == *k))
            .map(|k| {
                Msg::new(
                    format!("items.{k} : pas un élément du profil {}", profile.id),
                    format!("items.{k}: not an item of profile {}", profile.id),
                )
            })
    }
}

async fn deployments(batch: &Batch<'_>) -> StoreResult<Vec<LineRefusal>> {
    let mut refused = Vec::new();
    let (lines, profiles) = batch
        .read_known(
            &mut refused,
            PROFILES,
            (|l: &DeploymentLine| l.at, DeploymentLine::bad),
            |l| num_key(l.profile),
            |l| {
                Msg::new(
                    format!("aucun profil {} dans ce compte", l.profile),
                    format!("no profile {} in this account", l.profile),
                )
            },
        )
        .await?;
    let machines = batch
        .known_machines(lines.iter().map(|(_, l)| l.machine.as_str()))
        .await?;
    let data = |e: serde_json::Error| StoreError::Data(e.to_string());
    let profiles = profiles
        .into_iter()
        .map(|(k, v)| serde_json::from_value::<ProfileDoc>(v).map(|p| (k, p)))
        .collect::<Result<HashMap<_, _>, _>>()
        .map_err(data)?;
    // Each profile's latest report of each machine.
    let mut reports: BTreeMap<i64, BTreeMap<String, DeploymentLine>> = BTreeMap::new();
    for (line, l) in lines {
        let Some(profile) = profiles.get(&num_key(l.profile)) else {
            continue;
        };
        if !machines.contains_key(&l.machine) {
            refused.push(batch.unknown_machine(line, &l.machine));
        } else if let Some(why) = l.unfit(profile) {
            refused.push(LineError::InvalidObservation.refuse(line, why));
        } else {
            let latest = reports.entry(l.profile).or_default();
            if latest.get(&l.machine).is_none_or(|k| k.at < l.at) {
                latest.insert(l.machine.clone(), l);
            }
        }
    }
    for (id, lines) in reports {
        let Some(profile) = profiles.get(&num_key(id)) else {
            continue;
        };
        let docs = lines
            .into_values()
            .map(|l| DeploymentDoc {
                id: 0,
                profile_id: id,
                profile_version: l.profile_version,
                hostname: l.machine,
                deployed_at: l.deployed_at.unwrap_or(l.at),
                deployed_by: l.deployed_by.unwrap_or_else(|| "inconnu".into()),
                status: l.status.unwrap_or(DeploymentStatus::Deployed),
                observed_at: Some(l.at),
                observed: l.items,
            })
            .collect();
        record(batch, profile, docs).await?;
    }
    Ok(refused)
}
