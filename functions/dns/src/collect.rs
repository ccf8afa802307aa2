//! How the DNS resolutions the agents report are written (docs/collect.md#dns-resolution):
//! each stored as a resolution of its machine and counted into the top domains' aggregates
//! ([`crate::domains::Queries`]), once however often it is sent.

use chrono::{DateTime, Utc};
use netops_shared::collect::{Batch, CollectKind, LineError, bad_text, content_id, schema_of};
use netops_shared::module::BoxFuture;
use netops_shared::store::{LineRefusal, Record, StoreError, StoreResult};
use netops_shared::{Msg, Scope};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::domains::Queries;
use crate::model::{
    COLLECTION, Collection, RESOLUTIONS, Resolution, SERVER_QUERIES, ServerQuery, SuspicionReason,
};

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
/// les domaines les plus demandés (`/dns/top-domains`, par compte et par machine) ; les
/// menaces DNS ne sont pas encore dérivées des résolutions collectées.
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

/// Why a queried name is suspicious, from the name alone: `tunneling` (data in its labels),
/// `dga` (a generated second-level label), or none.
fn suspicion(domain: &str) -> Option<SuspicionReason> {
    if domain.len() > 120 || domain.split('.').any(|l| l.len() >= 40) {
        return Some(SuspicionReason::Tunneling);
    }
    let labels: Vec<&str> = domain.split('.').collect();
    let second = labels.len().checked_sub(2).map(|i| labels[i])?;
    (second.len() >= 12 && entropy(second) >= 3.7).then_some(SuspicionReason::Dga)
}

/// The Shannon entropy of `s`'s characters, in bits per character.
fn entropy(s: &str) -> f64 {
    let mut counts = std::collections::HashMap::new();
    for c in s.chars() {
        *counts.entry(c).or_insert(0u32) += 1;
    }
    let n = s.chars().count() as f64;
    counts
        .values()
        .map(|&k| {
            let p = f64::from(k) / n;
            -p * p.log2()
        })
        .sum()
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
    Ok(refused)
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

    #[test]
    fn names_carrying_data_or_generated_are_suspicious() {
        assert_eq!(suspicion("login.microsoftonline.com"), None);
        assert_eq!(suspicion("www.google.com"), None);
        assert_eq!(
            suspicion(&format!("{}.t.example.net", "a1b2c3d4e5".repeat(5))),
            Some(SuspicionReason::Tunneling)
        );
        assert_eq!(
            suspicion("xkq7vz3mpw9tb2hr.com"),
            Some(SuspicionReason::Dga)
        );
        assert_eq!(suspicion("localhost"), None);
    }
}
