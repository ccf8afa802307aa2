//! How the domain controllers' events are written (docs/collect.md#directory-logon): directory
//! logons, lockouts and account changes, each stored once under an id made of its content.
//! Their result and action are derived from the event id, never sent. They and the SIEM's
//! events (`siem-event`) feed the detection rules ([`crate::derive`]), which open the
//! incidents.

use chrono::{DateTime, Utc};
use netops_shared::collect::{Batch, CollectKind, LineError, bad_text, schema_of};
use netops_shared::module::BoxFuture;
use netops_shared::store::{LineRefusal, StoreResult};
use netops_shared::{Msg, Scope};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use crate::derive::{SiemEvent, correlate, service_name};
use crate::model::{
    AccountChange, CHANGES, ChangeType, LOCKOUTS, LOGONS, Lockout, LockoutAction, Logon,
    LogonResult,
};

/// `POST /collect/directory-logon`.
pub const LOGON: CollectKind = CollectKind {
    name: "directory-logon",
    scope: Scope::CollectSecurity,
    text_field: None,
    schema: schema_of::<LogonLine>,
    write: write_logons,
    agents: false,
};

/// `POST /collect/account-lockout`.
pub const LOCKOUT: CollectKind = CollectKind {
    name: "account-lockout",
    scope: Scope::CollectSecurity,
    text_field: None,
    schema: schema_of::<LockoutLine>,
    write: write_lockouts,
    agents: false,
};

/// `POST /collect/account-change`.
pub const CHANGE: CollectKind = CollectKind {
    name: "account-change",
    scope: Scope::CollectSecurity,
    text_field: None,
    schema: schema_of::<ChangeLine>,
    write: write_changes,
    agents: false,
};

/// `POST /collect/siem-event`.
pub const SIEM_EVENT: CollectKind = CollectKind {
    name: "siem-event",
    scope: Scope::CollectSecurity,
    text_field: None,
    schema: schema_of::<SiemEventLine>,
    write: write_siem_events,
    agents: false,
};

/// At most this many characters in a text field.
const TEXT_MAX: usize = 500;

/// Une connexion à l'annuaire (événements 4624 et 4625 d'un contrôleur de domaine). Les
/// comptes et machines qu'elle nomme sont ceux de l'annuaire, dont le compte ne tient pas la
/// liste : rien n'est refusé comme inconnu, rien n'est créé. Le résultat (`success` pour
/// 4624, `failure` pour 4625) est dérivé de `event_id`, jamais envoyé ; `failure_reason`
/// n'est admis que pour 4625. Enregistrée une fois sous un identifiant fait de son contenu.
/// Alimente `/security/logons`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = CollectDirectoryLogon)]
pub struct LogonLine {
    pub at: DateTime<Utc>,
    /// 4624 (succès) ou 4625 (échec).
    #[schema(example = 4624)]
    pub event_id: u32,
    #[schema(example = "julie.martin")]
    pub user: String,
    #[schema(example = "ACME")]
    pub domain: String,
    /// Type de connexion Windows (2, 3, 5, 7, 10, 11...).
    pub logon_type: u32,
    #[serde(default)]
    pub source_host: Option<String>,
    #[schema(example = "10.10.30.11")]
    pub source_ip: String,
    #[schema(example = "PAR-SRV-0002")]
    pub target_host: String,
    #[schema(example = "Kerberos")]
    pub auth_package: String,
    /// Pour un échec : le code NTSTATUS et son sens.
    #[serde(default)]
    pub failure_reason: Option<String>,
    /// Contrôleur de domaine qui a enregistré l'événement.
    pub dc: String,
}

