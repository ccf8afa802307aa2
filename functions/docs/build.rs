//! Writes the OpenAPI document to `$OUT_DIR/openapi.json` ([`OPENAPI_JSON`] in the crate),
//! with the crate's own generator compiled in here: the docs function then serves the
//! document without linking every module's handlers, and its package stays small.

// The page's handlers are compiled for their OpenAPI annotations only.
#[allow(dead_code)]
#[path = "src/page.rs"]
mod page;

#[path = "src/modules.rs"]
mod modules;

#[path = "src/openapi.rs"]
mod openapi;

use modules::MODULES;

/// Read by `page.rs`'s handler, which the build script never runs.
#[allow(dead_code)]
static OPENAPI_JSON: &[u8] = &[];

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR")?).join("openapi.json");
    std::fs::write(out, serde_json::to_vec(&openapi::openapi())?)?;
    Ok(())
}
