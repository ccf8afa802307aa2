//! Real senders to the collection API of the real `netops serve`: syslog-ng relaying firewall
//! syslog through its `http()` destination (Debian `syslog-ng-core` and
//! `syslog-ng-mod-http`, which tests/run.sh installs), and `netops collect` importing a file.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::serve::get_json;
use crate::serve::served::{Serve, Served, create_token};

/// A FortiGate line of `device`, RFC 3164 header and all, as the firewall sends it over UDP.
pub(crate) fn fortigate(device: &str, at: DateTime<Utc>, what: &str, account: &str) -> String {
    format!(
        "<189>{} {device} date={} time={} devname=\"{device}\" devid=\"FG100FTK20001234\" \
         eventtime={}000000 logid=\"0101039426\" type=\"event\" subtype=\"vpn\" level=\"alert\" \
         action=\"{what}\" status=\"failure\" remip=198.51.100.99 user=\"{account}\" \
         msg=\"SSL VPN login fail\"",
        at.format("%b %e %H:%M:%S"),
        at.format("%Y-%m-%d"),
        at.format("%H:%M:%S"),
        at.timestamp_millis()
    )
}

/// A Check Point CEF line of `device` (an intrusion blocked), with its syslog header.
pub(crate) fn cef(device: &str, at: DateTime<Utc>, port: u16) -> String {
    format!(
        "<134>{} {device} CEF:0|Check Point|VPN-1 & FireWall-1|R81.20|ips|IPS Protection|8|\
         act=Prevent cat=IPS src=198.51.100.23 dst=10.30.10.10 spt=40000 dpt={port} proto=6 \
         rt={} msg=Brute force attempt",
        at.format("%b %e %H:%M:%S"),
        at.timestamp_millis()
    )
}

async fn get(served: &Served, path: &str) -> Value {
    let (status, body) = get_json(served, path).await;
    assert_eq!(status, 200, "{path}");
    body
}

