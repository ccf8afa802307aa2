//! The agent simulator of the local process (demo data): it completes the
//! queued diagnostic actions of online machines, writing the result event an agent would
//! report, so the whole flow of an action can be seen on one machine. A machine with an
//! enrolled agent (docs/agent.md) is left to it.

use std::net::IpAddr;

use crate::TENANTS;
use chrono::{Duration, Utc};
use netops_shared::module::BoxFuture;
use netops_shared::store::{Filter, Pred, Record};
use netops_shared::{ApiError, AppState};
use rand::Rng;
use serde_json::{Value, json};

use crate::netdiag::{speeds, trace_hops};
use netops_netdiag::model::{
    ACTIONS, AGENTS, Action, ActionKind, ActionStatus, AgentStatus, EVENTS, MACHINES, Severity,
};

/// Seconds an action stays queued before an online agent reports it.
const AGENT_DELAY: i64 = 3;

/// The agent simulator: every two seconds, completes the queued actions of online machines.
pub fn worker(state: AppState) -> BoxFuture<'static, ()> {
    Box::pin(async move {
        let mut tick = tokio::time::interval(std::time::Duration::from_secs(2));
        loop {
            tick.tick().await;
            for tenant in TENANTS {
                if let Err(e) = complete_queued(&state, tenant.id).await {
                    tracing::warn!(cause = %e.message.en, tenant = tenant.id, "agent simulator");
                }
            }
        }
    })
}

/// Completes the due actions of online machines of one tenant; returns how many.
pub async fn complete_queued(state: &AppState, tenant: &str) -> Result<usize, ApiError> {
    let filter = Filter::all().and(Pred::Eq("status", json!(ActionStatus::Queued)));
    let queued = state
        .stores
        .docs
        .list(tenant, ACTIONS, &filter, None, 200)
        .await?;
    let now = Utc::now();
    let mut done = 0;
    for doc in queued {
        let Ok(mut action) = serde_json::from_value::<Action>(doc.body) else {
            continue;
        };
        if now - action.requested_at < Duration::seconds(AGENT_DELAY) {
            continue;
        }
        let Some(machine) = state
            .stores
            .docs
            .get(tenant, MACHINES, &action.hostname)
            .await?
        else {
            continue;
        };
        if machine.body["status"] != json!(AgentStatus::Online)
            || state
                .stores
                .docs
                .get(tenant, AGENTS, &action.hostname)
                .await?
                .is_some()
        {
            continue;
        }
        let ip = machine.body["ip"].as_str().unwrap_or("10.0.0.10");
        let gateway = match ip.rsplit_once('.') {
            Some((net, _)) => format!("{net}.1"),
            None => "10.0.0.1".into(),
        };
        let (message, details) = result(&action, &gateway);
        let event_id = format!("ev-{}", action.action_id);
        let body = json!({
            "id": event_id, "at": now, "source": action.action, "severity": Severity::Info,
            "message": message, "details": details,
        });
        state
            .stores
            .series_writes
            .append(
                tenant,
                EVENTS,
                vec![Record {
                    partition: action.hostname.clone(),
                    ts: now.timestamp_millis(),
                    id: event_id.clone(),
                    body,
                }],
            )
            .await?;
        action.status = ActionStatus::Completed;
        action.completed_at = Some(now);
        action.event_id = Some(event_id);
        let value = serde_json::to_value(&action).map_err(|e| ApiError::internal(&e))?;
        state
            .stores
            .docs
            .put(tenant, ACTIONS, vec![(doc.key, value)])
            .await?;
        done += 1;
    }
    Ok(done)
}

/// The result the agent reports: message and details of the event.
fn result(action: &Action, gateway: &str) -> (String, Value) {
    let mut rng = rand::rng();
    match action.action {
        ActionKind::Trace => {
            let target = action.target.clone().unwrap_or_else(|| gateway.to_owned());
            let hops = if target == gateway {
                vec![
                    json!({"hop": 1, "address": gateway, "ms": (rng.random_range(0.5..4.0f64) * 10.0).round() / 10.0}),
                ]
            } else {
                let address = if target.parse::<IpAddr>().is_ok() {
                    target.clone()
                } else {
                    format!("203.0.113.{}", rng.random_range(2..250))
                };
                trace_hops(&mut rng, gateway, &address)
            };
            let last = hops.last().and_then(|h| h["ms"].as_f64()).unwrap_or(0.0);
            (
                format!(
                    "Traceroute vers {target} : {} saut(s), {last} ms",
                    hops.len()
                ),
                json!({"target": target, "gateway": action.target.is_none(), "hops": hops, "action_id": action.action_id}),
            )
        }
        ActionKind::Speed => {
            let (down, up) = speeds(&mut rng);
            (
                format!(
                    "Test de débit : {down} Mbit/s descendant, {up} Mbit/s montant (20 Mo / 8 Mo)"
                ),
                json!({"down_mbps": down, "up_mbps": up, "down_mb": 20, "up_mb": 8, "server": "speedtest.netops.example", "action_id": action.action_id}),
            )
        }
        ActionKind::Capture => {
            let seconds = action.seconds.unwrap_or(30);
            let packets = u64::from(seconds) * rng.random_range(150..900);
            let file = format!("{}-{}.pcapng", action.hostname, action.action_id);
            (
                format!("Capture réseau terminée : {seconds} s, {packets} paquets ({file})"),
                json!({"seconds": seconds, "packets": packets, "file": file, "action_id": action.action_id}),
            )
        }
    }
}
