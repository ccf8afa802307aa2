//! The comparison of a deployment with its profile, item by item: what
//! `GET /profiles/deployments/{id}/compare` answers, and what a deployment's state is made of
//! when its deployments are written.

use serde_json::Value;

use crate::model::*;

/// Every item of `profile` compared with what the agent observed for `d`, and their count per
/// result.
pub fn compare(profile: &ProfileDoc, d: &DeploymentDoc) -> (Vec<ItemComparison>, CompareSummary) {
    let items: Vec<ItemComparison> = profile.items.iter().map(|i| compare_item(i, d)).collect();
    let mut summary = CompareSummary::default();
    for i in &items {
        match i.result {
            CompareResult::Conforme => summary.conforme += 1,
            CompareResult::Modifie => summary.modifie += 1,
            CompareResult::Absent => summary.absent += 1,
            CompareResult::NonDeploye => summary.non_deploye += 1,
            CompareResult::Indetermine => summary.indetermine += 1,
        }
    }
    (items, summary)
}

/// Compares one item of the profile with what the agent observed.
fn compare_item(item: &ProfileItem, d: &DeploymentDoc) -> ItemComparison {
    let mut out = ItemComparison {
        key: item.key.clone(),
        kind: item.kind,
        target: item.target.clone(),
        // Every path below sets the result.
        result: CompareResult::Indetermine,
        field: None,
        expected: None,
        actual: None,
        differences: Vec::new(),
        detail: None,
    };
    let verdict = |o: &mut ItemComparison, r: CompareResult, detail: Option<String>| {
        o.result = r;
        o.detail = detail;
    };
    if item.since_version > d.profile_version {
        verdict(
            &mut out,
            CompareResult::NonDeploye,
            Some(format!(
                "ajouté en version {} ; version {} déployée",
                item.since_version, d.profile_version
            )),
        );
        return out;
    }
    let observed: Option<Observed> = d
        .observed
        .get(&item.key)
        .and_then(|v| serde_json::from_value(v.clone()).ok());
    let Some(observed) = observed else {
        let why = if d.observed_at.is_none() {
            "aucun relevé de l'agent pour ce déploiement"
        } else {
            "élément absent du dernier relevé de l'agent"
        };
        verdict(&mut out, CompareResult::Indetermine, Some(why.into()));
        return out;
    };
    if let Some(err) = observed.error {
        verdict(&mut out, CompareResult::Indetermine, Some(err));
        return out;
    }
    match observed.present {
        Some(false) => verdict(&mut out, CompareResult::Absent, None),
        None => verdict(
            &mut out,
            CompareResult::Indetermine,
            Some("présence non rapportée".into()),
        ),
        Some(true) => {
            for (field, expected) in &item.expected {
                let actual = observed.fields.get(field).cloned().unwrap_or(Value::Null);
                if &actual != expected {
                    out.differences.push(Difference {
                        field: field.clone(),
                        expected: expected.clone(),
                        actual,
                    });
                }
            }
            if let Some(first) = out.differences.first() {
                out.field = Some(first.field.clone());
                out.expected = Some(first.expected.clone());
                out.actual = Some(first.actual.clone());
                out.result = CompareResult::Modifie;
            } else {
                out.result = CompareResult::Conforme;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use chrono::{DateTime, Utc};
    use serde_json::json;

    use super::*;

    fn at(s: &str) -> DateTime<Utc> {
        s.parse().unwrap_or_default()
    }

    #[test]
    fn items_compare_to_every_result() {
        let item = |key: &str, since: u32| ProfileItem {
            key: key.into(),
            kind: ItemType::Service,
            target: "svc".into(),
            since_version: since,
            expected: json!({"state": "running", "start_mode": "auto"})
                .as_object()
                .cloned()
                .unwrap_or_default(),
        };
        let dep = DeploymentDoc {
            id: 1,
            profile_id: 1,
            profile_version: 2,
            hostname: "h".into(),
            deployed_at: at("2026-11-01T00:00:00Z"),
            deployed_by: "x".into(),
            status: DeploymentStatus::Deployed,
            observed_at: Some(at("2026-11-22T00:00:00Z")),
            observed: json!({
                "ok": {"present": true, "fields": {"state": "running", "start_mode": "auto"}},
                "changed": {"present": true, "fields": {"state": "stopped", "start_mode": "auto"}},
                "gone": {"present": false},
                "err": {"error": "accès refusé"},
            })
            .as_object()
            .cloned()
            .unwrap_or_default(),
        };
        assert_eq!(
            compare_item(&item("ok", 1), &dep).result,
            CompareResult::Conforme
        );
        let changed = compare_item(&item("changed", 1), &dep);
        assert_eq!(changed.result, CompareResult::Modifie);
        assert_eq!(changed.field.as_deref(), Some("state"));
        assert_eq!(changed.expected, Some(json!("running")));
        assert_eq!(changed.actual, Some(json!("stopped")));
        assert_eq!(
            compare_item(&item("gone", 1), &dep).result,
            CompareResult::Absent
        );
        assert_eq!(
            compare_item(&item("err", 1), &dep).result,
            CompareResult::Indetermine
        );
        assert_eq!(
            compare_item(&item("unreported", 1), &dep).result,
            CompareResult::Indetermine
        );
        assert_eq!(
            compare_item(&item("ok", 3), &dep).result,
            CompareResult::NonDeploye
        );
    }
}
