//! Phone numbers: one grammar for the ways people write them, read by hand.
//!
//! A candidate is a run of digit groups split by single separators (space, `-`, `.`, `/`) or
//! written in parentheses, optionally after `+`. It is a phone number when it is
//! - international (`+44 20 7981 2838`, `+4915061574115`, `0044 7885 608048`,
//!   `+49 (0) 40 81389095`): a real country calling code and a national number of that
//!   country's length (`+33 6 51 57 79 552` is one digit too long: rejected, not cut);
//! - North American (`(210) 547-2964`, `1 615 507 6170`, `1.402.532.6259`, bare ten digits):
//!   NANP rules (area code and exchange start with 2–9);
//! - national with a trunk `0` (`020 7883 5224`, `06 25 28 32 61`, `(07) 3946 8914`,
//!   `07362258309`): 10 to 12 digits;
//! - Brazilian area code in parentheses (`(21) 99737-8290`);
//! - any other grouping of 8 to 13 digits right after a word for a phone (`Teléfono: 739 89
//!   48 95`, `电话：13059228677`, `"phone": "726224374"`), never a date.

use std::cell::Cell;
use std::sync::OnceLock;

use regex::Regex;

use super::context::{contains_ignore_ascii_case, id_context, label_before};
use super::validate::{Freed, byte_at, skip_escape, walk_after};

/// Words that make the number after them a phone number (lower case; matched
/// case-insensitively in the label before the number).
const PHONE_WORDS: [&str; 47] = [
    "phone",
    "tel",
    "mobil",
    "cell",
    "call",
    "fax",
    "whatsapp",
    "reach",
    "ring",
    "contact",
    "dial",
    "sms",
    "número",
    "numero",
    "teléfono",
    "telefono",
    "telefone",
    "téléphone",
    "portable",
    "handy",
    "rufnummer",
    "bellen",
    "bereiken",
    "llám",
    "llama",
    "ligar",
    "liga",
    "電話",
    "电话",
    "手机",
    "拨打",
    "號碼",
    "号码",
    "番号",
    "携帯",
    "連絡",
    "연락",
    "전화",
    "☎",
    "📞",
    "mera number",
    "tlf",
    "telf",
    "nummer",
    "office line",
    "hotline",
    "direct line",
];

/// True when a word for a phone labels the number at `s`: it stands within 48 bytes before
/// it, with no other number in between.
fn phone_context(text: &str, s: usize) -> bool {
    static WORDS: OnceLock<Option<Regex>> = OnceLock::new();
    let label = label_before(text, s);
    let words = WORDS.get_or_init(|| {
        let alternation: Vec<String> = PHONE_WORDS.iter().map(|w| regex::escape(w)).collect();
        Regex::new(&format!("(?i){}", alternation.join("|"))).ok()
    });
    match words {
        Some(re) => re.is_match(label),
        // The alternation of fixed words always compiles; were it ever not to, the slow
        // comparison gives the same answer.
        None => PHONE_WORDS
            .iter()
            .any(|w| contains_ignore_ascii_case(label, w)),
    }
}

/// Country calling codes that are one or two digits long; every other code has three.
const TWO_DIGIT_CODES: [u16; 44] = [
    20, 27, 30, 31, 32, 33, 34, 36, 39, 40, 41, 43, 44, 45, 46, 47, 48, 49, 51, 52, 53, 54, 55, 56,
    57, 58, 60, 61, 62, 63, 64, 65, 66, 81, 82, 84, 86, 90, 91, 92, 93, 94, 95, 98,
];

/// The country code at the start of `d` (digits), if `d` starts with a real one.
fn country_code(d: &[u8]) -> Option<usize> {
    let n = |k: usize| d.iter().take(k).fold(0u16, |a, &x| a * 10 + u16::from(x));
    match d.first()? {
        0 => None,
        1 | 7 => Some(1),
        _ if d.len() >= 2 && TWO_DIGIT_CODES.contains(&n(2)) => Some(2),
        // Unassigned: 28x, 80x (international freephone aside), 83x, 89x, 99x is assigned.
        2 if n(2) == 28 => None,
        8 if matches!(n(2), 80 | 83 | 89) => None,
        _ if d.len() >= 3 => Some(3),
        _ => None,
    }
}

