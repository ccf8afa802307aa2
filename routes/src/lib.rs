//! The route table, declared once (docs/modules.md#route-table).
//!
//! Every route's operation id, method, path, Lambda function, scope, paging rule, window rule
//! and own `meta` keys live here, and every module (function) once. The handlers'
//! `#[route(<operation id>, ...)]` (crate netops-routes-macros) takes their method, path and
//! operation id from it, the auth layer enforces scopes from it, the paging and window
//! extractors read their defaults and caps from it, the OpenAPI document declares each
//! route's `meta` from it, the MCP tool list is checked against it by tests, and `cargo xtask
//! routes` writes the SAM template's events and scopes, the `cargo lambda watch` router and
//! the lists of modules (manifests, `api/src/modules.rs`) from it.
//!
//! A crate of its own, re-exported by netops-shared as `routes` and `scope`, so that the
//! generator (`xtask/`) and the attribute macro read the table without building
//! netops-shared, whose AWS SDK and axum stack take minutes to compile: this crate needs only
//! `http` (and `serde` for [`Scope`], behind the `serde` feature that netops-shared turns on).

pub mod scope;

use http::Method;

use crate::scope::Scope;

/// Declares [`Function`], [`Function::ALL`], [`Function::name`] and [`Function::role`] from
/// one list.
macro_rules! functions {
    ($($variant:ident $name:literal $role:ident;)*) => {
        /// One Lambda function per module.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Function {
            $($variant,)*
        }

        impl Function {
            pub const ALL: &'static [Function] = &[$(Function::$variant),*];

            /// The crate folder under `functions/` and the function's name.
            pub fn name(self) -> &'static str {
                match self {
                    $(Function::$variant => $name,)*
                }
            }

            /// What the function serves.
            pub fn role(self) -> Role {
                match self {
                    $(Function::$variant => Role::$role,)*
                }
            }
        }
    };
}

/// What a function serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// A data module: its crate's `MODULE` is in netops-api's `MODULES` (merged router,
    /// OpenAPI document), and it has demo data (feature `demo`).
    Data,
    /// A service of the API as a whole (the MCP entry point, the document and its page),
    /// mounted by the local process beside the data modules.
    Service,
}

// The modules, in the order of the API (the document, the template, the lists that
// `cargo xtask routes` writes). A new module is one line here plus its crate under
// `functions/<name>` (crate `netops-<name>`); then run `cargo xtask routes`.
functions! {
    Fleet "fleet" Data;
    Flows "flows" Data;
    Netdiag "netdiag" Data;
    Alerts "alerts" Data;
    Inventory "inventory" Data;
    Operations "operations" Data;
    Security "security" Data;
    Databases "databases" Data;
    Firewall "firewall" Data;
    Dns "dns" Data;
    Files "files" Data;
    Network "network" Data;
    Mcp "mcp" Service;
    Docs "docs" Service;
    Collect "collect" Service;
    Agent "agent" Service;
}

/// Who may call a route.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// No token: `/openapi.json` and `/docs` hold no tenant data.
    Public,
    /// Any valid token (`/me`, `/mcp`).
    Token,
    /// A valid token holding this scope.
    Scoped(Scope),
    /// A collect credential (docs/collect.md#credentials): the gate admits only tokens
    /// holding `collect:<module>` scopes (and admits them nowhere else), and the collect
    /// handler checks the scope of the kind posted, once it knows the kind.
    Collect,
    /// An agent route (docs/agent.md): the gate admits only tokens holding this agent scope
    /// (`agent` for a machine's credential, `agent:enroll` for a tenant's enrollment token),
    /// and admits agent tokens nowhere else.
    Agent(Scope),
}

/// What a route answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A JSON read: one MCP tool each.
    Read,
    /// A write, logged with its body.
    Write,
    /// A non-JSON read (the PDF report).
    Document,
    /// Protocol endpoints (MCP) and self-description.
    Service,
    /// A batch of observations sent by a collector (docs/collect.md): its body is read by its
    /// handler, up to the collection's own limits; logged in the ingestion log.
    Collect,
}

