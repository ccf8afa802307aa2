//! State built once per process (per cold start under Lambda) and shared by every route: each
//! storage port on its own, so that a handler reaches the one it uses.

use std::sync::Arc;

use crate::config::{Config, StoreKind};
use crate::cursor::CursorCodec;
use crate::store::dynamo::DynamoStore;
use crate::store::memory::ProcessCounters;
use crate::store::{
    Counters, Documents, Rollups, SeriesRead, SeriesWrite, StoreResult, Stores, Tokens, WriteLog,
};

#[derive(Clone)]
pub struct AppState {
    pub docs: Arc<dyn Documents>,
    pub series: Arc<dyn SeriesRead>,
    pub series_writes: Arc<dyn SeriesWrite>,
    pub rollups: Arc<dyn Rollups>,
    pub tokens: Arc<dyn Tokens>,
    pub writes: Arc<dyn WriteLog>,
    /// Where the rate limit counts calls: the store, unless [`AppState::counting_in_process`].
    pub counters: Arc<dyn Counters>,
    pub config: Arc<Config>,
    pub cursors: Arc<CursorCodec>,
}

impl AppState {
    /// State over opened stores; the cursor key comes from the configuration or, when unset,
    /// from the deployment (created once and kept, so cursors survive restarts).
    pub async fn new(stores: &Stores, config: Config) -> StoreResult<Self> {
        let key = match &config.cursor_secret {
            Some(k) => k.clone(),
            None => stores.deployment.secret("cursor").await?,
        };
        let Stores {
            docs,
            series,
            series_writes,
            rollups,
            tokens,
            writes,
            counters,
            deployment: _,
        } = stores.clone();
        Ok(Self {
            docs,
            series,
            series_writes,
            rollups,
            tokens,
            writes,
            counters,
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

    /// State over the stores the configuration names.
    pub async fn from_config(config: Config) -> StoreResult<Self> {
        let stores = open_configured(&config).await?;
        Self::new(&stores, config).await
    }
}

/// The stores the configuration names (`NETOPS_STORE`, and `NETOPS_SERIES_STORE` for series
/// reads, which then replace the main store's): SDK clients are built here, once per process
/// (per cold start under Lambda). A store this build was compiled without (features
/// `embedded`, `timestream`) is refused at once, naming the variable.
pub async fn open_configured(config: &Config) -> StoreResult<Stores> {
    #[cfg_attr(not(feature = "timestream"), allow(unused_mut))]
    let mut stores = match config.store {
        #[cfg(feature = "embedded")]
        StoreKind::Embedded => Stores::of(crate::store::sqlite::SqliteStore::open_retaining(
            &config.db_path,
            config.retention_days(),
        )?),
        #[cfg(not(feature = "embedded"))]
        StoreKind::Embedded => return Err(not_built("NETOPS_STORE=embedded", "embedded")),
        StoreKind::Dynamodb => {
            Stores::of(DynamoStore::connect(&config.dynamodb, config.retention_days()).await?)
        }
    };
    match &config.timestream {
        #[cfg(feature = "timestream")]
        Some(ts) => {
            let main = stores.series.clone();
            stores.series =
                Arc::new(crate::store::timestream::TimestreamSeries::connect(main, ts).await?);
        }
        #[cfg(not(feature = "timestream"))]
        Some(_) => return Err(not_built("NETOPS_SERIES_STORE=timestream", "timestream")),
        None => {}
    }
    Ok(stores)
}

/// A store the configuration asks for but this build does not include.
#[cfg(not(all(feature = "embedded", feature = "timestream")))]
fn not_built(setting: &str, feature: &str) -> crate::store::StoreError {
    crate::store::StoreError::Backend(format!(
        "{setting}: this build does not include it (cargo feature netops-shared/{feature})"
    ))
}
