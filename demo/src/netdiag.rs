//! NetDiag demo data: for every machine running the netdiag module, a timeline of verdict
//! episodes over the whole history, from which everything else follows: hourly verdict
//! rollups (whole history), raw measurements (the last 48 hours of activity), the event feed,
//! alerts that open with each non-OK episode and resolve on return to OK, the current state,
//! followed applications with hourly statistics (last 7 days) and a few saved settings.

use crate::{MachineKind, MachineSeed, SeedCtx};
use chrono::{DateTime, Duration, DurationRound, Utc};
use netops_shared::module::BoxFuture;
use netops_shared::store::{Record, StoreResult};
use rand::Rng;
use rand::rngs::StdRng;
use serde_json::{Value, json};

use netops_netdiag::derive::{alert_title, severity};
use netops_netdiag::model::*;

mod live;
pub use live::produce;

/// Causes per non-OK verdict (French, as the agent reports them).
pub fn causes(v: Verdict) -> &'static [&'static str] {
    match v {
        Verdict::OK => &[],
        Verdict::PC => &[
            "Carte Wi-Fi désactivée sur le poste",
            "Pilote réseau en erreur (Intel Wi-Fi 6 AX201)",
            "Processeur saturé (98 %) : mesures retardées",
            "Pare-feu local bloquant le trafic sortant",
        ],
        Verdict::LAN => &[
            "Signal Wi-Fi faible (-79 dBm)",
            "Perte de paquets vers la passerelle (12 %)",
            "Passerelle lente à répondre (180 ms)",
            "Lien Ethernet négocié à 100 Mbit/s en half-duplex",
        ],
        Verdict::INFRA => &[
            "Point d'accès saturé (52 clients associés)",
            "Erreurs CRC sur le port du commutateur d'étage",
            "Bail DHCP non obtenu : serveur DHCP muet",
            "Boucle de niveau 2 détectée sur le VLAN utilisateurs",
        ],
        Verdict::WAN => &[
            "Perte de paquets vers Internet (18 %)",
            "Latence Internet élevée (420 ms)",
            "Lien opérateur coupé (fibre principale)",
            "Saturation du lien Internet du site (98 %)",
        ],
        Verdict::DNS => &[
            "Serveur DNS interne sans réponse",
            "Résolution DNS lente (1 800 ms)",
            "Réponses SERVFAIL du résolveur",
            "Zone DNS du domaine introuvable",
        ],
        Verdict::SERVICE => &[
            "Microsoft Teams : échecs de connexion TCP",
            "Outlook : Exchange Online injoignable",
            "ERP interne : délai de réponse dépassé",
            "SharePoint Online : erreurs HTTP 503",
        ],
    }
}

/// Hours of raw measurements kept per machine (the periods keep the whole history).
const RAW_HOURS: i64 = 4;

/// Hours of application figures kept per machine.
const APP_HOURS: i64 = 72;

/// Executable hit by a SERVICE cause (same order as the causes).
const SERVICE_APPS: [&str; 4] = [
    "ms-teams.exe",
    "outlook.exe",
    "erp-client.exe",
    "msedge.exe",
];

const NON_OK: [Verdict; 6] = [
    Verdict::LAN,
    Verdict::WAN,
    Verdict::DNS,
    Verdict::SERVICE,
    Verdict::INFRA,
    Verdict::PC,
];

#[derive(Debug, Clone)]
struct Episode {
    start: DateTime<Utc>,
    /// Exclusive; beyond the machine's end while the episode is in progress.
    end: DateTime<Utc>,
    verdict: Verdict,
    cause: usize,
}

impl Episode {
    fn cause_text(&self) -> &'static str {
        causes(self.verdict)[self.cause]
    }

    /// The period of this episode, with its end when `ended`.
    fn period(&self, ended: bool) -> Period {
        Period {
            start: self.start,
            end: ended.then_some(self.end),
            verdict: self.verdict,
            cause: self.cause_text().to_owned(),
            executable: (self.verdict == Verdict::SERVICE)
                .then(|| SERVICE_APPS[self.cause % SERVICE_APPS.len()].to_owned()),
        }
    }

    /// The alert of this episode on `hostname`, resolved at its end when `ended`.
    fn alert(
        &self,
        id: &str,
        hostname: &str,
        severity: Severity,
        title: String,
        ended: bool,
    ) -> Alert {
        Alert {
            id: id.to_owned(),
            hostname: hostname.to_owned(),
            verdict: self.verdict,
            cause: self.cause_text().to_owned(),
            severity,
            status: AlertState::open_if(!ended),
            title,
            opened_at: self.start,
            resolved_at: ended.then_some(self.end),
        }
    }
}

fn pick<'a, T>(rng: &mut StdRng, items: &'a [T]) -> &'a T {
    &items[rng.random_range(0..items.len())]
}

fn weighted_verdict(rng: &mut StdRng) -> Verdict {
    match rng.random_range(0..100) {
        0..15 => Verdict::PC,
        15..40 => Verdict::LAN,
        40..50 => Verdict::INFRA,
        50..65 => Verdict::WAN,
        65..80 => Verdict::DNS,
        _ => Verdict::SERVICE,
    }
}

