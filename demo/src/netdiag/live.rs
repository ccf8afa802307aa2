//! NetDiag of the time that passes after the seed: the measurements of every online machine
//! each quarter hour, and its verdict episodes (a non-OK verdict for half an hour to five
//! hours) with their periods, events and alerts, opening and resolving. Each hour is drawn
//! from its own generator and each episode whole, so that a batch knows which episodes start
//! or end in it. The episodes the seed left in progress end as it drew them, and their
//! machines go on. The applied settings are an input: a probe of `extraProbes` that a
//! machine's agent applied is measured from the time it applied it (docs/agent.md).

use std::collections::HashMap;

use crate::{DocChange, Produced, SeedCtx, hours_of};
use chrono::{DateTime, Duration, Utc};
use netops_shared::module::BoxFuture;
use netops_shared::store::{Filter, Record, StoreResult, Stores};
use rand::Rng;
use serde_json::{Value, json};

use super::{
    Ctx, Episode, FeedEvent, History, alert_title, causes, closing_events, history, machines,
    measurement, opening_events, period_id, quarter, record, round1, seeded_alert_id, severity,
    trace_hops, weighted_verdict,
};
use netops_netdiag::model::{
    AGENTS, ALERTS, AgentInfo, EVENTS, MEASURES, Measurement, PERIODS, ProbeKind, ProbeResult,
    SAMPLE_MINUTES, SETTINGS, STATES, Settings, Verdict,
};

/// The extra probes each machine's agent applied, by host name, and when it applied them.
type Applied = HashMap<String, (DateTime<Utc>, Vec<String>)>;

/// The extra probes of `tenant`'s machines whose agent applied the settings they are in (the
/// machine's current settings, when the version applied is theirs).
async fn applied(stores: &Stores, tenant: &str) -> StoreResult<Applied> {
    let agents: HashMap<String, AgentInfo> = stores
        .docs
        .read_all(tenant, AGENTS, &Filter::all())
        .await?
        .items
        .into_iter()
        .filter_map(|d| Some((d.key, serde_json::from_value(d.body).ok()?)))
        .collect();
    let hosts: Vec<String> = agents.keys().cloned().collect();
    let mut out = Applied::new();
    for d in stores.docs.get_many(tenant, SETTINGS, &hosts).await? {
        let (Some(agent), Ok(settings)) = (
            agents.get(&d.key),
            serde_json::from_value::<Settings>(d.body),
        ) else {
            continue;
        };
        if let (Some(at), Some(version)) =
            (agent.settings_applied_at, agent.settings_applied_version)
            && version == d.version
            && !settings.extra_probes.is_empty()
        {
            out.insert(d.key, (at, settings.extra_probes));
        }
    }
    Ok(out)
}

/// Adds the extra probes to a measurement: answered a few milliseconds after the Internet's
/// latency while the Internet answers, failed otherwise (a name without port is a DNS probe).
fn add_extra_probes(mm: &mut Measurement, probes: &[String]) {
    for (i, target) in probes.iter().enumerate() {
        let ms = mm
            .latency_ms
            .internet
            .map(|net| round1(net + 3.0 + 2.0 * i as f64));
        mm.probes.push(ProbeResult {
            target: target.clone(),
            kind: if target.contains(':') {
                ProbeKind::Tcp
            } else {
                ProbeKind::Dns
            },
            ok: ms.is_some(),
            ms,
            error: ms.is_none().then(|| "délai dépassé".to_owned()),
        });
    }
}

/// A machine may turn non-OK in one hour out of this many (shifted by machine), for at most
/// five hours: its episodes never overlap.
const CYCLE_HOURS: i64 = 36;

/// The chance that a machine turns non-OK in one of its hours: an episode every three days
/// or so, as the seed's.
const EPISODE: f64 = 0.5;

/// How far back an episode that ends in a batch can start, hours.
const LONGEST_HOURS: i64 = 6;

fn hour_index(t: DateTime<Utc>) -> i64 {
    t.timestamp().div_euclid(3600)
}

/// One episode of a machine after the seed, or the one the seed left in progress (`seeded`:
/// its rank among the machine's episodes in the seed), with the hops of its trace (drawn
/// when it starts).
struct Going {
    episode: Episode,
    hops: Option<Vec<Value>>,
    seeded: Option<usize>,
}

/// NetDiag's data of `[from, to)`, with the extra probes the agents applied ([`applied`]).
pub fn produce<'a>(
    ctx: &'a SeedCtx,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
) -> BoxFuture<'a, StoreResult<Produced>> {
    Box::pin(async move {
        let applied = applied(&ctx.stores, ctx.tenant.id).await?;
        Ok(draw(ctx, from, to, &applied))
    })
}

