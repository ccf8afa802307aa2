//! State built once per process (per cold start under Lambda) and shared by every route.

use std::sync::Arc;

use crate::config::Config;
use crate::cursor::CursorCodec;
use crate::store::sqlite::SqliteStore;
use crate::store::{DynStore, StoreResult};

#[derive(Clone)]
pub struct AppState {
    pub store: DynStore,
    pub config: Arc<Config>,
    pub cursors: Arc<CursorCodec>,
}

impl AppState {
    /// State over an existing store; the cursor key comes from the configuration or, when
    /// unset, from the store (created once and kept, so cursors survive restarts).
    pub async fn new(store: DynStore, config: Config) -> StoreResult<Self> {
        let key = match &config.cursor_secret {
            Some(k) => k.clone(),
            None => store.secret("cursor").await?,
        };
        Ok(Self {
            store,
            config: Arc::new(config),
            cursors: Arc::new(CursorCodec::new(key)),
        })
    }

    /// State over the store the configuration names.
    pub async fn from_config(config: Config) -> StoreResult<Self> {
        let store: DynStore = Arc::new(SqliteStore::open(&config.db_path)?);
        Self::new(store, config).await
    }
}
