//! How the network's observations are written (docs/collect.md#network-port): the discovery
//! scans' ports (each port of an address one document, first seen at its earliest
//! observation and in the state of its latest), the devices' metric samples and the hours
//! derived from them, the devices' states (and their sites'), and the tunnels' states and
//! traffic. Devices are the tenant's network inventory: never created by a collector.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use chrono::{DateTime, Utc};
use netops_shared::collect::{Batch, CollectKind, LineError, bad_measure, bad_text, schema_of};
use netops_shared::module::BoxFuture;
use netops_shared::store::{Filter, LineRefusal, Pred, Record, StoreError, StoreResult};
use netops_shared::{Msg, Scope};
use serde::Deserialize;
use serde_json::{Value, json};
use utoipa::ToSchema;

use crate::derive::{device_status, hour_point, metric_record, site_status};
use crate::model::{
    DEVICES, Device, DeviceDetail, LinkStatus, METRIC_SAMPLES, METRICS, MetricPoint, PORTS, Port,
    PortState, SITES, TUNNEL_SAMPLES, TUNNELS, Tunnel, TunnelEnd, key, port_key,
};

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

/// `POST /collect/network-device-metrics`.
pub const DEVICE_METRICS: CollectKind = CollectKind {
    name: "network-device-metrics",
    scope: Scope::CollectNetwork,
    text_field: None,
    schema: schema_of::<DeviceMetricsLine>,
    write: write_device_metrics,
    agents: false,
};

/// `POST /collect/network-device-state`.
pub const DEVICE_STATE: CollectKind = CollectKind {
    name: "network-device-state",
    scope: Scope::CollectNetwork,
    text_field: None,
    schema: schema_of::<DeviceStateLine>,
    write: write_device_states,
    agents: false,
};

/// `POST /collect/network-tunnel`.
pub const TUNNEL: CollectKind = CollectKind {
    name: "network-tunnel",
    scope: Scope::CollectNetwork,
    text_field: None,
    schema: schema_of::<TunnelLine>,
    write: write_tunnels,
    agents: false,
};

/// At most this many characters in an interface, link, tunnel, firmware or protocol name.
const LABEL_MAX: usize = 64;
/// At most this many interfaces or WAN links in one state.
const PARTS_MAX: usize = 1000;
/// The bound of rates, byte counts and times.
const COUNT_MAX: f64 = 1e15;
/// A tunnel's traffic is summed over this many milliseconds before its latest observation.
const DAY_MS: i64 = 86_400_000;
/// An hour, in milliseconds.
const HOUR_MS: i64 = 3_600_000;

/// Un échantillon des métriques d'un équipement réseau relevé par le poller du site (SNMP,
/// API de l'équipement), toutes les 5 minutes en général : CPU et mémoire en %, débits
/// entrant et sortant en bit/s, latence en ms, erreurs d'interface comptées depuis
/// l'échantillon précédent. L'équipement doit être connu du compte (`unknown_reference`
/// sinon) : les équipements sont l'inventaire réseau du compte (leur site aussi), jamais
/// créés par la collecte. Pourcentages de 0 à 100, autres mesures positives ou nulles
/// (`invalid_observation`). Un échantillon par équipement et par milliseconde : renvoyé, il
/// remplace le même. Le produit en dérive le point de chaque heure (moyennes, somme des
/// erreurs), recalculé à chaque lot qui apporte un échantillon de l'heure, même en retard.
/// Alimente `/network/devices/{id}/metrics`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = CollectNetworkDeviceMetrics)]
pub struct DeviceMetricsLine {
    pub at: DateTime<Utc>,
    /// Identifiant de l'équipement (celui de `/network/devices`).
    #[schema(example = 1001)]
    pub device: i64,
    pub cpu_pct: f64,
    pub memory_pct: f64,
    pub in_bps: f64,
    pub out_bps: f64,
    pub latency_ms: f64,
    /// Erreurs d'interface depuis l'échantillon précédent.
    pub errors: f64,
}

