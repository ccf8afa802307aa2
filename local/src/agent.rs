//! `netops agent` (docs/agent.md#simulated-agents): simulated agents of one tenant, each a
//! real HTTP client of the agent API of a base URL (the local server or an AWS stage). Each
//! enrolls its machine with the tenant's enrollment token, then syncs every `poll_seconds`
//! (with `If-None-Match`), reads and applies its settings when their version changes and
//! reports it, claims its queued actions and posts their results after the action's delay:
//! a random 60 to 180 s, the contract's, or the `--action-delay-secs` given. It sends its
//! machine's heartbeat to the collection API every minute, as a real agent does, so that the
//! scheduled pass does not take its machine for a silent one.
//!
//! `netops serve` runs the same agents for the demo tenants' online machines under
//! diagnosis ([`run_demo`]), against its own base URL.

use std::time::Duration;

use chrono::Utc;
use netops_shared::Scope;
use netops_shared::store::{Filter, Pred, StoreError, Stores};

use rand::Rng;
use reqwest::{Client, StatusCode};
use serde_json::{Value, json};

/// The version the simulated agents report.
const AGENT_VERSION: &str = "5.0.0-sim";

/// What to simulate.
pub struct Options {
    /// The API's base URL, `http(s)://host[:port]/api/v1`.
    pub base: String,
    /// The tenant's enrollment token (scope `agent:enroll`).
    pub enroll_token: String,
    /// The machines.
    pub machines: Vec<Machine>,
    /// Seconds an action takes; `None`: a random 60 to 180 s.
    pub action_delay_secs: Option<u32>,
}

/// Seconds between two heartbeats of an agent (docs/collect.md#machine-heartbeat).
const HEARTBEAT_SECS: u64 = 60;

/// A machine of a simulated agent, as its enrollment and heartbeats report it.
#[derive(Clone)]
pub struct Machine {
    pub hostname: String,
    pub ip: String,
    pub os: String,
    pub agent_version: String,
    /// The modules its heartbeats report active.
    pub modules: Vec<String>,
}

impl Machine {
    /// A new machine: a made-up address from its name, NetDiag its one module.
    pub fn named(hostname: String) -> Self {
        Self {
            ip: ip_of(&hostname),
            hostname,
            os: "Windows 11 Pro 24H2".into(),
            agent_version: AGENT_VERSION.into(),
            modules: vec!["netdiag".into()],
        }
    }
}

/// Enrolls every machine, then runs their agents until the process stops; an enrollment
/// refused stops it with its reason.
pub async fn run(options: Options) -> Result<(), String> {
    let client = Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .map_err(|e| format!("cannot make an HTTP client: {e}"))?;
    let base = options.base.trim_end_matches('/').to_owned();
    let mut agents = tokio::task::JoinSet::new();
    for machine in &options.machines {
        let Machine {
            hostname,
            ip,
            os,
            agent_version,
            ..
        } = machine;
        let res = client
            .post(format!("{base}/agent/enroll"))
            .bearer_auth(&options.enroll_token)
            .json(
                &json!({"hostname": hostname, "ip": ip, "os": os, "agent_version": agent_version}),
            )
            .send()
            .await
            .map_err(|e| format!("{hostname}: enrollment failed: {e}"))?;
        let status = res.status();
        let body: Value = res.json().await.unwrap_or(Value::Null);
        let Some(credential) = body["data"]["credential"]
            .as_str()
            .filter(|_| status.is_success())
        else {
            return Err(format!("{hostname}: enrollment refused ({status}): {body}"));
        };
        let agent = Agent {
            client: client.clone(),
            base: base.clone(),
            machine: machine.clone(),
            credential: credential.to_owned(),
            delay: options.action_delay_secs,
        };
        agents.spawn(agent.run());
    }
    eprintln!(
        "netops agent: {} agents enrolled against {base}",
        options.machines.len()
    );
    while agents.join_next().await.is_some() {}
    Ok(())
}

/// A made-up address of a simulated machine, from its name.
fn ip_of(hostname: &str) -> String {
    let n = hostname
        .bytes()
        .fold(7u32, |h, b| h.wrapping_mul(31).wrapping_add(u32::from(b)));
    format!(
        "10.{}.{}.{}",
        100 + n % 50,
        (n >> 8) % 250,
        2 + (n >> 16) % 250
    )
}

#[derive(Clone)]
struct Agent {
    client: Client,
    base: String,
    machine: Machine,
    credential: String,
    delay: Option<u32>,
}

