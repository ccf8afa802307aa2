//! Writes the OpenAPI document to `$OUT_DIR/openapi.json` (`OPENAPI_JSON` in `tools.rs`) with
//! `netops_api::openapi`: the tools' schemas and texts are read from it at start, and the
//! package carries none of the operations' OpenAPI code (a function crate never depends on
//! another, so the docs function's copy is not taken).

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR")?).join("openapi.json");
    std::fs::write(
        out,
        serde_json::to_vec(&netops_api::openapi(Default::default()))?,
    )?;
    Ok(())
}
