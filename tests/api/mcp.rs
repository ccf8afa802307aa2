//! MCP entry point: `POST /mcp` (docs/mcp.md), spoken as an assistant's
//! client would, over the whole API.

use std::collections::BTreeSet;

use http::{Method, StatusCode};
use netops_shared::config::Config;
use netops_shared::routes::{Kind, ROUTES};
use netops_shared::scope::Scope;
use serde_json::{Value, json};

use crate::helpers::{TestApp, TestResponse};

async fn rpc(app: &TestApp, token: &str, message: Value) -> TestResponse {
    app.send(Method::POST, "/mcp", token, message).await
}

async fn raw(app: &TestApp, token: &str, body: &str, headers: &[(&str, &str)]) -> TestResponse {
    let mut all = vec![("content-type", "application/json")];
    all.extend_from_slice(headers);
    app.request(
        Method::POST,
        "/mcp",
        Some(token),
        Some(body.as_bytes().to_vec()),
        &all,
    )
    .await
}

async fn call(app: &TestApp, token: &str, name: &str, arguments: Value) -> TestResponse {
    let res = rpc(
        app,
        token,
        json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": name, "arguments": arguments}}),
    )
    .await;
    assert_eq!(res.status, StatusCode::OK, "{}", res.body);
    res
}

/// The whole tool list, page after page: the names, the definitions and each page's size.
async fn tool_names(app: &TestApp, token: &str) -> (BTreeSet<String>, Vec<Value>, Vec<usize>) {
    let mut tools = Vec::new();
    let mut sizes = Vec::new();
    let mut cursor = Value::Null;
    loop {
        let res = rpc(
            app,
            token,
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"cursor": cursor}}),
        )
        .await;
        assert_eq!(res.status, StatusCode::OK, "{}", res.body);
        sizes.push(res.bytes.len());
        tools.extend(
            res.body["result"]["tools"]
                .as_array()
                .cloned()
                .expect("tools"),
        );
        cursor = res.body["result"]["nextCursor"].clone();
        if cursor.is_null() {
            break;
        }
        assert!(sizes.len() < 20, "the pages end");
    }
    let names = tools
        .iter()
        .map(|t| t["name"].as_str().expect("name").to_owned())
        .collect();
    (names, tools, sizes)
}

