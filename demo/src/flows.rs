//! Flows demo data: a deterministic, hour-by-hour simulation of the tenant's traffic.
//!
//! Every machine of the roster follows a working-hours rhythm (servers run around the
//! clock) and talks to its own set of habitual destinations (well-known services, the
//! tenant's servers, a long tail of small sites) with heavy-tailed volumes. Agentless
//! devices are seen only by the site gateways. The same simulated flows feed the detailed
//! records (the last days only: 2 at demo size, 7 for big seeds), every hourly aggregate
//! (made by the collection writers' own derivation, [`netops_flows::derive`], with its daily
//! roll-up, see [`netops_flows::tiers`]) and the failed connections, so the routes agree with
//! one another.

mod catalog;

use std::collections::HashMap;

use crate::{MachineKind, Produced, SeedCtx};
use chrono::{DateTime, Datelike, Timelike, Utc};
use netops_shared::module::BoxFuture;
use netops_shared::store::daily::{DAY_MS, HOUR_MS};
use netops_shared::store::{Record, Rollup, StoreResult, Stores};
use rand::Rng;
use rand::rngs::StdRng;
use serde_json::{Value, json};

use catalog::{DEVICES, FIREWALL_RULES, INTERNAL, SERVICES, TAIL};
use netops_flows::derive::{DayTable, Derived, Remote, Seen, Traffic};
use netops_flows::model::*;

/// One remote peer (or, for inbound flows, the client that connects).
struct Dest {
    host: Option<String>,
    ip: String,
    country: String,
    operator: String,
    port: u16,
    proto: Protocol,
    service: &'static str,
    processes: Vec<&'static str>,
    kib: f64,
    inbound: bool,
    /// Stays on the LAN: gateways do not see it.
    internal: bool,
}

/// An internal endpoint: an agent machine or an agentless device.
struct Endpoint {
    name: String,
    ip: String,
    site: usize,
    /// Index in `ctx.machines` for agent machines.
    machine: Option<usize>,
    kind: Option<MachineKind>,
    user: String,
    /// (dest index, cumulative weight).
    habits: Vec<(usize, f64)>,
    /// No data after this time (offline machines).
    until: i64,
    listening: Vec<(u16, &'static str)>,
}

/// Ids of an hour's records are numbered from the hour's index times this.
const SEQ_PER_HOUR: u64 = 10_000_000;

const SYSTEM_PROCESSES: &[&str] = &[
    "svchost.exe",
    "System",
    "lsass.exe",
    "dns.exe",
    "sqlservr.exe",
    "apt",
    "erp-server.exe",
];

fn user_of(ep: &Endpoint, process: &str) -> String {
    if process == UNKNOWN {
        UNKNOWN.into()
    } else if SYSTEM_PROCESSES.contains(&process) {
        "SYSTEM".into()
    } else if process == "veeamagent.exe" || process == "rclone.exe" {
        "svc-backup".into()
    } else {
        ep.user.clone()
    }
}

/// Standard normal draw (Box-Muller).
fn normal(rng: &mut StdRng) -> f64 {
    let u1: f64 = rng.random::<f64>().max(1e-12);
    let u2: f64 = rng.random();
    (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
}

/// Heavy-tailed volume around `kib` (log-normal, mean preserved).
fn volume(rng: &mut StdRng, kib: f64, sigma: f64) -> f64 {
    (kib * 1024.0 * (sigma * normal(rng) - sigma * sigma / 2.0).exp()).max(60.0)
}

/// Share of the peak activity at this local hour (working-hours rhythm).
fn activity(kind: Option<MachineKind>, local: DateTime<Utc>) -> f64 {
    let weekend = local.weekday().num_days_from_monday() >= 5;
    let h = local.hour();
    match kind {
        Some(MachineKind::Server) => {
            if (1..4).contains(&h) {
                0.9 // backups
            } else if !weekend && (8..19).contains(&h) {
                0.8
            } else {
                0.35
            }
        }
        None => {
            if !weekend && (8..19).contains(&h) {
                0.6
            } else {
                0.15
            }
        }
        _ => {
            if weekend {
                if (10..18).contains(&h) { 0.04 } else { 0.0 }
            } else {
                match h {
                    9..=11 | 14..=17 => 1.0,
                    8 | 12 | 13 | 18 => 0.6,
                    7 | 19 | 20 => 0.15,
                    _ => 0.0,
                }
            }
        }
    }
}

fn pick_habit(rng: &mut StdRng, habits: &[(usize, f64)]) -> usize {
    let total = habits.last().map(|h| h.1).unwrap_or(0.0);
    let x = rng.random::<f64>() * total;
    habits
        .iter()
        .find(|h| h.1 >= x)
        .or(habits.last())
        .map(|h| h.0)
        .unwrap_or(0)
}

/// Rows waiting to be written, by series.
#[derive(Default)]
struct Pending {
    rows: HashMap<String, Vec<Rollup>>,
    count: usize,
}

impl Pending {
    fn extend(&mut self, series: Vec<(String, Vec<Rollup>)>) {
        for (name, rows) in series {
            self.count += rows.len();
            self.rows.entry(name).or_default().extend(rows);
        }
    }
}

struct Gen<'a> {
    ctx: &'a SeedCtx,
    dests: Vec<Dest>,
    eps: Vec<Endpoint>,
    gateways: Vec<String>,
    has_gateway: bool,
    has_firewall: bool,
    /// Big seeds also write day totals (`<name>.d`) for the largest reads.
    totals_tier: bool,
}

impl Gen<'_> {
    fn gateway(&self, site: usize) -> &str {
        self.gateways
            .get(site)
            .map(String::as_str)
            .unwrap_or(catalog::NO_GATEWAY)
    }

