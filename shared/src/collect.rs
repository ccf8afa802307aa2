//! The collection API's shell (docs/collect.md): what `POST /collect/{kind}` does whatever the
//! kind. A batch is read within its limits (4 MiB on the wire, 16 MiB decompressed, counted
//! while reading), given its identity (its `Idempotency-Key`, or else the SHA-256 of its
//! decompressed body), split into lines, each line handed to the kind's writer, and recorded
//! in the ingestion log with what was accepted and refused. The same batch sent again gets the
//! first answer and changes nothing.
//!
//! A kind is a [`CollectKind`]: its name, the `collect:<module>` scope that may send it, the
//! JSON Schema of one observation and its writer, which lives in its module's crate. The list
//! of kinds is netops-api's `KINDS`: adding a kind is a writer and one entry there.

use std::collections::{HashMap, HashSet};
use std::io::Read;
use std::sync::Arc;

use axum::body::Body;
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Duration, Utc};
use http::{HeaderMap, HeaderValue, header};
use http_body_util::BodyExt;
use serde::Serialize;
use serde_json::{Value, json};

use crate::auth::{Caller, sha256_hex};
use crate::envelope::{Envelope, Meta};
use crate::error::{ApiError, ErrorCode, Msg};
use crate::idempotency::{IDEMPOTENCY_KEY, IDEMPOTENT_REPLAYED, parse_key};
use crate::lang::Lang;
use crate::lookup::MACHINES;
use crate::module::BoxFuture;
use crate::scope::Scope;
use crate::state::AppState;
use crate::store::{
    Expect, Filter, IngestEntry, KEPT_REFUSALS, LineRefusal, Record, Rollup, StoreError,
    StoreResult, Stores,
};

/// At most this many bytes of a batch on the wire (API Gateway delivers a binary body
/// base64-encoded inside the 6 MB Lambda event).
pub const WIRE_LIMIT: usize = 4 * 1024 * 1024;
/// At most this many bytes of a batch once decompressed, counted while decompressing.
pub const DECOMPRESSED_LIMIT: usize = 16 * 1024 * 1024;
/// Observations dated further ahead of the server's clock than this are refused.
pub const FUTURE_SECS: i64 = 300;

/// What a kind's writer does with a batch: stores what it accepts through the ports, derives
/// what the routes read from it, and returns the lines it refused. Sent again with the same
/// batch id, it stores and counts nothing twice.
pub type Writer = for<'a> fn(&'a Batch<'a>) -> BoxFuture<'a, StoreResult<Vec<LineRefusal>>>;

/// One kind of observation (docs/collect.md#kinds).
pub struct CollectKind {
    /// The `{kind}` of the path.
    pub name: &'static str,
    /// The scope a credential needs to send it: `collect:<module>`.
    pub scope: Scope,
    /// For kinds that also take raw lines (`text/plain`): the field of an observation that
    /// holds the raw line.
    pub text_field: Option<&'static str>,
    /// The JSON Schema of one observation, with its rules in its description (French).
    pub schema: fn() -> Value,
    pub write: Writer,
    /// A machine's agent credential may send it too, for its own machine only
    /// (docs/agent.md#collection): a line naming another machine is refused as unknown
    /// ([`Batch::known_machines`]).
    pub agents: bool,
}

/// One line of a batch, read as a JSON object.
#[derive(Debug, Clone)]
pub struct Observation {
    /// Its line number in the batch, from 1.
    pub line: u64,
    pub value: Value,
}

/// A batch handed to a kind's writer.
pub struct Batch<'a> {
    pub stores: &'a Stores,
    pub tenant: &'a str,
    /// The batch's identity, to name what it stores (rollup markers) so that a batch sent
    /// again is counted once.
    pub id: &'a str,
    pub now: DateTime<Utc>,
    /// The oldest time an observation may have: the retention.
    pub oldest: DateTime<Utc>,
    pub observations: Vec<Observation>,
    /// The geolocation of the process, if it has one loaded.
    pub geo: Option<&'a netops_geo::GeoDb>,
    /// Sent with a machine's agent credential: the one machine its lines may name
    /// ([`CollectKind::agents`]); `None` with a collect credential.
    pub machine: Option<&'a str>,
}

/// Why a line is refused: stable codes, listed in the answer with their line number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineError {
    /// Not UTF-8, not JSON, or not a JSON object.
    InvalidLine,
    /// A JSON object that does not have the kind's fields.
    InvalidObservation,
    /// A raw line the kind's parsers cannot read.
    Unreadable,
    /// Dated more than 5 minutes ahead, or older than the retention.
    TimeOutOfRange,
    /// Names something the tenant does not know, that the kind does not create.
    UnknownReference,
}

