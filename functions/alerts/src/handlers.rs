//! Alerts and availability handlers (docs/modules.md#alerts-and-availability): thin, over the
//! feed and monitor services.

use axum::body::Bytes;
use axum::extract::State;
use chrono::Utc;
use http::StatusCode;
use netops_shared::RequestCtx;
use netops_shared::error::ErrorBody;
use netops_shared::lookup::Lookup;
use netops_shared::route;
use netops_shared::store::{Change, Expect, Filter, Pred};
use netops_shared::write::{CommitError, Committed, commit};
use netops_shared::{
    ApiError, ApiResult, AppState, Caller, Envelope, Meta, Page, Path, Query, Window, ok,
};
use serde_json::{Value, json};

use crate::feed::{self, monitor_item, siem_item, timed};
use crate::model::{
    AckBody, AlertItem, AlertsQuery, MONITOR_INCIDENTS, MONITORS, Monitor, MonitorDoc,
    MonitorIncident, MonitorIncidentStatus, MonitorsQuery, SIEM_INCIDENTS, SiemAction,
    SiemIncident, SiemStatus, num_key,
};
use crate::monitors;

/// Flux d'alertes unifié
///
/// Un seul flux sur trois origines : incidents des moniteurs de disponibilité (`hm-<n>`),
/// incidents SIEM (`siem-<id>`) et alertes NetDiag (`nd-<...>`). Les sévérités sont ramenées
/// sur critical, high, medium, low, info (SIEM CRITICAL → critical, etc.).
///
/// `status=open` renvoie ce qui est en cours maintenant, quelle que soit sa date de début :
/// alertes NetDiag ouvertes, incidents de moniteur non résolus (unresolved ou acknowledged),
/// incidents SIEM OPEN, ACKNOWLEDGED ou INVESTIGATING. `status=all` (défaut) y ajoute ce qui
/// s'est ouvert dans la fenêtre (par défaut les dernières 24 h). Tri du plus récent au plus
/// ancien (date d'ouverture, puis id). Pas de curseur : `limit` (200 par défaut, 500 au plus)
/// coupe la liste ; `meta.total` donne le nombre d'alertes avant la coupe.
#[route(list_alerts,
    params(AlertsQuery),
    responses((status = 200, description = "Les alertes, de la plus récente à la plus ancienne", body = Envelope<Vec<AlertItem>>)))]
pub async fn list_alerts(
    State(state): State<AppState>,
    caller: Caller,
    page: Page,
    window: Window,
    Query(q): Query<AlertsQuery>,
) -> ApiResult<Vec<AlertItem>> {
    let open_only = feed::parse_open_only(q.status.as_deref())?;
    let kinds = feed::parse_kinds(q.kind.as_deref())?;
    let (items, total) = feed::collect(
        &state,
        &caller.tenant,
        &kinds,
        open_only,
        &window,
        page.limit as usize,
        Utc::now(),
    )
    .await?;
    let (items, meta) = page.limited(items, total > page.limit as usize);
    Ok(Envelope::new(
        items,
        meta.window(&window).with("total", total),
    ))
}

/// What an ack id designates.
enum AckTarget {
    Monitor(i64),
    Siem(String),
}

/// Parses the path id of an ack: `hm-<n>` or `siem-<id>`; a NetDiag id or anything else is 400.
fn parse_ack_id(id: &str) -> Result<AckTarget, ApiError> {
    if let Some(n) = id.strip_prefix("hm-")
        && !n.is_empty()
        && n.len() <= 18
        && n.bytes().all(|b| b.is_ascii_digit())
        && let Ok(n) = n.parse::<i64>()
    {
        return Ok(AckTarget::Monitor(n));
    }
    if let Some(s) = id.strip_prefix("siem-")
        && !s.is_empty()
        && s.len() <= 64
        && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
    {
        return Ok(AckTarget::Siem(s.to_owned()));
    }
    if id.starts_with("nd-") {
        return Err(ApiError::invalid_parameter(
            "id",
            "une alerte NetDiag se ferme d'elle-même quand la machine revient à OK et ne peut pas être acquittée",
            "a NetDiag alert closes by itself when the computer returns to OK and cannot be acknowledged",
        ));
    }
    Err(ApiError::invalid_parameter(
        "id",
        "identifiant attendu de la forme hm-<n> ou siem-<id>",
        "expected an id of the form hm-<n> or siem-<id>",
    ))
}

/// Maximum length of an ack note, in characters.
pub const NOTE_MAX: usize = 2000;

