//! The tokens port: tokens stored by the hash of their secret, one active token per tenant
//! and name, revoked by name, listed per tenant oldest first.

use netops_shared::scope::Scope;
use netops_shared::store::{LAST_USED_EVERY_SECS, StoreError, Stores, TokenRecord};

use crate::adapters::Subject;
use crate::data::{ACME, GLOBEX, new_token, rotated};

conformance! {
    [sqlite, dynamodb] [
        an_inserted_token_is_found_by_the_hash_of_its_secret_as_it_was_stored,
        a_second_active_token_of_one_name_is_refused_as_existing,
        the_name_of_a_revoked_or_expired_token_can_be_given_again,
        revoking_marks_the_active_token_of_the_name_and_only_it,
        a_tenants_tokens_are_listed_oldest_first_with_ties_by_name,
        tokens_of_one_tenant_are_never_listed_or_revoked_for_another,
        a_token_inserted_through_one_instance_is_found_through_another,
        rotating_gives_the_name_a_new_secret_and_ends_the_old_at_the_overlap,
        an_overlap_never_extends_the_old_token,
        a_rotation_from_a_token_no_longer_active_writes_nothing,
        revoking_a_rotated_name_ends_the_old_secret_too,
        a_tokens_use_is_recorded_at_most_once_per_span,
    ]
}

/// A token of `tenant` named `name`, created at `at` (s) for a day.
fn token(tenant: &str, name: &str, at: i64) -> TokenRecord {
    TokenRecord {
        hash: format!("{:064x}", rand::random::<u128>()),
        tenant: tenant.into(),
        name: name.into(),
        scopes: vec![Scope::ReadMachines, Scope::WriteAlerts],
        created_at: at,
        expires_at: at + 86_400,
        revoked_at: None,
        last_used_at: None,
    }
}

fn now() -> i64 {
    chrono::Utc::now().timestamp()
}

async fn an_inserted_token_is_found_by_the_hash_of_its_secret_as_it_was_stored(s: Stores) {
    let t = now();
    let full = TokenRecord {
        scopes: Scope::ALL.to_vec(),
        ..token(ACME, "ci", t)
    };
    let none = TokenRecord {
        scopes: vec![],
        ..token(ACME, "no-scope", t)
    };
    for record in [&full, &none] {
        s.tokens.insert(record).await.expect("insert");
        let found = s.tokens.by_hash(&record.hash).await.expect("lookup");
        assert_eq!(found.as_ref(), Some(record));
    }
    let unknown = format!("{:064x}", 7);
    assert_eq!(s.tokens.by_hash(&unknown).await.expect("lookup"), None);
}

async fn a_second_active_token_of_one_name_is_refused_as_existing(s: Stores) {
    let t = now();
    let first = token(ACME, "ci", t);
    s.tokens.insert(&first).await.expect("insert");
    let second = token(ACME, "ci", t + 10);
    let refused = s.tokens.insert(&second).await;
    assert!(matches!(refused, Err(StoreError::Exists)), "{refused:?}");
    assert_eq!(s.tokens.by_hash(&second.hash).await.expect("lookup"), None);
    assert_eq!(s.tokens.list(ACME).await.expect("list"), [first]);
    // The same name in another tenant is another token.
    s.tokens
        .insert(&token(GLOBEX, "ci", t))
        .await
        .expect("another tenant");
}

async fn the_name_of_a_revoked_or_expired_token_can_be_given_again(s: Stores) {
    let t = now();
    let first = token(ACME, "ci", t - 1000);
    s.tokens.insert(&first).await.expect("insert");
    assert!(s.tokens.revoke(ACME, "ci", t - 500).await.expect("revoke"));
    let second = token(ACME, "ci", t);
    s.tokens.insert(&second).await.expect("after a revocation");
    // A token that expired is no longer active either.
    let expired = TokenRecord {
        expires_at: t - 10,
        ..token(ACME, "short", t - 100)
    };
    s.tokens.insert(&expired).await.expect("insert");
    let renewed = token(ACME, "short", t);
    s.tokens.insert(&renewed).await.expect("after its expiry");
    let names: Vec<(String, Option<i64>)> = s
        .tokens
        .list(ACME)
        .await
        .expect("list")
        .into_iter()
        .map(|r| (r.hash, r.revoked_at))
        .collect();
    assert_eq!(
        names,
        [
            (first.hash, Some(t - 500)),
            (expired.hash, None),
            (second.hash, None),
            (renewed.hash, None)
        ]
    );
}

