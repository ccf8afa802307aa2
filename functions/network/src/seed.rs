//! Network demo data: sites, devices (with WAN links and interfaces), tunnels, hourly
//! metrics, alerts and ports. The device roster is a pure function of the seed context, so
//! the firewall module names the same firewalls and gateways.

use chrono::{DateTime, Duration, DurationRound, Utc};
use netops_shared::demo::{MachineKind, SeedCtx};
use netops_shared::module::BoxFuture;
use netops_shared::store::{Record, StoreResult};
use rand::Rng;
use rand::rngs::StdRng;
use serde_json::Value;

use crate::model::*;

fn to_value<T: serde::Serialize>(v: &T) -> Value {
    serde_json::to_value(v).unwrap_or(Value::Null)
}

/// Firewall models by site, cycled: each vendor logs in its own format.
const FIREWALLS: &[(&str, &str, &str)] = &[
    ("Fortinet", "FortiGate 100F", "7.4.4"),
    ("Palo Alto Networks", "PA-440", "11.1.2"),
    ("Check Point", "Quantum 3600", "R81.20"),
    ("Sophos", "XGS 2100", "20.0.1"),
];
/// Gateway (router) models by site, cycled.
const ROUTERS: &[(&str, &str, &str)] = &[
    ("MikroTik", "CCR2004-1G-12S+2XS", "7.15.3"),
    ("Juniper Networks", "SRX300", "23.4R1"),
];
const PROVIDERS: &[&str] = &[
    "Orange Business",
    "SFR Business",
    "Bouygues Telecom Entreprises",
    "Free Pro",
];

fn device_name(ctx: &SeedCtx, site: &str, code: &str, n: usize) -> String {
    if ctx.tenant.upper_hostnames {
        format!("{site}-{code}-{n:02}")
    } else {
        format!("gx-{}-{}{n:02}", site.to_lowercase(), code.to_lowercase())
    }
}

fn site_id(ctx: &SeedCtx, index: usize) -> i64 {
    ctx.tenant.id_base + index as i64 + 1
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
            let degraded = mine.iter().any(|d| d.device.status != "up");
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
                status: if degraded { "degraded" } else { "up" }.into(),
            }
        })
        .collect()
}

fn interfaces(rng: &mut StdRng, kind: DeviceType, status: &str) -> Vec<Interface> {
    let (count, speed) = match kind {
        DeviceType::Firewall => (6, 1000),
        DeviceType::Router => (4, 1000),
        DeviceType::Switch => (24, 1000),
        DeviceType::AccessPoint => (2, 1000),
    };
    (0..count)
        .map(|i| {
            let name = match kind {
                DeviceType::Firewall => format!("port{}", i + 1),
                DeviceType::Router => format!("ether{}", i + 1),
                DeviceType::Switch => format!("GigabitEthernet1/0/{}", i + 1),
                DeviceType::AccessPoint => {
                    if i == 0 {
                        "eth0".into()
                    } else {
                        "wlan0".into()
                    }
                }
            };
            let st = if status == "down" {
                "down"
            } else if i == 1 && status == "degraded" {
                "degraded"
            } else if kind == DeviceType::Switch && rng.random_bool(0.25) {
                "down"
            } else {
                "up"
            };
            let active = st != "down";
            Interface {
                name,
                status: st.into(),
                speed_mbps: if kind == DeviceType::Switch && i >= 22 {
                    10_000
                } else {
                    speed
                },
                vlan: match kind {
                    DeviceType::Switch => Some([10, 20, 30, 40][i % 4]),
                    _ => None,
                },
                description: match (kind, i) {
                    (DeviceType::Firewall | DeviceType::Router, 0) => "WAN".into(),
                    (DeviceType::Firewall | DeviceType::Router, 1) => "LAN".into(),
                    (DeviceType::Switch, 22 | 23) => "uplink".into(),
                    _ => String::new(),
                },
                in_bps: if active {
                    rng.random_range(10_000..80_000_000)
                } else {
                    0
                },
                out_bps: if active {
                    rng.random_range(10_000..40_000_000)
                } else {
                    0
                },
                errors_24h: if st == "degraded" {
                    rng.random_range(500..5000)
                } else {
                    rng.random_range(0..5)
                },
            }
        })
        .collect()
}