fn error_code(res: &TestResponse) -> i64 {
    res.body["error"]["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("no JSON-RPC error: {}", res.body))
}

#[tokio::test]
async fn every_message_needs_a_valid_token_before_anything_else() {
    let app = TestApp::shared();
    let ping = br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#.to_vec();
    let res = app
        .request(Method::POST, "/mcp", None, Some(ping.clone()), &[])
        .await;
    assert_eq!(res.status, StatusCode::UNAUTHORIZED);
    assert_eq!(res.error(), "unauthorized");
    let bogus = "nop_0000000000000000000000000000000000000000";
    let res = app
        .request(
            Method::POST,
            "/mcp",
            Some(bogus),
            Some(b"not json".to_vec()),
            &[],
        )
        .await;
    assert_eq!(
        res.status,
        StatusCode::UNAUTHORIZED,
        "401 comes before the body is read"
    );
    let res = app.request(Method::GET, "/mcp", None, None, &[]).await;
    assert_eq!(res.status, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn get_and_delete_answer_405_with_post_allowed() {
    let app = TestApp::shared();
    let token = app.full_token().await;
    for method in [Method::GET, Method::DELETE] {
        let res = app
            .request(method.clone(), "/mcp", Some(&token), None, &[])
            .await;
        assert_eq!(res.status, StatusCode::METHOD_NOT_ALLOWED, "{method}");
        assert_eq!(res.error(), "method_not_allowed");
        assert_eq!(res.header("allow"), Some("POST"));
    }
}

#[tokio::test]
async fn initialize_negotiates_each_supported_protocol_version() {
    let app = TestApp::shared();
    let token = app.full_token().await;
    for (asked, agreed) in [
        ("2025-03-26", "2025-03-26"),
        ("2025-06-18", "2025-06-18"),
        ("2025-11-25", "2025-11-25"),
        ("2024-11-05", "2025-11-25"),
        ("2099-01-01", "2025-11-25"),
    ] {
        let res = rpc(
            app,
            &token,
            json!({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {
                "protocolVersion": asked, "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}}),
        )
        .await;
        assert_eq!(res.status, StatusCode::OK);
        let r = &res.body["result"];
        assert_eq!(res.body["id"], "init");
        assert_eq!(r["protocolVersion"], agreed, "asked {asked}");
        assert!(r["capabilities"]["tools"].is_object());
        assert_eq!(r["serverInfo"]["name"], "netops");
        assert!(r["instructions"].as_str().is_some_and(|i| !i.is_empty()));
        assert!(
            res.header("mcp-session-id").is_none(),
            "the server is stateless"
        );
    }
    let res = rpc(
        app,
        &token,
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}),
    )
    .await;
    assert_eq!(error_code(&res), -32602, "protocolVersion is required");
}

#[tokio::test]
async fn ping_answers_an_empty_object() {
    let app = TestApp::shared();
    let token = app.full_token().await;
    let res = rpc(
        app,
        &token,
        json!({"jsonrpc": "2.0", "id": 3, "method": "ping"}),
    )
    .await;
    assert_eq!(res.status, StatusCode::OK);
    assert_eq!(res.body, json!({"jsonrpc": "2.0", "id": 3, "result": {}}));
    assert_eq!(res.header("content-type"), Some("application/json"));
}

#[tokio::test]
async fn notifications_and_client_responses_get_202_without_body() {
    let app = TestApp::shared();
    let token = app.full_token().await;
    for message in [
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}),
        json!({"jsonrpc": "2.0", "method": "some/unknown/notification"}),
        json!({"jsonrpc": "2.0", "id": 9, "result": {}}),
    ] {
        let res = rpc(app, &token, message.clone()).await;
        assert_eq!(res.status, StatusCode::ACCEPTED, "{message}");
        assert!(res.bytes.is_empty(), "{message}");
    }
}

#[tokio::test]
async fn an_unparsable_body_is_a_parse_error() {
    let app = TestApp::shared();
    let token = app.full_token().await;
    for body in ["{not json", "", "{\"jsonrpc\": \"2.0\", "] {
        let res = raw(app, &token, body, &[]).await;
        assert_eq!(res.status, StatusCode::BAD_REQUEST, "{body:?}");
        assert_eq!(error_code(&res), -32700);
        assert_eq!(res.body["id"], Value::Null);
    }
}

#[tokio::test]
async fn a_message_that_is_not_a_json_rpc_request_is_invalid() {
    let app = TestApp::shared();
    let token = app.full_token().await;
    for message in [
        json!(42),
        json!("ping"),
        json!([]),
        json!({"id": 1, "method": "ping"}),
        json!({"jsonrpc": "1.0", "id": 1, "method": "ping"}),
        json!({"jsonrpc": "2.0", "id": 1, "method": 5}),
        json!({"jsonrpc": "2.0", "id": 1}),
        json!({"jsonrpc": "2.0", "id": {"a": 1}, "method": "ping"}),
        json!({"jsonrpc": "2.0", "id": null, "method": "ping"}),
        json!({"jsonrpc": "2.0", "id": 1.5, "method": "ping"}),
    ] {
        let res = rpc(app, &token, message.clone()).await;
        assert_eq!(res.status, StatusCode::BAD_REQUEST, "{message}");
        assert_eq!(error_code(&res), -32600, "{message}");
    }
    let res = rpc(
        app,
        &token,
        json!({"jsonrpc": "1.0", "id": "x", "method": "ping"}),
    )
    .await;
    assert_eq!(res.body["id"], "x", "a readable id is echoed");
}

#[tokio::test]
async fn unknown_methods_are_not_found_so_newer_clients_fall_back() {
    let app = TestApp::shared();
    let token = app.full_token().await;
    for method in [
        "server/discover",
        "resources/list",
        "completion/complete",
        "tools/delete",
    ] {
        let res = rpc(
            app,
            &token,
            json!({"jsonrpc": "2.0", "id": 4, "method": method}),
        )
        .await;
        assert_eq!(res.status, StatusCode::OK, "{method}");
        assert_eq!(error_code(&res), -32601, "{method}");
        assert_eq!(res.body["id"], 4);
    }
}

#[tokio::test]
async fn unknown_tools_and_bad_params_are_invalid_params() {
    let app = TestApp::shared();
    let token = app.full_token().await;
    let cases = [
        json!({"name": "drop_database"}),
        json!({"name": "acknowledge_alert", "arguments": {"id": 1}}),
        json!({"name": "get_netdiag_report", "arguments": {"hostname": "x"}}),
        json!({"name": "mcp"}),
        json!({}),
        json!({"name": 12}),
        json!({"name": "list_machines", "arguments": "limit=5"}),
        json!({"name": "list_machines", "arguments": {"colour": "blue"}}),
        json!({"name": "list_machines", "arguments": {"status": {"eq": "online"}}}),
        json!({"name": "list_machines", "arguments": {"limit": [1, 2]}}),
        json!({"name": "get_machine", "arguments": {}}),
        json!({"name": "get_machine", "arguments": {"hostname": ""}}),
        json!({"name": "get_machine", "arguments": {"hostname": null}}),
    ];
    for params in cases {
        let res = rpc(
            app,
            &token,
            json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": params}),
        )
        .await;
        assert_eq!(res.status, StatusCode::OK, "{params}");
        assert_eq!(error_code(&res), -32602, "{params}: {}", res.body);
    }
    let res = rpc(
        app,
        &token,
        json!({"jsonrpc": "2.0", "id": 5, "method": "tools/list", "params": [1]}),
    )
    .await;
    assert_eq!(error_code(&res), -32602, "params must be an object");
    let res = call(app, &token, "list_machines", json!({"colour": "blue"})).await;
    let message = res.body["error"]["message"].as_str().unwrap_or("");
    assert!(
        message.contains("colour") && message.contains("status"),
        "names the argument and the admitted ones: {message}"
    );
}

#[tokio::test]
async fn the_protocol_version_header_is_honoured() {
    let app = TestApp::shared();
    let token = app.full_token().await;
    let ping = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
    for version in ["2025-03-26", "2025-06-18", "2025-11-25"] {
        let res = raw(app, &token, ping, &[("mcp-protocol-version", version)]).await;
        assert_eq!(res.status, StatusCode::OK, "{version}");
    }
    for version in ["2024-11-05", "1.0", ""] {
        let res = raw(app, &token, ping, &[("mcp-protocol-version", version)]).await;
        assert_eq!(res.status, StatusCode::BAD_REQUEST, "{version:?}");
        assert_eq!(error_code(&res), -32600);
        assert!(
            res.body["error"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("2025-06-18"))
        );
    }
}

#[tokio::test]
async fn the_tool_list_equals_the_read_routes_of_the_route_table() {
    let app = TestApp::shared();
    let token = app.full_token().await;
    let (names, tools, sizes) = tool_names(app, &token).await;
    let reads: BTreeSet<String> = ROUTES
        .iter()
        .filter(|r| r.kind == Kind::Read)
        .map(|r| r.op.to_owned())
        .collect();
    assert_eq!(names, reads);
    assert!(names.len() >= 58, "at least 58 read tools (docs/mcp.md)");
    for route in ROUTES.iter().filter(|r| r.kind != Kind::Read) {
        assert!(!names.contains(route.op), "{} is not a JSON read", route.op);
    }
    eprintln!(
        "tools/list for a full-scope token: {} tools, pages of {sizes:?} bytes",
        names.len()
    );
    for size in &sizes {
        assert!(*size < 60 * 1024, "a tools/list page is {size} bytes");
    }
    let without_outputs: usize = tools
        .iter()
        .map(|t| {
            let mut t = t.clone();
            t.as_object_mut().map(|o| o.remove("outputSchema"));
            t.to_string().len()
        })
        .sum();
    assert!(without_outputs < 60 * 1024, "{without_outputs} bytes");
    for tool in &tools {
        let name = tool["name"].as_str().unwrap_or("");
        let output = &tool["outputSchema"];
        assert_eq!(output["type"], "object", "{name}");
        assert_eq!(output["required"], json!(["data", "meta"]), "{name}");
        assert!(
            !output.to_string().contains("#/components/"),
            "{name}: the output schema stands alone"
        );
        assert_eq!(tool["annotations"]["readOnlyHint"], true, "{name}");
        assert!(
            tool["description"].as_str().is_some_and(|d| !d.is_empty()),
            "{name}"
        );
        let schema = &tool["inputSchema"];
        assert_eq!(schema["type"], "object", "{name}");
        assert!(schema["properties"].is_object(), "{name}");
        let route = ROUTES.iter().find(|r| r.op == name).expect("route");
        for segment in route.path.split('/').filter(|s| s.starts_with('{')) {
            let param = segment.trim_matches(['{', '}']);
            assert!(
                schema["properties"][param].is_object(),
                "{name} lacks {param}"
            );
            assert!(
                schema["required"]
                    .as_array()
                    .is_some_and(|r| r.contains(&json!(param))),
                "{name}: {param} is required"
            );
        }
        if let Some(p) = route.paging {
            assert_eq!(
                schema["properties"]["limit"]["default"], p.default,
                "{name}"
            );
            assert_eq!(schema["properties"]["limit"]["maximum"], p.max, "{name}");
            assert_eq!(
                schema["properties"]["cursor"].is_object(),
                p.cursor,
                "{name}"
            );
        }
        if route.window.is_some() {
            assert!(schema["properties"]["period"]["enum"].is_array(), "{name}");
            assert_eq!(
                schema["properties"]["from"]["format"], "date-time",
                "{name}"
            );
        }
    }
}

#[tokio::test]
async fn a_tool_list_cursor_the_server_did_not_give_is_invalid_params() {
    let app = TestApp::shared();
    let token = app.token("acme", &[Scope::ReadMachines]).await;
    for cursor in [json!("no_such_tool"), json!("list_flows"), json!(3)] {
        let res = rpc(
            app,
            &token,
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"cursor": cursor}}),
        )
        .await;
        assert_eq!(error_code(&res), -32602, "{cursor}: {}", res.body);
    }
}

