//! The protocol: JSON-RPC 2.0 over stateless streamable HTTP (MCP 2025-03-26, 2025-06-18,
//! 2025-11-25 negotiated by `initialize`, and 2026-07-28 without handshake: [`crate::era`]).
//! Every message is one POST with the same bearer token; answers are JSON, never event
//! streams, and no session id is issued. A POST cannot multiply work, quota or
//! memory (docs/mcp.md#batches-and-answer-size): a batch holds at most 20 messages and only
//! under 2025-03-26, every tool call counts against the quota, and an answer holds at most
//! 8 MiB.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use axum::body::Body;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use http::{HeaderMap, HeaderValue, StatusCode, Uri, header};
use http_body::{Frame, SizeHint};
use netops_shared::error::ApiError;
use netops_shared::extract::BODY_LIMIT;
use netops_shared::http::{Quota, count_call};
use netops_shared::lang::Lang;
use netops_shared::{AppState, Caller, RequestCtx};
use serde::de::IgnoredAny;
use serde_json::{Map, Value, json};

use crate::call;
use crate::era::{self, BATCH_PROTOCOL, Era};
use crate::prompts::{self, Prompt};
use crate::tools::{self, Toolsets};

pub use crate::era::HANDSHAKE_VERSIONS as PROTOCOL_VERSIONS;
pub use netops_shared::routes::{
    MCP_MAX_ANSWER_BYTES as MAX_ANSWER_BYTES, MCP_MAX_BATCH as MAX_BATCH,
};

pub const PARSE_ERROR: i64 = -32700;
pub const INVALID_REQUEST: i64 = -32600;
pub const METHOD_NOT_FOUND: i64 = -32601;
pub const INVALID_PARAMS: i64 = -32602;
/// The first of JSON-RPC's implementation-defined server errors: an answer that did not fit.
pub const ANSWER_TOO_LARGE: i64 = -32000;

const INSTRUCTIONS_EN: &str = "Read-only tools over the data of the token's customer account \
(network monitoring: fleet, flows, NetDiag, alerts, inventory, security, databases, firewall, DNS, files, network). \
Each tool calls the v1 REST route of the same name (operationId); its result is the JSON body of the answer, \
{data, meta}, as its outputSchema says. Paged lists: pass meta.next_cursor back as cursor with the same filters; a page may hold fewer items than limit, even none, and the list ends only where meta.next_cursor is null. \
Windows: period (ending now) or from/to (RFC 3339), which then win; a window longer than the tool's cap is cut (meta.window_capped); meta.window gives the window applied. \
A limit above the tool's maximum is brought down to it. \
A REST error comes back with isError and the body {error, message}. Every call counts one call of the token's quota. \
Descriptions are in English; send the HTTP header Accept-Language: fr for French.";

const TOOLSETS_EN: &str = "Toolsets: add ?toolsets= to the endpoint URL with some of these modules, \
comma-separated, to list and call only their tools:";

const INSTRUCTIONS_FR: &str = "Outils en lecture seule sur les données du compte client du jeton \
(supervision réseau : parc, flux, NetDiag, alertes, inventaire, sécurité, bases, pare-feu, DNS, fichiers, réseau). \
Chaque outil appelle la route REST v1 du même nom (operationId) ; le résultat est le corps JSON de la réponse, \
{data, meta}. Listes paginées : repasser meta.next_cursor comme cursor avec les mêmes filtres ; une page peut compter moins d'éléments que limit, voire aucun, et la liste ne finit que là où meta.next_cursor est null. \
Fenêtres : period (finissant maintenant) ou from/to (RFC 3339), qui l'emportent alors ; une fenêtre plus longue que le plafond de l'outil est réduite (meta.window_capped) ; meta.window donne la fenêtre appliquée. \
Un limit au-delà du maximum de l'outil y est ramené. \
Une erreur REST revient avec isError et le corps {error, message}. Chaque appel compte un appel du quota du jeton. \
Descriptions en français parce que l'en-tête HTTP Accept-Language le préfère ; sans lui, en anglais.";