/// Un verrouillage (4740) ou déverrouillage (4767) de compte, d'un contrôleur de domaine.
/// L'action (`locked`, `unlocked`) est dérivée de `event_id`. Rien n'est refusé comme
/// inconnu, rien n'est créé ; enregistré une fois sous un identifiant fait de son contenu.
/// Alimente `/security/lockouts`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = CollectAccountLockout)]
pub struct LockoutLine {
    pub at: DateTime<Utc>,
    /// 4740 (verrouillé) ou 4767 (déverrouillé).
    #[schema(example = 4740)]
    pub event_id: u32,
    pub user: String,
    /// Machine d'où venaient les échecs (4740).
    #[serde(default)]
    pub caller_host: Option<String>,
    /// Qui a déverrouillé le compte (4767).
    #[serde(default)]
    pub author: Option<String>,
    pub dc: String,
}

/// Une modification de compte, de groupe, d'ordinateur, de stratégie ou d'objet de
/// l'annuaire (famille 47xx, 5136 à 5141). Rien n'est refusé comme inconnu, rien n'est créé ;
/// enregistrée une fois sous un identifiant fait de son contenu. Alimente
/// `/security/account-changes`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = CollectAccountChange)]
pub struct ChangeLine {
    pub at: DateTime<Utc>,
    /// 4700 à 4799, ou 5136 à 5141.
    #[schema(example = 4728)]
    pub event_id: u32,
    #[serde(rename = "type")]
    #[schema(inline)]
    pub kind: ChangeType,
    #[schema(example = "member_added")]
    pub action: String,
    /// Compte auteur de la modification.
    pub author: String,
    #[serde(default)]
    pub target: Option<String>,
    #[serde(default)]
    pub object: Option<String>,
    #[serde(default)]
    pub details: String,
    pub dc: String,
}

/// Un événement du journal de sécurité Windows d'une machine (contrôleur de domaine,
/// serveur, poste), tel qu'un SIEM ou un transitaire le relaie, pour les règles de détection
/// globales (`/security/rules`) : il n'est pas listé lui-même, mais les règles l'évaluent et
/// ouvrent les incidents (`/security/incidents`, les alertes `siem-<id>` de `/alerts`) avec
/// leurs événements corrélés. Les connexions (`directory-logon`), verrouillages
/// (`account-lockout`) et modifications (`account-change`) collectés alimentent les mêmes
/// règles : un même événement envoyé par deux types, avec les mêmes champs, compte une fois.
/// Chaque règle compte son seuil dans sa fenêtre (le premier et le dernier événement au plus
/// à la durée de la fenêtre l'un de l'autre), par compte (gl-001, gl-003, gl-004, gl-006,
/// gl-007), par source en comptes distincts (gl-002 : `source_ip`, sinon `source_host`), par
/// auteur (gl-008 : `subject`) ou par machine (gl-005 : `host`). Les événements d'une règle
/// et d'une clé espacés de moins d'une fenêtre forment une suite ; une suite qui atteint le
/// seuil est un épisode, dont l'incident réunit tous les événements ; un épisode qui recouvre
/// (à une fenêtre près) celui d'un incident déjà ouvert complète cet incident au lieu d'en
/// ouvrir un autre. Tout est recalculé à partir des événements enregistrés : le même lot
/// renvoyé n'ouvre rien deux fois, un événement en retard réévalue sa fenêtre. Un incident
/// garde son statut et ses actions (un acquittement par `POST /alerts/{id}/ack`, une
/// résolution) quand des événements arrivent ensuite : seuls ses comptes, machines,
/// adresses et son nombre d'événements suivent. Hors heures (gl-007) : de 20 h à 6 h UTC ou
/// le week-end. Les règles propres au compte ne sont pas évaluées.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = CollectSiemEvent)]
pub struct SiemEventLine {
    pub at: DateTime<Utc>,
    /// Numéro de l'événement Windows (4625, 4740, 4728, 5141...), de 1 à 65535.
    #[schema(example = 4625, minimum = 1, maximum = 65535)]
    pub event_id: u32,
    /// Machine que l'événement concerne : la cible d'une connexion, la machine dont la
    /// stratégie change, le contrôleur qui enregistre une modification.
    #[schema(example = "PAR-DC-01")]
    pub host: String,
    /// Compte concerné : connecté, verrouillé, ajouté au groupe, créé.
    #[serde(default)]
    #[schema(example = "julie.martin")]
    pub account: Option<String>,
    /// Compte auteur d'une modification (4728, 4720, 5141...).
    #[serde(default)]
    pub subject: Option<String>,
    /// Adresse d'origine (IP, ou `-`).
    #[serde(default)]
    #[schema(example = "203.0.113.9")]
    pub source_ip: Option<String>,
    #[serde(default)]
    pub source_host: Option<String>,
    /// Type de connexion Windows (0 à 13) des événements 4624 et 4625.
    #[serde(default)]
    #[schema(minimum = 0, maximum = 13)]
    pub logon_type: Option<u32>,
    /// Groupe d'un ajout (4728, 4732, 4756), nom ou nom distinctif.
    #[serde(default)]
    #[schema(example = "Admins du domaine")]
    pub group: Option<String>,
    /// Le compte est membre d'un groupe d'administration (enrichissement du transitaire,
    /// `adminCount`) : ce que la règle gl-003 lit. Faux par défaut.
    #[serde(default)]
    pub privileged: bool,
    /// Le compte est un compte de service (règle gl-006). Par défaut : son nom commence par
    /// `svc-`, `svc_` ou `svc.`.
    #[serde(default)]
    pub service_account: Option<bool>,
}