impl LineError {
    pub const ALL: [LineError; 5] = [
        LineError::InvalidLine,
        LineError::InvalidObservation,
        LineError::Unreadable,
        LineError::TimeOutOfRange,
        LineError::UnknownReference,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            LineError::InvalidLine => "invalid_line",
            LineError::InvalidObservation => "invalid_observation",
            LineError::Unreadable => "unreadable_line",
            LineError::TimeOutOfRange => "time_out_of_range",
            LineError::UnknownReference => "unknown_reference",
        }
    }

    /// The refusal of line `line` for this reason, `detail` saying more in each language.
    pub fn refuse(self, line: u64, detail: Msg) -> LineRefusal {
        let (fr, en) = match self {
            LineError::InvalidLine => ("ligne illisible", "unreadable line"),
            LineError::InvalidObservation => ("observation invalide", "invalid observation"),
            LineError::Unreadable => ("ligne non reconnue", "line not recognised"),
            LineError::TimeOutOfRange => ("date hors limites", "time out of range"),
            LineError::UnknownReference => ("référence inconnue", "unknown reference"),
        };
        LineRefusal {
            line,
            error: self.as_str().to_owned(),
            message_fr: bounded(format!("{fr} : {}", detail.fr)),
            message_en: bounded(format!("{en}: {}", detail.en)),
        }
    }
}

/// How [`Batch::read_valid`] checks an observation: its time, and why its fields cannot be
/// kept, if they cannot.
pub type Checks<T> = (fn(&T) -> DateTime<Utc>, fn(&T) -> Option<Msg>);

/// An observation about one of the tenant's machines, read by [`Batch::read_on_machines`].
pub trait OnMachine {
    /// The host name of its machine.
    fn machine(&self) -> &str;
    fn at(&self) -> DateTime<Utc>;
    /// Why its fields cannot be kept, if they cannot, naming the field at fault.
    fn invalid(&self) -> Option<Msg>;
}

/// The JSON Schema of `T`, for a [`CollectKind`]'s `schema`.
pub fn schema_of<T: utoipa::PartialSchema>() -> Value {
    serde_json::to_value(T::schema()).unwrap_or_default()
}

/// A refusal message cut to 300 bytes, so that an entry of the log stays bounded whatever a
/// line holds.
fn bounded(mut message: String) -> String {
    const MAX: usize = 300;
    if message.len() > MAX {
        let mut end = MAX;
        while !message.is_char_boundary(end) {
            end -= 1;
        }
        message.truncate(end);
        message.push('…');
    }
    message
}

