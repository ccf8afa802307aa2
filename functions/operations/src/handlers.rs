//! Operations handlers (docs/modules.md#operations): thin, over the document primitives; states
//! that depend on the clock (maintenance active now, heartbeat late) are evaluated at request
//! time.

use std::collections::{HashMap, HashSet};

use axum::extract::State;
use chrono::{DateTime, Duration, Utc};
use futures_util::stream::{self, StreamExt, TryStreamExt};
use netops_shared::error::ErrorBody;
use netops_shared::lookup::Lookup;
use netops_shared::lookup::{MACHINES, decode};
use netops_shared::route;
use netops_shared::store::{Documents, Filter, Pred};
use netops_shared::{ApiError, ApiResult, AppState, Caller, Envelope, Meta, Path, Query, ok};
use serde_json::Value;

use crate::compare::compare;
use crate::model::*;

/// What a maintenance window's probes are checked against: the machines among them that
/// exist, and how many machines the tenant has (the fleet's count, kept with its roster).
struct Fleet {
    known: HashSet<String>,
    machines: usize,
}

/// The fleet as the maintenance windows `docs` need it: their probes read by key, not the
/// whole roster.
async fn fleet_of(
    state: &AppState,
    tenant: &str,
    docs: &[MaintenanceDoc],
) -> Result<Fleet, ApiError> {
    let mut probes: Vec<String> = docs.iter().flat_map(|d| d.probes.iter().cloned()).collect();
    probes.sort();
    probes.dedup();
    let (known, machines) = tokio::try_join!(
        async {
            let docs = state
                .stores
                .docs
                .get_many(tenant, MACHINES, &probes)
                .await?;
            Ok::<_, ApiError>(docs)
        },
        state.stores.docs.machine_count(tenant),
    )?;
    Ok(Fleet {
        known: known.into_iter().map(|d| d.key).collect(),
        machines,
    })
}

fn window(doc: MaintenanceDoc, fleet: &Fleet, now: DateTime<Utc>) -> MaintenanceWindow {
    let mut listed: Vec<&String> = doc.probes.iter().collect();
    listed.sort();
    listed.dedup();
    let known = listed.iter().filter(|p| fleet.known.contains(**p)).count();
    let covers = if doc.probes.is_empty() || (known > 0 && known == fleet.machines) {
        Coverage::All
    } else if known == 0 {
        Coverage::None
    } else {
        Coverage::Some
    };
    let active_now = doc.starts_at <= now && now < doc.ends_at;
    let state = if active_now {
        WindowState::Active
    } else if now < doc.starts_at {
        WindowState::Planned
    } else {
        WindowState::Ended
    };
    MaintenanceWindow {
        id: doc.id,
        title: doc.title,
        description: doc.description,
        starts_at: doc.starts_at,
        ends_at: doc.ends_at,
        probes: doc.probes,
        covers,
        active_now,
        state,
        created_by: doc.created_by,
    }
}

/// Fenêtres de maintenance
///
/// Les fenêtres de maintenance du compte, de la plus récente à la plus ancienne (début, puis
/// id). `probes` liste les sondes couvertes (noms d'hôte) ; une liste vide couvre tout le
/// compte. `covers` : `all` (liste vide ou toutes les sondes du compte), `some`, `none`
/// (aucune sonde listée n'existe plus). `active_now` est évalué à l'heure de la requête.
/// Filtre `active` : 1 = seulement les fenêtres actives maintenant, 0 = les autres.
#[route(list_maintenance_windows,
    params(MaintenanceQuery),
    responses((status = 200, description = "Les fenêtres de maintenance", body = Envelope<Vec<MaintenanceWindow>>)))]
pub async fn list_maintenance_windows(
    State(state): State<AppState>,
    caller: Caller,
    Query(q): Query<MaintenanceQuery>,
) -> ApiResult<Vec<MaintenanceWindow>> {
    let active = match q.active.as_deref() {
        None => None,
        Some("1") => Some(true),
        Some("0") => Some(false),
        Some(_) => {
            return Err(ApiError::invalid_parameter(
                "active",
                "valeurs admises : 0, 1",
                "allowed values: 0, 1",
            ));
        }
    };
    let now = Utc::now();
    let everything = Filter::all();
    let docs = state
        .stores
        .docs
        .all_as::<MaintenanceDoc>(&caller.tenant, MAINTENANCE, &everything)
        .await?;
    let fleet = fleet_of(&state, &caller.tenant, &docs).await?;
    let mut items: Vec<MaintenanceWindow> = docs
        .into_iter()
        .map(|d| window(d, &fleet, now))
        .filter(|w| active.is_none_or(|a| w.active_now == a))
        .collect();
    items.sort_by(|a, b| b.starts_at.cmp(&a.starts_at).then_with(|| b.id.cmp(&a.id)));
    ok(items)
}

