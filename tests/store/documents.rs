//! The documents port: versioned JSON documents by `(tenant, collection, key)`, read by key,
//! by keys, in key order with filters and paging, or all of a collection within
//! [`READ_ALL`]; conditional puts by version.

use netops_shared::store::{Expect, Filter, Pred, READ_ALL, StoreError, Stores};
use serde_json::{Value, json};

use crate::data::{ACME, GLOBEX, keys};

conformance! {
    [sqlite, dynamodb] [
        a_document_put_is_read_back_with_its_body_and_a_version,
        a_key_never_put_reads_as_none,
        a_put_replaces_the_body_and_raises_the_version,
        the_same_key_in_two_collections_is_two_documents,
        a_list_comes_in_key_order_after_the_key_given_up_to_the_limit,
        walking_a_filtered_collection_page_by_page_repeats_and_skips_nothing,
        a_limit_past_one_page_of_the_backend_is_honoured,
        get_many_returns_each_existing_document_once,
        filters_select_the_documents_every_predicate_describes,
        predicates_on_fields_of_another_type_select_what_filter_matches_says,
        a_conditional_put_expecting_absence_fails_once_the_document_exists,
        a_conditional_put_at_the_version_read_raises_it_by_one_and_a_stale_one_fails,
        an_unconditional_put_makes_a_version_read_before_it_stale,
        read_all_takes_every_matching_document_in_key_order_uncut,
        live_since_takes_what_is_in_progress_and_what_ended_since,
        documents_of_one_tenant_are_never_seen_by_another,
    ]
    // A collection of `READ_ALL` + 1 documents: seconds on the embedded store, minutes on
    // moto. The adapters' part of the bound (a list returns as many as asked, past a page of
    // the backend) is `a_limit_past_one_page_of_the_backend_is_honoured`, on both.
    [sqlite] [
        read_all_stops_at_its_bound_and_says_it_is_cut,
    ]
}

async fn a_document_put_is_read_back_with_its_body_and_a_version(s: Stores) {
    let body = json!({"hostname": "PAR-LT-0001", "ip": "10.0.0.1", "tags": ["a", "b"], "n": 1.5});
    s.docs
        .put(ACME, "machines", vec![("PAR-LT-0001".into(), body.clone())])
        .await
        .expect("put");
    let doc = s
        .docs
        .get(ACME, "machines", "PAR-LT-0001")
        .await
        .expect("get")
        .expect("the document");
    assert_eq!(doc.key, "PAR-LT-0001");
    assert_eq!(doc.body, body);
    assert!(doc.version >= 1, "a stored document has a version");
}

async fn a_key_never_put_reads_as_none(s: Stores) {
    s.docs
        .put(ACME, "machines", vec![("a".into(), json!({}))])
        .await
        .expect("put");
    assert_eq!(s.docs.get(ACME, "machines", "b").await.expect("get"), None);
    assert_eq!(s.docs.get(ACME, "sites", "a").await.expect("get"), None);
}

async fn a_put_replaces_the_body_and_raises_the_version(s: Stores) {
    s.docs
        .put(ACME, "sites", vec![("paris".into(), json!({"n": 1}))])
        .await
        .expect("put");
    let first = s.docs.get(ACME, "sites", "paris").await.expect("get");
    s.docs
        .put(ACME, "sites", vec![("paris".into(), json!({"n": 2}))])
        .await
        .expect("put");
    let second = s.docs.get(ACME, "sites", "paris").await.expect("get");
    let (first, second) = (first.expect("first"), second.expect("second"));
    assert_eq!(second.body, json!({"n": 2}), "the last put wins, whole");
    assert!(second.version > first.version, "{first:?} then {second:?}");
    // Two puts of one key in one call: the last one is kept.
    s.docs
        .put(
            ACME,
            "sites",
            vec![
                ("lyon".into(), json!({"n": 1})),
                ("lyon".into(), json!({"n": 3})),
            ],
        )
        .await
        .expect("put");
    let lyon = s.docs.get(ACME, "sites", "lyon").await.expect("get");
    assert_eq!(lyon.map(|d| d.body), Some(json!({"n": 3})));
}

