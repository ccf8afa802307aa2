//! Syslog in: UDP (one message a datagram, RFC 5426; several newline-separated ones are
//! taken too) and TCP (RFC 6587: octet-counted frames `LEN SP MSG`, or newline-terminated
//! ones, told apart frame by frame). Each message becomes one line of a `firewall-syslog`
//! batch, in the RFC 3164 shape the API's parsers read: an RFC 5424 header is rewritten as
//! `<PRI>Mmm dd hh:mm:ss HOST` (time in UTC; structured data, app name, process and message
//! ids left out), and the host is the device the configuration maps the sender's address to.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use chrono::{DateTime, Utc};
use tokio::io::AsyncReadExt;
use tokio::net::{TcpListener, UdpSocket};
use tokio::sync::{Semaphore, watch};

use crate::batch::Batcher;
use crate::config::Config;
use crate::spool::Kind;
use crate::stats::{Loss, Stats};

/// What every syslog receiver needs.
#[derive(Clone)]
pub struct Sink {
    pub config: Arc<Config>,
    pub stats: Arc<Stats>,
    pub batcher: Batcher,
}

impl Sink {
    /// Takes one received message (without its framing) from `from`.
    async fn message(&self, raw: &[u8], from: IpAddr) {
        match line(
            raw,
            self.config.device(from),
            Utc::now(),
            self.config.tuning.max_line_bytes,
        ) {
            Ok(Some(l)) => {
                Stats::add(&self.stats.syslog_received, 1);
                self.batcher.push(Kind::FirewallSyslog, l.as_bytes()).await;
            }
            Ok(None) => {}
            Err(why) => {
                Stats::add(&self.stats.syslog_received, 1);
                self.stats.lose(why, 1);
            }
        }
    }
}

/// The line to forward for one message, `None` for an empty one, or why it is dropped.
pub fn line(
    raw: &[u8],
    device: Option<&str>,
    now: DateTime<Utc>,
    max: usize,
) -> Result<Option<String>, Loss> {
    let raw = raw.strip_suffix(b"\n").unwrap_or(raw);
    let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
    if raw.is_empty() {
        return Ok(None);
    }
    if raw.len() > max {
        return Err(Loss::Oversized);
    }
    let text = std::str::from_utf8(raw).map_err(|_| Loss::Binary)?;
    if text.chars().any(|c| c.is_control() && c != '\t') {
        return Err(Loss::Binary);
    }
    Ok(Some(normalize(text, device, now)))
}

/// The RFC 3164 shape of a message, with `device` as its host when given.
fn normalize(text: &str, device: Option<&str>, now: DateTime<Utc>) -> String {
    let (pri, rest) = match split_pri(text) {
        Some((pri, rest)) => (Some(pri), rest),
        None => (None, text),
    };
    if let Some(m) = rest.strip_prefix("1 ").and_then(rfc5424) {
        let at = m.at.unwrap_or(now);
        let host = device.or(m.host).unwrap_or("-");
        return format!("<{}>{} {host} {}", pri.unwrap_or("13"), stamp(at), m.msg);
    }
    let Some(device) = device else {
        return text.to_owned();
    };
    match rfc3164_header(rest) {
        // Same header, the mapped device as host.
        Some((stamp_len, body)) => format!(
            "<{}>{} {device} {body}",
            pri.unwrap_or("13"),
            &rest[..stamp_len]
        ),
        // No header: one with the time of receipt, so the device can be named.
        None => format!("<{}>{} {device} {rest}", pri.unwrap_or("13"), stamp(now)),
    }
}

fn stamp(at: DateTime<Utc>) -> String {
    at.format("%b %e %H:%M:%S").to_string()
}

/// `<PRI>` of one to three digits.
fn split_pri(text: &str) -> Option<(&str, &str)> {
    let inner = text.strip_prefix('<')?;
    let end = inner.find('>')?;
    let pri = &inner[..end];
    (!pri.is_empty() && pri.len() <= 3 && pri.bytes().all(|b| b.is_ascii_digit()))
        .then(|| (pri, &inner[end + 1..]))
}

