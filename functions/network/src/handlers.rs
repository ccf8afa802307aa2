//! Network infrastructure handlers (docs/modules.md#network-infrastructure): thin, over the
//! document and series primitives.

use axum::extract::State;
use netops_shared::lookup::Lookup;
use netops_shared::lookup::{decode, decode_text};
use netops_shared::paging::docs_page;
use netops_shared::route;
use netops_shared::store::{Filter, Pred, SeriesQuery};
use netops_shared::{
    ApiError, ApiResult, AppState, Caller, Envelope, Meta, Page, Path, Query, Window, ok,
};
use serde_json::json;

use crate::model::*;

/// Most records a list without paging returns (alerts); the newest are kept.
const LIST_CAP: usize = 1000;
/// At most this many metric points (`get_network_device_metrics` in the OpenAPI description).
const MAX_POINTS: i64 = 500;

/// Sites
///
/// Les sites du compte, avec leur nombre d'équipements réseau et de machines. `q` cherche
/// dans le nom ou la ville (partiel, sans casse).
#[route(list_sites,
    params(SitesQuery),
    responses((status = 200, description = "Les sites", body = Envelope<Vec<Site>>)))]
pub async fn list_sites(
    State(state): State<AppState>,
    caller: Caller,
    Query(q): Query<SitesQuery>,
) -> ApiResult<Vec<Site>> {
    let filter = Filter::all().and_some(q.q, |t| Pred::Contains(vec!["name", "city"], t));
    ok(state
        .stores
        .docs
        .all_as(&caller.tenant, SITES, &filter)
        .await?)
}

/// Équipements réseau
///
/// Pare-feu, routeurs, commutateurs et bornes Wi-Fi, triés par identifiant, paginés par
/// curseur (100 par défaut, 500 au plus). `q` cherche dans le nom, l'adresse IP ou le
/// modèle (partiel, sans casse).
#[route(list_network_devices,
    params(DevicesQuery),
    responses((status = 200, description = "Une page d'équipements", body = Envelope<Vec<Device>>)))]
pub async fn list_devices(
    State(state): State<AppState>,
    caller: Caller,
    page: Page,
    Query(q): Query<DevicesQuery>,
) -> ApiResult<Vec<Device>> {
    let filter = Filter::all()
        .and_some(q.site_id, |s| Pred::Eq("site_id", json!(s)))
        .and_some(q.device_type, |t| Pred::Eq("type", json!(t.as_str())))
        .and_some(q.status, |s| Pred::Eq("status", json!(s.as_str())))
        .and_some(q.q.clone(), |t| {
            Pred::Contains(vec!["name", "ip", "model"], t)
        });
    let (data, meta) = docs_page(&state, &caller, &page, DEVICES, &filter, &q).await?;
    Ok(Envelope::new(data, meta))
}

async fn device(state: &AppState, caller: &Caller, id: i64) -> Result<DeviceDetail, ApiError> {
    state
        .stores
        .docs
        .get_or_404(&caller.tenant, DEVICES, &key(id), || {
            ApiError::not_found(format!("Équipement {id}"), format!("Device {id}"))
        })
        .await
}

/// Détail d'un équipement
///
/// L'équipement avec ses liens WAN et ses interfaces ; 404 s'il est inconnu dans ce compte.
#[route(get_network_device,
    params(("id" = i64, Path, description = "Identifiant de l'équipement")),
    responses(
        (status = 200, description = "L'équipement", body = Envelope<DeviceDetail>),
        (status = 404, description = "Équipement inconnu dans ce compte", body = netops_shared::error::ErrorBody),
    ))]
pub async fn get_device(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<i64>,
) -> ApiResult<DeviceDetail> {
    ok(device(&state, &caller, id).await?)
}

/// Métriques d'un équipement
///
/// CPU, mémoire, débits entrant et sortant, latence et erreurs, relevés chaque heure ; au
/// plus 500 points : sur une longue fenêtre, les heures sont regroupées (moyennes) et
/// `step_seconds` donne la durée couverte par chaque point. Fenêtre W, 24 h par défaut.
#[route(get_network_device_metrics,
    params(("id" = i64, Path, description = "Identifiant de l'équipement")),
    responses(
        (status = 200, description = "Les métriques", body = Envelope<DeviceMetrics>),
        (status = 404, description = "Équipement inconnu dans ce compte", body = netops_shared::error::ErrorBody),
    ))]
