//! `GET /openapi.json` and `GET /docs`: public, they hold no tenant data.

use std::sync::OnceLock;

use axum::response::{Html, IntoResponse, Response};

/// Spécification OpenAPI
///
/// Le document OpenAPI 3.1 de l'API, généré depuis le code. Public : il ne contient aucune
/// donnée de compte.
#[utoipa::path(get, path = "/openapi.json", operation_id = "get_openapi", tag = "docs",
    security(()),
    responses((status = 200, description = "Le document OpenAPI", content_type = "application/json", body = Object)))]
pub async fn get_openapi() -> Response {
    static DOC: OnceLock<Vec<u8>> = OnceLock::new();
    let bytes = DOC.get_or_init(|| serde_json::to_vec(&crate::openapi()).unwrap_or_default());
    (
        [(http::header::CONTENT_TYPE, "application/json")],
        bytes.clone(),
    )
        .into_response()
}

/// Documentation
///
/// La documentation de l'API, en HTML. Publique.
#[utoipa::path(get, path = "/docs", operation_id = "get_docs", tag = "docs",
    security(()),
    responses((status = 200, description = "La page de documentation", content_type = "text/html", body = String)))]
pub async fn get_docs() -> Html<String> {
    static PAGE: OnceLock<String> = OnceLock::new();
    Html(PAGE.get_or_init(render).clone())
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A static page listing every operation of the OpenAPI document.
fn render() -> String {
    let doc = crate::openapi();
    let mut rows = String::new();
    if let Some(paths) = doc["paths"].as_object() {
        for (path, item) in paths {
            let Some(item) = item.as_object() else {
                continue;
            };
            for (method, op) in item {
                let scope = op["x-scope"].as_str().unwrap_or("");
                rows.push_str(&format!(
                    "<tr><td><code>{}</code></td><td><code>{}</code></td><td>{}</td><td><code>{}</code></td></tr>\n",
                    method.to_uppercase(),
                    escape(path),
                    escape(op["summary"].as_str().unwrap_or("")),
                    escape(scope),
                ));
            }
        }
    }
    format!(
        r#"<!doctype html><html lang="fr"><head><meta charset="utf-8"><title>Network Operations API v1</title>
<style>body{{font-family:system-ui,sans-serif;margin:2rem;max-width:70rem}}td,th{{padding:.3rem .6rem;border-bottom:1px solid #ddd;text-align:left}}</style>
</head><body><h1>Network Operations Public API v1</h1>
<p>Spécification complète : <a href="openapi.json">openapi.json</a>. Toutes les routes demandent l'en-tête <code>Authorization: Bearer &lt;jeton&gt;</code>.</p>
<table><thead><tr><th>Méthode</th><th>Chemin</th><th>Description</th><th>Portée</th></tr></thead><tbody>
{rows}</tbody></table></body></html>"#
    )
}
