//! The deterministic demo generator's common ground: the two tenants, their sites, machines
//! and accounts. Each module's demo data is drawn from this roster, so the same hosts
//! and accounts appear in every module. Times are relative to `now`.

use chrono::{DateTime, Duration, Utc};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use sha2::{Digest, Sha256};

use serde_json::Value;

use netops_shared::store::{Expect, Record, Rollup, StoreError, StoreResult, Stores};

#[derive(Debug)]
pub struct Site {
    pub code: &'static str,
    pub city: &'static str,
    /// Second octet of the site's 10.x.0.0/16.
    pub subnet: u8,
}

#[derive(Debug)]
pub struct Tenant {
    pub id: &'static str,
    pub name: &'static str,
    /// Numeric ids of this tenant start here, so the tenants never share an id.
    pub id_base: i64,
    pub domain: &'static str,
    pub sites: &'static [Site],
    pub first_names: &'static [&'static str],
    pub last_names: &'static [&'static str],
    /// Upper-case `PAR-LT-0001` style, or lower-case `gx-nyc-lt001` style.
    pub upper_hostnames: bool,
    /// Offset of the head office's (winter) time from UTC, hours: the demo's working hours
    /// and nights follow it.
    pub utc_offset_hours: i64,
}

pub const ACME: Tenant = Tenant {
    id: "acme",
    name: "Acme Industries",
    id_base: 1000,
    domain: "acme.local",
    sites: &[
        Site {
            code: "PAR",
            city: "Paris",
            subnet: 10,
        },
        Site {
            code: "LYO",
            city: "Lyon",
            subnet: 20,
        },
        Site {
            code: "NTE",
            city: "Nantes",
            subnet: 30,
        },
        Site {
            code: "BDX",
            city: "Bordeaux",
            subnet: 40,
        },
    ],
    first_names: &[
        "julie", "thomas", "camille", "nicolas", "léa", "antoine", "manon", "hugo", "chloé",
        "lucas", "sarah", "mathieu", "émilie", "julien", "pauline", "maxime", "laura", "romain",
        "inès", "baptiste",
    ],
    last_names: &[
        "martin", "bernard", "dubois", "thomas", "robert", "richard", "petit", "durand", "leroy",
        "moreau", "simon", "laurent", "lefèvre", "michel", "garcia", "david", "bertrand", "roux",
        "vincent", "fournier",
    ],
    upper_hostnames: true,
    utc_offset_hours: 1,
};

pub const GLOBEX: Tenant = Tenant {
    id: "globex",
    name: "Globex Corporation",
    id_base: 500_000,
    domain: "globex.corp",
    sites: &[
        Site {
            code: "NYC",
            city: "New York",
            subnet: 110,
        },
        Site {
            code: "CHI",
            city: "Chicago",
            subnet: 120,
        },
        Site {
            code: "SFO",
            city: "San Francisco",
            subnet: 130,
        },
    ],
    first_names: &[
        "james", "mary", "robert", "patricia", "john", "jennifer", "michael", "linda", "david",
        "susan",
    ],
    last_names: &[
        "smith", "johnson", "williams", "brown", "jones", "miller", "davis", "wilson", "anderson",
        "taylor",
    ],
    upper_hostnames: false,
    utc_offset_hours: -5,
};

pub const TENANTS: &[&Tenant] = &[&ACME, &GLOBEX];

pub fn tenant(id: &str) -> Option<&'static Tenant> {
    TENANTS.iter().copied().find(|t| t.id == id)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MachineKind {
    Laptop,
    Workstation,
    Server,
}

impl MachineKind {
    pub fn code(self) -> &'static str {
        match self {
            MachineKind::Laptop => "LT",
            MachineKind::Workstation => "WS",
            MachineKind::Server => "SRV",
        }
    }
}

#[derive(Debug, Clone)]
pub struct MachineSeed {
    pub id: i64,
    pub hostname: String,
    pub fqdn: String,
    pub ip: String,
    pub os: String,
    pub agent_version: String,
    pub online: bool,
    pub last_seen_at: DateTime<Utc>,
    pub modules: Vec<&'static str>,
    pub site: &'static Site,
    pub kind: MachineKind,
    /// Login of the usual user (none for servers).
    pub user: Option<String>,
}

#[derive(Debug, Clone)]
pub struct Account {
    pub login: String,
    pub display_name: String,
    pub admin: bool,
    pub service: bool,
}

/// Everything a module's generator needs for one tenant.
pub struct SeedCtx {
    pub stores: Stores,
    pub tenant: &'static Tenant,
    pub now: DateTime<Utc>,
    /// When the tenant was seeded: the seed's `now`. The producers that go on from what the
    /// seed left in progress (incidents, episodes) draw it again from this time.
    pub seeded_at: DateTime<Utc>,
    /// Days of history to generate.
    pub days: u32,
    pub seed: u64,
    pub machines: Vec<MachineSeed>,
    pub accounts: Vec<Account>,
}

