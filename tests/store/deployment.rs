//! The deployment port: secrets created once and kept, whether the store holds tenant data
//! yet, and clearing one tenant's data (documents, series, rollups) for a new seed, its
//! tokens and write log kept; deleting one whole, paced and resumable.

use netops_shared::store::{Change, Expect, Filter, KeyClaim, Pace, Stores};
use serde_json::json;

use crate::adapters::Subject;
use crate::data::{ACME, GLOBEX, HOUR, day0, entry, new_token, query, record, rollup};

conformance! {
    [sqlite, dynamodb] [
        a_secret_is_created_once_then_read_as_it_was,
        a_secret_is_the_same_for_every_instance_of_the_store,
        a_new_store_is_empty_until_a_tenant_has_data,
        a_store_holding_only_tenant_series_or_rollups_is_not_empty,
        a_store_holding_no_tenant_data_is_empty,
        clearing_a_tenant_removes_its_documents_series_and_rollups_only,
        clearing_a_tenant_keeps_its_tokens_and_its_write_log,
        the_tenants_are_those_holding_a_token_revoked_or_not,
        deleting_a_tenant_removes_all_it_holds_and_nothing_of_another,
        a_deletion_stopped_part_way_goes_on_when_run_again,
    ]
    [sqlite] [
        the_embedded_store_counts_a_tenants_items,
    ]
    [dynamodb] [
        dynamodb_counts_no_tenants_items,
        dynamodb_paces_the_items_its_scan_reads_for_a_deletion,
    ]
}

async fn a_secret_is_created_once_then_read_as_it_was(s: Stores) {
    let first = s.deployment.secret("cursor").await.expect("secret");
    assert_eq!(first.len(), 32);
    assert_ne!(first, vec![0; 32]);
    for _ in 0..3 {
        assert_eq!(s.deployment.secret("cursor").await.expect("secret"), first);
    }
    let other = s.deployment.secret("other").await.expect("secret");
    assert_eq!(other.len(), 32);
    assert_ne!(other, first, "each name has its own");
}

async fn a_secret_is_the_same_for_every_instance_of_the_store(subject: Subject) {
    let other = subject.again().await;
    // Asked for first through the other instance, then through this one.
    let theirs = other.deployment.secret("cursor").await.expect("secret");
    let ours = subject
        .stores()
        .deployment
        .secret("cursor")
        .await
        .expect("secret");
    assert_eq!(ours, theirs);
    // Asked for at once through both: one secret is created, both read it.
    let (a, b) = tokio::join!(
        subject.stores().deployment.secret("race"),
        other.deployment.secret("race")
    );
    assert_eq!(a.expect("secret"), b.expect("secret"));
}

async fn a_new_store_is_empty_until_a_tenant_has_data(s: Stores) {
    assert!(s.deployment.is_empty().await.expect("empty"));
    s.docs
        .put(ACME, "machines", vec![("m".into(), json!({}))])
        .await
        .expect("put");
    assert!(!s.deployment.is_empty().await.expect("empty"));
}

async fn a_store_holding_only_tenant_series_or_rollups_is_not_empty(s: Stores) {
    s.series_writes
        .append(ACME, "events", vec![record("m", day0(), "e", json!({}))])
        .await
        .expect("append");
    assert!(
        !s.deployment.is_empty().await.expect("empty"),
        "series records"
    );
    s.series_writes
        .append(GLOBEX, "events", vec![record("m", day0(), "e", json!({}))])
        .await
        .expect("append");
    for tenant in [ACME, GLOBEX] {
        s.deployment.clear_tenant(tenant).await.expect("clear");
    }
    s.rollups
        .add(
            ACME,
            "flows",
            vec![rollup(day0(), "k", json!({}), &[("n", 1.0)])],
        )
        .await
        .expect("add");
    assert!(!s.deployment.is_empty().await.expect("empty"), "rollups");
}