fn write_siem_events<'a>(batch: &'a Batch<'a>) -> BoxFuture<'a, StoreResult<Vec<LineRefusal>>> {
    // Nothing of its own is kept: no series.
    Box::pin(write(batch, "", "", siem_event))
}

fn siem_event(l: SiemEventLine) -> Stored {
    if !(1..=65535).contains(&l.event_id) {
        return Err(invalid("event_id", "de 1 à 65535", "1 to 65535"));
    }
    if l.logon_type.is_some_and(|t| t > 13) {
        return Err(invalid("logon_type", "de 0 à 13", "0 to 13"));
    }
    source_ip_ok(l.source_ip.as_deref().unwrap_or("-"))?;
    if let Some(why) = bad_text(
        TEXT_MAX,
        [
            ("host", Some(l.host.as_str()), true),
            ("account", l.account.as_deref(), false),
            ("subject", l.subject.as_deref(), false),
            ("source_host", l.source_host.as_deref(), false),
            ("group", l.group.as_deref(), false),
        ],
    ) {
        return Err(why);
    }
    let service_account = l
        .service_account
        .unwrap_or_else(|| l.account.as_deref().is_some_and(service_name));
    let event = SiemEvent {
        at: l.at,
        event_id: l.event_id,
        account: l.account,
        subject: l.subject,
        host: Some(l.host),
        source_ip: l.source_ip,
        source_host: l.source_host,
        logon_type: l.logon_type,
        group: l.group,
        privileged: l.privileged,
        service_account,
    };
    Ok((None, event))
}

fn source_ip_ok(ip: &str) -> Result<(), Msg> {
    if ip.parse::<std::net::IpAddr>().is_err() && ip != "-" {
        return Err(invalid(
            "source_ip",
            "adresse IP invalide",
            "invalid IP address",
        ));
    }
    Ok(())
}

fn write_logons<'a>(batch: &'a Batch<'a>) -> BoxFuture<'a, StoreResult<Vec<LineRefusal>>> {
    Box::pin(write(batch, LOGONS, "lg", logon))
}

fn write_lockouts<'a>(batch: &'a Batch<'a>) -> BoxFuture<'a, StoreResult<Vec<LineRefusal>>> {
    Box::pin(write(batch, LOCKOUTS, "lk", lockout))
}

fn write_changes<'a>(batch: &'a Batch<'a>) -> BoxFuture<'a, StoreResult<Vec<LineRefusal>>> {
    Box::pin(write(batch, CHANGES, "ch", change))
}

