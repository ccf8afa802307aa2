//! `netops serve`'s HTTP server: an HTTP/1 accept loop over hyper that bounds what a client
//! can hold (connections, slow or idle heads, slow bodies, unread answers) and answers every
//! refusal, those of the HTTP layer included, in the product's JSON error shape
//! (docs/http-conventions.md#errors; docs/configuration.md).
//!
//! `axum::serve` offers neither timeouts nor a connection limit, so the loop is written here
//! after axum's and hyper-util's own: a permit of a semaphore per connection, hyper's HTTP/1
//! connection over a [`Wire`] that keeps time, and hyper's graceful shutdown of each connection.

mod wire;

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::{Pin, pin};
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::ConnectInfo;
use axum::response::Response;
use http::{HeaderValue, Request, header};
use http_body_util::BodyExt;
use hyper::body::{Body as _, Frame, Incoming, SizeHint};
use hyper::server::conn::http1;
use hyper_util::rt::TokioIo;
use netops_shared::AppState;
use netops_shared::config::ConfigError;
use netops_shared::error::ApiError;
use netops_shared::extract::BODY_LIMIT;
use netops_shared::lang::Lang;
use tokio::net::{TcpListener, TcpSocket};
use tokio::sync::Semaphore;
use tokio::time::{Instant, Sleep};
use tower::ServiceExt;

use wire::Wire;

/// Largest request head taken (request line and headers), hyper's read buffer: it bounds
/// what a connection holding a partial head costs. A 100 KB query string still fits, so it
/// reaches hyper's URI check and gets 414 rather than 431.
const MAX_HEAD: usize = 128 * 1024;

/// Descriptors kept out of the default connection limit: the store's files, the listener,
/// standard streams and whatever the runtime opens.
const RESERVED_FDS: u64 = 64;

/// Highest default connection limit, whatever the descriptors allow: each held connection
/// may cost up to [`MAX_HEAD`] of memory, so 4,096 of them at most 512 MiB.
const DEFAULT_MAX_CONNECTIONS: u64 = 4_096;

/// Connections the kernel keeps waiting to be accepted, capped by `net.core.somaxconn`
/// (4,096 on current Linux). Connections past the limit wait there, so it is deep: a full
/// queue drops new connections' first packets, which clients resend only after a second or
/// more.
const LISTEN_BACKLOG: u32 = 4_096;

/// How long a stop waits for the answers under way before leaving anyway.
const GRACE: Duration = Duration::from_secs(10);

/// Pause after a failed accept that is not the client's doing (no descriptor or memory
/// left): accepting again at once would spin the loop.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);

/// How often a repeated warning (connection limit reached, failed accepts) is logged.
const WARN_EVERY: Duration = Duration::from_secs(10);

/// How long and how many connections may be held, read once from the environment (README
/// "Configuration").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// `NETOPS_HEADER_TIMEOUT_SECS` (10): a new connection's first request head must be
    /// complete this long after the connection is accepted, a later one this long after its
    /// first byte; a partial head then gets a JSON 408, a silent connection is just closed.
    pub header_timeout: Duration,
    /// `NETOPS_BODY_TIMEOUT_SECS` (30): a request body must arrive in full this long after
    /// its head, or the answer is a JSON 408 and the connection is closed.
    pub body_timeout: Duration,
    /// `NETOPS_IDLE_TIMEOUT_SECS` (60): how long a kept-alive connection may wait for the
    /// first byte of its next request.
    pub idle_timeout: Duration,
    /// `NETOPS_SEND_TIMEOUT_SECS` (30): an answer of which the client takes no byte for this
    /// long is dropped with its connection.
    pub send_timeout: Duration,
    /// `NETOPS_MAX_CONNECTIONS`: connections served at once; further ones wait in the listen
    /// backlog until one ends. Default: the file-descriptor limit less [`RESERVED_FDS`], at
    /// most [`DEFAULT_MAX_CONNECTIONS`].
    pub max_connections: usize,
}

impl Limits {
    /// The limits the environment sets, given the file-descriptor limit in force; a bad
    /// value fails naming its variable.
    pub fn from_env(fd_limit: u64) -> Result<Limits, ConfigError> {
        Self::from_vars(fd_limit, |var| std::env::var(var).ok())
    }

