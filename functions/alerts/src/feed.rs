//! The unified alert feed (spec 2.4, 4.6): monitor incidents, SIEM incidents and NetDiag
//! alerts mapped onto one item shape and one severity scale.

use chrono::{DateTime, Utc};
use netops_shared::store::{Doc, Filter, Pred};
use netops_shared::{ApiError, AppState, Window};
use serde_json::{Value, json};

use crate::model::{
    AlertItem, MONITOR_INCIDENTS, MonitorIncident, NETDIAG_ALERTS, NetdiagAlert, SIEM_INCIDENTS,
    SiemIncident,
};

/// Origins of the feed, in the spelling of the `kind` parameter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    Netdiag,
    Hostmonitor,
    Siem,
}

impl Origin {
    pub const ALL: [Origin; 3] = [Origin::Netdiag, Origin::Hostmonitor, Origin::Siem];

    pub fn as_str(self) -> &'static str {
        match self {
            Origin::Netdiag => "netdiag",
            Origin::Hostmonitor => "hostmonitor",
            Origin::Siem => "siem",
        }
    }

    fn parse(s: &str) -> Option<Origin> {
        Origin::ALL.into_iter().find(|o| o.as_str() == s)
    }
}

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

/// SIEM states that count as in progress (spec 3.1).
pub fn siem_in_progress(status: &str) -> bool {
    matches!(status, "OPEN" | "ACKNOWLEDGED" | "INVESTIGATING")
}

fn siem_severity(s: &str) -> &'static str {
    match s {
        "CRITICAL" => "critical",
        "HIGH" => "high",
        "MEDIUM" => "medium",
        "LOW" => "low",
        _ => "info",
    }
}

fn feed_severity(s: &str) -> &'static str {
    match s {
        "critical" => "critical",
        "high" => "high",
        "medium" => "medium",
        "low" => "low",
        _ => "info",
    }
}

fn open_or_resolved(open: bool) -> String {
    if open { "open" } else { "resolved" }.to_owned()
}

/// A monitor incident with its duration computed at `now`.
pub fn monitor_incident(doc: &Doc, now: DateTime<Utc>) -> Result<MonitorIncident, ApiError> {
    let mut inc: MonitorIncident =
        serde_json::from_value(doc.body.clone()).map_err(|e| ApiError::internal(&e))?;
    inc.duration_s = (inc.resolved_at.unwrap_or(now) - inc.started_at)
        .num_seconds()
        .max(0);
    Ok(inc)
}

pub fn monitor_item(inc: &MonitorIncident) -> AlertItem {
    let what = if inc.kind == "down" {
        "hors service"
    } else {
        "dégradé"
    };
    AlertItem {
        id: inc.alert_id.clone(),
        kind: Origin::Hostmonitor.as_str().into(),
        severity: feed_severity(&inc.severity).into(),
        status: open_or_resolved(inc.status != "resolved"),
        title: format!("{} : {what}", inc.monitor_name),
        target: inc.target.clone(),
        opened_at: inc.started_at,
        resolved_at: inc.resolved_at,
        details: serde_json::to_value(inc).unwrap_or(Value::Null),
    }
}

pub fn siem_item(inc: &SiemIncident) -> AlertItem {
    AlertItem {
        id: format!("siem-{}", inc.id),
        kind: Origin::Siem.as_str().into(),
        severity: siem_severity(&inc.severity).into(),
        status: open_or_resolved(siem_in_progress(&inc.status)),
        title: inc.title.clone(),
        target: inc
            .hosts
            .first()
            .or(inc.accounts.first())
            .cloned()
            .unwrap_or_default(),
        opened_at: inc.opened_at,
        resolved_at: inc.closed_at,
        details: json!({
            "incident_id": inc.id,
            "state": inc.status,
            "severity": inc.severity,
            "rule_id": inc.rule_id,
            "rule_name": inc.rule_name,
            "accounts": inc.accounts,
            "hosts": inc.hosts,
            "source_ips": inc.source_ips,
            "event_count": inc.event_count,
            "updated_at": inc.updated_at,
            "actions": inc.actions,
        }),
    }
}

fn netdiag_item(a: NetdiagAlert) -> AlertItem {
    AlertItem {
        status: open_or_resolved(a.status == "open"),
        kind: Origin::Netdiag.as_str().into(),
        severity: feed_severity(&a.severity).into(),
        target: a.hostname.clone(),
        opened_at: a.opened_at,
        resolved_at: a.resolved_at,
        details: json!({
            "hostname": a.hostname,
            "verdict": a.verdict,
            "cause": a.cause,
        }),
        title: a.title,
        id: a.id,
    }
}

/// Everything of the tenant in one collection, or only what matches `filter`.
async fn docs(
    state: &AppState,
    tenant: &str,
    collection: &str,
    filter: &Filter,
) -> Result<Vec<Doc>, ApiError> {
    Ok(state
        .store
        .list_docs(tenant, collection, filter, None, usize::MAX)
        .await?)
}

/// The feed, newest first (ties by id), before the page limit: what is in progress now,
/// plus with `open_only == false` what opened within the window.
pub async fn collect(
    state: &AppState,
    tenant: &str,
    kinds: &[Origin],
    open_only: bool,
    window: &Window,
    now: DateTime<Utc>,
) -> Result<Vec<AlertItem>, ApiError> {
    let in_window = |t: DateTime<Utc>| t >= window.from && t < window.to;
    let mut items = Vec::new();
    for origin in kinds {
        match origin {
            Origin::Hostmonitor => {
                let filter = if open_only {
                    Filter::all().and(Pred::Ne("status", json!("resolved")))
                } else {
                    Filter::all()
                };
                for doc in docs(state, tenant, MONITOR_INCIDENTS, &filter).await? {
                    let inc = monitor_incident(&doc, now)?;
                    if inc.status != "resolved" || (!open_only && in_window(inc.started_at)) {
                        items.push(monitor_item(&inc));
                    }
                }
            }
            Origin::Siem => {
                let filter = if open_only {
                    Filter::all().and(Pred::In(
                        "status",
                        vec![json!("OPEN"), json!("ACKNOWLEDGED"), json!("INVESTIGATING")],
                    ))
                } else {
                    Filter::all()
                };
                for doc in docs(state, tenant, SIEM_INCIDENTS, &filter).await? {
                    let inc: SiemIncident =
                        serde_json::from_value(doc.body).map_err(|e| ApiError::internal(&e))?;
                    if siem_in_progress(&inc.status) || (!open_only && in_window(inc.opened_at)) {
                        items.push(siem_item(&inc));
                    }
                }
            }
            Origin::Netdiag => {
                let filter = if open_only {
                    Filter::all().and(Pred::Eq("status", json!("open")))
                } else {
                    Filter::all()
                };
                for doc in docs(state, tenant, NETDIAG_ALERTS, &filter).await? {
                    // Written by another module: a document of another shape is skipped, not fatal.
                    let alert: NetdiagAlert = match serde_json::from_value(doc.body) {
                        Ok(a) => a,
                        Err(e) => {
                            tracing::warn!(key = %doc.key, cause = %e, "netdiag alert of unexpected shape skipped");
                            continue;
                        }
                    };
                    if alert.status == "open" || (!open_only && in_window(alert.opened_at)) {
                        items.push(netdiag_item(alert));
                    }
                }
            }
        }
    }
    items.sort_by(|a, b| b.opened_at.cmp(&a.opened_at).then_with(|| b.id.cmp(&a.id)));
    Ok(items)
}
