//! How the database collectors' observations are written (docs/collect.md#database-metrics):
//! metric samples and their hourly rollups, sessions, slow queries, query statistics and
//! their hourly rollups, blocking chains, and check results with their check's last result.
//! Every kind names an instance (a check result, a check) the tenant knows: the instances
//! and checks are the tenant's configuration, never created by what a collector sends.

use std::collections::{HashMap, HashSet};

use chrono::{DateTime, Utc};
use netops_shared::collect::{
    Batch, CollectKind, LineError, bad_measure, bad_text, content_id, schema_of,
};
use netops_shared::module::BoxFuture;
use netops_shared::store::{Doc, Expect, LineRefusal, Record, StoreError, StoreResult};
use netops_shared::{Msg, Scope};
use serde::Deserialize;
use serde_json::Value;
use utoipa::ToSchema;

use crate::derive::{
    CheckRef, CheckRun, HourSums, MetricRuns, QueryStats, Sample, add_sample, alert_record,
    apply_results, apply_samples, check_message, check_status, metric_rollups, query_rollup,
    sample_record,
};
use crate::model::*;

/// `POST /collect/database-metrics`.
pub const METRICS_KIND: CollectKind = CollectKind {
    name: "database-metrics",
    scope: Scope::CollectDatabases,
    text_field: None,
    schema: schema_of::<MetricsLine>,
    write: write_metrics,
    agents: false,
};

/// `POST /collect/database-session`.
pub const SESSION: CollectKind = CollectKind {
    name: "database-session",
    scope: Scope::CollectDatabases,
    text_field: None,
    schema: schema_of::<SessionLine>,
    write: write_sessions,
    agents: false,
};

/// `POST /collect/database-slow-query`.
pub const SLOW_QUERY: CollectKind = CollectKind {
    name: "database-slow-query",
    scope: Scope::CollectDatabases,
    text_field: None,
    schema: schema_of::<SlowQueryLine>,
    write: write_slow_queries,
    agents: false,
};

/// `POST /collect/database-query-stats`.
pub const QUERY_STATS_KIND: CollectKind = CollectKind {
    name: "database-query-stats",
    scope: Scope::CollectDatabases,
    text_field: None,
    schema: schema_of::<QueryStatsLine>,
    write: write_query_stats,
    agents: false,
};

/// `POST /collect/database-blocking`.
pub const BLOCKING_KIND: CollectKind = CollectKind {
    name: "database-blocking",
    scope: Scope::CollectDatabases,
    text_field: None,
    schema: schema_of::<BlockingLine>,
    write: write_blocking,
    agents: false,
};

/// `POST /collect/database-check`.
pub const CHECK: CollectKind = CollectKind {
    name: "database-check",
    scope: Scope::CollectDatabases,
    text_field: None,
    schema: schema_of::<CheckLine>,
    write: write_checks,
    agents: false,
};

/// The collected query statistics, one partition per instance: what makes a snapshot sent
/// again counted once.
pub const QUERY_SAMPLES: &str = "db_query_samples";

/// At most this many characters in a name (login, host, program, database, hash, wait).
const NAME_MAX: usize = 256;
/// At most this many characters in a statement.
const STATEMENT_MAX: usize = 20_000;
/// At most this many characters in an execution plan.
const PLAN_MAX: usize = 256 * 1024;
/// At most this many sessions waiting in one blocking chain.
const BLOCKED_MAX: usize = 1000;
/// The bound of counters and times (ms, reads, rows, executions).
const COUNT_MAX: f64 = 1e15;

