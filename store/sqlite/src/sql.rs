//! SQL pieces shared by the ports: filters as SQL over `json_extract`, so that only matching
//! rows leave SQLite; JSON paths, values and columns.

use rusqlite::types::Value as SqlValue;
use serde_json::Value;

use super::conn::backend;
use netops_store::{Filter, Pred, StoreError, StoreResult};

pub(super) fn json_text(v: &Value) -> String {
    v.to_string()
}

/// Text column `i` of `r`, read in place.
pub(super) fn text<'r>(r: &'r rusqlite::Row<'_>, i: usize) -> StoreResult<&'r str> {
    r.get_ref(i).and_then(|v| Ok(v.as_str()?)).map_err(backend)
}

pub(super) fn parse_json(s: &str) -> StoreResult<Value> {
    serde_json::from_str(s).map_err(|e| StoreError::Data(e.to_string()))
}

pub(super) fn sql_of(v: &Value) -> SqlValue {
    match v {
        Value::Null => SqlValue::Null,
        Value::Bool(b) => SqlValue::Integer(i64::from(*b)),
        Value::Number(n) => match n.as_i64() {
            Some(i) => SqlValue::Integer(i),
            None => SqlValue::Real(n.as_f64().unwrap_or(0.0)),
        },
        Value::String(s) => SqlValue::Text(s.clone()),
        other => SqlValue::Text(other.to_string()),
    }
}

pub(super) fn json_path(field: &str) -> StoreResult<String> {
    if field.is_empty()
        || !field
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
    {
        return Err(StoreError::Data(format!("bad field name {field}")));
    }
    Ok(format!("'$.{field}'"))
}

/// A row count bound as SQL; a count past SQLite's integers (no bound) is clamped to the largest.
pub(super) fn sql_limit(limit: usize) -> SqlValue {
    SqlValue::Integer(limit.min(i64::MAX as usize) as i64)
}

/// True when every JSON writer of this file (serde_json, SQLite's JSON functions) writes
/// the string `s` between quotes exactly as it is: ASCII letters, digits and a few marks,
/// never escaped by either.
pub(super) fn written_as_is(s: &str) -> bool {
    s.bytes()
        .all(|b| b.is_ascii_alphanumeric() || b" -_.:@/".contains(&b))
}

