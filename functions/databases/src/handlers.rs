//! Databases handlers (docs/modules.md#databases): thin, over the document, series and rollup
//! primitives.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use axum::extract::State;
use chrono::{DateTime, Duration, Utc};
use netops_shared::lookup::Lookup;
use netops_shared::lookup::decode;
use netops_shared::paging::{SeriesSpec, series_list};
use netops_shared::route;
use netops_shared::store::{Filter, Pred, Record, SeriesQuery};
use netops_shared::{
    ApiError, ApiResult, AppState, Caller, Envelope, Meta, Page, Path, Query, Window,
};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::model::*;

fn parse_all<T: DeserializeOwned>(records: Vec<Record>) -> Result<Vec<T>, ApiError> {
    records.into_iter().map(|r| decode(r.body)).collect()
}

/// The instance, or 404 in the caller's tenant.
async fn instance(state: &AppState, caller: &Caller, id: i64) -> Result<Instance, ApiError> {
    state
        .stores
        .docs
        .get_or_404(&caller.tenant, INSTANCES, &key(id), || {
            ApiError::not_found(format!("Instance {id}"), format!("Instance {id}"))
        })
        .await
}

/// Newest-first records of one partition (or all) in `[from, to)`, at most `limit`; the
/// flag tells whether more matched.
#[allow(clippy::too_many_arguments)]
async fn scan(
    state: &AppState,
    caller: &Caller,
    series: &str,
    partition: Option<&str>,
    from: i64,
    to: i64,
    filter: &Filter,
    limit: usize,
) -> Result<(Vec<Record>, bool), ApiError> {
    let page = state
        .stores
        .series
        .scan(&SeriesQuery {
            tenant: &caller.tenant,
            series,
            partition,
            from,
            to,
            filter,
            after: None,
            limit,
        })
        .await?;
    Ok((page.records, page.next.is_some()))
}

/// Instances de bases de données
///
/// Instances surveillées : moteur, version, édition, état (`online`, `degraded`, `offline`),
/// machine hôte. L'identifiant et le mot de passe de connexion enregistrés pour la collecte
/// ne sont jamais renvoyés.
#[route(list_database_instances,
    responses((status = 200, description = "Instances", body = Envelope<Vec<Instance>>)))]
pub async fn list_database_instances(
    State(state): State<AppState>,
    caller: Caller,
) -> ApiResult<Vec<Instance>> {
    let data = state
        .stores
        .docs
        .all_as(&caller.tenant, INSTANCES, &Filter::all())
        .await?;
    Ok(Envelope::new(data, Meta::new()))
}

/// Bucket sizes tried in order, in seconds: the first giving at most 500 points is used.
const BUCKETS: [i64; 10] = [
    300, 600, 900, 1800, 3600, 7200, 10_800, 21_600, 43_200, 86_400,
];

#[derive(Default)]
struct Acc {
    sums: [f64; 11],
    samples: f64,
}

fn r2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

/// Métriques d'une instance
///
/// CPU, mémoire, connexions, latences d'E/S, requêtes par seconde et attentes par catégorie
/// (ms d'attente par seconde), moyennées par intervalle. Au plus 500 points : l'intervalle
/// (`meta.resolution_seconds`) est le plus petit de 5 min, 10 min, 15 min, 30 min, 1 h, 2 h,
/// 3 h, 6 h, 12 h, 1 j qui tient dans cette limite ; les mesures de 5 min sont gardées 2
/// jours, au-delà les agrégats horaires servent (`meta.source`). Fenêtre W, 24 h par
/// défaut, 31 jours au plus (`meta.window_capped`). 404 si l'instance est inconnue.
#[route(get_database_metrics,
    params(("id" = i64, Path, description = "Identifiant de l'instance")),
    responses(
        (status = 200, description = "Série de points", body = Envelope<Vec<MetricPoint>>),
        (status = 404, description = "Instance inconnue dans ce compte", body = netops_shared::error::ErrorBody),
    ))]