/// The tenant's network devices, deterministic: per site one firewall, one router, one
/// switch per 24 machines and one access point per 12 (at least one each).
pub fn devices(ctx: &SeedCtx) -> Vec<DeviceDetail> {
    let mut rng = ctx.rng("network/devices");
    let mut out = Vec::new();
    let mut next_id = ctx.tenant.id_base + 1;
    for (si, site) in ctx.tenant.sites.iter().enumerate() {
        let machines = ctx
            .machines
            .iter()
            .filter(|m| m.site.code == site.code)
            .count();
        let mut plan: Vec<(DeviceType, usize)> =
            vec![(DeviceType::Firewall, 1), (DeviceType::Router, 1)];
        plan.extend((1..=1 + machines / 24).map(|n| (DeviceType::Switch, n)));
        plan.extend((1..=1 + machines / 12).map(|n| (DeviceType::AccessPoint, n)));
        let aps = 1 + machines / 12;
        for (k, (kind, n)) in plan.into_iter().enumerate() {
            let (vendor, model, firmware) = match kind {
                DeviceType::Firewall => FIREWALLS[si % FIREWALLS.len()],
                DeviceType::Router => ROUTERS[si % ROUTERS.len()],
                DeviceType::Switch => ("Cisco", "Catalyst 9200L-24P", "17.9.4"),
                DeviceType::AccessPoint => ("Ubiquiti", "UniFi U6 Pro", "6.6.77"),
            };
            let code = match kind {
                DeviceType::Firewall => "FW",
                DeviceType::Router => "RTR",
                DeviceType::Switch => "SW",
                DeviceType::AccessPoint => "AP",
            };
            // Every demo has a device down (the last access point of the last site) and a
            // degraded one (the first switch of the second site).
            let status = if si + 1 == ctx.tenant.sites.len()
                && kind == DeviceType::AccessPoint
                && n == aps
            {
                LinkStatus::Down
            } else if si == 1 && kind == DeviceType::Switch && n == 1 {
                LinkStatus::Degraded
            } else if kind == DeviceType::AccessPoint && rng.random_bool(0.05) {
                LinkStatus::Down
            } else {
                LinkStatus::Up
            };
            let host = k + 1;
            let ip = format!("10.{}.{}.{}", site.subnet, host / 250, host % 250 + 1);
            let last_seen_at = if status == LinkStatus::Down {
                ctx.now - Duration::minutes(rng.random_range(20..600))
            } else {
                ctx.now - Duration::seconds(rng.random_range(5..60))
            };
            let wan_links = match kind {
                DeviceType::Firewall | DeviceType::Router => {
                    let provider =
                        PROVIDERS[(si + usize::from(kind == DeviceType::Router)) % PROVIDERS.len()];
                    let mut links = vec![WanLink {
                        name: "wan1".into(),
                        provider: provider.into(),
                        medium: "fiber".into(),
                        role: "primary".into(),
                        bandwidth_down_mbps: 1000,
                        bandwidth_up_mbps: if kind == DeviceType::Firewall {
                            1000
                        } else {
                            500
                        },
                        public_ip: format!("198.51.100.{}", (si * 8 + k) % 250 + 1),
                        status: "up".into(),
                        latency_ms: Some(rng.random_range(3.0..12.0_f64).round()),
                        loss_pct: Some(0.0),
                    }];
                    if kind == DeviceType::Router {
                        // The backup link of the first site is down, the second site's degraded.
                        let st = match si {
                            0 => "down",
                            1 => "degraded",
                            _ => "up",
                        };
                        links.push(WanLink {
                            name: "lte1".into(),
                            provider: PROVIDERS[(si + 2) % PROVIDERS.len()].into(),
                            medium: "lte".into(),
                            role: "backup".into(),
                            bandwidth_down_mbps: 150,
                            bandwidth_up_mbps: 50,
                            public_ip: format!("192.0.2.{}", si + 10),
                            status: st.into(),
                            latency_ms: (st != "down")
                                .then(|| rng.random_range(30.0..90.0_f64).round()),
                            loss_pct: (st != "down").then_some(if st == "degraded" {
                                4.5
                            } else {
                                0.1
                            }),
                        });
                    }
                    links
                }
                _ => Vec::new(),
            };
            let detail = DeviceDetail {
                device: Device {
                    id: next_id,
                    name: device_name(ctx, site.code, code, n),
                    device_type: kind.as_str().into(),
                    vendor: vendor.into(),
                    model: model.into(),
                    ip,
                    site_id: site_id(ctx, si),
                    site: site.code.into(),
                    status: status.as_str().into(),
                    firmware: firmware.into(),
                    serial: format!("{}{:08X}", &vendor[..2].to_uppercase(), rng.random::<u32>()),
                    last_seen_at,
                    uptime_seconds: if status == LinkStatus::Down {
                        0
                    } else {
                        rng.random_range(3600..90 * 86400)
                    },
                },
                wan_links,
                interfaces: interfaces(&mut rng, kind, status.as_str()),
            };
            next_id += 1;
            out.push(detail);
        }
    }
    out
}

