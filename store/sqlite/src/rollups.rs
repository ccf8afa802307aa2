//! Rollups in the embedded store: the `rollups` table, added up as they are read.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use async_trait::async_trait;
use rusqlite::types::Value as SqlValue;
use rusqlite::{Connection, OptionalExtension, params, params_from_iter};
use serde_json::Value;

use super::SqliteStore;
use super::conn::backend;
use super::sql::{filter_sql, json_text, parse_json, text};
use netops_store::ports::rollups::{BATCHES, Groups, KeepMeasure, KeySums, add_into, pick};
use netops_store::{Filter, Rollup, RollupGroup, Rollups, StoreError, StoreResult};

/// Adds the stored measures `text` (a JSON object of numbers) into `sums`, reading the
/// names in place: a name already there costs no allocation.
fn add_measures(text: &str, sums: &mut BTreeMap<String, f64>) -> StoreResult<()> {
    struct AddInto<'s>(&'s mut BTreeMap<String, f64>);
    impl<'de> serde::de::Visitor<'de> for AddInto<'_> {
        type Value = ();
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("an object of measures")
        }
        fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
            while let Some(name) = map.next_key::<&'de str>()? {
                let v: f64 = map.next_value()?;
                match self.0.get_mut(name) {
                    Some(sum) => *sum += v,
                    None => {
                        self.0.insert(name.to_owned(), v);
                    }
                }
            }
            Ok(())
        }
    }
    let data = |e: serde_json::Error| StoreError::Data(e.to_string());
    if text.contains('\\') {
        // An escaped name cannot be read in place.
        add_into(sums, serde_json::from_str(text).map_err(data)?);
        return Ok(());
    }
    from_json_text(text, AddInto(sums))
}

/// The stored measures `text` (a JSON object of numbers) that `keep` accepts, as a map built
/// at once from the names as read: they are stored in order (written from a map), so the
/// build is one pass, where an insertion per name would search the map each time (a wide row
/// holds hundreds). A name is copied only when kept.
fn measures(text: &str, keep: impl Fn(&str) -> bool) -> StoreResult<BTreeMap<String, f64>> {
    struct Pairs<K>(K);
    impl<'de, K: Fn(&str) -> bool> serde::de::Visitor<'de> for Pairs<K> {
        type Value = Vec<(String, f64)>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("an object of measures")
        }
        fn visit_map<A: serde::de::MapAccess<'de>>(
            self,
            mut map: A,
        ) -> Result<Self::Value, A::Error> {
            let mut out = Vec::with_capacity(map.size_hint().unwrap_or(0));
            while let Some(name) = map.next_key::<&'de str>()? {
                let v: f64 = map.next_value()?;
                if (self.0)(name) {
                    out.push((name.to_owned(), v));
                }
            }
            Ok(out)
        }
    }
    if text.contains('\\') {
        // An escaped name cannot be read in place.
        let mut all: BTreeMap<String, f64> =
            serde_json::from_str(text).map_err(|e| StoreError::Data(e.to_string()))?;
        all.retain(|name, _| keep(name));
        return Ok(all);
    }
    Ok(from_json_text(text, Pairs(keep))?.into_iter().collect())
}

/// The values of the `by` dimensions in the stored dimensions `text` (a JSON object), null
/// where absent: the other dimensions are skipped unread.
fn pick_dims(text: &str, by: &[&str]) -> StoreResult<Vec<Value>> {
    struct Pick<'b>(&'b [&'b str]);
    impl<'de> serde::de::Visitor<'de> for Pick<'_> {
        type Value = Vec<Value>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("an object of dimensions")
        }
        fn visit_map<A: serde::de::MapAccess<'de>>(
            self,
            mut map: A,
        ) -> Result<Vec<Value>, A::Error> {
            let mut out = vec![Value::Null; self.0.len()];
            while let Some(name) = map.next_key::<&'de str>()? {
                match self.0.iter().position(|f| *f == name) {
                    Some(i) => out[i] = map.next_value()?,
                    None => {
                        map.next_value::<serde::de::IgnoredAny>()?;
                    }
                }
            }
            Ok(out)
        }
    }
    if text.contains('\\') {
        // An escaped name cannot be read in place.
        return Ok(pick(&parse_json(text)?, by));
    }
    from_json_text(text, Pick(by))
}

