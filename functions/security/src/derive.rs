//! What the product derives from the security events that arrive (docs/collect.md#siem-event):
//! the global detection rules ([`crate::rules`]) run over them and open SIEM incidents with
//! their correlated events. The collection's writers call it for every security event kind,
//! and the demo builds its incidents' correlated events with [`correlated`], so that an event
//! reads the same whoever correlated it.
//!
//! How: each event a rule admits is kept in series [`RULE_EVENTS`], partition
//! `<rule>|<key>` (the account, source, author or machine the rule counts by), under an id
//! made of its content. For each partition a batch touched, the events around the batch's
//! are read (the whole run of events less than a window apart), cut into runs, and a run in
//! which the threshold is reached within the window is an episode: its incident is the one
//! an overlapping earlier episode opened (the spans kept in [`EPISODES`]) or a new one.
//! Everything is made again from what is stored, so a batch sent again, or a late event,
//! changes what it must and counts nothing twice; the status and actions of an incident
//! (an acknowledgement) are never touched.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use chrono::{DateTime, Datelike, Duration, Utc};
use netops_shared::auth::sha256_hex;
use netops_shared::collect::{Batch, content_id};
use netops_shared::store::{Filter, Record, StoreError, StoreResult};
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::model::{INCIDENT_EVENTS, INCIDENTS, Incident, IncidentAction, SiemStatus};
use crate::rules::{By, Def, GLOBAL};

/// The events the rules admitted, partition `<rule>|<key>`.
pub const RULE_EVENTS: &str = "siem_rule_events";
/// The spans of the incidents each rule and key opened: key `<rule>|<key>`, body
/// `{"spans": [[incident id, first ms, last ms], ...]}`, the latest [`SPANS_MAX`].
pub const EPISODES: &str = "siem_episodes";
/// Spans kept per rule and key.
const SPANS_MAX: usize = 100;
/// Accounts, machines and addresses listed in an incident, at most.
const NAMES_MAX: usize = 50;
/// Reads of a partition while the run around the batch grows, at most.
const READS_MAX: usize = 32;

/// A Windows security event as the rules read it, whichever kind brought it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SiemEvent {
    pub at: DateTime<Utc>,
    pub event_id: u32,
    /// The account the event is about (logged on, locked, added, created).
    pub account: Option<String>,
    /// The account that did it (a change's author).
    pub subject: Option<String>,
    /// The machine the event is about (a logon's target, the controller of a change).
    pub host: Option<String>,
    pub source_ip: Option<String>,
    pub source_host: Option<String>,
    pub logon_type: Option<u32>,
    pub group: Option<String>,
    /// The account is a member of an administrators group.
    pub privileged: bool,
    pub service_account: bool,
}

/// Whether an account name follows the service accounts' convention: `svc` then `-`, `_`
/// or `.` (`svc-backup`), without case.
pub fn service_name(account: &str) -> bool {
    let a = account.to_lowercase();
    a.strip_prefix("svc")
        .is_some_and(|rest| rest.starts_with(['-', '_', '.']))
}

/// What an event says, in French, as listed with an incident.
pub fn message(e: &SiemEvent) -> String {
    let account = e.account.as_deref().unwrap_or("?");
    let host = e.host.as_deref().unwrap_or("?");
    let from = e.source_ip.as_deref().or(e.source_host.as_deref());
    match e.event_id {
        4625 => format!(
            "Échec d'ouverture de session pour {account} depuis {}",
            from.unwrap_or("?")
        ),
        4624 => format!("Ouverture de session de {account} sur {host}"),
        4740 => format!("Compte {account} verrouillé"),
        4767 => format!("Compte {account} déverrouillé"),
        4728 | 4732 | 4756 => format!(
            "Membre {account} ajouté au groupe {}",
            e.group.as_deref().unwrap_or("Admins du domaine")
        ),
        4720 => format!("Compte {account} créé"),
        4719 => format!("Stratégie d'audit modifiée sur {host}"),
        4713 => format!("Stratégie Kerberos modifiée sur {host}"),
        5141 => format!(
            "Objet de l'annuaire supprimé par {}",
            e.subject.as_deref().unwrap_or("?")
        ),
        1102 => "Le journal d'audit a été effacé".to_owned(),
        id => format!("Événement {id} de {account} sur {host}"),
    }
}

