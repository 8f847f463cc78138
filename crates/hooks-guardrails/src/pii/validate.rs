//! The validators: what makes a candidate a real card, IBAN, IP address, SSN, phone number,
//! e-mail address or secret (checksums, ranges, issuing rules, borders).

use std::net::Ipv6Addr;
use std::sync::OnceLock;

use regex_automata::meta::Regex as MetaRegex;

use super::context::*;

pub(super) fn next_char(text: &str, s: usize) -> usize {
    text[s..]
        .chars()
        .next()
        .map_or(text.len(), |c| s + c.len_utf8())
}

pub(crate) fn ceil_char_boundary(text: &str, i: usize) -> usize {
    if i >= text.len() {
        return text.len();
    }
    let mut i = i;
    while !text.is_char_boundary(i) {
        i += 1;
    }
    i
}

/// The span of the scan's last detection, which a redaction turns into a placeholder: a
/// validator that reads what stands before its candidate reads it as the placeholder's `]`,
/// as the next redaction pass would, so a number right after a detected one is read as a
/// number of its own, not as that one's continuation (`06 12 34 56 78 06 12 34 56 79`).
///
/// Also what one scan of a text knows of the last Markdown table's row it read (see
/// [`table_row_secret`]): the next row finds its header there, not by reading back.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Freed {
    pub(super) start: usize,
    pub(super) end: usize,
    pub(super) table: std::cell::Cell<Option<TableRow>>,
    /// The last HTML table's row read (see [`html_row_secret`]).
    pub(super) html: std::cell::Cell<Option<HtmlRow>>,
    /// The table aligned with blanks being read (see [`spaced_row_secret`]): its secret
    /// columns.
    pub(super) spaced: std::cell::Cell<Option<SpacedTable>>,
    /// Where that table's next row starts (read by [`table_row_at`], which finds it there).
    pub(super) spaced_next: std::cell::Cell<Option<usize>>,
    /// The secrets of the row [`spaced_row_cells`] read last: its start, and theirs.
    pub(super) spaced_row: std::cell::Cell<Option<(usize, Span)>>,
    /// Where [`spaced_opener`] last searched from, and what it found.
    pub(super) spaced_opener: std::cell::Cell<Option<(usize, usize)>>,
    /// What [`redis_named_near`] last read: from where and up to where, and where the
    /// first name it found there starts (none before it), if it found one.
    pub(super) redis_names: std::cell::Cell<Option<(usize, usize, Option<usize>)>>,
    /// The command line [`printed_secret`] last read, and what it found on it: each of a
    /// line's literals asks it again.
    pub(super) printed: std::cell::Cell<Option<PrintedLine>>,
    /// The last names [`printed_secret`] judged, four at most: where each stands, its
    /// length, and whether it is a secret's.
    pub(super) printed_names: std::cell::Cell<[(usize, usize, bool); 4]>,
}

/// A command line as [`printed_secret`] reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct PrintedLine {
    /// Where it starts and ends (before its line break, or one escaped in a JSON string).
    start: usize,
    end: usize,
    /// Where the next line starts (0 while no break is found: up to `end` there is none),
    /// and whether the break was escaped (`\n`: the output then ends at one too, or at the
    /// string's quote).
    next: usize,
    escaped: bool,
    /// Where the first capture of output starts (`$(`, a backtick), else its end: a
    /// command after it prints nothing.
    captured: usize,
    /// Past the last redirection or pipe (`>`, `|`, a backtick), else its start: a command
    /// before it prints nothing to the screen.
    sent: usize,
    /// Which of [`PRINTED_WORDS`] the line holds, a bit each.
    words: u16,
    /// The output on the next line, once read: its span if it may be a secret, and whether
    /// it looks made by a machine (see [`machine_made`]).
    output: Option<Option<(usize, usize, bool)>>,
}

/// Where a value found starts and ends, if one was.
pub(super) type Span = Option<(usize, usize)>;

/// An HTML table's row as [`html_row_secret`] read it: where it ends (at the tag that
/// ends it) and the columns its table's header row names a secret in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct HtmlRow {
    pub(super) end: usize,
    pub(super) columns: SecretColumns,
}

/// A Markdown table's row as [`table_row_secret`] read it: its first `|`, where it ends
/// (before its line break) and the columns its table's header names a secret in (none
/// without a header).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct TableRow {
    pub(super) pipe: usize,
    pub(super) end: usize,
    pub(super) columns: SecretColumns,
}

impl Freed {
    /// The byte at `i`, or `]` inside the last detection.
    pub(super) fn byte(&self, text: &str, i: usize) -> u8 {
        if (self.start..self.end).contains(&i) {
            b']'
        } else {
            text.as_bytes()[i]
        }
    }
}

pub(super) fn byte_before(text: &str, s: usize) -> Option<u8> {
    s.checked_sub(1).map(|i| text.as_bytes()[i])
}

pub(super) fn byte_at(text: &str, i: usize) -> Option<u8> {
    text.as_bytes().get(i).copied()
}

pub(super) fn is_digit(b: Option<u8>) -> bool {
    b.is_some_and(|b| b.is_ascii_digit())
}

pub(super) fn is_alnum(b: Option<u8>) -> bool {
    b.is_some_and(|b| b.is_ascii_alphanumeric())
}

/// True when a separator and a digit follow `e` (the number goes on).
pub(super) fn continues_after(text: &str, e: usize, seps: &[u8]) -> bool {
    byte_at(text, e).is_some_and(|b| seps.contains(&b)) && is_digit(byte_at(text, e + 1))
}

/// True when a digit and a separator precede `s`.
pub(super) fn continues_before(text: &str, s: usize, seps: &[u8]) -> bool {
    byte_before(text, s).is_some_and(|b| seps.contains(&b))
        && s >= 2
        && is_digit(byte_at(text, s - 2))
}

// ---- validators ---------------------------------------------------------------------------

/// Skips a JSON escape (`\n`, `\r`, `\t`) that a digit-led pattern consumed in place of a
/// word border.
pub(super) fn skip_escape(text: &str, s: usize) -> usize {
    if text.as_bytes().get(s) == Some(&b'\\') {
        s + 2
    } else {
        s
    }
}

/// Line breaks and blanks at the end of a private key's body (as written or JSON-escaped):
/// not part of the key.
fn trim_key_end(m: &str) -> &str {
    let mut m = m;
    loop {
        let t = m.trim_end_matches([' ', '\t', '\r', '\n']);
        let t = t
            .strip_suffix("\\n")
            .or_else(|| t.strip_suffix("\\r"))
            .map(|t| t.trim_end_matches('\\'))
            .unwrap_or(t);
        if t.len() == m.len() {
            return t;
        }
        m = t;
    }
}

/// True when `m` starts with `p`, its first byte compared first (a candidate is checked
/// against many prefixes, most of which its first byte rules out without a comparison call).
fn begins(m: &str, p: &str) -> bool {
    m.as_bytes().first() == p.as_bytes().first() && m.starts_with(p)
}

pub(super) fn validate_secret(
    text: &str,
    s: usize,
    e: usize,
    freed: &Freed,
) -> Option<(usize, usize)> {
    let m = &text[s..e];
    if begins(m, "-----BEGIN") {
        // A key block: at least a line's worth of key material after the BEGIN line (a
        // header alone holds no secret).
        let m = trim_key_end(m);
        let head = m.find("KEY-----").or_else(|| m.find("BLOCK-----"))?;
        let body = &m[head..];
        let material = body
            .bytes()
            .filter(|b| b.is_ascii_alphanumeric() || *b == b'+' || *b == b'/')
            .count();
        return (material >= 24).then_some((s, s + m.len()));
    }
    // A JWT whose trigger (its whole shape) matched is one: no further check, so a candidate
    // that read far never fails and makes the scan read it again from the next start.
    if begins(m, "eyJ") {
        return Some((s, e));
    }
    if begins(m, "://") {
        return url_password(text, s, m).map(|(a, b)| (s + a, s + b));
    }
    if let Some(key) = ["AccountKey=", "SharedAccessKey="]
        .iter()
        .find(|p| begins(m, p))
        .map(|p| &m[p.len()..])
    {
        // The value is the secret; its name stays readable.
        return Some((e - key.len(), e));
    }
    if let Some(scheme) = ["Bearer", "bearer", "BEARER", "Basic", "basic", "BASIC"]
        .iter()
        .find(|p| begins(m, p))
    {
        let token = s
            + scheme.len()
            + m[scheme.len()..]
                .bytes()
                .take_while(|&c| c == b' ' || c == b'\t')
                .count();
        return if scheme.eq_ignore_ascii_case("bearer") {
            bearer_token(text, token)
        } else {
            basic_credentials(text, token)
        };
    }
    if m.as_bytes().first() == Some(&b'-')
        && m.as_bytes().get(1).is_some_and(u8::is_ascii_alphabetic)
    {
        return single_dash_option(text, s, e);
    }
    if let Some(name) = super::patterns::credential_call_at(m.as_bytes()) {
        // A call that takes a password as a later argument (`smtp.login("bob", "…")`): read
        // as a named field's call, its name the call's (see [`password_argument`]).
        // (Its first argument on the next line too.)
        let open = s + name;
        let first = e + text.as_bytes()[e..]
            .iter()
            .take(64)
            .take_while(|c| c.is_ascii_whitespace())
            .count();
        return (first < text.len())
            .then(|| named_secret(text, s, open, ceil_char_boundary(text, first + 1)))
            .flatten();
    }
    // (A tool a command of the command-line pass names too: `openssl passwd`, read as
    // the positional tool's, or else as that command's.)
    if begins(m, "openssl")
        && let Some(found) = positional_password(text, s, m, freed)
    {
        return found;
    }
    if let Some(found) = command_line_secret(text, s, e) {
        return found;
    }
    // (A mail session's login, as a client's debug output prints it, before Redis's `AUTH
    // user password`: see [`sasl_password`].)
    if m.len() >= 4
        && m.as_bytes()[..4].eq_ignore_ascii_case(b"auth")
        && let Some(found) = sasl_password(text, s + 4)
    {
        return Some(found);
    }
    if let Some(found) = positional_password(text, s, m, freed) {
        return found;
    }
    if m.starts_with("$4") {
        return resp_auth(text, s);
    }
    if let Some(found) = stdin_password(text, s, m) {
        return found;
    }
    if let Some(found) = value_before_name(text, s, e) {
        return found;
    }
    // (Before the names: `Passwort` starts with `Pass`, a camelCase name's.)
    if let Some(name) = super::patterns::local_name_at(m.as_bytes()) {
        return named_secret(text, s, s + name.len(), e);
    }
    if let Some(name) = super::patterns::secret_name_at(m.as_bytes()) {
        let found = named_secret(text, s, s + name.len(), e);
        // (`auth` holds a secret only as basic credentials' base64, `user:password`
        // encoded: `"auth": "Ym9iOl…"` — not `auth: true`, `"auth": "oauth2"` — or as
        // MongoDB's `db.auth("bob", "…")`: see [`password_argument`].)
        let call = (m[name.len()..].starts_with('(')
            && password_argument(&text.as_bytes()[..s + name.len()]).is_some())
            || credentials_tuple(&m.as_bytes()[name.len()..]);
        if name.eq_ignore_ascii_case("auth") && !call {
            return found.filter(|&(a, z)| {
                basic_credentials(text, a) == Some((a, z)) && stored_login(&text[a..z])
            });
        }
        return found;
    }
    if super::patterns::set_password_at(m.as_bytes()) {
        // `SET PASSWORD FOR account = '…'`: the account within 160 bytes and the statement
        // (`'bob'@'%'`, quoted or not; over lines too), the `=`, blanks and the value's
        // quote (JSON-escaped too; a bare value is a variable's, `@pw`, or a call's) — read
        // as a named field's, its name the words before the `=`.
        let b = text.as_bytes();
        let statement = &b[e..b.len().min(e + 160)];
        let eq = e + statement
            .iter()
            .position(|&c| c == b'=' || c == b';')
            .filter(|&k| statement[k] == b'=')?;
        let at = eq
            + 1
            + b[eq + 1..]
                .iter()
                .take_while(|c| c.is_ascii_whitespace())
                .count();
        let (_, escapes) = quote_at(b, at)?;
        let first = at + escapes + 1;
        if b.get(first)
            .is_none_or(|c| c.is_ascii_whitespace() || matches!(c, b'"' | b'\'' | b'\\'))
        {
            return None;
        }
        return named_secret(text, s, eq, ceil_char_boundary(text, first + 1));
    }
    if super::patterns::identified_at(m.as_bytes()) {
        // `IDENTIFIED [WITH plugin] BY value`: the value is read as a named field's, its
        // name the keywords (the last `BY`: the value follows it, only blanks and a quote
        // between).
        let by = m.rfind("BY").max(m.rfind("by")).max(m.rfind("By"))?;
        return named_secret(text, s, s + by + 2, e);
    }
    if repeats_a_few(m) {
        return None;
    }
    if m.starts_with("hv") && m.as_bytes().get(3) == Some(&b'.') {
        // A Vault token's random part holds small letters, capitals and digits; a name or a
        // placeholder lacks one (`hvs.service_token_documentation_page`,
        // `hvs.REPLACE_WITH_YOUR_VAULT_TOKEN`). (A namespace's id may follow a dot.)
        let body = m.as_bytes()[4..]
            .split(|&c| c == b'.')
            .next()
            .unwrap_or_default();
        let has = |f: fn(&u8) -> bool| body.iter().any(f);
        if !(has(u8::is_ascii_lowercase) && has(u8::is_ascii_uppercase) && has(u8::is_ascii_digit))
        {
            return None;
        }
    }
    if m.starts_with("sk-") || m.starts_with("xox") {
        // Trailing dashes belong to the text, not the key.
        let trimmed = m.trim_end_matches('-');
        let body = &trimmed.as_bytes()[3..];
        // A key's random part has long runs of letters and digits; a slug made of words
        // (`sk-hynix-q3-2024-earnings-beat-estimates`) does not.
        let longest = alnum_runs(body).map(<[u8]>::len).max().unwrap_or(0);
        if body.len() < 20 || !digit_or_capital(body) || (m.starts_with("sk-") && longest < 16) {
            return None;
        }
        return Some((s, past_the_cap(text, s + trimmed.len(), e, m)));
    }
    Some((s, past_the_cap(text, e, e, m)))
}

/// What the nineteenth pass's pattern at `s..e` (see `patterns::ai_service_tokens`)
/// matched. A key an AI service or an agent's tool issues: the length its service gives —
/// no letter, digit, `_` or `-` glued after it —, letters and digits in its body, not a
/// placeholder (see [`repeats_a_few`]: `gsk_XXXX…`; [`in_a_row`]: `sk_0123…cdef…`; a body
/// that repeats a short run, `GroqSDKv1GroqSDKv1…`), nor a name made of words (see
/// [`made_of_words`]: `fw_FirmwareUpdateV2Release1`), nor Firecrawl's prefix on a hashed
/// file's name (`/static/fc-3f9a…`, review 80). An Azure storage account's key, under its
/// names: the key alone (its 88 characters, nothing of base64 glued after them). A
/// Telegram bot's token in its API's URL: after `/bot` (see [`validate_bot_token`]). A
/// key's name, a setup page's label or a wallet's call of the lists added last (see
/// `patterns::MORE_CRYPTO_KEY_NAMES`, …): as the eighteenth pass reads them (see
/// [`eighteenth_pass_secret`]). Vault's keys after their names: see [`vault_keys`].
pub(super) fn validate_ai_token(
    text: &str,
    s: usize,
    e: usize,
    f: &Freed,
) -> Option<(usize, usize)> {
    use super::patterns::{
        LAST_SETUP_NAMES, MORE_CRYPTO_KEY_NAMES, MORE_WALLET_CALLS, SOLANA_KEY_NAMES,
        VAULT_KEY_NAMES, VAULT_UNSEAL_BODIES,
    };
    let b = text.as_bytes();
    let m = &text[s..e];
    if m.starts_with("/bot") {
        return validate_bot_token(text, s + "/bot".len(), e, f);
    }
    if VAULT_KEY_NAMES.contains(&m) || VAULT_UNSEAL_BODIES.contains(&m) {
        return vault_keys(b, s, e);
    }
    if SOLANA_KEY_NAMES.contains(&m) {
        return solana_key(b, s, e);
    }
    if [
        &MORE_CRYPTO_KEY_NAMES[..],
        &LAST_SETUP_NAMES,
        &MORE_WALLET_CALLS,
    ]
    .iter()
    .any(|l| l.contains(&m))
    {
        return eighteenth_pass_secret(text, s, e, f);
    }
    if m.ends_with("==") && m.len() >= 88 {
        let key = e - 88;
        let glued = b.get(e).is_some_and(base64_char);
        let body = &b[key..e - 2];
        let random = body.iter().any(u8::is_ascii_digit)
            && body.iter().any(u8::is_ascii_uppercase)
            && body.iter().any(u8::is_ascii_lowercase);
        return (!glued && random && !repeats_a_few(&m[m.len() - 88..])).then_some((key, e));
    }
    let body = m.as_bytes();
    let glued = b
        .get(e)
        .is_some_and(|&c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-'));
    let random = body.iter().any(u8::is_ascii_digit) && body.iter().any(u8::is_ascii_alphabetic);
    let start = body
        .iter()
        .position(|&c| c == b'_' || c == b'-')
        .map_or(0, |k| k + 1);
    let rest = &body[start..];
    // (Three quarters of it a run of 16 characters or fewer repeated.)
    let periodic = (1..=16).any(|p| {
        rest.get(p..).is_some_and(|next| {
            let same = rest.iter().zip(next).filter(|(a, b)| a == b).count();
            next.len() >= p && same * 4 >= next.len() * 3
        })
    });
    // (Words only where capitals stand: a hex body splits into parts that may read so.)
    let words = rest.iter().any(u8::is_ascii_uppercase) && made_of_words(rest);
    let path = m.starts_with("fc-") && s > 0 && matches!(b[s - 1], b'/' | b'.' | b'_');
    if glued || !random || periodic || path || words || repeats_a_few(m) || in_a_row(body) {
        return None;
    }
    Some((s, e))
}

/// A Telegram bot's token at `s..e` (see `patterns::specs`): its id and `:AA`, then 33
/// characters, nothing glued after them, letters and digits among them, not a placeholder
/// (see [`repeats_a_few`]). A letter or `_` the match opens with (the id glued to a word,
/// `bot6123…`) is left out of the span.
pub(super) fn validate_bot_token(
    text: &str,
    s: usize,
    e: usize,
    _: &Freed,
) -> Option<(usize, usize)> {
    let b = text.as_bytes();
    let s = s + usize::from(!b[s].is_ascii_digit());
    let colon = s + memchr::memchr(b':', &b[s..e])?;
    let body = &b[colon + 1..e];
    let glued = b
        .get(e)
        .is_some_and(|&c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-'));
    let random = body.iter().any(u8::is_ascii_digit) || body.iter().any(u8::is_ascii_lowercase);
    (!glued && random && !repeats_a_few(&text[colon + 1..e])).then_some((s, e))
}

/// The most items [`vault_keys`] reads in one list of keys (Vault splits its key into 5 by
/// default, 255 at most; a list's keys run into one detection).
const VAULT_KEYS_LISTED: usize = 256;

/// The most items that are no key [`vault_list_end`] passes over in one list: each name's
/// candidate that fails reads no further than them past the last key (a run of names and
/// lists of items that are no keys is read a few times, not [`VAULT_KEYS_LISTED`]).
const VAULT_LIST_OTHERS: usize = 4;

/// The parts of a name after a Vault key's that make it another value's name: a hash's
/// (`unseal_key_sha256`, `unsealKeyHash`), an id's, a version's, an encrypted copy's
/// (review 83; a count's is a number, no key: `unseal_key_shares: […]` holds keys).
const VAULT_OTHER_PARTS: [&str; 11] = [
    "sha1",
    "sha256",
    "sha512",
    "hash",
    "digest",
    "md5",
    "fingerprint",
    "checksum",
    "id",
    "version",
    "encrypted",
];

/// HashiCorp Vault's unseal or recovery keys after one of their names at `s..e` (see
/// `patterns::VAULT_KEY_NAMES`, `patterns::VAULT_UNSEAL_BODIES`), as [`vault_key`] reads
/// each:
/// - `vault operator unseal` (and the older `vault unseal`): the first key among the
///   words of its line (a `\` or a backtick and a break continue it), options and their
///   values passed over (`-migrate`, `-address http://…`), to a comment's `#`; nothing
///   where it prompts for one;
/// - after a name, the rest of its word (`unseal_keys_b64`, `UNSEAL_KEY_SHARE_1`; not
///   another value's, see [`VAULT_OTHER_PARTS`]), a key's number (`Unseal Key 1`, `#1`;
///   after `Recovery Key` a number, a mark or `is`, not BitLocker's `Recovery Key ID`), a
///   remark (`(base64)`), its marks (see [`vault_marks`]; on a later line only after `:`
///   or `=`), then the key, and the list it opens (see [`vault_list_end`]): one detection
///   from the first key to the last. After `vault operator rekey`'s `Key 1:`, its other
///   keys' lines (`Key 2: …`) too — `Key 1:` only where its line starts; it and the API's
///   `"keys": [` only where more of Vault's output follows (a nonce, `rekey`, `Vault`;
///   `keys_base64`), not a test vector's key or a JSON list of hashes; the API's unseal
///   body's `"key": "…"` only with its path near (see [`vault_call_near`]);
/// - a Terraform variable named for one: its default (`variable "unseal_key" { default =
///   "…" }`, after four other arguments at most, see [`terraform_default`]).
///
/// Not a word glued before the name (`disunseal_key`, `public_keys_base64`), a prompt
/// (`Unseal Key (will be hidden):`), a progress line (`Unseal Progress 1/3`), what is not a
/// key.
fn vault_keys(b: &[u8], s: usize, e: usize) -> Option<(usize, usize)> {
    let m = &b[s..e];
    // (`Key 1:` not after a word, `Public Key 1:`, review 84 — after a log's prefix, a
    // bullet, a quote: no two letters end what stands before it but blanks (a time's `Z`
    // may); read back 8 bytes at most, not to the line's start, review 85.)
    if m == b"Key 1:" {
        let blanks = b[s.saturating_sub(8)..s]
            .iter()
            .rev()
            .take_while(|&&c| c == b' ' || c == b'\t')
            .count();
        let letter = |k: usize| s > k && b[s - k - 1].is_ascii_alphabetic();
        if letter(blanks) && letter(blanks + 1) {
            return None;
        }
    }
    let glued = |c: u8| c.is_ascii_alphabetic() || (m == b"keys_base64" && word_byte(c));
    if s > 0 && glued(b[s - 1]) {
        return None;
    }
    if m == b"operator unseal" || m == b"vault unseal" {
        return unseal_command_key(b, e);
    }
    // (A name that ends with its list's `[`, the API's `"keys": [`, or its value's quote,
    // `@{ key = "…" }`: no more of the name after it.)
    let opens = m.ends_with(b"[") || m.ends_with(b" \"") || m.ends_with(b" '");
    let word = match opens {
        true => 0,
        false => b[e..]
            .iter()
            .take(32)
            .take_while(|&&c| word_byte(c) || c == b'-')
            .count(),
    };
    // (The rest of the name in parts: at `_`, `-` and where a capital follows a small
    // letter.)
    let mut parts = Vec::new();
    let mut part = String::new();
    for (i, &c) in b[e..e + word].iter().enumerate() {
        let camel = c.is_ascii_uppercase() && i > 0 && b[e + i - 1].is_ascii_lowercase();
        if c == b'_' || c == b'-' || camel {
            parts.push(std::mem::take(&mut part));
        }
        if c != b'_' && c != b'-' {
            part.push(char::from(c.to_ascii_lowercase()));
        }
    }
    parts.push(part);
    if parts
        .iter()
        .any(|p| VAULT_OTHER_PARTS.contains(&p.as_str()))
    {
        return None;
    }
    let mut at = e + word;
    // (A key's number, as `vault operator init` prints them: `Unseal Key 1:`, `#1`.)
    let blanks = b[at..]
        .iter()
        .take(3)
        .take_while(|&&c| c == b' ' || c == b'\t')
        .count();
    let hash = usize::from(b.get(at + blanks) == Some(&b'#'));
    let digits = b[at + blanks + hash..]
        .iter()
        .take(4)
        .take_while(|c| c.is_ascii_digit())
        .count();
    // (Not after a name that ends with its mark, `Key 1:`, `"keys": [`, `key = "`: a key
    // may start with digits.)
    let marked = m.ends_with(b":") || opens;
    if !marked && word == 0 && blanks <= 2 && (1..=3).contains(&digits) {
        at += blanks + hash + digits;
    } else if m.starts_with(b"Recovery") || m.starts_with(b"recovery key") {
        // (Not BitLocker's `Recovery Key ID`: a word other than `is` after the name.)
        let next = &b[at + blanks..];
        let word_after = next.first().is_some_and(u8::is_ascii_alphanumeric);
        let verb = [&b"is"[..], b"was"]
            .iter()
            .any(|v| next.starts_with(v) && !next.get(v.len()).is_some_and(|&c| word_byte(c)));
        if word_after && !verb {
            return None;
        }
    }
    // (A remark before the marks: `Unseal Key 1 (base64):`, `(base64 encoded)`, `[b64]`.)
    let remark = b[at..].iter().take(2).take_while(|&&c| c == b' ').count();
    let close = match b.get(at + remark) {
        Some(b'(') => b')',
        Some(b'[') => b']',
        _ => 0,
    };
    if close != 0
        && let Some(k) = b[at + remark..].iter().take(40).position(|&c| c == close)
        && b[at + remark + 1..at + remark + k]
            .iter()
            .all(|c| c.is_ascii_alphanumeric() || b"-, ".contains(c))
        && matches!(b.get(at + remark + k + 1), Some(b':' | b'='))
    {
        at += remark + k + 1;
    }
    let at = if opens { at - 1 } else { at };
    let (value, list) = vault_marks(b, at, m.ends_with(b":") || m.ends_with(b"["))?;
    let first = vault_key(b, value)?;
    // (The API's unseal body, `{"key": "…"}`, escaped in JSON too, `{\"key\": …}`, with
    // its path near: see [`vault_call_near`].)
    if super::patterns::VAULT_UNSEAL_BODIES
        .iter()
        .any(|n| n.as_bytes() == m)
    {
        return vault_call_near(b, s, first.1).then_some(first);
    }
    // (`Key 1:` and the API's `"keys": [` only among what Vault prints with them — its
    // base64 keys, a rekey's nonce, its name: not a test vector's key, a JSON list of
    // hashes or public keys, review 84.)
    // (Within 512 bytes before the name and 4 KiB after its first key: the rekey's nonce,
    // its summary or its command; the API's other names, quoted. Not a test vector's
    // `nonce:`, a page that names Vault, `public_keys_base64`, review 85.)
    if m == b"Key 1:" || m.ends_with(b"[") {
        let near = &b[s.saturating_sub(512)..b.len().min(first.1 + 4096)];
        let context: &[&[u8]] = if m == b"Key 1:" {
            &[b"Operation nonce", b"key shares", b"operator rekey"]
        } else {
            &[b"\"keys_base64\"", b"\"root_token\""]
        };
        if !context
            .iter()
            .any(|w| memchr::memmem::find(near, w).is_some())
        {
            return None;
        }
    }
    // (How deep in brackets the first key stands: `[["…", …], […]]`.)
    let depth = b[at..value]
        .iter()
        .map(|&c| match c {
            b'[' | b'(' => 1,
            b']' | b')' => -1,
            _ => 0,
        })
        .sum::<isize>()
        .max(1)
        .unsigned_abs();
    let list = match list {
        // (`vault operator rekey`'s lines: `Key 1: …`, `Key 2: …`.)
        VaultList::None if m == b"Key 1:" => VaultList::Rekeyed,
        list => list,
    };
    Some((first.0, vault_list_end(b, first.1, list, depth)))
}

/// Whether one of the Vault API's paths that take a key share (`/v1/sys/unseal`, and the
/// same share given to `/v1/sys/generate-root/update`, `/v1/sys/rekey/update`,
/// `/v1/sys/rekey-recovery-key/update`) stands within 512 bytes before its name at `s` or
/// after its key's end `end`, with no blank line between (`curl -d '{"key": …}'
/// $VAULT_ADDR/v1/sys/unseal`, `requests.put(f"{addr}/v1/sys/unseal", json=…)`) but an
/// HTTP request's before its body (`PUT /v1/sys/unseal HTTP/1.1`) — not a page that names
/// the path a paragraph away, nor `backups/sys/unseal.json`, review 86.
fn vault_call_near(b: &[u8], s: usize, end: usize) -> bool {
    const PATHS: [&[u8]; 4] = [
        b"/v1/sys/unseal",
        b"/v1/sys/generate-root/update",
        b"/v1/sys/rekey/update",
        b"/v1/sys/rekey-recovery-key/update",
    ];
    // (A line of blanks alone between two breaks.)
    let blank_line = |between: &[u8]| {
        let mut breaks = memchr::memchr_iter(b'\n', between);
        let Some(mut last) = breaks.next() else {
            return false;
        };
        breaks.any(|k| {
            let empty = between[last + 1..k]
                .iter()
                .all(|c| matches!(c, b' ' | b'\t' | b'\r'));
            last = k;
            empty
        })
    };
    let before = &b[s.saturating_sub(512)..s];
    let after = &b[end..b.len().min(end + 512)];
    PATHS.iter().any(|p| {
        // (An HTTP request's line before its body, `PUT /v1/sys/unseal HTTP/1.1`: the
        // blank line after its headers is the body's.)
        let request = |k: usize| before[k + p.len()..].starts_with(b" HTTP/");
        // (The path whole: not `/v1/sys/unseal-status`.)
        let whole = |rest: &[u8]| {
            !rest
                .first()
                .is_some_and(|&c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_'))
        };
        memchr::memmem::rfind(before, p).is_some_and(|k| {
            whole(&before[k + p.len()..]) && (request(k) || !blank_line(&before[k..]))
        }) || memchr::memmem::find(after, p)
            .is_some_and(|k| whole(&after[k + p.len()..]) && !blank_line(&after[..k]))
    })
}

/// The list a Vault key opens (see [`vault_list_end`]).
#[derive(Clone, Copy, PartialEq)]
enum VaultList {
    /// None: a key alone, or keys in a row (`a,b,c`, `a;b`, `a b c`, one a line).
    None,
    /// In brackets: `[…]`, `(…)`, nested too.
    Bracketed,
    /// Each item on its line after a mark: YAML's `- `, `* `, `+ `, `• `, `1.`, `1)`.
    Lined,
    /// `vault operator rekey`'s: each key on its line after `Key 2:`, `Key 3:`, ….
    Rekeyed,
}

/// The length of the mark a list's item on its line opens with at `at` (`- `, `* `, `+ `,
/// `• `, `1. `, `12) `: its blank included), or 0.
fn item_mark_at(b: &[u8], at: usize) -> usize {
    let digits = b[at..]
        .iter()
        .take(4)
        .take_while(|c| c.is_ascii_digit())
        .count();
    if digits == 0 && b[at..].starts_with("•".as_bytes()) {
        return "•".len() + usize::from(matches!(b.get(at + "•".len()), Some(b' ' | b'\t')));
    }
    let mark = match b.get(at + digits) {
        Some(b'-' | b'*' | b'+') if digits == 0 => 1,
        Some(b'.' | b')') if (1..=3).contains(&digits) => digits + 1,
        _ => return 0,
    };
    if matches!(b.get(at + mark), Some(b' ' | b'\t')) {
        mark + 1
    } else {
        0
    }
}

/// Where a value starts past a Vault key's name and number that end at `at`: past blanks,
/// breaks, quotes (escaped too: `\"`), `:`, `=`, brackets and braces, `|`, `*`, `>`,
/// markup (`</td><td>`), a list's item's mark (see [`item_mark_at`]), a call's name
/// (`tolist(`, Go's `string{`) or keyword (`key=`; see [`small_word_then`]), `is` and
/// `was` — `None` where nothing stands there, or a later line without `:` or `=` before
/// it (`marked`: the name ends with its mark, `"keys": [`; markup and arrows, `→`, count
/// as marks). Also the list that opens there, if any.
fn vault_marks(b: &[u8], mut at: usize, marked: bool) -> Option<(usize, VaultList)> {
    let start = at;
    let (mut list, mut mark, mut later) = (VaultList::None, marked, false);
    // (A list's items indented far: `[⏎` and 70 blanks, review 83.)
    for _ in 0..128 {
        let item = if at == start || matches!(b[at - 1], b'\n' | b' ' | b'\t') {
            item_mark_at(b, at)
        } else {
            0
        };
        match b.get(at) {
            _ if item > 0 => {
                list = VaultList::Lined;
                at += item - 1;
            }
            // (A Terraform variable's block: its default's value.)
            Some(b'{') if let Some(value) = terraform_default(b, at + 1) => {
                (at, mark) = (value - 1, true);
            }
            Some(b'[' | b'(' | b'{') => list = VaultList::Bracketed,
            Some(b':' | b'=') => mark = true,
            Some(b'\n') => later = true,
            Some(
                b' ' | b'\t' | b'\r' | b'"' | b'\'' | b'`' | b'\\' | b']' | b'|' | b'*' | b'>',
            ) => {}
            // (Markup between a name and its value: `<td>Unseal Key 1</td><td>…`.)
            Some(b'<') if b[at..].iter().take(8).any(|&c| c == b'>') => {
                at += b[at..].iter().position(|&c| c == b'>').unwrap_or(0);
                mark = true;
            }
            Some(_) if b[at..].starts_with("→".as_bytes()) => {
                mark = true;
                at += "→".len() - 1;
            }
            // (A call's keyword right after its `(`: hvac's `submit_unseal_key(key='…')`.)
            Some(_) if b[at - 1] == b'(' && small_word_then(b, at, b"=") > 0 => {
                list = VaultList::None;
                at += small_word_then(b, at, b"=") - 1;
            }
            // (A call a value is wrapped in after its mark: Terraform's `tolist([…])`, Go's
            // slice's type, `[]string{…}`.)
            Some(_) if mark && small_word_then(b, at, b"({") > 0 => {
                at += small_word_then(b, at, b"({") - 1;
            }
            _ => match [&b"is"[..], b"was"].iter().find(|v| {
                b[at..].starts_with(v) && !b.get(at + v.len()).is_some_and(|&c| word_byte(c))
            }) {
                Some(v) if at > start => at += v.len() - 1,
                _ => break,
            },
        }
        at += 1;
    }
    (at > start && (mark || !later)).then_some((at, list))
}

/// Where the value of a Terraform variable's default starts, in the block whose `{` ends
/// at `at`: past `default` and its `=`, on the block's first line (`{ default = "…" }`) or
/// after four other arguments at most, each on its line (`description = "…"`, `type =
/// string`, `sensitive = true`, `nullable = false`) — or `None`.
fn terraform_default(b: &[u8], mut at: usize) -> Option<usize> {
    for _ in 0..5 {
        at += b[at..]
            .iter()
            .take(64)
            .take_while(|c| c.is_ascii_whitespace())
            .count();
        let word = small_word_then(b, at, b" \t=").checked_sub(1)?;
        let blanks = b[at + word..]
            .iter()
            .take(16)
            .take_while(|&&c| c == b' ' || c == b'\t')
            .count();
        let eq = at + word + blanks;
        if b.get(eq) != Some(&b'=') || b.get(eq + 1) == Some(&b'=') {
            return None;
        }
        if &b[at..at + word] == b"default" {
            return Some(eq + 1);
        }
        // (Another argument: the next line, within 128 bytes.)
        at = eq + 1 + memchr::memchr(b'\n', &b[eq + 1..b.len().min(eq + 129)])?;
    }
    None
}

/// The length of a word of small letters and `_` (16 at most) at `at` and the one of
/// `ends` right after it — a call's keyword and its `=` (`key=`), a call's name and its
/// `(` (`tolist(`), a Go slice's type and its `{` (`string{`) — or 0.
fn small_word_then(b: &[u8], at: usize, ends: &[u8]) -> usize {
    let n = b[at..]
        .iter()
        .take(17)
        .take_while(|c| c.is_ascii_lowercase() || **c == b'_')
        .count();
    if (1..=16).contains(&n) && b.get(at + n).is_some_and(|c| ends.contains(c)) {
        n + 1
    } else {
        0
    }
}

/// Where the keys a Vault key's list holds end, its first key ending at `end`: the keys
/// that follow, each after what separates them (closing and opening quotes, escaped too,
/// backticks, blanks, breaks, `,`, `;`, `|`, `*`, a list's item's marks) —
/// - in brackets (nested too, `[[…], […]]`), past any item that is no key (`null`, a key
///   cut short; [`VAULT_LIST_OTHERS`] at most) to the last `]` or `)`;
/// - on their lines after a mark (YAML's `- `, `* `, `•`, `1.`), past such items too, to a
///   line without its mark; `vault operator rekey`'s `Key 2: …` (after a log's prefix
///   too), while each holds a key;
/// - elsewhere (`a,b,c`, `a;b`, `a b c`, one a line), while each next word is one.
///
/// [`VAULT_KEYS_LISTED`] items at most.
fn vault_list_end(b: &[u8], mut end: usize, list: VaultList, mut depth: usize) -> usize {
    let mut others = 0;
    let separator = |c: u8| {
        matches!(
            c,
            b' ' | b'\t' | b'\r' | b'\n' | b'"' | b'\'' | b'`' | b'\\' | b',' | b';' | b'|' | b'*'
        )
    };
    let mut at = end;
    for _ in 1..VAULT_KEYS_LISTED {
        let from = at;
        // (Whether a line broke, and a mark opened the item after it.)
        let (mut broke, mut marked) = (false, false);
        for _ in 0..256 {
            let item = if broke && !marked {
                item_mark_at(b, at)
            } else {
                0
            };
            match b.get(at) {
                _ if item > 0 => (marked, at) = (true, at + item),
                Some(b'\n') => (broke, marked, at) = (true, false, at + 1),
                Some(b'[' | b'(') if list == VaultList::Bracketed => {
                    (depth, at) = (depth + 1, at + 1);
                }
                Some(b']' | b')') if list == VaultList::Bracketed && depth > 1 => {
                    (depth, at) = (depth - 1, at + 1);
                }
                Some(&c) if separator(c) => at += 1,
                _ => break,
            }
        }
        if list == VaultList::Rekeyed {
            // (`Key 2: `, `Key 13:⇥`: on a new line after a log's prefix too (48 bytes at
            // most, no break), or right after the separators.)
            let line = b[at..b.len().min(at + 48)]
                .split(|&c| c == b'\n')
                .next()
                .unwrap_or_default();
            let k = match memchr::memmem::find(line, b"Key ") {
                Some(k) if broke || k == 0 => k,
                _ => break,
            };
            let number = at + k + 4;
            let digits = b[number..]
                .iter()
                .take(4)
                .take_while(|c| c.is_ascii_digit())
                .count();
            let blanks = b[number + digits..]
                .iter()
                .skip(1)
                .take(4)
                .take_while(|&&c| c == b' ' || c == b'\t')
                .count();
            if !(1..=3).contains(&digits) || b.get(number + digits) != Some(&b':') || blanks == 0 {
                break;
            }
            at = number + digits + 1 + blanks;
        }
        let ended = list == VaultList::Lined && broke && !marked;
        if at == from || at >= b.len() || matches!(b[at], b']' | b')') || ended {
            break;
        }
        match vault_key(b, at) {
            Some((_, to)) => {
                end = to;
                at = to;
            }
            // (An item that is no key — `null`, a key cut short — passed over in a list, up
            // to [`VAULT_LIST_OTHERS`]; not one that holds a name's or an object's marks:
            // the list has ended, and another name's candidate reads on from there.)
            None if matches!(list, VaultList::Bracketed | VaultList::Lined)
                && others < VAULT_LIST_OTHERS =>
            {
                let item = b[at..]
                    .iter()
                    .take(256)
                    .take_while(|&&c| !separator(c) && !matches!(c, b']' | b')'))
                    .count();
                if item == 0 || b[at..at + item].iter().any(|c| b":=[{(".contains(c)) {
                    break;
                }
                others += 1;
                at += item;
            }
            None => break,
        }
    }
    end
}

/// The key `vault operator unseal` takes, its name ending at `e`: the first of the words
/// on its line (a `\` or PowerShell's backtick before a break continues it; 16 words at
/// most) that [`vault_key`] reads as one, past options and their values, to a comment.
fn unseal_command_key(b: &[u8], e: usize) -> Option<(usize, usize)> {
    let mut at = e;
    for _ in 0..16 {
        let from = at;
        loop {
            match b.get(at) {
                Some(b' ' | b'\t') => at += 1,
                Some(b'\\' | b'`') if matches!(b.get(at + 1), Some(b'\n' | b'\r')) => {
                    at += 2 + usize::from(b[at + 1..].starts_with(b"\r\n"));
                }
                _ => break,
            }
        }
        let ends = |c: u8| matches!(c, b'\n' | b'\r' | b';' | b'|' | b'&' | b'#');
        if at == from || at >= b.len() || ends(b[at]) {
            return None;
        }
        if b[at] != b'-'
            && let Some(key) = vault_key(b, at)
        {
            return Some(key);
        }
        at += b[at..]
            .iter()
            .take(256)
            .take_while(|c| !c.is_ascii_whitespace())
            .count();
    }
    None
}

/// A Vault key at `at` (after a quote or not): 40 to 46 characters of base64 (Vault's
/// shares are 33 bytes, 44 characters; an unsplit key 32) with digits, capitals and small
/// letters, twenty different characters at least, not in a row (`AbCdEf…`, `0123…`), not
/// base64 of text (`SGVsbG8g…`); or 64 or 66 hex digits, letters and digits among them,
/// not in a row — nothing of either glued after it, and a quote before it closed right
/// after it.
fn vault_key(b: &[u8], at: usize) -> Option<(usize, usize)> {
    let quote = b.get(at).copied().filter(|c| matches!(c, b'"' | b'\''));
    let at = at + usize::from(quote.is_some());
    let n = base64_token(&b[at..], false, 128)?;
    let v = &b[at..at + n];
    let run = v.iter().take_while(|&&c| c != b'=').count();
    let has = |f: fn(&u8) -> bool| v.iter().any(f);
    let hex = matches!(n, 64 | 66)
        && v.iter().all(u8::is_ascii_hexdigit)
        && has(u8::is_ascii_digit)
        && has(u8::is_ascii_alphabetic);
    let base64 = (40..=46).contains(&run)
        && has(u8::is_ascii_digit)
        && has(u8::is_ascii_uppercase)
        && has(u8::is_ascii_lowercase)
        && distinct_bytes(&v[..run]) >= 20
        && !base64_decode(v).is_some_and(|d| d.iter().all(|c| c.is_ascii_graphic() || *c == b' '));
    let closed = quote.is_none_or(|q| b.get(at + n) == Some(&q) || b.get(at + n) == Some(&b'\\'));
    ((hex || base64)
        && !in_a_row(v)
        && !in_a_row(&v.to_ascii_lowercase())
        && closed
        && !b.get(at + n).is_some_and(|&c| c == b'_' || c == b'-'))
    .then_some((at, at + n))
}

/// Whether a token is a placeholder (`npm_XXXX…`, `…/services/T00000000/B00000000/XXXX…`):
/// its longest run of letters and digits repeats a handful of characters.
fn repeats_a_few(m: &str) -> bool {
    let longest = alnum_runs(m.as_bytes())
        .max_by_key(|run| run.len())
        .unwrap_or_default();
    distinct_bytes(longest) <= 4
}

/// A candidate of the pass of other services' tokens (see `patterns::prefixed_tokens`):
/// its body must look random — small letters, capitals and digits in a mixed-case token,
/// letters and digits in a hex or upper-case one; a word, a slug or a name does not
/// (`glc_configurationManager…`, `ATATT3-ticket-number-…`, `ops_eyJops_eyJ…`). Then it is
/// checked as every token is (a placeholder is none, see [`repeats_a_few`]; a capped run is
/// read to its end, see [`past_the_cap`]); a key in base64 is its block, wrapped or not,
/// long enough to hold a key; a Google access token ends before a sentence's full stop.
pub(super) fn validate_prefixed_token(
    text: &str,
    s: usize,
    e: usize,
    _: &Freed,
) -> Option<(usize, usize)> {
    let m = &text[s..e];
    // (A `.pgpass` file's name, `pgpass: |`: its entries on the lines after it.)
    if m == "pgpass" {
        return pgpass_after(text, e);
    }
    let body = super::patterns::prefixed_token_body(m)?;
    let has = |f: fn(&u8) -> bool| body.iter().any(f);
    let mixed = super::patterns::MIXED_CASE_TOKENS
        .iter()
        .any(|p| m.starts_with(p));
    let random = has(u8::is_ascii_digit)
        && has(u8::is_ascii_alphabetic)
        && (!mixed || (has(u8::is_ascii_lowercase) && has(u8::is_ascii_uppercase)));
    if !random {
        return None;
    }
    // (The placeholder check every token gets, and a capped run read to its end, as
    // `validate_secret` ends: its readings by what a candidate starts with are other
    // passes' — Notion's older `secret_…` would be read there as a field's name.)
    if repeats_a_few(m) {
        return None;
    }
    let e = past_the_cap(text, e, e, m);
    if m.starts_with("LS0t") {
        let end = base64_block_end(text.as_bytes(), e);
        return (end - s >= 120).then_some((s, end));
    }
    if m.starts_with("ya29.") {
        // (A sentence's full stop is no part of it.)
        let dots = text.as_bytes()[s..e]
            .iter()
            .rev()
            .take_while(|&&c| c == b'.')
            .count();
        return Some((s, e - dots));
    }
    Some((s, e))
}

/// The password in a URL's credentials (`m`: `://user:password@`), up to the first `@` a host
/// follows, as offsets into `m` — unless it is not one: a template a program fills in (see
/// [`template`]: `$DB_PASSWORD`, `${DB_PASSWORD}`, `%s`, …), a mask (see [`masked`]: `****`), a
/// port followed by
/// a path or the next item of a list (`http://host:8080/@user`, `http://localhost:8000,
/// admin@example.com`), or what follows the `@` is no host (`docker://alpine:3.18@sha256:…`,
/// a digest), or a placeholder in brackets (`[REDACTED_SECRET]`, what redaction writes).
/// (`<password>` holds characters the pattern does not take.)
fn url_password(text: &str, s: usize, m: &str) -> Option<(usize, usize)> {
    let colon = 3 + m[3..].find(':')?;
    // The password ends at the first `@` a host follows (`u:p@ss@host`: the second; `u:pw@
    // npm.corp.com/@scope/pkg`: the first, not the path's).
    let a = colon + 1;
    let b = m[a..]
        .match_indices('@')
        .map(|(i, _)| a + i)
        .find(|&i| host_follows(text, s + i + 1))?;
    let pw = m.get(a..b).filter(|pw| !pw.is_empty())?;
    // (A placeholder in brackets may be this guard's own, `[REDACTED_SECRET]`: redacting
    // again must find nothing.)
    let (template, mask) = (template(pw.as_bytes()), masked(pw.as_bytes()));
    let digits = pw.bytes().take_while(u8::is_ascii_digit).count();
    let port = (1..=5).contains(&digits)
        && matches!(
            pw.as_bytes().get(digits),
            Some(b'/' | b',' | b';' | b'?' | b'#' | b')' | b']' | b'}')
        );
    (!template && !mask && !port).then_some((a, b))
}

/// The password of a data source name as Go's MySQL driver writes it,
/// `user:password@tcp(host:port)/db` (`s`: its `@`; `sql.Open("mysql",
/// "root:…@tcp(127.0.0.1:3306)/app")`): after the first `:` of the word before the `@`
/// (back to a blank, a quote, a backtick, a `,`, a `;`, a `<` or a `>`, within 256 bytes:
/// a generated password holds `=` and `(`, review 43; and to another data source name's
/// `@tcp(`, which no password spans: in a run of them, each read its 256 bytes, 42x the
/// bench text) — as a URL's, unless it is a template or a mask (see [`url_password`]). No
/// `:`, no password: `root@tcp(…)`. (`@tcp6(` too.)
pub(super) fn validate_dsn_password(
    text: &str,
    s: usize,
    _: usize,
    _: &Freed,
) -> Option<(usize, usize)> {
    let b = text.as_bytes();
    let mut user = s;
    while user > s.saturating_sub(256) {
        let c = b[user - 1];
        if c.is_ascii_whitespace()
            || b"\"'`,;<>".contains(&c)
            || (c == b'('
                && (b[..user - 1].ends_with(b"@tcp") || b[..user - 1].ends_with(b"@tcp6")))
        {
            break;
        }
        user -= 1;
    }
    // (After a scheme, `mysql://root:…@tcp(…)` as golang-migrate writes it, a URL's
    // credentials: read as a URL's.)
    if memchr::memmem::find(&b[user..s], b"://").is_some() {
        return None;
    }
    let colon = user + memchr::memchr(b':', &b[user..s])?;
    let pw = &b[colon + 1..s];
    (!pw.is_empty() && !template(pw) && !masked(pw))
        .then(|| (colon + 1, s))
        .filter(|&(a, z)| text.is_char_boundary(a) && text.is_char_boundary(z))
}

/// True when a host (a name, an IPv4 address, an IPv6 one in brackets, or nothing) and an
/// optional port start at `at`, followed by the end of the authority: a path, a query, a
/// fragment, a list's separator, a quote, white space or the end of the text — not a
/// digest's `sha256:e3b0…`.
fn host_follows(text: &str, at: usize) -> bool {
    let b = text.as_bytes();
    let mut i = at;
    if b.get(i) == Some(&b'[') {
        i += 1 + b[i + 1..]
            .iter()
            .take(64)
            .take_while(|&&c| c.is_ascii_hexdigit() || c == b':' || c == b'.')
            .count();
        if b.get(i) != Some(&b']') {
            return false;
        }
        i += 1;
    } else {
        i += b[i..]
            .iter()
            .take(256)
            .take_while(|&&c| {
                c.is_ascii_alphanumeric() || matches!(c, b'.' | b'-' | b'_' | b'%') || c >= 0x80
            })
            .count();
    }
    if b.get(i) == Some(&b':') {
        let port = b[i + 1..]
            .iter()
            .take(6)
            .take_while(|c| c.is_ascii_digit())
            .count();
        if port > 5 {
            return false;
        }
        i += 1 + port;
    }
    b.get(i).is_none_or(|&c| {
        !(c.is_ascii_alphanumeric() || matches!(c, b':' | b'@' | b'.' | b'-' | b'_' | b'%'))
    })
}

/// Whether an option's `-` may follow `c` (the option trigger's first character, see
/// `patterns::secret_option`): a blank, a quote, a backtick, an argument list's `[`, `(` or
/// `,`.
pub(super) fn before_option(c: u8) -> bool {
    matches!(
        c,
        b' ' | b'\t' | b'\n' | b'\r' | b'"' | b'\'' | b'`' | b'[' | b'(' | b','
    )
}

/// For a candidate of the command-line forms (see `patterns::command_line_secrets`; its
/// match `text[s..e]`): `Some` of what it finds, `None` when it is not one of them.
#[allow(clippy::option_option)]
fn command_line_secret(text: &str, s: usize, e: usize) -> Option<Option<(usize, usize)>> {
    let m = &text[s..e];
    let b = text.as_bytes();
    // An option's trigger starts with what stands before it (a blank, a quote, …).
    let dashes = (0..=1).find(|&i| m.as_bytes().get(i..i + 2) == Some(b"--"));
    let (s, m) = match dashes {
        Some(i) if !m.starts_with(|c: char| c.is_ascii_alphanumeric()) => (s + i, &m[i..]),
        _ => (s, m),
    };
    // An option stands after a blank, a quote, a backtick, an argument list's `[`, `(` or
    // `,`, or at a line's start.
    let option_start = s.checked_sub(1).is_none_or(|i| before_option(b[i]));
    // The value's first character: the match's last.
    let first = e - text[..e].chars().next_back().map_or(1, char::len_utf8);
    if let Some(rest) = m.strip_prefix("--") {
        let name = rest
            .bytes()
            .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_'))
            .map(|c| c.to_ascii_lowercase())
            .collect::<Vec<u8>>();
        // (`pass` and `pw` as a word only: `--pass`, `--db-pw`, not `--bypass`.)
        let ends = |n: &&str| {
            name.ends_with(n.as_bytes())
                && (!super::patterns::WORD_OPTIONS.contains(n)
                    || name.len() == n.len()
                    || matches!(name[name.len() - n.len() - 1], b'-' | b'_'))
        };
        if !super::patterns::SECRET_OPTIONS.iter().any(ends) {
            return Some(None);
        }
        // (The AWS CLI's secret value is the secret whatever it holds: JSON of any keys,
        // words — but a file's name, `file://…`, or a variable's.)
        if name.ends_with(b"secret-string") || name.ends_with(b"secret-binary") {
            return Some(option_start.then(|| whole_argument(text, first)).flatten());
        }
        // (The option's name an argument of a call, a keyword after it, as argparse and
        // click give its default, `add_argument("--password", default="…")`: the default's
        // string; another keyword's value is none — `help='the password'` was taken, and
        // the keyword of a default, leaving its string in clear.)
        let listed = b
            .get(s + 2 + name.len()..first)
            .is_some_and(|between| memchr::memchr(b',', between).is_some());
        let first = match listed && !matches!(b[first - 1], b'"' | b'\'' | b'`') {
            true => match keyword_default(b, first) {
                Some(first) => first,
                None => return Some(None),
            },
            false => first,
        };
        let token = name.ends_with(b"token");
        return Some(
            option_start
                .then(|| argument(text, first))
                .flatten()
                .filter(|&(a, z)| option_value(&text[a..z], token)),
        );
    }
    if ["Authorization", "authorization", "AUTHORIZATION"]
        .iter()
        .any(|p| begins(m, p))
    {
        // The trigger ends with the scheme, blanks and the credentials' first characters.
        let Some(blank) = m.rfind([' ', '\t']) else {
            return Some(None);
        };
        let head = m[..blank].trim_end_matches([' ', '\t']);
        let scheme = &head[head
            .rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-'))
            .map_or(0, |i| i + 1)..];
        // (Basic credentials are read by their own trigger; a digest's fields are a hash's;
        // a scheme is capitalised, `token` or `bearer` — not a log's word: `Authorization:
        // revoked 2024-…`. A bearer token is read here too, as short as another scheme's:
        // its own trigger, anywhere in prose, reads one of 16 characters or more. A short
        // token a test makes up is none, see `fixture_token`.)
        let named = scheme.starts_with(|c: char| c.is_ascii_uppercase())
            || scheme.eq_ignore_ascii_case("token")
            || scheme.eq_ignore_ascii_case("bearer");
        if !named
            || ["basic", "digest"]
                .iter()
                .any(|w| scheme.eq_ignore_ascii_case(w))
        {
            return Some(None);
        }
        return Some(
            auth_token(text, s + blank + 1, 8).filter(|&(a, z)| !fixture_token(&text[a..z])),
        );
    }
    if begins(m, "ConvertTo-SecureString") || begins(m, "convertto-securestring") {
        return Some(secure_string(text, s + "ConvertTo-SecureString".len()));
    }
    if (begins(m, "login") || begins(m, "LOGIN"))
        && (m.trim_end().ends_with("password") || m.trim_end().ends_with("passwd"))
    {
        return Some(netrc_password(text, s + "login".len()));
    }
    // A command's name, then what ends it in the trigger (not `https://hooks.slack.com/…`).
    let Some(command) = super::patterns::commands_at(m.as_bytes()).next() else {
        // (The trigger reads `ldap` and any letters: another word is no tool's, and no
        // secret — not a candidate for the checks after this one.)
        return begins(m, "ldap").then_some(None);
    };
    // (Not a command inside a word or a file's name: a candidate of this form that fails.)
    if !command_position(b, s) {
        return Some(None);
    }
    let word = m
        .bytes()
        .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'-'))
        .count();
    if !matches!(
        m.as_bytes().get(word),
        Some(b' ' | b'\t' | b'\\' | b'"' | b'\'' | b')')
    ) {
        return None;
    }
    // An LDAP tool's name is the whole word (the trigger reads `ldap` and any letters:
    // `ldapadduser` is no `ldapadd`).
    let name = &m.as_bytes()[..word];
    if command.starts_with("ldap")
        && name != command.as_bytes()
        && name.strip_suffix(b".exe").or(name.strip_suffix(b".EXE")) != Some(command.as_bytes())
    {
        return Some(None);
    }
    Some(chained_password(text, s, command))
}

/// The most names of commands before a command's name that [`password_of_commands_before`]
/// reads.
const CHAINED: usize = 3;

/// The password on the line of the command named at `s` (see [`command_password`]), read as
/// that command's, or else as a command's before it (see [`password_of_commands_before`]).
pub(super) fn chained_password(text: &str, s: usize, command: &str) -> Option<(usize, usize)> {
    // (A registry's `login` reads only its own line.)
    if command == "login" {
        return command_password(text, s, command);
    }
    let line = command_line(text.as_bytes(), s, text.len());
    let found = command_password_on(text, s, command, line, true)
        .or_else(|| password_of_commands_before(text, s, command, line));
    // `mysqladmin … password NEW` sets a new password: with the old one, if given, both.
    match (command == "mysql")
        .then(|| mysqladmin_password(text, s, line))
        .flatten()
    {
        Some((a, z)) => Some(found.map_or((a, z), |(fa, fz)| (fa.min(a), fz.max(z)))),
        None => found,
    }
}

/// The new password `mysqladmin` is given on its line (`start..end`, its name at `s`): the
/// argument after its command `password` (`mysqladmin -u root -p password 'N3w…'`).
fn mysqladmin_password(
    text: &str,
    s: usize,
    (start, end, _): (usize, usize, bool),
) -> Option<(usize, usize)> {
    let b = text.as_bytes();
    if !b[s..].starts_with(b"mysqladmin") {
        return None;
    }
    let word = memchr::memmem::find_iter(&b[start..end], b"password")
        .map(|i| start + i)
        .find(|&i| {
            matches!(b[i - 1], b' ' | b'\t') && matches!(b.get(i + 8), Some(b' ' | b'\t'))
        })?;
    let first = word
        + 8
        + b[word + 8..end]
            .iter()
            .take_while(|&&c| c == b' ' || c == b'\t')
            .count();
    // (A quoted value's first character follows its quote, escaped or not.)
    let quote = b[first..end]
        .iter()
        .take(4)
        .position(|&c| c != b'\\')
        .filter(|&i| matches!(b[first + i], b'"' | b'\''));
    let first = quote.map_or(first, |i| first + i + 1);
    (first < end).then(|| argument(text, first)).flatten()
}

/// The password on the line of the command named at `s`, read as the line of a command
/// before it whose own line that name ended (see [`command_line`]), or ended at a name whose
/// line in turn ends at `s`: a command's name as another's argument — a file, a key's
/// alias, a host named like it (`keytool -import -alias mysql -storepass …`, `curl -T
/// mysql.sql -u admin:…`) — ends that command's line for the validator (so a run of names
/// is read once), yet the options after it are still that command's. The nearest
/// [`CHAINED`] names before `s` on its line (back to a line break no `\` continues, a `;`
/// or a `|`) within the 2 KiB a line is read for, are read, each asked only where the line
/// holds one of its password options (see [`may_give_password`]) — a registry's `login`
/// only after its tool's name (`docker login -u curl -p …`). A `login`'s own line is not
/// read so (see [`chained_password`]).
pub(super) fn password_of_commands_before(
    text: &str,
    s: usize,
    command: &str,
    (start, end, _): (usize, usize, bool),
) -> Option<(usize, usize)> {
    let b = text.as_bytes();
    let line = &b[start..end];
    // Only an option the command itself does not read can be another's (`mysql -px` is the
    // MySQL client's, wherever its name stands; most failed names' lines hold none).
    if command == "login" || !others_may_give_password(line, command) {
        return None;
    }
    // The nearest names before `s`, back to a line break or an operator, which end most
    // lines. (In text, a failed name read back 2 KiB made every scan 12% slower.)
    let mut names = [(0, ""); CHAINED];
    let mut found = 0;
    for i in (s.saturating_sub(2048)..s).rev() {
        if super::patterns::COMMAND_STARTS[usize::from(b[i])] == 0 {
            // (A continuation after a blank, as shells' are written: not a Markdown line
            // break, `-W\`, found by an attack review.)
            if matches!(b[i], b';' | b'|')
                || (matches!(b[i], b'\n' | b'\r') && !(continued(b, i) && blank_continues(b, i)))
            {
                break;
            }
            continue;
        }
        if let Some(c) = named_at(b, i) {
            names[found] = (i, c);
            found += 1;
            if found == CHAINED {
                break;
            }
        }
    }
    let names = &names[..found];
    // (Not the command itself again.)
    let may = |c: &str| !c.eq_ignore_ascii_case(command) && may_give_password(line, c);
    // Only up to the farthest name that may read one are the names' own lines read, for
    // which of them end at `s`.
    let last = names.iter().rposition(|&(_, c)| may(c))?;
    // Its own port rule for a name before where `s` names a path's last part (`zip -r
    // db.zip /var/lib/mysql -P 48213`): the line is plainly that name's.
    let path = s > 0 && matches!(b[s - 1], b'/' | b'\\');
    // Where the lines of the names read so far that end at `s` start (the chain's links).
    let mut links = [s; CHAINED + 1];
    let mut linked = 1;
    names[..=last].iter().enumerate().find_map(|(k, &(i, c))| {
        // (Read no further than `s`: only a line that ends there or at a link is one.)
        let (_, ends, next) = command_line(b, i, s + 1);
        if !next || !links[..linked].contains(&ends) {
            return None;
        }
        links[linked] = i;
        linked += 1;
        // (A name read already, nearer, reads the line the same.)
        let again = names[..k].iter().any(|&(_, d)| d == c);
        (!again && may(c) && (c != "login" || registry_cli_before(b, i)))
            .then(|| command_password_on(text, s, c, (start, end, true), path))
            .flatten()
    })
}

/// Whether `line` holds an option some command of `PASSWORD_COMMANDS` reads a password
/// from (see [`may_give_password`]; the options of every command, gathered once) that
/// `command` does not read.
fn others_may_give_password(line: &[u8], command: &str) -> bool {
    static ALL: OnceLock<(Vec<&'static [u8]>, Vec<u8>)> = OnceLock::new();
    let (options, lasts) = ALL.get_or_init(|| {
        let mut options: Vec<&'static [u8]> = Vec::new();
        let mut lasts = Vec::new();
        for c in super::patterns::PASSWORD_COMMANDS {
            let (password, _, user, _) = command_options(c);
            options.extend(password.iter().chain(user));
            lasts.extend_from_slice(cluster_last(c));
        }
        options.sort_unstable();
        options.dedup();
        lasts.sort_unstable();
        lasts.dedup();
        (options, lasts)
    });
    let (own, _, _, _) = command_options(command);
    options_in(line).any(|i| {
        let option = option_name(&line[i..]);
        let read = |options: &[&[u8]], lasts: &[u8]| {
            cluster(option, lasts) || options.iter().any(|o| option.starts_with(o))
        };
        // (One the command reads glued to its value, `-pS3cret`, every command that reads
        // it reads alike: the value, unless it is a port. Any other may be read otherwise:
        // `-u` is curl's `user:password` and lftp's `user,password`.)
        // (Not where another reads it whole or as a cluster: openssl's `-passin`, which the
        // MySQL client reads as `-p` glued to `assin`; ssh-keygen's `-pP`.)
        let glued_alike = !command.eq_ignore_ascii_case("ssh-keygen")
            && own.iter().any(|o| {
                o.len() == 2 && option.len() > 2 && option.starts_with(o) && option[2] != b'-'
            })
            && !cluster(option, lasts)
            && !options.iter().any(|u| u.len() > 2 && option.starts_with(u));
        read(options, lasts) && !glued_alike
    })
}

/// Whether the continuation before the line break at `i` (see [`continued`]) stands after a
/// blank or continues onto an indented line, as shells' continued lines are written (`curl
/// -v \⏎`, `curl -v\⏎  -u …`) — not a Markdown line break before prose (`-W\⏎then …`).
fn blank_continues(b: &[u8], i: usize) -> bool {
    let j = if b[i] == b'\n' && i > 0 && b[i - 1] == b'\r' {
        i - 1
    } else {
        i
    };
    // (The next line's first byte, past a `\r\n`'s `\n`.)
    let next = i + 1 + usize::from(b[i] == b'\r' && b.get(i + 1) == Some(&b'\n'));
    (j >= 2 && matches!(b[j - 2], b' ' | b'\t')) || matches!(b.get(next), Some(b' ' | b'\t'))
}

/// The command of `PASSWORD_COMMANDS` named at `i`, where a command stands (see
/// [`command_position`]) and as [`next_command`] reads one (whatever the line it would end).
fn named_at(b: &[u8], i: usize) -> Option<&'static str> {
    if super::patterns::COMMAND_STARTS[usize::from(b[i])] == 0 || !command_position(b, i) {
        return None;
    }
    super::patterns::commands_at(&b[i..]).find(|c| named_ends(b, i, c))
}

/// True when a command of `PASSWORD_COMMANDS` starts at `i` (`i > 0`) as its trigger reads
/// one, ending the line of the command `of`: at a word's start, its name (MySQL's and
/// MariaDB's with any suffix), then a blank, a quote, a `\\`, a `)` or `.exe` (`.EXE`) — not the
/// scheme of a URL (`curl https://…`); a registry's `login`, an LDAP tool, `SQLCMD` or an
/// archiver only on a line of its own kind (see [`line_family`]).
pub(super) fn next_command(b: &[u8], i: usize, of: Option<&str>) -> bool {
    use super::patterns::COMMAND_STARTS;
    // (Most bytes start no command's name: one lookup says so.)
    if b.get(i)
        .is_none_or(|&c| COMMAND_STARTS[usize::from(c)] == 0)
        || !command_position(b, i)
    {
        return false;
    }
    super::patterns::commands_at(&b[i..]).any(|c| {
        line_family(c).is_none_or(|f| of.and_then(line_family) == Some(f)) && named_ends(b, i, c)
    })
}

/// Whether the name of `c` at `i` ends as a command's does (see [`next_command`]).
#[inline]
fn named_ends(b: &[u8], i: usize, c: &str) -> bool {
    let after = i + c.len();
    let after = if c.starts_with(['m', 'M']) && !c.starts_with("mongo") {
        after
            + b[after.min(b.len())..]
                .iter()
                .take_while(|d| d.is_ascii_alphanumeric() || matches!(d, b'_' | b'.' | b'-'))
                .count()
    } else {
        let exe = b
            .get(after..after + 4)
            .is_some_and(|e| e.eq_ignore_ascii_case(b".exe"));
        after + usize::from(exe) * 4
    };
    b.get(after)
        .is_none_or(|&d| matches!(d, b' ' | b'\t' | b'"' | b'\'' | b'\\' | b')'))
}

/// The line [`command_password`] reads for the command whose name starts at `s`: from past
/// its name (`start`) to the next command (see [`next_command`]), a terminator outside
/// quotes (see [`command_end`]), or 2 KiB from `s`, however long the name (see
/// `patterns::command_reach`) — read no further than `until`; and whether it ended at the
/// next command.
pub(super) fn command_line(b: &[u8], s: usize, until: usize) -> (usize, usize, bool) {
    use super::patterns::COMMAND_STARTS;
    let word = b[s..]
        .iter()
        .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'-'))
        .count();
    let of = super::patterns::commands_at(&b[s..]).next();
    let start = s + word;
    let max = (s + 2048).min(until).saturating_sub(start);
    // (Whether the next command ended it, as it is read: most bytes start none, and that
    // one lookup is made here, not in a call.)
    let at_next = std::cell::Cell::new(false);
    let end = command_end(b, start, max, |i| {
        let next = COMMAND_STARTS[usize::from(b[i])] != 0 && next_command(b, i, of);
        at_next.set(next);
        next
    });
    let next = at_next.get() || next_command(b, end, of);
    (start, end, end < b.len() && end > start && next)
}

/// The commands whose names end only their own kind's lines (see [`next_command`]): a
/// registry's `login`, an OpenLDAP tool's, `SQLCMD`, an archiver's (`7z`, `rar`),
/// `ssh-keygen` — added after the others, they would otherwise cut another command's line
/// where it names them (`curl -T ldapsearch -u …`, `zip -r ldapadd -P …`) before its
/// password. (`login` ended no line before: a run of registry logins read 2 KiB each, 100x
/// slower than text.) The names added since (the database and cache clients, `cqlsh`,
/// `valkey-cli`, …, the MongoDB tools, Redis's benchmark) end every line, as the first
/// commands' do: of this family, each one named in an older command's line would stop the
/// command-line pass's skip over a run of failing lines there (see
/// `patterns::failing_commands`); a line they cut is read on past them as the older
/// command's (see [`password_of_commands_before`]).
pub(super) fn line_family(command: &str) -> Option<&'static str> {
    // (`login`: a registry's, after its tool's name, which is no command — `docker login`.
    // `SQLCMD`, not `sqlcmd`: that one ended every line before `SQLCMD` was added. The tools
    // added since end each other's lines, so a run of them mixed is read once, too.)
    if command == "login" {
        Some("login")
    } else if command.starts_with("ldap")
        || command == "SQLCMD"
        || command.starts_with("7z")
        || command.ends_with("rar")
        || command == "ssh-keygen"
    {
        Some("added")
    } else {
        None
    }
}

/// True when a command's name at `i` stands where a command does: at the text's start or
/// after anything but a letter, a digit or what joins a word or a file's name (`.`, `-`,
/// `_`, `@`) — so `backup.zip`, `mongo-express`, `x_curl` are no commands, while a path
/// (`/usr/bin/curl`), a blank, a quote, an operator, a field's `=` (`cmd=curl …`, decoded
/// from a link) are before one.
pub(super) fn command_position(b: &[u8], i: usize) -> bool {
    i == 0 || !(b[i - 1].is_ascii_alphanumeric() || matches!(b[i - 1], b'.' | b'-' | b'_' | b'@'))
}

/// PowerShell's `ConvertTo-SecureString 'S3cret' -AsPlainText -Force` (`at`: right after
/// the cmdlet's name): its string — the first argument that is no parameter's, or
/// `-String`'s — when `-AsPlainText` (or a prefix of it, as PowerShell takes) is among its
/// arguments (without it, the string is an encrypted one) and the string is a secret as an
/// option's value is (see [`argument`]). Arguments are read on the cmdlet's line, up to a
/// pipe, a `;`, a `)` or a `}` outside quotes; a backtick before a line break continues
/// it. A single-quoted string ends at a quote not doubled (`'it''s'`), a double-quoted one
/// at a quote no backtick escapes.
fn secure_string(text: &str, at: usize) -> Option<(usize, usize)> {
    let b = text.as_bytes();
    let end = b.len().min(at + 1024);
    let mut i = at;
    // The string (its span, and whether it was quoted), whether `-AsPlainText` was given,
    // and what the last parameter's name says of the next argument.
    let (mut value, mut plain) = (None, false);
    let (mut is_string, mut is_key) = (false, false);
    for _ in 0..12 {
        loop {
            match b.get(i) {
                Some(b' ' | b'\t') if i < end => i += 1,
                Some(b'`') if matches!(b.get(i + 1), Some(b'\n' | b'\r')) => {
                    i += 2 + usize::from(b[i + 1] == b'\r' && b.get(i + 2) == Some(&b'\n'));
                }
                _ => break,
            }
        }
        if i >= end {
            break;
        }
        // (The cmdlet again is its own candidate: a run of them is read once each.)
        let again = b[i..end]
            .get(.."ConvertTo-SecureString".len())
            .is_some_and(|w| w.eq_ignore_ascii_case(b"ConvertTo-SecureString"));
        if again {
            break;
        }
        let (first, last, quoted) = match b[i] {
            b'\n' | b'\r' | b'|' | b';' | b')' | b'}' | b'&' => break,
            b'-' if !is_string => {
                let name = b[i + 1..end]
                    .iter()
                    .take_while(|c| c.is_ascii_alphanumeric())
                    .count();
                let lower = text[i + 1..i + 1 + name].to_ascii_lowercase();
                let switch = !lower.is_empty() && "asplaintext".starts_with(&lower);
                is_string = lower == "string";
                is_key = lower == "key" || lower == "securekey";
                i += 1 + name;
                // A value glued on after a `:` (`-AsPlainText:$true`, `-String:'…'`): a
                // parameter's is read next, as if apart; a switch's says whether it is on.
                let glued = i < end && b[i] == b':';
                if glued {
                    i += 1;
                }
                if glued && switch {
                    let value = b[i..end]
                        .iter()
                        .take_while(|c| !matches!(c, b' ' | b'\t' | b'\n' | b'\r'))
                        .count();
                    plain |= !b[i..i + value].eq_ignore_ascii_case(b"$false");
                    i += value;
                } else {
                    plain |= switch;
                }
                continue;
            }
            q @ (b'\'' | b'"') => {
                let first = i + 1;
                let mut k = first;
                while k < end && !matches!(b[k], b'\n' | b'\r') {
                    if b[k] == b'`' && q == b'"' {
                        k += 2;
                        continue;
                    }
                    if b[k] == q {
                        if b.get(k + 1) == Some(&q) {
                            k += 2;
                            continue;
                        }
                        break;
                    }
                    k += 1;
                }
                let k = k.min(end);
                i = (k + 1).min(end);
                (first, k, true)
            }
            _ => {
                let len = b[i..end]
                    .iter()
                    .take_while(|c| {
                        !matches!(
                            c,
                            b' ' | b'\t' | b'\n' | b'\r' | b'|' | b';' | b')' | b'}' | b'&'
                        )
                    })
                    .count();
                let first = i;
                i += len;
                (first, i, false)
            }
        };
        if is_key {
            is_key = false;
        } else if value.is_none() {
            value = Some((first, last, quoted));
        }
        is_string = false;
    }
    let (first, last, quoted) = value?;
    let last = ceil_char_boundary(text, last);
    let v = text.get(first..last)?;
    // (A variable cast to a type, `[string]$pw`, is none.)
    if !quoted && v.starts_with('[') && v.find("]$").is_some() {
        return None;
    }
    (plain && secret_argument(v, quoted, b.get(last).copied())).then_some((first, last))
}

/// A `.netrc` line's password (`machine h login bob password S3cret`, quoted or after an
/// `account`; the words after `login` from `at`), if it is a secret as an option's value is
/// (see [`argument`]).
pub(super) fn netrc_password(text: &str, at: usize) -> Option<(usize, usize)> {
    let b = text.as_bytes();
    let window = &b[at..b.len().min(at + 512)];
    let words: Vec<&[u8]> = window
        .split(u8::is_ascii_whitespace)
        .filter(|w| !w.is_empty())
        .take(5)
        .collect();
    let value = match words.as_slice() {
        [_, b"password" | b"passwd", v, ..]
        | [_, b"account", _, b"password" | b"passwd", v, ..] => v,
        _ => return None,
    };
    let mut first = value.as_ptr() as usize - b.as_ptr() as usize;
    if matches!(b[first], b'"' | b'\'') {
        first += 1;
    }
    argument(text, first)
}

/// Whether an option's value (`token`: of an option named for a token) is no secret although
/// it passed as one: a list of settings (`docker build --secret id=npmrc,src=…`), or a
/// number for a token (`--token 128001`: a model's token id).
fn option_value(value: &str, token: bool) -> bool {
    let settings = value.split_once('=').is_some_and(|(name, rest)| {
        ident(name.as_bytes()) && !rest.is_empty() && !rest.starts_with('=')
    });
    let number = token && value.bytes().all(|c| c.is_ascii_digit());
    !settings && !number
}

/// An option written with one dash at `s` (see `patterns::SINGLE_DASH_OPTIONS`), its
/// value's first character the match's last at `e`: the value, read as a `--` option's is
/// (see [`command_line_secret`]), where the dash starts an option — not inside a word or a
/// `--` option's name (`--api-token`, `x-token=`: those are read as theirs).
fn single_dash_option(text: &str, s: usize, e: usize) -> Option<(usize, usize)> {
    let b = text.as_bytes();
    if !s.checked_sub(1).is_none_or(|i| before_option(b[i])) {
        return None;
    }
    let name = b[s + 1..e]
        .iter()
        .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_'))
        .count();
    let token = b[s + 1..s + 1 + name].eq_ignore_ascii_case(b"token");
    let first = e - text[..e].chars().next_back().map_or(1, char::len_utf8);
    // (openssl's `-password pass:…` is read as its `-passin`: the value follows `pass:`.
    // Where the value is, not what: a file's name (`file:…`, `@token.txt`), a variable's
    // (`env:…`, `$env:…`), a descriptor, standard input.)
    let rest = &b[first..];
    if rest.starts_with(b"pass:") {
        return pass_argument(text, first);
    }
    if ["file:", "env:", "fd:", "$env:", "stdin"]
        .iter()
        .any(|p| rest.starts_with(p.as_bytes()))
        || (rest[0] == b'@' && {
            // (`@token.txt`, `@/run/secrets/pw`: a file's name has a dot or a slash; a
            // password may start with `@`.)
            let word = &rest[..rest
                .iter()
                .position(u8::is_ascii_whitespace)
                .unwrap_or(rest.len())];
            word.len() > 1 && word.iter().any(|&c| c == b'.' || c == b'/')
        })
    {
        return None;
    }
    argument(text, first).filter(|&(a, z)| option_value(&text[a..z], token))
}

/// How many bytes from `r[i]`, the quote that opened the value, are part of it: 2 where
/// it is doubled (`'It''s9'`, `"Zq8r""Tw2"`: SQL's, YAML's, PowerShell's and CSV's escape,
/// and a shell's or Python's two strings glued into one), 1 for a double quote after
/// PowerShell's backtick (`"Zq8r`"Tw2"`), 0 where it closes the value. Never for a value
/// whose quotes are escaped with backslashes (`escapes`): JSON has no such escape.
fn quote_inside(r: &[u8], i: usize, escapes: usize) -> usize {
    match escapes == 0 && i > 0 {
        true if r[i] == b'"' && r[i - 1] == b'`' => 1,
        true if r.get(i + 1) == Some(&r[i]) => 2,
        _ => 0,
    }
}

/// The quote that opens a value whose first character is at `first`, and how many
/// backslashes escape it (JSON escapes a quote inside a string: `-p\"S3cret\"`).
fn opening_quote(b: &[u8], first: usize) -> Option<(u8, usize)> {
    let q = *b.get(first.checked_sub(1)?)?;
    if !matches!(q, b'"' | b'\'') {
        return None;
    }
    let escapes = b[..first - 1]
        .iter()
        .rev()
        .take(3)
        .take_while(|&&c| c == b'\\')
        .count();
    Some((q, escapes))
}

/// How long the value at `first` runs: a quoted one (see [`opening_quote`]) to the same
/// quote escaped as many times (an escaped quote inside is part of it) or the line's end;
/// a bare one to white space, a quote, a backtick or a shell operator (`;`, `|`, `&`, `)`),
/// or a backslash that escapes a closing quote (JSON's `\"` after a bare value).
fn value_len(b: &[u8], first: usize, quote: Option<(u8, usize)>) -> usize {
    let rest = &b[first..b.len().min(first.saturating_add(NAMED_VALUE_MAX))];
    match quote {
        Some((q, escapes)) => {
            let mut i = 0;
            while i < rest.len() {
                match rest[i] {
                    b'\n' | b'\r' => return i,
                    c if c == q && quote_inside(rest, i, escapes) > 0 => {
                        i += quote_inside(rest, i, escapes) - 1;
                    }
                    c if c == q => {
                        let slashes = rest[..i].iter().rev().take_while(|&&c| c == b'\\').count();
                        if slashes == escapes {
                            return i - escapes;
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
            rest.len()
        }
        None => {
            let ends = |c: u8| {
                c.is_ascii_whitespace()
                    || matches!(c, b'"' | b'\'' | b'`' | b';' | b'|' | b'&' | b')')
            };
            let mut i = 0;
            while i < rest.len() {
                if rest[i] != b'\\' {
                    if ends(rest[i]) {
                        return i;
                    }
                    i += 1;
                    continue;
                }
                let slashes = rest[i..].iter().take_while(|&&c| c == b'\\').count();
                match rest.get(i + slashes) {
                    // A shell's escaped blank inside the value (`S3cr3t\ Pw99`, JSON-escaped
                    // up to twice more), with more of the value after it: the value goes on
                    // (cut there, the rest of the password would be left in the text).
                    Some(b' ' | b'\t')
                        if slashes <= 3 && rest.get(i + slashes + 1).is_some_and(|&d| !ends(d)) =>
                    {
                        i += slashes + 1;
                    }
                    // A line continuation, an escaped closing quote (JSON's `\"` after a bare
                    // value), the end.
                    None
                    | Some(b'"' | b'\'' | b' ' | b'\t' | b'\n' | b'\r' | b'\x0b' | b'\x0c') => {
                        return i;
                    }
                    Some(_) => i += slashes,
                }
            }
            rest.len()
        }
    }
}

/// The argument whose first character is at `first`, whole (quoted, to its closing quote),
/// unless it is empty, a file's name (`file://…`, `fileb://…`), a shell's expansion
/// (`$SECRET`, `${SECRET}`, `$(cat f)`), a mask (`****`) or a placeholder in brackets
/// (`[REDACTED_SECRET]`: redaction's own, which redacting again must not find). (JSON's
/// braces are no template's here.)
fn whole_argument(text: &str, first: usize) -> Option<(usize, usize)> {
    let b = text.as_bytes();
    let quote = opening_quote(b, first);
    let end = ceil_char_boundary(text, first + value_len(b, first, quote));
    let value = &b[first..end];
    let refused = value.is_empty()
        || value.starts_with(b"file://")
        || value.starts_with(b"fileb://")
        || value.starts_with(b"$")
        || masked(value)
        || (value.len() > 2
            && value[0] == b'['
            && value[value.len() - 1] == b']'
            && value[1..value.len() - 1]
                .iter()
                .all(|c| c.is_ascii_uppercase() || *c == b'_'));
    (!refused).then_some((first, end))
}

/// The argument whose first character is at `first`, if it is a secret: as a named field's
/// value is (see [`secret_value`]), or, quoted, a passphrase of words (`--passphrase
/// "correct horse battery 42"`: on a command line a quoted value is one argument).
fn argument(text: &str, first: usize) -> Option<(usize, usize)> {
    let b = text.as_bytes();
    let quote = opening_quote(b, first);
    let len = value_len(b, first, quote);
    let end = ceil_char_boundary(text, first + len);
    let value = &text[first..end];
    // A bare value with a shell's escaped blank (see [`value_len`]) is one argument, redacted
    // whole where its first part, up to the escape, is a secret by itself — as it was judged
    // when the escape ended it (a path with escaped blanks is none: `~/My\ Keys/id_rsa`).
    let judged = match quote {
        Some(_) => value,
        None => &value[..escaped_blank(value.as_bytes()).unwrap_or(value.len())],
    };
    let next = match judged.len() == value.len() {
        true => b.get(end).copied(),
        false => Some(b'\\'),
    };
    secret_argument(judged, quote.is_some(), next).then_some((first, end))
}

/// Where the first escaped blank of a bare value starts (its backslashes; see
/// [`value_len`]), if any.
fn escaped_blank(v: &[u8]) -> Option<usize> {
    let mut i = 0;
    while i < v.len() {
        if v[i] != b'\\' {
            i += 1;
            continue;
        }
        let run = v[i..].iter().take_while(|&&c| c == b'\\').count();
        if matches!(v.get(i + run), Some(b' ' | b'\t')) {
            return Some(i);
        }
        i += run;
    }
    None
}

/// A quote at `j`, after up to three backslashes (a JSON string's escape, once or twice:
/// `\"`, `\\\"`): the quote and how many backslashes stand before it.
fn quote_at(b: &[u8], j: usize) -> Option<(u8, usize)> {
    let escapes = b
        .get(j..)?
        .iter()
        .take(4)
        .take_while(|&&c| c == b'\\')
        .count();
    match b.get(j + escapes) {
        Some(&q @ (b'"' | b'\'')) if escapes < 4 => Some((q, escapes)),
        _ => None,
    }
}

/// Whether a word ends the words of the positional command `of` (its index in
/// [`POSITIONAL_COMMANDS`], if it is one): another such command's name (a run of them is
/// read once each), or `SETUSER`, the next `ACL SETUSER`'s. The names added since
/// [`ADDED_POSITIONAL`] end only the added commands' words: an older command's argument may
/// be named so (`net user hydra …`, found by an attack review).
fn ends_positional_words(w: &[u8], of: Option<usize>) -> bool {
    let added = of.is_some_and(|k| k >= ADDED_POSITIONAL);
    let here = of.is_some_and(|k| k >= HERE_POSITIONAL);
    w.eq_ignore_ascii_case(b"SETUSER")
        || positional_at(w).is_some_and(|k| {
            // (Among the tools added last, with its extension too, `pscp.exe`: a run of
            // them read 24 words each, 8x the bench text, found by review 39. Not an older
            // command's argument so named, `schtasks … /tr net.exe /rp …`: review 40.)
            let n = POSITIONAL_COMMANDS[k].len();
            let ext = here
                && k >= HERE_POSITIONAL
                && w.get(n..)
                    .is_some_and(|x| [&b".exe"[..], b".EXE", b".bat"].contains(&x));
            (n == w.len() || ext) && (added || k < ADDED_POSITIONAL)
        })
}

/// The tools whose password is a positional argument (see [`positional_password`]), as
/// their trigger names them (see `patterns::positional_commands`) — and Mosquitto's
/// clients, whose `-P` is read there too: the command-line pass's prefilter has no room for
/// another literal (see `patterns::other_commands`); so too the tools from
/// [`ADDED_POSITIONAL`] on, whose triggers are the headers' pass's.
pub(super) const POSITIONAL_COMMANDS: [&str; 75] = [
    "htpasswd",
    "mosquitto_passwd",
    "mosquitto_pub",
    "mosquitto_sub",
    "mosquitto_rr",
    "rabbitmqctl",
    "sqlplus",
    "SQLPLUS",
    "wpa_passphrase",
    "cmdkey",
    "Cmdkey",
    "CMDKEY",
    "schtasks",
    "Schtasks",
    "SCHTASKS",
    // (Only with their subcommands: see `patterns::positional_commands`.)
    "security",
    "net",
    "Net",
    "NET",
    // (Redis's: only as their trigger reads them, see [`redis_word`].)
    "requirepass",
    "masterauth",
    "REQUIREPASS",
    "MASTERAUTH",
    "AUTH",
    "auth",
    "ACL",
    "acl",
    // (Only as `keyvault secret set` and `ssm put-parameter`: see
    // `patterns::positional_commands`.)
    "keyvault",
    "ssm",
    // (Added since the commands' pass's prefilter filled: see [`ADDED_POSITIONAL`].)
    "ipmitool",
    "psexec",
    "PsExec",
    "psexec64",
    "PsExec64",
    "rdesktop",
    "hydra",
    "snmpwalk",
    "snmpbulkwalk",
    "snmpget",
    "snmpgetnext",
    "snmpbulkget",
    "snmpset",
    "snmptable",
    "snmptrap",
    "snmpinform",
    "snmpdelta",
    "snmpstatus",
    "snmpdf",
    "snmpusm",
    "snmpvacm",
    "snmptest",
    "snmpnetstat",
    "jarsigner",
    "xfreerdp",
    "xfreerdp3",
    "wlfreerdp",
    "sdl-freerdp",
    "sdl-freerdp3",
    "wfreerdp",
    "dsadd",
    "dsmod",
    "auth-pass",
    "AUTH-PASS",
    // (Only with its subcommand: see `patterns::positional_commands`.)
    "neo4j-admin",
    // (Added since the headers' pass's prefilter filled: see [`HERE_POSITIONAL`].)
    "plink",
    "pscp",
    "psftp",
    "mkpasswd",
    "expdp",
    "impdp",
    "rman",
    "sqlldr",
    "dgmgrl",
    // (Only with their subcommands: see `patterns::positional_commands`.)
    "openssl",
    "mc",
];

/// Where the tools of [`POSITIONAL_COMMANDS`] start whose triggers are the headers' pass's
/// (see `patterns::positional_commands`): the commands' pass's prefilter holds 64
/// literals, the most it keeps at four bytes, and these would each add one. (The headers'
/// pass's holds 31 with them: past 32, its search takes 16 bytes a step, not 32 — the
/// bench text read 2.5% more slowly — so Windows's tools are named as their documentation
/// writes them, `PsExec`, `dsadd`, not in capitals too.)
pub(super) const ADDED_POSITIONAL: usize = 29;

/// Where the tools of [`POSITIONAL_COMMANDS`] start whose triggers are the credential
/// calls' pass's (see `patterns::positional_commands`, `patterns::CREDENTIAL_CALLS`), added
/// when the headers' pass's prefilter held 31 literals. They end words as the others added
/// since [`ADDED_POSITIONAL`] do. `openssl` is a command of the command-line pass too
/// (`-passin pass:…`): its `passwd` is read here, first (see `validate_secret`).
pub(super) const HERE_POSITIONAL: usize = 64;

/// Which of [`POSITIONAL_COMMANDS`] is the longest that `m` starts with (`psexec64`, not
/// `psexec`; `auth-pass`, not `auth`), compared only where its first two bytes are one's:
/// each candidate of the passes that read them asks.
pub(super) fn positional_at(m: &[u8]) -> Option<usize> {
    const STARTS: [[u128; 256]; 2] = super::patterns::name_starts(&POSITIONAL_COMMANDS);
    super::patterns::longest_name(m, &POSITIONAL_COMMANDS, &STARTS)
}

/// Whether `tool` (a word of [`POSITIONAL_COMMANDS`]) is Redis's: a configuration's
/// `requirepass …` and `masterauth …` (in `redis.conf`, after `CONFIG SET`; any case),
/// redis-cli's `AUTH [user] …` and `ACL SETUSER name … >password` (its trigger reads both
/// words). Other kinds' triggers start with some of them (`auth` and `masterauth: …` are a
/// field's name), so they are claimed only with a blank after them, and `AUTH` only where
/// Redis reads it (see [`redis_command_at`]), else the other readings answer; a directive
/// where no configuration sets it (see [`redis_directive_at`]) is none.
fn redis_word(tool: &str) -> bool {
    ["requirepass", "masterauth", "auth", "acl"]
        .iter()
        .any(|w| tool.eq_ignore_ascii_case(w))
}

/// Whether `word` names Redis's client or one of its forks' (see [`REDIS_CLIENTS`]), in
/// any case, after a path (`/usr/bin/`, `C:/Redis/`), quotes or a command substitution's
/// `(` (`{"cmd":"redis-cli`, `$(redis-cli`: see [`opens_client`]), before `.exe`.
fn redis_client(word: &[u8]) -> bool {
    let word = word.trim_ascii();
    let word = word.strip_prefix(b"&").unwrap_or(word);
    // (Quotes, escaped as JSON's, once or twice: `\\"redis-cli`.)
    let quote = |c: &u8| matches!(c, b'"' | b'\'' | b'`' | b'\\');
    let start = word.iter().position(|c| !quote(c)).unwrap_or(word.len());
    let end = word
        .iter()
        .rposition(|c| !quote(c))
        .map_or(start, |k| k + 1);
    let word = &word[start..end.max(start)];
    let n = word.len();
    let word = match n > 4 && word[n - 4..].eq_ignore_ascii_case(b".exe") {
        true => &word[..n - 4],
        false => word,
    };
    REDIS_CLIENTS.iter().any(|c| {
        let n = word.len();
        n >= c.len()
            && word[n - c.len()..].eq_ignore_ascii_case(c)
            && (n == c.len() || opens_client(word[n - c.len() - 1]))
    })
}

/// Redis's client and its forks'.
const REDIS_CLIENTS: [&[u8]; 3] = [b"redis-cli", b"valkey-cli", b"keydb-cli"];

/// Whether `c` may stand right before a client's name (see [`redis_client`]): a blank, a
/// path's separator, a quote, a command substitution's `(`, a pipe's `|`, `&`.
fn opens_client(c: u8) -> bool {
    c.is_ascii_whitespace() || matches!(c, b'/' | b'\\' | b'"' | b'\'' | b'`' | b'(' | b'|' | b'&')
}

/// Whether the `AUTH` at `s` is a command Redis reads (looking back at most 512 bytes):
/// - after redis-cli's prompt at its line's start (past blanks that indent it): a host
///   and a port of four or five digits (and a database's `[n]`, a transaction's `(TX)`),
///   `redis` or `not connected`, then `> ` (`127.0.0.1:6379> `, `cache:6379[2]> `); older
///   clients' `redis 127.0.0.1:6379> ` and `redis /tmp/redis.sock> `;
/// - after `redis-cli` (or a fork's, see [`redis_client`]) and its options on its line
///   (`redis-cli -h cache AUTH …`): read back at most 24 words, stopping at the second of
///   two words that are no options (a run of `AUTH AUTH …` is read two words back each);
/// - at a line's start (past blanks that indent it; or a string's: after a quote or an
///   escaped line break) with such a client named within 256 bytes before or after it
///   (over lines: a string's escaped line breaks are folded into real ones): what is
///   written into its standard input (`echo "AUTH …\r\n" | redis-cli`, a here-document);
///   or with a raw connection named there (`printf 'AUTH …\r\nPING\r\n' | nc cache
///   6379`, `nc cache 6379 <<< 'AUTH …'`: see [`redis_named_near`]) — and so after a
///   writer unquoted (`echo AUTH … | nc …`; see [`STDIN_WRITERS`]).
fn redis_command_at(b: &[u8], s: usize, freed: &Freed) -> bool {
    let from = s.saturating_sub(512);
    let mut i = s;
    // Where the line (or a string in it) the token ending at `k` is on starts, if the token
    // starts it: the token's start (past a quote or an escaped line break).
    let line_start = |k: usize| -> Option<usize> {
        let start = b[from..k]
            .iter()
            .rposition(|&c| c.is_ascii_whitespace())
            .map_or(from, |p| from + p + 1);
        let opened = (start..k).rev().find(|&p| {
            matches!(b[p], b'"' | b'\'')
                || (matches!(b[p], b'n' | b'r') && p > start && b[p - 1] == b'\\')
        });
        match opened {
            Some(p) => Some(p + 1),
            // (Past blanks that indent the line: a transcript indented as a code block.)
            None => {
                let indent = b[from..start]
                    .iter()
                    .rev()
                    .take_while(|c| matches!(c, b' ' | b'\t'))
                    .count();
                let line = start - indent;
                (line == 0 || matches!(b[line - 1], b'\n' | b'\r')).then_some(start)
            }
        }
    };
    if i >= from + 2 && &b[i - 2..i] == b"> " {
        let head = &b[from..i - 2];
        if let Some(h) = head.strip_suffix(b"not connected") {
            return line_start(from + h.len()).is_some_and(|t| t == from + h.len());
        }
        let Some(t) = line_start(i - 2) else {
            // (An older client's `redis host:port> `, `redis /tmp/redis.sock> `.)
            let token = head
                .iter()
                .rposition(|&c| c == b' ')
                .map_or(head, |p| &head[p + 1..]);
            let before = from + head.len() - token.len();
            return before >= from + 6
                && &b[before - 6..before] == b"redis "
                && line_start(before - 1) == Some(before - 6)
                && (token.ends_with(b".sock") || redis_host(token));
        };
        let token = &b[t..i - 2];
        return token == b"redis" || redis_host(token);
    }
    // At a line's (or a string's) start, or the first word a writer (`echo`, `printf`, …)
    // writes: a client or a raw connection named before it or after it.
    let written = || {
        let mut head = b[from..s].trim_ascii_end();
        for _ in 0..2 {
            let k = head
                .iter()
                .rposition(|c| c.is_ascii_whitespace())
                .map_or(0, |p| p + 1);
            match &head[k..] {
                w if STDIN_WRITERS.iter().any(|t| w == t.as_bytes()) => return true,
                w if w.len() > 1 && w[0] == b'-' => head = head[..k].trim_ascii_end(),
                _ => return false,
            }
        }
        false
    };
    if line_start(s) == Some(s) || written() {
        // (Over lines: a string's escaped line breaks are folded into real ones.)
        return redis_named_near(b, s, freed);
    }
    // `redis-cli` and its options before, word by word.
    let mut plain = false;
    for _ in 0..24 {
        while i > from && matches!(b[i - 1], b' ' | b'\t') {
            i -= 1;
        }
        let end = i;
        while i > from && !b[i - 1].is_ascii_whitespace() {
            i -= 1;
        }
        let word = &b[i..end];
        if word.is_empty() || (i == from && from > 0) {
            return false;
        }
        if redis_client(word) {
            return true;
        }
        // (An option's value, then the option: two words that are no options in a row
        // are no redis-cli's.)
        let option = word[0] == b'-';
        if !option && plain {
            return false;
        }
        plain = !option;
    }
    false
}

/// How Redis reads an `AUTH` at `s`.
#[derive(Clone, Copy, PartialEq)]
enum RedisAuth {
    /// As its command, `AUTH [user] password` (see [`redis_command_at`]).
    Command,
    /// As an option of `HELLO protover AUTH user password [SETNAME name]`.
    Hello,
    /// As an option of `MIGRATE host port key db timeout [COPY] [REPLACE] AUTH password
    /// [KEYS …]`.
    Migrate,
}

/// How Redis reads the `AUTH` at `s`, if it reads one: its command where Redis reads one
/// (see [`redis_command_at`]); else an option of `HELLO` two words before it on its line
/// (after a protocol's version, 2 or 3: `HELLO 3 AUTH …`) or of `MIGRATE` six to eight
/// words before it (its five arguments, the port, the database and the timeout numbers,
/// then `COPY` or `REPLACE`), that command where Redis reads one (`127.0.0.1:6379> HELLO
/// 3 AUTH …`, `redis-cli MIGRATE … AUTH …`).
fn redis_auth_at(b: &[u8], s: usize, freed: &Freed) -> Option<RedisAuth> {
    if redis_command_at(b, s, freed) {
        return Some(RedisAuth::Command);
    }
    // The words before it on its line, nearest first (a string's opening quote before the
    // command passed over: `echo 'HELLO 3 AUTH …' | redis-cli`).
    // (Within 1 KiB: a longer word is none of theirs.)
    let mut words = [&b""[..]; 8];
    let mut i = s;
    let from = s.saturating_sub(1024);
    for back in 0..words.len() {
        while i > from && matches!(b[i - 1], b' ' | b'\t') {
            i -= 1;
        }
        let end = i;
        while i > from && !b[i - 1].is_ascii_whitespace() {
            i -= 1;
        }
        if i == from && from > 0 {
            return None;
        }
        // (Its quote JSON-escaped too: `"echo \"HELLO 3 AUTH …\" | redis-cli"`.)
        let escapes = b[i..end].iter().take_while(|&&c| c == b'\\').count();
        let quoted = match b.get(i + escapes) {
            Some(b'"' | b'\'') if i + escapes < end => escapes + 1,
            _ => 0,
        };
        let word = &b[i + quoted..end];
        let digits = |w: &[u8]| !w.is_empty() && w.iter().all(u8::is_ascii_digit);
        let option =
            |w: &[u8]| w.eq_ignore_ascii_case(b"COPY") || w.eq_ignore_ascii_case(b"REPLACE");
        // (Right before `AUTH`: HELLO's version, or MIGRATE's timeout or an option.)
        if word.is_empty() || back == 0 && !(digits(word) || option(word)) {
            return None;
        }
        words[back] = word;
        let form = match back {
            1 if word.eq_ignore_ascii_case(b"hello") && matches!(words[0], b"2" | b"3") => {
                RedisAuth::Hello
            }
            // (`host port key db timeout`, then `COPY`, `REPLACE`.)
            5..=7
                if word.eq_ignore_ascii_case(b"migrate")
                    && words[..back - 5].iter().all(|w| option(w))
                    && [back - 5, back - 4, back - 2]
                        .iter()
                        .all(|&k| digits(words[k])) =>
            {
                RedisAuth::Migrate
            }
            _ => continue,
        };
        return redis_command_at(b, i + quoted, freed).then_some(form);
    }
    None
}

/// Whether a Redis client (`redis-cli`, see [`redis_client`]) or a raw connection is
/// named within 256 bytes of `s` (the tool's name's first byte; a client's `-cli`): `nc`,
/// `ncat`, `netcat`, `telnet`, `socat` or openssl's `s_client` as a word (after a path,
/// before `.exe` or `.openbsd`), or bash's `/dev/tcp/` (`printf 'AUTH …\r\n' |
/// /usr/bin/nc cache 6379`, `nc cache 6379 <<< 'AUTH …'`, a `telnet` session's
/// transcript).
///
/// `freed` keeps what the last look found, and how far it read (see `Freed::redis_names`):
/// the next candidate reads on from there, so a run of them reads each byte once. (Each
/// read its 512 bytes again: `'AUTH ` over and over read 15 times as slowly as ordinary
/// text.)
fn redis_named_near(b: &[u8], s: usize, freed: &Freed) -> bool {
    let (lo, hi) = (s.saturating_sub(256), b.len().min(s + 256));
    // What the last look knows of `lo..`: no name in `from..upto`, then the first there
    // is, if it found one.
    let known = freed
        .redis_names
        .get()
        .filter(|&(from, upto, first)| from <= lo && first.map_or(upto >= lo, |p| p >= lo));
    let (from, upto, first) = known.unwrap_or((lo, lo, None));
    // (Where none is up to `hi`, on past it a few KiB at a time: each look at a few bytes
    // cost more than its search. Not past a name found before `hi`: the next candidate
    // past that name looks again from its own window, and a look ahead each time read
    // those KiB again — review 33.)
    let ahead = b.len().min(hi.max(upto.saturating_add(NAMES_AHEAD)));
    let (first, upto) = match first {
        None if upto < hi => match redis_name_in(b, upto, hi) {
            None => (redis_name_in(b, hi, ahead), ahead),
            found => (found, hi),
        },
        first => (first, upto),
    };
    freed.redis_names.set(Some((from, upto, first)));
    first.is_some_and(|p| p < hi)
}

/// How far past what it needs [`redis_named_near`] reads on.
const NAMES_AHEAD: usize = 4096;

/// The first place in `from..to` where a Redis client or a raw connection is named (see
/// [`redis_named_near`]): where its name starts (`-cli`'s client at its `-`).
fn redis_name_in(b: &[u8], from: usize, to: usize) -> Option<usize> {
    /// What a hit of each looked-for name stands for.
    #[derive(Clone, Copy)]
    enum Name {
        /// A client's `-cli`, in the cases people write it.
        Client,
        /// A raw connection's tool, or the start of one's name (`nc` of `ncat`).
        Tool,
        /// bash's `/dev/tcp/`, wherever it stands.
        DevTcp,
    }
    const NAMES: [(&[u8], Name); 9] = [
        (b"-cli", Name::Client),
        (b"-CLI", Name::Client),
        (b"-Cli", Name::Client),
        (b"nc", Name::Tool),
        (b"netcat", Name::Tool),
        (b"telnet", Name::Tool),
        (b"socat", Name::Tool),
        (b"s_client", Name::Tool),
        (b"/dev/tcp/", Name::DevTcp),
    ];
    // (Built once: a finder built for each look cost more than its search.)
    static FINDERS: std::sync::LazyLock<[memchr::memmem::Finder<'static>; 9]> =
        std::sync::LazyLock::new(|| NAMES.map(|(needle, _)| memchr::memmem::Finder::new(needle)));
    const TOOLS: [&[u8]; 6] = [b"nc", b"ncat", b"netcat", b"telnet", b"socat", b"s_client"];
    // (A byte of a character beyond ASCII is a word's too: `énc` names no tool.)
    let tool_char =
        |c: u8| c.is_ascii_alphanumeric() || c >= 0x80 || matches!(c, b'_' | b'.' | b'-');
    let named = |name: Name, p: usize| match name {
        // A client's name ending at `-cli`, in any case, after what may open one (see
        // `opens_client`), `-cli` ending the word or before its extension
        // (`redis-client.crt` is a file's). Read in a few bytes, not back over the word: a
        // run of `-cli-cli…` read 256 bytes back at each (review 33).
        Name::Client => {
            let ends = !b.get(p + 4).is_some_and(|&c| c.is_ascii_alphanumeric());
            ends && REDIS_CLIENTS.iter().any(|c| {
                let at = (p + 4).checked_sub(c.len());
                at.is_some_and(|a| {
                    b[a..p + 4].eq_ignore_ascii_case(c) && (a == 0 || opens_client(b[a - 1]))
                })
            })
        }
        Name::DevTcp => true,
        // A tool's word, up to its first `.` (its first ten bytes: no tool's is longer).
        Name::Tool => {
            let word = &b[p..b.len().min(p + 10)];
            let word = &word[..word.iter().take_while(|&&c| tool_char(c)).count()];
            (p == 0 || !tool_char(b[p - 1]))
                && TOOLS.contains(&word.split(|&c| c == b'.').next().unwrap_or(word))
        }
    };
    // (Each name looked for only before the first found so far.)
    let mut first = None;
    for (finder, &(_, name)) in FINDERS.iter().zip(&NAMES) {
        let to = first.unwrap_or(to);
        let end = b.len().min(to + finder.needle().len() - 1);
        first = finder
            .find_iter(&b[from..end])
            .map(|k| from + k)
            .take_while(|&p| p < to)
            .find(|&p| named(name, p))
            .or(first);
    }
    first
}

/// Whether `token` is redis-cli's prompt's host and port: a port of four or five digits
/// after a colon, then a database's `[n]` or a transaction's `(TX)`, if any.
fn redis_host(token: &[u8]) -> bool {
    let token = token.strip_suffix(b"(TX)").unwrap_or(token);
    let host = match token.strip_suffix(b"]") {
        Some(t) => match t.iter().rposition(|&c| c == b'[') {
            Some(k) if k + 1 < t.len() && t[k + 1..].iter().all(u8::is_ascii_digit) => &t[..k],
            _ => return false,
        },
        None => token,
    };
    let port = host.iter().rev().take_while(|c| c.is_ascii_digit()).count();
    (4..=5).contains(&port) && host.len() > port + 1 && host[host.len() - port - 1] == b':'
}

/// The passwords an ACL's rules set (`ACL SETUSER name …`, an ACL file's or `redis-server
/// --user`'s `user name …`; `from`: past the user's name): each word after `>` (`<` removes
/// one, which names it too; `>"…"` quoted), from the first to the last, on the line read
/// as far as `end` (1 KiB), however many words it holds, past a selector's `)` (`(~temp:*
/// +get)`). The next `ACL SETUSER`, or the next `user` for a file's line (`user_line`),
/// ends it: a run of them is read once each.
fn acl_passwords(text: &str, from: usize, end: usize, user_line: bool) -> Option<(usize, usize)> {
    let b = text.as_bytes();
    let stop =
        |w: &[u8]| ends_positional_words(w, None) || (user_line && w.eq_ignore_ascii_case(b"user"));
    let (mut first, mut last) = (None, None);
    // (Inside a selector, `(~temp:* +get)`, whose `)` ends no line.)
    let mut selector = false;
    let mut at = from;
    while at < end {
        let mut words = [(0, 0); 24];
        let (n, stopped) = command_words(b, at, end, &mut words, stop);
        for &(a, z) in &words[..n] {
            selector |= b[a] == b'(';
            // (Quoted, `>"…"`, JSON-escaped too.)
            let value = past_quote(b, a + 1, b.len()).unwrap_or(a + 1);
            if z > a + 1
                && matches!(b[a], b'>' | b'<')
                && let Some((pa, pz)) = argument(text, value)
            {
                first = first.or(Some(pa));
                last = Some(pz);
            }
        }
        let close = selector && b.get(stopped) == Some(&b')');
        if (n < words.len() && !close) || stopped <= at {
            break;
        }
        selector &= !close;
        at = stopped + usize::from(close);
    }
    Some((first?, last?))
}

/// Whether the configuration directive at `s` (`requirepass`, `masterauth`) stands where
/// Redis reads one — anywhere but after a word of prose (`if you set requirepass …`): at
/// its line's start, after a list's or a prompt's mark, a key (`run:`), a quote, `echo`,
/// `CONFIG SET` (any case), a `/` (`sed 's/…/requirepass …/'`), a comment's `#`.
fn redis_directive_at(b: &[u8], s: usize) -> bool {
    let from = s.saturating_sub(24);
    let blanks = b[from..s]
        .iter()
        .rev()
        .take_while(|&&c| c == b' ' || c == b'\t')
        .count();
    let i = s - blanks;
    if blanks == 0 || i == from {
        return true;
    }
    // The word before: prose when letters only (but `echo`, `printf`, `CONFIG SET`).
    let word = b[from..i]
        .iter()
        .rev()
        .take_while(|c| !c.is_ascii_whitespace())
        .count();
    let w = &b[i - word..i];
    if w.is_empty() || !w.iter().all(u8::is_ascii_alphabetic) || w.len() < 2 {
        return true;
    }
    let config = || {
        let before = b[from..i - word].trim_ascii_end();
        before.len() >= 6 && before[before.len() - 6..].eq_ignore_ascii_case(b"config")
    };
    [&b"echo"[..], b"printf", b"RUN"].contains(&w) || (w.eq_ignore_ascii_case(b"set") && config())
}

/// The password `AUTH` carries in Redis's protocol (RESP), as a client writes it (`printf
/// '*2\r\n$4\r\nAUTH\r\n$10\r\nS3cr3tPw99\r\n' | nc cache 6379`, a capture of the
/// traffic), its bulk string's `$4` at `s`: right after the array's header of two bulk
/// strings (`AUTH password`) or three (Redis 6's `AUTH user password`), then each
/// argument's length and, on the next line, that many bytes; the last is the password,
/// judged as a quoted argument is (its length sets it apart as quotes do: blanks are its
/// own, see [`secret_argument`]). `None` unless the array is whole, every length right
/// and every line ended (`\r\n` or `\n`, as the text was folded) — and the password
/// holds no line break and is [`QUOTED_VALUE_MAX`] bytes at most, as a quoted value is: a
/// length that reaches far over the next arrays (`$99981`, once every 20 bytes, read
/// 100 KB each, 65x slower than ordinary text — review 31) ends at their first line
/// break, read once.
fn resp_auth(text: &str, s: usize) -> Option<(usize, usize)> {
    let b = text.as_bytes();
    // A line's end at `i`: its length.
    let eol = |i: usize| match b.get(i..) {
        Some([b'\r', b'\n', ..]) => Some(2),
        Some([b'\n', ..]) => Some(1),
        _ => None,
    };
    let head = b[..s].strip_suffix(b"\n")?;
    let head = head.strip_suffix(b"\r").unwrap_or(head);
    let args = match head {
        [.., b'*', b'2'] => 1,
        [.., b'*', b'3'] => 2,
        _ => return None,
    };
    // Past `$4`, its line's end, `AUTH` and its line's end.
    let mut i = s + 2;
    i += eol(i)?;
    i += 4;
    i += eol(i)?;
    let mut last = None;
    for _ in 0..args {
        if b.get(i) != Some(&b'$') {
            return None;
        }
        let digits = b[i + 1..]
            .iter()
            .take(5)
            .take_while(|c| c.is_ascii_digit())
            .count();
        let len: usize = text.get(i + 1..i + 1 + digits)?.parse().ok()?;
        i += 1 + digits;
        i += eol(i)?;
        if len > QUOTED_VALUE_MAX {
            return None;
        }
        let value = text.get(i..i + len)?;
        if memchr::memchr2(b'\r', b'\n', value.as_bytes()).is_some() {
            return None;
        }
        last = Some((i, value));
        i += len;
        if i < b.len() {
            i += eol(i)?;
        }
    }
    let (a, value) = last?;
    secret_argument(value, true, None).then_some((a, a + value.len()))
}

/// The password a command takes as a positional argument, its name at `s` (`m` its
/// trigger's match): `None` where `m` names no such command.
/// - `htpasswd -b[…] file user password` (`-nb user password` with no file; `-C` and `-r`
///   take a number);
/// - `rabbitmqctl [-n node …] add_user user password` (and `change_password`,
///   `authenticate_user`);
/// - `sqlplus [-S …] user/password[@connect]` (the logon quoted whole or the password
///   alone; `/nolog`, `/ as sysdba` and `/@alias` give none);
/// - `wpa_passphrase SSID passphrase`;
/// - Windows's `cmdkey … /pass:password`, `schtasks … /rp password` (`/p`: a remote
///   system's), `net user name password`, `net use [X:] \\host\share password` (a
///   WebDAV URL too; `*` prompts), their names in any of the usual cases;
/// - macOS's `security add-generic-password … -w password` (and `add-internet-password`);
/// - Mosquitto's `mosquitto_pub|sub|rr … -P password` (`--pw`), `mosquitto_passwd [-c] -b
///   file user password`;
/// - Redis's `requirepass password` and `masterauth password` (see
///   [`redis_directive_at`]), `AUTH [user] password` (see [`redis_command_at`]), `ACL
///   SETUSER name … >password` and an ACL file's `user name … >password` (see
///   [`acl_passwords`]);
/// - `az keyvault secret set … --value password`, `aws ssm put-parameter … --value
///   password` (a `SecureString`'s, or a parameter's whose name names a secret);
/// - the tools added since (see [`ADDED_POSITIONAL`]): `ipmitool … -P password`, `psexec
///   … -p password`, `rdesktop -p`, `hydra -p`, the Net-SNMP tools' `-A`, `-X` and `-c`
///   (but `public` and `private`), `jarsigner -storepass … -keypass …`, FreeRDP's `/p:`
///   and `/gp:` (1.0's `-p`), `dsadd|dsmod … -pwd`, Redis Sentinel's `auth-pass` (see
///   [`sentinel_before`]), `neo4j-admin [dbms] set-initial-password [--option] password`;
/// - those added last (see [`HERE_POSITIONAL`]): PuTTY's `plink|pscp|psftp … -pw password`,
///   `mkpasswd [-m method] [-S salt] password`, `openssl passwd [-6] [-salt salt] password`
///   (`-in`, `-stdin` give none), MinIO's `mc alias set NAME URL ACCESS-KEY SECRET-KEY`
///   (`mc config host add`; `mc admin user add ALIAS USER PASSWORD`), Oracle's
///   `expdp|impdp|rman|sqlldr|dgmgrl` with a logon (`user/password[@db]`: the first word
///   with its database, quoted or among parameters; after `userid=`, RMAN's `target`,
///   `catalog`, `auxiliary`); the program's path quoted too (`"C:\…\plink.exe" -pw …`).
///
/// The arguments are read on the command's line (up to a line break, `;`, `|`, an
/// operator's `&` or `)` outside quotes, a quote never closed, or another such command's
/// name: see [`ends_positional_words`]), or an argument list's strings (see
/// [`listed_words`]), 24 words and 1 KiB at most (an ACL's rules, 1 KiB); a quoted part
/// glued to a word is that word's (`/user:"CORP\bob"`). The password is judged as an
/// option's value is (see [`argument`]).
/// Where option `o`'s value is written among a command's `words`, at each place the
/// option is given (`None` where no word follows it): its own word's next, or glued after
/// `=` (past a quote, JSON-escaped too; to the word's end, its closing quote with it) — or,
/// where `glued`, right after the option itself (`-bvalue`).
fn option_words<'w>(
    b: &'w [u8],
    words: &'w [(usize, usize)],
    o: &'w [u8],
    glued: bool,
) -> impl Iterator<Item = Option<(usize, usize)>> + 'w {
    words.iter().enumerate().filter_map(move |(k, &(a, z))| {
        let w = &b[a..z];
        if w == o {
            return Some(words.get(k + 1).copied());
        }
        let at = if w.len() > o.len() + 1 && w.starts_with(o) && w[o.len()] == b'=' {
            a + o.len() + 1
        } else if glued && w.len() > o.len() && w.starts_with(o) {
            a + o.len()
        } else {
            return None;
        };
        Some(Some((past_quote(b, at, b.len()).unwrap_or(at), z)))
    })
}

/// The value of a `KEY=value` word at `a..z` (see [`store_values`], [`generated_secrets`]),
/// if a secret: its key a name (see [`key_name`]), its value no file's (`@…`), no
/// standard input's (`-`), no documentation's example (see [`example_value`]), judged as
/// an option's value is (see [`argument`]); in a word quoted whole (`'foo=two words'`), or
/// one with blanks, to the word's end, as a quoted one.
fn key_value_pair(text: &str, a: usize, z: usize) -> Option<(usize, usize)> {
    let b = text.as_bytes();
    let a = past_quote(b, a, z).unwrap_or(a);
    // (Its closing quote, where the quote is glued on: `--from-literal="k=v"`.)
    let whole = opening_quote(b, a).map(|(q, _)| z - usize::from(b[z - 1] == q));
    let w = &b[a..z];
    let eq = w.iter().position(|&c| c == b'=')?;
    let at = a + eq + 1;
    let at = past_quote(b, at, z).unwrap_or(at);
    if !key_name(&w[..eq]) || matches!(b.get(at), Some(b'@') | None) || example_value(&b[at..z]) {
        return None;
    }
    let blanks = opening_quote(b, at).is_none() && b[at..z].contains(&b' ');
    match whole.or(blanks.then_some(z)) {
        Some(z) if at < z => {
            secret_argument(text.get(at..z)?, true, b.get(z).copied()).then_some((at, z))
        }
        _ => argument(text, at),
    }
}

/// Whether `key` is a key's name as a store's `KEY=value` or `KEY value` writes it (see
/// [`store_values`]): a letter or `_` first, then letters, digits, `_`, `-`, `.`, `:` or
/// `/` (`DB_PASSWORD`, `Movies:ServiceApiKey`, `db.password`).
fn key_name(key: &[u8]) -> bool {
    key.first()
        .is_some_and(|c| c.is_ascii_alphabetic() || *c == b'_')
        && key
            .iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-' | b'.' | b':' | b'/'))
}

fn positional_password(
    text: &str,
    s: usize,
    m: &str,
    freed: &Freed,
) -> Option<Option<(usize, usize)>> {
    // (An ACL file's `user` line is read as `ACL SETUSER`: see [`acl_passwords`].)
    let at = positional_at(m.as_bytes());
    let tool = at
        .map(|k| POSITIONAL_COMMANDS[k])
        .or_else(|| (m.starts_with("user") || m.starts_with("USER")).then_some("user"))?;
    // (Not the start of a longer name's, `network key: …`.)
    if super::patterns::local_name_at(m.as_bytes()).is_some_and(|n| n.len() > tool.len()) {
        return None;
    }
    let b = text.as_bytes();
    // (`openssl` only as its trigger reads it, with the subcommand: `openssl -passin …` is
    // the command-line pass's. `mc`'s trigger is its subcommand's alone.)
    if tool == "openssl" && m.split_ascii_whitespace().nth(1) != Some("passwd") {
        return None;
    }
    // (Redis's words only before a blank: `auth(`, a field's call, is not read back for
    // `AUTH`'s — a run of them with no blank read back to the text's start, found by this
    // release's run of the hostile units.)
    let blank = matches!(m.as_bytes().get(tool.len()), Some(b' ' | b'\t'));
    let auth = (blank && tool.eq_ignore_ascii_case("auth")).then(|| redis_auth_at(b, s, freed));
    if redis_word(tool)
        && (!blank
            || auth == Some(None)
            || tool.eq_ignore_ascii_case("acl")
                && !m
                    .split_ascii_whitespace()
                    .nth(1)
                    .is_some_and(|w| w.eq_ignore_ascii_case("setuser")))
    {
        return None;
    }
    // (A directive where no configuration sets it: prose.)
    if ["requirepass", "masterauth"]
        .iter()
        .any(|d| tool.eq_ignore_ascii_case(d))
        && !redis_directive_at(b, s)
    {
        return Some(None);
    }
    let end = ceil_char_boundary(text, s.saturating_add(1024));
    // (`AUTH` opening a string, `(echo 'AUTH pw'; echo 'INFO x') | …`: its words end where
    // the string does.)
    let end = match s.checked_sub(1).map(|k| b[k]) {
        Some(q @ (b'"' | b'\'')) if tool.eq_ignore_ascii_case("auth") => {
            memchr::memchr(q, &b[s..end]).map_or(end, |k| s + k)
        }
        _ => end,
    };
    // The words after the name: where each starts (past an opening quote) and ends.
    let mut words = [(0, 0); 24];
    // (`ACL SETUSER`, `keyvault secret set`, `ssm put-parameter`: the words after them,
    // which the trigger read.)
    let mut i = s + match tool.eq_ignore_ascii_case("acl")
        || ["keyvault", "ssm", "openssl", "mc"].contains(&tool)
    {
        true => m.len(),
        false => tool.len(),
    };
    // (Its name's extension, `rabbitmqctl.bat`, `net.exe`.)
    if [&b".exe"[..], b".EXE", b".bat"]
        .iter()
        .any(|x| b[i..].starts_with(x))
    {
        i += 4;
    }
    // (And the closing quote of its path quoted, as the tools added last are written on
    // Windows: `"C:\Program Files\PuTTY\plink.exe" -pw …`.)
    // (Only where the name is a path's last part or a quote's first, with no list's comma
    // after the quote — `["plink" , "-pw", …]` is a list, `echo "run mkpasswd" …` a
    // phrase: review 40.)
    if let Some(b'"' | b'\'') = b.get(i)
        && at.is_some_and(|k| k >= HERE_POSITIONAL)
        && s > 0
        && matches!(b[s - 1], b'/' | b'\\' | b'"' | b'\'')
        && matches!(b.get(i + 1), Some(b' ' | b'\t'))
        && b[i + 1..]
            .iter()
            .take(16)
            .find(|c| !matches!(c, b' ' | b'\t'))
            != Some(&b',')
    {
        i += 1;
    }
    // (Another such command's name ends the line read: see `ends_positional_words`.)
    // (Redis's but `ACL SETUSER` take two words at most: three are read, to tell. An ACL's
    // rules are read past the user's name by `acl_passwords`.)
    let read = match tool {
        "ACL" | "acl" | "user" => 1,
        _ if redis_word(tool) => 3,
        // (Oracle's logons and the hashing tools' and MinIO's arguments come first: eight
        // words, so that a run of names glued to a `/`, `expdp a/expdp a/…`, is read a few
        // words each — 10x the bench text at 24.)
        "expdp" | "impdp" | "rman" | "sqlldr" | "dgmgrl" | "mkpasswd" | "openssl" | "mc" => 8,
        _ => words.len(),
    };
    // (Sentinel's `auth-pass` only after `sentinel`, read back first: elsewhere it is a
    // field's name, read by the named fields' pass.)
    let sentinel = match tool.eq_ignore_ascii_case("auth-pass") {
        true => match sentinel_before(b, s) {
            Some(k) => Some(k),
            None => return Some(None),
        },
        false => None,
    };
    let stop = |w: &[u8]| ends_positional_words(w, at);
    // (An argument list, `["ipmitool", "-P", "…"]`: its strings are the words.)
    let n = match listed_words(b, i, end, &mut words[..read], stop) {
        Some(n) => n,
        None => command_words(b, i, end, &mut words[..read], stop).0,
    };
    let words = &words[..n];
    let word = |k: usize| words.get(k).map(|&(a, z)| &b[a..z]);
    // The password at word `k`, judged as an option's value.
    let password = |k: usize| words.get(k).and_then(|&(a, _)| argument(text, a));
    // The option's value, judged as an option's value is.
    let option_value = |o: &[u8]| option_words(b, words, o, false).next();
    let option = |o: &[u8]| option_value(o).map(|v| v.and_then(|(a, _)| argument(text, a)));
    // The values of those of `options` given, each its next word (or glued to it where
    // `glued`, a one-letter option as `getopt` reads one: `-Pvalue`), judged as an option's
    // value is: from the first's to the last's, so that none is left (snmpwalk's `-A … -X
    // …`, jarsigner's `-storepass … -keypass …`).
    let values = |options: &[&[u8]], glued: bool| {
        first_to_last(words.iter().enumerate().filter_map(|(k, &(a, z))| {
            let w = &b[a..z];
            if options.contains(&w) {
                password(k + 1)
            } else if glued && options.iter().any(|o| o.len() == 2 && w.starts_with(o)) {
                (w.len() > 2).then(|| argument(text, a + 2)).flatten()
            } else {
                None
            }
        }))
    };
    // The same of options written as Windows's tools write them, in any case, the value
    // glued after a colon (`/pass:…`, `/p:…`; quoted, JSON-escaped too: `/pass:\"…\"`).
    let colon_values = |options: &[&[u8]]| {
        first_to_last(words.iter().filter_map(|&(a, z)| {
            let w = &b[a..z];
            let o = options
                .iter()
                .find(|o| w.len() > o.len() && w[..o.len()].eq_ignore_ascii_case(o))?;
            let at = a + o.len();
            argument(text, past_quote(b, at, b.len()).unwrap_or(at))
        }))
    };
    // (Windows reads its tools' names in any case.)
    let name = match tool {
        "SQLPLUS" => "sqlplus",
        "Cmdkey" | "CMDKEY" => "cmdkey",
        "Schtasks" | "SCHTASKS" => "schtasks",
        "Net" | "NET" => "net",
        "auth" => "AUTH",
        "REQUIREPASS" => "requirepass",
        "MASTERAUTH" => "masterauth",
        "acl" => "ACL",
        "PsExec" | "psexec64" | "PsExec64" => "psexec",
        "dsmod" => "dsadd",
        "AUTH-PASS" => "auth-pass",
        t if t.starts_with("snmp") => "snmp",
        t if t.contains("freerdp") => "xfreerdp",
        t => t,
    };
    // (Always an answer once the tool is named: its trigger is no other kind's.)
    let found = || -> Option<(usize, usize)> {
        match name {
            "htpasswd" => {
                let mut k = 0;
                let (mut batch, mut no_file) = (false, false);
                while let Some(w) = word(k).filter(|w| w.len() > 1 && w[0] == b'-') {
                    batch |= w.contains(&b'b');
                    no_file |= w.contains(&b'n');
                    k += 1 + usize::from(matches!(w.last(), Some(b'C' | b'r')));
                }
                if !batch {
                    return None;
                }
                password(k + 1 + usize::from(!no_file))
            }
            "rabbitmqctl" => {
                let mut k = 0;
                while let Some(w) = word(k).filter(|w| w.first() == Some(&b'-')) {
                    let takes = [&b"-n"[..], b"--node", b"-t", b"--timeout"].contains(&w);
                    k += 1 + usize::from(takes);
                }
                let sub = word(k)?;
                if ![&b"add_user"[..], b"change_password", b"authenticate_user"].contains(&sub) {
                    return None;
                }
                password(k + 2)
            }
            "wpa_passphrase" => password(1),
            "requirepass" | "masterauth" => password(0),
            // (`AUTH password`, or Redis 6's `AUTH user password`; `HELLO 3 AUTH user
            // password`, `MIGRATE … AUTH password`.)
            "AUTH" => match (auth.flatten()?, words.len()) {
                (RedisAuth::Command, 1 | 2) => password(words.len() - 1),
                (RedisAuth::Hello, 2..) => password(1),
                (RedisAuth::Migrate, 1..) => password(0),
                _ => None,
            },
            // (The rules after the user's name.)
            "ACL" | "user" => acl_passwords(text, words.first()?.1, end, tool == "user"),
            // (`az keyvault secret set … --value …`, or `--value=…`.)
            "keyvault" => option(b"--value")?,
            // (`aws ssm put-parameter … --value …`: a `SecureString`'s, or a parameter's
            // whose name's last segment names a secret, `/prod/db/password`; a `String`'s
            // holds a port or a host as often.)
            "ssm" => {
                // (`SecureString`, `--type=SecureString`, quoted or not.)
                let secure = words.iter().any(|&(a, z)| {
                    let w = &b[a..z];
                    let w = w.strip_prefix(b"--type=").unwrap_or(w);
                    w.iter()
                        .filter(|c| !matches!(c, b'"' | b'\'' | b'\\'))
                        .eq(b"SecureString".iter())
                });
                // (The name as written: `--name NAME`, `--name="NAME"`.)
                let named = || {
                    option_value(b"--name").flatten().is_some_and(|(a, z)| {
                        let name = text[a..z].trim_matches(['"', '\'', '\\']);
                        names_a_secret(name.rsplit('/').next().unwrap_or(name))
                    })
                };
                if !secure && !named() {
                    return None;
                }
                option(b"--value")?
            }
            "cmdkey" => colon_values(&[b"/pass:"]),
            // (FreeRDP's clients: the account's `/p:` and the gateway's `/gp:`; FreeRDP
            // 1.0's `-p`.)
            "xfreerdp" => colon_values(&[b"/p:", b"/gp:"]).or_else(|| values(&[b"-p"], false)),
            "ipmitool" => values(&[b"-P"], true),
            // (rdesktop's `-p -` reads it from the standard input.)
            "rdesktop" => values(&[b"-p"], true),
            // (`-P` names a file of passwords to try.)
            "hydra" => values(&[b"-p"], true),
            "psexec" => values(&[b"-p"], false),
            // (SNMPv3's authentication and privacy passphrases; v1's and v2c's community,
            // but the defaults.)
            "snmp" => values(&[b"-A", b"-X", b"-c"], true).filter(|&(a, z)| {
                !["public", "private"].contains(&text[a..z].trim_matches(['"', '\'', '\\']))
            }),
            // (`-storepass:env NAME` and `:file` name where it is kept.)
            "jarsigner" => values(&[b"-storepass", b"-keypass"], false),
            // (Active Directory's `dsadd user … -pwd …`; `*` prompts.)
            "dsadd" => values(&[b"-pwd"], false),
            // (`neo4j-admin [dbms] set-initial-password [--require-password-change] …`: the
            // first word after it that is no option.)
            // (PuTTY's `plink`, `pscp`, `psftp`: `-pw`.)
            "plink" | "pscp" | "psftp" => values(&[b"-pw"], false),
            // (`mkpasswd [-m method] [-S salt] [-R rounds] password [salt]`; `-s` reads
            // it from the standard input.)
            "mkpasswd" => {
                let takes: [&[u8]; 8] = [
                    b"-m",
                    b"-S",
                    b"-R",
                    b"-P",
                    b"--method",
                    b"--salt",
                    b"--rounds",
                    b"--password-fd",
                ];
                let k = skip_options(words, b, &takes)?;
                password(k)
            }
            // (`openssl passwd [-1|-5|-6|-apr1|…] [-salt salt] [-provider name] password`;
            // after `-in file` or `-stdin`, none.)
            "openssl" => {
                let takes: [&[u8]; 7] = [
                    b"-salt",
                    b"-in",
                    b"-rand",
                    b"-writerand",
                    b"-provider",
                    b"-provider-path",
                    b"-propquery",
                ];
                let k = skip_options(words, b, &takes)?;
                password(k)
            }
            // (MinIO's `mc alias set NAME URL ACCESS-KEY SECRET-KEY`, `mc config host add`
            // the same: the fourth argument that is no option; `mc admin user add ALIAS
            // USER PASSWORD`, the third.)
            "mc" => {
                let mut k = 0;
                let mut plain = 0;
                while let Some(w) = word(k) {
                    if w.first() == Some(&b'-') {
                        k += 1 + usize::from([&b"--api"[..], b"--path"].contains(&w));
                        continue;
                    }
                    if plain == 3 - usize::from(m.contains("admin")) {
                        return password(k);
                    }
                    plain += 1;
                    k += 1;
                }
                None
            }
            // (Oracle's tools: a logon, `user/password[@connect]`, where one stands — the
            // first word that is no option, or, for RMAN, the word after `target`,
            // `catalog`, `auxiliary`; any `keyword=` of those and `userid=`. Not every
            // word: in a run of names glued to a `/`, each read all its words' values, 10x
            // the bench text.)
            "expdp" | "impdp" | "rman" | "sqlldr" | "dgmgrl" => {
                let keywords = ["userid", "target", "catalog", "auxiliary"];
                let keyword = |w: &[u8]| {
                    keywords
                        .iter()
                        .any(|k| w.eq_ignore_ascii_case(k.as_bytes()))
                };
                // (Any such first word: a bare `scott/tiger` is each tool's first form — so a
                // file's path there, `expdp logs/Export2024`, is read as one, as review 39
                // found; review 40 found the narrower reading left the bare logons.)
                let first = words
                    .iter()
                    .position(|&(a, z)| b[a] != b'-' && !b[a..z].contains(&b'='));
                first_to_last(words.iter().enumerate().filter_map(|(k, &(a, z))| {
                    let w = &b[a..z];
                    let at = match w.iter().position(|&c| c == b'=') {
                        Some(eq) if keyword(&w[..eq]) => a + eq + 1,
                        Some(_) => return None,
                        None if (name == "rman" && k > 0 && word(k - 1).is_some_and(keyword))
                            || (name != "rman" && Some(k) == first) =>
                        {
                            a
                        }
                        None => return None,
                    };
                    logon(text, past_quote(b, at, z).unwrap_or(at), z, end)
                }))
            }
            "neo4j-admin" => {
                let k = words
                    .iter()
                    .position(|&(a, z)| &b[a..z] == b"set-initial-password")?;
                let value =
                    (k + 1..words.len()).find(|&j| word(j).is_some_and(|w| w[0] != b'-'))?;
                password(value)
            }
            // (Redis Sentinel's: see [`sentinel_before`].)
            "auth-pass" => password(sentinel?),
            "schtasks" => {
                // (`/rp`: the task's account's; `/p`: the remote system's account's.)
                let k = words.iter().position(|&(a, z)| {
                    b[a..z].eq_ignore_ascii_case(b"/rp") || b[a..z].eq_ignore_ascii_case(b"/p")
                })?;
                password(k + 1)
            }
            "security" => {
                let k = words.iter().position(|&(a, z)| &b[a..z] == b"-w")?;
                password(k + 1)
            }
            "mosquitto_passwd" => {
                // (`[-c] -b file user password`.)
                let options = words
                    .iter()
                    .take_while(|&&(a, z)| z - a > 1 && b[a] == b'-')
                    .count();
                words[..options]
                    .iter()
                    .any(|&(a, z)| &b[a..z] == b"-b")
                    .then_some(())?;
                password(options + 2)
            }
            "mosquitto_pub" | "mosquitto_sub" | "mosquitto_rr" => {
                let k = words
                    .iter()
                    .position(|&(a, z)| &b[a..z] == b"-P" || &b[a..z] == b"--pw")?;
                password(k + 1)
            }
            "net" => {
                let sub = word(0)?;
                // The first arguments that are no option: `user`'s name, then the password;
                // `use`'s device and share, then the password.
                let mut plain =
                    (1..words.len()).filter(|&k| word(k).is_some_and(|w| w.first() != Some(&b'/')));
                if sub.eq_ignore_ascii_case(b"user") {
                    password(plain.nth(1)?)
                } else {
                    // (A drive, `Z:`, or a printer's port, `LPT1:`, before the share.)
                    let first = plain.next()?;
                    let device = word(first).is_some_and(|w| {
                        w == b"*" || ((2..=5).contains(&w.len()) && w.ends_with(b":"))
                    });
                    let share = match device {
                        true => word(plain.next()?)?,
                        false => word(first)?,
                    };
                    if !(share.starts_with(b"\\\\")
                        || share.starts_with(b"http://")
                        || share.starts_with(b"https://"))
                    {
                        return None;
                    }
                    password(plain.next()?)
                }
            }
            _ => {
                // sqlplus: its options, then the logon.
                let mut k = 0;
                while let Some(w) = word(k).filter(|w| w.len() > 1 && w[0] == b'-') {
                    let takes = [&b"-R"[..], b"-M", b"-C", b"-MARKUP"]
                        .iter()
                        .any(|o| w.eq_ignore_ascii_case(o));
                    k += 1 + usize::from(takes);
                }
                let &(a, z) = words.get(k)?;
                logon(text, a, z, end)
            }
        }
    };
    Some(found())
}

/// The password of an Oracle logon, `user/password[@connect]`, written from `a` to `z` in
/// a command's words read up to `end` (see [`positional_password`]): the password quoted
/// alone (`scott/"p@ss word"@db`) to its quote, else to the `@` or the word's end, judged
/// as an option's value is (see [`secret_argument`]). No user, no `/` after it (`/nolog`,
/// `/ as sysdba`, `/@alias`): none.
fn logon(text: &str, a: usize, z: usize, end: usize) -> Option<(usize, usize)> {
    let b = text.as_bytes();
    let user = b[a..z]
        .iter()
        .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'$' | b'#' | b'.'))
        .count();
    if user == 0 || b.get(a + user) != Some(&b'/') {
        return None;
    }
    let first = a + user + 1;
    match b.get(first) {
        Some(&q @ (b'"' | b'\'')) => {
            let close = memchr::memchr(q, &b[first + 1..end]).map(|k| first + 1 + k)?;
            let value = &text[first + 1..close];
            secret_argument(value, true, b.get(close + 1).copied()).then_some((first + 1, close))
        }
        _ => {
            let len = b[first..z].iter().take_while(|&&c| c != b'@').count();
            let value = &text[first..first + len];
            (len > 0 && secret_argument(value, false, b.get(first + len).copied()))
                .then_some((first, first + len))
        }
    }
}

/// The index of the first of a command's `words` (spans in `b`) that is no option, past
/// options and the values of those of `takes` (`-m sha-512`; `--method=sha-512` is one
/// word): `None` where every word is an option's.
fn skip_options(words: &[(usize, usize)], b: &[u8], takes: &[&[u8]]) -> Option<usize> {
    let mut k = 0;
    while let Some(&(a, z)) = words.get(k) {
        let w = &b[a..z];
        if w.len() < 2 || w[0] != b'-' {
            return Some(k);
        }
        k += 1 + usize::from(takes.contains(&w));
    }
    None
}

/// The span from the first of `spans` to the end of the last: every value a command's
/// options give, none left between (see [`positional_password`]).
fn first_to_last(mut spans: impl Iterator<Item = (usize, usize)>) -> Option<(usize, usize)> {
    let (first, end) = spans.next()?;
    Some((first, spans.last().map_or(end, |(_, z)| z)))
}

/// Which word after Redis Sentinel's `auth-pass` at `s` is its password: `sentinel
/// auth-pass master password`, as its configuration writes it (the second), `SENTINEL SET
/// master … auth-pass password`, as a client sets it (the first; any case) — `None` where
/// `sentinel` is not named before it on its line within 16 words and 512 bytes.
fn sentinel_before(b: &[u8], s: usize) -> Option<usize> {
    // (Its words on its line nearest first, past the quotes that open them, `"SENTINEL`:
    // 16 at most, `SET`'s option pairs among them, back to a word that holds another
    // `auth-pass`, whose reading reads those before it.)
    let mut before = b[s.saturating_sub(512)..s]
        .split_inclusive(|c| c.is_ascii_whitespace())
        .rev()
        .map_while(|piece| match piece.last() {
            Some(b'\n' | b'\r') => None,
            Some(c) if c.is_ascii_whitespace() => Some(&piece[..piece.len() - 1]),
            _ => Some(piece),
        })
        .filter(|w| !w.is_empty())
        .map(|w| {
            &w[w.iter()
                .take_while(|c| matches!(c, b'"' | b'\'' | b'\\'))
                .count()..]
        })
        .take_while(|w| !w.windows(9).any(|p| p.eq_ignore_ascii_case(b"auth-pass")))
        .take(16);
    let sentinel = |w: &[u8]| w.eq_ignore_ascii_case(b"sentinel");
    // (Right after it, the master's name comes first; further on, as `SET`'s option, the
    // password.)
    match before.next() {
        Some(w) if sentinel(w) => Some(1),
        Some(_) if before.any(sentinel) => Some(0),
        _ => None,
    }
}

/// Which argument (from 0) of a call is its password where it is not the first, by the
/// call's name (the text up to its `(`), and whether the first is read where the call has
/// no such argument: a keyring's setter's third (`keyring.set_password("svc", "bob", "…")`,
/// Node's keytar `setPassword(…)`), the first where there is none (Django's
/// `user.set_password("…")`); MongoDB's shell's `db.changeUserPassword("bob", "…")` and
/// `db.auth("bob", "…")` (any object's `.auth`: `db.getSiblingDB("admin").auth(…)`; PHP's
/// `->auth`), the first where there is none on a Redis client (`jedis.auth("…")`,
/// `$redis->auth("…")`: see [`first_alone`]) or the next is a callback (node-redis's
/// `client.auth("…", cb)`), the Neo4j driver's and reqwest's
/// `basic_auth("neo4j", "…")` (`Some("…")`), requests' and httpx's `HTTPBasicAuth("bob",
/// "…")` (`HTTPDigestAuth`, `HTTPProxyAuth`, aiohttp's `BasicAuth`) and the calls of
/// `patterns::CREDENTIAL_CALLS` (`smtp.login("bob", "…")`), the second; those of
/// `patterns::THIRD_ARGUMENT_CALLS` (`FTP(host, user, …)`, `new PDO(dsn, user, …)`), the
/// third.
fn password_argument(before: &[u8]) -> Option<(usize, bool)> {
    let before = call_name(before);
    if [&b"set_password"[..], b"setPassword", b"SetPassword"]
        .iter()
        .any(|n| before.ends_with(n))
    {
        return Some((2, true));
    }
    if third_argument_call(before) {
        return Some((2, false));
    }
    if super::patterns::FIFTH_ARGUMENT_CALLS
        .iter()
        .any(|n| word_ends(before, n.as_bytes()))
    {
        return Some((4, false));
    }
    if [&b".auth"[..], b"->auth"]
        .iter()
        .any(|n| before.ends_with(n))
    {
        return Some((1, true));
    }
    [&b"changeUserPassword"[..], b"basic_auth"]
        .iter()
        .any(|n| before.ends_with(n))
        .then_some((1, false))
        .or_else(|| credential_call(before).then_some((1, false)))
}

/// Whether a call named as `before` ends (see [`password_argument`]) that has one argument
/// is given its password: a setter (`user.set_password("…")`), and Redis's clients'
/// `auth` — on an object its name says is one (`jedis.auth("…")`, `$redis->auth("…")`,
/// `redisClient.auth("…")`, Valkey's, KeyDB's). Other objects' `auth` takes a mechanism's,
/// a guard's or a user's name as often (`imap.auth('XOAUTH2')`, `$this->auth('api_v1')`,
/// mongosh's `db.auth('admin2')`, which prompts), found by review 42.
fn first_alone(before: &[u8]) -> bool {
    let Some(object) = before
        .strip_suffix(b".auth")
        .or(before.strip_suffix(b"->auth"))
    else {
        return true;
    };
    // (A getter's name, `getRedis().auth(…)`.)
    let object = object.strip_suffix(b"()").unwrap_or(object);
    let name = object
        .iter()
        .rev()
        .take(32)
        .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'$'))
        .count();
    let name = object[object.len() - name..].to_ascii_lowercase();
    [&b"redis"[..], b"jedis", b"valkey", b"keydb"]
        .iter()
        .any(|r| name.windows(r.len()).any(|w| w == *r))
}

/// Whether a call's argument at `at` is a callback: a function written there (`function
/// (err) {…}`, `(err) => …`, `err => …`, `async …`) or a name such as `cb`, `callback`,
/// `done`, `next`.
fn callback_at(b: &[u8], at: usize) -> bool {
    let rest = &b[at..b.len().min(at + 64)];
    let word = rest
        .iter()
        .take_while(|c| c.is_ascii_alphanumeric() || **c == b'_')
        .count();
    let w = &rest[..word];
    rest.starts_with(b"(")
        || [
            &b"function"[..],
            b"async",
            b"cb",
            b"callback",
            b"done",
            b"next",
        ]
        .contains(&w)
        || (word > 0 && rest[word..].trim_ascii_start().starts_with(b"=>"))
}

/// `before` (the text up to a call's `(`, blanks left out) without PowerShell's constructor
/// after a type's name, `]::new` (`[System.Net.NetworkCredential]::new(…)`): the type's
/// name is the call's.
pub(super) fn call_name(before: &[u8]) -> &[u8] {
    match before.len().checked_sub(6).map(|k| before.split_at(k)) {
        Some((name, tail)) if tail.eq_ignore_ascii_case(b"]::new") => name,
        _ => before,
    }
}

/// Whether `before` ends with the name of a call of `patterns::THIRD_ARGUMENT_CALLS`, the
/// whole name (`ftplib.FTP`, `new PDO`; not `SFTP`, `TFTP`).
fn third_argument_call(before: &[u8]) -> bool {
    let calls = super::patterns::THIRD_ARGUMENT_CALLS.iter();
    calls
        .chain(&super::patterns::ADDED_THIRD_ARGUMENT_CALLS)
        .any(|n| word_ends(before, n.as_bytes()))
}

/// Where the white space from `i` on ends (`i` itself where none stands there), reading
/// `max` bytes at most.
fn past_white(b: &[u8], i: usize, max: usize) -> usize {
    i + b[i.min(b.len())..]
        .iter()
        .take(max)
        .take_while(|c| c.is_ascii_whitespace())
        .count()
}

/// Whether `before` ends with `name` as a whole word (not glued to a letter, a digit or a
/// `_` before it).
fn word_ends(before: &[u8], name: &[u8]) -> bool {
    before.ends_with(name)
        && before[..before.len() - name.len()]
            .last()
            .is_none_or(|c| !(c.is_ascii_alphanumeric() || *c == b'_'))
}

/// Whether `before` (the text up to a call's name's end) ends with the name of a call whose
/// later argument is a password and whose earlier ones name an account, a host or a
/// database (see `patterns::CREDENTIAL_CALLS`; requests' and httpx's
/// `HTTPBasicAuth`, `HTTPDigestAuth`, `HTTPProxyAuth`, aiohttp's `BasicAuth`): its
/// arguments are often words (`.login("Sign in", "Welcome back")`), so the password is
/// judged as a value, not as a phrase (see [`app_password`]).
fn credential_call(before: &[u8]) -> bool {
    read_by_credential_calls(before)
        || [&b"BasicAuth"[..], b"DigestAuth", b"ProxyAuth"]
            .iter()
            .any(|n| call_name(before).ends_with(n))
}

/// Whether the credential calls' trigger reads the call named as `before` ends (see
/// `patterns::credential_calls`): those of [`credential_call`] but requests' and aiohttp's,
/// which the name `Auth` reads.
fn read_by_credential_calls(before: &[u8]) -> bool {
    let before = call_name(before);
    third_argument_call(before)
        || super::patterns::CREDENTIAL_CALLS
            .iter()
            .any(|c| before.ends_with(c.as_bytes()))
}

/// Whether `before` ends with a call's name that logs in (`.login`, `.authenticate`, in
/// any case, `AuthenticateAsync`): its password may follow a host's or a database's name.
fn logs_in(before: &[u8]) -> bool {
    [&b"login"[..], b"authenticate", b"authenticateasync"]
        .iter()
        .any(|n| {
            before.len() >= n.len() && before[before.len() - n.len()..].eq_ignore_ascii_case(n)
        })
}

/// Where the string argument right after the string one whose first character is at
/// `first` starts, inside its quote (as [`call_argument`] gives it): the string closed by
/// its own quote (escaped as it was opened, within 256 bytes), then a comma and the next
/// one's quote, blanks between. (Not read again from the call's `(`: in a run of unclosed
/// calls, each read its neighbours' arguments twice.)
fn next_string_argument(b: &[u8], first: usize) -> Option<usize> {
    let q = b[first - 1];
    let escaped = first >= 2 && b[first - 2] == b'\\';
    let window = &b[first..b.len().min(first + 256)];
    let close = memchr::memchr_iter(q, window)
        .map(|k| first + k)
        .find(|&k| (b[k - 1] == b'\\') == escaped)?;
    let blanks = |i: usize| {
        i + b[i..]
            .iter()
            .take(16)
            .take_while(|c| c.is_ascii_whitespace())
            .count()
    };
    let comma = blanks(close + 1);
    if b.get(comma) != Some(&b',') {
        return None;
    }
    let at = blanks(comma + 1);
    past_quote(b, at, b.len()).filter(|&f| f < b.len())
}

/// Whether the call's argument at `at` is a variable that names an account, by its name's
/// last part (after a `.`, a `$`; an index's quoted key, `config["user"]`; in any case):
/// one that holds `user`, `usr`, `uname`, `login`, `email` or `account` (`username`,
/// `self.login_name`, `SMTP_USER`, `$user`), or `uid` — or Python's `getpass.getuser()`;
/// an argument of its own before the next one's comma.
fn names_account(b: &[u8], at: usize) -> bool {
    let rest = &b[at..b.len().min(at + 64)];
    let Some(comma) = memchr::memchr(b',', rest) else {
        return false;
    };
    let arg = rest[..comma].trim_ascii_end();
    if arg.ends_with(b"getuser()") {
        return true;
    }
    // (An index's quoted key, or the name.)
    let name = match arg.strip_suffix(b"\"]").or(arg.strip_suffix(b"']")) {
        Some(index) => {
            let key = index
                .iter()
                .rposition(|&c| c == b'"' || c == b'\'')
                .map_or(index, |q| &index[q + 1..]);
            let open = &index[..index.len() - key.len()];
            if !(open.ends_with(b"[\"") || open.ends_with(b"['")) {
                return false;
            }
            key
        }
        None => arg,
    };
    if name.is_empty()
        || !name
            .iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'$'))
    {
        return false;
    }
    let last = name
        .rsplit(|&c| c == b'.' || c == b'$')
        .next()
        .unwrap_or_default()
        .to_ascii_lowercase();
    let holds = |w: &[u8]| last.windows(w.len()).any(|x| x == w);
    last == b"uid"
        || [
            &b"user"[..],
            b"usr",
            b"uname",
            b"login",
            b"email",
            b"account",
        ]
        .into_iter()
        .any(holds)
}

/// Whether `value` is written as Google's app passwords are, four groups of four small
/// letters (`abcd efgh ijkl mnop`), the one phrase a mail client's `.login` is given.
fn app_password(value: &str) -> bool {
    let v = value.as_bytes();
    v.len() == 19
        && v.iter().enumerate().all(|(i, c)| {
            if i % 5 == 4 {
                *c == b' '
            } else {
                c.is_ascii_lowercase()
            }
        })
}

/// Whether `sep` (what follows a name, up to a `(`) opens a tuple given to the name: an
/// `=` or a `:` first (after the name's closing quote too; `=>`, `:=`), the `(` last
/// (`auth=(`, `"auth": (`).
fn credentials_tuple(sep: &[u8]) -> bool {
    let Some(sep) = sep.strip_suffix(b"(").or(sep.strip_suffix(b"[")) else {
        return false;
    };
    let mut marks = sep
        .iter()
        .filter(|c| !matches!(c, b' ' | b'\t' | b'"' | b'\''));
    matches!(marks.next(), Some(b'=' | b':'))
}

/// Where the `k`th argument (from 0) of the call whose `(` is at `open` starts inside its
/// opening quote, if it is a string (after Python's prefix, `r'…'`, `f"…"`; its quotes
/// JSON-escaped too, `\"…\"`, as a file written through a tool's arguments holds them; a
/// JavaScript template literal's backtick, `` `…` ``): see [`argument_start`].
fn call_argument(b: &[u8], open: usize, k: usize) -> Option<usize> {
    let (at, end) = argument_start(b, open, k)?;
    string_argument(b, at, end)
}

/// Where the argument at `at` (read up to `end`, see [`argument_start`]) starts inside its
/// opening quote, if it is a string (see [`call_argument`]).
fn string_argument(b: &[u8], at: usize, end: usize) -> Option<usize> {
    // (A lookup's fallback, `process.env.DB_PASS || '…'`.)
    if let Some(fallback) = fallback_string(b, at) {
        return Some(fallback);
    }
    // (Rust's optional value and owned string, reqwest's `.basic_auth("bob", Some("…"))`,
    // `Some(String::from("…"))`, blanks inside.)
    let mut at = at;
    for _ in 0..2 {
        let Some(wrapper) = [&b"Some("[..], b"Option::Some(", b"String::from("]
            .into_iter()
            .find(|w| b[at..end].starts_with(w))
        else {
            break;
        };
        at += wrapper.len();
        at += b[at..end]
            .iter()
            .take_while(|c| c.is_ascii_whitespace())
            .count();
    }
    // (Inside the quote: not past the text's end, `setPassword(a, b, ``.)
    string_start(b, at, b.len())
}

/// Where a string written at `at` starts, inside its opening quote, before `end`: after
/// Python's prefix (`r'…'`, `f"…"`), C#'s (`@"…"`, `$"…"`) or C's (`L"…"`), its quote
/// JSON-escaped too (see [`past_quote`]); a template literal's, past its backtick.
fn string_start(b: &[u8], at: usize, end: usize) -> Option<usize> {
    if b.get(at) == Some(&b'`') {
        return Some(at + 1).filter(|&f| f < end);
    }
    let prefix = b[at..end]
        .iter()
        .take(2)
        .take_while(|c| {
            matches!(
                c,
                b'r' | b'b' | b'f' | b'u' | b'R' | b'B' | b'F' | b'U' | b'L' | b'@' | b'$'
            )
        })
        .count();
    past_quote(b, at + prefix, end).filter(|&f| f < end)
}

/// Where the `k`th argument (from 0, past 0) of the call whose `(` is at `open` starts,
/// past blanks, and where the call's reading ends: the arguments split at commas outside
/// quotes and brackets (nested twice at most), over lines too (a long call's arguments one
/// to a line: a line that ends after a `,` or the `(`), within 512 bytes, up to its `)`.
fn argument_start(b: &[u8], open: usize, k: usize) -> Option<(usize, usize)> {
    let end = b.len().min(open + 512);
    // (The open quote, and whether a backslash escaped it: then the same closes it.)
    let (mut depth, mut quote, mut n) = (0usize, None::<(u8, bool)>, 0);
    let mut start = open + 1;
    // (The call's last character outside quotes and brackets but blanks.)
    let mut last = b'(';
    for i in open + 1..end {
        let c = b[i];
        let escaped = b[i - 1] == b'\\';
        match quote {
            Some((q, e)) if c == q && escaped == e => quote = None,
            Some(_) => {}
            None => match c {
                // (A line that ends after an argument ends the call's arguments: an
                // unclosed call is not read on for its 512 bytes.)
                b'\n' if depth == 0 && !matches!(last, b',' | b'(') => return None,
                b'"' | b'\'' | b'`' => quote = Some((c, escaped)),
                // (Nested deeper than a call in an argument, `getpass.getpass("…")`: no
                // setter's — and a run of the setter's names is read a few names each.)
                b'(' | b'[' | b'{' if depth == 2 => return None,
                b'(' | b'[' | b'{' => depth += 1,
                b')' | b']' | b'}' if depth > 0 => depth -= 1,
                // (A bracket closed that the call did not open ends it, unclosed: in a run
                // of calls each glued to a `]`, `.login("a"]`, each bracket closed the next
                // call's `(`, and each call read its 512 bytes, 10x the bench text.)
                b']' | b'}' => return None,
                b',' if depth == 0 => {
                    n += 1;
                    start = i + 1;
                }
                b')' => break,
                _ => {}
            },
        }
        if depth == 0 && !c.is_ascii_whitespace() {
            last = c;
        }
        if n == k && i + 1 == start {
            let at = start
                + b[start..end]
                    .iter()
                    .take_while(|c| c.is_ascii_whitespace())
                    .count();
            return Some((at, end));
        }
    }
    None
}

/// An ODBC connection string's value in braces, its `{` at `open` (`Pwd={S3cr;et}`, where
/// `}}` is a brace inside): its content, if it closes on its line within 256 bytes with no
/// `{` inside and is a secret as a quoted value is (see [`secret_argument`]) — no format
/// string's field (`PWD={password}`, `{db_pass_2}`, `{pw:>10}`); `{{` opens a template's.
fn braced_value(text: &str, open: usize) -> Option<(usize, usize)> {
    let b = text.as_bytes();
    let first = open + 1;
    if b.get(first) == Some(&b'{') {
        return None;
    }
    let end = b.len().min(first + 256);
    let mut i = first;
    let close = loop {
        // (A line break or another `{` first: no such value — and a run of `Pwd={}}` is
        // read once.)
        let k = i + b
            .get(i..end)?
            .iter()
            .position(|c| matches!(c, b'}' | b'{' | b'\n' | b'\r'))?;
        if b[k] != b'}' {
            return None;
        }
        if b.get(k + 1) != Some(&b'}') {
            break k;
        }
        i = k + 2;
    };
    let value = text.get(first..close)?;
    // A format string's field is no value: a variable (`{ $password }`), or an identifier
    // named for the secret (`pass`, `pwd`, `pw`, `secret`, `token`, `key`, `cred`) with a
    // `_` or a digit at its end (`{db_pass_2}`, `{dbPassword2}`), a conversion, a format
    // spec, an index or a member after it (`{password!r}`, `{pw:>10}`, `{secrets[0]}`,
    // `{creds.Item2}`).
    let v = value.trim_ascii().as_bytes();
    let ident = v
        .iter()
        .take_while(|c| c.is_ascii_alphanumeric() || **c == b'_')
        .count();
    let named = ["pass", "pwd", "pw", "secret", "token", "key", "cred"]
        .iter()
        .any(|n| {
            v[..ident]
                .windows(n.len())
                .any(|w| w.eq_ignore_ascii_case(n.as_bytes()))
        });
    let field = v.first() == Some(&b'$')
        || (named
            && v.first()
                .is_some_and(|c| c.is_ascii_alphabetic() || *c == b'_')
            && match v.get(ident) {
                None => v.contains(&b'_') || v[ident - 1].is_ascii_digit(),
                Some(c) => matches!(c, b'!' | b':' | b'[' | b'.'),
            });
    (!field && secret_argument(value, true, b.get(close).copied())).then_some((first, close))
}

/// The commands that write a password to a pipe (see [`stdin_password`]); PowerShell's
/// cmdlet as its docs and people write it (`echo` is its alias).
pub(super) const STDIN_WRITERS: [&str; 5] =
    ["echo", "printf", "yes", "Write-Output", "write-output"];

/// A password written into a command that reads it from its standard input, the writer
/// named at `s` (`m` its trigger's match), or given it in a here-string or a
/// here-document (see [`here_string`], [`here_document`]): `None` where `m` names none.
/// - `echo [-n|-e] PW | …`, `yes PW | …` (one argument), `printf FORMAT | …` (no argument:
///   the format is the text written) or `printf '%s\n' PW [PW …] | …`; redirections
///   between (`2>/dev/null`) write nothing; in a group, `(echo PW; echo PW) | …` and
///   `{ echo PW; echo PW; } | …`;
/// - into a command that reads one (see [`reads_stdin`]), or into a `.pgpass` file, `>>
///   ~/.pgpass` (see [`pgpass_entries`]).
///
/// The text written is judged line by line as [`written_secret`] judges it: where any line
/// is a secret (a password and its confirmation, `echo -e 'PW\nPW'`; an old default and a
/// new one, `'changeme\nN3w…'`), all of it is redacted (for `chpasswd`, from the first
/// line's colon). Words are read as [`command_words`] reads them (`$'…'` is a quoted word),
/// the writer's to 1 KiB, the reader's to 1 KiB more.
fn stdin_password(text: &str, s: usize, m: &str) -> Option<Option<(usize, usize)>> {
    if m.starts_with("<<<") {
        return Some(here_string(text, s));
    }
    if m.starts_with("<<") {
        return Some(here_document(text, s));
    }
    let tool = STDIN_WRITERS.into_iter().find(|t| m.starts_with(t))?;
    let b = text.as_bytes();
    let end = ceil_char_boundary(text, s.saturating_add(1024));
    // (Another writer's name ends the words read: a run of them is read once each.)
    let writer = |w: &[u8]| STDIN_WRITERS.iter().any(|t| w == t.as_bytes());
    let mut read = [(0, 0); 8];
    let (n, at) = command_words(b, s + tool.len(), end, &mut read, writer);
    // (Always an answer once the writer is named: its trigger is no other kind's.)
    let found = || -> Option<(usize, usize)> {
        // (In a group, `(echo PW; …)` or `{ echo PW; …; }`, the commands after it too.)
        let opened = b[..s].iter().rev().find(|c| !matches!(c, b' ' | b'\t'));
        let pipe = group_end(b, at, end, matches!(opened, Some(b'(' | b'{')));
        // A pipe (`|&` too), not `||` — or a file of passwords written (`>> ~/.pgpass`).
        let piped = b.get(pipe) == Some(&b'|') && b.get(pipe + 1) != Some(&b'|');
        let reader = pipe + 1 + usize::from(b.get(pipe + 1) == Some(&b'&'));
        // The words written: not redirections (`2>/dev/null`, `2> f`).
        let mut words = [(0, 0); 8];
        let mut count = 0;
        let mut target = false;
        let mut pgpass = false;
        for &(a, z) in &read[..n] {
            let w = &b[a..z];
            let digits = w.iter().take_while(|c| c.is_ascii_digit()).count();
            let redirect = matches!(w.get(digits), Some(b'>' | b'<'))
                || (w.first() == Some(&b'&') && w.get(1) == Some(&b'>'));
            if target || redirect {
                pgpass |= pgpass_file(w) && (target || w[digits] == b'>');
                // (A redirection's target as its own word: `2> /dev/null`.)
                target = redirect
                    && w.iter()
                        .all(|c| matches!(c, b'0'..=b'9' | b'<' | b'>' | b'&'));
                continue;
            }
            words[count] = (a, z);
            count += 1;
        }
        if !piped && !pgpass {
            return None;
        }
        let words = &words[..count];
        // The words whose text is written.
        let written = match tool {
            "printf" => {
                // (`--` ends printf's options.)
                let words = match words.first().map(|&(a, z)| &b[a..z]) {
                    Some(b"--") => &words[1..],
                    _ => words,
                };
                let format = &b[words.first()?.0..words[0].1];
                if format.first() == Some(&b'-') {
                    return None;
                }
                let fields = memchr::memmem::find(format, b"%s").is_some()
                    || memchr::memmem::find(format, b"%b").is_some();
                match (fields, words.len()) {
                    (true, 2..) => &words[1..],
                    (false, 1) => words,
                    _ => return None,
                }
            }
            _ => {
                // (echo's options: `-n`, `-e`, `-E`, together or not.)
                let options = match tool {
                    "echo" => words
                        .iter()
                        .take_while(|&&(a, z)| {
                            z - a > 1
                                && b[a] == b'-'
                                && b[a + 1..z].iter().all(|c| matches!(c, b'n' | b'e' | b'E'))
                        })
                        .count(),
                    _ => 0,
                };
                (words.len() == options + 1).then_some(&words[options..])?
            }
        };
        if !piped {
            return pgpass_entries(text, written);
        }
        // (A line may go on after the pipe: `echo PW |⏎  sudo -S …`.)
        let reader = skip_space(b, reader, reader.saturating_add(64).min(b.len()), true);
        let reads = reads_stdin(text, reader, reader.saturating_add(1024), 0)?;
        written_secret(text, written, reads)
    };
    Some(found())
}

/// Whether a file's name (a word, after a path, quoted or not) is a `.pgpass` file's:
/// `~/.pgpass`, Windows's `%APPDATA%\postgresql\pgpass.conf`.
fn pgpass_file(w: &[u8]) -> bool {
    let w = w.strip_suffix(b"\"").or(w.strip_suffix(b"'")).unwrap_or(w);
    w.ends_with(b".pgpass") || w.ends_with(b"pgpass.conf")
}

/// The passwords of the `.pgpass` entries in the words `written` into the file (`echo
/// 'db:5432:app:bob:pw' >> ~/.pgpass`; lines split at `\n`, as written or decoded): from
/// the first to the last.
fn pgpass_entries(text: &str, written: &[(usize, usize)]) -> Option<(usize, usize)> {
    let b = text.as_bytes();
    let mut found = written.iter().flat_map(|&(a, z)| {
        b[a..z]
            .split(|&c| c == b'\n')
            .scan(a, |at, line| {
                let start = *at;
                *at += line.len() + 1;
                Some((start, start + line.len()))
            })
            .filter_map(|(a, z)| pgpass_entry(text, a, z))
    });
    let first = found.next()?;
    Some((first.0, found.last().map_or(first.1, |l| l.1)))
}

/// The entries of a `.pgpass` file after its name (ending at `e`: `cat ~/.pgpass`'s output,
/// a here-document's body, `pgpass: |` in YAML), one to a line from the next line on (the
/// name's line ending within 256 bytes), past up to eight lines before them that are
/// blank, a comment, a code fence or a prompt: the passwords from the first entry's to the
/// last's, as far as the lines are entries (32 at most, within 4 KiB).
fn pgpass_after(text: &str, e: usize) -> Option<(usize, usize)> {
    let b = text.as_bytes();
    let end = ceil_char_boundary(text, e.saturating_add(4096));
    // (The name's line ends within 256 bytes, before the name again: a run of names is read
    // once, by the last one's candidate.)
    let rest = &b[e..end.min(e + 256)];
    let nl = memchr::memchr(b'\n', rest)?;
    if memchr::memmem::find(&rest[..nl], b"pgpass").is_some() {
        return None;
    }
    let mut at = e + nl + 1;
    let (mut first, mut last, mut skipped) = (None, None, 0);
    // (Before the entries, up to 8 lines that are none: a comment of the format, blanks.)
    for _ in 0..32 {
        if at >= end {
            break;
        }
        let z = memchr::memchr(b'\n', &b[at..end]).map_or(end, |k| at + k);
        let line = b[at..z].trim_ascii();
        match pgpass_entry(text, at, z) {
            Some((pa, pz)) => {
                first = first.or(Some(pa));
                last = Some(pz);
            }
            None if first.is_none()
                && skipped < 8
                && (line.is_empty()
                    || line.starts_with(b"#")
                    || line.starts_with(b"```")
                    || line.starts_with(b"$ ")) =>
            {
                skipped += 1;
            }
            None => break,
        }
        at = z + 1;
    }
    Some((first?, last?))
}

/// The password of the `.pgpass` entry on the line `text[a..z]` (past blanks before it, a
/// YAML block's indent, and a YAML list's `- `): `host:port:database:user:password`, `\:`
/// and `\\` escaped in a field, the port a number or `*`, no blank in the first four — the
/// rest of the line, if it is a secret as an option's value is (see [`secret_argument`]).
fn pgpass_entry(text: &str, a: usize, z: usize) -> Option<(usize, usize)> {
    let b = text.as_bytes();
    let a = a + b[a..z]
        .iter()
        .take_while(|&&c| c == b' ' || c == b'\t')
        .count();
    let a = a + if b[a..z].starts_with(b"- ") { 2 } else { 0 };
    let mut colons = [0usize; 4];
    let (mut n, mut i) = (0, a);
    while n < 4 && i < z {
        match b[i] {
            b'\\' => i += 2,
            b':' => {
                colons[n] = i;
                n += 1;
                i += 1;
            }
            c if c.is_ascii_whitespace() => return None,
            _ => i += 1,
        }
    }
    if n < 4 {
        return None;
    }
    let port = &b[colons[0] + 1..colons[1]];
    let port =
        port == b"*" || ((1..=5).contains(&port.len()) && port.iter().all(u8::is_ascii_digit));
    let fields = colons[0] > a && colons[2] > colons[1] + 1 && colons[3] > colons[2] + 1;
    if !port || !fields {
        return None;
    }
    let first = colons[3] + 1;
    let last = first + b[first..z].trim_ascii_end().len();
    let value = text.get(first..last).filter(|v| !v.is_empty())?;
    secret_argument(value, false, b.get(last).copied()).then_some((first, last))
}

/// The span of the words `written` into a reader of passwords (see [`stdin_password`]) if
/// any line of them is a secret: each line (split at `\n`, as written or decoded; past
/// blanks before it), past its first colon for `chpasswd`, judged as an option's value is (see
/// [`secret_value`]; a passphrase of words too where the reader takes one, see
/// [`secret_argument`]); the span runs from the first line judged (no variable) to the last
/// word's end. A command's output (`` `cat f` ``) is none, and so is a quoted word that
/// starts or ends with a blank or a quote (code that builds the command: `"echo " + pw + "
/// | sudo -S …"`).
fn written_secret(text: &str, written: &[(usize, usize)], reads: Reads) -> Option<(usize, usize)> {
    if reads == Reads::Pgpass {
        return pgpass_entries(text, written);
    }
    let b = text.as_bytes();
    let mut span: Option<(usize, usize)> = None;
    let mut secret = false;
    for &(a, z) in written {
        let quoted = opening_quote(b, a).is_some();
        // (A command's output; a string's closing quote read as a word's opening one, where
        // code builds the command: `"echo " + pw + " | sudo -S …"`.)
        if b[a] == b'`'
            || (quoted
                && (matches!(b[a], b' ' | b'\t' | b'"' | b'\'')
                    || matches!(b[z - 1], b' ' | b'\t' | b'"' | b'\'' | b'\\')))
        {
            return None;
        }
        let next = b.get(z).copied();
        let mut line = a;
        while line < z {
            // (`\n` as written, or a line break where a JSON string's escape was decoded.)
            let stop = (line..z)
                .find(|&j| {
                    matches!(b[j], b'\n' | b'\r') || (b[j] == b'\\' && b.get(j + 1) == Some(&b'n'))
                })
                .unwrap_or(z);
            // (Blanks before a line, as a here-document's after `<<-` or in a YAML block.)
            let first = line
                + b[line..stop]
                    .iter()
                    .take_while(|&&c| matches!(c, b'\t' | b' '))
                    .count();
            let from = match reads {
                Reads::UserPassword => user_colon(&b[first..stop]).map(|c| first + c + 1),
                _ => Some(first),
            };
            // (A variable is none, and no span starts at it: `printf '%s\n' "$OLD" PW PW`.)
            if let Some(from) = from.filter(|&f| f < stop && b[f] != b'$') {
                span = Some(span.map_or((from, z), |(f, _)| (f, z)));
                let value = &text[from..stop];
                secret |= match reads {
                    Reads::Passphrase => secret_argument(value, quoted, next),
                    _ => secret_value(value, quoted, next),
                };
            }
            line = stop + if b.get(stop) == Some(&b'\\') { 2 } else { 1 };
        }
    }
    span.filter(|_| secret)
}

/// A password in a here-string given to a command that reads one from its standard input
/// (see [`reads_stdin`]), `s` at its `<<<`: `sudo -S ls <<< 'PW'`, `chpasswd <<< 'bob:PW'`,
/// `docker login … --password-stdin <<< "PW"`. The command's line is read back from `s` to
/// a line break, `;`, `|`, `&`, `(`, a `<` (so a run of here-strings is read once) or a
/// string's opening quote after a field's `:` or `=` (a tool call's `"command": "…"`), 1
/// KiB at most, and its words up to `s`; the word after `<<<` (no further than the next `<<<`,
/// 256 bytes at most) is judged as [`written_secret`] judges it.
fn here_string(text: &str, s: usize) -> Option<(usize, usize)> {
    let b = text.as_bytes();
    // (The last `<<<` of a run of `<`: its trigger's match is the first that a `<` does
    // not follow.)
    if s > 0 && b[s - 1] == b'<' {
        return None;
    }
    let reads = reader_before(text, s)?;
    let cap = ceil_char_boundary(text, (s + 3 + 256).min(b.len()));
    let end = memchr::memmem::find(&b[s + 3..cap], b"<<<").map_or(cap, |k| s + 3 + k);
    let mut word = [(0, 0)];
    let (n, _) = command_words(b, s + 3, end, &mut word, |_| false);
    let (a, z) = *word[..n].first()?;
    // (A bare word ends at a quote, a backtick or a `<`: a tool call's string that holds
    // the command, `"… <<< PW", "timeout": 5`, a command's substitution, a markup element:
    // `<code>sudo -S ls <<< PW</code>`.)
    let z = match opening_quote(b, a) {
        Some(_) => z,
        None => {
            a + b[a..z]
                .iter()
                .position(|&c| matches!(c, b'"' | b'\'' | b'\\' | b'`' | b'<'))
                .unwrap_or(z - a)
        }
    };
    (z > a)
        .then(|| written_secret(text, &[(a, z)], reads))
        .flatten()
}

/// What the command that a here-string or a here-document at `s` is given to reads (see
/// [`reads_stdin`]; `None` where it reads no password): its line is read back from `s` to a
/// line break, `;`, `|`, `&`, `(` or a `<` (so a run of them is read once), 1 KiB at most,
/// and the command read from the nearest three quotes, backticks or tags' `>` there that
/// may open it (`"command": "sudo -S … <<< …"`, `sh -c 'sudo -S …'`, `` `sudo -S …` ``,
/// `<pre>chpasswd <<EOF`), then from the line's start — up to `s`.
fn reader_before(text: &str, s: usize) -> Option<Reads> {
    let b = text.as_bytes();
    let from = s.saturating_sub(1024);
    let line = (from..s)
        .rev()
        .find(|&j| matches!(b[j], b'\n' | b'\r' | b';' | b'|' | b'&' | b'(' | b'<'))
        .map(|j| j + 1)
        .or((from == 0).then_some(0))?;
    // (The nearest three quotes, backticks or markup tags' `>` that may open the command,
    // nearest first: `<code>sudo -S … <<< …`.)
    (line..s)
        .rev()
        .filter(|&j| matches!(b[j], b'"' | b'\'' | b'`' | b'>'))
        .take(3)
        .map(|j| j + 1)
        .chain([line])
        .find_map(|start| reads_stdin(text, start, s, 0))
}

/// A password in a here-document given to a command that reads one from its standard input
/// (see [`reads_stdin`]), `s` at its `<<`: `chpasswd <<EOF⏎bob:PW⏎EOF`, `passwd bob
/// <<-'END'`, `cat <<EOF | sudo -S …`; the delimiter quoted (JSON-escaped too), after a `\`
/// or not. The command is read as for a here-string (see
/// [`reader_before`]) or, after the delimiter on its line (read to a line break with no `<`
/// before it: a run of them is read once), a pipe into one. The document's lines up to its
/// delimiter's line (blanks before it: after `<<-`, or in a YAML block; or glued to what
/// closes a string, a markup element or code: `EOF"}`, `EOF</pre>`), 64 lines and 4 KiB at
/// most with no `<<` among them, are judged as a written word's lines are (see
/// [`written_secret`]); one never closed there is not. A pipe after the delimiter counts
/// only before any redirection or other command (`cat <<EOF > f; echo … | docker login
/// --password-stdin` writes a file).
fn here_document(text: &str, s: usize) -> Option<(usize, usize)> {
    let b = text.as_bytes();
    if s > 0 && b[s - 1] == b'<' {
        return None;
    }
    let mut i = s + 2;
    // (`<<-`: tabs before the delimiter's line, which is read past any blanks anyway.)
    i += usize::from(b.get(i) == Some(&b'-'));
    while matches!(b.get(i), Some(b' ' | b'\t')) {
        i += 1;
    }
    // (Quoted, JSON-escaped too — `<<\"EOF\"` — or after a `\`: `<<\EOF`.)
    let (quote, escapes) = match quote_at(b, i) {
        Some((q, escapes)) => (Some(q), escapes),
        None => (None, usize::from(b.get(i) == Some(&b'\\'))),
    };
    i += escapes + usize::from(quote.is_some());
    let name = b[i..]
        .iter()
        .take(64)
        .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-' | b'.'))
        .count();
    let closed = |q: u8| {
        b.get(i + name..i + name + escapes)
            .is_some_and(|e| e.iter().all(|&c| c == b'\\'))
            && b.get(i + name + escapes) == Some(&q)
    };
    if name == 0 || quote.is_some_and(|q| !closed(q)) {
        return None;
    }
    let delimiter = &b[i..i + name];
    let after = i + name + quote.map_or(0, |_| escapes + 1);
    let line_end = after
        + b[after..b.len().min(after + 1024)]
            .iter()
            .position(|&c| matches!(c, b'\n' | b'<'))?;
    if b[line_end] != b'\n' {
        return None;
    }
    let reads = match reader_before(text, s) {
        Some(c) => c,
        None => {
            let pipe = after + memchr::memchr(b'|', &b[after..line_end])?;
            // (Not after a redirection or another command: `cat <<EOF > f; echo … | …`.)
            if b.get(pipe + 1) == Some(&b'|')
                || b[after..pipe]
                    .iter()
                    .any(|c| matches!(c, b';' | b'&' | b'>'))
            {
                return None;
            }
            reads_stdin(text, pipe + 1, line_end, 0)?
        }
    };
    // The document's lines, to the delimiter's.
    let first = line_end + 1;
    let limit = b.len().min(first + 4096);
    let mut line = first;
    for _ in 0..64 {
        if line >= limit {
            return None;
        }
        // (The delimiter's line may end the text.)
        let end = memchr::memchr(b'\n', &b[line..limit]).map_or(limit, |k| line + k);
        // (Blanks before it too: a document indented in a YAML block or a Markdown list,
        // which the shell reads unindented — as after `<<-`.)
        let own = &b[line..end];
        // (Another here-document's or here-string's `<<` first: no such document — and a
        // run of them is read a line each.)
        if memchr::memmem::find(own, b"<<").is_some() {
            return None;
        }
        let own = own.strip_suffix(b"\r").unwrap_or(own).trim_ascii_start();
        // (Or the delimiter where a string, a markup element or code that holds the
        // command ends: `…\nEOF"}`, `…\nEOF</pre>`, `EOF```.)
        if own == delimiter
            || (own.starts_with(delimiter)
                && matches!(
                    own.get(delimiter.len()),
                    Some(b'"' | b'\'' | b'\\' | b'<' | b'`' | b')' | b';')
                ))
        {
            let last = (line > first).then(|| line - 1)?;
            let last = last - usize::from(b[last - 1] == b'\r' && last > first);
            return written_secret(text, &[(first, last)], reads);
        }
        line = end + 1;
    }
    None
}

/// Past the rest of a group a writer stands in (see [`stdin_password`]): from `at`, where
/// its words stopped, up to four times another command after a `;` or `&&` where the
/// writer opened the group (`(echo PW; sleep 1; echo PW)`; else `a; b | c` pipes `b`
/// alone), a `)`, or a `;` and a `}` (`{ echo PW; echo PW; }`); then blanks
/// (and line breaks a `\` continues). Where the reading stopped (a pipe, if the group is
/// written into one).
fn group_end(b: &[u8], mut at: usize, end: usize, grouped: bool) -> usize {
    for _ in 0..4 {
        at = skip_space(b, at, end, false);
        match b.get(at) {
            Some(b')') if at < end => at += 1,
            Some(b';' | b'&') if at < end => {
                // (`;`, or `&&`: not `&`, which runs what is before it apart.)
                let and = b[at] == b'&';
                if and && b.get(at + 1) != Some(&b'&') {
                    return at;
                }
                let next = skip_space(b, at + 1 + usize::from(and), end, false);
                if b.get(next) == Some(&b'}') && next < end && !and {
                    at = next + 1;
                    continue;
                }
                if !grouped {
                    return at;
                }
                at = command_words(b, next, end, &mut [(0, 0); 8], |_| false).1;
            }
            _ => return at,
        }
    }
    skip_space(b, at, end, false)
}

/// The colon after the user in a `user:password` line (see [`written_secret`]): the first
/// outside a variable's `${…}` (`${USER:-bob}:${PW}`).
fn user_colon(line: &[u8]) -> Option<usize> {
    let mut i = 0;
    while i < line.len() {
        match line[i] {
            b':' => return Some(i),
            b'$' if line.get(i + 1) == Some(&b'{') => {
                i += memchr::memchr(b'}', &line[i..])?;
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// Past blanks from `i` (no further than `end`), and a line break a `\`, a `^` or a
/// backtick continues, as written or JSON-escaped — or, `breaks`, any line break (as after
/// a pipe at a line's end).
fn skip_space(b: &[u8], mut i: usize, end: usize, breaks: bool) -> usize {
    // (A line break, and one JSON-escaped: how many bytes, if one starts `r`.)
    let line_break = |r: &[u8]| match r {
        [b'\r', b'\n', ..] => 2,
        [b'\n' | b'\r', ..] => 1,
        _ => 0,
    };
    let escaped_break = |r: &[u8]| match r {
        [b'\\', b'r', b'\\', b'n', ..] => 4,
        [b'\\', b'n', ..] => 2,
        _ => 0,
    };
    while i < end {
        // (A line continuation: a POSIX shell's `\`, cmd.exe's `^`, PowerShell's backtick
        // after a blank (see [`continued`]), before a line break; in a JSON string, `\\\n`
        // (a shell's `\` escaped, and the break), folded `\\` and a break, and `^` or the
        // backtick before `\n`.)
        // (The mark's bytes and the break's, if a break follows the mark.)
        let past = |mark: usize, n: usize| if n == 0 { 0 } else { mark + n };
        let r = &b[i + 1..];
        let continued = match (b[i], r) {
            (b'\\', [b'\\', rest @ ..]) => past(2, line_break(rest).max(escaped_break(rest))),
            (b'\\', _) => past(1, line_break(r)),
            (b'^', _) => past(1, line_break(r).max(escaped_break(r))),
            (b'`', _) if i > 0 && matches!(b[i - 1], b' ' | b'\t') => {
                past(1, line_break(r).max(escaped_break(r)))
            }
            _ => 0,
        };
        match b[i] {
            b' ' | b'\t' => i += 1,
            b'\n' | b'\r' if breaks => i += 1,
            _ if continued > 0 => i += continued,
            _ => break,
        }
    }
    i
}

/// What a command that reads a password from its standard input reads (see
/// [`reads_stdin`]).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Reads {
    /// A password: `sudo -S`, `passwd`, a registry's `--password-stdin`, …
    Password,
    /// A password or a passphrase of words: `cryptsetup`, gpg's, openssl's.
    Passphrase,
    /// `user:password` lines: `chpasswd`.
    UserPassword,
    /// `.pgpass` entries: `tee ~/.pgpass` (see [`pgpass_entry`]).
    Pgpass,
}

/// What the command whose line starts at `i` (past a pipe, or a here-string's or a
/// here-document's command: see [`reader_before`]), read no further than `until`, reads
/// from its standard input, if a password (see [`stdin_password`]). The readers: `sudo -S`
/// (`--stdin`; in a cluster, `-kS`; after options that take a value, `-u bob`, `-iu bob`,
/// `--user bob`), `chpasswd` (`user:password`), `passwd`, `smbpasswd -s`, `htpasswd -i`,
/// `kinit`, `vncpasswd`, `cryptsetup`, `sshpass` with no password option, `vault login -`,
/// `openssl passwd -stdin`, `mkpasswd --stdin|-s`, secret stores (`gh secret set NAME` with
/// no value, `docker secret create NAME -`, `gcloud [beta] secrets … --data-file=-` (or
/// `/dev/stdin`), `wrangler [pages] secret put`, `vercel env add` for a variable named for
/// a secret, `secret-tool store`, `pass|gopass|passage insert|add`, `vault|bao kv put|patch
/// PATH key=-`, `vault write PATH key=-`), `tee ~/.pgpass` (its entries), `ssh` whose
/// remote command is such a reader (`ssh h 'sudo -S …'`, read within its quoted word; `ssh
/// -p 22 h chpasswd`), or any command whose line holds `--password-stdin` (a registry's
/// `docker|podman|helm|oras login`), gh's `--with-token`, gpg's `--passphrase-fd 0` or
/// openssl's `-pass stdin`. Before the command: a prompt or a list's mark (`$`, `#`, `>`,
/// `%`, `-`, `+`), a step's key (`run:`, `shell:`), a Dockerfile's `RUN`,
/// `if`/`then`/`do`/`!`, wrappers (`env X=1`, package runners — `npx`, `bunx`, `pnpx`,
/// `pnpm [dlx]`, `yarn` —, `command`, `exec`, `nohup`, `time`, `nice -n 5`, `timeout 10`,
/// `\`), `sudo` and its options, or a path (`/usr/sbin/chpasswd`). Through up to two
/// filters (`| tee f |`, `| head -2 |`) and one `ssh` (`depth` counts them).
fn reads_stdin(text: &str, i: usize, until: usize, depth: u8) -> Option<Reads> {
    let b = text.as_bytes();
    let end = ceil_char_boundary(text, until.min(i.saturating_add(1024)).min(b.len()));
    let mut words = [(0, 0); 24];
    let (n, stopped) = command_words(b, i, end, &mut words, |_| false);
    let words = &words[..n];
    let word = |k: usize| words.get(k).map(|&(a, z)| &b[a..z]);
    // A cluster of one-letter options holding `c` (`-kS`).
    let cluster = |w: &[u8], c: u8| {
        w.len() > 1
            && w[0] == b'-'
            && w[1] != b'-'
            && w[1..].iter().all(u8::is_ascii_alphabetic)
            && w.contains(&c)
    };
    // (Its last path segment, `/usr/sbin/chpasswd`; a `\` that skips an alias, `\sudo`; a
    // package's version, `wrangler@latest`.)
    fn name(w: &[u8]) -> &[u8] {
        let w = w.rsplit(|&c| c == b'/').next().unwrap_or(w);
        let w = w.strip_prefix(b"\\").unwrap_or(w);
        match w.iter().position(|&c| c == b'@') {
            Some(at) if at > 0 => &w[..at],
            _ => w,
        }
    }
    let mut k = 0;
    // Prompts, keys, keywords, wrappers, their options and numbers, variables set.
    let mut takes_next = false;
    while let Some(w) = word(k) {
        let prefix = k == 0 && [&b"$"[..], b"#", b">", b"%", b"-", b"+", b"RUN"].contains(&w);
        let key = w.len() > 1
            && w.ends_with(b":")
            && w[..w.len() - 1].iter().all(u8::is_ascii_alphanumeric);
        let keyword = [
            &b"if"[..],
            b"then",
            b"do",
            b"else",
            b"elif",
            b"while",
            b"until",
            b"!",
            b"{",
        ]
        .contains(&w);
        let wrapper = [
            &b"env"[..],
            b"npx",
            b"bunx",
            b"pnpx",
            b"pnpm",
            b"yarn",
            b"dlx",
            b"command",
            b"exec",
            b"nohup",
            b"time",
            b"nice",
            b"timeout",
        ]
        .contains(&name(w));
        let set = w.first().is_some_and(u8::is_ascii_alphabetic) && w.contains(&b'=');
        let option = k > 0 && (w.first() == Some(&b'-') || w.iter().all(u8::is_ascii_digit));
        if !(prefix || key || keyword || wrapper || set || option || takes_next) {
            break;
        }
        // (`timeout`'s duration, `10s`.)
        takes_next = name(w) == b"timeout";
        k += 1;
    }
    if word(k).map(name) == Some(b"sudo") {
        k += 1;
        while let Some(w) = word(k).filter(|w| w.first() == Some(&b'-')) {
            let mut takes = false;
            if w.starts_with(b"--") {
                if w == b"--stdin" {
                    return Some(Reads::Password);
                }
                // (The long options that take a value, as their own word.)
                takes = [
                    &b"--user"[..],
                    b"--group",
                    b"--prompt",
                    b"--host",
                    b"--close-from",
                    b"--chdir",
                    b"--chroot",
                    b"--role",
                    b"--type",
                    b"--other-user",
                    b"--command-timeout",
                ]
                .contains(&w);
            } else {
                // A cluster: `S` reads the password; a letter that takes a value takes the
                // rest of the word, or the next word where it ends it (`-iu bob`).
                for (at, &c) in w.iter().enumerate().skip(1) {
                    if c == b'S' {
                        return Some(Reads::Password);
                    }
                    if b"ugphCDRrtUT".contains(&c) {
                        takes = at == w.len() - 1;
                        break;
                    }
                }
            }
            k += 1 + usize::from(takes);
        }
    }
    let command = name(word(k)?);
    let rest = &words[k + 1..];
    let has = |f: &dyn Fn(&[u8]) -> bool| rest.iter().any(|&(a, z)| f(&b[a..z]));
    let after = |o: &[u8], v: &[u8]| {
        rest.windows(2)
            .any(|p| &b[p[0].0..p[0].1] == o && &b[p[1].0..p[1].1] == v)
    };
    let reads = match command {
        b"chpasswd" => return Some(Reads::UserPassword),
        b"cryptsetup" => return Some(Reads::Passphrase),
        // (TigerVNC's and TightVNC's `vncpasswd` read the standard input when it is no
        // terminal: `-f` writes the password's file to the standard output, without it the
        // password is read twice and a view-only one asked for, `printf 'pw\npw\nn\n' |`.)
        b"passwd" | b"kinit" | b"vncpasswd" | b"tigervncpasswd" | b"tightvncpasswd" => true,
        b"smbpasswd" => has(&|w| cluster(w, b's')),
        b"htpasswd" => has(&|w| cluster(w, b'i')),
        b"sshpass" => {
            !has(&|w| w.len() >= 2 && w[0] == b'-' && matches!(w[1], b'p' | b'f' | b'd' | b'e'))
        }
        // (`vault login -`; `vault kv put|patch PATH key=-` and `vault write PATH key=-`,
        // whose value is read; OpenBao's `bao` alike.)
        b"vault" | b"bao" => match word(k + 1) {
            Some(b"login") => has(&|w| w == b"-"),
            Some(b"kv") => {
                matches!(word(k + 2), Some(b"put" | b"patch")) && has(&|w| w.ends_with(b"=-"))
            }
            Some(b"write") => has(&|w| w.ends_with(b"=-")),
            _ => false,
        },
        b"mkpasswd" => has(&|w| w == b"--stdin" || w == b"-s"),
        // Secret stores that read the secret's value from standard input: `gh secret set
        // NAME` with no value given, `docker secret create NAME -`, `gcloud secrets create
        // NAME --data-file=-` (and `versions add`), `wrangler secret put NAME`, `vercel env
        // add NAME`.
        b"gh" => {
            word(k + 1) == Some(b"secret")
                && word(k + 2) == Some(b"set")
                && !has(&|w| {
                    [&b"--body"[..], b"-b", b"--env-file", b"-f"]
                        .iter()
                        .any(|o| w == *o || (w.starts_with(o) && w.get(o.len()) == Some(&b'=')))
                })
        }
        b"docker" | b"podman" => {
            word(k + 1) == Some(b"secret")
                && word(k + 2) == Some(b"create")
                && rest.last().map(|&(a, z)| &b[a..z]) == Some(b"-")
        }
        b"gcloud" => {
            // (`gcloud [beta|alpha] secrets …`, the data from `-` or `/dev/stdin`.)
            let sub = usize::from(matches!(word(k + 1), Some(b"beta" | b"alpha")));
            word(k + 1 + sub) == Some(b"secrets")
                && (has(&|w| w == b"--data-file=-" || w == b"--data-file=/dev/stdin")
                    || after(b"--data-file", b"-")
                    || after(b"--data-file", b"/dev/stdin"))
        }
        b"wrangler" => {
            // (`wrangler [pages] secret put NAME`.)
            let sub = usize::from(word(k + 1) == Some(b"pages"));
            word(k + 1 + sub) == Some(b"secret") && word(k + 2 + sub) == Some(b"put")
        }
        // (libsecret's `secret-tool store --label=… attribute value …`; the standard Unix
        // password manager's `pass insert|add [-e|-m] NAME`, and gopass's and passage's.)
        b"secret-tool" => word(k + 1) == Some(b"store"),
        b"pass" | b"gopass" | b"passage" => matches!(word(k + 1), Some(b"insert" | b"add")),
        // (Only a variable named for a secret: `vercel env add PORT` is given a number.)
        b"vercel" => {
            word(k + 1) == Some(b"env")
                && word(k + 2) == Some(b"add")
                && word(k + 3).is_some_and(|v| std::str::from_utf8(v).is_ok_and(names_a_secret))
        }
        // (The remote command: a bare `sudo`'s, or a quoted word's, read within the word —
        // the first two — and not within another `ssh`.)
        b"ssh" if depth == 0 => {
            // (Its first word after the host, past options — some with a value.)
            let mut r = 0;
            while let Some(w) = rest
                .get(r)
                .map(|&(a, z)| &b[a..z])
                .filter(|w| w.first() == Some(&b'-'))
            {
                r += 1 + usize::from(w.len() == 2 && b"pilJFoLRDbcmEeQSWw".contains(&w[1]));
            }
            let bare = rest.get(r + 1).map(|&(a, _)| (a, end));
            let quoted = rest
                .iter()
                .filter(|&&(a, _)| opening_quote(b, a).is_some())
                .take(2)
                .copied();
            let remote = bare
                .into_iter()
                .chain(quoted)
                .find_map(|(a, z)| reads_stdin(text, a, z, 2));
            if remote.is_some() {
                return remote;
            }
            false
        }
        // (`tee [-a] ~/.pgpass` writes a `.pgpass` file's entries.)
        b"tee" if has(&|w| pgpass_file(w)) => return Some(Reads::Pgpass),
        // (A filter passes what it reads on: the command after the next pipe.)
        b"tee" | b"head" | b"cat" | b"tr" if depth < 2 && b.get(stopped) == Some(&b'|') => {
            let next = skip_space(b, stopped + 1, end, true);
            return reads_stdin(text, next, until, depth + 1);
        }
        _ => false,
    };
    let passphrase = (command == b"openssl"
        && (word(k + 1) == Some(b"passwd") && has(&|w| w == b"-stdin")))
        || has(&|w| w == b"--passphrase-fd=0")
        || after(b"--passphrase-fd", b"0")
        || ["-passin", "-passout", "-pass"]
            .iter()
            .any(|o| after(o.as_bytes(), b"stdin"));
    if passphrase {
        return Some(Reads::Passphrase);
    }
    (reads || has(&|w| w == b"--password-stdin" || w == b"--with-token")).then_some(Reads::Password)
}

/// Whether the quote at `k` closes a word whose quote, after `escapes` backslashes, opened
/// it at `open` (see [`command_words`]): a `'` after at least as many backslashes (a shell
/// reads none inside single quotes); a `"` after a run of backslashes that leaves it
/// unescaped where the shell reads it — an even run, or in a JSON string (`escapes` 1, or
/// 3 in one nested) `escapes` more than a multiple of twice `escapes + 1`: `\"` closes
/// there, `\\\"` (an escaped quote inside) does not. In bash's `$'…'` (`dollar`), a `'` is
/// read as a `"` is: `$'it\'s'`.
fn closes(b: &[u8], open: usize, k: usize, escapes: usize, dollar: bool) -> bool {
    let run = b[open..k].iter().rev().take_while(|&&c| c == b'\\').count();
    run >= escapes && ((b[k] == b'\'' && !dollar) || run % (2 * (escapes + 1)) == escapes)
}

/// The words of a command's line from `i` (see [`positional_password`] and
/// [`stdin_password`]; a line break a `\` continues is a blank): where each starts (past
/// an opening quote, escaped as a JSON string's by up to three backslashes) and ends, into
/// `words` — up to a line break, `;`, `|`, `)` or an operator's `&` (`&&`, a `&` before a
/// blank: not ACL's `&*`) outside quotes, a quote never closed, a word `stop_at` holds (not
/// read into `words`), `end`, or as many words as `words` holds. A quoted part glued to a
/// word is that word's (`/user:"CORP\bob"`); a quote glued on that closes nothing on the
/// line, or stands before JSON's `,`, `:`, `}` or `]`, ends the word and the reading (it
/// closes the string that holds the command: `{"cmd": "… S3cret", "n": 5}`); a bare word
/// ends at an operator (`)`, `&&`, a `&` before a blank). Returns how many words were read
/// and where the reading stopped (past the last word's closing quote, at a terminator, or
/// at the word that stopped it).
fn command_words(
    b: &[u8],
    mut i: usize,
    end: usize,
    words: &mut [(usize, usize)],
    stop_at: impl Fn(&[u8]) -> bool,
) -> (usize, usize) {
    let mut n = 0;
    // (The word read last ended at a quote that closes nothing: no word follows.)
    let mut last = false;
    while n < words.len() {
        // (Blanks, and a line break a `\` continues.)
        i = skip_space(b, i, end, false);
        // (`&` as an operator, `&&` or a `&` before a blank: not ACL's `&*`.)
        let and = i < end
            && b[i] == b'&'
            && b.get(i + 1)
                .is_none_or(|c| matches!(c, b'&' | b' ' | b'\t' | b'\n' | b'\r'));
        if i >= end || and || matches!(b[i], b'\n' | b'\r' | b';' | b'|' | b')') {
            break;
        }
        // (A quote escaped as in a JSON string, `\"…\"`, up to three backslashes; bash's
        // `$'…'`.)
        let dollar = usize::from(b[i] == b'$' && b.get(i + 1) == Some(&b'\'') && i + 1 < end);
        let quote = quote_at(b, i + dollar).filter(|&(_, escapes)| i + dollar + escapes < end);
        let (start, stop) = match quote {
            Some((q, escapes)) => {
                let open = i + dollar + escapes + 1;
                // (A quote never closed ends the words read.)
                let Some(close) = memchr::memchr_iter(q, &b[open..end])
                    .map(|k| open + k)
                    .find(|&k| closes(b, open, k, escapes, dollar == 1))
                else {
                    break;
                };
                i = close;
                (open, close - escapes)
            }
            _ => {
                // (A quoted part glued on is the word's too, as a shell reads it:
                // `/user:"CORP\bob"`, `/fullname:"Bob Smith"` — two such parts at most,
                // each closed on its line within 256 bytes.)
                let mut k = i;
                let mut parts = 0;
                // (It ends at an operator: `)`, `&&`, a `&` before a blank — not `2>&1`.)
                let operator = |k: usize| {
                    b[k] == b')'
                        || (b[k] == b'&'
                            && b.get(k + 1)
                                .is_none_or(|c| matches!(c, b'&' | b' ' | b'\t' | b'\n' | b'\r')))
                };
                while k < end
                    && !matches!(b[k], b' ' | b'\t' | b'\n' | b'\r' | b';' | b'|')
                    && !operator(k)
                {
                    // (A quote glued on before JSON's `,`, `:`, `}` or `]` closes the
                    // string that holds the command: `{"command": "… S3cret", "n": 5}`.)
                    if matches!(b[k], b'"' | b'\'')
                        && k > i
                        && matches!(b.get(k + 1), Some(b',' | b':' | b'}' | b']'))
                    {
                        last = true;
                        break;
                    }
                    if matches!(b[k], b'"' | b'\'') && k > i {
                        let part = &b[k + 1..end.min(k + 257)];
                        match memchr::memchr2(b[k], b'\n', part) {
                            Some(close) if part[close] == b[k] && parts < 2 => {
                                k += close + 1;
                                parts += 1;
                            }
                            // (A quote that closes nothing on the line ends the command:
                            // the string that holds it, `{"cmd": "… S3cret"}`.)
                            None | Some(_) if parts < 2 => {
                                last = true;
                                break;
                            }
                            _ => break,
                        }
                    } else if matches!(b[k], b'"' | b'\'') {
                        break;
                    }
                    k += 1;
                }
                (i, k)
            }
        };
        if stop_at(&b[start..stop]) {
            break;
        }
        words[n] = (start, stop);
        n += 1;
        if last {
            i = stop;
            break;
        }
        i = i.max(stop) + usize::from(i.max(stop) < end && matches!(b[i.max(stop)], b'"' | b'\''));
    }
    (n, i)
}

/// The words of an argument list after a command's quoted name ends at `i` (`"ipmitool",
/// "-H", "h", "-P", "…"`; JSON-escaped too, `\"psexec\", \"-p\", …`): each string after a
/// comma (line breaks around it), escaped as the name is, into `words`, up to anything else
/// (the list's `]`), a word `stop_at` holds (as [`command_words`] stops), `end`, or as many
/// words as `words` holds. `None` where no comma follows the name's closing quote.
fn listed_words(
    b: &[u8],
    i: usize,
    end: usize,
    words: &mut [(usize, usize)],
    stop_at: impl Fn(&[u8]) -> bool,
) -> Option<usize> {
    let (_, escapes) = quote_at(b, i).filter(|&(_, e)| i + e < end)?;
    let mut at = skip_space(b, i + escapes + 1, end, true);
    if b.get(at) != Some(&b',') || at >= end {
        return None;
    }
    let mut n = 0;
    while n < words.len() && at < end && b[at] == b',' {
        let j = skip_space(b, at + 1, end, true);
        let Some((q, open)) = quote_at(b, j)
            .filter(|&(_, e)| e == escapes && j + e + 1 < end)
            .map(|(q, _)| (q, j + escapes + 1))
        else {
            break;
        };
        let Some(close) = memchr::memchr_iter(q, &b[open..end])
            .map(|k| open + k)
            .find(|&k| closes(b, open, k, escapes, false))
        else {
            break;
        };
        let word = (open, close - escapes);
        if stop_at(&b[word.0..word.1]) {
            break;
        }
        words[n] = word;
        n += 1;
        at = skip_space(b, close + 1, end, true);
    }
    Some(n)
}

/// Whether an argument's `value` (`quoted` or not; `next`: the byte after it) is a secret:
/// as a named field's value is, or, quoted, a passphrase of words (see [`argument`]).
fn secret_argument(value: &str, quoted: bool, next: Option<u8>) -> bool {
    let phrase = quoted
        && value.len() >= 8
        && value.contains(' ')
        && !template(value.as_bytes())
        && !placeholder(value);
    phrase || secret_value(value, quoted, next)
}

/// A port or a port mapping (`8080`, `8080:80`): what `-p` means to most commands that are
/// not given a password by it.
fn port(value: &str) -> bool {
    value
        .split(':')
        .all(|p| (1..=5).contains(&p.len()) && p.bytes().all(|c| c.is_ascii_digit()))
}

/// Whether no option of `command` that gives a password is ever a port's (see
/// [`command_password`]): every command's but the MySQL and MariaDB clients', the MongoDB
/// tools' and a registry login's `-p` (sshpass's is its password: a port's `-p` is the
/// wrapped `ssh`'s, after it).
fn port_free(command: &str) -> bool {
    let starts = |p: &str| {
        command
            .get(..p.len())
            .is_some_and(|c| c.eq_ignore_ascii_case(p))
    };
    !(starts("mysql") || starts("mariadb") || starts("mongo") || command == "login")
}

/// openssl's `pass:…` argument at `at` (after its option): the password after `pass:`,
/// quoted or not, and the whole argument quoted (`'pass:S3cret words'`).
fn pass_argument(text: &str, at: usize) -> Option<(usize, usize)> {
    let b = text.as_bytes();
    let inner = at + "pass:".len();
    match opening_quote(b, at) {
        // The whole argument quoted: its value runs to the closing quote.
        Some(q) => {
            let len = value_len(b, at, Some(q));
            let end = ceil_char_boundary(text, at + len);
            let value = text.get(inner..end)?;
            let phrase = value.len() >= 8 && value.contains(' ') && !placeholder(value);
            (phrase || secret_value(value, true, b.get(end).copied())).then_some((inner, end))
        }
        // `pass:"…"`: the password quoted after `pass:`.
        None if matches!(b.get(inner), Some(b'"' | b'\'')) => argument(text, inner + 1),
        None => argument(text, inner),
    }
}

/// [`placeholder`] of bytes that may not be text (`false` where they are not).
fn placeholder_bytes(value: &[u8]) -> bool {
    std::str::from_utf8(value).is_ok_and(placeholder)
}

/// A word documentation puts where a credential goes (`USER:PASS`, `changeme`,
/// `your-token`, `<password>`): a placeholder word, or capitals and `_` only.
fn placeholder(value: &str) -> bool {
    const WORDS: [&str; 10] = [
        "pass", "password", "passwd", "pwd", "secret", "token", "apikey", "api_key", "key", "pw",
    ];
    let lower = value.to_ascii_lowercase();
    WORDS.contains(&lower.as_str())
        || holds_any(
            &lower,
            &[
                "your",
                "example",
                "changeme",
                "placeholder",
                "redacted",
                "xxxx",
                "dummy",
            ],
        )
        || value.bytes().all(|c| c.is_ascii_uppercase() || c == b'_')
}

/// True when the line break at `i` (`\n` or `\r`) continues its command's line: after a
/// `\` (a POSIX shell's), a `^` (cmd.exe's) or a backtick after a blank (PowerShell's), the
/// `\r` of a `\r\n` between them.
fn continued(b: &[u8], i: usize) -> bool {
    let j = match b[i] {
        b'\n' if i > 0 && b[i - 1] == b'\r' => i - 1,
        _ => i,
    };
    match j.checked_sub(1).map(|k| b[k]) {
        Some(b'\\') => true,
        // (cmd.exe's `^` wherever it stands; a backtick only after a blank, not the end of
        // a command substitution.)
        Some(b'^') => true,
        Some(b'`') => j >= 2 && matches!(b[j - 2], b' ' | b'\t'),
        _ => false,
    }
}

/// Where the line (up to a line break that does not continue it, see [`continued`], or a
/// `|`, `;` or `&` outside quotes) that starts at `from` ends, reading at most `max` bytes;
/// and stopping at `stop`.
fn command_end(b: &[u8], from: usize, max: usize, stop: impl Fn(usize) -> bool) -> usize {
    let to = b.len().min(from.saturating_add(max));
    let mut quote = None;
    let mut i = from;
    while i < to {
        let c = b[i];
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None => match c {
                b'"' | b'\'' => quote = Some(c),
                b'\n' | b'\r' if !continued(b, i) => return i,
                b'|' | b';' | b'&' => return i,
                _ if stop(i) => return i,
                _ => {}
            },
        }
        i += 1;
    }
    to
}

/// Where the string a lookup falls back to starts, inside its quote, for an expression at
/// `at` that is no string: a name, dotted, indexed or called (`process.env.DB_PASSWORD`,
/// `os.environ.get('PW')`, `config["db"]["pw"]`, TypeScript's `env?.PW!`; brackets nested
/// twice at most, quotes inside them skipped), then `||`, `??`, `?:` or Python's `or` (on
/// the next line too, as Prettier breaks it) and a quoted string (after Python's or C#'s
/// prefix, or a template literal) — or another such expression and its fallback, four at
/// most (`process.env.A || process.env.B || '…'`); or inside brackets that open the
/// expression (`(process.env.PW || '…')`, `String(process.env.PW || '…')`) — within 160
/// bytes. In a template, Helm's `default` before its lookup too, `{{ default "…"
/// .Values.password }}`. (`password: process.env.DB_PASSWORD || '…'`: the string is what
/// the field holds wherever the lookups find nothing.)
fn fallback_string(b: &[u8], at: usize) -> Option<usize> {
    let end = b.len().min(at + 160);
    // (Inside ERB's tag, as Rails's `database.yml` writes it, `<%= ENV.fetch(…) { "…" }
    // %>`; or a template's, Jinja's, Helm's, `{{ db_password | default('…') }}`.)
    let open = [&b"<%="[..], b"{{-", b"{{"]
        .iter()
        .find_map(|t| b[at..end].strip_prefix(*t).map(|rest| (rest, t[0] == b'{')));
    let start = at;
    let (at, opened) = match open {
        Some((rest, template)) => (
            end - rest.len()
                + rest
                    .iter()
                    .take_while(|&&c| c == b' ' || c == b'\t')
                    .count(),
            Some(template),
        ),
        None => (at, None),
    };
    // Whether the expression stands in a template — or in a template's statement that sets
    // the variable, Jinja's `{% set db_password = x | default('…') %}`, Helm's `{{-
    // $password := default "…" .Values.pw -}}`: read where it matters only (a search of
    // the line at each named value made a run of names 1.4x as slow).
    let set = std::cell::OnceCell::new();
    let template = || {
        opened.unwrap_or_else(|| {
            *set.get_or_init(|| template_set(&b[start.saturating_sub(96)..start]))
        })
    };
    // (Helm's and Sprig's function before its lookup, `{{ default "…" .Values.pw }}`: its
    // first argument; in brackets too, `{{ (default "…" .Values.pw) | b64enc }}`.)
    // (Not past `end`: blanks may fill the window up to it, review 60.)
    let bracket = usize::from(b[at..end].first() == Some(&b'('));
    if let Some(after) = b[at + bracket..end].strip_prefix(b"default")
        && template()
        && let blanks @ 1.. = after
            .iter()
            .take_while(|&&c| c == b' ' || c == b'\t')
            .count()
        // (Else a lookup that a filter may follow, `{{ (default .Values.a .Values.b) |
        // default "…" }}`: read on, review 61.)
        && let Some(first) = string_start(b, end - after.len() + blanks, end)
    {
        return Some(first);
    }
    let mut from = at;
    for _ in 0..4 {
        match fallback_after(b, from, end, &template)? {
            Fallback::String(first) => return Some(first),
            Fallback::Lookup(next) => from = next,
        }
    }
    None
}

/// Whether the line `before` ends (up to a value's expression) is a template's statement
/// that sets a variable: Jinja's `{% set name = ` (`{%- set`, `{%+ set`), Helm's `{{ $name
/// := ` (`{{- $name =`).
fn template_set(before: &[u8]) -> bool {
    let line = memchr::memrchr(b'\n', before).map_or(before, |i| &before[i + 1..]);
    // (The last tag opened on the line, found from its `{`: most lines hold none, and a
    // search for `{{` built at each named value made a run of names 1.4x as slow.)
    let Some(i) = memchr::memrchr_iter(b'{', line)
        .find(|&i| i > 0 && line[i - 1] == b'{' || line.get(i + 1) == Some(&b'%'))
    else {
        return false;
    };
    let (open, i) = match line[i] == b'{' && line.get(i + 1) == Some(&b'%') {
        true => (b'%', i),
        false => (b'{', i - 1),
    };
    let rest = line[i + 2..].trim_ascii_start();
    match open {
        b'{' => {
            let rest = rest.strip_prefix(b"-").unwrap_or(rest).trim_ascii_start();
            rest.starts_with(b"$") && memchr::memchr(b'}', rest).is_none()
        }
        _ => {
            let rest = rest
                .strip_prefix(b"-")
                .or(rest.strip_prefix(b"+"))
                .unwrap_or(rest);
            // (Not closed before the value, `{% set x = 1 %} password: …`: review 61.)
            rest.trim_ascii_start().starts_with(b"set ") && !rest.windows(2).any(|w| w == b"%}")
        }
    }
}

/// What follows the expression at `at` (see [`fallback_string`]).
enum Fallback {
    /// A string, its first character's place.
    String(usize),
    /// Another expression, where it starts.
    Lookup(usize),
}

/// The fallback after the expression at `at`, read up to `end` (see [`fallback_string`]);
/// a filter's default only in a `template` (`{{ pw | default('…') }}` — not a value's
/// column beside it, `| Xk9… | default: "none" |`, review 56).
fn fallback_after(
    b: &[u8],
    at: usize,
    end: usize,
    template: &dyn Fn() -> bool,
) -> Option<Fallback> {
    let mut i = at;
    let (mut depth, mut quote) = (0u8, None::<u8>);
    // (Where the expression's first bracket opens, if it opens the expression or follows
    // its first name: `(…)`, `String(…)`.)
    let mut inner = None;
    while i < end {
        let c = b[i];
        match quote {
            Some(q) if c == q && b[i - 1] != b'\\' => quote = None,
            Some(_) => {}
            None if c == b'\n' || c == b'\r' => break,
            None if depth > 0 && matches!(c, b'"' | b'\'' | b'`') => quote = Some(c),
            None if matches!(c, b'(' | b'[') => {
                if depth == 0 && inner.is_none() && b[at..i].iter().all(u8::is_ascii_alphanumeric) {
                    inner = Some(i + 1);
                }
                depth += 1;
                if depth > 2 {
                    return None;
                }
            }
            None if matches!(c, b')' | b']') => depth = depth.checked_sub(1)?,
            // (TypeScript's optional chaining and non-null assertion.)
            None if c == b'?' && b.get(i + 1) == Some(&b'.') => {}
            None if c == b'!' && !matches!(b.get(i + 1), Some(b'=')) => {}
            None if depth > 0 || c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'$') => {}
            None => break,
        }
        i += 1;
    }
    if i == at || quote.is_some() {
        return None;
    }
    if depth > 0 {
        return inner.and_then(|k| fallback_after(b, k, end, template));
    }
    // (Blanks, and one line break: before the operator or after it.)
    let blanks = |i: usize, lines: bool| {
        let mut j = i;
        let mut broken = false;
        while j < end {
            match b[j] {
                b' ' | b'\t' => j += 1,
                b'\n' | b'\r' if lines && !broken => {
                    j += 1 + usize::from(b[j] == b'\r' && b[..end].get(j + 1) == Some(&b'\n'));
                    broken = true;
                }
                _ => break,
            }
        }
        j
    };
    let op = blanks(i, true);
    let rest = &b[op..end];
    // (Ruby's block that gives a lookup's default, `ENV.fetch("DB_PASSWORD") { "…" }`.)
    if rest.starts_with(b"{") && b[i - 1] == b')' {
        return string_start(b, blanks(op + 1, false), end).map(Fallback::String);
    }
    // (Python's `or` a word of its own.)
    let or = rest.starts_with(b"or")
        && (op > i || b[op - 1] == b')')
        && matches!(rest.get(2), Some(b' ' | b'\t' | b'"' | b'\''));
    // (A template's filter, `| default('…')`, `| default "…"`, `| default: "…"`, Jinja's
    // `| d('…')`: where its argument starts.)
    let filter = || {
        let rest = rest.strip_prefix(b"|").filter(|_| template())?;
        let word = rest
            .iter()
            .take_while(|&&c| c == b' ' || c == b'\t')
            .count();
        let after = rest[word..].strip_prefix(b"default").or_else(|| {
            rest[word..]
                .strip_prefix(b"d")
                .filter(|a| a.first() == Some(&b'('))
        })?;
        let open = usize::from(matches!(after.first(), Some(b'(' | b':')));
        let at = end - after.len() + open;
        (open == 1 || matches!(after.first(), Some(b' ' | b'\t'))).then_some(at)
    };
    let value = match or
        || [&b"||"[..], b"??", b"?:"]
            .iter()
            .any(|o| rest.starts_with(o) && rest.get(2) != Some(&b'='))
    {
        true => blanks(op + 2, true),
        false => match filter() {
            Some(at) => blanks(at, false),
            None => return inner.and_then(|k| fallback_after(b, k, end, template)),
        },
    };
    Some(match string_start(b, value, end) {
        Some(first) => Fallback::String(first),
        None => Fallback::Lookup(value),
    })
}

fn past_quote(b: &[u8], at: usize, end: usize) -> Option<usize> {
    let slashes = b
        .get(at..end)?
        .iter()
        .take(3)
        .take_while(|&&c| c == b'\\')
        .count();
    // (Only a quote before `end`: the line may end right at it.)
    (at + slashes < end && matches!(b[at + slashes], b'"' | b'\'')).then_some(at + slashes + 1)
}

/// Where the value after an option ends up starting (`at`: right after the option's name):
/// past blanks or a line continuation, an `=`, or an argument list's `", "`, and an opening
/// quote, escaped or not; and whether anything separated it from the option (`-p S3cret`, not
/// `-pS3cret`). `None` when no value follows before `end`.
fn option_argument(b: &[u8], mut at: usize, end: usize) -> Option<(usize, bool)> {
    let ws = |c: &u8| matches!(c, b' ' | b'\t' | b'\n' | b'\r');
    let start = at;
    // Blanks, and line breaks a `\` continues (or a `^` or a backtick after a blank: see
    // [`continued`]).
    while at < end {
        match b[at] {
            b' ' | b'\t' => at += 1,
            c @ (b'\\' | b'^' | b'`')
                if at + 1 < end
                    && matches!(b[at + 1], b'\n' | b'\r')
                    && (c != b'`' || (at > start && matches!(b[at - 1], b' ' | b'\t'))) =>
            {
                at += 2
            }
            b'\n' | b'\r' if at > start => at += 1,
            _ => break,
        }
    }
    if at == start && b.get(at) == Some(&b'=') {
        at += 1;
    } else if at == start {
        // An argument list: the option's closing quote, a comma, the value's opening one.
        if let Some(mut k) = past_quote(b, at, end) {
            k += b[k..end].iter().take_while(|c| ws(c)).count();
            if k < end && b[k] == b',' {
                k += 1;
                at = k + b[k..end].iter().take_while(|c| ws(c)).count();
            }
        }
    }
    let separated = at > start;
    at = past_quote(b, at, end).unwrap_or(at);
    (at < end && !matches!(b[at], b'-' | b' ' | b'\t' | b'\n' | b'\r' | b'"' | b'\''))
        .then_some((at, separated))
}

/// The password of curl's `-u user:password`, the argument at `first`:
/// whatever it holds (`-u admin:Zq9`; quoted, blanks too) — unless a template, a mask, a
/// placeholder (`USER:PASS`, `user:password`) or the user again (`guest:guest`).
fn user_password(text: &str, first: usize, sep: u8) -> Option<(usize, usize)> {
    let b = text.as_bytes();
    let quote = opening_quote(b, first);
    let arg = value_len(b, first, quote);
    let colon = first + b[first..first + arg].iter().position(|&c| c == sep)?;
    let user = &text[first..colon];
    let end = ceil_char_boundary(text, first + arg);
    let pw = &text[colon + 1..end];
    let refused = pw.is_empty()
        || template(pw.as_bytes())
        || masked(pw.as_bytes())
        || placeholder(pw)
        || pw == user;
    (!refused).then_some((colon + 1, end))
}

/// A command's options for [`command_password`]: options whose argument is the password
/// (`-p` also glued: `-pS3cret`), whether only glued counts, options whose argument is
/// `user<sep>password`, and `sep`.
type Options = (&'static [&'static [u8]], bool, &'static [&'static [u8]], u8);

/// The [`Options`] of `command` (one of `PASSWORD_COMMANDS`).
fn command_options(command: &str) -> Options {
    let is = |name: &str| command.eq_ignore_ascii_case(name);
    if is("mysql") || is("mariadb") {
        (&[b"-p"], true, &[], b':')
    } else if is("curl") {
        (
            &[],
            false,
            &[b"-u", b"-U", b"--user", b"--proxy-user"],
            b':',
        )
    } else if REDIS_CLIENTS
        .iter()
        .any(|c| command.as_bytes().eq_ignore_ascii_case(c))
    {
        (&[b"-a", b"--pass"], false, &[], b':')
    } else if is("redis-benchmark") || is("valkey-benchmark") {
        (&[b"-a"], false, &[], b':')
    } else if is("sqlcmd") || is("zip") || is("unzip") {
        (&[b"-P"], false, &[], b':')
    } else if command == "ldappasswd" {
        // (The old password and the new one too.)
        (&[b"-w", b"-a", b"-s"], false, &[], b':')
    } else if command.starts_with("ldap") {
        (&[b"-w"], false, &[], b':')
    } else if command.starts_with("7z") {
        (&[b"-p"], true, &[], b':')
    } else if command.ends_with("rar") {
        (&[b"-p", b"-hp"], true, &[], b':')
    } else if is("keytool") {
        const KEYTOOL: [&[u8]; 6] = [
            b"-storepass",
            b"-keypass",
            b"-srcstorepass",
            b"-deststorepass",
            b"-srckeypass",
            b"-destkeypass",
        ];
        (&KEYTOOL, false, &[], b':')
    } else if is("openssl") {
        const OPENSSL: [&[u8]; 5] = [b"-passout", b"-passin", b"-pass", b"-password", b"-k"];
        (&OPENSSL, false, &[], b':')
    } else if is("smbclient") {
        (&[], false, &[b"-U", b"--user"], b'%')
    } else if is("ssh-keygen") {
        // The old passphrase and the new one (`-p -P old -N new`).
        (&[b"-P", b"-N"], false, &[], b':')
    } else if is("lftp") {
        (&[], false, &[b"-u", b"--user"], b',')
    } else {
        // mongo…, sshpass, a registry's login, cqlsh, cypher-shell, twine.
        (&[b"-p"], false, &[], b':')
    }
}

/// The letters that end a cluster of one-letter options with `command`'s password option
/// last: zip's `-P` (`-rP S3cret`), an LDAP tool's `-w` (`-xw S3cret`, `-ZZw …`),
/// ssh-keygen's `-N` and `-P` (`-qN S3cret`, `-pP old`).
fn cluster_last(command: &str) -> &'static [u8] {
    match command {
        "zip" | "unzip" => b"P",
        "ssh-keygen" => b"NP",
        c if c.starts_with("ldap") => b"w",
        _ => b"",
    }
}

/// An option's name as [`command_password`] reads it: from its `-` to a blank, an `=`, a
/// quote, a comma or a backslash.
fn option_name(rest: &[u8]) -> &[u8] {
    let name = rest
        .iter()
        .take_while(|&&c| {
            !matches!(
                c,
                b' ' | b'\t' | b'\n' | b'\r' | b'=' | b'"' | b'\'' | b',' | b'\\'
            )
        })
        .count();
    &rest[..name]
}

/// Whether `option` is one of a cluster of one-letter options ending with one of `last`.
fn cluster(option: &[u8], last: &[u8]) -> bool {
    option.len() > 2
        && option.last().is_some_and(|l| last.contains(l))
        && option[1..].iter().all(u8::is_ascii_alphabetic)
}

/// Where options start in `line` (a line as [`command_line`] reads it): each `-` after a
/// blank, a quote or a line break, as [`command_password`] reads them (not the `-` inside
/// a word: `ssh-keygen`, `x-y`).
fn options_in(line: &[u8]) -> impl Iterator<Item = usize> + '_ {
    memchr::memchr_iter(b'-', line)
        .filter(|&i| i > 0 && matches!(line[i - 1], b' ' | b'\t' | b'\n' | b'"' | b'\''))
}

/// Whether `line` (a line of `command`, as [`command_line`] reads it whole) may give a
/// password to [`command_password`]: false when no option in it is one of the command's
/// (whole, glued to its value or last of a cluster) — so the command fails (but `login`,
/// whose `.netrc` form is read apart: see `patterns::failing_chain`).
pub(super) fn may_give_password(line: &[u8], command: &str) -> bool {
    let (password_options, _, user_options, _) = command_options(command);
    let last = cluster_last(command);
    options_in(line).any(|i| {
        let option = option_name(&line[i..]);
        cluster(option, last)
            || password_options
                .iter()
                .chain(user_options)
                .any(|o| option.starts_with(o))
    })
}

/// The registries' tools whose `login` takes a password (see [`registry_cli_before`]).
pub(super) const REGISTRY_CLIS: [&str; 11] = [
    "docker", "podman", "registry", "nerdctl", "oras", "buildah", "skopeo", "helm", "oc", "az",
    "cf",
];

/// Whether a registry's tool (see [`REGISTRY_CLIS`]) is named before the `login` at `s`, on
/// its line within 64 bytes: a word of letters, digits, `.`, `/` and `-` (its path and
/// `.exe` left out) that is one of them. Read once through a byte-class table, each word
/// compared only where its first letter is a tool's (splitting the words cost ~2,000
/// instructions a `login` in a run of them).
pub(super) fn registry_cli_before(b: &[u8], s: usize) -> bool {
    // Per byte: 1 a word's (a letter, a digit, `.`, `-`), 2 a path's `/`, 3 a terminator.
    const CLASS: [u8; 256] = {
        let mut class = [0; 256];
        let mut c = 0;
        while c < 256 {
            let b = c as u8;
            class[c] = match b {
                b'/' => 2,
                b'\n' | b'|' | b';' | b'&' => 3,
                _ if b.is_ascii_alphanumeric() || b == b'.' || b == b'-' => 1,
                _ => 0,
            };
            c += 1;
        }
        class
    };
    const _: () = {
        let mut i = 0;
        while i < REGISTRY_CLIS.len() {
            let first = REGISTRY_CLIS[i].as_bytes()[0];
            assert!(matches!(
                first,
                b'd' | b'p' | b'r' | b'n' | b'o' | b'b' | b's' | b'h' | b'a' | b'c'
            ));
            i += 1;
        }
    };
    let window = &b[s.saturating_sub(64)..s];
    // (A word is compared only where its first letter is a tool's.)
    let tool = |word: &[u8]| {
        matches!(
            word[0].to_ascii_lowercase(),
            b'd' | b'p' | b'r' | b'n' | b'o' | b'b' | b's' | b'h' | b'a' | b'c'
        ) && {
            // (A Windows program's name in any case: `docker.EXE`, `Docker.Exe`.)
            let exe = word.len() > 4 && word[word.len() - 4..].eq_ignore_ascii_case(b".exe");
            let name = &word[..word.len() - usize::from(exe) * 4];
            (2..=8).contains(&name.len())
                && REGISTRY_CLIS.iter().any(|c| match exe {
                    true => c.as_bytes().eq_ignore_ascii_case(name),
                    false => c.as_bytes() == name,
                })
        }
    };
    // Each word's name: past its path's last `/`; a terminator forgets the words before it.
    let (mut name, mut found) = (0, false);
    for (i, &c) in window.iter().enumerate() {
        match CLASS[usize::from(c)] {
            1 => {}
            2 => name = i + 1,
            3 => (name, found) = (i + 1, false),
            _ => {
                found = found || (i > name && tool(&window[name..i]));
                name = i + 1;
            }
        }
    }
    found || (window.len() > name && tool(&window[name..]))
}

/// The password the command at `s` (one of `PASSWORD_COMMANDS`) is given on its line (see
/// [`command_end`]; an argument list too, at most 2 KiB, up to the next such command), by
/// the first option that carries one: MySQL's and MariaDB's clients glued to `-p`
/// (`-pS3cret`, `"-pS3cret"`; `-p S3cret` prompts, then names a database), `sshpass -p`
/// either way, a registry's `login … -p` (`docker login -u bob -p S3cret`, the registry's
/// tool named before `login` on its line; `docker run -p 8080:80` publishes a port), curl's
/// `-u`/`-U`/`--user`/`--proxy-user` `user:password`. A `-p` value must be a secret as an
/// option's is (see
/// [`argument`]) and no port (`--name mysql -p3306:3306`); a password after a user, as
/// [`user_password`] reads it.
pub(super) fn command_password(text: &str, s: usize, command: &str) -> Option<(usize, usize)> {
    // (A registry's `login` after no registry's tool: its line is not read.)
    if command.eq_ignore_ascii_case("login") && !registry_cli_before(text.as_bytes(), s) {
        return None;
    }
    // Up to the next such command (read once, not again from each of a run of them).
    command_password_on(
        text,
        s,
        command,
        command_line(text.as_bytes(), s, text.len()),
        true,
    )
}

/// [`command_password`] on the line [`command_line`] read for the name at `s` (for its
/// answer, the line that function reads: one that ended before the bytes it was read to).
/// `own`: whether the line is the command's own, not a later name's read as its (see
/// [`password_of_commands_before`]). (A registry's `login` is asked only after its tool's
/// name.)
pub(super) fn command_password_on(
    text: &str,
    s: usize,
    command: &str,
    (start, end, _): (usize, usize, bool),
    own: bool,
) -> Option<(usize, usize)> {
    let b = text.as_bytes();
    let is = |name: &str| command.eq_ignore_ascii_case(name);
    let (password_options, glued_only, user_options, sep) = command_options(command);
    let multi = is("keytool") || is("openssl") || is("ldappasswd") || is("ssh-keygen");
    let mut span = None;
    let line = &b[start..end];
    let from = 0;
    // After an option of the command's that gave no password (`-p$PW`), another counts
    // only outside a quoted string that opened before it (not `-e 'ALTER … -pK3y1'`, a
    // data argument `"-a Valu3"`; a quoted argument list's `"-w", "pw"` does): the quote
    // state, read once across the line.
    // (A quoted name's closing quote, `"ldapsearch", "-w"`, opens nothing.)
    let named_in_quotes =
        s > 0 && matches!(b[s - 1], b'"' | b'\'') && line.first() == Some(&b[s - 1]);
    let (mut gave_none, mut quote, mut read) = (false, None, usize::from(named_in_quotes));
    // The options, in order: each `-` after a blank, a quote or a line break.
    for i in options_in(&line[from..]).map(|i| from + i) {
        for &c in &line[read..i - 1] {
            quote = match quote {
                Some(q) if c == q => None,
                None if c == b'"' || c == b'\'' => Some(c),
                q => q,
            };
        }
        read = i - 1;
        let option = option_name(&line[i..]);
        let name = option.len();
        // (Right after a quote, the option is a quoted argument of its own only where the
        // quote closes right after it, `"-w", "pw"`, `"-pS3cret"` — not `"-a Valu3"`.)
        let quoted_alone = |q: u8| line.get(i + name) == Some(&q);
        let inside = match (quote, line[i - 1]) {
            (Some(_), _) => true,
            (None, q @ (b'"' | b'\'')) => !quoted_alone(q),
            _ => false,
        };
        if gave_none && inside {
            continue;
        }
        // zip's `-P` last of a cluster of one-letter options (`-rP S3cret`), an LDAP tool's
        // `-w` (`-xw S3cret`, `-ZZw …`), ssh-keygen's `-N` (`-qN S3cret`).
        let cluster = cluster(option, cluster_last(command));
        // (A port, `-p3306`, is no password where the option may be taken for the port's —
        // a MongoDB shell's, a registry login's `-p`, next to `docker run -p 27017:27017` —
        // but the other commands' options take no port: their password may be digits, `zip
        // -P 12345`, `ssh-keygen -N 54321`. Not on another command's line, `ssh-keygen …
        // mysql -P 3306`, found by an attack review — unless that line is plainly its, see
        // `password_of_commands_before`.)
        let no_port = |&(a, z): &(usize, usize)| {
            let value = &text[a..z];
            // (The MySQL and MariaDB clients' port is `-P`: after their `-p`, only a mapping,
            // `docker run --name mysql -p3306:3306`, is a port's.)
            let mysql = command.starts_with(['m', 'M']) && !command.starts_with("mongo");
            (own && port_free(command)) || !port(value) || (mysql && !value.contains(':'))
        };
        // A short option glued to its value (`-pS3cret`; rar's `-hpS3cret`).
        let glued = |o: &&&[u8]| {
            (o.len() == 2 || **o == b"-hp") && option.len() > o.len() && option.starts_with(o)
        };
        let found = if let Some(o) = password_options.iter().find(glued) {
            // (A port, `-p3306:3306`, is none.)
            argument(text, start + i + o.len()).filter(no_port)
        } else if password_options.contains(&option) || cluster {
            // (A MySQL client's `-p S3cret` prompts, then names a database.)
            // (No argument, `-a -`: another such option may give one.)
            let Some((at, separated)) = option_argument(b, start + i + name, end) else {
                gave_none = true;
                continue;
            };
            // (A MySQL client's `-p db` prompts: a later `-pS3cret` gives one, `mysql -p db
            // -pS3cret`.)
            if separated && glued_only {
                gave_none = true;
                continue;
            }
            // openssl's `-pass…` names where the password comes from: `pass:` gives it,
            // `env:`, `file:`, `fd:`, `stdin` do not (another option may).
            match option.starts_with(b"-pass") {
                true if b[at..end].starts_with(b"pass:") => pass_argument(text, at),
                true => continue,
                false => argument(text, at).filter(no_port),
            }
        } else {
            None
        };
        if cluster || password_options.iter().any(|o| glued(&o) || *o == option) {
            // The first such option that gives a password decides (one that gives none —
            // `-w $PW`, `-w -` — may be repeated: a tool takes the last); but keytool and
            // openssl take two (`-storepass … -keypass …`, `-passin … -passout …`): from the
            // first to the last, so neither is left.
            // (sshpass's `-p` is given once: a later `-p` is its wrapped command's, `ssh -p
            // 2222`.)
            if !multi {
                if found.is_some() || is("sshpass") {
                    return found;
                }
                gave_none = true;
                continue;
            }
            if let Some((_, z)) = found {
                span = Some(span.map_or_else(|| found.unwrap_or_default(), |(a, _)| (a, z)));
            }
            continue;
        }
        // A user and a password, glued to a short option or after it.
        let at = match user_options.iter().find(glued) {
            Some(_) => start + i + 2,
            None if user_options.contains(&option) => {
                match option_argument(b, start + i + name, end) {
                    Some((at, _)) => at,
                    None => continue,
                }
            }
            None => continue,
        };
        // (The same: `curl -u "$CREDS" -u bob:S3cret`.)
        if let Some(found) = user_password(text, at, sep) {
            return Some(found);
        }
        gave_none = true;
    }
    span
}

/// The longest value a named field's secret is read to.
const NAMED_VALUE_MAX: usize = 256;

/// A password's own words, as prose writes them in English (and French's `mdp`, chat's
/// `pw`): see [`password_word`].
const PASSWORD_WORDS: [&str; 8] = [
    "password",
    "passwd",
    "pass",
    "pwd",
    "passcode",
    "passphrase",
    "mdp",
    "pw",
];

/// Words that start a phrase between a password's word and its verb that leaves the value
/// the password's (`Password for the NAS: …`, `Passwort für das WLAN ist …`, `la contraseña
/// del wifi es …`): see [`prose_secret`].
const PREPOSITIONS: [&[u8]; 24] = [
    b"for",
    b"of",
    b"on",
    b"at",
    b"to",
    "für".as_bytes(),
    b"fur",
    b"vom",
    b"zum",
    b"zur",
    b"de",
    b"del",
    b"do",
    b"da",
    b"du",
    b"des",
    b"pour",
    b"per",
    b"di",
    b"della",
    b"dla",
    "för".as_bytes(),
    b"til",
    b"till",
];

/// Whether `name` is a password's own word, in English or another language (`Password`,
/// `pwd`, `Passwort`, `mot de passe`, `密码`; not a field's or a variable's, `DB_PASSWORD`,
/// `PASSWORD`, nor a token's or a key's, nor `pass`, a noun as often, `the pass is
/// mem2reg`, `boarding pass`: reviews 52, 53): a value a person made may follow it (see
/// [`person_made`]).
fn password_word(name: &[u8]) -> bool {
    own_password_word(prose_password_word(name), name)
}

/// Whether `name`, in capitals, is a password's own word shouted (`PASSWORD`, `PASSORDET`;
/// not `PASS`, a noun as often): its verb in capitals too tells it from a variable's name
/// (see [`prose_secret`]).
fn shouted_password_word(name: &[u8]) -> bool {
    let word = PASSWORD_WORDS
        .into_iter()
        .find(|w| name.eq_ignore_ascii_case(w.as_bytes()));
    own_password_word(word, name)
}

/// Whether `name` is a password's own word, `word` the one of [`PASSWORD_WORDS`] it is (as
/// [`password_word`] or [`shouted_password_word`] reads it): not `pass`, a noun as often —
/// or a name of another language's, whole.
fn own_password_word(word: Option<&str>, name: &[u8]) -> bool {
    word.is_some_and(|w| w != "pass")
        || super::patterns::local_name_at(name).is_some_and(|n| n.len() == name.len())
}

/// Other languages' verbs after a password's name (see [`prose_secret`]'s `OTHER_VERBS`)
/// in capitals, as a name shouted is followed (`PASSORDET ER …`, `PASSWORT IST …`): each
/// compared as it is, not made capitals at each word (`PASSORDET ER ` over and over read
/// 6.8x as slowly as the bench text so, review 67).
const SHOUTED_OTHER_VERBS: [&[u8]; 14] = [
    b"IST",
    b"LAUTET",
    b"ES",
    b"EST",
    "ÄR".as_bytes(),
    b"ER",
    b"JEST",
    b"ADALAH",
    b"SIND",
    b"C'EST",
    b"WAR",
    b"ERA",
    "ÉTAIT".as_bytes(),
    b"BRZMI",
];

/// Which of [`PASSWORD_WORDS`] `name` is, written as prose writes it (a small letter after
/// its first), not as a variable's name (`PASSWORD`).
fn prose_password_word(name: &[u8]) -> Option<&'static str> {
    if !name.get(1..)?.iter().any(u8::is_ascii_lowercase) {
        return None;
    }
    PASSWORD_WORDS
        .into_iter()
        .find(|w| name.eq_ignore_ascii_case(w.as_bytes()))
}

/// The symbols a password holds, as a field's value is judged (see [`secret_value`]).
const fn password_symbol(c: u8) -> bool {
    matches!(
        c,
        b'@' | b'#' | b'$' | b'^' | b'&' | b'*' | b'+' | b'=' | b'!' | b'~'
    )
}

/// How long a value a person made is (see [`person_made`]), asked first where it is cheap.
const PERSON_LEN: std::ops::RangeInclusive<usize> = 6..=24;

/// Whether a value that no machine made (see [`machine_made`]), after a password's own word
/// (see [`password_word`]), is one a person made: `hunter2`, `Sunflower2024!`, `P@ss1234`,
/// `ABC123def`, `Hunter2Pass` — 6 to 24 bytes (not `ab12`, `v1.2`), a letter in it or
/// digits alone (`12345678`; not a date, `2024-01-05`), of two parts at most (not a
/// model's name, `Llama-3.1-8B`); not a number and its unit (`80bits`, `15min`,
/// `12-chars`, `8+chars`, review 52); no long word set apart by its capital after a digit
/// (a name, `Qwen2Tokenizer`, `Llama3Instruct`); no part a technique's name, which prose
/// says a password is hashed, encoded or protected with (`SHA-256`, `bcrypt12`,
/// `WPA2-PSK`, `argon2id`, `OAuth2`, `2FA`, `ROT13`, `SOC2`), a document's numbered part
/// (`Level3`, `Step2`), a product's version (`Windows11`, `Python3`), a month's year or a
/// version (`Jan2025`, `v2`); no participle after a part (`Base64-encoded`,
/// `FIDO2-backed`); not a date of digits (`20240105`) nor a ticket's key (`SEC-1042`, see
/// [`ticket`]). It is judged as a field's value too (see [`secret_value`]).
fn person_made(v: &[u8]) -> bool {
    // (Judged without its last `!` or `?`: `90days!`, `RHEL9!`, review 54.)
    let v = v.strip_suffix(b"!").or(v.strip_suffix(b"?")).unwrap_or(v);
    // (Letters a technique's name starts with, a version's digits after them — or a
    // document's numbered part, `Level3`, `Step2`; a product's version, `Windows11`,
    // `Python3`, `gpt-4o`; a month's year, `Jan2025`; a version, `v2`.)
    const TECHNIQUES: [&[u8]; 107] = [
        b"sha",
        b"md",
        b"aes",
        b"rsa",
        b"des",
        b"hs",
        b"rs",
        b"es",
        b"ps",
        b"wpa",
        b"wep",
        b"utf",
        b"iso",
        b"base",
        b"pkcs",
        b"tls",
        b"ssl",
        b"http",
        b"bcrypt",
        b"scrypt",
        b"yescrypt",
        b"argon",
        b"pbkdf",
        b"hmac",
        b"oauth",
        b"saml",
        b"ntlm",
        b"ntlmv",
        b"crc",
        b"ed",
        b"blake",
        b"rot",
        b"fido",
        b"ldap",
        b"soc",
        b"xor",
        b"chacha",
        b"sasl",
        b"rfc",
        b"sp",
        b"keccak",
        b"ripemd",
        b"curve",
        b"poly",
        b"kerberos",
        b"peapv",
        b"owasp",
        b"latin",
        b"gbk",
        b"x",
        b"level",
        b"tier",
        b"step",
        b"stage",
        b"phase",
        b"page",
        b"fig",
        b"figure",
        b"table",
        b"section",
        b"sheet",
        b"tab",
        b"build",
        b"windows",
        b"server",
        b"office",
        b"excel",
        b"pixel",
        b"iphone",
        b"galaxy",
        b"postgres",
        b"mysql",
        b"mariadb",
        b"centos",
        b"rhel",
        b"aarch",
        b"ldapv",
        b"log",
        b"win",
        b"macos",
        b"ios",
        b"android",
        b"ubuntu",
        b"debian",
        b"fedora",
        b"python",
        b"java",
        b"node",
        b"php",
        b"gpt",
        b"claude",
        b"llama",
        b"gemini",
        b"v",
        b"jan",
        b"feb",
        b"mar",
        b"apr",
        b"may",
        b"jun",
        b"jul",
        b"aug",
        b"sep",
        b"sept",
        b"oct",
        b"nov",
        b"dec",
    ];
    // (Techniques' names of a digit first, and words a technique's name takes after it.)
    const WORDS: [&[u8]; 11] = [
        b"2fa",
        b"3des",
        b"x509",
        b"based",
        b"compatible",
        b"kompatibel",
        b"compliant",
        b"konform",
        b"only",
        b"bit",
        b"bits",
    ];
    let digits = v.iter().filter(|c| c.is_ascii_digit()).count();
    let parts = || v.split(|c| matches!(c, b'-' | b'.' | b'_' | b'/'));
    // (A digit or a symbol in it, as a field's value needs (see [`secret_value`]): asked
    // first, so that a run of words fails at once, `salasana on salasana on …`.)
    if !PERSON_LEN.contains(&v.len())
        || (digits == 0 && !v.iter().any(|&c| password_symbol(c)))
        || parts().count() > 2
        || !(v.iter().any(u8::is_ascii_alphabetic) || digits == v.len())
    {
        return false;
    }
    // (A number and its unit: digits, then letters alone after a `-` or a `+`, or none.)
    if unit_after_number(v, false)
        .is_some_and(|unit| !unit.is_empty() && unit.iter().all(u8::is_ascii_alphabetic))
    {
        return false;
    }
    // (A date of digits alone, `20240105`, `202401`; a ticket's key, `SEC-1042`,
    // `INC0012345`.)
    let year = |d: &[u8]| matches!(d, [b'1', b'9', ..] | [b'2', b'0', ..]);
    let month = |d: &[u8]| matches!(d, [b'0', b'1'..=b'9'] | [b'1', b'0'..=b'2']);
    if (digits == v.len() && matches!(v.len(), 6 | 8) && year(v) && month(&v[4..6])) || ticket(v) {
        return false;
    }
    // (`2Tokenizer`, `3Instruct`: a capital and six small letters or more after a digit.)
    let named = v.windows(8).any(|w| {
        w[0].is_ascii_digit()
            && w[1].is_ascii_uppercase()
            && w[2..].iter().all(u8::is_ascii_lowercase)
    });
    // (A participle after the value's first part: `-encoded`, `-backed`, `-hashed`.)
    let participle = parts()
        .skip(1)
        .any(|p| p.len() >= 4 && p.ends_with(b"ed") && p.iter().all(u8::is_ascii_lowercase));
    !named
        && !participle
        && !v.split(|c| !c.is_ascii_alphanumeric()).any(|part| {
            let letters = part.iter().take_while(|c| c.is_ascii_alphabetic()).count();
            let (name, version) = part.split_at(letters);
            // (Its version right after it, `HS256`, `argon2id`; digits alone after a name
            // of one or two letters, `v2`, `x86`, not `v3ryS3cure`; three letters alone
            // too, `AES`.)
            let versioned = match letters {
                0 => false,
                1 | 2 => !version.is_empty() && version.iter().all(u8::is_ascii_digit),
                _ => version.first().is_none_or(u8::is_ascii_digit),
            };
            (versioned && TECHNIQUES.iter().any(|w| name.eq_ignore_ascii_case(w)))
                || WORDS.iter().any(|w| part.eq_ignore_ascii_case(w))
        })
}

/// Where a bare value of prose read from `a` up to `z` ends, its sentence's punctuation
/// after it left out: `.`, `,`, `;`, `:`, and a `)` no `(` in it opened (`(… is
/// Xk9…)`; not `Pass(word)1`'s, review 54).
fn sentence_end(b: &[u8], a: usize, mut z: usize) -> usize {
    // (The `)`s no `(` opened, counted at the first `)` met.)
    let mut unopened = None;
    while z > a {
        match b[z - 1] {
            b'.' | b',' | b';' | b':' => {}
            b')' => {
                let left = unopened.get_or_insert_with(|| {
                    let count = |c: u8| b[a..z].iter().filter(|&&d| d == c).count();
                    count(b')').saturating_sub(count(b'('))
                });
                if *left == 0 {
                    break;
                }
                *left -= 1;
            }
            _ => break,
        }
        z -= 1;
    }
    z
}

/// Whether `v` is a ticket's or an issue's key: capitals, then digits after a `-` or none
/// (`SEC-1042`, `JIRA-4521`, `INC0012345`, `PR-12`).
fn ticket(v: &[u8]) -> bool {
    let caps = v.iter().take_while(|c| c.is_ascii_uppercase()).count();
    let rest = v[caps..].strip_prefix(b"-").unwrap_or(&v[caps..]);
    caps >= 2 && !rest.is_empty() && rest.iter().all(u8::is_ascii_digit)
}

/// Whether the bare value that ends at `z` ends its sentence or its clause (see
/// [`prose_secret`]): the text's or its line's end; sentence punctuation (`.`, `,`, `;`,
/// `!`, `?`, `)`, a closing quote or emphasis) then white space, the end or a script
/// written without blanks (`…,谢谢`, as the scan reads `，`); an ideographic one (`、`,
/// `。`), or a sentence's ending glued on (`です`, `입니다`, `吧`); or, after a blank, a
/// dash or a remark (`… — please change it`, `… (case-sensitive)`), an emoticon or an
/// emoji (`:)`, `👍`), a script written without blanks (`… 谢谢`) or a word that leaves
/// the value whole (`and`, `btw`, `thx`, `lol`, `merci`: review 52) — not a word that
/// goes on (`Passwort ist ABC123def ungültig`, `the password is OAuth2 based`).
fn ends_sentence(b: &[u8], z: usize) -> bool {
    // (Sentences' endings glued to a value in scripts written without blanks.)
    const ENDINGS: [&str; 18] = [
        "。",
        "、",
        "です",
        "でした",
        "だよ",
        "よ",
        "ね",
        "입니다",
        "이에요",
        "예요",
        "요",
        "이야",
        "야",
        "哦",
        "吧",
        "了",
        "啊",
        "呢",
    ];
    // (Words after a value that leave it whole, in chat.)
    const AFTER: [&[u8]; 38] = [
        b"and",
        b"but",
        b"btw",
        b"thx",
        b"thanks",
        b"lol",
        b"pls",
        b"please",
        b"so",
        b"ok",
        b"okay",
        b"fyi",
        b"if",
        b"now",
        b"then",
        b"y",
        b"et",
        b"und",
        b"e",
        b"merci",
        b"danke",
        b"bitte",
        b"grazie",
        b"gracias",
        b"jaja",
        b"for",
        b"on",
        b"too",
        b"again",
        b"yesterday",
        b"today",
        b"tomorrow",
        b"as",
        b"which",
        b"with",
        b"can",
        b"i",
        b"you",
    ];
    // (The character at `i`, if one starts there.)
    let char_at = |i: usize| {
        let r = &b[i..b.len().min(i + 4)];
        match std::str::from_utf8(r) {
            Ok(s) => s.chars().next(),
            Err(e) => std::str::from_utf8(&r[..e.valid_up_to()])
                .ok()?
                .chars()
                .next(),
        }
    };
    let rest = &b[z..];
    let punct = rest
        .iter()
        .take_while(|c| {
            matches!(
                c,
                b'.' | b',' | b';' | b':' | b'!' | b'?' | b')' | b']' | b'"' | b'\'' | b'*' | b'`'
            )
        })
        .count();
    // (Or the value's own last `!` or `?`: `Welcome1! Please change it.`)
    let closed = punct > 0 || (z > 0 && matches!(b[z - 1], b'!' | b'?'));
    match rest[punct..].first() {
        None | Some(b'\n' | b'\r') => true,
        Some(b' ' | b'\t') if closed => true,
        Some(b' ' | b'\t') => {
            let next = rest[punct..].trim_ascii_start();
            let at = b.len() - next.len();
            let word = next.iter().take_while(|c| c.is_ascii_alphabetic()).count();
            next.is_empty()
                || [
                    "—", "–", "- ", "(", "\n", "\r", ":)", ":-)", ";)", ":D", ":P", "^^",
                ]
                .iter()
                .any(|d| next.starts_with(d.as_bytes()))
                || char_at(at)
                    .is_some_and(|c| !c.is_ascii() && (unspaced_script(c) || !c.is_alphanumeric()))
                || (word > 0
                    && !next.get(word).is_some_and(u8::is_ascii_alphanumeric)
                    && AFTER.iter().any(|w| next[..word].eq_ignore_ascii_case(w)))
        }
        Some(_) if punct > 0 => char_at(z + punct).is_some_and(unspaced_script),
        Some(_) => ENDINGS.iter().any(|e| rest.starts_with(e.as_bytes())),
    }
}

/// A value on the line after its label's colon (`name` the label's name, `at` its end):
/// `Here is the password:⏎⏎```⏎…⏎```` (the fenced block's first line), `**Password:**⏎`…``,
/// `Your API key:⏎…` — or after prose's verb that ends its line, where `announced` (`The
/// wifi password is⏎…`). `None` where the name is not followed so (a colon, unless
/// `announced`, emphasis and blanks to its line's end; up to one blank line); else
/// whether a secret stands there: a fenced line, or a code span or a quoted string alone
/// on its line, judged as a field's value is (see [`secret_value`]), a bare word alone on
/// its line also as made by a machine (see [`machine_made`]) or, where `person()` (after a
/// password's own word, no other noun between), by a person (see [`person_made`]:
/// `Password:⏎hunter2`) — its sentence's punctuation left out; a line of prose, a YAML
/// mapping's next key (`password:⏎  secretKeyRef:`) or a list (`- a`) holds none.
fn next_line_value(
    text: &str,
    name: &[u8],
    at: usize,
    announced: bool,
    person: impl FnOnce() -> bool,
) -> Option<Option<(usize, usize)>> {
    let b = text.as_bytes();
    let blanks = |mut i: usize| {
        while matches!(b.get(i), Some(b' ' | b'\t')) {
            i += 1;
        }
        i
    };
    // (The label's rest: its colon, emphasis around it, blanks, to its line's end.)
    let rest = b[at..]
        .iter()
        .take(16)
        .take_while(|c| matches!(c, b':' | b'*' | b'_' | b'`' | b' ' | b'\t' | b'\r'))
        .count();
    if b.get(at + rest) != Some(&b'\n') || !(announced || b[at..at + rest].contains(&b':')) {
        return None;
    }
    let mut i = blanks(at + rest + 1);
    // (One blank line.)
    if b.get(i) == Some(&b'\r') {
        i += 1;
    }
    if b.get(i) == Some(&b'\n') {
        i = blanks(i + 1);
    }
    let fenced = b[i..].starts_with(b"```");
    if fenced {
        let tag = b[i + 3..]
            .iter()
            .take(16)
            .take_while(|c| c.is_ascii_alphabetic() || matches!(c, b' ' | b'\t' | b'\r'))
            .count();
        if b.get(i + 3 + tag) != Some(&b'\n') {
            return Some(None);
        }
        i = blanks(i + 3 + tag + 1);
    }
    let first = i;
    let line_end = first
        + memchr::memchr2(
            b'\n',
            b'\r',
            &b[first..b.len().min(first + NAMED_VALUE_MAX)],
        )
        .unwrap_or(b.len().min(first + NAMED_VALUE_MAX) - first);
    let line = &b[first..line_end];
    let (a, z, quoted) = match (fenced, line.first()) {
        (true, Some(_)) => (first, first + line.trim_ascii_end().len(), true),
        (false, Some(&q @ (b'`' | b'"' | b'\''))) => {
            let close = first + 1 + memchr::memchr(q, &line[1..])?;
            // (Alone on its line, but for its sentence's punctuation: `"Xk9…".`, review
            // 54.)
            let after = b[close + 1..line_end].trim_ascii();
            if !after.iter().all(|c| matches!(c, b'.' | b',' | b';' | b'!')) {
                return Some(None);
            }
            (first + 1, close, true)
        }
        (false, Some(c)) if c.is_ascii_alphanumeric() => {
            // (A line of words is prose, no value: asked before it is judged.)
            let line = line.trim_ascii_end();
            if line.iter().any(|&c| c == b' ' || c == b'\t') {
                return Some(None);
            }
            // (Its sentence's punctuation left out, and its ending glued on in a script
            // written without blanks, as prose's: `hunter22.`, `Kesä2024です`, review 53.)
            let z = first + unspaced_cut(line);
            (first, sentence_end(b, first, z), false)
        }
        _ => return Some(None),
    };
    let Some(v) = text.get(a..z) else {
        return Some(None);
    };
    // (Where `person()`, a value a person made too: `Password:⏎hunter2`.)
    let secret = !v.is_empty()
        && name_holds(name, v, quoted, b.get(z).copied(), false)
        && (quoted || machine_made(v.as_bytes()) || (person_made(v.as_bytes()) && person()));
    Some(secret.then_some((a, z)))
}

/// Whether a verb that uses a password stands before its name at `key`, an article
/// between them at most (`log in with password …`, `use the password …`, `I tried your
/// password …`; see [`prose_secret`]).
fn used_before(b: &[u8], key: usize) -> bool {
    const USES: [&[u8]; 12] = [
        b"use", b"used", b"using", b"with", b"enter", b"entered", b"try", b"tried", b"type",
        b"typed", b"input", b"via",
    ];
    if word_before(b, key, &USES) {
        return true;
    }
    // (After an account given first and `and`, the verb among the six words before it:
    // `log in with username admin and password hunter22`, review 67.)
    let Some(and) = key.checked_sub(4).filter(|&i| {
        b[i..key].eq_ignore_ascii_case(b"and ") && i.checked_sub(1).is_some_and(|k| b[k] == b' ')
    }) else {
        return false;
    };
    // (Each word read back 32 bytes at most: a run of `and password` after a long word
    // reads no further.)
    let mut end = and - 1;
    for _ in 0..6 {
        if word_before(b, end + 1, &USES) {
            return true;
        }
        let from = end.saturating_sub(32);
        match b[from..end].iter().rposition(|&c| c == b' ') {
            Some(k) => end = from + k,
            None => return false,
        }
    }
    false
}

/// Whether one of `words` stands before a name at `key`, an article and two words for
/// what the secret opens or what kind it is between them at most (`use the password`,
/// `enter your Wi-Fi password`, `use the office wifi password`, `MD5 of the secret`; see
/// [`used_before`], [`prose_secret`]).
fn word_before(b: &[u8], key: usize, words: &[&[u8]]) -> bool {
    // (Not `a`, `an`: a password of a kind, `use a password Manager2000`, review 67.)
    const ARTICLES: [&[u8]; 6] = [b"the", b"your", b"our", b"my", b"this", b"its"];
    const OPENS: [&[u8]; 20] = [
        b"wifi",
        b"wi-fi",
        b"admin",
        b"root",
        b"guest",
        b"account",
        b"router",
        b"network",
        b"database",
        b"server",
        b"login",
        b"email",
        b"e-mail",
        b"new",
        b"default",
        b"old",
        b"temporary",
        b"temp",
        b"home",
        b"office",
    ];
    let (mut end, mut article, mut opens) = (key, false, 0);
    for _ in 0..4 {
        if end == 0 || b[end - 1] != b' ' {
            return false;
        }
        end -= 1;
        let len = b[..end]
            .iter()
            .rev()
            .take(9)
            .take_while(|c| c.is_ascii_alphabetic() || **c == b'-')
            .count();
        let word = &b[end - len..end];
        if end - len > 0 && b[end - len - 1].is_ascii_alphanumeric() {
            return false;
        }
        let is = |list: &[&[u8]]| list.iter().any(|u| word.eq_ignore_ascii_case(u));
        if is(words) {
            return true;
        }
        // (Read back: what it opens next to the name, the article before it.)
        match () {
            _ if !article && is(&ARTICLES) => article = true,
            _ if !article && opens < 2 && is(&OPENS) => opens += 1,
            _ => return false,
        }
        end -= len;
    }
    false
}

/// Whether `v` (quoted or not, `next` the byte after it) is a secret's value under the
/// name `name` where only the words around tell (see [`next_line_value`] and
/// [`prose_secret`]): a field's value (see [`secret_value`]), not too short for a token,
/// nor under a name that holds none — and, where `machine`, one made by a machine (see
/// [`machine_made`]).
fn name_holds(name: &[u8], v: &str, quoted: bool, next: Option<u8>, machine: bool) -> bool {
    secret_value(v, quoted, next)
        && (!machine || machine_made(v.as_bytes()))
        && !short_for_a_token(name, v)
        && !no_secret_name(name, v)
}

/// A secret that prose gives after its name (`name`), the words after it from `at` on
/// (after a blank): `the password is Xk9vQ2mZp4Lw`, `Your new password is: `…``, `set
/// DB_PASSWORD to …`, `the API key for staging is …`, `the password was changed to "…"`,
/// `Password – …`, `use password `…``. At most six other words between the name and the
/// verb (`is`, `are`, `was`, `were`, `be`, `to`, or a word and its colon: `generated:`),
/// a word's comma or a remark in parentheses among them — articles (`the`, `your`) not
/// counted — and any of the words that only lead to it (`has been reset`, `is now`, `will
/// be`); 96 bytes at most; after a verb's colon, the value may stand on the next line (see
/// [`next_line_value`]). Other languages' verbs too (`mein Passwort ist …`, `la password
/// è …`), where a value follows them; Chinese's, Japanese's and Korean's particle glued to
/// the name (`密码是…`, `パスワードは…`, `비밀번호는 …`). Right after the name, a value
/// quoted or a code span — or, after a password's word and one blank, a bare one made by a
/// machine with two digits or more, as chat gives one (`wifi password Xk9…`), not on a
/// command's line.
///
/// The value — quoted, a code span, emphasised, or bare (from a letter or a digit to a
/// blank, a quote or a bracket, its sentence's `.`, `,`, `;`, `:` or `)` after it left
/// out) — is judged as a field's is (see [`secret_value`]) and must look made by a machine
/// (see [`machine_made`]) or be a key in hex or base32 (see [`hex_key`], [`base32_key`];
/// no other noun between the name and it): prose names hashes, versions, models, types
/// and settings after
/// the same verbs (`the token is HS256-signed`, `the token is Qwen2Tokenizer`, `rename the
/// secret to prod-db-creds-2024`). After a password's own word (see [`password_word`]) and
/// a verb, a colon, a dash, a particle, a tab or a `|`, one a person made is one too (see
/// [`person_made`]: `my password is hunter2`), quoted or where it ends its sentence (see
/// [`ends_sentence`]); so is one bare right after the name where a verb that uses it stands
/// before the name, an article and what the password opens between (`log in with password
/// hunter22 …`, `use the office wifi password …`, see [`used_before`]), and after a name
/// shouted with its verb (`MY PASSWORD IS hunter22`, `USE PASSWORD …`, see
/// [`shouted_password_word`]).
/// The name is a word of its own or a field's last part
/// (`DB_PASSWORD`, `adminPassword`; not `chpasswd`), and may close its emphasis or code
/// span or take a comma (see [`prose_mark`]). Credentials' account and password set apart
/// by a slash are read as a field's (`the credentials are admin / …`, a list of them too:
/// see [`password_apart`], [`more_pairs`]).
fn prose_secret(text: &str, key: usize, name: usize, at: usize) -> Option<(usize, usize)> {
    const VERBS: [&[u8]; 10] = [
        b"is",
        b"are",
        b"was",
        b"were",
        b"be",
        b"to",
        b"it's",
        b"that's",
        "it’s".as_bytes(),
        "that’s".as_bytes(),
    ];
    // (And other languages' `is`, after their names or ours, as their speakers write ours:
    // `mein Passwort ist …`, `la password è …`, `mi contraseña es …` — German's, Spanish's,
    // French's, Portuguese's, Italian's, Swedish's, Danish's and Norwegian's, Polish's,
    // Indonesian's, Vietnamese's; Dutch's is English's; and their past, `war`, `era`,
    // `était` (not Swedish's `var`, code's word), and German's `heißt`, Polish's `brzmi`.
    // In small letters only (or in capitals after a name in capitals, `PASSORDET ER …`),
    // and only where a value follows (see [`value_follows`]): else
    // a word, as before — `Das
    // Passwort ist folgendes: …`, `the password for the ES cluster is …`, `the token for
    // jest is …` (review 49). Finnish's `on` and Vietnamese's `la` without its accent only
    // after another language's name.)
    const OTHER_VERBS: [&[u8]; 19] = [
        b"ist",
        b"lautet",
        b"es",
        b"est",
        "é".as_bytes(),
        "è".as_bytes(),
        "är".as_bytes(),
        b"er",
        b"jest",
        b"adalah",
        "là".as_bytes(),
        b"sind",
        b"c'est",
        "c’est".as_bytes(),
        b"war",
        b"era",
        "était".as_bytes(),
        "heißt".as_bytes(),
        b"brzmi",
    ];
    // (Other languages' `now`, `simply` after their verb: `Passwort ist jetzt …`.)
    const OTHER_LEADING: [&[u8]; 10] = [
        b"jetzt",
        b"nun",
        b"einfach",
        b"ahora",
        b"maintenant",
        b"agora",
        b"adesso",
        b"ora",
        b"nu",
        b"teraz",
    ];
    const LEADING: [&[u8]; 16] = [
        b"has", b"have", b"had", b"been", b"will", b"would", b"should", b"must", b"now", b"still",
        b"just", b"set", b"changed", b"reset", b"updated", b"rotated",
    ];
    let b = text.as_bytes();
    // (A name in a script past ASCII is a word of its own after ASCII glued to it, as its
    // language writes it: `wifi密码是…`, a value before it, `…Xk9密码是…`, review 51.)
    let key = match b[name].is_ascii() {
        true => key,
        false => name,
    };
    let local = super::patterns::local_name_at(&b[name..at]).is_some();
    // (A password's word of prose's, `password`, `Password`, `pass`: not a field's,
    // `API_KEY`, `auth-pass`, nor a token's, whose prose names many things, `next token
    // Gpt4oMini24`, review 51.)
    let word_of_prose = || name == key && prose_password_word(&b[name..at]).is_some();
    // (The name a word of its own, or its last part: `DB_PASSWORD`, `adminPassword` — not
    // a command's, `chpasswd`.)
    if name > key
        && !(matches!(b[name - 1], b'_' | b'-' | b'.')
            || (b[name - 1].is_ascii_lowercase() && b[name].is_ascii_uppercase()))
    {
        return None;
    }
    let mark = prose_mark(b, key, name, at);
    let name = &b[key..at];
    let at = at + mark;
    let limit = b.len().min(at + 96);
    let blanks = |mut i: usize| {
        while i < limit && matches!(b[i], b' ' | b'\t') {
            i += 1;
        }
        i
    };
    // (Chinese's, Japanese's and Korean's particle glued to the name, `密码是…`, `パスワードは
    // …`: the value after it, past a colon and blanks.)
    let particle = super::patterns::particle_at(&b[at..]).map(|len| {
        let j = blanks(at + len);
        blanks(j + usize::from(b.get(j) == Some(&b':')))
    });
    let first = blanks(at);
    if first == at && particle.is_none() {
        return None;
    }
    let mut i = first;
    let mut words = 0;
    // (A label at its line's start, tabs and its value, as tools print a key and its value:
    // `Password⇥Xk9vQ2mZp4Lw`.)
    let line_start = starts_line(b, key);
    let tabbed = b[at..first].iter().all(|&c| c == b'\t') && line_start;
    // (Or a database client's record, the name padded with blanks, a `|` and the value:
    // `password | Xk9vQ2mZp4Lw`, as psql's expanded display prints one — the value alone
    // after it on its line.)
    let piped = line_start
        && b[at..first].iter().all(|&c| c == b' ')
        && b.get(first) == Some(&b'|')
        && b.get(first + 1) == Some(&b' ');
    // (The value follows a verb, a word's colon or a dash; or stands right after the name,
    // quoted or a code span, or tabbed — or bare, as chat gives one, see below. Only one
    // that a verb, a colon, a dash, a particle, a tab or a `|` announces may be one a
    // person made, see below.)
    let mut announced = true;
    // (Nor where another noun stands between the name and it, `Password lockout: 15min`,
    // `the password list is rockyou2024` — only a phrase that starts with a preposition,
    // `Password for the NAS: …`, `Passwort für das WLAN ist …`: review 52.)
    let mut plain = true;
    const ARTICLES: [&[u8]; 8] = [b"the", b"a", b"an", b"your", b"our", b"my", b"this", b"its"];
    // (Whether the value follows `to`: see `set_near` below.)
    let mut by_to = false;
    // (Whether the value stands bare right after the name, a verb that uses it before the
    // name: see below.)
    let mut by_use = false;
    // (Whether a person's value may stand after the name, its words read so far: the
    // name asked once, and only of a value no machine made.)
    let own_word = std::cell::OnceCell::new();
    // (Or the name shouted, in capitals, and its verb too: `MY PASSWORD IS hunter22`,
    // `PASSORDET ER …` — not a variable's, `DB_PASSWORD is …`, `PASSWORD is …`.)
    let capitals = name.iter().all(|c| c.is_ascii_uppercase() || !c.is_ascii());
    let shouted = std::cell::Cell::new(false);
    let shouts = |word: &[u8]| {
        capitals
            && word.len() >= 2
            && !word.iter().any(u8::is_ascii_lowercase)
            && word.iter().any(u8::is_ascii_uppercase)
    };
    let person = |plain: bool| {
        plain
            && (*own_word.get_or_init(|| password_word(name))
                || (shouted.get() && shouted_password_word(name)))
    };
    // (The name again as the value, a word of its own, is its own candidate: a run,
    // `password is password is …`, is not read on from each — but a value that starts
    // with the name's letters is one, `the token is token-Xk9…`, review 49.)
    // (Only before white space: `pass@Xk9…`, `pwd!Xk9…` are values, review 50.)
    let again = |j: usize| {
        b[j..].starts_with(name) && b.get(j + name.len()).is_none_or(u8::is_ascii_whitespace)
    };
    let value = loop {
        if let Some(p) = particle {
            break p;
        }
        if tabbed {
            break first;
        }
        if piped {
            break blanks(first + 1);
        }
        // (Not past the bound: a word's comma may stand right on it.)
        let c = *b[..limit].get(i)?;
        if matches!(c, b'`' | b'"' | b'\'') {
            // A value right after the name (or after a verb, read below).
            announced = false;
            break (i == first).then_some(i)?;
        }
        // (A remark in parentheses between, a word: `your API key (keep it safe) is …`.)
        if c == b'(' {
            let close = i + memchr::memchr(b')', &b[i..limit])?;
            // (Or the value itself, quoted in them right after the name: `the password
            // (`…`) works`.)
            let inside = &b[i + 1..close];
            let inside = inside.strip_prefix(b"\\").unwrap_or(inside);
            if i == first
                && let [q @ (b'`' | b'"' | b'\''), .., last] = inside
                && inside.len() > 2
                && last == q
            {
                announced = false;
                break i + 1;
            }
            words += 1;
            if words > 6 || !matches!(b.get(close + 1), Some(b' ' | b'\t')) {
                return None;
            }
            i = blanks(close + 1);
            continue;
        }
        let dash = ARROWS.iter().find(|d| b[i..].starts_with(d.as_bytes()));
        if let Some(d) = dash {
            let after = i + d.len();
            // (Or a colon set apart after words, as French writes it: `Mot de passe pour
            // admin : …`.)
            if (i != first && *d != ":") || !matches!(b.get(after), Some(b' ' | b'\t')) {
                return None;
            }
            break blanks(after);
        }
        // (Letters past ASCII too, of a script written with blanks: `Passwort für root:
        // …`.)
        let mut len = text
            .get(i..ceil_char_boundary(text, limit))
            .unwrap_or_default()
            .chars()
            .take_while(|&c| {
                c.is_ascii_alphabetic()
                    || c == '\''
                    || (!c.is_ascii() && c.is_alphabetic() && !unspaced_script(c))
            })
            .map(char::len_utf8)
            .sum::<usize>()
            .min(limit - i);
        // (A typographic apostrophe inside the word: `It’s`, `user’s`.)
        if len > 0 && b[i + len..limit].starts_with("’".as_bytes()) {
            len += 3 + b[i + len + 3..limit]
                .iter()
                .take_while(|c| c.is_ascii_alphabetic())
                .count();
        }
        // (Parts joined by hyphens: `Password for Wi-Fi: …`, `the e-mail password is …`.)
        while len > 0
            && i + len + 1 < limit
            && b[i + len] == b'-'
            && b[i + len + 1].is_ascii_alphabetic()
        {
            len += 1 + b[i + len + 1..limit]
                .iter()
                .take_while(|c| c.is_ascii_alphabetic())
                .count();
        }
        // (A word that ends its line goes on below only if it is a verb.)
        let word_ends = matches!(
            b.get(i + len),
            Some(b' ' | b'\t' | b':' | b',' | b'\r' | b'\n')
        );
        if len == 0 || !word_ends {
            // No word. (A bare value right after the name, one blank between, is one only
            // where a machine made it, two digits or more in it, as chat gives one — `wifi
            // password Xk9…`, `user admin pass Xk9…` — not `the password abc12345 works`,
            // `pass http2Client`; and only after a word of prose's, not at its line's start
            // (a table's row, a tool's key and value) nor on a command's line (its
            // argument: `mysql -u root password …`, read by the commands' pass); a command
            // that sets the name is read before, see `blank_setter`.)
            // (Its word whole: no quote or backtick in it, `Xk9mQ2vL7'z`, review 51.)
            let token = &b[i..limit];
            let token = &token[..token
                .iter()
                .take_while(|c| !c.is_ascii_whitespace())
                .count()];
            let bare_token = token.iter().all(bare);
            let digits = match bare_token {
                true => token.iter().filter(|c| c.is_ascii_digit()).count(),
                false => 0,
            };
            // (The line read back 256 bytes at most: in a run of such values each read the
            // text back to its start.)
            let option_before =
                || memchr::memmem::find(&b[line_back(b, key, 256)..key], b" -").is_some();
            // (Or one a person made, where a verb that uses it stands before the name: `log
            // in with password hunter22`, `use the password Summer2024! for …`, a command's
            // line before it on the same line or not; not after `pass`, a noun as often,
            // `with boarding pass AB1234`. Shouted, the verb and the words between in
            // capitals too: `USE PASSWORD Hunter22`, not a variable's `use PASSWORD …`.)
            let shouted_use = || {
                capitals
                    && shouted_password_word(name)
                    && !b[line_back(b, key, 32)..key]
                        .iter()
                        .any(u8::is_ascii_lowercase)
            };
            let used =
                || bare_token && used_before(b, key) && (password_word(name) || shouted_use());
            if i == first
                && first == at + 1
                && b[at] == b' '
                && (word_of_prose() || shouted_use())
                && !line_start
            {
                let machine = || digits >= 2 && value_follows(b, i, limit, || false);
                by_use = used();
                if by_use || (machine() && !option_before()) {
                    announced = false;
                    break i;
                }
            }
            return None;
        }
        let word = &b[i..i + len];
        // (A name again is its own candidate: a run of names is not read on from each —
        // of one word or more, `access key access key …`.)
        if word.eq_ignore_ascii_case(name)
            || super::patterns::secret_name_at(&b[i..]).is_some_and(|n| {
                n.len() >= len && !b.get(i + n.len()).is_some_and(u8::is_ascii_alphanumeric)
            })
        {
            return None;
        }
        // (The name qualifies another noun: `the access key ID is …`, `the token type is
        // …`.)
        if i == first && QUALIFIED.iter().any(|q| word.eq_ignore_ascii_case(q)) {
            return None;
        }
        let lower = |w: &&[u8]| word.eq_ignore_ascii_case(w);
        let colon = b.get(i + len) == Some(&b':');
        // (`to` before an article is a preposition: `the password to the router is …`.)
        let to = word.eq_ignore_ascii_case(b"to");
        let preposition = to && {
            let next = blanks(i + len);
            let w = b[next..limit]
                .iter()
                .take_while(|c| c.is_ascii_alphabetic())
                .count();
            ARTICLES
                .iter()
                .any(|a| b[next..next + w].eq_ignore_ascii_case(a))
        };
        let verb = (VERBS.iter().any(lower) && !preposition) || colon;
        by_to = to && !colon;
        let other = !verb
            && (OTHER_VERBS.contains(&word)
                || (local && (word == b"on" || word == b"la"))
                || (shouts(word) && SHOUTED_OTHER_VERBS.contains(&word)));
        shouted.set((verb || other) && shouts(word));
        // Where the value starts after the verb, if anything follows it.
        let past_verb = || {
            let after = i + len + usize::from(colon);
            let next = blanks(after);
            if next == after || next >= limit {
                return None;
            }
            // (`is: …`, `is -> …`, `is now …`: past a colon, an arrow and its blank, and
            // leading words after the verb — none of it past the bound.)
            let arrow = ARROWS
                .iter()
                .find(|a| b[next..].starts_with(a.as_bytes()))
                .map(|a| next + a.len())
                .filter(|&a| matches!(b.get(a), Some(b' ' | b'\t')));
            let mut j = match arrow {
                Some(a) => a,
                None => next + usize::from(b[next] == b':'),
            }
            .min(limit);
            j = blanks(j);
            loop {
                let len = b[j..limit]
                    .iter()
                    .take_while(|c| c.is_ascii_alphabetic())
                    .count();
                let w = &b[j..j + len];
                if len > 0
                    && matches!(b.get(j + len), Some(b' ' | b'\t'))
                    && (LEADING.iter().any(|l| w.eq_ignore_ascii_case(l))
                        || w == b"to"
                        || OTHER_LEADING.contains(&w))
                {
                    j = blanks(j + len);
                    continue;
                }
                break;
            }
            Some(j)
        };
        // (A label's own word before its colon, `Password lockout:`, is such a noun.)
        if colon && words == 0 && !VERBS.iter().any(lower) {
            plain = false;
        }
        if verb || other {
            // (`Your new password is:⏎…`: the value on the next line.)
            if colon && matches!(b.get(i + len + 1), Some(b'\r' | b'\n')) {
                return next_line_value(text, name, i + len, false, || person(plain))?;
            }
            // (`The wifi password is⏎…`: a verb that ends its line, the value alone on the
            // next.)
            if !colon && matches!(b.get(i + len), Some(b'\r' | b'\n')) {
                return next_line_value(text, name, i + len, true, || person(plain))?;
            }
            // (The name again after the verb, asked before the value is judged: `PASSORDET
            // ER PASSORDET ER …`, review 67.)
            match past_verb() {
                Some(j) if again(j) => return None,
                Some(j) if verb || value_follows(b, j, limit, || person(plain)) => break j,
                None if verb => return None,
                // (Another language's verb no value follows: a word.)
                _ => {}
            }
        }
        if !LEADING.iter().any(lower) && !ARTICLES.iter().any(lower) {
            if words == 0 && !PREPOSITIONS.iter().any(lower) {
                plain = false;
            }
            words += 1;
            if words > 6 {
                return None;
            }
        }
        // (A word and its comma: `the root password, for the record, is …`.)
        let comma = usize::from(b.get(i + len) == Some(&b','));
        if !matches!(b.get(i + len + comma), Some(b' ' | b'\t')) {
            return None;
        }
        i = blanks(i + len + comma);
    };
    if value >= limit || again(value) {
        return None;
    }
    // The value: quoted, a code span or in parentheses, to its closing character on its
    // line; else to a blank.
    let end_of_line = memchr::memchr2(
        b'\n',
        b'\r',
        &b[value..b.len().min(value + NAMED_VALUE_MAX)],
    )
    .map_or(b.len().min(value + NAMED_VALUE_MAX), |k| value + k);
    // (Typographic quotes: `“…”`, `‘…’`, `«…»`.)
    let curly = CURLY_QUOTES
        .into_iter()
        .find(|(open, _)| b[value..].starts_with(open.as_bytes()));
    // (JSON-escaped quotes: `\"…\"`.)
    let escaped = b[value] == b'\\' && matches!(b.get(value + 1), Some(b'"' | b'\''));
    let mut cut = false;
    let mut remark = false;
    let (a, z, quoted) = match b[value] {
        _ if escaped => {
            let a = value + 2;
            let z = a + memchr::memmem::find(&b[a..end_of_line], &b[value..value + 2])?;
            (a, z, true)
        }
        _ if curly.is_some() => {
            let (open, close) = curly?;
            let a = value + open.len();
            let z = a + memchr::memmem::find(&b[a..end_of_line], close.as_bytes())?;
            // (Blanks inside, as French sets its guillemets apart: `« … »`.)
            let inside = &b[a..z];
            let lead = inside.iter().take_while(|&&c| c == b' ').count();
            let trail = inside[lead..]
                .iter()
                .rev()
                .take_while(|&&c| c == b' ')
                .count();
            (a + lead, z - trail, true)
        }
        open @ (b'`' | b'"' | b'\'') => {
            let z = match memchr::memchr(open, &b[value + 1..end_of_line]) {
                Some(k) => value + 1 + k,
                // (Quoted past the bound, on its line: its closing quote within
                // [`QUOTED_VALUE_MAX`] — a long key was left whole in clear.)
                None if end_of_line == value + NAMED_VALUE_MAX => {
                    let far = b.len().min(value + QUOTED_VALUE_MAX);
                    let k = memchr::memchr3(open, b'\n', b'\r', &b[end_of_line..far])?;
                    if b[end_of_line + k] != open {
                        return None;
                    }
                    end_of_line + k
                }
                None => return None,
            };
            (value + 1, z, true)
        }
        // (Emphasised: `**S3cret…**`, `*S3cret…*`, `_S3cret…_`.)
        e @ (b'*' | b'_') => {
            let run = b[value..end_of_line]
                .iter()
                .take(3)
                .take_while(|&&c| c == e)
                .count();
            let a = value + run;
            let z = a + b[a..end_of_line]
                .iter()
                .take_while(|&&c| c != e && !c.is_ascii_whitespace())
                .count();
            if !b[z..end_of_line].starts_with(&b[value..a]) {
                return None;
            }
            (a, z, true)
        }
        // (A bare one starts with a letter or a digit: not `$PW`, `-flag`, `<<<bob:…`.)
        c if !c.is_ascii_alphanumeric() => return None,
        _ => {
            let mut z = value + b[value..end_of_line].iter().take_while(|c| bare(c)).count();
            // (Cut at the bound, the run goes on: see below.)
            if z == end_of_line && b.get(z).is_some_and(bare) {
                cut = true;
            }
            // (Not into a field glued on after it, `hunter22,token: …`.)
            z = value + glued_field(&b[value..z]);
            // (Glued to a letter past ASCII of a script written with blanks after a part of
            // letters, the word goes on: `Le token est HS256-signé`, review 49 — not a
            // password's last character, `Xk9mQ2vL7é`, whose ASCII is taken, review 50.)
            let tail = b[value..z]
                .rsplit(|&c| c == b'-')
                .next()
                .filter(|t| z - value > t.len());
            if tail.is_some_and(|t| t.len() >= 2 && t.iter().all(u8::is_ascii_alphabetic))
                && text
                    .get(z..)
                    .and_then(|r| r.chars().next())
                    .is_some_and(|c| !c.is_ascii() && c.is_alphabetic() && !unspaced_script(c))
            {
                return None;
            }
            // (A remark in parentheses glued after it in a script written without blanks,
            // `密码是…（区分大小写）`: the value ends before it, no call's name.)
            if z > value
                && b[z - 1] == b'('
                && text
                    .get(z..)
                    .and_then(|r| r.chars().next())
                    .is_some_and(unspaced_script)
            {
                z -= 1;
                remark = true;
            }
            (value, sentence_end(b, value, z), false)
        }
    };
    if piped && !b[z..end_of_line].trim_ascii().is_empty() {
        return None;
    }
    // (Credentials' account and password set apart by a slash, `the credentials are admin /
    // Xk9…`: the pair, judged as a field's is — see `named_secret`.)
    if !quoted && credentials_named(name) {
        let run = |r: &[u8]| r.iter().take_while(|c| bare(c)).count();
        if let Some(n) = password_apart(&b[a..z], &b[z..end_of_line], &run) {
            let end = sentence_end(b, a, z + n);
            if text.get(a..end).is_some_and(account_and_password) {
                // (And the pairs a list gives after it, `…, guest / Hq7…`.)
                let list = more_pairs(&b[a..end_of_line], end - a, end_of_line == b.len(), &run);
                return Some((a, sentence_end(b, a, a + list)));
            }
        }
    }
    let v = text.get(a..z)?;
    // (A bare value cut at the bound is judged by what was read, the byte after its whole
    // run taken as the one after it — not the bound's, `(`, which a call's name has — and
    // is taken to its end, what ends its sentence left out: no tail of it is left, whatever
    // byte stood at the bound.)
    let run_end =
        cut.then(|| end_of_line + b[end_of_line..].iter().take_while(|c| bare(c)).count());
    // (Quoted or not: prose quotes names and versions as often as values, `` the secret
    // `prod-db-creds-2024` ``.)
    let next = match remark {
        true => None,
        false => b.get(run_end.unwrap_or(z)).copied(),
    };
    // (A person's value after `to` only where the password is set to it: a word that sets
    // it between the name and the value, or among the three words before the name on its
    // line — `the password was changed to …`, `set the password to …`, `change your wifi
    // password to …`; not `send the password to jsmith2`, review 53.)
    let set_near = || {
        const SETTERS: [&[u8]; 8] = [
            b"set", b"change", b"changed", b"reset", b"update", b"updated", b"rotate", b"rotated",
        ];
        let setter = |w: &[u8]| SETTERS.iter().any(|s| w.eq_ignore_ascii_case(s));
        if b[at..value].split(|c| !c.is_ascii_alphabetic()).any(setter) {
            return true;
        }
        let mut end = key;
        for _ in 0..3 {
            while end > 0 && b[end - 1] == b' ' {
                end -= 1;
            }
            let start = end
                - b[..end]
                    .iter()
                    .rev()
                    .take(16)
                    .take_while(|c| c.is_ascii_alphabetic())
                    .count();
            if start == end {
                return false;
            }
            if setter(&b[start..end]) {
                return true;
            }
            end = start;
        }
        false
    };
    // (After a password's own word, a value a person made too, announced — `my password is
    // hunter2`, `Passwort: Sommer2024!`, not `the password (`UserPwdV3`) field` nor chat's
    // `wifi password …` — quoted, or bare where it ends its sentence; asked only of a value
    // no machine made, its cheap questions first.)
    let by_person = || {
        (announced || by_use)
            && PERSON_LEN.contains(&v.len())
            && (quoted || by_use || ends_sentence(b, run_end.unwrap_or(z)))
            // (A verb that uses it made the name a password's own word already.)
            && (by_use || person(plain))
            && (!by_to || set_near())
            && person_made(v.as_bytes())
    };
    // (A key in hex or base32 only where no other noun stands between the name and it,
    // `the token refresh commit is 3f2a…`, nor the name is what a hash is of, `MD5 of the
    // secret is 5f4d…`, review 67.)
    let encoded = || {
        plain
            && (hex_key(v.as_bytes()) || base32_key(v.as_bytes()))
            && !word_before(b, key, &[b"of"])
    };
    let judged = machine_made(v.as_bytes()) || encoded() || by_person();
    if !judged || !name_holds(name, v, quoted, next, false) {
        return None;
    }
    Some((a, run_end.map_or(z, |z| sentence_end(b, a, z))))
}

/// Typographic quotes, opening and closing, as prose writes them around a value.
pub(super) const CURLY_QUOTES: [(&str, &str); 7] = [
    ("“", "”"),
    ("‘", "’"),
    ("«", "»"),
    // (German's, and Chinese's and Japanese's corner brackets.)
    ("„", "“"),
    ("‚", "‘"),
    ("「", "」"),
    ("『", "』"),
];

/// Whether a value prose may give starts at `j` (before `limit`): quoted, a code span,
/// emphasised or in typographic quotes — or bare and made by a machine (see
/// [`machine_made`]), or, where `person()`, by a person (see [`person_made`]), judged as a
/// field's value is (see [`secret_value`]); its sentence's punctuation left out.
fn value_follows(b: &[u8], j: usize, limit: usize, person: impl FnOnce() -> bool) -> bool {
    let Some(&c) = b[..limit].get(j) else {
        return false;
    };
    if matches!(c, b'"' | b'\'' | b'`' | b'*' | b'_' | b'\\')
        || CURLY_QUOTES
            .iter()
            .any(|(open, _)| b[j..].starts_with(open.as_bytes()))
    {
        return true;
    }
    let mut v = &b[j..j + b[j..limit].iter().take_while(|c| bare(c)).count()];
    while let [rest @ .., b'.' | b',' | b';' | b':' | b')' | b'('] = v {
        v = rest;
    }
    machine_made(v)
        || (PERSON_LEN.contains(&v.len())
            && ends_sentence(b, j + v.len())
            && person()
            && person_made(v)
            && std::str::from_utf8(v).is_ok_and(|v| secret_value(v, false, None)))
}

/// The longest value prose may give quoted (see [`prose_secret`], [`value_before_name`]):
/// past [`NAMED_VALUE_MAX`], its closing quote is looked for this far on its line, so a
/// long key in a code span is not left whole in clear, and each candidate reads a bounded
/// stretch.
pub(super) const QUOTED_VALUE_MAX: usize = 4096;

/// What a bare value of prose is made of: ASCII short of white space, quotes and angle
/// brackets (not past ASCII: a quote glued on, `…”`).
fn bare(c: &u8) -> bool {
    c.is_ascii() && !c.is_ascii_whitespace() && !matches!(c, b'"' | b'\'' | b'`' | b'<' | b'>')
}

/// What stands between a secret's name and its value in prose (`Password -- …`, `the
/// password is -> …`), longest first.
const ARROWS: [&str; 14] = [
    "-->", "==>", "->", "=>", "~>", "--", "...", "…", "–", "—", "→", "⇒", "-", ":",
];

/// Words right after a secret's name that make it another noun's (`the access key ID is
/// AKIA…`, `the token type is JWT2`): prose gives no value of it.
const QUALIFIED: [&[u8]; 36] = [
    b"id",
    b"ids",
    b"name",
    b"names",
    b"type",
    b"types",
    b"length",
    b"hash",
    b"hashes",
    b"policy",
    b"format",
    b"field",
    b"fields",
    b"prefix",
    b"version",
    b"header",
    b"expiry",
    b"reset",
    b"limit",
    b"count",
    b"manager",
    b"file",
    b"strength",
    b"requirements",
    b"rules",
    b"column",
    b"option",
    b"flag",
    b"prompt",
    b"parameter",
    b"variable",
    b"endpoint",
    b"scope",
    b"scopes",
    b"url",
    b"path",
];

/// Whether `key` starts its line but for up to 16 blanks: a tool's `key⇥value` line or a
/// database client's record or row, indented (`  password | Xk9…`, psql's key/value
/// tables).
fn starts_line(b: &[u8], key: usize) -> bool {
    let indent = b[..key]
        .iter()
        .rev()
        .take(17)
        .take_while(|&&c| c == b' ' || c == b'\t')
        .count();
    indent <= 16
        && matches!(
            key.checked_sub(indent + 1).map(|i| b[i]),
            None | Some(b'\n' | b'\r')
        )
}

/// How many bytes right after a secret's name (`key..at`) close it in prose: its emphasis
/// or code span, as many marks as opened it (`**Password** is …`, `` `DB_PASSWORD` is …
/// ``, `__Password__ is …`) — emphasis may open a few words before the name, `**The new
/// password** is …` (see [`emphasis_opened`]) — or a comma (`the root password, for the
/// record, is …`) or a question's mark (`The password? It's …`); else none.
fn prose_mark(b: &[u8], key: usize, name: usize, at: usize) -> usize {
    match b.get(at) {
        Some(b',' | b'?') => 1,
        Some(&c @ (b'*' | b'`' | b'_')) => {
            let run = b[at..].iter().take(4).take_while(|&&d| d == c).count();
            // (Opened right before the name, or by its field's prefix: `__Password__`.)
            let prefix = &b[key..name];
            let open = match prefix.iter().all(|&d| d == c) {
                true if !prefix.is_empty() => prefix.len(),
                _ => b[..key]
                    .iter()
                    .rev()
                    .take(4)
                    .take_while(|&&d| d == c)
                    .count(),
            };
            let opened = run == open || (open == 0 && c != b'`' && emphasis_opened(b, key, c, run));
            if opened && run <= 3 { run } else { 0 }
        }
        _ => 0,
    }
}

/// Whether emphasis of `run` marks `c` (`*` or `_`) opens at most four words before the
/// name at `key`, on its line: `**The new password**`, `_Your API key_`, `"**The user’s
/// password**` — its marks after anything but a letter, a digit or another mark, and
/// right before the first word; only words (typographic apostrophes and other non-ASCII
/// letters in them), blanks, hyphens and apostrophes between it and the name (48 bytes at
/// most).
fn emphasis_opened(b: &[u8], key: usize, c: u8, run: usize) -> bool {
    let words = b[key.saturating_sub(48)..key]
        .iter()
        .rev()
        .take_while(|&&d| {
            d.is_ascii_alphanumeric() || !d.is_ascii() || matches!(d, b' ' | b'\'' | b'-')
        })
        .count();
    let first = key - words;
    let open = b[..first]
        .iter()
        .rev()
        .take(4)
        .take_while(|&&d| d == c)
        .count();
    let before = first.checked_sub(open + 1).map(|i| b[i]);
    words > 0
        && open == run
        && b[first].is_ascii_alphanumeric()
        && b[first..key].iter().filter(|&&d| d == b' ').count() <= 4
        && before.is_none_or(|d| !d.is_ascii_alphanumeric() && d != c)
}

/// A value prose gives before its name (`text[s..e]`, the trigger's match: see
/// `patterns::value_before_name`): `` use `Xk9vQ2mZp4Lw` as the password ``, `"…" is your
/// new API key`. `None` when the match is no such form; else the value — quoted, a code
/// span or emphasised, [`QUOTED_VALUE_MAX`] bytes at most, and judged as prose's is (see
/// [`name_holds`]: it must look made by a machine) — unless the name may go on as another
/// noun's (`` `…` is the password hash ``, `…as the token signer`, `…as the token-limit`):
/// after it, only its sentence's end, a clause's word (`for`, `to`, `you`, `set`, …) or
/// nothing.
fn value_before_name(text: &str, s: usize, e: usize) -> Option<Option<(usize, usize)>> {
    const CLAUSE: [&[u8]; 36] = [
        b"for",
        b"to",
        b"of",
        b"on",
        b"in",
        b"at",
        b"from",
        b"with",
        b"by",
        b"you",
        b"we",
        b"i",
        b"it",
        b"they",
        b"he",
        b"she",
        b"that",
        b"and",
        b"but",
        b"or",
        b"so",
        b"which",
        b"when",
        b"here",
        b"now",
        b"until",
        b"please",
        b"then",
        b"today",
        b"again",
        b"too",
        b"set",
        b"stored",
        b"used",
        b"everyone",
        b"before",
    ];
    let b = text.as_bytes();
    let m = &b[s..e];
    // The value: quoted to its quote (`…`, "…", '…', “…”, ‘…’, «…», **…**).
    let curly = CURLY_QUOTES
        .into_iter()
        .find(|(open, _)| m.starts_with(open.as_bytes()));
    let (a, z, close) = if let Some((open, close)) = curly {
        let z = memchr::memmem::find(&m[open.len()..], close.as_bytes())?;
        (
            s + open.len(),
            s + open.len() + z,
            open.len() + z + close.len(),
        )
    } else if let Some(quoted) = m.strip_prefix(b"**") {
        let z = memchr::memmem::find(quoted, b"**")?;
        (s + 2, s + 2 + z, 2 + z + 2)
    } else {
        match *m.first()? {
            open @ (b'`' | b'"' | b'\'') => {
                let close = 1 + memchr::memchr(open, &m[1..])?;
                // (JSON-escaped quotes, `\"…\"`: the value ends before the backslash.)
                let escaped = s > 0 && b[s - 1] == b'\\' && m[close - 1] == b'\\';
                (s + 1, s + close - usize::from(escaped), close + 1)
            }
            _ => return None,
        }
    };
    let words = m.get(close..)?;
    // (The value, then blanks and a verb — and, below, a prose name at the match's end: no
    // other of the pass's triggers matches so.)
    let verb = words.trim_ascii_start();
    let verb_len = verb.iter().take_while(|c| c.is_ascii_lowercase()).count();
    if verb.len() == words.len()
        || !matches!(&verb[..verb_len], b"as" | b"is" | b"are" | b"was" | b"for")
        || !matches!(verb.get(verb_len), Some(b' ' | b'\t'))
    {
        return None;
    }
    // (The longest name first: `secret key`, not `secret`.)
    let name = super::patterns::PROSE_NAMES
        .iter()
        .map(|n| n.as_bytes())
        .find(|n| m.ends_with(n))?;
    if z <= a || z - a > QUOTED_VALUE_MAX {
        return Some(None);
    }
    // What follows the name.
    let after = &b[e..b.len().min(e + 16)];
    let goes_on = match after {
        [] => false,
        [b'-' | b'_', c, ..] if c.is_ascii_alphanumeric() => true,
        [b' ' | b'\t', ..] => {
            let next = after.trim_ascii_start();
            let len = next.iter().take_while(|c| c.is_ascii_alphabetic()).count();
            len > 0 && !CLAUSE.iter().any(|c| next[..len].eq_ignore_ascii_case(c))
        }
        _ => false,
    };
    if goes_on {
        return Some(None);
    }
    let v = text.get(a..z)?;
    Some(name_holds(name, v, true, b.get(z).copied(), true).then_some((a, z)))
}

/// Whether `v` is a key written in hex, as prose gives one after a secret's name (`the
/// private key is 0x4c08…`, `the api key is 9f86d081…`): 32 to 128 hex digits, `0x` before
/// them or not (not 40 after it, an Ethereum address's), digits and letters among them
/// (see [`prose_secret`]; [`machine_made`] takes none, as prose's hashes are hex under
/// their own names).
fn hex_key(v: &[u8]) -> bool {
    let hex = v.strip_prefix(b"0x").unwrap_or(v);
    // (Not an Ethereum address, `0x` and 40: `the USDT token is 0xdAC1…`, review 67.)
    let address = hex.len() == 40 && hex.len() < v.len();
    !address
        && (32..=128).contains(&hex.len())
        && hex.iter().all(u8::is_ascii_hexdigit)
        && hex.iter().any(u8::is_ascii_digit)
        && hex.iter().any(u8::is_ascii_alphabetic)
}

/// Whether `v` is a one-time password's key in base32, as prose gives one after a secret's
/// name (`the TOTP secret is JBSWY3DPEHPK3PXP`; in groups, see [`base32_groups`]): 16 to
/// 64 characters, capitals or small letters (one case) and digits from `2` to `7`, a
/// digit among them (two where over a third of the letters are vowels, as a word's),
/// at least half of them distinct, not the alphabet in a row (see
/// [`prose_secret`]; [`machine_made`] takes none, having no letter of the other case).
fn base32_key(v: &[u8]) -> bool {
    // (Its case its first letter's: `5JVUJ4JQ…`, review 72.)
    let upper = v
        .iter()
        .find(|c| c.is_ascii_alphabetic())
        .is_some_and(u8::is_ascii_uppercase);
    let digits = v.iter().filter(|c| c.is_ascii_digit()).count();
    let vowels = v.iter().filter(|c| b"AEIOUaeiou".contains(c)).count();
    (16..=64).contains(&v.len())
        && v.iter().all(|&c| {
            (b'2'..=b'7').contains(&c)
                || (upper && c.is_ascii_uppercase())
                || (!upper && c.is_ascii_lowercase())
        })
        && distinct_bytes(v) * 2 >= v.len()
        && !in_a_row(v)
        // (One digit where vowels are as many as a word's, `MYAPPLICATIONSECRET2` — a
        // name, review 73; a random key's letters hold about one in five.)
        && match v.iter().filter(|c| c.is_ascii_alphabetic()).count() {
            letters if vowels * 20 >= letters * 7 => digits >= 2,
            _ => digits >= 1,
        }
}

/// Whether a third of `v`'s neighbours or more are the alphabet's or the digits' next
/// (`ABCDEFGH…`, `ABCD 2345 EFGH 6723`): a placeholder's, not a key's (see [`base32_key`],
/// [`base32_groups`]).
fn in_a_row(v: &[u8]) -> bool {
    v.windows(2).filter(|w| w[1] == w[0] + 1).count() * 3 >= v.len()
}

/// Whether a word of prose looks made by a machine, as a generated password or key does —
/// not as a name people make does: eight characters or more with a digit, capitals and
/// small letters (`Xk9vQ2mZp4Lw`, `Tr0ub4dor&3`); no run of six small letters that reads
/// as a word (`AES256-encrypted`; not `HTp8hkqdlm`); not a hex number (`0x1F4A3B2C`); and
/// not a name made of words and numbers (see [`made_of_words`]: `ReportingRole2`, `HTTP401Unauthorized`, `X-Api-Key2`,
/// `Llama-3.1-8B-Instruct`; also a human's `Summer2024!` and `Admin123`).
fn machine_made(v: &[u8]) -> bool {
    let has = |f: fn(&u8) -> bool| v.iter().any(f);
    if v.len() < 8
        || !has(u8::is_ascii_digit)
        || !has(u8::is_ascii_uppercase)
        || !has(u8::is_ascii_lowercase)
    {
        return false;
    }
    if let Some(hex) = v.strip_prefix(b"0x").or(v.strip_prefix(b"0X"))
        && hex.iter().all(u8::is_ascii_hexdigit)
    {
        return false;
    }
    // (A run of six small letters or more that reads as a word: with a capital before it,
    // `Encrypted`, or as it is, `encrypted`; `hkqdlm` is random characters'.)
    // (Each run measured once, from its start: read from every letter, a long one cost
    // 5.8x the bench text — a nineteenth attack review.)
    // (In a long value, only a run set apart by punctuation or the value's ends,
    // `…-Vision-Instruct`: a long random one holds a run glued in by chance, `…kEixwudbS…`.)
    let word = v.iter().enumerate().any(|(i, c)| {
        let starts = c.is_ascii_lowercase() && (i == 0 || !v[i - 1].is_ascii_lowercase());
        starts && {
            let run = v[i..].iter().take_while(|c| c.is_ascii_lowercase()).count();
            let capital = v[..i].last().filter(|c| c.is_ascii_uppercase());
            let from = i - usize::from(capital.is_some());
            let apart = |k: Option<&u8>| k.is_none_or(|c| !c.is_ascii_alphanumeric());
            let set_apart = apart(from.checked_sub(1).map(|k| &v[k])) || apart(v.get(i + run));
            run >= 6 && (v.len() <= 32 || set_apart) && spoken(&v[from..i + run])
        }
    });
    !word && !made_of_words(v)
}

/// Whether letters read as a word: a vowel among them and a start a word can have (see
/// [`spoken_start`]).
fn spoken(w: &[u8]) -> bool {
    w.iter().any(|c| vowel(c.to_ascii_lowercase())) && spoken_start(w)
}

/// A small vowel (`y` too: `Python`, `Sync`).
fn vowel(c: u8) -> bool {
    matches!(c, b'a' | b'e' | b'i' | b'o' | b'u' | b'y')
}

/// Whether the letters of `p` (a part of a name: letters and digits) start as a spoken word
/// does, past an acronym before it: with a vowel, one consonant before a vowel, or two
/// that start English words (`Str…`, `Pl…`, `Th…`; and names' `Llama`, `Qwen`, `Django`,
/// `Xcode`) — not `Pde`, `Jzq`, `Xk`, as random characters often do.
fn spoken_start(p: &[u8]) -> bool {
    const ONSETS: [&[u8; 2]; 42] = [
        b"bl", b"br", b"ch", b"cl", b"cr", b"dr", b"dw", b"fl", b"fr", b"gh", b"gl", b"gn", b"gr",
        b"kl", b"kn", b"kr", b"ph", b"pl", b"pr", b"ps", b"rh", b"sc", b"sh", b"sk", b"sl", b"sm",
        b"sn", b"sp", b"st", b"sv", b"sw", b"th", b"tr", b"tw", b"wh", b"wr", b"sq", b"ts", b"ll",
        b"qw", b"dj", b"xc",
    ];
    // (Past an acronym glued before the word, `BFloat16`, `HTTPServer`: from its last
    // capital.)
    let caps = p.iter().take_while(|c| c.is_ascii_uppercase()).count();
    let from = match p.get(caps) {
        Some(c) if caps >= 2 && c.is_ascii_lowercase() => caps - 1,
        _ => 0,
    };
    let mut letters = p[from..]
        .iter()
        .filter(|c| c.is_ascii_alphabetic())
        .map(u8::to_ascii_lowercase);
    match (letters.next(), letters.next()) {
        (Some(a), Some(b)) if !vowel(a) && !vowel(b) => ONSETS.contains(&&[a, b]),
        _ => true,
    }
}

/// Whether `v` is a name made of words and numbers: split at what is no letter or digit,
/// before a capital after a small letter or a digit, and before three small letters after
/// a digit (`SHA256|with|RSA`), every part letters then digits or digits then letters, its
/// letters an acronym (capitals), one letter, or a word (a vowel among them and a start a
/// spoken word has, see [`spoken_start`]), or a numeronym (`k8s`), or an acronym written as
/// a word (`Csrf`, `Hmac`) beside a word of four letters or more — one part at least a word
/// of three letters or more. Random characters rarely split so: `Xk9v|Q2m|Zp4|Lw` (letters
/// after digits after letters), `Tv6|Qm3|Wz9|Rkp` (no vowel), `u8jz|Pde0|Ig` (no spoken
/// start, no numeronym).
fn made_of_words(v: &[u8]) -> bool {
    let mut word = false;
    // (A word of four letters or more, and a part that is a word only beside one.)
    let (mut long, mut weak) = (false, false);
    let mut part = |p: &[u8]| {
        // (Nothing, a short word in small letters and digits, `v2`, `x86`, or a numeronym:
        // `k8s`, `i18n`, `a11y` — not `u8jz`.)
        let changes = p
            .windows(2)
            .filter(|w| w[0].is_ascii_digit() != w[1].is_ascii_digit())
            .count();
        let numeronym = changes == 2 && p.last().is_some_and(u8::is_ascii_alphabetic) && {
            let digits = p.iter().rposition(u8::is_ascii_digit).unwrap_or(0);
            digits + 2 == p.len()
        };
        if p.len() <= 4
            && p.iter()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
            && (changes <= 1 || numeronym)
        {
            return true;
        }
        let letters = p.iter().filter(|c| c.is_ascii_alphabetic()).count();
        // (A vowel, and a start a word can have: `Pde0`, `Jz4` are random characters'.)
        let vowel = spoken(p);
        // (An acronym written as a word, `Jwt`, `Csrf`, `Hmac`, `Json`, `K8s`, digits after
        // it or not: a word beside a longer one, `CsrfToken2`, `PBKDF2WithHmacSHA256`,
        // `K8sSecret` — random characters split so too, `Nrb`, `Pde0`, but rarely beside a
        // word.)
        let capitalised = p[0].is_ascii_uppercase()
            && p[1..letters].iter().all(u8::is_ascii_lowercase)
            && p[letters..].iter().all(u8::is_ascii_digit);
        if (3..=4).contains(&letters) && capitalised && !vowel || p == b"K8s" {
            weak = true;
            return true;
        }
        let acronym = !p.iter().any(u8::is_ascii_lowercase);
        word |= letters >= 3 && (vowel || acronym);
        long |= letters >= 4 && vowel && !acronym;
        changes <= 1 && (letters <= 1 || acronym || vowel)
    };
    let mut from = 0;
    for i in 1..=v.len() {
        let split = i == v.len() || {
            let (p, c) = (v[i - 1], v[i]);
            !c.is_ascii_alphanumeric()
                || !p.is_ascii_alphanumeric()
                || (c.is_ascii_uppercase() && (p.is_ascii_lowercase() || p.is_ascii_digit()))
                || (p.is_ascii_digit()
                    && v[i..].iter().take_while(|c| c.is_ascii_lowercase()).count() >= 3)
        };
        if split {
            let p: &[u8] = &v[from..i];
            let p = match p.first() {
                Some(c) if !c.is_ascii_alphanumeric() => &p[1..],
                _ => p,
            };
            if !part(p) {
                return false;
            }
            from = i;
        }
    }
    word && (long || !weak)
}

/// The value of a field named for a secret (`password=…`, `"client_secret": "…"`,
/// `apiKey: …`), its name at `name..at`, the trigger's match ending at `e` (on the value's
/// first character). A quoted value runs to its closing quote (the one escaped as the
/// opening one is: `\"` inside `"…"` is part of the value), on its line; a bare one to white
/// space — in an `.env` line (`KEY=value` at a line's start) — or else also to punctuation
/// that ends a value in code, URLs and connection strings (`&`, `;`, `,`, brackets, quotes).
///
/// Not a field's value: a label or prompt that ends at its colon (`getpass("Password: ")`:
/// the quote after it closes the string); see [`secret_value`] for what a value must be. A
/// name inside a template is read too: its default (`${DB_PASSWORD:Xk9m…}`, Spring's) is
/// often the real password (`${POSTGRES_PASSWORD:-postgres}`'s is no secret). A key in
/// base32 written in groups, as an authenticator app shows one, is taken whole (see
/// [`base32_groups`]: `secret key: JBSW Y3DP EHPK 3PXP`).
fn named_secret(text: &str, name: usize, at: usize, e: usize) -> Option<(usize, usize)> {
    let b = text.as_bytes();
    // The value's first character: the trigger's last (it may be more than one byte).
    let first = e - text[..e].chars().next_back()?.len_utf8();
    let key = name
        - b[..name]
            .iter()
            .rev()
            .take(256)
            .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-' | b'.'))
            .count();
    // (Chinese's, Japanese's and Korean's particle after the name, `密码是…`: prose's,
    // judged as prose's value is — read as a field's, a sentence's version or algorithm was
    // taken, `密码是RSA2048加密的`, and a password cut at its `&`, review 49.)
    if super::patterns::particle_at(&b[at..]).is_some() {
        return prose_secret(text, key, name, at);
    }
    // (A shell's default in a template, `${DB_PASSWORD:-…}`, `:=`: the default after the
    // operator — its `-` was taken with it; `:?` gives an error's message, no value.)
    let first = match b[..key].ends_with(b"${") && b.get(at) == Some(&b':') && first == at + 1 {
        true => match b[first] {
            b'-' | b'='
                if b.get(first + 1)
                    .is_some_and(|c| !matches!(c, b'}' | b' ' | b'\t' | b'\n' | b'\r')) =>
            {
                first + 1
            }
            b'?' => return None,
            _ => first,
        },
        false => first,
    };
    // (A key's bytes as numbers, `secretKey: [174, 47, …]`: see `named_byte_array`.)
    if let Some(span) = named_byte_array(b, &b[key..at], first) {
        return Some(span);
    }
    // (A run of names, each the next one's field — `pwd=pwd=…`, `password=token=…`,
    // `SENHA=HASLO=…`, `dbHaslo=dbSenha=…`, `HASLO SENHA …`: no value — each of its
    // candidates fails here, without reading the run as a value 256 bytes long or taking
    // the next name for one: a run of names alternating read 9x the bench text, review 46.)
    // (But a default given to it, `password = password or '…'`.)
    // (Quoted or not, a value that is the name again before its separator: `password='
    // password='…`, read 5x the bench text without this, review 48.)
    // (So the field's whole name again, `x_pw]="x_pw]="…`, and an index's with its
    // bracket, `[pass]="[pass]="…`, each with its whole separator — each was a detection of
    // the name, 15x the bench text on every release, review 55; not a value that starts
    // with the name and its bracket, `[pass]="[pass]Xk9…"`, review 56.)
    let again_at = |v: usize, from: usize, sep: &[u8]| {
        b[v..].starts_with(&b[from..at]) && b[v + at - from..].starts_with(sep)
    };
    let again = again_at(first, name, &b[at..=at])
        || (key < name && again_at(first, key, &b[at..first]))
        || (key > 0
            && b[key - 1] == b'['
            && b[first] == b'['
            && again_at(first + 1, key, &b[at..first]));
    let quoted = matches!(b[first - 1], b'"' | b'\'' | b'`');
    // (A quoted one is no lookup: `password || "password || "…`, each read as a lookup's
    // fallback, 4.3x the bench text.)
    if (again || (!quoted && next_field_name(text, first)))
        && (quoted || fallback_string(b, first).is_none())
    {
        return None;
    }
    // (A name that is a common word too stands alone or after a `.`, a `-` or a `_`:
    // `smtp.pass`, `_auth` — not `bypass`, `compass`, `oauth`; see `WORD_NAMES`.)
    // (Or as a call's name that takes a password, `HTTPBasicAuth("bob", "…")` — but one
    // the credential calls' trigger reads, `smtp.PlainAuth(…)`, `pika.PlainCredentials(…)`:
    // each of a run of them was read twice, 5.6x the bench text.)
    // (So do other languages' names but those of languages that compound words, unless a
    // camelCase word's capital starts them: `resenha` holds `senha`, `dbSenha` names one.)
    let glued_local = |n: &str| {
        super::patterns::local_name_at(n.as_bytes()) == Some(n)
            && !super::patterns::local_name_stands(n, Some(char::from(b[name - 1])))
    };
    if name > key
        && !matches!(b[name - 1], b'.' | b'-' | b'_')
        && text
            .get(name..at)
            .is_some_and(|n| super::patterns::WORD_NAMES.contains(&n) || glued_local(n))
        && !(b.get(at) == Some(&b'(')
            && password_argument(&b[..at]).is_some()
            && !read_by_credential_calls(&b[..at]))
    {
        return None;
    }
    // (A tool's name or its subcommand before a blank, `mkpasswd …`, `openssl passwd …`
    // on one line: the positional tool's reading, not a field's — read back for a setter
    // at each of a run of them, found by this release's hostile units. Not before an `=`
    // or a `:`, `mkpasswd = "…"`, nor after `openssl` on the line above: a field's, found
    // by review 39.)
    let blank = |c: &u8| matches!(c, b' ' | b'\t');
    let blanks_before = b[..key]
        .iter()
        .rev()
        .take(16)
        .take_while(|c| blank(c))
        .count();
    if b.get(at).is_some_and(blank)
        && !matches!(
            b[at..].iter().take(64).find(|c| !blank(c)),
            Some(b'=' | b':')
        )
        && (&b[key..at] == b"mkpasswd"
            || (&b[key..at] == b"passwd" && b[..key - blanks_before].ends_with(b"openssl")))
    {
        return None;
    }
    if let Some(found) =
        next_line_value(text, &b[key..at], at, false, || password_word(&b[key..at]))
    {
        return found;
    }
    // (Past Markdown's around the value: a code span's backtick after a blank or a colon,
    // `` Password: `S3cret9` `` — after an `=`, a shell's command substitution may open,
    // read as before — or the name's emphasis closed after its separator, `**Password:**
    // S3cret9`.)
    let mut first = first;
    // (Twice: the name's emphasis closed, then the value's own, `**Password:** *S3cret9*`.)
    for _ in 0..2 {
        let Some(&c @ (b'*' | b'_')) = b.get(first) else {
            break;
        };
        let run = b[first..].iter().take(4).take_while(|&&d| d == c).count();
        let blanks = b[first + run..]
            .iter()
            .take(40)
            .take_while(|&&d| d == b' ' || d == b'\t')
            .count();
        match (run, blanks) {
            (1..=3, 1..) => first += run + blanks,
            // (A bare value emphasised, `**S3cret9**`, `*optional*`: judged and taken
            // without it.)
            (1..=3, 0) => match emphasised_value(text, key, at, first, run) {
                Some(found) => return found,
                None => break,
            },
            _ => break,
        }
    }
    let first = match b.get(first) {
        Some(b'`') if matches!(b[first - 1], b' ' | b'\t' | b':') => first + 1,
        Some(_) => first,
        None => return None,
    };
    if b.get(first).is_none_or(u8::is_ascii_whitespace) {
        return None;
    }
    // A URL's user (`https://x-access-token:…@github.com`): its password is read as one
    // (see `url_password`), to the host.
    if b[..key].ends_with(b"://") {
        return None;
    }
    let between = &b[at..first];
    // (A lookup of the name and its fallback string, whatever holds it: `pw =
    // process.env.DB_PASSWORD || "…"` — only a configuration's lookup, not a form's
    // messages, `errors["password"] || "Password is required"`, review 50.)
    let fallback = lookup_fallback(between);
    if fallback && !configuration_before(b, name) {
        return None;
    }
    // (A lookup's fallback, `password: process.env.DB_PASSWORD || '…'`: its string; in a
    // quoted template too, `password: "{{ lookup('env', 'PW') | default('…') }}"`.)
    let first = match b[first - 1] {
        b'"' | b'\'' | b'`' if !b[first..].starts_with(b"{{") => first,
        _ => fallback_string(b, first).unwrap_or(first),
    };
    // (Prose after the name's emphasis or code span closed, or after a comma: `**Password**
    // is …`, `` `DB_PASSWORD` is … ``, `the root password, for the record, is …`.)
    // (Not before a prefixed string, `, L"…"`, `, b'…'`: a call's next argument.)
    let mark = prose_mark(b, key, name, at);
    if mark > 0
        && between[mark..].iter().all(|c| matches!(c, b' ' | b'\t'))
        && string_start(b, first, b.len()).is_none()
    {
        return prose_secret(text, key, name, at);
    }
    // A table's row: the name in one cell, the value in the next.
    match table_cells(b, key, at, first) {
        Some(cells) => return cell_secret(text, key, at, first, cells),
        // (A pipe after a name that stands in no table's cell: `$password | base64` —
        // unless the name starts its line, padded, as a database client's record prints
        // it: `password | Xk9vQ2mZp4Lw`, read by prose's reading.)
        None if between.trim_ascii_end().ends_with(b"|") || html_cells(between) => {
            return match starts_line(b, key) {
                true => prose_secret(text, key, name, at),
                false => None,
            };
        }
        None => {}
    }
    // A comma between a field's name and the value (and no pair's `value` field): a
    // setter's two arguments, or a list of names. (A header's name before a comma is a
    // header passed to a call: `.header("X-API-Key", "…")`.)
    let comma = memchr::memchr(b',', between).is_some()
        && !pair_value(between)
        && !text.get(name..at).is_some_and(super::patterns::header_name);
    let setter = comma && setter_call(b, key);
    let curl = comma && !setter && curl_option(b, key, name);
    if comma && !setter && !curl {
        return None;
    }
    // (A setter's default given by its keyword, `os.environ.get("DB_PASSWORD",
    // default="…")`: the string after it — read as the value before, the keyword was taken
    // and the string left in clear.)
    let first = match comma && !matches!(b[first - 1], b'"' | b'\'' | b'`') {
        true => keyword_default(b, first)?,
        false => first,
    };
    // (PHP's double-quoted string interpolates: `CURLOPT_USERPWD, "$user:$pass"` names
    // variables.)
    if curl && b[first - 1] == b'"' && interpolates(&b[first..b.len().min(first + 256)]) {
        return None;
    }
    // Where only a value can stand — SQL's `IDENTIFIED BY`, an index set, a setter's
    // argument — a quoted passphrase with blanks is one too (`IDENTIFIED BY 'correct
    // horse battery 9'`); after a field's name it may be prose.
    let sql = super::patterns::identified_at(&b[name..]);
    if !camel_pass(&b[..name], &b[name..at]) {
        return None;
    }
    // Blanks alone between the name and its value (the name quoted or not): a command on
    // the line before the name sets it (see `blank_setter`) — or, with a quoted value right
    // after the blanks, SQL sets a role's password (`PASSWORD 'S3cret9'`); else it is prose.
    let blank_only = first > at
        && !sql
        && between.iter().all(|c| {
            // (A line continued between them: `setx DB_PASSWORD ^` and the value below.)
            matches!(
                c,
                b' ' | b'\t' | b'"' | b'\'' | b'\\' | b'^' | b'`' | b'\r' | b'\n'
            )
        });
    // (A command whose password is positional, `htpasswd -b …`, is its own candidate: see
    // [`positional_password`]. Not those added since: Sentinel's `auth-pass` is read so
    // only after `sentinel` — elsewhere, `auth-pass "…"`, it is a field's name, found by an
    // attack review.)
    // (Told by their first bytes first: a run of prose's names compared each with all.)
    if blank_only
        && POSITIONAL_COMMANDS[..ADDED_POSITIONAL]
            .iter()
            .any(|c| c.as_bytes()[0] == b[key] && b[key..at] == *c.as_bytes())
    {
        return None;
    }
    // (A name written as an option, `--password changeme`, is set by none: the command
    // line's pass reads it. Reading ten words back from each in a run of them cost 4.4x
    // the bench text.)
    let setter = match blank_only && b[key] != b'-' {
        true => blank_setter(b, key),
        false => None,
    };
    // An XML element the trigger did not read to its tag's `>`: attributes on its tag, the
    // name as its `key` or `name` attribute, a `<name>` element's sibling `<value>` (see
    // [`element_tag`]).
    let opened = between.iter().find(|c| !matches!(c, b' ' | b'\t')) == Some(&b'>');
    let tag = match setter.is_none() && !opened && key > 0 {
        true if matches!(b[key - 1], b'<' | b':' | b'"' | b'\'' | b'>') => element_tag(b, key, at),
        _ => None,
    };
    // (A quoted name before a tag's `>` that is no `key`'s or `name`'s, `<input
    // type="password">`, or before the next line's attribute, `password⏎ type="…"`,
    // holds no value.)
    let mut gap = 0;
    let mut broken = false;
    while gap < between.len() {
        match between[gap] {
            b' ' | b'\t' | b'"' | b'\'' => gap += 1,
            b'\r' | b'\n' => {
                broken = true;
                gap += 1;
            }
            b'\\' => {
                gap += 1;
                if matches!(between.get(gap), Some(b'n' | b'r')) {
                    broken = true;
                    gap += 1;
                }
            }
            _ => break,
        }
    }
    let markup = match between.get(gap) {
        Some(b'>') => !opened,
        Some(c) if broken && (c.is_ascii_alphabetic() || *c == b'_') => {
            let name = between[gap..]
                .iter()
                .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-' | b'.' | b':'))
                .count();
            between[gap + name..].trim_ascii_start().starts_with(b"=") && !pair_value(between)
        }
        _ => false,
    };
    if markup && tag.is_none() {
        return None;
    }
    if blank_only
        && setter.is_none()
        && tag.is_none()
        && !(matches!(b[at], b' ' | b'\t' | b'\r' | b'\n') && matches!(b[first - 1], b'"' | b'\''))
    {
        // (Else prose may say it, on the name's line: `the password is S3cret9x`.)
        return match memchr::memchr2(b'\n', b'\r', &b[at..first]) {
            None => prose_secret(text, key, name, at),
            Some(_) => None,
        };
    }
    // `gh secret set NAME --body value`: the value is the option's.
    let first = match setter {
        Some(BlankSetter::Body) => body_option(b, first)?,
        Some(BlankSetter::Value) => value_parameter(b, first)?,
        // A line continued by cmd's `^` or PowerShell's backtick between them (which the
        // trigger read as the value's first character): the value starts the next line.
        Some(_)
            if matches!(b[first], b'^' | b'`')
                && matches!(&b[first + 1..], [b'\n', ..] | [b'\r', b'\n', ..]) =>
        {
            let mut j = first + 1;
            j += usize::from(b[j] == b'\r') + 1;
            while j < b.len() && matches!(b[j], b' ' | b'\t') && j - first < 64 {
                j += 1;
            }
            if j == b.len() || b[j].is_ascii_whitespace() {
                return None;
            }
            j
        }
        _ => first,
    };
    let first = tag.map_or(first, |(content, _)| content);
    // An XML element's content, after the tag's `<` only (`<password>…</password>`; not
    // `password>8`); a call's argument (`user.set_password('…')`, MySQL's `PASSWORD('…')`),
    // quoted only; a YAML block scalar's (`password: |`), indented on the next line.
    let element = opened || tag.is_some();
    // (The name the element's closing tag ends with.)
    let close_name = tag.map_or(&b[key..at], |(_, close)| close);
    // (Basic credentials as a tuple, `auth=("bob", "…")`, as requests and httpx take them:
    // its second item.)
    // (Or under credentials' names, `creds = ('admin', '…')`, review 56.)
    let tuple = ["auth", "creds", "credentials"]
        .iter()
        .any(|n| b[name..at].eq_ignore_ascii_case(n.as_bytes()))
        && credentials_tuple(&b[at..=first]);
    // (A call's `(` after blanks too, `smtp.login ("bob", …)`.)
    let open = at
        + between
            .iter()
            .take_while(|&&c| c == b' ' || c == b'\t')
            .count();
    let call = b[open] == b'(' || tuple;
    // (The value of a call whose arguments may be words: judged as a value alone.)
    let loose = tuple || (call && credential_call(&b[..at]));
    // A call whose password is a later argument (see [`password_argument`]).
    let first = match (call && !tuple)
        .then(|| password_argument(&b[..at]))
        .flatten()
    {
        // (A third string argument after a host's or a database's and an account's is the
        // password: pexpect's `pxssh.login(host, user, …)`, Odoo's `common.authenticate(db,
        // user, …, {})`.)
        // (Not after variables: `client.authenticate(user, password, "LdapRealm2024")`
        // names a realm, found by review 40 — but after a variable that names the account,
        // `s.login(host, username, "…")`.)
        Some((1, _)) if loose && logs_in(&b[..at]) => match call_argument(b, open, 1) {
            Some(second) => next_string_argument(b, second).unwrap_or(second),
            None if names_account(b, argument_start(b, open, 1)?.0) => call_argument(b, open, 2)?,
            None => return None,
        },
        // (Jedis's pool's sixth where it is a string, or a variable named for a password:
        // the fifth is the account's — review 60. The fifth first, and the sixth read right
        // after its string: a run of such calls read each one's arguments to the next
        // calls' — review 61.)
        // (Or the fourth where it is a string and the fifth none: `new JedisPool(host,
        // port, user, "…")`, `JedisSentinelPool(master, sentinels, config, "…")`, `…, "…",
        // true)`.)
        Some((4, _)) => match call_argument(b, open, 4) {
            Some(fifth) => {
                let close = memchr::memchr(b[fifth - 1], &b[fifth..b.len().min(fifth + 256)]);
                match close.map(|k| past_white(b, fifth + k + 1, 64)) {
                    Some(comma) if b.get(comma) == Some(&b',') => {
                        let sixth = past_white(b, comma + 1, 64);
                        let name = b[sixth..]
                            .iter()
                            .take(64)
                            .take_while(|c| c.is_ascii_alphanumeric() || **c == b'_')
                            .count();
                        let named = std::str::from_utf8(&b[sixth..sixth + name]);
                        match string_start(b, sixth, b.len()) {
                            Some(sixth) => sixth,
                            None if named.is_ok_and(names_a_secret) => return None,
                            None => fifth,
                        }
                    }
                    _ => fifth,
                }
            }
            None => call_argument(b, open, 3)?,
        },
        // (The first where the call has no such argument: not where it has one that is no
        // string, `keyring.set_password("svc", "bob", pw)`.)
        // (Or where the later one is a callback: node-redis's `client.auth("…", cb)`.)
        Some((k, alone)) => match argument_start(b, open, k) {
            Some((arg, end)) => match string_argument(b, arg, end) {
                Some(argument) => argument,
                None if alone && callback_at(b, arg) => first,
                None => return None,
            },
            None if alone && first_alone(&b[..at]) => first,
            None => return None,
        },
        None if tuple => call_argument(b, first, 1)?,
        None => first,
    };
    // (A literal block scalar's `|` is read as the value's first character: the block's
    // first line holds the value.)
    // (After a YAML node's anchor or tag, `password: !!str |`: the value that follows.)
    let properties = match tag {
        Some(_) => None,
        None => after_properties(b, first, between),
    };
    // (A plain string's tag with no value after it on the line names none.)
    let bare_tag = [&b"!!str"[..], b"!!binary"].into_iter().any(|t| {
        b[first..].starts_with(t) && b.get(first + t.len()).is_none_or(u8::is_ascii_whitespace)
    });
    if properties.is_none()
        && tag.is_none()
        && bare_tag
        && !matches!(b[first - 1], b'"' | b'\'')
        && memchr::memchr(b':', between).is_some()
    {
        return None;
    }
    let literal = match (tag, properties) {
        (Some(_), _) | (_, Some((_, false))) => None,
        (None, Some((content, true))) => Some(content),
        (None, None) => block_start(b, first, between),
    };
    let first = match properties {
        Some((value, false)) => value,
        _ => literal.unwrap_or(first),
    };
    let block = literal.is_some()
        || (!element
            && memchr::memchr(b'\n', between).is_some()
            && memchr::memchr(b'>', between).is_some());
    if (opened && !element_open(&b[..key]))
        || (call && !matches!(b[first - 1], b'"' | b'\'' | b'`'))
        || (block && !block_indented(b, key, first))
    {
        return None;
    }
    // (An element's content or a block's line is judged by its words, not as a phrase:
    // `<token>Expires in 3600 seconds</token>` is prose. An attribute pair's or a name and
    // value pair's `value` holds nothing else.)
    // (A Wi-Fi network's key set may be a passphrase of words: `psk="correct horse
    // battery"`.)
    let strong = sql
        || (b[name..at].eq_ignore_ascii_case(b"psk")
            && between.iter().any(|c| matches!(c, b'=' | b':')))
        || comma
        || setter.is_some()
        || (call && !loose)
        || pair_value(between)
        || (memchr::memchr(b']', between).is_some() && !fallback);
    let before_key = key.checked_sub(1).map(|i| b[i]);
    // The opening quote, if any: the byte before the value's first character.
    // (A backtick opens a call's template literal: keytar's `setPassword(…, `…`)`; one
    // that puts a variable in, `${…}`, holds no password written out.)
    let quote = match b[first - 1] {
        q @ (b'"' | b'\'') if first > at => Some(q),
        b'`' if call && first > at => {
            let line = &b[first..b.len().min(first + 256)];
            let close = memchr::memchr2(b'`', b'\n', line).unwrap_or(line.len());
            if memchr::memmem::find(&line[..close], b"${").is_some() {
                return None;
            }
            Some(b'`')
        }
        _ => None,
    };
    // A quote that closes a string (`"Password:", pw`) rather than opens a value.
    if quote.is_some()
        && matches!(
            b[first],
            b')' | b',' | b';' | b']' | b'}' | b'+' | b'.' | b'%'
        )
    {
        return None;
    }
    // An ODBC connection string's braced value (`Pwd={S3cr;et}`), right after an `=` —
    // not credentials' dictionary of items, `creds = {'user': 'admin'}` (review 56), whose
    // password is its own field's; under a secret's name such items are taken whole
    // (`SECRET={"k":"…"}`, review 57).
    let items = || {
        matches!(
            b.get(first + 1),
            Some(b'"' | b'\'' | b' ' | b'\t' | b'\r' | b'\n')
        ) && ["credentials", "creds"]
            .iter()
            .any(|n| b[name..at].eq_ignore_ascii_case(n.as_bytes()))
    };
    if quote.is_none()
        && b[first] == b'{'
        && !items()
        && tag.is_none()
        && setter.is_none()
        && between.contains(&b'=')
        && between.iter().all(|c| matches!(c, b' ' | b'\t' | b'='))
    {
        return braced_value(text, first);
    }
    let escapes = match quote {
        Some(_) => b[at..first - 1]
            .iter()
            .rev()
            .take_while(|&&c| c == b'\\')
            .count(),
        None => 0,
    };
    let line_start =
        matches!(before_key, None | Some(b'\n' | b'\r')) || b[..key].ends_with(b"export ");
    let env_line = quote.is_none() && line_start && b[at] == b'=';
    // A bare value's length. A command's argument runs to a blank not escaped (cmd's `;`,
    // `,` and `^&` are part of it; a statement's end after it is redacted with it), a
    // character a `\` escapes inside (fish's and bash's `S3cr\ et`, `\$`), or a quote or
    // a backtick (escaped or not), which closes the string or the code the command stands
    // in (`"command": "setx … S3cret9"`, `` `git config … S3cret9` ``).
    // (An environment file's line runs to a blank.) (Any bare value stops at a control
    // character: `/proc/…/environ`'s NULs between its variables.)
    let bare_len = |r: &[u8]| {
        let r = &r[..r
            .iter()
            .position(|c| c.is_ascii_control() && !c.is_ascii_whitespace())
            .unwrap_or(r.len())];
        match setter {
            None if env_line => {
                unspaced_cut(&r[..r.iter().take_while(|c| !c.is_ascii_whitespace()).count()])
            }
            None => unspaced_cut(&r[..marked_len(r, true)]),
            Some(_) => {
                let quote = |c: Option<&u8>| matches!(c, Some(b'"' | b'\'' | b'`'));
                let mut i = 0;
                while i < r.len() && !r[i].is_ascii_whitespace() && !quote(r.get(i)) {
                    if r[i] == b'\\' {
                        match r.get(i + 1) {
                            Some(c) if !c.is_ascii_whitespace() || *c == b' ' => {
                                // (Not a quote, nor a JSON string's escaped line break.)
                                if quote(Some(c)) || matches!(c, b'n' | b'r' | b't') {
                                    break;
                                }
                                i += 1;
                            }
                            _ => break,
                        }
                    }
                    i += 1;
                }
                unspaced_cut(&r[..i.min(r.len())])
            }
        }
    };
    // A quoted value's closing quote (the one after as many backslashes as the opening
    // one; not one doubled or after PowerShell's backtick: see `quote_inside`), or the
    // line's end: its length then.
    let close_in = |r: &[u8], q: u8| {
        let mut i = 0;
        while i < r.len() {
            match r[i] {
                b'\n' | b'\r' => return Some(i),
                c if c == q && quote_inside(r, i, escapes) > 0 => {
                    i += quote_inside(r, i, escapes) - 1;
                }
                c if c == q => {
                    let slashes = r[..i].iter().rev().take_while(|&&c| c == b'\\').count();
                    if slashes == escapes {
                        return Some(i - escapes);
                    }
                }
                _ => {}
            }
            i += 1;
        }
        None
    };
    // The value is judged on its first NAMED_VALUE_MAX bytes; one that passes is taken whole
    // (up to AUTH_TOKEN_MAX), read only then — so a run of fields that fail is read a
    // bounded length each, and a long value (a key, a JWT) is never cut.
    //
    // A value ends, too, where the field comes again, its name and a separator
    // (`password=x@y.password=x@y.…`: fields glued in a row, each its own; the name alone
    // may be part of a secret, `Pwd=AdminPwd2024`) — else
    // each field inside a value taken whole would be read whole again as it grows the
    // detection, 16 KiB each.
    // (Not a call's name, `.login`, which no separator follows: read for at every `.`, a
    // run of unclosed calls read each value's window at each.)
    let own = &b[name..at];
    let again = |r: &[u8]| {
        if loose {
            return r.len();
        }
        memchr::memchr_iter(own[0], r)
            .find(|&i| {
                i > 0
                    && r[i..].starts_with(own)
                    && match r.get(i + own.len()) {
                        Some(b'=' | b':' | b'"' | b'\'') => true,
                        // (An index's, `x[pw]="[pw]="…`.)
                        Some(b']') => r.get(i + own.len() + 1) == Some(&b'='),
                        _ => false,
                    }
            })
            .unwrap_or(r.len())
    };
    // (A bare value ends, too, where another field named for a secret is glued on: see
    // [`glued_field`] — searched only up to where the name comes again, itself such a
    // field after its separator: `pwd=x,pwd=x,…` asked each value for one.)
    let own_or_glued = |r: &[u8]| {
        let cut = again(r);
        if quote.is_some() {
            return cut;
        }
        match glued_field(&r[..cut]) {
            glued if glued < cut => glued,
            _ if cut > 0 && cut < r.len() && list_separator(r[cut - 1]) => cut - 1,
            _ => cut,
        }
    };
    let limit = ceil_char_boundary(text, first.saturating_add(NAMED_VALUE_MAX));
    // (The name is looked for again only as far as the value may read: a bare one ends at
    // white space (a command's argument goes on past an escaped blank, Dockerfile's `ENV`
    // line to the line's end), a quoted one at its line's end. A run of short setters,
    // `wpa-psk x⏎`, read 256 bytes each, 4.6x slower than the bench text.)
    let whole = &b[first..limit];
    let reach = match (quote, setter) {
        (Some(_), _) | (None, Some(BlankSetter::Line)) => memchr::memchr2(b'\n', b'\r', whole),
        (None, None) => memchr::memchr3(b' ', b'\t', b'\n', whole),
        (None, Some(_)) => memchr::memchr3_iter(b' ', b'\t', b'\n', whole)
            .find(|&i| !(whole[i] == b' ' && i > 0 && whole[i - 1] == b'\\')),
    }
    // (Past it by the name's length: `IDENTIFIED BY`, a name with a blank, may start
    // before it and end after.)
    .map_or(whole.len(), |i| whole.len().min(i + 1 + own.len() + 1));
    let quoted = quote.is_some();
    if (setter == Some(BlankSetter::Line) || element || block) && !quoted {
        // A bare value that blanks do not end: the rest of the line after Dockerfile's older
        // `ENV NAME value` (judged whole, as a quoted one is), an XML element's content up
        // to its closing tag, a YAML block scalar's first line (and the block's other lines,
        // indented as far, taken with it) — these two judged by their words.
        let limit = ceil_char_boundary(text, first.saturating_add(AUTH_TOKEN_MAX));
        // (An element's content ends at its closing tag, the element's own — not a generic
        // type's, `Vec<Secret>=x;</pre>` — searched to the first `<`: each element in a run
        // has one, so a run is not read to its end from each. Content that ends its line
        // before any `<`, or the text, is the element's too: a log's line or a tool's output
        // cut off before the closing tag, `<password>S3cret9⏎`.)
        let (first, end) = match element {
            true if !b[first..].starts_with(b"<![CDATA[") => {
                let lt = memchr::memchr(b'<', &b[first..limit]).map(|i| first + i);
                let line = memchr::memchr2(b'\n', b'\r', &b[first..lt.unwrap_or(limit)]);
                // (Not a tag quoted as a placeholder, `` `<api_key>`; never… ``: its code
                // span or punctuation right after it.)
                let placeholder = b[..key].ends_with(b"`<")
                    || matches!(b[first], b'`' | b';' | b',' | b'.' | b')' | b']' | b'}');
                match (line, lt) {
                    (Some(_), _) | (None, None) if placeholder => return None,
                    (Some(i), _) => (first, first + i),
                    (None, None) if limit == b.len() => (first, limit),
                    (None, None) => return None,
                    (None, Some(close)) => {
                        if !closes_element(&b[close..], close_name) {
                            return None;
                        }
                        (first, close)
                    }
                }
            }
            true => {
                let from = first + 9;
                let close = from + memchr::memmem::find(&b[from..limit.max(from)], b"]]>")?;
                let tag = close + 3 + memchr::memchr(b'<', &b[close + 3..limit])?;
                if !closes_element(&b[tag..], close_name) {
                    return None;
                }
                (from, close)
            }
            false => (
                first,
                memchr::memchr2(b'\n', b'\r', &b[first..limit]).map_or(limit, |i| first + i),
            ),
        };
        let value = text[first..end].trim_end();
        // An element's content or a block's first line holds a secret where one of its words
        // is one (`P@ss w0rd!`, `S3cret9 # rotated`), numbers and names with a version
        // (`OAuth2`, `UTF-8`) apart from one alone: prose there is no secret (`<token>Expires
        // in 3600 seconds</token>`, `<param name="token">OAuth2 token</param>`), nor a
        // passphrase of words alone (`correct horse battery`), nor a template's placeholder
        // (see [`content_placeholder`]).
        let judged = match element || block {
            true => words_hold_secret(value, false),
            false => secret_argument(value, true, None),
        };
        if !judged || short_for_a_token(&b[key..at], value) || no_secret_name(&b[key..at], value) {
            return None;
        }
        return Some((
            first,
            block_end(text, first, first + value.len(), limit, block),
        ));
    }
    // (Only now: an element's content ends at its first `<`, which the name again never
    // comes before — `<pwd><pwd>…` read 256 bytes for it at each, 11x the bench text.)
    let cut = own_or_glued(&whole[..reach]);
    let rest = match cut < reach {
        true => &whole[..cut],
        false => whole,
    };
    let len = match quote {
        Some(q) => close_in(rest, q).unwrap_or(rest.len()),
        None => bare_len(rest),
    };
    // (A one-time password's key as an authenticator app shows it to be typed, in groups:
    // `secret key: JBSW Y3DP EHPK 3PXP` — see [`base32_groups`].)
    if let Some(n) = base32_groups(&whole[..whole.len().min(len + BASE32_GROUPS_MAX)])
        && n >= len
        && quote.is_none_or(|q| whole.get(n) == Some(&q))
        && !no_secret_name(&b[key..at], &text[first..first + n])
    {
        return Some((first, first + n));
    }
    // (Credentials' account and password set apart by a slash, `credentials: admin /
    // Xk9…`: the pair, judged as `admin:Xk9…` is, by its name — see `no_secret_name`.)
    // (Only where they are a pair: else the value alone is judged, as before — review 58.)
    let pair = |n: usize| {
        credentials_named(&b[key..at])
            && text.get(first..first + n).is_some_and(account_and_password)
    };
    let apart = match quote {
        None => password_apart(&rest[..len], &rest[len..], &bare_len).filter(|&n| pair(len + n)),
        Some(_) => None,
    };
    let len = len + apart.unwrap_or(0);
    // Whether the value `len` long is a secret.
    let judge = |len: usize| {
        // (Part of `text`: whole characters when both ends are on their boundaries.)
        let Some(value) = text.get(first..first + len) else {
            return false;
        };
        let next = rest.get(len).copied();
        // (A phrase's closing quote ends a string: no letter or digit is glued after it.)
        let closed = quoted && !is_alnum(b.get(first + len + 1).copied());
        // (A command's bare argument with a blank escaped in it, `S3cr\ et9`, is a phrase.)
        let phrase = closed || (setter.is_some() && !quoted && value.contains("\\ "));
        let passes = match (strong && phrase) || (loose && quoted && app_password(value)) {
            // (Quoted whole too, `"admin / Xk9…"`.)
            _ if apart.is_some() || (quoted && value.contains('/') && pair(len)) => true,
            true => secret_argument(value, true, next),
            false => secret_value(value, quoted, next),
        };
        passes
            && !short_for_a_token(&b[key..at], value)
            && !no_secret_name(&b[key..at], value)
            && (!sql || sql_statement(b, name))
            && !logprobs_after(b, &b[key..at], first + len)
    };
    let len = match judge(len) {
        true => len,
        // (A mark read into the value that makes it none, `Xk9…&x9(sample)9`: the value up
        // to its first mark, as every release read it — review 59.)
        // (First where the marks read before `;`, `,`, a backslash or a bracket at the
        // end were read ended it, `Tr0ub4dor&3;x9(sample)`: review 62.)
        false if quote.is_none() && setter.is_none() && !env_line && apart.is_none() => {
            let older = unspaced_cut(&rest[..marked_len(rest, false)]).min(len);
            let marked = rest[..len]
                .iter()
                .position(|c| OWN_MARKS.contains(c))
                .unwrap_or(len);
            match () {
                _ if older < len && judge(older) => older,
                _ if marked < older && judge(marked) => marked,
                _ => return None,
            }
        }
        false => return None,
    };
    // (More pairs after a pair, a list's, `credentials: admin:Xk9…, guest:Hq7…`: each
    // read as the first is, up to the first item that is none — within the value's window.)
    let len = match quote.is_none() && (apart.is_some() || pair(len)) {
        true => more_pairs(rest, len, first + rest.len() == b.len(), &bare_len),
        false => len,
    };
    if len < rest.len() || limit == b.len() || first + len < limit {
        return Some((first, first + len));
    }
    let whole = &b[first..ceil_char_boundary(text, first.saturating_add(AUTH_TOKEN_MAX))];
    let judged = len;
    let len = match quote {
        Some(q) => close_in(whole, q).unwrap_or(whole.len()),
        // (Never shorter than what passed: a run that holds no letter, read whole up to a
        // script written without blanks glued after it — `0€…€日`, found by the property
        // tests — ends before that script, not at its start (an empty span, a panic).)
        None => match bare_len(whole) {
            // (A pair's password read on, `admin / …` past the window.)
            whole_len if apart.is_some() => {
                whole_len
                    + password_apart(&whole[..whole_len], &whole[whole_len..], &bare_len)
                        .unwrap_or(0)
            }
            whole_len if whole_len >= judged => whole_len,
            _ => text[first..first + whole.len()]
                .char_indices()
                .find(|&(_, c)| unspaced_script(c))
                .map_or(judged, |(i, _)| i.max(judged)),
        },
    };
    Some((first, first + len.min(own_or_glued(&whole[..len]))))
}

/// Whether `rest` starts with the closing tag of an element named `name` (a prefix before
/// it, `</wsse:Password>`; blanks before its `>`, or none where HTML's escape lost its
/// `;`: `&lt;/password&gt`).
fn closes_element(rest: &[u8], name: &[u8]) -> bool {
    let Some(closing) = rest.strip_prefix(b"</") else {
        return false;
    };
    let len = closing
        .iter()
        .take(96)
        .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-' | b'.' | b':'))
        .count();
    // (Or cut off inside its name, `</passw` at the text's end or before what the cut
    // left, `</passw…(truncated)`: a tool's output cut short — not a tag closed, `</pass>`.)
    let cut = closing[..len]
        .iter()
        .rposition(|&c| c != b'.')
        .map_or(0, |i| i + 1);
    closing[..len].ends_with(name)
        || (cut > 0 && name.starts_with(&closing[..cut]) && closing.get(len) != Some(&b'>'))
}

/// Whether an element's content, a block's first line or a table's cell holds a secret: one
/// of its words is one (`P@ss w0rd!`, `S3cret9 # rotated`), numbers and names with a version
/// (`OAuth2`, `UTF-8`) apart from one alone. Prose holds none (`<token>Expires in 3600
/// seconds</token>`, `<param name="token">OAuth2 token</param>`), nor a passphrase of words
/// alone (`correct horse battery`), nor a template's placeholder (see
/// [`content_placeholder`]).
fn words_hold_secret(value: &str, cell: bool) -> bool {
    // (A table's cell holds a column's word as often as a value: a lone number or a name
    // with a version there is none, `| Password | Argon2 |`, `| API Key | 1,234 |`.)
    let alone = !cell && !value.bytes().any(|c| c.is_ascii_whitespace());
    // (A cell's code: a path, `proc_macro2::TokenStream`; a call with its arguments,
    // `bcrypt(cost=12)`; a reference, `vault:secret/data/prod#db`.)
    let code = |w: &str| {
        cell && (w.contains("::")
            || (w.contains('(') && w.contains('=') && w.ends_with(')'))
            || w.split_once(':').is_some_and(|(scheme, rest)| {
                scheme.len() >= 2
                    && scheme.bytes().all(|c| c.is_ascii_lowercase())
                    && rest.contains('/')
            }))
    };
    !content_placeholder(value)
        && value.split_ascii_whitespace().any(|w| {
            !no_value_word(w)
                && !code(w)
                && secret_value(w, true, None)
                && (alone
                    || !(w
                        .bytes()
                        .all(|c| c.is_ascii_digit() || c == b'.' || c == b',')
                        || versioned_term(w)))
        })
}

/// How a field's name and its value stand side by side in a table's cells.
#[derive(Clone, Copy)]
enum Cells {
    /// Markdown's `| DB_PASSWORD | S3cret9 |` (either cell's content emphasised or a code
    /// span: `| **Password** | `S3cret9` |`).
    Markdown,
    /// HTML's `<td>DB_PASSWORD</td><td>S3cret9</td>` (either cell a `<th>`; a definition
    /// list's `<dt>` and `<dd>`; an inline element inside either, `<code>`, `<b>`).
    Html,
}

/// Whether what the trigger read between a name and its value (`between`) closes an HTML
/// table's or definition list's cell and opens the next (`</td><td>`, `</TH>⏎  <td>`,
/// `</dt><dd>`).
fn html_cells(between: &[u8]) -> bool {
    // (A byte at a time: what stands between a name and its value is a few bytes, and a
    // substring searcher's setup cost more than the reading, every field's candidate.)
    (0..between.len().saturating_sub(3)).any(|i| {
        let tag = &between[i..];
        tag[0] == b'<' && tag[1] == b'/' && cell_tag(&tag[2..], b"dt")
    })
}

/// Whether `tag` (past its `<` or `</`) names a table's cell, `td` or `th` in any case, or
/// a definition list's `list` one (`dt` for a name's, `dd` for a value's).
fn cell_tag(tag: &[u8], list: &[u8; 2]) -> bool {
    tag.len() >= 2
        && ((tag[0] | 0x20 == b't' && matches!(tag[1] | 0x20, b'd' | b'h'))
            || tag.starts_with(list))
}

/// An inline element's opening tag at the end of `before` (`<code>`, `<b>`, `<strong>`,
/// `<em>`, `<span …>`), left out.
fn without_inline_open(before: &[u8]) -> &[u8] {
    let Some(open) = memchr::memrchr(b'<', before) else {
        return before;
    };
    let tag = &before[open + 1..];
    let name = tag.iter().take_while(|c| c.is_ascii_alphabetic()).count();
    let inline = matches!(&tag[..name], b"code" | b"b" | b"strong" | b"em" | b"span");
    match inline && tag.ends_with(b">") && memchr::memchr(b'>', tag) == Some(tag.len() - 1) {
        true => &before[..open],
        false => before,
    }
}

/// Whether the name at `key..at` and the value at `first` stand in a table's cells, side by
/// side: what the trigger read between them (`at..first`) ends one cell and opens the next,
/// and the name's cell opens before it — right before it in HTML (`<td>`, `<th>`, `<dt>`,
/// an inline element's tag inside), after a label's other words in Markdown (`| Admin
/// Password | …`, `| 🔑 **API Token** | …`) on a row that opens with a pipe (a shell's
/// pipeline does not: `cat f | grep password | base64`).
fn table_cells(b: &[u8], key: usize, at: usize, first: usize) -> Option<Cells> {
    let between = &b[at..first];
    if !between.iter().any(|&c| c == b'|' || c == b'<') {
        return None;
    }
    let before = &b[key.saturating_sub(256)..key];
    if html_cells(between) {
        let before = without_inline_open(before);
        let open = memchr::memrchr(b'<', before)?;
        let tag = &before[open + 1..];
        let cell = tag.len() >= 3
            && cell_tag(tag, b"dt")
            && matches!(tag[2], b'>' | b' ' | b'\t')
            && memchr::memchr(b'>', tag) == Some(tag.len() - 1);
        return cell.then_some(Cells::Html);
    }
    let decor = |c: &u8| matches!(c, b' ' | b'\t' | b'*' | b'_' | b'`');
    let pipe = between.iter().filter(|&&c| c == b'|').count() == 1
        && between.iter().all(|c| decor(c) || *c == b'|');
    if !pipe {
        return None;
    }
    // The name's cell: a label's words (letters, digits, blanks, emphasis, a symbol's
    // bytes) back to its pipe, which opens the row or follows another cell on it.
    let line = memchr::memrchr2(b'\n', b'\r', before).map_or(0, |i| i + 1);
    let cell = memchr::memrchr(b'|', &before[line..]).map(|i| line + i)?;
    let label = before[cell + 1..].iter().all(|&c| {
        c.is_ascii_alphanumeric() || decor(&c) || matches!(c, b'-' | b'(' | b')') || c >= 0x80
    });
    let row = before[line..].trim_ascii_start().first() == Some(&b'|');
    (label && row && before.len() - cell <= 64).then_some(Cells::Markdown)
}

/// The value in a table's cell after its name's (see [`table_cells`]): the cell's content
/// (to its pipe not escaped, `\|`; to the cell's closing tag past an inline element's and
/// a `<br>`), its emphasis or code span left out, judged by its words (see
/// [`words_hold_secret`]) — a schema's or a description's column holds none (`| password
/// | string |`, `| API_KEY | Your key from the console |`, `| Password | OAuth2 |`).
fn cell_secret(
    text: &str,
    key: usize,
    at: usize,
    first: usize,
    cells: Cells,
) -> Option<(usize, usize)> {
    let b = text.as_bytes();
    let limit = ceil_char_boundary(text, first.saturating_add(AUTH_TOKEN_MAX));
    let end = match cells {
        Cells::Markdown => memchr::memchr3_iter(b'|', b'\n', b'\r', &b[first..limit])
            .map(|i| first + i)
            .find(|&i| b[i] != b'|' || b[i - 1] != b'\\')
            .unwrap_or(limit),
        Cells::Html => {
            let close = first + memchr::memchr(b'<', &b[first..limit])?;
            let mut rest = &b[close..];
            for _ in 0..4 {
                rest = rest.trim_ascii_start();
                let Some(tag) = rest.strip_prefix(b"<") else {
                    break;
                };
                let name = tag.strip_prefix(b"/").unwrap_or(tag);
                let len = name.iter().take_while(|c| c.is_ascii_alphabetic()).count();
                let skip = match &name[..len] {
                    b"code" | b"b" | b"strong" | b"em" | b"span" => tag.starts_with(b"/"),
                    b"br" => true,
                    _ => false,
                };
                if !skip {
                    break;
                }
                let gt = memchr::memchr(b'>', &rest[..rest.len().min(64)])?;
                rest = &rest[gt + 1..];
            }
            if !rest
                .strip_prefix(b"</")
                .is_some_and(|tag| cell_tag(tag, b"dd"))
            {
                return None;
            }
            close
        }
    };
    let content = text.get(first..end)?;
    let content = content.trim_end().trim_end_matches(['*', '`']);
    let value = content.trim_start_matches(['*', '`']);
    let start = first + (content.len() - value.len());
    cell_holds_secret(&b[key..at], value).then_some((start, start + value.len()))
}

/// Whether a table's cell (`value`, its content) holds a secret under the name or header
/// label `name`: judged by its words, a cell's way (see [`words_hold_secret`]), and not
/// too short for a token, nor under a name that holds none (`page_token`).
fn cell_holds_secret(name: &[u8], value: &str) -> bool {
    !value.is_empty()
        && words_hold_secret(value, true)
        && !short_for_a_token(name, value)
        && !no_secret_name(name, value)
}

/// How many rows above a table's row are read for its header (see [`table_row_secret`]):
/// a row further down than this from its table's alignment row is not read.
const TABLE_ROWS_BACK: usize = 64;

/// The most bytes a table's row, and the rows above it read for its header, may take.
const TABLE_BYTES: usize = 16 << 10;

/// Where a Markdown table's row starts at or after `from` (before `to`): a line's first
/// `|` — from the line's start, whether blanks, block quotes' `>` and bullets or a first
/// cell stand before it (a row without its outer pipes, see [`bare_row_start`]) — or a
/// `|` that is the first character of a quoted string but for up to [`ROW_INDENT`] of
/// those (see [`row_start`]); or an HTML table's, at its `<tr>`; or, at a line's start,
/// what opens a table aligned with blanks (see [`spaced_trigger`]) or the next row of the
/// one being read (`freed.spaced_next`, see [`spaced_row_secret`]). The trigger of
/// [`table_row_secret`], read by hand (a `|` or `<` is searched for with `memchr`, the
/// lines that may open a table aligned with blanks with a prefilter, see
/// [`spaced_opener`]; a row's line's start is found back from a `|`).
pub(super) fn table_row_at(
    text: &str,
    from: usize,
    to: usize,
    freed: &Freed,
    _: Option<&MetaRegex>,
) -> Option<(usize, usize)> {
    let b = text.as_bytes();
    // (The next row of a table aligned with blanks, if one is being read: where it
    // starts; past that, on its line — a value found at the row's start, an address in
    // its first cell — where its secrets start, or `from` if inside them; else the first
    // line's start from `from` on.)
    let row = freed.spaced_next.get().and_then(|next| {
        let next_line = || Some(from + memchr::memchr(b'\n', &b[from..to])? + 1);
        let r = if next >= from {
            next
        } else if b[from - 1] == b'\n' {
            from
        } else if memchr::memchr(b'\n', &b[next..from]).is_none() {
            match spaced_row_cells(text, next, freed) {
                Some((a, _)) if a >= from => a,
                Some((_, z)) if z > from => from,
                _ => next_line()?,
            }
        } else {
            next_line()?
        };
        (r < to).then_some(r)
    });
    // (Or a line that may open one: its rule, or a data frame's first row.)
    let opener = spaced_opener(b, from, freed).filter(|&o| o < to);
    let next = row.into_iter().chain(opener).min();
    let to = next.unwrap_or(to);
    let found = memchr::memchr2_iter(b'|', b'<', &b[from..to])
        .map(|i| from + i)
        .find_map(|p| {
            // (An HTML table's row: `<tr` and a blank or its `>`, in any case, within
            // `from..to`.)
            if b[p] == b'<' {
                return (p + 4 <= to && html_tag(&b[p + 1..], b"tr")).then_some((p, p + 4));
            }
            // (The regex's match, within `from..to`: from the line's start,
            // `(?m:^)[ \t>#/*-]{0,24}\|` or `(?m:^)[^\r\n|]{1,1024}\|` — the leftmost —
            // or from the quote, `["'`][ \t>#/*-]{0,24}\|`.)
            if let Some(line) = bare_row_start(b, p).filter(|&l| l >= from) {
                return Some((line, p + 1));
            }
            let line = row_start(b, p)?;
            let start = match line.checked_sub(1).map(|i| b[i]) {
                Some(b'"' | b'\'' | b'`') => line - 1,
                _ => line,
            };
            (start >= from).then_some((start, p + 1))
        });
    found.or(next.map(|r| (r, r + 1)))
}

/// The first line's start at or after `from` that may open a table aligned with blanks
/// (see [`spaced_trigger`]), if any — remembered in `freed.spaced_opener` with where the
/// search started, so that each stretch is searched once however often the pass asks
/// (from a later place before the line, or from one before where it started: then only
/// the stretch between).
fn spaced_opener(b: &[u8], from: usize, freed: &Freed) -> Option<usize> {
    let search = |from: usize, to: usize| first_opener(b, from, to, spaced_opens());
    // (`b.len() + 1`: none.)
    let none = b.len() + 1;
    let o = match freed.spaced_opener.get() {
        Some((a, o)) if a <= from && from <= o => o,
        Some((a, o)) if from < a => match search(from, a) {
            Some(x) => return Some(x),
            None => o,
        },
        _ => search(from, b.len()).unwrap_or(none),
    };
    freed.spaced_opener.set(Some((from, o)));
    (o < none).then_some(o)
}

/// The secrets of the row of the table aligned with blanks being read that starts at
/// `row` (see [`spaced_cells`]): read once per row (`freed.spaced_row`), however often the
/// search asks from inside it.
fn spaced_row_cells(text: &str, row: usize, freed: &Freed) -> Option<(usize, usize)> {
    if let Some((r, found)) = freed.spaced_row.get()
        && r == row
    {
        return found;
    }
    let table = freed.spaced.get()?;
    let b = text.as_bytes();
    let line = &b[row..line_end(b, row)];
    let found = (table.fits(line) && rule_columns(line).is_none())
        .then(|| spaced_cells(text, row, line, &table, row))
        .flatten();
    freed.spaced_row.set(Some((row, found)));
    found
}

/// What finds the lines that may open a table aligned with blanks (see
/// [`first_opener`]): a line break and the first bytes of one (a rule's first dashes or
/// `=`, a frame's index and its blank), whose literals one walk of a SIMD prefilter finds.
/// `None` if it did not build (it does: tested).
fn spaced_opens() -> Option<&'static regex_automata::meta::Regex> {
    static OPENS: OnceLock<Option<regex_automata::meta::Regex>> = OnceLock::new();
    OPENS
        .get_or_init(|| regex_automata::meta::Regex::new(r"\n(?:--|==|- |= |[0-9]{1,12} )").ok())
        .as_ref()
}

/// The first line's start in `from..to` that may open a table aligned with blanks (see
/// [`spaced_trigger`]): found with `opens` (see [`spaced_opens`]), or each line break
/// read without it.
fn first_opener(
    b: &[u8],
    from: usize,
    to: usize,
    opens: Option<&regex_automata::meta::Regex>,
) -> Option<usize> {
    if (from == 0 || b[from - 1] == b'\n') && from < to && spaced_trigger(b, from) {
        return Some(from);
    }
    match opens {
        // (A match, of 14 bytes at most, may reach 13 past `to`.)
        Some(re) => re
            .find_iter(regex_automata::Input::new(b).range(from..b.len().min(to + 13)))
            .map(|m| m.start() + 1)
            .take_while(|&l| l < to)
            .find(|&l| spaced_trigger(b, l)),
        None => memchr::memchr_iter(b'\n', &b[from..to])
            .map(|i| from + i + 1)
            .find(|&l| l < to && spaced_trigger(b, l)),
    }
}

/// The most blanks, block quotes' `>`, list bullets and comment marks before a table's
/// first `|` on its line: rows indented in a list or a code block, quoted (`> | User |
/// Password |`), on a bullet's line (`- | User |`) or commented out (`# | User |`, `// |`).
const ROW_INDENT: usize = 24;

/// The most characters before the first `|` of a table's row without its outer pipes
/// (see [`bare_row_start`]): its first cell and the blanks about it.
const BARE_ROW_LEAD: usize = 1024;

/// Where the line starts whose first `|` is at `p`, with at most [`BARE_ROW_LEAD`]
/// characters before it: a table's row, if the table says so, with or without its leading
/// pipe — a first cell may stand before it, as psql prints its rows (` bob      |
/// Xk9vQ2mZp4Lw`) and GitHub's tables may be written (`bob | Xk9vQ2mZp4Lw`). `None` where
/// a `|` or a `\r` stands between, or the line starts further back (or not after a `\n`).
fn bare_row_start(b: &[u8], p: usize) -> Option<usize> {
    let floor = p.saturating_sub(4 * BARE_ROW_LEAD);
    let start = match b[floor..p]
        .iter()
        .rposition(|&c| matches!(c, b'|' | b'\n' | b'\r'))
    {
        Some(i) if b[floor + i] == b'\n' => floor + i + 1,
        Some(_) => return None,
        None if floor == 0 => 0,
        None => return None,
    };
    // (Characters, as the regex counts them.)
    (chars(&b[start..p]) <= BARE_ROW_LEAD).then_some(start)
}

/// Where the row whose line's first `|` is at `p` starts, and where its cells do: at that
/// `|` for a row that opens with one (see [`row_start`]: then the line's start after its
/// blanks and bullets, or its quote's), else at its line's start (see
/// [`bare_row_start`]: its first cell before the `|`).
fn row_origin(b: &[u8], p: usize) -> Option<(usize, usize)> {
    match row_start(b, p) {
        Some(line) => Some((line, p)),
        None => bare_row_start(b, p).map(|line| (line, line)),
    }
}

fn row_indent(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'>' | b'#' | b'/' | b'-' | b'*')
}

/// Where the line of a table's row starts whose first `|` is at `p`: up to [`ROW_INDENT`]
/// blanks, `>`, bullets and comment marks before it, right after a line break, the text's
/// start or a quote (or a backtick) — a table written into a string, its line breaks
/// written out (`"| User | Password |\n…"`, as a tool's raw JSON body or a log holds it;
/// folding reads them as line breaks).
fn row_start(b: &[u8], p: usize) -> Option<usize> {
    let indent = b[..p]
        .iter()
        .rev()
        .take(ROW_INDENT + 1)
        .take_while(|&&c| row_indent(c))
        .count();
    let start = p - indent;
    (indent <= ROW_INDENT
        && matches!(
            start.checked_sub(1).map(|i| b[i]),
            None | Some(b'\n' | b'"' | b'\'' | b'`')
        ))
    .then_some(start)
}

/// The cells of a Markdown table's row (`line`, from its first `|`, or from its line's
/// start where its first cell stands before that: see [`row_origin`]): each cell's
/// content, its blanks, emphasis and code span left out, as offsets into `line` — split at
/// pipes not escaped (`\|` is part of a cell).
fn row_cells(line: &[u8]) -> impl Iterator<Item = (usize, usize)> + '_ {
    // (A row may leave its last pipe out, `| db | admin | S3cret9`: its line's end closes
    // the last cell then, if anything but blanks stands there.)
    let open_end = line
        .iter()
        .rposition(|c| !c.is_ascii_whitespace())
        .filter(|&i| line[i] != b'|' || (i > 0 && line[i - 1] == b'\\'))
        .map(|_| line.len());
    let pipes = memchr::memchr_iter(b'|', line)
        .filter(|&i| i == 0 || line[i - 1] != b'\\')
        .chain(open_end);
    // (A row without its leading pipe: its first cell from the line's start, as if a pipe
    // stood right before it.)
    let mut last = (line.first() != Some(&b'|')).then_some(usize::MAX);
    pipes.filter_map(move |p| {
        let cell = last.replace(p).map(|a: usize| (a.wrapping_add(1), p));
        let (a, z) = cell?;
        let strip = |c: &u8| matches!(c, b' ' | b'\t' | b'*' | b'`');
        let a = a + line[a..z].iter().take_while(|c| strip(c)).count();
        let z = z - line[a..z].iter().rev().take_while(|c| strip(c)).count();
        Some((a, z))
    })
}

/// Whether a table's row is its alignment row (`|---|:--:|`): every cell dashes, with a
/// colon at either end.
fn alignment_row(line: &[u8]) -> Option<bool> {
    let (mut cells, mut marked) = (0, false);
    for (a, z) in row_cells(line) {
        let cell = &line[a..z];
        let dashes = cell.strip_prefix(b":").unwrap_or(cell);
        let dashes = dashes.strip_suffix(b":").unwrap_or(dashes);
        if dashes.is_empty() || !dashes.iter().all(|&c| c == b'-') {
            return None;
        }
        marked |= dashes.len() >= 3 || dashes.len() < cell.len();
        cells += 1;
    }
    (cells > 0).then_some(marked)
}

/// Whether the table's row on the line from `line` (its cells from `first`, see
/// [`row_origin`]; its end at `to`) is its table's alignment row: dashes in every cell
/// (see [`alignment_row`]), and either a cell of three dashes or one with a colon, or
/// right below the table's first row — a row of values that are a dash each further down
/// (`| - | - |`) is no alignment row, and the rows below it stay the table's. Or a
/// border with its outer pipes (see [`border_line`]) right below the table's first row.
fn alignment_at(b: &[u8], line: usize, first: usize, to: usize, floor: usize) -> bool {
    // (A border with its outer pipes, `|----+-----|`, stands where an alignment row would:
    // right below the table's first row. Further down it is a rule between rows.)
    if b[first] == b'|' && border_line(&b[first..to]) {
        return row_above(b, line, floor)
            .is_some_and(|(header, _, _)| row_above(b, header, floor).is_none());
    }
    if !alignment_bytes(&b[first..to]) {
        return false;
    }
    match alignment_row(&b[first..to]) {
        Some(true) => true,
        Some(false) => row_above(b, line, floor)
            .is_some_and(|(header, _, _)| row_above(b, header, floor).is_none()),
        None => false,
    }
}

/// The name of a secret that a table's header cell ends with (`Password`, `Admin Password`,
/// `DB_PASSWORD`, `API Key`), after a word's border — not a plural or a longer word
/// (`Passwords`, `Tokenizer`), nor `Pass` but in camel case (`adminPass`; not `Boarding
/// Pass`).
pub(super) fn header_secret(label: &[u8]) -> Option<&[u8]> {
    // (A password's name in another language, `| Passwort |`, standing as a field's does.)
    let mut local = super::patterns::LOCAL_NAMES
        .iter()
        .chain(&super::patterns::ADDED_NAMES);
    if let Some(n) = local.find(|n| {
        label.strip_suffix(n.as_bytes()).is_some_and(|before| {
            std::str::from_utf8(before)
                .is_ok_and(|b| super::patterns::local_name_stands(n, b.chars().next_back()))
        })
    }) {
        return Some(&label[label.len() - n.len()..]);
    }
    // (Every name ends with one of these, in any case: most labels are turned away here.)
    if !ends_as_a_name(label) {
        return None;
    }
    // (AWS's secret key under its label, `Secret Access Key`.)
    const AWS: &[u8] = b"secret access key";
    if label.len() >= AWS.len() && label[label.len() - AWS.len()..].eq_ignore_ascii_case(AWS) {
        return Some(&label[label.len() - AWS.len()..]);
    }
    // (Not a name that is a common word too: a test's `| Pass |`, a method's `| Auth |`.)
    // (The label's ends first: the common words' list asked of every name read 5x the
    // bench text in a run of `echo $password echo $api_key …`, review 92.)
    super::patterns::SECRET_NAMES
        .iter()
        .filter(|n| label.ends_with(n.as_bytes()))
        .filter(|n| !super::patterns::WORD_NAMES.contains(n))
        .map(|n| n.as_bytes())
        .find(|n| {
            let before = label.len() - n.len();
            match (before.checked_sub(1).map(|i| label[i]), *n == b"Pass") {
                (Some(c), true) => c.is_ascii_lowercase(),
                (None, true) => false,
                (None, false) => true,
                // (AWS's value's names only whole or after a separator: CloudFormation's
                // `GenerateSecretString` is a setting, not the value.)
                // (A name that starts with its `_` is its own border: `admin_pass`.)
                (Some(c), false) => {
                    n[0] == b'_'
                        || !c.is_ascii_alphanumeric()
                        || (c.is_ascii_lowercase()
                            && n[0].is_ascii_uppercase()
                            && !matches!(*n, b"SecretString" | b"SecretBinary"))
                }
            }
        })
}

/// Whether a table's line (from its first `|`) is its alignment row as far as its bytes
/// tell (`|---|:--:|`: pipes, dashes, colons and blanks; a dash among them) — read a byte
/// at a time, so a row of values stops at its first letter (see [`alignment_row`] for its
/// cells).
fn alignment_bytes(line: &[u8]) -> bool {
    line.iter()
        .all(|c| matches!(c, b'|' | b'-' | b':' | b' ' | b'\t'))
        && line.contains(&b'-')
}

/// The table's row on the line above the one that starts at `line` (not before `floor`):
/// its line's start (after its quote, for a string's first line), where its cells start
/// (see [`row_origin`]) and its end (before its line break) — `None` where that line is
/// no table's row, or none is above (a string's first line).
fn row_above(b: &[u8], line: usize, floor: usize) -> Option<(usize, usize, usize)> {
    let (a, to) = line_above(b, line, floor)?;
    // (Its first `|`, which must start a row: past blanks and `>`, or a quote, or its
    // first cell.)
    let first = a + memchr::memchr(b'|', &b[a..to])?;
    let (line, origin) = row_origin(b, first)?;
    Some((line, origin, to))
}

/// The line above the one that starts at `line` (after a line break; not before `floor`):
/// its start and its end (before its line break).
fn line_above(b: &[u8], line: usize, floor: usize) -> Option<(usize, usize)> {
    let brk = line.checked_sub(1).filter(|&i| b[i] == b'\n')?;
    let to = brk - usize::from(brk > 0 && b[brk - 1] == b'\r');
    let a = match memchr::memrchr(b'\n', &b[floor.min(to)..to]) {
        Some(i) => floor + i + 1,
        None if floor == 0 => 0,
        None => return None,
    };
    Some((a, to))
}

/// Whether a line is the border a database client draws below a table's header (MySQL's
/// `+----------+-----------+`, psql's `----------+-----------`, tabulate's `psql` and
/// `orgtbl` formats' `|----+-----|`): `+`, `-` and `=` only past blanks (and a pipe at
/// either end), a `+` among them, at least three dashes (or `=`) before a `+` or after
/// the last.
fn border_line(line: &[u8]) -> bool {
    let l = line.trim_ascii();
    let l = match l {
        [b'|', inner @ .., b'|'] => inner,
        _ => l,
    };
    // (Byte by byte first: a row of values stops at its first letter. Pandoc's grid tables
    // mark a column's alignment with colons: `+:===+====:+`.)
    l.len() >= 3
        && l.iter().all(|c| matches!(c, b'+' | b'-' | b'=' | b':'))
        && l.contains(&b'+')
        && l.split(|&c| c == b'+').any(|run| run.len() >= 3)
}

/// The secret columns of a header that SQLite's list output prints (`.headers on`:
/// `id|username|password` over `1|bob|Xk9vQ2mZp4Lw`), with no rule below it: a row without
/// a leading pipe (its cells from `origin`, its end at `end`), made only of columns' names
/// (letters, digits and `_`) and pipes, over a line with as many pipes that is no alignment
/// row — `None` where it is no such header or names no secret.
fn list_header(b: &[u8], origin: usize, end: usize) -> Option<SecretColumns> {
    let line = &b[origin..end];
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    if line.first() == Some(&b'|')
        || !line
            .iter()
            .all(|&c| c.is_ascii_alphanumeric() || c == b'_' || c == b'|')
    {
        return None;
    }
    let count = pipes(line);
    // (The line below, which its own candidate reads again: twice in all.)
    let next = end + 1 + usize::from(b.get(end) == Some(&b'\r') && b.get(end + 1) == Some(&b'\n'));
    let below = b.get(next..)?;
    let below = &below[..memchr::memchr2(b'\n', b'\r', below).unwrap_or(below.len())];
    if pipes(below) != count || alignment_bytes(below) {
        return None;
    }
    let columns = SecretColumns::of(b, (origin, origin + line.len()));
    (columns.count > 0).then_some(columns)
}

/// How many pipes a row holds.
fn pipes(row: &[u8]) -> usize {
    memchr::memchr_iter(b'|', row).count()
}

/// Whether a table's row (`line`, from where its cells start) names its columns' types, as
/// DuckDB prints them under its header (`│ varchar │ int64 │ decimal(18,3) │`): every cell
/// a type's name in small letters, with its parameters or brackets after it.
fn type_row(line: &[u8]) -> bool {
    const TYPES: [&[u8]; 44] = [
        b"varchar",
        b"text",
        b"string",
        b"char",
        b"blob",
        b"bit",
        b"uuid",
        b"json",
        b"boolean",
        b"bool",
        b"int8",
        b"int16",
        b"int32",
        b"int64",
        b"int128",
        b"uint8",
        b"uint16",
        b"uint32",
        b"uint64",
        b"uint128",
        b"integer",
        b"bigint",
        b"smallint",
        b"tinyint",
        b"hugeint",
        b"uinteger",
        b"ubigint",
        b"usmallint",
        b"utinyint",
        b"uhugeint",
        b"double",
        b"float",
        b"real",
        b"decimal",
        b"numeric",
        b"date",
        b"time",
        b"timestamp",
        b"timestamptz",
        b"interval",
        b"struct",
        b"map",
        b"list",
        b"enum",
    ];
    let mut cells = 0;
    for (a, z) in row_cells(line) {
        let cell = &line[a..z];
        let word = cell
            .iter()
            .take_while(|c| c.is_ascii_alphanumeric())
            .count();
        let known = TYPES.contains(&&cell[..word]);
        let rest = &cell[word..];
        if !known || !(rest.is_empty() || matches!(rest[0], b'(' | b'[' | b' ')) {
            return false;
        }
        cells += 1;
    }
    cells > 0
}

/// The header row of the table whose row (not its alignment row) has its cells from `s`
/// (see [`row_origin`]) on the line from `line`:
/// found by reading back over the rows above (at most [`TABLE_ROWS_BACK`] and
/// [`TABLE_BYTES`]) to the alignment row (or a database client's border, see
/// [`border_line`]), the header the row right above it — where its cells start and its
/// end.
/// `None` where a line above is no table's row first, or the row is the header. (Each row above is read to its first byte that no alignment row holds: a few
/// bytes.)
fn table_header(b: &[u8], line: usize, s: usize) -> Option<(usize, usize)> {
    let floor = s.saturating_sub(TABLE_BYTES);
    let mut above = line;
    for _ in 0..TABLE_ROWS_BACK {
        let (la, to) = line_above(b, above, floor)?;
        // (A database client's border below its header, in place of an alignment row.)
        if border_line(&b[la..to]) {
            let (hline, mut hfirst, mut hto) = row_above(b, la, floor)?;
            // (DuckDB's column types under its header: the header is the row above them.)
            if type_row(&b[hfirst..hto]) {
                (_, hfirst, hto) = row_above(b, hline, floor)?;
            }
            return (hfirst != s).then_some((hfirst, hto));
        }
        let first = la + memchr::memchr(b'|', &b[la..to])?;
        let (a, origin) = row_origin(b, first)?;
        if alignment_at(b, a, origin, to, floor) {
            let (_, hfirst, hto) = row_above(b, a, floor)?;
            return (hfirst != s).then_some((hfirst, hto));
        }
        above = a;
    }
    None
}

/// A secret in a Markdown table's row whose header names the column (`| Service | User |
/// Password |` over `|---|---|---|`, then `| db | app | S3cret9 |`): the row's cells under a
/// header that ends with a secret's name (see [`header_secret`]), each judged as a cell
/// beside its name is (see [`cell_secret`]) — from the first that holds one to the last.
/// The trigger starts at the row's line (or the quote that opens it) and ends past its
/// first `|` (see [`table_row_at`]); one at an HTML table's `<tr` is read by
/// [`html_row_secret`].
///
/// The header is the row above the alignment row. A row right below the row read last in
/// this scan (`freed.table`) has the same header (an alignment row names the one above it),
/// so each row of a table is read once; any other reads back to it (see [`table_header`]).
pub(super) fn table_row_secret(
    text: &str,
    s: usize,
    _: usize,
    freed: &Freed,
) -> Option<(usize, usize)> {
    let b = text.as_bytes();
    if b[s] == b'<' {
        return html_row_secret(text, s, freed);
    }
    if let Some(found) = spaced_row_secret(text, s, freed) {
        return found;
    }
    // (`s` is where the trigger's match starts: the line's, or its quote's — the first `|`
    // follows within the indent, or past the first cell.)
    let p = s + memchr::memchr(b'|', &b[s..b.len().min(s + 4 * BARE_ROW_LEAD + 2)])?;
    let end = match freed.table.get() {
        // (On the line of the row read last, after its first `|`: the same end, found once
        // — a line of many strings that each open with a `|` is not read to its end from
        // each.)
        Some(last) if last.pipe < p && p <= last.end => last.end,
        _ => memchr::memchr2(b'\n', b'\r', &b[p..]).map_or(b.len(), |j| p + j),
    };
    let (line, origin) = row_origin(b, p)?;
    // (Right below: one line break between, `\r`s about it or not.)
    // (Or below it past a grid's border between rows, `+----+-----+`, once its header
    // named a secret: the rows of tabulate's `grid` formats — a border of dashes, as wide
    // as the row; one of `=` is a header's.)
    let below_last = freed.table.get().filter(|last| {
        let brk = &b[last.end.min(line)..line];
        let breaks = |brk: &[u8]| brk.iter().filter(|&&c| c == b'\n').count();
        (brk.iter().all(|&c| c == b'\n' || c == b'\r') && breaks(brk) == 1)
            || (last.columns.count > 0
                && brk.len() <= TABLE_BYTES
                && border_line(brk)
                && !brk.contains(&b'=')
                && breaks(brk) == 2
                && chars(brk.trim_ascii()) == chars(b[line..end].trim_ascii()))
    });
    let columns = if alignment_at(b, line, origin, end, line.saturating_sub(TABLE_BYTES)) {
        // (Its header: the row above, if the line above is one.)
        let header = row_above(b, line, line.saturating_sub(TABLE_BYTES))
            .map(|(_, origin, to)| (origin, to));
        freed.table.set(Some(TableRow {
            pipe: p,
            end,
            columns: header.map(|h| SecretColumns::of(b, h)).unwrap_or_default(),
        }));
        return None;
    } else if let Some(columns) = below_last
        .is_none_or(|last| {
            last.columns.count == 0 && pipes(&b[last.pipe..last.end]) != pipes(&b[p..end])
        })
        .then(|| list_header(b, origin, end))
        .flatten()
    {
        // (SQLite's list output: the header's columns for the rows below it — where a
        // block of rows starts, not below a row of the same shape or of a table whose
        // header names a secret already.)
        freed.table.set(Some(TableRow {
            pipe: p,
            end,
            columns,
        }));
        return None;
    } else if let Some(last) = below_last {
        last.columns
    } else {
        table_header(b, line, origin)
            .map(|header| SecretColumns::of(b, header))
            .unwrap_or_default()
    };
    freed.table.set(Some(TableRow {
        pipe: p,
        end,
        columns,
    }));
    // (Under a header without a leading pipe, a `|` after blanks at the line's start ends
    // an empty first cell: ` | Xk9…` is the second column's value.)
    let origin = match columns.bare && origin == p && (line == 0 || b[line - 1] == b'\n') {
        true => line,
        false => origin,
    };
    if columns.count == 0 || end - origin > TABLE_BYTES {
        return None;
    }
    let mut found: Option<(usize, usize)> = None;
    let mut want = columns.at[..columns.count].iter().peekable();
    for (col, (a, z)) in row_cells(&b[origin..end]).enumerate() {
        let Some(&&(c, la, len)) = want.peek() else {
            break;
        };
        if col < c as usize {
            continue;
        }
        want.next();
        let label = &b[la as usize..la as usize + usize::from(len)];
        // (Without HTML's inline tags around it: `| bob | <code>S3cret9</code> |`.)
        let (a, z) = cell_text(b, origin + a, origin + z);
        if cell_holds_secret(label, text.get(a..z)?) {
            found = Some((found.map_or(a, |f| f.0), z));
        }
    }
    found
}

/// The columns of a Markdown table whose header names a secret (see [`header_secret`]):
/// the first [`SecretColumns::MAX`], each its index and its header's label (offsets into
/// the text) — read once per table, as its alignment row is, so that no row reads its
/// header's cells again (a header 16 KiB wide over rows of four bytes cost 2 500x the
/// bench text while each row did).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct SecretColumns {
    /// Each column's index and its label's start and length (a header past 4 GiB into
    /// the text, or a label of more than 64 KiB, names none).
    at: [(u32, u32, u16); SecretColumns::MAX],
    count: usize,
    /// Whether the header has no leading pipe (psql's, a GitHub table's without its outer
    /// pipes): then a row whose line opens with blanks and a `|` has an empty first cell
    /// (a NULL, a wrapped value's next line), not a leading pipe.
    bare: bool,
}

impl Default for SecretColumns {
    fn default() -> Self {
        SecretColumns {
            at: [(0, 0, 0); SecretColumns::MAX],
            count: 0,
            bare: false,
        }
    }
}

impl SecretColumns {
    const MAX: usize = 32;

    /// The secret columns of the header row at `header` (where its cells start, see
    /// [`row_origin`], and its end).
    fn of(b: &[u8], (ha, hz): (usize, usize)) -> SecretColumns {
        let mut columns = SecretColumns {
            bare: b.get(ha) != Some(&b'|'),
            ..SecretColumns::default()
        };
        for (col, (a, z)) in row_cells(&b[ha..hz]).enumerate() {
            if columns.count == Self::MAX {
                break;
            }
            let (a, z) = cell_text(b, ha + a, ha + z);
            columns.push_if_secret(b, col, label_core(b, a, z));
        }
        columns
    }

    /// Keeps column `col` if its header's label (`b[from..to]`) names a secret (see
    /// [`header_secret`]) and room is left.
    fn push_if_secret(&mut self, b: &[u8], col: usize, (from, to): (usize, usize)) {
        let packed = (
            u32::try_from(col),
            u32::try_from(from),
            u16::try_from(to - from),
        );
        if self.count < Self::MAX
            && let (Ok(col), Ok(from), Ok(len)) = packed
            && header_secret(&b[from as usize..to]).is_some()
        {
            self.at[self.count] = (col, from, len);
            self.count += 1;
        }
    }
}

/// A header cell's label (`b[a..z]`) without what people put around it (`Password:`,
/// `_Password_`, `Password (plain)`, a column's name quoted: `"password"`, `` `password`
/// ``, `“password”`): its span.
fn label_core(b: &[u8], a: usize, z: usize) -> (usize, usize) {
    let mut z = z;
    if z > a
        && b[z - 1] == b')'
        && let Some(open) = memchr::memrchr(b'(', &b[a..z]).filter(|&o| o > 0)
    {
        z = a + open;
        while z > a && matches!(b[z - 1], b' ' | b'\t') {
            z -= 1;
        }
    }
    // (Typographic quotes too: `“password”`, `‘password’`.)
    let closes = |i: usize| i >= 3 && matches!(&b[i - 3..i], [0xE2, 0x80, 0x99 | 0x9D]);
    let opens = |i: usize| matches!(b.get(i..i + 3), Some([0xE2, 0x80, 0x98 | 0x9C]));
    loop {
        if z > a && matches!(b[z - 1], b':' | b'_' | b'*' | b'"' | b'\'' | b'`') {
            z -= 1;
        } else if z >= a + 3 && closes(z) {
            z -= 3;
        } else {
            break;
        }
    }
    let mut a = a;
    loop {
        if a < z && matches!(b[a], b'_' | b'*' | b'"' | b'\'' | b'`') {
            a += 1;
        } else if a + 3 <= z && opens(a) {
            a += 3;
        } else {
            break;
        }
    }
    (a, z)
}

/// Whether the line from `l` may open a table aligned with blanks (see
/// [`spaced_row_secret`]): a rule of dashes or `=` (two runs at least, one of the first two
/// of two or more: not `---`, `- - -` nor `-- a comment`), or a data frame's first row,
/// its index (digits), a blank and values, below a line that opens with a blank (or holds
/// a quote and a blank, or ends with two: an index's name) — from the line's start, as
/// clients print them (see [`spaced_opener`]).
fn spaced_trigger(b: &[u8], l: usize) -> bool {
    let rest = &b[l..];
    let Some(&mark) = rest.first().filter(|&&c| c == b'-' || c == b'=') else {
        // (A frame's row: values after its index, under a line that opens with a blank —
        // its header, or after a quote, written into a string — or ends with two: its
        // index's name's line, the header above it.)
        let digits = rest.iter().take_while(|c| c.is_ascii_digit()).count();
        if !(1..=12).contains(&digits) || rest.get(digits) != Some(&b' ') {
            return false;
        }
        let values = rest[digits..]
            .iter()
            .take_while(|&&c| c != b'\n')
            .any(|c| !c.is_ascii_whitespace());
        return values
            && line_above(b, l, 0).is_some_and(|(a, to)| {
                let line = &b[a..to];
                line.first() == Some(&b' ')
                    || line.ends_with(b"  ")
                    || line
                        .windows(2)
                        .any(|w| matches!(w[0], b'"' | b'\'' | b'`') && w[1] == b' ')
            });
    };
    let run = |at: usize| rest[at..].iter().take_while(|&&c| c == mark).count();
    let first = run(0);
    let blanks = rest[first..]
        .iter()
        .take_while(|&&c| c == b' ' || c == b'\t')
        .count();
    let second = run(first + blanks);
    blanks > 0 && second > 0 && first.max(second) >= 2
}

/// A table that a client aligns with blanks: the columns whose header names a secret (see
/// [`header_secret`]), each its span in characters from its line's start and its header's
/// label (an offset into the text) — at most [`SecretColumns::MAX`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct SpacedTable {
    /// Each column's span in characters (its end past its last), and its label's start
    /// and length.
    at: [(u32, u32, u32, u16); SecretColumns::MAX],
    count: usize,
    /// Whether values stand against their column's right edge (a data frame's), read back
    /// from it as one run of characters; else anywhere in the span (a rule's dashes).
    right: bool,
    /// The quote that opens the table, when it is written into a string: a row ends at
    /// its last one (the string's end, on its last line).
    quote: Option<u8>,
    /// How wide its rule or its header is, in characters: a row is at most
    /// [`SPACED_OVERRUN`] wider (a line of prose right after a table is no row).
    width: usize,
    /// Whether it is a table of names and their values, `Key` and `Value` over its two
    /// columns (HashiCorp Vault's `vault kv get`, `vault read`): its one column kept is
    /// `Value`'s, each row's secret under it where its first cell names one.
    keyed: bool,
}

/// How many characters a row of a table aligned with blanks may run past its rule or
/// header (a value wider than its last column).
const SPACED_OVERRUN: usize = 16;

impl SpacedTable {
    fn new(right: bool, quote: Option<u8>, width: usize) -> SpacedTable {
        SpacedTable {
            at: [(0, 0, 0, 0); SecretColumns::MAX],
            count: 0,
            right,
            quote,
            width,
            keyed: false,
        }
    }

    /// Whether `line` may be a row of the table: no wider than it allows.
    fn fits(&self, line: &[u8]) -> bool {
        // (A table of names and values: its last column as wide as a value is.)
        if self.keyed {
            return true;
        }
        let line = line.trim_ascii_end();
        line.len() <= self.width + SPACED_OVERRUN || chars(line) <= self.width + SPACED_OVERRUN
    }

    /// Keeps the column of characters `a..z` if its header's label (`b[from..to]`, with
    /// what people put around it left out, see [`label_core`]) names a secret.
    fn push_if_secret(&mut self, b: &[u8], (a, z): (usize, usize), (from, to): (usize, usize)) {
        let (from, to) = label_core(b, from, to);
        let packed = (
            u32::try_from(a),
            u32::try_from(z),
            u32::try_from(from),
            u16::try_from(to - from),
        );
        if self.count < SecretColumns::MAX
            && let (Ok(a), Ok(z), Ok(from), Ok(len)) = packed
            && header_secret(&b[from as usize..to]).is_some()
        {
            self.at[self.count] = (a, z, from, len);
            self.count += 1;
        }
    }
}

/// The line from `l`: its end, before its line break (and a `\r` before that).
fn line_end(b: &[u8], l: usize) -> usize {
    let end = memchr::memchr(b'\n', &b[l..]).map_or(b.len(), |i| l + i);
    end - usize::from(end > l && b[end - 1] == b'\r')
}

/// The start of the line after the one from `l`, if there is one.
fn next_line(b: &[u8], l: usize) -> Option<usize> {
    memchr::memchr(b'\n', &b[l..]).map(|i| l + i + 1)
}

/// Byte offsets into a line of its characters' offsets, asked in order: one walk of the
/// line for all (an offset past its end is its end).
struct CharWalk<'l> {
    line: &'l [u8],
    ascii: bool,
    byte: usize,
    chars: usize,
}

impl<'l> CharWalk<'l> {
    fn new(line: &'l [u8]) -> CharWalk<'l> {
        CharWalk {
            line,
            ascii: line.is_ascii(),
            byte: 0,
            chars: 0,
        }
    }

    /// The byte offset of the character at `chars` (from the line's start again if it
    /// is before the last one asked).
    fn byte(&mut self, chars: usize) -> usize {
        if self.ascii {
            return chars.min(self.line.len());
        }
        if chars < self.chars {
            (self.byte, self.chars) = (0, 0);
        }
        while self.chars < chars && self.byte < self.line.len() {
            self.byte += 1;
            while self.byte < self.line.len() && self.line[self.byte] & 0xC0 == 0x80 {
                self.byte += 1;
            }
            self.chars += 1;
        }
        self.byte
    }
}

/// The spans of a rule under a table's header aligned with blanks (`----  ----------`, as
/// tabulate, sqlite's `.mode column`, psql with `border 0` and Azure's CLI print it;
/// `====  ====` as reStructuredText writes it): runs of dashes (or `=`, one kind per line)
/// apart by blanks, two runs at least, one of them of two or more (a column one character
/// wide has a run of one: `-  ------------`) — in characters from the line's start
/// (`line`: without its line break). `None` where the line is no such rule (`- - -`).
fn rule_columns(line: &[u8]) -> Option<impl Iterator<Item = (usize, usize)> + '_> {
    let mark = *line.trim_ascii_start().first()?;
    if !matches!(mark, b'-' | b'=')
        || line.len() > TABLE_BYTES
        || !line.iter().all(|&c| c == mark || c == b' ' || c == b'\t')
    {
        return None;
    }
    let runs = move || {
        line.split(move |&c| c != mark)
            .filter(|run| !run.is_empty())
            .map(|run| {
                let a = run.as_ptr() as usize - line.as_ptr() as usize;
                (a, a + run.len())
            })
    };
    (runs().any(|(a, z)| z - a >= 2) && runs().nth(1).is_some()).then(runs)
}

/// A secret in a row of a table that a client aligns with blanks, not pipes, under a
/// header that names the secret's column:
/// - a rule under the header gives the columns' spans (`id  username  password` over
///   `--  --------  ------------`, then `1   bob       Xk9vQ2mZp4Lw`: tabulate, sqlite's
///   `.mode column`, psql with `border 0`, Azure's CLI, reStructuredText's simple tables);
/// - a pandas data frame has no rule: its first row starts with its index (digits), the
///   header right above (or above the index's name), each column's values against the
///   right edge of its name (`   id username      password` over `0   1      bob
///   Xk9vQ2mZp4Lw`).
///
/// The rule, or the frame's first row, is the trigger (see [`spaced_trigger`]); it keeps
/// the table's secret columns in `freed.spaced` and where its next row starts in
/// `freed.spaced_next`, where [`table_row_at`] finds it — so each row is read once, as
/// the candidate of its line's start (or of where another value found at its start
/// ended), until a blank line ends the table, or a line too wide for it (prose after it).
/// A rule among its rows (reStructuredText's last one, a rule between groups) does not.
/// Each cell under a secret column is judged as a Markdown table's is (see
/// [`cell_holds_secret`]); the detection runs from the first that holds one to the last.
///
/// `None` where the line at `s` is none of these (a Markdown table's row is read then);
/// else the answer.
fn spaced_row_secret(text: &str, s: usize, freed: &Freed) -> Option<Option<(usize, usize)>> {
    let b = text.as_bytes();
    // (Neither a table being read nor a line that may open one: most pipe rows.)
    if freed.spaced_next.get().is_none() && !matches!(b[s], b'-' | b'=' | b'0'..=b'9') {
        return None;
    }
    let at_line = s == 0 || b[s - 1] == b'\n';
    // (A row of the table being read: at its next row, or past it with no blank line
    // between — a detection may have run over a row's start — or on that row, past a
    // value found at its start: its cells from there on.)
    if let Some(next) = freed.spaced_next.get()
        && let Some(table) = freed.spaced.get()
        && s >= next
    {
        let row = match at_line {
            true => (!b[next..s].windows(2).any(|w| w == b"\n\n" || w == b"\n\r")).then_some(s),
            false => memchr::memchr(b'\n', &b[next..s]).is_none().then_some(next),
        };
        if let Some(row) = row {
            freed.spaced_next.set(None);
            let end = line_end(b, row);
            let line = &b[row..end];
            if rule_columns(line).is_some() {
                // (A table of names and values right after another, no blank line between
                // — Vault's metadata, then its data: the new one's columns, review 90.)
                if table.keyed
                    && let Some((ha, hz)) = line_above(b, row, row.saturating_sub(TABLE_BYTES))
                    && let Some(next) = keyed_table(b, line, &b[ha..hz], ha, table.quote)
                {
                    freed.spaced.set(Some(next));
                }
                freed.spaced_next.set(next_line(b, end));
                return Some(None);
            }
            if !line.trim_ascii().is_empty() && table.fits(line) {
                freed.spaced_next.set(next_line(b, end));
                return Some(spaced_cells(text, row, line, &table, s));
            }
        }
    }
    if !at_line {
        return None;
    }
    let end = line_end(b, s);
    let line = &b[s..end];
    let floor = s.saturating_sub(TABLE_BYTES);
    // (The header: the line above — or first what follows its last quote, if it holds
    // one: a table written into a string, `{"out": "user  password\n----  …`.)
    let above = line_above(b, s, floor).filter(|&(ha, hz)| hz - ha <= TABLE_BYTES);
    let origins = |(ha, hz): (usize, usize)| {
        let quoted =
            memchr::memrchr3(b'"', b'\'', b'`', &b[ha..hz]).map(|q| (ha + q + 1, Some(b[ha + q])));
        quoted.into_iter().chain([(ha, None)])
    };
    if let Some(width) = rule_columns(line).map(|_| chars(line.trim_ascii_end())) {
        let header_rule = above.is_some_and(|(ha, hz)| rule_columns(&b[ha..hz]).is_some());
        for (origin, quote) in above.filter(|_| !header_rule).into_iter().flat_map(origins) {
            let mut table = SpacedTable::new(false, quote, width);
            let header = &b[origin..above.map_or(origin, |(_, hz)| hz)];
            let mut walk = CharWalk::new(header);
            for (a, z) in rule_columns(line).into_iter().flatten() {
                let (from, to) = (walk.byte(a), walk.byte(z));
                let (from, to) = cell_text(b, origin + from, origin + to);
                table.push_if_secret(b, (a, z), (from, to));
            }
            if table.count == 0 {
                table = keyed_table(b, line, header, origin, quote).unwrap_or(table);
            }
            if table.count > 0 {
                freed.spaced.set(Some(table));
                freed.spaced_next.set(next_line(b, end));
                break;
            }
        }
        return Some(None);
    }
    // (A data frame's first row, its header right above, or above its index's name — a
    // name alone on its line, `id` then blanks; no pipes in either: a row `0 | bob | …` is
    // a Markdown table's.)
    if b[s].is_ascii_digit() && spaced_trigger(b, s) && !line.contains(&b'|') {
        let (mut ha, mut hz) = above?;
        let named = &b[ha..hz];
        let name = named
            .iter()
            .take_while(|c| !c.is_ascii_whitespace())
            .count();
        if name > 0 && named[name..].trim_ascii().is_empty() {
            (ha, hz) = line_above(b, ha, floor).filter(|&(ha, hz)| hz - ha <= TABLE_BYTES)?;
        }
        if b[ha..hz].contains(&b'|') {
            return None;
        }
        let table = origins((ha, hz))
            .filter(|&(origin, _)| b.get(origin) == Some(&b' '))
            .map(|(origin, quote)| frame_columns(b, origin, &b[origin..hz], quote))
            .find(|table| table.count > 0)?;
        if !table.fits(line) {
            return None;
        }
        freed.spaced.set(Some(table));
        freed.spaced_next.set(next_line(b, end));
        return Some(spaced_cells(text, s, line, &table, s));
    }
    // (A line that only looked as if it might open one: `---`, `-- a comment`. A pipe on
    // it makes it a Markdown table's row, which its trigger is then.)
    (spaced_trigger(b, s) && !line.contains(&b'|')).then_some(None)
}

/// How many characters `line` holds (UTF-8's continuation bytes left out).
fn chars(line: &[u8]) -> usize {
    line.iter().filter(|&&c| c & 0xC0 != 0x80).count()
}

/// The secret columns of a pandas data frame's header (`header`, from `ha` in the text):
/// its names, apart by two blanks or more (one blank stays within a name: `api key`),
/// each column ending where its name does — values stand against that edge.
fn frame_columns(b: &[u8], ha: usize, header: &[u8], quote: Option<u8>) -> SpacedTable {
    // (A wide frame's header that goes on below ends with a `\`.)
    let wide = header.trim_ascii_end();
    let wide = wide.strip_suffix(b"\\").unwrap_or(wide).trim_ascii_end();
    let mut table = SpacedTable::new(true, quote, chars(wide));
    let blank = |c: u8| c == b' ' || c == b'\t';
    // (Offsets in bytes, `chars` in characters.)
    let (mut i, mut chars, mut last) = (0, 0, 0);
    while i < header.len() {
        while i < header.len() && blank(header[i]) {
            (i, chars) = (i + 1, chars + 1);
        }
        if i == header.len() {
            break;
        }
        let from = i;
        loop {
            while i < header.len() && !blank(header[i]) {
                chars += usize::from(header[i] & 0xC0 != 0x80);
                i += 1;
            }
            // (One blank, then more of the name.)
            if header.get(i) == Some(&b' ') && header.get(i + 1).is_some_and(|&c| !blank(c)) {
                (i, chars) = (i + 1, chars + 1);
                continue;
            }
            break;
        }
        table.push_if_secret(b, (last, chars), (ha + from, ha + i));
        last = chars;
    }
    table
}

/// A table of names and their values under the rule `line`, its header `header` (from
/// `origin` in the text): two columns, `Key` and `Value` in any case (HashiCorp Vault's
/// `vault kv get`, `vault read`, `vault token create`) — `Value`'s column kept (see
/// `SpacedTable::keyed`), as wide as a row may be: values are as long as they are.
fn keyed_table(
    b: &[u8],
    line: &[u8],
    header: &[u8],
    origin: usize,
    quote: Option<u8>,
) -> Option<SpacedTable> {
    let mut columns = rule_columns(line)?;
    let (key, value) = (columns.next()?, columns.next()?);
    if columns.next().is_some() {
        return None;
    }
    let mut walk = CharWalk::new(header);
    let mut label = |(a, z): (usize, usize)| {
        let (from, to) = (walk.byte(a), walk.byte(z));
        cell_text(b, origin + from, origin + to)
    };
    let (ka, kz) = label(key);
    let (va, vz) = label(value);
    if !(b[ka..kz].eq_ignore_ascii_case(b"key") && b[va..vz].eq_ignore_ascii_case(b"value")) {
        return None;
    }
    let mut table = SpacedTable::new(false, quote, TABLE_BYTES);
    table.keyed = true;
    table.at[0] = (
        u32::try_from(value.0).ok()?,
        u32::try_from(value.1).ok()?,
        u32::try_from(va).ok()?,
        5,
    );
    table.count = 1;
    Some(table)
}

/// The secret in a row of a table of names and their values (see [`keyed_table`]; `line`
/// from `s` in the text): the row's value, from `Value`'s column to the line's end (or to
/// the quote that closes the string the table is written in, or to a column after it),
/// where the name in its first cell is a secret's (`password    Xk9…`, see
/// [`names_secret`]) and the value holds one as a table's cell does (see
/// [`cell_holds_secret`]) — not a name run into `Value`'s column.
fn keyed_cells(
    text: &str,
    s: usize,
    line: &[u8],
    table: &SpacedTable,
    from: usize,
) -> Option<(usize, usize)> {
    let b = text.as_bytes();
    let line = &line[..line.len().min(TABLE_BYTES)];
    let at = CharWalk::new(line).byte(table.at[0].0 as usize);
    if at == 0 || at >= line.len() || !matches!(line[at - 1], b' ' | b'\t') {
        return None;
    }
    let (ka, kz) = cell_text(b, s, s + at);
    // (The value to the line's end, 1 KiB at most — or to a quote that closes the string
    // the table is written in, `…Xk9…", "stderr": …` (JSON's `\"` too), review 90, not one
    // a blank follows, a password's, review 91 — or to two blanks, a column after it.)
    let rest = &line[at..line.len().min(at + 1024)];
    let closing = rest.iter().enumerate().position(|(i, &c)| {
        (matches!(c, b'"' | b'\'')
            && rest
                .get(i + 1)
                .is_none_or(|n| matches!(n, b',' | b'}' | b']' | b')' | b';' | b'"' | b'\'')))
            || (c == b'\t' || (c == b' ' && rest.get(i + 1) == Some(&b' ')))
                && i > 0
                && !matches!(rest[i - 1], b' ' | b'\t')
    });
    let to = match closing {
        Some(q) if q > 0 && rest[q - 1] == b'\\' && matches!(rest[q], b'"' | b'\'') => q - 1,
        Some(q) => q,
        None if line.len() > at + 1024 => return None,
        None => rest.len(),
    };
    let (va, vz) = cell_text(b, s + at, s + at + to);
    let key = &b[ka..kz];
    (va >= from
        && !key.contains(&b' ')
        && names_secret(key)
        && text.get(va..vz).is_some_and(|v| cell_holds_secret(key, v)))
    .then_some((va, vz))
}

/// The secrets in a row of a table aligned with blanks (`line`, from `s` in the text,
/// without its line break) under `table`'s columns, in cells that start at `from` or
/// later: from the first cell that holds one to the last.
fn spaced_cells(
    text: &str,
    s: usize,
    line: &[u8],
    table: &SpacedTable,
    from: usize,
) -> Option<(usize, usize)> {
    if table.keyed {
        return keyed_cells(text, s, line, table, from);
    }
    if line.len() > TABLE_BYTES {
        return None;
    }
    let b = text.as_bytes();
    // (A table written into a string: its last row ends at the string's end.)
    let line = match table.quote.and_then(|q| memchr::memrchr(q, line)) {
        Some(q) => &line[..q],
        None => line,
    };
    let blank = |c: u8| c == b' ' || c == b'\t';
    let mut found: Option<(usize, usize)> = None;
    let mut walk = CharWalk::new(line);
    for &(a, z, label, len) in &table.at[..table.count] {
        let (a, z) = (walk.byte(a as usize), walk.byte(z as usize));
        let (mut ca, mut cz) = (a, z);
        if table.right {
            // (Against the column's right edge: the run of characters that ends there, or
            // runs over it — one blank within it, as columns stand two apart.)
            if cz == 0 || blank(line[cz - 1]) {
                continue;
            }
            ca = cz - 1;
            loop {
                while ca > a && !blank(line[ca - 1]) {
                    ca -= 1;
                }
                if ca >= a + 2 && line[ca - 1] == b' ' && !blank(line[ca - 2]) {
                    ca -= 2;
                    continue;
                }
                break;
            }
            while cz < line.len() && !blank(line[cz]) {
                cz += 1;
            }
        } else {
            // (Anywhere in the span, and on past its edges where the value runs over them
            // — but a value of the column before that runs into the span, `a@b.com
            // Xk9vQ2mZp4Lw` under `-----  --------`, is left to that column.)
            while cz < line.len() && cz > ca && !blank(line[cz]) && !blank(line[cz - 1]) {
                cz += 1;
            }
            if ca < cz && !blank(line[ca]) && ca > 0 && !blank(line[ca - 1]) {
                let over = ca + line[ca..cz].iter().take_while(|&&c| !blank(c)).count();
                match line[over..cz].iter().position(|&c| !blank(c)) {
                    Some(next) => ca = over + next,
                    None => {
                        while ca > 0 && !blank(line[ca - 1]) {
                            ca -= 1;
                        }
                    }
                }
            }
        }
        let (ca, cz) = cell_text(b, s + ca, s + cz);
        let label = &b[label as usize..label as usize + usize::from(len)];
        if ca >= from
            && text
                .get(ca..cz)
                .is_some_and(|v| cell_holds_secret(label, v))
        {
            found = Some((found.map_or(ca, |f| f.0), cz));
        }
    }
    found
}

/// Whether `tag` (past its `<` or `</`) is the element `name` (in any case), its name
/// ended by a blank, a `/` or its `>` (`<th>`, `<TH class=…>`; not `<thead>`).
fn html_tag(tag: &[u8], name: &[u8]) -> bool {
    tag.len() > name.len()
        && tag[..name.len()].eq_ignore_ascii_case(name)
        && matches!(tag[name.len()], b'>' | b'/' | b' ' | b'\t' | b'\r' | b'\n')
}

/// The cells of the HTML table's row whose `<tr` is at `s` (read to [`TABLE_BYTES`] at
/// most): `cell(column, span, header, content)` for each (`span`: its `colspan`; `header`:
/// a `<th>`; `content` its span, up to its closing tag or the next cell's). Returns where
/// the row ends: at the tag that closes it or opens the next row, a table's or a section's
/// (`</tr>`, `<tr>`, `</table>`, `<tbody>`, …), or where reading stopped.
fn html_row(b: &[u8], s: usize, mut cell: impl FnMut(usize, usize, bool, usize, usize)) -> usize {
    let limit = b.len().min(s.saturating_add(TABLE_BYTES));
    let row = &b[..limit];
    let (mut col, mut open) = (0, None::<(usize, bool, usize)>);
    let mut close = |open: &mut Option<(usize, bool, usize)>, at: usize| {
        if let Some((span, header, a)) = open.take() {
            cell(col, span, header, a, at);
            col += span;
        }
    };
    let mut i = s + 1;
    while let Some(k) = memchr::memchr(b'<', &row[i.min(limit)..]).map(|k| i + k) {
        let (closing, tag) = match row.get(k + 1) {
            Some(b'/') => (true, &row[k + 2..]),
            _ => (false, &row[k + 1..]),
        };
        let ends_row = ["tr", "table", "thead", "tbody", "tfoot"]
            .iter()
            .any(|n| html_tag(tag, n.as_bytes()));
        if ends_row {
            close(&mut open, k);
            return k;
        }
        i = k + 1;
        if html_tag(tag, b"td") || html_tag(tag, b"th") {
            close(&mut open, k);
            if !closing {
                // (Its content starts past its tag's `>` — or, a tag left open, at the next
                // `<`: the next tag is not taken into it.)
                let end = memchr::memchr2(b'>', b'<', &row[k + 1..]).map_or(limit, |j| k + 1 + j);
                let content = end + usize::from(row.get(end) == Some(&b'>'));
                open = Some((colspan(&row[k..end]), tag[1] | 0x20 == b'h', content));
                i = content;
            }
        }
    }
    close(&mut open, limit);
    limit
}

/// A cell's `colspan` (1 to 64; 1 without one), from its opening tag.
fn colspan(tag: &[u8]) -> usize {
    const NAME: &[u8] = b"colspan";
    let Some(at) = tag
        .windows(NAME.len())
        .position(|w| w.eq_ignore_ascii_case(NAME))
    else {
        return 1;
    };
    let rest = &tag[at + NAME.len()..];
    let rest = rest.trim_ascii_start().strip_prefix(b"=").unwrap_or(b"");
    let rest = rest.trim_ascii_start();
    let rest = rest
        .strip_prefix(b"\"")
        .or(rest.strip_prefix(b"'"))
        .unwrap_or(rest);
    let digits = rest
        .iter()
        .take(2)
        .take_while(|c| c.is_ascii_digit())
        .count();
    std::str::from_utf8(&rest[..digits])
        .ok()
        .and_then(|n| n.parse::<usize>().ok())
        .map_or(1, |n| n.clamp(1, 64))
}

/// A cell's text (`b[a..z]`) without the blanks and the inline elements' tags around it
/// (`<code>S3cret9</code>`, `<b>Password</b>`, `S3cret9<br/>`): its span.
fn cell_text(b: &[u8], mut a: usize, mut z: usize) -> (usize, usize) {
    loop {
        while a < z && b[a].is_ascii_whitespace() {
            a += 1;
        }
        while z > a && b[z - 1].is_ascii_whitespace() {
            z -= 1;
        }
        if a < z && b[a] == b'<' {
            match memchr::memchr(b'>', &b[a..z]) {
                Some(gt) => a += gt + 1,
                None => return (a, z),
            }
        } else if z > a && b[z - 1] == b'>' {
            match memchr::memrchr(b'<', &b[a..z]) {
                Some(lt) => z = a + lt,
                None => return (a, z),
            }
        } else {
            return (a, z);
        }
    }
}

/// A secret in an HTML table's row whose header row names the column (`<tr><th>Service</th>
/// <th>Password</th></tr>` above `<tr><td>db</td><td>S3cret9</td></tr>`): the row's cells
/// under a header cell whose first text names a secret (see [`header_secret`]; `Password
/// <small>(rotated)</small>`), each run of text between a cell's tags judged as a Markdown
/// table's cell is (see [`cell_holds_secret`]) — from the first that holds one to the last;
/// cells that span columns (`colspan`) counted so. The trigger is the row's `<tr` at `s`.
///
/// The header is a table's first row, or a head's (`<table>` or `<thead>` the last such
/// tag before it, a `<tbody>` between or not: its cells `<th>` or `<td>`), or a row of
/// `<th>` cells (a blank `<td>` among them) where no header is known. Every other row
/// takes the header of the row read last in this scan (`freed.html`), unless a table opens
/// or closes between them or they stand more than [`TABLE_BYTES`] apart — so each row is
/// read once, and each gap between.
fn html_row_secret(text: &str, s: usize, freed: &Freed) -> Option<(usize, usize)> {
    let b = text.as_bytes();
    // (What stands between the row read last and this one, or with none the 256 bytes
    // before it: a table's or a head's tag makes this row the first.)
    let last = freed
        .html
        .get()
        .filter(|last| last.end <= s && s - last.end <= TABLE_BYTES);
    let from = last.map_or(s.saturating_sub(256), |last| last.end);
    let (mut first, mut table) = (false, false);
    for k in memchr::memchr_iter(b'<', &b[from..s]) {
        let tag = &b[from + k + 1..s];
        let (closing, name) = match tag.strip_prefix(b"/") {
            Some(name) => (true, name),
            None => (false, tag),
        };
        // (A body right after the table's tag leaves its first row the header: `<table>
        // <tbody><tr><td>User</td>…`.)
        if html_tag(name, b"table") {
            (first, table) = (!closing, true);
        } else if html_tag(name, b"thead") {
            first = !closing;
        } else if html_tag(name, b"tr") || (closing && html_tag(name, b"tbody")) {
            first = false;
        }
    }
    let known = last.filter(|_| !table).map(|last| last.columns);
    let columns = known.unwrap_or_default();
    let (mut data, mut header) = (false, SecretColumns::default());
    let mut found: Option<(usize, usize)> = None;
    let end = html_row(b, s, |col, span, th, a, z| {
        let (ta, tz) = cell_text(b, a, z);
        data |= !th && ta < tz;
        // (Its label: its first text, `Password` of `Password <small>(rotated)</small>`.)
        let lz = ta + memchr::memchr(b'<', &b[ta..tz]).unwrap_or(tz - ta);
        let label = label_core(b, ta, b[..lz].trim_ascii_end().len().max(ta));
        for c in col..col + span {
            header.push_if_secret(b, c, label);
        }
        // (Judged as a value under the known header's secret columns it spans.)
        for &(c, ha, hl) in &columns.at[..columns.count] {
            if !(col..col + span).contains(&(c as usize)) {
                continue;
            }
            let label = &b[ha as usize..ha as usize + usize::from(hl)];
            // (Each run of text between the cell's tags: `<i>see vault</i> S3cret9`,
            // `S3cret9 <span>📋</span>`.)
            let mut i = a;
            while i < z {
                let lt = memchr::memchr(b'<', &b[i..z]).map_or(z, |k| i + k);
                let (ra, rz) = cell_text(b, i, lt);
                if ra < rz
                    && text
                        .get(ra..rz)
                        .is_some_and(|v| cell_holds_secret(label, v))
                {
                    found = Some((found.map_or(ra, |f| f.0), rz));
                }
                i = memchr::memchr(b'>', &b[lt..z]).map_or(z, |gt| lt + gt + 1);
            }
            break;
        }
    });
    if first || (!data && known.is_none()) {
        freed.html.set(Some(HtmlRow {
            end,
            columns: header,
        }));
        return None;
    }
    freed.html.set(Some(HtmlRow { end, columns }));
    found
}

/// A bare value inside emphasis (`**S3cret9**`, `*optional*`, `__S3cret9__`), its opening
/// run of `run` bytes at `first`: the value inside, judged as a bare value is, the name at
/// `key..at`. `None` where the word does not close the same emphasis (`*ptr`, `_S3cret9`:
/// a value that starts so).
fn emphasised_value(
    text: &str,
    key: usize,
    at: usize,
    first: usize,
    run: usize,
) -> Option<Option<(usize, usize)>> {
    let b = text.as_bytes();
    let c = b[first];
    let limit = ceil_char_boundary(text, first.saturating_add(NAMED_VALUE_MAX));
    // (Read to the first emphasis character or the word's end, whichever comes first: a
    // run of `Password:**` is not read 256 bytes from each.)
    let from = first + run;
    let inner = from
        + b[from..limit].iter().position(|&d| {
            d == c || d.is_ascii_whitespace() || matches!(d, b'<' | b'|' | b'"' | b'\'' | b',')
        })?;
    let word = inner + run;
    let closed = inner > from
        && b.get(inner..word)
            .is_some_and(|r| r.iter().all(|&d| d == c))
        && b.get(word)
            .is_none_or(|&d| d != c && !d.is_ascii_alphanumeric());
    if !closed {
        return None;
    }
    let value = text.get(first + run..inner)?;
    let name = &b[key..at];
    let secret = secret_value(value, false, None)
        && !short_for_a_token(name, value)
        && !no_secret_name(name, value);
    Some(secret.then_some((first + run, inner)))
}

/// Whether a word of prose names a thing and its version, as technical prose does
/// (`OAuth2`, `UTF-8`, `Base64`, `Win10`, `SHA256`, `(IPv6)`, `IPv4/IPv6`, `ES2015`,
/// `ISO8601`, `H264`), or is a numeronym (`i18n`, `k8s`): letters, then one to four digits
/// (after a `-` or not), with no more than two digits after a longer capitalised word
/// (`Summer2024`, a weak password, is none), punctuation around it apart.
fn versioned_term(word: &str) -> bool {
    const NUMERONYMS: [&str; 10] = [
        "i18n", "l10n", "a11y", "k8s", "g11n", "m17n", "e2e", "p2p", "b2b", "b2c",
    ];
    let w = word.trim_matches(|c: char| {
        matches!(
            c,
            '(' | ')' | '[' | ']' | ',' | '.' | ';' | ':' | '"' | '\''
        )
    });
    !w.is_empty()
        && w.split('/').all(|part| {
            let letters = part.bytes().take_while(u8::is_ascii_alphabetic).count();
            let rest = part[letters..]
                .strip_prefix('-')
                .unwrap_or(&part[letters..]);
            let acronym = part[..letters].bytes().all(|c| c.is_ascii_uppercase());
            let versioned = letters >= 1
                && (1..=4).contains(&rest.len())
                && rest.bytes().all(|c| c.is_ascii_digit())
                && ((rest.len() <= 2 && letters <= 8) || letters <= 4 || acronym);
            versioned || NUMERONYMS.iter().any(|n| part.eq_ignore_ascii_case(n))
        })
}

/// Whether `v` is a format's conversion, as `printf` and Android's strings write one:
/// `%s`, `%1$s`, `%-8.2f`, `%@`.
fn format_specifier(v: &str) -> bool {
    let Some(f) = v.strip_prefix('%') else {
        return false;
    };
    let f = f.as_bytes();
    let mut i = f.iter().take_while(|c| c.is_ascii_digit()).count();
    if i > 0 {
        if f.get(i) != Some(&b'$') {
            // (A width, not a position: `%8s`.)
            return f.len() == i + 1 && f[i].is_ascii_alphabetic();
        }
        i += 1;
    }
    i += f[i..]
        .iter()
        .take_while(|c| matches!(c, b'-' | b'+' | b' ' | b'0' | b'#'))
        .count();
    i += f[i..].iter().take_while(|c| c.is_ascii_digit()).count();
    if f.get(i) == Some(&b'.') {
        i += 1 + f[i + 1..].iter().take_while(|c| c.is_ascii_digit()).count();
    }
    f.len() == i + 1 && (f[i].is_ascii_alphabetic() || f[i] == b'@')
}

/// Whether a word of an element's content is no value at all: a format's conversion (see
/// [`format_specifier`]; `Password %1$s`), or an Android resource's reference
/// (`@string/pwd2`, `?attr/colorSecondary2`, `@android:color/x`, `@+id/token2`).
fn no_value_word(word: &str) -> bool {
    let w = word.trim_matches(|c: char| matches!(c, '(' | ')' | ',' | '.' | ';' | ':'));
    let reference = w
        .strip_prefix('@')
        .or_else(|| w.strip_prefix('?'))
        .map(|r| r.strip_prefix('+').unwrap_or(r))
        .map(|r| r.strip_prefix("android:").unwrap_or(r))
        .and_then(|r| r.split_once('/'))
        .is_some_and(|(kind, name)| {
            !kind.is_empty()
                && kind.bytes().all(|c| c.is_ascii_lowercase())
                && !name.is_empty()
                && name
                    .bytes()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.'))
        });
    reference || format_specifier(w)
}

/// Whether an element's or a block's content is a template's placeholder, not a value: a
/// format's conversion (`%s`, `%1$s`), a build's filter token (`@PASSWORD@`,
/// `@db.password@`, `@@API_KEY@@`: a property's name, in one case), a hint in escaped
/// angle brackets (`&lt;your password&gt;`), or one character repeated (`00000000-0000-…`,
/// a nil GUID; `********`).
fn content_placeholder(value: &str) -> bool {
    let v = value.trim();
    let inner = v.trim_start_matches('@').trim_end_matches('@');
    let token = v.len() > inner.len() + 1
        && v.starts_with('@')
        && v.ends_with('@')
        && !inner.is_empty()
        && inner
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'-'))
        && (!inner.bytes().any(|c| c.is_ascii_uppercase())
            || !inner.bytes().any(|c| c.is_ascii_lowercase()));
    let hint = v
        .strip_prefix("&lt;")
        .and_then(|h| h.strip_suffix("&gt;"))
        .is_some_and(|h| !h.contains("&lt;") && !h.contains("&gt;"));
    let mut alnum = v.bytes().filter(u8::is_ascii_alphanumeric);
    let repeated = match alnum.next() {
        Some(c) => alnum.all(|d| d == c),
        None => !v.is_empty(),
    };
    format_specifier(v) || token || hint || repeated
}

/// Whether `name`, one of [`SECRET_NAMES`](super::patterns::SECRET_NAMES) after `before`,
/// names a secret as its case and its words say. `Pass` does in camelCase after the word of
/// what the password opens (`adminPass`, `"dbPass":`, `smtpPass`, `DBPass`, `mySqlPass`,
/// `vpnPass`; see [`PASS_OWNERS`]), or after that word and an underscore (`DB_Pass`,
/// `DB1_Pass`) — not alone (`Pass: 3/5` is a test run's summary) nor after other words
/// (`lastPass`, `didPass`, `lintPass`: a frame's, a check's). Every other name does.
fn camel_pass(before: &[u8], name: &[u8]) -> bool {
    if name != b"Pass" {
        return true;
    }
    // (After an underscore, the word before it: `DB_Pass`, `Smtp_Pass`.)
    let before = match before.split_last() {
        Some((b'_', rest)) => {
            let word = rest
                .iter()
                .rev()
                .take(16)
                .take_while(|c| c.is_ascii_alphanumeric())
                .count();
            let word = &rest[rest.len() - word..];
            // (A number after the word, `DB1_Pass`, names which one.)
            let digits = word.iter().rev().take_while(|c| c.is_ascii_digit()).count();
            let word = &word[..word.len() - digits];
            return PASS_OWNERS
                .iter()
                .any(|w| word.eq_ignore_ascii_case(w.as_bytes()));
        }
        _ => before,
    };
    // The word before: small letters and digits, with the capital that starts them
    // (`mySqlPass`: `Sql`), or capitals (`DBPass`: `DB`).
    let small = before
        .iter()
        .rev()
        .take_while(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        .count();
    let word = match small {
        0 => {
            let capitals = before
                .iter()
                .rev()
                .take_while(|c| c.is_ascii_uppercase())
                .count();
            if capitals < 2 {
                return false;
            }
            &before[before.len() - capitals..]
        }
        _ => {
            let start = before.len() - small;
            let start = start - usize::from(start > 0 && before[start - 1].is_ascii_uppercase());
            &before[start..]
        }
    };
    PASS_OWNERS
        .iter()
        .any(|w| word.eq_ignore_ascii_case(w.as_bytes()))
}

/// What a camelCase `…Pass` names the password of (see [`camel_pass`]): a user, a service,
/// a store, a device.
const PASS_OWNERS: [&str; 97] = [
    "admin",
    "root",
    "db",
    "database",
    "user",
    "usr",
    "smtp",
    "ftp",
    "sftp",
    "ftps",
    "mail",
    "email",
    "imap",
    "pop",
    "pop3",
    "ldap",
    "bind",
    "redis",
    "mysql",
    "sql",
    "pg",
    "postgres",
    "mongo",
    "mongodb",
    "proxy",
    "wifi",
    "wlan",
    "vnc",
    "rdp",
    "ssh",
    "app",
    "api",
    "client",
    "server",
    "svc",
    "service",
    "sa",
    "master",
    "keystore",
    "truststore",
    "store",
    "key",
    "login",
    "auth",
    "account",
    "acct",
    "default",
    "initial",
    "init",
    "temp",
    "tmp",
    "new",
    "old",
    "current",
    "my",
    "basic",
    "http",
    "web",
    "router",
    "device",
    "sys",
    "system",
    "super",
    "sudo",
    "jenkins",
    "git",
    "docker",
    "registry",
    "nexus",
    "vault",
    "oracle",
    "rabbit",
    "rabbitmq",
    "amqp",
    "kafka",
    "elastic",
    "grafana",
    "secret",
    "private",
    "cert",
    "pfx",
    "jks",
    "vpn",
    "wpa",
    "psk",
    "mqtt",
    "ssl",
    "tls",
    "smb",
    "cifs",
    "nas",
    "mssql",
    "mariadb",
    "pgsql",
    "influx",
    "minio",
    "s3",
];

/// How the value of a name that a command sets, blanks between them (see [`blank_setter`]),
/// stands.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum BlankSetter {
    /// The next argument: `setx`, fish's `set -x`, `npm config set`, `git config`.
    Argument,
    /// The rest of the line, blanks and all: Dockerfile's older `ENV NAME value`.
    Line,
    /// The argument of the `--body` (or `-b`) option after the name: `gh secret set`.
    Body,
    /// PowerShell's `-Value` argument after the name, or the next argument: `Set-Item
    /// Env:NAME value`, `Set-Item -Path Env:NAME -Value value`.
    Value,
}

/// Whether a command before the name whose word starts at `key` (its whole argument: npm's
/// `//registry.npmjs.org/:_authToken`, git's `github.token`, a quoted name) sets it to the
/// argument after it, blanks between — and how that value stands:
/// - Windows's `setx NAME value` (its options before the name too: `setx /M`, `/S host`,
///   `/U user`; by its path, after cmd's prompt);
/// - fish's `set` with its flags (`set -gx NAME value`; not `-e`, which erases, `-q`, which
///   asks, `-n` or `-S`), first on its line or after a command's end (`; set`, `and set`):
///   "you must set Secret Manager2 first" is prose;
/// - a subcommand `set` (`npm|yarn|pnpm|pip config set`, `aws configure set`,
///   `dotnet user-secrets set`, `doppler secrets set`) with options before the name
///   (`--location=user`, `--profile prod`);
/// - `gh secret set [options] NAME … --body value`;
/// - `config [options] NAME value` (git's, with `--global`, `-f file`, `--type=string`; not
///   `--get`, `--unset` or `--list`; conda's `config --set`);
/// - Dockerfile's `ENV NAME value`, `ENV` first on its line in any case;
/// - `nmcli device wifi connect SSID [options] password value` (`nmcli d wifi c …`,
///   `hotspot … ssid SSID password …`), `nmcli connection modify … wifi-sec.psk value`;
/// - Debian's `wpa-psk value`, first on its line (indented or not);
/// - PowerShell's `Set-Item [-Path] Env:NAME [-Value] value` (and `New-Item`).
///
/// The line's ten words before the name's are read, 512 bytes at most, a line continued
/// (`\`, cmd's `^`, PowerShell's backtick at its end) read on into the line before.
fn blank_setter(b: &[u8], key: usize) -> Option<BlankSetter> {
    let floor = key.saturating_sub(512);
    let blank = |c: u8| c == b' ' || c == b'\t';
    let mut i = key;
    while i > floor && !b[i - 1].is_ascii_whitespace() {
        i -= 1;
    }
    let i_name = i;
    // Each word as written, and as a command's name: after a string's, a list's, a field's
    // or a statement's opening (`"setx`, `` `git ``, `cmd=setx`, `;set`), a path
    // (`C:\Windows\System32\setx.exe`) or cmd's prompt (`C:\Users\bob>setx`).
    let is = |w: &[u8], s: &str| w.eq_ignore_ascii_case(s.as_bytes());
    let option = |w: &[u8]| w.len() >= 2 && matches!(w[0], b'-' | b'/');
    let command = |w: &[u8]| {
        ["setx", "setx.exe", "setenv", "set", "config", "env"]
            .iter()
            .any(|c| is(w, c))
    };
    let mut words: [(&[u8], &[u8]); 10] = [(b"", b""); 10];
    let mut n = 0;
    let mut first_on_line = false;
    while n < words.len() {
        while i > floor && blank(b[i - 1]) {
            i -= 1;
        }
        if i == 0 || matches!(b[i - 1], b'\n' | b'\r') {
            // A continued line: the line before ends with `\`, `^` or a backtick.
            let mut j = i;
            if j > floor && b[j - 1] == b'\n' {
                j -= 1;
            }
            if j > floor && b[j - 1] == b'\r' {
                j -= 1;
            }
            if j > floor && j < i && matches!(b[j - 1], b'\\' | b'^' | b'`') {
                i = j - 1;
                continue;
            }
            first_on_line = true;
            break;
        }
        if i == floor {
            break;
        }
        let end = i;
        while i > floor && !b[i - 1].is_ascii_whitespace() {
            i -= 1;
        }
        let word = &b[i..end];
        let name = word
            .iter()
            .rposition(|c| {
                matches!(
                    c,
                    b'"' | b'\''
                        | b'`'
                        | b'('
                        | b'['
                        | b'{'
                        | b'='
                        | b':'
                        | b';'
                        | b'|'
                        | b'&'
                        | b'>'
                        | b'\\'
                        | b'/'
                )
            })
            .map_or(word, |at| &word[at + 1..]);
        words[n] = (word, name);
        n += 1;
        // No command further back can set the name: two words in a row that are neither
        // an option nor a command (the nearer one no option's argument), or the word
        // before a command, read (for `config set`; past options between them, `npm
        // config --global set`).
        let plain = |(word, name): (&[u8], &[u8])| !option(word) && !command(name);
        let before_command = !option(words[n - 1].0)
            && words[..n - 1]
                .iter()
                .rev()
                .find(|(word, _)| !option(word))
                .is_some_and(|(_, name)| command(name));
        if n >= 2 && ((plain(words[n - 2]) && plain(words[n - 1])) || before_command) {
            break;
        }
    }
    let w = &words[..n];
    // PowerShell's environment drive: `Set-Item [-Path] Env:NAME …`, `New-Item`.
    if [&b"env:"[..], b"env:\\", b"env:/"]
        .iter()
        .any(|p| b[i_name..key].eq_ignore_ascii_case(p))
        && w.iter()
            .take(3)
            .any(|&(word, _)| ["Set-Item", "New-Item"].iter().any(|c| is(word, c)))
    {
        return Some(BlankSetter::Value);
    }
    // Options and their arguments only (`--profile prod`, `/S host`): each word is an
    // option or follows one that takes no `=`. (`w` runs from the name back.)
    let options = |between: &[(&[u8], &[u8])], slash: bool| {
        let mut after = false;
        between.iter().rev().all(|(word, _)| {
            let option = word.len() >= 2 && (word[0] == b'-' || (slash && word[0] == b'/'));
            let ok = option || after;
            after = option && !word.contains(&b'=');
            ok
        })
    };
    // Where a command starts: the line's first word, after a command's end, or a word that
    // opens something (`"set`, `;set`, `$(set`).
    let at_command = |k: usize| {
        let (word, name) = w[k];
        (k + 1 == n && first_on_line)
            || word.len() > name.len()
            || w.get(k + 1).is_some_and(|(before, _)| {
                before.ends_with(b";")
                    || before.ends_with(b"&&")
                    || before.ends_with(b"|")
                    || ["$", ">", "and", "or", "then", "do", "begin", "sudo"]
                        .iter()
                        .any(|s| is(before, s))
            })
    };
    // NetworkManager's `nmcli device wifi connect SSID password …` (`nmcli d wifi c "My
    // Net" ifname wlan0 password …`, `hotspot … ssid SSID password …`): `password`, with
    // `nmcli` and then `wifi` before it on its line; a connection's property, `wifi-sec.psk
    // …`, `+wifi-sec.psk …`, `802-1x.password …`, `802-1x.private-key-password …`, with
    // `nmcli` before it. Debian's interfaces file: `wpa-psk
    // …`, first on its line.
    let word = &b[key..b.len().min(key + 64)];
    let word = &word[..word
        .iter()
        .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-' | b'.'))
        .count()];
    let property =
        word.ends_with(b".psk") || word.ends_with(b".password") || word.ends_with(b"-password");
    // (A property's value added to or removed from a list: `+wifi-sec.psk`.)
    let start = key - usize::from(key > 0 && property && matches!(b[key - 1], b'+' | b'-'));
    if (word == b"password" || property) && start > 0 && blank(b[start - 1]) {
        let line = line_back(b, key, 256);
        // (Its searcher built once: built for each, a run of prose's `password` spent a
        // fifth of its validation on it.)
        static NMCLI: OnceLock<memchr::memmem::Finder<'static>> = OnceLock::new();
        let nmcli = NMCLI.get_or_init(|| memchr::memmem::Finder::new(b"nmcli "));
        if let Some(nmcli) = nmcli.find(&b[line..key])
            && (property || memchr::memmem::find(&b[line + nmcli..key], b" wifi ").is_some())
        {
            return Some(BlankSetter::Argument);
        }
    }
    if word == b"wpa-psk" && n == 0 && first_on_line {
        return Some(BlankSetter::Argument);
    }
    (0..n).find_map(|k| {
        let (word, command) = w[k];
        let between = &w[..k];
        if is(command, "setx") || is(command, "setx.exe") || command == b"setenv" {
            return options(between, true).then_some(BlankSetter::Argument);
        }
        // (Dockerfile's line in a JSON string or a list, `"ENV API_KEY …`: its one argument,
        // which the string's quote ends.)
        if k == 0 && is(command, "env") {
            if n == 1 && first_on_line {
                return Some(BlankSetter::Line);
            }
            if word.len() > command.len() {
                return Some(BlankSetter::Argument);
            }
        }
        // (fish's, and the subcommands', in small letters only: "Set Token Lifetime2 in the
        // portal" is prose.)
        if command == b"set" {
            let sub = w[k + 1..]
                .iter()
                .find(|(word, _)| !option(word))
                .map(|(_, c)| *c);
            if let Some(sub) = sub.filter(|c| {
                [
                    "config",
                    "configure",
                    "secret",
                    "secrets",
                    "user-secrets",
                    "npm",
                    "yarn",
                    "pnpm",
                ]
                .iter()
                .any(|s| is(c, s))
            }) {
                return options(between, false).then_some(match is(sub, "secret") {
                    true => BlankSetter::Body,
                    false => BlankSetter::Argument,
                });
            }
            // fish: flags only, none that erases, asks or lists.
            let flag = |(f, _): &(&[u8], &[u8])| match f.strip_prefix(b"--") {
                Some(long) => !["erase", "query", "names", "show"]
                    .iter()
                    .any(|l| is(long, l)),
                None => {
                    f.len() >= 2
                        && f[0] == b'-'
                        && !f[1..]
                            .iter()
                            .any(|c| matches!(c, b'e' | b'q' | b'n' | b'S'))
                }
            };
            return (between.iter().all(flag) && at_command(k)).then_some(BlankSetter::Argument);
        }
        if command == b"config" {
            let reads = between.iter().any(|(f, _)| {
                [
                    "--get",
                    "--unset",
                    "--list",
                    "-l",
                    "--edit",
                    "-e",
                    "--remove-section",
                    "--rename-section",
                ]
                .iter()
                .any(|o| f.len() >= o.len() && is(&f[..o.len()], o))
            });
            return (!reads && options(between, false)).then_some(BlankSetter::Argument);
        }
        None
    })
}

/// Where the value of PowerShell's `Set-Item Env:NAME …` starts, its first argument after
/// the name at `first`: that argument, or `-Value`'s (`-Value "…"`, `-Value:…`), past its
/// opening quote.
fn value_parameter(b: &[u8], first: usize) -> Option<usize> {
    let mut j = first;
    if b[j] == b'-' {
        let name = b[j + 1..b.len().min(j + 16)]
            .iter()
            .take_while(|c| c.is_ascii_alphabetic())
            .count();
        if !b[j + 1..j + 1 + name].eq_ignore_ascii_case(b"value") {
            return None;
        }
        j += 1 + name;
        j += usize::from(b.get(j) == Some(&b':'));
        while j < b.len() && matches!(b[j], b' ' | b'\t') && j - first < 64 {
            j += 1;
        }
    }
    let j = past_quote(b, j, b.len()).unwrap_or(j);
    (j < b.len() && !b[j].is_ascii_whitespace()).then_some(j)
}

/// Where the value of `gh secret set NAME … --body value` starts: the argument of the
/// line's `--body` or `-b` option within 1 KiB after `at` (`--body=value`, `-bvalue` too),
/// past its opening quote (escaped or not: a command in a JSON string).
fn body_option(b: &[u8], at: usize) -> Option<usize> {
    let end = b.len().min(at + 1024);
    let line = memchr::memchr2(b'\n', b'\r', &b[at..end]).map_or(end, |i| at + i);
    // (Each `-b` found by one search, not each `-` looked at: a run of such setters on one
    // line read every `-` of 1 KiB for each, 4x the bench text.)
    let mut j = memchr::memmem::find_iter(&b[at..line], b"-b").find_map(|k| {
        let k = at + k;
        // (`--body`: the `-b` its second dash starts.)
        let i = match k > at && b[k - 1] == b'-' {
            true => k - 1,
            false => k,
        };
        let r = &b[i..line];
        if !(i == at || b[i - 1] == b' ' || b[i - 1] == b'\t') {
            None
        } else if r.starts_with(b"--body") && matches!(r.get(6), Some(b' ' | b'\t' | b'=')) {
            Some(i + 6)
        } else if i == k && r.len() > 2 {
            Some(i + 2)
        } else {
            None
        }
    })?;
    while j < line && matches!(b[j], b' ' | b'\t' | b'=') && !matches!(b[j - 1], b'=') {
        j += 1;
    }
    let mut k = j;
    while k < line && b[k] == b'\\' && k - j < 3 {
        k += 1;
    }
    if k < line && matches!(b[k], b'"' | b'\'') {
        j = k + 1;
    }
    (j < line && !b[j].is_ascii_whitespace()).then_some(j)
}

/// The XML element that holds the value of the field named at `key..at` (see
/// [`named_secret`]), where the trigger did not end at its tag's `>`: where its content
/// starts, and the name its closing tag must end with.
/// - The element named so, attributes on its tag (WS-Security's `<wsse:Password
///   Type="…#PasswordText">`, `<password encrypted="false">`), on lines of their own too.
/// - An element whose `key` or `name` attribute names it, its other attributes before
///   or after (Java's properties `<entry key="db.password">`, Android's `<string
///   name="api_key" translatable="false">`, `<property name="password">`), or its `<value>`
///   child (.NET's `<setting name="ApiKey" serializeAs="String">` and `<value>…</value>`).
///   Not a C# documentation comment's `<param name="token">`: its content describes it.
/// - A `<name>` element that names it, then its `<value>` (Hadoop's and Hive's
///   `<name>javax.jdo.option.ConnectionPassword</name>` and `<value>…</value>`, a
///   `<description>` or comments between; a servlet's `<param-name>` and `<param-value>`).
///
/// A tag's attributes, up to sixteen, are `name="value"` or single-quoted (up to three
/// backslashes before each quote: JSON-escaped twice), white space between them (line
/// breaks too, as written or JSON-escaped), each value on its line within 1 KiB; the tag
/// ends at `>` (a self-closing tag holds nothing). The content starts after blanks and up
/// to three line breaks. Each candidate reads a bounded length: the element's `<` up to
/// 1 KiB back (a `memrchr`, three at most), its tag and its siblings a few KiB on.
fn element_tag(b: &[u8], key: usize, at: usize) -> Option<(usize, &[u8])> {
    let blank = |c: u8| c == b' ' || c == b'\t';
    // White space from `j` (line breaks as written or JSON-escaped, `\n`, `\\n`), at most
    // `max` bytes: where it ends.
    let space = |mut j: usize, max: usize| {
        let from = j;
        while j < b.len() && j - from < max {
            match b[j] {
                b' ' | b'\t' | b'\r' | b'\n' => j += 1,
                b'\\' => {
                    let slashes = b[j..].iter().take(4).take_while(|&&c| c == b'\\').count();
                    match b.get(j + slashes) {
                        Some(b'n' | b'r' | b't') if slashes <= 3 => j += slashes + 1,
                        _ => break,
                    }
                }
                _ => break,
            }
        }
        j
    };
    // Blanks and up to three line breaks from `j`: the content's first character, if any.
    let content = |mut j: usize| {
        for _ in 0..4 {
            let line = j;
            while j < b.len() && blank(b[j]) && j - line < 40 {
                j += 1;
            }
            j += usize::from(b.get(j) == Some(&b'\r'));
            if b.get(j) != Some(&b'\n') {
                break;
            }
            j += 1;
        }
        (j < b.len() && !b[j].is_ascii_whitespace()).then_some(j)
    };
    let name_len = |j: usize| {
        b[j.min(b.len())..b.len().min(j + 64)]
            .iter()
            .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-' | b'.' | b':'))
            .count()
    };
    // A tag's attributes from `j` (right after its name or an attribute), each after white
    // space: where its `>` ends, or with `stop`, whether the attribute at `stop` is one.
    let attributes = |mut j: usize, stop: Option<usize>| -> Option<usize> {
        for _ in 0..=16 {
            let from = j;
            j = space(j, 256);
            if Some(j) == stop {
                return (j > from).then_some(j);
            }
            match b.get(j) {
                Some(b'>') if stop.is_none() => return Some(j + 1),
                Some(_) if j > from => {}
                _ => return None,
            }
            let name = name_len(j);
            if name == 0 {
                return None;
            }
            j += name;
            while j < b.len() && blank(b[j]) && j - from < 512 {
                j += 1;
            }
            if b.get(j) != Some(&b'=') {
                return None;
            }
            j += 1;
            while j < b.len() && blank(b[j]) && j - from < 512 {
                j += 1;
            }
            let (q, escapes) = quote_at(b, j)?;
            j += escapes;
            let value = &b[j + 1..b.len().min(j + 1 + 1024)];
            let end = memchr::memchr2(q, b'\n', value)?;
            if value[end] != q {
                return None;
            }
            j += 1 + end + 1;
        }
        None
    };
    // A `<value>` element (with attributes or none) at `j`, after comments and (for a
    // `<name>`'s sibling) a `<description>`: its content's start and its name.
    let value_child = |mut j: usize, siblings: bool| -> Option<(usize, &[u8])> {
        for _ in 0..4 {
            j = space(j, 256);
            let rest = &b[j.min(b.len())..];
            let skip = |open: &[u8], close: &[u8], max: usize| {
                (rest.len() >= open.len() && rest[..open.len()].eq_ignore_ascii_case(open))
                    .then(|| memchr::memmem::find(&rest[..rest.len().min(max)], close))
                    .flatten()
                    .map(|i| j + i + close.len())
            };
            if let Some(end) = skip(b"<!--", b"-->", 512) {
                j = end;
                continue;
            }
            if siblings && let Some(end) = skip(b"<description", b"</description>", 1024) {
                j = end;
                continue;
            }
            let name = ["<value", "<param-value"].into_iter().find(|n| {
                rest.len() > n.len()
                    && rest[..n.len()].eq_ignore_ascii_case(n.as_bytes())
                    && (rest[n.len()] == b'>' || rest[n.len()].is_ascii_whitespace())
            })?;
            let close = &b[j + 1..j + name.len()];
            return Some((content(attributes(j + name.len(), None)?)?, close));
        }
        None
    };
    let before = &b[..key];
    // A `<name>` element and its sibling `<value>`.
    let named = ["<name>", "<param-name>"].into_iter().find(|n| {
        before.len() >= n.len()
            && before[before.len() - n.len()..].eq_ignore_ascii_case(n.as_bytes())
    });
    if let Some(open) = named {
        let close = open.len() + 1;
        let rest = &b[at..];
        if rest.len() < close
            || rest[..2] != *b"</"
            || !rest[2..close].eq_ignore_ascii_case(&open.as_bytes()[1..])
        {
            return None;
        }
        return value_child(at + close, true);
    }
    let keyed = !element_open(before);
    // Where the tag's attributes after the name start, and the element's name.
    let (j, close) = if !keyed {
        (at, &b[key..at])
    } else {
        // The name quoted, as a `key` or `name` attribute's value.
        let (&q, rest) = before.split_last()?;
        if !matches!(q, b'"' | b'\'') {
            return None;
        }
        let escapes = rest
            .iter()
            .rev()
            .take(4)
            .take_while(|&&c| c == b'\\')
            .count();
        if escapes > 3 {
            return None;
        }
        let mut i = rest.len() - escapes;
        while i > 0 && blank(b[i - 1]) {
            i -= 1;
        }
        if i == 0 || b[i - 1] != b'=' {
            return None;
        }
        i -= 1;
        while i > 0 && blank(b[i - 1]) {
            i -= 1;
        }
        let attribute = b[i.saturating_sub(5)..i]
            .iter()
            .rev()
            .take_while(|c| c.is_ascii_alphabetic())
            .count();
        let named = &b[i - attribute..i];
        if !(named.eq_ignore_ascii_case(b"key") || named.eq_ignore_ascii_case(b"name")) {
            return None;
        }
        let i = i - attribute;
        // The element's `<`: the nearest before the attribute whose tag, read on, reaches
        // it (a `<` inside another attribute's value, `note="a<b"`, is not it).
        let floor = i.saturating_sub(1024);
        let mut to = i;
        let mut found = None;
        for _ in 0..3 {
            let Some(lt) = memchr::memrchr(b'<', &b[floor..to]).map(|k| floor + k) else {
                break;
            };
            let name = name_len(lt + 1);
            if name > 0 && attributes(lt + 1 + name, Some(i)).is_some() {
                found = Some((lt + 1, lt + 1 + name));
                break;
            }
            to = lt;
        }
        let (start, end) = found?;
        let element = &b[start..end];
        // (A C# documentation comment's parameter: its content describes it.)
        if element.eq_ignore_ascii_case(b"param") || element.eq_ignore_ascii_case(b"typeparam") {
            return None;
        }
        // (The attribute's closing quote, escaped as its opening one.)
        let close_quote = &b[at..];
        if close_quote.len() <= escapes
            || close_quote[..escapes].iter().any(|&c| c != b'\\')
            || close_quote[escapes] != q
        {
            return None;
        }
        (at + escapes + 1, element)
    };
    let first = content(attributes(j, None)?)?;
    // (A named element's `<value>` child, after comments: .NET's settings.)
    if keyed && let Some(child) = value_child(first, false) {
        return Some(child);
    }
    Some((first, close))
}

/// Whether the element whose name's word ends `before` opens there: `<password`, or with a
/// namespace's prefix, `<wsse:Password`.
fn element_open(before: &[u8]) -> bool {
    match before.split_last() {
        Some((b'<', _)) => true,
        Some((b':', rest)) => {
            let prefix = rest
                .iter()
                .rev()
                .take(32)
                .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-' | b'.'))
                .count();
            prefix > 0 && rest[..rest.len() - prefix].last() == Some(&b'<')
        }
        _ => false,
    }
}

/// Whether a YAML block scalar's first line, whose text starts at `first`, is indented
/// further than its key (at `key`) stands on its line: a block's lines are (`- password: |`
/// then the value four blanks in); a line as far in is the mapping's next key, and the
/// block is empty.
fn block_indented(b: &[u8], key: usize, first: usize) -> bool {
    let indent = b[..first]
        .iter()
        .rev()
        .take_while(|&&c| c == b' ' || c == b'\t')
        .count();
    let column = b[key.saturating_sub(128)..key]
        .iter()
        .rev()
        .position(|&c| c == b'\n' || c == b'\r')
        .unwrap_or(if key <= 128 { key } else { usize::MAX });
    indent > 0 && indent > column
}

/// Where the value of a YAML literal block scalar starts whose `|` is at `first` after a
/// field's `:` (in `between`): `password: |`, `|-`, `|2`, a comment after it, then the
/// block's first line that is not blank (up to four blank ones first), indented. `None`
/// when no block starts there (a value that starts with `|`: `password=|S3cret9`).
fn block_start(b: &[u8], first: usize, between: &[u8]) -> Option<usize> {
    if b[first] != b'|' || memchr::memchr(b':', between).is_none() {
        return None;
    }
    block_body(b, first)
}

/// Where the first line of a YAML block scalar's content starts, its header's `|` or `>`
/// at `first` (see [`block_start`]).
fn block_body(b: &[u8], first: usize) -> Option<usize> {
    let end = b.len().min(first + 512);
    let mut i = first + 1;
    while i < end && i - first <= 2 && matches!(b[i], b'-' | b'+' | b'0'..=b'9') {
        i += 1;
    }
    let header = i;
    while i < end && matches!(b[i], b' ' | b'\t') {
        i += 1;
    }
    if i < end && b[i] == b'#' && i > header {
        i += memchr::memchr2(b'\n', b'\r', &b[i..end])?;
    }
    for _ in 0..5 {
        // The line break, then the next line's blanks.
        i += usize::from(b.get(i) == Some(&b'\r'));
        if i >= end || b[i] != b'\n' {
            return None;
        }
        i += 1;
        let indent = b[i..end]
            .iter()
            .take_while(|&&c| c == b' ' || c == b'\t')
            .count();
        i += indent;
        if i < end && !b[i].is_ascii_whitespace() {
            return (indent > 0).then_some(i);
        }
    }
    None
}

/// A YAML value after its node's properties, at `first` after a field's `:` (in
/// `between`): an anchor (`&db_pw`) and the plain string's tags (`!!str`, `!!binary`), in
/// either order, each followed by blanks (`password: !!str |`, `token: &t Zq8r…`). Where
/// the value starts — a block scalar's content (see [`block_start`]; a folded one's too),
/// or the value on the line (after its opening quote) — and whether it is a block. Other
/// tags say the value is something else (Ansible's `!vault |` is encrypted).
fn after_properties(b: &[u8], first: usize, between: &[u8]) -> Option<(usize, bool)> {
    if !matches!(b[first], b'!' | b'&')
        || memchr::memchr(b':', between).is_none()
        || matches!(b[first - 1], b'"' | b'\'')
    {
        return None;
    }
    let mut j = first;
    // (The last property's last character.)
    let mut last = first;
    for _ in 0..2 {
        let from = j;
        match b.get(j) {
            Some(b'&') => {
                j += 1;
                let name = b[j..b.len().min(j + 64)]
                    .iter()
                    .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-' | b'.'))
                    .count();
                if name == 0 {
                    return None;
                }
                j += name;
            }
            Some(b'!') => {
                let tag = [&b"!!str"[..], b"!!binary"]
                    .into_iter()
                    .find(|t| b[j..].starts_with(t))?;
                j += tag.len();
            }
            _ => break,
        }
        last = j - 1;
        let blanks = b[j..b.len().min(j + 40)]
            .iter()
            .take_while(|&&c| c == b' ' || c == b'\t')
            .count();
        // (A line's end right after it: the value is on the lines below.)
        if j == from || (blanks == 0 && !matches!(b.get(j), None | Some(b'\r' | b'\n'))) {
            return None;
        }
        j += blanks;
    }
    match *b.get(j)? {
        b'|' | b'>' => block_body(b, j).map(|f| (f, true)),
        b'"' | b'\'' => {
            (j + 1 < b.len() && !b[j + 1].is_ascii_whitespace()).then_some((j + 1, false))
        }
        // (A quote JSON-escaped: `password: !!str \"…\"` in a JSON string.)
        b'\\' => {
            let k = j + quote_at(b, j)?.1;
            (k + 1 < b.len() && !b[k + 1].is_ascii_whitespace() && b[k + 1] != b'\\')
                .then_some((k + 1, false))
        }
        // The value on the lines below, after a comment or none: a plain scalar, indented
        // (not a mapping's key: a plain scalar holds no `: `).
        b'#' | b'\r' | b'\n' => {
            let content = block_body(b, last)?;
            let line = &b[content..b.len().min(content + 256)];
            let line = &line[..memchr::memchr2(b'\n', b'\r', line).unwrap_or(line.len())];
            let key = memchr::memmem::find(line, b": ").is_some() || line.ends_with(b":");
            (!key).then_some((content, true))
        }
        c if !c.is_ascii_whitespace() => Some((j, false)),
        _ => None,
    }
}

/// Where a value that starts at `first` and whose first line ends at `end` ends: for a YAML
/// block scalar (`block`), after the block's next lines indented at least as far as the
/// first (not a blank one), at most to `limit`; else at `end`.
fn block_end(text: &str, first: usize, end: usize, limit: usize, block: bool) -> usize {
    if !block {
        return end;
    }
    let b = text.as_bytes();
    let indent = b[..first]
        .iter()
        .rev()
        .take_while(|&&c| c == b' ' || c == b'\t')
        .count();
    let mut end = end;
    let mut at = memchr::memchr(b'\n', &b[end..limit]).map(|i| end + i + 1);
    while let Some(start) = at {
        let line = memchr::memchr2(b'\n', b'\r', &b[start..limit]).map_or(limit, |i| start + i);
        let blanks = b[start..line]
            .iter()
            .take_while(|&&c| c == b' ' || c == b'\t')
            .count();
        // (A blank line goes on with the block when a line indented as far follows.)
        if start + blanks == line {
            at = (line < limit)
                .then(|| memchr::memchr(b'\n', &b[line..limit]).map(|i| line + i + 1))
                .flatten();
            continue;
        }
        if blanks < indent {
            break;
        }
        end = start + text[start..line].trim_end().len();
        at = (line < limit)
            .then(|| memchr::memchr(b'\n', &b[line..limit]).map(|i| line + i + 1))
            .flatten();
    }
    end
}

/// Whether the `IDENTIFIED` at `at` belongs to a statement that sets a user's password: a
/// `USER`, a `ROLE`, a `LOGIN`, a `GRANT` or a link's `CONNECT` in the 128 bytes before it
/// (prose says "identified by 'CVE-2024-1234'" too). Asked only of a value that passes.
fn sql_statement(b: &[u8], at: usize) -> bool {
    let from = at.saturating_sub(128);
    (from..at).any(|i| {
        let word: &[u8] = match b[i] | 0x20 {
            b'u' => b"user",
            b'r' => b"role",
            b'l' => b"login",
            b'g' => b"grant",
            b'c' => b"connect",
            _ => return false,
        };
        b[i..at.min(i + word.len())].eq_ignore_ascii_case(word)
    })
}

/// Whether a field named `token` whose value ends at `end` is a tokenizer's output, a
/// model's log probabilities (`{"token": "Hello1234", "logprob": -0.1}`).
fn logprobs_after(b: &[u8], key: &[u8], end: usize) -> bool {
    key.eq_ignore_ascii_case(b"token")
        && memchr::memmem::find(&b[end..b.len().min(end + 64)], b"logprob").is_some()
}

/// Whether the bare word at `first`, where a field's value would start after its name, is
/// the next field's name, not a value: a secret's name whole (see
/// `patterns::secret_name_at`) before white space or the text's end (`HASLO SENHA`,
/// `password: token`), or before a `=` or a `:` and then nothing or a blank (`token=`,
/// `Passwort: …`); or a run — a name, or a word that ends with one (see
/// [`names_a_secret`]), before a `=` or a `:` and another such word and separator
/// (`password=token=password=…`, `SENHA:SIFRE:…`, `dbSenha=dbHaslo=…`). Not a value that
/// starts so (`Token:abc123…`, `mypass=Xk9…`, `rootpass:Hunter2Password`).
fn next_field_name(text: &str, first: usize) -> bool {
    let b = text.as_bytes();
    let word_at = |at: usize| field_word(&b[at.min(b.len())..]);
    let word = word_at(first);
    let Some(w) = text.get(first..first + word).filter(|w| w.len() >= 2) else {
        return false;
    };
    let whole = |w: &str| {
        super::patterns::secret_name_at(w.as_bytes()) == Some(w)
            || super::patterns::local_name_at(w.as_bytes()) == Some(w)
    };
    let after = first + word;
    match b.get(after) {
        c if c.is_none_or(u8::is_ascii_whitespace) => whole(w),
        Some(b'=' | b':') => {
            let label = matches!(
                b.get(after + 1),
                None | Some(b' ' | b'\t' | b'\r' | b'\n' | b';' | b',' | b'"' | b'\'' | b')')
            );
            if label && whole(w) {
                return true;
            }
            let next = after + 1;
            let n = word_at(next);
            matches!(b.get(next + n), Some(b'=' | b':'))
                && n >= 2
                && (whole(w) || names_a_secret(w))
                && text
                    .get(next..next + n)
                    .is_some_and(|v| whole(v) || names_a_secret(v))
        }
        _ => false,
    }
}

/// Where the value a setter's argument list gives after its name starts, the argument at
/// `first` (bare: a quoted one is the value, whatever it holds): there, unless a keyword
/// names that argument (`cast=str`, `default=None`: none) — but inside the string a
/// keyword for a default gives (`default="…"`, python-decouple's, django-environ's,
/// `os.environ.get`'s; `defaultValue=`, `fallback=`; Ruby's `default: '…'`), its quote
/// JSON-escaped too (see [`string_start`]), tripled too, white space around its `=`; after
/// three other keywords at most (`cast=str, default="…"`); or after a type's class
/// (Spring's `getProperty(name, String.class, "…")`).
fn keyword_default(b: &[u8], first: usize) -> Option<usize> {
    let space = |i: usize| past_white(b, i, 40);
    let mut at = first;
    for k in 0..4 {
        // (Not a keyword: the argument itself, if it is the first after the name — inside
        // its string where a prefix stands before its quote, `b'…'`, C's `L"…"`.)
        let positional = (k == 0).then(|| string_start(b, first, b.len()).unwrap_or(first));
        let word = b[at..]
            .iter()
            .take(32)
            .take_while(|c| c.is_ascii_alphanumeric() || **c == b'_')
            .count();
        if word == 0 || b[at].is_ascii_digit() {
            return positional;
        }
        // (Spring's `env.getProperty("db.password", String.class, "…")`: the type's class
        // before the default — named whole too, `java.lang.String.class`, or Kotlin's,
        // `String::class.java`.)
        let class = (k == 0).then(|| {
            let dotted = b[at..]
                .iter()
                .take(64)
                .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.'))
                .count();
            match b[at + dotted..].starts_with(b"::class.java") {
                true => Some(at + dotted + 12),
                false => b[at..at + dotted]
                    .ends_with(b".class")
                    .then_some(at + dotted),
            }
        });
        if let Some(Some(class)) = class {
            let comma = space(class);
            return match b.get(comma) {
                Some(b',') => string_start(b, space(comma + 1), b.len()),
                _ => positional,
            };
        }
        let eq = space(at + word);
        let equals = match (b.get(eq), b.get(eq + 1)) {
            (Some(b'='), c) if c != Some(&b'=') => true,
            (Some(b':'), Some(c)) if *c != b':' => false,
            _ => return positional,
        };
        let default = ["default", "defaultvalue", "default_value", "fallback"]
            .iter()
            .any(|w| b[at..at + word].eq_ignore_ascii_case(w.as_bytes()));
        let value = space(eq + 1);
        match string_start(b, value, b.len()) {
            Some(inside) if default => {
                // (A triple-quoted string's value starts past its three quotes.)
                let q = b[inside - 1];
                let triple = b[inside..].starts_with(&[q, q]) && matches!(q, b'"' | b'\'');
                return Some(inside + 2 * usize::from(triple)).filter(|&f| f < b.len());
            }
            // (Ruby's `:` after another word may be a value's own, `admin:x`.)
            _ if !equals => return positional,
            _ if default => return None,
            // (The next argument, read as a call's from its `(`.)
            _ => at = argument_start(b, value - 1, 1)?.0,
        }
    }
    None
}

/// Whether the name at `key..name` (and a secret's name after it) is libcurl's option for a
/// password, its argument after it (`curl_setopt($ch, CURLOPT_USERPWD, "…")`, `CURLOPT_
/// PASSWORD`, `CURLOPT_PROXYUSERPWD`), or pycurl's inside its `setopt(` (`c.setopt(
/// pycurl.USERPWD, '…')`, `c.setopt(c.PASSWORD, …)`). (`user:password` is taken whole,
/// as after `CURLOPT_USERPWD =>`.)
fn curl_option(b: &[u8], key: usize, name: usize) -> bool {
    // (In a call that sets an option — `curl_setopt`, `curl_easy_setopt`, a wrapper's
    // `setOption` — not a manual's prose: `CURLOPT_PASSWORD, "Pass a char * …"`.)
    if b[key..name].starts_with(b"CURLOPT_") {
        return b[key.saturating_sub(160)..key]
            .windows(6)
            .any(|w| w.eq_ignore_ascii_case(b"setopt"));
    }
    let before = b[..key].trim_ascii_end();
    b[key..name].contains(&b'.')
        && (before.ends_with(b"setopt(") || before.ends_with(b"setopt_string("))
}

/// Whether a double-quoted string's text (from its first character, up to its closing
/// quote) names a variable PHP interpolates: `$name`, `{$name}`.
fn interpolates(s: &[u8]) -> bool {
    let end = s.iter().position(|&c| c == b'"').unwrap_or(s.len());
    s[..end]
        .windows(2)
        .any(|w| w[0] == b'$' && (w[1].is_ascii_alphabetic() || matches!(w[1], b'_' | b'{')))
        || memchr::memmem::find(&s[..end], b"{$").is_some()
}

/// Whether the quoted name that starts at `key` is the first argument of a call that sets
/// what it names to the next argument, or falls back to it: PHP's `define('DB_PASSWORD',
/// …)`, `os.Setenv(…)`, `os.putenv`, `os.environ.setdefault`, `System.setProperty`,
/// `[Environment]::SetEnvironmentVariable`, `localStorage.setItem`, `setAttribute`,
/// `addProperty`, a map's `set` and `put`, a form's `append`, `getenv`, `get`, Java's
/// `getOrDefault`, Ruby's `ENV.fetch`, Laravel's and django-environ's `env` and
/// python-decouple's `config` with a default.
fn setter_call(b: &[u8], key: usize) -> bool {
    let call = setter_call_named(b, key);
    call.is_some_and(|(word, receiver)| {
        // (A property's or an attribute's default only of a configuration's: not a form's
        // messages, `getattr(errors, "password", "Password must …")`, review 50.)
        !(word.eq_ignore_ascii_case(b"getproperty") || word == b"getattr")
            || receiver.is_empty()
            || configuration_word(receiver)
    })
}

/// Whether `between` (what stands between a secret's name and its value's first character)
/// is a lookup's fallback operator (see `patterns::named_secret`): `||`, `??`, `?:`, `or`
/// or Rust's `unwrap_or`, and the string's quote.
fn lookup_fallback(between: &[u8]) -> bool {
    matches!(between.last(), Some(b'"' | b'\'' | b'`'))
        && !between.contains(&b'=')
        && holds_any(
            between,
            &["||", "??", "?:", " or ", "unwrap_or", "default", "d("],
        )
}

/// Whether a configuration's lookup stands before the secret's name at `name` (its field's
/// path too), on its line within 48 bytes: the environment's (`process.env.`, `os.environ`,
/// `getenv(`, `ENV[`, `env::var(`), settings', a configuration's, properties', secrets', a
/// vault's.
fn configuration_before(b: &[u8], name: usize) -> bool {
    let line = &b[line_back(b, name, 48)..name];
    // (Or a template's variable, `{{ db_password | default('…') }}`: the values it is
    // rendered with.)
    configuration_word(line) || memchr::memmem::rfind(line, b"{{").is_some()
}

/// Where the line that `at` stands on starts, read back `reach` bytes at most (from there
/// where it starts further back).
fn line_back(b: &[u8], at: usize, reach: usize) -> usize {
    let floor = at.saturating_sub(reach);
    memchr::memrchr2(b'\n', b'\r', &b[floor..at]).map_or(floor, |k| floor + k + 1)
}

/// Whether `words` name a configuration (see [`configuration_before`]).
fn configuration_word(words: &[u8]) -> bool {
    // (`conf` and `cfg` for a configuration however shortened, `prop` for properties: a
    // receiver named `prop`, `cfg`, `conf` was read as none, review 51.)
    const WORDS: [&str; 10] = [
        "env",
        "conf",
        "cfg",
        "setting",
        "secret",
        "prop",
        "system",
        "vault",
        "credential",
        "options",
    ];
    holds_any(words.to_ascii_lowercase(), &WORDS)
}

/// The setter call whose argument the name at `key` is (see [`setter_call`]): its name and
/// its receiver (the word before its `.`, if any).
fn setter_call_named(b: &[u8], key: usize) -> Option<(&[u8], &[u8])> {
    let mut i = key;
    // The name's opening quote (escaped or not), blanks and line breaks (gofmt's and
    // black's argument lists), the call's `(`, blanks.
    while i > 0 && matches!(b[i - 1], b'"' | b'\'' | b'\\') && key - i < 4 {
        i -= 1;
    }
    while i > 0 && b[i - 1].is_ascii_whitespace() && key - i < 24 {
        i -= 1;
    }
    if i == key {
        return None;
    }
    // (Python's `getattr(settings, "DB_PASSWORD", "…")`: an object before the name, its
    // default after it.)
    if i > 0 && b[i - 1] == b',' {
        let mut j = i - 1;
        while j > 0 && b[j - 1] == b' ' && i - 1 - j < 8 {
            j -= 1;
        }
        let object = b[..j]
            .iter()
            .rev()
            .take(64)
            .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.'))
            .count();
        if object > 0 && b[..j - object].ends_with(b"getattr(") {
            return Some((b"getattr", &b[j - object..j]));
        }
    }
    // (configparser's section before the name: `cfg.get("db", "password", fallback="…")`.)
    let section = i > 0 && b[i - 1] == b',' && {
        i = section_before(b, i - 1);
        i > 0 && b[i - 1] == b'('
    };
    if i == 0 || b[i - 1] != b'(' {
        return None;
    }
    let mut end = i - 1;
    while end > 0 && b[end - 1] == b' ' && i - end < 3 {
        end -= 1;
    }
    let start = end
        - b[..end]
            .iter()
            .rev()
            .take(32)
            .take_while(|c| c.is_ascii_alphanumeric() || **c == b'_')
            .count();
    // (Not `add` or `insert`: schemas and lexers add names ending in a secret's with a
    // type or a word, `table.insert("api_token", "varchar(255)")`.)
    const SETTERS: [&str; 22] = [
        "define",
        "setenv",
        "putenv",
        "setdefault",
        "setproperty",
        "setenvironmentvariable",
        "setitem",
        "setattribute",
        "addproperty",
        "set",
        "put",
        "append",
        "set_secret",
        "setsecret",
        // A default that is the secret itself: `os.environ.get("SECRET_KEY", "dev-…")`.
        "getenv",
        "get",
        "fetch",
        // (A keyword argument's, `kwargs.pop('password', '…')`.)
        "pop",
        "getordefault",
        "env",
        "config",
        // (Java's `System.getProperty("db.password", "…")`, `props.getProperty(…)`.)
        "getproperty",
    ];
    let word = &b[start..end];
    if section {
        return (word == b"get").then_some((word, &b[start..start]));
    }
    // (The receiver: the word before the call's `.`, `System` in `System.getProperty(`.)
    let receiver = match start.checked_sub(1).map(|d| b[d]) {
        Some(b'.') => {
            let r = b[..start - 1]
                .iter()
                .rev()
                .take(32)
                .take_while(|c| c.is_ascii_alphanumeric() || **c == b'_')
                .count();
            &b[start - 1 - r..start - 1]
        }
        _ => &b[start..start],
    };
    // (django-environ's typed lookups, `env.str("DB_PASSWORD", default="…")`.)
    (b[..start].ends_with(b"env.")
        || SETTERS
            .iter()
            .any(|w| word.eq_ignore_ascii_case(w.as_bytes())))
    .then_some((word, receiver))
}

/// Where the quoted argument before the comma at `comma` starts, past blanks before it
/// (`cfg.get("db", …`: at its quote), or `comma` where none stands there.
fn section_before(b: &[u8], comma: usize) -> usize {
    let mut j = comma;
    while j > 0 && b[j - 1] == b' ' && comma - j < 8 {
        j -= 1;
    }
    let Some(&q @ (b'"' | b'\'')) = j.checked_sub(1).map(|k| &b[k]) else {
        return comma;
    };
    let inside = &b[j.saturating_sub(65)..j - 1];
    match memchr::memrchr(q, inside) {
        Some(k) => {
            let open = j.saturating_sub(65) + k;
            // (Blanks after the call's `(`.)
            open - b[..open]
                .iter()
                .rev()
                .take(8)
                .take_while(|&&c| c == b' ')
                .count()
        }
        None => comma,
    }
}

/// True when a JSON field named `key` holds a secret as its value `value` (a string, or a
/// number as written): its name ends in one of [`SECRET_NAMES`](super::patterns::SECRET_NAMES)
/// (`db_password`, `clientSecret`) and the value is one as a quoted value is (see
/// [`secret_value`]). The walker of arguments and results asks it for each field, since the
/// value alone says nothing (`{"password": "hunter2"}`).
pub(crate) fn secret_field(key: &str, value: &str) -> bool {
    names_a_secret(key)
        && !no_secret_name(key.as_bytes(), value)
        && !short_for_a_token(key.as_bytes(), value)
        && secret_value(value, true, None)
}

/// Where a bare value read as `r` ends before another field named for a secret glued on
/// after a list's separator, `pw=hunter22,token: Xk9…`, `a=x&api_key=…` (`r.len()` if
/// none): else that field's name was read into the value, and its own value never read
/// (review 55).
fn glued_field(r: &[u8]) -> usize {
    // (Its separators found by `memchr`: a value's window is read at each candidate, and a
    // byte at a time it cost a run of glued names 10%.)
    let field = |i: usize| secret_field_at(&r[i + 1..]);
    let list = memchr::memchr3_iter(b',', b';', b'&', r).find(|&i| field(i));
    let bar = memchr::memchr_iter(b'|', &r[..list.unwrap_or(r.len())]).find(|&i| field(i));
    // (Without the separators before it too: `Xk9…,,token=…`.)
    bar.or(list).map_or(r.len(), |i| {
        i - r[..i]
            .iter()
            .rev()
            .take_while(|&&c| list_separator(c))
            .count()
    })
}

/// Whether `c` separates a list's fields (see [`glued_field`]).
fn list_separator(c: u8) -> bool {
    matches!(c, b',' | b';' | b'&' | b'|')
}

/// Whether `between` (what stands between a secret's name and its value) names the value
/// as a pair's: a `value` field (`- name: DB_PASSWORD⏎  value: …`, `<add key="ApiKey"
/// value="…"/>`) or a Terraform variable's `default`.
fn pair_value(between: &[u8]) -> bool {
    memchr::memmem::find(between, b"alue").is_some()
        || (memchr::memchr(b'{', between).is_some()
            && memchr::memmem::find(between, b"default").is_some())
}

/// How long the field's name that opens `rest` is: letters, digits, `_`, `-`, `.` and any
/// byte past ASCII, 64 bytes at most (see [`next_field_name`], [`secret_field_at`]).
fn field_word(rest: &[u8]) -> usize {
    rest.iter()
        .take(64)
        .take_while(|c| {
            c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-' | b'.') || !c.is_ascii()
        })
        .count()
}

/// Whether `rest` starts with a field named for a secret (see [`names_a_secret`]) and its
/// separator, `token: `, `api_key =` (see [`glued_field`]).
fn secret_field_at(rest: &[u8]) -> bool {
    let word = field_word(rest);
    let blanks = rest[word..]
        .iter()
        .take(8)
        .take_while(|c| matches!(c, b' ' | b'\t'))
        .count();
    word >= 2
        && matches!(rest.get(word + blanks), Some(b'=' | b':'))
        && std::str::from_utf8(&rest[..word]).is_ok_and(names_a_secret)
}

/// Whether a field's name (`key`, whole) ends in a secret's name, as its case and words say
/// (see [`camel_pass`]).
fn names_a_secret(key: &str) -> bool {
    // (Only the names that end with the key's last byte are compared: a run of names asks
    // for each of its words, and comparing all 200 cost 7x the bench text, review 47.)
    static BY_LAST: OnceLock<Vec<Vec<(&'static str, bool)>>> = OnceLock::new();
    let by_last = BY_LAST.get_or_init(|| {
        let mut by_last = vec![Vec::new(); 256];
        let names = super::patterns::SECRET_NAMES.iter().map(|n| (*n, false));
        let local = super::patterns::LOCAL_NAMES
            .iter()
            .chain(&super::patterns::ADDED_NAMES);
        for (n, local) in names.chain(local.map(|n| (*n, true))) {
            by_last[usize::from(*n.as_bytes().last().unwrap_or(&0))].push((n, local));
        }
        by_last
    });
    let Some(&last) = key.as_bytes().last() else {
        return false;
    };
    by_last[usize::from(last)].iter().any(|&(n, local)| {
        key.strip_suffix(n).is_some_and(|before| match local {
            false => camel_pass(before.as_bytes(), n.as_bytes()),
            true => super::patterns::local_name_stands(n, before.chars().next_back()),
        })
    })
}

/// Whether a field whose name (`key`, whole) ends in a secret's name holds no secret
/// (`value`) by what its name's other words say:
/// - a page's or a stream's position (`nextToken`, `page_token`, `nextSyncToken`,
///   `ContinuationToken`, `$skipToken`, `lastEvaluatedToken`), a waiter's or a change's,
///   a tokenizer's special token (`eos_token`);
/// - in PascalCase, a request's idempotency token (`ClientToken`, `ClientRequestToken`;
///   Vault's `client_token` is a secret);
/// - a count or a limit (`max_output_token`, `input_token`), when the value is a number;
/// - a pass that is no password: a filter's (`low_pass`), a renderer's (`render_pass`);
/// - `pw` alone that is a pulse's width or a power, a register's value or a package's
///   version (see [`measured`]; not `WIFI_PW=0xDEAD…`, review 56); a length under any
///   name (`6-digit`, `12-chars`);
/// - credentials that are neither an account's name and password, `user:password`, nor a
///   value a machine made (a key file's name, `gcp-sa-2024.json`, a mechanism's, `OAuth2`,
///   `x509`) — not under a class's name, `PlainCredentials(…)`.
///
/// In capitals (an environment variable's name) only the words for a page say so:
/// `INPUT_TOKEN` is the token a GitHub Action is given, `SYNC_TOKEN` a secret.
pub(super) fn no_secret_name(key: &[u8], value: &str) -> bool {
    let (last, before) = last_words(key);
    let is = |w: &[u8], list: &[&str]| list.iter().any(|l| w.eq_ignore_ascii_case(l.as_bytes()));
    let capitals =
        key.iter().any(u8::is_ascii_uppercase) && !key.iter().any(u8::is_ascii_lowercase);
    let pascal = key.first().is_some_and(u8::is_ascii_uppercase) && !capitals;
    let number = !value.is_empty() && value.bytes().all(|c| c.is_ascii_digit());
    const PAGE: [&str; 6] = [
        "next",
        "page",
        "continuation",
        "pagination",
        "prev",
        "previous",
    ];
    const POSITION: [&str; 19] = [
        "cursor",
        "sync",
        "resume",
        "skip",
        "delta",
        "starting",
        "evaluated",
        "resumption",
        "waiter",
        "change",
        "cancellation",
        "eos",
        "bos",
        "pad",
        "unk",
        "sep",
        "cls",
        "mask",
        "special",
    ];
    const IDEMPOTENCY: [&str; 3] = ["client", "request", "idempotency"];
    const COUNT: [&str; 16] = [
        "max",
        "min",
        "num",
        "count",
        "total",
        "remaining",
        "used",
        "limit",
        "context",
        "prompt",
        "completion",
        "input",
        "output",
        "start",
        "end",
        "stop",
    ];
    const PASS: [&str; 24] = [
        "low", "high", "band", "notch", "all", "render", "shadow", "depth", "light", "lighting",
        "bloom", "blur", "post", "pre", "geometry", "compute", "first", "second", "third", "final",
        "multi", "single", "boarding", "by",
    ];
    if last.eq_ignore_ascii_case(b"skiptoken") || last.eq_ignore_ascii_case(b"deltatoken") {
        return true;
    }
    if key.eq_ignore_ascii_case(b"pw") && measured(value) {
        return true;
    }
    // (A number of Ecuador's electronic receipts, 49 digits, public: not a password.)
    if key.len() >= 5 && key[..5].eq_ignore_ascii_case(b"clave") && value.len() > 24 && number {
        return true;
    }
    // (A length, a rule under any password's name: `Passcode: 6-digit`, `pw: 12-char`.)
    if let Some(unit) = unit_after_number(value.as_bytes(), false) {
        let unit = unit.strip_suffix(b"s").unwrap_or(unit);
        if ["digit", "char", "character", "letter"]
            .iter()
            .any(|u| unit.eq_ignore_ascii_case(u.as_bytes()))
        {
            return true;
        }
    }
    if credentials_word(key, last) {
        // (A machine's token whole: not a dictionary's items, `{'user': …}`, review 56.)
        let token = !value
            .bytes()
            .any(|c| c.is_ascii_whitespace() || matches!(c, b'\'' | b'"'));
        return !(account_and_password(value) || (token && machine_made(value.as_bytes())));
    }
    if last.eq_ignore_ascii_case(b"token") {
        return is(before, &PAGE)
            || (!capitals && is(before, &POSITION))
            || (pascal && is(before, &IDEMPOTENCY))
            || (number && is(before, &COUNT));
    }
    last.eq_ignore_ascii_case(b"pass") && is(before, &PASS)
}

/// The last two words of a field's name (`key`, whole), the last first: words split at `_`,
/// `-`, `.`, `$` and where a small letter or a digit meets a capital (`nextPageToken`).
fn last_words(key: &[u8]) -> (&[u8], &[u8]) {
    let mut words: [&[u8]; 2] = [b"", b""];
    let mut end = key.len();
    let mut i = key.len();
    let mut n = 0;
    while i > 0 && n < 2 {
        let c = key[i - 1];
        let hump = c.is_ascii_uppercase()
            && i >= 2
            && (key[i - 2].is_ascii_lowercase() || key[i - 2].is_ascii_digit());
        if !c.is_ascii_alphanumeric() {
            if end > i {
                words[n] = &key[i..end];
                n += 1;
            }
            i -= 1;
            end = i;
        } else if hump {
            words[n] = &key[i - 1..end];
            n += 1;
            i -= 1;
            end = i;
        } else {
            i -= 1;
        }
    }
    if n < 2 && end > 0 && i == 0 {
        words[n] = &key[..end];
        n += 1;
    }
    (words[0], if n == 2 { words[1] } else { b"" })
}

/// The length of a bare value `r` (a field's, not an environment file's line nor a
/// command's argument): up to a blank, a quote, a backtick, `<`, `>`, or a mark that ends
/// it — `&` but after a value made as a password's (a symbol in it, or five characters or
/// more with a digit, a small letter and a capital) with a part made as a password's glued
/// on after it (`Tr0ub4dor&3`, `P@ss&w0rd`; not a field, `&user=…`, an entity, `&amp;`,
/// words, `salt&pepper`, identifiers, `mask1&flag2`, nor at its start, Rust's `&*pw`); `;`,
/// `,` and a backslash (or two, JSON's escape of one; not an escape's, `\n`, `\u…`) but
/// glued between two parts that each hold a digit or a symbol, the value with both made as
/// a password's, a digit inside a word or a symbol in it (`Xk9;mQ2vL7`, `P@ss\w0rd`; not a
/// list's, a type's, a unit's, a path's, `str,token: str`, `a1,b2`, `Win10,Win11`,
/// `1,500MHz`, `C:\Users\bob`); a bracket but where the value holds a symbol before it and
/// it closes, and the value goes on (`P@ss(w0rd)9`) or ends there after four characters or
/// more, at a blank, a sentence's `.`, a `;`, a `,`, a quote, a `)`, a `<`, a `|` or a `?`
/// (`P@ss(w0rd)`; not a call's or an index's, `md5(pw)+salt`, `data[0]x`, a macro's,
/// `secret!(pw)`, arithmetic's, a member's or a path's, `n*sizeof(int)`, `std::env!(PW)`);
/// an apostrophe but between letters or digits after a value made as a password's
/// (`Xk9mQ'2v`; not `can't2`, Verilog's `16'h1234`). Where those marks ended the value, the
/// rest was left in clear, or all of a value too short without it (`P@ss` before a bracket
/// reads as a call's name). Without `glue`, the value as the last release read it: no `;`,
/// `,` or backslash glued, no bracket at the end (a value these make no secret is judged
/// again so, then up to its first mark: see `named_secret`).
fn marked_len(r: &[u8], glue: bool) -> usize {
    // (A part glued on after `&` made as a password's: a digit or a symbol in it — not an
    // entity's name, `&amp;` — and no field's `=` or `:`, a query's `?`, a path's `/`.)
    let password_part = |j: usize| {
        let part = r[j..]
            .iter()
            .take(64)
            .take_while(|c| !c.is_ascii_whitespace() && !b"&;,<>\"'`\\()[]{}".contains(c))
            .count();
        let part = &r[j..j + part];
        (!part.is_empty()
            && !part.iter().any(|c| b"=:?/".contains(c))
            // (Not a number's or a variable's, `flags&0x04`, `$pass&$salt`, `%s&%s`.)
            && !part.starts_with(b"0x")
            && !b"$%#~".contains(&part[0])
            && part
                .iter()
                .any(|c| c.is_ascii_digit() || b"!@#$%^*+~".contains(c)))
        .then_some(part)
    };
    // Where the part glued on after a `;`, a `,` or a backslash at `i` starts: at a letter
    // or a digit right after it — after a backslash (or two, JSON's escape of one), none
    // that an escape's letter starts (`\n`, `\t`, `\u…`, `\x…`).
    let glued = |i: usize| {
        let slashes = match r[i] {
            b'\\' => r[i..].iter().take(2).take_while(|&&c| c == b'\\').count(),
            _ => 1,
        };
        let j = i + slashes;
        let escape = r[i] == b'\\' && r.get(j).is_some_and(|c| b"nrtuUxbfvae0".contains(c));
        (r.get(j).is_some_and(u8::is_ascii_alphanumeric) && !escape).then_some(j)
    };
    // What a password holds before its `&`, its bracket or its apostrophe: from a letter
    // or a digit on (not a variable's, a format's or emphasis's `$`, `%`, `#`, `*`, `~`:
    // `$pass&$salt`, `%s&%s`, `$row[2]+x`, `**[hidden]**x`, review 60), a symbol a
    // password takes, or five characters or more with a digit, a small letter and a capital
    // (`Tr0ub4dor`) — not an identifier, a version, a word with a digit (`mask1&flag2`,
    // `arr_1[i]+1`, `C++11(std)x`, `16'h1234`, `2nd's`: review 61). Read as the value is:
    // what stands before `i`.
    let starts = r.first().is_some_and(u8::is_ascii_alphanumeric);
    let (mut digit, mut small, mut capital, mut symbols) = (false, false, false, false);
    // (Whether a digit stood inside a word so far, `Tr0ub`, see [`digit_inside`]: read as
    // the flags are, where the last letter and the digits after it stand.)
    let (mut inside, mut after_letter, mut digits) = (false, false, false);
    let made = |i: usize, digit: bool, small: bool, capital: bool, symbols: bool| {
        starts && (symbols || (i >= 5 && digit && small && capital))
    };
    let mut i = 0;
    // (Up to where `digit`, `small`, `capital` and `symbols` are read.)
    let mut read = 0;
    loop {
        // (Most values hold no mark: to the next blank or mark at once — reading each byte
        // as the marks do made a run of names with no value 1.5x as slow.)
        i += r[i..]
            .iter()
            .position(|&c| BLANKS_AND_MARKS[usize::from(c)])
            .unwrap_or(r.len() - i);
        if i == r.len() {
            break;
        }
        for &c in &r[read..i] {
            digit |= c.is_ascii_digit();
            small |= c.is_ascii_lowercase();
            capital |= c.is_ascii_uppercase();
            symbols |= PASSWORD_MARKS.contains(&c);
            inside |= digits && c.is_ascii_alphabetic();
            digits = (after_letter || digits) && c.is_ascii_digit();
            after_letter = c.is_ascii_alphabetic();
        }
        read = i;
        // (A `;`, a `,` or a backslash glued between two parts that each hold a digit or a
        // symbol, the value with both made as a password's and a digit inside a word or a
        // symbol in it, `Xk9;mQ2vL7`: not a list's, a type's, a unit's, `str,token: str`,
        // `a1,b2`, `Win10,Win11`, `1,500MHz` — review 62.)
        if glue
            && matches!(r[i], b';' | b',' | b'\\')
            && i > 0
            && r[i - 1].is_ascii_alphanumeric()
            && (digit || symbols)
            && let Some(j) = glued(i)
            && password_part(j).is_some_and(|part| {
                let has = |f: fn(&u8) -> bool| part.iter().any(f);
                let part_symbols = has(|c| PASSWORD_MARKS.contains(c));
                made(
                    j + part.len(),
                    digit || has(u8::is_ascii_digit),
                    small || has(u8::is_ascii_lowercase),
                    capital || has(u8::is_ascii_uppercase),
                    symbols || part_symbols,
                ) && (symbols || part_symbols || inside || digit_inside(part))
            })
        {
            i = j;
            continue;
        }
        match r[i] {
            c if c.is_ascii_whitespace() => break,
            // (An apostrophe between letters or digits after a value made as a password's,
            // `Xk9mQ'2v`.)
            b'\''
                if i > 0
                    && r[i - 1].is_ascii_alphanumeric()
                    && made(i, digit, small, capital, false)
                    && r.get(i + 1).is_some_and(u8::is_ascii_alphanumeric) => {}
            b'"' | b'\'' | b'`' | b'\\' | b')' | b']' | b'}' | b';' | b',' | b'<' | b'>' => break,
            b'&' if !made(i, digit, small, capital, symbols) || password_part(i + 1).is_none() => {
                break;
            }
            open @ (b'(' | b'[' | b'{') => {
                let close = match open {
                    b'(' => b')',
                    b'[' => b']',
                    _ => b'}',
                };
                // (Closed before a blank, a quote or another bracket.)
                let inside = r[i + 1..]
                    .iter()
                    .take(64)
                    .position(|c| {
                        c.is_ascii_whitespace() || b"\"'`\\()[]{}".contains(c) || *c == close
                    })
                    .filter(|&k| r[i + 1 + k] == close && k > 0);
                let on = |k: usize| {
                    r.get(i + k + 2)
                        .is_some_and(|c| c.is_ascii_alphanumeric() || b"!#$%*+@^~".contains(c))
                };
                // (Or the value ends with it, after four characters or more, `P@ss(w0rd)`:
                // at a blank, a sentence's `.`, a `;`, a `,`, a quote, a `)`, a tag's `<`,
                // a `|` or a `?` — not a macro's call, a word's `!` before it, Rust's
                // `secret!(pw)`, `Hash!(x)` (but `hunter2!(x)`: `sha256!(data)` reads as a
                // password, review 64); nor arithmetic's, a member's or a path's,
                // `n*sizeof(int)`, `key^mask(x)`, a number's percentage, `100%(x)`,
                // `args!!.getString(KEY)`, `std::env!(PW)`: reviews 62, 63.)
                let ends = |k: usize| {
                    let word = |c: &u8| c.is_ascii_alphabetic() || *c == b'_';
                    let macro_call = r[i - 1] == b'!' && r[..i - 1].iter().all(word);
                    let percentage = r[i - 1] == b'%' && r[..i - 1].iter().all(u8::is_ascii_digit);
                    let end = match r.get(i + k + 2) {
                        None => true,
                        Some(b'.') => r.get(i + k + 3).is_none_or(u8::is_ascii_whitespace),
                        Some(c) => c.is_ascii_whitespace() || b";,\"'`)<|?".contains(c),
                    };
                    i >= 4
                        && !macro_call
                        && !percentage
                        && !r[..i].iter().any(|c| b"*^.:".contains(c))
                        && end
                };
                match inside {
                    // (A symbol before it: not an index's, `data[0]x`.)
                    Some(k) if starts && symbols && (on(k) || (glue && ends(k))) => i += k + 1,
                    _ => break,
                }
            }
            _ => {}
        }
        i += 1;
    }
    i
}

/// The 2,048 words of BIP-39's English list, in its (alphabetical) order: the words a
/// wallet's recovery phrase is drawn from (see [`seed_phrase`]). The list as the BIP
/// publishes it (SHA-256 `2f5eed53…3b24dbda`), taken from Trezor's reference
/// implementation (`python-mnemonic`, MIT).
const BIP39_ENGLISH: &str = include_str!("bip39-english.txt");

/// Where `word` (ASCII letters, any case) stands in [`BIP39_ENGLISH`], if it is one of its:
/// found by its first four letters, which BIP-39 makes unique, packed into an integer
/// (compared as such in a binary search, then the word whole: a run of names that are
/// list words, `seed phrase seed phrase …`, read 5.5x as slowly as the bench text with
/// the words compared as strings, review 65).
fn bip39_word(word: &[u8]) -> Option<usize> {
    static LIST: OnceLock<(Vec<&'static [u8]>, Vec<u32>)> = OnceLock::new();
    let pack = |w: &[u8]| {
        (0..4).fold(0u32, |packed, k| {
            packed << 8 | u32::from(w.get(k).map_or(0, u8::to_ascii_lowercase))
        })
    };
    let (words, prefixes) = LIST.get_or_init(|| {
        let words: Vec<&[u8]> = BIP39_ENGLISH.lines().map(str::as_bytes).collect();
        let prefixes = words.iter().map(|w| pack(w)).collect();
        (words, prefixes)
    });
    let place = prefixes.binary_search(&pack(word)).ok()?;
    words[place].eq_ignore_ascii_case(word).then_some(place)
}

/// A wallet's recovery words after their name (`s..e`: one of `patterns::SEED_NAMES`):
/// `seed phrase: abandon ability …`, `"mnemonic": "…"`, `WALLET_MNEMONIC="…"`, `my recovery
/// phrase is …`, `Mnemonic.fromPhrase("…")`, a numbered list or grid (`1. abandon⏎2.
/// ability …`, `1. … 2. … 3. …⏎4. …`), bullets, a JSON array, pretty-printed too — 12, 15,
/// 18, 21 or 24 words of BIP-39's list in a row (see [`bip39_word`]), the most of those
/// counts that stand there, with two repeated at most (not a placeholder's, `word word …`,
/// nor a test's, `test test … junk`), not the list itself in its order (`abandon, ability,
/// able, …`). Between two words: blanks, a comma, a `;`, a `/`, quotes, a `|`, a `-` or a
/// bullet's `*`, 16 bytes at most; where they stand on more than one line, each line holds
/// as many (rows of six, one to a line: not the next line's prose after eleven, reviews
/// 64, 65); where the second has an item's number, each after it has one (see
/// [`item_number`]). The name: `mnemonic` or `seed` alone, or a first word and the words
/// that make it whole (see [`SEED_SECOND_WORDS`]: `seed phrase`, `Backup Seed Phrase`,
/// `recovery words`, `Seed-Phrase`, `walletMnemonic`) — `wallet`, `recovery`, `backup`
/// name other things alone, and a name's first word glued to another is that word
/// (`Seeds`, `seedling`), review 66. Between the name and the words: the rest of an
/// identifier (`mnemonic_words`, `seedPhraseText`, `.fromPhrase`), a remark in parentheses
/// (`(12 words)`), then blanks, quotes, brackets, `:`, `=`, `>`, `-`, a dash, emphasis, 24
/// bytes at most (after `seed` alone, one of them that announces the words, see
/// [`seed_words`]), `is`, `are`, `was` or `were`, a table's head that names the words
/// (`| # | Word |⏎|---|---|`) and a key nested under the name (ethers' `{"mnemonic":
/// {"phrase": "…"}}`); or, where no words follow those, after a name other than `seed`
/// alone, prose to a colon on the name's line, 80 bytes at most (`my recovery seed,
/// please check it:⏎Word 1: …`, `seed phrase for wallet 2: …`). The name stands as a word
/// or an identifier's part (`walletMnemonic`, `WALLET_MNEMONIC`; not glued after a small
/// letter, `amnemonic`). Prose that names them holds words past the list (`the seed phrase
/// is never stored`: `stored` is none) or fewer than twelve.
fn seed_phrase(text: &str, s: usize, e: usize, _: &Freed) -> Option<(usize, usize)> {
    let b = text.as_bytes();
    if let Some(&c) = s.checked_sub(1).and_then(|i| b.get(i)) {
        let camel = b[s].is_ascii_uppercase() && (c.is_ascii_lowercase() || c.is_ascii_digit());
        if c.is_ascii_alphanumeric() && !camel {
            return None;
        }
    }
    // (The rest of an identifier, `mnemonic_words`, `seedPhraseText`, `.fromPhrase`; past
    // a second word, `phrase.`, `seed phrase_1`, review 66.)
    let rest = |at: usize| {
        at + b[at..]
            .iter()
            .take(24)
            .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.'))
            .count()
    };
    // (An account's recovery codes, `recovery codes:`, `backupCodes`: see
    // [`recovery_codes`].)
    if matches!(b[s], b'r' | b'R' | b'b' | b'B')
        && let Some(found) = recovery_codes(b, e)
    {
        return Some(found);
    }
    // (A private key under its format's name in words, `Wallet import format: 5Hue…`: see
    // [`wif_key`].)
    let format = b" import format";
    if matches!(b[s], b'w' | b'W')
        && b.get(e..e + format.len())
            .is_some_and(|w| w.eq_ignore_ascii_case(format))
    {
        return wif_key(text, s, e + format.len());
    }
    let mut at = rest(e);
    let glued = &b[e..at];
    let mut second = SEED_SECOND_WORDS.iter().any(|w| {
        glued
            .windows(w.len())
            .any(|x| x.eq_ignore_ascii_case(w.as_bytes()))
    });
    let mnemonic = b[s].eq_ignore_ascii_case(&b'm');
    // (Another word glued on in small letters, `Seeds`, `seedling`, `wallets`, review 66 —
    // not to `mnemonic`, `mnemonics`, `mnemonicString`, review 67.)
    if !second && !mnemonic && glued.first().is_some_and(u8::is_ascii_lowercase) {
        return None;
    }
    // (The name's second and third words, `Recovery seed`, `Backup Seed Phrase`,
    // `seed-phrase`, plural too, `recovery phrases` (review 67): not the name again, `seed
    // seed`, review 66.)
    for _ in 0..2 {
        let Some(w) = SEED_SECOND_WORDS.iter().find(|w| {
            let end = at + 1 + w.len();
            let plural = usize::from(matches!(b.get(end), Some(b's' | b'S')));
            matches!(b.get(at), Some(b' ' | b'-'))
                && b.get(at + 1..end)
                    .is_some_and(|x| x.eq_ignore_ascii_case(w.as_bytes()))
                && !b.get(end + plural).is_some_and(u8::is_ascii_alphanumeric)
                && !b[s..e].eq_ignore_ascii_case(w.as_bytes())
        }) else {
            break;
        };
        at = rest(at + 1 + w.len());
        second = true;
    }
    // (`wallet`, `recovery`, `backup` alone name other things: `Wallet categories: …`,
    // `Recovery foods: …`, review 66.)
    if !second && !mnemonic && !b[s].eq_ignore_ascii_case(&b's') {
        return None;
    }
    // (A remark in parentheses, `mnemonic (12 words):`, `Recovery Phrase (write this down
    // on paper and store it safely):`, review 65.)
    if b[at..].starts_with(b" (") {
        at = memchr::memchr(b')', &b[at..b.len().min(at + 80)]).map_or(at, |k| at + k + 1);
    }
    // (`seed` alone, a word of many senses, only where a mark announces the words.)
    let whole = second || mnemonic;
    if let Some(found) = seed_words(b, at, whole) {
        return Some(found);
    }
    // (Prose between the name and a colon on its line, after a whole name: `my recovery
    // seed, please check it:⏎Word 1: …`, `seed phrase for wallet 2: …`; not `Keywords for
    // the seed round: …`, review 66.)
    if !whole {
        return None;
    }
    let from = name_separators(b, at);
    let line = &b[from..b.len().min(from + 80)];
    let colon = memchr::memchr2(b':', b'\n', line).filter(|&k| line[k] == b':')?;
    seed_words(b, from + colon + 1, true)
}

/// The most codes [`recovery_codes`] reads.
const RECOVERY_CODES_MAX: usize = 24;

/// An account's recovery codes after `recovery` or `backup` (`at`: just past it), as a
/// service gives them once two-factor sign-in is set up (GitHub's `4f1a2-b3c4d`, Google's
/// `1234 5678`): the name's `codes` (`Recovery codes`, `backup-codes`, `recoveryCodes`,
/// `Backup verification codes`, a remark in parentheses after it), its marks (see
/// [`name_separators`]) or `are`, then two codes or more of one shape, each one or two
/// parts of 4 to 16 letters and digits (a digit among them, 8 in all at least: not a year,
/// `2024-01-05`; not an identifier's letters then digits, `INC001234`, nor a number in hex)
/// joined by a `-` or, four or five digits each, a blank, set apart by blanks, commas,
/// `;`, quotes, backticks, a table's `|`, a list's bullets (`•` too) or numbers (see
/// [`item_number`]) — 24 at most, from the first to the last. Not prose about them
/// (`Backup codes: see the admin console`, `Recovery codes: 10 left`), nor one code alone.
fn recovery_codes(b: &[u8], at: usize) -> Option<(usize, usize)> {
    let name = [
        &b" codes"[..],
        b"-codes",
        b"_codes",
        b"Codes",
        b"_CODES",
        b" Codes",
        b" CODES",
    ]
    .into_iter()
    .find(|n| b[at..].starts_with(n))
    .map(|n| n.len())
    // (`Backup verification codes`, Google's.)
    .or_else(|| {
        let w = b" verification codes";
        b.get(at..at + w.len())
            .is_some_and(|x| x.eq_ignore_ascii_case(w))
            .then_some(w.len())
    })?;
    let mut at = at + name;
    if b[at..].starts_with(b" (") {
        at = memchr::memchr(b')', &b[at..b.len().min(at + 80)]).map_or(at, |k| at + k + 1);
    }
    let from = at;
    at = name_separators(b, at);
    if b[at..].starts_with(b"are") && matches!(b.get(at + 3), Some(b' ' | b':' | b'\n')) {
        at = name_separators(b, at + 3);
    } else if !b[from..at]
        .iter()
        .any(|c| matches!(c, b':' | b'=' | b'\n' | b'"' | b'['))
    {
        return None;
    }
    // A code at `i`: its end and its shape (each part's length), where one stands.
    let code = |i: usize| -> Option<(usize, [usize; 2])> {
        let part = |j: usize| {
            b[j.min(b.len())..]
                .iter()
                .take(17)
                .take_while(|c| c.is_ascii_alphanumeric())
                .count()
        };
        let first = part(i);
        if !(4..=16).contains(&first) {
            return None;
        }
        let mut end = i + first;
        let mut shape = [first, 0];
        if matches!(b.get(end), Some(b'-' | b' ')) {
            let second = part(end + 1);
            // (A blank joins a second part only as Google's, four or five digits each as
            // many: `1234 5678` — not codes in a row, `a7f3k9q2 m4x8p1z6`, review 73.)
            let digits = |k: usize, n: usize| b[k..k + n].iter().all(u8::is_ascii_digit);
            let blank =
                second == first && first <= 5 && digits(i, first) && digits(end + 1, second);
            if (4..=16).contains(&second) && (b[end] == b'-' || blank) {
                shape[1] = second;
                end += 1 + second;
            }
        }
        let code = &b[i..end];
        let digit = code.iter().any(u8::is_ascii_digit);
        // (Not an identifier, letters then digits, `BKP10023`, `INC001234`, nor a number in
        // hex, `0x80070005`: review 73.)
        let letters = code.iter().take_while(|c| c.is_ascii_alphabetic()).count();
        let identifier = letters > 0 && code[letters..].iter().all(u8::is_ascii_digit);
        let hex = code.starts_with(b"0x") || code.starts_with(b"0X");
        (digit
            && !identifier
            && !hex
            && shape[0] + shape[1] >= 8
            && !b.get(end).is_some_and(u8::is_ascii_alphanumeric))
        .then_some((end, shape))
    };
    // (Between two codes, and before the first: blanks, a comma, a `;`, quotes, backticks,
    // a table's `|`, a bullet, `•` too, an item's number — a few rounds of them.)
    let between = |mut j: usize| {
        for _ in 0..4 {
            j += b[j..]
                .iter()
                .take(16)
                .take_while(|c| {
                    c.is_ascii_whitespace()
                        || matches!(c, b',' | b';' | b'"' | b'\'' | b'`' | b'|' | b'-' | b'*')
                })
                .count();
            if b[j..].starts_with("•".as_bytes()) {
                j += "•".len();
            }
            j = item_number(b, j).unwrap_or(j);
        }
        j
    };
    let (mut i, mut count, mut shape, mut span) = (between(at), 0, None, None);
    while count < RECOVERY_CODES_MAX {
        let Some((end, this)) = code(i) else {
            break;
        };
        if shape.is_some_and(|s| s != this) {
            break;
        }
        shape = Some(this);
        span = Some((span.map_or(i, |(s, _)| s), end));
        count += 1;
        let j = between(end);
        if j == end {
            break;
        }
        i = j;
    }
    span.filter(|_| count >= 2)
}

/// The words that make a recovery phrase's name whole after its first (see
/// [`seed_phrase`]): `seed phrase`, `recovery words`, `wallet mnemonic`, `backup seed`.
const SEED_SECOND_WORDS: [&str; 4] = ["phrase", "words", "seed", "mnemonic"];

/// The recovery words that stand after their name's marks from `at` on, where they start
/// and end (see [`seed_phrase`]); after `seed` alone (not a `whole` name), only past a mark
/// or a verb that announces them: `seed: …`, `"seed": "…"`, `the seed is …` — not `Seed
/// catalog⏎- tomato …`, review 66.
fn seed_words(b: &[u8], mut at: usize, whole: bool) -> Option<(usize, usize)> {
    let from = at;
    at = name_separators(b, at);
    let mut announced = whole
        || b[from..at]
            .iter()
            .any(|c| !matches!(c, b' ' | b'\t' | b'\n' | b'\r' | b'-' | b'*'));
    if let Some(verb) = [&b"is"[..], b"are", b"was", b"were"].into_iter().find(|v| {
        b[at..].starts_with(v) && matches!(b.get(at + v.len()), Some(b' ' | b':' | b'\n'))
    }) {
        at = name_separators(b, at + verb.len());
        announced = true;
    }
    if !announced {
        return None;
    }
    // (A table's head, `| # | Word |⏎|---|---|`: the words in its rows — a head that names
    // them, not `| id | name |`, review 66.)
    if b.get(at) == Some(&b'|') {
        let line = |i: usize| memchr::memchr(b'\n', &b[i..b.len().min(i + 64)]).map(|k| i + k);
        let head = |end: usize| {
            b[at..end]
                .windows(4)
                .any(|w| w.eq_ignore_ascii_case(b"word"))
        };
        let rule = line(at).filter(|&end| head(end));
        if let Some(rule) = rule.and_then(|end| Some((end + 1, line(end + 1)?))) {
            let (from, to) = rule;
            let ruled =
                b[from..to].contains(&b'-') && b[from..to].iter().all(|c| b"|-: \t\r".contains(c));
            if ruled {
                at = to + 1;
            }
        }
    }
    // (A key nested under the name, ethers' `{"mnemonic": {"phrase": "…"}}`, `{phrase:
    // …}`.)
    let key = b[at..]
        .iter()
        .take(16)
        .take_while(|c| c.is_ascii_alphabetic())
        .count();
    let colon = at + key + usize::from(matches!(b.get(at + key), Some(b'"' | b'\'')));
    if key > 0 && b.get(colon) == Some(&b':') {
        at = name_separators(b, colon + 1);
    }
    // (Each word's place in the list, to tell repeats; whether the list is read in its
    // order so far, `abandon, ability, able, …`, review 65.)
    let mut places = [0; 24];
    let (mut i, mut count, mut repeats, mut in_order) = (at, 0, 0, true);
    let (mut start, mut found) = (at, None);
    // (How many words a line holds, where they stand on more than one line: each line as
    // many — after every sixth, after each — not the next line's prose after eleven,
    // review 64; and whether the second had an item's number: then each has one.)
    let (mut row, mut numbered) = (None, None);
    while count < 24 {
        // (The first word's number may be left out, after the name: `Seed phrase: chief⏎
        // 2. speak …`; the second's tells whether each has one.)
        let number = item_number(b, i);
        if count > 0 && *numbered.get_or_insert(number.is_some()) != number.is_some() {
            break;
        }
        i = number.unwrap_or(i);
        let word = b[i..]
            .iter()
            .take(9)
            .take_while(|c| c.is_ascii_alphabetic())
            .count();
        let place = match b.get(i + word) {
            Some(c) if c.is_ascii_alphanumeric() => None,
            _ if (3..=8).contains(&word) => bip39_word(&b[i..i + word]),
            _ => None,
        };
        let Some(place) = place else {
            break;
        };
        // (Past two repeats no longer run is one: `seed phrase seed phrase …` read 24
        // names each, review 65.)
        repeats += usize::from(places[..count].contains(&place));
        if repeats > 2 {
            break;
        }
        match count {
            0 => start = i,
            _ => in_order &= place == places[count - 1] + 1,
        }
        places[count] = place;
        count += 1;
        if count >= 12 && count % 3 == 0 && row.is_none_or(|r| count % r == 0) && !in_order {
            found = Some((start, i + word));
        }
        i += word;
        let gap = b[i..]
            .iter()
            .take(16)
            .take_while(|c| {
                c.is_ascii_whitespace()
                    || matches!(c, b',' | b';' | b'/' | b'"' | b'\'' | b'|' | b'-' | b'*')
            })
            .count();
        if gap == 0 {
            break;
        }
        // (A line ends after as many words as the first.)
        if b[i..i + gap].contains(&b'\n') && count % *row.get_or_insert(count) != 0 {
            break;
        }
        i += gap;
    }
    found
}

/// Where the marks between a recovery phrase's name and its words end from `at` on (see
/// [`seed_phrase`]): blanks, quotes, brackets, `:`, `=`, `>`, `-`, emphasis's `*`, a
/// dash, an arrow, typographic quotes — 24 at most.
fn name_separators(b: &[u8], mut at: usize) -> usize {
    for _ in 0..24 {
        match b.get(at) {
            Some(c)
                if c.is_ascii_whitespace()
                    || matches!(c, b'"' | b'\'' | b'`' | b':' | b'=' | b'>' | b'*' | b'-')
                    || matches!(c, b'(' | b'[' | b'{') =>
            {
                at += 1;
            }
            // (A dash, `Seed phrase — …`, an arrow, and typographic quotes.)
            _ => match ["—", "–", "→", "⇒", "“", "‘", "«"]
                .iter()
                .find(|d| b[at..].starts_with(d.as_bytes()))
            {
                Some(d) => at += d.len(),
                None => break,
            },
        }
    }
    at
}

/// What the fifteenth pass's literal at `s..e` (see `patterns::fifteenth_pass_trigger`)
/// starts: a Wi-Fi QR code's password after `WIFI:` (see [`wifi_password`]), an extended
/// private key after its prefix (see [`extended_private_key`]), a Kubernetes Secret's
/// values (see [`kube_secret`]), else recovery words after their name (see
/// [`seed_phrase`]). Only its own pass's literals compared: not the sixteenth's 31.
pub(super) fn wallet_secret(text: &str, s: usize, e: usize, f: &Freed) -> Option<(usize, usize)> {
    let literal = &text[s..e];
    if literal == "WIFI:" {
        wifi_password(text, s, e, f)
    } else if super::patterns::EXTENDED_KEY_PREFIXES.contains(&literal) {
        extended_private_key(text, s, e, f)
    } else if super::patterns::KUBE_SECRET.contains(&literal) {
        kube_secret(text, s, e)
    } else {
        seed_phrase(text, s, e, f)
    }
}

/// What the sixteenth pass's literal at `s..e` (see `patterns::sixteenth_pass_trigger`)
/// starts: a private key's PEM block in base64 (see [`encoded_private_key`]), a Kubernetes
/// Secret's values (see [`kube_secret`]), else a private key in Wallet Import Format after
/// its name (see [`wif_key`]).
pub(super) fn key_secret(text: &str, s: usize, e: usize, _: &Freed) -> Option<(usize, usize)> {
    let literal = &text[s..e];
    if literal == super::patterns::ENCODED_PEM {
        encoded_private_key(text, s)
    } else if super::patterns::KUBE_SECRET.contains(&literal) {
        kube_secret(text, s, e)
    } else {
        wif_key(text, s, e)
    }
}

/// The most bytes a command line that prints a secret (see [`printed_secret`]) may take
/// on either side of its literal, and its output.
const PRINTED_LINE: usize = 512;
const PRINTED_OUTPUT: usize = 4096;

/// A secret a command printed (see `patterns::SECRET_PRINTERS`, its literal at `s..e` on
/// its command line): its output, the next line whole, as a terminal or a tool's result
/// shows it (`$ vault kv get -field=password secret/db⏎Xk9…`, in a JSON string after an
/// escaped `\n` too) — where the command is one that prints a secret (each literal tells
/// its own: the Vault field's name a secret's, `security`'s `-w`, the variable `echo`
/// prints named for one, a Kubernetes Secret's value decoded, …) and prints it to the
/// screen (not captured, `$(…)`, nor sent on, `> file`, `| cmd`), and the line after it is
/// one word that a named field's value could be (see [`secret_value`]) — made by a machine
/// (see [`machine_made`]) where the command prints a variable's or a setting's value, not
/// one that fetches a secret. A line is read once however many literals it holds
/// (`freed.printed`).
pub(super) fn printed_secret(text: &str, s: usize, e: usize, f: &Freed) -> Option<(usize, usize)> {
    let b = text.as_bytes();
    let line = match f.printed.get() {
        Some(line) if line.next > 0 && (line.start..line.end).contains(&s) => line,
        // (A line with no end yet found up to `end`: its start kept, its end searched for
        // on from there — a run of literals on a long line is read once, `echo $echo $…`
        // 5.8x the bench text before.)
        cached => {
            let open = cached.filter(|l| l.next == 0 && (l.start..l.end).contains(&s));
            match printed_line(b, s, e, open.map(|l| (l.start, l.end))) {
                Ok(line) => {
                    f.printed.set(Some(line));
                    line
                }
                Err(open) => {
                    f.printed.set(Some(open));
                    return None;
                }
            }
        }
    };
    if s >= line.captured || e < line.sent || e > line.end {
        return None;
    }
    // (A command's name whole: not `desktop read`, `Workshop read`, review 92.)
    if b[s].is_ascii_alphabetic()
        && s.checked_sub(1)
            .is_some_and(|i| b[i].is_ascii_alphanumeric() || matches!(b[i], b'_' | b'-' | b'.'))
    {
        return None;
    }
    let (before, after) = (&b[line.start..s], &b[e..line.end]);
    // (Words the line holds, found once for it: see `PRINTED_WORDS`.)
    let has = |word: usize| line.words & (1 << word) != 0;
    // (The word after the literal: a variable's, a field's or a key's name, 64 bytes at
    // most, its quotes and braces left out, PowerShell's `env:`, a path's last part.)
    let len = after
        .iter()
        .take(65)
        .take_while(|c| !c.is_ascii_whitespace() && **c != b';')
        .count();
    let word = if len > 64 { &[][..] } else { &after[..len] };
    let word = word
        .strip_prefix(b"env:")
        .unwrap_or(word)
        .split(|c| matches!(c, b'"' | b'\'' | b'{' | b'}'))
        .find(|w| !w.is_empty())
        .unwrap_or_default();
    // (An English name only, its tail checked first: a variable's name in another
    // language is rare, and every literal of a run of them asked the local names, `echo
    // $echo $…` 4.5x the bench text; the last four names judged kept, for a run of them,
    // `echo $password echo $api_key …` 5.5x, review 92.)
    let named = || {
        let name = word.rsplit(|&c| c == b'/').next().unwrap_or(word);
        if name.is_empty() || !(ends_as_a_name(name) || name == b"secret_id") {
            return false;
        }
        let at = name.as_ptr() as usize - b.as_ptr() as usize;
        let mut memo = f.printed_names.get();
        if let Some(&(_, _, verdict)) = memo
            .iter()
            .find(|&&(pos, len, _)| len > 0 && b.get(pos..pos + len) == Some(name))
        {
            return verdict;
        }
        let verdict = names_secret(name);
        memo[(usize::from(name[0]) + name.len()) % 4] = (at, name.len(), verdict);
        f.printed_names.set(memo);
        verdict
    };
    // (Whether the command fetches a secret by its nature — else it prints a variable's
    // or a setting's value, and what it printed must look made by a machine: a script's
    // next line is often one word too, `rc=$?`, `make-all2`, review 91.)
    let (prints, fetches) = match &text[s..e] {
        "-field=" => (has(0) && named(), true),
        "configure get " => (has(1) && named(), true),
        "get-login-password" => (has(2), true),
        "secrets versions access" => (has(3), true),
        "keyvault secret show" => (has(6) && has(7), true),
        "find-generic-password" | "find-internet-password" => (
            after[..after.len().min(160)]
                .split(|c| c.is_ascii_whitespace())
                .any(|w| w == b"-w"),
            true,
        ),
        "pass show " | "op read " | "secret-tool lookup" | "bw get password " => (true, true),
        "/run/secrets/" => (before.trim_ascii_end().ends_with(b"cat"), true),
        // (A Kubernetes Secret's value: `secret` and its client or its `.data` before the
        // pipe, not a file's name, `base64 -d secret.b64`, review 92.)
        "base64 -d" | "base64 --decode" | "base64 -D" => {
            let near = &before[before.len().saturating_sub(160)..];
            let find = |w: &[u8]| memchr::memmem::find(near, w).is_some();
            (
                has(4) && find(b"secret") && (find(b"kubectl") || find(b"oc ") || find(b".data")),
                true,
            )
        }
        "secrets get " => (has(5) && has(8), true),
        _ => (named(), false),
    };
    if !prints {
        return None;
    }
    let output = match line.output {
        Some(output) => output,
        None => {
            let output = printed_output(text, line.next, line.escaped);
            f.printed.set(Some(PrintedLine {
                output: Some(output),
                ..line
            }));
            output
        }
    };
    let (a, z, machine) = output?;
    (fetches || machine).then_some((a, z))
}

/// Words a command line that prints a secret is told by (see [`printed_secret`]): Vault's,
/// AWS's, ECR's, Google Cloud's name, a Kubernetes `secret`, Doppler's, Azure's query's
/// `value` and `tsv`, Doppler's `--plain`. Bit `i` of `PrintedLine::words` for the `i`th.
const PRINTED_WORDS: [&[u8]; 9] = [
    b"vault ", b"aws", b"ecr", b"gcloud", b"secret", b"doppler", b"value", b"tsv", b"--plain",
];

/// Whether a field's, a variable's or a key's name (`key`) is a secret's: as a header's
/// cell would name one (see [`header_secret`]), or AppRole's `secret_id` (review 90).
fn names_secret(key: &[u8]) -> bool {
    header_secret(key).is_some() || key == b"secret_id"
}

/// Whether `label` ends as every English name of a secret does (`…ord`, `…key`, `…ken`,
/// …), in any case: most labels are turned away by this alone.
fn ends_as_a_name(label: &[u8]) -> bool {
    const ENDS: [&[u8]; 12] = [
        b"ord", b"swd", b"ase", b"ret", b"key", b"ken", b"ass", b"pwd", b"psk", b"uth", b"ing",
        b"ary",
    ];
    label
        .get(label.len().saturating_sub(3)..)
        .is_some_and(|tail| tail.len() == 3 && ENDS.iter().any(|e| tail.eq_ignore_ascii_case(e)))
}

/// The command line around a literal at `s..e` (see [`PrintedLine`]), if it ends within
/// [`PRINTED_LINE`] bytes of it and a line follows it; else the line as far as it was read
/// (`next` 0, `end` where no break was found before), which `open` gives back for the next
/// literal on it: its start, and how far it holds no break.
fn printed_line(
    b: &[u8],
    s: usize,
    e: usize,
    open: Option<(usize, usize)>,
) -> Result<PrintedLine, PrintedLine> {
    let (start, from) = match open {
        Some((start, to)) => (start, e.max(to.saturating_sub(1))),
        None => {
            let start = line_back(b, s, PRINTED_LINE);
            let start =
                memchr::memmem::rfind(&b[start..s], b"\\n").map_or(start, |i| start + i + 2);
            (start, e)
        }
    };
    let ceiling = b.len().min(e + PRINTED_LINE);
    let from = from.min(ceiling);
    let real = memchr::memchr2(b'\n', b'\r', &b[from..ceiling]).map(|i| from + i);
    // (An escaped break before the real one, if any: searched no further.)
    let escaped = memchr::memmem::find(&b[from..real.unwrap_or(ceiling)], b"\\n").map(|i| from + i);
    let unended = PrintedLine {
        start,
        end: ceiling,
        next: 0,
        escaped: false,
        captured: ceiling,
        sent: start,
        words: 0,
        output: None,
    };
    let (end, next, escaped) = match (real, escaped) {
        (Some(r), Some(x)) if x < r => (x, x + 2, true),
        (Some(r), _) => {
            let crlf = b[r] == b'\r' && b.get(r + 1) == Some(&b'\n');
            (r, r + 1 + usize::from(crlf), false)
        }
        (None, Some(x)) => (x, x + 2, true),
        (None, None) => return Err(unended),
    };
    let line = &b[start..end];
    let captured = memchr::memmem::find(line, b"$(")
        .into_iter()
        .chain(memchr::memchr(b'`', line))
        .min()
        .map_or(end, |i| start + i);
    // (Not standard error's `2>/dev/null`, `2>&1`, review 91.)
    let sent = line
        .iter()
        .enumerate()
        .rev()
        .find(|&(i, &c)| match c {
            b'|' | b'`' => true,
            b'>' => !(i > 0 && line[i - 1] == b'2' && (i == 1 || line[i - 2] == b' ')),
            _ => false,
        })
        .map_or(start, |(i, _)| start + i + 1);
    let words = PRINTED_WORDS
        .iter()
        .enumerate()
        .filter(|(_, w)| memchr::memmem::find(line, w).is_some())
        .fold(0, |bits, (i, _)| bits | 1 << i);
    Ok(PrintedLine {
        start,
        end,
        next,
        escaped,
        captured,
        sent,
        words,
        output: None,
    })
}

/// A command's output from `v`: the line whole (to a line break, or where a break escaped
/// in a JSON string or the string's quote ends it; blanks after it, a terminal's colour
/// codes around it left out) where it is one word a field's value could be — not a
/// prompt's next command, the next prompt (`bob@web-01:~$`), an error's message, a
/// comment, an assignment (`rc=$?`), an empty line — and whether it looks made by a
/// machine (see [`machine_made`]).
fn printed_output(text: &str, v: usize, escaped: bool) -> Option<(usize, usize, bool)> {
    let b = text.as_bytes();
    // (A colour's code before it: `ESC[0m`.)
    let ansi = |at: usize| {
        (b.get(at) == Some(&0x1b) && b.get(at + 1) == Some(&b'['))
            .then(|| b[at + 2..].iter().take(8).position(|&c| c == b'm'))
            .flatten()
            .map_or(0, |m| m + 3)
    };
    let v = v + ansi(v);
    let limit = b.len().min(v + PRINTED_OUTPUT);
    let mut end = b[v..limit]
        .iter()
        .position(|&c| {
            c.is_ascii_whitespace() || c == 0x1b || (escaped && matches!(c, b'"' | b'\\'))
        })
        .map_or(limit, |i| v + i);
    let word = end;
    end += ansi(end);
    end += b[end..limit]
        .iter()
        .take_while(|&&c| c == b' ' || c == b'\t')
        .count();
    let ends = match b.get(end) {
        None => true,
        Some(b'\n' | b'\r') => true,
        Some(b'"') => escaped,
        Some(b'\\') => escaped && b.get(end + 1) == Some(&b'n'),
        _ => false,
    };
    let value = text.get(v..word)?;
    let vb = value.as_bytes();
    // (A prompt's last character, `bob@web-01:~$`, `sh-5.1$`, `mbp-2%` — a password that
    // ends with one is missed; a Makefile's target, `build2:`, review 92.)
    let prompt = matches!(vb.last(), Some(b'$' | b'#' | b'>' | b'%' | b':'));
    let assignment = vb
        .iter()
        .position(|&c| c == b'=')
        .is_some_and(|i| vb[i..].iter().any(|&c| c != b'='));
    let comment = vb.first() == Some(&b'#');
    (ends && !prompt && !assignment && !comment && secret_value(value, false, None))
        .then(|| (v, word, machine_made(vb)))
}

/// What the seventeenth pass's literal at `s..e` (see `patterns::seventeenth_pass_trigger`)
/// starts: what two-factor sign-in's setup shows under one of `patterns::SETUP_NAMES` (see
/// [`setup_secret`]), Kustomize's generated Secrets (see [`generated_secrets`]), a
/// Kubernetes Secret under its kind quoted (see [`kube_secret`]), a mailbox's or an FTP
/// server's login (see [`mail_login`]), else a secret store's values (see
/// [`store_values`]).
pub(super) fn seventeenth_pass_secret(
    text: &str,
    s: usize,
    e: usize,
    f: &Freed,
) -> Option<(usize, usize)> {
    let literal = &text[s..e];
    if super::patterns::SETUP_NAMES.contains(&literal) {
        setup_secret(text, s, e)
    } else if literal == super::patterns::SECRET_GENERATOR {
        generated_secrets(text, s, e)
    } else if super::patterns::KUBE_QUOTED_KINDS.contains(&literal) {
        kube_secret(text, s, e)
    } else if super::patterns::MAIL_LOGINS.contains(&literal) {
        mail_login(text, s, e)
    } else {
        store_values(text, s, e, f)
    }
}

/// What the eighteenth pass's literal at `s..e` (see `patterns::eighteenth_pass_trigger`)
/// starts, not glued to a letter or a digit before it: a one-time password's key under
/// one of `patterns::MORE_SETUP_NAMES` (see [`setup_secret`]), a wallet's private key in
/// a call (see [`wallet_call_key`]), else a key under its name (see
/// [`crypto_key_value`]).
pub(super) fn eighteenth_pass_secret(
    text: &str,
    s: usize,
    e: usize,
    _: &Freed,
) -> Option<(usize, usize)> {
    let b = text.as_bytes();
    let m = &text[s..e];
    // (A type's name ends in the call's or the value's: `LocalWallet::from_str(`,
    // `PrivateKeySigner::from_str(`, `LocalWallet = "…"`.)
    let typed = m.ends_with("::from_str(") || m.ends_with(" = \"");
    if s > 0 && b[s - 1].is_ascii_alphanumeric() && !typed {
        return None;
    }
    // (A value given to a wallet's type only after its annotation's `:`, `let w:
    // LocalWallet = "…"`: not a variable whose name ends so, `lastTxHashOfWallet = "…"`,
    // review 84.)
    if m.ends_with(" = \"") {
        let name = b[..s]
            .iter()
            .rev()
            .take(64)
            .take_while(|c| c.is_ascii_alphanumeric() || **c == b'_')
            .count();
        if !b[..s - name].trim_ascii_end().ends_with(b":") {
            return None;
        }
    }
    if super::patterns::MORE_SETUP_NAMES.contains(&m)
        || super::patterns::LAST_SETUP_NAMES.contains(&m)
    {
        return setup_secret(text, s, e);
    }
    if b[e - 1] == b'(' {
        // (eth-account's `Account.from_key(…)`, `w3.eth.account.from_key(…)`: not a
        // cache's, `Cache.from_key('<hash>')`, review 80.)
        if m.starts_with("from_key") && !b[..s].ends_with(b"ccount.") {
            return None;
        }
        wallet_call_key(b, e)
    } else if b[e - 1] == b'"' {
        // (The value given to a wallet's type: from its quote.)
        wallet_call_key(b, e - 1)
    } else {
        crypto_key_value(b, e)
    }
}

/// What code and configs put around a key's hex or base64: a call that decodes it
/// (`bytes.fromhex(…)`, `bytearray.fromhex(…)`, `binascii.unhexlify(…)`,
/// `base64.b64decode(…)`, `Buffer.from(…)`, `hexToBytes(…)`, `HexBytes(…)`, Rust's
/// `hex!(…)`) or a tag (Laravel's `base64:`, `hex:`).
const KEY_WRAPPERS: [&[u8]; 12] = [
    b"bytes.fromhex(",
    b"bytearray.fromhex(",
    b"binascii.unhexlify(",
    b"unhexlify(",
    b"base64.b64decode(",
    b"b64decode(",
    b"Buffer.from(",
    b"hexToBytes(",
    b"HexBytes(",
    b"hex!(",
    b"base64:",
    b"hex:",
];

/// Past one of [`KEY_WRAPPERS`] at `at` and the blanks after it (`Buffer.from( '…'`), or
/// `at` where none stands: where a key's value or a wallet's key starts.
fn past_key_wrapper(b: &[u8], at: usize) -> usize {
    KEY_WRAPPERS
        .iter()
        .find(|w| b[at..].starts_with(w))
        .map_or(at, |w| at + w.len() + leading_blanks(&b[at + w.len()..]))
}

/// A wallet's private key as a call's first argument at `at` (just past its `(`; see
/// `patterns::WALLET_CALLS`): past white space (the key on a line of its own) and a
/// keyword's name (`private_key=`), in a call that decodes it or not (see
/// [`past_key_wrapper`]: `Buffer.from(…)`, `hexToBytes(…)`), in quotes (`'`, `"`, a
/// backtick) or, with `0x`, bare; `0x` or not, then 64 hex digits, letters and digits
/// among them (see [`hex_key`]: not `0x00…01`), up to the closing quote — or, bare, to
/// what ends the argument. Not a variable (`new Wallet(process.env.PK)`), not a hash of
/// another length.
fn wallet_call_key(b: &[u8], at: usize) -> Option<(usize, usize)> {
    let space = |at: usize| {
        at + b[at..]
            .iter()
            .take(64)
            .take_while(|c| c.is_ascii_whitespace())
            .count()
    };
    let mut at = space(at);
    let keyword = b[at..]
        .iter()
        .take(17)
        .take_while(|c| c.is_ascii_lowercase() || **c == b'_')
        .count();
    if keyword > 0 && b.get(at + keyword) == Some(&b'=') {
        at = space(at + keyword + 1);
    }
    at = space(past_key_wrapper(b, at));
    let q = *b.get(at)?;
    let quoted = matches!(q, b'"' | b'\'' | b'`');
    let v = at + usize::from(quoted);
    let prefix = if b[v..].starts_with(b"0x") { 2 } else { 0 };
    let n = b[v + prefix..]
        .iter()
        .take(65)
        .take_while(|c| c.is_ascii_hexdigit())
        .count();
    let end = v + prefix + n;
    let closed = match quoted {
        true => b.get(end) == Some(&q),
        false => {
            prefix == 2
                && b.get(end)
                    .is_none_or(|&c| !c.is_ascii_alphanumeric() && c != b'_')
        }
    };
    (n == 64 && closed && hex_key(&b[v..end])).then_some((v, end))
}

/// A key's value after its name ends at `e` (see `patterns::CRYPTO_KEY_NAMES`), past the
/// name's marks (see [`name_separators`]) or `is`: hex (see [`hex_key`]: 32 to 128 digits,
/// `0x` or not) or base64 of 16 bytes or more as a machine makes it (see [`machine_made`];
/// standard or URL-safe, padded or not: a Fernet key), not glued to more; on a later line
/// only after a `:` or `=`. Not a path, a URL, a variable, an algorithm's name
/// (`AES-256-GCM-with-HKDF-SHA256`) or prose.
fn crypto_key_value(b: &[u8], e: usize) -> Option<(usize, usize)> {
    let at = past_name_and_verb(b, e);
    // (On a later line only after a mark, `Encryption key:⏎  3f9a…`: not a PGP block's
    // comment, `Comment: release signing key⏎⏎mDMETpx…`.)
    let marks = &b[e..at];
    if at == e || (marks.contains(&b'\n') && !marks.iter().any(|c| matches!(c, b':' | b'='))) {
        return None;
    }
    // (The value written as code or a config writes it: in a call or after a tag (see
    // [`past_key_wrapper`]), Python's bytes (`b'…'`, `rb'…'`, `B'…'`), angle brackets;
    // reviews 80 and 81.)
    let mut at = past_key_wrapper(b, at);
    if matches!(b.get(at..at + 2), Some(b"b'" | b"b\"" | b"B'" | b"B\"")) {
        at += 1;
    } else if matches!(b.get(at..at + 3), Some(b"rb'" | b"rb\"")) {
        at += 2;
    }
    if matches!(b.get(at), Some(b'\'' | b'"' | b'`' | b'<')) {
        at += 1;
    }
    let key = |c: &u8| c.is_ascii_alphanumeric() || matches!(c, b'+' | b'/' | b'-' | b'_');
    let n = b[at..].iter().take(129).take_while(|c| key(c)).count();
    let pad = b[at + n..]
        .iter()
        .take(2)
        .take_while(|&&c| c == b'=')
        .count();
    let v = &b[at..at + n];
    let glued = b
        .get(at + n + pad)
        .is_some_and(|&c| key(&c) || c == b'=' || c >= 0x80);
    let base64 = (22..=128).contains(&n) && distinct_bytes(v) * 2 >= n && machine_made(v);
    // (Not what a public key's or a fingerprint's form is: 40 hex digits (a PGP key's
    // fingerprint, a commit), SSH's wire format (`AAAAC3NzaC1lZDI1NTE5…`), minisign's
    // public key (`RW…`, 56), review 80.)
    let hex = v.strip_prefix(b"0x").unwrap_or(v);
    let public = (hex.len() == 40 && hex.iter().all(u8::is_ascii_hexdigit))
        || v.starts_with(b"AAAA")
        || (n == 56 && v.starts_with(b"RW"));
    (!glued && !public && (hex_key(v) || base64)).then_some((at, at + n + pad))
}

/// Where a value starts after a name that ends at `e`: past the name's marks (see
/// [`name_separators`]) and `is` or `was` after its blank (`your setup key is …`, `the
/// master key was …`); `e` itself where nothing stands between the name and what follows
/// (`setup keys` goes on).
fn past_name_and_verb(b: &[u8], e: usize) -> usize {
    let at = name_separators(b, e);
    match [&b"is "[..], b"was "]
        .iter()
        .find(|v| b[at..].starts_with(v))
    {
        Some(verb) if at > e => name_separators(b, at + verb.len()),
        _ => at,
    }
}

/// How far back from `PASS` [`mail_login`] looks for the `USER` command before it.
const USER_BEFORE: usize = 512;

/// Whether a protocol's command at `i` stands where a client's debug output prints one: at
/// its line's start, or after a log's prefix of 96 bytes at most (a timestamp, `C: `,
/// `ftp> `, `---> `, `> b'`, `*cmd* '`, `send: '`, `[imap] >>> `, a program's name and
/// its `rawlog:`) that a blank, a tab, a quote, `>`, `:` or `]` ends — where `marked`,
/// a prefix whose last character but blanks is a quote, `>`, `:` or `]` (not prose's
/// word: `Users can login via OAuth2`, review 78).
fn at_session_line(b: &[u8], i: usize, marked: bool) -> bool {
    let from = i.saturating_sub(96);
    let start = memchr::memrchr(b'\n', &b[from..i]).map(|k| from + k + 1);
    let mark = |c: &u8| matches!(c, b'\'' | b'"' | b'>' | b':' | b']');
    match start {
        _ if i == 0 => true,
        Some(start) if start == i => true,
        None if from > 0 => false,
        _ if marked => {
            let before = b[start.unwrap_or(0)..i].trim_ascii();
            before.is_empty() || before.last().is_some_and(mark)
        }
        _ => matches!(b[i - 1], b' ' | b'\t') || mark(&b[i - 1]),
    }
}

/// Where a session's line read from `from` ends: at its line break, or a `\r\n` written as
/// escapes (`send: 'PASS x\r\n'`) — or, where a quote stands right before the command
/// that starts at `command` (`> b'a1 LOGIN …'`, `echo "PASS …"; …`), at its closing one.
fn session_line_end(b: &[u8], command: usize, from: usize) -> usize {
    let to = b.len().min(from + 256);
    let mut end = memchr::memchr2(b'\n', b'\r', &b[from..to]).map_or(to, |k| from + k);
    for tail in [&b"\\r\\n"[..], b"\\n"] {
        if let Some(k) = memchr::memmem::find(&b[from..end], tail) {
            end = from + k;
        }
    }
    match command.checked_sub(1).map(|k| b[k]) {
        Some(q @ (b'\'' | b'"')) => memchr::memchr(q, &b[from..end]).map_or(end, |k| from + k),
        _ => end,
    }
}

/// The password an IMAP client sends as a literal (`a1 LOGIN bob {10}`, then the server's
/// `+ go ahead`, then the password alone on its line): `n` bytes on one of the three lines
/// after `from`'s, past a log's prefix (`C: `, `> `) and not the server's (`+ …`, `S: …`,
/// `* …`), judged as a bare option's value is (see [`secret_argument`]: no blanks).
fn imap_literal(text: &str, from: usize, n: usize) -> Option<(usize, usize)> {
    let b = text.as_bytes();
    let mut at = from + memchr::memchr(b'\n', &b[from..])? + 1;
    for _ in 0..3 {
        let line_end = memchr::memchr(b'\n', &b[at..b.len().min(at + 512)]).map(|k| at + k);
        let end = line_end.unwrap_or(b.len().min(at + 512));
        let line = &b[at..end];
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        // (A log's prefix: up to its `: ` or `> ` within 16 bytes.)
        let prefix = [&b": "[..], b"> "]
            .iter()
            .filter_map(|p| memchr::memmem::find(&line[..line.len().min(16)], p).map(|k| k + 2))
            .min()
            .unwrap_or(0);
        let server = line.starts_with(b"+") || line.starts_with(b"S:") || line.starts_with(b"* ");
        // (Judged as a bare value: a line of prose that long is none, review 78.)
        if !server && line.len() - prefix == n {
            let (a, z) = (at + prefix, at + line.len());
            return secret_argument(text.get(a..z)?, false, b.get(z).copied()).then_some((a, z));
        }
        at = line_end? + 1;
    }
    None
}

/// A mailbox's or an FTP server's login as a client's debug output prints it, its command
/// at `s..e` (see `patterns::MAIL_LOGINS`):
/// - IMAP's `AUTHENTICATE`, a SASL exchange read as SMTP's `AUTH` is (see
///   [`sasl_password`]: `a001 AUTHENTICATE PLAIN⏎+⏎AGJvYgBo…`);
/// - IMAP's `LOGIN` (`login` as a person types it into `openssl s_client`, after a
///   prefix's mark only) after its tag (letters and digits, a digit among them, or one
///   character: `A`, `.`, `?`, `*`) and blanks, where a session's line starts (see
///   [`at_session_line`]), its two arguments and nothing after them on the line but blanks
///   (see [`session_line_end`]): the second, the password, bare or quoted (`a001 LOGIN
///   bob "hunter 22"`), judged as an option's value is (see [`secret_argument`]); or, as a
///   literal's length (`{10}`), the line that sends it (see [`imap_literal`]);
/// - POP3's and FTP's `PASS` where a session's line starts, a `USER` command on one of the
///   five lines before it, within [`USER_BEFORE`] bytes: the rest of its line, judged so
///   (`PASS the salt` in prose, a test's `PASS  src/app.test.js`, have no `USER` before
///   them).
fn mail_login(text: &str, s: usize, e: usize) -> Option<(usize, usize)> {
    let b = text.as_bytes();
    match &text[s..e] {
        "AUTHENTICATE " => {
            if s > 0 && b[s - 1].is_ascii_alphanumeric() {
                return None;
            }
            sasl_password(text, e - 1)
        }
        "LOGIN " | " login " => {
            let command = s + usize::from(b[s] == b' ');
            let tag_end = command
                - b[..command]
                    .iter()
                    .rev()
                    .take(8)
                    .take_while(|c| matches!(c, b' ' | b'\t'))
                    .count();
            let tag = match b[..tag_end]
                .iter()
                .rev()
                .take(17)
                .take_while(|c| c.is_ascii_alphanumeric())
                .count()
            {
                0 if tag_end > 0 && matches!(b[tag_end - 1], b'.' | b'?' | b'*') => 1,
                n => n,
            };
            // (A tag as clients and tutorials write one: a digit among its characters, or
            // one character — `a001`, `2`, `A`, `.` — not an audit log's word, `USER
            // LOGIN …`, review 78. `login` typed in small letters where a session's line
            // starts after a prefix's mark, not in prose: `Users can login via OAuth2`.)
            let typed = b[s] == b' ';
            if tag_end == command
                || !(1..=16).contains(&tag)
                || !(tag == 1 || b[tag_end - tag..tag_end].iter().any(u8::is_ascii_digit))
                || !at_session_line(b, tag_end - tag, typed)
            {
                return None;
            }
            let end = session_line_end(b, tag_end - tag, e);
            // Two arguments, each bare or quoted (a quote escaped inside a quoted one).
            let argument_end = |i: usize| match b.get(i) {
                _ if i >= end => None,
                Some(&q @ (b'"' | b'\'')) => {
                    let mut k = i + 1;
                    while k < end && b[k] != q {
                        k += 1 + usize::from(b[k] == b'\\');
                    }
                    (k < end).then_some(k + 1)
                }
                _ => Some(
                    i + b[i..end]
                        .iter()
                        .take_while(|&&c| c != b' ' && c != b'\t')
                        .count(),
                ),
            };
            let user = e + leading_blanks(&b[e..end]);
            let user_end = argument_end(user).filter(|&k| k > user)?;
            let pw = user_end + leading_blanks(&b[user_end..end]);
            let pw_end = argument_end(pw).filter(|&k| k > pw && pw > user_end)?;
            if pw_end + leading_blanks(&b[pw_end..end]) != end {
                return None;
            }
            let value = &b[pw..pw_end];
            // (A literal's length: the password on a line of its own after it.)
            if let [b'{', digits @ .., b'}'] = value {
                let digits = digits.strip_suffix(b"+").unwrap_or(digits);
                let n = std::str::from_utf8(digits).ok()?.parse::<usize>().ok()?;
                return imap_literal(text, pw_end, n);
            }
            let quoted = matches!(b[pw], b'"' | b'\'');
            let (a, z) = match quoted {
                true => (pw + 1, pw_end - 1),
                false => (pw, pw_end),
            };
            secret_argument(text.get(a..z)?, quoted, b.get(z).copied()).then_some((a, z))
        }
        _ => {
            if !at_session_line(b, s, false) {
                return None;
            }
            let end = session_line_end(b, s, e);
            let from = e + leading_blanks(&b[e..end]);
            let value = text.get(from..end)?.trim_ascii_end();
            if !secret_argument(value, false, b.get(from + value.len()).copied()) {
                return None;
            }
            // (`USER` on one of the five lines before, within `USER_BEFORE` bytes: the
            // server's answer, a log's, between; `\r\n` escapes folded to line breaks.)
            let lo = s.saturating_sub(USER_BEFORE);
            let mut line = s;
            for _ in 0..6 {
                match memchr::memrchr(b'\n', &b[lo..line]) {
                    Some(k) => line = lo + k,
                    None => {
                        line = lo;
                        break;
                    }
                }
            }
            let user = memchr::memmem::rfind(&b[line..s], b"USER ")
                .is_some_and(|k| at_session_line(b, line + k, false));
            (user || pass_answered(b, s, end)).then_some((from, from + value.len()))
        }
    }
}

/// Whether the server's replies stand around `PASS` at `s` (its line ending at `end`),
/// where no `USER` before it is in the text (a transcript cut short): FTP's `331` asking
/// for the password on the line before, or on the line after FTP's `230` or `530` or POP3's
/// `+OK` or `-ERR` answering it (a blank line between passed over) — each at its line's
/// start or after a session's or a log's prefix (`< `, `S: `, `<-- `, `[10:00:01] `,
/// `*resp* b'`), with a login's words after its code (`331 Password required`, `+OK Logged
/// in.`, `230 OK. Current directory is /`, `+OK 2 messages (320 octets)`, `230 Access
/// granted`). Not a test runner's `PASS  src/app.test.js`, nor one a count follows (`230
/// assertions`).
fn pass_answered(b: &[u8], s: usize, end: usize) -> bool {
    // (A reply on the line from `at`, within its first 48 bytes, after a session's or a
    // log's prefix — marks, blanks, digits (a time), `S:`, `C:`, bracketed or starred
    // words (`[10:00:01]`, poplib's `*resp*`), a bytes literal's `b'` — the code after no
    // letter or digit, then a blank or `-` after a number (not a code frame's `331 |`,
    // review 86), no letter or digit after `+OK` and `-ERR`, and a login's words after
    // it: `331 Password required`, `230 User logged in`, `+OK Logged in.`.)
    let reply = |at: usize, codes: &[&[u8]]| {
        let to = b.len().min(at + 48);
        let line = &b[at..to];
        let line = &line[..memchr::memchr(b'\n', line).unwrap_or(line.len())];
        let mut closer = None;
        for k in 0..line.len() {
            let c = line[k];
            if let Some(close) = closer {
                if c == close {
                    closer = None;
                }
                continue;
            }
            let after_word = k > 0 && line[k - 1].is_ascii_alphanumeric();
            if let Some(code) = codes.iter().find(|w| line[k..].starts_with(w))
                && !after_word
            {
                let next = b.get(at + k + code.len()).copied();
                let apart = match code[0] {
                    b'0'..=b'9' => matches!(next, Some(b'-' | b' ')),
                    _ => !next.is_some_and(|c| c.is_ascii_alphanumeric()),
                };
                // (The reply's words, whole: a login's, a password's, a mailbox's — not a
                // count's, `230 assertions`, `+OK all green`, review 87, nor `230 users
                // migrated`, `230 passwords hashed`, review 88.)
                let from = at + k + code.len();
                let words = &b[from..b.len().min(from + 64)];
                let words = &words[..memchr::memchr(b'\n', words).unwrap_or(words.len())];
                let has = |l: &[u8]| {
                    words
                        .split(|c| !c.is_ascii_alphabetic())
                        .any(|w| w.eq_ignore_ascii_case(l))
                };
                // (Or two words together, or a server's own phrase — Pure-FTPd's `230 OK.
                // Current directory is /`, qpopper's `+OK bob has 2 messages (320
                // octets)`, Cyrus's `+OK Mailbox locked and ready` — not one of their
                // words alone after a test's name, `230 files in directory`, `+OK 320
                // octets`, review 89.)
                // (`granted` and `authenticated` among the reply's first three words, only
                // a login's before them: `230 Access granted`, `230 Anonymous access
                // granted`, `+OK Authenticated` — not `230 passed; access granted to all
                // fixtures`, review 90.)
                let first = |l: &[u8]| {
                    let mut led = true;
                    for w in words
                        .split(|c| !c.is_ascii_alphabetic())
                        .filter(|w| !w.is_empty())
                        .take(3)
                    {
                        if w.eq_ignore_ascii_case(l) {
                            return led;
                        }
                        led &= [&b"access"[..], b"anonymous", b"user", b"successfully"]
                            .iter()
                            .any(|p| w.eq_ignore_ascii_case(p));
                    }
                    false
                };
                let login = [
                    &b"login"[..],
                    b"logged",
                    b"password",
                    b"authentication",
                    b"auth",
                    b"maildrop",
                    b"specify",
                ]
                .iter()
                .any(|l| has(l))
                    || first(b"granted")
                    || first(b"authenticated")
                    || (*code == b"230" && words.trim_ascii_start().starts_with(b"OK. Current"))
                    || (has(b"messages") && has(b"octets"))
                    || (has(b"mailbox") && (has(b"locked") || has(b"open")));
                if apart && login {
                    return true;
                }
            }
            // (A word its colon ends, FileZilla's `Response:`, review 88.)
            let labelled = c.is_ascii_alphabetic() && !after_word && {
                let n = line[k..]
                    .iter()
                    .take_while(|c| c.is_ascii_alphabetic())
                    .count();
                line.get(k + n) == Some(&b':')
            };
            match (c, line.get(k + 1)) {
                (b'[', _) => closer = Some(b']'),
                (b'*', _) => closer = Some(b'*'),
                (b'b', Some(b'\'' | b'"')) if !after_word => {}
                (c, _) if c.is_ascii_alphabetic() && !labelled && !after_word => return false,
                _ => {}
            }
        }
        false
    };
    // (The line's start: one blank line passed over.)
    let blank = |line: &[u8]| line.iter().all(|c| matches!(c, b' ' | b'\t' | b'\r'));
    let floor = s.saturating_sub(256);
    let mut before = false;
    if let Some(k) = memchr::memrchr(b'\n', &b[floor..s]) {
        let mut line_end = floor + k;
        for _ in 0..2 {
            let start =
                memchr::memrchr(b'\n', &b[floor..line_end]).map_or(floor, |j| floor + j + 1);
            if start == floor && floor > 0 {
                break;
            }
            if !blank(&b[start..line_end]) {
                before = reply(start, &[b"331"]);
                break;
            }
            match start.checked_sub(1) {
                Some(j) if j >= floor => line_end = j,
                _ => break,
            }
        }
    }
    let mut after = false;
    let mut at = end;
    for _ in 0..2 {
        let Some(k) = memchr::memchr(b'\n', &b[at..b.len().min(at + 256)]) else {
            break;
        };
        let start = at + k + 1;
        let line_end = memchr::memchr(b'\n', &b[start..b.len().min(start + 256)])
            .map_or(b.len().min(start + 256), |j| start + j);
        if !blank(&b[start..line_end]) {
            after = reply(start, &[b"230", b"530", b"+OK", b"-ERR"]);
            break;
        }
        at = line_end;
    }
    before || after
}

/// What two-factor sign-in's setup shows once under its name at `s..e` (a whole word's
/// start): the emergency scratch codes Google's PAM module prints, as recovery codes are
/// read (see [`recovery_codes`]); a one-time password's key after `setup key`, `your key`,
/// `this code`, … (see `patterns::SETUP_NAMES`, `patterns::MORE_SETUP_NAMES`; as a service
/// gives it to be typed in: `Setup key: JBSW Y3DP EHPK 3PXP`, `your setup key is
/// jbswy3dpehpk3pxp`), past a remark or up to six words before its colon (`Setup key (time
/// based):`, `setup key instead:`, `this code into your authentication app:`), the name's
/// marks (see [`name_separators`]) or `is`, in groups (see [`base32_groups`]; joined by
/// dashes too) or one run (see [`base32_key`]; after a name other than `setup key`, a
/// key's length, not hex, no long run of letters that reads as words), quoted or not.
fn setup_secret(text: &str, s: usize, e: usize) -> Option<(usize, usize)> {
    let b = text.as_bytes();
    if s > 0 && (b[s - 1].is_ascii_alphanumeric() || b[s - 1] == b'_') {
        return None;
    }
    if b[s..e].eq_ignore_ascii_case(b"scratch codes") {
        return recovery_codes(b, s + "scratch".len());
    }
    // (A remark in parentheses or up to six words, 48 bytes, before its colon: `Setup key
    // (time based): …`, `Enter this setup key instead: …`, `Or enter this code into your
    // authentication app: …`.)
    let remark = match b.get(e..e + 2) {
        Some(b" (") => memchr::memchr(b')', &b[e..b.len().min(e + 24)]).map(|k| e + k + 1),
        // (The colon found first: prose with none is read no further. Words of letters,
        // digits and dashes, `your 2FA app`, `two-factor app`, review 79.)
        Some([b' ', c]) if c.is_ascii_alphabetic() => {
            memchr::memchr(b':', &b[e..b.len().min(e + 49)])
                .map(|k| e + k)
                .filter(|&colon| {
                    let words = &b[e..colon];
                    words
                        .iter()
                        .all(|c| c.is_ascii_alphanumeric() || matches!(c, b' ' | b'-'))
                        && words
                            .split(|&c| c == b' ')
                            .filter(|w| !w.is_empty())
                            .count()
                            <= 6
                })
        }
        _ => None,
    };
    let e = remark.unwrap_or(e);
    let at = past_name_and_verb(b, e);
    if at == e {
        return None;
    }
    let key = &b[at..b.len().min(at + BASE32_GROUPS_MAX + 2)];
    if let Some(n) = base32_groups(key) {
        return Some((at, at + n));
    }
    // (Its groups joined by dashes, `HXDM-VJEC-JJWS-RB3H`: read as if by blanks, copied
    // only where a dash follows the first group.)
    if key.get(4) == Some(&b'-') {
        let mut blanks = [0u8; BASE32_GROUPS_MAX + 2];
        for (d, &c) in blanks.iter_mut().zip(key) {
            *d = if c == b'-' { b' ' } else { c };
        }
        if let Some(n) = base32_groups(&blanks[..key.len()])
            && (key[..n].iter().filter(|&&c| c == b'-').count() + 1) * 5 == n + 1
        {
            return Some((at, at + n));
        }
    }
    let n = key.iter().take_while(|c| c.is_ascii_alphanumeric()).count();
    let glued = b
        .get(at + n)
        .is_some_and(|&c| c == b'_' || c == b'-' || c >= 0x80);
    // (One run after a name weaker than `setup key` — `this key`, `your key` —: a key's
    // length (80, 128, 160 or 256 bits), not hex (a cache's key), no run of eight letters
    // or more a third of them vowels (`ORDERS2CUSTOMERS`, `gpt4turbopreview`: about 7% of
    // random keys of 16 are lost so, none written in groups), review 79.)
    let v = &key[..n];
    let weak = !b[s..e].eq_ignore_ascii_case(b"setup key");
    let hex = v
        .iter()
        .filter(|c| c.is_ascii_alphabetic())
        .all(|c| matches!(c.to_ascii_lowercase(), b'a'..=b'f'));
    let wordy = v.split(|c| !c.is_ascii_alphabetic()).any(|run| {
        let vowels = run.iter().filter(|c| b"AEIOUaeiou".contains(c)).count();
        run.len() >= 8 && vowels * 3 >= run.len()
    });
    let plain = !weak || ([16, 26, 32, 52].contains(&n) && !hex && !wordy);
    (!glued && base32_key(v) && plain).then_some((at, at + n))
}

/// Whether one of `patterns::STORE_COMMANDS` starts at `p`.
fn store_command_at(b: &[u8], p: usize) -> bool {
    let rest = &b[p..];
    matches!(rest.first(), Some(b's' | b'k' | b'c' | b'e'))
        && super::patterns::STORE_COMMANDS
            .iter()
            .any(|c| rest.starts_with(c.as_bytes()))
}

/// How far [`store_values`] reads a secret store's command past its subcommand: a command
/// that sets sixteen keys' values of 64 characters each, continued over lines.
const STORE_REACH: usize = 4096;

/// How many words [`store_values`] reads past the subcommand.
const STORE_WORDS: usize = 64;

/// Whether `v` is a documentation's example of a value (`VALUE1`, `value2`, `key1`,
/// `secret-value`): a word docs put where a value goes, digits, `_` or `-` after it.
fn example_value(v: &[u8]) -> bool {
    let word = v.trim_ascii_end();
    let word = &word[..word.len()
        - word
            .iter()
            .rev()
            .take_while(|c| c.is_ascii_digit() || matches!(c, b'_' | b'-'))
            .count()];
    [
        &b"value"[..],
        b"val",
        b"key",
        b"secret",
        b"secret-value",
        b"secret_value",
        b"my-secret",
        b"mysecret",
        b"foo",
        b"bar",
    ]
    .iter()
    .any(|w| word.eq_ignore_ascii_case(w))
}

/// The last part of the word that ends before the blanks before `s` (`/usr/bin/vault kv …`:
/// `vault`), its extension left out (`ansible-vault.exe`).
fn command_before(b: &[u8], s: usize) -> &[u8] {
    let end = s - b[..s]
        .iter()
        .rev()
        .take(8)
        .take_while(|c| matches!(c, b' ' | b'\t'))
        .count();
    let start = end
        - b[..end]
            .iter()
            .rev()
            .take(64)
            .take_while(|c| {
                !matches!(
                    c,
                    b' ' | b'\t' | b'\n' | b'\r' | b'/' | b'\\' | b'"' | b'\''
                )
            })
            .count();
    let word = &b[start..end];
    word.strip_suffix(b".exe").unwrap_or(word)
}

/// The options of secret stores' tools that take a value as their next word (Doppler's,
/// Fly's, Supabase's, .NET's, Pulumi's, ansible-vault's): read past with it when
/// [`store_values`] looks for the words that are no option's.
const STORE_OPTIONS: [&[u8]; 27] = [
    b"-p",
    b"--project",
    b"-c",
    b"--config",
    b"--token",
    b"--scope",
    b"--id",
    b"-a",
    b"--app",
    b"--project-ref",
    b"--env",
    b"-s",
    b"--stack",
    b"-C",
    b"--cwd",
    b"--config-file",
    b"--vault-id",
    b"--vault-password-file",
    b"--vault-pass-file",
    b"--name",
    b"-n",
    b"--encrypt-vault-id",
    b"--output",
    b"--visibility",
    b"--type",
    b"--api-host",
    b"--configuration",
];

/// The values a secret store's command sets, its subcommand at `s..e` (see
/// `patterns::STORE_COMMANDS`): from the first to the last, each judged as an option's
/// value is (see [`argument`]) — whatever its key's name, as a store's values are secrets:
/// - `secrets set` (Supabase's, Fly's, Doppler's, Infisical's; .NET's `user-secrets set`):
///   each `KEY=value`; where none is written, the second of exactly two words that are no
///   option's, the first a key's name (`doppler secrets set KEY value`, `dotnet
///   user-secrets set "Db:Pw" "value"`);
/// - `secret set`: `gh secret set`'s `--body` (`-b`, `--body=…`, `-b…`), `az containerapp
///   secret set`'s `KEY=value`s after `--secrets`;
/// - `secret generic`: `kubectl create secret generic`'s `--from-literal=KEY=value`s;
/// - `kv put`, `kv patch` after `vault` (or OpenBao's `bao`; not Consul's): `KEY=value`s
///   (not `KEY=@file`, `KEY=-`);
/// - `config set` with `--secret` and without `--plaintext` (Pulumi's): the second of
///   exactly two words that are no option's; `config set-all`'s `KEY=value` after each
///   `--secret`;
/// - `encrypt_string` after `ansible-vault`: the first word that is no option's, unless
///   the string is read from the standard input (`--stdin-name`);
/// - `secret:create`, and `env:create` with `--visibility secret` (or `sensitive`; Expo's
///   `eas`): `--value`'s.
///
/// The subcommand stands as a command's word does (see [`command_position`]; `user-`
/// before `secrets set`), a blank or the line's end after it; a documentation's example
/// value is none (see [`example_value`]). Its words are read on its command's line (see
/// [`command_words`]: over continued lines), [`STORE_WORDS`] at most within [`STORE_REACH`]
/// and before a backtick, up to a word that holds another store command's subcommand: a
/// run of them reads each word once.
fn store_values(text: &str, s: usize, e: usize, _: &Freed) -> Option<(usize, usize)> {
    let b = text.as_bytes();
    let literal = &text[s..e];
    let dotnet =
        literal == "secrets set" && b[..s].ends_with(b"user-") && command_position(b, s - 5);
    if !(command_position(b, s) || dotnet) {
        return None;
    }
    let all = literal == "config set" && b[e..].starts_with(b"-all");
    let from = e + if all { 4 } else { 0 };
    if !matches!(b.get(from), None | Some(b' ' | b'\t' | b'\\')) {
        return None;
    }
    let end = ceil_char_boundary(text, from.saturating_add(STORE_REACH));
    // (A word that holds another store command's subcommand, or where one starts, ends
    // them: `x=secrets set`, `user-secrets set`. `command_words` hands each word as a
    // slice of `b`: where it starts is told by its address.)
    let another = |w: &[u8]| {
        let a = w.as_ptr().addr().wrapping_sub(b.as_ptr().addr());
        a.checked_add(w.len())
            .is_some_and(|z| z <= b.len() && (a..z).any(|p| store_command_at(b, p)))
    };
    // (Vault's and OpenBao's `kv`, not Consul's or NATS's; ansible-vault's
    // `encrypt_string`, not a function's.)
    match literal {
        "kv put" | "kv patch" if !matches!(command_before(b, s), b"vault" | b"bao") => {
            return None;
        }
        "encrypt_string" if command_before(b, s) != b"ansible-vault" => return None,
        _ => {}
    }
    let mut words = [(0, 0); STORE_WORDS];
    let mut n = command_words(b, from, end, &mut words, another).0;
    // (A backtick ends them: a Markdown code span's, a command substitution's — not
    // PowerShell's line continuation, read as a blank. Looked for in the words read, not
    // in the bytes to the reach: a run of subcommands read those for each.)
    if let Some((k, at)) = words[..n]
        .iter()
        .enumerate()
        .find_map(|(k, &(a, z))| memchr::memchr(b'`', &b[a..z]).map(|j| (k, a + j)))
    {
        words[k].1 = at;
        n = k + usize::from(at > words[k].0);
    }
    let words = &words[..n];
    let word = |k: usize| words.get(k).map(|&(a, z)| &b[a..z]);
    let pair = |a: usize, z: usize| key_value_pair(text, a, z);
    // The words that are no option's, nor an option's value.
    let positional = || {
        let mut k = 0;
        std::iter::from_fn(move || {
            while let Some(w) = word(k) {
                k += 1;
                if w.len() > 1 && w[0] == b'-' {
                    k += usize::from(STORE_OPTIONS.contains(&w));
                } else {
                    return Some(k - 1);
                }
            }
            None
        })
    };
    let has = |o: &[u8]| (0..n).any(|k| word(k) == Some(o));
    // The value of option `o`: its next word, or glued after `=` (after the option itself,
    // where `glued`: `-bvalue`).
    let option = |o: &[u8], glued: bool| {
        first_to_last(
            option_words(b, words, o, glued)
                .flatten()
                .filter_map(|(a, _)| argument(text, a)),
        )
    };
    // The `KEY=value` words after `--secrets`, up to the next option.
    let secrets_option = || {
        let k = (0..n).find(|&k| word(k) == Some(b"--secrets"))?;
        first_to_last(
            words[k + 1..]
                .iter()
                .take_while(|&&(a, _)| b[a] != b'-')
                .filter_map(|&(a, z)| pair(a, z)),
        )
    };
    // The value of exactly two words that are no option's, the first a key's name.
    let key_value = || {
        let mut found = positional();
        let (Some(key), Some(value), None) = (found.next(), found.next(), found.next()) else {
            return None;
        };
        let key = word(key)?;
        let name = key_name(key) && !word(value).is_some_and(example_value);
        name.then(|| argument(text, words[value].0))?
    };
    match literal {
        "secrets set" => {
            first_to_last(words.iter().filter_map(|&(a, z)| pair(a, z))).or_else(key_value)
        }
        // (And Azure Container Apps' `secret set --secrets k=v …`.)
        "secret set" => first_to_last(
            [
                option(b"--body", false),
                option(b"-b", true),
                secrets_option(),
            ]
            .into_iter()
            .flatten(),
        ),
        "secret generic" => first_to_last((0..n).filter_map(|k| {
            let (a, z) = words[k];
            let w = &b[a..z];
            const OPTION: &[u8] = b"--from-literal";
            if w == OPTION {
                let (a, z) = *words.get(k + 1)?;
                pair(a, z)
            } else if w.len() > OPTION.len() + 1 && w.starts_with(OPTION) && w[OPTION.len()] == b'='
            {
                pair(a + OPTION.len() + 1, z)
            } else {
                None
            }
        })),
        "kv put" | "kv patch" => first_to_last(
            words
                .iter()
                .filter(|&&(a, _)| b[a] != b'-')
                .filter_map(|&(a, z)| pair(a, z)),
        ),
        "config set" if all => first_to_last((0..n).filter_map(|k| {
            let (a, z) = *words.get(k + 1)?;
            (word(k) == Some(b"--secret")).then(|| pair(a, z))?
        })),
        "config set" => (has(b"--secret") && !has(b"--plaintext")).then(key_value)?,
        "encrypt_string" => match has(b"--stdin-name") {
            true => None,
            false => argument(text, words[positional().next()?].0),
        },
        "secret:create" => option(b"--value", false),
        "env:create" => {
            let visible = (0..n).any(|k| {
                let secret = |v: &[u8]| v == b"secret" || v == b"sensitive";
                match word(k) {
                    Some(b"--visibility") => word(k + 1).is_some_and(secret),
                    Some(w) => w.strip_prefix(b"--visibility=").is_some_and(secret),
                    None => false,
                }
            });
            visible.then(|| option(b"--value", false))?
        }
        _ => None,
    }
}

/// How many lines [`generated_secrets`] reads under `secretGenerator:`.
const GENERATOR_LINES: usize = 128;

/// The values of Kustomize's `secretGenerator` (its name at `s..e`, alone on its line
/// within [`KUBE_INDENT_MAX`] columns): each item of a generator's `literals:` list,
/// `KEY=value` (quoted whole, or its value quoted), its value whatever its key's name —
/// judged as an option's value is (see [`argument`]; one with blanks, as a quoted one),
/// not a documentation's example (see [`example_value`]) — from the first to the last.
/// The generator's lines: deeper than its name, or list items at its column (`- name:
/// app`), blank lines and comments between; [`GENERATOR_LINES`] at most within
/// [`KUBE_REACH`] bytes, up to the next `secretGenerator:`. Not a `configMapGenerator`'s.
fn generated_secrets(text: &str, s: usize, e: usize) -> Option<(usize, usize)> {
    let b = text.as_bytes();
    let line = memchr::memrchr(b'\n', &b[..s]).map_or(0, |k| k + 1);
    let column = s - line;
    let eol = memchr::memchr(b'\n', &b[e..]).map_or(b.len(), |k| e + k);
    if column > KUBE_INDENT_MAX
        || !b[line..s].iter().all(|&c| c == b' ')
        || !yaml_rest_empty(&b[e..eol])
    {
        return None;
    }
    let limit = ceil_char_boundary(text, b.len().min(e + KUBE_REACH));
    let (mut at, mut literals, mut found) = (eol + 1, None, None::<(usize, usize)>);
    for _ in 0..GENERATOR_LINES {
        if at >= limit {
            break;
        }
        let (end, indent, empty, item) = yaml_line(b, at, limit);
        let spaces = b[at..end].iter().take_while(|&&c| c == b' ').count();
        // (A mark `yaml_line` read past the limit, `-` and a blank after it, ends there.)
        let first = (at + indent).min(end);
        let content = &b[first..end];
        if !empty && (spaces < column || spaces == column && !item)
            || content.starts_with(super::patterns::SECRET_GENERATOR.as_bytes())
        {
            break;
        }
        // (An item of `literals:`, at its key's column or deeper.)
        if let Some(key) = literals
            && !empty
            && !(item && spaces >= key)
        {
            literals = None;
        }
        if !empty && literals.is_some() && first < end {
            if let Some(value) = generated_literal(text, first, end) {
                found = Some((found.map_or(value.0, |f| f.0), value.1));
            }
        } else if content.starts_with(b"literals:") && yaml_rest_empty(&content[9..]) {
            literals = Some(indent);
        }
        at = end + 1;
    }
    found
}

/// The value of a `literals:` item at `i..end` (see [`generated_secrets`]), if a secret:
/// the item quoted whole to its closing quote, else to a comment or the line's end, read
/// as a `KEY=value` word (see [`key_value_pair`]).
fn generated_literal(text: &str, i: usize, end: usize) -> Option<(usize, usize)> {
    let b = text.as_bytes();
    let to = match b[i] {
        q @ (b'"' | b'\'') => i + 2 + memchr::memchr(q, &b[i + 1..end])?,
        _ => {
            let to = memchr::memmem::find(&b[i..end], b" #").map_or(end, |k| i + k);
            i + b[i..to].trim_ascii_end().len()
        }
    };
    key_value_pair(text, i, to)
}

/// How far [`kube_secret`] looks from a manifest's kind for its values, and past its
/// values for its kind.
const KUBE_REACH: usize = 4096;

/// How far [`kube_secret`] reads a Secret's values: a TLS certificate and its key are
/// about 5 KiB in base64.
const KUBE_VALUES_MAX: usize = 64 * 1024;

/// The deepest a Secret's `kind`, `data` and `stringData` are indented (a manifest at a
/// line's start, a List's items, a chart's values a level or two below): deeper ones are
/// not read — nested names over and over each read the block below them, 113x ordinary
/// English in review 75.
const KUBE_INDENT_MAX: usize = 8;

/// How many blank and comment lines in a row a Secret's block passes over.
const KUBE_SKIPPED_MAX: usize = 8;

/// A line of YAML from `at` (a line's start): its end, its indentation (blanks, and a
/// list item's `- ` counted as blanks), whether it holds nothing but a comment, and
/// whether it starts a list's item.
fn yaml_line(b: &[u8], at: usize, limit: usize) -> (usize, usize, bool, bool) {
    let end = memchr::memchr(b'\n', &b[at..limit]).map_or(limit, |k| at + k);
    let (mut indent, mut item) = (0, false);
    while at + indent < end {
        match (b[at + indent], b.get(at + indent + 1)) {
            (b' ', _) => indent += 1,
            (b'-', Some(b' ')) => {
                indent += 2;
                item = true;
            }
            _ => break,
        }
    }
    let rest = &b[at + indent..end];
    let empty = rest.iter().all(|c| c.is_ascii_whitespace()) || rest.starts_with(b"#");
    (end, indent, empty, item)
}

/// Whether `rest` (after a YAML key's colon) holds nothing but blanks and a comment.
fn yaml_rest_empty(rest: &[u8]) -> bool {
    let rest = rest.trim_ascii_start();
    rest.is_empty() || rest.starts_with(b"#")
}

/// A Kubernetes Secret's values, from the literal at `s..e` (see `patterns::KUBE_SECRET`):
/// every value of its `data` block (base64 of the secret, whatever its key's name:
/// `DATABASE_URL: cG9zdGdyZXM6…`) and of its `stringData` block (the secret in clear), from
/// the first to the last — as `kubectl get secret -o yaml` prints them, the `data` block
/// before the kind (`kind: Secret` among the block's next siblings, `immutable:` and
/// `stringData:` between), each item of a `kind: List` too (indented under `items:`); as
/// people write a manifest, the kind before them (its blocks among its siblings within
/// [`KUBE_REACH`] bytes, before the next document's `---`, a code fence or the next kind);
/// `-o json`'s `"data": {…}` object before `"kind": "Secret"` (compact too), or after it.
/// A block's lines: indented deeper, `key: value` (the key quoted or not), blank lines and
/// comments between; a value quoted or not, a comment after it; in `data`, padded base64
/// (a template, `{{ … | b64enc }}`, passed over); in `stringData`, any but a template or a
/// placeholder (`{{ .Values.pw }}`, `"${DB_URL}"`, `<password>`, `changeme`, `""`), a block
/// scalar's lines (`config.yaml: |`) where none of them holds one. [`KUBE_VALUES_MAX`]
/// bytes of values read at most. Not a ConfigMap's `data` (no Secret's kind beside it), a
/// `SecretStore`, a `SealedSecret`, `metadata:`.
fn kube_secret(text: &str, s: usize, e: usize) -> Option<(usize, usize)> {
    let b = text.as_bytes();
    let literal = &b[s..e];
    let limit = ceil_char_boundary(text, b.len().min(e + KUBE_VALUES_MAX));
    let reach = ceil_char_boundary(text, b.len().min(e + KUBE_REACH));
    if literal[0] == b'"' {
        return kube_json(b, s, e, reach, limit);
    }
    // (A key at its line's start, blanks or a list item's `- ` before it, nothing after
    // it but a comment; the kind's value whole, `kind: Secret`, not `kind: SecretStore`.)
    // (Its line's start read back 256 bytes at most: a run of `data:` with no line break
    // read back to the text's start from each, 110x the bench text in the first build.)
    let floor = s.saturating_sub(256);
    let line = match memchr::memrchr(b'\n', &b[floor..s]) {
        Some(k) => floor + k + 1,
        None if floor == 0 => 0,
        None => return None,
    };
    let (_, indent, _, _) = yaml_line(b, line, e);
    let key_end = yaml_line(b, e, limit).0;
    // (After `data:`, a flow mapping on its line too: `data: {DB_URL: …}`.)
    let rest = &b[e..key_end];
    let flow = !literal.starts_with(b"kind:") && rest.trim_ascii_start().starts_with(b"{");
    if line + indent != s || indent > KUBE_INDENT_MAX || !(flow || yaml_rest_empty(rest)) {
        return None;
    }
    let next_line = |end: usize| (end < limit).then_some(end + 1);
    // (The kind bare or quoted: `kind: "Secret"`, `kind: 'Secret'`.)
    if literal.starts_with(b"kind:") {
        // Its siblings after it: a block of values among them.
        let mut at = next_line(key_end)?;
        while at < reach {
            let (end, deeper, empty, item) = yaml_line(b, at, limit);
            let content = &b[at + deeper..end];
            if content.starts_with(b"---") || content.starts_with(b"```") {
                return None;
            }
            // (Not past its own item, a List's next, `- apiVersion: …`: review 75.)
            if !empty && (deeper < indent || (item && deeper <= indent)) {
                return None;
            }
            if !empty && deeper == indent {
                if content.starts_with(b"kind:") {
                    return None;
                }
                for (name, data) in [(&b"data:"[..], true), (b"stringData:", false)] {
                    if !content.starts_with(name) {
                        continue;
                    }
                    if yaml_rest_empty(&content[name.len()..]) {
                        return kube_block(text, end, indent, limit, data).map(|(sp, _)| sp);
                    }
                    // (A flow mapping on its line: `data: {DB_URL: …, token: …}`.)
                    if let Some(span) = kube_flow(b, at + deeper + name.len(), end, data) {
                        return Some(span);
                    }
                }
            }
            at = next_line(end)?;
        }
        return None;
    }
    // `data:` or `stringData:`: its block, then the kind among its next siblings.
    let (span, after) = match flow {
        true => (
            kube_flow(b, e, key_end, literal[0] == b'd')?,
            next_line(key_end)?,
        ),
        false => kube_block(text, key_end, indent, limit, literal[0] == b'd')?,
    };
    let mut at = after;
    while at < b.len().min(after + KUBE_REACH) {
        let (end, deeper, empty, item) = yaml_line(b, at, limit);
        if !empty {
            let content = &b[at + deeper..end];
            if deeper != indent || item {
                return None;
            }
            if content.starts_with(b"kind:") {
                let kind = &content[5..];
                let kind = kind.trim_ascii_start();
                let secret = kind.starts_with(b"Secret") && yaml_rest_empty(&kind[6..]);
                return secret.then_some(span);
            }
            // (A sibling block is read past: `immutable:`, `stringData:`'s lines.)
            if !content.starts_with(b"immutable:") && !content.starts_with(b"stringData:") {
                return None;
            }
        }
        at = next_line(end)?;
    }
    None
}

/// The values of a Kubernetes Secret's block whose name's line ends at `at`, the name
/// indented by `indent` (see [`kube_secret`]; `data`: base64), from the first value's start
/// to the last's end, and where the block ends (the start of its first line indented as
/// far as its name or less).
fn kube_block(
    text: &str,
    at: usize,
    indent: usize,
    limit: usize,
    data: bool,
) -> Option<((usize, usize), usize)> {
    let b = text.as_bytes();
    let mut span: Option<(usize, usize)> = None;
    let mut add = |from: usize, to: usize| {
        span = Some((span.map_or(from, |(first, _)| first), to));
    };
    let (mut line, mut skipped) = (at + 1, 0);
    while at < limit && line < limit {
        let (end, deeper, empty, _) = yaml_line(b, line, limit);
        if empty {
            // (A few blank and comment lines in a row: not a run of them read from each
            // block above it.)
            skipped += 1;
            if skipped > KUBE_SKIPPED_MAX {
                break;
            }
            line = end + 1;
            continue;
        }
        skipped = 0;
        if deeper <= indent {
            return span.map(|sp| (sp, line));
        }
        // `key: value`, the key quoted or not.
        let key = line + deeper;
        let quoted = matches!(b[key], b'"' | b'\'');
        let name_end = key
            + usize::from(quoted)
            + b[key + usize::from(quoted)..end]
                .iter()
                .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-' | b'.'))
                .count()
            + usize::from(quoted);
        if name_end == key || !b[name_end.min(end)..end].starts_with(b":") {
            break;
        }
        let first = name_end + 1 + leading_blanks(&b[name_end + 1..end]);
        // The value: its quotes left out (an escaped one inside, `\"`, `''`), a comment
        // after it too.
        let mut value = (first, end);
        match b.get(first) {
            Some(&q @ (b'"' | b'\'')) if first < end => {
                let mut k = first + 1;
                let close = loop {
                    match b[k..end]
                        .iter()
                        .position(|&c| c == q || (q == b'"' && c == b'\\'))
                    {
                        None => break None,
                        Some(n) if b[k + n] == b'\\' => k += n + 2,
                        Some(n) if q == b'\'' && b.get(k + n + 1) == Some(&b'\'') => k += n + 2,
                        Some(n) => break Some(k + n),
                    }
                    if k >= end {
                        break None;
                    }
                };
                let Some(close) = close else {
                    break;
                };
                value = (first + 1, close);
            }
            _ => {
                if let Some(k) = memchr::memmem::find(&b[first..end], b" #") {
                    value.1 = first + k;
                }
                value.1 = first + b[first..value.1].trim_ascii_end().len();
            }
        }
        let v = &b[value.0..value.1];
        // (A nested mapping is no Secret's value: `key:` alone ends the block.)
        if v.is_empty() && value.0 == first {
            break;
        }
        if !data && matches!(v, b"|" | b"|-" | b"|+" | b">" | b">-" | b">+") {
            // (A block scalar: its lines indented deeper than the key — not where more than
            // half of them hold a template or a placeholder, `username: <user>`, the docs'
            // own example, review 74; one among others is the block's, `API_URL=${…}`,
            // review 75.)
            let (mut last, mut next) = (end, end + 1);
            let (mut lines, mut filled) = (0, 0);
            while next < limit {
                let (next_end, more, blank, _) = yaml_line(b, next, limit);
                if !blank && more <= deeper {
                    break;
                }
                lines += usize::from(!blank);
                filled += usize::from(b[next..next_end].split(u8::is_ascii_whitespace).any(|w| {
                    kube_templated(w)
                        || template(w)
                        || w.get(..5).is_some_and(|p| p.eq_ignore_ascii_case(b"your_"))
                }));
                last = next_end;
                next = next_end + 1;
            }
            if last > end && filled * 2 <= lines {
                add(end + 1, last);
            }
            line = next;
            continue;
        }
        match kube_value(v, data) {
            None => break,
            Some(true) => add(value.0, value.1),
            Some(false) => {}
        }
        line = end + 1;
    }
    span.map(|sp| (sp, line.min(limit)))
}

/// Whether `v` is a template or a value a tool fills in (see [`kube_value`]): `{{ … }}`,
/// `${…}`, Concourse's `((…))`, Octopus's `#{…}`, `vault:…`, `ref+vault://…`, SOPS's
/// `ENC[…]`, `__DB_PASSWORD__`.
fn kube_templated(v: &[u8]) -> bool {
    memchr::memmem::find(v, b"{{").is_some()
        || memchr::memmem::find(v, b"${").is_some()
        || [&b"(("[..], b"#{", b"vault:", b"ref+", b"ENC["]
            .iter()
            .any(|p| v.starts_with(p))
        || (v.len() > 4 && v.starts_with(b"__") && v.ends_with(b"__"))
}

/// Whether a Kubernetes Secret's value `v` (without its quotes) is taken as a secret: in
/// `data` (`data`), padded base64, `None` where it is not (no Secret's block holds it);
/// not a template or a value a tool fills in (see [`kube_templated`]), nor a placeholder's
/// word (base64 may be capitals alone, but not `REDACTED`, `PASSWORD`, `xxxx`: review
/// 75); in `stringData`, any but those or a placeholder (`<password>`, `changeme`,
/// `YOUR_PASSWORD`, `""`).
fn kube_value(v: &[u8], data: bool) -> Option<bool> {
    let placeholder_word = [&b"redacted"[..], b"password", b"changeme", b"secret"]
        .iter()
        .any(|w| v.eq_ignore_ascii_case(w))
        || v.iter().all(|&c| Some(&c) == v.first());
    match data {
        true if kube_templated(v) || placeholder_word => Some(false),
        true if !v.len().is_multiple_of(4) || base64_decode(v).is_none() => None,
        true => Some(true),
        false => Some(!v.is_empty() && !kube_templated(v) && !template(v) && !placeholder_bytes(v)),
    }
}

/// The values of a Kubernetes Secret's block written as a flow mapping on its line (see
/// [`kube_secret`]): `data: {DB_URL: …, token: "…"}` from `at` (past the block's name) to
/// `end` (its line's end), keys and values quoted or not, each value as [`kube_value`]
/// takes it — from the first value's start to the last's end, or `None` where the line
/// holds no such mapping (or none of its values is taken).
fn kube_flow(b: &[u8], at: usize, end: usize, data: bool) -> Option<(usize, usize)> {
    let blanks = |k: usize| k + leading_blanks(&b[k..end]);
    let mut at = blanks(at);
    // (Before `end`: at the bound of what is read, a `{` there opens nothing to read.)
    if at >= end || b[at] != b'{' {
        return None;
    }
    let mut span: Option<(usize, usize)> = None;
    // (Each member: its key, `:`, its value, then `,` or the closing `}`.)
    loop {
        at = blanks(at + 1);
        if b.get(at) == Some(&b'}') && at < end {
            return span;
        }
        let (key, _) = kube_flow_scalar(b, at, end, b":")?;
        at = blanks(key);
        if b.get(at) != Some(&b':') || at >= end {
            return None;
        }
        let (after, value) = kube_flow_scalar(b, blanks(at + 1), end, b",}")?;
        if kube_value(&b[value.0..value.1], data)? {
            span = Some((span.map_or(value.0, |sp| sp.0), value.1));
        }
        at = blanks(after);
        match b.get(at) {
            Some(b',') if at < end => {}
            Some(b'}') if at < end => return span,
            _ => return None,
        }
    }
}

/// A scalar of a YAML flow mapping at `at` (see [`kube_flow`]), before `end`: quoted (`"…"`
/// with its escapes, `'…'` with `''`) or plain, to one of `stops` (its blanks trimmed).
/// Where it ends (past its closing quote) and its text's span (without its quotes).
fn kube_flow_scalar(
    b: &[u8],
    at: usize,
    end: usize,
    stops: &[u8],
) -> Option<(usize, (usize, usize))> {
    match b.get(at) {
        Some(&q @ (b'"' | b'\'')) if at < end => {
            let mut k = at + 1;
            while k < end {
                match b[k] {
                    b'\\' if q == b'"' => k += 2,
                    c if c == q && q == b'\'' && b.get(k + 1) == Some(&b'\'') => k += 2,
                    c if c == q => return Some((k + 1, (at + 1, k))),
                    _ => k += 1,
                }
            }
            None
        }
        _ => {
            let n = b[at..end].iter().take_while(|c| !stops.contains(c)).count();
            let text = b[at..at + n].trim_ascii_end();
            (!text.is_empty()).then_some((at + n, (at, at + text.len())))
        }
    }
}

/// `-o json`'s `"data"` or `"stringData"` object from its literal at `s..e` (see
/// [`kube_secret`]): its string values, first to last, where `"kind": "Secret"` follows it
/// (an `"immutable"` member between) — or, from the kind's literal, such an object among
/// the members of the kind's own object after it (not a nested one's, not the next item's
/// of a List, review 75) within `reach`, before the next `"kind"`.
fn kube_json(b: &[u8], s: usize, e: usize, reach: usize, limit: usize) -> Option<(usize, usize)> {
    // (Everything read within the bound: an `"immutable"` member at it sliced past it in
    // review 75's build, a panic.)
    let b = &b[..limit];
    let ws = |i: usize| {
        i + b[i.min(b.len())..]
            .iter()
            .take_while(|c| c.is_ascii_whitespace())
            .count()
    };
    // (Past `"name"`, blanks, a colon and blanks: the value's first byte.)
    let member = |i: usize, name: &[u8]| -> Option<usize> {
        let after = i + name.len();
        (b.get(i..after)? == name).then_some(())?;
        let colon = ws(after);
        (b.get(colon) == Some(&b':')).then(|| ws(colon + 1))
    };
    let objects = [(&b"\"data\""[..], true), (b"\"stringData\"", false)];
    if let Some(&(name, data)) = objects.iter().find(|(name, _)| b[s..e].starts_with(name)) {
        let open = member(s, name)?;
        let (span, after) = kube_object(b, open, data)?;
        let mut i = after;
        for _ in 0..3 {
            i = ws(i);
            i += usize::from(b.get(i) == Some(&b','));
            i = ws(i);
            if let Some(v) = member(i, b"\"kind\"") {
                return (b.get(v..v + 8) == Some(&b"\"Secret\""[..])).then_some(span);
            }
            let v = member(i, b"\"immutable\"")?;
            i = v + b[v..]
                .iter()
                .take_while(|c| c.is_ascii_alphabetic())
                .count();
        }
        return None;
    }
    // The kind first: a `"data"` or `"stringData"` member of its own object after it,
    // before the next `"kind"` — read a byte at a time, strings passed over, the depth of
    // braces and brackets counted.
    let until = memchr::memmem::find(&b[e..reach.min(b.len())], b"\"kind\"")
        .map_or(reach.min(b.len()), |k| e + k);
    let (mut i, mut depth) = (e, 0usize);
    while i < until {
        match b[i] {
            b'{' | b'[' => depth += 1,
            b'}' | b']' if depth == 0 => return None,
            b'}' | b']' => depth -= 1,
            b'"' => {
                if depth == 0
                    && let Some(&(name, data)) =
                        objects.iter().find(|(name, _)| b[i..].starts_with(name))
                    && let Some(open) = member(i, name)
                {
                    return kube_object(b, open, data).map(|(span, _)| span);
                }
                // (Past the string, its escapes too.)
                i += 1;
                while i < until && b[i] != b'"' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// The string values of `-o json`'s `data` object at `at` (its `{`; `stringData`'s where
/// not `data`), first to last, and where the object ends (past its `}`): `"key": "value"`
/// pairs only, each value padded base64 in `data`, in `stringData` no template (see
/// [`kube_secret`]).
fn kube_object(b: &[u8], at: usize, data: bool) -> Option<((usize, usize), usize)> {
    if b.get(at) != Some(&b'{') {
        return None;
    }
    let ws = |i: usize| {
        i + b[i.min(b.len())..]
            .iter()
            .take_while(|c| c.is_ascii_whitespace() || **c == b',')
            .count()
    };
    // (A string's closing quote from `i`, its escapes passed over.)
    let close = |mut i: usize| {
        while i < b.len() {
            match b[i] {
                b'"' => return Some(i),
                b'\\' => i += 2,
                _ => i += 1,
            }
        }
        None
    };
    let mut span: Option<(usize, usize)> = None;
    let mut i = at + 1;
    loop {
        i = ws(i);
        match b.get(i) {
            Some(b'}') => return span.map(|sp| (sp, i + 1)),
            Some(b'"') => {}
            _ => return None,
        }
        let key_end = close(i + 1)?;
        let colon = ws(key_end + 1);
        if b.get(colon) != Some(&b':') {
            return None;
        }
        let open = ws(colon + 1);
        if b.get(open) != Some(&b'"') {
            return None;
        }
        let end = close(open + 1)?;
        let v = &b[open + 1..end];
        let valid = match data {
            true => v.len().is_multiple_of(4) && base64_decode(v).is_some(),
            false => {
                !v.is_empty()
                    && !template(v)
                    && memchr::memmem::find(v, b"{{").is_none()
                    && memchr::memmem::find(v, b"${").is_none()
            }
        };
        if !valid {
            return None;
        }
        span = Some((span.map_or(open + 1, |(first, _)| first), end));
        i = end + 1;
    }
}

/// The most bytes of base64 [`encoded_private_key`] reads: an RSA key of 4096 bits is
/// about 3.2 KiB in PEM, 4.4 KiB encoded again.
const ENCODED_KEY_MAX: usize = 16 * 1024;

/// A private key's PEM block encoded again in base64 from `s` (`-----BEGIN` encoded, see
/// `patterns::ENCODED_PEM`), as Kubernetes stores a TLS secret's key (`tls.key:
/// LS0tLS1CRUdJTi…` in `kubectl get secret -o yaml`) and CI variables and Helm values hold
/// one: its first line decodes to a `BEGIN` line of a private key (`RSA PRIVATE KEY`,
/// `OPENSSH PRIVATE KEY`, `PGP PRIVATE KEY BLOCK` — not a public key's), or of a
/// certificate where a private key's block follows it in the same run (a bundle, as HAProxy
/// and Traefik take one: `-----BEGIN CERTIFICATE-----…-----BEGIN PRIVATE KEY-----`, the run
/// decoded whole) — the whole run of base64 taken (to its padding, over line breaks after
/// lines of 60 to 80 characters, as tools wrap them — GNU `base64` at 76, OpenSSL at 64;
/// [`ENCODED_KEY_MAX`] bytes at most), 100 characters at least. Not a run that base64 is
/// glued before: the encoding does not start there.
fn encoded_private_key(text: &str, s: usize) -> Option<(usize, usize)> {
    let b = text.as_bytes();
    if s.checked_sub(1).is_some_and(|i| base64_char(&b[i])) {
        return None;
    }
    // (Its header read first: a run that is no key's is not read on.)
    let head = b[s..]
        .iter()
        .take(96)
        .take_while(|c| base64_char(c))
        .count();
    let head = base64_decode(&b[s..s + head - head % 4])?;
    let line = &head[..memchr::memchr(b'\n', &head).unwrap_or(head.len())];
    let private = memchr::memmem::find(line, b"PRIVATE KEY").is_some();
    let certificate = memchr::memmem::find(line, b"BEGIN CERTIFICATE").is_some();
    if !(private || certificate) || memchr::memmem::find(line, b"PUBLIC").is_some() {
        return None;
    }
    let limit = b.len().min(s + ENCODED_KEY_MAX);
    // (A certificate's run: a private key's block among the blocks it decodes to.)
    if !private && !bundle_holds_key(b, s, limit) {
        return None;
    }
    let mut line = s;
    let end = loop {
        let (run, pad) = base64_line(b, line, limit);
        match wrapped_next_line(b, line, line + run, limit) {
            Some(next) => line = next,
            None => break line + run + pad,
        }
    };
    (end - s >= 100).then_some((s, end))
}

/// A line of a run of base64 from `at` (before `limit`): the length of its base64 and of
/// the padding after it (two `=` at most).
fn base64_line(b: &[u8], at: usize, limit: usize) -> (usize, usize) {
    let run = b[at..limit].iter().take_while(|c| base64_char(c)).count();
    let pad = b[at + run..limit]
        .iter()
        .take(2)
        .take_while(|&&c| c == b'=')
        .count();
    (run, pad)
}

/// Where a wrapped run of base64 goes on after its line `line..end` (its base64, before
/// `limit`): where the line is as long as tools wrap them (60 to 80 characters: GNU
/// `base64`'s 76, OpenSSL's 64, others' 60, 72, 80, `base64 -w` any) and a line break
/// follows, then a line of base64 to its end, padding at most after it (not a word that
/// starts the text after the block, `TLS_CERT=`, review 73) — or `None`.
fn wrapped_next_line(b: &[u8], line: usize, end: usize, limit: usize) -> Option<usize> {
    let nl = match &b[end..limit] {
        [b'\n', c, ..] if base64_char(c) => 1,
        [b'\r', b'\n', c, ..] if base64_char(c) => 2,
        _ => 0,
    };
    let next = end + nl;
    let (run, pad) = base64_line(b, next, limit);
    let whole = matches!(b.get(next + run + pad), None | Some(b'\n' | b'\r'));
    ((60..=80).contains(&(end - line)) && nl > 0 && whole).then_some(next)
}

/// Whether the run of base64 from `s` (before `limit`), which decodes to a certificate's
/// `BEGIN` line, holds a private key's block after it (a bundle: see
/// [`encoded_private_key`]): decoded a line at a time as tools wrap them (see
/// [`wrapped_next_line`]; a multiple of 4 wide), its blocks' `BEGIN` and `END` lines read
/// in order — no further than a block that opens inside another or a marker that is none
/// (not what a PEM file holds: each line of a text of encoded `BEGIN` lines read no further
/// than the next, review 87), nor past four certificates' blocks; each candidate reads so a
/// bounded part of the run.
fn bundle_holds_key(b: &[u8], s: usize, limit: usize) -> bool {
    let mut decoded = Vec::new();
    // (Where markers are read from; whether a block is open; certificates closed.)
    let (mut read, mut inside, mut certificates) = (0, false, 0);
    let mut at = s;
    loop {
        let (run, pad) = base64_line(b, at, limit);
        let Some(d) = base64_decode(&b[at..at + run + pad]) else {
            return false;
        };
        decoded.extend_from_slice(&d);
        // (Each marker whose `-----` closes it: `-----BEGIN CERTIFICATE-----`.)
        while let Some(k) = memchr::memmem::find(&decoded[read..], b"-----") {
            let open = read + k + 5;
            let Some(n) = memchr::memmem::find(&decoded[open..], b"-----") else {
                // (A marker's label is short: one still open 64 bytes on is none, and its
                // tail is not searched again line after line, review 88.)
                if decoded.len() - open > 64 {
                    return false;
                }
                break;
            };
            let label = &decoded[open..open + n];
            if let Some(kind) = label.strip_prefix(b"BEGIN ") {
                if inside || memchr::memchr(b'\n', label).is_some() {
                    return false;
                }
                if kind.ends_with(b"PRIVATE KEY") && memchr::memmem::find(kind, b"PUBLIC").is_none()
                {
                    return true;
                }
                inside = true;
            } else if label.starts_with(b"END ") && inside {
                inside = false;
                certificates += 1;
                if certificates == 4 {
                    return false;
                }
            } else {
                return false;
            }
            read = open + n + 5;
        }
        // (The next line, as the run's is read in `encoded_private_key` — lines of whole
        // quads only, each decoded alone: with a line's tail decoded with the next one's
        // head, a run of lines that each encode a certificate's `BEGIN` would each be read
        // to the run's end, not to the next line's `BEGIN`.)
        match wrapped_next_line(b, at, at + run, limit) {
            Some(next) if pad == 0 && run % 4 == 0 => at = next,
            _ => return false,
        }
    }
}

/// How far past its name (see `patterns::WIF_NAMES`) a private key in Wallet Import Format
/// is looked for: a call's or a command's other arguments before it (`importprivkey`'s
/// none, `dumpprivkey`'s address and its line break).
const WIF_REACH: usize = 96;

/// A wallet's private key in Wallet Import Format after its name at `s..e` (`"wif":
/// "5Hue…"`, `WIF: Kw…`, `from_wif("L1…")`, `bitcoin-cli importprivkey 5K…`,
/// `dumpprivkey`'s answer on the next line): the first of the next three runs of Base58
/// within [`WIF_REACH`] bytes that holds one — 51 characters from `5` (or testnet's `9`),
/// 52 from `K`, `L` (or `c`), whose Base58Check holds a version byte (`0x80`, testnet's
/// `0xEF`), 32 bytes of key and, in the longer, `0x01` (see [`base58_checked`]). Not `wif`
/// at a word's end (`swif:`: a small letter right before it; `wifi` is no literal's, see
/// `patterns::WIF_NAMES`).
fn wif_key(text: &str, s: usize, e: usize) -> Option<(usize, usize)> {
    let b = text.as_bytes();
    let glued = match &b[s..s + 3] {
        // (`swif:`; not `privateKeyWif":`, a camel case name's last word, nor `fromWIF(`.)
        b"wif" => s.checked_sub(1).is_some_and(|i| b[i].is_ascii_lowercase()),
        _ => false,
    };
    if glued {
        return None;
    }
    let window = &b[e..b.len().min(e + WIF_REACH)];
    // (Three runs of Base58 at most: a run of names, `privkey privkey …`, is not read
    // [`WIF_REACH`] bytes from each.)
    let (mut i, mut runs) = (0, 0);
    while i < window.len() && runs < 3 {
        let run = window[i..]
            .iter()
            .take_while(|&&c| BASE58_DIGITS[usize::from(c)] < 58)
            .count();
        if run == 0 {
            i += 1;
            continue;
        }
        runs += 1;
        let key = &window[i..i + run];
        if wif_shape(key).is_none() {
            i += run;
            continue;
        }
        let glued = window
            .get(i + run)
            .is_some_and(|c| c.is_ascii_alphanumeric());
        return (!glued && wif_checked(key)).then_some((e + i, e + i + run));
    }
    None
}

/// The version byte and the decoded length of a key in Wallet Import Format that `key`'s
/// first character and length give: 51 characters from `5` (testnet's `9`), 52 from `K`,
/// `L` (testnet's `c`).
fn wif_shape(key: &[u8]) -> Option<(u8, usize)> {
    match (key.first()?, key.len()) {
        (b'5', 51) => Some((0x80, 37)),
        (b'K' | b'L', 52) => Some((0x80, 38)),
        (b'9', 51) => Some((0xEF, 37)),
        (b'c', 52) => Some((0xEF, 38)),
        _ => None,
    }
}

/// Whether `key`, a run of Base58, is a private key in Wallet Import Format: of its shape
/// (see [`wif_shape`]), its Base58Check holds its version byte (`0x80`, testnet's `0xEF`),
/// 32 bytes of key and, in the longer, `0x01` (see [`base58_checked`]).
fn wif_checked(key: &[u8]) -> bool {
    wif_shape(key).is_some_and(|(version, len)| {
        base58_checked(key, len).is_some_and(|d| d[0] == version && (len == 37 || d[33] == 1))
    })
}

/// Whether `c` is a byte of an ASCII word (a letter, a digit, `_`: `(?-u:\b)`'s).
fn word_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// The trigger of a private key in Wallet Import Format with no name before it
/// (`(?-u:\b)[5KL9c][1-9A-HJ-NP-Za-km-z]{50,51}(?-u:\b)`, see `patterns::specs`) in
/// `text[from..to]`, read by hand: a whole ASCII word of 51 or 52 characters of Base58 that
/// opens with `5`, `K`, `L`, `9` or `c`, its start and end.
///
/// A run of Base58 that long is rare: the 51st byte from each place is read first, and
/// where it is none of Base58's, no such run starts at or before it and the search goes on
/// past it; where it is, the run is read back from it to where the last reading stopped —
/// a byte that is none of Base58's moves the next place past it — and, read back all the
/// way, on to its end: each byte is read once. Tested against the regex on generated
/// texts (`the_hand_read_wif_trigger_agrees_with_the_regex`).
pub(super) fn bare_wif_at(
    text: &str,
    from: usize,
    to: usize,
    _: &Freed,
    _: Option<&MetaRegex>,
) -> Option<(usize, usize)> {
    const SHORTEST: usize = 51;
    let b = text.as_bytes();
    let base58 = |c: u8| BASE58_DIGITS[usize::from(c)] < 58;
    // `b[i..known]` is Base58, read already.
    let (mut i, mut known) = (from, from);
    while i + SHORTEST <= to {
        let probe = i + SHORTEST - 1;
        if !base58(b[probe]) {
            (i, known) = (probe + 1, probe + 1);
            continue;
        }
        let mut q = probe;
        while q > known && base58(b[q - 1]) {
            q -= 1;
        }
        if q > known {
            (i, known) = (q, probe + 1);
            continue;
        }
        let mut z = probe + 1;
        while z < b.len() && base58(b[z]) {
            z += 1;
        }
        // (Whole words only: a run that starts before `from`, or glued to a word's
        // other bytes, `0`, `O`, `I`, `l`, `_`, has no border.)
        let bordered = (i == 0 || !word_byte(b[i - 1])) && b.get(z).is_none_or(|&c| !word_byte(c));
        if bordered
            && z <= to
            && matches!(z - i, 51 | 52)
            && matches!(b[i], b'5' | b'K' | b'L' | b'9' | b'c')
        {
            return Some((i, z));
        }
        (i, known) = (z, z);
    }
    None
}

/// Whether a word of 51 bytes or more that opens as a key in Wallet Import Format (see
/// [`bare_wif_at`]) starts in `b[from..to]`.
pub(super) fn may_start_wif(b: &[u8], from: usize, to: usize) -> bool {
    (from..to).any(|p| {
        matches!(b[p], b'5' | b'K' | b'L' | b'9' | b'c')
            && (p == 0 || !word_byte(b[p - 1]))
            && b.get(p..p + 51)
                .is_some_and(|w| w.iter().all(|&c| word_byte(c)))
    })
}

/// Whether a mark a value prose gives before its name may open (see
/// [`value_before_name_at`]) stands in `b[from..to]`: a quote's, a backtick's, emphasis'
/// first byte, or the curly quotes' and `«`'s lead bytes.
pub(super) fn opens_a_mark(b: &[u8], from: usize, to: usize) -> bool {
    b[from..to].iter().any(|c| b"`\"'*\xC2\xE2".contains(c))
}

/// A wallet's private key in Wallet Import Format with no name before it, the word that
/// starts at `s` (see [`bare_wif_at`]; `e`: its window's end): its Base58Check checked (see
/// [`wif_checked`]) — two rounds of SHA-256 that a run of 51 letters and digits passes by
/// chance once in four billion.
pub(super) fn bare_wif(text: &str, s: usize, e: usize, _: &Freed) -> Option<(usize, usize)> {
    let b = text.as_bytes();
    let z = s + b[s..e].iter().take_while(|&&c| word_byte(c)).count();
    wif_checked(&b[s..z]).then_some((s, z))
}

/// A wallet's extended private key from its prefix at `s` (one of
/// `patterns::EXTENDED_KEY_PREFIXES`, `xprv`, `tprv`, …): the 111 characters of Base58
/// that BIP-32 serializes one into, 78 bytes and a checksum — the checksum checked (two
/// rounds of SHA-256: `xprv` and 107 characters of a Base58 blob or of `x` are none,
/// review 69), whatever stands before or after it (`WALLET_xprv…`, quoted-printable's
/// `=3Dxprv…`, `xprv…_old`: reviews 69, 70). Whoever reads one holds every key of the
/// wallet's branch; a shortened one, `xprv9s21…` in docs, is none.
fn extended_private_key(text: &str, s: usize, e: usize, _: &Freed) -> Option<(usize, usize)> {
    const LEN: usize = 111;
    let b = text.as_bytes();
    // (The digits seen among the first 24 after the prefix: a random key's are ~20 of 58,
    // ten at least; a run of prefixes' letters, `xprvxprv…`, has four — each candidate
    // decoded 111 characters before it failed, 22x the bench text, review 71.)
    let mut seen = 0u64;
    let mut body = 0;
    for &c in b[e..].iter().take(LEN - (e - s)) {
        let digit = BASE58_DIGITS[usize::from(c)];
        if digit >= 58 {
            break;
        }
        seen |= 1 << digit;
        body += 1;
        if body == 24 && seen.count_ones() < 10 {
            return None;
        }
    }
    let z = e + body;
    (z - s == LEN && base58_checked(&b[s..z], 82).is_some()).then_some((s, z))
}

/// Each byte's value as a digit of Base58 (Bitcoin's alphabet, no `0`, `O`, `I`, `l`), 58
/// where it is none.
const BASE58_DIGITS: [u8; 256] = {
    let alphabet = b"123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";
    let mut table = [58; 256];
    let mut k = 0;
    while k < alphabet.len() {
        table[alphabet[k] as usize] = k as u8;
        k += 1;
    }
    table
};

/// What `key` (Base58, see [`BASE58_DIGITS`]) decodes to where that is `len` bytes at most
/// (82 at most) whose last four are the first four of the SHA-256 of the SHA-256 of those
/// before them — Base58Check's payload, `len - 4` bytes (an extended key's 78, see
/// [`extended_private_key`]; Wallet Import Format's 33 or 34, see [`wif_key`]).
fn base58_checked(key: &[u8], len: usize) -> Option<Vec<u8>> {
    use sha2::{Digest, Sha256};
    let (bytes, at) = base58_bytes(key, len)?;
    let bytes = &bytes[at..];
    let (payload, checksum) = bytes.split_at(bytes.len() - 4);
    (Sha256::digest(Sha256::digest(payload))[..4] == *checksum).then(|| payload.to_vec())
}

/// The number `key`'s Base58 digits write, as `len` bytes (82 at most), big-endian: the
/// bytes from the returned index on — `None` where it does not fit in them.
fn base58_bytes(key: &[u8], len: usize) -> Option<([u8; 84], usize)> {
    // (In limbs of 32 bits, most significant first, as many as `len` bytes take — 21 at
    // most: a byte at a time, a run of keys that fail read 4.2x as slowly as the bench
    // text; a key in Wallet Import Format needs 10, review 72.)
    let len = len.min(82);
    let mut all = [0u32; 21];
    let limbs = &mut all[21 - len.div_ceil(4)..];
    for &c in key {
        let mut carry = u64::from(BASE58_DIGITS[usize::from(c)]);
        for limb in limbs.iter_mut().rev() {
            carry += u64::from(*limb) * 58;
            *limb = (carry & 0xffff_ffff) as u32;
            carry >>= 32;
        }
        if carry != 0 {
            return None;
        }
    }
    let mut bytes = [0u8; 84];
    for (chunk, limb) in bytes.chunks_exact_mut(4).zip(all) {
        chunk.copy_from_slice(&limb.to_be_bytes());
    }
    if bytes[..84 - len].iter().any(|&c| c != 0) {
        return None;
    }
    Some((bytes, 84 - len))
}

/// A Solana keypair's secret key after a name of `patterns::SOLANA_KEY_NAMES` at `s..e`:
/// after a name's `[` (`PRIVATE_KEY=[`), its array; after a call's `(`, past wrappers'
/// calls (`Uint8Array.from(`, `new Uint8Array(`, `bs58.decode(`, Rust's `&` and `vec!`),
/// its 64 bytes as an array of numbers (`[174, 47, …]`, see [`solana_byte_array`]) or in
/// Base58 (quoted, 86 to 88 digits that make 64 bytes; JSON's escaped quotes, `\"…\"`, too;
/// `JSON.parse('[…]')`'s array in its quotes; a seed's 32 bytes to `Keypair.fromSeed(`);
/// after a file's name at its line's end (`cat ~/.config/solana/id.json`), the array that
/// starts the next line, or after a colon on its line — not a signature's bytes printed
/// later (review 86).
fn solana_key(b: &[u8], s: usize, e: usize) -> Option<(usize, usize)> {
    let m = &b[s..e];
    // (The 32 bytes of a seed, `Keypair.fromSeed(…)`; a name's array, `PRIVATE_KEY=[`.)
    let len = if m == b"Keypair.fromSeed(" { 32 } else { 64 };
    if m.ends_with(b"[") {
        return solana_byte_array(b, e - 1, len);
    }
    if b[e - 1] != b'(' {
        let rest = b[e..]
            .iter()
            .take(8)
            .take_while(|c| matches!(c, b' ' | b'\t' | b'\r' | b'"' | b'\'' | b'`' | b':'))
            .count();
        // (On its line after a colon, `keypair.json: […]`, review 86.)
        if b.get(e + rest) == Some(&b'[') && b[e..e + rest].contains(&b':') {
            return solana_byte_array(b, e + rest, 64);
        }
        if b.get(e + rest) != Some(&b'\n') {
            return None;
        }
        let first = e + rest + 1 + leading_blanks(&b[e + rest + 1..]);
        return (b.get(first) == Some(&b'[')).then(|| solana_byte_array(b, first, 64))?;
    }
    let at = past_wrappers(b, e);
    // (A quote escaped in a JSON string, `\"…\"`: the backslash passed over, and the one
    // before the closing quote.)
    let escaped = b.get(at) == Some(&b'\\') && matches!(b.get(at + 1), Some(b'"' | b'\''));
    let at = at + usize::from(escaped);
    match b.get(at) {
        Some(b'[') => solana_byte_array(b, at, len),
        // (`JSON.parse('[…]')`.)
        Some(b'"' | b'\'' | b'`') if b.get(at + 1) == Some(&b'[') => {
            solana_byte_array(b, at + 1, len)
        }
        Some(&q @ (b'"' | b'\'' | b'`')) => {
            let v = at + 1;
            let n = b[v..]
                .iter()
                .take(89)
                .take_while(|&&c| BASE58_DIGITS[usize::from(c)] < 58)
                .count();
            let closed = match escaped {
                true => b.get(v + n) == Some(&b'\\') && b.get(v + n + 1) == Some(&q),
                false => b.get(v + n) == Some(&q),
            };
            let random = distinct_bytes(&b[v..v + n]) >= 20;
            let fits = base58_bytes(&b[v..v + n], 64).is_some();
            (len == 64 && (86..=88).contains(&n) && closed && random && fits).then_some((v, v + n))
        }
        _ => None,
    }
}

/// Where a value starts past the calls that wrap it, three at most (`Uint8Array.from(`,
/// `new Uint8Array(`, `bs58.decode(`, Python's `bytes(`) and Rust's `&` and `vec!`, from
/// `at`: `at` itself, past blanks, where there are none.
fn past_wrappers(b: &[u8], mut at: usize) -> usize {
    for _ in 0..3 {
        at += b[at..]
            .iter()
            .take(16)
            .take_while(|c| c.is_ascii_whitespace() || **c == b'&')
            .count();
        if b[at..].starts_with(b"new ") {
            at += 4;
        }
        let word = b[at..]
            .iter()
            .take(33)
            .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b':' | b'!'))
            .count();
        let blanks = b[at + word..]
            .iter()
            .take(2)
            .take_while(|&&c| c == b' ')
            .count();
        match b.get(at + word + blanks) {
            Some(b'(') if (1..=32).contains(&word) => at += word + blanks + 1,
            Some(b'[') if &b[at..at + word] == b"vec!" => at += word + blanks,
            _ => break,
        }
    }
    at
}

/// A key's bytes as an array of numbers, the value of a field named for a key or a secret
/// (`name`, its name's bytes: holding `key`, `secret` or `priv` in any case — not a
/// `token`, whose numbers are a tokenizer's) from its first character at `first`:
/// `secretKey: [174, 47, …]`, `"secret_key": […]`, `const secret = new Uint8Array([…])`,
/// `Uint8Array.of(…)`, a type before its `=` passed over (Rust's `let secret_key: [u8; 64]
/// = […]`, `&[u8]`, `Vec<u8>`, TypeScript's `: number[]`, Python's `: bytes`), in braces
/// after a type (Go's `[]byte{…}`, Java's `new byte[] {…}`) — 64 numbers (a Solana
/// keypair's) or 32 (a seed's, a symmetric key's), as [`solana_byte_array`] reads them.
fn named_byte_array(b: &[u8], name: &[u8], first: usize) -> Option<(usize, usize)> {
    let keyish = name.windows(3).any(|w| {
        w.eq_ignore_ascii_case(b"key")
            || w.eq_ignore_ascii_case(b"sec")
            || w.eq_ignore_ascii_case(b"pri")
    });
    if !keyish
        || !matches!(b[first], b'[' | b'{' | b'&' | b'(' | b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9')
    {
        return None;
    }
    let mut at = first;
    // (A type after the name's colon, then the value after its `=`: not `==`, `=>`.)
    let ty = b[at..]
        .iter()
        .take(40)
        .take_while(|c| c.is_ascii_alphanumeric() || b"_<>[];&:. ".contains(c))
        .count();
    if ty > 0 && b.get(at + ty) == Some(&b'=') && !matches!(b.get(at + ty + 1), Some(b'=' | b'>')) {
        at += ty + 1;
    }
    // (Node's print of one, `Uint8Array(64) [ 148, 42, … ]`, review 90.)
    let word = b[at..]
        .iter()
        .take(16)
        .take_while(|c| c.is_ascii_alphanumeric())
        .count();
    if word > 0 && b.get(at + word) == Some(&b'(') {
        let n = b[at + word + 1..]
            .iter()
            .take(3)
            .take_while(|c| c.is_ascii_digit())
            .count();
        if n > 0 && b[at + word + 1 + n..].starts_with(b") [") {
            at += word + n + 3;
        }
    }
    let at = past_wrappers(b, at);
    let open = match b.get(at) {
        Some(b'[') if b.get(at + 1) != Some(&b']') => at,
        Some(b'{') => at,
        // (`Uint8Array.of(68, 32, …)`: the call's own parenthesis.)
        Some(c) if c.is_ascii_digit() => {
            let before = b[first..at]
                .iter()
                .rev()
                .take_while(|c| c.is_ascii_whitespace())
                .count();
            at.checked_sub(before + 1)
                .filter(|&p| p >= first && b[p] == b'(')?
        }
        // (A type before braces: `[]byte{`, `new byte[] {`.)
        _ => {
            let n = b[at..]
                .iter()
                .take(24)
                .take_while(|c| c.is_ascii_alphanumeric() || b"_[] ".contains(c))
                .count();
            (b.get(at + n) == Some(&b'{')).then_some(at + n)?
        }
    };
    solana_byte_array(b, open, 64).or_else(|| solana_byte_array(b, open, 32))
}

/// A Solana keypair's `len` bytes (64, or a seed's 32) as an array of numbers from its `[`
/// at `at` (`[174,47,…]`, or in braces or parentheses, `{…}`, `(…)`; blanks and line
/// breaks between them, a comma after the last too, as rustfmt leaves it; Rust's `u8`
/// after one): each 0 to 255, written with no sign or leading zero, that look random (see
/// [`random_bytes`]) — the numbers' span, from the first to the last.
fn solana_byte_array(b: &[u8], at: usize, len: usize) -> Option<(usize, usize)> {
    let close = match b[at] {
        b'{' => b'}',
        b'(' => b')',
        _ => b']',
    };
    let mut k = at + 1;
    let (mut first, mut last) = (0, 0);
    let mut numbers = [0u8; 64];
    for (i, slot) in numbers.iter_mut().enumerate().take(len) {
        k += b[k..]
            .iter()
            .take(16)
            .take_while(|c| c.is_ascii_whitespace())
            .count();
        // (In hex too, `0x47` — C's, Rust's, review 90.)
        let hex = matches!(b.get(k..k + 2), Some(b"0x" | b"0X"));
        let (number, digits) = if hex {
            let n = b[k + 2..]
                .iter()
                .take(3)
                .take_while(|c| c.is_ascii_hexdigit())
                .count();
            let number = std::str::from_utf8(&b[k + 2..k + 2 + n]).ok()?;
            (u8::from_str_radix(number, 16).ok()?, n + 2)
        } else {
            let digits = b[k..]
                .iter()
                .take(4)
                .take_while(|c| c.is_ascii_digit())
                .count();
            if digits > 1 && b[k] == b'0' {
                return None;
            }
            let number = std::str::from_utf8(&b[k..k + digits]).ok()?;
            (number.parse::<u8>().ok()?, digits)
        };
        *slot = number;
        if i == 0 {
            first = k;
        }
        last = k + digits;
        // (Rust's type after a number, `103u8`.)
        if b[last..].starts_with(b"u8") {
            last += 2;
        }
        k = last
            + b[last..]
                .iter()
                .take(16)
                .take_while(|c| c.is_ascii_whitespace())
                .count();
        let final_one = i + 1 == len;
        match (b.get(k), final_one) {
            (Some(b','), false) => k += 1,
            (Some(&c), true) if c == close => {}
            (Some(b','), true) => {
                let after = k
                    + 1
                    + b[k + 1..]
                        .iter()
                        .take(16)
                        .take_while(|c| c.is_ascii_whitespace())
                        .count();
                if b.get(after) != Some(&close) {
                    return None;
                }
            }
            _ => return None,
        }
    }
    random_bytes(&numbers[..len.min(64)]).then_some((first, last))
}

/// Whether `bytes` (32 or 64 of them) look like a key's, random: `len` * 3 / 8 different
/// values at least, spread over the bytes' range (the largest 160 past the smallest), not
/// sorted either way (between a sixth and five sixths of them larger than the one before),
/// and no step between neighbours (modulo 256) taken by a quarter of them — not zeros, not
/// `0, 1, 2, …`, `0, 8, 16, …`, `(i * 37) % 256`, small numbers, a sorted sample (review
/// 89). Random bytes fail one of these about once in ten thousand.
fn random_bytes(bytes: &[u8]) -> bool {
    let len = bytes.len();
    let mut seen = [false; 256];
    let mut steps = [0u8; 256];
    let mut rises = 0;
    for (i, &n) in bytes.iter().enumerate() {
        seen[usize::from(n)] = true;
        if i > 0 {
            let prev = bytes[i - 1];
            rises += usize::from(n > prev);
            let step = &mut steps[usize::from(n.wrapping_sub(prev))];
            *step = step.saturating_add(1);
        }
    }
    let distinct = seen.iter().filter(|&&s| s).count();
    let (lo, hi) = (bytes.iter().min(), bytes.iter().max());
    let spread = matches!((lo, hi), (Some(&lo), Some(&hi)) if hi - lo >= 160);
    let pairs = len.saturating_sub(1);
    let unsorted = rises * 6 >= pairs && rises * 6 <= pairs * 5;
    let stepped = steps.iter().any(|&c| usize::from(c) * 4 >= len);
    distinct >= len * 3 / 8 && spread && unsorted && !stepped
}

/// The password of a Wi-Fi network's QR code after its `WIFI:` (`s..e`), as phones and QR
/// generators write one (`WIFI:S:HomeNet;T:WPA;P:Xk9…;H:false;;`, ZXing's format): the `P`
/// field among fields of one to three capitals or digits and their values, in any order,
/// blanks around them, empty ones between (`S:Home;;T:…`), each to an unescaped `;` (`\;`,
/// `\,`, `\:`, `\\` inside; escaped again in a JSON string, `\\;`) or in quotes of its own
/// (`P:"hunter;22"`, JSON's `\"…\"`), on one line, 512 bytes in all — the password, the
/// last after another, to the quote that opened the payload or to a blank where no `;` ends
/// it (`'WIFI:…;P:hunter22'`; a first field only where another follows it, not a log's
/// `WIFI:P:enabled ;`); its quotes left out. Another `WIFI:` inside a value ends the
/// reading: each is its own candidate (`WIFI:S:WIFI:S:…` read 512 bytes at each, 34x the
/// bench text, review 70). Five characters at least (WEP's shortest); not a template (see
/// [`template`]: `P:${WIFI_PASS};`, `P:{{ psk }};`, `P:<password>;`), a mask (see
/// [`masked`]), a placeholder or the code that builds one (see [`wifi_placeholder`]).
fn wifi_password(text: &str, s: usize, e: usize, _: &Freed) -> Option<(usize, usize)> {
    let b = text.as_bytes();
    // (The quote that opens the payload, where one does, `'WIFI:…;P:hunter22'`: the
    // password ends at its closing quote, not at the line's last, review 69 — a quote that
    // a blank, a `;`, a `,` or a bracket follows, not one inside it, `P:pa'$$w0rd!'`.)
    let opener = s
        .checked_sub(1)
        .map(|i| b[i])
        .filter(|c| matches!(c, b'\'' | b'"' | b'`'));
    // (Nor one the payload's `;;` comes after on its line: `'…;P:rock 'n' roll;;'`,
    // review 71.)
    let closes = |i: usize| {
        let line = &b[i..b.len().min(i + 256)];
        let line = &line[..memchr::memchr(b'\n', line).unwrap_or(line.len())];
        Some(b[i]) == opener
            && b.get(i + 1)
                .is_none_or(|c| c.is_ascii_whitespace() || b";,)]}".contains(c))
            && memchr::memmem::find(line, b";;")
                .is_none_or(|k| memchr::memmem::find(&line[..k], b"WIFI:").is_some())
    };
    let bound = b.len().min(e + 512);
    let mut at = e + leading_blanks(&b[e..]);
    for field in 0..12 {
        let name = wifi_field(&b[at..bound])?;
        let from = at + name + 1;
        let from = from + leading_blanks(&b[from..bound]);
        let password = &b[at..at + name] == b"P";
        // (A value in quotes of its own holds `;`: `S:"My;Net"`, `P:"hunter;22"`, JSON's
        // `\"…\"` — review 70; an unclosed one is a value's first character.)
        let quote: &[u8] = match &b[from..bound] {
            [b'\\', b'"', ..] => b"\\\"",
            [b'"', ..] if opener != Some(b'"') => b"\"",
            _ => b"",
        };
        let inner = from + quote.len();
        let closed = match quote.is_empty() {
            true => None,
            // (Not a quote escaped inside it, `"pa\"ss;word"`, review 71.)
            false => memchr::memmem::find_iter(&b[inner..bound], quote)
                .find(|&k| quote.len() > 1 || k == 0 || b[inner + k - 1] != b'\\')
                .filter(|&k| !b[inner..inner + k].contains(&b'\n'))
                .map(|k| inner + k + quote.len()),
        };
        let mut end = closed.unwrap_or(from);
        // (The password read to 256 bytes past its start: not cut by the payload's bound.)
        let limit = match password {
            true => b.len().min(from + 256).max(bound),
            false => bound,
        };
        let ended = loop {
            match b[..limit].get(end) {
                Some(b';') => break true,
                // (An escape, `\;`, `\,`, `\:`, `\\` — escaped again in a JSON or a source
                // string, `\\;`: the separator after it is the value's too, review 68.)
                Some(b'\\') => {
                    end += b[end..limit]
                        .iter()
                        .take(8)
                        .take_while(|&&c| c == b'\\')
                        .count();
                    if matches!(b[..limit].get(end), Some(b';' | b',' | b':' | b'"' | b'\'')) {
                        end += 1;
                    }
                }
                // (The password's closing quote; another field's may be code's, `"WIFI:S:"
                // + ssid + ";T:WPA;P:hunter22;;"`, review 70.)
                Some(_) if password && closed.is_none() && closes(end) => break false,
                // (Another payload: `WIFI:` and a field's name — not an SSID's words,
                // `S:Cafe WIFI:Lobby;`, review 71.)
                Some(b'W')
                    if b[end..].starts_with(b"WIFI:") && wifi_field(&b[end + 5..]).is_some() =>
                {
                    return None;
                }
                // (Past the bound, no value: not cut inside a character, review 70's hunt.)
                None if end < b.len() => return None,
                Some(b'\n' | b'\r') | None => break false,
                Some(_) => end += 1,
            }
        };
        if !ended && (!password || field == 0) {
            return None;
        }
        // (The password the last field, after another, its `;;` left out, in no quotes:
        // to a blank, eight characters at least, as WPA's are — not a log's `P:ok (rssi
        // -40)`.)
        if !ended && opener.is_none() && closed.is_none() {
            end = from
                + b[from..end]
                    .iter()
                    .take_while(|c| !c.is_ascii_whitespace() && !b"'\"`<".contains(c))
                    .count();
            if end - from < 8 {
                return None;
            }
        }
        // (A first field only where another follows it: `WIFI:P:…;S:Home;;`.)
        let next = end + 1 + leading_blanks(&b[(end + 1).min(bound)..bound]);
        let more = b[next.min(bound)..bound]
            .first()
            .is_some_and(|c| c.is_ascii_uppercase() || *c == b';');
        if password && (field > 0 || (ended && more)) {
            let mut z = end;
            while z > from && matches!(b[z - 1], b' ' | b'\t') {
                z -= 1;
            }
            let (a, z) = match closed {
                Some(c) if c == z => (inner, z - quote.len()),
                _ => (from, z),
            };
            // (A template's, and redaction's own `[REDACTED_SECRET]`: redacting again must
            // find nothing; nor a placeholder or code that builds the payload, review 68.)
            let v = &b[a..z];
            let fills = v.len() < 5 || template(v) || masked(v) || wifi_placeholder(&b[from..end]);
            return (!fills).then_some((a, z));
        }
        if password {
            return None;
        }
        // (Empty fields between two, `S:Home;;T:WPA;…`: the payload's end, `;;`, where no
        // field's name follows.)
        at = end + 1;
        let empty = b[at..bound]
            .iter()
            .take(8)
            .take_while(|&&c| c == b';')
            .count();
        at += match empty {
            0 => leading_blanks(&b[at..bound]),
            _ => empty,
        };
    }
    None
}

/// The length of the field's name a Wi-Fi QR code's field starts `r` with, one to three
/// capitals or digits before its colon (see [`wifi_password`]).
fn wifi_field(r: &[u8]) -> Option<usize> {
    let name = r
        .iter()
        .take(4)
        .take_while(|c| c.is_ascii_uppercase() || c.is_ascii_digit())
        .count();
    ((1..=3).contains(&name) && r.get(name) == Some(&b':')).then_some(name)
}

/// Whether a Wi-Fi QR code's password field (`field`, as written: see [`wifi_password`])
/// holds none but a placeholder or the code that builds the payload (reviews 68, 69): docs'
/// `PASSWORD`, `your_password`, `null`, `None`; an expression between quotes, `" +
/// password + "`, `"+pw+"`, `".$pw."`, `" & pwd & "`; Swift's `\(password)`, Ruby's
/// `#{password}`, `%v`, `%3$s`, `\${password}`, a query's parameter (`@password`, not
/// `@sunshine`); quoted too (`P:"password";`). Not a password in capitals (`QWERTYUI`, a
/// router's default) nor one that starts with `your` (`Yourhome1!`).
fn wifi_placeholder(field: &[u8]) -> bool {
    const NONE: [&[u8]; 27] = [
        b"password",
        b"pass",
        b"passwd",
        b"pwd",
        b"pw",
        b"psk",
        b"secret",
        b"key",
        b"passphrase",
        b"presharedkey",
        b"wpapassphrase",
        b"wifipass",
        b"wifipassword",
        b"mypassword",
        b"yourpassword",
        b"yourpasswordhere",
        b"passwordhere",
        b"yourwifipassword",
        b"networkpassword",
        b"example",
        b"changeme",
        b"redacted",
        b"null",
        b"none",
        b"nil",
        b"undefined",
        b"false",
    ];
    let v = field.trim_ascii();
    // (Its quotes taken off for the list: `P:"password";`, review 70.)
    let unquoted = match v {
        [q @ (b'"' | b'\''), inner @ .., last] if last == q => inner,
        _ => v,
    };
    let listed = |w: &[u8]| {
        let word: Vec<u8> = w
            .iter()
            .filter(|c| !matches!(c, b'_' | b'-'))
            .map(u8::to_ascii_lowercase)
            .collect();
        NONE.iter().any(|n| word == *n)
    };
    // (A quote and an operator after it, or an operator and a quote after it: a string's
    // end or start in code, `" + pw + "`, `'+pw+` before the payload's closing quote.)
    let operator = |c: Option<&u8>| matches!(c, Some(b'+' | b'.' | b'&'));
    let quote = |c: Option<&u8>| matches!(c, Some(b'"' | b'\''));
    let expression = (quote(v.first()) && operator(v[1..].trim_ascii_start().first()))
        || (quote(v.last()) && operator(v[..v.len() - 1].trim_ascii_end().last()));
    // (Interpolations whole, not a password that holds their marks, `Wg45/R%dq!#{-oJ`,
    // review 70; a query's parameter named as a password is, `@password`, `@wifi_pass` —
    // not `@monkeyisland`.)
    listed(unquoted)
        || expression
        || (unquoted.starts_with(b"\\(") && unquoted.ends_with(b")"))
        || (unquoted.starts_with(b"#{") && unquoted.ends_with(b"}"))
        || (unquoted.len() <= 5 && unquoted.first() == Some(&b'%'))
        || unquoted.strip_prefix(b"\\").is_some_and(template)
        || unquoted.strip_prefix(b"@").is_some_and(listed)
}

/// Where the word after an item's number at `i` starts, if one stands there (see
/// [`seed_phrase`]): `1. `, `2) `, `3.`, `4: `, `5 - `, `5-`, `#6 `, `(7) `, `Word 8: `, a
/// table's `| 9 | `, `10 ` — one or two digits.
fn item_number(b: &[u8], i: usize) -> Option<usize> {
    let word = b
        .get(i..i + 5)
        .is_some_and(|w| w[..4].eq_ignore_ascii_case(b"word") && w[4] == b' ');
    let at = match b.get(i) {
        Some(b'#' | b'(') => i + 1,
        Some(b'|') => i + 1 + leading_blanks(&b[i + 1..]),
        _ if word => i + 5,
        _ => i,
    };
    let digits = b[at..]
        .iter()
        .take(3)
        .take_while(|c| c.is_ascii_digit())
        .count();
    if !(1..=2).contains(&digits) {
        return None;
    }
    let at = at + digits;
    let blanks = leading_blanks(&b[at..]);
    let end = match b.get(at) {
        Some(b'.' | b')' | b':' | b'-') => at + 1,
        _ => match b.get(at + blanks) {
            Some(b'-' | b'|') if blanks > 0 => at + blanks + 1,
            _ if blanks > 0 => at + blanks,
            _ => return None,
        },
    };
    Some(past_white(b, end, 8))
}

/// Whether a digit stands inside a word of `part`: after a letter, with a letter after it
/// (`mQ2vL7`, `Tr0ub`; not `Win10`, `500MHz`).
fn digit_inside(part: &[u8]) -> bool {
    part.windows(2).enumerate().any(|(k, w)| {
        w[0].is_ascii_alphabetic() && w[1].is_ascii_digit() && {
            part[k + 1..]
                .iter()
                .find(|c| !c.is_ascii_digit())
                .is_some_and(u8::is_ascii_alphabetic)
        }
    })
}

/// The symbols that make a value a password's where they stand in it, as [`marked_len`]
/// and [`account_and_password`] judge one (`P@ss`, `Sunflower2024!`).
const PASSWORD_MARKS: [u8; 8] = *b"!@#$%^*&";

/// The marks [`marked_len`] may read a value on past (a bracket's closer only inside it).
const OWN_MARKS: [u8; 8] = *b"&'([{;,\\";

/// The bytes [`marked_len`] stops at: ASCII white space, and the marks that end a bare
/// value or may.
const BLANKS_AND_MARKS: [bool; 256] = {
    let mut table = [false; 256];
    let bytes = b" \t\n\r\x0c\"'`\\)]};,<>&([{";
    let mut k = 0;
    while k < bytes.len() {
        table[bytes[k] as usize] = true;
        k += 1;
    }
    table
};

/// Whether a field named `key` (whole) is named for credentials: its last word is
/// `credentials` or `creds` — not glued to the word before, a class's name whose call takes
/// a password (`pika.PlainCredentials(user, …)`).
fn credentials_named(key: &[u8]) -> bool {
    credentials_word(key, last_words(key).0)
}

/// [`credentials_named`], given the name's last word (`last`, see [`last_words`]).
fn credentials_word(key: &[u8], last: &[u8]) -> bool {
    let glued = key
        .len()
        .checked_sub(last.len() + 1)
        .is_some_and(|i| key[i].is_ascii_alphanumeric());
    !glued && (last.eq_ignore_ascii_case(b"credentials") || last.eq_ignore_ascii_case(b"creds"))
}

/// The length of a password set apart after an account's name (`name`, read as a bare
/// value) by a slash with blanks (`after`: what follows the name; ` / Xk9…`, `/ Xk9…`, or
/// after `admin/`, ` Xk9…`), read as a bare value is (`bare_len`); `None` where no such
/// password follows. Or, after a Windows domain's name, where a bare value ends at its
/// `\`, the account and its password (`ACME` then `\svc_backup:Xk9…`; a JSON string's
/// `\\` too).
fn password_apart(name: &[u8], after: &[u8], bare_len: &impl Fn(&[u8]) -> usize) -> Option<usize> {
    let slashes = after.iter().take(2).take_while(|&&c| c == b'\\').count();
    if slashes > 0 {
        let account = after[slashes..]
            .iter()
            .take(64)
            .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'_' | b'-'))
            .count();
        let colon = slashes + account;
        let len = match after.get(colon) {
            Some(b':') if account > 0 => bare_len(&after[colon + 1..]),
            _ => 0,
        };
        return (len > 0).then_some(colon + 1 + len);
    }
    let before = leading_blanks(after);
    // (The slash glued to the name, `admin/ Xk9…`.)
    let glued = name.len() > 1 && name.ends_with(b"/");
    let at = match glued {
        true => before,
        false => {
            let slash = after
                .get(before)
                .filter(|&&c| c == b'/')
                .map(|_| before + 1)?;
            slash + leading_blanks(&after[slash..])
        }
    };
    // (A blank beside the slash: `admin/Xk9…` is one bare value.)
    let len = bare_len(&after[at..]);
    (at > usize::from(!glued) && len > 0).then_some(at + len)
}

/// How many blanks (spaces and tabs) `r` starts with, eight at most: between credentials'
/// account and password set apart, between a list's pairs, a SASL mechanism's and a mail
/// login's words.
fn leading_blanks(r: &[u8]) -> usize {
    r.iter()
        .take(8)
        .take_while(|&&c| c == b' ' || c == b'\t')
        .count()
}

/// Where a list of credentials' pairs (see [`account_and_password`]) that starts with one
/// `len` long ends in `rest` (a bare value's window, read as `bare_len` reads one): each
/// next item after a `,` or a `;` and blanks (`admin:Xk9…, guest:Hq7…`, `admin / Xk9…;
/// guest / Hq7…`; not a note's after blanks alone, `at:10:30am`, review 63), its password
/// with no `:` — eight at most, each ending inside the window (or at the text's end, where
/// the window ends with it: `whole`).
fn more_pairs(rest: &[u8], len: usize, whole: bool, bare_len: &impl Fn(&[u8]) -> usize) -> usize {
    let mut len = len;
    for _ in 0..8 {
        if !matches!(rest.get(len), Some(b',' | b';')) {
            break;
        }
        let at = len + 1 + leading_blanks(&rest[len + 1..]);
        let n = bare_len(&rest[at..]);
        let n = n + password_apart(&rest[at..at + n], &rest[at + n..], bare_len).unwrap_or(0);
        let item = std::str::from_utf8(&rest[at..at + n])
            .ok()
            .filter(|item| item.split_once(':').is_none_or(|(_, p)| !p.contains(':')));
        let cut = at + n >= rest.len() && !whole;
        if n == 0 || cut || !item.is_some_and(account_and_password) {
            break;
        }
        len = at + n;
    }
    len
}

/// Whether `v` is an account's name and its password, `user:password` (or set apart by a
/// slash with blanks, `user / password`: see [`password_apart`]; a password a person made
/// then needs two digits, and a symbol or small letters and capitals — reviews 58 to 60),
/// as credentials give them: a name of letters, digits, `.`, `_`, `-` (a letter in it;
/// not a scheme, `mailto:`, `gcp:`, nor a host, `192.168.1.10:22`, `db.internal:5432`),
/// after a Windows domain's name too (`ACME\svc_backup:…`, JSON-escaped `\\` too),
/// and a password of more than digits (not a port) made by a machine or a person
/// (`Xk9mQ2vL7pR`, `hunter22`; not `sa-key-2024`, `db-secret`, nor a variable interpolated,
/// `$(cat pw)`, `$DB_PASS`) — review 56.
fn account_and_password(v: &str) -> bool {
    const SCHEMES: [&str; 12] = [
        "mailto", "http", "https", "tel", "file", "s3", "gs", "arn", "vault", "env", "gcp", "k8s",
    ];
    // (The first slash with a blank beside it.)
    let slash = v.match_indices('/').map(|(i, _)| i).find(|&i| {
        matches!(v.as_bytes().get(i + 1), Some(b' ' | b'\t')) || v[..i].ends_with([' ', '\t'])
    });
    let split = match slash {
        Some(i) => Some((v[..i].trim_end(), v[i + 1..].trim_start(), true)),
        None => v.split_once(':').map(|(u, p)| (u, p, false)),
    };
    let Some((user, password, apart)) = split else {
        return false;
    };
    // (A Windows account after its domain's name, `ACME\svc_backup`: JSON-escaped too.)
    let user = match user.split_once('\\') {
        Some((domain, account))
            if !apart
                && !domain.is_empty()
                && domain
                    .bytes()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'_' | b'-')) =>
        {
            account.strip_prefix('\\').unwrap_or(account)
        }
        _ => user,
    };
    let (u, p) = (user.as_bytes(), password.as_bytes());
    // (Set apart, a password a person made has two digits or more, a symbol or both small
    // letters and capitals, and no version's `1.3`: `Sunflower2024!`, `Summer2024`; not
    // `dev / staging22`, `ubuntu / jammy22`, `DB / Redis7`, `jwt / mTLS1.3`, `RSA /
    // ECDSA-P256`, `user / tenant-42` — reviews 58 to 60.)
    let person = || {
        let digits = p.iter().filter(|c| c.is_ascii_digit()).count();
        let version = p
            .windows(3)
            .any(|w| w[0].is_ascii_digit() && w[1] == b'.' && w[2].is_ascii_digit());
        let cases = p.iter().any(u8::is_ascii_lowercase) && p.iter().any(u8::is_ascii_uppercase);
        person_made(p)
            && (!apart
                || (digits >= 2
                    && !version
                    && (cases || p.iter().any(|c| PASSWORD_MARKS.contains(c)))))
    };
    // (Set apart, not a path's or a unit's, `/home/user12`, `443/tcp`, nor a color's.)
    let other = apart && (p.contains(&b'/') || p.starts_with(b"#"));
    // (A shell's variable, `$DB_PASS` — not a password that starts with `$`, `$uperS3cret`,
    // review 60.)
    // (Or PowerShell's, `$env:PW`, review 62.)
    let variable = (p.len() > 5 && p[..5].eq_ignore_ascii_case(b"$env:"))
        || (p.len() > 1
            && p[0] == b'$'
            && p[1..]
                .iter()
                .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || *c == b'_'));
    !u.is_empty()
        && u.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'_' | b'-'))
        && u.iter().any(u8::is_ascii_alphabetic)
        && !SCHEMES.iter().any(|s| user.eq_ignore_ascii_case(s))
        && !p.iter().all(u8::is_ascii_digit)
        && !other
        // (Not a URL's host after a password, `user:pw@host`; set apart, `P@ssw0rd`'s.)
        && (apart || !p.contains(&b'@'))
        && !variable
        && !shell_interpolates(p)
        && (machine_made(p) || person())
}

/// Whether `v` is what electronics and manifests give under `pw` (a pulse's width, a
/// power, a page's width, a package): a number, alone or with its unit (`1500`, `1500us`,
/// `3.3V`, `450W`, `85kg`: review 57), a register's value (`0x1F`, `0b1010`) or a
/// version's range (`^1.44.0`, `~1.2`): review 55.
fn measured(v: &str) -> bool {
    const UNITS: [&str; 24] = [
        "us", "µs", "ns", "ms", "s", "v", "mv", "kv", "w", "mw", "kw", "a", "ma", "hz", "khz",
        "mhz", "ghz", "kg", "g", "db", "dbm", "%", "px", "mm",
    ];
    // (Its list's or its statement's separator after it, `pw=0x1F;`.)
    let v = v.trim_end_matches([';', ',']);
    let b = v.as_bytes();
    let digits = |d: &[u8], hex: bool| {
        !d.is_empty()
            && d.iter().all(|c| match hex {
                true => c.is_ascii_hexdigit(),
                false => matches!(c, b'0' | b'1'),
            })
    };
    // (A register's width at most: a longer one may be a key, `0xDEADBEEFCAFE1234`.)
    if let Some(d) = b.strip_prefix(b"0x").or(b.strip_prefix(b"0X")) {
        return d.len() <= 4 && digits(d, true);
    }
    if let Some(d) = b.strip_prefix(b"0b") {
        return d.len() <= 16 && digits(d, false);
    }
    if let [b'^' | b'~', rest @ ..] = b {
        return !rest.is_empty() && rest.iter().all(|c| c.is_ascii_digit() || *c == b'.');
    }
    unit_after_number(b, true).is_some_and(|unit| {
        unit.is_empty()
            || UNITS
                .iter()
                .any(|u| unit.eq_ignore_ascii_case(u.as_bytes()))
    })
}

/// What follows the number that opens `v` (its digits, and its dots where `decimals`),
/// past one `-` or `+` (`80bits`, `12-chars`, `3.3V`: `bits`, `chars`, `V`; empty where
/// the number is all of `v`); `None` where no number opens it. Read by [`person_made`],
/// [`no_secret_name`] and [`measured`].
fn unit_after_number(v: &[u8], decimals: bool) -> Option<&[u8]> {
    let number = v
        .iter()
        .take_while(|&&c| c.is_ascii_digit() || (decimals && c == b'.'))
        .count();
    let rest = &v[number..];
    (number > 0).then(|| {
        rest.strip_prefix(b"-")
            .or_else(|| rest.strip_prefix(b"+"))
            .unwrap_or(rest)
    })
}

/// Whether a value under a name that ends in `token` is too short to be one (`key`: the
/// name, whole): a token a service issues has eight characters or more, a token a
/// tokenizer logs a few (`{"token": "2024", "logprob": -0.1}`).
fn short_for_a_token(key: &[u8], value: &str) -> bool {
    value.len() < 8 && key.len() >= 5 && key[key.len() - 5..].eq_ignore_ascii_case(b"token")
}

/// A word of code: letters, digits and `_`.
fn ident(w: &[u8]) -> bool {
    !w.is_empty() && w.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'_')
}

/// Whether `v` interpolates a variable or a command after its start, as a shell does:
/// `${` and a name closed by `}` (`user:${PASSWORD}`, `${DB_PW:-x}` too), or `$(` and a
/// command's word, closed or cut off at the value's end by its blank (`app:$(cat`).
fn shell_interpolates(v: &[u8]) -> bool {
    memchr::memmem::find_iter(v, b"$").any(|i| match v.get(i + 1) {
        Some(b'{') => {
            let name = v[i + 2..]
                .iter()
                .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.'))
                .count();
            name > 0 && matches!(v.get(i + 2 + name), Some(b'}' | b':'))
        }
        Some(b'(') => {
            let word = v[i + 2..]
                .iter()
                .take_while(|c| c.is_ascii_lowercase() || matches!(c, b'_' | b'-'))
                .count();
            word > 0 && matches!(v.get(i + 2 + word), None | Some(b')' | b' '))
        }
        _ => false,
    })
}

/// A template a program fills in, as a field's value or a URL's password: `${…}`, `$(…)`, a
/// variable (`$DB_PASSWORD`, `$DB_PASSWORD_2` — not `$ecretPa55`, lower case and digits),
/// `{{ vault_pw }}`, `%s`, `%(pw)s`, `%PASSWORD%`, `<password>`, `(password)`, or a
/// placeholder in brackets (`[REDACTED]`).
fn template(v: &[u8]) -> bool {
    let variable = |w: &[u8]| {
        ident(w) && !(w.iter().any(u8::is_ascii_digit) && w.iter().any(u8::is_ascii_lowercase))
    };
    let (first, rest) = match v {
        [first, rest @ ..] if !rest.is_empty() => (*first, rest),
        _ => return false,
    };
    (first == b'$' && (matches!(rest[0], b'{' | b'(') || variable(rest)))
        || (first == b'{' && (v.ends_with(b"}") || rest[0] == b'{'))
        || (first == b'%' && (v.ends_with(b"%") || v.ends_with(b")s") || v == b"%s"))
        || (first == b'<' && v.ends_with(b">"))
        || (first == b'[' && v.ends_with(b"]"))
        || (first == b'(' && v.ends_with(b")") && ident(&v[1..v.len() - 1]))
}

/// A key shown shortened, as dashboards list them: its prefix (letters ending in `-` or
/// `_`, at most 16: `sk-`, `sk-proj-`, `ghp_`), an ellipsis (`...` or `…`), at most six
/// letters and digits (`sk-...1RQZ`). Nothing else: a password with an ellipsis in it
/// (`Pa55...word!`, `Hunter2...`) is no shortened key.
fn shortened(v: &[u8]) -> bool {
    let (head, tail) = match memchr::memmem::find(v, b"...") {
        Some(i) => (&v[..i], &v[i + 3..]),
        None => match memchr::memmem::find(v, "…".as_bytes()) {
            Some(i) => (&v[..i], &v[i + "…".len()..]),
            None => return false,
        },
    };
    (2..=16).contains(&head.len())
        && matches!(head[head.len() - 1], b'-' | b'_')
        && head
            .iter()
            .all(|c| c.is_ascii_alphabetic() || matches!(c, b'-' | b'_'))
        && (1..=6).contains(&tail.len())
        && tail.iter().all(u8::is_ascii_alphanumeric)
}

/// A mask: one character over and over (`****`), three masking characters before at most
/// four others (`****1234`), or a key shown shortened (see [`shortened`]).
fn masked(v: &[u8]) -> bool {
    let masking = |c: &u8| matches!(c, b'*' | b'x' | b'X' | b'#');
    v.iter().all(|&c| c == v[0])
        || (v.iter().take(3).all(masking) && v.iter().skip_while(|c| masking(c)).count() <= 4)
        || shortened(v)
}

/// Whether `c` belongs to a script whose words are written without blanks between them:
/// Chinese's, Japanese's kana, Korean's, Hindi's Devanagari — or is the punctuation of
/// Chinese's and Japanese's (`。`, `、`, `「`; the full-width forms fold to ASCII).
fn unspaced_script(c: char) -> bool {
    matches!(
        u32::from(c),
        0x0900..=0x097F
            | 0x3000..=0x30FF
            | 0x3400..=0x4DBF
            | 0x4E00..=0x9FFF
            | 0xAC00..=0xD7AF
            | 0xF900..=0xFAFF
            | 0xFF61..=0xFF9F
    )
}

/// How much of the bare value `r` (whole characters) is the value where characters of
/// [`unspaced_script`] stand in it: all of it where an ASCII letter or digit follows the
/// first of them (a password that holds one, `S3cr3t中Pw99`, review 45 — or words,
/// judged as a value is: see [`unspaced_prose`]); else what stands before them, the
/// sentence the value stands in glued after it (`password=S3cret9，谢谢`,
/// `パスワード：S3cret9を変更`, `비밀번호: S3cret9입니다`: review 44) — none where that
/// holds no letter, a quantity (`密码：6~20位字符`, `2024年更新`, `16桁`).
fn unspaced_cut(r: &[u8]) -> usize {
    if r.is_ascii() {
        return r.len();
    }
    let Ok(v) = std::str::from_utf8(r) else {
        return r.len();
    };
    let Some(at) = v
        .char_indices()
        .find(|&(_, c)| unspaced_script(c))
        .map(|(i, _)| i)
    else {
        return r.len();
    };
    if v[at..].bytes().any(|c| c.is_ascii_alphanumeric()) {
        return r.len();
    }
    match r[..at].iter().any(u8::is_ascii_alphabetic) {
        true => at,
        false => 0,
    }
}

/// Whether `v` holds characters of [`unspaced_script`] more than half as many as its ASCII
/// letters and digits: words, not a password (`至少8位`, `8文字以上の英数字`,
/// `2024年1月1日更新`; a password is written in ASCII but for a character or two,
/// `中S3cr3tPw99`, `Abc1中文`).
fn unspaced_prose(v: &str) -> bool {
    let (mut unspaced, mut ascii) = (0, 0);
    for c in v.chars() {
        if unspaced_script(c) {
            unspaced += 1;
        } else if c.is_ascii_alphanumeric() {
            ascii += 1;
        }
    }
    2 * unspaced > ascii
}

/// Whether a named field's value (`next`: the byte after a bare one) is a secret, not what
/// code, configuration and documentation put there. A secret has four characters or more,
/// no white space (prose: a label, an error message, a translation) nor a character of a
/// script written without it (`至少8位`: see [`unspaced_script`]), and a digit — or a
/// letter and a symbol (`P@ssword`) — so words, names and references are not one
/// (`Passwort`, `redis-secret`, `NPM_TOKEN`, `your-password-here`, `changeme`). Not one
/// either:
/// - a template or a reference: `${…}`, `$(…)`, `$DB_PASSWORD` (a variable without a digit),
///   `{{ vault_pw }}`, `%s`, `%(pw)s`, `%PASSWORD%`, `<password>`, a placeholder in brackets
///   (`[REDACTED]`, what redaction writes), a YAML tag, alias or anchor (`!vault`,
///   `*default`, `&anchor`), a path (`/run/secrets/db`, `~/.ssh/id_rsa`,
///   `C:\keys\pw.txt`), a URL, an ARN or a KMS key's alias;
/// - a mask: one character over and over, three masking characters before at most four
///   others (`****1234`), or a key shown shortened (`sk-...1RQZ`, see [`shortened`]);
/// - a word a schema, a type or a template says (`null`, `string`, `example`, `changeme`),
///   or an algorithm's name (`HS256`, `AES256`);
/// - in code, bare: a dotted path (`cfg.db.pw_2`, `process.env.API_KEY`), a call or an
///   index (`getpass()`), or a variable named for what it holds (`password=password2`).
fn secret_value(value: &str, quoted: bool, next: Option<u8>) -> bool {
    let v = value.as_bytes();
    if v.len() < 4 {
        return false;
    }
    // What the value's bytes are, read once (each candidate of a named field asks).
    const WHITE: u8 = 1;
    const DIGIT: u8 = 2;
    const ALPHA: u8 = 4;
    const SYMBOL: u8 = 8;
    const HIGH: u8 = 16;
    const CLASS: [u8; 256] = {
        let mut t = [0; 256];
        let mut c = 0;
        while c < 256 {
            let b = c as u8;
            t[c] = match b {
                // (What `char::is_whitespace` says of ASCII: tab to carriage return, and the
                // blank.)
                b'\t'..=b'\r' | b' ' => WHITE,
                b'0'..=b'9' => DIGIT,
                b'a'..=b'z' | b'A'..=b'Z' => ALPHA,
                _ if password_symbol(b) => SYMBOL,
                0x80.. => HIGH,
                _ => 0,
            };
            c += 1;
        }
        t
    };
    // A symbol counts after the first character and before a last `!` or `?` (`Summer!`).
    let body = v.len() - usize::from(matches!(v[v.len() - 1], b'!' | b'?'));
    let (mut all, mut inner) = (0, 0);
    for (i, &c) in v.iter().enumerate() {
        let class = CLASS[usize::from(c)];
        all |= class;
        if (1..body).contains(&i) {
            inner |= class;
        }
    }
    let white = match all & HIGH {
        0 => all & WHITE != 0,
        _ => value.chars().any(char::is_whitespace),
    };
    // (Words of a script written without blanks as many as half its letters and digits,
    // `至少8位`, `8文字以上`, `2024年更新`: a label's prose — a rule, not a password; found
    // by reviews 43 and 45. A bare value glued to such words ends before them: see
    // [`unspaced_cut`].)
    if white || (all & HIGH != 0 && unspaced_prose(value)) {
        return false;
    }
    // (A range of lengths, `8~16`, under a label: a rule.)
    if let Some((from, to)) = value.split_once('~')
        && [from, to]
            .iter()
            .all(|n| !n.is_empty() && n.bytes().all(|c| c.is_ascii_digit()))
    {
        return false;
    }
    let digit = all & DIGIT != 0;
    let symbol = inner & SYMBOL != 0;
    if !(digit || (symbol && all & ALPHA != 0)) {
        return false;
    }
    let lower = value.to_ascii_lowercase();
    let template = template(v)
        // A bind parameter (`:password_1`, `?`), a regular expression.
        || (matches!(v[0], b':' | b'?') && ident(&v[1..]))
        || (v[0] == b'^' && v.ends_with(b"$"))
        || (!quoted
            && matches!(v[0], b'!' | b'*' | b'&' | b'@')
            && v[1].is_ascii_alphabetic()
            && ident(&v[1..]))
        // (A path — not padded base64 that starts with a slash, a key: WireGuard's
        // `PresharedKey = /Uwc…ak=`.)
        || (v[0] == b'/' && !padded_base64(v))
        // A Windows path (`C:\Users\bob\src2`), a KMS key's alias.
        || (v[0].is_ascii_alphabetic() && v[1] == b':' && matches!(v.get(2), Some(b'\\' | b'/')))
        || v.starts_with(b"alias/")
        || v.starts_with(b"aws/")
        || v.starts_with(b"~/")
        || v.starts_with(b"./")
        || v.starts_with(b"../")
        || value.contains("://")
        || v.starts_with(b"arn:")
        || v.starts_with(b"env:")
        // A key file's or a digest's name.
        || v.starts_with(b"id_")
        || ["sha1:", "sha256:", "sha512:", "md5:"].iter().any(|p| lower.starts_with(p));
    let mask = masked(v);
    const SCHEMA: [&str; 44] = [
        "null",
        "none",
        "nil",
        "undefined",
        "true",
        "false",
        "required",
        "optional",
        "string",
        "str",
        "text",
        "bool",
        "boolean",
        "int",
        "integer",
        "number",
        "object",
        "hidden",
        // Algorithms a key's field names (`"signing_key": "HS256"`).
        "aes128",
        "aes192",
        "aes256",
        "aes-256-gcm",
        "hs256",
        "hs384",
        "hs512",
        "rs256",
        "rs384",
        "rs512",
        "es256",
        "es384",
        "ps256",
        "sha256",
        "sha512",
        "ed25519",
        // Password hashes a column or a field names, and tokenizers' encodings.
        "argon2id",
        "argon2i",
        "argon2d",
        "bcrypt",
        "scrypt",
        "pbkdf2",
        "cl100k_base",
        "o200k_base",
        "p50k_base",
        "r50k_base",
    ];
    // (`required`: a validation rule, `'required|string|min:8'`.)
    const PLACEHOLDERS: [&str; 11] = [
        "your",
        "example",
        "changeme",
        "change_me",
        "change-me",
        "placeholder",
        "redacted",
        "xxxx",
        "dummy",
        "sample",
        "required",
    ];
    let schema = SCHEMA.contains(&lower.as_str())
        || holds_any(&lower, &PLACEHOLDERS)
        || not_a_secret_shape(&lower, quoted);
    // A bare value in code: a dotted path, a call, an index, a variable named for a secret.
    let variable = !quoted
        && ((ident(v)
            && !v.iter().any(u8::is_ascii_uppercase)
            && v.iter().filter(|c| c.is_ascii_digit()).count() <= 2
            && holds_any(&lower, &["pass", "secret", "key", "token", "pwd"]))
            || matches!(next, Some(b'(' | b'['))
            || (v
                .iter()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'!' | b'?'))
                && v.windows(2)
                    .any(|w| w[0] == b'.' && w[1].is_ascii_alphabetic())
                // (a key with a dot: `pk.eyJ1…`, `hvs.CAES…` has a long part; a password
                // with an ellipsis, `Pa55...word!`, an empty one)
                && v.split(|&c| c == b'.').all(|part| (1..=16).contains(&part.len()))));
    !template && !mask && !schema && !variable
}

/// Whether `hay` holds any of `words` (each non-empty): one walk over it, each word
/// compared only where its first byte stands — not a substring search built for each word,
/// which cost a third of a scan of text made only of named values.
fn holds_any(hay: impl AsRef<[u8]>, words: &[&str]) -> bool {
    let hay = hay.as_ref();
    (0..hay.len()).any(|i| {
        words
            .iter()
            .any(|w| w.as_bytes()[0] == hay[i] && hay[i..].starts_with(w.as_bytes()))
    })
}

/// Shapes a field named for a secret holds that are no secret: a version (`v1.2.3`), a date,
/// a length with its unit (`1.5em`), a range (`8-128`), a count of a total (`12/12`), a
/// column type with its size (`varchar(255)`), a validation rule (`nullable|min:8`,
/// `min:8`), a Kubernetes object's name (`mysql-auth-v2`: words and a version), an
/// algorithm's name (see [`algorithm`]), and, bare, a type with a size (`u128`, `bytes32`,
/// `H256`, `Uint8Array`).
fn not_a_secret_shape(lower: &str, quoted: bool) -> bool {
    // (A statement's end, read into an `.env`-style value: `Password=1.5em;`.)
    let lower = lower.trim_end_matches([';', ',']);
    let v = lower.as_bytes();
    let digits = |w: &[u8]| !w.is_empty() && w.iter().all(u8::is_ascii_digit);
    let version = {
        let w = lower.strip_prefix('v').unwrap_or(lower);
        w.split('.').count() >= 2 && w.split('.').all(|p| digits(p.as_bytes()))
    };
    let date = v.len() >= 10
        && digits(&v[..4])
        && v[4] == b'-'
        && digits(&v[5..7])
        && v[7] == b'-'
        && digits(&v[8..10]);
    let unit = [
        "px", "em", "rem", "pt", "%", "ms", "s", "kb", "mb", "gb", "chars", "bit",
    ]
    .iter()
    .any(|u| {
        lower
            .strip_suffix(u)
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|c| c.is_ascii_digit() || c == b'.'))
    });
    let range = lower
        .split_once('-')
        .is_some_and(|(a, b)| digits(a.as_bytes()) && digits(b.as_bytes()));
    // A count of a total (`12/12`), a column type with its size (`varchar(255)`), a rule
    // with its number (`min:8`).
    let ratio = lower
        .split_once('/')
        .is_some_and(|(a, b)| digits(a.as_bytes()) && digits(b.as_bytes()));
    let sized = lower
        .strip_suffix(')')
        .and_then(|l| l.split_once('('))
        .is_some_and(|(t, n)| {
            !t.is_empty()
                && t.bytes().all(|c| c.is_ascii_lowercase())
                && n.split(',').all(|p| digits(p.trim().as_bytes()))
        });
    let numbered_rule = lower.split_once(':').is_some_and(|(w, n)| {
        !w.is_empty()
            && w.bytes().all(|c| c.is_ascii_lowercase() || c == b'_')
            && digits(n.as_bytes())
    });
    let rule = lower.contains('|')
        && lower.split('|').all(|part| {
            let (name, arg) = part.split_once(':').unwrap_or((part, "0"));
            !name.is_empty()
                && name.bytes().all(|c| c.is_ascii_lowercase() || c == b'_')
                && arg.bytes().all(|c| c.is_ascii_digit() || c == b',')
        });
    let object_name = {
        let parts: Vec<&str> = lower.split('-').collect();
        let (last, words) = parts.split_last().unwrap_or((&"", &[]));
        !words.is_empty()
            && words
                .iter()
                .all(|w| !w.is_empty() && w.bytes().all(|c| c.is_ascii_lowercase()))
            && {
                let n = last.strip_prefix('v').unwrap_or(last);
                (1..=3).contains(&n.len()) && digits(n.as_bytes())
            }
    };
    let sized_type = !quoted && {
        let w = lower.strip_suffix("array").unwrap_or(lower);
        let n = w.trim_start_matches(|c: char| c.is_ascii_alphabetic());
        let prefix = &w[..w.len() - n.len()];
        (1..=3).contains(&n.len())
            && digits(n.as_bytes())
            && [
                "u", "i", "f", "int", "uint", "bytes", "float", "h", "b", "hash",
            ]
            .contains(&prefix)
    };
    version
        || date
        || unit
        || range
        || ratio
        || sized
        || numbered_rule
        || rule
        || object_name
        || sized_type
        || algorithm(lower)
}

/// An algorithm's name, as a key's field may hold it (`"encryption_key": "AES-256-CBC"`,
/// `"signing_key": "ES256K"`): AES with its size and mode, a JWS algorithm, SHA (in an
/// HMAC too), ChaCha20-Poly1305, Ed25519 and the like (`lower`: in small letters).
fn algorithm(lower: &str) -> bool {
    fn sep(w: &str) -> &str {
        w.strip_prefix(['-', '_']).unwrap_or(w)
    }
    fn size<'a>(w: &'a str, sizes: &[&str]) -> Option<&'a str> {
        sizes.iter().find_map(|n| w.strip_prefix(n))
    }
    if let Some(rest) = lower.strip_prefix("aes") {
        return size(sep(rest), &["128", "192", "256"]).is_some_and(|mode| {
            mode.is_empty()
                || ["cbc", "gcm", "ctr", "ecb", "ofb", "cfb", "siv", "xts"].contains(&sep(mode))
        });
    }
    if let Some(rest) = ["hs", "rs", "es", "ps"]
        .iter()
        .find_map(|p| lower.strip_prefix(p))
    {
        return size(rest, &["256", "384", "512"]).is_some_and(|k| k.is_empty() || k == "k");
    }
    let sha = sep(lower.strip_prefix("hmac").unwrap_or(lower));
    if let Some(rest) = sha.strip_prefix("sha") {
        return size(sep(rest), &["1", "224", "256", "384", "512"])
            .is_some_and(|t| t.is_empty() || ["-224", "-256"].contains(&t));
    }
    [
        "chacha20-poly1305",
        "xchacha20-poly1305",
        "ed25519",
        "ed448",
        "x25519",
        "x448",
        "secp256k1",
        "p-256",
        "p-384",
    ]
    .contains(&lower)
}

/// The most bytes of a bearer token or basic credentials read (a token this long is
/// redacted whole; a longer run is not a token a server sends).
const AUTH_TOKEN_MAX: usize = 16 << 10;

/// The bearer token at `at` (after `Bearer `): its whole run of token characters (RFC
/// 6750's `b64token`, and `=` or `|` inside) and padding. A token holds a digit, or is at
/// least 32 characters of both cases (`Bearer YOUR_TOKEN`, `Bearer YourAccessTokenGoesHere`,
/// `bearer authentication` are words), and is not a placeholder: more than four distinct
/// letters and digits in all, and no placeholder word (`YOUR_TOKEN_HERE_1234`).
fn bearer_token(text: &str, at: usize) -> Option<(usize, usize)> {
    auth_token(text, at, 16)
}

/// [`bearer_token`] for a scheme whose tokens may be as short as `shortest` (`Token
/// 9f8e7d6c`).
fn auth_token(text: &str, at: usize, shortest: usize) -> Option<(usize, usize)> {
    let b = text.as_bytes();
    let token = |c: &u8| {
        c.is_ascii_alphanumeric()
            || matches!(c, b'-' | b'.' | b'_' | b'~' | b'+' | b'/' | b'=' | b'|')
    };
    let run = b[at..]
        .iter()
        .take(AUTH_TOKEN_MAX)
        .take_while(|c| token(c))
        .count();
    let t = &b[at..at + run];
    let alnum: Vec<u8> = t
        .iter()
        .copied()
        .filter(u8::is_ascii_alphanumeric)
        .collect();
    let digit = t.iter().any(u8::is_ascii_digit);
    let cases = t.iter().any(u8::is_ascii_uppercase) && t.iter().any(u8::is_ascii_lowercase);
    let lower = text[at..at + run].to_ascii_lowercase();
    let placeholder = holds_any(
        &lower,
        &[
            "your",
            "example",
            "placeholder",
            "redacted",
            "xxxx",
            "dummy",
        ],
    );
    (run >= shortest
        && (digit || (cases && run >= 32))
        && distinct_bytes(&alnum) > 4
        && !placeholder)
        .then_some((at, at + run))
}

/// Whether a header's token shorter than a bearer token's own trigger reads (16
/// characters) is a test's or a document's: no letter (`12345678`), or a word such
/// fixtures are made of (`token123`, `test-token-1`, `password1`, `fake_token_1`,
/// `invalid1`, `null1234`; `auth_token` refuses placeholders' words at any length) —
/// review 33 found them redacted in tests and `.http` files once a bearer token was read
/// from 8 characters.
fn fixture_token(token: &str) -> bool {
    const WORDS: [&str; 19] = [
        "test",
        "token",
        "secret",
        "pass",
        "demo",
        "sample",
        "fake",
        "mock",
        "valid",
        "expired",
        "null",
        "undefined",
        "change",
        "admin",
        "user",
        "bearer",
        "access",
        "abc",
        "my-",
    ];
    token.len() < 16
        && (!token.bytes().any(|c| c.is_ascii_alphabetic())
            || holds_any(token.to_ascii_lowercase(), &WORDS))
}

/// The basic credentials at `at` (after `Basic `): base64 (standard or URL-safe, padded or
/// not) that decodes to UTF-8 `user:password` — either side may be empty, not both (`curl -u
/// sk_live_…:` sends an empty password), a line break at its end allowed (`echo user:pw |
/// base64`), no other control character (so `basic understanding` is a phrase, not
/// credentials).
fn basic_credentials(text: &str, at: usize) -> Option<(usize, usize)> {
    let b = text.as_bytes();
    // (Glued to more base64, it is not these credentials.)
    let end = at + base64_token(&b[at..], true, AUTH_TOKEN_MAX)?;
    let decoded = base64_decode(&b[at..end])?;
    let plain = std::str::from_utf8(&decoded).ok()?;
    let plain = plain
        .strip_suffix('\n')
        .map_or(plain, |p| p.strip_suffix('\r').unwrap_or(p));
    let (user, password) = plain.split_once(':')?;
    let control = plain.chars().any(|c| c.is_control() && c != '\t');
    let empty = user.is_empty() && password.is_empty();
    (!empty && !control).then_some((at, end))
}

/// Whether `v` is standard base64 of 16 bytes or more with its padding (`=` at its end,
/// whole quads): a key's encoding, not a path, though it may start with `/`.
fn padded_base64(v: &[u8]) -> bool {
    let pad = v.iter().rev().take_while(|&&c| c == b'=').count();
    v.len() >= 24
        && v.len().is_multiple_of(4)
        && (1..=2).contains(&pad)
        && v[..v.len() - pad]
            .iter()
            .all(|&c| c.is_ascii_alphanumeric() || c == b'+' || c == b'/')
}

/// Whether basic credentials' base64 (`b64`, see [`basic_credentials`]) stores a login as
/// a tool keeps one under `auth`: a user name (no blank, no `/`, no `:`) and a password
/// with no blank, not only digits and colons (`12:34:56`), nor a placeholder
/// (`user:password`) — not any base64 that decodes to a colon (`Hello World: …`,
/// `http://…`, `{"alg":…}`).
fn stored_login(b64: &str) -> bool {
    let Some(plain) = base64_decode(b64.as_bytes()) else {
        return false;
    };
    let Some(colon) = memchr::memchr(b':', &plain) else {
        return false;
    };
    let (user, password) = (&plain[..colon], &plain[colon + 1..]);
    let blank = |s: &[u8]| {
        s.iter()
            .any(|c| c.is_ascii_whitespace() || c.is_ascii_control())
    };
    !user.is_empty()
        && !password.is_empty()
        && !blank(&plain)
        && !user.iter().any(|&c| matches!(c, b'/' | b'{' | b'"'))
        && !password.iter().all(|&c| c.is_ascii_digit() || c == b':')
        && std::str::from_utf8(password).is_ok_and(|p| !placeholder(p))
}

/// How far past `AUTH` (SMTP's, POP3's) a SASL login's password starts at most: the
/// server's replies and the client's lines between, a JSON log's too.
const SASL_REACH: usize = 1024;

/// The longest base64 token a `PLAIN` or `LOGIN` exchange's secret is read from (see
/// [`sasl_password`]): a user's name and a password, encoded.
const SASL_LOGIN_MAX: usize = 512;

/// The server's prompt for the password in a `LOGIN` exchange: `Password:` and
/// `password:` in base64.
const SASL_PROMPTS: [&[u8]; 2] = [b"UGFzc3dvcmQ6", b"cGFzc3dvcmQ6"];

/// The secret a SASL login sends after `AUTH` (`at`: just past the word), as a mail
/// client's or a server's debug output prints the session
/// (Python's `smtplib`, `swaks`, PHPMailer, Postfix's and Dovecot's logs):
/// - `PLAIN`: base64 of `[authzid]⧵0user⧵0password`, on its line (`AUTH PLAIN AGJvYgBo…`)
///   or a later one (after the server's `334`) — the whole base64, since the
///   user's name is inside it;
/// - `LOGIN`: the client's line after the server's `334 UGFzc3dvcmQ6` (`Password:`
///   encoded, or `password:`), its base64 decoding to the password;
/// - `XOAUTH2`, `OAUTHBEARER`: base64 that holds `auth=Bearer` and the token.
///
/// On a later line, the first token of four base64 characters or more that decodes so,
/// past what a log puts before it (`C: `, ` -> `, `send: '`, `CLIENT -> SERVER: `: a
/// token a `:` follows is a label, one that decodes to another text is passed over), each
/// run of base64 read once. Dovecot's request (`AUTH⇥1⇥PLAIN⇥…⇥resp=…`): its id passed
/// over, the token after `resp=` on its line read first. The secret starts within
/// [`SASL_REACH`] bytes and before the next `AUTH` (its own candidate); `None` for
/// anything else (`AUTH PLAIN` in prose, a mechanism without a password, base64 of
/// another text).
fn sasl_password(text: &str, at: usize) -> Option<(usize, usize)> {
    let b = text.as_bytes();
    let mut mech = at + leading_blanks(&b[at..]);
    // (Dovecot's auth protocol, as its debug log prints it: a request's id and a tab before
    // the mechanism, the response among the parameters after it, `AUTH⇥1⇥PLAIN⇥service=imap
    // ⇥…⇥resp=AGJvYgBo…`; its tabs copied from a terminal as blanks, review 79.)
    let id = b[mech..]
        .iter()
        .take(11)
        .take_while(|c| c.is_ascii_digit())
        .count();
    let after_id = leading_blanks(&b[mech + id..]);
    let dovecot = mech > at && (1..=10).contains(&id) && after_id > 0;
    if dovecot {
        mech += id + after_id;
    }
    let word = b[mech..]
        .iter()
        .take(12)
        .take_while(|c| c.is_ascii_alphanumeric())
        .count();
    if mech == at || !(5..=11).contains(&word) {
        return None;
    }
    let mechanism = &b[mech..mech + word];
    let is = |m: &[u8]| mechanism.eq_ignore_ascii_case(m);
    // (Up to the next `AUTH` command, its own candidate: a run of them is not read
    // [`SASL_REACH`] bytes from each; a token that starts before the reach may run past it.
    // Not a log's `[smtp-auth]`, `[mail.auth]`: a word `AUTH` and a blank, review 73.)
    let reach = b.len().min(mech + SASL_REACH);
    // (IMAP's `AUTHENTICATE` too: see [`mail_login`].)
    let next = memchr::memchr2_iter(b'A', b'a', &b[mech + word..reach])
        .map(|k| mech + word + k)
        .find(|&k| {
            let w = &b[k..];
            let name = match w.get(4..12) {
                Some(x) if x.eq_ignore_ascii_case(b"enticate") => 12,
                _ => 4,
            };
            w.get(..name + 1).is_some_and(|w| {
                w[..4].eq_ignore_ascii_case(b"auth") && matches!(w[name], b' ' | b'\t')
            }) && !b[k - 1].is_ascii_alphanumeric()
        });
    let (starts, window) = match next {
        Some(k) => (k - mech, &b[mech..k]),
        None => (reach - mech, &b[mech..b.len().min(reach + AUTH_TOKEN_MAX)]),
    };
    // (The longest token read: a login's are short, a bearer token's longer.)
    let bearer = is(b"XOAUTH2") || is(b"OAUTHBEARER");
    let longest = if bearer {
        AUTH_TOKEN_MAX
    } else {
        SASL_LOGIN_MAX
    };
    // The first token from `i` on (`window`'s offsets; on the lines after `i`'s where
    // `later`) whose decoding `accept` takes, and where it ends.
    let find = |mut i: usize, later: bool, accept: &dyn Fn(&[u8]) -> bool| {
        if later {
            i += memchr::memchr(b'\n', &window[i..starts.max(i)])? + 1;
        }
        while i < starts {
            if !base64_char(&window[i]) {
                if !later {
                    return None;
                }
                i += 1;
                continue;
            }
            let run = window[i..]
                .iter()
                .take_while(|c| base64_char(c) || **c == b'=')
                .count();
            let token = base64_token(&window[i..], false, longest).map(|n| i + n);
            if let Some(end) = token
                && (4..=longest).contains(&(end - i))
                && window.get(end) != Some(&b':')
                && base64_decode(&window[i..end]).is_some_and(|p| accept(&p))
            {
                return Some((mech + i, mech + end));
            }
            if !later {
                return None;
            }
            i += run;
        }
        None
    };
    let printable = |p: &[u8]| !p.is_empty() && !p.iter().any(|c| c.is_ascii_control());
    let text_of = |p: &[u8]| std::str::from_utf8(p).is_ok();
    let same_line = leading_blanks(&window[word..]);
    // (Dovecot's response on the request's line, a blank before its `resp=`; else, or
    // where it is empty, sent after it, `CONT⇥1⇥…`.)
    let line = memchr::memchr(b'\n', &window[word..starts]).map_or(starts, |k| word + k);
    let resp = dovecot
        .then(|| {
            memchr::memmem::find_iter(&window[word..line], b"resp=")
                .map(|k| word + k)
                .find(|&k| matches!(window[k - 1], b'\t' | b' '))
        })
        .flatten()
        .map(|k| k + "resp=".len())
        .filter(|&k| window.get(k).is_some_and(base64_char));
    let here_or_later = |accept: &dyn Fn(&[u8]) -> bool| match resp {
        Some(k) => find(k, false, accept),
        None => (same_line > 0)
            .then(|| find(word + same_line, false, accept))
            .flatten()
            .or_else(|| find(word, true, accept)),
    };
    if is(b"PLAIN") {
        // `[authzid]⧵0user⧵0password`: two NULs, a user's name and a password (not a
        // placeholder's, `password`, review 73).
        here_or_later(&|p: &[u8]| {
            let mut parts = p.split(|&c| c == 0);
            let (_, user, password) = (parts.next(), parts.next(), parts.next());
            text_of(p)
                && parts.next().is_none()
                && user.is_some_and(printable)
                && password.is_some_and(|w| printable(w) && !placeholder_bytes(w))
        })
    } else if is(b"LOGIN") {
        // (Both prompts' common tail, searched once: `…Fzc3dvcmQ6`.)
        static PROMPT: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
            std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b"Fzc3dvcmQ6"));
        let mut from = 0;
        let prompt = loop {
            let k = from + PROMPT.find(&window[from..starts])?;
            if k >= 2 && SASL_PROMPTS.contains(&&window[k - 2..k + 10]) {
                break k - 2;
            }
            from = k + 1;
        };
        // (Not the prompt again, a log printing the server's reply twice: `reply: b'334
        // …'`, `Msg: b'…'`; not a placeholder, `password`, review 73.)
        find(prompt, true, &|p: &[u8]| {
            text_of(p)
                && printable(p)
                && !p.eq_ignore_ascii_case(b"password:")
                && !placeholder_bytes(p)
        })
    } else if bearer {
        here_or_later(&|p: &[u8]| memchr::memmem::find(p, b"auth=Bearer ").is_some())
    } else {
        None
    }
}

/// The most bytes [`base32_groups`] reads.
const BASE32_GROUPS_MAX: usize = 16 * 5;

/// The length of a base32 key written in groups of four at `v`'s start, as authenticator
/// apps show a one-time password's key to be typed (`JBSW Y3DP EHPK 3PXP`, `jbsw y3dp
/// ehpk 3pxp`): four groups or more (16 characters, the shortest key Google Authenticator
/// shows) set apart by one blank, in one case, a digit among them (`2` to `7`), at most
/// half of them read as words (a vowel among four letters: `THIS WILL …` is prose), more
/// distinct characters than twice the groups (not `AAAA BBBB CCCC 2222`) and the last not
/// glued to more letters, digits or a dash. `None` for anything else.
fn base32_groups(v: &[u8]) -> Option<usize> {
    // (Its case its first letter's: a key may start with a digit, `7NHZ 3UPW …`, review
    // 72.)
    let upper = v
        .iter()
        .take(BASE32_GROUPS_MAX)
        .find(|c| c.is_ascii_alphabetic())?
        .is_ascii_uppercase();
    let in_case = |c: u8| match upper {
        true => c.is_ascii_uppercase() || (b'2'..=b'7').contains(&c),
        false => c.is_ascii_lowercase() || (b'2'..=b'7').contains(&c),
    };
    let (mut groups, mut words, mut digit, mut i) = (0usize, 0usize, false, 0);
    while i + 4 <= v.len() && v[i..i + 4].iter().all(|&c| in_case(c)) {
        let group = &v[i..i + 4];
        digit |= group.iter().any(u8::is_ascii_digit);
        words += usize::from(
            group.iter().all(u8::is_ascii_alphabetic)
                && group.iter().any(|c| b"aeiouyAEIOUY".contains(c)),
        );
        groups += 1;
        i += 4;
        match (v.get(i), v.get(i + 1)) {
            (Some(b' '), Some(&c)) if in_case(c) => i += 1,
            _ => break,
        }
    }
    let glued = v
        .get(i)
        .is_some_and(|&c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_');
    // (Not a placeholder's few characters, `AAAA BBBB CCCC 2222`, review 72, nor the
    // alphabet's and the digits' runs, `ABCD 2345 EFGH 6723`, review 73.)
    let distinct = distinct_bytes(&v[..i]) > groups * 2 && !in_a_row(&v[..i]);
    (groups >= 4 && digit && words * 2 <= groups && distinct && !glued).then_some(i)
}

/// Whether `c` is a character of standard base64 (its padding apart).
fn base64_char(c: &u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'+' | b'/')
}

/// The length of the base64 token that starts `b` (`max` of its characters at most,
/// standard or, where `url_safe`, URL-safe too, then up to two `=`), where no other such
/// character is glued after it.
fn base64_token(b: &[u8], url_safe: bool, max: usize) -> Option<usize> {
    let base64 = |c: &u8| base64_char(c) || (url_safe && matches!(c, b'_' | b'-'));
    let run = b.iter().take(max).take_while(|c| base64(c)).count();
    let pad = b[run..].iter().take(2).take_while(|&&c| c == b'=').count();
    let glued = b.get(run + pad).is_some_and(|c| base64(c) || *c == b'=');
    (!glued).then_some(run + pad)
}

/// Base64, standard or URL-safe, with its padding or without (`None` when `b` is not that).
fn base64_decode(b: &[u8]) -> Option<Vec<u8>> {
    let pad = b.iter().rev().take_while(|&&c| c == b'=').count();
    let body = &b[..b.len() - pad];
    // Padded to whole quads, or unpadded; a lone sixth of a byte is no encoding.
    if body.is_empty() || pad > 2 || (pad > 0 && !b.len().is_multiple_of(4)) || body.len() % 4 == 1
    {
        return None;
    }
    let value = |c: u8| -> Option<u32> {
        Some(u32::from(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' | b'-' => 62,
            b'/' | b'_' => 63,
            _ => return None,
        }))
    };
    let mut out = Vec::with_capacity(body.len() / 4 * 3 + 2);
    for quad in body.chunks(4) {
        let mut n = 0u32;
        for i in 0..4 {
            n = (n << 6) | quad.get(i).map_or(Some(0), |&c| value(c))?;
        }
        let bytes = [(n >> 16) as u8, (n >> 8) as u8, n as u8];
        out.extend_from_slice(&bytes[..quad.len() - 1]);
    }
    Some(out)
}

/// The runs of ASCII letters and digits in `b`. With [`distinct_bytes`] and
/// [`digit_or_capital`], what `validate_secret` reads a token's key by — and what
/// `run_token_reach` reads a run by to tell that every token in it fails the same way.
pub(super) fn alnum_runs(b: &[u8]) -> impl Iterator<Item = &[u8]> {
    b.split(|c| !c.is_ascii_alphanumeric())
}

/// How many distinct bytes `run` (ASCII) holds.
pub(super) fn distinct_bytes(run: &[u8]) -> usize {
    let mut seen = [false; 128];
    run.iter()
        .filter(|&&c| !std::mem::replace(&mut seen[usize::from(c & 0x7F)], true))
        .count()
}

/// True when `b` holds a digit or a capital letter.
pub(super) fn digit_or_capital(b: &[u8]) -> bool {
    b.iter()
        .any(|c| c.is_ascii_digit() || c.is_ascii_uppercase())
}

/// The end of a secret whose pattern ends in a capped run of key characters (`sk-…`,
/// `xox?-…`, `xapp-…`, `glpat-…` and the other GitLab tokens, `AIza…`, `SG.…`, a Slack
/// webhook's path, the capped ones of `patterns::prefixed_tokens`): when a key character
/// follows the match `..e` (the class holds them all, so the cap cut it — on a letter, a
/// digit, a dash or an underscore; for a token in base64 a `+`, a `/` or an `=` too), the
/// whole run is the secret, not a prefix of it to cut and leave the rest behind; otherwise
/// `end`.
fn past_the_cap(text: &str, end: usize, e: usize, m: &str) -> usize {
    // (Tokens in base64, whose runs hold `+`, `/` and `=` too; Atlassian's holds `=`.)
    const BASE64: [&str; 4] = ["glc_", "ops_", "whsec_", "sntry"];
    let capped = [
        "sk-",
        "xox",
        "xapp-",
        "gl",
        "AIza",
        "SG.",
        "http",
        "hv",
        "ya29.",
        "pypi-",
        "dckr_",
        "ATATT3",
        "sb_secret_",
        "NRII-",
    ];
    let base64 = BASE64.iter().any(|p| m.starts_with(p));
    if !base64 && !capped.iter().any(|p| m.starts_with(p)) {
        return end;
    }
    let slash = m.starts_with("http");
    let equals = base64 || m.starts_with("ATATT3");
    // (A Google access token's dots: a service account's `ya29.c.…`.)
    let dot = m.starts_with("ya29.");
    let key = |c: &u8| {
        c.is_ascii_alphanumeric()
            || matches!(c, b'-' | b'_')
            || ((slash || base64) && *c == b'/')
            || (base64 && *c == b'+')
            || (equals && *c == b'=')
            || (dot && *c == b'.')
    };
    let b = text.as_bytes();
    if !b.get(e).is_some_and(key) {
        return end;
    }
    let mut end = e + b[e..].iter().take_while(|c| key(c)).count();
    while b[end - 1] == b'-' {
        end -= 1;
    }
    end
}

/// Where a block of base64 that runs on at `e` ends: its characters (and `=`), then each
/// next line that holds only them (after its indentation: a YAML block, `base64`'s
/// 76-column lines, `openssl base64`'s 64), the line breaks as written or JSON-escaped —
/// not a next line that holds anything else (the next field's `key:`). At most 64 KiB.
fn base64_block_end(b: &[u8], e: usize) -> usize {
    let limit = b.len().min(e.saturating_add(64 << 10));
    let key = |c: u8| c.is_ascii_alphanumeric() || matches!(c, b'+' | b'/' | b'=');
    let mut end = e;
    while end < limit && key(b[end]) {
        end += 1;
    }
    loop {
        // The line break: `\n`, `\r\n`, or JSON's `\n`.
        let mut i = end;
        if b.get(i) == Some(&b'\r') {
            i += 1;
        }
        if b.get(i) == Some(&b'\n') {
            i += 1;
        } else if b.get(i..i + 2) == Some(b"\\n") {
            i += 2;
        } else {
            return end;
        }
        while i < limit && matches!(b[i], b' ' | b'\t') {
            i += 1;
        }
        let first = i;
        while i < limit && key(b[i]) {
            i += 1;
        }
        let ends_line = i >= b.len()
            || matches!(b[i], b'\n' | b'\r' | b'"' | b'\'')
            || b[i..].starts_with(b"\\n");
        if i == first || !ends_line || i >= limit {
            return end;
        }
        end = i;
    }
}

pub(super) fn validate_aws_border(
    text: &str,
    s: usize,
    e: usize,
    _: &Freed,
) -> Option<(usize, usize)> {
    let key = |c: char| c.is_ascii_alphanumeric() || c == '/' || c == '+';
    let m = &text[s..e];
    let from = m.char_indices().find(|&(_, c)| key(c)).map(|(i, _)| i)?;
    let start = s + from;
    let end = start + 40;
    if end > e || !text.is_char_boundary(end) {
        return None;
    }
    validate_aws_secret(text, start, end, &Freed::default())
}

pub(super) fn validate_aws_secret(
    text: &str,
    s: usize,
    e: usize,
    _: &Freed,
) -> Option<(usize, usize)> {
    let key_char =
        |b: Option<u8>| b.is_some_and(|b| b.is_ascii_alphanumeric() || b == b'/' || b == b'+');
    if key_char(byte_before(text, s))
        || key_char(byte_at(text, e))
        || byte_at(text, e) == Some(b'=')
    {
        return None;
    }
    let m = &text[s..e];
    // Mixed case and a digit: not a word, a path or a hex hash.
    let has = |f: fn(&u8) -> bool| m.as_bytes().iter().any(f);
    if !(has(u8::is_ascii_lowercase) && has(u8::is_ascii_uppercase) && has(u8::is_ascii_digit)) {
        return None;
    }
    let from = s.saturating_sub(48);
    let from = (from..s).find(|&i| text.is_char_boundary(i)).unwrap_or(s);
    let before = text[from..s].to_ascii_lowercase();
    let keyed = [
        "secret_access_key",
        "secretaccesskey",
        "secret access key",
        "aws_secret",
        "secret_key",
        "secret-access-key",
    ]
    .iter()
    .any(|k| before.contains(k));
    keyed.then_some((s, e))
}

pub(super) fn validate_email(text: &str, s: usize, e: usize, _: &Freed) -> Option<(usize, usize)> {
    email_verdict(text, s, e).ok()
}

/// Why an address failed [`validate_email`]: what a failed candidate's reach reads (see
/// `email_reach`), kept so that it need not read the domain again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum EmailFailure {
    /// On its domain (or no `@`): every start before the same `@` fails too.
    Domain,
    /// On its local part, its domain passing: later starts before the `@` may pass.
    Local,
}

/// [`validate_email`], saying what failed.
pub(super) fn email_verdict(
    text: &str,
    s: usize,
    e: usize,
) -> Result<(usize, usize), EmailFailure> {
    let (at, at_len) = email_at(&text[s..e]).ok_or(EmailFailure::Domain)?;
    let (at, domain) = (s + at, s + at + at_len);
    // The domain first: in a run of failing addresses (`a@b.a@b.…`) it is what fails.
    let end = email_domain_end(text, domain, e).ok_or(EmailFailure::Domain)?;
    email_local_start(text, s, at)
        .map(|start| (start, end))
        .ok_or(EmailFailure::Local)
}

/// Where an address's domain (`text[domain..e]`, as matched) ends: at `e` when it passes the
/// domain's checks ([`email_domain_ok`]); otherwise at the end of its longest run of labels
/// (two or more, the last one letters) that does — a sentence glued on after a full stop
/// (`jane@example.com.I will…`) is not the domain's last label — or nowhere.
pub(super) fn email_domain_end(text: &str, domain: usize, e: usize) -> Option<usize> {
    if email_domain_ok(text, &text[domain..e], e) {
        return Some(e);
    }
    // Shorter runs end at one of the last ten dots (the last first), their last label
    // starting after the dot before it. One walk back over the domain finds both (a domain
    // is short: a plain loop costs less than a search's set-up, and a run of failing
    // addresses asks this for every `@`).
    let b = &text.as_bytes()[domain..e];
    let (mut later, mut tried) = (None, 0);
    for j in (0..b.len()).rev().filter(|&j| b[j] == b'.') {
        if let Some(i) = later {
            let tld = &text[domain + j + 1..domain + i];
            let letters = tld.bytes().all(|c| c.is_ascii_alphabetic())
                || tld.starts_with("xn--")
                || !tld.is_ascii();
            if letters && email_domain_ok(text, &text[domain..domain + i], domain + i) {
                return Some(domain + i);
            }
            tried += 1;
            if tried == 10 {
                return None;
            }
        }
        later = Some(j);
    }
    None
}

/// The country-code top-level domains (two letters each, lowercase, space-separated).
const COUNTRY_TLDS: &[u8] =
    b"ac ad ae af ag ai al am ao aq ar as at au aw ax az ba bb bd be bf bg \
bh bi bj bm bn bo br bs bt bw by bz ca cc cd cf cg ch ci ck cl cm cn co cr cu cv cw cx cy cz de dj \
dk dm do dz ec ee eg er es et eu fi fj fk fm fo fr ga gd ge gf gg gh gi gl gm gn gp gq gr gs gt gu \
gw gy hk hm hn hr ht hu id ie il im in io iq ir is it je jm jo jp ke kg kh ki km kn kp kr kw ky kz \
la lb lc li lk lr ls lt lu lv ly ma mc md me mg mh mk ml mm mn mo mp mq mr ms mt mu mv mw mx my mz \
na nc ne nf ng ni nl no np nr nu nz om pa pe pf pg ph pk pl pm pn pr ps pt pw py qa re ro rs ru rw \
sa sb sc sd se sg sh si sj sk sl sm sn so sr ss st su sv sx sy sz tc td tf tg th tj tk tl tm tn to \
tr tt tv tw tz ua ug uk us uy uz va vc ve vg vi vn vu wf ws ye yt za zm zw";

/// [`COUNTRY_TLDS`] as a bit per second letter, for each first letter.
const COUNTRY_TLD_BITS: [u32; 26] = {
    let mut bits = [0u32; 26];
    let mut i = 0;
    while i + 1 < COUNTRY_TLDS.len() {
        bits[(COUNTRY_TLDS[i] - b'a') as usize] |= 1 << (COUNTRY_TLDS[i + 1] - b'a');
        i += 3;
    }
    bits
};

/// Whether `label` (ASCII letters) is a top-level domain addresses are known to end with: a
/// country's, or one of the 40 generic ones most addresses use. Asked only where an
/// address's end is a guess (its last label's letters glued to a number, see
/// `PiiDetector::email_glued`): a hostname (`root@db.worker0001`) or a matrix product in
/// code (`h@self.fc1234`) is not taken for one.
pub(super) fn known_tld(label: &str) -> bool {
    match label.as_bytes() {
        [a, b] => {
            let (a, b) = (a.to_ascii_lowercase(), b.to_ascii_lowercase());
            a.is_ascii_lowercase()
                && b.is_ascii_lowercase()
                && COUNTRY_TLD_BITS[usize::from(a - b'a')] & 1 << (b - b'a') != 0
        }
        b if b.len() <= 9 => {
            let mut lower = [0u8; 9];
            lower[..b.len()].copy_from_slice(b);
            lower.make_ascii_lowercase();
            matches!(
                &lower[..b.len()],
                b"com"
                    | b"net"
                    | b"org"
                    | b"edu"
                    | b"gov"
                    | b"mil"
                    | b"int"
                    | b"info"
                    | b"biz"
                    | b"pro"
                    | b"aero"
                    | b"coop"
                    | b"museum"
                    | b"travel"
                    | b"jobs"
                    | b"mobi"
                    | b"asia"
                    | b"tel"
                    | b"app"
                    | b"dev"
                    | b"cloud"
                    | b"tech"
                    | b"online"
                    | b"site"
                    | b"shop"
                    | b"store"
                    | b"xyz"
                    | b"top"
                    | b"club"
                    | b"email"
                    | b"company"
                    | b"digital"
                    | b"agency"
                    | b"studio"
                    | b"media"
                    | b"network"
                    | b"solutions"
                    | b"services"
                    | b"group"
                    | b"global"
            )
        }
        _ => false,
    }
}

/// Whether a character belongs to the Latin (or Greek, Cyrillic) scripts, for cutting an
/// address off text in another script it is glued to.
fn latinish(c: char) -> bool {
    (c as u32) < 0x0530 || (0x1E00..0x2000).contains(&(c as u32))
}

/// Where the address starts when its candidate starts at `s` and its `@` is at `at` (every
/// byte between is a local-part character), or `None` when that local part is no local part.
///
/// [`email_local_skip`] answers the same question for every later start at once; the two
/// must agree (tested against each other and against a detector without the skip).
pub(super) fn email_local_start(text: &str, s: usize, at: usize) -> Option<usize> {
    let b = text.as_bytes();
    // A local part that ends with a dot fails from every start (asked first: it is what
    // fails in a run of failing addresses).
    if at <= s || b[at - 1] == b'.' {
        return None;
    }
    let mut lead = s;
    while lead < at && b[lead] == b'.' {
        lead += 1;
    }
    // `\u003cjane@…` in JSON: the escape is not part of the address.
    if byte_before(text, lead) == Some(b'\\')
        && at - lead > 5
        && text[lead..at].starts_with("u00")
        && b[lead + 3..lead + 5].iter().all(u8::is_ascii_hexdigit)
    {
        lead += 5;
    }
    // An address in Latin (or Greek, Cyrillic) script glued to text in another script: the
    // address starts after that text (`请联系zoe@…` → `zoe@…`).
    let local_part = &text[lead..at];
    if local_part
        .chars()
        .any(|c| c.is_alphanumeric() && latinish(c))
        && let Some((i, c)) = local_part.char_indices().rev().find(|&(_, c)| !latinish(c))
    {
        lead += i + c.len_utf8();
    }
    // At most 64 characters: a longer run keeps its last 64.
    if let Some((i, _)) = text[lead..at].char_indices().rev().nth(63) {
        lead += i;
        while lead < at && b[lead] == b'.' {
            lead += 1;
        }
    }
    // A quote around an address is not part of it (`'jane@x.com'`), one inside is
    // (`o'brien@x.com`).
    while lead < at && b[lead] == b'\'' {
        lead += 1;
    }
    if lead >= at {
        return None;
    }
    let local = &text[lead..at];
    if local.starts_with('.') || local.ends_with('.') || local.contains("..") {
        return None;
    }
    Some(lead)
}

/// After the candidate at `s` failed, the first later start before the same `@` (at `at`)
/// whose local part [`email_local_start`] would take, or `at` when there is none: every
/// start between shares the `@` and the domain and fails on its local part, so the scan
/// need not read the address again from each of them (`aaaa…..a@b.co` read each byte some
/// 400 times).
///
/// One pass over the run, then a few comparisons per start: a later start differs from `s`
/// only in where its leading dots end; the rest (the last `..`, the last character of
/// another script and of a Latin letter or digit, where the last 64 characters begin) is
/// the same for all of them.
pub(super) fn email_local_skip(text: &str, s: usize, at: usize) -> usize {
    let b = text.as_bytes();
    if at <= s || b[at - 1] == b'.' {
        return at;
    }
    let run = &text[s..at];
    let last_double_dot = run.rfind("..").map(|i| s + i);
    let last_latin_alnum = run
        .char_indices()
        .rev()
        .find(|&(_, c)| c.is_alphanumeric() && latinish(c))
        .map(|(i, _)| s + i);
    let last_other_script = run
        .char_indices()
        .rev()
        .find(|&(_, c)| !latinish(c))
        .map(|(i, c)| (s + i, s + i + c.len_utf8()));
    let last_64 = run.char_indices().rev().nth(63).map(|(i, _)| s + i);
    let skip = |mut i: usize, byte: u8| {
        while i < at && b[i] == byte {
            i += 1;
        }
        i
    };
    let mut undotted = s;
    for (i, _) in run.char_indices().skip(1) {
        let from = s + i;
        // Leading dots are trimmed (dots are ASCII: `undotted` stays on a boundary).
        undotted = skip(undotted.max(from), b'.');
        if undotted >= at {
            return at;
        }
        let mut lead = undotted;
        if let (Some(latin), Some((other, past))) = (last_latin_alnum, last_other_script)
            && latin >= lead
            && other >= lead
        {
            lead = past;
        }
        if let Some(t) = last_64
            && lead <= t
        {
            lead = skip(t, b'.');
        }
        lead = skip(lead, b'\'');
        if lead < at && b[lead] != b'.' && last_double_dot.is_none_or(|d| d < lead) {
            return from;
        }
    }
    at
}

/// Whether `c` is a letter, a mark or a digit in Unicode's sense (`[\p{L}\p{M}\p{N}]`, the
/// non-ASCII part of the e-mail classes): read with the regex engine's own Unicode tables
/// (a fully built DFA for the one class, built the first time it is asked, ~3 ms), so the hand
/// reading below and the patterns cannot disagree on a character.
pub(super) fn letter_mark_or_digit(c: char) -> bool {
    use regex_automata::dfa::{Automaton, dense};
    static DFA: OnceLock<Option<dense::DFA<Vec<u32>>>> = OnceLock::new();
    let Some(dfa) = DFA
        .get_or_init(|| {
            dense::Builder::new()
                .configure(
                    dense::Config::new()
                        .start_kind(regex_automata::dfa::StartKind::Anchored)
                        .minimize(false),
                )
                .build(r"[\p{L}\p{M}\p{N}]")
                .ok()
        })
        .as_ref()
    else {
        // It always builds (a fixed pattern; `the_hand_read_email_trigger_agrees_with_the_regex`
        // checks it against the regex on every character up to U+FFFF, which this fallback
        // would fail on marks).
        return c.is_alphanumeric();
    };
    let Ok(mut state) = dfa.start_state(
        &regex_automata::util::start::Config::new().anchored(regex_automata::Anchored::Yes),
    ) else {
        return c.is_alphanumeric();
    };
    for &byte in c.encode_utf8(&mut [0; 4]).as_bytes() {
        state = dfa.next_state(state, byte);
    }
    dfa.is_match_state(dfa.next_eoi_state(state))
}

/// The e-mail trigger's first match (`local+@label+\.`, leftmost-first, see `specs`) in
/// `text[from..to]`, read by hand: its start and end, or `None` when there is none.
///
/// The regex engine searches a run of failing addresses (`a@b.a@b.…`) from each `@` again
/// at some 700 instructions a time; this reads each `@`'s neighbourhood once:
/// - a local part holds no `@`, so a match ends its local part at the first `@` after its
///   start, and no start before one `@` reaches a later one;
/// - the starts whose `local+` reaches an `@` are the positions back to the first character
///   that is neither a local character nor the `%` of an escape (an escape's two hex digits
///   are local characters on their own, so no such character is inside an escape): the
///   leftmost is the start, clipped at `from`;
/// - `label+` is greedy and a label character is not a `.`: the match ends after the label
///   run that follows the `@`, and its `.`, or this `@` has no match from any start.
///
/// Tested against the regex on generated texts (`the_hand_read_email_trigger_agrees_with_the_regex`).
pub(super) fn email_trigger_at(
    text: &str,
    from: usize,
    to: usize,
    _: &Freed,
    _: Option<&MetaRegex>,
) -> Option<(usize, usize)> {
    let b = text.as_bytes();
    let mut after = from;
    while let Some(i) = memchr::memchr(b'@', &b[after..to]).map(|i| after + i) {
        // Back over the local part.
        let mut s = i;
        while s > after {
            let c = b[s - 1];
            if c >= 0x80 {
                match text[after..s].chars().next_back() {
                    Some(ch) if letter_mark_or_digit(ch) => {
                        s -= ch.len_utf8();
                        continue;
                    }
                    _ => break,
                }
            }
            let escape = c == b'%'
                && s + 1 < i
                && (matches!(b[s], b'0'..=b'3' | b'5'..=b'9' | b'A'..=b'F' | b'a'..=b'f')
                    && b[s + 1].is_ascii_hexdigit()
                    || b[s] == b'4' && matches!(b[s + 1], b'1'..=b'9' | b'A'..=b'F' | b'a'..=b'f'));
            if !(c.is_ascii_alphanumeric()
                || matches!(c, b'.' | b'_' | b'+' | b'\'' | b'-')
                || escape)
            {
                break;
            }
            s -= 1;
        }
        // Forward over the first label.
        let mut e = i + 1;
        while e < to {
            let c = b[e];
            if c.is_ascii_alphanumeric() || c == b'-' {
                e += 1;
            } else if c >= 0x80
                && let Some(ch) = text[e..to].chars().next()
                && letter_mark_or_digit(ch)
            {
                e += ch.len_utf8();
            } else {
                break;
            }
        }
        if s < i && e > i + 1 && e < to && b[e] == b'.' {
            return Some((s, e + 1));
        }
        after = i + 1;
    }
    None
}

/// Whether some address whose domain starts at `domain` may pass [`email_domain_end`]: false
/// when, within the `window` bytes after it (as far as an exact match reads) and before an
/// ASCII byte that ends a domain, no label after a dot could be a passing domain's last
/// label. That label has two to 24 characters and is one of:
/// - the exact pattern's: a run of ASCII letters at the label's start (`xn--…` starts with
///   one) that a digit does not follow when the domain so far is ASCII (`email_domain_ok`
///   reads `b.cc1` as a word going on), or a run of characters past ASCII at its start;
/// - a shorter run's (`email_domain_end`): a label that ends at a dot and is letters or
///   holds a character past ASCII.
///
/// Any character past ASCII is taken as a label character and a letter: that only makes
/// the answer "may" more often. It reads only the domain, so every start before the same
/// `@` shares it.
///
/// A cheap first look for the runs of failing addresses where every `@` fails on its
/// domain (`a@b.a@b.…`, `a@b.cc1…`, `é@b.é@b.…`, `é@b.cé…`): the exact pattern and the
/// checks are not run for them.
pub(super) fn email_domain_may_pass(text: &str, domain: usize, window: usize) -> bool {
    email_domain_look(text, domain, window).may_pass
}

/// What [`email_domain_look`] tells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct DomainLook {
    /// See [`email_domain_may_pass`].
    pub(super) may_pass: bool,
    /// Known only when `may_pass` is false (else true): whether a label after a dot starts
    /// with two ASCII letters or more that a digit, `-` or `_` follows — the letters of a
    /// domain that may run into a value glued to it (see `PiiDetector::email_glued`, which
    /// is not asked when this is false).
    pub(super) runs_on: bool,
}

/// [`email_domain_may_pass`], and, in the same walk, whether the domain's letters may run
/// into a value glued to it.
pub(super) fn email_domain_look(text: &str, domain: usize, window: usize) -> DomainLook {
    const MAY: DomainLook = DomainLook {
        may_pass: true,
        runs_on: true,
    };
    /// The label after the last dot.
    struct Label {
        /// Its characters so far.
        chars: usize,
        /// The length of its leading run of ASCII letters, while the label is still in it.
        letters: Option<usize>,
        /// The characters of its leading run past ASCII, while the label is still in it.
        others: Option<usize>,
        /// Whether it holds a character past ASCII.
        other: bool,
    }
    let b = text.as_bytes();
    let end = b.len().min(domain.saturating_add(window));
    // Whether the domain so far holds a character past ASCII (then `email_domain_ok` does
    // not refuse a letter run that a digit follows).
    let mut other_seen = false;
    let mut label: Option<Label> = None;
    // Whether the label's leading letter run, ending here on a byte that is no digit,
    // may end a passing domain.
    let letters_end = |label: &Option<Label>| {
        label
            .as_ref()
            .and_then(|l| l.letters)
            .is_some_and(|n| n >= 2)
    };
    let mut runs_on = false;
    for &c in &b[domain.min(end)..end] {
        if c == b'.' {
            if let Some(l) = &label
                && (letters_end(&label) || l.other && l.chars >= 2)
            {
                return MAY;
            }
            label = Some(Label {
                chars: 0,
                letters: Some(0),
                others: Some(0),
                other: false,
            });
            continue;
        }
        if c < 0x80 && !(c.is_ascii_alphanumeric() || c == b'-') {
            return if letters_end(&label) {
                MAY
            } else {
                DomainLook {
                    may_pass: false,
                    runs_on: runs_on
                        || c == b'_' && label.is_some_and(|l| l.letters.is_some_and(|n| n >= 2)),
                }
            };
        }
        if let Some(l) = &mut label {
            // A byte that does not continue a UTF-8 character starts one.
            let starts = c & 0xC0 != 0x80;
            if starts {
                l.chars += 1;
            }
            if let Some(n) = l.letters {
                if c.is_ascii_alphabetic() {
                    l.letters = Some(n + 1);
                } else {
                    l.letters = None;
                    if n >= 2 && (!c.is_ascii_digit() || other_seen) {
                        return MAY;
                    }
                    runs_on |= n >= 2;
                }
            }
            if let Some(n) = l.others {
                if c >= 0x80 {
                    let n = n + usize::from(starts);
                    if n >= 2 {
                        return MAY;
                    }
                    l.others = Some(n);
                } else {
                    l.others = None;
                }
            }
            l.other |= c >= 0x80;
        }
        other_seen |= c >= 0x80;
    }
    if letters_end(&label) {
        MAY
    } else {
        DomainLook {
            may_pass: false,
            runs_on,
        }
    }
}

/// Where an address's `@` (or `%40`) is in its match `m`: its offset and length.
pub(super) fn email_at(m: &str) -> Option<(usize, usize)> {
    let b = m.as_bytes();
    let at = memchr::memchr(b'@', b).unwrap_or(b.len());
    let pct = memchr::memchr_iter(b'%', &b[..at]).find(|&i| b[i + 1..].starts_with(b"40"));
    match pct {
        Some(p) => Some((p, 3)),
        None => (at < b.len()).then_some((at, 1)),
    }
}

/// The checks of an address that read only its domain (what follows the `@` up to the
/// match's end `e`): every start before the same `@` shares their verdict (see `email_reach`).
pub(super) fn email_domain_ok(text: &str, domain: &str, e: usize) -> bool {
    if domain.len() > 253 {
        return false;
    }
    // The domain ends here: a letter or digit right after it means the text goes on as a
    // word, not that an address ends (`a@b.com_` is an address followed by `_`).
    if byte_at(text, e).is_some_and(|b| b.is_ascii_alphanumeric()) && domain.is_ascii() {
        return false;
    }
    // Labels: none empty, none starting or ending with `-`, none over 63 characters (a
    // byte that does not start a UTF-8 character is no character), at most ten.
    let (mut labels, mut chars, mut last, mut tld) = (1, 0, b'.', 0);
    for (i, &c) in domain.as_bytes().iter().enumerate() {
        if c == b'.' {
            if last == b'.' || last == b'-' {
                return false;
            }
            labels += 1;
            chars = 0;
            tld = i + 1;
        } else {
            if last == b'.' && c == b'-' {
                return false;
            }
            chars += usize::from(c & 0xC0 != 0x80);
            if chars > 63 {
                return false;
            }
        }
        last = c;
    }
    if last == b'.' || last == b'-' || labels > 10 {
        return false;
    }
    // The last label: 2–24 characters (`chars` counts them when the loop ends).
    let tld = &domain[tld..];
    if !(2..=24).contains(&chars) {
        return false;
    }
    const FILE_EXTENSIONS: [&str; 14] = [
        "png", "jpg", "jpeg", "gif", "webp", "svg", "ico", "bmp", "tiff", "avif", "css", "js",
        "pdf", "heic",
    ];
    if FILE_EXTENSIONS.iter().any(|x| x.eq_ignore_ascii_case(tld)) {
        return false;
    }
    // `icon@2x.png`-style asset names.
    let first = domain.split('.').next().unwrap_or_default();
    if first.len() >= 2
        && first.ends_with('x')
        && first[..first.len() - 1].bytes().all(|b| b.is_ascii_digit())
    {
        return false;
    }
    true
}

/// IBAN lengths by country (SWIFT registry).
pub(super) fn iban_length(cc: &str) -> Option<usize> {
    Some(match cc {
        "NO" => 15,
        "BE" => 16,
        "DK" | "FI" | "FO" | "GL" | "NL" => 18,
        "MK" | "SI" => 19,
        "AT" | "BA" | "EE" | "KZ" | "LT" | "LU" | "XK" => 20,
        "CH" | "CR" | "HR" | "LI" | "LV" => 21,
        "BG" | "BH" | "DE" | "GB" | "GE" | "IE" | "ME" | "RS" | "VA" => 22,
        "AE" | "GI" | "IL" | "TL" => 23,
        "AD" | "CZ" | "ES" | "MD" | "PK" | "RO" | "SA" | "SE" | "SK" | "TN" | "VG" => 24,
        "LY" | "PT" | "ST" => 25,
        "IS" | "TR" => 26,
        "FR" | "GR" | "IT" | "MC" | "MR" | "SM" => 27,
        "AL" | "AZ" | "BY" | "CY" | "DO" | "GT" | "HU" | "LB" | "PL" | "SV" => 28,
        "BR" | "EG" | "PS" | "QA" | "UA" => 29,
        "JO" | "KW" | "MU" => 30,
        "MT" | "SC" => 31,
        "LC" => 32,
        "RU" => 33,
        _ => return None,
    })
}

/// The mod-97 check of an IBAN's characters (country, check digits, BBAN).
pub(crate) fn iban_checksum_ok(chars: &[u8]) -> bool {
    if chars.len() < 5 {
        return false;
    }
    let mut rem: u32 = 0;
    for &c in chars[4..].iter().chain(&chars[..4]) {
        let v = match c {
            b'0'..=b'9' => u32::from(c - b'0'),
            b'A'..=b'Z' => u32::from(c - b'A') + 10,
            _ => return false,
        };
        rem = if v >= 10 {
            (rem * 100 + v) % 97
        } else {
            (rem * 10 + v) % 97
        };
    }
    rem == 1
}

/// Reads an IBAN from `s` (no exact pattern: the window `s..e` is read here): country
/// letters, check digits, then letters and digits up to the country's length, with at most
/// two spaces or dashes between any two characters, in one letter case throughout.
pub(super) fn validate_iban(text: &str, s: usize, e: usize, _: &Freed) -> Option<(usize, usize)> {
    let m = &text.as_bytes()[s..e];
    if m.len() < 4 || !m[0].is_ascii_alphabetic() || !m[1].is_ascii_alphabetic() {
        return None;
    }
    let cc = [m[0].to_ascii_uppercase(), m[1].to_ascii_uppercase()];
    let want = iban_length(std::str::from_utf8(&cc).ok()?)?;
    let mut chars = Vec::with_capacity(want);
    let (mut lower, mut upper) = (false, false);
    let mut end = 0;
    let mut gap = 0;
    for (i, &b) in m.iter().enumerate() {
        if chars.len() == want {
            break;
        }
        if b == b' ' || b == b'-' {
            gap += 1;
            if gap > 2 || i < 2 {
                return None;
            }
            continue;
        }
        let ok = if (2..4).contains(&chars.len()) {
            b.is_ascii_digit()
        } else {
            b.is_ascii_alphanumeric()
        };
        if !ok {
            return None;
        }
        lower |= b.is_ascii_lowercase();
        upper |= b.is_ascii_uppercase();
        chars.push(b.to_ascii_uppercase());
        end = i + 1;
        gap = 0;
    }
    let end = s + end;
    // Printed in groups of four, its last group may be glued to a word in the other case
    // (an address's local part: `… 9312 09tlefevre@orange.fr`): the country's length says
    // where it ends. Otherwise a longer run of letters and digits (more digits, a hash, a
    // UUID, random groups) is some other token.
    let glued = byte_at(text, end).is_some_and(|b| {
        if upper {
            b.is_ascii_lowercase()
        } else {
            b.is_ascii_uppercase()
        }
    }) && printed_in_fours(&m[..end - s]);
    if chars.len() != want
        || (lower && upper)
        || (is_alnum(byte_at(text, end)) && !glued)
        || !iban_checksum_ok(&chars)
    {
        return None;
    }
    Some((s, end))
}

/// True when `iban` is written as printed: groups of four split by one space or dash, the
/// last of one to four.
fn printed_in_fours(iban: &[u8]) -> bool {
    let groups: Vec<&[u8]> = iban.split(|&b| b == b' ' || b == b'-').collect();
    let Some((last, full)) = groups.split_last() else {
        return false;
    };
    full.len() >= 3 && full.iter().all(|g| g.len() == 4) && (1..=4).contains(&last.len())
}

pub(super) fn luhn_ok(d: &[u8]) -> bool {
    let mut sum = 0u32;
    for (i, &x) in d.iter().rev().enumerate() {
        let mut v = u32::from(x);
        if i % 2 == 1 {
            v *= 2;
            if v > 9 {
                v -= 9;
            }
        }
        sum += v;
    }
    sum.is_multiple_of(10)
}

pub(super) fn card_brand_ok(d: &[u8]) -> bool {
    let n = d.len();
    let prefix = |k: usize| d.iter().take(k).fold(0u32, |a, &x| a * 10 + u32::from(x));
    let p2 = prefix(2);
    let p3 = prefix(3);
    let p4 = prefix(4);
    let p6 = prefix(6);
    match d.first() {
        Some(4) => matches!(n, 13 | 16 | 19),
        Some(5) => {
            (51..=55).contains(&p2) && n == 16
                // Maestro (50, 56–58) and Dankort (5019).
                || (p2 == 50 || (56..=58).contains(&p2)) && (12..=19).contains(&n)
        }
        Some(2) => (2221..=2720).contains(&p4) && n == 16,
        Some(3) => {
            (matches!(p2, 34 | 37) && n == 15)
                || ((300..=305).contains(&p3) || matches!(p2, 36 | 38 | 39))
                    && (14..=19).contains(&n)
                || (3528..=3589).contains(&p4) && (16..=19).contains(&n)
        }
        Some(6) => {
            (p4 == 6011
                || (644..=649).contains(&p3)
                || p2 == 65
                || (622_126..=622_925).contains(&p6)
                || p2 == 62)
                && (16..=19).contains(&n)
                // Maestro (6304, 6759, 6761–6763).
                || (p4 == 6304 || p4 == 6759 || (6761..=6763).contains(&p4)) && (12..=19).contains(&n)
        }
        _ => false,
    }
}

pub(super) fn validate_card(
    text: &str,
    s: usize,
    e: usize,
    freed: &Freed,
) -> Option<(usize, usize)> {
    card_at(text, s, e, freed).or_else(|| {
        // Four groups of four and a short group after them: the short group may be the start
        // of another number (`4111 1111 1111 1111 123 45 6789`); the card is the four groups.
        let m = &text.as_bytes()[s..e];
        let tail = m.iter().rev().take_while(|b| b.is_ascii_digit()).count();
        let cut = m.len() - tail;
        let grouped = m.iter().filter(|b| !b.is_ascii_digit()).count() >= 3;
        (grouped && (1..=3).contains(&tail) && cut >= 2 && m[cut - 1] == b' ' && m[cut - 2] != b' ')
            .then(|| card_at(text, s, s + cut - 1, freed))
            .flatten()
    })
}

/// After a failed card candidate at `s`: how far no later candidate can succeed, read in
/// the run of digits and spaces after it (at most [`CARD_REACH_WALK`] bytes). A start there is a card only
/// with 13 to 19 digits or a first group of four (the pattern); a group of four and a space
/// after another number and a space continues that number (`card_at`: a tracking number in
/// spaced groups) unless `other_number_before` says the number before is not one to join —
/// so in `4111 4111 …` every later start fails until one of 13 to 19 digits, one of four
/// not followed by a space, one after two spaces, or anything but a digit or a space. A
/// start right after a detection reads differently (`after_detection`): the reach holds only
/// until the next detection (see `Kind::reach_until_detection`).
pub(super) fn card_reach(
    text: &str,
    s: usize,
    _: &mut dyn FnMut() -> Option<usize>,
    _: &super::patterns::Kind,
) -> Option<usize> {
    let b = text.as_bytes();
    Some(walk_after(text, s, CARD_REACH_WALK, |i| {
        let c = b[i];
        if c.is_ascii_digit() && !b[i - 1].is_ascii_digit() {
            let run = b[i..]
                .iter()
                .take(20)
                .take_while(|c| c.is_ascii_digit())
                .count();
            let no_match = run != 4 && !(13..=19).contains(&run);
            let continues = run == 4
                && b.get(i + 4) == Some(&b' ')
                && i >= s + 2
                && b[i - 1] == b' '
                && b[i - 2].is_ascii_digit()
                && !other_number_before(text, i);
            no_match || continues
        } else {
            c.is_ascii_digit() || c == b' '
        }
    }))
}

/// How far [`card_reach`] reads.
const CARD_REACH_WALK: usize = 128;

/// For a kind's reach: the first position after `s` (at most `limit` bytes on) that
/// `passed_over` does not pass over, or the text's end.
pub(super) fn walk_after(
    text: &str,
    s: usize,
    limit: usize,
    mut passed_over: impl FnMut(usize) -> bool,
) -> usize {
    let end = text.len().min(s.saturating_add(limit));
    let mut i = s + 1;
    while i < end && passed_over(i) {
        i += 1;
    }
    i.min(text.len())
}

fn card_at(text: &str, s: usize, e: usize, freed: &Freed) -> Option<(usize, usize)> {
    // Glued to the words around it (`VISA4111…`, `…1111exp`): the letters are not part of
    // the number, and the word they make must not be a hex string (a hash or an id) — read
    // 32 bytes on each side: a longer word is an id's where that much of it is hex. (Read
    // to its ends, a run of hex with no break cost each candidate in it the whole run: 1 MB
    // of random hex took 5 s, found by an attack review.)
    let glued_before = text.as_bytes()[s].is_ascii_alphabetic();
    let glued_after = text.as_bytes()[e - 1].is_ascii_alphabetic();
    let s = s + usize::from(glued_before);
    let e = e - usize::from(glued_after);
    if glued_before || glued_after {
        let bytes = text.as_bytes();
        let mut a = s;
        while a > s.saturating_sub(32) && bytes[a - 1].is_ascii_alphanumeric() {
            a -= 1;
        }
        let mut b = e;
        while b < bytes.len().min(e + 32) && bytes[b].is_ascii_alphanumeric() {
            b += 1;
        }
        let hex = !bytes[a..b]
            .iter()
            .any(|c| c.is_ascii_alphabetic() && !c.is_ascii_hexdigit());
        if hex && (b - a) - (e - s) > 4 {
            return None;
        }
    }
    // A number glued on by a dash or a dot continues this one; so does one before it with a
    // space when the card is written in spaced groups (`9400 5080 5893 2460 2609 68` is a
    // tracking number) — unless that number was detected (a placeholder to the next
    // redaction pass: `4111 … 1111 4111 … 1111` is two cards). A number after it and a space
    // is another (`… 1111 2025`).
    let spaced = text.as_bytes()[s..e].contains(&b' ');
    let after_detection = freed.end < s && freed.end + 1 >= s && freed.end > freed.start;
    let before: &[u8] = if spaced && !other_number_before(text, s) && !after_detection {
        b" -."
    } else {
        b"-."
    };
    if continues_after(text, e, b"-.") || continues_before(text, s, before) {
        return None;
    }
    // One separator throughout.
    let mut seps = text[s..e].bytes().filter(|b| !b.is_ascii_digit());
    if let Some(first) = seps.next()
        && seps.any(|b| b != first)
    {
        return None;
    }
    let mut buf = [0u8; 24];
    let mut n = 0;
    for b in text[s..e].bytes().filter(u8::is_ascii_digit) {
        if n == buf.len() {
            return None;
        }
        buf[n] = b - b'0';
        n += 1;
    }
    let d = &buf[..n];
    (card_brand_ok(d) && luhn_ok(d)).then_some((s, e))
}

/// True when the number before `s` and a space is grouped another way (`978-917-3444 4111
/// 1111 …`, `(978) 917.3444 …`): its last group is tied to the one before it by a dash, a dot
/// or a parenthesis, so it is another number, not the first groups of this one — or it ends
/// a word (`f1 4111 …`, `item2 4111 …`): no group of a spaced number starts with a letter.
fn other_number_before(text: &str, s: usize) -> bool {
    let b = text.as_bytes();
    if byte_before(text, s) != Some(b' ') {
        return false;
    }
    // The last group before the space: at most 19 digits are read back.
    let end = s - 1;
    let mut a = end;
    while a > 0 && end - a < 20 && b[a - 1].is_ascii_digit() {
        a -= 1;
    }
    if a == end || a == 0 {
        return false;
    }
    if b[a - 1].is_ascii_alphabetic() {
        // A word's digits — unless the word is an IBAN's first group (`DE31 3550 …`: two
        // letters, two digits), whose later groups are that IBAN's, not a card.
        let mut w = a;
        while w > 0 && a - w < 3 && b[w - 1].is_ascii_alphabetic() {
            w -= 1;
        }
        let iban_start =
            a - w == 2 && end - a == 2 && (w == 0 || !b[w - 1].is_ascii_alphanumeric());
        return !iban_start;
    }
    a >= 2 && matches!(b[a - 1], b'-' | b'.' | b')') && b[a - 2].is_ascii_digit()
}

/// True when the digits from `at` are a whole card number glued on (`123-45-6789` and
/// `4111111111111111` written with nothing between): 13 to 19 digits that pass the card's
/// issuer and Luhn checks, then no letter or digit. At most 20 bytes are read.
pub(super) fn glued_card_at(text: &str, at: usize) -> bool {
    let b = text.as_bytes();
    let mut d = [0u8; 19];
    let mut n = 0;
    while n < 20 && b.get(at + n).is_some_and(u8::is_ascii_digit) {
        if n < d.len() {
            d[n] = b[at + n] - b'0';
        }
        n += 1;
    }
    (13..=19).contains(&n)
        && !is_alnum(byte_at(text, at + n))
        && card_brand_ok(&d[..n])
        && luhn_ok(&d[..n])
}

pub(super) fn validate_ipv4(text: &str, s: usize, e: usize, _: &Freed) -> Option<(usize, usize)> {
    // `Chrome/120.0.0.0`: a product's version.
    let product_version = byte_before(text, s) == Some(b'/')
        && s >= 2
        && text.as_bytes()[s - 2].is_ascii_alphabetic();
    if continues_after(text, e, b".")
        || continues_before(text, s, b".")
        || version_context(text, s)
        || product_version
    {
        return None;
    }
    let ok = text[s..e]
        .split('.')
        .all(|o| o.parse::<u16>().is_ok_and(|v| v <= 255) && !(o.len() > 1 && o.starts_with('0')));
    ok.then_some((s, e))
}

pub(super) fn validate_ipv6(text: &str, s: usize, e: usize, _: &Freed) -> Option<(usize, usize)> {
    // Skip the one-character border the pattern consumed.
    let s = match text[s..e].chars().next() {
        Some(c) if !(c.is_ascii_hexdigit() || c == ':') => s + c.len_utf8(),
        _ => s,
    };
    let word = |b: Option<u8>| {
        b.is_some_and(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b':' || b == b'.')
    };
    if word(byte_before(text, s)) {
        return None;
    }
    let mut e = e;
    if text[s..e].ends_with(':') && !text[s..e].ends_with("::") {
        e -= 1;
    }
    let after = byte_at(text, e);
    if after.is_some_and(|b| b.is_ascii_alphanumeric() || b == b'_') {
        return None;
    }
    let m = &text[s..e];
    if m != "::1" && m.bytes().filter(|b| b.is_ascii_hexdigit()).count() < 2 {
        return None;
    }
    if m.parse::<Ipv6Addr>().is_ok() {
        return Some((s, e));
    }
    // `addr:port` after a full eight-group address: a decimal port, and the colon-hex run
    // ends there (a certificate fingerprint `AB:CD:…` goes on).
    let cut = m.rfind(':')?;
    let (head, port) = (&m[..cut], &m[cut + 1..]);
    let port_ok = !port.is_empty() && port.len() <= 5 && port.bytes().all(|b| b.is_ascii_digit());
    (port_ok
        && after != Some(b':')
        && head.split(':').count() == 8
        && !head.contains("::")
        && head.parse::<Ipv6Addr>().is_ok())
    .then_some((s, s + cut))
}

pub(super) fn ssn_rules_ok(d: &[u8]) -> bool {
    let area = u32::from(d[0]) * 100 + u32::from(d[1]) * 10 + u32::from(d[2]);
    let group = u32::from(d[3]) * 10 + u32::from(d[4]);
    let serial = d[5..].iter().fold(0u32, |a, &x| a * 10 + u32::from(x));
    area != 0 && area != 666 && area < 900 && group != 0 && serial != 0
}

/// Reads an SSN from `s` (no exact pattern: the window `s..e` is read here): `123-45-6789`,
/// `123 45 6789`, `123.45.6789` (one separator throughout), or nine bare digits next to a
/// name for one (see `ssn_context`).
pub(super) fn validate_ssn(text: &str, s: usize, e: usize, _: &Freed) -> Option<(usize, usize)> {
    let s = skip_escape(text, s);
    let b = &text.as_bytes()[s..e];
    let run = |from: usize, n: usize| {
        b.get(from..from + n)
            .is_some_and(|r| r.iter().all(u8::is_ascii_digit))
    };
    let len = if run(0, 9) {
        9
    } else if run(0, 3)
        && matches!(b.get(3), Some(b'-' | b' ' | b'.'))
        && run(4, 2)
        && b.get(6) == b.get(3)
        && run(7, 4)
    {
        11
    } else {
        return None;
    };
    let end = s + len;
    let word = |c: Option<u8>| c.is_some_and(|c| c.is_ascii_alphanumeric() || c == b'_');
    // A dashed (or dotted, spaced) SSN with a card glued on after it (`123-45-6789` then
    // `4111…`) is both: the card is found once the SSN's placeholder frees it.
    let glued_card = len == 11 && glued_card_at(text, end);
    if (word(byte_at(text, end)) && !glued_card)
        || continues_after(text, end, b"-.")
        || continues_before(text, s, if b[3] == b' ' { b" -." } else { b"-." })
    {
        return None;
    }
    let mut d = [0u8; 9];
    for (slot, c) in d
        .iter_mut()
        .zip(text[s..end].bytes().filter(u8::is_ascii_digit))
    {
        *slot = c - b'0';
    }
    if !ssn_rules_ok(&d) {
        return None;
    }
    if len == 9 && !ssn_context(text, s) {
        return None;
    }
    Some((s, end))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The lines that may open a table aligned with blanks are found alike with the
    /// prefilter and by reading each line break, between every start and every end — at
    /// rules of each shape, a data frame's first row, lines that only look like one and
    /// lines the end cuts; and the remembered search answers as a fresh one would, asked
    /// from starts going on and going back.
    #[test]
    fn lines_that_may_open_a_table_aligned_with_blanks_are_found_alike_every_way() {
        let opens = spaced_opens();
        assert!(opens.is_some());
        let text = " a\n--  --\n-- x\n--\n==  ==\n0 a\n 0\n 0 b\n---\t-\n-- \n=== =\n==\n- --\n\
                    - -\n= ==\n-  --\n  \n12 a\nid  \n1234567890123 x\n'' \n7 b\n--  -";
        let b = text.as_bytes();
        for from in 0..b.len() {
            for to in from..=b.len() {
                let want = first_opener(b, from, to, None);
                assert_eq!(first_opener(b, from, to, opens), want, "{from}..{to}");
            }
        }
        let freed = Freed::default();
        let starts = (0..b.len())
            .chain((0..b.len()).rev())
            .chain((0..b.len()).step_by(7));
        for from in starts.chain([3, 40, 2, 41, 0, b.len() - 1]) {
            let want = first_opener(b, from, b.len(), None);
            assert_eq!(spaced_opener(b, from, &freed), want, "{from}");
        }
    }

    /// What makes a value a secret by its characters: a digit, or a letter and a symbol
    /// after the first character and before a last `!` or `?` — and no white space,
    /// ASCII's (the vertical tab too) or beyond it.
    #[test]
    fn a_secret_values_characters_are_read_as_the_rule_says() {
        for (value, secret) in [
            ("hunter22", true),
            ("hunterxx", false),
            ("hun@terx", true),
            ("@hunterx", false),
            ("hunterx!", false),
            ("hunterx?", false),
            ("hunter!x", true),
            ("hunt!er!", true),
            ("hun~terx", true),
            ("@#$%^&*!", false),
            ("huñter@x", true),
            ("huñterxx", false),
            ("hun\u{b}ter2", false),
            ("hun\u{3000}ter2", false),
            ("hun\u{a0}ter2", false),
            ("hun\u{200b}ter2", true),
            ("ab1", false),
        ] {
            assert_eq!(secret_value(value, true, None), secret, "{value:?}");
        }
    }

    #[test]
    fn basic_credentials_are_base64_of_a_user_and_a_password() {
        for (b64, plain) in [
            ("YTpi", "a:b"),
            ("YTpiYw==", "a:bc"),
            ("YTpiY2Q=", "a:bcd"),
            ("amFuZTpodW50ZXIy", "jane:hunter2"),
            (
                "c3ZjLWRlcGxveTpKeDgjcFEybVc3dlI=",
                "svc-deploy:Jx8#pQ2mW7vR",
            ),
            // Unpadded, URL-safe, with a line break at the end, an empty side.
            ("YTpiYw", "a:bc"),
            ("YTpiY2Q", "a:bcd"),
            ("dTp-fn4_", "u:~~~?"),
            ("eDo-Pj4", "x:>>>"),
            ("dXNlcjpTM2NyZXRQdzk5Cg==", "user:S3cretPw99\n"),
            ("OnB3", ":pw"),
            ("dTo=", "u:"),
        ] {
            assert_eq!(base64_decode(b64.as_bytes()).unwrap(), plain.as_bytes());
            for text in [format!("Basic {b64}\n"), format!("Basic {b64} x")] {
                assert_eq!(
                    basic_credentials(&text, 6),
                    Some((6, 6 + b64.len())),
                    "{b64}"
                );
            }
        }
        for bad in ["YTpiY===", "Y", "YTpiY", "YTp!", "YT=i", "", "==", "YTp=i"] {
            assert!(base64_decode(bad.as_bytes()).is_none(), "{bad}");
        }
        // Base64, but not `user:password`: no colon, both sides empty, a control character.
        for b64 in ["dGVzdA==", "Og==", "dTpwCnE="] {
            assert_eq!(basic_credentials(&format!("Basic {b64}"), 6), None, "{b64}");
        }
    }

    #[test]
    fn known_top_level_domains_are_countries_and_the_common_generic_ones() {
        let countries: Vec<&[u8]> = COUNTRY_TLDS.split(|&b| b == b' ').collect();
        assert!(countries.len() > 240, "{}", countries.len());
        for cc in &countries {
            assert!(
                cc.len() == 2 && cc.iter().all(u8::is_ascii_lowercase),
                "{cc:?}"
            );
            let cc = std::str::from_utf8(cc).unwrap();
            assert!(known_tld(cc) && known_tld(&cc.to_ascii_uppercase()), "{cc}");
        }
        for tld in ["com", "ORG", "travel", "de", "uk", "io", "Museum"] {
            assert!(known_tld(tld), "{tld}");
        }
        for not in ["fc", "zz", "worker", "name", "prod", "x", "", "é", "c1"] {
            assert!(!known_tld(not), "{not}");
        }
    }
}
