//! Hourly aggregates kept one UTC day per rollup row, so that a long window reads a row per
//! day instead of one per hour.
//!
//! A series `<base>` is stored as two rollup series (the layout of the flows tiers, except
//! that the packed rows hold the hours alone, all that is read of them):
//!
//! - `<base>.dh`, one row per UTC day and key (`hour` is the start of the day), whose measure
//!   `n@07` is the value of `n` in the hour 07:00-08:00;
//! - `<base>.d`, the day totals `n`.
//!
//! A measure name may carry an entity after a `|` (`read|julie.martin`, `m|PAR-LT-0004`): its
//! hours are `read@07|julie.martin`. One row then lists the users, machines or addresses of a
//! day (a wide row), which is how a tenant-level aggregate keeps what a ranking or a count of
//! distinct entities needs without a row per entity. [`shard`] spreads the entities of a wide
//! row over a fixed number of keys, so that no row outgrows a store item.
//!
//! Both series only ever add up, as every rollup does: a producer adds the rows of a batch of
//! facts ([`DayRows`]) with [`crate::Rollups::add`], the seed loads them.
//!
//! A window covers the hours that overlap it ([`Span::covering`]), or, for the flows routes,
//! those that start within it ([`Span::starting`]): its whole days are added up from
//! `<base>.d` by the store, its partial days at the edges are read hour by hour from
//! `<base>.dh` ([`sums`]).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use serde_json::Value;

use crate::{Filter, Rollup, Rollups, StoreResult};

pub const HOUR_MS: i64 = 3_600_000;
pub const DAY_MS: i64 = 24 * HOUR_MS;

/// Packed day rows (the hours of a day) of `base`.
pub fn packed(base: &str) -> String {
    format!("{base}.dh")
}

/// Day totals of `base`.
pub fn totals(base: &str) -> String {
    format!("{base}.d")
}

pub fn floor_to(t: i64, step: i64) -> i64 {
    t.div_euclid(step) * step
}

/// First multiple of `step` at or after `t`.
pub fn ceil_to(t: i64, step: i64) -> i64 {
    floor_to(t, step) + if t.rem_euclid(step) == 0 { 0 } else { step }
}

/// The name of a measure of `entity`: `code|entity`.
pub fn of(code: &str, entity: &str) -> String {
    format!("{code}|{entity}")
}

/// Splits `code|entity` (the entity may hold `|` itself); `None` for a measure of no entity.
pub fn entity(name: &str) -> Option<(&str, &str)> {
    name.split_once('|')
}

/// The name of the value of `name` in hour `h` (0-23) of the day: `n@07`, `read@07|julie`.
pub fn at_hour(name: &str, h: i64) -> String {
    match name.split_once('|') {
        Some((code, entity)) => format!("{code}@{h:02}|{entity}"),
        None => format!("{name}@{h:02}"),
    }
}

/// Splits an hour's measure (`n@07`, `read@07|julie`) into its day measure's name and the
/// hour; `None` for a day total.
pub fn split_hour(name: &str) -> Option<(String, i64)> {
    let (code, h, entity) = parts(name)?;
    Some((
        match entity {
            Some(e) => of(code, e),
            None => code.to_owned(),
        },
        h?,
    ))
}

/// Splits a measure's name in place into its code, its hour (in a packed row) and its
/// entity: `read@07|julie` is (`read`, 7, `julie`), `n` is (`n`, none, none); `None` for an
/// hour out of 0-23. For reads of many measures that want no copy of their names.
pub fn parts(name: &str) -> Option<(&str, Option<i64>, Option<&str>)> {
    let (code, entity) = match name.split_once('|') {
        Some((code, entity)) => (code, Some(entity)),
        None => (name, None),
    };
    match code.split_once('@') {
        None => Some((code, None, entity)),
        Some((base, h)) => {
            let h: i64 = h.parse().ok().filter(|h| (0..24).contains(h))?;
            Some((base, Some(h), entity))
        }
    }
}

/// The key of the shard of `entity`, one of `shards`, in a wide row of `group`:
/// `<group>#<n>`. The same entity always lands on the same key (FNV-1a, fixed here), so
/// rows added at different times merge.
pub fn shard(group: &str, entity: &str, shards: u32) -> String {
    let mut h: u32 = 0x811c_9dc5;
    for b in entity.bytes() {
        h ^= u32::from(b);
        h = h.wrapping_mul(0x0100_0193);
    }
    format!("{group}#{}", h % shards.max(1))
}

