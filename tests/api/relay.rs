//! The site relay (`netops-relay`, relay/) in front of the real `netops serve`: syslog sent
//! with util-linux `logger` through the relay becomes firewall events; flows exported to the
//! relay are taken in as `gateway-flow`, and softflowd's export of a capture shows in the
//! gateway views with its byte counts. The relay binary is
//! built by `cargo build --workspace --bins` (tests/run.sh) beside `netops`.

use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use chrono::Utc;

use crate::serve::get_json;
use crate::serve::served::{Serve, Served, create_token};
use crate::shipper::{cef, fortigate, wait_for_events};

#[path = "../../relay/tests/common/mod.rs"]
mod relay_kit;

use relay_kit::{
    FlowSpec, Ports, Relay, SITE_CAPTURE, interleaved, ipfix_message, logger, softflowd, write_pcap,
};

fn relay_bin() -> PathBuf {
    let bin = std::path::Path::new(env!("CARGO_BIN_EXE_netops")).with_file_name("netops-relay");
    assert!(
        bin.exists(),
        "{} is missing: cargo build -p netops-relay",
        bin.display()
    );
    bin
}

/// A relay toward `served` with a collect credential of `scopes`, naming `device` the
/// sender 127.0.0.1.
fn start_relay(served: &Served, dir: &std::path::Path, scopes: &str, device: &str) -> Relay {
    let token = create_token(&served.db, &["--name", "site-relay", "--scopes", scopes]);
    let ports = Ports::free();
    let tuning = "[tuning]\nflush_ms = 100\nstatus_secs = 1\nmax_backoff_secs = 1\n";
    let config = Relay::config(dir, &served.base, &token, &ports, tuning);
    // The sender's device: the firewall of the inventory the lines are about.
    let text = std::fs::read_to_string(&config)
        .expect("config")
        .replace("SITE-FW-01", device);
    std::fs::write(&config, text).expect("config");
    Relay::start(&relay_bin(), dir, &config, ports)
}

#[tokio::test]
async fn syslog_sent_with_logger_through_the_relay_becomes_firewall_events() {
    let served = Serve::seeded().env("NETOPS_NO_LIVE", "1").start();
    let (status, devices) = get_json(&served, "/firewall/devices").await;
    assert_eq!(status, 200);
    let device = devices["data"][0]["name"]
        .as_str()
        .expect("a firewall")
        .to_owned();
    let dir = tempfile::tempdir().expect("dir");
    let relay = start_relay(&served, dir.path(), "collect:firewall", &device);
    let now = Utc::now();
    // The bodies the firewall sends; logger puts its own header in front (the sender's host
    // name, which the relay replaces with the configured device).
    let body = |line: String| {
        line.split_once(&format!(" {device} "))
            .map(|(_, b)| b.to_owned())
            .expect("a body after the host")
    };
    let vpn = body(fortigate(
        &device,
        now - chrono::Duration::seconds(5),
        "ssl-login-fail",
        "relay.user",
    ));
    let ids = body(cef(&device, now - chrono::Duration::seconds(4), 4390));
    let (udp, tcp) = (relay.ports.syslog_udp, relay.ports.syslog_tcp);
    // RFC 5424 both: logger's RFC 3164 puts its tag (`root: `) before the body, which the
    // API's CEF parser then takes for the host (the relay's own tests cover RFC 3164).
    logger(udp, &["--udp", "--rfc5424"], &vpn);
    logger(tcp, &["--tcp", "--rfc5424", "--octet-count"], &ids);
    // Each wait is 3 s; a loaded machine may take longer.
    let mut events = Vec::new();
    for _ in 0..5 {
        events = wait_for_events(&served, "relay.user", 4390, 2).await;
        if events.len() == 2 {
            break;
        }
    }
    assert_eq!(
        events.len(),
        2,
        "{events:?}\n{}\n{}",
        relay.status(),
        relay.stderr()
    );
    let fortigate = events
        .iter()
        .find(|e| e["account"] == "relay.user")
        .expect("the FortiGate event");
    assert_eq!(fortigate["format"], "fortigate");
    assert_eq!(fortigate["category"], "vpn");
    let intrusion = events
        .iter()
        .find(|e| e["format"] == "cef")
        .expect("the CEF event");
    assert_eq!(intrusion["dst_port"], 4390);
    assert_eq!(intrusion["action"], "blocked");
    let status = relay.stop();
    assert_eq!(status["forwarded"]["lines"], 2, "{status}");
    assert_eq!(status["dropped"]["refused_by_api"], 0, "{status}");
}

