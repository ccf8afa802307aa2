//! The write-log port: state changes committed together with their log entry or not at all,
//! refusals coalesced per key into one counted entry, entries listed oldest first until they
//! expire, and idempotency keys claimed, answered, released, and taken over once abandoned
//! or expired.

use chrono::Utc;
use netops_shared::store::{
    ABANDONED_AFTER_SECS, Change, Expect, Filter, HeldKey, KeptAnswer, KeyClaim, StoreError,
    Stores, WriteLogEntry,
};
use serde_json::{Value, json};

use crate::data::{ACME, GLOBEX, after, day0, entry, query, record};

conformance! {
    [sqlite, dynamodb] [
        a_commit_writes_its_changes_and_its_log_entry_together,
        a_commit_whose_condition_fails_writes_no_change_and_no_entry,
        the_changes_of_commits_raise_a_documents_version_by_one,
        refusals_coalesce_into_one_counted_entry_per_key,
        the_log_lists_a_tenants_entries_oldest_first_without_the_expired,
        a_coalesced_entry_takes_its_place_by_its_first_refusal,
        an_idempotency_key_is_taken_once_and_held_for_later_requests,
        an_answer_kept_with_its_commit_is_given_to_every_later_claim,
        a_commit_keeping_an_answer_by_a_claim_no_longer_held_writes_nothing,
        a_key_in_flight_past_the_abandon_time_is_taken_over,
        an_expired_key_is_taken_over_even_with_its_answer,
        a_released_key_is_free_again_unless_answered_or_claimed_since,
        write_logs_and_keys_of_one_tenant_are_never_anothers,
    ]
}

fn put(key: &str, body: Value, expect: Expect) -> Change {
    Change::PutDoc {
        collection: "incidents".into(),
        key: key.into(),
        body,
        expect,
    }
}

fn claim(key: &str, claim: &str, at: i64) -> KeyClaim {
    KeyClaim {
        key: format!("0123456789abcdef|{key}"),
        fingerprint: format!("fp-{key}"),
        claim: claim.into(),
        at,
        expires_at: at + 86_400,
    }
}

fn remember(claim: &KeyClaim, status: u16) -> Change {
    Change::Remember {
        key: claim.key.clone(),
        claim: claim.claim.clone(),
        answer: answer(status),
    }
}

fn answer(status: u16) -> KeptAnswer {
    KeptAnswer {
        status,
        body: format!("{{\"data\":{{\"status\":{status}}}}}"),
    }
}

/// The records of `series` of `tenant`, `(id, body)` newest first.
async fn records(s: &Stores, tenant: &str, series: &str) -> Vec<(String, Value)> {
    let f = Filter::all();
    s.series
        .scan(&query(tenant, series, None, 0, i64::MAX, &f, 100))
        .await
        .expect("scan")
        .records
        .into_iter()
        .map(|r| (r.id, r.body))
        .collect()
}

async fn a_commit_writes_its_changes_and_its_log_entry_together(s: Stores) {
    let log = WriteLogEntry {
        body: json!({"note": "x".repeat(40)}),
        body_length: Some(9000),
        body_sha256: Some("ab".repeat(32)),
        ..entry(ACME, "r1")
    };
    let t = day0() + 1000;
    s.writes
        .commit(
            log.clone(),
            vec![
                put("42", json!({"status": "acknowledged"}), Expect::Absent),
                Change::Append {
                    series: "actions".into(),
                    record: record("m1", t, "a1", json!({"action": "ping"})),
                },
            ],
        )
        .await
        .expect("commit");
    let doc = s.docs.get(ACME, "incidents", "42").await.expect("get");
    assert_eq!(
        doc.map(|d| (d.version, d.body)),
        Some((1, json!({"status": "acknowledged"})))
    );
    assert_eq!(
        records(&s, ACME, "actions").await,
        [("a1".to_owned(), json!({"action": "ping"}))]
    );
    assert_eq!(
        s.writes.entries(ACME).await.expect("log"),
        std::slice::from_ref(&log)
    );
    // A write that changes nothing but the log.
    let alone = entry(ACME, "r2");
    s.writes
        .commit(alone.clone(), vec![])
        .await
        .expect("commit");
    assert_eq!(s.writes.entries(ACME).await.expect("log"), [log, alone]);
}

