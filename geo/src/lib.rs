//! netops-geo: the country and network operator (AS name) of an IP address, as flows are
//! stored with them (spec, flows explorer: "a third-party geolocation dataset under a CC BY
//! 4.0 licence"; docs/geolocation.md).
//!
//! The data is a compact file compiled by `netops geo refresh` from the pinned CSV tables of
//! the ip-location-db packages ([`compile`]): four tables of sorted range starts (countries
//! and operators, IPv4 and IPv6), each start with the value that holds up to the next one,
//! the country codes and the deduplicated operator names. [`GeoDb::open`] reads it whole,
//! checks every offset, order and index once, and then answers a lookup with a binary search
//! over the bytes as they are, narrowed by an index of the keys' top 16 bits built at load:
//! no parsing, no allocation; the memory used is the file's size and 1 MiB of indexes.

pub mod compile;

use std::net::IpAddr;
use std::path::Path;

pub use compile::{Builder, Source};

/// The file's first bytes; the last one is the format's version.
pub const MAGIC: &[u8; 8] = b"NOPGEO\x00\x01";

/// The largest file [`GeoDb::open`] reads (the pinned tables compile to about 20 MB).
pub const MAX_FILE_BYTES: u64 = 256 << 20;

/// Why a file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum GeoError {
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("not a netops geolocation file (or of another format version)")]
    Format,
    #[error("geolocation file truncated or inconsistent: {0}")]
    Corrupt(&'static str),
    #[error("geolocation file larger than {MAX_FILE_BYTES} bytes")]
    TooLarge,
    #[error("{0}")]
    Source(String),
}

/// Country and operator of an address, each `None` when the data does not cover it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Place<'a> {
    /// ISO 3166-1 alpha-2 code.
    pub country: Option<&'a str>,
    /// The name of the autonomous system announcing the address.
    pub operator: Option<&'a str>,
}

/// One table of ranges: `count` starts of `key` bytes each, then `count` values of `value`
/// bytes each, little-endian.
#[derive(Debug, Clone)]
struct Table {
    starts: usize,
    values: usize,
    count: usize,
    key: usize,
    value: usize,
    /// Built at load: `index[p]` is the first start whose top 16 bits are `p` or more, so a
    /// lookup searches only the starts of its own top 16 bits (a few, instead of 20 steps
    /// over the whole table, most of them cache misses). 256 KiB a table.
    index: Vec<u32>,
}

/// Entries of a table's index: one per value of a key's top 16 bits, and the end.
const INDEX_LEN: usize = (1 << 16) + 1;

/// A loaded geolocation file.
pub struct GeoDb {
    bytes: Box<[u8]>,
    country_v4: Table,
    country_v6: Table,
    operator_v4: Table,
    operator_v6: Table,
    /// Offset of the country codes, two ASCII letters each.
    countries: usize,
    country_count: usize,
    /// Offsets of the names' ends (u32 each, the first name starts at `names`).
    name_ends: usize,
    name_count: usize,
    names: usize,
    notice: (usize, usize),
}

impl std::fmt::Debug for GeoDb {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GeoDb")
            .field("bytes", &self.bytes.len())
            .field("ranges", &self.ranges())
            .field("operators", &self.name_count)
            .finish()
    }
}

/// Reads the file's sections in order, checking each fits.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn take(&mut self, len: usize, what: &'static str) -> Result<usize, GeoError> {
        let start = self.at;
        let end = start
            .checked_add(len)
            .filter(|&e| e <= self.bytes.len())
            .ok_or(GeoError::Corrupt(what))?;
        self.at = end;
        Ok(start)
    }

    fn count(&mut self, what: &'static str) -> Result<usize, GeoError> {
        let at = self.take(4, what)?;
        Ok(u32_at(self.bytes, at) as usize)
    }

    fn table(&mut self, key: usize, value: usize, what: &'static str) -> Result<Table, GeoError> {
        let count = self.count(what)?;
        let starts = self.take(count.checked_mul(key).ok_or(GeoError::Corrupt(what))?, what)?;
        let values = self.take(
            count.checked_mul(value).ok_or(GeoError::Corrupt(what))?,
            what,
        )?;
        Ok(Table {
            starts,
            values,
            count,
            key,
            value,
            index: Vec::new(),
        })
    }
}

fn u32_at(bytes: &[u8], at: usize) -> u32 {
    let mut b = [0; 4];
    b.copy_from_slice(&bytes[at..at + 4]);
    u32::from_le_bytes(b)
}

