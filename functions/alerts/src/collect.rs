//! How the availability checks are written (docs/collect.md#monitor-check): each check stored
//! once and counted once in the hourly and daily counts behind the availability of
//! `/monitors`; then, from the checks newer than the monitor's last one, its state, its last
//! check and its incidents `hm-<n>`, opened and resolved by the rule of
//! [`netops_domain::runs::apply_checks`]. Monitors are the tenant's configuration: never created
//! by a probe.

use std::collections::{BTreeMap, HashMap};

use netops_shared::collect::{Batch, CollectKind, LineError, bad_text, schema_of};
use netops_shared::module::BoxFuture;
use netops_shared::store::{LineRefusal, Record, StoreError, StoreResult};
use netops_shared::{Msg, Scope};
use serde::Deserialize;
use serde_json::Value;
use utoipa::ToSchema;

use chrono::{DateTime, Utc};

use netops_domain::runs::{Change, apply_checks};

use crate::derive::{
    WideRows, check_status, count_check, incident_number, incident_severity, resolve, wide,
};
use crate::model::{
    CHECKS_DAILY, CHECKS_HOURLY, LastCheck, LinkStatus, MONITOR_INCIDENTS, MONITORS, MonitorDoc,
    MonitorIncident, MonitorIncidentKind, MonitorIncidentStatus, num_key,
};

/// `POST /collect/monitor-check`.
pub const CHECK: CollectKind = CollectKind {
    name: "monitor-check",
    scope: Scope::CollectAlerts,
    text_field: None,
    schema: schema_of::<CheckLine>,
    write: write_checks,
    agents: false,
};

/// The collected checks, one partition per monitor id: what makes a check sent again counted
/// once.
pub const CHECKS: &str = "monitor_checks";

/// At most this many characters in what a check saw.
const MESSAGE_MAX: usize = 300;

/// Le résultat d'une vérification de disponibilité faite par la sonde d'un site : la cible
/// a-t-elle répondu comme attendu (`ok`), en combien de millisecondes, et ce que la sonde a vu
/// (`HTTP 200`, `timeout`...). Le moniteur doit exister dans le compte (`unknown_reference`
/// sinon) : les moniteurs sont la configuration du compte, jamais créés par la collecte ; un
/// moniteur en pause ne fait pas de vérification (`invalid_observation`). Tout le reste est
/// dérivé, jamais envoyé : le résultat (`down` sans réponse attendue, `degraded` répondu en
/// 1000 ms ou plus, `up` sinon), la disponibilité sur 24 h, 7 j et 30 j (chaque vérification
/// comptée une fois, même en retard ou renvoyée), l'état du moniteur et sa dernière
/// vérification, et ses incidents `hm-<n>` : 3 vérifications en échec de suite ouvrent un
/// incident (commencé à la première, `down` ou `degraded` comme celle qui l'ouvre), une
/// vérification réussie résout celui en cours ; un acquittement fait par la route publique
/// est gardé. Une vérification plus ancienne que la dernière appliquée compte dans la
/// disponibilité et ne change ni l'état ni les incidents. Alimente `/monitors`,
/// `/monitors/{id}`, `/monitors/{id}/incidents` et `/alerts`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = CollectMonitorCheck)]
pub struct CheckLine {
    pub at: DateTime<Utc>,
    /// Identifiant du moniteur (celui de `/monitors`).
    #[schema(example = 1003)]
    pub monitor: i64,
    /// La cible a répondu comme attendu.
    pub ok: bool,
    /// Temps de réponse en millisecondes ; absent sans réponse.
    #[serde(default)]
    pub response_ms: Option<u32>,
    /// Ce que la sonde a vu.
    #[serde(default)]
    #[schema(example = "HTTP 200")]
    pub message: Option<String>,
}

fn write_checks<'a>(batch: &'a Batch<'a>) -> BoxFuture<'a, StoreResult<Vec<LineRefusal>>> {
    Box::pin(write(batch))
}

fn data(e: serde_json::Error) -> StoreError {
    StoreError::Data(e.to_string())
}

impl CheckLine {
    fn bad(&self) -> Option<Msg> {
        bad_text(MESSAGE_MAX, [("message", self.message.as_deref(), false)])
    }

    /// The check as the monitor keeps it, its result derived.
    fn check(&self) -> LastCheck {
        let status = check_status(self.ok, self.response_ms);
        let message = self.message.clone().unwrap_or_else(|| {
            match status {
                LinkStatus::Up => "OK",
                LinkStatus::Degraded => "réponse lente",
                LinkStatus::Down => "pas de réponse attendue",
            }
            .to_owned()
        });
        LastCheck {
            at: self.at,
            status,
            response_ms: self.response_ms,
            message,
        }
    }
}