fn quarter(t: DateTime<Utc>) -> DateTime<Utc> {
    t.duration_trunc(Duration::minutes(SAMPLE_MINUTES))
        .unwrap_or(t)
}

fn hour(t: DateTime<Utc>) -> DateTime<Utc> {
    t.duration_trunc(Duration::hours(1)).unwrap_or(t)
}

fn episodes(
    rng: &mut StdRng,
    start: DateTime<Utc>,
    end: DateTime<Utc>,
    forced: Option<Verdict>,
) -> Vec<Episode> {
    let mut out = Vec::new();
    let mut t = quarter(start + Duration::minutes(rng.random_range(0..48 * 60)));
    let forced_start = forced.map(|_| quarter(end - Duration::minutes(rng.random_range(30..300))));
    let limit = forced_start.map(|f| f - Duration::hours(6)).unwrap_or(end);
    while t < limit {
        let verdict = weighted_verdict(rng);
        let e = t + Duration::minutes(SAMPLE_MINUTES * rng.random_range(2..=20));
        if e >= limit {
            break;
        }
        out.push(Episode {
            start: t,
            end: e,
            verdict,
            cause: rng.random_range(0..causes(verdict).len()),
        });
        t = quarter(e + Duration::minutes(rng.random_range(24 * 60..160 * 60)));
    }
    if let (Some(v), Some(s)) = (forced, forced_start) {
        // In progress at `end`: [`history`] sets when it ends after.
        out.push(Episode {
            start: s,
            end: end + Duration::days(365),
            verdict: v,
            cause: rng.random_range(0..causes(v).len()),
        });
    }
    out
}

const WIFI_ADAPTERS: [&str; 3] = [
    "Intel(R) Wi-Fi 6 AX201 160MHz",
    "Intel(R) Wi-Fi 6E AX211 160MHz",
    "Realtek RTL8852BE WiFi 6",
];
const WIRED_ADAPTERS: [&str; 2] = [
    "Intel(R) Ethernet Connection I219-LM",
    "Realtek PCIe GbE Family Controller",
];

/// The machine's network context, fixed per machine.
struct Ctx<'a> {
    m: &'a MachineSeed,
    wifi: bool,
    ssid: String,
    band: &'static str,
    channel: u32,
    ap: String,
    bssid: String,
    gateway: String,
    domain: &'static str,
    adapter: &'static str,
}

fn machine_ctx<'a>(rng: &mut StdRng, m: &'a MachineSeed, ctx: &SeedCtx) -> Ctx<'a> {
    let wifi = m.kind == MachineKind::Laptop && rng.random_bool(0.85);
    let band = *pick(rng, &["5 GHz", "5 GHz", "5 GHz", "2.4 GHz", "6 GHz"]);
    let channel = match band {
        "2.4 GHz" => *pick(rng, &[1, 6, 11]),
        "6 GHz" => *pick(rng, &[5, 37, 69]),
        _ => *pick(rng, &[36, 44, 52, 100, 116, 132]),
    };
    let floor = rng.random_range(0..4);
    let octets = m.ip.split('.').collect::<Vec<_>>();
    Ctx {
        m,
        wifi,
        ssid: format!("{}-CORP", ctx.tenant.id.to_uppercase()),
        band,
        channel,
        ap: format!(
            "AP-{}-{}F-{:02}",
            m.site.code,
            floor,
            rng.random_range(1..9)
        ),
        bssid: format!(
            "f4:ea:b5:{:02x}:{:02x}:{:02x}",
            rng.random_range(0..256),
            rng.random_range(0..256),
            rng.random_range(0..256)
        ),
        gateway: format!(
            "10.{}.{}.1",
            m.site.subnet,
            octets.get(2).copied().unwrap_or("30")
        ),
        domain: ctx.tenant.domain,
        adapter: if wifi {
            WIFI_ADAPTERS[rng.random_range(0..WIFI_ADAPTERS.len())]
        } else {
            WIRED_ADAPTERS[rng.random_range(0..WIRED_ADAPTERS.len())]
        },
    }
}

fn round1(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}

