//! The unified alert feed (`list_alerts` in the OpenAPI description): monitor incidents, SIEM
//! incidents and NetDiag alerts mapped onto one item shape and one severity scale.

use chrono::{DateTime, Utc};
use netops_shared::lookup::decode;
use netops_shared::store::{Filter, Pred, doc_time};
use netops_shared::{ApiError, AppState, Window, time};
use serde::Serialize;
use serde_json::{Value, json};

pub use crate::model::Origin;
use crate::model::{
    AlertItem, AlertState, MONITOR_INCIDENTS, MonitorIncident, MonitorIncidentKind,
    MonitorIncidentStatus, NETDIAG_ALERTS, NetdiagAlert, SIEM_INCIDENTS, SiemAction, SiemIncident,
    SiemSeverity, SiemStatus,
};

/// Parses `kind`: a comma-separated list among the origins; absent means all three.
pub fn parse_kinds(raw: Option<&str>) -> Result<Vec<Origin>, ApiError> {
    let Some(raw) = raw else {
        return Ok(Origin::ALL.to_vec());
    };
    let mut kinds = Vec::new();
    for part in raw.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let origin = Origin::parse(part).ok_or_else(|| {
            ApiError::invalid_parameter(
                "kind",
                "liste séparée par des virgules parmi netdiag, hostmonitor, siem",
                "comma-separated list among netdiag, hostmonitor, siem",
            )
        })?;
        if !kinds.contains(&origin) {
            kinds.push(origin);
        }
    }
    Ok(if kinds.is_empty() {
        Origin::ALL.to_vec()
    } else {
        kinds
    })
}

/// Parses `status`: `open` gives true (in progress only), `all` or absent false.
pub fn parse_open_only(raw: Option<&str>) -> Result<bool, ApiError> {
    match raw {
        None | Some("all") => Ok(false),
        Some("open") => Ok(true),
        Some(_) => Err(ApiError::invalid_parameter(
            "status",
            "valeurs admises : open, all",
            "allowed values: open, all",
        )),
    }
}

/// A stored monitor incident with its duration computed at `now` (to `now` while it lasts).
pub fn timed(mut inc: MonitorIncident, now: DateTime<Utc>) -> MonitorIncident {
    inc.duration_s = (inc.resolved_at.unwrap_or(now) - inc.started_at)
        .num_seconds()
        .max(0);
    inc
}

pub fn monitor_item(inc: &MonitorIncident) -> AlertItem {
    let what = match inc.kind {
        MonitorIncidentKind::Down => "hors service",
        MonitorIncidentKind::Degraded => "dégradé",
    };
    AlertItem {
        id: inc.alert_id.clone(),
        kind: Origin::Hostmonitor,
        severity: inc.severity,
        status: AlertState::open_if(inc.status != MonitorIncidentStatus::Resolved),
        title: format!("{} : {what}", inc.monitor_name),
        target: inc.target.clone(),
        opened_at: inc.started_at,
        resolved_at: inc.resolved_at,
        acknowledged: inc.status == MonitorIncidentStatus::Acknowledged
            || inc.acknowledged_at.is_some(),
        acknowledged_by: inc.acknowledged_by.clone(),
        acknowledged_at: inc.acknowledged_at,
        details: time::to_value(inc).unwrap_or(Value::Null),
    }
}

pub fn siem_item(inc: &SiemIncident) -> AlertItem {
    // The last `ack` action says who and when; an incident imported as ACKNOWLEDGED may have
    // none, and is acknowledged all the same.
    let ack = inc.actions.iter().rev().find(|a| a.action == "ack");
    AlertItem {
        id: format!("siem-{}", inc.id),
        kind: Origin::Siem,
        severity: inc.severity.to_severity(),
        status: AlertState::open_if(inc.status.in_progress()),
        title: inc.title.clone(),
        target: inc
            .hosts
            .first()
            .or(inc.accounts.first())
            .cloned()
            .unwrap_or_default(),
        opened_at: inc.opened_at,
        resolved_at: inc.closed_at,
        acknowledged: ack.is_some() || inc.status == SiemStatus::Acknowledged,
        acknowledged_by: ack.map(|a| a.by.clone()),
        acknowledged_at: ack.map(|a| a.at),
        details: time::to_value(&SiemDetails {
            incident_id: &inc.id,
            state: inc.status,
            severity: inc.severity,
            rule_id: &inc.rule_id,
            rule_name: &inc.rule_name,
            accounts: &inc.accounts,
            hosts: &inc.hosts,
            source_ips: &inc.source_ips,
            event_count: inc.event_count,
            updated_at: inc.updated_at,
            actions: &inc.actions,
        })
        .unwrap_or(Value::Null),
    }
}

/// `details` of a SIEM incident's alert.
#[derive(Serialize)]
struct SiemDetails<'a> {
    incident_id: &'a str,
    state: SiemStatus,
    severity: SiemSeverity,
    rule_id: &'a str,
    rule_name: &'a str,
    accounts: &'a [String],
    hosts: &'a [String],
    source_ips: &'a [String],
    event_count: u64,
    updated_at: DateTime<Utc>,
    actions: &'a [SiemAction],
}