/// L'état d'un équipement réseau vu par le poller du site : joignable ou non et, joignable,
/// sa durée de fonctionnement, son firmware et l'état de ses interfaces et liens WAN nommés
/// (ceux qui ne sont pas nommés restent comme avant). L'équipement, ses interfaces et ses
/// liens doivent être connus du compte (`unknown_reference` sinon) : ils sont l'inventaire
/// réseau, jamais créés par la collecte. Un équipement injoignable ne dit rien de plus
/// (`invalid_observation` sinon) : il passe `down`, sa durée de fonctionnement à 0, ses
/// interfaces et liens `down` sans trafic. L'état de l'équipement est dérivé, jamais envoyé :
/// `down` injoignable, `degraded` quand une interface est `degraded` ou qu'un lien WAN
/// principal n'est pas `up`, `up` sinon ; `last_seen_at` est le dernier état joignable ; le
/// site est `degraded` dès qu'un de ses équipements n'est pas `up`. Un état plus ancien que
/// le dernier appliqué (en retard, ou renvoyé) est accepté et ne change rien. Alimente
/// `/network/devices`, `/network/devices/{id}` et `/network/sites`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = CollectNetworkDeviceState)]
pub struct DeviceStateLine {
    pub at: DateTime<Utc>,
    /// Identifiant de l'équipement (celui de `/network/devices`).
    #[schema(example = 1001)]
    pub device: i64,
    /// Le poller a joint l'équipement.
    pub reachable: bool,
    #[serde(default)]
    pub uptime_seconds: Option<i64>,
    #[serde(default)]
    #[schema(example = "7.4.4")]
    pub firmware: Option<String>,
    /// 1000 au plus.
    #[serde(default)]
    #[schema(inline)]
    pub interfaces: Vec<InterfaceState>,
    /// 1000 au plus.
    #[serde(default)]
    #[schema(inline)]
    pub wan_links: Vec<WanLinkState>,
}

/// L'état d'une interface (`ifOperStatus`, compteurs).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct InterfaceState {
    #[schema(example = "port1")]
    pub name: String,
    /// `up`, `down` ou `degraded`.
    #[schema(inline)]
    pub status: LinkStatus,
    pub in_bps: u64,
    pub out_bps: u64,
    /// Erreurs des dernières 24 heures, comptées par le poller.
    pub errors_24h: u64,
}

/// L'état d'un lien WAN.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct WanLinkState {
    #[schema(example = "wan1")]
    pub name: String,
    /// `up`, `down` ou `degraded`.
    #[schema(inline)]
    pub status: LinkStatus,
    #[serde(default)]
    pub latency_ms: Option<f64>,
    #[serde(default)]
    pub loss_pct: Option<f64>,
}

/// L'état d'un tunnel VPN inter-sites vu par l'équipement à l'une de ses extrémités
/// (`device`), l'autre étant `peer`, avec le trafic passé depuis l'observation précédente.
/// Les deux équipements doivent être connus du compte (`unknown_reference` sinon ; leurs
/// sites sont les leurs). Le tunnel est celui qui relie les deux équipements, dans un sens ou
/// dans l'autre ; inconnu, il est créé (identifiant suivant du compte, extrémité locale
/// l'équipement qui le signale, nom `<site local>-<site distant>` sauf `name`, protocole
/// `IPsec` sauf `protocol`). Le tunnel prend l'état et la latence de sa dernière
/// observation ; `last_change_at` (le dernier changement d'état) et `established_at` (la
/// dernière remontée, nul quand il est `down`) sont dérivés, comme `bytes_in_24h` et
/// `bytes_out_24h`, sommes du trafic que signale son extrémité locale sur les 24 heures avant
/// sa dernière observation (celui de l'extrémité distante n'est pas compté, pour ne pas
/// compter deux fois). Une observation plus ancienne que la dernière appliquée (en retard, ou
/// renvoyée) ne change que ces sommes ; renvoyée, elle compte une fois. `device` égal à
/// `peer`, latence négative, nom ou protocole vide ou de plus de 64 caractères :
/// `invalid_observation`. Alimente `/network/tunnels`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = CollectNetworkTunnel)]
pub struct TunnelLine {
    pub at: DateTime<Utc>,
    /// L'équipement qui signale le tunnel (celui de `/network/devices`).
    #[schema(example = 1001)]
    pub device: i64,
    /// L'équipement à l'autre extrémité.
    #[schema(example = 1007)]
    pub peer: i64,
    /// `up`, `down` ou `degraded`.
    #[schema(inline)]
    pub status: LinkStatus,
    #[serde(default)]
    pub latency_ms: Option<f64>,
    /// Octets reçus depuis l'observation précédente.
    #[serde(default)]
    pub bytes_in: u64,
    /// Octets émis depuis l'observation précédente.
    #[serde(default)]
    pub bytes_out: u64,
    /// Nom du tunnel à sa création.
    #[serde(default)]
    #[schema(example = "PAR-LYO")]
    pub name: Option<String>,
    /// Protocole du tunnel à sa création.
    #[serde(default)]
    #[schema(example = "IPsec IKEv2")]
    pub protocol: Option<String>,
}