    /// [`Limits::from_env`] over any source of variables.
    fn from_vars(
        fd_limit: u64,
        vars: impl Fn(&str) -> Option<String>,
    ) -> Result<Limits, ConfigError> {
        // A whole number, at least 1, from variable `var`.
        let number = |var: &'static str, default: u64| match vars(var).filter(|v| !v.is_empty()) {
            None => Ok(default),
            Some(v) => v.parse().ok().filter(|n| *n >= 1).ok_or(ConfigError {
                var,
                reason: format!("'{v}' is not a whole number of at least 1"),
            }),
        };
        let seconds = |var, default| number(var, default).map(Duration::from_secs);
        let default_connections = fd_limit
            .saturating_sub(RESERVED_FDS)
            .clamp(1, DEFAULT_MAX_CONNECTIONS);
        Ok(Limits {
            header_timeout: seconds("NETOPS_HEADER_TIMEOUT_SECS", 10)?,
            body_timeout: seconds("NETOPS_BODY_TIMEOUT_SECS", 30)?,
            idle_timeout: seconds("NETOPS_IDLE_TIMEOUT_SECS", 60)?,
            send_timeout: seconds("NETOPS_SEND_TIMEOUT_SECS", 30)?,
            // Past the semaphore's bound a limit means no limit.
            max_connections: usize::try_from(number(
                "NETOPS_MAX_CONNECTIONS",
                default_connections,
            )?)
            .map_or(Semaphore::MAX_PERMITS, |n| n.min(Semaphore::MAX_PERMITS)),
        })
    }
}

/// Raises the soft limit on open files (`RLIMIT_NOFILE`) to the hard limit and returns the
/// limit in force: each connection holds a descriptor, and login shells often leave the
/// soft limit at 1,024 where the hard one allows far more.
pub fn raise_fd_limit() -> u64 {
    rlimit::increase_nofile_limit(u64::MAX).unwrap_or_else(|e| {
        tracing::warn!(error = %e, "cannot raise the file-descriptor limit");
        // The usual soft limit: the default connection limit stays well within it.
        1_024
    })
}

/// Listens on `addr` with a backlog of [`LISTEN_BACKLOG`] (tokio's `TcpListener::bind` keeps
/// its own, shorter one).
pub fn listen(addr: SocketAddr) -> std::io::Result<TcpListener> {
    let socket = if addr.is_ipv4() {
        TcpSocket::new_v4()?
    } else {
        TcpSocket::new_v6()?
    };
    // As the standard bind does: a restarted server takes its port back at once.
    #[cfg(unix)]
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(LISTEN_BACKLOG)
}

/// Serves `app` on `listener` within `limits` until `stop` resolves, then lets the answers
/// under way finish (at most [`GRACE`]). The refusals of the HTTP layer count against the
/// client's quota in `state`'s counters, as the gate counts a call without a token.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    state: AppState,
    limits: Limits,
    stop: impl Future<Output = ()>,
) {
    let mut http = http1::Builder::new();
    // The wire keeps the head timeouts itself: hyper's header_read_timeout (1.12) also runs
    // while a kept-alive connection waits for its next request, so an idle connection could
    // not be kept longer than a head may take to arrive.
    http.header_read_timeout(None).max_buf_size(MAX_HEAD);
    let slots = Arc::new(Semaphore::new(limits.max_connections));
    // Told to every connection at the stop, so that each finishes the request it is answering
    // and closes (hyper's graceful shutdown); `slots` counts the connections still open.
    let (shutdown, shutting_down) = tokio::sync::watch::channel(false);
    let stopping = Arc::new(AtomicBool::new(false));
    let mut stop = pin!(stop);
    let mut full = Throttled::default();
    let mut starved = Throttled::default();
    loop {
        // A connection past the limit is not accepted: it waits in the listen backlog, where
        // it holds no descriptor of ours, and is served as soon as another ends (the
        // timeouts end slow ones within seconds), rather than being refused.
        let permit = match slots.clone().try_acquire_owned() {
            Ok(permit) => permit,
            Err(_) => {
                if let Some(times) = full.due() {
                    tracing::warn!(
                        limit = limits.max_connections,
                        times,
                        "connection limit reached: new connections wait in the listen backlog"
                    );
                }
                tokio::select! {
                    permit = slots.clone().acquire_owned() => match permit {
                        Ok(permit) => permit,
                        Err(_) => break,
                    },
                    () = &mut stop => break,
                }
            }
        };
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = &mut stop => break,
        };
        let (stream, peer) = match accepted {
            Ok(accepted) => accepted,
            // The client gave up before we took its connection: nothing to wait for.
            Err(e) if is_connection_error(&e) => continue,
            Err(e) => {
                if let Some(times) = starved.due() {
                    tracing::warn!(error = %e, times, "cannot accept connections; retrying");
                }
                tokio::select! {
                    () = tokio::time::sleep(ACCEPT_BACKOFF) => continue,
                    () = &mut stop => break,
                }
            }
        };
        let exchange = Arc::new(Exchange::default());
        let service = Handler {
            app: app.clone(),
            exchange: exchange.clone(),
            peer,
            body_timeout: limits.body_timeout,
        };
        let wire = Wire::new(
            stream,
            exchange,
            limits,
            stopping.clone(),
            state.clone(),
            peer.ip(),
        );
        let mut conn = http.serve_connection(TokioIo::new(wire), service);
        let mut shutting_down = shutting_down.clone();
        tokio::spawn(async move {
            // hyper's own end of a connection shuts the socket and drops it at once: the
            // wire closes it instead, lingering when a client may still be sending.
            let stop = async {
                let _ = shutting_down.wait_for(|stop| *stop).await;
            };
            let ended = tokio::select! {
                ended = std::future::poll_fn(|cx| conn.poll_without_shutdown(cx)) => ended,
                () = stop => {
                    Pin::new(&mut conn).graceful_shutdown();
                    std::future::poll_fn(|cx| conn.poll_without_shutdown(cx)).await
                }
            };
            if let Err(e) = ended {
                tracing::debug!(error = %e, %peer, "connection ended");
            }
            conn.into_parts().io.into_inner().close().await;
            drop(permit);
        });
    }
    drop(listener);
    // Connections waiting for a request close at once (see `Wire`); hyper lets those
    // answering one finish.
    stopping.store(true, Ordering::Release);
    shutdown.send_replace(true);
    let every = u32::try_from(limits.max_connections).unwrap_or(u32::MAX);
    if tokio::time::timeout(GRACE, slots.acquire_many(every))
        .await
        .is_err()
    {
        tracing::warn!("stopping with connections still open after {GRACE:?}");
    }
}

