//! The test application: the whole API in process over a seeded embedded store, called as a
//! user would (HTTP requests through the router), plus the real `netops` binary.

use std::sync::{Arc, OnceLock};

use axum::Router;
use axum::body::Body;
use bytes::Bytes;
use chrono::{DateTime, Duration, DurationRound, SecondsFormat, Utc};
use http::{HeaderMap, Method, Request, StatusCode};
use http_body_util::BodyExt;
use netops::SeedSize;
use netops_demo::{ACME, SeedCtx};
use netops_shared::AppState;
use netops_shared::config::{Config, StoreKind};
use netops_shared::routes::Function;
use netops_shared::scope::Scope;
use netops_shared::store::Stores;
use netops_store_dynamodb::DynamoConfig;
use serde_json::Value;
use tower::ServiceExt;

pub struct TestApp {
    pub router: Router,
    pub state: AppState,
    pub stores: Stores,
    /// The store's folder, kept alive as long as the app (tests may put files in it).
    pub dir: Arc<tempfile::TempDir>,
    /// When seeding started and ended: the demo data is dated relative to that moment, so
    /// tests of default windows (which end now) know how much of it time has moved past.
    pub seeded: (DateTime<Utc>, DateTime<Utc>),
}

#[derive(Debug)]
pub struct TestResponse {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub bytes: Bytes,
    /// The body as JSON (Null when it is not JSON).
    pub body: Value,
}

impl TestResponse {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// `data` of a successful answer, as an array.
    pub fn items(&self) -> &Vec<Value> {
        self.body["data"]
            .as_array()
            .unwrap_or_else(|| panic!("data is not an array: {}", self.body))
    }

    pub fn error(&self) -> &str {
        self.body["error"].as_str().unwrap_or("")
    }

    /// The hours the answer's window (`meta.window`) overlaps, in ms: from the start of its
    /// first hour to the end of its last.
    pub fn window_hours(&self) -> (i64, i64) {
        let (from, to) = self.window_ms();
        (from.div_euclid(HOUR) * HOUR, ceil_hour(to))
    }

    /// The hours that start within the answer's window (`meta.window`), in ms: from the
    /// first hour starting at or after its start to the end of its last (the windows of the
    /// flows aggregates).
    pub fn window_hours_starting(&self) -> (i64, i64) {
        let (from, to) = self.window_ms();
        (ceil_hour(from), ceil_hour(to))
    }

    /// The answer's window (`meta.window`), in ms.
    fn window_ms(&self) -> (i64, i64) {
        let w = &self.body["meta"]["window"];
        let at = |k: &str| {
            DateTime::parse_from_rfc3339(w[k].as_str().expect("window"))
                .expect("date")
                .timestamp_millis()
        };
        (at("from"), at("to"))
    }

    /// Checks a 400 `invalid_parameter` naming `parameter`, in its field and its message.
    pub fn assert_invalid(&self, parameter: &str) {
        assert_eq!(self.status, StatusCode::BAD_REQUEST, "{}", self.body);
        assert_eq!(self.error(), "invalid_parameter", "{}", self.body);
        assert_eq!(self.body["parameter"], parameter, "{}", self.body);
        let message = self.body["message"].as_str().unwrap_or("");
        assert!(
            message.contains(parameter),
            "the message names the parameter: {message}"
        );
    }
}

