//! The one paging helper (docs/http-conventions.md#paging): limit default, max and clamp from
//! the route table; opaque signed cursors; 400 on a bad limit or cursor.

use std::sync::Arc;

use axum::extract::FromRequestParts;
use http::request::Parts;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::auth::Caller;
use crate::cursor::{CursorCodec, Refused, fingerprint};
use crate::envelope::Meta;
use crate::error::ApiError;
use crate::extract::Params;
use crate::lookup::decode_text;
use crate::request::RequestCtx;
use crate::state::AppState;
use crate::store::{Filter, Position, Record, SeriesQuery};
use crate::window::{Window, window_params};

/// The page asked for: `limit` validated and clamped, `cursor` not yet decoded (it is bound
/// to the filters, which only the handler knows).
#[derive(Clone)]
pub struct Page {
    pub limit: u32,
    cursor: Option<String>,
    codec: Arc<CursorCodec>,
    tenant: String,
    op: &'static str,
    /// The window parameters as given, on routes with a window: a cursor is bound to them as
    /// to the filters, so a next page asked with another window is refused, not re-read.
    window: Option<[Option<String>; 3]>,
}

/// Parses `limit` for a route: 400 unless a positive integer written in digits alone (no
/// sign, no blank, not empty) that fits 64 bits; clamped to `max`.
pub fn parse_limit(raw: Option<&str>, default: u32, max: u32) -> Result<u32, ApiError> {
    let Some(v) = raw else {
        return Ok(default);
    };
    let digits = v.bytes().all(|b| b.is_ascii_digit());
    match v.parse::<u64>() {
        Ok(n) if digits && n >= 1 => Ok(n.min(u64::from(max)) as u32),
        _ => Err(ApiError::invalid_parameter(
            "limit",
            "entier supérieur ou égal à 1 attendu",
            "expected an integer of at least 1",
        )),
    }
}

impl FromRequestParts<AppState> for Page {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        let caller = Caller::from_request_parts(parts, state).await?;
        let request = RequestCtx::from_request_parts(parts, state).await?;
        let rule = request.route.paging.ok_or_else(|| {
            ApiError::internal(&format!("route {} has no paging rule", request.route.op))
        })?;
        let params = Params::of(parts);
        let limit = parse_limit(params.once("limit")?, rule.default, rule.max)?;
        // On routes without cursor paging, `cursor` is an unknown parameter: ignored. The
        // first page is asked without it (an empty one is refused like any empty value).
        let cursor = match rule.cursor {
            true => params.once("cursor")?.map(str::to_owned),
            false => None,
        };
        let window = match request.route.window {
            Some(_) => Some(window_params(&params)?),
            None => None,
        };
        // A function reads its cursor key ring at start beside its first request
        // (netops-lambda): a page that may sign or verify a cursor waits for it, after the
        // caller's token read it overlapped and the checks of its parameters, as long as a
        // store operation may take.
        let wait = std::time::Duration::from_secs(state.config.dynamodb.timeout_secs);
        if rule.cursor && !state.cursors.ready(wait).await {
            return Err(ApiError::unavailable(
                &"the cursor key ring is not read yet",
            ));
        }
        Ok(Page {
            limit,
            cursor,
            codec: state.cursors.clone(),
            tenant: caller.tenant,
            op: request.route.op,
            window,
        })
    }
}

impl Page {
    /// The position the cursor points at, checked against the current filters.
    pub fn resume<P: DeserializeOwned>(
        &self,
        filters: &impl Serialize,
    ) -> Result<Option<P>, ApiError> {
        match &self.cursor {
            None => Ok(None),
            Some(c) => self
                .codec
                .decode(c, self.op, &self.tenant, &self.fingerprint(filters))
                .map(Some)
                .map_err(|refused| match refused {
                    Refused::Invalid => ApiError::invalid_cursor(),
                    Refused::Expired => ApiError::expired_cursor(self.codec.valid_hours()),
                }),
        }
    }

    /// A cursor for the next page.
    pub fn cursor_for<P: Serialize>(&self, filters: &impl Serialize, position: &P) -> String {
        self.codec
            .encode(self.op, &self.tenant, &self.fingerprint(filters), position)
    }

    /// What a cursor is bound to besides route and tenant: the filters and the window
    /// parameters as given.
    fn fingerprint(&self, filters: &impl Serialize) -> String {
        fingerprint(&(filters, &self.window))
    }

    /// `meta.limit` and `meta.next_cursor`.
    pub fn meta<P: Serialize>(&self, filters: &impl Serialize, next: Option<&P>) -> Meta {
        Meta::new()
            .limit(self.limit)
            .next_cursor(next.map(|p| self.cursor_for(filters, p)))
    }

    /// A list without cursor: `items` (in the order answered) cut to the limit, with
    /// `meta.limit` and `meta.truncated`, true when `more` (items the caller did not pass
    /// matched) or when `items` held more than the limit.
    pub fn limited<T>(&self, mut items: Vec<T>, more: bool) -> (Vec<T>, Meta) {
        let more = more || items.len() > self.limit as usize;
        items.truncate(self.limit as usize);
        (items, Meta::new().limit(self.limit).truncated(more))
    }
}

