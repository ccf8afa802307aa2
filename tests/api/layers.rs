//! The layer rule of the workspace (docs/architecture.md): which crate may depend on
//! which, read from `cargo metadata`, so that a dependency that crosses a layer fails here
//! rather than in a reader's head.

use std::collections::BTreeMap;
use std::process::Command;

use serde_json::Value;

/// The layers, each with the layers its crates may depend on (normal and build dependencies;
/// dev-dependencies are the tests' own business).
const RULE: &[(Layer, &[Layer])] = &[
    (Layer::Routes, &[Layer::Routes]),
    (Layer::Domain, &[]),
    // The geolocation file stands alone: the kit holds it, the flows writers look up in it,
    // the collect function's entry and the local process load it.
    (Layer::Geo, &[]),
    (Layer::Ports, &[Layer::Routes]),
    // Timestream's reads share the DynamoDB adapter's SDK set-up.
    (
        Layer::Adapter,
        &[Layer::Routes, Layer::Ports, Layer::Adapter],
    ),
    (Layer::Kit, &[Layer::Routes, Layer::Ports, Layer::Geo]),
    (
        Layer::Lambda,
        &[
            Layer::Routes,
            Layer::Ports,
            Layer::Kit,
            Layer::Adapter,
            Layer::Geo,
        ],
    ),
    // A module reads and writes through the ports, answers through the kit and runs under
    // the Lambda entry; the MCP, docs and collect functions serve the API as a whole.
    (
        Layer::Module,
        &[
            Layer::Routes,
            Layer::Domain,
            Layer::Geo,
            Layer::Ports,
            Layer::Kit,
            Layer::Lambda,
            Layer::Api,
        ],
    ),
    // A function that runs other modules' code under its own entry: the agent API (the
    // fleet's heartbeat writer, NetDiag's actions) and the scheduled pass (NetDiag's expiry).
    // No module depends on one.
    (
        Layer::Entry,
        &[
            Layer::Routes,
            Layer::Domain,
            Layer::Geo,
            Layer::Ports,
            Layer::Kit,
            Layer::Lambda,
            Layer::Module,
        ],
    ),
    (
        Layer::Api,
        &[Layer::Routes, Layer::Kit, Layer::Module, Layer::Entry],
    ),
    // The demo draws observations and writes them through the modules, never an adapter.
    (
        Layer::Demo,
        &[
            Layer::Routes,
            Layer::Domain,
            Layer::Ports,
            Layer::Kit,
            Layer::Module,
        ],
    ),
    // The local process links the adapters itself, never the Lambda entry.
    (
        Layer::Local,
        &[
            Layer::Routes,
            Layer::Domain,
            Layer::Geo,
            Layer::Ports,
            Layer::Kit,
            Layer::Adapter,
            Layer::Module,
            Layer::Entry,
            Layer::Api,
            Layer::Demo,
        ],
    ),
    (Layer::Tool, &[Layer::Routes]),
    // The cold-start baseline (bench/hello) makes a function's token read, as the Lambda
    // entry does: the kit and the DynamoDB adapter, nothing of a module.
    (
        Layer::Bench,
        &[Layer::Routes, Layer::Ports, Layer::Kit, Layer::Adapter],
    ),
    // The site relay runs on a site alone: no store, no server, no module, not even the kit.
    (Layer::Site, &[]),
];

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Layer {
    Routes,
    Domain,
    Geo,
    Ports,
    Adapter,
    Kit,
    Lambda,
    Module,
    Entry,
    Api,
    Demo,
    Local,
    Tool,
    Bench,
    Site,
}

/// The layer of a workspace crate, from its name and folder.
fn layer(name: &str, manifest: &str) -> Layer {
    match name {
        "netops-routes" | "netops-routes-macros" => Layer::Routes,
        "netops-domain" => Layer::Domain,
        "netops-geo" => Layer::Geo,
        "netops-store" => Layer::Ports,
        "netops-store-sqlite" | "netops-store-dynamodb" | "netops-store-timestream" => {
            Layer::Adapter
        }
        "netops-shared" => Layer::Kit,
        "netops-lambda" => Layer::Lambda,
        "netops-api" => Layer::Api,
        "netops-demo" => Layer::Demo,
        "netops" => Layer::Local,
        "xtask" => Layer::Tool,
        "netops-bench-hello" => Layer::Bench,
        "netops-relay" => Layer::Site,
        "netops-agent" | "netops-pass" => Layer::Entry,
        _ if manifest.contains("/functions/") => Layer::Module,
        _ => panic!("{name} ({manifest}): a crate of no layer; add it to tests/api/layers.rs"),
    }
}