/// What a new app's store is filled with.
enum Seeding {
    /// Both demo tenants ([`netops::seed_demo_modules`]): acme at this size, globex at the
    /// demo size, with the fleet and these modules (every module when `None`).
    Demo(SeedSize, Option<&'static [Function]>),
    /// Tenant acme alone at this size, every module, as of the time given (else now).
    Acme(SeedSize, Option<DateTime<Utc>>),
}

static SHARED: OnceLock<TestApp> = OnceLock::new();

/// Tenant acme at the size of the tests of what the DynamoDB adapter decides as the live
/// producers catch up (a conditional change, a resumed batch): 8 machines, 2 days. The
/// adapter's decisions do not depend on the tenant's size, and a whole demo tenant took moto
/// minutes to load.
pub const SMALL_ACME: SeedSize = SeedSize {
    machines: 8,
    days: 2,
    seed: 42,
};

/// The DynamoDB-protocol endpoint the suite runs against, when asked to.
pub fn dynamo_test_endpoint() -> Option<String> {
    if std::env::var("NETOPS_TEST_STORE").ok().as_deref() != Some("dynamodb") {
        return None;
    }
    Some(
        std::env::var("NETOPS_TEST_DYNAMODB_ENDPOINT")
            .expect("NETOPS_TEST_STORE=dynamodb needs NETOPS_TEST_DYNAMODB_ENDPOINT"),
    )
}

/// Where this test process keeps its embedded stores: a folder of its own under the target
/// directory. The shared app's store lives as long as the process (a static is never
/// dropped), so the folders of processes no longer running are removed first: runs do not
/// pile up stores of 100 MB in the system's temporary directory.
fn store_root() -> &'static std::path::Path {
    static ROOT: OnceLock<std::path::PathBuf> = OnceLock::new();
    ROOT.get_or_init(|| {
        let all = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("api-stores");
        for entry in std::fs::read_dir(&all).into_iter().flatten().flatten() {
            let pid = entry.file_name().to_string_lossy().into_owned();
            if !std::path::Path::new("/proc").join(&pid).exists() {
                let _ = std::fs::remove_dir_all(entry.path());
            }
        }
        let mine = all.join(std::process::id().to_string());
        std::fs::create_dir_all(&mine).expect("store folder");
        mine
    })
}

impl TestApp {
    /// A fresh app over a newly seeded store (for tests that write or need their own state).
    pub async fn new() -> TestApp {
        Self::build(Config::default(), None).await
    }

    /// A fresh app with `config`. The store is the embedded one, or DynamoDB when
    /// `NETOPS_TEST_STORE=dynamodb` (tables with a prefix of their own on the server at
    /// `NETOPS_TEST_DYNAMODB_ENDPOINT`, which the test command starts), so the whole suite
    /// runs against either adapter.
    ///
    /// The store holds the fleet's demo data only (what the configuration tests read).
    pub async fn with_config(config: Config) -> TestApp {
        Self::build(config, Some(&[])).await
    }

    /// A fresh app whose store holds the demo data of the fleet and of `modules` only: the
    /// tests that need a store of their own seed just what they read.
    pub async fn with_modules(modules: &'static [Function]) -> TestApp {
        Self::build(Config::default(), Some(modules)).await
    }

    /// A fresh app over a store seeded at `size` with the fleet and `modules`: tenants of
    /// more than 100 machines get the storage tiers of big seeds.
    pub async fn sized(size: SeedSize, modules: &'static [Function]) -> TestApp {
        Self::build_sized(Config::default(), Some(modules), size).await
    }

    /// A fresh app over DynamoDB at `endpoint` (tables of its own), whatever store the suite
    /// runs on, holding the demo data of the fleet and of `modules`.
    pub async fn over_dynamodb(endpoint: &str, modules: &'static [Function]) -> TestApp {
        Self::build_at(
            Config::default(),
            Some(modules),
            SeedSize::default(),
            Some(endpoint.to_owned()),
        )
        .await
    }

    /// A fresh app over DynamoDB at `endpoint` (tables of its own) holding tenant acme alone,
    /// every module seeded at `size`: the scale test compares tenants that differ in size
    /// only, without the cost of seeding globex into each. Its calls are given 30 s (or
    /// `NETOPS_DYNAMODB_TIMEOUT_SECS`) whatever pass of the suite runs it: a call retried
    /// after a timeout of the busy moto server would count twice.
    pub async fn acme_over_dynamodb(endpoint: &str, size: SeedSize) -> TestApp {
        let mut config = Config::default();
        config.dynamodb.timeout_secs = moto_timeout_secs().unwrap_or(30);
        Self::build_seeded(config, Seeding::Acme(size, None), Some(endpoint.to_owned())).await
    }

    /// A fresh app holding tenant acme alone, every module seeded as of `when` (a time in
    /// the past, which the tests of the live data then catch up), on the suite's store.
    pub async fn acme_seeded_at(when: DateTime<Utc>) -> TestApp {
        Self::acme_sized_at(SeedSize::default(), when).await
    }

