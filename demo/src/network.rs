//! Network demo data: sites, devices (with WAN links and interfaces), tunnels, hourly
//! metrics, alerts and ports. The device roster is a pure function of the seed context, so
//! the firewall module names the same firewalls and gateways.

use crate::{MachineKind, Produced, SeedCtx, hours_of};
use chrono::{DateTime, Duration, DurationRound, Utc};
use netops_shared::module::BoxFuture;
use netops_shared::store::{Record, StoreResult};
use rand::Rng;
use rand::rngs::StdRng;
use serde_json::Value;

use crate::devices::{devices, site_id, tunnels};

use netops_network::derive::{metric_record, site_status};
use netops_network::model::*;

fn to_value<T: serde::Serialize>(v: &T) -> Value {
    serde_json::to_value(v).unwrap_or(Value::Null)
}

/// The tenant's sites.
pub fn sites(ctx: &SeedCtx, devices: &[DeviceDetail]) -> Vec<Site> {
    ctx.tenant
        .sites
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let id = site_id(ctx, i);
            let mine: Vec<&DeviceDetail> =
                devices.iter().filter(|d| d.device.site_id == id).collect();
            Site {
                id,
                code: s.code.to_owned(),
                name: format!("{} — {}", ctx.tenant.name, s.city),
                city: s.city.to_owned(),
                subnet: format!("10.{}.0.0/16", s.subnet),
                device_count: mine.len() as u32,
                machine_count: ctx
                    .machines
                    .iter()
                    .filter(|m| m.site.code == s.code)
                    .count() as u32,
                status: site_status(mine.iter().map(|d| d.device.status)),
            }
        })
        .collect()
}

/// A device's usual load: its CPU base and its traffic at busy hours.
fn load(ctx: &SeedCtx, d: &DeviceDetail) -> (f64, f64) {
    let base_cpu: f64 = ctx
        .rng(&format!("network/load/{}", d.device.id))
        .random_range(5.0..35.0);
    let base_bps: f64 = match d.device.device_type {
        DeviceType::Firewall | DeviceType::Router => 120_000_000.0,
        DeviceType::Switch => 60_000_000.0,
        DeviceType::AccessPoint => 8_000_000.0,
    };
    (base_cpu, base_bps)
}

/// A device's metrics of the hour starting at `at` (`spike`: degraded, busy and erring).
fn point(
    rng: &mut StdRng,
    d: &DeviceDetail,
    (base_cpu, base_bps): (f64, f64),
    at: DateTime<Utc>,
    spike: bool,
) -> Record {
    let hour_of_day = (at.timestamp() / 3600) % 24;
    let busy = if (7..19).contains(&hour_of_day) {
        1.0
    } else {
        0.25
    };
    let point = MetricPoint {
        at,
        cpu_pct: ((base_cpu * (0.6 + busy) + rng.random_range(0.0..8.0))
            * if spike { 2.5 } else { 1.0 })
        .min(100.0)
        .round(),
        memory_pct: (40.0 + rng.random_range(0.0..25.0_f64)).round(),
        in_bps: (base_bps * busy * rng.random_range(0.6..1.4)).round(),
        out_bps: (base_bps * 0.4 * busy * rng.random_range(0.6..1.4)).round(),
        latency_ms: (rng.random_range(0.5..4.0_f64) * 10.0).round() / 10.0,
        errors: if spike {
            rng.random_range(50.0..400.0_f64).round()
        } else {
            rng.random_range(0.0..3.0_f64).round()
        },
    };
    metric_record(d.device.id, &point)
}

fn metrics(ctx: &SeedCtx, devices: &[DeviceDetail], rng: &mut StdRng) -> Vec<Record> {
    let end = ctx
        .now
        .duration_trunc(Duration::hours(1))
        .unwrap_or(ctx.now);
    let hours = i64::from(ctx.days) * 24;
    let mut out = Vec::with_capacity(devices.len() * hours as usize);
    for d in devices {
        let load = load(ctx, d);
        for h in 0..hours {
            let at: DateTime<Utc> = end - Duration::hours(hours - h);
            // Down devices stop reporting when they went down.
            if at > d.device.last_seen_at {
                continue;
            }
            let spike = d.device.status == LinkStatus::Degraded && h > hours - 12;
            out.push(point(rng, d, load, at, spike));
        }
    }
    out
}

/// The device metrics of every hour that ends in `(from, to]`, as time passes: each device
/// that is not down reports its hour once it has ended (a degraded one still spiking); and
/// the passing alerts that resolve in `[from, to)`, written once resolved.
pub fn produce(ctx: &SeedCtx, from: DateTime<Utc>, to: DateTime<Utc>) -> Produced {
    let devices = devices(ctx);
    let mut out = Vec::new();
    for hour in hours_of(from, to) {
        if hour + Duration::hours(1) > to {
            continue;
        }
        let mut rng = ctx.hour_rng("network", hour);
        for d in devices
            .iter()
            .filter(|d| d.device.status != LinkStatus::Down)
        {
            let spike = d.device.status == LinkStatus::Degraded;
            out.push(point(&mut rng, d, load(ctx, d), hour, spike));
        }
    }
    Produced {
        records: vec![
            (METRICS.to_owned(), out),
            (ALERTS.to_owned(), resolved_in(ctx, &devices, from, to)),
        ],
        rollups: Vec::new(),
        ..Produced::default()
    }
}

