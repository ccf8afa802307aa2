//! The disk buffer: every batch, once sealed, is one gzip segment file, the exact body the
//! forwarder posts (so a retry, even after a restart, is byte-identical and the API's SHA-256
//! identity of the batch counts it once). A segment is written to a temporary name, fsynced,
//! renamed and its directory fsynced before the batch counts as buffered, so a `kill -9` or a
//! power cut loses no sealed batch; what a crash can lose is the open batch still in memory
//! (at most `tuning.flush_ms` of input). Over `spool_max_bytes`, the oldest segments are
//! removed and their lines counted as dropped (`buffer_full`).

use std::collections::BTreeMap;
use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use tokio::sync::Notify;

use crate::stats::{Loss, Stats};

/// What a batch holds; each kind has its own queue and forwarder, so a kind the API refuses
/// does not hold back the other.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    FirewallSyslog,
    GatewayFlow,
}

impl Kind {
    pub const ALL: [Kind; 2] = [Kind::FirewallSyslog, Kind::GatewayFlow];

    /// The collection API's kind (`POST /collect/{kind}`).
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::FirewallSyslog => "firewall-syslog",
            Kind::GatewayFlow => "gateway-flow",
        }
    }

    /// Raw syslog lines for the firewall, NDJSON for flows.
    pub fn content_type(self) -> &'static str {
        match self {
            Kind::FirewallSyslog => "text/plain",
            Kind::GatewayFlow => "application/x-ndjson",
        }
    }

    fn parse(s: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.as_str() == s)
    }
}

/// One sealed batch on disk.
#[derive(Debug, Clone)]
pub struct Segment {
    pub seq: u64,
    pub kind: Kind,
    pub lines: u64,
    pub bytes: u64,
    pub path: PathBuf,
}

#[derive(Default)]
struct Queue {
    next_seq: u64,
    segments: BTreeMap<u64, Segment>,
    bytes: u64,
}

pub struct Spool {
    dir: PathBuf,
    max_bytes: u64,
    queue: Mutex<Queue>,
    /// Woken when a segment is added.
    pub added: Notify,
    stats: Arc<Stats>,
}