fn draw(ctx: &SeedCtx, from: DateTime<Utc>, to: DateTime<Utc>, applied: &Applied) -> Produced {
    let seeded = ctx.as_seeded();
    let online: Vec<_> = machines(&seeded)
        .into_iter()
        .filter(|(_, m, _)| m.online)
        .map(|(k, m, forced)| (k, history(&seeded, m, forced)))
        .collect();
    // The episode each machine is in at the seed (the seed's end being its last measure).
    let mut episodes: Vec<Vec<Going>> = online
        .iter()
        .map(|(_, h)| {
            h.eps
                .iter()
                .enumerate()
                .filter(|(_, e)| e.end > h.end)
                .map(|(n, e)| Going {
                    episode: e.clone(),
                    hops: None,
                    seeded: Some(n),
                })
                .collect()
        })
        .collect();
    // Then the produced ones, drawn hour by hour (every machine's draws in each hour, so an
    // hour's episodes do not depend on the batch): those after the seed, on a machine whose
    // episode of the seed has ended.
    let free_from: Vec<DateTime<Utc>> = episodes
        .iter()
        .map(|eps| {
            eps.iter()
                .map(|g| g.episode.end)
                .fold(ctx.seeded_at, DateTime::max)
        })
        .collect();
    for hour in hours_of(from - Duration::hours(LONGEST_HOURS), to) {
        let mut rng = ctx.hour_rng("netdiag-episodes", hour);
        for (n, (k, h)) in online.iter().enumerate() {
            if (hour_index(hour) + 7 * *k as i64) % CYCLE_HOURS != 0 || !rng.random_bool(EPISODE) {
                continue;
            }
            let verdict = weighted_verdict(&mut rng);
            let start = quarter(hour + Duration::minutes(rng.random_range(0..60)));
            let end = start + Duration::minutes(SAMPLE_MINUTES * rng.random_range(2..=20));
            let cause = rng.random_range(0..causes(verdict).len());
            let hops = matches!(verdict, Verdict::WAN | Verdict::LAN | Verdict::INFRA)
                .then(|| trace_hops(&mut rng, &h.c.gateway, "8.8.8.8"));
            if start >= free_from[n] {
                episodes[n].push(Going {
                    episode: Episode {
                        start,
                        end,
                        verdict,
                        cause,
                    },
                    hops,
                    seeded: None,
                });
            }
        }
    }
    let mut out = Produced::default();
    let (mut measures, mut periods, mut events, mut alerts) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for ((_, History { c, .. }), eps) in online.iter().zip(&episodes) {
        let m = c.m;
        for hour in hours_of(from, to) {
            let mut rng = ctx.hour_rng(&format!("netdiag/{}", m.hostname), hour);
            for q in 0..60 / SAMPLE_MINUTES {
                let t = hour + Duration::minutes(q * SAMPLE_MINUTES);
                let ep = eps
                    .iter()
                    .map(|g| &g.episode)
                    .find(|e| e.start <= t && t < e.end);
                let mut mm = measurement(&mut rng, c, t, ep);
                if let Some((since, probes)) = applied.get(&m.hostname)
                    && t >= *since
                {
                    add_extra_probes(&mut mm, probes);
                }
                if from <= t && t < to {
                    measures.push(record(
                        &m.hostname,
                        t,
                        format!("m-{}", t.timestamp()),
                        serde_json::to_value(mm).unwrap_or_default(),
                    ));
                }
            }
        }
        let mut state = json!({ "last_measure_at": quarter(to - Duration::seconds(1)) });
        for Going {
            episode: e,
            hops,
            seeded,
        } in eps
        {
            if e.start >= to || e.end < from {
                continue;
            }
            let ended = e.end < to;
            let (id, period_id) = match seeded {
                Some(n) => (seeded_alert_id(&m.hostname, *n), period_id(*n)),
                None => (
                    format!("nd-{}-{}", m.hostname, hour_index(e.start)),
                    format!("p-{}", hour_index(e.start)),
                ),
            };
            let cause = e.cause_text();
            let minutes = ((if ended { e.end } else { to }) - e.start).num_minutes();
            let sev = severity(e.verdict, minutes);
            let title = alert_title(e.verdict, &m.hostname, cause);
            let mut feed = Vec::new();
            if e.start >= from {
                // Rated on the whole episode, as the seed's, whatever batch it starts in.
                let whole = severity(e.verdict, (e.end - e.start).num_minutes());
                feed.extend(opening_events(e, &id, whole, &title, hops.clone()));
            }
            if ended {
                feed.extend(closing_events(e, &id, minutes));
                state = json!({"verdict": Verdict::OK, "cause": null, "since": e.end,
                    "open_alert": null, "last_measure_at": state["last_measure_at"]});
            } else {
                state = json!({"verdict": e.verdict, "cause": cause, "since": e.start,
                    "open_alert": id, "last_measure_at": state["last_measure_at"]});
            }
            events.extend(feed.into_iter().map(|f| event(c, f)));
            // The same record again once it has ended: it replaces the one written open.
            periods.push(record(
                &m.hostname,
                e.start,
                period_id,
                serde_json::to_value(e.period(ended)).unwrap_or_default(),
            ));
            let alert = e.alert(&id, &m.hostname, sev, title, ended);
            alerts.push((id, serde_json::to_value(alert).unwrap_or_default()));
        }
        // The state as of the batch's end, over what the seed or an earlier batch left.
        out.changes.push(DocChange {
            collection: STATES,
            key: m.hostname.clone(),
            created: None,
            update: Some((merge, state)),
        });
    }
    out.records = vec![
        (MEASURES.to_owned(), measures),
        (PERIODS.to_owned(), periods),
        (EVENTS.to_owned(), events),
    ];
    // No API write changes a NetDiag alert (it closes by itself): put as it stands.
    out.docs = vec![(ALERTS.to_owned(), alerts)];
    out
}

/// One event of the feed, its id from the machine, time and source (unique: one event of a
/// source a second at most).
fn event(c: &Ctx, (at, source, sev, message, details): FeedEvent) -> Record {
    let id = format!("ev-{}-{}-{source}", c.m.id, at.timestamp());
    let body = json!({"id": id, "at": at, "source": source, "severity": sev, "message": message, "details": details});
    record(&c.m.hostname, at, id, body)
}

/// Sets the fields of `fields` in the stored document.
fn merge(body: &mut Value, fields: &Value) -> bool {
    let (Some(body), Some(fields)) = (body.as_object_mut(), fields.as_object()) else {
        return false;
    };
    for (k, v) in fields {
        body.insert(k.clone(), v.clone());
    }
    true
}
