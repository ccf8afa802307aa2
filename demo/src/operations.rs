//! Operations demo data: maintenance windows (past, active, planned; covering all, some or
//! none of the probes), heartbeats in every state, profiles of format profile/1 with their
//! verification trace, and deployments whose observed state gives every comparison result.

use crate::{MachineKind, Produced, SeedCtx, rng_for};
use chrono::{DateTime, Duration, Utc};
use netops_shared::module::BoxFuture;
use netops_shared::store::StoreResult;
use rand::Rng;
use serde_json::{Map, Value, json};

use netops_operations::model::*;

/// Documents to put: key and body.
type Docs = Vec<(String, Value)>;
/// A maintenance window to generate: title, description, start, hours, probes.
type WindowDef = (&'static str, String, DateTime<Utc>, i64, Vec<String>);
/// A profile to generate: name, description, os, version, items, machines it applies to.
type ProfileDef = (
    &'static str,
    &'static str,
    ProfileOs,
    u32,
    Vec<ProfileItem>,
    MachineKind,
);

pub fn seed(ctx: &SeedCtx) -> BoxFuture<'_, StoreResult<()>> {
    Box::pin(async move {
        let t = ctx.tenant.id;
        ctx.stores
            .docs
            .put(t, MAINTENANCE, maintenance(ctx))
            .await?;
        ctx.stores.docs.put(t, HEARTBEATS, heartbeats(ctx)).await?;
        let (profiles, deployments) = profiles(ctx);
        let docs = profiles.iter().map(|p| doc(p.id, p)).collect();
        ctx.stores.docs.put(t, PROFILES, docs).await?;
        netops_operations::deployments::put(ctx.stores.docs.as_ref(), t, &profiles, deployments)
            .await
    })
}

fn doc<T: serde::Serialize>(id: i64, v: &T) -> (String, Value) {
    (num_key(id), serde_json::to_value(v).unwrap_or_default())
}

fn maintenance(ctx: &SeedCtx) -> Docs {
    let now = ctx.now;
    let hosts = |pred: &dyn Fn(&crate::MachineSeed) -> bool| -> Vec<String> {
        ctx.machines
            .iter()
            .filter(|m| pred(m))
            .map(|m| m.hostname.clone())
            .collect()
    };
    let site0 = ctx.tenant.sites[0].code;
    let site1 = &ctx.tenant.sites[1 % ctx.tenant.sites.len()];
    let servers = hosts(&|m| m.kind == MachineKind::Server && m.site.code == site0);
    let gone = vec![format!("{}-OLD-0001", site0), format!("{}-OLD-0002", site0)];
    let admin = ctx
        .accounts
        .first()
        .map(|a| a.login.clone())
        .unwrap_or_default();
    let defs: Vec<WindowDef> = vec![
        (
            "Mise à jour du cœur de réseau",
            "Remplacement des commutateurs de cœur ; coupures brèves attendues sur tout le réseau."
                .into(),
            now - Duration::hours(2),
            6,
            vec![],
        ),
        (
            "Correctifs mensuels des serveurs",
            format!(
                "Redémarrage des serveurs de {} après les correctifs Windows.",
                site0
            ),
            now - Duration::minutes(40),
            3,
            servers.iter().take(4).cloned().collect(),
        ),
        (
            "Migration du lien WAN",
            format!("Bascule du lien opérateur du site de {}.", site1.city),
            now + Duration::days(2),
            4,
            hosts(&|m| m.site.code == site1.code),
        ),
        (
            "Décommissionnement des anciens serveurs",
            "Arrêt définitif des serveurs remplacés.".into(),
            now + Duration::days(5),
            2,
            gone.clone(),
        ),
        (
            "Maintenance électrique du datacenter",
            "Bascule sur groupe électrogène.".into(),
            now - Duration::days(9),
            5,
            vec![],
        ),
        (
            "Ancienne fenêtre de test",
            "Essais de la supervision sur des sondes retirées depuis.".into(),
            now - Duration::days(21),
            1,
            gone,
        ),
    ];
    defs.into_iter()
        .enumerate()
        .map(|(i, (title, description, starts_at, hours, probes))| {
            let id = ctx.tenant.id_base + i as i64 + 1;
            doc(
                id,
                &MaintenanceDoc {
                    id,
                    title: title.into(),
                    description,
                    starts_at,
                    ends_at: starts_at + Duration::hours(hours),
                    probes,
                    created_by: admin.clone(),
                },
            )
        })
        .collect()
}

/// The heartbeats as of now, when a batch ends now. No API write changes a heartbeat.
pub fn produce(ctx: &SeedCtx, _from: DateTime<Utc>, to: DateTime<Utc>) -> Produced {
    Produced {
        docs: if to < ctx.now {
            Vec::new()
        } else {
            vec![(HEARTBEATS.to_owned(), heartbeats(ctx))]
        },
        ..Produced::default()
    }
}

