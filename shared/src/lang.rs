//! Language of error messages: French by default, English when `Accept-Language` prefers it.

use http::HeaderMap;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Lang {
    #[default]
    Fr,
    En,
}

impl Lang {
    /// The caller's preferred language among the two the API speaks: the supported
    /// language with the highest q-value wins; ties go to the one listed first.
    pub fn from_headers(headers: &HeaderMap) -> Lang {
        Self::preferred(headers).unwrap_or_default()
    }

    /// The supported language `Accept-Language` prefers, if it names one (the default
    /// differs by surface: the API's messages are French, MCP tool descriptions English).
    pub fn preferred(headers: &HeaderMap) -> Option<Lang> {
        let value = headers
            .get(http::header::ACCEPT_LANGUAGE)
            .and_then(|v| v.to_str().ok())?;
        let mut best: Option<(f32, Lang)> = None;
        for part in value.split(',') {
            let mut pieces = part.trim().split(';');
            let tag = pieces.next().unwrap_or("").trim().to_ascii_lowercase();
            let q = pieces
                .find_map(|p| p.trim().strip_prefix("q="))
                .and_then(|q| q.parse::<f32>().ok())
                .unwrap_or(1.0);
            let primary = tag.split('-').next().unwrap_or("");
            let lang = match primary {
                "en" => Lang::En,
                "fr" => Lang::Fr,
                _ => continue,
            };
            if q > 0.0 && best.is_none_or(|(bq, _)| q > bq) {
                best = Some((q, lang));
            }
        }
        best.map(|(_, l)| l)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lang(v: &str) -> Lang {
        let mut h = HeaderMap::new();
        h.insert(http::header::ACCEPT_LANGUAGE, v.parse().expect("header"));
        Lang::from_headers(&h)
    }

    #[test]
    fn picks_the_preferred_supported_language() {
        assert_eq!(lang("en"), Lang::En);
        assert_eq!(lang("en-US,en;q=0.9"), Lang::En);
        assert_eq!(lang("fr-FR,en;q=0.5"), Lang::Fr);
        assert_eq!(lang("de,en;q=0.7,fr;q=0.3"), Lang::En);
        assert_eq!(lang("fr;q=0.4,en;q=0.8"), Lang::En);
        assert_eq!(lang("de"), Lang::Fr);
        assert_eq!(lang("en;q=0"), Lang::Fr);
        assert_eq!(Lang::from_headers(&HeaderMap::new()), Lang::Fr);
    }
}
