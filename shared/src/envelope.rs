//! The success envelope `{data, meta}` (spec 2.1).

use axum::response::{IntoResponse, Response};
use serde::Serialize;
use serde_json::{Map, Value};
use utoipa::ToSchema;

use crate::error::ApiError;
use crate::window::{Window, WindowMeta};

/// `meta` of a response. The same key means the same thing on every route: every list has
/// `limit`; a list with a cursor has `next_cursor`, one without has `truncated`; a windowed
/// route has `window` (and `window_capped` when it was cut). Other keys are the route's own,
/// described with it. The list helpers of [`crate::paging`] set these; handlers do not.
#[derive(Debug, Clone, Default, Serialize, ToSchema)]
pub struct Meta {
    /// Page size applied (every list).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
    /// Cursor of the next page; null on the last page (lists with a cursor).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>)]
    pub next_cursor: Option<Option<String>>,
    /// True when more items matched than the list holds (lists without a cursor: narrow the
    /// window or the filters to see the others).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub truncated: Option<bool>,
    /// The window actually applied (windowed routes).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub window: Option<WindowMeta>,
    /// Present and true when the asked window was cut back to the route's maximum.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub window_capped: Option<bool>,
    /// Route-specific metadata.
    #[serde(flatten)]
    #[schema(value_type = Object)]
    pub extra: Map<String, Value>,
}

impl Meta {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn limit(mut self, limit: u32) -> Self {
        self.limit = Some(limit);
        self
    }

    pub fn next_cursor(mut self, cursor: Option<String>) -> Self {
        self.next_cursor = Some(cursor);
        self
    }

    pub fn window(mut self, w: &Window) -> Self {
        self.window = Some(w.meta());
        if w.capped {
            self.window_capped = Some(true);
        }
        self
    }

    /// `truncated`, on a list without cursor.
    pub fn truncated(mut self, more: bool) -> Self {
        self.truncated = Some(more);
        self
    }

    /// A route-specific key, one of [`META_KEYS`] (the document declares only those, so a
    /// generated client types them; a key outside the table is a programming error, caught by
    /// the tests).
    pub fn with(mut self, key: &str, value: impl Into<Value>) -> Self {
        debug_assert!(
            META_KEYS.iter().any(|k| k.name == key),
            "meta key {key} is not declared in META_KEYS"
        );
        self.extra.insert(key.to_owned(), value.into());
        self
    }
}

/// A route-specific key of `meta`, as the OpenAPI document declares it.
pub struct MetaKey {
    pub name: &'static str,
    /// Its JSON Schema, as JSON text.
    pub schema: &'static str,
    /// What it says, and on which routes.
    pub description: &'static str,
}

/// Every route-specific key a handler puts in `meta` ([`Meta::with`]).
pub const META_KEYS: &[MetaKey] = &[
    MetaKey {
        name: "total",
        schema: r#"{"type": "integer", "minimum": 0}"#,
        description: "Number of matching items before the list was cut to `limit` (/alerts, database alerts and sessions, security incidents).",
    },
    MetaKey {
        name: "count",
        schema: r#"{"type": "integer", "minimum": 0}"#,
        description: "Number of items answered (NetDiag machines overview).",
    },
    MetaKey {
        name: "software_truncated",
        schema: r#"{"type": "boolean"}"#,
        description: "Present and true when a machine's software list was cut (inventory).",
    },
    MetaKey {
        name: "events_truncated",
        schema: r#"{"type": "boolean"}"#,
        description: "Present and true when an incident's event list was cut (security).",
    },
    MetaKey {
        name: "graph_days",
        schema: r#"{"type": "integer"}"#,
        description: "Days of history the graph covers (security exposure ranking).",
    },
    MetaKey {
        name: "by",
        schema: r##"{"$ref": "#/components/schemas/TopBy"}"##,
        description: "Ranking measure applied (database top queries).",
    },
    MetaKey {
        name: "source",
        schema: r#"{"type": "string"}"#,
        description: "Where the answer comes from: `agent`, `gateway` or `all` (flow destinations), `samples_5m` or `rollups_1h` (database series).",
    },
    MetaKey {
        name: "points",
        schema: r#"{"type": "integer", "minimum": 0}"#,
        description: "Number of points of the series (database series).",
    },
    MetaKey {
        name: "resolution_seconds",
        schema: r#"{"type": "integer", "minimum": 1}"#,
        description: "Seconds between two points of the series (database series).",
    },
    MetaKey {
        name: "status",
        schema: r##"{"$ref": "#/components/schemas/AlertStatus"}"##,
        description: "Status filter applied (database alerts).",
    },
    MetaKey {
        name: "attribution",
        schema: r#"{"type": "object", "required": ["text", "licence", "url"], "properties": {"text": {"type": "string"}, "licence": {"type": "string"}, "url": {"type": "string"}}}"#,
        description: "Attribution the geolocation data requires (flow map).",
    },
    MetaKey {
        name: "server_collection",
        schema: r#"{"type": "string", "enum": ["active", "inactive"]}"#,
        description: "Whether DNS query logs are collected (DNS queries).",
    },
    MetaKey {
        name: "servers",
        schema: r#"{"type": "array", "items": {"type": "string"}}"#,
        description: "DNS servers whose query logs are collected (DNS queries, when collection is active).",
    },
    MetaKey {
        name: "global",
        schema: r#"{"type": "integer", "minimum": 0}"#,
        description: "Number of global rules (security rules).",
    },
    MetaKey {
        name: "tenant",
        schema: r#"{"type": "integer", "minimum": 0}"#,
        description: "Number of the account's own rules (security rules).",
    },
];

/// A successful answer.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Envelope<T> {
    pub data: T,
    pub meta: Meta,
}

impl<T> Envelope<T> {
    pub fn new(data: T, meta: Meta) -> Self {
        Self { data, meta }
    }
}

impl<T: Serialize> IntoResponse for Envelope<T> {
    fn into_response(self) -> Response {
        match serde_json::to_vec(&self) {
            Ok(bytes) => {
                ([(http::header::CONTENT_TYPE, "application/json")], bytes).into_response()
            }
            Err(e) => ApiError::internal(&e).into_response(),
        }
    }
}

pub type ApiResult<T> = Result<Envelope<T>, ApiError>;

/// `data` with an empty `meta`.
pub fn ok<T>(data: T) -> ApiResult<T> {
    Ok(Envelope::new(data, Meta::new()))
}