async fn write(batch: &Batch<'_>) -> StoreResult<Vec<LineRefusal>> {
    let mut refused = Vec::new();
    let (lines, known) = batch
        .read_known(
            &mut refused,
            MONITORS,
            (|l: &CheckLine| l.at, CheckLine::bad),
            |l| num_key(l.monitor),
            |l| {
                Msg::new(
                    format!("aucun moniteur {} dans ce compte", l.monitor),
                    format!("no monitor {} in this account", l.monitor),
                )
            },
        )
        .await?;
    let monitors = known
        .into_values()
        .map(|v| serde_json::from_value::<MonitorDoc>(v).map(|m| (m.id, m)))
        .collect::<Result<HashMap<_, _>, _>>()
        .map_err(data)?;
    // Each monitor's checks in time order, one per millisecond.
    let mut checks: BTreeMap<i64, BTreeMap<i64, LastCheck>> = BTreeMap::new();
    for (line, l) in lines {
        if monitors.get(&l.monitor).is_some_and(|m| !m.active) {
            refused.push(LineError::InvalidObservation.refuse(
                line,
                Msg::new(
                    format!("monitor : le moniteur {} est en pause", l.monitor),
                    format!("monitor: monitor {} is paused", l.monitor),
                ),
            ));
            continue;
        }
        checks
            .entry(l.monitor)
            .or_default()
            .insert(l.at.timestamp_millis(), l.check());
    }
    let mut items = Vec::new();
    for (monitor, checks) in &checks {
        for (ms, c) in checks {
            let record = Record {
                partition: monitor.to_string(),
                ts: *ms,
                id: format!("c-{ms}"),
                body: serde_json::to_value(c).map_err(data)?,
            };
            items.push((record, (*monitor, c.at, c.status)));
        }
    }
    batch
        .store_counted(CHECKS, items, |new| {
            let (mut hourly, mut daily) = (WideRows::new(), WideRows::new());
            for (monitor, at, status) in new {
                count_check((&mut hourly, &mut daily), monitor, at, status, 1.0);
            }
            vec![
                (CHECKS_HOURLY.to_owned(), wide(hourly)),
                (CHECKS_DAILY.to_owned(), wide(daily)),
            ]
        })
        .await?;
    // The incidents going on, by monitor.
    let mut ongoing: HashMap<i64, MonitorIncident> = HashMap::new();
    for d in batch
        .stores
        .docs
        .live_since(batch.tenant, MONITOR_INCIDENTS, None)
        .await?
        .items
    {
        let inc: MonitorIncident = serde_json::from_value(d.body).map_err(data)?;
        if inc.status != MonitorIncidentStatus::Resolved {
            ongoing.insert(inc.monitor_id, inc);
        }
    }
    for (id, checks) in checks {
        let Some(doc) = monitors.get(&id) else {
            continue;
        };
        let last = doc.last_check.as_ref().map(|c| c.at);
        let new: Vec<LastCheck> = checks
            .into_values()
            .filter(|c| last.is_none_or(|t| c.at > t))
            .collect();
        let Some(latest) = new.last().cloned() else {
            continue;
        };
        let mut open = ongoing.remove(&id);
        let (failing, _, changes) = apply_checks(
            doc.failing,
            open.is_some(),
            new.iter().map(|c| (c.at, c.status, c.message.as_str())),
        );
        // The incidents first, then the monitor: a batch stopped in between finds the
        // monitor as it was and makes the same changes when sent again.
        for change in changes {
            match change {
                Change::Open {
                    since,
                    status,
                    error,
                } => {
                    let kind = match status {
                        LinkStatus::Down => MonitorIncidentKind::Down,
                        _ => MonitorIncidentKind::Degraded,
                    };
                    let inc = opened(doc, since, kind, error);
                    let body = serde_json::to_value(&inc).map_err(data)?;
                    batch
                        .update_doc(MONITOR_INCIDENTS, &num_key(inc.id), |stored| {
                            Ok(stored.is_none().then(|| body.clone()))
                        })
                        .await?;
                    open = Some(inc);
                }
                Change::Resolve(at) => {
                    let Some(inc) = open.take() else { continue };
                    batch
                        .update_doc(MONITOR_INCIDENTS, &num_key(inc.id), |stored| {
                            let Some(stored) = stored else {
                                return Ok(None);
                            };
                            let mut inc: MonitorIncident =
                                serde_json::from_value(stored.clone()).map_err(data)?;
                            if !resolve(&mut inc, at) {
                                return Ok(None);
                            }
                            serde_json::to_value(inc).map(Some).map_err(data)
                        })
                        .await?;
                }
            }
        }
        let status = open
            .as_ref()
            .map_or(LinkStatus::Up, |i| i.kind.monitor_status());
        batch
            .update_doc(MONITORS, &num_key(id), |stored| {
                let Some(stored) = stored else {
                    return Ok(None);
                };
                let mut doc: MonitorDoc = serde_json::from_value(stored.clone()).map_err(data)?;
                if doc.last_check.as_ref().is_some_and(|c| c.at >= latest.at) {
                    return Ok(None);
                }
                (doc.status, doc.failing) = (status, failing);
                doc.last_check = Some(latest.clone());
                let mut body = stored.clone();
                if let (Some(body), Value::Object(new)) = (
                    body.as_object_mut(),
                    serde_json::to_value(doc).map_err(data)?,
                ) {
                    body.remove("failing");
                    body.extend(new);
                }
                Ok(Some(body))
            })
            .await?;
    }
    Ok(refused)
}

/// The incident that checks failing since `since` open on monitor `doc`.
fn opened(
    doc: &MonitorDoc,
    since: DateTime<Utc>,
    kind: MonitorIncidentKind,
    error: String,
) -> MonitorIncident {
    let n = incident_number(doc.id, since);
    MonitorIncident {
        id: n,
        alert_id: format!("hm-{n}"),
        monitor_id: doc.id,
        monitor_name: doc.name.clone(),
        target: doc.target.clone(),
        kind,
        severity: incident_severity(doc.kind, false, kind == MonitorIncidentKind::Down),
        status: MonitorIncidentStatus::Unresolved,
        started_at: since,
        resolved_at: None,
        duration_s: 0,
        error,
        acknowledged_at: None,
        acknowledged_by: None,
        notes: None,
    }
}
