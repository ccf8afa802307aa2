//! Connections as an abusive or unlucky client holds them: many at once, silent, slow, idle,
//! never reading, or with request heads the HTTP layer cannot take. `netops serve` bounds
//! each in time and in number, keeps serving a normal client, and answers every refusal in
//! the product's JSON error shape.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};

use crate::served::{Serve, Served, create_token};

/// Longest any read of these tests waits for the server.
const PATIENCE: Duration = Duration::from_secs(15);

/// An answer read off a raw connection.
#[derive(Debug)]
struct Answer {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Answer {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or(Value::Null)
    }

    /// Checks a refusal in the product's shape: status, JSON content type, a request id
    /// and exactly `{error, message}`.
    fn assert_refusal(&self, status: u16, error: &str, message: &str) {
        assert_eq!(self.status, status, "{self:?}");
        assert_eq!(
            self.header("content-type"),
            Some("application/json"),
            "{self:?}"
        );
        let id = self.header("x-request-id").unwrap_or("");
        assert!(
            id.len() == 16 && id.bytes().all(|b| b.is_ascii_hexdigit()),
            "request id {id:?}"
        );
        assert_eq!(self.json(), json!({"error": error, "message": message}));
    }
}

/// The first complete answer in `bytes`, if there is one: the head, and as much body as its
/// `content-length` says (all the rest when it has none, as when the server closes).
fn parse(bytes: &[u8], closed: bool) -> Option<Answer> {
    let end = bytes.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = std::str::from_utf8(&bytes[..end]).ok()?;
    let mut lines = head.split("\r\n");
    let status = lines.next()?.split(' ').nth(1)?.parse().ok()?;
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let rest = &bytes[end + 4..];
    let length = headers
        .iter()
        .find(|(k, _)| k == "content-length")
        .and_then(|(_, v)| v.parse::<usize>().ok());
    let body = match length {
        Some(n) if rest.len() >= n => rest[..n].to_vec(),
        None if closed => rest.to_vec(),
        _ => return None,
    };
    Some(Answer {
        status,
        headers,
        body,
    })
}

/// Reads until the server closes the connection (end of stream or reset); returns what
/// came and how long it took. Panics past [`PATIENCE`]: the server kept the connection.
async fn until_closed(stream: &mut TcpStream) -> (Vec<u8>, Duration) {
    let started = Instant::now();
    let mut got = Vec::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match tokio::time::timeout_at((started + PATIENCE).into(), stream.read(&mut buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) => return (got, started.elapsed()),
            Ok(Ok(n)) => got.extend_from_slice(&buf[..n]),
            Err(_) => panic!(
                "the server kept the connection open {PATIENCE:?} ({} bytes read)",
                got.len()
            ),
        }
    }
}

/// Reads one complete answer off a connection the server keeps open.
async fn read_answer(stream: &mut TcpStream) -> Answer {
    let mut got = Vec::new();
    let mut buf = vec![0u8; 16 * 1024];
    let deadline = Instant::now() + PATIENCE;
    loop {
        if let Some(answer) = parse(&got, false) {
            return answer;
        }
        match tokio::time::timeout_at(deadline.into(), stream.read(&mut buf)).await {
            Ok(Ok(n)) if n > 0 => got.extend_from_slice(&buf[..n]),
            other => panic!("no complete answer ({other:?}): {got:?}"),
        }
    }
}

/// Sends `request` on a new connection and reads the answer until the server closes. The
/// request is written in the background: the server may answer and close before it has read
/// it all, as it does with an oversized head.
async fn exchange(addr: &str, request: Vec<u8>) -> Answer {
    let stream = TcpStream::connect(addr).await.expect("connect");
    let (mut reader, mut writer) = stream.into_split();
    let sending = tokio::spawn(async move {
        let _ = writer.write_all(&request).await;
        writer
    });
    let mut got = Vec::new();
    let _ = tokio::time::timeout(PATIENCE, reader.read_to_end(&mut got))
        .await
        .expect("the server closes after a refusal");
    drop(sending.await);
    parse(&got, true).unwrap_or_else(|| panic!("no answer: {:?}", String::from_utf8_lossy(&got)))
}

