//! A tenant's offboarding through the CLI, as an operator runs it on either store:
//! `netops tenant export` (stopped and run again, to a file or to stdout), then `netops tenant
//! delete --export FILE`, which checks the export is whole before deleting
//! (docs/cli.md#tenant-export).

use std::collections::BTreeSet;

use netops_shared::config::DEFAULT_RETENTION_DAYS;
use netops_shared::store::{Stores, WriteLogEntry};
use netops_store_dynamodb::DynamoConfig;
use netops_store_dynamodb::DynamoStore;
use netops_store_sqlite::SqliteStore;
use serde_json::{Value, json};

use crate::helpers::rand_u64;
use crate::serve::served::{Store, create_token_on, netops_ok, netops_on};

const LEAVER: &str = "leaver";
const STAYER: &str = "stayer";
const DOCS: usize = 7;

/// Each tenant's token (made with the CLI), documents and a write-log entry, each marked with
/// its tenant.
async fn fill(store: &Store, stores: &Stores) {
    for tenant in [LEAVER, STAYER] {
        create_token_on(store, tenant, &["--name", "ci", "--scopes", "all"]);
        let docs = (0..DOCS)
            .map(|i| {
                (
                    format!("m{i}"),
                    json!({"marker": format!("{tenant}-doc-{i}")}),
                )
            })
            .collect();
        stores
            .docs
            .put(tenant, "machines", docs)
            .await
            .expect("put");
        let entry = WriteLogEntry {
            tenant: tenant.into(),
            at: chrono::Utc::now(),
            request_id: format!("{tenant}-write"),
            token_name: "ci".into(),
            method: "POST".into(),
            path: "/api/v1/alerts/1/ack".into(),
            body: json!({"note": format!("{tenant}-write")}),
            status: 200,
            expires_at: chrono::Utc::now().timestamp() + 86_400,
            ..WriteLogEntry::default()
        };
        stores.writes.commit(entry, vec![]).await.expect("log");
    }
}