fn measurement(rng: &mut StdRng, c: &Ctx, at: DateTime<Utc>, ep: Option<&Episode>) -> Measurement {
    let verdict = ep.map(|e| e.verdict).unwrap_or(Verdict::OK);
    let cause_idx = ep.map(|e| e.cause).unwrap_or(0);
    let mut signal = if c.wifi {
        rng.random_range(-67..-45)
    } else {
        0
    };
    let mut gw = if c.wifi {
        rng.random_range(2.0..12.0)
    } else {
        rng.random_range(0.4..2.5)
    };
    let mut dns = rng.random_range(6.0..25.0);
    let mut net = rng.random_range(12.0..38.0);
    let (mut loss_gw, mut loss_net) = (0.0, if rng.random_bool(0.1) { 0.5 } else { 0.0 });
    let mut connected = true;
    let mut fail: [Option<&str>; 4] = [None; 4];
    match verdict {
        Verdict::OK => {}
        Verdict::PC => {
            if cause_idx < 2 {
                connected = false;
                fail = [Some("réseau indisponible"); 4];
            } else {
                gw += 60.0;
                dns += 200.0;
                net += 250.0;
                fail[3] = Some("délai dépassé");
            }
        }
        Verdict::LAN => {
            if c.wifi {
                signal = rng.random_range(-84..-76);
            }
            gw = rng.random_range(80.0..250.0);
            loss_gw = rng.random_range(6.0..20.0);
            loss_net = loss_gw + 1.0;
            net += gw;
            dns += gw;
            fail[2] = Some("délai dépassé");
        }
        Verdict::INFRA => {
            gw = rng.random_range(25.0..70.0);
            loss_gw = rng.random_range(2.0..6.0);
            net += 120.0;
            fail[3] = Some("connexion réinitialisée");
        }
        Verdict::WAN => {
            net = rng.random_range(300.0..600.0);
            loss_net = rng.random_range(12.0..30.0);
            fail[1] = Some("délai dépassé");
            fail[2] = Some("délai dépassé");
        }
        Verdict::DNS => {
            dns = if cause_idx == 1 {
                rng.random_range(1500.0..2200.0)
            } else {
                0.0
            };
            fail[0] = Some(if cause_idx == 2 {
                "SERVFAIL"
            } else {
                "délai dépassé"
            });
        }
        Verdict::SERVICE => {
            fail[2] = Some(if cause_idx == 3 {
                "HTTP 503"
            } else {
                "connexion refusée"
            });
        }
    }
    let targets = [
        (c.domain.to_string(), ProbeKind::Dns),
        ("www.google.com:443".to_owned(), ProbeKind::Tcp),
        ("teams.microsoft.com:443".to_owned(), ProbeKind::Http),
        (format!("intranet.{}:443", c.domain), ProbeKind::Http),
    ];
    let base_ms = [dns, net, net + 8.0, gw + 6.0];
    let probes = targets
        .into_iter()
        .enumerate()
        .map(|(i, (target, kind))| ProbeResult {
            target,
            kind,
            ok: fail[i].is_none(),
            ms: fail[i].is_none().then(|| round1(base_ms[i])),
            error: fail[i].map(str::to_owned),
        })
        .collect();
    let dns_ok = fail[0].is_none();
    Measurement {
        at,
        verdict,
        cause: ep.map(|e| e.cause_text().to_owned()),
        link: Link {
            kind: if c.wifi {
                LinkKind::Wifi
            } else {
                LinkKind::Ethernet
            },
            connected,
            speed_mbps: if !connected {
                0
            } else if c.wifi {
                *pick(rng, &[433, 866, 1201, 1201, 2402])
            } else if verdict == Verdict::LAN && cause_idx == 3 {
                100
            } else {
                1000
            },
            adapter: c.adapter.into(),
        },
        wireless: (c.wifi && connected).then(|| Wireless {
            ssid: c.ssid.clone(),
            signal_dbm: signal,
            band: c.band.into(),
            channel: c.channel,
            access_point: c.ap.clone(),
            bssid: c.bssid.clone(),
        }),
        latency_ms: Latencies {
            gateway: connected.then(|| round1(gw)),
            dns: (connected && dns_ok).then(|| round1(dns)),
            internet: (connected && loss_net < 25.0).then(|| round1(net)),
        },
        loss_pct: Loss {
            gateway: if connected { round1(loss_gw) } else { 100.0 },
            internet: if connected { round1(loss_net) } else { 100.0 },
        },
        probes,
    }
}

