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

/// A route-specific key of `meta`, as the OpenAPI document declares it.
pub struct MetaKey {
    pub name: &'static str,
    /// Its JSON Schema, as JSON text.
    pub schema: &'static str,
    /// What it says, and on which routes.
    pub description: &'static str,
    /// The operations that answer it.
    pub ops: &'static [&'static str],
}

/// Whether `route` may answer the `meta` key `name`: the keys of the list and window helpers
/// by the route's paging and window rules, the route-specific ones by [`META_KEYS`]. The
/// OpenAPI document declares each route's `meta` from this, and debug builds check every
/// answer against it ([`MetaKeysAnswered`]).
pub fn route_answers(route: &Route, name: &str) -> bool {
    match name {
        "limit" => route.paging.is_some(),
        "next_cursor" => route.paging.is_some_and(|p| p.cursor),
        // Lists without a cursor. The firewall traffic is no list: `limit` cuts each of its
        // top lists, and it says nothing more.
        "truncated" => {
            (route.paging.is_some_and(|p| !p.cursor) && route.op != "get_firewall_traffic")
                || UNPAGED_LISTS.contains(&route.op)
        }
        // The flow explorer resolves a window of its own (its periods are not W's).
        "window" | "window_capped" => route.window.is_some() || route.op == "explore_flows",
        _ => META_KEYS
            .iter()
            .any(|k| k.name == name && k.ops.contains(&route.op)),
    }
}

/// The lists without paging that answer at most a fixed number of items, and say in
/// `truncated` whether more matched.
const UNPAGED_LISTS: &[&str] = &[
    "list_lockouts",
    "list_security_anomalies",
    "list_blocking_chains",
    "list_database_alerts",
    "list_database_check_results",
    "list_dns_threats",
    "list_dns_server_queries",
    "list_network_alerts",
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
        ops: &[
            "list_alerts",
            "list_monitor_incidents",
            "list_slow_queries",
            "list_security_incidents",
        ],
    },
    MetaKey {
        name: "count",
        schema: r#"{"type": "integer", "minimum": 0}"#,
        description: "Number of items answered (NetDiag machines overview).",
        ops: &["list_netdiag_machines"],
    },
    MetaKey {
        name: "software_truncated",
        schema: r#"{"type": "boolean"}"#,
        description: "Present and true when a machine's software list was cut (inventory).",
        ops: &["get_asset"],
    },
    MetaKey {
        name: "deployments_truncated",
        schema: r#"{"type": "boolean"}"#,
        description: "Present and true when a profile has more deployments than the answer shows: 10 per profile in the list, 50 in the detail, problem states first; `deployment_counts` counts them all (configuration profiles).",
        ops: &["list_profiles", "get_profile"],
    },
    MetaKey {
        name: "events_truncated",
        schema: r#"{"type": "boolean"}"#,
        description: "Present and true when an incident's event list was cut (security).",
        ops: &["get_security_incident"],
    },
    MetaKey {
        name: "graph_days",
        schema: r#"{"type": "integer"}"#,
        description: "Days of history the graph covers (security exposure ranking).",
        ops: &["list_risky_accounts"],
    },
    MetaKey {
        name: "by",
        schema: r##"{"$ref": "#/components/schemas/TopBy"}"##,
        description: "Ranking measure applied (database top queries).",
        ops: &["list_top_queries"],
    },
    MetaKey {
        name: "source",
        schema: r#"{"type": "string"}"#,
        description: "Where the answer comes from: `agent`, `gateway` or `all` (flow destinations), `samples_5m` or `rollups_1h` (database series).",
        ops: &["list_flow_destinations", "get_database_metrics"],
    },
    MetaKey {
        name: "points",
        schema: r#"{"type": "integer", "minimum": 0}"#,
        description: "Number of points of the series (database series).",
        ops: &["get_database_metrics"],
    },
    MetaKey {
        name: "resolution_seconds",
        schema: r#"{"type": "integer", "minimum": 1}"#,
        description: "Seconds between two points of the series (database series).",
        ops: &["get_database_metrics"],
    },
    MetaKey {
        name: "status",
        schema: r##"{"$ref": "#/components/schemas/AlertStatus"}"##,
        description: "Status filter applied (database alerts).",
        ops: &["list_database_alerts"],
    },
    MetaKey {
        name: "attribution",
        schema: r#"{"type": "object", "required": ["text", "licence", "url"], "properties": {"text": {"type": "string"}, "licence": {"type": "string"}, "url": {"type": "string"}}}"#,
        description: "Attribution the geolocation data requires (flow map).",
        ops: &["explore_flows"],
    },
    MetaKey {
        name: "server_collection",
        schema: r#"{"type": "string", "enum": ["active", "inactive"]}"#,
        description: "Whether DNS query logs are collected (DNS queries).",
        ops: &["list_dns_server_queries"],
    },
    MetaKey {
        name: "servers",
        schema: r#"{"type": "array", "items": {"type": "string"}}"#,
        description: "DNS servers whose query logs are collected (DNS queries, when collection is active).",
        ops: &["list_dns_server_queries"],
    },
    MetaKey {
        name: "global",
        schema: r#"{"type": "integer", "minimum": 0}"#,
        description: "Number of global rules (security rules).",
        ops: &["list_security_rules"],
    },
    MetaKey {
        name: "tenant",
        schema: r#"{"type": "integer", "minimum": 0}"#,
        description: "Number of the account's own rules (security rules).",
        ops: &["list_security_rules"],
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
