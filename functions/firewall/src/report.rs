//! The aggregates of parsed events that the perimeter report reads (`get_firewall_report` in
//! the OpenAPI description), and how they are built from the events.
//!
//! Each is a UTC day of hours packed into one row per key ([`netops_shared::store::daily`]),
//! for the whole tenant. None has a key per account or address: those are named in wide rows
//! spread over [`SHARDS`] keys, so that a 90-day report reads rows per day, not per hour nor
//! per account:
//!
//! - [`COUNTS`], read as sums over the window (its whole days from the day totals, the hours
//!   of its edge days from the packed rows):
//!   - key `events`: per category and action `n|<category>|<action>`, per device `d|<id>`,
//!     per tunnel and action `t|<action>|<tunnel>`;
//!   - keys `blocked#<n>`: denied traffic per destination port and service
//!     `b|<port>|<service>` (port empty when unknown, service `inconnu`);
//!   - keys `accounts#<n>`: authentication and VPN failures of an account per source
//!     `f|<source>|<account>` (source empty when unknown), its successes `s|<account>`;
//!   - keys `sources#<n>`: hostile events of an external address per category
//!     `h|<category>|<ip>`, those blocked `hb|<ip>`;
//! - [`CONNECTIONS`], keys `connections#<n>`: successful logins from outside per category,
//!   source and account `c|<category>|<source>|<account>`, read hour by hour, as the report
//!   gives the last hour of each.
//!
//! The fixed parts of a name come first and the account or service last, so that a name
//! holding `|` itself is still split right.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use netops_shared::store::daily::{self, DayRows, Span};
use netops_shared::store::{Filter, Rollup, Rollups, StoreResult};
use serde_json::json;

use crate::model::{AttackingAddress, BlockedService, ReportSummary, SuccessfulConnection};
use crate::parse::{Action, Category, Parsed};

/// Counts of events by category, device, tunnel, blocked service, account and source.
pub const COUNTS: &str = "firewall_report";
/// Successful logins from outside.
pub const CONNECTIONS: &str = "firewall_connections";
/// Rows the accounts, addresses and services of a day are each spread over (a store item
/// holds at most 400 KB).
pub const SHARDS: u32 = 8;

/// Addresses of the private ranges the demo's sites use.
fn is_internal(ip: &str) -> bool {
    ip.starts_with("10.") || ip.starts_with("192.168.") || ip.starts_with("172.16.")
}

/// The aggregates of a batch of parsed events, built up one event at a time: the seed and the
/// live producer feed it what the parsers read, and add the rows of [`Counts::series`] into
/// the store.
#[derive(Default)]
pub struct Counts {
    counts: DayRows,
    connections: DayRows,
}

impl Counts {
    /// Counts one event of device `device_id`.
    pub fn add(&mut self, device_id: i64, p: &Parsed) {
        let at = p.at.timestamp_millis();
        let (cat, act) = (p.category.as_str(), p.action.as_str());
        let no_dims = || json!({});
        let mut events = vec![
            (daily::of("n", &format!("{cat}|{act}")), 1.0),
            (daily::of("d", &device_id.to_string()), 1.0),
        ];
        if let (Category::Tunnel, Some(tunnel)) = (p.category, &p.rule) {
            events.push((daily::of("t", &format!("{act}|{tunnel}")), 1.0));
        }
        self.counts.add_all(
            at,
            "events",
            no_dims,
            events.iter().map(|(n, v)| (n.as_str(), *v)),
        );
        if p.category == Category::Deny {
            let port = p.dst_port.map(|p| p.to_string()).unwrap_or_default();
            let service = p.service.as_deref().unwrap_or("inconnu");
            let entity = format!("{port}|{service}");
            let key = daily::shard("blocked", &entity, SHARDS);
            self.counts
                .add(at, &key, no_dims, &daily::of("b", &entity), 1.0);
        }
        let external_src = p.src_ip.as_deref().filter(|ip| !is_internal(ip));
        if let (Some(account), Category::Auth | Category::Vpn) = (&p.account, p.category) {
            let key = daily::shard("accounts", account, SHARDS);
            let src = p.src_ip.as_deref().unwrap_or_default();
            match p.action {
                Action::Failure => {
                    let name = daily::of("f", &format!("{src}|{account}"));
                    self.counts.add(at, &key, no_dims, &name, 1.0);
                }
                Action::Success => {
                    self.counts
                        .add(at, &key, no_dims, &daily::of("s", account), 1.0);
                    if let Some(src) = external_src {
                        let key = daily::shard("connections", account, SHARDS);
                        let name = daily::of("c", &format!("{cat}|{src}|{account}"));
                        self.connections.add(at, &key, no_dims, &name, 1.0);
                    }
                }
                _ => {}
            }
        }
        let hostile = matches!(p.category, Category::Ids | Category::Deny)
            || (matches!(p.category, Category::Auth | Category::Vpn)
                && p.action == Action::Failure);
        if let (Some(ip), true) = (external_src, hostile) {
            let key = daily::shard("sources", ip, SHARDS);
            let mut names = vec![(daily::of("h", &format!("{cat}|{ip}")), 1.0)];
            if p.action == Action::Blocked {
                names.push((daily::of("hb", ip), 1.0));
            }
            self.counts.add_all(
                at,
                &key,
                no_dims,
                names.iter().map(|(n, v)| (n.as_str(), *v)),
            );
        }
    }