fn heartbeat(doc: HeartbeatDoc, now: DateTime<Utc>) -> Heartbeat {
    let next = doc
        .last_signal_at
        .map(|t| t + Duration::seconds(doc.period_s));
    let state = match (doc.last_signal_at, doc.exit_code) {
        (None, _) => HeartbeatState::Pending,
        (Some(_), _) if next.is_some_and(|n| now > n + Duration::seconds(doc.grace_s)) => {
            HeartbeatState::Late
        }
        (Some(_), Some(code)) if code != 0 => HeartbeatState::Failed,
        _ => HeartbeatState::Ok,
    };
    Heartbeat {
        id: doc.id,
        name: doc.name,
        hostname: doc.hostname,
        period_s: doc.period_s,
        grace_s: doc.grace_s,
        last_signal_at: doc.last_signal_at,
        exit_code: doc.exit_code,
        last_duration_s: doc.last_duration_s,
        next_expected_at: next,
        state,
    }
}

/// Heartbeats
///
/// Les tâches planifiées qui signalent chacune de leurs exécutions, triées par id : dernier
/// signal, code de sortie, durée, prochain signal attendu et état évalué à l'heure de la
/// requête — `pending` (jamais reçu), `late` (rien reçu dans la période plus la tolérance),
/// `failed` (dernier code de sortie non nul), `ok`.
#[route(list_heartbeats,
    responses((status = 200, description = "Les heartbeats", body = Envelope<Vec<Heartbeat>>)))]
pub async fn list_heartbeats(
    State(state): State<AppState>,
    caller: Caller,
) -> ApiResult<Vec<Heartbeat>> {
    let now = Utc::now();
    let docs: Vec<HeartbeatDoc> = state
        .stores
        .docs
        .all_as(&caller.tenant, HEARTBEATS, &Filter::all())
        .await?;
    ok(docs.into_iter().map(|d| heartbeat(d, now)).collect())
}

/// The deployments a profile shows in the list, and in its detail (which the deployments'
/// comparison route then takes one by one). They are read as the ranked collection holds
/// them, first keys first, so what either answer costs does not grow with the fleet.
const LIST_DEPLOYMENTS: usize = 10;
const DETAIL_DEPLOYMENTS: usize = 50;

/// The first `cap` deployments of a profile (problem states first, then by machine name), and
/// whether it has more: a read of `cap + 1` keys of its ranked collection.
async fn first_deployments(
    docs: &dyn Documents,
    tenant: &str,
    profile_id: i64,
    cap: usize,
) -> Result<(Vec<Deployment>, bool), ApiError> {
    let mut read = docs
        .list(
            tenant,
            &ranked_collection(profile_id),
            &Filter::all().and(Pred::Ne(MOVED, serde_json::json!(true))),
            None,
            cap + 1,
        )
        .await?;
    let more = read.len() > cap;
    read.truncate(cap);
    let shown = read
        .into_iter()
        .map(|d| decode(d.body))
        .collect::<Result<_, _>>()?;
    Ok((shown, more))
}

/// [`first_deployments`] of each of `profiles`, in their order: read together, a few at a
/// time, so that a tenant of many profiles neither waits for each in turn nor sends them all
/// at once.
async fn first_deployments_of(
    state: &AppState,
    tenant: &str,
    profiles: &[i64],
    cap: usize,
) -> Result<Vec<(Vec<Deployment>, bool)>, ApiError> {
    const IN_FLIGHT: usize = 8;
    let docs = state.stores.docs.as_ref();
    stream::iter(profiles.iter().copied())
        .map(|id| first_deployments(docs, tenant, id, cap))
        .buffered(IN_FLIGHT)
        .try_collect()
        .await
}

/// The `meta` of an answer showing deployments: whether some profile's were cut.
fn deployments_meta(cut: bool) -> Meta {
    let meta = Meta::new();
    if cut {
        meta.with("deployments_truncated", true)
    } else {
        meta
    }
}