/// `/flows/destinations` of the gateways over 24 hours: remote address -> (bytes, flows).
async fn gateway_destinations(served: &Served) -> std::collections::HashMap<String, (u64, u64)> {
    let (status, body) = get_json(
        served,
        "/flows/destinations?source=gateway&period=24h&limit=500",
    )
    .await;
    assert_eq!(status, 200, "{body}");
    body["data"]
        .as_array()
        .expect("data")
        .iter()
        .map(|d| {
            (
                d["remote_ip"].as_str().unwrap_or_default().to_owned(),
                (
                    d["bytes"].as_u64().unwrap_or(0),
                    d["flows"].as_u64().unwrap_or(0),
                ),
            )
        })
        .collect()
}

/// Also the relay's own decoding of many records in one message, test-built (softflowd sends
/// a handful): 40 flows toward one more address.
#[tokio::test]
async fn softflowd_exports_a_capture_through_the_relay_into_the_gateway_views() {
    let served = Serve::seeded().env("NETOPS_NO_LIVE", "1").start();
    let (_, devices) = get_json(&served, "/firewall/devices").await;
    let device = devices["data"][0]["name"].as_str().expect("a firewall");
    let dir = tempfile::tempdir().expect("dir");
    let relay = start_relay(&served, dir.path(), "collect:flows", device);
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as u32)
        .unwrap_or(0);
    write_pcap(
        &dir.path().join("site.pcap"),
        now - 120,
        &interleaved(&SITE_CAPTURE),
    );
    softflowd(dir.path(), "site.pcap", "10", relay.ports.flow);
    let now_ms = u64::from(now) * 1000;
    let records: Vec<FlowSpec> = (0..40u64)
        .map(|i| FlowSpec {
            src: [10, 77, 1, 5],
            dst: [198, 18, 8, 1],
            sport: 40_000 + i as u16,
            dport: 443,
            proto: 6,
            bytes: 10_000 + i,
            packets: 10,
            start_ms: now_ms - 60_000,
            end_ms: now_ms - 30_000,
        })
        .collect();
    let socket = std::net::UdpSocket::bind("127.0.0.1:0").expect("socket");
    let msg = ipfix_message(1, 1, true, &records, now);
    socket
        .send_to(&msg, ("127.0.0.1", relay.ports.flow))
        .expect("send");
    let lines = SITE_CAPTURE.len() as u64 + 40;
    let status = relay.wait_status("/forwarded/lines", lines, Duration::from_secs(15));
    assert_eq!(
        status["forwarded"]["lines"],
        lines,
        "{status}\n{}",
        relay.stderr()
    );
    assert_eq!(status["dropped"]["refused_by_api"], 0, "{status}");
    let destinations = gateway_destinations(&served).await;
    assert_eq!(
        destinations.get("198.18.8.1"),
        Some(&((0..40).map(|i| 10_000 + i).sum(), 40)),
        "{destinations:?}"
    );
    for (_, dst, _, _, _, sizes) in SITE_CAPTURE {
        let dst = std::net::Ipv4Addr::from(dst).to_string();
        let bytes: u64 = sizes.iter().map(|s| u64::from(*s)).sum();
        assert_eq!(
            destinations.get(&dst),
            Some(&(bytes, 1)),
            "{dst}: {destinations:?}"
        );
        let (status, body) = get_json(
            &served,
            &format!(
                "/flows/explore?dims=interne&source=gateway&period=24h&filter=externe%20%3D%20{dst}"
            ),
        )
        .await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(
            body["data"]["total"].as_f64(),
            Some(bytes as f64),
            "{dst}: {body}"
        );
    }
    relay.stop();
}