impl Spool {
    /// Opens `dir` (made if absent): the segments a previous run left are queued again, in
    /// their order; half-written ones (temporary names) are removed.
    pub fn open(dir: &Path, max_bytes: u64, stats: Arc<Stats>) -> std::io::Result<Spool> {
        fs::create_dir_all(dir)?;
        let mut queue = Queue::default();
        for entry in fs::read_dir(dir)? {
            let path = entry?.path();
            let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
                continue;
            };
            if name.ends_with(".tmp") {
                fs::remove_file(&path)?;
                continue;
            }
            if let Some((seq, kind, lines)) = parse_name(name) {
                let bytes = fs::metadata(&path)?.len();
                queue.bytes += bytes;
                queue.next_seq = queue.next_seq.max(seq + 1);
                queue.segments.insert(
                    seq,
                    Segment {
                        seq,
                        kind,
                        lines,
                        bytes,
                        path,
                    },
                );
            }
        }
        let spool = Spool {
            dir: dir.to_owned(),
            max_bytes,
            queue: Mutex::new(queue),
            added: Notify::new(),
            stats,
        };
        spool.publish();
        Ok(spool)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Queue> {
        // A panic elsewhere while holding the lock leaves a queue that is still consistent
        // (each change is one insert or remove).
        self.queue.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn publish(&self) {
        let q = self.lock();
        self.stats
            .spool_batches
            .store(q.segments.len() as u64, Ordering::Relaxed);
        self.stats.spool_bytes.store(q.bytes, Ordering::Relaxed);
    }

    /// Writes one compressed batch of `lines` lines as a segment, durably, then queues it;
    /// the oldest segments go if the bound is passed.
    pub fn push(&self, kind: Kind, lines: u64, body: &[u8]) -> std::io::Result<()> {
        let seq = {
            let mut q = self.lock();
            let seq = q.next_seq;
            q.next_seq += 1;
            seq
        };
        let path = self
            .dir
            .join(format!("{seq:016}-{}-{lines}.gz", kind.as_str()));
        let tmp = path.with_extension("tmp");
        let written = (|| {
            let mut f = File::create(&tmp)?;
            f.write_all(body)?;
            f.sync_all()?;
            fs::rename(&tmp, &path)?;
            File::open(&self.dir)?.sync_all()
        })();
        if let Err(e) = written {
            let _ = fs::remove_file(&tmp);
            return Err(e);
        }
        let mut evicted = Vec::new();
        {
            let mut q = self.lock();
            q.bytes += body.len() as u64;
            q.segments.insert(
                seq,
                Segment {
                    seq,
                    kind,
                    lines,
                    bytes: body.len() as u64,
                    path,
                },
            );
            while q.bytes > self.max_bytes && q.segments.len() > 1 {
                let Some((_, oldest)) = q.segments.pop_first() else {
                    break;
                };
                q.bytes -= oldest.bytes;
                evicted.push(oldest);
            }
        }
        for s in &evicted {
            let _ = fs::remove_file(&s.path);
            self.stats.lose(Loss::BufferFull, s.lines);
            tracing::warn!(
                seq = s.seq,
                kind = s.kind.as_str(),
                lines = s.lines,
                "disk buffer full: oldest batch dropped"
            );
        }
        Stats::add(&self.stats.buffered, lines);
        Stats::add(&self.stats.batches_buffered, 1);
        self.publish();
        self.added.notify_waiters();
        Ok(())
    }

    /// The oldest segment of `kind`, if any.
    pub fn oldest(&self, kind: Kind) -> Option<Segment> {
        self.lock()
            .segments
            .values()
            .find(|s| s.kind == kind)
            .cloned()
    }

    /// Forgets a segment the API has answered for. False if it was already gone (removed to
    /// keep the bound while it was being sent).
    pub fn remove(&self, seg: &Segment) -> bool {
        let gone = {
            let mut q = self.lock();
            let gone = q.segments.remove(&seg.seq);
            if let Some(s) = &gone {
                q.bytes -= s.bytes;
            }
            gone.is_some()
        };
        if gone {
            let _ = fs::remove_file(&seg.path);
            self.publish();
        }
        gone
    }

    pub fn is_empty(&self) -> bool {
        self.lock().segments.is_empty()
    }
}

/// `{seq}-{kind}-{lines}.gz`.
fn parse_name(name: &str) -> Option<(u64, Kind, u64)> {
    let stem = name.strip_suffix(".gz")?;
    let (seq, rest) = stem.split_once('-')?;
    let (kind, lines) = rest.rsplit_once('-')?;
    Some((seq.parse().ok()?, Kind::parse(kind)?, lines.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_survive_a_reopen_in_order_and_the_bound_drops_the_oldest() {
        let dir = tempfile::tempdir().expect("dir");
        let stats = Arc::new(Stats::default());
        let spool = Spool::open(dir.path(), 250, stats.clone()).expect("open");
        spool.push(Kind::GatewayFlow, 3, &[1; 100]).expect("push");
        spool
            .push(Kind::FirewallSyslog, 2, &[2; 100])
            .expect("push");
        fs::write(
            dir.path().join("0000000000000009-gateway-flow-1.tmp"),
            b"half",
        )
        .expect("tmp");
        drop(spool);
        let spool = Spool::open(dir.path(), 250, stats.clone()).expect("reopen");
        assert_eq!(spool.oldest(Kind::GatewayFlow).map(|s| s.lines), Some(3));
        assert_eq!(spool.oldest(Kind::FirewallSyslog).map(|s| s.seq), Some(1));
        spool.push(Kind::GatewayFlow, 4, &[3; 100]).expect("push");
        // 300 bytes > 250: the oldest (3 lines of flows) went.
        assert_eq!(stats.dropped(Loss::BufferFull), 3);
        assert_eq!(spool.oldest(Kind::GatewayFlow).map(|s| s.seq), Some(2));
        assert!(
            !dir.path()
                .join("0000000000000009-gateway-flow-1.tmp")
                .exists()
        );
    }
}
