//! Shared-file handlers (spec 4.13): thin, over the series and rollup primitives.

use std::collections::{BTreeMap, HashMap, HashSet};

use axum::extract::State;
use chrono::{Duration, DurationRound};
use netops_shared::paging::{SeriesSpec, series_page};
use netops_shared::store::{Filter, Pred};
use netops_shared::{ApiError, ApiResult, AppState, Caller, Envelope, Meta, Page, Query, Window};
use serde_json::json;

use crate::model::*;

const TOP: usize = 10;

/// Events, distinct users and events per action of one folder.
type FolderTally = (f64, HashSet<String>, BTreeMap<String, f64>);

/// Accès aux fichiers partagés
///
/// Qui a lu, créé, modifié, supprimé ou renommé quoi, les plus récents d'abord, paginés par
/// curseur (100 par défaut, 1000 au plus). `user` et `path` sont des recherches partielles
/// (`path` cherche aussi dans le nouveau chemin d'un fichier renommé), `type` l'action
/// exacte. Fenêtre de 31 jours au plus (`meta.window_capped`), 24 h par défaut.
#[utoipa::path(get, path = "/files/events", operation_id = "list_file_events", tag = "files",
    params(EventsQuery),
    responses((status = 200, description = "Une page d'accès", body = Envelope<Vec<FileEvent>>)))]
pub async fn list_events(
    State(state): State<AppState>,
    caller: Caller,
    page: Page,
    window: Window,
    Query(q): Query<EventsQuery>,
) -> ApiResult<Vec<FileEvent>> {
    let filter = Filter::all()
        .and_some(q.user.clone(), |u| Pred::Contains(vec!["user"], u))
        .and_some(q.path.clone(), |p| {
            Pred::Contains(vec!["path", "new_path"], p)
        })
        .and_some(q.action, |a| Pred::Eq("type", json!(a.as_str())));
    let spec = SeriesSpec {
        series: EVENTS,
        partition: None,
        filter: &filter,
    };
    let (records, meta) = series_page(&state, &caller, &page, &window, spec, &q).await?;
    let data = records
        .into_iter()
        .map(|r| serde_json::from_value(r.body).map_err(|e| ApiError::internal(&e)))
        .collect::<Result<_, _>>()?;
    Ok(Envelope::new(data, meta))
}

/// Synthèse des accès aux fichiers
///
/// Volumes par action (nombre d'accès et octets), les 10 utilisateurs et les 10 dossiers
/// les plus actifs sur la fenêtre, lus dans les agrégats horaires. Fenêtre W, 24 h par
/// défaut.
#[utoipa::path(get, path = "/files/summary", operation_id = "get_file_summary", tag = "files",
    responses((status = 200, description = "La synthèse", body = Envelope<FileSummary>)))]
pub async fn get_summary(
    State(state): State<AppState>,
    caller: Caller,
    window: Window,
) -> ApiResult<FileSummary> {
    let from = window
        .from
        .duration_trunc(Duration::hours(1))
        .unwrap_or(window.from);
    let rows = state
        .rollups
        .rows(
            &caller.tenant,
            ACTIVITY,
            from.timestamp_millis(),
            window.to_ms(),
            &Filter::all(),
        )
        .await?;
    let mut total = Volume::default();
    let mut by_action: BTreeMap<String, Volume> = FileAction::ALL
        .iter()
        .map(|a| (a.as_str().to_owned(), Volume::default()))
        .collect();
    let mut users: HashMap<String, (f64, BTreeMap<String, f64>)> = HashMap::new();
    let mut folders: HashMap<String, FolderTally> = HashMap::new();
    for r in rows {
        let n = r.measures.get("events").copied().unwrap_or(0.0);
        let bytes = r.measures.get("bytes").copied().unwrap_or(0.0);
        let action = r.dims["action"].as_str().unwrap_or("read").to_owned();
        let user = r.dims["user"].as_str().unwrap_or_default().to_owned();
        let folder = r.dims["folder"].as_str().unwrap_or_default().to_owned();
        total.events += n;
        total.bytes += bytes;
        let v = by_action.entry(action.clone()).or_default();
        v.events += n;
        v.bytes += bytes;
        let u = users.entry(user.clone()).or_default();
        u.0 += n;
        *u.1.entry(action.clone()).or_insert(0.0) += n;
        let f = folders.entry(folder).or_default();
        f.0 += n;
        f.1.insert(user);
        *f.2.entry(action).or_insert(0.0) += n;
    }
    let mut top_users: Vec<ActiveUser> = users
        .into_iter()
        .map(|(user, (events, by_action))| ActiveUser {
            user,
            events,
            by_action,
        })
        .collect();
    top_users.sort_by(|a, b| {
        b.events
            .total_cmp(&a.events)
            .then_with(|| a.user.cmp(&b.user))
    });
    top_users.truncate(TOP);
    let mut top_folders: Vec<ActiveFolder> = folders
        .into_iter()
        .map(|(folder, (events, users, by_action))| ActiveFolder {
            folder,
            events,
            users: users.len() as u32,
            by_action,
        })
        .collect();
    top_folders.sort_by(|a, b| {
        b.events
            .total_cmp(&a.events)
            .then_with(|| a.folder.cmp(&b.folder))
    });
    top_folders.truncate(TOP);
    Ok(Envelope::new(
        FileSummary {
            total,
            by_action,
            top_users,
            top_folders,
        },
        Meta::new().window(&window),
    ))
}
