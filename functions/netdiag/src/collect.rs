//! How what the NetDiag agents report is written (docs/collect.md#kinds):
//!
//! - events (`netdiag-event`): each stored in its machine's feed ([`EVENTS`], what
//!   `/netdiag/machines/{hostname}/events` reads) under an id made of its content, once
//!   however often it is sent. The sources the product derives itself (verdict changes,
//!   alerts, applications' verdicts) are never taken.
//! - measurements (`netdiag-measurement`): each stored ([`MEASURES`]) with the verdict the
//!   product gives it ([`crate::derive::classify`]); a change of verdict closes and opens the
//!   machine's periods ([`PERIODS`]) and alerts ([`ALERTS`]), with their events, and the
//!   machine's state ([`STATES`]) follows its latest measurement.

use std::collections::{BTreeMap, HashSet};

use chrono::{DateTime, Utc};
use netops_shared::collect::{Batch, CollectKind, OnMachine, content_id, schema_of};
use netops_shared::module::BoxFuture;
use netops_shared::store::{Expect, LineRefusal, Record, StoreError, StoreResult};
use netops_shared::{Msg, Scope};
use serde::Deserialize;
use serde_json::{Value, json};
use utoipa::ToSchema;

use crate::derive::{alert_title, classify, severity};
use crate::model::{
    ALERTS, Alert, AlertState, EVENTS, HIDDEN_SOURCES, Latencies, Link, Loss, MEASURES,
    Measurement, PERIODS, Period, ProbeResult, SOURCES, STATES, Severity, State, Verdict, Wireless,
};

/// `POST /collect/netdiag-event`.
pub const EVENT: CollectKind = CollectKind {
    name: "netdiag-event",
    scope: Scope::CollectNetdiag,
    text_field: None,
    schema: schema_of::<EventLine>,
    write: write_events,
    agents: true,
};

/// The sources of the feed the product derives from the measurements, never sent.
pub const DERIVED_SOURCES: [&str; 3] = ["verdict", "alert", "appv"];

/// Longest message kept.
const MESSAGE_MAX: usize = 2000;

/// Évènement du journal d'une machine, tel que son agent NetDiag l'a vu. La machine doit être
/// connue du compte (ses battements de cœur la créent) : sinon `unknown_reference`. `source`
/// est l'une des sources du journal (`app`, `teams`, `ap`, `vpn`, `wlan`, `driver`, `trace`,
/// `speed`, `capture`, `netprofile`, `switch`, `dhcp`, `power`, `wan`, `tcpfail`, `proc`,
/// `install`, ou les sources sensibles `file` et `fg`, gardées mais jamais renvoyées) ; les
/// sources `verdict`, `alert` et `appv` sont calculées par le produit à partir des mesures et
/// sont refusées, comme une source inconnue, un message vide ou de plus de 2 000 caractères
/// (`invalid_observation`). Un évènement renvoyé, dans n'importe quel lot, est gardé une
/// fois. Alimente `/netdiag/machines/{hostname}/events` (et les évènements notables du
/// rapport PDF).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = CollectNetdiagEvent)]
pub struct EventLine {
    pub at: DateTime<Utc>,
    /// Nom d'hôte de la machine.
    #[schema(example = "PAR-LT-0004")]
    pub machine: String,
    #[schema(example = "wlan")]
    pub source: String,
    #[schema(inline)]
    pub severity: Severity,
    #[schema(example = "Itinérance vers AP-PAR-2F-04 (signal -58 dBm)")]
    pub message: String,
    /// Détails propres à la source (objet JSON).
    #[serde(default)]
    #[schema(value_type = Object)]
    pub details: Option<serde_json::Map<String, Value>>,
}

fn write_events<'a>(batch: &'a Batch<'a>) -> BoxFuture<'a, StoreResult<Vec<LineRefusal>>> {
    Box::pin(write(batch))
}

impl OnMachine for EventLine {
    fn machine(&self) -> &str {
        &self.machine
    }

    fn at(&self) -> DateTime<Utc> {
        self.at
    }