impl Batch<'_> {
    /// The ids among `keys` (partition, time in ms, id) already stored in `series` by an
    /// earlier batch: read over each partition's time span in the batch. A writer stores
    /// such an observation again (under the same id, it replaces itself) but does not count
    /// it again.
    pub async fn already_stored<'k>(
        &self,
        series: &str,
        keys: impl IntoIterator<Item = (&'k str, i64, &'k str)>,
    ) -> StoreResult<HashSet<String>> {
        let mut spans: HashMap<&str, (i64, i64, HashSet<&str>)> = HashMap::new();
        for (partition, ts, id) in keys {
            let (lo, hi, ids) = spans
                .entry(partition)
                .or_insert_with(|| (ts, ts, HashSet::new()));
            (*lo, *hi) = ((*lo).min(ts), (*hi).max(ts));
            ids.insert(id);
        }
        let mut stored = HashSet::new();
        for (partition, (lo, hi, ids)) in spans {
            let all = self
                .stores
                .series
                .read_all(
                    self.tenant,
                    series,
                    Some(partition),
                    lo,
                    hi + 1,
                    &Filter::all(),
                )
                .await?;
            stored.extend(
                all.items
                    .into_iter()
                    .map(|r| r.id)
                    .filter(|id| ids.contains(id.as_str())),
            );
        }
        Ok(stored)
    }

    /// Adds the batch's aggregates `rows` (as (series, rows)) once: marked by the batch id in
    /// the hour of `first`, its earliest observation, so that the same batch sent again adds
    /// nothing. A writer adds them before it stores the observations: a batch stopped in
    /// between is counted once, and stored in full, when sent again.
    pub async fn add_once(
        &self,
        first: DateTime<Utc>,
        rows: Vec<(String, Vec<Rollup>)>,
    ) -> StoreResult<()> {
        let ms = first.timestamp_millis();
        let marker = Rollup {
            hour: ms - ms.rem_euclid(3_600_000),
            key: self.id.to_owned(),
            dims: Arc::new(json!({})),
            measures: Default::default(),
        };
        self.stores
            .rollups
            .add_once(self.tenant, marker, rows)
            .await
            .map(drop)
    }

    /// Changes the document `key` of `collection` as `change` says, given the stored body
    /// (`None` when absent): it returns the new body, or `None` to leave the document as it
    /// is. The put is conditional (absent, or at the version read): when another writer
    /// changed the document meanwhile, it is read and changed again, a few times, then
    /// [`StoreError::ConditionFailed`] (the batch is refused with 503 and sent again). Returns
    /// the body written, if any.
    pub async fn update_doc(
        &self,
        collection: &str,
        key: &str,
        mut change: impl FnMut(Option<&Value>) -> StoreResult<Option<Value>> + Send,
    ) -> StoreResult<Option<Value>> {
        let docs = &self.stores.docs;
        for _ in 0..5 {
            let stored = docs.get(self.tenant, collection, key).await?;
            let expect = stored
                .as_ref()
                .map_or(Expect::Absent, |d| Expect::Version(d.version));
            let Some(body) = change(stored.as_ref().map(|d| &d.body))? else {
                return Ok(None);
            };
            match docs
                .put_if(self.tenant, collection, key, body.clone(), expect)
                .await
            {
                Err(StoreError::ConditionFailed) => continue,
                Err(e) => return Err(e),
                Ok(()) => return Ok(Some(body)),
            }
        }
        Err(StoreError::ConditionFailed)
    }

    /// Stores `items` (a record and what its writer derives from it) in `series`, counted
    /// once: a record repeated within the batch is one, the aggregates `derive` makes of
    /// those no earlier batch stored are added once per batch ([`Batch::add_once`]), before
    /// the records are stored (a batch stopped in between is counted once when sent again).
    pub async fn store_counted<T>(
        &self,
        series: &str,
        items: Vec<(Record, T)>,
        derive: impl FnOnce(Vec<T>) -> Vec<(String, Vec<Rollup>)>,
    ) -> StoreResult<()> {
        let mut seen = HashSet::new();
        let items: Vec<(Record, T)> = items
            .into_iter()
            .filter(|(r, _)| seen.insert(r.id.clone()))
            .collect();
        let Some(first) = items.iter().map(|(r, _)| r.ts).min() else {
            return Ok(());
        };
        let stored = self
            .already_stored(
                series,
                items
                    .iter()
                    .map(|(r, _)| (r.partition.as_str(), r.ts, r.id.as_str())),
            )
            .await?;
        let (records, new): (Vec<Record>, Vec<T>) = items.into_iter().fold(
            (Vec::new(), Vec::new()),
            |(mut records, mut new), (r, t)| {
                if !stored.contains(&r.id) {
                    new.push(t);
                }
                records.push(r);
                (records, new)
            },
        );
        let first = DateTime::<Utc>::from_timestamp_millis(first).unwrap_or(self.now);
        self.add_once(first, derive(new)).await?;
        self.stores
            .series_writes
            .append(self.tenant, series, records)
            .await
    }

    /// Stores `events` (partition, time, body) in `series` with nothing derived from them,
    /// each under an id made of its content ([`content_id`] of `prefix`, its partition and
    /// body), written into its body's `id`: sent again, in any batch, an event is stored once.
    pub async fn store_events(
        &self,
        series: &str,
        prefix: &str,
        events: Vec<(String, DateTime<Utc>, Value)>,
    ) -> StoreResult<()> {
        let mut items = Vec::with_capacity(events.len());
        for (partition, at, mut body) in events {
            let id = content_id(prefix, at, &(&partition, &body))?;
            body["id"] = Value::String(id.clone());
            let record = Record {
                partition,
                ts: at.timestamp_millis(),
                id,
                body,
            };
            items.push((record, ()));
        }
        self.store_counted(series, items, |_| Vec::new()).await
    }

    /// The tenant's machines among `hosts` (host names), their documents by host name: the
    /// agents' kinds refuse a line of another machine ([`Self::unknown_machine`]), since machines
    /// come with their agents' heartbeats, not with what they observe. Sent by an agent, the
    /// batch knows its own machine alone: it learns nothing of the others.
    pub async fn known_machines<'h>(
        &self,
        hosts: impl IntoIterator<Item = &'h str>,
    ) -> StoreResult<HashMap<String, Value>> {
        let hosts: Vec<String> = hosts
            .into_iter()
            .filter(|h| self.machine.is_none_or(|own| own == *h))
            .map(str::to_owned)
            .collect();
        self.known_docs(MACHINES, hosts).await
    }

    /// The documents of `collection` among `keys`, by key: what a kind checks the things its
    /// observations name against (machines, instances, devices, checks).
    pub async fn known_docs(
        &self,
        collection: &str,
        keys: impl IntoIterator<Item = String>,
    ) -> StoreResult<HashMap<String, Value>> {
        let keys: Vec<String> = keys
            .into_iter()
            .collect::<HashSet<_>>()
            .into_iter()
            .collect();
        Ok(self
            .stores
            .docs
            .get_many(self.tenant, collection, &keys)
            .await?
            .into_iter()
            .map(|d| (d.key, d.body))
            .collect())
    }

    /// The observations read as `T`, valid and in time ([`Self::read_valid`]), whose thing
    /// (its key in `collection`, by `key`) the tenant knows, with the documents of those
    /// things by key; a line naming one the tenant does not know is refused
    /// (`unknown_reference`, `unknown` naming it). For the kinds whose things are the tenant's
    /// configuration (instances, devices, monitors, profiles), never created by a collector.
    pub async fn read_known<T: serde::de::DeserializeOwned>(
        &self,
        refused: &mut Vec<LineRefusal>,
        collection: &str,
        (at, invalid): Checks<T>,
        key: impl Fn(&T) -> String,
        unknown: impl Fn(&T) -> Msg,
    ) -> StoreResult<(Vec<(u64, T)>, HashMap<String, Value>)> {
        let lines = self.read_valid(refused, at, invalid);
        let known = self
            .known_docs(
                collection,
                lines.iter().map(|(_, l)| key(l)).collect::<Vec<_>>(),
            )
            .await?;
        let mut out = Vec::with_capacity(lines.len());
        for (line, l) in lines {
            if known.contains_key(&key(&l)) {
                out.push((line, l));
            } else {
                refused.push(LineError::UnknownReference.refuse(line, unknown(&l)));
            }
        }
        Ok((out, known))
    }

    /// The refusal of line `line`, which names machine `host` that the batch does not know
    /// ([`Self::known_machines`]): not one of the tenant's, or, sent by an agent, not its own.
    pub fn unknown_machine(&self, line: u64, host: &str) -> LineRefusal {
        let msg = match self.machine {
            Some(own) => Msg::new(
                format!("cette identité d'agent ne collecte que pour la machine « {own} »"),
                format!("this agent credential collects for machine '{own}' only"),
            ),
            None => Msg::new(
                format!("aucune machine « {host} » dans ce compte"),
                format!("no machine '{host}' in this account"),
            ),
        };
        LineError::UnknownReference.refuse(line, msg)
    }

    /// The observations read as `T` whose fields can be kept (`invalid` says why not, naming
    /// the field at fault) and whose time (`at`) is in range; the others refused
    /// (`invalid_observation`, `time_out_of_range`).
    pub fn read_valid<T: serde::de::DeserializeOwned>(
        &self,
        refused: &mut Vec<LineRefusal>,
        at: fn(&T) -> DateTime<Utc>,
        invalid: fn(&T) -> Option<Msg>,
    ) -> Vec<(u64, T)> {
        let mut out = Vec::new();
        for (line, l) in self.read::<T>(refused) {
            if let Some(why) = invalid(&l) {
                refused.push(LineError::InvalidObservation.refuse(line, why));
            } else if let Err(r) = self.check_time(line, at(&l)) {
                refused.push(r);
            } else {
                out.push((line, l));
            }
        }
        out
    }

    /// The observations read as `T` that name a machine of the tenant, hold valid fields and
    /// are in time; the others refused (`invalid_observation`, `unknown_reference`,
    /// `time_out_of_range`).
    pub async fn read_on_machines<T: serde::de::DeserializeOwned + OnMachine>(
        &self,
        refused: &mut Vec<LineRefusal>,
    ) -> StoreResult<Vec<(u64, T)>> {
        let lines = self.read::<T>(refused);
        let machines = self
            .known_machines(lines.iter().map(|(_, l)| l.machine()))
            .await?;
        let mut out = Vec::with_capacity(lines.len());
        for (line, l) in lines {
            if !machines.contains_key(l.machine()) {
                refused.push(self.unknown_machine(line, l.machine()));
            } else if let Some(why) = l.invalid() {
                refused.push(LineError::InvalidObservation.refuse(line, why));
            } else if let Err(r) = self.check_time(line, l.at()) {
                refused.push(r);
            } else {
                out.push((line, l));
            }
        }
        Ok(out)
    }

    /// Refuses an observation dated more than [`FUTURE_SECS`] ahead of now or before the
    /// retention.
    pub fn check_time(&self, line: u64, at: DateTime<Utc>) -> Result<(), LineRefusal> {
        let at_text = at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
        if at > self.now + Duration::seconds(FUTURE_SECS) {
            return Err(LineError::TimeOutOfRange.refuse(
                line,
                Msg::new(
                    format!("{at_text} est plus de 5 minutes dans le futur"),
                    format!("{at_text} is more than 5 minutes in the future"),
                ),
            ));
        }
        if at < self.oldest {
            return Err(LineError::TimeOutOfRange.refuse(
                line,
                Msg::new(
                    format!("{at_text} est antérieur à la rétention"),
                    format!("{at_text} is older than the retention"),
                ),
            ));
        }
        Ok(())
    }

    /// The observations read as `T`, the others refused as [`LineError::InvalidObservation`]
    /// naming the field at fault.
    pub fn read<T: serde::de::DeserializeOwned>(
        &self,
        refused: &mut Vec<LineRefusal>,
    ) -> Vec<(u64, T)> {
        let mut out = Vec::with_capacity(self.observations.len());
        for o in &self.observations {
            match serde_path_to_error::deserialize::<_, T>(&o.value) {
                Ok(t) => out.push((o.line, t)),
                Err(e) => {
                    let path = e.path().to_string();
                    let why = e.into_inner().to_string();
                    refused.push(LineError::InvalidObservation.refuse(
                        o.line,
                        Msg::new(format!("{path} : {why}"), format!("{path}: {why}")),
                    ));
                }
            }
        }
        out
    }
}

