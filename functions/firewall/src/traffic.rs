//! The aggregates of the IPFIX / NetFlow v9 exports that the traffic route reads
//! (`get_firewall_traffic` in the OpenAPI description), and how they are built from the
//! exported flows.
//!
//! Each is a UTC day of hours packed into one row per key ([`netops_shared::store::daily`]),
//! for the whole tenant and again for each device (what `device_id` reads), and none has a key
//! per machine:
//!
//! - [`VOLUMES`] (`/<device id>`), key = export protocol: bytes `b`, packets `p`, flows `f`,
//!   hour by hour (the route lists every hour of its window);
//! - [`TALKERS`] (`/<device id>`), keys `talkers#<n>` (the addresses spread over
//!   [`TALKER_SHARDS`] rows): per sender `sb|<ip>|<host>` (bytes), `sp|…` (packets),
//!   `sf|…` (flows), `|<host>` left out when the sender is not a known machine, and per
//!   destination `db|<ip>`, `dp|<ip>`, `df|<ip>`, from which the top senders and destinations
//!   of any window come exactly.

use std::collections::{BTreeMap, HashMap};

use chrono::{DateTime, Utc};
use netops_shared::store::daily::{self, DayRows, Span};
use netops_shared::store::{Filter, Rollup, Rollups, StoreResult};
use serde_json::json;

use crate::model::{Traffic, TrafficEntry, TrafficHour, TrafficTotals};

/// Volumes per export protocol.
pub const VOLUMES: &str = "firewall_traffic";
/// Volumes per sender and per destination.
pub const TALKERS: &str = "firewall_talkers";
/// Rows the addresses of a day are spread over (a store item holds at most 400 KB: about
/// 1,500 senders a row).
pub const TALKER_SHARDS: u32 = 4;

/// `base`, or its series for one device.
fn of_device(base: &str, device: Option<i64>) -> String {
    match device {
        Some(id) => format!("{base}/{id}"),
        None => base.to_owned(),
    }
}

/// One flow record (or the sum of several within one hour) exported by a device.
#[derive(Debug, Clone)]
pub struct Export<'a> {
    pub at: DateTime<Utc>,
    pub device_id: i64,
    /// `IPFIX` or `NetFlow v9`.
    pub protocol: &'a str,
    pub src_ip: &'a str,
    /// Machine name of the sender, when known.
    pub src_host: Option<&'a str>,
    pub dst_ip: &'a str,
    pub bytes: f64,
    pub packets: f64,
    pub flows: f64,
}

/// The aggregates of a batch of exports, built up one export at a time: the seed feeds it the
/// demo's flows, a collector those it receives, and both add the rows of
/// [`Exports::series`] into the store.
#[derive(Default)]
pub struct Exports {
    volumes: HashMap<Option<i64>, DayRows>,
    talkers: HashMap<Option<i64>, DayRows>,
}

impl Exports {
    pub fn add(&mut self, e: &Export<'_>) {
        let at = e.at.timestamp_millis();
        let sender = match e.src_host {
            Some(host) => format!("{}|{host}", e.src_ip),
            None => e.src_ip.to_owned(),
        };
        let names = [
            (daily::of("sb", &sender), e.bytes),
            (daily::of("sp", &sender), e.packets),
            (daily::of("sf", &sender), e.flows),
        ];
        let dests = [
            (daily::of("db", e.dst_ip), e.bytes),
            (daily::of("dp", e.dst_ip), e.packets),
            (daily::of("df", e.dst_ip), e.flows),
        ];
        let (src_key, dst_key) = (
            daily::shard("talkers", e.src_ip, TALKER_SHARDS),
            daily::shard("talkers", e.dst_ip, TALKER_SHARDS),
        );
        for device in [None, Some(e.device_id)] {
            self.volumes.entry(device).or_default().add_all(
                at,
                e.protocol,
                || json!({"protocol": e.protocol}),
                [("b", e.bytes), ("p", e.packets), ("f", e.flows)],
            );
            let talkers = self.talkers.entry(device).or_default();
            talkers.add_all(
                at,
                &src_key,
                || json!({}),
                names.iter().map(|(n, v)| (n.as_str(), *v)),
            );
            talkers.add_all(
                at,
                &dst_key,
                || json!({}),
                dests.iter().map(|(n, v)| (n.as_str(), *v)),
            );
        }
    }

