//! One structured log line per request under Lambda, in CloudWatch Embedded Metric Format
//! (EMF): CloudWatch Logs turns it into metrics without another service, and the same line
//! is what an operator searches by route, status or request id.
//!
//! The line names the function and the route (its `operationId`, so the dimension has one
//! value per route of the table, never a raw path), the status and the latency; the metrics
//! are `Latency` (ms), `Fault` (1 for a 5xx), and what the request cost DynamoDB:
//! `DynamoCalls` (requests sent, retries included), `ReadUnits` and `WriteUnits` (capacity
//! consumed, as DynamoDB reports it).
//!
//! Every metric and dimension value CloudWatch sees is a custom metric billed by the month, so
//! the sets are chosen to keep their number bounded by the route table: all five metrics by
//! function ([`BY_FUNCTION`]), and only `Latency` and `Fault` by function and route
//! ([`BY_ROUTE`]): 5 per function plus 2 per route, whatever the traffic or the tenants
//! (`bench/bill.py` counts them from the template). A route's store costs stay in the line
//! itself, for Logs Insights to sum by route, tenant or anything else the line carries.

use std::io::Write;
use std::sync::Arc;
use std::time::Instant;

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;
use http::Method;
use serde_json::{Value, json};

use crate::auth::Caller;
use crate::http::X_REQUEST_ID;
use crate::routes::{self, BASE_PATH, Match};
use crate::store::usage::{Counted, Usage};

/// The CloudWatch namespace of the metrics.
pub const NAMESPACE: &str = "netops";

/// The route dimension of a request that matches no route (unknown path or method).
const NO_ROUTE: &str = "none";

/// The metrics of the line, by function.
pub const BY_FUNCTION: [&str; 5] = ["Latency", "Fault", "DynamoCalls", "ReadUnits", "WriteUnits"];

/// The metrics of the line also kept by function and route.
pub const BY_ROUTE: [&str; 2] = ["Latency", "Fault"];

/// A metric's CloudWatch unit.
fn unit(metric: &str) -> &'static str {
    if metric == "Latency" {
        "Milliseconds"
    } else {
        "Count"
    }
}

/// One EMF directive: these metrics, by these dimensions.
fn directive(dimensions: &[&str], metrics: &[&str]) -> Value {
    json!({
        "Namespace": NAMESPACE,
        "Dimensions": [dimensions],
        "Metrics": metrics
            .iter()
            .map(|m| json!({"Name": m, "Unit": unit(m)}))
            .collect::<Vec<_>>(),
    })
}

/// What one request's line reports.
#[derive(Debug, Clone, PartialEq)]
pub struct Served<'a> {
    pub function: &'a str,
    pub route: &'static str,
    pub status: u16,
    pub latency_ms: f64,
    pub request_id: &'a str,
    /// Milliseconds since the epoch, when the answer was sent.
    pub at_ms: i64,
    pub store: Counted,
    /// The caller's tenant and token name, when the token was known: properties of the line
    /// (for Logs Insights to sum usage by tenant), never dimensions, so the number of metrics
    /// does not grow with the tenants.
    pub caller: Option<(&'a str, &'a str)>,
}

/// The route table's name for a request, or [`NO_ROUTE`].
pub fn route_of(method: &Method, path: &str) -> &'static str {
    match path
        .strip_prefix(BASE_PATH)
        .map(|rest| routes::find(method, rest))
    {
        Some(Match::Found(route)) => route.op,
        _ => NO_ROUTE,
    }
}

/// The EMF document of one request.
pub fn line(s: &Served<'_>) -> Value {
    json!({
        "_aws": {
            "Timestamp": s.at_ms,
            "CloudWatchMetrics": [
                directive(&["Function"], &BY_FUNCTION),
                directive(&["Function", "Route"], &BY_ROUTE),
            ],
        },
        "Function": s.function,
        "Route": s.route,
        "Latency": (s.latency_ms * 1000.0).round() / 1000.0,
        "Fault": u8::from(s.status >= 500),
        "DynamoCalls": s.store.calls,
        "ReadUnits": s.store.read_units,
        "WriteUnits": s.store.write_units,
        "status": s.status,
        "request_id": s.request_id,
        "tenant": s.caller.map(|(tenant, _)| tenant),
        "token": s.caller.map(|(_, token)| token),
    })
}

