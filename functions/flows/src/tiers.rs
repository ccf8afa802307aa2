//! Reading hourly aggregates over long windows fast.
//!
//! Each aggregate is stored twice: hourly rows in `<name>.h` and their daily sums in
//! `<name>.d` (the row's `hour` is then the start of the UTC day). A window counts the hours
//! that start inside it; the days it covers entirely are read from the daily tier and only
//! the hours at its two edges from the hourly tier, so 31 days cost about 31 + 46 buckets
//! instead of 744. The result is the same as summing the hourly rows.

use netops_shared::store::{DynStore, Filter, Rollup, StoreResult};

pub const HOUR_MS: i64 = 3_600_000;
pub const DAY_MS: i64 = 24 * HOUR_MS;

pub fn hour_series(base: &str) -> String {
    format!("{base}.h")
}

pub fn day_series(base: &str) -> String {
    format!("{base}.d")
}

/// First multiple of `step` at or after `t`.
pub fn ceil_to(t: i64, step: i64) -> i64 {
    t.div_euclid(step) * step + if t.rem_euclid(step) == 0 { 0 } else { step }
}

/// Ranges to read: (tier is daily, from, to) over bucket starts, hourly for the edges.
pub fn plan(from: i64, to: i64) -> Vec<(bool, i64, i64)> {
    // Hours h with from <= h < to are exactly the hours in [a, b).
    let (a, b) = (ceil_to(from, HOUR_MS), ceil_to(to, HOUR_MS));
    if a >= b {
        return Vec::new();
    }
    let (d0, d1) = (ceil_to(a, DAY_MS), b.div_euclid(DAY_MS) * DAY_MS);
    if d0 >= d1 {
        return vec![(false, a, b)];
    }
    let mut out = Vec::new();
    if a < d0 {
        out.push((false, a, d0));
    }
    out.push((true, d0, d1));
    if d1 < b {
        out.push((false, d1, b));
    }
    out
}

/// Every aggregate of `base` over the hours starting in `[from, to)`, daily rows for whole
/// days and hourly rows at the edges.
pub async fn read(
    store: &DynStore,
    tenant: &str,
    base: &str,
    from: i64,
    to: i64,
    filter: &Filter,
) -> StoreResult<Vec<Rollup>> {
    let mut out = Vec::new();
    for (daily, a, b) in plan(from, to) {
        let series = if daily {
            day_series(base)
        } else {
            hour_series(base)
        };
        out.extend(store.rollups(tenant, &series, a, b, filter).await?);
    }
    Ok(out)
}

/// Only the hourly tier (for hour-by-hour series).
pub async fn read_hourly(
    store: &DynStore,
    tenant: &str,
    base: &str,
    from: i64,
    to: i64,
    filter: &Filter,
) -> StoreResult<Vec<Rollup>> {
    store
        .rollups(tenant, &hour_series(base), from, to, filter)
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plans_whole_days_and_hourly_edges() {
        let day = DAY_MS;
        // 10:30 on day 1 to 09:15 on day 4.
        let from = day + 10 * HOUR_MS + 30 * 60_000;
        let to = 4 * day + 9 * HOUR_MS + 15 * 60_000;
        assert_eq!(
            plan(from, to),
            vec![
                (false, day + 11 * HOUR_MS, 2 * day),
                (true, 2 * day, 4 * day),
                (false, 4 * day, 4 * day + 10 * HOUR_MS)
            ]
        );
        // Within one day: hourly only.
        assert_eq!(plan_len(day + HOUR_MS, day + 5 * HOUR_MS), 1);
        // Aligned bounds: days only.
        assert_eq!(plan(2 * day, 5 * day), vec![(true, 2 * day, 5 * day)]);
        assert!(plan(5, 5).is_empty());
    }

    fn plan_len(a: i64, b: i64) -> usize {
        plan(a, b).len()
    }
}