impl SeedCtx {
    /// The tenant's accounts of people (not services), in roster order.
    pub fn people(&self) -> impl Iterator<Item = &Account> {
        self.accounts.iter().filter(|a| !a.service)
    }
}

/// What a module's producer made of an interval of time: the records to append and the
/// rollups they add, each by series.
#[derive(Debug, Default)]
pub struct Produced {
    pub records: Vec<(String, Vec<Record>)>,
    pub rollups: Vec<(String, Vec<Rollup>)>,
    /// Documents of the present state to put, by collection: only those no API write
    /// changes (what the API writes is never overwritten).
    pub docs: Vec<(String, Vec<(String, serde_json::Value)>)>,
    /// Changes of documents that API writes change too (alerts opening and resolving), made
    /// by [`DocChange::apply`].
    pub changes: Vec<DocChange>,
}

/// What a batch does to a document that API writes change too (an alert that opens, is
/// acknowledged through the API, then resolves): the document is read, changed and put on
/// the condition that it is still the version read ([`Documents::put_if`]); when a write
/// came in between, it is read and changed again, so that write is kept.
#[derive(Debug, Clone)]
pub struct DocChange {
    pub collection: &'static str,
    pub key: String,
    /// The document as of the batch's end, created when there is none (it opened in the
    /// batch).
    pub created: Option<Value>,
    /// What the batch changes in the stored document, given `arg`: false when it has
    /// nothing to change (done already by an earlier run of the batch, or by a write).
    pub update: Option<(Update, Value)>,
}

/// A change of a stored document given an argument: false when it has nothing to change.
pub type Update = fn(&mut Value, &Value) -> bool;

impl DocChange {
    /// Applies the change to `tenant`'s document. Gives up (with a warning) after a few
    /// writes in a row came between its read and its put: the document is then left as
    /// those writes made it.
    pub async fn apply(&self, stores: &Stores, tenant: &str) -> StoreResult<()> {
        for _ in 0..5 {
            let (body, expect) = match stores.docs.get(tenant, self.collection, &self.key).await? {
                None => match &self.created {
                    Some(body) => (body.clone(), Expect::Absent),
                    // Nothing to change: it opened before the data kept.
                    None => return Ok(()),
                },
                Some(doc) => {
                    let Some((update, arg)) = &self.update else {
                        return Ok(());
                    };
                    let mut body = doc.body;
                    if !update(&mut body, arg) {
                        return Ok(());
                    }
                    (body, Expect::Version(doc.version))
                }
            };
            match stores
                .docs
                .put_if(tenant, self.collection, &self.key, body, expect)
                .await
            {
                Err(StoreError::ConditionFailed) => continue,
                done => return done,
            }
        }
        tracing::warn!(
            tenant,
            collection = self.collection,
            key = self.key,
            "demo change left out: the document kept changing"
        );
        Ok(())
    }
}

impl Produced {
    /// The documents of `collection` as of now, when the batch ends now (`to` the context's
    /// `now`): a catch-up puts them once, at its end. For documents of the present state
    /// that no API write changes.
    pub fn present(
        ctx: &SeedCtx,
        to: DateTime<Utc>,
        collection: &str,
        docs: impl FnOnce() -> Vec<(String, Value)>,
    ) -> Produced {
        Produced {
            docs: if to < ctx.now {
                Vec::new()
            } else {
                vec![(collection.to_owned(), docs())]
            },
            ..Produced::default()
        }
    }

    /// How many records it holds.
    pub fn len(&self) -> usize {
        self.records.iter().map(|(_, r)| r.len()).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The start of each hour that `[from, to)` overlaps, in order. A producer draws each hour
/// whole from the hour's own generator ([`SeedCtx::hour_rng`]) and keeps what falls in the
/// interval, so an hour's data is the same however time is cut into intervals.
pub fn hours_of(from: DateTime<Utc>, to: DateTime<Utc>) -> impl Iterator<Item = DateTime<Utc>> {
    let first = from.timestamp().div_euclid(3600) * 3600;
    let last = to.timestamp();
    (first..last)
        .step_by(3600)
        .filter_map(|s| DateTime::from_timestamp(s, 0))
}

/// Default size of a demo tenant.
pub const DEMO_MACHINES: usize = 60;
pub const DEMO_DAYS: u32 = 30;

/// Deterministic generator for a label (one per module or data set).
pub fn rng_for(seed: u64, tenant: &str, label: &str) -> StdRng {
    let digest = Sha256::digest(format!("{seed}/{tenant}/{label}").as_bytes());
    let mut bytes = [0u8; 32];
    bytes.copy_from_slice(&digest);
    StdRng::from_seed(bytes)
}

fn pick<'a, T>(rng: &mut StdRng, items: &'a [T]) -> &'a T {
    &items[rng.random_range(0..items.len())]
}

