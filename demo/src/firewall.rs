//! Firewall demo data. Events are drafted, written as raw log lines in each device's own
//! format, then read back by the real parsers (the collection path), enriched with the
//! matching directory events, and counted into the report route's day rows ([`netops_firewall::report`]); the
//! flows the devices export go into the traffic route's day rows ([`netops_firewall::traffic`]).
//! Devices are the firewalls and routers of the network roster.

use std::collections::{BTreeSet, HashMap, HashSet};

use crate::{MachineKind, MachineSeed, Produced, SeedCtx, hours_of};
use chrono::{DateTime, Duration, DurationRound, Utc};
use netops_domain::network::{DeviceDetail, DeviceType};
use netops_shared::module::BoxFuture;
use netops_shared::store::{Record, StoreResult};
use rand::Rng;
use rand::rngs::StdRng;
use serde_json::{Value, json};

use netops_firewall::collect::{event_record, rare_copy};
use netops_firewall::correlate::DirectoryIndex;
use netops_firewall::model::*;
use netops_firewall::parse::{Action, Category, Format, parse_as};
use netops_firewall::report::Counts;
use netops_firewall::traffic::{Export, Exports};

fn to_value<T: serde::Serialize>(v: &T) -> Value {
    serde_json::to_value(v).unwrap_or(Value::Null)
}

/// Log format of a vendor.
pub fn vendor_format(vendor: &str) -> Format {
    match vendor {
        "Fortinet" => Format::Fortigate,
        "Palo Alto Networks" => Format::Paloalto,
        "Check Point" => Format::Cef,
        "Juniper Networks" => Format::Leef,
        _ => Format::Kv,
    }
}

/// An event before it is written as a log line.
#[derive(Debug, Clone)]
pub struct Draft {
    pub at: DateTime<Utc>,
    pub category: Category,
    pub action: Action,
    pub account: Option<String>,
    pub src_ip: Option<String>,
    pub src_port: Option<u16>,
    pub dst_ip: Option<String>,
    pub dst_port: Option<u16>,
    pub service: Option<String>,
    pub protocol: Option<String>,
    pub rule: Option<String>,
    pub message: String,
}

fn opt<T: ToString>(v: &Option<T>) -> String {
    v.as_ref().map(|x| x.to_string()).unwrap_or_default()
}

fn proto_num(p: &Option<String>) -> &'static str {
    match p.as_deref() {
        Some("udp") => "17",
        Some("icmp") => "1",
        _ => "6",
    }
}