/// Un échantillon des métriques d'une instance (toutes les 5 minutes en général). L'instance
/// doit être connue du compte (`unknown_reference` sinon) : les instances sont la
/// configuration du compte, jamais créées par la collecte. Pourcentages de 0 à 100, autres
/// mesures positives ou nulles (`invalid_observation` sinon). Un échantillon par instance et
/// par milliseconde : renvoyé, il est compté une fois. Le produit en dérive les agrégats
/// horaires (au-delà de 2 jours, `/metrics` les lit), le `last_collected_at` de l'instance,
/// ses alertes et son état, jamais envoyés : `cpu_high` (gravité `high`) à 90 % de CPU ou
/// plus, `memory_pressure` (`medium`) à 95 % de mémoire ou plus, ouverte au troisième
/// échantillon de suite au seuil (depuis le premier d'entre eux), résolue par un échantillon
/// sous le seuil ; l'instance est `degraded` tant qu'une de ces alertes est ouverte, sinon
/// `online`. Les échantillons plus récents que le dernier appliqué le sont dans l'ordre du
/// temps ; un plus ancien (en retard, ou renvoyé) ne change ni les alertes ni l'état.
/// Alimente `/databases/instances/{id}/metrics`, `/databases/instances` et
/// `/databases/alerts`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = CollectDatabaseMetrics)]
pub struct MetricsLine {
    pub at: DateTime<Utc>,
    /// Identifiant de l'instance (celui de `/databases/instances`).
    #[schema(example = 1090001)]
    pub instance: i64,
    pub cpu_pct: f64,
    pub memory_pct: f64,
    pub connections: f64,
    pub read_latency_ms: f64,
    pub write_latency_ms: f64,
    pub batch_requests_per_s: f64,
    /// Attentes par catégorie, en ms d'attente par seconde.
    #[schema(inline)]
    pub waits: Waits,
}

/// Une session vue sur une instance (`sys.dm_exec_sessions`, `pg_stat_activity`). Son
/// identité est l'instance, `session_id`, `login` et `login_at` : observée de nouveau (autre
/// `last_request_at`, autre état), elle remplace la précédente ; la dernière envoyée reste.
/// L'instance doit être connue (`unknown_reference`) ; `last_request_at` ne précède pas
/// `login_at` (`invalid_observation`). Datée de `login_at`. Alimente
/// `/databases/instances/{id}/sessions`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = CollectDatabaseSession)]
pub struct SessionLine {
    #[schema(example = 1090001)]
    pub instance: i64,
    pub session_id: u32,
    pub login: String,
    pub host: String,
    pub program: String,
    pub database: String,
    /// `running`, `runnable`, `suspended` ou `sleeping`.
    #[schema(inline)]
    pub status: SessionStatus,
    pub login_at: DateTime<Utc>,
    pub last_request_at: DateTime<Utc>,
    pub cpu_ms: u64,
    pub logical_reads: u64,
    pub open_transactions: u32,
    #[serde(default)]
    pub wait_type: Option<String>,
}

/// Une requête lente d'une instance (Extended Events, `auto_explain`, `pg_stat_statements`),
/// avec son plan d'exécution si le collecteur l'a (`plan_xml`, gardé, jamais renvoyé).
/// L'instance doit être connue (`unknown_reference`). Enregistrée une fois sous un
/// identifiant fait de son contenu. Alimente `/databases/instances/{id}/slow-queries`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = CollectDatabaseSlowQuery)]
pub struct SlowQueryLine {
    pub at: DateTime<Utc>,
    #[schema(example = 1090001)]
    pub instance: i64,
    pub database: String,
    pub login: String,
    pub client_host: String,
    pub program: String,
    pub duration_ms: u64,
    pub cpu_ms: u64,
    pub logical_reads: u64,
    pub physical_reads: u64,
    pub writes: u64,
    pub row_count: u64,
    #[schema(example = "0x7A3F1C9E2B4D5A60")]
    pub query_hash: String,
    pub statement: String,
    /// Plan d'exécution (256 Kio au plus), jamais renvoyé.
    #[serde(default)]
    pub plan_xml: Option<String>,
}

/// Les statistiques d'une requête sur l'intervalle d'un instantané du collecteur
/// (`sys.dm_exec_query_stats`, `pg_stat_statements`) : ce qui s'est ajouté depuis
/// l'instantané précédent, daté de la fin de l'intervalle. L'instance doit être connue
/// (`unknown_reference`). Le produit en fait les agrégats horaires par requête, que
/// `/top-queries` cumule et classe ; un instantané renvoyé est compté une fois. Alimente
/// `/databases/instances/{id}/top-queries`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = CollectDatabaseQueryStats)]
pub struct QueryStatsLine {
    pub at: DateTime<Utc>,
    #[schema(example = 1090001)]
    pub instance: i64,
    #[schema(example = "0x7A3F1C9E2B4D5A60")]
    pub query_hash: String,
    pub database: String,
    pub statement: String,
    pub executions: u64,
    pub cpu_ms: f64,
    pub duration_ms: f64,
    pub logical_reads: f64,
}

