//! `/flows/explore` (`explore_flows` in the OpenAPI description): validation of the query and
//! aggregation of the cube into a stacked series, Sankey links and a top N.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use chrono::{DateTime, Utc};
use futures_util::TryStreamExt;
use futures_util::stream::FuturesOrdered;
use netops_shared::ApiError;
use netops_shared::store::daily::{self, DAY_MS, HOUR_MS, floor_to, packed, totals};
use netops_shared::store::{Filter, KeepMeasure, Pred, Rollup, Rollups, StoreResult};
use serde_json::{Value, json};

use crate::cube::{self, Family};
use crate::expr;
use crate::model::*;

/// The fourteen flow dimensions and the key of each in the cube rows.
pub const FLOW_DIMS: &[(&str, &str)] = &[
    ("interne", "i"),
    ("externe", "e"),
    ("pays", "c"),
    ("operateur", "o"),
    ("port", "p"),
    ("service", "s"),
    ("proto", "t"),
    ("sens", "d"),
    ("source", "src"),
    ("passerelle", "g"),
    ("site", "si"),
    ("interface", "if"),
    ("processus", "pr"),
    ("utilisateur", "u"),
];

/// Dimensions of the firewall logs.
pub const FIREWALL_DIMS: &[(&str, &str)] = &[("action", "ac"), ("regle", "r"), ("categorie", "ca")];

/// Dimensions a gateway does not see: with source=gateway, agent rows count as gateway
/// traffic of unknown process and user.
const GATEWAY_REWRITTEN: &[&str] = &["src", "pr", "u"];

pub const PERIODS: &[(&str, i64)] = &[
    ("1h", 1),
    ("6h", 6),
    ("24h", 24),
    ("7d", 7 * 24),
    ("30d", 30 * 24),
];

/// Name of the remainder of the values beyond the top N.
pub const OTHERS: &str = "autres";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    All,
    Agent,
    Gateway,
    Firewall,
}

impl Source {
    pub fn as_str(self) -> &'static str {
        match self {
            Source::All => "all",
            Source::Agent => "agent",
            Source::Gateway => "gateway",
            Source::Firewall => "firewall",
        }
    }
}

