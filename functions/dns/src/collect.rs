//! How the DNS resolutions the agents report are written (docs/collect.md#dns-resolution):
//! each stored as a resolution of its machine and counted into the top domains' aggregates
//! ([`crate::domains::Queries`]), once however often it is sent.

use std::collections::{BTreeSet, HashMap};

use chrono::{DateTime, Utc};
use netops_shared::collect::{Batch, CollectKind, LineError, bad_text, content_id, schema_of};
use netops_shared::module::BoxFuture;
use netops_shared::store::daily::DAY_MS;
use netops_shared::store::{Filter, LineRefusal, Record, StoreError, StoreResult};
use netops_shared::{Msg, Scope};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::domains::Queries;
use crate::model::{
    COLLECTION, Collection, DnsThreat, RESOLUTIONS, Resolution, SERVER_QUERIES, ServerQuery,
    THREATS,
};
use crate::threats::{self, suspicion};

/// `POST /collect/dns-resolution`.
pub const RESOLUTION: CollectKind = CollectKind {
    name: "dns-resolution",
    scope: Scope::CollectDns,
    text_field: None,
    schema: schema_of::<ResolutionLine>,
    write: write_resolutions,
    agents: true,
};

/// `POST /collect/dns-server-query`.
pub const SERVER_QUERY: CollectKind = CollectKind {
    name: "dns-server-query",
    scope: Scope::CollectDns,
    text_field: None,
    schema: schema_of::<ServerQueryLine>,
    write: write_server_queries,
    agents: false,
};

/// Type d'enregistrement demandé.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "UPPERCASE")]
#[schema(as = CollectDnsQueryType)]
pub enum QueryType {
    A,
    Aaaa,
    Cname,
    Mx,
    Txt,
    Srv,
    Ptr,
}

/// Code de réponse du résolveur.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "UPPERCASE")]
#[schema(as = CollectDnsResponseCode)]
pub enum ResponseCode {
    Noerror,
    Nxdomain,
    Servfail,
    Refused,
}

impl QueryType {
    fn as_str(self) -> &'static str {
        match self {
            QueryType::A => "A",
            QueryType::Aaaa => "AAAA",
            QueryType::Cname => "CNAME",
            QueryType::Mx => "MX",
            QueryType::Txt => "TXT",
            QueryType::Srv => "SRV",
            QueryType::Ptr => "PTR",
        }
    }
}

impl ResponseCode {
    fn as_str(self) -> &'static str {
        match self {
            ResponseCode::Noerror => "NOERROR",
            ResponseCode::Nxdomain => "NXDOMAIN",
            ResponseCode::Servfail => "SERVFAIL",
            ResponseCode::Refused => "REFUSED",
        }
    }
}

/// Une résolution DNS faite par une machine, telle que son agent l'a vue. La machine doit
/// être connue du compte (ses battements de cœur la créent) : une résolution
/// d'une machine inconnue est refusée (`unknown_reference`). Alimente `/dns/resolutions` et
/// les domaines les plus demandés (`/dns/top-domains`, par compte et par machine) et les
/// menaces (`/dns/threats`), dérivées, jamais envoyées : une menace est une machine, une
/// règle et un jour UTC, ouverte quand les résolutions de la machine retenues par la règle ce
/// jour-là atteignent son seuil. Règles : un domaine listé (le nom ou l'un de ses
/// sous-domaines ; catégorie, gravité et source de la liste), seuil 1 ; un tunnel DNS
/// (étiquette de 40 caractères ou plus, ou nom de plus de 120), compté par domaine
/// enregistré (ses deux dernières étiquettes), seuil 10, gravité `high` ; un DGA (NXDOMAIN
/// pour un nom dont l'étiquette de second niveau a 12 caractères ou plus et une entropie
/// d'au moins 3,7 bits par caractère), seuil 5, gravité `high`, le domaine de la menace
/// étant le nom le plus demandé. `queries` compte les résolutions retenues du jour,
/// `first_seen_at`/`last_seen_at` la première et la dernière ; l'adresse, l'utilisateur et
/// `blocked` (réponse d'un puits : `0.0.0.0`, `::`, `127.0.0.1`, `::1`, ou `REFUSED`) sont
/// ceux de la dernière. Refaite à partir des résolutions stockées : renvoyée, une résolution
/// ne change rien ; en retard, elle réévalue son jour. Une menace garde son acquittement.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = CollectDnsResolution)]
pub struct ResolutionLine {
    pub at: DateTime<Utc>,
    /// Nom d'hôte de la machine.
    #[schema(example = "PAR-LT-0004")]
    pub machine: String,
    /// Adresse de la machine ; par défaut, celle de `/machines`.
    #[serde(default)]
    pub machine_ip: Option<String>,
    /// Utilisateur de la session, s'il est connu.
    #[serde(default)]
    pub user: Option<String>,
    /// Processus demandeur, s'il est connu.
    #[serde(default)]
    pub process: Option<String>,
    /// Le nom demandé (mis en minuscules, sans point final).
    #[schema(example = "login.microsoftonline.com")]
    pub domain: String,
    // Inline: a kind's schema is one component of its own, with no reference to others.
    #[schema(inline)]
    pub query_type: QueryType,
    #[schema(inline)]
    pub response_code: ResponseCode,
    #[serde(default)]
    pub answers: Vec<String>,
    /// Le serveur qui a répondu.
    #[schema(example = "10.10.0.53")]
    pub resolver: String,
    pub latency_ms: f64,
}

