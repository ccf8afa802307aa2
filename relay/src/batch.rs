//! Lines become batches: each kind has one open batch in memory, sealed when it reaches
//! `tuning.batch_bytes` or `tuning.flush_ms` of age; a sealed batch is compressed and written
//! to the disk buffer off the receiving tasks (a blocking thread), then forgotten in memory.

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::mpsc;

use crate::spool::{Kind, Spool};
use crate::stats::{Loss, Stats};

struct Open {
    buf: Vec<u8>,
    lines: u64,
    since: Instant,
}

/// A full or aged batch on its way to the disk.
struct Sealed {
    kind: Kind,
    lines: u64,
    body: Vec<u8>,
}

#[derive(Clone)]
pub struct Batcher {
    open: Arc<[Mutex<Open>; 2]>,
    sealed: mpsc::Sender<Sealed>,
    batch_bytes: usize,
    flush: Duration,
}

impl Batcher {
    /// The batcher and the task that writes sealed batches into `spool`; the task ends once
    /// every clone of the batcher is dropped and what they sealed is written.
    pub fn start(
        spool: Arc<Spool>,
        stats: Arc<Stats>,
        batch_bytes: usize,
        flush: Duration,
    ) -> (Batcher, tokio::task::JoinHandle<()>) {
        // A few batches in flight to the disk; beyond that the receivers wait (and the
        // kernel's socket buffers absorb the burst).
        let (tx, mut rx) = mpsc::channel::<Sealed>(4);
        let writer = tokio::spawn(async move {
            while let Some(batch) = rx.recv().await {
                let spool = spool.clone();
                let stats = stats.clone();
                let written = tokio::task::spawn_blocking(move || {
                    let body = gzip(&batch.body)?;
                    spool.push(batch.kind, batch.lines, &body)
                })
                .await;
                match written {
                    Ok(Ok(())) => {}
                    Ok(Err(e)) => {
                        stats.lose(Loss::BufferWrite, batch.lines);
                        tracing::error!(error = %e, lines = batch.lines, "cannot write a batch to the disk buffer");
                    }
                    Err(e) => {
                        stats.lose(Loss::BufferWrite, batch.lines);
                        tracing::error!(error = %e, "the batch writer failed");
                    }
                }
            }
        });
        let open = || {
            Mutex::new(Open {
                buf: Vec::with_capacity(batch_bytes + 64 * 1024),
                lines: 0,
                since: Instant::now(),
            })
        };
        let batcher = Batcher {
            open: Arc::new([open(), open()]),
            sealed: tx,
            batch_bytes,
            flush,
        };
        (batcher, writer)
    }

    fn slot(&self, kind: Kind) -> &Mutex<Open> {
        &self.open[kind as usize]
    }

    /// Adds one line (without its newline) to `kind`'s open batch.
    pub async fn push(&self, kind: Kind, line: &[u8]) {
        if let Some(sealed) = self.add(kind, line) {
            let _ = self.sealed.send(sealed).await;
        }
    }

    /// The same from a thread outside the runtime (the flow receiver).
    pub fn push_blocking(&self, kind: Kind, line: &[u8]) {
        if let Some(sealed) = self.add(kind, line) {
            let _ = self.sealed.blocking_send(sealed);
        }
    }

    fn add(&self, kind: Kind, line: &[u8]) -> Option<Sealed> {
        let mut open = self.slot(kind).lock().unwrap_or_else(|e| e.into_inner());
        if open.lines == 0 {
            open.since = Instant::now();
        }
        open.buf.extend_from_slice(line);
        open.buf.push(b'\n');
        open.lines += 1;
        (open.buf.len() >= self.batch_bytes).then(|| take(kind, &mut open, self.batch_bytes))
    }

    /// Seals every open batch older than the flush interval (all of them when `all`).
    pub async fn flush(&self, all: bool) {
        for kind in Kind::ALL {
            let sealed = {
                let mut open = self.slot(kind).lock().unwrap_or_else(|e| e.into_inner());
                (open.lines > 0 && (all || open.since.elapsed() >= self.flush))
                    .then(|| take(kind, &mut open, self.batch_bytes))
            };
            if let Some(sealed) = sealed {
                let _ = self.sealed.send(sealed).await;
            }
        }
    }
}

fn take(kind: Kind, open: &mut Open, capacity: usize) -> Sealed {
    let body = std::mem::replace(&mut open.buf, Vec::with_capacity(capacity + 64 * 1024));
    let lines = std::mem::take(&mut open.lines);
    Sealed { kind, lines, body }
}

fn gzip(data: &[u8]) -> std::io::Result<Vec<u8>> {
    // The fast level: a site relay's two cores are better spent receiving; flow lines still
    // compress about tenfold (bench/relay-results.md).
    let mut gz = flate2::write::GzEncoder::new(
        Vec::with_capacity(data.len() / 4),
        flate2::Compression::fast(),
    );
    gz.write_all(data)?;
    gz.finish()
}
