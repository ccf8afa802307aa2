//! The MCP endpoint's OAuth access tokens (docs/mcp.md#oauth): JWTs of the configured issuer,
//! accepted when their signature verifies against the issuer's JWKS and `iss`, `aud` (this
//! endpoint's URL, RFC 8707), `exp` and `nbf` (with [`LEEWAY_SECS`]) hold. Algorithms are
//! allow-listed ([`ALGORITHMS`]): never `none`, never HMAC, so a public key can never serve as
//! a shared secret. The JWKS is found through the issuer's metadata, kept [`KEYS_MAX_AGE`], and
//! fetched again for a key id it lacks (key rotation) at most once per
//! `NETOPS_OAUTH_JWKS_REFETCH_SECS` (30 s).
//! The caller's tenant and scopes come from the configured claims.

use std::collections::HashMap;
use std::sync::{Arc, PoisonError, RwLock};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use bytes::Bytes;
use http::{Request, StatusCode, Uri, header};
use http_body_util::{BodyExt, Empty, Limited};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use netops_shared::ApiError;
use netops_shared::auth::sha256_hex;
use netops_shared::config::Config;
use netops_shared::oauth::{AccessTokens, OAuthConfig, is_loopback_http};
use netops_shared::scope::Scope;
use netops_shared::store::TokenRecord;
use serde_json::{Map, Value};

/// The signature algorithms accepted, all asymmetric.
pub const ALGORITHMS: [Algorithm; 3] = [Algorithm::RS256, Algorithm::ES256, Algorithm::EdDSA];
/// Clock skew tolerated on `exp` and `nbf`.
pub const LEEWAY_SECS: u64 = 30;
/// Keys older than this are fetched again before use (kept if the fetch fails).
pub const KEYS_MAX_AGE: Duration = Duration::from_secs(3600);
/// Time allowed to each request to the issuer.
const FETCH_TIMEOUT: Duration = Duration::from_secs(5);
/// Largest metadata document or JWKS read.
const FETCH_LIMIT: usize = 256 * 1024;

type HttpClient = Client<HttpsConnector<HttpConnector>, Empty<Bytes>>;

/// The verifier the process's configuration asks for: one when `NETOPS_OAUTH_ISSUER` is set.
pub fn verifier(config: &Config) -> Option<Arc<dyn AccessTokens>> {
    let oauth = config.oauth.clone()?;
    match Verifier::new(oauth) {
        Ok(v) => Some(Arc::new(v)),
        Err(e) => {
            // The public roots are compiled in: this cannot fail but for a broken build.
            tracing::error!(error = %e, "no TLS client for the OAuth issuer: OAuth tokens refused");
            None
        }
    }
}

/// The issuer's signing keys, as last fetched.
#[derive(Default)]
struct Keys {
    by_kid: HashMap<String, Key>,
    /// Keys published without a `kid`: usable by a token without one when alone.
    anonymous: Vec<Key>,
    fetched: Option<Instant>,
}

#[derive(Clone)]
struct Key {
    key: DecodingKey,
    /// The key's own `alg`, when it names one: a token must then use it.
    alg: Option<Algorithm>,
}

impl Keys {
    fn find(&self, kid: Option<&str>) -> Option<Key> {
        match kid {
            Some(kid) => self.by_kid.get(kid).cloned(),
            None if self.by_kid.is_empty() && self.anonymous.len() == 1 => {
                self.anonymous.first().cloned()
            }
            None => None,
        }
    }

    fn stale(&self) -> bool {
        self.fetched.is_none_or(|at| at.elapsed() > KEYS_MAX_AGE)
    }
}

pub struct Verifier {
    config: OAuthConfig,
    client: HttpClient,
    keys: RwLock<Keys>,
    /// When the JWKS was last asked for; held while a fetch runs, so fetches never overlap.
    last_fetch: tokio::sync::Mutex<Option<Instant>>,
}

/// Why the issuer's keys could not be had.
#[derive(Debug)]
struct FetchError(String);

impl std::fmt::Display for FetchError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

fn refused() -> ApiError {
    ApiError::unauthorized(
        "Jeton d'accès OAuth refusé : signature, émetteur, audience ou validité incorrects.",
        "OAuth access token refused: its signature, issuer, audience or validity did not check.",
    )
}

impl Verifier {
    pub fn new(config: OAuthConfig) -> Result<Verifier, rustls::Error> {
        let https = hyper_rustls::HttpsConnectorBuilder::new()
            .with_provider_and_webpki_roots(Arc::new(rustls::crypto::ring::default_provider()))?
            // Plain HTTP only reaches a loopback issuer: every URL is checked before use.
            .https_or_http()
            .enable_http1()
            .build();
        Ok(Verifier {
            config,
            client: Client::builder(TokioExecutor::new()).build(https),
            keys: RwLock::default(),
            last_fetch: tokio::sync::Mutex::new(None),
        })
    }

