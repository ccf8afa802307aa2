//! Security handlers (docs/modules.md#security): thin, over the series and document primitives.

use axum::extract::State;
use chrono::DateTime;
use netops_shared::lookup::Lookup;
use netops_shared::lookup::decode;
use netops_shared::paging::{SeriesSpec, series_page};
use netops_shared::route;
use netops_shared::store::{Filter, Pred, Record, SeriesQuery};
use netops_shared::{
    ApiError, ApiResult, AppState, Caller, Envelope, Meta, Page, Path, Query, Window,
};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::model::*;
use crate::rules::global_rules;

fn parse_all<T: DeserializeOwned>(records: Vec<Record>) -> Result<Vec<T>, ApiError> {
    records.into_iter().map(|r| decode(r.body)).collect()
}

/// A partial-match text, trimmed; blank means no filter.
fn text(q: &Option<String>) -> Option<String> {
    q.as_deref()
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
}

/// Newest-first records of a series in the window, at most [`UNPAGED_MAX`], for the routes
/// without paging; `meta.truncated` is set when more matched.
async fn unpaged(
    state: &AppState,
    caller: &Caller,
    series: &str,
    window: &Window,
    filter: &Filter,
) -> Result<(Vec<Record>, Meta), ApiError> {
    let page = state
        .stores
        .series
        .scan_bounded(&SeriesQuery {
            tenant: &caller.tenant,
            series,
            partition: None,
            from: window.from_ms(),
            to: window.to_ms(),
            filter,
            after: None,
            limit: UNPAGED_MAX,
        })
        .await?;
    let mut meta = Meta::new().window(window);
    if page.next.is_some() {
        meta = meta.truncated(true);
    }
    Ok((page.records, meta))
}

/// Connexions à l'annuaire
///
/// Événements 4624 (succès) et 4625 (échec) des contrôleurs de domaine, du plus récent au
/// plus ancien. `user` (partiel), `host` (partiel, machine source ou cible), `source_ip`
/// (exacte), `result` (`success` ou `failure`). Fenêtre W, 24 h par défaut, 7 jours au
/// plus (au-delà elle est raccourcie et `meta.window_capped` vaut `true`). Paginé par
/// curseur (100 par défaut, 500 au plus).
#[route(list_logons,
    params(LogonsQuery),
    responses((status = 200, description = "Une page de connexions", body = Envelope<Vec<Logon>>)))]
pub async fn list_logons(
    State(state): State<AppState>,
    caller: Caller,
    page: Page,
    window: Window,
    Query(q): Query<LogonsQuery>,
) -> ApiResult<Vec<Logon>> {
    let q = LogonsQuery {
        user: text(&q.user),
        host: text(&q.host),
        source_ip: text(&q.source_ip),
        result: q.result,
    };
    let filter = Filter::all()
        .and_some(q.user.clone(), |u| Pred::Contains(vec!["user"], u))
        .and_some(q.host.clone(), |h| {
            Pred::Contains(vec!["source_host", "target_host"], h)
        })
        .and_some(q.source_ip.clone(), |ip| Pred::Eq("source_ip", json!(ip)))
        .and_some(q.result, |r| Pred::Eq("result", json!(r)));
    let spec = SeriesSpec {
        series: LOGONS,
        partition: None,
        filter: &filter,
    };
    let (records, meta) = series_page(&state, &caller, &page, &window, spec, &q).await?;
    Ok(Envelope::new(parse_all(records)?, meta))
}

/// Verrouillages de comptes
///
/// Événements 4740 (compte verrouillé) et 4767 (compte déverrouillé), du plus récent au plus
/// ancien ; `user` filtre le compte (partiel). Fenêtre W, 7 jours par défaut, 90 jours au
/// plus (`meta.window_capped`). Au plus 1000 événements ; `meta.truncated` vaut `true`
/// quand il y en a davantage (réduire la fenêtre).
#[route(list_lockouts,
    params(LockoutsQuery),
    responses((status = 200, description = "Verrouillages et déverrouillages", body = Envelope<Vec<Lockout>>)))]
pub async fn list_lockouts(
    State(state): State<AppState>,
    caller: Caller,
    window: Window,
    Query(q): Query<LockoutsQuery>,
) -> ApiResult<Vec<Lockout>> {
    let filter = Filter::all().and_some(text(&q.user), |u| Pred::Contains(vec!["user"], u));
    let (records, meta) = unpaged(&state, &caller, LOCKOUTS, &window, &filter).await?;
    Ok(Envelope::new(parse_all(records)?, meta))
}

/// Modifications de comptes
///
/// Événements de la famille 47xx et 5136 à 5141 : comptes, groupes, ordinateurs, stratégies
/// et objets de l'annuaire. `user` cherche (partiel) l'auteur, le compte cible ou l'objet ;
/// `type` vaut `account`, `group`, `computer`, `policy` ou `directory`. Fenêtre W, 7 jours
/// par défaut, 90 jours au plus. Paginé par curseur (100 par défaut, 500 au plus).
#[route(list_account_changes,
    params(ChangesQuery),
    responses((status = 200, description = "Une page de modifications", body = Envelope<Vec<AccountChange>>)))]
