use std::net::IpAddr;

use super::*;

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap_or_else(|e| panic!("{s}: {e}"))
}

fn build(countries: &str, operators: &str) -> GeoDb {
    let mut b = Builder::new();
    b.add_csv(Source::Country, "countries", countries)
        .expect("countries");
    b.add_csv(Source::Operator, "operators", operators)
        .expect("operators");
    b.notice("test data");
    GeoDb::from_bytes(b.finish()).expect("compiled file")
}

const COUNTRIES: &str = "\
1.0.0.0,1.0.0.255,AU
1.0.1.0,1.0.3.255,cn
1.0.4.0,1.0.7.255,AU
1.0.8.0,1.0.8.255,AU
2001:db8::,2001:db8:ffff:ffff:ffff:ffff:ffff:ffff,FR
255.255.255.0,255.255.255.255,ZZ
";

const OPERATORS: &str = "\
1.0.0.0,1.0.0.255,13335,\"Cloudflare, Inc.\"
1.0.4.0,1.0.7.255,38803,Gtelecom Pty Ltd
1.0.5.0,1.0.9.255,1,Overlapping Ltd
1.0.16.0,1.0.16.255,2519,\"The \"\"Quoted\"\" Company\"
2001:db8:1::,2001:db8:1::ff,64500,Cloudflare, Inc.
";

#[test]
fn a_lookup_finds_the_range_of_the_address_at_both_its_ends_and_nothing_beside() {
    let db = build(COUNTRIES, OPERATORS);
    let place = |s: &str| db.place(ip(s));
    assert_eq!(place("1.0.0.0").country, Some("AU"));
    assert_eq!(place("1.0.0.255").operator, Some("Cloudflare, Inc."));
    assert_eq!(
        place("1.0.1.0").country,
        Some("CN"),
        "codes are stored uppercase"
    );
    assert_eq!(place("1.0.3.255").country, Some("CN"));
    assert_eq!(
        place("1.0.1.7").operator,
        None,
        "a gap between operator ranges"
    );
    assert_eq!(
        place("0.255.255.255"),
        Place::default(),
        "before the first range"
    );
    assert_eq!(place("1.0.9.0").country, None, "after the last range");
    assert_eq!(
        place("255.255.255.255").country,
        Some("ZZ"),
        "the last address"
    );
    assert_eq!(place("1.0.16.9").operator, Some("The \"Quoted\" Company"));
}

#[test]
fn an_overlapping_range_keeps_only_its_part_beyond_the_previous_one() {
    let db = build(COUNTRIES, OPERATORS);
    assert_eq!(db.place(ip("1.0.5.0")).operator, Some("Gtelecom Pty Ltd"));
    assert_eq!(db.place(ip("1.0.8.0")).operator, Some("Overlapping Ltd"));
    assert_eq!(db.place(ip("1.0.10.0")).operator, None);
}

#[test]
fn neighbours_of_one_value_are_one_range_and_names_are_stored_once() {
    let db = build(COUNTRIES, OPERATORS);
    // IPv4 countries: AU (1.0.0.0), CN, AU (1.0.4.0 and 1.0.8.0 merged), gap, ZZ.
    assert_eq!(db.ranges()[0], 5);
    assert_eq!(
        db.names(),
        (4, 4),
        "AU CN FR ZZ; four names, Cloudflare once"
    );
    assert_eq!(db.place(ip("1.0.8.128")).country, Some("AU"));
}

#[test]
fn ipv6_addresses_and_ipv4_mapped_ones_are_found() {
    let db = build(COUNTRIES, OPERATORS);
    let p = db.place(ip("2001:db8:1::80"));
    assert_eq!(p.country, Some("FR"));
    assert_eq!(p.operator, Some("Cloudflare, Inc."));
    assert_eq!(db.place(ip("2001:db8:1::100")).operator, None);
    assert_eq!(db.place(ip("2001:db9::")).country, None);
    assert_eq!(db.place(ip("::ffff:1.0.0.1")).country, Some("AU"));
    assert_eq!(db.place(ip("::1")), Place::default());
}

#[test]
fn a_line_that_cannot_be_read_is_named_with_its_number() {
    for (source, text, why) in [
        (
            Source::Country,
            "1.0.0.0,1.0.0.255,AU\n1.0.1.0,1.0.1.x,AU\n",
            "bad end",
        ),
        (
            Source::Country,
            "1.0.1.0,1.0.0.0,AU\n1.0.1.0,1.0.1.255,AU\n",
            "start after",
        ),
        (
            Source::Country,
            "1.0.0.0,1.0.0.255,AU\n1.0.1.0,::1,AU\n",
            "families",
        ),
        (
            Source::Country,
            "1.0.0.0,1.0.0.255,AU\n1.0.1.0,1.0.1.255,A1\n",
            "two letters",
        ),
        (
            Source::Operator,
            "1.0.0.0,1.0.0.255,1,A\n1.0.1.0,1.0.1.255\n",
            "missing",
        ),
    ] {
        let err = Builder::new()
            .add_csv(source, "t.csv", text)
            .expect_err(text)
            .to_string();
        let line = if why == "start after" { 1 } else { 2 };
        assert!(err.starts_with(&format!("t.csv:{line}: ")), "{err}");
        assert!(err.contains(why), "{err}");
    }
}