/// A followed application of the catalog.
fn app_catalog(domain: &str, tenant: &str) -> Vec<AppDef> {
    let dep = |host: &str, port: u16, protocol: &str| Dependency {
        host: host.into(),
        port,
        protocol: protocol.into(),
    };
    let probe = |target: &str, kind: ProbeKind| ProbeDef {
        target: target.into(),
        kind,
    };
    vec![
        AppDef {
            name: "Microsoft Teams".into(),
            executable: "ms-teams.exe".into(),
            dependencies: vec![
                dep("teams.microsoft.com", 443, "tcp"),
                dep("*.relay.teams.microsoft.com", 3478, "udp"),
                dep("login.microsoftonline.com", 443, "tcp"),
            ],
            hourly: None,
            probes: vec![
                probe("teams.microsoft.com:443", ProbeKind::Http),
                probe("login.microsoftonline.com:443", ProbeKind::Tcp),
            ],
        },
        AppDef {
            name: "Outlook".into(),
            executable: "outlook.exe".into(),
            dependencies: vec![
                dep("outlook.office365.com", 443, "tcp"),
                dep("autodiscover.outlook.com", 443, "tcp"),
            ],
            hourly: None,
            probes: vec![probe("outlook.office365.com:443", ProbeKind::Http)],
        },
        AppDef {
            name: "ERP interne".into(),
            executable: "erp-client.exe".into(),
            dependencies: vec![
                dep(&format!("erp.{domain}"), 443, "tcp"),
                dep(&format!("sql01.{domain}"), 1433, "tcp"),
            ],
            hourly: None,
            probes: vec![
                probe(&format!("erp.{domain}:443"), ProbeKind::Http),
                probe(&format!("sql01.{domain}:1433"), ProbeKind::Tcp),
            ],
        },
        AppDef {
            name: "Microsoft Edge (SharePoint)".into(),
            executable: "msedge.exe".into(),
            dependencies: vec![dep(&format!("{tenant}.sharepoint.com"), 443, "tcp")],
            hourly: None,
            probes: vec![probe(
                &format!("{tenant}.sharepoint.com:443"),
                ProbeKind::Http,
            )],
        },
        AppDef {
            name: "OneDrive".into(),
            executable: "onedrive.exe".into(),
            dependencies: vec![dep(&format!("{tenant}-my.sharepoint.com"), 443, "tcp")],
            hourly: None,
            probes: vec![probe(
                &format!("{tenant}-my.sharepoint.com:443"),
                ProbeKind::Http,
            )],
        },
        AppDef {
            name: "Zoom".into(),
            executable: "zoom.exe".into(),
            dependencies: vec![dep("zoom.us", 443, "tcp"), dep("*.zoom.us", 8801, "udp")],
            hourly: None,
            probes: vec![probe("zoom.us:443", ProbeKind::Http)],
        },
    ]
}

