//! How firewall syslog lines are written (docs/collect.md#firewall-syslog): each line read by
//! the vendor parsers ([`crate::parse`]), tied to its device, correlated with the directory
//! events of its account ([`crate::correlate`]), stored as an event (and in the index of rare
//! categories), counted into the perimeter report's aggregates ([`crate::report`]), and the
//! device's syslog channel marked as receiving. The collection API and the demo write events
//! the same way.

use std::collections::{BTreeSet, HashMap, HashSet};

use chrono::{DateTime, Duration, Utc};
use netops_shared::auth::sha256_hex;
use netops_shared::collect::{Batch, CollectKind, LineError};
use netops_shared::module::BoxFuture;
use netops_shared::store::{Expect, Filter, LineRefusal, Record, StoreError, StoreResult};
use netops_shared::{Msg, Scope};
use serde::Deserialize;
use serde_json::Value;
use utoipa::{PartialSchema, ToSchema};

use crate::correlate::{DirectoryIndex, MATCH_WINDOW_SECS};
use crate::model::{
    AdEvent, ChannelStatus, DEVICES, DIRECTORY, EVENTS, EVENTS_RARE, FirewallDevice, FirewallEvent,
    StoredEvent, key,
};
use crate::parse::{Category, ParseError, Parsed, parse_line};
use crate::report::Counts;

/// `POST /collect/firewall-syslog`.
pub const SYSLOG: CollectKind = CollectKind {
    name: "firewall-syslog",
    scope: Scope::CollectFirewall,
    text_field: Some("line"),
    schema: syslog_schema,
    write: write_syslog,
    agents: false,
};

/// Une ligne syslog d'un pare-feu ou d'une passerelle, telle que l'équipement l'a émise
/// (FortiGate, PAN-OS, CEF, LEEF ou clé=valeur, avec ou sans en-tête RFC 3164). En
/// `text/plain`, chaque ligne du corps est une ligne brute. L'équipement est celui dont le nom
/// ou l'adresse est l'hôte de la ligne (ou `device_id`) : un pare-feu vient de l'inventaire
/// réseau, une ligne d'un équipement inconnu est refusée (`unknown_reference`), jamais créée.
/// Alimente `/firewall/events` (avec `ad_events`), le rapport `/firewall/report` et l'état
/// de la collecte syslog de `/firewall/devices`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = CollectFirewallSyslog)]
pub struct SyslogLine {
    /// La ligne brute.
    #[schema(
        example = "<189>Nov 22 09:15:42 PAR-FW-01 date=2026-11-22 time=09:15:42 devname=\"PAR-FW-01\" devid=\"FG100F\" logid=\"0100032002\" type=\"event\" subtype=\"system\" level=\"alert\" logdesc=\"Admin login failed\" user=\"admin\" srcip=203.0.113.7 action=\"login\" status=\"failed\" msg=\"Administrator admin login failed from https(203.0.113.7)\""
    )]
    pub line: String,
    /// Quand le relais l'a reçue : donne l'année d'un en-tête RFC 3164. Par défaut, l'arrivée
    /// du lot.
    #[serde(default)]
    pub received_at: Option<DateTime<Utc>>,
    /// L'équipement (id de `/firewall/devices`), quand l'hôte de la ligne ne le nomme pas.
    #[serde(default)]
    pub device_id: Option<i64>,
}

fn syslog_schema() -> Value {
    serde_json::to_value(SyslogLine::schema()).unwrap_or_default()
}

fn write_syslog<'a>(batch: &'a Batch<'a>) -> BoxFuture<'a, StoreResult<Vec<LineRefusal>>> {
    Box::pin(write(batch))
}

/// What a parser error says, in both languages.
fn unreadable(e: &ParseError) -> Msg {
    let fr = match e {
        ParseError::Empty => "ligne vide".to_owned(),
        ParseError::UnknownFormat => "format inconnu".to_owned(),
        ParseError::Missing(f) => format!("champ {f} absent"),
        ParseError::BadValue(f) => format!("valeur invalide pour {f}"),
        ParseError::Header(h) => format!("en-tête {h} mal formé"),
    };
    Msg::new(fr, e.to_string())
}

