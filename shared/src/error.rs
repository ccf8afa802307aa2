//! The one error-code table (docs/http-conventions.md#errors) and the API error type.
//!
//! Codes never change once shipped. Every error body is `{error, message}` plus `scope` on a
//! 403; the message is French unless the caller prefers English (see [`crate::lang`]).

use std::borrow::Cow;
use std::sync::Arc;

use axum::response::{IntoResponse, Response};
use http::{HeaderValue, StatusCode, header};
use serde_json::{Map, Value, json};

use crate::lang::Lang;
use crate::scope::Scope;

macro_rules! error_codes {
    ($($variant:ident => $code:literal, $status:ident;)*) => {
        /// Stable, snake_case error codes.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum ErrorCode { $($variant),* }

        impl ErrorCode {
            /// Every code, in table order.
            pub const ALL: &'static [ErrorCode] = &[$(ErrorCode::$variant),*];

            pub fn as_str(self) -> &'static str {
                match self { $(ErrorCode::$variant => $code),* }
            }

            pub fn status(self) -> StatusCode {
                match self { $(ErrorCode::$variant => StatusCode::$status),* }
            }
        }
    };
}

error_codes! {
    InvalidParameter => "invalid_parameter", BAD_REQUEST;
    InvalidCursor => "invalid_cursor", BAD_REQUEST;
    InvalidBody => "invalid_body", BAD_REQUEST;
    Unauthorized => "unauthorized", UNAUTHORIZED;
    Forbidden => "forbidden", FORBIDDEN;
    NotFound => "not_found", NOT_FOUND;
    Conflict => "conflict", CONFLICT;
    IdempotencyKeyReused => "idempotency_key_reused", UNPROCESSABLE_ENTITY;
    MethodNotAllowed => "method_not_allowed", METHOD_NOT_ALLOWED;
    PayloadTooLarge => "payload_too_large", PAYLOAD_TOO_LARGE;
    RateLimited => "rate_limited", TOO_MANY_REQUESTS;
    InternalError => "internal_error", INTERNAL_SERVER_ERROR;
    ServiceUnavailable => "service_unavailable", SERVICE_UNAVAILABLE;
    // Refusals of the HTTP layer itself, before any route is known (`netops serve`).
    BadRequest => "bad_request", BAD_REQUEST;
    RequestTimeout => "request_timeout", REQUEST_TIMEOUT;
    UriTooLong => "uri_too_long", URI_TOO_LONG;
    HeadersTooLarge => "headers_too_large", REQUEST_HEADER_FIELDS_TOO_LARGE;
}

/// A message in both languages the API speaks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Msg {
    pub fr: Cow<'static, str>,
    pub en: Cow<'static, str>,
}

impl Msg {
    pub fn new(fr: impl Into<Cow<'static, str>>, en: impl Into<Cow<'static, str>>) -> Self {
        Self {
            fr: fr.into(),
            en: en.into(),
        }
    }

    pub fn get(&self, lang: Lang) -> &str {
        match lang {
            Lang::Fr => &self.fr,
            Lang::En => &self.en,
        }
    }
}

/// An error answered to the caller. Internal causes are logged, never rendered.
#[derive(Debug, Clone)]
pub struct ApiError {
    pub code: ErrorCode,
    pub message: Msg,
    pub scope: Option<Scope>,
    /// Extra fields of the body, e.g. `admitted_keys` on a settings error.
    pub extra: Map<String, Value>,
    /// On a 405: the methods of the path, for the `Allow` header.
    pub allow: Option<String>,
}

impl ApiError {
    pub fn new(code: ErrorCode, message: Msg) -> Self {
        Self {
            code,
            message,
            scope: None,
            extra: Map::new(),
            allow: None,
        }
    }

    pub fn with(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.extra.insert(key.to_owned(), value.into());
        self
    }

    /// 400 `invalid_parameter` naming the parameter and why.
    pub fn invalid_parameter(name: &str, why_fr: &str, why_en: &str) -> Self {
        Self::new(
            ErrorCode::InvalidParameter,
            Msg::new(
                format!("Paramètre « {name} » invalide : {why_fr}."),
                format!("Invalid parameter '{name}': {why_en}."),
            ),
        )
        .with("parameter", name)
    }

    pub fn invalid_body(why_fr: impl Into<String>, why_en: impl Into<String>) -> Self {
        Self::new(
            ErrorCode::InvalidBody,
            Msg::new(
                format!("Corps de requête invalide : {}.", why_fr.into()),
                format!("Invalid request body: {}.", why_en.into()),
            ),
        )
    }

    /// An intact cursor older than cursors stay valid: the list starts again from its first page.
    pub fn expired_cursor(valid_hours: i64) -> Self {
        Self::new(
            ErrorCode::InvalidCursor,
            Msg::new(
                format!(
                    "Curseur expiré : un curseur reste valable {valid_hours} heures ; reprenez la liste depuis sa première page."
                ),
                format!(
                    "Expired cursor: a cursor stays valid for {valid_hours} hours; start the list again from its first page."
                ),
            ),
        )
    }