/// Background event of a source: severity, message, details.
fn event(rng: &mut StdRng, c: &Ctx, source: &str) -> (Severity, String, Value) {
    let host = &c.m.hostname;
    match source {
        "app" => {
            let (exe, name) = *pick(
                rng,
                &[
                    ("ms-teams.exe", "Microsoft Teams"),
                    ("outlook.exe", "Outlook"),
                    ("erp-client.exe", "ERP interne"),
                ],
            );
            if rng.random_bool(0.2) {
                (
                    Severity::Medium,
                    format!("{name} s'est arrêté de façon inattendue (code 0xc0000005)"),
                    json!({"executable": exe, "event": "crash", "exit_code": "0xc0000005"}),
                )
            } else {
                (
                    Severity::Info,
                    format!("{name} démarré"),
                    json!({"executable": exe, "event": "start"}),
                )
            }
        }
        "appv" => (
            Severity::Low,
            "Microsoft Teams : temps de réponse dégradé (850 ms)".into(),
            json!({"executable": "ms-teams.exe", "verdict": "SERVICE", "response_ms": 850}),
        ),
        "teams" => {
            let mos = round1(rng.random_range(2.4..4.4));
            let jitter = rng.random_range(3..45);
            let sev = if mos < 3.0 {
                Severity::Medium
            } else {
                Severity::Info
            };
            (
                sev,
                format!(
                    "Appel Teams terminé : qualité {} / 5 (gigue {jitter} ms)",
                    format!("{mos:.1}").replace('.', ",")
                ),
                json!({"mos": mos, "jitter_ms": jitter, "packet_loss_pct": round1(rng.random_range(0.0..4.0)), "duration_min": rng.random_range(5..75)}),
            )
        }
        "ap" => {
            let to = format!(
                "AP-{}-{}F-{:02}",
                c.m.site.code,
                rng.random_range(0..4),
                rng.random_range(1..9)
            );
            (
                Severity::Info,
                format!("Itinérance Wi-Fi de {} vers {to}", c.ap),
                json!({"from": c.ap, "to": to, "signal_dbm": rng.random_range(-72..-50)}),
            )
        }
        "vpn" => {
            if rng.random_bool(0.5) {
                (
                    Severity::Info,
                    "Tunnel VPN établi (GlobalProtect, passerelle vpn-eu.".to_owned()
                        + c.domain
                        + ")",
                    json!({"client": "GlobalProtect", "state": "up", "gateway": format!("vpn-eu.{}", c.domain)}),
                )
            } else {
                (
                    Severity::Low,
                    "Tunnel VPN fermé : déconnexion à l'initiative de l'utilisateur".into(),
                    json!({"client": "GlobalProtect", "state": "down"}),
                )
            }
        }
        "wlan" => {
            if rng.random_bool(0.7) {
                (
                    Severity::Info,
                    format!(
                        "Connecté au réseau Wi-Fi « {} » ({}, canal {})",
                        c.ssid, c.band, c.channel
                    ),
                    json!({"ssid": c.ssid, "band": c.band, "channel": c.channel, "event": "connected"}),
                )
            } else {
                (
                    Severity::Low,
                    format!(
                        "Déconnecté du réseau Wi-Fi « {} » (raison : signal perdu)",
                        c.ssid
                    ),
                    json!({"ssid": c.ssid, "event": "disconnected", "reason": "signal perdu"}),
                )
            }
        }
        "driver" => (
            Severity::Medium,
            format!("Réinitialisation du pilote réseau « {} »", c.adapter),
            json!({"adapter": c.adapter, "event": "reset", "driver_version": "23.60.0.10"}),
        ),
        "trace" => {
            let hops = trace_hops(rng, &c.gateway, "8.8.8.8");
            (
                Severity::Info,
                format!(
                    "Traceroute vers 8.8.8.8 : {} sauts, {} ms",
                    hops.len(),
                    hops.last().and_then(|h| h["ms"].as_f64()).unwrap_or(0.0)
                ),
                json!({"target": "8.8.8.8", "hops": hops, "trigger": "incident"}),
            )
        }
        "speed" => {
            let (down, up) = speeds(rng);
            (
                Severity::Info,
                format!("Test de débit : {down} Mbit/s descendant, {up} Mbit/s montant"),
                json!({"down_mbps": down, "up_mbps": up, "down_mb": 20, "up_mb": 8, "trigger": "planifié"}),
            )
        }
        "capture" => {
            let secs = 30;
            let n = rng.random_range(2000..40000);
            (
                Severity::Info,
                format!("Capture réseau terminée : {secs} s, {n} paquets"),
                json!({"seconds": secs, "packets": n, "file": format!("{host}-capture.pcapng"), "trigger": "incident"}),
            )
        }
        "netprofile" => {
            let p = *pick(rng, &["Domaine", "Privé", "Public"]);
            let sev = if p == "Public" {
                Severity::Medium
            } else {
                Severity::Info
            };
            (
                sev,
                format!("Profil réseau Windows : {p}"),
                json!({"profile": p}),
            )
        }
        "switch" => {
            let port = format!("Gi1/0/{}", rng.random_range(1..48));
            (
                Severity::Info,
                format!(
                    "Raccordé au commutateur SW-{}-ETG{} port {port} (LLDP)",
                    c.m.site.code,
                    rng.random_range(0..4)
                ),
                json!({"port": port, "vlan": 30, "protocol": "LLDP"}),
            )
        }
        "dhcp" => {
            if rng.random_bool(0.85) {
                (
                    Severity::Info,
                    format!("Bail DHCP renouvelé : {} pour 8 h", c.m.ip),
                    json!({"ip": c.m.ip, "lease_hours": 8, "server": c.gateway}),
                )
            } else {
                (
                    Severity::Medium,
                    "Échec du renouvellement du bail DHCP, nouvel essai dans 60 s".into(),
                    json!({"ip": c.m.ip, "event": "renew_failed"}),
                )
            }
        }
        "power" => {
            let (msg, ev) = *pick(
                rng,
                &[
                    ("Mise en veille du poste", "sleep"),
                    ("Sortie de veille du poste", "wake"),
                    ("Passage sur batterie (84 %)", "battery"),
                ],
            );
            (Severity::Info, msg.into(), json!({"event": ev}))
        }
        "wan" => {
            let ip = format!("203.0.113.{}", rng.random_range(2..250));
            (
                Severity::Low,
                format!("Adresse IP publique changée : {ip} (Orange Business)"),
                json!({"public_ip": ip, "operator": "Orange Business"}),
            )
        }
        "tcpfail" => {
            let n = rng.random_range(3..40);
            let sev = if n > 20 {
                Severity::Medium
            } else {
                Severity::Low
            };
            (
                sev,
                format!(
                    "{n} connexions TCP échouées vers outlook.office365.com:443 (délai dépassé)"
                ),
                json!({"remote": "outlook.office365.com:443", "failures": n, "reason": "timeout"}),
            )
        }
        "proc" => {
            let p = *pick(
                rng,
                &["OneDrive.exe", "Teams.exe", "chrome.exe", "svchost.exe"],
            );
            (
                Severity::Info,
                format!("Processus {p} : pic de 240 connexions réseau"),
                json!({"process": p, "connections": 240}),
            )
        }
        "install" => {
            let s = *pick(
                rng,
                &[
                    "Mise à jour cumulative Windows KB5046617",
                    "Google Chrome 131.0.6778.86",
                    "Zoom Workplace 6.2.10",
                ],
            );
            (
                Severity::Info,
                format!("Logiciel installé : {s}"),
                json!({"software": s}),
            )
        }
        "file" => (
            Severity::Info,
            format!(
                "Fichier ouvert : C:\\Users\\{}\\Documents\\budget.xlsx",
                c.m.user.clone().unwrap_or_default()
            ),
            json!({"path": "budget.xlsx"}),
        ),
        "fg" => (
            Severity::Info,
            "Fenêtre au premier plan : Messagerie - Outlook".into(),
            json!({"title": "Messagerie - Outlook"}),
        ),
        _ => (Severity::Info, "Évènement de l'agent".into(), json!({})),
    }
}

