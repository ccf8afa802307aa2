//! The agent loop's store side (docs/agent.md): the actions an agent claims (an exclusive
//! lease, by a conditional put), the result it posts (an event of the machine's feed, once:
//! its id is the action's and its time the completion's, both kept in the action), and the
//! expiry of the actions no agent took or finished in time, a task of the scheduled pass.
//! The agent routes are the `agent` function's (functions/agent).
//!
//! An action is found through its request record ([`ACTION_REQUESTS`], written with the
//! action): a sync reads its machine's requests of the claim deadline by partition and time,
//! then the few actions they name by key, never the tenant's whole collection of actions.

use chrono::{DateTime, Duration, Utc};
use netops_shared::module::BoxFuture;
use netops_shared::pass::Task;
use netops_shared::store::{Expect, Filter, Record, SeriesQuery, StoreError, StoreResult, Stores};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use utoipa::ToSchema;

use crate::model::{ACTION_REQUESTS, ACTIONS, Action, ActionKind, ActionStatus, EVENTS, Severity};

/// At most this many requests are read per machine (a sync, a claim) or tenant (a pass).
const REQUESTS_READ: usize = 500;
/// How far back the pass looks for open actions: past the longest claim deadline
/// (`NETOPS_ACTION_CLAIM_SECONDS`, a day at most) and lease (an hour at most).
const EXPIRY_LOOKBACK_HOURS: i64 = 48;

/// The pass's task: every open action past its claim deadline or its lease ends `expired`,
/// with an event of its source saying so.
pub const EXPIRY: Task = Task {
    name: "action_expiry",
    run: expire_due,
};

/// How long after an action's expiry each scheduled pass writes its event again (a pass runs
/// every minute: a few chances, at one event write each).
const REWRITE_MINUTES: i64 = 5;

/// The id of the event an action ends with (its result, or its expiry): one per action.
pub fn event_id(action_id: &str) -> String {
    format!("ev-{action_id}")
}

/// The stored action `id`, with its version.
pub async fn action(stores: &Stores, tenant: &str, id: &str) -> StoreResult<Option<(Action, u64)>> {
    let Some(doc) = stores.docs.get(tenant, ACTIONS, id).await? else {
        return Ok(None);
    };
    let action = serde_json::from_value(doc.body).map_err(|e| StoreError::Data(e.to_string()))?;
    Ok(Some((action, doc.version)))
}

/// Puts `action` if it is still at `version`: `false` when another writer changed it first.
async fn put_at(stores: &Stores, tenant: &str, action: &Action, version: u64) -> StoreResult<bool> {
    let body = serde_json::to_value(action).map_err(|e| StoreError::Data(e.to_string()))?;
    match stores
        .docs
        .put_if(
            tenant,
            ACTIONS,
            &action.action_id,
            body,
            Expect::Version(version),
        )
        .await
    {
        Ok(()) => Ok(true),
        Err(StoreError::ConditionFailed) => Ok(false),
        Err(e) => Err(e),
    }
}

/// The request record of a new action, written with it.
pub fn request_record(action: &Action) -> Record {
    Record {
        partition: action.hostname.clone(),
        ts: action.requested_at.timestamp_millis(),
        id: action.action_id.clone(),
        body: json!({"action_id": action.action_id}),
    }
}

/// The actions requested since `since` (of `hostname`, or of every machine), in `status`,
/// oldest first, with their versions.
async fn requested(
    stores: &Stores,
    tenant: &str,
    hostname: Option<&str>,
    since: DateTime<Utc>,
    status: &[ActionStatus],
) -> StoreResult<Vec<(Action, u64)>> {
    let page = stores
        .series
        .scan(&SeriesQuery {
            tenant,
            series: ACTION_REQUESTS,
            partition: hostname,
            from: since.timestamp_millis(),
            to: i64::MAX / 2,
            filter: &Filter::all(),
            after: None,
            limit: REQUESTS_READ,
        })
        .await?;
    let ids: Vec<String> = page.records.into_iter().map(|r| r.id).collect();
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let mut out: Vec<(Action, u64)> = stores
        .docs
        .get_many(tenant, ACTIONS, &ids)
        .await?
        .into_iter()
        .filter_map(|d| Some((serde_json::from_value::<Action>(d.body).ok()?, d.version)))
        .filter(|(a, _)| status.contains(&a.status))
        .collect();
    out.sort_by_key(|(a, _)| a.requested_at);
    Ok(out)
}

