//! Shared-file handlers (docs/modules.md#files): thin, over the series and rollup primitives.

use axum::extract::State;
use netops_shared::paging::{SeriesSpec, series_page};
use netops_shared::route;
use netops_shared::store::daily::Span;
use netops_shared::store::{Filter, Pred};
use netops_shared::{ApiError, ApiResult, AppState, Caller, Envelope, Meta, Page, Query, Window};
use serde_json::json;

use crate::activity;
use crate::model::*;

/// Accès aux fichiers partagés
///
/// Qui a lu, créé, modifié, supprimé ou renommé quoi, les plus récents d'abord, paginés par
/// curseur (100 par défaut, 1000 au plus). `user` et `path` sont des recherches partielles
/// (`path` cherche aussi dans le nouveau chemin d'un fichier renommé), `type` l'action
/// exacte. Fenêtre de 31 jours au plus (`meta.window_capped`), 24 h par défaut.
#[route(list_file_events,
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
/// les plus actifs avec leurs actions, et pour chaque dossier le nombre d'utilisateurs
/// distincts, sur les heures pleines qui recouvrent la fenêtre, lus dans des agrégats du
/// compte par jour (heure par heure pour les jours entamés aux bords de la fenêtre).
/// Fenêtre W, 24 h par défaut, jusqu'à la durée de conservation.
#[route(get_file_summary,
    responses((status = 200, description = "La synthèse", body = Envelope<FileSummary>)))]
pub async fn get_summary(
    State(state): State<AppState>,
    caller: Caller,
    window: Window,
) -> ApiResult<FileSummary> {
    let span = Span::covering(window.from_ms(), window.to_ms());
    let data = activity::summary(state.stores.rollups.as_ref(), &caller.tenant, span).await?;
    Ok(Envelope::new(data, Meta::new().window(&window)))
}