/// The scheduled jobs: name, period and grace (seconds).
const JOBS: [(&str, i64, i64); 8] = [
    ("Sauvegarde nocturne SQL", 86_400, 3_600),
    ("Export comptable", 86_400, 1_800),
    ("Purge des journaux", 86_400, 7_200),
    ("Renouvellement des certificats", 604_800, 86_400),
    ("Synchronisation de l'annuaire", 3_600, 600),
    ("Réplication des fichiers", 900, 300),
    ("Inventaire logiciel", 21_600, 1_800),
    ("Sauvegarde des configurations réseau", 86_400, 3_600),
];

/// How far back a job's runs are looked at for its last signal: a job that missed this many
/// runs in a row (about 0.03^48) is taken as never having signalled.
const RUNS_BACK: i64 = 48;

/// What the first heartbeats do whatever the time, so every state shows: the first always
/// succeeds, the second always fails, the third stopped signalling a while before the seed,
/// the fourth never ran. The others run on schedule and now and then fail (their next run
/// succeeds again) or miss a run (late until the next one signals).
#[derive(Clone, Copy)]
enum Habit {
    Succeeds,
    Fails,
    Stopped,
    NeverRan,
    Usual,
}

impl Habit {
    fn of(i: usize) -> Self {
        match i {
            0 => Habit::Succeeds,
            1 => Habit::Fails,
            2 => Habit::Stopped,
            3 => Habit::NeverRan,
            _ => Habit::Usual,
        }
    }
}

/// Each heartbeat's last signal as of `ctx.now`. A job runs every period at a phase of its own
/// and signals at the end of its run; each run is drawn from its own generator, so a job's
/// history is the same whenever it is looked at (the seed's heartbeats are the producer's at
/// the seed's time).
fn heartbeats(ctx: &SeedCtx) -> Docs {
    let mut rng = ctx.rng("heartbeats");
    let servers: Vec<_> = ctx
        .machines
        .iter()
        .filter(|m| m.kind == MachineKind::Server)
        .collect();
    let n = JOBS.len() + servers.len() / 4;
    (0..n)
        .map(|i| {
            let (name, period, grace) = JOBS[i % JOBS.len()];
            let host = servers
                .get(i % servers.len().max(1))
                .map(|m| m.hostname.clone())
                .unwrap_or_else(|| ctx.machines[0].hostname.clone());
            let name = if i < JOBS.len() {
                name.to_owned()
            } else {
                format!("{name} ({host})")
            };
            let habit = Habit::of(i);
            // Drawn for every job, so each keeps its phase whatever the others' habits.
            let drawn = rng.random_range(0..period);
            // The one that always succeeds and the one that always fails (daily jobs) ran
            // half an hour before the seed: data no producer moves on (the API suite's shared
            // store) keeps their states for a day.
            let phase = match habit {
                Habit::Succeeds | Habit::Fails => {
                    (ctx.seeded_at.timestamp() - 1_800).rem_euclid(period)
                }
                _ => drawn,
            };
            let schedule = Schedule {
                index: i,
                habit,
                period,
                grace,
                phase,
            };
            // The stopped job is seen as it was when it last ran: late by more than its grace
            // and an hour and a half at the seed, and later every day since.
            let at = match schedule.habit {
                Habit::Stopped => ctx.seeded_at - Duration::seconds(period + grace + 5_400),
                _ => ctx.now,
            };
            let last = match schedule.habit {
                Habit::NeverRan => None,
                _ => schedule.last_run(ctx, at),
            };
            let id = ctx.tenant.id_base + i as i64 + 1;
            doc(
                id,
                &HeartbeatDoc {
                    id,
                    name,
                    hostname: host,
                    period_s: period,
                    grace_s: grace,
                    last_signal_at: last.map(|(t, _, _)| t),
                    exit_code: last.map(|(_, code, _)| code),
                    last_duration_s: last.map(|(_, _, d)| d),
                },
            )
        })
        .collect()
}

/// When a job runs: every `period` seconds from `phase`, each run within `grace` seconds (so
/// a job that runs is never late), job `index` of the tenant.
struct Schedule {
    index: usize,
    habit: Habit,
    period: i64,
    grace: i64,
    phase: i64,
}

