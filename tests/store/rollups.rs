//! The rollups port: hourly aggregates by `(tenant, series, hour, key)` whose measures add
//! up, read in (hour, key) order, added up per key or per group over a window, added once
//! per batch; and the daily packing of `netops_shared::store::daily`, read through the port.

use std::collections::BTreeMap;
use std::sync::Arc;

use netops_shared::store::daily::{self, DayRows, Span, floor_to};
use netops_shared::store::{BATCHES, Filter, Pred, Rollup, RollupGroup, Stores};
use serde_json::{Value, json};

use crate::data::{ACME, DAY, GLOBEX, HOUR, day0, measures, rollup};

conformance! {
    [sqlite, dynamodb] [
        added_measures_add_into_the_aggregate_of_their_hour_and_key,
        rows_of_one_call_with_one_hour_and_key_add_up_as_one,
        rows_come_in_hour_then_key_order_within_their_window,
        a_filter_selects_aggregates_by_their_dimensions,
        rows_keeping_keeps_the_measures_accepted_for_their_hour,
        sums_per_key_add_up_the_window_with_the_latest_hour_and_the_first_dimensions,
        sums_per_group_add_up_the_keys_sharing_the_grouping_dimensions,
        a_batch_added_once_is_skipped_when_run_again,
        one_big_batch_added_by_two_senders_at_once_counts_once,
        a_load_of_new_aggregates_reads_back_as_an_add_of_them,
        measures_named_by_hour_and_entity_keep_their_names,
        fractional_measures_add_up_to_within_a_rounding,
        daily_sums_over_any_window_equal_the_facts_of_its_hours,
        rollups_of_one_tenant_or_series_are_never_read_by_another,
    ]
}

fn tcp(hour: i64, m: &[(&str, f64)]) -> Rollup {
    rollup(hour, "tcp", json!({"proto": "TCP"}), m)
}

/// `(hour, key, measures)` of rows, in the order given.
fn rows_of(rows: &[Rollup]) -> Vec<(i64, &str, &BTreeMap<String, f64>)> {
    rows.iter()
        .map(|r| (r.hour, r.key.as_str(), &r.measures))
        .collect()
}

async fn added_measures_add_into_the_aggregate_of_their_hour_and_key(s: Stores) {
    let h = day0() + 5 * HOUR;
    s.rollups
        .add(
            ACME,
            "flows",
            vec![tcp(h, &[("bytes", 2.0), ("flows", 1.0)])],
        )
        .await
        .expect("add");
    s.rollups
        .add(
            ACME,
            "flows",
            vec![tcp(h, &[("bytes", 3.0), ("drops", 4.0)])],
        )
        .await
        .expect("add");
    s.rollups
        .add(ACME, "flows", vec![tcp(h + HOUR, &[("bytes", 7.0)])])
        .await
        .expect("add");
    let rows = s
        .rollups
        .rows(ACME, "flows", h, h + 2 * HOUR, &Filter::all())
        .await
        .expect("rows");
    let first = measures(&[("bytes", 5.0), ("drops", 4.0), ("flows", 1.0)]);
    let second = measures(&[("bytes", 7.0)]);
    assert_eq!(
        rows_of(&rows),
        [(h, "tcp", &first), (h + HOUR, "tcp", &second)]
    );
    assert_eq!(*rows[0].dims, json!({"proto": "TCP"}));
}

async fn rows_of_one_call_with_one_hour_and_key_add_up_as_one(s: Stores) {
    let h = day0() + HOUR;
    s.rollups
        .add(
            ACME,
            "dns",
            vec![
                tcp(h, &[("q", 1.0)]),
                rollup(h, "udp", json!({"proto": "UDP"}), &[("q", 10.0)]),
                tcp(h, &[("q", 2.0), ("nx", 1.0)]),
                tcp(h, &[("q", 4.0)]),
            ],
        )
        .await
        .expect("add");
    let rows = s
        .rollups
        .rows(ACME, "dns", h, h + 1, &Filter::all())
        .await
        .expect("rows");
    let tcp_sums = measures(&[("nx", 1.0), ("q", 7.0)]);
    let udp_sums = measures(&[("q", 10.0)]);
    assert_eq!(
        rows_of(&rows),
        [(h, "tcp", &tcp_sums), (h, "udp", &udp_sums)]
    );
}