/// Une chaîne de blocage observée sur une instance : la session en tête et les sessions
/// bloquées (1 à 1000), chacune bloquée par la tête ou par une autre de la chaîne. Son
/// identité est l'instance, la session en tête, la base et `detected_at` : observée de
/// nouveau (plus longue, puis résolue), elle remplace la précédente. L'instance doit être
/// connue (`unknown_reference`) ; `resolved_at` ne précède pas `detected_at`. Alimente
/// `/databases/instances/{id}/blocking`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = CollectDatabaseBlocking)]
pub struct BlockingLine {
    #[schema(example = 1090001)]
    pub instance: i64,
    pub detected_at: DateTime<Utc>,
    pub duration_ms: u64,
    pub database: String,
    #[schema(inline)]
    pub head: BlockingHead,
    #[schema(inline)]
    pub blocked: Vec<BlockedSession>,
    #[serde(default)]
    pub resolved_at: Option<DateTime<Utc>>,
}

/// Le résultat d'une exécution d'un contrôle métier : la valeur que la requête a rendue, ou
/// `error` quand elle n'a pas pu s'exécuter. Le contrôle doit exister (`unknown_reference`) :
/// il porte l'attente à laquelle la valeur est jugée. Le statut et le message sont dérivés,
/// jamais envoyés : `error` sans valeur, `failed` quand la valeur ne satisfait pas l'attente,
/// `warning` quand elle la satisfait à 10 % près de son seuil (`<`, `<=`, `>`, `>=`), `ok`
/// sinon. Le contrôle prend le dernier résultat ; un plus ancien (en retard, ou renvoyé) est
/// enregistré et ne change pas le dernier. Un résultat `failed` ou `error` ouvre une alerte
/// `check_failed` (gravité `medium`) sur l'instance du contrôle, sauf s'il en a une ouverte ;
/// un résultat `ok` ou `warning` la résout (résultats plus récents que le dernier appliqué,
/// dans l'ordre du temps). Alimente `/databases/checks`, `/databases/checks/{id}/results` et
/// `/databases/alerts`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = CollectDatabaseCheck)]
pub struct CheckLine {
    pub at: DateTime<Utc>,
    /// Identifiant du contrôle (celui de `/databases/checks`).
    #[schema(example = 1095001)]
    pub check: i64,
    #[serde(default)]
    pub value: Option<f64>,
    pub duration_ms: u64,
    /// Pourquoi la requête n'a pas pu s'exécuter (sans `value`).
    #[serde(default)]
    pub error: Option<String>,
}

fn write_metrics<'a>(batch: &'a Batch<'a>) -> BoxFuture<'a, StoreResult<Vec<LineRefusal>>> {
    Box::pin(metrics(batch))
}

fn write_sessions<'a>(batch: &'a Batch<'a>) -> BoxFuture<'a, StoreResult<Vec<LineRefusal>>> {
    Box::pin(sessions(batch))
}

fn write_slow_queries<'a>(batch: &'a Batch<'a>) -> BoxFuture<'a, StoreResult<Vec<LineRefusal>>> {
    Box::pin(slow_queries(batch))
}

fn write_query_stats<'a>(batch: &'a Batch<'a>) -> BoxFuture<'a, StoreResult<Vec<LineRefusal>>> {
    Box::pin(query_stats(batch))
}

fn write_blocking<'a>(batch: &'a Batch<'a>) -> BoxFuture<'a, StoreResult<Vec<LineRefusal>>> {
    Box::pin(blocking(batch))
}

fn write_checks<'a>(batch: &'a Batch<'a>) -> BoxFuture<'a, StoreResult<Vec<LineRefusal>>> {
    Box::pin(checks(batch))
}

fn invalid(field: &str, fr: &str, en: &str) -> Msg {
    Msg::new(format!("{field} : {fr}"), format!("{field}: {en}"))
}

