//! NetDiag reads shared by the JSON routes and the PDF report, over the storage ports.

use std::collections::{BTreeMap, HashMap};

use chrono::{DateTime, Duration, DurationRound, Utc};
use netops_shared::lookup::Lookup;
use netops_shared::store::{Filter, Pred, SeriesQuery};
use netops_shared::{ApiError, AppState, Window};
use serde_json::json;

use crate::model::*;

pub use netops_shared::lookup::decode;

/// The latest measurement at or before `to`.
pub async fn latest(
    app: &AppState,
    tenant: &str,
    hostname: &str,
    to: DateTime<Utc>,
) -> Result<Option<Measurement>, ApiError> {
    let page = app
        .stores
        .series
        .scan(&SeriesQuery {
            tenant,
            series: MEASURES,
            partition: Some(hostname),
            from: 0,
            to: to.timestamp_millis() + 1,
            filter: &Filter::all(),
            after: None,
            limit: 1,
        })
        .await?;
    page.records
        .into_iter()
        .next()
        .map(|r| decode(r.body))
        .transpose()
}

pub async fn state(
    app: &AppState,
    tenant: &str,
    hostname: &str,
) -> Result<Option<State>, ApiError> {
    app.stores.docs.get_as(tenant, STATES, hostname).await
}

pub async fn alert(
    app: &AppState,
    tenant: &str,
    id: Option<&str>,
) -> Result<Option<Alert>, ApiError> {
    let Some(id) = id else { return Ok(None) };
    app.stores.docs.get_as(tenant, ALERTS, id).await
}

/// Start of the hour holding `t`.
pub fn hour_floor(t: DateTime<Utc>) -> DateTime<Utc> {
    t.duration_trunc(Duration::hours(1)).unwrap_or(t)
}

fn share(n: u64, total: u64) -> f64 {
    if total == 0 {
        0.0
    } else {
        (n as f64 * 1000.0 / total as f64).round() / 10.0
    }
}

/// The non-OK periods overlapping `[from, to)`, oldest first.
pub async fn periods(
    app: &AppState,
    tenant: &str,
    hostname: &str,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
) -> Result<Vec<Period>, ApiError> {
    let all = app
        .stores
        .series
        .read_all(
            tenant,
            PERIODS,
            Some(hostname),
            (from - Duration::days(MAX_PERIOD_DAYS)).timestamp_millis(),
            to.timestamp_millis(),
            &Filter::all(),
        )
        .await?;
    let mut out = all
        .items
        .into_iter()
        .map(|r| decode::<Period>(r.body))
        .collect::<Result<Vec<_>, _>>()?;
    out.retain(|p| p.end.is_none_or(|e| e > from));
    out.reverse();
    Ok(out)
}

/// Measured time of the window: the part of it the machine was measured.
#[derive(Debug, Clone, Copy)]
pub struct Span {
    pub from: DateTime<Utc>,
    pub to: DateTime<Utc>,
}

impl Span {
    pub fn of(w: &Window, st: Option<&State>) -> Option<Span> {
        let (first, last) = match st {
            Some(s) => (
                s.first_measure_at,
                s.last_measure_at + Duration::minutes(SAMPLE_MINUTES),
            ),
            None => return None,
        };
        let from = w.from.max(first);
        let to = w.to.min(last);
        (from < to).then_some(Span { from, to })
    }

    /// Minutes of the period within the span (an open period lasts to the span's end).
    pub fn overlap(&self, p: &Period) -> i64 {
        let end = p.end.unwrap_or(self.to).min(self.to);
        (end - p.start.max(self.from)).num_minutes().max(0)
    }

    pub fn minutes(&self) -> i64 {
        (self.to - self.from).num_minutes()
    }
}

/// Verdict distribution and causes over the window.
pub struct Distribution {
    pub samples: u64,
    pub shares: Vec<VerdictShare>,
    pub causes: Vec<CauseShare>,
    pub span: Option<Span>,
    pub periods: Vec<Period>,
}

fn samples(minutes: i64) -> u64 {
    (minutes.max(0) as f64 / SAMPLE_MINUTES as f64).round() as u64
}

