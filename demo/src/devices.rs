//! The network devices and the tunnels between the firewalls of a tenant's sites: a pure
//! function of the seed context, so the network module (which serves them) and the firewall
//! module (whose logs name them) generate the same roster, the way they share machines.

use chrono::Duration;
use rand::Rng;
use rand::rngs::StdRng;

use super::SeedCtx;
use netops_domain::network::*;

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

pub fn site_id(ctx: &SeedCtx, index: usize) -> i64 {
    ctx.tenant.id_base + index as i64 + 1
}

fn interfaces(rng: &mut StdRng, kind: DeviceType, status: LinkStatus) -> Vec<Interface> {
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
            let st = if status == LinkStatus::Down {
                LinkStatus::Down
            } else if i == 1 && status == LinkStatus::Degraded {
                LinkStatus::Degraded
            } else if kind == DeviceType::Switch && rng.random_bool(0.25) {
                LinkStatus::Down
            } else {
                LinkStatus::Up
            };
            let active = st != LinkStatus::Down;
            Interface {
                name,
                status: st,
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
                errors_24h: if st == LinkStatus::Degraded {
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
                        medium: WanMedium::Fiber,
                        role: WanRole::Primary,
                        bandwidth_down_mbps: 1000,
                        bandwidth_up_mbps: if kind == DeviceType::Firewall {
                            1000
                        } else {
                            500
                        },
                        public_ip: format!("198.51.100.{}", (si * 8 + k) % 250 + 1),
                        status: LinkStatus::Up,
                        latency_ms: Some(rng.random_range(3.0..12.0_f64).round()),
                        loss_pct: Some(0.0),
                    }];
                    if kind == DeviceType::Router {
                        // The backup link of the first site is down, the second site's degraded.
                        let st = match si {
                            0 => LinkStatus::Down,
                            1 => LinkStatus::Degraded,
                            _ => LinkStatus::Up,
                        };
                        links.push(WanLink {
                            name: "lte1".into(),
                            provider: PROVIDERS[(si + 2) % PROVIDERS.len()].into(),
                            medium: WanMedium::Lte,
                            role: WanRole::Backup,
                            bandwidth_down_mbps: 150,
                            bandwidth_up_mbps: 50,
                            public_ip: format!("192.0.2.{}", si + 10),
                            status: st,
                            latency_ms: (st != LinkStatus::Down)
                                .then(|| rng.random_range(30.0..90.0_f64).round()),
                            loss_pct: (st != LinkStatus::Down)
                                .then_some(if st == LinkStatus::Degraded { 4.5 } else { 0.1 }),
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
                    device_type: kind,
                    vendor: vendor.into(),
                    model: model.into(),
                    ip,
                    site_id: site_id(ctx, si),
                    site: site.code.into(),
                    status,
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
                interfaces: interfaces(&mut rng, kind, status),
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
        .filter(|d| d.device_type == DeviceType::Firewall)
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
                1 => LinkStatus::Down,
                2 => LinkStatus::Degraded,
                _ => LinkStatus::Up,
            };
            let changed = ctx.now - Duration::minutes(rng.random_range(30..20 * 24 * 60));
            Tunnel {
                id: ctx.tenant.id_base + 1 + i as i64,
                name: format!("{}-{}", fws[a].site, fws[b].site),
                status,
                protocol: "IPsec IKEv2".into(),
                local: end(fws[a]),
                remote: end(fws[b]),
                established_at: (status != LinkStatus::Down).then_some(changed),
                last_change_at: changed,
                latency_ms: (status != LinkStatus::Down)
                    .then(|| rng.random_range(8.0..40.0_f64).round()),
                bytes_in_24h: if status == LinkStatus::Down {
                    0
                } else {
                    rng.random_range(1_000_000_000..60_000_000_000)
                },
                bytes_out_24h: if status == LinkStatus::Down {
                    0
                } else {
                    rng.random_range(1_000_000_000..40_000_000_000)
                },
            }
        })
        .collect()
}