fn data(e: serde_json::Error) -> StoreError {
    StoreError::Data(e.to_string())
}

/// The lines read as `T`, valid and in time, whose instance the tenant knows; the others
/// refused.
async fn on_instances<T: serde::de::DeserializeOwned>(
    batch: &Batch<'_>,
    refused: &mut Vec<LineRefusal>,
    at: fn(&T) -> DateTime<Utc>,
    instance: fn(&T) -> i64,
    bad: fn(&T) -> Option<Msg>,
) -> StoreResult<Vec<(u64, T)>> {
    let (lines, _) = batch
        .read_known(
            refused,
            INSTANCES,
            (at, bad),
            |l| key(instance(l)),
            |l| {
                let id = instance(l);
                Msg::new(
                    format!("aucune instance {id} dans ce compte"),
                    format!("no instance {id} in this account"),
                )
            },
        )
        .await?;
    Ok(lines)
}

impl MetricsLine {
    fn values(&self) -> [(&'static str, f64); 11] {
        let w = &self.waits;
        let values = [
            self.cpu_pct,
            self.memory_pct,
            self.connections,
            self.read_latency_ms,
            self.write_latency_ms,
            self.batch_requests_per_s,
            w.cpu,
            w.io,
            w.lock,
            w.network,
            w.other,
        ];
        std::array::from_fn(|i| (MEASURES[i], values[i]))
    }

    fn bad(&self) -> Option<Msg> {
        let values = self.values();
        bad_measure(values.iter().map(|(k, v)| {
            (
                *k,
                *v,
                if k.ends_with("_pct") {
                    100.0
                } else {
                    COUNT_MAX
                },
            )
        }))
    }
}

async fn metrics(batch: &Batch<'_>) -> StoreResult<Vec<LineRefusal>> {
    let mut refused = Vec::new();
    let lines = on_instances(
        batch,
        &mut refused,
        |l: &MetricsLine| l.at,
        |l| l.instance,
        MetricsLine::bad,
    )
    .await?;
    let mut by_instance: HashMap<i64, Vec<Sample>> = HashMap::new();
    let mut items = Vec::with_capacity(lines.len());
    for (_, l) in &lines {
        let values = l.values();
        by_instance
            .entry(l.instance)
            .or_default()
            .push((l.at, values));
        items.push((
            sample_record(l.instance, l.at, &values),
            (l.instance, l.at, values),
        ));
    }
    batch
        .store_counted(METRICS, items, |new| {
            let mut hours: HashMap<i64, HourSums> = HashMap::new();
            for (instance, at, values) in new {
                add_sample(hours.entry(instance).or_default(), at, &values, 1.0);
            }
            hours
                .into_iter()
                .map(|(id, sums)| (rollup_series(METRIC_ROLLUPS, id), metric_rollups(id, sums)))
                .collect()
        })
        .await?;
    for (id, samples) in by_instance {
        derive_instance(batch, id, &samples).await?;
    }
    Ok(refused)
}

/// Applies the batch's samples of instance `id` to its rules ([`apply_samples`]): writes the
/// alerts they open or resolve, then the instance, with its rules' runs (`metric_runs`, never
/// returned), its derived `state` and its `last_collected_at` (its latest sample). The
/// instance is put at the version read: two batches of one instance taken in at once cannot
/// both apply, the second answers 503 and, sent again, is judged on the first's runs. The
/// alerts are written first, so that a batch stopped in between makes the same changes when
/// sent again.
async fn derive_instance(batch: &Batch<'_>, id: i64, samples: &[Sample]) -> StoreResult<()> {
    let Some((doc, mut runs)) = with_run::<MetricRuns>(batch, INSTANCES, id, "metric_runs").await?
    else {
        return Ok(());
    };
    let before = runs.at;
    let name = doc.body["name"].as_str().unwrap_or_default().to_owned();
    let alerts = apply_samples(&mut runs, id, &name, samples);
    if runs.at == before {
        return Ok(());
    }
    write_alerts(batch, alerts).await?;
    let mut body = doc.body.clone();
    let last = body
        .get("last_collected_at")
        .cloned()
        .and_then(|v| serde_json::from_value::<DateTime<Utc>>(v).ok());
    if let Some(at) = runs.at.filter(|at| last.is_none_or(|l| l < *at)) {
        body["last_collected_at"] = serde_json::to_value(at).map_err(data)?;
    }
    body["state"] = serde_json::to_value(runs.state()).map_err(data)?;
    body["metric_runs"] = serde_json::to_value(&runs).map_err(data)?;
    put_at(batch, INSTANCES, &doc, body).await
}

/// The document `id` of `collection` (an instance, a check) and the run it keeps in `field`
/// (never returned; the default when it keeps none yet), if the document exists.
async fn with_run<R: serde::de::DeserializeOwned + Default>(
    batch: &Batch<'_>,
    collection: &str,
    id: i64,
    field: &str,
) -> StoreResult<Option<(Doc, R)>> {
    let doc = batch
        .stores
        .docs
        .get(batch.tenant, collection, &key(id))
        .await?;
    Ok(doc.map(|doc| {
        let run = doc
            .body
            .get(field)
            .cloned()
            .and_then(|v| serde_json::from_value(v).ok())
            .unwrap_or_default();
        (doc, run)
    }))
}

/// Puts `body` over `doc` of `collection` at the version read (else the store's
/// [`StoreError::ConditionFailed`]: the batch answers 503).
async fn put_at(batch: &Batch<'_>, collection: &str, doc: &Doc, body: Value) -> StoreResult<()> {
    batch
        .stores
        .docs
        .put_if(
            batch.tenant,
            collection,
            &doc.key,
            body,
            Expect::Version(doc.version),
        )
        .await
}

/// Writes alerts opened or resolved: each in the alerts' history, an open one also among the
/// open alerts, a resolved one over its entry there (which the open alerts' read then skips).
async fn write_alerts(batch: &Batch<'_>, alerts: Vec<DbAlert>) -> StoreResult<()> {
    let (open, resolved): (Vec<DbAlert>, Vec<DbAlert>) = alerts
        .into_iter()
        .partition(|a| a.status == AlertState::Open);
    let stores = batch.stores;
    if !resolved.is_empty() {
        stores
            .resolve_alerts(
                batch.tenant,
                ALERTS,
                resolved.iter().map(alert_record).collect(),
            )
            .await?;
    }
    if !open.is_empty() {
        stores
            .append_alerts(
                batch.tenant,
                ALERTS,
                open.iter().map(alert_record).collect(),
            )
            .await?;
    }
    Ok(())
}

async fn sessions(batch: &Batch<'_>) -> StoreResult<Vec<LineRefusal>> {
    let mut refused = Vec::new();
    let lines = on_instances(
        batch,
        &mut refused,
        |l: &SessionLine| l.login_at,
        |l| l.instance,
        |s| {
            if s.last_request_at < s.login_at {
                return Some(invalid(
                    "last_request_at",
                    "antérieur à login_at",
                    "before login_at",
                ));
            }
            bad_text(
                NAME_MAX,
                [
                    ("login", Some(s.login.as_str()), true),
                    ("host", Some(s.host.as_str()), true),
                    ("program", Some(s.program.as_str()), true),
                    ("database", Some(s.database.as_str()), true),
                    ("wait_type", s.wait_type.as_deref(), false),
                ],
            )
        },
    )
    .await?;
    // A session is its instance, id, login and login time: the latest observation wins.
    let mut latest: HashMap<String, (DateTime<Utc>, Record)> = HashMap::new();
    for (_, l) in lines {
        let id = content_id("ss", l.login_at, &(l.instance, l.session_id, &l.login))?;
        if latest
            .get(&id)
            .is_some_and(|(seen, _)| *seen >= l.last_request_at)
        {
            continue;
        }
        let session = Session {
            session_id: l.session_id,
            login: l.login,
            host: l.host,
            program: l.program,
            database: l.database,
            status: l.status,
            login_at: l.login_at,
            last_request_at: l.last_request_at,
            cpu_ms: l.cpu_ms,
            logical_reads: l.logical_reads,
            open_transactions: l.open_transactions,
            wait_type: l.wait_type,
        };
        let record = Record {
            partition: l.instance.to_string(),
            ts: l.login_at.timestamp_millis(),
            id: id.clone(),
            body: serde_json::to_value(session).map_err(data)?,
        };
        latest.insert(id, (l.last_request_at, record));
    }
    put(
        batch,
        SESSIONS,
        latest.into_values().map(|(_, r)| r).collect(),
    )
    .await?;
    Ok(refused)
}

/// Stores `records`, each replacing the one of the same identity: what the kinds whose
/// observations are states (a session, a blocking chain) count nothing of.
async fn put(batch: &Batch<'_>, series: &str, records: Vec<Record>) -> StoreResult<()> {
    if records.is_empty() {
        return Ok(());
    }
    batch
        .stores
        .series_writes
        .append(batch.tenant, series, records)
        .await
}

async fn slow_queries(batch: &Batch<'_>) -> StoreResult<Vec<LineRefusal>> {
    let mut refused = Vec::new();
    let lines = on_instances(
        batch,
        &mut refused,
        |l: &SlowQueryLine| l.at,
        |l| l.instance,
        |l| {
            bad_text(
                NAME_MAX,
                [
                    ("database", Some(l.database.as_str()), true),
                    ("login", Some(l.login.as_str()), true),
                    ("client_host", Some(l.client_host.as_str()), true),
                    ("program", Some(l.program.as_str()), true),
                    ("query_hash", Some(l.query_hash.as_str()), true),
                ],
            )
            .or_else(|| {
                bad_text(
                    STATEMENT_MAX,
                    [("statement", Some(l.statement.as_str()), true)],
                )
            })
            .or_else(|| bad_text(PLAN_MAX, [("plan_xml", l.plan_xml.as_deref(), false)]))
        },
    )
    .await?;
    let mut events = Vec::with_capacity(lines.len());
    for (_, l) in lines {
        let query = SlowQuery {
            id: String::new(),
            ts: l.at,
            database: l.database,
            login: l.login,
            client_host: l.client_host,
            program: l.program,
            duration_ms: l.duration_ms,
            cpu_ms: l.cpu_ms,
            logical_reads: l.logical_reads,
            physical_reads: l.physical_reads,
            writes: l.writes,
            row_count: l.row_count,
            query_hash: l.query_hash,
            statement: l.statement,
        };
        let mut body = serde_json::to_value(query).map_err(data)?;
        if let Some(plan) = l.plan_xml {
            body["plan_xml"] = Value::String(plan);
        }
        events.push((l.instance.to_string(), l.at, body));
    }
    batch.store_events(SLOW_QUERIES, "sq", events).await?;
    Ok(refused)
}

impl QueryStatsLine {
    fn stats(&self) -> QueryStats<'_> {
        QueryStats {
            query_hash: &self.query_hash,
            database: &self.database,
            statement: &self.statement,
            executions: self.executions as f64,
            cpu_ms: self.cpu_ms,
            duration_ms: self.duration_ms,
            logical_reads: self.logical_reads,
        }
    }
}

