//! The SDK client of the AWS adapters: configuration (timeouts, retries, trust roots), the
//! count of requests sent and of the capacity they consumed, and errors as [`StoreError`]s.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use aws_sdk_dynamodb::config::interceptors::{
    AfterDeserializationInterceptorContextRef, BeforeSerializationInterceptorContextMut,
    BeforeTransmitInterceptorContextRef, FinalizerInterceptorContextRef,
};
use aws_sdk_dynamodb::config::{ConfigBag, Intercept, RuntimeComponents};
use aws_sdk_dynamodb::error::{BoxError, ProvideErrorMetadata, SdkError};
use aws_sdk_dynamodb::operation::{
    batch_get_item::{BatchGetItemInput, BatchGetItemOutput},
    batch_write_item::{BatchWriteItemInput, BatchWriteItemOutput},
    delete_item::{DeleteItemInput, DeleteItemOutput},
    get_item::{GetItemInput, GetItemOutput},
    put_item::{PutItemInput, PutItemOutput},
    query::{QueryInput, QueryOutput},
    scan::{ScanInput, ScanOutput},
    transact_write_items::{TransactWriteItemsInput, TransactWriteItemsOutput},
    update_item::{UpdateItemInput, UpdateItemOutput},
};
use aws_sdk_dynamodb::types::{ConsumedCapacity, ReturnConsumedCapacity};

use aws_smithy_runtime_api::client::orchestrator::Metadata;
use aws_smithy_types::config_bag::{Storable, StoreReplace};
use netops_store::StoreError;
use netops_store::usage::{TracedCall, Usage};

/// When the attempt in flight was sent, for the trace of a traced request.
#[derive(Debug, Clone, Copy)]
struct AttemptSent(std::time::SystemTime);

impl Storable for AttemptSent {
    type Storer = StoreReplace<Self>;
}

fn epoch_secs(t: std::time::SystemTime) -> f64 {
    t.duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or_default()
}

/// Counts requests sent to DynamoDB (every attempt, retries included), in all and for the
/// request being served ([`Usage`]), and the capacity each operation reports it consumed:
/// every operation the adapters send asks for its total (`ReturnConsumedCapacity`).
#[derive(Debug, Default)]
pub(super) struct CallCounter(AtomicU64);

