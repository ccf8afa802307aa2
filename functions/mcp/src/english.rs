//! What each tool answers, in English: the tool descriptions' default language. The French
//! text comes from the OpenAPI document (the modules' annotations); the limits that follow
//! either text come from the route table ([`crate::tools`]).

/// Tool name → what it answers.
pub const ANSWERS: &[(&str, &str)] = &[
    (
        "get_me",
        "The calling token: its name, scopes, expiry and account.",
    ),
    ("list_machines", "Machines of the fleet with their status."),
    ("get_machine", "One machine in detail."),
    ("list_heartbeats", "Agent heartbeats of the machines."),
    (
        "list_maintenance_windows",
        "Maintenance windows of the machines.",
    ),
    (
        "list_netdiag_machines",
        "Machines under network diagnostics (NetDiag) with their latest verdict.",
    ),
    (
        "get_netdiag_summary",
        "NetDiag summary of one machine over the window.",
    ),
    (
        "list_netdiag_events",
        "NetDiag events of one machine (measures and verdict changes), newest first.",
    ),
    (
        "list_netdiag_apps",
        "Applications NetDiag follows on one machine.",
    ),
    (
        "list_alerts",
        "The unified alert feed: monitor incidents, SIEM incidents and NetDiag alerts, newest first, each with whether, by whom and when it was acknowledged.",
    ),
    (
        "list_monitors",
        "Availability monitors (HTTP, ping, TCP, DNS) with their state, last check, current incident and availability over 24 h, 7 days and 30 days.",
    ),
    ("get_monitor", "One availability monitor in detail."),
    (
        "list_monitor_incidents",
        "Incidents of one availability monitor, newest first.",
    ),
    ("list_flows", "Network flow records."),
    (
        "list_blocked_flows",
        "Outbound connections that failed or were blocked.",
    ),
    (
        "list_flow_destinations",
        "Destinations of the network flows.",
    ),
    (
        "explore_flows",
        "Flow volumes grouped by the dimensions asked for, with a filter expression.",
    ),
    (
        "get_flow_summary",
        "Flow totals over the window, by direction and by hour.",
    ),
    (
        "list_flow_talkers",
        "Machines with the most network traffic.",
    ),
    ("list_assets", "Inventory of the machines."),
    ("get_asset", "One inventory asset in detail."),
    (
        "list_cves",
        "Known vulnerabilities (CVE) found on the machines, with their severity.",
    ),
    (
        "list_software",
        "Software installed across the fleet, with install counts, end of life and CVE counts.",
    ),
    (
        "list_profiles",
        "Configuration profiles, each with its deployments counted by state and its first 10 deployments, problem states first (meta.deployments_truncated when a profile has more).",
    ),
    (
        "get_profile",
        "One configuration profile in full, with its deployments counted by state and its first 50 deployments, problem states first (meta.deployments_truncated when it has more).",
    ),
    (
        "compare_profile_deployment",
        "How one deployment differs from its profile, item by item.",
    ),
    ("list_security_incidents", "SIEM incidents, newest first."),
    (
        "get_security_incident",
        "One SIEM incident in detail, with its events and actions.",
    ),
    ("list_logons", "Directory logons (successes and failures)."),
    ("list_lockouts", "Directory account lockouts."),
    (
        "list_account_changes",
        "Changes made to directory accounts and groups.",
    ),
    (
        "list_security_anomalies",
        "Behaviour anomalies detected by the security module.",
    ),
    ("list_risky_accounts", "Accounts ranked by risk."),
    (
        "list_security_rules",
        "SIEM detection rules, global and the account's own.",
    ),
    ("list_database_instances", "Monitored database instances."),
    (
        "get_database_metrics",
        "Metric series of one database instance.",
    ),
    (
        "list_database_sessions",
        "Sessions of one database instance.",
    ),
    (
        "list_blocking_chains",
        "Blocking chains of one database instance: sessions that wait on others.",
    ),
    (
        "list_slow_queries",
        "Slow queries of one database instance.",
    ),
    (
        "list_top_queries",
        "The costliest queries of one database instance, by CPU, duration or reads.",
    ),
    (
        "list_database_alerts",
        "Database alerts, open now or opened in the window.",
    ),
    (
        "list_database_checks",
        "Business checks: read-only queries run on the databases on a schedule.",
    ),
    (
        "list_database_check_results",
        "Results of one business check, newest first.",
    ),
    ("list_firewall_devices", "Firewalls and gateways."),
    ("list_firewall_events", "Firewall events."),
    (
        "get_firewall_report",
        "Perimeter security report over the window: event counts by category and action, targeted accounts.",
    ),
    ("list_firewall_threats", "Threats the firewalls detected."),
    (
        "get_firewall_traffic",
        "Traffic through the gateways over the window.",
    ),
    (
        "list_dns_resolutions",
        "DNS resolutions made by the machines.",
    ),
    (
        "list_dns_server_queries",
        "Query logs of the DNS servers, when their collection is active.",
    ),
    (
        "list_dns_threats",
        "DNS threats: resolutions of malicious or suspicious domains.",
    ),
    ("list_dns_top_domains", "Most requested domains."),
    ("list_file_events", "Accesses to shared files."),
    (
        "get_file_summary",
        "Summary of shared-file accesses: by action, most active users and folders.",
    ),
    ("list_network_devices", "Network devices of the account."),
    ("get_network_device", "One network device in detail."),
    (
        "get_network_device_metrics",
        "Metric series of one network device.",
    ),
    ("list_network_ports", "Network ports with their state."),
    (
        "list_network_alerts",
        "Network alerts, open now or opened in the window.",
    ),
    ("list_sites", "Sites of the account."),
    ("list_tunnels", "Site-to-site VPN tunnels."),
];

/// What `name` answers, in English.
pub fn answers(name: &str) -> Option<&'static str> {
    ANSWERS.iter().find(|(n, _)| *n == name).map(|(_, a)| *a)
}

#[cfg(test)]
mod tests {
    use netops_shared::routes::{Kind, by_op};

    use super::ANSWERS;

    /// Keyed by operation id: each text is that of a tool (a read route of the table), once.
    /// That every tool has one is checked with the tools (`tools.rs`).
    #[test]
    fn every_text_is_that_of_a_read_route_of_the_table_once() {
        for (i, (op, _)) in ANSWERS.iter().enumerate() {
            assert!(
                !ANSWERS[..i].iter().any(|(other, _)| other == op),
                "{op}: two texts"
            );
            assert!(
                by_op(op).is_some_and(|r| r.kind == Kind::Read),
                "{op}: no read route of the route table has this operation id"
            );
        }
    }
}
