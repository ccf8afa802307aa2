//! Alerts demo data: availability monitors with hourly and daily check counts and their
//! incidents (every state), and SIEM incidents (every state and severity) with actions and
//! correlated events. NetDiag alerts come from the netdiag module.

use std::collections::BTreeMap;

use crate::{MachineKind, SeedCtx};
use chrono::{DateTime, Datelike, Duration, Utc};
use netops_shared::module::BoxFuture;
use netops_shared::store::{Record, StoreResult};
use rand::Rng;
use rand::rngs::StdRng;

use netops_alerts::derive::{incident_severity, wide};
use netops_alerts::model::{
    CHECKS_DAILY, CHECKS_HOURLY, LastCheck, LinkStatus, MONITOR_INCIDENTS, MONITORS, MonitorDoc,
    MonitorIncident, MonitorIncidentKind, MonitorIncidentStatus, MonitorType, SIEM_EVENTS,
    SIEM_INCIDENTS, SiemAction, SiemIncident, SiemSeverity, SiemStatus, num_key,
};
use netops_alerts::monitors::{floor_day, floor_hour};
use netops_security::derive::{SiemEvent, correlated};

mod live;
pub use live::produce;

pub fn seed(ctx: &SeedCtx) -> BoxFuture<'_, StoreResult<()>> {
    Box::pin(async move {
        seed_monitors(ctx).await?;
        seed_siem(ctx).await
    })
}

fn pick<'a, T>(rng: &mut StdRng, items: &'a [T]) -> &'a T {
    &items[rng.random_range(0..items.len())]
}

fn to_value<T: serde::Serialize>(v: &T) -> serde_json::Value {
    serde_json::to_value(v).unwrap_or_default()
}

/// A monitor being generated, with the spans of its incidents.
struct Gen {
    doc: MonitorDoc,
    critical: bool,
    paused_at: Option<DateTime<Utc>>,
    incidents: Vec<MonitorIncident>,
    /// When the incident the seed leaves going on (the last of `incidents`) ends, after the
    /// seed: the producers resolve it then.
    ongoing_end: Option<DateTime<Utc>>,
}

fn monitor_defs(ctx: &SeedCtx) -> Vec<(String, MonitorType, String, &'static str, u32)> {
    let d = ctx.tenant.domain;
    let company = ctx
        .tenant
        .name
        .split(' ')
        .next()
        .unwrap_or("corp")
        .to_lowercase();
    let servers: Vec<_> = ctx
        .machines
        .iter()
        .filter(|m| m.kind == MachineKind::Server)
        .collect();
    let n = 8 + ctx.machines.len() / 10;
    let hq = ctx.tenant.sites[0].code;
    let mut out = vec![
        (
            "Intranet (HTTPS)".to_owned(),
            MonitorType::Http,
            format!("https://intranet.{d}/health"),
            hq,
            60,
        ),
        (
            "Messagerie web".to_owned(),
            MonitorType::Http,
            format!("https://mail.{d}/owa/healthcheck.htm"),
            hq,
            60,
        ),
        (
            "Site public".to_owned(),
            MonitorType::Http,
            format!("https://www.{company}.com/"),
            hq,
            60,
        ),
        (
            "Annuaire LDAP".to_owned(),
            MonitorType::Tcp,
            format!("dc01.{d}:389"),
            hq,
            60,
        ),
        (
            "Résolution DNS interne".to_owned(),
            MonitorType::Dns,
            format!("intranet.{d} @dc01.{d}"),
            hq,
            120,
        ),
        (
            "ERP".to_owned(),
            MonitorType::Http,
            format!("https://erp.{d}/status"),
            hq,
            60,
        ),
        (
            "Relais SMTP".to_owned(),
            MonitorType::Tcp,
            format!("smtp.{d}:25"),
            hq,
            120,
        ),
        (
            "Résolution DNS publique".to_owned(),
            MonitorType::Dns,
            format!("www.{company}.com @1.1.1.1"),
            hq,
            300,
        ),
    ];
    let mut i = 0;
    while out.len() < n {
        let site = &ctx.tenant.sites[i % ctx.tenant.sites.len()];
        let entry = match i % 3 {
            0 => (
                format!("Passerelle {}", site.city),
                MonitorType::Ping,
                format!("10.{}.0.1", site.subnet),
                site.code,
                30,
            ),
            1 if !servers.is_empty() => {
                let s = servers[(i / 3) % servers.len()];
                (
                    format!("Serveur {}", s.hostname),
                    MonitorType::Ping,
                    s.ip.clone(),
                    s.site.code,
                    30,
                )
            }
            _ if !servers.is_empty() => {
                let s = servers[(i / 3) % servers.len()];
                let (svc, port) = if s.os.contains("Ubuntu") {
                    ("SSH", 22)
                } else {
                    ("RDP", 3389)
                };
                (
                    format!("{svc} {}", s.hostname),
                    MonitorType::Tcp,
                    format!("{}:{port}", s.fqdn),
                    s.site.code,
                    60,
                )
            }
            _ => (
                format!("Passerelle {} ({i})", site.city),
                MonitorType::Ping,
                format!("10.{}.1.1", site.subnet),
                site.code,
                30,
            ),
        };
        // Keep names unique when the server list wraps around.
        let name = if out.iter().any(|o| o.0 == entry.0) {
            format!("{} #{}", entry.0, i)
        } else {
            entry.0
        };
        out.push((name, entry.1, entry.2, entry.3, entry.4));
        i += 1;
    }
    out
}