const TOOLSETS_FR: &str = "Jeux d'outils : ajouter ?toolsets= à l'URL du point d'entrée avec certains de \
ces modules, séparés par des virgules, pour ne lister et n'appeler que leurs outils :";

/// What `initialize` and `server/discover` tell the assistant, in the request's language.
fn instructions(headers: &HeaderMap) -> String {
    let (text, toolsets) = match tools::lang(headers) {
        Lang::En => (INSTRUCTIONS_EN, TOOLSETS_EN),
        Lang::Fr => (INSTRUCTIONS_FR, TOOLSETS_FR),
    };
    format!("{text} {toolsets} {}.", tools::mcp_toolsets().join(", "))
}

/// `POST /mcp`. Its OpenAPI operation is written in the docs crate (`mcp_operation`), which
/// this crate builds its tools from.
pub async fn mcp(
    State(state): State<AppState>,
    caller: Caller,
    request: RequestCtx,
    uri: Uri,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let Ok(bytes) = axum::body::to_bytes(body, BODY_LIMIT).await else {
        return ApiError::payload_too_large().into_response();
    };
    let Ok(message) = serde_json::from_slice::<Value>(&bytes) else {
        let answer = error(
            &Value::Null,
            PARSE_ERROR,
            "Parse error: the body is not JSON",
            None,
        );
        return reply(StatusCode::BAD_REQUEST, answer.into());
    };
    let era = match Era::of(&headers, &message) {
        Ok(era) => era,
        Err(unsupported) => {
            let refusal = unsupported_header(unsupported);
            return reply(StatusCode::BAD_REQUEST, refusal.into());
        }
    };
    let toolsets = match Toolsets::from_query(uri.query()) {
        Ok(toolsets) => toolsets,
        Err(unknown) => {
            let msg = format!(
                "Invalid Request: unknown toolset '{unknown}' in the endpoint URL; toolsets: {}",
                tools::mcp_toolsets().join(", ")
            );
            let data = json!({"toolsets": tools::mcp_toolsets()});
            let refusal = error(&Value::Null, INVALID_REQUEST, &msg, Some(data));
            return reply(StatusCode::BAD_REQUEST, refusal.into());
        }
    };
    let (messages, batch) = match message {
        Value::Array(batch) if !batch.is_empty() => (batch, true),
        single => (vec![single], false),
    };
    if batch && let Some(refusal) = refuse_batch(era.version(), messages.len()) {
        return reply(StatusCode::BAD_REQUEST, refusal.into());
    }
    let mut ctx = Ctx {
        state: &state,
        caller: &caller,
        request_id: &request.request_id,
        headers: &headers,
        era,
        toolsets: &toolsets,
        tool_calls: 0,
        quota: None,
    };
    let (out, code) = ctx.answer_all(&messages, batch).await;
    let mut res = if out.is_empty() {
        accepted()
    } else if era == Era::Modern {
        reply(era::status(code), out)
    } else if matches!(code, Some(PARSE_ERROR | INVALID_REQUEST)) && !batch {
        reply(StatusCode::BAD_REQUEST, out)
    } else {
        reply(StatusCode::OK, out)
    };
    // The gate answers with the latest count of the caller's quota, the batch's calls included.
    if let Some(quota) = ctx.quota {
        res.extensions_mut().insert(quota);
    }
    res
}

/// The refusal of a POST whose `MCP-Protocol-Version` header names a revision we do not
/// speak, without the 2026-07-28 envelope (MCP 2025-06-18, transports, "Protocol Version
/// Header": 400).
fn unsupported_header(value: &str) -> Answer {
    let supported = era::supported();
    let msg = format!(
        "Bad Request: unsupported MCP-Protocol-Version; supported: {}",
        supported.join(", ")
    );
    let data = json!({"supported": supported, "requested": value});
    error(&Value::Null, INVALID_REQUEST, &msg, Some(data))
}