/// The id of an observation made of its content: `<prefix>-<time in ms>-<digest>`, the
/// digest that of `what` as JSON, so that it is stored once however often it is sent.
pub fn content_id(prefix: &str, at: DateTime<Utc>, what: &impl Serialize) -> StoreResult<String> {
    let json = serde_json::to_vec(what).map_err(|e| StoreError::Data(e.to_string()))?;
    let digest = sha256_hex(&json);
    Ok(format!(
        "{prefix}-{}-{}",
        at.timestamp_millis(),
        &digest[..16]
    ))
}

/// Why the first of `texts` (field, text, required) cannot be kept, if one cannot: a text
/// given must hold something and be at most `max` characters; a required one must be given.
/// How the kinds bound what they keep.
pub fn bad_text<'a>(
    max: usize,
    texts: impl IntoIterator<Item = (&'a str, Option<&'a str>, bool)>,
) -> Option<Msg> {
    texts.into_iter().find_map(|(field, text, required)| {
        let bad = text.map_or(required, |t| t.trim().is_empty() || t.chars().count() > max);
        bad.then(|| {
            Msg::new(
                format!("{field} : texte de 1 à {max} caractères attendu"),
                format!("{field}: a text of 1 to {max} characters is expected"),
            )
        })
    })
}

/// 413 for a batch over the collection's limits.
fn too_large() -> ApiError {
    ApiError::new(
        ErrorCode::PayloadTooLarge,
        Msg::new(
            "Lot trop volumineux : 4 Mio au plus tel qu'envoyé, 16 Mio au plus décompressé. Coupez-le en plusieurs lots.",
            "Batch too large: 4 MiB at most as sent, 16 MiB at most decompressed. Split it into several batches.",
        ),
    )
}

