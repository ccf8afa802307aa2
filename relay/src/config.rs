//! The relay's configuration: one TOML file (docs/relay.md), read once at start, failing fast
//! with the key at fault.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};

use serde::Deserialize;

/// Default bound of the disk buffer: one hour of outage at the benchmark's rate of 20,000 flow
/// records and 20,000 syslog lines a second, compressed (bench/relay-results.md).
pub const DEFAULT_SPOOL_MAX_BYTES: u64 = 6 * 1024 * 1024 * 1024;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// The API's base URL, `https://host/api/v1`.
    pub base_url: String,
    /// A collect credential (`collect:firewall`, `collect:flows`); `NETOPS_RELAY_TOKEN`
    /// overrides it, so the file need not hold it.
    #[serde(default)]
    pub token: String,
    /// Where sealed batches wait for the API (segment files, one batch each).
    pub spool_dir: PathBuf,
    #[serde(default = "default_spool_max_bytes")]
    pub spool_max_bytes: u64,
    #[serde(default)]
    pub listen: Listen,
    /// Exporter or sender address → device name: the `device` of its flows, the host of its
    /// syslog lines.
    #[serde(default)]
    pub devices: HashMap<IpAddr, String>,
    #[serde(default)]
    pub tuning: Tuning,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Listen {
    #[serde(default)]
    pub syslog_udp: Vec<SocketAddr>,
    #[serde(default)]
    pub syslog_tcp: Vec<SocketAddr>,
    /// NetFlow v5, v9 and IPFIX, told apart by each datagram's version.
    #[serde(default)]
    pub flow_udp: Vec<SocketAddr>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Tuning {
    /// A batch is sealed at this many bytes of lines (before compression)...
    pub batch_bytes: usize,
    /// ...or when its first line is this old.
    pub flush_ms: u64,
    /// A syslog message longer than this is dropped (`oversized`).
    pub max_line_bytes: usize,
    /// SO_RCVBUF asked for each UDP socket (the kernel caps it at `net.core.rmem_max`).
    pub udp_rcvbuf_bytes: usize,
    /// Every this many seconds a status line; 0: only at stop.
    pub status_secs: u64,
    /// How long a stop waits for the API to take the buffer before leaving it on disk.
    pub stop_grace_secs: u64,
    /// Longest pause between two tries of a batch.
    pub max_backoff_secs: u64,
    /// Simultaneous syslog TCP connections at most.
    pub max_tcp_connections: usize,
}

impl Default for Tuning {
    fn default() -> Self {
        Tuning {
            batch_bytes: 2 * 1024 * 1024,
            flush_ms: 1000,
            max_line_bytes: 16 * 1024,
            udp_rcvbuf_bytes: 32 * 1024 * 1024,
            status_secs: 60,
            stop_grace_secs: 10,
            max_backoff_secs: 60,
            max_tcp_connections: 512,
        }
    }
}

fn default_spool_max_bytes() -> u64 {
    DEFAULT_SPOOL_MAX_BYTES
}

impl Config {
    pub fn load(path: &Path) -> Result<Config, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let mut config: Config =
            toml::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
        if let Ok(token) = std::env::var("NETOPS_RELAY_TOKEN") {
            config.token = token;
        }
        config.validate()?;
        Ok(config)
    }

    fn validate(&self) -> Result<(), String> {
        if !(self.base_url.starts_with("http://") || self.base_url.starts_with("https://")) {
            return Err("base_url: an http:// or https:// URL".into());
        }
        if self.token.is_empty() {
            return Err("token: a collect credential (or NETOPS_RELAY_TOKEN)".into());
        }
        let t = &self.tuning;
        // A batch must stay within the API's 16 MiB decompressed limit, and its compressed
        // form within the 4 MiB wire limit even for lines that hardly compress.
        if t.batch_bytes < 1024 || t.batch_bytes > 3 * 1024 * 1024 {
            return Err("tuning.batch_bytes: between 1024 and 3145728".into());
        }
        if t.max_line_bytes < 64 || t.max_line_bytes >= t.batch_bytes {
            return Err("tuning.max_line_bytes: at least 64 and below batch_bytes".into());
        }
        if t.flush_ms == 0 || t.max_backoff_secs == 0 || t.max_tcp_connections == 0 {
            return Err("tuning: flush_ms, max_backoff_secs, max_tcp_connections above 0".into());
        }
        let l = &self.listen;
        if l.syslog_udp.is_empty() && l.syslog_tcp.is_empty() && l.flow_udp.is_empty() {
            return Err("listen: at least one of syslog_udp, syslog_tcp, flow_udp".into());
        }
        Ok(())
    }

    pub fn device(&self, addr: IpAddr) -> Option<&str> {
        self.devices.get(&addr.to_canonical()).map(String::as_str)
    }
}