/// A batch refused as a whole, before any of it runs (docs/mcp.md#batches-and-answer-size).
fn refuse_batch(version: &str, len: usize) -> Option<Answer> {
    if version != BATCH_PROTOCOL {
        let msg = format!(
            "Invalid Request: MCP {version} has no JSON-RPC batch (removed in 2025-06-18); \
             send one message per POST"
        );
        let data = json!({"protocolVersion": version});
        return Some(error(&Value::Null, INVALID_REQUEST, &msg, Some(data)));
    }
    (len > MAX_BATCH).then(|| {
        let msg = format!(
            "Invalid Request: a batch holds at most {MAX_BATCH} messages, this one {len}; \
             send the others in further POSTs"
        );
        let data = json!({"max_messages": MAX_BATCH, "messages": len});
        error(&Value::Null, INVALID_REQUEST, &msg, Some(data))
    })
}

fn reply(status: StatusCode, body: Parts) -> Response {
    let mut res = (status, Body::new(body)).into_response();
    res.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    res
}

fn accepted() -> Response {
    StatusCode::ACCEPTED.into_response()
}

/// A body sent as the pieces it was written in (each answer of a batch, its brackets and
/// commas), never copied into one buffer: an answer of 8 MiB holds 8 MiB, not the 24 MiB a
/// growing buffer takes while it doubles.
#[derive(Default)]
struct Parts {
    parts: VecDeque<Bytes>,
    left: u64,
}

impl Parts {
    fn push(&mut self, part: impl Into<Bytes>) {
        let part = part.into();
        self.left += part.len() as u64;
        self.parts.push_back(part);
    }

    fn is_empty(&self) -> bool {
        self.parts.is_empty()
    }
}

impl From<Answer> for Parts {
    fn from(answer: Answer) -> Parts {
        let mut parts = Parts::default();
        parts.push(answer.bytes);
        parts
    }
}

impl http_body::Body for Parts {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let part = self.parts.pop_front();
        self.left -= part.as_ref().map_or(0, |p| p.len() as u64);
        Poll::Ready(part.map(|p| Ok(Frame::data(p))))
    }

    fn is_end_stream(&self) -> bool {
        self.parts.is_empty()
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.left)
    }
}

/// One serialized JSON-RPC response, with its error code if it is an error.
struct Answer {
    bytes: Vec<u8>,
    code: Option<i64>,
}

