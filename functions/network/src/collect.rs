//! How the discovery scans' ports are written (docs/collect.md#network-port): each port of an
//! address is one document, first seen at its earliest observation and in the state of its
//! latest.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use netops_shared::collect::{Batch, CollectKind, bad_text, schema_of};
use netops_shared::module::BoxFuture;
use netops_shared::store::{LineRefusal, StoreError, StoreResult};
use netops_shared::{Msg, Scope};
use serde::Deserialize;
use utoipa::ToSchema;

use crate::model::{PORTS, Port, PortState, port_key};

/// `POST /collect/network-port`.
pub const PORT: CollectKind = CollectKind {
    name: "network-port",
    scope: Scope::CollectNetwork,
    text_field: None,
    schema: schema_of::<PortLine>,
    write: write_ports,
    agents: false,
};

/// At most this many characters in a host or service name.
const NAME_MAX: usize = 253;

/// Un port vu par un scan de découverte (nmap, scanner du site) : son adresse, son numéro, son
/// protocole et son état. Une adresse est découverte, pas configurée : un port encore inconnu
/// du compte est créé. Un port est premier vu (`first_seen_at`) à sa plus ancienne
/// observation et prend l'état, l'hôte et le service de la plus récente ; une observation plus
/// ancienne (en retard, ou renvoyée) ne change que `first_seen_at` quand elle le précède ;
/// un hôte ou un service que le scan ne nomme pas reste celui d'avant.
/// Adresse IP invalide, protocole autre que `tcp`/`udp`, port 0, hôte ou service vide ou de
/// plus de 253 caractères : refusés (`invalid_observation`). Alimente `/network/ports`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = CollectNetworkPort)]
pub struct PortLine {
    pub at: DateTime<Utc>,
    #[schema(example = "10.10.10.10")]
    pub ip: String,
    #[schema(example = 443)]
    pub port: u16,
    /// `tcp` ou `udp`.
    #[schema(example = "tcp")]
    pub protocol: String,
    /// `open`, `closed` ou `filtered`.
    #[schema(inline)]
    pub state: PortState,
    /// Nom de la machine ou de l'équipement à cette adresse.
    #[serde(default)]
    pub host: Option<String>,
    #[schema(example = "https")]
    #[serde(default)]
    pub service: Option<String>,
}

fn write_ports<'a>(batch: &'a Batch<'a>) -> BoxFuture<'a, StoreResult<Vec<LineRefusal>>> {
    Box::pin(write(batch))
}

fn bad(l: &PortLine) -> Option<Msg> {
    if l.ip.parse::<std::net::IpAddr>().is_err() {
        return Some(Msg::new(
            "ip : adresse IP invalide",
            "ip: invalid IP address",
        ));
    }
    if !["tcp", "udp"].contains(&l.protocol.as_str()) {
        return Some(Msg::new(
            "protocol : tcp ou udp attendu",
            "protocol: tcp or udp expected",
        ));
    }
    if l.port == 0 {
        return Some(Msg::new(
            "port : de 1 à 65535 attendu",
            "port: 1 to 65535 expected",
        ));
    }
    bad_text(
        NAME_MAX,
        [
            ("host", l.host.as_deref(), false),
            ("service", l.service.as_deref(), false),
        ],
    )
}

async fn write(batch: &Batch<'_>) -> StoreResult<Vec<LineRefusal>> {
    let mut refused = Vec::new();
    // Each port's earliest and latest observations in the batch.
    let mut seen: BTreeMap<String, (DateTime<Utc>, PortLine)> = BTreeMap::new();
    for (_, l) in batch.read_valid(&mut refused, |l: &PortLine| l.at, bad) {
        let key = port_key(&l.ip, l.port, &l.protocol);
        let merged = match seen.remove(&key) {
            None => (l.at, l),
            Some((first, prev)) => {
                // The latest takes the host and service it does not name from the other.
                let (mut newer, older) = if l.at > prev.at { (l, prev) } else { (prev, l) };
                newer.host = newer.host.or(older.host);
                newer.service = newer.service.or(older.service);
                (first.min(older.at), newer)
            }
        };
        seen.insert(key, merged);
    }
    let data = |e: serde_json::Error| StoreError::Data(e.to_string());
    for (key, (first, l)) in seen {
        batch
            .update_doc(PORTS, &key, |stored| {
                let stored: Option<Port> = stored
                    .map(|v| serde_json::from_value(v.clone()))
                    .transpose()
                    .map_err(data)?;
                let port = match stored {
                    Some(p) if p.last_seen_at >= l.at && p.first_seen_at <= first => {
                        return Ok(None);
                    }
                    Some(p) if p.last_seen_at >= l.at => Port {
                        first_seen_at: first,
                        ..p
                    },
                    stored => {
                        // A host or service the scan did not name stays as it was.
                        let (host, service, first_seen_at) = match stored {
                            Some(p) => (p.host, p.service, p.first_seen_at.min(first)),
                            None => (None, None, first),
                        };
                        Port {
                            ip: l.ip.clone(),
                            host: l.host.clone().or(host),
                            port: l.port,
                            protocol: l.protocol.clone(),
                            state: l.state,
                            service: l.service.clone().or(service),
                            first_seen_at,
                            last_seen_at: l.at,
                        }
                    }
                };
                serde_json::to_value(port).map(Some).map_err(data)
            })
            .await?;
    }
    Ok(refused)
}
