//! The relay as a site runs it: real senders (util-linux `logger`, `softflowd` reading a
//! capture made here) into the `netops-relay` binary, forwarding to a counting stub of the
//! collection API; bad input, outages, a `kill -9`.

mod common;

use std::net::{TcpStream, UdpSocket};
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use common::{
    FlowSpec, Ports, Relay, SITE_CAPTURE, Stub, interleaved, ipfix_message, logger, softflowd,
    write_pcap,
};
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_netops-relay");
const WAIT: Duration = Duration::from_secs(15);
/// Quick batches and status lines, short backoff: the tests wait seconds, not minutes.
const FAST: &str = "[tuning]\nflush_ms = 100\nstatus_secs = 1\nmax_backoff_secs = 1\nmax_line_bytes = 2048\nstop_grace_secs = 5\n";

fn start(dir: &Path, stub: &Stub, ports: Ports) -> Relay {
    let config = Relay::config(dir, &stub.base(), "nop_test", &ports, FAST);
    Relay::start(Path::new(BIN), dir, &config, ports)
}

fn now_secs() -> u32 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as u32)
        .unwrap_or(0)
}

fn dropped(status: &Value, why: &str) -> u64 {
    status["dropped"][why].as_u64().unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn logger_syslog_over_udp_and_tcp_arrives_once_with_the_mapped_device_as_host() {
    let stub = Stub::start(0, None).await;
    let dir = tempfile::tempdir().expect("dir");
    let ports = Ports::free();
    let (udp, tcp) = (ports.syslog_udp, ports.syslog_tcp);
    let relay = start(dir.path(), &stub, ports);
    let cases: [(&[&str], &str); 4] = [
        (&["--udp", "--rfc3164"], "udp-3164"),
        (&["--udp", "--rfc5424"], "udp-5424"),
        (&["--tcp", "--rfc3164"], "tcp-3164-newline"),
        (&["--tcp", "--rfc5424", "--octet-count"], "tcp-5424-octets"),
    ];
    for (args, name) in cases {
        let port = if args[0] == "--udp" { udp } else { tcp };
        logger(
            port,
            args,
            &format!("CEF:0|Vendor|Box|1|id|{name}|5|src=10.0.0.1"),
        );
    }
    let lines = stub.wait_for("firewall-syslog", 4, WAIT).await;
    assert_eq!(lines.len(), 4, "{lines:?}\n{}", relay.stderr());
    for (_, name) in cases {
        let line = lines
            .iter()
            .find(|l| l.contains(name))
            .unwrap_or_else(|| panic!("{name} not in {lines:?}"));
        // RFC 3164 shape, the configured device as host, the message kept.
        assert!(line.starts_with('<'), "{line}");
        assert!(line.contains(" SITE-FW-01 "), "{line}");
        assert!(line.ends_with(&format!("|{name}|5|src=10.0.0.1")), "{line}");
    }
    assert_eq!(stub.lock().content_type, "text/plain");
    assert_eq!(stub.lock().content_encoding, "gzip");
    let status = relay.stop();
    assert_eq!(status["received"]["syslog_lines"], 4, "{status}");
    assert_eq!(status["forwarded"]["lines"], 4, "{status}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_is_counted_and_dropped_with_its_reason_and_the_relay_goes_on() {
    let stub = Stub::start(0, None).await;
    let dir = tempfile::tempdir().expect("dir");
    let ports = Ports::free();
    let (udp, tcp, flow) = (ports.syslog_udp, ports.syslog_tcp, ports.flow);
    let relay = start(dir.path(), &stub, ports);
    let socket = UdpSocket::bind("127.0.0.1:0").expect("socket");
    let send = |port: u16, data: &[u8]| {
        socket.send_to(data, ("127.0.0.1", port)).expect("send");
    };
    let spec = FlowSpec {
        src: [10, 0, 0, 5],
        dst: [203, 0, 113, 9],
        sport: 51_234,
        dport: 443,
        proto: 6,
        bytes: 1_000,
        packets: 3,
        start_ms: u64::from(now_secs()) * 1000 - 5_000,
        end_ms: u64::from(now_secs()) * 1000,
    };
    // Flows: garbage, a truncated IPFIX message, an unknown version, a v9 header cut short,
    // and two data sets before their template (domains 7 and 8: templates are per domain).
    send(flow, b"\x00");
    let whole = ipfix_message(1, 1, true, &[spec], now_secs());
    send(flow, &whole[..whole.len() - 7]);
    send(flow, &[0x00, 0x63, 0, 0, 0, 0, 0, 0]);
    send(flow, &[0x00, 0x09, 0x00, 0x01]);
    send(flow, &ipfix_message(7, 1, false, &[spec], now_secs()));
    send(flow, &ipfix_message(8, 1, false, &[spec, spec], now_secs()));
    // A template of domain 7 then its data: the domain 8 template is still unknown.
    send(flow, &ipfix_message(7, 2, true, &[], now_secs()));
    send(flow, &ipfix_message(7, 3, false, &[spec], now_secs()));
    send(flow, &ipfix_message(8, 2, false, &[spec], now_secs()));
    // Syslog: binary garbage and an oversized message over UDP, then over TCP garbage, an
    // oversized octet-counted frame, an oversized newline-ended line, and a good line.
    send(udp, &[0xff, 0x00, 0xfe, 0x01, 0x80]);
    send(udp, &vec![b'a'; 3_000]);
    let mut stream = TcpStream::connect(("127.0.0.1", tcp)).expect("tcp");
    use std::io::Write;
    stream
        .write_all(b"\x00\x01\x02garbage\xff\n")
        .expect("write");
    stream.write_all(b"5000 ").expect("write");
    stream.write_all(&vec![b'x'; 5_000]).expect("write");
    stream.write_all(&vec![b'y'; 4_000]).expect("write");
    stream
        .write_all(b"\n<13>Nov 29 01:02:03 fw still-alive\n")
        .expect("write");
    drop(stream);

    let lines = stub.wait_for("firewall-syslog", 1, WAIT).await;
    assert_eq!(lines, ["<13>Nov 29 01:02:03 SITE-FW-01 still-alive"]);
    let flows = stub.wait_for("gateway-flow", 1, WAIT).await;
    assert_eq!(flows.len(), 1, "{flows:?}");
    let flow: Value = serde_json::from_str(&flows[0]).expect("NDJSON");
    assert_eq!(flow["bytes"], 1_000);
    assert_eq!(flow["device"], "SITE-FW-01");
    let status = relay.stop();
    assert_eq!(dropped(&status, "malformed"), 4, "{status}");
    assert_eq!(dropped(&status, "no_template"), 3, "{status}");
    assert_eq!(dropped(&status, "binary"), 2, "{status}");
    assert_eq!(dropped(&status, "oversized"), 3, "{status}");
    assert_eq!(status["received"]["flow_datagrams"], 9, "{status}");
    assert_eq!(status["forwarded"]["lines"], 2, "{status}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn softflowd_ipfix_netflow_v9_and_v5_arrive_with_their_byte_counts() {
    let stub = Stub::start(0, None).await;
    let dir = tempfile::tempdir().expect("dir");
    let ports = Ports::free();
    let flow = ports.flow;
    let relay = start(dir.path(), &stub, ports);
    let pcap = dir.path().join("site.pcap");
    write_pcap(&pcap, now_secs() - 60, &interleaved(&SITE_CAPTURE));
    for version in ["5", "9", "10"] {
        softflowd(dir.path(), "site.pcap", version, flow);
    }
    let lines = stub
        .wait_for("gateway-flow", 3 * SITE_CAPTURE.len(), WAIT)
        .await;
    assert_eq!(
        lines.len(),
        3 * SITE_CAPTURE.len(),
        "{lines:?}\n{}",
        relay.stderr()
    );
    let flows: Vec<Value> = lines
        .iter()
        .map(|l| serde_json::from_str(l).expect("NDJSON"))
        .collect();
    for (src, dst, proto, sport, dport, sizes) in SITE_CAPTURE {
        let src = std::net::Ipv4Addr::from(src).to_string();
        let dst = std::net::Ipv4Addr::from(dst).to_string();
        let matching: Vec<&Value> = flows.iter().filter(|f| f["src_ip"] == src).collect();
        // One record from each export: NetFlow v5, NetFlow v9, IPFIX.
        assert_eq!(matching.len(), 3, "{src}: {flows:?}");
        for f in matching {
            assert_eq!(f["dst_ip"], dst);
            assert_eq!(f["protocol"], proto);
            assert_eq!(f["src_port"], sport);
            assert_eq!(f["dst_port"], dport);
            assert_eq!(f["packets"], sizes.len());
            assert_eq!(
                f["bytes"],
                sizes.iter().map(|s| u64::from(*s)).sum::<u64>(),
                "{f}"
            );
            assert_eq!(f["exporter"], "127.0.0.1");
            assert_eq!(f["device"], "SITE-FW-01");
            let start = chrono::DateTime::parse_from_rfc3339(f["start"].as_str().expect("start"));
            let end = chrono::DateTime::parse_from_rfc3339(f["end"].as_str().expect("end"));
            assert!(start.expect("RFC 3339") <= end.expect("RFC 3339"), "{f}");
        }
    }
    assert_eq!(stub.lock().content_type, "application/x-ndjson");
    let status = relay.stop();
    assert_eq!(dropped(&status, "malformed"), 0, "{status}");
    assert_eq!(dropped(&status, "no_template"), 0, "{status}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn through_an_outage_and_a_kill_9_every_record_arrives_exactly_once() {
    let dir = tempfile::tempdir().expect("dir");
    let (api_port, base) = common::api_down();
    let ports = Ports::free();
    let (tcp, flow) = (ports.syslog_tcp, ports.flow);
    let config = Relay::config(dir.path(), &base, "nop_test", &ports, FAST);
    let relay = Relay::start(Path::new(BIN), dir.path(), &config, ports);
    let socket = UdpSocket::bind("127.0.0.1:0").expect("socket");
    let send_wave = |wave: u32| {
        let mut stream = TcpStream::connect(("127.0.0.1", tcp)).expect("tcp");
        use std::io::Write;
        for i in 0..500 {
            writeln!(stream, "<13>Nov 29 01:02:03 fw wave={wave} line={i}").expect("write");
        }
        let records: Vec<FlowSpec> = (0..300u64)
            .map(|i| FlowSpec {
                src: [10, 2, wave as u8, (i % 250) as u8],
                dst: [203, 0, 113, 9],
                sport: 1024 + i as u16,
                dport: 443,
                proto: 6,
                bytes: 1_000 + i,
                packets: 1 + i % 7,
                start_ms: u64::from(now_secs()) * 1000 - 1_000,
                end_ms: u64::from(now_secs()) * 1000,
            })
            .collect();
        for (n, chunk) in records.chunks(30).enumerate() {
            let msg = ipfix_message(wave, n as u32, true, chunk, now_secs());
            socket.send_to(&msg, ("127.0.0.1", flow)).expect("send");
        }
    };
    send_wave(1);
    // Sealed and on disk: the status says so.
    let status = relay.wait_status("/buffered/lines", 800, WAIT);
    assert_eq!(status["buffered"]["lines"], 800, "{status}");
    relay.kill9();

    // Started again on the same buffer, more comes in while the API is still down.
    let ports = Ports {
        syslog_udp: common::free_udp_port(),
        syslog_tcp: tcp,
        flow,
    };
    let relay = Relay::start(Path::new(BIN), dir.path(), &config, ports);
    send_wave(2);
    let status = relay.wait_status("/buffered/lines", 800, WAIT);
    assert_eq!(
        status["spool"]["batches"].as_u64().map(|b| b >= 2),
        Some(true),
        "{status}"
    );
    tokio::time::sleep(Duration::from_millis(500)).await;

    // The API comes back, first overloaded (503), then rate limiting (429 + Retry-After).
    let stub = Stub::start(api_port, None).await;
    stub.lock().script.extend([(503, None), (429, Some(1))]);
    let syslog = stub.wait_for("firewall-syslog", 1_000, WAIT).await;
    let flows = stub.wait_for("gateway-flow", 600, WAIT).await;
    let status = relay.stop();
    assert_eq!(syslog.len(), 1_000, "{status}");
    assert_eq!(flows.len(), 600, "{status}");
    let distinct: std::collections::HashSet<&String> = syslog.iter().collect();
    assert_eq!(distinct.len(), 1_000, "a line twice");
    let distinct: std::collections::HashSet<&String> = flows.iter().collect();
    assert_eq!(distinct.len(), 600, "a flow twice");
    assert!(stub.lock().posts >= 4, "the retries were posted");
    assert!(status["retries"].as_u64().unwrap_or(0) >= 2, "{status}");
    assert_eq!(status["spool"]["batches"], 0, "{status}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stop_seals_the_open_batch_and_a_full_buffer_drops_the_oldest_counting_them() {
    let dir = tempfile::tempdir().expect("dir");
    let (api_port, base) = common::api_down();
    let ports = Ports::free();
    let tcp = ports.syslog_tcp;
    // A buffer of a few KB and batches sealed only at stop or at 60 s.
    let tuning = "spool_max_bytes = 3000\n[tuning]\nmax_line_bytes = 1024\nflush_ms = 60000\nstatus_secs = 1\nmax_backoff_secs = 1\nstop_grace_secs = 1\nbatch_bytes = 4096\n";
    let config = Relay::config(dir.path(), &base, "nop_test", &ports, tuning);
    let relay = Relay::start(Path::new(BIN), dir.path(), &config, ports);
    let mut stream = TcpStream::connect(("127.0.0.1", tcp)).expect("tcp");
    use std::io::Write;
    // Incompressible lines (hex of a counter's hash would do; a simple LCG is enough).
    let mut x: u64 = 7;
    for i in 0..200 {
        let mut line = format!("<13>Nov 29 01:02:03 fw n={i} ");
        for _ in 0..12 {
            x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            line.push_str(&format!("{x:016x}"));
        }
        writeln!(stream, "{line}").expect("write");
    }
    drop(stream);
    let status = relay.wait_status("/received/syslog_lines", 200, WAIT);
    assert_eq!(status["received"]["syslog_lines"], 200);
    let status = relay.stop();
    // Everything was sealed; what did not fit was dropped oldest first, and counted.
    assert_eq!(status["buffered"]["lines"], 200, "{status}");
    let kept = status["spool"]["bytes"].as_u64().unwrap_or(u64::MAX);
    assert!(kept <= 3000 + 4096, "{status}");
    let lost = dropped(&status, "buffer_full");
    assert!(lost > 0 && lost < 200, "{status}");
    // The rest is delivered at the next start, once the API is up.
    let stub = Stub::start(api_port, None).await;
    let ports = Ports::free();
    let config = Relay::config(dir.path(), &base, "nop_test", &ports, tuning);
    let relay = Relay::start(Path::new(BIN), dir.path(), &config, ports);
    let lines = stub
        .wait_for("firewall-syslog", (200 - lost) as usize, WAIT)
        .await;
    assert_eq!(lines.len() as u64, 200 - lost);
    assert!(
        lines.iter().any(|l| l.contains("n=199 ")),
        "the newest are kept"
    );
    relay.stop();
}