/// The national significant number's length range for a country code.
fn national_len(cc: u16) -> (usize, usize) {
    match cc {
        1 | 7 | 52 | 57 | 58 | 63 | 90 | 91 | 92 | 98 => (10, 10),
        // Argentina: a mobile adds a 9 (`+54 9 11 1234-5678`).
        54 => (10, 11),
        27 | 31 | 33 | 34 | 40 | 41 | 48 | 56 | 61 | 93 | 94 | 351 | 380 | 420 | 966 => (9, 9),
        45 | 47 | 65 => (8, 8),
        20 | 81 | 84 => (9, 10),
        30 => (10, 10),
        32 | 36 | 51 | 66 | 971 | 972 => (8, 9),
        44 => (9, 10),
        46 => (7, 9),
        49 => (6, 11),
        39 => (6, 11),
        43 => (4, 13),
        55 | 86 => (10, 11),
        60 | 64 | 82 | 95 => (8, 10),
        62 => (8, 12),
        234 => (8, 10),
        353 => (7, 9),
        358 => (5, 12),
        _ => (6, 12),
    }
}

#[derive(Clone, Copy)]
struct Group {
    start: usize,
    end: usize,
    paren: bool,
    /// The separator before it (0 for the first group, `)` after a parenthesised group).
    sep: u8,
}

const MAX_GROUPS: usize = 10;
/// More digits than any phone number has (E.164 allows 15, a `00` prefix and a trunk `(0)`
/// add three).
const MAX_DIGITS: usize = 18;

/// At most [`MAX_GROUPS`] groups, on the stack.
struct Groups {
    g: [Group; MAX_GROUPS],
    n: usize,
}

impl Groups {
    fn push(&mut self, g: Group) {
        self.g[self.n] = g;
        self.n += 1;
    }
    fn len(&self) -> usize {
        self.n
    }
}

impl std::ops::Deref for Groups {
    type Target = [Group];
    fn deref(&self) -> &[Group] {
        &self.g[..self.n]
    }
}

/// The digit groups of the run at `s` (after an optional `+`), as far as the grammar holds.
fn groups(text: &str, s: usize, limit: usize) -> Groups {
    let b = text.as_bytes();
    let empty = Group {
        start: 0,
        end: 0,
        paren: false,
        sep: 0,
    };
    let mut out = Groups {
        g: [empty; MAX_GROUPS],
        n: 0,
    };
    let mut i = s;
    let mut sep = 0u8;
    let mut digits = 0;
    while out.len() < MAX_GROUPS && i < limit {
        let paren = b[i] == b'(';
        let start = i + usize::from(paren);
        let mut j = start;
        while j < limit && b[j].is_ascii_digit() {
            j += 1;
        }
        if j == start || j - start > 15 || (paren && b.get(j) != Some(&b')')) {
            break;
        }
        out.push(Group {
            start,
            end: j,
            paren,
            sep,
        });
        digits += j - start;
        if digits > MAX_DIGITS {
            // Longer than any phone number: no need to read on.
            break;
        }
        i = j + usize::from(paren);
        // One separator, then a digit or `(`; after `)`, a space or nothing.
        let next = |k: usize| b.get(k).is_some_and(|&c| c.is_ascii_digit() || c == b'(');
        if paren && b.get(i).is_some_and(u8::is_ascii_digit) {
            // `(313)541-5567`: digits right after the parentheses (not another `(`).
            sep = b')';
        } else if !paren && b.get(i) == Some(&b'(') && i < limit {
            // `070(4566)3786`: a parenthesised group right after a digit.
            sep = b'(';
        } else if i < limit
            && matches!(b[i], b' ' | b'-' | b'.' | b'/')
            && next(i + 1)
            && i + 1 < limit
        {
            sep = b[i];
            i += 1;
        } else {
            break;
        }
    }
    out
}

fn nanp_ok(d: &[u8]) -> bool {
    d.len() == 10 && d[0] >= 2 && d[3] >= 2 && !(d[1] == 1 && d[2] == 1)
}

fn len(g: &Group) -> usize {
    g.end - g.start
}