/// A response whose `result` object holds the members `write` serializes in place (about
/// `size` bytes), then `last`, the members of the era ([`Era::result_members`]).
fn result_with(id: &Value, size: usize, last: &str, write: impl FnOnce(&mut Vec<u8>)) -> Answer {
    let mut bytes = Vec::with_capacity(size + last.len() + 48);
    bytes.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
    bytes.extend_from_slice(&serde_json::to_vec(id).unwrap_or_else(|_| b"null".to_vec()));
    bytes.extend_from_slice(br#","result":{"#);
    let start = bytes.len();
    write(&mut bytes);
    if !last.is_empty() {
        if bytes.len() > start {
            bytes.push(b',');
        }
        bytes.extend_from_slice(last.as_bytes());
    }
    bytes.extend_from_slice(b"}}");
    Answer { bytes, code: None }
}

/// A response whose `result` holds the members of the object `result`, then `last`.
fn result(id: &Value, result: &Value, last: &str) -> Answer {
    let json = serde_json::to_vec(result).unwrap_or_default();
    // The object's members: its text between its braces.
    let members = json
        .get(1..json.len().saturating_sub(1))
        .unwrap_or_default();
    result_with(id, members.len(), last, |out| {
        out.extend_from_slice(members)
    })
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

/// The error in place of an answer that did not fit in [`MAX_ANSWER_BYTES`].
fn too_large(id: &Value) -> Answer {
    let msg = format!(
        "Answer too large: the answer to this POST would exceed {} MiB in all; send this \
         request again in another POST, or ask for fewer items",
        MAX_ANSWER_BYTES / (1024 * 1024)
    );
    let data = json!({"limit_bytes": MAX_ANSWER_BYTES});
    error(id, ANSWER_TOO_LARGE, &msg, Some(data))
}

/// An id as JSON-RPC admits it for MCP: a string or an integer.
fn valid_id(id: Option<&Value>) -> Option<&Value> {
    id.filter(|i| i.is_string() || i.is_i64() || i.is_u64())
}

/// The id an answer to `message` echoes: its own when valid, else null.
fn answer_id(message: &Value) -> Value {
    valid_id(message.get("id")).cloned().unwrap_or(Value::Null)
}

/// What one message of a POST asks for.
enum Message<'a> {
    /// A notification (initialized, cancelled, ...) or a response from the client (to a
    /// request we never send): accepted, nothing to answer.
    Silent,
    /// Not a request we can run: its error.
    Invalid(Answer),
    Request {
        id: &'a Value,
        method: &'a str,
        params: Option<&'a Map<String, Value>>,
    },
}

fn read(message: &Value) -> Message<'_> {
    let invalid = |id: &Value, why: &str| {
        Message::Invalid(error(
            id,
            INVALID_REQUEST,
            &format!("Invalid Request: {why}"),
            None,
        ))
    };
    let Some(obj) = message.as_object() else {
        return invalid(&Value::Null, "a JSON-RPC message is an object");
    };
    let id = obj.get("id");
    let answer_id = valid_id(id).cloned().unwrap_or(Value::Null);
    if obj.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return invalid(&answer_id, "jsonrpc must be \"2.0\"");
    }
    let Some(method) = obj.get("method") else {
        if id.is_some() && (obj.contains_key("result") || obj.contains_key("error")) {
            return Message::Silent;
        }
        return invalid(&answer_id, "method is missing");
    };
    let Some(method) = method.as_str() else {
        return invalid(&answer_id, "method must be a string");
    };
    if id.is_none() {
        return Message::Silent;
    }
    let Some(id) = valid_id(id) else {
        return invalid(&Value::Null, "id must be a string or an integer");
    };
    let params = match obj.get("params") {
        None | Some(Value::Null) => None,
        Some(Value::Object(p)) => Some(p),
        Some(_) => {
            return Message::Invalid(error(
                id,
                INVALID_PARAMS,
                "Invalid params: params must be an object",
                None,
            ));
        }
    };
    Message::Request { id, method, params }
}

/// Room left in the answer to one POST of at most a given size. Each message keeps room for
/// its cut-off error (and its separator in a batch) until its answer is known, so that error
/// can always take the place of an answer that does not fit.
struct Budget {
    /// Bytes not yet spoken for, by an answer or a reserve.
    free: usize,
    /// The separator before each answer of a batch: `[` or `,`.
    sep: usize,
}

impl Budget {
    /// A budget of `cap` bytes for the answers to `messages`, and each message's reserve.
    fn new(cap: usize, messages: &[Value], batch: bool) -> (Budget, Vec<usize>) {
        let sep = usize::from(batch);
        let reserves: Vec<usize> = messages
            .iter()
            .map(|m| too_large(&answer_id(m)).bytes.len() + sep)
            .collect();
        // A batch's closing bracket is spoken for from the start.
        let free = cap.saturating_sub(sep + reserves.iter().sum::<usize>());
        (Budget { free, sep }, reserves)
    }

    /// The most bytes the answer to the message holding `reserve` may take.
    fn room(&self, reserve: usize) -> usize {
        self.free + reserve - self.sep
    }

    /// The answer to `message` (holding `reserve`), or its cut-off error in its place when it
    /// does not fit; the reserve is given back, less what the answer takes.
    fn place(&mut self, reserve: usize, message: &Value, answer: Option<Answer>) -> Option<Answer> {
        let room = self.room(reserve);
        let answer = answer.map(|a| {
            if a.bytes.len() > room {
                too_large(&answer_id(message))
            } else {
                a
            }
        });
        let used = answer.as_ref().map_or(0, |a| a.bytes.len() + self.sep);
        self.free = (self.free + reserve).saturating_sub(used);
        answer
    }
}

