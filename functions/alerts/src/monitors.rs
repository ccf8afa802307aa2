//! Monitor state and availability (`list_monitors` in the OpenAPI description): availability
//! comes from hourly check counts for the last 24 hours and daily counts for 7 and 30 days, so
//! a full list reads a few rows per monitor whatever the check interval.

use std::collections::{BTreeMap, HashMap};

use chrono::{DateTime, Duration, DurationRound, Utc};
use netops_shared::store::{Filter, Pred};
use netops_shared::{ApiError, AppState};
use serde_json::json;

use crate::model::{
    Availability, CHECKS_DAILY, CHECKS_HOURLY, MONITOR_INCIDENTS, Monitor, MonitorDoc,
    MonitorIncidentStatus,
};

/// Check counts summed over a span.
#[derive(Debug, Default, Clone, Copy)]
struct Counts {
    checks: f64,
    down: f64,
}

impl Counts {
    fn percent(self) -> Option<f64> {
        (self.checks > 0.0)
            .then(|| (((self.checks - self.down) / self.checks) * 100_000.0).round() / 1000.0)
    }
}

pub fn floor_hour(t: DateTime<Utc>) -> DateTime<Utc> {
    t.duration_trunc(Duration::hours(1)).unwrap_or(t)
}

pub fn floor_day(t: DateTime<Utc>) -> DateTime<Utc> {
    t.duration_trunc(Duration::days(1)).unwrap_or(t)
}

/// Adds a wide row (`<monitor id>:checks|down` measures) into the spans of each monitor.
fn add_row(
    spans: &mut HashMap<i64, [Counts; 3]>,
    measures: &BTreeMap<String, f64>,
    slots: &[usize],
    only: Option<i64>,
) {
    for (name, v) in measures {
        let Some((id, measure)) = name.split_once(':') else {
            continue;
        };
        let Ok(id) = id.parse::<i64>() else { continue };
        if only.is_some_and(|o| o != id) {
            continue;
        }
        let span = spans.entry(id).or_default();
        for &slot in slots {
            match measure {
                "checks" => span[slot].checks += v,
                "down" => span[slot].down += v,
                _ => {}
            }
        }
    }
}

/// Availability per monitor id over 24 h, 7 d and 30 d; `only` restricts to one monitor.
/// The check counts are stored as one wide row per hour and per day, so a full list reads
/// 25 + 30 rows whatever the number of monitors.
async fn availability(
    state: &AppState,
    tenant: &str,
    only: Option<i64>,
    now: DateTime<Utc>,
) -> Result<HashMap<i64, Availability>, ApiError> {
    let hour = floor_hour(now);
    let day = floor_day(now);
    let all = Filter::all();
    let (hourly, daily) = tokio::try_join!(
        state.stores.rollups.rows(
            tenant,
            CHECKS_HOURLY,
            (hour - Duration::hours(23)).timestamp_millis(),
            (hour + Duration::hours(1)).timestamp_millis(),
            &all,
        ),
        state.stores.rollups.rows(
            tenant,
            CHECKS_DAILY,
            (day - Duration::days(29)).timestamp_millis(),
            (day + Duration::days(1)).timestamp_millis(),
            &all,
        ),
    )?;
    let week_start = (day - Duration::days(6)).timestamp_millis();
    let mut spans: HashMap<i64, [Counts; 3]> = HashMap::new();
    for r in &hourly {
        add_row(&mut spans, &r.measures, &[0], only);
    }
    for r in &daily {
        let slots: &[usize] = if r.hour >= week_start { &[1, 2] } else { &[2] };
        add_row(&mut spans, &r.measures, slots, only);
    }
    Ok(spans
        .into_iter()
        .map(|(k, [h24, d7, d30])| {
            (
                k,
                Availability {
                    h24: h24.percent(),
                    d7: d7.percent(),
                    d30: d30.percent(),
                },
            )
        })
        .collect())
}

/// Ongoing incident (alert id) per monitor id.
async fn ongoing(state: &AppState, tenant: &str) -> Result<HashMap<i64, String>, ApiError> {
    let docs = state
        .stores
        .docs
        .live_since(tenant, MONITOR_INCIDENTS, None)
        .await?
        .items;
    let ongoing = Filter::all().and(Pred::Ne("status", json!(MonitorIncidentStatus::Resolved)));
    let mut out = HashMap::new();
    for d in docs.iter().filter(|d| ongoing.matches(&d.body)) {
        if let (Some(m), Some(a)) = (d.body["monitor_id"].as_i64(), d.body["alert_id"].as_str()) {
            out.insert(m, a.to_owned());
        }
    }
    Ok(out)
}

/// The monitors with their availability and ongoing incident.
pub async fn with_state(
    state: &AppState,
    tenant: &str,
    docs: Vec<MonitorDoc>,
    only: Option<i64>,
    now: DateTime<Utc>,
) -> Result<Vec<Monitor>, ApiError> {
    let (mut avail, open) = tokio::try_join!(
        availability(state, tenant, only, now),
        ongoing(state, tenant)
    )?;
    Ok(docs
        .into_iter()
        .map(|m| Monitor {
            availability: avail.remove(&m.id).unwrap_or(Availability {
                h24: None,
                d7: None,
                d30: None,
            }),
            open_incident: open.get(&m.id).cloned(),
            id: m.id,
            name: m.name,
            kind: m.kind,
            target: m.target,
            site: m.site,
            active: m.active,
            status: m.status,
            interval_s: m.interval_s,
            created_at: m.created_at,
            last_check: m.last_check,
        })
        .collect())
}
