//! The tenant-level aggregates `/flows/explore` reads when a query names an internal-side
//! dimension (interne, processus, utilisateur), and how they are built from the traffic.
//!
//! The external side of a flow (source, site, destination: every other dimension follows
//! from them) is the key of [`crate::model::CUBE_EXT`]'s rows, which the demo draws from fixed catalogues.
//! The internal side is kept inside those rows, in wide rows
//! ([`netops_shared::store::daily`]): a UTC day of one external key is a row per shard, whose
//! measures `b|<value>` and `f|<value>` (bytes and flows; their hours in the packed rows)
//! name the internal value. Each [`Family`] keeps one projection of the internal side in a
//! series of its own, so that a query reads the values it asks about and no others: the
//! machines alone, the processes alone (no machine in them), the users alone, or, for a
//! query that names two or three of them, the three together (`<machine>|<process>|<user>`:
//! none of them may hold a `|`, which neither a host name, a Windows program nor an account
//! name can).
//!
//! A query over D days reads at most [`SHARDS`] rows per external key and day at hour steps
//! (D+1 days of the packed rows) and [`TOTALS_SHARDS`] at day steps (whole days from the day
//! totals `<series>.d`), matching its filter on the external dimensions; the rows' bytes
//! grow with the distinct internal values it asks about, never with machines ×
//! destinations × processes rows. No row per machine and destination remains (the former
//! `flows.cube`).

use netops_shared::store::Rollup;
use netops_shared::store::daily::{self, DayRows};
use serde_json::Value;

use crate::model::{BYTES, FLOWS};

/// Rows the values of one external key and day are spread over: a value busy every hour
/// takes up to about 2 KB of a packed row (48 hour measures), so a row stays under 400 KB (a
/// store item's limit) up to about 200 values: 64 rows hold a destination that 5,000
/// machines reach at about 160 KB a row.
pub const SHARDS: u32 = 64;

/// Rows the day totals (`<series>.d`) of one external key and day are spread over: a value's
/// day totals take about 100 bytes (two measures), so 8 rows hold some 30,000 values, more
/// than the [`SHARDS`] packed rows do, and a 30-day query reads about a third of the rows it
/// would at 64 (measured on the reference tenant: 232,000 rows of machines over 30 days
/// become 66,000).
pub const TOTALS_SHARDS: u32 = 8;

/// One projection of the internal side: the dimensions it keeps, in the order its values
/// are joined in a measure's name, and its series.
#[derive(Debug, PartialEq, Eq)]
pub struct Family {
    pub series: &'static str,
    pub keys: &'static [&'static str],
}

/// The internal-side dimensions, in the order of [`Fact::inside`].
pub const INSIDE: [&str; 3] = ["i", "pr", "u"];

pub const FAMILIES: [Family; 4] = [
    Family {
        series: "flows.xp.i",
        keys: &["i"],
    },
    Family {
        series: "flows.xp.pr",
        keys: &["pr"],
    },
    Family {
        series: "flows.xp.u",
        keys: &["u"],
    },
    Family {
        series: "flows.xp.ipu",
        keys: &INSIDE,
    },
];

/// The family that serves a query using the internal dimensions `used`: the one that keeps
/// exactly it, or the three together; `None` when it uses none ([`crate::model::CUBE_EXT`] serves it).
pub fn family(used: &[&str]) -> Option<&'static Family> {
    match used {
        [] => None,
        [one] => FAMILIES.iter().find(|f| f.keys == [*one]),
        _ => FAMILIES.last(),
    }
}

/// The value of the dimension `key` in the name's entity of a `family` row, if it keeps it.
pub fn value<'a>(family: &Family, entity: &'a str, key: &str) -> Option<&'a str> {
    let pos = family.keys.iter().position(|k| *k == key)?;
    entity.splitn(family.keys.len(), '|').nth(pos)
}

/// Traffic of one hour between one internal value of each dimension and one external key.
pub struct Fact<'a> {
    /// Start of the hour, ms.
    pub at: i64,
    /// The key of the external side, as in [`crate::model::CUBE_EXT`].
    pub outside: &'a str,
    /// The machine, process and user ([`INSIDE`]).
    pub inside: [&'a str; 3],
    pub bytes: f64,
    pub flows: f64,
}

/// The rows of every family for a batch of traffic, built up one [`Fact`] at a time: the
/// seed feeds it a day's aggregates, a collector the flows it receives, and both add the
/// rows of [`Inside::series`] into the store.
#[derive(Default)]
pub struct Inside {
    rows: [DayRows; 4],
}

impl Inside {
    /// Adds a fact; `dims` gives the external dimensions of its key (called once per key and
    /// day and family).
    pub fn add(&mut self, f: &Fact<'_>, dims: impl Fn() -> Value) {
        for (family, rows) in FAMILIES.iter().zip(&mut self.rows) {
            let entity = match family.keys {
                [one] => {
                    let pos = INSIDE.iter().position(|k| k == one).unwrap_or(0);
                    f.inside[pos].to_owned()
                }
                _ => f.inside.join("|"),
            };
            let (b, fl) = (daily::of(BYTES, &entity), daily::of(FLOWS, &entity));
            rows.add_all(
                f.at,
                &daily::shard(f.outside, &entity, SHARDS),
                &dims,
                [(b.as_str(), f.bytes), (fl.as_str(), f.flows)],
            );
        }
    }

    /// The rows to add, as (series, rows).
    pub fn series(self) -> Vec<(String, Vec<Rollup>)> {
        FAMILIES
            .iter()
            .zip(self.rows)
            .flat_map(|(family, rows)| rows.fold_totals(TOTALS_SHARDS).series(family.series, true))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_query_reads_the_family_of_the_internal_dimensions_it_uses() {
        assert_eq!(family(&[]), None);
        assert_eq!(family(&["pr"]).map(|f| f.series), Some("flows.xp.pr"));
        assert_eq!(family(&["u", "i"]).map(|f| f.series), Some("flows.xp.ipu"));
        let all = family(&["i", "pr"]).expect("the three together");
        assert_eq!(
            value(all, "PC-1|chrome.exe|julie", "pr"),
            Some("chrome.exe")
        );
        assert_eq!(value(all, "PC-1|chrome.exe|julie", "u"), Some("julie"));
        assert_eq!(value(&FAMILIES[1], "chrome.exe", "pr"), Some("chrome.exe"));
        assert_eq!(value(&FAMILIES[1], "chrome.exe", "i"), None);
    }
}
