//! What the product derives from an agent's measurements (docs/collect.md#netdiag-measurement):
//! the verdict and its cause, and the alert of a non-OK episode (its title and its severity,
//! which grows with its length). The demo generator uses the same titles and severities.

use crate::model::{LinkKind, Measurement, ProbeKind, Severity, Verdict};

/// Gateway packet loss (%) from which the local network is at fault.
pub const LAN_LOSS_PCT: f64 = 5.0;
/// Gateway round trip (ms) from which the local network is at fault.
pub const LAN_GATEWAY_MS: f64 = 80.0;
/// Wi-Fi signal (dBm) at or below which a local-network verdict blames the signal.
pub const WEAK_SIGNAL_DBM: i32 = -75;
/// Gateway packet loss (%) from which the site's network equipment is at fault.
pub const INFRA_LOSS_PCT: f64 = 2.0;
/// Gateway round trip (ms) without loss from which the computer itself is slow.
pub const PC_GATEWAY_MS: f64 = 50.0;
/// Internet packet loss (%) from which the Internet access is at fault.
pub const WAN_LOSS_PCT: f64 = 10.0;
/// Internet round trip (ms) from which the Internet access is at fault.
pub const WAN_MS: f64 = 300.0;
/// DNS resolution time (ms) from which resolution is at fault.
pub const DNS_MS: f64 = 1000.0;

/// The verdict of a measurement and its cause (French, with the values measured), checked
/// from the computer outwards: the link (PC), the local network (LAN), the computer's own
/// slowness (PC), the site's equipment (INFRA), the Internet access (WAN), name resolution
/// (DNS), then the services probed (SERVICE); `OK` when nothing is at fault.
pub fn classify(m: &Measurement) -> (Verdict, Option<String>) {
    let (verdict, cause) = fault(m);
    (verdict, (verdict != Verdict::OK).then_some(cause))
}

fn fault(m: &Measurement) -> (Verdict, String) {
    if !m.link.connected {
        let what = match m.link.kind {
            LinkKind::Wifi => "Wi-Fi",
            LinkKind::Ethernet => "Ethernet",
        };
        return (
            Verdict::PC,
            format!("Poste déconnecté du réseau ({what}, {})", m.link.adapter),
        );
    }
    let (loss_gw, gw) = (m.loss_pct.gateway, m.latency_ms.gateway);
    if loss_gw >= LAN_LOSS_PCT || gw.is_none_or(|ms| ms >= LAN_GATEWAY_MS) {
        let cause = match (&m.wireless, gw) {
            (Some(w), _) if w.signal_dbm <= WEAK_SIGNAL_DBM => {
                format!("Signal Wi-Fi faible ({} dBm)", w.signal_dbm)
            }
            _ if loss_gw >= LAN_LOSS_PCT => {
                format!("Perte de paquets vers la passerelle ({loss_gw} %)")
            }
            (_, Some(ms)) => format!("Passerelle lente à répondre ({ms} ms)"),
            (_, None) => "Passerelle sans réponse".to_owned(),
        };
        return (Verdict::LAN, cause);
    }
    let gw = gw.unwrap_or_default();
    if loss_gw == 0.0 && gw >= PC_GATEWAY_MS {
        return (
            Verdict::PC,
            format!("Poste lent : passerelle à {gw} ms sans perte de paquets"),
        );
    }
    if loss_gw >= INFRA_LOSS_PCT {
        return (
            Verdict::INFRA,
            format!("Réseau du site dégradé : {loss_gw} % de pertes vers la passerelle ({gw} ms)"),
        );
    }
    let loss_net = m.loss_pct.internet;
    match m.latency_ms.internet {
        _ if loss_net >= WAN_LOSS_PCT => {
            return (
                Verdict::WAN,
                format!("Perte de paquets vers Internet ({loss_net} %)"),
            );
        }
        None => return (Verdict::WAN, "Internet injoignable".to_owned()),
        Some(ms) if ms >= WAN_MS => {
            return (Verdict::WAN, format!("Latence Internet élevée ({ms} ms)"));
        }
        Some(_) => {}
    }
    let dns_failed = m.probes.iter().find(|p| p.kind == ProbeKind::Dns && !p.ok);
    if let Some(p) = dns_failed {
        let why = p.error.as_deref().unwrap_or("échec");
        return (
            Verdict::DNS,
            format!("Résolution DNS en échec ({}, {why})", p.target),
        );
    }
    match m.latency_ms.dns {
        None => return (Verdict::DNS, "Résolveur DNS sans réponse".to_owned()),
        Some(ms) if ms >= DNS_MS => {
            return (Verdict::DNS, format!("Résolution DNS lente ({ms} ms)"));
        }
        Some(_) => {}
    }
    if let Some(p) = m.probes.iter().find(|p| !p.ok) {
        let why = p.error.as_deref().unwrap_or("échec");
        return (Verdict::SERVICE, format!("{} : {why}", p.target));
    }
    (Verdict::OK, String::new())
}

