//! Flows handlers: thin, over the series and rollup primitives (docs/modules.md#flows).

use std::collections::HashMap;

use axum::extract::State;
use chrono::{DateTime, Utc};
use netops_shared::lookup::Lookup;
use netops_shared::paging::{SeriesSpec, series_list, series_page};
use netops_shared::route;
use netops_shared::store::daily::{DAY_MS, HOUR_MS, Span, floor_to, packed};
use netops_shared::store::{Filter, Pred, Record, Rollup};
use netops_shared::{ApiError, ApiResult, AppState, Caller, Envelope, Meta, Page, Query, Window};
use serde_json::{Value, json};

use crate::explore::{self, Source};
use crate::model::*;
use crate::talkers;
use crate::tiers::{self, PARTS, part_keys};

fn time(ts: i64) -> DateTime<Utc> {
    DateTime::from_timestamp_millis(ts).unwrap_or_default()
}

fn flow(r: Record) -> Result<FlowRecord, ApiError> {
    let s: StoredFlow = serde_json::from_value(r.body).map_err(|e| ApiError::internal(&e))?;
    Ok(FlowRecord {
        id: r.id,
        time: time(r.ts),
        machine: r.partition,
        process: s.p,
        user: s.u,
        local_ip: s.li,
        local_port: s.lp,
        remote_ip: s.ri,
        remote_port: s.rp,
        remote_host: s.rh,
        protocol: s.t,
        direction: s.d,
        bytes: s.b,
        listening: s.l,
        country: s.c,
        operator: s.o,
    })
}

/// The tenant's collection settings (which sources exist).
async fn sources(state: &AppState, tenant: &str) -> Result<Value, ApiError> {
    Ok(state
        .stores
        .docs
        .get(tenant, SOURCES, "config")
        .await?
        .map(|d| d.body)
        .unwrap_or_else(|| json!({"agent": true})))
}

/// Whether the day-totals series exist (big tenants).
async fn totals_tier(state: &AppState, tenant: &str) -> Result<bool, ApiError> {
    Ok(sources(state, tenant).await?.get("totals_tier") == Some(&json!(true)))
}

fn measure(r: &Rollup, name: &str) -> f64 {
    r.measures.get(name).copied().unwrap_or(0.0)
}

/// Flux détaillés
///
/// Connexions observées par les agents, de la plus récente à la plus ancienne, paginées
/// par curseur (100 par défaut, 500 au plus). La fenêtre est de 7 jours au plus : une
/// fenêtre plus longue est ramenée aux 7 derniers jours et `meta.window_capped` vaut
/// `true` (spec 4.4 règle 1). Par défaut, les 24 dernières heures. Les sockets en écoute
/// sont masqués sauf avec `include_listening=1`. `remote_ip` accepte un préfixe,
/// `process` une partie du nom, `destination` est cherché dans l'adresse et le nom
/// d'hôte distants (sans tenir compte de la casse). Une machine inconnue donne une liste
/// vide.
#[route(list_flows,
    params(FlowsQuery),
    responses((status = 200, description = "Une page de flux", body = Envelope<Vec<FlowRecord>>)))]
pub async fn list_flows(
    State(state): State<AppState>,
    caller: Caller,
    page: Page,
    window: Window,
    Query(q): Query<FlowsQuery>,
) -> ApiResult<Vec<FlowRecord>> {
    let show_listening = match q.include_listening {
        None | Some(0) => false,
        Some(1) => true,
        Some(_) => {
            return Err(ApiError::invalid_parameter(
                "include_listening",
                "seule la valeur 1 est admise",
                "only the value 1 is allowed",
            ));
        }
    };
    let mut filter = Filter::all()
        .and_some(q.protocol, |p| Pred::Eq("t", json!(p)))
        .and_some(q.direction, |d| Pred::Eq("d", json!(d)))
        .and_some(q.remote_ip.clone(), |ip| Pred::Prefix("ri", ip))
        .and_some(q.remote_port, |p| Pred::Eq("rp", json!(p)))
        .and_some(q.process.clone(), |p| Pred::Contains(vec!["p"], p))
        .and_some(q.destination.clone(), |d| {
            Pred::Contains(vec!["ri", "rh"], d)
        });
    if !show_listening {
        filter = filter.and(Pred::Ne("l", json!(true)));
    }
    let spec = SeriesSpec {
        series: RECORDS,
        partition: q.machine.as_deref(),
        filter: &filter,
    };
    let (records, meta) = series_page(&state, &caller, &page, &window, spec, &q).await?;
    let data = records.into_iter().map(flow).collect::<Result<_, _>>()?;
    Ok(Envelope::new(data, meta))
}