/// An alert's record in the series (all in one partition, at its opening).
fn alert_record(alert: &NetworkAlert) -> Record {
    Record {
        partition: "all".into(),
        ts: alert.opened_at.timestamp_millis(),
        id: alert.id.clone(),
        body: to_value(alert),
    }
}

/// The alerts open now, matching the devices', links' and tunnels' current state.
fn open_alerts(ctx: &SeedCtx, devices: &[DeviceDetail], tunnels: &[Tunnel]) -> Vec<Record> {
    let mut out = Vec::new();
    let mut n = 1000;
    let mut push = |kind: NetworkAlertKind,
                    sev: Severity,
                    title: String,
                    d: &Device,
                    opened: DateTime<Utc>| {
        n += 1;
        out.push(alert_record(&NetworkAlert {
            id: format!("net-{n}"),
            kind,
            severity: sev,
            status: AlertState::Open,
            title,
            device_id: d.id,
            device: d.name.clone(),
            site_id: d.site_id,
            opened_at: opened,
            resolved_at: None,
        }));
    };
    for d in devices {
        let dev = &d.device;
        if dev.status == LinkStatus::Down {
            push(
                NetworkAlertKind::DeviceDown,
                Severity::High,
                format!("{} ne répond plus", dev.name),
                dev,
                dev.last_seen_at,
            );
        }
        if dev.status == LinkStatus::Degraded {
            push(
                NetworkAlertKind::InterfaceErrors,
                Severity::Medium,
                format!("Erreurs d'interface sur {}", dev.name),
                dev,
                ctx.now - Duration::hours(11),
            );
        }
        for l in &d.wan_links {
            if l.status == LinkStatus::Down {
                push(
                    NetworkAlertKind::WanDown,
                    Severity::Critical,
                    format!("Lien {} ({}) coupé sur {}", l.name, l.provider, dev.name),
                    dev,
                    ctx.now - Duration::hours(3),
                );
            } else if l.status == LinkStatus::Degraded {
                push(
                    NetworkAlertKind::HighLatency,
                    Severity::Low,
                    format!("Pertes sur le lien {} de {}", l.name, dev.name),
                    dev,
                    ctx.now - Duration::minutes(95),
                );
            }
        }
    }
    for t in tunnels.iter().filter(|t| t.status == LinkStatus::Down) {
        if let Some(d) = devices.iter().find(|d| d.device.id == t.local.device_id) {
            push(
                NetworkAlertKind::TunnelDown,
                Severity::High,
                format!("Tunnel {} tombé", t.name),
                &d.device,
                t.last_change_at,
            );
        }
    }
    out
}

/// The longest a passing alert stays open: a producer looks this far back for the alerts
/// that resolve in its interval.
const LONGEST_MINUTES: i64 = 240;

/// The passing alerts that open in the hour starting at `hour`, each resolved within
/// [`LONGEST_MINUTES`]: about one in four hours of any kind on any device (more on a large
/// roster), and on each degraded device, whose CPU spikes, a high CPU one hour in four.
/// Drawn from the hour's own generator, so the seed and the producer find the same alerts.
fn passing_alerts(
    devices: &[DeviceDetail],
    rng: &mut StdRng,
    hour: DateTime<Utc>,
) -> Vec<NetworkAlert> {
    let kinds = [
        (NetworkAlertKind::HighCpu, Severity::Medium),
        (NetworkAlertKind::DeviceDown, Severity::High),
        (NetworkAlertKind::WanDown, Severity::Critical),
        (NetworkAlertKind::InterfaceErrors, Severity::Low),
        (NetworkAlertKind::HighLatency, Severity::Info),
        (NetworkAlertKind::TunnelDown, Severity::High),
    ];
    let mut drawn: Vec<(&Device, NetworkAlertKind, Severity)> = Vec::new();
    let per_day = (devices.len() as f64 / 6.0).max(6.0);
    if !devices.is_empty() && rng.random_bool((per_day / 24.0).min(1.0)) {
        let d = &devices[rng.random_range(0..devices.len())].device;
        let (kind, sev) = kinds[rng.random_range(0..kinds.len())];
        drawn.push((d, kind, sev));
    }
    for d in devices
        .iter()
        .filter(|d| d.device.status == LinkStatus::Degraded)
    {
        if rng.random_bool(0.25) {
            drawn.push((&d.device, NetworkAlertKind::HighCpu, Severity::Medium));
        }
    }
    drawn
        .into_iter()
        .enumerate()
        .map(|(k, (d, kind, sev))| {
            let opened = hour + Duration::seconds(rng.random_range(0..3600));
            let resolved = opened + Duration::minutes(rng.random_range(2..LONGEST_MINUTES));
            NetworkAlert {
                id: format!("net-{}-{k}", hour.timestamp() / 3600),
                kind,
                severity: sev,
                status: AlertState::Resolved,
                title: format!("{} sur {}", kind.as_str(), d.name),
                device_id: d.id,
                device: d.name.clone(),
                site_id: d.site_id,
                opened_at: opened,
                resolved_at: Some(resolved),
            }
        })
        .collect()
}

