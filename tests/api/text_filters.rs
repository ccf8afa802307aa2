//! Text filters (`q`, `user`, `host`, `path`, `domain`, `login`, `process`, `destination`):
//! case-insensitive with Unicode case folding on every store, and the searched text taken
//! literally (quotes, backslashes, `%` and `_` are no wildcards).

use netops_shared::routes::Function;
use netops_shared::scope::Scope;
use serde_json::{Value, json};

use crate::helpers::{TestApp, walk};

fn encoded(text: &str) -> String {
    form_urlencoded::byte_serialize(text.as_bytes()).collect()
}

#[tokio::test]
async fn netdiag_events_match_french_capitals_whatever_the_case_asked() {
    let app = TestApp::shared();
    let token = app.token("acme", &[Scope::ReadNetdiag]).await;
    let base = "/netdiag/machines/PAR-WS-0001/events?period=30d&limit=1000";
    let all = walk(app, base, &token).await;
    let ids = |events: &[Value]| -> Vec<String> {
        events
            .iter()
            .map(|e| e["id"].as_str().unwrap_or_default().to_owned())
            .collect()
    };
    let message = |e: &Value| e["message"].as_str().unwrap_or_default().to_owned();
    let expected: Vec<Value> = all
        .iter()
        .filter(|e| message(e).to_lowercase().contains("échec"))
        .cloned()
        .collect();
    assert!(
        expected.iter().any(|e| message(e).contains("Échec"))
            && expected.iter().any(|e| message(e).contains("échec")),
        "the demo machine has events with both É and é: {expected:?}"
    );
    for q in ["Échec", "échec", "ÉCHEC", "éCHEC"] {
        let found = walk(app, &format!("{base}&q={}", encoded(q)), &token).await;
        assert_eq!(ids(&found), ids(&expected), "q={q}");
    }
}

/// A catalogue entry of the inventory's software list, as the seeder writes them.
fn software(id: i64, name: &str, publisher: &str) -> (String, Value) {
    (
        format!("zz-{id}"),
        json!({
            "id": id,
            "name": name,
            "publisher": publisher,
            "version": "1.0",
            "install_count": 1,
            "eol_status": "unknown",
            "eol_date": null,
            "cve_count": 0,
            "max_cvss": null
        }),
    )
}

#[tokio::test]
async fn text_filters_fold_accented_capitals_and_take_quotes_backslashes_and_wildcards_literally() {
    let app = TestApp::with_modules(&[Function::Inventory]).await;
    let token = app.token("acme", &[Scope::ReadInventory]).await;
    let names = [
        "À LA CARTE Suite",
        "ÇA MARCHE Pro",
        "ŒUVRE Manager",
        "Ÿ ÆTHER Ǆ Tool",
        "Say \"Hi\" Tool",
        "It's Tool",
        r"C:\Program Files\Back Up",
        "100% Sure",
        "100 Sure",
        "snake_case util",
        "snakeXcase util",
    ];
    let docs = names
        .iter()
        .enumerate()
        .map(|(i, n)| software(900_000 + i as i64, n, "Éditeur Spécial"))
        .collect();
    app.stores
        .docs
        .put("acme", "inventory_software", docs)
        .await
        .expect("put");
    // Another tenant's entry that every query below would match: it must never show.
    app.stores
        .docs
        .put(
            "globex",
            "inventory_software",
            vec![software(
                1,
                "à la carte ça œuvre \"hi\" it's \\back 0% e_c",
                "x",
            )],
        )
        .await
        .expect("put");
    for (q, want) in [
        ("à la", vec!["À LA CARTE Suite"]),
        ("À La CaRtE", vec!["À LA CARTE Suite"]),
        ("ça", vec!["ÇA MARCHE Pro"]),
        ("çA mArChE", vec!["ÇA MARCHE Pro"]),
        ("œuvre", vec!["ŒUVRE Manager"]),
        ("ŒUVRE", vec!["ŒUVRE Manager"]),
        ("ÿ æther ǆ", vec!["Ÿ ÆTHER Ǆ Tool"]),
        ("\"hi\"", vec!["Say \"Hi\" Tool"]),
        ("it's", vec!["It's Tool"]),
        (r"\back", vec![r"C:\Program Files\Back Up"]),
        (r"c:\program", vec![r"C:\Program Files\Back Up"]),
        ("0%", vec!["100% Sure"]),
        ("%", vec!["100% Sure"]),
        ("e_c", vec!["snake_case util"]),
        ("_", vec!["snake_case util"]),
        // The publisher is searched too, folded the same way.
        ("ÉDITEUR SPÉCIAL", names.to_vec()),
    ] {
        let found = walk(
            &app,
            &format!("/inventory/software?limit=1000&q={}", encoded(q)),
            &token,
        )
        .await;
        let mut got: Vec<&str> = found.iter().filter_map(|s| s["name"].as_str()).collect();
        got.sort_unstable();
        let mut want = want.clone();
        want.sort_unstable();
        assert_eq!(got, want, "q={q}");
    }
}