/// Whether monitor `i` is paused: the 7th and every 23rd after it, so both `active` values
/// exist.
fn paused(i: usize) -> bool {
    i % 23 == 6
}

/// The tenant's monitors with what the seed does not draw (active unless paused, up, created
/// at the start, no pause date), by index.
fn monitors(ctx: &SeedCtx) -> Vec<(usize, Gen)> {
    monitor_defs(ctx)
        .into_iter()
        .enumerate()
        .map(|(i, (name, kind, target, site, interval))| {
            let doc = MonitorDoc {
                id: ctx.tenant.id_base + i as i64 + 1,
                name,
                kind,
                target,
                site: site.to_owned(),
                active: !paused(i),
                status: LinkStatus::Up,
                interval_s: interval,
                created_at: ctx.start(),
                last_check: None,
                failing: None,
            };
            let g = Gen {
                doc,
                critical: i < 4 || i % 5 == 0,
                paused_at: None,
                incidents: Vec::new(),
                ongoing_end: None,
            };
            (i, g)
        })
        .collect()
}

/// The monitors (indices) the seed leaves with an ongoing incident, among the `active` ones,
/// each with the kind of its incident where it is fixed (down or not; the others' is drawn).
fn seeded_ongoing(active: &[usize]) -> Vec<(usize, Option<bool>)> {
    let mut out = vec![
        (active[0], Some(true)),
        (active[1 % active.len()], Some(false)),
        (active[2 % active.len()], Some(false)),
        (active[3 % active.len()], Some(true)),
    ];
    out.extend((1..active.len() / 15).map(|k| (active[(k * 15 + 4) % active.len()], None)));
    out
}

fn error_of(kind: MonitorType, down: bool) -> &'static str {
    match (kind, down) {
        (MonitorType::Http, true) => "HTTP 503 Service Unavailable",
        (MonitorType::Http, false) => "temps de réponse > 2 s",
        (MonitorType::Ping, true) => "100 % de paquets perdus",
        (MonitorType::Ping, false) => "35 % de paquets perdus",
        (MonitorType::Tcp, true) => "connexion refusée",
        (MonitorType::Tcp, false) => "connexion lente (> 1 s)",
        (MonitorType::Dns, true) => "SERVFAIL",
        (MonitorType::Dns, false) => "réponse lente (> 800 ms)",
    }
}

