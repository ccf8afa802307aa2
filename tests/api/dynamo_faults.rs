//! Writes over the DynamoDB adapter while the store fails: a fault-injecting proxy between
//! the adapter and the DynamoDB-protocol server throttles, fails, stalls and loses answers of
//! chosen calls. Every write then answers 2xx or a JSON 503 with `Retry-After` within
//! seconds, every acknowledged write is in the log exactly once with its state change, and no
//! refused write changed anything (docs/writes.md#atomicity-and-faults).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use http::{HeaderMap, StatusCode};
use netops_shared::routes::Function;
use netops_shared::scope::Scope;
use serde_json::{Value, json};

use crate::helpers::TestApp;

/// What the proxy does to one call.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Fault {
    /// `ThrottlingException` (400), not forwarded.
    Throttle,
    /// `InternalServerError` (500), not forwarded.
    ServerError,
    /// Forwarded, then answered 500 as if the answer was lost on the way back.
    LoseAnswer,
    /// Held this long before it is forwarded.
    Stall(Duration),
}

/// Which call of an operation (counted from 0, retries included) meets which fault.
type Schedule = dyn Fn(&str, usize) -> Option<Fault> + Send + Sync;

struct Proxy {
    upstream: String,
    http: reqwest::Client,
    schedule: Box<Schedule>,
    on: AtomicBool,
    calls: Mutex<HashMap<String, usize>>,
    /// Successful `TransactWriteItems` answers by client request token: DynamoDB answers a
    /// retry that carries the same token with the first success instead of running it again
    /// (the SDK fills the token once per operation); the protocol server does not, so the
    /// proxy does, as the service would.
    done: Mutex<HashMap<String, (StatusCode, Bytes)>>,
}

/// A fault-injecting proxy in front of the DynamoDB-protocol server.
pub struct FaultyDynamo {
    pub endpoint: String,
    proxy: Arc<Proxy>,
}

