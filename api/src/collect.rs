//! The kinds of observations the collection API takes in (docs/collect.md#kinds), each
//! written by its module's writer: a new kind is its writer in its module's crate and one
//! line here.

use netops_shared::collect::CollectKind;

/// Every kind `POST /collect/{kind}` takes, in the order of the document.
pub static KINDS: &[&CollectKind] = &[
    &netops_firewall::collect::SYSLOG,
    &netops_dns::collect::RESOLUTION,
    &netops_dns::collect::SERVER_QUERY,
    &netops_fleet::collect::HEARTBEAT,
    &netops_netdiag::collect::EVENT,
    &netops_netdiag::collect::MEASUREMENT,
    &netops_flows::collect::FLOW,
    &netops_flows::collect::GATEWAY_FLOW,
    &netops_flows::collect::FLOW_FAILURE,
    &netops_inventory::collect::ASSET_INVENTORY,
    &netops_security::collect::LOGON,
    &netops_security::collect::LOCKOUT,
    &netops_security::collect::CHANGE,
    &netops_security::collect::SIEM_EVENT,
    &netops_files::collect::FILE_ACCESS,
    &netops_operations::collect::JOB_PING,
    &netops_databases::collect::METRICS_KIND,
    &netops_databases::collect::SESSION,
    &netops_databases::collect::SLOW_QUERY,
    &netops_databases::collect::QUERY_STATS_KIND,
    &netops_databases::collect::BLOCKING_KIND,
    &netops_databases::collect::CHECK,
    &netops_network::collect::PORT,
    &netops_network::collect::DEVICE_METRICS,
    &netops_network::collect::DEVICE_STATE,
    &netops_network::collect::TUNNEL,
    &netops_alerts::collect::CHECK,
    &netops_operations::collect::DEPLOYMENT,
];