/// `GET /me` with the demo token on a new connection: checks it answers 200 within
/// [`PATIENCE`] and returns how long it took.
async fn me(served: &Served) -> Duration {
    let started = Instant::now();
    let res = reqwest::Client::new()
        .get(format!("{}/me", served.base))
        .bearer_auth(&served.token)
        .timeout(PATIENCE)
        .send()
        .await
        .expect("GET /me answers");
    assert_eq!(res.status(), 200);
    started.elapsed()
}

/// Raises this test process's own soft file-descriptor limit to hold `need` sockets.
fn raise_own_fd_limit(need: u64) {
    let limit = rlimit::increase_nofile_limit(u64::MAX).expect("raise RLIMIT_NOFILE");
    assert!(
        limit >= need,
        "this test holds {need} sockets; the hard file-descriptor limit allows {limit}"
    );
}

/// How many file descriptors process `pid` has open.
fn fd_count(pid: &str) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|d| d.count())
        .unwrap_or(0)
}

/// CPU time process `pid` has used (user and system).
fn cpu_time(pid: &str) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("stat");
    // Fields after the command name (which may hold spaces); utime and stime are the 14th
    // and 15th fields of the line, in clock ticks of 1/100 s on Linux.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest)
        .unwrap_or("")
        .split_whitespace()
        .collect();
    let ticks: u64 =
        fields[11].parse::<u64>().expect("utime") + fields[12].parse::<u64>().expect("stime");
    Duration::from_millis(ticks * 10)
}

