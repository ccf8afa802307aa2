//! Shared-file demo data: accesses of the fleet's users to the shares of the file servers,
//! over the whole history, and their aggregates ([`netops_files::activity`]).

use crate::{MachineKind, MachineSeed, Produced, SeedCtx, hours_of};
use chrono::{DateTime, Datelike, Duration, DurationRound, Timelike, Utc, Weekday};
use netops_shared::module::BoxFuture;
use netops_shared::store::{Record, StoreResult};
use rand::Rng;
use rand::rngs::StdRng;
use serde_json::Value;

use netops_files::activity::Activity;
use netops_files::model::*;

const SHARES: &[(&str, &[&str])] = &[
    ("Commun", &["Modeles", "Procedures", "Photos"]),
    ("Comptabilite", &["2026", "2025", "Fournisseurs"]),
    ("RH", &["Contrats", "Entretiens", "Paie"]),
    ("Projets", &["Atlas", "Boreal", "Cyclone"]),
    ("Direction", &["Comite", "Budget"]),
    ("Technique", &["Plans", "Scripts", "Sauvegardes"]),
];
const FILES: &[(&str, u64)] = &[
    ("rapport-mensuel.docx", 240_000),
    ("budget-previsionnel.xlsx", 610_000),
    ("presentation-client.pptx", 4_800_000),
    ("factures-novembre.xlsx", 180_000),
    ("contrat-cadre.pdf", 920_000),
    ("compte-rendu.docx", 64_000),
    ("plan-reseau.vsdx", 1_300_000),
    ("export-crm.csv", 2_200_000),
    ("notes.txt", 3_000),
];

fn to_value<T: serde::Serialize>(v: &T) -> Value {
    serde_json::to_value(v).unwrap_or(Value::Null)
}

/// The first sequence number of the producer's ids, above any the seed gives.
const LIVE_SEQ: u64 = 5_000_000;

/// Where the users' files are: the first two Windows file servers.
fn servers(ctx: &SeedCtx) -> Vec<String> {
    ctx.machines
        .iter()
        .filter(|m| m.kind == MachineKind::Server && m.os.starts_with("Windows Server"))
        .take(2)
        .map(|m| m.hostname.clone())
        .collect()
}

/// What an access reaches: a file of a folder of a share on a file server.
struct Target<'a> {
    server: &'a str,
    share: &'a str,
    sub: &'a str,
    file: (&'a str, u64),
}

/// One access of `user` from machine `m` at `at` to a file of a share.
fn event(
    rng: &mut StdRng,
    servers: &[String],
    m: &MachineSeed,
    user: &str,
    at: DateTime<Utc>,
    seq: u64,
) -> FileEvent {
    let server = &servers[rng.random_range(0..servers.len())];
    let (share, subs) = SHARES[rng.random_range(0..SHARES.len())];
    let sub = subs[rng.random_range(0..subs.len())];
    let file = FILES[rng.random_range(0..FILES.len())];
    let roll = rng.random_range(0..100);
    let action = match roll {
        0..=54 => FileAction::Read,
        55..=74 => FileAction::Modify,
        75..=86 => FileAction::Create,
        87..=93 => FileAction::Rename,
        _ => FileAction::Delete,
    };
    let target = Target {
        server,
        share,
        sub,
        file,
    };
    access(&target, action, m, user, at, seq)
}

/// The access of `user` from machine `m` at `at` to `target`.
fn access(
    target: &Target,
    action: FileAction,
    m: &MachineSeed,
    user: &str,
    at: DateTime<Utc>,
    seq: u64,
) -> FileEvent {
    let Target {
        server,
        share,
        sub,
        file: (file, size),
    } = *target;
    let folder = format!("\\\\{server}\\{share}\\{sub}");
    let path = format!("{folder}\\{file}");
    let new_path = (action == FileAction::Rename).then(|| {
        format!(
            "{folder}\\{}-v2.{}",
            file.rsplit_once('.').map_or(file, |x| x.0),
            file.rsplit_once('.').map_or("", |x| x.1)
        )
    });
    FileEvent {
        id: format!("fe-{}-{seq:07}", at.timestamp_millis()),
        at,
        action,
        user: user.to_owned(),
        machine: Some(m.hostname.clone()),
        client_ip: m.ip.clone(),
        server: server.to_owned(),
        share: share.into(),
        path,
        folder,
        new_path,
        size_bytes: (action != FileAction::Delete).then_some(size),
    }
}

/// The first sequence number of the nightly backup's ids, above the people's.
const BACKUP_SEQ: u64 = 6_000_000;

/// The hour (UTC) of the nightly backup.
const BACKUP_HOUR: u32 = 2;

