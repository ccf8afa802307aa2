//! What the flows routes read, derived from the traffic (docs/collect.md#flow): the hourly
//! totals of the tenant and of each machine (`/flows/summary`), the talkers, the destinations
//! of the agents, of the gateways and of each machine (`/flows/destinations`), and the
//! explorer's external side ([`CUBE_EXT`]) and internal side ([`crate::cube`]).
//!
//! One [`Derived`] is fed one [`Traffic`] at a time, a flow or the sum of several of one hour,
//! and gives the rows to add ([`Derived::series`]): the collection API's writers feed it the
//! flows of a batch, the demo the flows it draws. Keys are made of what a flow says (its
//! remote address, a digest of its external side), so that the rows of two batches add up.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use netops_shared::auth::sha256_hex;
use netops_shared::store::Rollup;
use netops_shared::store::daily::{DAY_MS, HOUR_MS, floor_to, packed, totals};
use serde_json::{Value, json};

use crate::cube;
use crate::model::{
    BYTES, CUBE_EXT, DEST_AGENT, DEST_GATEWAY, Direction, FLOWS, Protocol, SUM,
    machine_destinations, machine_sum,
};
use crate::talkers::{self, Talkers};
use crate::tiers::{at_hour, part_keys};

/// The value of the dimensions passerelle and interface for traffic no gateway saw.
pub const NO_GATEWAY: &str = "aucune";
/// Country and operator of a private address.
pub const PRIVATE_COUNTRY: &str = "local";
pub const PRIVATE_OPERATOR: &str = "réseau interne";

/// Who saw a flow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Seen {
    /// The agent of the machine.
    Agent,
    /// A site gateway (IPFIX, NetFlow), for a device with or without agent.
    Gateway,
}

/// The remote side of a flow.
#[derive(Debug, Clone, PartialEq)]
pub struct Remote<'a> {
    pub ip: &'a str,
    pub host: Option<&'a str>,
    pub country: &'a str,
    pub operator: &'a str,
    pub port: u16,
    /// `TCP`, `UDP`, or another protocol's name (gateways see them all).
    pub protocol: &'a str,
    pub service: &'a str,
    pub direction: Direction,
}

impl Remote<'_> {
    /// The value of the dimension externe: the host name, else the address.
    fn name(&self) -> &str {
        self.host.unwrap_or(self.ip)
    }
}

/// Traffic of one hour between one internal endpoint and one remote side.
#[derive(Debug, Clone)]
pub struct Traffic<'a> {
    /// When (ms): it counts in the hour this falls in.
    pub at: i64,
    pub seen: Seen,
    /// The host name of the machine (agent machines, and gateway flows of an agent
    /// machine), else the device's address.
    pub endpoint: &'a str,
    /// A gateway flow of a machine that has an agent: its traffic is the agent's too, so it
    /// is counted under `source=all` once (spec 4.4 rule 2).
    pub agent_machine: bool,
    pub process: &'a str,
    pub user: &'a str,
    /// The site's code.
    pub site: &'a str,
    /// The gateway that saw it ([`NO_GATEWAY`]: none), and its interface.
    pub gateway: &'a str,
    pub interface: &'a str,
    pub remote: Remote<'a>,
    pub bytes: f64,
    pub flows: f64,
}

impl Traffic<'_> {
    /// A gateway saw it (the dimension `vg`).
    fn seen_by_gateway(&self) -> bool {
        self.gateway != NO_GATEWAY
    }
}

/// The rows of the flows aggregates being built: one row per series, UTC day and key, whose
/// measures are the day's totals and their hours (`b@07`; [`crate::tiers`]).
#[derive(Default)]
pub struct DayTable {
    rows: HashMap<RowKey, (Arc<Value>, Hours)>,
}

/// A row of a [`DayTable`]: its series, day (ms) and key.
type RowKey = (String, i64, String);
/// The measures of a row, hour by hour.
type Hours = BTreeMap<String, [f64; 24]>;