/// Une requête journalisée par un serveur DNS du compte (journal analytique de Windows DNS,
/// `dnstap`, journal de requêtes de BIND ou d'Unbound). Un serveur que le compte ne connaît
/// pas encore rejoint la collecte (`meta.servers` de `/dns/server-queries`, active dès la
/// première requête reçue). `suspicious` et `reason` sont dérivés, jamais envoyés :
/// `tunneling` pour une étiquette de 40 caractères ou plus ou un nom de plus de 120,
/// `dga` pour un nom dont l'étiquette de second niveau a 12 caractères ou plus et une
/// entropie d'au moins 3,7 bits par caractère ; les listes de domaines malveillants ou
/// récemment enregistrés ne sont pas encore rapprochées. Enregistrée une fois sous un
/// identifiant fait de son contenu. Alimente `/dns/server-queries`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = CollectDnsServerQuery)]
pub struct ServerQueryLine {
    pub at: DateTime<Utc>,
    /// Le serveur DNS qui a journalisé la requête.
    #[schema(example = "PAR-SRV-0001")]
    pub server: String,
    #[schema(example = "10.10.30.11")]
    pub client_ip: String,
    /// Nom de la machine cliente, quand le serveur le connaît.
    #[serde(default)]
    pub client: Option<String>,
    #[schema(example = "login.microsoftonline.com")]
    pub domain: String,
    #[schema(inline)]
    pub query_type: QueryType,
    #[schema(inline)]
    pub response_code: ResponseCode,
}

fn write_server_queries<'a>(batch: &'a Batch<'a>) -> BoxFuture<'a, StoreResult<Vec<LineRefusal>>> {
    Box::pin(write_server_query_lines(batch))
}

