//! How the flows the agents and the site gateways report are written (docs/collect.md#flow):
//! each stored under an id made of its content, and counted once into the aggregates the
//! flows routes read ([`crate::derive`]), however often it is sent; and the failed outbound
//! connections the agents report, stored for `/flows/blocked`.

use std::collections::HashMap;
use std::net::IpAddr;

use chrono::{DateTime, Utc};
use netops_geo::GeoDb;
use netops_shared::collect::{Batch, CollectKind, LineError, content_id};
use netops_shared::lookup::MACHINES;
use netops_shared::module::BoxFuture;
use netops_shared::store::{Filter, LineRefusal, Record, StoreError, StoreResult};
use netops_shared::{Msg, Scope};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::{PartialSchema, ToSchema};

use crate::derive::{
    Derived, NO_GATEWAY, PRIVATE_COUNTRY, PRIVATE_OPERATOR, Remote, Seen, Traffic, is_private,
    service_of,
};
use crate::model::{
    BLOCKED, Direction, FailureType, GATEWAY_RECORDS, GATEWAYS, Protocol, RECORDS, StoredFlow,
    UNKNOWN,
};

/// `POST /collect/flow`.
pub const FLOW: CollectKind = CollectKind {
    name: "flow",
    scope: Scope::CollectFlows,
    text_field: None,
    schema: flow_schema,
    write: write_flows,
    agents: true,
};

/// `POST /collect/gateway-flow`.
pub const GATEWAY_FLOW: CollectKind = CollectKind {
    name: "gateway-flow",
    scope: Scope::CollectFlows,
    text_field: None,
    schema: gateway_flow_schema,
    write: write_gateway_flows,
    agents: false,
};

/// `POST /collect/flow-failure`.
pub const FLOW_FAILURE: CollectKind = CollectKind {
    name: "flow-failure",
    scope: Scope::CollectFlows,
    text_field: None,
    schema: failure_schema,
    write: write_failures,
    agents: true,
};

/// Un flux réseau vu par l'agent d'une machine : une connexion d'un processus, comptée dans
/// l'heure de son début (`start`). La machine doit être connue du compte (ses battements de
/// cœur la créent) : un flux d'une machine inconnue est refusé
/// (`unknown_reference`). Un flux est identifié par son contenu : renvoyé, dans n'importe quel
/// lot, il est stocké et compté une fois. Le pays et l'opérateur de l'adresse distante sont
/// `local` et `réseau interne` pour une adresse privée ; sinon, ceux des données de
/// géolocalisation chargées par le service de collecte (pays : DB-IP ; opérateur, le nom du
/// système autonome : RouteViews, NRO et DB-IP ; sous licence CC BY 4.0), `inconnu` là où
/// elles n'en donnent pas. Le site de la machine est `inconnu` dans
/// l'explorateur, et aucune passerelle n'est associée au flux d'un agent (les passerelles
/// envoient les leurs, `gateway-flow`). Une socket en écoute (`listening`) est stockée mais
/// n'est pas comptée. Alimente `/flows`, `/flows/summary`, `/flows/talkers`,
/// `/flows/destinations` (source agent) et `/flows/explore`.
#[derive(Debug, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = CollectFlow)]
pub struct FlowLine {
    /// Début de la connexion.
    pub start: DateTime<Utc>,
    /// Fin de la connexion, si elle est terminée (au plus tôt `start`).
    #[serde(default)]
    pub end: Option<DateTime<Utc>>,
    /// Nom d'hôte de la machine.
    #[schema(example = "PAR-LT-0004")]
    pub machine: String,
    /// Processus ; `inconnu` par défaut.
    #[serde(default)]
    #[schema(example = "ms-teams.exe")]
    pub process: Option<String>,
    /// Compte qui exécute le processus ; `inconnu` par défaut.
    #[serde(default)]
    pub user: Option<String>,
    /// Adresse locale ; par défaut, celle de `/machines`.
    #[serde(default)]
    pub local_ip: Option<String>,
    pub local_port: u16,
    #[schema(example = "52.113.194.132")]
    pub remote_ip: String,
    pub remote_port: u16,
    /// Nom d'hôte distant, s'il est connu.
    #[serde(default)]
    #[schema(example = "teams.microsoft.com")]
    pub remote_host: Option<String>,
    #[schema(inline)]
    pub protocol: Protocol,
    /// Sens, vu de la machine.
    #[schema(inline)]
    pub direction: Direction,
    /// Octets envoyés et reçus.
    pub bytes: u64,
    #[serde(default)]
    pub packets: Option<u64>,
    /// Socket en écoute : stockée, non comptée.
    #[serde(default)]
    pub listening: bool,
}

