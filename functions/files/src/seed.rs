//! Shared-file demo data: accesses of the fleet's users to the shares of the file servers,
//! over the whole history, and their aggregates ([`crate::activity`]).

use chrono::{DateTime, Datelike, Duration, DurationRound, Timelike, Utc, Weekday};
use netops_shared::demo::{MachineKind, MachineSeed, Produced, SeedCtx, hours_of};
use netops_shared::module::BoxFuture;
use netops_shared::store::{Record, StoreResult};
use rand::Rng;
use rand::rngs::StdRng;
use serde_json::Value;

use crate::activity::Activity;
use crate::model::*;

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
    let (file, size) = FILES[rng.random_range(0..FILES.len())];
    let roll = rng.random_range(0..100);
    let action = match roll {
        0..=54 => FileAction::Read,
        55..=74 => FileAction::Modify,
        75..=86 => FileAction::Create,
        87..=93 => FileAction::Rename,
        _ => FileAction::Delete,
    };
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
        server: server.clone(),
        share: share.into(),
        path,
        folder,
        new_path,
        size_bytes: (action != FileAction::Delete).then_some(size),
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
/// between 8:00 and 18:00 (UTC), about two a day as in the seed, with their aggregates.
pub fn produce(ctx: &SeedCtx, from: DateTime<Utc>, to: DateTime<Utc>) -> Produced {
    let servers = servers(ctx);
    let mut events = Vec::new();
    let mut activity = Activity::default();
    if servers.is_empty() {
        return Produced::default();
    }
    for hour in hours_of(from, to) {
        let working = !matches!(hour.weekday(), Weekday::Sat | Weekday::Sun)
            && (8..18).contains(&hour.hour());
        if !working {
            continue;
        }
        let mut rng = ctx.hour_rng("files", hour);
        let mut seq = LIVE_SEQ;
        for m in ctx.machines.iter().filter(|m| m.online) {
            let Some(user) = m.user.as_deref() else {
                continue;
            };
            for _ in 0..3 {
                if !rng.random_bool(1.0 / 15.0) {
                    continue;
                }
                let at = hour + Duration::milliseconds(rng.random_range(0..3_600_000));
                seq += 1;
                let e = event(&mut rng, &servers, m, user, at, seq);
                if from <= at && at < to {
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
