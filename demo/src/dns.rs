//! DNS demo data: resolutions of the agent machines (last 7 days, the route's cap), query
//! counts by machine and domain over the whole history ([`netops_dns::domains`]), threat domains, and the query logs
//! of the DNS servers where server collection is active (acme; not globex).

use crate::{MachineKind, MachineSeed, Produced, SeedCtx, hours_of};
use chrono::{DateTime, Duration, Utc};
use netops_shared::module::BoxFuture;
use netops_shared::store::{Record, StoreResult};
use rand::Rng;
use rand::rngs::StdRng;
use serde_json::Value;

use netops_dns::domains::Queries;
use netops_dns::model::*;
use netops_dns::threats::{self, LISTED};

fn to_value<T: serde::Serialize>(v: &T) -> Value {
    serde_json::to_value(v).unwrap_or(Value::Null)
}

/// Common domains with their weight and usual process.
const DOMAINS_COMMON: &[(&str, u32, &str)] = &[
    ("login.microsoftonline.com", 30, "msedge.exe"),
    ("outlook.office365.com", 25, "outlook.exe"),
    ("teams.microsoft.com", 20, "ms-teams.exe"),
    ("graph.microsoft.com", 12, "onedrive.exe"),
    ("www.google.com", 15, "chrome.exe"),
    ("fonts.gstatic.com", 6, "chrome.exe"),
    ("windowsupdate.microsoft.com", 5, "svchost.exe"),
    ("ctldl.windowsupdate.com", 5, "svchost.exe"),
    ("slack.com", 8, "slack.exe"),
    ("github.com", 6, "git.exe"),
    ("api.github.com", 4, "code.exe"),
    ("zoom.us", 5, "zoom.exe"),
    ("www.lemonde.fr", 3, "msedge.exe"),
    ("cdn.jsdelivr.net", 3, "chrome.exe"),
    ("time.windows.com", 2, "svchost.exe"),
    ("wpad", 2, "svchost.exe"),
];
/// The domain name as asked in this tenant (`wpad` is searched in the local domain).
fn qualified(ctx: &SeedCtx, domain: &str) -> String {
    if domain == "wpad" {
        format!("wpad.{}", ctx.tenant.domain)
    } else {
        domain.to_owned()
    }
}

fn pick_weighted(rng: &mut StdRng) -> (&'static str, &'static str) {
    let total: u32 = DOMAINS_COMMON.iter().map(|d| d.1).sum();
    let mut r = rng.random_range(0..total);
    for (d, w, p) in DOMAINS_COMMON {
        if r < *w {
            return (d, p);
        }
        r -= w;
    }
    (DOMAINS_COMMON[0].0, DOMAINS_COMMON[0].2)
}

fn answer(rng: &mut StdRng, qtype: &str) -> Vec<String> {
    match qtype {
        "AAAA" => vec![format!(
            "2603:1026:{:x}::{:x}",
            rng.random_range(1..0xfff),
            rng.random_range(1..0xff)
        )],
        _ => vec![format!(
            "{}.{}.{}.{}",
            [13, 20, 40, 52, 104, 142, 151][rng.random_range(0..7)],
            rng.random_range(0..255),
            rng.random_range(0..255),
            rng.random_range(1..255)
        )],
    }
}

/// Where server collection is active: the primary demo tenant only, so the inactive case
/// shows too.
pub fn server_collection(ctx: &SeedCtx) -> Collection {
    let active = ctx.tenant.id == "acme";
    let servers = ctx
        .machines
        .iter()
        .filter(|m| m.kind == MachineKind::Server && m.os.starts_with("Windows Server"))
        .take(2)
        .map(|m| m.hostname.clone())
        .collect();
    Collection {
        active,
        servers: if active { servers } else { Vec::new() },
        since: active.then(|| ctx.start()),
    }
}