/// Un flux décodé d'IPFIX ou de NetFlow par le relais d'un site, vu par une passerelle ou un
/// pare-feu, y compris pour les équipements sans agent. L'équipement est celui de
/// `/firewall/devices` nommé par `device` (son id ou son nom) ou, par défaut, celui dont
/// l'adresse est l'exportateur (`exporter`) : un flux dont l'exportateur ne correspond à aucun
/// équipement connu du compte est refusé (`unknown_reference`), il ne crée pas d'équipement.
/// Le côté interne est l'adresse privée : la source si elle est privée (sens sortant), sinon
/// la destination si elle l'est (sens entrant), sinon la source (sortant). Quand le côté
/// interne est l'adresse d'une machine à agent, le flux est compté pour elle avec la source
/// gateway, et une seule fois avec `source=all` (l'agent le compte déjà). L'interface est
/// `output_if` pour un flux sortant, `input_if` pour un entrant. Le protocole est le numéro
/// IANA ; les ports sont facultatifs pour les protocoles autres que TCP et UDP. Un flux est
/// identifié par son contenu : renvoyé, il est stocké et compté une fois ; il est compté dans
/// l'heure de son début. Le pays et l'opérateur de l'adresse externe sont ceux des flux
/// d'agent (`flow`). Alimente `/flows/destinations` (source gateway ou all) et
/// `/flows/explore` (source gateway ou all).
#[derive(Debug, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = CollectGatewayFlow)]
pub struct GatewayFlowLine {
    pub start: DateTime<Utc>,
    /// Au plus tôt `start`.
    pub end: DateTime<Utc>,
    /// Adresse de l'exportateur IPFIX ou NetFlow.
    #[schema(example = "192.0.2.1")]
    pub exporter: String,
    /// L'équipement (id ou nom de `/firewall/devices`) configuré sur le relais ; par défaut,
    /// celui dont l'adresse est l'exportateur.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_if: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_if: Option<u32>,
    #[schema(example = "10.0.0.5")]
    pub src_ip: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub src_port: Option<u16>,
    #[schema(example = "203.0.113.9")]
    pub dst_ip: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dst_port: Option<u16>,
    /// Numéro IANA du protocole (6 TCP, 17 UDP, 1 ICMP...).
    #[schema(example = 6)]
    pub protocol: u8,
    pub bytes: u64,
    pub packets: u64,
}

/// Une connexion sortante échouée vue par l'agent d'une machine (spec 4.4 règle 5). La
/// machine doit être connue du compte (`unknown_reference` sinon). Identifiée par son
/// contenu : renvoyée, elle est stockée une fois. Alimente `/flows/blocked`.
#[derive(Debug, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = CollectFlowFailure)]
pub struct FailureLine {
    pub at: DateTime<Utc>,
    #[schema(example = "PAR-LT-0004")]
    pub machine: String,
    #[serde(rename = "type")]
    #[schema(inline)]
    pub kind: FailureType,
    pub process: String,
    /// Compte qui exécute le processus ; `inconnu` par défaut.
    #[serde(default)]
    pub user: Option<String>,
    pub remote_ip: String,
    pub remote_port: u16,
    #[serde(default)]
    pub remote_host: Option<String>,
    #[schema(inline)]
    pub protocol: Protocol,
}

fn flow_schema() -> Value {
    serde_json::to_value(FlowLine::schema()).unwrap_or_default()
}

fn gateway_flow_schema() -> Value {
    serde_json::to_value(GatewayFlowLine::schema()).unwrap_or_default()
}

fn failure_schema() -> Value {
    serde_json::to_value(FailureLine::schema()).unwrap_or_default()
}

fn write_flows<'a>(batch: &'a Batch<'a>) -> BoxFuture<'a, StoreResult<Vec<LineRefusal>>> {
    Box::pin(write_flow_lines(batch))
}

fn write_gateway_flows<'a>(batch: &'a Batch<'a>) -> BoxFuture<'a, StoreResult<Vec<LineRefusal>>> {
    Box::pin(write_gateway_lines(batch))
}

fn write_failures<'a>(batch: &'a Batch<'a>) -> BoxFuture<'a, StoreResult<Vec<LineRefusal>>> {
    Box::pin(write_failure_lines(batch))
}