/// The monitors as the seed leaves them, with their incidents numbered (the past ones and
/// those going on, each with its end after the seed), and the generator that goes on with
/// the check counts. The producers draw them again from the context the seed had
/// ([`SeedCtx::as_seeded`]) to resolve the incidents going on.
fn generate(ctx: &SeedCtx) -> (Vec<Gen>, StdRng) {
    let mut rng = ctx.rng("monitors");
    let now = ctx.now;
    let start = ctx.start();
    let mut gens: Vec<Gen> = monitors(ctx)
        .into_iter()
        .map(|(i, mut g)| {
            g.paused_at = paused(i)
                .then(|| now - Duration::days(10) - Duration::minutes(rng.random_range(0..600)));
            g.doc.created_at = start - Duration::days(rng.random_range(20..400));
            g
        })
        .collect();

    // Past incidents, resolved, never overlapping on one monitor.
    for g in gens.iter_mut() {
        let end = g.paused_at.unwrap_or(now - Duration::hours(2));
        let span = (end - start).num_minutes().max(60);
        let count = rng.random_range(
            0..=(3 * ctx.days as usize / 30).max(1) + usize::from(g.doc.kind == MonitorType::Ping),
        );
        let mut starts: Vec<i64> = (0..count).map(|_| rng.random_range(0..span)).collect();
        starts.sort_unstable();
        let mut free_from = start;
        for m in starts {
            let s = start + Duration::minutes(m);
            if s < free_from {
                continue;
            }
            let down = rng.random_bool(0.65);
            let dur = Duration::minutes(if down {
                rng.random_range(3..180)
            } else {
                rng.random_range(10..300)
            });
            let resolved = (s + dur).min(end);
            let acked = rng.random_bool(0.5);
            let ack_at = s + Duration::minutes(rng.random_range(1..10)).min(resolved - s);
            g.incidents.push(incident(
                g,
                s,
                Some(resolved),
                down,
                MonitorIncidentStatus::Resolved,
                acked.then_some(ack_at),
                None,
            ));
            free_from = resolved + Duration::minutes(30);
        }
    }

    // Ongoing incidents: every state, on active monitors only.
    let active: Vec<usize> = (0..gens.len())
        .filter(|&i| gens[i].paused_at.is_none())
        .collect();
    let slots = seeded_ongoing(&active);
    let mut ongoing: Vec<(usize, i64, bool, MonitorIncidentStatus, Option<&str>)> = vec![
        (
            slots[0].0,
            25,
            true,
            MonitorIncidentStatus::Unresolved,
            None,
        ),
        (
            slots[1].0,
            190,
            false,
            MonitorIncidentStatus::Acknowledged,
            Some(
                "Lenteurs connues : sauvegarde en cours sur le frontal, surveillé par l'astreinte.",
            ),
        ),
        (
            slots[2].0,
            50,
            false,
            MonitorIncidentStatus::Unresolved,
            None,
        ),
        (
            slots[3].0,
            95,
            true,
            MonitorIncidentStatus::Unresolved,
            Some("Ticket INC-4821 ouvert chez l'hébergeur."),
        ),
    ];
    for &(i, _) in &slots[4..] {
        ongoing.push((
            i,
            rng.random_range(5..600),
            rng.random_bool(0.6),
            MonitorIncidentStatus::Unresolved,
            None,
        ));
    }
    ongoing.sort_by_key(|o| o.0);
    ongoing.dedup_by_key(|o| o.0);
    for (i, minutes, down, status, notes) in ongoing {
        let g = &mut gens[i];
        let s = now - Duration::minutes(minutes);
        g.incidents.retain(|inc| {
            inc.resolved_at
                .is_some_and(|r| r < s - Duration::minutes(30))
        });
        let ack =
            (status == MonitorIncidentStatus::Acknowledged).then(|| s + Duration::minutes(12));
        let inc = incident(g, s, None, down, status, ack, notes.map(str::to_owned));
        g.doc.status = inc.kind.monitor_status();
        g.incidents.push(inc);
        g.ongoing_end = Some(now + Duration::minutes(rng.random_range(15..180)));
    }

    // Numbers in chronological order across the tenant.
    let mut all: Vec<(usize, usize)> = gens
        .iter()
        .enumerate()
        .flat_map(|(gi, g)| (0..g.incidents.len()).map(move |ii| (gi, ii)))
        .collect();
    all.sort_by_key(|&(gi, ii)| (gens[gi].incidents[ii].started_at, gi));
    for (k, (gi, ii)) in all.into_iter().enumerate() {
        let n = ctx.tenant.id_base * 10 + k as i64 + 1;
        let inc = &mut gens[gi].incidents[ii];
        inc.id = n;
        inc.alert_id = format!("hm-{n}");
    }
    (gens, rng)
}

