//! The protocol: JSON-RPC 2.0 over stateless streamable HTTP (MCP 2025-03-26, 2025-06-18,
//! 2025-11-25). Every message is one POST with the same bearer token; answers are JSON,
//! never event streams, and no session id is issued.

use axum::body::Body;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use http::{HeaderMap, HeaderValue, StatusCode, header};
use netops_shared::error::ApiError;
use netops_shared::extract::BODY_LIMIT;
use netops_shared::{AppState, Caller};
use serde::de::IgnoredAny;
use serde_json::{Map, Value, json};

use crate::call;
use crate::tools::{self, Tool};

pub use netops_shared::routes::MCP_PROTOCOL_VERSIONS as PROTOCOL_VERSIONS;
pub const MCP_PROTOCOL_VERSION: &str = "mcp-protocol-version";

pub const PARSE_ERROR: i64 = -32700;
pub const INVALID_REQUEST: i64 = -32600;
pub const METHOD_NOT_FOUND: i64 = -32601;
pub const INVALID_PARAMS: i64 = -32602;

const INSTRUCTIONS: &str = "Outils en lecture seule sur les données du compte client du jeton \
(supervision réseau : parc, flux, NetDiag, alertes, inventaire, sécurité, bases, pare-feu, DNS, fichiers, réseau). \
Chaque outil appelle la route REST v1 du même nom (operationId) ; le résultat est le corps JSON de la réponse, \
{data, meta}. Listes paginées : repasser meta.next_cursor comme cursor avec les mêmes filtres. \
Fenêtres : period ou from/to (RFC 3339) ; meta.window donne la fenêtre appliquée. \
Une erreur REST revient avec isError et le corps {error, message}.";

/// `POST /mcp`. Its OpenAPI operation is written in the docs crate (`mcp_operation`), which
/// this crate builds its tools from.
pub async fn mcp(
    State(state): State<AppState>,
    caller: Caller,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let Ok(bytes) = axum::body::to_bytes(body, BODY_LIMIT).await else {
        return ApiError::payload_too_large().into_response();
    };
    if let Some(v) = headers.get(MCP_PROTOCOL_VERSION)
        && !v
            .to_str()
            .is_ok_and(|v| PROTOCOL_VERSIONS.contains(&v.trim()))
    {
        let supported = PROTOCOL_VERSIONS.join(", ");
        let msg = format!("Bad Request: unsupported MCP-Protocol-Version; supported: {supported}");
        return reply(
            StatusCode::BAD_REQUEST,
            error(&Value::Null, INVALID_REQUEST, &msg, None).bytes,
        );
    }
    let Ok(message) = serde_json::from_slice::<Value>(&bytes) else {
        let answer = error(
            &Value::Null,
            PARSE_ERROR,
            "Parse error: the body is not JSON",
            None,
        );
        return reply(StatusCode::BAD_REQUEST, answer.bytes);
    };
    let ctx = Ctx {
        state: &state,
        caller: &caller,
        headers: &headers,
    };
    match message {
        Value::Array(batch) if !batch.is_empty() => {
            let mut out = Vec::new();
            for m in &batch {
                if let Some(a) = ctx.handle(m).await {
                    out.push(if out.is_empty() { b'[' } else { b',' });
                    out.extend_from_slice(&a.bytes);
                }
            }
            if out.is_empty() {
                return accepted();
            }
            out.push(b']');
            reply(StatusCode::OK, out)
        }
        single => match ctx.handle(&single).await {
            None => accepted(),
            Some(answer) => {
                let status = if matches!(answer.code, Some(PARSE_ERROR | INVALID_REQUEST)) {
                    StatusCode::BAD_REQUEST
                } else {
                    StatusCode::OK
                };
                reply(status, answer.bytes)
            }
        },
    }
}

fn reply(status: StatusCode, bytes: Vec<u8>) -> Response {
    let mut res = (status, bytes).into_response();
    res.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    res
}

