//! What the product derives from the availability checks, for the collection's writer and the
//! demo alike: a check's result from what the probe saw, the check counts behind the
//! availability of `/monitors`, the severity of a monitor incident and its resolution. The
//! rule that opens and resolves incidents from consecutive checks is the domain's
//! ([`netops_domain::runs`]), which the databases' sample alerts follow too.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use netops_shared::store::Rollup;
use serde_json::json;

use crate::model::{LinkStatus, MonitorIncident, MonitorIncidentStatus, MonitorType, Severity};
use crate::monitors::{floor_day, floor_hour};

/// A check answered in this many milliseconds or more is `degraded`.
pub const SLOW_MS: u32 = 1000;

/// The result of a check: `down` when the target did not answer as expected, `degraded` when
/// it answered in [`SLOW_MS`] or more, else `up`.
pub fn check_status(ok: bool, response_ms: Option<u32>) -> LinkStatus {
    if !ok {
        LinkStatus::Down
    } else if response_ms.is_some_and(|ms| ms >= SLOW_MS) {
        LinkStatus::Degraded
    } else {
        LinkStatus::Up
    }
}

/// Adds one check of monitor `monitor` at `at` in `status` (`weight` checks) to the hourly and
/// daily wide rows: the measures `<id>:checks`, `<id>:degraded` and `<id>:down`.
pub fn count_check(
    (hourly, daily): (&mut WideRows, &mut WideRows),
    monitor: i64,
    at: DateTime<Utc>,
    status: LinkStatus,
    weight: f64,
) {
    for row in [
        hourly.entry(floor_hour(at).timestamp_millis()).or_default(),
        daily.entry(floor_day(at).timestamp_millis()).or_default(),
    ] {
        for m in ["checks", "degraded", "down"] {
            let n = row.entry(format!("{monitor}:{m}")).or_default();
            if m == "checks" || m == status.as_str() {
                *n += weight;
            }
        }
    }
}

/// Check counts being made: measures by name, by hour (or day) in ms.
pub type WideRows = BTreeMap<i64, BTreeMap<String, f64>>;

/// Check counts as stored: one wide row per hour (or day) with the measures
/// `<monitor id>:checks|degraded|down` of every monitor.
pub fn wide(rows: WideRows) -> Vec<Rollup> {
    rows.into_iter()
        .map(|(hour, measures)| Rollup {
            hour,
            key: "all".into(),
            dims: json!({}).into(),
            measures,
        })
        .collect()
}

/// The severity of an incident of a monitor of type `kind`: a monitor down is high
/// (critical for a critical service), a slow one by what it checks.
pub fn incident_severity(kind: MonitorType, critical: bool, down: bool) -> Severity {
    match (down, kind) {
        (true, _) if critical => Severity::Critical,
        (true, _) => Severity::High,
        (false, MonitorType::Dns) => Severity::Low,
        (false, MonitorType::Ping) => Severity::Info,
        _ => Severity::Medium,
    }
}

/// Resolves an incident still going on at `end`: an acknowledged one keeps who acknowledged
/// it, when, and its notes. Returns false for one resolved already, left as it is.
pub fn resolve(inc: &mut MonitorIncident, end: DateTime<Utc>) -> bool {
    if inc.status == MonitorIncidentStatus::Resolved {
        return false;
    }
    inc.status = MonitorIncidentStatus::Resolved;
    inc.resolved_at = Some(end);
    true
}

/// The number of the incident of monitor `monitor` opened by a check failing from `since`:
/// made of both, so that the same checks sent again open the same incident.
pub fn incident_number(monitor: i64, since: DateTime<Utc>) -> i64 {
    since.timestamp().div_euclid(60) * 1000 + monitor.rem_euclid(1000)
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Duration;
    use netops_domain::runs::{Change, apply_checks};

    #[test]
    fn three_failed_checks_in_a_row_open_an_incident_and_a_good_one_resolves_it() {
        let t0 = Utc::now();
        let at = |m: i64| t0 + Duration::minutes(m);
        let (d, u, s) = (LinkStatus::Down, LinkStatus::Up, LinkStatus::Degraded);
        // Two failures, a success, then three: one incident, from the first of the three.
        let (failing, ongoing, changes) = apply_checks(
            None,
            false,
            [
                (at(0), d, "x"),
                (at(1), s, "x"),
                (at(2), u, ""),
                (at(3), s, "lent"),
            ]
            .into_iter()
            .chain([(at(4), d, "a"), (at(5), d, "b"), (at(6), d, "c")]),
        );
        assert_eq!(
            changes,
            [Change::Open {
                since: at(3),
                status: LinkStatus::Down,
                error: "b".into()
            }]
        );
        assert!(ongoing);
        assert_eq!(failing.map(|f| f.checks), Some(4));
        // Failing on: nothing more; then a success resolves it.
        let (failing, ongoing, changes) =
            apply_checks(failing, ongoing, [(at(7), d, ""), (at(8), u, "")]);
        assert_eq!(changes, [Change::Resolve(at(8))]);
        assert!(!ongoing && failing.is_none());
        assert_eq!(check_status(true, Some(SLOW_MS)), LinkStatus::Degraded);
        assert_eq!(check_status(true, None), LinkStatus::Up);
        assert_eq!(check_status(false, Some(3)), LinkStatus::Down);
    }
}
