//! `ad_events` (docs/data.md#module-values): directory-controller events on the same account
//! within 15 seconds of a firewall event, matched at collection time.

use std::collections::HashMap;

use chrono::{DateTime, Duration, Utc};

use crate::model::AdEvent;

/// Largest gap between a firewall event and a matched directory event.
pub const MATCH_WINDOW_SECS: i64 = 15;

/// Directory events indexed by account (lower case), each list in time order.
pub struct DirectoryIndex {
    by_account: HashMap<String, Vec<AdEvent>>,
}

impl DirectoryIndex {
    pub fn new(events: impl IntoIterator<Item = AdEvent>) -> Self {
        let mut by_account: HashMap<String, Vec<AdEvent>> = HashMap::new();
        for e in events {
            by_account
                .entry(e.account.to_lowercase())
                .or_default()
                .push(e);
        }
        for list in by_account.values_mut() {
            list.sort_by_key(|e| e.at);
        }
        Self { by_account }
    }

    /// The directory events of `account` within 15 seconds of `at`, oldest first, with
    /// their offset from `at`.
    pub fn matches(&self, account: &str, at: DateTime<Utc>) -> Vec<AdEvent> {
        let Some(list) = self.by_account.get(&account.to_lowercase()) else {
            return Vec::new();
        };
        let lo = at - Duration::seconds(MATCH_WINDOW_SECS);
        let hi = at + Duration::seconds(MATCH_WINDOW_SECS);
        let start = list.partition_point(|e| e.at < lo);
        list[start..]
            .iter()
            .take_while(|e| e.at <= hi)
            .map(|e| AdEvent {
                offset_seconds: (e.at - at).num_seconds(),
                ..e.clone()
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Outcome;

    fn ev(account: &str, at: &str, id: u32) -> AdEvent {
        AdEvent {
            at: at.parse().expect("date"),
            event_id: id,
            controller: "PAR-SRV-0001".into(),
            account: account.into(),
            outcome: Outcome::Failure,
            source_ip: None,
            offset_seconds: 0,
        }
    }

    #[test]
    fn matches_same_account_within_fifteen_seconds_either_side() {
        let index = DirectoryIndex::new([
            ev("julie.martin", "2026-11-22T09:00:00Z", 4625),
            ev("julie.martin", "2026-11-22T09:00:14Z", 4625),
            ev("julie.martin", "2026-11-22T09:00:16Z", 4740),
            ev("Julie.Martin", "2026-11-22T08:59:45Z", 4771),
            ev("julie.martin", "2026-11-22T08:59:44Z", 4624),
            ev("thomas.petit", "2026-11-22T09:00:01Z", 4625),
        ]);
        let at: DateTime<Utc> = "2026-11-22T09:00:00Z".parse().expect("date");
        let found = index.matches("JULIE.MARTIN", at);
        let ids: Vec<(u32, i64)> = found
            .iter()
            .map(|e| (e.event_id, e.offset_seconds))
            .collect();
        assert_eq!(ids, vec![(4771, -15), (4625, 0), (4625, 14)]);
        assert!(index.matches("nobody", at).is_empty());
    }
}
