//! The series ports: records appended by `(tenant, series, partition)`, read newest first
//! (ties by id, descending) over `[from, to)`, with predicates, a page at a time, each page
//! resuming from the [`Position`] the previous one handed on.

use netops_shared::store::{Filter, Position, Pred, Record, SeriesQuery, Stores};
use serde_json::json;

use crate::data::{ACME, DAY, GLOBEX, HOUR, day0, ids, query, record, walk};

conformance! {
    [sqlite, dynamodb] [
        records_are_read_newest_first_with_ties_by_id_descending,
        a_read_takes_its_window_from_inclusive_to_exclusive,
        a_window_from_the_epoch_to_the_end_of_time_reads_every_record,
        an_empty_or_inverted_window_reads_nothing,
        one_partition_reads_only_its_records,
        paging_from_the_position_resumes_without_repeat_or_skip,
        a_bounded_read_below_its_budget_pages_as_a_plain_one,
        the_last_page_hands_on_no_position,
        a_position_newer_than_the_window_resumes_from_its_top_and_an_older_one_ends_it,
        predicates_select_records_by_their_body,
        a_record_with_the_partition_time_and_id_of_a_stored_one_replaces_it,
        read_all_takes_the_windows_records_newest_first_uncut,
        records_of_one_time_and_id_on_two_partitions_are_two_and_a_page_between_them_skips_the_second,
        records_of_one_tenant_or_series_are_never_read_by_another,
    ]
}

/// Records of three machines over three UTC days, some at the same time. Returned newest
/// first, as every read must give them.
fn events() -> Vec<Record> {
    let d = day0();
    let mut out = Vec::new();
    for i in 0..60i64 {
        // Every 70 minutes from 01:00 of the first day: across three day buckets.
        let ts = d + HOUR + i * 70 * 60_000;
        let machine = format!("m{}", i % 3);
        let level = ["info", "warn", "error"][(i % 3) as usize];
        out.push(record(
            &machine,
            ts,
            &format!("e{i:03}"),
            json!({"i": i, "machine": machine, "level": level, "bytes": i * 100,
                   "msg": format!("Connexion n°{i} établie")}),
        ));
    }
    // Ties: three records at one time on one machine (read by id, descending), and one
    // more at that time on another.
    let tie = d + DAY + 5 * HOUR + 123;
    for id in ["t-b", "t-a", "t-c"] {
        out.push(record("m0", tie, id, json!({"tie": true, "level": "info"})));
    }
    out.push(record(
        "m1",
        tie,
        "t-0",
        json!({"tie": true, "level": "warn"}),
    ));
    out.push(record(
        "m2",
        d + 2 * DAY,
        "midnight",
        json!({"level": "info"}),
    ));
    out.sort_by(|a, b| (b.ts, &b.id, &b.partition).cmp(&(a.ts, &a.id, &a.partition)));
    out
}

async fn appended(s: &Stores) -> Vec<Record> {
    let mut shuffled = events();
    shuffled.reverse();
    shuffled.rotate_left(17);
    s.series_writes
        .append(ACME, "events", shuffled)
        .await
        .expect("append");
    events()
}

/// `(ts, id)` of records: the order reads promise (records of one time and id on two
/// partitions come in either order).
fn times(records: &[Record]) -> Vec<(i64, String)> {
    records.iter().map(|r| (r.ts, r.id.clone())).collect()
}

/// Sorted `(partition, ts, id)`: which records a read returned, whatever their order.
fn which(records: &[Record]) -> Vec<(String, i64, String)> {
    let mut ids = ids(records);
    ids.sort();
    ids
}

async fn records_are_read_newest_first_with_ties_by_id_descending(s: Stores) {
    let all = appended(&s).await;
    let f = Filter::all();
    let page = s
        .series
        .scan(&query(ACME, "events", None, 0, i64::MAX, &f, 1_000))
        .await
        .expect("scan");
    assert_eq!(times(&page.records), times(&all));
    assert_eq!(which(&page.records), which(&all));
    assert!(page.next.is_none());
    for r in &page.records {
        let stored = all
            .iter()
            .find(|a| (&a.partition, a.ts, &a.id) == (&r.partition, r.ts, &r.id))
            .expect("a record appended");
        assert_eq!(r.body, stored.body);
    }
    let tie: Vec<&str> = page
        .records
        .iter()
        .filter(|r| r.body["tie"] == json!(true) && r.partition == "m0")
        .map(|r| r.id.as_str())
        .collect();
    assert_eq!(tie, ["t-c", "t-b", "t-a"]);
}

