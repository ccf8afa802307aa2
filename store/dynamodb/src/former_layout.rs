//! The former layout of series (one item per record, before packs) stays readable beside
//! packs until the retention deletes it, over a DynamoDB-protocol server (moto, skipped
//! without one as [`super::read_costs`]): records written as the adapter wrote them before
//! are read through the port with those written since, paged, by partition, replaced.

use std::collections::HashMap;

use serde_json::json;

use super::DynamoStore;
use super::item::{Item, bucket_pk, day_of, extent_pk, item_sk, n, partition_pk, record_sk, s};
use super::read_costs::store;
use netops_store::{Filter, Position, Record, SeriesQuery, SeriesRead, SeriesWrite};

const DAY: i64 = 86_400_000;
/// Midnight UTC of 2026-01-01.
const START: i64 = 1_767_225_600_000;

/// A record's item as the adapter wrote it before packs.
fn former_item(store: &DynamoStore, tenant: &str, series: &str, r: &Record) -> Item {
    let sk = item_sk(r.ts, &r.id, &r.partition);
    HashMap::from([
        ("pk".to_owned(), s(bucket_pk(tenant, series, day_of(r.ts)))),
        ("sk".to_owned(), s(sk.clone())),
        (
            "gp".to_owned(),
            s(partition_pk(tenant, series, &r.partition)),
        ),
        ("gs".to_owned(), s(sk)),
        ("p".to_owned(), s(r.partition.clone())),
        ("ts".to_owned(), n(r.ts)),
        ("id".to_owned(), s(r.id.clone())),
        ("b".to_owned(), s(r.body.to_string())),
        (
            "ttl".to_owned(),
            n(r.ts.div_euclid(1000) + store.retention_secs),
        ),
    ])
}

/// Writes `records` in the former layout, with the extent item as it was then (no `ol`).
async fn write_former(store: &DynamoStore, tenant: &str, series: &str, records: &[Record]) {
    let days = records.iter().map(|r| day_of(r.ts));
    let (lo, hi) = (
        days.clone().min().expect("records"),
        days.max().expect("records"),
    );
    store
        .client
        .put_item()
        .table_name(store.data.as_ref())
        .item("pk", s(extent_pk(tenant, series)))
        .item("sk", s("extent"))
        .item("lo", n(lo))
        .item("hi", n(hi))
        .send()
        .await
        .expect("extent");
    let mut requests = Vec::new();
    for r in records {
        let item = former_item(store, tenant, series, r);
        requests.push(DynamoStore::put_request(item).expect("request"));
    }
    store
        .batch_write(&store.data, requests)
        .await
        .expect("write");
}

fn record(partition: &str, ts: i64, id: &str, v: i64) -> Record {
    Record {
        partition: partition.into(),
        ts,
        id: id.into(),
        body: json!({"v": v}),
    }
}

/// Every record of a read, page after page of `limit`.
async fn walk(store: &DynamoStore, partition: Option<&str>, limit: usize) -> Vec<Record> {
    let filter = Filter::all();
    let (mut all, mut after) = (Vec::new(), None::<Position>);
    loop {
        let page = store
            .scan(&SeriesQuery {
                tenant: "t",
                series: "flows",
                partition,
                from: 0,
                to: i64::MAX,
                filter: &filter,
                after: after.as_ref(),
                limit,
            })
            .await
            .expect("scan");
        assert!(page.records.len() <= limit);
        all.extend(page.records);
        match page.next {
            Some(next) => after = Some(next),
            None => return all,
        }
    }
}

#[tokio::test]
async fn records_of_the_former_layout_are_read_with_packs_until_they_expire() {
    let Some((store, _)) = store().await else {
        return;
    };
    // Three days written before packs, every 7 minutes on two machines; then the third day
    // and a fourth written in packs, one record of the third day sent again with a new body.
    let former: Vec<Record> = (0..3 * 24 * 60 / 7)
        .map(|i| {
            record(
                &format!("m{}", i % 2),
                START + i * 7 * 60_000,
                &format!("o{i:04}"),
                i,
            )
        })
        .collect();
    write_former(&store, "t", "flows", &former).await;
    // Read as the adapter read it before packs.
    let before = walk(&store, None, 1000).await;
    assert_eq!(before.len(), former.len());
    let packed: Vec<Record> = (0..2 * 24 * 60 / 5)
        .map(|i| {
            record(
                &format!("m{}", i % 2),
                START + 2 * DAY + i * 5 * 60_000 + 13,
                &format!("n{i:04}"),
                -i,
            )
        })
        .collect();
    let resent = record(
        &former[500].partition,
        former[500].ts,
        &former[500].id,
        7777,
    );
    let mut appended = packed.clone();
    appended.push(resent.clone());
    store.append("t", "flows", appended).await.expect("append");
    let mut want: Vec<Record> = former.iter().cloned().chain(packed).collect();
    want[500] = resent;
    want.sort_by(|a, b| (b.ts, &b.id).cmp(&(a.ts, &a.id)));
    for limit in [37, 5000] {
        assert!(walk(&store, None, limit).await == want, "limit {limit}");
        for m in ["m0", "m1"] {
            let mine: Vec<Record> = want.iter().filter(|r| r.partition == m).cloned().collect();
            assert!(
                walk(&store, Some(m), limit).await == mine,
                "{m} limit {limit}"
            );
        }
    }
    // A position taken in the former layout resumes as before.
    let pos = Position {
        ts: former[100].ts,
        id: former[100].id.clone(),
    };
    let filter = Filter::all();
    let page = store
        .scan(&SeriesQuery {
            tenant: "t",
            series: "flows",
            partition: None,
            from: 0,
            to: i64::MAX,
            filter: &filter,
            after: Some(&pos),
            limit: 3,
        })
        .await
        .expect("scan");
    assert_eq!(
        page.records,
        [former[99].clone(), former[98].clone(), former[97].clone()]
    );
    // The extent says which days may hold the former layout: up to the third, the last
    // written before packs; none for a series first written in packs.
    let extent = store
        .extent("t", "flows")
        .await
        .expect("extent")
        .expect("some");
    assert_eq!(extent.old, Some(day_of(START + 2 * DAY)));
    store
        .append("t", "fresh", vec![record("m0", START, "a", 1)])
        .await
        .expect("append");
    let fresh = store
        .extent("t", "fresh")
        .await
        .expect("extent")
        .expect("some");
    assert_eq!(fresh.old, Some(-1));
    // The sort key of a position is still the former one's prefix (the cursor's form).
    assert!(item_sk(5, "a", "m0").starts_with(&record_sk(5, "a")));
}