/// A validated explore query.
#[derive(Debug, Clone)]
pub struct Plan {
    pub source: Source,
    pub period: &'static str,
    /// `bytes`, `flows` or `connections`.
    pub measure: &'static str,
    /// Its stored name.
    pub key: &'static str,
    /// (name, key) of the asked dimensions.
    pub dims: Vec<(&'static str, &'static str)>,
    pub limit: usize,
    pub filter: Filter,
    /// Conditions checked here rather than by the store (internal dimensions, and those a
    /// gateway does not see).
    pub post: Vec<(&'static str, bool, String)>,
    /// Agent rows seen as a gateway sees them (source=gateway).
    pub gateway_view: bool,
    /// The series to read: a family of the internal side, the external side's or the
    /// firewall's.
    pub series: &'static str,
    /// The family of the internal side read, whose measures name the internal values.
    pub family: Option<&'static Family>,
    pub step_ms: i64,
    pub from: i64,
    pub to: i64,
}

fn bad(name: &str, fr: &str, en: &str) -> ApiError {
    ApiError::invalid_parameter(name, fr, en)
}

fn names(dims: &[(&str, &str)]) -> String {
    dims.iter().map(|d| d.0).collect::<Vec<_>>().join(", ")
}

/// Validates the query and resolves its window at `now`.
pub fn plan(q: &ExploreQuery, now: DateTime<Utc>) -> Result<Plan, ApiError> {
    let source = match q.source.as_deref().map(str::trim) {
        None | Some("all") => Source::All,
        Some("agent") => Source::Agent,
        Some("gateway") => Source::Gateway,
        Some("firewall") => Source::Firewall,
        Some(_) => {
            return Err(bad(
                "source",
                "valeurs admises : all, agent, gateway, firewall",
                "allowed values: all, agent, gateway, firewall",
            ));
        }
    };
    let (period, hours) = match q.period.as_deref().map(str::trim) {
        None => ("24h", 24),
        Some(p) => PERIODS
            .iter()
            .find(|(n, _)| *n == p)
            .copied()
            .ok_or_else(|| {
                bad(
                    "period",
                    "valeurs admises : 1h, 6h, 24h, 7d, 30d",
                    "allowed values: 1h, 6h, 24h, 7d, 30d",
                )
            })?,
    };
    let firewall = source == Source::Firewall;
    let measure = match (q.metric.as_deref().map(str::trim), firewall) {
        (None, false) | (Some("bytes"), false) => "bytes",
        (Some("flows"), false) => "flows",
        (None, true) | (Some("flows"), true) => "connections",
        (Some("bytes"), true) => {
            return Err(bad(
                "metric",
                "les journaux du pare-feu comptent des connexions : utilisez metric=flows ou omettez-le",
                "firewall logs count connections: use metric=flows or leave it out",
            ));
        }
        _ => {
            return Err(bad(
                "metric",
                "valeurs admises : bytes, flows",
                "allowed values: bytes, flows",
            ));
        }
    };
    let limit = match q.limit.as_deref().map(str::trim) {
        None => 10,
        Some(raw) => match raw.parse::<i64>() {
            Ok(n) if (3..=20).contains(&n) => n as usize,
            _ => {
                return Err(bad(
                    "limit",
                    "entier de 3 à 20 attendu",
                    "expected an integer from 3 to 20",
                ));
            }
        },
    };
    let allowed: &[(&str, &str)] = if firewall { FIREWALL_DIMS } else { FLOW_DIMS };
    let find = |name: &str| allowed.iter().find(|(n, _)| *n == name).copied();
    let raw_dims =
        q.dims
            .as_deref()
            .map(str::trim)
            .unwrap_or(if firewall { "action" } else { "service" });
    let mut dims = Vec::new();
    for name in raw_dims.split(',').map(str::trim) {
        let dim = find(name).ok_or_else(|| {
            let (fr, en) = if name.is_empty() {
                ("nom de dimension vide".to_string(), "empty dimension name".to_string())
            } else if firewall {
                (
                    format!("« {name} » n'est pas une dimension des journaux du pare-feu (admises : {})", names(allowed)),
                    format!("'{name}' is not a firewall-log dimension (allowed: {})", names(allowed)),
                )
            } else if FIREWALL_DIMS.iter().any(|(n, _)| *n == name) {
                (
                    format!("« {name} » n'existe qu'avec source=firewall"),
                    format!("'{name}' exists only with source=firewall"),
                )
            } else {
                (
                    format!("dimension « {name} » inconnue (admises : {})", names(allowed)),
                    format!("unknown dimension '{name}' (allowed: {})", names(allowed)),
                )
            };
            bad("dims", &fr, &en)
        })?;
        if dims.contains(&dim) {
            return Err(bad(
                "dims",
                &format!("« {name} » est donnée deux fois"),
                &format!("'{name}' is given twice"),
            ));
        }
        dims.push(dim);
    }
    if dims.len() > 3 {
        return Err(bad("dims", "de 1 à 3 dimensions", "1 to 3 dimensions"));
    }
    let conditions = expr::parse(q.filter.as_deref().unwrap_or("")).map_err(|e| {
        bad(
            "filter",
            &format!(
                "position {}, « {} » : {} attendu",
                e.position, e.token, e.expected_fr
            ),
            &format!(
                "position {}, '{}': expected {}",
                e.position, e.token, e.expected_en
            ),
        )
        .with("position", e.position)
        .with("token", e.token.clone())
    })?;
    let mut filter = Filter::all();
    let mut post = Vec::new();
    let mut keys_used: HashSet<&str> = dims.iter().map(|d| d.1).collect();
    // Gateways see agent machines' traffic too, without its process or user.
    let gateway_view = source == Source::Gateway;
    for c in &conditions {
        let Some((_, key)) = find(&c.dim) else {
            let fr = format!(
                "position {}, « {} » : dimension inconnue (admises : {})",
                c.position,
                c.dim,
                names(allowed)
            );
            let en = format!(
                "position {}, '{}': unknown dimension (allowed: {})",
                c.position,
                c.dim,
                names(allowed)
            );
            return Err(bad("filter", &fr, &en)
                .with("position", c.position)
                .with("token", c.dim.clone()));
        };
        keys_used.insert(key);
        // Internal values are named in the families' measures, not in their rows'
        // dimensions: they are matched here, as what a gateway does not see.
        if cube::INSIDE.contains(&key) || gateway_view && GATEWAY_REWRITTEN.contains(&key) {
            post.push((key, c.negated, c.value.clone()));
        } else {
            filter = filter.and(if c.negated {
                Pred::Ne(key, json!(c.value))
            } else {
                Pred::Eq(key, json!(c.value))
            });
        }
    }
    match source {
        Source::Agent => filter = filter.and(Pred::Eq("src", json!("agent"))),
        Source::Gateway => filter = filter.and(Pred::Eq("vg", json!(true))),
        // A gateway's rows of an agent machine's traffic: the agent counts it already.
        Source::All => filter = filter.and(Pred::Ne("a", json!(true))),
        Source::Firewall => {}
    }
    // The internal dimensions the query reads: a gateway sees no process or user.
    let inside: Vec<&str> = cube::INSIDE
        .into_iter()
        .filter(|k| keys_used.contains(k) && !(gateway_view && GATEWAY_REWRITTEN.contains(k)))
        .collect();
    let family = if firewall {
        None
    } else {
        cube::family(&inside)
    };
    let series = match family {
        _ if firewall => FIREWALL,
        Some(f) => f.series,
        None => CUBE_EXT,
    };
    let step_ms = if hours >= 7 * 24 { DAY_MS } else { HOUR_MS };
    let to = now.timestamp_millis();
    let from = (to - hours * HOUR_MS).div_euclid(step_ms) * step_ms;
    let key = match measure {
        "bytes" => BYTES,
        "flows" => FLOWS,
        _ => CONNECTIONS,
    };
    Ok(Plan {
        source,
        period,
        measure,
        key,
        dims,
        limit,
        filter,
        post,
        gateway_view,
        series,
        family,
        step_ms,
        from,
        to,
    })
}

impl Plan {
    /// The measures of the rows read that the answer adds up: the plan's measure within its
    /// window. A day row holds both measures of every hour of its day, of which a 24-hour
    /// window wants about a quarter: the store copies only these.
    pub fn keep(&self) -> KeepMeasure {
        let plan = self.clone();
        Arc::new(move |row_hour, name| {
            placed(&plan, row_hour, name).is_some_and(|(b, _)| b >= plan.from && b < plan.to)
        })
    }