async fn a_commit_whose_condition_fails_writes_no_change_and_no_entry(s: Stores) {
    s.writes
        .commit(
            entry(ACME, "r1"),
            vec![put("42", json!({"n": 1}), Expect::Absent)],
        )
        .await
        .expect("commit");
    let before = s.writes.entries(ACME).await.expect("log");
    let t = day0() + 1000;
    for failing in [
        put("42", json!({"n": 2}), Expect::Absent),
        put("42", json!({"n": 2}), Expect::Version(7)),
        put("missing", json!({"n": 2}), Expect::Version(1)),
    ] {
        let failed = s
            .writes
            .commit(
                entry(ACME, "r-failed"),
                vec![
                    put("43", json!({"n": 1}), Expect::Absent),
                    Change::Append {
                        series: "actions".into(),
                        record: record("m1", t, "a1", json!({})),
                    },
                    put("44", json!({"n": 1}), Expect::Any),
                    failing.clone(),
                ],
            )
            .await;
        assert!(
            matches!(failed, Err(StoreError::ConditionFailed)),
            "{failing:?}: {failed:?}"
        );
    }
    for key in ["43", "44", "missing"] {
        let doc = s.docs.get(ACME, "incidents", key).await.expect("get");
        assert_eq!(doc, None, "{key} was not written");
    }
    let doc = s.docs.get(ACME, "incidents", "42").await.expect("get");
    assert_eq!(doc.map(|d| (d.version, d.body)), Some((1, json!({"n": 1}))));
    assert!(records(&s, ACME, "actions").await.is_empty());
    assert_eq!(s.writes.entries(ACME).await.expect("log"), before);
}

async fn the_changes_of_commits_raise_a_documents_version_by_one(s: Stores) {
    let version = |s: Stores| async move {
        s.docs
            .get(ACME, "incidents", "1")
            .await
            .expect("get")
            .map(|d| d.version)
    };
    s.writes
        .commit(
            entry(ACME, "r1"),
            vec![put("1", json!({"n": 1}), Expect::Absent)],
        )
        .await
        .expect("absent");
    assert_eq!(version(s.clone()).await, Some(1));
    s.writes
        .commit(
            entry(ACME, "r2"),
            vec![put("1", json!({"n": 2}), Expect::Version(1))],
        )
        .await
        .expect("at 1");
    assert_eq!(version(s.clone()).await, Some(2));
    s.writes
        .commit(
            entry(ACME, "r3"),
            vec![put("1", json!({"n": 3}), Expect::Any)],
        )
        .await
        .expect("any");
    assert_eq!(version(s.clone()).await, Some(3));
    // After a producer's unconditional put, a change at the version it left.
    s.docs
        .put(ACME, "incidents", vec![("1".into(), json!({"n": 4}))])
        .await
        .expect("put");
    let v = version(s.clone()).await.expect("version");
    s.writes
        .commit(
            entry(ACME, "r4"),
            vec![put("1", json!({"n": 5}), Expect::Version(v))],
        )
        .await
        .expect("at the producer's version");
    assert_eq!(version(s.clone()).await, Some(v + 1));
    assert_eq!(s.writes.entries(ACME).await.expect("log").len(), 4);
}

/// A refusal over the rate limit of the window starting at `since`, `ms` after it.
fn refusal(tenant: &str, since: chrono::DateTime<Utc>, ms: i64) -> WriteLogEntry {
    WriteLogEntry {
        at: after(since, ms),
        request_id: format!("r{ms}"),
        status: 429,
        body: Value::Null,
        client: Some("203.0.113.7".into()),
        expires_at: since.timestamp() + 86_400 + ms,
        ..entry(tenant, "")
    }
}