async fn seed_monitors(ctx: &SeedCtx) -> StoreResult<()> {
    let (mut gens, mut rng) = generate(ctx);
    let now = ctx.now;
    let start = ctx.start();

    // Check counts, hourly and daily, consistent with the incidents: one wide row per
    // hour (or day) with the measures `<monitor id>:checks|degraded|down` of every monitor.
    let mut hourly: BTreeMap<i64, BTreeMap<String, f64>> = BTreeMap::new();
    let hourly_from = floor_hour(now - Duration::days(7));
    let mut daily: BTreeMap<i64, BTreeMap<String, f64>> = BTreeMap::new();
    for g in gens.iter_mut() {
        let mut h = floor_hour(start);
        let stop = g.paused_at.unwrap_or(now);
        let per_hour = 3600.0 / f64::from(g.doc.interval_s);
        while h < stop {
            let h_end = (h + Duration::hours(1)).min(stop);
            let checks = (per_hour * (h_end - h).num_seconds() as f64 / 3600.0).round();
            if checks >= 1.0 {
                let (mut down, mut degraded) = (0.0, 0.0);
                for inc in &g.incidents {
                    let s = inc.started_at.max(h);
                    let e = inc.resolved_at.unwrap_or(now).min(h_end);
                    if e > s {
                        let part = checks * (e - s).num_seconds() as f64
                            / (h_end - h).num_seconds().max(1) as f64;
                        if inc.kind == MonitorIncidentKind::Down {
                            down += part.round()
                        } else {
                            degraded += part.round()
                        }
                    }
                }
                if down == 0.0 && rng.random_bool(0.02) {
                    down = 1.0; // a lone failed check, below the incident threshold
                }
                let down = down.min(checks);
                let degraded = degraded.min(checks - down);
                let id = g.doc.id;
                let day = daily.entry(floor_day(h).timestamp_millis()).or_default();
                for (m, v) in [("checks", checks), ("degraded", degraded), ("down", down)] {
                    *day.entry(format!("{id}:{m}")).or_default() += v;
                }
                // Hourly counts are kept for the last week; daily ones for the whole history.
                if h >= hourly_from {
                    let hour = hourly.entry(h.timestamp_millis()).or_default();
                    for (m, v) in [("checks", checks), ("degraded", degraded), ("down", down)] {
                        hour.insert(format!("{id}:{m}"), v);
                    }
                }
            }
            h += Duration::hours(1);
        }
        // Last check.
        let at = match g.paused_at {
            Some(p) => p,
            None => now - Duration::seconds(rng.random_range(0..i64::from(g.doc.interval_s))),
        };
        g.doc.last_check = Some(last_check(&mut rng, ctx, &g.doc, at));
    }
    let (hourly, daily) = (wide(hourly), wide(daily));

    let tenant = ctx.tenant.id;
    let incidents = gens
        .iter()
        .flat_map(|g| g.incidents.iter().map(|i| (num_key(i.id), to_value(i))))
        .collect();
    let monitors = gens
        .iter()
        .map(|g| (num_key(g.doc.id), to_value(&g.doc)))
        .collect();
    ctx.stores.docs.put(tenant, MONITORS, monitors).await?;
    ctx.stores
        .docs
        .put(tenant, MONITOR_INCIDENTS, incidents)
        .await?;
    ctx.stores
        .rollups
        .load(tenant, CHECKS_HOURLY, hourly)
        .await?;
    ctx.stores.rollups.load(tenant, CHECKS_DAILY, daily).await
}

/// The check of `doc` at `at`, in the monitor's status.
fn last_check(rng: &mut StdRng, ctx: &SeedCtx, doc: &MonitorDoc, at: DateTime<Utc>) -> LastCheck {
    let status = doc.status;
    let response_ms = match status {
        LinkStatus::Down => None,
        LinkStatus::Degraded => Some(rng.random_range(1200..4000)),
        LinkStatus::Up => Some(match doc.kind {
            MonitorType::Ping => rng.random_range(1..40),
            MonitorType::Dns => rng.random_range(5..60),
            MonitorType::Http | MonitorType::Tcp => rng.random_range(30..350),
        }),
    };
    let message = match (doc.kind, status) {
        (_, LinkStatus::Down | LinkStatus::Degraded) => {
            error_of(doc.kind, status == LinkStatus::Down).to_owned()
        }
        (MonitorType::Http, _) => "HTTP 200".to_owned(),
        (MonitorType::Ping, _) => "4/4 réponses".to_owned(),
        (MonitorType::Tcp, _) => "connexion établie".to_owned(),
        (MonitorType::Dns, _) => format!("A 10.{}.10.5", ctx.tenant.sites[0].subnet),
    };
    LastCheck {
        at,
        status,
        response_ms,
        message,
    }
}

