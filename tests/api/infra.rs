//! The deployment descriptions cannot drift from the route table: the SAM template
//! (`infra/template.yaml`), the `cargo lambda watch` router (root `Cargo.toml`) and the
//! API Gateway events under `events/`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use netops_shared::routes::{Access, BASE_PATH, Function, Kind, Match, ROUTES, find};
use serde_norway::Value as Yaml;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn camel(op: &str) -> String {
    op.split('_')
        .map(|p| {
            let mut c = p.chars();
            c.next()
                .map(|f| f.to_ascii_uppercase().to_string() + c.as_str())
                .unwrap_or_default()
        })
        .collect()
}

fn access(route: &netops_shared::routes::Route) -> String {
    match route.access {
        Access::Public => "public".into(),
        Access::Token => "token".into(),
        Access::Scoped(s) => s.as_str().into(),
    }
}

fn template() -> Yaml {
    let text =
        std::fs::read_to_string(root().join("infra/template.yaml")).expect("infra/template.yaml");
    serde_norway::from_str(&text).expect("template is YAML")
}

fn s(v: &Yaml) -> String {
    v.as_str().unwrap_or_default().to_owned()
}

/// The function crates under `functions/`.
fn function_crates() -> BTreeSet<String> {
    std::fs::read_dir(root().join("functions"))
        .expect("functions/")
        .filter_map(Result::ok)
        .filter(|e| e.path().join("Cargo.toml").exists())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect()
}

#[test]
fn the_sam_template_routes_functions_and_scopes_equal_the_route_table() {
    let t = template();
    let resources = t["Resources"].as_mapping().expect("Resources");
    // (event name, method, path, function, what the route requires)
    let mut declared = BTreeSet::new();
    let mut functions = BTreeMap::new();
    for (id, res) in resources {
        if res["Type"] != "AWS::Serverless::Function" {
            continue;
        }
        let id = s(id);
        assert_eq!(res["Metadata"]["BuildMethod"], "rust-cargolambda", "{id}");
        let binary = s(&res["Metadata"]["BuildProperties"]["Binary"]);
        assert_eq!(
            id,
            format!("{}Function", camel(&binary)),
            "logical id follows the binary"
        );
        let scopes = &res["Metadata"]["Scopes"];
        for (name, event) in res["Properties"]["Events"].as_mapping().expect("Events") {
            assert_eq!(event["Type"], "HttpApi", "{id}");
            let props = &event["Properties"];
            if props.get("Path").is_none() {
                assert_eq!(binary, "docs", "only docs takes the $default route");
                continue;
            }
            let name = s(name);
            declared.insert((
                name.clone(),
                s(&props["Method"]),
                s(&props["Path"]),
                binary.clone(),
                s(&scopes[name.as_str()]),
            ));
        }
        functions.insert(binary, res.clone());
    }
    let expected: BTreeSet<_> = ROUTES
        .iter()
        .map(|r| {
            (
                camel(r.op),
                r.method.to_string(),
                format!("{BASE_PATH}{}", r.path),
                r.function.name().to_owned(),
                access(r),
            )
        })
        .collect();
    let missing: Vec<_> = expected.difference(&declared).collect();
    let extra: Vec<_> = declared.difference(&expected).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "missing from the template: {missing:#?}\nnot in the route table: {extra:#?}"
    );

    // Every function crate has its function, and every function its crate.
    let names: BTreeSet<String> = Function::ALL.iter().map(|f| f.name().to_owned()).collect();
    assert_eq!(
        function_crates(),
        names,
        "functions/ and the route table's functions"
    );
    assert_eq!(
        functions.keys().cloned().collect::<BTreeSet<_>>(),
        names,
        "template functions"
    );

    // Least privilege: only functions with write routes write the data table; docs reads none.
    for (name, res) in &functions {
        let statements = res["Properties"]["Policies"][0]["Statement"]
            .as_sequence()
            .expect("Statement");
        let sids: BTreeSet<String> = statements.iter().map(|st| s(&st["Sid"])).collect();
        let writes = ROUTES
            .iter()
            .any(|r| r.function.name() == name && r.kind == Kind::Write);
        assert_eq!(
            sids.contains("WriteWithLog"),
            writes,
            "{name}: write access iff write routes"
        );
        assert_eq!(
            sids.contains("ReadData"),
            name != "docs",
            "{name}: data reads"
        );
        assert!(
            sids.contains("TokenLookup") && sids.contains("RateLimitCounter"),
            "{name}"
        );
        for st in statements {
            let text = serde_norway::to_string(st).unwrap_or_default();
            assert!(
                !text.contains("dynamodb:*")
                    && !text.contains("DeleteItem")
                    && !text.contains("Scan"),
                "{name}: {text}"
            );
        }
    }
}