#[tokio::test]
async fn the_tool_list_holds_only_the_tools_the_token_scopes_cover() {
    let app = TestApp::shared();
    let token = app.token("acme", &[Scope::ReadMachines]).await;
    let (names, ..) = tool_names(app, &token).await;
    let expected: BTreeSet<String> = ["get_me", "list_machines", "get_machine"]
        .map(String::from)
        .into();
    assert_eq!(names, expected);
    let token = app
        .token("acme", &[Scope::ReadFlows, Scope::WriteAlerts])
        .await;
    let (names, ..) = tool_names(app, &token).await;
    let expected: BTreeSet<String> = ROUTES
        .iter()
        .filter(|r| r.kind == Kind::Read && matches!(r.scope(), None | Some(Scope::ReadFlows)))
        .map(|r| r.op.to_owned())
        .collect();
    assert_eq!(names, expected);
}

#[tokio::test]
async fn a_tool_call_returns_the_rest_body_as_text_and_structured_content() {
    let app = TestApp::shared();
    let token = app.full_token().await;
    let rest = app.get("/machines?status=online&limit=5", &token).await;
    let res = call(
        app,
        &token,
        "list_machines",
        json!({"status": "online", "limit": 5}),
    )
    .await;
    let result = &res.body["result"];
    assert_eq!(result["isError"], false);
    assert_eq!(result["content"][0]["type"], "text");
    let text: Value = serde_json::from_str(result["content"][0]["text"].as_str().expect("text"))
        .expect("JSON text");
    assert_eq!(text, result["structuredContent"]);
    assert_eq!(result["structuredContent"]["data"], rest.body["data"]);
    assert_eq!(result["structuredContent"]["meta"]["limit"], 5);
    let first = rest.items()[0]["hostname"].as_str().expect("hostname");
    let res = call(app, &token, "get_machine", json!({"hostname": first})).await;
    assert_eq!(res.body["result"]["isError"], false);
    assert_eq!(
        res.body["result"]["structuredContent"]["data"]["hostname"],
        first
    );
    let res = call(app, &token, "get_me", json!({})).await;
    assert_eq!(
        res.body["result"]["structuredContent"]["data"]["tenant"],
        "acme"
    );
}

#[tokio::test]
async fn cursor_pages_walk_through_tool_calls_as_through_rest() {
    let app = TestApp::shared();
    let token = app.full_token().await;
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut args = json!({"limit": 25});
        if let Some(c) = &cursor {
            args["cursor"] = json!(c);
        }
        let res = call(app, &token, "list_machines", args).await;
        let body = &res.body["result"]["structuredContent"];
        seen.extend(
            body["data"]
                .as_array()
                .expect("data")
                .iter()
                .map(|m| m["hostname"].as_str().unwrap_or("").to_owned()),
        );
        match body["meta"]["next_cursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => break,
        }
    }
    assert_eq!(seen.len(), 60);
    assert_eq!(
        seen.iter().collect::<BTreeSet<_>>().len(),
        60,
        "no machine repeated"
    );
}

#[tokio::test]
async fn a_rest_error_becomes_a_tool_error_with_the_rest_body() {
    let app = TestApp::shared();
    let token = app.full_token().await;
    let res = call(app, &token, "get_machine", json!({"hostname": "NOPE-0000"})).await;
    let result = &res.body["result"];
    assert_eq!(result["isError"], true);
    assert_eq!(result["structuredContent"]["error"], "not_found");
    let text: Value =
        serde_json::from_str(result["content"][0]["text"].as_str().expect("text")).expect("JSON");
    assert_eq!(text["error"], "not_found");
    let res = call(app, &token, "list_machines", json!({"limit": 0})).await;
    assert_eq!(res.body["result"]["isError"], true);
    assert_eq!(
        res.body["result"]["structuredContent"]["error"],
        "invalid_parameter"
    );
    assert!(
        res.body["result"]["structuredContent"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("limit"))
    );
    let res = call(app, &token, "list_machines", json!({"cursor": "forged"})).await;
    assert_eq!(
        res.body["result"]["structuredContent"]["error"],
        "invalid_cursor"
    );
    // An empty string for a known parameter is refused as on REST, naming it.
    for (tool, name) in [("list_machines", "cursor"), ("list_flows", "to")] {
        let res = call(app, &token, tool, json!({name: ""})).await;
        let result = &res.body["result"];
        assert_eq!(result["isError"], true, "{tool}: {result}");
        assert_eq!(result["structuredContent"]["error"], "invalid_parameter");
        assert_eq!(result["structuredContent"]["parameter"], name);
    }
}

#[tokio::test]
async fn a_tool_outside_the_token_scopes_answers_the_rest_403() {
    let app = TestApp::shared();
    let token = app.token("acme", &[Scope::ReadDns]).await;
    let res = call(app, &token, "list_machines", json!({})).await;
    let result = &res.body["result"];
    assert_eq!(result["isError"], true);
    assert_eq!(result["structuredContent"]["error"], "forbidden");
    assert_eq!(result["structuredContent"]["scope"], "read:machines");
}