impl Agent {
    async fn run(self) {
        let mut etag: Option<String> = None;
        let mut applied: Option<u64> = None;
        let mut poll = 30;
        let mut beat: Option<std::time::Instant> = None;
        loop {
            if beat.is_none_or(|at| at.elapsed() >= Duration::from_secs(HEARTBEAT_SECS)) {
                match self.heartbeat().await {
                    Ok(()) => beat = Some(std::time::Instant::now()),
                    Err(e) => self.warn("heartbeat", &e),
                }
            }
            match self.sync(etag.as_deref()).await {
                Ok(Some((tag, sync))) => {
                    etag = tag;
                    poll = sync["poll_seconds"].as_u64().unwrap_or(30).clamp(1, 30);
                    let version = sync["settings_version"].as_u64();
                    if version.is_some() && version != applied {
                        match self.apply_settings().await {
                            Ok(v) => applied = Some(v),
                            Err(e) => self.warn("settings", &e),
                        }
                    }
                    if sync["actions"].as_array().is_some_and(|a| !a.is_empty())
                        && let Err(e) = self.claim_and_run().await
                    {
                        self.warn("actions", &e);
                    }
                }
                Ok(None) => {}
                Err(e) => self.warn("sync", &e),
            }
            tokio::time::sleep(Duration::from_secs(poll)).await;
        }
    }

    fn warn(&self, what: &str, e: &str) {
        tracing::warn!(hostname = %self.machine.hostname, what, cause = %e, "simulated agent");
    }

    /// Posts the machine's heartbeat, now, to the collection API.
    async fn heartbeat(&self) -> Result<(), String> {
        let m = &self.machine;
        let line = json!({"at": Utc::now(), "hostname": m.hostname, "ip": m.ip, "os": m.os,
            "agent_version": m.agent_version, "status": "online", "modules": m.modules});
        let req = self
            .client
            .post(format!("{}/collect/machine-heartbeat", self.base))
            .header(reqwest::header::CONTENT_TYPE, "application/x-ndjson")
            .body(line.to_string());
        self.send(req, "/collect/machine-heartbeat").await.map(drop)
    }

    async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
        etag: Option<&str>,
    ) -> Result<(StatusCode, Option<String>, Value), String> {
        let mut req = self.client.request(method, format!("{}{path}", self.base));
        if let Some(b) = body {
            req = req.json(&b);
        }
        if let Some(tag) = etag {
            req = req.header(reqwest::header::IF_NONE_MATCH, tag);
        }
        self.send(req, path).await
    }

    /// Sends `req` with the agent's credential: the answer's status, `ETag` and body, or why
    /// it failed.
    async fn send(
        &self,
        req: reqwest::RequestBuilder,
        path: &str,
    ) -> Result<(StatusCode, Option<String>, Value), String> {
        let res = req
            .bearer_auth(&self.credential)
            .send()
            .await
            .map_err(|e| e.to_string())?;
        let status = res.status();
        let tag = res
            .headers()
            .get(reqwest::header::ETAG)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let body = res.json().await.unwrap_or(Value::Null);
        if status.is_success() || status == StatusCode::NOT_MODIFIED {
            Ok((status, tag, body))
        } else {
            Err(format!("{path}: {status} {body}"))
        }
    }

    /// The sync's answer and its `ETag`; `None` when nothing changed (304).
    async fn sync(&self, etag: Option<&str>) -> Result<Option<(Option<String>, Value)>, String> {
        let (status, tag, body) = self
            .call(reqwest::Method::GET, "/agent/sync", None, etag)
            .await?;
        Ok((status != StatusCode::NOT_MODIFIED).then(|| (tag, body["data"].clone())))
    }

    /// Reads the settings, "applies" them, reports their version; returns it.
    async fn apply_settings(&self) -> Result<u64, String> {
        let (_, _, body) = self
            .call(reqwest::Method::GET, "/agent/settings", None, None)
            .await?;
        let version = body["data"]["version"]
            .as_u64()
            .ok_or("settings without a version")?;
        self.call(
            reqwest::Method::POST,
            "/agent/settings/applied",
            Some(json!({"settings_version": version, "agent_version": self.machine.agent_version})),
            None,
        )
        .await?;
        Ok(version)
    }

    /// Claims the queued actions and runs each in a task of its own, which posts its result
    /// after the action's delay.
    async fn claim_and_run(&self) -> Result<(), String> {
        let (_, _, body) = self
            .call(
                reqwest::Method::POST,
                "/agent/actions/claim",
                Some(json!({"max": 10})),
                None,
            )
            .await?;
        for action in body["data"].as_array().cloned().unwrap_or_default() {
            let agent = self.clone();
            tokio::spawn(async move {
                let secs = agent
                    .delay
                    .unwrap_or_else(|| rand::rng().random_range(60..=180));
                tokio::time::sleep(Duration::from_secs(u64::from(secs))).await;
                let id = action["action_id"].as_str().unwrap_or_default();
                let path = format!("/agent/actions/{id}/result");
                let result = result_of(&agent.machine.hostname, &agent.machine.ip, &action);
                // A result lost on the way is posted again: the server keeps it once.
                for _ in 0..3 {
                    match agent
                        .call(reqwest::Method::POST, &path, Some(result.clone()), None)
                        .await
                    {
                        Ok(_) => return,
                        Err(e) => agent.warn("result", &e),
                    }
                    tokio::time::sleep(Duration::from_secs(2)).await;
                }
            });
        }
        Ok(())
    }
}