pub fn seed(ctx: &SeedCtx) -> BoxFuture<'_, StoreResult<()>> {
    Box::pin(async move {
        let tenant = ctx.tenant.id;
        let mut rng = ctx.rng("dns");
        let collection = server_collection(ctx);
        let resolver = resolver(ctx, &collection);
        let detail_start = ctx.now - Duration::days(7);
        let mut counts = Queries::default();
        let mut records = Vec::new();
        let mut seq = 0u64;
        for m in &ctx.machines {
            // Detailed resolutions over the last 7 days (the route's cap).
            let until = if m.online { ctx.now } else { m.last_seen_at };
            for _ in 0..per_day(m) * 7 {
                let at = detail_start
                    + Duration::seconds(
                        rng.random_range(0..(ctx.now - detail_start).num_seconds()),
                    );
                if at > until {
                    continue;
                }
                seq += 1;
                let (record, domain, code) = resolve(ctx, m, at, &resolver, &mut rng, seq);
                counts.add(at, &m.hostname, &domain, code, 1.0);
                records.push(record);
            }
            // Older history: hourly counts only.
            let mut day = ctx.start();
            while day < detail_start {
                for _ in 0..3 {
                    let at = day + Duration::seconds(rng.random_range(7 * 3600..19 * 3600));
                    if at > until {
                        continue;
                    }
                    let (domain, _) = pick_weighted(&mut rng);
                    counts.add(
                        at,
                        &m.hostname,
                        &qualified(ctx, domain),
                        "NOERROR",
                        f64::from(rng.random_range(1..30)),
                    );
                }
                day += Duration::days(1);
            }
        }

        // Threats: some machines resolved listed domains; half are acknowledged.
        let mut threats = Vec::new();
        for (k, listed) in LISTED.iter().enumerate() {
            let m = &ctx.machines[(k * 7 + 3) % ctx.machines.len()];
            // The first two are still going on; the others are spread over the history.
            let last = if k < 2 {
                ctx.now - Duration::minutes(rng.random_range(5..300))
            } else {
                ctx.now - Duration::hours(rng.random_range(2..i64::from(ctx.days) * 24))
            };
            let first = last - Duration::minutes(rng.random_range(10..3000));
            let sighting = Sighting {
                k,
                m,
                first,
                last,
                acknowledged: k % 2 == 1,
            };
            let (found, shown) = sighting.draw(ctx, &resolver, &mut rng, &mut seq)?;
            for (at, code, record) in shown {
                if at >= detail_start {
                    records.push(record);
                }
                counts.add(at, &m.hostname, listed.0, code, 1.0);
            }
            for threat in &found {
                threats.push(threats::threat_record(threat)?);
            }
        }

        // Server query logs (acme): the last 7 days, about one in four queries suspicious
        // for some clients, including devices without agent.
        let mut server_queries = Vec::new();
        if collection.active {
            let clients: Vec<&MachineSeed> = ctx.machines.iter().collect();
            let n = ctx.machines.len() * 7 * SERVER_QUERIES_PER_MACHINE_DAY;
            for i in 0..n {
                let at = detail_start
                    + Duration::seconds(
                        rng.random_range(0..(ctx.now - detail_start).num_seconds()),
                    );
                server_queries.push(server_query(ctx, &collection, &clients, i, at, &mut rng));
            }
        }

        let stores = &ctx.stores;
        stores
            .docs
            .put(
                tenant,
                COLLECTION,
                vec![("servers".into(), to_value(&collection))],
            )
            .await?;
        stores
            .series_writes
            .append(tenant, RESOLUTIONS, records)
            .await?;
        for (series, rows) in counts.series() {
            stores.rollups.load(tenant, &series, rows).await?;
        }
        stores
            .series_writes
            .append(tenant, THREATS, threats)
            .await?;
        stores
            .series_writes
            .append(tenant, SERVER_QUERIES, server_queries)
            .await?;
        Ok(())
    })
}

