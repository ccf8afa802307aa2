//! The agent routes' handlers (docs/agent.md). Their descriptions (French) say how long each
//! stage may take.

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Duration, Utc};
use http::HeaderValue;
use netops_netdiag::agent::{self as loop_, ActionResult, Posted};
use netops_netdiag::model::{AGENTS, Action, ActionKind, AgentInfo, SETTINGS, Settings};
use netops_shared::auth::{AGENT_TOKEN_PREFIX, create_token, rotate_record};
use netops_shared::collect::{Batch, Observation};
use netops_shared::idempotency::IDEMPOTENT_REPLAYED;
use netops_shared::lookup::MACHINES;
use netops_shared::store::StoreError;
use netops_shared::{
    ApiError, ApiResult, AppState, Caller, Envelope, Json, Meta, Path, Scope, ok, route,
};
use serde::{Deserialize, Serialize};
use serde_json::json;
use utoipa::ToSchema;

/// How long an agent credential lives; rotated before it ends (`/agent/credential/rotate`).
const CREDENTIAL_DAYS: i64 = 365;
/// How long a rotated credential keeps working beside the new one.
const ROTATION_OVERLAP_MINUTES: i64 = 10;
/// At most this many actions are listed by a sync, and claimed at once.
const ACTIONS_LISTED: usize = 20;
const CLAIM_MAX: u32 = 10;

/// The oldest request an action still claimable can have: the claim deadline ago.
fn claim_window(state: &AppState) -> DateTime<Utc> {
    Utc::now() - Duration::seconds(i64::from(state.config.agent.claim_secs))
}

/// The machine the agent credential is bound to.
fn machine(caller: &Caller) -> Result<&str, ApiError> {
    caller
        .agent_machine()
        .ok_or_else(|| ApiError::agent_only(false))
}

fn text(name: &str, value: &str, max: usize) -> Result<(), ApiError> {
    if value.trim().is_empty() || value.len() > max || value.chars().any(char::is_control) {
        return Err(ApiError::invalid_parameter(
            name,
            &format!("texte de 1 à {max} caractères attendu"),
            &format!("expected a text of 1 to {max} characters"),
        ));
    }
    Ok(())
}

/// Corps de `POST /agent/enroll` : la machine telle que son agent la voit.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Enrollment {
    /// Nom d'hôte : la machine du compte de ce nom, créée si elle n'existe pas.
    #[schema(example = "PAR-LT-0042")]
    pub hostname: String,
    #[schema(example = "10.10.30.42")]
    pub ip: String,
    #[schema(example = "Windows 11 Pro 24H2")]
    pub os: String,
    #[schema(example = "4.12.3")]
    pub agent_version: String,
}

/// L'identifiant d'un agent, montré une fois.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Credential {
    pub hostname: String,
    /// Le jeton de l'agent (`nop_…`), lié à cette machine : à garder secret.
    pub credential: String,
    pub expires_at: DateTime<Utc>,
    /// `true` quand l'enrôlement a créé la machine.
    pub machine_created: bool,
    /// Intervalle de synchronisation, en secondes.
    pub poll_seconds: u32,
}

/// Enrôler une machine
///
/// Avec un jeton d'enrôlement du compte (portée `agent:enroll`, créé par
/// `netops token create --scopes agent:enroll`) : crée la machine si le compte n'en a pas de ce
/// nom (comme son premier battement de cœur), et remet l'identifiant de son agent (portée
/// `agent`, lié à cette machine, valable un an). Un nouvel enrôlement de la même machine
/// révoque l'identifiant précédent. L'identifiant appelle les routes `/agent` de sa machine
/// seulement, jamais l'API publique ; `netops token revoke agent:<hostname>` le révoque.
#[route(enroll_agent,
    request_body = Enrollment,
    responses(
        (status = 200, description = "Machine enrôlée : l'identifiant de son agent", body = Envelope<Credential>),
        (status = 400, description = "Champ invalide", body = netops_shared::error::ErrorBody),
    ))]