/// The record of event `e` correlated to incident `incident` under `id` (what
/// `/security/incidents/{id}` lists).
pub fn correlated(incident: &str, id: String, e: &SiemEvent) -> Record {
    Record {
        partition: incident.to_owned(),
        ts: e.at.timestamp_millis(),
        id,
        body: json!({
            "ts": e.at,
            "event_id": e.event_id,
            "account": e.account,
            "host": e.host,
            "source_ip": e.source_ip,
            "message": message(e),
        }),
    }
}

/// The key a rule counts `e` under, if it admits it.
fn key_of(rule: &Def, e: &SiemEvent) -> Option<String> {
    if !rule.event_ids.contains(&e.event_id) || !(rule.admits)(e) {
        return None;
    }
    let key = match rule.by {
        By::Account => e.account.as_deref(),
        By::SourceAccounts => e
            .source_ip
            .as_deref()
            .filter(|ip| *ip != "-")
            .or(e.source_host.as_deref()),
        By::Subject => e.subject.as_deref(),
        By::Host => e.host.as_deref(),
    }?;
    Some(key.to_lowercase())
}

/// What a rule counts of an event: the event itself, or its account for a rule over
/// distinct accounts.
fn counted(rule: &Def, e: &SiemEvent) -> String {
    match rule.by {
        By::SourceAccounts => e.account.as_deref().unwrap_or("").to_lowercase(),
        _ => String::new(),
    }
}

/// A run of events in which the rule's threshold is reached within its window.
#[derive(Debug, PartialEq)]
pub(crate) struct Episode {
    /// Indexes of the run's events (sorted by time) in the slice evaluated.
    pub(crate) events: Vec<usize>,
    /// The time of the event that reached the threshold.
    pub(crate) fired_at: DateTime<Utc>,
}

/// The episodes of `events` (sorted by time) for `rule`: runs of events each less than the
/// window after the previous, in which some window (the first and last events at most
/// `window_minutes` apart) holds `threshold` events, or `threshold` distinct accounts for
/// a rule over a source's accounts.
pub(crate) fn episodes(rule: &Def, events: &[SiemEvent]) -> Vec<Episode> {
    let window = Duration::minutes(i64::from(rule.window_minutes));
    let mut out = Vec::new();
    let mut start = 0;
    while start < events.len() {
        let mut end = start + 1;
        while end < events.len() && events[end].at - events[end - 1].at <= window {
            end += 1;
        }
        // The window ending at each event of the run, its counts kept as it slides.
        let mut counts: HashMap<String, u32> = HashMap::new();
        let mut lo = start;
        let mut fired = None;
        for hi in start..end {
            *counts.entry(counted(rule, &events[hi])).or_default() += 1;
            while events[hi].at - events[lo].at > window {
                let k = counted(rule, &events[lo]);
                if let Some(n) = counts.get_mut(&k) {
                    *n -= 1;
                    if *n == 0 {
                        counts.remove(&k);
                    }
                }
                lo += 1;
            }
            let reached = match rule.by {
                By::SourceAccounts => counts.len() as u32,
                _ => counts.values().sum(),
            };
            if reached >= rule.threshold {
                fired = Some(events[hi].at);
                break;
            }
        }
        if let Some(fired_at) = fired {
            out.push(Episode {
                events: (start..end).collect(),
                fired_at,
            });
        }
        start = end;
    }
    out
}

/// Runs the global rules over `events` (those of one batch, already checked): keeps those
/// a rule admits, then opens or updates the incidents of the episodes they take part in.
pub async fn correlate(batch: &Batch<'_>, events: &[SiemEvent]) -> StoreResult<()> {
    // The batch's events of each rule and key, with their ids.
    let mut touched: HashMap<(usize, String), Vec<(String, SiemEvent)>> = HashMap::new();
    let mut records = Vec::new();
    let mut seen = HashSet::new();
    for (r, rule) in GLOBAL.iter().enumerate() {
        for e in events {
            let Some(key) = key_of(rule, e) else { continue };
            let partition = format!("{}|{key}", rule.id);
            let id = content_id("se", e.at, e)?;
            // An event twice in the batch is one (a batch write takes a key once).
            if !seen.insert((partition.clone(), id.clone())) {
                continue;
            }
            touched
                .entry((r, partition.clone()))
                .or_default()
                .push((id.clone(), e.clone()));
            records.push(Record {
                partition,
                ts: e.at.timestamp_millis(),
                id,
                body: serde_json::to_value(e).map_err(|e| StoreError::Data(e.to_string()))?,
            });
        }
    }
    if records.is_empty() {
        return Ok(());
    }
    batch
        .stores
        .series_writes
        .append(batch.tenant, RULE_EVENTS, records)
        .await?;
    let mut touched: Vec<_> = touched.into_iter().collect();
    touched.sort_by(|a, b| a.0.cmp(&b.0));
    for ((r, partition), mine) in touched {
        evaluate(batch, &GLOBAL[r], &partition, mine).await?;
    }
    Ok(())
}

