//! NetDiag handlers (docs/modules.md#netdiag): thin, over the reads of `service`.

use std::collections::HashMap;

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use http::{StatusCode, header};
use netops_shared::RequestCtx;
use netops_shared::envelope::Meta;
use netops_shared::lookup::Lookup;
use netops_shared::paging::{SeriesSpec, series_page};
use netops_shared::route;
use netops_shared::store::{Change, Expect, Filter, Pred};
use netops_shared::write::{CommitError, Committed, commit};
use netops_shared::{
    ApiError, ApiResult, AppState, Caller, Envelope, Json, Page, Path, Query, Window,
};
use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::model::*;
use crate::service::{self, decode};
use crate::{actions, report, settings};

/// Machines sous diagnostic
///
/// Machines dont le module netdiag est actif, triées par nom d'hôte, avec le verdict de leur
/// dernière mesure, sa cause, depuis quand il tient, et l'état d'alerte : `open` avec
/// l'alerte NetDiag en cours (`nd-...`) quand la machine n'est pas OK, `none` sinon.
#[route(list_netdiag_machines,
    responses((status = 200, description = "Machines sous diagnostic", body = Envelope<Vec<DiagMachine>>)))]
pub async fn list_netdiag_machines(
    State(state): State<AppState>,
    caller: Caller,
) -> ApiResult<Vec<DiagMachine>> {
    let (docs, tenant) = (&state.stores.docs, &caller.tenant);
    // The machines under diagnosis are those with a NetDiag state: their roster documents are
    // read by key, not the whole fleet.
    let states: HashMap<String, crate::model::State> = docs
        .read_all(tenant, STATES, &Filter::all())
        .await?
        .items
        .into_iter()
        .filter_map(|d| serde_json::from_value(d.body).ok().map(|s| (d.key, s)))
        .collect();
    let hosts: Vec<String> = states.keys().cloned().collect();
    let with_netdiag = Filter::all().and(Pred::Has("modules", json!("netdiag")));
    let mut machines = docs.get_many(tenant, MACHINES, &hosts).await?;
    machines.retain(|d| with_netdiag.matches(&d.body));
    machines.sort_by(|a, b| a.key.cmp(&b.key));
    let is_open = Filter::all().and(Pred::Eq("status", json!(AlertState::Open)));
    let open: HashMap<String, Alert> = docs
        .live_since(tenant, ALERTS, None)
        .await?
        .items
        .into_iter()
        .filter(|d| is_open.matches(&d.body))
        .filter_map(|d| serde_json::from_value::<Alert>(d.body).ok())
        .map(|a| (a.id.clone(), a))
        .collect();
    let agents: HashMap<String, AgentInfo> = docs
        .get_many(tenant, AGENTS, &hosts)
        .await?
        .into_iter()
        .filter_map(|d| serde_json::from_value(d.body).ok().map(|a| (d.key, a)))
        .collect();
    let mut out = Vec::new();
    for d in machines {
        let m = &d.body;
        let Some(st) = states.get(&d.key) else {
            continue;
        };
        let alert = st.open_alert.as_ref().and_then(|id| open.get(id)).cloned();
        out.push(DiagMachine {
            id: m["id"].as_i64().unwrap_or_default(),
            hostname: d.key.clone(),
            ip: m["ip"].as_str().unwrap_or_default().to_owned(),
            os: m["os"].as_str().unwrap_or_default().to_owned(),
            status: decode(m["status"].clone())?,
            last_seen_at: decode(m["last_seen_at"].clone())?,
            verdict: st.verdict,
            cause: st.cause.clone(),
            verdict_since: st.since,
            last_measure_at: st.last_measure_at,
            alert_state: if alert.is_some() {
                DiagAlertState::Open
            } else {
                DiagAlertState::None
            },
            alert,
            agent: agents.get(&d.key).cloned(),
        });
    }
    let n = out.len();
    Ok(Envelope::new(out, Meta::new().with("count", n)))
}

/// Synthèse NetDiag d'une machine
///
/// Sur la fenêtre (24 h par défaut) : répartition des verdicts (OK, PC, LAN, INFRA, WAN,
/// DNS, SERVICE ; mesures toutes les 15 minutes, agrégées par heure : les heures qui
/// chevauchent la fenêtre comptent), principales causes des verdicts non OK, dernière
/// mesure à la fin de la fenêtre (lien, Wi-Fi, latences, sondes), verdict courant et alerte
/// en cours. 404 si la machine est inconnue ou n'a aucune mesure.
#[route(get_netdiag_summary,
    params(("hostname" = String, Path, description = "Nom d'hôte exact, tel qu'affiché dans le produit")),
    responses(
        (status = 200, description = "Synthèse de la machine", body = Envelope<Summary>),
        (status = 404, description = "Machine inconnue ou sans mesure", body = netops_shared::error::ErrorBody),
    ))]