fn write_device_metrics<'a>(batch: &'a Batch<'a>) -> BoxFuture<'a, StoreResult<Vec<LineRefusal>>> {
    Box::pin(device_metrics(batch))
}

fn write_device_states<'a>(batch: &'a Batch<'a>) -> BoxFuture<'a, StoreResult<Vec<LineRefusal>>> {
    Box::pin(device_states(batch))
}

fn write_tunnels<'a>(batch: &'a Batch<'a>) -> BoxFuture<'a, StoreResult<Vec<LineRefusal>>> {
    Box::pin(tunnels(batch))
}

fn data(e: serde_json::Error) -> StoreError {
    StoreError::Data(e.to_string())
}

fn unknown_device(id: i64) -> Msg {
    Msg::new(
        format!("aucun équipement {id} dans ce compte"),
        format!("no device {id} in this account"),
    )
}

/// The time kept in a document's `field` (the devices' `state_at`, the tunnels'
/// `observed_at`): when the state it holds was observed.
fn kept_time(body: &Value, field: &str) -> Option<DateTime<Utc>> {
    body.get(field)
        .and_then(|v| serde_json::from_value(v.clone()).ok())
}

impl DeviceMetricsLine {
    fn bad(&self) -> Option<Msg> {
        bad_measure([
            ("cpu_pct", self.cpu_pct, 100.0),
            ("memory_pct", self.memory_pct, 100.0),
            ("in_bps", self.in_bps, COUNT_MAX),
            ("out_bps", self.out_bps, COUNT_MAX),
            ("latency_ms", self.latency_ms, COUNT_MAX),
            ("errors", self.errors, COUNT_MAX),
        ])
    }
}

async fn device_metrics(batch: &Batch<'_>) -> StoreResult<Vec<LineRefusal>> {
    let mut refused = Vec::new();
    let (lines, _) = batch
        .read_known(
            &mut refused,
            DEVICES,
            (|l: &DeviceMetricsLine| l.at, DeviceMetricsLine::bad),
            |l| key(l.device),
            |l| unknown_device(l.device),
        )
        .await?;
    let mut hours = BTreeSet::new();
    let mut samples = Vec::with_capacity(lines.len());
    for (_, l) in lines {
        let ms = l.at.timestamp_millis();
        hours.insert((l.device, ms - ms.rem_euclid(HOUR_MS)));
        let sample = MetricPoint {
            at: l.at,
            cpu_pct: l.cpu_pct,
            memory_pct: l.memory_pct,
            in_bps: l.in_bps,
            out_bps: l.out_bps,
            latency_ms: l.latency_ms,
            errors: l.errors,
        };
        let record = Record {
            partition: l.device.to_string(),
            ts: ms,
            id: format!("s-{ms}"),
            body: serde_json::to_value(sample).map_err(data)?,
        };
        samples.push((record, ()));
    }
    // The samples first, then each hour they fall in derived again from all of its samples:
    // a batch stopped in between derives its hours when sent again.
    batch
        .store_counted(METRIC_SAMPLES, samples, |_| Vec::new())
        .await?;
    let mut points = Vec::with_capacity(hours.len());
    for (device, hour) in hours {
        let stored = batch
            .stores
            .series
            .read_all(
                batch.tenant,
                METRIC_SAMPLES,
                Some(&device.to_string()),
                hour,
                hour + HOUR_MS,
                &Filter::all(),
            )
            .await?;
        let samples = stored
            .items
            .into_iter()
            .map(|r| serde_json::from_value(r.body))
            .collect::<Result<Vec<MetricPoint>, _>>()
            .map_err(data)?;
        let start = DateTime::from_timestamp_millis(hour).unwrap_or(batch.now);
        if let Some(point) = hour_point(start, &samples) {
            points.push(metric_record(device, &point));
        }
    }
    batch
        .stores
        .series_writes
        .append(batch.tenant, METRICS, points)
        .await
        .map(|()| refused)
}

