//! Active tracing (the template's `Tracing: Active`): the DynamoDB calls of each sampled request
//! become subsegments of its function's X-Ray segment, sent as segment documents over UDP to the
//! daemon Lambda runs beside the function (`AWS_XRAY_DAEMON_ADDRESS`), as the X-Ray SDKs do.
//! Rust has no official X-Ray SDK; the documents are small and their format public (the X-Ray
//! developer guide, "Segment documents"), so this writes them without one, and adds no
//! dependency to the packages.
//!
//! The trace header comes from the invocation (the Runtime API's `Lambda-Runtime-Trace-Id`):
//! `Root` names the trace, `Parent` the function's segment, `Sampled=1` whether to send. A
//! request not sampled records nothing.

use std::net::UdpSocket;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;
use lambda_http::Context;
use netops_shared::store::usage::{TracedCall, Usage};
use serde_json::json;

/// The header line every segment document starts with.
const HEADER: &str = "{\"format\":\"json\",\"version\":1}\n";

/// The daemon's UDP address and a socket to send from.
pub struct Daemon {
    socket: UdpSocket,
    address: String,
}

impl Daemon {
    /// The daemon `AWS_XRAY_DAEMON_ADDRESS` names (`host:port`, or the `udp:host:port
    /// tcp:host:port` form), if set.
    pub fn from_env() -> Option<Self> {
        let value = std::env::var("AWS_XRAY_DAEMON_ADDRESS").ok()?;
        let address = value
            .split_whitespace()
            .find_map(|part| part.strip_prefix("udp:"))
            .or_else(|| value.split_whitespace().next())?
            .to_owned();
        let socket = UdpSocket::bind("0.0.0.0:0").ok()?;
        socket.set_nonblocking(true).ok()?;
        Some(Self { socket, address })
    }
}

/// What the trace header says: the trace, the parent segment, if sampled.
#[derive(Debug, PartialEq)]
struct Header<'a> {
    root: &'a str,
    parent: &'a str,
}

fn sampled(header: &str) -> Option<Header<'_>> {
    let (mut root, mut parent, mut sampled) = (None, None, false);
    for field in header.split(';') {
        match field.trim().split_once('=') {
            Some(("Root", v)) => root = Some(v),
            Some(("Parent", v)) => parent = Some(v),
            Some(("Sampled", v)) => sampled = v == "1",
            _ => {}
        }
    }
    Some(Header {
        root: root?,
        parent: parent?,
    })
    .filter(|_| sampled)
}

/// The subsegment document of one call.
fn subsegment(header: &Header<'_>, call: &TracedCall) -> serde_json::Value {
    let status = call.status;
    json!({
        "name": call.service,
        "id": format!("{:016x}", rand::random::<u64>()),
        "trace_id": header.root,
        "parent_id": header.parent,
        "type": "subsegment",
        "namespace": "aws",
        "start_time": call.start,
        "end_time": call.end,
        "aws": {"operation": call.operation, "request_id": call.request_id},
        "http": {"response": {"status": status}},
        "error": status.is_some_and(|s| (400..500).contains(&s)),
        "fault": status.is_none_or(|s| s >= 500),
    })
}

/// Middleware: a sampled request runs traced, and its calls go to the daemon once it is
/// answered (a datagram each; a lost one loses that subsegment only).
pub async fn trace(State(daemon): State<Arc<Daemon>>, req: Request, next: Next) -> Response {
    let header = req
        .extensions()
        .get::<Context>()
        .and_then(|c| c.xray_trace_id.clone());
    let Some(header) = header else {
        return next.run(req).await;
    };
    let Some(parsed) = sampled(&header) else {
        return next.run(req).await;
    };
    let (res, calls) = Usage::tracing(next.run(req)).await;
    for call in &calls {
        let doc = format!("{HEADER}{}", subsegment(&parsed, call));
        if let Err(e) = daemon.socket.send_to(doc.as_bytes(), &daemon.address) {
            tracing::debug!(error = %e, "X-Ray segment not sent");
        }
    }
    res
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_sampled_header_with_its_parent_is_traced() {
        let h = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1";
        assert_eq!(
            sampled(h),
            Some(Header {
                root: "1-5759e988-bd862e3fe1be46a994272793",
                parent: "53995c3f42cd8ad8"
            })
        );
        assert_eq!(sampled(&h.replace("Sampled=1", "Sampled=0")), None);
        assert_eq!(
            sampled("Root=1-5759e988-bd862e3fe1be46a994272793;Sampled=1"),
            None
        );
    }
}