    /// GETs a JSON document from the issuer's side: https, or http on loopback.
    async fn get_json(&self, url: &str) -> Result<Value, FetchError> {
        if !url.starts_with("https://") && !is_loopback_http(url) {
            return Err(FetchError(format!("{url}: not an https URL")));
        }
        let uri: Uri = url
            .parse()
            .map_err(|_| FetchError(format!("{url}: not a URL")))?;
        let req = Request::get(uri)
            .header(header::ACCEPT, "application/json")
            .body(Empty::new())
            .map_err(|e| FetchError(e.to_string()))?;
        let fetch = async {
            let res = self
                .client
                .request(req)
                .await
                .map_err(|e| FetchError(format!("{url}: {e}")))?;
            if res.status() != StatusCode::OK {
                return Err(FetchError(format!("{url}: HTTP {}", res.status())));
            }
            let body = Limited::new(res.into_body(), FETCH_LIMIT)
                .collect()
                .await
                .map_err(|e| FetchError(format!("{url}: {e}")))?
                .to_bytes();
            serde_json::from_slice(&body).map_err(|e| FetchError(format!("{url}: {e}")))
        };
        tokio::time::timeout(FETCH_TIMEOUT, fetch)
            .await
            .map_err(|_| FetchError(format!("{url}: no answer within {FETCH_TIMEOUT:?}")))?
    }

    /// The issuer's `jwks_uri`, from its OpenID Connect discovery document or else its
    /// RFC 8414 metadata, either of which must name the configured issuer.
    async fn jwks_uri(&self) -> Result<String, FetchError> {
        let issuer = self.config.issuer.trim_end_matches('/');
        let (origin, path) = match issuer.find("://").map(|i| i + 3) {
            Some(start) => issuer.split_at(
                issuer[start..]
                    .find('/')
                    .map_or(issuer.len(), |p| start + p),
            ),
            None => (issuer, ""),
        };
        let urls = [
            format!("{issuer}/.well-known/openid-configuration"),
            format!("{origin}/.well-known/oauth-authorization-server{path}"),
        ];
        let mut last = FetchError("no metadata URL".into());
        for url in urls {
            match self.get_json(&url).await {
                Ok(meta) => {
                    let named = meta.get("issuer").and_then(Value::as_str);
                    if named != Some(self.config.issuer.as_str()) {
                        return Err(FetchError(format!(
                            "{url} names issuer {named:?}, not the configured one"
                        )));
                    }
                    return meta
                        .get("jwks_uri")
                        .and_then(Value::as_str)
                        .map(str::to_owned)
                        .ok_or_else(|| FetchError(format!("{url} has no jwks_uri")));
                }
                Err(e) => last = e,
            }
        }
        Err(last)
    }

    async fn fetch(&self) -> Result<Keys, FetchError> {
        let jwks = self.get_json(&self.jwks_uri().await?).await?;
        let set: JwkSet =
            serde_json::from_value(jwks).map_err(|e| FetchError(format!("JWKS: {e}")))?;
        let mut keys = Keys {
            fetched: Some(Instant::now()),
            ..Keys::default()
        };
        for jwk in &set.keys {
            // Keys of other uses (encryption) and of kinds the crate cannot read are skipped.
            if jwk
                .common
                .public_key_use
                .as_ref()
                .is_some_and(|u| *u != jsonwebtoken::jwk::PublicKeyUse::Signature)
            {
                continue;
            }
            let Ok(key) = DecodingKey::from_jwk(jwk) else {
                continue;
            };
            let alg = jwk
                .common
                .key_algorithm
                .and_then(|a| a.to_string().parse::<Algorithm>().ok());
            let key = Key { key, alg };
            match &jwk.common.key_id {
                Some(kid) => {
                    keys.by_kid.insert(kid.clone(), key);
                }
                None => keys.anonymous.push(key),
            }
        }
        tracing::info!(
            keys = keys.by_kid.len() + keys.anonymous.len(),
            "OAuth issuer's keys fetched"
        );
        Ok(keys)
    }

    /// Fetches the keys again unless that was asked for less than the configured refetch
    /// period ago (by this call or a concurrent one, which this one then waits for).
    async fn refresh(&self) {
        let every = Duration::from_secs(self.config.jwks_refetch_secs);
        let mut last = self.last_fetch.lock().await;
        if last.is_some_and(|at| at.elapsed() < every) {
            return;
        }
        *last = Some(Instant::now());
        match self.fetch().await {
            Ok(keys) => *self.keys.write().unwrap_or_else(PoisonError::into_inner) = keys,
            Err(e) => tracing::warn!(error = %e, "OAuth issuer's keys not fetched"),
        }
    }

    fn cached(&self, kid: Option<&str>) -> (Option<Key>, bool, bool) {
        let keys = self.keys.read().unwrap_or_else(PoisonError::into_inner);
        (keys.find(kid), keys.stale(), keys.fetched.is_some())
    }