#[tokio::test]
async fn tool_errors_follow_the_callers_language() {
    let app = TestApp::shared();
    let token = app.full_token().await;
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "get_machine", "arguments": {"hostname": "NOPE-0000"}}})
    .to_string();
    let fr = raw(app, &token, &body, &[]).await;
    let en = raw(app, &token, &body, &[("accept-language", "en-GB,en;q=0.9")]).await;
    let fr = fr.body["result"]["structuredContent"]["message"]
        .as_str()
        .unwrap_or("")
        .to_owned();
    let en = en.body["result"]["structuredContent"]["message"]
        .as_str()
        .unwrap_or("")
        .to_owned();
    assert_ne!(fr, en);
    assert!(
        en.contains("not found") || en.contains("Unknown") || en.contains("unknown"),
        "{en}"
    );
}

#[tokio::test]
async fn path_arguments_are_percent_encoded_and_never_change_the_route() {
    let app = TestApp::shared();
    let token = app.full_token().await;
    for hostname in [
        "..",
        ".",
        "a/b",
        "../machines",
        "x?status=online",
        "x#y",
        "é t%2F",
    ] {
        let res = call(app, &token, "get_machine", json!({"hostname": hostname})).await;
        let result = &res.body["result"];
        assert_eq!(result["isError"], true, "{hostname}: {result}");
        assert_eq!(
            result["structuredContent"]["error"], "not_found",
            "{hostname}: {result}"
        );
        let message = result["structuredContent"]["message"]
            .as_str()
            .unwrap_or("");
        assert!(
            message.contains(hostname),
            "{hostname} reaches the handler intact: {message}"
        );
    }
}

#[tokio::test]
async fn tool_calls_read_only_the_callers_tenant() {
    let app = TestApp::shared();
    let acme = app.full_token().await;
    let globex = app.token("globex", Scope::ALL).await;
    let rest = app.get("/machines?limit=1", &acme).await;
    let hostname = rest.items()[0]["hostname"].as_str().expect("hostname");
    let res = call(app, &globex, "get_machine", json!({"hostname": hostname})).await;
    assert_eq!(
        res.body["result"]["structuredContent"]["error"],
        "not_found"
    );
    let res = call(app, &globex, "list_machines", json!({})).await;
    let data = res.body["result"]["structuredContent"]["data"]
        .as_array()
        .expect("data");
    assert!(data.iter().all(|m| m["hostname"] != hostname));
}

#[tokio::test]
async fn a_tool_call_counts_once_against_the_rate_limit_like_a_rest_call() {
    let app = TestApp::with_config(Config {
        rate_limit: 4,
        ..Config::default()
    })
    .await;
    let token = app.full_token().await;
    let rest = app.get("/me", &token).await;
    assert_eq!(rest.header("x-ratelimit-remaining"), Some("3"));
    for remaining in ["2", "1", "0"] {
        let res = call(&app, &token, "get_me", json!({})).await;
        assert_eq!(res.body["result"]["isError"], false);
        assert_eq!(res.header("x-ratelimit-remaining"), Some(remaining));
        assert_eq!(res.header("x-ratelimit-limit"), Some("4"));
    }
    let res = rpc(
        &app,
        &token,
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "get_me"}}),
    )
    .await;
    assert_eq!(res.status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(res.error(), "rate_limited");
    assert!(res.header("retry-after").is_some());
    assert_eq!(
        app.get("/me", &token).await.status,
        StatusCode::TOO_MANY_REQUESTS,
        "one shared quota"
    );
}

#[tokio::test]
async fn a_batch_gets_one_answer_per_request() {
    let app = TestApp::shared();
    let token = app.full_token().await;
    let res = rpc(
        app,
        &token,
        json!([
            {"jsonrpc": "2.0", "id": 1, "method": "ping"},
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "id": 2, "method": "nope"},
        ]),
    )
    .await;
    assert_eq!(res.status, StatusCode::OK);
    let answers = res.body.as_array().expect("array");
    assert_eq!(answers.len(), 2);
    assert_eq!(answers[0]["result"], json!({}));
    assert_eq!(answers[1]["error"]["code"], -32601);
    let res = rpc(
        app,
        &token,
        json!([{"jsonrpc": "2.0", "method": "notifications/initialized"}]),
    )
    .await;
    assert_eq!(res.status, StatusCode::ACCEPTED);
}

/// A batch of `n` calls of `name` with `arguments`, ids 0 to n-1.
fn batch_of_calls(n: usize, name: &str, arguments: Value) -> Value {
    (0..n)
        .map(|id| {
            json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                "params": {"name": name, "arguments": arguments}})
        })
        .collect()
}

fn remaining(res: &TestResponse) -> u64 {
    res.header("x-ratelimit-remaining")
        .and_then(|r| r.parse().ok())
        .unwrap_or_else(|| panic!("no X-RateLimit-Remaining: {:?}", res.headers))
}

