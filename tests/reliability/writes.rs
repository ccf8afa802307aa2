//! Writes under concurrency: partial settings changes of one machine made at the same time
//! all apply (docs/writes.md#netdiag-settings: settings changes never answer 409).

use serde_json::{Value, json};

use crate::served::Serve;

/// The boolean settings and their defaults (docs/writes.md#netdiag-settings).
const SWITCHES: [(&str, bool); 11] = [
    ("traceOnIncident", true),
    ("captureOnIncident", false),
    ("autoWatchApps", true),
    ("flowsEnabled", true),
    ("foregroundEnabled", false),
    ("foregroundTitles", false),
    ("fileEventsEnabled", false),
    ("fileIncludeAppData", false),
    ("installEventsEnabled", false),
    ("processEventsEnabled", false),
    ("windowsEventsEnabled", false),
];

#[tokio::test]
async fn forty_concurrent_settings_changes_of_one_machine_all_apply() {
    let served = Serve::seeded().start();
    let http = reqwest::Client::new();
    let host = crate::netdiag_host(&http, &served).await;
    let url = format!("{}/netdiag/machines/{host}/settings", served.base);
    let mut calls = tokio::task::JoinSet::new();
    for i in 0..40 {
        let (key, default) = SWITCHES[i % SWITCHES.len()];
        let request = http
            .put(&url)
            .bearer_auth(&served.token)
            .json(&json!({ key: !default }));
        calls.spawn(async move { request.send().await.expect("put").status().as_u16() });
    }
    let mut statuses = Vec::new();
    while let Some(status) = calls.join_next().await {
        statuses.push(status.expect("task"));
    }
    assert!(
        statuses.iter().all(|s| *s == 200),
        "every partial change applies: {statuses:?}"
    );
    // An empty partial update answers the settings as they are: every switch changed.
    let now: Value = http
        .put(&url)
        .bearer_auth(&served.token)
        .json(&json!({}))
        .send()
        .await
        .expect("put")
        .json()
        .await
        .expect("json");
    for (key, default) in SWITCHES {
        assert_eq!(now["data"][key], json!(!default), "{key}: {now}");
    }
}
