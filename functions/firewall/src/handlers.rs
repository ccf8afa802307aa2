//! Firewall handlers (docs/modules.md#firewall): thin, over the document, series and rollup
//! ports.

use std::collections::{HashMap, HashSet};

use axum::extract::State;
use chrono::{DateTime, Duration, Utc};
use netops_shared::lookup::Lookup;
use netops_shared::lookup::decode;
use netops_shared::paging::{SeriesSpec, series_list};
use netops_shared::route;
use netops_shared::store::daily::Span;
use netops_shared::store::{Filter, Pred, SeriesQuery};
use netops_shared::{
    ApiError, ApiResult, AppState, Caller, Envelope, Meta, Page, Query, Window, ok,
};
use serde::Deserialize;
use serde_json::json;

use crate::model::*;
use crate::parse::{Action, Category};
use crate::{report, traffic};

async fn check_device(state: &AppState, caller: &Caller, id: i64) -> Result<(), ApiError> {
    state
        .stores
        .docs
        .get_or_404::<FirewallDevice>(&caller.tenant, DEVICES, &key(id), || {
            ApiError::not_found(format!("Pare-feu {id}"), format!("Firewall device {id}"))
        })
        .await
        .map(|_| ())
}

/// Pare-feu et passerelles
///
/// Les pare-feu et passerelles dont le syslog et les flux IPFIX / NetFlow v9 sont relayés par
/// un agent du site, avec l'état de chaque collecte (`active`, `stale` : rien reçu depuis
/// 15 minutes, `inactive`) et le format des journaux lus.
#[route(list_firewall_devices,
    responses((status = 200, description = "Les équipements", body = Envelope<Vec<FirewallDevice>>)))]
pub async fn list_devices(
    State(state): State<AppState>,
    caller: Caller,
) -> ApiResult<Vec<FirewallDevice>> {
    ok(state
        .stores
        .docs
        .all_as(&caller.tenant, DEVICES, &Filter::all())
        .await?)
}

/// Événements de pare-feu
///
/// Événements lus dans les journaux des équipements (FortiGate, PAN-OS, CEF, LEEF,
/// clé=valeur), les plus récents d'abord : catégorie, action, compte, adresses, service et
/// `ad_events`, les événements des contrôleurs de domaine sur le même compte à 15 secondes
/// près. `user` est une recherche partielle sur le compte, `ip` une adresse exacte, source
/// ou destination. Fenêtre de 7 jours au plus (`meta.window_capped`), 24 h par défaut ;
/// 100 événements par défaut, 1000 au plus. 404 si `device_id` est inconnu.
#[route(list_firewall_events,
    params(EventsQuery),
    responses(
        (status = 200, description = "Les événements", body = Envelope<Vec<FirewallEvent>>),
        (status = 404, description = "Équipement inconnu dans ce compte", body = netops_shared::error::ErrorBody),
    ))]
pub async fn list_events(
    State(state): State<AppState>,
    caller: Caller,
    page: Page,
    window: Window,
    Query(q): Query<EventsQuery>,
) -> ApiResult<Vec<FirewallEvent>> {
    let ip = match &q.ip {
        Some(raw) => Some(raw.trim().parse::<std::net::IpAddr>().map_err(|_| {
            ApiError::invalid_parameter(
                "ip",
                "adresse IP exacte attendue",
                "an exact IP address is expected",
            )
        })?),
        None => None,
    };
    if let Some(id) = q.device_id {
        check_device(&state, &caller, id).await?;
    }
    // Rare categories and actions are read from their index series, so a filter on them
    // does not walk the bulk of allowed and denied traffic.
    let bulk_category = q
        .category
        .is_none_or(|c| matches!(c, Category::Allow | Category::Deny));
    let bulk_action = q
        .action
        .is_none_or(|a| matches!(a, Action::Allowed | Action::Blocked));
    let use_rare = !bulk_category || (q.category.is_none() && !bulk_action);
    let mut filter = Filter::all()
        .and_some(q.action, |a| Pred::Eq("action", json!(a.as_str())))
        .and_some(q.user.clone(), |u| Pred::Contains(vec!["account"], u))
        .and_some(ip, |ip| Pred::Has("ips", json!(ip.to_string())));
    let (series, partition) = if use_rare {
        filter = filter.and_some(q.device_id, |d| Pred::Eq("device_id", json!(d)));
        (EVENTS_RARE, q.category.map(|c| c.as_str().to_owned()))
    } else {
        filter = filter.and_some(q.category, |c| Pred::Eq("category", json!(c.as_str())));
        (EVENTS, q.device_id.map(|d| d.to_string()))
    };
    let spec = SeriesSpec {
        series,
        partition: partition.as_deref(),
        filter: &filter,
    };
    let (records, meta) = series_list(&state, &caller, &page, &window, spec).await?;
    let data = records
        .into_iter()
        .map(|r| decode::<StoredEvent>(r.body).map(|s| s.event))
        .collect::<Result<_, _>>()?;
    Ok(Envelope::new(data, meta))
}