fn incident(
    g: &Gen,
    started_at: DateTime<Utc>,
    resolved_at: Option<DateTime<Utc>>,
    down: bool,
    status: MonitorIncidentStatus,
    acknowledged_at: Option<DateTime<Utc>>,
    notes: Option<String>,
) -> MonitorIncident {
    MonitorIncident {
        id: 0,
        alert_id: String::new(),
        monitor_id: g.doc.id,
        monitor_name: g.doc.name.clone(),
        target: g.doc.target.clone(),
        kind: if down {
            MonitorIncidentKind::Down
        } else {
            MonitorIncidentKind::Degraded
        },
        severity: incident_severity(g.doc.kind, g.critical, down),
        status,
        started_at,
        resolved_at,
        duration_s: 0,
        error: error_of(g.doc.kind, down).into(),
        acknowledged_by: acknowledged_at.map(|_| "astreinte-noc".into()),
        notes: notes.or_else(|| {
            (acknowledged_at.is_some() && resolved_at.is_some())
                .then(|| "Pris en charge par l'astreinte.".into())
        }),
        acknowledged_at,
    }
}

/// Correlation rules: id, name, title, main event id, severity.
const RULES: &[(&str, &str, &str, u32, SiemSeverity)] = &[
    (
        "R-1001",
        "Force brute sur un compte",
        "Échecs d'authentification répétés",
        4625,
        SiemSeverity::High,
    ),
    (
        "R-1002",
        "Verrouillages en rafale",
        "Verrouillages de compte en rafale",
        4740,
        SiemSeverity::Medium,
    ),
    (
        "R-1003",
        "Ajout à un groupe privilégié",
        "Ajout au groupe Admins du domaine",
        4728,
        SiemSeverity::Critical,
    ),
    (
        "R-1004",
        "Connexion hors horaires",
        "Connexion hors horaires d'un compte",
        4624,
        SiemSeverity::Low,
    ),
    (
        "R-1005",
        "Pulvérisation de mots de passe",
        "Pulvérisation de mots de passe depuis une même adresse",
        4625,
        SiemSeverity::Critical,
    ),
    (
        "R-1006",
        "Effacement du journal de sécurité",
        "Journal de sécurité effacé",
        1102,
        SiemSeverity::High,
    ),
    (
        "R-1007",
        "Compte créé puis supprimé",
        "Compte créé puis supprimé en moins d'une heure",
        4720,
        SiemSeverity::Medium,
    ),
];

const EXTERNAL_IPS: &[&str] = &[
    "185.220.101.47",
    "45.155.205.233",
    "194.26.29.102",
    "91.240.118.172",
    "141.98.11.61",
];

async fn seed_siem(ctx: &SeedCtx) -> StoreResult<()> {
    let incidents = siem_generate(ctx);
    let events = incidents
        .iter()
        .flat_map(|(inc, _)| correlated_events(ctx, inc))
        .collect();
    let docs = incidents
        .into_iter()
        .map(|(inc, _)| (inc.id.clone(), to_value(&inc)))
        .collect();
    ctx.stores
        .docs
        .put(ctx.tenant.id, SIEM_INCIDENTS, docs)
        .await?;
    ctx.stores
        .series_writes
        .append(ctx.tenant.id, SIEM_EVENTS, events)
        .await
}

