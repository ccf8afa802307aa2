//! Exports (`shared/src/export.rs`): a list route asked for `text/csv` or
//! `application/x-ndjson` answers every row of its JSON pages over the whole filtered window,
//! as one call of the rate limit; anything else stays JSON.

use std::io::Read;

use chrono::Duration;
use http::{Method, StatusCode};
use serde_json::Value;

use crate::helpers::{TestApp, TestResponse, stamp, walk};
use crate::serve::served::Serve;

async fn export(app: &TestApp, path: &str, token: &str, accept: &str) -> TestResponse {
    app.request(Method::GET, path, Some(token), None, &[("accept", accept)])
        .await
}

fn text(res: &TestResponse) -> &str {
    std::str::from_utf8(&res.bytes).expect("UTF-8")
}

/// The records of an RFC 4180 text: fields split on commas outside quotes, `""` a quote,
/// records ended by CRLF outside quotes.
fn csv_records(text: &str) -> Vec<Vec<String>> {
    let (mut records, mut record, mut field) = (Vec::new(), Vec::new(), String::new());
    let (mut quoted, mut chars) = (false, text.chars().peekable());
    while let Some(c) = chars.next() {
        match (quoted, c) {
            (true, '"') if chars.peek() == Some(&'"') => {
                chars.next();
                field.push('"');
            }
            (true, '"') => quoted = false,
            (true, c) => field.push(c),
            (false, '"') => quoted = true,
            (false, ',') => record.push(std::mem::take(&mut field)),
            (false, '\r') => {
                assert_eq!(chars.next(), Some('\n'), "CR without LF");
                record.push(std::mem::take(&mut field));
                records.push(std::mem::take(&mut record));
            }
            (false, c) => field.push(c),
        }
    }
    assert!(
        field.is_empty() && record.is_empty() && !quoted,
        "unended record"
    );
    records
}

