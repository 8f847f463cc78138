//! Context for bare numbers: the words before a number (or a JSON key) that make it an SSN or
//! an ID.

/// The names that give a value the context some detectors need: a bare nine-digit SSN after
/// `ssn` or `social security`, an AWS secret access key after a `secret…` key name.
pub(super) const CONTEXT_WORDS: [&str; 3] = ["ssn", "social", "secret"];

/// True when a JSON key like `key` can make a value detectable that is not on its own (see
/// [`CONTEXT_WORDS`]); other keys add nothing, so their values are judged bare.
pub(crate) fn key_gives_context(key: &str) -> bool {
    CONTEXT_WORDS
        .iter()
        .any(|w| contains_ignore_ascii_case(key, w))
}

/// A bare nine-digit number is an SSN only next to a name for one: `ssn`, `SSN`, `social
/// security` shortly before it on its line, or an `ssn` column in a CSV header above.
pub(super) fn ssn_context(text: &str, s: usize) -> bool {
    // Look back at most this far: a CSV header further away does not count, nor a number
    // more than `ROW` bytes into its row (a one-line run of numbers is not searched again
    // for a line break from each of them).
    const LOOK_BACK: usize = 4096;
    const ROW: usize = 1024;
    let label = label_before(text, s);
    if contains_ignore_ascii_case(label, "ssn")
        || [
            "social security",
            "social_security",
            "socialsecurity",
            "social-security",
        ]
        .iter()
        .any(|w| contains_ignore_ascii_case(label, w))
    {
        return true;
    }
    let floor = floor_char_boundary(text, s.saturating_sub(LOOK_BACK));
    let near = floor_char_boundary(text, s.saturating_sub(ROW));
    let newline = memchr::memrchr(b'\n', &text.as_bytes()[near..s]).map(|i| near + i);
    let line_start = newline.map_or(near, |i| i + 1);
    if newline.is_none() {
        // No line break within reach: no header line above it is within reach either, so
        // there is no column to look up (and no need to count this line's commas — on one
        // long line of numbers that would be most of the scan's work).
        return false;
    }
    let col = text[line_start..s].bytes().filter(|&b| b == b',').count();
    if col == 0 {
        return false;
    }
    // No header above names the column (in its usual spellings): nothing to look up. One
    // vectorised search each, instead of splitting up to 64 rows for every number.
    let above = &text.as_bytes()[floor..line_start];
    if ![
        "ssn",
        "SSN",
        "Ssn",
        "ocial_security_number",
        "OCIAL_SECURITY_NUMBER",
    ]
    .iter()
    .any(|name| memchr::memmem::find(above, name.as_bytes()).is_some())
    {
        return false;
    }
    let mut end = line_start;
    for _ in 0..64 {
        if end <= floor {
            break;
        }
        let prev_end = end - 1;
        let start = text[floor..prev_end]
            .rfind('\n')
            .map_or(floor, |i| floor + i + 1);
        if let Some(field) = text[start..prev_end].split(',').nth(col) {
            let f = field.trim().trim_matches('"');
            if f.eq_ignore_ascii_case("ssn") || f.eq_ignore_ascii_case("social_security_number") {
                return true;
            }
        }
        end = start;
    }
    false
}

/// The label of the number at `s`: the text just before it (at most 48 bytes) after the
/// last digit (a label stands before its own number, not before another one: in
/// `SSN\n145-57-7441\nInvoice 933343019` it labels only the first) and after the last
/// redaction placeholder (`[REDACTED_PHONE]` names what was there, not what follows).
pub(super) fn label_before(text: &str, s: usize) -> &str {
    let from = floor_char_boundary(text, s.saturating_sub(48));
    let mut label = &text[from..s];
    if let Some(i) = label.rfind(|c: char| c.is_ascii_digit()) {
        label = &label[i + 1..];
    }
    // (A byte search for `[` first: this runs for every bare number.)
    if let Some(i) = memchr::memrchr(b'[', label.as_bytes())
        && label[i..].starts_with("[REDACTED_")
        && let Some(j) = label[i..].find(']')
    {
        label = &label[i + j + 1..];
    }
    label
}

pub(super) fn contains_ignore_ascii_case(hay: &str, needle: &str) -> bool {
    hay.as_bytes()
        .windows(needle.len())
        .any(|w| w.eq_ignore_ascii_case(needle.as_bytes()))
}

pub(crate) fn floor_char_boundary(text: &str, i: usize) -> usize {
    let mut i = i.min(text.len());
    while !text.is_char_boundary(i) {
        i -= 1;
    }
    i
}

pub(super) fn id_context(text: &str, s: usize) -> bool {
    ends_with_word(
        text,
        s,
        &[
            "run", "order", "invoice", "ticket", "job", "build", "id", "number", "no.", "no",
            "ref", "pr", "tracking", "account", "acct", "serial", "isbn", "sku", "part", "pid",
        ],
    )
}

/// True when the text right before a number at `s` names a version or a section
/// (`version 1.2.3.4`, `Sections 1.1.1.1`): a dotted quad there is not an IP address.
pub(super) fn version_context(text: &str, s: usize) -> bool {
    ends_with_word(
        text,
        s,
        &[
            "version", "ver", "release", "build", "section", "sections", "firmware", "fw", "rev",
            "revision", "§", "oid",
        ],
    ) && !ends_with_word(text, s, &["ip", "address", "addr", "host", "server"])
}

/// True when the text just before `s` (past blanks, `:`, `#`, `=`, quotes) ends with one of `words`
/// as a whole word (case-insensitive).
fn ends_with_word(text: &str, s: usize, words: &[&str]) -> bool {
    let from = floor_char_boundary(text, s.saturating_sub(24));
    let before = text[from..s]
        .trim_end_matches([' ', ':', '#', '=', '"', '\''])
        .as_bytes();
    words.iter().any(|w| {
        let w = w.as_bytes();
        before.len() >= w.len()
            && before[before.len() - w.len()..].eq_ignore_ascii_case(w)
            && !before
                .len()
                .checked_sub(w.len() + 1)
                .is_some_and(|i| before[i].is_ascii_alphanumeric())
    })
}
