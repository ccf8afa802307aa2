//! What the relay's tests and its benchmark share: a counting stub of the collection API, the
//! relay as a process of its own (so it can be stopped, killed and started again), and
//! writers of the datagrams and captures it is fed.
#![allow(dead_code)]

use std::collections::{HashMap, VecDeque};
use std::io::Read;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path as UrlPath, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

/// What the stub has taken in.
#[derive(Default)]
pub struct Taken {
    /// Posts received, retries and replays included.
    pub posts: u64,
    /// Distinct batches by the SHA-256 of their decompressed body, as the API identifies
    /// them: (kind, lines).
    pub batches: HashMap<[u8; 32], (String, Vec<String>)>,
    /// Answers to give before any 200: status and `Retry-After`.
    pub script: VecDeque<(u16, Option<u64>)>,
    /// Compressed bytes of the distinct batches, by kind.
    pub wire_bytes: HashMap<String, u64>,
    /// Headers of the last post.
    pub content_type: String,
    pub content_encoding: String,
}

impl Taken {
    /// The lines of `kind` in distinct batches.
    pub fn lines(&self, kind: &str) -> Vec<String> {
        self.batches
            .values()
            .filter(|(k, _)| k == kind)
            .flat_map(|(_, l)| l.iter().cloned())
            .collect()
    }

    pub fn count(&self, kind: &str) -> usize {
        self.batches
            .values()
            .filter(|(k, _)| k == kind)
            .map(|(_, l)| l.len())
            .sum()
    }
}

/// A counting stub of `POST /api/v1/collect/{kind}` on 127.0.0.1.
pub struct Stub {
    pub addr: SocketAddr,
    pub taken: Arc<Mutex<Taken>>,
    task: tokio::task::JoinHandle<()>,
}

impl Stub {
    /// On `port` (0: any free one), sharing `taken` with an earlier stub when given.
    pub async fn start(port: u16, taken: Option<Arc<Mutex<Taken>>>) -> Stub {
        let taken = taken.unwrap_or_default();
        let app = Router::new()
            .route("/api/v1/collect/{kind}", post(collect))
            .with_state(taken.clone());
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
            .await
            .expect("stub port");
        let addr = listener.local_addr().expect("addr");
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Stub { addr, taken, task }
    }

    pub fn base(&self) -> String {
        format!("http://{}/api/v1", self.addr)
    }

    /// Stops answering (connections refused from now on).
    pub async fn stop(self) -> Arc<Mutex<Taken>> {
        self.task.abort();
        let _ = self.task.await;
        self.taken
    }