/// Profils de configuration
///
/// Les profils du compte (format profile/1), triés par id, chacun avec son nombre d'éléments,
/// le résultat de sa dernière vérification, le compte exact de ses déploiements par état
/// (`deployment_counts` : `total`, `failed`, `drifted`, `unverified`, `outdated`,
/// `compliant`) et ses 10 premiers déploiements (machine, version déployée, état) : les
/// problèmes d'abord (`failed`, `drifted`, `unverified`, `outdated`, puis `compliant`), puis
/// par nom de machine. `meta.deployments_truncated` vaut `true` quand un profil a plus de
/// déploiements que sa liste n'en montre (`deployment_counts.total` les compte tous). Le
/// document complet d'un profil et ses 50 premiers déploiements s'obtiennent par
/// `GET /profiles/{id}`.
#[route(list_profiles,
    responses((status = 200, description = "Les profils, le compte de leurs déploiements par état et les premiers d'entre eux", body = Envelope<Vec<ProfileSummary>>)))]
pub async fn list_profiles(
    State(state): State<AppState>,
    caller: Caller,
) -> ApiResult<Vec<ProfileSummary>> {
    let everything = Filter::all();
    let (profiles, counts) = tokio::try_join!(
        state
            .stores
            .docs
            .all_as::<ProfileDoc>(&caller.tenant, PROFILES, &everything),
        async {
            let all = state
                .stores
                .docs
                .read_all(&caller.tenant, DEPLOYMENT_COUNTS, &everything)
                .await?;
            Ok::<_, ApiError>(all.items)
        },
    )?;
    let mut counts: HashMap<String, Value> = counts.into_iter().map(|d| (d.key, d.body)).collect();
    let ids: Vec<i64> = profiles.iter().map(|p| p.id).collect();
    let shown = first_deployments_of(&state, &caller.tenant, &ids, LIST_DEPLOYMENTS).await?;
    let cut = shown.iter().any(|(_, more)| *more);
    let items = profiles
        .into_iter()
        .zip(shown)
        .map(|(p, (deployments, _))| {
            Ok(ProfileSummary {
                deployment_counts: counts
                    .remove(&num_key(p.id))
                    .map(decode)
                    .transpose()?
                    .unwrap_or_default(),
                deployments,
                item_count: p.items.len(),
                verification: p.verification.result,
                id: p.id,
                format: p.format,
                name: p.name,
                description: p.description,
                os: p.os,
                version: p.version,
                updated_at: p.updated_at,
            })
        })
        .collect::<Result<_, ApiError>>()?;
    Ok(Envelope::new(items, deployments_meta(cut)))
}

async fn find_profile(state: &AppState, tenant: &str, id: i64) -> Result<ProfileDoc, ApiError> {
    state
        .stores
        .docs
        .get_or_404(tenant, PROFILES, &num_key(id), || {
            ApiError::not_found(format!("Profil {id}"), format!("Profile {id}"))
        })
        .await
}

/// Détail d'un profil
///
/// Le document complet du profil, au format profile/1 : éléments attendus (type, cible,
/// valeurs attendues, version d'ajout) et trace de vérification étape par étape, suivi du
/// compte exact de ses déploiements par état (`deployment_counts`) et de ses 50 premiers
/// déploiements : les problèmes d'abord (`failed`, `drifted`, `unverified`, `outdated`, puis
/// `compliant`), puis par nom de machine. `meta.deployments_truncated` vaut `true` quand il
/// en a plus. 404 si le profil est inconnu dans ce compte.
#[route(get_profile,
    params(("id" = i64, Path, description = "Id du profil")),
    responses(
        (status = 200, description = "Le profil, le compte de ses déploiements par état et les premiers d'entre eux", body = Envelope<ProfileDetail>),
        (status = 404, description = "Profil inconnu dans ce compte", body = ErrorBody),
    ))]
pub async fn get_profile(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<i64>,
) -> ApiResult<ProfileDetail> {
    // The three reads go together: the counts and the deployments of a profile that does
    // not exist are none, and the answer is then the profile's 404.
    let key = num_key(id);
    let (profile, counts, (deployments, cut)) = tokio::try_join!(
        find_profile(&state, &caller.tenant, id),
        state
            .stores
            .docs
            .get_as::<DeploymentCounts>(&caller.tenant, DEPLOYMENT_COUNTS, &key),
        first_deployments(
            state.stores.docs.as_ref(),
            &caller.tenant,
            id,
            DETAIL_DEPLOYMENTS
        ),
    )?;
    let detail = ProfileDetail {
        profile,
        deployment_counts: counts.unwrap_or_default(),
        deployments,
    };
    Ok(Envelope::new(detail, deployments_meta(cut)))
}