pub(super) fn validate_phone(
    text: &str,
    s: usize,
    e: usize,
    freed: &Freed,
) -> Option<(usize, usize)> {
    let b = text.as_bytes();
    let s = skip_escape(text, s);
    if s >= e {
        return None;
    }
    let plus = b[s] == b'+';
    // What stands before the candidate, as the next redaction pass would read it (the last
    // detection as its placeholder).
    let before = |i: usize| s.checked_sub(i).map(|j| freed.byte(text, j));
    let prev = before(1);
    let escaped = before(2) == Some(b'\\') && matches!(prev, Some(b'n' | b'r' | b't'));
    if !escaped && prev.is_some_and(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b'+') {
        return None;
    }
    // A number that goes on before it (`12.345 678`) is not a phone number's start.
    // A `+` or `(` starts a number on its own; a bare digit right after another number's
    // separator continues that number (`ORD-2023…`, `1.2.3`, a group after `12 `). A comma
    // separates numbers in a list.
    if !escaped
        && !plus
        && b[s] != b'('
        && matches!(prev, Some(b'-' | b'.' | b'/'))
        && before(2).is_some_and(|c| c.is_ascii_alphanumeric())
    {
        return None;
    }
    // `00…` right after another number and a space is that number's next group (an account
    // number in groups of four), not an international prefix.
    if !escaped
        && b.get(s..s + 2) == Some(b"00")
        && prev == Some(b' ')
        && before(2).is_some_and(|c| c.is_ascii_digit())
    {
        return None;
    }
    // Right after another number and a space only a North American shape may start (see
    // `classify`): a first group of any other length is rejected before parsing on.
    if !escaped
        && !plus
        && b[s] != b'('
        && prev == Some(b' ')
        && before(2).is_some_and(|c| c.is_ascii_digit())
    {
        let run = b[s..e].iter().take_while(|c| c.is_ascii_digit()).count();
        if !(run == 3 || (run == 1 && b[s] == b'1')) {
            return None;
        }
    }
    let all = groups(text, s + usize::from(plus), e);
    // The run may go on past the number with another one after a space (`415-555-2671 8am`,
    // `020 7946 0958 020 7946 0959`): the longest run of groups that ends where another
    // number may start (or at the run's end) and reads as a phone number is the one.
    // A slash after three groups (or a long one) lists the next number: the run ends there.
    let end = (1..all.len())
        .find(|&k| all[k].sep == b'/' && (k >= 3 || len(&all[k - 1]) >= 7))
        .unwrap_or(all.len());
    let all = &all[..end];
    // The run's digits, once: the first `upto[k]` of them are those of its first `k` groups.
    let mut buf = [0u8; 16 * MAX_GROUPS];
    let mut upto = [0usize; MAX_GROUPS + 1];
    let mut n = 0;
    for (k, g) in all.iter().enumerate() {
        for &c in &b[g.start..g.end] {
            buf[n] = c - b'0';
            n += 1;
        }
        upto[k + 1] = n;
    }
    let before = Before {
        text,
        s,
        freed,
        phone: Cell::new(None),
        id: Cell::new(None),
        code: Cell::new(None),
    };
    let (fewest, most) = digit_bounds(plus, &buf[..n]);
    (1..=all.len())
        .rev()
        .filter(|&k| (fewest..=most).contains(&upto[k]))
        .filter(|&k| k == all.len() || may_end_before(text, plus, all, k, &buf[..upto[k]]))
        .find_map(|k| classify(plus, &all[..k], &buf[..upto[k]], &before))
        .or_else(|| french_after_a_short_number(plus, all, &buf[..n], &before))
}

