//! Which revision a request speaks (docs/mcp.md#transport): one negotiated by `initialize`
//! (2025-03-26 to 2025-11-25, named by the `MCP-Protocol-Version` header) or 2026-07-28,
//! where each request carries its revision and the client's capabilities in `params._meta`,
//! repeats its revision, method and tool or prompt name in headers, and needs no handshake.

use base64::Engine;
use http::HeaderMap;
use serde_json::{Map, Value, json};

pub use netops_shared::routes::{
    MCP_MODERN_VERSIONS as MODERN_VERSIONS, MCP_PROTOCOL_VERSIONS as HANDSHAKE_VERSIONS,
};

pub const MCP_PROTOCOL_VERSION: &str = "mcp-protocol-version";
pub const MCP_METHOD: &str = "mcp-method";
pub const MCP_NAME: &str = "mcp-name";

pub const PROTOCOL_VERSION_KEY: &str = "io.modelcontextprotocol/protocolVersion";
pub const CLIENT_CAPABILITIES_KEY: &str = "io.modelcontextprotocol/clientCapabilities";
pub const SERVER_INFO_KEY: &str = "io.modelcontextprotocol/serverInfo";

/// A header that disagrees with the body it comes with (MCP 2026-07-28).
pub const HEADER_MISMATCH: i64 = -32020;
/// A revision this server does not speak, with the ones it does (MCP 2026-07-28).
pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;

/// The revision of a request that names none (MCP 2025-06-18, transports, "Protocol Version
/// Header"), and the only one we speak with JSON-RPC batches: 2025-06-18 removed them.
pub const BATCH_PROTOCOL: &str = "2025-03-26";

/// How long a client may keep a list or discover result (`ttlMs`): the lists change only
/// with a deployment, and follow the credential's scopes (`cacheScope: private`).
pub const LIST_TTL_MS: u64 = 10 * 60 * 1000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Era {
    /// A revision negotiated by `initialize`.
    Handshake(&'static str),
    /// MCP 2026-07-28: no handshake, no session; every result says its `resultType`.
    Modern,
}

impl Era {
    /// The revision of a POST from its `MCP-Protocol-Version` header and its body: 2026-07-28
    /// when the header names it or the body carries its envelope (whose checks then say what
    /// is wrong), a handshake revision the header names, 2025-03-26 without the header; the
    /// unsupported header value otherwise.
    pub fn of<'a>(headers: &'a HeaderMap, body: &Value) -> Result<Era, &'a str> {
        let header = headers
            .get(MCP_PROTOCOL_VERSION)
            .map(|v| v.to_str().map(str::trim).unwrap_or_default());
        match header {
            Some(v) if MODERN_VERSIONS.contains(&v) => Ok(Era::Modern),
            Some(v) if let Some(known) = HANDSHAKE_VERSIONS.iter().find(|k| **k == v) => {
                Ok(Era::Handshake(known))
            }
            _ if body
                .pointer("/params/_meta")
                .and_then(|m| m.get(PROTOCOL_VERSION_KEY))
                .is_some() =>
            {
                Ok(Era::Modern)
            }
            None => Ok(Era::Handshake(BATCH_PROTOCOL)),
            Some(unsupported) => Err(unsupported),
        }
    }

    pub fn version(self) -> &'static str {
        match self {
            Era::Handshake(v) => v,
            Era::Modern => MODERN_VERSIONS[0],
        }
    }

    /// The members every result of this era ends with: `resultType` from 2026-07-28, with
    /// the cache hints on list and discover results.
    pub fn result_members(self, cacheable: bool) -> String {
        match (self, cacheable) {
            (Era::Handshake(_), _) => String::new(),
            (Era::Modern, false) => r#""resultType":"complete""#.to_owned(),
            (Era::Modern, true) => {
                format!(r#""resultType":"complete","ttlMs":{LIST_TTL_MS},"cacheScope":"private""#)
            }
        }
    }
}