/// The queued actions of `hostname` requested since `since` (the claim deadline: older ones
/// are expired or about to be), oldest first, at most `limit`.
pub async fn queued(
    stores: &Stores,
    tenant: &str,
    hostname: &str,
    since: DateTime<Utc>,
    limit: usize,
) -> StoreResult<Vec<Action>> {
    let mut out: Vec<Action> = requested(
        stores,
        tenant,
        Some(hostname),
        since,
        &[ActionStatus::Queued],
    )
    .await?
    .into_iter()
    .map(|(a, _)| a)
    .collect();
    out.truncate(limit);
    Ok(out)
}

/// Claims up to `max` queued actions of `hostname` at `now` for `lease`: each claim is a
/// put conditional on the version read, so of two claimants of one action exactly one gets
/// it. An action past its claim deadline is left to the pass.
pub async fn claim(
    stores: &Stores,
    tenant: &str,
    hostname: &str,
    since: DateTime<Utc>,
    max: usize,
    now: DateTime<Utc>,
    lease: Duration,
) -> StoreResult<Vec<Action>> {
    let mut claimed = Vec::new();
    let candidates = requested(
        stores,
        tenant,
        Some(hostname),
        since,
        &[ActionStatus::Queued],
    )
    .await?;
    for (mut action, version) in candidates {
        if claimed.len() >= max {
            break;
        }
        if action.claim_by.is_some_and(|by| by < now) {
            continue;
        }
        action.status = ActionStatus::Running;
        action.claimed_at = Some(now);
        action.lease_until = Some(now + lease);
        action.claim_id = Some(new_claim_id());
        if put_at(stores, tenant, &action, version).await? {
            claimed.push(action);
        }
    }
    Ok(claimed)
}

fn new_claim_id() -> String {
    use rand::Rng;
    let mut rng = rand::rng();
    format!(
        "clm-{:016x}{:016x}",
        rng.random::<u64>(),
        rng.random::<u64>()
    )
}

/// A hop of a traceroute.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Hop {
    /// 1 to 64.
    pub hop: u32,
    /// The address that answered; absent when none did (`*`).
    pub address: Option<String>,
    /// Round-trip time in milliseconds; absent when none answered.
    pub ms: Option<f64>,
}

/// Résultat d'une action `trace` : la cible tracée et ses sauts (1 à 64).
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TraceResult {
    #[schema(example = "www.example.com")]
    pub target: String,
    pub hops: Vec<Hop>,
}

/// Résultat d'une action `speed` : les débits mesurés (Mbit/s) et le serveur de test.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SpeedResult {
    pub down_mbps: f64,
    pub up_mbps: f64,
    #[schema(example = "speedtest.netops.example")]
    pub server: String,
}

/// Résultat d'une action `capture` : sa durée, ses paquets et le fichier pcapng.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CaptureResult {
    pub seconds: u32,
    pub packets: u64,
    #[schema(example = "PAR-LT-0001-act-19a8f3c2b4d-5e21a0.pcapng")]
    pub file: String,
}

/// Ce que l'agent a mesuré : le champ de l'action exécutée, seul.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ActionResult {
    /// L'identifiant de la prise en charge (`claim_id` de la réponse à `/agent/actions/claim`).
    pub claim_id: String,
    pub trace: Option<TraceResult>,
    pub speed: Option<SpeedResult>,
    pub capture: Option<CaptureResult>,
}

fn text_ok(s: &str, max: usize) -> bool {
    !s.is_empty() && s.len() <= max && !s.chars().any(char::is_control)
}

fn figure_ok(x: f64) -> bool {
    x.is_finite() && (0.0..=1_000_000.0).contains(&x)
}