struct Ctx<'a> {
    state: &'a AppState,
    caller: &'a Caller,
    /// The POST's request id, which each tool call's REST request shares.
    request_id: &'a str,
    headers: &'a HeaderMap,
    /// The revision the POST speaks.
    era: Era,
    /// The modules whose tools the endpoint URL asked for.
    toolsets: &'a Toolsets,
    /// The tool calls met so far in this POST.
    tool_calls: usize,
    /// The caller's quota as last counted here, when a tool call was counted.
    quota: Option<Quota>,
}

impl Ctx<'_> {
    /// The answers to `messages`, in order, as one body: the batch's array or the single
    /// answer (empty when there is nothing to answer), with the last answer's error code.
    /// The body holds at most [`MAX_ANSWER_BYTES`]: the first answer that does not fit is
    /// dropped for a [`too_large`] error, and so is every later request, which then neither
    /// runs nor counts.
    async fn answer_all(&mut self, messages: &[Value], batch: bool) -> (Parts, Option<i64>) {
        let (mut budget, reserves) = Budget::new(MAX_ANSWER_BYTES, messages, batch);
        let mut out = Parts::default();
        let mut code = None;
        let mut full = false;
        for (message, reserve) in messages.iter().zip(reserves) {
            let room = budget.room(reserve);
            let answer = match read(message) {
                Message::Silent => None,
                Message::Invalid(answer) => Some(answer),
                Message::Request { id, .. } if full => Some(too_large(id)),
                Message::Request { id, method, params } => {
                    Some(self.run(id, method, params, room).await)
                }
            };
            let Some(answer) = budget.place(reserve, message, answer) else {
                continue;
            };
            full = full || answer.code == Some(ANSWER_TOO_LARGE);
            code = answer.code;
            if batch {
                out.push(Bytes::from_static(if out.is_empty() { b"[" } else { b"," }));
            }
            out.push(answer.bytes);
        }
        if !out.is_empty() && batch {
            out.push(Bytes::from_static(b"]"));
        }
        (out, code)
    }

    /// One request, whose answer should fit in `room` bytes.
    async fn run(
        &mut self,
        id: &Value,
        method: &str,
        params: Option<&Map<String, Value>>,
        room: usize,
    ) -> Answer {
        if self.era == Era::Modern
            && let Err(refused) = era::check(self.headers, method, params)
        {
            return error(id, refused.code, &refused.message, refused.data);
        }
        let empty = Map::new();
        let params = params.unwrap_or(&empty);
        match (method, self.era) {
            ("initialize", Era::Handshake(_)) => self.initialize(id, params),
            ("ping", Era::Handshake(_)) => result_with(id, 0, "", |_| {}),
            ("server/discover", Era::Modern) => self.discover(id),
            ("subscriptions/listen", Era::Modern) => error(
                id,
                METHOD_NOT_FOUND,
                "Method not found: subscriptions/listen is not supported here: every POST is \
                 answered with JSON and no stream is held open (API Gateway HTTP API); the tool \
                 list changes only with a deployment",
                Some(json!({"supported": self.methods()})),
            ),
            ("tools/list", _) => self.list(id, params),
            ("tools/call", _) => self.call(id, params, room).await,
            ("prompts/list", _) => self.list_prompts(id, params),
            ("prompts/get", _) => self.get_prompt(id, params),
            (other, _) => error(
                id,
                METHOD_NOT_FOUND,
                &format!("Method not found: {other}"),
                Some(json!({"supported": self.methods()})),
            ),
        }
    }

    /// The methods of the POST's revision.
    fn methods(&self) -> &'static [&'static str] {
        match self.era {
            Era::Handshake(_) => &[
                "initialize",
                "ping",
                "tools/list",
                "tools/call",
                "prompts/list",
                "prompts/get",
            ],
            Era::Modern => &[
                "server/discover",
                "tools/list",
                "tools/call",
                "prompts/list",
                "prompts/get",
            ],
        }
    }

    fn capabilities() -> Value {
        json!({"tools": {"listChanged": false}, "prompts": {"listChanged": false}})
    }

    /// Whether this POST may call the tool named `name`: in its toolsets and its scopes.
    fn can_call(&self, name: &str) -> bool {
        tools::find(name)
            .is_some_and(|t| self.toolsets.holds(t) && t.covered_by(&self.caller.scopes))
    }

    /// Whether this POST may call every tool the prompt names.
    fn offers(&self, prompt: &Prompt) -> bool {
        prompt.steps.iter().all(|s| self.can_call(s.tool))
    }

    /// The prompts this POST may follow through, in one page.
    fn list_prompts(&self, id: &Value, params: &Map<String, Value>) -> Answer {
        if params.get("cursor").is_some_and(|c| !c.is_null()) {
            return error(
                id,
                INVALID_PARAMS,
                "Invalid params: cursor is not one this server gave",
                None,
            );
        }
        let lang = tools::lang(self.headers);
        let listed: Vec<Value> = prompts::PROMPTS
            .iter()
            .filter(|p| self.offers(p))
            .map(|p| p.def(lang))
            .collect();
        let body = json!({"prompts": listed});
        let last = self.era.result_members(true);
        result(id, &body, &last)
    }

    /// A prompt's text for its arguments: one user message; nothing is fetched or counted.
    fn get_prompt(&self, id: &Value, params: &Map<String, Value>) -> Answer {
        let name = params
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let Some(prompt) = prompts::find(name).filter(|p| self.offers(p)) else {
            return error(
                id,
                INVALID_PARAMS,
                &format!("Invalid params: unknown prompt '{name}'"),
                Some(json!({"prompt": name})),
            );
        };
        let empty = Map::new();
        let arguments = match arguments(id, params) {
            Ok(given) => given.unwrap_or(&empty),
            Err(refused) => return refused,
        };
        let lang = tools::lang(self.headers);
        match prompt.render(lang, arguments) {
            Ok(text) => {
                let body = json!({
                    "description": prompt.description.en_or_fr(lang),
                    "messages": [{"role": "user", "content": {"type": "text", "text": text}}],
                });
                let last = self.era.result_members(false);
                result(id, &body, &last)
            }
            Err(why) => error(
                id,
                INVALID_PARAMS,
                &format!("Invalid params: {why}"),
                Some(json!({"prompt": name})),
            ),
        }
    }

    fn server_info() -> Value {
        json!({"name": "netops", "title": "Network Operations API", "version": env!("CARGO_PKG_VERSION")})
    }

    /// `server/discover` (MCP 2026-07-28): every revision spoken, the capabilities, the
    /// instructions and who we are, cacheable.
    fn discover(&self, id: &Value) -> Answer {
        let body = json!({
            "supportedVersions": era::supported(),
            "capabilities": Self::capabilities(),
            "instructions": instructions(self.headers),
            "_meta": {era::SERVER_INFO_KEY: Self::server_info()},
        });
        let members = self.era.result_members(true);
        result(id, &body, &members)
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
        let body = json!({
            "protocolVersion": version,
            "capabilities": Self::capabilities(),
            "serverInfo": Self::server_info(),
            "instructions": instructions(self.headers),
        });
        result(id, &body, "")
    }

    /// The tools of the asked toolsets the caller's scopes cover, in the route table's order,
    /// from their definitions serialized once, one page of at most [`tools::PAGE_BUDGET`]
    /// bytes at a time: `nextCursor` (the name of the next tool) asks for the next page.
    fn list(&self, id: &Value, params: &Map<String, Value>) -> Answer {
        let visible: Vec<&tools::Tool> = tools::catalog(tools::lang(self.headers))
            .iter()
            .filter(|t| self.toolsets.holds(t) && t.covered_by(&self.caller.scopes))
            .collect();
        let start = match params.get("cursor") {
            None | Some(Value::Null) => Some(0),
            Some(Value::String(c)) => visible.iter().position(|t| t.name() == c),
            Some(_) => None,
        };
        let Some(start) = start else {
            return error(
                id,
                INVALID_PARAMS,
                "Invalid params: cursor is not one this server gave",
                None,
            );
        };
        let (page, next) = tools::page(&visible, start);
        let last = self.era.result_members(true);
        result_with(id, tools::PAGE_BUDGET, &last, |out| {
            out.extend_from_slice(br#""tools":["#);
            for (i, tool) in page.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                out.extend_from_slice(tool.json.as_bytes());
            }
            out.push(b']');
            if let Some(next) = next {
                out.extend_from_slice(br#","nextCursor":"#);
                out.extend_from_slice(&serde_json::to_vec(next.name()).unwrap_or_default());
            }
        })
    }

    /// Counts a tool call against the token's quota before anything else, as REST counts a
    /// call before checking it (docs/mcp.md#quota): the message's own count covers its first
    /// tool call, and each further one costs one more. The REST error when refused.
    async fn count(&mut self) -> Result<(), ApiError> {
        self.tool_calls += 1;
        if self.tool_calls == 1 {
            return Ok(());
        }
        let quota = count_call(self.state, self.caller).await?;
        self.quota = Some(quota);
        if quota.exceeded {
            return Err(ApiError::rate_limited(quota.reset.max(0) as u64));
        }
        Ok(())
    }

    async fn call(&mut self, id: &Value, params: &Map<String, Value>, room: usize) -> Answer {
        let name = params.get("name").and_then(Value::as_str);
        let last = self.era.result_members(false);
        if let Err(refused) = self.count().await {
            let body = refused.body(Lang::from_headers(self.headers)).to_string();
            let status = refused.code.status();
            let name = name.unwrap_or_default();
            return result_with(id, tool_result_size(body.as_bytes()), &last, |out| {
                tool_result(name, status, body.as_bytes(), out);
            });
        }
        let Some(name) = name else {
            return error(
                id,
                INVALID_PARAMS,
                "Invalid params: name (string) is required",
                None,
            );
        };
        let Some(tool) = tools::find(name).filter(|t| self.toolsets.holds(t)) else {
            return error(
                id,
                INVALID_PARAMS,
                &format!("Unknown tool: {name}"),
                Some(json!({"tool": name})),
            );
        };
        let empty = Map::new();
        let args = match arguments(id, params) {
            Ok(given) => given.unwrap_or(&empty),
            Err(refused) => return refused,
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
        // The result holds the REST body twice (as text and as structured content): a body
        // over half the room cannot fit, and is dropped as it is read.
        let sent = call::send(
            self.state,
            self.caller,
            self.request_id,
            &uri,
            self.headers,
            room / 2,
        )
        .await;
        let Ok((status, bytes)) = sent else {
            tracing::warn!(tool = name, room, "tool result dropped: answer too large");
            return too_large(id);
        };
        tracing::debug!(tool = name, status = status.as_u16(), "tool call");
        result_with(id, tool_result_size(&bytes), &last, |out| {
            tool_result(name, status, &bytes, out);
        })
    }
}

/// The `arguments` of a tool call or a prompt: an object, or none (absent or null).
fn arguments<'a>(
    id: &Value,
    params: &'a Map<String, Value>,
) -> Result<Option<&'a Map<String, Value>>, Answer> {
    match params.get("arguments") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Object(given)) => Ok(Some(given)),
        Some(_) => Err(error(
            id,
            INVALID_PARAMS,
            "Invalid params: arguments must be an object",
            None,
        )),
    }
}