/// SQL for `filter` over the JSON column `col`, with its parameters appended to `args`.
pub(super) fn filter_sql(
    filter: &Filter,
    col: &str,
    args: &mut Vec<SqlValue>,
) -> StoreResult<String> {
    let mut sql = String::new();
    for pred in &filter.0 {
        let clause = match pred {
            Pred::Eq(f, v) => {
                let exact = format!("json_extract({col}, {}) = ?", json_path(f)?);
                match v.as_str().filter(|s| written_as_is(s)) {
                    // The text is searched for the quoted value before any JSON is parsed:
                    // a cheap necessary condition, so a rare value costs no parse per row.
                    Some(s) => {
                        args.push(SqlValue::Text(format!("\"{s}\"")));
                        args.push(sql_of(v));
                        format!("(instr({col}, ?) > 0 AND {exact})")
                    }
                    None => {
                        args.push(sql_of(v));
                        exact
                    }
                }
            }
            Pred::Ne(f, v) => {
                args.push(sql_of(v));
                format!("json_extract({col}, {}) IS NOT ?", json_path(f)?)
            }
            Pred::In(f, vs) => {
                let marks = vec!["?"; vs.len()].join(",");
                args.extend(vs.iter().map(sql_of));
                format!("json_extract({col}, {}) IN ({marks})", json_path(f)?)
            }
            Pred::Prefix(f, p) => {
                args.push(SqlValue::Integer(p.chars().count() as i64));
                args.push(SqlValue::Text(p.clone()));
                format!("substr(json_extract({col}, {}), 1, ?) = ?", json_path(f)?)
            }
            Pred::Contains(fs, needle) => {
                let needle = netops_store::filter::fold(needle);
                let mut ors = Vec::new();
                let mut exact_args = Vec::new();
                for f in fs {
                    exact_args.push(SqlValue::Text(needle.clone()));
                    ors.push(format!(
                        "netops_contains(json_extract({col}, {}), ?)",
                        json_path(f)?
                    ));
                }
                let exact = format!("({})", ors.join(" OR "));
                if needle.is_empty() || !written_as_is(&needle) {
                    args.extend(exact_args);
                    exact
                } else {
                    // As for Eq, a cheap necessary condition before any JSON is parsed: a
                    // text holding the ASCII needle once folded holds it in the lowered
                    // document, or holds a character that folds to ASCII of the needle (the
                    // Kelvin sign folds to `k`).
                    let mut cheap = vec![format!("instr(lower({col}), ?) > 0")];
                    args.push(SqlValue::Text(needle.clone()));
                    for c in netops_store::filter::folding_into(&needle) {
                        cheap.push(format!("instr({col}, ?) > 0"));
                        args.push(SqlValue::Text(c.to_string()));
                    }
                    args.extend(exact_args);
                    format!("(({}) AND {exact})", cheap.join(" OR "))
                }
            }
            Pred::Gte(f, n) => {
                args.push(SqlValue::Real(*n));
                format!("json_extract({col}, {}) >= ?", json_path(f)?)
            }
            Pred::Lte(f, n) => {
                args.push(SqlValue::Real(*n));
                format!("json_extract({col}, {}) <= ?", json_path(f)?)
            }
            Pred::Has(f, v) => {
                args.push(sql_of(v));
                format!(
                    "EXISTS (SELECT 1 FROM json_each({col}, {}) WHERE value = ?)",
                    json_path(f)?
                )
            }
        };
        sql.push_str(" AND ");
        sql.push_str(&clause);
    }
    Ok(sql)
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use crate::testing::store;
    use netops_store::{Documents, Filter, Pred, READ_ALL};

    #[tokio::test]
    async fn text_filters_in_sql_match_filter_matches_on_tricky_values() {
        let (_d, s) = store();
        let values = [
            json!("Windows : Échec de résolution DNS"),
            json!("échec"),
            json!("À LA CARTE, ÇA, ŒUVRE, Æ, Ÿ, Ǆ"),
            json!("à la carte, ça, œuvre, æ, ÿ, ǆ"),
            json!("Say \"Hi\" it's"),
            json!(r"C:\Program Files\Back"),
            json!("100% sure"),
            json!("100 sure"),
            json!("snake_case"),
            json!("snakeXcase"),
            json!("STRASSE Straße"),
            json!("ΟΔΟΣ Σ"),
            json!("1 \u{212a}elvin"),
            json!("\u{130}zmir \u{130}STANBUL \u{212a}ELV\u{130}N"),
            json!("tab\there\nline"),
            json!(""),
            json!(42),
            json!(["Échec"]),
            json!({"m": "Échec"}),
            json!(null),
            json!(true),
        ];
        let mut docs: Vec<(String, Value)> = values
            .iter()
            .enumerate()
            .map(|(i, v)| (format!("k{i:02}"), json!({ "f": v })))
            .collect();
        docs.push(("k99".into(), json!({"other": "Échec"})));
        s.put("t", "c", docs.clone()).await.expect("put");
        let needles = [
            "échec",
            "ÉCHEC",
            "Échec",
            "éCHEC",
            "à la",
            "ÇA",
            "œuvre",
            "Œ",
            "æ",
            "ÿ",
            "ǆ",
            "\"hi\"",
            "'",
            r"\back",
            r"\",
            "%",
            "0%",
            "_",
            "e_c",
            "straße",
            "STRASSE",
            "σ",
            "οδος",
            "k",
            "kelvin",
            "ELVIN",
            "i",
            "zmir",
            "\u{212a}",
            "\u{130}",
            "\t",
            "\n",
            "42",
            "true",
            "null",
            "[",
            "{",
            "",
            "x%y",
            "'; DROP TABLE docs; --",
        ];
        for needle in needles {
            let filter = Filter::all().and(Pred::Contains(vec!["f"], needle.to_owned()));
            let got: Vec<String> = s
                .list("t", "c", &filter, None, READ_ALL)
                .await
                .expect("list")
                .into_iter()
                .map(|d| d.key)
                .collect();
            let want: Vec<String> = docs
                .iter()
                .filter(|(_, body)| filter.matches(body))
                .map(|(k, _)| k.clone())
                .collect();
            assert_eq!(got, want, "needle {needle:?}");
        }
        // The French capitals the embedded store used to miss.
        let filter = Filter::all().and(Pred::Contains(vec!["f"], "ÉCHEC".into()));
        assert_eq!(
            s.list("t", "c", &filter, None, 10)
                .await
                .expect("list")
                .len(),
            2
        );
    }
}