pub async fn get_device_metrics(
    State(state): State<AppState>,
    caller: Caller,
    window: Window,
    Path(id): Path<i64>,
) -> ApiResult<DeviceMetrics> {
    device(&state, &caller, id).await?;
    let partition = id.to_string();
    let hours = ((window.to_ms() - window.from_ms()) + 3_599_999) / 3_600_000;
    let step_hours = ((hours + MAX_POINTS - 1) / MAX_POINTS).max(1);
    let step_ms = step_hours * 3_600_000;
    let page = state
        .stores
        .series
        .scan(&SeriesQuery {
            tenant: &caller.tenant,
            series: METRICS,
            partition: Some(&partition),
            from: window.from_ms(),
            to: window.to_ms(),
            filter: &Filter::all(),
            after: None,
            limit: (hours as usize).saturating_add(1).min(1_000_000),
        })
        .await?;
    // Oldest first, averaged per bucket of `step_hours`.
    let mut buckets: Vec<(i64, [f64; 6], f64)> = Vec::new();
    for r in page.records.iter().rev() {
        let p: MetricPoint = decode(r.body.clone())?;
        let b = window.from_ms() + (r.ts - window.from_ms()) / step_ms * step_ms;
        let vals = [
            p.cpu_pct,
            p.memory_pct,
            p.in_bps,
            p.out_bps,
            p.latency_ms,
            p.errors,
        ];
        match buckets.last_mut() {
            Some((start, sum, n)) if *start == b => {
                for (s, v) in sum.iter_mut().zip(vals) {
                    *s += v;
                }
                *n += 1.0;
            }
            _ => buckets.push((b, vals, 1.0)),
        }
    }
    let round = |v: f64| (v * 10.0).round() / 10.0;
    let points = buckets
        .into_iter()
        .map(|(start, s, n)| MetricPoint {
            at: chrono::DateTime::from_timestamp_millis(start).unwrap_or(window.from),
            cpu_pct: round(s[0] / n),
            memory_pct: round(s[1] / n),
            in_bps: (s[2] / n).round(),
            out_bps: (s[3] / n).round(),
            latency_ms: round(s[4] / n),
            errors: round(s[5] / n),
        })
        .collect();
    Ok(Envelope::new(
        DeviceMetrics {
            device_id: id,
            step_seconds: step_hours * 3600,
            points,
        },
        Meta::new().window(&window),
    ))
}

/// Tunnels VPN inter-sites
///
/// Les tunnels IPsec entre les sites, avec leur état ; `site_id` garde ceux dont l'une des
/// deux extrémités est sur ce site.
#[route(list_tunnels,
    params(TunnelsQuery),
    responses((status = 200, description = "Les tunnels", body = Envelope<Vec<Tunnel>>)))]
pub async fn list_tunnels(
    State(state): State<AppState>,
    caller: Caller,
    Query(q): Query<TunnelsQuery>,
) -> ApiResult<Vec<Tunnel>> {
    let filter = Filter::all().and_some(q.status, |s| Pred::Eq("status", json!(s.as_str())));
    let tunnels: Vec<Tunnel> = state
        .stores
        .docs
        .all_as(&caller.tenant, TUNNELS, &filter)
        .await?;
    ok(tunnels
        .into_iter()
        .filter(|t| {
            q.site_id
                .is_none_or(|s| t.local.site_id == s || t.remote.site_id == s)
        })
        .collect())
}

/// Alertes réseau
///
/// `status=open` : les alertes en cours maintenant, quelle que soit leur date d'ouverture ;
/// `status=all` (défaut) : les alertes ouvertes dans la fenêtre, résolues ou non. Les plus
/// récentes d'abord, 1000 au plus. Fenêtre W, 24 h par défaut.
#[route(list_network_alerts,
    params(AlertsQuery),
    responses((status = 200, description = "Les alertes", body = Envelope<Vec<NetworkAlert>>)))]
pub async fn list_alerts(
    State(state): State<AppState>,
    caller: Caller,
    window: Window,
    Query(q): Query<AlertsQuery>,
) -> ApiResult<Vec<NetworkAlert>> {
    let (records, more) = if q.status == Some(AlertStatus::Open) {
        state
            .stores
            .docs
            .open_alerts(&caller.tenant, ALERTS, LIST_CAP)
            .await?
    } else {
        let page = state
            .stores
            .series
            .scan(&SeriesQuery {
                tenant: &caller.tenant,
                series: ALERTS,
                partition: None,
                from: window.from_ms(),
                to: window.to_ms(),
                filter: &Filter::all(),
                after: None,
                limit: LIST_CAP,
            })
            .await?;
        let more = page.next.is_some();
        (page.records, more)
    };
    let data = records
        .into_iter()
        .map(|r| decode(r.body))
        .collect::<Result<_, _>>()?;
    Ok(Envelope::new(
        data,
        Meta::new().window(&window).truncated(more),
    ))
}

/// Ports
///
/// Les ports vus par les balayages de découverte sur les machines et les équipements, triés
/// par adresse puis port ; 200 par défaut, 1000 au plus.
#[route(list_network_ports,
    params(PortsQuery),
    responses((status = 200, description = "Les ports", body = Envelope<Vec<Port>>)))]
pub async fn list_ports(
    State(state): State<AppState>,
    caller: Caller,
    page: Page,
    Query(q): Query<PortsQuery>,
) -> ApiResult<Vec<Port>> {
    let filter = Filter::all()
        .and_some(q.ip, |ip| Pred::Eq("ip", json!(ip)))
        .and_some(q.port, |p| Pred::Eq("port", json!(p)))
        .and_some(q.state, |s| Pred::Eq("state", json!(s.as_str())));
    // One more than the page, to know whether the list was cut; a read stopped by its
    // budget (DynamoDB) is cut too.
    let (docs, stopped) = state
        .stores
        .docs
        .list_bounded(
            &caller.tenant,
            PORTS,
            &filter,
            None,
            page.limit as usize + 1,
        )
        .await?;
    let data = docs
        .iter()
        .map(|d| decode_text(&d.body))
        .collect::<Result<_, _>>()?;
    let (data, meta) = page.limited(data, stopped.is_some());
    Ok(Envelope::new(data, meta))
}