/// Writes a draft as the device would log it.
pub fn render(format: Format, host: &str, d: &Draft) -> String {
    use Action as A;
    use Category as C;
    let ts = d.at.timestamp();
    let syslog_time = d.at.format("%b %e %H:%M:%S").to_string();
    match format {
        Format::Fortigate => {
            let (kind, sub, action, status) = match (d.category, d.action) {
                (C::Allow, _) => ("traffic", "forward", "accept", ""),
                (C::Deny, _) => ("traffic", "forward", "deny", ""),
                (C::Ids, A::Blocked) => ("utm", "ips", "dropped", ""),
                (C::Ids, _) => ("utm", "ips", "detected", ""),
                (C::Vpn, A::Failure) => ("event", "vpn", "ssl-login-fail", "failure"),
                (C::Vpn, _) => ("event", "vpn", "ssl-login", "success"),
                (C::Tunnel, A::Down) => ("event", "vpn", "tunnel-down", ""),
                (C::Tunnel, _) => ("event", "vpn", "tunnel-up", ""),
                (C::Auth, A::Failure) => ("event", "user", "auth-logon-fail", "failure"),
                (C::Auth, _) => ("event", "user", "auth-logon", "success"),
                (C::Admin, _) => ("event", "system", "edit", "success"),
                (C::System, _) => ("event", "system", "perf-stats", ""),
                (C::Other, _) => ("event", "wad", "session-info", ""),
            };
            let mut line = format!(
                "<189>date={} time={} devname=\"{host}\" devid=\"FG100FTK2000{:04}\" eventtime={}000000000 tz=\"+0000\" logid=\"0000000013\" type=\"{kind}\" subtype=\"{sub}\" level=\"notice\" vd=\"root\"",
                d.at.format("%Y-%m-%d"),
                d.at.format("%H:%M:%S"),
                host.len() * 97 % 10_000,
                ts
            );
            let (src_key, dst_key) = if d.category == C::Vpn {
                ("remip", "locip")
            } else {
                ("srcip", "dstip")
            };
            if let Some(s) = &d.src_ip {
                line.push_str(&format!(" {src_key}={s}"));
            }
            if let Some(p) = d.src_port {
                line.push_str(&format!(" srcport={p}"));
            }
            if let Some(s) = &d.dst_ip {
                line.push_str(&format!(" {dst_key}={s}"));
            }
            if let Some(p) = d.dst_port {
                line.push_str(&format!(" dstport={p}"));
            }
            line.push_str(&format!(" action=\"{action}\""));
            if !status.is_empty() {
                line.push_str(&format!(" status=\"{status}\""));
            }
            if let Some(u) = &d.account {
                line.push_str(&format!(" user=\"{u}\""));
            }
            if let Some(s) = &d.service {
                line.push_str(&format!(" service=\"{}\"", s.to_uppercase()));
            }
            if d.protocol.is_some() {
                line.push_str(&format!(" proto={}", proto_num(&d.protocol)));
            }
            if let Some(r) = &d.rule {
                let key = if d.category == C::Tunnel {
                    "vpntunnel"
                } else {
                    "policyid"
                };
                line.push_str(&format!(" {key}=\"{r}\""));
            }
            line.push_str(&format!(" msg=\"{}\"", d.message.replace('"', "\\\"")));
            line
        }
        Format::Paloalto => {
            let when = d.at.format("%Y/%m/%d %H:%M:%S").to_string();
            let head = format!(
                "<14>{syslog_time} {host} 1,{when},0128012{:05}",
                host.len() * 131 % 100_000
            );
            let user = d
                .account
                .as_ref()
                .map(|u| format!("acme\\{u}"))
                .unwrap_or_default();
            let csv = |s: &str| {
                if s.contains(',') || s.contains('"') {
                    format!("\"{}\"", s.replace('"', "\"\""))
                } else {
                    s.to_owned()
                }
            };
            match d.category {
                C::Allow | C::Deny | C::Ids => {
                    let (kind, sub, action) = match (d.category, d.action) {
                        (C::Allow, _) => ("TRAFFIC", "end", "allow"),
                        (C::Deny, _) => ("TRAFFIC", "drop", "deny"),
                        (_, A::Blocked) => ("THREAT", "vulnerability", "reset-both"),
                        _ => ("THREAT", "spyware", "alert"),
                    };
                    let mut line = format!(
                        "{head},{kind},{sub},2561,{when},{},{},0.0.0.0,0.0.0.0,{},{},,{},vsys1,trust,untrust,ethernet1/2,ethernet1/1,Forwarding,{when},{},1,{},{},0,0,0x0,{},{action}",
                        opt(&d.src_ip),
                        opt(&d.dst_ip),
                        csv(&opt(&d.rule)),
                        csv(&user),
                        csv(&opt(&d.service)),
                        ts % 1_000_000,
                        opt(&d.src_port),
                        opt(&d.dst_port),
                        d.protocol.clone().unwrap_or_else(|| "tcp".into()),
                    );
                    if kind == "THREAT" {
                        line.push_str(&format!(",,{},vulnerability,high", csv(&d.message)));
                    } else {
                        line.push_str(",5120,1024,4096");
                    }
                    line
                }
                C::Admin => format!(
                    "{head},CONFIG,0,0,{when},{},vsys1,edit,{},Web,Succeeded,{}",
                    opt(&d.src_ip),
                    opt(&d.account),
                    csv(&d.message)
                ),
                _ => {
                    let (sub, event) = match (d.category, d.action) {
                        (C::Vpn, A::Failure) => ("globalprotect", "globalprotectgateway-auth-fail"),
                        (C::Vpn, _) => ("globalprotect", "globalprotectgateway-auth-succ"),
                        (C::Auth, A::Failure) => ("auth", "auth-fail"),
                        (C::Auth, _) => ("auth", "auth-success"),
                        (C::Tunnel, A::Down) => ("vpn", "ike-nego-p2-delete"),
                        (C::Tunnel, _) => ("vpn", "ike-nego-p2-succ"),
                        (C::System, _) => ("general", "general"),
                        _ => ("dhcp", "dhcp-lease"),
                    };
                    let mut desc = d.message.clone();
                    if let Some(ip) = &d.src_ip {
                        desc.push_str(&format!(" Login from: {ip},"));
                    }
                    if let Some(u) = &d.account {
                        desc.push_str(&format!(" User name: {u},"));
                    }
                    format!(
                        "{head},SYSTEM,{sub},0,{when},vsys1,{event},{},0,0,general,medium,{}",
                        csv(&opt(&d.rule)),
                        csv(&desc)
                    )
                }
            }
        }
        Format::Cef => {
            let esc = |s: &str| s.replace('\\', "\\\\").replace('=', "\\=");
            let (cat, act, outcome) = match (d.category, d.action) {
                (C::Allow, _) => ("Firewall", "Accept", ""),
                (C::Deny, _) => ("Firewall", "Drop", ""),
                (C::Ids, A::Blocked) => ("IPS", "Prevent", ""),
                (C::Ids, _) => ("IPS", "Detect", ""),
                (C::Vpn, A::Failure) => ("VPN", "Failed Log In", "Failure"),
                (C::Vpn, _) => ("VPN", "Log In", "Success"),
                (C::Auth, A::Failure) => ("Authentication", "Failed Log In", "Failure"),
                (C::Auth, _) => ("Authentication", "Log In", "Success"),
                (C::Tunnel, A::Down) => ("Site-to-Site", "Tunnel Down", ""),
                (C::Tunnel, _) => ("Site-to-Site", "Key Install", ""),
                (C::Admin, _) => ("Audit", "Install Policy", ""),
                (C::System, _) => ("System", "Log", ""),
                (C::Other, _) => ("Anti-Spam", "Log", ""),
            };
            let mut ext = format!("act={act} cat={cat} rt={}000 dvchost={host}", ts);
            if !outcome.is_empty() {
                ext.push_str(&format!(" outcome={outcome}"));
            }
            for (k, v) in [
                ("src", opt(&d.src_ip)),
                ("spt", opt(&d.src_port)),
                ("dst", opt(&d.dst_ip)),
                ("dpt", opt(&d.dst_port)),
                ("suser", opt(&d.account)),
                ("app", opt(&d.service)),
            ] {
                if !v.is_empty() {
                    ext.push_str(&format!(" {k}={}", esc(&v)));
                }
            }
            if d.protocol.is_some() {
                ext.push_str(&format!(" proto={}", proto_num(&d.protocol)));
            }
            if let Some(r) = &d.rule {
                ext.push_str(&format!(" cs1Label=Rule cs1={}", esc(r)));
            }
            ext.push_str(&format!(" msg={}", esc(&d.message)));
            format!(
                "<134>{syslog_time} {host} CEF:0|Check Point|VPN-1 & FireWall-1|R81.20|{}|{}|5|{ext}",
                cat.to_lowercase(),
                act.replace('|', "\\|")
            )
        }
        Format::Leef => {
            let (cat, action) = match (d.category, d.action) {
                (C::Allow, _) => ("traffic", "permit"),
                (C::Deny, _) => ("traffic", "deny"),
                (C::Ids, A::Blocked) => ("idp", "drop"),
                (C::Ids, _) => ("idp", "alert"),
                (C::Vpn, A::Failure) => ("remote-access", "failure"),
                (C::Vpn, _) => ("remote-access", "success"),
                (C::Auth, A::Failure) => ("auth", "failure"),
                (C::Auth, _) => ("auth", "success"),
                (C::Tunnel, A::Down) => ("ipsec", "down"),
                (C::Tunnel, _) => ("ipsec", "up"),
                (C::Admin, _) => ("config", "commit"),
                (C::System, _) => ("system", "info"),
                (C::Other, _) => ("dhcp", "info"),
            };
            let clean = |s: &str| s.replace(['^', '\t'], " ");
            let mut attrs = vec![
                format!("cat={cat}"),
                format!("action={action}"),
                format!("devName={host}"),
                format!("devTime={}000", ts),
            ];
            for (k, v) in [
                ("src", opt(&d.src_ip)),
                ("srcPort", opt(&d.src_port)),
                ("dst", opt(&d.dst_ip)),
                ("dstPort", opt(&d.dst_port)),
                ("usrName", opt(&d.account)),
                ("service", opt(&d.service)),
                ("policy", opt(&d.rule)),
            ] {
                if !v.is_empty() {
                    attrs.push(format!("{k}={}", clean(&v)));
                }
            }
            if d.protocol.is_some() {
                attrs.push(format!("proto={}", proto_num(&d.protocol)));
            }
            attrs.push(format!("msg={}", clean(&d.message)));
            format!(
                "<134>{syslog_time} {host} LEEF:2.0|Juniper|SRX|23.4|{}|^|{}",
                cat.to_uppercase(),
                attrs.join("^")
            )
        }
        Format::Kv => {
            let (cat, action) = match (d.category, d.action) {
                (C::Allow, _) => ("firewall", "accept"),
                (C::Deny, _) => ("firewall", "drop"),
                (C::Ids, A::Blocked) => ("ids", "drop"),
                (C::Ids, _) => ("ids", "alert"),
                (C::Vpn, A::Failure) => ("vpn", "failure"),
                (C::Vpn, _) => ("vpn", "success"),
                (C::Auth, A::Failure) => ("auth", "failure"),
                (C::Auth, _) => ("auth", "success"),
                (C::Tunnel, A::Down) => ("ipsec", "down"),
                (C::Tunnel, _) => ("ipsec", "up"),
                (C::Admin, _) => ("config", "commit"),
                (C::System, _) => ("system", "info"),
                (C::Other, _) => ("dhcp", "info"),
            };
            let mut line = format!(
                "<30>{syslog_time} {host} category={cat} action={action} time={}",
                d.at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
            );
            for (k, v) in [
                ("user", opt(&d.account)),
                ("src", opt(&d.src_ip)),
                ("sport", opt(&d.src_port)),
                ("dst", opt(&d.dst_ip)),
                ("dport", opt(&d.dst_port)),
                ("service", opt(&d.service)),
                ("proto", d.protocol.clone().unwrap_or_default()),
                ("rule", opt(&d.rule)),
            ] {
                if !v.is_empty() {
                    line.push_str(&format!(" {k}={v}"));
                }
            }
            line.push_str(&format!(" msg=\"{}\"", d.message.replace('"', "\\\"")));
            line
        }
    }
}