/// A plausible traceroute from the gateway to the target.
pub(crate) fn trace_hops(rng: &mut impl Rng, gateway: &str, target: &str) -> Vec<Value> {
    let mut ms = rng.random_range(0.8..3.0);
    let mut hops = vec![json!({"hop": 1, "address": gateway, "ms": round1(ms)})];
    let n = rng.random_range(5..10);
    for i in 2..n {
        ms += rng.random_range(0.5..6.0);
        let address = if i == 2 {
            format!("100.64.{}.1", rng.random_range(0..255))
        } else {
            format!(
                "193.252.{}.{}",
                rng.random_range(0..255),
                rng.random_range(1..255)
            )
        };
        hops.push(json!({"hop": i, "address": address, "ms": round1(ms)}));
    }
    ms += rng.random_range(1.0..8.0);
    hops.push(json!({"hop": n, "address": target, "ms": round1(ms)}));
    hops
}

/// Speed test result (Mbit/s down, up).
pub(crate) fn speeds(rng: &mut impl Rng) -> (f64, f64) {
    (
        round1(rng.random_range(80.0..940.0)),
        round1(rng.random_range(40.0..480.0)),
    )
}

const BACKGROUND: [(&str, u32); 22] = [
    ("app", 10),
    ("appv", 2),
    ("teams", 6),
    ("ap", 6),
    ("vpn", 4),
    ("wlan", 6),
    ("driver", 1),
    ("trace", 2),
    ("speed", 2),
    ("capture", 1),
    ("netprofile", 2),
    ("switch", 2),
    ("dhcp", 5),
    ("power", 6),
    ("wan", 1),
    ("tcpfail", 4),
    ("proc", 5),
    ("install", 3),
    ("verdict", 0),
    ("alert", 0),
    ("file", 6),
    ("fg", 6),
];

fn background_source(rng: &mut StdRng) -> &'static str {
    let total: u32 = BACKGROUND.iter().map(|(_, w)| w).sum();
    let mut x = rng.random_range(0..total);
    for (s, w) in BACKGROUND {
        if x < w {
            return s;
        }
        x -= w;
    }
    "app"
}

fn record(hostname: &str, at: DateTime<Utc>, id: String, body: Value) -> Record {
    Record {
        partition: hostname.to_owned(),
        ts: at.timestamp_millis(),
        id,
        body,
    }
}

/// An event of a machine's feed before it is numbered: time, source, severity, message,
/// details.
type FeedEvent = (DateTime<Utc>, &'static str, Severity, String, Value);

/// The events of an episode's start: the verdict change, the alert opening, the application's
/// verdict for SERVICE and, for a network verdict, the automatic traceroute (its `hops`).
fn opening_events(
    e: &Episode,
    id: &str,
    sev: Severity,
    title: &str,
    hops: Option<Vec<Value>>,
) -> Vec<FeedEvent> {
    let v = e.verdict.as_str();
    let cause = e.cause_text();
    let change = if sev == Severity::Info {
        Severity::Low
    } else {
        sev
    };
    let mut out = vec![
        (
            e.start,
            "verdict",
            change,
            format!("Verdict OK → {v} : {cause}"),
            json!({"from": "OK", "to": v, "cause": cause}),
        ),
        (
            e.start + Duration::seconds(20),
            "alert",
            sev,
            format!("Alerte {id} ouverte : {title}"),
            json!({"alert_id": id, "state": AlertState::Open, "severity": sev}),
        ),
    ];
    if e.verdict == Verdict::SERVICE {
        let exe = SERVICE_APPS[e.cause % SERVICE_APPS.len()];
        out.push((
            e.start + Duration::seconds(5),
            "appv",
            Severity::Medium,
            format!("{exe} : verdict OK → SERVICE ({cause})"),
            json!({"executable": exe, "from": "OK", "to": "SERVICE"}),
        ));
    }
    if let Some(hops) = hops {
        out.push((
            e.start + Duration::seconds(45),
            "trace",
            Severity::Info,
            format!(
                "Traceroute automatique sur incident vers 8.8.8.8 : {} sauts",
                hops.len()
            ),
            json!({"target": "8.8.8.8", "hops": hops, "trigger": "incident"}),
        ));
    }
    out
}

/// The events of an episode's end, `minutes` after its start: the application's verdict back
/// to OK for SERVICE, the verdict change, the alert resolving.
fn closing_events(e: &Episode, id: &str, minutes: i64) -> Vec<FeedEvent> {
    let v = e.verdict.as_str();
    let mut out = Vec::new();
    if e.verdict == Verdict::SERVICE {
        let exe = SERVICE_APPS[e.cause % SERVICE_APPS.len()];
        out.push((
            e.end + Duration::seconds(5),
            "appv",
            Severity::Info,
            format!("{exe} : verdict SERVICE → OK"),
            json!({"executable": exe, "from": "SERVICE", "to": "OK"}),
        ));
    }
    out.push((
        e.end,
        "verdict",
        Severity::Info,
        format!("Verdict {v} → OK après {}", minutes_text(minutes)),
        json!({"from": v, "to": "OK", "duration_min": minutes}),
    ));
    out.push((
        e.end + Duration::seconds(20),
        "alert",
        Severity::Info,
        format!("Alerte {id} résolue : retour à OK"),
        json!({"alert_id": id, "state": AlertState::Resolved}),
    ));
    out
}

fn minutes_text(min: i64) -> String {
    if min >= 60 {
        format!("{} h {:02} min", min / 60, min % 60)
    } else {
        format!("{min} min")
    }
}

pub fn seed(ctx: &SeedCtx) -> BoxFuture<'_, StoreResult<()>> {
    Box::pin(run(ctx))
}