pub async fn enroll_agent(
    State(state): State<AppState>,
    caller: Caller,
    Json(body): Json<Enrollment>,
) -> ApiResult<Credential> {
    let now = Utc::now();
    text("agent_version", &body.agent_version, 64)?;
    let stores = &state.stores;
    let stored = stores
        .docs
        .get(&caller.tenant, MACHINES, &body.hostname)
        .await?;
    let known = stored.is_some();
    // The machine as its first heartbeat makes it (or updates it): its fields are checked as
    // the heartbeat's; a known machine keeps its other modules.
    let mut modules: Vec<String> = stored
        .and_then(|d| serde_json::from_value(d.body["modules"].clone()).ok())
        .unwrap_or_default();
    modules.push("netdiag".into());
    let heartbeat = json!({
        "at": now, "hostname": body.hostname, "ip": body.ip, "os": body.os,
        "agent_version": body.agent_version, "modules": modules,
    });
    let batch = Batch {
        stores,
        tenant: &caller.tenant,
        id: &format!("enroll/{}", body.hostname),
        now,
        oldest: now - Duration::days(1),
        observations: vec![Observation {
            line: 1,
            value: heartbeat,
        }],
        // A heartbeat places nothing.
        geo: None,
        // The enrollment token makes the machine, not its agent.
        machine: None,
    };
    let refused = (netops_fleet::collect::HEARTBEAT.write)(&batch).await?;
    if let Some(r) = refused.first() {
        return Err(ApiError::invalid_body(
            r.message_fr.clone(),
            r.message_en.clone(),
        ));
    }
    let name = format!("{AGENT_TOKEN_PREFIX}{}", body.hostname);
    stores
        .tokens
        .revoke(&caller.tenant, &name, now.timestamp())
        .await?;
    let (secret, record) = create_token(
        stores.tokens.as_ref(),
        &caller.tenant,
        &name,
        vec![Scope::Agent],
        Duration::days(CREDENTIAL_DAYS),
    )
    .await?;
    let info = AgentInfo {
        enrolled_at: now,
        agent_version: body.agent_version.clone(),
        settings_applied_version: None,
        settings_applied_at: None,
    };
    put_info(&state, &caller.tenant, &body.hostname, &info).await?;
    ok(Credential {
        hostname: body.hostname,
        credential: secret,
        expires_at: DateTime::from_timestamp(record.expires_at, 0).unwrap_or(now),
        machine_created: !known,
        poll_seconds: state.config.agent.poll_secs,
    })
}

async fn put_info(
    state: &AppState,
    tenant: &str,
    hostname: &str,
    info: &AgentInfo,
) -> Result<(), ApiError> {
    let body = serde_json::to_value(info).map_err(|e| ApiError::internal(&e))?;
    state
        .stores
        .docs
        .put(tenant, AGENTS, vec![(hostname.to_owned(), body)])
        .await?;
    Ok(())
}

/// Le nouvel identifiant d'un agent, montré une fois.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Rotated {
    pub hostname: String,
    /// Le nouveau jeton de l'agent (`nop_…`) : l'ancien reste accepté 10 minutes.
    pub credential: String,
    pub expires_at: DateTime<Utc>,
}

/// Renouveler l'identifiant de l'agent
///
/// Un nouvel identifiant pour la même machine, valable un an ; l'ancien reste accepté
/// 10 minutes, le temps que l'agent enregistre le nouveau.
#[route(rotate_agent_credential,
    responses((status = 200, description = "Le nouvel identifiant", body = Envelope<Rotated>)))]
