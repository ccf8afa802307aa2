//! `tools/call`: the tool's arguments become a REST request sent through the whole API
//! (every data module mounted under the same gate) on behalf of the caller, so the scope
//! check, the handlers' validation and the write log apply exactly as for a REST call; the
//! token was checked on the MCP message that carries the call, and the call counted by it.

use std::sync::{Arc, Mutex, PoisonError};

use axum::Router;
use axum::body::{Body, Bytes};
use http::{HeaderMap, HeaderValue, Method, Request, StatusCode, header};
use http_body_util::{BodyExt, LengthLimitError, Limited};
use netops_shared::http::OnBehalfOf;
use netops_shared::routes::BASE_PATH;
use netops_shared::{AppState, Caller};
use serde_json::{Map, Value};
use tower::ServiceExt;

use crate::tools::{In, Tool, path_params};

/// The inner application for `state`, built once per state (one per process in service;
/// tests run several apps side by side). Each entry holds its state, so its key (the
/// address of the state's configuration) cannot be reused while the entry lives.
fn inner_app(state: &AppState) -> Router {
    static APPS: Mutex<Vec<(usize, Router)>> = Mutex::new(Vec::new());
    let key = Arc::as_ptr(&state.config) as usize;
    let mut apps = APPS.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some((_, app)) = apps.iter().find(|(k, _)| *k == key) {
        return app.clone();
    }
    let app = netops_shared::http::in_process_app(netops_api::reads(), state.clone());
    apps.push((key, app.clone()));
    app
}

/// Arguments that do not fit the tool's input schema (JSON-RPC -32602).
#[derive(Debug)]
pub struct BadArguments(pub String);

/// The REST path and query string for a call of `tool` with `args`.
pub fn target(tool: &Tool, args: &Map<String, Value>) -> Result<String, BadArguments> {
    for name in args.keys() {
        if tool.param(name).is_none() {
            let admitted: Vec<&str> = tool.params.iter().map(|p| p.name.as_str()).collect();
            return Err(BadArguments(format!(
                "unknown argument '{name}' for tool '{}'; admitted: {}",
                tool.name(),
                if admitted.is_empty() {
                    "none".to_owned()
                } else {
                    admitted.join(", ")
                }
            )));
        }
    }
    let mut path = String::with_capacity(BASE_PATH.len() + tool.route.path.len() + 16);
    path.push_str(BASE_PATH);
    let mut params = path_params(tool.route.path);
    for segment in tool.route.path.split('/').skip(1) {
        path.push('/');
        if segment.starts_with('{') {
            let name = params.next().unwrap_or_default();
            let value = args
                .get(name)
                .filter(|v| !v.is_null())
                .ok_or_else(|| BadArguments(format!("missing required argument '{name}'")))?;
            let value = scalar(value).filter(|v| !v.is_empty()).ok_or_else(|| {
                BadArguments(format!(
                    "argument '{name}' must be a non-empty string or number"
                ))
            })?;
            encode_segment(&value, &mut path);
        } else {
            path.push_str(segment);
        }
    }
    let mut query = form_urlencoded::Serializer::new(String::new());
    let mut any = false;
    for p in tool.params.iter().filter(|p| p.location == In::Query) {
        let Some(value) = args.get(&p.name).filter(|v| !v.is_null()) else {
            continue;
        };
        match value {
            Value::Array(items) if p.array => {
                let mut values = Vec::with_capacity(items.len());
                for item in items {
                    values.push(scalar(item).ok_or_else(|| {
                        BadArguments(format!(
                            "argument '{}' must be a list of strings or numbers",
                            p.name
                        ))
                    })?);
                }
                if p.explode {
                    for v in &values {
                        query.append_pair(&p.name, v);
                    }
                } else if !values.is_empty() {
                    query.append_pair(&p.name, &values.join(","));
                }
                any = any || !values.is_empty();
            }
            other => {
                let value = scalar(other).ok_or_else(|| {
                    BadArguments(format!(
                        "argument '{}' must be a string, number or boolean",
                        p.name
                    ))
                })?;
                query.append_pair(&p.name, &value);
                any = true;
            }
        }
    }
    if any {
        path.push('?');
        path.push_str(&query.finish());
    }
    Ok(path)
}