async fn rows_come_in_hour_then_key_order_within_their_window(s: Stores) {
    let d = day0();
    let row = |hour: i64, key: &str| rollup(hour, key, json!({"k": key}), &[("n", 1.0)]);
    // Written out of order, keys sorting by bytes.
    s.rollups
        .add(
            ACME,
            "s",
            vec![
                row(d + 3 * HOUR, "b"),
                row(d + HOUR, "b"),
                row(d + 3 * HOUR, "A"),
                row(d + 2 * HOUR, "a|x"),
                row(d + 2 * HOUR, "a"),
                row(d + DAY, "a"),
                row(d, "z"),
            ],
        )
        .await
        .expect("add");
    let got = |from: i64, to: i64| {
        let s = s.clone();
        async move {
            s.rollups
                .rows(ACME, "s", from, to, &Filter::all())
                .await
                .expect("rows")
                .into_iter()
                .map(|r| (r.hour - d, r.key))
                .collect::<Vec<_>>()
        }
    };
    let h = |n: i64, k: &str| (n * HOUR, k.to_owned());
    assert_eq!(
        got(d + HOUR, d + DAY).await,
        [h(1, "b"), h(2, "a"), h(2, "a|x"), h(3, "A"), h(3, "b")],
        "from inclusive, to exclusive"
    );
    assert_eq!(
        got(d + HOUR + 1, d + 3 * HOUR + 1).await,
        [h(2, "a"), h(2, "a|x"), h(3, "A"), h(3, "b")]
    );
    assert_eq!(
        got(0, i64::MAX).await.len(),
        7,
        "from the epoch to the end of time"
    );
    assert!(got(d + 5 * HOUR, d + 5 * HOUR).await.is_empty());
    assert!(got(d + 4 * HOUR, d + 2 * HOUR).await.is_empty());
}

async fn a_filter_selects_aggregates_by_their_dimensions(s: Stores) {
    let h = day0() + 2 * HOUR;
    let row = |key: &str, dims: Value| rollup(h, key, dims, &[("n", 1.0)]);
    s.rollups
        .add(
            ACME,
            "talkers",
            vec![
                row(
                    "1",
                    json!({"proto": "TCP", "port": 443, "site": "paris", "dir": "out"}),
                ),
                row("2", json!({"proto": "UDP", "port": 53, "site": "paris"})),
                row(
                    "3",
                    json!({"proto": "TCP", "port": 22, "site": "lyon", "dir": "in"}),
                ),
                row("4", json!({"proto": "ICMP", "site": "Lyon-Part-Dieu"})),
            ],
        )
        .await
        .expect("add");
    let cases: Vec<(Filter, Vec<&str>)> = vec![
        (
            Filter::all().and(Pred::Eq("proto", json!("TCP"))),
            vec!["1", "3"],
        ),
        (Filter::all().and(Pred::Eq("port", json!(443))), vec!["1"]),
        (
            Filter::all().and(Pred::Ne("dir", json!("out"))),
            vec!["2", "3", "4"],
        ),
        (
            Filter::all().and(Pred::In("site", vec![json!("lyon"), json!("nice")])),
            vec!["3"],
        ),
        (
            Filter::all().and(Pred::Contains(vec!["site"], "LYON".into())),
            vec!["3", "4"],
        ),
        (Filter::all().and(Pred::Gte("port", 53.0)), vec!["1", "2"]),
        (
            Filter::all()
                .and(Pred::Eq("site", json!("paris")))
                .and(Pred::Lte("port", 100.0)),
            vec!["2"],
        ),
    ];
    for (filter, want) in cases {
        let rows = s
            .rollups
            .rows(ACME, "talkers", h, h + HOUR, &filter)
            .await
            .expect("rows");
        let got: Vec<&str> = rows.iter().map(|r| r.key.as_str()).collect();
        assert_eq!(got, want, "{filter:?}");
        let sums = s
            .rollups
            .sums_per_key(ACME, "talkers", h, h + HOUR, &filter)
            .await
            .expect("sums");
        let got: Vec<&str> = sums.iter().map(|r| r.key.as_str()).collect();
        assert_eq!(got, want, "sums, {filter:?}");
    }
}