async fn a_read_takes_its_window_from_inclusive_to_exclusive(s: Stores) {
    let d = day0();
    let at = [d + HOUR - 1, d + HOUR, d + 2 * HOUR - 1, d + 2 * HOUR];
    let records = at
        .iter()
        .map(|&ts| record("m", ts, &format!("{ts}"), json!({})))
        .collect();
    s.series_writes
        .append(ACME, "w", records)
        .await
        .expect("append");
    let f = Filter::all();
    let page = s
        .series
        .scan(&query(ACME, "w", None, d + HOUR, d + 2 * HOUR, &f, 10))
        .await
        .expect("scan");
    let got: Vec<i64> = page.records.iter().map(|r| r.ts).collect();
    assert_eq!(got, [d + 2 * HOUR - 1, d + HOUR]);
    let one = s
        .series
        .scan(&query(ACME, "w", Some("m"), d + HOUR, d + HOUR + 1, &f, 10))
        .await
        .expect("scan");
    assert_eq!(one.records.len(), 1, "a window of one millisecond");
    assert_eq!(one.records[0].ts, d + HOUR);
}

async fn a_window_from_the_epoch_to_the_end_of_time_reads_every_record(s: Stores) {
    let all = appended(&s).await;
    let f = Filter::all();
    for partition in [None, Some("m1")] {
        let page = s
            .series
            .scan(&query(ACME, "events", partition, 0, i64::MAX, &f, 1_000))
            .await
            .expect("scan");
        let want: Vec<Record> = all
            .iter()
            .filter(|r| partition.is_none_or(|p| r.partition == p))
            .cloned()
            .collect();
        assert_eq!(which(&page.records), which(&want), "{partition:?}");
    }
}

async fn an_empty_or_inverted_window_reads_nothing(s: Stores) {
    appended(&s).await;
    let d = day0();
    let f = Filter::all();
    for (from, to) in [(d + DAY, d + DAY), (d + 2 * DAY, d + DAY), (0, 0)] {
        for partition in [None, Some("m0")] {
            let page = s
                .series
                .scan(&query(ACME, "events", partition, from, to, &f, 10))
                .await
                .expect("scan");
            assert!(page.records.is_empty(), "[{from}, {to}) {partition:?}");
            assert!(page.next.is_none());
        }
    }
}

async fn one_partition_reads_only_its_records(s: Stores) {
    let all = appended(&s).await;
    let f = Filter::all();
    for p in ["m0", "m1", "m2"] {
        let page = s
            .series
            .scan(&query(ACME, "events", Some(p), 0, i64::MAX, &f, 1_000))
            .await
            .expect("scan");
        let want: Vec<Record> = all.iter().filter(|r| r.partition == p).cloned().collect();
        assert_eq!(ids(&page.records), ids(&want), "partition {p}");
    }
    let none = s
        .series
        .scan(&query(ACME, "events", Some("m9"), 0, i64::MAX, &f, 10))
        .await
        .expect("scan");
    assert!(none.records.is_empty());
}

async fn paging_from_the_position_resumes_without_repeat_or_skip(s: Stores) {
    let all = appended(&s).await;
    let d = day0();
    let warn = Filter::all().and(Pred::Eq("level", json!("warn")));
    let every = Filter::all();
    let window = (d + 3 * HOUR, d + 2 * DAY + 7 * HOUR);
    for (filter, partition) in [
        (&every, None),
        (&warn, None),
        (&every, Some("m0")),
        (&warn, Some("m1")),
    ] {
        let want: Vec<Record> = all
            .iter()
            .filter(|r| r.ts >= window.0 && r.ts < window.1)
            .filter(|r| partition.is_none_or(|p| r.partition == p))
            .filter(|r| filter.matches(&r.body))
            .cloned()
            .collect();
        assert!(want.len() > 3, "the window holds records to page");
        for limit in [1, 2, 5, 13, want.len(), want.len() + 1] {
            let first = query(ACME, "events", partition, window.0, window.1, filter, limit);
            let walked = walk(&s, first, false).await;
            assert_eq!(
                times(&walked),
                times(&want),
                "pages of {limit}, {partition:?}, {filter:?}"
            );
            assert_eq!(which(&walked), which(&want));
        }
    }
}

async fn a_bounded_read_below_its_budget_pages_as_a_plain_one(s: Stores) {
    let all = appended(&s).await;
    let error = Filter::all().and(Pred::Eq("level", json!("error")));
    for partition in [None, Some("m2")] {
        let want: Vec<Record> = all
            .iter()
            .filter(|r| partition.is_none_or(|p| r.partition == p))
            .filter(|r| error.matches(&r.body))
            .cloned()
            .collect();
        for limit in [1, 4, 100] {
            let first = query(ACME, "events", partition, 0, i64::MAX, &error, limit);
            let walked = walk(&s, first, true).await;
            assert_eq!(ids(&walked), ids(&want), "pages of {limit}, {partition:?}");
        }
    }
}

