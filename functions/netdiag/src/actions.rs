//! Diagnostic actions (spec 4.5, actions table): validation of the request and the agent
//! simulator of the local process, which completes queued actions of online machines.

use std::net::IpAddr;

use chrono::{Duration, Utc};
use netops_shared::demo::TENANTS;
use netops_shared::module::BoxFuture;
use netops_shared::store::{DynStore, Filter, Pred, Record};
use netops_shared::{ApiError, AppState};
use rand::Rng;
use serde_json::{Map, Value, json};

use crate::model::{ACTIONS, Action, EVENTS, MACHINES};
use crate::seed::{speeds, trace_hops};

/// What a valid request asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    pub action: &'static str,
    pub target: Option<String>,
    pub seconds: Option<u32>,
}

fn bad(name: &str, fr: &str, en: &str) -> ApiError {
    ApiError::invalid_parameter(name, fr, en)
}

/// A host name or an IP address.
fn valid_target(s: &str) -> bool {
    if s.parse::<IpAddr>().is_ok() {
        return true;
    }
    s.len() <= 253
        && s.split('.').all(|l| {
            !l.is_empty()
                && l.len() <= 63
                && !l.starts_with('-')
                && !l.ends_with('-')
                && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
        })
}

pub fn parse(body: &Map<String, Value>) -> Result<Request, ApiError> {
    if let Some(k) = body
        .keys()
        .find(|k| !matches!(k.as_str(), "action" | "target" | "seconds"))
    {
        return Err(bad(
            k,
            "clé inconnue (admises : action, target, seconds)",
            "unknown key (admitted: action, target, seconds)",
        ));
    }
    let action = match body.get("action").and_then(Value::as_str) {
        Some("trace") => "trace",
        Some("speed") => "speed",
        Some("capture") => "capture",
        _ => {
            return Err(bad(
                "action",
                "valeurs admises : trace, speed, capture",
                "allowed values: trace, speed, capture",
            ));
        }
    };
    let target = match body.get("target") {
        None | Some(Value::Null) => None,
        Some(_) if action != "trace" => {
            return Err(bad(
                "target",
                "réservé à l'action trace",
                "only for the trace action",
            ));
        }
        Some(v) => match v.as_str() {
            Some(s) if valid_target(s) => Some(s.to_owned()),
            _ => {
                return Err(bad(
                    "target",
                    "nom d'hôte ou adresse IP attendu",
                    "expected a host name or an IP address",
                ));
            }
        },
    };
    let seconds = match body.get("seconds") {
        None | Some(Value::Null) => (action == "capture").then_some(30),
        Some(_) if action != "capture" => {
            return Err(bad(
                "seconds",
                "réservé à l'action capture",
                "only for the capture action",
            ));
        }
        Some(v) => match v.as_u64() {
            Some(n) if (5..=120).contains(&n) => Some(n as u32),
            _ => {
                return Err(bad(
                    "seconds",
                    "entier de 5 à 120 attendu",
                    "expected an integer from 5 to 120",
                ));
            }
        },
    };
    Ok(Request {
        action,
        target,
        seconds,
    })
}

/// A new action id: time then randomness, unique in practice.
pub fn new_id() -> String {
    let mut rng = rand::rng();
    format!(
        "act-{:x}-{:06x}",
        Utc::now().timestamp_millis(),
        rng.random_range(0..0x100_0000u32)
    )
}

/// Seconds an action stays queued before an online agent reports it.
const AGENT_DELAY: i64 = 3;

/// The agent simulator: every two seconds, completes the queued actions of online machines.
pub fn worker(state: AppState) -> BoxFuture<'static, ()> {
    Box::pin(async move {
        let mut tick = tokio::time::interval(std::time::Duration::from_secs(2));
        loop {
            tick.tick().await;
            for tenant in TENANTS {
                if let Err(e) = complete_queued(&state.store, tenant.id).await {
                    tracing::warn!(cause = %e.message.en, tenant = tenant.id, "agent simulator");
                }
            }
        }
    })
}

/// Completes the due actions of online machines of one tenant; returns how many.
pub async fn complete_queued(store: &DynStore, tenant: &str) -> Result<usize, ApiError> {
    let filter = Filter::all().and(Pred::Eq("status", json!("queued")));
    let queued = store.list_docs(tenant, ACTIONS, &filter, None, 200).await?;
    let now = Utc::now();
    let mut done = 0;
    for doc in queued {
        let Ok(mut action) = serde_json::from_value::<Action>(doc.body) else {
            continue;
        };
        if now - action.requested_at < Duration::seconds(AGENT_DELAY) {
            continue;
        }
        let Some(machine) = store.get_doc(tenant, MACHINES, &action.hostname).await? else {
            continue;
        };
        if machine.body["status"] != "online" {
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
            "id": event_id, "at": now, "source": action.action, "severity": "info",
            "message": message, "details": details,
        });
        store
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
        action.status = "completed".into();
        action.completed_at = Some(now);
        action.event_id = Some(event_id);
        let value = serde_json::to_value(&action).map_err(|e| ApiError::internal(&e))?;
        store
            .put_docs(tenant, ACTIONS, vec![(doc.key, value)])
            .await?;
        done += 1;
    }
    Ok(done)
}

/// The result the agent reports: message and details of the event.
fn result(action: &Action, gateway: &str) -> (String, Value) {
    let mut rng = rand::rng();
    match action.action.as_str() {
        "trace" => {
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
        "speed" => {
            let (down, up) = speeds(&mut rng);
            (
                format!(
                    "Test de débit : {down} Mbit/s descendant, {up} Mbit/s montant (20 Mo / 8 Mo)"
                ),
                json!({"down_mbps": down, "up_mbps": up, "down_mb": 20, "up_mb": 8, "server": "speedtest.netops.example", "action_id": action.action_id}),
            )
        }
        _ => {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn p(v: Value) -> Result<Request, ApiError> {
        parse(v.as_object().expect("object"))
    }

    #[test]
    fn actions_follow_the_table() {
        assert_eq!(p(json!({"action": "trace"})).expect("ok").target, None);
        assert_eq!(
            p(json!({"action": "trace", "target": "8.8.8.8"}))
                .expect("ok")
                .target
                .as_deref(),
            Some("8.8.8.8")
        );
        assert_eq!(
            p(json!({"action": "capture"})).expect("ok").seconds,
            Some(30)
        );
        assert_eq!(
            p(json!({"action": "capture", "seconds": 120}))
                .expect("ok")
                .seconds,
            Some(120)
        );
        assert_eq!(p(json!({"action": "speed"})).expect("ok").seconds, None);
        for bad in [
            json!({}),
            json!({"action": "ping"}),
            json!({"action": 3}),
            json!({"action": "capture", "seconds": 4}),
            json!({"action": "capture", "seconds": 121}),
            json!({"action": "capture", "seconds": "30"}),
            json!({"action": "speed", "target": "x.y"}),
            json!({"action": "trace", "seconds": 30}),
            json!({"action": "trace", "target": "bad host!"}),
            json!({"action": "trace", "extra": 1}),
        ] {
            assert!(p(bad.clone()).is_err(), "{bad}");
        }
    }
}