pub async fn list_account_changes(
    State(state): State<AppState>,
    caller: Caller,
    page: Page,
    window: Window,
    Query(q): Query<ChangesQuery>,
) -> ApiResult<Vec<AccountChange>> {
    let q = ChangesQuery {
        user: text(&q.user),
        kind: q.kind,
    };
    let filter = Filter::all().and_some(q.user.clone(), |u| {
        Pred::Contains(vec!["author", "target", "object"], u)
    });
    let kind = q.kind.map(ChangeType::as_str);
    let spec = SeriesSpec {
        series: CHANGES,
        partition: kind,
        filter: &filter,
    };
    let (records, meta) = series_page(&state, &caller, &page, &window, spec, &q).await?;
    Ok(Envelope::new(parse_all(records)?, meta))
}

/// Comptes à risque
///
/// Classement calculé à partir du graphe des connexions des 30 derniers jours (compte x
/// machine) : statut administrateur, machines atteintes (dont serveurs), échecs de connexion
/// et centralité (degré pondéré du compte dans le graphe, entre 0 et 1). Chaque compte
/// donne son score (0 à 100) et les facteurs qui l'expliquent. 50 par défaut, 200 au plus.
#[route(list_risky_accounts,
    responses((status = 200, description = "Comptes classés par risque décroissant", body = Envelope<Vec<RiskyAccount>>)))]
pub async fn list_risky_accounts(
    State(state): State<AppState>,
    caller: Caller,
    page: Page,
) -> ApiResult<Vec<RiskyAccount>> {
    // The ranking made when the graph was collected, in rank order; one more than the page,
    // to know whether the list was cut.
    let docs = state
        .stores
        .docs
        .list(
            &caller.tenant,
            RANKING,
            &Filter::all(),
            None,
            page.limit as usize + 1,
        )
        .await?;
    let ranked = docs
        .into_iter()
        .map(|d| decode::<RiskyAccount>(d.body))
        .collect::<Result<Vec<_>, _>>()?;
    let (ranked, meta) = page.limited(ranked, false);
    Ok(Envelope::new(ranked, meta.with("graph_days", 30)))
}

/// Anomalies de comportement
///
/// Écarts détectés sur les comptes et les machines (force brute, pulvérisation de mots de
/// passe, connexion hors horaires, administrateur sur une machine nouvelle...), détectés
/// dans la fenêtre W (24 h par défaut), du plus récent au plus ancien. `status` vaut `new`,
/// `investigating`, `confirmed` ou `dismissed`. Au plus 1000 ; `meta.truncated` au-delà.
#[route(list_security_anomalies,
    params(AnomaliesQuery),
    responses((status = 200, description = "Anomalies", body = Envelope<Vec<Anomaly>>)))]
pub async fn list_security_anomalies(
    State(state): State<AppState>,
    caller: Caller,
    window: Window,
    Query(q): Query<AnomaliesQuery>,
) -> ApiResult<Vec<Anomaly>> {
    let filter = Filter::all().and_some(q.status, |s| Pred::Eq("status", json!(s.as_str())));
    let (records, meta) = unpaged(&state, &caller, ANOMALIES, &window, &filter).await?;
    Ok(Envelope::new(parse_all(records)?, meta))
}

/// Incidents SIEM
///
/// `status=open` renvoie les incidents en cours (OPEN, ACKNOWLEDGED ou INVESTIGATING), quelle
/// que soit la fenêtre. Sinon, les incidents actifs dans la fenêtre W (24 h par défaut) :
/// ouverts avant sa fin et non clos avant son début, filtrés sur un statut précis (`OPEN`,
/// `ACKNOWLEDGED`, `INVESTIGATING`, `RESOLVED`, `CLOSED`) s'il est donné. `severity` vaut
/// `CRITICAL`, `HIGH`, `MEDIUM` ou `LOW`. Du plus récemment ouvert au plus ancien ; 100 par
/// défaut, 500 au plus ; `meta.total` donne le nombre d'incidents trouvés.
#[route(list_security_incidents,
    params(IncidentsQuery),
    responses((status = 200, description = "Incidents", body = Envelope<Vec<Incident>>)))]
