//! The MCP endpoint as an OAuth 2.1 resource server (docs/mcp.md#oauth): which issuer it
//! trusts, its protected resource metadata (RFC 9728) and the `WWW-Authenticate` challenge of
//! its 401s. Verifying an access token needs JWT and HTTPS code that only the MCP function
//! links: it is the [`AccessTokens`] port, implemented in the MCP crate and held in the state.

use async_trait::async_trait;
use http::HeaderValue;
use serde_json::{Value, json};

use crate::error::ApiError;
use crate::routes::{BASE_PATH, Function};
use crate::scope::Scope;
use crate::store::TokenRecord;

/// The path of protected resource metadata (RFC 9728 §3), and with the resource's path after
/// it the metadata of that resource (§3.1): both are served.
pub const METADATA_PATH: &str = "/.well-known/oauth-protected-resource";

/// `NETOPS_OAUTH_*`: the authorization server whose access tokens the MCP endpoint accepts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OAuthConfig {
    /// `NETOPS_OAUTH_ISSUER`: the issuer (`iss`), whose metadata names its JWKS.
    pub issuer: String,
    /// `NETOPS_OAUTH_RESOURCE`: this MCP endpoint's URL, the audience (`aud`) its tokens must
    /// name (RFC 8707), e.g. `https://api.example.com/api/v1/mcp`.
    pub resource: String,
    /// `NETOPS_OAUTH_TENANT_CLAIM` (`tenant`): the claim holding the caller's tenant.
    pub tenant_claim: String,
    /// `NETOPS_OAUTH_SCOPE_CLAIM` (`scope`): the claim holding the granted scopes, a
    /// space-separated string or an array.
    pub scope_claim: String,
    /// `NETOPS_OAUTH_SCOPE_PREFIX` (empty): what stands before each product scope in that
    /// claim (Amazon Cognito writes a resource server's scopes `<identifier>/<scope>`).
    pub scope_prefix: String,
    /// `NETOPS_OAUTH_JWKS_REFETCH_SECS` (30, from 1 to 3600): the issuer's keys are fetched
    /// again at most once per this many seconds, however many unknown key ids arrive, and
    /// an issuer out of reach is asked again after as long.
    pub jwks_refetch_secs: u64,
}

/// The default of [`OAuthConfig::jwks_refetch_secs`].
pub const JWKS_REFETCH_SECS: u64 = 30;

impl OAuthConfig {
    /// The resource's origin (`scheme://host[:port]`) and path, or None if it is no URL.
    fn origin_and_path(url: &str) -> Option<(&str, &str)> {
        let (scheme, rest) = url.split_once("://")?;
        if !matches!(scheme, "http" | "https") || rest.is_empty() {
            return None;
        }
        let at = rest.find('/').unwrap_or(rest.len());
        Some((&url[..scheme.len() + 3 + at], &rest[at..]))
    }

    /// Checks the URLs: the resource an `http(s)` URL without query or fragment, the issuer
    /// `https` (plain `http` only on a loopback host, for a local authorization server).
    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        let resource_ok = Self::origin_and_path(&self.resource)
            .is_some_and(|_| !self.resource.contains(['?', '#']));
        if !resource_ok {
            let reason = format!("'{}' is not an http(s) URL", self.resource);
            return Err(("NETOPS_OAUTH_RESOURCE", reason));
        }
        if !self.issuer.starts_with("https://") && !is_loopback_http(&self.issuer) {
            let reason = format!(
                "'{}' is not an https URL (plain http only on 127.0.0.1, [::1] or localhost)",
                self.issuer
            );
            return Err(("NETOPS_OAUTH_ISSUER", reason));
        }
        Ok(())
    }

    /// The path of this resource's metadata: the well-known path with the resource's path
    /// after it (RFC 9728 §3.1).
    pub fn metadata_path(&self) -> String {
        let path = Self::origin_and_path(&self.resource).map_or("", |(_, p)| p);
        format!("{METADATA_PATH}{}", path.trim_end_matches('/'))
    }

    /// Where this resource's metadata is served: [`Self::metadata_path`] on its origin.
    pub fn metadata_url(&self) -> String {
        let origin = Self::origin_and_path(&self.resource).map_or("", |(o, _)| o);
        format!("{origin}{}", self.metadata_path())
    }

    /// The scopes a token may carry, as the issuer writes them.
    pub fn scopes_supported(&self) -> Vec<String> {
        Scope::ALL
            .iter()
            .map(|s| format!("{}{}", self.scope_prefix, s.as_str()))
            .collect()
    }

    /// Protected resource metadata (RFC 9728 §2).
    pub fn metadata(&self) -> Value {
        json!({
            "resource": self.resource,
            "authorization_servers": [self.issuer],
            "scopes_supported": self.scopes_supported(),
            "bearer_methods_supported": ["header"],
            "resource_name": "Network Operations API v1 (MCP)",
            "resource_documentation": format!("{}{BASE_PATH}/docs", Self::origin_and_path(&self.resource).map_or("", |(o, _)| o)),
        })
    }

    /// The `WWW-Authenticate` value of a 401 on the MCP endpoint (RFC 6750 §3, RFC 9728 §5.1):
    /// where its metadata is, the scopes to ask for, and `error="invalid_token"` when a token
    /// was sent and refused (none without a token).
    pub fn challenge(&self, token_sent: bool) -> HeaderValue {
        let error = if token_sent {
            r#"error="invalid_token", "#
        } else {
            ""
        };
        let value = format!(
            r#"Bearer {error}resource_metadata="{}", scope="{}""#,
            self.metadata_url(),
            self.scopes_supported().join(" ")
        );
        HeaderValue::from_str(&value).unwrap_or_else(|_| HeaderValue::from_static("Bearer"))
    }
}

