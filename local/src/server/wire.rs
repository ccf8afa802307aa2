//! One connection's socket as hyper sees it: it keeps the head, idle and send timeouts, and
//! puts the product's JSON error in place of the answers hyper makes on its own.
//!
//! hyper answers a request head it cannot parse (400, 414, 431) with an empty body, no
//! content type and no way to change either. Its URI limit is a constant and a malformed
//! request line never reaches the router, so no layer can answer first. The socket can: a
//! write while no request is being answered (the [`Exchange`] is waiting) is such an
//! answer, since the gate's answers are all written while their exchange is busy or
//! answered; its status is kept and its bytes replaced by a JSON error with a request id,
//! in the language of the `Accept-Language` header when the bytes already read hold one.

use std::future::Future;
use std::io;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, ready};

use http::{HeaderMap, HeaderValue, header};
use netops_shared::AppState;
use netops_shared::error::ApiError;
use netops_shared::http::{Quota, X_REQUEST_ID, count_address};
use netops_shared::lang::Lang;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::TcpStream;
use tokio::time::{Duration, Instant, Sleep};

use super::{Exchange, Limits};

/// How long a closing connection reads what its client still sends ([`Wire::close`]).
const LINGER: Duration = Duration::from_secs(5);

/// A connection's socket with its timeouts.
pub(super) struct Wire {
    io: TcpStream,
    exchange: Arc<Exchange>,
    limits: Limits,
    /// The server is stopping: a connection waiting for a request head closes at once
    /// rather than when its timeout ends. hyper's graceful shutdown polls every connection
    /// after setting its own state, so the wire sees this on that poll.
    stopping: Arc<AtomicBool>,
    /// When the current wait for a request head began: the accept, or the previous answer's
    /// flush.
    waiting_since: Instant,
    /// Whether a request was answered on this connection: the first head has the header
    /// timeout from the accept, later ones the idle timeout until their first byte.
    answered_one: bool,
    /// When the first byte of the current head came.
    head_started: Option<Instant>,
    lang: LangScan,
    read_timer: Timer,
    write_timer: Timer,
    /// Since when writing has made no progress.
    stalled_since: Option<Instant>,
    /// Our own answer: in place of hyper's, or the 408 of a head that timed out.
    own: Option<Own>,
    /// The head timed out: once its 408 is written, the connection ends.
    head_timed_out: bool,
    /// Counts the refusals of the HTTP layer against the client's address.
    state: AppState,
    client: IpAddr,
}

/// An answer of the HTTP layer's own.
enum Own {
    /// Being made: the refusal is counted against the client's quota first.
    Making(Pin<Box<dyn Future<Output = Vec<u8>> + Send>>),
    /// Its bytes, and how many are written.
    Writing(Vec<u8>, usize),
}

impl Wire {
    pub(super) fn new(
        io: TcpStream,
        exchange: Arc<Exchange>,
        limits: Limits,
        stopping: Arc<AtomicBool>,
        state: AppState,
        client: IpAddr,
    ) -> Self {
        Self {
            io,
            exchange,
            limits,
            stopping,
            waiting_since: Instant::now(),
            answered_one: false,
            head_started: None,
            lang: LangScan::default(),
            read_timer: Timer::default(),
            write_timer: Timer::default(),
            stalled_since: None,
            own: None,
            head_timed_out: false,
            state,
            client,
        }
    }

    /// When the head being waited for must be complete.
    fn head_deadline(&self) -> Instant {
        match (self.answered_one, self.head_started) {
            (false, _) => self.waiting_since + self.limits.header_timeout,
            (true, None) => self.waiting_since + self.limits.idle_timeout,
            (true, Some(at)) => at + self.limits.header_timeout,
        }
    }

    /// The head timed out. A client that sent part of one gets a JSON 408 (nothing else is
    /// being sent), then the connection closes; a silent or idle one is just closed, as HTTP
    /// lets a server close an idle connection.
    fn poll_head_timed_out(&mut self, cx: &mut Context<'_>) -> Poll<io::Error> {
        if self.head_started.is_some() {
            if !self.head_timed_out {
                self.head_timed_out = true;
                self.own = Some(self.refusal(ApiError::request_timeout()));
                tracing::debug!("request head timed out");
            }
            if let Err(e) = ready!(self.poll_own(cx)) {
                return Poll::Ready(e);
            }
        }
        Poll::Ready(io::Error::new(
            io::ErrorKind::TimedOut,
            "no complete request head in time",
        ))
    }