pub async fn list_security_incidents(
    State(state): State<AppState>,
    caller: Caller,
    page: Page,
    window: Window,
    Query(q): Query<IncidentsQuery>,
) -> ApiResult<Vec<Incident>> {
    let status = text(&q.status);
    let in_progress = status.as_deref() == Some("open");
    let precise = match &status {
        Some(s) if !in_progress => match SiemStatus::parse_any_case(s) {
            Some(x) => Some(x),
            None => {
                return Err(ApiError::invalid_parameter(
                    "status",
                    "valeurs admises : open, OPEN, ACKNOWLEDGED, INVESTIGATING, RESOLVED, CLOSED",
                    "allowed values: open, OPEN, ACKNOWLEDGED, INVESTIGATING, RESOLVED, CLOSED",
                ));
            }
        },
        _ => None,
    };
    let severity = match text(&q.severity) {
        None => None,
        Some(s) => Some(SiemSeverity::parse_any_case(&s).ok_or_else(|| {
            ApiError::invalid_parameter(
                "severity",
                "valeurs admises : CRITICAL, HIGH, MEDIUM, LOW",
                "allowed values: CRITICAL, HIGH, MEDIUM, LOW",
            )
        })?),
    };
    let mut filter = Filter::all().and_some(severity, |s| Pred::Eq("severity", json!(s)));
    if in_progress {
        filter = filter.and(Pred::In(
            "status",
            SiemStatus::IN_PROGRESS.iter().map(|s| json!(s)).collect(),
        ));
    } else if let Some(s) = precise {
        filter = filter.and(Pred::Eq("status", json!(s)));
    }
    // What is in progress, and what was closed since the window's start.
    let since = (!in_progress).then_some(window.from);
    let mut incidents: Vec<Incident> = state
        .stores
        .docs
        .live_as(&caller.tenant, INCIDENTS, since, &filter)
        .await?;
    if !in_progress {
        incidents
            .retain(|i| i.opened_at < window.to && i.closed_at.is_none_or(|c| c >= window.from));
    }
    incidents.sort_by(|a, b| b.opened_at.cmp(&a.opened_at).then_with(|| b.id.cmp(&a.id)));
    let total = incidents.len();
    let (incidents, meta) = page.limited(incidents, false);
    Ok(Envelope::new(
        incidents,
        meta.window(&window).with("total", total),
    ))
}

/// Détail d'un incident SIEM
///
/// L'incident (identifiant texte ; la forme `siem-<id>` du flux d'alertes est acceptée) et
/// ses 200 derniers événements corrélés, du plus récent au plus ancien
/// (`meta.events_truncated` vaut `true` s'il y en a davantage). 404 si l'incident est
/// inconnu dans ce compte.
#[route(get_security_incident,
    params(("id" = String, Path, description = "Identifiant de l'incident, seul ou sous la forme siem-<id> du flux d'alertes", example = "2026-0118",
        // The ids the incidents have, and the form an ack takes (`siem-<id>`).
        pattern = "^(siem-)?[A-Za-z0-9-]{1,64}$")),
    responses(
        (status = 200, description = "L'incident et ses événements", body = Envelope<IncidentDetail>),
        (status = 404, description = "Incident inconnu dans ce compte", body = netops_shared::error::ErrorBody),
    ))]
pub async fn get_security_incident(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<IncidentDetail> {
    let mut incident = state
        .stores
        .docs
        .get_as::<Incident>(&caller.tenant, INCIDENTS, &id)
        .await?;
    if incident.is_none()
        && let Some(bare) = id.strip_prefix("siem-")
    {
        incident = state
            .stores
            .docs
            .get_as(&caller.tenant, INCIDENTS, bare)
            .await?;
    }
    let incident = incident.ok_or_else(|| {
        ApiError::not_found(format!("Incident « {id} »"), format!("Incident '{id}'"))
    })?;
    let page = state
        .stores
        .series
        .scan(&SeriesQuery {
            tenant: &caller.tenant,
            series: INCIDENT_EVENTS,
            partition: Some(&incident.id),
            from: i64::MIN,
            to: i64::MAX,
            filter: &Filter::all(),
            after: None,
            limit: INCIDENT_EVENTS_MAX,
        })
        .await?;
    let events = page.records.into_iter().map(correlated).collect();
    let mut meta = Meta::new();
    if page.next.is_some() {
        meta = meta.with("events_truncated", true);
    }
    Ok(Envelope::new(IncidentDetail { incident, events }, meta))
}

fn correlated(r: Record) -> CorrelatedEvent {
    let s = |k: &str| r.body.get(k).and_then(Value::as_str).map(str::to_owned);
    CorrelatedEvent {
        ts: r
            .body
            .get("ts")
            .and_then(Value::as_str)
            .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
            .map(|t| t.to_utc())
            .or_else(|| DateTime::from_timestamp_millis(r.ts))
            .unwrap_or_default(),
        event_id: r.body.get("event_id").cloned().unwrap_or(Value::Null),
        account: s("account"),
        host: s("host"),
        source_ip: s("source_ip"),
        message: s("message"),
    }
}

/// Règles de détection
///
/// Les règles globales du produit (`scope: global`, les mêmes pour tous les comptes) puis
/// les règles propres au compte (`scope: tenant`).
#[route(list_security_rules,
    responses((status = 200, description = "Règles globales et du compte", body = Envelope<Vec<Rule>>)))]
pub async fn list_security_rules(
    State(state): State<AppState>,
    caller: Caller,
) -> ApiResult<Vec<Rule>> {
    let mut rules = global_rules();
    rules.extend(
        state
            .stores
            .docs
            .all_as::<Rule>(&caller.tenant, RULES, &Filter::all())
            .await?,
    );
    let meta = Meta::new()
        .with(
            "global",
            rules
                .iter()
                .filter(|r| r.scope == RuleScope::Global)
                .count(),
        )
        .with(
            "tenant",
            rules
                .iter()
                .filter(|r| r.scope == RuleScope::Tenant)
                .count(),
        );
    Ok(Envelope::new(rules, meta))
}