/// The firewall events of the last hour whose account is `account` or whose destination port
/// is `port`, polled until there are `n` of them (or 3 s have passed).
pub(crate) async fn wait_for_events(
    served: &Served,
    account: &str,
    port: u16,
    n: usize,
) -> Vec<Value> {
    let started = Instant::now();
    loop {
        let body = get(served, "/firewall/events?period=1h&limit=1000").await;
        let found: Vec<Value> = body["data"]
            .as_array()
            .expect("events")
            .iter()
            .filter(|e| e["account"] == account || e["dst_port"] == port)
            .cloned()
            .collect();
        if found.len() >= n || started.elapsed() > Duration::from_secs(3) {
            return found;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// syslog-ng in the foreground on `config`, its files in `dir`; killed when dropped.
struct SyslogNg(Child);

impl SyslogNg {
    fn start(dir: &Path, config: &str) -> SyslogNg {
        let conf = dir.join("syslog-ng.conf");
        std::fs::write(&conf, config).expect("config");
        let child = Command::new("syslog-ng")
            .arg("--foreground")
            .arg("--stderr")
            .arg("--no-caps")
            .arg(format!("--cfgfile={}", conf.display()))
            .arg(format!("--persist-file={}", dir.join("persist").display()))
            .arg(format!("--pidfile={}", dir.join("pid").display()))
            .arg(format!("--control={}", dir.join("ctl").display()))
            .stdout(Stdio::null())
            .stderr(Stdio::from(
                std::fs::File::create(dir.join("stderr")).expect("log"),
            ))
            .spawn()
            .expect("syslog-ng (Debian syslog-ng-core and syslog-ng-mod-http) must be installed");
        SyslogNg(child)
    }
}

impl SyslogNg {
    fn running(&mut self) -> bool {
        matches!(self.0.try_wait(), Ok(None))
    }
}

impl Drop for SyslogNg {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_udp_port() -> u16 {
    std::net::UdpSocket::bind("127.0.0.1:0")
        .and_then(|s| s.local_addr())
        .expect("port")
        .port()
}

#[tokio::test]
async fn syslog_ng_relays_firewall_syslog_into_the_events_and_the_report() {
    let served = Serve::seeded().env("NETOPS_NO_LIVE", "1").start();
    let token = create_token(
        &served.db,
        &["--name", "syslog-ng", "--scopes", "collect:firewall"],
    );
    let devices = get(&served, "/firewall/devices").await;
    let names: Vec<String> = devices["data"]
        .as_array()
        .expect("devices")
        .iter()
        .filter_map(|d| d["name"].as_str().map(str::to_owned))
        .collect();
    let before = get(&served, "/firewall/report?period=24h").await["data"]["summary"].clone();

    let dir = tempfile::tempdir().expect("tempdir");
    let port = free_udp_port();
    // The firewalls send to syslog-ng over UDP; syslog-ng keeps each raw line (no-parse) and
    // posts them in batches of lines to the collection API.
    let config = format!(
        r#"@version: 3.38
options {{ stats_freq(0); }};
source s_firewalls {{ network(ip("127.0.0.1") port({port}) transport("udp") flags(no-parse)); }};
destination d_netops {{
  http(
    url("{base}/collect/firewall-syslog")
    method("POST")
    headers("Authorization: Bearer {token}", "Content-Type: text/plain")
    body("${{MSG}}")
    delimiter("\n")
    batch-lines(20)
    batch-timeout(300)
  );
}};
log {{ source(s_firewalls); destination(d_netops); }};
"#,
        base = served.base
    );
    let mut syslog_ng = SyslogNg::start(dir.path(), &config);
    let socket = std::net::UdpSocket::bind("127.0.0.1:0").expect("socket");
    let now = Utc::now();
    let mut lines = Vec::new();
    for (i, device) in names.iter().enumerate() {
        lines.push(fortigate(
            device,
            now - chrono::Duration::seconds(30 + i as i64),
            "ssl-login-fail",
            "syslog.ng",
        ));
        lines.push(cef(
            device,
            now - chrono::Duration::seconds(20 + i as i64),
            4389,
        ));
    }
    // syslog-ng takes a moment to listen: the lines are sent until the first arrives, and the
    // events are counted once (a line sent twice is one event).
    let started = Instant::now();
    let mut events = Vec::new();
    while events.len() < lines.len()
        && started.elapsed() < Duration::from_secs(60)
        && syslog_ng.running()
    {
        for line in &lines {
            socket
                .send_to(line.as_bytes(), ("127.0.0.1", port))
                .expect("send");
        }
        events = wait_for_events(&served, "syslog.ng", 4389, lines.len()).await;
    }
    let stderr = std::fs::read_to_string(dir.path().join("stderr")).unwrap_or_default();
    assert_eq!(events.len(), lines.len(), "syslog-ng said: {stderr}");
    let vpn = events
        .iter()
        .find(|e| e["account"] == "syslog.ng")
        .expect("a FortiGate event");
    assert_eq!(vpn["format"], "fortigate");
    assert_eq!(vpn["category"], "vpn");
    assert_eq!(vpn["action"], "failure");
    assert_eq!(vpn["src_ip"], "198.51.100.99");
    let ids = events
        .iter()
        .find(|e| e["format"] == "cef")
        .expect("a CEF event");
    assert_eq!(ids["category"], "ids");
    assert_eq!(ids["action"], "blocked");
    assert_eq!(ids["src_ip"], "198.51.100.23");
    assert_eq!(ids["dst_port"], 4389);
    // Every device's events, each once, counted once in the report.
    let after = get(&served, "/firewall/report?period=24h").await["data"]["summary"].clone();
    let delta = |k: &str| after[k].as_f64().unwrap_or(0.0) - before[k].as_f64().unwrap_or(0.0);
    assert_eq!(delta("events"), lines.len() as f64, "{before} {after}");
    assert_eq!(delta("intrusions"), names.len() as f64);
}

#[tokio::test]
async fn netops_collect_imports_a_file_counted_once_however_often_it_runs() {
    let served = Serve::seeded().env("NETOPS_NO_LIVE", "1").start();
    let token = create_token(&served.db, &["--name", "import", "--scopes", "collect"]);
    let devices = get(&served, "/firewall/devices").await;
    let device = devices["data"][0]["name"]
        .as_str()
        .expect("name")
        .to_owned();
    let summary = || async {
        get(&served, "/firewall/report?period=24h").await["data"]["summary"]["events"]
            .as_f64()
            .unwrap_or(0.0)
    };
    let before = summary().await;
    let now = Utc::now();
    let dir = tempfile::tempdir().expect("tempdir");
    // NDJSON of 3,000 lines, two of them refused.
    let mut text = String::new();
    for i in 0..3_000 {
        let line = fortigate(
            &device,
            now - chrono::Duration::milliseconds(i * 10 + 1),
            "ssl-login-fail",
            &format!("import.{i}"),
        );
        text.push_str(&serde_json::json!({ "line": line }).to_string());
        text.push('\n');
    }
    text.push_str("{\"line\": \"nothing a parser reads\"}\nnot json\n");
    let file = dir.path().join("lines.ndjson");
    std::fs::write(&file, &text).expect("file");
    let import = |file: &Path| {
        Command::new(env!("CARGO_BIN_EXE_netops"))
            .args([
                "collect",
                "--kind",
                "firewall-syslog",
                "--url",
                &served.base,
            ])
            .arg(file)
            .env("NETOPS_TOKEN", &token)
            .output()
            .expect("netops collect")
    };
    let out = import(&file);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let batches: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON object per batch"))
        .collect();
    assert_eq!(batches.len(), 1, "{batches:?}");
    assert_eq!(batches[0]["accepted"], 3_000);
    assert_eq!(batches[0]["refused"], 2);
    assert_eq!(batches[0]["refusals"][1]["line"], 3_002);
    assert!(
        stderr.contains("3000 lines accepted, 2 refused"),
        "{stderr}"
    );
    assert_eq!(summary().await - before, 3_000.0);
    // The same import again (a cron job run twice) is answered as the first time and counts
    // nothing twice.
    let again = import(&file);
    assert!(again.status.success());
    assert_eq!(again.stdout, out.stdout);
    assert_eq!(summary().await - before, 3_000.0);
    // A credential that cannot collect stops the import, from standard input, with its reason.
    let read = create_token(
        &served.db,
        &["--name", "reader", "--scopes", "read:firewall"],
    );
    let out = Command::new(env!("CARGO_BIN_EXE_netops"))
        .args([
            "collect",
            "--kind",
            "firewall-syslog",
            "--url",
            &served.base,
            "-",
        ])
        .env("NETOPS_TOKEN", &read)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            use std::io::Write;
            child
                .stdin
                .take()
                .expect("stdin")
                .write_all(text.as_bytes())?;
            child.wait_with_output()
        })
        .expect("netops collect");
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("403"), "{stderr}");
}