/// The machines running the netdiag module, by index, each with the verdict the seed keeps
/// it in from a few hours before its end on (a dozen online machines are not OK right now,
/// one of each verdict at least).
fn machines(ctx: &SeedCtx) -> Vec<(usize, &MachineSeed, Option<Verdict>)> {
    let mut forced_k = 0usize;
    ctx.machines
        .iter()
        .filter(|m| m.modules.contains(&"netdiag"))
        .enumerate()
        .map(|(k, m)| {
            let forced = (m.online && forced_k < 12 && k % 2 == 0).then(|| {
                forced_k += 1;
                NON_OK[(forced_k - 1) % NON_OK.len()]
            });
            (k, m, forced)
        })
        .collect()
}

/// A machine's history as the seed draws it: its generator (which goes on with the
/// measurements), network context and episodes over `[start, end]`.
struct History<'a> {
    rng: StdRng,
    c: Ctx<'a>,
    eps: Vec<Episode>,
    start: DateTime<Utc>,
    end: DateTime<Utc>,
}

/// The history of machine `m`, kept in the `forced` verdict from a few hours before its
/// end to a quarter hour to three hours after it (drawn from a generator of its own, so the
/// seed's draws do not depend on it): the producers draw it again from the context the seed
/// had ([`SeedCtx::as_seeded`]) to end that episode then.
fn history<'a>(ctx: &SeedCtx, m: &'a MachineSeed, forced: Option<Verdict>) -> History<'a> {
    let mut rng = ctx.rng(&format!("netdiag/{}", m.hostname));
    let c = machine_ctx(&mut rng, m, ctx);
    let end = quarter(if m.online { ctx.now } else { m.last_seen_at });
    let start = ctx.start().min(end - Duration::days(1));
    let mut eps = episodes(&mut rng, start, end, forced);
    if let Some(e) = eps.last_mut().filter(|_| forced.is_some()) {
        let mut after = ctx.rng(&format!("netdiag-forced/{}", m.hostname));
        e.end = end + Duration::minutes(SAMPLE_MINUTES * after.random_range(1..=12));
    }
    History {
        rng,
        c,
        eps,
        start,
        end,
    }
}

/// The id of the alert of a machine's `n`th episode in the seed (from 0).
fn seeded_alert_id(hostname: &str, n: usize) -> String {
    format!("nd-{hostname}-{}", n + 1)
}

/// The id of the period record of a machine's `n`th episode in the seed (from 0).
fn period_id(n: usize) -> String {
    format!("p-{:04}", n + 1)
}