async fn query_stats(batch: &Batch<'_>) -> StoreResult<Vec<LineRefusal>> {
    let mut refused = Vec::new();
    let lines = on_instances(
        batch,
        &mut refused,
        |l: &QueryStatsLine| l.at,
        |l| l.instance,
        |l| {
            bad_text(
                NAME_MAX,
                [
                    ("query_hash", Some(l.query_hash.as_str()), true),
                    ("database", Some(l.database.as_str()), true),
                ],
            )
            .or_else(|| {
                bad_text(
                    STATEMENT_MAX,
                    [("statement", Some(l.statement.as_str()), true)],
                )
            })
            .or_else(|| {
                bad_measure([
                    ("cpu_ms", l.cpu_ms, COUNT_MAX),
                    ("duration_ms", l.duration_ms, COUNT_MAX),
                    ("logical_reads", l.logical_reads, COUNT_MAX),
                ])
            })
        },
    )
    .await?;
    let mut items = Vec::with_capacity(lines.len());
    for (_, l) in lines {
        let rollup = query_rollup(l.at, &l.stats());
        let mut body = serde_json::to_value(&rollup.measures).map_err(data)?;
        body["query_hash"] = Value::String(l.query_hash.clone());
        body["database"] = Value::String(l.database.clone());
        body["at"] = serde_json::to_value(l.at).map_err(data)?;
        let id = content_id("qs", l.at, &(l.instance, &body, &l.statement))?;
        let record = Record {
            partition: l.instance.to_string(),
            ts: l.at.timestamp_millis(),
            id,
            body,
        };
        items.push((record, (rollup_series(QUERY_STATS, l.instance), rollup)));
    }
    batch
        .store_counted(QUERY_SAMPLES, items, |new| {
            let mut by_series: HashMap<String, Vec<_>> = HashMap::new();
            for (series, rollup) in new {
                by_series.entry(series).or_default().push(rollup);
            }
            by_series.into_iter().collect()
        })
        .await?;
    Ok(refused)
}

