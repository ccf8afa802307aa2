//! The alerts of the time that passes after the seed: monitor incidents opening and
//! resolving, with the check counts they change, and SIEM incidents opening (with their
//! correlated events) and resolved by the analyst some hours later. Each hour is drawn from
//! its own generator, and each incident's whole life at once, so that a batch knows which
//! incidents open or resolve in it. An incident is a document that API writes change too
//! (acknowledgements): the batch opens and resolves it by [`DocChange`], never overwriting
//! what a write did.

use std::collections::BTreeMap;

use chrono::{DateTime, Datelike, Duration, Utc};
use netops_shared::demo::{DocChange, MachineKind, Produced, SeedCtx, hours_of};
use netops_shared::store::{Record, Rollup};
use rand::Rng;
use serde_json::{Value, json};

use super::{EXTERNAL_IPS, Gen, RULES, incident, monitors, pick, seeded_ongoing, to_value, wide};
use crate::model::{
    CHECKS_DAILY, CHECKS_HOURLY, MONITOR_INCIDENTS, MonitorIncident, MonitorIncidentStatus,
    SIEM_EVENTS, SIEM_INCIDENTS, SiemAction, SiemIncident, SiemStatus, num_key,
};
use crate::monitors::{floor_day, floor_hour};

/// A monitor may fail in one hour out of this many (shifted by monitor), for less than this
/// many hours less one: its incidents never overlap.
const CYCLE_HOURS: i64 = 6;

/// The chance that a monitor fails in one of its hours: about one incident a monitor and
/// day and a half, a few a day for a tenant.
const FAILURE: f64 = 0.1;

/// The longest a SIEM incident stays open before the analyst resolves it, hours.
const SIEM_OPEN_HOURS: i64 = 20;

/// One monitor incident of the time after the seed: its span, whether the monitor was down.
struct Outage {
    monitor: usize,
    start: DateTime<Utc>,
    end: DateTime<Utc>,
    down: bool,
}

/// The hour index (hours since the epoch) of an hour's start.
fn hour_index(hour: DateTime<Utc>) -> i64 {
    hour.timestamp().div_euclid(3600)
}

pub fn produce(ctx: &SeedCtx, from: DateTime<Utc>, to: DateTime<Utc>) -> Produced {
    let mut out = Produced::default();
    monitor_incidents(ctx, from, to, &mut out);
    siem_incidents(ctx, from, to, &mut out);
    out
}

fn monitor_incidents(ctx: &SeedCtx, from: DateTime<Utc>, to: DateTime<Utc>, out: &mut Produced) {
    let monitors = monitors(ctx);
    let active: Vec<usize> = monitors
        .iter()
        .filter(|(_, g)| g.doc.active)
        .map(|(i, _)| *i)
        .collect();
    if active.is_empty() {
        return;
    }
    let ongoing = seeded_ongoing(&active);
    // The outages of the monitors free of a seeded ongoing incident, drawn hour by hour
    // from the earliest one that can still be going on at `from`.
    let mut outages = Vec::new();
    for hour in hours_of(from - Duration::hours(CYCLE_HOURS), to) {
        let mut rng = ctx.hour_rng("monitor-incidents", hour);
        for &i in &active {
            if (hour_index(hour) + i as i64) % CYCLE_HOURS != 0
                || ongoing.iter().any(|(o, _)| *o == i)
            {
                continue;
            }
            if !rng.random_bool(FAILURE) {
                continue;
            }
            let down = rng.random_bool(0.65);
            let start = hour + Duration::seconds(rng.random_range(0..3600));
            let minutes = if down {
                rng.random_range(3..180)
            } else {
                rng.random_range(10..(CYCLE_HOURS - 1) * 60)
            };
            outages.push(Outage {
                monitor: i,
                start,
                end: start + Duration::minutes(minutes),
                down,
            });
        }
    }
    for o in &outages {
        if o.start >= to || o.end < from {
            continue;
        }
        let (_, g) = &monitors[o.monitor];
        let id = ctx.tenant.id_base * 1_000_000_000
            + hour_index(floor_hour(o.start)) * 1000
            + o.monitor as i64;
        let resolved = (o.end < to).then_some(o.end);
        let status = if resolved.is_some() {
            MonitorIncidentStatus::Resolved
        } else {
            MonitorIncidentStatus::Unresolved
        };
        let mut inc: MonitorIncident = incident(g, o.start, resolved, o.down, status, None, None);
        inc.id = id;
        inc.alert_id = format!("hm-{id}");
        out.changes.push(DocChange {
            collection: MONITOR_INCIDENTS,
            key: num_key(id),
            created: (o.start >= from).then(|| to_value(&inc)),
            update: resolved.map(|end| (resolve_monitor_incident as _, json!(end))),
        });
    }
    out.rollups
        .extend(check_counts(&monitors, &ongoing, &outages, from, to));
}