fn u128_at(bytes: &[u8], at: usize) -> u128 {
    let mut b = [0; 16];
    b.copy_from_slice(&bytes[at..at + 16]);
    u128::from_le_bytes(b)
}

impl Table {
    fn start(&self, bytes: &[u8], i: usize) -> u128 {
        let at = self.starts + i * self.key;
        if self.key == 4 {
            u128::from(u32_at(bytes, at))
        } else {
            u128_at(bytes, at)
        }
    }

    fn value(&self, bytes: &[u8], i: usize) -> u32 {
        let at = self.values + i * self.value;
        if self.value == 1 {
            u32::from(bytes[at])
        } else {
            u32_at(bytes, at)
        }
    }

    /// How far a key is shifted to its top 16 bits.
    fn shift(&self) -> u32 {
        (self.key * 8 - 16) as u32
    }

    /// The value of the range holding `key` (0: none): the last start at or below it. Every
    /// start before `index[p]` is below the key and every one from `index[p + 1]` above it,
    /// so the search stays between the two.
    fn find(&self, bytes: &[u8], key: u128) -> u32 {
        let p = (key >> self.shift()) as usize;
        let (mut lo, mut hi) = (self.index[p] as usize, self.index[p + 1] as usize);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.start(bytes, mid) <= key {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        if lo == 0 {
            0
        } else {
            self.value(bytes, lo - 1)
        }
    }

    /// Checks the starts strictly increasing and the values at most `limit`, and builds the
    /// index.
    fn check(&mut self, bytes: &[u8], limit: usize, what: &'static str) -> Result<(), GeoError> {
        let mut index = Vec::with_capacity(INDEX_LEN);
        let mut previous = None;
        for i in 0..self.count {
            let start = self.start(bytes, i);
            if previous.is_some_and(|p| start <= p) || self.value(bytes, i) as usize > limit {
                return Err(GeoError::Corrupt(what));
            }
            previous = Some(start);
            let prefix = (start >> self.shift()) as usize;
            while index.len() <= prefix {
                index.push(i as u32);
            }
        }
        index.resize(INDEX_LEN, self.count as u32);
        self.index = index;
        Ok(())
    }
}

impl GeoDb {
    /// Reads and checks a compiled file.
    pub fn open(path: &Path) -> Result<Self, GeoError> {
        let len = std::fs::metadata(path)?.len();
        if len > MAX_FILE_BYTES {
            return Err(GeoError::TooLarge);
        }
        Self::from_bytes(std::fs::read(path)?)
    }

    /// Checks the bytes of a compiled file once, so that no lookup can read out of them.
    pub fn from_bytes(bytes: Vec<u8>) -> Result<Self, GeoError> {
        if bytes.len() as u64 > MAX_FILE_BYTES {
            return Err(GeoError::TooLarge);
        }
        if !bytes.starts_with(MAGIC) {
            return Err(GeoError::Format);
        }
        let mut r = Reader {
            bytes: &bytes,
            at: MAGIC.len(),
        };
        let mut country_v4 = r.table(4, 1, "IPv4 countries")?;
        let mut country_v6 = r.table(16, 1, "IPv6 countries")?;
        let mut operator_v4 = r.table(4, 4, "IPv4 operators")?;
        let mut operator_v6 = r.table(16, 4, "IPv6 operators")?;
        let country_count = r.count("countries")?;
        let countries = r.take(country_count * 2, "countries")?;
        let name_count = r.count("operators")?;
        let name_ends = r.take(name_count * 4, "operators")?;
        let names_len = r.count("operator names")?;
        let names = r.take(names_len, "operator names")?;
        let notice_len = r.count("notice")?;
        let notice = (r.take(notice_len, "notice")?, notice_len);
        if r.at != bytes.len() {
            return Err(GeoError::Corrupt("trailing bytes"));
        }
        country_v4.check(&bytes, country_count, "IPv4 countries")?;
        country_v6.check(&bytes, country_count, "IPv6 countries")?;
        operator_v4.check(&bytes, name_count, "IPv4 operators")?;
        operator_v6.check(&bytes, name_count, "IPv6 operators")?;
        if !bytes[countries..countries + country_count * 2]
            .iter()
            .all(u8::is_ascii_uppercase)
        {
            return Err(GeoError::Corrupt("countries"));
        }
        let mut previous = 0;
        for i in 0..name_count {
            let end = u32_at(&bytes, name_ends + i * 4) as usize;
            if end < previous || end > names_len {
                return Err(GeoError::Corrupt("operators"));
            }
            previous = end;
        }
        // Names end on character boundaries when the whole is UTF-8 and every end is one.
        let all = std::str::from_utf8(&bytes[names..names + names_len])
            .map_err(|_| GeoError::Corrupt("operator names"))?;
        for i in 0..name_count {
            if !all.is_char_boundary(u32_at(&bytes, name_ends + i * 4) as usize) {
                return Err(GeoError::Corrupt("operator names"));
            }
        }
        std::str::from_utf8(&bytes[notice.0..notice.0 + notice.1])
            .map_err(|_| GeoError::Corrupt("notice"))?;
        Ok(Self {
            bytes: bytes.into_boxed_slice(),
            country_v4,
            country_v6,
            operator_v4,
            operator_v6,
            countries,
            country_count,
            name_ends,
            name_count,
            names,
            notice,
        })
    }