fn data(e: impl std::fmt::Display) -> StoreError {
    StoreError::Data(e.to_string())
}

/// An address as written, or the refusal of a line that holds no address in `field`.
fn address(line: u64, field: &str, raw: &str) -> Result<IpAddr, LineRefusal> {
    raw.trim().parse().map_err(|_| {
        LineError::InvalidObservation.refuse(
            line,
            Msg::new(
                format!("{field} : adresse IP invalide"),
                format!("{field}: invalid IP address"),
            ),
        )
    })
}

/// Refuses a flow that ends before it starts.
fn check_span(
    line: u64,
    start: DateTime<Utc>,
    end: Option<DateTime<Utc>>,
) -> Result<(), LineRefusal> {
    match end {
        Some(end) if end < start => Err(LineError::InvalidObservation.refuse(
            line,
            Msg::new("end : antérieur à start", "end: before start"),
        )),
        _ => Ok(()),
    }
}

/// Country and operator of a remote address: the private ones are known, the others are
/// the geolocation data's (docs/geolocation.md), unknown where it has none or the process
/// has no geolocation loaded.
fn place<'a>(geo: Option<&'a GeoDb>, ip: &IpAddr) -> (&'a str, &'a str) {
    if is_private(ip) {
        return (PRIVATE_COUNTRY, PRIVATE_OPERATOR);
    }
    let found = geo.map(|g| g.place(*ip)).unwrap_or_default();
    (
        found.country.unwrap_or(UNKNOWN),
        found.operator.unwrap_or(UNKNOWN),
    )
}

/// Whether the totals tier is kept for this tenant (big tenants), as the routes read it.
async fn totals_tier(batch: &Batch<'_>) -> StoreResult<bool> {
    Ok(batch
        .stores
        .docs
        .get(batch.tenant, crate::model::SOURCES, "config")
        .await?
        .is_some_and(|d| d.body["totals_tier"] == Value::Bool(true)))
}

/// An agent flow read, as it is counted.
struct AgentFlow {
    at: i64,
    machine: String,
    body: StoredFlow,
    /// The service's port: the remote one, the local one for an inbound flow.
    port: u16,
    service: String,
}

impl AgentFlow {
    fn traffic(&self) -> Traffic<'_> {
        let b = &self.body;
        Traffic {
            at: self.at,
            seen: Seen::Agent,
            endpoint: &self.machine,
            agent_machine: true,
            process: &b.p,
            user: &b.u,
            site: UNKNOWN,
            gateway: NO_GATEWAY,
            interface: NO_GATEWAY,
            remote: Remote {
                ip: &b.ri,
                host: b.rh.as_deref(),
                country: &b.c,
                operator: &b.o,
                port: self.port,
                protocol: b.t.as_str(),
                service: &self.service,
                direction: b.d,
            },
            bytes: b.b as f64,
            flows: 1.0,
        }
    }
}

async fn write_flow_lines(batch: &Batch<'_>) -> StoreResult<Vec<LineRefusal>> {
    let mut refused = Vec::new();
    let lines = batch.read::<FlowLine>(&mut refused);
    let machines = batch
        .known_machines(lines.iter().map(|(_, l)| l.machine.as_str()))
        .await?;
    let mut items = Vec::with_capacity(lines.len());
    for (line, l) in lines {
        let Some(machine) = machines.get(&l.machine) else {
            refused.push(batch.unknown_machine(line, &l.machine));
            continue;
        };
        let checked = address(line, "remote_ip", &l.remote_ip)
            .and_then(|ip| {
                if let Some(local) = &l.local_ip {
                    address(line, "local_ip", local)?;
                }
                Ok(ip)
            })
            .and_then(|ip| check_span(line, l.start, l.end).map(|()| ip))
            .and_then(|ip| batch.check_time(line, l.start).map(|()| ip));
        let remote = match checked {
            Ok(ip) => ip,
            Err(r) => {
                refused.push(r);
                continue;
            }
        };
        let (country, operator) = place(batch.geo, &remote);
        let body = StoredFlow {
            p: l.process.unwrap_or_else(|| UNKNOWN.into()),
            u: l.user.unwrap_or_else(|| UNKNOWN.into()),
            li: l
                .local_ip
                .unwrap_or_else(|| machine["ip"].as_str().unwrap_or_default().to_owned()),
            lp: l.local_port,
            ri: remote.to_string(),
            rp: l.remote_port,
            rh: l.remote_host,
            t: l.protocol,
            d: l.direction,
            b: l.bytes,
            l: l.listening,
            c: country.into(),
            o: operator.into(),
        };
        let record = Record {
            partition: l.machine.clone(),
            ts: l.start.timestamp_millis(),
            id: content_id("fl", l.start, &(&l.machine, &body))?,
            body: serde_json::to_value(&body).map_err(data)?,
        };
        let port = match body.d {
            Direction::Inbound => body.lp,
            Direction::Outbound => body.rp,
        };
        let flow = AgentFlow {
            at: record.ts,
            machine: l.machine,
            port,
            service: service_of(port, body.t.as_str()),
            body,
        };
        items.push((record, flow));
    }
    let totals_tier = totals_tier(batch).await?;
    batch
        .store_counted(RECORDS, items, |new| {
            let mut derived = Derived::default();
            for flow in new.iter().filter(|f| !f.body.l) {
                derived.add(&flow.traffic());
            }
            derived.series(totals_tier)
        })
        .await?;
    Ok(refused)
}