/// Resolves a stored monitor incident at `end` (an acknowledged one keeps who acknowledged
/// it, when, and the notes); one resolved already is left as it is.
fn resolve_monitor_incident(body: &mut Value, end: &Value) -> bool {
    let Ok(mut inc) = serde_json::from_value::<MonitorIncident>(body.clone()) else {
        return false;
    };
    let Ok(end) = serde_json::from_value::<DateTime<Utc>>(end.clone()) else {
        return false;
    };
    if inc.status == MonitorIncidentStatus::Resolved {
        return false;
    }
    inc.status = MonitorIncidentStatus::Resolved;
    inc.resolved_at = Some(end);
    *body = to_value(&inc);
    true
}

/// The checks of `[from, to)` of every active monitor, and the failed ones, in the hourly and
/// daily rows the seed writes: a monitor checks at each multiple of its interval, and a check
/// fails within an incident. A monitor whose seeded ongoing incident's kind was drawn is left
/// out.
fn check_counts(
    monitors: &[(usize, Gen)],
    ongoing: &[(usize, Option<bool>)],
    outages: &[Outage],
    from: DateTime<Utc>,
    to: DateTime<Utc>,
) -> Vec<(String, Vec<Rollup>)> {
    let mut hourly: BTreeMap<i64, BTreeMap<String, f64>> = BTreeMap::new();
    let mut daily: BTreeMap<i64, BTreeMap<String, f64>> = BTreeMap::new();
    for (i, Gen { doc, .. }) in monitors.iter().filter(|(_, g)| g.doc.active) {
        let seeded = ongoing.iter().find(|(o, _)| o == i).map(|(_, down)| *down);
        if seeded == Some(None) {
            continue;
        }
        let every = i64::from(doc.interval_s.max(1));
        let mut t = from.timestamp().div_euclid(every) * every;
        if t < from.timestamp() {
            t += every;
        }
        while t < to.timestamp() {
            let at = DateTime::from_timestamp(t, 0).unwrap_or(from);
            let down = match seeded {
                Some(Some(down)) => Some(down),
                _ => outages
                    .iter()
                    .find(|o| o.monitor == *i && o.start <= at && at < o.end)
                    .map(|o| o.down),
            };
            let failed = match down {
                Some(true) => "down",
                Some(false) => "degraded",
                None => "checks",
            };
            for row in [
                hourly.entry(floor_hour(at).timestamp_millis()).or_default(),
                daily.entry(floor_day(at).timestamp_millis()).or_default(),
            ] {
                for m in ["checks", "degraded", "down"] {
                    let n = row.entry(format!("{}:{m}", doc.id)).or_default();
                    if m == "checks" || m == failed {
                        *n += 1.0;
                    }
                }
            }
            t += every;
        }
    }
    vec![
        (CHECKS_HOURLY.to_owned(), wide(hourly)),
        (CHECKS_DAILY.to_owned(), wide(daily)),
    ]
}