/// The key of the shard `n % shards` of a [`shard`] key `<group>#<n>`; another key is
/// unchanged.
fn fold(key: &str, shards: u32) -> String {
    match key.rsplit_once('#') {
        Some((group, n)) => match n.parse::<u32>() {
            Ok(n) => format!("{group}#{}", n % shards),
            Err(_) => key.to_owned(),
        },
        None => key.to_owned(),
    }
}

/// The hours a window covers, `[a, b)`, and the whole UTC days among them, `[d0, d1)`
/// (empty when `d0 >= d1`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    pub a: i64,
    pub b: i64,
    pub d0: i64,
    pub d1: i64,
}

impl Span {
    /// The hours that overlap `[from, to)` (ms): from the hour holding `from` to the last
    /// hour starting before `to`.
    pub fn covering(from: i64, to: i64) -> Span {
        Span::of_hours(floor_to(from, HOUR_MS), ceil_to(to, HOUR_MS))
    }

    /// The hours that start within `[from, to)` (ms): from the first hour starting at or
    /// after `from` to the last hour starting before `to`, so that a 31-day window holds
    /// exactly 744 (the windows of the flows aggregates).
    pub fn starting(from: i64, to: i64) -> Span {
        Span::of_hours(ceil_to(from, HOUR_MS), ceil_to(to, HOUR_MS))
    }

    /// The hours `[a, b)` (whole hours) and the whole days among them.
    fn of_hours(a: i64, b: i64) -> Span {
        Span {
            a,
            b,
            d0: ceil_to(a, DAY_MS),
            d1: floor_to(b, DAY_MS),
        }
    }

    /// The starts of its hours.
    pub fn hours(&self) -> impl Iterator<Item = i64> + use<> {
        let (a, b) = (self.a, self.b);
        (0..)
            .map(move |i| a + i * HOUR_MS)
            .take_while(move |h| *h < b)
    }

    /// The ranges of packed rows to read hour by hour: the partial days at the edges, or
    /// every day of the window when it holds no whole day.
    fn edges(&self) -> Vec<(i64, i64)> {
        if self.a >= self.b {
            return Vec::new();
        }
        if self.d0 >= self.d1 {
            return vec![(floor_to(self.a, DAY_MS), self.b)];
        }
        [(self.a, self.d0), (self.d1, self.b)]
            .into_iter()
            .filter(|(from, to)| from < to)
            .map(|(from, to)| (floor_to(from, DAY_MS), to))
            .collect()
    }
}

/// Day rows being built from facts of given hours: [`DayRows::add`] each fact's measures,
/// then [`DayRows::series`] gives the rows of `<base>.dh` and `<base>.d`.
#[derive(Default)]
pub struct DayRows {
    /// (day, key) -> (dimensions, measures).
    rows: HashMap<DayKey, (Arc<Value>, BTreeMap<String, f64>)>,
    /// The shards of a group the day totals keep, when fewer than the packed rows'
    /// ([`DayRows::fold_totals`]).
    totals_shards: Option<u32>,
}

/// The start of a day (ms) and a key.
type DayKey = (i64, String);

impl DayRows {
    /// Adds `value` to the measure `name` of the row of `key` (dimensions `dims`, taken for
    /// the key's first fact of a day) at `at` (ms): to its hour and to the day's total.
    pub fn add(
        &mut self,
        at: i64,
        key: &str,
        dims: impl FnOnce() -> Value,
        name: &str,
        value: f64,
    ) {
        self.add_all(at, key, dims, [(name, value)]);
    }

    /// [`DayRows::add`] of several measures of one key at once.
    pub fn add_all<'n>(
        &mut self,
        at: i64,
        key: &str,
        dims: impl FnOnce() -> Value,
        measures: impl IntoIterator<Item = (&'n str, f64)>,
    ) {
        let day = floor_to(at, DAY_MS);
        let h = (at - day) / HOUR_MS;
        let (_, m) = self
            .rows
            .entry((day, key.to_owned()))
            .or_insert_with(|| (Arc::new(dims()), BTreeMap::new()));
        for (name, value) in measures {
            *m.entry(name.to_owned()).or_insert(0.0) += value;
            *m.entry(at_hour(name, h)).or_insert(0.0) += value;
        }
    }