impl CallCounter {
    pub(super) fn count(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

#[derive(Debug, Clone)]
pub(super) struct Counting(pub(super) Arc<CallCounter>);

impl Intercept for Counting {
    fn name(&self) -> &'static str {
        "netops-call-counter"
    }

    fn modify_before_serialization(
        &self,
        context: &mut BeforeSerializationInterceptorContextMut<'_>,
        _runtime_components: &RuntimeComponents,
        _cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let input = context.input_mut();
        macro_rules! ask_total {
            ($($input:ty),*) => {$(
                if let Some(i) = input.downcast_mut::<$input>() {
                    i.return_consumed_capacity = Some(ReturnConsumedCapacity::Total);
                }
            )*};
        }
        ask_total!(
            QueryInput,
            GetItemInput,
            ScanInput,
            PutItemInput,
            UpdateItemInput,
            DeleteItemInput,
            BatchGetItemInput,
            BatchWriteItemInput,
            TransactWriteItemsInput
        );
        Ok(())
    }

    fn read_before_transmit(
        &self,
        _context: &BeforeTransmitInterceptorContextRef<'_>,
        _runtime_components: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        self.0.0.fetch_add(1, Ordering::Relaxed);
        Usage::add_call();
        if Usage::traced() {
            cfg.interceptor_state()
                .store_put(AttemptSent(std::time::SystemTime::now()));
        }
        Ok(())
    }

    /// Each attempt of a traced request, answered or not, is one call of its trace.
    fn read_after_attempt(
        &self,
        context: &FinalizerInterceptorContextRef<'_>,
        _runtime_components: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let Some(AttemptSent(sent)) = cfg.load::<AttemptSent>().copied() else {
            return Ok(());
        };
        let metadata = cfg.load::<Metadata>();
        let response = context.response();
        Usage::add_traced(TracedCall {
            service: metadata.map_or("DynamoDB", |m| m.service()).to_owned(),
            operation: metadata.map_or("", |m| m.name()).to_owned(),
            start: epoch_secs(sent),
            end: epoch_secs(std::time::SystemTime::now()),
            status: response.map(|r| r.status().as_u16()),
            request_id: response
                .and_then(|r| r.headers().get("x-amzn-requestid"))
                .map(str::to_owned),
        });
        Ok(())
    }

    fn read_after_deserialization(
        &self,
        context: &AfterDeserializationInterceptorContextRef<'_>,
        _runtime_components: &RuntimeComponents,
        _cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let Ok(output) = context.output_or_error() else {
            return Ok(());
        };
        // Reads report read units and writes write units; DynamoDB gives the split itself
        // where it has one (a transaction's condition checks), else only the total.
        macro_rules! add_units {
            ($reads:expr, $($output:ty),*) => {$(
                if let Some(o) = output.downcast_ref::<$output>() {
                    add_consumed(o.consumed_capacity.iter(), $reads);
                }
            )*};
        }
        add_units!(true, QueryOutput, GetItemOutput, ScanOutput);
        add_units!(false, PutItemOutput, UpdateItemOutput, DeleteItemOutput);
        macro_rules! add_all_units {
            ($reads:expr, $($output:ty),*) => {$(
                if let Some(o) = output.downcast_ref::<$output>() {
                    add_consumed(o.consumed_capacity.iter().flatten(), $reads);
                }
            )*};
        }
        add_all_units!(true, BatchGetItemOutput);
        add_all_units!(false, BatchWriteItemOutput, TransactWriteItemsOutput);
        Ok(())
    }
}

/// Adds the capacity of `consumed` to the request's [`Usage`]: its read and write units when
/// DynamoDB splits them, else its total as reads (`reads`) or writes.
fn add_consumed<'a>(consumed: impl Iterator<Item = &'a ConsumedCapacity>, reads: bool) {
    for c in consumed {
        let (read, write) = match (c.read_capacity_units, c.write_capacity_units) {
            (None, None) => {
                let total = c.capacity_units.unwrap_or(0.0);
                if reads { (total, 0.0) } else { (0.0, total) }
            }
            (read, write) => (read.unwrap_or(0.0), write.unwrap_or(0.0)),
        };
        Usage::add_units(read, write);
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
/// connecting gets 1 s (a regional endpoint answers in milliseconds); the whole operation,
/// retries included, `timeout` (6 s by default, `NETOPS_DYNAMODB_TIMEOUT_SECS`), and one
/// attempt half of it (a 1 MB Query page takes tens of milliseconds). Throttling and transient errors are retried in the
/// SDK's standard mode, 3 attempts, backing off from 50 ms up to 1 s (AWS SDKs have long
/// used a base delay of tens of milliseconds for DynamoDB; the standard 1 s would use up the
/// request's budget on the first retry).
pub async fn sdk_config(
    region: Option<&str>,
    endpoint: Option<&str>,
    timeout: Duration,
) -> aws_config::SdkConfig {
    use aws_config::retry::RetryConfig;
    use aws_config::timeout::TimeoutConfig;
    let timeouts = TimeoutConfig::builder()
        .connect_timeout(Duration::from_secs(1))
        .operation_attempt_timeout(timeout / 2)
        .operation_timeout(timeout)
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

pub(super) fn backend<E: std::fmt::Debug + ProvideErrorMetadata>(e: SdkError<E>) -> StoreError {
    // The service's code and message when there is one; the SDK's detail otherwise.
    match e.code() {
        Some(code) => StoreError::Backend(format!("{code}: {}", e.message().unwrap_or(""))),
        None => StoreError::Backend(format!("{e:?}")),
    }
}

pub(super) fn is_condition_failed<E: ProvideErrorMetadata>(e: &SdkError<E>) -> bool {
    e.code() == Some("ConditionalCheckFailedException")
}

/// The outcome of a conditional write: whether it wrote (false: its condition failed).
pub(super) fn wrote<T, E: std::fmt::Debug + ProvideErrorMetadata>(
    out: Result<T, SdkError<E>>,
) -> netops_store::StoreResult<bool> {
    match out {
        Ok(_) => Ok(true),
        Err(e) if is_condition_failed(&e) => Ok(false),
        Err(e) => Err(backend(e)),
    }
}