/// Whether the batch is raw lines (`text/plain`) rather than NDJSON.
fn is_text(headers: &HeaderMap, kind: &CollectKind) -> Result<bool, ApiError> {
    let Some(value) = headers.get(header::CONTENT_TYPE) else {
        return Ok(false);
    };
    let media = value
        .to_str()
        .unwrap_or_default()
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    match media.as_str() {
        "application/x-ndjson" => Ok(false),
        "text/plain" if kind.text_field.is_some() => Ok(true),
        _ => Err(ApiError::invalid_body(
            format!(
                "type de contenu non pris en charge pour « {} » : {}",
                kind.name,
                accepted_types(kind)
            ),
            format!(
                "content type not supported for '{}': {}",
                kind.name,
                accepted_types(kind)
            ),
        )),
    }
}

fn accepted_types(kind: &CollectKind) -> &'static str {
    if kind.text_field.is_some() {
        "application/x-ndjson, text/plain"
    } else {
        "application/x-ndjson"
    }
}

/// Whether the batch is gzip-compressed (`Content-Encoding: gzip`; none or `identity`: not).
fn is_gzip(headers: &HeaderMap) -> Result<bool, ApiError> {
    match headers
        .get(header::CONTENT_ENCODING)
        .map(HeaderValue::to_str)
    {
        None => Ok(false),
        Some(Ok(v)) if v.trim().eq_ignore_ascii_case("gzip") => Ok(true),
        Some(Ok(v)) if v.trim().eq_ignore_ascii_case("identity") => Ok(false),
        Some(_) => Err(ApiError::invalid_body(
            "codage non pris en charge : gzip seulement",
            "content coding not supported: gzip only",
        )),
    }
}