async fn the_same_key_in_two_collections_is_two_documents(s: Stores) {
    s.docs
        .put(ACME, "sites", vec![("x".into(), json!({"of": "sites"}))])
        .await
        .expect("put");
    s.docs
        .put(
            ACME,
            "devices",
            vec![("x".into(), json!({"of": "devices"}))],
        )
        .await
        .expect("put");
    let site = s.docs.get(ACME, "sites", "x").await.expect("get");
    let device = s.docs.get(ACME, "devices", "x").await.expect("get");
    assert_eq!(site.map(|d| d.body), Some(json!({"of": "sites"})));
    assert_eq!(device.map(|d| d.body), Some(json!({"of": "devices"})));
    let listed = s
        .docs
        .list(ACME, "sites", &Filter::all(), None, 10)
        .await
        .expect("list");
    assert_eq!(keys(&listed), ["x"]);
}

async fn a_list_comes_in_key_order_after_the_key_given_up_to_the_limit(s: Stores) {
    // Put out of order, with keys that sort by bytes (upper case before lower, `-` before
    // digits, a prefix before its extensions).
    let put: Vec<(String, Value)> = ["k10", "K2", "k1", "k-0", "k1a", "k2", "k01"]
        .iter()
        .map(|k| (k.to_string(), json!({"k": k})))
        .collect();
    s.docs.put(ACME, "c", put).await.expect("put");
    let all = Filter::all();
    let listed = s.docs.list(ACME, "c", &all, None, 100).await.expect("list");
    assert_eq!(
        keys(&listed),
        ["K2", "k-0", "k01", "k1", "k10", "k1a", "k2"]
    );
    for d in &listed {
        assert_eq!(d.body, json!({"k": d.key}));
    }
    let after = s
        .docs
        .list(ACME, "c", &all, Some("k1"), 100)
        .await
        .expect("list");
    assert_eq!(keys(&after), ["k10", "k1a", "k2"], "strictly after the key");
    let between = s
        .docs
        .list(ACME, "c", &all, Some("k0"), 2)
        .await
        .expect("list");
    assert_eq!(
        keys(&between),
        ["k01", "k1"],
        "after a key that is not stored"
    );
    let none = s
        .docs
        .list(ACME, "c", &all, Some("k2"), 100)
        .await
        .expect("list");
    assert!(none.is_empty());
    let zero = s.docs.list(ACME, "c", &all, None, 0).await.expect("list");
    assert!(zero.is_empty(), "a limit of 0 takes nothing");
}

async fn walking_a_filtered_collection_page_by_page_repeats_and_skips_nothing(s: Stores) {
    let put: Vec<(String, Value)> = (0..40)
        .map(|i| (format!("m{i:03}"), json!({"i": i, "odd": i % 2 == 1})))
        .collect();
    s.docs.put(ACME, "machines", put).await.expect("put");
    let odd = Filter::all().and(Pred::Eq("odd", json!(true)));
    let want: Vec<String> = (0..40)
        .filter(|i| i % 2 == 1)
        .map(|i| format!("m{i:03}"))
        .collect();
    for size in [1, 3, 7, 20, 21] {
        for bounded in [false, true] {
            let mut walked = Vec::new();
            let mut after: Option<String> = None;
            loop {
                // The keys of the page (the bounded read's as their stored text, which
                // parses back to the body put), and where a bounded read stopped.
                let (page, resume): (Vec<String>, _) = if bounded {
                    let (page, resume) = s
                        .docs
                        .list_bounded(ACME, "machines", &odd, after.as_deref(), size)
                        .await
                        .expect("list");
                    for d in &page {
                        let body: Value = serde_json::from_str(&d.body).expect("stored text");
                        assert_eq!(body["odd"], json!(true), "{}", d.key);
                    }
                    (page.into_iter().map(|d| d.key).collect(), resume)
                } else {
                    let page = s
                        .docs
                        .list(ACME, "machines", &odd, after.as_deref(), size)
                        .await
                        .expect("list");
                    (page.into_iter().map(|d| d.key).collect(), None)
                };
                assert!(page.len() <= size);
                // A full page goes on after its last document, a bounded read stopped short
                // where it stopped; any other page is the last.
                let next = match resume {
                    Some(stopped) => Some(stopped),
                    None if page.len() == size => page.last().cloned(),
                    None => None,
                };
                walked.extend(page);
                match next {
                    Some(k) => after = Some(k),
                    None => break,
                }
            }
            assert_eq!(walked, want, "pages of {size}, bounded: {bounded}");
        }
    }
}