    pub fn invalid_cursor() -> Self {
        Self::new(
            ErrorCode::InvalidCursor,
            Msg::new(
                "Curseur invalide : il a été modifié, vient d'une autre route ou d'un autre compte, ou les filtres ont changé depuis la page précédente.",
                "Invalid cursor: it was altered, comes from another route or account, or the filters changed since the previous page.",
            ),
        )
    }

    pub fn unauthorized(fr: &'static str, en: &'static str) -> Self {
        Self::new(ErrorCode::Unauthorized, Msg::new(fr, en))
    }

    pub fn forbidden(scope: Scope) -> Self {
        let mut e = Self::new(
            ErrorCode::Forbidden,
            Msg::new(
                format!("Ce jeton n'a pas la portée requise « {} ».", scope.as_str()),
                format!("This token lacks the required scope '{}'.", scope.as_str()),
            ),
        );
        e.scope = Some(scope);
        e
    }

    /// 403 between the collection API and the rest (docs/collect.md#credentials): a collect
    /// credential on another route (`collector`), or another token on a collect route.
    pub fn collect_only(collector: bool) -> Self {
        let message = if collector {
            Msg::new(
                "Un jeton de collecte (portées collect:<module>) n'envoie que des lots d'observations (/collect) ; il ne lit pas l'API.",
                "A collect credential (collect:<module> scopes) only sends batches of observations (/collect); it reads nothing from the API.",
            )
        } else {
            Msg::new(
                "Seul un jeton de collecte (portées collect:<module>) ou l'identité d'agent d'une machine envoie des lots d'observations.",
                "Only a collect credential (collect:<module> scopes) or a machine's agent credential sends batches of observations.",
            )
        };
        Self::new(ErrorCode::Forbidden, message)
    }

    /// 403 on the agent API's border (docs/agent.md#credentials): an agent token (`agent` or
    /// `agent:enroll`) on another route (`agent_token`), or another token on an agent route.
    pub fn agent_only(agent_token: bool) -> Self {
        let message = if agent_token {
            Msg::new(
                "Un jeton d'agent (portée agent ou agent:enroll) n'appelle que les routes /agent de sa portée ; il ne lit pas l'API.",
                "An agent token (agent or agent:enroll scope) only calls the /agent routes of its scope; it reads nothing from the API.",
            )
        } else {
            Msg::new(
                "Seul un identifiant d'agent (obtenu par enrôlement) appelle les routes /agent.",
                "Only an agent credential (obtained by enrollment) calls the /agent routes.",
            )
        };
        Self::new(ErrorCode::Forbidden, message)
    }

    /// 404 for an item unknown in the caller's tenant.
    pub fn not_found(what_fr: impl Into<String>, what_en: impl Into<String>) -> Self {
        Self::new(
            ErrorCode::NotFound,
            Msg::new(
                format!("{} introuvable.", what_fr.into()),
                format!("{} not found.", what_en.into()),
            ),
        )
    }

    pub fn unknown_path() -> Self {
        Self::new(
            ErrorCode::NotFound,
            Msg::new(
                "Aucune route ne correspond à ce chemin.",
                "No route matches this path.",
            ),
        )
    }

    pub fn conflict(fr: impl Into<String>, en: impl Into<String>) -> Self {
        Self::new(ErrorCode::Conflict, Msg::new(fr.into(), en.into()))
    }

    pub fn method_not_allowed(allow: String) -> Self {
        let mut e = Self::new(
            ErrorCode::MethodNotAllowed,
            Msg::new(
                "Méthode non autorisée sur cette route.",
                "Method not allowed on this route.",
            ),
        );
        e.allow = Some(allow);
        e
    }

    pub fn payload_too_large() -> Self {
        Self::new(
            ErrorCode::PayloadTooLarge,
            Msg::new(
                "Corps de requête trop volumineux (64 Kio au plus).",
                "Request body too large (64 KiB at most).",
            ),
        )
    }

    pub fn rate_limited(retry_after: u64) -> Self {
        Self::new(
            ErrorCode::RateLimited,
            Msg::new(
                format!("Limite de débit dépassée : réessayez dans {retry_after} s."),
                format!("Rate limit exceeded: retry in {retry_after} s."),
            ),
        )
    }

    /// 400 `bad_request`: the request line or a header cannot be parsed as HTTP.
    pub fn bad_request() -> Self {
        Self::new(
            ErrorCode::BadRequest,
            Msg::new("Requête HTTP mal formée.", "Malformed HTTP request."),
        )
    }

    /// 408 `request_timeout`: the head or the body of the request stalled; the connection
    /// is closed.
    pub fn request_timeout() -> Self {
        Self::new(
            ErrorCode::RequestTimeout,
            Msg::new(
                "La requête n'est pas arrivée en entier à temps ; renvoyez-la.",
                "The request did not arrive in full in time; send it again.",
            ),
        )
    }