    /// [`Self::acme_seeded_at`] at `size`.
    pub async fn acme_sized_at(size: SeedSize, when: DateTime<Utc>) -> TestApp {
        let mut config = Config::default();
        if let Some(secs) = moto_timeout_secs() {
            config.dynamodb.timeout_secs = secs;
        }
        let data = Seeding::Acme(size, Some(when));
        Self::build_seeded(config, data, dynamo_test_endpoint()).await
    }

    async fn build(config: Config, modules: Option<&'static [Function]>) -> TestApp {
        Self::build_sized(config, modules, SeedSize::default()).await
    }

    async fn build_sized(
        mut config: Config,
        modules: Option<&'static [Function]>,
        size: SeedSize,
    ) -> TestApp {
        if let Some(secs) = moto_timeout_secs() {
            config.dynamodb.timeout_secs = secs;
        }
        Self::build_at(config, modules, size, dynamo_test_endpoint()).await
    }

    /// The app over the embedded store, or over DynamoDB at `dynamodb` when given.
    async fn build_at(
        config: Config,
        modules: Option<&'static [Function]>,
        size: SeedSize,
        dynamodb: Option<String>,
    ) -> TestApp {
        Self::build_seeded(config, Seeding::Demo(size, modules), dynamodb).await
    }

    async fn build_seeded(config: Config, data: Seeding, dynamodb: Option<String>) -> TestApp {
        let dir = tempfile::tempdir_in(store_root()).expect("tempdir");
        let path = dir.path().join("netops.db");
        let config = match dynamodb {
            Some(endpoint) => Config {
                store: StoreKind::Dynamodb,
                dynamodb: DynamoConfig {
                    table_prefix: format!("t{:016x}-", rand_u64()),
                    endpoint: Some(endpoint),
                    // Revocations must show on the next request, as with the embedded store.
                    token_cache_secs: 0,
                    ..config.dynamodb.clone()
                },
                ..config
            },
            None => config,
        };
        let stores = netops::open_configured(&Config {
            db_path: path.clone(),
            ..config.clone()
        })
        .await
        .expect("store");
        let seeding = Utc::now();
        let seeded = match data {
            Seeding::Demo(size, modules) => {
                netops_demo::seed_demo_modules(&stores, size, modules)
                    .await
                    .expect("seed");
                (seeding, Utc::now())
            }
            Seeding::Acme(size, when) => {
                let when = when.unwrap_or(seeding);
                netops_demo::seed_tenant_at(&stores, &ACME, size, when)
                    .await
                    .expect("seed");
                (when, when + (Utc::now() - seeding))
            }
        };
        let embedded = config.store == StoreKind::Embedded;
        let state = AppState::new(
            &stores,
            Config {
                db_path: path,
                ..config
            },
        )
        .await
        .expect("state");
        // Counted as the process that serves this store counts: `netops serve` in memory, the
        // Lambda functions over DynamoDB in the table.
        let state = if embedded {
            state.counting_in_process()
        } else {
            state
        };
        // The geolocation `netops serve` uses without a file: the checked-in sample.
        let state = state.geolocating(Some(Arc::new(netops_geo::sample())));
        TestApp {
            router: netops::app(state.clone()),
            state,
            stores,
            dir: Arc::new(dir),
            seeded,
        }
    }