impl BlockingLine {
    fn bad(&self) -> Option<Msg> {
        if self.resolved_at.is_some_and(|r| r < self.detected_at) {
            return Some(invalid(
                "resolved_at",
                "antérieur à detected_at",
                "before detected_at",
            ));
        }
        if self.blocked.is_empty() || self.blocked.len() > BLOCKED_MAX {
            return Some(invalid(
                "blocked",
                "de 1 à 1000 sessions attendues",
                "1 to 1000 sessions expected",
            ));
        }
        let sessions: HashSet<u32> = std::iter::once(self.head.session_id)
            .chain(self.blocked.iter().map(|b| b.session_id))
            .collect();
        if let Some(b) = self
            .blocked
            .iter()
            .find(|b| !sessions.contains(&b.blocked_by) || b.blocked_by == b.session_id)
        {
            return Some(Msg::new(
                format!(
                    "blocked : la session {} est bloquée par {}, absente de la chaîne",
                    b.session_id, b.blocked_by
                ),
                format!(
                    "blocked: session {} is blocked by {}, which is not in the chain",
                    b.session_id, b.blocked_by
                ),
            ));
        }
        let h = &self.head;
        bad_text(
            NAME_MAX,
            [
                ("database", Some(self.database.as_str()), true),
                ("head.login", Some(h.login.as_str()), true),
                ("head.host", Some(h.host.as_str()), true),
                ("head.program", Some(h.program.as_str()), true),
            ],
        )
        .or_else(|| {
            bad_text(
                STATEMENT_MAX,
                [("head.statement", Some(h.statement.as_str()), true)],
            )
        })
        .or_else(|| {
            self.blocked.iter().find_map(|b| {
                bad_text(
                    NAME_MAX,
                    [
                        ("blocked.login", Some(b.login.as_str()), true),
                        ("blocked.wait_type", Some(b.wait_type.as_str()), true),
                    ],
                )
                .or_else(|| {
                    bad_text(
                        STATEMENT_MAX,
                        [("blocked.statement", Some(b.statement.as_str()), true)],
                    )
                })
            })
        })
    }
}