async fn a_store_holding_no_tenant_data_is_empty(s: Stores) {
    // What belongs to the deployment, tokens, the write log and counters are no tenant's
    // data (`clear_tenant` keeps them): a store holding only them is seeded on first start.
    s.deployment.secret("cursor").await.expect("secret");
    s.counters.incr("tok|w", 4_000_000_000).await.expect("incr");
    let t = chrono::Utc::now().timestamp();
    new_token(&s, ACME, "ci").await;
    s.writes
        .commit(entry(ACME, "r1"), vec![])
        .await
        .expect("commit");
    let since = chrono::Utc::now();
    s.writes
        .coalesce(since, "addr|w|401", entry("~unauthenticated", "r2"))
        .await
        .expect("coalesce");
    let claim = KeyClaim {
        key: "0123456789abcdef|k".into(),
        fingerprint: "f".into(),
        claim: "c".into(),
        at: t,
        expires_at: t + 60,
    };
    s.writes.claim_key(ACME, &claim).await.expect("claim");
    assert!(s.deployment.is_empty().await.expect("empty"));
    // And after the only tenant's data is cleared.
    s.docs
        .put(ACME, "machines", vec![("m".into(), json!({}))])
        .await
        .expect("put");
    assert!(!s.deployment.is_empty().await.expect("empty"));
    s.deployment.clear_tenant(ACME).await.expect("clear");
    assert!(s.deployment.is_empty().await.expect("empty"), "cleared");
}

/// A document in two collections, a series record and a rollup of `tenant`.
async fn fill(s: &Stores, tenant: &str) {
    let d = day0();
    s.docs
        .put(
            tenant,
            "machines",
            vec![("m1".into(), json!({"t": tenant}))],
        )
        .await
        .expect("put");
    s.docs
        .put_if(tenant, "incidents", "1", json!({}), Expect::Absent)
        .await
        .expect("put");
    s.series_writes
        .append(
            tenant,
            "events",
            vec![record("m1", d + HOUR, "e1", json!({}))],
        )
        .await
        .expect("append");
    s.rollups
        .add(
            tenant,
            "flows",
            vec![rollup(d, "k", json!({}), &[("n", 1.0)])],
        )
        .await
        .expect("add");
}

/// What [`fill`] wrote that `tenant` still holds: (documents, series records read through
/// all partitions and through one, rollups).
async fn held(s: &Stores, tenant: &str) -> (usize, usize, usize) {
    let f = Filter::all();
    let docs = s
        .docs
        .list(tenant, "machines", &f, None, 10)
        .await
        .expect("list");
    let incident = s.docs.get(tenant, "incidents", "1").await.expect("get");
    let events = s
        .series
        .scan(&query(tenant, "events", None, 0, i64::MAX, &f, 10))
        .await
        .expect("scan");
    let one = s
        .series
        .scan(&query(tenant, "events", Some("m1"), 0, i64::MAX, &f, 10))
        .await
        .expect("scan");
    let rollups = s
        .rollups
        .rows(tenant, "flows", 0, i64::MAX, &f)
        .await
        .expect("rows");
    (
        docs.len() + usize::from(incident.is_some()),
        events.records.len() + one.records.len(),
        rollups.len(),
    )
}

async fn clearing_a_tenant_removes_its_documents_series_and_rollups_only(s: Stores) {
    let d = day0();
    for tenant in [ACME, GLOBEX] {
        fill(&s, tenant).await;
    }
    s.deployment.clear_tenant(ACME).await.expect("clear");
    let f = Filter::all();
    let held = |tenant| held(&s, tenant);
    assert_eq!(held(ACME).await, (0, 0, 0), "acme's data is gone");
    assert_eq!(held(GLOBEX).await, (2, 2, 1), "globex's is all there");
    // The cleared tenant is seeded again from nothing.
    s.docs
        .put_if(
            ACME,
            "incidents",
            "1",
            json!({"again": true}),
            Expect::Absent,
        )
        .await
        .expect("a document put again where one was");
    s.series_writes
        .append(
            ACME,
            "events",
            vec![record("m1", d + 2 * HOUR, "e2", json!({}))],
        )
        .await
        .expect("append");
    let events = s
        .series
        .scan(&query(ACME, "events", None, 0, i64::MAX, &f, 10))
        .await
        .expect("scan");
    assert_eq!(events.records.len(), 1);
}

async fn clearing_a_tenant_keeps_its_tokens_and_its_write_log(s: Stores) {
    let token = new_token(&s, ACME, "ci").await;
    let logged = entry(ACME, "r1");
    s.writes
        .commit(
            logged.clone(),
            vec![Change::PutDoc {
                collection: "incidents".into(),
                key: "1".into(),
                body: json!({}),
                expect: Expect::Absent,
            }],
        )
        .await
        .expect("commit");
    s.deployment.clear_tenant(ACME).await.expect("clear");
    assert_eq!(
        s.tokens.by_hash(&token.hash).await.expect("lookup"),
        Some(token.clone())
    );
    assert_eq!(s.tokens.list(ACME).await.expect("list"), [token]);
    assert_eq!(s.writes.entries(ACME).await.expect("log"), [logged]);
    assert_eq!(s.docs.get(ACME, "incidents", "1").await.expect("get"), None);
}

