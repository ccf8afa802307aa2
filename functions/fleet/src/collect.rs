//! How the agents' heartbeats are written (docs/collect.md#machine-heartbeat): each machine's
//! document ([`MACHINES`], what `/machines` reads) takes the state its latest heartbeat
//! reports; a heartbeat of a host name the tenant does not know creates the machine, with the
//! next id of the tenant and the fleet's count ([`MACHINE_COUNT`]) raised by one.

use std::collections::BTreeMap;
use std::net::IpAddr;

use chrono::{DateTime, Utc};
use netops_shared::collect::{Batch, CollectKind, LineError, schema_of};
use netops_shared::lookup::{MACHINE_COUNT, MACHINE_COUNT_KEY};
use netops_shared::module::BoxFuture;
use netops_shared::store::{Expect, Filter, LineRefusal, StoreError, StoreResult};
use netops_shared::{Msg, Scope};
use serde::Deserialize;
use serde_json::{Value, json};
use utoipa::ToSchema;

use crate::model::{AgentStatus, MACHINES, Machine};

/// `POST /collect/machine-heartbeat`.
pub const HEARTBEAT: CollectKind = CollectKind {
    name: "machine-heartbeat",
    scope: Scope::CollectFleet,
    text_field: None,
    schema: schema_of::<HeartbeatLine>,
    write: write_heartbeats,
    agents: true,
};

/// Longest host name kept (a DNS name's limit).
const HOSTNAME_MAX: usize = 253;

/// Battement de cœur de l'agent d'une machine : son état et ce qu'il sait de la machine au
/// moment `at`. La machine prend l'état de son battement le plus récent (un battement plus
/// ancien que le dernier reçu est accepté mais ne change rien ; le même battement renvoyé
/// ne change rien). Un nom d'hôte inconnu du compte crée la machine, avec l'identifiant
/// suivant du compte. Refusés : un nom d'hôte vide, avec des espaces ou une barre oblique, ou
/// de plus de 253 caractères, une adresse IP invalide, une version ou un système vide, un
/// module vide (`invalid_observation`) ; une date de plus de 5 minutes dans le futur ou
/// antérieure à la rétention (`time_out_of_range`). Alimente `/machines` et
/// `/machines/{hostname}` (`status`, `last_seen_at`, `ip`, `os`, `agent_version`, `modules`).
/// Une machine dont les battements cessent sans annonce passe `offline` à la passe planifiée
/// qui suit 10 minutes de silence (elle garde son `last_seen_at`) ; son battement suivant la
/// remet `online`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = CollectMachineHeartbeat)]
pub struct HeartbeatLine {
    /// Moment du battement, selon l'horloge de la machine.
    pub at: DateTime<Utc>,
    /// Nom d'hôte, tel qu'il sera affiché et servira de clé des routes par machine.
    #[schema(example = "PAR-LT-0001")]
    pub hostname: String,
    #[schema(example = "10.10.30.14")]
    pub ip: String,
    #[schema(example = "Windows 11 Pro 24H2")]
    pub os: String,
    #[schema(example = "4.12.3")]
    pub agent_version: String,
    /// État de l'agent : `online` (par défaut) ; `offline` quand l'agent annonce son arrêt
    /// (arrêt de la machine, désinstallation).
    #[serde(default = "online")]
    #[schema(inline, default = "online")]
    pub status: AgentStatus,
    /// Modules actifs sur la machine (`netflow`, `netdiag`, ...) ; gardés triés, sans doublon.
    #[serde(default)]
    #[schema(example = json!(["netdiag", "netflow"]))]
    pub modules: Vec<String>,
}

fn online() -> AgentStatus {
    AgentStatus::Online
}

fn write_heartbeats<'a>(batch: &'a Batch<'a>) -> BoxFuture<'a, StoreResult<Vec<LineRefusal>>> {
    Box::pin(write(batch))
}

