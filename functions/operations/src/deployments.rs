//! The writers of profile deployments, and of what is kept with them so that no answer reads
//! them all: each profile's deployments as the answers show them, in the order they are shown
//! ([`ranked_collection`]), and their count per state ([`DEPLOYMENT_COUNTS`]). The demo seed
//! writes a profile's deployments all at once ([`put`]); the collection writes what the
//! agents report of them ([`record`]).
//!
//! A deployment's state is its comparison with its profile when it is written: a new version
//! of a profile changes its deployments' states, so writing one means writing them again.
//! A deployment whose state changes moves in its ranked collection: the document port has no
//! delete, so its old entry is marked [`MOVED`] and the reads skip it.

use std::collections::{BTreeMap, HashMap};

use netops_shared::auth::sha256_hex;
use netops_shared::collect::Batch;
use netops_shared::store::{Documents, Filter, StoreError, StoreResult};
use serde_json::{Value, json};

use crate::compare::compare;
use crate::model::*;

/// Where a deployment stands, from its outcome and its comparison with its profile: the
/// worst of what its items show.
fn state_of(profile: &ProfileDoc, d: &DeploymentDoc) -> DeploymentState {
    if d.status == DeploymentStatus::Failed {
        return DeploymentState::Failed;
    }
    let (_, summary) = compare(profile, d);
    if summary.modifie + summary.absent > 0 {
        DeploymentState::Drifted
    } else if summary.indetermine > 0 || d.observed_at.is_none() {
        DeploymentState::Unverified
    } else if d.profile_version < profile.version {
        DeploymentState::Outdated
    } else {
        DeploymentState::Compliant
    }
}

/// The key of a deployment in its profile's ranked collection: its state's rank (problems
/// first), then its machine's name, then its id (a machine could hold two deployments).
fn ranked_key(d: &Deployment) -> String {
    format!("{}|{}|{}", d.state as u8, d.hostname, num_key(d.id))
}

/// A deployment as the answers show it: without what the agent observed.
fn shown(d: &DeploymentDoc, state: DeploymentState) -> Deployment {
    Deployment {
        id: d.id,
        profile_id: d.profile_id,
        profile_version: d.profile_version,
        hostname: d.hostname.clone(),
        deployed_at: d.deployed_at,
        deployed_by: d.deployed_by.clone(),
        status: d.status,
        observed_at: d.observed_at,
        state,
    }
}

impl DeploymentCounts {
    fn add(&mut self, state: DeploymentState) {
        self.total += 1;
        *match state {
            DeploymentState::Failed => &mut self.failed,
            DeploymentState::Drifted => &mut self.drifted,
            DeploymentState::Unverified => &mut self.unverified,
            DeploymentState::Outdated => &mut self.outdated,
            DeploymentState::Compliant => &mut self.compliant,
        } += 1;
    }
}

fn json<T: serde::Serialize>(v: &T) -> StoreResult<Value> {
    serde_json::to_value(v).map_err(|e| StoreError::Data(e.to_string()))
}

/// Writes the deployments of `profiles` (each naming one of them), each profile's ranked
/// deployments, and every profile's counts (zero for a profile deployed nowhere).
pub async fn put(
    docs: &dyn Documents,
    tenant: &str,
    profiles: &[ProfileDoc],
    deployments: Vec<DeploymentDoc>,
) -> StoreResult<()> {
    let by_id: HashMap<i64, &ProfileDoc> = profiles.iter().map(|p| (p.id, p)).collect();
    let mut ranked: HashMap<i64, Vec<(String, Value)>> = HashMap::new();
    let mut counts: HashMap<i64, DeploymentCounts> = profiles
        .iter()
        .map(|p| (p.id, DeploymentCounts::default()))
        .collect();
    let mut full = Vec::with_capacity(deployments.len());
    for d in deployments {
        let profile = by_id.get(&d.profile_id).ok_or_else(|| {
            StoreError::Data(format!("deployment {} of no profile written", d.id))
        })?;
        let state = state_of(profile, &d);
        let entry = shown(&d, state);
        ranked
            .entry(d.profile_id)
            .or_default()
            .push((ranked_key(&entry), json(&entry)?));
        counts.entry(d.profile_id).or_default().add(state);
        full.push((num_key(d.id), json(&d)?));
    }
    docs.put(tenant, DEPLOYMENTS, full).await?;
    for (profile_id, entries) in ranked {
        docs.put(tenant, &ranked_collection(profile_id), entries)
            .await?;
    }
    let counts = counts
        .iter()
        .map(|(id, c)| Ok((num_key(*id), json(c)?)))
        .collect::<StoreResult<Vec<_>>>()?;
    docs.put(tenant, DEPLOYMENT_COUNTS, counts).await
}