async fn a_limit_past_one_page_of_the_backend_is_honoured(s: Stores) {
    // More documents than one request of the DynamoDB adapter reads (1,000 items), each
    // small: a list asking for all but one, for all, and for more.
    let n = 2_100;
    let put: Vec<(String, Value)> = (0..n)
        .map(|i| (format!("d{i:05}"), json!({"i": i})))
        .collect();
    s.docs.put(ACME, "many", put).await.expect("put");
    let all = Filter::all();
    for (limit, want) in [(n - 1, n - 1), (n, n), (n + 1, n)] {
        let listed = s
            .docs
            .list(ACME, "many", &all, None, limit)
            .await
            .expect("list");
        assert_eq!(listed.len(), want, "limit {limit}");
        assert!(listed.windows(2).all(|w| w[0].key < w[1].key));
    }
    let even = Filter::all().and(Pred::In("i", (0..n).step_by(2).map(|i| json!(i)).collect()));
    let listed = s
        .docs
        .list(ACME, "many", &even, Some("d00098"), 1_000)
        .await
        .expect("list");
    assert_eq!(listed.len(), 1_000);
    assert_eq!(listed[0].key, "d00100");
    assert_eq!(listed[999].key, "d02098");
}

async fn get_many_returns_each_existing_document_once(s: Stores) {
    // More keys than one batch of the DynamoDB adapter (100).
    let put: Vec<(String, Value)> = (0..150)
        .map(|i| (format!("k{i:03}"), json!({"i": i})))
        .collect();
    s.docs.put(ACME, "c", put).await.expect("put");
    s.docs
        .put(GLOBEX, "c", vec![("g".into(), json!({}))])
        .await
        .expect("put");
    let mut asked: Vec<String> = (0..150).rev().map(|i| format!("k{i:03}")).collect();
    asked.extend(["k007", "k149", "missing", "g"].map(String::from));
    let mut got = s.docs.get_many(ACME, "c", &asked).await.expect("get");
    got.sort_by(|a, b| a.key.cmp(&b.key));
    let want: Vec<String> = (0..150).map(|i| format!("k{i:03}")).collect();
    assert_eq!(
        keys(&got),
        want,
        "each once; unknown keys and another tenant's left out"
    );
    for d in &got {
        let i: usize = d.key[1..].parse().expect("n");
        assert_eq!(d.body, json!({"i": i}));
        assert!(d.version >= 1);
    }
    assert!(
        s.docs
            .get_many(ACME, "c", &[])
            .await
            .expect("get")
            .is_empty()
    );
}

/// Documents of a machine inventory, with the fields every predicate reads (each field of
/// one type throughout, as the modules store them).
fn inventory() -> Vec<(String, Value)> {
    [
        json!({"status": "online", "port": 443, "host": {"name": "PAR-LT-0001", "site": "paris"},
               "modules": ["netflow", "netdiag"], "ok": true, "score": 7.5,
               "note": "Windows : Échec de résolution DNS"}),
        json!({"status": "offline", "port": 80, "host": {"name": "LYO-SRV-0002", "site": "lyon"},
               "modules": ["netflow"], "ok": false, "score": 2,
               "note": "ŒUVRE À ÇA"}),
        json!({"status": "online", "port": 8443, "host": {"name": "par-lt-0003", "site": "paris"},
               "modules": [], "ok": true, "score": 10, "note": "1 \u{212a}elvin"}),
        json!({"status": "maintenance", "port": 22, "host": {"name": "PAR-SRV-0004"},
               "modules": ["netdiag"], "ok": false, "score": -1.25,
               "note": "Say \"Hi\" 100% snake_case"}),
        json!({"port": 443.0, "host": {"site": "nice"}}),
    ]
    .into_iter()
    .enumerate()
    .map(|(i, body)| (format!("d{i}"), body))
    .collect()
}