/// Trafic des passerelles
///
/// Flux IPFIX et NetFlow v9 exportés par les pare-feu et passerelles, agrégés par heure
/// pleine : totaux, volume par protocole d'export, premiers émetteurs et premières
/// destinations (par octets, `limit` de chaque : 20 par défaut, 200 au plus) et série heure
/// par heure, sur les heures pleines qui recouvrent la fenêtre, lus dans des agrégats du
/// compte (ou de l'équipement `device_id`) par jour. Fenêtre de 31 jours au plus, 24 h par
/// défaut.
#[route(get_firewall_traffic,
    params(TrafficQuery),
    responses(
        (status = 200, description = "Le trafic", body = Envelope<Traffic>),
        (status = 404, description = "Équipement inconnu dans ce compte", body = netops_shared::error::ErrorBody),
    ))]
pub async fn get_traffic(
    State(state): State<AppState>,
    caller: Caller,
    page: Page,
    window: Window,
    Query(q): Query<TrafficQuery>,
) -> ApiResult<Traffic> {
    if let Some(id) = q.device_id {
        check_device(&state, &caller, id).await?;
    }
    let span = Span::covering(window.from_ms(), window.to_ms());
    let data = traffic::read(
        state.stores.rollups.as_ref(),
        &caller.tenant,
        span,
        q.device_id,
        page.limit as usize,
    )
    .await?;
    Ok(Envelope::new(
        data,
        Meta::new().limit(page.limit).window(&window),
    ))
}

/// The time bounds of the threat rows of the days that overlap `[from, to)`: a row covers its
/// whole day.
fn threat_days(from: DateTime<Utc>, to: DateTime<Utc>) -> (i64, i64) {
    (
        (from - Duration::days(1)).timestamp_millis() + 1,
        to.timestamp_millis(),
    )
}

/// Menaces
///
/// Une ligne par équipement interne, adresse externe et jour, les jours récents d'abord :
/// sources d'observation (`gateway`, `firewall`, `agent`), indicateur, identification de
/// l'équipement (`agent`, `dhcp_lease`, `ip_only`), état (`open` ou `acknowledged`) et
/// incident SIEM. Fenêtre W, 30 jours par défaut ; 100 lignes par défaut, 500 au plus.
#[route(list_firewall_threats,
    params(ThreatsQuery),
    responses((status = 200, description = "Les menaces", body = Envelope<Vec<Threat>>)))]
pub async fn list_threats(
    State(state): State<AppState>,
    caller: Caller,
    page: Page,
    window: Window,
    Query(q): Query<ThreatsQuery>,
) -> ApiResult<Vec<Threat>> {
    let filter = Filter::all().and_some(q.status, |s| Pred::Eq("status", json!(s.as_str())));
    let (first, end) = threat_days(window.from, window.to);
    let result = state
        .stores
        .series
        .scan_bounded(&SeriesQuery {
            tenant: &caller.tenant,
            series: THREATS,
            partition: None,
            from: first,
            to: end,
            filter: &filter,
            after: None,
            limit: page.limit as usize,
        })
        .await?;
    let data = result
        .records
        .into_iter()
        .map(|r| decode(r.body))
        .collect::<Result<_, _>>()?;
    let (data, meta) = page.limited(data, result.next.is_some());
    Ok(Envelope::new(data, meta.window(&window)))
}

const REPORT_TOP: usize = 20;

/// The longest account name looked up in the directory (bytes): a directory's names are far
/// shorter, and a store key holds at most 1 KB.
const MAX_ACCOUNT_LEN: usize = 512;

