//! A full disk: writes are refused with a JSON 503 and change nothing, reads go on, and
//! writes resume once space is back (docs/writes.md#atomicity-and-faults).

use std::io::Write;
use std::process::Command;
use std::sync::Arc;

use serde_json::{Value, json};

use crate::served::Serve;

/// A small tmpfs mounted for the test, unmounted when dropped.
struct Tmpfs(tempfile::TempDir);

impl Tmpfs {
    /// `None` when this machine does not let the test mount one (not root, no namespace).
    fn mount(megabytes: u32) -> Option<Tmpfs> {
        let dir = tempfile::tempdir().expect("tempdir");
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={megabytes}m"), "tmpfs"])
            .arg(dir.path())
            .status()
            .is_ok_and(|s| s.success());
        ok.then_some(Tmpfs(dir))
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(self.0.path()).status();
    }
}

/// Fills the file system of `path` with one file until it refuses a byte more.
fn fill(path: &std::path::Path) -> std::path::PathBuf {
    let filler = path.join("filler");
    let mut f = std::fs::File::create(&filler).expect("filler");
    let chunk = vec![0u8; 64 * 1024];
    while f.write_all(&chunk).is_ok() {}
    let byte = [0u8; 1];
    while f.write_all(&byte).is_ok() {}
    filler
}

#[tokio::test]
async fn a_full_disk_refuses_writes_with_503_changes_nothing_and_recovers() {
    // The demo file takes about 95 MB; the rest of the mount is filled by the test.
    let Some(mount) = Tmpfs::mount(192) else {
        eprintln!(
            "reliability: no tmpfs can be mounted here; the store-failure path is covered by \
             the injected DynamoDB failures"
        );
        return;
    };
    let dir = Arc::new(tempfile::tempdir_in(mount.0.path()).expect("tempdir"));
    let served = Serve::seeded().in_dir(dir.clone()).start();
    let http = reqwest::Client::new();
    let host = crate::netdiag_host(&http, &served).await;
    let settings = format!("{}/netdiag/machines/{host}/settings", served.base);
    let put = |apps: Value| {
        http.put(&settings)
            .bearer_auth(&served.token)
            .json(&json!({ "apps": apps }))
            .send()
    };
    assert_eq!(put(json!(["before.exe"])).await.expect("put").status(), 200);

    // SQLite goes on writing into the space its write-ahead log already holds, so writes
    // may still succeed for a while: write (ten long names each) until the first refusal.
    let filler = fill(dir.path());
    let apps = |tag: &str| -> Value {
        (0..10)
            .map(|k| json!(format!("{tag}-{k}-{}.exe", "x".repeat(80))))
            .collect()
    };
    let mut accepted = 0;
    let mut refused = 0;
    let mut last_accepted = json!(["before.exe"]);
    for i in 0..5000 {
        let tag = format!("full{i}");
        let res = put(apps(&tag)).await.expect("put");
        match res.status().as_u16() {
            200 => {
                accepted += 1;
                last_accepted = apps(&tag);
            }
            503 => {
                assert_eq!(res.headers()["content-type"], "application/json");
                assert!(res.headers().contains_key("retry-after"));
                let body: Value = res.json().await.expect("json");
                assert_eq!(body["error"], "service_unavailable", "{body}");
                refused += 1;
                if refused == 20 {
                    break;
                }
            }
            other => panic!("a write on a full disk answers 200 or 503, not {other}"),
        }
    }
    assert!(refused > 0, "the full disk refused a write within 5,000");
    let read = http
        .get(format!("{}/machines?limit=5", served.base))
        .bearer_auth(&served.token)
        .send()
        .await
        .expect("read");
    assert_eq!(read.status(), 200, "reads go on while the disk is full");

    // Nothing refused reached the state: an empty update answers the last accepted one.
    let empty = http
        .put(&settings)
        .bearer_auth(&served.token)
        .json(&json!({}))
        .send()
        .await
        .expect("put");
    if empty.status() == 200 {
        let now: Value = empty.json().await.expect("json");
        assert_eq!(now["data"]["apps"], last_accepted);
    }

    std::fs::remove_file(filler).expect("free the disk");
    let res = put(json!(["after.exe"])).await.expect("put");
    assert_eq!(res.status(), 200, "writes resume once space is back");
    let log = crate::served::netops(&["writes", "--tenant", "acme"], &served.db);
    let log: Vec<Value> = String::from_utf8_lossy(&log.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON object per line"))
        .collect();
    let changes: Vec<&Value> = log
        .iter()
        .filter(|e| e["status"] == 200 && e["body"]["apps"].is_array())
        .map(|e| &e["body"]["apps"])
        .collect();
    assert_eq!(
        changes.len(),
        accepted + 2,
        "every accepted write is logged, no refused one"
    );
    assert_eq!(changes[changes.len() - 2], &last_accepted);
    eprintln!(
        "reliability: full disk: {accepted} writes went into space already held, then \
         {refused} refused with 503 and nothing changed; reads served; writes resumed"
    );
}