    /// The answer to send instead of hyper's own, whose first bytes are `hyper_answer`.
    fn replacement(&self, hyper_answer: &[u8]) -> Own {
        let error = match hyper_answer.get(9..12) {
            Some(b"414") => ApiError::uri_too_long(),
            Some(b"431") => ApiError::headers_too_large(),
            // hyper answers 400 for any other head it cannot parse.
            _ => ApiError::bad_request(),
        };
        self.refusal(error)
    }

    /// Our answer refusing a request, in the language its head asked for so far, with the
    /// rate-limit headers of the client's address, whose quota the refusal counts against as
    /// a call without a valid token does.
    fn refusal(&self, error: ApiError) -> Own {
        let (state, client, lang) = (self.state.clone(), self.client.to_string(), self.lang.lang);
        Own::Making(Box::pin(async move {
            let quota = count_address(&state, &client, chrono::Utc::now())
                .await
                .ok();
            raw_answer(&error, lang, quota)
        }))
    }

    /// A write's outcome, failing it once the client has taken nothing for the send
    /// timeout.
    fn stall<T>(&mut self, res: Poll<io::Result<T>>, cx: &mut Context<'_>) -> Poll<io::Result<T>> {
        if res.is_ready() {
            self.stalled_since = None;
            return res;
        }
        let since = *self.stalled_since.get_or_insert_with(Instant::now);
        if self
            .write_timer
            .expired(since + self.limits.send_timeout, cx)
        {
            tracing::debug!("the client took no byte of its answer in time");
            let e = io::Error::new(io::ErrorKind::TimedOut, "the client reads nothing");
            return Poll::Ready(Err(e));
        }
        Poll::Pending
    }

    /// Makes and writes what is left of our own answer.
    fn poll_own(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        loop {
            let (answer, written) = match &mut self.own {
                None => return Poll::Ready(Ok(())),
                Some(Own::Making(making)) => {
                    let answer = ready!(making.as_mut().poll(cx));
                    self.own = Some(Own::Writing(answer, 0));
                    continue;
                }
                Some(Own::Writing(answer, written)) => (answer, *written),
            };
            let Some(rest) = answer.get(written..).filter(|rest| !rest.is_empty()) else {
                return Poll::Ready(Ok(()));
            };
            let res = Pin::new(&mut self.io).poll_write(cx, rest);
            let n = ready!(self.stall(res, cx))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            if let Some(Own::Writing(_, written)) = &mut self.own {
                *written += n;
            }
        }
    }

    /// Takes a write of hyper's when it is hyper's own answer (see the module's doc):
    /// `Some(len)` once our answer is written in its place.
    fn poll_replace(
        &mut self,
        first: Option<&[u8]>,
        len: usize,
        cx: &mut Context<'_>,
    ) -> Poll<io::Result<Option<usize>>> {
        if self.own.is_none() {
            match first {
                Some(bytes) if self.exchange.waiting() => {
                    self.own = Some(self.replacement(bytes));
                    // The rest of the refused head may still be coming.
                    self.exchange.linger.store(true, Ordering::Release);
                }
                _ => return Poll::Ready(Ok(None)),
            }
        }
        ready!(self.poll_own(cx))?;
        Poll::Ready(Ok(Some(len)))
    }

    /// Ends the connection: what is left of our own answer, then our side's end (FIN). When
    /// the client may still be sending (a body left unread, a head hyper refused), what it
    /// sends is read and thrown away until it ends its side too, for at most [`LINGER`]:
    /// closing a socket with unread bytes sends a reset, on which the client's system may
    /// drop the answer before its client reads it (the "lingering close" of Apache and nginx).
    pub(super) async fn close(mut self) {
        let linger = self.exchange.linger.load(Ordering::Acquire);
        let ended = async {
            if self.shutdown().await.is_err() || !linger {
                return;
            }
            let mut sink = vec![0; 16 * 1024];
            while matches!(self.io.read(&mut sink).await, Ok(n) if n > 0) {}
        };
        let _ = tokio::time::timeout(LINGER, ended).await;
    }

    /// The answer was flushed: the connection now waits for its next request. The idle
    /// deadline is armed at once: hyper may already be waiting on a read it polled while
    /// the answer was being written, and would not poll again before a byte comes.
    fn start_waiting(&mut self, cx: &mut Context<'_>) {
        self.waiting_since = Instant::now();
        self.answered_one = true;
        self.head_started = None;
        self.lang = LangScan::default();
        self.read_timer.expired(self.head_deadline(), cx);
    }
}