async fn the_tenants_are_those_holding_a_token_revoked_or_not(s: Stores) {
    assert!(s.deployment.tenants().await.expect("none").is_empty());
    new_token(&s, GLOBEX, "a").await;
    new_token(&s, ACME, "a").await;
    new_token(&s, ACME, "b").await;
    s.tokens.revoke(GLOBEX, "a", 1).await.expect("revoke");
    // Data without a token makes no tenant.
    s.docs
        .put("initech", "incidents", vec![("1".into(), json!({}))])
        .await
        .expect("put");
    assert_eq!(
        s.deployment.tenants().await.expect("tenants"),
        [ACME, GLOBEX]
    );
}

/// Everything a tenant can hold: [`fill`]'s data, a write-log entry with its document, an
/// idempotency key, an ingestion-log entry and a token. Answers the token's hash.
async fn fill_all(s: &Stores, tenant: &str) -> String {
    fill(s, tenant).await;
    s.writes
        .commit(
            entry(tenant, "r1"),
            vec![Change::PutDoc {
                collection: "notes".into(),
                key: "1".into(),
                body: json!({}),
                expect: Expect::Absent,
            }],
        )
        .await
        .expect("commit");
    let t = chrono::Utc::now().timestamp();
    let claim = KeyClaim {
        key: "0123456789abcdef|k".into(),
        fingerprint: "f".into(),
        claim: "c".into(),
        at: t,
        expires_at: t + 600,
    };
    s.writes.claim_key(tenant, &claim).await.expect("claim");
    s.ingest
        .record(crate::ingest::entry(tenant, "b1", 3))
        .await
        .expect("record");
    let token = new_token(s, tenant, "ci").await;
    s.tokens.touch(&token.hash, t).await.expect("touch");
    token.hash
}

/// What [`fill_all`] wrote that `tenant` still holds, as counts: [`held`]'s, then write-log
/// entries, ingestion-log entries, tokens listed, and whether its token is found by hash and
/// its idempotency key is still held.
async fn held_all(s: &Stores, tenant: &str, hash: &str) -> ((usize, usize, usize), [usize; 5]) {
    let t = chrono::Utc::now().timestamp();
    let claim = KeyClaim {
        key: "0123456789abcdef|k".into(),
        fingerprint: "f".into(),
        claim: "other".into(),
        at: t,
        expires_at: t + 600,
    };
    let key_held = s
        .writes
        .claim_key(tenant, &claim)
        .await
        .expect("claim")
        .is_some();
    if !key_held {
        s.writes
            .release_key(tenant, &claim.key, "other")
            .await
            .expect("release");
    }
    (
        held(s, tenant).await,
        [
            s.writes.entries(tenant).await.expect("log").len(),
            s.ingest.ingested(tenant).await.expect("ingested").len(),
            s.tokens.list(tenant).await.expect("tokens").len(),
            usize::from(s.tokens.by_hash(hash).await.expect("lookup").is_some()),
            usize::from(key_held),
        ],
    )
}

async fn deleting_a_tenant_removes_all_it_holds_and_nothing_of_another(s: Stores) {
    let acme = fill_all(&s, ACME).await;
    let globex = fill_all(&s, GLOBEX).await;
    let all = ((2, 2, 1), [1, 1, 1, 1, 1]);
    assert_eq!(held_all(&s, ACME, &acme).await, all);
    s.deployment
        .delete_tenant(ACME, &Pace::unbounded())
        .await
        .expect("delete");
    assert_eq!(held_all(&s, ACME, &acme).await, ((0, 0, 0), [0; 5]));
    assert_eq!(held_all(&s, GLOBEX, &globex).await, all, "globex is whole");
    assert_eq!(s.deployment.tenants().await.expect("tenants"), [GLOBEX]);
    assert_eq!(
        s.docs
            .get(GLOBEX, "notes", "1")
            .await
            .expect("get")
            .map(|d| d.version),
        Some(1)
    );
    // Deleting a deleted (or unknown) tenant does nothing, and fails nothing.
    s.deployment
        .delete_tenant(ACME, &Pace::unbounded())
        .await
        .expect("again");
    assert_eq!(held_all(&s, GLOBEX, &globex).await, all, "globex is whole");
    // The name can be given again, from nothing.
    fill_all(&s, ACME).await;
    assert_eq!(
        s.deployment.tenants().await.expect("tenants"),
        [ACME, GLOBEX]
    );
}