/// Runs `visitor` over the JSON object `text`, which must hold nothing after it.
fn from_json_text<'de, V: serde::de::Visitor<'de>>(
    text: &'de str,
    visitor: V,
) -> StoreResult<V::Value> {
    use serde::Deserializer as _;
    let data = |e: serde_json::Error| StoreError::Data(e.to_string());
    let mut de = serde_json::Deserializer::from_str(text);
    let out = de.deserialize_map(visitor).map_err(data)?;
    de.end().map_err(data)?;
    Ok(out)
}

/// The aggregates of one series over `[from, to)` matching `filter`, in (hour, key) order.
fn rollup_query(
    tenant: &str,
    series: &str,
    from: i64,
    to: i64,
    filter: &Filter,
) -> StoreResult<(String, Vec<SqlValue>)> {
    let mut args = vec![
        SqlValue::Text(tenant.to_owned()),
        SqlValue::Text(series.to_owned()),
        SqlValue::Integer(from),
        SqlValue::Integer(to),
    ];
    let mut sql = String::from(
        "SELECT hour, key, dims, measures FROM rollups WHERE tenant = ? AND series = ? AND hour >= ? AND hour < ?",
    );
    sql.push_str(&filter_sql(filter, "dims", &mut args)?);
    sql.push_str(" ORDER BY hour, key");
    Ok((sql, args))
}

