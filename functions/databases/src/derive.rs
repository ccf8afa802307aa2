//! What the product derives from the databases' observations, for the collection's writers
//! and the demo alike: a metric sample's record and its instance's hourly rollups, a query's
//! statistics as its hourly rollup, a check result's status and message from the check's
//! expectation, and the alerts and state of an instance from its samples
//! ([`apply_samples`]).

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use netops_domain::network::LinkStatus;
use netops_domain::runs::{Change, Failing, apply_checks};
use netops_shared::store::{Record, Rollup};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::model::{
    AlertState, CheckResult, CheckStatus, Criticality, DbAlert, DbAlertKind, InstanceState,
    MEASURES,
};

/// The record of a five-minute sample of instance `instance` at `at`: `values` (as
/// [`MEASURES`]) rounded to the hundredth, one per instance and millisecond (its id is its
/// time: what makes a sample sent again counted once).
pub fn sample_record(instance: i64, at: DateTime<Utc>, values: &[(&str, f64)]) -> Record {
    let mut body = serde_json::Map::new();
    body.insert("ts".into(), json!(at));
    for (k, v) in values {
        body.insert((*k).into(), json!((v * 100.0).round() / 100.0));
    }
    Record {
        partition: instance.to_string(),
        ts: at.timestamp_millis(),
        id: format!("m-{}", at.timestamp_millis()),
        body: Value::Object(body),
    }
}

/// Sums of samples by hour (ms): the [`MEASURES`] then the count of samples.
pub type HourSums = BTreeMap<i64, [f64; 12]>;

/// Adds one sample of `weight` samples (the demo's older hours weigh twelve) to its hour.
pub fn add_sample(hours: &mut HourSums, at: DateTime<Utc>, values: &[(&str, f64)], weight: f64) {
    let ms = at.timestamp_millis();
    let sums = hours.entry(ms - ms.rem_euclid(3_600_000)).or_default();
    for (i, (_, v)) in values.iter().enumerate().take(MEASURES.len()) {
        sums[i] += v * weight;
    }
    sums[MEASURES.len()] += weight;
}

/// An instance's hourly metric rollups, from the sums of `hours`.
pub fn metric_rollups(instance: i64, hours: HourSums) -> Vec<Rollup> {
    hours
        .into_iter()
        .map(|(hour, sums)| Rollup {
            hour,
            key: "all".into(),
            dims: json!({"instance_id": instance}).into(),
            measures: MEASURES
                .iter()
                .chain(&["samples"])
                .zip(sums)
                .map(|(k, v)| ((*k).to_owned(), v))
                .collect(),
        })
        .collect()
}

/// What a collector's snapshot says of one query over its interval.
pub struct QueryStats<'a> {
    pub query_hash: &'a str,
    pub database: &'a str,
    pub statement: &'a str,
    pub executions: f64,
    pub cpu_ms: f64,
    pub duration_ms: f64,
    pub logical_reads: f64,
}

