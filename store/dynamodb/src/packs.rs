//! Packs: the items that hold a series' records in the data table, several records of one
//! partition and one second in one compressed item, spread over [`SHARDS`] item collections
//! per series and UTC day (see `docs/cost-model.md`, "Flows at volume").
//!
//! - **Key**: `pk` is the day bucket and a shard (`<tenant>|S|<series>|<day>|<shard>`), `sk`
//!   the pack's newest record time, then a hash of what identifies the pack (its partition,
//!   its second and its records' times and ids). The same records sent again make the same
//!   pack, which overwrites itself; the shard comes from that hash, so that one partition's
//!   packs of one second (a gateway's thousands of records) spread over every shard.
//! - **Span**: a pack holds records of one second ([`SPAN_MS`], which divides a day): a
//!   reader that has read every pack whose newest time is above a time has every record
//!   above it, and a read resuming from a position reads the packs of its second again at
//!   most.
//! - **Size**: at most [`PACK_RAW`] bytes of JSON before compression (a record alone may be
//!   more), deflated: a few KB an item.
//! - **Replacement**: a record sent again in another grouping is stored twice, in two packs
//!   of one second; the reader keeps the copy of the pack written last (`w`, the write time
//!   in µs), as the port's replacement says.
//! - **Index**: packs carry `gp`/`gs` as the records did, so the `by_partition` index (its
//!   projection unchanged) reads one partition's packs and records of the former layout in
//!   one Query.
//!
//! The former layout (one item per record, `<tenant>|S|<series>|<day>`, attribute `b`) is
//! still read, for the days the series' extent says it may hold (`ol`): see
//! [`super::series`].

use std::collections::{BTreeMap, HashMap};
use std::io::{Read, Write};

use aws_sdk_dynamodb::primitives::Blob;
use aws_sdk_dynamodb::types::AttributeValue;
use flate2::Compression;
use flate2::read::DeflateDecoder;
use flate2::write::DeflateEncoder;
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::item::{Item, bucket_pk, get_json, get_n, get_s, n, partition_pk, s, ts_key};
use netops_store::{Record, StoreError, StoreResult};

/// The item collections a series' day is spread over. At 10,000 records a second of one
/// series, deflated to about 38 bytes each (a gateway's flows), a shard takes about 90
/// write units a second of the 1,000 a partition allows.
pub(super) const SHARDS: u64 = 4;

/// The time a pack spans: records of one pack are in one second.
pub(super) const SPAN_MS: i64 = 1_000;

/// The most JSON a pack holds before compression.
pub(super) const PACK_RAW: usize = 16 * 1024;

/// The most JSON a pack may expand to: a bound on what a reader inflates from one item
/// (DynamoDB items are at most 400 KB, deflate expands at most about 1,000 times).
const INFLATED_MOST: u64 = 8 * 1024 * 1024;

/// The last millisecond of the second of `ms`: no pack holding a record at or before `ms`
/// has its newest record after it.
pub(super) fn span_last(ms: i64) -> i64 {
    (ms - ms.rem_euclid(SPAN_MS)).saturating_add(SPAN_MS - 1)
}

/// The item collection of one shard of a series' day.
pub(super) fn shard_pk(tenant: &str, series: &str, day: i64, shard: u64) -> String {
    format!("{}|{shard}", bucket_pk(tenant, series, day))
}

fn data(e: impl ToString) -> StoreError {
    StoreError::Data(e.to_string())
}

/// The records of one pack, each with its JSON line.
type Pack = Vec<(Record, Vec<u8>)>;

