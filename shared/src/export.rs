//! Exports: every list route answers `Accept: text/csv` and `Accept: application/x-ndjson`
//! with the rows of its JSON pages, the whole filtered window in one answer.
//!
//! The export runs after the gate, so it is one call for the rate limit, and reads the route's
//! own pages in process: the first one at the route's largest page, then each
//! `meta.next_cursor`, so the rows, their order and the window are those of the JSON pages.
//! Each page is written out as it comes, through a channel of two chunks: memory holds one
//! page whatever the export's size, and a client that stops reading stops the reads. An
//! export stops after [`EXPORT_MAX_ROWS`] rows (said in `X-Export-Max-Rows`): one call cannot
//! make the store read without end. A list without cursor has one page, its largest: when
//! that did not hold every match, `X-Export-Truncated: true` says so.
//!
//! CSV (RFC 4180): UTF-8, a header row, CRLF line ends, fields quoted when they hold a comma,
//! a quote or a line end. Nested objects are flattened into dotted columns
//! (`location.city`), arrays are written as their JSON text, null as an empty field. The
//! columns are those of the first page's rows, in the order their fields come. NDJSON: one
//! row's JSON object a line.
//!
//! An answer whose `data` is not a list (a detail or a summary) stays JSON, as does a request
//! that prefers JSON or whose `Accept` names neither format. A first page refused (400, 404,
//! 503...) is that refusal, in JSON; a later page that fails ends the answer early, without
//! its last chunk, so that no client takes a cut export for a whole one.

use std::pin::Pin;
use std::task::{Context, Poll};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http::{HeaderValue, Method, StatusCode, header};
use http_body::Frame;
use serde_json::{Map, Value};
use tokio::sync::mpsc;
use tower::ServiceExt;

use crate::auth::Caller;
use crate::error::ApiError;
use crate::request::RequestCtx;

/// The most rows one export writes.
pub const EXPORT_MAX_ROWS: usize = 100_000;

pub const X_EXPORT_MAX_ROWS: http::HeaderName = http::HeaderName::from_static("x-export-max-rows");

/// Set on the export of a list without cursor whose largest page did not hold every match
/// (its `meta.truncated`): the export has the same rows, and says so here.
pub const X_EXPORT_TRUNCATED: http::HeaderName =
    http::HeaderName::from_static("x-export-truncated");

pub const CSV: &str = "text/csv; charset=utf-8";
pub const NDJSON: &str = "application/x-ndjson";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Csv,
    Ndjson,
}

/// The format `Accept` prefers (RFC 9110 12.5.1: the highest `q`, the first listed on a tie),
/// when it is one of the exports; JSON, anything else and a malformed header keep JSON.
pub fn wanted(accept: Option<&HeaderValue>) -> Option<Format> {
    let text = accept?.to_str().ok()?;
    let mut best: Option<(f32, Option<Format>)> = None;
    for range in text.split(',') {
        let mut parts = range.split(';').map(str::trim);
        let media = parts.next().unwrap_or("").to_ascii_lowercase();
        let q = parts
            .filter_map(|p| p.split_once('='))
            .find(|(k, _)| k.trim().eq_ignore_ascii_case("q"))
            .map_or(Some(1.0), |(_, v)| v.trim().parse::<f32>().ok());
        let Some(q) = q.filter(|q| (0.0..=1.0).contains(q) && *q > 0.0) else {
            continue;
        };
        let format = match media.as_str() {
            "text/csv" => Some(Format::Csv),
            "application/x-ndjson" | "application/ndjson" => Some(Format::Ndjson),
            "application/json" | "application/*" | "*/*" => None,
            _ => continue,
        };
        if best.is_none_or(|(b, _)| q > b) {
            best = Some((q, format));
        }
    }
    best.and_then(|(_, f)| f)
}

/// Whether an answer is an export (whose body is streamed, never held whole).
pub fn is_export(headers: &http::HeaderMap) -> bool {
    headers.contains_key(X_EXPORT_MAX_ROWS)
}

