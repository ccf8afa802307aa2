//! How the agents' inventories are written (docs/collect.md#asset-inventory): each machine's
//! latest inventory becomes its asset and its list of installed software; the tenant's
//! software list (install counts) and its software x CVE records (the titles matched against
//! the catalogue) are derived from them, never sent.

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;

use chrono::{DateTime, Utc};
use netops_shared::collect::{Batch, CollectKind, OnMachine, bad_text, schema_of};
use netops_shared::module::BoxFuture;
use netops_shared::store::{LineRefusal, StoreError, StoreResult, doc_time};
use netops_shared::{Msg, Scope};
use serde::Deserialize;
use serde_json::{Value, json};
use utoipa::ToSchema;

use crate::catalog;
use crate::model::{
    ASSET_SOFTWARE, ASSETS, Asset, AssetKind, AssetSoftwareDoc, CVE_RECORDS, CveRecord, CveStatus,
    EolStatus, Hardware, INSTALLED_ON, InstalledSoftware, SOFTWARE, asset_key, cve_key,
    software_id,
};

/// `POST /collect/asset-inventory`.
pub const ASSET_INVENTORY: CollectKind = CollectKind {
    name: "asset-inventory",
    scope: Scope::CollectInventory,
    text_field: None,
    schema: schema_of::<InventoryLine>,
    write: write_inventories,
    agents: true,
};

/// At most this many software entries in one inventory.
const SOFTWARE_MAX: usize = 5_000;
/// At most this many addresses in one inventory.
const IPS_MAX: usize = 32;
/// At most this many characters in a name, publisher, version or other text field.
const TEXT_MAX: usize = 300;

/// Un logiciel installé, tel que l'agent le lit.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = CollectInstalledSoftware)]
pub struct SoftwareLine {
    #[schema(example = "7-Zip")]
    pub name: String,
    #[schema(example = "Igor Pavlov")]
    pub publisher: String,
    #[schema(example = "19.00")]
    pub version: String,
    /// Date d'installation ; par défaut, celle de l'inventaire.
    #[serde(default)]
    pub installed_at: Option<DateTime<Utc>>,
}

/// L'inventaire d'une machine, pris par son agent (toutes les 6 heures environ). La machine
/// doit être connue du compte : l'identifiant de l'actif est celui de la machine, que son
/// premier battement de cœur crée ; un inventaire d'une machine inconnue est refusé
/// (`unknown_reference`). L'actif prend l'état de son dernier inventaire ; un inventaire plus
/// ancien (envoyé en retard ou de nouveau) est accepté et ne change rien. La liste des
/// logiciels du compte (nombre d'installations) et les enregistrements logiciel x CVE
/// (titres rapprochés du catalogue par nom et version, sans casse ; statut `open` à leur
/// apparition) sont dérivés, jamais envoyés. 5 000 logiciels et 32 adresses au plus ; un
/// texte vide ou de plus de 300 caractères, une adresse qui n'est pas une adresse IP, est
/// refusé (`invalid_observation`). Alimente `/inventory/assets`, `/inventory/assets/{id}`,
/// `/inventory/software` et `/inventory/cves`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = CollectAssetInventory)]
pub struct InventoryLine {
    pub at: DateTime<Utc>,
    /// Nom d'hôte de la machine.
    #[schema(example = "PAR-LT-0004")]
    pub machine: String,
    #[schema(example = "par-lt-0004.acme.local")]
    pub fqdn: String,
    /// Toutes les adresses de la machine, la principale d'abord (une au moins).
    #[schema(example = json!(["10.10.30.11", "fe80::1c2a:7bff:fe41:9a10"]))]
    pub ips: Vec<String>,
    #[schema(example = "Windows 11 Pro 24H2")]
    pub os: String,
    #[schema(example = "10.0.26100")]
    pub os_build: String,
    #[schema(inline)]
    pub kind: AssetKind,
    /// Code du site.
    #[schema(example = "PAR")]
    pub site: String,
    #[schema(inline)]
    pub hardware: Hardware,
    #[schema(inline)]
    pub software: Vec<SoftwareLine>,
}

impl OnMachine for InventoryLine {
    fn machine(&self) -> &str {
        &self.machine
    }

    fn at(&self) -> DateTime<Utc> {
        self.at
    }

    fn invalid(&self) -> Option<Msg> {
        let texts = [
            ("fqdn", &self.fqdn),
            ("os", &self.os),
            ("site", &self.site),
            ("hardware.manufacturer", &self.hardware.manufacturer),
            ("hardware.model", &self.hardware.model),
        ];
        let software = self.software.iter().flat_map(|s| {
            [
                ("software.name", &s.name),
                ("software.publisher", &s.publisher),
                ("software.version", &s.version),
            ]
        });
        let texts = texts
            .into_iter()
            .chain(software)
            .map(|(field, t)| (field, Some(t.as_str()), true));
        if let Some(why) = bad_text(TEXT_MAX, texts) {
            return Some(why);
        }
        if self.ips.is_empty()
            || self.ips.len() > IPS_MAX
            || self.ips.iter().any(|ip| ip.parse::<IpAddr>().is_err())
        {
            return Some(Msg::new(
                format!("ips : de 1 à {IPS_MAX} adresses IP attendues"),
                format!("ips: 1 to {IPS_MAX} IP addresses are expected"),
            ));
        }
        if self.software.len() > SOFTWARE_MAX {
            return Some(Msg::new(
                format!("software : {SOFTWARE_MAX} logiciels au plus"),
                format!("software: at most {SOFTWARE_MAX} entries"),
            ));
        }
        None
    }
}

