//! Security demo data, from the roster's machines and accounts: directory logons (daily
//! work, server access, service accounts, brute force and password spray bursts), lockouts
//! with the failures that caused them, account changes of every type, anomalies, the logon
//! graph and the tenant's rules. SIEM incidents are written by the alerts module.

use std::collections::BTreeMap;

use chrono::{DateTime, Duration, Utc};
use netops_shared::demo::{Account, MachineKind, MachineSeed, SeedCtx};
use netops_shared::module::BoxFuture;
use netops_shared::store::{Record, StoreResult};
use rand::Rng;
use rand::rngs::StdRng;
use serde::Serialize;
use serde_json::{Value, json};

use crate::model::*;

fn json(v: impl Serialize) -> Value {
    serde_json::to_value(v).unwrap_or_default()
}

fn pick<'a, T>(rng: &mut StdRng, items: &'a [T]) -> &'a T {
    &items[rng.random_range(0..items.len())]
}

const BAD_PASSWORD: &str = "0xC000006A (mot de passe incorrect)";
const UNKNOWN_USER: &str = "0xC0000064 (nom d'utilisateur inconnu)";
const LOCKED: &str = "0xC0000234 (compte verrouillé)";

struct Gen<'a> {
    ctx: &'a SeedCtx,
    rng: StdRng,
    domain: String,
    dc: String,
    seq: u64,
    logons: Vec<Record>,
    lockouts: Vec<Record>,
    changes: Vec<Record>,
    anomalies: Vec<Record>,
    /// (account, host) -> edge of the logon graph.
    edges: BTreeMap<(String, String), GraphEdge>,
}

impl Gen<'_> {
    fn id(&mut self, prefix: &str) -> String {
        self.seq += 1;
        format!("{prefix}-{:09}", self.seq)
    }

    /// A time on day `day` before now (0 = the last 24 hours).
    fn at(&mut self, day: i64) -> DateTime<Utc> {
        self.ctx.now - Duration::seconds(day * 86_400 + self.rng.random_range(60..86_400))
    }

    #[allow(clippy::too_many_arguments)]
    fn logon(
        &mut self,
        ts: DateTime<Utc>,
        user: &str,
        logon_type: u32,
        source: Option<&MachineSeed>,
        source_ip: Option<&str>,
        target: &MachineSeed,
        failure: Option<&str>,
    ) {
        if ts >= self.ctx.now {
            return;
        }
        let id = self.id("lg");
        let logon = Logon {
            id: id.clone(),
            ts,
            event_id: if failure.is_some() { 4625 } else { 4624 },
            result: if failure.is_some() {
                LogonResult::Failure
            } else {
                LogonResult::Success
            },
            user: user.into(),
            domain: self.domain.clone(),
            logon_type,
            source_host: source.map(|m| m.hostname.clone()),
            source_ip: source_ip
                .map(str::to_owned)
                .or_else(|| source.map(|m| m.ip.clone()))
                .unwrap_or_else(|| "-".into()),
            target_host: target.hostname.clone(),
            auth_package: if logon_type == 3 && failure.is_none() {
                "Kerberos"
            } else {
                "NTLM"
            }
            .into(),
            failure_reason: failure.map(str::to_owned),
            dc: self.dc.clone(),
        };
        if ts >= self.ctx.now - Duration::days(30) {
            let edge = self
                .edges
                .entry((user.to_owned(), target.hostname.clone()))
                .or_insert_with(|| GraphEdge {
                    host: target.hostname.clone(),
                    server: target.kind == MachineKind::Server,
                    success: 0,
                    failure: 0,
                    last_at: ts,
                });
            if failure.is_some() {
                edge.failure += 1;
            } else {
                edge.success += 1;
            }
            edge.last_at = edge.last_at.max(ts);
        }
        self.logons.push(Record {
            partition: target.hostname.clone(),
            ts: ts.timestamp_millis(),
            id,
            body: json(logon),
        });
    }

    fn lockout(
        &mut self,
        ts: DateTime<Utc>,
        locked: bool,
        user: &str,
        caller: Option<&str>,
        author: Option<&str>,
    ) {
        if ts >= self.ctx.now {
            return;
        }
        let id = self.id("lk");
        let body = json(Lockout {
            id: id.clone(),
            ts,
            event_id: if locked { 4740 } else { 4767 },
            action: if locked {
                LockoutAction::Locked
            } else {
                LockoutAction::Unlocked
            },
            user: user.into(),
            caller_host: caller.map(str::to_owned),
            author: author.map(str::to_owned),
            dc: self.dc.clone(),
        });
        self.lockouts.push(Record {
            partition: user.into(),
            ts: ts.timestamp_millis(),
            id,
            body,
        });
    }

    #[allow(clippy::too_many_arguments)]
    fn change(
        &mut self,
        ts: DateTime<Utc>,
        event_id: u32,
        kind: ChangeType,
        action: &str,
        author: &str,
        target: Option<String>,
        object: Option<String>,
        details: String,
    ) {
        let id = self.id("ch");
        let body = json(AccountChange {
            id: id.clone(),
            ts,
            event_id,
            kind,
            action: action.into(),
            author: author.into(),
            target,
            object,
            details,
            dc: self.dc.clone(),
        });
        self.changes.push(Record {
            partition: kind.as_str().into(),
            ts: ts.timestamp_millis(),
            id,
            body,
        });
    }
}