    /// The series to read and the start of its rows: at day steps the day totals where they
    /// exist (the families always, the external side on the totals tier, `fast`), else the
    /// packed rows of every day the window's hours touch.
    pub fn rows_to_read(&self, fast: bool) -> (String, i64) {
        if self.step_ms == DAY_MS && (self.family.is_some() || fast && self.series == CUBE_EXT) {
            (totals(self.series), self.from)
        } else {
            (packed(self.series), floor_to(self.from, DAY_MS))
        }
    }

    /// The exploration of the rows the plan adds up ([`Plan::rows_to_read`], only the
    /// measures [`Plan::keep`] keeps), read as [`SPANS`] spans of whole days at once: each
    /// span is added up as soon as it and those before it are read, while the next is still
    /// being read, and its rows are dropped then.
    pub async fn explore(
        &self,
        rollups: &dyn Rollups,
        tenant: &str,
        fast: bool,
    ) -> StoreResult<Exploration> {
        let (series, from) = self.rows_to_read(fast);
        let keep = self.keep();
        let mut reads: FuturesOrdered<_> = spans(from, self.to)
            .map(|(a, b)| rollups.rows_keeping(tenant, &series, a, b, &self.filter, keep.clone()))
            .collect();
        let mut aggregation = Aggregation::new(self);
        while let Some(rows) = reads.try_next().await? {
            aggregation.add(entries(self, &rows));
        }
        Ok(aggregation.finish())
    }
}

/// The reads of one exploration in flight at once: its window's days are split into this
/// many spans, each read by its own store call (on the embedded store, its own connection
/// and thread; on DynamoDB, its own Query). On the reference tenant (30 days by machine, 2
/// cores), two spans answer about a third sooner than one, four no sooner than two for 10%
/// more CPU (`bench/windows-results.md`).
pub const SPANS: i64 = 2;

/// `[from, to)` (`from` at the start of a day) split into at most [`SPANS`] spans of whole
/// days, in order.
fn spans(from: i64, to: i64) -> impl Iterator<Item = (i64, i64)> {
    let days = (to - from).max(0) / DAY_MS + 1;
    let step = (days + SPANS - 1) / SPANS * DAY_MS;
    (0..SPANS)
        .map(move |i| (from + i * step, (from + (i + 1) * step).min(to)))
        .filter(|(a, b)| a < b)
}

/// One measure read for a plan: its bucket, its row's dimensions, the internal values its
/// name holds (rows of a family) and its value.
pub struct Entry<'a> {
    pub bucket: i64,
    pub dims: &'a Value,
    pub entity: Option<&'a str>,
    pub value: f64,
}

