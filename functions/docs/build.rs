//! Writes the OpenAPI document to `$OUT_DIR/openapi.json` (`OPENAPI_JSON` in the crate) with
//! `netops_api::openapi`, which links every module: the docs function then serves the
//! document without them, and its package stays small.

// The page's handlers are compiled for their OpenAPI annotations only.
#[allow(dead_code)]
#[path = "src/page.rs"]
mod page;

/// Read by `page.rs`'s handler, which the build script never runs.
#[allow(dead_code)]
static OPENAPI_JSON: &[u8] = &[];

/// The page's operations, from their annotations alone (their tag is set here: only a router
/// reads it from the annotation).
fn page_paths() -> utoipa::openapi::path::Paths {
    let mut own = utoipa::openapi::path::PathsBuilder::new()
        .path_from::<page::__path_get_openapi>()
        .path_from::<page::__path_get_docs>()
        .path_from::<page::__path_get_docs_asset>()
        .build();
    for op in own.paths.values_mut().filter_map(|item| item.get.as_mut()) {
        op.tags = Some(vec!["docs".into()]);
    }
    own
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR")?).join("openapi.json");
    std::fs::write(out, serde_json::to_vec(&netops_api::openapi(page_paths()))?)?;
    Ok(())
}