/// `http://` on a loopback host: a local authorization server (tests, development).
pub fn is_loopback_http(url: &str) -> bool {
    let Some(rest) = url.strip_prefix("http://") else {
        return false;
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let host = match authority.rsplit_once(':') {
        Some((host, port)) if !port.contains(']') => host,
        _ => authority,
    };
    matches!(host, "127.0.0.1" | "[::1]" | "localhost")
}

/// The routes that take OAuth access tokens: the MCP endpoint's alone. The REST routes refuse
/// them as any unknown token.
pub fn takes_access_tokens(function: Function) -> bool {
    function == Function::Mcp
}

/// The port that verifies OAuth access tokens (the MCP crate's JWT verifier).
#[async_trait]
pub trait AccessTokens: Send + Sync {
    fn config(&self) -> &OAuthConfig;

    /// Verifies an access token; accepted, it stands as a token record: its tenant, its
    /// subject as the token's name, its scopes, its expiry, and a hash of issuer and subject
    /// (the rate limit counts per subject). Refused: a 401.
    async fn verify(&self, token: &str, now: i64) -> Result<TokenRecord, ApiError>;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(resource: &str, issuer: &str) -> OAuthConfig {
        OAuthConfig {
            issuer: issuer.into(),
            resource: resource.into(),
            tenant_claim: "tenant".into(),
            scope_claim: "scope".into(),
            scope_prefix: String::new(),
            jwks_refetch_secs: JWKS_REFETCH_SECS,
        }
    }

    #[test]
    fn metadata_is_served_beside_the_resource_and_named_in_the_challenge() {
        let c = config(
            "https://api.example.com/api/v1/mcp",
            "https://id.example.com",
        );
        assert!(c.validate().is_ok());
        assert_eq!(
            c.metadata_url(),
            "https://api.example.com/.well-known/oauth-protected-resource/api/v1/mcp"
        );
        assert_eq!(
            c.metadata()["authorization_servers"][0],
            "https://id.example.com"
        );
        let challenge = c.challenge(true);
        let text = challenge.to_str().expect("ascii");
        assert!(text.starts_with(r#"Bearer error="invalid_token", resource_metadata="https://api.example.com/.well-known/oauth-protected-resource/api/v1/mcp""#), "{text}");
        assert!(
            !c.challenge(false)
                .to_str()
                .expect("ascii")
                .contains("error=")
        );
    }

    #[test]
    fn the_issuer_is_https_but_on_loopback() {
        for ok in [
            "http://127.0.0.1:4000",
            "http://localhost/x",
            "http://[::1]:9",
        ] {
            assert!(
                config("http://127.0.0.1:1/api/v1/mcp", ok)
                    .validate()
                    .is_ok(),
                "{ok}"
            );
        }
        for bad in [
            "http://id.example.com",
            "http://127.0.0.1.example.com",
            "ftp://x",
        ] {
            assert!(
                config("https://a.example/mcp", bad).validate().is_err(),
                "{bad}"
            );
        }
        assert!(
            config("api.example.com/mcp", "https://id.example.com")
                .validate()
                .is_err()
        );
    }
}