    fn interface(&self, dest: usize) -> &'static str {
        if dest % 7 == 3 { "wan2" } else { "wan1" }
    }

    /// A drawn flow (or group of `flows` flows) of endpoint `e` to destination `di`, as the
    /// flows writers count it ([`netops_flows::derive`]).
    #[allow(clippy::too_many_arguments)]
    fn traffic<'a>(
        &'a self,
        at: i64,
        e: usize,
        di: usize,
        process: &'a str,
        user: &'a str,
        bytes: f64,
        flows: f64,
    ) -> Traffic<'a> {
        let (ep, d) = (&self.eps[e], &self.dests[di]);
        let (gateway, interface) = if self.has_gateway && !d.internal {
            (self.gateway(ep.site), self.interface(di))
        } else {
            (catalog::NO_GATEWAY, catalog::NO_GATEWAY)
        };
        Traffic {
            at,
            seen: if ep.machine.is_some() {
                Seen::Agent
            } else {
                Seen::Gateway
            },
            endpoint: &ep.name,
            agent_machine: ep.machine.is_some(),
            process,
            user,
            site: self.ctx.tenant.sites[ep.site].code,
            gateway,
            interface,
            remote: Remote {
                ip: &d.ip,
                host: d.host.as_deref(),
                country: &d.country,
                operator: &d.operator,
                port: d.port,
                protocol: d.proto.as_str(),
                service: d.service,
                direction: if d.inbound {
                    Direction::Inbound
                } else {
                    Direction::Outbound
                },
            },
            bytes,
            flows,
        }
    }
}