/// Public addresses of well-known services (destinations of allowed traffic).
const DESTINATIONS: &[(&str, u16, &str)] = &[
    ("13.107.42.14", 443, "https"),
    ("52.97.146.162", 443, "https"),
    ("142.250.179.110", 443, "https"),
    ("151.101.1.69", 443, "https"),
    ("104.16.132.229", 443, "https"),
    ("1.1.1.1", 53, "dns"),
    ("8.8.8.8", 53, "dns"),
    ("162.159.200.123", 123, "ntp"),
    ("20.190.159.2", 443, "https"),
    ("17.253.144.10", 80, "http"),
];
/// Hostile addresses (documentation ranges): scanners, password sprayers, command servers.
const ATTACKERS: &[&str] = &[
    "203.0.113.7",
    "203.0.113.23",
    "203.0.113.45",
    "203.0.113.81",
    "203.0.113.102",
    "203.0.113.166",
    "203.0.113.201",
];
const C2: &[(&str, &str, &str)] = &[
    (
        "198.51.100.66",
        "ET MALWARE Cobalt Strike Beacon Observed",
        "abuse.ch Feodo Tracker",
    ),
    (
        "198.51.100.77",
        "ET TROJAN QakBot CnC Checkin",
        "abuse.ch ThreatFox",
    ),
    (
        "198.51.100.99",
        "ET MALWARE AsyncRAT Checkin",
        "Emerging Threats",
    ),
    (
        "198.51.100.123",
        "ET TROJAN IcedID CnC Activity",
        "abuse.ch Feodo Tracker",
    ),
];
/// Residential addresses of remote workers (documentation range).
fn home_ip(rng: &mut StdRng) -> String {
    format!("192.0.2.{}", rng.random_range(10..250))
}

const SIGNATURES: &[&str] = &[
    "ET SCAN Suspicious inbound to MSSQL port 1433",
    "ET EXPLOIT Possible ETERNALBLUE MS17-010",
    "ET SCAN NMAP OS Detection Probe",
    "ET WEB_SERVER Possible SQL Injection Attempt",
    "ET POLICY RDP connection request from outside",
];

struct Ctx<'a> {
    ctx: &'a SeedCtx,
    devices: Vec<(FirewallDevice, Format)>,
    machines_by_site: HashMap<&'a str, Vec<&'a MachineSeed>>,
    tunnels: Vec<(i64, String)>,
    people: Vec<&'a str>,
    controller: String,
}

/// The tenant's firewalls and gateways (from the network roster) with their formats.
pub fn devices(ctx: &SeedCtx, net: &[DeviceDetail]) -> Vec<(FirewallDevice, Format)> {
    let mut rng = ctx.rng("firewall/devices");
    let edge: Vec<&DeviceDetail> = net
        .iter()
        .filter(|d| {
            matches!(
                d.device.device_type,
                DeviceType::Firewall | DeviceType::Router
            )
        })
        .collect();
    let count = edge.len();
    edge.into_iter()
        .enumerate()
        .map(|(i, d)| {
            let dev = &d.device;
            let format = vendor_format(&dev.vendor);
            let relay = ctx
                .machines
                .iter()
                .find(|m| m.site.code == dev.site && m.kind == MachineKind::Server)
                .or_else(|| ctx.machines.iter().find(|m| m.site.code == dev.site))
                .map(|m| m.hostname.clone())
                .unwrap_or_default();
            // The last device's syslog has gone quiet: its collection state shows it.
            let stale = i + 1 == count;
            let last = if stale {
                ctx.now - Duration::hours(3) - Duration::minutes(rng.random_range(0..50))
            } else {
                ctx.now - Duration::seconds(rng.random_range(20..280))
            };
            let fw = FirewallDevice {
                id: dev.id,
                name: dev.name.clone(),
                device_type: if dev.device_type == DeviceType::Firewall {
                    FirewallDeviceType::Firewall
                } else {
                    FirewallDeviceType::Gateway
                },
                vendor: dev.vendor.clone(),
                model: dev.model.clone(),
                firmware: dev.firmware.clone(),
                ip: dev.ip.clone(),
                site_id: dev.site_id,
                site: dev.site.clone(),
                relay_agent: relay,
                syslog: Channel {
                    format: format.as_str().into(),
                    status: if stale {
                        ChannelStatus::Stale
                    } else {
                        ChannelStatus::Active
                    },
                    last_received_at: Some(last),
                },
                flows: Channel {
                    format: if dev.device_type == DeviceType::Firewall {
                        "IPFIX"
                    } else {
                        "NetFlow v9"
                    }
                    .into(),
                    status: ChannelStatus::Active,
                    last_received_at: Some(ctx.now - Duration::seconds(rng.random_range(30..120))),
                },
            };
            (fw, format)
        })
        .collect()
}

fn draft(
    at: DateTime<Utc>,
    category: Category,
    action: Action,
    message: impl Into<String>,
) -> Draft {
    Draft {
        at,
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
        message: message.into(),
    }
}