/// A machine that resolved listed domain `k` (of [`LISTED`]) from `first` to
/// `last`: the seed's threats and the producer's alike.
struct Sighting<'a> {
    k: usize,
    m: &'a MachineSeed,
    first: DateTime<Utc>,
    last: DateTime<Utc>,
    /// Acknowledged 20 minutes after the last query (when that is past).
    acknowledged: bool,
}

/// A threat's query shown among the resolutions: its time, response code and record.
type Shown = (DateTime<Utc>, &'static str, Record);

impl Sighting<'_> {
    /// The machine's resolutions of the listed domain (two to six, spread from the first to
    /// the last, each numbered after `seq`, answered by the sinkhole two times in three), and
    /// the threats derived from them as from collected ones ([`threats::threats`]): one a
    /// day they fall in.
    fn draw(
        &self,
        ctx: &SeedCtx,
        resolver: &str,
        rng: &mut StdRng,
        seq: &mut u64,
    ) -> StoreResult<(Vec<DnsThreat>, Vec<Shown>)> {
        let (domain, category, ..) = LISTED[self.k];
        let (m, first, last) = (self.m, self.first, self.last);
        let queries: u32 = rng.random_range(2..60);
        let shown_count = queries.min(6) as i32;
        let blocked = self.k % 3 != 2;
        let (mut shown, mut hits) = (Vec::new(), Vec::new());
        for j in 0..shown_count {
            let at = first + (last - first) * j / shown_count;
            let at = if j == 0 { last } else { at };
            let code = if category == ThreatCategory::Dga && j % 2 == 1 {
                "NXDOMAIN"
            } else {
                "NOERROR"
            };
            *seq += 1;
            let mut record = resolution(
                m,
                at,
                domain,
                Some("rundll32.exe"),
                "A",
                code,
                resolver,
                rng,
                *seq,
            );
            if blocked && code == "NOERROR" {
                record.body["answers"] = serde_json::json!(["0.0.0.0"]);
            }
            let r: Resolution = serde_json::from_value(record.body.clone())
                .map_err(|e| netops_shared::store::StoreError::Data(e.to_string()))?;
            hits.extend(threats::hit(&r));
            shown.push((at, code, record));
        }
        let mut found = threats::threats(&hits)?;
        for threat in &mut found {
            // Acknowledged 20 minutes after its last query (when that is past).
            let at = threat.last_seen_at + Duration::minutes(20);
            threat.acknowledged = self.acknowledged;
            threat.acknowledged_at = self.acknowledged.then_some(at).filter(|t| *t < ctx.now);
        }
        Ok((found, shown))
    }
}

/// The chance that a machine resolves a listed domain in an hour, somewhere in the tenant:
/// about eight threats a day, so that a 24-hour window without one happens once in some
/// 17,000 (`(2/3)^24`).
const THREAT_CHANCE: f64 = 1.0 / 3.0;

/// The threat of `hour`, if any: an online machine resolves a listed domain a few times
/// within the hour (not acknowledged yet). Drawn whole from the hour's own generator.
fn live_threat<'a>(ctx: &'a SeedCtx, hour: DateTime<Utc>) -> Option<(Sighting<'a>, StdRng)> {
    let mut rng = ctx.hour_rng("dns-threats", hour);
    if !rng.random_bool(THREAT_CHANCE) {
        return None;
    }
    let online: Vec<&MachineSeed> = ctx.machines.iter().filter(|m| m.online).collect();
    let m = *online.get(rng.random_range(0..online.len().max(1)))?;
    let k = rng.random_range(0..LISTED.len());
    let first = hour + Duration::seconds(rng.random_range(0..40 * 60));
    let last = first + Duration::seconds(rng.random_range(60..20 * 60));
    let sighting = Sighting {
        k,
        m,
        first,
        last,
        acknowledged: false,
    };
    Some((sighting, rng))
}

/// Queries a DNS server answers a day per machine of the tenant (server collection).
const SERVER_QUERIES_PER_MACHINE_DAY: usize = 6;