/// The nightly backup of the day of `hour` (its [`BACKUP_HOUR`]; nothing at another hour):
/// the service account reads one file of every folder of each file server from the backup
/// server (the last server, as in the security logons), one read every ten seconds from the
/// hour sharp, so that any 24-hour window holds a night's first read. Drawn from its own
/// generator, for the seed and the producer alike.
fn backup(ctx: &SeedCtx, servers: &[String], hour: DateTime<Utc>) -> Vec<FileEvent> {
    let service = ctx.accounts.iter().find(|a| a.service);
    let from = ctx.machines.iter().rfind(|m| m.kind == MachineKind::Server);
    let (Some(service), Some(from), BACKUP_HOUR) = (service, from, hour.hour()) else {
        return Vec::new();
    };
    let mut rng = ctx.hour_rng("files-backup", hour);
    let mut reads = Vec::new();
    for server in servers {
        for (share, subs) in SHARES {
            for sub in *subs {
                let n = reads.len() as u64;
                let target = Target {
                    server,
                    share,
                    sub,
                    file: FILES[rng.random_range(0..FILES.len())],
                };
                let at = hour + Duration::seconds(10 * n as i64);
                let read = access(
                    &target,
                    FileAction::Read,
                    from,
                    &service.login,
                    at,
                    BACKUP_SEQ + n,
                );
                reads.push(read);
            }
        }
    }
    reads
}

/// The chance that an access of a person's day (three drawn an hour) happens in `hour`:
/// working days 8:00-18:00 UTC mostly, some in weekday evenings and weekend days.
fn presence(hour: DateTime<Utc>) -> f64 {
    let weekend = matches!(hour.weekday(), Weekday::Sat | Weekday::Sun);
    match hour.hour() {
        8..18 if !weekend => 1.0 / 15.0,
        9..18 => 1.0 / 150.0,
        18..22 => 1.0 / 100.0,
        _ => 0.0,
    }
}

fn record(e: &FileEvent) -> Record {
    Record {
        partition: e.server.clone(),
        ts: e.at.timestamp_millis(),
        id: e.id.clone(),
        body: to_value(e),
    }
}

/// The file accesses of `[from, to)` as time passes: each online user's, on working days
/// between 8:00 and 18:00 (UTC) about two a day as in the seed, now and then in the evening
/// and on weekend days; the nightly backup's reads; with their aggregates.
pub fn produce(ctx: &SeedCtx, from: DateTime<Utc>, to: DateTime<Utc>) -> Produced {
    let servers = servers(ctx);
    let mut events = Vec::new();
    let mut activity = Activity::default();
    if servers.is_empty() {
        return Produced::default();
    }
    let within = |e: &FileEvent| from <= e.at && e.at < to;
    for hour in hours_of(from, to) {
        for e in backup(ctx, &servers, hour).iter().filter(|e| within(e)) {
            activity.add(e);
            events.push(record(e));
        }
        let chance = presence(hour);
        if chance == 0.0 {
            continue;
        }
        let mut rng = ctx.hour_rng("files", hour);
        let mut seq = LIVE_SEQ;
        for m in ctx.machines.iter().filter(|m| m.online) {
            let Some(user) = m.user.as_deref() else {
                continue;
            };
            for _ in 0..3 {
                if !rng.random_bool(chance) {
                    continue;
                }
                let at = hour + Duration::milliseconds(rng.random_range(0..3_600_000));
                seq += 1;
                let e = event(&mut rng, &servers, m, user, at, seq);
                if within(&e) {
                    activity.add(&e);
                    events.push(record(&e));
                }
            }
        }
    }
    Produced {
        records: vec![(EVENTS.to_owned(), events)],
        rollups: activity.series(),
        ..Produced::default()
    }
}

pub fn seed(ctx: &SeedCtx) -> BoxFuture<'_, StoreResult<()>> {
    Box::pin(async move {
        let mut rng = ctx.rng("files");
        let servers = servers(ctx);
        if servers.is_empty() {
            return Ok(());
        }
        let users: Vec<_> = ctx.machines.iter().filter(|m| m.user.is_some()).collect();
        let mut events = Vec::new();
        let mut activity = Activity::default();
        let mut seq = 0u64;
        let start = ctx.start();
        for m in &users {
            let Some(user) = m.user.as_deref() else {
                continue;
            };
            let mut day = start.duration_trunc(Duration::days(1)).unwrap_or(start);
            while day < ctx.now {
                if matches!(day.weekday(), Weekday::Sat | Weekday::Sun) {
                    day += Duration::days(1);
                    continue;
                }
                for _ in 0..rng.random_range(1..4) {
                    let at = day + Duration::seconds(rng.random_range(8 * 3600..18 * 3600));
                    if at >= ctx.now || (!m.online && at > m.last_seen_at) {
                        continue;
                    }
                    seq += 1;
                    let e = event(&mut rng, &servers, m, user, at, seq);
                    activity.add(&e);
                    events.push(record(&e));
                }
                day += Duration::days(1);
            }
        }
        // The nightly backup, as the producer makes it.
        let mut night = start.duration_trunc(Duration::days(1)).unwrap_or(start)
            + Duration::hours(i64::from(BACKUP_HOUR));
        while night < ctx.now {
            for e in backup(ctx, &servers, night) {
                if start <= e.at && e.at < ctx.now {
                    activity.add(&e);
                    events.push(record(&e));
                }
            }
            night += Duration::days(1);
        }
        ctx.stores
            .series_writes
            .append(ctx.tenant.id, EVENTS, events)
            .await?;
        for (series, rows) in activity.series() {
            ctx.stores
                .rollups
                .load(ctx.tenant.id, &series, rows)
                .await?;
        }
        Ok(())
    })
}
