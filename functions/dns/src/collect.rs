//! How the DNS resolutions the agents report are written (docs/collect.md#dns-resolution):
//! each stored as a resolution of its machine and counted into the top domains' aggregates
//! ([`crate::domains::Queries`]), once however often it is sent.

use chrono::{DateTime, Utc};
use netops_shared::collect::{
    Batch, CollectKind, LineError, content_id, schema_of, unknown_machine,
};
use netops_shared::module::BoxFuture;
use netops_shared::store::{LineRefusal, Record, StoreError, StoreResult};
use netops_shared::{Msg, Scope};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::domains::Queries;
use crate::model::{RESOLUTIONS, Resolution};

/// `POST /collect/dns-resolution`.
pub const RESOLUTION: CollectKind = CollectKind {
    name: "dns-resolution",
    scope: Scope::CollectDns,
    text_field: None,
    schema: schema_of::<ResolutionLine>,
    write: write_resolutions,
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
/// être connue du compte (ses battements de cœur et son inventaire la créent) : une résolution
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
            refused.push(unknown_machine(line, &l.machine));
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
}
