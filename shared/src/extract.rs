//! Our own `Query`, `Json` and `Path` extractors: every rejection becomes the API's error
//! shape, naming the parameter or field at fault.

use std::sync::Arc;

use axum::extract::{FromRequest, FromRequestParts, Request};
use bytes::Bytes;
use http::request::Parts;
use serde::de::DeserializeOwned;

use crate::error::ApiError;

/// Maximum request body (docs/http-conventions.md#limits).
pub const BODY_LIMIT: usize = 64 * 1024;

/// The query string of a request, decoded once: the first extractor that reads a parameter
/// (the page, the window, the route's own [`Query`]) decodes it and keeps it in the request,
/// and every later one reads the same pairs.
#[derive(Debug, Clone, Default)]
pub struct Params(Arc<Vec<(String, String)>>);

impl Params {
    pub fn parse(query: Option<&str>) -> Params {
        let pairs = form_urlencoded::parse(query.unwrap_or("").as_bytes())
            .map(|(k, v)| (k.into_owned(), v.into_owned()))
            .collect();
        Params(Arc::new(pairs))
    }

    /// The request's parameters, decoded on first use.
    pub fn of(parts: &mut Parts) -> Params {
        if let Some(params) = parts.extensions.get::<Params>() {
            return params.clone();
        }
        let params = Params::parse(parts.uri.query());
        parts.extensions.insert(params.clone());
        params
    }

    /// The value of the parameter `name`, which may be given at most once and not empty: 400
    /// when it is repeated (`limit=5&limit=500` is ambiguous, never silently resolved) or
    /// empty (`?to=` is no date, and reading it as absent would answer another question).
    pub fn once(&self, name: &str) -> Result<Option<&str>, ApiError> {
        let mut values = self.0.iter().filter(|(k, _)| k == name).map(|(_, v)| v);
        let found = values.next();
        if values.next().is_some() {
            return Err(ApiError::invalid_parameter(
                name,
                "donné plusieurs fois",
                "given more than once",
            ));
        }
        self.refuse_empty(&[name])?;
        Ok(found.map(String::as_str))
    }

    /// 400 naming the first of the `known` parameters given with an empty value; an unknown
    /// parameter is ignored, empty or not.
    fn refuse_empty(&self, known: &[&str]) -> Result<(), ApiError> {
        match self
            .0
            .iter()
            .find(|(k, v)| v.is_empty() && known.contains(&k.as_str()))
        {
            Some((name, _)) => Err(ApiError::invalid_parameter(
                name,
                "valeur vide (omettre le paramètre pour sa valeur par défaut)",
                "empty value (leave the parameter out for its default)",
            )),
            None => Ok(()),
        }
    }
}

/// The field names of a `#[derive(Deserialize)]` struct, which serde hands its deserializer
/// (a route's query parameters, as the route reads them).
fn fields_of<T: DeserializeOwned>() -> &'static [&'static str] {
    use serde::de::{Error, Visitor, value};

    struct Fields<'a>(&'a mut &'static [&'static str]);

    impl<'de> serde::Deserializer<'de> for Fields<'_> {
        type Error = value::Error;

        fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, value::Error> {
            Err(value::Error::custom("not a struct"))
        }

        fn deserialize_struct<V: Visitor<'de>>(
            self,
            _: &'static str,
            fields: &'static [&'static str],
            _: V,
        ) -> Result<V::Value, value::Error> {
            *self.0 = fields;
            Err(value::Error::custom("fields read"))
        }

        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes
            byte_buf option unit unit_struct newtype_struct seq tuple tuple_struct map enum
            identifier ignored_any
        }
    }

    let mut fields: &'static [&'static str] = &[];
    // The error is the point: the derive named its fields before giving up.
    let _ = T::deserialize(Fields(&mut fields));
    fields
}

/// Turns serde's English reason into a short French one.
fn french_reason(en: &str) -> String {
    if en.starts_with("unknown variant")
        && let Some(idx) = en.find("expected ")
    {
        let allowed = en[idx + "expected ".len()..]
            .trim_start_matches("one of ")
            .replace('`', "")
            .replace(" or ", ", ");
        return format!("valeurs admises : {allowed}");
    }
    if en.contains("invalid digit") || en.contains("expected i") || en.contains("expected u") {
        return "nombre entier attendu".into();
    }
    if en.contains("invalid float") || en.contains("expected f") {
        return "nombre attendu".into();
    }
    if en.contains("too large") || en.contains("too small") || en.contains("out of range") {
        return "nombre hors limites".into();
    }
    if en.contains("duplicate field") {
        return "donné plusieurs fois".into();
    }
    if en.contains("missing field") {
        return "obligatoire".into();
    }
    "valeur invalide".into()
}

/// The query string deserialized into one `#[derive(Deserialize)]` struct per route.
/// Unknown parameters are ignored; a bad or empty value gives 400 naming its parameter.
#[derive(Debug, Clone, Default)]
pub struct Query<T>(pub T);

/// The parameters given deserialized into `T` (serde_urlencoded reads them back from their
/// form encoding, the one input it takes).
pub fn parse_query<T: DeserializeOwned>(params: &Params) -> Result<T, ApiError> {
    params.refuse_empty(fields_of::<T>())?;
    let encoded = form_urlencoded::Serializer::new(String::new())
        .extend_pairs(params.0.iter())
        .finish();
    let de = serde_urlencoded::Deserializer::new(form_urlencoded::parse(encoded.as_bytes()));
    serde_path_to_error::deserialize(de).map_err(|e| {
        let name = e.path().to_string();
        let reason = e.inner().to_string();
        let name = if name == "." {
            // serde reports a missing field on the root.
            reason.split('`').nth(1).unwrap_or("query").to_owned()
        } else {
            name
        };
        ApiError::invalid_parameter(&name, &french_reason(&reason), &reason)
    })
}