fn write_inventories<'a>(batch: &'a Batch<'a>) -> BoxFuture<'a, StoreResult<Vec<LineRefusal>>> {
    Box::pin(write(batch))
}

fn data(e: impl std::fmt::Display) -> StoreError {
    StoreError::Data(e.to_string())
}

async fn write(batch: &Batch<'_>) -> StoreResult<Vec<LineRefusal>> {
    let mut refused = Vec::new();
    let lines = batch
        .read_on_machines::<InventoryLine>(&mut refused)
        .await?;
    let machines = batch
        .known_machines(lines.iter().map(|(_, l)| l.machine.as_str()))
        .await?;
    // Each machine's latest inventory of the batch; the older ones are accepted and change
    // nothing, as those sent late do.
    let mut latest: BTreeMap<String, InventoryLine> = BTreeMap::new();
    for (_, l) in lines {
        if latest.get(&l.machine).is_none_or(|k| k.at < l.at) {
            latest.insert(l.machine.clone(), l);
        }
    }
    for (host, l) in latest {
        let Some(id) = machines.get(&host).and_then(|m| m["id"].as_i64()) else {
            // A machine document without its id: nothing the inventory can be the asset of.
            return Err(StoreError::Data(format!("machine {host} has no id")));
        };
        take_in(batch, id, l).await?;
    }
    Ok(refused)
}

/// A title as an asset lists it.
fn installed(s: SoftwareLine, at: DateTime<Utc>) -> InstalledSoftware {
    InstalledSoftware {
        software_id: software_id(&s.name, &s.publisher, &s.version),
        eol_status: catalog::title(&s.name, &s.version).map_or(EolStatus::Unknown, |t| t.eol),
        installed_at: s.installed_at.unwrap_or(at),
        name: s.name,
        publisher: s.publisher,
        version: s.version,
    }
}

/// Takes in the inventory `l` of the asset `id`, unless a later one was: the titles it gained
/// and lost first (their install counts and CVE records), then its list, then the asset. A
/// batch stopped in between, sent again, finds the same differences (the asset's list is
/// still the old one) and counts nothing twice: an install count is the number of assets a
/// title lists, each asset once.
async fn take_in(batch: &Batch<'_>, id: i64, l: InventoryLine) -> StoreResult<()> {
    let docs = &batch.stores.docs;
    let key = asset_key(id);
    if let Some(stored) = docs.get(batch.tenant, ASSETS, &key).await?
        && doc_time(&stored.body, "last_inventory_at").is_some_and(|t| t >= l.at)
    {
        return Ok(());
    }
    let old: Vec<InstalledSoftware> = match docs.get(batch.tenant, ASSET_SOFTWARE, &key).await? {
        Some(d) => {
            serde_json::from_value::<AssetSoftwareDoc>(d.body)
                .map_err(data)?
                .software
        }
        None => Vec::new(),
    };
    let mut software: Vec<InstalledSoftware> = Vec::with_capacity(l.software.len());
    let mut seen = BTreeSet::new();
    for s in l.software {
        let s = installed(s, l.at);
        if seen.insert(s.software_id) {
            software.push(s);
        }
    }
    software.sort_by(|a, b| a.name.cmp(&b.name).then(a.version.cmp(&b.version)));
    let old_ids: BTreeSet<i64> = old.iter().map(|s| s.software_id).collect();
    for s in software
        .iter()
        .filter(|s| !old_ids.contains(&s.software_id))
    {
        install(batch, id, s, true, l.at).await?;
    }
    for s in old.iter().filter(|s| !seen.contains(&s.software_id)) {
        install(batch, id, s, false, l.at).await?;
    }
    let cves: BTreeSet<&str> = software
        .iter()
        .filter_map(|s| catalog::title(&s.name, &s.version))
        .flat_map(|t| t.cves.iter().copied())
        .collect();
    let asset = Asset {
        id,
        hostname: l.machine,
        fqdn: l.fqdn,
        os: l.os,
        os_build: l.os_build,
        kind: l.kind,
        site: l.site,
        hardware: l.hardware,
        software_count: software.len() as u32,
        cve_count: cves.len() as u32,
        last_inventory_at: l.at,
        ips: l.ips,
    };
    let mut body = serde_json::to_value(&asset).map_err(data)?;
    // Searched by `q`; not part of the answer.
    body["search_ips"] = Value::String(asset.ips.join(" "));
    let list = serde_json::to_value(AssetSoftwareDoc { software }).map_err(data)?;
    docs.put(batch.tenant, ASSET_SOFTWARE, vec![(key.clone(), list)])
        .await?;
    batch
        .update_doc(ASSETS, &key, |stored| {
            let later = stored
                .and_then(|b| doc_time(b, "last_inventory_at"))
                .is_some_and(|t| t >= asset.last_inventory_at);
            Ok((!later).then(|| body.clone()))
        })
        .await?;
    Ok(())
}