/// The rollup of the hour of `at` (series `db_query_stats/<instance>`, key the query hash)
/// that a snapshot adds to: what `/top-queries` sums over its window.
pub fn query_rollup(at: DateTime<Utc>, q: &QueryStats) -> Rollup {
    let ms = at.timestamp_millis();
    Rollup {
        hour: ms - ms.rem_euclid(3_600_000),
        key: q.query_hash.to_owned(),
        dims: json!({"query_hash": q.query_hash, "database": q.database, "statement": q.statement})
            .into(),
        measures: [
            ("executions", q.executions),
            ("cpu_ms", q.cpu_ms),
            ("duration_ms", q.duration_ms),
            ("logical_reads", q.logical_reads),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect(),
    }
}

/// A check's expectation (`= 0`, `< 24`, `>= 20`...): its comparison and bound.
fn expectation(text: &str) -> Option<(&str, f64)> {
    let text = text.trim();
    let op = ["<=", ">=", "!=", "<", ">", "="]
        .into_iter()
        .find(|op| text.starts_with(op))?;
    Some((op, text[op.len()..].trim().parse().ok()?))
}

/// Within this share of its bound, a value that meets a `<`, `<=`, `>` or `>=` expectation
/// is a warning.
const NEAR: f64 = 0.1;

/// The status of a run that returned `value` (`None`: the query could not run) against the
/// check's `expectation`: `error` without a value, `failed` when the value does not meet the
/// expectation, `warning` when it meets it within 10 % of its bound, else `ok` (also when the
/// expectation cannot be read: nothing to judge by).
pub fn check_status(expectation_text: &str, value: Option<f64>) -> CheckStatus {
    let Some(value) = value else {
        return CheckStatus::Error;
    };
    let Some((op, bound)) = expectation(expectation_text) else {
        return CheckStatus::Ok;
    };
    let met = match op {
        "<=" => value <= bound,
        ">=" => value >= bound,
        "!=" => value != bound,
        "<" => value < bound,
        ">" => value > bound,
        _ => value == bound,
    };
    let near = !["=", "!="].contains(&op) && (value - bound).abs() <= NEAR * bound.abs();
    match (met, near) {
        (false, _) => CheckStatus::Failed,
        (true, true) => CheckStatus::Warning,
        (true, false) => CheckStatus::Ok,
    }
}

/// The message of a run of `status`; `error` is what kept the query from running.
pub fn check_message(status: CheckStatus, expectation: &str, error: Option<&str>) -> String {
    match status {
        CheckStatus::Ok => format!("Conforme ({expectation})"),
        CheckStatus::Warning => format!("Proche du seuil ({expectation})"),
        CheckStatus::Failed => format!("Hors seuil : attendu {expectation}"),
        CheckStatus::Error => format!(
            "Exécution impossible : {}",
            error.unwrap_or("erreur inconnue")
        ),
    }
}

/// The rules on an instance's samples: the alert kind, the measure, the bound a sample
/// reaching it fails, the severity and the message. Each opens its alert at the third failing
/// sample in a row (fifteen minutes at a sample every five), from the first of them, and a
/// sample below the bound resolves it: the rule of the availability monitors
/// ([`apply_checks`]).
pub const METRIC_RULES: [(DbAlertKind, &str, f64, Criticality, &str); 2] = [
    (
        DbAlertKind::CpuHigh,
        "cpu_pct",
        90.0,
        Criticality::High,
        "CPU au-dessus de 90 % pendant 15 minutes",
    ),
    (
        DbAlertKind::MemoryPressure,
        "memory_pct",
        95.0,
        Criticality::Medium,
        "Mémoire utilisée au-dessus de 95 % pendant 15 minutes",
    ),
];

/// What an instance's document keeps of its rules (`metric_runs`, never returned): the
/// latest sample applied and, by rule of [`METRIC_RULES`], the run of failing samples and
/// the alert open.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct MetricRuns {
    pub at: Option<DateTime<Utc>>,
    pub runs: [RuleRun; 2],
}

/// One rule's run of failing samples and its open alert.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct RuleRun {
    pub failing: Option<Failing>,
    pub open: Option<DbAlert>,
}

impl MetricRuns {
    /// The instance's state: `degraded` while one of its rules has an alert open, else
    /// `online` (a sample of an instance shows it answers).
    pub fn state(&self) -> InstanceState {
        if self.runs.iter().any(|r| r.open.is_some()) {
            InstanceState::Degraded
        } else {
            InstanceState::Online
        }
    }
}

