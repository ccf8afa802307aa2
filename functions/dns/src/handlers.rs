//! DNS handlers (docs/modules.md#dns): thin, over the series, rollup and document primitives.

use axum::extract::State;
use netops_shared::lookup::Lookup;
use netops_shared::lookup::decode;
use netops_shared::paging::{SeriesSpec, series_list};
use netops_shared::route;
use netops_shared::store::daily::{DAY_MS, Span};
use netops_shared::store::{Filter, Pred, SeriesQuery};
use netops_shared::{ApiResult, AppState, Caller, Envelope, Meta, Page, Query, Window};
use serde_json::json;

use crate::domains;
use crate::model::*;

/// Most items a list without paging returns; the newest are kept and `meta.truncated` says
/// when more matched.
const LIST_CAP: usize = 500;

/// Résolutions DNS
///
/// Les résolutions faites par les machines, les plus récentes d'abord : domaine, type,
/// code de réponse, adresses obtenues, résolveur, processus. `machine` est un nom d'hôte
/// exact (404 s'il est inconnu), `domain` une recherche partielle. Fenêtre de 7 jours au
/// plus (`meta.window_capped`), 24 h par défaut ; 100 par défaut, 1000 au plus.
#[route(list_dns_resolutions,
    params(ResolutionsQuery),
    responses(
        (status = 200, description = "Les résolutions", body = Envelope<Vec<Resolution>>),
        (status = 404, description = "Machine inconnue dans ce compte", body = netops_shared::error::ErrorBody),
    ))]
pub async fn list_resolutions(
    State(state): State<AppState>,
    caller: Caller,
    page: Page,
    window: Window,
    Query(q): Query<ResolutionsQuery>,
) -> ApiResult<Vec<Resolution>> {
    if let Some(m) = &q.machine {
        state.stores.docs.machine(&caller.tenant, m).await?;
    }
    let filter = Filter::all().and_some(q.domain.clone(), |d| Pred::Contains(vec!["domain"], d));
    let spec = SeriesSpec {
        series: RESOLUTIONS,
        partition: q.machine.as_deref(),
        filter: &filter,
    };
    let (records, meta) = series_list(&state, &caller, &page, &window, spec).await?;
    let data = records
        .into_iter()
        .map(|r| decode(r.body))
        .collect::<Result<_, _>>()?;
    Ok(Envelope::new(data, meta))
}

/// Domaines les plus demandés
///
/// Les domaines classés par nombre de requêtes sur les heures pleines qui recouvrent la
/// fenêtre : nombre de machines distinctes, réponses NXDOMAIN, échecs et dernière heure avec
/// une requête, lus dans des agrégats par domaine et par jour (heure par heure pour les jours
/// entamés aux bords de la fenêtre). `machine` (nom d'hôte exact) restreint à une machine.
/// Fenêtre W, 24 h par défaut, jusqu'à la durée de conservation ; 50 domaines par défaut,
/// 500 au plus.
#[route(list_dns_top_domains,
    params(TopDomainsQuery),
    responses(
        (status = 200, description = "Les domaines", body = Envelope<Vec<TopDomain>>),
        (status = 404, description = "Machine inconnue dans ce compte", body = netops_shared::error::ErrorBody),
    ))]
pub async fn list_top_domains(
    State(state): State<AppState>,
    caller: Caller,
    page: Page,
    window: Window,
    Query(q): Query<TopDomainsQuery>,
) -> ApiResult<Vec<TopDomain>> {
    if let Some(m) = &q.machine {
        state.stores.docs.machine(&caller.tenant, m).await?;
    }
    let span = Span::covering(window.from_ms(), window.to_ms());
    let (data, more) = domains::top(
        &state.stores.rollups,
        &caller.tenant,
        span,
        q.machine.as_deref(),
        page.limit as usize,
    )
    .await?;
    let (data, meta) = page.limited(data, more);
    Ok(Envelope::new(data, meta.window(&window)))
}

/// Menaces DNS
///
/// Les machines qui ont résolu un domaine listé (logiciel malveillant, hameçonnage, C2,
/// DGA, minage, tunnel DNS, domaine récent), actives dans la fenêtre : vues pour la
/// dernière fois après son début et pour la première fois avant sa fin, les plus récentes
/// d'abord. Dérivées des résolutions : une menace est une machine, une règle et un jour UTC
/// (domaine listé, seuil 1 ; tunnel DNS, 10 résolutions de noms porteurs de données sous un
/// même domaine ; DGA, 5 NXDOMAIN pour des noms générés ; voir le schéma
/// `CollectDnsResolution`). `acknowledged=1` ne
/// garde que les menaces acquittées, `0` celles qui ne le sont pas. Fenêtre W, 24 h par
/// défaut ; les 500 plus récentes au plus.
#[route(list_dns_threats,
    params(ThreatsQuery),
    responses((status = 200, description = "Les menaces", body = Envelope<Vec<DnsThreat>>)))]