pub async fn rotate_agent_credential(
    State(state): State<AppState>,
    caller: Caller,
) -> ApiResult<Rotated> {
    let hostname = machine(&caller)?;
    let tokens = state.stores.tokens.as_ref();
    let current = tokens
        .by_hash(&caller.token_hash)
        .await?
        .filter(|t| t.revoked_at.is_none() && t.expires_at > Utc::now().timestamp());
    let rotated = match current {
        Some(old) => {
            rotate_record(tokens, &old, Duration::minutes(ROTATION_OVERLAP_MINUTES)).await?
        }
        None => None,
    };
    let Some((secret, record)) = rotated else {
        return Err(ApiError::conflict(
            "Identifiant déjà renouvelé ou révoqué : utilisez le plus récent, ou enrôlez de nouveau la machine.",
            "Credential already rotated or revoked: use the latest one, or enroll the machine again.",
        ));
    };
    ok(Rotated {
        hostname: hostname.to_owned(),
        credential: secret,
        expires_at: DateTime::from_timestamp(record.expires_at, 0).unwrap_or_else(Utc::now),
    })
}

/// Une action en attente, telle que l'agent la voit.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Pending {
    pub action_id: String,
    pub action: ActionKind,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seconds: Option<u32>,
    pub requested_at: DateTime<Utc>,
    /// Au-delà, l'action non prise en charge expire.
    pub claim_by: Option<DateTime<Utc>>,
}

/// Réponse de `GET /agent/sync` : ce que l'agent doit savoir, identique tant que rien ne change.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Sync {
    pub hostname: String,
    /// Version des réglages de la machine (0 : jamais enregistrés) : différente de celle
    /// appliquée, l'agent lit `GET /agent/settings`.
    pub settings_version: u64,
    /// Intervalle de synchronisation, en secondes (30 au plus).
    pub poll_seconds: u32,
    /// Les actions en attente de la machine (20 au plus), les plus anciennes d'abord : à
    /// prendre en charge par `POST /agent/actions/claim`.
    pub actions: Vec<Pending>,
}

async fn settings_of(
    state: &AppState,
    tenant: &str,
    hostname: &str,
) -> Result<(u64, Settings), ApiError> {
    Ok(
        match state.stores.docs.get(tenant, SETTINGS, hostname).await? {
            Some(d) => (
                d.version,
                serde_json::from_value(d.body).map_err(|e| ApiError::internal(&e))?,
            ),
            None => (0, Settings::default()),
        },
    )
}

/// Synchroniser l'agent
///
/// L'appel que l'agent répète toutes les `poll_seconds` secondes (30 par défaut,
/// `NETOPS_AGENT_POLL_SECONDS`) : la version des réglages de sa machine et ses actions en
/// attente. Avec `If-None-Match` (l'`ETag` de la réponse précédente), la réponse est 304 sans
/// corps tant que rien n'a changé. Délais : un réglage enregistré est vu à la synchronisation
/// suivante (30 s au plus), donc appliqué dans la minute ; une action en attente est prise en
/// charge dans les 30 s si l'agent est en ligne, sinon elle expire après
/// `NETOPS_ACTION_CLAIM_SECONDS` (300 s) avec un évènement qui le dit.
#[route(sync_agent,
    responses((status = 200, description = "Version des réglages et actions en attente", body = Envelope<Sync>)))]
pub async fn sync_agent(State(state): State<AppState>, caller: Caller) -> ApiResult<Sync> {
    let hostname = machine(&caller)?;
    let since = claim_window(&state);
    let ((version, _), queued) =
        tokio::try_join!(settings_of(&state, &caller.tenant, hostname), async {
            loop_::queued(
                &state.stores,
                &caller.tenant,
                hostname,
                since,
                ACTIONS_LISTED,
            )
            .await
            .map_err(ApiError::from)
        },)?;
    ok(Sync {
        hostname: hostname.to_owned(),
        settings_version: version,
        poll_seconds: state.config.agent.poll_secs,
        actions: queued
            .into_iter()
            .map(|a| Pending {
                action_id: a.action_id,
                action: a.action,
                target: a.target,
                seconds: a.seconds,
                requested_at: a.requested_at,
                claim_by: a.claim_by,
            })
            .collect(),
    })
}