async fn filters_select_the_documents_every_predicate_describes(s: Stores) {
    s.docs.put(ACME, "inv", inventory()).await.expect("put");
    let cases: Vec<(Filter, Vec<&str>)> = vec![
        (Filter::all(), vec!["d0", "d1", "d2", "d3", "d4"]),
        (
            Filter::all().and(Pred::Eq("status", json!("online"))),
            vec!["d0", "d2"],
        ),
        (
            Filter::all().and(Pred::Eq("port", json!(443))),
            vec!["d0", "d4"],
        ),
        (
            Filter::all().and(Pred::Eq("port", json!(443.0))),
            vec!["d0", "d4"],
        ),
        (
            Filter::all().and(Pred::Eq("ok", json!(true))),
            vec!["d0", "d2"],
        ),
        (
            Filter::all().and(Pred::Eq("ok", json!(false))),
            vec!["d1", "d3"],
        ),
        (
            Filter::all().and(Pred::Eq("host.site", json!("paris"))),
            vec!["d0", "d2"],
        ),
        (
            Filter::all().and(Pred::Eq("status", json!("Online"))),
            vec![],
        ),
        (
            Filter::all().and(Pred::Ne("status", json!("online"))),
            vec!["d1", "d3", "d4"],
        ),
        (
            Filter::all().and(Pred::Ne("ok", json!(true))),
            vec!["d1", "d3", "d4"],
        ),
        (
            Filter::all().and(Pred::In(
                "status",
                vec![json!("offline"), json!("maintenance")],
            )),
            vec!["d1", "d3"],
        ),
        (
            Filter::all().and(Pred::In("port", vec![json!(22), json!(8443)])),
            vec!["d2", "d3"],
        ),
        (Filter::all().and(Pred::In("port", vec![])), vec![]),
        (
            Filter::all().and(Pred::Prefix("host.name", "PAR-".into())),
            vec!["d0", "d3"],
        ),
        (
            Filter::all().and(Pred::Prefix("host.name", String::new())),
            vec!["d0", "d1", "d2", "d3"],
        ),
        (
            Filter::all().and(Pred::Contains(vec!["host.name"], "lt-000".into())),
            vec!["d0", "d2"],
        ),
        (
            Filter::all().and(Pred::Contains(vec!["note", "host.name"], "srv".into())),
            vec!["d1", "d3"],
        ),
        (
            Filter::all().and(Pred::Contains(vec!["note"], "ÉCHEC".into())),
            vec!["d0"],
        ),
        (
            Filter::all().and(Pred::Contains(vec!["note"], "œuvre à ça".into())),
            vec!["d1"],
        ),
        (
            Filter::all().and(Pred::Contains(vec!["note"], "kelvin".into())),
            vec!["d2"],
        ),
        (
            Filter::all().and(Pred::Contains(vec!["note"], "\"hi\" 100%".into())),
            vec!["d3"],
        ),
        (
            Filter::all().and(Pred::Contains(vec!["note"], "e_c".into())),
            vec!["d3"],
        ),
        (
            Filter::all().and(Pred::Contains(vec!["note"], "echec".into())),
            vec![],
        ),
        (Filter::all().and(Pred::Gte("score", 7.5)), vec!["d0", "d2"]),
        (Filter::all().and(Pred::Lte("score", 2.0)), vec!["d1", "d3"]),
        (
            Filter::all().and(Pred::Gte("port", 443.0)),
            vec!["d0", "d2", "d4"],
        ),
        (
            Filter::all().and(Pred::Has("modules", json!("netdiag"))),
            vec!["d0", "d3"],
        ),
        (
            Filter::all().and(Pred::Has("modules", json!("netflow"))),
            vec!["d0", "d1"],
        ),
        (
            Filter::all()
                .and(Pred::Eq("status", json!("online")))
                .and(Pred::Has("modules", json!("netflow"))),
            vec!["d0"],
        ),
        (
            Filter::all()
                .and(Pred::Gte("score", -2.0))
                .and(Pred::Lte("score", 2.0))
                .and(Pred::Ne("status", json!("offline"))),
            vec!["d3"],
        ),
    ];
    for (filter, want) in cases {
        let got = s
            .docs
            .list(ACME, "inv", &filter, None, 100)
            .await
            .expect("list");
        assert_eq!(keys(&got), want, "{filter:?}");
    }
}