/// The body as sent, refused past [`WIRE_LIMIT`] bytes: at once when its declared length is
/// over, otherwise as soon as the bytes received pass it.
async fn read_wire(headers: &HeaderMap, body: Body) -> Result<bytes::Bytes, ApiError> {
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > WIRE_LIMIT as u64) {
        return Err(too_large());
    }
    let mut body = body;
    let mut out = bytes::BytesMut::new();
    while let Some(frame) = body.frame().await {
        let frame =
            frame.map_err(|_| ApiError::invalid_body("lecture impossible", "unreadable"))?;
        if let Ok(data) = frame.into_data() {
            if out.len() + data.len() > WIRE_LIMIT {
                return Err(too_large());
            }
            out.extend_from_slice(&data);
        }
    }
    Ok(out.freeze())
}

/// The decompressed batch, refused once it passes [`DECOMPRESSED_LIMIT`] bytes: the decoder
/// is read at most one byte past the limit, so a compression bomb costs no more memory.
fn decompress(wire: bytes::Bytes, gzip: bool) -> Result<bytes::Bytes, ApiError> {
    if !gzip {
        return Ok(wire);
    }
    let mut out = Vec::with_capacity(wire.len().saturating_mul(4).min(DECOMPRESSED_LIMIT));
    flate2::read::MultiGzDecoder::new(&wire[..])
        .take(DECOMPRESSED_LIMIT as u64 + 1)
        .read_to_end(&mut out)
        .map_err(|_| ApiError::invalid_body("données gzip invalides", "invalid gzip data"))?;
    if out.len() > DECOMPRESSED_LIMIT {
        return Err(too_large());
    }
    Ok(out.into())
}

/// The batch's lines as observations, and the lines refused on reading. Blank lines are
/// skipped (they keep their number); a raw line becomes `{<text_field>: line}`.
fn split(raw: &[u8], text_field: Option<&str>) -> (Vec<Observation>, Vec<LineRefusal>) {
    let mut observations = Vec::new();
    let mut refused = Vec::new();
    for (i, bytes) in raw.split(|b| *b == b'\n').enumerate() {
        let line = i as u64 + 1;
        let bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
        if bytes.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let Ok(text) = std::str::from_utf8(bytes) else {
            refused.push(
                LineError::InvalidLine
                    .refuse(line, Msg::new("ce n'est pas de l'UTF-8", "not UTF-8")),
            );
            continue;
        };
        let value = match text_field {
            Some(field) => json!({ field: text }),
            None => match serde_json::from_str::<Value>(text) {
                Ok(v @ Value::Object(_)) => v,
                Ok(_) => {
                    refused.push(LineError::InvalidLine.refuse(
                        line,
                        Msg::new("un objet JSON est attendu", "a JSON object is expected"),
                    ));
                    continue;
                }
                Err(e) => {
                    refused.push(LineError::InvalidLine.refuse(
                        line,
                        Msg::new(
                            format!("JSON invalide ({e})"),
                            format!("invalid JSON ({e})"),
                        ),
                    ));
                    continue;
                }
            },
        };
        observations.push(Observation { line, value });
    }
    (observations, refused)
}

/// A refused line as the answer lists it.
#[derive(Debug, Serialize)]
struct Refusal<'a> {
    line: u64,
    error: &'a str,
    message: &'a str,
}

fn listed(refusals: &[LineRefusal], lang: Lang) -> Vec<Refusal<'_>> {
    refusals
        .iter()
        .take(KEPT_REFUSALS)
        .map(|r| Refusal {
            line: r.line,
            error: &r.error,
            message: match lang {
                Lang::Fr => &r.message_fr,
                Lang::En => &r.message_en,
            },
        })
        .collect()
}