#[test]
fn the_sam_template_builds_arm64_al2023_functions_over_tables_with_ttl_and_recovery() {
    let t = template();
    let globals = &t["Globals"]["Function"];
    assert_eq!(globals["Runtime"], "provided.al2023");
    assert_eq!(globals["Architectures"][0], "arm64");
    let env = &globals["Environment"]["Variables"];
    assert_eq!(env["NETOPS_STORE"], "dynamodb");
    // The cursor key comes from Secrets Manager, never a literal.
    let secret = serde_norway::to_string(&env["NETOPS_CURSOR_SECRET"]).unwrap_or_default();
    assert!(secret.contains("{{resolve:secretsmanager:"), "{secret}");
    for table in ["ControlTable", "DataTable"] {
        let p = &t["Resources"][table]["Properties"];
        assert_eq!(p["BillingMode"], "PAY_PER_REQUEST", "{table}");
        assert_eq!(
            p["TimeToLiveSpecification"]["AttributeName"], "ttl",
            "{table}"
        );
        assert_eq!(p["TimeToLiveSpecification"]["Enabled"], true, "{table}");
        assert_eq!(
            p["PointInTimeRecoverySpecification"]["PointInTimeRecoveryEnabled"], true,
            "{table}"
        );
    }
    for f in Function::ALL {
        let logs = &t["Resources"][format!("{}Logs", camel(f.name())).as_str()];
        assert_eq!(logs["Type"], "AWS::Logs::LogGroup", "{}", f.name());
    }
}

#[test]
fn the_cargo_lambda_watch_router_maps_every_route_to_its_function() {
    let text = std::fs::read_to_string(root().join("Cargo.toml")).expect("Cargo.toml");
    let manifest: toml::Table = toml::from_str(&text).expect("Cargo.toml parses");
    let router = manifest["workspace"]["metadata"]["lambda"]["watch"]["router"]
        .as_table()
        .expect("watch router");
    let mut declared = BTreeSet::new();
    for (path, routes) in router {
        if let Some(fallback) = routes.as_str() {
            assert_eq!(
                (path.as_str(), fallback),
                ("/api/v1/{*path}", "docs"),
                "the only catch-all: unknown paths to docs"
            );
            continue;
        }
        for r in routes.as_array().expect("a list of {method, function}") {
            declared.insert((
                r["method"].as_str().unwrap_or_default().to_owned(),
                path.clone(),
                r["function"].as_str().unwrap_or_default().to_owned(),
            ));
        }
    }
    let expected: BTreeSet<_> = ROUTES
        .iter()
        .map(|r| {
            (
                r.method.to_string(),
                format!("{BASE_PATH}{}", r.path),
                r.function.name().to_owned(),
            )
        })
        .collect();
    assert_eq!(declared, expected);
    // Each function the router names is a binary of the workspace.
    let crates = function_crates();
    assert!(declared.iter().all(|(_, _, f)| crates.contains(f)));
}

#[test]
fn every_api_gateway_event_parses_with_lambda_http_and_routes_to_its_function() {
    let dir = root().join("events");
    let Ok(folders) = std::fs::read_dir(&dir) else {
        eprintln!("skipped: no events/ folder yet");
        return;
    };
    let mut checked = 0;
    for folder in folders.filter_map(Result::ok) {
        let function = folder.file_name().to_string_lossy().into_owned();
        assert!(
            Function::ALL.iter().any(|f| f.name() == function),
            "events/{function} is not a function of the route table"
        );
        for file in std::fs::read_dir(folder.path())
            .expect("folder")
            .filter_map(Result::ok)
        {
            let path = file.path();
            if path.extension().and_then(|e| e.to_str()) != Some("json") {
                continue;
            }
            let text = std::fs::read_to_string(&path).expect("event file");
            let req = lambda_http::request::from_str(&text)
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let rest = req
                .uri()
                .path()
                .strip_prefix(BASE_PATH)
                .unwrap_or_else(|| panic!("{}: path outside {BASE_PATH}", path.display()));
            match find(req.method(), rest) {
                Match::Found(route) => assert_eq!(
                    route.function.name(),
                    function,
                    "{}: {} {} belongs to {}",
                    path.display(),
                    req.method(),
                    rest,
                    route.function.name()
                ),
                other => panic!(
                    "{}: {} {rest} matches no route: {other:?}",
                    path.display(),
                    req.method()
                ),
            }
            checked += 1;
        }
    }
    assert!(checked > 0, "events/ holds no event");
}