async fn the_last_page_hands_on_no_position(s: Stores) {
    let all = appended(&s).await;
    let f = Filter::all();
    let n = all.len();
    let exact = s
        .series
        .scan(&query(ACME, "events", None, 0, i64::MAX, &f, n))
        .await
        .expect("scan");
    assert_eq!(exact.records.len(), n);
    assert!(
        exact.next.is_none(),
        "a page holding the last record ends the read"
    );
    let short = s
        .series
        .scan(&query(ACME, "events", None, 0, i64::MAX, &f, n - 1))
        .await
        .expect("scan");
    let last = short.records.last().expect("records");
    assert_eq!(
        short.next,
        Some(Position {
            ts: last.ts,
            id: last.id.clone()
        }),
        "a page with more after it hands on its last record"
    );
}

async fn a_position_newer_than_the_window_resumes_from_its_top_and_an_older_one_ends_it(s: Stores) {
    let all = appended(&s).await;
    let d = day0();
    let f = Filter::all();
    let window = (d + DAY, d + 2 * DAY);
    let in_window: Vec<Record> = all
        .iter()
        .filter(|r| r.ts >= window.0 && r.ts < window.1)
        .cloned()
        .collect();
    for partition in [None, Some("m0")] {
        let want: Vec<(i64, String)> = times(
            &in_window
                .iter()
                .filter(|r| partition.is_none_or(|p| r.partition == p))
                .cloned()
                .collect::<Vec<_>>(),
        );
        let newer = Position {
            ts: window.1 + DAY,
            id: "x".into(),
        };
        let older = Position {
            ts: window.0 - 1,
            id: "x".into(),
        };
        let mut read = Vec::new();
        for after in [newer, older] {
            let page = s
                .series
                .scan(&SeriesQuery {
                    after: Some(&after),
                    ..query(ACME, "events", partition, window.0, window.1, &f, 1_000)
                })
                .await
                .expect("scan");
            read.push(times(&page.records));
        }
        assert_eq!(read[0], want, "newer: {partition:?}");
        assert!(read[1].is_empty(), "older: {partition:?}");
    }
}

async fn predicates_select_records_by_their_body(s: Stores) {
    let all = appended(&s).await;
    let filters = [
        Filter::all().and(Pred::Eq("machine", json!("m1"))),
        Filter::all().and(Pred::In("level", vec![json!("warn"), json!("error")])),
        Filter::all().and(Pred::Ne("level", json!("info"))),
        Filter::all()
            .and(Pred::Gte("bytes", 2500.0))
            .and(Pred::Lte("bytes", 4000.0)),
        Filter::all().and(Pred::Contains(vec!["msg"], "N°4".into())),
        Filter::all().and(Pred::Contains(vec!["msg", "level"], "ÉTABLIE".into())),
        Filter::all().and(Pred::Prefix("msg", "Connexion n°1".into())),
        Filter::all().and(Pred::Eq("tie", json!(true))),
        Filter::all().and(Pred::Eq("level", json!("none"))),
    ];
    for filter in filters {
        let want: Vec<Record> = all
            .iter()
            .filter(|r| filter.matches(&r.body))
            .cloned()
            .collect();
        let page = s
            .series
            .scan(&query(ACME, "events", None, 0, i64::MAX, &filter, 1_000))
            .await
            .expect("scan");
        assert_eq!(which(&page.records), which(&want), "{filter:?}");
        assert_eq!(times(&page.records), times(&want), "{filter:?}");
    }
    // The selective filters above select something: the comparison can fail.
    let m1 = Filter::all().and(Pred::Eq("machine", json!("m1")));
    assert_eq!(all.iter().filter(|r| m1.matches(&r.body)).count(), 20);
}

async fn a_record_with_the_partition_time_and_id_of_a_stored_one_replaces_it(s: Stores) {
    let t = day0() + 10 * HOUR;
    s.series_writes
        .append(
            ACME,
            "s",
            vec![
                record("m0", t, "r1", json!({"v": 1})),
                record("m1", t, "r1", json!({"v": 1})),
            ],
        )
        .await
        .expect("append");
    s.series_writes
        .append(
            ACME,
            "s",
            vec![
                record("m0", t, "r1", json!({"v": 2})),
                record("m0", t, "r2", json!({"v": 9})),
                // Within one append, the last of one record wins.
                record("m0", t, "r2", json!({"v": 3})),
            ],
        )
        .await
        .expect("append");
    let f = Filter::all();
    let page = s
        .series
        .scan(&query(ACME, "s", None, 0, i64::MAX, &f, 10))
        .await
        .expect("scan");
    let mut got: Vec<(String, String, serde_json::Value)> = page
        .records
        .into_iter()
        .map(|r| (r.partition, r.id, r.body))
        .collect();
    got.sort_by(|a, b| (&a.0, &a.1).cmp(&(&b.0, &b.1)));
    assert_eq!(
        got,
        vec![
            ("m0".into(), "r1".into(), json!({"v": 2})),
            ("m0".into(), "r2".into(), json!({"v": 3})),
            ("m1".into(), "r1".into(), json!({"v": 1})),
        ]
    );
}

