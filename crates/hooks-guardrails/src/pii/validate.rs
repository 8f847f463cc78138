//! The validators: what makes a candidate a real card, IBAN, IP address, SSN, phone number,
//! e-mail address or secret (checksums, ranges, issuing rules, borders).

use std::net::Ipv6Addr;

use super::context::*;

pub(super) fn next_char(text: &str, s: usize) -> usize {
    text[s..]
        .chars()
        .next()
        .map_or(text.len(), |c| s + c.len_utf8())
}

pub(super) fn ceil_char_boundary(text: &str, i: usize) -> usize {
    if i >= text.len() {
        return text.len();
    }
    let mut i = i;
    while !text.is_char_boundary(i) {
        i += 1;
    }
    i
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

pub(super) fn digits(s: &str) -> Vec<u8> {
    s.bytes()
        .filter(u8::is_ascii_digit)
        .map(|b| b - b'0')
        .collect()
}

// ---- validators ---------------------------------------------------------------------------

pub(super) fn validate_secret(text: &str, s: usize, e: usize) -> Option<(usize, usize)> {
    let m = &text[s..e];
    if m.starts_with("sk-") || m.starts_with("xox") {
        // Trailing dashes belong to the text, not the key.
        let trimmed = m.trim_end_matches('-');
        let body = &trimmed[3..];
        let mixed = body.bytes().any(|b| b.is_ascii_digit())
            || body.bytes().any(|b| b.is_ascii_uppercase());
        if body.len() < 20 || !mixed || is_alnum(byte_at(text, s + trimmed.len())) {
            return None;
        }
        return Some((s, s + trimmed.len()));
    }
    Some((s, e))
}

pub(super) fn validate_aws_border(text: &str, s: usize, e: usize) -> Option<(usize, usize)> {
    let key = |c: char| c.is_ascii_alphanumeric() || c == '/' || c == '+';
    let m = &text[s..e];
    let from = m.char_indices().find(|&(_, c)| key(c)).map(|(i, _)| i)?;
    let start = s + from;
    let end = start + 40;
    if end > e || !text.is_char_boundary(end) {
        return None;
    }
    validate_aws_secret(text, start, end)
}

pub(super) fn validate_aws_secret(text: &str, s: usize, e: usize) -> Option<(usize, usize)> {
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
        "aws_secret",
        "secret_key",
        "secret-access-key",
    ]
    .iter()
    .any(|k| before.contains(k));
    keyed.then_some((s, e))
}

pub(super) fn validate_email(text: &str, s: usize, e: usize) -> Option<(usize, usize)> {
    let m = &text[s..e];
    let at = m.find('@')?;
    let lead = m[..at].len() - m[..at].trim_start_matches('.').len();
    let (s, local) = (s + lead, &m[lead..at]);
    let domain = &m[at + 1..];
    if local.is_empty() || local.ends_with('.') || local.contains("..") || domain.len() > 253 {
        return None;
    }
    let labels: Vec<&str> = domain.split('.').collect();
    if labels
        .iter()
        .any(|l| l.is_empty() || l.starts_with('-') || l.ends_with('-'))
    {
        return None;
    }
    let tld = labels.last()?.to_ascii_lowercase();
    const FILE_EXTENSIONS: [&str; 14] = [
        "png", "jpg", "jpeg", "gif", "webp", "svg", "ico", "bmp", "tiff", "avif", "css", "js",
        "pdf", "heic",
    ];
    if FILE_EXTENSIONS.contains(&tld.as_str()) {
        return None;
    }
    // `icon@2x.png`-style asset names.
    let first = labels[0];
    if first.len() >= 2
        && first.ends_with('x')
        && first[..first.len() - 1].bytes().all(|b| b.is_ascii_digit())
    {
        return None;
    }
    Some((s, e))
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

pub(super) fn validate_iban(text: &str, s: usize, e: usize) -> Option<(usize, usize)> {
    let m = &text.as_bytes()[s..e];
    let want = iban_length(std::str::from_utf8(&m[..2]).ok()?)?;
    let mut chars = Vec::with_capacity(want);
    let mut end = s;
    for (i, &b) in m.iter().enumerate() {
        if chars.len() == want {
            break;
        }
        if b != b' ' {
            chars.push(b);
            end = s + i + 1;
        }
    }
    if chars.len() != want || is_alnum(byte_at(text, end)) || !iban_checksum_ok(&chars) {
        return None;
    }
    Some((s, end))
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
        Some(5) => (51..=55).contains(&p2) && n == 16,
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
        }
        _ => false,
    }
}