    /// Keeps the day totals of each group of wide rows ([`shard`]) in `shards` rows, fewer
    /// than its packed rows: the shard `n` of the packed rows is the shard `n % shards` of
    /// the totals. An entity's day total is a measure or two where its packed row holds one
    /// per hour (up to 24 times as many), so fewer rows hold the same entities within an
    /// item's size, and a long window, read from the totals, reads fewer rows. `shards`
    /// must divide the packed rows' shards, so that an entity's totals row is fixed too. The
    /// totals rows then no longer share their packed rows' keys: such a series is read per
    /// entity, not through [`sums`], which matches the two by key.
    pub fn fold_totals(mut self, shards: u32) -> Self {
        self.totals_shards = Some(shards.max(1));
        self
    }

    /// The rows of `<base>.dh` and, with `with_totals`, of `<base>.d`, as (series, rows).
    pub fn series(self, base: &str, with_totals: bool) -> Vec<(String, Vec<Rollup>)> {
        let mut packed_rows = Vec::with_capacity(self.rows.len());
        let mut total_rows: HashMap<DayKey, Rollup> = HashMap::new();
        for ((day, key), (dims, measures)) in self.rows {
            let (hours, day_totals): (BTreeMap<_, _>, BTreeMap<_, _>) = measures
                .into_iter()
                .partition(|(name, _)| split_hour(name).is_some());
            if with_totals {
                let totals_key = match self.totals_shards {
                    Some(shards) => fold(&key, shards),
                    None => key.clone(),
                };
                let row = total_rows
                    .entry((day, totals_key.clone()))
                    .or_insert_with(|| Rollup {
                        hour: day,
                        key: totals_key,
                        dims: dims.clone(),
                        measures: BTreeMap::new(),
                    });
                for (name, v) in day_totals {
                    *row.measures.entry(name).or_insert(0.0) += v;
                }
            }
            packed_rows.push(Rollup {
                hour: day,
                key,
                dims,
                measures: hours,
            });
        }
        let mut out = vec![(packed(base), packed_rows)];
        if with_totals {
            out.push((totals(base), total_rows.into_values().collect()));
        }
        out
    }
}

/// The measures of a packed row over the hours in `[a, b)`, and the start of the latest of
/// those hours that has a measure.
pub fn restrict(row: &Rollup, a: i64, b: i64) -> (BTreeMap<String, f64>, Option<i64>) {
    let mut out = BTreeMap::new();
    let mut last = None;
    for (name, v) in &row.measures {
        if let Some((name, h)) = split_hour(name) {
            let t = row.hour + h * HOUR_MS;
            if t >= a && t < b {
                *out.entry(name).or_insert(0.0) += v;
                last = last.max(Some(t));
            }
        }
    }
    (out, last)
}

/// Every hour's value of a packed row within `[a, b)`: (day measure's name, hour start,
/// value).
pub fn hours_within(row: &Rollup, a: i64, b: i64) -> impl Iterator<Item = (String, i64, f64)> {
    let day = row.hour;
    row.measures.iter().filter_map(move |(name, v)| {
        let (name, h) = split_hour(name)?;
        let t = day + h * HOUR_MS;
        (t >= a && t < b).then_some((name, t, *v))
    })
}

/// The packed rows of `base` of every day the window's hours touch, whole (for answers that
/// list the window hour by hour: see [`hours_within`]).
pub async fn packed_rows(
    rollups: &dyn Rollups,
    tenant: &str,
    base: &str,
    span: Span,
    filter: &Filter,
) -> StoreResult<Vec<Rollup>> {
    if span.a >= span.b {
        return Ok(Vec::new());
    }
    rollups
        .rows(
            tenant,
            &packed(base),
            floor_to(span.a, DAY_MS),
            span.b,
            filter,
        )
        .await
}