/// The event id of a line: its time, its device and a digest of the line, so that a line
/// sent again has the id it was stored with.
fn event_id(at: DateTime<Utc>, device_id: i64, line: &str) -> String {
    let digest = sha256_hex(line.trim().as_bytes());
    format!("fw-{}-{device_id}-{}", at.timestamp_millis(), &digest[..16])
}

/// The stored record of the event parsed from a line of `dev`.
pub fn event_record(
    dev: &FirewallDevice,
    p: Parsed,
    id: String,
    ad_events: Vec<AdEvent>,
) -> StoreResult<Record> {
    let ips = [p.src_ip.clone(), p.dst_ip.clone()]
        .into_iter()
        .flatten()
        .collect();
    let event = FirewallEvent {
        id,
        at: p.at,
        device_id: dev.id,
        device: dev.name.clone(),
        format: p.format,
        category: p.category,
        action: p.action,
        account: p.account,
        src_ip: p.src_ip,
        src_port: p.src_port,
        dst_ip: p.dst_ip,
        dst_port: p.dst_port,
        service: p.service,
        protocol: p.protocol,
        rule: p.rule,
        message: p.message,
        ad_events,
    };
    Ok(Record {
        partition: dev.id.to_string(),
        ts: event.at.timestamp_millis(),
        id: event.id.clone(),
        body: serde_json::to_value(StoredEvent { event, ips })
            .map_err(|e| StoreError::Data(e.to_string()))?,
    })
}

/// The copy of an event kept in [`EVENTS_RARE`] (partition: its category), for events
/// outside the bulk categories (allow, deny).
pub fn rare_copy(r: &Record) -> Option<Record> {
    let category = r.body["category"].as_str()?;
    let bulk = [Category::Allow, Category::Deny].map(Category::as_str);
    (!bulk.contains(&category)).then(|| Record {
        partition: category.to_owned(),
        ..r.clone()
    })
}

/// A line read, tied to its device and dated.
struct Read {
    device: usize,
    parsed: Parsed,
    id: String,
}

async fn write(batch: &Batch<'_>) -> StoreResult<Vec<LineRefusal>> {
    let stores = batch.stores;
    let mut refused = Vec::new();
    let lines = batch.read::<SyslogLine>(&mut refused);
    let devices: Vec<FirewallDevice> = stores
        .docs
        .read_all(batch.tenant, DEVICES, &Filter::all())
        .await?
        .items
        .into_iter()
        .map(|d| serde_json::from_value(d.body).map_err(|e| StoreError::Data(e.to_string())))
        .collect::<StoreResult<_>>()?;
    let mut read: Vec<Read> = Vec::new();
    let mut seen = HashSet::new();
    for (line, l) in lines {
        let parsed = match parse_line(&l.line, l.received_at.unwrap_or(batch.now)) {
            Ok(p) => p,
            Err(e) => {
                refused.push(LineError::Unreadable.refuse(line, unreadable(&e)));
                continue;
            }
        };
        let host = parsed.host.as_deref().unwrap_or_default();
        let found = match l.device_id {
            Some(id) => devices.iter().position(|d| d.id == id),
            None => devices
                .iter()
                .position(|d| d.name.eq_ignore_ascii_case(host) || d.ip == host),
        };
        let Some(device) = found else {
            let named = l
                .device_id
                .map_or_else(|| host.to_owned(), |id| id.to_string());
            refused.push(LineError::UnknownReference.refuse(
                line,
                Msg::new(
                    format!("aucun pare-feu « {named} » dans ce compte"),
                    format!("no firewall '{named}' in this account"),
                ),
            ));
            continue;
        };
        if let Err(r) = batch.check_time(line, parsed.at) {
            refused.push(r);
            continue;
        }
        let id = event_id(parsed.at, devices[device].id, &l.line);
        // A line repeated within the batch is one event.
        if seen.insert(id.clone()) {
            read.push(Read { device, parsed, id });
        }
    }
    if read.is_empty() {
        return Ok(refused);
    }
    let partitions: Vec<String> = read
        .iter()
        .map(|r| devices[r.device].id.to_string())
        .collect();
    let stored = batch
        .already_stored(
            EVENTS,
            read.iter()
                .zip(&partitions)
                .map(|(r, p)| (p.as_str(), r.parsed.at.timestamp_millis(), r.id.as_str())),
        )
        .await?;
    let index = directory(batch, &read).await?;
    let mut counts = Counts::default();
    let (mut events, mut rare) = (Vec::with_capacity(read.len()), Vec::new());
    let first = read.iter().map(|r| r.parsed.at).min().unwrap_or(batch.now);
    let mut receiving = BTreeSet::new();
    for Read { device, parsed, id } in read {
        let dev = &devices[device];
        receiving.insert(device);
        // An event stored by an earlier batch is stored again as it was, not counted again.
        if !stored.contains(&id) {
            counts.add(dev.id, &parsed);
        }
        let ad_events = parsed
            .account
            .as_deref()
            .map(|a| index.matches(a, parsed.at))
            .unwrap_or_default();
        let record = event_record(dev, parsed, id, ad_events)?;
        rare.extend(rare_copy(&record));
        events.push(record);
    }
    batch.add_once(first, counts.series()).await?;
    stores
        .series_writes
        .append(batch.tenant, EVENTS_RARE, rare)
        .await?;
    stores
        .series_writes
        .append(batch.tenant, EVENTS, events)
        .await?;
    for device in receiving {
        mark_receiving(batch, &devices[device]).await?;
    }
    Ok(refused)
}