/// Where a measure of a row read for a plan counts: the bucket of its hour (hour steps, in
/// packed rows) or of its day (day steps, day totals), and the internal values its name holds;
/// `None` for another measure, or an hour a packed row holds and the plan's steps do not
/// count.
fn placed<'n>(plan: &Plan, row_hour: i64, name: &'n str) -> Option<(i64, Option<&'n str>)> {
    let (code, hour, entity) = daily::parts(name)?;
    if code != plan.key {
        return None;
    }
    match (plan.step_ms == DAY_MS, hour) {
        (true, None) => Some((row_hour, entity)),
        (false, Some(h)) => Some((row_hour + h * HOUR_MS, entity)),
        _ => None,
    }
}

/// The plan's measure in `rows` (read as [`Plan::rows_to_read`] says): at hour steps the
/// hours of packed rows, at day steps the day totals (a packed row holds both).
pub fn entries<'a>(plan: &'a Plan, rows: &'a [Rollup]) -> impl Iterator<Item = Entry<'a>> + 'a {
    rows.iter().flat_map(move |r| {
        r.measures.iter().filter_map(move |(name, v)| {
            let (bucket, entity) = placed(plan, r.hour, name)?;
            Some(Entry {
                bucket,
                dims: &r.dims,
                entity,
                value: *v,
            })
        })
    })
}

fn top_values<'a>(totals: &HashMap<&'a str, f64>, n: usize) -> Vec<&'a str> {
    let mut v: Vec<(&str, f64)> = totals.iter().map(|(k, v)| (*k, *v)).collect();
    v.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(b.0)));
    v.into_iter().take(n).map(|(k, _)| k).collect()
}

/// The value of dimension `key` in an entry, as the plan's source sees it.
fn dim_value<'a>(plan: &Plan, e: &Entry<'a>, key: &str) -> &'a str {
    entity_value(plan, e, key).unwrap_or_else(|| row_value(plan, e.dims, key))
}

/// The value of `key` among an entry's internal values (named in a family's measure), if
/// it holds it and the plan's source sees it.
fn entity_value<'a>(plan: &Plan, e: &Entry<'a>, key: &str) -> Option<&'a str> {
    if plan.gateway_view && GATEWAY_REWRITTEN.contains(&key) {
        return None;
    }
    cube::value(plan.family?, e.entity?, key)
}

/// The value of `key` in the dimensions of an entry's row, as the plan's source sees it.
fn row_value<'a>(plan: &Plan, dims: &'a Value, key: &str) -> &'a str {
    if plan.gateway_view {
        match key {
            "src" => return "gateway",
            "pr" | "u" => return crate::model::UNKNOWN,
            _ => {}
        }
    }
    dims.get(key)
        .and_then(Value::as_str)
        .unwrap_or(crate::model::UNKNOWN)
}

/// A map with a fast hash: its keys are the data's own names or numbers of them, not a
/// caller's choosing.
type Fast<K, V> = HashMap<K, V, foldhash::fast::RandomState>;

/// The distinct values met, numbered in the order met. Each is copied once, next to the
/// others: an entry's value is looked up among a few thousand names close together, where a
/// map of borrowed names would compare it with the row it was first read from, long gone
/// from the caches (a query over 30 days reads hundreds of thousands of entries).
#[derive(Default)]
struct Names {
    index: Fast<Box<str>, u32>,
}

