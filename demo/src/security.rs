//! Security demo data, from the roster's machines and accounts: directory logons (people at
//! work on weekdays, fewer at night and on weekends; the backup service around the clock;
//! administrators on the servers; brute force and password spray bursts), lockouts with the
//! failures that caused them, account changes of every type, anomalies, the logon graph of
//! the last 30 days with the ranking made from it, and the tenant's rules. SIEM incidents
//! are written by the alerts module.
//!
//! One generator serves the seed and the data produced as time passes: each hour is drawn
//! whole from its own generator ([`SeedCtx::hour_rng`]), so the seed is the producer applied
//! over the seeded days, and an hour's events are the same however time is cut into batches.

use std::collections::{BTreeMap, HashSet};

use crate::{Account, MachineKind, MachineSeed, Produced, SeedCtx, hours_of};
use chrono::{DateTime, Datelike, Duration, Timelike, Utc};
use netops_shared::module::BoxFuture;
use netops_shared::store::{Record, StoreResult};
use rand::Rng;
use rand::rngs::StdRng;
use serde::Serialize;
use serde_json::{Value, json};

use netops_security::model::*;

fn json(v: impl Serialize) -> Value {
    serde_json::to_value(v).unwrap_or_default()
}

fn pick<'a, T>(rng: &mut StdRng, items: &'a [T]) -> &'a T {
    &items[rng.random_range(0..items.len())]
}

const BAD_PASSWORD: &str = "0xC000006A (mot de passe incorrect)";
const UNKNOWN_USER: &str = "0xC0000064 (nom d'utilisateur inconnu)";
const LOCKED: &str = "0xC0000234 (compte verrouillé)";

/// Days of logons the graph (and so the ranking) is made of.
const GRAPH_DAYS: u32 = 30;

/// How long after the start of the hour that draws it an event can fall (an anomaly is drawn
/// for four hours, an unlock comes up to 90 minutes after its lockout): a batch draws the
/// hours this far before it for the events that fall in it.
const SPILL_HOURS: i64 = 4;

/// Share of the people at work at this local hour: full in the core hours of a weekday, some
/// in the evening, a few at night (remote access, on-call) and on weekends.
fn presence(local: DateTime<Utc>) -> f64 {
    let weekend = local.weekday().num_days_from_monday() >= 5;
    match (weekend, local.hour()) {
        (true, 10..18) => 0.12,
        (true, _) => 0.02,
        (false, 9..=11 | 14..=17) => 1.0,
        (false, 8 | 12 | 13 | 18) => 0.6,
        (false, 7 | 19 | 20) => 0.2,
        (false, _) => 0.03,
    }
}

/// The sum of [`presence`] over the hours of a weekday: an event that happens `k` times a
/// working day happens `k * presence / WEEKDAY_PRESENCE` times in an hour.
const WEEKDAY_PRESENCE: f64 = 7.0 + 4.0 * 0.6 + 3.0 * 0.2 + 10.0 * 0.03;

/// The chance that a machine's owner opens a session in an hour of full presence (twice
/// drawn): about two sessions a working day.
const OWNER_SESSION: f64 = 0.09;

/// The machines and accounts the events are drawn from.
struct Roster<'a> {
    ctx: &'a SeedCtx,
    /// The desktops in use (online), the servers, the first three of which are the file
    /// servers, the first the domain controller and the last the backup server.
    desktops: Vec<&'a MachineSeed>,
    servers: Vec<&'a MachineSeed>,
    file_servers: Vec<&'a MachineSeed>,
    dc: &'a MachineSeed,
    backup: &'a MachineSeed,
    server_names: HashSet<&'a str>,
    people: Vec<&'a Account>,
    admins: Vec<&'a Account>,
    service: Option<&'a Account>,
    helpdesk: String,
    /// NetBIOS domain (`ACME`) and distinguished name (`DC=acme,DC=local`).
    domain: String,
    dn: String,
}