/// The simulated measurement of a claimed action.
fn result_of(hostname: &str, ip: &str, action: &Value) -> Value {
    let mut rng = rand::rng();
    let claim_id = action["claim_id"].clone();
    let round1 = |x: f64| (x * 10.0).round() / 10.0;
    match action["action"].as_str() {
        Some("trace") => {
            let target = action["target"]
                .as_str()
                .map_or_else(|| gateway(ip), str::to_owned);
            let n = rng.random_range(3..10);
            let mut ms = rng.random_range(0.5..3.0);
            let hops: Vec<Value> = (1..=n)
                .map(|hop| {
                    ms += rng.random_range(0.5..12.0);
                    let address = if hop == 1 {
                        gateway(ip)
                    } else {
                        format!("198.51.100.{}", rng.random_range(2..250))
                    };
                    json!({"hop": hop, "address": address, "ms": round1(ms)})
                })
                .collect();
            json!({"claim_id": claim_id, "trace": {"target": target, "hops": hops}})
        }
        Some("speed") => json!({"claim_id": claim_id, "speed": {
            "down_mbps": round1(rng.random_range(80.0..940.0)),
            "up_mbps": round1(rng.random_range(40.0..480.0)),
            "server": "speedtest.netops.example",
        }}),
        _ => {
            let seconds = action["seconds"].as_u64().unwrap_or(30);
            let id = action["action_id"].as_str().unwrap_or_default();
            json!({"claim_id": claim_id, "capture": {
                "seconds": seconds,
                "packets": seconds * rng.random_range(150..900),
                "file": format!("{hostname}-{id}.pcapng"),
            }})
        }
    }
}

/// The gateway of a machine's network: its address ending in `.1`.
fn gateway(ip: &str) -> String {
    match ip.rsplit_once('.') {
        Some((net, _)) => format!("{net}.1"),
        None => "10.0.0.1".into(),
    }
}

/// Agents per demo tenant at most, whatever the seed's size.
const DEMO_AGENTS_MAX: usize = 200;

/// `netops serve`'s agents (docs/agent.md#simulated-agents): for each demo tenant, an
/// enrollment token valid an hour, made in `stores`, and the agents of its online machines
/// under diagnosis ([`DEMO_AGENTS_MAX`] at most), against `base`; runs until the process stops.
pub async fn run_demo(stores: Stores, base: String, action_delay_secs: Option<u32>) {
    let mut tenants = tokio::task::JoinSet::new();
    for tenant in netops_demo::TENANTS {
        let enrolled = async {
            let machines = online_diagnosed(&stores, tenant.id).await?;
            if machines.is_empty() {
                return Ok(None);
            }
            let token = netops::stamped_token(
                &stores,
                tenant.id,
                "demo-agents",
                vec![Scope::AgentEnroll],
                chrono::Duration::hours(1),
                Utc::now(),
            )
            .await?;
            Ok::<_, StoreError>(Some((machines, token)))
        };
        match enrolled.await {
            Ok(Some((machines, enroll_token))) => {
                tenants.spawn(run(Options {
                    base: base.clone(),
                    enroll_token,
                    machines,
                    action_delay_secs,
                }));
            }
            Ok(None) => {}
            Err(e) => tracing::warn!(tenant = tenant.id, cause = %e, "demo agents"),
        }
    }
    while let Some(ended) = tenants.join_next().await {
        if let Ok(Err(e)) = ended {
            tracing::warn!(cause = %e, "demo agents");
        }
    }
}

/// The online machines of `tenant` under diagnosis (with a NetDiag state and the module).
async fn online_diagnosed(stores: &Stores, tenant: &str) -> Result<Vec<Machine>, StoreError> {
    use netops_netdiag::model::{MACHINES, STATES};
    let hosts: Vec<String> = stores
        .docs
        .read_all(tenant, STATES, &Filter::all())
        .await?
        .items
        .into_iter()
        .map(|d| d.key)
        .collect();
    let wanted = Filter::all()
        .and(Pred::Has("modules", json!("netdiag")))
        .and(Pred::Eq("status", json!("online")));
    let mut machines: Vec<Machine> = stores
        .docs
        .get_many(tenant, MACHINES, &hosts)
        .await?
        .into_iter()
        .filter(|d| wanted.matches(&d.body))
        .filter_map(|d| {
            let m: netops_fleet::Machine = serde_json::from_value(d.body).ok()?;
            Some(Machine {
                hostname: m.hostname,
                ip: m.ip,
                os: m.os,
                agent_version: m.agent_version,
                modules: m.modules,
            })
        })
        .collect();
    machines.sort_by(|a, b| a.hostname.cmp(&b.hostname));
    machines.truncate(DEMO_AGENTS_MAX);
    Ok(machines)
}