/// The middleware, after the gate: answers an admitted GET (or HEAD: the same headers, no
/// body, no page read but the first) that asks for an export.
pub async fn pages(State(api): State<Router>, req: Request, next: Next) -> Response {
    let format = wanted(req.headers().get(header::ACCEPT));
    let (Some(format), Some(ctx), Some(caller)) = (
        format,
        req.extensions().get::<RequestCtx>().cloned(),
        req.extensions().get::<Caller>().cloned(),
    ) else {
        return next.run(req).await;
    };
    let head = req.method() == Method::HEAD;
    if req.method() != Method::GET && !head {
        return next.run(req).await;
    }
    let pager = Pager {
        api,
        path: req.uri().path().to_owned(),
        filters: filters(req.uri().query()),
        limit: ctx.route.paging.map(|p| p.max),
        language: req.headers().get(header::ACCEPT_LANGUAGE).cloned(),
        ctx,
        caller,
    };
    let first = pager.page(None).await;
    if first.status() != StatusCode::OK {
        return first;
    }
    let (parts, body) = first.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, usize::MAX).await else {
        return ApiError::internal(&"a page could not be read").into_response();
    };
    let page: Value = match serde_json::from_slice(&bytes) {
        Ok(v) => v,
        Err(e) => return ApiError::internal(&e).into_response(),
    };
    if !page["data"].is_array() {
        // Not a list: the JSON answer, as it was.
        return Response::from_parts(parts, Body::from(bytes));
    }
    let content_type = match format {
        Format::Csv => CSV,
        Format::Ndjson => NDJSON,
    };
    let mut headers = http::HeaderMap::new();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(X_EXPORT_MAX_ROWS, HeaderValue::from(EXPORT_MAX_ROWS));
    if page["meta"]["truncated"] == Value::Bool(true) {
        headers.insert(X_EXPORT_TRUNCATED, HeaderValue::from_static("true"));
    }
    if head {
        return (headers, Body::empty()).into_response();
    }
    let (tx, rx) = mpsc::channel(2);
    tokio::spawn(pager.stream(format, page, tx));
    (headers, Body::new(Chunks(rx))).into_response()
}

/// The query's parameters but paging's, which the export sets itself.
fn filters(query: Option<&str>) -> Vec<(String, String)> {
    form_urlencoded::parse(query.unwrap_or("").as_bytes())
        .filter(|(k, _)| k != "limit" && k != "cursor")
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect()
}

/// Reads one list route's pages in process, as their caller.
struct Pager {
    api: Router,
    path: String,
    filters: Vec<(String, String)>,
    /// The route's largest page, when it has pages.
    limit: Option<u32>,
    language: Option<HeaderValue>,
    ctx: RequestCtx,
    caller: Caller,
}

impl Pager {
    /// The page after `cursor` (the first without), at the route's largest size.
    async fn page(&self, cursor: Option<&str>) -> Response {
        let uri = self.uri(cursor);
        let mut req = Request::builder().method(Method::GET).uri(uri);
        if let Some(l) = &self.language {
            req = req.header(header::ACCEPT_LANGUAGE, l.clone());
        }
        let Ok(mut req) = req.body(Body::empty()) else {
            return ApiError::internal(&"an export page request").into_response();
        };
        req.extensions_mut().insert(self.ctx.clone());
        req.extensions_mut().insert(self.caller.clone());
        match self.api.clone().oneshot(req).await {
            Ok(res) => res,
            Err(never) => match never {},
        }
    }

    /// The page's path and query: the filters, the largest page, the cursor.
    fn uri(&self, cursor: Option<&str>) -> String {
        let mut query = form_urlencoded::Serializer::new(String::new());
        query.extend_pairs(&self.filters);
        if let Some(limit) = self.limit {
            query.append_pair("limit", &limit.to_string());
        }
        if let Some(c) = cursor {
            query.append_pair("cursor", c);
        }
        let query = query.finish();
        if query.is_empty() {
            self.path.clone()
        } else {
            format!("{}?{query}", self.path)
        }
    }

    /// Writes `first` and every page after it to `tx`, up to [`EXPORT_MAX_ROWS`] rows.
    async fn stream(self, format: Format, first: Value, tx: mpsc::Sender<Chunk>) {
        let mut columns = Vec::new();
        let rows = first["data"].as_array().map_or(&[][..], Vec::as_slice);
        if format == Format::Csv {
            columns = columns_of(rows);
            let header: Vec<Value> = columns.iter().map(|c| Value::String(c.clone())).collect();
            if tx.send(Ok(Bytes::from(csv_line(&header)))).await.is_err() {
                return;
            }
        }
        let mut page = first;
        let mut written = 0;
        loop {
            let rows = page["data"].as_array().map_or(&[][..], Vec::as_slice);
            let take = rows.len().min(EXPORT_MAX_ROWS - written);
            let chunk = lines(format, &columns, &rows[..take]);
            written += take;
            if tx.send(Ok(Bytes::from(chunk))).await.is_err() {
                return;
            }
            let next = page["meta"]["next_cursor"].as_str().map(str::to_owned);
            let (Some(cursor), true) = (next, written < EXPORT_MAX_ROWS) else {
                return;
            };
            page = match self.next(&cursor).await {
                Ok(p) => p,
                Err(e) => {
                    tracing::warn!(cause = %e, path = self.path, "an export ended early: a page failed");
                    let _ = tx.send(Err(e)).await;
                    return;
                }
            };
        }
    }