/// The id of the deployment of profile `profile` on machine `hostname` that a report makes:
/// made of both, so that the same report sent again finds it (53 bits, a JSON number).
fn new_id(profile: i64, hostname: &str) -> i64 {
    let digest = sha256_hex(format!("{profile}/{hostname}").as_bytes());
    i64::from_str_radix(&digest[..13], 16).unwrap_or(0)
}

/// Records the deployments of `profile` as the agents report them (`reports`, one a machine,
/// each with what was observed: `id` is ignored): a machine's deployment is the one the
/// profile's ranked collection shows for it, or one made (id [`new_id`]). A report not newer
/// than the deployment's last observation leaves it as it is. Then each reported deployment
/// takes its place in the ranked collection (its old one [`MOVED`]) and the profile's counts
/// are those of the collection: written again from what is stored, so that a batch stopped
/// half-way writes them when sent again.
pub async fn record(
    batch: &Batch<'_>,
    profile: &ProfileDoc,
    reports: Vec<DeploymentDoc>,
) -> StoreResult<()> {
    let docs = batch.stores.docs.as_ref();
    let ranked = ranked_collection(profile.id);
    // The collection as stored: each entry's state, each machine's deployment, each
    // deployment's keys.
    let mut states: BTreeMap<String, DeploymentState> = BTreeMap::new();
    let mut by_host: HashMap<String, i64> = HashMap::new();
    let mut keys_of: HashMap<i64, Vec<String>> = HashMap::new();
    for e in docs
        .read_all(batch.tenant, &ranked, &Filter::all())
        .await?
        .items
    {
        if e.body.get(MOVED).is_some() {
            continue;
        }
        let d: Deployment =
            serde_json::from_value(e.body).map_err(|e| StoreError::Data(e.to_string()))?;
        states.insert(e.key.clone(), d.state);
        by_host.insert(d.hostname, d.id);
        keys_of.entry(d.id).or_default().push(e.key);
    }
    let mut entries = Vec::with_capacity(reports.len());
    for mut report in reports {
        report.id = by_host
            .get(&report.hostname)
            .copied()
            .unwrap_or_else(|| new_id(profile.id, &report.hostname));
        let key = num_key(report.id);
        let written = batch
            .update_doc(DEPLOYMENTS, &key, |stored| {
                let stored: Option<DeploymentDoc> = stored
                    .map(|v| serde_json::from_value(v.clone()))
                    .transpose()
                    .map_err(|e| StoreError::Data(e.to_string()))?;
                if stored
                    .as_ref()
                    .is_some_and(|s| s.observed_at >= report.observed_at)
                {
                    return Ok(None);
                }
                json(&report).map(Some)
            })
            .await?;
        let current = match written {
            Some(body) => body,
            None => docs
                .get(batch.tenant, DEPLOYMENTS, &key)
                .await?
                .map(|d| d.body)
                .ok_or_else(|| StoreError::Data(format!("deployment {key} read, then absent")))?,
        };
        let current: DeploymentDoc =
            serde_json::from_value(current).map_err(|e| StoreError::Data(e.to_string()))?;
        let state = state_of(profile, &current);
        let entry = shown(&current, state);
        let place = ranked_key(&entry);
        for old in keys_of.remove(&current.id).unwrap_or_default() {
            if old != place {
                states.remove(&old);
                entries.push((old, json!({ MOVED: true })));
            }
        }
        states.insert(place.clone(), state);
        entries.push((place, json(&entry)?));
    }
    docs.put(batch.tenant, &ranked, entries).await?;
    let mut counts = DeploymentCounts::default();
    for state in states.into_values() {
        counts.add(state);
    }
    docs.put(
        batch.tenant,
        DEPLOYMENT_COUNTS,
        vec![(num_key(profile.id), json(&counts)?)],
    )
    .await
}