/// A sample: its time and its values (as [`MEASURES`]).
pub type Sample = (DateTime<Utc>, [(&'static str, f64); 11]);

/// Applies to `runs` the samples of instance `id` (`name`) newer than the latest applied, in
/// time order (`samples` as [`MEASURES`], in any order): the alerts opened or resolved, each
/// once in its latest state (an alert's id is made of its instance, kind and first failing
/// sample, so the same samples sent again open the same one). An older sample changes nothing.
pub fn apply_samples(
    runs: &mut MetricRuns,
    id: i64,
    name: &str,
    samples: &[Sample],
) -> Vec<DbAlert> {
    let mut newer: Vec<&Sample> = samples
        .iter()
        .filter(|(at, _)| runs.at.is_none_or(|last| *at > last))
        .collect();
    newer.sort_by_key(|(at, _)| *at);
    newer.dedup_by_key(|(at, _)| *at);
    let mut changed: BTreeMap<String, DbAlert> = BTreeMap::new();
    for (rule, run) in METRIC_RULES.iter().zip(runs.runs.iter_mut()) {
        let (kind, measure, bound, severity, message) = *rule;
        let checks = newer.iter().map(|(at, values)| {
            let v = values
                .iter()
                .find(|(k, _)| *k == measure)
                .map_or(0.0, |(_, v)| *v);
            let status = if v >= bound {
                LinkStatus::Down
            } else {
                LinkStatus::Up
            };
            (*at, status, "")
        });
        let (failing, _, changes) = apply_checks(run.failing, run.open.is_some(), checks);
        run.failing = failing;
        for change in changes {
            match change {
                Change::Open { since, .. } => {
                    let alert = DbAlert {
                        id: format!(
                            "dba-{id}-{}-{}",
                            serde_json::to_value(kind)
                                .ok()
                                .and_then(|v| v.as_str().map(str::to_owned))
                                .unwrap_or_default(),
                            since.timestamp()
                        ),
                        instance_id: id,
                        instance: name.to_owned(),
                        kind,
                        severity,
                        status: AlertState::Open,
                        message: message.to_owned(),
                        opened_at: since,
                        resolved_at: None,
                    };
                    changed.insert(alert.id.clone(), alert.clone());
                    run.open = Some(alert);
                }
                Change::Resolve(at) => {
                    if let Some(mut alert) = run.open.take() {
                        alert.status = AlertState::Resolved;
                        alert.resolved_at = Some(at);
                        changed.insert(alert.id.clone(), alert);
                    }
                }
            }
        }
    }
    if let Some((at, _)) = newer.last() {
        runs.at = Some(*at);
    }
    changed.into_values().collect()
}

/// What a check's document keeps of its alert (`alert_run`, never returned): the latest
/// result applied and the `check_failed` alert open.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct CheckRun {
    pub at: Option<DateTime<Utc>>,
    pub open: Option<DbAlert>,
}

/// A check, as its alerts name it.
pub struct CheckRef<'a> {
    pub id: i64,
    pub name: &'a str,
    pub instance_id: i64,
    pub instance: &'a str,
}

/// Applies to `run` the results of `check` newer than the latest applied, in time order: a
/// `failed` or `error` result opens a `check_failed` alert on the check's instance (severity
/// `medium`; its id made of the check and the result's time, so the same results sent again
/// open the same one) unless one is open, an `ok` or `warning` result resolves the open one.
/// Returns the alerts opened or resolved, each once in its latest state.
pub fn apply_results(
    run: &mut CheckRun,
    check: &CheckRef,
    results: &[CheckResult],
) -> Vec<DbAlert> {
    let mut newer: Vec<&CheckResult> = results
        .iter()
        .filter(|r| run.at.is_none_or(|last| r.at > last))
        .collect();
    newer.sort_by_key(|r| r.at);
    let mut changed: BTreeMap<String, DbAlert> = BTreeMap::new();
    for r in newer {
        run.at = Some(r.at);
        let failing = matches!(r.status, CheckStatus::Failed | CheckStatus::Error);
        match (failing, run.open.take()) {
            (true, Some(open)) => run.open = Some(open),
            (true, None) => {
                let alert = DbAlert {
                    id: format!(
                        "dba-{}-check_failed-{}-{}",
                        check.instance_id,
                        check.id,
                        r.at.timestamp()
                    ),
                    instance_id: check.instance_id,
                    instance: check.instance.to_owned(),
                    kind: DbAlertKind::CheckFailed,
                    severity: Criticality::Medium,
                    status: AlertState::Open,
                    message: format!("Contrôle « {} » : {}", check.name, r.message),
                    opened_at: r.at,
                    resolved_at: None,
                };
                changed.insert(alert.id.clone(), alert.clone());
                run.open = Some(alert);
            }
            (false, Some(mut open)) => {
                open.status = AlertState::Resolved;
                open.resolved_at = Some(r.at);
                changed.insert(open.id.clone(), open);
            }
            (false, None) => {}
        }
    }
    changed.into_values().collect()
}

/// An alert's record in the series (partition: its instance, at its opening).
pub fn alert_record(alert: &DbAlert) -> Record {
    Record {
        partition: alert.instance_id.to_string(),
        ts: alert.opened_at.timestamp_millis(),
        id: alert.id.clone(),
        body: serde_json::to_value(alert).unwrap_or_default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn three_samples_in_a_row_at_the_bound_open_an_alert_and_one_below_resolves_it() {
        let t0 = DateTime::from_timestamp(1_790_000_000, 0).unwrap_or_default();
        let sample = |min: i64, cpu: f64| {
            let mut values = [("", 0.0); 11];
            for (i, m) in MEASURES.iter().enumerate() {
                values[i] = (*m, if *m == "cpu_pct" { cpu } else { 10.0 });
            }
            (t0 + chrono::Duration::minutes(min), values)
        };
        let mut runs = MetricRuns::default();
        let two = [sample(0, 95.0), sample(5, 91.0)];
        assert!(apply_samples(&mut runs, 7, "SQL", &two).is_empty());
        assert_eq!(runs.state(), InstanceState::Online);
        // Sent again: older than the latest applied, nothing.
        assert!(apply_samples(&mut runs, 7, "SQL", &two).is_empty());
        let opened = apply_samples(&mut runs, 7, "SQL", &[sample(10, 90.0)]);
        assert_eq!(opened.len(), 1);
        assert_eq!(
            (opened[0].kind, opened[0].status, opened[0].opened_at),
            (DbAlertKind::CpuHigh, AlertState::Open, t0)
        );
        assert_eq!(runs.state(), InstanceState::Degraded);
        let resolved = apply_samples(&mut runs, 7, "SQL", &[sample(20, 40.0), sample(15, 99.0)]);
        assert_eq!(resolved.len(), 1);
        assert_eq!(resolved[0].id, opened[0].id);
        assert_eq!(
            resolved[0].resolved_at,
            Some(t0 + chrono::Duration::minutes(20))
        );
        assert_eq!(runs.state(), InstanceState::Online);
    }

    #[test]
    fn a_failed_check_opens_its_alert_once_and_a_good_result_resolves_it() {
        let t0 = DateTime::from_timestamp(1_790_000_000, 0).unwrap_or_default();
        let result = |min: i64, status: CheckStatus| CheckResult {
            at: t0 + chrono::Duration::minutes(min),
            status,
            value: Some(1.0),
            duration_ms: 5,
            message: "Hors seuil : attendu = 0".into(),
        };
        let check = CheckRef {
            id: 3,
            name: "Commandes",
            instance_id: 7,
            instance: "SQL",
        };
        let mut run = CheckRun::default();
        let ok = [result(0, CheckStatus::Ok), result(5, CheckStatus::Warning)];
        assert!(apply_results(&mut run, &check, &ok).is_empty());
        let failed = [
            result(10, CheckStatus::Failed),
            result(15, CheckStatus::Error),
        ];
        let opened = apply_results(&mut run, &check, &failed);
        assert_eq!(opened.len(), 1);
        assert_eq!(opened[0].opened_at, t0 + chrono::Duration::minutes(10));
        assert!(
            apply_results(&mut run, &check, &failed).is_empty(),
            "sent again"
        );
        let resolved = apply_results(&mut run, &check, &[result(20, CheckStatus::Ok)]);
        assert_eq!(
            (resolved[0].id.as_str(), resolved[0].status),
            (opened[0].id.as_str(), AlertState::Resolved)
        );
    }

    #[test]
    fn a_check_is_judged_by_its_expectation() {
        for (expectation, value, status) in [
            ("= 0", Some(0.0), CheckStatus::Ok),
            ("= 0", Some(14.0), CheckStatus::Failed),
            ("< 24", Some(9.0), CheckStatus::Ok),
            ("< 24", Some(23.0), CheckStatus::Warning),
            ("< 24", Some(24.0), CheckStatus::Failed),
            (">= 20", Some(64.0), CheckStatus::Ok),
            (">= 20", Some(21.0), CheckStatus::Warning),
            (">= 20", Some(12.0), CheckStatus::Failed),
            ("!= 3", Some(3.0), CheckStatus::Failed),
            ("< 5", None, CheckStatus::Error),
            ("une phrase", Some(1.0), CheckStatus::Ok),
        ] {
            assert_eq!(
                check_status(expectation, value),
                status,
                "{expectation} {value:?}"
            );
        }
    }
}