/// A gateway (a device of `/firewall/devices`) as the flows writer needs it.
struct Gateway {
    id: String,
    name: String,
    ip: String,
    site: String,
}

/// The tenant's gateways and firewalls.
async fn gateways(batch: &Batch<'_>) -> StoreResult<Vec<Gateway>> {
    let docs = batch
        .stores
        .docs
        .read_all(batch.tenant, GATEWAYS, &Filter::all())
        .await?;
    let text = |v: &Value, k: &str| match &v[k] {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    };
    Ok(docs
        .items
        .iter()
        .map(|d| Gateway {
            id: text(&d.body, "id"),
            name: text(&d.body, "name"),
            ip: text(&d.body, "ip"),
            site: text(&d.body, "site"),
        })
        .collect())
}

/// A gateway flow read, as it is counted.
struct GatewayFlow {
    at: i64,
    gateway: usize,
    /// The internal side: the agent machine's host name, else the address.
    endpoint: String,
    agent_machine: bool,
    interface: String,
    remote_ip: String,
    country: String,
    operator: String,
    port: u16,
    protocol: String,
    service: String,
    direction: Direction,
    bytes: u64,
}

/// The name of an IANA protocol number: `TCP`, `UDP`, `ICMP`..., else the number.
fn protocol_name(n: u8) -> String {
    match n {
        1 => "ICMP".into(),
        6 => "TCP".into(),
        17 => "UDP".into(),
        47 => "GRE".into(),
        50 => "ESP".into(),
        58 => "ICMPv6".into(),
        132 => "SCTP".into(),
        n => n.to_string(),
    }
}

