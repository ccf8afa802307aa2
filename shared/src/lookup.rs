//! Reading stored documents in handlers: typed decoding, and the fleet's machine documents,
//! which several modules check a `machine` or `hostname` against.

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::error::ApiError;
use crate::store::DynStore;

/// Collection of the fleet's machine documents, keyed by host name.
pub const MACHINES: &str = "machines";

/// A stored body as its type; a body of another shape is an internal error (logged, never
/// shown).
pub fn decode<T: DeserializeOwned>(body: Value) -> Result<T, ApiError> {
    serde_json::from_value(body).map_err(|e| ApiError::internal(&e))
}

/// The 404 of a host name unknown in the caller's tenant.
pub fn unknown_machine(hostname: &str) -> ApiError {
    ApiError::not_found(
        format!("Machine « {hostname} »"),
        format!("Machine '{hostname}'"),
    )
}

/// The fleet document of the machine, or 404 in the caller's tenant.
pub async fn machine(store: &DynStore, tenant: &str, hostname: &str) -> Result<Value, ApiError> {
    store
        .get_doc(tenant, MACHINES, hostname)
        .await?
        .map(|d| d.body)
        .ok_or_else(|| unknown_machine(hostname))
}