/// Parses the optional body `{note}`: an empty body means no note.
fn parse_ack_body(bytes: &[u8]) -> Result<Option<String>, ApiError> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(None);
    }
    let value: Value = serde_json::from_slice(bytes)
        .map_err(|_| ApiError::invalid_body("ce n'est pas du JSON valide", "not valid JSON"))?;
    if !value.is_object() {
        return Err(ApiError::invalid_body(
            "un objet JSON est attendu",
            "a JSON object is expected",
        ));
    }
    let bad_note = |fr: &str, en: &str| {
        ApiError::invalid_body(
            format!("champ « note » : {fr}"),
            format!("field 'note': {en}"),
        )
        .with("field", "note")
    };
    let body: AckBody = serde_json::from_value(value)
        .map_err(|_| bad_note("chaîne de caractères attendue", "a string is expected"))?;
    if let Some(n) = &body.note
        && n.chars().count() > NOTE_MAX
    {
        return Err(bad_note(
            "2 000 caractères au plus",
            "at most 2,000 characters",
        ));
    }
    Ok(body.note.filter(|n| !n.trim().is_empty()))
}

fn already_acknowledged(id: &str, status: &str) -> ApiError {
    ApiError::conflict(
        format!("L'alerte « {id} » est déjà acquittée."),
        format!("Alert '{id}' is already acknowledged."),
    )
    .with("current_status", status)
}

fn no_longer_open(id: &str, status: &str) -> ApiError {
    ApiError::conflict(
        format!("L'alerte « {id} » n'est plus ouverte (état {status})."),
        format!("Alert '{id}' is no longer open (state {status})."),
    )
    .with("current_status", status)
}

fn unknown_incident(id: &str) -> ApiError {
    ApiError::not_found(format!("Incident « {id} »"), format!("Incident '{id}'"))
}

/// The incident `body` in place of its `version` under `key` of `collection`.
fn replace(collection: &str, key: String, body: Value, version: u64) -> Change {
    Change::PutDoc {
        collection: collection.to_owned(),
        key,
        body,
        expect: Expect::Version(version),
    }
}

/// Commits one conditional put answered with `item`; a lost race is a 409 (someone else
/// changed the incident).
async fn commit_put(
    state: &AppState,
    caller: &Caller,
    request: &RequestCtx,
    change: Change,
    id: &str,
    item: AlertItem,
) -> Result<Committed<AlertItem>, ApiError> {
    let answer = Committed(StatusCode::OK, Envelope::new(item, Meta::new()));
    match commit(state, caller, request, answer, vec![change]).await {
        Ok(committed) => Ok(committed),
        Err(CommitError::Conflict) => Err(ApiError::conflict(
            format!(
                "L'alerte « {id} » vient d'être modifiée : elle est déjà acquittée ou n'est plus ouverte."
            ),
            format!("Alert '{id}' was just changed: it is already acknowledged or no longer open."),
        )),
        Err(CommitError::Failed(e)) => Err(e),
    }
}

/// Acquitter une alerte
///
/// Acquitte un incident SIEM (`siem-<id>`, OPEN → ACKNOWLEDGED, la note est ajoutée aux
/// actions de l'incident `{at, by, action: "ack", note}`) ou un incident de moniteur
/// (`hm-<n>`, unresolved → acknowledged, la note devient les notes de l'incident seulement
/// si elles sont vides). Corps facultatif `{"note": "..."}` (2 000 caractères au plus).
///
/// 400 si l'id est mal formé ou désigne une alerte NetDiag (`nd-...`, elle se ferme d'elle-même) ;
/// 404 si l'incident est inconnu dans ce compte ; 409 s'il est déjà acquitté ou n'est plus
/// ouvert (`current_status` donne son état) ; 200 avec l'alerte acquittée. Sous requêtes
/// concurrentes, une seule obtient 200. Chaque appel est inscrit au journal des écritures.
#[route(acknowledge_alert,
    params(("id" = String, Path, description = "Id de l'alerte : hm-<n> ou siem-<id> (une alerte NetDiag, nd-..., ne s'acquitte pas)", example = "siem-2026-0142",
        // What `parse_ack_id` admits.
        pattern = "^(hm-[0-9]{1,18}|siem-[A-Za-z0-9-]{1,64})$")),
    request_body(content = Option<AckBody>, description = "Note facultative", content_type = "application/json"),
    responses(
        (status = 200, description = "Alerte acquittée", body = Envelope<AlertItem>),
        (status = 400, description = "Id mal formé, alerte NetDiag ou note invalide", body = ErrorBody),
        (status = 404, description = "Incident inconnu dans ce compte", body = ErrorBody),
        (status = 409, description = "Déjà acquittée ou plus ouverte", body = ErrorBody),
    ))]