/// The answer to a batch taken in: `replayed` when it is the first sending's, kept.
fn answer(entry: &IngestEntry, lang: Lang, replayed: bool) -> Response {
    let data = json!({
        "batch_id": entry.batch_id,
        "kind": entry.kind,
        "received_at": entry.at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
        "accepted": entry.accepted,
        "refused": entry.refused,
        "refusals": listed(&entry.refusals, lang),
        "refusals_truncated": entry.refused as usize > entry.refusals.len(),
    });
    let mut res = Envelope::new(data, Meta::new()).into_response();
    if replayed {
        res.headers_mut()
            .insert(IDEMPOTENT_REPLAYED, HeaderValue::from_static("true"));
    }
    res
}

/// What one call of `POST /collect/{kind}` needs of its request.
pub struct Posted<'a> {
    pub kind: &'a str,
    pub request_id: &'a str,
    pub headers: &'a HeaderMap,
    pub body: Body,
}

/// Takes in one batch of `kinds`' kind `posted.kind` (docs/collect.md): 404 for an unknown
/// kind, 403 without its scope, 400 for a body that cannot be read or holds no valid line,
/// 413 past the limits, 503 when the store fails (send the same batch again), else 200 with
/// the lines accepted and refused.
pub async fn take_in(
    state: &AppState,
    caller: &Caller,
    kinds: &[&CollectKind],
    posted: Posted<'_>,
) -> Response {
    let lang = Lang::from_headers(posted.headers);
    match take_in_batch(state, caller, kinds, posted).await {
        Ok(res) => res,
        Err(e) => e.to_response(lang),
    }
}

async fn take_in_batch(
    state: &AppState,
    caller: &Caller,
    kinds: &[&CollectKind],
    posted: Posted<'_>,
) -> Result<Response, ApiError> {
    let lang = Lang::from_headers(posted.headers);
    let Some(kind) = kinds.iter().copied().find(|k| k.name == posted.kind) else {
        let names: Vec<&str> = kinds.iter().map(|k| k.name).collect();
        return Err(ApiError::not_found(
            format!("Type d'observation « {} »", posted.kind),
            format!("Observation kind '{}'", posted.kind),
        )
        .with("admitted_kinds", names));
    };
    // A collect credential holds the kind's scope; a machine's agent credential sends the
    // kinds of its own machine.
    let machine = match caller.agent_machine() {
        Some(own) if kind.agents => Some(own),
        _ if caller.scopes.contains(&kind.scope) => None,
        _ => return Err(ApiError::forbidden(kind.scope)),
    };
    let text = is_text(posted.headers, kind)?;
    let gzip = is_gzip(posted.headers)?;
    let key = posted
        .headers
        .get(IDEMPOTENCY_KEY)
        .map(parse_key)
        .transpose()?;
    let raw = decompress(read_wire(posted.headers, posted.body).await?, gzip)?;
    let batch_id = match key {
        Some(key) => format!("{}/key/{key}", kind.name),
        None => format!("{}/sha256/{}", kind.name, sha256_hex(&raw)),
    };
    let unavailable = |e: &dyn std::fmt::Display| {
        tracing::error!(cause = %e, batch = %batch_id, "collection failed");
        ApiError::new(
            ErrorCode::ServiceUnavailable,
            Msg::new(
                "Service momentanément indisponible : renvoyez le même lot, il ne sera compté qu'une fois.",
                "Service temporarily unavailable: send the same batch again, it will be counted once.",
            ),
        )
    };
    let ingest = state.stores.ingest.as_ref();
    if let Some(first) = ingest
        .batch(&caller.tenant, &batch_id)
        .await
        .map_err(|e| unavailable(&e))?
    {
        return Ok(answer(&first, lang, true));
    }
    let (observations, mut refusals) = split(&raw, kind.text_field.filter(|_| text));
    let lines = (observations.len() + refusals.len()) as u64;
    if lines == 0 {
        return Err(ApiError::invalid_body(
            "le lot ne contient aucune ligne",
            "the batch holds no line",
        ));
    }
    let now = Utc::now();
    let batch = Batch {
        stores: &state.stores,
        tenant: &caller.tenant,
        id: &batch_id,
        now,
        oldest: now - Duration::days(i64::from(state.config.retention_days())),
        observations,
        geo: state.geo.as_deref(),
        machine,
    };
    if !batch.observations.is_empty() {
        let refused = (kind.write)(&batch).await.map_err(|e| unavailable(&e))?;
        refusals.extend(refused);
    }
    refusals.sort_by_key(|r| r.line);
    let refused = refusals.len() as u64;
    if refused == lines {
        return Err(ApiError::invalid_body(
            "aucune ligne valide dans le lot",
            "no valid line in the batch",
        )
        .with("refused", refused)
        .with("refusals", json!(listed(&refusals, lang))));
    }
    refusals.truncate(KEPT_REFUSALS);
    let entry = IngestEntry {
        tenant: caller.tenant.clone(),
        batch_id: batch_id.clone(),
        kind: kind.name.to_owned(),
        token_name: caller.token_name.clone(),
        request_id: posted.request_id.to_owned(),
        at: now,
        accepted: lines - refused,
        refused,
        refusals,
        expires_at: now.timestamp() + i64::from(state.config.write_log_days) * 86_400,
    };
    // Two senders of one batch at once both write it (the writers store and count it once)
    // and both answer what the log recorded first.
    match ingest
        .record(entry.clone())
        .await
        .map_err(|e| unavailable(&e))?
    {
        Some(first) => Ok(answer(&first, lang, true)),
        None => {
            // The batch is in: a failure to note it only delays the scheduled pass's news.
            if let Err(e) =
                crate::pass::note_activity(&state.stores, &caller.tenant, kind.name, now).await
            {
                tracing::warn!(cause = %e, batch = %batch_id, "the collection activity could not be noted");
            }
            Ok(answer(&entry, lang, false))
        }
    }
}