pub async fn get_database_metrics(
    State(state): State<AppState>,
    caller: Caller,
    window: Window,
    Path(id): Path<i64>,
) -> ApiResult<Vec<MetricPoint>> {
    instance(&state, &caller, id).await?;
    let secs = (window.to - window.from).num_seconds().max(1);
    let mut bucket = BUCKETS
        .iter()
        .copied()
        .find(|b| (secs + b - 1) / b < MAX_POINTS)
        .unwrap_or(86_400);
    let raw = bucket < 3600 && window.from >= Utc::now() - Duration::days(RAW_DAYS);
    let mut acc: BTreeMap<i64, Acc> = BTreeMap::new();
    let bucket_ms = |b: i64| b * 1000;
    if raw {
        let records = state
            .stores
            .series
            .read_all(
                &caller.tenant,
                METRICS,
                Some(&id.to_string()),
                window.from_ms(),
                window.to_ms(),
                &Filter::all(),
            )
            .await?
            .items;
        for r in records {
            let a = acc
                .entry(r.ts - r.ts.rem_euclid(bucket_ms(bucket)))
                .or_default();
            for (i, m) in MEASURES.iter().enumerate() {
                a.sums[i] += r.body.get(*m).and_then(Value::as_f64).unwrap_or(0.0);
            }
            a.samples += 1.0;
        }
    } else {
        bucket = bucket.max(3600);
        let from_hour = window.from_ms() - window.from_ms().rem_euclid(3_600_000);
        let rows = state
            .stores
            .rollups
            .rows(
                &caller.tenant,
                &rollup_series(METRIC_ROLLUPS, id),
                from_hour,
                window.to_ms(),
                &Filter::all(),
            )
            .await?;
        for r in rows {
            let a = acc
                .entry(r.hour - r.hour.rem_euclid(bucket_ms(bucket)))
                .or_default();
            for (i, m) in MEASURES.iter().enumerate() {
                a.sums[i] += r.measures.get(*m).copied().unwrap_or(0.0);
            }
            a.samples += r.measures.get("samples").copied().unwrap_or(0.0);
        }
    }
    let points: Vec<MetricPoint> = acc
        .into_iter()
        .filter(|(_, a)| a.samples > 0.0)
        .map(|(ts, a)| {
            let avg = |i: usize| r2(a.sums[i] / a.samples);
            MetricPoint {
                ts: DateTime::from_timestamp_millis(ts).unwrap_or_default(),
                cpu_pct: avg(0),
                memory_pct: avg(1),
                connections: avg(2),
                read_latency_ms: avg(3),
                write_latency_ms: avg(4),
                batch_requests_per_s: avg(5),
                waits: Waits {
                    cpu: avg(6),
                    io: avg(7),
                    lock: avg(8),
                    network: avg(9),
                    other: avg(10),
                },
            }
        })
        .collect();
    let meta = Meta::new()
        .window(&window)
        .with("resolution_seconds", bucket)
        .with("source", if raw { "samples_5m" } else { "rollups_1h" })
        .with("points", points.len());
    Ok(Envelope::new(points, meta))
}

/// Requêtes lentes
///
/// Requêtes lentes de l'instance dans la fenêtre W (24 h par défaut), triées par durée
/// décroissante, sans plan d'exécution. `min_ms` garde celles d'au moins cette durée (ms).
/// 50 par défaut, 500 au plus ; `meta.total` compte toutes celles trouvées.
#[route(list_slow_queries,
    params(("id" = i64, Path, description = "Identifiant de l'instance"), SlowQueriesQuery),
    responses(
        (status = 200, description = "Requêtes lentes", body = Envelope<Vec<SlowQuery>>),
        (status = 404, description = "Instance inconnue dans ce compte", body = netops_shared::error::ErrorBody),
    ))]
pub async fn list_slow_queries(
    State(state): State<AppState>,
    caller: Caller,
    page: Page,
    window: Window,
    Path(id): Path<i64>,
    Query(q): Query<SlowQueriesQuery>,
) -> ApiResult<Vec<SlowQuery>> {
    if q.min_ms.is_some_and(|m| m < 0) {
        return Err(ApiError::invalid_parameter(
            "min_ms",
            "entier positif ou nul attendu",
            "expected a non-negative integer",
        ));
    }
    instance(&state, &caller, id).await?;
    let filter = Filter::all().and_some(q.min_ms, |m| Pred::Gte("duration_ms", m as f64));
    let (records, more) = scan(
        &state,
        &caller,
        SLOW_QUERIES,
        Some(&id.to_string()),
        window.from_ms(),
        window.to_ms(),
        &filter,
        20_000,
    )
    .await?;
    let mut queries: Vec<SlowQuery> = parse_all(records)?;
    queries.sort_by(|a, b| {
        b.duration_ms
            .cmp(&a.duration_ms)
            .then_with(|| b.id.cmp(&a.id))
    });
    let total = queries.len();
    let (queries, meta) = page.limited(queries, more);
    Ok(Envelope::new(
        queries,
        meta.window(&window).with("total", total),
    ))
}

/// Requêtes les plus coûteuses
///
/// Statistiques des requêtes cumulées sur la fenêtre W (24 h par défaut, 7 jours au plus)
/// à partir des instantanés du collecteur, classées par total de `by` : `cpu` (défaut),
/// `duration` ou `reads`. 20 par défaut, 200 au plus.
#[route(list_top_queries,
    params(("id" = i64, Path, description = "Identifiant de l'instance"), TopQueriesQuery),
    responses(
        (status = 200, description = "Requêtes classées", body = Envelope<Vec<TopQuery>>),
        (status = 404, description = "Instance inconnue dans ce compte", body = netops_shared::error::ErrorBody),
    ))]