fn siem_incidents(ctx: &SeedCtx, from: DateTime<Utc>, to: DateTime<Utc>, out: &mut Produced) {
    let people: Vec<&str> = ctx.people().map(|a| a.login.as_str()).collect();
    let analyst = ctx
        .accounts
        .iter()
        .find(|a| a.admin && !a.service)
        .map_or("administrateur", |a| a.login.as_str());
    let dc = ctx
        .machines
        .iter()
        .find(|m| m.kind == MachineKind::Server)
        .unwrap_or(&ctx.machines[0]);
    if people.is_empty() {
        return;
    }
    // About one incident a day per 100 machines, as the seed, and at least one a day.
    let per_hour = ((ctx.machines.len() as f64 / 100.0).max(1.0) / 24.0).min(1.0);
    let mut events = Vec::new();
    for hour in hours_of(from - Duration::hours(SIEM_OPEN_HOURS), to) {
        let mut rng = ctx.hour_rng("siem", hour);
        if !rng.random_bool(per_hour) {
            continue;
        }
        let at = hour + Duration::seconds(rng.random_range(0..3600));
        let rule = *pick(&mut rng, RULES);
        let victim = *pick(&mut rng, &people);
        let host = pick(&mut rng, &ctx.machines);
        let ip = if rule.3 == 4625 {
            pick(&mut rng, EXTERNAL_IPS).to_string()
        } else {
            host.ip.clone()
        };
        let hosts = vec![dc.hostname.clone(), host.hostname.clone()];
        let n_events: u64 = rng.random_range(3..40);
        let resolve_at = rng
            .random_bool(0.7)
            .then(|| at + Duration::minutes(rng.random_range(90..SIEM_OPEN_HOURS * 60)));
        if at >= to || resolve_at.is_some_and(|r| r < from) || (at < from && resolve_at.is_none()) {
            continue;
        }
        let id = format!(
            "{}-{}{:06}",
            at.year(),
            ctx.tenant.id_base / 10,
            hour_index(hour)
        );
        let resolve = SiemAction {
            at: resolve_at.unwrap_or(at),
            by: analyst.into(),
            action: "resolve".into(),
            note: Some("Compte vérifié avec son titulaire, adresse bloquée.".into()),
        };
        let resolved_now = resolve_at.is_some_and(|r| r < to);
        let created = (at >= from).then(|| {
            // Correlated events of the half hour before the rule fired.
            for e in 0..n_events {
                let ts = at - Duration::seconds(rng.random_range(0..1800));
                events.push(Record {
                    partition: id.clone(),
                    ts: ts.timestamp_millis(),
                    id: format!("{id}-{e:05}"),
                    body: json!({
                        "ts": ts,
                        "event_id": rule.3,
                        "account": victim,
                        "host": host.hostname,
                        "source_ip": ip,
                        "message": format!("Événement {} pour {victim} depuis {ip}", rule.3),
                    }),
                });
            }
            let mut inc = SiemIncident {
                id: id.clone(),
                title: rule.2.to_owned(),
                severity: rule.4,
                status: SiemStatus::Open,
                rule_id: rule.0.to_owned(),
                rule_name: rule.1.to_owned(),
                opened_at: at,
                updated_at: at,
                closed_at: None,
                accounts: vec![victim.to_owned()],
                hosts: hosts.clone(),
                source_ips: vec![ip.clone()],
                event_count: n_events,
                actions: vec![SiemAction {
                    at,
                    by: "correlation".into(),
                    action: "open".into(),
                    note: Some(format!("Règle {} déclenchée", rule.0)),
                }],
            };
            if resolved_now {
                close(&mut inc, resolve.clone());
            }
            to_value(&inc)
        });
        out.changes.push(DocChange {
            collection: SIEM_INCIDENTS,
            key: id,
            created,
            update: resolved_now.then(|| (resolve_siem_incident as _, to_value(&resolve))),
        });
    }
    out.records.push((SIEM_EVENTS.to_owned(), events));
}

/// Resolves an incident still in progress by the analyst's `action`.
fn close(inc: &mut SiemIncident, action: SiemAction) {
    inc.status = SiemStatus::Resolved;
    inc.updated_at = action.at;
    inc.closed_at = Some(action.at);
    inc.actions.push(action);
}

/// Resolves a stored SIEM incident still in progress (open, acknowledged or under
/// investigation, its actions kept); one resolved or closed already is left as it is.
fn resolve_siem_incident(body: &mut Value, action: &Value) -> bool {
    let (Ok(mut inc), Ok(action)) = (
        serde_json::from_value::<SiemIncident>(body.clone()),
        serde_json::from_value::<SiemAction>(action.clone()),
    ) else {
        return false;
    };
    if matches!(inc.status, SiemStatus::Resolved | SiemStatus::Closed) {
        return false;
    }
    close(&mut inc, action);
    *body = to_value(&inc);
    true
}
