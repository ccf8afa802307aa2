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
use serde_json::{Map, Value, json};

use crate::call;
use crate::tools::{self, Tool};

/// Protocol versions this server speaks, newest first.
pub const PROTOCOL_VERSIONS: &[&str] = &["2025-11-25", "2025-06-18", "2025-03-26"];
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

/// Point d'entrée des assistants IA (MCP)
///
/// JSON-RPC 2.0 sur HTTP « streamable » sans état (MCP 2025-03-26, 2025-06-18, 2025-11-25) :
/// `initialize`, `tools/list`, `tools/call`, `ping`. Chaque message est un POST portant le même
/// jeton ; les notifications reçoivent 202 sans corps. Un outil par route de lecture JSON, nommé
/// par son operationId ; `tools/list` ne montre que les outils couverts par les portées du jeton.
/// `tools/call` passe par la route REST : mêmes contrôles, même limite de débit (l'appel compte
/// en plus du message MCP). Résultat : le corps REST dans `content[0].text` et
/// `structuredContent` ; une erreur REST donne `isError: true`. Erreurs JSON-RPC : -32700 corps
/// illisible, -32600 requête invalide, -32601 méthode inconnue, -32602 outil inconnu ou
/// arguments invalides. En-tête `MCP-Protocol-Version` non pris en charge : 400.
#[utoipa::path(post, path = "/mcp", operation_id = "mcp", tag = "mcp",
    request_body(content = Object, description = "Message JSON-RPC 2.0 : jsonrpc, id, method, params (pour tools/call : name et arguments)",
        content_type = "application/json"),
    params(("MCP-Protocol-Version" = Option<String>, Header, description = "Version du protocole négociée (2025-03-26, 2025-06-18 ou 2025-11-25)")),
    responses(
        (status = 200, description = "Réponse JSON-RPC", body = Object, content_type = "application/json"),
        (status = 202, description = "Notification ou réponse acceptée, sans corps"),
        (status = 400, description = "Corps illisible (-32700), message invalide (-32600) ou version de protocole non prise en charge", body = Object),
        (status = 413, description = "Corps de plus de 64 Kio (`payload_too_large`)", body = netops_shared::error::ErrorBody),
    ))]
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
            &error(Value::Null, INVALID_REQUEST, &msg, None),
        );
    }
    let Ok(message) = serde_json::from_slice::<Value>(&bytes) else {
        return reply(
            StatusCode::BAD_REQUEST,
            &error(
                Value::Null,
                PARSE_ERROR,
                "Parse error: the body is not JSON",
                None,
            ),
        );
    };
    let ctx = Ctx {
        state: &state,
        caller: &caller,
        headers: &headers,
    };
    match message {
        Value::Array(batch) if !batch.is_empty() => {
            let mut answers = Vec::new();
            for m in &batch {
                if let Some(a) = ctx.handle(m).await {
                    answers.push(a);
                }
            }
            if answers.is_empty() {
                accepted()
            } else {
                reply(StatusCode::OK, &Value::Array(answers))
            }
        }
        single => match ctx.handle(&single).await {
            None => accepted(),
            Some(answer) => {
                let code = answer["error"]["code"].as_i64();
                let status = if matches!(code, Some(PARSE_ERROR | INVALID_REQUEST)) {
                    StatusCode::BAD_REQUEST
                } else {
                    StatusCode::OK
                };
                reply(status, &answer)
            }
        },
    }
}

fn reply(status: StatusCode, body: &Value) -> Response {
    let bytes = serde_json::to_vec(body).unwrap_or_default();
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

fn error(id: Value, code: i64, message: &str, data: Option<Value>) -> Value {
    let mut err = json!({"code": code, "message": message});
    if let Some(d) = data {
        err["data"] = d;
    }
    json!({"jsonrpc": "2.0", "id": id, "error": err})
}

fn result(id: Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

struct Ctx<'a> {
    state: &'a AppState,
    caller: &'a Caller,
    headers: &'a HeaderMap,
}

impl Ctx<'_> {
    /// One JSON-RPC message; `None` for notifications and client responses (no answer).
    async fn handle(&self, message: &Value) -> Option<Value> {
        let Some(obj) = message.as_object() else {
            return Some(error(
                Value::Null,
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
                answer_id,
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
                answer_id,
                INVALID_REQUEST,
                "Invalid Request: method is missing",
                None,
            ));
        };
        let Some(method) = method.as_str() else {
            return Some(error(
                answer_id,
                INVALID_REQUEST,
                "Invalid Request: method must be a string",
                None,
            ));
        };
        let Some(id) = id else {
            // A notification (initialized, cancelled, ...): nothing to answer.
            return None;
        };
        let Some(id) = valid_id else {
            let _ = id;
            return Some(error(
                Value::Null,
                INVALID_REQUEST,
                "Invalid Request: id must be a string or an integer",
                None,
            ));
        };
        let params = match obj.get("params") {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(p)) => p.clone(),
            Some(_) => {
                return Some(error(
                    id,
                    INVALID_PARAMS,
                    "Invalid params: params must be an object",
                    None,
                ));
            }
        };
        Some(match method {
            "initialize" => self.initialize(id, &params),
            "ping" => result(id, json!({})),
            "tools/list" => self.list(id),
            "tools/call" => self.call(id, &params).await,
            other => error(
                id,
                METHOD_NOT_FOUND,
                &format!("Method not found: {other}"),
                Some(json!({"supported": ["initialize", "ping", "tools/list", "tools/call"]})),
            ),
        })
    }

    fn initialize(&self, id: Value, params: &Map<String, Value>) -> Value {
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
            json!({
                "protocolVersion": version,
                "capabilities": {"tools": {"listChanged": false}},
                "serverInfo": {"name": "netops", "title": "Network Operations API", "version": env!("CARGO_PKG_VERSION")},
                "instructions": INSTRUCTIONS,
            }),
        )
    }

    fn list(&self, id: Value) -> Value {
        let tools: Vec<Value> = tools::catalog()
            .iter()
            .filter(|t| t.covered_by(&self.caller.scopes))
            .map(|t| t.def.clone())
            .collect();
        result(id, json!({"tools": tools}))
    }

    async fn call(&self, id: Value, params: &Map<String, Value>) -> Value {
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
        let (status, bytes) = call::send(self.state, &uri, self.headers).await;
        tracing::info!(tool = name, status = status.as_u16(), "tool call");
        result(id, tool_result(tool, status, &bytes))
    }
}

/// The REST answer as a tool result: its JSON text, the same as structured content, and
/// `isError` unless it succeeded.
fn tool_result(tool: &Tool, status: StatusCode, bytes: &[u8]) -> Value {
    let is_error = !status.is_success();
    match serde_json::from_slice::<Value>(bytes) {
        Ok(body) if body.is_object() => json!({
            "content": [{"type": "text", "text": String::from_utf8_lossy(bytes)}],
            "structuredContent": body,
            "isError": is_error,
        }),
        _ => {
            tracing::error!(
                tool = tool.name(),
                status = status.as_u16(),
                "tool answered no JSON object"
            );
            let body =
                json!({"error": "internal_error", "message": "Réponse inattendue de la route."});
            json!({
                "content": [{"type": "text", "text": body.to_string()}],
                "structuredContent": body,
                "isError": true,
            })
        }
    }
}
