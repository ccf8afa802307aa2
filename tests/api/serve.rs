//! The real `netops` binary: `serve` over HTTP on a free port, the token commands while it
//! runs, the write log command, and a clean stop on SIGTERM.

use std::process::Command;

// Shared with the reliability suite, which uses the rest of it.
#[allow(dead_code)]
#[path = "../common/served.rs"]
pub(crate) mod served;

use served::{Serve, Store, create_token, netops, netops_ok};

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

/// `GET path` on a served server: status and body.
pub(crate) async fn get_json(served: &served::Served, path: &str) -> (u16, serde_json::Value) {
    let res = reqwest::Client::new()
        .get(format!("{}{path}", served.base))
        .bearer_auth(&served.token)
        .send()
        .await
        .expect("request");
    let status = res.status().as_u16();
    (status, res.json().await.expect("json"))
}

/// The number of items a listing holds in its default window.
async fn listed(served: &served::Served, path: &str) -> usize {
    let (status, body) = get_json(served, path).await;
    assert_eq!(status, 200, "{path}: {body}");
    body["data"].as_array().map_or(0, Vec::len)
}

#[tokio::test]
async fn two_days_later_serve_catches_up_and_the_default_windows_are_full() {
    let dir = std::sync::Arc::new(tempfile::tempdir().expect("tempdir"));
    // The file of a first start, then served again two days later.
    let later = Serve::seeded()
        .in_dir(dir.clone())
        .clock_ahead("+2d")
        .start();
    for path in [
        "/flows",
        "/dns/resolutions",
        "/dns/top-domains",
        "/firewall/events",
    ] {
        assert!(listed(&later, path).await > 10, "{path}");
    }
    drop(later);
    // With --no-live (here its variable), a start writes nothing: two days after the last
    // start, the default window is empty.
    let fixed = Serve::seeded()
        .in_dir(dir)
        .clock_ahead("+4d")
        .env("NETOPS_NO_LIVE", "1")
        .start();
    assert_eq!(listed(&fixed, "/firewall/events").await, 0);
}