fn accepted() -> Response {
    StatusCode::ACCEPTED.into_response()
}

/// One serialized JSON-RPC response, with its error code if it is an error.
struct Answer {
    bytes: Vec<u8>,
    code: Option<i64>,
}

/// A response whose `result` is already serialized JSON.
fn result_raw(id: &Value, result: &[u8]) -> Answer {
    let mut bytes = Vec::with_capacity(result.len() + 48);
    bytes.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
    bytes.extend_from_slice(&serde_json::to_vec(id).unwrap_or_else(|_| b"null".to_vec()));
    bytes.extend_from_slice(br#","result":"#);
    bytes.extend_from_slice(result);
    bytes.push(b'}');
    Answer { bytes, code: None }
}

fn result(id: &Value, result: &Value) -> Answer {
    result_raw(id, &serde_json::to_vec(result).unwrap_or_default())
}

fn error(id: &Value, code: i64, message: &str, data: Option<Value>) -> Answer {
    let mut err = json!({"code": code, "message": message});
    if let Some(d) = data {
        err["data"] = d;
    }
    let body = json!({"jsonrpc": "2.0", "id": id, "error": err});
    Answer {
        bytes: serde_json::to_vec(&body).unwrap_or_default(),
        code: Some(code),
    }
}

struct Ctx<'a> {
    state: &'a AppState,
    caller: &'a Caller,
    headers: &'a HeaderMap,
}