impl Ctx<'_> {
    /// Ordinary events a device logs a day: more on busy sites.
    fn per_day(&self, dev: &FirewallDevice) -> usize {
        let at_site = self
            .machines_by_site
            .get(dev.site.as_str())
            .map_or(0, Vec::len);
        8 + at_site / 2
    }

    /// The directory events of a login drafted on a directory account (most are seen by the
    /// controller; some failures lock the account out).
    fn log_on(&self, rng: &mut StdRng, d: &Draft, account: &str, out: &mut Vec<AdEvent>) {
        if rng.random_bool(0.8) {
            let lag = Duration::seconds(rng.random_range(-3..12));
            let id = if d.action == Action::Failure {
                [4625, 4771, 4776][rng.random_range(0..3)]
            } else {
                [4624, 4768][rng.random_range(0..2)]
            };
            out.push(dir_event(
                self,
                account,
                d.at + lag,
                id,
                Some(self.devices[0].0.ip.clone()),
            ));
            if d.action == Action::Failure && rng.random_bool(0.1) {
                out.push(dir_event(
                    self,
                    account,
                    d.at + lag + Duration::seconds(2),
                    4740,
                    None,
                ));
            }
        }
    }

    /// The flows a device exports for the hour starting at `at`: two senders of its site in
    /// a busy hour, one in an `odd` quiet hour (every other one).
    fn export_hour(
        &self,
        rng: &mut StdRng,
        dev: &FirewallDevice,
        at: DateTime<Utc>,
        odd: bool,
        traffic: &mut Exports,
    ) {
        let Some(site_machines) = self
            .machines_by_site
            .get(dev.site.as_str())
            .filter(|m| !m.is_empty())
        else {
            return;
        };
        let busy = (7..19).contains(&((at.timestamp() / 3600) % 24));
        let pairs = if busy { 2 } else { usize::from(odd) };
        for _ in 0..pairs {
            let m = site_machines[rng.random_range(0..site_machines.len())];
            let (dst, _, _) = DESTINATIONS[rng.random_range(0..DESTINATIONS.len())];
            let bytes =
                rng.random_range(2_000_000.0..if busy { 900_000_000.0 } else { 60_000_000.0 });
            traffic.add(&Export {
                at,
                device_id: dev.id,
                protocol: &dev.flows.format,
                src_ip: &m.ip,
                src_host: Some(&m.hostname),
                dst_ip: dst,
                bytes: f64::round(bytes),
                packets: f64::round(bytes / 900.0),
                flows: rng.random_range(5..400) as f64,
            });
        }
    }

    /// One ordinary event of a device at `at`.
    /// Allowed or denied traffic only (the bulk of a firewall's log).
    fn bulk(&self, rng: &mut StdRng, dev: &FirewallDevice, at: DateTime<Utc>) -> Draft {
        let roll = rng.random_range(0..60);
        self.drafted(rng, dev, at, roll)
    }

    fn ordinary(&self, rng: &mut StdRng, dev: &FirewallDevice, at: DateTime<Utc>) -> Draft {
        let roll = rng.random_range(0..100);
        self.drafted(rng, dev, at, roll)
    }

    fn drafted(
        &self,
        rng: &mut StdRng,
        dev: &FirewallDevice,
        at: DateTime<Utc>,
        roll: u32,
    ) -> Draft {
        let site_machines = self
            .machines_by_site
            .get(dev.site.as_str())
            .cloned()
            .unwrap_or_default();
        let machine = (!site_machines.is_empty())
            .then(|| site_machines[rng.random_range(0..site_machines.len())]);
        let gateway = dev.device_type == FirewallDeviceType::Gateway;
        let sport = rng.random_range(49152..65535);
        match roll {
            0..=29 => {
                let (ip, port, service) = DESTINATIONS[rng.random_range(0..DESTINATIONS.len())];
                let mut d = draft(at, Category::Allow, Action::Allowed, "Connexion autorisée");
                d.src_ip = machine.map(|m| m.ip.clone());
                d.account = machine
                    .and_then(|m| m.user.clone())
                    .filter(|_| !gateway && rng.random_bool(0.5));
                d.src_port = Some(sport);
                d.dst_ip = Some(ip.into());
                d.dst_port = Some(port);
                d.service = Some(service.into());
                d.protocol = Some(
                    if port == 53 || port == 123 {
                        "udp"
                    } else {
                        "tcp"
                    }
                    .into(),
                );
                d.rule = Some("allow-internet".into());
                d
            }
            30..=59 => {
                let (port, service) = [
                    (23, "telnet"),
                    (445, "smb"),
                    (3389, "rdp"),
                    (22, "ssh"),
                    (1433, "mssql"),
                    (5900, "vnc"),
                ][rng.random_range(0..6)];
                let mut d = draft(
                    at,
                    Category::Deny,
                    Action::Blocked,
                    "Connexion refusée par la politique",
                );
                d.src_ip = Some(ATTACKERS[rng.random_range(0..ATTACKERS.len())].into());
                d.src_port = Some(sport);
                d.dst_ip = Some(dev.ip.clone());
                d.dst_port = Some(port);
                d.service = Some(service.into());
                d.protocol = Some("tcp".into());
                d.rule = Some("deny-inbound".into());
                d
            }
            60..=69 => {
                // Logins to the device: administrators inside, password guessing outside.
                let failure = rng.random_bool(0.6);
                let mut d = draft(
                    at,
                    Category::Auth,
                    if failure {
                        Action::Failure
                    } else {
                        Action::Success
                    },
                    "Connexion d'administration",
                );
                if failure && rng.random_bool(0.7) {
                    d.account = Some(
                        ["admin", "root", "administrateur", "test", "support"]
                            [rng.random_range(0..5)]
                        .into(),
                    );
                    d.src_ip = Some(ATTACKERS[rng.random_range(0..ATTACKERS.len())].into());
                    d.message = "Échec d'authentification".into();
                } else {
                    d.account = Some("administrateur".into());
                    d.src_ip = self
                        .ctx
                        .machines
                        .iter()
                        .find(|m| m.kind == MachineKind::Workstation)
                        .map(|m| m.ip.clone());
                }
                d.dst_ip = Some(dev.ip.clone());
                d.dst_port = Some(if gateway { 22 } else { 443 });
                d.service = Some(if gateway { "ssh" } else { "https" }.into());
                d.protocol = Some("tcp".into());
                d
            }
            70..=79 => {
                // Remote-access VPN: employees from home, sprayers from hostile addresses.
                let spray = rng.random_bool(0.35);
                let user = self.people[rng.random_range(0..self.people.len())].to_owned();
                let failure = spray || rng.random_bool(0.1);
                let mut d = draft(
                    at,
                    Category::Vpn,
                    if failure {
                        Action::Failure
                    } else {
                        Action::Success
                    },
                    if failure {
                        "Échec de connexion VPN"
                    } else {
                        "Connexion VPN établie"
                    },
                );
                d.account = Some(user);
                d.src_ip = Some(if spray {
                    ATTACKERS[rng.random_range(0..ATTACKERS.len())].into()
                } else {
                    home_ip(rng)
                });
                d.dst_ip = Some(dev.ip.clone());
                d.dst_port = Some(443);
                d.service = Some("sslvpn".into());
                d.protocol = Some("tcp".into());
                d
            }
            80..=85 => {
                let target = site_machines
                    .iter()
                    .find(|m| m.kind == MachineKind::Server)
                    .copied()
                    .or(machine);
                let blocked = rng.random_bool(0.6);
                let mut d = draft(
                    at,
                    Category::Ids,
                    if blocked {
                        Action::Blocked
                    } else {
                        Action::Detected
                    },
                    SIGNATURES[rng.random_range(0..SIGNATURES.len())],
                );
                d.src_ip = Some(ATTACKERS[rng.random_range(0..ATTACKERS.len())].into());
                d.src_port = Some(sport);
                d.dst_ip = target.map(|m| m.ip.clone());
                d.dst_port = Some([1433, 445, 3389, 80][rng.random_range(0..4)]);
                d.protocol = Some("tcp".into());
                d
            }
            86..=88 if !gateway && !self.tunnels.is_empty() => {
                let mine: Vec<&(i64, String)> = self
                    .tunnels
                    .iter()
                    .filter(|(id, _)| *id == dev.id)
                    .collect();
                let (_, name) = if mine.is_empty() {
                    &self.tunnels[0]
                } else {
                    mine[rng.random_range(0..mine.len())]
                };
                let up = rng.random_bool(0.5);
                let mut d = draft(
                    at,
                    Category::Tunnel,
                    if up { Action::Up } else { Action::Down },
                    if up {
                        format!("Tunnel {name} établi")
                    } else {
                        format!("Tunnel {name} tombé")
                    },
                );
                d.rule = Some(name.clone());
                d.protocol = Some("esp".into());
                d
            }
            89..=90 => {
                let mut d = draft(
                    at,
                    Category::Admin,
                    Action::Changed,
                    "Modification de la règle allow-internet",
                );
                d.account = Some("administrateur".into());
                d.src_ip = self
                    .ctx
                    .machines
                    .iter()
                    .find(|m| m.kind == MachineKind::Workstation)
                    .map(|m| m.ip.clone());
                d
            }
            91..=95 => draft(
                at,
                Category::System,
                Action::Info,
                [
                    "Utilisation CPU 23 %",
                    "Signatures IPS mises à jour",
                    "Sauvegarde de configuration effectuée",
                ][rng.random_range(0..3)],
            ),
            _ => {
                let mut d = draft(at, Category::Other, Action::Info, "Bail DHCP attribué");
                d.dst_ip = machine.map(|m| m.ip.clone());
                d
            }
        }
    }
}