impl DayTable {
    /// Adds the measures `m` to the row of `key` (dimensions `dims`, taken for its first fact
    /// of a day) in the hour of `at` (ms).
    pub fn add(
        &mut self,
        series: &str,
        at: i64,
        key: &str,
        dims: impl FnOnce() -> Value,
        m: &[(&str, f64)],
    ) {
        let day = floor_to(at, DAY_MS);
        let h = ((at - day) / HOUR_MS) as usize;
        let (_, measures) = self
            .rows
            .entry((series.to_owned(), day, key.to_owned()))
            .or_insert_with(|| (Arc::new(dims()), BTreeMap::new()));
        for &(name, v) in m {
            match measures.get_mut(name) {
                Some(hours) => hours[h] += v,
                None => {
                    let mut hours = [0.0; 24];
                    hours[h] = v;
                    measures.insert(name.to_owned(), hours);
                }
            }
        }
    }

    /// The packed rows (day totals and hours) of every series, and the day totals alone
    /// (`<series>.d`) of those in `with_totals`.
    pub fn series(self, with_totals: &[&str]) -> Vec<(String, Vec<Rollup>)> {
        let mut out: BTreeMap<String, Vec<Rollup>> = BTreeMap::new();
        for ((series, day, key), (dims, measures)) in self.rows {
            let mut packed_m = BTreeMap::new();
            let mut totals_m = BTreeMap::new();
            for (name, hours) in measures {
                let total: f64 = hours.iter().map(|v| v.round()).sum();
                if total == 0.0 {
                    continue;
                }
                for (h, v) in hours.iter().enumerate() {
                    if v.round() != 0.0 {
                        packed_m.insert(at_hour(&name, h as i64), v.round());
                    }
                }
                packed_m.insert(name.clone(), total);
                totals_m.insert(name, total);
            }
            if packed_m.is_empty() {
                continue;
            }
            if with_totals.contains(&series.as_str()) {
                out.entry(totals(&series)).or_default().push(Rollup {
                    hour: day,
                    key: key.clone(),
                    dims: dims.clone(),
                    measures: totals_m,
                });
            }
            out.entry(packed(&series)).or_default().push(Rollup {
                hour: day,
                key,
                dims,
                measures: packed_m,
            });
        }
        out.into_iter().collect()
    }
}

/// The aggregates of a batch of traffic.
#[derive(Default)]
pub struct Derived {
    table: DayTable,
    talkers: Talkers,
    inside: cube::Inside,
    /// The key of each external side met, by its fields.
    outside: HashMap<String, String>,
}

