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

/// The JSON types a value of [`Pred`] equals a field of, as [`Filter::matches`] compares
/// them: numbers by value whatever their type, any other value only one of its own type.
fn types_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "'null'",
        Value::Bool(true) => "'true'",
        Value::Bool(false) => "'false'",
        Value::Number(_) => "'integer', 'real'",
        Value::String(_) => "'text'",
        Value::Array(_) | Value::Object(_) => "'array', 'object'",
    }
}

/// SQL true when the JSON value whose SQL value is the expression `value` and whose JSON type
/// is the expression `kind` equals one of `vs` as [`Filter::matches`] compares them, false
/// or null otherwise (a missing field has neither). SQL alone would take `true` for 1, a
/// string for the JSON text of an array, and would never find a null: the type is checked
/// too, after the value (the check costs a row that matched on the value only).
fn same_sql(value: &str, kind: &str, vs: &[Value], args: &mut Vec<SqlValue>) -> String {
    let mut ors = Vec::new();
    // Values given by their type alone (null, true, false), then the others by type.
    let by_type: Vec<&str> = vs
        .iter()
        .filter(|v| v.is_null() || v.is_boolean())
        .map(types_of)
        .collect();
    if !by_type.is_empty() {
        ors.push(format!("{kind} IN ({})", by_type.join(", ")));
    }
    for types in ["'integer', 'real'", "'text'", "'array', 'object'"] {
        let of_type: Vec<&Value> = vs.iter().filter(|v| types_of(v) == types).collect();
        if of_type.is_empty() {
            continue;
        }
        let marks = vec!["?"; of_type.len()].join(", ");
        args.extend(of_type.into_iter().map(sql_of));
        ors.push(format!("({value} IN ({marks}) AND {kind} IN ({types}))"));
    }
    match ors.len() {
        0 => "0".to_owned(),
        1 => ors.remove(0),
        _ => format!("({})", ors.join(" OR ")),
    }
}

/// SQL for `filter` over the JSON column `col`, with its parameters appended to `args`:
/// what [`Filter::matches`] selects (a field of another type than a predicate reads never
/// matches it: a string is no number, a number no string, a scalar no array).
pub(super) fn filter_sql(
    filter: &Filter,
    col: &str,
    args: &mut Vec<SqlValue>,
) -> StoreResult<String> {
    let mut sql = String::new();
    for pred in &filter.0 {
        let clause = match pred {
            Pred::Eq(f, v) => {
                let path = json_path(f)?;
                let (value, kind) = (
                    format!("json_extract({col}, {path})"),
                    format!("json_type({col}, {path})"),
                );
                match v.as_str().filter(|s| written_as_is(s)) {
                    // The text is searched for the quoted value before any JSON is parsed:
                    // a cheap necessary condition, so a rare value costs no parse per row.
                    Some(s) => {
                        args.push(SqlValue::Text(format!("\"{s}\"")));
                        let exact = same_sql(&value, &kind, std::slice::from_ref(v), args);
                        format!("(instr({col}, ?) > 0 AND {exact})")
                    }
                    None => same_sql(&value, &kind, std::slice::from_ref(v), args),
                }
            }
            Pred::Ne(f, v) => {
                // Not `same_sql` negated: a value that differs is told apart without its
                // type (most rows, read once), and a missing field differs.
                let path = json_path(f)?;
                let kind = format!("json_type({col}, {path})");
                match v {
                    Value::Null | Value::Bool(_) => {
                        format!("coalesce({kind} <> {}, 1)", types_of(v))
                    }
                    _ => {
                        args.push(sql_of(v));
                        format!(
                            "(json_extract({col}, {path}) IS NOT ? OR {kind} NOT IN ({}))",
                            types_of(v)
                        )
                    }
                }
            }
            Pred::In(f, vs) => {
                let path = json_path(f)?;
                same_sql(
                    &format!("json_extract({col}, {path})"),
                    &format!("json_type({col}, {path})"),
                    vs,
                    args,
                )
            }
            Pred::Prefix(f, p) => {
                let path = json_path(f)?;
                args.push(SqlValue::Integer(p.chars().count() as i64));
                args.push(SqlValue::Text(p.clone()));
                format!(
                    "(substr(json_extract({col}, {path}), 1, ?) = ? \
                     AND json_type({col}, {path}) = 'text')"
                )
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
            Pred::Gte(f, n) | Pred::Lte(f, n) => {
                let path = json_path(f)?;
                let op = if matches!(pred, Pred::Gte(..)) {
                    ">="
                } else {
                    "<="
                };
                args.push(SqlValue::Real(*n));
                format!(
                    "(json_extract({col}, {path}) {op} ? \
                     AND json_type({col}, {path}) IN ('integer', 'real'))"
                )
            }
            Pred::Has(f, v) => {
                // json_each walks a scalar as an array of one (no key) and an object by its
                // members (text keys): only an array's elements have an index.
                let path = json_path(f)?;
                let element = same_sql("value", "type", std::slice::from_ref(v), args);
                format!(
                    "EXISTS (SELECT 1 FROM json_each({col}, {path}) \
                     WHERE {element} AND typeof(key) = 'integer')"
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