impl Names {
    fn id(&mut self, name: &str) -> u32 {
        if let Some(&id) = self.index.get(name) {
            return id;
        }
        let id = self.index.len() as u32;
        self.index.insert(name.into(), id);
        id
    }

    /// The names by number.
    fn into_vec(self) -> Vec<Box<str>> {
        let mut named: Vec<(u32, Box<str>)> =
            self.index.into_iter().map(|(n, id)| (id, n)).collect();
        named.sort_unstable_by_key(|(id, _)| *id);
        named.into_iter().map(|(_, n)| n).collect()
    }
}

/// The measure of one combination of asked values (by number; those beyond the plan's
/// dimensions are the empty name).
struct Combo {
    vals: [u32; 3],
    /// Its first value's row in [`Combos::by_bucket`].
    first: usize,
    sum: f64,
}

/// What the entries of a plan add up to: per combination of asked values, and per bucket of
/// each first value (the stacked series). An entry costs one lookup of its combination; the
/// totals per value are added up from the combinations afterwards.
struct Combos {
    index: Fast<[u32; 3], usize>,
    combos: Vec<Combo>,
    /// The first values met, by number, and their row in `by_bucket`.
    firsts: Fast<u32, usize>,
    /// The measure of the first value of row `n` in bucket `b` at `n * buckets + b`.
    by_bucket: Vec<f64>,
    buckets: usize,
}

impl Combos {
    fn new(buckets: usize) -> Self {
        Combos {
            index: Fast::default(),
            combos: Vec::new(),
            firsts: Fast::default(),
            by_bucket: Vec::new(),
            buckets,
        }
    }

    fn add(&mut self, vals: [u32; 3], bucket: usize, value: f64) {
        let slot = match self.index.get(&vals) {
            Some(&slot) => slot,
            None => {
                let next = self.firsts.len();
                let first = *self.firsts.entry(vals[0]).or_insert(next);
                if first == next {
                    self.by_bucket.resize((next + 1) * self.buckets, 0.0);
                }
                self.combos.push(Combo {
                    vals,
                    first,
                    sum: 0.0,
                });
                self.index.insert(vals, self.combos.len() - 1);
                self.combos.len() - 1
            }
        };
        let combo = &mut self.combos[slot];
        combo.sum += value;
        self.by_bucket[combo.first * self.buckets + bucket] += value;
    }

    /// The total of each value of dimension `i`, by name.
    fn per_value<'n>(&self, i: usize, names: &'n [Box<str>]) -> HashMap<&'n str, f64> {
        let mut sums = HashMap::new();
        for c in &self.combos {
            *sums.entry(&*names[c.vals[i] as usize]).or_default() += c.sum;
        }
        sums
    }
}

/// The exploration of a plan, added up as its entries come. Each value met is copied once
/// ([`Names`]), and only those the answer names are copied again.
pub struct Aggregation<'p> {
    plan: &'p Plan,
    buckets: usize,
    names: Names,
    /// The value of the dimensions a plan does not ask.
    unasked: u32,
    /// The numbers of the asked values each entity names (the internal values of a family's
    /// measure: `PC-1|chrome.exe|julie`).
    entities: Fast<Box<str>, [Option<u32>; 3]>,
    combos: Combos,
    total: f64,
}

impl<'p> Aggregation<'p> {
    pub fn new(plan: &'p Plan) -> Self {
        let buckets = (plan.to - plan.from)
            .max(0)
            .unsigned_abs()
            .div_ceil(plan.step_ms.unsigned_abs()) as usize;
        let mut names = Names::default();
        let unasked = names.id("");
        Aggregation {
            plan,
            buckets,
            names,
            unasked,
            entities: Fast::default(),
            combos: Combos::new(buckets),
            total: 0.0,
        }
    }