fn export(store: &Store, tenant: &str, more: &[&str]) -> std::process::Output {
    netops_on(
        &[
            &["tenant", "export", "--tenant", tenant, "--rate", "100000"],
            more,
        ]
        .concat(),
        store,
    )
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The lines of an export: header, items (with their tables), end.
fn parse(text: &str) -> (Value, Vec<Value>, BTreeSet<String>, Value) {
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON object per line"))
        .collect();
    let items: Vec<Value> = lines
        .iter()
        .filter(|l| l.get("table").is_some())
        .cloned()
        .collect();
    let tables = items
        .iter()
        .map(|l| l["table"].as_str().expect("table").to_owned())
        .collect();
    (
        lines[0].clone(),
        items,
        tables,
        lines[lines.len() - 1].clone(),
    )
}

/// How many of `items` hold `marker`.
fn holding(items: &[Value], marker: &str) -> usize {
    items
        .iter()
        .filter(|i| i.to_string().contains(marker))
        .count()
}

fn listed(store: &Store) -> Vec<String> {
    netops_ok(&["tenant", "list"], store)
        .lines()
        .skip(1)
        .map(|l| l.split('\t').next().unwrap_or_default().to_owned())
        .collect()
}

/// The whole offboarding on `store`, whose export holds items of `tables`.
async fn offboarding(store: Store, stores: Stores, kind: &str, tables: &[&str]) {
    fill(&store, &stores).await;
    let dir = tempfile::tempdir().expect("dir");
    let file = dir.path().join("leaver.ndjson");
    let path = file.to_str().expect("utf8 path");

    // No delete without an export, or without saying there is none.
    let refused = netops_on(&["tenant", "delete", "--tenant", LEAVER, "--yes"], &store);
    assert_eq!(refused.status.code(), Some(2));
    assert!(
        stderr(&refused).contains("netops tenant export"),
        "{}",
        stderr(&refused)
    );

    // Stopped after 3 items: a stopped export, which delete refuses.
    let part = export(&store, LEAVER, &["--output", path, "--max-items", "3"]);
    assert!(part.status.success(), "{}", stderr(&part));
    assert!(
        stderr(&part).contains("run again on the same file"),
        "{}",
        stderr(&part)
    );
    let (_, first, _, last) = parse(&std::fs::read_to_string(&file).expect("export"));
    assert!(first.len() <= 3 && last.get("end").is_none(), "{last}");
    let early = netops_on(
        &[
            "tenant", "delete", "--tenant", LEAVER, "--export", path, "--yes",
        ],
        &store,
    );
    assert_eq!(early.status.code(), Some(2));
    assert!(
        stderr(&early).contains("stopped export"),
        "{}",
        stderr(&early)
    );

    // Run again: it goes on where it stopped, every item once.
    let rest = export(&store, LEAVER, &["--output", path]);
    assert!(rest.status.success(), "{}", stderr(&rest));
    let (header, items, seen, end) = parse(&std::fs::read_to_string(&file).expect("export"));
    assert_eq!(header["tenant"], LEAVER);
    assert_eq!(header["store"], kind);
    assert_eq!(end["end"], true);
    assert_eq!(end["items"].as_u64(), Some(items.len() as u64));
    for i in 0..DOCS {
        assert_eq!(
            holding(&items, &format!("{LEAVER}-doc-{i}")),
            1,
            "doc {i}: {items:?}"
        );
    }
    assert_eq!(holding(&items, &format!("{LEAVER}-write")), 1, "{items:?}");
    assert_eq!(holding(&items, STAYER), 0, "another tenant's item exported");
    let expected: BTreeSet<String> = tables.iter().map(|t| (*t).to_owned()).collect();
    assert_eq!(seen, expected);
    // A complete export is not written over.
    let again = export(&store, LEAVER, &["--output", path]);
    assert_eq!(again.status.code(), Some(1));
    assert!(
        stderr(&again).contains("already a complete export"),
        "{}",
        stderr(&again)
    );
    // Nor taken for another tenant's.
    let wrong = netops_on(
        &[
            "tenant", "delete", "--tenant", STAYER, "--export", path, "--yes",
        ],
        &store,
    );
    assert_eq!(wrong.status.code(), Some(2));

    let deleted = netops_on(
        &[
            "tenant", "delete", "--tenant", LEAVER, "--export", path, "--yes", "--rate", "100000",
        ],
        &store,
    );
    assert!(deleted.status.success(), "{}", stderr(&deleted));
    assert!(
        stderr(&deleted).contains(&format!(
            "complete export of tenant '{LEAVER}' ({} items)",
            items.len()
        )),
        "{}",
        stderr(&deleted)
    );
    assert_eq!(listed(&store), [STAYER]);
    assert!(
        stores
            .docs
            .get(LEAVER, "machines", "m0")
            .await
            .expect("get")
            .is_none()
    );
    assert!(
        stores
            .docs
            .get(STAYER, "machines", "m0")
            .await
            .expect("get")
            .is_some()
    );

    // To stdout: the other tenant's, whole.
    let (header, items, _, end) = parse(&netops_ok(
        &["tenant", "export", "--tenant", STAYER],
        &store,
    ));
    assert_eq!(header["tenant"], STAYER);
    assert_eq!(end["items"].as_u64(), Some(items.len() as u64));
    assert_eq!(holding(&items, &format!("{STAYER}-doc-")), DOCS);
}

#[tokio::test]
async fn a_tenant_exported_in_two_runs_is_deleted_with_its_export_on_the_embedded_store() {
    let dir = tempfile::tempdir().expect("dir");
    let db = dir.path().join("netops.db");
    let stores = Stores::of(SqliteStore::open(&db).expect("open"));
    offboarding(
        Store::File(db),
        stores,
        "embedded",
        &["docs", "tokens", "writes"],
    )
    .await;
}

#[tokio::test]
async fn a_tenant_exported_in_two_runs_is_deleted_with_its_export_on_dynamodb() {
    let Some(endpoint) = crate::aws::endpoint() else {
        return;
    };
    let prefix = format!("x{:016x}-", rand_u64());
    let tables = DynamoStore::connect(
        &DynamoConfig {
            table_prefix: prefix.clone(),
            endpoint: Some(endpoint.clone()),
            region: Some("us-east-1".into()),
            token_cache_secs: 0,
            ..DynamoConfig::default()
        },
        DEFAULT_RETENTION_DAYS,
    )
    .await
    .expect("connect");
    tables.ensure_tables().await.expect("tables");
    let store = Store::Dynamodb { endpoint, prefix };
    offboarding(store, Stores::of(tables), "dynamodb", &["control", "data"]).await;
}
