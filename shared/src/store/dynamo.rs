//! The DynamoDB adapter: every storage primitive over two tables (see `infra/README.md`
//! for the table design and the access pattern each key serves).
//!
//! - `{prefix}control`: tokens (by hash; GSI `by_tenant` lists them), token-name guards,
//!   rate-limit counters (atomic `ADD`, TTL), deployment secrets.
//! - `{prefix}data`: documents, time-bucketed series (one item collection per series and
//!   UTC day; GSI `by_partition` reads one partition), hourly rollups, the write log.
//!
//! Predicates are evaluated here with [`Filter::matches`] on the decoded body, page by page,
//! so their semantics are exactly the embedded adapter's. Paging follows `LastEvaluatedKey`
//! inside a call; the position handed back ([`Position`] or the document key) is the last
//! item returned, from which the next call rebuilds an `ExclusiveStartKey`.
//!
//! Token lookups are cached per instance for at most `token_cache_secs` (30 s by default), so
//! a revocation made elsewhere takes effect within that time; a revocation made through this
//! instance drops its cache entry at once. Unknown tokens are never cached.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::config::interceptors::BeforeTransmitInterceptorContextRef;
use aws_sdk_dynamodb::config::{ConfigBag, Intercept, RuntimeComponents};
use aws_sdk_dynamodb::error::{BoxError, ProvideErrorMetadata, SdkError};
use aws_sdk_dynamodb::types::{
    AttributeDefinition, AttributeValue, BillingMode, DeleteRequest, GlobalSecondaryIndex,
    KeySchemaElement, KeyType, Projection, ProjectionType, Put, PutRequest, ReturnValue,
    ScalarAttributeType, TimeToLiveSpecification, TransactWriteItem, Update, WriteRequest,
};
use serde_json::Value;
use tokio::task::JoinSet;

use super::*;

/// How the adapter reaches its tables.
#[derive(Debug, Clone)]
pub struct DynamoConfig {
    /// Table names are `{prefix}control` and `{prefix}data`.
    pub table_prefix: String,
    /// Endpoint override (a DynamoDB-protocol server for tests); the regional endpoint otherwise.
    pub endpoint: Option<String>,
    /// Region; the SDK's usual sources (`AWS_REGION`, profile) when unset.
    pub region: Option<String>,
    /// How long a token read stays cached in this instance (0 disables the cache).
    pub token_cache_secs: u64,
    /// Series and rollups expire (TTL) this many days after their time.
    pub retention_days: u32,
}

impl Default for DynamoConfig {
    fn default() -> Self {
        Self {
            table_prefix: "netops-".into(),
            endpoint: None,
            region: None,
            token_cache_secs: 30,
            retention_days: 400,
        }
    }
}

/// Counts requests sent to DynamoDB (every attempt, retries included).
#[derive(Debug, Default)]
struct CallCounter(AtomicU64);

#[derive(Debug, Clone)]
struct Counting(Arc<CallCounter>);

impl Intercept for Counting {
    fn name(&self) -> &'static str {
        "netops-call-counter"
    }

    fn read_before_transmit(
        &self,
        _context: &BeforeTransmitInterceptorContextRef<'_>,
        _runtime_components: &RuntimeComponents,
        _cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        self.0.0.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }
}

/// The DynamoDB store. Cheap to clone; the SDK client is built once.
#[derive(Clone)]
pub struct DynamoStore {
    client: Client,
    control: Arc<str>,
    data: Arc<str>,
    cache: Arc<TokenCache>,
    calls: Arc<CallCounter>,
    retention_secs: i64,
}

struct TokenCache {
    ttl: Duration,
    entries: Mutex<HashMap<String, (Instant, TokenRecord)>>,
}

impl TokenCache {
    fn get(&self, hash: &str) -> Option<TokenRecord> {
        if self.ttl.is_zero() {
            return None;
        }
        let entries = self.entries.lock().ok()?;
        entries
            .get(hash)
            .filter(|(at, _)| at.elapsed() < self.ttl)
            .map(|(_, r)| r.clone())
    }

    fn put(&self, record: &TokenRecord) {
        if self.ttl.is_zero() {
            return;
        }
        if let Ok(mut entries) = self.entries.lock() {
            if entries.len() > 10_000 {
                entries.retain(|_, (at, _)| at.elapsed() < self.ttl);
            }
            entries.insert(record.hash.clone(), (Instant::now(), record.clone()));
        }
    }

    fn forget(&self, hash: &str) {
        if let Ok(mut entries) = self.entries.lock() {
            entries.remove(hash);
        }
    }
}

/// The HTTPS client shared by the AWS adapters: rustls over ring, hyper 1.
pub fn http_client() -> aws_sdk_dynamodb::config::SharedHttpClient {
    use aws_smithy_http_client::tls;
    aws_smithy_http_client::Builder::new()
        .tls_provider(tls::Provider::Rustls(
            tls::rustls_provider::CryptoMode::Ring,
        ))
        .build_https()
}

