//! Inventory demo data: one asset per machine of the roster, its installed software drawn
//! from the catalogue, the tenant's software list and the software x CVE records.

use std::collections::{BTreeMap, BTreeSet};

use crate::{MachineKind, MachineSeed, Produced, SeedCtx};
use chrono::{DateTime, Duration, Utc};
use netops_shared::module::BoxFuture;
use netops_shared::store::StoreResult;
use rand::Rng;
use rand::rngs::StdRng;
use serde::Serialize;
use serde_json::Value;

use netops_inventory::catalog::{self, TITLES, Target};
use netops_inventory::model::{
    ASSET_SOFTWARE, ASSETS, Asset, AssetKind, AssetSoftwareDoc, CVE_RECORDS, CveRecord, CveStatus,
    EolStatus, Hardware, InstalledSoftware, SOFTWARE, asset_key, cve_key, software_id,
};

fn json(v: impl Serialize) -> Value {
    serde_json::to_value(v).unwrap_or_default()
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Platform {
    WinDesktop,
    WinServer,
    Linux,
    Mac,
}

fn platform(m: &MachineSeed) -> Platform {
    if m.os.starts_with("Ubuntu") {
        Platform::Linux
    } else if m.os.starts_with("macOS") {
        Platform::Mac
    } else if m.kind == MachineKind::Server {
        Platform::WinServer
    } else {
        Platform::WinDesktop
    }
}

fn fits(target: Target, p: Platform) -> bool {
    match target {
        Target::Desktop => matches!(p, Platform::WinDesktop | Platform::Mac),
        Target::WinServer => p == Platform::WinServer,
        Target::Linux => p == Platform::Linux,
        Target::Windows => matches!(p, Platform::WinDesktop | Platform::WinServer),
    }
}

fn os_build(os: &str) -> &'static str {
    match os {
        o if o.contains("24H2") => "10.0.26100",
        o if o.contains("23H2") => "10.0.22631",
        o if o.contains("22H2") => "10.0.19045",
        o if o.contains("Server 2022") => "10.0.20348",
        o if o.contains("Server 2019") => "10.0.17763",
        o if o.starts_with("Ubuntu") => "5.15.0-126-generic",
        _ => "23H222",
    }
}

fn hardware(rng: &mut StdRng, m: &MachineSeed, p: Platform) -> Hardware {
    let (manufacturer, model, cpu, cores, memory, disk) = match (m.kind, p) {
        (_, Platform::Mac) => (
            "Apple Inc.",
            "MacBook Pro (14-inch, M3, 2023)",
            "Apple M3 Pro",
            11,
            18,
            512,
        ),
        (MachineKind::Server, _) => *pick(
            rng,
            &[
                (
                    "Dell Inc.",
                    "PowerEdge R650",
                    "Intel(R) Xeon(R) Silver 4314 CPU @ 2.40GHz",
                    32,
                    128,
                    1920,
                ),
                (
                    "HPE",
                    "ProLiant DL360 Gen10 Plus",
                    "Intel(R) Xeon(R) Gold 5318Y CPU @ 2.10GHz",
                    48,
                    256,
                    3840,
                ),
                (
                    "VMware, Inc.",
                    "VMware7,1",
                    "Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz",
                    8,
                    32,
                    200,
                ),
            ],
        ),
        (MachineKind::Workstation, _) => *pick(
            rng,
            &[
                (
                    "Dell Inc.",
                    "OptiPlex 7010",
                    "13th Gen Intel(R) Core(TM) i7-13700",
                    16,
                    32,
                    512,
                ),
                (
                    "HP",
                    "HP EliteDesk 800 G9 Desktop Mini PC",
                    "12th Gen Intel(R) Core(TM) i5-12500T",
                    6,
                    16,
                    512,
                ),
                (
                    "LENOVO",
                    "ThinkCentre M90q Gen 4",
                    "13th Gen Intel(R) Core(TM) i7-13700T",
                    16,
                    32,
                    1024,
                ),
            ],
        ),
        (MachineKind::Laptop, _) => *pick(
            rng,
            &[
                (
                    "Dell Inc.",
                    "Latitude 5440",
                    "13th Gen Intel(R) Core(TM) i5-1345U",
                    10,
                    16,
                    512,
                ),
                (
                    "LENOVO",
                    "ThinkPad T14 Gen 4",
                    "13th Gen Intel(R) Core(TM) i7-1365U",
                    10,
                    32,
                    512,
                ),
                (
                    "HP",
                    "HP EliteBook 840 14 inch G10",
                    "13th Gen Intel(R) Core(TM) i5-1335U",
                    10,
                    16,
                    256,
                ),
            ],
        ),
    };
    let serial: String = (0..7)
        .map(|_| {
            let c = rng.random_range(0..36u8);
            char::from(if c < 10 { b'0' + c } else { b'A' + c - 10 })
        })
        .collect();
    Hardware {
        manufacturer: manufacturer.into(),
        model: model.into(),
        serial_number: serial,
        cpu: cpu.into(),
        cpu_cores: cores,
        memory_gb: memory,
        disk_gb: disk,
    }
}