/// The inter-site tunnels between the firewalls, deterministic.
pub fn tunnels(ctx: &SeedCtx, devices: &[DeviceDetail]) -> Vec<Tunnel> {
    let rng = &mut ctx.rng("network/tunnels");
    let fws: Vec<&Device> = devices
        .iter()
        .map(|d| &d.device)
        .filter(|d| d.device_type == "firewall")
        .collect();
    let end = |d: &Device| TunnelEnd {
        site_id: d.site_id,
        site: d.site.clone(),
        device_id: d.id,
        device: d.name.clone(),
    };
    // Hub and spoke from the first site, plus one spoke-to-spoke tunnel.
    let mut pairs: Vec<(usize, usize)> = (1..fws.len()).map(|i| (0, i)).collect();
    if fws.len() > 2 {
        pairs.push((1, 2));
    }
    pairs
        .into_iter()
        .enumerate()
        .map(|(i, (a, b))| {
            let status = match i {
                1 => "down",
                2 => "degraded",
                _ => "up",
            };
            let changed = ctx.now - Duration::minutes(rng.random_range(30..20 * 24 * 60));
            Tunnel {
                id: ctx.tenant.id_base + 1 + i as i64,
                name: format!("{}-{}", fws[a].site, fws[b].site),
                status: status.into(),
                protocol: "IPsec IKEv2".into(),
                local: end(fws[a]),
                remote: end(fws[b]),
                established_at: (status != "down").then_some(changed),
                last_change_at: changed,
                latency_ms: (status != "down").then(|| rng.random_range(8.0..40.0_f64).round()),
                bytes_in_24h: if status == "down" {
                    0
                } else {
                    rng.random_range(1_000_000_000..60_000_000_000)
                },
                bytes_out_24h: if status == "down" {
                    0
                } else {
                    rng.random_range(1_000_000_000..40_000_000_000)
                },
            }
        })
        .collect()
}

fn metrics(ctx: &SeedCtx, devices: &[DeviceDetail], rng: &mut StdRng) -> Vec<Record> {
    let end = ctx
        .now
        .duration_trunc(Duration::hours(1))
        .unwrap_or(ctx.now);
    let hours = i64::from(ctx.days) * 24;
    let mut out = Vec::with_capacity(devices.len() * hours as usize);
    for d in devices {
        let base_cpu: f64 = rng.random_range(5.0..35.0);
        let base_bps: f64 = match d.device.device_type.as_str() {
            "firewall" | "router" => 120_000_000.0,
            "switch" => 60_000_000.0,
            _ => 8_000_000.0,
        };
        for h in 0..hours {
            let at: DateTime<Utc> = end - Duration::hours(hours - h);
            // Down devices stop reporting when they went down.
            if at > d.device.last_seen_at {
                continue;
            }
            let hour_of_day = (at.timestamp() / 3600) % 24;
            let busy = if (7..19).contains(&hour_of_day) {
                1.0
            } else {
                0.25
            };
            let spike = d.device.status == "degraded" && h > hours - 12;
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
            out.push(Record {
                partition: d.device.id.to_string(),
                ts: at.timestamp_millis(),
                id: format!("{}-{}", d.device.id, at.timestamp()),
                body: to_value(&point),
            });
        }
    }
    out
}