pub async fn list_top_queries(
    State(state): State<AppState>,
    caller: Caller,
    page: Page,
    window: Window,
    Path(id): Path<i64>,
    Query(q): Query<TopQueriesQuery>,
) -> ApiResult<Vec<TopQuery>> {
    instance(&state, &caller, id).await?;
    let by = q.by.unwrap_or_default();
    let from_hour = window.from_ms() - window.from_ms().rem_euclid(3_600_000);
    let rows = state
        .stores
        .rollups
        .rows(
            &caller.tenant,
            &rollup_series(QUERY_STATS, id),
            from_hour,
            window.to_ms(),
            &Filter::all(),
        )
        .await?;
    let mut totals: HashMap<String, (Arc<Value>, [f64; 4])> = HashMap::new();
    for r in rows {
        let entry = totals
            .entry(r.key.clone())
            .or_insert_with(|| (r.dims.clone(), [0.0; 4]));
        for (i, m) in ["executions", "cpu_ms", "duration_ms", "logical_reads"]
            .iter()
            .enumerate()
        {
            entry.1[i] += r.measures.get(*m).copied().unwrap_or(0.0);
        }
    }
    let sort_index = match by {
        TopBy::Cpu => 1,
        TopBy::Duration => 2,
        TopBy::Reads => 3,
    };
    let mut ranked: Vec<(String, Arc<Value>, [f64; 4])> =
        totals.into_iter().map(|(k, (d, m))| (k, d, m)).collect();
    ranked.sort_by(|a, b| {
        b.2[sort_index]
            .total_cmp(&a.2[sort_index])
            .then_with(|| a.0.cmp(&b.0))
    });
    let more = ranked.len() > page.limit as usize;
    ranked.truncate(page.limit as usize);
    let s = |d: &Value, k: &str| {
        d.get(k)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    let data = ranked
        .into_iter()
        .enumerate()
        .map(|(i, (hash, dims, m))| {
            let per = |x: f64| if m[0] > 0.0 { r2(x / m[0]) } else { 0.0 };
            TopQuery {
                rank: i as u32 + 1,
                query_hash: hash,
                database: s(&dims, "database"),
                statement: s(&dims, "statement"),
                executions: m[0] as u64,
                total_cpu_ms: r2(m[1]),
                total_duration_ms: r2(m[2]),
                total_logical_reads: m[3],
                avg_cpu_ms: per(m[1]),
                avg_duration_ms: per(m[2]),
                avg_logical_reads: per(m[3]),
            }
        })
        .collect();
    let (data, meta) = page.limited(data, more);
    Ok(Envelope::new(
        data,
        meta.window(&window).with("by", json!(by)),
    ))
}

/// Sessions
///
/// Sessions ouvertes sur l'instance dans la fenêtre W (24 h par défaut), de la plus récente
/// à la plus ancienne ; `login` filtre le compte (partiel, sans casse). 100 par défaut, 500
/// au plus ; `meta.truncated` vaut `true` quand il y en a davantage.
#[route(list_database_sessions,
    params(("id" = i64, Path, description = "Identifiant de l'instance"), SessionsQuery),
    responses(
        (status = 200, description = "Sessions", body = Envelope<Vec<Session>>),
        (status = 404, description = "Instance inconnue dans ce compte", body = netops_shared::error::ErrorBody),
    ))]
pub async fn list_database_sessions(
    State(state): State<AppState>,
    caller: Caller,
    page: Page,
    window: Window,
    Path(id): Path<i64>,
    Query(q): Query<SessionsQuery>,
) -> ApiResult<Vec<Session>> {
    instance(&state, &caller, id).await?;
    let login = q
        .login
        .as_deref()
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned);
    let filter = Filter::all().and_some(login, |l| Pred::Contains(vec!["login"], l));
    let instance = id.to_string();
    let spec = SeriesSpec {
        series: SESSIONS,
        partition: Some(&instance),
        filter: &filter,
    };
    let (records, meta) = series_list(&state, &caller, &page, &window, spec).await?;
    Ok(Envelope::new(parse_all(records)?, meta))
}