/// The SDK configuration: region, credentials and endpoint from the usual sources, with
/// static test credentials when an endpoint override is given without any.
///
/// Timeouts and retries are chosen so that a store that does not answer fails a request
/// well inside the function's 10 s timeout instead of hanging until Lambda kills it:
/// connecting gets 1 s (a regional endpoint answers in milliseconds); one attempt 3 s (a 1 MB
/// Query page takes tens of milliseconds, the slack is for a loaded test server); the whole
/// operation, retries included, 6 s. Throttling and transient errors are retried in the
/// SDK's standard mode, 3 attempts, backing off from 50 ms up to 1 s (AWS SDKs have long
/// used a base delay of tens of milliseconds for DynamoDB; the standard 1 s would use up the
/// request's budget on the first retry).
pub(crate) async fn sdk_config(
    region: Option<&str>,
    endpoint: Option<&str>,
) -> aws_config::SdkConfig {
    use aws_config::retry::RetryConfig;
    use aws_config::timeout::TimeoutConfig;
    let timeouts = TimeoutConfig::builder()
        .connect_timeout(Duration::from_secs(1))
        .operation_attempt_timeout(Duration::from_secs(3))
        .operation_timeout(Duration::from_secs(6))
        .build();
    let retries = RetryConfig::standard()
        .with_max_attempts(3)
        .with_initial_backoff(Duration::from_millis(50))
        .with_max_backoff(Duration::from_secs(1));
    // Under Lambda every TLS peer is an AWS endpoint, all signed by Amazon Trust Services:
    // trusting those five roots alone is the least trust, and spares every cold start the
    // reading and parsing of the system's whole bundle (1.7 ms of a 4 ms init with Debian's
    // 146 files). Elsewhere (the local process) the system's roots, which a company's own CA
    // may have joined.
    let http = if std::env::var_os("AWS_LAMBDA_FUNCTION_NAME").is_some() {
        use aws_smithy_http_client::tls;
        let roots = tls::TrustStore::empty()
            .with_native_roots(false)
            .with_pem_certificate(include_bytes!("amazon-roots.pem").as_slice());
        // (The builder cannot fail today; were it to, the default context is the system's.)
        let context = tls::TlsContext::builder()
            .with_trust_store(roots)
            .build()
            .unwrap_or_default();
        aws_smithy_http_client::Builder::new()
            .tls_provider(tls::Provider::Rustls(
                tls::rustls_provider::CryptoMode::Ring,
            ))
            .tls_context(context)
            .build_https()
    } else {
        http_client()
    };
    let mut loader = aws_config::defaults(aws_config::BehaviorVersion::latest())
        .http_client(http)
        .timeout_config(timeouts)
        .retry_config(retries);
    if let Some(r) = region {
        loader = loader.region(aws_config::Region::new(r.to_owned()));
    }
    if let Some(url) = endpoint {
        loader = loader.endpoint_url(url);
        if std::env::var_os("AWS_ACCESS_KEY_ID").is_none() {
            loader = loader.credentials_provider(aws_sdk_dynamodb::config::Credentials::new(
                "testing",
                "testing",
                None,
                None,
                "netops-endpoint-override",
            ));
        }
        if region.is_none() && std::env::var_os("AWS_REGION").is_none() {
            loader = loader.region(aws_config::Region::new("us-east-1"));
        }
    }
    loader.load().await
}

fn backend<E: std::fmt::Debug + ProvideErrorMetadata>(e: SdkError<E>) -> StoreError {
    // The service's code and message when there is one; the SDK's detail otherwise.
    match e.code() {
        Some(code) => StoreError::Backend(format!("{code}: {}", e.message().unwrap_or(""))),
        None => StoreError::Backend(format!("{e:?}")),
    }
}

fn is_condition_failed<E: ProvideErrorMetadata>(e: &SdkError<E>) -> bool {
    e.code() == Some("ConditionalCheckFailedException")
}

fn s(v: impl Into<String>) -> AttributeValue {
    AttributeValue::S(v.into())
}

fn n(v: impl ToString) -> AttributeValue {
    AttributeValue::N(v.to_string())
}

type Item = HashMap<String, AttributeValue>;

fn get_s<'a>(item: &'a Item, k: &str) -> StoreResult<&'a str> {
    match item.get(k) {
        Some(AttributeValue::S(v)) => Ok(v),
        _ => Err(StoreError::Data(format!(
            "attribute {k} missing or not a string"
        ))),
    }
}

fn get_n<T: std::str::FromStr>(item: &Item, k: &str) -> StoreResult<T> {
    match item.get(k) {
        Some(AttributeValue::N(v)) => v
            .parse()
            .map_err(|_| StoreError::Data(format!("attribute {k} is not a valid number"))),
        _ => Err(StoreError::Data(format!(
            "attribute {k} missing or not a number"
        ))),
    }
}

fn get_json(item: &Item, k: &str) -> StoreResult<Value> {
    serde_json::from_str(get_s(item, k)?).map_err(|e| StoreError::Data(e.to_string()))
}

/// Sort-key form of a time: fixed width, so byte order is time order.
fn ts_key(ms: i64) -> String {
    format!("{:015}", ms.max(0))
}

/// Sort key of a read position: time then id, as the embedded adapter orders them.
fn record_sk(ts: i64, id: &str) -> String {
    format!("{}|{id}", ts_key(ts))
}

/// Sort key of a stored record: its position's key, then its partition after a separator
/// below every printable character, so that records of two partitions with the same time
/// and id are two items, and every record of a position sorts just after the position's key
/// (a read resuming from the position skips them, as the embedded store does).
fn item_sk(ts: i64, id: &str, partition: &str) -> String {
    format!("{}\u{1}{partition}", record_sk(ts, id))
}

/// The greatest sort key of a time (`}` sorts after the `|` separator).
fn ts_key_last(ms: i64) -> String {
    format!("{}}}", ts_key(ms))
}

const DAY_MS: i64 = 86_400_000;

fn day_of(ms: i64) -> i64 {
    ms.div_euclid(DAY_MS)
}

fn doc_pk(tenant: &str, coll: &str) -> String {
    format!("{tenant}|D|{coll}")
}

fn bucket_pk(tenant: &str, series: &str, day: i64) -> String {
    format!("{tenant}|S|{series}|{day}")
}

fn partition_pk(tenant: &str, series: &str, partition: &str) -> String {
    format!("{tenant}|S|{series}|p|{partition}")
}

/// The item holding the first and last day a series has records for (`lo`, `hi`).
fn extent_pk(tenant: &str, series: &str) -> String {
    format!("{tenant}|E|{series}")
}

fn rollup_pk(tenant: &str, series: &str) -> String {
    format!("{tenant}|R|{series}")
}

fn log_pk(tenant: &str) -> String {
    format!("{tenant}|W")
}

/// Prefix of every data key of a tenant.
fn tenant_prefix(tenant: &str) -> String {
    format!("{tenant}|")
}

const MEASURE: &str = "m_";

impl DynamoStore {
    /// Connects to the tables named by the configuration (they must exist; see
    /// [`DynamoStore::ensure_tables`]). The SDK client is built here, once.
    pub async fn connect(config: &DynamoConfig) -> StoreResult<Self> {
        let sdk = sdk_config(config.region.as_deref(), config.endpoint.as_deref()).await;
        let calls = Arc::new(CallCounter::default());
        let conf = aws_sdk_dynamodb::config::Builder::from(&sdk)
            .interceptor(Counting(calls.clone()))
            .build();
        Ok(Self {
            client: Client::from_conf(conf),
            control: format!("{}control", config.table_prefix).into(),
            data: format!("{}data", config.table_prefix).into(),
            cache: Arc::new(TokenCache {
                ttl: Duration::from_secs(config.token_cache_secs),
                entries: Mutex::new(HashMap::new()),
            }),
            calls,
            retention_secs: i64::from(config.retention_days) * 86_400,
        })
    }

    /// Requests sent to DynamoDB by this instance so far (retries included).
    pub fn calls(&self) -> u64 {
        self.calls.0.load(Ordering::Relaxed)
    }