fn pick<'a, T>(rng: &mut StdRng, items: &'a [T]) -> &'a T {
    &items[rng.random_range(0..items.len())]
}

/// Windows update entries: a pool of KB numbers shared by the tenant's Windows machines.
const HOTFIX_POOL: usize = 600;

fn hotfix_kb(j: usize) -> u32 {
    5_030_000 + (j as u32) * 211 % 90_000
}

const WINDOWS_UPDATES: &str = "Microsoft Corporation";

fn hotfix_name(j: usize) -> String {
    format!(
        "Mise à jour de sécurité pour Microsoft Windows (KB{})",
        hotfix_kb(j)
    )
}

fn hotfix_version(j: usize) -> String {
    format!("KB{}", hotfix_kb(j))
}

/// How often an online machine's agent takes its inventory.
const INVENTORY_EVERY_MINUTES: i64 = 6 * 60;

/// When a machine last seen at `seen` last took its inventory: every
/// [`INVENTORY_EVERY_MINUTES`], `offset` minutes into the period.
fn inventory_before(seen: DateTime<Utc>, offset: i64) -> DateTime<Utc> {
    let (every, offset) = (INVENTORY_EVERY_MINUTES * 60, offset * 60);
    let at = (seen.timestamp() - offset).div_euclid(every) * every + offset;
    DateTime::from_timestamp(at, 0).unwrap_or(seen)
}

/// The documents of a tenant's inventory, by collection.
struct Inventory {
    assets: Vec<(String, Value)>,
    lists: Vec<(String, Value)>,
    catalogue: Vec<(String, Value)>,
    records: Vec<(String, Value)>,
}

pub fn seed(ctx: &SeedCtx) -> BoxFuture<'_, StoreResult<()>> {
    Box::pin(async move {
        let inventory = draw(ctx, &ctx.machines);
        for (collection, docs) in [
            (ASSETS, inventory.assets),
            (ASSET_SOFTWARE, inventory.lists),
            (SOFTWARE, inventory.catalogue),
            (CVE_RECORDS, inventory.records),
        ] {
            ctx.stores.docs.put(ctx.tenant.id, collection, docs).await?;
        }
        Ok(())
    })
}

/// The assets as of now, when a batch ends now: drawn as the seed did, each last inventoried
/// as the machine was seen since (the online ones within the last period). No API write
/// changes an asset.
pub fn produce(ctx: &SeedCtx, _from: DateTime<Utc>, to: DateTime<Utc>) -> Produced {
    Produced::present(ctx, to, ASSETS, || {
        draw(&ctx.as_seeded(), &ctx.machines).assets
    })
}

