//! The deployment port: what belongs to the deployment itself rather than to a tenant.

use async_trait::async_trait;

use crate::StoreResult;

/// Settings and upkeep of the deployment.
#[async_trait]
pub trait Deployment: Send + Sync + 'static {
    /// A random secret of 32 bytes created on first use and kept (cursor signing).
    async fn secret(&self, name: &str) -> StoreResult<Vec<u8>>;
    /// True when the store holds no tenant data yet.
    async fn is_empty(&self) -> StoreResult<bool>;
    /// Every tenant that holds a token (revoked and expired ones included), in name order:
    /// the tenants the scheduled pass goes over. An administrative read (a scan of the
    /// tokens on DynamoDB), made once a pass, never on a request.
    async fn tenants(&self) -> StoreResult<Vec<String>>;
    /// Removes a tenant's data (documents, series, rollups); tokens and the write log stay.
    async fn clear_tenant(&self, tenant: &str) -> StoreResult<()>;
}