impl SeedCtx {
    pub fn new(
        stores: Stores,
        tenant: &'static Tenant,
        now: DateTime<Utc>,
        machines: usize,
        days: u32,
        seed: u64,
    ) -> Self {
        let accounts = accounts(tenant, seed, (machines * 5).max(20));
        let machines = roster(tenant, seed, machines, now, &accounts);
        Self {
            stores,
            tenant,
            now,
            seeded_at: now,
            days,
            seed,
            machines,
            accounts,
        }
    }

    pub fn rng(&self, label: &str) -> StdRng {
        rng_for(self.seed, self.tenant.id, label)
    }

    /// The generator of one hour of a producer's data set (`hour` its start).
    pub fn hour_rng(&self, label: &str, hour: DateTime<Utc>) -> StdRng {
        self.rng(&format!("{label}/live/{}", hour.timestamp()))
    }

    /// What ends in `[from, to)` of what each hour's generator draws (`draw`, with the hour),
    /// each lasting at most `longest` after its hour (`end`: when it ends, if it does): the hours
    /// from `longest` and an hour before `from` are drawn again, so what began before an
    /// interval and ends in it is kept by that interval alone, however time is cut.
    pub fn ended_in<T>(
        &self,
        label: &str,
        longest: Duration,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
        draw: impl Fn(&mut StdRng, DateTime<Utc>) -> Vec<T>,
        end: impl Fn(&T) -> Option<DateTime<Utc>>,
    ) -> Vec<T> {
        hours_of(from - longest - Duration::hours(1), to)
            .flat_map(|hour| draw(&mut self.hour_rng(label, hour), hour))
            .filter(|t| end(t).is_some_and(|e| from <= e && e < to))
            .collect()
    }

    /// The start of the generated history.
    pub fn start(&self) -> DateTime<Utc> {
        self.now - Duration::days(i64::from(self.days))
    }

    /// This context of a tenant seeded at `seeded`: its offline machines were last seen as
    /// the seed drew them (not seen since, whatever the present), the online ones moments
    /// before `now`.
    pub fn seeded(mut self, seeded: DateTime<Utc>) -> SeedCtx {
        self.seeded_at = seeded;
        let at_seed = roster(
            self.tenant,
            self.seed,
            self.machines.len(),
            seeded,
            &self.accounts,
        );
        for (m, then) in self.machines.iter_mut().zip(at_seed) {
            if !m.online {
                m.last_seen_at = then.last_seen_at;
            }
        }
        self
    }

    /// The context the seed had: its `now` is [`SeedCtx::seeded_at`] (what a producer draws
    /// again of the seed's state in progress).
    pub fn as_seeded(&self) -> SeedCtx {
        SeedCtx {
            stores: self.stores.clone(),
            tenant: self.tenant,
            now: self.seeded_at,
            seeded_at: self.seeded_at,
            days: self.days,
            seed: self.seed,
            machines: roster(
                self.tenant,
                self.seed,
                self.machines.len(),
                self.seeded_at,
                &self.accounts,
            ),
            accounts: self.accounts.clone(),
        }
    }
}

fn accounts(tenant: &Tenant, seed: u64, n: usize) -> Vec<Account> {
    let mut rng = rng_for(seed, tenant.id, "accounts");
    let mut out: Vec<Account> = vec![
        Account {
            login: "administrateur".into(),
            display_name: "Administrateur".into(),
            admin: true,
            service: false,
        },
        Account {
            login: "svc-backup".into(),
            display_name: "Service sauvegarde".into(),
            admin: true,
            service: true,
        },
    ];
    let mut seen = std::collections::HashSet::new();
    while out.len() < n {
        let first = *pick(&mut rng, tenant.first_names);
        let last = *pick(&mut rng, tenant.last_names);
        let mut login = format!("{}.{}", first, last);
        let mut k = 2;
        while !seen.insert(login.clone()) {
            login = format!("{first}.{last}{k}");
            k += 1;
        }
        let cap = |s: &str| {
            let mut c = s.chars();
            c.next()
                .map(|f| f.to_uppercase().collect::<String>() + c.as_str())
                .unwrap_or_default()
        };
        out.push(Account {
            display_name: format!("{} {}", cap(first), cap(last).to_uppercase()),
            admin: rng.random_bool(0.04),
            service: false,
            login,
        });
    }
    out
}