    /// The rows to add, as (series, rows).
    pub fn series(self) -> Vec<(String, Vec<Rollup>)> {
        let mut out = self.counts.series(COUNTS, true);
        // Read hour by hour over the whole window: no day totals.
        out.extend(self.connections.series(CONNECTIONS, false));
        out
    }
}

/// Failures, successes and the distinct sources of the failures of one account.
#[derive(Default)]
pub struct Tally {
    pub failures: f64,
    pub successes: f64,
    pub sources: BTreeSet<String>,
}

/// What the report's counted sections hold over a window, before the documents and threats
/// it reads beside them.
pub struct Tallies {
    pub summary: ReportSummary,
    pub per_device: HashMap<i64, f64>,
    /// Accounts with failures, most failures first, `top` at most.
    pub targeted: Vec<(String, Tally)>,
    pub attacking: Vec<AttackingAddress>,
    /// The 50 latest.
    pub connections: Vec<SuccessfulConnection>,
    pub blocked: Vec<BlockedService>,
    /// Ups and downs per tunnel.
    pub tunnels: BTreeMap<String, (f64, f64)>,
}

/// The counts of the hours of `span`, with `top` accounts, addresses and services.
pub async fn read(
    rollups: &dyn Rollups,
    tenant: &str,
    span: Span,
    top: usize,
) -> StoreResult<Tallies> {
    let all = Filter::all();
    let (counts, connections) = tokio::try_join!(
        daily::sums(rollups, tenant, COUNTS, span, &all),
        daily::packed_rows(rollups, tenant, CONNECTIONS, span, &all),
    )?;
    let mut summary = ReportSummary::default();
    let mut per_device: HashMap<i64, f64> = HashMap::new();
    let mut tunnels: BTreeMap<String, (f64, f64)> = BTreeMap::new();
    let mut blocked: BTreeMap<(&str, &str), f64> = BTreeMap::new();
    let mut targeted: BTreeMap<&str, Tally> = BTreeMap::new();
    let mut attackers: BTreeMap<&str, (f64, BTreeSet<String>, f64)> = BTreeMap::new();
    for (name, &n) in counts.iter().flat_map(|r| &r.measures) {
        let Some((code, entity)) = daily::entity(name) else {
            continue;
        };
        match (code, entity.split_once('|')) {
            ("n", Some((cat, act))) => {
                summary.events += n;
                *summary.by_category.entry(cat.to_owned()).or_insert(0.0) += n;
                *summary.by_action.entry(act.to_owned()).or_insert(0.0) += n;
                match (cat, act) {
                    ("auth", "failure") => summary.auth_failures += n,
                    ("vpn", "success") => summary.vpn_logins += n,
                    _ => {}
                }
                if cat == "ids" {
                    summary.intrusions += n;
                }
                if act == "blocked" {
                    summary.blocked += n;
                }
            }
            ("d", _) => {
                if let Ok(id) = entity.parse() {
                    *per_device.entry(id).or_insert(0.0) += n;
                }
            }
            ("t", Some((act, tunnel))) => {
                let e = tunnels.entry(tunnel.to_owned()).or_default();
                match act {
                    "up" => e.0 += n,
                    "down" => e.1 += n,
                    _ => {}
                }
            }
            ("b", Some((port, service))) => *blocked.entry((port, service)).or_insert(0.0) += n,
            ("f", Some((src, account))) => {
                let t = targeted.entry(account).or_default();
                t.failures += n;
                t.sources.insert(src.to_owned());
            }
            ("s", _) => targeted.entry(entity).or_default().successes += n,
            ("h", Some((cat, ip))) => {
                let e = attackers.entry(ip).or_default();
                e.0 += n;
                e.1.insert(cat.to_owned());
            }
            ("hb", _) => attackers.entry(entity).or_default().2 += n,
            _ => {}
        }
    }
    let mut targeted: Vec<(String, Tally)> = targeted
        .into_iter()
        .filter(|(_, t)| t.failures > 0.0)
        .map(|(a, t)| (a.to_owned(), t))
        .collect();
    targeted.sort_by(|a, b| {
        b.1.failures
            .total_cmp(&a.1.failures)
            .then_with(|| a.0.cmp(&b.0))
    });
    targeted.truncate(top);

    let mut attacking: Vec<AttackingAddress> = attackers
        .into_iter()
        .map(|(ip, (events, cats, blocked))| AttackingAddress {
            ip: ip.to_owned(),
            events,
            categories: cats.into_iter().collect(),
            blocked,
        })
        .collect();
    attacking.sort_by(|a, b| b.events.total_cmp(&a.events).then_with(|| a.ip.cmp(&b.ip)));
    attacking.truncate(top);

    let mut blocked: Vec<BlockedService> = blocked
        .into_iter()
        .map(|((port, service), count)| BlockedService {
            service: service.to_owned(),
            dst_port: port.parse().ok(),
            count,
        })
        .collect();
    blocked.sort_by(|a, b| {
        b.count
            .total_cmp(&a.count)
            .then_with(|| a.service.cmp(&b.service))
    });
    blocked.truncate(top);

    // Count and last hour of each login from outside.
    let mut seen: BTreeMap<String, (f64, i64)> = BTreeMap::new();
    for row in &connections {
        for (name, hour, n) in daily::hours_within(row, span.a, span.b) {
            let c = seen.entry(name).or_insert((0.0, hour));
            c.0 += n;
            c.1 = c.1.max(hour);
        }
    }
    let mut connections: Vec<SuccessfulConnection> = seen
        .into_iter()
        .filter_map(|(name, (count, hour))| {
            let (_, entity) = daily::entity(&name)?;
            let (category, rest) = entity.split_once('|')?;
            let (src_ip, account) = rest.split_once('|')?;
            Some(SuccessfulConnection {
                account: account.to_owned(),
                src_ip: src_ip.to_owned(),
                category: category.to_owned(),
                count,
                last_hour: chrono::DateTime::from_timestamp_millis(hour)?,
            })
        })
        .collect();
    connections.sort_by(|a, b| {
        b.last_hour
            .cmp(&a.last_hour)
            .then_with(|| a.account.cmp(&b.account))
    });
    connections.truncate(50);

    Ok(Tallies {
        summary,
        per_device,
        targeted,
        attacking,
        connections,
        blocked,
        tunnels,
    })
}