/// Notes that the title `s` is now installed on the asset `asset` (or no longer, when not
/// `on`): its install count, and the CVE records of its catalogue's CVEs (created `open`,
/// first seen `at`; their affected assets following the count).
async fn install(
    batch: &Batch<'_>,
    asset: i64,
    s: &InstalledSoftware,
    on: bool,
    at: DateTime<Utc>,
) -> StoreResult<()> {
    let mut count = None;
    batch
        .update_doc(SOFTWARE, &asset_key(s.software_id), |stored| {
            let mut assets: Vec<i64> = stored
                .and_then(|b| serde_json::from_value(b[INSTALLED_ON].clone()).ok())
                .unwrap_or_default();
            match (assets.binary_search(&asset), on) {
                (Err(i), true) => assets.insert(i, asset),
                (Ok(i), false) => {
                    assets.remove(i);
                }
                _ => {}
            }
            count = Some(assets.len() as u32);
            if stored.is_none() && !on {
                return Ok(None);
            }
            Ok(Some(catalog::software_doc(
                &s.name,
                &s.publisher,
                &s.version,
                &assets,
            )))
        })
        .await?;
    let (Some(count), Some(title)) = (count, catalog::title(&s.name, &s.version)) else {
        return Ok(());
    };
    for cve in title.cves.iter().filter_map(|c| catalog::cve(c)) {
        let key = cve_key(cve.cvss, cve.id, s.software_id);
        batch
            .update_doc(CVE_RECORDS, &key, |stored| {
                let Some(stored) = stored else {
                    let record = CveRecord {
                        id: format!("{}:{}", cve.id, s.software_id),
                        cve_id: cve.id.into(),
                        software_id: s.software_id,
                        software: s.name.clone(),
                        publisher: s.publisher.clone(),
                        version: s.version.clone(),
                        description: cve.description.into(),
                        cvss: cve.cvss,
                        epss: cve.epss,
                        known_exploited: cve.known_exploited,
                        status: CveStatus::Open,
                        affected_assets: count,
                        published_at: cve.published.into(),
                        first_seen_at: at,
                    };
                    return (count > 0)
                        .then(|| serde_json::to_value(record))
                        .transpose()
                        .map_err(data);
                };
                let mut body = stored.clone();
                body["affected_assets"] = json!(count);
                Ok(Some(body))
            })
            .await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(software: Vec<SoftwareLine>) -> InventoryLine {
        serde_json::from_value::<InventoryLine>(json!({
            "at": "2026-01-01T00:00:00Z", "machine": "PC-1", "fqdn": "pc-1.acme.local",
            "ips": ["10.0.0.1"], "os": "Windows 11 Pro 24H2", "os_build": "10.0.26100",
            "kind": "laptop", "site": "PAR",
            "hardware": {"manufacturer": "Dell Inc.", "model": "Latitude 5440",
                "serial_number": "ABC", "cpu": "i5", "cpu_cores": 10, "memory_gb": 16, "disk_gb": 512},
            "software": []
        }))
        .map(|mut l| {
            l.software = software;
            l
        })
        .expect("line")
    }

    #[test]
    fn a_title_of_the_catalogue_gets_its_end_of_life_and_others_unknown() {
        let known = &catalog::TITLES[0];
        let s = installed(
            SoftwareLine {
                name: known.name.to_uppercase(),
                publisher: known.publisher.into(),
                version: known.version.into(),
                installed_at: None,
            },
            Utc::now(),
        );
        assert_eq!(s.eol_status, known.eol);
        let other = installed(
            SoftwareLine {
                name: "Inconnu".into(),
                publisher: "X".into(),
                version: "1".into(),
                installed_at: None,
            },
            Utc::now(),
        );
        assert_eq!(other.eol_status, EolStatus::Unknown);
        assert_ne!(s.software_id, other.software_id);
    }

    #[test]
    fn bad_fields_are_named() {
        assert!(line(vec![]).invalid().is_none());
        let mut l = line(vec![SoftwareLine {
            name: " ".into(),
            publisher: "X".into(),
            version: "1".into(),
            installed_at: None,
        }]);
        assert!(
            l.invalid()
                .expect("invalid")
                .en
                .starts_with("software.name")
        );
        l.software.clear();
        l.ips = vec!["10.0.0.999".into()];
        assert!(l.invalid().expect("invalid").en.starts_with("ips"));
    }
}