async fn write_server_query_lines(batch: &Batch<'_>) -> StoreResult<Vec<LineRefusal>> {
    let mut refused = Vec::new();
    let mut events = Vec::new();
    let mut servers = std::collections::BTreeSet::new();
    for (line, l) in batch.read::<ServerQueryLine>(&mut refused) {
        let names = [
            ("server", Some(l.server.as_str()), true),
            ("client", l.client.as_deref(), false),
        ];
        let why = bad_text(253, names).or_else(|| {
            l.client_ip.parse::<std::net::IpAddr>().is_err().then(|| {
                Msg::new(
                    "client_ip : adresse IP invalide",
                    "client_ip: invalid IP address",
                )
            })
        });
        let domain = domain_name(&l.domain);
        let (Some(domain), None) = (&domain, &why) else {
            let why = why.unwrap_or_else(|| {
                Msg::new(
                    "domain : nom de domaine invalide",
                    "domain: invalid domain name",
                )
            });
            refused.push(LineError::InvalidObservation.refuse(line, why));
            continue;
        };
        if let Err(r) = batch.check_time(line, l.at) {
            refused.push(r);
            continue;
        }
        let reason = suspicion(domain);
        let query = ServerQuery {
            id: String::new(),
            at: l.at,
            server: l.server.clone(),
            client_ip: l.client_ip,
            client: l.client,
            domain: domain.clone(),
            query_type: l.query_type.as_str().to_owned(),
            response_code: l.response_code.as_str().to_owned(),
            suspicious: reason.is_some(),
            reason,
        };
        let body = serde_json::to_value(&query).map_err(|e| StoreError::Data(e.to_string()))?;
        servers.insert(l.server);
        events.push((query.server, l.at, body));
    }
    // The servers join the collection first: a batch stopped after, sent again, finds them.
    let first = events.iter().map(|(_, at, _)| *at).min();
    if let Some(first) = first {
        batch
            .update_doc(COLLECTION, "servers", |stored| {
                let mut c: Collection = stored
                    .and_then(|b| serde_json::from_value(b.clone()).ok())
                    .unwrap_or(Collection {
                        active: false,
                        servers: Vec::new(),
                        since: None,
                    });
                let before = (c.active, c.servers.len());
                c.servers.extend(
                    servers
                        .iter()
                        .filter(|s| !c.servers.contains(s))
                        .cloned()
                        .collect::<Vec<_>>(),
                );
                c.servers.sort();
                c.active = true;
                c.since = Some(c.since.map_or(first, |s| s.min(first)));
                if before == (true, c.servers.len()) {
                    return Ok(None);
                }
                serde_json::to_value(c)
                    .map(Some)
                    .map_err(|e| StoreError::Data(e.to_string()))
            })
            .await?;
    }
    batch.store_events(SERVER_QUERIES, "dq", events).await?;
    Ok(refused)
}

fn write_resolutions<'a>(batch: &'a Batch<'a>) -> BoxFuture<'a, StoreResult<Vec<LineRefusal>>> {
    Box::pin(write(batch))
}

/// A domain as stored: lower case, without its final dot; `None` when it is no name.
fn domain_name(raw: &str) -> Option<String> {
    let d = raw.trim().trim_end_matches('.').to_ascii_lowercase();
    let valid = !d.is_empty()
        && d.len() <= 253
        && d.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        });
    valid.then_some(d)
}

/// What a resolution adds to the top domains.
struct Counted {
    at: DateTime<Utc>,
    machine: String,
    domain: String,
    code: String,
}

async fn write(batch: &Batch<'_>) -> StoreResult<Vec<LineRefusal>> {
    let mut refused = Vec::new();
    let lines = batch.read::<ResolutionLine>(&mut refused);
    let machines = batch
        .known_machines(lines.iter().map(|(_, l)| l.machine.as_str()))
        .await?;
    let mut records: Vec<(Record, Counted)> = Vec::new();
    let mut hits = Vec::new();
    for (line, l) in lines {
        let Some(machine) = machines.get(&l.machine) else {
            refused.push(batch.unknown_machine(line, &l.machine));
            continue;
        };
        let Some(domain) = domain_name(&l.domain) else {
            refused.push(LineError::InvalidObservation.refuse(
                line,
                Msg::new(
                    "domain : nom de domaine invalide",
                    "domain: invalid domain name",
                ),
            ));
            continue;
        };
        if !(l.latency_ms.is_finite() && l.latency_ms >= 0.0) {
            refused.push(LineError::InvalidObservation.refuse(
                line,
                Msg::new(
                    "latency_ms : nombre positif attendu",
                    "latency_ms: a positive number is expected",
                ),
            ));
            continue;
        }
        if let Err(r) = batch.check_time(line, l.at) {
            refused.push(r);
            continue;
        }
        let machine_ip = l
            .machine_ip
            .clone()
            .unwrap_or_else(|| machine["ip"].as_str().unwrap_or_default().to_owned());
        let mut resolution = Resolution {
            id: String::new(),
            at: l.at,
            machine: l.machine,
            machine_ip,
            user: l.user,
            process: l.process,
            domain,
            query_type: l.query_type.as_str().to_owned(),
            response_code: l.response_code.as_str().to_owned(),
            answers: l.answers,
            resolver: l.resolver,
            latency_ms: l.latency_ms,
        };
        // Its id: its time and a digest of what it says, so that it is stored once however
        // often it is sent.
        let body =
            serde_json::to_value(&resolution).map_err(|e| StoreError::Data(e.to_string()))?;
        resolution.id = content_id("dns", l.at, &body)?;
        if let Some(hit) = threats::hit(&resolution) {
            hits.push(threats::hit_record(&hit, &resolution.id)?);
        }
        let counted = Counted {
            at: l.at,
            machine: resolution.machine.clone(),
            domain: resolution.domain.clone(),
            code: resolution.response_code.clone(),
        };
        records.push((
            Record {
                partition: resolution.machine.clone(),
                ts: l.at.timestamp_millis(),
                id: resolution.id.clone(),
                body: serde_json::to_value(&resolution)
                    .map_err(|e| StoreError::Data(e.to_string()))?,
            },
            counted,
        ));
    }
    batch
        .store_counted(RESOLUTIONS, records, |new| {
            let mut queries = Queries::default();
            for c in new {
                queries.add(c.at, &c.machine, &c.domain, &c.code, 1.0);
            }
            queries.series()
        })
        .await?;
    derive_threats(batch, hits).await?;
    Ok(refused)
}

