//! How the scheduled jobs' pings are written (docs/collect.md#job-ping): each takes its
//! heartbeat's last signal, exit code and duration, unless a later one did; the heartbeat's
//! state is evaluated when it is read, never sent.

use chrono::{DateTime, Utc};
use netops_shared::collect::{Batch, CollectKind, LineError, schema_of};
use netops_shared::module::BoxFuture;
use netops_shared::store::{LineRefusal, StoreError, StoreResult};
use netops_shared::{Msg, Scope};
use serde::Deserialize;
use utoipa::ToSchema;

use crate::model::{HEARTBEATS, HeartbeatDoc, num_key};

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