async fn a_deletion_stopped_part_way_goes_on_when_run_again(s: Stores) {
    let hash = fill_all(&s, ACME).await;
    fill_all(&s, GLOBEX).await;
    let docs: Vec<_> = (0..30)
        .map(|i| (format!("m{i:02}"), json!({"i": i})))
        .collect();
    s.docs.put(ACME, "devices", docs).await.expect("put");
    let reported = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let seen = reported.clone();
    let pace = Pace::new(1_000, Some(12), move |_, n| {
        seen.store(n, std::sync::atomic::Ordering::Relaxed);
    });
    s.deployment.delete_tenant(ACME, &pace).await.expect("part");
    assert!(pace.stopped());
    assert_eq!(pace.done(), 12, "stopped at its bound");
    let left = s
        .docs
        .list(ACME, "devices", &Filter::all(), None, 100)
        .await
        .expect("list")
        .len();
    let (data, [_, _, tokens, found, _]) = held_all(&s, ACME, &hash).await;
    assert!(
        left + data.0 + data.1 + data.2 > 0 && tokens == 1 && found == 1,
        "some data left ({left} devices, {data:?}), the token kept"
    );
    assert_eq!(
        s.deployment.tenants().await.expect("tenants"),
        [ACME, GLOBEX],
        "still listed"
    );
    // Run again, in small runs: each goes on where the last stopped.
    let mut runs = 0;
    loop {
        runs += 1;
        assert!(runs < 20, "never finished");
        let pace = Pace::new(u32::MAX, Some(12), |_, _| {});
        s.deployment
            .delete_tenant(ACME, &pace)
            .await
            .expect("again");
        if !pace.stopped() {
            break;
        }
    }
    assert_eq!(held_all(&s, ACME, &hash).await, ((0, 0, 0), [0; 5]));
    let devices = s
        .docs
        .list(ACME, "devices", &Filter::all(), None, 100)
        .await
        .expect("list");
    assert!(devices.is_empty());
    assert_eq!(s.deployment.tenants().await.expect("tenants"), [GLOBEX]);
    assert_eq!(held(&s, GLOBEX).await, (2, 2, 1));
}

async fn the_embedded_store_counts_a_tenants_items(s: Stores) {
    assert_eq!(
        s.deployment.tenant_items(ACME).await.expect("count"),
        Some(0)
    );
    fill_all(&s, ACME).await;
    // 2 documents + the write's document, a record, a rollup, a write-log entry, a key,
    // an ingestion-log entry, a token and its last use.
    assert_eq!(
        s.deployment.tenant_items(ACME).await.expect("count"),
        Some(10)
    );
    assert_eq!(
        s.deployment.tenant_items(GLOBEX).await.expect("count"),
        Some(0)
    );
}

async fn dynamodb_counts_no_tenants_items(s: Stores) {
    fill_all(&s, ACME).await;
    assert_eq!(s.deployment.tenant_items(ACME).await.expect("count"), None);
}

/// The Scan that finds a tenant's items reads every tenant's: the pace holds those reads too,
/// not only the deletes (docs/cli.md#tenant-delete).
async fn dynamodb_paces_the_items_its_scan_reads_for_a_deletion(s: Stores) {
    let docs = |n: usize| {
        (0..n)
            .map(|i| (format!("d{i:03}"), json!({"i": i})))
            .collect::<Vec<_>>()
    };
    s.docs.put(ACME, "devices", docs(5)).await.expect("put");
    s.docs.put(GLOBEX, "devices", docs(150)).await.expect("put");
    let started = std::time::Instant::now();
    let pace = Pace::new(100, None, |_, _| {});
    s.deployment
        .delete_tenant(ACME, &pace)
        .await
        .expect("delete");
    assert_eq!(pace.done(), 5, "what it deleted");
    assert!(
        started.elapsed() >= std::time::Duration::from_millis(1_500),
        "155 items read and 5 deleted at 100 a second took {:?}",
        started.elapsed()
    );
    assert_eq!(
        s.docs
            .list(GLOBEX, "devices", &Filter::all(), None, 500)
            .await
            .expect("list")
            .len(),
        150
    );
}