#[tokio::test]
async fn a_batch_of_more_than_twenty_messages_is_refused_and_counts_as_one_call() {
    let app = TestApp::with_config(Config {
        rate_limit: 100,
        ..Config::default()
    })
    .await;
    let token = app.full_token().await;
    let res = rpc(&app, &token, batch_of_calls(21, "get_me", json!({}))).await;
    assert_eq!(res.status, StatusCode::BAD_REQUEST, "{}", res.body);
    assert!(
        res.body.is_object(),
        "one error for the batch: {}",
        res.body
    );
    assert_eq!(error_code(&res), -32600);
    assert_eq!(res.body["id"], Value::Null);
    assert_eq!(res.body["error"]["data"]["max_messages"], 20);
    assert!(
        res.body["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("20")),
        "{}",
        res.body
    );
    assert_eq!(remaining(&res), 99, "the message counts, its calls do not");
    let me = app.get("/me", &token).await;
    assert_eq!(remaining(&me), 98, "nothing ran behind the refusal");
    let res = rpc(&app, &token, batch_of_calls(20, "get_me", json!({}))).await;
    assert_eq!(res.status, StatusCode::OK, "twenty is the limit");
    assert_eq!(res.body.as_array().map(Vec::len), Some(20));
}

#[tokio::test]
async fn batches_are_refused_under_the_protocols_that_removed_them() {
    let app = TestApp::shared();
    let token = app.full_token().await;
    let pings =
        r#"[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"ping"}]"#;
    for version in ["2025-06-18", "2025-11-25"] {
        let res = raw(app, &token, pings, &[("mcp-protocol-version", version)]).await;
        assert_eq!(res.status, StatusCode::BAD_REQUEST, "{version}");
        assert_eq!(error_code(&res), -32600, "{version}");
        let message = res.body["error"]["message"].as_str().unwrap_or("");
        assert!(
            message.contains("batch") && message.contains(version),
            "{version}: {message}"
        );
    }
    // 2025-03-26 has batches; a request without the header is taken as 2025-03-26.
    for headers in [&[("mcp-protocol-version", "2025-03-26")][..], &[]] {
        let res = raw(app, &token, pings, headers).await;
        assert_eq!(res.status, StatusCode::OK, "{headers:?}");
        assert_eq!(res.body.as_array().map(Vec::len), Some(2), "{headers:?}");
    }
    let one = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
    let res = raw(app, &token, one, &[("mcp-protocol-version", "2025-11-25")]).await;
    assert_eq!(
        res.status,
        StatusCode::OK,
        "a single message is always fine"
    );
}

#[tokio::test]
async fn each_tool_call_of_a_batch_counts_against_the_quota() {
    let app = TestApp::with_config(Config {
        rate_limit: 30,
        ..Config::default()
    })
    .await;
    let token = app.full_token().await;
    assert_eq!(remaining(&app.get("/me", &token).await), 29);
    // Messages other than tool calls ride on the message's own call.
    let res = rpc(
        &app,
        &token,
        json!([
            {"jsonrpc": "2.0", "id": 1, "method": "ping"},
            {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
        ]),
    )
    .await;
    assert_eq!(res.status, StatusCode::OK);
    assert_eq!(remaining(&res), 28);
    let res = rpc(&app, &token, batch_of_calls(20, "get_me", json!({}))).await;
    assert_eq!(res.status, StatusCode::OK);
    assert_eq!(remaining(&res), 8, "twenty calls, twenty counted");
    let answers = res.body.as_array().expect("array");
    assert!(
        answers.iter().all(|a| a["result"]["isError"] == false),
        "{}",
        res.body
    );
    assert!(res.header("retry-after").is_none());
    // Eight calls are left: the message's first call and seven more run, the rest are refused
    // one by one with the REST 429 body.
    let res = rpc(&app, &token, batch_of_calls(20, "get_me", json!({}))).await;
    assert_eq!(res.status, StatusCode::OK);
    assert_eq!(remaining(&res), 0);
    assert!(res.header("retry-after").is_some(), "{:?}", res.headers);
    let answers = res.body.as_array().expect("array");
    assert_eq!(answers.len(), 20);
    for (i, answer) in answers.iter().enumerate() {
        assert_eq!(answer["id"], i, "in order");
        let result = &answer["result"];
        if i < 8 {
            assert_eq!(result["isError"], false, "{i}: {answer}");
            assert_eq!(result["structuredContent"]["data"]["tenant"], "acme");
        } else {
            assert_eq!(result["isError"], true, "{i}: {answer}");
            assert_eq!(result["structuredContent"]["error"], "rate_limited", "{i}");
            assert!(
                result["structuredContent"]["message"]
                    .as_str()
                    .is_some_and(|m| m.contains("Limite de débit")),
                "{answer}"
            );
        }
    }
    let rest = app.get("/me", &token).await;
    assert_eq!(
        rest.status,
        StatusCode::TOO_MANY_REQUESTS,
        "one shared quota"
    );
}

#[tokio::test]
async fn an_answer_over_8_mib_is_cut_off_with_an_error_for_the_calls_that_did_not_fit() {
    const CAP: usize = netops_shared::routes::MCP_MAX_ANSWER_BYTES;
    assert_eq!(CAP, 8 * 1024 * 1024, "8 MiB (docs/mcp.md)");
    let app = TestApp::shared();
    let token = app.full_token().await;
    let args = json!({"limit": 1000, "period": "7d"});
    // Each of these answers about 700 KB with the demo data: twenty of them are twice the cap.
    let tools = ["list_firewall_events", "list_dns_resolutions"];
    let batch: Value = (0..20)
        .map(|id| {
            json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                "params": {"name": tools[id % 2], "arguments": args}})
        })
        .collect();
    let res = rpc(app, &token, batch).await;
    assert_eq!(res.status, StatusCode::OK);
    let size = res.bytes.len();
    assert!(size <= CAP, "the answer is {size} bytes");
    let answers = res.body.as_array().expect("array");
    assert_eq!(answers.len(), 20);
    let kept = answers
        .iter()
        .take_while(|a| a["result"]["isError"] == false)
        .count();
    assert!(kept > 0 && kept < 20, "{kept} results kept");
    for (i, answer) in answers.iter().enumerate().skip(kept) {
        assert_eq!(answer["id"], i, "{answer}");
        assert_eq!(answer["error"]["code"], -32000, "{i}: {answer}");
        assert_eq!(answer["error"]["data"]["limit_bytes"], CAP, "{answer}");
        assert!(
            answer["error"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("8 MiB")),
            "{answer}"
        );
    }
    // Cut where the cap was reached, not before: the first call left out, asked alone,
    // would not have fitted beside what was kept.
    let alone = rpc(
        app,
        &token,
        json!({"jsonrpc": "2.0", "id": kept, "method": "tools/call",
            "params": {"name": tools[kept % 2], "arguments": args}}),
    )
    .await;
    assert_eq!(alone.body["result"]["isError"], false, "it fits alone");
    assert!(
        size + alone.bytes.len() > CAP - 64 * 1024,
        "kept {size} bytes, the next call answers {} bytes alone",
        alone.bytes.len()
    );
}

#[tokio::test]
async fn the_openapi_description_states_the_limits_the_server_applies() {
    use netops_shared::routes::{MCP_MAX_ANSWER_BYTES, MCP_MAX_BATCH};
    let app = TestApp::shared();
    let token = app.full_token().await;
    let doc = app.get("/openapi.json", &token).await.body;
    let op = &doc["paths"]["/mcp"]["post"];
    let description = op["description"].as_str().expect("description");
    for stated in [
        format!("au plus {MCP_MAX_BATCH} messages"),
        format!("{MCP_MAX_ANSWER_BYTES} octets"),
        "-32000".to_owned(),
        "2025-03-26".to_owned(),
    ] {
        assert!(description.contains(&stated), "{stated}: {description}");
    }
    let batch = &doc["components"]["schemas"]["JsonRpcMessage"]["oneOf"][1];
    assert_eq!(batch["maxItems"], MCP_MAX_BATCH);
    // The limits are those the server applies.
    let res = rpc(
        app,
        &token,
        batch_of_calls(MCP_MAX_BATCH + 1, "get_me", json!({})),
    )
    .await;
    assert_eq!(error_code(&res), -32600);
    assert_eq!(res.body["error"]["data"]["max_messages"], MCP_MAX_BATCH);
}

