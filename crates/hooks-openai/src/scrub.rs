//! Keeps the key and credentials out of error messages: servers and proxies echo requests
//! (headers included) in their error bodies.

use hooks_core::http::redact_urls_in;

/// At most this much server text is scrubbed (errors keep 500 characters of it): the cap keeps
/// the work bounded, and is far past what is kept, so a secret cut at the cap is never shown.
const MAX_SCRUBBED: usize = 16 * 1024;

/// The secrets of one client, and what replaces them.
#[derive(Clone, Default)]
pub(crate) struct Scrub {
    /// Lowercase, longest first.
    secrets: Vec<String>,
}

impl Scrub {
    /// Scrubs `secrets` (the API key, the base URL's raw query and its values, a proxy's
    /// credentials) in any case and in their URL-encoded and JSON-escaped forms, and,
    /// generically, what follows `Bearer` / `Basic` / `Token` / `Authorization:` and any URL's
    /// userinfo and query.
    pub(crate) fn new<'a>(secrets: impl IntoIterator<Item = &'a str>) -> Self {
        let mut all: Vec<String> = secrets
            .into_iter()
            .map(str::trim)
            .filter(|s| s.len() >= 4)
            .map(str::to_ascii_lowercase)
            .collect();
        all.sort_by_key(|s| std::cmp::Reverse(s.len()));
        all.dedup();
        Self { secrets: all }
    }

    /// `text` (its first 16 KiB) with every secret replaced by `***`.
    pub(crate) fn clean(&self, text: &str) -> String {
        let text = hooks_core::text::truncate_chars(text, MAX_SCRUBBED).0;
        let mut out = redact_urls_in(text);
        for s in &self.secrets {
            out = replace_secret(&out, s.as_bytes());
        }
        redact_credentials(&out)
    }
}

/// `hay` with every occurrence of `needle` (lowercase) replaced by `***`, in any ASCII case
/// and however it was echoed: any byte as `%XX`, `/` as `\/`, a space as `+`. At most
/// `hay.len() × needle.len()` steps (the text is capped).
fn replace_secret(hay: &str, needle: &[u8]) -> String {
    let h = hay.as_bytes();
    let mut out = String::with_capacity(hay.len());
    let (mut copied, mut i) = (0, 0);
    while i < h.len() {
        match match_at(h, i, needle) {
            Some(end) => {
                out.push_str(&hay[copied..i]);
                out.push_str("***");
                copied = end;
                i = end;
            }
            None => i += 1,
        }
    }
    out.push_str(&hay[copied..]);
    out
}

/// Where a match of `needle` starting at `i` ends, if one does.
fn match_at(h: &[u8], mut i: usize, needle: &[u8]) -> Option<usize> {
    let hex = |c: u8| char::from(c).to_digit(16);
    for &n in needle {
        let c = *h.get(i)?;
        if c.to_ascii_lowercase() == n {
            i += 1;
        } else if c == b'%'
            && let (Some(hi), Some(lo)) = (
                h.get(i + 1).and_then(|&x| hex(x)),
                h.get(i + 2).and_then(|&x| hex(x)),
            )
            && u8::try_from(hi * 16 + lo).is_ok_and(|b| b.to_ascii_lowercase() == n)
        {
            i += 3;
        } else if n == b'/' && c == b'\\' && h.get(i + 1) == Some(&b'/') {
            i += 2;
        } else if n == b' ' && c == b'+' {
            i += 1;
        } else {
            return None;
        }
    }
    Some(i)
}

/// Words after which a credential follows.
const WORDS: [&str; 5] = [
    "bearer",
    "basic",
    "token",
    "authorization:",
    "authorization=",
];

