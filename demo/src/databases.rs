//! Databases demo data: instances on the roster's servers (with stored collection
//! credentials), metric samples and hourly rollups, query statistics, slow queries,
//! sessions, blocking chains, alerts and business checks with their results.

use crate::{MachineKind, MachineSeed, Produced, SeedCtx, hours_of};
use chrono::{DateTime, Duration, Timelike, Utc};
use netops_shared::module::BoxFuture;
use netops_shared::store::{Record, StoreResult};
use rand::Rng;
use rand::rngs::StdRng;
use serde::Serialize;
use serde_json::{Value, json};

use netops_databases::derive::{
    CheckRef, CheckRun, HourSums, MetricRuns, QueryStats, add_sample, alert_record, apply_results,
    apply_samples, check_message, metric_rollups, query_rollup, sample_record,
};
use netops_databases::model::*;

fn to_json(v: impl Serialize) -> Value {
    serde_json::to_value(v).unwrap_or_default()
}

fn pick<'a, T>(rng: &mut StdRng, items: &'a [T]) -> &'a T {
    &items[rng.random_range(0..items.len())]
}

/// Statements seen on the SQL Server instances: (database, statement, avg cpu ms, avg reads).
const STATEMENTS: &[(&str, &str, f64, f64)] = &[
    (
        "ERP_PROD",
        "SELECT c.id, c.client_id, c.total_ttc FROM ventes.commandes c WHERE c.statut = @statut AND c.date_commande >= @depuis ORDER BY c.date_commande DESC",
        35.0,
        4200.0,
    ),
    (
        "ERP_PROD",
        "UPDATE stock.articles SET quantite = quantite - @qte WHERE article_id = @id AND entrepot_id = @entrepot",
        2.0,
        12.0,
    ),
    (
        "ERP_PROD",
        "SELECT a.article_id, SUM(l.quantite) FROM ventes.lignes l JOIN stock.articles a ON a.article_id = l.article_id GROUP BY a.article_id",
        820.0,
        185_000.0,
    ),
    (
        "CRM",
        "SELECT TOP (50) * FROM crm.contacts WHERE nom LIKE @nom + '%' ORDER BY nom",
        12.0,
        900.0,
    ),
    (
        "CRM",
        "INSERT INTO crm.interactions (contact_id, canal, date_interaction, note) VALUES (@contact, @canal, SYSUTCDATETIME(), @note)",
        1.0,
        6.0,
    ),
    (
        "Compta",
        "SELECT e.compte, SUM(e.debit) - SUM(e.credit) FROM compta.ecritures e WHERE e.exercice = @exercice GROUP BY e.compte",
        1450.0,
        320_000.0,
    ),
    (
        "Compta",
        "EXEC compta.usp_lettrage_automatique @exercice = @exercice",
        5200.0,
        910_000.0,
    ),
    (
        "Paie",
        "SELECT s.matricule, s.brut, s.net FROM paie.bulletins s WHERE s.periode = @periode",
        90.0,
        15_000.0,
    ),
    (
        "ERP_PROD",
        "DELETE FROM ventes.paniers WHERE derniere_activite < DATEADD(day, -30, SYSUTCDATETIME())",
        260.0,
        48_000.0,
    ),
    (
        "ReportServer",
        "SELECT * FROM dbo.ExecutionLog3 WHERE TimeStart >= @debut",
        140.0,
        22_000.0,
    ),
];

const PG_STATEMENTS: &[(&str, &str, f64, f64)] = &[
    (
        "portail",
        "SELECT id, titre, publie_le FROM articles WHERE publie = true ORDER BY publie_le DESC LIMIT $1",
        4.0,
        300.0,
    ),
    (
        "portail",
        "UPDATE sessions SET derniere_activite = now() WHERE jeton = $1",
        0.8,
        4.0,
    ),
    (
        "portail",
        "SELECT u.id, count(*) FROM utilisateurs u JOIN connexions c ON c.utilisateur_id = u.id WHERE c.le >= $1 GROUP BY u.id",
        380.0,
        61_000.0,
    ),
    (
        "analytics",
        "INSERT INTO evenements (type, charge, recu_le) VALUES ($1, $2, now())",
        0.5,
        3.0,
    ),
    (
        "analytics",
        "SELECT date_trunc('hour', recu_le), type, count(*) FROM evenements WHERE recu_le >= $1 GROUP BY 1, 2",
        2100.0,
        540_000.0,
    ),
];