/// Accept errors that concern one connection only (axum's serve loop reads them so too).
fn is_connection_error(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::ConnectionRefused
            | std::io::ErrorKind::ConnectionAborted
            | std::io::ErrorKind::ConnectionReset
    )
}

/// A warning repeated at most once per [`WARN_EVERY`], with how many times it happened.
#[derive(Default)]
struct Throttled {
    last: Option<Instant>,
    times: u64,
}

impl Throttled {
    /// Counts one more occurrence; `Some(count)` when it is time to log them.
    fn due(&mut self) -> Option<u64> {
        self.times += 1;
        if self.last.is_some_and(|at| at.elapsed() < WARN_EVERY) {
            return None;
        }
        self.last = Some(Instant::now());
        Some(std::mem::take(&mut self.times))
    }
}

/// Where a connection stands in its current exchange, shared by its [`Wire`] (which sees
/// bytes) and its [`Handler`] (which sees requests and answers).
#[derive(Default)]
struct Exchange {
    phase: AtomicU8,
    /// The current request's body missed its deadline.
    body_timed_out: AtomicBool,
    /// The body the application left unread, handed back when it dropped it.
    unread: Mutex<Option<Unread>>,
    /// The connection is to close while the client may still be sending: its end lingers
    /// (see `Wire::close`).
    linger: AtomicBool,
}

/// Waiting for a request head (a new connection, or after an answer was flushed).
const WAITING: u8 = 0;
/// A request head was handed to the application; its answer is not all encoded yet.
const BUSY: u8 = 1;
/// The answer is all encoded; hyper may still hold some of it in its buffer.
const ANSWERED: u8 = 2;

impl Exchange {
    fn begin(&self) {
        self.body_timed_out.store(false, Ordering::Release);
        self.phase.store(BUSY, Ordering::Release);
    }

    /// The answer's body is done or dropped: hyper has encoded all of it.
    fn answered(&self) {
        let _ = self
            .phase
            .compare_exchange(BUSY, ANSWERED, Ordering::AcqRel, Ordering::Acquire);
    }

