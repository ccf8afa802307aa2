//! The DNS threats, derived from the resolutions the machines make (docs/collect.md#dns-resolution),
//! for the collection's writer and the demo alike.
//!
//! A resolution is a hit of a rule when its name is listed ([`LISTED`], the name or one of
//! its subdomains), carries data in its labels (tunnelling: a label of 40 characters or more,
//! or a name of more than 120, counted by the registered domain under it) or looks generated
//! and does not exist (DGA: NXDOMAIN for a name whose second-level label is long and random).
//! A threat is one machine, one rule key and one UTC day: it exists when the machine's hits
//! of that key that day reach the rule's threshold ([`threshold`]); everything it says is
//! made from those hits again each time one arrives, so the same hits twice change nothing
//! and a late one re-evaluates its day.

use std::collections::{BTreeMap, HashMap};

use chrono::{DateTime, Utc};
use netops_shared::collect::content_id;
use netops_shared::store::daily::DAY_MS;
use netops_shared::store::{Record, StoreError, StoreResult};
use serde::{Deserialize, Serialize};

use crate::model::{Criticality, DnsThreat, Resolution, SuspicionReason, ThreatCategory};

/// The hits of the rules, one partition per machine and key (`<machine>|<key>`), stored
/// under the id of their resolution: what a threat is derived from again.
pub const HITS: &str = "dns_threat_hits";

/// The listed domains: name, category, severity, the feed that lists it.
pub const LISTED: &[(&str, ThreatCategory, Criticality, &str)] = &[
    (
        "update-check.cdn-securesync.top",
        ThreatCategory::C2,
        Criticality::Critical,
        "abuse.ch ThreatFox",
    ),
    (
        "xk2q9f7z1mvb.info",
        ThreatCategory::Dga,
        Criticality::High,
        "Netlab DGA",
    ),
    (
        "microsoft-login.account-verify.co",
        ThreatCategory::Phishing,
        Criticality::High,
        "OpenPhish",
    ),
    (
        "pool.minexmr-eu.net",
        ThreatCategory::Cryptomining,
        Criticality::Medium,
        "CoinBlockerLists",
    ),
    (
        "fresh-invoices-2026.xyz",
        ThreatCategory::NewlyRegistered,
        Criticality::Low,
        "Newly Registered Domains",
    ),
    (
        "dl.payload-store.ru",
        ThreatCategory::Malware,
        Criticality::Critical,
        "URLhaus",
    ),
    (
        "exfil-dns.net",
        ThreatCategory::Tunneling,
        Criticality::High,
        "abuse.ch ThreatFox",
    ),
];

/// Resolutions of names carrying data under one registered domain, by one machine in a day,
/// that make a tunnel.
pub const TUNNEL_QUERIES: u32 = 10;
/// NXDOMAIN answers for generated names, by one machine in a day, that make a DGA threat.
pub const DGA_NXDOMAIN: u32 = 5;
/// The source of the threats the heuristics find.
pub const HEURISTICS: &str = "Heuristique";

/// Answers a resolver gives for a blocked name instead of its address.
const SINKHOLES: &[&str] = &["0.0.0.0", "::", "127.0.0.1", "::1"];

/// Why a queried name is suspicious, from the name alone: `tunneling` (data in its labels),
/// `dga` (a generated second-level label), or none.
pub fn suspicion(domain: &str) -> Option<SuspicionReason> {
    if domain.len() > 120 || domain.split('.').any(|l| l.len() >= 40) {
        return Some(SuspicionReason::Tunneling);
    }
    let labels: Vec<&str> = domain.split('.').collect();
    let second = labels.len().checked_sub(2).map(|i| labels[i])?;
    (second.len() >= 12 && entropy(second) >= 3.7).then_some(SuspicionReason::Dga)
}

/// The Shannon entropy of `s`'s characters, in bits per character.
fn entropy(s: &str) -> f64 {
    let mut counts = HashMap::new();
    for c in s.chars() {
        *counts.entry(c).or_insert(0u32) += 1;
    }
    let n = s.chars().count() as f64;
    counts
        .values()
        .map(|&k| {
            let p = f64::from(k) / n;
            -p * p.log2()
        })
        .sum()
}

/// The listed domain `domain` is or falls under, if any.
fn listed(
    domain: &str,
) -> Option<&'static (&'static str, ThreatCategory, Criticality, &'static str)> {
    LISTED.iter().find(|(d, ..)| {
        domain == *d
            || domain
                .strip_suffix(d)
                .is_some_and(|head| head.ends_with('.'))
    })
}

/// The registered domain of a name: its last two labels.
fn registered(domain: &str) -> &str {
    let mut dots = domain.rmatch_indices('.');
    match (dots.next(), dots.next()) {
        (Some(_), Some((i, _))) => &domain[i + 1..],
        _ => domain,
    }
}

