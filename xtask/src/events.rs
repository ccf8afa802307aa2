//! `cargo xtask routes` also writes the API Gateway event of each route that has none,
//! `events/<function>/<operation id>.json` (`tests/api/events.rs` runs every event through
//! its function and wants one per route). An event already there is never rewritten: it is
//! an example request, whose query and body its author chose.
//!
//! A new event is a `GET` (or the route's method) of the route's path without a query; each
//! path parameter takes the value of another event of the same resource (the same path up to
//! the parameter), or stays `{name}` for its author to fill. A write carries an empty JSON
//! body and an idempotency key.

use std::collections::BTreeMap;
use std::path::Path;

use http::Method;
use netops_routes::{Access, BASE_PATH, Kind, Match, ROUTES, Route, find};

use crate::routes::Error;

/// An event to write, relative to the workspace root.
#[derive(Debug)]
pub struct NewEvent {
    pub path: String,
    pub text: String,
}

/// The events the routes lack, read from the workspace at `root`: a route has one when an
/// event of `events/` is a request to it (whatever the file's name).
pub fn missing(root: &Path) -> Result<Vec<NewEvent>, Error> {
    let events = read_events(&root.join("events"))?;
    // The route's path up to a parameter (`/machines/{hostname}`) → its value in an event.
    let mut known = BTreeMap::new();
    for (route, path) in &events {
        let template: Vec<&str> = route.path.split('/').collect();
        let actual: Vec<&str> = path.split('/').collect();
        for (i, segment) in template.iter().enumerate() {
            if segment.starts_with('{') && actual.len() == template.len() {
                known
                    .entry(template[..=i].join("/"))
                    .or_insert_with(|| actual[i].to_owned());
            }
        }
    }
    Ok(ROUTES
        .iter()
        .filter(|r| !events.iter().any(|(e, _)| e.op == r.op))
        .map(|r| NewEvent {
            path: format!("events/{}/{}.json", r.function.name(), r.op),
            text: event(r, &known),
        })
        .collect())
}

/// Each event's route and path (below the base). An event that is no request to a route is
/// left to the test that runs them.
fn read_events(dir: &Path) -> Result<Vec<(&'static Route, String)>, Error> {
    let read = |p: &Path| std::fs::read_dir(p).map_err(|e| Error(format!("{}: {e}", p.display())));
    let mut events = Vec::new();
    for function in read(dir)?.flatten() {
        for file in read(&function.path())?.flatten() {
            let text = std::fs::read_to_string(file.path())
                .map_err(|e| Error(format!("{}: {e}", file.path().display())))?;
            let field = |name: &str| {
                text.split_once(&format!("\"{name}\": \""))
                    .and_then(|(_, rest)| rest.split_once('"'))
                    .map(|(value, _)| value.to_owned())
            };
            let (Some(raw), Some(method)) = (field("rawPath"), field("method")) else {
                continue;
            };
            let (Some(path), Ok(method)) = (
                raw.strip_prefix(BASE_PATH),
                Method::from_bytes(method.as_bytes()),
            ) else {
                continue;
            };
            if let Match::Found(route) = find(&method, path) {
                events.push((route, path.to_owned()));
            }
        }
    }
    Ok(events)
}

/// The event of `route`, as the others are written.
fn event(route: &Route, known: &BTreeMap<String, String>) -> String {
    let template: Vec<&str> = route.path.split('/').collect();
    let path: Vec<String> = template
        .iter()
        .enumerate()
        .map(|(i, segment)| {
            let key = template[..=i].join("/");
            match known.get(&key) {
                Some(value) if segment.starts_with('{') => value.clone(),
                _ => (*segment).to_owned(),
            }
        })
        .collect();
    let path = format!("{BASE_PATH}{}", path.join("/"));
    let method = route.method.as_str();
    let write = route.kind == Kind::Write;
    let token = if route.access == Access::Public {
        String::new()
    } else {
        "    \"authorization\": \"Bearer nop_REPLACEDBYTHETESTWITHAREALTOKEN0000000000\",\n"
            .to_owned()
    };
    let (write_headers, body) = if write {
        (
            format!(
                "    \"idempotency-key\": \"{}\",\n    \"content-type\": \"application/json\",\n",
                idempotency_key(route.op)
            ),
            ",\n  \"body\": \"{}\"",
        )
    } else {
        (String::new(), "")
    };
    format!(
        r#"{{
  "version": "2.0",
  "routeKey": "$default",
  "rawPath": "{path}",
  "rawQueryString": "",
  "headers": {{
    "accept": "application/json",
{write_headers}{token}    "host": "abc123.execute-api.eu-west-3.amazonaws.com",
    "user-agent": "curl/8.5.0",
    "x-forwarded-for": "203.0.113.10",
    "x-forwarded-port": "443",
    "x-forwarded-proto": "https"
  }},
  "requestContext": {{
    "accountId": "123456789012",
    "apiId": "abc123",
    "domainName": "abc123.execute-api.eu-west-3.amazonaws.com",
    "domainPrefix": "abc123",
    "http": {{
      "method": "{method}",
      "path": "{path}",
      "protocol": "HTTP/1.1",
      "sourceIp": "203.0.113.10",
      "userAgent": "curl/8.5.0"
    }},
    "requestId": "JKJaXmPLvHcESHA=",
    "routeKey": "$default",
    "stage": "$default",
    "time": "22/Nov/2026:09:15:42 +0000",
    "timeEpoch": 1795338942000
  }},
  "isBase64Encoded": false{body}
}}
"#
    )
}