    fn invalid(&self) -> Option<Msg> {
        invalid(self)
    }
}

/// Why an event cannot be kept, if it cannot: the field at fault.
fn invalid(l: &EventLine) -> Option<Msg> {
    let source = l.source.as_str();
    if DERIVED_SOURCES.contains(&source) {
        return Some(Msg::new(
            format!("source : « {source} » est calculée par le produit, jamais envoyée"),
            format!("source: '{source}' is computed by the product, never sent"),
        ));
    }
    if !SOURCES.contains(&source) && !HIDDEN_SOURCES.contains(&source) {
        return Some(Msg::new(
            format!("source : source inconnue « {source} »"),
            format!("source: unknown source '{source}'"),
        ));
    }
    if l.message.trim().is_empty() || l.message.chars().count() > MESSAGE_MAX {
        return Some(Msg::new(
            "message : de 1 à 2 000 caractères",
            "message: 1 to 2,000 characters",
        ));
    }
    None
}

async fn write(batch: &Batch<'_>) -> StoreResult<Vec<LineRefusal>> {
    let mut refused = Vec::new();
    let mut records = Vec::new();
    let mut seen = HashSet::new();
    for (_, l) in batch.read_on_machines::<EventLine>(&mut refused).await? {
        let mut body = json!({"at": l.at, "source": l.source, "severity": l.severity,
            "message": l.message, "details": l.details.unwrap_or_default()});
        let id = content_id("ev", l.at, &json!([l.machine, body]))?;
        if !seen.insert(id.clone()) {
            continue;
        }
        body["id"] = json!(id);
        records.push(Record {
            partition: l.machine,
            ts: l.at.timestamp_millis(),
            id,
            body,
        });
    }
    if !records.is_empty() {
        batch
            .stores
            .series_writes
            .append(batch.tenant, EVENTS, records)
            .await?;
    }
    Ok(refused)
}

/// `POST /collect/netdiag-measurement`.
pub const MEASUREMENT: CollectKind = CollectKind {
    name: "netdiag-measurement",
    scope: Scope::CollectNetdiag,
    text_field: None,
    schema: schema_of::<MeasurementLine>,
    write: write_measurements,
    agents: true,
};

/// Mesure de l'agent NetDiag d'une machine (toutes les 15 minutes) : lien, Wi-Fi, latences,
/// pertes et sondes. Le verdict et sa cause sont calculés par le produit, jamais envoyés
/// (un champ `verdict` ou `cause` est refusé), du poste vers l'extérieur : lien coupé (PC),
/// pertes vers la passerelle d'au moins 5 % ou passerelle à 80 ms ou plus (LAN, le signal
/// Wi-Fi mis en cause à -75 dBm ou moins), passerelle à 50 ms ou plus sans perte (PC), pertes
/// vers la passerelle d'au moins 2 % (INFRA), pertes vers Internet d'au moins 10 % ou Internet
/// à 300 ms ou plus ou sans réponse (WAN), sonde DNS en échec ou résolution à 1 000 ms ou plus
/// ou sans réponse (DNS), une autre sonde en échec (SERVICE), sinon OK. Un changement de
/// verdict clôt et ouvre les périodes et les alertes NetDiag de la machine (`nd-…`, résolues
/// au retour à OK, de gravité croissante avec la durée), avec leurs évènements `verdict` et
/// `alert`. La machine doit être connue du compte (`unknown_reference`) ; des pertes hors de
/// 0 à 100 %, une latence négative ou une sonde en échec avec une durée sont refusées
/// (`invalid_observation`). Une mesure plus ancienne que la dernière reçue de la machine est
/// gardée sans changer son état ; une mesure renvoyée, dans n'importe quel lot, ne compte
/// qu'une fois. Alimente `/netdiag/machines` (verdict, alerte en cours), `/netdiag/machines/
/// {hostname}/summary` (dernière mesure, répartition des verdicts, causes), `/events`,
/// `/apps`, le rapport PDF et les alertes NetDiag de `/alerts`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = CollectNetdiagMeasurement)]
pub struct MeasurementLine {
    pub at: DateTime<Utc>,
    /// Nom d'hôte de la machine.
    #[schema(example = "PAR-LT-0004")]
    pub machine: String,
    #[schema(inline)]
    pub link: Link,
    /// État Wi-Fi, quand le lien est Wi-Fi et connecté.
    #[serde(default)]
    #[schema(inline)]
    pub wireless: Option<Wireless>,
    #[schema(inline)]
    pub latency_ms: Latencies,
    #[schema(inline)]
    pub loss_pct: Loss,
    #[serde(default)]
    #[schema(inline)]
    pub probes: Vec<ProbeResult>,
}