/// One resolution that a rule retains: the body of a [`HITS`] record.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Hit {
    pub at: DateTime<Utc>,
    /// `listed:<domain>`, `tunnel:<registered domain>` or `dga`.
    pub key: String,
    pub machine: String,
    pub machine_ip: String,
    pub user: Option<String>,
    pub domain: String,
    /// Answered by a sinkhole (or refused) rather than with the name's address.
    pub blocked: bool,
}

/// The hit `r` makes, if a rule retains it.
pub fn hit(r: &Resolution) -> Option<Hit> {
    let key = match (listed(&r.domain), suspicion(&r.domain)) {
        (Some((d, ..)), _) => format!("listed:{d}"),
        (None, Some(SuspicionReason::Tunneling)) => format!("tunnel:{}", registered(&r.domain)),
        (None, Some(SuspicionReason::Dga)) if r.response_code == "NXDOMAIN" => "dga".to_owned(),
        _ => return None,
    };
    let blocked = r.response_code == "REFUSED"
        || (!r.answers.is_empty() && r.answers.iter().all(|a| SINKHOLES.contains(&a.as_str())));
    Some(Hit {
        at: r.at,
        key,
        machine: r.machine.clone(),
        machine_ip: r.machine_ip.clone(),
        user: r.user.clone(),
        domain: r.domain.clone(),
        blocked,
    })
}

/// The partition of a hit's record: its machine and key.
pub fn hit_partition(machine: &str, key: &str) -> String {
    format!("{machine}|{key}")
}

/// The record of hit `h` of the resolution `id`.
pub fn hit_record(h: &Hit, id: &str) -> StoreResult<Record> {
    Ok(Record {
        partition: hit_partition(&h.machine, &h.key),
        ts: h.at.timestamp_millis(),
        id: id.to_owned(),
        body: serde_json::to_value(h).map_err(|e| StoreError::Data(e.to_string()))?,
    })
}

/// The start of the UTC day of `at`, in ms: a threat's day, and its record's time.
pub fn day_of(at: DateTime<Utc>) -> i64 {
    at.timestamp_millis().div_euclid(DAY_MS) * DAY_MS
}

/// How many hits of `key` in a day make a threat.
pub fn threshold(key: &str) -> u32 {
    if key.starts_with("tunnel:") {
        TUNNEL_QUERIES
    } else if key == "dga" {
        DGA_NXDOMAIN
    } else {
        1
    }
}

/// What the rule of `key` finds: the threat's domain when the key names one, its category,
/// severity and source.
fn rule(key: &str) -> (Option<&str>, ThreatCategory, Criticality, &'static str) {
    if let Some(d) = key.strip_prefix("tunnel:") {
        return (
            Some(d),
            ThreatCategory::Tunneling,
            Criticality::High,
            HEURISTICS,
        );
    }
    match key.strip_prefix("listed:").and_then(listed) {
        Some((d, category, severity, source)) => (Some(d), *category, *severity, source),
        None => (None, ThreatCategory::Dga, Criticality::High, HEURISTICS),
    }
}

/// The threats `hits` make: for each machine, key and day whose hits reach the key's
/// [`threshold`], one threat made of them alone (its id of the machine, key and day;
/// `queries` the hits, `first_seen_at` and `last_seen_at` the first and last, the address,
/// user and `blocked` those of the last; a DGA threat's domain the generated name asked most,
/// then first by name). Not acknowledged.
pub fn threats(hits: &[Hit]) -> StoreResult<Vec<DnsThreat>> {
    let mut groups: BTreeMap<(&str, &str, i64), Vec<&Hit>> = BTreeMap::new();
    for h in hits {
        groups
            .entry((&h.machine, &h.key, day_of(h.at)))
            .or_default()
            .push(h);
    }
    let mut out = Vec::new();
    for ((machine, key, day), mut hits) in groups {
        if (hits.len() as u64) < u64::from(threshold(key)) {
            continue;
        }
        hits.sort_by(|a, b| (a.at, &a.domain).cmp(&(b.at, &b.domain)));
        let (first, last) = (hits[0], hits[hits.len() - 1]);
        let (domain, category, severity, source) = rule(key);
        let domain = match domain {
            Some(d) => d.to_owned(),
            None => most_asked(&hits),
        };
        let day_at = DateTime::from_timestamp_millis(day).unwrap_or(first.at);
        out.push(DnsThreat {
            id: content_id("dns-thr", day_at, &(machine, key))?,
            domain,
            category,
            severity,
            machine: machine.to_owned(),
            machine_ip: last.machine_ip.clone(),
            user: last.user.clone(),
            queries: hits.len() as u32,
            blocked: last.blocked,
            source: source.to_owned(),
            first_seen_at: first.at,
            last_seen_at: last.at,
            acknowledged: false,
            acknowledged_at: None,
        });
    }
    Ok(out)
}

