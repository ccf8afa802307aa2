//! `GET /openapi.json`, `GET /docs` and the page's assets: public, they hold no tenant data.
//! The page is Swagger UI, served entirely by us from files embedded at build time.
//!
//! Each file's strong `ETag` is computed once per process, on first use, rather than hashed
//! on every answer: a conditional request is answered 304 (by the HTTP layers, as any other
//! answer) without hashing 1.7 MB of script again.

use std::sync::LazyLock;

use axum::response::{IntoResponse, Response};
use http::{HeaderValue, header};
use netops_shared::http::conventions::strong_etag;
use netops_shared::route;
use netops_shared::routes::BASE_PATH;
use netops_shared::{ApiError, Path};

const INDEX: &str = include_str!("../assets/index.html");
const INIT_JS: &str = include_str!("../assets/init.js");
const BUNDLE_JS: &[u8] = include_bytes!("../assets/swagger-ui/swagger-ui-bundle.js");
const CSS: &[u8] = include_bytes!("../assets/swagger-ui/swagger-ui.css");

/// Scripts and styles come from this origin only.
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; \
                   img-src 'self' data:; connect-src 'self'; font-src 'self' data:; base-uri 'none'";

/// A file's bytes and their strong `ETag`.
struct Tagged {
    bytes: &'static [u8],
    etag: HeaderValue,
}

impl Tagged {
    fn new(bytes: &'static [u8]) -> Self {
        Self {
            bytes,
            etag: strong_etag(bytes),
        }
    }
}

static OPENAPI: LazyLock<Tagged> = LazyLock::new(|| Tagged::new(crate::OPENAPI_JSON));
static PAGE: LazyLock<Tagged> = LazyLock::new(|| {
    let page: &'static str = INDEX.replace("{base}", BASE_PATH).leak();
    Tagged::new(page.as_bytes())
});
static BUNDLE: LazyLock<Tagged> = LazyLock::new(|| Tagged::new(BUNDLE_JS));
static STYLE: LazyLock<Tagged> = LazyLock::new(|| Tagged::new(CSS));
static INIT: LazyLock<Tagged> = LazyLock::new(|| Tagged::new(INIT_JS.as_bytes()));

fn asset(content_type: &'static str, file: &Tagged, cache: &'static str) -> Response {
    let mut res = file.bytes.into_response();
    let h = res.headers_mut();
    h.insert(header::ETAG, file.etag.clone());
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static(cache));
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    res
}

/// Spécification OpenAPI
///
/// Le document OpenAPI 3.1 de l'API, généré depuis le code. Public : il ne contient aucune
/// donnée de compte.
#[route(get_openapi,
    security(()),
    responses((status = 200, description = "Le document OpenAPI", content_type = "application/json", body = Object)))]
pub async fn get_openapi() -> Response {
    asset("application/json", &OPENAPI, "public, max-age=300")
}

/// Documentation interactive
///
/// La documentation interactive (Swagger UI) : coller un jeton dans « Authorize » puis
/// essayer n'importe quelle route. Publique ; tout est servi par l'API, sans CDN.
#[route(get_docs,
    security(()),
    responses((status = 200, description = "La page de documentation", content_type = "text/html", body = String)))]
pub async fn get_docs() -> Response {
    let mut res = asset("text/html; charset=utf-8", &PAGE, "no-cache");
    res.headers_mut().insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    res
}

/// Fichiers de la documentation
///
/// Scripts et feuilles de style de la page `/docs` (Swagger UI, paquet npm
/// swagger-ui-dist, licence Apache-2.0). 404 pour tout autre nom.
#[route(get_docs_asset,
    security(()),
    params(("asset" = String, Path, description = "Nom du fichier : swagger-ui-bundle.js, swagger-ui.css ou init.js", example = "init.js")),
    responses(
        (status = 200, description = "Le fichier : script (`.js`) ou feuille de style (`.css`)",
            content((String = "text/javascript"), (String = "text/css"))),
        (status = 404, description = "Fichier inconnu", body = netops_shared::error::ErrorBody),
    ))]
pub async fn get_docs_asset(Path(name): Path<String>) -> Result<Response, ApiError> {
    const DAY: &str = "public, max-age=86400";
    match name.as_str() {
        "swagger-ui-bundle.js" => Ok(asset("text/javascript; charset=utf-8", &BUNDLE, DAY)),
        "swagger-ui.css" => Ok(asset("text/css; charset=utf-8", &STYLE, DAY)),
        "init.js" => Ok(asset("text/javascript; charset=utf-8", &INIT, "no-cache")),
        _ => Err(ApiError::not_found(
            format!("Fichier « {name} »"),
            format!("File '{name}'"),
        )),
    }
}