pub fn seed(ctx: &SeedCtx) -> BoxFuture<'_, StoreResult<()>> {
    Box::pin(async move {
        let machines = &ctx.machines;
        let desktops: Vec<&MachineSeed> = machines
            .iter()
            .filter(|m| m.kind != MachineKind::Server)
            .collect();
        let servers: Vec<&MachineSeed> = machines
            .iter()
            .filter(|m| m.kind == MachineKind::Server)
            .collect();
        let (Some(&dc), Some(&first_desktop)) = (servers.first(), desktops.first()) else {
            return Ok(());
        };
        let file_servers: Vec<&MachineSeed> = servers.iter().copied().take(3).collect();
        let people: Vec<&Account> = ctx.people().collect();
        let admins: Vec<&Account> = people.iter().copied().filter(|a| a.admin).collect();
        let services: Vec<&Account> = ctx.accounts.iter().filter(|a| a.service).collect();
        let helpdesk = admins
            .get(1)
            .or(admins.first())
            .map(|a| a.login.clone())
            .unwrap_or_default();
        let mut g = Gen {
            ctx,
            rng: ctx.rng("security"),
            domain: ctx
                .tenant
                .domain
                .split('.')
                .next()
                .unwrap_or("CORP")
                .to_uppercase(),
            dc: dc.hostname.clone(),
            seq: 0,
            logons: Vec::new(),
            lockouts: Vec::new(),
            changes: Vec::new(),
            anomalies: Vec::new(),
            edges: BTreeMap::new(),
        };
        let days = i64::from(ctx.days.max(1));
        let n = machines.len();
        for day in 0..days {
            // Owners on their machine, then on a file server.
            for m in &desktops {
                let Some(user) = &m.user else { continue };
                for _ in 0..g.rng.random_range(1..3) {
                    let ts = g.at(day);
                    let t = *pick(&mut g.rng, &[2, 7, 11]);
                    g.logon(ts, user, t, Some(m), None, m, None);
                }
                if g.rng.random_bool(0.07) {
                    let ts = g.at(day);
                    g.logon(ts, user, 2, Some(m), None, m, Some(BAD_PASSWORD));
                }
                let fs = *pick(&mut g.rng, &file_servers);
                let ts = g.at(day);
                g.logon(ts, user, 3, Some(m), None, fs, None);
            }
            // Other accounts on shared machines.
            for _ in 0..n / 2 {
                let who = pick(&mut g.rng, &people).login.clone();
                let m = *pick(&mut g.rng, &desktops);
                let ts = g.at(day);
                let fail = g.rng.random_bool(0.05).then_some(BAD_PASSWORD);
                g.logon(ts, &who, 2, Some(m), None, m, fail);
                if fail.is_none() {
                    let fs = *pick(&mut g.rng, &file_servers);
                    g.logon(ts + Duration::seconds(40), &who, 3, Some(m), None, fs, None);
                }
            }
            // Servers: the backup service, and administrators over RDP.
            for s in &servers {
                if let Some(svc) = services.first() {
                    let ts =
                        ctx.now - Duration::seconds(day * 86_400 + g.rng.random_range(60..3600));
                    g.logon(ts, &svc.login, 5, Some(s), Some("127.0.0.1"), s, None);
                }
                if !admins.is_empty() && g.rng.random_bool(0.3) {
                    let admin = pick(&mut g.rng, &admins).login.clone();
                    let from = *pick(&mut g.rng, &desktops);
                    let ts = g.at(day);
                    g.logon(ts, &admin, 10, Some(from), None, s, None);
                }
            }
            // Lockouts: failures on the DC from the user's machine, then 4740 and often 4767.
            for k in 0..(n / 30).max(1) {
                let m = *pick(&mut g.rng, &desktops);
                let who = match (day, k, admins.first()) {
                    (2, 0, Some(a)) => a.login.clone(),
                    _ => m
                        .user
                        .clone()
                        .unwrap_or_else(|| pick(&mut g.rng, &people).login.clone()),
                };
                let ts = g.at(day);
                for i in 0..5 {
                    g.logon(
                        ts - Duration::seconds(50 - i * 10),
                        &who,
                        3,
                        Some(m),
                        None,
                        dc,
                        Some(BAD_PASSWORD),
                    );
                }
                g.logon(
                    ts + Duration::seconds(5),
                    &who,
                    3,
                    Some(m),
                    None,
                    dc,
                    Some(LOCKED),
                );
                g.lockout(ts, true, &who, Some(&m.hostname), None);
                if g.rng.random_bool(0.75) {
                    let later = ts + Duration::minutes(g.rng.random_range(10..90));
                    g.lockout(later, false, &who, None, Some(&helpdesk));
                }
            }
            // Brute force from outside against a server, every third day and today.
            if day % 3 == 0 {
                let target = servers[(day as usize / 3) % servers.len()];
                let ip = format!("185.220.101.{}", g.rng.random_range(2..250));
                let user = if day == 0 {
                    "administrateur".to_owned()
                } else {
                    pick(
                        &mut g.rng,
                        &admins
                            .iter()
                            .map(|a| a.login.clone())
                            .chain(["administrateur".into()])
                            .collect::<Vec<_>>(),
                    )
                    .clone()
                };
                let start =
                    ctx.now - Duration::seconds(day * 86_400 + g.rng.random_range(600..20_000));
                for i in 0..g.rng.random_range(12..40) {
                    g.logon(
                        start + Duration::seconds(i * 7),
                        &user,
                        3,
                        None,
                        Some(&ip),
                        target,
                        Some(BAD_PASSWORD),
                    );
                }
            }
            // Password spray from an internal laptop against the DC, weekly and today.
            if day % 7 == 0 {
                let from = *pick(&mut g.rng, &desktops);
                let start = g.at(day);
                for i in 0..g.rng.random_range(18..30) {
                    let who = if i % 6 == 5 {
                        format!("test{i}")
                    } else {
                        pick(&mut g.rng, &people).login.clone()
                    };
                    let reason = if who.starts_with("test") {
                        UNKNOWN_USER
                    } else {
                        BAD_PASSWORD
                    };
                    g.logon(
                        start + Duration::seconds(i * 20),
                        &who,
                        3,
                        Some(from),
                        None,
                        dc,
                        Some(reason),
                    );
                }
            }
            changes_of_day(&mut g, day, &admins, &people, &helpdesk, machines, n);
            anomalies_of_day(&mut g, day, &people, &admins, &desktops, &servers, n);
        }
        // A service account that opened an interactive session (rule gl-006).
        if let Some(svc) = services.first() {
            let ts = ctx.now - Duration::hours(5);
            g.logon(ts, &svc.login, 10, Some(first_desktop), None, dc, None);
        }

        let graph = graph_docs(&g.edges, &ctx.accounts);
        let rules = tenant_rules(ctx.tenant.id, &dc.hostname, ctx.now)
            .into_iter()
            .map(|r| (r.id.clone(), json(r)))
            .collect();
        let tenant = ctx.tenant.id;
        let stores = &ctx.stores;
        stores
            .series_writes
            .append(tenant, LOGONS, std::mem::take(&mut g.logons))
            .await?;
        stores
            .series_writes
            .append(tenant, LOCKOUTS, std::mem::take(&mut g.lockouts))
            .await?;
        stores
            .series_writes
            .append(tenant, CHANGES, std::mem::take(&mut g.changes))
            .await?;
        stores
            .series_writes
            .append(tenant, ANOMALIES, std::mem::take(&mut g.anomalies))
            .await?;
        let ranking = crate::risk::ranking_docs(graph.iter().map(|(k, v)| (k.as_str(), v)));
        stores.docs.put(tenant, GRAPH, graph).await?;
        stores.docs.put(tenant, RANKING, ranking).await?;
        stores.docs.put(tenant, RULES, rules).await
    })
}

