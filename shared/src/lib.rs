//! netops-shared, the HTTP contract kit: what every module function and the local process
//! have in common — envelope, error codes, auth and scopes, rate limit, windows, paging and
//! cursors, extractors, the HTTP conventions, the time format of answers, exports, idempotency,
//! the collection API's shell, metrics, configuration and telemetry. The storage ports are a
//! crate of their own (netops-store), re-exported here as [`store`]; no adapter is linked here.

pub mod auth;
pub mod collect;
pub mod config;
pub mod cursor;
pub mod envelope;
pub mod error;
pub mod export;
pub mod extract;
pub mod http;
pub mod idempotency;
pub mod lang;
pub mod lookup;
pub mod metrics;
pub mod module;
pub mod oauth;
pub mod paging;
pub mod pass;
pub mod request;
pub mod state;
pub mod telemetry;
pub mod time;
pub mod window;
pub mod write;

// The route table and the scopes live in a crate of their own (netops-routes) that the route
// list generator reads without this crate's dependencies; here they keep their paths.
pub use netops_routes as routes;
pub use netops_routes::scope;
// The storage ports, which the state and the handlers' reads are written against.
/// `#[route(<operation id>, ...)]`: a handler's `#[utoipa::path]`, its method, path, operation
/// id and tag taken from the route table.
pub use netops_routes_macros::route;
pub use netops_store as store;

pub use auth::Caller;
pub use envelope::{ApiResult, Envelope, Meta, ok};
pub use error::{ApiError, Msg};
pub use extract::{Json, Path, Query};
pub use module::Module;
pub use paging::Page;
pub use request::RequestCtx;
pub use scope::Scope;
pub use state::AppState;
pub use window::Window;

#[cfg(test)]
mod layers {
    use std::collections::{BTreeMap, BTreeSet};
    use std::path::Path;

    /// The modules of this crate each file's code (comments and test modules aside) names
    /// through `crate::`, by top-level module (a folder counts as one).
    fn imports() -> BTreeMap<String, BTreeSet<String>> {
        fn walk(dir: &Path, top: Option<&str>, out: &mut BTreeMap<String, BTreeSet<String>>) {
            for entry in std::fs::read_dir(dir).expect("src").flatten() {
                let path = entry.path();
                let name = path
                    .file_stem()
                    .and_then(|n| n.to_str())
                    .unwrap_or_default();
                let module = top.unwrap_or(name).to_owned();
                if path.is_dir() {
                    walk(&path, Some(&module), out);
                    continue;
                }
                if module == "lib" || path.extension().is_none_or(|e| e != "rs") {
                    continue;
                }
                let text = std::fs::read_to_string(&path).expect("source");
                let code = text.split("#[cfg(test)]").next().unwrap_or_default();
                let uses = out.entry(module.clone()).or_default();
                for line in code.lines().filter(|l| !l.trim_start().starts_with("//")) {
                    for (_, rest) in line
                        .match_indices("crate::")
                        .map(|(i, _)| line.split_at(i + 7))
                    {
                        let target: String = rest
                            .chars()
                            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                            .collect();
                        if target != module && !target.is_empty() {
                            uses.insert(target);
                        }
                    }
                }
            }
        }
        let mut out = BTreeMap::new();
        walk(
            &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
            None,
            &mut out,
        );
        out
    }

    #[test]
    fn no_module_imports_one_that_imports_it_back() {
        let graph = imports();
        assert!(
            graph.contains_key("auth") && graph.contains_key("http"),
            "{graph:?}"
        );
        // Depth-first from every module; a module met again on the current path closes a circle.
        fn visit<'a>(
            graph: &'a BTreeMap<String, BTreeSet<String>>,
            path: &mut Vec<&'a str>,
            circles: &mut Vec<String>,
        ) {
            let here = path[path.len() - 1];
            for next in graph.get(here).into_iter().flatten() {
                if let Some(i) = path.iter().position(|m| m == next) {
                    circles.push(format!("{} -> {next}", path[i..].join(" -> ")));
                } else if graph.contains_key(next) && path.len() < graph.len() {
                    path.push(next);
                    visit(graph, path, circles);
                    path.pop();
                }
            }
        }
        let mut circles = Vec::new();
        for module in graph.keys() {
            visit(&graph, &mut vec![module.as_str()], &mut circles);
        }
        circles.sort();
        circles.dedup();
        assert!(circles.is_empty(), "import circles: {circles:#?}");
    }
}