/// After a failed phone candidate at `s`: how far no later candidate can succeed, read in
/// the run of digit groups after it (at most [`REACH_WALK`] bytes). Every start it passes
/// over fails whatever follows the run:
/// - a number right after another number and a space is refused unless its first group has
///   three digits (a North American shape) or is a lone `1` (see `validate_phone`): so in
///   `06 12 06 12 …` or `4111 4111 …` no start succeeds until a group of three or a `1`;
/// - a group of two digits in parentheses, not from a trunk zero, right after another
///   (`(12) (34) (56) …`), with two more such groups after it: no rule takes it (no
///   country code, no North American or Brazilian shape — that needs eight or nine digits
///   in the two groups after — no trunk zero, and no word for a phone: the label before it
///   is the `) ` after the last number, see `label_before`); glued to the next
///   (`(12)(34)…`) it is a number of one group of two digits, which no reading takes;
/// - a digit right after `(` whose run is closed by `)` within seven digits: a number of
///   one group of fewer than eight digits, which no reading takes.
///
/// What stands before a start changes when the scan detects something there (it reads as
/// the placeholder): the reach holds only until the next detection (see
/// `Kind::reach_until_detection`), and nothing before `s + 2` is ruled out.
pub(super) fn phone_reach(
    text: &str,
    s: usize,
    _: &mut dyn FnMut() -> Option<usize>,
    _: &super::patterns::Kind,
) -> Option<usize> {
    let b = text.as_bytes();
    let digit = |i: usize| b.get(i).is_some_and(u8::is_ascii_digit);
    // Two digits in parentheses at `i`, the first not a zero when `trunk` is asked.
    let pair = |i: usize, trunk: bool| {
        b.get(i) == Some(&b'(')
            && digit(i + 1)
            && digit(i + 2)
            && b.get(i + 3) == Some(&b')')
            && !(trunk && b[i + 1] == b'0')
    };
    Some(walk_after(text, s, REACH_WALK, |i| {
        let c = b[i];
        match c {
            b' ' | b')' => true,
            b'0'..=b'9' => match b[i - 1] {
                p if p.is_ascii_digit() => true,
                b' ' => {
                    // Refused after a number and a space, with a first group of other
                    // than three digits or a lone `1` (read up to four digits: enough to
                    // tell, and within the candidate's window).
                    let after_number = i >= s + 2 && digit(i - 2);
                    let run = b[i..]
                        .iter()
                        .take(4)
                        .take_while(|c| c.is_ascii_digit())
                        .count();
                    after_number && run != 3 && !(run == 1 && c == b'1')
                }
                b'(' => {
                    let run = b[i..]
                        .iter()
                        .take(8)
                        .take_while(|c| c.is_ascii_digit())
                        .count();
                    run < 8 && b.get(i + run) == Some(&b')')
                }
                _ => false,
            },
            b'(' => {
                let spaced = i >= s + 3
                    && b[i - 1] == b' '
                    && b[i - 2] == b')'
                    && digit(i - 3)
                    && pair(i, true)
                    && b.get(i + 4) == Some(&b' ')
                    && pair(i + 5, false)
                    && b.get(i + 9) == Some(&b' ')
                    && pair(i + 10, false);
                let glued = pair(i, false) && b.get(i + 4) == Some(&b'(');
                spaced || glued
            }
            _ => false,
        }
    }))
}

/// How far [`phone_reach`] reads.
const REACH_WALK: usize = 64;

/// How far past its start a phone candidate is read (the kind's window).
pub(super) const PHONE_WINDOW: usize = 64;

/// `le 12 06 12 34 56 78`: a French number (five pairs from a trunk zero) right after a
/// short number (one or two digits, no trunk zero) reads as one run of six groups, which no
/// rule takes, and the start at its `06` is refused as the next group of a number. The
/// five pairs are read as a number of their own, the short number before them as the
/// placeholder it would be once redacted (as for the next number of a list). Six pairs
/// from a trunk zero (`05 12 23 34 45 56`) stay one run.
fn french_after_a_short_number(
    plus: bool,
    all: &[Group],
    d: &[u8],
    before: &Before<'_>,
) -> Option<(usize, usize)> {
    let [short, rest @ ..] = all else {
        return None;
    };
    if plus
        || rest.len() != 5
        || short.paren
        || !(1..=2).contains(&len(short))
        || d[0] == 0
        || !rest
            .iter()
            .all(|g| len(g) == 2 && g.sep == b' ' && !g.paren)
    {
        return None;
    }
    let start = rest[0].start;
    let freed = Freed {
        start: before.s,
        end: short.end,
        ..Freed::default()
    };
    let after_short = Before {
        text: before.text,
        s: start,
        freed: &freed,
        phone: Cell::new(None),
        id: Cell::new(None),
        code: Cell::new(None),
    };
    classify(false, rest, &d[len(short)..], &after_short)
}