/// The event's message and details of a result for `action`, or why the result is refused
/// (French, English).
pub fn result_event(
    action: &Action,
    result: &ActionResult,
) -> Result<(String, Value), (&'static str, &'static str)> {
    let id = &action.action_id;
    match (action.action, &result.trace, &result.speed, &result.capture) {
        (ActionKind::Trace, Some(t), None, None) => {
            let ok = text_ok(&t.target, 253)
                && (1..=64).contains(&t.hops.len())
                && t.hops.iter().all(|h| {
                    (1..=64).contains(&h.hop)
                        && h.address.as_deref().is_none_or(|a| text_ok(a, 253))
                        && h.ms.is_none_or(figure_ok)
                });
            if !ok {
                return Err((
                    "trace : cible de 1 à 253 caractères, 1 à 64 sauts numérotés de 1 à 64",
                    "trace: a target of 1 to 253 characters, 1 to 64 hops numbered 1 to 64",
                ));
            }
            let last = t.hops.iter().rev().find_map(|h| h.ms).unwrap_or(0.0);
            Ok((
                format!(
                    "Traceroute vers {} : {} saut(s), {last} ms",
                    t.target,
                    t.hops.len()
                ),
                json!({"target": t.target, "gateway": action.target.is_none(), "hops": t.hops, "action_id": id}),
            ))
        }
        (ActionKind::Speed, None, Some(s), None) => {
            if !(figure_ok(s.down_mbps) && figure_ok(s.up_mbps) && text_ok(&s.server, 253)) {
                return Err((
                    "speed : débits de 0 à 1 000 000 Mbit/s, serveur de 1 à 253 caractères",
                    "speed: rates from 0 to 1,000,000 Mbit/s, a server of 1 to 253 characters",
                ));
            }
            Ok((
                format!(
                    "Test de débit : {} Mbit/s descendant, {} Mbit/s montant (20 Mo / 8 Mo)",
                    s.down_mbps, s.up_mbps
                ),
                json!({"down_mbps": s.down_mbps, "up_mbps": s.up_mbps, "down_mb": 20, "up_mb": 8, "server": s.server, "action_id": id}),
            ))
        }
        (ActionKind::Capture, None, None, Some(c)) => {
            if !((5..=120).contains(&c.seconds) && text_ok(&c.file, 255)) {
                return Err((
                    "capture : 5 à 120 secondes, fichier de 1 à 255 caractères",
                    "capture: 5 to 120 seconds, a file of 1 to 255 characters",
                ));
            }
            Ok((
                format!(
                    "Capture réseau terminée : {} s, {} paquets ({})",
                    c.seconds, c.packets, c.file
                ),
                json!({"seconds": c.seconds, "packets": c.packets, "file": c.file, "action_id": id}),
            ))
        }
        _ => Err((
            "le résultat porte le seul champ de l'action (trace, speed ou capture)",
            "the result holds the one field of the action (trace, speed or capture)",
        )),
    }
}

/// Writes the event an ended action keeps (its `result`, at its `completed_at`, else `now`):
/// the same id and time each time, so writing it again replaces it.
async fn write_event(
    stores: &Stores,
    tenant: &str,
    action: &Action,
    severity: Severity,
    now: DateTime<Utc>,
) -> StoreResult<()> {
    let at = action.completed_at.unwrap_or(now);
    let kept = action.result.clone().unwrap_or_default();
    let id = event_id(&action.action_id);
    let body = json!({
        "id": id, "at": at, "source": action.action, "severity": severity,
        "message": kept["message"], "details": kept["details"],
    });
    let record = Record {
        partition: action.hostname.clone(),
        ts: at.timestamp_millis(),
        id,
        body,
    };
    stores
        .series_writes
        .append(tenant, EVENTS, vec![record])
        .await
}

/// How posting a result went.
#[derive(Debug)]
pub enum Posted {
    /// The action is completed with this result (`replayed`: it was already).
    Completed { action: Action, replayed: bool },
    /// No such action of the machine.
    Unknown,
    /// The action is not claimed under this claim: queued, expired, or another claim's.
    NotClaimed(Action),
}