async fn run(ctx: &SeedCtx) -> StoreResult<()> {
    let tenant = ctx.tenant.id;
    let catalog = app_catalog(ctx.tenant.domain, tenant);
    let (mut measures, mut events, mut periods) = (Vec::new(), Vec::new(), Vec::new());
    let (mut alerts, mut states, mut apps, mut settings) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for (k, m, forced) in machines(ctx) {
        let History {
            mut rng,
            c,
            eps,
            start,
            end,
        } = history(ctx, m, forced);
        let first = quarter(start) + Duration::minutes(SAMPLE_MINUTES);

        // Raw measurements of the last hours; the periods carry the whole history.
        let mut t = quarter(end - Duration::hours(RAW_HOURS)).max(first);
        while t <= end {
            let ep = eps.iter().find(|e| e.start <= t && t < e.end);
            let mm = measurement(&mut rng, &c, t, ep);
            measures.push(record(
                &m.hostname,
                t,
                format!("m-{}", t.timestamp()),
                serde_json::to_value(mm).unwrap_or_default(),
            ));
            t += Duration::minutes(SAMPLE_MINUTES);
        }
        for (n, e) in eps.iter().enumerate() {
            periods.push(record(
                &m.hostname,
                e.start,
                period_id(n),
                serde_json::to_value(e.period(e.end <= end)).unwrap_or_default(),
            ));
        }

        // Current state.
        let current = eps.iter().position(|e| e.start <= end && end < e.end);
        let since = match current {
            Some(i) => eps[i].start,
            None => eps
                .iter()
                .rev()
                .find(|e| e.end <= end)
                .map(|e| e.end)
                .unwrap_or(first),
        };
        let state = State {
            hostname: m.hostname.clone(),
            verdict: current.map(|i| eps[i].verdict).unwrap_or(Verdict::OK),
            cause: current.map(|i| eps[i].cause_text().to_owned()),
            since,
            last_measure_at: end,
            first_measure_at: first,
            open_alert: current.map(|i| seeded_alert_id(&m.hostname, i)),
        };
        states.push((
            m.hostname.clone(),
            serde_json::to_value(state).unwrap_or_default(),
        ));

        // Alerts and the events of each period.
        let mut evs: Vec<FeedEvent> = Vec::new();
        for (n, e) in eps.iter().enumerate() {
            let id = seeded_alert_id(&m.hostname, n);
            let open = e.end > end;
            let minutes = ((if open { end } else { e.end }) - e.start).num_minutes();
            let sev = severity(e.verdict, minutes);
            let cause = e.cause_text();
            let title = alert_title(e.verdict, &m.hostname, cause);
            let hops = matches!(e.verdict, Verdict::WAN | Verdict::LAN | Verdict::INFRA)
                .then(|| trace_hops(&mut rng, &c.gateway, "8.8.8.8"));
            evs.extend(opening_events(e, &id, sev, &title, hops));
            if !open {
                evs.extend(closing_events(e, &id, minutes));
            }
            let alert = e.alert(&id, &m.hostname, sev, title, !open);
            alerts.push((id, serde_json::to_value(alert).unwrap_or_default()));
        }
        // Background events over the last week, denser over the last two days.
        let mut t = end - Duration::days(i64::from(ctx.days.min(7)));
        while t < end {
            let recent = t >= end - Duration::hours(48);
            t += Duration::minutes(if recent {
                rng.random_range(120..480)
            } else {
                rng.random_range(480..1800)
            });
            if t >= end {
                break;
            }
            let source = background_source(&mut rng);
            let (sev, msg, details) = event(&mut rng, &c, source);
            evs.push((t, source, sev, msg, details));
        }
        evs.sort_by_key(|e| e.0);
        for (i, (at, source, sev, message, details)) in
            evs.into_iter().filter(|e| e.0 <= end).enumerate()
        {
            let id = format!("ev-{}-{:06}", m.id, i + 1);
            let body = json!({"id": id, "at": at, "source": source, "severity": sev, "message": message, "details": details});
            events.push(record(&m.hostname, at, id, body));
        }

        // Followed applications: Teams and Outlook everywhere, two more per machine, with
        // hourly load figures over the last three days.
        let mut defs: Vec<AppDef> = catalog[..2].to_vec();
        let mut extra: Vec<usize> = (2..catalog.len()).collect();
        for _ in 0..2 {
            let i = extra.remove(rng.random_range(0..extra.len()));
            defs.push(catalog[i].clone());
        }
        let app_from =
            hour(end - Duration::hours(APP_HOURS.min(24 * i64::from(ctx.days)))).max(hour(first));
        let hours = (end - app_from).num_hours().max(0) as usize + 1;
        let leaky = rng.random_bool(0.35);
        for (ai, def) in defs.iter_mut().enumerate() {
            let base_mem: f64 = rng.random_range(120.0..650.0);
            let base_cpu: f64 = rng.random_range(0.5..9.0);
            let mut hourly = AppHourly {
                start: app_from,
                ..AppHourly::default()
            };
            for h in 0..hours {
                let growth = if leaky && ai == 0 {
                    1.0 + 0.8 * h as f64 / hours as f64
                } else {
                    1.0
                };
                // Office hours (Paris, near enough) are busier.
                let local_hour = (app_from.timestamp() / 3600 + h as i64 + 1).rem_euclid(24);
                let office = (8..18).contains(&local_hour) && local_hour != 12;
                hourly.cpu_pct.push(round1(
                    base_cpu
                        * if office {
                            rng.random_range(1.0..2.2)
                        } else {
                            rng.random_range(0.2..0.7)
                        },
                ) as f32);
                hourly
                    .memory_mb
                    .push(round1(base_mem * growth * rng.random_range(0.94..1.06)) as f32);
            }
            for _ in &def.probes {
                let base: f64 = rng.random_range(15.0..80.0);
                hourly.probe_ms.push(
                    (0..hours)
                        .map(|_| Some(round1(base * rng.random_range(0.8..1.3)) as f32))
                        .collect(),
                );
            }
            def.hourly = Some(hourly);
        }
        apps.push((m.hostname.clone(), json!({ "apps": defs })));

        if k % 5 == 1 {
            let s = Settings {
                apps: defs.iter().map(|d| d.executable.clone()).collect(),
                extra_probes: vec![format!("erp.{}:443", ctx.tenant.domain)],
                capture_on_incident: true,
                ..Settings::default()
            };
            settings.push((
                m.hostname.clone(),
                serde_json::to_value(s).unwrap_or_default(),
            ));
        }
    }
    let stores = &ctx.stores;
    stores
        .series_writes
        .append(tenant, MEASURES, measures)
        .await?;
    stores
        .series_writes
        .append(tenant, PERIODS, periods)
        .await?;
    stores.series_writes.append(tenant, EVENTS, events).await?;
    stores.docs.put(tenant, ALERTS, alerts).await?;
    stores.docs.put(tenant, STATES, states).await?;
    stores.docs.put(tenant, APPS, apps).await?;
    stores.docs.put(tenant, SETTINGS, settings).await?;
    Ok(())
}