/// The size of [`tool_result`] for a body of JSON text: the text escaped (each quote and
/// backslash doubled; serde_json writes no raw control character), the text as is, and the
/// fixed keys.
fn tool_result_size(body: &[u8]) -> usize {
    let escaped = body.iter().filter(|b| matches!(b, b'"' | b'\\')).count();
    2 * body.len() + escaped + 96
}

/// The REST answer as the members of a tool result, written to `out`: its JSON text, the
/// same JSON as structured content (embedded as is, never re-encoded), and `isError`.
fn tool_result(tool: &str, status: StatusCode, body: &[u8], out: &mut Vec<u8>) {
    let is_error = !status.is_success();
    let text = std::str::from_utf8(body)
        .ok()
        .filter(|t| t.trim_start().starts_with('{'))
        .filter(|t| serde_json::from_str::<IgnoredAny>(t).is_ok());
    let Some(text) = text else {
        tracing::error!(
            tool,
            status = status.as_u16(),
            "tool answered no JSON object"
        );
        let body = json!({"error": "internal_error", "message": "Réponse inattendue de la route."});
        return tool_result(
            tool,
            StatusCode::INTERNAL_SERVER_ERROR,
            body.to_string().as_bytes(),
            out,
        );
    };
    out.extend_from_slice(br#""content":[{"type":"text","text":"#);
    let _ = serde_json::to_writer(&mut *out, text);
    out.extend_from_slice(br#"}],"structuredContent":"#);
    out.extend_from_slice(text.as_bytes());
    out.extend_from_slice(if is_error {
        br#","isError":true"#
    } else {
        br#","isError":false"#
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An answer of exactly `len` bytes (at least its envelope's).
    fn answer(id: usize, len: usize) -> Answer {
        let padded = |pad: String| result(&json!(id), &json!({"pad": pad}), "");
        let envelope = padded(String::new()).bytes.len();
        padded("x".repeat(len.saturating_sub(envelope)))
    }

    fn request(id: usize) -> Value {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call"})
    }

    #[test]
    fn a_single_answer_over_the_cap_becomes_the_cut_off_error() {
        let message = request(1);
        let (mut budget, reserves) = Budget::new(1000, std::slice::from_ref(&message), false);
        let placed = budget.place(reserves[0], &message, Some(answer(1, 2000)));
        let placed = placed.expect("an answer");
        assert_eq!(placed.code, Some(ANSWER_TOO_LARGE));
        let body: Value = serde_json::from_slice(&placed.bytes).expect("JSON");
        assert_eq!(body["id"], 1);
        assert_eq!(body["error"]["data"]["limit_bytes"], MAX_ANSWER_BYTES);
        let (mut budget, reserves) = Budget::new(1000, std::slice::from_ref(&message), false);
        let kept = budget.place(reserves[0], &message, Some(answer(1, 1000)));
        assert_eq!(kept.expect("an answer").code, None, "exactly the cap fits");
    }

    #[test]
    fn a_batch_answer_may_fill_the_cap_to_the_byte() {
        let messages = [request(1), request(2)];
        // Brackets and comma: 3 bytes besides the two answers.
        for (second, fits) in [(997 - 100, true), (998 - 100, false)] {
            let (mut budget, reserves) = Budget::new(1000, &messages, true);
            let first = budget.place(reserves[0], &messages[0], Some(answer(1, 100)));
            assert_eq!(first.expect("an answer").code, None);
            let placed = budget.place(reserves[1], &messages[1], Some(answer(2, second)));
            let code = placed.expect("an answer").code;
            assert_eq!(code.is_none(), fits, "{second} bytes after 100");
        }
    }

    #[test]
    fn a_batch_never_answers_more_than_the_cap_and_every_request_gets_an_answer() {
        let cap = 4000;
        for sizes in [
            vec![900; 8],
            vec![3900, 10, 10],
            vec![10, 5000, 10, 10],
            vec![1500, 1500, 1500, 1500],
            vec![0, 3000, 0, 600, 600],
        ] {
            // A size of 0 stands for a notification: no answer.
            let messages: Vec<Value> = (0..sizes.len()).map(request).collect();
            let (mut budget, reserves) = Budget::new(cap, &messages, true);
            let mut total = 1;
            let mut answered = 0;
            for (i, (len, reserve)) in sizes.iter().zip(reserves).enumerate() {
                let given = (*len > 0).then(|| answer(i, *len));
                let Some(placed) = budget.place(reserve, &messages[i], given) else {
                    assert_eq!(*len, 0);
                    continue;
                };
                let id: Value =
                    serde_json::from_slice::<Value>(&placed.bytes).expect("JSON")["id"].clone();
                assert_eq!(id, i, "{sizes:?}");
                total += placed.bytes.len() + 1;
                answered += 1;
            }
            assert!(total <= cap, "{sizes:?}: {total} bytes");
            assert_eq!(answered, sizes.iter().filter(|l| **l > 0).count());
        }
    }
}
