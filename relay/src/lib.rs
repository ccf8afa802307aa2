//! The site relay (docs/relay.md): syslog, NetFlow and IPFIX received on a site, batched,
//! buffered on disk and forwarded to the collection API.

pub mod batch;
pub mod config;
pub mod flow;
pub mod forward;
pub mod spool;
pub mod stats;
pub mod syslog;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use socket2::{Domain, Protocol, Socket, Type};
use tokio::sync::watch;

use crate::batch::Batcher;
use crate::config::Config;
use crate::forward::Forwarder;
use crate::spool::{Kind, Spool};
use crate::stats::Stats;

/// A UDP socket with a large receive buffer: bursts of datagrams wait in the kernel rather
/// than being dropped there while a batch is sealed.
fn udp_socket(addr: SocketAddr, rcvbuf: usize) -> std::io::Result<std::net::UdpSocket> {
    let socket = Socket::new(Domain::for_address(addr), Type::DGRAM, Some(Protocol::UDP))?;
    if let Err(e) = socket.set_recv_buffer_size(rcvbuf) {
        tracing::warn!(error = %e, "SO_RCVBUF");
    }
    let got = socket.recv_buffer_size().unwrap_or(0);
    if got < rcvbuf {
        tracing::warn!(
            asked = rcvbuf,
            got,
            "the kernel capped SO_RCVBUF (raise net.core.rmem_max)"
        );
    }
    socket.bind(&addr.into())?;
    Ok(socket.into())
}

fn status_line(stats: &Stats, event: &str) {
    // One JSON object a line on standard output, for people and scripts alike.
    println!(
        "{}",
        serde_json::json!({ "status": event, "counters": stats.snapshot() })
    );
}

/// Runs the relay until SIGTERM or SIGINT, then seals the open batches, gives the API
/// `tuning.stop_grace_secs` to take the buffer, and leaves the rest on disk.
pub async fn run(config: Config) -> Result<(), String> {
    let stopped = shutdown_signal()?;
    let config = Arc::new(config);
    let stats = Arc::new(Stats::default());
    let spool = Arc::new(
        Spool::open(&config.spool_dir, config.spool_max_bytes, stats.clone())
            .map_err(|e| format!("spool_dir {}: {e}", config.spool_dir.display()))?,
    );
    let (batcher, writer) = Batcher::start(
        spool.clone(),
        stats.clone(),
        config.tuning.batch_bytes,
        Duration::from_millis(config.tuning.flush_ms),
    );
    let (stop_tx, stop) = watch::channel(false);
    let flow_stop = Arc::new(AtomicBool::new(false));
    let mut udp_ports = Vec::new();
    let mut receivers = Vec::new();
    let sink = syslog::Sink {
        config: config.clone(),
        stats: stats.clone(),
        batcher: batcher.clone(),
    };
    for addr in &config.listen.syslog_udp {
        let socket = udp_socket(*addr, config.tuning.udp_rcvbuf_bytes)
            .and_then(|s| {
                s.set_nonblocking(true)?;
                tokio::net::UdpSocket::from_std(s)
            })
            .map_err(|e| format!("listen.syslog_udp {addr}: {e}"))?;
        let local = socket.local_addr().map_err(|e| e.to_string())?;
        udp_ports.push(local.port());
        tracing::info!(%local, "syslog over UDP");
        receivers.push(tokio::spawn(syslog::udp(
            socket,
            sink.clone(),
            stop.clone(),
        )));
    }
    for addr in &config.listen.syslog_tcp {
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|e| format!("listen.syslog_tcp {addr}: {e}"))?;
        tracing::info!(local = %addr, "syslog over TCP");
        receivers.push(tokio::spawn(syslog::tcp(
            listener,
            sink.clone(),
            stop.clone(),
        )));
    }
    let mut flow_threads = Vec::new();
    for addr in &config.listen.flow_udp {
        let socket = udp_socket(*addr, config.tuning.udp_rcvbuf_bytes)
            .map_err(|e| format!("listen.flow_udp {addr}: {e}"))?;
        let local = socket.local_addr().map_err(|e| e.to_string())?;
        udp_ports.push(local.port());
        tracing::info!(%local, "NetFlow v5/v9 and IPFIX over UDP");
        let (config, stats, batcher, stop) = (
            config.clone(),
            stats.clone(),
            batcher.clone(),
            flow_stop.clone(),
        );
        flow_threads.push(std::thread::spawn(move || {
            flow::receive(socket, config, stats, batcher, stop)
        }));
    }
    drop(sink);

    let forwarder = Arc::new(Forwarder {
        client: Forwarder::client()?,
        base: config.base_url.clone(),
        token: config.token.clone(),
        spool: spool.clone(),
        stats: stats.clone(),
        max_backoff: Duration::from_secs(config.tuning.max_backoff_secs),
    });
    let (give_up_tx, give_up) = watch::channel(false);
    let forwarders: Vec<_> = Kind::ALL
        .into_iter()
        .map(|kind| tokio::spawn(forwarder.clone().run(kind, stop.clone(), give_up.clone())))
        .collect();

    // Ticks: seal aged batches, read the kernel's drops, print the status line.
    let ticker = {
        let (batcher, stats, mut stop) = (batcher.clone(), stats.clone(), stop.clone());
        let flush = Duration::from_millis(config.tuning.flush_ms.clamp(10, 250));
        let status_every = config.tuning.status_secs;
        tokio::spawn(async move {
            let mut last_status = tokio::time::Instant::now();
            loop {
                tokio::select! {
                    _ = tokio::time::sleep(flush) => {}
                    _ = stop.changed() => return,
                }
                batcher.flush(false).await;
                stats
                    .kernel_drops
                    .store(stats::kernel_udp_drops(&udp_ports), Ordering::Relaxed);
                if status_every > 0 && last_status.elapsed().as_secs() >= status_every {
                    last_status = tokio::time::Instant::now();
                    status_line(&stats, "running");
                }
            }
        })
    };
    status_line(&stats, "started");

    stopped.await;
    tracing::info!("stopping: sealing open batches and forwarding the buffer");
    let _ = stop_tx.send(true);
    flow_stop.store(true, Ordering::Relaxed);
    for r in receivers {
        let _ = r.await;
    }
    for t in flow_threads {
        let _ = tokio::task::spawn_blocking(move || t.join()).await;
    }
    let _ = ticker.await;
    batcher.flush(true).await;
    drop(batcher);
    let _ = writer.await;
    let grace = Duration::from_secs(config.tuning.stop_grace_secs);
    let drained = tokio::time::timeout(grace, async {
        while !spool.is_empty() {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
    .is_ok();
    let _ = give_up_tx.send(true);
    for f in forwarders {
        let _ = f.await;
    }
    if !drained {
        tracing::warn!(
            "the API did not take the whole buffer in time: it stays on disk for the next start"
        );
    }
    status_line(&stats, "stopped");
    Ok(())
}

/// SIGTERM or SIGINT, registered before the listeners open: a stop sent as soon as the relay
/// answers is never missed.
fn shutdown_signal() -> Result<impl std::future::Future<Output = ()>, String> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate()).map_err(|e| format!("SIGTERM: {e}"))?;
    let mut int = signal(SignalKind::interrupt()).map_err(|e| format!("SIGINT: {e}"))?;
    Ok(async move {
        tokio::select! {
            _ = term.recv() => {}
            _ = int.recv() => {}
        }
    })
}