/// A directory-controller event of `account` at `at`.
fn dir_event(
    ctx: &Ctx<'_>,
    account: &str,
    at: DateTime<Utc>,
    event_id: u32,
    ip: Option<String>,
) -> AdEvent {
    AdEvent {
        at,
        event_id,
        controller: ctx.controller.clone(),
        account: account.to_owned(),
        outcome: if matches!(event_id, 4624 | 4768) {
            Outcome::Success
        } else {
            Outcome::Failure
        },
        source_ip: ip,
        offset_seconds: 0,
    }
}

struct Campaign<'a> {
    machine: Option<&'a MachineSeed>,
    internal_ip: String,
    c2: (&'static str, &'static str, &'static str),
    days: Vec<DateTime<Utc>>,
    site: String,
}

/// Events per machine and day of bulk allowed/denied traffic (`NETOPS_SEED_FIREWALL_BULK`),
/// over the last [`BULK_DAYS`] days, for benchmark databases; 0 in the demo.
fn bulk_density() -> f64 {
    std::env::var("NETOPS_SEED_FIREWALL_BULK")
        .ok()
        .and_then(|v| v.parse::<f64>().ok())
        .filter(|v| v.is_finite() && *v >= 0.0)
        .unwrap_or(0.0)
}

const BULK_BATCH: usize = 50_000;

/// The bulk covers the window the events route reads (7 days at most), whatever the length
/// of the seed: 30 days of firewall data then hold 2 x BULK x machines events a day in their
/// last 7 days only.
const BULK_DAYS: i64 = 7;

/// The collection path: parse a line, correlate, aggregate.
#[derive(Default)]
struct Collector {
    seq: u64,
    skipped: usize,
    counts: Counts,
}

impl Collector {
    fn collect(
        &mut self,
        dev: &FirewallDevice,
        format: Format,
        d: &Draft,
        index: &DirectoryIndex,
    ) -> Option<Record> {
        let line = render(format, &dev.name, d);
        let p = match parse_as(format, &line, d.at + Duration::seconds(2)) {
            Ok(p) => p,
            Err(e) => {
                self.skipped += 1;
                tracing::warn!(error = %e, format = format.as_str(), "unparsed demo line");
                return None;
            }
        };
        self.seq += 1;
        let seq = self.seq;
        let ad_events = p
            .account
            .as_deref()
            .map(|a| index.matches(a, p.at))
            .unwrap_or_default();
        self.counts.add(dev.id, &p);
        let id = format!("fw-{}-{}-{seq:09}", p.at.timestamp_millis(), dev.id);
        match event_record(dev, p, id, ad_events) {
            Ok(r) => Some(r),
            Err(e) => {
                self.skipped += 1;
                tracing::warn!(error = %e, "unstored demo event");
                None
            }
        }
    }
}

/// The devices, sites and accounts the events are drawn from.
fn context(ctx: &SeedCtx) -> Ctx<'_> {
    let net = crate::devices::devices(ctx);
    let devices = devices(ctx, &net);
    let tunnels: Vec<(i64, String)> = crate::devices::tunnels(ctx, &net)
        .into_iter()
        .map(|t| (t.local.device_id, t.name))
        .collect();
    let mut machines_by_site: HashMap<&str, Vec<&MachineSeed>> = HashMap::new();
    for m in &ctx.machines {
        machines_by_site.entry(m.site.code).or_default().push(m);
    }
    Ctx {
        ctx,
        machines_by_site,
        tunnels,
        people: ctx.people().map(|a| a.login.as_str()).collect(),
        controller: ctx
            .machines
            .iter()
            .find(|m| m.kind == MachineKind::Server)
            .map(|m| m.hostname.clone())
            .unwrap_or_default(),
        devices,
    }
}

