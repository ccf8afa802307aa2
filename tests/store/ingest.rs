//! The ingestion-log port: a batch recorded once by its batch id (the first record wins, two
//! at once included), read back by id and listed oldest first, expired entries neither read
//! nor in the way, each tenant's log its own.

use chrono::{Duration, Utc};
use netops_shared::store::{IngestEntry, LineRefusal, Stores};

use crate::data::{ACME, GLOBEX, after};

conformance! {
    [sqlite, dynamodb] [
        a_batch_is_recorded_once_and_the_first_entry_answers_later_ones,
        two_records_of_one_batch_at_once_keep_one_entry,
        the_log_lists_a_tenants_batches_oldest_first_without_the_expired,
        an_expired_batch_id_is_free_again,
        ingestion_logs_of_one_tenant_are_never_anothers,
    ]
}

pub(crate) fn entry(tenant: &str, batch: &str, accepted: u64) -> IngestEntry {
    let at = Utc::now();
    IngestEntry {
        tenant: tenant.into(),
        batch_id: format!("firewall-syslog/key/{batch}"),
        kind: "firewall-syslog".into(),
        token_name: "shipper".into(),
        request_id: format!("req-{batch}-{accepted}"),
        at,
        accepted,
        refused: 1,
        refusals: vec![LineRefusal {
            line: 2,
            error: "unreadable_line".into(),
            message_fr: "ligne non reconnue : format inconnu".into(),
            message_en: "line not recognised: unknown format".into(),
        }],
        expires_at: at.timestamp() + 86_400,
    }
}

async fn a_batch_is_recorded_once_and_the_first_entry_answers_later_ones(s: Stores) {
    let first = entry(ACME, "b1", 10);
    assert_eq!(
        s.ingest.batch(ACME, &first.batch_id).await.expect("read"),
        None
    );
    assert_eq!(s.ingest.record(first.clone()).await.expect("record"), None);
    let again = entry(ACME, "b1", 99);
    let held = s.ingest.record(again).await.expect("record again");
    assert_eq!(held, Some(first.clone()));
    assert_eq!(
        s.ingest.batch(ACME, &first.batch_id).await.expect("read"),
        Some(first.clone())
    );
    assert_eq!(s.ingest.ingested(ACME).await.expect("log"), vec![first]);
}

async fn two_records_of_one_batch_at_once_keep_one_entry(s: Stores) {
    let (a, b) = (entry(ACME, "b2", 1), entry(ACME, "b2", 2));
    let (ra, rb) = tokio::join!(s.ingest.record(a.clone()), s.ingest.record(b.clone()));
    let (ra, rb) = (ra.expect("a"), rb.expect("b"));
    // One was recorded, the other answered with it.
    let kept = match (ra, rb) {
        (None, Some(held)) => {
            assert_eq!(held, a);
            a
        }
        (Some(held), None) => {
            assert_eq!(held, b);
            b
        }
        other => panic!("{other:?}"),
    };
    assert_eq!(s.ingest.ingested(ACME).await.expect("log"), vec![kept]);
}

async fn the_log_lists_a_tenants_batches_oldest_first_without_the_expired(s: Stores) {
    let now = Utc::now();
    let mut late = entry(ACME, "late", 1);
    late.at = after(now, 2_000);
    let mut early = entry(ACME, "early", 2);
    early.at = now - Duration::seconds(10);
    let mut gone = entry(ACME, "gone", 3);
    gone.at = now - Duration::seconds(20);
    gone.expires_at = now.timestamp() - 1;
    for e in [&late, &gone, &early] {
        assert_eq!(s.ingest.record(e.clone()).await.expect("record"), None);
    }
    assert_eq!(
        s.ingest.ingested(ACME).await.expect("log"),
        vec![early, late]
    );
    assert_eq!(
        s.ingest.batch(ACME, &gone.batch_id).await.expect("read"),
        None
    );
}

async fn an_expired_batch_id_is_free_again(s: Stores) {
    let mut old = entry(ACME, "b3", 1);
    old.expires_at = Utc::now().timestamp() - 1;
    assert_eq!(s.ingest.record(old).await.expect("record"), None);
    let new = entry(ACME, "b3", 2);
    assert_eq!(s.ingest.record(new.clone()).await.expect("record"), None);
    assert_eq!(
        s.ingest.batch(ACME, &new.batch_id).await.expect("read"),
        Some(new)
    );
}

async fn ingestion_logs_of_one_tenant_are_never_anothers(s: Stores) {
    let acme = entry(ACME, "same", 1);
    let globex = entry(GLOBEX, "same", 2);
    assert_eq!(s.ingest.record(acme.clone()).await.expect("acme"), None);
    assert_eq!(s.ingest.record(globex.clone()).await.expect("globex"), None);
    assert_eq!(s.ingest.ingested(ACME).await.expect("log"), vec![acme]);
    assert_eq!(s.ingest.ingested(GLOBEX).await.expect("log"), vec![globex]);
    // A new seed of a tenant clears its ingestion log with its data.
    s.deployment.clear_tenant(ACME).await.expect("clear");
    assert!(s.ingest.ingested(ACME).await.expect("log").is_empty());
    assert_eq!(s.ingest.ingested(GLOBEX).await.expect("log").len(), 1);
}