async fn revoking_marks_the_active_token_of_the_name_and_only_it(s: Stores) {
    let t = now();
    let ci = token(ACME, "ci", t);
    let other = token(ACME, "backup", t);
    s.tokens.insert(&ci).await.expect("insert");
    s.tokens.insert(&other).await.expect("insert");
    // Looked up once (a store may keep what it read), then revoked.
    assert_eq!(
        s.tokens.by_hash(&ci.hash).await.expect("lookup"),
        Some(ci.clone())
    );
    assert!(s.tokens.revoke(ACME, "ci", t + 5).await.expect("revoke"));
    let revoked = s.tokens.by_hash(&ci.hash).await.expect("lookup");
    assert_eq!(
        revoked,
        Some(TokenRecord {
            revoked_at: Some(t + 5),
            ..ci.clone()
        }),
        "still found, revoked"
    );
    assert!(
        !s.tokens.revoke(ACME, "ci", t + 6).await.expect("again"),
        "none active"
    );
    assert!(!s.tokens.revoke(ACME, "unknown", t).await.expect("unknown"));
    let kept = s.tokens.by_hash(&other.hash).await.expect("lookup");
    assert_eq!(kept, Some(other));
    let still = s.tokens.by_hash(&ci.hash).await.expect("lookup");
    assert_eq!(
        still.and_then(|r| r.revoked_at),
        Some(t + 5),
        "the first revocation stays"
    );
}

async fn a_tenants_tokens_are_listed_oldest_first_with_ties_by_name(s: Stores) {
    let t = now();
    let tokens = [
        token(ACME, "zeta", t - 100),
        token(ACME, "beta", t),
        token(ACME, "alpha", t),
        token(ACME, "old", t - 200),
    ];
    for r in &tokens {
        s.tokens.insert(r).await.expect("insert");
    }
    s.tokens.revoke(ACME, "zeta", t).await.expect("revoke");
    let listed: Vec<String> = s
        .tokens
        .list(ACME)
        .await
        .expect("list")
        .into_iter()
        .map(|r| r.name)
        .collect();
    assert_eq!(
        listed,
        ["old", "zeta", "alpha", "beta"],
        "revoked ones included"
    );
    assert!(s.tokens.list("initech").await.expect("list").is_empty());
}

async fn tokens_of_one_tenant_are_never_listed_or_revoked_for_another(s: Stores) {
    let t = now();
    let ours = token(ACME, "ci", t);
    let theirs = token(GLOBEX, "ci", t);
    s.tokens.insert(&ours).await.expect("insert");
    s.tokens.insert(&theirs).await.expect("insert");
    assert_eq!(
        s.tokens.list(GLOBEX).await.expect("list"),
        std::slice::from_ref(&theirs)
    );
    assert!(s.tokens.revoke(GLOBEX, "ci", t + 1).await.expect("revoke"));
    let still = s.tokens.by_hash(&ours.hash).await.expect("lookup");
    assert_eq!(
        still,
        Some(ours),
        "acme's token of that name is not revoked"
    );
    assert!(!s.tokens.revoke(GLOBEX, "ci", t + 2).await.expect("revoke"));
}

async fn a_token_inserted_through_one_instance_is_found_through_another(subject: Subject) {
    let t = now();
    let record = token(ACME, "ci", t);
    subject
        .stores()
        .tokens
        .insert(&record)
        .await
        .expect("insert");
    let other = subject.again().await;
    let found = other.tokens.by_hash(&record.hash).await.expect("lookup");
    assert_eq!(found, Some(record.clone()));
    assert_eq!(other.tokens.list(ACME).await.expect("list"), [record]);
    let refused = other.tokens.insert(&token(ACME, "ci", t + 1)).await;
    assert!(matches!(refused, Err(StoreError::Exists)), "{refused:?}");
}

async fn rotating_gives_the_name_a_new_secret_and_ends_the_old_at_the_overlap(subject: Subject) {
    let s = subject.stores();
    let create = |tenant: &'static str| {
        netops_shared::auth::create_token(
            s.tokens.as_ref(),
            tenant,
            "ci",
            vec![Scope::ReadMachines],
            chrono::Duration::days(1),
        )
    };
    let (_, old) = create(ACME).await.expect("token");
    let (_, theirs) = create(GLOBEX).await.expect("token");
    // Looked up before (a store may keep what it read).
    assert!(s.tokens.by_hash(&old.hash).await.expect("lookup").is_some());
    let (secret, new) = rotated(s, ACME, "ci", chrono::Duration::hours(1)).await;
    assert_eq!(new.hash, netops_shared::auth::hash_token(&secret));
    assert_ne!(new.hash, old.hash);
    assert_eq!(
        (new.name.as_str(), new.scopes.as_slice()),
        ("ci", old.scopes.as_slice())
    );
    assert_eq!(new.expires_at - new.created_at, 86_400, "the same lifetime");
    let cut = TokenRecord {
        expires_at: new.created_at + 3_600,
        ..old.clone()
    };
    for stores in [s.clone(), subject.again().await] {
        assert_eq!(
            stores.tokens.by_hash(&old.hash).await.expect("old"),
            Some(cut.clone())
        );
        assert_eq!(
            stores.tokens.by_hash(&new.hash).await.expect("new"),
            Some(new.clone())
        );
    }
    // Created in the same second, ordered by name, so compared in the order of their hashes.
    let by_hash = |mut v: Vec<TokenRecord>| {
        v.sort_by(|a, b| a.hash.cmp(&b.hash));
        v
    };
    assert_eq!(
        by_hash(s.tokens.list(ACME).await.expect("list")),
        by_hash(vec![cut.clone(), new.clone()])
    );
    assert_eq!(
        s.tokens.list(GLOBEX).await.expect("list"),
        [theirs],
        "another tenant's untouched"
    );
    // The new one is the name's active token: another of the name is refused.
    let refused = s.tokens.insert(&token(ACME, "ci", now())).await;
    assert!(matches!(refused, Err(StoreError::Exists)), "{refused:?}");
    // Rotated again, the newest is rotated; the first keeps its cut.
    let (_, newer) = rotated(s, ACME, "ci", chrono::Duration::minutes(5)).await;
    let listed = by_hash(s.tokens.list(ACME).await.expect("list"));
    let ends: Vec<(String, i64)> = listed.into_iter().map(|t| (t.hash, t.expires_at)).collect();
    let mut want = vec![
        (old.hash, cut.expires_at),
        (new.hash, newer.created_at + 300),
        (newer.hash, newer.expires_at),
    ];
    want.sort();
    assert_eq!(ends, want);
}