async fn refusals_coalesce_into_one_counted_entry_per_key(s: Stores) {
    let since = Utc::now() - chrono::Duration::seconds(30);
    for ms in [10, 20, 30, 40, 50] {
        s.writes
            .coalesce(since, "tok|w1|429", refusal(ACME, since, ms))
            .await
            .expect("coalesce");
    }
    s.writes
        .coalesce(since, "tok|w1|401", refusal(ACME, since, 60))
        .await
        .expect("coalesce");
    let log = s.writes.entries(ACME).await.expect("log");
    assert_eq!(
        log,
        [
            WriteLogEntry {
                count: Some(5),
                last_at: Some(after(since, 50)),
                expires_at: since.timestamp() + 86_400 + 50,
                ..refusal(ACME, since, 10)
            },
            WriteLogEntry {
                count: Some(1),
                last_at: Some(after(since, 60)),
                ..refusal(ACME, since, 60)
            },
        ],
        "the first refusal's entry, its count, the last one's time and expiry"
    );
}

async fn the_log_lists_a_tenants_entries_oldest_first_without_the_expired(s: Stores) {
    let now = Utc::now();
    let at = |ms: i64, expires_at: i64, id: &str| WriteLogEntry {
        at: after(now, ms),
        expires_at,
        ..entry(ACME, id)
    };
    let t = now.timestamp();
    // Committed out of the order of their times (a write that took longer to commit).
    let kept = [
        at(-3000, t + 60, "a"),
        at(-2000, t + 60, "b"),
        at(-1000, t + 60, "c"),
    ];
    for e in [&kept[1], &kept[0]] {
        s.writes.commit(e.clone(), vec![]).await.expect("commit");
    }
    s.writes
        .commit(at(-2500, t - 1, "expired"), vec![])
        .await
        .expect("commit");
    s.writes
        .commit(kept[2].clone(), vec![])
        .await
        .expect("commit");
    let since = now - chrono::Duration::seconds(60);
    s.writes
        .coalesce(
            since,
            "tok|w|429",
            WriteLogEntry {
                expires_at: t - 1,
                ..refusal(ACME, since, 5)
            },
        )
        .await
        .expect("coalesce");
    let got: Vec<String> = s
        .writes
        .entries(ACME)
        .await
        .expect("log")
        .into_iter()
        .map(|e| e.request_id)
        .collect();
    assert_eq!(got, ["a", "b", "c"], "by their time, the expired left out");
}

async fn a_coalesced_entry_takes_its_place_by_its_first_refusal(s: Stores) {
    // A window of refusals that started before an accepted write: the entry standing for
    // them dates from its first refusal, after that write.
    let since = Utc::now() - chrono::Duration::seconds(50);
    let accepted = WriteLogEntry {
        at: after(since, 10_000),
        ..entry(ACME, "accepted")
    };
    s.writes.commit(accepted, vec![]).await.expect("commit");
    for ms in [20_000, 30_000] {
        s.writes
            .coalesce(since, "tok|w|429", refusal(ACME, since, ms))
            .await
            .expect("coalesce");
    }
    let later = WriteLogEntry {
        at: after(since, 40_000),
        ..entry(ACME, "later")
    };
    s.writes.commit(later, vec![]).await.expect("commit");
    let got: Vec<(String, Option<u64>)> = s
        .writes
        .entries(ACME)
        .await
        .expect("log")
        .into_iter()
        .map(|e| (e.request_id, e.count))
        .collect();
    assert_eq!(
        got,
        [
            ("accepted".to_owned(), None),
            ("r20000".to_owned(), Some(2)),
            ("later".to_owned(), None)
        ]
    );
}

async fn an_idempotency_key_is_taken_once_and_held_for_later_requests(s: Stores) {
    let t = Utc::now().timestamp();
    let first = claim("k1", "c1", t);
    assert_eq!(s.writes.claim_key(ACME, &first).await.expect("claim"), None);
    let held = HeldKey {
        fingerprint: "fp-k1".into(),
        answer: None,
    };
    for retry in [claim("k1", "c2", t + 1), claim("k1", "c1", t + 2)] {
        let got = s.writes.claim_key(ACME, &retry).await.expect("claim");
        assert_eq!(got.as_ref(), Some(&held), "in flight");
    }
    assert_eq!(
        s.writes
            .claim_key(ACME, &claim("k2", "c3", t))
            .await
            .expect("claim"),
        None,
        "another key"
    );
}