/// Why the first of `measures` (field, value, maximum) cannot be kept, if one cannot: a
/// measure is a finite number from 0 to its maximum.
pub fn bad_measure<'a>(measures: impl IntoIterator<Item = (&'a str, f64, f64)>) -> Option<Msg> {
    measures.into_iter().find_map(|(field, value, max)| {
        (!(0.0..=max).contains(&value)).then(|| {
            Msg::new(
                format!("{field} : nombre de 0 à {max} attendu"),
                format!("{field}: a number from 0 to {max} is expected"),
            )
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_numbered_as_sent_blank_ones_skipped_and_bad_ones_refused() {
        let raw = b"{\"a\":1}\n\n[1]\r\n{oops\n\xff\xfe\n{\"b\":2}\r\n";
        let (obs, refused) = split(raw, None);
        assert_eq!(obs.iter().map(|o| o.line).collect::<Vec<_>>(), [1, 6]);
        assert_eq!(
            refused
                .iter()
                .map(|r| (r.line, r.error.as_str()))
                .collect::<Vec<_>>(),
            [
                (3, "invalid_line"),
                (4, "invalid_line"),
                (5, "invalid_line")
            ]
        );
        let (obs, refused) = split(b"<13>Nov 22 host a=b\n", Some("line"));
        assert!(refused.is_empty());
        assert_eq!(obs[0].value, json!({"line": "<13>Nov 22 host a=b"}));
    }

    #[test]
    fn a_compression_bomb_is_refused_once_past_the_limit() {
        use std::io::Write;
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        let zeros = vec![b'\n'; 1024 * 1024];
        for _ in 0..17 {
            enc.write_all(&zeros).expect("write");
        }
        let bomb = enc.finish().expect("gzip");
        assert!(bomb.len() < 64 * 1024);
        let e = decompress(bomb.into(), true).expect_err("too large");
        assert_eq!(e.code, ErrorCode::PayloadTooLarge);
        assert_eq!(
            decompress(bytes::Bytes::from_static(b"not gzip"), true)
                .expect_err("invalid")
                .code,
            ErrorCode::InvalidBody
        );
    }

    #[test]
    fn texts_are_bounded_and_required_ones_given() {
        let long = "é".repeat(11);
        let bad = |texts: &[(&str, Option<&str>, bool)]| {
            bad_text(10, texts.iter().copied()).map(|m| m.en.into_owned())
        };
        assert_eq!(
            bad(&[
                ("a", Some("é".repeat(10).as_str()), true),
                ("b", None, false)
            ]),
            None
        );
        for (texts, field) in [
            (
                vec![("a", Some("x"), true), ("b", Some(long.as_str()), false)],
                "b",
            ),
            (vec![("a", Some(" "), false)], "a"),
            (vec![("a", Some("x"), true), ("c", None, true)], "c"),
        ] {
            let why = bad(&texts).expect("refused");
            assert!(why.starts_with(&format!("{field}: ")), "{why}");
        }
    }

    #[test]
    fn refusal_messages_are_bounded() {
        let r = LineError::InvalidObservation.refuse(1, Msg::new("é".repeat(400), "x".repeat(400)));
        assert!(r.message_fr.len() <= 304 && r.message_en.len() <= 304);
    }
}