/// The records of `records` (later duplicates of one partition, time and id dropped, the
/// last kept) as packs of one partition and one second, at most [`PACK_RAW`] bytes of JSON
/// each, in a stable order: the same records make the same packs.
fn group(records: Vec<Record>) -> StoreResult<Vec<Pack>> {
    let mut last: HashMap<(String, i64, String), Record> = HashMap::new();
    for r in records {
        last.insert((r.partition.clone(), r.ts, r.id.clone()), r);
    }
    let mut slots: BTreeMap<(String, i64), Vec<Record>> = BTreeMap::new();
    for r in last.into_values() {
        let slot = r.ts.div_euclid(SPAN_MS);
        slots
            .entry((r.partition.clone(), slot))
            .or_default()
            .push(r);
    }
    let mut packs = Vec::new();
    for (_, mut rs) in slots {
        rs.sort_by(|a, b| (a.ts, &a.id).cmp(&(b.ts, &b.id)));
        let mut pack: Pack = Vec::new();
        let mut size = 0;
        for r in rs {
            let line = serde_json::to_vec(&(r.ts, &r.id, &r.body)).map_err(data)?;
            if !pack.is_empty() && size + line.len() > PACK_RAW {
                packs.push(std::mem::take(&mut pack));
                size = 0;
            }
            size += line.len() + 1;
            pack.push((r, line));
        }
        if !pack.is_empty() {
            packs.push(pack);
        }
    }
    Ok(packs)
}

/// The items of `records` in `series`, written at `written` (µs), expiring `retention_secs`
/// after their newest record.
pub(super) fn pack_items(
    tenant: &str,
    series: &str,
    records: Vec<Record>,
    written: i64,
    retention_secs: i64,
) -> StoreResult<Vec<Item>> {
    let mut items = Vec::new();
    for pack in group(records)? {
        let (first, _) = &pack[0];
        let partition = first.partition.clone();
        let newest = pack.iter().map(|(r, _)| r.ts).max().unwrap_or(first.ts);
        let mut hash = Sha256::new();
        hash.update(partition.as_bytes());
        hash.update([0]);
        hash.update(newest.div_euclid(SPAN_MS).to_be_bytes());
        let mut raw = Vec::with_capacity(PACK_RAW);
        raw.push(b'[');
        for (i, (r, line)) in pack.iter().enumerate() {
            hash.update(r.ts.to_be_bytes());
            hash.update(r.id.as_bytes());
            hash.update([0]);
            if i > 0 {
                raw.push(b',');
            }
            raw.extend_from_slice(line);
        }
        raw.push(b']');
        let digest = hash.finalize();
        let mut head = [0u8; 8];
        head.copy_from_slice(&digest[..8]);
        let key = u64::from_be_bytes(head);
        let mut z = DeflateEncoder::new(Vec::new(), Compression::default());
        z.write_all(&raw).map_err(data)?;
        let z = z.finish().map_err(data)?;
        let sk = format!("{}|{key:016x}", ts_key(newest));
        let day = newest.div_euclid(super::item::DAY_MS);
        items.push(HashMap::from([
            (
                "pk".to_owned(),
                s(shard_pk(tenant, series, day, key % SHARDS)),
            ),
            ("sk".to_owned(), s(sk.clone())),
            ("gp".to_owned(), s(partition_pk(tenant, series, &partition))),
            ("gs".to_owned(), s(sk)),
            ("p".to_owned(), s(partition)),
            ("ts".to_owned(), n(newest)),
            ("w".to_owned(), n(written)),
            ("z".to_owned(), AttributeValue::B(Blob::new(z))),
            (
                "ttl".to_owned(),
                n(newest.div_euclid(1000) + retention_secs),
            ),
        ]));
    }
    Ok(items)
}

/// The newest record time of an item, pack or record of the former layout.
pub(super) fn newest_of(item: &Item) -> StoreResult<i64> {
    get_n(item, "ts")
}

