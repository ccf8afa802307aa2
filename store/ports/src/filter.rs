//! Simple predicates over a record's JSON fields, evaluated by the adapter (SQL in SQLite,
//! a filter expression or a client-side check in DynamoDB). All predicates must hold.

use serde_json::Value;

/// A predicate on a field named by a dotted path (`remote.port`).
#[derive(Debug, Clone, PartialEq)]
pub enum Pred {
    /// Equal (numbers compare by value).
    Eq(&'static str, Value),
    /// Not equal; a missing field counts as not equal.
    Ne(&'static str, Value),
    /// Equal to one of the values.
    In(&'static str, Vec<Value>),
    /// The string field starts with the text.
    Prefix(&'static str, String),
    /// One of the string fields contains the text, case-insensitively.
    Contains(Vec<&'static str>, String),
    /// The number is at least the bound.
    Gte(&'static str, f64),
    /// The number is at most the bound.
    Lte(&'static str, f64),
    /// The array field holds the value.
    Has(&'static str, Value),
}

/// A conjunction of predicates. The empty filter matches everything.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Filter(pub Vec<Pred>);

impl Filter {
    pub fn all() -> Self {
        Filter(Vec::new())
    }

    pub fn and(mut self, pred: Pred) -> Self {
        self.0.push(pred);
        self
    }

    /// Adds the predicate when the option is set.
    pub fn and_some<T>(self, value: Option<T>, pred: impl FnOnce(T) -> Pred) -> Self {
        match value {
            Some(v) => self.and(pred(v)),
            None => self,
        }
    }

    pub fn matches(&self, body: &Value) -> bool {
        self.0.iter().all(|p| p.matches(body))
    }
}

/// The value at a dotted path.
pub fn field<'a>(body: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.').try_fold(body, |v, k| v.get(k))
}

/// The case folding of text filters: Unicode lower case (`É` → `é`, `Œ` → `œ`), the same in
/// every adapter (SQLite calls [`contains_folded`] through a function of its own).
pub fn fold(text: &str) -> String {
    text.to_lowercase()
}

/// The characters other than ASCII whose [`fold`] holds ASCII: the Kelvin sign folds to `k`,
/// the dotted capital I to `i` and a combining dot. Every other character folds to
/// characters other than ASCII, so an ASCII needle found in a folded text was ASCII there
/// already, or came from one of these (a unit test checks the list against every character).
pub const FOLDING_TO_ASCII: [char; 2] = ['\u{130}', '\u{212A}'];

/// The characters of [`FOLDING_TO_ASCII`] that a text must hold to match the ASCII,
/// folded `needle` other than by its ASCII letters.
pub fn folding_into(needle: &str) -> impl Iterator<Item = char> + '_ {
    FOLDING_TO_ASCII.into_iter().filter(move |c| {
        fold(&c.to_string())
            .chars()
            .any(|f| f.is_ascii() && needle.contains(f))
    })
}

/// True when `text`, folded, contains `folded_needle` (itself folded by [`fold`]).
pub fn contains_folded(text: &str, folded_needle: &str) -> bool {
    if text.is_ascii() {
        // ASCII text folds to ASCII: only an ASCII needle can occur in it, compared byte by
        // byte without building the folded copy (most stored text is ASCII).
        let needle = folded_needle.as_bytes();
        return folded_needle.is_ascii()
            && (needle.is_empty()
                || text
                    .as_bytes()
                    .windows(needle.len())
                    .any(|w| w.eq_ignore_ascii_case(needle)));
    }
    fold(text).contains(folded_needle)
}

fn same(a: &Value, b: &Value) -> bool {
    match (a.as_f64(), b.as_f64()) {
        (Some(x), Some(y)) => x == y,
        _ => a == b,
    }
}

impl Pred {
    pub fn matches(&self, body: &Value) -> bool {
        match self {
            Pred::Eq(f, v) => field(body, f).is_some_and(|x| same(x, v)),
            Pred::Ne(f, v) => !field(body, f).is_some_and(|x| same(x, v)),
            Pred::In(f, vs) => field(body, f).is_some_and(|x| vs.iter().any(|v| same(x, v))),
            Pred::Prefix(f, p) => field(body, f)
                .and_then(Value::as_str)
                .is_some_and(|s| s.starts_with(p.as_str())),
            Pred::Contains(fs, needle) => {
                let needle = fold(needle);
                fs.iter().any(|f| {
                    field(body, f)
                        .and_then(Value::as_str)
                        .is_some_and(|s| contains_folded(s, &needle))
                })
            }
            Pred::Gte(f, n) => field(body, f)
                .and_then(Value::as_f64)
                .is_some_and(|x| x >= *n),
            Pred::Lte(f, n) => field(body, f)
                .and_then(Value::as_f64)
                .is_some_and(|x| x <= *n),
            Pred::Has(f, v) => field(body, f)
                .and_then(Value::as_array)
                .is_some_and(|a| a.iter().any(|x| same(x, v))),
        }
    }

    /// Field paths the predicate reads.
    pub fn fields(&self) -> Vec<&'static str> {
        match self {
            Pred::Eq(f, _)
            | Pred::Ne(f, _)
            | Pred::In(f, _)
            | Pred::Prefix(f, _)
            | Pred::Gte(f, _)
            | Pred::Lte(f, _)
            | Pred::Has(f, _) => vec![f],
            Pred::Contains(fs, _) => fs.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn folding_to_ascii_lists_every_character_whose_fold_holds_ascii() {
        let found: Vec<char> = (0x80..=0x10FFFF)
            .filter_map(char::from_u32)
            .filter(|c| fold(&c.to_string()).chars().any(|f| f.is_ascii()))
            .collect();
        assert_eq!(found, FOLDING_TO_ASCII);
        assert_eq!(folding_into("k").collect::<Vec<_>>(), ['\u{212A}']);
        assert_eq!(folding_into("kelvin").count(), 2);
        assert_eq!(folding_into("teams").count(), 0);
    }

    #[test]
    fn predicates_match_as_documented() {
        let body = json!({"status": "online", "port": 443, "host": {"name": "PAR-LT-0001"}, "modules": ["netflow"], "ok": true});
        assert!(Pred::Eq("status", json!("online")).matches(&body));
        assert!(Pred::Eq("port", json!(443.0)).matches(&body));
        assert!(Pred::Eq("ok", json!(true)).matches(&body));
        assert!(Pred::Ne("status", json!("offline")).matches(&body));
        assert!(Pred::Ne("missing", json!(1)).matches(&body));
        assert!(Pred::In("port", vec![json!(80), json!(443)]).matches(&body));
        assert!(Pred::Prefix("host.name", "PAR-".into()).matches(&body));
        assert!(Pred::Contains(vec!["status", "host.name"], "lt-00".into()).matches(&body));
        assert!(!Pred::Contains(vec!["status"], "lt-00".into()).matches(&body));
        assert!(Pred::Gte("port", 443.0).matches(&body));
        assert!(!Pred::Lte("port", 80.0).matches(&body));
        assert!(Pred::Has("modules", json!("netflow")).matches(&body));
        assert!(!Pred::Has("modules", json!("netdiag")).matches(&body));
        assert!(Filter::all().matches(&body));
    }

    #[test]
    fn text_search_folds_unicode_capitals() {
        let body = json!({"m": "Windows : Échec de résolution DNS", "n": "ŒUVRE À ÇA", "k": "1 K"});
        for needle in ["échec", "ÉCHEC", "Échec", "éCHEC de R"] {
            assert!(
                Pred::Contains(vec!["m"], needle.into()).matches(&body),
                "{needle}"
            );
        }
        for needle in ["œuvre à ça", "Œuvre À Ça"] {
            assert!(
                Pred::Contains(vec!["n"], needle.into()).matches(&body),
                "{needle}"
            );
        }
        assert!(!Pred::Contains(vec!["m"], "echec".into()).matches(&body));
        // The Kelvin sign folds to an ASCII k, found in ASCII text.
        assert!(Pred::Contains(vec!["k"], "\u{212a}".into()).matches(&body));
        assert!(!Pred::Contains(vec!["k"], "é".into()).matches(&body));
        assert!(Pred::Contains(vec!["k"], String::new()).matches(&body));
    }
}