fn write_measurements<'a>(batch: &'a Batch<'a>) -> BoxFuture<'a, StoreResult<Vec<LineRefusal>>> {
    Box::pin(write_measures(batch))
}

impl OnMachine for MeasurementLine {
    fn machine(&self) -> &str {
        &self.machine
    }

    fn at(&self) -> DateTime<Utc> {
        self.at
    }

    fn invalid(&self) -> Option<Msg> {
        invalid_measure(self)
    }
}

/// Why a measurement cannot be kept, if it cannot: the field at fault.
fn invalid_measure(l: &MeasurementLine) -> Option<Msg> {
    let pct = |x: f64| x.is_finite() && (0.0..=100.0).contains(&x);
    if !pct(l.loss_pct.gateway) || !pct(l.loss_pct.internet) {
        return Some(Msg::new("loss_pct : de 0 à 100 %", "loss_pct: 0 to 100 %"));
    }
    let ms = |x: Option<f64>| x.is_none_or(|x| x.is_finite() && x >= 0.0);
    let lat = &l.latency_ms;
    if !(ms(lat.gateway) && ms(lat.dns) && ms(lat.internet)) {
        return Some(Msg::new(
            "latency_ms : nombre positif attendu",
            "latency_ms: a positive number is expected",
        ));
    }
    if l.probes
        .iter()
        .any(|p| !ms(p.ms) || (!p.ok && p.ms.is_some()))
    {
        return Some(Msg::new(
            "probes : durée négative, ou durée d'une sonde en échec",
            "probes: negative time, or the time of a failed probe",
        ));
    }
    None
}

fn data<T: serde::Serialize>(t: &T) -> StoreResult<Value> {
    serde_json::to_value(t).map_err(|e| StoreError::Data(e.to_string()))
}

/// What a batch's measurements of one machine write, besides its state.
#[derive(Default)]
struct Derived {
    measures: Vec<Record>,
    periods: Vec<Record>,
    events: Vec<Record>,
    alerts: Vec<(String, Value)>,
}

impl Derived {
    fn event(
        &mut self,
        host: &str,
        at: DateTime<Utc>,
        source: &str,
        severity: Severity,
        message: String,
        details: Value,
    ) -> StoreResult<()> {
        let mut body = json!({"at": at, "source": source, "severity": severity,
            "message": message, "details": details});
        let id = content_id("ev", at, &json!([host, body]))?;
        body["id"] = json!(id);
        self.events.push(Record {
            partition: host.to_owned(),
            ts: at.timestamp_millis(),
            id,
            body,
        });
        Ok(())
    }

    fn period(&mut self, host: &str, p: &Period) -> StoreResult<()> {
        self.periods.push(Record {
            partition: host.to_owned(),
            ts: p.start.timestamp_millis(),
            id: format!("p-{}", p.start.timestamp_millis()),
            body: data(p)?,
        });
        Ok(())
    }
}

/// The alert a machine's episode opened at `start`.
fn alert_id(host: &str, start: DateTime<Utc>) -> String {
    format!("nd-{host}-{}", start.timestamp())
}