impl DeviceStateLine {
    fn bad(&self) -> Option<Msg> {
        let invalid = |fr: &str, en: &str| Some(Msg::new(fr.to_owned(), en.to_owned()));
        if !self.reachable
            && (self.uptime_seconds.is_some()
                || !self.interfaces.is_empty()
                || !self.wan_links.is_empty())
        {
            return invalid(
                "reachable : un équipement injoignable ne dit ni durée, ni interfaces, ni liens",
                "reachable: an unreachable device tells no uptime, interfaces or links",
            );
        }
        if self.uptime_seconds.is_some_and(|u| u < 0) {
            return invalid(
                "uptime_seconds : nombre positif attendu",
                "uptime_seconds: a positive number is expected",
            );
        }
        if self.interfaces.len() > PARTS_MAX || self.wan_links.len() > PARTS_MAX {
            return invalid(
                "interfaces, wan_links : 1000 au plus",
                "interfaces, wan_links: 1000 at most",
            );
        }
        let names = self
            .interfaces
            .iter()
            .map(|i| ("interfaces.name", Some(i.name.as_str()), true))
            .chain(
                self.wan_links
                    .iter()
                    .map(|l| ("wan_links.name", Some(l.name.as_str()), true)),
            );
        bad_text(
            LABEL_MAX,
            std::iter::once(("firmware", self.firmware.as_deref(), false)).chain(names),
        )
        .or_else(|| {
            bad_measure(self.wan_links.iter().flat_map(|l| {
                [
                    ("wan_links.latency_ms", l.latency_ms, COUNT_MAX),
                    ("wan_links.loss_pct", l.loss_pct, 100.0),
                ]
                .into_iter()
                .filter_map(|(k, v, max)| Some((k, v?, max)))
            }))
        })
    }

    /// The first interface or link it names that `device` does not have.
    fn unknown_part(&self, device: &DeviceDetail) -> Option<String> {
        self.interfaces
            .iter()
            .map(|i| &i.name)
            .find(|n| !device.interfaces.iter().any(|i| &i.name == *n))
            .or_else(|| {
                self.wan_links
                    .iter()
                    .map(|l| &l.name)
                    .find(|n| !device.wan_links.iter().any(|l| &l.name == *n))
            })
            .cloned()
    }

    /// `device` as this state leaves it, its state derived.
    fn apply(&self, mut d: DeviceDetail) -> DeviceDetail {
        if self.reachable {
            d.device.last_seen_at = d.device.last_seen_at.max(self.at);
            d.device.uptime_seconds = self.uptime_seconds.unwrap_or(d.device.uptime_seconds);
            if let Some(f) = &self.firmware {
                d.device.firmware.clone_from(f);
            }
            for s in &self.interfaces {
                if let Some(i) = d.interfaces.iter_mut().find(|i| i.name == s.name) {
                    (i.status, i.in_bps, i.out_bps, i.errors_24h) =
                        (s.status, s.in_bps, s.out_bps, s.errors_24h);
                }
            }
            for s in &self.wan_links {
                if let Some(l) = d.wan_links.iter_mut().find(|l| l.name == s.name) {
                    (l.status, l.latency_ms, l.loss_pct) = (s.status, s.latency_ms, s.loss_pct);
                }
            }
        } else {
            d.device.uptime_seconds = 0;
            for i in &mut d.interfaces {
                (i.status, i.in_bps, i.out_bps) = (LinkStatus::Down, 0, 0);
            }
            for l in &mut d.wan_links {
                (l.status, l.latency_ms, l.loss_pct) = (LinkStatus::Down, None, None);
            }
        }
        d.device.status = device_status(self.reachable, &d.interfaces, &d.wan_links);
        d
    }
}

