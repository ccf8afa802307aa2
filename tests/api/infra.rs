//! The deployment descriptions cannot drift from the route table. The route and module lists
//! they repeat (the SAM template's events and scopes, the `cargo lambda watch` router of the
//! root `Cargo.toml`, the function crates among its dependencies, the data modules among
//! those of `api/` and `local/` and in `api/src/modules.rs`) are written by
//! `cargo xtask routes`, and the first test fails when the committed files differ from what
//! it writes; the others check what the generator does not
//! write: one function per crate, build settings, alarms and logs, and IAM grants by key,
//! checked against the keys each function really reaches. The `events/` payloads are checked
//! in `events.rs`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use netops_shared::routes::{BASE_PATH, Function, Kind, ROUTES};
use serde_norway::Value as Yaml;
use xtask::routes::camel;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn template() -> Yaml {
    let text =
        std::fs::read_to_string(root().join("infra/template.yaml")).expect("infra/template.yaml");
    serde_norway::from_str(&text).expect("template is YAML")
}

fn s(v: &Yaml) -> String {
    v.as_str().unwrap_or_default().to_owned()
}

/// The functions invoked on a schedule rather than behind the API: no route, no module.
const SCHEDULED: [&str; 1] = ["pass"];

/// The function crates under `functions/`.
fn function_crates() -> BTreeSet<String> {
    std::fs::read_dir(root().join("functions"))
        .expect("functions/")
        .filter_map(Result::ok)
        .filter(|e| e.path().join("Cargo.toml").exists())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect()
}

/// What `cargo xtask routes` writes is what is committed: run in-process over the files.
#[test]
fn the_route_and_module_lists_are_what_cargo_xtask_routes_writes() {
    let files = xtask::routes::generate(&root()).unwrap_or_else(|e| {
        panic!(
            "{e}\n(the command `{}` writes the route lists)",
            xtask::routes::COMMAND
        )
    });
    let stale: Vec<String> = files.iter().filter_map(|f| f.difference()).collect();
    assert!(
        stale.is_empty(),
        "the route and module lists differ from the route table: run `{}` and commit what it \
         writes\n{}",
        xtask::routes::COMMAND,
        stale.join("\n")
    );
}

#[test]
fn the_sam_template_has_one_function_per_crate_each_with_least_privilege() {
    let t = template();
    let resources = t["Resources"].as_mapping().expect("Resources");
    let mut functions = BTreeMap::new();
    // Routes declared outside the generated lines would be missed by the test above.
    let mut events = 0;
    let mut metadata_paths = BTreeSet::new();
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
        for (_, event) in res["Properties"]["Events"].as_mapping().expect("Events") {
            if SCHEDULED.contains(&binary.as_str()) {
                assert_eq!(event["Type"], "Schedule", "{id}");
                continue;
            }
            assert_eq!(event["Type"], "HttpApi", "{id}");
            if event["Properties"].get("Path").is_none() {
                assert_eq!(binary, "docs", "only docs takes the $default route");
                continue;
            }
            // The MCP endpoint's OAuth metadata, outside the versioned base and the table.
            let path = s(&event["Properties"]["Path"]);
            if path.starts_with(netops_shared::oauth::METADATA_PATH) {
                assert_eq!(binary, "mcp", "{path}");
                assert_eq!(event["Properties"]["Method"], "GET", "{path}");
                metadata_paths.insert(path);
                continue;
            }
            events += 1;
        }
        functions.insert(binary, res.clone());
    }
    let gets = ROUTES
        .iter()
        .filter(|r| r.method == http::Method::GET)
        .count();
    assert_eq!(
        events,
        ROUTES.len() + gets,
        "one API route per route of the table, and one for HEAD per GET route"
    );
    let mcp = format!("{}{BASE_PATH}/mcp", netops_shared::oauth::METADATA_PATH);
    assert_eq!(
        metadata_paths,
        BTreeSet::from([netops_shared::oauth::METADATA_PATH.to_owned(), mcp]),
        "the MCP endpoint's protected resource metadata, at both its paths"
    );

    // Every function crate has its function, and every function its crate.
    let names: BTreeSet<String> = Function::ALL
        .iter()
        .map(|f| f.name())
        .chain(SCHEDULED)
        .map(str::to_owned)
        .collect();
    assert_eq!(
        function_crates(),
        names,
        "functions/: the route table's functions and the scheduled ones"
    );
    assert_eq!(
        functions.keys().cloned().collect::<BTreeSet<_>>(),
        names,
        "template functions"
    );

    // Least privilege: only functions with write routes write the data table; docs reads none.
    for (name, res) in functions
        .iter()
        .filter(|(name, _)| !SCHEDULED.contains(&name.as_str()))
    {
        let statements = res["Properties"]["Policies"][0]["Statement"]
            .as_sequence()
            .expect("Statement");
        let sids: BTreeSet<String> = statements.iter().map(|st| s(&st["Sid"])).collect();
        let writes = ROUTES
            .iter()
            .any(|r| r.function.name() == name && r.kind == Kind::Write);
        assert_eq!(
            sids.contains("WriteState")
                && sids.contains("AppendWriteLog")
                && sids.contains("IdempotencyKeys"),
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
            // Nothing deletes but a write freeing its idempotency key, and the agent function
            // issuing, rotating and revoking agent credentials (a token name's guard item).
            let leading = &st["Condition"]["ForAllValues:StringLike"]["dynamodb:LeadingKeys"];
            let deletes_keys = (s(&st["Sid"]) == "IdempotencyKeys"
                && leading
                    .as_sequence()
                    .is_some_and(|k| k.len() == 1 && k[0] == "*|I"))
                || (name == "agent" && s(&st["Sid"]) == "IssueAgentCredentials");
            assert!(
                !text.contains("dynamodb:*")
                    && (!text.contains("DeleteItem") || deletes_keys)
                    && !text.contains("Scan"),
                "{name}: {text}"
            );
        }
    }
}