async fn write_measures(batch: &Batch<'_>) -> StoreResult<Vec<LineRefusal>> {
    let mut refused = Vec::new();
    // Each machine's measurements, in time order (one per instant).
    let mut per_machine: BTreeMap<String, BTreeMap<DateTime<Utc>, Measurement>> = BTreeMap::new();
    for (_, l) in batch
        .read_on_machines::<MeasurementLine>(&mut refused)
        .await?
    {
        let mut m = Measurement {
            at: l.at,
            verdict: Verdict::OK,
            cause: None,
            link: l.link,
            wireless: l.wireless,
            latency_ms: l.latency_ms,
            loss_pct: l.loss_pct,
            probes: l.probes,
        };
        (m.verdict, m.cause) = classify(&m);
        per_machine.entry(l.machine).or_default().insert(l.at, m);
    }
    for (host, measures) in per_machine {
        write_machine(batch, &host, measures).await?;
    }
    Ok(refused)
}

/// Writes one machine's measurements and what follows from them, its state last: a batch
/// stopped before writes its derived records again under the same ids when sent again. The
/// state is put at the version read: another batch of the same machine taken in meanwhile
/// makes this one fail (503), and, sent again, it is judged on the state that batch left.
async fn write_machine(
    batch: &Batch<'_>,
    host: &str,
    measures: BTreeMap<DateTime<Utc>, Measurement>,
) -> StoreResult<()> {
    let docs = &batch.stores.docs;
    let stored = docs.get(batch.tenant, STATES, host).await?;
    let expect = stored
        .as_ref()
        .map_or(Expect::Absent, |d| Expect::Version(d.version));
    let mut state: Option<State> = stored
        .map(|d| serde_json::from_value(d.body))
        .transpose()
        .map_err(|e| StoreError::Data(e.to_string()))?;
    let before = state.as_ref().map(|s| s.last_measure_at);
    let mut out = Derived::default();
    for (at, m) in measures {
        out.measures.push(Record {
            partition: host.to_owned(),
            ts: at.timestamp_millis(),
            id: format!("m-{}", at.timestamp()),
            body: data(&m)?,
        });
        // A measurement older than the latest one applied is kept, and changes nothing.
        if state.as_ref().is_some_and(|s| at <= s.last_measure_at) {
            continue;
        }
        state = Some(step(batch, host, state, &m, &mut out).await?);
    }
    let w = &batch.stores.series_writes;
    for (series, records) in [
        (MEASURES, out.measures),
        (PERIODS, out.periods),
        (EVENTS, out.events),
    ] {
        if !records.is_empty() {
            w.append(batch.tenant, series, records).await?;
        }
    }
    if !out.alerts.is_empty() {
        docs.put(batch.tenant, ALERTS, out.alerts).await?;
    }
    match state {
        Some(st) if before != Some(st.last_measure_at) => {
            docs.put_if(batch.tenant, STATES, host, data(&st)?, expect)
                .await
        }
        _ => Ok(()),
    }
}