/// The measures of `base` over the window, added up per key: the whole days by the store from
/// the totals, the partial days at the edges from the packed rows' hours. One row per key
/// with data in the window, in key order; its `hour` is the start of its latest hour with data
/// when that hour lies in an edge, or of its latest day with data when it lies among the whole
/// days (`span.d0 <= hour < span.d1`).
pub async fn sums(
    rollups: &dyn Rollups,
    tenant: &str,
    base: &str,
    span: Span,
    filter: &Filter,
) -> StoreResult<Vec<Rollup>> {
    let packed = packed(base);
    let edges = span.edges();
    let read_edge = |(from, to): (i64, i64)| {
        let packed = &packed;
        async move { rollups.rows(tenant, packed, from, to, filter).await }
    };
    let whole = async {
        if span.d0 < span.d1 {
            rollups
                .sums_per_key(tenant, &totals(base), span.d0, span.d1, filter)
                .await
        } else {
            Ok(Vec::new())
        }
    };
    let first = async {
        match edges.first() {
            Some(e) => read_edge(*e).await,
            None => Ok(Vec::new()),
        }
    };
    let second = async {
        match edges.get(1) {
            Some(e) => read_edge(*e).await,
            None => Ok(Vec::new()),
        }
    };
    let (whole, first, second) = tokio::try_join!(whole, first, second)?;
    let mut out: BTreeMap<String, Rollup> = whole.into_iter().map(|r| (r.key.clone(), r)).collect();
    for row in first.iter().chain(&second) {
        let (measures, last) = restrict(row, span.a, span.b);
        let Some(last) = last else { continue };
        match out.get_mut(&row.key) {
            Some(sum) => {
                sum.hour = sum.hour.max(last);
                for (name, v) in measures {
                    *sum.measures.entry(name).or_insert(0.0) += v;
                }
            }
            None => {
                out.insert(
                    row.key.clone(),
                    Rollup {
                        hour: last,
                        key: row.key.clone(),
                        dims: row.dims.clone(),
                        measures,
                    },
                );
            }
        }
    }
    Ok(out.into_values().collect())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn names_carry_their_hour_before_the_entity() {
        assert_eq!(at_hour("n", 7), "n@07");
        assert_eq!(at_hour("read|julie@acme.fr", 23), "read@23|julie@acme.fr");
        assert_eq!(split_hour("n@07"), Some(("n".into(), 7)));
        assert_eq!(
            split_hour("read@23|julie@acme.fr"),
            Some(("read|julie@acme.fr".into(), 23))
        );
        assert_eq!(split_hour("read|julie@acme.fr"), None);
        assert_eq!(split_hour("n"), None);
        assert_eq!(split_hour("n@24"), None);
        assert_eq!(parts("b@07|h|p|u"), Some(("b", Some(7), Some("h|p|u"))));
        assert_eq!(parts("b|h"), Some(("b", None, Some("h"))));
        assert_eq!(parts("b"), Some(("b", None, None)));
        assert_eq!(parts("b@x|h"), None);
        assert_eq!(
            entity("b|10.0.0.1|PAR-LT-1"),
            Some(("b", "10.0.0.1|PAR-LT-1"))
        );
        let n = shard("a.fr", "PAR-LT-0001", 4);
        assert!(n.starts_with("a.fr#") && n[5..].parse::<u32>().is_ok_and(|n| n < 4));
        assert_eq!(n[4..], shard("b.fr", "PAR-LT-0001", 4)[4..]);
        assert_eq!(shard("g", "x", 1), "g#0");
    }

    #[test]
    fn a_span_covers_the_hours_overlapping_the_window() {
        let day = DAY_MS;
        // 10:30 on day 1 to 09:15 on day 4: hours 10:00 day 1 .. 09:00 day 4.
        let s = Span::covering(
            day + 10 * HOUR_MS + 1_800_000,
            4 * day + 9 * HOUR_MS + 900_000,
        );
        assert_eq!(
            (s.a, s.b, s.d0, s.d1),
            (day + 10 * HOUR_MS, 4 * day + 10 * HOUR_MS, 2 * day, 4 * day)
        );
        assert_eq!(
            s.edges(),
            vec![(day, 2 * day), (4 * day, 4 * day + 10 * HOUR_MS)]
        );
        assert_eq!(s.hours().count(), 72);
        // The hours starting in the same window: the one holding its start is left out.
        let s = Span::starting(
            day + 10 * HOUR_MS + 1_800_000,
            4 * day + 9 * HOUR_MS + 900_000,
        );
        assert_eq!(
            (s.a, s.b, s.d0, s.d1),
            (day + 11 * HOUR_MS, 4 * day + 10 * HOUR_MS, 2 * day, 4 * day)
        );
        assert_eq!(s.hours().count(), 71);
        assert_eq!(Span::starting(day, 32 * day).hours().count(), 744);
        // Within two days, no whole one: the packed rows of both.
        let s = Span::covering(day + 20 * HOUR_MS, 2 * day + 3 * HOUR_MS);
        assert_eq!(s.edges(), vec![(day, 2 * day + 3 * HOUR_MS)]);
        // Whole days alone.
        let s = Span::covering(day, 3 * day);
        assert_eq!((s.d0, s.d1), (day, 3 * day));
        assert!(s.edges().is_empty());
    }

    #[test]
    fn day_rows_keep_totals_and_hours() {
        let mut rows = DayRows::default();
        let dims = || json!({"g": 1});
        rows.add(DAY_MS + 3 * HOUR_MS + 5, "k", dims, "n", 2.0);
        rows.add_all(DAY_MS + 20 * HOUR_MS, "k", dims, [("n", 3.0), ("u|x", 1.0)]);
        rows.add(2 * DAY_MS, "k", dims, "n", 4.0);
        let series = rows.series("s", true);
        assert_eq!(series[0].0, "s.dh");
        assert_eq!(series[1].0, "s.d");
        let day1 = series[0]
            .1
            .iter()
            .find(|r| r.hour == DAY_MS)
            .expect("day 1");
        let want: BTreeMap<String, f64> = [("n@03", 2.0), ("n@20", 3.0), ("u@20|x", 1.0)]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect();
        assert_eq!(day1.measures, want);
        let totals = series[1]
            .1
            .iter()
            .find(|r| r.hour == DAY_MS)
            .expect("day 1");
        let want: BTreeMap<String, f64> = [("n".into(), 5.0), ("u|x".into(), 1.0)].into();
        assert_eq!(totals.measures, want);
        let (m, last) = restrict(day1, DAY_MS + 4 * HOUR_MS, 3 * DAY_MS);
        assert_eq!(m.get("n"), Some(&3.0));
        assert_eq!(m.get("u|x"), Some(&1.0));
        assert_eq!(last, Some(DAY_MS + 20 * HOUR_MS));
        assert_eq!(
            restrict(day1, 0, DAY_MS + 3 * HOUR_MS),
            (BTreeMap::new(), None)
        );
        let hours: Vec<_> = hours_within(day1, 0, DAY_MS + 4 * HOUR_MS).collect();
        assert_eq!(hours, vec![("n".to_owned(), DAY_MS + 3 * HOUR_MS, 2.0)]);
    }

    #[test]
    fn folded_totals_keep_each_entity_on_a_fixed_row_of_fewer() {
        let mut rows = DayRows::default();
        let users = [
            "julie",
            "marc",
            "léa",
            "SYSTEM",
            "svc-backup",
            "émilie",
            "a",
            "b",
        ];
        for (i, u) in users.iter().enumerate() {
            let name = of("b", u);
            let at = DAY_MS + i as i64 * HOUR_MS;
            rows.add(
                at,
                &shard("g", u, 64),
                || json!({"e": "x"}),
                &name,
                1.0 + i as f64,
            );
            rows.add(
                at + DAY_MS,
                &shard("g", u, 64),
                || json!({"e": "x"}),
                &name,
                10.0,
            );
        }
        let series = rows.fold_totals(4).series("s", true);
        let (packed_rows, totals_rows) = (&series[0].1, &series[1].1);
        // The packed rows keep their shards; each entity's day total sits in the row of its
        // shard modulo 4, whatever the batch that brought it.
        for r in packed_rows {
            for name in r.measures.keys() {
                let (_, _, user) = parts(name).expect("a measure");
                assert_eq!(r.key, shard("g", user.expect("an entity"), 64));
            }
        }
        assert!(totals_rows.len() <= 2 * 4);
        assert!(totals_rows.len() < packed_rows.len(), "{totals_rows:?}");
        for r in totals_rows {
            for name in r.measures.keys() {
                let (_, _, user) = parts(name).expect("a measure");
                assert_eq!(r.key, shard("g", user.expect("an entity"), 4));
                assert_eq!(*r.dims, json!({"e": "x"}));
            }
        }
        let day_total = |day: i64| -> f64 {
            totals_rows
                .iter()
                .filter(|r| r.hour == day)
                .flat_map(|r| r.measures.values())
                .sum()
        };
        assert_eq!(day_total(DAY_MS), (1..=8).sum::<i32>() as f64);
        assert_eq!(day_total(2 * DAY_MS), 80.0);
    }
}
