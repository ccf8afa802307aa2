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

    pub fn with(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.extra.insert(key.to_owned(), value.into());
        self
    }
}

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
