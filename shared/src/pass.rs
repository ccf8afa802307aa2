//! The scheduled pass (docs/collect.md#the-scheduled-pass): what the product checks on a
//! clock rather than when data arrives. It runs every minute: a task inside `netops serve`,
//! the `pass` function on an EventBridge schedule on AWS. It goes over every tenant holding a
//! token ([`crate::store::Deployment::tenants`]) and finds the tenants whose collected data
//! stopped arriving: a tenant that has sent batches and none of whose kinds arrived within
//! the last `NETOPS_STALE_AFTER_MINUTES` (60) is stale. The pass's report is one line: under
//! Lambda an EMF line whose metrics (`Tenants`, `StaleTenants`, `PassFailures`) have the
//! function as their only dimension, the stale tenants named in its properties, so that the
//! number of metrics never grows with the tenants.
//!
//! Beside the staleness check, the pass runs the tasks its caller hands it for each tenant
//! ([`Task`]): the expiry of the diagnostic actions no agent took or finished in time
//! (docs/agent.md#expiry), whose module crate the local process and the `pass` function link.

use std::time::Instant;

use chrono::{DateTime, Duration, SecondsFormat, Utc};
use serde::Serialize;
use serde_json::{Value, json};

use crate::module::BoxFuture;
use crate::store::{Filter, StoreResult, Stores};

/// A task of the pass, run for each tenant at `now`: it returns how many items it changed.
pub struct Task {
    /// Its name in the report (`tasks`).
    pub name: &'static str,
    pub run: for<'a> fn(&'a Stores, &'a str, DateTime<Utc>) -> BoxFuture<'a, StoreResult<usize>>,
}

/// The collection of each tenant's last batch per kind: one document per kind, keyed by the
/// kind's name, written by the collection shell ([`note_activity`]).
pub const ACTIVITY: &str = "collect_activity";

/// At most this many kinds are read per tenant (there are fewer kinds than that).
const KINDS_READ: usize = 200;

/// What one pass found.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Report {
    /// Tenants gone over.
    pub tenants: usize,
    /// The tenants whose data stopped arriving, in name order.
    pub stale: Vec<String>,
    /// What could not be read, one line each (`<tenant>: <error>`), in the log only.
    pub failures: Vec<String>,
    /// Per task, the items it changed over every tenant, in the tasks' order.
    pub tasks: Vec<(String, usize)>,
    pub duration_ms: u64,
}

/// Notes that a batch of `kind` was taken in for `tenant` at `at`.
pub async fn note_activity(
    stores: &Stores,
    tenant: &str,
    kind: &str,
    at: DateTime<Utc>,
) -> StoreResult<()> {
    let body = json!({
        "kind": kind,
        "last_batch_at": at.to_rfc3339_opts(SecondsFormat::Millis, true),
    });
    stores
        .docs
        .put(tenant, ACTIVITY, vec![(kind.to_owned(), body)])
        .await
}

/// When `tenant`'s latest batch of any kind was taken in; `None` when it never sent one.
async fn last_batch(stores: &Stores, tenant: &str) -> StoreResult<Option<DateTime<Utc>>> {
    let docs = stores
        .docs
        .list(tenant, ACTIVITY, &Filter::all(), None, KINDS_READ)
        .await?;
    Ok(docs
        .iter()
        .filter_map(|d| d.body["last_batch_at"].as_str())
        .filter_map(|t| DateTime::parse_from_rfc3339(t).ok())
        .map(|t| t.with_timezone(&Utc))
        .max())
}

/// One pass over every tenant at `now`: a tenant whose latest batch is older than
/// `stale_after` is stale. A tenant that cannot be read is a failure of the report, and the
/// pass goes on with the next one; only the list of tenants failing fails the pass.
pub async fn run(
    stores: &Stores,
    now: DateTime<Utc>,
    stale_after: Duration,
    tasks: &[Task],
) -> StoreResult<Report> {
    let started = Instant::now();
    let tenants = stores.deployment.tenants().await?;
    let mut report = Report {
        tenants: tenants.len(),
        tasks: tasks.iter().map(|t| (t.name.to_owned(), 0)).collect(),
        ..Report::default()
    };
    for tenant in tenants {
        for (task, done) in tasks.iter().zip(report.tasks.iter_mut()) {
            match (task.run)(stores, &tenant, now).await {
                Ok(n) => done.1 += n,
                Err(e) => report
                    .failures
                    .push(format!("{tenant}: {}: {e}", task.name)),
            }
        }
        match last_batch(stores, &tenant).await {
            Ok(Some(last)) if now - last > stale_after => report.stale.push(tenant),
            Ok(_) => {}
            Err(e) => report.failures.push(format!("{tenant}: {e}")),
        }
    }
    report.duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    Ok(report)
}

/// The pass inside `netops serve`: every `NETOPS_PASS_EVERY_SECONDS` (60, as the template's
/// schedule on AWS), from the start, with `tasks`. The stale tenants are logged when they
/// change (a warning naming them), failures each time.
pub async fn worker(state: crate::AppState, tasks: &'static [Task]) {
    let stale_after = Duration::minutes(i64::from(state.config.stale_after_minutes));
    let every = std::time::Duration::from_secs(u64::from(state.config.agent.pass_every_secs));
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut stale: Vec<String> = Vec::new();
    loop {
        tick.tick().await;
        match run(&state.stores, Utc::now(), stale_after, tasks).await {
            Ok(report) => {
                for failure in &report.failures {
                    tracing::warn!(%failure, "scheduled pass: a tenant could not be read");
                }
                if report.stale != stale {
                    tracing::warn!(
                        stale = ?report.stale,
                        minutes = state.config.stale_after_minutes,
                        "scheduled pass: tenants whose collected data stopped arriving"
                    );
                    stale = report.stale;
                }
            }
            Err(e) => {
                tracing::warn!(cause = %e, "scheduled pass failed: the tenants could not be listed")
            }
        }
    }
}

/// The pass's line in CloudWatch Embedded Metric Format, for `function`.
pub fn metrics_line(function: &str, at: DateTime<Utc>, report: &Report) -> Value {
    json!({
        "_aws": {
            "Timestamp": at.timestamp_millis(),
            "CloudWatchMetrics": [{
                "Namespace": crate::metrics::NAMESPACE,
                "Dimensions": [["Function"]],
                "Metrics": [
                    {"Name": "Tenants", "Unit": "Count"},
                    {"Name": "StaleTenants", "Unit": "Count"},
                    {"Name": "PassFailures", "Unit": "Count"},
                ],
            }],
        },
        "Function": function,
        "Tenants": report.tenants,
        "StaleTenants": report.stale.len(),
        "PassFailures": report.failures.len(),
        "stale_tenants": report.stale,
        "failures": report.failures,
        "tasks": report.tasks.iter().cloned().collect::<std::collections::BTreeMap<_, _>>(),
        "duration_ms": report.duration_ms,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_counts_the_stale_tenants_and_names_them_outside_the_dimensions() {
        let report = Report {
            tenants: 3,
            stale: vec!["acme".into()],
            failures: vec![],
            tasks: vec![("action_expiry".into(), 2)],
            duration_ms: 4,
        };
        let line = metrics_line("stack-pass", DateTime::UNIX_EPOCH, &report);
        assert_eq!(line["StaleTenants"], 1);
        assert_eq!(line["Tenants"], 3);
        assert_eq!(line["stale_tenants"], json!(["acme"]));
        assert_eq!(
            line["_aws"]["CloudWatchMetrics"][0]["Dimensions"],
            json!([["Function"]])
        );
    }
}