fn graph_docs(
    edges: &BTreeMap<(String, String), GraphEdge>,
    accounts: &[Account],
) -> Vec<(String, Value)> {
    let mut hosts: BTreeMap<&str, (usize, bool)> = BTreeMap::new();
    for e in edges.values() {
        let n = hosts.len();
        hosts.entry(e.host.as_str()).or_insert((n, e.server));
    }
    let mut names = vec![""; hosts.len()];
    let mut servers = vec![false; hosts.len()];
    for (name, (i, server)) in &hosts {
        names[*i] = name;
        servers[*i] = *server;
    }
    let mut by_account: BTreeMap<&str, Vec<Value>> = BTreeMap::new();
    for ((user, host), e) in edges {
        let idx = hosts.get(host.as_str()).map(|h| h.0).unwrap_or(0);
        by_account.entry(user.as_str()).or_default().push(json!([
            idx,
            e.success,
            e.failure,
            e.last_at.timestamp()
        ]));
    }
    let rows: Vec<Value> = by_account
        .into_iter()
        .map(|(login, edges)| {
            let known = accounts.iter().find(|a| a.login == login);
            json!([
                login,
                known.map(|a| a.display_name.as_str()).unwrap_or(login),
                known.is_some_and(|a| a.admin),
                known.is_some_and(|a| a.service),
                edges
            ])
        })
        .collect();
    let mut docs = vec![(
        GRAPH_HOSTS.to_owned(),
        json!({"names": names, "servers": servers}),
    )];
    for (i, chunk) in rows.chunks(GRAPH_CHUNK).enumerate() {
        docs.push((format!("accounts-{i:04}"), json!({"accounts": chunk})));
    }
    docs
}