/// The scheduled pass reads the tenants (a scan of the tokens' tenant index, keys only),
/// their collection activity, their diagnostic actions and their machines, and writes only
/// the actions it expires and their events (docs/agent.md#actions) and the machines it marks
/// offline (docs/collect.md#the-scheduled-pass).
#[test]
fn the_scheduled_pass_reads_the_tenant_index_and_the_activity_only() {
    let t = template();
    let pass = &t["Resources"]["PassFunction"];
    assert_eq!(
        pass["Properties"]["Events"]["EveryMinute"]["Type"],
        "Schedule"
    );
    let statements = pass["Properties"]["Policies"][0]["Statement"]
        .as_sequence()
        .expect("Statement");
    let granted: Vec<(String, String)> = statements
        .iter()
        .map(|st| {
            (
                strings(&st["Action"]).join(","),
                serde_norway::to_string(&st["Resource"]).unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(granted.len(), 5, "{granted:?}");
    assert_eq!(granted[0].0, "dynamodb:Scan");
    assert!(granted[0].1.contains("ControlTable.Arn}/index/by_tenant"));
    assert_eq!(granted[1].0, "dynamodb:Query");
    assert_eq!(
        strings(&statements[1]["Condition"]["ForAllValues:StringLike"]["dynamodb:LeadingKeys"]),
        [
            "*|D|collect_activity",
            "*|S|netdiag_action_requests|*",
            "*|D|machines"
        ]
    );
    assert_eq!(
        strings(&statements[2]["Condition"]["ForAllValues:StringLike"]["dynamodb:LeadingKeys"]),
        ["*|D|netdiag_actions", "*|E|netdiag_action_requests"]
    );
    assert_eq!(
        strings(&statements[3]["Condition"]["ForAllValues:StringLike"]["dynamodb:LeadingKeys"]),
        [
            "*|D|netdiag_actions",
            "*|S|netdiag_events|*",
            "*|E|netdiag_events"
        ]
    );
    assert_eq!(granted[4].0, "dynamodb:UpdateItem");
    assert_eq!(
        strings(&statements[4]["Condition"]["ForAllValues:StringLike"]["dynamodb:LeadingKeys"]),
        ["*|D|machines"]
    );
}

#[test]
fn every_dynamodb_grant_is_limited_to_the_key_prefixes_of_its_module() {
    let grants = grants();
    let reads = |name: &str| -> BTreeSet<String> {
        grants[name]
            .iter()
            .filter(|g| g.actions.contains(&"dynamodb:Query".to_owned()))
            .flat_map(|g| g.leading.iter().cloned())
            .collect()
    };
    let writes = |name: &str| -> BTreeSet<String> {
        grants[name]
            .iter()
            .filter(|g| g.resources.iter().any(|(t, _)| t == "data"))
            .filter(|g| !g.actions.contains(&"dynamodb:Query".to_owned()))
            .flat_map(|g| g.leading.iter().cloned())
            .collect()
    };
    for (name, list) in &grants {
        for g in list {
            assert!(
                !g.leading.is_empty(),
                "{name}: {g:?} has no LeadingKeys condition"
            );
            for p in &g.leading {
                let control = g.resources.iter().all(|(t, _)| t == "control");
                let ok = if control {
                    // The agent function issues agent credentials: a token and its name's
                    // guard item.
                    p == "TOKEN|*" || p == "RL|*" || (name == "agent" && p == "TOKNAME|*")
                } else {
                    // `*|<kind>|<name>`: any tenant, one kind of item, one module's names.
                    let rest = p.strip_prefix("*|").unwrap_or_default();
                    let (kind, named) = rest.split_once('|').unwrap_or((rest, ""));
                    match kind {
                        "W" | "I" | "G" => named.is_empty(),
                        "D" | "S" | "E" | "R" => {
                            named.chars().take_while(|c| *c != '*').count() >= 3
                        }
                        _ => false,
                    }
                };
                assert!(ok, "{name}: pattern {p} is broader than a module's items");
            }
        }
    }
    // The writes of the contract, nothing else: alerts acknowledge incidents, netdiag changes a
    // machine's settings and queues actions, and both append to the write log and keep their
    // idempotency keys.
    let expected = |keys: &[&str]| {
        keys.iter()
            .map(|k| (*k).to_owned())
            .collect::<BTreeSet<_>>()
    };
    assert_eq!(
        writes("alerts"),
        expected(&["*|D|monitor_incidents", "*|D|siem_incidents", "*|I", "*|W"])
    );
    assert_eq!(
        writes("netdiag"),
        expected(&[
            "*|D|netdiag_actions",
            "*|D|netdiag_settings",
            "*|E|netdiag_action_requests",
            "*|I",
            "*|S|netdiag_action_requests|*",
            "*|W"
        ])
    );
    // The collection API writes the collected kinds' items and its ingestion log, and reads
    // none of the public routes' other data.
    assert_eq!(
        writes("collect"),
        expected(&[
            "*|D|collect_activity",
            "*|D|db_alerts.open",
            "*|D|db_checks",
            "*|D|db_instances",
            "*|D|dns_collection",
            "*|D|firewall_devices",
            "*|D|heartbeats",
            "*|D|inventory_asset_software",
            "*|D|inventory_assets",
            "*|D|inventory_cves",
            "*|D|inventory_software",
            "*|D|machines",
            "*|D|machines.count",
            "*|D|monitor_incidents",
            "*|D|monitor_incidents|*",
            "*|D|monitors",
            "*|D|netdiag_alerts",
            "*|D|netdiag_alerts|*",
            "*|D|netdiag_state",
            "*|D|network_devices",
            "*|D|network_ports",
            "*|D|network_sites",
            "*|D|network_tunnels",
            "*|D|profile_deployments",
            "*|D|profile_deployments.counts",
            "*|D|profile_deployments.ranked/*",
            "*|D|siem_episodes",
            "*|D|siem_incidents",
            "*|D|siem_incidents|*",
            "*|E|db_alerts",
            "*|E|db_blocking",
            "*|E|db_check_results",
            "*|E|db_metrics",
            "*|E|db_query_samples",
            "*|E|db_sessions",
            "*|E|db_slow_queries",
            "*|E|dns_resolutions",
            "*|E|dns_server_queries",
            "*|E|dns_threat_hits",
            "*|E|dns_threats",
            "*|E|file_events",
            "*|E|firewall_events",
            "*|E|firewall_events_rare",
            "*|E|flows.blocked",
            "*|E|flows.gateway",
            "*|E|flows.records",
            "*|E|monitor_checks",
            "*|E|netdiag_events",
            "*|E|netdiag_measures",
            "*|E|netdiag_periods",
            "*|E|network_metric_samples",
            "*|E|network_metrics",
            "*|E|network_tunnel_samples",
            "*|E|security_account_changes",
            "*|E|security_lockouts",
            "*|E|security_logons",
            "*|E|siem_events",
            "*|E|siem_rule_events",
            "*|G",
            "*|R|db_metrics/*",
            "*|R|db_query_stats/*",
            "*|R|dns_domain_machines.d",
            "*|R|dns_domain_machines.dh",
            "*|R|dns_domains.d",
            "*|R|dns_domains.dh",
            "*|R|dns_machine_domains/*",
            "*|R|file_folders.d",
            "*|R|file_folders.dh",
            "*|R|file_totals.d",
            "*|R|file_totals.dh",
            "*|R|file_users.d",
            "*|R|file_users.dh",
            "*|R|firewall_connections.dh",
            "*|R|firewall_report.d",
            "*|R|firewall_report.dh",
            "*|R|flows.cubex.d",
            "*|R|flows.cubex.dh",
            "*|R|flows.dest.agent.d",
            "*|R|flows.dest.agent.dh",
            "*|R|flows.dest.gateway.d",
            "*|R|flows.dest.gateway.dh",
            "*|R|flows.mdest/*",
            "*|R|flows.sum.dh",
            "*|R|flows.sum/*",
            "*|R|flows.talkers.d",
            "*|R|flows.talkers.dh",
            "*|R|flows.xp.*",
            "*|R|monitor_checks_daily",
            "*|R|monitor_checks_hourly",
            "*|R|~batches",
            "*|S|db_alerts|*",
            "*|S|db_blocking|*",
            "*|S|db_check_results|*",
            "*|S|db_metrics|*",
            "*|S|db_query_samples|*",
            "*|S|db_sessions|*",
            "*|S|db_slow_queries|*",
            "*|S|dns_resolutions|*",
            "*|S|dns_server_queries|*",
            "*|S|dns_threat_hits|*",
            "*|S|dns_threats|*",
            "*|S|file_events|*",
            "*|S|firewall_events_rare|*",
            "*|S|firewall_events|*",
            "*|S|flows.blocked|*",
            "*|S|flows.gateway|*",
            "*|S|flows.records|*",
            "*|S|monitor_checks|*",
            "*|S|netdiag_events|*",
            "*|S|netdiag_measures|*",
            "*|S|netdiag_periods|*",
            "*|S|network_metric_samples|*",
            "*|S|network_metrics|*",
            "*|S|network_tunnel_samples|*",
            "*|S|security_account_changes|*",
            "*|S|security_lockouts|*",
            "*|S|security_logons|*",
            "*|S|siem_events|*",
            "*|S|siem_rule_events|*",
        ])
    );
    // The agent API (docs/agent.md) writes the machines it enrolls, its agents, the actions
    // it claims and completes, and their events.
    assert_eq!(
        writes("agent"),
        expected(&[
            "*|D|machines",
            "*|D|machines.count",
            "*|D|netdiag_actions",
            "*|D|netdiag_agents",
            "*|E|netdiag_events",
            "*|S|netdiag_events|*",
        ])
    );
    for name in grants
        .keys()
        .filter(|n| !["alerts", "netdiag", "collect", "agent"].contains(&n.as_str()))
    {
        assert!(writes(name).is_empty(), "{name} writes {:?}", writes(name));
    }
    // MCP serves every JSON read route: it reads what every module reads, and no more.
    let every: BTreeSet<String> = grants
        .keys()
        .filter(|n| !["mcp", "docs", "collect", "agent"].contains(&n.as_str()))
        .flat_map(|n| reads(n))
        .collect();
    assert_eq!(reads("mcp"), every);
    assert!(reads("docs").is_empty());
}

#[test]
fn the_sam_template_builds_arm64_al2023_functions_over_tables_with_ttl_and_recovery() {
    let t = template();
    let globals = &t["Globals"]["Function"];
    assert_eq!(globals["Runtime"], "provided.al2023");
    assert_eq!(globals["Architectures"][0], "arm64");
    let env = &globals["Environment"]["Variables"];
    assert_eq!(env["NETOPS_STORE"], "dynamodb");
    // The cursor key ring is read from Secrets Manager by the functions themselves: neither a
    // literal nor a value resolved into the configuration, and every function may read it.
    assert!(env.get("NETOPS_CURSOR_SECRET").is_none());
    let secret = serde_norway::to_string(&env["NETOPS_CURSOR_SECRET_ARN"]).unwrap_or_default();
    assert!(secret.contains("CursorSecret"), "{secret}");
    let read = serde_norway::to_string(&t["Resources"]["CursorKeyRead"]).unwrap_or_default();
    assert!(
        read.contains("secretsmanager:GetSecretValue") && !read.contains("secretsmanager:*"),
        "{read}"
    );
    for (id, res) in t["Resources"].as_mapping().expect("Resources") {
        let binary = s(&res["Metadata"]["BuildProperties"]["Binary"]);
        // The scheduled pass makes no cursor.
        if res["Type"] == "AWS::Serverless::Function" && !SCHEDULED.contains(&binary.as_str()) {
            let policies =
                serde_norway::to_string(&res["Properties"]["Policies"]).unwrap_or_default();
            assert!(
                policies.contains("CursorKeyRead"),
                "{}: reads the cursor keys",
                s(id)
            );
        }
    }
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

/// CORS is configured once for the stack: a `CorsOrigins` parameter (empty, CORS off, by
/// default), which every function reads as `NETOPS_CORS_ORIGINS` and none overrides, so that
/// the preflights the docs function answers for every path (the `$default` route) follow the
/// same rules as the answers of the function that serves the path.
#[test]
fn the_cors_origins_parameter_reaches_every_function() {
    let t = template();
    let parameter = &t["Parameters"]["CorsOrigins"];
    assert_eq!(parameter["Type"], "String");
    assert_eq!(parameter["Default"], "");
    let env = &t["Globals"]["Function"]["Environment"]["Variables"]["NETOPS_CORS_ORIGINS"];
    let env = serde_norway::to_string(env).unwrap_or_default();
    assert!(
        env.contains("!Ref") && env.contains("CorsOrigins"),
        "NETOPS_CORS_ORIGINS: {env}"
    );
    for (id, res) in t["Resources"].as_mapping().expect("Resources") {
        let own = &res["Properties"]["Environment"]["Variables"];
        assert!(
            own.get("NETOPS_CORS_ORIGINS").is_none(),
            "{} sets its own NETOPS_CORS_ORIGINS",
            s(id)
        );
    }
    // The pattern keeps out what the functions would refuse to start on anyway.
    let pattern = parameter["AllowedPattern"]
        .as_str()
        .expect("AllowedPattern");
    assert!(pattern.contains('*'), "{pattern}");
}

/// `sam build` runs `cargo lambda build --release --arm64 --bin <Binary>` in each function's
/// `CodeUri`: the test command builds one function that way, and this keeps every other
/// function's settings the same, so each builds alike.
#[test]
fn every_function_builds_from_its_own_crate_for_arm64_like_the_others() {
    let t = template();
    for (id, res) in t["Resources"].as_mapping().expect("Resources") {
        if res["Type"] != "AWS::Serverless::Function" {
            continue;
        }
        let binary = s(&res["Metadata"]["BuildProperties"]["Binary"]);
        let props = &res["Properties"];
        assert_eq!(
            s(&props["CodeUri"]),
            format!("../functions/{binary}"),
            "{}: builds in its own crate",
            s(id)
        );
        for inherited in ["Runtime", "Architectures", "Handler", "CodeUri"] {
            if inherited != "CodeUri" {
                assert!(
                    props.get(inherited).is_none(),
                    "{}: {inherited} is set globally",
                    s(id)
                );
            }
        }
        let manifest: toml::Table = toml::from_str(
            &std::fs::read_to_string(root().join(format!("functions/{binary}/Cargo.toml")))
                .expect("Cargo.toml"),
        )
        .expect("manifest");
        let bins: Vec<&str> = manifest["bin"]
            .as_array()
            .expect("[[bin]]")
            .iter()
            .filter_map(|b| b["name"].as_str())
            .collect();
        assert_eq!(
            bins,
            [binary.as_str()],
            "functions/{binary} has one binary, the function"
        );
    }
    // What cargo lambda makes of `--release`: size-tuned code for every package.
    let text = std::fs::read_to_string(root().join("Cargo.toml")).expect("Cargo.toml");
    let manifest: toml::Table = toml::from_str(&text).expect("Cargo.toml parses");
    let config: Vec<&str> = manifest["workspace"]["metadata"]["lambda"]["build"]["config"]
        .as_array()
        .expect("lambda build config")
        .iter()
        .filter_map(|v| v.as_str())
        .collect();
    for setting in [
        "profile.release.opt-level=\"z\"",
        "profile.release.lto=\"fat\"",
        "profile.release.codegen-units=1",
        "profile.release.panic=\"abort\"",
    ] {
        assert!(config.contains(&setting), "{setting} in {config:?}");
    }
}

#[test]
fn operators_get_alarms_per_function_json_access_logs_and_sane_throttling() {
    let t = template();
    let resources = t["Resources"].as_mapping().expect("Resources");
    let alarms: Vec<&Yaml> = resources
        .values()
        .filter(|r| r["Type"] == "AWS::CloudWatch::Alarm")
        .collect();
    // Lambda errors, throttles and p99 duration of every function.
    for f in Function::ALL {
        let logical = format!("{}Function", camel(f.name()));
        for (metric, stat) in [("Errors", "Sum"), ("Throttles", "Sum"), ("Duration", "p99")] {
            let found = alarms.iter().any(|a| {
                let p = &a["Properties"];
                p["Namespace"] == "AWS/Lambda"
                    && p["MetricName"] == metric
                    && (p["Statistic"] == stat || p["ExtendedStatistic"] == stat)
                    && serde_norway::to_string(&p["Dimensions"])
                        .unwrap_or_default()
                        .contains(&logical)
            });
            assert!(found, "{}: no {stat} {metric} alarm", f.name());
        }
    }
    // The API's 5xx rate, and DynamoDB throttling of both tables.
    let text: Vec<String> = alarms
        .iter()
        .map(|a| serde_norway::to_string(a).unwrap_or_default())
        .collect();
    assert!(
        text.iter()
            .any(|a| a.contains("AWS/ApiGateway") && a.contains("5xx") && a.contains("Count"))
    );
    for table in ["ControlTable", "DataTable"] {
        assert!(
            text.iter().any(|a| a.contains("ReadThrottleEvents")
                && a.contains("WriteThrottleEvents")
                && a.contains(table)),
            "{table}: no throttle alarm"
        );
    }
    // Access logs: one JSON object per request, carrying the request id.
    let api = &t["Resources"]["HttpApi"]["Properties"];
    let format = s(&api["AccessLogSettings"]["Format"]);
    let sample = format.replace('$', "");
    let line: serde_json::Value =
        serde_json::from_str(&sample).expect("the access log format is JSON");
    assert_eq!(line["requestId"], "context.requestId");
    for key in ["status", "routeKey", "responseLatency", "integrationError"] {
        assert!(line.get(key).is_some(), "access log lacks {key}");
    }
    // Throttling: the burst (a bucket) is never below the steady rate.
    let route = &api["DefaultRouteSettings"];
    let (burst, rate) = (
        route["ThrottlingBurstLimit"].as_u64().expect("burst"),
        route["ThrottlingRateLimit"].as_f64().expect("rate"),
    );
    assert!(burst as f64 >= rate, "burst {burst} below rate {rate}");
    // The per-request line is the functions' EMF line; the gate's own would repeat it.
    let env = &t["Globals"]["Function"]["Environment"]["Variables"];
    assert_eq!(env["RUST_LOG"], "info,netops_shared::http=warn");
}

/// The router's entries are generated, but for the catch-all; this reads the whole table as
/// cargo lambda does.
/// The dashboard, the 429 surge alarm and the saved usage queries reach every function: a
/// function added without them fails here.
#[test]
fn operators_get_a_dashboard_a_429_surge_alarm_and_usage_queries_over_every_function() {
    let t = template();
    let resources = t["Resources"].as_mapping().expect("Resources");
    let text = |v: &Yaml| serde_norway::to_string(v).unwrap_or_default();
    // The dashboard's body is valid JSON once CloudFormation substitutes its names, and shows
    // the API and both tables.
    let body = match &t["Resources"]["Dashboard"]["Properties"]["DashboardBody"] {
        Yaml::Tagged(tagged) => s(&tagged.value),
        other => s(other),
    };
    for name in [
        "${HttpApi}",
        "${ControlTable}",
        "${DataTable}",
        "RateLimited",
    ] {
        assert!(body.contains(name), "the dashboard shows {name}");
    }
    let mut substituted = String::new();
    let mut rest = body.as_str();
    while let Some(at) = rest.find("${") {
        let end = rest[at..].find('}').expect("a closed ${...}");
        substituted.push_str(&rest[..at]);
        substituted.push('x');
        rest = &rest[at + end + 1..];
    }
    substituted.push_str(rest);
    let doc: serde_json::Value = serde_json::from_str(&substituted).expect("dashboard JSON");
    assert!(doc["widgets"].as_array().is_some_and(|w| w.len() >= 6));
    // 429s counted from the access log, and an alarm on their share of the answers.
    let filter = &t["Resources"]["RateLimitedMetric"];
    assert_eq!(filter["Type"], "AWS::Logs::MetricFilter");
    assert!(text(&filter["Properties"]["FilterPattern"]).contains("429"));
    assert!(
        resources
            .values()
            .any(|r| r["Type"] == "AWS::CloudWatch::Alarm"
                && text(r).contains("RateLimited")
                && text(r).contains("AWS/ApiGateway"))
    );
    // Every saved query reads every function's log group.
    let queries: Vec<&Yaml> = resources
        .values()
        .filter(|r| r["Type"] == "AWS::Logs::QueryDefinition")
        .collect();
    assert!(queries.iter().any(|q| text(q).contains("by tenant")));
    for q in queries {
        let groups = text(&q["Properties"]["LogGroupNames"]);
        for f in Function::ALL {
            let logs = format!("{}Logs", camel(f.name()));
            assert!(groups.contains(&logs), "a saved query misses {logs}");
        }
    }
}

#[test]
fn the_cargo_lambda_watch_router_sends_any_other_path_to_docs() {
    let text = std::fs::read_to_string(root().join("Cargo.toml")).expect("Cargo.toml");
    let manifest: toml::Table = toml::from_str(&text).expect("Cargo.toml parses");
    let router = manifest["workspace"]["metadata"]["lambda"]["watch"]["router"]
        .as_table()
        .expect("watch router");
    let fallbacks: Vec<(&str, &str)> = router
        .iter()
        .filter_map(|(path, to)| Some((path.as_str(), to.as_str()?)))
        .collect();
    assert_eq!(
        fallbacks,
        [("/api/v1/{*path}", "docs")],
        "the only catch-all: unknown paths to docs"
    );
    let paths: BTreeSet<String> = ROUTES
        .iter()
        .map(|r| format!("{BASE_PATH}{}", r.path))
        .collect();
    assert_eq!(
        router.len(),
        paths.len() + 1,
        "a path per route path, and the catch-all"
    );
}

/// One DynamoDB item access as IAM sees it: the action, the table (and index) and the
/// partition key value that `dynamodb:LeadingKeys` is matched against.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct ItemAccess {
    action: String,
    /// `control` or `data`.
    table: String,
    index: Option<String>,
    key: String,
}

fn attr(v: &serde_json::Value) -> String {
    v["S"].as_str().unwrap_or_default().to_owned()
}

/// The table's role (`control`, `data`) from its name `<prefix><role>`.
fn role(table: &serde_json::Value) -> String {
    let name = table.as_str().unwrap_or_default();
    ["control", "data"]
        .into_iter()
        .find(|r| name.ends_with(r))
        .unwrap_or(name)
        .to_owned()
}

/// The accesses one DynamoDB request makes (`target` is its `X-Amz-Target` operation).
fn accesses(target: &str, body: &serde_json::Value) -> Vec<ItemAccess> {
    let one =
        |action: &str, table: &serde_json::Value, index: Option<String>, key: String| ItemAccess {
            action: format!("dynamodb:{action}"),
            table: role(table),
            index,
            key,
        };
    match target {
        "GetItem" | "UpdateItem" | "DeleteItem" => {
            vec![one(
                target,
                &body["TableName"],
                None,
                attr(&body["Key"]["pk"]),
            )]
        }
        "PutItem" => vec![one(
            target,
            &body["TableName"],
            None,
            attr(&body["Item"]["pk"]),
        )],
        "Query" => {
            // The partition key's placeholder is the first `<name> = :<value>` of the condition.
            let cond = body["KeyConditionExpression"].as_str().unwrap_or_default();
            let placeholder = cond
                .split_once(" = ")
                .map(|(_, rest)| rest.split_whitespace().next().unwrap_or_default())
                .unwrap_or_default();
            let index = body["IndexName"].as_str().map(str::to_owned);
            let key = attr(&body["ExpressionAttributeValues"][placeholder]);
            vec![one(target, &body["TableName"], index, key)]
        }
        "TransactWriteItems" => body["TransactItems"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|item| {
                item.as_object().into_iter().flatten().map(|(kind, op)| {
                    let (action, key) = match kind.as_str() {
                        "Put" => ("PutItem", attr(&op["Item"]["pk"])),
                        "Update" => ("UpdateItem", attr(&op["Key"]["pk"])),
                        "Delete" => ("DeleteItem", attr(&op["Key"]["pk"])),
                        _ => ("ConditionCheckItem", attr(&op["Key"]["pk"])),
                    };
                    one(action, &op["TableName"], None, key)
                })
            })
            .collect(),
        "BatchGetItem" | "BatchWriteItem" => body["RequestItems"]
            .as_object()
            .into_iter()
            .flatten()
            .flat_map(|(table, requests)| {
                let table = serde_json::Value::String(table.clone());
                let keys: Vec<String> = match target {
                    "BatchGetItem" => requests["Keys"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .map(|k| attr(&k["pk"]))
                        .collect(),
                    _ => requests
                        .as_array()
                        .into_iter()
                        .flatten()
                        .map(|r| attr(&r["PutRequest"]["Item"]["pk"]))
                        .collect(),
                };
                keys.into_iter()
                    .map(move |k| one(target, &table, None, k))
                    .collect::<Vec<_>>()
            })
            .collect(),
        other => vec![one(other, &body["TableName"], None, String::new())],
    }
}

/// A proxy in front of the DynamoDB-protocol server that records every access it forwards.
async fn recording_proxy(upstream: String) -> (String, Arc<Mutex<Vec<ItemAccess>>>) {
    let log = Arc::new(Mutex::new(Vec::new()));
    let client = reqwest::Client::new();
    let recorded = log.clone();
    let app = axum::Router::new().fallback(move |headers: http::HeaderMap, body: bytes::Bytes| {
        let (client, upstream, recorded) = (client.clone(), upstream.clone(), recorded.clone());
        async move {
            let target = headers
                .get("x-amz-target")
                .and_then(|v| v.to_str().ok())
                .and_then(|t| t.rsplit('.').next())
                .unwrap_or_default()
                .to_owned();
            let json = serde_json::from_slice(&body).unwrap_or_default();
            recorded
                .lock()
                .expect("log")
                .extend(accesses(&target, &json));
            let mut forward = client.post(&upstream).body(body);
            for (k, v) in &headers {
                if k != http::header::HOST && k != http::header::CONTENT_LENGTH {
                    forward = forward.header(k, v);
                }
            }
            let answer = forward.send().await.expect("upstream");
            let mut res = http::Response::builder().status(answer.status());
            for (k, v) in answer.headers() {
                if k != http::header::CONTENT_LENGTH && k != http::header::TRANSFER_ENCODING {
                    res = res.header(k, v);
                }
            }
            let bytes = answer.bytes().await.expect("upstream body");
            res.body(axum::body::Body::from(bytes)).expect("response")
        }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move { axum::serve(listener, app).await });
    (format!("http://{addr}"), log)
}

/// One DynamoDB statement of a function's policy.
#[derive(Debug)]
struct Grant {
    actions: Vec<String>,
    /// (table, index) pairs.
    resources: Vec<(String, Option<String>)>,
    /// `dynamodb:LeadingKeys` patterns (`ForAllValues:StringLike`); empty: none.
    leading: Vec<String>,
}

fn strings(v: &Yaml) -> Vec<String> {
    match v {
        Yaml::Sequence(items) => items.iter().map(s).collect(),
        other => vec![s(other)],
    }
}

/// The DynamoDB statements of every function's policy, by function name.
fn grants() -> BTreeMap<String, Vec<Grant>> {
    let t = template();
    let mut all = BTreeMap::new();
    for (_, res) in t["Resources"].as_mapping().expect("Resources") {
        if res["Type"] != "AWS::Serverless::Function" {
            continue;
        }
        let name = s(&res["Metadata"]["BuildProperties"]["Binary"]);
        if SCHEDULED.contains(&name.as_str()) {
            continue;
        }
        let statements = res["Properties"]["Policies"][0]["Statement"]
            .as_sequence()
            .expect("Statement");
        let grants = statements
            .iter()
            .map(|st| {
                let resources = match &st["Resource"] {
                    Yaml::Sequence(items) => items.clone(),
                    one => vec![one.clone()],
                };
                Grant {
                    actions: strings(&st["Action"]),
                    resources: resources
                        .iter()
                        .map(|r| {
                            let text = serde_norway::to_string(r).unwrap_or_default();
                            let table = if text.contains("ControlTable") {
                                "control"
                            } else {
                                "data"
                            };
                            let index = text
                                .split_once("/index/")
                                .map(|(_, i)| i.trim().trim_end_matches('\'').to_owned());
                            (table.to_owned(), index)
                        })
                        .collect(),
                    leading: strings(
                        &st["Condition"]["ForAllValues:StringLike"]["dynamodb:LeadingKeys"],
                    )
                    .into_iter()
                    .filter(|p| !p.is_empty())
                    .collect(),
                }
            })
            .collect();
        all.insert(name, grants);
    }
    all
}

/// IAM's `StringLike`: `*` any run of characters, `?` any one.
fn like(pattern: &str, text: &str) -> bool {
    let (p, t): (Vec<char>, Vec<char>) = (pattern.chars().collect(), text.chars().collect());
    let (mut pi, mut ti, mut star, mut mark) = (0, 0, None, 0);
    while ti < t.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == t[ti]) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some(pi);
            mark = ti;
            pi += 1;
        } else if let Some(sp) = star {
            pi = sp + 1;
            mark += 1;
            ti = mark;
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

fn admitted(grants: &[Grant], a: &ItemAccess) -> bool {
    grants.iter().any(|g| {
        g.actions.contains(&a.action)
            && g.resources.contains(&(a.table.clone(), a.index.clone()))
            && g.leading.iter().any(|p| like(p, &a.key))
    })
}

#[test]
fn iam_string_like_matches_as_iam_does() {
    assert!(like("*|D|netdiag_settings", "acme|D|netdiag_settings"));
    assert!(like("TOKEN|*", "TOKEN|ab12"));
    assert!(like("*|S|flows.*", "globex|S|flows.records|p|gx-nyc-lt001"));
    assert!(!like("*|D|netdiag_settings", "acme|D|netdiag_settings_old"));
    assert!(!like("*|W", "acme|W|x"));
    assert!(like("*|D|monitor*", "acme|D|monitor_incidents"));
    assert!(like("a?c", "abc") && !like("a?c", "ac"));
}

/// Requests whose reads the events do not cover (another series by window, a machine filter
/// looked up in the fleet, another kind of alert).
const EXTRA_READS: &[(&str, &str)] = &[
    (
        "alerts",
        "/api/v1/alerts?kind=netdiag&status=all&period=30d",
    ),
    ("flows", "/api/v1/flows?machine=PAR-LT-0001"),
    ("flows", "/api/v1/flows/summary?period=30d"),
    ("flows", "/api/v1/flows/talkers?period=1h"),
    ("dns", "/api/v1/dns/resolutions?machine=PAR-LT-0001"),
    (
        "netdiag",
        "/api/v1/netdiag/machines/PAR-LT-0001/events?period=30d",
    ),
    ("security", "/api/v1/security/logons?period=30d"),
    ("firewall", "/api/v1/firewall/events?period=24h"),
];

/// Every function, as deployed (its own router over DynamoDB), runs its `events/` payloads and
/// [`EXTRA_READS`] through a recorder in front of the DynamoDB-protocol server: each item it
/// reaches must be admitted by its policy's `dynamodb:LeadingKeys` grants.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_function_reaches_only_the_dynamodb_keys_its_policy_admits() {
    use netops_shared::config::{Config, StoreKind};
    use netops_store_dynamodb::DynamoConfig;
    use tower::ServiceExt;

    let Some(endpoint) = crate::aws::endpoint() else {
        return;
    };
    let seeding = Config {
        store: StoreKind::Dynamodb,
        dynamodb: DynamoConfig {
            table_prefix: format!("iam{:016x}-", crate::helpers::rand_u64()),
            endpoint: Some(endpoint.clone()),
            region: Some("us-east-1".into()),
            // What is checked is the keys reached, not how fast moto answers them.
            timeout_secs: crate::helpers::moto_timeout_secs().unwrap_or(30),
            ..DynamoConfig::default()
        },
        ..Config::default()
    };
    let stores = netops::open_configured(&seeding).await.expect("tables");
    netops::seed_demo(&stores, netops::SeedSize::default())
        .await
        .expect("seed");
    let (token, _) = netops_shared::auth::create_token(
        stores.tokens.as_ref(),
        "acme",
        "iam",
        netops_shared::Scope::ALL.to_vec(),
        chrono::Duration::days(1),
    )
    .await
    .expect("token");
    let (collector, _) = netops_shared::auth::create_token(
        stores.tokens.as_ref(),
        "acme",
        "iam-collect",
        netops_shared::Scope::COLLECT.to_vec(),
        chrono::Duration::days(1),
    )
    .await
    .expect("token");
    let (enroller, agent) = crate::helpers::agent_tokens(&stores).await;
    let (proxy, log) = recording_proxy(endpoint.clone()).await;
    let grants = grants();
    let mut refused = Vec::new();
    for module in netops::modules() {
        let name = module.function.name();
        // The function as deployed: its own router, over DynamoDB through the recorder.
        let config = Config {
            store: StoreKind::Dynamodb,
            cursor_secret: Some(b"deployment secret".to_vec()),
            dynamodb: DynamoConfig {
                endpoint: Some(proxy.clone()),
                ..seeding.dynamodb.clone()
            },
            ..Config::default()
        };
        let stores = netops_lambda::open(&config).await.expect("stores");
        let state = netops_shared::AppState::new(&stores, config)
            .await
            .expect("state");
        let (router, _) = utoipa_axum::router::OpenApiRouter::new()
            .merge((module.routes)())
            .split_for_parts();
        let app = netops_shared::http::app(router, state);
        log.lock().expect("log").clear();
        let dir = root().join("events").join(name);
        let mut files: Vec<_> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("events/{name}: {e}"))
            .filter_map(Result::ok)
            .map(|e| e.path())
            .collect();
        files.sort();
        let token = match module.function {
            netops_shared::routes::Function::Collect => &collector,
            netops_shared::routes::Function::Agent => &agent,
            _ => &token,
        };
        for file in files {
            let token = if file.ends_with("enroll_agent.json") {
                &enroller
            } else {
                token
            };
            let text = crate::helpers::event_text(&file, module.function);
            let mut req = lambda_http::request::from_str(&text).expect("event parses");
            req.headers_mut().insert(
                http::header::AUTHORIZATION,
                http::HeaderValue::from_str(&format!("Bearer {token}")).expect("header"),
            );
            let res = crate::helpers::into_test_response(
                app.clone().oneshot(req).await.expect("infallible"),
            )
            .await;
            assert!(
                res.status.is_success(),
                "{}: {} {}",
                file.display(),
                res.status,
                res.body
            );
        }
        // Reads that depend on parameters the events do not use.
        for (_, path) in EXTRA_READS.iter().filter(|(f, _)| *f == name) {
            let req = http::Request::builder()
                .uri(*path)
                .header("authorization", format!("Bearer {token}"))
                .body(axum::body::Body::empty())
                .expect("request");
            let res = crate::helpers::into_test_response(
                app.clone().oneshot(req).await.expect("infallible"),
            )
            .await;
            assert!(
                res.status.is_success(),
                "{path}: {} {}",
                res.status,
                res.body
            );
        }
        let seen: BTreeSet<ItemAccess> = log.lock().expect("log").drain(..).collect();
        assert!(name == "docs" || !seen.is_empty(), "{name} reached no item");
        let mine = grants.get(name).map(Vec::as_slice).unwrap_or_default();
        refused.extend(
            seen.into_iter()
                .filter(|a| !admitted(mine, a))
                .map(|a| format!("{name}: {a:?}")),
        );
    }
    assert!(
        refused.is_empty(),
        "accesses the policies refuse:\n{}",
        refused.join("\n")
    );
}