/// A UUID-shaped key of its own for each write route, the same on every run.
fn idempotency_key(op: &str) -> String {
    // FNV-1a, 128 bits from two seeds.
    let hash = |seed: u64| {
        op.bytes().fold(seed, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
        })
    };
    let hex = format!(
        "{:016x}{:016x}",
        hash(0xcbf2_9ce4_8422_2325),
        hash(0x8422_2325_cbf2_9ce4)
    );
    format!(
        "{}-{}-4{}-8{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[13..16],
        &hex[17..20],
        &hex[20..32]
    )
}

#[cfg(test)]
mod tests {
    use netops_routes::by_op;

    use super::*;

    fn root() -> std::path::PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
    }

    #[test]
    fn a_new_event_takes_the_parameter_of_its_resource_from_another_event() {
        let known = BTreeMap::from([("/machines/{hostname}".to_owned(), "PAR-LT-0001".to_owned())]);
        let text = event(by_op("get_machine").expect("route"), &known);
        assert!(
            text.contains(r#""rawPath": "/api/v1/machines/PAR-LT-0001","#),
            "{text}"
        );
        assert!(text.contains(r#""method": "GET","#), "{text}");
        assert!(!text.contains("idempotency-key"), "{text}");
        let ack = event(by_op("acknowledge_alert").expect("route"), &BTreeMap::new());
        assert!(
            ack.contains(r#""rawPath": "/api/v1/alerts/{id}/ack","#),
            "{ack}"
        );
        assert!(ack.contains("\"idempotency-key\": \""), "{ack}");
        assert!(ack.ends_with("\"isBase64Encoded\": false,\n  \"body\": \"{}\"\n}\n"));
        let docs = event(by_op("get_docs").expect("route"), &BTreeMap::new());
        assert!(!docs.contains("authorization"), "{docs}");
    }

    #[test]
    fn every_route_has_its_event_and_one_taken_away_is_written_anew() {
        assert!(missing(&root()).expect("events").is_empty());
        let dir = tempfile_dir();
        copy(&root().join("events"), &dir.join("events"));
        for gone in ["fleet/get_machine", "alerts/list_monitor_incidents"] {
            std::fs::remove_file(dir.join(format!("events/{gone}.json"))).expect("remove");
        }
        let new = missing(&dir).expect("events");
        let paths: Vec<&str> = new.iter().map(|e| e.path.as_str()).collect();
        assert_eq!(
            paths,
            [
                "events/fleet/get_machine.json",
                "events/alerts/list_monitor_incidents.json"
            ]
        );
        // No other event names a machine of the fleet (NetDiag's machines are another
        // resource): the parameter is left for the author; a monitor's is `get_monitor`'s.
        assert!(new[0].text.contains("\"/api/v1/machines/{hostname}\""));
        assert!(new[1].text.contains("\"/api/v1/monitors/1001/incidents\""));
        std::fs::remove_dir_all(&dir).expect("clean up");
    }

    fn tempfile_dir() -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("xtask-events-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        dir
    }

    fn copy(from: &Path, to: &Path) {
        std::fs::create_dir_all(to).expect("dir");
        for entry in std::fs::read_dir(from).expect("read").flatten() {
            let target = to.join(entry.file_name());
            if entry.path().is_dir() {
                copy(&entry.path(), &target);
            } else {
                std::fs::copy(entry.path(), target).expect("copy");
            }
        }
    }
}
