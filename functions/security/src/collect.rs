//! How the domain controllers' events are written (docs/collect.md#directory-logon): directory
//! logons, lockouts and account changes, each stored once under an id made of its content.
//! Their result and action are derived from the event id, never sent.

use chrono::{DateTime, Utc};
use netops_shared::collect::{Batch, CollectKind, LineError, bad_text, schema_of};
use netops_shared::module::BoxFuture;
use netops_shared::store::{LineRefusal, StoreResult};
use netops_shared::{Msg, Scope};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

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

fn write_logons<'a>(batch: &'a Batch<'a>) -> BoxFuture<'a, StoreResult<Vec<LineRefusal>>> {
    Box::pin(write(batch, LOGONS, "lg", logon))
}

fn write_lockouts<'a>(batch: &'a Batch<'a>) -> BoxFuture<'a, StoreResult<Vec<LineRefusal>>> {
    Box::pin(write(batch, LOCKOUTS, "lk", lockout))
}

fn write_changes<'a>(batch: &'a Batch<'a>) -> BoxFuture<'a, StoreResult<Vec<LineRefusal>>> {
    Box::pin(write(batch, CHANGES, "ch", change))
}

/// What a line becomes: its time, its partition and its stored body, or why it is refused.
type Stored = Result<(DateTime<Utc>, String, Value), Msg>;

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
    if l.source_ip.parse::<std::net::IpAddr>().is_err() && l.source_ip != "-" {
        return Err(invalid(
            "source_ip",
            "adresse IP invalide",
            "invalid IP address",
        ));
    }
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
    Ok((l.at, partition, body(logon)?))
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
    Ok((l.at, partition, body(lockout)?))
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
    Ok((l.at, l.kind.as_str().to_owned(), body(change)?))
}

/// Reads the batch's lines as `T`, makes each the body `stored` says (or refuses it), checks
/// its time and stores the accepted ones in `series`, once.
async fn write<T: serde::de::DeserializeOwned>(
    batch: &Batch<'_>,
    series: &str,
    prefix: &str,
    stored: fn(T) -> Stored,
) -> StoreResult<Vec<LineRefusal>> {
    let mut refused = Vec::new();
    let mut events = Vec::new();
    for (line, l) in batch.read::<T>(&mut refused) {
        match stored(l) {
            Err(why) => refused.push(LineError::InvalidObservation.refuse(line, why)),
            Ok((at, partition, body)) => match batch.check_time(line, at) {
                Err(r) => refused.push(r),
                Ok(()) => events.push((partition, at, body)),
            },
        }
    }
    batch.store_events(series, prefix, events).await?;
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
        let (_, partition, b) = logon(logon_line(4625, Some("0xC000006A"))).expect("stored");
        assert_eq!(
            (partition.as_str(), b["result"].as_str()),
            ("SRV", Some("failure"))
        );
        assert_eq!(
            logon(logon_line(4624, None)).expect("stored").2["result"],
            "success"
        );
        for bad in [logon_line(4624, Some("x")), logon_line(4634, None)] {
            assert!(logon(bad).is_err());
        }
        let unlock = serde_json::from_value::<LockoutLine>(json!({"at": "2026-01-01T00:00:00Z",
            "event_id": 4767, "user": "j.m", "author": "admin", "dc": "DC1"}))
        .expect("line");
        assert_eq!(lockout(unlock).expect("stored").2["action"], "unlocked");
    }
}