/// Evaluates `rule` over partition `partition` around the events `mine` (id, event) the
/// batch brought, which count whether or not the read sees them yet (an eventually
/// consistent read).
async fn evaluate(
    batch: &Batch<'_>,
    rule: &Def,
    partition: &str,
    mine: Vec<(String, SiemEvent)>,
) -> StoreResult<()> {
    let lo = mine
        .iter()
        .map(|(_, e)| e.at.timestamp_millis())
        .min()
        .unwrap_or(0);
    let hi = mine
        .iter()
        .map(|(_, e)| e.at.timestamp_millis())
        .max()
        .unwrap_or(0);
    let window = i64::from(rule.window_minutes) * 60_000;
    let oldest = batch.oldest.timestamp_millis();
    let (mut from, mut to) = ((lo - window).max(oldest), hi + window);
    let mut stored = Vec::new();
    // Widened while the events read reach within a window of its edges: the whole run.
    for _ in 0..READS_MAX {
        stored = batch
            .stores
            .series
            .read_all(
                batch.tenant,
                RULE_EVENTS,
                Some(partition),
                from,
                to + 1,
                &Filter::all(),
            )
            .await?
            .items;
        let first = stored.iter().map(|r| r.ts).min().unwrap_or(lo);
        let last = stored.iter().map(|r| r.ts).max().unwrap_or(hi);
        let (f, t) = ((first - window).max(oldest), last + window);
        if f >= from && t <= to {
            break;
        }
        (from, to) = (f.min(from), t.max(to));
    }
    let ids: HashSet<String> = mine.iter().map(|(id, _)| id.clone()).collect();
    let mut all: BTreeMap<(i64, String), SiemEvent> = stored
        .into_iter()
        .filter_map(|r| Some(((r.ts, r.id), serde_json::from_value(r.body).ok()?)))
        .collect();
    all.extend(
        mine.into_iter()
            .map(|(id, e)| ((e.at.timestamp_millis(), id), e)),
    );
    let (keys, events): (Vec<String>, Vec<SiemEvent>) =
        all.into_iter().map(|((_, id), e)| (id, e)).unzip();
    for ep in episodes(rule, &events) {
        if !ep.events.iter().any(|&i| ids.contains(&keys[i])) {
            continue;
        }
        let run: Vec<(&String, &SiemEvent)> =
            ep.events.iter().map(|&i| (&keys[i], &events[i])).collect();
        open_or_update(batch, rule, partition, ep.fired_at, &run).await?;
    }
    Ok(())
}