#[test]
fn a_long_operator_name_is_cut_at_a_character_boundary() {
    let long = "é".repeat(200);
    let db = build("", &format!("1.0.0.0,1.0.0.255,1,{long}\n"));
    let name = db.place(ip("1.0.0.1")).operator.expect("name");
    assert!(name.len() <= 255 && name.len() >= 254, "{}", name.len());
    assert!(long.starts_with(name));
}

#[test]
fn every_damaged_file_is_refused_without_a_panic() {
    let mut b = Builder::new();
    b.add_csv(Source::Country, "c", COUNTRIES)
        .expect("countries");
    b.add_csv(Source::Operator, "o", OPERATORS)
        .expect("operators");
    let good = b.finish();
    assert!(GeoDb::from_bytes(good.clone()).is_ok());
    for len in 0..good.len() {
        assert!(
            GeoDb::from_bytes(good[..len].to_vec()).is_err(),
            "a file cut at {len} bytes"
        );
    }
    let mut longer = good.clone();
    longer.push(0);
    assert!(GeoDb::from_bytes(longer).is_err(), "trailing bytes");
    let mut other = good.clone();
    other[7] = 2;
    assert!(matches!(GeoDb::from_bytes(other), Err(GeoError::Format)));
    // Every single byte changed: refused, or still answering without a panic.
    for at in MAGIC.len()..good.len() {
        let mut bad = good.clone();
        bad[at] ^= 0xa5;
        if let Ok(db) = GeoDb::from_bytes(bad) {
            for s in [
                "1.0.0.1",
                "1.0.2.2",
                "255.255.255.255",
                "2001:db8:1::1",
                "::",
            ] {
                let _ = db.place(ip(s));
            }
        }
    }
}

#[test]
fn a_value_beyond_the_names_is_refused() {
    // One IPv4 country range whose value names a fourth country of one.
    let mut bytes = MAGIC.to_vec();
    let put = |b: &mut Vec<u8>, n: u32| b.extend_from_slice(&n.to_le_bytes());
    put(&mut bytes, 1);
    put(&mut bytes, 0x0100_0000);
    bytes.push(4);
    for _ in 0..3 {
        put(&mut bytes, 0);
    }
    put(&mut bytes, 1);
    bytes.extend_from_slice(b"AU");
    for _ in 0..3 {
        put(&mut bytes, 0);
    }
    assert!(matches!(
        GeoDb::from_bytes(bytes),
        Err(GeoError::Corrupt("IPv4 countries"))
    ));
}

#[test]
fn the_sample_answers_as_the_pinned_tables_for_the_addresses_it_holds() {
    let db = sample();
    let p = db.place(ip("1.1.1.1"));
    assert_eq!(p.country, Some("AU"));
    assert_eq!(p.operator, Some("Cloudflare, Inc."));
    let p = db.place(ip("212.27.48.10"));
    assert_eq!((p.country, p.operator), (Some("FR"), Some("Free SAS")));
    let p = db.place(ip("2606:4700:4700::1111"));
    assert_eq!(p.operator, Some("Cloudflare, Inc."));
    assert_eq!(db.place(ip("2a01:e0c:1::1")).country, Some("FR"));
    // Documentation ranges are in no table.
    assert_eq!(db.place(ip("198.51.100.201")), Place::default());
    assert!(db.notice().contains("CC BY 4.0") && db.notice().contains("db-ip.com"));
}

#[test]
fn lookups_agree_with_a_scan_of_the_rows_across_prefix_boundaries() {
    // Ranges of every width around the edges of the index's 16-bit prefixes, with gaps.
    let mut rows = Vec::new();
    let mut draw = 0x9e37_79b9_u64;
    let mut next = || {
        draw ^= draw << 13;
        draw ^= draw >> 7;
        draw ^= draw << 17;
        draw
    };
    let mut at: u64 = 0x0100_0000;
    while at < 0xfff0_0000 {
        let width = 1 << (next() % 24);
        let end = (at + width - 1).min(u64::from(u32::MAX));
        if next() % 3 > 0 {
            rows.push((
                at as u32,
                end as u32,
                ["AU", "FR", "US"][(next() % 3) as usize],
            ));
        }
        at = end + 1 + (next() % 2) * (1 << (next() % 18));
    }
    let csv: String = rows
        .iter()
        .map(|(s, e, c)| {
            format!(
                "{},{},{c}\n",
                std::net::Ipv4Addr::from(*s),
                std::net::Ipv4Addr::from(*e)
            )
        })
        .collect();
    let db = build(&csv, "");
    let scan = |ip: u32| rows.iter().find(|r| r.0 <= ip && ip <= r.1).map(|r| r.2);
    for _ in 0..5_000 {
        let ip = next() as u32;
        assert_eq!(
            db.place(IpAddr::from(std::net::Ipv4Addr::from(ip))).country,
            scan(ip),
            "{ip:#x}"
        );
    }
    for (s, e, c) in rows.iter().step_by(7) {
        for ip in [*s, *e] {
            assert_eq!(
                db.place(IpAddr::from(std::net::Ipv4Addr::from(ip))).country,
                Some(*c)
            );
        }
        if *e < u32::MAX {
            assert_eq!(
                db.place(IpAddr::from(std::net::Ipv4Addr::from(e + 1)))
                    .country,
                scan(e + 1)
            );
        }
    }
}