async fn blocking(batch: &Batch<'_>) -> StoreResult<Vec<LineRefusal>> {
    let mut refused = Vec::new();
    let lines = on_instances(
        batch,
        &mut refused,
        |l: &BlockingLine| l.detected_at,
        |l| l.instance,
        BlockingLine::bad,
    )
    .await?;
    // A chain is its instance, head session, database and detection time: the longest
    // observation wins within a batch, the latest sent across batches.
    let mut chains: HashMap<String, (i64, BlockingChain)> = HashMap::new();
    for (_, l) in lines {
        let id = content_id(
            "bk",
            l.detected_at,
            &(l.instance, l.head.session_id, &l.database),
        )?;
        let chain = BlockingChain {
            id: id.clone(),
            detected_at: l.detected_at,
            duration_ms: l.duration_ms,
            database: l.database,
            head: l.head,
            blocked: l.blocked,
            resolved_at: l.resolved_at,
        };
        let keep = chains.get(&id).is_none_or(|(_, c)| {
            (c.resolved_at.is_some(), c.duration_ms)
                < (chain.resolved_at.is_some(), chain.duration_ms)
        });
        if keep {
            chains.insert(id, (l.instance, chain));
        }
    }
    let mut records = Vec::with_capacity(chains.len());
    for (id, (instance, chain)) in chains {
        records.push(Record {
            partition: instance.to_string(),
            ts: chain.detected_at.timestamp_millis(),
            id,
            body: serde_json::to_value(&chain).map_err(data)?,
        });
    }
    put(batch, BLOCKING, records).await?;
    Ok(refused)
}