async fn read_all_takes_the_windows_records_newest_first_uncut(s: Stores) {
    let all = appended(&s).await;
    let d = day0();
    let f = Filter::all();
    let got = s
        .series
        .read_all(ACME, "events", Some("m2"), d, d + 2 * DAY, &f)
        .await
        .expect("read");
    assert!(!got.cut);
    let want: Vec<Record> = all
        .iter()
        .filter(|r| r.partition == "m2" && r.ts < d + 2 * DAY)
        .cloned()
        .collect();
    assert_eq!(ids(&got.items), ids(&want));
    let every = s
        .series
        .read_all(ACME, "events", None, 0, i64::MAX, &f)
        .await
        .expect("read");
    assert_eq!((every.items.len(), every.cut), (all.len(), false));
}

async fn records_of_one_tenant_or_series_are_never_read_by_another(s: Stores) {
    let t = day0() + HOUR;
    s.series_writes
        .append(
            ACME,
            "flows",
            vec![record("m0", t, "a", json!({"of": "acme"}))],
        )
        .await
        .expect("append");
    s.series_writes
        .append(
            GLOBEX,
            "flows",
            vec![record("m0", t + 1, "g", json!({"of": "globex"}))],
        )
        .await
        .expect("append");
    s.series_writes
        .append(
            ACME,
            "dns",
            vec![record("m0", t + 2, "d", json!({"of": "dns"}))],
        )
        .await
        .expect("append");
    let f = Filter::all();
    for partition in [None, Some("m0")] {
        let theirs = s
            .series
            .scan(&query(GLOBEX, "flows", partition, 0, i64::MAX, &f, 10))
            .await
            .expect("scan");
        assert_eq!(
            times(&theirs.records),
            [(t + 1, "g".to_owned())],
            "{partition:?}"
        );
        let flows = s
            .series
            .scan(&query(ACME, "flows", partition, 0, i64::MAX, &f, 10))
            .await
            .expect("scan");
        assert_eq!(
            times(&flows.records),
            [(t, "a".to_owned())],
            "{partition:?}"
        );
    }
    let nothing = s
        .series
        .read_all(GLOBEX, "dns", None, 0, i64::MAX, &f)
        .await
        .expect("read");
    assert!(nothing.items.is_empty());
}

async fn records_of_one_time_and_id_on_two_partitions_are_two_and_a_page_between_them_skips_the_second(
    s: Stores,
) {
    // A position is a time and an id, no partition: a page that ends on the first of two
    // records sharing both resumes past the second as well, in every adapter alike (ids are
    // unique per record where reads of every partition page).
    let t = day0() + 7 * HOUR;
    s.series_writes
        .append(
            ACME,
            "twins",
            vec![
                record("m0", t + 1, "newer", json!({})),
                record("m0", t, "x", json!({"on": "m0"})),
                record("m1", t, "x", json!({"on": "m1"})),
                record("m0", t - 1, "older", json!({})),
            ],
        )
        .await
        .expect("append");
    let f = Filter::all();
    let whole = s
        .series
        .scan(&query(ACME, "twins", None, 0, i64::MAX, &f, 10))
        .await
        .expect("scan");
    assert_eq!(
        times(&whole.records),
        [
            (t + 1, "newer".to_owned()),
            (t, "x".to_owned()),
            (t, "x".to_owned()),
            (t - 1, "older".to_owned())
        ]
    );
    let first = s
        .series
        .scan(&query(ACME, "twins", None, 0, i64::MAX, &f, 2))
        .await
        .expect("scan");
    assert_eq!(
        times(&first.records),
        [(t + 1, "newer".to_owned()), (t, "x".to_owned())]
    );
    let next = first.next.expect("more follow");
    assert_eq!(
        next,
        Position {
            ts: t,
            id: "x".into()
        }
    );
    let second = s
        .series
        .scan(&SeriesQuery {
            after: Some(&next),
            ..query(ACME, "twins", None, 0, i64::MAX, &f, 2)
        })
        .await
        .expect("scan");
    assert_eq!(times(&second.records), [(t - 1, "older".to_owned())]);
}