/// The machine's state after measurement `m`, newer than its latest: the periods, alerts and
/// events of a change of verdict go to `out`.
async fn step(
    batch: &Batch<'_>,
    host: &str,
    state: Option<State>,
    m: &Measurement,
    out: &mut Derived,
) -> StoreResult<State> {
    let mut st = state.unwrap_or_else(|| State {
        hostname: host.to_owned(),
        verdict: Verdict::OK,
        cause: None,
        since: m.at,
        last_measure_at: m.at,
        first_measure_at: m.at,
        open_alert: None,
    });
    let open = match &st.open_alert {
        Some(id) => batch
            .stores
            .docs
            .get(batch.tenant, ALERTS, id)
            .await?
            .map(|d| serde_json::from_value::<Alert>(d.body))
            .transpose()
            .map_err(|e| StoreError::Data(e.to_string()))?,
        None => None,
    };
    // The alert written earlier in this batch is the latest.
    let open = match (&st.open_alert, open) {
        (Some(id), stored) => out
            .alerts
            .iter()
            .rev()
            .find(|(k, _)| k == id)
            .map(|(_, b)| serde_json::from_value::<Alert>(b.clone()))
            .transpose()
            .map_err(|e| StoreError::Data(e.to_string()))?
            .or(stored),
        (None, _) => None,
    };
    let changed = m.verdict != st.verdict;
    if changed && st.verdict != Verdict::OK {
        // The episode ends: its period closes, its alert resolves.
        let minutes = (m.at - st.since).num_minutes();
        let cause = st.cause.clone().unwrap_or_default();
        out.period(
            host,
            &Period {
                start: st.since,
                end: Some(m.at),
                verdict: st.verdict,
                cause,
                executable: None,
            },
        )?;
        let v = st.verdict.as_str();
        out.event(
            host,
            m.at,
            "verdict",
            Severity::Info,
            format!("Verdict {v} → {} après {minutes} min", m.verdict.as_str()),
            json!({"from": v, "to": m.verdict, "duration_min": minutes}),
        )?;
        if let Some(mut alert) = open {
            alert.status = AlertState::Resolved;
            alert.resolved_at = Some(m.at);
            alert.severity = severity(alert.verdict, minutes);
            out.event(
                host,
                m.at,
                "alert",
                Severity::Info,
                format!(
                    "Alerte {} résolue : verdict {}",
                    alert.id,
                    m.verdict.as_str()
                ),
                json!({"alert_id": alert.id, "state": AlertState::Resolved}),
            )?;
            out.alerts.push((alert.id.clone(), data(&alert)?));
        }
        st.open_alert = None;
    } else if !changed && st.verdict != Verdict::OK {
        // The episode goes on: its alert's severity follows its length.
        if let Some(mut alert) = open {
            let sev = severity(alert.verdict, (m.at - st.since).num_minutes());
            if sev != alert.severity {
                alert.severity = sev;
                out.alerts.push((alert.id.clone(), data(&alert)?));
            }
        }
    }
    if changed && m.verdict != Verdict::OK {
        // An episode starts: its period opens, its alert opens.
        let cause = m.cause.clone().unwrap_or_default();
        out.period(
            host,
            &Period {
                start: m.at,
                end: None,
                verdict: m.verdict,
                cause: cause.clone(),
                executable: None,
            },
        )?;
        let (from, to) = (st.verdict.as_str(), m.verdict.as_str());
        if st.verdict == Verdict::OK {
            out.event(
                host,
                m.at,
                "verdict",
                Severity::Low,
                format!("Verdict {from} → {to} : {cause}"),
                json!({"from": from, "to": to, "cause": cause}),
            )?;
        }
        let id = alert_id(host, m.at);
        let title = alert_title(m.verdict, host, &cause);
        out.event(
            host,
            m.at,
            "alert",
            Severity::Info,
            format!("Alerte {id} ouverte : {title}"),
            json!({"alert_id": id, "state": AlertState::Open, "severity": Severity::Info}),
        )?;
        let alert = Alert {
            id: id.clone(),
            hostname: host.to_owned(),
            verdict: m.verdict,
            cause,
            severity: Severity::Info,
            status: AlertState::Open,
            title,
            opened_at: m.at,
            resolved_at: None,
        };
        out.alerts.push((id.clone(), data(&alert)?));
        st.open_alert = Some(id);
    }
    if changed {
        st.since = m.at;
    }
    st.verdict = m.verdict;
    st.cause = m.cause.clone();
    st.last_measure_at = m.at;
    Ok(st)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(source: &str, message: &str) -> EventLine {
        EventLine {
            at: Utc::now(),
            machine: "PAR-LT-0001".into(),
            source: source.into(),
            severity: Severity::Info,
            message: message.into(),
            details: None,
        }
    }

    #[test]
    fn derived_and_unknown_sources_are_refused() {
        assert!(invalid(&line("wlan", "roaming")).is_none());
        assert!(invalid(&line("file", "opened")).is_none());
        for (source, message) in [
            ("verdict", "x"),
            ("alert", "x"),
            ("appv", "x"),
            ("nope", "x"),
            ("wlan", " "),
        ] {
            assert!(invalid(&line(source, message)).is_some(), "{source}");
        }
    }
}
