//! What the product derives from the databases' observations, for the collection's writers
//! and the demo alike: a metric sample's record and its instance's hourly rollups, a query's
//! statistics as its hourly rollup, and a check result's status and message from the check's
//! expectation.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use netops_shared::store::{Record, Rollup};
use serde_json::{Value, json};

use crate::model::{CheckStatus, MEASURES};

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

#[cfg(test)]
mod tests {
    use super::*;

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
