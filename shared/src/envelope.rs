//! The success envelope `{data, meta}` (docs/http-conventions.md#envelope).

use axum::response::{IntoResponse, Response};
use serde::Serialize;
use serde_json::{Map, Value};
use utoipa::ToSchema;

use crate::error::ApiError;
use crate::routes::Route;
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

/// A route-specific key of `meta`, as the OpenAPI document declares it. The routes that
/// answer it say so in their row of the route table ([`Route::meta`]).
pub struct MetaKey {
    pub name: &'static str,
    /// Its JSON Schema, as JSON text.
    pub schema: &'static str,
    /// What it says, and on which routes.
    pub description: &'static str,
}

/// Whether `route` may answer the `meta` key `name`, from its row of the route table: the
/// keys of the list and window helpers by its paging and window rules, any other by its
/// [`Route::meta`]. The OpenAPI document declares each route's `meta` from this, and debug
/// builds check every answer against it ([`MetaKeysAnswered`]).
pub fn route_answers(route: &Route, name: &str) -> bool {
    let by_rules = match name {
        "limit" => route.paging.is_some(),
        "next_cursor" => route.paging.is_some_and(|p| p.cursor),
        "truncated" => route.paging.is_some_and(|p| p.truncated),
        "window" | "window_capped" => route.window.is_some(),
        _ => false,
    };
    by_rules || route.meta.contains(&name)
}

/// The keys the list and window helpers set ([`Meta`]'s own fields): a route's paging and
/// window rules give them, or its [`Route::meta`] for a list or window of its own.
pub const HELPER_KEYS: &[&str] = &[
    "limit",
    "next_cursor",
    "truncated",
    "window",
    "window_capped",
];

/// The `meta` keys of an answer, which the gate checks against its route in debug builds
/// ([`route_answers`]): a key the document does not declare for the route is a programming
/// error, caught by the tests.
#[cfg(debug_assertions)]
#[derive(Debug, Clone)]
pub struct MetaKeysAnswered(pub Vec<String>);

impl Meta {
    /// The keys this `meta` holds.
    #[cfg(debug_assertions)]
    fn keys(&self) -> Vec<String> {
        let fixed = [
            ("limit", self.limit.is_some()),
            ("next_cursor", self.next_cursor.is_some()),
            ("truncated", self.truncated.is_some()),
            ("window", self.window.is_some()),
            ("window_capped", self.window_capped.is_some()),
        ];
        fixed
            .iter()
            .filter(|(_, set)| *set)
            .map(|(k, _)| (*k).to_owned())
            .chain(self.extra.keys().cloned())
            .collect()
    }
}

/// Every route-specific key a handler puts in `meta` ([`Meta::with`]).
pub const META_KEYS: &[MetaKey] = &[
    MetaKey {
        name: "total",
        schema: r#"{"type": "integer", "minimum": 0}"#,
        description: "Number of matching items before the list was cut to `limit` (alerts, monitor incidents, slow queries, security incidents).",
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
        name: "deployments_truncated",
        schema: r#"{"type": "boolean"}"#,
        description: "Present and true when a profile has more deployments than the answer shows: 10 per profile in the list, 50 in the detail, problem states first; `deployment_counts` counts them all (configuration profiles).",
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
        match crate::time::to_vec(&self) {
            Ok(bytes) => {
                #[cfg_attr(not(debug_assertions), allow(unused_mut))]
                let mut res =
                    ([(http::header::CONTENT_TYPE, "application/json")], bytes).into_response();
                #[cfg(debug_assertions)]
                res.extensions_mut()
                    .insert(MetaKeysAnswered(self.meta.keys()));
                res
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::routes::ROUTES;

    /// A route's own `meta` keys are declared ([`META_KEYS`]) or helper keys its rules do not
    /// already give, each once; and every declared key is answered by some route.
    #[test]
    fn the_meta_keys_of_the_route_table_are_declared_and_answered() {
        for route in ROUTES {
            for (i, key) in route.meta.iter().enumerate() {
                let op = route.op;
                assert!(!route.meta[..i].contains(key), "{op}: meta {key} twice");
                if HELPER_KEYS.contains(key) {
                    let mut bare = route.clone();
                    bare.meta = &[];
                    assert!(
                        !route_answers(&bare, key),
                        "{op}: its rules already give meta {key}"
                    );
                } else {
                    assert!(
                        META_KEYS.iter().any(|k| k.name == *key),
                        "{op}: meta {key} is not declared in META_KEYS"
                    );
                }
            }
        }
        for key in META_KEYS {
            assert!(
                ROUTES.iter().any(|r| r.meta.contains(&key.name)),
                "no route answers meta {}",
                key.name
            );
        }
    }
}