/// `Mmm dd hh:mm:ss HOST BODY`: the length of the time stamp and the body.
fn rfc3164_header(rest: &str) -> Option<(usize, &str)> {
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let stamp = rest.get(..15)?;
    if !MONTHS.contains(&stamp.get(..3)?) || stamp.as_bytes().get(9) != Some(&b':') {
        return None;
    }
    let after = rest.get(16..)?;
    let (_host, body) = after.split_once(' ')?;
    Some((15, body))
}

/// What an RFC 5424 header gives: the time and host (`-`: none) and the message.
struct Rfc5424<'a> {
    at: Option<DateTime<Utc>>,
    host: Option<&'a str>,
    msg: &'a str,
}

/// `TIMESTAMP HOST APP PROCID MSGID SD [MSG]` after the version.
fn rfc5424(body: &str) -> Option<Rfc5424<'_>> {
    let mut parts = body.splitn(6, ' ');
    let time = parts.next()?;
    let host = parts.next()?;
    let (_app, _proc, _msgid) = (parts.next()?, parts.next()?, parts.next()?);
    let rest = parts.next().unwrap_or("");
    let at = if time == "-" {
        None
    } else {
        Some(DateTime::parse_from_rfc3339(time).ok()?.with_timezone(&Utc))
    };
    let host = (host != "-").then_some(host);
    let msg = skip_structured_data(rest)?;
    let msg = msg.strip_prefix('\u{feff}').unwrap_or(msg);
    Some(Rfc5424 { at, host, msg })
}

/// The message after the structured data: `-`, or `[...]` elements (`\]` escapes a bracket).
fn skip_structured_data(rest: &str) -> Option<&str> {
    if let Some(msg) = rest.strip_prefix('-') {
        return Some(msg.strip_prefix(' ').unwrap_or(msg));
    }
    let bytes = rest.as_bytes();
    let mut i = 0;
    while bytes.get(i) == Some(&b'[') {
        let mut escaped = false;
        loop {
            i += 1;
            match bytes.get(i)? {
                b'\\' if !escaped => escaped = true,
                b']' if !escaped => break,
                _ => escaped = false,
            }
        }
        i += 1;
    }
    if i == 0 {
        return None;
    }
    let msg = rest.get(i..)?;
    Some(msg.strip_prefix(' ').unwrap_or(msg))
}

/// Receives datagrams on `socket` until `stop` changes.
pub async fn udp(socket: UdpSocket, sink: Sink, mut stop: watch::Receiver<bool>) {
    let mut buf = vec![0u8; 65_536];
    loop {
        let (n, from) = tokio::select! {
            r = socket.recv_from(&mut buf) => match r {
                Ok(r) => r,
                Err(e) => {
                    tracing::warn!(error = %e, "syslog UDP receive");
                    continue;
                }
            },
            _ = stop.changed() => return,
        };
        for message in buf[..n].split(|b| *b == b'\n') {
            sink.message(message, from.ip()).await;
        }
    }
}

/// Accepts connections on `listener` until `stop` changes; each is read until it closes, or
/// until the stop, after which what each had received is handed on before this returns.
pub async fn tcp(listener: TcpListener, sink: Sink, stop: watch::Receiver<bool>) {
    let slots = Arc::new(Semaphore::new(sink.config.tuning.max_tcp_connections));
    let mut connections = tokio::task::JoinSet::new();
    let mut stopping = stop.clone();
    loop {
        let (stream, from) = tokio::select! {
            r = listener.accept() => match r {
                Ok(r) => r,
                Err(e) => {
                    tracing::warn!(error = %e, "syslog TCP accept");
                    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                    continue;
                }
            },
            Some(_) = connections.join_next() => continue,
            _ = stopping.changed() => break,
        };
        let Ok(permit) = slots.clone().try_acquire_owned() else {
            sink.stats.lose(Loss::TooManyConnections, 1);
            continue;
        };
        let sink = sink.clone();
        let stop = stop.clone();
        connections.spawn(async move {
            connection(stream, from, sink, stop).await;
            drop(permit);
        });
    }
    while connections.join_next().await.is_some() {}
}