async fn rows_keeping_keeps_the_measures_accepted_for_their_hour(s: Stores) {
    let d = day0();
    s.rollups
        .add(
            ACME,
            "wide",
            vec![
                tcp(d, &[("b@00", 1.0), ("b@01", 2.0), ("f@00", 3.0)]),
                tcp(d + DAY, &[("b@00", 4.0), ("f@00", 5.0)]),
                rollup(d + DAY, "udp", json!({"proto": "UDP"}), &[("f@00", 6.0)]),
            ],
        )
        .await
        .expect("add");
    let keep: netops_shared::store::KeepMeasure =
        Arc::new(move |hour, name| name.starts_with("b@") && (hour == d || name == "b@00"));
    let rows = s
        .rollups
        .rows_keeping(ACME, "wide", d, d + 2 * DAY, &Filter::all(), keep)
        .await
        .expect("rows");
    let day1 = measures(&[("b@00", 1.0), ("b@01", 2.0)]);
    let day2 = measures(&[("b@00", 4.0)]);
    let none = BTreeMap::new();
    assert_eq!(
        rows_of(&rows),
        [
            (d, "tcp", &day1),
            (d + DAY, "tcp", &day2),
            (d + DAY, "udp", &none)
        ],
        "the same rows, with the measures kept"
    );
}

async fn sums_per_key_add_up_the_window_with_the_latest_hour_and_the_first_dimensions(s: Stores) {
    let d = day0();
    let row = |hour: i64, key: &str, dims: Value, m: &[(&str, f64)]| {
        rollup(d + hour * HOUR, key, dims, m)
    };
    s.rollups
        .add(
            ACME,
            "f",
            vec![
                row(1, "udp", json!({"proto": "UDP"}), &[("bytes", 1.0)]),
                row(
                    2,
                    "tcp",
                    json!({"proto": "TCP", "v": 1}),
                    &[("bytes", 2.0), ("flows", 1.0)],
                ),
                row(3, "tcp", json!({"proto": "TCP", "v": 2}), &[("bytes", 4.0)]),
                row(
                    3,
                    "udp",
                    json!({"proto": "UDP"}),
                    &[("bytes", 8.0), ("flows", 2.0)],
                ),
                row(
                    9,
                    "tcp",
                    json!({"proto": "TCP", "v": 3}),
                    &[("bytes", 16.0)],
                ),
                row(0, "icmp", json!({"proto": "ICMP"}), &[("bytes", 32.0)]),
            ],
        )
        .await
        .expect("add");
    let sums = s
        .rollups
        .sums_per_key(ACME, "f", d + HOUR, d + 9 * HOUR, &Filter::all())
        .await
        .expect("sums");
    let got: Vec<_> = sums
        .iter()
        .map(|r| (r.key.as_str(), r.hour - d, (*r.dims).clone(), &r.measures))
        .collect();
    let tcp_sums = measures(&[("bytes", 6.0), ("flows", 1.0)]);
    let udp_sums = measures(&[("bytes", 9.0), ("flows", 2.0)]);
    assert_eq!(
        got,
        vec![
            ("tcp", 3 * HOUR, json!({"proto": "TCP", "v": 1}), &tcp_sums),
            ("udp", 3 * HOUR, json!({"proto": "UDP"}), &udp_sums),
        ]
    );
    let none = s
        .rollups
        .sums_per_key(ACME, "f", d + 10 * HOUR, d + DAY, &Filter::all())
        .await
        .expect("sums");
    assert!(none.is_empty());
}