    /// Country and operator of `ip`. An IPv4-mapped IPv6 address is looked up as IPv4.
    pub fn place(&self, ip: IpAddr) -> Place<'_> {
        let ip = ip.to_canonical();
        let (country, operator) = match ip {
            IpAddr::V4(v4) => {
                let key = u128::from(u32::from(v4));
                (
                    self.country_v4.find(&self.bytes, key),
                    self.operator_v4.find(&self.bytes, key),
                )
            }
            IpAddr::V6(v6) => {
                let key = u128::from(v6);
                (
                    self.country_v6.find(&self.bytes, key),
                    self.operator_v6.find(&self.bytes, key),
                )
            }
        };
        Place {
            country: self.country(country),
            operator: self.operator(operator),
        }
    }

    /// The country of index `i` (1-based; 0 is none).
    fn country(&self, i: u32) -> Option<&str> {
        let i = (i as usize).checked_sub(1)?;
        let at = self.countries + i * 2;
        std::str::from_utf8(&self.bytes[at..at + 2]).ok()
    }

    /// The operator name of index `i` (1-based; 0 is none).
    fn operator(&self, i: u32) -> Option<&str> {
        let i = (i as usize).checked_sub(1)?;
        let start = if i == 0 {
            0
        } else {
            u32_at(&self.bytes, self.name_ends + (i - 1) * 4) as usize
        };
        let end = u32_at(&self.bytes, self.name_ends + i * 4) as usize;
        std::str::from_utf8(&self.bytes[self.names + start..self.names + end])
            .ok()
            .filter(|n| !n.is_empty())
    }

    /// The sources, their versions and licences, and the attribution they require, as
    /// written by the compiler.
    pub fn notice(&self) -> &str {
        let (at, len) = self.notice;
        std::str::from_utf8(&self.bytes[at..at + len]).unwrap_or_default()
    }

    /// The file's size in bytes.
    pub fn size(&self) -> usize {
        self.bytes.len()
    }

    /// The memory held: the file and the four tables' indexes.
    pub fn memory(&self) -> usize {
        self.bytes.len() + 4 * INDEX_LEN * 4
    }

    /// Ranges of the four tables (IPv4 countries, IPv6 countries, IPv4 operators, IPv6
    /// operators), gaps included.
    pub fn ranges(&self) -> [usize; 4] {
        [
            self.country_v4.count,
            self.country_v6.count,
            self.operator_v4.count,
            self.operator_v6.count,
        ]
    }

    /// Distinct country codes and operator names.
    pub fn names(&self) -> (usize, usize) {
        (self.country_count, self.name_count)
    }
}

/// The attribution and licences of the data (geo/data/NOTICE), shipped beside every
/// compiled file.
pub const NOTICE: &str = include_str!("../data/NOTICE");

/// A small excerpt of the pinned tables (the rows holding the demo's and a few well-known
/// addresses, geo/data/sample/), compiled at once: what a process uses when it has no
/// compiled file, so that a fresh clone runs without the download. Every other address is
/// unknown to it.
pub fn sample() -> GeoDb {
    let mut b = Builder::new();
    for (source, name, text) in [
        (
            Source::Country,
            "country.csv",
            include_str!("../data/sample/country.csv"),
        ),
        (
            Source::Operator,
            "asn.csv",
            include_str!("../data/sample/asn.csv"),
        ),
    ] {
        if let Err(e) = b.add_csv(source, name, text) {
            unreachable!("the checked-in sample is read by the tests: {e}")
        }
    }
    b.notice(&format!(
        "{NOTICE}\nSample: an excerpt of the pinned tables (geo/data/sample).\n"
    ));
    match GeoDb::from_bytes(b.finish()) {
        Ok(db) => db,
        Err(e) => unreachable!("the compiler's output is read by the tests: {e}"),
    }
}

#[cfg(test)]
mod tests;
