//! How the hourly aggregates are laid out, and read over long windows fast.
//!
//! The flows aggregates keep every hour, but pack one UTC day of one combination of
//! dimensions into one rollup row (the row's `hour` is the start of the day): the measure
//! `bytes` is the day's total and `bytes@07` the value of the hour 07:00-08:00. Measures
//! still add up, so rows merge like any rollup. A 31-day window then reads about 31 rows per
//! combination instead of 744. For the biggest reads a second series `<name>.d` holds the
//! day totals only, so whole days cost no hour parsing; the partial days at the window's
//! edges are read from the packed rows `<name>.dh` hour by hour.
//!
//! A window counts the hours that *start* inside it ([`Span::starting`]), so a 31-day window
//! has exactly 744.

use std::collections::BTreeMap;

use netops_shared::store::daily::{DAY_MS, HOUR_MS, Span, floor_to, packed, totals};
use netops_shared::store::{Filter, Rollup, Rollups, StoreResult};

use crate::model::{Direction, Protocol};

/// The per-protocol, per-direction parts of the aggregates.
pub const PARTS: [(Protocol, Direction); 4] = [
    (Protocol::Tcp, Direction::Inbound),
    (Protocol::Tcp, Direction::Outbound),
    (Protocol::Udp, Direction::Inbound),
    (Protocol::Udp, Direction::Outbound),
];

/// `TI`, `TO`, `UI`, `UO`: protocol and direction of a part.
fn part_code(proto: Protocol, dir: Direction) -> &'static str {
    match (proto, dir) {
        (Protocol::Tcp, Direction::Inbound) => "TI",
        (Protocol::Tcp, Direction::Outbound) => "TO",
        (Protocol::Udp, Direction::Inbound) => "UI",
        (Protocol::Udp, Direction::Outbound) => "UO",
    }
}

/// Measure names (short: they repeat in every stored row) of the per-protocol,
/// per-direction parts: bytes `b.TO`, flows `f.TO`.
pub fn part_keys(proto: Protocol, dir: Direction) -> (String, String) {
    (
        format!("b.{}", part_code(proto, dir)),
        format!("f.{}", part_code(proto, dir)),
    )
}

/// Name of the measure `name` for hour `h` (0-23) of the day.
pub fn at_hour(name: &str, h: i64) -> String {
    format!("{name}@{h:02}")
}

/// Splits `bytes@07` into (`bytes`, 7).
pub fn split_hour(key: &str) -> Option<(&str, i64)> {
    let (name, h) = key.split_once('@')?;
    Some((name, h.parse().ok()?))
}

/// The measures of a packed row restricted to the hours in `[a, b)`.
pub fn restrict(row: &Rollup, a: i64, b: i64) -> BTreeMap<String, f64> {
    if row.hour >= a && row.hour + DAY_MS <= b {
        return row
            .measures
            .iter()
            .filter(|(k, _)| !k.contains('@'))
            .map(|(k, v)| (k.clone(), *v))
            .collect();
    }
    let mut out = BTreeMap::new();
    for (k, v) in &row.measures {
        if let Some((name, h)) = split_hour(k) {
            let t = row.hour + h * HOUR_MS;
            if t >= a && t < b {
                *out.entry(name.to_owned()).or_insert(0.0) += v;
            }
        }
    }
    out
}

/// Hour-by-hour values of a packed row: (measure, hour start, value).
pub fn hours(row: &Rollup) -> impl Iterator<Item = (&str, i64, f64)> {
    row.measures
        .iter()
        .filter_map(|(k, v)| split_hour(k).map(|(name, h)| (name, row.hour + h * HOUR_MS, *v)))
}

/// Every aggregate of `base` over the hours starting in `[from, to)`, its measures restricted
/// to the window: the whole days added up per combination by the store (from the totals
/// series with `fast`), then one row per day and combination for the partial days at the
/// edges. For reads that want totals over the window.
pub async fn read(
    rollups: &dyn Rollups,
    tenant: &str,
    base: &str,
    from: i64,
    to: i64,
    filter: &Filter,
    fast: bool,
) -> StoreResult<Vec<Rollup>> {
    let Span { a, b, d0, d1 } = Span::starting(from, to);
    if a >= b {
        return Ok(Vec::new());
    }
    let edge = |from: i64, to: i64| async move {
        if from >= to {
            return Ok(Vec::new());
        }
        let mut rows = rollups
            .rows(tenant, &packed(base), from, to, filter)
            .await?;
        for row in &mut rows {
            row.measures = restrict(row, a, b);
        }
        Ok(rows)
    };
    let mut rows = if d0 < d1 {
        let whole = if fast { totals(base) } else { packed(base) };
        let (mut days, before, after) = tokio::try_join!(
            rollups.sums_per_key(tenant, &whole, d0, d1, filter),
            edge(floor_to(a, DAY_MS), d0),
            edge(d1, b),
        )?;
        // Packed rows add their hours up too: only the day totals count here.
        for row in &mut days {
            row.measures.retain(|k, _| !k.contains('@'));
        }
        days.extend(before);
        days.extend(after);
        days
    } else {
        edge(floor_to(a, DAY_MS), b).await?
    };
    rows.retain(|r| !r.measures.is_empty());
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn row(day: i64, m: &[(&str, f64)]) -> Rollup {
        Rollup {
            hour: day,
            key: "k".into(),
            dims: json!({}).into(),
            measures: m.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
        }
    }

    #[test]
    fn whole_days_use_totals_and_edges_their_hours() {
        let day = DAY_MS;
        let r = row(
            day,
            &[("bytes", 10.0), ("bytes@03", 4.0), ("bytes@20", 6.0)],
        );
        assert_eq!(restrict(&r, day, 2 * day)["bytes"], 10.0);
        assert_eq!(restrict(&r, day + 4 * HOUR_MS, 3 * day)["bytes"], 6.0);
        assert_eq!(restrict(&r, 0, day + 4 * HOUR_MS)["bytes"], 4.0);
        assert!(restrict(&r, day + 4 * HOUR_MS, day + 20 * HOUR_MS).is_empty());
        let hs: Vec<_> = hours(&r).collect();
        assert_eq!(
            hs,
            vec![
                ("bytes", day + 3 * HOUR_MS, 4.0),
                ("bytes", day + 20 * HOUR_MS, 6.0)
            ]
        );
    }
}