pub async fn acknowledge_alert(
    State(state): State<AppState>,
    caller: Caller,
    request: RequestCtx,
    Path(id): Path<String>,
    body: Bytes,
) -> Result<Committed<AlertItem>, ApiError> {
    let target = parse_ack_id(&id)?;
    let note = parse_ack_body(&body)?;
    let now = Utc::now();
    let (change, item) = match target {
        AckTarget::Monitor(n) => {
            let key = num_key(n);
            let stored = state
                .stores
                .docs
                .get_versioned::<MonitorIncident>(&caller.tenant, MONITOR_INCIDENTS, &key)
                .await?
                .ok_or_else(|| unknown_incident(&id))?;
            let mut inc = timed(stored.value, now);
            match inc.status {
                MonitorIncidentStatus::Unresolved => {}
                MonitorIncidentStatus::Acknowledged => {
                    return Err(already_acknowledged(&id, inc.status.as_str()));
                }
                other => return Err(no_longer_open(&id, other.as_str())),
            }
            inc.status = MonitorIncidentStatus::Acknowledged;
            inc.acknowledged_at = Some(now);
            inc.acknowledged_by = Some(caller.token_name.clone());
            if inc.notes.as_deref().is_none_or(|n| n.trim().is_empty()) && note.is_some() {
                inc.notes = note;
            }
            let body = serde_json::to_value(&inc).map_err(|e| ApiError::internal(&e))?;
            (
                replace(MONITOR_INCIDENTS, key, body, stored.version),
                monitor_item(&inc),
            )
        }
        AckTarget::Siem(sid) => {
            let stored = state
                .stores
                .docs
                .get_versioned::<SiemIncident>(&caller.tenant, SIEM_INCIDENTS, &sid)
                .await?
                .ok_or_else(|| unknown_incident(&id))?;
            let mut inc = stored.value;
            match inc.status {
                SiemStatus::Open => {}
                SiemStatus::Acknowledged => {
                    return Err(already_acknowledged(&id, inc.status.as_str()));
                }
                other => return Err(no_longer_open(&id, other.as_str())),
            }
            inc.status = SiemStatus::Acknowledged;
            inc.updated_at = now;
            inc.actions.push(SiemAction {
                at: now,
                by: caller.token_name.clone(),
                action: "ack".into(),
                note,
            });
            let body = serde_json::to_value(&inc).map_err(|e| ApiError::internal(&e))?;
            (
                replace(SIEM_INCIDENTS, sid, body, stored.version),
                siem_item(&inc),
            )
        }
    };
    commit_put(&state, &caller, &request, change, &id, item).await
}

/// Parses `active`: `1` or `0`.
fn parse_active(raw: Option<&str>) -> Result<Option<bool>, ApiError> {
    match raw {
        None => Ok(None),
        Some("1") => Ok(Some(true)),
        Some("0") => Ok(Some(false)),
        Some(_) => Err(ApiError::invalid_parameter(
            "active",
            "valeurs admises : 0, 1",
            "allowed values: 0, 1",
        )),
    }
}

/// Moniteurs de disponibilité
///
/// Moniteurs HTTP, ping, TCP et DNS triés par id, avec leur état (`up`, `down`,
/// `degraded`), leur dernière vérification, leur incident en cours et leur disponibilité
/// (pourcentage de vérifications réussies ; une réponse dégradée compte comme disponible)
/// sur 24 h (heures entières, l'heure en cours comprise), 7 j et 30 j (jours UTC, aujourd'hui
/// compris) ; null sans aucune vérification sur la période. Filtres : `status` (égalité
/// exacte), `active` (1 : actifs, 0 : en pause).
#[route(list_monitors,
    params(MonitorsQuery),
    responses((status = 200, description = "Les moniteurs", body = Envelope<Vec<Monitor>>)))]
pub async fn list_monitors(
    State(state): State<AppState>,
    caller: Caller,
    Query(q): Query<MonitorsQuery>,
) -> ApiResult<Vec<Monitor>> {
    let active = parse_active(q.active.as_deref())?;
    let filter = Filter::all()
        .and_some(q.status.clone(), |s| Pred::Eq("status", json!(s)))
        .and_some(active, |a| Pred::Eq("active", json!(a)));
    let docs: Vec<MonitorDoc> = state
        .stores
        .docs
        .all_as(&caller.tenant, MONITORS, &filter)
        .await?;
    ok(monitors::with_state(&state, &caller.tenant, docs, None, Utc::now()).await?)
}

async fn find_monitor(state: &AppState, caller: &Caller, id: i64) -> Result<MonitorDoc, ApiError> {
    state
        .stores
        .docs
        .get_or_404(&caller.tenant, MONITORS, &num_key(id), || {
            ApiError::not_found(format!("Moniteur {id}"), format!("Monitor {id}"))
        })
        .await
}

