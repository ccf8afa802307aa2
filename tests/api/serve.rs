//! The real `netops` binary: `serve` over HTTP on a free port, the token commands while it
//! runs, the write log command, and a clean stop on SIGTERM.

use std::process::Command;

// Shared with the reliability suite, which uses the rest of it.
#[allow(dead_code)]
#[path = "../common/served.rs"]
pub(crate) mod served;

use served::{Serve, create_token, netops};

fn start() -> served::Served {
    Serve::new().start()
}

#[tokio::test]
async fn serve_answers_over_http_and_tokens_change_while_it_runs() {
    let served = start();
    assert!(served.base.starts_with("http://127.0.0.1:") && served.base.ends_with("/api/v1"));
    let http = reqwest::Client::new();
    let res = http
        .get(format!("{}/machines?limit=2", served.base))
        .bearer_auth(&served.token)
        .send()
        .await
        .expect("request");
    assert_eq!(res.status(), 200);
    assert_eq!(res.headers()["x-ratelimit-limit"], "600");
    let body: serde_json::Value = res.json().await.expect("json");
    assert_eq!(body["data"].as_array().map(Vec::len), Some(2));

    // A token created by the CLI works on the next request, and stops working once revoked.
    let token = create_token(
        &served.db,
        &[
            "--name",
            "ci",
            "--scopes",
            "read:machines,read:dns",
            "--expires-in",
            "1h",
        ],
    );
    assert!(
        token.starts_with("nop_") && token.len() == 44,
        "stdout holds the token alone"
    );
    let me = http
        .get(format!("{}/me", served.base))
        .bearer_auth(&token)
        .send()
        .await
        .expect("me");
    assert_eq!(me.status(), 200);
    let out = netops(&["token", "list", "--tenant", "acme"], &served.db);
    let listing = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        listing.lines().any(|l| l.starts_with("ci\tactive\t")),
        "{listing}"
    );
    let dup = netops(
        &[
            "token", "create", "--tenant", "acme", "--name", "ci", "--scopes", "all",
        ],
        &served.db,
    );
    assert_eq!(
        dup.status.code(),
        Some(2),
        "an active name cannot be reused"
    );
    let out = netops(
        &["token", "revoke", "--tenant", "acme", "--name", "ci"],
        &served.db,
    );
    assert!(out.status.success());
    let after = http
        .get(format!("{}/me", served.base))
        .bearer_auth(&token)
        .send()
        .await
        .expect("me");
    assert_eq!(after.status(), 401);
    let out = netops(&["token", "list", "--tenant", "acme"], &served.db);
    assert!(
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .any(|l| l.starts_with("ci\trevoked\t"))
    );

    // Bad arguments are refused with a usage exit code.
    let bad = netops(
        &[
            "token",
            "create",
            "--tenant",
            "acme",
            "--name",
            "x",
            "--scopes",
            "read:everything",
        ],
        &served.db,
    );
    assert_eq!(bad.status.code(), Some(2));
    let bad = netops(
        &[
            "token",
            "create",
            "--tenant",
            "acme",
            "--name",
            "x",
            "--scopes",
            "all",
            "--expires-in",
            "3w",
        ],
        &served.db,
    );
    assert_eq!(bad.status.code(), Some(2));

    // The write log prints one JSON object per line (an ack attempt is a write).
    let ack = http
        .post(format!("{}/alerts/hm-999999/ack", served.base))
        .bearer_auth(&served.token)
        .json(&serde_json::json!({"note": "vu"}))
        .send()
        .await
        .expect("ack");
    assert!(ack.status().is_client_error());
    let out = netops(&["writes", "--tenant", "acme"], &served.db);
    let lines: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON object per line"))
        .collect();
    let last = lines.last().expect("the ack attempt is logged");
    assert_eq!(last["path"], "/api/v1/alerts/hm-999999/ack");
    assert_eq!(last["body"]["note"], "vu");
    assert_eq!(last["status"], ack.status().as_u16());
}

#[tokio::test]
async fn sigterm_stops_the_server_cleanly() {
    let exit = start().terminate();
    assert!(exit.success(), "clean exit on SIGTERM: {exit:?}");
}

#[test]
fn serve_refuses_a_bad_connection_limit_naming_its_variable() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = Command::new(env!("CARGO_BIN_EXE_netops"))
        .args(["serve", "--addr", "127.0.0.1:0", "--db"])
        .arg(dir.path().join("netops.db"))
        .env("NETOPS_IDLE_TIMEOUT_SECS", "soon")
        .output()
        .expect("run netops serve");
    assert_eq!(out.status.code(), Some(2), "a usage error");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("NETOPS_IDLE_TIMEOUT_SECS") && stderr.contains("'soon'"),
        "{stderr}"
    );
    assert!(
        !dir.path().join("netops.db").exists(),
        "nothing is seeded before the configuration is read"
    );
}
