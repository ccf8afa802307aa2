//! The AWS adapters against a DynamoDB-protocol server (moto, started by `tests/run.sh`,
//! which exports `NETOPS_TEST_DYNAMODB_ENDPOINT`). These check the adapters' own behaviour:
//! atomic conditional writes, the shared rate limit, the token cache, paging equal to the
//! embedded store's, and the storage round trips of the hot path. The Timestream tests check
//! our side of the protocol (SQL, `NextToken` paging, typed parsing) against results queued
//! in moto, not Timestream itself.

use std::sync::Arc;

use http::StatusCode;
use netops_shared::AppState;
use netops_shared::config::{Config, DEFAULT_RETENTION_DAYS, StoreKind};
use netops_shared::scope::Scope;
use netops_shared::store::*;
use netops_store_dynamodb::{DynamoConfig, DynamoStore};
use netops_store_sqlite::SqliteStore;
use netops_store_timestream::{TimestreamConfig, TimestreamSeries};
use serde_json::{Value, json};

use crate::helpers::{into_test_response, rand_u64};

/// The server's endpoint; `None` (the test is skipped, saying so) when the suite runs
/// without one, unless `NETOPS_REQUIRE_AWS_TESTS=1` (set by the test command) makes it fatal.
pub(crate) fn endpoint() -> Option<String> {
    match std::env::var("NETOPS_TEST_DYNAMODB_ENDPOINT") {
        Ok(e) if !e.is_empty() => Some(e),
        _ => {
            assert!(
                std::env::var("NETOPS_REQUIRE_AWS_TESTS").is_err(),
                "NETOPS_TEST_DYNAMODB_ENDPOINT is required"
            );
            eprintln!("skipped: no DynamoDB endpoint (run tests/run.sh)");
            None
        }
    }
}

fn dynamo_config(endpoint: &str, prefix: &str, cache_secs: u64) -> DynamoConfig {
    DynamoConfig {
        table_prefix: prefix.to_owned(),
        endpoint: Some(endpoint.to_owned()),
        region: Some("us-east-1".into()),
        token_cache_secs: cache_secs,
        ..DynamoConfig::default()
    }
}

/// A fresh pair of tables, empty.
async fn fresh_store(endpoint: &str, cache_secs: u64) -> (DynamoStore, String) {
    let prefix = format!("a{:016x}-", rand_u64());
    let store = DynamoStore::connect(
        &dynamo_config(endpoint, &prefix, cache_secs),
        DEFAULT_RETENTION_DAYS,
    )
    .await
    .expect("connect");
    store.ensure_tables().await.expect("tables");
    (store, prefix)
}