async fn connection(
    mut stream: tokio::net::TcpStream,
    from: SocketAddr,
    sink: Sink,
    mut stop: watch::Receiver<bool>,
) {
    let mut framer = Framer::new(sink.config.tuning.max_line_bytes);
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        let n = tokio::select! {
            r = stream.read(&mut chunk) => r.unwrap_or(0),
            _ = stop.changed() => 0,
        };
        let mut frames = Vec::new();
        if n == 0 {
            framer.finish(&mut frames);
        } else {
            framer.feed(&chunk[..n], &mut frames);
        }
        for frame in frames {
            match frame {
                Frame::Message(m) => sink.message(&m, from.ip()).await,
                Frame::Oversized => {
                    Stats::add(&sink.stats.syslog_received, 1);
                    sink.stats.lose(Loss::Oversized, 1);
                }
            }
        }
        if n == 0 {
            return;
        }
    }
}

#[derive(Debug, PartialEq)]
pub enum Frame {
    Message(Vec<u8>),
    Oversized,
}

/// RFC 6587 framing of one TCP stream. A frame starting with digits then a space is
/// octet-counted; any other is ended by a newline. Memory stays within `max` plus one read.
pub struct Framer {
    buf: Vec<u8>,
    max: usize,
    /// Bytes still to skip of an oversized octet-counted frame.
    skip: usize,
    /// Discarding an oversized newline-ended frame until its newline.
    discard_line: bool,
}

impl Framer {
    pub fn new(max: usize) -> Framer {
        Framer {
            buf: Vec::new(),
            max,
            skip: 0,
            discard_line: false,
        }
    }

    pub fn feed(&mut self, mut data: &[u8], out: &mut Vec<Frame>) {
        if self.skip > 0 {
            let n = self.skip.min(data.len());
            self.skip -= n;
            data = &data[n..];
        }
        if self.discard_line {
            match data.iter().position(|b| *b == b'\n') {
                Some(i) => {
                    self.discard_line = false;
                    data = &data[i + 1..];
                }
                None => return,
            }
        }
        self.buf.extend_from_slice(data);
        let mut start = 0;
        loop {
            let rest = &self.buf[start..];
            if rest.is_empty() {
                break;
            }
            match octet_count(rest) {
                Some((len, header)) if len > self.max => {
                    out.push(Frame::Oversized);
                    let have = rest.len() - header;
                    if have >= len {
                        start += header + len;
                    } else {
                        self.skip = len - have;
                        start = self.buf.len();
                    }
                }
                Some((len, header)) => {
                    if rest.len() < header + len {
                        break;
                    }
                    out.push(Frame::Message(rest[header..header + len].to_vec()));
                    start += header + len;
                }
                // Maybe a count not yet complete: wait for more.
                None if rest.len() < 11 && rest.iter().all(u8::is_ascii_digit) => break,
                None => {
                    if !self.newline_frame(&mut start, out) {
                        break;
                    }
                }
            }
        }
        self.buf.drain(..start.min(self.buf.len()));
    }

    /// One newline-ended frame from `start`; false if its end has not arrived.
    fn newline_frame(&mut self, start: &mut usize, out: &mut Vec<Frame>) -> bool {
        let rest = &self.buf[*start..];
        match rest.iter().position(|b| *b == b'\n') {
            Some(i) if i > self.max => {
                out.push(Frame::Oversized);
                *start += i + 1;
                true
            }
            Some(i) => {
                out.push(Frame::Message(rest[..i].to_vec()));
                *start += i + 1;
                true
            }
            None if rest.len() > self.max => {
                out.push(Frame::Oversized);
                self.discard_line = true;
                *start = self.buf.len();
                false
            }
            None => false,
        }
    }

    /// The stream closed: what is left is the last message.
    pub fn finish(&mut self, out: &mut Vec<Frame>) {
        if !self.buf.is_empty() && self.skip == 0 && !self.discard_line {
            out.push(Frame::Message(std::mem::take(&mut self.buf)));
        }
        self.buf.clear();
    }
}

