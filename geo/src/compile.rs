//! Compiles CSV tables of the ip-location-db packages (`start,end,country` and
//! `start,end,asn,name`, addresses as text, IPv4 and IPv6) into the file [`crate::GeoDb`]
//! reads: each table sorted, overlaps cut, gaps made explicit, neighbours of the same value
//! merged, so that one start per range is enough; country codes and operator names stored
//! once each.

use std::collections::HashMap;
use std::net::IpAddr;

use crate::{GeoError, MAGIC};

/// What a CSV table holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// `start,end,country_code`.
    Country,
    /// `start,end,as_number,as_organisation`.
    Operator,
}

/// Operator names longer than this are cut (at a character boundary); the longest of the
/// pinned tables has 167 bytes.
const MAX_NAME_BYTES: usize = 255;

/// A range `start..=end` and its value (1-based index, 0 for none).
type Row = (u128, u128, u32);

/// The file being compiled.
#[derive(Default)]
pub struct Builder {
    countries: Vec<[u8; 2]>,
    country_index: HashMap<[u8; 2], u32>,
    names: Vec<String>,
    name_index: HashMap<String, u32>,
    /// IPv4 countries, IPv6 countries, IPv4 operators, IPv6 operators.
    tables: [Vec<Row>; 4],
    notice: String,
}

impl Builder {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds the rows of one CSV table; an error names the first line that cannot be read.
    /// Returns the number of rows added.
    pub fn add_csv(&mut self, source: Source, name: &str, text: &str) -> Result<usize, GeoError> {
        let mut rows = 0;
        for (n, line) in text.lines().enumerate() {
            let line = line.trim_end_matches('\r');
            if line.is_empty() {
                continue;
            }
            self.add_line(source, line)
                .map_err(|why| GeoError::Source(format!("{name}:{}: {why}", n + 1)))?;
            rows += 1;
        }
        Ok(rows)
    }

    fn add_line(&mut self, source: Source, line: &str) -> Result<(), &'static str> {
        let mut fields = line.splitn(if source == Source::Country { 3 } else { 4 }, ',');
        let mut next = || fields.next().ok_or("missing field");
        let start: IpAddr = next()?.parse().map_err(|_| "bad start address")?;
        let end: IpAddr = next()?.parse().map_err(|_| "bad end address")?;
        let (start, end, v6) = match (start, end) {
            (IpAddr::V4(s), IpAddr::V4(e)) => (u32::from(s).into(), u32::from(e).into(), false),
            (IpAddr::V6(s), IpAddr::V6(e)) => (u128::from(s), u128::from(e), true),
            _ => return Err("start and end of different families"),
        };
        if start > end {
            return Err("start after end");
        }
        let (table, value) = match source {
            Source::Country => (usize::from(v6), self.country(next()?)?),
            Source::Operator => {
                next()?; // the AS number: the operator is named by its organisation
                (2 + usize::from(v6), self.name(next()?))
            }
        };
        self.tables[table].push((start, end, value));
        Ok(())
    }

    fn country(&mut self, code: &str) -> Result<u32, &'static str> {
        let code = code.trim();
        let &[a, b] = code.as_bytes() else {
            return Err("country code not of two letters");
        };
        if !(a.is_ascii_alphabetic() && b.is_ascii_alphabetic()) {
            return Err("country code not of two letters");
        }
        let code = [a.to_ascii_uppercase(), b.to_ascii_uppercase()];
        if let Some(&i) = self.country_index.get(&code) {
            return Ok(i);
        }
        if self.countries.len() == usize::from(u8::MAX) {
            return Err("more than 255 country codes");
        }
        self.countries.push(code);
        let i = self.countries.len() as u32;
        self.country_index.insert(code, i);
        Ok(i)
    }

    fn name(&mut self, raw: &str) -> u32 {
        let name = unquote(raw.trim());
        let mut name = name.trim().to_owned();
        if name.len() > MAX_NAME_BYTES {
            let mut cut = MAX_NAME_BYTES;
            while !name.is_char_boundary(cut) {
                cut -= 1;
            }
            name.truncate(cut);
        }
        if name.is_empty() {
            return 0;
        }
        if let Some(&i) = self.name_index.get(&name) {
            return i;
        }
        self.names.push(name.clone());
        let i = self.names.len() as u32;
        self.name_index.insert(name, i);
        i
    }

    /// Sets the notice stored in the file: sources, versions, licences, attribution.
    pub fn notice(&mut self, text: &str) {
        text.clone_into(&mut self.notice);
    }

    /// The compiled file.
    pub fn finish(self) -> Vec<u8> {
        let mut out = MAGIC.to_vec();
        for (i, rows) in self.tables.into_iter().enumerate() {
            let (key, value, max) = match i {
                0 => (4, 1, u128::from(u32::MAX)),
                1 => (16, 1, u128::MAX),
                2 => (4, 4, u128::from(u32::MAX)),
                _ => (16, 4, u128::MAX),
            };
            let (starts, values) = ranges(rows, max);
            put_len(&mut out, starts.len());
            for s in &starts {
                out.extend_from_slice(&s.to_le_bytes()[..key]);
            }
            for v in &values {
                out.extend_from_slice(&v.to_le_bytes()[..value]);
            }
        }
        put_len(&mut out, self.countries.len());
        for c in &self.countries {
            out.extend_from_slice(c);
        }
        put_len(&mut out, self.names.len());
        let mut end = 0;
        for n in &self.names {
            end += n.len();
            put_len(&mut out, end);
        }
        put_len(&mut out, end);
        for n in &self.names {
            out.extend_from_slice(n.as_bytes());
        }
        put_len(&mut out, self.notice.len());
        out.extend_from_slice(self.notice.as_bytes());
        out
    }
}

fn put_len(out: &mut Vec<u8>, n: usize) {
    out.extend_from_slice(&(n as u32).to_le_bytes());
}

/// A CSV field without its quotes (`"Cloudflare, Inc."`), doubled quotes made single.
fn unquote(field: &str) -> String {
    match field.strip_prefix('"').and_then(|f| f.strip_suffix('"')) {
        Some(inner) => inner.replace("\"\"", "\""),
        None => field.to_owned(),
    }
}

/// One start per range, with its value up to the next start: sorted by start, a range that
/// overlaps the previous one keeps only its part beyond it, a gap is a range of value 0, and
/// neighbours of the same value are one range.
fn ranges(mut rows: Vec<Row>, max: u128) -> (Vec<u128>, Vec<u32>) {
    rows.sort_unstable_by_key(|r| (r.0, r.1));
    let (mut starts, mut values) = (Vec::new(), Vec::new());
    let mut push = |start: u128, value: u32, values: &mut Vec<u32>| {
        if values.last().copied().unwrap_or(0) != value {
            starts.push(start);
            values.push(value);
        }
    };
    // The first address no range covers yet; None once the last address is covered.
    let mut next = Some(0u128);
    for (start, end, value) in rows {
        let Some(free) = next else { break };
        if end < free {
            continue;
        }
        if start > free {
            push(free, 0, &mut values);
        }
        push(start.max(free), value, &mut values);
        next = (end < max).then(|| end + 1);
    }
    if let Some(free) = next {
        push(free, 0, &mut values);
    }
    (starts, values)
}
