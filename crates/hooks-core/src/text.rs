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

/// A preview of `value` as compact JSON: at most `max_chars` characters, with `...` appended
/// when cut.
///
/// Never serialises more than it shows, so a huge or deeply nested value (100 000 levels) costs
/// only the preview and cannot overflow the stack.
///
/// ```
/// use serde_json::json;
/// assert_eq!(hooks_core::text::json_preview(&json!({"q": "weather"}), 100), r#"{"q":"weather"}"#);
/// assert_eq!(hooks_core::text::json_preview(&json!(["abcdef"]), 4), r#"["ab..."#);
/// ```
pub fn json_preview(value: &serde_json::Value, max_chars: usize) -> String {
    let mut w = Preview {
        out: String::new(),
        chars: 0,
        max: max_chars,
        full: false,
    };
    w.value(value);
    if w.full {
        w.out.push_str("...");
    }
    w.out
}

struct Preview {
    out: String,
    chars: usize,
    max: usize,
    full: bool,
}

impl Preview {
    /// Appends `s`, cutting at the limit; returns false once the limit is reached.
    fn push(&mut self, s: &str) -> bool {
        if self.full {
            return false;
        }
        let room = self.max - self.chars;
        let (head, cut) = truncate_chars(s, room);
        self.out.push_str(head);
        self.chars += char_len(head);
        if cut {
            self.full = true;
        }
        !self.full
    }

    fn value(&mut self, v: &serde_json::Value) -> bool {
        use serde_json::Value;
        match v {
            Value::Null => self.push("null"),
            Value::Bool(b) => self.push(if *b { "true" } else { "false" }),
            Value::Number(n) => self.push(&n.to_string()),
            Value::String(s) => self.string(s),
            Value::Array(items) => {
                if !self.push("[") {
                    return false;
                }
                for (i, item) in items.iter().enumerate() {
                    if (i > 0 && !self.push(",")) || !self.value(item) {
                        return false;
                    }
                }
                self.push("]")
            }
            Value::Object(map) => {
                if !self.push("{") {
                    return false;
                }
                for (i, (k, item)) in map.iter().enumerate() {
                    if (i > 0 && !self.push(","))
                        || !self.string(k)
                        || !self.push(":")
                        || !self.value(item)
                    {
                        return false;
                    }
                }
                self.push("}")
            }
        }
    }

    fn string(&mut self, s: &str) -> bool {
        // Escape only what is shown: a long string is cut before it is copied whole.
        let room = self.max.saturating_sub(self.chars);
        let (head, _) = truncate_chars(s, room);
        let quoted = serde_json::Value::String(head.to_owned()).to_string();
        if head.len() < s.len() {
            // Drop the closing quote: the string goes on past the preview.
            let open = &quoted[..quoted.len() - 1];
            self.push(open);
            self.full = true;
            return false;
        }
        self.push(&quoted)
    }
}

/// `base` if `taken` says it is free, else the first free `base#2`, `base#3`, …: a name kept
/// unique among its neighbours (tool-call ids of one response, keys of one object).
///
/// ```
/// let taken = ["c", "c#2"];
/// assert_eq!(hooks_core::text::unique("c", |n| taken.contains(&n)), "c#3");
/// assert_eq!(hooks_core::text::unique("d", |n| taken.contains(&n)), "d");
/// ```
pub fn unique(base: &str, taken: impl Fn(&str) -> bool) -> String {
    let mut name = base.to_owned();
    let mut n = 1;
    while taken(&name) {
        n += 1;
        name = format!("{base}#{n}");
    }
    name
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

    #[test]
    fn json_preview_is_bounded_and_exact_when_short() {
        use serde_json::json;
        let v = json!({"a": [1, true, null, "é日👋"], "b": {"c": "x"}});
        assert_eq!(json_preview(&v, 1000), v.to_string());
        for n in 0..40 {
            let p = json_preview(&v, n);
            let shown = p.strip_suffix("...").unwrap_or(&p);
            assert!(char_len(shown) <= n, "{n}: {p}");
            assert!(v.to_string().starts_with(shown), "{n}: {p}");
        }
    }

    #[test]
    fn json_preview_of_a_very_deep_value_does_not_overflow() {
        // Built iteratively; the preview only walks as deep as it shows.
        let mut v = serde_json::Value::Null;
        for _ in 0..100_000 {
            v = serde_json::Value::Array(vec![v]);
        }
        let p = json_preview(&v, 50);
        assert_eq!(p, format!("{}...", "[".repeat(50)));
        // Dismantle iteratively too: the default drop of such a value recurses.
        let mut cur = v;
        while let serde_json::Value::Array(mut items) = cur {
            cur = items.pop().unwrap_or(serde_json::Value::Null);
        }
    }
}