fn build(ctx: &SeedCtx) -> Gen<'_> {
    let mut rng = ctx.rng("flows.catalog");
    let big = ctx.machines.len() > 100;
    let has_gateway = ctx.tenant.id != "globex";
    let has_firewall = true;
    let mut dests: Vec<Dest> = SERVICES
        .iter()
        .map(|s| Dest {
            host: Some(s.host.to_owned()),
            ip: s.ip.to_owned(),
            country: s.country.to_owned(),
            operator: s.operator.to_owned(),
            port: s.port,
            proto: s.proto,
            service: s.service,
            processes: s.processes.to_vec(),
            kib: s.kib,
            inbound: false,
            internal: false,
        })
        .collect();
    let server_only: Vec<bool> = SERVICES.iter().map(|s| s.servers).collect();
    let weights: Vec<f64> = SERVICES.iter().map(|s| s.weight).collect();
    // Long tail of small destinations.
    let tail_start = dests.len();
    let tail_n = if big { 400 } else { 40 };
    for i in 0..tail_n {
        let (country, operator) = TAIL[rng.random_range(0..TAIL.len())];
        let ip = format!(
            "{}.{}.{}.{}",
            rng.random_range(31..223),
            rng.random_range(0..256),
            rng.random_range(0..256),
            rng.random_range(1..255)
        );
        dests.push(Dest {
            host: (i % 3 != 0)
                .then(|| format!("srv{}.site{}.example.net", rng.random_range(1..99), i)),
            ip,
            country: country.into(),
            operator: operator.into(),
            port: 443,
            proto: Protocol::Tcp,
            service: "https",
            processes: vec!["chrome.exe", "msedge.exe"],
            kib: 40.0,
            inbound: false,
            internal: false,
        });
    }
    // The tenant's servers and their internal services.
    let servers: Vec<usize> = ctx
        .machines
        .iter()
        .enumerate()
        .filter(|(_, m)| m.kind == MachineKind::Server)
        .map(|(i, _)| i)
        .collect();
    let mut internal_out = Vec::new(); // (dest, service index)
    for (k, svc) in INTERNAL.iter().enumerate() {
        let Some(&srv) = servers.get(k % servers.len().max(1)) else {
            continue;
        };
        let m = &ctx.machines[srv];
        internal_out.push((dests.len(), k, srv));
        dests.push(Dest {
            host: Some(m.fqdn.clone()),
            ip: m.ip.clone(),
            country: catalog::PRIVATE_COUNTRY.into(),
            operator: catalog::PRIVATE_OPERATOR.into(),
            port: svc.0,
            proto: svc.1,
            service: svc.2,
            processes: svc.4.to_vec(),
            kib: if svc.0 == 445 {
                2000.0
            } else if svc.0 == 1433 {
                300.0
            } else {
                4.0
            },
            inbound: false,
            internal: true,
        });
    }
    // Sites' gateways.
    let gateways: Vec<String> = if has_gateway {
        ctx.tenant
            .sites
            .iter()
            .map(|s| format!("fw-{}-01", s.code.to_lowercase()))
            .collect()
    } else {
        Vec::new()
    };
    let until_of = |m: &crate::MachineSeed| {
        if m.online {
            i64::MAX
        } else {
            m.last_seen_at.timestamp_millis()
        }
    };
    let mut eps: Vec<Endpoint> = Vec::new();
    let site_idx = |code: &str| {
        ctx.tenant
            .sites
            .iter()
            .position(|s| s.code == code)
            .unwrap_or(0)
    };
    for (i, m) in ctx.machines.iter().enumerate() {
        let server = m.kind == MachineKind::Server;
        let mut habits = Vec::new();
        let mut acc = 0.0;
        let n = match (server, big) {
            (true, _) => 4,
            (false, true) => 14,
            (false, false) => 6,
        };
        let mut chosen = std::collections::HashSet::new();
        for _ in 0..n * 3 {
            if chosen.len() >= n {
                break;
            }
            let total: f64 = weights
                .iter()
                .enumerate()
                .filter(|(j, _)| server_only[*j] == server || !server_only[*j] && !server)
                .map(|(_, w)| w)
                .sum();
            let mut x = rng.random::<f64>() * total;
            for (j, w) in weights.iter().enumerate() {
                if !(server_only[j] == server || !server_only[j] && !server) {
                    continue;
                }
                x -= w;
                if x <= 0.0 {
                    if chosen.insert(j) {
                        acc += w;
                        habits.push((j, acc));
                    }
                    break;
                }
            }
        }
        if !server {
            for _ in 0..3 {
                let j = tail_start + rng.random_range(0..tail_n);
                acc += 0.3;
                habits.push((j, acc));
            }
            for (d, k, _) in &internal_out {
                let svc = INTERNAL[*k];
                // Remote desktop and SQL only for some users.
                if (svc.0 == 3389 || svc.0 == 1433) && i % 5 != 0 {
                    continue;
                }
                acc += if svc.0 == 53 || svc.0 == 88 { 3.0 } else { 1.5 };
                habits.push((*d, acc));
            }
        } else {
            for (d, k, srv) in &internal_out {
                if *srv != i && INTERNAL[*k].0 == 53 {
                    acc += 1.0;
                    habits.push((*d, acc));
                }
            }
        }
        let listening = if server {
            let mut l: Vec<(u16, &'static str)> = internal_out
                .iter()
                .filter(|(_, _, s)| *s == i)
                .map(|(_, k, _)| (INTERNAL[*k].0, INTERNAL[*k].3))
                .collect();
            l.push((135, "svchost.exe"));
            l
        } else {
            vec![(135, "svchost.exe"), (5040, "svchost.exe")]
        };
        eps.push(Endpoint {
            name: m.hostname.clone(),
            ip: m.ip.clone(),
            site: site_idx(m.site.code),
            machine: Some(i),
            kind: Some(m.kind),
            user: m.user.clone().unwrap_or_else(|| "SYSTEM".into()),
            habits,
            until: until_of(m),
            listening,
        });
    }
    // Inbound: clients of each internal service, and Internet clients of the first server.
    let clients: Vec<usize> = (0..ctx.machines.len())
        .filter(|i| ctx.machines[*i].kind != MachineKind::Server)
        .collect();
    for (_, k, srv) in internal_out.clone() {
        let svc = INTERNAL[k];
        let mut acc = eps[srv].habits.last().map(|h| h.1).unwrap_or(0.0);
        for c in 0..4.min(clients.len()) {
            let client = &ctx.machines[clients[(k * 7 + c * 3) % clients.len()]];
            let d = dests.len();
            dests.push(Dest {
                host: Some(client.fqdn.clone()),
                ip: client.ip.clone(),
                country: catalog::PRIVATE_COUNTRY.into(),
                operator: catalog::PRIVATE_OPERATOR.into(),
                port: svc.0,
                proto: svc.1,
                service: svc.2,
                processes: vec![svc.3],
                kib: if svc.0 == 445 { 2000.0 } else { 8.0 },
                inbound: true,
                internal: true,
            });
            acc += 2.0;
            eps[srv].habits.push((d, acc));
        }
    }
    if let Some(&web) = servers.first() {
        let mut acc = eps[web].habits.last().map(|h| h.1).unwrap_or(0.0);
        for j in 0..12.min(tail_n) {
            let t = &dests[tail_start + j];
            let d = Dest {
                host: None,
                ip: t.ip.clone(),
                country: t.country.clone(),
                operator: t.operator.clone(),
                port: 443,
                proto: Protocol::Tcp,
                service: "https",
                processes: vec!["nginx.exe"],
                kib: 60.0,
                inbound: true,
                internal: false,
            };
            acc += 1.0;
            eps[web].habits.push((dests.len(), acc));
            dests.push(d);
        }
    }
    // Agentless devices behind the gateways.
    if has_gateway {
        let per_site = (ctx.machines.len() / 15).max(2) / ctx.tenant.sites.len().max(1) + 1;
        for (s, site) in ctx.tenant.sites.iter().enumerate() {
            for n in 0..per_site {
                let kind = DEVICES[(s + n) % DEVICES.len()];
                let mut habits = Vec::new();
                let mut acc = 0.0;
                for _ in 0..3 {
                    let j = match kind {
                        "imprimante" | "camera" => 27 + rng.random_range(0..2) * 5, // ocsp / vendor telemetry
                        _ => rng.random_range(0..SERVICES.len()),
                    };
                    if !server_only[j.min(SERVICES.len() - 1)] {
                        acc += 1.0;
                        habits.push((j.min(SERVICES.len() - 1), acc));
                    }
                }
                if habits.is_empty() {
                    habits.push((0, 1.0));
                }
                eps.push(Endpoint {
                    name: format!("10.{}.50.{}", site.subnet, 20 + n),
                    ip: format!("10.{}.50.{}", site.subnet, 20 + n),
                    site: s,
                    machine: None,
                    kind: None,
                    user: UNKNOWN.into(),
                    habits,
                    until: i64::MAX,
                    listening: Vec::new(),
                });
            }
        }
    }
    Gen {
        ctx,
        dests,
        eps,
        gateways,
        has_gateway,
        has_firewall,
        totals_tier: big,
    }
}

