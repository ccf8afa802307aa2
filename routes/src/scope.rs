//! Token scopes (docs/http-conventions.md#scopes). Never strings in handlers: a route's scope
//! is a [`Scope`].

macro_rules! scopes {
    ($($variant:ident => $s:literal,)*; collect: $($cvariant:ident => $cs:literal,)*; agent: $($avariant:ident => $as:literal,)*) => {
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
        pub enum Scope {
            $(#[cfg_attr(feature = "serde", serde(rename = $s))] $variant,)*
            $(#[cfg_attr(feature = "serde", serde(rename = $cs))] $cvariant,)*
            $(#[cfg_attr(feature = "serde", serde(rename = $as))] $avariant,)*
        }

        impl Scope {
            /// The scopes of the public API (what `all` grants).
            pub const ALL: &'static [Scope] = &[$(Scope::$variant),*];
            /// The scopes of collect credentials, `collect:<module>`
            /// (docs/collect.md#credentials): never in `all`, never beside a public scope.
            pub const COLLECT: &'static [Scope] = &[$(Scope::$cvariant),*];
            /// The scopes of the agent API (docs/agent.md#credentials): `agent`, held by a
            /// machine's agent credential alone, and `agent:enroll`, held by a tenant's
            /// enrollment token alone; never in `all`, never beside another scope.
            pub const AGENT: &'static [Scope] = &[$(Scope::$avariant),*];

            pub fn as_str(self) -> &'static str {
                match self { $(Scope::$variant => $s,)* $(Scope::$cvariant => $cs,)* $(Scope::$avariant => $as,)* }
            }

            pub fn parse(s: &str) -> Option<Scope> {
                match s { $($s => Some(Scope::$variant),)* $($cs => Some(Scope::$cvariant),)* $($as => Some(Scope::$avariant),)* _ => None }
            }

            /// A scope of the collection API.
            pub fn is_collect(self) -> bool {
                Scope::COLLECT.contains(&self)
            }

            /// A scope of the agent API.
            pub fn is_agent(self) -> bool {
                Scope::AGENT.contains(&self)
            }
        }
    };
}

scopes! {
    ReadMachines => "read:machines",
    ReadNetdiag => "read:netdiag",
    ReportPdf => "report:pdf",
    WriteNetdiag => "write:netdiag",
    ReadFlows => "read:flows",
    ReadAlerts => "read:alerts",
    WriteAlerts => "write:alerts",
    ReadMonitors => "read:monitors",
    ReadInventory => "read:inventory",
    ReadSecurity => "read:security",
    ReadDatabases => "read:databases",
    ReadFirewall => "read:firewall",
    ReadDns => "read:dns",
    ReadFiles => "read:files",
    ReadNetwork => "read:network",
    ; collect:
    CollectFirewall => "collect:firewall",
    CollectDns => "collect:dns",
    CollectFleet => "collect:fleet",
    CollectNetdiag => "collect:netdiag",
    CollectFlows => "collect:flows",
    CollectInventory => "collect:inventory",
    CollectSecurity => "collect:security",
    CollectFiles => "collect:files",
    CollectOperations => "collect:operations",
    CollectDatabases => "collect:databases",
    CollectNetwork => "collect:network",
    CollectAlerts => "collect:alerts",
    ; agent:
    Agent => "agent",
    AgentEnroll => "agent:enroll",
}

impl std::fmt::Display for Scope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Parses a comma-separated scope list, `all` for every scope of the public API, or
/// `collect` for every collect scope. A list mixing collect scopes with others is refused: a
/// collect credential reads nothing.
pub fn parse_list(list: &str) -> Result<Vec<Scope>, String> {
    match list.trim() {
        "all" => return Ok(Scope::ALL.to_vec()),
        "collect" => return Ok(Scope::COLLECT.to_vec()),
        _ => {}
    }
    let mut out = Vec::new();
    for s in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let scope = Scope::parse(s).ok_or_else(|| format!("unknown scope '{s}'"))?;
        if !out.contains(&scope) {
            out.push(scope);
        }
    }
    if out.is_empty() {
        return Err("empty scope list".into());
    }
    if out.iter().any(|s| s.is_collect()) && !out.iter().all(|s| s.is_collect()) {
        return Err("collect scopes cannot be mixed with other scopes".into());
    }
    if out.contains(&Scope::Agent) {
        return Err("agent credentials are issued by enrollment (netops agent enroll), bound to one machine".into());
    }
    if out.contains(&Scope::AgentEnroll) && out.len() > 1 {
        return Err("agent:enroll cannot be mixed with other scopes".into());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_lists_and_all() {
        assert_eq!(parse_list("all").expect("all").len(), 15);
        assert_eq!(
            parse_list("read:flows, read:dns,read:flows").expect("list"),
            vec![Scope::ReadFlows, Scope::ReadDns]
        );
        assert!(parse_list("read:everything").is_err());
        assert!(parse_list(" ").is_err());
        assert_eq!(
            parse_list("collect:firewall").expect("collect"),
            vec![Scope::CollectFirewall]
        );
        assert!(parse_list("collect:firewall,read:firewall").is_err());
        assert!(
            !parse_list("all")
                .expect("all")
                .iter()
                .any(|s| s.is_collect())
        );
    }
}