async fn device_states(batch: &Batch<'_>) -> StoreResult<Vec<LineRefusal>> {
    let mut refused = Vec::new();
    let (lines, known) = batch
        .read_known(
            &mut refused,
            DEVICES,
            (|l: &DeviceStateLine| l.at, DeviceStateLine::bad),
            |l| key(l.device),
            |l| unknown_device(l.device),
        )
        .await?;
    // Each device's latest state in the batch; the others change nothing.
    let mut latest: BTreeMap<i64, DeviceStateLine> = BTreeMap::new();
    for (line, l) in lines {
        let device: DeviceDetail = known
            .get(&key(l.device))
            .map(|v| serde_json::from_value(v.clone()))
            .transpose()
            .map_err(data)?
            .ok_or_else(|| StoreError::Data("device read, then absent".into()))?;
        if let Some(part) = l.unknown_part(&device) {
            refused.push(LineError::UnknownReference.refuse(
                line,
                Msg::new(
                    format!(
                        "aucune interface ni lien « {part} » sur l'équipement {}",
                        l.device
                    ),
                    format!("no interface or link '{part}' on device {}", l.device),
                ),
            ));
        } else if latest.get(&l.device).is_none_or(|k| k.at < l.at) {
            latest.insert(l.device, l);
        }
    }
    let mut sites = BTreeSet::new();
    for (id, l) in latest {
        let written = batch
            .update_doc(DEVICES, &key(id), |stored| {
                let Some(stored) = stored else {
                    return Ok(None);
                };
                if kept_time(stored, "state_at").is_some_and(|t| t >= l.at) {
                    return Ok(None);
                }
                let device = l.apply(serde_json::from_value(stored.clone()).map_err(data)?);
                let mut body = serde_json::to_value(device).map_err(data)?;
                body["state_at"] = serde_json::to_value(l.at).map_err(data)?;
                Ok(Some(body))
            })
            .await?;
        if let Some(site) = written.and_then(|b| b["site_id"].as_i64()) {
            sites.insert(site);
        }
    }
    for site in sites {
        let devices = batch
            .stores
            .docs
            .read_all(
                batch.tenant,
                DEVICES,
                &Filter::all().and(Pred::Eq("site_id", json!(site))),
            )
            .await?;
        let statuses = devices
            .items
            .into_iter()
            .map(|d| serde_json::from_value::<Device>(d.body).map(|d| d.status))
            .collect::<Result<Vec<_>, _>>()
            .map_err(data)?;
        let status = serde_json::to_value(site_status(statuses)).map_err(data)?;
        batch
            .update_doc(SITES, &key(site), |stored| {
                Ok(stored.filter(|s| s["status"] != status).map(|s| {
                    let mut s = s.clone();
                    s["status"] = status.clone();
                    s
                }))
            })
            .await?;
    }
    Ok(refused)
}

impl TunnelLine {
    fn bad(&self) -> Option<Msg> {
        if self.device == self.peer {
            return Some(Msg::new(
                "peer : un autre équipement que device attendu",
                "peer: another device than device expected",
            ));
        }
        bad_measure(self.latency_ms.map(|v| ("latency_ms", v, COUNT_MAX))).or_else(|| {
            bad_text(
                LABEL_MAX,
                [
                    ("name", self.name.as_deref(), false),
                    ("protocol", self.protocol.as_deref(), false),
                ],
            )
        })
    }
}

/// The tunnel between devices `a` and `b`, in either direction, among `tunnels`.
fn tunnel_between(tunnels: &[Tunnel], a: i64, b: i64) -> Option<&Tunnel> {
    tunnels.iter().find(|t| {
        let ends = (t.local.device_id, t.remote.device_id);
        ends == (a, b) || ends == (b, a)
    })
}

