//! The relay's counters, shared by every task, and the status line that shows them
//! (docs/relay.md#status).

use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::{Map, Value, json};

/// Why something received was not forwarded. Each reason is one counter of the status line's
/// `dropped` object, under the name `as_str` gives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Loss {
    /// A syslog message longer than `tuning.max_line_bytes`.
    Oversized,
    /// A syslog message that is not text (not UTF-8, or control characters).
    Binary,
    /// A flow datagram no decoder reads (truncated, bad length, unknown version).
    Malformed,
    /// A NetFlow v9 or IPFIX data set whose template the exporter has not sent yet.
    NoTemplate,
    /// A flow record without the fields a `gateway-flow` line needs (addresses, counts).
    Incomplete,
    /// A TCP connection refused: `tuning.max_tcp_connections` reached.
    TooManyConnections,
    /// Lines of the oldest batches removed to keep the disk buffer within its bound.
    BufferFull,
    /// Lines lost because their batch could not be written to the disk buffer.
    BufferWrite,
    /// Lines the API refused (its 200 answer's `refused`, or a 400 batch).
    RefusedByApi,
}

impl Loss {
    pub const ALL: [Loss; 9] = [
        Loss::Oversized,
        Loss::Binary,
        Loss::Malformed,
        Loss::NoTemplate,
        Loss::Incomplete,
        Loss::TooManyConnections,
        Loss::BufferFull,
        Loss::BufferWrite,
        Loss::RefusedByApi,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Loss::Oversized => "oversized",
            Loss::Binary => "binary",
            Loss::Malformed => "malformed",
            Loss::NoTemplate => "no_template",
            Loss::Incomplete => "incomplete",
            Loss::TooManyConnections => "too_many_connections",
            Loss::BufferFull => "buffer_full",
            Loss::BufferWrite => "buffer_write",
            Loss::RefusedByApi => "refused_by_api",
        }
    }
}

#[derive(Debug, Default)]
pub struct Stats {
    pub syslog_received: AtomicU64,
    pub flow_datagrams: AtomicU64,
    pub flow_records: AtomicU64,
    /// Lines sealed into batches on disk.
    pub buffered: AtomicU64,
    pub batches_buffered: AtomicU64,
    /// Lines the API accepted.
    pub forwarded: AtomicU64,
    pub batches_forwarded: AtomicU64,
    /// Tries of a batch after its first.
    pub retries: AtomicU64,
    /// The disk buffer now: batches and bytes waiting.
    pub spool_batches: AtomicU64,
    pub spool_bytes: AtomicU64,
    /// The kernel's own count of datagrams dropped on the relay's UDP sockets.
    pub kernel_drops: AtomicU64,
    dropped: [AtomicU64; Loss::ALL.len()],
}

impl Stats {
    pub fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }

    pub fn lose(&self, why: Loss, n: u64) {
        self.dropped[why as usize].fetch_add(n, Ordering::Relaxed);
    }

    pub fn dropped(&self, why: Loss) -> u64 {
        self.dropped[why as usize].load(Ordering::Relaxed)
    }

    /// The status line's object.
    pub fn snapshot(&self) -> Value {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        let dropped: Map<String, Value> = Loss::ALL
            .iter()
            .map(|d| (d.as_str().to_owned(), self.dropped(*d).into()))
            .collect();
        json!({
            "received": {
                "syslog_lines": get(&self.syslog_received),
                "flow_datagrams": get(&self.flow_datagrams),
                "flow_records": get(&self.flow_records),
            },
            "buffered": { "lines": get(&self.buffered), "batches": get(&self.batches_buffered) },
            "forwarded": { "lines": get(&self.forwarded), "batches": get(&self.batches_forwarded) },
            "retries": get(&self.retries),
            "spool": { "batches": get(&self.spool_batches), "bytes": get(&self.spool_bytes) },
            "kernel_drops": get(&self.kernel_drops),
            "dropped": dropped,
        })
    }
}

/// The kernel's drop count of the UDP sockets bound to `ports`: the last column of
/// /proc/net/udp and /proc/net/udp6 (a full receive buffer, a bad checksum). 0 where the
/// files cannot be read.
pub fn kernel_udp_drops(ports: &[u16]) -> u64 {
    ["/proc/net/udp", "/proc/net/udp6"]
        .iter()
        .filter_map(|f| std::fs::read_to_string(f).ok())
        .map(|text| udp_drops_in(&text, ports))
        .sum()
}

fn udp_drops_in(table: &str, ports: &[u16]) -> u64 {
    table
        .lines()
        .skip(1)
        .filter_map(|line| {
            let cols: Vec<&str> = line.split_whitespace().collect();
            let port = cols.get(1)?.rsplit(':').next()?;
            let port = u16::from_str_radix(port, 16).ok()?;
            if !ports.contains(&port) {
                return None;
            }
            cols.last()?.parse::<u64>().ok()
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_drops_are_read_from_the_sockets_of_our_ports_only() {
        let table = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode ref pointer drops\n\
  1: 0100007F:0801 00000000:0000 07 00000000:00000000 00:00000000 00000000     0        0 1 2 0000000000000000 17\n\
  2: 0100007F:0802 00000000:0000 07 00000000:00000000 00:00000000 00000000     0        0 1 2 0000000000000000 5\n";
        assert_eq!(udp_drops_in(table, &[0x0801]), 17);
        assert_eq!(udp_drops_in(table, &[0x0801, 0x0802]), 22);
        assert_eq!(udp_drops_in(table, &[9]), 0);
    }
}
