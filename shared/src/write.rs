//! Writes and the write log (spec 1, DECISIONS "Writes"): every write request, accepted or
//! refused, leaves one log entry. An accepted write commits its state changes and its entry
//! together; the gate logs the refusals the handler did not commit itself.

use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use chrono::Utc;
use http::StatusCode;
use serde::Serialize;
use serde_json::Value;

use crate::auth::Caller;
use crate::envelope::Envelope;
use crate::error::ApiError;
use crate::state::AppState;
use crate::store::{Change, StoreError, WriteLogEntry};

/// Marks a response whose write-log entry was committed by the handler.
#[derive(Clone, Copy)]
pub struct Logged;

/// The body of a write request, kept by the gate for the log.
#[derive(Clone, Debug, Default)]
pub struct WriteBody(pub Bytes);

impl WriteBody {
    /// The body as logged: the JSON value, or the raw text when it is not JSON.
    pub fn logged(&self) -> Value {
        if self.0.is_empty() {
            return Value::Null;
        }
        serde_json::from_slice(&self.0)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&self.0).into_owned()))
    }
}

pub fn entry(caller: &Caller, status: StatusCode) -> WriteLogEntry {
    WriteLogEntry {
        tenant: caller.tenant.clone(),
        at: Utc::now(),
        request_id: caller.request_id.clone(),
        token_name: caller.token_name.clone(),
        method: caller.route.method.to_string(),
        path: caller.path.clone(),
        body: caller.body.logged(),
        status: status.as_u16(),
    }
}

/// Why a commit did not happen.
pub enum CommitError {
    /// A conditional change found another state: nothing was written.
    Conflict,
    /// The store or the log failed: nothing was written (503).
    Failed(ApiError),
}

/// Commits `changes` with the log entry of an accepted write answered with `status`.
pub async fn commit(
    state: &AppState,
    caller: &Caller,
    status: StatusCode,
    changes: Vec<Change>,
) -> Result<(), CommitError> {
    match state.store.commit(entry(caller, status), changes).await {
        Ok(()) => Ok(()),
        Err(StoreError::ConditionFailed) => Err(CommitError::Conflict),
        Err(e) => Err(CommitError::Failed(ApiError::unavailable(&e))),
    }
}

/// An accepted write's answer, its log entry committed.
pub struct Committed<T>(pub StatusCode, pub Envelope<T>);

impl<T: Serialize> IntoResponse for Committed<T> {
    fn into_response(self) -> Response {
        let mut res = (self.0, self.1).into_response();
        res.extensions_mut().insert(Logged);
        res
    }
}

/// Logs a refused write (the gate calls it when the handler committed nothing).
pub async fn log_refusal(state: &AppState, caller: &Caller, status: StatusCode) {
    if let Err(e) = state.store.commit(entry(caller, status), Vec::new()).await {
        tracing::error!(cause = %e, "write log unavailable for a refused write");
    }
}