pub async fn get_netdiag_summary(
    State(state): State<AppState>,
    caller: Caller,
    window: Window,
    Path(hostname): Path<String>,
) -> ApiResult<Summary> {
    let (summary, _) = service::summary(&state, &caller.tenant, &hostname, &window).await?;
    Ok(Envelope::new(summary, Meta::new().window(&window)))
}

/// Filters bound into the events cursor.
#[derive(Serialize)]
struct EventFilters<'a> {
    hostname: &'a str,
    sources: &'a [&'static str],
    q: Option<&'a str>,
}

/// Parses `source`: one or several sources separated by commas. `file` and `fg` are accepted
/// but never match: those sources are not exposed.
fn parse_sources(raw: Option<&str>) -> Result<Vec<&'static str>, ApiError> {
    let Some(raw) = raw else {
        return Ok(SOURCES.to_vec());
    };
    let mut out = Vec::new();
    for part in raw.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        if let Some(s) = SOURCES.iter().find(|s| **s == part) {
            if !out.contains(s) {
                out.push(*s);
            }
        } else if !HIDDEN_SOURCES.contains(&part) {
            let list = SOURCES.join(", ");
            return Err(ApiError::invalid_parameter(
                "source",
                &format!("valeurs admises : {list}"),
                &format!("allowed values: {list}"),
            ));
        }
    }
    Ok(out)
}

/// Évènements d'une machine
///
/// Le fil d'évènements de la machine sur la fenêtre (24 h par défaut), du plus récent au
/// plus ancien, paginé par curseur (200 par défaut, 1000 au plus). `source` garde une
/// source (ou plusieurs, séparées par des virgules) parmi verdict, appv, alert, app, teams,
/// ap, vpn, wlan, driver, trace, speed, capture, netprofile, switch, dhcp, power, wan,
/// tcpfail, proc, install ; `q` cherche un texte dans le message, sans tenir compte de la
/// casse. Les sources sensibles `file` et `fg` ne sont jamais renvoyées, quel que soit le
/// filtre. Les résultats des actions de diagnostic arrivent ici (sources trace, speed,
/// capture).
#[route(list_netdiag_events,
    params(("hostname" = String, Path, description = "Nom d'hôte exact, tel qu'affiché dans le produit"), EventsQuery),
    responses(
        (status = 200, description = "Une page d'évènements", body = Envelope<Vec<Event>>),
        (status = 404, description = "Machine inconnue dans ce compte", body = netops_shared::error::ErrorBody),
    ))]
pub async fn list_netdiag_events(
    State(state): State<AppState>,
    caller: Caller,
    page: Page,
    window: Window,
    Path(hostname): Path<String>,
    Query(query): Query<EventsQuery>,
) -> ApiResult<Vec<Event>> {
    let sources = parse_sources(query.source.as_deref())?;
    let q = query.q.as_deref().map(str::trim).filter(|q| !q.is_empty());
    if q.is_some_and(|q| q.chars().count() > 200) {
        return Err(ApiError::invalid_parameter(
            "q",
            "200 caractères au plus",
            "at most 200 characters",
        ));
    }
    let filters = EventFilters {
        hostname: &hostname,
        sources: &sources,
        q,
    };
    if sources.is_empty() {
        // Only hidden sources were asked for: nothing is ever returned.
        state.stores.docs.machine(&caller.tenant, &hostname).await?;
        page.resume::<Value>(&filters)?;
        return Ok(Envelope::new(
            Vec::new(),
            page.meta::<Value>(&filters, None).window(&window),
        ));
    }
    let filter = service::events_filter(&sources, q);
    // The machine check and the page are independent: read side by side.
    let (_, (records, meta)) = tokio::try_join!(
        state.stores.docs.machine(&caller.tenant, &hostname),
        series_page(
            &state,
            &caller,
            &page,
            &window,
            SeriesSpec {
                series: EVENTS,
                partition: Some(&hostname),
                filter: &filter,
            },
            &filters,
        ),
    )?;
    let events = records
        .into_iter()
        .map(|r| decode(r.body))
        .collect::<Result<_, _>>()?;
    Ok(Envelope::new(events, meta))
}