/// Réglages d'une machine avec leur version.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct VersionedSettings {
    pub version: u64,
    pub settings: Settings,
}

/// Lire les réglages de la machine
///
/// Les réglages NetDiag complets de la machine de l'agent et leur version (0 : jamais
/// enregistrés, les valeurs par défaut).
#[route(get_agent_settings,
    responses((status = 200, description = "Réglages et version", body = Envelope<VersionedSettings>)))]
pub async fn get_agent_settings(
    State(state): State<AppState>,
    caller: Caller,
) -> ApiResult<VersionedSettings> {
    let hostname = machine(&caller)?;
    let (version, settings) = settings_of(&state, &caller.tenant, hostname).await?;
    ok(VersionedSettings { version, settings })
}

/// Corps de `POST /agent/settings/applied`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SettingsApplied {
    /// La version des réglages que l'agent applique désormais.
    pub settings_version: u64,
    /// La version de l'agent (1 à 64 caractères).
    #[schema(example = "4.12.3")]
    pub agent_version: String,
}

/// Signaler les réglages appliqués
///
/// L'agent dit quelle version des réglages il applique, et sa propre version : l'utilisateur
/// le voit dans `GET /netdiag/machines` (champ `agent` : `settings_applied_version`,
/// `settings_applied_at`, `agent_version`). Une version au-delà de celle enregistrée donne 400.
#[route(report_agent_settings,
    request_body = SettingsApplied,
    responses(
        (status = 200, description = "Ce que l'utilisateur voit de l'agent", body = Envelope<AgentInfo>),
        (status = 400, description = "Version inconnue ou champ invalide", body = netops_shared::error::ErrorBody),
    ))]
pub async fn report_agent_settings(
    State(state): State<AppState>,
    caller: Caller,
    Json(body): Json<SettingsApplied>,
) -> ApiResult<AgentInfo> {
    let hostname = machine(&caller)?;
    text("agent_version", &body.agent_version, 64)?;
    let (current, _) = settings_of(&state, &caller.tenant, hostname).await?;
    if body.settings_version > current {
        return Err(ApiError::invalid_parameter(
            "settings_version",
            &format!("au plus la version enregistrée, {current}"),
            &format!("at most the saved version, {current}"),
        ));
    }
    let now = Utc::now();
    let enrolled_at = state
        .stores
        .docs
        .get(&caller.tenant, AGENTS, hostname)
        .await?
        .and_then(|d| serde_json::from_value::<AgentInfo>(d.body).ok())
        .map_or(now, |i| i.enrolled_at);
    let info = AgentInfo {
        enrolled_at,
        agent_version: body.agent_version,
        settings_applied_version: Some(body.settings_version),
        settings_applied_at: Some(now),
    };
    put_info(&state, &caller.tenant, hostname, &info).await?;
    ok(info)
}

/// Corps de `POST /agent/actions/claim`.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ClaimRequest {
    /// Au plus ce nombre d'actions (1 à 10 ; 1 par défaut).
    pub max: Option<u32>,
}

/// Prendre en charge des actions
///
/// Prend en charge les actions en attente de la machine, les plus anciennes d'abord : chacune
/// passe `running` sous un bail de `NETOPS_ACTION_LEASE_SECONDS` (180 s par défaut,
/// `lease_until`) et reçoit un `claim_id`. La prise en charge est exclusive : de deux agents
/// qui la demandent en même temps, un seul l'obtient. Un résultat non rendu avant la fin du
/// bail fait expirer l'action, avec un évènement qui le dit (à la passe planifiée suivante,
/// dans la minute).
#[route(claim_agent_actions,
    request_body = ClaimRequest,
    responses((status = 200, description = "Les actions obtenues (peut-être aucune)", body = Envelope<Vec<Action>>)))]