/// The fewest and most digits a number that [`classify`] takes can have, given how it starts
/// (`d`: the run's digits): international from 6 (`+43 1234`) to 18 (a three-digit code, 13
/// national digits, a trunk zero written after the code and `(0)`), 2 more after `00`;
/// otherwise 8 to 13 (a number named by a word for a phone). Readings of the run outside
/// these are not tried.
fn digit_bounds(plus: bool, d: &[u8]) -> (usize, usize) {
    if plus {
        (6, 18)
    } else if d.starts_with(&[0, 0]) {
        (8, 20)
    } else {
        (8, 13)
    }
}

/// What the readings of one candidate's groups ask about the text around its start: the
/// same answer for each reading, so worked out at most once.
struct Before<'a> {
    text: &'a str,
    s: usize,
    freed: &'a Freed,
    phone: Cell<Option<bool>>,
    id: Cell<Option<bool>>,
    code: Cell<Option<bool>>,
}

impl Before<'_> {
    fn once(cell: &Cell<Option<bool>>, f: impl FnOnce() -> bool) -> bool {
        match cell.get() {
            Some(v) => v,
            None => {
                let v = f();
                cell.set(Some(v));
                v
            }
        }
    }

    /// See [`phone_context`].
    fn phone_context(&self) -> bool {
        Self::once(&self.phone, || phone_context(self.text, self.s))
    }

    /// See [`id_context`].
    fn id_context(&self) -> bool {
        Self::once(&self.id, || id_context(self.text, self.s))
    }

    /// See [`after_code_group`].
    fn after_code_group(&self) -> bool {
        Self::once(&self.code, || {
            after_code_group(self.text, self.s, self.freed)
        })
    }
}

/// True when a phone number may end before group `k` of the run `all` (another number
/// follows). A cut falls where the grouping changes (`2671 | 8am`, `0958 | 020`,
/// `(415) … | (212)`, `978-917-3444 | 4111 1111 …`, `978-917-3444/978-917-3555`), after a
/// whole number in one group (`9789173444 | 9789173444`), after a complete North American
/// number (`415 555 2671 | 4111 …`) or an international one of a fixed-length country
/// (`+1 415 555 2671 | 4111 …`) — never between two groups of one pattern
/// (`05 12 23 34 45 | 56` is one run, and `+49 30 123456 | 978` is not cut: German numbers
/// vary in length).
fn may_end_before(text: &str, plus: bool, all: &[Group], k: usize, d: &[u8]) -> bool {
    let (next, prev) = (&all[k], &all[k - 1]);
    if next.sep == b'/' {
        return k >= 2 || len(prev) >= 7;
    }
    if next.sep != b' ' {
        return false;
    }
    if next.paren
        || len(next) != len(prev)
        || matches!(prev.sep, b'-' | b'.' | b'/' | b')')
        || (len(prev) >= 7 && len(next) >= 7)
    {
        return true;
    }
    let n = d.len();
    let shape = |i: usize| len(&all[i]);
    if !plus {
        let nanp = match k {
            3 => [shape(0), shape(1), shape(2)] == [3, 3, 4] && nanp_ok(d),
            4 => {
                [shape(0), shape(1), shape(2), shape(3)] == [1, 3, 3, 4]
                    && d[0] == 1
                    && nanp_ok(&d[1..])
            }
            _ => false,
        };
        // A national number with a trunk zero is complete at 11 digits (`020 7946 0958`),
        // unless it is written in pairs (`05 12 23 34 45 56` is one run).
        let trunk = n == 11 && d[0] == 0 && d[1] != 0 && !all[..k].iter().all(|g| len(g) == 2);
        // Five pairs from a trunk zero are a whole French number when the next pair starts
        // another (`06 12 34 56 78 06 12 34 56 79`): two numbers, not one run of ten pairs.
        let pairs = k == 5
            && all[..=k].iter().all(|g| len(g) == 2)
            && d[0] == 0
            && d[1] != 0
            && text.as_bytes()[next.start] == b'0'
            && text.as_bytes()[next.start + 1] != b'0';
        return nanp || trunk || pairs;
    }
    // International: a country whose numbers have one length ends exactly there.
    let Some(cc_len) = country_code(d) else {
        return false;
    };
    let cc = d[..cc_len].iter().fold(0u16, |a, &x| a * 10 + u16::from(x));
    let (min, max) = national_len(cc);
    min == max && n - cc_len == min
}