async fn tunnels(batch: &Batch<'_>) -> StoreResult<Vec<LineRefusal>> {
    let mut refused = Vec::new();
    let lines = batch.read_valid(&mut refused, |l: &TunnelLine| l.at, TunnelLine::bad);
    let devices = batch
        .known_docs(
            DEVICES,
            lines
                .iter()
                .flat_map(|(_, l)| [key(l.device), key(l.peer)])
                .collect::<Vec<_>>(),
        )
        .await?;
    let device = |id: i64| -> StoreResult<Option<Device>> {
        devices
            .get(&key(id))
            .map(|v| serde_json::from_value(v.clone()))
            .transpose()
            .map_err(data)
    };
    let all = batch
        .stores
        .docs
        .read_all(batch.tenant, TUNNELS, &Filter::all())
        .await?;
    let mut tunnels = all
        .items
        .iter()
        .map(|d| serde_json::from_value(d.body.clone()))
        .collect::<Result<Vec<Tunnel>, _>>()
        .map_err(data)?;
    let mut observed: HashMap<i64, DateTime<Utc>> = all
        .items
        .iter()
        .filter_map(|d| Some((d.body["id"].as_i64()?, kept_time(&d.body, "observed_at")?)))
        .collect();
    // Each tunnel's lines, oldest first; a tunnel unknown is made from its first line.
    let mut by_tunnel: BTreeMap<i64, Vec<TunnelLine>> = BTreeMap::new();
    let mut lines = lines;
    lines.sort_by_key(|(_, l)| l.at);
    for (line, l) in lines {
        let (Some(local), Some(remote)) = (device(l.device)?, device(l.peer)?) else {
            let id = if devices.contains_key(&key(l.device)) {
                l.peer
            } else {
                l.device
            };
            refused.push(LineError::UnknownReference.refuse(line, unknown_device(id)));
            continue;
        };
        let id = match tunnel_between(&tunnels, l.device, l.peer) {
            Some(t) => t.id,
            None => {
                let id = tunnels.iter().map(|t| t.id).max().unwrap_or(0) + 1;
                let end = |d: &Device| TunnelEnd {
                    site_id: d.site_id,
                    site: d.site.clone(),
                    device_id: d.id,
                    device: d.name.clone(),
                };
                tunnels.push(Tunnel {
                    id,
                    name: l
                        .name
                        .clone()
                        .unwrap_or_else(|| format!("{}-{}", local.site, remote.site)),
                    status: l.status,
                    protocol: l.protocol.clone().unwrap_or_else(|| "IPsec".into()),
                    local: end(&local),
                    remote: end(&remote),
                    established_at: None,
                    last_change_at: l.at,
                    latency_ms: None,
                    bytes_in_24h: 0,
                    bytes_out_24h: 0,
                });
                id
            }
        };
        by_tunnel.entry(id).or_default().push(l);
    }
    for (id, lines) in by_tunnel {
        let Some(tunnel) = tunnels.iter().find(|t| t.id == id) else {
            continue;
        };
        // The local end's traffic first, then the tunnel derived from all it stores.
        let samples = lines
            .iter()
            .filter(|l| l.device == tunnel.local.device_id)
            .map(|l| {
                let ms = l.at.timestamp_millis();
                let record = Record {
                    partition: id.to_string(),
                    ts: ms,
                    id: format!("t-{ms}"),
                    body: json!({"bytes_in": l.bytes_in, "bytes_out": l.bytes_out}),
                };
                (record, ())
            })
            .collect::<Vec<_>>();
        let newest = lines.last().map(|l| l.at).unwrap_or(batch.now);
        let until = observed.remove(&id).map_or(newest, |t| t.max(newest));
        // Traffic over 24 h, summed again when the batch brings the local end's.
        let traffic = if samples.is_empty() {
            None
        } else {
            batch
                .store_counted(TUNNEL_SAMPLES, samples, |_| Vec::new())
                .await?;
            let stored = batch
                .stores
                .series
                .read_all(
                    batch.tenant,
                    TUNNEL_SAMPLES,
                    Some(&id.to_string()),
                    until.timestamp_millis() - DAY_MS + 1,
                    until.timestamp_millis() + 1,
                    &Filter::all(),
                )
                .await?;
            let sum = |field: &str| {
                stored
                    .items
                    .iter()
                    .filter_map(|r| r.body[field].as_u64())
                    .sum::<u64>()
            };
            Some((sum("bytes_in"), sum("bytes_out")))
        };
        batch
            .update_doc(TUNNELS, &key(id), |stored| {
                let (mut t, seen) = match stored {
                    Some(body) => (
                        serde_json::from_value::<Tunnel>(body.clone()).map_err(data)?,
                        kept_time(body, "observed_at"),
                    ),
                    None => (tunnel.clone(), None),
                };
                // Another tunnel under this id (made meanwhile by another batch): the batch
                // is sent again.
                if tunnel_between(
                    std::slice::from_ref(&t),
                    tunnel.local.device_id,
                    tunnel.remote.device_id,
                )
                .is_none()
                {
                    return Err(StoreError::ConditionFailed);
                }
                let seen = seen.or(stored.map(|_| t.last_change_at));
                for l in lines.iter().filter(|l| seen.is_none_or(|s| l.at > s)) {
                    if l.status != t.status {
                        t.last_change_at = l.at;
                    }
                    if l.status == LinkStatus::Down {
                        t.established_at = None;
                    } else if t.established_at.is_none() || t.status == LinkStatus::Down {
                        t.established_at = Some(l.at);
                    }
                    t.status = l.status;
                    t.latency_ms = l.latency_ms.filter(|_| l.status != LinkStatus::Down);
                }
                if let Some(sums) = traffic {
                    (t.bytes_in_24h, t.bytes_out_24h) = sums;
                }
                let mut body = serde_json::to_value(t).map_err(data)?;
                body["observed_at"] = serde_json::to_value(until).map_err(data)?;
                Ok(Some(body))
            })
            .await?;
    }
    Ok(refused)
}