    /// One seeded app shared by the read-only tests of the whole binary.
    pub fn shared() -> &'static TestApp {
        SHARED.get_or_init(|| {
            std::thread::spawn(|| {
                tokio::runtime::Builder::new_multi_thread()
                    .enable_all()
                    .build()
                    .expect("runtime")
                    .block_on(TestApp::new())
            })
            .join()
            .expect("seeding thread")
        })
    }

    /// A new token of `tenant` with `scopes`.
    pub async fn token(&self, tenant: &str, scopes: &[Scope]) -> String {
        let name = format!("test-{:016x}", rand_u64());
        let (secret, _) = netops_shared::auth::create_token(
            self.stores.tokens.as_ref(),
            tenant,
            &name,
            scopes.to_vec(),
            chrono::Duration::days(1),
        )
        .await
        .expect("token");
        secret
    }

    /// Loads rollup series (as a producer's `series()` gives them) into acme's store.
    pub async fn load_acme(&self, series: Vec<(String, Vec<netops_shared::store::Rollup>)>) {
        for (name, rows) in series {
            self.stores
                .rollups
                .load("acme", &name, rows)
                .await
                .expect("load");
        }
    }

    /// A token of tenant acme with every scope.
    pub async fn full_token(&self) -> String {
        self.token("acme", Scope::ALL).await
    }

    pub async fn get(&self, path: &str, token: &str) -> TestResponse {
        self.request(Method::GET, path, Some(token), None, &[])
            .await
    }

    pub async fn send(&self, method: Method, path: &str, token: &str, body: Value) -> TestResponse {
        self.request(
            method,
            path,
            Some(token),
            Some(body.to_string().into_bytes()),
            &[],
        )
        .await
    }

    /// Any request; `path` is below `/api/v1`.
    pub async fn request(
        &self,
        method: Method,
        path: &str,
        token: Option<&str>,
        body: Option<Vec<u8>>,
        headers: &[(&str, &str)],
    ) -> TestResponse {
        let mut req = Request::builder()
            .method(method)
            .uri(format!("/api/v1{path}"));
        if let Some(t) = token {
            req = req.header("authorization", format!("Bearer {t}"));
        }
        if body.is_some() {
            req = req.header("content-type", "application/json");
        }
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        let req = req
            .body(body.map(Body::from).unwrap_or_else(Body::empty))
            .expect("request");
        into_test_response(self.router.clone().oneshot(req).await.expect("infallible")).await
    }
}

/// The text of an API Gateway event of `function` (`events/`). The collect function's
/// events post observations, which are dated: the time of their line, fixed in the file,
/// becomes now, so that the line is within the retention whenever the test runs.
pub fn event_text(path: &std::path::Path, function: Function) -> String {
    let text = std::fs::read_to_string(path).expect("event");
    if function != Function::Collect {
        return text;
    }
    let now = Utc::now();
    text.replace(
        "date=2026-11-22 time=09:15:42",
        &now.format("date=%Y-%m-%d time=%H:%M:%S").to_string(),
    )
    .replace("2026-11-22T09:15:42Z", &stamp(now))
}

/// The agent function's events' credentials (events/agent): an enrollment token of acme, and the agent credential of `PAR-LT-0042` with the action
/// `act-event-0001` it claimed (`clm-event0001`), whose result its event posts.
pub async fn agent_tokens(stores: &Stores) -> (String, String) {
    use netops_netdiag::model::{ACTIONS, Action, ActionKind, ActionStatus};
    let tokens = stores.tokens.as_ref();
    let day = chrono::Duration::days(1);
    let create = async |name: &str, scope: Scope| {
        netops_shared::auth::create_token(tokens, "acme", name, vec![scope], day)
            .await
            .expect("token")
            .0
    };
    let enroller = create("enroll", Scope::AgentEnroll).await;
    let agent = create("agent:PAR-LT-0042", Scope::Agent).await;
    let now = chrono::Utc::now();
    let action = Action {
        action_id: "act-event-0001".into(),
        action: ActionKind::Speed,
        status: ActionStatus::Running,
        requested_at: now,
        claim_by: Some(now + chrono::Duration::minutes(5)),
        claimed_at: Some(now),
        lease_until: Some(now + chrono::Duration::minutes(3)),
        claim_id: Some("clm-event0001".into()),
        hostname: "PAR-LT-0042".into(),
        target: None,
        seconds: None,
        completed_at: None,
        event_id: None,
        result: None,
    };
    stores
        .docs
        .put(
            "acme",
            ACTIONS,
            vec![(
                action.action_id.clone(),
                serde_json::to_value(&action).expect("json"),
            )],
        )
        .await
        .expect("action");
    (enroller, agent)
}