async fn predicates_on_fields_of_another_type_select_what_filter_matches_says(s: Stores) {
    // The same field holding values of every JSON type: each predicate selects what
    // `Filter::matches` (the predicates' definition) selects, however the adapter
    // evaluates it.
    let values = [
        json!(1),
        json!(1.0),
        json!("1"),
        json!(true),
        json!(false),
        json!(0),
        json!(null),
        json!("abc"),
        json!("10.5"),
        json!(12),
        json!(["x", 1, true]),
        json!({"x": 1}),
        json!([1]),
        json!("x"),
    ];
    let mut docs: Vec<(String, Value)> = values
        .iter()
        .enumerate()
        .map(|(i, v)| (format!("v{i:02}"), json!({ "f": v })))
        .collect();
    docs.push(("v99".into(), json!({"other": 1})));
    s.docs.put(ACME, "types", docs.clone()).await.expect("put");
    let preds = [
        Pred::Eq("f", json!(1)),
        Pred::Eq("f", json!(true)),
        Pred::Eq("f", json!("1")),
        Pred::Eq("f", json!(null)),
        Pred::Ne("f", json!(1)),
        Pred::Ne("f", json!(false)),
        Pred::Ne("f", json!(null)),
        Pred::In("f", vec![json!(0), json!("x")]),
        Pred::In("f", vec![json!(true)]),
        Pred::Prefix("f", "1".into()),
        Pred::Prefix("f", "a".into()),
        Pred::Contains(vec!["f"], "1".into()),
        Pred::Contains(vec!["f"], "x".into()),
        Pred::Gte("f", 1.0),
        Pred::Gte("f", 0.0),
        Pred::Lte("f", 1.0),
        Pred::Has("f", json!("x")),
        Pred::Has("f", json!(1)),
        Pred::Has("f", json!(true)),
        Pred::Eq("f", json!(["x", 1, true])),
        Pred::Eq("f", json!({"x": 1})),
        Pred::Eq("f", json!("[1]")),
    ];
    let mut wrong = Vec::new();
    for pred in preds {
        let filter = Filter::all().and(pred);
        let got: Vec<String> = s
            .docs
            .list(ACME, "types", &filter, None, 100)
            .await
            .expect("list")
            .into_iter()
            .map(|d| d.key)
            .collect();
        let want: Vec<String> = docs
            .iter()
            .filter(|(_, body)| filter.matches(body))
            .map(|(k, _)| k.clone())
            .collect();
        if got != want {
            wrong.push(format!(
                "{filter:?}: got {got:?}, Filter::matches says {want:?}"
            ));
        }
    }
    assert!(wrong.is_empty(), "\n{}", wrong.join("\n"));
}

async fn a_conditional_put_expecting_absence_fails_once_the_document_exists(s: Stores) {
    s.docs
        .put_if(ACME, "incidents", "42", json!({"n": 1}), Expect::Absent)
        .await
        .expect("first");
    let doc = s.docs.get(ACME, "incidents", "42").await.expect("get");
    let doc = doc.expect("the document");
    assert_eq!((doc.version, &doc.body), (1, &json!({"n": 1})));
    let again = s
        .docs
        .put_if(ACME, "incidents", "42", json!({"n": 2}), Expect::Absent)
        .await;
    assert!(
        matches!(again, Err(StoreError::ConditionFailed)),
        "{again:?}"
    );
    let kept = s.docs.get(ACME, "incidents", "42").await.expect("get");
    assert_eq!(kept, Some(doc), "nothing was written");
    // Any: whatever is there.
    s.docs
        .put_if(ACME, "incidents", "42", json!({"n": 3}), Expect::Any)
        .await
        .expect("any");
    s.docs
        .put_if(ACME, "incidents", "43", json!({"n": 1}), Expect::Any)
        .await
        .expect("any, absent");
    let doc = s.docs.get(ACME, "incidents", "42").await.expect("get");
    assert_eq!(doc.map(|d| (d.version, d.body)), Some((2, json!({"n": 3}))));
}