fn roster(
    tenant: &'static Tenant,
    seed: u64,
    n: usize,
    now: DateTime<Utc>,
    accounts: &[Account],
) -> Vec<MachineSeed> {
    let mut rng = rng_for(seed, tenant.id, "machines");
    let mut counters = std::collections::HashMap::new();
    let people: Vec<&Account> = accounts.iter().filter(|a| !a.service).collect();
    (0..n)
        .map(|i| {
            let site = &tenant.sites[i % tenant.sites.len()];
            let kind = match i % 20 {
                0..=2 => MachineKind::Server,
                3..=7 => MachineKind::Workstation,
                _ => MachineKind::Laptop,
            };
            let number = counters.entry((site.code, kind.code())).or_insert(0u32);
            *number += 1;
            let hostname = if tenant.upper_hostnames {
                format!("{}-{}-{:04}", site.code, kind.code(), number)
            } else {
                format!("gx-{}-{}{:03}", site.code, kind.code(), number).to_lowercase()
            };
            let os = match kind {
                MachineKind::Server => *pick(
                    &mut rng,
                    &[
                        "Windows Server 2022 Standard",
                        "Windows Server 2019 Standard",
                        "Ubuntu 22.04 LTS",
                        "Windows Server 2022 Datacenter",
                    ],
                ),
                _ => *pick(
                    &mut rng,
                    &[
                        "Windows 11 Pro 23H2",
                        "Windows 11 Pro 24H2",
                        "Windows 11 Enterprise 24H2",
                        "Windows 10 Pro 22H2",
                        "macOS 14 Sonoma",
                    ],
                ),
            };
            let vlan = match kind {
                MachineKind::Server => 10,
                MachineKind::Workstation => 20,
                MachineKind::Laptop => 30 + rng.random_range(0..2) * 10,
            };
            let ip = format!(
                "10.{}.{}.{}",
                site.subnet,
                vlan,
                10 + (i / tenant.sites.len()) % 240
            );
            let agent_version = *pick(
                &mut rng,
                &["4.12.3", "4.12.3", "4.12.3", "4.11.8", "4.10.2"],
            );
            // The first machine is always online and the second always offline, so both
            // states exist in every demo.
            let online = match i {
                0 => true,
                1 => false,
                _ => rng.random_bool(if kind == MachineKind::Server {
                    0.97
                } else {
                    0.82
                }),
            };
            let last_seen_at = if online {
                now - Duration::seconds(rng.random_range(3..110))
            } else {
                now - Duration::minutes(rng.random_range(70..14 * 24 * 60))
            };
            let modules = match kind {
                MachineKind::Server => vec!["netflow"],
                _ if i % 7 == 6 => vec!["netflow"],
                _ => vec!["netflow", "netdiag"],
            };
            let user =
                (kind != MachineKind::Server).then(|| people[i % people.len()].login.clone());
            MachineSeed {
                id: tenant.id_base + i as i64 + 1,
                fqdn: format!("{}.{}", hostname.to_lowercase(), tenant.domain),
                hostname,
                ip,
                os: os.to_owned(),
                agent_version: agent_version.to_owned(),
                online,
                last_seen_at,
                modules,
                site,
                kind,
                user,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_interval_overlaps_the_hours_it_touches() {
        let at = |s: &str| -> DateTime<Utc> { s.parse().expect("date") };
        let hours: Vec<_> =
            hours_of(at("2026-11-22T10:30:00Z"), at("2026-11-22T12:00:00Z")).collect();
        assert_eq!(
            hours,
            vec![at("2026-11-22T10:00:00Z"), at("2026-11-22T11:00:00Z")]
        );
        let hours: Vec<_> =
            hours_of(at("2026-11-22T10:00:00Z"), at("2026-11-22T10:00:01Z")).collect();
        assert_eq!(hours, vec![at("2026-11-22T10:00:00Z")]);
        assert_eq!(
            hours_of(at("2026-11-22T10:00:00Z"), at("2026-11-22T10:00:00Z")).count(),
            0
        );
    }

    #[test]
    fn rosters_are_deterministic_and_distinct_per_tenant() {
        let now: DateTime<Utc> = "2026-11-22T12:00:00Z".parse().expect("date");
        let acc = accounts(&ACME, 7, 80);
        let a = roster(&ACME, 7, 60, now, &acc);
        let b = roster(&ACME, 7, 60, now, &acc);
        assert_eq!(
            a.iter().map(|m| &m.hostname).collect::<Vec<_>>(),
            b.iter().map(|m| &m.hostname).collect::<Vec<_>>()
        );
        assert_eq!(a[0].hostname, "PAR-SRV-0001");
        let g = roster(&GLOBEX, 7, 60, now, &accounts(&GLOBEX, 7, 80));
        assert!(
            a.iter()
                .all(|m| g.iter().all(|x| x.hostname != m.hostname && x.id != m.id))
        );
        assert!(a.iter().any(|m| m.online) && a.iter().any(|m| !m.online));
        let names: std::collections::HashSet<_> = a.iter().map(|m| &m.hostname).collect();
        assert_eq!(names.len(), 60);
    }
}