async fn an_answer_kept_with_its_commit_is_given_to_every_later_claim(s: Stores) {
    let t = Utc::now().timestamp();
    let first = claim("k1", "c1", t);
    assert_eq!(s.writes.claim_key(ACME, &first).await.expect("claim"), None);
    s.writes
        .commit(
            entry(ACME, "r1"),
            vec![
                put("9", json!({"acked": true}), Expect::Absent),
                remember(&first, 200),
            ],
        )
        .await
        .expect("commit");
    for (i, at) in [t + 1, t + 3600, t + 86_399].into_iter().enumerate() {
        let got = s
            .writes
            .claim_key(ACME, &claim("k1", &format!("r{i}"), at))
            .await
            .expect("claim");
        assert_eq!(
            got,
            Some(HeldKey {
                fingerprint: "fp-k1".into(),
                answer: Some(answer(200)),
            }),
            "at +{}s, answered keys are never abandoned",
            at - t
        );
    }
    // An answer is kept once: a second commit keeping one by the same claim fails whole.
    let again = s
        .writes
        .commit(
            entry(ACME, "r2"),
            vec![put("10", json!({}), Expect::Absent), remember(&first, 409)],
        )
        .await;
    assert!(
        matches!(again, Err(StoreError::ConditionFailed)),
        "{again:?}"
    );
    assert_eq!(
        s.docs.get(ACME, "incidents", "10").await.expect("get"),
        None
    );
    assert_eq!(s.writes.entries(ACME).await.expect("log").len(), 1);
}

async fn a_commit_keeping_an_answer_by_a_claim_no_longer_held_writes_nothing(s: Stores) {
    let t = Utc::now().timestamp() - 1000;
    let first = claim("k1", "c1", t);
    assert_eq!(s.writes.claim_key(ACME, &first).await.expect("claim"), None);
    // Taken over once abandoned, while the first request still runs.
    let second = claim("k1", "c2", t + ABANDONED_AFTER_SECS);
    assert_eq!(
        s.writes.claim_key(ACME, &second).await.expect("claim"),
        None
    );
    let late = s
        .writes
        .commit(
            entry(ACME, "late"),
            vec![
                put("5", json!({"by": "first"}), Expect::Any),
                remember(&first, 200),
            ],
        )
        .await;
    assert!(matches!(late, Err(StoreError::ConditionFailed)), "{late:?}");
    assert_eq!(s.docs.get(ACME, "incidents", "5").await.expect("get"), None);
    assert!(s.writes.entries(ACME).await.expect("log").is_empty());
    s.writes
        .commit(
            entry(ACME, "second"),
            vec![
                put("5", json!({"by": "second"}), Expect::Any),
                remember(&second, 201),
            ],
        )
        .await
        .expect("the holder's commit");
    let got = s
        .writes
        .claim_key(ACME, &claim("k1", "c3", t + ABANDONED_AFTER_SECS + 1))
        .await
        .expect("claim");
    assert_eq!(got.and_then(|h| h.answer), Some(answer(201)));
}

async fn a_key_in_flight_past_the_abandon_time_is_taken_over(s: Stores) {
    let t = Utc::now().timestamp() - 1000;
    assert_eq!(
        s.writes
            .claim_key(ACME, &claim("k", "c1", t))
            .await
            .expect("claim"),
        None
    );
    let before = claim("k", "c2", t + ABANDONED_AFTER_SECS - 1);
    assert!(
        s.writes
            .claim_key(ACME, &before)
            .await
            .expect("claim")
            .is_some(),
        "still in flight"
    );
    let taken = claim("k", "c3", t + ABANDONED_AFTER_SECS);
    assert_eq!(
        s.writes.claim_key(ACME, &taken).await.expect("claim"),
        None,
        "abandoned"
    );
    // Now held by the new claim, from its own time.
    let next = claim("k", "c4", t + ABANDONED_AFTER_SECS + 1);
    assert!(
        s.writes
            .claim_key(ACME, &next)
            .await
            .expect("claim")
            .is_some()
    );
}