#[cfg(test)]
mod tests {
    use chrono::DateTime;
    use netops_shared::store::daily::{DAY_MS, HOUR_MS};
    use netops_store_sqlite::SqliteStore;

    use super::*;
    use crate::parse::Format;

    fn event(at: i64, category: Category, action: Action) -> Parsed {
        Parsed {
            format: Format::Kv,
            at: DateTime::from_timestamp_millis(at).expect("time"),
            host: None,
            category,
            action,
            account: None,
            src_ip: None,
            src_port: None,
            dst_ip: None,
            dst_port: None,
            service: None,
            protocol: None,
            rule: None,
            message: String::new(),
        }
    }

    /// Names holding `|` (an account, a service, a tunnel), a failure without source and a
    /// window that starts within a day read back as what was counted.
    #[tokio::test]
    async fn the_counted_events_read_back_over_any_window() {
        let dir = tempfile::tempdir().expect("dir");
        let store = SqliteStore::open(dir.path().join("t.db")).expect("store");
        let day = 20 * DAY_MS;
        let at = |h: i64| day + h * HOUR_MS + 60_000;
        let mut failure = event(at(10), Category::Auth, Action::Failure);
        failure.account = Some("ad|min".into());
        failure.src_ip = Some("203.0.113.9".into());
        let mut no_source = event(at(11), Category::Auth, Action::Failure);
        no_source.account = Some("ad|min".into());
        let mut login = event(at(12), Category::Vpn, Action::Success);
        login.account = Some("ad|min".into());
        login.src_ip = Some("198.51.100.4".into());
        let mut inside = event(at(12), Category::Vpn, Action::Success);
        inside.account = Some("bob".into());
        inside.src_ip = Some("10.0.0.5".into());
        let mut denied = event(at(13), Category::Deny, Action::Blocked);
        denied.src_ip = Some("203.0.113.9".into());
        denied.service = Some("a|b".into());
        let mut tunnel = event(at(25), Category::Tunnel, Action::Up);
        tunnel.rule = Some("T|1".into());
        let mut counts = Counts::default();
        for e in [&failure, &no_source, &login, &inside, &denied, &tunnel] {
            counts.add(7, e);
        }
        for (series, rows) in counts.series() {
            store.add("t", &series, rows).await.expect("add");
        }

        // From 10:30 on the first day to the end of the second: its hours from 10:00.
        let t = read(
            &store,
            "t",
            Span::covering(at(10) + 1_800_000, day + 2 * DAY_MS),
            20,
        )
        .await
        .expect("read");
        assert_eq!(t.summary.events, 6.0);
        assert_eq!(t.summary.auth_failures, 2.0);
        assert_eq!(t.summary.blocked, 1.0);
        assert_eq!(t.per_device.get(&7), Some(&6.0));
        let (account, tally) = &t.targeted[0];
        assert_eq!(t.targeted.len(), 1);
        assert_eq!(account, "ad|min");
        assert_eq!((tally.failures, tally.successes), (2.0, 1.0));
        let sources: Vec<&str> = tally.sources.iter().map(String::as_str).collect();
        assert_eq!(sources, ["", "203.0.113.9"]);
        let c = &t.connections[0];
        assert_eq!(t.connections.len(), 1);
        assert_eq!(
            (
                c.account.as_str(),
                c.src_ip.as_str(),
                c.category.as_str(),
                c.count
            ),
            ("ad|min", "198.51.100.4", "vpn", 1.0)
        );
        assert_eq!(c.last_hour.timestamp_millis(), day + 12 * HOUR_MS);
        let b = &t.blocked[0];
        assert_eq!(
            (b.service.as_str(), b.dst_port, b.count),
            ("a|b", None, 1.0)
        );
        let a = &t.attacking[0];
        assert_eq!(t.attacking.len(), 1);
        assert_eq!(
            (a.ip.as_str(), a.events, a.blocked),
            ("203.0.113.9", 2.0, 1.0)
        );
        assert_eq!(a.categories, ["auth", "deny"]);
        assert_eq!(t.tunnels.get("T|1"), Some(&(1.0, 0.0)));

        // From 11:00: the first failure and its source are out.
        let t = read(
            &store,
            "t",
            Span::covering(at(11) - 60_000, day + DAY_MS),
            20,
        )
        .await
        .expect("read");
        assert_eq!(t.targeted[0].1.failures, 1.0);
        assert_eq!(t.targeted[0].1.sources.len(), 1);
        assert!(t.tunnels.is_empty());
    }
}
