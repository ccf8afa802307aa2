//! State built once per process (per cold start under Lambda) and shared by every route.

use std::sync::Arc;

use crate::config::{Config, StoreKind};
use crate::cursor::CursorCodec;
use crate::store::dynamo::DynamoStore;
use crate::store::memory::ProcessCounters;
use crate::store::{Counters, DynStore, StoreResult};

#[derive(Clone)]
pub struct AppState {
    pub store: DynStore,
    /// Where the rate limit counts calls: the store, unless [`AppState::counting_in_process`].
    pub counters: Arc<dyn Counters>,
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
            counters: store.clone(),
            store,
            config: Arc::new(config),
            cursors: Arc::new(CursorCodec::new(key)),
        })
    }

    /// Counts calls in this process's memory: for the one local process, which serves every
    /// route and so shares its counts with no one.
    pub fn counting_in_process(self) -> Self {
        Self {
            counters: Arc::new(ProcessCounters::default()),
            ..self
        }
    }

    /// State over the store the configuration names.
    pub async fn from_config(config: Config) -> StoreResult<Self> {
        let store = open_configured(&config).await?;
        Self::new(store, config).await
    }
}

/// The store the configuration names (`NETOPS_STORE`, and `NETOPS_SERIES_STORE` for series
/// reads): SDK clients are built here, once per process (per cold start under Lambda). A
/// store this build was compiled without (features `embedded`, `timestream`) is refused at
/// once, naming the variable.
pub async fn open_configured(config: &Config) -> StoreResult<DynStore> {
    let store: DynStore = match config.store {
        #[cfg(feature = "embedded")]
        StoreKind::Embedded => Arc::new(crate::store::sqlite::SqliteStore::open(&config.db_path)?),
        #[cfg(not(feature = "embedded"))]
        StoreKind::Embedded => return Err(not_built("NETOPS_STORE=embedded", "embedded")),
        StoreKind::Dynamodb => Arc::new(DynamoStore::connect(&config.dynamodb).await?),
    };
    Ok(match &config.timestream {
        #[cfg(feature = "timestream")]
        Some(ts) => Arc::new(crate::store::timestream::TimestreamSeries::connect(store, ts).await?),
        #[cfg(not(feature = "timestream"))]
        Some(_) => return Err(not_built("NETOPS_SERIES_STORE=timestream", "timestream")),
        None => store,
    })
}

/// A store the configuration asks for but this build does not include.
#[cfg(not(all(feature = "embedded", feature = "timestream")))]
fn not_built(setting: &str, feature: &str) -> crate::store::StoreError {
    crate::store::StoreError::Backend(format!(
        "{setting}: this build does not include it (cargo feature netops-shared/{feature})"
    ))
}