/// Page size rule: default, maximum, and whether the route pages with a cursor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Paging {
    pub default: u32,
    pub max: u32,
    pub cursor: bool,
    /// The answer says in `meta.truncated` whether more matched: a list without a cursor
    /// (`page`), not a ranking whose `limit` cuts each of its top lists (`top`).
    pub truncated: bool,
}

/// Time window rule (parameter set W): default length and optional cap, in seconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WindowRule {
    pub default_secs: i64,
    pub max_secs: Option<i64>,
}

#[derive(Debug, Clone)]
pub struct Route {
    /// operationId and MCP tool name, snake_case.
    pub op: &'static str,
    pub method: Method,
    /// Path below the versioned base, axum syntax (`/machines/{hostname}`).
    pub path: &'static str,
    pub function: Function,
    pub access: Access,
    pub kind: Kind,
    pub paging: Option<Paging>,
    pub window: Option<WindowRule>,
    /// The keys of its answers' `meta` besides those its paging and window rules give
    /// (`limit`, `next_cursor`, `truncated`, `window`, `window_capped`): its own keys, each
    /// declared once with its schema in netops-shared's `envelope::META_KEYS`, and
    /// `truncated` or `window` for a list or window of its own (an unpaged list cut at a
    /// fixed size, the flow explorer's periods).
    pub meta: &'static [&'static str],
}

impl Route {
    pub fn scope(&self) -> Option<Scope> {
        match self.access {
            Access::Scoped(s) | Access::Agent(s) => Some(s),
            _ => None,
        }
    }
}

/// MCP protocol versions `POST /mcp` negotiates in `initialize`, newest first.
pub const MCP_PROTOCOL_VERSIONS: &[&str] = &["2025-11-25", "2025-06-18", "2025-03-26"];
/// MCP protocol versions without handshake (each request names its own in `_meta`), newest
/// first (docs/mcp.md#transport).
pub const MCP_MODERN_VERSIONS: &[&str] = &["2026-07-28"];
/// The MCP toolsets a client may ask for on the endpoint URL (`?toolsets=flows,alerts`,
/// docs/mcp.md#toolsets): the modules that have JSON read routes, in the table's order.
pub fn mcp_toolsets() -> Vec<&'static str> {
    let mut names: Vec<&'static str> = Vec::new();
    for route in ROUTES.iter().filter(|r| r.kind == Kind::Read) {
        let name = route.function.name();
        if !names.contains(&name) {
            names.push(name);
        }
    }
    names
}
/// At most this many messages in an MCP batch (docs/mcp.md#batches-and-answer-size).
pub const MCP_MAX_BATCH: usize = 20;
/// At most this many bytes in the answer to one `POST /mcp`, batch or not
/// (docs/mcp.md#batches-and-answer-size).
pub const MCP_MAX_ANSWER_BYTES: usize = 8 * 1024 * 1024;

/// The versioned base every route sits under.
pub const BASE_PATH: &str = "/api/v1";

const H: i64 = 3600;
const D: i64 = 24 * H;

/// A list paged by `limit` alone, saying in `meta.truncated` whether more matched.
const fn page(default: u32, max: u32) -> Option<Paging> {
    Some(Paging {
        default,
        max,
        cursor: false,
        truncated: true,
    })
}
/// A list paged with a cursor (`meta.next_cursor`).
const fn cursor(default: u32, max: u32) -> Option<Paging> {
    Some(Paging {
        default,
        max,
        cursor: true,
        truncated: false,
    })
}
/// Top lists cut at `limit` (a ranking), no list of their own: `meta.limit` alone.
const fn top(default: u32, max: u32) -> Option<Paging> {
    Some(Paging {
        default,
        max,
        cursor: false,
        truncated: false,
    })
}
const fn win(default_days_or_hours: i64, max: Option<i64>) -> Option<WindowRule> {
    Some(WindowRule {
        default_secs: default_days_or_hours,
        max_secs: max,
    })
}
const W24: Option<WindowRule> = win(24 * H, None);