impl<T: DeserializeOwned, S: Send + Sync> FromRequestParts<S> for Query<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        parse_query(&Params::of(parts)).map(Query)
    }
}

/// Path parameters; a value of the wrong type gives 400.
#[derive(Debug, Clone)]
pub struct Path<T>(pub T);

impl<T, S> FromRequestParts<S> for Path<T>
where
    T: DeserializeOwned + Send,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        use axum::extract::path::ErrorKind;
        use axum::extract::rejection::PathRejection;
        // The parameter is named after the route's own placeholder (every route has one).
        let name = parts
            .extensions
            .get::<axum::extract::MatchedPath>()
            .and_then(|m| m.as_str().split_once('{'))
            .and_then(|(_, rest)| rest.split_once('}'))
            .map_or("id", |(name, _)| name)
            .to_owned();
        axum::extract::Path::<T>::from_request_parts(parts, state)
            .await
            .map(|p| Path(p.0))
            .map_err(|rejection| {
                let integer = matches!(&rejection, PathRejection::FailedToDeserializePathParams(e)
                    if matches!(e.kind(), ErrorKind::ParseErrorAtKey { expected_type, .. }
                        | ErrorKind::ParseError { expected_type, .. }
                        if expected_type.starts_with('i') || expected_type.starts_with('u')));
                if integer {
                    ApiError::invalid_parameter(
                        &name,
                        "valeur invalide (un entier est attendu)",
                        "invalid value (an integer is expected)",
                    )
                } else {
                    ApiError::invalid_parameter(&name, "valeur invalide", "invalid value")
                }
            })
    }
}

/// A JSON object body, at most [`BODY_LIMIT`] bytes; anything else is 400 `invalid_body`
/// (or 413 when too large).
#[derive(Debug, Clone)]
pub struct Json<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequest<S> for Json<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let bytes = Bytes::from_request(req, state).await.map_err(|e| {
            if e.status() == http::StatusCode::PAYLOAD_TOO_LARGE {
                ApiError::payload_too_large()
            } else {
                ApiError::invalid_body("lecture impossible", "unreadable")
            }
        })?;
        if bytes.len() > BODY_LIMIT {
            return Err(ApiError::payload_too_large());
        }
        let value: serde_json::Value = serde_json::from_slice(&bytes)
            .map_err(|_| ApiError::invalid_body("ce n'est pas du JSON valide", "not valid JSON"))?;
        if !value.is_object() {
            return Err(ApiError::invalid_body(
                "un objet JSON est attendu",
                "a JSON object is expected",
            ));
        }
        serde_path_to_error::deserialize(value)
            .map(Json)
            .map_err(|e| {
                let field = e.path().to_string();
                let reason = e.inner().to_string();
                ApiError::invalid_body(
                    format!("champ « {field} » : {}", french_reason(&reason)),
                    format!("field '{field}': {reason}"),
                )
                .with("field", field)
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(rename_all = "snake_case")]
    enum Proto {
        #[serde(rename = "TCP")]
        Tcp,
        #[serde(rename = "UDP")]
        Udp,
    }

    #[derive(Debug, Deserialize)]
    struct Q {
        status: Option<String>,
        remote_port: Option<u16>,
        protocol: Option<Proto>,
    }

    #[test]
    fn the_query_is_decoded_once_and_a_parameter_given_twice_is_refused() {
        let (mut parts, ()) = http::Request::builder()
            .uri("/x?limit=5&q=%C3%89chec&limit=500&cursor=")
            .body(())
            .expect("request")
            .into_parts();
        let first = Params::of(&mut parts);
        let again = Params::of(&mut parts);
        assert!(Arc::ptr_eq(&first.0, &again.0), "decoded once, then shared");
        assert_eq!(first.once("q").expect("once"), Some("Échec"));
        let e = first.once("cursor").expect_err("empty");
        assert_eq!(e.extra["parameter"], "cursor");
        assert_eq!(first.once("period").expect("once"), None);
        let e = first.once("limit").expect_err("twice");
        assert_eq!(e.extra["parameter"], "limit");
    }

    #[test]
    fn names_the_bad_parameter_in_both_languages() {
        let q: Q = parse_query(&Params::parse(Some(
            "status=online&remote_port=443&protocol=TCP&other=1",
        )))
        .expect("q");
        assert_eq!(q.status.as_deref(), Some("online"));
        assert_eq!(q.remote_port, Some(443));
        assert_eq!(q.protocol, Some(Proto::Tcp));
        let e = parse_query::<Q>(&Params::parse(Some("remote_port=abc"))).expect_err("bad");
        assert_eq!(e.extra["parameter"], "remote_port");
        assert!(e.message.fr.contains("entier"));
        let e = parse_query::<Q>(&Params::parse(Some("protocol=ICMP"))).expect_err("bad");
        assert!(e.message.fr.contains("TCP, UDP"), "{}", e.message.fr);
        for query in ["status=", "remote_port=&status=up"] {
            let e = parse_query::<Q>(&Params::parse(Some(query))).expect_err("empty");
            let name = query.split('=').next().unwrap_or_default();
            assert_eq!(e.extra["parameter"], name, "{query}");
            assert!(e.message.fr.contains("vide"), "{}", e.message.fr);
        }
        let q: Q = parse_query(&Params::parse(Some("other=&status=up"))).expect("unknown ignored");
        assert_eq!(q.status.as_deref(), Some("up"));
        let q: Q = parse_query(&Params::parse(Some("status=a%20b%2Bc"))).expect("decoded");
        assert_eq!(q.status.as_deref(), Some("a b+c"));
    }
}