/// The remote host name of a destination row, when it has one other than its address.
fn host_of(dims: &Value, host_key: &str, ip: &str) -> Option<String> {
    dims.get(host_key)
        .and_then(Value::as_str)
        .filter(|h| *h != ip)
        .map(str::to_owned)
}

#[derive(Default)]
struct DestAcc {
    host: Option<String>,
    country: String,
    operator: String,
    bytes: f64,
    flows: f64,
    agent: bool,
    gateway: bool,
}

/// Destinations
///
/// Destinations distantes classées par volume décroissant, lues dans les agrégats
/// horaires (fenêtre de 31 jours au plus, 24 h par défaut ; 100 par défaut, 500 au plus).
/// `source=agent` (défaut) : flux vus par les agents ; `source=gateway` : flux vus par les
/// passerelles (IPFIX), y compris les appareils sans agent ; `source=all` : les deux, le
/// trafic des machines équipées d'un agent n'étant compté qu'une fois, avec `seen_by`
/// (spec 4.4 règle 2). `machine` restreint à une machine (liste vide si elle est inconnue).
#[route(list_flow_destinations,
    params(DestinationsQuery),
    responses((status = 200, description = "Destinations par volume décroissant", body = Envelope<Vec<Destination>>)))]
pub async fn list_destinations(
    State(state): State<AppState>,
    caller: Caller,
    page: Page,
    window: Window,
    Query(q): Query<DestinationsQuery>,
) -> ApiResult<Vec<Destination>> {
    let source = q.source.unwrap_or_default();
    let (from, to) = (window.from_ms(), window.to_ms());
    let rollups = state.stores.rollups.as_ref();
    let tenant = &caller.tenant;
    let fast = totals_tier(&state, tenant).await?;
    let mut acc: HashMap<String, DestAcc> = HashMap::new();
    let mut add = |r: &Rollup, host_key: &str, counted: bool, agent: bool, gateway: bool| {
        // Most rows add to a destination already seen: no copies for those.
        let ip = r.dims.get("ip").and_then(Value::as_str).unwrap_or("");
        if !acc.contains_key(ip) {
            let text = |k: &str| {
                r.dims
                    .get(k)
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_owned()
            };
            let first = DestAcc {
                country: text("c"),
                operator: text("o"),
                ..DestAcc::default()
            };
            acc.insert(ip.to_owned(), first);
        }
        let Some(a) = acc.get_mut(ip) else {
            return;
        };
        if a.host.is_none() {
            a.host = host_of(&r.dims, host_key, ip);
        }
        if counted {
            a.bytes += measure(r, BYTES);
            a.flows += measure(r, FLOWS);
        }
        a.agent |= agent;
        a.gateway |= gateway;
    };
    match &q.machine {
        Some(host) => {
            // A machine's rows come from its agent; `vg` marks what a gateway saw too.
            let series = machine_destinations(host);
            for r in tiers::read(rollups, tenant, &series, from, to, &Filter::all(), false).await? {
                let vg = r.dims.get("vg") == Some(&json!(true));
                match source {
                    DestSource::Agent => add(&r, "e", true, true, false),
                    DestSource::Gateway if vg => add(&r, "e", true, false, true),
                    DestSource::Gateway => {}
                    DestSource::All => add(&r, "e", true, true, vg),
                }
            }
        }
        None => {
            // The two sources are read at the same time.
            let read = |series: &'static str, wanted: bool| async move {
                if !wanted {
                    return Ok(Vec::new());
                }
                tiers::read(rollups, tenant, series, from, to, &Filter::all(), fast).await
            };
            let (agent, gateway) = tokio::try_join!(
                read(DEST_AGENT, source != DestSource::Gateway),
                read(DEST_GATEWAY, source != DestSource::Agent),
            )?;
            for r in &agent {
                add(r, "h", true, true, false);
            }
            for r in &gateway {
                // Under `all`, gateway rows of agent machines are already counted by the agents.
                let counted =
                    source == DestSource::Gateway || r.dims.get("a") == Some(&json!(false));
                add(r, "h", counted, false, true);
            }
        }
    }
    let mut data: Vec<Destination> = acc
        .into_iter()
        .filter(|(_, a)| a.bytes > 0.0 || a.flows > 0.0)
        .map(|(ip, a)| Destination {
            remote_ip: ip,
            remote_host: a.host,
            country: a.country,
            operator: a.operator,
            bytes: a.bytes as u64,
            flows: a.flows as u64,
            seen_by: (source == DestSource::All).then(|| {
                let mut s = Vec::new();
                if a.agent {
                    s.push("agent".to_owned());
                }
                if a.gateway {
                    s.push("gateway".to_owned());
                }
                s
            }),
        })
        .collect();
    data.sort_by(|a, b| {
        b.bytes
            .cmp(&a.bytes)
            .then_with(|| a.remote_ip.cmp(&b.remote_ip))
    });
    let source_name = match source {
        DestSource::Agent => "agent",
        DestSource::Gateway => "gateway",
        DestSource::All => "all",
    };
    let (data, meta) = page.limited(data, false);
    Ok(Envelope::new(
        data,
        meta.window(&window).with("source", source_name),
    ))
}