/// The SIEM incidents as the seed leaves them, each still in progress with the time the
/// analyst resolves it after the seed. The producers draw them again from the context the
/// seed had ([`SeedCtx::as_seeded`]) to resolve them then.
fn siem_generate(ctx: &SeedCtx) -> Vec<(SiemIncident, Option<DateTime<Utc>>)> {
    let mut rng = ctx.rng("siem");
    let now = ctx.now;
    let start = ctx.start();
    // About one correlated incident per 100 machines and day (10 a day for 1,000 machines).
    let count = (ctx.days as usize * ctx.machines.len() / 100).max(12);
    let span = (now - start).num_minutes().max(60);
    // Opening times, newest first: the first ones get the in-progress states.
    let mut opened: Vec<DateTime<Utc>> = (0..count)
        .map(|k| match k {
            0..=5 => now - Duration::minutes(rng.random_range(20..(36 * 60))),
            _ => start + Duration::minutes(rng.random_range(0..span)),
        })
        .collect();
    opened.sort_unstable_by(|a, b| b.cmp(a));
    let people: Vec<&str> = ctx.people().map(|a| a.login.as_str()).collect();
    let admins: Vec<&str> = ctx
        .accounts
        .iter()
        .filter(|a| a.admin && !a.service)
        .map(|a| a.login.as_str())
        .collect();
    let servers: Vec<_> = ctx
        .machines
        .iter()
        .filter(|m| m.kind == MachineKind::Server)
        .collect();
    let dc = servers
        .first()
        .map(|m| m.hostname.clone())
        .unwrap_or_else(|| ctx.machines[0].hostname.clone());
    let seq_base = ctx.tenant.id_base / 10;
    // Three incidents carry more than 200 events, so "last 200" matters.
    let big: Vec<usize> = vec![1, 7.min(count - 1), count / 2];

    let mut out = Vec::new();
    // Oldest gets the lowest number.
    for (rank, at) in opened.iter().enumerate() {
        let k = count - rank;
        let id = format!("{}-{:04}", at.year(), seq_base as usize + k);
        let rule = RULES[if rank < RULES.len() {
            rank
        } else {
            rng.random_range(0..RULES.len())
        }];
        let age = now - *at;
        let status = match rank {
            0 | 1 | 4 => SiemStatus::Open,
            2 => SiemStatus::Acknowledged,
            3 => SiemStatus::Investigating,
            5 => SiemStatus::Resolved,
            6 => SiemStatus::Closed,
            _ if age < Duration::days(2) => *pick(
                &mut rng,
                &[
                    SiemStatus::Open,
                    SiemStatus::Acknowledged,
                    SiemStatus::Investigating,
                    SiemStatus::Resolved,
                ],
            ),
            _ => *pick(
                &mut rng,
                &[SiemStatus::Resolved, SiemStatus::Closed, SiemStatus::Closed],
            ),
        };
        let n_events: u64 = if big.contains(&rank) {
            rng.random_range(220..400)
        } else {
            rng.random_range(3..60)
        };
        let victim = *pick(&mut rng, &people);
        let host = pick(&mut rng, &ctx.machines).clone();
        let (accounts, hosts, source_ips): (Vec<String>, Vec<String>, Vec<String>) = match rule.0 {
            "R-1005" => (
                (0..rng.random_range(4..9))
                    .map(|_| pick(&mut rng, &people).to_string())
                    .collect::<std::collections::BTreeSet<_>>()
                    .into_iter()
                    .collect(),
                vec![dc.clone()],
                vec![pick(&mut rng, EXTERNAL_IPS).to_string()],
            ),
            "R-1001" => (
                vec![victim.into()],
                vec![dc.clone(), host.hostname.clone()],
                vec![pick(&mut rng, EXTERNAL_IPS).to_string()],
            ),
            "R-1003" | "R-1007" => (
                vec![pick(&mut rng, &admins).to_string(), victim.into()],
                vec![dc.clone()],
                vec![host.ip.clone()],
            ),
            _ => (
                vec![victim.into()],
                vec![host.hostname.clone()],
                vec![host.ip.clone()],
            ),
        };
        // Actions by state.
        let analyst = admins.first().copied().unwrap_or("administrateur");
        let mut actions = vec![SiemAction {
            at: *at,
            by: "correlation".into(),
            action: "open".into(),
            note: Some(format!("Règle {} déclenchée", rule.0)),
        }];
        let step = |m: i64| *at + Duration::minutes(m).min(age.max(Duration::minutes(1)));
        let mut closed_at = None;
        if status != SiemStatus::Open {
            actions.push(SiemAction {
                at: step(8),
                by: analyst.into(),
                action: "ack".into(),
                note: Some("Pris en charge.".into()),
            });
        }
        if matches!(
            status,
            SiemStatus::Investigating | SiemStatus::Resolved | SiemStatus::Closed
        ) {
            actions.push(SiemAction {
                at: step(25),
                by: analyst.into(),
                action: "investigate".into(),
                note: Some("Analyse des journaux du contrôleur de domaine.".into()),
            });
        }
        if matches!(status, SiemStatus::Resolved | SiemStatus::Closed) {
            let t = step(rng.random_range(60..600));
            actions.push(SiemAction {
                at: t,
                by: analyst.into(),
                action: "resolve".into(),
                note: Some("Mot de passe réinitialisé, adresse bloquée sur le pare-feu.".into()),
            });
            closed_at = Some(t);
        }
        if status == SiemStatus::Closed {
            let t = step(rng.random_range(600..2000));
            actions.push(SiemAction {
                at: t,
                by: analyst.into(),
                action: "close".into(),
                note: None,
            });
            closed_at = Some(t);
        }
        let updated_at = actions.last().map(|a| a.at).unwrap_or(*at);
        let inc = SiemIncident {
            id: id.clone(),
            title: rule.2.to_owned(),
            severity: rule.4,
            status,
            rule_id: rule.0.to_owned(),
            rule_name: rule.1.to_owned(),
            opened_at: *at,
            updated_at,
            closed_at,
            accounts,
            hosts,
            source_ips,
            event_count: n_events,
            actions,
        };
        let resolve_at = matches!(
            status,
            SiemStatus::Open | SiemStatus::Acknowledged | SiemStatus::Investigating
        )
        .then(|| live::seeded_siem_resolved(ctx, &mut rng, now));
        out.push((inc, resolve_at));
    }
    out
}