/// Reads the groups `gs` (digits `d`) of the number at `before.s` as a phone number (see the
/// module's grammar).
fn classify(plus: bool, gs: &[Group], d: &[u8], before: &Before<'_>) -> Option<(usize, usize)> {
    let (text, s, freed) = (before.text, before.s, before.freed);
    let (first, last) = (gs.first()?, gs.last()?);
    let end = last.end + usize::from(last.paren);
    // It must end here: not inside a word, and not where the number goes on in another shape
    // (`2024-01-02T10:…` ends in a letter; `1.5.2024.` is fine).
    // `+1 415 555 2671x23`: an extension follows.
    let extension = byte_at(text, end) == Some(b'x')
        && byte_at(text, end + 1).is_some_and(|c| c.is_ascii_digit());
    // A slash after a whole number (two groups or more, or one long one) lists another
    // (`978-917-3444/978-917-3555`); after a first short group it is the area code's
    // (`089/1234567`).
    let listed = byte_at(text, end) == Some(b'/') && (gs.len() >= 2 || len(last) >= 7);
    if (!extension && byte_at(text, end).is_some_and(|c| c.is_ascii_alphanumeric() || c == b'_'))
        || (matches!(byte_at(text, end), Some(b'-' | b'/' | b':'))
            && !listed
            && byte_at(text, end + 1).is_some_and(|c| c.is_ascii_digit()))
    {
        return None;
    }
    let n = d.len();
    let ok = |ok: bool| ok.then_some((s, end));
    let leading_00 = !plus && !first.paren && len(first) >= 3 && d[0] == 0 && d[1] == 0;
    if plus || leading_00 {
        // International: a real country code, then exactly a national number of its length.
        if leading_00 && gs.len() < 2 {
            return None;
        }
        let rest = if plus { d } else { &d[2..] };
        let cc_len = country_code(rest)?;
        let first_len = len(first) - if plus { 0 } else { 2 };
        // The code must be a group of its own, unless the whole number is one group.
        if gs.len() > 1 && first_len != cc_len {
            return None;
        }
        let cc = rest[..cc_len]
            .iter()
            .fold(0u16, |a, &x| a * 10 + u16::from(x));
        let mut national = &rest[cc_len..];
        // `+44 (0) 20…`: the trunk zero in parentheses is not part of the number.
        if gs.len() > 2 && gs[1].paren && len(&gs[1]) == 1 && national.first() == Some(&0) {
            national = &national[1..];
        }
        if national.is_empty() {
            return None;
        }
        if cc == 1 {
            return ok(nanp_ok(national));
        }
        // Italy keeps the leading zero of its area codes; elsewhere a trunk zero written
        // after the country code (`+49 030 1234567`, wrong but common) is not counted.
        if national[0] == 0 && cc != 39 {
            national = &national[1..];
            if national.is_empty() || national[0] == 0 {
                return None;
            }
        }
        return ok(national_ok(cc, national));
    }
    let same_seps = gs.iter().skip(1).all(|g| g.sep == gs[1].sep);
    let mut shape_buf = [0usize; MAX_GROUPS];
    for (slot, g) in shape_buf.iter_mut().zip(gs.iter()) {
        *slot = len(g);
    }
    let shape = &shape_buf[..gs.len()];
    // North American: 3-3-4 (area code in parentheses or not), with or without a leading 1.
    let nanp_groups = match shape {
        [3, 3, 4] => Some(d),
        [1, 3, 3, 4] if d[0] == 1 => Some(&d[1..]),
        _ => None,
    };
    if let Some(nanp) = nanp_groups {
        let body = if shape.len() == 4 { &gs[1..] } else { gs };
        let seps_ok = if body[0].paren {
            body[2].sep == b'-' || body[2].sep == b' '
        } else {
            same_seps
        };
        if seps_ok && nanp_ok(nanp) {
            return ok(true);
        }
        // Written the North American way (`(123) 456-7890`, `012-345-6789`) but breaking its
        // rules: a placeholder or an id, not a number from elsewhere.
        if body[0].paren || matches!(body[1].sep, b'-' | b'.') {
            return None;
        }
    }
    if gs.len() == 1 && (n == 10 || (n == 11 && d[0] == 1)) && d[0] != 0 {
        let nanp = if n == 11 { &d[1..] } else { d };
        if nanp_ok(nanp) && !before.id_context() {
            return ok(true);
        }
    }
    let date = looks_like_date(shape, gs.get(1).map_or(0, |g| g.sep));
    // The national forms below are ambiguous where another number stands right before them
    // (`…3704 0044 0532 0130 01` is an account number in groups): there they are not a
    // start. (A redaction pass frees the next number of a list: `[REDACTED_PHONE] 020 …`.)
    let after_number = first.sep == 0
        && !first.paren
        && s >= 2
        && freed.byte(text, s - 1) == b' '
        && freed.byte(text, s - 2).is_ascii_digit();
    if after_number {
        return None;
    }
    // National with a trunk zero: `020 7883 5224`, `(07) 3946 8914`, `07362258309`.
    if d[0] == 0 && d.get(1).is_some_and(|&x| x != 0) && !date {
        if gs.len() == 1 {
            return ok((10..=11).contains(&n) && (!before.id_context() || before.phone_context()));
        }
        // Four-digit blocks throughout are a card or an account, not a phone.
        let blocks = gs.len() >= 3 && shape.iter().all(|&l| l == 4);
        let groups_ok = len(first) >= 2 && len(last) >= 2 && same_seps_or_paren(gs) && !blocks;
        // Pairs throughout are the French way: five of them (`06 25 28 32 61`), not six
        // lottery numbers.
        let pairs = shape.iter().all(|&l| l == 2);
        return ok(groups_ok
            && (10..=12).contains(&n)
            && (!pairs || n == 10)
            && !before.after_code_group()
            && (!before.id_context() || before.phone_context()));
    }
    // Brazil: `(21) 99737-8290`, `(62) 2306-1605`.
    if first.paren && len(first) == 2 && gs.len() == 3 && (8..=9).contains(&(n - 2)) {
        return ok(true);
    }
    // Anything else only where a word says it is a phone number — but not a North American
    // number with more groups after it (`978 917 3444 020 …`: that number, then another).
    let nanp_then_more = gs.len() > 3 && shape[..3] == [3, 3, 4] && nanp_ok(&d[..10]);
    // A whole number in its first group with more after it is that number, then another.
    let whole_then_more = gs.len() > 1 && len(first) >= 7;
    ok(!before.after_code_group()
        && !nanp_then_more
        && !whole_then_more
        && !date
        && shape.iter().all(|&l| l >= 2)
        && (8..=13).contains(&n)
        && same_seps_or_paren(gs)
        && !space_after_tied_groups(gs)
        && before.phone_context())
}