/// Applications suivies d'une machine
///
/// Pour chaque application suivie sur la fenêtre (24 h par défaut) : verdict courant et
/// répartition des verdicts, charge (processeur, mémoire), dépendances réseau, sondes (taux
/// de réussite, latence moyenne) et tendance mémoire (`rising`, `falling` ou `stable`, avec
/// au plus 48 points). 404 si la machine est inconnue.
#[route(list_netdiag_apps,
    params(("hostname" = String, Path, description = "Nom d'hôte exact, tel qu'affiché dans le produit")),
    responses(
        (status = 200, description = "Applications suivies", body = Envelope<Vec<App>>),
        (status = 404, description = "Machine inconnue dans ce compte", body = netops_shared::error::ErrorBody),
    ))]
pub async fn list_netdiag_apps(
    State(state): State<AppState>,
    caller: Caller,
    window: Window,
    Path(hostname): Path<String>,
) -> ApiResult<Vec<App>> {
    let apps = service::apps(&state, &caller.tenant, &hostname, &window).await?;
    Ok(Envelope::new(apps, Meta::new().window(&window)))
}

/// Rapport PDF d'une machine
///
/// Rapport de diagnostic réseau à remettre tel quel : machine et fenêtre en titre,
/// répartition des verdicts en graphique avec leur chronologie, principales causes, dernière
/// mesure et évènements notables. `lang` : `fr` (par défaut) ou `en` ; `tz` : fuseau IANA
/// des heures affichées (`Europe/Paris` par défaut ; 400 pour un fuseau inconnu). 404 si la
/// machine est inconnue.
#[route(get_netdiag_report,
    params(("hostname" = String, Path, description = "Nom d'hôte exact, tel qu'affiché dans le produit"), ReportQuery),
    responses(
        (status = 200, description = "Le rapport PDF", content_type = "application/pdf", body = Vec<u8>),
        (status = 404, description = "Machine inconnue dans ce compte", body = netops_shared::error::ErrorBody),
    ))]
pub async fn get_netdiag_report(
    State(state): State<AppState>,
    caller: Caller,
    window: Window,
    Path(hostname): Path<String>,
    Query(query): Query<ReportQuery>,
) -> Result<Response, ApiError> {
    let options = report::Options::parse(query.lang.as_deref(), query.tz.as_deref())?;
    let bytes = report::build(&state, &caller.tenant, &hostname, &window, &options).await?;
    let filename = format!(
        "netdiag-{}-{}.pdf",
        hostname.replace(|c: char| !c.is_ascii_alphanumeric() && c != '-', "_"),
        window.to.format("%Y%m%d")
    );
    Ok((
        [
            (header::CONTENT_TYPE, "application/pdf".to_owned()),
            (
                header::CONTENT_DISPOSITION,
                format!("inline; filename=\"{filename}\""),
            ),
        ],
        bytes,
    )
        .into_response())
}

/// A write whose conditional change found another state: an action id drawn twice (never
/// in practice), answered like a store failure, since the contract has no 409 for it.
fn commit_error(e: CommitError) -> ApiError {
    match e {
        CommitError::Conflict => ApiError::unavailable(&"action id already taken"),
        CommitError::Failed(e) => e,
    }
}

/// How long a settings change keeps retrying against concurrent changes of the same machine
/// before it gives up with 503 (each retry reads the latest version and merges again).
const SETTINGS_RETRY_FOR: std::time::Duration = std::time::Duration::from_secs(5);

/// Réglages NetDiag d'une machine
///
/// Mise à jour partielle : seules les clés envoyées changent ; la réponse donne l'ensemble
/// des réglages qui en résulte. Clés : `apps` (au plus 10 exécutables ; liste vide = défaut
/// du compte), `extraProbes` (au plus 3, de la forme `hôte.domaine[:port]` ou
/// `*.domaine[:port]`) et les interrupteurs booléens. Une clé inconnue ou une valeur
/// invalide donne 400 avec la liste `admitted_keys` ; une machine inconnue, 404. L'agent
/// applique les réglages dans la minute. L'écriture est journalisée avec son corps.
#[route(update_netdiag_settings,
    params(("hostname" = String, Path, description = "Nom d'hôte exact, tel qu'affiché dans le produit")),
    request_body = SettingsUpdate,
    responses(
        (status = 200, description = "Les réglages complets après la mise à jour", body = Envelope<Settings>),
        (status = 404, description = "Machine inconnue dans ce compte", body = netops_shared::error::ErrorBody),
    ))]