impl Derived {
    pub fn add(&mut self, t: &Traffic<'_>) {
        let r = &t.remote;
        let m = [(BYTES, t.bytes), (FLOWS, t.flows)];
        let vg = t.seen_by_gateway();
        // A destination is its address and the name it was reached by: the routes merge its
        // rows by address, naming it by the first that has a name.
        let dest = format!("{}|{}", r.ip, r.host.unwrap_or_default());
        if t.seen == Seen::Agent {
            let protocol = match r.protocol {
                "UDP" => Protocol::Udp,
                _ => Protocol::Tcp,
            };
            let (kb, kf) = part_keys(protocol, r.direction);
            let parts = [(kb.as_str(), t.bytes), (kf.as_str(), t.flows)];
            self.table.add(SUM, t.at, "all", || json!({}), &parts);
            self.table
                .add(&machine_sum(t.endpoint), t.at, "all", || json!({}), &parts);
            if let Some(at) = chrono::DateTime::from_timestamp_millis(t.at) {
                self.talkers.add(&talkers::Flow {
                    at,
                    machine: t.endpoint,
                    direction: r.direction,
                    bytes: t.bytes,
                    flows: t.flows,
                });
            }
            self.table.add(
                DEST_AGENT,
                t.at,
                &dest,
                || json!({"ip": r.ip, "h": r.host, "c": r.country, "o": r.operator}),
                &m,
            );
            self.table.add(
                &machine_destinations(t.endpoint),
                t.at,
                &dest,
                || json!({"ip": r.ip, "e": r.name(), "c": r.country, "o": r.operator, "vg": vg}),
                &m,
            );
        }
        if vg {
            let a = t.seen == Seen::Agent || t.agent_machine;
            self.table.add(
                DEST_GATEWAY,
                t.at,
                &format!("{dest}.{a}"),
                || json!({"ip": r.ip, "h": r.host, "c": r.country, "o": r.operator, "a": a}),
                &m,
            );
        }
        let dims = || {
            let mut dims = json!({
                "e": r.name(), "ip": r.ip, "c": r.country, "o": r.operator,
                "p": r.port.to_string(), "s": r.service, "t": r.protocol,
                "d": r.direction.as_str(),
                "src": match t.seen { Seen::Agent => "agent", Seen::Gateway => "gateway" },
                "g": t.gateway, "si": t.site, "if": t.interface, "vg": vg,
            });
            if t.seen == Seen::Gateway && t.agent_machine {
                dims["a"] = json!(true);
            }
            dims
        };
        let fields = format!(
            "{:?}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}",
            t.seen,
            t.agent_machine,
            t.site,
            t.gateway,
            t.interface,
            r.ip,
            r.host.unwrap_or_default(),
            r.country,
            r.operator,
            r.port,
            r.protocol,
            r.service,
            r.direction.as_str()
        );
        let key = self
            .outside
            .entry(fields)
            .or_insert_with_key(|fields| sha256_hex(fields.as_bytes())[..16].to_owned())
            .clone();
        self.table.add(CUBE_EXT, t.at, &key, dims, &m);
        self.inside.add(
            &cube::Fact {
                at: floor_to(t.at, HOUR_MS),
                outside: &key,
                inside: [t.endpoint, t.process, t.user],
                bytes: t.bytes,
                flows: t.flows,
            },
            dims,
        );
    }

    /// The rows to add, as (series, rows); `totals_tier` also gives the day totals of the
    /// largest reads (the destinations and the explorer's external side).
    pub fn series(self, totals_tier: bool) -> Vec<(String, Vec<Rollup>)> {
        let with_totals: &[&str] = if totals_tier {
            &[DEST_AGENT, DEST_GATEWAY, CUBE_EXT]
        } else {
            &[]
        };
        let mut out = self.table.series(with_totals);
        out.extend(self.talkers.series());
        out.extend(self.inside.series());
        out
    }
}

/// The usual service of a port: `https` for 443/TCP; else `<port>/<protocol>`.
pub fn service_of(port: u16, protocol: &str) -> String {
    let known = match (port, protocol) {
        (443, "TCP") => "https",
        (443, "UDP") => "quic",
        (80, _) => "http",
        (53, _) => "dns",
        (123, "UDP") => "ntp",
        (22, "TCP") => "ssh",
        (25 | 465 | 587, "TCP") => "smtp",
        (3389, _) => "rdp",
        (445, "TCP") => "smb",
        (389, _) => "ldap",
        (636, "TCP") => "ldaps",
        (88, _) => "kerberos",
        (1433, "TCP") => "mssql",
        (3478, "UDP") => "stun",
        (8801, "UDP") => "zoom-media",
        _ => "",
    };
    if known.is_empty() {
        format!("{port}/{}", protocol.to_ascii_lowercase())
    } else {
        known.to_owned()
    }
}