/// Replaces the credential after every word of [`WORDS`] (any case; then spaces, tabs, `+`,
/// `%20` or `=`) with `***`. One pass: each word's next position is searched again only after
/// the scan has passed it, so the work is linear in the text.
fn redact_credentials(text: &str) -> String {
    let lower = text.to_ascii_lowercase();
    let mut next: Vec<Option<usize>> = WORDS.iter().map(|w| lower.find(w)).collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while let Some((k, at)) = next
        .iter()
        .enumerate()
        .filter_map(|(k, p)| p.map(|p| (k, p)))
        .min_by_key(|&(_, p)| p)
    {
        let word_end = at + WORDS[k].len();
        // Refresh this word's next position past its current match.
        next[k] = lower[word_end..].find(WORDS[k]).map(|p| word_end + p);
        if at < i {
            continue;
        }
        // Whatever separates the word from the credential.
        let mut start = word_end;
        loop {
            let rest = &lower[start..];
            if rest.starts_with(' ')
                || rest.starts_with('\t')
                || rest.starts_with('+')
                || rest.starts_with('=')
                || rest.starts_with(':')
            {
                start += 1;
            } else if rest.starts_with("%20") || rest.starts_with("%3a") || rest.starts_with("%3d")
            {
                start += 3;
            } else {
                break;
            }
        }
        let header = WORDS[k].starts_with("authorization");
        let end = if header {
            // A header's whole value: its scheme word and the credential after it.
            text[start..]
                .find(['\r', '\n', '"', ',', ';', '}'])
                .map_or(text.len(), |j| start + j)
        } else {
            text[start..]
                .find(|c: char| {
                    !(c.is_ascii_alphanumeric()
                        || matches!(
                            c,
                            '+' | '/' | '=' | '.' | '_' | '~' | '-' | '%' | '\\' | ':'
                        ))
                })
                .map_or(text.len(), |j| start + j)
        };
        let token = &text[start..end];
        // A credential, not a word ("basic arithmetic", "token limit"): long, or with a digit
        // or a symbol; after `authorization` anything is.
        let credential = token.len() >= 12
            || (token.len() >= 6 && !token.chars().all(|c| c.is_ascii_alphabetic()))
            || (header && !token.is_empty());
        out.push_str(&text[i..start]);
        if credential {
            out.push_str("***");
            i = end;
        } else {
            i = start;
        }
    }
    out.push_str(&text[i..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_credentials_and_urls_are_scrubbed_in_every_form() {
        let s = Scrub::new(["sk-KEYMARKER", "ab+PLUSSECRET", "ab PLUSSECRET"]);
        let echoed = r#"{"headers": {"authorization": "Bearer sk-KEYMARKER", "proxy-authorization": "Basic cHVzZXI6UFJPWFlNQVJLRVI=", "x": "key SK-KEYMARKER sk%2DKEYMARKER"}, "url": "http://u:PASS@h/v1?key=QUERY", "q": "?key=ab+PLUSSECRET"}"#;
        let c = s.clean(echoed);
        for m in [
            "KEYMARKER",
            "cHVzZXI6UFJPWFlNQVJLRVI",
            "PASS",
            "QUERY",
            "PLUSSECRET",
        ] {
            assert!(!c.contains(m), "{m} in {c}");
        }
        for sneaky in [
            "Basic  dXNlcjpQQVNTV09SRA==",
            "Basic\tdXNlcjpQQVNTV09SRA==",
            "Basic+dXNlcjpQQVNTV09SRA%3D",
            "Basic%20dXNlcjpQQVNTV09SRA==",
            "authorization: Token ghp_16C7e42F292c6912E7710c838347Ae178B4a",
            r#""Bearer sk\/KEY\/MARKERX""#,
            "Authorization: xyzzy42",
        ] {
            let c = s.clean(sneaky);
            for m in ["dXNlcjpQQVNTV09SRA", "ghp_16C7e42F", "MARKERX", "xyzzy42"] {
                assert!(!c.contains(m), "{m} in {c} (from {sneaky})");
            }
        }
        assert_eq!(s.clean("plain message"), "plain message");
        assert_eq!(s.clean("basic"), "basic");
        assert_eq!(s.clean("the basic plan"), "the basic plan");
        assert_eq!(s.clean("token limit reached"), "token limit reached");
        assert_eq!(s.clean("Bearer "), "Bearer ");
        assert_eq!(s.clean("é bearer é basic é"), "é bearer é basic é");
    }

    #[test]
    fn scrubbing_is_linear_and_capped() {
        let s = Scrub::new(["sk-KEYMARKER"]);
        // 'bearer a ' repeated: each word is searched again only once passed.
        let hostile = "bearer a basic b token c ".repeat(200_000);
        let c = s.clean(&hostile);
        assert!(c.len() <= MAX_SCRUBBED + 16, "{}", c.len());
        let n = 3_000;
        let text = "bearer a ".repeat(n);
        assert_eq!(redact_credentials(&text), text);
    }
}