impl<'a> Roster<'a> {
    /// None for a tenant without a server or a desktop in use.
    fn of(ctx: &'a SeedCtx) -> Option<Self> {
        let desktops: Vec<&MachineSeed> = ctx
            .machines
            .iter()
            .filter(|m| m.kind != MachineKind::Server && m.online)
            .collect();
        let servers: Vec<&MachineSeed> = ctx
            .machines
            .iter()
            .filter(|m| m.kind == MachineKind::Server)
            .collect();
        let (&dc, &backup) = (servers.first()?, servers.last()?);
        desktops.first()?;
        let people: Vec<&Account> = ctx.people().collect();
        let admins: Vec<&Account> = people.iter().copied().filter(|a| a.admin).collect();
        let helpdesk = admins
            .get(1)
            .or(admins.first())
            .map(|a| a.login.clone())
            .unwrap_or_default();
        let domain = ctx.tenant.domain;
        Some(Self {
            ctx,
            file_servers: servers.iter().copied().take(3).collect(),
            server_names: servers.iter().map(|s| s.hostname.as_str()).collect(),
            desktops,
            servers,
            dc,
            backup,
            service: ctx.accounts.iter().find(|a| a.service),
            people,
            admins,
            helpdesk,
            domain: domain.split('.').next().unwrap_or("CORP").to_uppercase(),
            dn: domain
                .split('.')
                .map(|p| format!("DC={p}"))
                .collect::<Vec<_>>()
                .join(","),
        })
    }
}

/// The events drawn from one hour's generator.
#[derive(Default)]
struct Drawn {
    logons: Vec<Logon>,
    lockouts: Vec<Lockout>,
    changes: Vec<AccountChange>,
    anomalies: Vec<Anomaly>,
}

/// One hour being drawn.
struct Gen<'a> {
    r: &'a Roster<'a>,
    rng: StdRng,
    start: DateTime<Utc>,
    /// The hour's number since the epoch, in every id it draws, so ids never collide.
    hour: i64,
    seq: u32,
    out: Drawn,
}

