//! Keeps the key and credentials out of error messages: servers and proxies echo requests
//! (headers included) in their error bodies.

use hooks_core::http::redact_urls_in;

/// The secrets of one client, and what replaces them.
#[derive(Clone, Default)]
pub(crate) struct Scrub {
    secrets: Vec<String>,
}

impl Scrub {
    /// Scrubs `api_key` and the values of the base URL's query (where some services take a
    /// key), and, generically, any `Bearer` / `Basic` credential and any URL's userinfo and
    /// query.
    pub(crate) fn new<'a>(
        api_key: Option<&'a str>,
        query_values: impl IntoIterator<Item = &'a str>,
    ) -> Self {
        let mut secrets: Vec<String> = api_key
            .into_iter()
            .chain(query_values)
            .map(str::trim)
            .filter(|k| k.len() >= 4)
            .map(str::to_owned)
            .collect();
        // Longest first, so a secret holding another is replaced whole.
        secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
        Self { secrets }
    }

    /// `text` with every secret replaced by `***`.
    pub(crate) fn clean(&self, text: &str) -> String {
        let mut out = redact_urls_in(text);
        for s in &self.secrets {
            if out.contains(s.as_str()) {
                out = out.replace(s.as_str(), "***");
            }
        }
        redact_credentials(&out)
    }
}

/// Replaces the token after every `Bearer` / `Basic` (any case) with `***`.
fn redact_credentials(text: &str) -> String {
    let lower = text.to_ascii_lowercase();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < text.len() {
        let next = ["bearer ", "basic "]
            .iter()
            .filter_map(|w| lower[i..].find(w).map(|p| (i + p, w.len())))
            .min();
        let Some((at, len)) = next else {
            break;
        };
        let token_start = at + len;
        let token_end = text[token_start..]
            .find(|c: char| {
                !(c.is_ascii_alphanumeric() || matches!(c, '+' | '/' | '=' | '.' | '_' | '~' | '-'))
            })
            .map_or(text.len(), |j| token_start + j);
        out.push_str(&text[i..token_start]);
        // A credential, not a word ("basic arithmetic"): long, or with a digit or symbol.
        let token = &text[token_start..token_end];
        if token.len() >= 12
            || (token.len() >= 6 && !token.chars().all(|c| c.is_ascii_alphabetic()))
        {
            out.push_str("***");
        } else {
            out.push_str(token);
        }
        i = token_end;
    }
    out.push_str(&text[i.min(text.len())..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_credentials_and_urls_are_scrubbed() {
        let s = Scrub::new(Some("sk-KEYMARKER"), []);
        let echoed = r#"{"headers": {"authorization": "Bearer sk-KEYMARKER", "proxy-authorization": "Basic cHVzZXI6UFJPWFlNQVJLRVI=", "x": "key sk-KEYMARKER"}, "url": "http://u:PASS@h/v1?key=QUERY"}"#;
        let c = s.clean(echoed);
        for m in ["KEYMARKER", "cHVzZXI6UFJPWFlNQVJLRVI", "PASS", "QUERY"] {
            assert!(!c.contains(m), "{m} in {c}");
        }
        assert!(c.contains("Bearer ***") && c.contains("Basic ***"), "{c}");
        assert_eq!(s.clean("plain message"), "plain message");
        assert_eq!(s.clean("basic"), "basic");
        assert_eq!(s.clean("the basic plan"), "the basic plan");
        assert_eq!(s.clean("Bearer "), "Bearer ");
    }
}