async fn a_conditional_put_at_the_version_read_raises_it_by_one_and_a_stale_one_fails(s: Stores) {
    s.docs
        .put(
            ACME,
            "incidents",
            vec![("7".into(), json!({"status": "open"}))],
        )
        .await
        .expect("put");
    let read = s.docs.get(ACME, "incidents", "7").await.expect("get");
    let v = read.expect("the document").version;
    s.docs
        .put_if(
            ACME,
            "incidents",
            "7",
            json!({"status": "acknowledged"}),
            Expect::Version(v),
        )
        .await
        .expect("at the version read");
    let doc = s.docs.get(ACME, "incidents", "7").await.expect("get");
    let doc = doc.expect("the document");
    assert_eq!(
        (doc.version, &doc.body),
        (v + 1, &json!({"status": "acknowledged"}))
    );
    // A second change prepared against the same read.
    let stale = s
        .docs
        .put_if(
            ACME,
            "incidents",
            "7",
            json!({"status": "resolved"}),
            Expect::Version(v),
        )
        .await;
    assert!(
        matches!(stale, Err(StoreError::ConditionFailed)),
        "{stale:?}"
    );
    let missing = s
        .docs
        .put_if(ACME, "incidents", "8", json!({}), Expect::Version(1))
        .await;
    assert!(
        matches!(missing, Err(StoreError::ConditionFailed)),
        "a version of a document that is not there: {missing:?}"
    );
    assert_eq!(s.docs.get(ACME, "incidents", "8").await.expect("get"), None);
    let kept = s.docs.get(ACME, "incidents", "7").await.expect("get");
    assert_eq!(kept, Some(doc));
}

async fn an_unconditional_put_makes_a_version_read_before_it_stale(s: Stores) {
    s.docs
        .put_if(ACME, "incidents", "1", json!({"n": 1}), Expect::Absent)
        .await
        .expect("put");
    let read = s.docs.get(ACME, "incidents", "1").await.expect("get");
    let v = read.expect("the document").version;
    // A producer's unconditional put between the read and the conditional change.
    s.docs
        .put(ACME, "incidents", vec![("1".into(), json!({"n": 2}))])
        .await
        .expect("put");
    let late = s
        .docs
        .put_if(ACME, "incidents", "1", json!({"n": 3}), Expect::Version(v))
        .await;
    assert!(matches!(late, Err(StoreError::ConditionFailed)), "{late:?}");
    let doc = s.docs.get(ACME, "incidents", "1").await.expect("get");
    assert_eq!(doc.map(|d| d.body), Some(json!({"n": 2})));
}

async fn read_all_takes_every_matching_document_in_key_order_uncut(s: Stores) {
    let put: Vec<(String, Value)> = (0..300)
        .rev()
        .map(|i| (format!("r{i:04}"), json!({"even": i % 2 == 0})))
        .collect();
    s.docs.put(ACME, "rules", put).await.expect("put");
    let even = Filter::all().and(Pred::Eq("even", json!(true)));
    let all = s.docs.read_all(ACME, "rules", &even).await.expect("read");
    assert!(!all.cut);
    let want: Vec<String> = (0..300).step_by(2).map(|i| format!("r{i:04}")).collect();
    assert_eq!(keys(&all.items), want);
    let every = s
        .docs
        .read_all(ACME, "rules", &Filter::all())
        .await
        .expect("read");
    assert_eq!((every.items.len(), every.cut), (300, false));
    let none = s
        .docs
        .read_all(ACME, "nothing", &Filter::all())
        .await
        .expect("read");
    assert_eq!((none.items.len(), none.cut), (0, false));
}

async fn read_all_stops_at_its_bound_and_says_it_is_cut(s: Stores) {
    let put: Vec<(String, Value)> = (0..=READ_ALL)
        .map(|i| (format!("{i:07}"), json!({"odd": i % 2 == 1})))
        .collect();
    s.docs.put(ACME, "big", put).await.expect("put");
    let all = s
        .docs
        .read_all(ACME, "big", &Filter::all())
        .await
        .expect("read");
    assert!(all.cut, "one more than the bound matched");
    assert_eq!(all.items.len(), READ_ALL);
    assert_eq!(all.items[READ_ALL - 1].key, format!("{:07}", READ_ALL - 1));
    let odd = Filter::all().and(Pred::Eq("odd", json!(true)));
    let half = s.docs.read_all(ACME, "big", &odd).await.expect("read");
    assert_eq!((half.items.len(), half.cut), (READ_ALL / 2, false));
}

