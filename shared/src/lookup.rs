//! Typed reads of stored documents, for handlers: one document by key (absent, or a 404), every
//! document of a collection, and the fleet's machine documents, which several modules check a
//! `machine` or `hostname` against. A stored body of another shape than its type is an
//! internal error (logged, never shown).

use chrono::{DateTime, Utc};
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::error::ApiError;
use crate::store::{Documents, Filter};

/// Collection of the fleet's machine documents, keyed by host name.
pub const MACHINES: &str = "machines";

/// The collection holding the count of the fleet's machines (key [`MACHINE_COUNT_KEY`],
/// body `{"machines": n}`), written with the roster, so that a route needing the fleet's size
/// does not read the roster.
pub const MACHINE_COUNT: &str = "machines.count";
pub const MACHINE_COUNT_KEY: &str = "all";

/// A stored body as its type.
pub fn decode<T: DeserializeOwned>(body: Value) -> Result<T, ApiError> {
    serde_json::from_value(body).map_err(|e| ApiError::internal(&e))
}

/// A stored body, as the store holds its text, as its type: decoded once, with no generic
/// tree in between (the pages of list routes).
pub fn decode_text<T: DeserializeOwned>(body: &str) -> Result<T, ApiError> {
    serde_json::from_str(body).map_err(|e| ApiError::internal(&e))
}

/// A stored document as its type, with the version a conditional change of it expects.
#[derive(Debug)]
pub struct Versioned<T> {
    pub value: T,
    pub version: u64,
}

/// The typed reads, on the documents port (in scope with `use netops_shared::lookup::Lookup`).
#[async_trait::async_trait]
pub trait Lookup {
    /// The port read.
    fn documents(&self) -> &dyn Documents;

    /// The document `key` of a collection as its type, with its version; `None` when absent.
    async fn get_versioned<T: DeserializeOwned + Send>(
        &self,
        tenant: &str,
        collection: &str,
        key: &str,
    ) -> Result<Option<Versioned<T>>, ApiError> {
        self.documents()
            .get(tenant, collection, key)
            .await?
            .map(|d| {
                Ok(Versioned {
                    value: decode(d.body)?,
                    version: d.version,
                })
            })
            .transpose()
    }

    /// The document `key` of a collection as its type; `None` when absent.
    async fn get_as<T: DeserializeOwned + Send>(
        &self,
        tenant: &str,
        collection: &str,
        key: &str,
    ) -> Result<Option<T>, ApiError> {
        Ok(self
            .get_versioned(tenant, collection, key)
            .await?
            .map(|d| d.value))
    }

    /// The document `key` of a collection as its type, or the 404 `missing` makes.
    async fn get_or_404<T: DeserializeOwned + Send>(
        &self,
        tenant: &str,
        collection: &str,
        key: &str,
        missing: impl FnOnce() -> ApiError + Send,
    ) -> Result<T, ApiError> {
        self.get_as(tenant, collection, key)
            .await?
            .ok_or_else(missing)
    }

    /// Every document of a collection matching `filter`, in key order, as its type (a read of
    /// everything, [`crate::store::READ_ALL`] at most).
    async fn all_as<T: DeserializeOwned + Send>(
        &self,
        tenant: &str,
        collection: &str,
        filter: &Filter,
    ) -> Result<Vec<T>, ApiError> {
        self.documents()
            .read_all(tenant, collection, filter)
            .await?
            .items
            .into_iter()
            .map(|d| decode(d.body))
            .collect()
    }

    /// The documents of a collection that ages out in progress, or ended since `since`
    /// ([`Documents::live_since`]), that match `filter`, decoded as `T`.
    async fn live_as<T: DeserializeOwned + Send>(
        &self,
        tenant: &str,
        collection: &str,
        since: Option<DateTime<Utc>>,
        filter: &Filter,
    ) -> Result<Vec<T>, ApiError> {
        self.documents()
            .live_since(tenant, collection, since)
            .await?
            .items
            .into_iter()
            .filter(|d| filter.matches(&d.body))
            .map(|d| decode(d.body))
            .collect()
    }

    /// How many machines the tenant's fleet has (0 when no count was written).
    async fn machine_count(&self, tenant: &str) -> Result<usize, ApiError> {
        Ok(self
            .documents()
            .get(tenant, MACHINE_COUNT, MACHINE_COUNT_KEY)
            .await?
            .and_then(|d| d.body["machines"].as_u64())
            .unwrap_or(0) as usize)
    }

    /// The fleet document of the machine, or 404 in the caller's tenant.
    async fn machine(&self, tenant: &str, hostname: &str) -> Result<Value, ApiError> {
        self.get_or_404(tenant, MACHINES, hostname, || unknown_machine(hostname))
            .await
    }
}

/// The 404 of a host name unknown in the caller's tenant.
#[async_trait::async_trait]
impl Lookup for dyn Documents {
    fn documents(&self) -> &dyn Documents {
        self
    }
}

pub fn unknown_machine(hostname: &str) -> ApiError {
    ApiError::not_found(
        format!("Machine « {hostname} »"),
        format!("Machine '{hostname}'"),
    )
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;
    use serde_json::json;

    use super::*;
    use crate::error::ErrorCode;
    use crate::store::Stores;
    use netops_store_sqlite::SqliteStore;

    #[derive(Debug, Deserialize, PartialEq)]
    struct Site {
        name: String,
    }

    #[tokio::test]
    async fn a_document_is_read_as_its_type_or_the_404_of_the_caller() {
        let dir = tempfile::tempdir().expect("tempdir");
        let stores = Stores::of(SqliteStore::open(dir.path().join("t.db")).expect("open"));
        let docs = &stores.docs;
        docs.put(
            "a",
            "sites",
            vec![
                ("1".into(), json!({"name": "Paris"})),
                ("2".into(), json!({"city": "Lyon"})),
            ],
        )
        .await
        .expect("put");
        let missing = || ApiError::not_found("Site", "Site");
        let site: Site = docs
            .get_or_404("a", "sites", "1", missing)
            .await
            .expect("site");
        assert_eq!(site.name, "Paris");
        let versioned = docs
            .get_versioned::<Site>("a", "sites", "1")
            .await
            .expect("read")
            .expect("site");
        assert_eq!(versioned.version, 1);
        // Absent, or present in another tenant only: the caller's 404.
        for (tenant, key) in [("a", "3"), ("b", "1")] {
            let err = docs
                .get_or_404::<Site>(tenant, "sites", key, missing)
                .await
                .expect_err("absent");
            assert_eq!(err.code, ErrorCode::NotFound);
            assert!(
                docs.get_as::<Site>(tenant, "sites", key)
                    .await
                    .expect("read")
                    .is_none()
            );
        }
        // A body of another shape is an internal error, not a 404.
        let err = docs
            .get_or_404::<Site>("a", "sites", "2", missing)
            .await
            .expect_err("shape");
        assert_eq!(err.code, ErrorCode::InternalError);
        let err = docs
            .all_as::<Site>("a", "sites", &Filter::all())
            .await
            .expect_err("shape");
        assert_eq!(err.code, ErrorCode::InternalError);
        let named = Filter::all().and(crate::store::Pred::Eq("name", json!("Paris")));
        let paris: Vec<Site> = docs.all_as("a", "sites", &named).await.expect("sites");
        assert_eq!(paris, vec![site]);
    }
}