pub async fn distribution(
    app: &AppState,
    tenant: &str,
    hostname: &str,
    st: Option<&State>,
    w: &Window,
) -> Result<Distribution, ApiError> {
    let Some(span) = Span::of(w, st) else {
        return Ok(Distribution {
            samples: 0,
            shares: shares(&BTreeMap::new(), 0),
            causes: Vec::new(),
            span: None,
            periods: Vec::new(),
        });
    };
    let periods = periods(app, tenant, hostname, span.from, span.to).await?;
    let mut per_verdict: BTreeMap<Verdict, u64> = BTreeMap::new();
    let mut per_cause: HashMap<(Verdict, String), u64> = HashMap::new();
    let total = samples(span.minutes());
    let mut bad = 0;
    for p in &periods {
        let n = samples(span.overlap(p));
        bad += n;
        *per_verdict.entry(p.verdict).or_default() += n;
        *per_cause.entry((p.verdict, p.cause.clone())).or_default() += n;
    }
    per_verdict.insert(Verdict::OK, total.saturating_sub(bad));
    let mut causes: Vec<CauseShare> = per_cause
        .into_iter()
        .filter(|(_, n)| *n > 0)
        .map(|((verdict, cause), n)| CauseShare {
            verdict,
            cause,
            samples: n,
            minutes: n * SAMPLE_MINUTES as u64,
            share_pct: share(n, total),
        })
        .collect();
    causes.sort_by(|a, b| {
        b.samples
            .cmp(&a.samples)
            .then(a.verdict.cmp(&b.verdict))
            .then(a.cause.cmp(&b.cause))
    });
    causes.truncate(10);
    Ok(Distribution {
        samples: total,
        shares: shares(&per_verdict, total),
        causes,
        span: Some(span),
        periods,
    })
}

fn shares(per_verdict: &BTreeMap<Verdict, u64>, total: u64) -> Vec<VerdictShare> {
    Verdict::ALL
        .into_iter()
        .map(|v| {
            let n = per_verdict.get(&v).copied().unwrap_or(0);
            VerdictShare {
                verdict: v,
                samples: n,
                minutes: n * SAMPLE_MINUTES as u64,
                share_pct: share(n, total),
            }
        })
        .collect()
}

/// The summary of a machine; 404 when it is unknown or has no measurement.
pub async fn summary(
    app: &AppState,
    tenant: &str,
    hostname: &str,
    w: &Window,
) -> Result<(Summary, Distribution), ApiError> {
    let no_measurement = || {
        ApiError::not_found(
            format!("Mesure NetDiag de « {hostname} »"),
            format!("NetDiag measurement of '{hostname}'"),
        )
    };
    // The state exists for every measured machine: without it, the machine is unknown
    // (404 naming the machine) or has never been measured.
    let Some(st) = state(app, tenant, hostname).await? else {
        app.stores.docs.machine(tenant, hostname).await?;
        return Err(no_measurement());
    };
    // Independent reads, run side by side.
    let (latest, dist, alert) = tokio::try_join!(
        latest(app, tenant, hostname, w.to),
        distribution(app, tenant, hostname, Some(&st), w),
        alert(app, tenant, st.open_alert.as_deref()),
    )?;
    let latest = latest.ok_or_else(no_measurement)?;
    let current = Current {
        verdict: st.verdict,
        cause: st.cause.clone(),
        since: st.since,
    };
    Ok((
        Summary {
            hostname: hostname.to_owned(),
            current,
            samples: dist.samples,
            distribution: dist.shares.clone(),
            causes: dist.causes.clone(),
            latest,
            alert,
        },
        dist,
    ))
}