/// Every revision spoken, newest first (`server/discover`, -32022).
pub fn supported() -> Vec<&'static str> {
    MODERN_VERSIONS
        .iter()
        .chain(HANDSHAKE_VERSIONS)
        .copied()
        .collect()
}

/// A request refused by the 2026-07-28 checks: its JSON-RPC error code, message and data.
#[derive(Debug)]
pub struct Refusal {
    pub code: i64,
    pub message: String,
    pub data: Option<Value>,
}

/// The checks of a 2026-07-28 request, in the revision's order: the envelope in
/// `params._meta`, the headers equal to the body, then a revision we speak.
pub fn check(
    headers: &HeaderMap,
    method: &str,
    params: Option<&Map<String, Value>>,
) -> Result<(), Refusal> {
    let meta = params
        .and_then(|p| p.get("_meta"))
        .and_then(Value::as_object);
    let missing: Vec<&str> = [PROTOCOL_VERSION_KEY, CLIENT_CAPABILITIES_KEY]
        .into_iter()
        .filter(|k| meta.is_none_or(|m| !m.contains_key(*k)))
        .collect();
    let Some(meta) = meta.filter(|_| missing.is_empty()) else {
        return Err(Refusal {
            code: crate::rpc::INVALID_PARAMS,
            message: format!(
                "Invalid params: MCP 2026-07-28 requests carry params._meta with {}",
                missing.join(" and ")
            ),
            data: None,
        });
    };
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let mismatch = |what: &str| {
        Err(Refusal {
            code: HEADER_MISMATCH,
            message: format!("Header mismatch: {what}"),
            data: None,
        })
    };
    let Some(version) = meta[PROTOCOL_VERSION_KEY]
        .as_str()
        .filter(|v| header(MCP_PROTOCOL_VERSION).map(str::trim) == Some(*v))
    else {
        return mismatch("MCP-Protocol-Version differs from _meta's protocolVersion");
    };
    if header(MCP_METHOD) != Some(method) {
        return mismatch("Mcp-Method differs from the body's method");
    }
    if matches!(method, "tools/call" | "prompts/get")
        && let Some(name) = params.and_then(|p| p.get("name")).and_then(Value::as_str)
        && header(MCP_NAME).map(decode) != Some(Some(name.to_owned()))
    {
        return mismatch("Mcp-Name differs from the body's name");
    }
    if !MODERN_VERSIONS.contains(&version) {
        return Err(Refusal {
            code: UNSUPPORTED_PROTOCOL_VERSION,
            message: format!(
                "Unsupported protocol version {version}; supported: {}",
                supported().join(", ")
            ),
            data: Some(json!({"supported": supported(), "requested": version})),
        });
    }
    Ok(())
}

/// A header value as MCP 2026-07-28 writes it: as is, or `=?base64?…?=` when the text is
/// not printable ASCII.
fn decode(value: &str) -> Option<String> {
    let Some(encoded) = value
        .strip_prefix("=?base64?")
        .and_then(|v| v.strip_suffix("?="))
    else {
        return Some(value.to_owned());
    };
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .ok()?;
    String::from_utf8(bytes).ok()
}