/// Stores the batch's `hits` (each under its resolution's id: sent again, it replaces itself)
/// and derives again the threats of each machine, key and day they fall in, from all the
/// hits stored for it ([`threats::threats`]). A threat keeps its acknowledgement; one that
/// did not change is not written.
async fn derive_threats(batch: &Batch<'_>, hits: Vec<Record>) -> StoreResult<()> {
    if hits.is_empty() {
        return Ok(());
    }
    let touched: BTreeSet<(String, i64)> = hits
        .iter()
        .map(|r| (r.partition.clone(), r.ts.div_euclid(DAY_MS) * DAY_MS))
        .collect();
    batch
        .stores
        .series_writes
        .append(batch.tenant, threats::HITS, hits)
        .await?;
    let mut all = Vec::new();
    for (partition, day) in &touched {
        let stored = batch
            .stores
            .series
            .read_all(
                batch.tenant,
                threats::HITS,
                Some(partition),
                *day,
                day + DAY_MS,
                &Filter::all(),
            )
            .await?;
        for r in stored.items {
            all.push(serde_json::from_value::<threats::Hit>(r.body).map_err(data)?);
        }
    }
    let derived = threats::threats(&all)?;
    let days: BTreeSet<i64> = touched.iter().map(|(_, day)| *day).collect();
    let mut known: HashMap<String, DnsThreat> = HashMap::new();
    for day in days {
        let stored = batch
            .stores
            .series
            .read_all(
                batch.tenant,
                THREATS,
                Some("all"),
                day,
                day + 1,
                &Filter::all(),
            )
            .await?;
        for r in stored.items {
            known.insert(r.id, serde_json::from_value(r.body).map_err(data)?);
        }
    }
    let mut records = Vec::new();
    for mut threat in derived {
        if let Some(before) = known.get(&threat.id) {
            threat.acknowledged = before.acknowledged;
            threat.acknowledged_at = before.acknowledged_at;
            if serde_json::to_value(before).ok() == serde_json::to_value(&threat).ok() {
                continue;
            }
        }
        records.push(threats::threat_record(&threat)?);
    }
    if records.is_empty() {
        return Ok(());
    }
    batch
        .stores
        .series_writes
        .append(batch.tenant, THREATS, records)
        .await
}

fn data(e: serde_json::Error) -> StoreError {
    StoreError::Data(e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn domains_are_stored_in_lower_case_without_their_final_dot() {
        assert_eq!(
            domain_name(" Login.MicrosoftOnline.com. ").as_deref(),
            Some("login.microsoftonline.com")
        );
        assert_eq!(
            domain_name("_ldap._tcp.dc.acme.local").as_deref(),
            Some("_ldap._tcp.dc.acme.local")
        );
        for bad in ["", ".", "a..b", "exa mple.com", &"a".repeat(64)] {
            assert_eq!(domain_name(bad), None, "{bad}");
        }
    }
}