/// The first sequence number of the producer's ids, above any the seed gives: an id holds
/// its time and this number, so the producer's never meet the seed's.
const LIVE_SEQ: u64 = 5_000_000;

/// The first sequence number of the live threats' resolutions, above the others'.
const THREAT_SEQ: u64 = 6_000_000;

/// The resolver the agents report: the first DNS server, else a server's address.
fn resolver(ctx: &SeedCtx, collection: &Collection) -> String {
    collection
        .servers
        .first()
        .cloned()
        .or_else(|| {
            ctx.machines
                .iter()
                .find(|m| m.kind == MachineKind::Server)
                .map(|m| m.ip.clone())
        })
        .unwrap_or_else(|| "10.0.0.53".into())
}

/// Resolutions a machine makes a day.
fn per_day(m: &MachineSeed) -> usize {
    if m.kind == MachineKind::Server { 6 } else { 9 }
}

/// One resolution of machine `m` at `at`, with its domain and response code.
fn resolve(
    ctx: &SeedCtx,
    m: &MachineSeed,
    at: DateTime<Utc>,
    resolver: &str,
    rng: &mut StdRng,
    seq: u64,
) -> (Record, String, &'static str) {
    const QTYPES: [&str; 10] = [
        "A", "A", "A", "AAAA", "AAAA", "CNAME", "TXT", "SRV", "MX", "PTR",
    ];
    let (domain, process) = pick_weighted(rng);
    let qtype = QTYPES[rng.random_range(0..QTYPES.len())];
    let roll = rng.random_range(0..100);
    let code = match (domain, roll) {
        ("wpad", _) => "NXDOMAIN",
        (_, 0..=2) => "NXDOMAIN",
        (_, 3) => "SERVFAIL",
        (_, 4) => "REFUSED",
        _ => "NOERROR",
    };
    let domain = qualified(ctx, domain);
    let record = resolution(
        m,
        at,
        &domain,
        Some(process),
        qtype,
        code,
        resolver,
        rng,
        seq,
    );
    (record, domain, code)
}

/// The `i`-th query a DNS server of `collection` answers, at `at`.
fn server_query(
    ctx: &SeedCtx,
    collection: &Collection,
    clients: &[&MachineSeed],
    i: usize,
    at: DateTime<Utc>,
    rng: &mut StdRng,
) -> Record {
    let server = &collection.servers[i % collection.servers.len()];
    let unmanaged = rng.random_bool(0.1);
    let client = clients[rng.random_range(0..clients.len())];
    let suspicious = rng.random_bool(0.06);
    let (domain, reason) = if suspicious {
        let (d, c, _, _) = LISTED[rng.random_range(0..LISTED.len())];
        let reason = match c {
            ThreatCategory::Dga => SuspicionReason::Dga,
            ThreatCategory::Tunneling => SuspicionReason::Tunneling,
            ThreatCategory::NewlyRegistered => SuspicionReason::NewlyRegistered,
            _ => SuspicionReason::KnownBad,
        };
        (d.to_owned(), Some(reason))
    } else {
        (qualified(ctx, pick_weighted(rng).0), None)
    };
    let q = ServerQuery {
        id: format!("sq-{}-{i:07}", at.timestamp_millis()),
        at,
        server: server.clone(),
        client_ip: if unmanaged {
            format!("10.{}.50.{}", client.site.subnet, rng.random_range(20..200))
        } else {
            client.ip.clone()
        },
        client: (!unmanaged).then(|| client.hostname.clone()),
        domain: domain.clone(),
        query_type: if domain.contains("exfil") { "TXT" } else { "A" }.into(),
        response_code: if reason == Some(SuspicionReason::Dga) {
            "NXDOMAIN"
        } else {
            "NOERROR"
        }
        .into(),
        suspicious,
        reason,
    };
    Record {
        partition: server.clone(),
        ts: at.timestamp_millis(),
        id: q.id.clone(),
        body: to_value(&q),
    }
}