impl Schedule {
    /// The last run that signalled by `at`: when it signalled, its exit code and duration.
    fn last_run(&self, ctx: &SeedCtx, at: DateTime<Utc>) -> Option<(DateTime<Utc>, i32, i64)> {
        let newest = (at.timestamp() - self.phase).div_euclid(self.period);
        for k in (newest - RUNS_BACK + 1..=newest).rev() {
            let label = format!("heartbeat/{}/{k}", self.index);
            let mut rng = rng_for(ctx.seed, ctx.tenant.id, &label);
            let longest = (self.period / 2).min(self.grace).clamp(5, 1_800);
            let duration = rng.random_range(4..longest);
            let roll: f64 = rng.random();
            let start = k * self.period + self.phase;
            let Some(signalled) = DateTime::from_timestamp(start + duration, 0) else {
                continue;
            };
            let code = match self.habit {
                _ if signalled > at => continue,         // still running
                Habit::Usual if roll < 0.03 => continue, // missed
                Habit::Usual if roll < 0.08 => 1,
                Habit::Fails => 2,
                _ => 0,
            };
            return Some((signalled, code, duration));
        }
        None
    }
}

fn obj(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

fn item(key: &str, kind: ItemType, target: &str, since: u32, expected: Value) -> ProfileItem {
    ProfileItem {
        key: key.into(),
        kind,
        target: target.into(),
        since_version: since,
        expected: obj(expected),
    }
}

/// Profiles: name, description, os, version, items, machines they apply to.
fn profile_defs(ctx: &SeedCtx) -> Vec<ProfileDef> {
    let d = ctx.tenant.domain;
    vec![
        (
            "Poste de travail Windows standard",
            "Durcissement et services attendus sur les postes Windows.",
            ProfileOs::Windows,
            4,
            vec![
                item(
                    "svc-windows-update",
                    ItemType::Service,
                    "wuauserv",
                    1,
                    json!({"start_mode": "manual", "state": "running"}),
                ),
                item(
                    "svc-remote-registry",
                    ItemType::Service,
                    "RemoteRegistry",
                    1,
                    json!({"start_mode": "disabled", "state": "stopped"}),
                ),
                item(
                    "fw-block-smb-in",
                    ItemType::FirewallRule,
                    "Bloquer SMB entrant",
                    1,
                    json!({"enabled": true, "action": "block", "port": 445}),
                ),
                item(
                    "reg-lsa-protection",
                    ItemType::Registry,
                    r"HKLM\SYSTEM\CurrentControlSet\Control\Lsa\RunAsPPL",
                    2,
                    json!({"value": 1}),
                ),
                item(
                    "pkg-agent",
                    ItemType::Package,
                    "netops-agent",
                    2,
                    json!({"version": "4.12.3"}),
                ),
                item(
                    "set-screen-lock",
                    ItemType::Setting,
                    "Verrouillage de session",
                    3,
                    json!({"timeout_s": 600}),
                ),
                item(
                    "file-hosts",
                    ItemType::File,
                    r"C:\Windows\System32\drivers\etc\hosts",
                    3,
                    json!({"sha256": "5f2b7c1e0d9a"}),
                ),
                item(
                    "reg-smb1-off",
                    ItemType::Registry,
                    r"HKLM\SYSTEM\CurrentControlSet\Services\LanmanServer\Parameters\SMB1",
                    4,
                    json!({"value": 0}),
                ),
            ],
            MachineKind::Laptop,
        ),
        (
            "Serveur Windows durci",
            "Base de sécurité des serveurs Windows.",
            ProfileOs::Windows,
            2,
            vec![
                item(
                    "svc-spooler",
                    ItemType::Service,
                    "Spooler",
                    1,
                    json!({"start_mode": "disabled", "state": "stopped"}),
                ),
                item(
                    "fw-rdp-admin",
                    ItemType::FirewallRule,
                    "RDP depuis le VLAN d'administration",
                    1,
                    json!({"enabled": true, "action": "allow", "port": 3389}),
                ),
                item(
                    "set-ntp",
                    ItemType::Setting,
                    "Serveur de temps",
                    1,
                    json!({"server": format!("dc01.{d}")}),
                ),
                item(
                    "pkg-agent",
                    ItemType::Package,
                    "netops-agent",
                    2,
                    json!({"version": "4.12.3"}),
                ),
            ],
            MachineKind::Server,
        ),
        (
            "Poste fixe — bureautique",
            "Réglages des postes fixes partagés.",
            ProfileOs::Windows,
            1,
            vec![
                item(
                    "set-power",
                    ItemType::Setting,
                    "Mise en veille",
                    1,
                    json!({"sleep_after_s": 3600}),
                ),
                item(
                    "pkg-office",
                    ItemType::Package,
                    "Microsoft 365 Apps",
                    1,
                    json!({"channel": "monthly"}),
                ),
                item(
                    "svc-windows-update",
                    ItemType::Service,
                    "wuauserv",
                    1,
                    json!({"start_mode": "manual", "state": "running"}),
                ),
            ],
            MachineKind::Workstation,
        ),
    ]
}

fn profiles(ctx: &SeedCtx) -> (Vec<ProfileDoc>, Vec<DeploymentDoc>) {
    let mut rng = ctx.rng("profiles");
    let now = ctx.now;
    let author = ctx
        .accounts
        .first()
        .map(|a| a.login.clone())
        .unwrap_or_default();
    let mut profiles = Vec::new();
    let mut deployments = Vec::new();
    let mut dep_no = 0i64;
    for (p, (name, description, os, version, items, kind)) in
        profile_defs(ctx).into_iter().enumerate()
    {
        let id = ctx.tenant.id_base + p as i64 + 1;
        let updated_at = now - Duration::days(3 + 11 * p as i64);
        let mut trace = vec![TraceStep {
            step: 1,
            at: updated_at,
            item: None,
            check: "format profile/1 et schéma du document".into(),
            result: StepResult::Ok,
            detail: format!("{} éléments, version {version}", items.len()),
        }];
        for it in &items {
            let warn = it.kind == ItemType::FirewallRule && p == 0;
            trace.push(TraceStep {
                step: trace.len() as u32 + 1,
                at: updated_at + Duration::seconds(trace.len() as i64),
                item: Some(it.key.clone()),
                check: format!("cohérence de l'élément {} ({})", it.key, it.kind.as_str()),
                result: if warn {
                    StepResult::Warning
                } else {
                    StepResult::Ok
                },
                detail: if warn {
                    "règle en doublon avec la stratégie de groupe du domaine".into()
                } else {
                    "valeurs attendues valides".into()
                },
            });
        }
        let warnings = trace.iter().any(|s| s.result == StepResult::Warning);
        let profile = ProfileDoc {
            format: "profile/1".into(),
            id,
            name: name.into(),
            description: description.into(),
            os,
            version,
            author: author.clone(),
            created_at: updated_at - Duration::days(120),
            updated_at,
            verification: Verification {
                verified_at: updated_at + Duration::minutes(2),
                result: if warnings {
                    VerificationResult::PassedWithWarnings
                } else {
                    VerificationResult::Passed
                },
                trace,
            },
            items,
        };
        // Deployments on every machine of the profile's kind: as many as the fleet has, which
        // the answers show a page of (`handlers::list_profiles`).
        let targets: Vec<_> = ctx.machines.iter().filter(|m| m.kind == kind).collect();
        for (k, m) in targets.iter().enumerate() {
            dep_no += 1;
            let dep_id = ctx.tenant.id_base * 10 + dep_no;
            // The first deployment of the first profile shows every comparison result.
            let showcase = p == 0 && k == 0;
            let deployed_version = if showcase || rng.random_bool(0.2) {
                version.saturating_sub(1).max(1)
            } else {
                version
            };
            let failed = !showcase && rng.random_bool(0.05);
            let observed_at = (showcase || (!failed && (m.online || k % 3 != 0)))
                .then(|| now - Duration::minutes(rng.random_range(5..600)));
            let mut observed = Map::new();
            if observed_at.is_some() {
                for (j, it) in profile.items.iter().enumerate() {
                    if it.since_version > deployed_version {
                        continue;
                    }
                    let mut fields = it.expected.clone();
                    let entry = match (showcase, j) {
                        (true, 0) => {
                            fields.insert("state".into(), json!("stopped"));
                            json!({"present": true, "fields": fields})
                        }
                        (true, 1) => json!({"present": false}),
                        (true, 2) => {
                            json!({"error": "lecture du pare-feu refusée (accès insuffisant)"})
                        }
                        _ if rng.random_bool(0.06) => {
                            if let Some((f, _)) = it.expected.iter().next() {
                                let f = f.clone();
                                fields.insert(f, json!("modifié localement"));
                            }
                            json!({"present": true, "fields": fields})
                        }
                        _ if rng.random_bool(0.03) => json!({"present": false}),
                        _ => json!({"present": true, "fields": fields}),
                    };
                    observed.insert(it.key.clone(), entry);
                }
            }
            deployments.push(DeploymentDoc {
                id: dep_id,
                profile_id: id,
                profile_version: deployed_version,
                hostname: m.hostname.clone(),
                deployed_at: updated_at
                    - Duration::days(if deployed_version < version { 20 } else { 0 })
                    + Duration::hours(rng.random_range(1..48)),
                deployed_by: author.clone(),
                status: if failed {
                    DeploymentStatus::Failed
                } else {
                    DeploymentStatus::Deployed
                },
                observed_at,
                observed,
            });
        }
        profiles.push(profile);
    }
    (profiles, deployments)
}
