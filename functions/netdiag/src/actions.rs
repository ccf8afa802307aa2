//! Diagnostic actions (docs/writes.md#diagnostic-actions): validation of the request and the
//! action's id. An agent claims them and posts their results ([`crate::agent`]).

use std::net::IpAddr;

use chrono::Utc;
use netops_shared::ApiError;
use rand::Rng;
use serde_json::{Map, Value};

use crate::model::ActionKind;

/// What a valid request asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    pub action: ActionKind,
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
        Some("trace") => ActionKind::Trace,
        Some("speed") => ActionKind::Speed,
        Some("capture") => ActionKind::Capture,
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
        Some(_) if action != ActionKind::Trace => {
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
        None | Some(Value::Null) => (action == ActionKind::Capture).then_some(30),
        Some(_) if action != ActionKind::Capture => {
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

#[cfg(test)]
mod tests {
    use serde_json::json;

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