/// The DNS data of `[from, to)` as time passes: the online machines' resolutions, at the
/// seed's daily rate, with their counts, the server queries where collection is active, and
/// threats (about eight a day, [`live_threat`]) with their resolutions and counts.
pub fn produce(ctx: &SeedCtx, from: DateTime<Utc>, to: DateTime<Utc>) -> Produced {
    let collection = server_collection(ctx);
    let resolver = resolver(ctx, &collection);
    let clients: Vec<&MachineSeed> = ctx.machines.iter().collect();
    let within = |at: &DateTime<Utc>| from <= *at && *at < to;
    let mut counts = Queries::default();
    let (mut records, mut server_queries) = (Vec::new(), Vec::new());
    let mut threats = Vec::new();
    for hour in hours_of(from, to) {
        let mut seq = THREAT_SEQ;
        // The demo's own resolutions, which always read back.
        if let Some((sighting, mut rng)) = live_threat(ctx, hour)
            && let Ok((found, shown)) = sighting.draw(ctx, &resolver, &mut rng, &mut seq)
        {
            let domain = LISTED[sighting.k].0;
            for (at, code, record) in shown.into_iter().filter(|(at, ..)| within(at)) {
                counts.add(at, &sighting.m.hostname, domain, code, 1.0);
                records.push(record);
            }
            threats.extend(
                found
                    .iter()
                    .filter(|t| within(&t.last_seen_at))
                    .filter_map(|t| threats::threat_record(t).ok()),
            );
        }
        let mut rng = ctx.hour_rng("dns", hour);
        let mut seq = LIVE_SEQ;
        for m in ctx.machines.iter().filter(|m| m.online) {
            for _ in 0..per_day(m) {
                // Each of the day's resolutions falls in this hour one time in 24.
                if !rng.random_bool(1.0 / 24.0) {
                    continue;
                }
                let at = hour + Duration::milliseconds(rng.random_range(0..3_600_000));
                seq += 1;
                // Drawn even when out of the interval, so that the hour stays the same.
                let (record, domain, code) = resolve(ctx, m, at, &resolver, &mut rng, seq);
                if within(&at) {
                    counts.add(at, &m.hostname, &domain, code, 1.0);
                    records.push(record);
                }
            }
        }
        if collection.active {
            for k in 0..ctx.machines.len() * SERVER_QUERIES_PER_MACHINE_DAY / 24 {
                let at = hour + Duration::milliseconds(rng.random_range(0..3_600_000));
                let i = LIVE_SEQ as usize + k;
                let query = server_query(ctx, &collection, &clients, i, at, &mut rng);
                if within(&at) {
                    server_queries.push(query);
                }
            }
        }
    }
    Produced {
        records: vec![
            (RESOLUTIONS.to_owned(), records),
            (SERVER_QUERIES.to_owned(), server_queries),
            (THREATS.to_owned(), threats),
        ],
        rollups: counts.series(),
        ..Produced::default()
    }
}

#[allow(clippy::too_many_arguments)]
fn resolution(
    m: &MachineSeed,
    at: DateTime<Utc>,
    domain: &str,
    process: Option<&str>,
    qtype: &str,
    code: &str,
    resolver: &str,
    rng: &mut StdRng,
    seq: u64,
) -> Record {
    let r = Resolution {
        id: format!("dns-{}-{seq:07}", at.timestamp_millis()),
        at,
        machine: m.hostname.clone(),
        machine_ip: m.ip.clone(),
        user: m.user.clone(),
        process: process.map(str::to_owned),
        domain: domain.to_owned(),
        query_type: qtype.into(),
        response_code: code.into(),
        answers: if code == "NOERROR" {
            answer(rng, qtype)
        } else {
            Vec::new()
        },
        resolver: resolver.to_owned(),
        latency_ms: (rng.random_range(0.4..60.0_f64) * 10.0).round() / 10.0,
    };
    Record {
        partition: m.hostname.clone(),
        ts: at.timestamp_millis(),
        id: r.id.clone(),
        body: to_value(&r),
    }
}