async fn checks(batch: &Batch<'_>) -> StoreResult<Vec<LineRefusal>> {
    let mut refused = Vec::new();
    let lines = batch.read_valid(
        &mut refused,
        |l: &CheckLine| l.at,
        |l| match (l.value, &l.error) {
            (Some(_), Some(_)) => Some(invalid(
                "error",
                "admis sans value seulement",
                "only admitted without value",
            )),
            (None, None) => Some(invalid(
                "value",
                "une valeur, ou error, attendue",
                "a value, or error, is expected",
            )),
            (Some(v), None) if !v.is_finite() => {
                Some(invalid("value", "nombre attendu", "a number is expected"))
            }
            _ => bad_text(NAME_MAX, [("error", l.error.as_deref(), false)]),
        },
    );
    let known = batch
        .known_docs(
            CHECKS,
            lines.iter().map(|(_, l)| key(l.check)).collect::<Vec<_>>(),
        )
        .await?;
    let mut events = Vec::new();
    let mut by_check: HashMap<i64, Vec<CheckResult>> = HashMap::new();
    for (line, l) in lines {
        let Some(check) = known.get(&key(l.check)) else {
            refused.push(LineError::UnknownReference.refuse(
                line,
                Msg::new(
                    format!("aucun contrôle {} dans ce compte", l.check),
                    format!("no check {} in this account", l.check),
                ),
            ));
            continue;
        };
        let expectation = check["expectation"].as_str().unwrap_or_default();
        let status = check_status(expectation, l.value);
        let result = CheckResult {
            at: l.at,
            status,
            value: l.value,
            duration_ms: l.duration_ms,
            message: check_message(status, expectation, l.error.as_deref()),
        };
        by_check.entry(l.check).or_default().push(result.clone());
        events.push((
            l.check.to_string(),
            l.at,
            serde_json::to_value(result).map_err(data)?,
        ));
    }
    batch.store_events(CHECK_RESULTS, "r", events).await?;
    for (id, results) in by_check {
        derive_check(batch, id, &results).await?;
    }
    Ok(refused)
}

/// Applies the batch's results of check `id` to its alert ([`apply_results`]): writes the
/// alert opened or resolved, then the check, with its `last_result` (its latest result; an
/// older one changes nothing) and its alert's run (`alert_run`, never returned), at the
/// version read (as [`derive_instance`]).
async fn derive_check(batch: &Batch<'_>, id: i64, results: &[CheckResult]) -> StoreResult<()> {
    let Some((doc, mut run)) = with_run::<CheckRun>(batch, CHECKS, id, "alert_run").await? else {
        return Ok(());
    };
    let body = &doc.body;
    let check = CheckRef {
        id,
        name: body["name"].as_str().unwrap_or_default(),
        instance_id: body["instance_id"].as_i64().unwrap_or_default(),
        instance: body["instance"].as_str().unwrap_or_default(),
    };
    let before = run.at;
    let alerts = apply_results(&mut run, &check, results);
    let latest = results.iter().max_by_key(|r| r.at);
    let last = body["last_result"]
        .get("at")
        .cloned()
        .and_then(|v| serde_json::from_value::<DateTime<Utc>>(v).ok());
    let newer = latest.filter(|r| last.is_none_or(|t| t < r.at));
    if newer.is_none() && run.at == before {
        return Ok(());
    }
    write_alerts(batch, alerts).await?;
    let mut body = body.clone();
    if let Some(result) = newer {
        body["last_result"] = serde_json::to_value(result).map_err(data)?;
    }
    body["alert_run"] = serde_json::to_value(&run).map_err(data)?;
    put_at(batch, CHECKS, &doc, body).await
}