impl AsyncRead for Wire {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        // Bodies have their own deadline, and a request being answered is not the client's
        // to hurry.
        if !this.exchange.waiting() {
            return Pin::new(&mut this.io).poll_read(cx, buf);
        }
        if this.head_timed_out {
            return this.poll_head_timed_out(cx).map(Err);
        }
        if this.stopping.load(Ordering::Acquire) {
            // The end of the stream: hyper closes the connection.
            return Poll::Ready(Ok(()));
        }
        let before = buf.filled().len();
        match Pin::new(&mut this.io).poll_read(cx, buf) {
            Poll::Ready(Ok(())) => {
                let got = &buf.filled()[before..];
                if !got.is_empty() {
                    this.head_started.get_or_insert_with(Instant::now);
                    this.lang.feed(got);
                }
                Poll::Ready(Ok(()))
            }
            Poll::Pending if this.read_timer.expired(this.head_deadline(), cx) => {
                this.poll_head_timed_out(cx).map(Err)
            }
            other => other,
        }
    }
}

impl AsyncWrite for Wire {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        let first = Some(buf).filter(|b| !b.is_empty());
        if let Some(len) = ready!(this.poll_replace(first, buf.len(), cx))? {
            return Poll::Ready(Ok(len));
        }
        let res = Pin::new(&mut this.io).poll_write(cx, buf);
        this.stall(res, cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        let first = bufs.iter().find(|b| !b.is_empty()).map(|b| &b[..]);
        let len = bufs.iter().map(|b| b.len()).sum();
        if let Some(len) = ready!(this.poll_replace(first, len, cx))? {
            return Poll::Ready(Ok(len));
        }
        let res = Pin::new(&mut this.io).poll_write_vectored(cx, bufs);
        this.stall(res, cx)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = &mut *self;
        ready!(this.poll_own(cx))?;
        ready!(Pin::new(&mut this.io).poll_flush(cx))?;
        // hyper flushes the socket only once its own buffer is empty: after an answer was
        // all encoded, this flush means it was all written.
        if this.exchange.settle() {
            this.start_waiting(cx);
        }
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = &mut *self;
        ready!(this.poll_own(cx))?;
        Pin::new(&mut this.io).poll_shutdown(cx)
    }
}

/// A sleep armed on demand and moved to whatever deadline is asked.
#[derive(Default)]
struct Timer(Option<Pin<Box<Sleep>>>);

impl Timer {
    /// Whether `deadline` has passed; if not, the task is woken when it does.
    fn expired(&mut self, deadline: Instant, cx: &mut Context<'_>) -> bool {
        let sleep = match &mut self.0 {
            Some(sleep) => {
                if sleep.deadline() != deadline {
                    sleep.as_mut().reset(deadline);
                }
                sleep
            }
            None => self.0.insert(Box::pin(tokio::time::sleep_until(deadline))),
        };
        sleep.as_mut().poll(cx).is_ready()
    }
}

/// Longest start of a head line kept to look for `Accept-Language`.
const LINE_MAX: usize = 256;

/// Finds `Accept-Language` in a request head's bytes as they arrive, whether or not the
/// head will parse, keeping no more than the start of one line.
#[derive(Default)]
struct LangScan {
    line: Vec<u8>,
    /// A line of the head was seen (empty lines before the request line are ignored).
    started: bool,
    /// The head's blank line was seen: what follows is a body.
    done: bool,
    lang: Lang,
}

impl LangScan {
    fn feed(&mut self, bytes: &[u8]) {
        for piece in bytes.split_inclusive(|b| *b == b'\n') {
            if self.done {
                return;
            }
            let room = LINE_MAX.saturating_sub(self.line.len());
            self.line.extend_from_slice(&piece[..piece.len().min(room)]);
            if piece.ends_with(b"\n") {
                self.end_line();
            }
        }
    }

    fn end_line(&mut self) {
        let line = self.line.trim_ascii_end();
        if line.is_empty() {
            self.done = self.started;
        } else if let Some(colon) = line.iter().position(|b| *b == b':')
            && line[..colon].eq_ignore_ascii_case(header::ACCEPT_LANGUAGE.as_str().as_bytes())
            && let Ok(value) = HeaderValue::from_bytes(line[colon + 1..].trim_ascii())
        {
            let mut headers = HeaderMap::new();
            headers.insert(header::ACCEPT_LANGUAGE, value);
            self.lang = Lang::from_headers(&headers);
        }
        self.started |= !line.is_empty();
        self.line.clear();
    }
}

