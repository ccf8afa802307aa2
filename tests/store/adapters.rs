//! The adapters under test, each opened fresh for one test: the one file of the suite that
//! names them (the rest reaches the ports through `netops_shared::store`).

use std::sync::Arc;

use netops_shared::config::DEFAULT_RETENTION_DAYS;
use netops_shared::store::memory::ProcessCounters;
use netops_shared::store::{Counters, Stores};
use netops_store_dynamodb::{DynamoConfig, DynamoStore};
use netops_store_sqlite::SqliteStore;

/// An adapter opened for one test, with what it takes to open its store again.
#[derive(Clone)]
pub struct Subject {
    /// Every port, when the adapter serves them all (not the in-process counters).
    stores: Option<Stores>,
    counters: Arc<dyn Counters>,
    place: Place,
}

/// Where a subject's data lives.
#[derive(Clone)]
enum Place {
    /// The embedded store's file, in a folder removed with the last copy of the subject.
    File(Arc<tempfile::TempDir>),
    /// DynamoDB tables of their own.
    Tables(DynamoConfig),
    /// This process's memory.
    Process,
}

const FILE: &str = "store.db";

impl Subject {
    /// Every port of the adapter.
    pub fn stores(&self) -> &Stores {
        self.stores
            .as_ref()
            .expect("this adapter serves the counters port only")
    }

    /// The same store opened again, as another process or function instance opens it: what
    /// one instance wrote, the other reads.
    pub async fn again(&self) -> Stores {
        match &self.place {
            Place::File(dir) => {
                Stores::of(SqliteStore::open(dir.path().join(FILE)).expect("reopen"))
            }
            Place::Tables(config) => Stores::of(
                DynamoStore::connect(config, DEFAULT_RETENTION_DAYS)
                    .await
                    .expect("connect again"),
            ),
            Place::Process => panic!("the in-process counters are not shared by processes"),
        }
    }
}

/// What a test function takes of the subject: its stores, its counters, or itself.
pub trait Port {
    fn of(subject: &Subject) -> Self;
}

impl Port for Stores {
    fn of(subject: &Subject) -> Self {
        subject.stores().clone()
    }
}

impl Port for Arc<dyn Counters> {
    fn of(subject: &Subject) -> Self {
        subject.counters.clone()
    }
}

impl Port for Subject {
    fn of(subject: &Subject) -> Self {
        subject.clone()
    }
}

/// The embedded store, on a file of its own.
pub async fn sqlite() -> Option<Subject> {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = SqliteStore::open(dir.path().join(FILE)).expect("open");
    let stores = Stores::of(store);
    Some(Subject {
        counters: stores.counters.clone(),
        stores: Some(stores),
        place: Place::File(Arc::new(dir)),
    })
}

/// DynamoDB, on tables of their own (a fresh prefix) on the DynamoDB-protocol server of
/// `NETOPS_TEST_DYNAMODB_ENDPOINT`.
pub async fn dynamodb() -> Option<Subject> {
    let endpoint = endpoint()?;
    let mut config = DynamoConfig {
        table_prefix: format!("c{:016x}-", rand::random::<u64>()),
        endpoint: Some(endpoint),
        region: Some("us-east-1".into()),
        ..DynamoConfig::default()
    };
    if let Some(secs) = std::env::var("NETOPS_DYNAMODB_TIMEOUT_SECS")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        config.timeout_secs = secs;
    }
    let store = DynamoStore::connect(&config, DEFAULT_RETENTION_DAYS)
        .await
        .expect("connect");
    store.ensure_tables().await.expect("tables");
    let stores = Stores::of(store);
    Some(Subject {
        counters: stores.counters.clone(),
        stores: Some(stores),
        place: Place::Tables(config),
    })
}

/// The local process's rate-limit counters, in its memory.
pub async fn process() -> Option<Subject> {
    Some(Subject {
        stores: None,
        counters: Arc::new(ProcessCounters::default()),
        place: Place::Process,
    })
}

/// The DynamoDB-protocol server's endpoint; `None` (the test is skipped, saying so) when
/// there is none, unless `NETOPS_REQUIRE_AWS_TESTS=1` (set by the test command) makes that
/// fatal, as in the API suite.
fn endpoint() -> Option<String> {
    match std::env::var("NETOPS_TEST_DYNAMODB_ENDPOINT") {
        Ok(e) if !e.is_empty() => Some(e),
        _ => {
            assert!(
                std::env::var("NETOPS_REQUIRE_AWS_TESTS").as_deref() != Ok("1"),
                "NETOPS_TEST_DYNAMODB_ENDPOINT is required"
            );
            eprintln!("skipped: no DynamoDB endpoint (run tests/run.sh)");
            None
        }
    }
}