/// `LEN SP` at the start of `rest`: the length and the header's size.
fn octet_count(rest: &[u8]) -> Option<(usize, usize)> {
    let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
    if digits == 0 || digits > 10 || rest.get(digits) != Some(&b' ') || rest[0] == b'0' {
        return None;
    }
    let len: usize = std::str::from_utf8(&rest[..digits]).ok()?.parse().ok()?;
    Some((len, digits + 1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn at() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 11, 29, 1, 2, 3)
            .single()
            .expect("time")
    }

    #[test]
    fn an_rfc5424_message_takes_the_rfc3164_shape_with_the_mapped_device() {
        let m = "<134>1 2026-11-29T02:02:03+01:00 fw1 app 42 ID7 [x@1 a=\"\\]x\"][y@2] CEF:0|a|b";
        assert_eq!(
            line(m.as_bytes(), None, at(), 1000),
            Ok(Some("<134>Nov 29 01:02:03 fw1 CEF:0|a|b".into()))
        );
        assert_eq!(
            line(m.as_bytes(), Some("NTE-FW-01"), at(), 1000),
            Ok(Some("<134>Nov 29 01:02:03 NTE-FW-01 CEF:0|a|b".into()))
        );
        let nil = "<13>1 - - - - - - hello\r\n";
        assert_eq!(
            line(nil.as_bytes(), None, at(), 1000),
            Ok(Some("<13>Nov 29 01:02:03 - hello".into()))
        );
    }

    #[test]
    fn an_rfc3164_message_keeps_its_header_and_takes_the_mapped_host() {
        let m = "<189>Nov  2 09:15:42 host1 tag: devname=x";
        assert_eq!(line(m.as_bytes(), None, at(), 1000), Ok(Some(m.into())));
        assert_eq!(
            line(m.as_bytes(), Some("FW"), at(), 1000),
            Ok(Some("<189>Nov  2 09:15:42 FW tag: devname=x".into()))
        );
        assert_eq!(
            line(b"CEF:0|x", Some("FW"), at(), 1000),
            Ok(Some("<13>Nov 29 01:02:03 FW CEF:0|x".into()))
        );
    }

    #[test]
    fn garbage_and_oversized_messages_are_dropped_with_their_reason() {
        assert_eq!(line(b"\xff\xfe\x00", None, at(), 1000), Err(Loss::Binary));
        assert_eq!(line(b"a\x00b", None, at(), 1000), Err(Loss::Binary));
        assert_eq!(line(&[b'a'; 101], None, at(), 100), Err(Loss::Oversized));
        assert_eq!(line(b"\r\n", None, at(), 100), Ok(None));
        // A 5424 header that does not parse is forwarded as it came.
        assert_eq!(
            line(b"<13>1 notatime h a p m - x", None, at(), 100),
            Ok(Some("<13>1 notatime h a p m - x".into()))
        );
    }

    fn frames(max: usize, chunks: &[&[u8]]) -> Vec<Frame> {
        let mut f = Framer::new(max);
        let mut out = Vec::new();
        for c in chunks {
            f.feed(c, &mut out);
        }
        f.finish(&mut out);
        out
    }

    fn msg(s: &str) -> Frame {
        Frame::Message(s.as_bytes().to_vec())
    }

    #[test]
    fn octet_counted_and_newline_frames_mix_and_split_anywhere() {
        let stream = b"5 hello11 hello world<13>plain line\n3 abc";
        let whole = frames(100, &[stream]);
        assert_eq!(
            whole,
            vec![
                msg("hello"),
                msg("hello world"),
                msg("<13>plain line"),
                msg("abc")
            ]
        );
        let bytewise: Vec<&[u8]> = stream.chunks(1).collect();
        assert_eq!(frames(100, &bytewise), whole);
    }

    #[test]
    fn oversized_frames_are_skipped_and_the_stream_goes_on() {
        let mut big = b"20 ".to_vec();
        big.extend_from_slice(&[b'x'; 20]);
        big.extend_from_slice(b"2 ok");
        assert_eq!(frames(10, &[&big]), vec![Frame::Oversized, msg("ok")]);
        let chunks: Vec<&[u8]> = big.chunks(4).collect();
        assert_eq!(frames(10, &chunks), vec![Frame::Oversized, msg("ok")]);
        let long = [vec![b'y'; 30], b"\nnext\n".to_vec()].concat();
        let chunks: Vec<&[u8]> = long.chunks(7).collect();
        assert_eq!(frames(10, &chunks), vec![Frame::Oversized, msg("next")]);
    }
}