/// Synthèse des flux
///
/// Totaux, répartition par protocole et par sens, et série heure par heure (au plus 744
/// points ; les heures sans trafic valent zéro), lus dans les agrégats horaires des
/// agents ; fenêtre de 31 jours au plus, 24 h par défaut (spec 4.4 règle 3). Chaque point
/// est une heure qui commence dans la fenêtre. `machine` restreint à une machine (totaux
/// nuls si elle est inconnue).
#[route(get_flow_summary,
    params(SummaryQuery),
    responses((status = 200, description = "Synthèse", body = Envelope<Summary>)))]
pub async fn get_summary(
    State(state): State<AppState>,
    caller: Caller,
    window: Window,
    Query(q): Query<SummaryQuery>,
) -> ApiResult<Summary> {
    let Span { a, b, .. } = Span::starting(window.from_ms(), window.to_ms());
    let series = match &q.machine {
        Some(host) => machine_sum(host),
        None => SUM.to_owned(),
    };
    let rows = state
        .stores
        .rollups
        .rows(
            &caller.tenant,
            &packed(&series),
            floor_to(a, DAY_MS),
            b,
            &Filter::all(),
        )
        .await?;
    let mut points: Vec<HourPoint> = (0..)
        .map(|i| a + i * HOUR_MS)
        .take_while(|t| *t < b)
        .map(|t| HourPoint {
            time: time(t),
            bytes: 0,
            flows: 0,
        })
        .collect();
    let names: Vec<(String, String)> = PARTS.iter().map(|(p, d)| part_keys(*p, *d)).collect();
    let mut parts = [Volume::default(); 4];
    for r in &rows {
        for (name, t, v) in tiers::hours(r) {
            if t < a || t >= b {
                continue;
            }
            let Some(i) = names.iter().position(|(kb, kf)| kb == name || kf == name) else {
                continue;
            };
            let point = &mut points[((t - a) / HOUR_MS) as usize];
            if names[i].0 == name {
                parts[i].bytes += v as u64;
                point.bytes += v as u64;
            } else {
                parts[i].flows += v as u64;
                point.flows += v as u64;
            }
        }
    }
    let sum = |idx: &[usize]| Volume {
        bytes: idx.iter().map(|i| parts[*i].bytes).sum(),
        flows: idx.iter().map(|i| parts[*i].flows).sum(),
    };
    let protocols = [(Protocol::Tcp, sum(&[0, 1])), (Protocol::Udp, sum(&[2, 3]))];
    let directions = [
        (Direction::Inbound, sum(&[0, 2])),
        (Direction::Outbound, sum(&[1, 3])),
    ];
    let totals = sum(&[0, 1, 2, 3]);
    let series = points;
    let data = Summary {
        machine: q.machine,
        totals,
        by_protocol: protocols
            .into_iter()
            .map(|(protocol, v)| ProtocolVolume {
                protocol,
                bytes: v.bytes,
                flows: v.flows,
            })
            .collect(),
        by_direction: directions
            .into_iter()
            .map(|(direction, v)| DirectionVolume {
                direction,
                bytes: v.bytes,
                flows: v.flows,
            })
            .collect(),
        series,
    };
    Ok(Envelope::new(data, Meta::new().window(&window)))
}