#[tokio::test]
async fn a_kill_during_the_catch_up_leaves_a_file_that_serves_and_resumes() {
    let dir = std::sync::Arc::new(tempfile::tempdir().expect("tempdir"));
    let mut launched = Serve::seeded()
        .in_dir(dir.clone())
        .clock_ahead("+10d")
        .launch();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while !launched.log_text().contains("catching up") {
        assert!(
            std::time::Instant::now() < deadline,
            "{}",
            launched.log_text()
        );
        assert!(
            launched.child.try_wait().expect("wait").is_none(),
            "{}",
            launched.log_text()
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let killed = Command::new("kill")
        .args(["-KILL", &launched.child.id().to_string()])
        .status()
        .expect("kill");
    assert!(killed.success());
    launched.child.wait().expect("wait");

    let resumed = Serve::seeded().in_dir(dir).clock_ahead("+10d").start();
    let log = resumed.log_text();
    assert!(listed(&resumed, "/firewall/events").await > 20, "{log}");
    // Every resolution of the last full days is counted once in the top domains.
    let (_, body) = get_json(&resumed, "/dns/top-domains?limit=1").await;
    let to: chrono::DateTime<chrono::Utc> = body["meta"]["window"]["to"]
        .as_str()
        .and_then(|t| t.parse().ok())
        .expect("window");
    let to = chrono::DurationRound::duration_trunc(to, chrono::Duration::hours(1)).expect("hour");
    let from = to - chrono::Duration::days(6);
    let window = format!(
        "from={}&to={}",
        from.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        to.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
    );
    let (_, domains) = get_json(&resumed, &format!("/dns/top-domains?limit=500&{window}")).await;
    let counted: f64 = domains["data"]
        .as_array()
        .expect("domains")
        .iter()
        .filter_map(|d| d["queries"].as_f64())
        .sum();
    // The route has no cursor: a day at a time, each whole.
    let mut resolutions = 0;
    for day in 0..6 {
        let start = from + chrono::Duration::days(day);
        let path = format!(
            "/dns/resolutions?limit=1000&from={}&to={}",
            start.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            (start + chrono::Duration::days(1)).to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
        );
        let (status, page) = get_json(&resumed, &path).await;
        assert_eq!(status, 200, "{page}");
        assert_eq!(page["meta"]["truncated"], false, "{path}");
        resolutions += page["data"].as_array().map_or(0, Vec::len);
    }
    assert!(resolutions > 1000);
    assert_eq!(counted as usize, resolutions, "{log}");
}

/// The status of `GET /me` with `token`.
async fn me(served: &served::Served, token: &str) -> u16 {
    reqwest::Client::new()
        .get(format!("{}/me", served.base))
        .bearer_auth(token)
        .send()
        .await
        .expect("me")
        .status()
        .as_u16()
}

/// `netops token list` of `tenant` once `n` tokens named `name` show a last use (written off
/// the requests' path, so soon after them), within five seconds.
async fn used(served: &served::Served, tenant: &str, name: &str, n: usize) -> String {
    let mut listing = String::new();
    for _ in 0..50 {
        let out = netops(&["token", "list", "--tenant", tenant], &served.db);
        listing = String::from_utf8_lossy(&out.stdout).into_owned();
        let seen = listing
            .lines()
            .filter(|l| l.starts_with(&format!("{name}\t")) && !l.ends_with("\t-"))
            .count();
        if seen == n {
            return listing;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!("{n} tokens named {name} never showed a last use: {listing}");
}

/// `netops tenant list`, as (tenant, active tokens, items) per line.
fn tenant_list(store: &Store) -> Vec<(String, String, String)> {
    netops_ok(&["tenant", "list"], store)
        .lines()
        .skip(1)
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            (f[0].to_owned(), f[1].to_owned(), f[4].to_owned())
        })
        .collect()
}

#[tokio::test]
async fn a_rotated_token_keeps_its_old_secret_for_the_overlap_and_shows_its_last_use() {
    let served = Serve::seeded().start();
    let old = create_token(&served.db, &["--name", "rot", "--scopes", "all"]);
    assert_eq!(me(&served, &old).await, 200);
    let out = netops(
        &[
            "token",
            "rotate",
            "--tenant",
            "acme",
            "--name",
            "rot",
            "--overlap",
            "2s",
        ],
        &served.db,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let new = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    assert!(
        new.starts_with("nop_") && new != old,
        "the new secret alone on stdout"
    );
    assert_eq!(
        (me(&served, &old).await, me(&served, &new).await),
        (200, 200)
    );
    tokio::time::sleep(std::time::Duration::from_millis(2_500)).await;
    assert_eq!(me(&served, &old).await, 401, "the overlap is over");
    assert_eq!(me(&served, &new).await, 200);
    // Used: its last use is listed (written off the request's path, so soon after).
    let listing = used(&served, "acme", "rot", 2).await;
    assert!(
        listing.lines().any(|l| l.starts_with("rot\texpired\t")),
        "{listing}"
    );
    // A name without an active token cannot be rotated.
    let none = netops(
        &["token", "rotate", "--tenant", "acme", "--name", "nobody"],
        &served.db,
    );
    assert_eq!(none.status.code(), Some(1));
}

#[tokio::test]
async fn deleting_a_tenant_asks_first_goes_on_after_a_stop_and_leaves_the_others_whole() {
    let served = Serve::seeded().env("NETOPS_NO_LIVE", "1").start();
    let out = netops(
        &[
            "token", "create", "--tenant", "globex", "--name", "ci", "--scopes", "all",
        ],
        &served.db,
    );
    let theirs = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    assert_eq!(me(&served, &theirs).await, 200);
    used(&served, "globex", "ci", 1).await;
    let store = Store::File(served.db.clone());
    let before = tenant_list(&store);
    let items = |list: &[(String, String, String)], t: &str| {
        list.iter()
            .find(|(name, _, _)| name == t)
            .map(|(_, _, n)| n.parse::<u64>().expect("a count"))
    };
    assert!(
        items(&before, "globex").is_some_and(|n| n > 10),
        "{before:?}"
    );
    let acme = items(&before, "acme").expect("acme listed");
    // Without --yes and without an answer, nothing is deleted.
    let refused = netops(
        &["tenant", "delete", "--tenant", "globex", "--no-export"],
        &served.db,
    );
    assert_eq!(refused.status.code(), Some(2));
    assert_eq!(tenant_list(&store), before);
    // Stopped after a few items, then run again.
    let part = netops(
        &[
            "tenant",
            "delete",
            "--tenant",
            "globex",
            "--yes",
            "--no-export",
            "--max-items",
            "5",
        ],
        &served.db,
    );
    assert!(part.status.success());
    assert!(String::from_utf8_lossy(&part.stderr).contains("run again to go on"));
    let between = tenant_list(&store);
    assert_eq!(
        items(&between, "globex"),
        items(&before, "globex").map(|n| n - 5),
        "still listed, 5 items fewer"
    );
    // Unpaced here: the demo tenant holds tens of thousands of items (200 a second by default).
    let rest = netops(
        &[
            "tenant",
            "delete",
            "--tenant",
            "globex",
            "--yes",
            "--no-export",
            "--rate",
            "1000000",
        ],
        &served.db,
    );
    assert!(rest.status.success());
    assert!(
        String::from_utf8_lossy(&rest.stderr).contains("tenant 'globex' deleted"),
        "{}",
        String::from_utf8_lossy(&rest.stderr)
    );
    let after = tenant_list(&store);
    assert_eq!(items(&after, "globex"), None, "{after:?}");
    assert_eq!(me(&served, &theirs).await, 401, "its token is gone");
    // Acme is whole: the same items, still served.
    assert_eq!(items(&after, "acme"), Some(acme), "{after:?}");
    let (status, body) = get_json(&served, "/machines?limit=2").await;
    assert_eq!(status, 200);
    assert_eq!(body["data"].as_array().map(Vec::len), Some(2));
}