/// Middleware writing [`line`] to stdout once the answer is ready, for the function named
/// in its state (outside the gate, so the status and request id are the caller's).
pub async fn emit(State(function): State<Arc<str>>, req: Request, next: Next) -> Response {
    let started = Instant::now();
    let route = route_of(req.method(), req.uri().path());
    let (res, store) = Usage::measure(next.run(req)).await;
    let request_id = res
        .headers()
        .get(X_REQUEST_ID)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    let caller = res.extensions().get::<Caller>();
    let doc = line(&Served {
        function: &function,
        route,
        status: res.status().as_u16(),
        latency_ms: started.elapsed().as_secs_f64() * 1000.0,
        request_id,
        at_ms: chrono::Utc::now().timestamp_millis(),
        store,
        caller: caller.map(|c| (c.tenant.as_str(), c.token_name.as_str())),
    });
    // One write of the whole line, so lines of concurrent requests never interleave.
    let mut text = doc.to_string();
    text.push('\n');
    let _ = std::io::stdout().lock().write_all(text.as_bytes());
    res
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_declared_metric_and_dimension_is_a_member_of_the_line() {
        let doc = line(&Served {
            function: "netops-fleet",
            route: route_of(&Method::GET, "/api/v1/machines/PAR-LT-0001"),
            status: 503,
            latency_ms: 12.34567,
            request_id: "abc",
            at_ms: 1_700_000_000_000,
            store: Counted {
                calls: 3,
                read_units: 1.5,
                write_units: 1.0,
            },
            caller: Some(("acme", "grafana")),
        });
        let specs = doc["_aws"]["CloudWatchMetrics"]
            .as_array()
            .expect("directives");
        let mut series = 0;
        for spec in specs {
            assert_eq!(spec["Namespace"], NAMESPACE);
            let sets = spec["Dimensions"].as_array().expect("dimension sets");
            for set in sets {
                for d in set.as_array().expect("a set") {
                    let name = d.as_str().expect("a name");
                    assert!(doc[name].is_string(), "dimension {name} is a string member");
                }
            }
            let metrics = spec["Metrics"].as_array().expect("metrics");
            for m in metrics {
                let name = m["Name"].as_str().expect("a name");
                assert!(doc[name].is_number(), "metric {name} is a number member");
            }
            series += sets.len() * metrics.len();
        }
        // What bench/bill.py counts per function and route: 5 + 2 metrics a line.
        assert_eq!(series, BY_FUNCTION.len() + BY_ROUTE.len());
        assert_eq!(specs[1]["Metrics"][0]["Unit"], "Milliseconds");
        assert_eq!(doc["Route"], "get_machine");
        assert_eq!(doc["Latency"], 12.346);
        assert_eq!(doc["Fault"], 1);
        assert_eq!(doc["status"], 503);
        assert_eq!(doc["_aws"]["Timestamp"], 1_700_000_000_000_i64);
        assert_eq!(doc["DynamoCalls"], 3);
        assert_eq!(doc["ReadUnits"], 1.5);
        assert_eq!(
            (&doc["tenant"], &doc["token"]),
            (&json!("acme"), &json!("grafana"))
        );
    }

    #[test]
    fn requests_outside_the_route_table_share_one_route_value() {
        assert_eq!(route_of(&Method::GET, "/api/v1/nowhere"), NO_ROUTE);
        assert_eq!(route_of(&Method::DELETE, "/api/v1/machines"), NO_ROUTE);
        assert_eq!(route_of(&Method::GET, "/elsewhere"), NO_ROUTE);
        assert_eq!(
            route_of(&Method::POST, "/api/v1/alerts/7/ack"),
            "acknowledge_alert"
        );
    }
}