fn alerts(
    ctx: &SeedCtx,
    devices: &[DeviceDetail],
    tunnels: &[Tunnel],
    rng: &mut StdRng,
) -> Vec<Record> {
    let mut out = Vec::new();
    let mut n = 1000;
    let mut push = |kind: &str,
                    sev: &str,
                    title: String,
                    d: &Device,
                    opened: DateTime<Utc>,
                    resolved: Option<DateTime<Utc>>| {
        n += 1;
        let alert = NetworkAlert {
            id: format!("net-{n}"),
            kind: kind.into(),
            severity: sev.into(),
            status: if resolved.is_some() {
                "resolved"
            } else {
                "open"
            }
            .into(),
            title,
            device_id: d.id,
            device: d.name.clone(),
            site_id: d.site_id,
            opened_at: opened,
            resolved_at: resolved,
        };
        out.push(Record {
            partition: "all".into(),
            ts: opened.timestamp_millis(),
            id: alert.id.clone(),
            body: to_value(&alert),
        });
    };
    // Open alerts match the current state.
    for d in devices {
        let dev = &d.device;
        if dev.status == "down" {
            push(
                "device_down",
                "high",
                format!("{} ne répond plus", dev.name),
                dev,
                dev.last_seen_at,
                None,
            );
        }
        if dev.status == "degraded" {
            push(
                "interface_errors",
                "medium",
                format!("Erreurs d'interface sur {}", dev.name),
                dev,
                ctx.now - Duration::hours(11),
                None,
            );
        }
        for l in &d.wan_links {
            if l.status == "down" {
                push(
                    "wan_down",
                    "critical",
                    format!("Lien {} ({}) coupé sur {}", l.name, l.provider, dev.name),
                    dev,
                    ctx.now - Duration::hours(3),
                    None,
                );
            } else if l.status == "degraded" {
                push(
                    "high_latency",
                    "low",
                    format!("Pertes sur le lien {} de {}", l.name, dev.name),
                    dev,
                    ctx.now - Duration::minutes(95),
                    None,
                );
            }
        }
    }
    for t in tunnels.iter().filter(|t| t.status == "down") {
        if let Some(d) = devices.iter().find(|d| d.device.id == t.local.device_id) {
            push(
                "tunnel_down",
                "high",
                format!("Tunnel {} tombé", t.name),
                &d.device,
                t.last_change_at,
                None,
            );
        }
    }
    // History: resolved alerts spread over the period, a few per day.
    let kinds = [
        ("high_cpu", "medium"),
        ("device_down", "high"),
        ("wan_down", "critical"),
        ("interface_errors", "low"),
        ("high_latency", "info"),
        ("tunnel_down", "high"),
    ];
    let count = (ctx.days as usize * (devices.len() / 6).max(1)).max(10);
    let start = ctx.start();
    for _ in 0..count {
        let d = &devices[rng.random_range(0..devices.len())].device;
        let (kind, sev) = kinds[rng.random_range(0..kinds.len())];
        let opened =
            start + Duration::seconds(rng.random_range(0..i64::from(ctx.days) * 86400 - 7200));
        let resolved = opened + Duration::minutes(rng.random_range(2..240));
        if resolved >= ctx.now {
            continue;
        }
        push(
            kind,
            sev,
            format!("{kind} sur {}", d.name),
            d,
            opened,
            Some(resolved),
        );
    }
    out
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

fn padded_ip(ip: &str) -> String {
    ip.split('.')
        .map(|o| format!("{:0>3}", o))
        .collect::<Vec<_>>()
        .join(".")
}

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
        let ports = match d.device.device_type.as_str() {
            "firewall" => vec![443, 22, 161, 8443],
            "router" => vec![22, 161, 53, 80],
            "switch" => vec![22, 161, 80],
            _ => vec![22, 443],
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
                state: state.as_str().into(),
                service: Some(service.into()),
                first_seen_at: first,
                last_seen_at: ctx.now - Duration::minutes(rng.random_range(5..720)),
            };
            out.push((
                format!("{}:{:05}/{}", padded_ip(&ip), port, proto),
                to_value(&p),
            ));
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
        stores
            .series_writes
            .append(tenant, ALERTS, alerts(ctx, &devices, &tunnels, &mut rng))
            .await?;
        stores
            .series_writes
            .append(tenant, METRICS, metrics(ctx, &devices, &mut rng))
            .await?;
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn padded_addresses_sort_numerically() {
        assert!(padded_ip("10.10.2.9") < padded_ip("10.10.10.1"));
        assert_eq!(padded_ip("10.1.0.1"), "010.001.000.001");
    }
}