/// Runs a rollup read of [`rollup_query`] and hands `add` each aggregate's hour and key, and
/// its row, whose dimensions (column 2) and measures (column 3) [`text`] reads when wanted.
fn each_rollup(
    c: &Connection,
    sql: &str,
    args: Vec<SqlValue>,
    mut add: impl FnMut(i64, &str, &rusqlite::Row<'_>) -> StoreResult<()>,
) -> StoreResult<()> {
    let mut s = c.prepare_cached(sql).map_err(backend)?;
    let mut rows = s.query(params_from_iter(args)).map_err(backend)?;
    while let Some(r) = rows.next().map_err(backend)? {
        add(r.get(0).map_err(backend)?, text(r, 1)?, r)?;
    }
    Ok(())
}

/// Adds each series' rows into the stored aggregates (or creates them), in the transaction.
fn add_rows(
    tx: &rusqlite::Transaction<'_>,
    tenant: &str,
    series: Vec<(String, Vec<Rollup>)>,
) -> StoreResult<()> {
    let mut get = tx
        .prepare_cached(
            "SELECT measures FROM rollups WHERE tenant = ?1 AND series = ?2 AND hour = ?3 AND key = ?4",
        )
        .map_err(backend)?;
    let mut put = tx
        .prepare_cached(
            "INSERT OR REPLACE INTO rollups (tenant, series, hour, key, dims, measures) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        )
        .map_err(backend)?;
    for (series, rows) in series {
        for row in rows {
            let existing: Option<String> = get
                .query_row(params![tenant, series, row.hour, row.key], |r| r.get(0))
                .optional()
                .map_err(backend)?;
            let mut measures = row.measures;
            if let Some(text) = existing {
                add_measures(&text, &mut measures)?;
            }
            let measures =
                serde_json::to_string(&measures).map_err(|e| StoreError::Data(e.to_string()))?;
            put.execute(params![
                tenant,
                series,
                row.hour,
                row.key,
                json_text(&row.dims),
                measures
            ])
            .map_err(backend)?;
        }
    }
    Ok(())
}

impl SqliteStore {
    /// [`Rollups::rows`], with only the measures `keep` accepts when given.
    async fn read_rows(
        &self,
        tenant: &str,
        series: &str,
        from: i64,
        to: i64,
        filter: &Filter,
        keep: Option<KeepMeasure>,
    ) -> StoreResult<Vec<Rollup>> {
        let (sql, args) = rollup_query(tenant, series, from, to, filter)?;
        self.with(move |c| {
            let mut out = Vec::new();
            // One combination's rows repeat its dimensions: each distinct text is decoded once.
            let mut decoded: HashMap<String, Arc<Value>> = HashMap::new();
            each_rollup(c, &sql, args, |hour, key, r| {
                let dims = text(r, 2)?;
                let dims = match decoded.get(dims) {
                    Some(d) => d.clone(),
                    None => {
                        let d = Arc::new(parse_json(dims)?);
                        decoded.insert(dims.to_owned(), d.clone());
                        d
                    }
                };
                let measures = match &keep {
                    Some(keep) => measures(text(r, 3)?, |name| keep(hour, name))?,
                    None => measures(text(r, 3)?, |_| true)?,
                };
                out.push(Rollup {
                    hour,
                    key: key.to_owned(),
                    dims,
                    measures,
                });
                Ok(())
            })?;
            Ok(out)
        })
        .await
    }
}

#[async_trait]
impl Rollups for SqliteStore {
    async fn add(&self, tenant: &str, series: &str, rows: Vec<Rollup>) -> StoreResult<()> {
        let tenant = tenant.to_owned();
        let series = vec![(series.to_owned(), rows)];
        self.with_write(move |tx| add_rows(tx, &tenant, series))
            .await
    }

    async fn add_once(
        &self,
        tenant: &str,
        marker: Rollup,
        series: Vec<(String, Vec<Rollup>)>,
    ) -> StoreResult<bool> {
        let tenant = tenant.to_owned();
        self.with_write(move |tx| {
            let done: Option<i64> = tx
                .prepare_cached(
                    "SELECT 1 FROM rollups WHERE tenant = ?1 AND series = ?2 AND hour = ?3 AND key = ?4",
                )
                .and_then(|mut s| {
                    s.query_row(params![tenant, BATCHES, marker.hour, marker.key], |r| {
                        r.get(0)
                    })
                    .optional()
                })
                .map_err(backend)?;
            if done.is_some() {
                return Ok(false);
            }
            add_rows(tx, &tenant, series)?;
            add_rows(tx, &tenant, vec![(BATCHES.to_owned(), vec![marker])])?;
            Ok(true)
        })
        .await
    }

    async fn rows(
        &self,
        tenant: &str,
        series: &str,
        from: i64,
        to: i64,
        filter: &Filter,
    ) -> StoreResult<Vec<Rollup>> {
        self.read_rows(tenant, series, from, to, filter, None).await
    }

    async fn rows_keeping(
        &self,
        tenant: &str,
        series: &str,
        from: i64,
        to: i64,
        filter: &Filter,
        keep: KeepMeasure,
    ) -> StoreResult<Vec<Rollup>> {
        self.read_rows(tenant, series, from, to, filter, Some(keep))
            .await
    }

    async fn sums_per_key(
        &self,
        tenant: &str,
        series: &str,
        from: i64,
        to: i64,
        filter: &Filter,
    ) -> StoreResult<Vec<Rollup>> {
        let (sql, args) = rollup_query(tenant, series, from, to, filter)?;
        self.with(move |c| {
            let mut sums = KeySums::default();
            // Added up as they are read: no row is kept, and a key's dimensions are decoded
            // once.
            each_rollup(c, &sql, args, |hour, key, r| {
                sums.add(
                    hour,
                    key,
                    || Ok(Arc::new(parse_json(text(r, 2)?)?)),
                    |into| add_measures(text(r, 3)?, into),
                )
            })?;
            Ok(sums.into_rows())
        })
        .await
    }

    async fn sums_per_group(
        &self,
        tenant: &str,
        series: &str,
        from: i64,
        to: i64,
        filter: &Filter,
        by: &[&str],
    ) -> StoreResult<Vec<RollupGroup>> {
        let (sql, args) = rollup_query(tenant, series, from, to, filter)?;
        let by: Vec<String> = by.iter().map(|f| f.to_string()).collect();
        self.with(move |c| {
            let by: Vec<&str> = by.iter().map(String::as_str).collect();
            let mut groups = Groups::new(&by);
            // As sums_per_key, and a key's grouping dimensions are picked from its text once.
            each_rollup(c, &sql, args, |hour, key, r| {
                groups.add(
                    hour,
                    key,
                    |by| pick_dims(text(r, 2)?, by),
                    |into| add_measures(text(r, 3)?, into),
                )
            })?;
            Ok(groups.into_groups())
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::testing::store;
    use netops_store::Pred;

    #[tokio::test]
    async fn rollups_add_up() {
        let (_d, s) = store();
        let row = |b: f64| Rollup {
            hour: 3_600_000,
            key: "tcp".into(),
            dims: json!({"proto": "TCP"}).into(),
            measures: [("bytes".to_string(), b)].into_iter().collect(),
        };
        s.add("a", "f", vec![row(2.0)]).await.expect("add");
        s.add("a", "f", vec![row(3.0)]).await.expect("add");
        let rows = s
            .rows(
                "a",
                "f",
                0,
                i64::MAX,
                &Filter::all().and(Pred::Eq("proto", json!("TCP"))),
            )
            .await
            .expect("read");
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].measures["bytes"], 5.0);
        s.add(
            "a",
            "f",
            vec![Rollup {
                measures: [("flows".to_string(), 1.0)].into(),
                ..row(0.0)
            }],
        )
        .await
        .expect("add");
        let kept = s
            .rows_keeping(
                "a",
                "f",
                0,
                i64::MAX,
                &Filter::all(),
                Arc::new(|hour, name| hour == 3_600_000 && name == "flows"),
            )
            .await
            .expect("read");
        let want: BTreeMap<String, f64> = [("flows".to_string(), 1.0)].into();
        assert_eq!(kept.len(), 1);
        assert_eq!(kept[0].measures, want);
    }

    #[test]
    fn measures_add_in_place_and_escaped_names_still_count() {
        let mut sums: BTreeMap<String, f64> = [("b".to_string(), 1.0)].into();
        add_measures(r#"{"b": 2.5, "f": 3}"#, &mut sums).expect("plain");
        add_measures(r#"{"b": 1, "q\"x": 4}"#, &mut sums).expect("escaped");
        let want: BTreeMap<String, f64> = [
            ("b".to_string(), 4.5),
            ("f".to_string(), 3.0),
            ("q\"x".to_string(), 4.0),
        ]
        .into();
        assert_eq!(sums, want);
        assert!(add_measures(r#"{"b": "x"}"#, &mut sums).is_err());
        assert!(add_measures(r#"{"b": 1} trailing"#, &mut sums).is_err());
    }

    #[test]
    fn measures_read_in_any_order_with_escaped_names() {
        let want: BTreeMap<String, f64> = [
            ("b@07|PC-1".to_string(), 2.0),
            ("f".to_string(), 3.0),
            ("q\"x".to_string(), 4.0),
        ]
        .into();
        assert_eq!(
            measures(r#"{"q\"x": 4, "f": 3, "b@07|PC-1": 2}"#, |_| true).expect("read"),
            want
        );
        assert_eq!(measures("{}", |_| true).expect("empty"), BTreeMap::new());
        assert!(measures(r#"{"b": "x"}"#, |_| true).is_err());
        assert!(measures(r#"{"b": 1} trailing"#, |_| true).is_err());
        // Only the kept names, whether read in place or escaped.
        let kept = |name: &str| name.starts_with('b');
        let want: BTreeMap<String, f64> = [("b@07|PC-1".to_string(), 2.0)].into();
        assert_eq!(
            measures(r#"{"b@07|PC-1": 2, "f@07|PC-1": 3}"#, kept).expect("read"),
            want
        );
        assert_eq!(
            measures(r#"{"b@07|PC-1": 2, "q\"x": 4}"#, kept).expect("escaped"),
            want
        );
    }

    #[tokio::test]
    async fn sums_per_key_add_up_within_the_window() {
        let (_d, s) = store();
        let row = |hour: i64, key: &str, proto: &str, m: &[(&str, f64)]| Rollup {
            hour,
            key: key.into(),
            dims: json!({"proto": proto}).into(),
            measures: m.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
        };
        s.add(
            "a",
            "f",
            vec![
                row(1, "udp", "UDP", &[("bytes", 1.0)]),
                row(2, "tcp", "TCP", &[("bytes", 2.0), ("flows", 1.0)]),
                row(3, "tcp", "TCP", &[("bytes", 4.0)]),
                row(3, "udp", "UDP", &[("bytes", 8.0), ("flows", 2.0)]),
                row(9, "tcp", "TCP", &[("bytes", 16.0)]),
            ],
        )
        .await
        .expect("add");
        s.add("b", "f", vec![row(2, "tcp", "TCP", &[("bytes", 32.0)])])
            .await
            .expect("add");
        let sums = s
            .sums_per_key("a", "f", 1, 9, &Filter::all())
            .await
            .expect("sums");
        let got: Vec<_> = sums
            .iter()
            .map(|r| (r.key.as_str(), r.hour, r.dims["proto"].clone(), &r.measures))
            .collect();
        let tcp = [("bytes".to_string(), 6.0), ("flows".to_string(), 1.0)].into();
        let udp = [("bytes".to_string(), 9.0), ("flows".to_string(), 2.0)].into();
        assert_eq!(
            got,
            vec![
                ("tcp", 3, json!("TCP"), &tcp),
                ("udp", 3, json!("UDP"), &udp)
            ]
        );
        let udp_only = s
            .sums_per_key(
                "a",
                "f",
                0,
                100,
                &Filter::all().and(Pred::Eq("proto", json!("UDP"))),
            )
            .await
            .expect("sums");
        assert_eq!(udp_only.len(), 1);
        assert_eq!(udp_only[0].measures, udp);
    }

    #[test]
    fn grouping_dimensions_are_picked_from_the_text() {
        let by = ["domain", "site"];
        assert_eq!(
            pick_dims(
                r#"{"machine": "pc-1", "domain": "a.fr", "n": [1, {"x": 2}]}"#,
                &by
            )
            .expect("pick"),
            vec![json!("a.fr"), Value::Null]
        );
        assert_eq!(
            pick_dims(r#"{"site": 3, "dom\u0061in": "b\"c"}"#, &by).expect("escaped"),
            vec![json!("b\"c"), json!(3)]
        );
        assert!(pick_dims(r#"["domain"]"#, &by).is_err());
        assert!(pick_dims(r#"{"domain": "a"} trailing"#, &by).is_err());
    }

    #[tokio::test]
    async fn sums_per_group_add_up_keys_sharing_the_grouping_dimensions() {
        let (_d, s) = store();
        let row = |hour: i64, machine: &str, domain: &str, n: f64| Rollup {
            hour,
            key: format!("{machine}|{domain}"),
            dims: json!({"machine": machine, "domain": domain}).into(),
            measures: [("queries".to_string(), n)].into(),
        };
        s.add(
            "a",
            "d",
            vec![
                row(1, "pc-1", "b.fr", 1.0),
                row(2, "pc-1", "a.fr", 2.0),
                row(2, "pc-2", "a.fr", 4.0),
                row(3, "pc-1", "a.fr", 8.0),
                row(9, "pc-3", "a.fr", 16.0),
            ],
        )
        .await
        .expect("add");
        s.add("b", "d", vec![row(2, "pc-9", "a.fr", 32.0)])
            .await
            .expect("add");
        let got: Vec<_> = s
            .sums_per_group("a", "d", 1, 9, &Filter::all(), &["domain"])
            .await
            .expect("groups")
            .into_iter()
            .map(|g| (g.dims, g.keys, g.hour, g.measures["queries"]))
            .collect();
        assert_eq!(
            got,
            vec![
                (vec![json!("a.fr")], 2, 3, 14.0),
                (vec![json!("b.fr")], 1, 1, 1.0)
            ]
        );
        let one = s
            .sums_per_group(
                "a",
                "d",
                0,
                100,
                &Filter::all().and(Pred::Eq("machine", json!("pc-1"))),
                &["domain", "site"],
            )
            .await
            .expect("groups");
        let got: Vec<_> = one.iter().map(|g| (&g.dims, g.keys)).collect();
        assert_eq!(
            got,
            vec![
                (&vec![json!("a.fr"), Value::Null], 1),
                (&vec![json!("b.fr"), Value::Null], 1)
            ]
        );
    }
}