/// The budget (s) of a DynamoDB call the test command gives moto
/// (`NETOPS_DYNAMODB_TIMEOUT_SECS`), when set: a single-threaded Python server whose reads of
/// a big tenant, or of any tenant while the machine is busy, take seconds, longer than
/// DynamoDB's requests need.
pub fn moto_timeout_secs() -> Option<u64> {
    std::env::var("NETOPS_DYNAMODB_TIMEOUT_SECS")
        .ok()
        .and_then(|v| v.parse().ok())
}

/// Windows an aggregate over hours and days must answer exactly: partial hours and days at
/// either edge, whole days only, hours within one day, two partial days without a whole one
/// between, a month, and from the epoch.
pub fn edge_windows(now: DateTime<Utc>) -> Vec<(DateTime<Utc>, DateTime<Utc>)> {
    let day = now.duration_trunc(Duration::days(1)).expect("day");
    let (m, h, d) = (Duration::minutes, Duration::hours, Duration::days);
    vec![
        (now - d(1), now),
        (now - d(3) - m(25), now - d(1) - m(40)),
        (day - d(5), day - d(2)),
        (day - d(1) + h(9) + m(30), day - d(1) + h(15) + m(10)),
        (day - d(2) + h(13), day - d(1) + h(11) + m(1)),
        (now - d(30) + m(7), now),
        (DateTime::UNIX_EPOCH, now),
    ]
}

const HOUR: i64 = 3_600_000;

/// The first hour boundary at or after `t` (ms).
fn ceil_hour(t: i64) -> i64 {
    (t + HOUR - 1).div_euclid(HOUR) * HOUR
}

/// A time as a query parameter: RFC 3339 to the second, UTC.
pub fn stamp(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Secs, true)
}

pub async fn into_test_response(res: http::Response<Body>) -> TestResponse {
    let status = res.status();
    let headers = res.headers().clone();
    let bytes = res.into_body().collect().await.expect("body").to_bytes();
    let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    TestResponse {
        status,
        headers,
        bytes,
        body,
    }
}

pub fn rand_u64() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    t ^ (N.fetch_add(1, Ordering::Relaxed) << 48) ^ u64::from(std::process::id())
}

/// Walks every page of a cursor-paged list; returns the items in order.
pub async fn walk(app: &TestApp, path: &str, token: &str) -> Vec<Value> {
    let mut items = Vec::new();
    let mut cursor: Option<String> = None;
    let sep = if path.contains('?') { '&' } else { '?' };
    for _ in 0..10_000 {
        let url = match &cursor {
            Some(c) => format!("{path}{sep}cursor={c}"),
            None => path.to_owned(),
        };
        let res = app.get(&url, token).await;
        assert_eq!(res.status, StatusCode::OK, "{url}: {}", res.body);
        items.extend(res.items().iter().cloned());
        match res.body["meta"]["next_cursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => {
                assert!(
                    res.body["meta"]["next_cursor"].is_null(),
                    "next_cursor must be null on the last page"
                );
                return items;
            }
        }
    }
    panic!("paging did not end");
}

/// The retention the catch-ups are given (the embedded store's default; every test's data is
/// days old at most).
pub const RETENTION_DAYS: u32 = netops_shared::config::DEFAULT_EMBEDDED_RETENTION_DAYS;

/// Writes the live demo data up to `now` (the clock of the catch-up, so no test sleeps);
/// returns the records written.
pub async fn catch_up(stores: &Stores, now: DateTime<Utc>) -> usize {
    netops::live::advance(stores, now, RETENTION_DAYS, &mut |_| {})
        .await
        .expect("advance")
}

/// The demo context of tenant acme at the default size as of `now`, to call a module's
/// producer directly. The producers read nothing: its store is an empty one of its own, in
/// the folder returned with it.
pub fn acme_ctx(now: DateTime<Utc>) -> (SeedCtx, tempfile::TempDir) {
    acme_ctx_of(now, SeedSize::default().machines)
}

/// [`acme_ctx`] of a tenant of `machines` machines.
pub fn acme_ctx_of(now: DateTime<Utc>, machines: usize) -> (SeedCtx, tempfile::TempDir) {
    let size = SeedSize::default();
    let dir = tempfile::tempdir().expect("dir");
    let stores = Stores::of(
        netops_store_sqlite::SqliteStore::open(dir.path().join("ctx.db")).expect("store"),
    );
    let ctx = SeedCtx::new(stores, &ACME, now, machines, size.days, size.seed);
    (ctx, dir)
}

