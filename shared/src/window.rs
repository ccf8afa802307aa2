//! Time windows, parameter set W (docs/http-conventions.md#windows).

use axum::extract::FromRequestParts;
use chrono::{DateTime, Duration, Utc};
use http::request::Parts;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::error::ApiError;
use crate::extract::Params;
use crate::request::RequestCtx;
use crate::routes::WindowRule;
use crate::state::AppState;

/// The sliding periods of W.
pub const PERIODS: &[(&str, i64)] = &[
    ("1h", 3600),
    ("3h", 3 * 3600),
    ("6h", 6 * 3600),
    ("12h", 12 * 3600),
    ("24h", 24 * 3600),
    ("3d", 3 * 86400),
    ("7d", 7 * 86400),
    ("30d", 30 * 86400),
];

/// Seconds of a period name among `allowed`.
pub fn period_secs(name: &str, allowed: &[(&str, i64)]) -> Option<i64> {
    allowed.iter().find(|(n, _)| *n == name).map(|(_, s)| *s)
}

/// The window actually applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Window {
    pub from: DateTime<Utc>,
    pub to: DateTime<Utc>,
    /// True when the asked window was longer than the route's cap and was cut back.
    #[serde(skip)]
    pub capped: bool,
}

/// `meta.window`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct WindowMeta {
    pub from: DateTime<Utc>,
    pub to: DateTime<Utc>,
}

fn parse_time(name: &str, raw: &str) -> Result<DateTime<Utc>, ApiError> {
    // An unencoded '+' of an offset arrives as a space.
    let fixed = raw.trim().replace(' ', "+");
    DateTime::parse_from_rfc3339(&fixed)
        .map(|t| t.with_timezone(&Utc))
        .map_err(|_| {
            ApiError::invalid_parameter(
                name,
                "date-heure RFC 3339 attendue, par exemple 2026-11-20T08:00:00Z",
                "expected an RFC 3339 date-time, e.g. 2026-11-20T08:00:00Z",
            )
        })
}

impl Window {
    /// Resolves `period`, `from` and `to` against the route's rule at `now`.
    pub fn resolve(
        period: Option<&str>,
        from: Option<&str>,
        to: Option<&str>,
        rule: WindowRule,
        now: DateTime<Utc>,
    ) -> Result<Window, ApiError> {
        let period_len = match period {
            Some(p) => period_secs(p, PERIODS).ok_or_else(|| {
                ApiError::invalid_parameter(
                    "period",
                    "valeurs admises : 1h, 3h, 6h, 12h, 24h, 3d, 7d, 30d",
                    "allowed values: 1h, 3h, 6h, 12h, 24h, 3d, 7d, 30d",
                )
            })?,
            None => rule.default_secs,
        };
        let from = from.map(|f| parse_time("from", f)).transpose()?;
        let to = to.map(|t| parse_time("to", t)).transpose()?;
        let (from, to) = match (from, to) {
            (Some(f), Some(t)) => (f, t),
            (Some(f), None) => (f, now),
            (None, Some(t)) => (t - Duration::seconds(rule.default_secs), t),
            (None, None) => (now - Duration::seconds(period_len), now),
        };
        if from >= to {
            return Err(ApiError::invalid_parameter(
                "from",
                "« from » doit précéder « to »",
                "'from' must be before 'to'",
            ));
        }
        let mut window = Window {
            from,
            to,
            capped: false,
        };
        if let Some(max) = rule.max_secs
            && (to - from).num_seconds() > max
        {
            window.from = to - Duration::seconds(max);
            window.capped = true;
        }
        Ok(window)
    }

    /// The window cut to what the store keeps (`NETOPS_RETENTION_DAYS`): data older than
    /// `retention_days` before `now` has left it, so a window reaching further starts there,
    /// `capped` as for a route's maximum (a window wholly older is empty, `from` = `to`).
    pub fn retained(mut self, retention_days: u32, now: DateTime<Utc>) -> Window {
        let oldest = now - Duration::days(i64::from(retention_days));
        if self.from < oldest {
            self.from = oldest.min(self.to);
            self.capped = true;
        }
        self
    }