    /// Adds up entries read for the plan.
    pub fn add<'a>(&mut self, entries: impl Iterator<Item = Entry<'a>>) {
        let plan = self.plan;
        let mut row: Option<(&'a Value, [u32; 3])> = None;
        for e in entries {
            if e.value == 0.0 || e.bucket < plan.from || e.bucket >= plan.to {
                continue;
            }
            if !plan
                .post
                .iter()
                .all(|(key, negated, v)| (dim_value(plan, &e, key) == v) != *negated)
            {
                continue;
            }
            // A row's measures share its dimensions (rows of one combination share them
            // too): their values are looked up once, not for every measure.
            let mut vals = match row {
                Some((dims, vals)) if std::ptr::eq(dims, e.dims) => vals,
                _ => {
                    let mut vals = [self.unasked; 3];
                    for (i, (_, key)) in plan.dims.iter().enumerate().take(3) {
                        vals[i] = self.names.id(row_value(plan, e.dims, key));
                    }
                    row = Some((e.dims, vals));
                    vals
                }
            };
            // An entity names the same values wherever it is met: split and numbered once.
            if let Some(entity) = e.entity {
                let asked = match self.entities.get(entity) {
                    Some(asked) => *asked,
                    None => {
                        let mut asked = [None; 3];
                        for (i, (_, key)) in plan.dims.iter().enumerate().take(3) {
                            asked[i] = entity_value(plan, &e, key).map(|v| self.names.id(v));
                        }
                        self.entities.insert(entity.into(), asked);
                        asked
                    }
                };
                for (val, id) in vals.iter_mut().zip(asked) {
                    if let Some(id) = id {
                        *val = id;
                    }
                }
            }
            let bucket = ((e.bucket - plan.from) / plan.step_ms) as usize;
            self.combos.add(vals, bucket, e.value);
            self.total += e.value;
        }
    }

    /// The answer: the stacked series, the links and the top.
    pub fn finish(self) -> Exploration {
        let Aggregation {
            plan,
            buckets,
            names,
            combos,
            total,
            ..
        } = self;
        let k = plan.dims.len();
        let names = names.into_vec();
        let name = |id: u32| -> &str { &names[id as usize] };
        let per_dim: Vec<HashMap<&str, f64>> =
            (0..k).map(|i| combos.per_value(i, &names)).collect();
        let kept: Vec<Vec<&str>> = per_dim.iter().map(|t| top_values(t, plan.limit)).collect();
        let kept_sets: Vec<HashSet<&str>> =
            kept.iter().map(|v| v.iter().copied().collect()).collect();
        let map = |i: usize, id: u32| -> &str {
            let v = name(id);
            if kept_sets[i].contains(v) { v } else { OTHERS }
        };
        // Stacked series by the first dimension.
        let mut keys: Vec<String> = kept[0].iter().map(|v| (*v).to_owned()).collect();
        let has_others = per_dim[0].len() > kept[0].len();
        if has_others {
            keys.push(OTHERS.into());
        }
        let mut points: Vec<(i64, BTreeMap<String, f64>)> = (0..buckets)
            .map(|b| {
                let values = keys.iter().map(|k| (k.clone(), 0.0)).collect();
                (plan.from + b as i64 * plan.step_ms, values)
            })
            .collect();
        for (id, n) in &combos.firsts {
            let key = map(0, *id);
            let cells = &combos.by_bucket[n * buckets..(n + 1) * buckets];
            for ((_, values), m) in points.iter_mut().zip(cells) {
                // Every value maps to a key of the series: a kept one, or `autres` when some
                // remain.
                if *m != 0.0
                    && let Some(sum) = values.get_mut(key)
                {
                    *sum += m;
                }
            }
        }
        let points = points
            .into_iter()
            .map(|(t, values)| StackedPoint {
                time: DateTime::from_timestamp_millis(t).unwrap_or_default(),
                values,
            })
            .collect();
        // Links between consecutive dimensions.
        let mut link_sums: BTreeMap<(&str, &str, usize), f64> = BTreeMap::new();
        for Combo { vals, sum, .. } in &combos.combos {
            for i in 0..k.saturating_sub(1) {
                *link_sums
                    .entry((map(i, vals[i]), map(i + 1, vals[i + 1]), i))
                    .or_default() += sum;
            }
        }
        let mut links: Vec<Link> = link_sums
            .into_iter()
            .map(|((a, b, i), value)| Link {
                from: Node {
                    dim: plan.dims[i].0.into(),
                    value: a.into(),
                },
                to: Node {
                    dim: plan.dims[i + 1].0.into(),
                    value: b.into(),
                },
                value,
            })
            .collect();
        links.sort_by(|a, b| {
            b.value
                .total_cmp(&a.value)
                .then_with(|| a.from.cmp(&b.from))
                .then_with(|| a.to.cmp(&b.to))
        });
        // Top N combinations.
        let mut top: Vec<([&str; 3], f64)> = combos
            .combos
            .iter()
            .map(|c| (c.vals.map(name), c.sum))
            .collect();
        top.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        let top = top
            .into_iter()
            .take(plan.limit)
            .map(|(vals, value)| TopItem {
                values: plan
                    .dims
                    .iter()
                    .zip(vals)
                    .map(|((n, _), v)| ((*n).to_owned(), v.to_owned()))
                    .collect(),
                value,
                share: if total > 0.0 {
                    (value / total * 10_000.0).round() / 10_000.0
                } else {
                    0.0
                },
            })
            .collect();
        Exploration {
            dims: plan.dims.iter().map(|d| d.0.to_owned()).collect(),
            source: plan.source.as_str().into(),
            period: plan.period.into(),
            measure: plan.measure.into(),
            step: if plan.step_ms == DAY_MS { "1d" } else { "1h" }.into(),
            total,
            series: StackedSeries { keys, points },
            links,
            top,
        }
    }
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;

    use super::*;
    use crate::cube::{Fact, Inside};

    /// One hour of traffic of a machine's process with a destination.
    struct Traffic {
        at: i64,
        dest: usize,
        inside: [&'static str; 3],
        bytes: f64,
        flows: f64,
    }

    const DESTS: [(&str, &str, &str); 3] = [
        ("outlook.office365.com", "443", "outbound"),
        ("github.com", "443", "outbound"),
        ("10.1.0.5", "3389", "inbound"),
    ];

    fn outside(dest: usize) -> Value {
        let (e, p, d) = DESTS[dest];
        json!({"e": e, "p": p, "d": d, "s": "https", "src": "agent", "vg": true, "si": "PAR"})
    }

    /// Three days and a half of traffic of three machines, two of them sharing a user.
    fn traffic(now: i64) -> Vec<Traffic> {
        let machines = [
            ["PC-1", "chrome.exe", "julie"],
            ["PC-2", "chrome.exe", "marc"],
            ["PC-3", "svchost.exe", "SYSTEM"],
            ["PC-3", "teams.exe", "marc"],
        ];
        let mut out = Vec::new();
        let mut at = now - 84 * HOUR_MS;
        let mut n = 0u64;
        while at < now {
            for (m, inside) in machines.iter().enumerate() {
                n += 1;
                if n.is_multiple_of(3) {
                    continue;
                }
                out.push(Traffic {
                    at: floor_to(at, HOUR_MS),
                    dest: (m + (n as usize) / 5) % DESTS.len(),
                    inside: *inside,
                    bytes: (1_000 + n * 37 % 5_000) as f64,
                    flows: (1 + n % 4) as f64,
                });
            }
            at += HOUR_MS;
        }
        out
    }

    /// The rows a store holds of `series` over `[from, to)`, matching `filter`.
    fn stored(
        all: &[(String, Vec<Rollup>)],
        series: &str,
        from: i64,
        to: i64,
        f: &Filter,
    ) -> Vec<Rollup> {
        all.iter()
            .filter(|(s, _)| s == series)
            .flat_map(|(_, rows)| rows)
            .filter(|r| r.hour >= from && r.hour < to && f.matches(&r.dims))
            .cloned()
            .collect()
    }

    #[test]
    fn a_window_is_read_as_a_few_spans_of_whole_days_in_order() {
        let day = 20_000 * DAY_MS;
        for (to, want) in [
            (day + HOUR_MS, vec![(day, day + HOUR_MS)]),
            (
                day + DAY_MS + 5 * HOUR_MS,
                vec![
                    (day, day + DAY_MS),
                    (day + DAY_MS, day + DAY_MS + 5 * HOUR_MS),
                ],
            ),
            (
                day + 30 * DAY_MS + 7 * HOUR_MS,
                vec![
                    (day, day + 16 * DAY_MS),
                    (day + 16 * DAY_MS, day + 30 * DAY_MS + 7 * HOUR_MS),
                ],
            ),
            (
                day + 7 * DAY_MS,
                vec![
                    (day, day + 4 * DAY_MS),
                    (day + 4 * DAY_MS, day + 7 * DAY_MS),
                ],
            ),
            (day, vec![]),
        ] {
            assert_eq!(spans(day, to).collect::<Vec<_>>(), want);
        }
    }

    #[test]
    fn the_families_answer_what_the_detailed_traffic_answers() {
        let now = Utc
            .with_ymd_and_hms(2026, 11, 20, 9, 30, 0)
            .single()
            .expect("a time")
            .timestamp_millis();
        let traffic = traffic(now);
        let mut inside = Inside::default();
        for t in &traffic {
            let key = format!("0.0.{}", t.dest);
            let fact = Fact {
                at: t.at,
                outside: &key,
                inside: t.inside,
                bytes: t.bytes,
                flows: t.flows,
            };
            inside.add(&fact, || outside(t.dest));
        }
        let series = inside.series();
        // Each fact with every dimension: what the detailed cube held.
        let detailed: Vec<(i64, Value, f64, f64)> = traffic
            .iter()
            .map(|t| {
                let mut dims = outside(t.dest);
                for (k, v) in crate::cube::INSIDE.iter().zip(t.inside) {
                    dims[*k] = json!(v);
                }
                (t.at, dims, t.bytes, t.flows)
            })
            .collect();
        let queries = [
            ("interne,externe,port", "sens = outbound", "24h", "bytes"),
            ("interne", "", "30d", "flows"),
            ("processus,externe", "", "6h", "bytes"),
            ("utilisateur,sens", "externe != github.com", "7d", "bytes"),
            ("service", "processus = chrome.exe", "24h", "bytes"),
            ("utilisateur,processus", "interne != PC-1", "30d", "bytes"),
            (
                "externe,interne",
                "utilisateur = marc et sens = outbound",
                "1h",
                "flows",
            ),
        ];
        let at = DateTime::from_timestamp_millis(now).expect("now");
        for (dims, filter, period, metric) in queries {
            let q = ExploreQuery {
                dims: Some(dims.into()),
                filter: Some(filter.into()),
                period: Some(period.into()),
                metric: Some(metric.into()),
                limit: Some("3".into()),
                ..Default::default()
            };
            let p = plan(&q, at).expect("a valid query");
            assert!(p.family.is_some(), "{dims} {filter}");
            let mut want = Aggregation::new(&p);
            want.add(
                detailed
                    .iter()
                    .filter(|(_, d, _, _)| p.filter.matches(d))
                    .map(|(t, d, b, f)| Entry {
                        bucket: *t,
                        dims: d,
                        entity: None,
                        value: if metric == "bytes" { *b } else { *f },
                    }),
            );
            let want = want.finish();
            let (name, from) = p.rows_to_read(false);
            // As the store reads them: only the measures the plan keeps.
            let mut rows = stored(&series, &name, from, p.to, &p.filter);
            let keep = p.keep();
            for r in &mut rows {
                r.measures.retain(|m, _| keep(r.hour, m));
            }
            // Added up in two parts, as the spans come.
            let mut got = Aggregation::new(&p);
            let (first, second) = rows.split_at(rows.len() / 2);
            got.add(entries(&p, first));
            got.add(entries(&p, second));
            let got = got.finish();
            let (want, got) = (
                serde_json::to_value(want).expect("json"),
                serde_json::to_value(got).expect("json"),
            );
            assert!(
                want["total"].as_f64().is_some_and(|t| t > 0.0),
                "{dims} {filter}: {want}"
            );
            assert_eq!(got, want, "{dims} / {filter} / {period} / {metric}");
        }
        // No family row lists a machine with a destination: the process family names none.
        let processes = stored(&series, "flows.xp.pr.d", 0, i64::MAX, &Filter::all());
        assert!(
            processes
                .iter()
                .all(|r| r.measures.keys().all(|m| !m.contains("PC-")))
        );
    }
}
