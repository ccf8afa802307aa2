//! The exact JSON a client sees, pinned with inline snapshots (as meilisearch
//! snapshots its error bodies the same way): a body for every code of the error table
//! (docs/http-conventions.md#errors), each produced as a client would produce it, in French and
//! for some in English; the envelope of each kind of answer
//! (docs/http-conventions.md#envelope); the headers of the contract.
//!
//! What moves between runs is redacted: ids, times dated from the seeding, cursors, request
//! ids, seconds left in a window. What is left holds on any day and on both stores
//! (`NETOPS_TEST_STORE=dynamodb`). A mismatch fails the test and writes nothing: the workspace
//! sets insta to `update: "no"` (`.config/insta.yaml`) and the test command exports
//! `INSTA_UPDATE=no INSTA_FORCE_PASS=0`. To change a snapshot on purpose, edit it here, or run
//! `cargo insta test --review` and read the diff.

use std::collections::BTreeMap;
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode};
use insta::assert_json_snapshot;
use insta::internals::Redaction;
use netops_shared::config::Config;
use netops_shared::error::{ApiError, ErrorCode};
use netops_shared::lang::Lang;
use netops_shared::routes::Function;
use netops_shared::scope::Scope;
use serde::Serialize;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::helpers::{TestApp, TestResponse, into_test_response, rand_u64};
use crate::serve::served::Serve;

/// An error answer as a client reads it: its status and its body.
#[derive(Serialize)]
struct Answer {
    status: u16,
    body: Value,
}

fn answer(res: &TestResponse) -> Answer {
    Answer {
        status: res.status.as_u16(),
        body: res.body.clone(),
    }
}

/// Every header of an answer, by name (lowercase, sorted).
fn headers(res: &TestResponse) -> BTreeMap<String, String> {
    res.headers
        .iter()
        .map(|(k, v)| {
            (
                k.as_str().to_owned(),
                v.to_str().unwrap_or("[not text]").to_owned(),
            )
        })
        .collect()
}

const EN: &[(&str, &str)] = &[("accept-language", "en")];

/// Replaces `found` in a string with `with`: for a message that quotes what moves.
fn replacing(found: &str, with: &'static str) -> Redaction {
    let found = found.to_owned();
    insta::dynamic_redaction(move |text, _| text.as_str().unwrap_or_default().replace(&found, with))
}

/// Every code of the table has a snapshot of a body that carries it, in this file: adding a
/// code without one fails here.
#[test]
fn every_error_code_of_the_table_has_a_snapshot() {
    let source = include_str!("snapshots.rs");
    let missing: Vec<&str> = ErrorCode::ALL
        .iter()
        .map(|c| c.as_str())
        .filter(|code| !source.contains(&format!("\"error\": \"{code}\"")))
        .collect();
    assert!(missing.is_empty(), "codes without a snapshot: {missing:?}");
}

// ---- 400 ----------------------------------------------------------------------------------