/// Writes batches in the background while the next ones are generated.
struct Writer {
    stores: Stores,
    tenant: &'static str,
    inflight: Option<tokio::task::JoinHandle<StoreResult<()>>>,
    /// A producer's batch: the records and rollups are kept here, for the caller to write
    /// (rollups added, where the seed loads them).
    kept: Option<Produced>,
}

impl Writer {
    async fn wait(&mut self) -> StoreResult<()> {
        if let Some(h) = self.inflight.take() {
            h.await
                .map_err(|e| netops_shared::store::StoreError::Backend(e.to_string()))??;
        }
        Ok(())
    }

    async fn records(&mut self, series: &'static str, records: Vec<Record>) -> StoreResult<()> {
        if let Some(kept) = &mut self.kept {
            kept.records.push((series.to_owned(), records));
            return Ok(());
        }
        self.wait().await?;
        let (series_writes, tenant) = (self.stores.series_writes.clone(), self.tenant);
        self.inflight = Some(tokio::spawn(async move {
            series_writes.append(tenant, series, records).await
        }));
        Ok(())
    }

    async fn rollups(&mut self, pending: Pending) -> StoreResult<()> {
        if let Some(kept) = &mut self.kept {
            kept.rollups.extend(pending.rows);
            return Ok(());
        }
        self.wait().await?;
        let (rollups, tenant) = (self.stores.rollups.clone(), self.tenant);
        self.inflight = Some(tokio::spawn(async move {
            for (series, rows) in pending.rows {
                rollups.load(tenant, &series, rows).await?;
            }
            Ok(())
        }));
        Ok(())
    }
}