/// The directory events of the accounts the lines name, within the match window of their
/// times.
async fn directory(batch: &Batch<'_>, read: &[Read]) -> StoreResult<DirectoryIndex> {
    let mut spans: HashMap<&str, (DateTime<Utc>, DateTime<Utc>)> = HashMap::new();
    for r in read {
        if let Some(account) = r.parsed.account.as_deref() {
            let at = r.parsed.at;
            let (lo, hi) = spans.entry(account).or_insert((at, at));
            (*lo, *hi) = ((*lo).min(at), (*hi).max(at));
        }
    }
    let window = Duration::seconds(MATCH_WINDOW_SECS);
    let mut events = Vec::new();
    for (account, (lo, hi)) in spans {
        let all = batch
            .stores
            .series
            .read_all(
                batch.tenant,
                DIRECTORY,
                Some(account),
                (lo - window).timestamp_millis(),
                (hi + window).timestamp_millis() + 1,
                &Filter::all(),
            )
            .await?;
        for r in all.items {
            events.push(
                serde_json::from_value::<AdEvent>(r.body)
                    .map_err(|e| StoreError::Data(e.to_string()))?,
            );
        }
    }
    Ok(DirectoryIndex::new(events))
}

/// Marks the device's syslog channel as receiving now (a conditional put, read again when
/// another writer changed the device meanwhile).
async fn mark_receiving(batch: &Batch<'_>, dev: &FirewallDevice) -> StoreResult<()> {
    let docs = &batch.stores.docs;
    for _ in 0..5 {
        let Some(doc) = docs.get(batch.tenant, DEVICES, &key(dev.id)).await? else {
            return Ok(());
        };
        let mut device: FirewallDevice =
            serde_json::from_value(doc.body).map_err(|e| StoreError::Data(e.to_string()))?;
        if device
            .syslog
            .last_received_at
            .is_some_and(|t| t >= batch.now)
            && device.syslog.status == ChannelStatus::Active
        {
            return Ok(());
        }
        device.syslog.last_received_at = Some(batch.now);
        device.syslog.status = ChannelStatus::Active;
        let body = serde_json::to_value(&device).map_err(|e| StoreError::Data(e.to_string()))?;
        match docs
            .put_if(
                batch.tenant,
                DEVICES,
                &key(dev.id),
                body,
                Expect::Version(doc.version),
            )
            .await
        {
            Err(StoreError::ConditionFailed) => continue,
            other => return other,
        }
    }
    Err(StoreError::ConditionFailed)
}
