//! netops-store: the storage ports, with no SDK in them. The adapters are crates of their own
//! (netops-store-sqlite, netops-store-dynamodb, netops-store-timestream) and
//! netops-store-open opens the ones a configuration names.
//!
//! Storage ports. Modules never write backend code: they use these ports, small traits that
//! every adapter implements once, a file per port. The state holds each port on its own
//! (`Arc<dyn ...>`), so a handler reaches only the one it uses, and a backend can serve one
//! port alone (Timestream serves series reads). They follow DynamoDB's access patterns so that
//! every primitive maps onto a key lookup or a partition + sort-key range:
//!
//! - [`Documents`] by `(tenant, collection, key)`, versioned for conditional updates;
//! - [`SeriesRead`] and [`SeriesWrite`]: time-ordered records by `(tenant, series, partition)`,
//!   read newest first over a time range with simple predicates, resumable from a [`Position`];
//! - [`Rollups`]: hourly aggregates by `(tenant, series, hour, dimension key)`, measures added
//!   (and [`daily`]: a day of hours packed into one row, for long windows);
//! - [`Counters`]: atomic increments with an expiry (the rate limit);
//! - [`Tokens`]: API tokens by the hash of their secret;
//! - [`WriteLog`]: conditional state changes committed together with their write-log entry,
//!   coalesced refusals, entries kept for a retention time;
//! - [`IngestLog`]: the batches collectors sent, each recorded once by its batch id;
//! - [`Deployment`]: what belongs to the deployment rather than a tenant (secrets, emptiness,
//!   clearing a tenant for a new seed).
//!
//! [`Stores`] holds one of each, as a deployment opens them. `read_all` of documents and of
//! series reads "everything" within the one bound [`READ_ALL`].

/// The ports, one file each, with the helpers their adapters share.
pub mod ports;

pub mod config;
pub mod daily;
pub mod filter;
pub mod memory;
mod open_alerts;
pub mod usage;

use std::sync::Arc;

pub use filter::{Filter, Pred};
pub use ports::all::{All, READ_ALL};
pub use ports::counters::{COUNTER_GRACE_SECS, Counters};
pub use ports::deployment::{Deployment, ExportPage, Pace};
pub use ports::docs::{Doc, DocText, Documents, doc_time};
pub use ports::ingest::{IngestEntry, IngestLog, KEPT_REFUSALS, LineRefusal};
pub use ports::rollups::{BATCHES, KeepMeasure, Rollup, RollupGroup, Rollups};
pub use ports::series::{Position, Record, SeriesPage, SeriesQuery, SeriesRead, SeriesWrite};
pub use ports::tokens::{LAST_USED_EVERY_SECS, TokenRecord, Tokens};
pub use ports::writes::{
    ABANDONED_AFTER_SECS, Change, Expect, HeldKey, KeptAnswer, KeyClaim, UNAUTHENTICATED, WriteLog,
    WriteLogEntry,
};

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The backend failed (I/O, SQL, SDK). Never shown to callers.
    #[error("store backend: {0}")]
    Backend(String),
    /// A conditional change found another state than expected; nothing was written.
    #[error("condition failed")]
    ConditionFailed,
    /// A stored item does not have the expected shape.
    #[error("stored data: {0}")]
    Data(String),
    /// An item that must be unique exists already.
    #[error("already exists")]
    Exists,
}

pub type StoreResult<T> = Result<T, StoreError>;

/// One of each port, as a deployment opens them: every port from one adapter
/// ([`Stores::of`]), the series reads perhaps replaced by another backend's.
#[derive(Clone)]
pub struct Stores {
    pub docs: Arc<dyn Documents>,
    pub series: Arc<dyn SeriesRead>,
    pub series_writes: Arc<dyn SeriesWrite>,
    pub rollups: Arc<dyn Rollups>,
    pub tokens: Arc<dyn Tokens>,
    pub writes: Arc<dyn WriteLog>,
    pub ingest: Arc<dyn IngestLog>,
    pub counters: Arc<dyn Counters>,
    pub deployment: Arc<dyn Deployment>,
}

impl Stores {
    /// Every port served by one adapter, shared.
    pub fn of<A>(adapter: A) -> Self
    where
        A: Documents
            + SeriesRead
            + SeriesWrite
            + Rollups
            + Tokens
            + WriteLog
            + IngestLog
            + Counters
            + Deployment,
    {
        let a = Arc::new(adapter);
        Stores {
            docs: a.clone(),
            series: a.clone(),
            series_writes: a.clone(),
            rollups: a.clone(),
            tokens: a.clone(),
            writes: a.clone(),
            ingest: a.clone(),
            counters: a.clone(),
            deployment: a,
        }
    }
}