    pub fn table_names(&self) -> (&str, &str) {
        (&self.control, &self.data)
    }

    /// Creates both tables (on-demand, with their indexes and TTL) when they do not exist:
    /// for tests and `netops seed`; deployments create them from `infra/template.yaml`.
    pub async fn ensure_tables(&self) -> StoreResult<()> {
        let key = |name: &str, kind: KeyType| {
            KeySchemaElement::builder()
                .attribute_name(name)
                .key_type(kind)
                .build()
                .map_err(|e| StoreError::Backend(e.to_string()))
        };
        let attr = |name: &str| {
            AttributeDefinition::builder()
                .attribute_name(name)
                .attribute_type(ScalarAttributeType::S)
                .build()
                .map_err(|e| StoreError::Backend(e.to_string()))
        };
        let index = |name: &str, hash: &str, range: &str| -> StoreResult<GlobalSecondaryIndex> {
            GlobalSecondaryIndex::builder()
                .index_name(name)
                .key_schema(key(hash, KeyType::Hash)?)
                .key_schema(key(range, KeyType::Range)?)
                .projection(
                    Projection::builder()
                        .projection_type(ProjectionType::All)
                        .build(),
                )
                .build()
                .map_err(|e| StoreError::Backend(e.to_string()))
        };
        let tables = [
            (
                self.control.to_string(),
                vec![key("pk", KeyType::Hash)?],
                vec![attr("pk")?, attr("gt")?, attr("gs")?],
                index("by_tenant", "gt", "gs")?,
            ),
            (
                self.data.to_string(),
                vec![key("pk", KeyType::Hash)?, key("sk", KeyType::Range)?],
                vec![attr("pk")?, attr("sk")?, attr("gp")?, attr("gs")?],
                index("by_partition", "gp", "gs")?,
            ),
        ];
        for (name, keys, attrs, gsi) in tables {
            let exists = match self.client.describe_table().table_name(&name).send().await {
                Ok(_) => true,
                Err(e) if e.code() == Some("ResourceNotFoundException") => false,
                Err(e) => return Err(backend(e)),
            };
            if exists {
                continue;
            }
            let created = self
                .client
                .create_table()
                .table_name(&name)
                .billing_mode(BillingMode::PayPerRequest)
                .set_key_schema(Some(keys))
                .set_attribute_definitions(Some(attrs))
                .global_secondary_indexes(gsi)
                .send()
                .await;
            match created {
                Ok(_) => {}
                Err(e) if e.code() == Some("ResourceInUseException") => {}
                Err(e) => return Err(backend(e)),
            }
            for _ in 0..120 {
                let d = self
                    .client
                    .describe_table()
                    .table_name(&name)
                    .send()
                    .await
                    .map_err(backend)?;
                let active = d
                    .table()
                    .and_then(|t| t.table_status())
                    .is_some_and(|s| s.as_str() == "ACTIVE");
                if active {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
            self.client
                .update_time_to_live()
                .table_name(&name)
                .time_to_live_specification(
                    TimeToLiveSpecification::builder()
                        .attribute_name("ttl")
                        .enabled(true)
                        .build()
                        .map_err(|e| StoreError::Backend(e.to_string()))?,
                )
                .send()
                .await
                .map_err(backend)?;
        }
        Ok(())
    }

    /// Writes items with `BatchWriteItem`, 25 per request, a few requests in flight,
    /// retrying what DynamoDB leaves unprocessed.
    async fn batch_write(&self, table: &str, requests: Vec<WriteRequest>) -> StoreResult<()> {
        const IN_FLIGHT: usize = 8;
        let mut chunks: Vec<Vec<WriteRequest>> = Vec::new();
        let mut rest = requests;
        while !rest.is_empty() {
            let tail = rest.split_off(rest.len().min(25));
            chunks.push(std::mem::replace(&mut rest, tail));
        }
        let mut tasks = JoinSet::new();
        for chunk in chunks {
            if tasks.len() >= IN_FLIGHT
                && let Some(done) = tasks.join_next().await
            {
                done.map_err(|e| StoreError::Backend(e.to_string()))??;
            }
            let client = self.client.clone();
            let table = table.to_owned();
            tasks.spawn(async move {
                let mut pending = chunk;
                for attempt in 0..12u32 {
                    let out = client
                        .batch_write_item()
                        .request_items(&table, pending)
                        .send()
                        .await
                        .map_err(backend)?;
                    pending = out
                        .unprocessed_items
                        .and_then(|mut m| m.remove(&table))
                        .unwrap_or_default();
                    if pending.is_empty() {
                        return Ok(());
                    }
                    tokio::time::sleep(Duration::from_millis(25 << attempt.min(6))).await;
                }
                Err(StoreError::Backend(
                    "batch write left items unprocessed".into(),
                ))
            });
        }
        while let Some(done) = tasks.join_next().await {
            done.map_err(|e| StoreError::Backend(e.to_string()))??;
        }
        Ok(())
    }

    fn put_request(item: Item) -> StoreResult<WriteRequest> {
        Ok(WriteRequest::builder()
            .put_request(
                PutRequest::builder()
                    .set_item(Some(item))
                    .build()
                    .map_err(|e| StoreError::Backend(e.to_string()))?,
            )
            .build())
    }

    fn series_item(&self, tenant: &str, series: &str, r: &Record) -> StoreResult<Item> {
        let sk = item_sk(r.ts, &r.id, &r.partition);
        let body = serde_json::to_string(&r.body).map_err(|e| StoreError::Data(e.to_string()))?;
        Ok(HashMap::from([
            ("pk".to_owned(), s(bucket_pk(tenant, series, day_of(r.ts)))),
            ("sk".to_owned(), s(sk.clone())),
            (
                "gp".to_owned(),
                s(partition_pk(tenant, series, &r.partition)),
            ),
            ("gs".to_owned(), s(sk)),
            ("p".to_owned(), s(r.partition.clone())),
            ("ts".to_owned(), n(r.ts)),
            ("id".to_owned(), s(r.id.clone())),
            ("b".to_owned(), s(body)),
            (
                "ttl".to_owned(),
                n(r.ts.div_euclid(1000) + self.retention_secs),
            ),
        ]))
    }

    fn record_of(item: &Item) -> StoreResult<Record> {
        Ok(Record {
            partition: get_s(item, "p")?.to_owned(),
            ts: get_n(item, "ts")?,
            id: get_s(item, "id")?.to_owned(),
            body: get_json(item, "b")?,
        })
    }

    fn token_of(item: &Item) -> StoreResult<TokenRecord> {
        Ok(TokenRecord {
            hash: get_s(item, "h")?.to_owned(),
            tenant: get_s(item, "tenant")?.to_owned(),
            name: get_s(item, "name")?.to_owned(),
            scopes: get_s(item, "scopes")?
                .split(',')
                .filter_map(Scope::parse)
                .collect(),
            created_at: get_n(item, "created_at")?,
            expires_at: get_n(item, "expires_at")?,
            revoked_at: match item.get("revoked_at") {
                Some(_) => Some(get_n(item, "revoked_at")?),
                None => None,
            },
        })
    }

    /// Reads newest first from one item collection (a day bucket, or one partition in the
    /// `by_partition` index) until `want` records match or it is exhausted.
    #[allow(clippy::too_many_arguments)]
    async fn read_newest_first(
        &self,
        index: Option<&str>,
        key_attr: &str,
        key: String,
        lo: String,
        hi: String,
        start: Option<Item>,
        filter: &Filter,
        want: usize,
        out: &mut Vec<Record>,
    ) -> StoreResult<()> {
        let sk_attr = if index.is_some() { "gs" } else { "sk" };
        let mut start = start;
        loop {
            let need = want.saturating_sub(out.len());
            if need == 0 {
                return Ok(());
            }
            let mut q = self
                .client
                .query()
                .table_name(self.data.as_ref())
                .set_index_name(index.map(str::to_owned))
                .key_condition_expression("#k = :k AND #s BETWEEN :lo AND :hi")
                .expression_attribute_names("#k", key_attr)
                .expression_attribute_names("#s", sk_attr)
                .expression_attribute_values(":k", s(key.clone()))
                .expression_attribute_values(":lo", s(lo.clone()))
                .expression_attribute_values(":hi", s(hi.clone()))
                .scan_index_forward(false)
                .set_exclusive_start_key(start.take());
            if filter.0.is_empty() {
                q = q.limit(need.min(1000) as i32);
            }
            if index.is_none() {
                q = q.consistent_read(true);
            }
            let page = q.send().await.map_err(backend)?;
            for item in page.items() {
                let record = Self::record_of(item)?;
                if filter.matches(&record.body) {
                    out.push(record);
                    if out.len() >= want {
                        return Ok(());
                    }
                }
            }
            match page.last_evaluated_key {
                Some(k) if !k.is_empty() => start = Some(k),
                _ => return Ok(()),
            }
        }
    }

    async fn tx_write(&self, items: Vec<TransactWriteItem>) -> StoreResult<()> {
        // Concurrent transactions on one item cancel each other (TransactionConflict):
        // retried, after which the condition decides.
        for attempt in 0..6u32 {
            match self
                .client
                .transact_write_items()
                .set_transact_items(Some(items.clone()))
                .send()
                .await
            {
                Ok(_) => return Ok(()),
                Err(e) => {
                    let reasons: Vec<String> = match e.as_service_error() {
                        Some(aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError::TransactionCanceledException(c)) => c
                            .cancellation_reasons()
                            .iter()
                            .filter_map(|r| r.code().map(str::to_owned))
                            .collect(),
                        _ => Vec::new(),
                    };
                    if reasons.iter().any(|c| c == "ConditionalCheckFailed") {
                        return Err(StoreError::ConditionFailed);
                    }
                    let conflict = reasons.iter().any(|c| c == "TransactionConflict")
                        || e.code() == Some("TransactionInProgressException");
                    if conflict && attempt < 5 {
                        let jitter = rand::random::<u64>() % 20;
                        tokio::time::sleep(Duration::from_millis(10 * (1 << attempt) + jitter))
                            .await;
                        continue;
                    }
                    return Err(backend(e));
                }
            }
        }
        Err(StoreError::Backend("transaction kept conflicting".into()))
    }

    /// Every key (`pk`, `sk`) of the data table whose partition key starts with `prefix`.
    /// Widens the days a series has records for to include `lo..=hi`: two conditional
    /// updates, each a no-op when the bound already covers the day.
    async fn widen_extent(&self, tenant: &str, series: &str, lo: i64, hi: i64) -> StoreResult<()> {
        for (attr, day, cmp) in [("lo", lo, ">"), ("hi", hi, "<")] {
            let out = self
                .client
                .update_item()
                .table_name(self.data.as_ref())
                .key("pk", s(extent_pk(tenant, series)))
                .key("sk", s("extent"))
                .update_expression(format!("SET {attr} = :d"))
                .condition_expression(format!("attribute_not_exists({attr}) OR {attr} {cmp} :d"))
                .expression_attribute_values(":d", n(day))
                .send()
                .await;
            match out {
                Ok(_) => {}
                Err(e) if is_condition_failed(&e) => {}
                Err(e) => return Err(backend(e)),
            }
        }
        Ok(())
    }

    /// The first and last day a series has records for, if it has any.
    async fn extent(&self, tenant: &str, series: &str) -> StoreResult<Option<(i64, i64)>> {
        let out = self
            .client
            .get_item()
            .table_name(self.data.as_ref())
            .key("pk", s(extent_pk(tenant, series)))
            .key("sk", s("extent"))
            .consistent_read(true)
            .send()
            .await
            .map_err(backend)?;
        Ok(match out.item {
            Some(item) => Some((get_n(&item, "lo")?, get_n(&item, "hi")?)),
            None => None,
        })
    }

    async fn keys_with_prefix(&self, prefix: &str) -> StoreResult<Vec<Item>> {
        let mut keys = Vec::new();
        let mut start = None;
        loop {
            let page = self
                .client
                .scan()
                .table_name(self.data.as_ref())
                .filter_expression("begins_with(pk, :p)")
                .expression_attribute_values(":p", s(prefix))
                .projection_expression("pk, sk")
                .set_exclusive_start_key(start)
                .send()
                .await
                .map_err(backend)?;
            keys.extend(page.items().iter().cloned());
            match page.last_evaluated_key {
                Some(k) if !k.is_empty() => start = Some(k),
                _ => return Ok(keys),
            }
        }
    }
}

/// Rows of one (hour, key) summed into one, in first-seen order.
fn merge_rollups(rows: Vec<Rollup>) -> Vec<Rollup> {
    let mut merged: Vec<Rollup> = Vec::new();
    let mut index: HashMap<(i64, String), usize> = HashMap::new();
    for row in rows {
        match index.get(&(row.hour, row.key.clone())) {
            Some(&i) => add_into(&mut merged[i].measures, row.measures),
            None => {
                index.insert((row.hour, row.key.clone()), merged.len());
                merged.push(row);
            }
        }
    }
    merged
}

fn tx_put(table: &str, item: Item, condition: Option<&str>) -> StoreResult<TransactWriteItem> {
    let put = Put::builder()
        .table_name(table)
        .set_item(Some(item))
        .set_condition_expression(condition.map(str::to_owned))
        .build()
        .map_err(|e| StoreError::Backend(e.to_string()))?;
    Ok(TransactWriteItem::builder().put(put).build())
}

#[async_trait]
impl Counters for DynamoStore {
    async fn incr(&self, key: &str, expires_at: i64) -> StoreResult<u64> {
        let out = self
            .client
            .update_item()
            .table_name(self.control.as_ref())
            .key("pk", s(format!("RL|{key}")))
            .update_expression("ADD n :one SET #ttl = :ttl")
            .expression_attribute_names("#ttl", "ttl")
            .expression_attribute_values(":one", n(1))
            .expression_attribute_values(":ttl", n(expires_at + COUNTER_GRACE_SECS))
            .return_values(ReturnValue::UpdatedNew)
            .send()
            .await
            .map_err(backend)?;
        let attrs = out.attributes.unwrap_or_default();
        get_n(&attrs, "n")
    }
}

#[async_trait]
impl Store for DynamoStore {
    async fn token_by_hash(&self, hash: &str) -> StoreResult<Option<TokenRecord>> {
        if let Some(hit) = self.cache.get(hash) {
            return Ok(Some(hit));
        }
        let out = self
            .client
            .get_item()
            .table_name(self.control.as_ref())
            .key("pk", s(format!("TOKEN|{hash}")))
            .consistent_read(true)
            .send()
            .await
            .map_err(backend)?;
        let record = out.item.as_ref().map(Self::token_of).transpose()?;
        if let Some(r) = &record {
            self.cache.put(r);
        }
        Ok(record)
    }

    async fn insert_token(&self, t: &TokenRecord) -> StoreResult<()> {
        let scopes: Vec<&str> = t.scopes.iter().map(|s| s.as_str()).collect();
        let mut token: Item = HashMap::from([
            ("pk".to_owned(), s(format!("TOKEN|{}", t.hash))),
            ("h".to_owned(), s(t.hash.clone())),
            ("tenant".to_owned(), s(t.tenant.clone())),
            ("name".to_owned(), s(t.name.clone())),
            ("scopes".to_owned(), s(scopes.join(","))),
            ("created_at".to_owned(), n(t.created_at)),
            ("expires_at".to_owned(), n(t.expires_at)),
            ("gt".to_owned(), s(t.tenant.clone())),
            (
                "gs".to_owned(),
                s(format!("{:012}|{}|{}", t.created_at.max(0), t.name, t.hash)),
            ),
        ]);
        if let Some(r) = t.revoked_at {
            token.insert("revoked_at".into(), n(r));
        }
        // The guard makes (tenant, name) unique among active tokens.
        let guard: Item = HashMap::from([
            (
                "pk".to_owned(),
                s(format!("TOKNAME|{}|{}", t.tenant, t.name)),
            ),
            ("h".to_owned(), s(t.hash.clone())),
            ("expires_at".to_owned(), n(t.expires_at)),
        ]);
        let guard_put = Put::builder()
            .table_name(self.control.as_ref())
            .set_item(Some(guard))
            .condition_expression("attribute_not_exists(pk) OR expires_at <= :now")
            .expression_attribute_values(":now", n(t.created_at))
            .build()
            .map_err(|e| StoreError::Backend(e.to_string()))?;
        let items = vec![
            TransactWriteItem::builder().put(guard_put).build(),
            tx_put(&self.control, token, Some("attribute_not_exists(pk)"))?,
        ];
        match self.tx_write(items).await {
            Err(StoreError::ConditionFailed) => Err(StoreError::Exists),
            other => other,
        }
    }

    async fn revoke_token(&self, tenant: &str, name: &str, at: i64) -> StoreResult<bool> {
        let guard_pk = format!("TOKNAME|{tenant}|{name}");
        let guard = self
            .client
            .get_item()
            .table_name(self.control.as_ref())
            .key("pk", s(guard_pk.clone()))
            .consistent_read(true)
            .send()
            .await
            .map_err(backend)?;
        let Some(guard) = guard.item else {
            return Ok(false);
        };
        let hash = get_s(&guard, "h")?.to_owned();
        let update = Update::builder()
            .table_name(self.control.as_ref())
            .key("pk", s(format!("TOKEN|{hash}")))
            .update_expression("SET revoked_at = :at")
            .condition_expression("attribute_exists(pk) AND attribute_not_exists(revoked_at)")
            .expression_attribute_values(":at", n(at))
            .build()
            .map_err(|e| StoreError::Backend(e.to_string()))?;
        let delete = aws_sdk_dynamodb::types::Delete::builder()
            .table_name(self.control.as_ref())
            .key("pk", s(guard_pk))
            .condition_expression("h = :h")
            .expression_attribute_values(":h", s(hash.clone()))
            .build()
            .map_err(|e| StoreError::Backend(e.to_string()))?;
        let items = vec![
            TransactWriteItem::builder().update(update).build(),
            TransactWriteItem::builder().delete(delete).build(),
        ];
        let done = match self.tx_write(items).await {
            Ok(()) => true,
            Err(StoreError::ConditionFailed) => false,
            Err(e) => return Err(e),
        };
        self.cache.forget(&hash);
        Ok(done)
    }

    async fn list_tokens(&self, tenant: &str) -> StoreResult<Vec<TokenRecord>> {
        let mut out = Vec::new();
        let mut start = None;
        loop {
            let page = self
                .client
                .query()
                .table_name(self.control.as_ref())
                .index_name("by_tenant")
                .key_condition_expression("gt = :t")
                .expression_attribute_values(":t", s(tenant))
                .set_exclusive_start_key(start)
                .send()
                .await
                .map_err(backend)?;
            for item in page.items() {
                out.push(Self::token_of(item)?);
            }
            match page.last_evaluated_key {
                Some(k) if !k.is_empty() => start = Some(k),
                _ => break,
            }
        }
        out.sort_by(|a, b| (a.created_at, &a.name).cmp(&(b.created_at, &b.name)));
        Ok(out)
    }

    async fn get_doc(&self, tenant: &str, collection: &str, key: &str) -> StoreResult<Option<Doc>> {
        let out = self
            .client
            .get_item()
            .table_name(self.data.as_ref())
            .key("pk", s(doc_pk(tenant, collection)))
            .key("sk", s(key))
            .consistent_read(true)
            .send()
            .await
            .map_err(backend)?;
        out.item
            .map(|item| {
                Ok(Doc {
                    key: key.to_owned(),
                    version: get_n(&item, "v")?,
                    body: get_json(&item, "b")?,
                })
            })
            .transpose()
    }

    async fn list_docs(
        &self,
        tenant: &str,
        collection: &str,
        filter: &Filter,
        after: Option<&str>,
        limit: usize,
    ) -> StoreResult<Vec<Doc>> {
        let pk = doc_pk(tenant, collection);
        let mut out = Vec::new();
        // Resuming after a key is resuming from it as the last evaluated key.
        let mut start = after
            .map(|a| HashMap::from([("pk".to_owned(), s(pk.clone())), ("sk".to_owned(), s(a))]));
        while out.len() < limit {
            let need = limit - out.len();
            let mut q = self
                .client
                .query()
                .table_name(self.data.as_ref())
                .key_condition_expression("pk = :pk")
                .expression_attribute_values(":pk", s(pk.clone()))
                .consistent_read(true)
                .set_exclusive_start_key(start.take());
            if filter.0.is_empty() {
                q = q.limit(need.min(1000) as i32);
            }
            let page = q.send().await.map_err(backend)?;
            for item in page.items() {
                let body = get_json(item, "b")?;
                if filter.matches(&body) {
                    out.push(Doc {
                        key: get_s(item, "sk")?.to_owned(),
                        version: get_n(item, "v")?,
                        body,
                    });
                    if out.len() >= limit {
                        break;
                    }
                }
            }
            match page.last_evaluated_key {
                Some(k) if !k.is_empty() => start = Some(k),
                _ => break,
            }
        }
        Ok(out)
    }

    async fn put_docs(
        &self,
        tenant: &str,
        collection: &str,
        docs: Vec<(String, Value)>,
    ) -> StoreResult<()> {
        // Unconditional puts carry a fresh version (the time in microseconds), so a
        // conditional change prepared against the previous version fails, as it should.
        let version = chrono::Utc::now().timestamp_micros().max(1);
        let pk = doc_pk(tenant, collection);
        let mut requests = Vec::with_capacity(docs.len());
        // BatchWriteItem refuses two puts of one key in a request: the last one wins anyway.
        let mut last: HashMap<String, Value> = HashMap::new();
        let mut order = Vec::new();
        for (k, v) in docs {
            if last.insert(k.clone(), v).is_none() {
                order.push(k);
            }
        }
        for key in order {
            let body = last.remove(&key).unwrap_or(Value::Null);
            let text = serde_json::to_string(&body).map_err(|e| StoreError::Data(e.to_string()))?;
            requests.push(Self::put_request(HashMap::from([
                ("pk".to_owned(), s(pk.clone())),
                ("sk".to_owned(), s(key)),
                ("v".to_owned(), n(version)),
                ("b".to_owned(), s(text)),
            ]))?);
        }
        self.batch_write(&self.data, requests).await
    }

    async fn append(&self, tenant: &str, series: &str, records: Vec<Record>) -> StoreResult<()> {
        if let (Some(lo), Some(hi)) = (
            records.iter().map(|r| day_of(r.ts)).min(),
            records.iter().map(|r| day_of(r.ts)).max(),
        ) {
            self.widen_extent(tenant, series, lo, hi).await?;
        }
        let mut seen = std::collections::HashSet::new();
        let mut requests = Vec::with_capacity(records.len());
        // Later duplicates of one (partition, ts, id) replace earlier ones, as in the embedded store.
        for r in records.iter().rev() {
            if seen.insert((r.ts, r.id.as_str(), r.partition.as_str())) {
                requests.push(Self::put_request(self.series_item(tenant, series, r)?)?);
            }
        }
        self.batch_write(&self.data, requests).await
    }

    async fn scan(&self, q: &SeriesQuery<'_>) -> StoreResult<SeriesPage> {
        let want = q.limit.saturating_add(1);
        let mut records = Vec::new();
        // DynamoDB refuses a start key outside the key condition: a position newer than the
        // window resumes from its top, one older than the window has nothing left.
        let after = q.after.filter(|pos| pos.ts < q.to);
        let exhausted = q.after.is_some_and(|pos| pos.ts < q.from);
        if q.to > q.from && q.to > 0 && !exhausted {
            let lo = ts_key(q.from);
            let hi = ts_key_last(q.to - 1);
            match q.partition {
                Some(p) => {
                    let gp = partition_pk(q.tenant, q.series, p);
                    let start = after.map(|pos| {
                        let sk = record_sk(pos.ts, &pos.id);
                        HashMap::from([
                            (
                                "pk".to_owned(),
                                s(bucket_pk(q.tenant, q.series, day_of(pos.ts))),
                            ),
                            ("sk".to_owned(), s(sk.clone())),
                            ("gp".to_owned(), s(gp.clone())),
                            ("gs".to_owned(), s(sk)),
                        ])
                    });
                    self.read_newest_first(
                        Some("by_partition"),
                        "gp",
                        gp,
                        lo,
                        hi,
                        start,
                        q.filter,
                        want,
                        &mut records,
                    )
                    .await?;
                }
                None => {
                    // Day buckets from the newest, resuming inside the bucket of the position,
                    // within the days the series has records for (a window opened to the
                    // epoch or to the end of time reads those days only).
                    let (oldest, latest) = self.extent(q.tenant, q.series).await?.unwrap_or((1, 0));
                    let newest = match after {
                        Some(pos) => pos.ts.min(q.to - 1),
                        None => q.to - 1,
                    };
                    let mut day = day_of(newest).min(latest);
                    let first = day_of(q.from.max(0)).max(oldest);
                    while day >= first && records.len() < want {
                        let pk = bucket_pk(q.tenant, q.series, day);
                        let start = after.filter(|pos| day_of(pos.ts) == day).map(|pos| {
                            HashMap::from([
                                ("pk".to_owned(), s(pk.clone())),
                                ("sk".to_owned(), s(record_sk(pos.ts, &pos.id))),
                            ])
                        });
                        self.read_newest_first(
                            None,
                            "pk",
                            pk,
                            lo.clone(),
                            hi.clone(),
                            start,
                            q.filter,
                            want,
                            &mut records,
                        )
                        .await?;
                        day -= 1;
                    }
                }
            }
        }
        let next = if records.len() > q.limit {
            records.truncate(q.limit);
            records.last().map(|r| Position {
                ts: r.ts,
                id: r.id.clone(),
            })
        } else {
            None
        };
        Ok(SeriesPage { records, next })
    }

    async fn add_rollups(&self, tenant: &str, series: &str, rows: Vec<Rollup>) -> StoreResult<()> {
        const IN_FLIGHT: usize = 16;
        // Rows of one (hour, key) are added together first: one update each.
        let pk = rollup_pk(tenant, series);
        let mut tasks = JoinSet::new();
        for row in merge_rollups(rows) {
            if tasks.len() >= IN_FLIGHT
                && let Some(done) = tasks.join_next().await
            {
                done.map_err(|e| StoreError::Backend(e.to_string()))??;
            }
            let dims =
                serde_json::to_string(&row.dims).map_err(|e| StoreError::Data(e.to_string()))?;
            let mut update = self
                .client
                .update_item()
                .table_name(self.data.as_ref())
                .key("pk", s(pk.clone()))
                .key("sk", s(format!("{}|{}", ts_key(row.hour), row.key)))
                .expression_attribute_names("#ttl", "ttl")
                .expression_attribute_values(":d", s(dims))
                .expression_attribute_values(":h", n(row.hour))
                .expression_attribute_values(":k", s(row.key.clone()))
                .expression_attribute_values(
                    ":ttl",
                    n(row.hour.div_euclid(1000) + self.retention_secs),
                );
            let mut adds = Vec::new();
            for (i, (name, value)) in row.measures.iter().enumerate() {
                update = update
                    .expression_attribute_names(format!("#m{i}"), format!("{MEASURE}{name}"))
                    .expression_attribute_values(format!(":m{i}"), n(value));
                adds.push(format!("#m{i} :m{i}"));
            }
            let mut expr = String::from("SET d = :d, hr = :h, rk = :k, #ttl = :ttl");
            if !adds.is_empty() {
                expr.push_str(" ADD ");
                expr.push_str(&adds.join(", "));
            }
            let update = update.update_expression(expr);
            tasks.spawn(async move { update.send().await.map(|_| ()).map_err(backend) });
        }
        while let Some(done) = tasks.join_next().await {
            done.map_err(|e| StoreError::Backend(e.to_string()))??;
        }
        Ok(())
    }

    async fn load_rollups(&self, tenant: &str, series: &str, rows: Vec<Rollup>) -> StoreResult<()> {
        let pk = rollup_pk(tenant, series);
        let mut requests = Vec::new();
        for row in merge_rollups(rows) {
            let dims =
                serde_json::to_string(&row.dims).map_err(|e| StoreError::Data(e.to_string()))?;
            let mut item = HashMap::from([
                ("pk".to_owned(), s(pk.clone())),
                (
                    "sk".to_owned(),
                    s(format!("{}|{}", ts_key(row.hour), row.key)),
                ),
                ("d".to_owned(), s(dims)),
                ("hr".to_owned(), n(row.hour)),
                ("rk".to_owned(), s(row.key)),
                (
                    "ttl".to_owned(),
                    n(row.hour.div_euclid(1000) + self.retention_secs),
                ),
            ]);
            for (name, value) in row.measures {
                item.insert(format!("{MEASURE}{name}"), n(value));
            }
            requests.push(Self::put_request(item)?);
        }
        self.batch_write(&self.data, requests).await
    }

    async fn rollups(
        &self,
        tenant: &str,
        series: &str,
        from: i64,
        to: i64,
        filter: &Filter,
    ) -> StoreResult<Vec<Rollup>> {
        let mut out = Vec::new();
        if to <= from || to <= 0 {
            return Ok(out);
        }
        let mut start = None;
        loop {
            let page = self
                .client
                .query()
                .table_name(self.data.as_ref())
                .key_condition_expression("pk = :pk AND sk BETWEEN :lo AND :hi")
                .expression_attribute_values(":pk", s(rollup_pk(tenant, series)))
                .expression_attribute_values(":lo", s(ts_key(from)))
                .expression_attribute_values(":hi", s(ts_key_last(to - 1)))
                .consistent_read(true)
                .set_exclusive_start_key(start)
                .send()
                .await
                .map_err(backend)?;
            for item in page.items() {
                let dims = get_json(item, "d")?;
                if !filter.matches(&dims) {
                    continue;
                }
                let mut measures = BTreeMap::new();
                for (k, v) in item {
                    if let (Some(name), AttributeValue::N(x)) = (k.strip_prefix(MEASURE), v) {
                        let x: f64 = x.parse().map_err(|_| {
                            StoreError::Data(format!("measure {name} is not a number"))
                        })?;
                        measures.insert(name.to_owned(), x);
                    }
                }
                out.push(Rollup {
                    hour: get_n(item, "hr")?,
                    key: get_s(item, "rk")?.to_owned(),
                    dims: Arc::new(dims),
                    measures,
                });
            }
            match page.last_evaluated_key {
                Some(k) if !k.is_empty() => start = Some(k),
                _ => break,
            }
        }
        Ok(out)
    }

    async fn commit(&self, log: WriteLogEntry, changes: Vec<Change>) -> StoreResult<()> {
        // One TransactWriteItems: the changes and the log entry land together or not at all.
        if changes.len() > 99 {
            return Err(StoreError::Backend(format!(
                "{} changes exceed one transaction",
                changes.len()
            )));
        }
        let mut items = Vec::with_capacity(changes.len() + 1);
        for change in changes {
            match change {
                Change::PutDoc {
                    collection,
                    key,
                    body,
                    expect,
                } => {
                    let text = serde_json::to_string(&body)
                        .map_err(|e| StoreError::Data(e.to_string()))?;
                    let mut update = Update::builder()
                        .table_name(self.data.as_ref())
                        .key("pk", s(doc_pk(&log.tenant, &collection)))
                        .key("sk", s(key))
                        .update_expression("SET b = :b ADD v :one")
                        .expression_attribute_values(":b", s(text))
                        .expression_attribute_values(":one", n(1));
                    update = match expect {
                        Expect::Any => update,
                        Expect::Absent => update.condition_expression("attribute_not_exists(pk)"),
                        Expect::Version(v) => update
                            .condition_expression("v = :expected")
                            .expression_attribute_values(":expected", n(v)),
                    };
                    let update = update
                        .build()
                        .map_err(|e| StoreError::Backend(e.to_string()))?;
                    items.push(TransactWriteItem::builder().update(update).build());
                }
                Change::Append { series, record } => {
                    items.push(tx_put(
                        &self.data,
                        self.series_item(&log.tenant, &series, &record)?,
                        None,
                    )?);
                }
            }
        }
        let entry = serde_json::to_string(&log).map_err(|e| StoreError::Data(e.to_string()))?;
        let sk = format!(
            "{}|{}|{:016x}",
            ts_key(log.at.timestamp_micros()),
            log.request_id,
            rand::random::<u64>()
        );
        let item = HashMap::from([
            ("pk".to_owned(), s(log_pk(&log.tenant))),
            ("sk".to_owned(), s(sk)),
            ("e".to_owned(), s(entry)),
            ("ttl".to_owned(), n(log.expires_at)),
        ]);
        items.push(tx_put(&self.data, item, Some("attribute_not_exists(pk)"))?);
        self.tx_write(items).await
    }

    /// One UpdateItem: the entry is written by the first refusal only, `ADD` counts them.
    async fn coalesce(
        &self,
        since: chrono::DateTime<chrono::Utc>,
        key: &str,
        log: WriteLogEntry,
    ) -> StoreResult<()> {
        let entry = serde_json::to_string(&log).map_err(|e| StoreError::Data(e.to_string()))?;
        self.client
            .update_item()
            .table_name(self.data.as_ref())
            .key("pk", s(log_pk(&log.tenant)))
            .key(
                "sk",
                s(format!("{}|~{key}", ts_key(since.timestamp_micros()))),
            )
            .update_expression("SET e = if_not_exists(e, :e), la = :la, #ttl = :ttl ADD c :one")
            .expression_attribute_names("#ttl", "ttl")
            .expression_attribute_values(":e", s(entry))
            .expression_attribute_values(":la", s(log.at.to_rfc3339()))
            .expression_attribute_values(":ttl", n(log.expires_at))
            .expression_attribute_values(":one", n(1))
            .send()
            .await
            .map_err(backend)?;
        Ok(())
    }

    /// Entries whose TTL has passed are left out: DynamoDB deletes them some time later.
    async fn write_log(&self, tenant: &str) -> StoreResult<Vec<WriteLogEntry>> {
        let now = chrono::Utc::now().timestamp();
        let mut out = Vec::new();
        let mut start = None;
        loop {
            let page = self
                .client
                .query()
                .table_name(self.data.as_ref())
                .key_condition_expression("pk = :pk")
                .expression_attribute_values(":pk", s(log_pk(tenant)))
                .consistent_read(true)
                .set_exclusive_start_key(start)
                .send()
                .await
                .map_err(backend)?;
            for item in page.items() {
                let expires_at = match item.get("ttl") {
                    Some(_) => get_n(item, "ttl")?,
                    None => i64::MAX,
                };
                if expires_at <= now {
                    continue;
                }
                let mut entry: WriteLogEntry = serde_json::from_str(get_s(item, "e")?)
                    .map_err(|e| StoreError::Data(e.to_string()))?;
                entry.expires_at = expires_at;
                if item.contains_key("c") {
                    entry.count = Some(get_n(item, "c")?);
                    entry.last_at = Some(
                        chrono::DateTime::parse_from_rfc3339(get_s(item, "la")?)
                            .map_err(|e| StoreError::Data(e.to_string()))?
                            .to_utc(),
                    );
                }
                out.push(entry);
            }
            match page.last_evaluated_key {
                Some(k) if !k.is_empty() => start = Some(k),
                _ => return Ok(out),
            }
        }
    }

    async fn secret(&self, name: &str) -> StoreResult<Vec<u8>> {
        let pk = format!("SECRET|{name}");
        let fresh: [u8; 32] = rand::random();
        let put = self
            .client
            .put_item()
            .table_name(self.control.as_ref())
            .item("pk", s(pk.clone()))
            .item("value", AttributeValue::B(fresh.to_vec().into()))
            .condition_expression("attribute_not_exists(pk)")
            .send()
            .await;
        match put {
            Ok(_) => return Ok(fresh.to_vec()),
            Err(e) if is_condition_failed(&e) => {}
            Err(e) => return Err(backend(e)),
        }
        let out = self
            .client
            .get_item()
            .table_name(self.control.as_ref())
            .key("pk", s(pk))
            .consistent_read(true)
            .send()
            .await
            .map_err(backend)?;
        match out.item.as_ref().and_then(|i| i.get("value")) {
            Some(AttributeValue::B(b)) => Ok(b.clone().into_inner()),
            _ => Err(StoreError::Data("secret without a binary value".into())),
        }
    }

    async fn is_empty(&self) -> StoreResult<bool> {
        let page = self
            .client
            .scan()
            .table_name(self.data.as_ref())
            .limit(1)
            .send()
            .await
            .map_err(backend)?;
        Ok(page.items().is_empty())
    }

    async fn clear_tenant(&self, tenant: &str) -> StoreResult<()> {
        // An administrative scan (seeding only): every data item of the tenant but its write log.
        let keep = log_pk(tenant);
        let keys = self.keys_with_prefix(&tenant_prefix(tenant)).await?;
        let mut requests = Vec::new();
        for key in keys {
            if matches!(key.get("pk"), Some(AttributeValue::S(pk)) if *pk == keep) {
                continue;
            }
            requests.push(
                WriteRequest::builder()
                    .delete_request(
                        DeleteRequest::builder()
                            .set_key(Some(key))
                            .build()
                            .map_err(|e| StoreError::Backend(e.to_string()))?,
                    )
                    .build(),
            );
        }
        self.batch_write(&self.data, requests).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sort_keys_order_like_time_then_id() {
        let a = record_sk(1_700_000_000_000, "a");
        let b = record_sk(1_700_000_000_000, "b");
        let c = record_sk(1_700_000_000_001, "0");
        assert!(a < b && b < c);
        assert!(ts_key(1_700_000_000_000) < a);
        assert!(b < ts_key_last(1_700_000_000_000));
        assert!(ts_key_last(1_700_000_000_000) < c);
        assert!(record_sk(5, "ab") < record_sk(5, "abc"));
        let (x, y) = (item_sk(5, "ab", "p1"), item_sk(5, "ab", "p2"));
        assert!(record_sk(5, "ab") < x && x < y && y < record_sk(5, "abc"));
        assert!(y < ts_key_last(5));
        assert_eq!(day_of(DAY_MS - 1), 0);
        assert_eq!(day_of(DAY_MS), 1);
    }
}