/// An error as the raw bytes of an HTTP/1.1 answer that closes the connection, with a
/// request id of the gate's form logged with it, and the client's rate-limit headers.
fn raw_answer(error: &ApiError, lang: Lang, quota: Option<Quota>) -> Vec<u8> {
    let id = format!("{:016x}", rand::random::<u64>());
    let status = error.code.status();
    tracing::info!(
        request_id = %id,
        status = status.as_u16(),
        error = error.code.as_str(),
        "refused before routing"
    );
    let body = serde_json::to_vec(&error.body(lang)).unwrap_or_default();
    let mut headers = HeaderMap::new();
    if let Some(quota) = quota {
        quota.put(&mut headers);
    }
    let mut answer = format!(
        "HTTP/1.1 {} {}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\
         {X_REQUEST_ID}: {id}\r\n",
        status.as_str(),
        status.canonical_reason().unwrap_or(""),
        body.len(),
    );
    for (name, value) in &headers {
        answer.push_str(&format!(
            "{name}: {}\r\n",
            value.to_str().unwrap_or_default()
        ));
    }
    answer.push_str(&format!(
        "connection: close\r\ndate: {}\r\n\r\n",
        chrono::Utc::now().format("%a, %d %b %Y %H:%M:%S GMT"),
    ));
    let mut answer = answer.into_bytes();
    answer.extend_from_slice(&body);
    answer
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scan(pieces: &[&[u8]]) -> Lang {
        let mut scan = LangScan::default();
        for p in pieces {
            scan.feed(p);
        }
        scan.lang
    }

    #[test]
    fn accept_language_is_found_across_reads_and_only_in_the_head() {
        assert_eq!(scan(&[b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"]), Lang::Fr);
        assert_eq!(
            scan(&[b"\r\nGET / HTTP/1.1\r\nAccept-Language: en\r\n\r\n"]),
            Lang::En,
            "an empty line before the request line"
        );
        assert_eq!(
            scan(&[b"GET /\xff HTTP/1.1\r\nhost: x\r\naccept-LANGUAGE:  en-GB\r\n\r\n"]),
            Lang::En
        );
        assert_eq!(
            scan(&[
                b"GET / HTTP/1.1\r\nAccept-Lang",
                b"uage: de, en;q=0.5\r",
                b"\n"
            ]),
            Lang::En
        );
        assert_eq!(
            scan(&[b"POST / HTTP/1.1\r\n\r\nAccept-Language: en\r\n"]),
            Lang::Fr,
            "a body is not a head"
        );
        // The start of a 100 KB request line is kept, not the line.
        let mut scan = LangScan::default();
        scan.feed(format!("GET /?q={} HTTP/1.1\r\n", "a".repeat(100_000)).as_bytes());
        assert!(scan.line.capacity() <= 2 * LINE_MAX);
        scan.feed(b"Accept-Language: en\r\n");
        assert_eq!(scan.lang, Lang::En);
    }

    #[test]
    fn a_raw_answer_is_a_json_error_that_closes_the_connection() {
        let quota = Quota {
            limit: 600,
            remaining: 599,
            reset: 42,
            exceeded: false,
        };
        let answer = raw_answer(&ApiError::uri_too_long(), Lang::En, Some(quota));
        let text = String::from_utf8(answer).expect("utf8");
        let (head, body) = text.split_once("\r\n\r\n").expect("head");
        assert!(head.starts_with("HTTP/1.1 414 URI Too Long\r\n"), "{head}");
        assert!(head.contains("\r\ncontent-type: application/json\r\n"));
        assert!(head.contains(&format!("\r\ncontent-length: {}\r\n", body.len())));
        assert!(head.contains("\r\nconnection: close\r\n"));
        assert!(head.contains("\r\nx-ratelimit-limit: 600\r\n"));
        assert!(head.contains("\r\nx-ratelimit-remaining: 599\r\n"));
        assert!(head.contains("\r\nx-ratelimit-reset: 42\r\n"));
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(body).expect("json"),
            serde_json::json!({"error": "uri_too_long", "message": "Request URI too long."})
        );
    }
}