/// A cell as the export writes a JSON value.
fn cell(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

#[tokio::test]
async fn a_csv_export_holds_every_row_of_the_json_pages_as_one_call() {
    let app = TestApp::shared();
    let token = app.full_token().await;
    let pages = walk(app, "/machines?limit=7", &token).await;
    assert!(pages.len() > 7, "several pages: {}", pages.len());
    let before = app.get("/me", &token).await;
    let res = export(app, "/machines?limit=7&cursor=junk", &token, "text/csv").await;
    assert_eq!(res.status, StatusCode::OK, "{}", text(&res));
    assert_eq!(res.header("content-type"), Some("text/csv; charset=utf-8"));
    assert_eq!(res.header("x-export-max-rows"), Some("100000"));
    // One call: the export and the /me after it, nothing for its pages.
    let after = app.get("/me", &token).await;
    let remaining = |r: &TestResponse| {
        r.header("x-ratelimit-remaining")
            .and_then(|v| v.parse::<i64>().ok())
            .expect("remaining")
    };
    assert_eq!(remaining(&before) - remaining(&after), 2);

    let records = csv_records(text(&res));
    let (header, rows) = records.split_first().expect("header row");
    assert_eq!(rows.len(), pages.len());
    for (row, item) in rows.iter().zip(&pages) {
        assert_eq!(row.len(), header.len());
        for (column, value) in header.iter().zip(row) {
            let mut v = item;
            for part in column.split('.') {
                v = &v[part];
            }
            let want = match v {
                Value::Object(_) | Value::Array(_) => v.to_string(),
                other => cell(other),
            };
            assert_eq!(value, &want, "{column} of {}", item["hostname"]);
        }
    }
}

#[tokio::test]
async fn nested_fields_are_dotted_columns() {
    let app = TestApp::shared();
    let token = app.full_token().await;
    let to = app.seeded.0;
    let path = format!(
        "/alerts?status=all&from={}&to={}",
        stamp(to - Duration::days(7)),
        stamp(to)
    );
    let json = app.get(&format!("{path}&limit=500"), &token).await;
    let res = export(app, &path, &token, "text/csv").await;
    let records = csv_records(text(&res));
    let (header, rows) = records.split_first().expect("header row");
    assert_eq!(rows.len(), json.items().len());
    // A list without cursor is its largest page, and says when more matched.
    let truncated = json.body["meta"]["truncated"] == Value::Bool(true);
    assert_eq!(res.header("x-export-truncated") == Some("true"), truncated);
    let details: Vec<&String> = header
        .iter()
        .filter(|c| c.starts_with("details."))
        .collect();
    assert!(!details.is_empty(), "{header:?}");
    let id = header.iter().position(|c| c == "id").expect("id column");
    for (row, item) in rows.iter().zip(json.items()) {
        assert_eq!(row[id], cell(&item["id"]));
    }
}

#[tokio::test]
async fn an_ndjson_export_covers_the_whole_window_page_after_page() {
    let app = TestApp::shared();
    let token = app.full_token().await;
    // A fixed window: the same rows whenever asked. Three days, so that it always holds a
    // working day's flows (24 hours of a weekend evening can hold fewer than a page).
    let to = app.seeded.0;
    let path = format!(
        "/flows?from={}&to={}",
        stamp(to - Duration::hours(72)),
        stamp(to)
    );
    let pages = walk(app, &format!("{path}&limit=500"), &token).await;
    assert!(pages.len() > 500, "more than one page: {}", pages.len());
    let res = export(app, &path, &token, "application/x-ndjson").await;
    assert_eq!(res.status, StatusCode::OK);
    assert_eq!(res.header("content-type"), Some("application/x-ndjson"));
    let rows: Vec<Value> = text(&res)
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON object a line"))
        .collect();
    assert_eq!(rows, pages);
}

#[tokio::test]
async fn anything_but_a_list_asked_for_an_export_stays_json() {
    let app = TestApp::shared();
    let token = app.full_token().await;
    let json = app.get("/machines?limit=3", &token).await;
    for accept in [
        "text/html",
        "application/json, text/csv;q=0.5",
        "text/csv;q=nope",
        ";;,",
        "*/*",
    ] {
        let res = export(app, "/machines?limit=3", &token, accept).await;
        assert_eq!(res.status, StatusCode::OK, "{accept}");
        assert!(
            res.header("content-type")
                .is_some_and(|t| t.starts_with("application/json"))
        );
        assert_eq!(res.items().len(), 3, "{accept}");
        assert_eq!(res.items(), json.items());
    }
    // A detail and a summary are not lists.
    let host = json.items()[0]["hostname"].as_str().expect("hostname");
    for path in [format!("/machines/{host}"), "/flows/summary".to_owned()] {
        let res = export(app, &path, &token, "text/csv").await;
        assert_eq!(res.status, StatusCode::OK, "{path}");
        assert!(res.body["data"].is_object(), "{path}: {}", res.body);
    }
    // A refused first page is the refusal, in JSON; so is a missing scope or token.
    let res = export(app, "/alerts?status=bogus", &token, "text/csv").await;
    res.assert_invalid("status");
    let none = app.token("acme", &[]).await;
    let res = export(app, "/machines", &none, "text/csv").await;
    assert_eq!(res.status, StatusCode::FORBIDDEN);
    let res = app
        .request(
            Method::GET,
            "/machines",
            None,
            None,
            &[("accept", "text/csv")],
        )
        .await;
    assert_eq!(res.status, StatusCode::UNAUTHORIZED);
    assert_eq!(res.error(), "unauthorized");
}

#[tokio::test]
async fn an_export_shows_no_other_tenants_rows() {
    let app = TestApp::shared();
    let acme = app.full_token().await;
    let globex = app.token("globex", netops_shared::scope::Scope::ALL).await;
    let hosts = |res: &TestResponse| -> Vec<String> {
        text(res)
            .lines()
            .map(|l| {
                let v: Value = serde_json::from_str(l).expect("JSON line");
                v["hostname"].as_str().expect("hostname").to_owned()
            })
            .collect()
    };
    let a = hosts(&export(app, "/machines", &acme, "application/x-ndjson").await);
    let g = hosts(&export(app, "/machines", &globex, "application/x-ndjson").await);
    assert!(!a.is_empty() && !g.is_empty());
    assert!(a.iter().all(|h| !g.contains(h)));
    assert_eq!(a.len(), walk(app, "/machines", &acme).await.len());
}

fn unbrotli(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    brotli::Decompressor::new(bytes, 4096)
        .read_to_end(&mut out)
        .expect("brotli");
    out
}

/// Brotli, which the local process encodes itself (local/src/br.rs), streams a CSV export as
/// tower-http's gzip does: no tag, no length, the same rows once decoded.
#[tokio::test]
async fn a_csv_export_in_brotli_is_streamed_untagged_and_decodes_to_the_same_rows() {
    let app = TestApp::shared();
    let token = app.full_token().await;
    let plain = export(app, "/machines", &token, "text/csv").await;
    assert_eq!(plain.status, StatusCode::OK);
    let res = app
        .request(
            Method::GET,
            "/machines",
            Some(&token),
            None,
            &[
                ("accept", "text/csv"),
                ("accept-encoding", "gzip, deflate, br"),
            ],
        )
        .await;
    assert_eq!(res.status, StatusCode::OK);
    assert_eq!(res.header("content-encoding"), Some("br"));
    assert_eq!(res.header("etag"), None);
    assert_eq!(res.header("content-length"), None);
    assert_eq!(res.header("vary"), Some("accept-encoding"));
    assert!(res.bytes.len() < plain.bytes.len() / 2);
    assert_eq!(unbrotli(&res.bytes), plain.bytes);
}

/// Through the real binary: the brotli export leaves in chunks as it is written, never with a
/// length that would mean holding it whole.
#[tokio::test]
async fn over_http_a_brotli_export_is_sent_in_chunks() {
    let served = Serve::seeded().start();
    let http = reqwest::Client::new();
    let url = format!("{}/machines", served.base);
    let get = |coding: Option<&'static str>| {
        let mut req = http
            .get(&url)
            .bearer_auth(&served.token)
            .header("accept", "text/csv");
        if let Some(c) = coding {
            req = req.header("accept-encoding", c);
        }
        req.send()
    };
    let plain = get(None).await.expect("export");
    assert_eq!(plain.status(), 200);
    let plain = plain.bytes().await.expect("body");
    let res = get(Some("br")).await.expect("export");
    assert_eq!(res.status(), 200);
    assert_eq!(res.headers()["content-encoding"], "br");
    assert_eq!(res.headers()["transfer-encoding"], "chunked");
    assert!(res.headers().get("content-length").is_none());
    let bytes = res.bytes().await.expect("body");
    assert_eq!(unbrotli(&bytes), plain);
}

#[tokio::test]
async fn an_export_is_streamed_untagged_and_head_gives_its_headers() {
    let app = TestApp::shared();
    let token = app.full_token().await;
    let res = app
        .request(
            Method::GET,
            "/machines",
            Some(&token),
            None,
            &[("accept", "text/csv"), ("accept-encoding", "gzip")],
        )
        .await;
    assert_eq!(res.status, StatusCode::OK);
    // Never held whole to compute a tag; compressed as it streams.
    assert_eq!(res.header("etag"), None);
    assert_eq!(res.header("content-encoding"), Some("gzip"));
    let head = app
        .request(
            Method::HEAD,
            "/machines",
            Some(&token),
            None,
            &[("accept", "text/csv")],
        )
        .await;
    assert_eq!(head.status, StatusCode::OK);
    assert_eq!(head.header("content-type"), Some("text/csv; charset=utf-8"));
    assert!(head.bytes.is_empty());
}
