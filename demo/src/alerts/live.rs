//! The alerts of the time that passes after the seed: monitor incidents opening and
//! resolving (those the seed left going on too), with the check counts they change and the
//! monitors' last check, and SIEM incidents opening (with their correlated events) and
//! resolved by the analyst once the next one has opened (those the seed left in progress
//! too). Each hour is drawn from its own generator, and each incident's whole life at once,
//! so that a batch knows which incidents open or resolve in it. An incident is a document
//! that API writes change too (acknowledgements): the batch opens and resolves it by
//! [`DocChange`], never overwriting what a write did.

use crate::{DocChange, MachineKind, Produced, SeedCtx, hours_of};
use chrono::{DateTime, Datelike, Duration, Utc};
use netops_shared::store::Rollup;
use rand::Rng;
use rand::rngs::StdRng;
use serde_json::{Value, json};

use super::{
    EXTERNAL_IPS, Gen, RULES, generate, incident, last_check, pick, siem_event, siem_generate,
    to_value,
};
use netops_alerts::derive::{WideRows, count_check, resolve, wide};
use netops_alerts::model::{
    CHECKS_DAILY, CHECKS_HOURLY, LinkStatus, MONITOR_INCIDENTS, MONITORS, MonitorIncident,
    MonitorIncidentKind, MonitorIncidentStatus, SIEM_EVENTS, SIEM_INCIDENTS, SiemAction,
    SiemIncident, SiemStatus, num_key,
};
use netops_alerts::monitors::floor_hour;

/// A monitor may fail in one hour out of this many (shifted by monitor), for less than this
/// many hours less one: its incidents never overlap.
const CYCLE_HOURS: i64 = 6;

/// The chance that a monitor fails in one of its hours: about one incident a monitor and
/// day and a half, a few a day for a tenant.
const FAILURE: f64 = 0.1;

/// The longest the analyst takes to resolve a SIEM incident once the next one has opened,
/// hours.
const SIEM_LONGEST_HOURS: i64 = 6;