/// True when a four-character code group (`NL93 TRIO 0589…`, `DE08-2067-…`) stands right
/// before `s`: the digits continue an account number, not a phone number.
fn after_code_group(text: &str, s: usize, freed: &Freed) -> bool {
    let b = text.as_bytes();
    if s < 5 || !matches!(b[s - 1], b' ' | b'-') || freed.end > s - 5 {
        // (A detection right before it is a placeholder, no code group.)
        return false;
    }
    let group = &b[s - 5..s - 1];
    // Four digits before a space may be the end of another phone number (`020 7946 0958
    // 020 7946 0959`): a code group has a letter, unless a dash ties it on.
    let code = group
        .iter()
        .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit())
        && (b[s - 1] == b'-' || group.iter().any(u8::is_ascii_uppercase));
    // Part of a word in lower case (`Tele 0123…`) is prose, not a code.
    let in_word = s >= 6 && b[s - 6].is_ascii_lowercase();
    code && !in_word
}

/// The national number fits the country: its length, and for the countries whose mobile
/// numbers are longer than their landlines, the length that goes with its first digits.
fn national_ok(cc: u16, n: &[u8]) -> bool {
    let (min, max) = national_len(cc);
    if !(min..=max).contains(&n.len()) {
        return false;
    }
    let len = n.len();
    match (cc, n) {
        // Japan: 70/80/90 mobiles have ten digits.
        (81, [7..=9, 0, ..]) => len == 10,
        // China: mobiles 1[3-9]… have eleven digits.
        (86, [1, 3..=9, ..]) => len == 11,
        // Nigeria: mobiles 7xx, 8xx, 9xx have ten digits.
        (234, [7..=9, ..]) => len == 10,
        // UK: mobiles 7xxx have ten digits.
        (44, [7, ..]) => len == 10,
        // Brazil: a mobile (9 after the area code) has eleven digits, a landline ten.
        (55, [_, _, 9, ..]) => len == 11,
        (55, _) => len == 10,
        _ => true,
    }
}

