//! The rule of failing runs, which several modules follow: checks or samples in a row that
//! fail open an incident or alert (dated from the first of them), a good one resolves it.
//! The availability monitors' incidents and the databases' sample alerts are derived by it.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::network::LinkStatus;

/// This many failed checks in a row (down or degraded) open an incident.
pub const FAILURES_TO_OPEN: u32 = 3;

/// What the checks of a monitor did to its incidents, in order.
#[derive(Debug, PartialEq)]
pub enum Change {
    /// Open an incident, failing since then, `down` or `degraded` as the check that opens
    /// it, with what that check said.
    Open {
        since: DateTime<Utc>,
        status: LinkStatus,
        error: String,
    },
    /// Resolve the ongoing incident at this time.
    Resolve(DateTime<Utc>),
}

/// A monitor's failing checks in a row: since when, and how many.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Failing {
    pub since: DateTime<Utc>,
    pub checks: u32,
}

/// The rule: [`FAILURES_TO_OPEN`] failed checks in a row open an incident (started at the
/// first of them, `down` or `degraded` as the check that opens it), a good check resolves the
/// ongoing one. Given the monitor's failing run and whether an incident is going on, applies
/// `checks` (newer than the last applied, in time order) and returns the run, whether an
/// incident is going on, and the changes.
pub fn apply_checks<'a>(
    mut failing: Option<Failing>,
    mut ongoing: bool,
    checks: impl IntoIterator<Item = (DateTime<Utc>, LinkStatus, &'a str)>,
) -> (Option<Failing>, bool, Vec<Change>) {
    let mut changes = Vec::new();
    for (at, status, message) in checks {
        if status == LinkStatus::Up {
            failing = None;
            if ongoing {
                changes.push(Change::Resolve(at));
                ongoing = false;
            }
            continue;
        }
        let run = failing.get_or_insert(Failing {
            since: at,
            checks: 0,
        });
        run.checks += 1;
        if !ongoing && run.checks >= FAILURES_TO_OPEN {
            changes.push(Change::Open {
                since: run.since,
                status,
                error: message.to_owned(),
            });
            ongoing = true;
        }
    }
    (failing, ongoing, changes)
}
