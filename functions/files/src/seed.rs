//! Shared-file demo data: accesses of the fleet's users to the shares of the file servers,
//! over the whole history, and their aggregates ([`crate::activity`]).

use chrono::{Datelike, Duration, DurationRound, Weekday};
use netops_shared::demo::{MachineKind, SeedCtx};
use netops_shared::module::BoxFuture;
use netops_shared::store::{Record, StoreResult};
use rand::Rng;
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

pub fn seed(ctx: &SeedCtx) -> BoxFuture<'_, StoreResult<()>> {
    Box::pin(async move {
        let mut rng = ctx.rng("files");
        let servers: Vec<String> = ctx
            .machines
            .iter()
            .filter(|m| m.kind == MachineKind::Server && m.os.starts_with("Windows Server"))
            .take(2)
            .map(|m| m.hostname.clone())
            .collect();
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
                    seq += 1;
                    let e = FileEvent {
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
                    };
                    activity.add(&e);
                    events.push(Record {
                        partition: server.clone(),
                        ts: at.timestamp_millis(),
                        id: e.id.clone(),
                        body: to_value(&e),
                    });
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