const GROUPS: &[&str] = &[
    "GRP-Compta",
    "GRP-RH",
    "GRP-VPN",
    "GRP-Partage-Direction",
    "Utilisateurs du Bureau à distance",
];
const PRIVILEGED: &[&str] = &["Admins du domaine", "Administrateurs"];

fn changes_of_day(
    g: &mut Gen<'_>,
    day: i64,
    admins: &[&Account],
    people: &[&Account],
    helpdesk: &str,
    machines: &[MachineSeed],
    n: usize,
) {
    let dn = g
        .ctx
        .tenant
        .domain
        .split('.')
        .map(|p| format!("DC={p}"))
        .collect::<Vec<_>>()
        .join(",");
    let count = (n / 15).max(5);
    for k in 0..count {
        let ts = g.at(day);
        let author = if admins.is_empty() {
            helpdesk.to_owned()
        } else {
            pick(&mut g.rng, admins).login.clone()
        };
        let who = pick(&mut g.rng, people).login.clone();
        let host = pick(&mut g.rng, machines).hostname.clone();
        // The first five of each day cover every type; then the usual mix.
        let kind = match k {
            0 => ChangeType::Account,
            1 => ChangeType::Group,
            2 => ChangeType::Computer,
            3 => ChangeType::Policy,
            4 => ChangeType::Directory,
            _ => *pick(
                &mut g.rng,
                &[
                    ChangeType::Account,
                    ChangeType::Account,
                    ChangeType::Group,
                    ChangeType::Group,
                    ChangeType::Computer,
                    ChangeType::Directory,
                ],
            ),
        };
        match kind {
            ChangeType::Account => {
                let (ev, action, details) = *pick(
                    &mut g.rng,
                    &[
                        (4720, "user_created", "Compte utilisateur créé"),
                        (4722, "user_enabled", "Compte utilisateur activé"),
                        (
                            4725,
                            "user_disabled",
                            "Compte utilisateur désactivé (départ)",
                        ),
                        (4726, "user_deleted", "Compte utilisateur supprimé"),
                        (
                            4738,
                            "user_changed",
                            "userAccountControl modifié : le mot de passe n'expire jamais",
                        ),
                        (
                            4724,
                            "password_reset",
                            "Mot de passe réinitialisé par le support",
                        ),
                    ],
                );
                let author = if ev == 4724 {
                    helpdesk.to_owned()
                } else {
                    author
                };
                g.change(
                    ts,
                    ev,
                    kind,
                    action,
                    &author,
                    Some(who),
                    None,
                    details.into(),
                );
            }
            ChangeType::Group => {
                let privileged = day % 5 == 1 && k == 1;
                let group = if privileged {
                    *pick(&mut g.rng, PRIVILEGED)
                } else {
                    *pick(&mut g.rng, GROUPS)
                };
                let (ev, action) = *pick(
                    &mut g.rng,
                    &[
                        (4728, "member_added"),
                        (4729, "member_removed"),
                        (4732, "member_added"),
                        (4733, "member_removed"),
                        (4756, "member_added"),
                    ],
                );
                let details = format!(
                    "{who} {} {group}",
                    if action == "member_added" {
                        "ajouté à"
                    } else {
                        "retiré de"
                    }
                );
                g.change(
                    ts,
                    ev,
                    kind,
                    action,
                    &author,
                    Some(who),
                    Some(group.into()),
                    details,
                );
            }
            ChangeType::Computer => {
                let (ev, action, details) = *pick(
                    &mut g.rng,
                    &[
                        (
                            4741,
                            "computer_created",
                            "Compte d'ordinateur créé (jonction au domaine)",
                        ),
                        (4742, "computer_changed", "servicePrincipalName modifié"),
                        (4743, "computer_deleted", "Compte d'ordinateur supprimé"),
                    ],
                );
                g.change(
                    ts,
                    ev,
                    kind,
                    action,
                    &author,
                    Some(format!("{host}$")),
                    None,
                    details.into(),
                );
            }
            ChangeType::Policy => {
                let (ev, action, object, details) = *pick(
                    &mut g.rng,
                    &[
                        (
                            4739,
                            "domain_policy_changed",
                            "Stratégie de mot de passe",
                            "Longueur minimale du mot de passe : 12 → 14",
                        ),
                        (
                            4719,
                            "audit_policy_changed",
                            "Ouverture de session",
                            "Audit des succès et des échecs activé",
                        ),
                        (
                            4713,
                            "kerberos_policy_changed",
                            "Stratégie Kerberos",
                            "Durée de vie maximale du ticket : 10 h → 8 h",
                        ),
                        (
                            4704,
                            "user_right_assigned",
                            "SeRemoteInteractiveLogonRight",
                            "Droit attribué au groupe GRP-Support",
                        ),
                    ],
                );
                g.change(
                    ts,
                    ev,
                    kind,
                    action,
                    &author,
                    None,
                    Some(object.into()),
                    details.into(),
                );
            }
            ChangeType::Directory => {
                let (ev, action, object, details) = *pick(
                    &mut g.rng,
                    &[
                        (
                            5136,
                            "object_modified",
                            "CN={6AC1786C-016F-11D2-945F-00C04FB984F9},CN=Policies,CN=System",
                            "Attribut versionNumber modifié (GPO Postes de travail)",
                        ),
                        (
                            5137,
                            "object_created",
                            "OU=Prestataires",
                            "Unité d'organisation créée",
                        ),
                        (
                            5138,
                            "object_undeleted",
                            "CN=Imprimantes-Siège",
                            "Objet restauré depuis la corbeille de l'annuaire",
                        ),
                        (
                            5139,
                            "object_moved",
                            "CN=Postes-Nomades",
                            "Objet déplacé vers OU=Ordinateurs",
                        ),
                        (5141, "object_deleted", "OU=Ancien-Site", "Objet supprimé"),
                    ],
                );
                g.change(
                    ts,
                    ev,
                    kind,
                    action,
                    &author,
                    None,
                    Some(format!("{object},{dn}")),
                    details.into(),
                );
            }
        }
    }
}