async fn live_since_takes_what_is_in_progress_and_what_ended_since(s: Stores) {
    let now = chrono::Utc::now();
    let at = |hours: i64| (now - chrono::Duration::hours(hours)).to_rfc3339();
    let since = now - chrono::Duration::hours(24);
    let doc = |closed: Option<String>| json!({"opened_at": at(100), "closed_at": closed});
    let docs = vec![
        ("open".to_owned(), doc(None)),
        ("old".to_owned(), doc(Some(at(30)))),
        ("edge".to_owned(), doc(Some(since.to_rfc3339()))),
        ("recent".to_owned(), doc(Some(at(2)))),
    ];
    s.docs.put(ACME, "siem_incidents", docs).await.expect("put");
    s.docs
        .put(GLOBEX, "siem_incidents", vec![("theirs".into(), doc(None))])
        .await
        .expect("put");
    // Closing one with a conditional put moves it out of what is in progress.
    let v = s
        .docs
        .get(ACME, "siem_incidents", "recent")
        .await
        .expect("get")
        .expect("doc")
        .version;
    s.docs
        .put_if(
            ACME,
            "siem_incidents",
            "recent",
            doc(Some(at(1))),
            Expect::Version(v),
        )
        .await
        .expect("close");
    let live = |since| {
        let s = s.clone();
        async move {
            let all = s
                .docs
                .live_since(ACME, "siem_incidents", since)
                .await
                .expect("live");
            assert!(!all.cut);
            let mut keys: Vec<String> = all.items.into_iter().map(|d| d.key).collect();
            keys.sort();
            keys
        }
    };
    assert_eq!(live(Some(since)).await, ["edge", "open", "recent"]);
    assert_eq!(live(None).await, ["open"]);
    let refused = s.docs.live_since(ACME, "machines", None).await;
    assert!(
        matches!(refused, Err(StoreError::Data(_))),
        "a collection that does not age out: {refused:?}"
    );
}

async fn documents_of_one_tenant_are_never_seen_by_another(s: Stores) {
    let body = |t: &str| json!({"tenant": t, "status": "open"});
    for t in [ACME, GLOBEX] {
        s.docs
            .put(t, "incidents", vec![("1".into(), body(t))])
            .await
            .expect("put");
    }
    s.docs
        .put(ACME, "incidents", vec![("2".into(), body(ACME))])
        .await
        .expect("put");
    s.docs
        .put(
            ACME,
            "netdiag_alerts",
            vec![("a".into(), json!({"resolved_at": null}))],
        )
        .await
        .expect("put");
    let open = Filter::all().and(Pred::Eq("status", json!("open")));
    let theirs = s
        .docs
        .list(GLOBEX, "incidents", &open, None, 10)
        .await
        .expect("list");
    assert_eq!(keys(&theirs), ["1"]);
    assert_eq!(theirs[0].body, body(GLOBEX));
    assert_eq!(
        s.docs.get(GLOBEX, "incidents", "2").await.expect("get"),
        None
    );
    let many = s
        .docs
        .get_many(GLOBEX, "incidents", &["1".into(), "2".into()])
        .await
        .expect("get");
    assert_eq!(many.len(), 1);
    assert_eq!(many[0].body, body(GLOBEX));
    let all = s
        .docs
        .read_all(GLOBEX, "incidents", &Filter::all())
        .await
        .expect("read");
    assert_eq!(keys(&all.items), ["1"]);
    let live = s
        .docs
        .live_since(GLOBEX, "netdiag_alerts", None)
        .await
        .expect("live");
    assert!(live.items.is_empty());
    // A conditional change of one tenant's document leaves the other's as it is.
    s.docs
        .put_if(
            ACME,
            "incidents",
            "1",
            json!({"status": "closed"}),
            Expect::Any,
        )
        .await
        .expect("put");
    let still = s.docs.get(GLOBEX, "incidents", "1").await.expect("get");
    assert_eq!(still.map(|d| d.body), Some(body(GLOBEX)));
    let absent = s
        .docs
        .put_if(GLOBEX, "incidents", "2", json!({}), Expect::Absent)
        .await;
    assert!(absent.is_ok(), "acme's key 2 is not globex's: {absent:?}");
}