    /// The transport was flushed: an answered exchange is over. True when this starts the
    /// wait for the next request.
    fn settle(&self) -> bool {
        self.phase
            .compare_exchange(ANSWERED, WAITING, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }

    fn waiting(&self) -> bool {
        self.phase.load(Ordering::Acquire) == WAITING
    }

    fn take_unread(&self) -> Option<Unread> {
        self.unread.lock().ok().and_then(|mut unread| unread.take())
    }
}

/// The application as hyper calls it for one connection: the peer's address for the gate
/// (it buckets unauthenticated calls by client address), a deadline on the request body,
/// and the exchange's phase kept up to date.
#[derive(Clone)]
struct Handler {
    app: Router,
    exchange: Arc<Exchange>,
    peer: SocketAddr,
    body_timeout: Duration,
}

impl hyper::service::Service<Request<Incoming>> for Handler {
    type Response = Response<Answer>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Infallible>> + Send>>;

    fn call(&self, req: Request<Incoming>) -> Self::Future {
        self.exchange.begin();
        let lang = Lang::from_headers(req.headers());
        let deadline = Instant::now() + self.body_timeout;
        let exchange = self.exchange.clone();
        let expects_continue = req
            .headers()
            .get(header::EXPECT)
            .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"100-continue"));
        let mut req = req.map(|body| {
            Body::new(Deadline {
                body: Some(body),
                deadline,
                timer: None,
                read: 0,
                ended: false,
                expects_continue,
                exchange: exchange.clone(),
            })
        });
        req.extensions_mut().insert(ConnectInfo(self.peer));
        let app = self.app.clone();
        Box::pin(async move {
            let Ok(mut res) = app.oneshot(req).await;
            let unread = exchange.take_unread();
            if exchange.body_timed_out.load(Ordering::Acquire) {
                res = body_timed_out(res, lang);
            } else if let Some(unread) = unread
                && !unread.discard().await
            {
                res.headers_mut()
                    .insert(header::CONNECTION, HeaderValue::from_static("close"));
                exchange.linger.store(true, Ordering::Release);
            }
            let res = netops_shared::http::conventions::leaving(res);
            Ok(res.map(|body| Answer { body, exchange }))
        })
    }
}

/// The answer to a request whose body missed its deadline: a JSON 408 in the caller's
/// language, keeping the gate's headers (request id, rate limit), and the connection
/// closed. Whatever read the body saw only a failed read (the gate and the JSON extractor
/// answer 413 for any failed read): only here is the cause known.
fn body_timed_out(res: Response, lang: Lang) -> Response {
    let mut answer = ApiError::request_timeout().to_response(lang);
    let headers = answer.headers_mut();
    for (name, value) in res.headers() {
        if name != header::CONTENT_LENGTH && name != header::CONTENT_TYPE {
            headers.append(name, value.clone());
        }
    }
    headers.insert(header::CONNECTION, HeaderValue::from_static("close"));
    answer
}

/// A request body that must arrive in full by a deadline. tower-http's `TimeoutBody`
/// restarts its timer at each frame, so a body trickled a byte at a time would never time
/// out; this one counts from the head. Dropped before its end (a refusal that did not read
/// it), it hands what is left back to the exchange as [`Unread`].
struct Deadline {
    /// Always there until the drop.
    body: Option<Incoming>,
    deadline: Instant,
    /// Armed on the first wait only: most bodies are empty or already there.
    timer: Option<Pin<Box<Sleep>>>,
    /// Bytes of the body read so far.
    read: u64,
    /// The last frame, or an error, was read.
    ended: bool,
    expects_continue: bool,
    exchange: Arc<Exchange>,
}

impl hyper::body::Body for Deadline {
    type Data = Bytes;
    type Error = Box<dyn std::error::Error + Send + Sync>;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let this = &mut *self;
        let Some(body) = this.body.as_mut() else {
            return Poll::Ready(None);
        };
        if let Poll::Ready(frame) = Pin::new(body).poll_frame(cx) {
            match &frame {
                Some(Ok(f)) => this.read += f.data_ref().map_or(0, |d| d.len() as u64),
                _ => this.ended = true,
            }
            return Poll::Ready(frame.map(|f| f.map_err(Into::into)));
        }
        let deadline = this.deadline;
        let timer = this
            .timer
            .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(deadline)));
        if timer.as_mut().poll(cx).is_ready() {
            this.ended = true;
            this.exchange.body_timed_out.store(true, Ordering::Release);
            let e = std::io::Error::new(std::io::ErrorKind::TimedOut, "request body timed out");
            return Poll::Ready(Some(Err(e.into())));
        }
        Poll::Pending
    }

    fn is_end_stream(&self) -> bool {
        self.body.as_ref().is_none_or(|b| b.is_end_stream())
    }

    fn size_hint(&self) -> SizeHint {
        self.body
            .as_ref()
            .map_or_else(|| SizeHint::with_exact(0), |b| b.size_hint())
    }
}