/// The incident of an episode: the one whose span overlaps it (within a window), or a new
/// one named by the rule, the key and the episode's first event.
async fn open_or_update(
    batch: &Batch<'_>,
    rule: &Def,
    partition: &str,
    fired_at: DateTime<Utc>,
    run: &[(&String, &SiemEvent)],
) -> StoreResult<()> {
    let window = i64::from(rule.window_minutes) * 60_000;
    let first = run.first().map_or(0, |(_, e)| e.at.timestamp_millis());
    let last = run.last().map_or(0, |(_, e)| e.at.timestamp_millis());
    let fresh = format!(
        "{}-{}",
        fired_at.year(),
        &sha256_hex(format!("{partition}|{first}").as_bytes())[..12]
    );
    let mut id = fresh.clone();
    batch
        .update_doc(EPISODES, partition, |stored| {
            let mut spans: Vec<(String, i64, i64)> = stored
                .and_then(|b| b.get("spans"))
                .and_then(|s| serde_json::from_value(s.clone()).ok())
                .unwrap_or_default();
            let before = spans.clone();
            match spans
                .iter_mut()
                .find(|(_, f, l)| *f - window <= last && first <= *l + window)
            {
                Some((known, f, l)) => {
                    id.clone_from(known);
                    (*f, *l) = ((*f).min(first), (*l).max(last));
                }
                None => {
                    id.clone_from(&fresh);
                    spans.push((fresh.clone(), first, last));
                }
            }
            spans.sort_by_key(|s| s.1);
            if spans.len() > SPANS_MAX {
                spans.drain(..spans.len() - SPANS_MAX);
            }
            Ok((spans != before).then(|| json!({ "spans": spans })))
        })
        .await?;
    let records: Vec<Record> = run
        .iter()
        .map(|(key, e)| correlated(&id, (*key).clone(), e))
        .collect();
    batch
        .stores
        .series_writes
        .append(batch.tenant, INCIDENT_EVENTS, records)
        .await?;
    let now = batch.now;
    batch
        .update_doc(INCIDENTS, &id, |stored| {
            let old: Option<Incident> = stored.and_then(|b| serde_json::from_value(b.clone()).ok());
            let next = incident(rule, &id, partition, fired_at, run, old.as_ref(), now);
            let same = old.as_ref().is_some_and(|o| {
                (
                    o.opened_at,
                    o.event_count,
                    &o.accounts,
                    &o.hosts,
                    &o.source_ips,
                ) == (
                    next.opened_at,
                    next.event_count,
                    &next.accounts,
                    &next.hosts,
                    &next.source_ips,
                )
            });
            if same {
                return Ok(None);
            }
            serde_json::to_value(&next)
                .map(Some)
                .map_err(|e| StoreError::Data(e.to_string()))
        })
        .await?;
    Ok(())
}