    /// The rows to add, as (series, rows).
    pub fn series(self) -> Vec<(String, Vec<Rollup>)> {
        let mut out = Vec::new();
        for (device, rows) in self.volumes {
            // Read hour by hour over the whole window: no day totals.
            out.extend(rows.series(&of_device(VOLUMES, device), false));
        }
        for (device, rows) in self.talkers {
            out.extend(rows.series(&of_device(TALKERS, device), true));
        }
        out
    }
}

/// The traffic of the hours of `span`, of one device when given, with `limit` senders and
/// destinations.
pub async fn read(
    rollups: &dyn Rollups,
    tenant: &str,
    span: Span,
    device: Option<i64>,
    limit: usize,
) -> StoreResult<Traffic> {
    let all = Filter::all();
    let (volumes, talkers) = (of_device(VOLUMES, device), of_device(TALKERS, device));
    let (volumes, talkers) = tokio::try_join!(
        daily::packed_rows(rollups, tenant, &volumes, span, &all),
        daily::sums(rollups, tenant, &talkers, span, &all),
    )?;
    let mut totals = TrafficTotals::default();
    let mut by_protocol = BTreeMap::new();
    // Every hour of the window, with zeros where nothing was exported.
    let mut hours: BTreeMap<i64, (f64, f64)> = span.hours().map(|h| (h, (0.0, 0.0))).collect();
    for row in &volumes {
        let mut hours_of_row = daily::hours_within(row, span.a, span.b).peekable();
        if hours_of_row.peek().is_none() {
            continue;
        }
        let proto = row.dims["protocol"].as_str().unwrap_or("IPFIX").to_owned();
        let bytes_of_proto = by_protocol.entry(proto).or_insert(0.0);
        for (name, hour, v) in hours_of_row {
            let h = hours.entry(hour).or_insert((0.0, 0.0));
            match name.as_str() {
                "b" => {
                    totals.bytes += v;
                    *bytes_of_proto += v;
                    h.0 += v;
                }
                "p" => totals.packets += v,
                "f" => {
                    totals.flows += v;
                    h.1 += v;
                }
                _ => {}
            }
        }
    }
    let mut senders: HashMap<&str, TrafficEntry> = HashMap::new();
    let mut dests: HashMap<&str, TrafficEntry> = HashMap::new();
    // Bytes of each machine behind a sender's address, to name the address after the one
    // that sent the most.
    let mut hosts: HashMap<&str, BTreeMap<&str, f64>> = HashMap::new();
    for (name, v) in talkers.iter().flat_map(|r| &r.measures) {
        let Some((code, end)) = daily::entity(name) else {
            continue;
        };
        let (map, ip) = match code.as_bytes().first() {
            Some(b's') => match end.split_once('|') {
                Some((ip, host)) => {
                    if code == "sb" {
                        *hosts.entry(ip).or_default().entry(host).or_default() += v;
                    }
                    (&mut senders, ip)
                }
                None => (&mut senders, end),
            },
            Some(b'd') => (&mut dests, end),
            _ => continue,
        };
        let e = map.entry(ip).or_insert_with(|| TrafficEntry {
            ip: ip.to_owned(),
            host: None,
            bytes: 0.0,
            packets: 0.0,
            flows: 0.0,
        });
        match code.as_bytes().get(1) {
            Some(b'b') => e.bytes += v,
            Some(b'p') => e.packets += v,
            Some(b'f') => e.flows += v,
            _ => {}
        }
    }
    for (ip, hosts) in hosts {
        if let Some(e) = senders.get_mut(ip) {
            // Most bytes first, then the first name.
            e.host = hosts
                .into_iter()
                .max_by(|a, b| a.1.total_cmp(&b.1).then_with(|| b.0.cmp(a.0)))
                .map(|(host, _)| host.to_owned());
        }
    }
    Ok(Traffic {
        totals,
        by_protocol,
        top_senders: top(senders, limit),
        top_destinations: top(dests, limit),
        hours: hours
            .into_iter()
            .filter_map(|(h, (bytes, flows))| {
                Some(TrafficHour {
                    hour: DateTime::from_timestamp_millis(h)?,
                    bytes,
                    flows,
                })
            })
            .collect(),
    })
}

fn top(map: HashMap<&str, TrafficEntry>, limit: usize) -> Vec<TrafficEntry> {
    let mut v: Vec<TrafficEntry> = map.into_values().collect();
    v.sort_by(|a, b| b.bytes.total_cmp(&a.bytes).then_with(|| a.ip.cmp(&b.ip)));
    v.truncate(limit);
    v
}