macro_rules! routes {
    ($($op:ident $method:ident $path:literal $func:ident $access:expr, $kind:ident, $paging:expr, $window:expr $(, meta[$($key:ident),*])?;)*) => {
        /// Every route of the API.
        pub static ROUTES: &[Route] = &[$(Route {
            op: stringify!($op),
            method: Method::$method,
            path: $path,
            function: Function::$func,
            access: $access,
            kind: Kind::$kind,
            paging: $paging,
            window: $window,
            meta: &[$($(stringify!($key)),*)?],
        }),*];
    };
}

use Access::{Public, Token};
const COLLECTOR: Access = Access::Collect;
const AGENT: Access = Access::Agent(Scope::Agent);
const ENROLL: Access = Access::Agent(Scope::AgentEnroll);
const fn s(scope: Scope) -> Access {
    Access::Scoped(scope)
}
use Scope::*;

// One row per route: operation id, method, path, function, access, kind, paging rule
// (`cursor`, `page`, `top` or `None`), window rule, and the route's own `meta` keys if any
// (`meta[...]`, see [`Route::meta`]). The handler's `#[route(<operation id>, ...)]` takes its
// method, path, operation id and tag from here.
routes! {
    // Token and fleet (docs/modules.md#fleet)
    get_me GET "/me" Fleet Token, Read, None, None;
    list_machines GET "/machines" Fleet s(ReadMachines), Read, cursor(100, 500), None;
    get_machine GET "/machines/{hostname}" Fleet s(ReadMachines), Read, None, None;
    // Network flows (docs/modules.md#flows)
    list_flows GET "/flows" Flows s(ReadFlows), Read, cursor(100, 500), win(24 * H, Some(7 * D));
    list_flow_destinations GET "/flows/destinations" Flows s(ReadFlows), Read, page(100, 500), win(24 * H, Some(31 * D)), meta[source];
    get_flow_summary GET "/flows/summary" Flows s(ReadFlows), Read, None, win(24 * H, Some(31 * D));
    list_flow_talkers GET "/flows/talkers" Flows s(ReadFlows), Read, page(50, 200), win(24 * H, Some(31 * D));
    list_blocked_flows GET "/flows/blocked" Flows s(ReadFlows), Read, page(100, 1000), W24;
    explore_flows GET "/flows/explore" Flows s(ReadFlows), Read, None, None, meta[window, window_capped, attribution];
    // NetDiag (docs/modules.md#netdiag)
    list_netdiag_machines GET "/netdiag/machines" Netdiag s(ReadNetdiag), Read, None, None, meta[count];
    get_netdiag_summary GET "/netdiag/machines/{hostname}/summary" Netdiag s(ReadNetdiag), Read, None, W24;
    list_netdiag_events GET "/netdiag/machines/{hostname}/events" Netdiag s(ReadNetdiag), Read, cursor(200, 1000), W24;
    list_netdiag_apps GET "/netdiag/machines/{hostname}/apps" Netdiag s(ReadNetdiag), Read, None, W24;
    get_netdiag_report GET "/netdiag/machines/{hostname}/report.pdf" Netdiag s(ReportPdf), Document, None, W24;
    update_netdiag_settings PUT "/netdiag/machines/{hostname}/settings" Netdiag s(WriteNetdiag), Write, None, None;
    start_netdiag_action POST "/netdiag/machines/{hostname}/actions" Netdiag s(WriteNetdiag), Write, None, None;
    // Alerts and availability (docs/modules.md#alerts-and-availability)
    list_alerts GET "/alerts" Alerts s(ReadAlerts), Read, page(200, 500), W24, meta[total];
    acknowledge_alert POST "/alerts/{id}/ack" Alerts s(WriteAlerts), Write, None, None;
    list_monitors GET "/monitors" Alerts s(ReadMonitors), Read, None, None;
    get_monitor GET "/monitors/{id}" Alerts s(ReadMonitors), Read, None, None;
    list_monitor_incidents GET "/monitors/{id}/incidents" Alerts s(ReadMonitors), Read, page(100, 500), win(30 * D, None), meta[total];
    // Inventory (docs/modules.md#inventory)
    list_assets GET "/inventory/assets" Inventory s(ReadInventory), Read, cursor(100, 500), None;
    get_asset GET "/inventory/assets/{id}" Inventory s(ReadInventory), Read, None, None, meta[software_truncated];
    list_software GET "/inventory/software" Inventory s(ReadInventory), Read, cursor(200, 1000), None;
    list_cves GET "/inventory/cves" Inventory s(ReadInventory), Read, cursor(200, 1000), None;
    // Operations (docs/modules.md#operations)
    list_maintenance_windows GET "/maintenance" Operations s(ReadMonitors), Read, None, None;
    list_heartbeats GET "/heartbeats" Operations s(ReadMonitors), Read, None, None;
    list_profiles GET "/profiles" Operations s(ReadMonitors), Read, None, None, meta[deployments_truncated];
    get_profile GET "/profiles/{id}" Operations s(ReadMonitors), Read, None, None, meta[deployments_truncated];
    compare_profile_deployment GET "/profiles/deployments/{id}/compare" Operations s(ReadMonitors), Read, None, None;
    // Security (docs/modules.md#security)
    list_logons GET "/security/logons" Security s(ReadSecurity), Read, cursor(100, 500), win(24 * H, Some(7 * D));
    list_lockouts GET "/security/lockouts" Security s(ReadSecurity), Read, None, win(7 * D, Some(90 * D)), meta[truncated];
    list_account_changes GET "/security/account-changes" Security s(ReadSecurity), Read, cursor(100, 500), win(7 * D, Some(90 * D));
    list_risky_accounts GET "/security/risky-accounts" Security s(ReadSecurity), Read, page(50, 200), None, meta[graph_days];
    list_security_anomalies GET "/security/anomalies" Security s(ReadSecurity), Read, None, W24, meta[truncated];
    list_security_incidents GET "/security/incidents" Security s(ReadSecurity), Read, page(100, 500), W24, meta[total];
    get_security_incident GET "/security/incidents/{id}" Security s(ReadSecurity), Read, None, None, meta[events_truncated];
    list_security_rules GET "/security/rules" Security s(ReadSecurity), Read, None, None, meta[global, tenant];
    // Databases (docs/modules.md#databases)
    list_database_instances GET "/databases/instances" Databases s(ReadDatabases), Read, None, None;
    get_database_metrics GET "/databases/instances/{id}/metrics" Databases s(ReadDatabases), Read, None, win(24 * H, Some(31 * D)), meta[source, points, resolution_seconds];
    list_slow_queries GET "/databases/instances/{id}/slow-queries" Databases s(ReadDatabases), Read, page(50, 500), W24, meta[total];
    list_top_queries GET "/databases/instances/{id}/top-queries" Databases s(ReadDatabases), Read, page(20, 200), win(24 * H, Some(7 * D)), meta[by];
    list_database_sessions GET "/databases/instances/{id}/sessions" Databases s(ReadDatabases), Read, page(100, 500), W24;
    list_blocking_chains GET "/databases/instances/{id}/blocking" Databases s(ReadDatabases), Read, None, W24, meta[truncated];
    list_database_alerts GET "/databases/alerts" Databases s(ReadDatabases), Read, None, W24, meta[truncated, status];
    list_database_checks GET "/databases/checks" Databases s(ReadDatabases), Read, None, None;
    list_database_check_results GET "/databases/checks/{id}/results" Databases s(ReadDatabases), Read, None, W24, meta[truncated];
    // Firewall (docs/modules.md#firewall)
    list_firewall_devices GET "/firewall/devices" Firewall s(ReadFirewall), Read, None, None;
    list_firewall_events GET "/firewall/events" Firewall s(ReadFirewall), Read, page(100, 1000), win(24 * H, Some(7 * D));
    get_firewall_traffic GET "/firewall/traffic" Firewall s(ReadFirewall), Read, top(20, 200), win(24 * H, Some(31 * D));
    list_firewall_threats GET "/firewall/threats" Firewall s(ReadFirewall), Read, page(100, 500), win(30 * D, None);
    get_firewall_report GET "/firewall/report" Firewall s(ReadFirewall), Read, None, None;
    // DNS (docs/modules.md#dns)
    list_dns_resolutions GET "/dns/resolutions" Dns s(ReadDns), Read, page(100, 1000), win(24 * H, Some(7 * D));
    list_dns_top_domains GET "/dns/top-domains" Dns s(ReadDns), Read, page(50, 500), W24;
    list_dns_threats GET "/dns/threats" Dns s(ReadDns), Read, None, W24, meta[truncated];
    list_dns_server_queries GET "/dns/server-queries" Dns s(ReadDns), Read, None, W24, meta[truncated, server_collection, servers];
    // Files (docs/modules.md#files)
    list_file_events GET "/files/events" Files s(ReadFiles), Read, cursor(100, 1000), win(24 * H, Some(31 * D));
    get_file_summary GET "/files/summary" Files s(ReadFiles), Read, None, W24;
    // Network infrastructure (docs/modules.md#network-infrastructure)
    list_sites GET "/network/sites" Network s(ReadNetwork), Read, None, None;
    list_network_devices GET "/network/devices" Network s(ReadNetwork), Read, cursor(100, 500), None;
    get_network_device GET "/network/devices/{id}" Network s(ReadNetwork), Read, None, None;
    get_network_device_metrics GET "/network/devices/{id}/metrics" Network s(ReadNetwork), Read, None, W24;
    list_tunnels GET "/network/tunnels" Network s(ReadNetwork), Read, None, None;
    list_network_alerts GET "/network/alerts" Network s(ReadNetwork), Read, None, W24, meta[truncated];
    list_network_ports GET "/network/ports" Network s(ReadNetwork), Read, page(200, 1000), None;
    // AI-assistant entry point (docs/mcp.md) and self-description
    // (docs/modules.md#self-description)
    mcp POST "/mcp" Mcp Token, Service, None, None;
    get_openapi GET "/openapi.json" Docs Public, Service, None, None;
    get_docs GET "/docs" Docs Public, Service, None, None;
    get_docs_asset GET "/docs/{asset}" Docs Public, Service, None, None;
    // Collection (docs/collect.md): raw observations in, one kind per batch
    collect POST "/collect/{kind}" Collect COLLECTOR, Collect, None, None;
    // The agent loop (docs/agent.md): enrollment, sync, settings, leased actions
    enroll_agent POST "/agent/enroll" Agent ENROLL, Service, None, None;
    rotate_agent_credential POST "/agent/credential/rotate" Agent AGENT, Service, None, None;
    sync_agent GET "/agent/sync" Agent AGENT, Service, None, None;
    get_agent_settings GET "/agent/settings" Agent AGENT, Service, None, None;
    report_agent_settings POST "/agent/settings/applied" Agent AGENT, Service, None, None;
    claim_agent_actions POST "/agent/actions/claim" Agent AGENT, Service, None, None;
    post_agent_action_result POST "/agent/actions/{id}/result" Agent AGENT, Service, None, None;
}