/// Whether an address is private (RFC 1918, loopback, link-local, CGNAT, IPv6 unique local):
/// its country and operator are [`PRIVATE_COUNTRY`] and [`PRIVATE_OPERATOR`].
pub fn is_private(ip: &std::net::IpAddr) -> bool {
    match ip {
        std::net::IpAddr::V4(v4) => {
            let [a, b, ..] = v4.octets();
            v4.is_private()
                || v4.is_loopback()
                || v4.is_link_local()
                || a == 100 && (64..128).contains(&b)
        }
        std::net::IpAddr::V6(v6) => {
            v6.is_loopback()
                || (v6.segments()[0] & 0xfe00) == 0xfc00
                || (v6.segments()[0] & 0xffc0) == 0xfe80
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn traffic(seen: Seen, at: i64, bytes: f64) -> Traffic<'static> {
        Traffic {
            at,
            seen,
            endpoint: "PC-1",
            // PC-1 runs an agent: what a gateway sees of it is marked so.
            agent_machine: true,
            process: "chrome.exe",
            user: "julie",
            site: "PAR",
            gateway: if seen == Seen::Agent {
                NO_GATEWAY
            } else {
                "fw-par-01"
            },
            interface: if seen == Seen::Agent { NO_GATEWAY } else { "1" },
            remote: Remote {
                ip: "52.113.194.132",
                host: Some("teams.microsoft.com"),
                country: "NL",
                operator: "Microsoft",
                port: 443,
                protocol: "TCP",
                service: "https",
                direction: Direction::Outbound,
            },
            bytes,
            flows: 1.0,
        }
    }

    fn measure(out: &[(String, Vec<Rollup>)], series: &str, name: &str) -> f64 {
        out.iter()
            .filter(|(s, _)| s == series)
            .flat_map(|(_, rows)| rows)
            .filter_map(|r| r.measures.get(name))
            .sum()
    }

    #[test]
    fn agent_flows_add_up_per_hour_and_day_and_gateway_flows_only_where_gateways_count() {
        let mut d = Derived::default();
        d.add(&traffic(Seen::Agent, 7 * HOUR_MS + 5, 100.0));
        d.add(&traffic(Seen::Agent, 7 * HOUR_MS + 9, 50.0));
        d.add(&traffic(Seen::Agent, 9 * HOUR_MS, 1.0));
        d.add(&traffic(Seen::Gateway, 9 * HOUR_MS, 1000.0));
        let out = d.series(true);
        assert_eq!(measure(&out, "flows.sum.dh", "b.TO"), 151.0);
        assert_eq!(measure(&out, "flows.sum.dh", "b.TO@07"), 150.0);
        assert_eq!(measure(&out, "flows.sum.dh", "f.TO@09"), 1.0);
        assert_eq!(measure(&out, "flows.sum/PC-1.dh", "b.TO"), 151.0);
        assert_eq!(measure(&out, "flows.dest.agent.d", "b"), 151.0);
        assert_eq!(measure(&out, "flows.dest.gateway.d", "b"), 1000.0);
        assert_eq!(measure(&out, "flows.cubex.dh", "b"), 1151.0);
        assert_eq!(measure(&out, "flows.talkers.dh", "o@07|PC-1"), 150.0);
        // Agent and gateway rows are apart, the gateway's marked as an agent machine's.
        let cubex: Vec<&Rollup> = out
            .iter()
            .filter(|(s, _)| s == "flows.cubex.dh")
            .flat_map(|(_, r)| r)
            .collect();
        assert_eq!(cubex.len(), 2);
        assert!(
            cubex
                .iter()
                .any(|r| r.dims["a"] == json!(true) && r.dims["src"] == "gateway")
        );
    }

    #[test]
    fn services_and_private_addresses() {
        assert_eq!(service_of(443, "TCP"), "https");
        assert_eq!(service_of(5000, "UDP"), "5000/udp");
        for ip in [
            "10.1.2.3",
            "192.168.0.1",
            "172.16.4.4",
            "100.64.0.1",
            "fd00::1",
        ] {
            assert!(is_private(&ip.parse().expect("ip")), "{ip}");
        }
        for ip in ["8.8.8.8", "172.32.0.1", "2001:db8::1"] {
            assert!(!is_private(&ip.parse().expect("ip")), "{ip}");
        }
    }
}