fn anomalies_of_day(
    g: &mut Gen<'_>,
    day: i64,
    people: &[&Account],
    admins: &[&Account],
    desktops: &[&MachineSeed],
    servers: &[&MachineSeed],
    n: usize,
) {
    const KINDS: &[(AnomalyKind, Criticality, &str)] = &[
        (
            AnomalyKind::BruteForce,
            Criticality::High,
            "Rafale d'échecs de connexion sur un serveur depuis une adresse externe",
        ),
        (
            AnomalyKind::PasswordSpray,
            Criticality::Critical,
            "Échecs de connexion sur de nombreux comptes depuis une même machine",
        ),
        (
            AnomalyKind::OffHoursLogon,
            Criticality::Medium,
            "Connexion en dehors des horaires habituels du compte",
        ),
        (
            AnomalyKind::NewAdminHost,
            Criticality::High,
            "Compte administrateur connecté à une machine jamais vue pour lui",
        ),
        (
            AnomalyKind::ServiceAccountInteractive,
            Criticality::Medium,
            "Compte de service en session interactive",
        ),
        (
            AnomalyKind::LateralMovement,
            Criticality::High,
            "Connexions successives du compte sur plusieurs serveurs en quelques minutes",
        ),
        (
            AnomalyKind::ImpossibleTravel,
            Criticality::Low,
            "Connexions VPN depuis deux pays en moins d'une heure",
        ),
    ];
    let count = (n / 40).max(1) + usize::from(day == 0) * 4;
    for k in 0..count {
        let ts = g.at(day);
        let (kind, severity, description) = if day == 0 {
            KINDS[k % KINDS.len()]
        } else {
            *pick(&mut g.rng, KINDS)
        };
        let status = match (day, k) {
            (0, 0) => AnomalyStatus::New,
            (0, 1) => AnomalyStatus::Investigating,
            (0, 2) => AnomalyStatus::Confirmed,
            (0, 3) => AnomalyStatus::Dismissed,
            (0..=1, _) => AnomalyStatus::New,
            _ => *pick(
                &mut g.rng,
                &[
                    AnomalyStatus::Investigating,
                    AnomalyStatus::Confirmed,
                    AnomalyStatus::Dismissed,
                    AnomalyStatus::Dismissed,
                ],
            ),
        };
        let account = match kind {
            AnomalyKind::NewAdminHost if !admins.is_empty() => {
                pick(&mut g.rng, admins).login.clone()
            }
            AnomalyKind::ServiceAccountInteractive => "svc-backup".into(),
            AnomalyKind::BruteForce => "administrateur".into(),
            _ => pick(&mut g.rng, people).login.clone(),
        };
        let host = if matches!(kind, AnomalyKind::BruteForce | AnomalyKind::LateralMovement) {
            pick(&mut g.rng, servers).hostname.clone()
        } else {
            pick(&mut g.rng, desktops).hostname.clone()
        };
        let source_ip = match kind {
            AnomalyKind::BruteForce => Some(format!("185.220.101.{}", g.rng.random_range(2..250))),
            AnomalyKind::ImpossibleTravel => Some(format!(
                "102.{}.{}.{}",
                g.rng.random_range(16..250),
                g.rng.random_range(0..255),
                g.rng.random_range(1..255)
            )),
            _ => None,
        };
        let id = g.id("an");
        let body = json(Anomaly {
            id: id.clone(),
            detected_at: ts,
            kind,
            severity,
            status,
            account: Some(account),
            host: Some(host),
            source_ip,
            score: g.rng.random_range(55..99),
            description: description.into(),
        });
        g.anomalies.push(Record {
            partition: kind.as_str().into(),
            ts: ts.timestamp_millis(),
            id,
            body,
        });
    }
}