    /// 414 `uri_too_long`.
    pub fn uri_too_long() -> Self {
        Self::new(
            ErrorCode::UriTooLong,
            Msg::new(
                "Adresse de la requête trop longue.",
                "Request URI too long.",
            ),
        )
    }

    /// 431 `headers_too_large`: the request head is too large or has too many fields.
    pub fn headers_too_large() -> Self {
        Self::new(
            ErrorCode::HeadersTooLarge,
            Msg::new(
                "En-têtes de requête trop volumineux ou trop nombreux.",
                "Request headers too large or too many.",
            ),
        )
    }

    /// 500 with a generic message; the cause goes to the log with the request id.
    pub fn internal(cause: &dyn std::fmt::Display) -> Self {
        tracing::error!(cause = %cause, "internal error");
        Self::new(
            ErrorCode::InternalError,
            Msg::new(
                "Erreur interne du serveur. Réessayez plus tard.",
                "Internal server error. Retry later.",
            ),
        )
    }

    /// 503: a dependency (the store, the write log) is unavailable; nothing was changed.
    pub fn unavailable(cause: &dyn std::fmt::Display) -> Self {
        tracing::error!(cause = %cause, "service unavailable");
        Self::new(
            ErrorCode::ServiceUnavailable,
            Msg::new(
                "Service momentanément indisponible ; aucune modification n'a été faite. Réessayez plus tard.",
                "Service temporarily unavailable; nothing was changed. Retry later.",
            ),
        )
    }

    /// The JSON body in the given language.
    pub fn body(&self, lang: Lang) -> Value {
        let mut body = Map::new();
        body.insert("error".into(), json!(self.code.as_str()));
        body.insert("message".into(), json!(self.message.get(lang)));
        if let Some(scope) = self.scope {
            body.insert("scope".into(), json!(scope.as_str()));
        }
        for (k, v) in &self.extra {
            body.insert(k.clone(), v.clone());
        }
        Value::Object(body)
    }

    /// Renders the error in `lang`.
    pub fn to_response(&self, lang: Lang) -> Response {
        let bytes = serde_json::to_vec(&self.body(lang)).unwrap_or_default();
        let mut res = (self.code.status(), bytes).into_response();
        res.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        if self.code == ErrorCode::ServiceUnavailable {
            // The store or the write log failed for a moment: a retry may well succeed.
            res.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
        }
        if let Some(allow) = &self.allow
            && let Ok(v) = HeaderValue::from_str(allow)
        {
            res.headers_mut().insert(header::ALLOW, v);
        }
        res.extensions_mut()
            .insert(Rendered(Arc::new(self.clone())));
        res
    }
}

/// The error body, as documented.
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
pub struct ErrorBody {
    /// Stable error code, e.g. `invalid_parameter`, `forbidden`, `not_found`.
    #[schema(example = "forbidden")]
    pub error: String,
    /// Human text, in French unless `Accept-Language` prefers English.
    pub message: String,
    /// On a 403: the scope that was required.
    #[schema(example = "read:machines")]
    pub scope: Option<String>,
    /// On a 400 `invalid_parameter`: the parameter at fault.
    #[schema(example = "limit")]
    pub parameter: Option<String>,
    /// On a 400 `invalid_body`: the body field at fault.
    #[schema(example = "note")]
    pub field: Option<String>,
    /// On a 400 about NetDiag settings: the keys the settings admit.
    pub admitted_keys: Option<Vec<String>>,
    /// On a 409 of an acknowledgement: the alert's current state.
    #[schema(example = "acknowledged")]
    pub current_status: Option<String>,
    /// On a 400 about a flow `filter` expression: the 1-based character position of the error.
    pub position: Option<u32>,
    /// On a 400 about a flow `filter` expression: the token at fault.
    pub token: Option<String>,
}

/// Marks a response rendered from an [`ApiError`], so the outer layer can render it again
/// in the caller's language.
#[derive(Clone)]
pub struct Rendered(pub Arc<ApiError>);

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        self.to_response(Lang::Fr)
    }
}

impl From<crate::store::StoreError> for ApiError {
    fn from(e: crate::store::StoreError) -> Self {
        ApiError::unavailable(&e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_unique_and_snake_case() {
        let mut seen = std::collections::HashSet::new();
        for c in ErrorCode::ALL {
            assert!(seen.insert(c.as_str()), "duplicate {}", c.as_str());
            assert!(
                c.as_str()
                    .chars()
                    .all(|ch| ch.is_ascii_lowercase() || ch == '_')
            );
        }
        assert_eq!(
            ErrorCode::RateLimited.status(),
            StatusCode::TOO_MANY_REQUESTS
        );
    }

    #[test]
    fn forbidden_names_the_scope_in_both_languages() {
        let e = ApiError::forbidden(Scope::ReadFlows);
        assert_eq!(e.body(Lang::Fr)["scope"], "read:flows");
        assert!(
            e.body(Lang::En)["message"]
                .as_str()
                .unwrap_or("")
                .contains("lacks")
        );
    }
}