impl Drop for Deadline {
    fn drop(&mut self) {
        if let Some(body) = self.body.take()
            && !self.ended
            && !body.is_end_stream()
            && let Ok(mut unread) = self.exchange.unread.lock()
        {
            *unread = Some(Unread {
                body,
                deadline: self.deadline,
                read: self.read,
                expects_continue: self.expects_continue,
            });
        }
    }
}

/// The rest of a request body the application did not read (it refused the request first:
/// 401, 403, 404, 405, 413, 429...). hyper would read what it already holds of it and close
/// the connection otherwise, often after an answer that did not say so, and a client
/// reusing the connection would lose its next request.
struct Unread {
    body: Incoming,
    deadline: Instant,
    read: u64,
    expects_continue: bool,
}

impl Unread {
    /// Reads the rest and throws it away, so that the connection can serve the next request:
    /// true when the whole body, at most [`BODY_LIMIT`] bytes, came by its deadline. A longer
    /// body is not read; nor is one whose client waits for `100 Continue` (it may never send
    /// it): the answer closes the connection then.
    async fn discard(mut self) -> bool {
        let room = (BODY_LIMIT as u64).saturating_sub(self.read);
        if self.expects_continue || self.body.size_hint().lower() > room {
            return false;
        }
        let drained = async {
            let mut left = room;
            while let Some(frame) = self.body.frame().await {
                let Ok(frame) = frame else { return false };
                let len = frame.data_ref().map_or(0, |d| d.len() as u64);
                let Some(rest) = left.checked_sub(len) else {
                    return false;
                };
                left = rest;
            }
            true
        };
        tokio::time::timeout_at(self.deadline, drained)
            .await
            .unwrap_or(false)
    }
}

/// An answer's body, which tells the exchange when hyper is done with it: hyper drops it
/// once its last frame is encoded.
struct Answer {
    body: Body,
    exchange: Arc<Exchange>,
}

impl hyper::body::Body for Answer {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

impl Drop for Answer {
    fn drop(&mut self) {
        self.exchange.answered();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(fd_limit: u64, vars: &[(&str, &str)]) -> Result<Limits, ConfigError> {
        Limits::from_vars(fd_limit, |var| {
            vars.iter()
                .find(|(k, _)| *k == var)
                .map(|(_, v)| (*v).to_owned())
        })
    }

    #[test]
    fn the_default_connection_limit_follows_the_descriptors() {
        let defaults = limits(1_024, &[]).expect("defaults");
        assert_eq!(defaults.max_connections, 960);
        assert_eq!(defaults.header_timeout, Duration::from_secs(10));
        assert_eq!(defaults.body_timeout, Duration::from_secs(30));
        assert_eq!(defaults.idle_timeout, Duration::from_secs(60));
        assert_eq!(defaults.send_timeout, Duration::from_secs(30));
        assert_eq!(
            limits(1 << 20, &[]).expect("defaults").max_connections,
            4_096
        );
        assert_eq!(limits(10, &[]).expect("defaults").max_connections, 1);
    }

    #[test]
    fn limits_come_from_the_environment_and_bad_ones_name_their_variable() {
        let set = limits(
            1_024,
            &[
                ("NETOPS_IDLE_TIMEOUT_SECS", "5"),
                ("NETOPS_MAX_CONNECTIONS", "9000"),
            ],
        )
        .expect("limits");
        assert_eq!(set.idle_timeout, Duration::from_secs(5));
        assert_eq!(set.max_connections, 9_000);
        let huge = limits(1_024, &[("NETOPS_MAX_CONNECTIONS", "18446744073709551615")]);
        assert_eq!(
            huge.expect("limits").max_connections,
            Semaphore::MAX_PERMITS
        );
        for bad in ["0", "-1", "1.5", "ten"] {
            let e = limits(1_024, &[("NETOPS_BODY_TIMEOUT_SECS", bad)]).expect_err(bad);
            assert_eq!(e.var, "NETOPS_BODY_TIMEOUT_SECS");
        }
    }

    #[test]
    fn a_warning_repeats_once_per_period_with_its_count() {
        let mut warn = Throttled::default();
        assert_eq!(warn.due(), Some(1));
        assert_eq!(warn.due(), None);
        assert_eq!(warn.due(), None);
        warn.last = Some(Instant::now() - WARN_EVERY);
        assert_eq!(warn.due(), Some(3));
    }
}