/// Completes `id`, an action of `hostname` claimed under `result.claim_id`, with its event:
/// the action is marked completed first (conditional on the version read), then its event is
/// written under the action's id and the time kept in it; a retry of the same claim writes
/// that same event again, which replaces itself, so it is in the feed once.
pub async fn complete(
    stores: &Stores,
    tenant: &str,
    hostname: &str,
    id: &str,
    event_of: (String, Value),
    claim_id: &str,
    now: DateTime<Utc>,
) -> StoreResult<Posted> {
    for _ in 0..5 {
        let Some((mut action, version)) = action(stores, tenant, id).await? else {
            return Ok(Posted::Unknown);
        };
        if action.hostname != hostname {
            return Ok(Posted::Unknown);
        }
        if action.claim_id.as_deref() != Some(claim_id) {
            return Ok(Posted::NotClaimed(action));
        }
        let replayed = match action.status {
            ActionStatus::Completed => true,
            ActionStatus::Running => false,
            _ => return Ok(Posted::NotClaimed(action)),
        };
        if !replayed {
            action.status = ActionStatus::Completed;
            action.completed_at = Some(now);
            action.event_id = Some(event_id(&action.action_id));
            action.result = Some(json!({"message": event_of.0, "details": event_of.1}));
            if !put_at(stores, tenant, &action, version).await? {
                continue;
            }
        }
        write_event(stores, tenant, &action, Severity::Info, now).await?;
        return Ok(Posted::Completed { action, replayed });
    }
    Err(StoreError::ConditionFailed)
}

/// Why an open action expires at `now`, if it does.
fn due(action: &Action, now: DateTime<Utc>) -> Option<(&'static str, String)> {
    match action.status {
        ActionStatus::Queued if action.claim_by.is_some_and(|by| by < now) => Some((
            "unclaimed",
            format!(
                "Action {} expirée : aucun agent ne l'a prise en charge avant {} (machine hors ligne ?)",
                kind_name(action.action),
                action
                    .claim_by
                    .map(|t| t.format("%H:%M:%S UTC").to_string())
                    .unwrap_or_default()
            ),
        )),
        ActionStatus::Running if action.lease_until.is_some_and(|l| l < now) => Some((
            "lease_expired",
            format!(
                "Action {} expirée : l'agent n'a pas rendu son résultat avant la fin de son bail ({})",
                kind_name(action.action),
                action
                    .lease_until
                    .map(|t| t.format("%H:%M:%S UTC").to_string())
                    .unwrap_or_default()
            ),
        )),
        _ => None,
    }
}

fn kind_name(kind: ActionKind) -> &'static str {
    match kind {
        ActionKind::Trace => "trace",
        ActionKind::Speed => "speed",
        ActionKind::Capture => "capture",
    }
}

fn expire_due<'a>(
    stores: &'a Stores,
    tenant: &'a str,
    now: DateTime<Utc>,
) -> BoxFuture<'a, StoreResult<usize>> {
    Box::pin(expire(stores, tenant, now))
}

/// Ends every open action of `tenant` past its claim deadline or lease at `now`, each with
/// an event of its source (severity `medium`) saying why; returns how many. The change is
/// conditional on the version read: an action claimed or completed meanwhile is left alone.
/// The action is marked first, then its event written; each pass also writes again the
/// events of the actions expired in the last [`REWRITE_MINUTES`] (same id and time: they
/// replace themselves), so a pass stopped between the two loses no event.
pub async fn expire(stores: &Stores, tenant: &str, now: DateTime<Utc>) -> StoreResult<usize> {
    let since = now - Duration::hours(EXPIRY_LOOKBACK_HOURS);
    let seen = [
        ActionStatus::Queued,
        ActionStatus::Running,
        ActionStatus::Expired,
    ];
    let rewrite_since = now - Duration::minutes(REWRITE_MINUTES);
    let mut expired = 0;
    for (mut action, version) in requested(stores, tenant, None, since, &seen).await? {
        if action.status == ActionStatus::Expired {
            if action.completed_at.is_some_and(|at| at >= rewrite_since) {
                write_event(stores, tenant, &action, Severity::Medium, now).await?;
            }
            continue;
        }
        let Some((outcome, message)) = due(&action, now) else {
            continue;
        };
        let details = json!({"action_id": action.action_id, "outcome": outcome});
        action.status = ActionStatus::Expired;
        action.completed_at = Some(now);
        action.event_id = Some(event_id(&action.action_id));
        action.result = Some(json!({"message": message, "details": details}));
        if !put_at(stores, tenant, &action, version).await? {
            continue;
        }
        write_event(stores, tenant, &action, Severity::Medium, now).await?;
        expired += 1;
    }
    Ok(expired)
}