/// Why a heartbeat's fields cannot be kept, if they cannot: the field at fault.
fn invalid(l: &HeartbeatLine) -> Option<Msg> {
    let host = l.hostname.trim();
    if host.is_empty()
        || host.len() > HOSTNAME_MAX
        || host.chars().any(|c| c.is_whitespace() || c == '/')
        || host != l.hostname
    {
        return Some(Msg::new(
            "hostname : nom d'hôte invalide",
            "hostname: invalid host name",
        ));
    }
    if l.ip.parse::<IpAddr>().is_err() {
        return Some(Msg::new(
            "ip : adresse IP invalide",
            "ip: invalid IP address",
        ));
    }
    for (field, value) in [("os", &l.os), ("agent_version", &l.agent_version)] {
        if value.trim().is_empty() {
            return Some(Msg::new(
                format!("{field} : valeur vide"),
                format!("{field}: empty value"),
            ));
        }
    }
    if l.modules.iter().any(|m| m.trim().is_empty()) {
        return Some(Msg::new(
            "modules : nom de module vide",
            "modules: empty module name",
        ));
    }
    None
}

fn to_body(machine: &Machine) -> StoreResult<Value> {
    serde_json::to_value(machine).map_err(|e| StoreError::Data(e.to_string()))
}

/// The machine `id` as heartbeat `l` reports it.
fn machine_of(id: i64, l: &HeartbeatLine) -> Machine {
    let mut modules: Vec<String> = l.modules.iter().map(|m| m.trim().to_owned()).collect();
    modules.sort();
    modules.dedup();
    Machine {
        id,
        hostname: l.hostname.clone(),
        ip: l.ip.clone(),
        os: l.os.clone(),
        agent_version: l.agent_version.clone(),
        status: l.status,
        last_seen_at: l.at,
        modules,
    }
}

async fn write(batch: &Batch<'_>) -> StoreResult<Vec<LineRefusal>> {
    let mut refused = Vec::new();
    // Each machine's latest valid heartbeat of the batch: only it can change the machine.
    let mut latest: BTreeMap<String, HeartbeatLine> = BTreeMap::new();
    for (line, l) in batch.read::<HeartbeatLine>(&mut refused) {
        if let Some(why) = invalid(&l) {
            refused.push(LineError::InvalidObservation.refuse(line, why));
            continue;
        }
        if let Err(r) = batch.check_time(line, l.at) {
            refused.push(r);
            continue;
        }
        // An agent's heartbeats are its own machine's.
        if batch.machine.is_some_and(|own| own != l.hostname) {
            refused.push(batch.unknown_machine(line, &l.hostname));
            continue;
        }
        match latest.get(&l.hostname) {
            Some(kept) if kept.at >= l.at => {}
            _ => {
                latest.insert(l.hostname.clone(), l);
            }
        }
    }
    for l in latest.values() {
        apply(batch, l).await?;
    }
    Ok(refused)
}

/// Applies heartbeat `l` to its machine, creating the machine when the tenant has none of
/// that name.
async fn apply(batch: &Batch<'_>, l: &HeartbeatLine) -> StoreResult<()> {
    if update(batch, l).await? {
        return Ok(());
    }
    let id = reserve_id(batch).await?;
    let body = to_body(&machine_of(id, l))?;
    match batch
        .stores
        .docs
        .put_if(batch.tenant, MACHINES, &l.hostname, body, Expect::Absent)
        .await
    {
        Ok(()) => Ok(()),
        // Another batch created it meanwhile: it counts it, this one gives its place back
        // (the id stays unused) and updates it.
        Err(StoreError::ConditionFailed) => {
            count(batch, -1, None).await?;
            update(batch, l).await.map(drop)
        }
        Err(e) => Err(e),
    }
}