struct Inst {
    id: i64,
    name: String,
    host: String,
    pg: bool,
    state: InstanceState,
    /// Collection stops here for an offline instance.
    until: DateTime<Utc>,
    cpu: f64,
    mem: f64,
    conn: f64,
}

fn hash_of(id: i64, i: usize) -> String {
    let x = (id as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)
        ^ ((i as u64 + 1).wrapping_mul(0xC2B2_AE3D_27D4_EB4F));
    format!("0x{x:016X}")
}

/// One five-minute sample of an instance at `at` (`degraded`: slow and busy).
fn sample(
    rng: &mut StdRng,
    inst: &Inst,
    at: DateTime<Utc>,
    degraded: bool,
) -> [(&'static str, f64); 11] {
    let busy = if (7..19).contains(&at.hour()) {
        1.0
    } else {
        0.45
    };
    let spike = if rng.random_bool(0.004) { 45.0 } else { 0.0 };
    let cpu = (inst.cpu * busy * rng.random_range(0.8..1.2) + spike).clamp(1.0, 99.0);
    // Busy: the CPU above the bound of `cpu_high` (`derive::METRIC_RULES`).
    let cpu = if degraded {
        rng.random_range(91.0..99.0)
    } else {
        cpu
    };
    let degraded = if degraded { 30.0 } else { 0.0 };
    let read_lat = rng.random_range(1.5..7.0) + spike / 5.0 + degraded / 2.0;
    [
        ("cpu_pct", cpu),
        (
            "memory_pct",
            (inst.mem + rng.random_range(-3.0..3.0)).clamp(5.0, 99.0),
        ),
        (
            "connections",
            (inst.conn * busy * rng.random_range(0.9..1.1)).round(),
        ),
        ("read_latency_ms", read_lat),
        (
            "write_latency_ms",
            rng.random_range(0.8..4.0) + degraded / 4.0,
        ),
        (
            "batch_requests_per_s",
            inst.conn * busy * rng.random_range(2.0..4.0),
        ),
        ("wait_cpu", cpu * 1.8),
        ("wait_io", read_lat * 14.0),
        (
            "wait_lock",
            if rng.random_bool(0.03) {
                rng.random_range(100.0..900.0)
            } else {
                rng.random_range(0.0..25.0)
            } + degraded * 5.0,
        ),
        ("wait_network", rng.random_range(4.0..20.0)),
        ("wait_other", rng.random_range(8.0..30.0)),
    ]
}

/// The kinds of alert drawn on an instance: (kind, severity, message). Those of the samples
/// (high CPU, memory pressure) and of the checks are derived from them ([`apply_samples`],
/// [`apply_results`]), never drawn.
const ALERT_KINDS: &[(DbAlertKind, Criticality, &str)] = &[
    (
        DbAlertKind::Blocking,
        Criticality::High,
        "Chaîne de blocage de plus de 60 s",
    ),
    (
        DbAlertKind::Deadlock,
        Criticality::Medium,
        "Interblocage détecté (victime choisie par le moteur)",
    ),
    (
        DbAlertKind::LongRunningQuery,
        Criticality::Low,
        "Requête en cours depuis plus de 10 minutes",
    ),
    (
        DbAlertKind::LogSpace,
        Criticality::High,
        "Journal de transactions rempli à plus de 85 %",
    ),
    (
        DbAlertKind::BackupMissing,
        Criticality::Critical,
        "Aucune sauvegarde complète depuis plus de 26 h",
    ),
    (
        DbAlertKind::JobFailed,
        Criticality::Medium,
        "Travail SQL Agent en échec : Maintenance - Index",
    ),
];

/// The longest a passing alert stays open: a producer looks this far back for the alerts
/// that resolve in its interval.
const LONGEST_MINUTES: i64 = 600;

/// The passing alerts that open in the hour starting at `hour`, each resolved within
/// [`LONGEST_MINUTES`]: at least six a day of any kind on an instance that is not offline,
/// and on a degraded instance, slow and busy, a blocking
/// chain one hour in four. Drawn from the hour's own generator, so the seed and the producer
/// find the same.
fn passing_alerts(insts: &[Inst], rng: &mut StdRng, hour: DateTime<Utc>) -> Vec<DbAlert> {
    let up: Vec<&Inst> = insts
        .iter()
        .filter(|i| i.state != InstanceState::Offline)
        .collect();
    let mut drawn = Vec::new();
    let per_day = (up.len() as f64 * 0.4).max(6.0);
    if !up.is_empty() && rng.random_bool((per_day / 24.0).min(1.0)) {
        drawn.push((*pick(rng, &up), *pick(rng, ALERT_KINDS)));
    }
    for inst in up.iter().filter(|i| i.state == InstanceState::Degraded) {
        if rng.random_bool(0.25) {
            drawn.push((*inst, ALERT_KINDS[0]));
        }
    }
    drawn
        .into_iter()
        .enumerate()
        .map(|(k, (inst, (kind, severity, message)))| {
            let opened = hour + Duration::seconds(rng.random_range(0..3600));
            let resolved = opened + Duration::minutes(rng.random_range(5..LONGEST_MINUTES));
            DbAlert {
                id: format!("dba-{}-{k}", hour.timestamp() / 3600),
                instance_id: inst.id,
                instance: inst.name.clone(),
                kind,
                severity,
                status: AlertState::Resolved,
                message: message.into(),
                opened_at: opened,
                resolved_at: Some(resolved),
            }
        })
        .collect()
}

/// The passing alerts that resolve in `[from, to)`, opened at most [`LONGEST_MINUTES`] before.
fn resolved_in(
    ctx: &SeedCtx,
    insts: &[Inst],
    from: DateTime<Utc>,
    to: DateTime<Utc>,
) -> Vec<Record> {
    ctx.ended_in(
        "databases/alerts",
        Duration::minutes(LONGEST_MINUTES),
        from,
        to,
        |rng, hour| passing_alerts(insts, rng, hour),
        |a| a.resolved_at,
    )
    .iter()
    .map(alert_record)
    .collect()
}

/// The metrics of `[from, to)` as time passes: a sample every five minutes of each instance
/// that is not offline (a degraded one still slow), and their hourly rollups; and the
/// passing alerts that resolve in `[from, to)`, written once resolved.
pub fn produce(ctx: &SeedCtx, from: DateTime<Utc>, to: DateTime<Utc>) -> Produced {
    let Some((insts, _)) = instances(ctx, &mut ctx.rng("databases")) else {
        return Produced::default();
    };
    let (mut raw, mut rollups) = (Vec::new(), Vec::new());
    for inst in insts.iter().filter(|i| i.state != InstanceState::Offline) {
        let mut hours = HourSums::new();
        for hour in hours_of(from, to) {
            let mut rng = ctx.hour_rng(&format!("databases/{}", inst.id), hour);
            for k in 0..12 {
                let at = hour + Duration::minutes(5 * k);
                let values = sample(&mut rng, inst, at, inst.state == InstanceState::Degraded);
                if from <= at && at < to {
                    add_sample(&mut hours, at, &values, 1.0);
                    raw.push(sample_record(inst.id, at, &values));
                }
            }
        }
        rollups.push((
            rollup_series(METRIC_ROLLUPS, inst.id),
            metric_rollups(inst.id, hours),
        ));
    }
    Produced {
        records: vec![
            (METRICS.to_owned(), raw),
            (ALERTS.to_owned(), resolved_in(ctx, &insts, from, to)),
        ],
        rollups,
        ..Produced::default()
    }
}

/// The servers and the desktops of the roster.
fn hosts(ctx: &SeedCtx) -> (Vec<&MachineSeed>, Vec<&MachineSeed>) {
    ctx.machines
        .iter()
        .partition(|m| m.kind == MachineKind::Server)
}

/// The first of the tenant's numeric ids of this module.
fn id_base(ctx: &SeedCtx) -> i64 {
    ctx.tenant.id_base * 100
}

/// The tenant's database instances (none without servers and desktops), each with its
/// document, drawn first from the module's generator.
#[allow(clippy::type_complexity)]
fn instances(ctx: &SeedCtx, rng: &mut StdRng) -> Option<(Vec<Inst>, Vec<(String, Value)>)> {
    let now = ctx.now;
    let (servers, desktops) = hosts(ctx);
    if servers.is_empty() || desktops.is_empty() {
        return None;
    }
    let step = if servers.len() < 6 { 1 } else { 2 };
    let base = id_base(ctx);
    let mut insts = Vec::new();
    let mut docs = Vec::new();
    for (k, server) in servers.iter().step_by(step).enumerate() {
        let pg = server.os.starts_with("Ubuntu");
        let id = base + 90_001 + k as i64;
        let state = match k {
            _ if !server.online => InstanceState::Offline,
            1 => InstanceState::Degraded,
            2 => InstanceState::Offline,
            _ => InstanceState::Online,
        };
        let name = if pg || k % 3 == 0 {
            server.hostname.clone()
        } else {
            format!(
                "{}\\{}",
                server.hostname,
                if k % 3 == 1 { "SQLPROD" } else { "SQLAPP" }
            )
        };
        let (version, edition) = if pg {
            (
                "PostgreSQL 14.15 (Ubuntu 14.15-0ubuntu0.22.04.1) on x86_64-pc-linux-gnu"
                    .to_owned(),
                "Community".to_owned(),
            )
        } else {
            let v = *pick(
                rng,
                &[
                    "Microsoft SQL Server 2019 (RTM-CU28) (KB5039747) - 15.0.4385.2 (X64)",
                    "Microsoft SQL Server 2022 (RTM-CU15) (KB5041321) - 16.0.4145.4 (X64)",
                    "Microsoft SQL Server 2016 (SP3) (KB5003279) - 13.0.6300.2 (X64)",
                ],
            );
            let e = *pick(
                rng,
                &[
                    "Standard Edition (64-bit)",
                    "Enterprise Edition: Core-based Licensing (64-bit)",
                    "Express Edition (64-bit)",
                ],
            );
            (v.to_owned(), e.to_owned())
        };
        let until = if state == InstanceState::Offline {
            now - Duration::minutes(rng.random_range(90..600))
        } else {
            now - Duration::seconds(rng.random_range(20..120))
        };
        let instance = Instance {
            id,
            name: name.clone(),
            host: server.hostname.clone(),
            port: if pg { 5432 } else { 1433 },
            engine: if pg {
                Engine::Postgresql
            } else {
                Engine::Sqlserver
            },
            version,
            edition,
            state,
            databases: rng.random_range(3..25),
            data_size_gb: (rng.random_range(5.0..900.0_f64) * 10.0).round() / 10.0,
            max_memory_gb: *pick(rng, &[16, 32, 64, 128]),
            started_at: now - Duration::days(rng.random_range(3..120)),
            last_backup_at: now - Duration::hours(rng.random_range(2..30)),
            last_collected_at: until,
        };
        let mut body = to_json(instance);
        // What the collector connects with; not part of the response type.
        body["login"] = json!(if pg {
            "netops_monitor"
        } else {
            "svc-netops-sql"
        });
        body["password"] = json!(format!("Np!{:016x}", rng.random::<u64>()));
        docs.push((key(id), body));
        insts.push(Inst {
            id,
            name,
            host: server.hostname.clone(),
            pg,
            state,
            until,
            cpu: rng.random_range(10.0..45.0),
            mem: rng.random_range(55.0..88.0),
            conn: rng.random_range(20.0..220.0),
        });
    }
    Some((insts, docs))
}

pub fn seed(ctx: &SeedCtx) -> BoxFuture<'_, StoreResult<()>> {
    Box::pin(async move {
        let mut rng = ctx.rng("databases");
        let now = ctx.now;
        let Some((insts, mut docs)) = instances(ctx, &mut rng) else {
            return Ok(());
        };
        let (servers, desktops) = hosts(ctx);
        let base = id_base(ctx);
        let tenant = ctx.tenant.id;

        let logins_people: Vec<String> = ctx.people().take(40).map(|a| a.login.clone()).collect();
        let domain = ctx
            .tenant
            .domain
            .split('.')
            .next()
            .unwrap_or("corp")
            .to_uppercase();
        let mut raw = Vec::new();
        let mut slow = Vec::new();
        let mut sessions = Vec::new();
        let mut blocking = Vec::new();
        let mut alerts = Vec::new();
        let mut seq = 0u64;
        let mut next_id = |p: &str| {
            seq += 1;
            format!("{p}-{seq:08}")
        };
        for (n, inst) in insts.iter().enumerate() {
            // Metrics: five-minute samples, all into hourly rollups, the last days kept raw.
            // Older hours are generated as one hourly mean weighing twelve samples.
            let mut hours = HourSums::new();
            let mut samples = Vec::new();
            let start = now - Duration::days(i64::from(ctx.days));
            let first = start.timestamp() - start.timestamp().rem_euclid(3600) + 3600;
            let mut t = first;
            let raw_from = (now - Duration::days(RAW_DAYS)).timestamp();
            while t < inst.until.timestamp() {
                let step = if t < raw_from { 3600 } else { 300 };
                let weight = (step / 300) as f64;
                let at = DateTime::from_timestamp(t, 0).unwrap_or(now);
                let degraded =
                    inst.state == InstanceState::Degraded && t > now.timestamp() - 6 * 3600;
                let values = sample(&mut rng, inst, at, degraded);
                add_sample(&mut hours, at, &values, weight);
                if t >= raw_from {
                    raw.push(sample_record(inst.id, at, &values));
                    samples.push((at, values));
                }
                t += step;
            }
            // The alerts and state its five-minute samples derive, as collected ones would
            // (an offline instance stays so: its samples stopped).
            let mut runs = MetricRuns::default();
            alerts.extend(
                apply_samples(&mut runs, inst.id, &inst.name, &samples)
                    .iter()
                    .map(alert_record),
            );
            let body = &mut docs[n].1;
            if inst.state != InstanceState::Offline {
                body["state"] = to_json(runs.state());
            }
            body["metric_runs"] = to_json(&runs);
            let rollups = metric_rollups(inst.id, hours);
            ctx.stores
                .rollups
                .load(tenant, &rollup_series(METRIC_ROLLUPS, inst.id), rollups)
                .await?;

            // Query statistics: a collector snapshot every two hours over seven days.
            let pool = if inst.pg { PG_STATEMENTS } else { STATEMENTS };
            let mut stats = Vec::new();
            let mut h = (now - Duration::days(7)).timestamp();
            h -= h.rem_euclid(7200);
            while h < inst.until.timestamp() {
                for _ in 0..5 {
                    let i = rng.random_range(0..pool.len());
                    let (db, stmt, cpu, reads) = pool[i];
                    let execs = if cpu > 500.0 {
                        rng.random_range(1..12)
                    } else {
                        rng.random_range(50..4000)
                    } as f64;
                    let cpu_ms = execs * cpu * rng.random_range(0.7..1.3);
                    let hash = hash_of(inst.id, i);
                    let at = DateTime::from_timestamp(h, 0).unwrap_or(now);
                    stats.push(query_rollup(
                        at,
                        &QueryStats {
                            query_hash: &hash,
                            database: db,
                            statement: stmt,
                            executions: execs,
                            cpu_ms,
                            duration_ms: cpu_ms * rng.random_range(1.1..3.5),
                            logical_reads: (execs * reads * rng.random_range(0.8..1.2)).round(),
                        },
                    ));
                }
                h += 7200;
            }
            ctx.stores
                .rollups
                .load(tenant, &rollup_series(QUERY_STATS, inst.id), stats)
                .await?;

            let apps: &[&str] = if inst.pg {
                &["portail_app", "analytics_etl"]
            } else {
                &["app_erp", "app_crm", "reporting"]
            };
            for day in 0..7i64 {
                // Slow queries, with the plan the collector keeps (never returned).
                for _ in 0..8 {
                    let ts = now - Duration::seconds(day * 86_400 + rng.random_range(60..86_400));
                    if ts >= inst.until {
                        continue;
                    }
                    let i = rng.random_range(0..pool.len());
                    let (db, stmt, _, reads) = pool[i];
                    let duration = (1000.0 * 10f64.powf(rng.random_range(0.0..2.2))) as u64;
                    let id = next_id("sq");
                    let mut body = to_json(SlowQuery {
                        id: id.clone(),
                        ts,
                        database: db.into(),
                        login: pick(&mut rng, apps).to_string(),
                        client_host: pick(&mut rng, &servers).hostname.clone(),
                        program: if inst.pg {
                            "PostgreSQL JDBC Driver"
                        } else {
                            ".Net SqlClient Data Provider"
                        }
                        .into(),
                        duration_ms: duration,
                        cpu_ms: duration * rng.random_range(30..90) / 100,
                        logical_reads: (reads * rng.random_range(1.0..20.0)) as u64,
                        physical_reads: rng.random_range(0..20_000),
                        writes: rng.random_range(0..500),
                        row_count: rng.random_range(0..100_000),
                        query_hash: hash_of(inst.id, i),
                        statement: stmt.into(),
                    });
                    body["plan_xml"] = json!(
                        "<ShowPlanXML xmlns=\"http://schemas.microsoft.com/sqlserver/2004/07/showplan\" Version=\"1.564\"><BatchSequence>…</BatchSequence></ShowPlanXML>"
                    );
                    slow.push(Record {
                        partition: inst.id.to_string(),
                        ts: ts.timestamp_millis(),
                        id,
                        body,
                    });
                }
                // Sessions opened that day.
                for _ in 0..12 {
                    let ts = now - Duration::seconds(day * 86_400 + rng.random_range(60..86_400));
                    if ts >= inst.until {
                        continue;
                    }
                    let person = rng.random_bool(0.4);
                    let login = if person {
                        if inst.pg {
                            pick(&mut rng, &logins_people).clone()
                        } else {
                            format!("{domain}\\{}", pick(&mut rng, &logins_people))
                        }
                    } else {
                        pick(&mut rng, apps).to_string()
                    };
                    let (host, program) = if person {
                        (
                            pick(&mut rng, &desktops).hostname.clone(),
                            *pick(
                                &mut rng,
                                &[
                                    "Microsoft SQL Server Management Studio - Query",
                                    "Microsoft Office 2016",
                                    "Power BI Desktop",
                                    "DBeaver 24.2.5",
                                ],
                            ),
                        )
                    } else {
                        (
                            pick(&mut rng, &servers).hostname.clone(),
                            *pick(
                                &mut rng,
                                &[
                                    ".Net SqlClient Data Provider",
                                    "SQLAgent - TSQL JobStep",
                                    "ERP Service",
                                ],
                            ),
                        )
                    };
                    let status = *pick(
                        &mut rng,
                        &[
                            SessionStatus::Sleeping,
                            SessionStatus::Sleeping,
                            SessionStatus::Running,
                            SessionStatus::Runnable,
                            SessionStatus::Suspended,
                        ],
                    );
                    sessions.push(Record {
                        partition: inst.id.to_string(),
                        ts: ts.timestamp_millis(),
                        id: next_id("ss"),
                        body: to_json(Session {
                            session_id: rng.random_range(51..400),
                            login,
                            host,
                            program: program.into(),
                            database: pool[rng.random_range(0..pool.len())].0.into(),
                            status,
                            login_at: ts,
                            last_request_at: (ts + Duration::seconds(rng.random_range(1..7200)))
                                .min(now),
                            cpu_ms: rng.random_range(0..60_000),
                            logical_reads: rng.random_range(0..2_000_000),
                            open_transactions: if status == SessionStatus::Sleeping
                                && rng.random_bool(0.1)
                            {
                                1
                            } else {
                                0
                            },
                            wait_type: (status == SessionStatus::Suspended).then(|| {
                                pick(
                                    &mut rng,
                                    &["LCK_M_U", "PAGEIOLATCH_SH", "ASYNC_NETWORK_IO", "CXPACKET"],
                                )
                                .to_string()
                            }),
                        }),
                    });
                }
                // Blocking chains.
                let chains = if n == 0 && day == 0 {
                    2
                } else {
                    rng.random_range(0..3)
                };
                for _ in 0..chains {
                    let ts = now - Duration::seconds(day * 86_400 + rng.random_range(600..80_000));
                    if ts >= inst.until {
                        continue;
                    }
                    let head_id = rng.random_range(51..400);
                    let (db, head_stmt, _, _) = pool[rng.random_range(0..pool.len())];
                    let blocked = (0..rng.random_range(1..5))
                        .map(|j| BlockedSession {
                            session_id: rng.random_range(51..400),
                            blocked_by: head_id,
                            login: pick(&mut rng, apps).to_string(),
                            wait_type: pick(
                                &mut rng,
                                &["LCK_M_U", "LCK_M_X", "LCK_M_S", "LCK_M_IX"],
                            )
                            .to_string(),
                            wait_ms: rng.random_range(2_000..180_000) / (j + 1),
                            statement: pool[rng.random_range(0..pool.len())].1.into(),
                        })
                        .collect::<Vec<_>>();
                    let duration = blocked.iter().map(|b| b.wait_ms).max().unwrap_or(0);
                    let id = next_id("bk");
                    blocking.push(Record {
                        partition: inst.id.to_string(),
                        ts: ts.timestamp_millis(),
                        id: id.clone(),
                        body: to_json(BlockingChain {
                            id,
                            detected_at: ts,
                            duration_ms: duration,
                            database: db.into(),
                            head: BlockingHead {
                                session_id: head_id,
                                login: format!("{domain}\\{}", pick(&mut rng, &logins_people)),
                                host: pick(&mut rng, &desktops).hostname.clone(),
                                program: "Microsoft SQL Server Management Studio - Query".into(),
                                status: SessionStatus::Sleeping,
                                statement: format!("BEGIN TRAN; {head_stmt}"),
                            },
                            blocked,
                            resolved_at: Some(ts + Duration::milliseconds(duration as i64 + 500)),
                        }),
                    });
                }
            }
            // Alerts still open at the seed, of the last two days (the first instance's at
            // least; the second's resolved two minutes after opening). Those that passed are
            // drawn hour by hour by [`resolved_in`], as the producer draws them.
            for day in 0..i64::from(ctx.days).min(2) {
                if !(rng.random_bool(0.16) || (day == 0 && n < 2)) {
                    continue;
                }
                let opened = now - Duration::seconds(day * 86_400 + rng.random_range(300..86_000));
                let (kind, severity, message) = *pick(&mut rng, ALERT_KINDS);
                let resolved = (day == 0 && n == 1).then(|| opened + Duration::minutes(2));
                let resolved = resolved.filter(|r| *r < now);
                let id = next_id("dba");
                alerts.push(alert_record(&DbAlert {
                    id,
                    instance_id: inst.id,
                    instance: inst.name.clone(),
                    kind,
                    severity,
                    status: AlertState::open_if(resolved.is_none()),
                    message: message.into(),
                    opened_at: opened,
                    resolved_at: resolved,
                }));
            }
            if inst.state == InstanceState::Offline {
                let id = next_id("dba");
                alerts.push(Record {
                    partition: inst.id.to_string(),
                    ts: inst.until.timestamp_millis() + 60_000,
                    id: id.clone(),
                    body: to_json(DbAlert {
                        id,
                        instance_id: inst.id,
                        instance: inst.name.clone(),
                        kind: DbAlertKind::InstanceDown,
                        severity: Criticality::Critical,
                        status: AlertState::Open,
                        message: format!("Instance injoignable sur {}", inst.host),
                        opened_at: inst.until + Duration::minutes(1),
                        resolved_at: None,
                    }),
                });
            }
        }
        ctx.stores.docs.put(tenant, INSTANCES, docs).await?;
        ctx.stores
            .series_writes
            .append(tenant, METRICS, raw)
            .await?;
        ctx.stores
            .series_writes
            .append(tenant, SLOW_QUERIES, slow)
            .await?;
        ctx.stores
            .series_writes
            .append(tenant, SESSIONS, sessions)
            .await?;
        ctx.stores
            .series_writes
            .append(tenant, BLOCKING, blocking)
            .await?;
        alerts.extend(resolved_in(ctx, &insts, ctx.start(), now));
        ctx.stores.append_alerts(tenant, ALERTS, alerts).await?;
        seed_checks(ctx, &mut rng, &insts, base).await
    })
}