fn netdiag_item(a: NetdiagAlert) -> AlertItem {
    AlertItem {
        status: a.status,
        kind: Origin::Netdiag,
        severity: a.severity,
        target: a.hostname.clone(),
        opened_at: a.opened_at,
        resolved_at: a.resolved_at,
        acknowledged: false,
        acknowledged_by: None,
        acknowledged_at: None,
        details: json!({
            "hostname": a.hostname,
            "verdict": a.verdict,
            "cause": a.cause,
        }),
        title: a.title,
        id: a.id,
    }
}

/// An alert before it is built: enough to filter and sort, the stored body kept as is, so
/// only the items of the page are mapped (the feed can hold thousands of candidates).
struct Candidate {
    opened_at: DateTime<Utc>,
    id: String,
    origin: Origin,
    body: Value,
}

fn text<'a>(body: &'a Value, field: &str) -> &'a str {
    body.get(field).and_then(Value::as_str).unwrap_or("")
}

/// The candidates of one origin, newest first: what is in progress now, plus (unless
/// `open_only`) what opened in the window; at most `limit` of them. Returns them with the
/// origin's number of alerts before the cut.
async fn candidates(
    state: &AppState,
    tenant: &str,
    origin: Origin,
    open_only: bool,
    window: &Window,
    limit: usize,
) -> Result<(Vec<Candidate>, usize), ApiError> {
    let (collection, open_filter, opened_field) = match origin {
        Origin::Hostmonitor => (
            MONITOR_INCIDENTS,
            Pred::Ne("status", json!(MonitorIncidentStatus::Resolved)),
            "started_at",
        ),
        Origin::Siem => (
            SIEM_INCIDENTS,
            Pred::In(
                "status",
                SiemStatus::IN_PROGRESS.iter().map(|s| json!(s)).collect(),
            ),
            "opened_at",
        ),
        Origin::Netdiag => (
            NETDIAG_ALERTS,
            Pred::Eq("status", json!(AlertState::Open)),
            "opened_at",
        ),
    };
    let in_progress = Filter::all().and(open_filter);
    // What is in progress, and what ended since the window's start: every alert opened in
    // the window is among them.
    let since = (!open_only).then_some(window.from);
    let docs = state
        .stores
        .docs
        .live_since(tenant, collection, since)
        .await?
        .items;
    let mut out = Vec::with_capacity(docs.len());
    for doc in docs {
        let Some(opened_at) = doc_time(&doc.body, opened_field) else {
            // NetDiag alerts are written by another module: one of another shape is skipped.
            tracing::warn!(key = %doc.key, collection, "alert of unexpected shape skipped");
            continue;
        };
        let opened_in_window = opened_at >= window.from && opened_at < window.to;
        if !(in_progress.matches(&doc.body) || (!open_only && opened_in_window)) {
            continue;
        }
        let id = match origin {
            Origin::Hostmonitor => text(&doc.body, "alert_id").to_owned(),
            Origin::Siem => format!("siem-{}", text(&doc.body, "id")),
            Origin::Netdiag => text(&doc.body, "id").to_owned(),
        };
        out.push(Candidate {
            opened_at,
            id,
            origin,
            body: doc.body,
        });
    }
    let total = out.len();
    newest_first(&mut out);
    out.truncate(limit);
    Ok((out, total))
}

/// Newest opened first, ties by id (descending).
fn newest_first(candidates: &mut [Candidate]) {
    candidates.sort_by(|a, b| b.opened_at.cmp(&a.opened_at).then_with(|| b.id.cmp(&a.id)));
}

fn build(c: Candidate, now: DateTime<Utc>) -> Result<Option<AlertItem>, ApiError> {
    Ok(match c.origin {
        Origin::Hostmonitor => Some(monitor_item(&timed(decode(c.body)?, now))),
        Origin::Siem => Some(siem_item(&decode::<SiemIncident>(c.body)?)),
        Origin::Netdiag => match serde_json::from_value::<NetdiagAlert>(c.body) {
            Ok(a) => Some(netdiag_item(a)),
            Err(e) => {
                tracing::warn!(id = %c.id, cause = %e, "netdiag alert of unexpected shape skipped");
                None
            }
        },
    })
}

/// The feed, newest first (ties by id): what is in progress now, plus with
/// `open_only == false` what opened within the window. Returns the first `limit` items and
/// the number of alerts before the cut.
pub async fn collect(
    state: &AppState,
    tenant: &str,
    kinds: &[Origin],
    open_only: bool,
    window: &Window,
    limit: usize,
    now: DateTime<Utc>,
) -> Result<(Vec<AlertItem>, usize), ApiError> {
    let load = |o: Origin| async move {
        if kinds.contains(&o) {
            candidates(state, tenant, o, open_only, window, limit).await
        } else {
            Ok((Vec::new(), 0))
        }
    };
    let ((a, na), (b, nb), (c, nc)) = tokio::try_join!(
        load(Origin::Hostmonitor),
        load(Origin::Siem),
        load(Origin::Netdiag)
    )?;
    let mut all: Vec<Candidate> = a.into_iter().chain(b).chain(c).collect();
    newest_first(&mut all);
    let total = na + nb + nc;
    all.truncate(limit);
    let mut items = Vec::with_capacity(all.len());
    for c in all {
        if let Some(item) = build(c, now)? {
            items.push(item);
        }
    }
    Ok((items, total))
}
