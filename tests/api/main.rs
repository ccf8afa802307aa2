//! Black-box tests over the whole API, as a user sees it: one file per module.

mod helpers;

mod agent;
mod alerts;
mod aws;
mod collect;
mod collect_flows;
mod collect_kinds;
mod databases;
mod dns;
mod dynamo_faults;
mod events;
mod exports;
mod files;
mod firewall;
mod fleet;
mod flows;
mod foundation;
mod http_conventions;
mod idempotency;
mod infra;
mod inventory;
mod layers;
mod live;
mod mcp;
mod netdiag;
mod network;
mod operations;
mod relay;
mod scale;
mod security;
mod serve;
mod shipper;
mod snapshots;
mod text_filters;
mod writelog;