/// The events that an incident correlates, before and after its opening (drawn from the
/// incident's own generator).
fn correlated_events(ctx: &SeedCtx, inc: &SiemIncident) -> Vec<Record> {
    let mut rng = ctx.rng(&format!("siem-events/{}", inc.id));
    let Some(rule) = RULES.iter().find(|r| r.0 == inc.rule_id) else {
        return Vec::new();
    };
    let (id, at, now) = (&inc.id, &inc.opened_at, ctx.now);
    let (accounts, hosts, source_ips) = (&inc.accounts, &inc.hosts, &inc.source_ips);
    let mut events = Vec::new();
    // Correlated events, before and after the opening.
    let ev_from = *at - Duration::minutes(30);
    let ev_to = inc
        .closed_at
        .unwrap_or(now)
        .min(*at + Duration::hours(2))
        .max(*at + Duration::minutes(1));
    let ev_span = (ev_to - ev_from).num_milliseconds().max(1);
    for e in 0..inc.event_count {
        let ts = ev_from + Duration::milliseconds(rng.random_range(0..ev_span));
        let account = pick(&mut rng, accounts).clone();
        let host = pick(&mut rng, hosts).clone();
        let ip = pick(&mut rng, source_ips).clone();
        let event_id = if rule.0 == "R-1001" && e % 10 == 9 {
            4740
        } else {
            rule.3
        };
        events.push(siem_event(id, e, ts, event_id, [&account, &host, &ip]));
    }
    events
}

/// The `e`th event correlated by incident `incident`: event `event_id` of the Windows
/// security log, of an account on a host from an address, as the rules' correlation writes
/// it ([`netops_security::derive::correlated`]).
fn siem_event(
    incident: &str,
    e: u64,
    ts: DateTime<Utc>,
    event_id: u32,
    [account, host, ip]: [&str; 3],
) -> Record {
    let event = SiemEvent {
        at: ts,
        event_id,
        account: Some(account.to_owned()),
        subject: None,
        host: Some(host.to_owned()),
        source_ip: Some(ip.to_owned()),
        source_host: None,
        logon_type: None,
        group: None,
        privileged: false,
        service_account: false,
    };
    correlated(incident, format!("{incident}-{e:05}"), &event)
}