pub async fn list_threats(
    State(state): State<AppState>,
    caller: Caller,
    window: Window,
    Query(q): Query<ThreatsQuery>,
) -> ApiResult<Vec<DnsThreat>> {
    let filter = Filter::all().and_some(q.acknowledged, |f| {
        Pred::Eq("acknowledged", json!(f == Flag::Yes))
    });
    // A threat is stored at the start of its day (its sightings are within that day): those
    // stored since the day before the window's start, newest first, page after page until
    // one more than the list holds were seen in the window (a read that stops with its
    // answer, not at the start of time).
    let spec = SeriesSpec {
        series: THREATS,
        partition: None,
        filter: &filter,
    };
    let mut data: Vec<DnsThreat> = Vec::new();
    let mut after = None;
    loop {
        let query = spec.query(
            &caller.tenant,
            window.from_ms() - DAY_MS,
            i64::MAX,
            after.as_ref(),
            LIST_CAP + 1,
        );
        let page = state.stores.series.scan(&query).await?;
        for record in page.records {
            let threat: DnsThreat = decode(record.body)?;
            if threat.first_seen_at < window.to && threat.last_seen_at >= window.from {
                data.push(threat);
            }
        }
        match page.next {
            Some(next) if data.len() <= LIST_CAP => after = Some(next),
            _ => break,
        }
    }
    data.sort_by(|a, b| {
        b.last_seen_at
            .cmp(&a.last_seen_at)
            .then_with(|| b.id.cmp(&a.id))
    });
    let truncated = data.len() > LIST_CAP;
    data.truncate(LIST_CAP);
    Ok(Envelope::new(
        data,
        Meta::new().window(&window).truncated(truncated),
    ))
}

/// Requêtes des serveurs DNS
///
/// Les requêtes journalisées par les serveurs DNS du compte, les plus récentes d'abord (500
/// au plus, `meta.truncated` indique s'il y en avait davantage). Elles n'existent que si la
/// collecte sur les serveurs DNS est active : sinon la liste est vide et
/// `meta.server_collection` vaut `inactive` (`active` sinon, avec `meta.servers`).
/// `domain` est une recherche partielle, `suspicious=1` ne garde que les requêtes suspectes.
/// Fenêtre W, 24 h par défaut.
#[route(list_dns_server_queries,
    params(ServerQueriesQuery),
    responses((status = 200, description = "Les requêtes", body = Envelope<Vec<ServerQuery>>)))]
pub async fn list_server_queries(
    State(state): State<AppState>,
    caller: Caller,
    window: Window,
    Query(q): Query<ServerQueriesQuery>,
) -> ApiResult<Vec<ServerQuery>> {
    let collection = match state
        .stores
        .docs
        .get_as::<Collection>(&caller.tenant, COLLECTION, "servers")
        .await?
    {
        Some(c) => c,
        None => Collection {
            active: false,
            servers: Vec::new(),
            since: None,
        },
    };
    let meta = Meta::new().window(&window);
    if !collection.active {
        return Ok(Envelope::new(
            Vec::new(),
            meta.with("server_collection", "inactive").truncated(false),
        ));
    }
    let filter = Filter::all()
        .and_some(q.domain.clone(), |d| Pred::Contains(vec!["domain"], d))
        .and_some(q.suspicious.filter(|s| *s == Flag::Yes), |_| {
            Pred::Eq("suspicious", json!(true))
        });
    let result = state
        .stores
        .series
        .scan_bounded(&SeriesQuery {
            tenant: &caller.tenant,
            series: SERVER_QUERIES,
            partition: None,
            from: window.from_ms(),
            to: window.to_ms(),
            filter: &filter,
            after: None,
            limit: LIST_CAP,
        })
        .await?;
    let truncated = result.next.is_some();
    let data = result
        .records
        .into_iter()
        .map(|r| decode(r.body))
        .collect::<Result<_, _>>()?;
    Ok(Envelope::new(
        data,
        meta.with("server_collection", "active")
            .with("servers", json!(collection.servers))
            .truncated(truncated),
    ))
}