/// The name asked most among `hits`, then first by name.
fn most_asked(hits: &[&Hit]) -> String {
    let mut counts: BTreeMap<&str, u32> = BTreeMap::new();
    for h in hits {
        *counts.entry(&h.domain).or_default() += 1;
    }
    counts
        .into_iter()
        .max_by(|(a, x), (b, y)| x.cmp(y).then_with(|| b.cmp(a)))
        .map(|(d, _)| d.to_owned())
        .unwrap_or_default()
}

/// A threat's record (one partition for the tenant, at the start of its day: its identity
/// stays while more hits arrive).
pub fn threat_record(t: &DnsThreat) -> StoreResult<Record> {
    Ok(Record {
        partition: "all".into(),
        ts: day_of(t.first_seen_at),
        id: t.id.clone(),
        body: serde_json::to_value(t).map_err(|e| StoreError::Data(e.to_string()))?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Duration;

    fn resolution(at: DateTime<Utc>, domain: &str, code: &str, answers: &[&str]) -> Resolution {
        Resolution {
            id: String::new(),
            at,
            machine: "PAR-LT-0001".into(),
            machine_ip: "10.0.0.1".into(),
            user: None,
            process: None,
            domain: domain.into(),
            query_type: "A".into(),
            response_code: code.into(),
            answers: answers.iter().map(|a| (*a).to_owned()).collect(),
            resolver: "10.0.0.53".into(),
            latency_ms: 1.0,
        }
    }

    #[test]
    fn names_carrying_data_or_generated_are_suspicious() {
        assert_eq!(suspicion("login.microsoftonline.com"), None);
        assert_eq!(suspicion("www.google.com"), None);
        assert_eq!(
            suspicion(&format!("{}.t.example.net", "a1b2c3d4e5".repeat(5))),
            Some(SuspicionReason::Tunneling)
        );
        assert_eq!(
            suspicion("xkq7vz3mpw9tb2hr.com"),
            Some(SuspicionReason::Dga)
        );
        assert_eq!(suspicion("localhost"), None);
    }

    #[test]
    fn the_rules_key_listed_tunnelled_and_generated_names() {
        let t = DateTime::from_timestamp(1_790_000_000, 0).unwrap_or_default();
        let key = |d: &str, code: &str| hit(&resolution(t, d, code, &[])).map(|h| h.key);
        assert_eq!(
            key("a.dl.payload-store.ru", "NOERROR").as_deref(),
            Some("listed:dl.payload-store.ru")
        );
        assert_eq!(key("xdl.payload-store.ru", "NOERROR"), None);
        let long = format!("{}.t.evil-tunnel.org", "ab12".repeat(10));
        assert_eq!(
            key(&long, "NOERROR").as_deref(),
            Some("tunnel:evil-tunnel.org")
        );
        assert_eq!(
            key("xkq7vz3mpw9tb2hr.com", "NXDOMAIN").as_deref(),
            Some("dga")
        );
        assert_eq!(key("xkq7vz3mpw9tb2hr.com", "NOERROR"), None);
        assert_eq!(key("www.google.com", "NXDOMAIN"), None);
        let sinkholed = hit(&resolution(
            t,
            "dl.payload-store.ru",
            "NOERROR",
            &["0.0.0.0"],
        ));
        assert!(sinkholed.is_some_and(|h| h.blocked));
    }

    #[test]
    fn a_threat_is_a_machine_key_and_day_whose_hits_reach_the_threshold() {
        let t = DateTime::from_timestamp(1_790_000_000, 0).unwrap_or_default();
        let t = DateTime::from_timestamp_millis(day_of(t)).unwrap_or_default() + Duration::hours(2);
        let tunnel = |i: i64| {
            hit(&resolution(
                t + Duration::minutes(i),
                &format!("{}{i:03}.t.evil-tunnel.org", "ab12".repeat(10)),
                "NOERROR",
                &["10.1.1.1"],
            ))
        };
        let nine: Vec<Hit> = (0..9).filter_map(tunnel).collect();
        assert!(threats(&nine).is_ok_and(|t| t.is_empty()));
        let ten: Vec<Hit> = (0..10).filter_map(tunnel).collect();
        let found = threats(&ten).unwrap_or_default();
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].domain, "evil-tunnel.org");
        assert_eq!(found[0].queries, 10);
        assert_eq!(found[0].category, ThreatCategory::Tunneling);
        // A late hit of the same day: the same threat, one query more, first seen earlier.
        let mut late = ten.clone();
        late.extend(tunnel(-1));
        let again = threats(&late).unwrap_or_default();
        assert_eq!(again[0].id, found[0].id);
        assert_eq!(again[0].queries, 11);
        // The next day is another threat, which ten more hits make.
        let next: Vec<Hit> = (22 * 60..22 * 60 + 10).filter_map(tunnel).collect();
        let other = threats(&next).unwrap_or_default();
        assert_eq!(other.len(), 1);
        assert_ne!(other[0].id, found[0].id);
    }
}