/// Machines les plus actives
///
/// Machines classées par volume total (octets émis et reçus) décroissant, puis par nom, lues
/// dans les agrégats horaires des agents ; chaque heure qui commence dans la fenêtre compte ;
/// fenêtre de 31 jours au plus, 24 h par défaut ; 50 par défaut, 200 au plus (spec 4.4
/// règle 4).
#[route(list_flow_talkers,
    responses((status = 200, description = "Machines par volume décroissant", body = Envelope<Vec<Talker>>)))]
pub async fn list_talkers(
    State(state): State<AppState>,
    caller: Caller,
    page: Page,
    window: Window,
) -> ApiResult<Vec<Talker>> {
    let span = Span::starting(window.from_ms(), window.to_ms());
    let (data, more) = talkers::top(
        state.stores.rollups.as_ref(),
        &caller.tenant,
        span,
        page.limit as usize,
    )
    .await?;
    let (data, meta) = page.limited(data, more);
    Ok(Envelope::new(data, meta.window(&window)))
}

/// Connexions sortantes en échec
///
/// Connexions sortantes qui ont échoué, vues par les agents, de la plus récente à la plus
/// ancienne (24 h par défaut ; 100 par défaut, 1000 au plus). La collecte est active
/// depuis le 2026-09-27 ; une tentative abandonnée par l'application avant le délai TCP du
/// système (environ 21 s) n'est pas enregistrée (spec 4.4 règle 5). `type` : refused,
/// timeout, blocked (pare-feu local), host_unreachable, network_unreachable, reset,
/// aborted. `machine` : nom d'hôte exact, 404 s'il est inconnu.
#[route(list_blocked_flows,
    params(BlockedQuery),
    responses(
        (status = 200, description = "Connexions en échec", body = Envelope<Vec<BlockedFlow>>),
        (status = 404, description = "Machine inconnue dans ce compte", body = netops_shared::error::ErrorBody),
    ))]
pub async fn list_blocked(
    State(state): State<AppState>,
    caller: Caller,
    page: Page,
    window: Window,
    Query(q): Query<BlockedQuery>,
) -> ApiResult<Vec<BlockedFlow>> {
    if let Some(host) = &q.machine {
        state.stores.docs.machine(&caller.tenant, host).await?;
    }
    let filter = Filter::all().and_some(q.kind, |k| Pred::Eq("type", json!(k)));
    let spec = SeriesSpec {
        series: BLOCKED,
        partition: q.machine.as_deref(),
        filter: &filter,
    };
    let (records, meta) = series_list(&state, &caller, &page, &window, spec).await?;
    let data = records
        .into_iter()
        .map(|r| {
            let mut body = r.body;
            if let Some(obj) = body.as_object_mut() {
                obj.insert("id".into(), json!(r.id));
                obj.insert("time".into(), json!(time(r.ts)));
                obj.insert("machine".into(), json!(r.partition));
            }
            serde_json::from_value(body).map_err(|e| ApiError::internal(&e))
        })
        .collect::<Result<_, _>>()?;
    Ok(Envelope::new(data, meta))
}