/// The tenant's own rules, one of them disabled.
type TenantRuleDef = (
    &'static str,
    String,
    String,
    SiemSeverity,
    bool,
    &'static [u32],
    u32,
    u32,
    &'static str,
);

pub fn tenant_rules(tenant: &str, first_server: &str, now: DateTime<Utc>) -> Vec<Rule> {
    let defs: [TenantRuleDef; 3] = [
        (
            "tn-001",
            format!("Connexions répétées sur {first_server}"),
            format!("Au moins 5 échecs (4625) sur le serveur {first_server} en 10 minutes, quel que soit le compte."),
            SiemSeverity::High,
            true,
            &[4625],
            5,
            10,
            "T1110",
        ),
        (
            "tn-002",
            "Réinitialisation de mot de passe par le support".into(),
            "Mot de passe réinitialisé (4724) par un compte du support hors heures ouvrées.".into(),
            SiemSeverity::Low,
            true,
            &[4724],
            1,
            1,
            "T1098",
        ),
        (
            "tn-003",
            "Ordinateur supprimé de l'annuaire".into(),
            "Compte d'ordinateur supprimé (4743). Désactivée : trop de bruit pendant le renouvellement du parc.".into(),
            SiemSeverity::Low,
            false,
            &[4743],
            1,
            1,
            "T1531",
        ),
    ];
    defs.into_iter()
        .enumerate()
        .map(
            |(i, (id, name, description, severity, enabled, events, threshold, window, mitre))| {
                Rule {
                    id: format!("{tenant}-{id}"),
                    scope: RuleScope::Tenant,
                    name,
                    description,
                    severity,
                    enabled,
                    event_ids: events.to_vec(),
                    threshold,
                    window_minutes: window,
                    mitre_technique: mitre.into(),
                    updated_at: now - Duration::days(12 + 9 * i as i64),
                }
            },
        )
        .collect()
}