/// Updates the machine's document with `l` if it is newer than its last heartbeat; `false`
/// when the tenant has no such machine.
async fn update(batch: &Batch<'_>, l: &HeartbeatLine) -> StoreResult<bool> {
    let mut known = false;
    batch
        .update_doc(MACHINES, &l.hostname, |stored| {
            let Some(stored) = stored else {
                known = false;
                return Ok(None);
            };
            known = true;
            let machine: Machine = serde_json::from_value(stored.clone())
                .map_err(|e| StoreError::Data(e.to_string()))?;
            if machine.last_seen_at >= l.at {
                return Ok(None);
            }
            to_body(&machine_of(machine.id, l)).map(Some)
        })
        .await?;
    Ok(known)
}

/// The next machine id of the tenant, counted into the fleet's count with it.
async fn reserve_id(batch: &Batch<'_>) -> StoreResult<i64> {
    // A count written before ids were kept in it: the highest id of the fleet, read once.
    let highest = match batch
        .stores
        .docs
        .get(batch.tenant, MACHINE_COUNT, MACHINE_COUNT_KEY)
        .await?
    {
        Some(d) if d.body["last_id"].is_i64() => None,
        _ => Some(highest_id(batch).await?),
    };
    let body = count(batch, 1, highest).await?;
    body["last_id"]
        .as_i64()
        .ok_or_else(|| StoreError::Data("machine count without last_id".into()))
}

/// Adds `delta` to the fleet's count, and reserves an id when `delta` is positive; `highest`
/// is the fleet's highest id, for a count that keeps none yet. Returns the count written.
async fn count(batch: &Batch<'_>, delta: i64, highest: Option<i64>) -> StoreResult<Value> {
    let written = batch
        .update_doc(MACHINE_COUNT, MACHINE_COUNT_KEY, |stored| {
            let machines = stored.and_then(|b| b["machines"].as_i64()).unwrap_or(0);
            let last_id = stored
                .and_then(|b| b["last_id"].as_i64())
                .or(highest)
                .unwrap_or(0);
            let last_id = if delta > 0 { last_id + 1 } else { last_id };
            Ok(Some(
                json!({"machines": (machines + delta).max(0), "last_id": last_id}),
            ))
        })
        .await?;
    written.ok_or_else(|| StoreError::Data("machine count not written".into()))
}

/// The highest id of the tenant's machines (0 for none), over the whole fleet page by page.
async fn highest_id(batch: &Batch<'_>) -> StoreResult<i64> {
    const PAGE: usize = 1000;
    let mut highest = 0;
    let mut after: Option<String> = None;
    loop {
        let page = batch
            .stores
            .docs
            .list(
                batch.tenant,
                MACHINES,
                &Filter::all(),
                after.as_deref(),
                PAGE,
            )
            .await?;
        highest = page
            .iter()
            .filter_map(|d| d.body["id"].as_i64())
            .fold(highest, i64::max);
        match page.last() {
            Some(last) if page.len() == PAGE => after = Some(last.key.clone()),
            _ => return Ok(highest),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(hostname: &str, ip: &str) -> HeartbeatLine {
        HeartbeatLine {
            at: Utc::now(),
            hostname: hostname.into(),
            ip: ip.into(),
            os: "Windows 11".into(),
            agent_version: "4.12.3".into(),
            status: AgentStatus::Online,
            modules: vec!["netflow".into(), "netdiag".into(), "netflow".into()],
        }
    }

    #[test]
    fn heartbeats_name_a_host_and_an_address() {
        assert!(invalid(&line("PAR-LT-0001", "10.0.0.1")).is_none());
        assert!(invalid(&line("PAR-LT-0001", "fe80::1")).is_none());
        for (host, ip) in [
            ("", "10.0.0.1"),
            ("PAR LT", "10.0.0.1"),
            (" PAR", "10.0.0.1"),
            ("a/b", "10.0.0.1"),
            ("PAR", "10.0.0.300"),
        ] {
            assert!(invalid(&line(host, ip)).is_some(), "{host} {ip}");
        }
        assert_eq!(
            machine_of(7, &line("h", "10.0.0.1")).modules,
            ["netdiag", "netflow"]
        );
    }
}
