//! Small text helpers shared by the providers: truncation on character boundaries.

use std::borrow::Cow;

/// The first `max_chars` characters of `s`, and whether anything was cut.
///
/// Counts characters (Unicode scalar values), never splits a UTF-8 sequence.
///
/// ```
/// assert_eq!(hooks_core::text::truncate_chars("héllo", 2), ("hé", true));
/// assert_eq!(hooks_core::text::truncate_chars("日本", 5), ("日本", false));
/// ```
pub fn truncate_chars(s: &str, max_chars: usize) -> (&str, bool) {
    match s.char_indices().nth(max_chars) {
        Some((at, _)) => (&s[..at], true),
        None => (s, false),
    }
}

/// The first `max_chars` characters of `s`, with `...` appended when it was longer.
///
/// ```
/// assert_eq!(hooks_core::text::preview("abcdef", 3), "abc...");
/// assert_eq!(hooks_core::text::preview("abc", 3), "abc");
/// ```
pub fn preview(s: &str, max_chars: usize) -> Cow<'_, str> {
    match truncate_chars(s, max_chars) {
        (head, true) => Cow::Owned(format!("{head}...")),
        (head, false) => Cow::Borrowed(head),
    }
}

/// The number of characters in `s`.
pub fn char_len(s: &str) -> usize {
    s.chars().count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncation_never_splits_multibyte_characters() {
        for s in ["é", "日本語テキスト", "👋🏽 hi", "aé日👋"] {
            for n in 0..10 {
                let (head, cut) = truncate_chars(s, n);
                assert!(s.starts_with(head));
                assert_eq!(head.chars().count(), n.min(char_len(s)));
                assert_eq!(cut, char_len(s) > n);
            }
        }
        assert_eq!(preview("日本語テキスト", 3), "日本語...");
    }
}