async fn sums_per_group_add_up_the_keys_sharing_the_grouping_dimensions(s: Stores) {
    let d = day0();
    let row = |hour: i64, machine: &str, dims: Value, n: f64| {
        rollup(
            d + hour * HOUR,
            &format!("{machine}|{}", dims["domain"]),
            dims,
            &[("queries", n)],
        )
    };
    s.rollups
        .add(
            ACME,
            "dns",
            vec![
                row(1, "pc-1", json!({"machine": "pc-1", "domain": "b.fr"}), 1.0),
                row(
                    2,
                    "pc-1",
                    json!({"machine": "pc-1", "domain": "a.fr", "site": 3}),
                    2.0,
                ),
                row(2, "pc-2", json!({"machine": "pc-2", "domain": "a.fr"}), 4.0),
                row(
                    3,
                    "pc-1",
                    json!({"machine": "pc-1", "domain": "a.fr", "site": 3}),
                    8.0,
                ),
                row(4, "pc-3", json!({"machine": "pc-3"}), 32.0),
                row(
                    9,
                    "pc-3",
                    json!({"machine": "pc-3", "domain": "a.fr"}),
                    16.0,
                ),
            ],
        )
        .await
        .expect("add");
    let groups = |by: &'static [&'static str], filter: Filter| {
        let s = s.clone();
        async move {
            s.rollups
                .sums_per_group(ACME, "dns", d + HOUR, d + 9 * HOUR, &filter, by)
                .await
                .expect("groups")
        }
    };
    let g = |dims: Vec<Value>, keys: usize, hour: i64, n: f64| RollupGroup {
        dims,
        keys,
        hour: d + hour * HOUR,
        measures: measures(&[("queries", n)]),
    };
    // In the order of their values' JSON text: strings before null.
    assert_eq!(
        groups(&["domain"], Filter::all()).await,
        vec![
            g(vec![json!("a.fr")], 2, 3, 14.0),
            g(vec![json!("b.fr")], 1, 1, 1.0),
            g(vec![Value::Null], 1, 4, 32.0),
        ]
    );
    assert_eq!(
        groups(
            &["domain", "site"],
            Filter::all().and(Pred::Eq("machine", json!("pc-1")))
        )
        .await,
        vec![
            g(vec![json!("a.fr"), json!(3)], 1, 3, 10.0),
            g(vec![json!("b.fr"), Value::Null], 1, 1, 1.0),
        ]
    );
    assert!(
        groups(
            &["domain"],
            Filter::all().and(Pred::Eq("machine", json!("pc-9")))
        )
        .await
        .is_empty()
    );
}

async fn a_batch_added_once_is_skipped_when_run_again(s: Stores) {
    let h = day0() + 4 * HOUR;
    let marker = |key: &str| rollup(h, key, json!({}), &[]);
    let batch = || {
        vec![
            ("flows".to_owned(), vec![tcp(h, &[("bytes", 10.0)])]),
            (
                "dns".to_owned(),
                vec![tcp(h, &[("q", 1.0)]), tcp(h + HOUR, &[("q", 2.0)])],
            ),
        ]
    };
    assert!(
        s.rollups
            .add_once(ACME, marker("b1"), batch())
            .await
            .expect("once")
    );
    assert!(
        !s.rollups
            .add_once(ACME, marker("b1"), batch())
            .await
            .expect("again"),
        "a batch whose marker is there is skipped"
    );
    let total = |series: &'static str| {
        let s = s.clone();
        async move {
            s.rollups
                .sums_per_key(ACME, series, h, h + 2 * HOUR, &Filter::all())
                .await
                .expect("sums")
                .into_iter()
                .map(|r| r.measures)
                .collect::<Vec<_>>()
        }
    };
    assert_eq!(total("flows").await, [measures(&[("bytes", 10.0)])]);
    assert_eq!(total("dns").await, [measures(&[("q", 3.0)])]);
    let markers = s
        .rollups
        .rows(ACME, BATCHES, h, h + 1, &Filter::all())
        .await
        .expect("markers");
    assert_eq!(
        markers.iter().map(|r| r.key.as_str()).collect::<Vec<_>>(),
        ["b1"]
    );
    // Another batch of the same hour, and the same batch of another tenant, are added.
    assert!(
        s.rollups
            .add_once(ACME, marker("b2"), batch())
            .await
            .expect("b2")
    );
    assert_eq!(total("flows").await, [measures(&[("bytes", 20.0)])]);
    assert!(
        s.rollups
            .add_once(GLOBEX, marker("b1"), batch())
            .await
            .expect("globex")
    );
}