#[derive(Serialize, Deserialize)]
struct SeriesCursor {
    /// The window of the first page, kept so every page reads the same window.
    w: (i64, i64),
    p: Position,
}

/// What a series list reads.
pub struct SeriesSpec<'a> {
    pub series: &'a str,
    pub partition: Option<&'a str>,
    pub filter: &'a Filter,
}

impl<'a> SeriesSpec<'a> {
    /// The read of `limit` records of the tenant's series between `from` and `to` (ms),
    /// after `after`.
    pub fn query(
        &self,
        tenant: &'a str,
        from: i64,
        to: i64,
        after: Option<&'a Position>,
        limit: usize,
    ) -> SeriesQuery<'a> {
        SeriesQuery {
            tenant,
            series: self.series,
            partition: self.partition,
            from,
            to,
            filter: self.filter,
            after,
            limit,
        }
    }
}

/// One newest-first page of a series within the window. The cursor keeps the first page's
/// window, so a sliding period does not shift between pages. On DynamoDB a page whose filter
/// few records match may hold fewer items than the limit, even none, with a cursor: the read
/// stopped at its budget ([`crate::store::SeriesRead::scan_bounded`]); the cursor goes on
/// from there.
pub async fn series_page(
    state: &AppState,
    caller: &Caller,
    page: &Page,
    window: &Window,
    spec: SeriesSpec<'_>,
    filters: &impl Serialize,
) -> Result<(Vec<Record>, Meta), ApiError> {
    let resumed: Option<SeriesCursor> = page.resume(filters)?;
    let mut applied = *window;
    if let Some(c) = &resumed {
        applied.from = chrono::DateTime::from_timestamp_millis(c.w.0).unwrap_or(window.from);
        applied.to = chrono::DateTime::from_timestamp_millis(c.w.1).unwrap_or(window.to);
    }
    let result = state
        .stores
        .series
        .scan_bounded(&spec.query(
            &caller.tenant,
            applied.from_ms(),
            applied.to_ms(),
            resumed.as_ref().map(|c| &c.p),
            page.limit as usize,
        ))
        .await?;
    let next = result.next.map(|p| SeriesCursor {
        w: (applied.from_ms(), applied.to_ms()),
        p,
    });
    Ok((
        result.records,
        page.meta(filters, next.as_ref()).window(&applied),
    ))
}

/// The newest records of a series within the window, as many as the page holds: a list
/// without cursor ([`Page::limited`]), with the window in `meta`. A read stopped at its
/// budget (DynamoDB, a filter few records match) answers what it found with
/// `meta.truncated`.
pub async fn series_list(
    state: &AppState,
    caller: &Caller,
    page: &Page,
    window: &Window,
    spec: SeriesSpec<'_>,
) -> Result<(Vec<Record>, Meta), ApiError> {
    let result = state
        .stores
        .series
        .scan_bounded(&spec.query(
            &caller.tenant,
            window.from_ms(),
            window.to_ms(),
            None,
            page.limit as usize,
        ))
        .await?;
    let (records, meta) = page.limited(result.records, result.next.is_some());
    Ok((records, meta.window(window)))
}

/// One page of documents in key order, each decoded from its stored text into its type.
pub async fn docs_page<T: DeserializeOwned>(
    state: &AppState,
    caller: &Caller,
    page: &Page,
    collection: &str,
    filter: &Filter,
    filters: &impl Serialize,
) -> Result<(Vec<T>, Meta), ApiError> {
    let after: Option<String> = page.resume(filters)?;
    let (mut docs, stopped) = state
        .stores
        .docs
        .list_bounded(
            &caller.tenant,
            collection,
            filter,
            after.as_deref(),
            page.limit as usize + 1,
        )
        .await?;
    let next = if docs.len() > page.limit as usize {
        docs.truncate(page.limit as usize);
        docs.last().map(|d| d.key.clone())
    } else {
        // Short of a page: the end of the collection, or (DynamoDB) the read's budget, after
        // which the next page goes on from the last key examined.
        stopped
    };
    let data = docs
        .iter()
        .map(|d| decode_text(&d.body))
        .collect::<Result<_, _>>()?;
    Ok((data, page.meta(filters, next.as_ref())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_default_clamp_and_reject() {
        assert_eq!(parse_limit(None, 100, 500).expect("l"), 100);
        assert_eq!(parse_limit(Some("7"), 100, 500).expect("l"), 7);
        assert_eq!(parse_limit(Some("9999"), 100, 500).expect("l"), 500);
        for bad in ["0", "-1", "abc", "1.5", "", "+5", " 5", "5 ", "0000"] {
            assert!(parse_limit(Some(bad), 100, 500).is_err(), "{bad}");
        }
    }
}
