//! The reliability suite: the real `netops serve` under floods, faults and bad input, as an
//! abusive or unlucky client would meet it, on loopback only. Every test is bounded in count
//! and time; together they run in the test command.

// Shared with the API suite; each suite uses part of it.
#[allow(dead_code)]
#[path = "../common/served.rs"]
mod served;

mod collect;
mod connections;
mod crash;
mod disk;
mod mcp;
mod writelog;
mod writes;

/// The first machine under diagnosis of the served demo tenant (the target of the write
/// tests: settings and actions are per machine).
async fn netdiag_host(http: &reqwest::Client, served: &served::Served) -> String {
    let machines: serde_json::Value = http
        .get(format!("{}/netdiag/machines", served.base))
        .bearer_auth(&served.token)
        .send()
        .await
        .expect("machines")
        .json()
        .await
        .expect("json");
    machines["data"][0]["hostname"]
        .as_str()
        .expect("a machine under diagnosis")
        .to_owned()
}