    /// The key that signed a token with this `kid`: cached, or after a refresh.
    async fn key(&self, kid: Option<&str>) -> Result<Key, ApiError> {
        let (found, stale, _) = self.cached(kid);
        if let Some(key) = found.as_ref().filter(|_| !stale) {
            return Ok(key.clone());
        }
        self.refresh().await;
        let (again, _, any) = self.cached(kid);
        match again.or(found) {
            Some(key) => Ok(key),
            None if any => Err(refused()),
            // No keys at all: the issuer is out of reach, which says nothing of the token.
            None => Err(ApiError::unavailable(
                &"the OAuth issuer's keys are out of reach",
            )),
        }
    }

    /// The claims of a token whose signature and registered claims check.
    async fn claims(&self, token: &str) -> Result<Map<String, Value>, ApiError> {
        let header = jsonwebtoken::decode_header(token).map_err(|_| refused())?;
        if !ALGORITHMS.contains(&header.alg) {
            return Err(refused());
        }
        let key = self.key(header.kid.as_deref()).await?;
        if key.alg.is_some_and(|alg| alg != header.alg) {
            return Err(refused());
        }
        let mut validation = Validation::new(header.alg);
        validation.leeway = LEEWAY_SECS;
        validation.validate_nbf = true;
        validation.set_issuer(&[&self.config.issuer]);
        validation.set_audience(&[&self.config.resource]);
        validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        match jsonwebtoken::decode::<Map<String, Value>>(token, &key.key, &validation) {
            Ok(data) => Ok(data.claims),
            Err(e) if *e.kind() == jsonwebtoken::errors::ErrorKind::ExpiredSignature => {
                Err(ApiError::unauthorized(
                    "Jeton d'accès OAuth expiré : obtenez-en un nouveau.",
                    "OAuth access token expired: get a new one.",
                ))
            }
            Err(e) => {
                tracing::debug!(error = %e, "OAuth access token refused");
                Err(refused())
            }
        }
    }
}

/// The product scopes a token's scope claim grants: a space-separated string or an array,
/// each item the scope's name after the configured prefix. Collect scopes and names the
/// product does not know grant nothing.
pub fn scopes(claim: Option<&Value>, prefix: &str) -> Vec<Scope> {
    let names: Vec<&str> = match claim {
        Some(Value::String(s)) => s.split_whitespace().collect(),
        Some(Value::Array(items)) => items.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    let mut out: Vec<Scope> = Vec::new();
    for name in names {
        if let Some(scope) = name.strip_prefix(prefix).and_then(Scope::parse)
            && !scope.is_collect()
            && !out.contains(&scope)
        {
            out.push(scope);
        }
    }
    out
}

/// A tenant id as the product writes them: 1 to 64 letters, digits, `-` or `_`.
fn tenant_id(claim: Option<&Value>) -> Option<&str> {
    claim.and_then(Value::as_str).filter(|t| {
        (1..=64).contains(&t.len())
            && t.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    })
}

#[async_trait]
impl AccessTokens for Verifier {
    fn config(&self) -> &OAuthConfig {
        &self.config
    }

    async fn verify(&self, token: &str, now: i64) -> Result<TokenRecord, ApiError> {
        let claims = self.claims(token).await?;
        let subject = claims
            .get("sub")
            .and_then(Value::as_str)
            .ok_or_else(refused)?;
        let tenant = tenant_id(claims.get(&self.config.tenant_claim)).ok_or_else(|| {
            ApiError::unauthorized(
                "Jeton d'accès OAuth sans compte client : la claim du tenant manque ou est invalide.",
                "OAuth access token without a customer account: its tenant claim is missing or invalid.",
            )
        })?;
        let exp = claims.get("exp").and_then(Value::as_i64).unwrap_or(now);
        Ok(TokenRecord {
            // The rate-limit bucket and the caller's identity: one per issuer and subject.
            hash: sha256_hex(format!("oauth\n{}\n{subject}", self.config.issuer).as_bytes()),
            tenant: tenant.to_owned(),
            name: format!("oauth:{subject}"),
            scopes: scopes(
                claims.get(&self.config.scope_claim),
                &self.config.scope_prefix,
            ),
            created_at: claims.get("iat").and_then(Value::as_i64).unwrap_or(now),
            expires_at: exp,
            revoked_at: None,
            last_used_at: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn scope_claims_map_to_product_scopes() {
        let claim = json!("openid read:flows read:dns collect:dns read:nothing read:flows");
        assert_eq!(scopes(Some(&claim), ""), [Scope::ReadFlows, Scope::ReadDns]);
        let claim = json!(["https://api.example.com/read:flows", "read:dns"]);
        assert_eq!(
            scopes(Some(&claim), "https://api.example.com/"),
            [Scope::ReadFlows]
        );
        assert!(scopes(None, "").is_empty());
        assert!(scopes(Some(&json!(7)), "").is_empty());
    }

    #[test]
    fn tenants_are_plain_identifiers() {
        assert_eq!(tenant_id(Some(&json!("acme"))), Some("acme"));
        for bad in [
            json!(""),
            json!("a#b"),
            json!("x".repeat(65)),
            json!(["acme"]),
        ] {
            assert_eq!(tenant_id(Some(&bad)), None, "{bad}");
        }
    }
}