fn same_seps_or_paren(gs: &[Group]) -> bool {
    let mut seps = gs
        .iter()
        .skip(1)
        .map(|g| g.sep)
        .filter(|&c| c != b')' && c != b'(' && c != b' ');
    let first = seps.next();
    seps.all(|c| Some(c) == first) && gs.iter().filter(|g| g.sep == b'/').count() <= 1
}

/// True when a group follows a space after groups tied by `-`, `.` or `/` (`978-917-3444 123`):
/// the tied groups are one number and what follows the space is another.
fn space_after_tied_groups(gs: &[Group]) -> bool {
    gs.windows(2)
        .any(|w| matches!(w[0].sep, b'-' | b'.' | b'/') && w[1].sep == b' ')
}

/// `2024-12-25`, `25.12.2024`, `12/25/2024`, `2024.03.16`.
fn looks_like_date(shape: &[usize], sep: u8) -> bool {
    sep != b' '
        && matches!(
            shape,
            [4, 2, 2] | [2, 2, 4] | [1 | 2, 1 | 2, 4] | [4, 1 | 2, 1 | 2]
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `validate_phone` tries only the readings within `digit_bounds`: every reading outside
    /// them must be one `classify` refuses anyway. Checked on every reading of generated runs
    /// (each prefix of groups, with and without `+`, `00`, a trunk zero, parentheses, a word
    /// for a phone before them).
    #[test]
    fn no_reading_outside_the_digit_bounds_is_a_number() {
        let groups_of = [
            "1",
            "7",
            "44",
            "0",
            "00",
            "20",
            "415",
            "555",
            "2671",
            "06",
            "(0)",
            "(415)",
            "(21)",
            "12345",
            "123456789",
            "4915061574115",
            "43",
            "1234",
            "358",
        ];
        let seps = [" ", "-", ".", "/", ""];
        let labels = ["", "Tel: ", "phone ", "id ", "+", "Tel: +", "00"];
        let mut next = crate::pii::tests::numbers(0x5851_f42d_4c95_7f2d);
        let (mut numbers, mut tried) = (0, 0);
        for _ in 0..20_000 {
            let label = labels[next(labels.len())];
            let mut text = label.to_owned();
            for i in 0..1 + next(9) {
                if i > 0 {
                    text.push_str(seps[next(seps.len())]);
                }
                text.push_str(groups_of[next(groups_of.len())]);
            }
            text.push_str(" ok");
            let plus = label.ends_with('+');
            let s = label.len() - usize::from(plus);
            let all = groups(&text, s + usize::from(plus), text.len());
            let mut d = Vec::new();
            let before = Before {
                text: &text,
                s,
                freed: &Freed::default(),
                phone: Cell::new(None),
                id: Cell::new(None),
                code: Cell::new(None),
            };
            let full: Vec<u8> = all
                .iter()
                .flat_map(|g| text.as_bytes()[g.start..g.end].iter().map(|c| c - b'0'))
                .collect();
            // As `validate_phone` reads them: from the whole run's digits.
            let (fewest, most) = digit_bounds(plus, &full);
            for k in 1..=all.len() {
                d.extend(
                    text.as_bytes()[all[k - 1].start..all[k - 1].end]
                        .iter()
                        .map(|c| c - b'0'),
                );
                tried += 1;
                if classify(plus, &all[..k], &d, &before).is_some() {
                    numbers += 1;
                    assert!((fewest..=most).contains(&d.len()), "{text}: {k} groups");
                }
            }
        }
        assert!(numbers > 1_000 && tried > 50_000, "{numbers} of {tried}");
    }
}