/// (name, database, query, expectation, good value, bad value)
type CheckDef = (
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    f64,
    f64,
);

const SQL_CHECKS: &[CheckDef] = &[
    (
        "Commandes livrées non facturées depuis plus de 48 h",
        "ERP_PROD",
        "SELECT COUNT(*) FROM ventes.commandes WHERE statut = 'LIVREE' AND facture_id IS NULL AND date_livraison < DATEADD(hour, -48, SYSUTCDATETIME())",
        "= 0",
        0.0,
        14.0,
    ),
    (
        "Dernière sauvegarde complète (heures)",
        "msdb",
        "SELECT DATEDIFF(hour, MAX(backup_finish_date), SYSUTCDATETIME()) FROM msdb.dbo.backupset WHERE type = 'D'",
        "< 24",
        9.0,
        31.0,
    ),
    (
        "Travaux SQL Agent en échec sur 24 h",
        "msdb",
        "SELECT COUNT(*) FROM msdb.dbo.sysjobhistory WHERE run_status = 0 AND step_id = 0 AND msdb.dbo.agent_datetime(run_date, run_time) > DATEADD(day, -1, GETDATE())",
        "= 0",
        0.0,
        2.0,
    ),
    (
        "Pièces comptables déséquilibrées",
        "Compta",
        "SELECT COUNT(*) FROM (SELECT piece_id FROM compta.ecritures GROUP BY piece_id HAVING SUM(debit) <> SUM(credit)) AS x",
        "= 0",
        0.0,
        3.0,
    ),
    (
        "Espace libre du journal de transactions (%)",
        "ERP_PROD",
        "SELECT 100.0 * (1 - FILEPROPERTY(name, 'SpaceUsed') / CAST(size AS float)) FROM sys.database_files WHERE type_desc = 'LOG'",
        ">= 20",
        64.0,
        12.0,
    ),
];