impl Ctx<'_> {
    /// One JSON-RPC message; `None` for notifications and client responses (no answer).
    async fn handle(&self, message: &Value) -> Option<Answer> {
        let Some(obj) = message.as_object() else {
            return Some(error(
                &Value::Null,
                INVALID_REQUEST,
                "Invalid Request: a JSON-RPC message is an object",
                None,
            ));
        };
        let id = obj.get("id");
        let valid_id = id
            .filter(|i| i.is_string() || i.is_i64() || i.is_u64())
            .cloned();
        let answer_id = valid_id.clone().unwrap_or(Value::Null);
        if obj.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
            return Some(error(
                &answer_id,
                INVALID_REQUEST,
                "Invalid Request: jsonrpc must be \"2.0\"",
                None,
            ));
        }
        let Some(method) = obj.get("method") else {
            // A response from the client (to a request we never send): accepted, ignored.
            if id.is_some() && (obj.contains_key("result") || obj.contains_key("error")) {
                return None;
            }
            return Some(error(
                &answer_id,
                INVALID_REQUEST,
                "Invalid Request: method is missing",
                None,
            ));
        };
        let Some(method) = method.as_str() else {
            return Some(error(
                &answer_id,
                INVALID_REQUEST,
                "Invalid Request: method must be a string",
                None,
            ));
        };
        // A notification (initialized, cancelled, ...): nothing to answer.
        id?;
        let Some(id) = valid_id else {
            return Some(error(
                &Value::Null,
                INVALID_REQUEST,
                "Invalid Request: id must be a string or an integer",
                None,
            ));
        };
        let empty = Map::new();
        let params = match obj.get("params") {
            None | Some(Value::Null) => &empty,
            Some(Value::Object(p)) => p,
            Some(_) => {
                return Some(error(
                    &id,
                    INVALID_PARAMS,
                    "Invalid params: params must be an object",
                    None,
                ));
            }
        };
        Some(match method {
            "initialize" => self.initialize(&id, params),
            "ping" => result_raw(&id, b"{}"),
            "tools/list" => self.list(&id),
            "tools/call" => self.call(&id, params).await,
            other => error(
                &id,
                METHOD_NOT_FOUND,
                &format!("Method not found: {other}"),
                Some(json!({"supported": ["initialize", "ping", "tools/list", "tools/call"]})),
            ),
        })
    }

    fn initialize(&self, id: &Value, params: &Map<String, Value>) -> Answer {
        let Some(requested) = params.get("protocolVersion").and_then(Value::as_str) else {
            return error(
                id,
                INVALID_PARAMS,
                "Invalid params: protocolVersion (string) is required",
                None,
            );
        };
        // The requested version when we speak it, else our newest (the client decides).
        let version = PROTOCOL_VERSIONS
            .iter()
            .find(|v| **v == requested)
            .unwrap_or(&PROTOCOL_VERSIONS[0]);
        result(
            id,
            &json!({
                "protocolVersion": version,
                "capabilities": {"tools": {"listChanged": false}},
                "serverInfo": {"name": "netops", "title": "Network Operations API", "version": env!("CARGO_PKG_VERSION")},
                "instructions": INSTRUCTIONS,
            }),
        )
    }

    /// The tools the caller's scopes cover, from their definitions serialized once.
    fn list(&self, id: &Value) -> Answer {
        let mut out = Vec::with_capacity(64 * 1024);
        out.extend_from_slice(br#"{"tools":["#);
        for tool in tools::catalog()
            .iter()
            .filter(|t| t.covered_by(&self.caller.scopes))
        {
            if out.len() > 10 {
                out.push(b',');
            }
            out.extend_from_slice(tool.json.as_bytes());
        }
        out.extend_from_slice(b"]}");
        result_raw(id, &out)
    }

    async fn call(&self, id: &Value, params: &Map<String, Value>) -> Answer {
        let Some(name) = params.get("name").and_then(Value::as_str) else {
            return error(
                id,
                INVALID_PARAMS,
                "Invalid params: name (string) is required",
                None,
            );
        };
        let Some(tool) = tools::find(name) else {
            return error(
                id,
                INVALID_PARAMS,
                &format!("Unknown tool: {name}"),
                Some(json!({"tool": name})),
            );
        };
        let empty = Map::new();
        let args = match params.get("arguments") {
            None | Some(Value::Null) => &empty,
            Some(Value::Object(a)) => a,
            Some(_) => {
                return error(
                    id,
                    INVALID_PARAMS,
                    "Invalid params: arguments must be an object",
                    None,
                );
            }
        };
        let uri = match call::target(tool, args) {
            Ok(uri) => uri,
            Err(call::BadArguments(why)) => {
                return error(
                    id,
                    INVALID_PARAMS,
                    &format!("Invalid params: {why}"),
                    Some(json!({"tool": name})),
                );
            }
        };
        let (status, bytes) = call::send(self.state, self.caller, &uri, self.headers).await;
        tracing::debug!(tool = name, status = status.as_u16(), "tool call");
        result_raw(id, &tool_result(tool, status, &bytes))
    }
}

/// The REST answer as a tool result: its JSON text, the same JSON as structured content
/// (embedded as is, never re-encoded), and `isError` unless it succeeded.
fn tool_result(tool: &Tool, status: StatusCode, body: &[u8]) -> Vec<u8> {
    let is_error = !status.is_success();
    let text = std::str::from_utf8(body)
        .ok()
        .filter(|t| t.trim_start().starts_with('{'))
        .filter(|t| serde_json::from_str::<IgnoredAny>(t).is_ok());
    let Some(text) = text else {
        tracing::error!(
            tool = tool.name(),
            status = status.as_u16(),
            "tool answered no JSON object"
        );
        let body = json!({"error": "internal_error", "message": "Réponse inattendue de la route."});
        return tool_result(
            tool,
            StatusCode::INTERNAL_SERVER_ERROR,
            body.to_string().as_bytes(),
        );
    };
    let mut out = Vec::with_capacity(body.len() * 2 + 96);
    out.extend_from_slice(br#"{"content":[{"type":"text","text":"#);
    let _ = serde_json::to_writer(&mut out, text);
    out.extend_from_slice(br#"}],"structuredContent":"#);
    out.extend_from_slice(text.as_bytes());
    out.extend_from_slice(if is_error {
        br#","isError":true}"#
    } else {
        br#","isError":false}"#
    });
    out
}
