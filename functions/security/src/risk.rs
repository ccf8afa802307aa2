//! The ranking of risky accounts, made from the logon graph when it is collected (by the demo
//! data's seed and then each hour as time passes, by a collector on a real deployment) and
//! stored in rank order, so that the route reads a page of it, not the graph.

use chrono::DateTime;
use serde_json::Value;

use crate::model::{GRAPH_HOSTS, RiskFactors, RiskyAccount};

/// The ranking's documents, keyed by rank (`000001`...), from the graph's documents.
pub fn ranking_docs<'a>(graph: impl Iterator<Item = (&'a str, &'a Value)>) -> Vec<(String, Value)> {
    rank(graph, usize::MAX)
        .into_iter()
        .map(|a| {
            (
                format!("{:06}", a.rank),
                serde_json::to_value(&a).unwrap_or(Value::Null),
            )
        })
        .collect()
}

/// One account of the stored graph: `[login, display_name, admin, service, edges]`, each
/// edge `[host index, successes, failures, last logon epoch seconds]`.
struct Node<'a> {
    login: &'a str,
    display_name: &'a str,
    admin: bool,
    service: bool,
    edges: &'a [Value],
}

fn node(v: &Value) -> Option<Node<'_>> {
    let a = v.as_array()?;
    Some(Node {
        login: a.first()?.as_str()?,
        display_name: a.get(1)?.as_str()?,
        admin: a.get(2)?.as_bool()?,
        service: a.get(3)?.as_bool()?,
        edges: a.get(4)?.as_array()?,
    })
}

fn edge(v: &Value) -> Option<(usize, u32, u32, i64)> {
    let e = v.as_array()?;
    Some((
        e.first()?.as_u64()? as usize,
        e.get(1)?.as_u64()? as u32,
        e.get(2)?.as_u64()? as u32,
        e.get(3)?.as_i64()?,
    ))
}

/// Scores every account of the graph and keeps the `limit` riskiest.
fn rank<'a>(docs: impl Iterator<Item = (&'a str, &'a Value)>, limit: usize) -> Vec<RiskyAccount> {
    let mut servers: Vec<bool> = Vec::new();
    let mut nodes: Vec<Node<'a>> = Vec::new();
    for (key, body) in docs {
        if key == GRAPH_HOSTS {
            servers = body["servers"]
                .as_array()
                .map(|a| a.iter().map(|s| s.as_bool().unwrap_or(false)).collect())
                .unwrap_or_default();
        } else if let Some(rows) = body["accounts"].as_array() {
            nodes.extend(rows.iter().filter_map(node));
        }
    }
    // Edges as (host, successes, failures, last), malformed ones skipped.
    let edges: Vec<Vec<(usize, u32, u32, i64)>> = nodes
        .iter()
        .map(|n| n.edges.iter().filter_map(edge).collect())
        .collect();
    let mut accounts_on = vec![0u32; servers.len()];
    for e in edges.iter().flatten() {
        if let Some(c) = accounts_on.get_mut(e.0) {
            *c += 1;
        }
    }
    let degree: Vec<f64> = edges
        .iter()
        .map(|es| {
            es.iter()
                .map(|e| f64::from(accounts_on.get(e.0).copied().unwrap_or(1)).ln_1p())
                .sum()
        })
        .collect();
    let max_degree = degree
        .iter()
        .copied()
        .fold(0.0_f64, f64::max)
        .max(f64::MIN_POSITIVE);
    let mut scored: Vec<(f64, usize)> = nodes
        .iter()
        .enumerate()
        .map(|(i, n)| (score(n.admin, &edges[i], degree[i] / max_degree), i))
        .collect();
    scored.sort_by(|a, b| {
        b.0.total_cmp(&a.0)
            .then_with(|| nodes[a.1].login.cmp(nodes[b.1].login))
    });
    scored.truncate(limit);
    scored
        .into_iter()
        .enumerate()
        .map(|(r, (score, i))| {
            let (n, es) = (&nodes[i], &edges[i]);
            let failures: u32 = es.iter().map(|e| e.2).sum();
            let total: u32 = failures + es.iter().map(|e| e.1).sum::<u32>();
            RiskyAccount {
                rank: r as u32 + 1,
                account: n.login.to_owned(),
                display_name: n.display_name.to_owned(),
                service_account: n.service,
                score,
                factors: RiskFactors {
                    admin: n.admin,
                    machines_reached: es.len() as u32,
                    servers_reached: es
                        .iter()
                        .filter(|e| servers.get(e.0).copied().unwrap_or(false))
                        .count() as u32,
                    failures,
                    failure_ratio: if total == 0 {
                        0.0
                    } else {
                        round3(f64::from(failures) / f64::from(total))
                    },
                    centrality: round3(degree[i] / max_degree),
                },
                last_logon_at: es
                    .iter()
                    .map(|e| e.3)
                    .max()
                    .and_then(|t| DateTime::from_timestamp(t, 0)),
            }
        })
        .collect()
}

/// 30 if admin + 20 x min(machines/20, 1) + 25 x min(failures/25, 1) + 25 x centrality.
fn score(admin: bool, edges: &[(usize, u32, u32, i64)], centrality: f64) -> f64 {
    let machines = edges.len() as f64;
    let failures: u32 = edges.iter().map(|e| e.2).sum();
    let s = if admin { 30.0 } else { 0.0 }
        + 20.0 * (machines / 20.0).min(1.0)
        + 25.0 * (f64::from(failures) / 25.0).min(1.0)
        + 25.0 * round3(centrality);
    (s * 10.0).round() / 10.0
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}