pub(super) fn validate_card(text: &str, s: usize, e: usize) -> Option<(usize, usize)> {
    if continues_after(text, e, b" -") || continues_before(text, s, b" -") {
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

pub(super) fn validate_ipv4(text: &str, s: usize, e: usize) -> Option<(usize, usize)> {
    if continues_after(text, e, b".") || continues_before(text, s, b".") {
        return None;
    }
    let ok = text[s..e]
        .split('.')
        .all(|o| o.parse::<u16>().is_ok_and(|v| v <= 255) && !(o.len() > 1 && o.starts_with('0')));
    ok.then_some((s, e))
}

pub(super) fn validate_ipv6(text: &str, s: usize, e: usize) -> Option<(usize, usize)> {
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
    if m.bytes().filter(|b| b.is_ascii_hexdigit()).count() < 2 {
        return None;
    }
    if m.parse::<Ipv6Addr>().is_ok() {
        return Some((s, e));
    }
    // `addr:port` after a full eight-group address.
    let cut = m.rfind(':')?;
    let head = &m[..cut];
    (head.split(':').count() == 8 && !head.contains("::") && head.parse::<Ipv6Addr>().is_ok())
        .then_some((s, s + cut))
}

pub(super) fn ssn_rules_ok(d: &[u8]) -> bool {
    let area = u32::from(d[0]) * 100 + u32::from(d[1]) * 10 + u32::from(d[2]);
    let group = u32::from(d[3]) * 10 + u32::from(d[4]);
    let serial = d[5..].iter().fold(0u32, |a, &x| a * 10 + u32::from(x));
    area != 0 && area != 666 && area < 900 && group != 0 && serial != 0
}

pub(super) fn validate_ssn(text: &str, s: usize, e: usize) -> Option<(usize, usize)> {
    let m = &text[s..e];
    if continues_after(text, e, b" -.") || continues_before(text, s, b" -.") {
        return None;
    }
    let d = digits(m);
    if d.len() != 9 || !ssn_rules_ok(&d) {
        return None;
    }
    if m.len() == 9 && !ssn_context(text, s) {
        return None;
    }
    Some((s, e))
}

/// National significant number lengths (min, max) for common country codes.
pub(super) fn national_len(cc: &str) -> (usize, usize) {
    match cc {
        "33" | "34" | "61" | "32" | "41" | "46" | "47" | "45" => (8, 9),
        "31" => (9, 9),
        "44" => (9, 10),
        "49" => (7, 11),
        "39" => (6, 11),
        "81" | "82" => (9, 10),
        "86" => (10, 11),
        "91" => (10, 10),
        "55" => (10, 11),
        "52" => (10, 10),
        _ => (6, 12),
    }
}

pub(super) fn validate_phone(text: &str, s: usize, e: usize) -> Option<(usize, usize)> {
    let escaped = text.as_bytes()[s] == b'\\';
    let s = if escaped { s + 2 } else { s };
    let prev = byte_before(text, s);
    let after_escape =
        s >= 2 && text.as_bytes()[s - 2] == b'\\' && matches!(prev, Some(b'n' | b'r' | b't'));
    let prev_ok = escaped
        || after_escape
        || !prev.is_some_and(|b| b.is_ascii_alphanumeric() || b == b'+' || b == b'_');
    if !prev_ok || continues_before(text, s, b"-. ") {
        return None;
    }
    let m = &text[s..e];
    if let Some(rest) = m.strip_prefix('+')
        && !rest.starts_with('1')
    {
        // International: trim trailing groups until the national number fits the country.
        let groups: Vec<&str> = rest.split([' ', '-']).collect();
        let cc = groups[0];
        let (min, max) = national_len(cc);
        let mut n = groups.len();
        while n > 1 {
            let national: usize = groups[1..n].iter().map(|g| g.len()).sum();
            if national <= max {
                if national < min {
                    return None;
                }
                let len = 1 + groups[..n].iter().map(|g| g.len()).sum::<usize>() + (n - 1);
                let end = s + len;
                if continues_after(text, end, b".") {
                    return None;
                }
                return Some((s, end));
            }
            n -= 1;
        }
        return None;
    }
    if continues_after(text, e, b"-. ") || is_alnum(byte_at(text, e)) {
        return None;
    }
    let d = digits(m);
    if m.starts_with('0') {
        return (10..=12).contains(&d.len()).then_some((s, e));
    }
    let nanp = if d.len() == 11 && d[0] == 1 {
        &d[1..]
    } else {
        &d[..]
    };
    if nanp.len() != 10 || nanp[0] < 2 || nanp[3] < 2 {
        return None;
    }
    // A bare ten-digit number right after an identifier's name is that identifier.
    if m.len() == 10 && id_context(text, s) {
        return None;
    }
    Some((s, e))
}