    async fn next(&self, cursor: &str) -> Result<Value, String> {
        let res = self.page(Some(cursor)).await;
        let status = res.status();
        let bytes = axum::body::to_bytes(res.into_body(), usize::MAX)
            .await
            .map_err(|e| e.to_string())?;
        if status != StatusCode::OK {
            return Err(format!("page answered {status}"));
        }
        serde_json::from_slice(&bytes).map_err(|e| e.to_string())
    }
}

/// The text of `rows` in `format`.
fn lines(format: Format, columns: &[String], rows: &[Value]) -> String {
    let mut out = String::new();
    for row in rows {
        match format {
            Format::Ndjson => {
                out.push_str(&row.to_string());
                out.push('\n');
            }
            Format::Csv => {
                let mut flat = Map::new();
                flatten("", row, &mut flat);
                let cells: Vec<Value> = columns
                    .iter()
                    .map(|c| flat.remove(c).unwrap_or(Value::Null))
                    .collect();
                out.push_str(&csv_line(&cells));
            }
        }
    }
    out
}

/// The columns of `rows`: their flattened fields, in the order they first come.
fn columns_of(rows: &[Value]) -> Vec<String> {
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::new();
    for row in rows {
        let mut flat = Map::new();
        flatten("", row, &mut flat);
        for key in flat.keys() {
            if seen.insert(key.clone()) {
                out.push(key.clone());
            }
        }
    }
    out
}

/// `value`'s fields under `prefix`: objects into dotted names, anything else as it is.
fn flatten(prefix: &str, value: &Value, out: &mut Map<String, Value>) {
    match value {
        Value::Object(fields) if !fields.is_empty() => {
            for (k, v) in fields {
                let name = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                flatten(&name, v, out);
            }
        }
        _ if prefix.is_empty() => {
            out.insert("value".into(), value.clone());
        }
        _ => {
            out.insert(prefix.to_owned(), value.clone());
        }
    }
}

/// One CSV record (RFC 4180), CRLF-terminated.
fn csv_line(cells: &[Value]) -> String {
    let fields: Vec<String> = cells
        .iter()
        .map(|v| {
            let text = match v {
                Value::Null => String::new(),
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            if text.contains([',', '"', '\r', '\n']) {
                format!("\"{}\"", text.replace('"', "\"\""))
            } else {
                text
            }
        })
        .collect();
    format!("{}\r\n", fields.join(","))
}

/// A chunk of an export, or why it ended early.
type Chunk = Result<Bytes, String>;

/// An export's body: the chunks its writer sends.
struct Chunks(mpsc::Receiver<Chunk>);

impl http_body::Body for Chunks {
    type Data = Bytes;
    type Error = axum::BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        self.0
            .poll_recv(cx)
            .map(|chunk| chunk.map(|c| c.map(Frame::data).map_err(Into::into)))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn accept_picks_the_preferred_format() {
        let w = |s: &str| wanted(Some(&HeaderValue::from_str(s).expect("header")));
        assert_eq!(w("text/csv"), Some(Format::Csv));
        assert_eq!(w("application/x-ndjson"), Some(Format::Ndjson));
        assert_eq!(w("application/json, text/csv;q=0.5"), None);
        assert_eq!(w("application/json;q=0.4, text/csv"), Some(Format::Csv));
        assert_eq!(
            w("text/csv;q=0, application/x-ndjson;q=0.2"),
            Some(Format::Ndjson)
        );
        assert_eq!(w("text/csv;q=2"), None);
        assert_eq!(w("text/csv;q=abc"), None);
        assert_eq!(w("text/html"), None);
        assert_eq!(w("*/*"), None);
        assert_eq!(w(";;,,"), None);
        assert_eq!(wanted(None), None);
    }

    #[test]
    fn rows_flatten_into_quoted_csv_fields() {
        let rows = [
            json!({"id": 1, "name": "a,b", "where": {"city": "Paris", "geo": {"lat": 48.8}}, "tags": ["x"], "note": null}),
            json!({"id": 2, "name": "dit \"non\"\nvraiment", "where": {}, "extra": true}),
        ];
        let columns = columns_of(&rows);
        assert_eq!(
            columns,
            [
                "id",
                "name",
                "note",
                "tags",
                "where.city",
                "where.geo.lat",
                "extra",
                "where"
            ]
        );
        assert_eq!(
            lines(Format::Csv, &columns, &rows),
            "1,\"a,b\",,\"[\"\"x\"\"]\",Paris,48.8,,\r\n2,\"dit \"\"non\"\"\nvraiment\",,,,,true,{}\r\n"
        );
        assert_eq!(
            lines(Format::Ndjson, &[], &rows[..1]),
            format!("{}\n", rows[0])
        );
    }
}
