//! The aggregate that ranks the machines by volume (`list_flow_talkers` in the OpenAPI
//! description), and how it is built from the flows the agents see.
//!
//! [`TALKERS`] is a tenant-level series, a UTC day of hours packed into one row per key
//! ([`netops_shared::store::daily`]), with no key per machine: keys `machines#<n>` (the
//! machines spread over [`SHARDS`] rows), measures `i|<host>` (bytes received), `o|<host>`
//! (bytes sent) and `f|<host>` (flows) for each machine that had traffic. A window of D days
//! reads at most [`SHARDS`]·(D+2) rows whatever the fleet (the whole days from the day
//! totals, the hours of the partial days at the edges from the packed rows); their bytes grow
//! with the machines that had traffic, which a ranking of every machine needs.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use netops_shared::store::daily::{self, DayRows, Span};
use netops_shared::store::{Filter, Rollup, Rollups, StoreResult};
use serde_json::json;

use crate::model::{Direction, Talker};

/// Bytes and flows per machine, for the whole tenant.
pub const TALKERS: &str = "flows.talkers";
/// Rows the machines of a day are spread over. A machine busy every hour of a day takes
/// about 1.7 KB of a packed row (72 hour measures), so a row stays under 400 KB (a store
/// item's limit) up to about 240 machines: 64 rows keep a fleet of 5,000 machines near
/// 130 KB a row.
pub const SHARDS: u32 = 64;

/// One flow seen by a machine's agent, or the sum of several of one hour and direction.
#[derive(Debug, Clone)]
pub struct Flow<'a> {
    pub at: DateTime<Utc>,
    pub machine: &'a str,
    pub direction: Direction,
    pub bytes: f64,
    pub flows: f64,
}

/// The aggregate of a batch of flows, built up one flow at a time: the seed feeds it the
/// demo's traffic, a collector the flows it receives, and both add the rows of
/// [`Talkers::series`] into the store.
#[derive(Default)]
pub struct Talkers {
    rows: DayRows,
}

impl Talkers {
    pub fn add(&mut self, f: &Flow<'_>) {
        let bytes = match f.direction {
            Direction::Inbound => daily::of("i", f.machine),
            Direction::Outbound => daily::of("o", f.machine),
        };
        let flows = daily::of("f", f.machine);
        self.rows.add_all(
            f.at.timestamp_millis(),
            &daily::shard("machines", f.machine, SHARDS),
            || json!({}),
            [(bytes.as_str(), f.bytes), (flows.as_str(), f.flows)],
        );
    }

    /// The rows to add, as (series, rows).
    pub fn series(self) -> Vec<(String, Vec<Rollup>)> {
        self.rows.series(TALKERS, true)
    }
}

/// Bytes received, bytes sent and flows of one machine.
#[derive(Default)]
struct Volumes {
    bytes_in: f64,
    bytes_out: f64,
    flows: f64,
}

/// The machines that had traffic in the hours of `span`, by total bytes (received and sent)
/// then name, `limit` at most, and whether more had.
pub async fn top(
    rollups: &dyn Rollups,
    tenant: &str,
    span: Span,
    limit: usize,
) -> StoreResult<(Vec<Talker>, bool)> {
    let rows = daily::sums(rollups, tenant, TALKERS, span, &Filter::all()).await?;
    let mut machines: HashMap<&str, Volumes> = HashMap::new();
    for (name, v) in rows.iter().flat_map(|r| &r.measures) {
        let Some((code, machine)) = daily::entity(name) else {
            continue;
        };
        let m = machines.entry(machine).or_default();
        match code {
            "i" => m.bytes_in += v,
            "o" => m.bytes_out += v,
            "f" => m.flows += v,
            _ => {}
        }
    }
    let mut ranked: Vec<(&str, Volumes, f64)> = machines
        .into_iter()
        .map(|(machine, m)| {
            let bytes = m.bytes_in + m.bytes_out;
            (machine, m, bytes)
        })
        .collect();
    ranked.sort_by(|a, b| b.2.total_cmp(&a.2).then_with(|| a.0.cmp(b.0)));
    let more = ranked.len() > limit;
    let data = ranked
        .into_iter()
        .take(limit)
        .enumerate()
        .map(|(i, (machine, m, bytes))| Talker {
            rank: i as u32 + 1,
            machine: machine.to_owned(),
            bytes: bytes as u64,
            bytes_in: m.bytes_in as u64,
            bytes_out: m.bytes_out as u64,
            flows: m.flows as u64,
        })
        .collect();
    Ok((data, more))
}