/// Filter of the event feed: only the exposed sources, whatever was asked.
pub fn events_filter(sources: &[&'static str], q: Option<&str>) -> Filter {
    Filter::all()
        .and(Pred::In(
            "source",
            sources.iter().map(|s| json!(s)).collect(),
        ))
        .and_some(q.map(str::to_owned), |q| Pred::Contains(vec!["message"], q))
}

/// Notable events of the window (severity medium or worse), newest first.
pub async fn notable_events(
    app: &AppState,
    tenant: &str,
    hostname: &str,
    w: &Window,
    limit: usize,
) -> Result<Vec<Event>, ApiError> {
    let filter = events_filter(&SOURCES, None).and(Pred::In(
        "severity",
        vec![
            json!(Severity::Critical),
            json!(Severity::High),
            json!(Severity::Medium),
        ],
    ));
    let page = app
        .stores
        .series
        .scan(&SeriesQuery {
            tenant,
            series: EVENTS,
            partition: Some(hostname),
            from: w.from_ms(),
            to: w.to_ms(),
            filter: &filter,
            after: None,
            limit,
        })
        .await?;
    page.records.into_iter().map(|r| decode(r.body)).collect()
}

/// The verdict of an application during a machine period.
fn app_verdict(p: &Period, executable: &str) -> Verdict {
    match p.verdict {
        Verdict::SERVICE if p.executable.as_deref() != Some(executable) => Verdict::OK,
        v => v,
    }
}

/// The followed applications with their statistics over the window.
pub async fn apps(
    app: &AppState,
    tenant: &str,
    hostname: &str,
    w: &Window,
) -> Result<Vec<App>, ApiError> {
    app.stores.docs.machine(tenant, hostname).await?;
    let defs: Vec<AppDef> = match app
        .stores
        .docs
        .get_as::<AppsDoc>(tenant, APPS, hostname)
        .await?
    {
        Some(d) => d.apps,
        None => return Ok(Vec::new()),
    };
    let st = state(app, tenant, hostname).await?;
    let span = Span::of(w, st.as_ref());
    let periods = match span {
        Some(s) => periods(app, tenant, hostname, s.from, s.to).await?,
        None => Vec::new(),
    };
    Ok(defs
        .into_iter()
        .map(|def| app_stats(def, span, &periods, w))
        .collect())
}

fn round1(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}

fn app_stats(def: AppDef, span: Option<Span>, periods: &[Period], w: &Window) -> App {
    let total = span.map(|s| samples(s.minutes())).unwrap_or(0);
    let mut per_verdict: BTreeMap<Verdict, u64> = BTreeMap::new();
    let mut bad = 0;
    if let Some(s) = span {
        for p in periods {
            let v = app_verdict(p, &def.executable);
            if v != Verdict::OK {
                let n = samples(s.overlap(p));
                bad += n;
                *per_verdict.entry(v).or_default() += n;
            }
        }
    }
    per_verdict.insert(Verdict::OK, total.saturating_sub(bad));
    let verdict = span.map(|s| {
        periods
            .iter()
            .rev()
            .find(|p| p.start < s.to && p.end.is_none_or(|e| e >= s.to))
            .map(|p| app_verdict(p, &def.executable))
            .unwrap_or(Verdict::OK)
    });
    // Hourly figures of the hours that start in the window.
    let (mut cpu, mut mem, mut points) = (Vec::new(), Vec::new(), Vec::new());
    let mut probe_ms: Vec<Vec<f64>> = vec![Vec::new(); def.probes.len()];
    if let Some(h) = &def.hourly {
        for (i, (c, m)) in h.cpu_pct.iter().zip(&h.memory_mb).enumerate() {
            let at = h.start + Duration::hours(i as i64);
            if at < hour_floor(w.from) || at >= w.to {
                continue;
            }
            cpu.push(f64::from(*c));
            mem.push(f64::from(*m));
            points.push((at, f64::from(*m)));
            for (k, series) in h.probe_ms.iter().enumerate().take(def.probes.len()) {
                if let Some(Some(ms)) = series.get(i) {
                    probe_ms[k].push(f64::from(*ms));
                }
            }
        }
    }
    let avg = |xs: &[f64]| xs.iter().sum::<f64>() / xs.len().max(1) as f64;
    let load = (!mem.is_empty()).then(|| Load {
        cpu_avg_pct: round1(avg(&cpu)),
        memory_avg_mb: round1(avg(&mem)),
        memory_max_mb: round1(mem.iter().copied().fold(0.0, f64::max)),
    });
    let failed = bad;
    let probes = def
        .probes
        .iter()
        .enumerate()
        .map(|(k, p)| ProbeStats {
            target: p.target.clone(),
            kind: p.kind,
            checks: total,
            success_pct: share(total.saturating_sub(failed), total),
            avg_ms: (!probe_ms[k].is_empty()).then(|| round1(avg(&probe_ms[k]))),
        })
        .collect();
    App {
        name: def.name,
        executable: def.executable,
        verdict,
        samples: total,
        verdicts: shares(&per_verdict, total),
        load,
        dependencies: def.dependencies,
        probes,
        memory_trend: memory_trend(&points, w),
    }
}

/// Averages over at most 48 slices of whole hours; direction from the first to the
/// last quarter of the points.
fn memory_trend(hourly: &[(DateTime<Utc>, f64)], w: &Window) -> MemoryTrend {
    let start = hour_floor(w.from).timestamp_millis();
    let hours = (w.to_ms() - start).max(1) / 3_600_000 + 1;
    // Whole hours per point, so that points fall on the hour.
    let slice_ms = ((hours + 47) / 48).max(1) * 3_600_000;
    let mut buckets: BTreeMap<i64, (f64, f64)> = BTreeMap::new();
    for (h, mb) in hourly {
        let b = ((h.timestamp_millis() - start) / slice_ms).max(0);
        let e = buckets.entry(b).or_default();
        e.0 += mb;
        e.1 += 1.0;
    }
    let points: Vec<MemoryPoint> = buckets
        .into_iter()
        .filter_map(|(b, (sum, n))| {
            Some(MemoryPoint {
                at: DateTime::from_timestamp_millis(start + b * slice_ms)?,
                mb: round1(sum / n),
            })
        })
        .collect();
    let q = (points.len() / 4).max(1);
    let avg = |ps: &[MemoryPoint]| ps.iter().map(|p| p.mb).sum::<f64>() / ps.len().max(1) as f64;
    let (first, last) = if points.len() >= 2 {
        (avg(&points[..q]), avg(&points[points.len() - q..]))
    } else {
        (0.0, 0.0)
    };
    let change_pct = if first > 0.0 {
        round1((last - first) / first * 100.0)
    } else {
        0.0
    };
    let direction = if change_pct >= 15.0 {
        Trend::Rising
    } else if change_pct <= -15.0 {
        Trend::Falling
    } else {
        Trend::Stable
    };
    MemoryTrend {
        direction,
        change_pct,
        points,
    }
}