fn scalar(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// Percent-encodes one path segment: everything but unreserved characters, and dots too
/// when the segment is only dots (so `..` stays a value, never a path step).
fn encode_segment(value: &str, out: &mut String) {
    let only_dots = value.bytes().all(|b| b == b'.');
    for b in value.bytes() {
        let keep = b.is_ascii_alphanumeric()
            || matches!(b, b'-' | b'_' | b'~')
            || (b == b'.' && !only_dots);
        if keep {
            out.push(b as char);
        } else {
            out.push('%');
            out.push(char::from(b"0123456789ABCDEF"[usize::from(b >> 4)]));
            out.push(char::from(b"0123456789ABCDEF"[usize::from(b & 15)]));
        }
    }
}

/// A REST body longer than the room its tool result had: dropped unread.
#[derive(Debug)]
pub struct TooLarge;

/// Sends `GET uri` through the inner application on behalf of `caller`, with its token and
/// language, and reads at most `limit` bytes of the answer. The gate checks route and scope as
/// for any call, but neither authenticates nor counts it again: the MCP message that carries
/// it was checked, and counted the call (so a tool call costs one call of the rate limit, like
/// the REST call it stands for).
pub async fn send(
    state: &AppState,
    caller: &Caller,
    request_id: &str,
    uri: &str,
    outer: &HeaderMap,
    limit: usize,
) -> Result<(StatusCode, Bytes), TooLarge> {
    let mut req = Request::builder()
        .method(Method::GET)
        .uri(uri)
        .extension(OnBehalfOf {
            caller: caller.clone(),
            request_id: request_id.to_owned(),
        });
    for name in [header::AUTHORIZATION, header::ACCEPT_LANGUAGE] {
        if let Some(v) = outer.get(&name) {
            req = req.header(name, v.clone());
        }
    }
    req = req.header(header::USER_AGENT, HeaderValue::from_static("netops-mcp"));
    let Ok(req) = req.body(Body::empty()) else {
        return Ok((StatusCode::INTERNAL_SERVER_ERROR, Bytes::new()));
    };
    let res = match inner_app(state).oneshot(req).await {
        Ok(res) => res,
        Err(never) => match never {},
    };
    let status = res.status();
    match Limited::new(res.into_body(), limit).collect().await {
        Ok(body) => Ok((status, body.to_bytes())),
        Err(e) if e.is::<LengthLimitError>() => Err(TooLarge),
        Err(e) => {
            tracing::error!(error = %e, "tool call body unreadable");
            Ok((StatusCode::INTERNAL_SERVER_ERROR, Bytes::new()))
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::tools::build;

    fn args(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn arguments_become_an_encoded_path_and_query() {
        let doc = json!({"paths": {"/monitors/{id}/incidents": {"get": {"parameters": [
            {"name": "id", "in": "path", "required": true, "schema": {"type": "integer"}},
            {"name": "status", "in": "query", "schema": {"type": "array", "items": {"type": "string"}}},
            {"name": "tag", "in": "query", "explode": true, "schema": {"type": "array", "items": {"type": "string"}}},
            {"name": "open", "in": "query", "schema": {"type": "boolean"}},
        ]}}}});
        let tools = build(&doc, netops_shared::lang::Lang::En);
        let tool = tools
            .iter()
            .find(|t| t.name() == "list_monitor_incidents")
            .expect("tool");
        let uri = target(
            tool,
            &args(
                json!({"id": 12, "status": ["open", "closed"], "tag": ["a b", "c"], "open": true,
                "limit": 5, "period": null}),
            ),
        )
        .expect("valid");
        assert_eq!(
            uri,
            "/api/v1/monitors/12/incidents?limit=5&status=open%2Cclosed&tag=a+b&tag=c&open=true"
        );
        let uri = target(tool, &args(json!({"id": "../x y"}))).expect("valid");
        assert_eq!(uri, "/api/v1/monitors/..%2Fx%20y/incidents");
        let uri = target(tool, &args(json!({"id": ".."}))).expect("valid");
        assert_eq!(uri, "/api/v1/monitors/%2E%2E/incidents");
        assert!(target(tool, &args(json!({"id": 1, "status": [{"a": 1}]}))).is_err());
        assert!(target(tool, &args(json!({"id": 1, "open": {"x": true}}))).is_err());
        assert!(
            target(tool, &args(json!({"id": true}))).is_ok(),
            "a scalar is sent as text"
        );
        assert!(target(tool, &args(json!({}))).is_err());
    }
}