/// What a line becomes: its partition and stored body (none for a `siem-event`) and the
/// event the rules read (its time the line's), or why it is refused.
type Stored = Result<(Option<(String, Value)>, SiemEvent), Msg>;

fn invalid(field: &str, fr: &str, en: &str) -> Msg {
    Msg::new(format!("{field} : {fr}"), format!("{field}: {en}"))
}

fn body(v: impl Serialize) -> Result<Value, Msg> {
    serde_json::to_value(v).map_err(|e| Msg::new(e.to_string(), e.to_string()))
}

fn logon(l: LogonLine) -> Stored {
    let result = match l.event_id {
        4624 => LogonResult::Success,
        4625 => LogonResult::Failure,
        _ => {
            return Err(invalid(
                "event_id",
                "4624 ou 4625 attendu",
                "4624 or 4625 expected",
            ));
        }
    };
    if result == LogonResult::Success && l.failure_reason.is_some() {
        return Err(invalid(
            "failure_reason",
            "admis pour 4625 seulement",
            "only admitted for 4625",
        ));
    }
    source_ip_ok(&l.source_ip)?;
    if let Some(why) = bad_text(
        TEXT_MAX,
        [
            ("user", Some(l.user.as_str()), true),
            ("domain", Some(l.domain.as_str()), true),
            ("target_host", Some(l.target_host.as_str()), true),
            ("auth_package", Some(l.auth_package.as_str()), true),
            ("dc", Some(l.dc.as_str()), true),
            ("source_host", l.source_host.as_deref(), false),
            ("failure_reason", l.failure_reason.as_deref(), false),
        ],
    ) {
        return Err(why);
    }
    let partition = l.target_host.clone();
    let event = SiemEvent {
        at: l.at,
        event_id: l.event_id,
        account: Some(l.user.clone()),
        subject: None,
        host: Some(l.target_host.clone()),
        source_ip: Some(l.source_ip.clone()),
        source_host: l.source_host.clone(),
        logon_type: Some(l.logon_type),
        group: None,
        privileged: false,
        service_account: service_name(&l.user),
    };
    let logon = Logon {
        id: String::new(),
        ts: l.at,
        event_id: l.event_id,
        result,
        user: l.user,
        domain: l.domain,
        logon_type: l.logon_type,
        source_host: l.source_host,
        source_ip: l.source_ip,
        target_host: l.target_host,
        auth_package: l.auth_package,
        failure_reason: l.failure_reason,
        dc: l.dc,
    };
    Ok((Some((partition, body(logon)?)), event))
}

fn lockout(l: LockoutLine) -> Stored {
    let action = match l.event_id {
        4740 => LockoutAction::Locked,
        4767 => LockoutAction::Unlocked,
        _ => {
            return Err(invalid(
                "event_id",
                "4740 ou 4767 attendu",
                "4740 or 4767 expected",
            ));
        }
    };
    if let Some(why) = bad_text(
        TEXT_MAX,
        [
            ("user", Some(l.user.as_str()), true),
            ("dc", Some(l.dc.as_str()), true),
            ("caller_host", l.caller_host.as_deref(), false),
            ("author", l.author.as_deref(), false),
        ],
    ) {
        return Err(why);
    }
    let partition = l.user.clone();
    let event = SiemEvent {
        at: l.at,
        event_id: l.event_id,
        account: Some(l.user.clone()),
        subject: l.author.clone(),
        host: Some(l.dc.clone()),
        source_ip: None,
        source_host: l.caller_host.clone(),
        logon_type: None,
        group: None,
        privileged: false,
        service_account: service_name(&l.user),
    };
    let lockout = Lockout {
        id: String::new(),
        ts: l.at,
        event_id: l.event_id,
        action,
        user: l.user,
        caller_host: l.caller_host,
        author: l.author,
        dc: l.dc,
    };
    Ok((Some((partition, body(lockout)?)), event))
}