/// Chaînes de blocage
///
/// Chaînes de blocage observées sur l'instance dans la fenêtre W (24 h par défaut) : la
/// session en tête, les sessions bloquées avec leur attente, la durée. Au plus 1000 ;
/// `meta.truncated` au-delà.
#[route(list_blocking_chains,
    params(("id" = i64, Path, description = "Identifiant de l'instance")),
    responses(
        (status = 200, description = "Chaînes de blocage", body = Envelope<Vec<BlockingChain>>),
        (status = 404, description = "Instance inconnue dans ce compte", body = netops_shared::error::ErrorBody),
    ))]
pub async fn list_blocking_chains(
    State(state): State<AppState>,
    caller: Caller,
    window: Window,
    Path(id): Path<i64>,
) -> ApiResult<Vec<BlockingChain>> {
    instance(&state, &caller, id).await?;
    let (records, more) = scan(
        &state,
        &caller,
        BLOCKING,
        Some(&id.to_string()),
        window.from_ms(),
        window.to_ms(),
        &Filter::all(),
        UNPAGED_MAX,
    )
    .await?;
    Ok(Envelope::new(
        parse_all(records)?,
        Meta::new().window(&window).truncated(more),
    ))
}

/// Alertes des bases de données
///
/// `status=open` : les alertes ouvertes maintenant, quelle que soit la fenêtre ;
/// `status=all` (défaut) : les alertes ouvertes dans la fenêtre W (24 h par défaut). Des
/// plus récentes aux plus anciennes, au plus 1000 (`meta.truncated` au-delà). `cpu_high`,
/// `memory_pressure` et `check_failed` sont dérivées des échantillons et des résultats de
/// contrôle collectés (voir les schémas `CollectDatabaseMetrics` et `CollectDatabaseCheck`) ;
/// l'état d'une instance (`degraded` tant qu'une alerte de ses échantillons est ouverte)
/// aussi.
#[route(list_database_alerts,
    params(AlertsQuery),
    responses((status = 200, description = "Alertes", body = Envelope<Vec<DbAlert>>)))]
pub async fn list_database_alerts(
    State(state): State<AppState>,
    caller: Caller,
    window: Window,
    Query(q): Query<AlertsQuery>,
) -> ApiResult<Vec<DbAlert>> {
    let status = q.status.unwrap_or_default();
    let (records, more) = match status {
        AlertStatus::Open => {
            state
                .stores
                .docs
                .open_alerts(&caller.tenant, ALERTS, UNPAGED_MAX)
                .await?
        }
        AlertStatus::All => {
            scan(
                &state,
                &caller,
                ALERTS,
                None,
                window.from_ms(),
                window.to_ms(),
                &Filter::all(),
                UNPAGED_MAX,
            )
            .await?
        }
    };
    let meta = Meta::new()
        .window(&window)
        .with("status", json!(status))
        .truncated(more);
    Ok(Envelope::new(parse_all(records)?, meta))
}

/// Contrôles métier
///
/// Requêtes métier en lecture seule exécutées périodiquement sur les bases, avec leur
/// dernier résultat (`ok`, `warning`, `failed` ou `error`).
#[route(list_database_checks,
    responses((status = 200, description = "Contrôles", body = Envelope<Vec<Check>>)))]
pub async fn list_database_checks(
    State(state): State<AppState>,
    caller: Caller,
) -> ApiResult<Vec<Check>> {
    let data = state
        .stores
        .docs
        .all_as(&caller.tenant, CHECKS, &Filter::all())
        .await?;
    Ok(Envelope::new(data, Meta::new()))
}

/// Résultats d'un contrôle
///
/// Les exécutions du contrôle dans la fenêtre W (24 h par défaut), de la plus récente à la
/// plus ancienne, au plus 1000 (`meta.truncated` au-delà). 404 si le contrôle est inconnu.
#[route(list_database_check_results,
    params(("id" = i64, Path, description = "Identifiant du contrôle")),
    responses(
        (status = 200, description = "Résultats", body = Envelope<Vec<CheckResult>>),
        (status = 404, description = "Contrôle inconnu dans ce compte", body = netops_shared::error::ErrorBody),
    ))]
pub async fn list_database_check_results(
    State(state): State<AppState>,
    caller: Caller,
    window: Window,
    Path(id): Path<i64>,
) -> ApiResult<Vec<CheckResult>> {
    state
        .stores
        .docs
        .get_or_404::<Check>(&caller.tenant, CHECKS, &key(id), || {
            ApiError::not_found(format!("Contrôle {id}"), format!("Check {id}"))
        })
        .await?;
    let (records, more) = scan(
        &state,
        &caller,
        CHECK_RESULTS,
        Some(&id.to_string()),
        window.from_ms(),
        window.to_ms(),
        &Filter::all(),
        UNPAGED_MAX,
    )
    .await?;
    Ok(Envelope::new(
        parse_all(records)?,
        Meta::new().window(&window).truncated(more),
    ))
}
