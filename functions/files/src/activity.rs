//! The aggregates of file activity that the summary reads (`get_file_summary` in the OpenAPI
//! description), and how they are built from access events.
//!
//! Three tenant-level series, each a UTC day of hours packed into one row per key
//! ([`netops_shared::store::daily`]), so that a window of D days reads about D+2 rows per key,
//! however many users the tenant has:
//!
//! - [`TOTALS`], key `all`: events `e|<action>` and bytes `b|<action>`;
//! - [`USERS`], keys `users#<n>` (the users spread over [`USER_SHARDS`] rows): events
//!   `<action>|<user>`, from which the most active users and their actions come;
//! - [`FOLDERS`], keys `<folder>#<n>` ([`FOLDER_SHARDS`] rows a folder): events `<action>`,
//!   and `u|<user>` for each user who touched the folder, so that its distinct users over any
//!   window are the distinct names of the window's rows (a count of users per day could not
//!   be added up across days).
//!
//! Every figure of the summary is exact for any window: whole days come from the day totals,
//! the hours of the partial days at the edges from the packed rows.

use std::collections::{BTreeMap, HashMap};

use netops_shared::store::daily::{self, DayRows, Span};
use netops_shared::store::{Filter, Rollup, Rollups, StoreResult};
use serde_json::json;

use crate::model::*;

/// Events and bytes per action, for the whole tenant.
pub const TOTALS: &str = "file_totals";
/// Events per user and action.
pub const USERS: &str = "file_users";
/// Events per folder and action, and the folder's users.
pub const FOLDERS: &str = "file_folders";

/// Rows the users of a day are spread over (a store item holds at most 400 KB: about 4,000
/// users a row).
pub const USER_SHARDS: u32 = 8;
/// Rows the users of one folder and day are spread over.
pub const FOLDER_SHARDS: u32 = 4;

/// Users and folders shown.
const TOP: usize = 10;

/// The aggregates of a batch of access events, built up one event at a time: the seed feeds
/// it the demo's events, a collector the events it receives, and both add the rows of
/// [`Activity::series`] into the store.
#[derive(Default)]
pub struct Activity {
    totals: DayRows,
    users: DayRows,
    folders: DayRows,
}

impl Activity {
    pub fn add(&mut self, e: &FileEvent) {
        let at = e.at.timestamp_millis();
        let action = e.action.as_str();
        // Bytes moved: what was read or written; a rename or a delete moves none.
        let bytes = match e.action {
            FileAction::Read | FileAction::Modify | FileAction::Create => {
                e.size_bytes.unwrap_or(0) as f64
            }
            FileAction::Delete | FileAction::Rename => 0.0,
        };
        let (events, volume) = (daily::of("e", action), daily::of("b", action));
        let mut totals = vec![(events.as_str(), 1.0)];
        if bytes > 0.0 {
            totals.push((volume.as_str(), bytes));
        }
        self.totals.add_all(at, "all", || json!({}), totals);
        self.users.add(
            at,
            &daily::shard("users", &e.user, USER_SHARDS),
            || json!({}),
            &daily::of(action, &e.user),
            1.0,
        );
        self.folders.add_all(
            at,
            &daily::shard(&e.folder, &e.user, FOLDER_SHARDS),
            || json!({"folder": e.folder}),
            [(action, 1.0), (daily::of("u", &e.user).as_str(), 1.0)],
        );
    }

    /// The rows to add, as (series, rows).
    pub fn series(self) -> Vec<(String, Vec<Rollup>)> {
        let mut out = self.totals.series(TOTALS, true);
        out.extend(self.users.series(USERS, true));
        out.extend(self.folders.series(FOLDERS, true));
        out
    }
}

/// Events, distinct users and events per action of one folder.
#[derive(Default)]
struct FolderTally {
    events: f64,
    users: u32,
    by_action: BTreeMap<String, f64>,
}

/// The summary of the hours of `span`.
pub async fn summary(rollups: &dyn Rollups, tenant: &str, span: Span) -> StoreResult<FileSummary> {
    let all = Filter::all();
    let (totals, users, folders) = tokio::try_join!(
        daily::sums(rollups, tenant, TOTALS, span, &all),
        daily::sums(rollups, tenant, USERS, span, &all),
        daily::sums(rollups, tenant, FOLDERS, span, &all),
    )?;
    let mut total = Volume::default();
    let mut by_action: BTreeMap<String, Volume> = FileAction::ALL
        .iter()
        .map(|a| (a.as_str().to_owned(), Volume::default()))
        .collect();
    for (name, v) in totals.iter().flat_map(|r| &r.measures) {
        let Some((code, action)) = daily::entity(name) else {
            continue;
        };
        let volume = by_action.entry(action.to_owned()).or_default();
        match code {
            "e" => {
                volume.events += v;
                total.events += v;
            }
            "b" => {
                volume.bytes += v;
                total.bytes += v;
            }
            _ => {}
        }
    }

    let mut per_user: HashMap<&str, (f64, BTreeMap<String, f64>)> = HashMap::new();
    for (name, v) in users.iter().flat_map(|r| &r.measures) {
        if let Some((action, user)) = daily::entity(name) {
            let u = per_user.entry(user).or_default();
            u.0 += v;
            *u.1.entry(action.to_owned()).or_insert(0.0) += v;
        }
    }
    let mut top_users: Vec<ActiveUser> = per_user
        .into_iter()
        .map(|(user, (events, by_action))| ActiveUser {
            user: user.to_owned(),
            events,
            by_action,
        })
        .collect();
    top_users.sort_by(|a, b| {
        b.events
            .total_cmp(&a.events)
            .then_with(|| a.user.cmp(&b.user))
    });
    top_users.truncate(TOP);

    // A folder's rows hold disjoint users (each user has one row of the folder), so its
    // distinct users are the sum of its rows' user names.
    let mut per_folder: HashMap<&str, FolderTally> = HashMap::new();
    for row in &folders {
        let Some(folder) = row.dims["folder"].as_str() else {
            continue;
        };
        let f = per_folder.entry(folder).or_default();
        for (name, v) in &row.measures {
            match daily::entity(name) {
                Some(("u", _)) => f.users += 1,
                Some(_) => {}
                None => {
                    f.events += v;
                    *f.by_action.entry(name.clone()).or_insert(0.0) += v;
                }
            }
        }
    }
    let mut top_folders: Vec<ActiveFolder> = per_folder
        .into_iter()
        .map(|(folder, f)| ActiveFolder {
            folder: folder.to_owned(),
            events: f.events,
            users: f.users,
            by_action: f.by_action,
        })
        .collect();
    top_folders.sort_by(|a, b| {
        b.events
            .total_cmp(&a.events)
            .then_with(|| a.folder.cmp(&b.folder))
    });
    top_folders.truncate(TOP);
    Ok(FileSummary {
        total,
        by_action,
        top_users,
        top_folders,
    })
}