#[tokio::test]
async fn a_body_over_64_kib_is_refused() {
    let app = TestApp::shared();
    let token = app.full_token().await;
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"ping","params":{{"pad":"{}"}}}}"#,
        "x".repeat(70 * 1024)
    );
    let res = raw(app, &token, &body, &[]).await;
    assert_eq!(res.status, StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(res.error(), "payload_too_large");
}

#[tokio::test]
async fn the_api_gateway_events_of_the_mcp_function_succeed() {
    use http_body_util::BodyExt;
    use tower::ServiceExt;
    let app = TestApp::shared();
    let token = app.full_token().await;
    let (router, _) = netops_mcp::routes().split_for_parts();
    let function = netops_shared::http::app(router, app.state.clone());
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../events/mcp");
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).expect("events/mcp") {
        let path = entry.expect("entry").path();
        let text = std::fs::read_to_string(&path).expect("event");
        let req = lambda_http::request::from_str(&text).expect("API Gateway v2 event");
        let (mut parts, body) = req.into_parts();
        parts.headers.insert(
            "authorization",
            format!("Bearer {token}").parse().expect("header"),
        );
        let req = http::Request::from_parts(parts, axum::body::Body::from(body.to_vec()));
        let res = function.clone().oneshot(req).await.expect("infallible");
        let status = res.status();
        let bytes = res.into_body().collect().await.expect("body").to_bytes();
        let body: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        assert!(status.is_success(), "{}: {status} {body}", path.display());
        assert!(body["result"].is_object(), "{}: {body}", path.display());
        assert_ne!(
            body["result"]["isError"],
            true,
            "{}: {body}",
            path.display()
        );
        seen += 1;
    }
    assert!(seen >= 3, "initialize, tools/list and tools/call events");
}

const MODERN: &str = "2026-07-28";

/// The `_meta` envelope of a 2026-07-28 request.
fn envelope(version: &str) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": version,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"},
    })
}

/// A 2026-07-28 request to `path` (`/mcp`, with a query string or not), with its envelope
/// and the headers the revision requires.
async fn modern_at(
    app: &TestApp,
    path: &str,
    token: &str,
    method: &str,
    params: Value,
) -> TestResponse {
    let mut params = params;
    params["_meta"] = envelope(MODERN);
    let name = params["name"].as_str().map(str::to_owned);
    let body = json!({"jsonrpc": "2.0", "id": 9, "method": method, "params": params});
    let mut headers = vec![("mcp-protocol-version", MODERN), ("mcp-method", method)];
    if let Some(n) = name.as_deref() {
        headers.push(("mcp-name", n));
    }
    app.request(
        Method::POST,
        path,
        Some(token),
        Some(body.to_string().into_bytes()),
        &headers,
    )
    .await
}

async fn modern(app: &TestApp, token: &str, method: &str, params: Value) -> TestResponse {
    modern_at(app, "/mcp", token, method, params).await
}

/// Every page of `tools/list` under 2026-07-28 at `path`: the tools, each page checked to
/// carry `resultType` and the cache hints.
async fn modern_tools(app: &TestApp, path: &str, token: &str) -> Vec<Value> {
    let mut tools = Vec::new();
    let mut cursor = Value::Null;
    loop {
        let res = modern_at(app, path, token, "tools/list", json!({"cursor": cursor})).await;
        assert_eq!(res.status, StatusCode::OK, "{}", res.body);
        let result = &res.body["result"];
        assert_eq!(result["resultType"], "complete");
        assert_eq!(
            result["cacheScope"], "private",
            "the list follows the token's scopes"
        );
        assert!(result["ttlMs"].as_u64().is_some_and(|t| t > 0));
        tools.extend(result["tools"].as_array().cloned().expect("tools"));
        cursor = result["nextCursor"].clone();
        if cursor.is_null() {
            return tools;
        }
    }
}