/// The HTTP status of a 2026-07-28 answer carrying JSON-RPC error `code` (the revision's
/// table: 404 for an unknown method, 400 for a request the server cannot take).
pub fn status(code: Option<i64>) -> http::StatusCode {
    use crate::rpc::{INVALID_PARAMS, INVALID_REQUEST, METHOD_NOT_FOUND, PARSE_ERROR};
    match code {
        Some(METHOD_NOT_FOUND) => http::StatusCode::NOT_FOUND,
        Some(
            PARSE_ERROR
            | INVALID_REQUEST
            | INVALID_PARAMS
            | HEADER_MISMATCH
            | UNSUPPORTED_PROTOCOL_VERSION,
        ) => http::StatusCode::BAD_REQUEST,
        _ => http::StatusCode::OK,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        pairs
            .iter()
            .map(|(k, v)| {
                (
                    http::HeaderName::from_static(k),
                    http::HeaderValue::from_str(v).expect("value"),
                )
            })
            .collect()
    }

    fn params(version: &str, name: Option<&str>) -> Map<String, Value> {
        let mut p = json!({"_meta": {PROTOCOL_VERSION_KEY: version, CLIENT_CAPABILITIES_KEY: {}}});
        if let Some(n) = name {
            p["name"] = json!(n);
        }
        p.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn the_revision_comes_from_the_header_or_the_envelope() {
        let plain = json!({"method": "ping"});
        let modern = json!({"params": {"_meta": {PROTOCOL_VERSION_KEY: "2026-07-28"}}});
        let none = HeaderMap::new();
        assert_eq!(Era::of(&none, &plain), Ok(Era::Handshake("2025-03-26")));
        assert_eq!(Era::of(&none, &modern), Ok(Era::Modern));
        let h = headers(&[(MCP_PROTOCOL_VERSION, "2025-11-25")]);
        assert_eq!(Era::of(&h, &plain), Ok(Era::Handshake("2025-11-25")));
        let h = headers(&[(MCP_PROTOCOL_VERSION, "2026-07-28")]);
        assert_eq!(Era::of(&h, &plain), Ok(Era::Modern));
        let h = headers(&[(MCP_PROTOCOL_VERSION, "2031-01-01")]);
        assert_eq!(Era::of(&h, &plain), Err("2031-01-01"));
        assert_eq!(Era::of(&h, &modern), Ok(Era::Modern));
    }

    #[test]
    fn the_checks_refuse_in_the_revisions_order() {
        let ok = headers(&[
            (MCP_PROTOCOL_VERSION, "2026-07-28"),
            (MCP_METHOD, "tools/call"),
            (MCP_NAME, "get_me"),
        ]);
        let p = params("2026-07-28", Some("get_me"));
        assert!(check(&ok, "tools/call", Some(&p)).is_ok());
        let code = |h: &HeaderMap, m: &str, p: Option<&Map<String, Value>>| {
            check(h, m, p).err().map(|r| r.code)
        };
        assert_eq!(code(&ok, "tools/call", None), Some(-32602));
        assert_eq!(
            code(&ok, "tools/list", Some(&params("2026-07-28", None))),
            Some(HEADER_MISMATCH)
        );
        let other = params("2026-07-28", Some("list_machines"));
        assert_eq!(code(&ok, "tools/call", Some(&other)), Some(HEADER_MISMATCH));
        let mut numeric = params("2026-07-28", None);
        numeric.insert(
            "_meta".into(),
            json!({PROTOCOL_VERSION_KEY: 2026, CLIENT_CAPABILITIES_KEY: {}}),
        );
        let no_version = headers(&[(MCP_METHOD, "tools/list")]);
        assert_eq!(
            code(&no_version, "tools/list", Some(&numeric)),
            Some(HEADER_MISMATCH),
            "no header equals a version that is no string"
        );
        let encoded = headers(&[
            (MCP_PROTOCOL_VERSION, "2026-07-28"),
            (MCP_METHOD, "tools/call"),
            (MCP_NAME, "=?base64?Z2V0X21l?="),
        ]);
        assert!(check(&encoded, "tools/call", Some(&p)).is_ok());
        let future = headers(&[
            (MCP_PROTOCOL_VERSION, "2031-01-01"),
            (MCP_METHOD, "tools/list"),
        ]);
        let refused = check(&future, "tools/list", Some(&params("2031-01-01", None)));
        let refused = refused.expect_err("unsupported");
        assert_eq!(refused.code, UNSUPPORTED_PROTOCOL_VERSION);
        assert_eq!(
            refused.data.expect("data")["supported"][0],
            MODERN_VERSIONS[0]
        );
    }
}