impl FaultyDynamo {
    pub async fn start(
        upstream: &str,
        schedule: impl Fn(&str, usize) -> Option<Fault> + Send + Sync + 'static,
    ) -> FaultyDynamo {
        let proxy = Arc::new(Proxy {
            upstream: upstream.to_owned(),
            http: reqwest::Client::new(),
            schedule: Box::new(schedule),
            on: AtomicBool::new(true),
            calls: Mutex::new(HashMap::new()),
            done: Mutex::new(HashMap::new()),
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let endpoint = format!("http://{}", listener.local_addr().expect("addr"));
        let app = axum::Router::new()
            .fallback(forward)
            .with_state(proxy.clone());
        tokio::spawn(async move { axum::serve(listener, app).await });
        FaultyDynamo { endpoint, proxy }
    }

    /// Turns the faults on or off (the checks after a run read through the same proxy).
    pub fn faults(&self, on: bool) {
        self.proxy.on.store(on, Ordering::SeqCst);
    }

    /// How many calls of `op` the proxy saw.
    pub fn calls(&self, op: &str) -> usize {
        self.proxy
            .calls
            .lock()
            .expect("calls")
            .get(op)
            .copied()
            .unwrap_or(0)
    }
}

fn error(status: StatusCode, kind: &str) -> Response {
    let body = json!({"__type": format!("com.amazonaws.dynamodb.v20120810#{kind}"), "message": "injected"});
    (
        status,
        [("content-type", "application/x-amz-json-1.0")],
        body.to_string(),
    )
        .into_response()
}

async fn forward(State(p): State<Arc<Proxy>>, headers: HeaderMap, body: Bytes) -> Response {
    let op = headers
        .get("x-amz-target")
        .and_then(|v| v.to_str().ok())
        .and_then(|t| t.rsplit('.').next())
        .unwrap_or("")
        .to_owned();
    let n = {
        let mut calls = p.calls.lock().expect("calls");
        let n = calls.entry(op.clone()).or_default();
        *n += 1;
        *n - 1
    };
    let token = (op == "TransactWriteItems")
        .then(|| serde_json::from_slice::<Value>(&body).ok())
        .flatten()
        .and_then(|v| v["ClientRequestToken"].as_str().map(str::to_owned));
    if let Some(t) = &token
        && let Some((status, bytes)) = p.done.lock().expect("done").get(t).cloned()
    {
        return (
            status,
            [("content-type", "application/x-amz-json-1.0")],
            bytes,
        )
            .into_response();
    }
    let fault = if p.on.load(Ordering::SeqCst) {
        (p.schedule)(&op, n)
    } else {
        None
    };
    match fault {
        Some(Fault::Throttle) => return error(StatusCode::BAD_REQUEST, "ThrottlingException"),
        Some(Fault::ServerError) => {
            return error(StatusCode::INTERNAL_SERVER_ERROR, "InternalServerError");
        }
        Some(Fault::Stall(d)) => tokio::time::sleep(d).await,
        Some(Fault::LoseAnswer) | None => {}
    }
    let mut req = p.http.post(&p.upstream).body(body);
    for (k, v) in &headers {
        if k != http::header::HOST && k != http::header::CONTENT_LENGTH {
            req = req.header(k, v);
        }
    }
    let Ok(res) = req.send().await else {
        return error(StatusCode::INTERNAL_SERVER_ERROR, "InternalServerError");
    };
    let status = StatusCode::from_u16(res.status().as_u16()).unwrap_or(StatusCode::BAD_GATEWAY);
    let bytes = res.bytes().await.unwrap_or_default();
    if let Some(t) = token
        && status.is_success()
    {
        p.done
            .lock()
            .expect("done")
            .insert(t, (status, bytes.clone()));
    }
    if fault == Some(Fault::LoseAnswer) {
        return error(StatusCode::INTERNAL_SERVER_ERROR, "InternalServerError");
    }
    (
        status,
        [("content-type", "application/x-amz-json-1.0")],
        bytes,
    )
        .into_response()
}

/// Writes of one machine's settings, each with a value of its own, and queued actions.
async fn write_loop(
    app: &TestApp,
    token: &str,
    host: &str,
    count: usize,
) -> Vec<(String, u16, Value)> {
    let mut answers = Vec::new();
    for i in 0..count {
        let (method, path, body) = if i % 4 == 3 {
            (
                http::Method::POST,
                format!("/netdiag/machines/{host}/actions"),
                json!({"action": "trace"}),
            )
        } else {
            (
                http::Method::PUT,
                format!("/netdiag/machines/{host}/settings"),
                json!({"apps": [format!("f{i}.exe")]}),
            )
        };
        let started = Instant::now();
        let res = app.send(method, &path, token, body.clone()).await;
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "write {i} answered in {:?}",
            started.elapsed()
        );
        let status = res.status.as_u16();
        match status {
            200 | 202 => {}
            503 => {
                assert_eq!(res.error(), "service_unavailable", "{}", res.body);
                assert!(
                    res.header("retry-after").is_some(),
                    "503 carries Retry-After"
                );
            }
            other => panic!(
                "write {i}: a failing store gives 503, not {other}: {}",
                res.body
            ),
        }
        let id = res.header("x-request-id").expect("request id").to_owned();
        answers.push((id, status, body));
    }
    answers
}

#[tokio::test]
async fn writes_over_a_failing_dynamodb_are_acknowledged_once_or_refused_having_changed_nothing() {
    let Some(upstream) = crate::aws::endpoint() else {
        return;
    };
    // Throttles and server errors on single calls (the SDK retries them), answers lost after
    // the transaction ran (the retry must not run it twice), and runs of failures long enough
    // to exhaust the retries (the write is refused).
    let proxy = FaultyDynamo::start(&upstream, |op, n| match op {
        "TransactWriteItems" => match n {
            40..=45 => Some(Fault::ServerError),
            _ if n % 7 == 1 => Some(Fault::Throttle),
            _ if n % 7 == 3 => Some(Fault::ServerError),
            _ if n % 11 == 5 => Some(Fault::LoseAnswer),
            _ => None,
        },
        "GetItem" if n % 13 == 6 => Some(Fault::ServerError),
        _ => None,
    })
    .await;
    proxy.faults(false);
    let app = TestApp::over_dynamodb(&proxy.endpoint, &[Function::Netdiag]).await;
    let token = app.full_token().await;
    let machines = app.get("/netdiag/machines", &token).await;
    let host = machines.items()[0]["hostname"]
        .as_str()
        .expect("host")
        .to_owned();
    proxy.faults(true);
    let answers = write_loop(&app, &token, &host, 40).await;
    proxy.faults(false);

    let log = app.stores.writes.entries("acme").await.expect("log");
    let mut logged: HashMap<&str, usize> = HashMap::new();
    for e in &log {
        *logged.entry(e.request_id.as_str()).or_default() += 1;
    }
    let mut refused = 0;
    for (id, status, body) in &answers {
        let times = logged.get(id.as_str()).copied().unwrap_or(0);
        if *status == 503 {
            refused += 1;
            assert_eq!(times, 0, "refused write {body} left no entry");
        } else {
            assert_eq!(times, 1, "acknowledged write {body} is logged once");
        }
    }
    assert!(refused > 0, "the long run of failures refused a write");
    assert!(
        refused < answers.len() / 2,
        "single failures are retried, not refused: {refused} of {}",
        answers.len()
    );
    // The settings are those of the last acknowledged change: no refused change landed.
    let last = answers
        .iter()
        .rev()
        .find(|(_, status, body)| *status == 200 && body.get("apps").is_some())
        .map(|(_, _, body)| body["apps"].clone())
        .expect("an acknowledged change");
    let now = app
        .send(
            http::Method::PUT,
            &format!("/netdiag/machines/{host}/settings"),
            &token,
            json!({}),
        )
        .await;
    assert_eq!(now.body["data"]["apps"], last, "{}", now.body);
    eprintln!(
        "dynamodb faults: {} writes, {} TransactWriteItems calls with injected throttles, \
         errors and lost answers: {} acknowledged once each, {refused} refused with 503 \
         and nothing changed",
        answers.len(),
        proxy.calls("TransactWriteItems"),
        answers.len() - refused
    );
}

#[tokio::test]
async fn a_dynamodb_that_does_not_answer_gives_503_within_seconds_not_a_hang() {
    let Some(upstream) = crate::aws::endpoint() else {
        return;
    };
    let proxy = FaultyDynamo::start(&upstream, |op, _| {
        (op == "Query" || op == "TransactWriteItems")
            .then_some(Fault::Stall(Duration::from_secs(60)))
    })
    .await;
    proxy.faults(false);
    let app = TestApp::over_dynamodb(&proxy.endpoint, &[Function::Netdiag]).await;
    let token = app.full_token().await;
    let machines = app.get("/netdiag/machines", &token).await;
    let host = machines.items()[0]["hostname"]
        .as_str()
        .expect("host")
        .to_owned();
    proxy.faults(true);
    for (method, path, body) in [
        (http::Method::GET, "/netdiag/machines".to_owned(), None),
        (
            http::Method::PUT,
            format!("/netdiag/machines/{host}/settings"),
            Some(json!({"apps": ["late.exe"]})),
        ),
    ] {
        let started = Instant::now();
        let res = match body {
            Some(b) => app.send(method, &path, &token, b).await,
            None => app.get(&path, &token).await,
        };
        let took = started.elapsed();
        assert_eq!(
            res.status,
            StatusCode::SERVICE_UNAVAILABLE,
            "{path}: {}",
            res.body
        );
        assert_eq!(res.error(), "service_unavailable");
        assert!(res.header("retry-after").is_some());
        assert!(
            took < Duration::from_secs(15),
            "{path} answered in {took:?}"
        );
    }
}

/// A call whose count reached the store but whose answer was lost on the way back is counted
/// once: the SDK retries the counter's change, and the retry finds it made.
#[tokio::test]
async fn a_call_whose_count_was_retried_after_a_lost_answer_is_counted_once() {
    let Some(upstream) = crate::aws::endpoint() else {
        return;
    };
    let proxy = FaultyDynamo::start(&upstream, |op, n| {
        (op == "UpdateItem" && n % 2 == 0).then_some(Fault::LoseAnswer)
    })
    .await;
    proxy.faults(false);
    let app = TestApp::over_dynamodb(&proxy.endpoint, &[Function::Fleet]).await;
    let token = app.token("acme", &[Scope::ReadMachines]).await;
    proxy.faults(true);
    let before = proxy.calls("UpdateItem");
    for i in 1..=10u32 {
        let res = app.get("/me", &token).await;
        assert_eq!(res.status, StatusCode::OK, "call {i}: {}", res.body);
        assert_eq!(
            res.header("x-ratelimit-remaining"),
            Some((600 - i).to_string().as_str()),
            "call {i}"
        );
    }
    // Each count lost its first answer and was retried.
    assert!(proxy.calls("UpdateItem") - before >= 20);
}
