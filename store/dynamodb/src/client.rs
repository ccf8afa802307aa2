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
use netops_store::usage::{TracedCall, Usage};
use netops_store::{StoreError, StoreResult};

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

/// The variable naming a PEM file of certificates the AWS clients trust besides their usual
/// roots (docs/configuration.md): the tests' local CA, or a company's TLS proxy. Unset, nothing
/// is read.
const EXTRA_CA_VAR: &str = "NETOPS_EXTRA_CA_FILE";

/// The certificates of [`EXTRA_CA_VAR`]'s file, if it names one, checked as the TLS client
/// will load them (it would panic at its first connection on a file it cannot parse, and
/// trust nothing more from a file without a certificate): a missing, unreadable or bad file
/// is an error naming the variable, never a silent fallback to the usual roots.
fn extra_roots(path: Option<std::ffi::OsString>) -> StoreResult<Option<Vec<u8>>> {
    use rustls::pki_types::{CertificateDer, pem::PemObject};
    let Some(path) = path else {
        return Ok(None);
    };
    let bad = |reason: String| {
        StoreError::Backend(format!(
            "{EXTRA_CA_VAR}={}: {reason}",
            std::path::Path::new(&path).display()
        ))
    };
    let pem = std::fs::read(&path).map_err(|e| bad(e.to_string()))?;
    let certs = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| bad(format!("not a PEM file ({e})")))?;
    if certs.is_empty() {
        return Err(bad("no PEM certificate in the file".to_owned()));
    }
    let mut roots = rustls::RootCertStore::empty();
    for (i, cert) in certs.into_iter().enumerate() {
        roots
            .add(cert)
            .map_err(|e| bad(format!("certificate {}: {e}", i + 1)))?;
    }
    Ok(Some(pem))
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
///
/// Fails only on a bad [`EXTRA_CA_VAR`] file.
pub async fn sdk_config(
    region: Option<&str>,
    endpoint: Option<&str>,
    timeout: Duration,
) -> StoreResult<aws_config::SdkConfig> {
    use aws_config::retry::RetryConfig;
    use aws_config::timeout::TimeoutConfig;
    use aws_smithy_http_client::tls;
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
    // may have joined. Either way, the extra file's certificates besides.
    let lambda = std::env::var_os("AWS_LAMBDA_FUNCTION_NAME").is_some();
    let extra = extra_roots(std::env::var_os(EXTRA_CA_VAR))?;
    let http = if lambda || extra.is_some() {
        let mut roots = if lambda {
            tls::TrustStore::empty()
                .with_native_roots(false)
                .with_pem_certificate(include_bytes!("amazon-roots.pem").as_slice())
        } else {
            tls::TrustStore::default()
        };
        if let Some(pem) = extra {
            roots = roots.with_pem_certificate(pem);
        }
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
    Ok(loader.load().await)
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn file(bytes: &[u8]) -> tempfile::NamedTempFile {
        let mut f = tempfile::NamedTempFile::new().expect("temporary file");
        f.write_all(bytes).expect("written");
        f
    }

    fn refused(bytes: &[u8]) -> String {
        let f = file(bytes);
        match extra_roots(Some(f.path().into())) {
            Err(StoreError::Backend(message)) => message,
            other => panic!("accepted: {other:?}"),
        }
    }

    #[test]
    fn an_extra_ca_file_adds_its_certificates_and_nothing_is_read_without_one() {
        assert_eq!(extra_roots(None).ok(), Some(None));
        let pem = include_bytes!("amazon-roots.pem");
        let f = file(pem);
        let read = extra_roots(Some(f.path().into())).expect("a PEM of five roots");
        assert_eq!(read.as_deref(), Some(pem.as_slice()));
    }

    #[test]
    fn a_missing_or_bad_extra_ca_file_is_an_error_naming_the_variable() {
        let missing = std::env::temp_dir().join("netops-no-such-ca.pem");
        let Err(StoreError::Backend(message)) = extra_roots(Some(missing.clone().into())) else {
            panic!("a missing file was accepted");
        };
        assert!(
            message.starts_with(&format!("NETOPS_EXTRA_CA_FILE={}: ", missing.display())),
            "{message}"
        );
        // Not PEM at all, PEM without a certificate, a certificate whose body is not one.
        assert!(refused(b"not a certificate").contains("no PEM certificate"));
        let key =
            b"-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIA==\n-----END PRIVATE KEY-----\n";
        assert!(refused(key).contains("no PEM certificate"));
        let broken = b"-----BEGIN CERTIFICATE-----\n!!!!\n-----END CERTIFICATE-----\n";
        assert!(
            refused(broken).contains("not a PEM file"),
            "{}",
            refused(broken)
        );
        let not_der = b"-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n";
        assert!(
            refused(not_der).contains("certificate 1: "),
            "{}",
            refused(not_der)
        );
        for message in [refused(b""), refused(key)] {
            assert!(message.starts_with("NETOPS_EXTRA_CA_FILE="), "{message}");
        }
    }
}