fn change(l: ChangeLine) -> Stored {
    if !matches!(l.event_id, 4700..=4799 | 5136..=5141) {
        return Err(invalid(
            "event_id",
            "4700 à 4799 ou 5136 à 5141 attendu",
            "4700 to 4799 or 5136 to 5141 expected",
        ));
    }
    if let Some(why) = bad_text(
        TEXT_MAX,
        [
            ("action", Some(l.action.as_str()), true),
            ("author", Some(l.author.as_str()), true),
            ("dc", Some(l.dc.as_str()), true),
            (
                "details",
                (!l.details.is_empty()).then_some(l.details.as_str()),
                false,
            ),
            ("target", l.target.as_deref(), false),
            ("object", l.object.as_deref(), false),
        ],
    ) {
        return Err(why);
    }
    let event = SiemEvent {
        at: l.at,
        event_id: l.event_id,
        account: l.target.clone(),
        subject: Some(l.author.clone()),
        host: Some(l.dc.clone()),
        source_ip: None,
        source_host: None,
        logon_type: None,
        group: l.object.clone(),
        privileged: false,
        service_account: l.target.as_deref().is_some_and(service_name),
    };
    let change = AccountChange {
        id: String::new(),
        ts: l.at,
        event_id: l.event_id,
        kind: l.kind,
        action: l.action,
        author: l.author,
        target: l.target,
        object: l.object,
        details: l.details,
        dc: l.dc,
    };
    Ok((Some((l.kind.as_str().to_owned(), body(change)?)), event))
}

/// Reads the batch's lines as `T`, makes each the body `stored` says (or refuses it), checks
/// its time, stores the accepted ones that keep a body in `series`, once, and runs the rules
/// over them all.
async fn write<T: serde::de::DeserializeOwned>(
    batch: &Batch<'_>,
    series: &str,
    prefix: &str,
    stored: fn(T) -> Stored,
) -> StoreResult<Vec<LineRefusal>> {
    let mut refused = Vec::new();
    let mut events = Vec::new();
    let mut siem = Vec::new();
    for (line, l) in batch.read::<T>(&mut refused) {
        match stored(l) {
            Err(why) => refused.push(LineError::InvalidObservation.refuse(line, why)),
            Ok((kept, event)) => match batch.check_time(line, event.at) {
                Err(r) => refused.push(r),
                Ok(()) => {
                    if let Some((partition, body)) = kept {
                        events.push((partition, event.at, body));
                    }
                    siem.push(event);
                }
            },
        }
    }
    batch.store_events(series, prefix, events).await?;
    correlate(batch, &siem).await?;
    Ok(refused)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn results_and_actions_come_from_the_event_id() {
        let logon_line = |event_id: u32, reason: Option<&str>| {
            serde_json::from_value::<LogonLine>(json!({"at": "2026-01-01T00:00:00Z",
                "event_id": event_id, "user": "j.m", "domain": "ACME", "logon_type": 3,
                "source_ip": "10.0.0.1", "target_host": "SRV", "auth_package": "NTLM",
                "dc": "DC1", "failure_reason": reason}))
            .expect("line")
        };
        let (kept, _) = logon(logon_line(4625, Some("0xC000006A"))).expect("stored");
        let (partition, b) = kept.expect("kept");
        assert_eq!(
            (partition.as_str(), b["result"].as_str()),
            ("SRV", Some("failure"))
        );
        assert_eq!(
            logon(logon_line(4624, None))
                .expect("stored")
                .0
                .expect("kept")
                .1["result"],
            "success"
        );
        for bad in [logon_line(4624, Some("x")), logon_line(4634, None)] {
            assert!(logon(bad).is_err());
        }
        let unlock = serde_json::from_value::<LockoutLine>(json!({"at": "2026-01-01T00:00:00Z",
            "event_id": 4767, "user": "j.m", "author": "admin", "dc": "DC1"}))
        .expect("line");
        assert_eq!(
            lockout(unlock).expect("stored").0.expect("kept").1["action"],
            "unlocked"
        );
    }
}
