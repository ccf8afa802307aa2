//! The product's global detection rules, the same for every tenant (the tenant rules of the
//! demo are written by `seed`).

use chrono::{DateTime, Utc};

use crate::derive::SiemEvent;
use crate::model::{Rule, RuleScope, SiemSeverity};

/// What a rule counts its threshold over: the events of one account, of one source (its
/// distinct accounts), of one author, or of one machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum By {
    Account,
    SourceAccounts,
    Subject,
    Host,
}

pub(crate) struct Def {
    pub(crate) id: &'static str,
    pub(crate) name: &'static str,
    description: &'static str,
    pub(crate) severity: SiemSeverity,
    pub(crate) event_ids: &'static [u32],
    pub(crate) threshold: u32,
    pub(crate) window_minutes: u32,
    mitre: &'static str,
    pub(crate) by: By,
    /// Whether an event of one of `event_ids` counts (its group, logon type, time...).
    pub(crate) admits: fn(&SiemEvent) -> bool,
}

fn any(_: &SiemEvent) -> bool {
    true
}

/// The administrators groups (French and English names), without case.
const PRIVILEGED_GROUPS: &[&str] = &[
    "admins du domaine",
    "domain admins",
    "administrateurs de l'entreprise",
    "enterprise admins",
    "administrateurs",
    "administrators",
];

fn privileged_group(e: &SiemEvent) -> bool {
    e.group.as_deref().is_some_and(|g| {
        // A distinguished name's first part (`CN=Admins du domaine,CN=Users,...`) or a name.
        let name = g.split(',').next().unwrap_or(g);
        let name = name.strip_prefix("CN=").unwrap_or(name).trim();
        PRIVILEGED_GROUPS.contains(&name.to_lowercase().as_str())
    })
}

fn service_interactive(e: &SiemEvent) -> bool {
    e.service_account && matches!(e.logon_type, Some(2 | 10))
}

/// From 20:00 to 6:00 UTC, or on a Saturday or Sunday (UTC).
pub(crate) fn off_hours(e: &SiemEvent) -> bool {
    use chrono::{Datelike, Timelike};
    e.at.weekday().num_days_from_monday() >= 5 || e.at.hour() >= 20 || e.at.hour() < 6
}

pub(crate) const GLOBAL: &[Def] = &[
    Def {
        id: "gl-001",
        name: "Force brute sur un compte",
        description: "Au moins 10 échecs de connexion (4625) pour un même compte en 5 minutes.",
        severity: SiemSeverity::High,
        event_ids: &[4625],
        threshold: 10,
        window_minutes: 5,
        mitre: "T1110.001",
        by: By::Account,
        admits: any,
    },
    Def {
        id: "gl-002",
        name: "Pulvérisation de mots de passe",
        description: "Échecs de connexion (4625) sur au moins 15 comptes distincts depuis une même source en 10 minutes.",
        severity: SiemSeverity::Critical,
        event_ids: &[4625],
        threshold: 15,
        window_minutes: 10,
        mitre: "T1110.003",
        by: By::SourceAccounts,
        admits: any,
    },
    Def {
        id: "gl-003",
        name: "Verrouillage d'un compte administrateur",
        description: "Un compte membre d'un groupe d'administration est verrouillé (4740).",
        severity: SiemSeverity::High,
        event_ids: &[4740],
        threshold: 1,
        window_minutes: 1,
        mitre: "T1110",
        by: By::Account,
        admits: |e| e.privileged,
    },
    Def {
        id: "gl-004",
        name: "Ajout à un groupe privilégié",
        description: "Ajout d'un membre à Admins du domaine, Administrateurs de l'entreprise ou Administrateurs (4728, 4732, 4756).",
        severity: SiemSeverity::Critical,
        event_ids: &[4728, 4732, 4756],
        threshold: 1,
        window_minutes: 1,
        mitre: "T1098",
        by: By::Account,
        admits: privileged_group,
    },
    Def {
        id: "gl-005",
        name: "Modification de la stratégie d'audit",
        description: "La stratégie d'audit du système ou la stratégie Kerberos est modifiée (4719, 4713).",
        severity: SiemSeverity::Medium,
        event_ids: &[4719, 4713],
        threshold: 1,
        window_minutes: 1,
        mitre: "T1562.002",
        by: By::Host,
        admits: any,
    },
    Def {
        id: "gl-006",
        name: "Compte de service en session interactive",
        description: "Un compte de service ouvre une session interactive ou à distance (4624, types 2 et 10).",
        severity: SiemSeverity::Medium,
        event_ids: &[4624],
        threshold: 1,
        window_minutes: 1,
        mitre: "T1078.002",
        by: By::Account,
        admits: service_interactive,
    },
    Def {
        id: "gl-007",
        name: "Création de compte hors heures ouvrées",
        description: "Compte utilisateur créé (4720) entre 20 h et 6 h (UTC) ou le week-end.",
        severity: SiemSeverity::Low,
        event_ids: &[4720],
        threshold: 1,
        window_minutes: 1,
        mitre: "T1136.002",
        by: By::Account,
        admits: off_hours,
    },
    Def {
        id: "gl-008",
        name: "Suppression massive d'objets de l'annuaire",
        description: "Au moins 20 objets supprimés (5141) par un même auteur en 15 minutes.",
        severity: SiemSeverity::High,
        event_ids: &[5141],
        threshold: 20,
        window_minutes: 15,
        mitre: "T1485",
        by: By::Subject,
        admits: any,
    },
];

pub fn global_rules() -> Vec<Rule> {
    let updated: DateTime<Utc> = DateTime::from_timestamp(1_760_000_000, 0).unwrap_or_default();
    GLOBAL
        .iter()
        .map(|d| Rule {
            id: d.id.into(),
            scope: RuleScope::Global,
            name: d.name.into(),
            description: d.description.into(),
            severity: d.severity,
            enabled: true,
            event_ids: d.event_ids.to_vec(),
            threshold: d.threshold,
            window_minutes: d.window_minutes,
            mitre_technique: d.mitre.into(),
            updated_at: updated,
        })
        .collect()
}