pub fn seed(ctx: &SeedCtx) -> BoxFuture<'_, StoreResult<()>> {
    Box::pin(async move {
        let tenant = ctx.tenant.id;
        let mut rng = ctx.rng("firewall");
        let c = context(ctx);

        // Drafts per device: ordinary traffic over the whole history, denser on busy sites.
        let start = ctx.start();
        let mut drafts: Vec<(usize, Draft)> = Vec::new();
        for (i, (dev, _)) in c.devices.iter().enumerate() {
            let total = c.per_day(dev) * ctx.days as usize;
            let last = dev.syslog.last_received_at.unwrap_or(ctx.now);
            let span = (last - start).num_seconds().max(1);
            for _ in 0..total {
                let at = start + Duration::seconds(rng.random_range(0..span));
                drafts.push((i, c.ordinary(&mut rng, dev, at)));
            }
            // The last line received, so that collection shows its true last time.
            drafts.push((
                i,
                draft(
                    last,
                    Category::System,
                    Action::Info,
                    "Statistiques de session",
                ),
            ));
        }
        // Every category and action at least once in the last 24 hours, on the first firewall.
        let first_fw = c
            .devices
            .iter()
            .position(|(d, _)| d.device_type == FirewallDeviceType::Firewall)
            .unwrap_or(0);
        for (k, (cat, act)) in [
            (Category::Auth, Action::Success),
            (Category::Auth, Action::Failure),
            (Category::Vpn, Action::Success),
            (Category::Vpn, Action::Failure),
            (Category::Tunnel, Action::Up),
            (Category::Tunnel, Action::Down),
            (Category::Ids, Action::Detected),
            (Category::Ids, Action::Blocked),
            (Category::Deny, Action::Blocked),
            (Category::Allow, Action::Allowed),
            (Category::Admin, Action::Changed),
            (Category::System, Action::Info),
            (Category::Other, Action::Info),
        ]
        .into_iter()
        .enumerate()
        {
            let at = ctx.now - Duration::minutes(30 + 45 * k as i64);
            let mut d = draft(at, cat, act, format!("{} {}", cat.as_str(), act.as_str()));
            if matches!(cat, Category::Auth | Category::Vpn) {
                d.account = c.people.first().map(|p| (*p).to_owned());
                d.src_ip = Some(home_ip(&mut rng));
            }
            if cat == Category::Tunnel {
                d.rule = c.tunnels.first().map(|t| t.1.clone());
            }
            drafts.push((first_fw, d));
        }

        // Threat campaigns: an internal device talking to a command server for a few days.
        let mut campaigns: Vec<Campaign<'_>> = Vec::new();
        let n_campaigns = (ctx.days as usize / 5).max(3);
        let today = ctx.now.duration_trunc(Duration::days(1)).unwrap_or(ctx.now);
        for k in 0..n_campaigns {
            let m = &ctx.machines[rng.random_range(0..ctx.machines.len())];
            // One device in three has no agent: identified by its DHCP lease or address only.
            let unmanaged = k % 3 == 2;
            let internal_ip = if unmanaged {
                format!("10.{}.50.{}", m.site.subnet, 20 + k)
            } else {
                m.ip.clone()
            };
            let first_day = if k == 0 {
                1
            } else {
                rng.random_range(1..ctx.days.max(2) as i64)
            };
            let len = rng.random_range(1..=3).min(first_day + 1);
            let days = (0..len)
                .map(|j| today - Duration::days(first_day - j))
                .collect::<Vec<_>>();
            campaigns.push(Campaign {
                machine: (!unmanaged).then_some(m),
                internal_ip,
                c2: C2[k % C2.len()],
                days,
                site: m.site.code.to_owned(),
            });
        }
        // The first campaign is still going on today.
        if let Some(first) = campaigns.first_mut()
            && !first.days.contains(&today)
        {
            first.days.push(today);
        }
        for camp in &campaigns {
            let Some(dev_idx) = c.devices.iter().position(|(d, _)| {
                d.site == camp.site && d.device_type == FirewallDeviceType::Firewall
            }) else {
                continue;
            };
            for day in &camp.days {
                let hits = rng.random_range(3..12);
                for _ in 0..hits {
                    let secs = rng.random_range(0..86_400);
                    let at = (*day + Duration::seconds(secs))
                        .min(ctx.now - Duration::seconds(rng.random_range(60..3600)));
                    let blocked = rng.random_bool(0.5);
                    let mut d = draft(
                        at,
                        Category::Ids,
                        if blocked {
                            Action::Blocked
                        } else {
                            Action::Detected
                        },
                        camp.c2.1,
                    );
                    d.src_ip = Some(camp.internal_ip.clone());
                    d.src_port = Some(rng.random_range(49152..65535));
                    d.dst_ip = Some(camp.c2.0.into());
                    d.dst_port = Some(443);
                    d.protocol = Some("tcp".into());
                    d.account = camp.machine.and_then(|m| m.user.clone());
                    drafts.push((dev_idx, d));
                }
            }
        }

        // Directory events around logins on directory accounts, and unrelated ones.
        let known: HashSet<&str> = ctx.accounts.iter().map(|a| a.login.as_str()).collect();
        let mut directory = Vec::new();
        for (_, d) in &drafts {
            let Some(account) = d.account.as_deref() else {
                continue;
            };
            if !matches!(d.category, Category::Auth | Category::Vpn) || !known.contains(account) {
                continue;
            }
            c.log_on(&mut rng, d, account, &mut directory);
        }
        for _ in 0..(ctx.days as usize * 10) {
            let who = c.people[rng.random_range(0..c.people.len())];
            let at = start
                + Duration::seconds(rng.random_range(0..(ctx.now - start).num_seconds().max(1)));
            directory.push(dir_event(&c, who, at, 4624, None));
        }
        let index = DirectoryIndex::new(directory.iter().cloned());

        // Collection: write each draft as its device logs it, read it back with the parser.
        drafts.sort_by_key(|(_, d)| d.at);
        let mut col = Collector::default();
        let mut events = Vec::with_capacity(drafts.len());
        let mut rare = Vec::new();
        for (i, d) in &drafts {
            let (dev, format) = &c.devices[*i];
            if let Some(r) = col.collect(dev, *format, d, &index) {
                rare.extend(rare_copy(&r));
                events.push(r);
            }
        }
        // Threat rows: one per internal device, external address and day.
        let mut threats = Vec::new();
        let mut n = 0;
        let mut seen = HashSet::new();
        for (k, camp) in campaigns.iter().enumerate() {
            for day in &camp.days {
                if !seen.insert((camp.internal_ip.clone(), camp.c2.0, *day)) {
                    continue;
                }
                let day_end = *day + Duration::days(1);
                let hits: Vec<&Record> = events
                    .iter()
                    .filter(|r| r.ts >= day.timestamp_millis() && r.ts < day_end.timestamp_millis())
                    .filter(|r| {
                        r.body["dst_ip"] == camp.c2.0
                            && r.body["src_ip"] == camp.internal_ip.as_str()
                    })
                    .collect();
                let (Some(first), Some(last)) = (hits.first(), hits.last()) else {
                    continue;
                };
                n += 1;
                let mut sources = vec!["firewall".to_owned()];
                sources.push("gateway".into());
                if camp.machine.is_some() {
                    sources.push("agent".into());
                }
                let open = k == 0 || k % 2 == 1;
                let threat = Threat {
                    id: format!("thr-{}", ctx.tenant.id_base * 10 + n),
                    day: day.date_naive(),
                    internal: InternalDevice {
                        ip: camp.internal_ip.clone(),
                        hostname: match (camp.machine, k % 2) {
                            (Some(m), _) => Some(m.hostname.clone()),
                            (None, 0) => Some(format!("android-{:x}", 0x5a3c_u32 + k as u32)),
                            (None, _) => None,
                        },
                        machine_id: camp.machine.map(|m| m.id),
                        mac: camp
                            .machine
                            .is_none()
                            .then(|| format!("3c:22:fb:{:02x}:{:02x}:{:02x}", k, n % 256, 0x42)),
                        identification: match (camp.machine, k % 2) {
                            (Some(_), _) => Identification::Agent,
                            (None, 0) => Identification::DhcpLease,
                            (None, _) => Identification::IpOnly,
                        },
                    },
                    external_ip: camp.c2.0.into(),
                    sources,
                    indicator: Indicator {
                        kind: if k % 2 == 0 {
                            IndicatorType::IdsSignature
                        } else {
                            IndicatorType::IpReputation
                        },
                        value: if k % 2 == 0 {
                            camp.c2.1.into()
                        } else {
                            camp.c2.0.into()
                        },
                        source: camp.c2.2.into(),
                    },
                    severity: if k % 2 == 0 {
                        Criticality::Critical
                    } else {
                        Criticality::High
                    },
                    hits: hits.len() as u32,
                    first_seen_at: DateTime::from_timestamp_millis(first.ts).unwrap_or(*day),
                    last_seen_at: DateTime::from_timestamp_millis(last.ts).unwrap_or(*day),
                    status: if open {
                        ThreatStatus::Open
                    } else {
                        ThreatStatus::Acknowledged
                    },
                    siem_incident: (k % 2 == 0).then(|| SiemRef {
                        id: format!("siem-fw-{}", ctx.tenant.id_base + k as i64 + 1),
                        status: if open {
                            SiemStatus::Open
                        } else {
                            SiemStatus::Acknowledged
                        },
                    }),
                };
                threats.push(Record {
                    partition: "all".into(),
                    ts: day.timestamp_millis(),
                    id: threat.id.clone(),
                    body: to_value(&threat),
                });
            }
        }

        // IPFIX (firewalls) and NetFlow v9 (gateways) by full hour.
        let mut traffic = Exports::default();
        let end = ctx
            .now
            .duration_trunc(Duration::hours(1))
            .unwrap_or(ctx.now);
        let hours = i64::from(ctx.days) * 24;
        for (dev, _) in &c.devices {
            for h in 0..hours {
                let at = end - Duration::hours(hours - h);
                c.export_hour(&mut rng, dev, at, h % 2 == 1, &mut traffic);
            }
        }
        for camp in &campaigns {
            for (dev, _) in c.devices.iter().filter(|(d, _)| d.site == camp.site) {
                for day in &camp.days {
                    let at = (*day + Duration::hours(rng.random_range(8..18)))
                        .min(end - Duration::hours(1));
                    traffic.add(&Export {
                        at,
                        device_id: dev.id,
                        protocol: &dev.flows.format,
                        src_ip: &camp.internal_ip,
                        src_host: camp.machine.map(|m| m.hostname.as_str()),
                        dst_ip: camp.c2.0,
                        bytes: 48_000.0,
                        packets: 320.0,
                        flows: 24.0,
                    });
                }
            }
        }

        let stores = &ctx.stores;
        stores
            .docs
            .put(
                tenant,
                DEVICES,
                c.devices
                    .iter()
                    .map(|(d, _)| (key(d.id), to_value(d)))
                    .collect(),
            )
            .await?;
        let dir_records: Vec<Record> = directory
            .iter()
            .enumerate()
            .map(|(i, e)| Record {
                partition: e.account.clone(),
                ts: e.at.timestamp_millis(),
                id: format!("dc-{i:07}"),
                body: to_value(e),
            })
            .collect();
        stores
            .docs
            .put(tenant, DIRECTORY_ACCOUNTS, directory_accounts(&dir_records))
            .await?;
        stores
            .series_writes
            .append(tenant, DIRECTORY, dir_records)
            .await?;
        stores
            .series_writes
            .append(tenant, EVENTS_RARE, rare)
            .await?;
        stores.series_writes.append(tenant, EVENTS, events).await?;
        // Bulk traffic for benchmarks (none in the demo): allowed and denied connections,
        // written, parsed and stored in batches so memory stays flat.
        let density = bulk_density();
        if density > 0.0 {
            let mut day = start.max(ctx.now - Duration::days(BULK_DAYS));
            while day < ctx.now {
                for (dev, format) in &c.devices {
                    let at_site = c
                        .machines_by_site
                        .get(dev.site.as_str())
                        .map_or(0, Vec::len);
                    let total = (density * at_site as f64) as usize;
                    let mut done = 0;
                    while done < total {
                        let n = (total - done).min(BULK_BATCH);
                        let mut batch = Vec::with_capacity(n);
                        for _ in 0..n {
                            let at = day + Duration::milliseconds(rng.random_range(0..86_400_000));
                            if at >= ctx.now {
                                continue;
                            }
                            let d = c.bulk(&mut rng, dev, at);
                            if let Some(r) = col.collect(dev, *format, &d, &index) {
                                batch.push(r);
                            }
                        }
                        stores.series_writes.append(tenant, EVENTS, batch).await?;
                        done += n;
                    }
                }
                day += Duration::days(1);
            }
        }
        if col.skipped > 0 {
            tracing::warn!(
                skipped = col.skipped,
                "demo firewall lines the parsers refused"
            );
        }
        stores
            .series_writes
            .append(tenant, THREATS, threats)
            .await?;
        for (series, rows) in traffic.series().into_iter().chain(col.counts.series()) {
            stores.rollups.load(tenant, &series, rows).await?;
        }
        Ok(())
    })
}