/// Rapport de sécurité périmétrique
///
/// Synthèse sur `period` (`24h`, `7d` par défaut, `30d` ou `90d` ; toute autre valeur donne
/// 400) : compteurs par catégorie et action, comptes visés par des échecs de connexion,
/// adresses attaquantes, connexions réussies depuis l'extérieur, menaces, trafic bloqué,
/// tunnels, état de la collecte et incidents SIEM. Lu dans les agrégats du compte par jour.
#[route(get_firewall_report,
    params(ReportQuery),
    responses((status = 200, description = "Le rapport", body = Envelope<Report>)))]
pub async fn get_report(
    State(state): State<AppState>,
    caller: Caller,
    Query(q): Query<ReportQuery>,
) -> ApiResult<Report> {
    let period = q.period.unwrap_or_default();
    let to = Utc::now();
    let from = to - Duration::seconds(period.seconds());
    let tenant = caller.tenant.as_str();
    let docs = &state.stores.docs;
    let all = Filter::all();
    let span = Span::covering(from.timestamp_millis(), to.timestamp_millis());
    let (first, end) = threat_days(from, to);
    let (tallies, devices, network_tunnels, threats) = tokio::try_join!(
        report::read(state.stores.rollups.as_ref(), tenant, span, REPORT_TOP),
        docs.read_all(tenant, DEVICES, &all),
        docs.read_all(tenant, netops_domain::network::TUNNELS, &all),
        state
            .stores
            .series
            .read_all(tenant, THREATS, None, first, end, &all),
    )?;
    let threats: Vec<Threat> = threats
        .items
        .into_iter()
        .map(|r| decode(r.body))
        .collect::<Result<_, _>>()?;
    let report::Tallies {
        mut summary,
        per_device,
        targeted,
        attacking: attacking_addresses,
        connections: successful_connections,
        blocked: blocked_traffic,
        tunnels: counted_tunnels,
    } = tallies;
    summary.open_threats = threats
        .iter()
        .filter(|t| t.status == ThreatStatus::Open)
        .count() as u32;

    // The accounts of the directory among the targeted ones, in one read. A name too long
    // for a store key comes from a log line, not from the directory.
    let names: Vec<String> = targeted
        .iter()
        .map(|(a, _)| a.clone())
        .filter(|a| !a.is_empty() && a.len() <= MAX_ACCOUNT_LEN)
        .collect();
    let known: HashSet<String> = docs
        .get_many(tenant, DIRECTORY_ACCOUNTS, &names)
        .await?
        .into_iter()
        .map(|d| d.key)
        .collect();
    let targeted_accounts = targeted
        .into_iter()
        .map(|(account, t)| TargetedAccount {
            known: known.contains(&account),
            account,
            failures: t.failures,
            successes: t.successes,
            sources: t.sources.len() as u32,
        })
        .collect();

    let status_now: HashMap<&str, LinkStatus> = network_tunnels
        .items
        .iter()
        .filter_map(|d| {
            let status = LinkStatus::deserialize(&d.body["status"]).ok()?;
            Some((d.body["name"].as_str()?, status))
        })
        .collect();
    let mut tunnels = counted_tunnels;
    for name in status_now.keys() {
        tunnels.entry((*name).to_owned()).or_default();
    }
    let tunnels = tunnels
        .into_iter()
        .map(|(name, (ups, downs))| TunnelReport {
            status: status_now.get(name.as_str()).copied(),
            name,
            ups,
            downs,
        })
        .collect();

    let collection = devices
        .items
        .into_iter()
        .map(|d| decode::<FirewallDevice>(d.body))
        .collect::<Result<Vec<_>, _>>()?
        .into_iter()
        .map(|d| CollectionState {
            device_id: d.id,
            events: per_device.get(&d.id).copied().unwrap_or(0.0),
            device: d.name,
            syslog: d.syslog,
            flows: d.flows,
        })
        .collect();

    let mut incidents: Vec<SiemRef> = Vec::new();
    for t in &threats {
        if let Some(s) = &t.siem_incident
            && !incidents.iter().any(|i| i.id == s.id)
        {
            incidents.push(s.clone());
        }
    }
    let mut top_threats = threats;
    top_threats.sort_by(|a, b| b.hits.cmp(&a.hits).then_with(|| b.day.cmp(&a.day)));
    top_threats.truncate(REPORT_TOP);

    ok(Report {
        period,
        from,
        to,
        summary,
        targeted_accounts,
        attacking_addresses,
        successful_connections,
        threats: top_threats,
        blocked_traffic,
        tunnels,
        collection,
        incidents,
    })
}