    pub fn from_ms(&self) -> i64 {
        self.from.timestamp_millis()
    }

    pub fn to_ms(&self) -> i64 {
        self.to.timestamp_millis()
    }

    pub fn meta(&self) -> WindowMeta {
        WindowMeta {
            from: self.from,
            to: self.to,
        }
    }
}

/// `period`, `from` and `to` as given, each at most once and not empty.
pub fn window_params(params: &Params) -> Result<[Option<String>; 3], ApiError> {
    let get = |name| params.once(name).map(|v| v.map(str::to_owned));
    Ok([get("period")?, get("from")?, get("to")?])
}

/// Extracts the window of a route that declares a [`WindowRule`] in the route table, within
/// the retention.
impl FromRequestParts<AppState> for Window {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        let request = RequestCtx::from_request_parts(parts, state).await?;
        let rule = request.route.window.ok_or_else(|| {
            ApiError::internal(&format!("route {} has no window rule", request.route.op))
        })?;
        let [period, from, to] = window_params(&Params::of(parts))?;
        let now = Utc::now();
        Ok(
            Window::resolve(period.as_deref(), from.as_deref(), to.as_deref(), rule, now)?
                .retained(state.config.retention_days(), now),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RULE: WindowRule = WindowRule {
        default_secs: 86400,
        max_secs: Some(7 * 86400),
    };

    fn now() -> DateTime<Utc> {
        "2026-11-22T12:00:00Z".parse().expect("date")
    }

    #[test]
    fn default_period_and_explicit_bounds() {
        let w = Window::resolve(None, None, None, RULE, now()).expect("w");
        assert_eq!((w.to - w.from).num_hours(), 24);
        assert!(!w.capped);
        let w = Window::resolve(Some("3h"), None, None, RULE, now()).expect("w");
        assert_eq!((w.to - w.from).num_hours(), 3);
        let w = Window::resolve(
            Some("1h"),
            Some("2026-11-20T00:00:00Z"),
            Some("2026-11-21T00:00:00+01:00"),
            RULE,
            now(),
        )
        .expect("w");
        assert_eq!(
            (w.to - w.from).num_hours(),
            23,
            "period ignored when both bounds given"
        );
        // Only `to`: the default period ending there; an unencoded '+' arrives as a space.
        let w =
            Window::resolve(None, None, Some("2026-11-21T00:00:00 01:00"), RULE, now()).expect("w");
        assert_eq!(
            w.to,
            "2026-11-20T23:00:00Z"
                .parse::<DateTime<Utc>>()
                .expect("date")
        );
        assert_eq!((w.to - w.from).num_hours(), 24);
    }

    #[test]
    fn windows_stop_at_the_retention() {
        let open = WindowRule {
            default_secs: 86400,
            max_secs: None,
        };
        let w = Window::resolve(None, Some("2000-01-01T00:00:00Z"), None, open, now())
            .expect("w")
            .retained(400, now());
        assert_eq!(w.from, now() - Duration::days(400));
        assert!(w.capped);
        let old = Window::resolve(
            None,
            Some("2000-01-01T00:00:00Z"),
            Some("2000-01-02T00:00:00Z"),
            open,
            now(),
        )
        .expect("w")
        .retained(400, now());
        assert_eq!(old.from, old.to);
        let recent = Window::resolve(Some("30d"), None, None, open, now()).expect("w");
        assert_eq!(recent.retained(400, now()), recent);
    }

    #[test]
    fn caps_long_windows_to_the_most_recent_part() {
        let w = Window::resolve(Some("30d"), None, None, RULE, now()).expect("w");
        assert!(w.capped);
        assert_eq!(w.to, now());
        assert_eq!((w.to - w.from).num_days(), 7);
    }

    #[test]
    fn rejects_bad_values() {
        assert!(Window::resolve(Some("2h"), None, None, RULE, now()).is_err());
        assert!(Window::resolve(None, Some("yesterday"), None, RULE, now()).is_err());
        assert!(
            Window::resolve(
                None,
                Some("2026-11-21T00:00:00Z"),
                Some("2026-11-20T00:00:00Z"),
                RULE,
                now()
            )
            .is_err()
        );
    }
}