const PG_CHECKS: &[CheckDef] = &[
    (
        "Retard de réplication (secondes)",
        "postgres",
        "SELECT COALESCE(EXTRACT(EPOCH FROM now() - pg_last_xact_replay_timestamp()), 0)",
        "< 60",
        2.0,
        140.0,
    ),
    (
        "Sessions inactives en transaction",
        "postgres",
        "SELECT count(*) FROM pg_stat_activity WHERE state = 'idle in transaction'",
        "< 5",
        1.0,
        9.0,
    ),
];

async fn seed_checks(
    ctx: &SeedCtx,
    rng: &mut StdRng,
    insts: &[Inst],
    base: i64,
) -> StoreResult<()> {
    let now = ctx.now;
    let mut docs = Vec::new();
    let mut results = Vec::new();
    let mut alerts = Vec::new();
    let mut j = 0usize;
    for inst in insts {
        let defs = if inst.pg { PG_CHECKS } else { SQL_CHECKS };
        for c in 0..2 {
            let (name, db, query, expectation, good, bad) =
                defs[(inst.id as usize + c) % defs.len()];
            let id = base + 95_001 + j as i64;
            j += 1;
            // The third check is disabled; its results stop a week ago.
            let enabled = j != 3;
            let mut runs: Vec<CheckResult> = Vec::new();
            let mut h = (now - Duration::days(7)).timestamp();
            h -= h.rem_euclid(3600);
            let stop = if enabled {
                inst.until.min(now)
            } else {
                now - Duration::days(6)
            };
            let mut k = 0usize;
            while h + 60 < stop.timestamp() {
                let at = DateTime::from_timestamp(h + 60, 0).unwrap_or(now);
                // The first checks show every outcome within the last day.
                let recent = at > now - Duration::hours(6);
                let status = match (j, recent, k % 4) {
                    (1, true, 1) => CheckStatus::Warning,
                    (1, true, 2) => CheckStatus::Failed,
                    (1, true, 3) => CheckStatus::Error,
                    _ if rng.random_bool(0.9) => CheckStatus::Ok,
                    _ => *pick(
                        rng,
                        &[
                            CheckStatus::Warning,
                            CheckStatus::Failed,
                            CheckStatus::Error,
                        ],
                    ),
                };
                k += 1;
                let value = match status {
                    CheckStatus::Ok => Some(good),
                    CheckStatus::Warning => Some((good + bad) / 2.0),
                    CheckStatus::Failed => Some(bad),
                    CheckStatus::Error => None,
                };
                let message = check_message(
                    status,
                    expectation,
                    Some("délai d'attente de la requête dépassé (30 s)"),
                );
                let result = CheckResult {
                    at,
                    status,
                    value,
                    duration_ms: rng.random_range(15..4000),
                    message,
                };
                results.push(Record {
                    partition: id.to_string(),
                    ts: at.timestamp_millis(),
                    id: format!("r-{id}"),
                    body: to_json(&result),
                });
                runs.push(result);
                h += 3600;
            }
            // Its alerts, derived from its results as collected ones are.
            let mut run = CheckRun::default();
            let check = CheckRef {
                id,
                name,
                instance_id: inst.id,
                instance: &inst.name,
            };
            alerts.extend(
                apply_results(&mut run, &check, &runs)
                    .iter()
                    .map(alert_record),
            );
            let mut body = to_json(Check {
                id,
                name: name.into(),
                description: format!("Contrôle planifié sur {} ({db})", inst.name),
                instance_id: inst.id,
                instance: inst.name.clone(),
                database: db.into(),
                query: query.into(),
                expectation: expectation.into(),
                schedule_minutes: 60,
                enabled,
                last_result: runs.pop(),
            });
            body["alert_run"] = to_json(&run);
            docs.push((key(id), body));
        }
    }
    ctx.stores.docs.put(ctx.tenant.id, CHECKS, docs).await?;
    ctx.stores
        .append_alerts(ctx.tenant.id, ALERTS, alerts)
        .await?;
    ctx.stores
        .series_writes
        .append(ctx.tenant.id, CHECK_RESULTS, results)
        .await
}