/// Exploration des flux
///
/// Analyse multidimensionnelle des agrégats : `dims` (1 à 3 parmi interne, externe, pays,
/// operateur, port, service, proto, sens, source, passerelle, site, interface, processus,
/// utilisateur ; avec `source=firewall` : action, regle, categorie, la mesure étant alors
/// le nombre de connexions), `source` (all par défaut, agent, gateway, firewall ; sous
/// `all` le trafic des machines équipées d'un agent n'est compté qu'une fois), `period`
/// (1h, 6h, 24h par défaut, 7d, 30d ; pas d'une heure jusqu'à 24h, d'un jour UTC pour 7d et
/// 30d, la fenêtre commençant au début du premier pas), `metric` (bytes par défaut, flows),
/// `filter` (`<dimension> <opérateur> <valeur>` reliés par `et`, opérateurs `=` et `!=`,
/// valeurs avec espaces entre guillemets ; une erreur indique la position et le jeton
/// fautifs), `limit` (valeurs gardées par dimension, 3 à 20, 10 par défaut ; le reste est
/// regroupé dans `autres`). La réponse contient une série empilée par la première
/// dimension, les liens entre dimensions consécutives (diagramme de Sankey) et le top N
/// des combinaisons. `meta.attribution` cite les sources des pays et opérateurs, comme leur
/// licence CC BY 4.0 l'exige : pays de DB-IP (IP to Country Lite), opérateurs (noms des
/// systèmes autonomes) de RouteViews, du NRO et de DB-IP (IP to ASN Lite), réunis par
/// ip-location-db ; une page qui affiche ces valeurs doit citer cette attribution et un lien
/// vers https://db-ip.com.
/// 404 quand la source demandée n'est pas collectée dans ce compte.
#[route(explore_flows,
    params(ExploreQuery),
    responses(
        (status = 200, description = "Exploration", body = Envelope<Exploration>),
        (status = 404, description = "Source non collectée dans ce compte", body = netops_shared::error::ErrorBody),
    ))]
pub async fn explore_flows(
    State(state): State<AppState>,
    caller: Caller,
    Query(q): Query<ExploreQuery>,
) -> ApiResult<Exploration> {
    let plan = explore::plan(&q, Utc::now())?;
    let collected = sources(&state, &caller.tenant).await?;
    let key = match plan.source {
        Source::Gateway => Some((
            "gateway",
            "Données des passerelles (IPFIX)",
            "Gateway (IPFIX) data",
        )),
        Source::Firewall => Some(("firewall", "Journaux du pare-feu", "Firewall logs")),
        _ => None,
    };
    if let Some((k, fr, en)) = key
        && collected.get(k) != Some(&json!(true))
    {
        return Err(ApiError::not_found(
            format!("{fr} pour ce compte"),
            format!("{en} for this account"),
        ));
    }
    let fast = collected.get("totals_tier") == Some(&json!(true));
    let data = plan
        .explore(state.stores.rollups.as_ref(), &caller.tenant, fast)
        .await?;
    let window = Window {
        from: time(plan.from),
        to: time(plan.to),
        capped: false,
    };
    Ok(Envelope::new(
        data,
        Meta::new().window(&window).with(
            "attribution",
            json!({"text": GEO_ATTRIBUTION, "licence": "CC BY 4.0", "url": "https://db-ip.com"}),
        ),
    ))
}
