//! Closed sets of values that several modules store or answer alike
//! (docs/data.md#shared-states): severities, alert and agent states, SIEM incident states.
//! Each serializes to the spelling the documents and answers use, so the stored JSON reads
//! as before.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// Severity on the scale of the alert feed (spec 2.4): `critical`, `high`, `medium`, `low`
/// or `info`. Network alerts, NetDiag alerts and events and monitor incidents use it too.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    Critical,
    High,
    Medium,
    Low,
    Info,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Critical => "critical",
            Severity::High => "high",
            Severity::Medium => "medium",
            Severity::Low => "low",
            Severity::Info => "info",
        }
    }
}

/// Severity without the `info` level: `critical`, `high`, `medium` or `low` (database
/// alerts, DNS threats, behaviour anomalies, firewall threats).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Criticality {
    Critical,
    High,
    Medium,
    Low,
}

/// State of an alert (spec 2.4, 3.1): `open` while in progress, `resolved` afterwards. The
/// alert feed, NetDiag, network and database alerts use it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum AlertState {
    Open,
    Resolved,
}

impl AlertState {
    /// `open` when `open` is true, `resolved` otherwise.
    pub fn open_if(open: bool) -> AlertState {
        if open {
            AlertState::Open
        } else {
            AlertState::Resolved
        }
    }
}

/// State of a machine's agent (spec 2.3, 3.1): `online` or `offline`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum AgentStatus {
    Online,
    Offline,
}

impl AgentStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            AgentStatus::Online => "online",
            AgentStatus::Offline => "offline",
        }
    }
}

/// Severity of a SIEM incident and of the rule that opens it (spec 3.1): `CRITICAL`,
/// `HIGH`, `MEDIUM` or `LOW`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "UPPERCASE")]
pub enum SiemSeverity {
    Critical,
    High,
    Medium,
    Low,
}

impl SiemSeverity {
    pub const ALL: [SiemSeverity; 4] = [
        SiemSeverity::Critical,
        SiemSeverity::High,
        SiemSeverity::Medium,
        SiemSeverity::Low,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            SiemSeverity::Critical => "CRITICAL",
            SiemSeverity::High => "HIGH",
            SiemSeverity::Medium => "MEDIUM",
            SiemSeverity::Low => "LOW",
        }
    }

    /// The severity spelled `s` in any case (`s` uppercased is its name).
    pub fn parse_any_case(s: &str) -> Option<SiemSeverity> {
        let up = s.to_uppercase();
        SiemSeverity::ALL.into_iter().find(|v| v.as_str() == up)
    }

    /// The same level on the alert feed's scale (docs/data.md#shared-states).
    pub fn to_severity(self) -> Severity {
        match self {
            SiemSeverity::Critical => Severity::Critical,
            SiemSeverity::High => Severity::High,
            SiemSeverity::Medium => Severity::Medium,
            SiemSeverity::Low => Severity::Low,
        }
    }
}

/// State of a SIEM incident (spec 3.1): `OPEN`, `ACKNOWLEDGED` and `INVESTIGATING` are in
/// progress; `RESOLVED` and `CLOSED` are over.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "UPPERCASE")]
pub enum SiemStatus {
    Open,
    Acknowledged,
    Investigating,
    Resolved,
    Closed,
}

impl SiemStatus {
    pub const ALL: [SiemStatus; 5] = [
        SiemStatus::Open,
        SiemStatus::Acknowledged,
        SiemStatus::Investigating,
        SiemStatus::Resolved,
        SiemStatus::Closed,
    ];

    /// The states that count as in progress (`status=open`, docs/data.md#shared-states).
    pub const IN_PROGRESS: [SiemStatus; 3] = [
        SiemStatus::Open,
        SiemStatus::Acknowledged,
        SiemStatus::Investigating,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            SiemStatus::Open => "OPEN",
            SiemStatus::Acknowledged => "ACKNOWLEDGED",
            SiemStatus::Investigating => "INVESTIGATING",
            SiemStatus::Resolved => "RESOLVED",
            SiemStatus::Closed => "CLOSED",
        }
    }

    /// The state spelled `s` in any case (`s` uppercased is its name).
    pub fn parse_any_case(s: &str) -> Option<SiemStatus> {
        let up = s.to_uppercase();
        SiemStatus::ALL.into_iter().find(|v| v.as_str() == up)
    }

    pub fn in_progress(self) -> bool {
        SiemStatus::IN_PROGRESS.contains(&self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{from_value, json, to_value};

    #[test]
    fn values_are_spelled_as_the_stored_documents_spell_them() {
        assert_eq!(to_value(Severity::Info).ok(), Some(json!("info")));
        assert_eq!(
            to_value(Criticality::Critical).ok(),
            Some(json!("critical"))
        );
        assert_eq!(to_value(AlertState::Resolved).ok(), Some(json!("resolved")));
        assert_eq!(to_value(AgentStatus::Offline).ok(), Some(json!("offline")));
        for s in SiemSeverity::ALL {
            assert_eq!(to_value(s).ok(), Some(json!(s.as_str())));
        }
        for s in SiemStatus::ALL {
            assert_eq!(to_value(s).ok(), Some(json!(s.as_str())));
            assert_eq!(from_value::<SiemStatus>(json!(s.as_str())).ok(), Some(s));
        }
        assert!(from_value::<SiemStatus>(json!("open")).is_err());
    }

    #[test]
    fn siem_values_parse_in_any_case() {
        assert_eq!(
            SiemSeverity::parse_any_case("high"),
            Some(SiemSeverity::High)
        );
        assert_eq!(
            SiemStatus::parse_any_case("Resolved"),
            Some(SiemStatus::Resolved)
        );
        assert_eq!(SiemStatus::parse_any_case("open "), None);
    }
}