async fn an_expired_key_is_taken_over_even_with_its_answer(s: Stores) {
    let t = Utc::now().timestamp() - 1000;
    let first = KeyClaim {
        expires_at: t + 300,
        ..claim("k", "c1", t)
    };
    assert_eq!(s.writes.claim_key(ACME, &first).await.expect("claim"), None);
    s.writes
        .commit(entry(ACME, "r1"), vec![remember(&first, 200)])
        .await
        .expect("commit");
    let before = claim("k", "c2", t + 299);
    let got = s.writes.claim_key(ACME, &before).await.expect("claim");
    assert_eq!(got.and_then(|h| h.answer), Some(answer(200)));
    let after_expiry = KeyClaim {
        fingerprint: "another request".into(),
        ..claim("k", "c3", t + 300)
    };
    assert_eq!(
        s.writes
            .claim_key(ACME, &after_expiry)
            .await
            .expect("claim"),
        None,
        "expired: taken over"
    );
    let got = s
        .writes
        .claim_key(ACME, &claim("k", "c4", t + 301))
        .await
        .expect("claim");
    assert_eq!(
        got,
        Some(HeldKey {
            fingerprint: "another request".into(),
            answer: None
        })
    );
}

async fn a_released_key_is_free_again_unless_answered_or_claimed_since(s: Stores) {
    let t = Utc::now().timestamp();
    let first = claim("k", "c1", t);
    assert_eq!(s.writes.claim_key(ACME, &first).await.expect("claim"), None);
    s.writes
        .release_key(ACME, &first.key, "c1")
        .await
        .expect("release");
    let second = claim("k", "c2", t + 1);
    assert_eq!(
        s.writes.claim_key(ACME, &second).await.expect("claim"),
        None,
        "free again after its release"
    );
    // A release by a claim that no longer holds the key leaves the holder's claim.
    s.writes
        .release_key(ACME, &first.key, "c1")
        .await
        .expect("release");
    let got = s
        .writes
        .claim_key(ACME, &claim("k", "c3", t + 2))
        .await
        .expect("claim");
    assert!(got.is_some(), "still held by the second claim");
    // A key whose answer is kept stays, released or not.
    s.writes
        .commit(entry(ACME, "r2"), vec![remember(&second, 200)])
        .await
        .expect("commit");
    s.writes
        .release_key(ACME, &second.key, "c2")
        .await
        .expect("release");
    let got = s
        .writes
        .claim_key(ACME, &claim("k", "c4", t + 3))
        .await
        .expect("claim");
    assert_eq!(got.and_then(|h| h.answer), Some(answer(200)));
    // Releasing a key never claimed is nothing.
    s.writes
        .release_key(ACME, "0123456789abcdef|never", "c9")
        .await
        .expect("release");
}

async fn write_logs_and_keys_of_one_tenant_are_never_anothers(s: Stores) {
    let t = Utc::now().timestamp();
    s.writes
        .commit(
            entry(ACME, "ours"),
            vec![put("1", json!({}), Expect::Absent)],
        )
        .await
        .expect("commit");
    let since = Utc::now() - chrono::Duration::seconds(10);
    s.writes
        .coalesce(since, "tok|w|429", refusal(ACME, since, 1))
        .await
        .expect("coalesce");
    s.writes
        .coalesce(since, "tok|w|429", refusal(GLOBEX, since, 2))
        .await
        .expect("coalesce");
    let theirs = s.writes.entries(GLOBEX).await.expect("log");
    assert_eq!(theirs.len(), 1);
    assert_eq!(
        (theirs[0].tenant.as_str(), theirs[0].count),
        (GLOBEX, Some(1))
    );
    assert_eq!(s.writes.entries(ACME).await.expect("log").len(), 2);
    // A document one tenant's commit put is absent for the other's conditional change.
    s.writes
        .commit(
            entry(GLOBEX, "theirs"),
            vec![put("1", json!({}), Expect::Absent)],
        )
        .await
        .expect("globex's own document 1");
    // Keys of one tenant are free in another.
    let ours = claim("k", "c1", t);
    assert_eq!(s.writes.claim_key(ACME, &ours).await.expect("claim"), None);
    assert_eq!(
        s.writes
            .claim_key(GLOBEX, &claim("k", "c2", t))
            .await
            .expect("claim"),
        None
    );
    let remembered = s
        .writes
        .commit(entry(GLOBEX, "r"), vec![remember(&ours, 200)])
        .await;
    assert!(
        matches!(remembered, Err(StoreError::ConditionFailed)),
        "acme's claim answers nothing in globex: {remembered:?}"
    );
}