/// The first sequence number of the producer's event ids, above any the seed gives.
const LIVE_SEQ: u64 = 500_000_000;

/// The firewall data of `[from, to)` as time passes: each device whose syslog is active logs
/// its ordinary events at the seed's daily rate, read back through the collection path with
/// the directory events of their logins, and each device exports its flows of every hour
/// that ends in the interval.
pub fn produce(ctx: &SeedCtx, from: DateTime<Utc>, to: DateTime<Utc>) -> Produced {
    let c = context(ctx);
    let known: HashSet<&str> = ctx.accounts.iter().map(|a| a.login.as_str()).collect();
    let within = |at: DateTime<Utc>| from <= at && at < to;
    let mut col = Collector::default();
    let mut traffic = Exports::default();
    let (mut events, mut rare, mut directory) = (Vec::new(), Vec::new(), Vec::new());
    for hour in hours_of(from, to) {
        let mut rng = ctx.hour_rng("firewall", hour);
        let mut drafts: Vec<(usize, Draft)> = Vec::new();
        for (i, (dev, _)) in c.devices.iter().enumerate() {
            if dev.syslog.status != ChannelStatus::Active {
                continue;
            }
            for _ in 0..c.per_day(dev) {
                // Each of the day's events falls in this hour one time in 24.
                if rng.random_bool(1.0 / 24.0) {
                    let at = hour + Duration::milliseconds(rng.random_range(0..3_600_000));
                    drafts.push((i, c.ordinary(&mut rng, &c.devices[i].0, at)));
                }
            }
        }
        drafts.sort_by_key(|(_, d)| d.at);
        // The hour's logins are all drawn, so that the hour is the same however cut.
        let mut logins = Vec::new();
        for (_, d) in &drafts {
            if let Some(account) = d.account.as_deref().filter(|a| known.contains(a))
                && matches!(d.category, Category::Auth | Category::Vpn)
            {
                c.log_on(&mut rng, d, account, &mut logins);
            }
        }
        let index = DirectoryIndex::new(logins.iter().cloned());
        for (k, (i, d)) in drafts.iter().enumerate() {
            if !within(d.at) {
                continue;
            }
            let (dev, format) = &c.devices[*i];
            // Ids numbered by the draft's place in its hour.
            col.seq = LIVE_SEQ + k as u64;
            if let Some(r) = col.collect(dev, *format, d, &index) {
                rare.extend(rare_copy(&r));
                events.push(r);
            }
        }
        let hour_s = hour.timestamp();
        directory.extend(
            logins
                .iter()
                .enumerate()
                .filter(|(_, e)| within(e.at))
                .map(|(k, e)| Record {
                    partition: e.account.clone(),
                    ts: e.at.timestamp_millis(),
                    id: format!("dc-{hour_s}-{k:05}"),
                    body: to_value(e),
                }),
        );
        // The hour's flows are exported once it has ended.
        let end = hour + Duration::hours(1);
        if from < end && end <= to {
            for (dev, _) in &c.devices {
                c.export_hour(&mut rng, dev, hour, (hour_s / 3600) % 2 == 1, &mut traffic);
            }
        }
    }
    let mut rollups = traffic.series();
    rollups.extend(col.counts.series());
    Produced {
        docs: vec![(
            DIRECTORY_ACCOUNTS.to_owned(),
            directory_accounts(&directory),
        )],
        records: vec![
            (EVENTS.to_owned(), events),
            (EVENTS_RARE.to_owned(), rare),
            (DIRECTORY.to_owned(), directory),
        ],
        rollups,
        ..Produced::default()
    }
}