/// Every workspace crate with its layer and its workspace dependencies (name, kind).
fn workspace() -> BTreeMap<String, (Layer, Vec<(String, String)>)> {
    let out = Command::new(env!("CARGO"))
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo metadata");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: Value = serde_json::from_slice(&out.stdout).expect("metadata");
    let packages = meta["packages"].as_array().expect("packages");
    let names: Vec<&str> = packages.iter().filter_map(|p| p["name"].as_str()).collect();
    packages
        .iter()
        .map(|p| {
            let name = p["name"].as_str().expect("name").to_owned();
            let manifest = p["manifest_path"].as_str().expect("manifest");
            let deps = p["dependencies"]
                .as_array()
                .expect("dependencies")
                .iter()
                .filter(|d| names.contains(&d["name"].as_str().unwrap_or_default()))
                .map(|d| {
                    let kind = d["kind"].as_str().unwrap_or("normal").to_owned();
                    (d["name"].as_str().unwrap_or_default().to_owned(), kind)
                })
                .collect();
            (name.clone(), (layer(&name, manifest), deps))
        })
        .collect()
}

#[test]
fn every_crate_depends_only_on_the_layers_below_it() {
    let crates = workspace();
    let modules = crates.values().filter(|(l, _)| *l == Layer::Module).count();
    assert!(modules >= 14, "{modules} function crates found");
    let mut crossings = Vec::new();
    for (name, (from, deps)) in &crates {
        let allowed = RULE
            .iter()
            .find(|(l, _)| l == from)
            .map(|(_, a)| *a)
            .expect("every layer has a rule");
        for (dep, kind) in deps.iter().filter(|(_, k)| k != "dev") {
            let to = crates[dep].0;
            if !allowed.contains(&to) {
                crossings.push(format!("{name} ({from:?}) -> {dep} ({to:?}, {kind})"));
            }
        }
    }
    assert!(
        crossings.is_empty(),
        "dependencies across the layer rule: {crossings:#?}"
    );
}

#[test]
fn no_function_links_the_embedded_store_or_the_demo_but_through_the_lambda_switch() {
    // What a function binary contains is what its crate and the Lambda entry link: the
    // DynamoDB adapter always, SQLite only behind netops-lambda's `embedded` (the one switch,
    // for `cargo lambda watch`), the demo never.
    let crates = workspace();
    for (name, (layer, deps)) in &crates {
        let linked: Vec<&str> = deps
            .iter()
            .filter(|(_, k)| k != "dev")
            .map(|(d, _)| d.as_str())
            .collect();
        if matches!(layer, Layer::Module | Layer::Entry) {
            for forbidden in [
                "netops-store-sqlite",
                "netops-store-dynamodb",
                "netops-demo",
            ] {
                assert!(!linked.contains(&forbidden), "{name} links {forbidden}");
            }
            assert!(
                linked.contains(&"netops-lambda"),
                "{name} runs under the Lambda entry"
            );
        }
    }
    let lambda = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../lambda/Cargo.toml"),
    )
    .expect("lambda manifest");
    let manifest: toml::Table = lambda.parse().expect("toml");
    let sqlite = &manifest["dependencies"]["netops-store-sqlite"];
    assert_eq!(sqlite.get("optional").and_then(|o| o.as_bool()), Some(true));
    assert_eq!(
        manifest["features"]["embedded"].as_array().map(Vec::len),
        Some(1),
        "the switch turns on the SQLite adapter alone"
    );
    let dynamodb = &manifest["dependencies"]["netops-store-dynamodb"];
    assert!(
        dynamodb.get("optional").is_none(),
        "every function links DynamoDB"
    );
}