#[tokio::test]
async fn server_discover_names_every_supported_revision_with_cache_hints() {
    let app = TestApp::shared();
    let token = app.full_token().await;
    let res = modern(app, &token, "server/discover", json!({})).await;
    assert_eq!(res.status, StatusCode::OK, "{}", res.body);
    assert!(res.header("mcp-session-id").is_none(), "no session");
    let r = &res.body["result"];
    assert_eq!(
        r["supportedVersions"],
        json!(["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26"])
    );
    assert_eq!(r["capabilities"]["tools"]["listChanged"], false);
    assert_eq!(r["resultType"], "complete");
    assert_eq!(r["cacheScope"], "private");
    assert!(r["ttlMs"].as_u64().is_some_and(|t| t > 0));
    assert_eq!(
        r["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "netops"
    );
    let instructions = r["instructions"].as_str().unwrap_or_default();
    assert!(
        instructions.contains("?toolsets=") && instructions.contains("flows, netdiag"),
        "{instructions}"
    );
}

#[tokio::test]
async fn a_modern_request_needs_no_handshake_and_every_result_says_its_type() {
    let app = TestApp::shared();
    let token = app.full_token().await;
    let res = modern(
        app,
        &token,
        "tools/call",
        json!({"name": "get_me", "arguments": {}}),
    )
    .await;
    assert_eq!(res.status, StatusCode::OK, "{}", res.body);
    let r = &res.body["result"];
    assert_eq!(r["resultType"], "complete");
    assert!(r.get("ttlMs").is_none(), "a tool result is not cached");
    assert_eq!(r["isError"], false);
    assert_eq!(r["structuredContent"]["data"]["tenant"], "acme");
    // A REST error is still a tool result, and says its type.
    let res = modern(
        app,
        &token,
        "tools/call",
        json!({"name": "get_machine", "arguments": {"hostname": "NOPE-0000"}}),
    )
    .await;
    assert_eq!(res.status, StatusCode::OK);
    assert_eq!(res.body["result"]["resultType"], "complete");
    assert_eq!(res.body["result"]["isError"], true);
    let (names, ..) = tool_names(app, &token).await;
    let tools = modern_tools(app, "/mcp", &token).await;
    assert_eq!(tools.len(), names.len(), "the same tools in both eras");
    // The older revisions' results stay as they were.
    let res = rpc(
        app,
        &token,
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
    )
    .await;
    assert!(res.body["result"].get("resultType").is_none());
    assert!(res.body["result"].get("ttlMs").is_none());
}

#[tokio::test]
async fn modern_requests_are_checked_in_the_revisions_order_with_its_codes_and_statuses() {
    let app = TestApp::shared();
    let token = app.full_token().await;
    let send = |body: Value, headers: Vec<(&'static str, String)>| {
        let token = token.clone();
        async move {
            let headers: Vec<(&str, &str)> =
                headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
            raw(app, &token, &body.to_string(), &headers).await
        }
    };
    let list = |meta: Value| json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": meta}});
    let hdrs = |version: &str, method: &str| {
        vec![
            ("mcp-protocol-version", version.to_owned()),
            ("mcp-method", method.to_owned()),
        ]
    };
    // No envelope under the 2026-07-28 header.
    let res = send(
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
        hdrs(MODERN, "tools/list"),
    )
    .await;
    assert_eq!(
        (res.status, error_code(&res)),
        (StatusCode::BAD_REQUEST, -32602)
    );
    // Headers that disagree with the body.
    let res = send(list(envelope(MODERN)), hdrs(MODERN, "tools/call")).await;
    assert_eq!(
        (res.status, error_code(&res)),
        (StatusCode::BAD_REQUEST, -32020)
    );
    let res = send(list(envelope("2031-01-01")), hdrs(MODERN, "tools/list")).await;
    assert_eq!(
        (res.status, error_code(&res)),
        (StatusCode::BAD_REQUEST, -32020)
    );
    let res = send(
        list(envelope(MODERN)),
        vec![("mcp-method", "tools/list".into())],
    )
    .await;
    assert_eq!(
        error_code(&res),
        -32020,
        "the envelope without the version header"
    );
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "get_me", "_meta": envelope(MODERN)}});
    let mut named = hdrs(MODERN, "tools/call");
    named.push(("mcp-name", "list_machines".into()));
    let res = send(call, named).await;
    assert_eq!(
        (res.status, error_code(&res)),
        (StatusCode::BAD_REQUEST, -32020)
    );
    // A revision we do not speak, named alike in header and body.
    let res = send(
        list(envelope("2031-01-01")),
        hdrs("2031-01-01", "tools/list"),
    )
    .await;
    assert_eq!(
        (res.status, error_code(&res)),
        (StatusCode::BAD_REQUEST, -32022)
    );
    assert_eq!(res.body["error"]["data"]["requested"], "2031-01-01");
    assert_eq!(res.body["error"]["data"]["supported"][0], MODERN);
    // The handshake era's methods, and the stream this deployment cannot hold: 404 at once.
    for method in [
        "initialize",
        "ping",
        "subscriptions/listen",
        "resources/list",
    ] {
        let started = std::time::Instant::now();
        let res = modern(app, &token, method, json!({})).await;
        assert_eq!(
            (res.status, error_code(&res)),
            (StatusCode::NOT_FOUND, -32601),
            "{method}"
        );
        assert!(
            started.elapsed() < std::time::Duration::from_secs(5),
            "{method} answered at once"
        );
        assert_eq!(res.body["id"], 9);
    }
    let res = modern(app, &token, "subscriptions/listen", json!({})).await;
    assert!(
        res.body["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("not supported")),
        "{}",
        res.body
    );
    let res = modern(app, &token, "tools/call", json!({"name": "drop_database"})).await;
    assert_eq!(
        (res.status, error_code(&res)),
        (StatusCode::BAD_REQUEST, -32602)
    );
    // No batch, and a notification is accepted without answer.
    let batch = json!([list(envelope(MODERN)), list(envelope(MODERN))]);
    let res = send(batch, hdrs(MODERN, "tools/list")).await;
    assert_eq!(
        (res.status, error_code(&res)),
        (StatusCode::BAD_REQUEST, -32600)
    );
    let note = json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"_meta": envelope(MODERN)}});
    let res = send(note, hdrs(MODERN, "notifications/cancelled")).await;
    assert_eq!(res.status, StatusCode::ACCEPTED);
}

#[tokio::test]
async fn the_tool_list_comes_in_the_route_tables_order_every_time() {
    let app = TestApp::shared();
    let token = app.full_token().await;
    let first = modern_tools(app, "/mcp", &token).await;
    let again = modern_tools(app, "/mcp", &token).await;
    assert_eq!(first, again);
    let names: Vec<&str> = first.iter().filter_map(|t| t["name"].as_str()).collect();
    let reads: Vec<&str> = ROUTES
        .iter()
        .filter(|r| r.kind == Kind::Read)
        .map(|r| r.op)
        .collect();
    assert_eq!(names, reads);
}