#[tokio::test]
async fn invalid_parameter_bodies_name_the_parameter() {
    let app = TestApp::shared();
    let token = app.full_token().await;

    let res = app.get("/machines?limit=0", &token).await;
    assert_json_snapshot!(answer(&res), @r###"
    {
      "status": 400,
      "body": {
        "error": "invalid_parameter",
        "message": "Paramètre « limit » invalide : entier supérieur ou égal à 1 attendu.",
        "parameter": "limit"
      }
    }
    "###);
    let res = app
        .request(Method::GET, "/machines?limit=0", Some(&token), None, EN)
        .await;
    assert_json_snapshot!(answer(&res), @r###"
    {
      "status": 400,
      "body": {
        "error": "invalid_parameter",
        "message": "Invalid parameter 'limit': expected an integer of at least 1.",
        "parameter": "limit"
      }
    }
    "###);

    // A path placeholder that must be an integer.
    let res = app.get("/monitors/abc", &token).await;
    assert_json_snapshot!(answer(&res), @r###"
    {
      "status": 400,
      "body": {
        "error": "invalid_parameter",
        "message": "Paramètre « id » invalide : valeur invalide (un entier est attendu).",
        "parameter": "id"
      }
    }
    "###);

    // Window parameters (docs/http-conventions.md#windows).
    let res = app.get("/flows?period=2h", &token).await;
    assert_json_snapshot!(answer(&res), @r###"
    {
      "status": 400,
      "body": {
        "error": "invalid_parameter",
        "message": "Paramètre « period » invalide : valeurs admises : 1h, 3h, 6h, 12h, 24h, 3d, 7d, 30d.",
        "parameter": "period"
      }
    }
    "###);
    let res = app
        .get(
            "/flows?from=2026-01-02T00:00:00Z&to=2026-01-01T00:00:00Z",
            &token,
        )
        .await;
    assert_json_snapshot!(answer(&res), @r###"
    {
      "status": 400,
      "body": {
        "error": "invalid_parameter",
        "message": "Paramètre « from » invalide : « from » doit précéder « to ».",
        "parameter": "from"
      }
    }
    "###);

    // Settings: an unknown key lists the admitted keys (docs/writes.md#netdiag-settings).
    let res = app
        .send(
            Method::PUT,
            "/netdiag/machines/PAR-LT-0001/settings",
            &token,
            json!({"bogus": true}),
        )
        .await;
    assert_json_snapshot!(answer(&res), @r###"
    {
      "status": 400,
      "body": {
        "admitted_keys": [
          "apps",
          "extraProbes",
          "traceOnIncident",
          "captureOnIncident",
          "autoWatchApps",
          "flowsEnabled",
          "foregroundEnabled",
          "foregroundTitles",
          "fileEventsEnabled",
          "fileIncludeAppData",
          "installEventsEnabled",
          "processEventsEnabled",
          "windowsEventsEnabled"
        ],
        "error": "invalid_parameter",
        "message": "Paramètre « bogus » invalide : clé inconnue.",
        "parameter": "bogus"
      }
    }
    "###);
    let res = app
        .request(
            Method::PUT,
            "/netdiag/machines/PAR-LT-0001/settings",
            Some(&token),
            Some(br#"{"extraProbes": ["not a probe"]}"#.to_vec()),
            EN,
        )
        .await;
    assert_json_snapshot!(answer(&res), @r###"
    {
      "status": 400,
      "body": {
        "admitted_keys": [
          "apps",
          "extraProbes",
          "traceOnIncident",
          "captureOnIncident",
          "autoWatchApps",
          "flowsEnabled",
          "foregroundEnabled",
          "foregroundTitles",
          "fileEventsEnabled",
          "fileIncludeAppData",
          "installEventsEnabled",
          "processEventsEnabled",
          "windowsEventsEnabled"
        ],
        "error": "invalid_parameter",
        "message": "Invalid parameter 'extraProbes': 'not a probe' is not of the form host.domain[:port] or *.domain[:port].",
        "parameter": "extraProbes"
      }
    }
    "###);

    // Actions: anything but trace, speed or capture (docs/writes.md#diagnostic-actions).
    let res = app
        .send(
            Method::POST,
            "/netdiag/machines/PAR-LT-0001/actions",
            &token,
            json!({"action": "reboot"}),
        )
        .await;
    assert_json_snapshot!(answer(&res), @r###"
    {
      "status": 400,
      "body": {
        "error": "invalid_parameter",
        "message": "Paramètre « action » invalide : valeurs admises : trace, speed, capture.",
        "parameter": "action"
      }
    }
    "###);

    // Ack of a NetDiag alert (docs/writes.md#acknowledging-an-alert), and of a malformed id.
    let res = app
        .send(
            Method::POST,
            "/alerts/nd-PAR-LT-0001-1/ack",
            &token,
            json!({}),
        )
        .await;
    assert_json_snapshot!(answer(&res), @r###"
    {
      "status": 400,
      "body": {
        "error": "invalid_parameter",
        "message": "Paramètre « id » invalide : une alerte NetDiag se ferme d'elle-même quand la machine revient à OK et ne peut pas être acquittée.",
        "parameter": "id"
      }
    }
    "###);
    let res = app
        .request(
            Method::POST,
            "/alerts/hm-abc/ack",
            Some(&token),
            Some(b"{}".to_vec()),
            EN,
        )
        .await;
    assert_json_snapshot!(answer(&res), @r###"
    {
      "status": 400,
      "body": {
        "error": "invalid_parameter",
        "message": "Invalid parameter 'id': expected an id of the form hm-<n> or siem-<id>.",
        "parameter": "id"
      }
    }
    "###);
}

#[tokio::test]
async fn invalid_cursor_bodies_do_not_say_which_check_failed() {
    let app = TestApp::shared();
    let token = app.full_token().await;
    let res = app.get("/machines?cursor=%25%25%25", &token).await;
    assert_json_snapshot!(answer(&res), @r###"
    {
      "status": 400,
      "body": {
        "error": "invalid_cursor",
        "message": "Curseur invalide : il a été modifié, vient d'une autre route ou d'un autre compte, ou les filtres ont changé depuis la page précédente."
      }
    }
    "###);
    // A genuine cursor used with other filters.
    let first = app.get("/machines?status=online&limit=1", &token).await;
    let cursor = first.body["meta"]["next_cursor"].as_str().expect("cursor");
    let res = app
        .request(
            Method::GET,
            &format!("/machines?status=offline&limit=1&cursor={cursor}"),
            Some(&token),
            None,
            EN,
        )
        .await;
    assert_json_snapshot!(answer(&res), @r###"
    {
      "status": 400,
      "body": {
        "error": "invalid_cursor",
        "message": "Invalid cursor: it was altered, comes from another route or account, or the filters changed since the previous page."
      }
    }
    "###);
}

#[tokio::test]
async fn invalid_body_bodies_say_what_is_wrong() {
    let app = TestApp::shared();
    let token = app.full_token().await;
    let ack = |body: &'static [u8], headers: &'static [(&'static str, &'static str)]| {
        let token = token.clone();
        async move {
            app.request(
                Method::POST,
                "/alerts/hm-999999999/ack",
                Some(&token),
                Some(body.to_vec()),
                headers,
            )
            .await
        }
    };
    let res = ack(b"{not json", &[]).await;
    assert_json_snapshot!(answer(&res), @r###"
    {
      "status": 400,
      "body": {
        "error": "invalid_body",
        "message": "Corps de requête invalide : ce n'est pas du JSON valide."
      }
    }
    "###);
    let res = ack(b"{not json", EN).await;
    assert_json_snapshot!(answer(&res), @r###"
    {
      "status": 400,
      "body": {
        "error": "invalid_body",
        "message": "Invalid request body: not valid JSON."
      }
    }
    "###);
    let res = ack(b"[1, 2]", &[]).await;
    assert_json_snapshot!(answer(&res), @r###"
    {
      "status": 400,
      "body": {
        "error": "invalid_body",
        "message": "Corps de requête invalide : un objet JSON est attendu."
      }
    }
    "###);
    let res = ack(br#"{"note": 5}"#, &[]).await;
    assert_json_snapshot!(answer(&res), @r###"
    {
      "status": 400,
      "body": {
        "error": "invalid_body",
        "field": "note",
        "message": "Corps de requête invalide : champ « note » : chaîne de caractères attendue."
      }
    }
    "###);
    let res = app
        .request(
            Method::PUT,
            "/netdiag/machines/PAR-LT-0001/settings",
            Some(&token),
            Some(b"\"apps\"".to_vec()),
            &[],
        )
        .await;
    assert_json_snapshot!(answer(&res), @r###"
    {
      "status": 400,
      "body": {
        "error": "invalid_body",
        "message": "Corps de requête invalide : un objet JSON est attendu."
      }
    }
    "###);
}

// ---- 401, 403 -----------------------------------------------------------------------------

#[tokio::test]
async fn unauthorized_bodies_tell_each_case_apart() {
    let app = TestApp::shared();
    let get = |headers: Vec<(&'static str, String)>| async move {
        let headers: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
        app.request(Method::GET, "/machines", None, None, &headers)
            .await
    };

    let res = get(vec![]).await;
    assert_json_snapshot!(answer(&res), @r###"
    {
      "status": 401,
      "body": {
        "error": "unauthorized",
        "message": "Jeton manquant : envoyez l'en-tête Authorization: Bearer <jeton>."
      }
    }
    "###);
    let res = get(vec![("accept-language", "en".into())]).await;
    assert_json_snapshot!(answer(&res), @r###"
    {
      "status": 401,
      "body": {
        "error": "unauthorized",
        "message": "Missing token: send the header Authorization: Bearer <token>."
      }
    }
    "###);
    let res = get(vec![("authorization", "Basic dXNlcjpwYXNz".into())]).await;
    assert_json_snapshot!(answer(&res), @r###"
    {
      "status": 401,
      "body": {
        "error": "unauthorized",
        "message": "En-tête Authorization mal formé : attendu « Bearer <jeton> »."
      }
    }
    "###);
    let res = get(vec![("authorization", "Bearer not-a-token".into())]).await;
    assert_json_snapshot!(answer(&res), @r###"
    {
      "status": 401,
      "body": {
        "error": "unauthorized",
        "message": "Jeton inconnu."
      }
    }
    "###);

    let (expired, _) = netops_shared::auth::create_token(
        app.stores.tokens.as_ref(),
        "acme",
        &format!("snap-expired-{:016x}", rand_u64()),
        vec![Scope::ReadMachines],
        chrono::Duration::seconds(-5),
    )
    .await
    .expect("token");
    let res = get(vec![("authorization", format!("Bearer {expired}"))]).await;
    assert_json_snapshot!(answer(&res), @r###"
    {
      "status": 401,
      "body": {
        "error": "unauthorized",
        "message": "Jeton expiré : créez-en un nouveau."
      }
    }
    "###);

    let revoked = app.token("acme", &[Scope::ReadMachines]).await;
    let name = app.get("/me", &revoked).await.body["data"]["name"]
        .as_str()
        .expect("name")
        .to_owned();
    assert!(
        app.stores
            .tokens
            .revoke("acme", &name, chrono::Utc::now().timestamp())
            .await
            .expect("revoke")
    );
    let res = get(vec![
        ("authorization", format!("Bearer {revoked}")),
        ("accept-language", "en".into()),
    ])
    .await;
    assert_json_snapshot!(answer(&res), @r###"
    {
      "status": 401,
      "body": {
        "error": "unauthorized",
        "message": "Token revoked: create a new one."
      }
    }
    "###);
}

#[tokio::test]
async fn forbidden_bodies_name_the_missing_scope() {
    let app = TestApp::shared();
    let token = app.token("acme", &[Scope::ReadDns]).await;
    let res = app.get("/machines", &token).await;
    assert_json_snapshot!(answer(&res), @r###"
    {
      "status": 403,
      "body": {
        "error": "forbidden",
        "message": "Ce jeton n'a pas la portée requise « read:machines ».",
        "scope": "read:machines"
      }
    }
    "###);
    let res = app
        .request(
            Method::POST,
            "/alerts/hm-1/ack",
            Some(&token),
            Some(b"{}".to_vec()),
            EN,
        )
        .await;
    assert_json_snapshot!(answer(&res), @r###"
    {
      "status": 403,
      "body": {
        "error": "forbidden",
        "message": "This token lacks the required scope 'write:alerts'.",
        "scope": "write:alerts"
      }
    }
    "###);
}

// ---- 404, 405, 409, 413 -------------------------------------------------------------------

#[tokio::test]
async fn not_found_bodies_name_what_is_unknown() {
    let app = TestApp::shared();
    let token = app.full_token().await;
    let res = app.get("/machines/NOPE-0000", &token).await;
    assert_json_snapshot!(answer(&res), @r###"
    {
      "status": 404,
      "body": {
        "error": "not_found",
        "message": "Machine « NOPE-0000 » introuvable."
      }
    }
    "###);
    let res = app
        .request(Method::GET, "/machines/NOPE-0000", Some(&token), None, EN)
        .await;
    assert_json_snapshot!(answer(&res), @r###"
    {
      "status": 404,
      "body": {
        "error": "not_found",
        "message": "Machine 'NOPE-0000' not found."
      }
    }
    "###);
    let res = app.get("/monitors/999999", &token).await;
    assert_json_snapshot!(answer(&res), @r###"
    {
      "status": 404,
      "body": {
        "error": "not_found",
        "message": "Moniteur 999999 introuvable."
      }
    }
    "###);
    let res = app
        .send(Method::POST, "/alerts/hm-999999999/ack", &token, json!({}))
        .await;
    assert_json_snapshot!(answer(&res), @r###"
    {
      "status": 404,
      "body": {
        "error": "not_found",
        "message": "Incident « hm-999999999 » introuvable."
      }
    }
    "###);
    // A path no route has.
    let res = app.get("/no/such/route", &token).await;
    assert_json_snapshot!(answer(&res), @r###"
    {
      "status": 404,
      "body": {
        "error": "not_found",
        "message": "Aucune route ne correspond à ce chemin."
      }
    }
    "###);
    let res = app
        .request(Method::GET, "/no/such/route", Some(&token), None, EN)
        .await;
    assert_json_snapshot!(answer(&res), @r###"
    {
      "status": 404,
      "body": {
        "error": "not_found",
        "message": "No route matches this path."
      }
    }
    "###);
}

#[tokio::test]
async fn method_not_allowed_bodies_and_their_allow_header() {
    let app = TestApp::shared();
    let token = app.full_token().await;
    let res = app
        .request(Method::DELETE, "/machines", Some(&token), None, &[])
        .await;
    assert_eq!(res.header("allow"), Some("GET, HEAD"));
    assert_json_snapshot!(answer(&res), @r###"
    {
      "status": 405,
      "body": {
        "error": "method_not_allowed",
        "message": "Méthode non autorisée sur cette route."
      }
    }
    "###);
    let res = app
        .request(Method::GET, "/alerts/hm-1/ack", Some(&token), None, EN)
        .await;
    assert_eq!(res.header("allow"), Some("POST"));
    assert_json_snapshot!(answer(&res), @r###"
    {
      "status": 405,
      "body": {
        "error": "method_not_allowed",
        "message": "Method not allowed on this route."
      }
    }
    "###);
}

#[tokio::test]
async fn conflict_bodies_give_the_current_status() {
    // The demo has a monitor incident already acknowledged and still open: acking it is a
    // 409, which changes nothing, so the shared app serves.
    let app = TestApp::shared();
    let token = app.full_token().await;
    let open = app
        .get("/alerts?status=open&kind=hostmonitor&limit=500", &token)
        .await;
    let id = open
        .items()
        .iter()
        .find(|a| a["details"]["status"] == "acknowledged")
        .and_then(|a| a["id"].as_str())
        .expect("an acknowledged monitor incident in the demo")
        .to_owned();
    let path = format!("/alerts/{id}/ack");
    // The incident's number comes from the demo's history: the message keeps its place.
    let res = app.send(Method::POST, &path, &token, json!({})).await;
    assert_json_snapshot!(answer(&res), {
        ".body.message" => replacing(&id, "hm-[n]"),
    }, @r###"
    {
      "status": 409,
      "body": {
        "current_status": "acknowledged",
        "error": "conflict",
        "message": "L'alerte « hm-[n] » est déjà acquittée."
      }
    }
    "###);
    let res = app
        .request(Method::POST, &path, Some(&token), Some(b"{}".to_vec()), EN)
        .await;
    assert_json_snapshot!(answer(&res), {
        ".body.message" => replacing(&id, "hm-[n]"),
    }, @r###"
    {
      "status": 409,
      "body": {
        "current_status": "acknowledged",
        "error": "conflict",
        "message": "Alert 'hm-[n]' is already acknowledged."
      }
    }
    "###);
}

#[tokio::test]
async fn a_reused_idempotency_key_names_the_key() {
    let app = TestApp::with_modules(&[Function::Netdiag]).await;
    let token = app.token("acme", &[Scope::WriteNetdiag]).await;
    let path = "/netdiag/machines/PAR-LT-0001/actions";
    let send = |body: Value, lang: &'static str| {
        let (app, token) = (&app, &token);
        async move {
            app.request(
                Method::POST,
                path,
                Some(token),
                Some(body.to_string().into_bytes()),
                &[("idempotency-key", "retry-42"), ("accept-language", lang)],
            )
            .await
        }
    };
    let first = send(json!({"action": "trace"}), "fr").await;
    assert_eq!(first.status, StatusCode::ACCEPTED);
    let res = send(json!({"action": "speed"}), "fr").await;
    assert_json_snapshot!(answer(&res), @r###"
    {
      "status": 422,
      "body": {
        "error": "idempotency_key_reused",
        "message": "La clé d'idempotence « retry-42 » a déjà servi à une autre requête (méthode, chemin ou corps différent)."
      }
    }
    "###);
    let res = send(json!({"action": "speed"}), "en").await;
    assert_json_snapshot!(answer(&res), @r###"
    {
      "status": 422,
      "body": {
        "error": "idempotency_key_reused",
        "message": "Idempotency key 'retry-42' was already used by another request (another method, path or body)."
      }
    }
    "###);
}

#[tokio::test]
async fn payload_too_large_bodies_give_the_limit() {
    let app = TestApp::shared();
    let token = app.full_token().await;
    let big = json!({ "note": "x".repeat(70 * 1024) });
    let res = app
        .send(Method::POST, "/alerts/hm-1/ack", &token, big.clone())
        .await;
    assert_json_snapshot!(answer(&res), @r###"
    {
      "status": 413,
      "body": {
        "error": "payload_too_large",
        "message": "Corps de requête trop volumineux (64 Kio au plus)."
      }
    }
    "###);
    let res = app
        .request(
            Method::POST,
            "/alerts/hm-1/ack",
            Some(&token),
            Some(big.to_string().into_bytes()),
            EN,
        )
        .await;
    assert_json_snapshot!(answer(&res), @r###"
    {
      "status": 413,
      "body": {
        "error": "payload_too_large",
        "message": "Request body too large (64 KiB at most)."
      }
    }
    "###);
}

// ---- 429 ----------------------------------------------------------------------------------

/// The seconds to wait depend on when the window started: the message keeps their place.
fn without_numbers() -> Redaction {
    insta::dynamic_redaction(|message, _| {
        let mut out = String::new();
        for c in message.as_str().unwrap_or_default().chars() {
            match c {
                '0'..='9' if out.ends_with("[n]") => {}
                '0'..='9' => out.push_str("[n]"),
                c => out.push(c),
            }
        }
        out
    })
}

#[tokio::test]
async fn rate_limited_bodies_and_headers_say_when_to_retry() {
    // One call per window, and a window long enough not to roll over during the test.
    let app = TestApp::with_config(Config {
        rate_limit: 1,
        rate_window_secs: 1_000_000,
        ..Config::default()
    })
    .await;
    let token = app.token("acme", &[Scope::ReadMachines]).await;
    assert_eq!(app.get("/me", &token).await.status, StatusCode::OK);
    let res = app.get("/me", &token).await;
    assert_json_snapshot!(answer(&res), {
        ".body.message" => without_numbers(),
    }, @r###"
    {
      "status": 429,
      "body": {
        "error": "rate_limited",
        "message": "Limite de débit dépassée : réessayez dans [n] s."
      }
    }
    "###);
    assert_json_snapshot!(headers(&res), {
        r#"["content-length"]"# => "[length]",
        r#"["x-request-id"]"# => "[request id]",
        r#"["x-ratelimit-reset"]"# => "[seconds]",
        r#"["retry-after"]"# => "[seconds]",
    }, @r###"
    {
      "content-length": "[length]",
      "content-type": "application/json",
      "retry-after": "[seconds]",
      "x-ratelimit-limit": "1",
      "x-ratelimit-remaining": "0",
      "x-ratelimit-reset": "[seconds]",
      "x-request-id": "[request id]"
    }
    "###);
    assert_eq!(res.header("retry-after"), res.header("x-ratelimit-reset"));
    let res = app
        .request(Method::GET, "/me", Some(&token), None, EN)
        .await;
    assert_json_snapshot!(answer(&res), {
        ".body.message" => without_numbers(),
    }, @r###"
    {
      "status": 429,
      "body": {
        "error": "rate_limited",
        "message": "Rate limit exceeded: retry in [n] s."
      }
    }
    "###);
}

// ---- 5xx: rendered from the error type ----------------------------------------------------

/// A server error rendered as the API renders it, read back as a client would.
async fn rendered(error: ApiError, lang: Lang) -> TestResponse {
    into_test_response(error.to_response(lang)).await
}

#[tokio::test]
async fn internal_error_bodies_say_nothing_of_the_cause() {
    // No route can be made to fail from outside: a 500 comes only from a bug (a stored
    // document that does not deserialize, a route without its paging rule), so the body is
    // rendered from the error type, with a cause that must not show in it.
    let cause = "SQL: no such column secret_column";
    let res = rendered(ApiError::internal(&cause), Lang::Fr).await;
    assert!(!String::from_utf8_lossy(&res.bytes).contains("secret"));
    assert_json_snapshot!(answer(&res), @r###"
    {
      "status": 500,
      "body": {
        "error": "internal_error",
        "message": "Erreur interne du serveur. Réessayez plus tard."
      }
    }
    "###);
    let res = rendered(ApiError::internal(&cause), Lang::En).await;
    assert_json_snapshot!(answer(&res), @r###"
    {
      "status": 500,
      "body": {
        "error": "internal_error",
        "message": "Internal server error. Retry later."
      }
    }
    "###);
}

#[tokio::test]
async fn service_unavailable_bodies_and_headers_invite_a_retry() {
    // A 503 needs the store to fail. The embedded store cannot be made to fail from outside
    // here, and the DynamoDB one only behind the fault-injecting proxy of `dynamo_faults`
    // (which checks the HTTP answer, not its exact text), so the body is rendered from the
    // error type, as every store error turns into it (`From<StoreError> for ApiError`).
    let cause = "dynamodb: ThrottlingException (table netops-docs)";
    let res = rendered(ApiError::unavailable(&cause), Lang::Fr).await;
    assert!(!String::from_utf8_lossy(&res.bytes).contains("dynamodb"));
    assert_json_snapshot!(answer(&res), @r###"
    {
      "status": 503,
      "body": {
        "error": "service_unavailable",
        "message": "Service momentanément indisponible ; aucune modification n'a été faite. Réessayez plus tard."
      }
    }
    "###);
    assert_json_snapshot!(headers(&res), @r###"
    {
      "content-type": "application/json",
      "retry-after": "1"
    }
    "###);
    let res = rendered(ApiError::unavailable(&cause), Lang::En).await;
    assert_json_snapshot!(answer(&res), @r###"
    {
      "status": 503,
      "body": {
        "error": "service_unavailable",
        "message": "Service temporarily unavailable; nothing was changed. Retry later."
      }
    }
    "###);
}

// ---- Refusals of the HTTP layer of `netops serve` -----------------------------------------

/// Sends `request` on a new connection to `addr` and reads the answer until the server closes
/// it. The request is written in the background: the server may answer an oversized head and
/// close before it has read all of it.
async fn exchange(addr: &str, request: Vec<u8>) -> TestResponse {
    let stream = TcpStream::connect(addr).await.expect("connect");
    let (mut reader, mut writer) = stream.into_split();
    let sending = tokio::spawn(async move {
        let _ = writer.write_all(&request).await;
        writer
    });
    let mut got = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(15), reader.read_to_end(&mut got))
        .await
        .expect("the server closes after a refusal");
    drop(sending.await);
    let end = got
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or_else(|| panic!("no answer: {:?}", String::from_utf8_lossy(&got)));
    let head = std::str::from_utf8(&got[..end]).expect("head");
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|s| s.parse::<u16>().ok())
        .and_then(|s| StatusCode::from_u16(s).ok())
        .expect("status line");
    let mut headers = HeaderMap::new();
    for (k, v) in lines.filter_map(|l| l.split_once(':')) {
        headers.append(
            HeaderName::try_from(k.trim()).expect("header name"),
            HeaderValue::try_from(v.trim()).expect("header value"),
        );
    }
    let bytes = Bytes::copy_from_slice(&got[end + 4..]);
    let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    TestResponse {
        status,
        headers,
        bytes,
        body,
    }
}

#[tokio::test]
async fn refusals_of_the_http_layer_are_in_the_same_shape() {
    // Only the real server's HTTP layer refuses these, before any route is known.
    let served = Serve::new().env("NETOPS_HEADER_TIMEOUT_SECS", 1).start();
    let addr = served.addr();

    // Bytes the request line cannot hold.
    let res = exchange(
        addr,
        b"GET /api/v1/\0me HTTP/1.1\r\nHost: x\r\n\r\n".to_vec(),
    )
    .await;
    assert_json_snapshot!(answer(&res), @r###"
    {
      "status": 400,
      "body": {
        "error": "bad_request",
        "message": "Requête HTTP mal formée."
      }
    }
    "###);
    let res = exchange(
        addr,
        b"GET /api/v1/\xffme HTTP/1.1\r\nHost: x\r\nAccept-Language: en\r\n\r\n".to_vec(),
    )
    .await;
    assert_json_snapshot!(answer(&res), @r###"
    {
      "status": 400,
      "body": {
        "error": "bad_request",
        "message": "Malformed HTTP request."
      }
    }
    "###);

    // A head that stops half-way: refused once the header timeout (1 s here) has passed.
    let res = exchange(addr, b"GET /api/v1/me HTTP/1.1\r\nHost: x\r\nX-Sl".to_vec()).await;
    assert_json_snapshot!(answer(&res), @r###"
    {
      "status": 408,
      "body": {
        "error": "request_timeout",
        "message": "La requête n'est pas arrivée en entier à temps ; renvoyez-la."
      }
    }
    "###);
    // With the rate limit of the client's address, which it counts against (the count and
    // the seconds left move with the window).
    assert_json_snapshot!(headers(&res), {
        r#"["date"]"# => "[date]",
        r#"["x-request-id"]"# => "[request id]",
        r#"["x-ratelimit-remaining"]"# => "[remaining]",
        r#"["x-ratelimit-reset"]"# => "[seconds]",
    }, @r###"
    {
      "connection": "close",
      "content-length": "104",
      "content-type": "application/json",
      "date": "[date]",
      "x-ratelimit-limit": "600",
      "x-ratelimit-remaining": "[remaining]",
      "x-ratelimit-reset": "[seconds]",
      "x-request-id": "[request id]"
    }
    "###);
    let res = exchange(
        addr,
        b"GET /api/v1/me HTTP/1.1\r\nHost: x\r\nAccept-Language: en\r\nX-Sl".to_vec(),
    )
    .await;
    assert_json_snapshot!(answer(&res), @r###"
    {
      "status": 408,
      "body": {
        "error": "request_timeout",
        "message": "The request did not arrive in full in time; send it again."
      }
    }
    "###);

    // A 100 KB query string.
    for accept in ["fr", "en"] {
        let request = format!(
            "GET /api/v1/me?q={} HTTP/1.1\r\nHost: x\r\nAccept-Language: {accept}\r\n\r\n",
            "a".repeat(100_000)
        );
        let res = exchange(addr, request.into_bytes()).await;
        match accept {
            "fr" => assert_json_snapshot!(answer(&res), @r###"
            {
              "status": 414,
              "body": {
                "error": "uri_too_long",
                "message": "Adresse de la requête trop longue."
              }
            }
            "###),
            _ => assert_json_snapshot!(answer(&res), @r###"
            {
              "status": 414,
              "body": {
                "error": "uri_too_long",
                "message": "Request URI too long."
              }
            }
            "###),
        }
    }

    // A 1 MB URL outgrows the head's buffer before any header is read (so French), and
    // 10,000 headers after Accept-Language are too many (so English).
    let huge_url = format!(
        "GET /api/v1/me?q={} HTTP/1.1\r\nHost: x\r\n\r\n",
        "a".repeat(1 << 20)
    );
    let res = exchange(addr, huge_url.into_bytes()).await;
    assert_json_snapshot!(answer(&res), @r###"
    {
      "status": 431,
      "body": {
        "error": "headers_too_large",
        "message": "En-têtes de requête trop volumineux ou trop nombreux."
      }
    }
    "###);
    let mut many = String::from("GET /api/v1/me HTTP/1.1\r\nAccept-Language: en\r\nHost: x\r\n");
    for i in 0..10_000 {
        many.push_str(&format!("X-Filler-{i}: a\r\n"));
    }
    many.push_str("\r\n");
    let res = exchange(addr, many.into_bytes()).await;
    assert_json_snapshot!(answer(&res), @r###"
    {
      "status": 431,
      "body": {
        "error": "headers_too_large",
        "message": "Request headers too large or too many."
      }
    }
    "###);
}

// ---- Envelopes (docs/http-conventions.md#envelope) -----------------------------------------

#[tokio::test]
async fn a_cursor_paged_list_has_limit_and_next_cursor() {
    let app = TestApp::shared();
    let token = app.full_token().await;
    let res = app.get("/machines?limit=2", &token).await;
    assert_eq!(res.status, StatusCode::OK);
    assert!(res.body["meta"]["next_cursor"].is_string());
    assert_json_snapshot!(res.body, {
        ".data[].id" => "[id]",
        ".data[].last_seen_at" => "[time]",
        ".meta.next_cursor" => "[cursor]",
    }, @r###"
    {
      "data": [
        {
          "agent_version": "4.12.3",
          "hostname": "BDX-LT-0001",
          "id": "[id]",
          "ip": "10.40.30.12",
          "last_seen_at": "[time]",
          "modules": [
            "netflow",
            "netdiag"
          ],
          "os": "macOS 14 Sonoma",
          "status": "online"
        },
        {
          "agent_version": "4.12.3",
          "hostname": "BDX-LT-0002",
          "id": "[id]",
          "ip": "10.40.40.13",
          "last_seen_at": "[time]",
          "modules": [
            "netflow",
            "netdiag"
          ],
          "os": "Windows 10 Pro 22H2",
          "status": "offline"
        }
      ],
      "meta": {
        "limit": 2,
        "next_cursor": "[cursor]"
      }
    }
    "###);
}

#[tokio::test]
async fn a_limit_only_list_has_limit_and_no_cursor() {
    let app = TestApp::shared();
    let token = app.full_token().await;
    let res = app.get("/network/ports?limit=2", &token).await;
    assert_eq!(res.status, StatusCode::OK);
    assert_json_snapshot!(res.body, {
        ".data[].first_seen_at" => "[time]",
        ".data[].last_seen_at" => "[time]",
    }, @r###"
    {
      "data": [
        {
          "first_seen_at": "[time]",
          "host": "PAR-FW-01",
          "ip": "10.10.0.2",
          "last_seen_at": "[time]",
          "port": 22,
          "protocol": "tcp",
          "service": "ssh",
          "state": "open"
        },
        {
          "first_seen_at": "[time]",
          "host": "PAR-FW-01",
          "ip": "10.10.0.2",
          "last_seen_at": "[time]",
          "port": 161,
          "protocol": "udp",
          "service": "snmp",
          "state": "open"
        }
      ],
      "meta": {
        "limit": 2,
        "truncated": true
      }
    }
    "###);
}

#[tokio::test]
async fn a_single_object_has_an_empty_meta() {
    let app = TestApp::shared();
    let token = app.full_token().await;
    let res = app.get("/machines/PAR-LT-0001", &token).await;
    assert_eq!(res.status, StatusCode::OK);
    assert_json_snapshot!(res.body, {
        ".data.id" => "[id]",
        ".data.last_seen_at" => "[time]",
    }, @r###"
    {
      "data": {
        "agent_version": "4.11.8",
        "hostname": "PAR-LT-0001",
        "id": "[id]",
        "ip": "10.10.30.12",
        "last_seen_at": "[time]",
        "modules": [
          "netflow",
          "netdiag"
        ],
        "os": "macOS 14 Sonoma",
        "status": "online"
      },
      "meta": {}
    }
    "###);
    let token = app
        .token("acme", &[Scope::ReadMachines, Scope::ReadDns])
        .await;
    let res = app.get("/me", &token).await;
    assert_eq!(res.status, StatusCode::OK);
    assert_json_snapshot!(res.body, {
        ".data.name" => "[token name]",
        ".data.expires_at" => "[time]",
    }, @r###"
    {
      "data": {
        "expires_at": "[time]",
        "name": "[token name]",
        "scopes": [
          "read:machines",
          "read:dns"
        ],
        "tenant": "acme"
      },
      "meta": {}
    }
    "###);
}

#[tokio::test]
async fn a_windowed_list_gives_the_window_applied() {
    let app = TestApp::shared();
    let token = app.full_token().await;
    // A month asked of a route that reads 7 days at most: cut back to its last 7 days and
    // flagged. Dates given, so the window is the same on any day (and empty: the demo is
    // dated from now); in the future, as no window reaches back past the retention.
    let res = app
        .get(
            "/security/logons?from=2099-01-01T00:00:00Z&to=2099-02-01T00:00:00Z&limit=2",
            &token,
        )
        .await;
    assert_eq!(res.status, StatusCode::OK);
    assert_json_snapshot!(res.body, @r###"
    {
      "data": [],
      "meta": {
        "limit": 2,
        "next_cursor": null,
        "window": {
          "from": "2099-01-25T00:00:00.000Z",
          "to": "2099-02-01T00:00:00.000Z"
        },
        "window_capped": true
      }
    }
    "###);
    // A period ending now. The last hour of a monitor down in the demo holds its ongoing
    // incident only (ongoing incidents are always listed; the past ones ended hours ago).
    // An app of its own: the tests of acknowledgement change the shared app's incidents.
    let app = TestApp::with_modules(&[Function::Alerts]).await;
    let token = app.full_token().await;
    let monitors = app.get("/monitors", &token).await;
    let monitor = monitors
        .items()
        .iter()
        .find(|m| m["status"] == "down")
        .and_then(|m| m["id"].as_i64())
        .expect("a monitor down in the demo");
    let res = app
        .get(
            &format!("/monitors/{monitor}/incidents?period=1h&limit=1"),
            &token,
        )
        .await;
    assert_eq!(res.status, StatusCode::OK);
    let window = &res.body["meta"]["window"];
    let (from, to) = (
        window["from"].as_str().expect("from"),
        window["to"].as_str().expect("to"),
    );
    let hours = chrono::DateTime::parse_from_rfc3339(to).expect("to")
        - chrono::DateTime::parse_from_rfc3339(from).expect("from");
    assert_eq!(hours, chrono::Duration::hours(1));
    assert_json_snapshot!(res.body, {
        ".data[].id" => "[id]",
        ".data[].alert_id" => "hm-[n]",
        ".data[].monitor_id" => "[id]",
        ".data[].started_at" => "[time]",
        ".data[].duration_s" => "[seconds]",
        ".meta.window.from" => "[time]",
        ".meta.window.to" => "[time]",
    }, @r###"
    {
      "data": [
        {
          "acknowledged_at": null,
          "acknowledged_by": null,
          "alert_id": "hm-[n]",
          "duration_s": "[seconds]",
          "error": "HTTP 503 Service Unavailable",
          "id": "[id]",
          "kind": "down",
          "monitor_id": "[id]",
          "monitor_name": "Intranet (HTTPS)",
          "notes": null,
          "resolved_at": null,
          "severity": "critical",
          "started_at": "[time]",
          "status": "unresolved",
          "target": "https://intranet.acme.local/health"
        }
      ],
      "meta": {
        "limit": 1,
        "total": 1,
        "truncated": false,
        "window": {
          "from": "[time]",
          "to": "[time]"
        }
      }
    }
    "###);
}

// ---- Headers of the contract --------------------------------------------------------------

#[tokio::test]
async fn the_headers_of_an_answer() {
    let app = TestApp::shared();
    // A new token: its first call of the window.
    let token = app.token("acme", &[Scope::ReadMachines]).await;
    let res = app.get("/machines?limit=1", &token).await;
    assert_eq!(res.status, StatusCode::OK);
    // The strong tag of the bytes, and the browser asked to revalidate before each use
    // (docs/http-conventions.md); under 1 KiB, no compression, so no `Vary`.
    assert_json_snapshot!(headers(&res), {
        r#"["content-length"]"# => "[length]",
        r#"["etag"]"# => "[etag]",
        r#"["x-request-id"]"# => "[request id]",
        r#"["x-ratelimit-reset"]"# => "[seconds]",
    }, @r###"
    {
      "cache-control": "private, no-cache",
      "content-length": "[length]",
      "content-type": "application/json",
      "etag": "[etag]",
      "x-ratelimit-limit": "600",
      "x-ratelimit-remaining": "599",
      "x-ratelimit-reset": "[seconds]",
      "x-request-id": "[request id]"
    }
    "###);
    // A 401 asks for a bearer token; calls without a valid token share one quota per client
    // address, which the other tests use too.
    let res = app.request(Method::GET, "/machines", None, None, &[]).await;
    assert_json_snapshot!(headers(&res), {
        r#"["content-length"]"# => "[length]",
        r#"["x-request-id"]"# => "[request id]",
        r#"["x-ratelimit-remaining"]"# => "[calls]",
        r#"["x-ratelimit-reset"]"# => "[seconds]",
    }, @r###"
    {
      "content-length": "[length]",
      "content-type": "application/json",
      "www-authenticate": "Bearer",
      "x-ratelimit-limit": "600",
      "x-ratelimit-remaining": "[calls]",
      "x-ratelimit-reset": "[seconds]",
      "x-request-id": "[request id]"
    }
    "###);
    // A 405 lists the methods of the path. (Another new token: two calls of one token could
    // fall in two windows.)
    let token = app.token("acme", &[Scope::ReadMachines]).await;
    let res = app
        .request(
            Method::DELETE,
            "/machines/PAR-LT-0001",
            Some(&token),
            None,
            &[],
        )
        .await;
    assert_json_snapshot!(headers(&res), {
        r#"["content-length"]"# => "[length]",
        r#"["x-request-id"]"# => "[request id]",
        r#"["x-ratelimit-reset"]"# => "[seconds]",
    }, @r###"
    {
      "allow": "GET, HEAD",
      "content-length": "[length]",
      "content-type": "application/json",
      "x-ratelimit-limit": "600",
      "x-ratelimit-remaining": "599",
      "x-ratelimit-reset": "[seconds]",
      "x-request-id": "[request id]"
    }
    "###);
}