/// Two senders of one batch of 250 rows (more than one DynamoDB transaction holds) at once:
/// every row is added once, whichever sender adds which part.
async fn one_big_batch_added_by_two_senders_at_once_counts_once(s: Stores) {
    let h = day0() + 6 * HOUR;
    let batch = || {
        let rows = |series: &str, n: usize| {
            let rows = (0..n)
                .map(|i| {
                    rollup(
                        h + (i % 3) as i64 * HOUR,
                        &format!("k{i:03}"),
                        json!({"k": i}),
                        &[("n", 1.0)],
                    )
                })
                .collect();
            (series.to_owned(), rows)
        };
        vec![rows("flows", 150), rows("dns", 100)]
    };
    let marker = rollup(h, "big", json!({}), &[]);
    let (a, b) = tokio::join!(
        s.rollups.add_once(ACME, marker.clone(), batch()),
        s.rollups.add_once(ACME, marker.clone(), batch()),
    );
    assert!(a.expect("a") || b.expect("b"), "one of them adds");
    for (series, n) in [("flows", 150), ("dns", 100)] {
        let rows = s
            .rollups
            .rows(ACME, series, h, h + 3 * HOUR, &Filter::all())
            .await
            .expect("rows");
        assert_eq!(rows.len(), n, "{series}");
        assert!(
            rows.iter().all(|r| r.measures == measures(&[("n", 1.0)])),
            "{series}: every row added once"
        );
    }
    assert!(
        !s.rollups
            .add_once(ACME, marker, batch())
            .await
            .expect("again"),
        "the batch sent again adds nothing"
    );
}

async fn a_load_of_new_aggregates_reads_back_as_an_add_of_them(s: Stores) {
    let d = day0();
    let rows = || {
        vec![
            tcp(d + HOUR, &[("bytes", 1.0)]),
            rollup(
                d + HOUR,
                "udp",
                json!({"proto": "UDP"}),
                &[("bytes", 2.0), ("flows", 1.0)],
            ),
            tcp(d + HOUR, &[("bytes", 4.0), ("flows", 3.0)]),
            tcp(d + 2 * HOUR, &[("bytes", 8.0)]),
        ]
    };
    s.rollups.load(ACME, "loaded", rows()).await.expect("load");
    s.rollups.add(ACME, "added", rows()).await.expect("add");
    let read = |series: &'static str| {
        let s = s.clone();
        async move {
            s.rollups
                .rows(ACME, series, d, d + DAY, &Filter::all())
                .await
                .expect("rows")
        }
    };
    let (loaded, added) = (read("loaded").await, read("added").await);
    assert_eq!(loaded, added);
    assert_eq!(loaded.len(), 3);
    assert_eq!(
        loaded[0].measures,
        measures(&[("bytes", 5.0), ("flows", 3.0)])
    );
    // Adding into loaded aggregates adds.
    s.rollups
        .add(ACME, "loaded", vec![tcp(d + 2 * HOUR, &[("bytes", 1.0)])])
        .await
        .expect("add");
    assert_eq!(
        read("loaded").await[2].measures,
        measures(&[("bytes", 9.0)])
    );
}