/// The incident `id` of an episode of `rule` over `run`: what the events say, and from
/// `old` (when it exists) its status, actions and what it listed already.
fn incident(
    rule: &Def,
    id: &str,
    partition: &str,
    fired_at: DateTime<Utc>,
    run: &[(&String, &SiemEvent)],
    old: Option<&Incident>,
    now: DateTime<Utc>,
) -> Incident {
    let names = |old: Option<&Vec<String>>, pick: fn(&SiemEvent) -> Vec<&str>| {
        let mut set: BTreeSet<String> = old.into_iter().flatten().cloned().collect();
        for (_, e) in run {
            for n in pick(e) {
                if set.len() < NAMES_MAX {
                    set.insert(n.to_owned());
                }
            }
        }
        set.into_iter().collect::<Vec<_>>()
    };
    let key = partition.split_once('|').map_or(partition, |(_, k)| k);
    let opened_at = old.map_or(fired_at, |o| o.opened_at.min(fired_at));
    Incident {
        id: id.to_owned(),
        title: format!("{} : {key}", rule.name),
        severity: rule.severity,
        status: old.map_or(SiemStatus::Open, |o| o.status),
        rule_id: Some(rule.id.to_owned()),
        rule_name: Some(rule.name.to_owned()),
        opened_at,
        updated_at: now,
        closed_at: old.and_then(|o| o.closed_at),
        accounts: names(old.map(|o| &o.accounts), |e| {
            e.account
                .iter()
                .chain(&e.subject)
                .map(String::as_str)
                .collect()
        }),
        hosts: names(old.map(|o| &o.hosts), |e| {
            e.host
                .iter()
                .chain(&e.source_host)
                .map(String::as_str)
                .collect()
        }),
        source_ips: names(old.map(|o| &o.source_ips), |e| {
            e.source_ip
                .iter()
                .map(String::as_str)
                .filter(|ip| *ip != "-")
                .collect()
        }),
        event_count: old.map_or(0, |o| o.event_count).max(run.len() as u64),
        actions: old.map_or_else(
            || {
                vec![IncidentAction {
                    at: fired_at,
                    by: "correlation".into(),
                    action: "open".into(),
                    note: Some(format!("Règle {} déclenchée", rule.id)),
                }]
            },
            |o| o.actions.clone(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A failure or other event of `account` from `source_ip` on the controller.
    fn event(at: &str, event_id: u32, account: &str, source_ip: &str) -> SiemEvent {
        SiemEvent {
            at: DateTime::parse_from_rfc3339(at)
                .map(|t| t.to_utc())
                .unwrap_or_default(),
            event_id,
            account: Some(account.into()),
            subject: None,
            host: Some("PAR-DC-01".into()),
            source_ip: Some(source_ip.into()),
            source_host: None,
            logon_type: Some(3),
            group: None,
            privileged: false,
            service_account: false,
        }
    }

    fn rule(id: &str) -> &'static Def {
        GLOBAL.iter().find(|d| d.id == id).expect("rule")
    }

    /// `n` failures of `account` from `ip`, `every` seconds apart from 10:00:00.
    fn failures(n: usize, every: i64, account: impl Fn(usize) -> String) -> Vec<SiemEvent> {
        (0..n)
            .map(|i| {
                let mut e = event("2026-01-05T10:00:00Z", 4625, &account(i), "203.0.113.9");
                e.at += Duration::seconds(i as i64 * every);
                e
            })
            .collect()
    }

    #[test]
    fn brute_force_needs_ten_failures_within_five_minutes() {
        let gl1 = rule("gl-001");
        let same = |_| "julie".to_owned();
        // Nine in a window: nothing; ten: fired at the tenth.
        assert!(episodes(gl1, &failures(9, 20, same)).is_empty());
        let ten = failures(10, 20, same);
        assert_eq!(
            episodes(gl1, &ten),
            [Episode {
                events: (0..10).collect(),
                fired_at: ten[9].at
            }]
        );
        // Ten failures 40 s apart: never ten within 5 minutes (six at most), one run.
        assert!(episodes(gl1, &failures(30, 40, same)).is_empty());
        // Ten failures 34 s apart span 306 s: never ten within 5 minutes; 33 s apart, 297 s.
        assert!(episodes(gl1, &failures(10, 34, same)).is_empty());
        let tight = failures(10, 33, same);
        assert_eq!(episodes(gl1, &tight)[0].fired_at, tight[9].at);
        // Two bursts an hour apart: two episodes.
        let mut two = failures(10, 5, same);
        two.extend(failures(10, 5, same).into_iter().map(|mut e| {
            e.at += Duration::hours(1);
            e
        }));
        assert_eq!(episodes(gl1, &two).len(), 2);
    }

    #[test]
    fn password_spray_counts_distinct_accounts_of_a_source() {
        let gl2 = rule("gl-002");
        // Thirty failures on the same three accounts: no spray.
        assert!(episodes(gl2, &failures(30, 10, |i| format!("user{}", i % 3))).is_empty());
        // Fifteen distinct accounts within 10 minutes: fired at the fifteenth.
        let spray = failures(15, 30, |i| format!("user{i}"));
        assert_eq!(episodes(gl2, &spray)[0].fired_at, spray[14].at);
        // Fifteen distinct accounts over 15 minutes (one a minute): never 15 within 10.
        assert!(episodes(gl2, &failures(15, 60, |i| format!("user{i}"))).is_empty());
        // The key is the source address, the accounts are counted.
        let e = &spray[0];
        assert_eq!(key_of(gl2, e).as_deref(), Some("203.0.113.9"));
        assert_eq!(key_of(rule("gl-001"), e).as_deref(), Some("user0"));
    }

    #[test]
    fn single_event_rules_admit_what_their_description_says() {
        let mut added = event("2026-01-05T10:00:00Z", 4728, "julie", "-");
        added.group = Some("CN=Admins du domaine,CN=Users,DC=acme,DC=local".into());
        assert_eq!(key_of(rule("gl-004"), &added).as_deref(), Some("julie"));
        added.group = Some("GRP-Compta".into());
        assert_eq!(key_of(rule("gl-004"), &added), None);
        let mut created = event("2026-01-05T10:00:00Z", 4720, "new.user", "-");
        assert_eq!(key_of(rule("gl-007"), &created), None);
        created.at += Duration::hours(11);
        assert!(key_of(rule("gl-007"), &created).is_some());
        // Saturday noon.
        created.at = created.at - Duration::hours(11) + Duration::days(5) + Duration::hours(2);
        assert!(key_of(rule("gl-007"), &created).is_some());
        let mut svc = event("2026-01-05T10:00:00Z", 4624, "svc-backup", "10.0.0.1");
        svc.service_account = service_name("svc-backup");
        assert_eq!(key_of(rule("gl-006"), &svc), None, "type 3");
        svc.logon_type = Some(10);
        assert!(key_of(rule("gl-006"), &svc).is_some());
        assert!(!service_name("svcadmin") && service_name("SVC_sql"));
        let lock = event("2026-01-05T10:00:00Z", 4740, "admin.jean", "-");
        assert_eq!(key_of(rule("gl-003"), &lock), None);
        assert!(
            key_of(
                rule("gl-003"),
                &SiemEvent {
                    privileged: true,
                    ..lock
                }
            )
            .is_some()
        );
    }
}