/// Comparer un déploiement à son profil
///
/// Compare, élément par élément, le profil actuel avec l'état relevé par l'agent sur la
/// machine du déploiement : `conforme` ; `modifie` (avec `field`, `expected`, `actual` du
/// premier champ qui diffère, et `differences` pour tous) ; `absent` (l'élément manque sur la
/// machine) ; `non_deploye` (ajouté au profil après la version déployée) ; `indetermine`
/// (pas de relevé, ou le relevé a échoué : `detail` dit pourquoi). 404 si le déploiement est
/// inconnu dans ce compte.
#[route(compare_profile_deployment,
    params(("id" = i64, Path, description = "Id du déploiement")),
    responses(
        (status = 200, description = "La comparaison", body = Envelope<Comparison>),
        (status = 404, description = "Déploiement inconnu dans ce compte", body = ErrorBody),
    ))]
pub async fn compare_profile_deployment(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<i64>,
) -> ApiResult<Comparison> {
    let d: DeploymentDoc = state
        .stores
        .docs
        .get_or_404(&caller.tenant, DEPLOYMENTS, &num_key(id), || {
            ApiError::not_found(format!("Déploiement {id}"), format!("Deployment {id}"))
        })
        .await?;
    let profile = find_profile(&state, &caller.tenant, d.profile_id).await?;
    let (items, summary) = compare(&profile, &d);
    ok(Comparison {
        deployment_id: d.id,
        profile_id: profile.id,
        profile_name: profile.name,
        profile_version: profile.version,
        deployed_version: d.profile_version,
        hostname: d.hostname,
        observed_at: d.observed_at,
        summary,
        items,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> DateTime<Utc> {
        s.parse().unwrap_or_default()
    }

    #[test]
    fn heartbeat_states_follow_signal_delay_and_exit_code() {
        let now = at("2026-11-22T12:00:00Z");
        let hb = |last: Option<&str>, code: Option<i32>| HeartbeatDoc {
            id: 1,
            name: "job".into(),
            hostname: "h".into(),
            period_s: 3600,
            grace_s: 600,
            last_signal_at: last.map(at),
            exit_code: code,
            last_duration_s: None,
        };
        assert_eq!(
            heartbeat(hb(None, None), now).state,
            HeartbeatState::Pending
        );
        assert_eq!(
            heartbeat(hb(Some("2026-11-22T11:30:00Z"), Some(0)), now).state,
            HeartbeatState::Ok
        );
        assert_eq!(
            heartbeat(hb(Some("2026-11-22T11:30:00Z"), Some(3)), now).state,
            HeartbeatState::Failed
        );
        assert_eq!(
            heartbeat(hb(Some("2026-11-22T10:55:00Z"), Some(0)), now).state,
            HeartbeatState::Ok,
            "within grace"
        );
        assert_eq!(
            heartbeat(hb(Some("2026-11-22T10:40:00Z"), Some(0)), now).state,
            HeartbeatState::Late
        );
    }

    #[test]
    fn maintenance_covers_all_some_or_none_of_the_probes() {
        let now = at("2026-11-22T12:00:00Z");
        // Two machines, A and B; a listed probe not among them is gone.
        let probes = Fleet {
            known: ["A", "B"].iter().map(|s| s.to_string()).collect(),
            machines: 2,
        };
        let w = |list: &[&str]| MaintenanceDoc {
            id: 1,
            title: "t".into(),
            description: String::new(),
            starts_at: at("2026-11-22T11:00:00Z"),
            ends_at: at("2026-11-22T12:00:00Z"),
            probes: list.iter().map(|s| s.to_string()).collect(),
            created_by: "x".into(),
        };
        assert_eq!(window(w(&[]), &probes, now).covers, Coverage::All);
        assert_eq!(window(w(&["A", "B"]), &probes, now).covers, Coverage::All);
        assert_eq!(
            window(w(&["A", "A", "GONE"]), &probes, now).covers,
            Coverage::Some,
            "a probe listed twice counts once"
        );
        assert_eq!(
            window(w(&["A", "GONE"]), &probes, now).covers,
            Coverage::Some
        );
        assert_eq!(window(w(&["GONE"]), &probes, now).covers, Coverage::None);
        let ended = window(w(&[]), &probes, now);
        assert!(!ended.active_now, "ends_at is exclusive");
        assert_eq!(ended.state, WindowState::Ended);
    }
}
