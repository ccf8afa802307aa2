//! What the geolocation file costs: its size, the time to load and check it, and a lookup's
//! time (IPv4 and IPv6 addresses drawn at random, a fixed seed). Run on the real tables:
//! `netops geo refresh --out netops-geo.bin`, then
//! `NETOPS_GEO_FILE=netops-geo.bin cargo bench -p netops-geo --bench lookup`
//! (without the variable: the checked-in sample). Figures in bench/geo-results.md.

use std::hint::black_box;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::time::Instant;

use netops_geo::GeoDb;

const LOOKUPS: usize = 2_000_000;

/// xorshift64*, seeded: the same addresses on every run.
struct Draw(u64);

impl Draw {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

fn main() {
    let started = Instant::now();
    let db = match std::env::var_os("NETOPS_GEO_FILE") {
        Some(path) => GeoDb::open(path.as_ref()).expect("geolocation file"),
        None => netops_geo::sample(),
    };
    let load = started.elapsed();
    println!(
        "file: {:.2} MB ({:.2} MB in memory), ranges {:?}, names {:?}, loaded and checked in {:.1} ms",
        db.size() as f64 / 1e6,
        db.memory() as f64 / 1e6,
        db.ranges(),
        db.names(),
        load.as_secs_f64() * 1e3
    );
    let mut draw = Draw(0x5eed);
    let v4: Vec<IpAddr> = (0..LOOKUPS)
        .map(|_| Ipv4Addr::from(draw.next() as u32).into())
        .collect();
    // Global unicast IPv6 (2000::/3), where the tables have their ranges.
    let v6: Vec<IpAddr> = (0..LOOKUPS)
        .map(|_| {
            let high = (draw.next() >> 3) | (1 << 61);
            Ipv6Addr::from((u128::from(high) << 64) | u128::from(draw.next())).into()
        })
        .collect();
    for (family, addrs) in [("IPv4", &v4), ("IPv6", &v6)] {
        let started = Instant::now();
        let mut found = 0usize;
        for ip in addrs {
            let p = db.place(black_box(*ip));
            found += usize::from(p.country.is_some()) + usize::from(p.operator.is_some());
        }
        let each = started.elapsed().as_secs_f64() * 1e9 / addrs.len() as f64;
        println!(
            "{family}: {each:.0} ns a lookup (country and operator), {:.0} % of answers known",
            found as f64 * 50.0 / addrs.len() as f64
        );
    }
}