impl Gen<'_> {
    fn id(&mut self, prefix: &str) -> String {
        self.seq += 1;
        format!("{prefix}-{}-{:05}", self.hour, self.seq)
    }

    /// A time in the hour.
    fn at(&mut self) -> DateTime<Utc> {
        self.start + Duration::milliseconds(self.rng.random_range(0..3_600_000))
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
        let id = self.id("lg");
        self.out.logons.push(Logon {
            id,
            ts,
            event_id: if failure.is_some() { 4625 } else { 4624 },
            result: if failure.is_some() {
                LogonResult::Failure
            } else {
                LogonResult::Success
            },
            user: user.into(),
            domain: self.r.domain.clone(),
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
            dc: self.r.dc.hostname.clone(),
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
        let id = self.id("lk");
        self.out.lockouts.push(Lockout {
            id,
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
            dc: self.r.dc.hostname.clone(),
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
        self.out.changes.push(AccountChange {
            id,
            ts,
            event_id,
            kind,
            action: action.into(),
            author: author.into(),
            target,
            object,
            details,
            dc: self.r.dc.hostname.clone(),
        });
    }
}

/// Every security event drawn from the generator of the hour starting at `start`, in the
/// tenant's local rhythm.
fn draw_hour(r: &Roster<'_>, start: DateTime<Utc>) -> Drawn {
    let ctx = r.ctx;
    let hour = start.timestamp().div_euclid(3600);
    let mut g = Gen {
        r,
        rng: ctx.hour_rng("security", start),
        start,
        hour,
        seq: 0,
        out: Drawn::default(),
    };
    let local = start + Duration::hours(ctx.tenant.utc_offset_hours);
    let weekday = local.weekday().num_days_from_monday() < 5;
    let presence = presence(local);
    let per_day = presence / WEEKDAY_PRESENCE;
    let n = ctx.machines.len();
    // Owners on their machine (a mistyped password now and then), then on a file server.
    for &m in &r.desktops {
        let Some(user) = &m.user else { continue };
        for _ in 0..2 {
            if !g.rng.random_bool(OWNER_SESSION * presence) {
                continue;
            }
            let ts = g.at();
            if g.rng.random_bool(0.05) {
                let before = ts - Duration::seconds(g.rng.random_range(5..40));
                g.logon(before, user, 2, Some(m), None, m, Some(BAD_PASSWORD));
            }
            let t = *pick(&mut g.rng, &[2, 7, 11]);
            g.logon(ts, user, t, Some(m), None, m, None);
            if g.rng.random_bool(0.5) {
                let fs = *pick(&mut g.rng, &r.file_servers);
                let later = ts + Duration::seconds(g.rng.random_range(5..600));
                g.logon(later, user, 3, Some(m), None, fs, None);
            }
        }
    }
    // Other accounts on shared machines: half as many as machines a working day.
    for _ in 0..n / 2 {
        if !g.rng.random_bool(per_day) {
            continue;
        }
        let who = pick(&mut g.rng, &r.people).login.clone();
        let m = *pick(&mut g.rng, &r.desktops);
        let ts = g.at();
        let fail = g.rng.random_bool(0.05).then_some(BAD_PASSWORD);
        g.logon(ts, &who, 2, Some(m), None, m, fail);
        if fail.is_none() {
            let fs = *pick(&mut g.rng, &r.file_servers);
            g.logon(ts + Duration::seconds(40), &who, 3, Some(m), None, fs, None);
        }
    }
    // Servers: the backup service's hourly job on each, administrators over RDP.
    for &s in &r.servers {
        if let Some(svc) = r.service {
            let ts = g.at();
            g.logon(ts, &svc.login, 5, Some(s), Some("127.0.0.1"), s, None);
        }
        if !r.admins.is_empty() && g.rng.random_bool(0.3 * per_day) {
            let admin = pick(&mut g.rng, &r.admins).login.clone();
            let from = *pick(&mut g.rng, &r.desktops);
            let ts = g.at();
            g.logon(ts, &admin, 10, Some(from), None, s, None);
        }
    }
    // The nightly backup, from 22:00 to 5:00: the service reaches each machine in use once.
    if let Some(svc) = r.service
        && (local.hour() >= 22 || local.hour() < 5)
    {
        let backup = r.backup;
        for &m in r.desktops.iter().chain(&r.servers) {
            if m.hostname != backup.hostname && g.rng.random_bool(1.0 / 7.0) {
                let ts = g.at();
                g.logon(ts, &svc.login, 3, Some(backup), None, m, None);
            }
        }
    }
    // Lockouts: failures on the DC from the user's machine, then 4740 and often 4767. Some
    // in office hours, and one every twelve hours whatever the hour (a phone or a mapped
    // drive that kept an old password locks its account at night too).
    let scheduled = hour.rem_euclid(12) == 5;
    for k in 0..(n / 30).max(1) {
        let happens = (scheduled && k == 0) || g.rng.random_bool(per_day);
        if !happens {
            continue;
        }
        let m = *pick(&mut g.rng, &r.desktops);
        let who = if !r.admins.is_empty() && g.rng.random_bool(0.1) {
            pick(&mut g.rng, &r.admins).login.clone()
        } else {
            match &m.user {
                Some(user) => user.clone(),
                None => pick(&mut g.rng, &r.people).login.clone(),
            }
        };
        let ts = g.at();
        for i in 0..5 {
            g.logon(
                ts - Duration::seconds(50 - i * 10),
                &who,
                3,
                Some(m),
                None,
                r.dc,
                Some(BAD_PASSWORD),
            );
        }
        g.logon(
            ts + Duration::seconds(5),
            &who,
            3,
            Some(m),
            None,
            r.dc,
            Some(LOCKED),
        );
        g.lockout(ts, true, &who, Some(&m.hostname), None);
        if g.rng.random_bool(0.75) {
            let later = ts + Duration::minutes(g.rng.random_range(10..90));
            let helpdesk = r.helpdesk.clone();
            g.lockout(later, false, &who, None, Some(&helpdesk));
        }
    }
    // Brute force from outside against a server, every other day or so, at any hour.
    if g.rng.random_bool(1.0 / 48.0) {
        let target = *pick(&mut g.rng, &r.servers);
        let ip = format!("185.220.101.{}", g.rng.random_range(2..250));
        let user = match r.admins.is_empty() || g.rng.random_bool(0.5) {
            true => "administrateur".to_owned(),
            false => pick(&mut g.rng, &r.admins).login.clone(),
        };
        let begin = g.at();
        for i in 0..g.rng.random_range(12..40) {
            g.logon(
                begin + Duration::seconds(i * 7),
                &user,
                3,
                None,
                Some(&ip),
                target,
                Some(BAD_PASSWORD),
            );
        }
    }
    // Password spray from an internal laptop against the DC, about weekly, in office hours.
    if g.rng.random_bool(presence / 50.0) {
        let from = *pick(&mut g.rng, &r.desktops);
        let begin = g.at();
        for i in 0..g.rng.random_range(18..30) {
            let (who, reason) = if i % 6 == 5 {
                (format!("test{i}"), UNKNOWN_USER)
            } else {
                (pick(&mut g.rng, &r.people).login.clone(), BAD_PASSWORD)
            };
            g.logon(
                begin + Duration::seconds(i * 20),
                &who,
                3,
                Some(from),
                None,
                r.dc,
                Some(reason),
            );
        }
    }
    // A service account that opens an interactive session (rule gl-006), twice a week.
    if let Some(svc) = r.service
        && g.rng.random_bool(1.0 / 84.0)
    {
        let from = *pick(&mut g.rng, &r.desktops);
        let ts = g.at();
        g.logon(ts, &svc.login, 10, Some(from), None, r.dc, None);
    }
    // Changes, by the administrators on weekdays: one of each type from 9:00 to 14:00, so
    // every week shows them all, and more in a big tenant.
    const TYPES: [ChangeType; 5] = [
        ChangeType::Account,
        ChangeType::Group,
        ChangeType::Computer,
        ChangeType::Policy,
        ChangeType::Directory,
    ];
    if weekday && (9..14).contains(&local.hour()) {
        let kind = TYPES[local.hour() as usize - 9];
        // A privileged group changes every fifth day.
        let privileged = local.timestamp().div_euclid(86_400) % 5 == 1;
        let ts = g.at();
        change(&mut g, ts, kind, privileged);
    }
    for _ in 0..(n / 15).saturating_sub(5) {
        if weekday && g.rng.random_bool(per_day) {
            let kind = *pick(
                &mut g.rng,
                &[
                    ChangeType::Account,
                    ChangeType::Account,
                    ChangeType::Group,
                    ChangeType::Group,
                    ChangeType::Computer,
                    ChangeType::Directory,
                ],
            );
            let ts = g.at();
            change(&mut g, ts, kind, false);
        }
    }
    anomalies(&mut g, n);
    g.out
}

/// The security data of `[from, to)` as time passes: the events that fall in it and, from
/// the batch that passes the last hour boundary before the present, the logon graph and the
/// ranking as of that boundary. They are made hourly, not by each batch of the background
/// task (each minute): making them draws the 30 days again.
pub fn produce(ctx: &SeedCtx, from: DateTime<Utc>, to: DateTime<Utc>) -> Produced {
    let hour = floor_hour(to);
    let graph = (from < hour && hour == floor_hour(ctx.now)).then_some(hour);
    produce_with_graph(ctx, from, to, graph)
}

fn floor_hour(t: DateTime<Utc>) -> DateTime<Utc> {
    DateTime::from_timestamp(t.timestamp().div_euclid(3600) * 3600, 0).unwrap_or(t)
}

/// The events of `[from, to)`, and with `graph` (a time up to `to`) the logon graph of the
/// [`GRAPH_DAYS`] (at most the seeded days) up to it, drawn again hour by hour: a graph as
/// of the same time is the same however time was cut, and its counts are those of the
/// stored logons.
fn produce_with_graph(
    ctx: &SeedCtx,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
    graph: Option<DateTime<Utc>>,
) -> Produced {
    let Some(r) = Roster::of(ctx) else {
        return Produced::default();
    };
    let days = Duration::days(i64::from(GRAPH_DAYS.min(ctx.days.max(1))));
    let first = graph.map_or(from, |until| from.min(until - days));
    let in_graph = |t: DateTime<Utc>| graph.is_some_and(|until| until - days <= t && t < until);
    let within = |t: DateTime<Utc>| from <= t && t < to;
    let accounts: HashSet<&str> = ctx.accounts.iter().map(|a| a.login.as_str()).collect();
    let mut edges: BTreeMap<(String, String), GraphEdge> = BTreeMap::new();
    let (mut logons, mut lockouts, mut changes, mut anomalies) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for hour in hours_of(first - Duration::hours(SPILL_HOURS), to) {
        let drawn = draw_hour(&r, hour);
        for l in drawn.logons {
            if in_graph(l.ts) && accounts.contains(l.user.as_str()) {
                add_edge(&mut edges, &r, &l);
            }
            if within(l.ts) {
                logons.push(record(l.target_host.clone(), l.ts, &l.id, &l));
            }
        }
        lockouts.extend(
            drawn
                .lockouts
                .iter()
                .filter(|l| within(l.ts))
                .map(|l| record(l.user.clone(), l.ts, &l.id, l)),
        );
        changes.extend(
            drawn
                .changes
                .iter()
                .filter(|c| within(c.ts))
                .map(|c| record(c.kind.as_str().into(), c.ts, &c.id, c)),
        );
        anomalies.extend(
            drawn
                .anomalies
                .iter()
                .filter(|a| within(a.detected_at))
                .map(|a| record(a.kind.as_str().into(), a.detected_at, &a.id, a)),
        );
    }
    let docs = if graph.is_some() {
        let graph = graph_docs(&edges, &ctx.accounts);
        let ranking =
            netops_security::risk::ranking_docs(graph.iter().map(|(k, v)| (k.as_str(), v)));
        vec![(GRAPH.to_owned(), graph), (RANKING.to_owned(), ranking)]
    } else {
        Vec::new()
    };
    Produced {
        records: vec![
            (LOGONS.to_owned(), logons),
            (LOCKOUTS.to_owned(), lockouts),
            (CHANGES.to_owned(), changes),
            (ANOMALIES.to_owned(), anomalies),
        ],
        docs,
        ..Produced::default()
    }
}

fn record(partition: String, ts: DateTime<Utc>, id: &str, body: impl Serialize) -> Record {
    Record {
        partition,
        ts: ts.timestamp_millis(),
        id: id.to_owned(),
        body: json(body),
    }
}

fn add_edge(edges: &mut BTreeMap<(String, String), GraphEdge>, r: &Roster<'_>, l: &Logon) {
    let edge = edges
        .entry((l.user.clone(), l.target_host.clone()))
        .or_insert_with(|| GraphEdge {
            host: l.target_host.clone(),
            server: r.server_names.contains(l.target_host.as_str()),
            success: 0,
            failure: 0,
            last_at: l.ts,
        });
    if l.result == LogonResult::Failure {
        edge.failure += 1;
    } else {
        edge.success += 1;
    }
    edge.last_at = edge.last_at.max(l.ts);
}

/// The seed: the producer's events over the seeded days, the graph and ranking as of the
/// last hour boundary, and the tenant's rules.
pub fn seed(ctx: &SeedCtx) -> BoxFuture<'_, StoreResult<()>> {
    Box::pin(async move {
        let produced = produce_with_graph(ctx, ctx.start(), ctx.now, Some(floor_hour(ctx.now)));
        let tenant = ctx.tenant.id;
        let stores = &ctx.stores;
        for (series, records) in produced.records {
            stores
                .series_writes
                .append(tenant, &series, records)
                .await?;
        }
        for (collection, docs) in produced.docs {
            stores.docs.put(tenant, &collection, docs).await?;
        }
        let dc = ctx
            .machines
            .iter()
            .find(|m| m.kind == MachineKind::Server)
            .map_or("", |m| m.hostname.as_str());
        let rules = tenant_rules(tenant, dc, ctx.now)
            .into_iter()
            .map(|r| (r.id.clone(), json(r)))
            .collect();
        stores.docs.put(tenant, RULES, rules).await
    })
}

/// The graph's documents: the machines reached, then every account of the roster in login
/// order, with its edges (none when it did not log on in the period): the graph and its
/// ranking, made again as time passes, keep the same documents.
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
    let mut by_account: BTreeMap<&str, (&Account, Vec<Value>)> = accounts
        .iter()
        .map(|a| (a.login.as_str(), (a, Vec::new())))
        .collect();
    for ((user, host), e) in edges {
        let idx = hosts.get(host.as_str()).map(|h| h.0).unwrap_or(0);
        if let Some((_, out)) = by_account.get_mut(user.as_str()) {
            out.push(json!([idx, e.success, e.failure, e.last_at.timestamp()]));
        }
    }
    let rows: Vec<Value> = by_account
        .into_values()
        .map(|(a, edges)| json!([a.login, a.display_name, a.admin, a.service, edges]))
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

/// One change of `kind` by an administrator (the support resets passwords); `privileged`
/// makes a group change one of an administrators group.
fn change(g: &mut Gen<'_>, ts: DateTime<Utc>, kind: ChangeType, privileged: bool) {
    let r = g.r;
    let (dn, helpdesk) = (&r.dn, &r.helpdesk);
    let mut author = if r.admins.is_empty() {
        helpdesk.to_owned()
    } else {
        pick(&mut g.rng, &r.admins).login.clone()
    };
    let who = pick(&mut g.rng, &r.people).login.clone();
    let host = pick(&mut g.rng, &r.ctx.machines).hostname.clone();
    let (ev, action, target, object, details) = match kind {
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
            if ev == 4724 {
                author = helpdesk.to_owned();
            }
            (ev, action, Some(who), None, details.into())
        }
        ChangeType::Group => {
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
            (ev, action, Some(who), Some(group.into()), details)
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
            (ev, action, Some(format!("{host}$")), None, details.into())
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
            (ev, action, None, Some(object.into()), details.into())
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
            (
                ev,
                action,
                None,
                Some(format!("{object},{dn}")),
                details.into(),
            )
        }
    };
    g.change(ts, ev, kind, action, &author, target, object, details);
}

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

/// The anomalies drawn in an hour: one every four hours, its kind and status in turn (so that
/// any day shows every status), and more in a big tenant.
fn anomalies(g: &mut Gen<'_>, n: usize) {
    const STATUSES: [AnomalyStatus; 4] = [
        AnomalyStatus::New,
        AnomalyStatus::Investigating,
        AnomalyStatus::Confirmed,
        AnomalyStatus::Dismissed,
    ];
    if g.hour.rem_euclid(4) == 0 {
        let slot = g.hour.div_euclid(4);
        let ts = g.start + Duration::milliseconds(g.rng.random_range(0..4 * 3_600_000));
        let kind = KINDS[slot.rem_euclid(KINDS.len() as i64) as usize];
        anomaly(g, ts, kind, STATUSES[slot.rem_euclid(4) as usize]);
    }
    for _ in 0..n / 40 {
        if g.rng.random_bool(1.0 / 24.0) {
            let ts = g.at();
            let kind = *pick(&mut g.rng, KINDS);
            let status = *pick(
                &mut g.rng,
                &[
                    AnomalyStatus::New,
                    AnomalyStatus::Investigating,
                    AnomalyStatus::Confirmed,
                    AnomalyStatus::Dismissed,
                    AnomalyStatus::Dismissed,
                ],
            );
            anomaly(g, ts, kind, status);
        }
    }
}

fn anomaly(
    g: &mut Gen<'_>,
    ts: DateTime<Utc>,
    (kind, severity, description): (AnomalyKind, Criticality, &str),
    status: AnomalyStatus,
) {
    let r = g.r;
    let account = match kind {
        AnomalyKind::NewAdminHost if !r.admins.is_empty() => {
            pick(&mut g.rng, &r.admins).login.clone()
        }
        AnomalyKind::ServiceAccountInteractive => "svc-backup".into(),
        AnomalyKind::BruteForce => "administrateur".into(),
        _ => pick(&mut g.rng, &r.people).login.clone(),
    };
    let host = if matches!(kind, AnomalyKind::BruteForce | AnomalyKind::LateralMovement) {
        pick(&mut g.rng, &r.servers).hostname.clone()
    } else {
        pick(&mut g.rng, &r.desktops).hostname.clone()
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
    let score = g.rng.random_range(55..99);
    g.out.anomalies.push(Anomaly {
        id,
        detected_at: ts,
        kind,
        severity,
        status,
        account: Some(account),
        host: Some(host),
        source_ip,
        score,
        description: description.into(),
    });
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