/// The passing alerts that resolve in `[from, to)`, opened at most [`LONGEST_MINUTES`] before.
fn resolved_in(
    ctx: &SeedCtx,
    devices: &[DeviceDetail],
    from: DateTime<Utc>,
    to: DateTime<Utc>,
) -> Vec<Record> {
    ctx.ended_in(
        "network/alerts",
        Duration::minutes(LONGEST_MINUTES),
        from,
        to,
        |rng, hour| passing_alerts(devices, rng, hour),
        |a| a.resolved_at,
    )
    .iter()
    .map(alert_record)
    .collect()
}

const SERVICES: &[(u16, &str, &str)] = &[
    (22, "tcp", "ssh"),
    (53, "udp", "dns"),
    (80, "tcp", "http"),
    (135, "tcp", "msrpc"),
    (161, "udp", "snmp"),
    (443, "tcp", "https"),
    (445, "tcp", "microsoft-ds"),
    (1433, "tcp", "ms-sql-s"),
    (3389, "tcp", "ms-wbt-server"),
    (5985, "tcp", "wsman"),
    (8443, "tcp", "https-alt"),
];

fn ports(ctx: &SeedCtx, devices: &[DeviceDetail], rng: &mut StdRng) -> Vec<(String, Value)> {
    let mut hosts: Vec<(String, String, Vec<u16>)> = ctx
        .machines
        .iter()
        .map(|m| {
            let ports = match m.kind {
                MachineKind::Server => vec![135, 445, 3389, 5985, 443, 1433, 22],
                _ => vec![135, 445, 3389],
            };
            (m.ip.clone(), m.hostname.clone(), ports)
        })
        .collect();
    hosts.extend(devices.iter().map(|d| {
        let ports = match d.device.device_type {
            DeviceType::Firewall => vec![443, 22, 161, 8443],
            DeviceType::Router => vec![22, 161, 53, 80],
            DeviceType::Switch => vec![22, 161, 80],
            DeviceType::AccessPoint => vec![22, 443],
        };
        (d.device.ip.clone(), d.device.name.clone(), ports)
    }));
    let mut out = Vec::new();
    for (ip, host, ports) in hosts {
        for port in ports {
            let Some(&(_, proto, service)) = SERVICES.iter().find(|s| s.0 == port) else {
                continue;
            };
            let roll: f64 = rng.random();
            let state = if roll < 0.75 {
                PortState::Open
            } else if roll < 0.9 {
                PortState::Filtered
            } else {
                PortState::Closed
            };
            let first =
                ctx.start() + Duration::hours(rng.random_range(0..i64::from(ctx.days) * 24));
            let p = Port {
                ip: ip.clone(),
                host: Some(host.clone()),
                port,
                protocol: proto.into(),
                state,
                service: Some(service.into()),
                first_seen_at: first,
                last_seen_at: ctx.now - Duration::minutes(rng.random_range(5..720)),
            };
            out.push((port_key(&ip, port, proto), to_value(&p)));
        }
    }
    out
}

pub fn seed(ctx: &SeedCtx) -> BoxFuture<'_, StoreResult<()>> {
    Box::pin(async move {
        let stores = &ctx.stores;
        let tenant = ctx.tenant.id;
        let devices = devices(ctx);
        let mut rng = ctx.rng("network");
        let sites = sites(ctx, &devices);
        stores
            .docs
            .put(
                tenant,
                SITES,
                sites.iter().map(|s| (key(s.id), to_value(s))).collect(),
            )
            .await?;
        stores
            .docs
            .put(
                tenant,
                DEVICES,
                devices
                    .iter()
                    .map(|d| (key(d.device.id), to_value(d)))
                    .collect(),
            )
            .await?;
        let tunnels = tunnels(ctx, &devices);
        stores
            .docs
            .put(
                tenant,
                TUNNELS,
                tunnels.iter().map(|t| (key(t.id), to_value(t))).collect(),
            )
            .await?;
        stores
            .docs
            .put(tenant, PORTS, ports(ctx, &devices, &mut rng))
            .await?;
        // The history: the alerts that passed during the period, then those open now.
        let mut alerts = resolved_in(ctx, &devices, ctx.start(), ctx.now);
        alerts.extend(open_alerts(ctx, &devices, &tunnels));
        stores.append_alerts(tenant, ALERTS, alerts).await?;
        stores
            .series_writes
            .append(tenant, METRICS, metrics(ctx, &devices, &mut rng))
            .await?;
        Ok(())
    })
}