/// A date-time field of a body.
pub fn time(v: &Value) -> DateTime<Utc> {
    v.as_str()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("not a date-time: {v}"))
}

/// The alert of `id` in `alerts`, resolved at a time after `after` and before `before`.
pub fn assert_resolved_between(
    alerts: &[Value],
    id: &Value,
    after: DateTime<Utc>,
    before: DateTime<Utc>,
) -> Value {
    let alert = alerts
        .iter()
        .find(|a| a["id"] == *id)
        .unwrap_or_else(|| panic!("{id} listed"));
    assert_eq!(alert["status"], "resolved", "{alert}");
    let resolved = time(&alert["resolved_at"]);
    assert!(after < resolved && resolved < before, "{alert}");
    alert.clone()
}

/// A module's producer, drawing an interval's data.
pub type Producer = fn(&SeedCtx, DateTime<Utc>, DateTime<Utc>) -> netops_demo::Produced;

/// The sorted ids of the records of `series` that `produced` holds.
fn produced_ids(produced: &[netops_demo::Produced], series: &str) -> Vec<String> {
    let mut ids: Vec<String> = produced
        .iter()
        .flat_map(|p| &p.records)
        .filter(|(s, _)| s == series)
        .flat_map(|(_, records)| records.iter().map(|r| r.id.clone()))
        .collect();
    ids.sort();
    ids
}

/// The alerts of `series` that `produce` draws over thirty hours are the same drawn at once
/// or cut in uneven batches, and there are some.
pub fn assert_alerts_the_same_however_time_is_cut(produce: Producer, series: &str) {
    let now = Utc::now();
    let (ctx, _dir) = acme_ctx(now);
    let from = now - Duration::hours(30) - Duration::minutes(7);
    let whole = produced_ids(&[produce(&ctx, from, now)], series);
    let mut cut = Vec::new();
    let mut t = from;
    for minutes in [1, 59, 61, 180, 7, 600].into_iter().cycle() {
        let end = (t + Duration::minutes(minutes)).min(now);
        cut.push(produce(&ctx, t, end));
        if end == now {
            break;
        }
        t = end;
    }
    assert!(whole.len() >= 5, "{whole:?}");
    assert_eq!(whole, produced_ids(&cut, series));
}

/// `app`, seeded in the past, shows no alert at `path`'s default window; caught up to now, it
/// shows there the alerts `produce` drew since that opened in the window, resolved, and
/// what is open stays what the seed left open.
pub async fn assert_recent_alerts_after_catch_up(
    app: &TestApp,
    token: &str,
    path: &str,
    produce: Producer,
    series: &str,
) {
    assert!(app.get(path, token).await.items().is_empty());
    let open_path = format!("{path}?status=open");
    let open = app.get(&open_path, token).await;
    let now = Utc::now();
    catch_up(&app.stores, now).await;

    let day = app.get(path, token).await;
    assert!(!day.items().is_empty(), "{}", day.body);
    let from = time(&day.body["meta"]["window"]["from"]);
    for a in day.items() {
        assert_eq!(a["status"], "resolved", "{a}");
        assert!(time(&a["opened_at"]) >= from, "{a}");
        assert!(time(&a["resolved_at"]) < now, "{a}");
    }
    let mut listed: Vec<String> = day
        .items()
        .iter()
        .map(|a| a["id"].as_str().expect("id").to_owned())
        .collect();
    listed.sort();
    let (ctx, _dir) = acme_ctx(now);
    // An alert opened in the window resolved in it too.
    let drawn = produce(&ctx, from, now);
    let mut in_window: Vec<String> = drawn
        .records
        .iter()
        .filter(|(s, _)| s == series)
        .flat_map(|(_, records)| records)
        .filter(|r| r.ts >= from.timestamp_millis())
        .map(|r| r.id.clone())
        .collect();
    in_window.sort();
    in_window.dedup();
    assert_eq!(listed, in_window);
    assert_eq!(
        app.get(&open_path, token).await.body["data"],
        open.body["data"]
    );
}