fn flow_body(
    ep: &Endpoint,
    d: &Dest,
    process: &str,
    user: String,
    bytes: u64,
    rng: &mut StdRng,
) -> Value {
    let eph = rng.random_range(49152..65535u16);
    let (lp, rp) = if d.inbound {
        (d.port, eph)
    } else {
        (eph, d.port)
    };
    let body = StoredFlow {
        p: process.to_owned(),
        u: user,
        li: ep.ip.clone(),
        lp,
        ri: d.ip.clone(),
        rp,
        rh: d.host.clone(),
        t: d.proto,
        d: if d.inbound {
            Direction::Inbound
        } else {
            Direction::Outbound
        },
        b: bytes,
        l: false,
        c: d.country.clone(),
        o: d.operator.clone(),
    };
    serde_json::to_value(body).unwrap_or_default()
}

pub fn seed(ctx: &SeedCtx) -> BoxFuture<'_, StoreResult<()>> {
    Box::pin(async move {
        // The history ends with the last full hour: the hour under way is the producer's,
        // which writes each hour whole once it has ended.
        let start = ctx.start().timestamp_millis();
        let end = (ctx.now.timestamp_millis() / HOUR_MS) * HOUR_MS;
        run(ctx, start, end, None).await?;
        Ok(())
    })
}

/// The flows of every hour that ends in `(from, to]`, as time passes: each hour is drawn
/// whole from its own generator once it has ended, so the newest flows are those of the last
/// full hour.
pub fn produce(
    ctx: &SeedCtx,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
) -> BoxFuture<'_, StoreResult<Produced>> {
    Box::pin(async move {
        // The hours that end in (from, to].
        let first = (from.timestamp_millis() / HOUR_MS) * HOUR_MS;
        let end = (to.timestamp_millis() / HOUR_MS) * HOUR_MS;
        if end <= first {
            return Ok(Produced::default());
        }
        run(ctx, first, end, Some(Produced::default())).await
    })
}