/// The tenant's inventory as the seed draws it, each asset last inventoried as its machine
/// of `seen` was last seen (the roster as of the seed, or as of a later time).
fn draw(ctx: &SeedCtx, seen: &[MachineSeed]) -> Inventory {
    let mut rng = ctx.rng("inventory");
    let title_id = |t: usize| software_id(TITLES[t].name, TITLES[t].publisher, TITLES[t].version);
    let hotfix_id = |j: usize| software_id(&hotfix_name(j), WINDOWS_UPDATES, &hotfix_version(j));
    // The assets each title is installed on.
    let mut installs: BTreeMap<i64, Vec<i64>> = BTreeMap::new();
    let mut hotfix_used: BTreeSet<usize> = BTreeSet::new();
    let mut assets = Vec::with_capacity(ctx.machines.len());
    let mut lists = Vec::with_capacity(ctx.machines.len());
    // The first Windows server carries more updates than an asset shows
    // (docs/modules.md#inventory: 500).
    let big = ctx
        .machines
        .iter()
        .position(|m| platform(m) == Platform::WinServer);
    for (i, m) in ctx.machines.iter().enumerate() {
        let p = platform(m);
        let mut software = Vec::new();
        let mut cves = BTreeSet::new();
        for (t, title) in TITLES.iter().enumerate() {
            if fits(title.target, p) && rng.random_bool(title.share) {
                installs.entry(title_id(t)).or_default().push(m.id);
                cves.extend(title.cves.iter().copied());
                software.push(InstalledSoftware {
                    software_id: title_id(t),
                    name: title.name.into(),
                    publisher: title.publisher.into(),
                    version: title.version.into(),
                    installed_at: ctx.now - Duration::days(rng.random_range(1..700)),
                    eol_status: title.eol,
                });
            }
        }
        if matches!(p, Platform::WinDesktop | Platform::WinServer) {
            let count = match (Some(i) == big, p) {
                (true, _) => 540,
                (false, Platform::WinServer) => rng.random_range(40..80),
                _ => rng.random_range(8..20),
            };
            let start = rng.random_range(0..HOTFIX_POOL - count.min(HOTFIX_POOL - 1));
            for j in start..(start + count).min(HOTFIX_POOL) {
                hotfix_used.insert(j);
                installs.entry(hotfix_id(j)).or_default().push(m.id);
                software.push(InstalledSoftware {
                    software_id: hotfix_id(j),
                    name: hotfix_name(j),
                    publisher: WINDOWS_UPDATES.into(),
                    version: hotfix_version(j),
                    installed_at: ctx.now - Duration::days(rng.random_range(1..400)),
                    eol_status: EolStatus::Unknown,
                });
            }
        }
        software.sort_by(|a, b| a.name.cmp(&b.name).then(a.version.cmp(&b.version)));
        let ipv6 = format!(
            "fe80::{:x}:{:x}ff:fe{:02x}:{:x}",
            rng.random_range(0x1000..0xffffu32),
            rng.random_range(0..0xffu32),
            rng.random_range(0..0xffu32),
            rng.random_range(0x1000..0xffffu32)
        );
        let ips = vec![m.ip.clone(), ipv6];
        let asset = Asset {
            id: m.id,
            hostname: m.hostname.clone(),
            fqdn: m.fqdn.clone(),
            os: m.os.clone(),
            os_build: os_build(&m.os).into(),
            kind: match m.kind {
                MachineKind::Laptop => AssetKind::Laptop,
                MachineKind::Workstation => AssetKind::Workstation,
                MachineKind::Server => AssetKind::Server,
            },
            site: m.site.code.into(),
            hardware: hardware(&mut rng, m, p),
            software_count: software.len() as u32,
            cve_count: cves.len() as u32,
            last_inventory_at: inventory_before(
                seen.get(i).map_or(m.last_seen_at, |s| s.last_seen_at),
                rng.random_range(0..INVENTORY_EVERY_MINUTES),
            ),
            ips: ips.clone(),
        };
        let mut body = json(asset);
        // Searched by `q`; not part of the answer.
        body["search_ips"] = Value::String(ips.join(" "));
        assets.push((asset_key(m.id), body));
        lists.push((asset_key(m.id), json(AssetSoftwareDoc { software })));
    }

    for on in installs.values_mut() {
        on.sort_unstable();
    }
    let mut catalogue = Vec::new();
    let mut records = Vec::new();
    let mut n_record = 0usize;
    for (t, title) in TITLES.iter().enumerate() {
        let id = title_id(t);
        let Some(on) = installs.get(&id) else {
            continue;
        };
        let count = on.len() as u32;
        catalogue.push((
            asset_key(id),
            catalog::software_doc(title.name, title.publisher, title.version, on),
        ));
        for cve in title.cves.iter().filter_map(|c| catalog::cve(c)) {
            // The first three records show every status; the rest are mostly open.
            let status = match n_record {
                0 => CveStatus::Open,
                1 => CveStatus::Acknowledged,
                2 => CveStatus::Mitigated,
                _ => *pick(
                    &mut rng,
                    &[
                        CveStatus::Open,
                        CveStatus::Open,
                        CveStatus::Open,
                        CveStatus::Acknowledged,
                        CveStatus::Mitigated,
                    ],
                ),
            };
            n_record += 1;
            let key = cve_key(cve.cvss, cve.id, id);
            records.push((
                key,
                json(CveRecord {
                    id: format!("{}:{id}", cve.id),
                    cve_id: cve.id.into(),
                    software_id: id,
                    software: title.name.into(),
                    publisher: title.publisher.into(),
                    version: title.version.into(),
                    description: cve.description.into(),
                    cvss: cve.cvss,
                    epss: cve.epss,
                    known_exploited: cve.known_exploited,
                    status,
                    affected_assets: count,
                    published_at: cve.published.into(),
                    first_seen_at: ctx.now - Duration::days(rng.random_range(1..90)),
                }),
            ));
        }
    }
    for j in hotfix_used {
        let id = hotfix_id(j);
        let on = installs.get(&id).map_or(&[][..], Vec::as_slice);
        catalogue.push((
            asset_key(id),
            catalog::software_doc(&hotfix_name(j), WINDOWS_UPDATES, &hotfix_version(j), on),
        ));
    }
    Inventory {
        assets,
        lists,
        catalogue,
        records,
    }
}