async fn measures_named_by_hour_and_entity_keep_their_names(s: Stores) {
    let d = day0();
    let names = [
        "n@07",
        "read@23|julie.martin@acme.fr",
        "b|10.0.0.1|PAR-LT-0001",
        "q|xn--caf-dma.fr",
        "u|Émilie Dupont",
        "x|a.b#c:d-e_f/g h",
    ];
    let m: Vec<(&str, f64)> = names.iter().map(|n| (*n, 1.0)).collect();
    s.rollups
        .add(
            ACME,
            "entities",
            vec![rollup(d, "g#3", json!({"g": "a.fr"}), &m)],
        )
        .await
        .expect("add");
    s.rollups
        .add(
            ACME,
            "entities",
            vec![rollup(d, "g#3", json!({"g": "a.fr"}), &m[1..2])],
        )
        .await
        .expect("add");
    let rows = s
        .rollups
        .rows(ACME, "entities", d, d + 1, &Filter::all())
        .await
        .expect("rows");
    assert_eq!(rows.len(), 1);
    let mut want = measures(&m);
    want.insert(names[1].to_owned(), 2.0);
    assert_eq!(rows[0].measures, want);
    assert_eq!(rows[0].key, "g#3");
}

async fn fractional_measures_add_up_to_within_a_rounding(s: Stores) {
    let h = day0() + HOUR;
    // Binary fractions add exactly everywhere; decimal ones to within a rounding (an
    // adapter may add in decimal, as DynamoDB does, or in binary floating point).
    for (b, d) in [(0.5, 0.1), (0.25, 0.2), (1e9, 0.3)] {
        s.rollups
            .add(
                ACME,
                "lat",
                vec![tcp(h, &[("bin", b), ("dec", d), ("neg", -d)])],
            )
            .await
            .expect("add");
    }
    let rows = s
        .rollups
        .rows(ACME, "lat", h, h + 1, &Filter::all())
        .await
        .expect("rows");
    let m = &rows[0].measures;
    assert_eq!(m["bin"], 1_000_000_000.75);
    assert!((m["dec"] - 0.6).abs() < 1e-12, "{}", m["dec"]);
    assert!((m["neg"] + 0.6).abs() < 1e-12, "{}", m["neg"]);
}

/// One fact: at (ms), key, entity, value.
type Fact = (i64, &'static str, &'static str, f64);

/// Facts over five UTC days, at various hours, of two keys, some with an entity.
fn facts() -> Vec<Fact> {
    let d = day0() - DAY;
    let mut out = Vec::new();
    for i in 0..120i64 {
        // Every 61 minutes: every hour of five days, minutes moving.
        let at = d + i * 61 * 60_000 + 17;
        let key = if i % 3 == 0 { "paris" } else { "lyon" };
        let entity = ["", "julie", "marc"][(i % 3) as usize];
        out.push((at, key, entity, (i % 7 + 1) as f64));
    }
    out
}

/// The expected sums of the facts whose hour lies in the span's: per key, the measures, and
/// the hour the port says (the latest hour with data, or its day when among the whole days).
fn expected(facts: &[Fact], span: Span) -> BTreeMap<String, (i64, BTreeMap<String, f64>)> {
    let mut out: BTreeMap<String, (i64, BTreeMap<String, f64>)> = BTreeMap::new();
    for (at, key, entity, v) in facts {
        let hour = floor_to(*at, HOUR);
        if hour < span.a || hour >= span.b {
            continue;
        }
        let shown = if hour >= span.d0 && hour < span.d1 {
            floor_to(hour, DAY)
        } else {
            hour
        };
        let e = out
            .entry(key.to_string())
            .or_insert((shown, BTreeMap::new()));
        e.0 = e.0.max(shown);
        let name = if entity.is_empty() {
            "n".to_owned()
        } else {
            daily::of("n", entity)
        };
        *e.1.entry(name).or_insert(0.0) += v;
    }
    out
}