pub async fn claim_agent_actions(
    State(state): State<AppState>,
    caller: Caller,
    Json(body): Json<ClaimRequest>,
) -> ApiResult<Vec<Action>> {
    let hostname = machine(&caller)?;
    let max = body.max.unwrap_or(1);
    if !(1..=CLAIM_MAX).contains(&max) {
        return Err(ApiError::invalid_parameter(
            "max",
            "entier de 1 à 10 attendu",
            "expected an integer from 1 to 10",
        ));
    }
    let lease = Duration::seconds(i64::from(state.config.agent.lease_secs));
    let claimed = loop_::claim(
        &state.stores,
        &caller.tenant,
        hostname,
        claim_window(&state),
        max as usize,
        Utc::now(),
        lease,
    )
    .await?;
    Ok(Envelope::new(claimed, Meta::new()))
}

/// Un résultat enregistré : l'action terminée et l'identifiant de son évènement.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Recorded {
    /// L'identifiant de l'évènement du fil de la machine (`ev-<action_id>`).
    pub event_id: String,
    pub action: Action,
}

/// Rendre le résultat d'une action
///
/// Le résultat d'une action prise en charge (`claim_id`), avec le seul champ de son type
/// (`trace` : cible et sauts ; `speed` : débits ; `capture` : durée, paquets, fichier). Il
/// devient un évènement du fil de la machine, de source `trace`, `speed` ou `capture`, et
/// l'action passe `completed`. Renvoyé (même prise en charge), il ne crée pas un second
/// évènement : la réponse est la même, avec `Idempotent-Replayed: true`. 404 : action inconnue
/// de cette machine ; 409 : action non prise en charge sous ce `claim_id` (expirée, ou prise
/// par un autre agent).
#[route(post_agent_action_result,
    params(("id" = String, Path, description = "Identifiant de l'action (`act-…`)")),
    request_body = ActionResult,
    responses(
        (status = 200, description = "Résultat enregistré : l'action terminée", body = Envelope<Recorded>),
        (status = 404, description = "Action inconnue de cette machine", body = netops_shared::error::ErrorBody),
        (status = 409, description = "Action non prise en charge sous ce claim_id", body = netops_shared::error::ErrorBody),
    ))]
pub async fn post_agent_action_result(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    Json(body): Json<ActionResult>,
) -> Result<Response, ApiError> {
    let hostname = machine(&caller)?;
    let unknown = || ApiError::not_found(format!("Action « {id} »"), format!("Action '{id}'"));
    if id.len() > 64 {
        return Err(unknown());
    }
    let Some((action, _)) = loop_::action(&state.stores, &caller.tenant, &id).await? else {
        return Err(unknown());
    };
    if action.hostname != hostname {
        return Err(unknown());
    }
    let event =
        loop_::result_event(&action, &body).map_err(|(fr, en)| ApiError::invalid_body(fr, en))?;
    let posted = loop_::complete(
        &state.stores,
        &caller.tenant,
        hostname,
        &id,
        event,
        &body.claim_id,
        Utc::now(),
    )
    .await
    .map_err(|e| match e {
        StoreError::ConditionFailed => ApiError::unavailable(&"the action kept changing"),
        e => ApiError::from(e),
    })?;
    match posted {
        Posted::Unknown => Err(unknown()),
        Posted::NotClaimed(a) => {
            let status = status_name(&a);
            Err(ApiError::conflict(
                format!("Action non prise en charge sous ce claim_id (état : {status})."),
                format!("Action not claimed under this claim_id (status: {status})."),
            ))
        }
        Posted::Completed { action, replayed } => {
            let recorded = Recorded {
                event_id: loop_::event_id(&action.action_id),
                action,
            };
            let mut res = Envelope::new(recorded, Meta::new()).into_response();
            if replayed {
                res.headers_mut()
                    .insert(IDEMPOTENT_REPLAYED, HeaderValue::from_static("true"));
            }
            Ok(res)
        }
    }
}

fn status_name(a: &Action) -> String {
    serde_json::to_value(a.status)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}
