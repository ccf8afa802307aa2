//! Settings rules (docs/writes.md#netdiag-settings): partial merge, every key checked.

use netops_shared::ApiError;
use serde_json::{Map, Value};

use crate::model::{SETTINGS_KEYS, Settings};

fn bad(key: &str, fr: &str, en: &str) -> ApiError {
    ApiError::invalid_parameter(key, fr, en).with("admitted_keys", SETTINGS_KEYS.to_vec())
}

/// `host.domain[:port]` or `*.domain[:port]`.
pub fn valid_probe(s: &str) -> bool {
    let (host, port) = match s.rsplit_once(':') {
        Some((h, p)) => (h, Some(p)),
        None => (s, None),
    };
    if let Some(p) = port
        && !(p.len() <= 5
            && p.chars().all(|c| c.is_ascii_digit())
            && p.parse::<u32>().is_ok_and(|n| (1..=65535).contains(&n)))
    {
        return false;
    }
    let (wild, name) = match host.strip_prefix("*.") {
        Some(rest) => (true, rest),
        None => (false, host),
    };
    let labels: Vec<&str> = name.split('.').collect();
    let min_labels = if wild { 1 } else { 2 };
    name.len() <= 253
        && labels.len() >= min_labels
        && labels.iter().all(|l| {
            !l.is_empty()
                && l.len() <= 63
                && !l.starts_with('-')
                && !l.ends_with('-')
                && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
        })
}

/// An executable name: a file name without a path, at most 100 characters.
fn valid_exe(s: &str) -> bool {
    let t = s.trim();
    !t.is_empty()
        && t.len() == s.len()
        && s.chars().count() <= 100
        && !s.chars().any(|c| {
            c.is_control() || matches!(c, '/' | '\\' | ':' | '*' | '?' | '"' | '<' | '>' | '|')
        })
}

fn strings(key: &str, v: &Value, max: usize) -> Result<Vec<String>, ApiError> {
    let arr = v.as_array().ok_or_else(|| {
        bad(
            key,
            "liste de chaînes attendue",
            "expected an array of strings",
        )
    })?;
    if arr.len() > max {
        return Err(bad(
            key,
            &format!("au plus {max} éléments"),
            &format!("at most {max} items"),
        ));
    }
    let out = arr
        .iter()
        .map(|x| x.as_str().map(str::to_owned))
        .collect::<Option<Vec<_>>>()
        .ok_or_else(|| {
            bad(
                key,
                "liste de chaînes attendue",
                "expected an array of strings",
            )
        })?;
    let mut seen = std::collections::HashSet::new();
    if !out.iter().all(|s| seen.insert(s.to_lowercase())) {
        return Err(bad(key, "élément en double", "duplicate item"));
    }
    Ok(out)
}

/// Applies the partial update to `current`; 400 with `admitted_keys` on any bad key or value.
pub fn merge(current: &Settings, body: &Map<String, Value>) -> Result<Settings, ApiError> {
    let mut s = current.clone();
    for (key, v) in body {
        match key.as_str() {
            "apps" => {
                let apps = strings(key, v, 10)?;
                if let Some(b) = apps.iter().find(|a| !valid_exe(a)) {
                    return Err(bad(
                        key,
                        &format!("« {b} » n'est pas un nom d'exécutable"),
                        &format!("'{b}' is not an executable name"),
                    ));
                }
                s.apps = apps;
            }
            "extraProbes" => {
                let probes = strings(key, v, 3)?;
                if let Some(b) = probes.iter().find(|p| !valid_probe(p)) {
                    return Err(bad(
                        key,
                        &format!(
                            "« {b} » n'a pas la forme hôte.domaine[:port] ou *.domaine[:port]"
                        ),
                        &format!("'{b}' is not of the form host.domain[:port] or *.domain[:port]"),
                    ));
                }
                s.extra_probes = probes;
            }
            _ => {
                let slot = match key.as_str() {
                    "traceOnIncident" => &mut s.trace_on_incident,
                    "captureOnIncident" => &mut s.capture_on_incident,
                    "autoWatchApps" => &mut s.auto_watch_apps,
                    "flowsEnabled" => &mut s.flows_enabled,
                    "foregroundEnabled" => &mut s.foreground_enabled,
                    "foregroundTitles" => &mut s.foreground_titles,
                    "fileEventsEnabled" => &mut s.file_events_enabled,
                    "fileIncludeAppData" => &mut s.file_include_app_data,
                    "installEventsEnabled" => &mut s.install_events_enabled,
                    "processEventsEnabled" => &mut s.process_events_enabled,
                    "windowsEventsEnabled" => &mut s.windows_events_enabled,
                    _ => return Err(bad(key, "clé inconnue", "unknown key")),
                };
                *slot = v.as_bool().ok_or_else(|| {
                    bad(
                        key,
                        "booléen attendu (true ou false)",
                        "expected a boolean (true or false)",
                    )
                })?;
            }
        }
    }
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probe_forms() {
        for ok in [
            "erp.acme.local",
            "erp.acme.local:443",
            "*.acme.local",
            "*.corp:8443",
            "a-b.c",
        ] {
            assert!(valid_probe(ok), "{ok}");
        }
        for bad in [
            "erp",
            "*.",
            "erp.acme.local:0",
            "erp.acme.local:99999",
            "http://erp.acme.local",
            "-a.b",
            "a..b",
            "erp.acme.local:",
            "*.*.acme",
        ] {
            assert!(!valid_probe(bad), "{bad}");
        }
    }
}