async fn write_gateway_lines(batch: &Batch<'_>) -> StoreResult<Vec<LineRefusal>> {
    let mut refused = Vec::new();
    let lines = batch.read::<GatewayFlowLine>(&mut refused);
    let gateways = gateways(batch).await?;
    // The agent machines by address, to tell their traffic from the devices without agent.
    let by_ip: HashMap<String, String> = batch
        .stores
        .docs
        .read_all(batch.tenant, MACHINES, &Filter::all())
        .await?
        .items
        .into_iter()
        .filter_map(|d| Some((d.body["ip"].as_str()?.to_owned(), d.key)))
        .collect();
    let mut items = Vec::with_capacity(lines.len());
    for (line, l) in lines {
        let found = match &l.device {
            Some(named) => gateways
                .iter()
                .position(|g| g.id == *named || g.name.eq_ignore_ascii_case(named)),
            None => gateways.iter().position(|g| g.ip == l.exporter.trim()),
        };
        let Some(gateway) = found else {
            let named = l.device.as_deref().unwrap_or(&l.exporter);
            refused.push(LineError::UnknownReference.refuse(
                line,
                Msg::new(
                    format!("aucun équipement « {named} » dans ce compte (/firewall/devices)"),
                    format!("no device '{named}' in this account (/firewall/devices)"),
                ),
            ));
            continue;
        };
        let addresses = address(line, "src_ip", &l.src_ip)
            .and_then(|src| Ok((src, address(line, "dst_ip", &l.dst_ip)?)))
            .and_then(|a| check_span(line, l.start, Some(l.end)).map(|()| a))
            .and_then(|a| batch.check_time(line, l.start).map(|()| a));
        let (src, dst) = match addresses {
            Ok(a) => a,
            Err(r) => {
                refused.push(r);
                continue;
            }
        };
        let outbound = is_private(&src) || !is_private(&dst);
        let (inside, remote, port, interface, direction) = if outbound {
            (src, dst, l.dst_port, l.output_if, Direction::Outbound)
        } else {
            (dst, src, l.src_port, l.input_if, Direction::Inbound)
        };
        let machine = by_ip.get(&inside.to_string());
        let (country, operator) = place(batch.geo, &remote);
        let protocol = protocol_name(l.protocol);
        let port = port.unwrap_or(0);
        let record = Record {
            partition: gateways[gateway].name.clone(),
            ts: l.start.timestamp_millis(),
            id: content_id("gw", l.start, &l)?,
            body: serde_json::to_value(&l).map_err(data)?,
        };
        let flow = GatewayFlow {
            at: record.ts,
            gateway,
            endpoint: machine.cloned().unwrap_or_else(|| inside.to_string()),
            agent_machine: machine.is_some(),
            interface: interface.map_or_else(|| UNKNOWN.to_owned(), |i| i.to_string()),
            remote_ip: remote.to_string(),
            country: country.to_owned(),
            operator: operator.to_owned(),
            port,
            service: service_of(port, &protocol),
            protocol,
            direction,
            bytes: l.bytes,
        };
        items.push((record, flow));
    }
    let totals_tier = totals_tier(batch).await?;
    batch
        .store_counted(GATEWAY_RECORDS, items, |new| {
            let mut derived = Derived::default();
            for f in &new {
                let g = &gateways[f.gateway];
                derived.add(&Traffic {
                    at: f.at,
                    seen: Seen::Gateway,
                    endpoint: &f.endpoint,
                    agent_machine: f.agent_machine,
                    process: UNKNOWN,
                    user: UNKNOWN,
                    site: &g.site,
                    gateway: &g.name,
                    interface: &f.interface,
                    remote: Remote {
                        ip: &f.remote_ip,
                        host: None,
                        country: &f.country,
                        operator: &f.operator,
                        port: f.port,
                        protocol: &f.protocol,
                        service: &f.service,
                        direction: f.direction,
                    },
                    bytes: f.bytes as f64,
                    flows: 1.0,
                });
            }
            derived.series(totals_tier)
        })
        .await?;
    Ok(refused)
}

/// A failed connection as stored: what `/flows/blocked` reads besides its time and machine.
#[derive(Serialize)]
struct StoredFailure {
    #[serde(rename = "type")]
    kind: FailureType,
    process: String,
    user: String,
    remote_ip: String,
    remote_port: u16,
    remote_host: Option<String>,
    protocol: Protocol,
}

async fn write_failure_lines(batch: &Batch<'_>) -> StoreResult<Vec<LineRefusal>> {
    let mut refused = Vec::new();
    let lines = batch.read::<FailureLine>(&mut refused);
    let machines = batch
        .known_machines(lines.iter().map(|(_, l)| l.machine.as_str()))
        .await?;
    let mut items = Vec::with_capacity(lines.len());
    for (line, l) in lines {
        if !machines.contains_key(&l.machine) {
            refused.push(batch.unknown_machine(line, &l.machine));
            continue;
        }
        let checked = address(line, "remote_ip", &l.remote_ip)
            .and_then(|ip| batch.check_time(line, l.at).map(|()| ip));
        let remote = match checked {
            Ok(ip) => ip,
            Err(r) => {
                refused.push(r);
                continue;
            }
        };
        let body = StoredFailure {
            kind: l.kind,
            process: l.process,
            user: l.user.unwrap_or_else(|| UNKNOWN.into()),
            remote_ip: remote.to_string(),
            remote_port: l.remote_port,
            remote_host: l.remote_host,
            protocol: l.protocol,
        };
        let record = Record {
            partition: l.machine.clone(),
            ts: l.at.timestamp_millis(),
            id: content_id("bk", l.at, &(&l.machine, &body))?,
            body: serde_json::to_value(&body).map_err(data)?,
        };
        items.push((record, ()));
    }
    batch.store_counted(BLOCKED, items, |_| Vec::new()).await?;
    Ok(refused)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn protocols_are_named_and_others_keep_their_number() {
        assert_eq!(protocol_name(6), "TCP");
        assert_eq!(protocol_name(17), "UDP");
        assert_eq!(protocol_name(1), "ICMP");
        assert_eq!(protocol_name(253), "253");
    }
}