/// One document per account that directory records name, which the seed and the producer put
/// beside the records (putting one again changes nothing).
fn directory_accounts(records: &[Record]) -> Vec<(String, Value)> {
    let accounts: BTreeSet<&str> = records.iter().map(|r| r.partition.as_str()).collect();
    accounts
        .into_iter()
        .map(|a| (a.to_owned(), json!({ "account": a })))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(category: Category, action: Action) -> Draft {
        let mut d = draft(
            "2026-11-22T09:15:42Z".parse().expect("date"),
            category,
            action,
            "message, with \"quotes\" = and | pipes",
        );
        d.account = Some("julie.martin".into());
        d.src_ip = Some("203.0.113.7".into());
        d.src_port = Some(50123);
        d.dst_ip = Some("10.10.10.10".into());
        d.dst_port = Some(443);
        d.service = Some("https".into());
        d.protocol = Some("tcp".into());
        d.rule = Some("PAR-LYO".into());
        d
    }

    /// The generator's lines must read back as what was meant, in every format.
    #[test]
    fn every_category_and_action_round_trips_through_every_format() {
        let pairs = [
            (Category::Auth, Action::Success),
            (Category::Auth, Action::Failure),
            (Category::Vpn, Action::Success),
            (Category::Vpn, Action::Failure),
            (Category::Tunnel, Action::Up),
            (Category::Tunnel, Action::Down),
            (Category::Ids, Action::Detected),
            (Category::Ids, Action::Blocked),
            (Category::Deny, Action::Blocked),
            (Category::Allow, Action::Allowed),
            (Category::Admin, Action::Changed),
            (Category::System, Action::Info),
            (Category::Other, Action::Info),
        ];
        for format in Format::ALL {
            for (cat, act) in pairs {
                let d = sample(cat, act);
                let line = render(format, "PAR-FW-01", &d);
                let p = parse_as(format, &line, d.at + Duration::seconds(2))
                    .unwrap_or_else(|e| panic!("{format:?} {cat:?}: {e}: {line}"));
                assert_eq!((p.category, p.action), (cat, act), "{format:?}: {line}");
                assert_eq!(p.at, d.at, "{format:?}: {line}");
                assert_eq!(
                    netops_firewall::parse::detect(&line),
                    Some(format),
                    "{line}"
                );
                if matches!(cat, Category::Auth | Category::Vpn) {
                    assert_eq!(
                        p.account.as_deref(),
                        Some("julie.martin"),
                        "{format:?}: {line}"
                    );
                    assert_eq!(
                        p.src_ip.as_deref(),
                        Some("203.0.113.7"),
                        "{format:?}: {line}"
                    );
                }
                if matches!(cat, Category::Deny | Category::Allow) {
                    assert_eq!(p.dst_port, Some(443), "{format:?}: {line}");
                }
            }
        }
    }
}