    pub fn lock(&self) -> std::sync::MutexGuard<'_, Taken> {
        self.taken.lock().expect("stub state")
    }

    /// Waits until `kind` has `n` lines (or `within` has passed); the lines.
    pub async fn wait_for(&self, kind: &str, n: usize, within: Duration) -> Vec<String> {
        let started = Instant::now();
        loop {
            let count = self.lock().count(kind);
            if count >= n || started.elapsed() > within {
                return self.lock().lines(kind);
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

async fn collect(
    State(taken): State<Arc<Mutex<Taken>>>,
    UrlPath(kind): UrlPath<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_owned()
    };
    let mut taken = taken.lock().expect("stub state");
    taken.posts += 1;
    taken.content_type = header("content-type");
    taken.content_encoding = header("content-encoding");
    if let Some((status, retry_after)) = taken.script.pop_front() {
        let mut res = (
            StatusCode::from_u16(status).unwrap_or(StatusCode::SERVICE_UNAVAILABLE),
            axum::Json(json!({"error": "scripted", "message": "scripted"})),
        )
            .into_response();
        if let Some(s) = retry_after {
            res.headers_mut()
                .insert("retry-after", s.to_string().parse().expect("header"));
        }
        return res;
    }
    let mut text = String::new();
    if flate2::read::GzDecoder::new(&body[..])
        .read_to_string(&mut text)
        .is_err()
    {
        return (StatusCode::BAD_REQUEST, "not gzip").into_response();
    }
    let digest: [u8; 32] = Sha256::digest(text.as_bytes()).into();
    let lines: Vec<String> = text.lines().map(str::to_owned).collect();
    let n = lines.len();
    if !taken.batches.contains_key(&digest) {
        *taken.wire_bytes.entry(kind.clone()).or_default() += body.len() as u64;
        taken.batches.insert(digest, (kind.clone(), lines));
    }
    axum::Json(json!({"data": {"kind": kind, "accepted": n, "refused": 0}})).into_response()
}

/// Sends `message` with util-linux `logger` to the relay's syslog `port` (`args`: transport
/// and format, e.g. `--tcp --rfc5424 --octet-count`).
pub fn logger(port: u16, args: &[&str], message: &str) {
    run_ok(
        Command::new("logger")
            .args(["--server", "127.0.0.1", "--port", &port.to_string()])
            .args(args)
            .arg(message),
        "logger (util-linux)",
    );
}

/// Runs a sender to its end; it must succeed.
pub fn run_ok(command: &mut Command, what: &str) {
    let out = command
        .output()
        .unwrap_or_else(|e| panic!("{what} must be installed: {e}"));
    assert!(
        out.status.success(),
        "{what}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A base URL where the API is down: its port is free, nothing answers there (yet).
pub fn api_down() -> (u16, String) {
    let port = free_port();
    (port, format!("http://127.0.0.1:{port}/api/v1"))
}

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("port")
        .port()
}

pub fn free_udp_port() -> u16 {
    std::net::UdpSocket::bind("127.0.0.1:0")
        .and_then(|s| s.local_addr())
        .expect("port")
        .port()
}

/// Where the relay listens.
pub struct Ports {
    pub syslog_udp: u16,
    pub syslog_tcp: u16,
    pub flow: u16,
}

impl Ports {
    pub fn free() -> Ports {
        Ports {
            syslog_udp: free_udp_port(),
            syslog_tcp: free_port(),
            flow: free_udp_port(),
        }
    }
}

/// `netops-relay` as a process, its files in `dir`; killed when dropped.
pub struct Relay {
    pub child: Child,
    pub dir: PathBuf,
    pub ports: Ports,
}

impl Relay {
    /// A configuration of the relay on `ports` toward `base`, with `extra` TOML (top-level
    /// keys, then `[tuning]`).
    pub fn config(dir: &Path, base: &str, token: &str, ports: &Ports, extra: &str) -> PathBuf {
        let path = dir.join("relay.toml");
        let text = format!(
            r#"base_url = "{base}"
token = "{token}"
spool_dir = "{spool}"
{extra}

[listen]
syslog_udp = ["127.0.0.1:{udp}"]
syslog_tcp = ["127.0.0.1:{tcp}"]
flow_udp = ["127.0.0.1:{flow}"]

[devices]
"127.0.0.1" = "SITE-FW-01"
"#,
            spool = dir.join("spool").display(),
            udp = ports.syslog_udp,
            tcp = ports.syslog_tcp,
            flow = ports.flow,
        );
        std::fs::write(&path, text).expect("config");
        path
    }

    /// Starts the relay of `bin` on `config` and waits for its listeners.
    pub fn start(bin: &Path, dir: &Path, config: &Path, ports: Ports) -> Relay {
        // The status lines of this run only.
        let out = std::fs::File::create(dir.join("stdout")).expect("stdout");
        let err = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.join("stderr"))
            .expect("stderr");
        let child = Command::new(bin)
            .arg("--config")
            .arg(config)
            .env("RUST_LOG", "warn")
            .stdout(Stdio::from(out))
            .stderr(Stdio::from(err))
            .spawn()
            .expect("netops-relay");
        let relay = Relay {
            child,
            dir: dir.to_owned(),
            ports,
        };
        let started = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", relay.ports.syslog_tcp)).is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "the relay did not start: {}",
                relay.stderr()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        relay
    }

    pub fn stderr(&self) -> String {
        std::fs::read_to_string(self.dir.join("stderr")).unwrap_or_default()
    }

    /// The counters of the last status line.
    pub fn status(&self) -> Value {
        std::fs::read_to_string(self.dir.join("stdout"))
            .unwrap_or_default()
            .lines()
            .rev()
            .find_map(|l| serde_json::from_str::<Value>(l).ok())
            .map(|v| v["counters"].clone())
            .unwrap_or_default()
    }

    /// Waits until the status says `pointer` (a JSON pointer) is at least `n`.
    pub fn wait_status(&self, pointer: &str, n: u64, within: Duration) -> Value {
        let started = Instant::now();
        loop {
            let status = self.status();
            if status.pointer(pointer).and_then(Value::as_u64).unwrap_or(0) >= n
                || started.elapsed() > within
            {
                return status;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// SIGTERM, then the exit; the final counters.
    pub fn stop(mut self) -> Value {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let status = self.child.wait().expect("wait");
        assert!(status.success(), "relay exit {status}: {}", self.stderr());
        self.status()
    }

    /// SIGKILL: no flush, no goodbye.
    pub fn kill9(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An IPFIX message (RFC 7011) from `domain` with one template (id 256: addresses, ports,
/// protocol, octets, packets, start and end in milliseconds) when `template`, and `records`
/// as data records of it when any.
pub fn ipfix_message(
    domain: u32,
    seq: u32,
    template: bool,
    records: &[FlowSpec],
    export_secs: u32,
) -> Vec<u8> {
    const FIELDS: [(u16, u16); 9] = [
        (8, 4),
        (12, 4),
        (7, 2),
        (11, 2),
        (4, 1),
        (1, 8),
        (2, 8),
        (152, 8),
        (153, 8),
    ];
    let mut body = Vec::new();
    if template {
        let len = 4 + 4 + FIELDS.len() * 4;
        body.extend_from_slice(&2u16.to_be_bytes());
        body.extend_from_slice(&(len as u16).to_be_bytes());
        body.extend_from_slice(&256u16.to_be_bytes());
        body.extend_from_slice(&(FIELDS.len() as u16).to_be_bytes());
        for (id, size) in FIELDS {
            body.extend_from_slice(&id.to_be_bytes());
            body.extend_from_slice(&size.to_be_bytes());
        }
    }
    if !records.is_empty() {
        body.extend_from_slice(&256u16.to_be_bytes());
        body.extend_from_slice(&((4 + records.len() * 45) as u16).to_be_bytes());
        for r in records {
            body.extend_from_slice(&r.src);
            body.extend_from_slice(&r.dst);
            body.extend_from_slice(&r.sport.to_be_bytes());
            body.extend_from_slice(&r.dport.to_be_bytes());
            body.push(r.proto);
            body.extend_from_slice(&r.bytes.to_be_bytes());
            body.extend_from_slice(&r.packets.to_be_bytes());
            body.extend_from_slice(&r.start_ms.to_be_bytes());
            body.extend_from_slice(&r.end_ms.to_be_bytes());
        }
    }
    let mut msg = Vec::with_capacity(16 + body.len());
    msg.extend_from_slice(&10u16.to_be_bytes());
    msg.extend_from_slice(&((16 + body.len()) as u16).to_be_bytes());
    msg.extend_from_slice(&export_secs.to_be_bytes());
    msg.extend_from_slice(&seq.to_be_bytes());
    msg.extend_from_slice(&domain.to_be_bytes());
    msg.extend_from_slice(&body);
    msg
}

/// One flow record to encode.
#[derive(Clone, Copy)]
pub struct FlowSpec {
    pub src: [u8; 4],
    pub dst: [u8; 4],
    pub sport: u16,
    pub dport: u16,
    pub proto: u8,
    pub bytes: u64,
    pub packets: u64,
    pub start_ms: u64,
    pub end_ms: u64,
}

/// One captured IPv4 packet: source, destination, protocol (6 or 17), source port,
/// destination port, IP total length.
pub type Packet = ([u8; 4], [u8; 4], u8, u16, u16, u16);

/// A flow of a capture: source, destination, protocol, source port, destination port, and
/// its packets' sizes.
pub type CaptureFlow = ([u8; 4], [u8; 4], u8, u16, u16, &'static [u16]);

/// A site's traffic for softflowd: devices without agent (10.77.0.0/24) toward addresses of
/// the benchmark range, which the demo data never uses (each destination's bytes in the
/// API's views are these flows' alone).
pub const SITE_CAPTURE: [CaptureFlow; 3] = [
    (
        [10, 77, 0, 5],
        [198, 18, 7, 9],
        6,
        51_234,
        443,
        &[60, 1500, 1500, 1500, 40],
    ),
    (
        [10, 77, 0, 6],
        [198, 18, 7, 53],
        17,
        40_000,
        53,
        &[72, 80, 200],
    ),
    (
        [10, 77, 0, 7],
        [198, 18, 7, 80],
        6,
        50_000,
        80,
        &[60, 576, 576, 40],
    ),
];

/// The packets of `flows`, interleaved as on a wire.
pub fn interleaved(flows: &[CaptureFlow]) -> Vec<Packet> {
    let longest = flows.iter().map(|f| f.5.len()).max().unwrap_or(0);
    let mut packets = Vec::new();
    for i in 0..longest {
        for (src, dst, proto, sport, dport, sizes) in flows {
            if let Some(size) = sizes.get(i) {
                packets.push((*src, *dst, *proto, *sport, *dport, *size));
            }
        }
    }
    packets
}

/// Runs softflowd (Debian) over the capture `pcap` of `dir` to its end, exporting its flows
/// to 127.0.0.1:`port` in NetFlow `version` (5, 9, or 10: IPFIX).
pub fn softflowd(dir: &Path, pcap: &str, version: &str, port: u16) {
    // Relative names in the capture's folder: softflowd 1.1.0 mangles some absolute paths
    // (it then waits forever instead of reading the file).
    run_ok(
        Command::new("softflowd")
            .current_dir(dir)
            .args(["-d", "-r", pcap, "-v", version])
            .args(["-n", &format!("127.0.0.1:{port}")])
            .args([
                "-p",
                &format!("sf{version}.pid"),
                "-c",
                &format!("sf{version}.ctl"),
            ]),
        "softflowd (Debian softflowd)",
    );
}

/// A pcap file (Ethernet) of `packets`, one millisecond apart from `start_secs`.
pub fn write_pcap(path: &Path, start_secs: u32, packets: &[Packet]) {
    let mut out = Vec::new();
    out.extend_from_slice(&0xa1b2_c3d4u32.to_le_bytes());
    out.extend_from_slice(&2u16.to_le_bytes());
    out.extend_from_slice(&4u16.to_le_bytes());
    // Time zone, accuracy, snapshot length, link type (Ethernet).
    for v in [0u32, 0, 65_535, 1] {
        out.extend_from_slice(&v.to_le_bytes());
    }
    for (i, (src, dst, proto, sport, dport, ip_len)) in packets.iter().enumerate() {
        let l4 = if *proto == 6 { 20 } else { 8 };
        assert!(usize::from(*ip_len) >= 20 + l4);
        let mut frame = vec![0u8; 14];
        frame[12] = 0x08; // IPv4
        let mut ip = vec![0u8; usize::from(*ip_len)];
        ip[0] = 0x45;
        ip[2..4].copy_from_slice(&ip_len.to_be_bytes());
        ip[8] = 64;
        ip[9] = *proto;
        ip[12..16].copy_from_slice(src);
        ip[16..20].copy_from_slice(dst);
        let sum = checksum(&ip[..20]);
        ip[10..12].copy_from_slice(&sum.to_be_bytes());
        ip[20..22].copy_from_slice(&sport.to_be_bytes());
        ip[22..24].copy_from_slice(&dport.to_be_bytes());
        if *proto == 6 {
            ip[32] = 0x50; // data offset 5
            ip[33] = 0x18; // PSH ACK
        } else {
            ip[24..26].copy_from_slice(&(ip_len - 20).to_be_bytes());
        }
        frame.extend_from_slice(&ip);
        let micros = i as u32 * 1000;
        out.extend_from_slice(&(start_secs + micros / 1_000_000).to_le_bytes());
        out.extend_from_slice(&(micros % 1_000_000).to_le_bytes());
        out.extend_from_slice(&(frame.len() as u32).to_le_bytes());
        out.extend_from_slice(&(frame.len() as u32).to_le_bytes());
        out.extend_from_slice(&frame);
    }
    std::fs::write(path, out).expect("pcap");
}

fn checksum(header: &[u8]) -> u16 {
    let mut sum: u32 = header
        .chunks(2)
        .map(|c| u32::from(u16::from_be_bytes([c[0], c[1]])))
        .sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}
