//! The aggregates of DNS queries that the top domains read (`list_dns_top_domains` in the
//! OpenAPI description), and how they are built from the queries the agents report.
//!
//! Each is a UTC day of hours packed into one row per key ([`netops_shared::store::daily`]),
//! so a window of D days reads about D+2 rows per key, and none has a key per machine:
//!
//! - [`DOMAINS`], key = domain: queries `q`, NXDOMAIN answers `nx`, failures `fail`;
//! - [`DOMAIN_MACHINES`], keys `<domain>#<n>` (a domain's machines spread over
//!   [`MACHINE_SHARDS`] rows): `m|<host>` for each machine that asked, so that the distinct
//!   machines of any window are the distinct names of the window's rows (a count per day
//!   could not be added up across days);
//! - [`machine_series`], one series per machine, key = domain, as [`DOMAINS`]: what
//!   `machine=` reads.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use chrono::{DateTime, Utc};
use futures_util::stream::{self, StreamExt};
use netops_shared::store::daily::{self, DAY_MS, DayRows, Span};
use netops_shared::store::{Filter, Rollup, Rollups, StoreResult};
use serde_json::json;

use crate::model::TopDomain;

/// Queries per domain, for the whole tenant.
pub const DOMAINS: &str = "dns_domains";
/// The machines that asked for each domain.
pub const DOMAIN_MACHINES: &str = "dns_domain_machines";
/// Rows the machines of one domain and day are spread over (a store item holds at most
/// 400 KB: about 5,000 machines a row).
pub const MACHINE_SHARDS: u32 = 4;

/// Queries per domain of one machine.
pub fn machine_series(host: &str) -> String {
    format!("dns_machine_domains/{host}")
}

/// The aggregates of a batch of queries, built up one count at a time: the seed feeds it the
/// demo's queries, a collector those it receives, and both add the rows of
/// [`Queries::series`] into the store.
#[derive(Default)]
pub struct Queries {
    domains: DayRows,
    machines: DayRows,
    per_machine: HashMap<String, DayRows>,
}

impl Queries {
    /// `n` queries of `domain` by `machine` at `at`, answered with `code` (`NOERROR`,
    /// `NXDOMAIN`, `SERVFAIL`, `REFUSED`).
    pub fn add(&mut self, at: DateTime<Utc>, machine: &str, domain: &str, code: &str, n: f64) {
        let at = at.timestamp_millis();
        let mut counts = vec![("q", n)];
        match code {
            "NXDOMAIN" => counts.push(("nx", n)),
            "SERVFAIL" | "REFUSED" => counts.push(("fail", n)),
            _ => {}
        }
        let dims = || json!({"domain": domain});
        self.domains
            .add_all(at, domain, dims, counts.iter().copied());
        self.per_machine
            .entry(machine.to_owned())
            .or_default()
            .add_all(at, domain, dims, counts.iter().copied());
        self.machines.add(
            at,
            &daily::shard(domain, machine, MACHINE_SHARDS),
            dims,
            &daily::of("m", machine),
            n,
        );
    }

    /// The rows to add, as (series, rows).
    pub fn series(self) -> Vec<(String, Vec<Rollup>)> {
        let mut out = self.domains.series(DOMAINS, true);
        out.extend(self.machines.series(DOMAIN_MACHINES, true));
        for (host, rows) in self.per_machine {
            out.extend(rows.series(&machine_series(&host), true));
        }
        out
    }
}

/// The domains asked in the hours of `span` (by `machine` only, when given), by queries then
/// name, `limit` at most, and whether more were asked.
pub async fn top(
    rollups: &Arc<dyn Rollups>,
    tenant: &str,
    span: Span,
    machine: Option<&str>,
    limit: usize,
) -> StoreResult<(Vec<TopDomain>, bool)> {
    let all = Filter::all();
    let base = match machine {
        Some(host) => machine_series(host),
        None => DOMAINS.to_owned(),
    };
    let counts = daily::sums(rollups.as_ref(), tenant, &base, span, &all);
    let machines = async {
        match machine {
            Some(_) => Ok(Vec::new()),
            None => daily::sums(rollups.as_ref(), tenant, DOMAIN_MACHINES, span, &all).await,
        }
    };
    let (counts, machines) = tokio::try_join!(counts, machines)?;
    // A domain's rows hold disjoint machines, so its distinct machines are the sum of its
    // rows' machine names.
    let mut distinct: HashMap<&str, u32> = HashMap::new();
    for row in &machines {
        if let Some(domain) = row.dims["domain"].as_str() {
            *distinct.entry(domain).or_default() += row.measures.len() as u32;
        }
    }
    let mut ranked: Vec<(&Rollup, f64)> = counts
        .iter()
        .map(|r| (r, r.measures.get("q").copied().unwrap_or(0.0)))
        .collect();
    ranked.sort_by(|(a, qa), (b, qb)| qb.total_cmp(qa).then_with(|| a.key.cmp(&b.key)));
    let more = ranked.len() > limit;
    ranked.truncate(limit);
    let last = last_hours(rollups, tenant, &base, span, ranked.iter().map(|(r, _)| *r)).await?;
    let data = ranked
        .into_iter()
        .map(|(r, queries)| {
            let m = |k: &str| r.measures.get(k).copied().unwrap_or(0.0);
            let hour = last.get(r.key.as_str()).copied().unwrap_or(r.hour);
            TopDomain {
                domain: r.key.clone(),
                queries,
                machines: match machine {
                    Some(_) => 1,
                    None => distinct.get(r.key.as_str()).copied().unwrap_or(0),
                },
                nxdomain: m("nx"),
                failures: m("fail"),
                last_seen_hour: DateTime::from_timestamp_millis(hour).unwrap_or_default(),
            }
        })
        .collect();
    Ok((data, more))
}

/// The latest hour with a query of each of `rows` whose latest query lies among the window's
/// whole days (the sums give the day only): read from the packed rows of those days, one
/// read per day (mostly one: the window's last whole day), a few at a time.
async fn last_hours<'r>(
    rollups: &Arc<dyn Rollups>,
    tenant: &str,
    base: &str,
    span: Span,
    rows: impl Iterator<Item = &'r Rollup>,
) -> StoreResult<HashMap<&'r str, i64>> {
    const IN_FLIGHT: usize = 8;
    let mut by_day: BTreeMap<i64, Vec<&str>> = BTreeMap::new();
    for r in rows.filter(|r| span.d0 <= r.hour && r.hour < span.d1) {
        by_day.entry(r.hour).or_default().push(&r.key);
    }
    let packed = daily::packed(base);
    let mut reads = stream::iter(by_day.keys().copied())
        .map(|day| {
            let packed = &packed;
            async move {
                rollups
                    .rows(tenant, packed, day, day + DAY_MS, &Filter::all())
                    .await
                    .map(|rows| (day, rows))
            }
        })
        .buffer_unordered(IN_FLIGHT);
    let mut out = HashMap::new();
    while let Some(read) = reads.next().await {
        let (day, rows) = read?;
        for key in by_day.get(&day).into_iter().flatten() {
            let latest = rows
                .iter()
                .filter(|r| r.key == *key)
                .flat_map(|r| daily::hours_within(r, day, day + DAY_MS))
                .map(|(_, hour, _)| hour)
                .max();
            if let Some(hour) = latest {
                out.insert(*key, hour);
            }
        }
    }
    Ok(out)
}