async fn an_overlap_never_extends_the_old_token(s: Stores) {
    let t = now();
    let old = TokenRecord {
        expires_at: t + 600,
        ..token(ACME, "ci", t - 100)
    };
    s.tokens.insert(&old).await.expect("insert");
    let new = token(ACME, "ci", t);
    assert!(
        s.tokens
            .rotate(&old, &new, t + 3_600)
            .await
            .expect("rotate")
    );
    let found = s.tokens.by_hash(&old.hash).await.expect("lookup");
    assert_eq!(found.map(|r| r.expires_at), Some(t + 600));
}

async fn a_rotation_from_a_token_no_longer_active_writes_nothing(s: Stores) {
    let t = now();
    let old = token(ACME, "ci", t - 100);
    s.tokens.insert(&old).await.expect("insert");
    let new = token(ACME, "ci", t);
    assert!(s.tokens.rotate(&old, &new, t + 60).await.expect("rotate"));
    // `old` was rotated already: rotating from it again is refused.
    let late = token(ACME, "ci", t + 1);
    assert!(!s.tokens.rotate(&old, &late, t + 60).await.expect("stale"));
    assert_eq!(s.tokens.by_hash(&late.hash).await.expect("lookup"), None);
    // A revoked one neither.
    assert!(s.tokens.revoke(ACME, "ci", t + 2).await.expect("revoke"));
    let revoked = s
        .tokens
        .by_hash(&new.hash)
        .await
        .expect("lookup")
        .expect("kept");
    assert!(
        !s.tokens
            .rotate(&revoked, &late, t + 60)
            .await
            .expect("revoked")
    );
    assert_eq!(s.tokens.by_hash(&late.hash).await.expect("lookup"), None);
    let none = netops_shared::auth::rotate_token(
        s.tokens.as_ref(),
        ACME,
        "ci",
        chrono::Duration::hours(1),
    )
    .await
    .expect("rotate");
    assert!(none.is_none(), "no active token of the name");
    assert_eq!(s.tokens.list(ACME).await.expect("list").len(), 2);
}

async fn revoking_a_rotated_name_ends_the_old_secret_too(s: Stores) {
    let old = new_token(&s, ACME, "ci").await;
    let (_, new) = rotated(&s, ACME, "ci", chrono::Duration::hours(1)).await;
    assert!(s.tokens.by_hash(&old.hash).await.expect("lookup").is_some());
    let t = now();
    assert!(s.tokens.revoke(ACME, "ci", t).await.expect("revoke"));
    for hash in [&old.hash, &new.hash] {
        let found = s.tokens.by_hash(hash).await.expect("lookup");
        assert_eq!(found.and_then(|r| r.revoked_at), Some(t), "both revoked");
    }
}

async fn a_tokens_use_is_recorded_at_most_once_per_span(s: Stores) {
    let t = now();
    let ci = token(ACME, "ci", t);
    s.tokens.insert(&ci).await.expect("insert");
    let used = |s: Stores| async move { s.tokens.list(ACME).await.expect("list")[0].last_used_at };
    assert_eq!(used(s.clone()).await, None, "never used");
    assert!(s.tokens.touch(&ci.hash, t).await.expect("touch"));
    assert_eq!(used(s.clone()).await, Some(t));
    // A burst within the span writes nothing more.
    let mut written = 0;
    for i in 1..100 {
        written += usize::from(
            s.tokens
                .touch(&ci.hash, t + i % LAST_USED_EVERY_SECS)
                .await
                .expect("touch"),
        );
    }
    assert_eq!(written, 0);
    assert_eq!(used(s.clone()).await, Some(t));
    assert!(
        s.tokens
            .touch(&ci.hash, t + LAST_USED_EVERY_SECS)
            .await
            .expect("touch")
    );
    assert_eq!(used(s.clone()).await, Some(t + LAST_USED_EVERY_SECS));
    // An unknown token is not made up.
    let unknown = format!("{:064x}", 7);
    assert!(!s.tokens.touch(&unknown, t).await.expect("touch"));
    assert_eq!(s.tokens.by_hash(&unknown).await.expect("lookup"), None);
    assert!(s.tokens.list(GLOBEX).await.expect("list").is_empty());
}