async fn daily_sums_over_any_window_equal_the_facts_of_its_hours(s: Stores) {
    let facts = facts();
    // Two batches, as producers add them: the rows of one day and key add up across them.
    for half in facts.chunks(facts.len() / 2 + 7) {
        let mut rows = DayRows::default();
        for (at, key, entity, v) in half {
            let name = if entity.is_empty() {
                "n".to_owned()
            } else {
                daily::of("n", entity)
            };
            rows.add(*at, key, || json!({"site": key}), &name, *v);
        }
        for (series, rows) in rows.series("traffic", true) {
            s.rollups.add(ACME, &series, rows).await.expect("add");
        }
    }
    let d = day0() - DAY;
    let windows = [
        (d + 10 * HOUR + 1_800_000, d + 3 * DAY + 9 * HOUR + 900_000),
        (d + DAY, d + 3 * DAY),
        (
            d + DAY + 9 * HOUR + 30 * 60_000,
            d + DAY + 15 * HOUR + 10 * 60_000,
        ),
        (d + 20 * HOUR, d + DAY + 3 * HOUR),
        (0, d + 6 * DAY),
        (d + 7 * DAY, d + 8 * DAY),
    ];
    for (from, to) in windows {
        for span in [Span::covering(from, to), Span::starting(from, to)] {
            let got = daily::sums(s.rollups.as_ref(), ACME, "traffic", span, &Filter::all())
                .await
                .expect("sums");
            let got: BTreeMap<String, (i64, BTreeMap<String, f64>)> = got
                .into_iter()
                .map(|r| {
                    assert_eq!(*r.dims, json!({"site": r.key}));
                    (r.key, (r.hour, r.measures))
                })
                .collect();
            assert_eq!(got, expected(&facts, span), "{span:?}");
        }
    }
    // A filter on the dimensions, and the packed rows hour by hour.
    let span = Span::covering(d + 5 * HOUR, d + 2 * DAY + 5 * HOUR);
    let paris = Filter::all().and(Pred::Eq("site", json!("paris")));
    let got = daily::sums(s.rollups.as_ref(), ACME, "traffic", span, &paris)
        .await
        .expect("sums");
    let want = expected(&facts, span);
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].measures, want["paris"].1);
    let packed = daily::packed_rows(s.rollups.as_ref(), ACME, "traffic", span, &paris)
        .await
        .expect("packed");
    let mut hours: BTreeMap<i64, f64> = BTreeMap::new();
    for row in &packed {
        for (_, hour, v) in daily::hours_within(row, span.a, span.b) {
            *hours.entry(hour).or_insert(0.0) += v;
        }
    }
    let mut want_hours: BTreeMap<i64, f64> = BTreeMap::new();
    for (at, key, _, v) in &facts {
        let hour = floor_to(*at, HOUR);
        if *key == "paris" && hour >= span.a && hour < span.b {
            *want_hours.entry(hour).or_insert(0.0) += v;
        }
    }
    assert_eq!(hours, want_hours);
}

async fn rollups_of_one_tenant_or_series_are_never_read_by_another(s: Stores) {
    let h = day0() + HOUR;
    s.rollups
        .add(ACME, "flows", vec![tcp(h, &[("bytes", 1.0)])])
        .await
        .expect("add");
    s.rollups
        .add(GLOBEX, "flows", vec![tcp(h, &[("bytes", 100.0)])])
        .await
        .expect("add");
    s.rollups
        .load(ACME, "flows.d", vec![tcp(h, &[("bytes", 1000.0)])])
        .await
        .expect("load");
    let f = Filter::all();
    let theirs = s
        .rollups
        .rows(GLOBEX, "flows", h, h + 1, &f)
        .await
        .expect("rows");
    assert_eq!(theirs.len(), 1);
    assert_eq!(theirs[0].measures, measures(&[("bytes", 100.0)]));
    let ours = s
        .rollups
        .sums_per_key(ACME, "flows", 0, i64::MAX, &f)
        .await
        .expect("sums");
    assert_eq!(ours.len(), 1);
    assert_eq!(ours[0].measures, measures(&[("bytes", 1.0)]));
    let groups = s
        .rollups
        .sums_per_group(GLOBEX, "flows", 0, i64::MAX, &f, &["proto"])
        .await
        .expect("groups");
    assert_eq!(groups.len(), 1);
    assert_eq!(groups[0].measures, measures(&[("bytes", 100.0)]));
    assert!(
        s.rollups
            .rows(GLOBEX, "flows.d", 0, i64::MAX, &f)
            .await
            .expect("rows")
            .is_empty()
    );
}