#[tokio::test]
async fn toolsets_in_the_endpoint_url_narrow_the_list_and_the_calls() {
    let app = TestApp::shared();
    let token = app.full_token().await;
    let of = |modules: &[&str]| -> Vec<String> {
        ROUTES
            .iter()
            .filter(|r| r.kind == Kind::Read && modules.contains(&r.function.name()))
            .map(|r| r.op.to_owned())
            .collect()
    };
    let names = |tools: Vec<Value>| -> Vec<String> {
        tools
            .iter()
            .filter_map(|t| t["name"].as_str().map(str::to_owned))
            .collect()
    };
    let tools = modern_tools(app, "/mcp?toolsets=flows,alerts", &token).await;
    assert_eq!(names(tools), of(&["flows", "alerts"]));
    let repeated = modern_tools(app, "/mcp?toolsets=alerts&toolsets=flows", &token).await;
    assert_eq!(names(repeated), of(&["flows", "alerts"]));
    // The older revisions read the same URL.
    let res = app
        .send(
            Method::POST,
            "/mcp?toolsets=dns",
            &token,
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
        )
        .await;
    let listed: Vec<Value> = res.body["result"]["tools"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(names(listed), of(&["dns"]));
    // A tool outside the toolsets is unknown to this connection.
    let res = modern_at(
        app,
        "/mcp?toolsets=flows",
        &token,
        "tools/call",
        json!({"name": "list_machines"}),
    )
    .await;
    assert_eq!(error_code(&res), -32602);
    let res = modern_at(
        app,
        "/mcp?toolsets=flows",
        &token,
        "tools/call",
        json!({"name": "list_flows"}),
    )
    .await;
    assert_eq!(res.body["result"]["isError"], false, "{}", res.body);
    // The token's scopes still filter.
    let dns = app.token("acme", &[Scope::ReadDns]).await;
    let tools = modern_tools(app, "/mcp?toolsets=dns,flows", &dns).await;
    assert_eq!(names(tools), of(&["dns"]));
    // An unknown toolset is refused with the list of toolsets.
    let res = modern_at(
        app,
        "/mcp?toolsets=flows,nope",
        &token,
        "tools/list",
        json!({}),
    )
    .await;
    assert_eq!(
        (res.status, error_code(&res)),
        (StatusCode::BAD_REQUEST, -32600)
    );
    assert!(
        res.body["error"]["data"]["toolsets"]
            .as_array()
            .is_some_and(|t| t.contains(&json!("flows")))
    );
}

#[tokio::test]
async fn every_tool_is_annotated_read_only_idempotent_and_closed_with_a_title() {
    let app = TestApp::shared();
    let token = app.full_token().await;
    let (_, english, _) = tool_names(app, &token).await;
    let french = {
        let res = app
            .request(
                Method::POST,
                "/mcp",
                Some(&token),
                Some(
                    json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
                        .to_string()
                        .into_bytes(),
                ),
                &[("accept-language", "fr")],
            )
            .await;
        res.body["result"]["tools"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    };
    for tool in &english {
        let a = &tool["annotations"];
        let name = tool["name"].as_str().unwrap_or_default();
        assert_eq!(a["readOnlyHint"], true, "{name}");
        assert_eq!(a["idempotentHint"], true, "{name}");
        assert_eq!(a["openWorldHint"], false, "{name}");
        assert!(
            a["title"]
                .as_str()
                .is_some_and(|t| !t.is_empty() && t.len() <= 60),
            "{name}"
        );
    }
    let title = |tools: &[Value], name: &str| {
        tools
            .iter()
            .find(|t| t["name"] == name)
            .map(|t| t["annotations"]["title"].clone())
    };
    assert_eq!(
        title(&english, "list_machines"),
        Some(json!("List machines"))
    );
    assert_eq!(
        title(&english, "get_netdiag_summary"),
        Some(json!("Get NetDiag summary"))
    );
    let fr = title(&french, "list_machines").expect("listed in French");
    assert_ne!(
        fr,
        json!("List machines"),
        "the French title is the operation's summary"
    );
}

#[tokio::test]
async fn prompts_are_listed_for_the_tools_a_token_may_call_and_cost_no_call() {
    let app = TestApp::shared();
    let token = app.full_token().await;
    let list = rpc(
        app,
        &token,
        json!({"jsonrpc": "2.0", "id": 1, "method": "prompts/list"}),
    )
    .await;
    let names: Vec<&str> = list.body["result"]["prompts"]
        .as_array()
        .map(|p| p.iter().filter_map(|p| p["name"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(names, ["slow_network", "what_changed", "triage_alert"]);
    let slow = &list.body["result"]["prompts"][0];
    assert_eq!(
        slow["arguments"][0],
        json!({"name": "hostname", "description": "Host name of the machine, as list_machines gives it.", "required": true})
    );
    assert_eq!(slow["arguments"][1]["required"], false);
    // Under 2026-07-28, the list is cacheable and the text says its type.
    let res = modern(app, &token, "prompts/list", json!({})).await;
    assert_eq!(res.body["result"]["cacheScope"], "private");
    let before = remaining(
        &rpc(
            app,
            &token,
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
        )
        .await,
    );
    let res = modern(
        app,
        &token,
        "prompts/get",
        json!({"name": "slow_network", "arguments": {"hostname": "PC-0042"}}),
    )
    .await;
    assert_eq!(res.status, StatusCode::OK, "{}", res.body);
    let r = &res.body["result"];
    assert_eq!(r["resultType"], "complete");
    assert_eq!(r["messages"][0]["role"], "user");
    let text = r["messages"][0]["content"]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(
        text.contains(r#"get_netdiag_summary {"hostname":"PC-0042","period":"24h"}"#),
        "{text}"
    );
    let after = remaining(
        &rpc(
            app,
            &token,
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
        )
        .await,
    );
    assert_eq!(before - after, 2, "a prompt is one POST, no tool call");
    // In French, and refused when its arguments do not fit.
    let res = app
        .request(
            Method::POST,
            "/mcp",
            Some(&token),
            Some(json!({"jsonrpc": "2.0", "id": 1, "method": "prompts/get", "params": {"name": "what_changed"}}).to_string().into_bytes()),
            &[("accept-language", "fr")],
        )
        .await;
    let text = res.body["result"]["messages"][0]["content"]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(
        text.starts_with("Trouve ce qui a changé") && text.contains(r#""period":"1h""#),
        "{text}"
    );
    for params in [
        json!({"name": "slow_network"}),
        json!({"name": "slow_network", "arguments": {"hostname": "a", "period": "2h"}}),
        json!({"name": "nope"}),
    ] {
        let res = rpc(
            app,
            &token,
            json!({"jsonrpc": "2.0", "id": 1, "method": "prompts/get", "params": params}),
        )
        .await;
        assert_eq!(error_code(&res), -32602, "{params}");
    }
    // A token that cannot call every tool of a prompt is not offered it, nor is a toolset.
    let dns = app.token("acme", &[Scope::ReadDns]).await;
    let res = rpc(
        app,
        &dns,
        json!({"jsonrpc": "2.0", "id": 1, "method": "prompts/list"}),
    )
    .await;
    assert_eq!(res.body["result"]["prompts"], json!([]));
    let res = rpc(app, &dns, json!({"jsonrpc": "2.0", "id": 1, "method": "prompts/get", "params": {"name": "triage_alert", "arguments": {"alert_id": "x"}}})).await;
    assert_eq!(error_code(&res), -32602);
    let res = modern_at(
        app,
        "/mcp?toolsets=netdiag,flows,fleet",
        &token,
        "prompts/list",
        json!({}),
    )
    .await;
    let offered: Vec<&str> = res.body["result"]["prompts"]
        .as_array()
        .map(|p| p.iter().filter_map(|p| p["name"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(offered, ["slow_network"]);
}