/// The outcome of matching a request against the table.
#[derive(Debug)]
pub enum Match {
    Found(&'static Route),
    /// The path exists with other methods (listed for the `Allow` header).
    MethodNotAllowed(Vec<&'static str>),
    NotFound,
}

/// Finds the route for `method` and `path` (the path below [`BASE_PATH`]). Literal
/// segments beat placeholders, so `/flows/summary` never reads as a parameter.
///
/// `HEAD` finds the `GET` route of its path (RFC 9110 9.3.2: the same answer without its
/// body), and a path with a `GET` route lists `HEAD` among its methods.
pub fn find(method: &Method, path: &str) -> Match {
    let method = if method == Method::HEAD {
        &Method::GET
    } else {
        method
    };
    let path = path
        .strip_suffix('/')
        .filter(|p| !p.is_empty())
        .unwrap_or(path);
    let mut best: Option<(&'static Route, usize)> = None;
    let mut allowed = Vec::new();
    for route in ROUTES {
        let Some(params) = matches(route.path, path) else {
            continue;
        };
        if route.method != *method {
            allowed.push(route.method.as_str());
            if route.method == Method::GET {
                allowed.push(Method::HEAD.as_str());
            }
            continue;
        }
        if best.is_none_or(|(_, p)| params < p) {
            best = Some((route, params));
        }
    }
    match best {
        Some((route, _)) => Match::Found(route),
        None if !allowed.is_empty() => Match::MethodNotAllowed(allowed),
        None => Match::NotFound,
    }
}

/// The route with this operation id.
pub fn by_op(op: &str) -> Option<&'static Route> {
    ROUTES.iter().find(|r| r.op == op)
}

/// Number of placeholders if `template` matches `path`.
fn matches(template: &str, path: &str) -> Option<usize> {
    let mut t = template.split('/');
    let mut p = path.split('/');
    let mut params = 0;
    loop {
        match (t.next(), p.next()) {
            (None, None) => return Some(params),
            (Some(ts), Some(ps)) if ts.starts_with('{') => {
                if ps.is_empty() {
                    return None;
                }
                params += 1;
            }
            (Some(ts), Some(ps)) if ts == ps => {}
            _ => return None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operation_ids_are_unique_snake_case() {
        let mut seen = std::collections::HashSet::new();
        for r in ROUTES {
            assert!(seen.insert(r.op), "duplicate op {}", r.op);
            assert!(r.op.chars().all(|c| c.is_ascii_lowercase() || c == '_'));
            if let Some(p) = r.paging {
                assert!(p.default >= 1 && p.default <= p.max, "{}", r.op);
            }
        }
    }

    #[test]
    fn literal_segments_win_over_placeholders() {
        let Match::Found(r) = find(&Method::GET, "/profiles/deployments/7/compare") else {
            panic!("no match")
        };
        assert_eq!(r.op, "compare_profile_deployment");
        let Match::Found(r) = find(&Method::GET, "/machines/PAR-LT-0001") else {
            panic!("no match")
        };
        assert_eq!(r.op, "get_machine");
        assert!(matches!(find(&Method::GET, "/nope"), Match::NotFound));
        assert!(matches!(find(&Method::GET, "/machines/"), Match::Found(_)));
        match find(&Method::DELETE, "/mcp") {
            Match::MethodNotAllowed(m) => assert_eq!(m, vec!["POST"]),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn head_finds_the_get_route_and_is_allowed_wherever_get_is() {
        let Match::Found(r) = find(&Method::HEAD, "/machines/PAR-LT-0001") else {
            panic!("no match")
        };
        assert_eq!(r.op, "get_machine");
        let Match::Found(r) = find(&Method::HEAD, "/openapi.json") else {
            panic!("no match")
        };
        assert_eq!(r.op, "get_openapi");
        match find(&Method::POST, "/machines") {
            Match::MethodNotAllowed(m) => assert_eq!(m, vec!["GET", "HEAD"]),
            other => panic!("{other:?}"),
        }
        match find(&Method::HEAD, "/mcp") {
            Match::MethodNotAllowed(m) => assert_eq!(m, vec!["POST"]),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn every_scope_guards_at_least_one_route() {
        for scope in Scope::ALL {
            assert!(ROUTES.iter().any(|r| r.scope() == Some(*scope)), "{scope}");
        }
        // The collect scopes guard the kinds of the one collect route.
        assert!(ROUTES.iter().any(|r| r.access == Access::Collect));
    }
}
