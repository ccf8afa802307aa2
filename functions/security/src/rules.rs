//! The product's global detection rules, the same for every tenant (the tenant rules of the
//! demo are written by `seed`).

use chrono::{DateTime, Utc};

use crate::model::{Rule, RuleScope, SiemSeverity};

struct Def {
    id: &'static str,
    name: &'static str,
    description: &'static str,
    severity: SiemSeverity,
    event_ids: &'static [u32],
    threshold: u32,
    window_minutes: u32,
    mitre: &'static str,
}

const GLOBAL: &[Def] = &[
    Def {
        id: "gl-001",
        name: "Force brute sur un compte",
        description: "Au moins 10 échecs de connexion (4625) pour un même compte en 5 minutes.",
        severity: SiemSeverity::High,
        event_ids: &[4625],
        threshold: 10,
        window_minutes: 5,
        mitre: "T1110.001",
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
    },
    Def {
        id: "gl-007",
        name: "Création de compte hors heures ouvrées",
        description: "Compte utilisateur créé (4720) entre 20 h et 6 h ou le week-end.",
        severity: SiemSeverity::Low,
        event_ids: &[4720],
        threshold: 1,
        window_minutes: 1,
        mitre: "T1136.002",
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