fn entry(tenant: &str, request_id: &str) -> WriteLogEntry {
    WriteLogEntry {
        tenant: tenant.into(),
        at: chrono::Utc::now(),
        request_id: request_id.into(),
        token_name: "t".into(),
        method: "POST".into(),
        path: "/api/v1/alerts/1/ack".into(),
        body: json!({"note": request_id}),
        status: 200,
        expires_at: chrono::Utc::now().timestamp() + 86_400,
        ..WriteLogEntry::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_conditional_commits_on_dynamodb_let_exactly_one_win() {
    let Some(ep) = endpoint() else { return };
    let (store, _) = fresh_store(&ep, 0).await;
    let store = Arc::new(store);
    store
        .put(
            "acme",
            "incidents",
            vec![("42".into(), json!({"status": "open"}))],
        )
        .await
        .expect("put");
    let version = store
        .get("acme", "incidents", "42")
        .await
        .expect("get")
        .expect("doc")
        .version;
    // Sixteen acknowledges prepared against the same version, sent at once.
    let mut tasks = Vec::new();
    for i in 0..16 {
        let store = store.clone();
        tasks.push(tokio::spawn(async move {
            store
                .commit(
                    entry("acme", &format!("r{i}")),
                    vec![Change::PutDoc {
                        collection: "incidents".into(),
                        key: "42".into(),
                        body: json!({"status": "acknowledged", "by": i}),
                        expect: Expect::Version(version),
                    }],
                )
                .await
        }));
    }
    let mut wins = Vec::new();
    let mut conflicts = 0;
    for (i, t) in tasks.into_iter().enumerate() {
        match t.await.expect("task") {
            Ok(()) => wins.push(i),
            Err(StoreError::ConditionFailed) => conflicts += 1,
            Err(e) => panic!("commit {i} failed otherwise: {e}"),
        }
    }
    assert_eq!(wins.len(), 1, "exactly one acknowledge wins");
    assert_eq!(conflicts, 15);
    let doc = store
        .get("acme", "incidents", "42")
        .await
        .expect("get")
        .expect("doc");
    assert_eq!(doc.body["by"], json!(wins[0]));
    assert_eq!(doc.version, version + 1);
    // Only the winner's log entry landed: the losers' transactions wrote nothing.
    let log = store.entries("acme").await.expect("log");
    assert_eq!(log.len(), 1);
    assert_eq!(log[0].request_id, format!("r{}", wins[0]));
}

#[tokio::test]
async fn a_commit_whose_condition_fails_writes_neither_the_change_nor_the_log_entry() {
    let Some(ep) = endpoint() else { return };
    let (store, _) = fresh_store(&ep, 0).await;
    let put = |expect| Change::PutDoc {
        collection: "settings".into(),
        key: "PAR-LT-0001".into(),
        body: json!({"interval": 60}),
        expect,
    };
    store
        .commit(entry("acme", "a"), vec![put(Expect::Absent)])
        .await
        .expect("first");
    assert!(matches!(
        store
            .commit(entry("acme", "b"), vec![put(Expect::Absent)])
            .await,
        Err(StoreError::ConditionFailed)
    ));
    let appended = Change::Append {
        series: "actions".into(),
        record: Record {
            partition: "PAR-LT-0001".into(),
            ts: 1_000,
            id: "x".into(),
            body: json!({}),
        },
    };
    assert!(matches!(
        store
            .commit(entry("acme", "c"), vec![appended, put(Expect::Version(99))])
            .await,
        Err(StoreError::ConditionFailed)
    ));
    let log = store.entries("acme").await.expect("log");
    assert_eq!(
        log.iter()
            .map(|e| e.request_id.as_str())
            .collect::<Vec<_>>(),
        vec!["a"]
    );
    let page = store
        .scan(&SeriesQuery {
            tenant: "acme",
            series: "actions",
            partition: None,
            from: 0,
            to: 10_000,
            filter: &Filter::all(),
            after: None,
            limit: 10,
        })
        .await
        .expect("scan");
    assert!(
        page.records.is_empty(),
        "the append of a failed commit must not land"
    );
    // A refusal is logged alone, and the log keeps its order.
    store
        .commit(entry("acme", "d"), Vec::new())
        .await
        .expect("refusal");
    let ids: Vec<String> = store
        .entries("acme")
        .await
        .expect("log")
        .into_iter()
        .map(|e| e.request_id)
        .collect();
    assert_eq!(ids, vec!["a", "d"]);
    assert!(store.entries("globex").await.expect("log").is_empty());
}

#[tokio::test]
async fn the_write_log_keeps_its_expiry_hides_expired_items_and_coalesces_with_add() {
    let Some(ep) = endpoint() else { return };
    let (store, _) = fresh_store(&ep, 0).await;
    let now = chrono::Utc::now();
    let live = WriteLogEntry {
        expires_at: now.timestamp() + 30 * 86_400,
        ..entry("acme", "live")
    };
    let expired = WriteLogEntry {
        expires_at: now.timestamp() - 1,
        ..entry("acme", "expired")
    };
    store.commit(expired, Vec::new()).await.expect("commit");
    store
        .commit(live.clone(), Vec::new())
        .await
        .expect("commit");
    let refusal = |n: i64| WriteLogEntry {
        at: now + chrono::Duration::milliseconds(n),
        request_id: format!("r{n}"),
        status: 429,
        body: Value::Null,
        ..live.clone()
    };
    for n in 1..=4 {
        store
            .coalesce(now, "tok|0|429", refusal(n))
            .await
            .expect("coalesce");
    }
    store
        .coalesce(now, "tok|60|429", refusal(9))
        .await
        .expect("coalesce");
    let log = store.entries("acme").await.expect("log");
    let got: Vec<_> = log
        .iter()
        .map(|e| (e.request_id.as_str(), e.count, e.last_at, e.expires_at))
        .collect();
    // The coalesced entries sit at their first refusal's time, after the write logged
    // since their window's start; DynamoDB deletes expired items some time after their TTL,
    // so reads leave them out meanwhile.
    assert_eq!(
        got,
        vec![
            ("live", None, None, live.expires_at),
            ("r1", Some(4), Some(refusal(4).at), live.expires_at),
            ("r9", Some(1), Some(refusal(9).at), live.expires_at),
        ]
    );
    assert!(store.entries("globex").await.expect("log").is_empty());
}

/// Two routers (two instances, two SDK clients) over the same tables.
async fn router_over(ep: &str, prefix: &str, rate_limit: u64) -> (axum::Router, DynamoStore) {
    let store = DynamoStore::connect(&dynamo_config(ep, prefix, 30), DEFAULT_RETENTION_DAYS)
        .await
        .expect("connect");
    let config = Config {
        store: StoreKind::Dynamodb,
        rate_limit,
        cursor_secret: Some(b"shared-secret-of-the-deployment".to_vec()),
        ..Config::default()
    };
    let state = AppState::new(&Stores::of(store.clone()), config)
        .await
        .expect("state");
    (netops::app(state), store)
}

async fn call(router: &axum::Router, path: &str, token: &str) -> crate::helpers::TestResponse {
    use tower::ServiceExt;
    let req = http::Request::builder()
        .uri(format!("/api/v1{path}"))
        .header("authorization", format!("Bearer {token}"))
        .body(axum::body::Body::empty())
        .expect("request");
    into_test_response(router.clone().oneshot(req).await.expect("infallible")).await
}

#[tokio::test]
async fn the_rate_limit_holds_across_two_router_instances_sharing_the_table() {
    let Some(ep) = endpoint() else { return };
    let (seeder, prefix) = fresh_store(&ep, 0).await;
    let seeder = Stores::of(seeder);
    netops_demo::seed_tenant(&seeder, &netops_demo::ACME, netops::SeedSize::default())
        .await
        .expect("seed");
    let (token, _) = netops_shared::auth::create_token(
        seeder.tokens.as_ref(),
        "acme",
        "rl",
        vec![Scope::ReadMachines],
        chrono::Duration::hours(1),
    )
    .await
    .expect("token");
    let (a, _) = router_over(&ep, &prefix, 5).await;
    let (b, _) = router_over(&ep, &prefix, 5).await;
    let mut remaining = Vec::new();
    for i in 0..5 {
        let r = call(
            if i % 2 == 0 { &a } else { &b },
            "/machines?limit=1",
            &token,
        )
        .await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.body);
        remaining.push(r.header("x-ratelimit-remaining").unwrap_or("").to_owned());
    }
    // If the window turned during the calls, the count restarted: start again once.
    if remaining != ["4", "3", "2", "1", "0"] {
        remaining.clear();
        for i in 0..5 {
            let r = call(
                if i % 2 == 0 { &a } else { &b },
                "/machines?limit=1",
                &token,
            )
            .await;
            remaining.push(r.header("x-ratelimit-remaining").unwrap_or("").to_owned());
        }
    }
    assert_eq!(
        remaining,
        ["4", "3", "2", "1", "0"],
        "both instances count into one window"
    );
    for router in [&b, &a] {
        let r = call(router, "/machines?limit=1", &token).await;
        assert_eq!(r.status, StatusCode::TOO_MANY_REQUESTS, "{}", r.body);
        assert_eq!(r.error(), "rate_limited");
        assert!(r.header("retry-after").is_some());
    }
}

#[tokio::test]
async fn the_hot_path_costs_four_dynamodb_calls_cold_and_two_with_the_token_cached() {
    let Some(ep) = endpoint() else { return };
    let (seeder, prefix) = fresh_store(&ep, 0).await;
    let seeder = Stores::of(seeder);
    netops_demo::seed_tenant(&seeder, &netops_demo::ACME, netops::SeedSize::default())
        .await
        .expect("seed");
    let (token, _) = netops_shared::auth::create_token(
        seeder.tokens.as_ref(),
        "acme",
        "hot",
        vec![Scope::ReadMachines],
        chrono::Duration::hours(1),
    )
    .await
    .expect("token");
    let (router, store) = router_over(&ep, &prefix, 1000).await;
    // Counted by an SDK interceptor: every request sent to DynamoDB, retries included.
    let before = store.calls();
    let r = call(&router, "/machines?limit=20", &token).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    // The token's last use is written off the request's path, once per token and 5 minutes
    // per process: waited for, so that it is counted with the first request.
    for _ in 0..100 {
        if store.calls() - before >= 4 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let cold = store.calls() - before;
    let before = store.calls();
    let r = call(
        &router,
        &format!(
            "/machines?limit=20&cursor={}",
            r.body["meta"]["next_cursor"].as_str().unwrap_or("")
        ),
        &token,
    )
    .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let warm = store.calls() - before;
    eprintln!("hot path DynamoDB calls: {cold} with the token cache cold, {warm} warm");
    assert_eq!(
        cold, 4,
        "token GetItem + counter UpdateItem + one Query + the token's last-use UpdateItem"
    );
    assert_eq!(
        warm, 2,
        "counter UpdateItem + one Query: no second last-use write"
    );
}

#[tokio::test]
async fn a_revocation_elsewhere_takes_effect_once_the_token_cache_entry_expires() {
    let Some(ep) = endpoint() else { return };
    let prefix = format!("c{:016x}-", rand_u64());
    let a = DynamoStore::connect(&dynamo_config(&ep, &prefix, 1), DEFAULT_RETENTION_DAYS)
        .await
        .expect("connect");
    a.ensure_tables().await.expect("tables");
    let b = DynamoStore::connect(&dynamo_config(&ep, &prefix, 1), DEFAULT_RETENTION_DAYS)
        .await
        .expect("connect");
    let record = TokenRecord {
        hash: "ab".repeat(32),
        tenant: "acme".into(),
        name: "ci".into(),
        scopes: vec![Scope::ReadMachines],
        created_at: 1,
        expires_at: i64::MAX / 2,
        revoked_at: None,
        last_used_at: None,
    };
    a.insert(&record).await.expect("insert");
    assert!(matches!(
        a.insert(&TokenRecord {
            hash: "cd".repeat(32),
            ..record.clone()
        })
        .await,
        Err(StoreError::Exists)
    ));
    assert_eq!(
        a.by_hash(&record.hash).await.expect("read"),
        Some(record.clone())
    );
    assert!(b.revoke("acme", "ci", 5).await.expect("revoke"));
    assert!(
        !b.revoke("acme", "ci", 6).await.expect("revoke"),
        "nothing left to revoke"
    );
    // Instance b sees its own revocation at once; instance a within its cache lifetime.
    assert_eq!(
        b.by_hash(&record.hash)
            .await
            .expect("read")
            .and_then(|t| t.revoked_at),
        Some(5)
    );
    assert_eq!(
        a.by_hash(&record.hash)
            .await
            .expect("read")
            .and_then(|t| t.revoked_at),
        None
    );
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    assert_eq!(
        a.by_hash(&record.hash)
            .await
            .expect("read")
            .and_then(|t| t.revoked_at),
        Some(5)
    );
    // The name is free again once revoked.
    a.insert(&TokenRecord {
        hash: "cd".repeat(32),
        ..record.clone()
    })
    .await
    .expect("reuse name");
    let names: Vec<(String, bool)> = Tokens::list(&a, "acme")
        .await
        .expect("list")
        .into_iter()
        .map(|t| (t.name, t.revoked_at.is_some()))
        .collect();
    assert_eq!(
        names,
        vec![("ci".to_owned(), true), ("ci".to_owned(), false)]
    );
    assert!(a.by_hash(&"ef".repeat(32)).await.expect("read").is_none());
}

/// Records over five days, three partitions, with ties on time.
fn records() -> Vec<Record> {
    (0..180)
        .map(|i: i64| Record {
            partition: format!("host-{}", i % 3),
            ts: 1_700_000_000_000 + (i / 2) * 2_400_000,
            id: format!("{:04}", (i * 7919) % 1000),
            body: json!({"n": i, "proto": if i % 4 == 0 { "UDP" } else { "TCP" }, "bytes": i * 10}),
        })
        .collect()
}

async fn walk_series(
    store: &dyn SeriesRead,
    partition: Option<&str>,
    filter: &Filter,
    from: i64,
    to: i64,
    limit: usize,
) -> Vec<(i64, String)> {
    let mut out = Vec::new();
    let mut after: Option<Position> = None;
    for _ in 0..1000 {
        let page = store
            .scan(&SeriesQuery {
                tenant: "acme",
                series: "flows",
                partition,
                from,
                to,
                filter,
                after: after.as_ref(),
                limit,
            })
            .await
            .expect("scan");
        assert!(page.records.len() <= limit);
        out.extend(page.records.iter().map(|r| (r.ts, r.id.clone())));
        match page.next {
            Some(p) => after = Some(p),
            None => return out,
        }
    }
    panic!("paging did not end");
}

#[tokio::test]
async fn series_pages_over_day_buckets_and_partitions_equal_the_embedded_stores() {
    let Some(ep) = endpoint() else { return };
    let (dynamo, _) = fresh_store(&ep, 0).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let sqlite = SqliteStore::open(dir.path().join("s.db")).expect("sqlite");
    for s in [&dynamo as &dyn SeriesWrite, &sqlite as &dyn SeriesWrite] {
        s.append("acme", "flows", records()).await.expect("append");
        s.append("globex", "flows", records()[..10].to_vec())
            .await
            .expect("append");
    }
    let first = 1_700_000_000_000;
    let cases = [
        (None, Filter::all(), first, first + 10 * 86_400_000, 7),
        (
            None,
            Filter::all().and(Pred::Eq("proto", json!("UDP"))),
            first,
            first + 10 * 86_400_000,
            4,
        ),
        (
            Some("host-1"),
            Filter::all(),
            first,
            first + 10 * 86_400_000,
            5,
        ),
        (
            Some("host-2"),
            Filter::all().and(Pred::Gte("bytes", 500.0)),
            first + 86_400_000,
            first + 3 * 86_400_000,
            3,
        ),
        (
            None,
            Filter::all(),
            first + 40_000_000,
            first + 50_000_000,
            1,
        ),
        (
            None,
            Filter::all(),
            first + 9 * 86_400_000,
            first + 10 * 86_400_000,
            10,
        ),
    ];
    for (partition, filter, from, to, limit) in cases {
        let expected = walk_series(&sqlite, partition, &filter, from, to, limit).await;
        let got = walk_series(&dynamo, partition, &filter, from, to, limit).await;
        assert_eq!(
            got, expected,
            "partition {partition:?}, filter {filter:?}, limit {limit}"
        );
        assert!(!expected.is_empty() || from > first + 8 * 86_400_000);
    }
}

#[tokio::test]
async fn documents_page_by_key_and_rollups_add_up_like_the_embedded_store() {
    let Some(ep) = endpoint() else { return };
    let (dynamo, _) = fresh_store(&ep, 0).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let sqlite = SqliteStore::open(dir.path().join("s.db")).expect("sqlite");
    let docs: Vec<(String, Value)> = (0..40)
        .map(|i| {
            (
                format!("m{i:03}"),
                json!({"i": i, "online": i % 3 != 0, "name": format!("PAR-LT-{i:04}")}),
            )
        })
        .collect();
    let rollup = |hour: i64, key: &str, bytes: f64| Rollup {
        hour,
        key: key.into(),
        dims: json!({"proto": key.to_uppercase()}).into(),
        measures: [("bytes".to_owned(), bytes), ("flows".to_owned(), 1.0)]
            .into_iter()
            .collect(),
    };
    for s in [Stores::of(dynamo.clone()), Stores::of(sqlite.clone())] {
        s.docs
            .put("acme", "machines", docs.clone())
            .await
            .expect("docs");
        s.rollups
            .add(
                "acme",
                "flows",
                vec![
                    rollup(0, "tcp", 2.0),
                    rollup(3_600_000, "tcp", 1.0),
                    rollup(0, "udp", 4.0),
                ],
            )
            .await
            .expect("rollups");
        s.rollups
            .add(
                "acme",
                "flows",
                vec![rollup(0, "tcp", 3.0), rollup(0, "tcp", 0.5)],
            )
            .await
            .expect("rollups");
    }
    let filter = Filter::all()
        .and(Pred::Eq("online", json!(true)))
        .and(Pred::Contains(vec!["name"], "lt-00".into()));
    for (f, limit) in [(Filter::all(), 6), (filter, 4)] {
        let mut pages = Vec::new();
        for s in [&dynamo as &dyn Documents, &sqlite as &dyn Documents] {
            let mut keys = Vec::new();
            let mut after: Option<String> = None;
            loop {
                let page = s
                    .list("acme", "machines", &f, after.as_deref(), limit)
                    .await
                    .expect("list");
                keys.extend(page.iter().map(|d| d.key.clone()));
                if page.len() < limit {
                    break;
                }
                after = page.last().map(|d| d.key.clone());
            }
            pages.push(keys);
        }
        assert_eq!(pages[0], pages[1]);
    }
    for s in [&dynamo as &dyn Rollups, &sqlite as &dyn Rollups] {
        let rows = s
            .rows(
                "acme",
                "flows",
                0,
                7_200_000,
                &Filter::all().and(Pred::Eq("proto", json!("TCP"))),
            )
            .await
            .expect("rollups");
        let got: Vec<(i64, f64, f64)> = rows
            .iter()
            .map(|r| (r.hour, r.measures["bytes"], r.measures["flows"]))
            .collect();
        assert_eq!(got, vec![(0, 5.5, 3.0), (3_600_000, 1.0, 1.0)]);
        assert!(
            s.rows("globex", "flows", 0, 7_200_000, &Filter::all())
                .await
                .expect("rollups")
                .is_empty()
        );
    }
    // Per key and per group, the DynamoDB adapter adds up as SQLite does in place.
    let mut sums = Vec::new();
    for s in [&dynamo as &dyn Rollups, &sqlite as &dyn Rollups] {
        let per_key = s
            .sums_per_key("acme", "flows", 0, 7_200_000, &Filter::all())
            .await
            .expect("sums");
        let by_proto = s
            .sums_per_group("acme", "flows", 0, 7_200_000, &Filter::all(), &["proto"])
            .await
            .expect("groups");
        let one = s
            .sums_per_group("acme", "flows", 0, 7_200_000, &Filter::all(), &["site"])
            .await
            .expect("groups");
        assert_eq!(
            (
                one.len(),
                one[0].keys,
                one[0].hour,
                one[0].measures["bytes"]
            ),
            (1, 2, 3_600_000, 10.5)
        );
        sums.push((per_key, by_proto, one));
    }
    assert_eq!(sums[0], sums[1]);
    // Clearing a tenant keeps its write log and the other tenant's data.
    dynamo
        .commit(entry("acme", "kept"), Vec::new())
        .await
        .expect("log");
    dynamo
        .put("globex", "machines", docs[..2].to_vec())
        .await
        .expect("docs");
    dynamo.clear_tenant("acme").await.expect("clear");
    assert!(
        dynamo
            .get("acme", "machines", "m001")
            .await
            .expect("get")
            .is_none()
    );
    assert!(
        dynamo
            .get("globex", "machines", "m001")
            .await
            .expect("get")
            .is_some()
    );
    assert_eq!(dynamo.entries("acme").await.expect("log").len(), 1);
    assert_eq!(
        dynamo.secret("cursor").await.expect("s"),
        dynamo.secret("cursor").await.expect("s")
    );
}

// --- Timestream (our side of the protocol, against results queued in moto) ---

fn ts_config(ep: &str) -> TimestreamConfig {
    TimestreamConfig {
        database: "netops".into(),
        series: vec!["flows".into()],
        endpoint: Some(ep.to_owned()),
        region: Some("us-east-1".into()),
    }
}

fn scalar(v: &str) -> Value {
    json!({"ScalarValue": v})
}

fn column(name: &str, ty: &str) -> Value {
    json!({"Name": name, "Type": {"ScalarType": ty}})
}

/// Queues `pages` in moto as the answers to `sql`, in order.
async fn queue_results(ep: &str, sql: &str, pages: Vec<Value>) {
    let res = reqwest::Client::new()
        .post(format!("{ep}/moto-api/static/timestream/query-results"))
        .json(
            &json!({"account_id": "123456789012", "region": "us-east-1", "results": {sql: pages}}),
        )
        .send()
        .await
        .expect("moto api");
    assert!(res.status().is_success(), "{}", res.status());
}

fn flow_row(part: &str, id: &str, time: &str, body: Value) -> Value {
    json!({"Data": [scalar(part), scalar(id), scalar(time), scalar(&body.to_string())]})
}

fn flow_columns() -> Value {
    json!([
        column("partition", "VARCHAR"),
        column("id", "VARCHAR"),
        column("time", "TIMESTAMP"),
        column("body", "VARCHAR")
    ])
}

#[tokio::test]
async fn timestream_reads_follow_next_token_and_parse_typed_rows_from_recorded_responses() {
    let Some(ep) = endpoint() else { return };
    let tenant = format!("ts{:08x}", rand_u64() as u32);
    let dir = tempfile::tempdir().expect("dir");
    let main: Arc<dyn SeriesRead> =
        Arc::new(SqliteStore::open(dir.path().join("i.db")).expect("sqlite"));
    let store = TimestreamSeries::connect(main, &ts_config(&ep))
        .await
        .expect("connect");
    let filter = Filter::all().and(Pred::Eq("proto", json!("TCP")));
    let q = SeriesQuery {
        tenant: &tenant,
        series: "flows",
        partition: None,
        from: 0,
        to: 2_000_000_000_000,
        filter: &filter,
        after: None,
        limit: 2,
    };
    let sql = netops_store_timestream::series_sql("netops", &q);
    // Three recorded pages: the first empty (the query still running), as Timestream does.
    queue_results(
        &ep,
        &sql,
        vec![
            json!({"QueryId": "q1", "Rows": [], "ColumnInfo": flow_columns(), "NextToken": "t1"}),
            json!({"QueryId": "q1", "Rows": [
                flow_row("PAR-LT-0001", "b", "2023-11-14 22:13:20.500000000", json!({"proto": "TCP", "n": 1})),
                flow_row("PAR-LT-0002", "a", "2023-11-14 22:13:20.500000000", json!({"proto": "UDP", "n": 2})),
            ], "ColumnInfo": flow_columns(), "NextToken": "t2"}),
            json!({"QueryId": "q1", "Rows": [
                flow_row("PAR-LT-0003", "z", "2023-11-14 22:13:19.000000000", json!({"proto": "TCP", "n": 3})),
                flow_row("PAR-LT-0001", "y", "2023-11-14 22:13:18.000000000", json!({"proto": "TCP", "n": 4})),
            ], "ColumnInfo": flow_columns()}),
        ],
    )
    .await;
    let page = store.scan(&q).await.expect("scan");
    assert_eq!(store.calls(), 3, "one Query per page, following NextToken");
    let got: Vec<(String, i64, String)> = page
        .records
        .iter()
        .map(|r| (r.partition.clone(), r.ts, r.id.clone()))
        .collect();
    assert_eq!(
        got,
        vec![
            ("PAR-LT-0001".to_owned(), 1_700_000_000_500, "b".to_owned()),
            ("PAR-LT-0003".to_owned(), 1_699_999_999_000, "z".to_owned())
        ],
        "UDP filtered out client-side; limit 2 of 3 matches"
    );
    assert_eq!(
        page.next,
        Some(Position {
            ts: 1_699_999_999_000,
            id: "z".into()
        })
    );
    assert_eq!(page.records[0].body["n"], json!(1));
}

#[tokio::test]
async fn timestream_columns_of_every_kind_parse_through_their_column_info() {
    let Some(ep) = endpoint() else { return };
    use netops_store_timestream::{Cell, parse_rows};
    let sdk = aws_config_for(&ep).await;
    let client = aws_sdk_timestreamquery::Client::new(&sdk);
    let sql = format!("SELECT kinds FROM shapes WHERE run = '{:016x}'", rand_u64());
    let columns = json!([
        column("s", "VARCHAR"), column("b", "BIGINT"), column("i", "INTEGER"), column("d", "DOUBLE"),
        column("ok", "BOOLEAN"), column("t", "TIMESTAMP"), column("day", "DATE"), column("gone", "VARCHAR"),
        {"Name": "arr", "Type": {"ArrayColumnInfo": {"Type": {"ScalarType": "BIGINT"}}}},
        {"Name": "row", "Type": {"RowColumnInfo": [column("k", "VARCHAR"), column("v", "DOUBLE")]}},
        {"Name": "series", "Type": {"TimeSeriesMeasureValueColumnInfo": {"Type": {"ScalarType": "DOUBLE"}}}},
    ]);
    let row = json!({"Data": [
        scalar("héllo"), scalar("9007199254740993"), scalar("-7"), scalar("2.5"), scalar("true"),
        scalar("2024-05-01 12:00:00.123456789"), scalar("2024-05-01"), {"NullValue": true},
        {"ArrayValue": [scalar("1"), scalar("2")]},
        {"RowValue": {"Data": [scalar("k1"), scalar("0.5")]}},
        {"TimeSeriesValue": [{"Time": "2024-05-01 12:00:00.000000000", "Value": scalar("1.5")}]},
    ]});
    queue_results(
        &ep,
        &sql,
        vec![json!({"QueryId": "q2", "Rows": [row], "ColumnInfo": columns})],
    )
    .await;
    let out = client
        .query()
        .query_string(&sql)
        .send()
        .await
        .expect("query");
    let rows = parse_rows(out.column_info(), out.rows()).expect("parse");
    let r = &rows[0];
    assert_eq!(r["s"], Cell::Varchar("héllo".into()));
    assert_eq!(
        r["b"],
        Cell::BigInt(9_007_199_254_740_993),
        "BIGINT keeps every digit"
    );
    assert_eq!(r["i"], Cell::Integer(-7));
    assert_eq!(r["d"], Cell::Double(2.5));
    assert_eq!(r["ok"], Cell::Boolean(true));
    assert_eq!(r["t"], Cell::Timestamp(1_714_564_800_123));
    assert_eq!(r["day"], Cell::Text("2024-05-01".into()));
    assert_eq!(r["gone"], Cell::Null);
    assert_eq!(
        r["arr"],
        Cell::Array(vec![Cell::BigInt(1), Cell::BigInt(2)])
    );
    assert_eq!(
        r["row"],
        Cell::Row(vec![Cell::Varchar("k1".into()), Cell::Double(0.5)])
    );
    assert_eq!(
        r["series"],
        Cell::TimeSeries(vec![(1_714_564_800_000, Cell::Double(1.5))])
    );
    // A value that does not fit its declared type is a data error, not a panic.
    let bad_sql = format!("{sql} AND bad");
    queue_results(&ep, &bad_sql, vec![json!({"QueryId": "q3", "Rows": [{"Data": [scalar("x")]}], "ColumnInfo": [column("b", "BIGINT")]})]).await;
    let out = client
        .query()
        .query_string(&bad_sql)
        .send()
        .await
        .expect("query");
    assert!(matches!(
        parse_rows(out.column_info(), out.rows()),
        Err(StoreError::Data(_))
    ));
}

async fn aws_config_for(ep: &str) -> aws_config::SdkConfig {
    aws_config::defaults(aws_config::BehaviorVersion::latest())
        .endpoint_url(ep)
        .region(aws_config::Region::new("us-east-1"))
        .credentials_provider(aws_sdk_timestreamquery::config::Credentials::new(
            "testing", "testing", None, None, "test",
        ))
        .http_client(netops_store_dynamodb::http_client())
        .load()
        .await
}

#[tokio::test]
async fn series_not_routed_to_timestream_stay_on_the_main_store() {
    let Some(ep) = endpoint() else { return };
    let dir = tempfile::tempdir().expect("dir");
    let main = SqliteStore::open(dir.path().join("i.db")).expect("sqlite");
    main.append("acme", "logons", records()[..3].to_vec())
        .await
        .expect("append");
    let store = TimestreamSeries::connect(Arc::new(main), &ts_config(&ep))
        .await
        .expect("connect");
    let page = store
        .scan(&SeriesQuery {
            tenant: "acme",
            series: "logons",
            partition: None,
            from: 0,
            to: i64::MAX,
            filter: &Filter::all(),
            after: None,
            limit: 10,
        })
        .await
        .expect("scan");
    assert_eq!(page.records.len(), 3);
    assert_eq!(store.calls(), 0);
}

#[tokio::test]
async fn ended_documents_of_aging_collections_expire_by_ttl_on_dynamodb() {
    let Some(ep) = endpoint() else { return };
    let (store, prefix) = fresh_store(&ep, 30).await;
    let resolved = chrono::Utc::now() - chrono::Duration::days(3);
    let alerts = "netdiag_alerts".to_owned();
    store
        .put(
            "t",
            &alerts,
            vec![
                ("done".into(), json!({"resolved_at": resolved.to_rfc3339()})),
                ("open".into(), json!({"opened_at": resolved.to_rfc3339()})),
            ],
        )
        .await
        .expect("put");
    store
        .put(
            "t",
            "machines",
            vec![("m".into(), json!({"resolved_at": resolved.to_rfc3339()}))],
        )
        .await
        .expect("put");
    let ttls = || async {
        let client = aws_sdk_dynamodb::Client::new(&aws_config_for(&ep).await);
        let items = client
            .scan()
            .table_name(format!("{prefix}data"))
            .send()
            .await
            .expect("scan")
            .items
            .unwrap_or_default();
        let mut out: Vec<(String, Option<i64>)> = items
            .iter()
            .filter(|i| i.contains_key("b"))
            .map(|i| {
                let sk = i["sk"].as_s().expect("sk").clone();
                let ttl = i
                    .get("ttl")
                    .map(|t| t.as_n().expect("n").parse().expect("ttl"));
                (sk, ttl)
            })
            .collect();
        out.sort();
        out
    };
    let ttl = resolved.timestamp() + i64::from(DEFAULT_RETENTION_DAYS) * 86_400;
    assert_eq!(
        ttls().await,
        [
            ("done".into(), Some(ttl)),
            ("m".into(), None),
            ("open".into(), None)
        ]
    );
    // Through the write path: resolving the open one gives it a TTL, reopening the other
    // takes its TTL away.
    let change = |key: &str, body| Change::PutDoc {
        collection: alerts.clone(),
        key: key.into(),
        body,
        expect: Expect::Any,
    };
    store
        .commit(
            entry("t", "r1"),
            vec![
                change("open", json!({"resolved_at": resolved.to_rfc3339()})),
                change("done", json!({"opened_at": resolved.to_rfc3339()})),
            ],
        )
        .await
        .expect("commit");
    assert_eq!(
        ttls().await,
        [
            ("done".into(), None),
            ("m".into(), None),
            ("open".into(), Some(ttl))
        ]
    );
}