/// One monitor incident of the time after the seed, or one the seed left going on (`seeded`:
/// its number): its span, whether the monitor was down.
struct Outage {
    monitor: usize,
    start: DateTime<Utc>,
    end: DateTime<Utc>,
    down: bool,
    seeded: Option<i64>,
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
    let (monitors, _) = generate(&ctx.as_seeded());
    // The incidents the seed left going on, each until its end after the seed.
    let mut outages: Vec<Outage> = monitors
        .iter()
        .enumerate()
        .filter_map(|(i, g)| {
            let inc = g.incidents.last().filter(|inc| inc.resolved_at.is_none())?;
            Some(Outage {
                monitor: i,
                start: inc.started_at,
                end: g.ongoing_end?,
                down: inc.kind == MonitorIncidentKind::Down,
                seeded: Some(inc.id),
            })
        })
        .collect();
    // Then the produced ones, drawn hour by hour from the earliest one that can still be
    // going on at `from`: those after the seed, on a monitor free of the seed's (half an hour
    // after its end at least).
    let free_from: Vec<DateTime<Utc>> = (0..monitors.len())
        .map(|i| {
            outages
                .iter()
                .find(|o| o.monitor == i)
                .map_or(ctx.seeded_at, |o| o.end + Duration::minutes(30))
        })
        .collect();
    for hour in hours_of(from - Duration::hours(CYCLE_HOURS), to) {
        let mut rng = ctx.hour_rng("monitor-incidents", hour);
        for (i, g) in monitors.iter().enumerate() {
            if !g.doc.active || (hour_index(hour) + i as i64) % CYCLE_HOURS != 0 {
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
            if start >= free_from[i] {
                outages.push(Outage {
                    monitor: i,
                    start,
                    end: start + Duration::minutes(minutes),
                    down,
                    seeded: None,
                });
            }
        }
    }
    for o in &outages {
        if o.start >= to || o.end < from {
            continue;
        }
        let g = &monitors[o.monitor];
        let id = o.seeded.unwrap_or_else(|| {
            ctx.tenant.id_base * 1_000_000_000
                + hour_index(floor_hour(o.start)) * 1000
                + o.monitor as i64
        });
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
        .extend(check_counts(&monitors, &outages, from, to));
    out.docs.push((
        MONITORS.to_owned(),
        last_checks(ctx, monitors, &outages, to),
    ));
}

/// The monitor failing at `at` (down or not) in an incident of `outages`, if it is.
fn failing(outages: &[Outage], monitor: usize, at: DateTime<Utc>) -> Option<bool> {
    outages
        .iter()
        .find(|o| o.monitor == monitor && o.start <= at && at < o.end)
        .map(|o| o.down)
}

/// The times of the checks of a monitor checking every `interval_s` seconds in `[from, to)`:
/// the multiples of its interval.
fn check_times(
    interval_s: u32,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
) -> impl Iterator<Item = DateTime<Utc>> {
    let every = i64::from(interval_s.max(1));
    let first = from.timestamp().div_euclid(every) * every;
    (first..to.timestamp())
        .step_by(every as usize)
        .filter(move |t| *t >= from.timestamp())
        .filter_map(|t| DateTime::from_timestamp(t, 0))
}

/// The active monitors as of their last check, at the batch's end `to`: in the status of the
/// incident open then (started before, not resolved), or up. No API write changes a
/// monitor: put as it stands.
fn last_checks(
    ctx: &SeedCtx,
    monitors: Vec<Gen>,
    outages: &[Outage],
    to: DateTime<Utc>,
) -> Vec<(String, Value)> {
    monitors
        .into_iter()
        .enumerate()
        .filter(|(_, g)| g.doc.active)
        .map(|(i, Gen { mut doc, .. })| {
            let open = outages
                .iter()
                .find(|o| o.monitor == i && o.start < to && to <= o.end);
            doc.status = match open.map(|o| o.down) {
                Some(true) => LinkStatus::Down,
                Some(false) => LinkStatus::Degraded,
                None => LinkStatus::Up,
            };
            let mut rng = ctx.hour_rng(&format!("monitor-check/{}", doc.id), to);
            doc.last_check = Some(last_check(&mut rng, ctx, &doc, to));
            (num_key(doc.id), to_value(&doc))
        })
        .collect()
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
    if !resolve(&mut inc, end) {
        return false;
    }
    *body = to_value(&inc);
    true
}

/// The checks of `[from, to)` of every active monitor, and the failed ones, in the hourly and
/// daily rows the seed writes: a monitor checks at each multiple of its interval, and a check
/// fails within an incident.
fn check_counts(
    monitors: &[Gen],
    outages: &[Outage],
    from: DateTime<Utc>,
    to: DateTime<Utc>,
) -> Vec<(String, Vec<Rollup>)> {
    let (mut hourly, mut daily) = (WideRows::new(), WideRows::new());
    for (i, Gen { doc, .. }) in monitors.iter().enumerate().filter(|(_, g)| g.doc.active) {
        for at in check_times(doc.interval_s, from, to) {
            let status = match failing(outages, i, at) {
                Some(true) => LinkStatus::Down,
                Some(false) => LinkStatus::Degraded,
                None => LinkStatus::Up,
            };
            count_check((&mut hourly, &mut daily), doc.id, at, status, 1.0);
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
    // The seed's incidents still in progress, resolved by the analyst some hours after it.
    for (inc, end) in siem_generate(&ctx.as_seeded()) {
        let Some(end) = end.filter(|end| from <= *end && *end < to) else {
            continue;
        };
        out.changes.push(DocChange {
            collection: SIEM_INCIDENTS,
            key: inc.id,
            created: None,
            update: Some((resolve_siem_incident, to_value(&resolution(analyst, end)))),
        });
    }
    // The incidents of the windows that can open before `to` and resolve at `from` or after.
    let hours = siem_window_hours(ctx);
    let first = siem_window(ctx, from - Duration::hours(2 * hours + SIEM_LONGEST_HOURS));
    let mut events = Vec::new();
    for window in first..=siem_window(ctx, to) {
        let (at, mut rng) = siem_opening(ctx, window);
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
        let resolve_at =
            (at + Duration::minutes(rng.random_range(90..SIEM_LONGEST_HOURS * 60))).max(
                siem_queue_cleared(&mut rng, siem_opening(ctx, window + 1).0),
            );
        if at < ctx.seeded_at || at >= to || resolve_at < from {
            continue;
        }
        let id = format!(
            "{}-{}{:06}",
            at.year(),
            ctx.tenant.id_base / 10,
            hour_index(floor_hour(at))
        );
        let resolve = resolution(analyst, resolve_at);
        let resolved_now = resolve_at < to;
        let created = (at >= from).then(|| {
            // Correlated events of the half hour before the rule fired.
            for e in 0..n_events {
                let ts = at - Duration::seconds(rng.random_range(0..1800));
                events.push(siem_event(
                    &id,
                    e,
                    ts,
                    rule.3,
                    [victim, &host.hostname, &ip],
                ));
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

/// The hours of a window of the SIEM queue: one incident opens in each, about one a day per
/// 100 machines as in the seed, and at least one a day.
fn siem_window_hours(ctx: &SeedCtx) -> i64 {
    (2400 / ctx.machines.len().max(100)).max(1) as i64
}

/// The window of the SIEM queue that `t` is in.
fn siem_window(ctx: &SeedCtx, t: DateTime<Utc>) -> i64 {
    hour_index(t).div_euclid(siem_window_hours(ctx))
}

/// When the incident of a window of the SIEM queue opens, and the window's generator, which
/// draws the rest of it.
fn siem_opening(ctx: &SeedCtx, window: i64) -> (DateTime<Utc>, StdRng) {
    let hours = siem_window_hours(ctx);
    let start = DateTime::from_timestamp(window * hours * 3600, 0).unwrap_or(ctx.now);
    let mut rng = ctx.hour_rng("siem", start);
    let at = start + Duration::seconds(rng.random_range(0..hours * 3600));
    (at, rng)
}

/// When the analyst has resolved the incidents in progress once one opened at `next`: each
/// stays in progress until the next one has opened, so there is one at any time.
fn siem_queue_cleared(rng: &mut StdRng, next: DateTime<Utc>) -> DateTime<Utc> {
    next + Duration::minutes(rng.random_range(15..SIEM_LONGEST_HOURS * 60 / 2))
}

/// When the analyst has resolved a SIEM incident that the seed left in progress at `seeded`
/// (`rng` the seed's generator): once the first produced incident has opened.
pub(super) fn seeded_siem_resolved(
    ctx: &SeedCtx,
    rng: &mut StdRng,
    seeded: DateTime<Utc>,
) -> DateTime<Utc> {
    let window = siem_window(ctx, seeded);
    let (at, _) = siem_opening(ctx, window);
    let next = if at >= seeded {
        at
    } else {
        siem_opening(ctx, window + 1).0
    };
    siem_queue_cleared(rng, next)
}

/// The analyst's resolution of an incident at `at`.
fn resolution(analyst: &str, at: DateTime<Utc>) -> SiemAction {
    SiemAction {
        at,
        by: analyst.into(),
        action: "resolve".into(),
        note: Some("Compte vérifié avec son titulaire, adresse bloquée.".into()),
    }
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
