//! The relay's benchmark (bench/relay.sh, bench/relay-results.md): a paced sender of IPFIX
//! flow records and syslog lines over UDP into a `netops-relay` process, forwarding to the
//! counting stub of the collection API. Prints one JSON object: rates asked and delivered,
//! the relay's CPU and peak RSS, and the compressed bytes a record takes in the buffer.
//!
//! `relay_bench RELAY_BIN SECONDS FLOWS_PER_S SYSLOG_PER_S`

#[path = "../tests/common/mod.rs"]
mod common;

use std::net::UdpSocket;
use std::path::Path;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use common::{FlowSpec, Ports, Relay, Stub, ipfix_message};

/// Records per IPFIX message: 30 of 45 bytes fit a 1,400-byte datagram.
const PER_MESSAGE: u64 = 30;

fn arg(n: usize) -> String {
    std::env::args().nth(n).unwrap_or_default()
}

/// Sends `total` units at `rate` a second, `send(i)` sending unit `i` (and maybe more).
fn paced(rate: u64, seconds: u64, step: u64, mut send: impl FnMut(u64)) -> u64 {
    if rate == 0 {
        return 0;
    }
    let started = Instant::now();
    let total = rate * seconds;
    let mut sent = 0;
    while sent < total {
        let due = (started.elapsed().as_secs_f64() * rate as f64) as u64;
        while sent < due.min(total) {
            send(sent);
            sent += step;
        }
        std::thread::sleep(Duration::from_micros(500));
    }
    sent
}

/// utime + stime of `pid`, in seconds, and its peak RSS in KiB.
fn usage(pid: u32) -> (f64, u64) {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, r)| r.split_whitespace().collect())
        .unwrap_or_default();
    let ticks: f64 = [11, 12]
        .iter()
        .filter_map(|i| fields.get(*i).and_then(|v| v.parse::<f64>().ok()))
        .sum();
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let hwm = status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    (ticks / 100.0, hwm)
}

#[tokio::main]
async fn main() {
    let bin = arg(1);
    let seconds: u64 = arg(2).parse().unwrap_or(20);
    let flow_rate: u64 = arg(3).parse().unwrap_or(20_000);
    let syslog_rate: u64 = arg(4).parse().unwrap_or(20_000);
    let stub = Stub::start(0, None).await;
    let dir = tempfile::tempdir().expect("dir");
    let ports = Ports::free();
    let (flow_port, syslog_port) = (ports.flow, ports.syslog_udp);
    let config = Relay::config(
        dir.path(),
        &stub.base(),
        "nop_bench",
        &ports,
        "[tuning]\nstatus_secs = 1\n",
    );
    let relay = Relay::start(Path::new(&bin), dir.path(), &config, ports);
    let pid = relay.child.id();
    let (cpu_before, _) = usage(pid);
    let started = Instant::now();

    let flows = std::thread::spawn(move || {
        let socket = UdpSocket::bind("127.0.0.1:0").expect("socket");
        let now_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_millis() as u64)
            .unwrap_or(0);
        let mut seq = 0u32;
        paced(flow_rate, seconds, PER_MESSAGE, |i| {
            let records: Vec<FlowSpec> = (i..i + PER_MESSAGE)
                .map(|n| FlowSpec {
                    src: [10, (n >> 16) as u8, (n >> 8) as u8, n as u8],
                    dst: [203, 0, 113, (n % 250) as u8],
                    sport: 1024 + (n % 60_000) as u16,
                    dport: 443,
                    proto: 6,
                    bytes: 1_000 + n % 100_000,
                    packets: 1 + n % 90,
                    start_ms: now_ms + n / 20,
                    end_ms: now_ms + n / 20 + 1_500,
                })
                .collect();
            // The template every 100 messages, as exporters resend it.
            let msg = ipfix_message(
                1,
                seq,
                seq.is_multiple_of(100),
                &records,
                (now_ms / 1000) as u32,
            );
            seq += 1;
            let _ = socket.send_to(&msg, ("127.0.0.1", flow_port));
        })
    });
    let syslog = std::thread::spawn(move || {
        let socket = UdpSocket::bind("127.0.0.1:0").expect("socket");
        paced(syslog_rate, seconds, 1, |i| {
            let line = format!(
                "<189>Nov 29 01:02:03 FW-{} date=2026-11-29 time=01:02:03 devname=\"FW-{}\" \
                 logid=\"0000000013\" type=\"traffic\" subtype=\"forward\" level=\"notice\" \
                 srcip=10.1.{}.{} srcport={} dstip=203.0.113.9 dstport=443 proto=6 \
                 action=\"accept\" policyid=12 sentbyte={} rcvdbyte={} sessionid={i}",
                i % 4,
                i % 4,
                (i >> 8) % 256,
                i % 256,
                1024 + i % 60_000,
                i % 100_000,
                i % 70_000
            );
            let _ = socket.send_to(line.as_bytes(), ("127.0.0.1", syslog_port));
        })
    });
    let flows_sent = flows.join().unwrap_or(0);
    let syslog_sent = syslog.join().unwrap_or(0);
    let send_secs = started.elapsed().as_secs_f64();
    // Everything delivered, or 15 s more at most.
    let deadline = Instant::now() + Duration::from_secs(15);
    let mut last_change = Instant::now();
    let mut last = (0, 0);
    loop {
        let got = {
            let t = stub.lock();
            (t.count("gateway-flow"), t.count("firewall-syslog"))
        };
        if got != last {
            last = got;
            last_change = Instant::now();
        }
        if (got.0 as u64 >= flows_sent && got.1 as u64 >= syslog_sent) || Instant::now() > deadline
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let delivered_secs = (last_change - started).as_secs_f64();
    let (cpu_after, peak_rss_kib) = usage(pid);
    let status = relay.stop();
    let (wire_flows, wire_syslog) = {
        let t = stub.lock();
        (
            t.wire_bytes.get("gateway-flow").copied().unwrap_or(0),
            t.wire_bytes.get("firewall-syslog").copied().unwrap_or(0),
        )
    };
    let per = |bytes: u64, n: usize| if n == 0 { 0.0 } else { bytes as f64 / n as f64 };
    println!(
        "{}",
        serde_json::json!({
            "seconds": seconds,
            "asked_per_s": { "flows": flow_rate, "syslog": syslog_rate },
            "sent": { "flows": flows_sent, "syslog": syslog_sent, "secs": send_secs },
            "delivered": { "flows": last.0, "syslog": last.1, "secs": delivered_secs },
            "delivered_per_s": {
                "flows": last.0 as f64 / delivered_secs.max(send_secs),
                "syslog": last.1 as f64 / delivered_secs.max(send_secs),
            },
            "relay_cpu_cores": (cpu_after - cpu_before) / delivered_secs.max(send_secs),
            "relay_peak_rss_mib": peak_rss_kib as f64 / 1024.0,
            "compressed_bytes_per_record": { "flows": per(wire_flows, last.0), "syslog": per(wire_syslog, last.1) },
            "relay_counters": status,
        })
    );
}