#[cfg(test)]
mod tests {
    use chrono::{DateTime, Utc};
    use serde_json::json;

    use super::*;

    fn at(s: &str) -> DateTime<Utc> {
        s.parse().unwrap_or_default()
    }

    fn profile(version: u32) -> ProfileDoc {
        let item = |key: &str, since: u32| ProfileItem {
            key: key.into(),
            kind: ItemType::Service,
            target: "svc".into(),
            since_version: since,
            expected: json!({"state": "running"})
                .as_object()
                .cloned()
                .unwrap_or_default(),
        };
        ProfileDoc {
            format: "profile/1".into(),
            id: 1,
            name: "p".into(),
            description: String::new(),
            os: ProfileOs::Windows,
            version,
            author: "x".into(),
            created_at: at("2026-10-01T00:00:00Z"),
            updated_at: at("2026-11-01T00:00:00Z"),
            items: vec![item("a", 1), item("b", 2)],
            verification: Verification {
                verified_at: at("2026-11-01T00:00:00Z"),
                result: VerificationResult::Passed,
                trace: Vec::new(),
            },
        }
    }

    fn deployment(version: u32, observed: Option<Value>, failed: bool) -> DeploymentDoc {
        DeploymentDoc {
            id: 1,
            profile_id: 1,
            profile_version: version,
            hostname: "h".into(),
            deployed_at: at("2026-11-01T00:00:00Z"),
            deployed_by: "x".into(),
            status: if failed {
                DeploymentStatus::Failed
            } else {
                DeploymentStatus::Deployed
            },
            observed_at: observed.is_some().then(|| at("2026-11-22T00:00:00Z")),
            observed: observed
                .and_then(|o| o.as_object().cloned())
                .unwrap_or_default(),
        }
    }

    #[test]
    fn a_deployment_stands_at_the_worst_of_its_items() {
        let p = profile(2);
        let ok = json!({"present": true, "fields": {"state": "running"}});
        let both = json!({"a": ok, "b": ok});
        let state = |d: DeploymentDoc| state_of(&p, &d);
        assert_eq!(
            state(deployment(2, Some(both.clone()), false)),
            DeploymentState::Compliant
        );
        assert_eq!(
            state(deployment(2, Some(both.clone()), true)),
            DeploymentState::Failed
        );
        assert_eq!(
            state(deployment(1, Some(json!({"a": ok})), false)),
            DeploymentState::Outdated,
            "what version 1 has is conform"
        );
        assert_eq!(
            state(deployment(2, None, false)),
            DeploymentState::Unverified
        );
        assert_eq!(
            state(deployment(
                2,
                Some(json!({"a": ok, "b": {"error": "refusé"}})),
                false
            )),
            DeploymentState::Unverified
        );
        assert_eq!(
            state(deployment(
                1,
                Some(json!({"a": {"present": false}, "b": {"error": "refusé"}})),
                false
            )),
            DeploymentState::Drifted,
            "a missing item is worse than an unread one or an old version"
        );
    }

    #[test]
    fn ranked_keys_put_problems_first_then_machines_by_name() {
        let p = profile(2);
        let ok = json!({"present": true, "fields": {"state": "running"}});
        let mut keys: Vec<(String, String)> = [
            ("A", deployment(2, Some(json!({"a": ok, "b": ok})), false)),
            ("B", deployment(2, None, true)),
            ("C", deployment(2, Some(json!({"a": ok, "b": ok})), false)),
            (
                "D",
                deployment(2, Some(json!({"a": {"present": false}})), false),
            ),
        ]
        .into_iter()
        .map(|(host, mut d)| {
            d.hostname = host.into();
            let entry = shown(&d, state_of(&p, &d));
            (ranked_key(&entry), entry.hostname)
        })
        .collect();
        keys.sort();
        let hosts: Vec<&str> = keys.iter().map(|(_, h)| h.as_str()).collect();
        assert_eq!(hosts, ["B", "D", "A", "C"]);
    }
}