pub async fn update_netdiag_settings(
    State(state): State<AppState>,
    caller: Caller,
    request: RequestCtx,
    Path(hostname): Path<String>,
    Json(body): Json<Map<String, Value>>,
) -> Result<Committed<Settings>, ApiError> {
    settings::merge(&Settings::default(), &body)?;
    state.stores.docs.machine(&caller.tenant, &hostname).await?;
    // Partial updates of one machine never conflict (docs/writes.md#netdiag-settings): on a
    // version conflict the change is merged again into the latest settings, after a short
    // random pause so that concurrent writers spread out.
    let deadline = tokio::time::Instant::now() + SETTINGS_RETRY_FOR;
    loop {
        let current = state
            .stores
            .docs
            .get_versioned::<Settings>(&caller.tenant, SETTINGS, &hostname)
            .await?;
        let (base, expect) = match current {
            Some(d) => (d.value, Expect::Version(d.version)),
            None => (Settings::default(), Expect::Absent),
        };
        let merged = settings::merge(&base, &body)?;
        let change = Change::PutDoc {
            collection: SETTINGS.into(),
            key: hostname.clone(),
            body: serde_json::to_value(&merged).map_err(|e| ApiError::internal(&e))?,
            expect,
        };
        let answer = Committed(StatusCode::OK, Envelope::new(merged, Meta::new()));
        match commit(&state, &caller, &request, answer, vec![change]).await {
            Ok(committed) => return Ok(committed),
            Err(CommitError::Conflict) if tokio::time::Instant::now() < deadline => {
                let pause = rand::random_range(1..=20);
                tokio::time::sleep(std::time::Duration::from_millis(pause)).await;
            }
            Err(CommitError::Conflict) => {
                return Err(ApiError::unavailable(&"settings kept changing for 5 s"));
            }
            Err(CommitError::Failed(e)) => return Err(e),
        }
    }
}

/// Lancer une action de diagnostic
///
/// `action` : `trace` (traceroute ; `target` facultatif, nom d'hôte ou adresse, la
/// passerelle sinon), `speed` (test de débit, 20 Mo descendants et 8 Mo montants) ou
/// `capture` (capture pcapng de `seconds` secondes, 5 à 120, 30 par défaut). Toute autre
/// valeur ou clé donne 400. Réponse 202 avec l'action en file d'attente ; le résultat arrive
/// dans les évènements de la machine (source trace, speed ou capture) quand l'agent est en
/// ligne. L'écriture est journalisée avec son corps.
#[route(start_netdiag_action,
    params(("hostname" = String, Path, description = "Nom d'hôte exact, tel qu'affiché dans le produit")),
    request_body = ActionRequest,
    responses(
        (status = 202, description = "Action acceptée et mise en file d'attente", body = Envelope<Action>),
        (status = 404, description = "Machine inconnue dans ce compte", body = netops_shared::error::ErrorBody),
    ))]
pub async fn start_netdiag_action(
    State(state): State<AppState>,
    caller: Caller,
    ctx: RequestCtx,
    Path(hostname): Path<String>,
    Json(body): Json<Map<String, Value>>,
) -> Result<Committed<Action>, ApiError> {
    let request = actions::parse(&body)?;
    state.stores.docs.machine(&caller.tenant, &hostname).await?;
    let now = chrono::Utc::now();
    let claim_secs = i64::from(state.config.agent.claim_secs);
    let action = Action {
        action_id: actions::new_id(),
        action: request.action,
        status: ActionStatus::Queued,
        requested_at: now,
        claim_by: Some(now + chrono::Duration::seconds(claim_secs)),
        claimed_at: None,
        lease_until: None,
        claim_id: None,
        hostname: hostname.clone(),
        target: request.target,
        seconds: request.seconds,
        completed_at: None,
        event_id: None,
        result: None,
    };
    let changes = vec![
        Change::PutDoc {
            collection: ACTIONS.into(),
            key: action.action_id.clone(),
            body: serde_json::to_value(&action).map_err(|e| ApiError::internal(&e))?,
            expect: Expect::Absent,
        },
        Change::Append {
            series: ACTION_REQUESTS.into(),
            record: crate::agent::request_record(&action),
        },
    ];
    let answer = Committed(StatusCode::ACCEPTED, Envelope::new(action, Meta::new()));
    commit(&state, &caller, &ctx, answer, changes)
        .await
        .map_err(commit_error)
}