/// Writes the flows of the hours in `[from, to)` (`to` an hour boundary), or keeps them in
/// `kept` for a producer's batch and returns them.
async fn run(ctx: &SeedCtx, from: i64, to: i64, kept: Option<Produced>) -> StoreResult<Produced> {
    let g = build(ctx);
    let big = ctx.machines.len() > 100;
    let producing = kept.is_some();
    let now = to;
    let start = (from / HOUR_MS) * HOUR_MS;
    let detail_days = if big { 7 } else { 2 }.min(i64::from(ctx.days));
    let detail_from = now - detail_days * DAY_MS;
    let blocked_from = DateTime::parse_from_rfc3339(BLOCKED_COLLECTION_START)
        .map(|t| t.timestamp_millis())
        .unwrap_or(0);
    // Flows per machine-hour at peak activity, and groups per machine-hour outside the
    // detailed window (aggregates only need the groups' sums).
    let peak = if big { 150.0 } else { 10.0 };
    let groups = if big { 4 } else { 1 };
    let offset_h = ctx.tenant.utc_offset_hours;
    let mut writer = Writer {
        stores: ctx.stores.clone(),
        tenant: ctx.tenant.id,
        inflight: None,
        kept,
    };
    let mut records: Vec<Record> = Vec::new();
    let mut blocked: Vec<Record> = Vec::new();
    let mut pending = Pending::default();
    let mut derived = Derived::default();
    let mut fw = DayTable::default();
    let mut day_start = (start / DAY_MS) * DAY_MS;
    let mut seq: u64 = 0;
    let mut written: u64 = 0;
    let total_hours = ((now - start) / HOUR_MS + 1).max(1);
    let started = std::time::Instant::now();
    let mut hour = start;
    while hour < now {
        // Each hour from its own generator, its ids numbered from its own base: an hour is
        // the same whether the seed or the producer draws it.
        let mut rng = ctx.hour_rng(
            "flows",
            DateTime::from_timestamp_millis(hour).unwrap_or_default(),
        );
        written += seq % SEQ_PER_HOUR;
        seq = (hour / HOUR_MS) as u64 * SEQ_PER_HOUR;
        if (hour / DAY_MS) * DAY_MS != day_start {
            pending.extend(std::mem::take(&mut derived).series(g.totals_tier));
            pending.extend(std::mem::take(&mut fw).series(&[]));
            day_start = (hour / DAY_MS) * DAY_MS;
        }
        // The agents' flows of the hour, to which the firewall logs are proportionate.
        let mut hour_flows = 0.0;
        let local = DateTime::from_timestamp_millis(hour + offset_h * HOUR_MS).unwrap_or_default();
        let detailed = hour + HOUR_MS > detail_from;
        let span = (now - hour).min(HOUR_MS);
        for (e, ep) in g.eps.iter().enumerate() {
            if hour > ep.until {
                continue;
            }
            let lambda =
                peak * activity(ep.kind, local) * if ep.machine.is_none() { 0.3 } else { 1.0 };
            let mut n = (lambda * (0.5 + rng.random::<f64>())).floor() as u64;
            if lambda > 0.0 && rng.random::<f64>() < 0.5 {
                n += 1;
            }
            if n == 0 || ep.habits.is_empty() {
                continue;
            }
            // Detailed hours: one flow at a time; older hours: a few groups of flows.
            let units: Vec<(u64, f64)> = if detailed && ep.machine.is_some() {
                (0..n).map(|_| (1, 0.0)).collect()
            } else {
                let k = n.min(groups);
                (0..k)
                    .map(|i| (n / k + u64::from(i < n % k), 0.0))
                    .collect()
            };
            for (count, _) in units {
                let di = pick_habit(&mut rng, &ep.habits);
                let d = &g.dests[di];
                let process = if ep.machine.is_some() {
                    // Each machine has its usual program for a service (its browser...).
                    d.processes
                        .get((e + di) % d.processes.len().max(1))
                        .copied()
                        .unwrap_or("svchost.exe")
                } else {
                    UNKNOWN
                };
                let bytes = if count == 1 {
                    volume(&mut rng, d.kib, 1.4)
                } else {
                    volume(&mut rng, d.kib, 0.8) * count as f64
                }
                .round();
                if ep.machine.is_some() {
                    if detailed {
                        seq += 1;
                        let ts = (hour + rng.random_range(0..span)).min(now - 1);
                        let user = user_of(ep, process);
                        records.push(Record {
                            partition: ep.name.clone(),
                            ts,
                            id: format!("fl{seq:010}"),
                            body: flow_body(ep, d, process, user, bytes as u64, &mut rng),
                        });
                    }
                    hour_flows += count as f64;
                }
                let user = user_of(ep, process);
                derived.add(&g.traffic(hour, e, di, process, &user, bytes, count as f64));
            }
            // Listening sockets, seen every six hours in the detailed window, each agent at its
            // own hour and minute of the six (agents do not scan in step).
            let phase = e as i64;
            let seen = (hour + (phase * 7 % 60) * 60_000).min(now - 1);
            if detailed && ep.machine.is_some() && (hour / HOUR_MS + phase) % 6 == 0 {
                for (port, process) in &ep.listening {
                    seq += 1;
                    let body = StoredFlow {
                        p: (*process).to_owned(),
                        u: "SYSTEM".into(),
                        li: ep.ip.clone(),
                        lp: *port,
                        ri: "0.0.0.0".into(),
                        rp: 0,
                        rh: None,
                        t: Protocol::Tcp,
                        d: Direction::Inbound,
                        b: 0,
                        l: true,
                        c: catalog::PRIVATE_COUNTRY.into(),
                        o: catalog::PRIVATE_OPERATOR.into(),
                    };
                    records.push(Record {
                        partition: ep.name.clone(),
                        ts: seen,
                        id: format!("fl{seq:010}"),
                        body: serde_json::to_value(body).unwrap_or_default(),
                    });
                }
            }
            // Failed outbound connections (collection started on 2026-09-27).
            if let Some(mi) = ep.machine
                && hour >= blocked_from
                && (rng.random::<f64>() < 0.06 * activity(ep.kind, local)
                    || mi == 0 && hour + DAY_MS > now)
            {
                seq += 1;
                // The first machine (always online) shows every failure type in the last day.
                let kind = if mi == 0 && hour + DAY_MS > now {
                    FailureType::ALL[((hour / HOUR_MS) % 7) as usize]
                } else {
                    let x = rng.random::<f64>();
                    match x {
                        x if x < 0.30 => FailureType::Timeout,
                        x if x < 0.50 => FailureType::Refused,
                        x if x < 0.65 => FailureType::Blocked,
                        x if x < 0.75 => FailureType::HostUnreachable,
                        x if x < 0.80 => FailureType::NetworkUnreachable,
                        x if x < 0.95 => FailureType::Reset,
                        _ => FailureType::Aborted,
                    }
                };
                let mut di = pick_habit(&mut rng, &ep.habits);
                if g.dests[di].inbound {
                    di = ep
                        .habits
                        .iter()
                        .map(|h| h.0)
                        .find(|j| !g.dests[*j].inbound)
                        .unwrap_or(di);
                }
                let d = &g.dests[di];
                if !d.inbound {
                    let process = d.processes.first().copied().unwrap_or("svchost.exe");
                    let ts = (hour + rng.random_range(0..span)).min(now - 1);
                    let body = json!({
                        "type": kind, "process": process, "user": user_of(ep, process),
                        "remote_ip": d.ip, "remote_port": d.port, "remote_host": d.host, "protocol": d.proto,
                    });
                    blocked.push(Record {
                        partition: ep.name.clone(),
                        ts,
                        id: format!("bk{seq:010}"),
                        body,
                    });
                }
            }
        }
        // Firewall logs: connections by rule, in proportion to the traffic of the hour.
        if g.has_firewall {
            let flows = hour_flows * 0.6 + 3.0;
            let total_w: f64 = FIREWALL_RULES.iter().map(|r| r.3).sum();
            for (r, rule) in FIREWALL_RULES.iter().enumerate() {
                let c = (flows * rule.3 / total_w * (0.6 + 0.8 * rng.random::<f64>())).round();
                if c > 0.0 {
                    let (name, cat, action, _) = *rule;
                    fw.add(
                        FIREWALL,
                        hour,
                        &r.to_string(),
                        || json!({"r": name, "ca": cat, "ac": action}),
                        &[(CONNECTIONS, c)],
                    );
                }
            }
        }
        if records.len() >= 40_000 {
            writer
                .records(RECORDS, std::mem::take(&mut records))
                .await?;
        }
        if pending.count >= 40_000 {
            writer.rollups(std::mem::take(&mut pending)).await?;
        }
        hour += HOUR_MS;
        let done = (hour - start) / HOUR_MS;
        if big && done % 24 == 0 {
            eprint!(
                "\rnetops seed: flows of {} {}/{} hours ({} records, {:.0} s)   ",
                ctx.tenant.id,
                done,
                total_hours,
                written,
                started.elapsed().as_secs_f64()
            );
        }
    }
    written += seq % SEQ_PER_HOUR;
    pending.extend(derived.series(g.totals_tier));
    pending.extend(fw.series(&[]));
    writer.records(RECORDS, records).await?;
    writer.records(BLOCKED, blocked).await?;
    writer.rollups(pending).await?;
    writer.wait().await?;
    if big {
        eprintln!(
            "\rnetops seed: flows of {} done: {} records in {:.0} s          ",
            ctx.tenant.id,
            written,
            started.elapsed().as_secs_f64()
        );
    }
    if producing {
        return Ok(writer.kept.take().unwrap_or_default());
    }
    let sources = json!({
        "agent": true,
        "gateway": g.has_gateway,
        "firewall": g.has_firewall,
        "gateways": g.gateways,
        "totals_tier": g.totals_tier,
    });
    ctx.stores
        .docs
        .put(ctx.tenant.id, SOURCES, vec![("config".into(), sources)])
        .await?;
    Ok(Produced::default())
}