/// Waits, at most [`PATIENCE`], until `ok` holds.
async fn eventually(what: &str, mut ok: impl FnMut() -> bool) {
    let deadline = Instant::now() + PATIENCE;
    while !ok() {
        assert!(Instant::now() < deadline, "never: {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The ways a connection is held open without completing a request.
#[derive(Clone, Copy, Debug)]
enum Hold {
    /// Connects and sends nothing.
    Silent,
    /// Sends part of a request head.
    PartialHead,
    /// Sends a write's head and part of its body.
    SlowBody,
    /// Makes one complete request, reads the answer, and stays connected.
    Idle,
}

impl Hold {
    const ALL: [Hold; 4] = [Hold::Silent, Hold::PartialHead, Hold::SlowBody, Hold::Idle];

    async fn open(self, addr: &str, token: &str) -> TcpStream {
        let mut stream = TcpStream::connect(addr).await.expect("connect");
        let sent = match self {
            Hold::Silent => String::new(),
            Hold::PartialHead => "GET /api/v1/me HTTP/1.1\r\nHost: x\r\nX-Slow: ".into(),
            Hold::SlowBody => format!(
                "POST /api/v1/alerts/hm-999999/ack HTTP/1.1\r\nHost: x\r\n\
                 Authorization: Bearer {token}\r\nContent-Type: application/json\r\n\
                 Content-Length: 1000\r\n\r\n{{\"note\": \""
            ),
            Hold::Idle => format!(
                "GET /api/v1/me HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n\r\n"
            ),
        };
        stream.write_all(sent.as_bytes()).await.expect("send");
        if let Hold::Idle = self {
            read_answer(&mut stream).await;
        }
        stream
    }
}

/// Opens `count` connections held in the ways of [`Hold`], in turn, 200 at a time.
async fn hold(addr: &str, token: &str, count: usize, ways: &[Hold]) -> Vec<TcpStream> {
    let mut held = Vec::with_capacity(count);
    let deadline = Instant::now() + PATIENCE;
    for batch in (0..count).collect::<Vec<_>>().chunks(200) {
        let mut opening = tokio::task::JoinSet::new();
        for &i in batch {
            let (addr, token, way) = (addr.to_owned(), token.to_owned(), ways[i % ways.len()]);
            opening.spawn(async move { way.open(&addr, &token).await });
        }
        while let Some(stream) = tokio::time::timeout_at(deadline.into(), opening.join_next())
            .await
            .unwrap_or_else(|_| panic!("{} of {count} connections opened", held.len()))
        {
            held.push(stream.expect("open"));
        }
    }
    held
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_normal_client_is_served_promptly_while_two_thousand_slow_connections_are_held() {
    raise_own_fd_limit(2_500);
    // A soft limit of 1,024 descriptors, as many login shells set: the server raises its own.
    // Long timeouts keep every slow connection held for the whole measurement.
    let served = Serve::seeded()
        .fd_limit(1024, None)
        .env("NETOPS_HEADER_TIMEOUT_SECS", 60)
        .env("NETOPS_BODY_TIMEOUT_SECS", 60)
        // Within the quota: a write over it is refused before its body is read, so it would
        // not stay held.
        .env("NETOPS_RATE_LIMIT", 100_000)
        .start();
    let pid = served.pid();
    // The normal client has a token of its own: the held writes spend the demo token's quota.
    let token = create_token(&served.db, &["--name", "dashboard", "--scopes", "all"]);
    let idle_fds = fd_count(&pid);

    let held = hold(served.addr(), &served.token, 2_000, &Hold::ALL).await;
    eventually("the server holds the 2,000 connections", || {
        fd_count(&pid) >= idle_fds + 2_000
    })
    .await;

    // A new connection for every call: each is accepted beside the held ones.
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .timeout(Duration::from_secs(5))
        .build()
        .expect("client");
    let mut latencies = Vec::new();
    for _ in 0..20 {
        let started = Instant::now();
        let res = client
            .get(format!("{}/me", served.base))
            .bearer_auth(&token)
            .send()
            .await
            .expect("GET /me answers while 2,000 connections are held");
        assert_eq!(res.status(), 200);
        latencies.push(started.elapsed());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let held_fds = fd_count(&pid);
    latencies.sort();
    eprintln!(
        "reliability: 2,000 held connections: server fds {idle_fds} idle, {held_fds} holding them; \
         GET /me on a new connection: median {:?}, max {:?}",
        latencies[latencies.len() / 2],
        latencies[latencies.len() - 1]
    );
    assert!(
        latencies[latencies.len() - 1] < Duration::from_secs(1),
        "every call under 1 s: {latencies:?}"
    );
    assert!(
        held_fds >= idle_fds + 2_000,
        "the slow connections were held throughout ({held_fds} fds)"
    );
    drop(held);
}

#[tokio::test]
async fn slow_and_idle_connections_are_closed_within_their_timeouts() {
    let served = Serve::seeded()
        .env("NETOPS_HEADER_TIMEOUT_SECS", 1)
        .env("NETOPS_BODY_TIMEOUT_SECS", 1)
        .env("NETOPS_IDLE_TIMEOUT_SECS", 3)
        .env("NETOPS_SEND_TIMEOUT_SECS", 1)
        .start();
    let addr = served.addr();
    let token = &served.token;
    let margin = Duration::from_secs(2);

    let silent = async {
        let mut s = Hold::Silent.open(addr, token).await;
        until_closed(&mut s).await
    };
    let partial_head = async {
        let mut s = TcpStream::connect(addr).await.expect("connect");
        s.write_all(b"GET /api/v1/me HTTP/1.1\r\nHost: x\r\nAccept-Language: en\r\nX-Sl")
            .await
            .expect("send");
        until_closed(&mut s).await
    };
    let slow_body = async {
        let mut s = Hold::SlowBody.open(addr, token).await;
        until_closed(&mut s).await
    };
    let idle = async {
        let mut s = Hold::Idle.open(addr, token).await;
        until_closed(&mut s).await
    };
    // A client that asks for answers and never reads them.
    let one_document = reqwest::get(format!("{}/openapi.json", served.base))
        .await
        .expect("openapi")
        .bytes()
        .await
        .expect("body")
        .len();
    let never_reads = async {
        let socket = TcpSocket::new_v4().expect("socket");
        socket.set_recv_buffer_size(4096).expect("rcvbuf");
        let mut s = socket
            .connect(addr.parse().expect("addr"))
            .await
            .expect("connect");
        let ask = "GET /api/v1/openapi.json HTTP/1.1\r\nHost: x\r\n\r\n".repeat(300);
        s.write_all(ask.as_bytes()).await.expect("send");
        tokio::time::sleep(Duration::from_secs(3)).await;
        until_closed(&mut s).await
    };
    let (silent, partial_head, slow_body, idle, never_reads) =
        tokio::join!(silent, partial_head, slow_body, idle, never_reads);

    // Nothing sent: closed after the header timeout, without a word.
    assert!(silent.0.is_empty(), "{:?}", silent.0);
    assert!(
        silent.1 >= Duration::from_millis(900) && silent.1 <= Duration::from_secs(1) + margin,
        "silent connection closed after {:?}",
        silent.1
    );
    // Part of a head: a JSON 408 in the language its headers asked for, then closed.
    parse(&partial_head.0, true)
        .expect("an answer")
        .assert_refusal(
            408,
            "request_timeout",
            "The request did not arrive in full in time; send it again.",
        );
    assert!(
        partial_head.1 <= Duration::from_secs(1) + margin,
        "{:?}",
        partial_head.1
    );
    // Part of a body: a JSON 408 from the router's side, with the gate's headers.
    let answer = parse(&slow_body.0, true).expect("an answer");
    answer.assert_refusal(
        408,
        "request_timeout",
        "La requête n'est pas arrivée en entier à temps ; renvoyez-la.",
    );
    assert!(answer.header("x-ratelimit-limit").is_some(), "{answer:?}");
    assert!(
        slow_body.1 <= Duration::from_secs(1) + margin,
        "{:?}",
        slow_body.1
    );
    // Idle after an answer: kept past the header timeout, closed after the idle timeout.
    assert!(idle.0.is_empty(), "{:?}", idle.0);
    assert!(
        idle.1 >= Duration::from_millis(2_500) && idle.1 <= Duration::from_secs(3) + margin,
        "idle connection closed after {:?}",
        idle.1
    );
    // Never reading: the server gave up once its writes stalled, long before the 300th
    // answer (the socket buffers hold a few megabytes at most).
    assert!(
        never_reads.0.len() < 300 * one_document,
        "{} bytes of 300 answers of {one_document}",
        never_reads.0.len()
    );
}

#[tokio::test]
async fn refusals_of_the_http_layer_are_json_in_the_callers_language() {
    let served = Serve::seeded().start();
    let addr = served.addr();
    let fr_uri = "Adresse de la requête trop longue.";
    let fr_head = "En-têtes de requête trop volumineux ou trop nombreux.";

    // A 100 KB query string: beyond the longest URI the HTTP layer takes.
    let long_query = format!(
        "GET /api/v1/me?q={} HTTP/1.1\r\nHost: x\r\n\r\n",
        "a".repeat(100_000)
    );
    exchange(addr, long_query.into_bytes())
        .await
        .assert_refusal(414, "uri_too_long", fr_uri);
    // The same in English: the whole head was read, Accept-Language with it.
    let long_query = format!(
        "GET /api/v1/me?q={} HTTP/1.1\r\nHost: x\r\nAccept-Language: en\r\n\r\n",
        "a".repeat(100_000)
    );
    exchange(addr, long_query.into_bytes())
        .await
        .assert_refusal(414, "uri_too_long", "Request URI too long.");

    // A 1 MB URL: the head outgrows the buffer before its headers are read, so French.
    let huge_url = format!(
        "GET /api/v1/me?q={} HTTP/1.1\r\nHost: x\r\nAccept-Language: en\r\n\r\n",
        "a".repeat(1 << 20)
    );
    exchange(addr, huge_url.into_bytes())
        .await
        .assert_refusal(431, "headers_too_large", fr_head);

    // 10,000 headers, Accept-Language first: English.
    let mut many = String::from("GET /api/v1/me HTTP/1.1\r\nAccept-Language: en\r\nHost: x\r\n");
    for i in 0..10_000 {
        many.push_str(&format!("X-Filler-{i}: a\r\n"));
    }
    many.push_str("\r\n");
    exchange(addr, many.into_bytes()).await.assert_refusal(
        431,
        "headers_too_large",
        "Request headers too large or too many.",
    );

    // Raw bytes the request line cannot hold.
    let ff = b"GET /api/v1/\xffme HTTP/1.1\r\nHost: x\r\nAccept-Language: en\r\n\r\n";
    exchange(addr, ff.to_vec())
        .await
        .assert_refusal(400, "bad_request", "Malformed HTTP request.");
    exchange(
        addr,
        b"GET /api/v1/\0me HTTP/1.1\r\nHost: x\r\n\r\n".to_vec(),
    )
    .await
    .assert_refusal(400, "bad_request", "Requête HTTP mal formée.");

    // The server still serves after all of them.
    me(&served).await;
}

#[tokio::test]
async fn when_file_descriptors_run_out_new_connections_wait_and_the_server_does_not_spin() {
    // 256 descriptors at most, and a connection limit set above them: accepting fails
    // (EMFILE) while 300 silent connections are held, until they time out.
    let served = Serve::seeded()
        .fd_limit(256, Some(256))
        .env("NETOPS_MAX_CONNECTIONS", 1_000)
        .env("NETOPS_HEADER_TIMEOUT_SECS", 4)
        .start();
    let pid = served.pid();
    let held = hold(served.addr(), &served.token, 300, &[Hold::Silent]).await;
    eventually("the server runs out of descriptors", || {
        fd_count(&pid) >= 250
    })
    .await;
    let before = cpu_time(&pid);
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    let spent = cpu_time(&pid) - before;
    eprintln!("reliability: out of descriptors: the server used {spent:?} of CPU in 1.5 s");
    assert!(
        spent < Duration::from_millis(50),
        "the accept loop spins: {spent:?} of CPU in 1.5 s"
    );
    // A normal client waits in the backlog until the silent ones time out, then is served.
    let waited = me(&served).await;
    assert!(waited < Duration::from_secs(8), "{waited:?}");
    drop(held);
}

#[tokio::test]
async fn the_default_connection_limit_keeps_file_descriptors_in_reserve() {
    // 256 descriptors at most and no connection limit set: the default leaves room for the
    // store's files, so connections past it wait in the backlog and the process never runs
    // out of descriptors.
    let served = Serve::seeded()
        .fd_limit(256, Some(256))
        .env("NETOPS_HEADER_TIMEOUT_SECS", 3)
        .start();
    let pid = served.pid();
    let held = hold(served.addr(), &served.token, 300, &[Hold::Silent]).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let fds = fd_count(&pid);
    assert!(fds <= 256 - 32, "{fds} descriptors open of 256");
    // Served once the first of them time out, with descriptors to spare for the store.
    me(&served).await;
    drop(held);
}

#[tokio::test]
async fn a_stop_does_not_wait_for_connections_that_hold_no_request() {
    let mut served = Serve::seeded().start();
    let addr = served.addr().to_owned();
    let held = hold(
        &addr,
        &served.token,
        3,
        &[Hold::Silent, Hold::PartialHead, Hold::Idle],
    )
    .await;
    let started = Instant::now();
    let exit = served.terminate();
    assert!(exit.success(), "clean exit on SIGTERM: {exit:?}");
    // Well before the 10 s a silent connection or a partial head is given.
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    drop(held);
}

#[tokio::test]
async fn unauthenticated_calls_are_counted_per_client_address() {
    // The gate buckets calls without a valid token by the peer address the server loop
    // hands it: two loopback addresses, two buckets.
    let served = Serve::seeded()
        .env("NETOPS_RATE_LIMIT", 2)
        .env("NETOPS_RATE_WINDOW_SECS", LONG_WINDOW)
        .start();
    let from = |ip: [u8; 4]| {
        reqwest::Client::builder()
            .local_address(std::net::IpAddr::from(ip))
            .build()
            .expect("client")
    };
    let (first, second) = (from([127, 0, 0, 1]), from([127, 0, 0, 2]));
    let me = format!("{}/me", served.base);
    let mut statuses = Vec::new();
    for _ in 0..3 {
        statuses.push(first.get(&me).send().await.expect("me").status().as_u16());
    }
    assert_eq!(statuses, [401, 401, 429]);
    let other = second.get(&me).send().await.expect("me");
    assert_eq!(
        other.status(),
        401,
        "another address has a bucket of its own"
    );
    assert_eq!(other.headers()["x-ratelimit-remaining"], "1");
}

/// A rate-limit window (about 30 years) whose end no test run reaches: a test that counts
/// calls does not see its counts start again.
const LONG_WINDOW: u64 = 1 << 30;

/// How a test request carries its body.
#[derive(Clone, Copy, Debug)]
enum Framing {
    /// `Content-Length`.
    Length,
    /// `Transfer-Encoding: chunked`, in chunks of 4 KiB.
    Chunked,
}

/// A request with a JSON body of `size` bytes (`{"note": "xx…"}`), head and body as one
/// client writes them.
fn request_with_body(
    method: &str,
    path: &str,
    token: Option<&str>,
    size: usize,
    framing: Framing,
) -> Vec<u8> {
    let body = format!("{{\"note\": \"{}\"}}", "x".repeat(size.saturating_sub(12)));
    let mut head =
        format!("{method} /api/v1{path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n");
    if let Some(token) = token {
        head.push_str(&format!("Authorization: Bearer {token}\r\n"));
    }
    let mut bytes = match framing {
        Framing::Length => format!("{head}Content-Length: {}\r\n\r\n", body.len()).into_bytes(),
        Framing::Chunked => format!("{head}Transfer-Encoding: chunked\r\n\r\n").into_bytes(),
    };
    match framing {
        Framing::Length => bytes.extend_from_slice(body.as_bytes()),
        Framing::Chunked => {
            for chunk in body.as_bytes().chunks(4096) {
                bytes.extend_from_slice(format!("{:x}\r\n", chunk.len()).as_bytes());
                bytes.extend_from_slice(chunk);
                bytes.extend_from_slice(b"\r\n");
            }
            bytes.extend_from_slice(b"0\r\n\r\n");
        }
    }
    bytes
}

#[tokio::test]
async fn every_write_refused_before_its_body_is_read_is_answered_on_the_kept_alive_connection() {
    // Six calls: the refusals go past the quota of every caller within the test, in a window
    // of 30 years that no test run crosses the end of.
    let served = Serve::seeded()
        .env("NETOPS_RATE_LIMIT", 6)
        .env("NETOPS_RATE_WINDOW_SECS", LONG_WINDOW)
        .start();
    let http = reqwest::Client::new();
    let host = crate::netdiag_host(&http, &served).await;
    let reader = create_token(
        &served.db,
        &["--name", "reader", "--scopes", "read:netdiag"],
    );
    let (all, reader) = (Some(served.token.as_str()), Some(reader.as_str()));
    let ack = "/alerts/hm-10004/ack";
    let actions = format!("/netdiag/machines/{host}/actions");
    let settings = format!("/netdiag/machines/{host}/settings");
    // Each call: its request, and the answers it may get (its own refusal, or 429 once its
    // caller is past the quota). Bodies of 8 to 60 KB, more than one read of the server's.
    let calls: Vec<(Vec<u8>, [u16; 2])> = vec![
        // The loop: an 8 KB note is too long (400), then over the quota (429).
        (
            request_with_body("POST", ack, all, 8_000, Framing::Length),
            [400, 429],
        ),
        (
            request_with_body("POST", ack, None, 8_000, Framing::Length),
            [401, 429],
        ),
        (
            request_with_body("POST", &actions, reader, 20_000, Framing::Length),
            [403, 429],
        ),
        (
            request_with_body("PUT", &settings, reader, 20_000, Framing::Chunked),
            [403, 429],
        ),
        (
            request_with_body("POST", "/nothing", all, 30_000, Framing::Length),
            [404, 429],
        ),
        (
            request_with_body("PATCH", ack, all, 10_000, Framing::Chunked),
            [405, 429],
        ),
        (
            request_with_body("PUT", &settings, None, 60_000, Framing::Length),
            [401, 429],
        ),
    ];
    let mut stream = TcpStream::connect(served.addr()).await.expect("connect");
    let mut seen = std::collections::BTreeSet::new();
    for round in 0..4 {
        for (i, (request, expected)) in calls.iter().enumerate() {
            stream.write_all(request).await.unwrap_or_else(|e| {
                panic!("round {round}, call {i}: the connection was dropped: {e}")
            });
            let answer = read_answer(&mut stream).await;
            assert!(
                expected.contains(&answer.status),
                "round {round}, call {i}: {answer:?}"
            );
            assert_eq!(answer.json()["error"].is_string(), true, "{answer:?}");
            assert_ne!(answer.header("connection"), Some("close"), "{answer:?}");
            seen.insert(answer.status);
        }
    }
    assert_eq!(
        seen.into_iter().collect::<Vec<_>>(),
        [400, 401, 403, 404, 405, 429],
        "every kind of refusal was met"
    );
}

#[tokio::test]
async fn a_refused_body_over_64_kib_gets_its_answer_then_a_graceful_close() {
    let served = Serve::seeded().start();
    let ack = "/alerts/hm-10004/ack";
    let cases = [
        // Declared too long: refused unread.
        (
            request_with_body("POST", ack, Some(&served.token), 100_000, Framing::Length),
            413,
        ),
        // Read up to the limit, then refused.
        (
            request_with_body("POST", ack, Some(&served.token), 100_000, Framing::Chunked),
            413,
        ),
        // 4 MB that no one reads, from a caller without a token.
        (
            request_with_body("POST", ack, None, 4_000_000, Framing::Length),
            401,
        ),
        (
            request_with_body("POST", ack, None, 4_000_000, Framing::Chunked),
            401,
        ),
    ];
    for (request, status) in cases {
        let stream = TcpStream::connect(served.addr()).await.expect("connect");
        let (mut reader, mut writer) = stream.into_split();
        // The client sends its whole request, as most do, before it reads.
        let sending = tokio::spawn(async move { writer.write_all(&request).await });
        let mut got = Vec::new();
        let read = tokio::time::timeout(PATIENCE, reader.read_to_end(&mut got))
            .await
            .expect("the server closes");
        assert!(
            read.is_ok(),
            "the connection ended with {read:?} rather than a close, after {:?}",
            String::from_utf8_lossy(&got)
        );
        let answer = parse(&got, true).expect("an answer");
        assert_eq!(answer.status, status, "{answer:?}");
        assert_eq!(answer.header("connection"), Some("close"), "{answer:?}");
        assert!(answer.json()["error"].is_string(), "{answer:?}");
        sending
            .await
            .expect("task")
            .expect("the server read the whole request before closing");
    }
}

#[tokio::test]
async fn refusals_of_the_http_layer_carry_the_rate_limit_of_the_client_address() {
    let served = Serve::seeded()
        .env("NETOPS_RATE_LIMIT", 5)
        .env("NETOPS_RATE_WINDOW_SECS", LONG_WINDOW)
        .env("NETOPS_HEADER_TIMEOUT_SECS", 1)
        .start();
    let addr = served.addr();
    let mut many = String::from("GET /api/v1/me HTTP/1.1\r\nHost: x\r\n");
    for i in 0..200 {
        many.push_str(&format!("X-Filler-{i}: a\r\n"));
    }
    many.push_str("\r\n");
    let refusals = [
        (
            b"GET /api/v1/\0me HTTP/1.1\r\nHost: x\r\n\r\n".to_vec(),
            400,
        ),
        (
            format!(
                "GET /api/v1/me?q={} HTTP/1.1\r\nHost: x\r\n\r\n",
                "a".repeat(100_000)
            )
            .into_bytes(),
            414,
        ),
        (many.into_bytes(), 431),
        // A head that stops half-way, refused after the header timeout.
        (b"GET /api/v1/me HTTP/1.1\r\nHost: x\r\nX-Sl".to_vec(), 408),
    ];
    // Each counts one call of the address's quota, as a call without a token does.
    for (i, (request, status)) in refusals.into_iter().enumerate() {
        let answer = exchange(addr, request).await;
        assert_eq!(answer.status, status, "{answer:?}");
        assert_eq!(answer.header("x-ratelimit-limit"), Some("5"), "{answer:?}");
        let remaining = (4 - i).to_string();
        assert_eq!(
            answer.header("x-ratelimit-remaining"),
            Some(remaining.as_str()),
            "{answer:?}"
        );
        let reset: u64 = answer
            .header("x-ratelimit-reset")
            .and_then(|r| r.parse().ok())
            .unwrap_or_else(|| panic!("x-ratelimit-reset: {answer:?}"));
        assert!((1..=LONG_WINDOW).contains(&reset), "{answer:?}");
    }
    // The gate counts in the same bucket: the fifth call is the last one.
    let me = format!("{}/me", served.base);
    let last = reqwest::get(&me).await.expect("me");
    assert_eq!(last.status(), 401);
    assert_eq!(last.headers()["x-ratelimit-remaining"], "0");
    assert_eq!(reqwest::get(&me).await.expect("me").status(), 429);
}