/// Détail d'un moniteur
///
/// Le moniteur `id` du compte, avec son état, sa dernière vérification et sa disponibilité ;
/// 404 s'il est inconnu.
#[route(get_monitor,
    params(("id" = i64, Path, description = "Id du moniteur")),
    responses(
        (status = 200, description = "Le moniteur", body = Envelope<Monitor>),
        (status = 404, description = "Moniteur inconnu dans ce compte", body = ErrorBody),
    ))]
pub async fn get_monitor(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<i64>,
) -> ApiResult<Monitor> {
    let doc = find_monitor(&state, &caller, id).await?;
    let mut list =
        monitors::with_state(&state, &caller.tenant, vec![doc], Some(id), Utc::now()).await?;
    let monitor = list
        .pop()
        .ok_or_else(|| ApiError::internal(&"monitor vanished"))?;
    ok(monitor)
}

/// Incidents d'un moniteur
///
/// Les incidents du moniteur qui recouvrent la fenêtre (30 jours par défaut, comme le dit la
/// description de la route) ; les incidents en cours (unresolved, acknowledged) sont
/// toujours inclus, quelle que soit la fenêtre. Du plus récent au plus ancien (début, puis
/// numéro) ; `limit` 100 par défaut, 500 au plus ; `meta.total` avant la coupe. 404 si le
/// moniteur est inconnu.
#[route(list_monitor_incidents,
    params(("id" = i64, Path, description = "Id du moniteur")),
    responses(
        (status = 200, description = "Les incidents du moniteur", body = Envelope<Vec<MonitorIncident>>),
        (status = 404, description = "Moniteur inconnu dans ce compte", body = ErrorBody),
    ))]
pub async fn list_monitor_incidents(
    State(state): State<AppState>,
    caller: Caller,
    page: Page,
    window: Window,
    Path(id): Path<i64>,
) -> ApiResult<Vec<MonitorIncident>> {
    find_monitor(&state, &caller, id).await?;
    let now = Utc::now();
    // What is in progress, and what was resolved since the window's start.
    let stored: Vec<MonitorIncident> = state
        .stores
        .docs
        .live_as(
            &caller.tenant,
            MONITOR_INCIDENTS,
            Some(window.from),
            &Filter::all().and(Pred::Eq("monitor_id", json!(id))),
        )
        .await?;
    let mut items = Vec::new();
    for inc in stored {
        let inc = timed(inc, now);
        let ongoing = inc.status != MonitorIncidentStatus::Resolved;
        let overlaps =
            inc.started_at < window.to && inc.resolved_at.is_none_or(|r| r >= window.from);
        if ongoing || overlaps {
            items.push(inc);
        }
    }
    items.sort_by(|a, b| {
        b.started_at
            .cmp(&a.started_at)
            .then_with(|| b.id.cmp(&a.id))
    });
    let total = items.len();
    let (items, meta) = page.limited(items, false);
    Ok(Envelope::new(
        items,
        meta.window(&window).with("total", total),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ack_ids_are_hm_numbers_or_siem_ids_and_never_netdiag() {
        assert!(matches!(
            parse_ack_id("hm-10035"),
            Ok(AckTarget::Monitor(10035))
        ));
        assert!(
            matches!(parse_ack_id("siem-2026-0142"), Ok(AckTarget::Siem(s)) if s == "2026-0142")
        );
        for bad in [
            "hm-",
            "hm-1a",
            "hm-+1",
            "hm-99999999999999999999",
            "siem-",
            "siem-a b",
            "nd-PAR-1",
            "x",
            "",
        ] {
            assert!(parse_ack_id(bad).is_err(), "{bad}");
        }
        let nd = parse_ack_id("nd-PAR-LT-0001-3")
            .err()
            .map(|e| e.message.en.to_string())
            .unwrap_or_default();
        assert!(nd.contains("NetDiag"));
    }

    #[test]
    fn ack_bodies_take_an_optional_note_of_at_most_2000_characters() {
        assert_eq!(parse_ack_body(b"").ok(), Some(None));
        assert_eq!(parse_ack_body(b"{}").ok(), Some(None));
        assert_eq!(parse_ack_body(br#"{"note": null}"#).ok(), Some(None));
        assert_eq!(parse_ack_body(br#"{"note": "  "}"#).ok(), Some(None));
        assert_eq!(
            parse_ack_body(br#"{"note": "vu"}"#).ok(),
            Some(Some("vu".to_owned()))
        );
        let max = format!(r#"{{"note": "{}"}}"#, "é".repeat(NOTE_MAX));
        assert!(parse_ack_body(max.as_bytes()).is_ok());
        let over = format!(r#"{{"note": "{}"}}"#, "é".repeat(NOTE_MAX + 1));
        assert!(parse_ack_body(over.as_bytes()).is_err());
        assert!(parse_ack_body(b"[]").is_err());
        assert!(parse_ack_body(br#"{"note": 1}"#).is_err());
    }
}
