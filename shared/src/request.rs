//! What one request is, apart from who sends it ([`crate::auth::Caller`]): its route in the
//! table, its id, its path and, for a write, the body the gate read for the log. The gate
//! places both in the request; the paging and window extractors read the route's rules from
//! here, and writes their log entry.

use axum::extract::FromRequestParts;
use bytes::Bytes;
use http::request::Parts;

use crate::error::ApiError;
use crate::routes::Route;

#[derive(Debug, Clone)]
pub struct RequestCtx {
    pub route: &'static Route,
    pub request_id: String,
    /// The request path, as logged for writes.
    pub path: String,
    /// The body of a write request (empty for reads).
    pub body: WriteBody,
    /// The idempotency key this write holds, whose answer is kept with its commit
    /// (`crate::idempotency`).
    pub idempotency: Option<ClaimedKey>,
}

/// The idempotency key a write holds and its claim, which its kept answer names.
#[derive(Debug, Clone)]
pub struct ClaimedKey {
    /// The key as stored: scoped to the token.
    pub key: String,
    pub claim: String,
}

impl<S: Send + Sync> FromRequestParts<S> for RequestCtx {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        parts
            .extensions
            .get::<RequestCtx>()
            .cloned()
            .ok_or_else(|| ApiError::internal(&"route served without the gate"))
    }
}

/// The body of a write request, read by the gate for the log (at most 64 KiB).
#[derive(Clone, Debug)]
pub enum WriteBody {
    Read(Bytes),
    /// Over the limit, refused with 413: its length as declared, or for a body sent without
    /// a length, the bytes received when the limit was passed (it was at least that long).
    TooLarge {
        length: u64,
    },
}

impl Default for WriteBody {
    fn default() -> Self {
        WriteBody::Read(Bytes::new())
    }
}