/// The records an item holds, and when they were written (0 for the former layout: a
/// record of it is replaced by any pack holding it).
pub(super) fn records_of(item: &Item) -> StoreResult<(i64, Vec<Record>)> {
    let partition = get_s(item, "p")?;
    let Some(AttributeValue::B(z)) = item.get("z") else {
        // The former layout: one record.
        let record = Record {
            partition: partition.to_owned(),
            ts: get_n(item, "ts")?,
            id: get_s(item, "id")?.to_owned(),
            body: get_json(item, "b")?,
        };
        return Ok((0, vec![record]));
    };
    let mut raw = Vec::new();
    DeflateDecoder::new(z.as_ref())
        .take(INFLATED_MOST)
        .read_to_end(&mut raw)
        .map_err(data)?;
    let lines: Vec<(i64, String, Value)> = serde_json::from_slice(&raw).map_err(data)?;
    let records = lines
        .into_iter()
        .map(|(ts, id, body)| Record {
            partition: partition.to_owned(),
            ts,
            id,
            body,
        })
        .collect();
    Ok((get_n(item, "w")?, records))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn record(partition: &str, ts: i64, id: &str, v: i64) -> Record {
        Record {
            partition: partition.into(),
            ts,
            id: id.into(),
            body: json!({"v": v, "pad": "x".repeat(200)}),
        }
    }

    fn key(item: &Item) -> (String, String) {
        (
            get_s(item, "pk").expect("pk").to_owned(),
            get_s(item, "sk").expect("sk").to_owned(),
        )
    }

    #[test]
    fn a_pack_holds_one_partition_and_one_second_and_reads_back() {
        let t = 1_767_225_600_000;
        let records = vec![
            record("m0", t + 5, "a", 1),
            record("m0", t + 999, "b", 2),
            record("m0", t + 1000, "c", 3),
            record("m1", t + 5, "a", 4),
            // Later duplicates replace earlier ones.
            record("m0", t + 5, "a", 5),
        ];
        let items = pack_items("t", "s", records, 7, 100).expect("pack");
        assert_eq!(items.len(), 3);
        let mut got: Vec<(String, i64, String, i64)> = Vec::new();
        for item in &items {
            let (w, rs) = records_of(item).expect("read");
            assert_eq!(w, 7);
            let newest = newest_of(item).expect("ts");
            assert!(
                rs.iter()
                    .all(|r| r.ts <= newest && span_last(r.ts) >= newest)
            );
            assert!(rs.iter().any(|r| r.ts == newest));
            got.extend(
                rs.into_iter()
                    .map(|r| (r.partition, r.ts, r.id, r.body["v"].as_i64().unwrap_or(0))),
            );
        }
        got.sort();
        assert_eq!(
            got,
            [
                ("m0".into(), t + 5, "a".into(), 5),
                ("m0".into(), t + 999, "b".into(), 2),
                ("m0".into(), t + 1000, "c".into(), 3),
                ("m1".into(), t + 5, "a".into(), 4),
            ]
        );
    }

    #[test]
    fn the_same_records_make_the_same_packs_spread_over_the_shards() {
        let t = 1_767_225_600_000;
        // One partition's second of 2,000 records: many packs, on every shard.
        let records: Vec<Record> = (0..2000)
            .map(|i| record("gw", t + i / 2, &format!("r{i:05}"), i))
            .collect();
        let mut reversed = records.clone();
        reversed.reverse();
        let items = pack_items("t", "s", records, 1, 100).expect("pack");
        let again = pack_items("t", "s", reversed, 2, 100).expect("pack");
        let keys: Vec<_> = items.iter().map(key).collect();
        assert_eq!(keys, again.iter().map(key).collect::<Vec<_>>());
        assert!(items.len() >= 20, "{} packs", items.len());
        let shards: std::collections::BTreeSet<String> = keys.iter().map(|k| k.0.clone()).collect();
        assert_eq!(shards.len() as u64, SHARDS);
        // Deflated, a pack is a few KB.
        for item in &items {
            let Some(AttributeValue::B(z)) = item.get("z") else {
                panic!("no pack");
            };
            assert!(z.as_ref().len() < 4096, "{} bytes", z.as_ref().len());
        }
    }

    #[test]
    fn a_second_ends_where_the_next_begins() {
        assert_eq!(span_last(0), 999);
        assert_eq!(span_last(999), 999);
        assert_eq!(span_last(1000), 1999);
        assert_eq!(span_last(i64::MAX - 1), i64::MAX);
        assert_eq!(super::super::item::DAY_MS % SPAN_MS, 0);
    }
}