/// Alert title (French) of a verdict.
pub fn alert_title(v: Verdict, hostname: &str, cause: &str) -> String {
    let what = match v {
        Verdict::OK => "Retour à la normale",
        Verdict::PC => "Problème sur le poste",
        Verdict::LAN => "Problème de réseau local",
        Verdict::INFRA => "Incident d'infrastructure réseau",
        Verdict::WAN => "Panne d'accès Internet (WAN)",
        Verdict::DNS => "Échec de résolution DNS",
        Verdict::SERVICE => "Service applicatif dégradé",
    };
    format!("{what} sur {hostname} : {cause}")
}

/// Severity of the alert of an episode of `v` lasting `minutes` so far.
pub fn severity(v: Verdict, minutes: i64) -> Severity {
    if minutes < 45 {
        return Severity::Info;
    }
    match v {
        Verdict::WAN if minutes >= 120 => Severity::Critical,
        Verdict::WAN | Verdict::INFRA => Severity::High,
        Verdict::SERVICE if minutes >= 180 => Severity::High,
        Verdict::DNS if minutes >= 150 => Severity::High,
        Verdict::LAN | Verdict::DNS | Verdict::SERVICE => Severity::Medium,
        Verdict::PC | Verdict::OK => Severity::Low,
    }
}

#[cfg(test)]
mod tests {
    use chrono::Utc;

    use super::*;
    use crate::model::{Latencies, Link, Loss, ProbeResult, Wireless};

    /// A healthy Wi-Fi measurement with a DNS and an HTTP probe.
    fn healthy() -> Measurement {
        let probe = |target: &str, kind| ProbeResult {
            target: target.into(),
            kind,
            ok: true,
            ms: Some(20.0),
            error: None,
        };
        Measurement {
            at: Utc::now(),
            verdict: Verdict::OK,
            cause: None,
            link: Link {
                kind: LinkKind::Wifi,
                connected: true,
                speed_mbps: 866,
                adapter: "AX201".into(),
            },
            wireless: Some(Wireless {
                ssid: "ACME".into(),
                signal_dbm: -60,
                band: "5 GHz".into(),
                channel: 36,
                access_point: "AP-1".into(),
                bssid: "f0:9f:c2:11:22:33".into(),
            }),
            latency_ms: Latencies {
                gateway: Some(4.0),
                dns: Some(12.0),
                internet: Some(25.0),
            },
            loss_pct: Loss {
                gateway: 0.0,
                internet: 0.0,
            },
            probes: vec![
                probe("acme.local", ProbeKind::Dns),
                probe("teams.microsoft.com:443", ProbeKind::Http),
            ],
        }
    }

    /// What goes wrong in a measurement.
    type Fault = fn(&mut Measurement);

    fn failed(m: &mut Measurement, i: usize, error: &str) {
        m.probes[i].ok = false;
        m.probes[i].ms = None;
        m.probes[i].error = Some(error.into());
    }

    #[test]
    fn each_fault_gives_its_verdict_from_the_computer_outwards() {
        assert_eq!(classify(&healthy()), (Verdict::OK, None));
        let cases: [(Fault, Verdict, &str); 9] = [
            (|m| m.link.connected = false, Verdict::PC, "déconnecté"),
            (
                |m| {
                    m.loss_pct.gateway = 12.0;
                    if let Some(w) = m.wireless.as_mut() {
                        w.signal_dbm = -80;
                    }
                },
                Verdict::LAN,
                "-80 dBm",
            ),
            (|m| m.loss_pct.gateway = 12.0, Verdict::LAN, "12 %"),
            (|m| m.latency_ms.gateway = Some(65.0), Verdict::PC, "65 ms"),
            (
                |m| {
                    m.loss_pct.gateway = 3.0;
                    m.latency_ms.gateway = Some(40.0);
                },
                Verdict::INFRA,
                "3 %",
            ),
            (|m| m.loss_pct.internet = 18.0, Verdict::WAN, "18 %"),
            (
                |m| m.latency_ms.internet = Some(420.0),
                Verdict::WAN,
                "420 ms",
            ),
            (|m| failed(m, 0, "SERVFAIL"), Verdict::DNS, "SERVFAIL"),
            (|m| failed(m, 1, "HTTP 503"), Verdict::SERVICE, "HTTP 503"),
        ];
        for (fault, verdict, said) in cases {
            let mut m = healthy();
            fault(&mut m);
            let (v, cause) = classify(&m);
            assert_eq!(v, verdict, "{cause:?}");
            assert!(
                cause.as_deref().is_some_and(|c| c.contains(said)),
                "{cause:?}"
            );
        }
    }

    #[test]
    fn alerts_grow_more_severe_as_they_last() {
        assert_eq!(severity(Verdict::WAN, 30), Severity::Info);
        assert_eq!(severity(Verdict::WAN, 60), Severity::High);
        assert_eq!(severity(Verdict::WAN, 120), Severity::Critical);
        assert_eq!(severity(Verdict::PC, 600), Severity::Low);
    }
}
