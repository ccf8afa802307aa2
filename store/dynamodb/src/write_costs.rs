//! What appends of series cost in write units over a DynamoDB-protocol server (moto, skipped
//! without one as [`super::read_costs`]; the test command's server bills writes by item size
//! as DynamoDB does): the packs, their index copies and the extent, per record.

use serde_json::json;

use super::read_costs::store;
use netops_store::usage::Usage;
use netops_store::{Record, SeriesWrite};

/// Midnight UTC of 2026-01-01.
const START: i64 = 1_767_225_600_000;

/// A gateway's flow record as the flows module stores it (about 300 bytes of JSON).
fn flow(partition: &str, ts: i64, i: u32) -> Record {
    Record {
        partition: partition.to_owned(),
        ts,
        id: format!(
            "gw{:016x}",
            u64::from(i).wrapping_mul(0x9e37_79b9_7f4a_7c15)
        ),
        body: json!({"start": ts, "end": ts + 30_000, "exporter": "192.0.2.1",
            "input_if": 1, "output_if": 2, "src_ip": format!("10.99.{}.{}", i % 50, 1 + i % 200 / 50),
            "src_port": 40_000 + i % 20_000, "dst_ip": format!("203.0.113.{}", i % 97),
            "dst_port": 443, "protocol": 6, "bytes": 1000 + i * 37, "packets": 1 + i % 90,
            "gateway": partition, "site": "Lyon", "interface": "wan1"}),
    }
}

#[tokio::test]
async fn records_cost_a_few_hundredths_of_a_write_unit_in_packs() {
    let Some((store, _)) = store().await else {
        return;
    };
    // A gateway's two seconds: 3,000 records of one partition.
    let gateway: Vec<Record> = (0..3000)
        .map(|i| flow("gw1", START + 1000 * i64::from(i % 2), i))
        .collect();
    let (done, gw) = Usage::measure(store.append("t", "flows", gateway)).await;
    done.expect("append");
    // 1,000 machines sending 3 records of one second each: one small pack per machine.
    let machines: Vec<Record> = (0..3000)
        .map(|i| flow(&format!("m{}", i % 1000), START + 5000, i))
        .collect();
    let (done, few) = Usage::measure(store.append("t", "flows", machines)).await;
    done.expect("append");
    let (gw, few) = (gw.write_units / 3000.0, few.write_units / 3000.0);
    eprintln!(
        "write units a record: {gw:.3} for a gateway's second, {few:.3} for 3 records a \
         machine (before packs: 2, the record and its index copy)"
    );
    assert!(gw > 0.0 && gw <= 0.1, "{gw}");
    // A pack of 3 records costs a unit and its index copy another: 2/3 a record.
    assert!(few > gw && few <= 0.7, "{few}");
}
