//! The cursor key ring of a deployment on AWS: the versions of one Secrets Manager secret
//! (`NETOPS_CURSOR_SECRET_ARN`), read at start and again every five minutes
//! (`NETOPS_CURSOR_REFRESH_SECS`) by a warm instance,
//! so that a rotation (infra/README.md, "Rotating the cursor key") reaches every instance
//! without a deployment.
//!
//! The read at start is begun, not awaited ([`Ring::first_read`]): it runs beside the first
//! request, and only a page, which may sign or verify a cursor, waits for it, after its
//! token read (netops_shared::paging). Awaited at start, its three calls and their TLS
//! handshake made every cold start's init about 1.5 times longer (bench/lambda-results.md,
//! "Cold starts over TLS").
//!
//! Secrets Manager rather than Parameter Store: its versions carry the staging labels a
//! rotation moves (`AWSPENDING`, `AWSCURRENT`, `AWSPREVIOUS`), so the ring is the secret's
//! own history, with no format of ours inside the value; the value never appears in the
//! function's configuration (it was a CloudFormation dynamic reference resolved into a plain
//! environment variable).
//!
//! The ring: `AWSCURRENT` signs; `AWSPENDING` (a new key staged, not signing yet) and
//! `AWSPREVIOUS` (the key just retired) verify.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use aws_sdk_secretsmanager::Client;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;
use netops_shared::config::Config;
use netops_shared::cursor::CursorCodec;
use netops_shared::store::{StoreError, StoreResult};

/// The stages of the ring, the signing one first.
const STAGES: [&str; 3] = ["AWSCURRENT", "AWSPENDING", "AWSPREVIOUS"];

/// Where the ring is read from.
pub struct KeySource {
    client: Client,
    arn: String,
    every: Duration,
}

impl KeySource {
    /// The secret the configuration names, if any.
    pub async fn of(config: &Config) -> StoreResult<Option<Self>> {
        let Some(arn) = config.cursor_secret_arn.clone() else {
            return Ok(None);
        };
        let sdk = netops_store_dynamodb::sdk_config(
            config.dynamodb.region.as_deref(),
            config.secrets_endpoint.as_deref(),
            Duration::from_secs(config.dynamodb.timeout_secs),
        )
        .await?;
        Ok(Some(Self {
            client: Client::new(&sdk),
            arn,
            every: Duration::from_secs(config.cursor_refresh_secs),
        }))
    }

    /// The ring: every stage's key (its value's bytes), the signing one first, each once.
    /// The secret must have a current version; the others are optional.
    pub async fn read(&self) -> StoreResult<Vec<Vec<u8>>> {
        let reads = STAGES.map(|stage| {
            self.client
                .get_secret_value()
                .secret_id(&self.arn)
                .version_stage(stage)
                .send()
        });
        let [current, pending, previous] = reads;
        let (current, pending, previous) = tokio::join!(current, pending, previous);
        let current = current.map_err(|e| {
            StoreError::Backend(format!(
                "cursor key ring {}: {}",
                self.arn,
                aws_sdk_secretsmanager::error::DisplayErrorContext(e)
            ))
        })?;
        let mut keys: Vec<Vec<u8>> = Vec::new();
        for value in [Ok(current), pending, previous]
            .into_iter()
            .filter_map(Result::ok)
        {
            let key = value
                .secret_string()
                .map(|s| s.as_bytes().to_vec())
                .or_else(|| value.secret_binary().map(|b| b.as_ref().to_vec()))
                .filter(|k| !k.is_empty());
            if let Some(key) = key
                && !keys.contains(&key)
            {
                keys.push(key);
            }
        }
        if keys.is_empty() {
            return Err(StoreError::Backend(format!(
                "cursor key ring {}: the current version is empty",
                self.arn
            )));
        }
        Ok(keys)
    }
}

/// A ring read at start, kept fresh by [`refresh`].
pub struct Ring {
    source: KeySource,
    codec: Arc<CursorCodec>,
    read_at: Mutex<Instant>,
}

impl Ring {
    pub fn new(source: KeySource, codec: Arc<CursorCodec>) -> Self {
        Self {
            source,
            codec,
            read_at: Mutex::new(Instant::now()),
        }
    }

    /// The first read of the ring, begun at start: until it succeeds, pages wait (at most a
    /// store operation's time, then 503) and it is tried again, at once and then after 1 s,
    /// doubling up to a minute. Lambda freezes the instance between invocations, this task
    /// with it: a read still in flight when the first answer is sent resumes at the next
    /// invocation, where its call has likely timed out; hence the retry at once.
    pub async fn first_read(self: Arc<Self>) {
        let mut pause = Duration::ZERO;
        loop {
            match self.source.read().await {
                Ok(keys) => {
                    self.codec.replace_keys(keys);
                    *self.read_at.lock().unwrap_or_else(|e| e.into_inner()) = Instant::now();
                    return;
                }
                Err(e) => {
                    tracing::error!(error = %e, "cursor key ring not read; pages wait for it")
                }
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 2).clamp(Duration::from_secs(1), Duration::from_secs(60));
        }
    }
}

/// Middleware: before a request, a ring older than its refresh interval is read again (one
/// request of an instance in five minutes pays the round trip). A failed read keeps the ring
/// it had.
pub async fn refresh(State(ring): State<Arc<Ring>>, req: Request, next: Next) -> Response {
    let due = {
        let mut read_at = ring.read_at.lock().unwrap_or_else(|e| e.into_inner());
        let due = read_at.elapsed() >= ring.source.every;
        if due {
            *read_at = Instant::now();
        }
        due
    };
    if due {
        match ring.source.read().await {
            Ok(keys) => ring.codec.replace_keys(keys),
            Err(e) => {
                tracing::warn!(error = %e, "cursor key ring not read again; the last one stays")
            }
        }
    }
    next.run(req).await
}
