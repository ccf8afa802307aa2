//! The explore filter language (`explore_flows` in the OpenAPI description):
//! `<dimension> <operator> <value>` conditions joined by the word `et`, operators `=` and `!=`.
//!
//! ```text
//! filter    = condition { "et" condition }
//! condition = dimension ( "=" | "!=" ) value
//! value     = word | '"' any text without '"' '"' | "'" any text without "'" "'"
//! ```
//! Words are runs of characters other than spaces, quotes, `=` and `!`. `et` is matched
//! case-insensitively. A failure names the position (1-based, in characters) and the token
//! found, so the caller can point at it.

/// One parsed condition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Condition {
    pub dim: String,
    pub negated: bool,
    pub value: String,
    /// 1-based character position of the dimension, for error messages.
    pub position: usize,
}

/// Why a filter does not parse.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    /// 1-based character position of the offending token (length + 1 at the end).
    pub position: usize,
    /// The token found there (`fin` at the end of the text).
    pub token: String,
    pub expected_fr: &'static str,
    pub expected_en: &'static str,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Tok {
    Word(String),
    Quoted(String),
    Eq,
    Ne,
}

impl Tok {
    fn text(&self) -> String {
        match self {
            Tok::Word(w) => w.clone(),
            Tok::Quoted(q) => format!("\"{q}\""),
            Tok::Eq => "=".into(),
            Tok::Ne => "!=".into(),
        }
    }
}

fn lex(input: &str) -> Result<Vec<(usize, Tok)>, ParseError> {
    let chars: Vec<char> = input.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let pos = i + 1;
        if c.is_whitespace() {
            i += 1;
        } else if c == '=' {
            out.push((pos, Tok::Eq));
            i += 1;
        } else if c == '!' {
            if chars.get(i + 1) == Some(&'=') {
                out.push((pos, Tok::Ne));
                i += 2;
            } else {
                return Err(ParseError {
                    position: pos,
                    token: "!".into(),
                    expected_fr: "« != » (le point d'exclamation doit être suivi de « = »)",
                    expected_en: "'!=' (an exclamation mark must be followed by '=')",
                });
            }
        } else if c == '"' || c == '\'' {
            let close = chars[i + 1..].iter().position(|x| *x == c);
            match close {
                Some(n) => {
                    out.push((pos, Tok::Quoted(chars[i + 1..i + 1 + n].iter().collect())));
                    i += n + 2;
                }
                None => {
                    return Err(ParseError {
                        position: pos,
                        token: chars[i..].iter().collect(),
                        expected_fr: "un guillemet fermant",
                        expected_en: "a closing quote",
                    });
                }
            }
        } else {
            let start = i;
            while i < chars.len()
                && !chars[i].is_whitespace()
                && !matches!(chars[i], '=' | '!' | '"' | '\'')
            {
                i += 1;
            }
            out.push((pos, Tok::Word(chars[start..i].iter().collect())));
        }
    }
    Ok(out)
}

/// Parses a filter; the empty text is no condition.
pub fn parse(input: &str) -> Result<Vec<Condition>, ParseError> {
    let toks = lex(input)?;
    let end = input.chars().count() + 1;
    let at = |k: usize| -> (usize, String) {
        toks.get(k)
            .map(|(p, t)| (*p, t.text()))
            .unwrap_or((end, "fin".into()))
    };
    let mut conds = Vec::new();
    let mut k = 0;
    if toks.is_empty() {
        return Ok(conds);
    }
    loop {
        // Dimension.
        let (dpos, dim) = match toks.get(k) {
            Some((p, Tok::Word(w))) if !w.eq_ignore_ascii_case("et") => (*p, w.clone()),
            _ => {
                let (position, token) = at(k);
                return Err(ParseError {
                    position,
                    token,
                    expected_fr: "un nom de dimension",
                    expected_en: "a dimension name",
                });
            }
        };
        k += 1;
        // Operator.
        let negated = match toks.get(k) {
            Some((_, Tok::Eq)) => false,
            Some((_, Tok::Ne)) => true,
            _ => {
                let (position, token) = at(k);
                return Err(ParseError {
                    position,
                    token,
                    expected_fr: "un opérateur « = » ou « != »",
                    expected_en: "an operator '=' or '!='",
                });
            }
        };
        k += 1;
        // Value.
        let value = match toks.get(k) {
            Some((_, Tok::Word(w))) if !w.eq_ignore_ascii_case("et") => w.clone(),
            Some((_, Tok::Quoted(q))) => q.clone(),
            _ => {
                let (position, token) = at(k);
                return Err(ParseError {
                    position,
                    token,
                    expected_fr: "une valeur (entre guillemets si elle contient des espaces)",
                    expected_en: "a value (between quotes when it holds spaces)",
                });
            }
        };
        k += 1;
        conds.push(Condition {
            dim,
            negated,
            value,
            position: dpos,
        });
        // Joiner or end.
        match toks.get(k) {
            None => return Ok(conds),
            Some((_, Tok::Word(w))) if w.eq_ignore_ascii_case("et") => {
                k += 1;
                if k >= toks.len() {
                    let (position, token) = at(k);
                    return Err(ParseError {
                        position,
                        token,
                        expected_fr: "une condition après « et »",
                        expected_en: "a condition after 'et'",
                    });
                }
            }
            Some(_) => {
                let (position, token) = at(k);
                return Err(ParseError {
                    position,
                    token,
                    expected_fr: "« et » ou la fin du filtre",
                    expected_en: "'et' or the end of the filter",
                });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(dim: &str, negated: bool, value: &str, position: usize) -> Condition {
        Condition {
            dim: dim.into(),
            negated,
            value: value.into(),
            position,
        }
    }

    #[test]
    fn parses_conditions_joined_by_et() {
        assert_eq!(parse("").expect("empty"), vec![]);
        assert_eq!(parse("   ").expect("blank"), vec![]);
        assert_eq!(
            parse("pays = FR").expect("one"),
            vec![c("pays", false, "FR", 1)]
        );
        assert_eq!(
            parse("pays!=FR ET operateur = \"Microsoft Corporation\" et port=443").expect("three"),
            vec![
                c("pays", true, "FR", 1),
                c("operateur", false, "Microsoft Corporation", 13),
                c("port", false, "443", 52)
            ]
        );
        assert_eq!(
            parse("utilisateur = 'léa.martin'").expect("quoted"),
            vec![c("utilisateur", false, "léa.martin", 1)]
        );
    }

    #[test]
    fn says_where_it_failed() {
        let e = parse("pays FR").expect_err("no operator");
        assert_eq!((e.position, e.token.as_str()), (6, "FR"));
        let e = parse("pays =").expect_err("no value");
        assert_eq!((e.position, e.token.as_str()), (7, "fin"));
        let e = parse("pays = FR et").expect_err("dangling et");
        assert_eq!((e.position, e.token.as_str()), (13, "fin"));
        let e = parse("pays = FR ou port = 443").expect_err("ou");
        assert_eq!((e.position, e.token.as_str()), (11, "ou"));
        let e = parse("pays = \"France").expect_err("quote");
        assert_eq!(e.position, 8);
        let e = parse("pays ! FR").expect_err("bang");
        assert_eq!((e.position, e.token.as_str()), (6, "!"));
        let e = parse("= FR").expect_err("no dim");
        assert_eq!((e.position, e.token.as_str()), (1, "="));
        let e = parse("pays == FR").expect_err("double");
        assert_eq!((e.position, e.token.as_str()), (7, "="));
    }
}
