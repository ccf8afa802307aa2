//! State built once per process (per cold start under Lambda) and shared by every route: the
//! storage ports as the deployment opened them, each on its own so that a handler reaches the
//! one it uses, with the configuration and the cursor codec.

use std::sync::Arc;

use netops_geo::GeoDb;

use crate::config::Config;
use crate::cursor::CursorCodec;
use crate::oauth::AccessTokens;
use crate::store::memory::ProcessCounters;
use crate::store::{StoreResult, Stores};

#[derive(Clone)]
pub struct AppState {
    /// The ports. The rate limit counts calls in `stores.counters`: the store's, unless
    /// [`AppState::counting_in_process`].
    pub stores: Stores,
    pub config: Arc<Config>,
    pub cursors: Arc<CursorCodec>,
    /// The verifier of OAuth access tokens, in a process that serves the MCP endpoint with
    /// an issuer configured ([`AppState::accepting`]); the gate asks it on that route alone.
    pub access_tokens: Option<Arc<dyn AccessTokens>>,
    /// The country and operator of addresses, in a process that collects flows with a
    /// geolocation file loaded ([`AppState::geolocating`]); without it, public addresses
    /// are stored with an unknown country and operator.
    pub geo: Option<Arc<GeoDb>>,
}

impl AppState {
    /// State over opened stores; the cursor key comes from the configuration or, when unset,
    /// from the deployment (created once and kept, so cursors survive restarts).
    pub async fn new(stores: &Stores, config: Config) -> StoreResult<Self> {
        let key = match &config.cursor_secret {
            Some(k) => k.clone(),
            None => stores.deployment.secret("cursor").await?,
        };
        Ok(Self::with_cursor_keys(stores, config, vec![key]))
    }

    /// State over opened stores with a cursor key ring read elsewhere (a function reads its
    /// ring from Secrets Manager), the signing key first; without keys, a ring still being
    /// read, which pages wait for ([`CursorCodec::ready`]).
    pub fn with_cursor_keys(stores: &Stores, config: Config, keys: Vec<Vec<u8>>) -> Self {
        let cursors = CursorCodec::new(keys, config.cursor_valid_hours);
        Self {
            stores: stores.clone(),
            config: Arc::new(config),
            cursors: Arc::new(cursors),
            access_tokens: None,
            geo: None,
        }
    }

    /// Looks the addresses of collected flows up in `geo`.
    pub fn geolocating(mut self, geo: Option<Arc<GeoDb>>) -> Self {
        self.geo = geo;
        self
    }

    /// Accepts OAuth access tokens on the MCP endpoint through `verifier`, when there is one.
    pub fn accepting(mut self, verifier: Option<Arc<dyn AccessTokens>>) -> Self {
        self.access_tokens = verifier;
        self
    }

    /// Counts calls in this process's memory: for the one local process, which serves every
    /// route and so shares its counts with no one.
    pub fn counting_in_process(mut self) -> Self {
        self.stores.counters = Arc::new(ProcessCounters::default());
        self
    }
}
