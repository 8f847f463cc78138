//! Normalisation before detection: what people (and attackers) write instead of ASCII.
//!
//! Every character whose compatibility decomposition (NFKC's first step) is plain ASCII becomes
//! that ASCII: fullwidth digits and `＠`, no-break, thin and ideographic spaces, mathematical
//! digits. Zero-width characters and soft hyphens are dropped, so one inside an address cannot
//! split it. Escapes that write a character in ASCII (JSON's, HTML's, URLs'; rsyslog's
//! `#011` in a reading of its own) become the character. Every other character stays as it
//! is. An offset map leads each byte of the folded text back to the character it came from,
//! so a detection replaces the whole original span.

use unicode_normalization::char::decompose_compatible;

/// The folded text and where it differs from the original: one entry per changed
/// character (a sparse map, so long texts with few changes stay cheap).
pub(super) struct Folded {
    pub(super) text: String,
    /// Per changed character, in order: (its start in the folded text, its length there —
    /// 0 when dropped —, its span in the original).
    changes: Vec<(usize, usize, usize, usize)>,
}

impl Folded {
    /// The original offset of folded byte `x`: where its character starts (`after: false`)
    /// or just past it (`after: true`).
    fn map(&self, x: usize, after: bool) -> usize {
        let i = self.changes.partition_point(|c| c.0 <= x);
        let Some(&(fs, flen, os, oe)) = i.checked_sub(1).and_then(|i| self.changes.get(i)) else {
            return x + usize::from(after);
        };
        match (x < fs + flen, after) {
            (true, false) => os,
            (true, true) => oe,
            (false, _) => oe + (x - fs - flen) + usize::from(after),
        }
    }

    /// The original span of the folded span `start..end` (a non-empty span on character
    /// boundaries of the folded text).
    pub(super) fn original(&self, start: usize, end: usize) -> (usize, usize) {
        let s = self.map(start, false);
        let e = end.checked_sub(1).map_or(s, |last| self.map(last, true));
        (s, e.max(s))
    }
}

/// Characters that hide inside a word without showing: dropped before detection. Soft
/// hyphens, zero-width spaces and joiners, word joiners and invisible operators, the
/// direction marks, embeddings and isolates, the combining grapheme joiner, variation
/// selectors, tag characters, the Hangul fillers, Khmer's inherent vowels, Mongolian's vowel
/// separator, the deprecated format characters and the byte order mark.
pub(crate) fn invisible(c: char) -> bool {
    matches!(
        c,
        '\u{00AD}'
            | '\u{034F}'
            | '\u{061C}'
            | '\u{115F}'..='\u{1160}'
            | '\u{17B4}'..='\u{17B5}'
            | '\u{180E}'
            | '\u{200B}'..='\u{200F}'
            | '\u{202A}'..='\u{202E}'
            | '\u{2060}'..='\u{2064}'
            | '\u{2066}'..='\u{206F}'
            | '\u{3164}'
            | '\u{FE00}'..='\u{FE0F}'
            | '\u{FEFF}'
            | '\u{FFA0}'
            | '\u{1D173}'..='\u{1D17A}'
            | '\u{E0000}'..='\u{E007F}'
            | '\u{E0100}'..='\u{E01EF}'
    )
}

/// The blocks that hold every character whose compatibility decomposition is ASCII (checked
/// over all of Unicode by a test): elsewhere, no table lookup is needed.
fn may_fold(c: char) -> bool {
    matches!(c as u32,
        0xA0..=0xBF
        | 0x132..=0x149
        | 0x17F
        | 0x1C4..=0x1F3
        | 0x2B0..=0x2FF
        | 0x37E
        | 0x1D2C..=0x1DBF
        | 0x1E9A..=0x1E9B
        | 0x1FBD..=0x20AF
        | 0x2100..=0x24FF
        | 0x2A0C..=0x2A76
        | 0x2C7C..=0x2C7D
        | 0x2D6F
        | 0x2E9F..=0x2FDF
        | 0x3000..=0x33FF
        | 0xA69C..=0xA69D
        | 0xA770..=0xA7FF
        | 0xAB5C..=0xAB69
        | 0xFB00..=0xFB4F
        | 0xFE10..=0xFE6F
        | 0xFF00..=0xFFEF
        | 0x10780..=0x107BA
        | 0x1CCD6..=0x1CCF9
        | 0x1D400..=0x1D7FF
        | 0x1E030..=0x1E08F
        | 0x1F100..=0x1F2FF
        | 0x1FBF0..=0x1FBF9)
}

/// Where each script's decimal digits start (its zero; nine more follow): Arabic-Indic,
/// Devanagari, Bengali, Thai, Myanmar, … (Unicode's `Nd` blocks whose compatibility
/// decomposition is not already ASCII, as of Unicode 14).
const DIGIT_ZEROS: [u32; 58] = [
    0x660, 0x6F0, 0x7C0, 0x966, 0x9E6, 0xA66, 0xAE6, 0xB66, 0xBE6, 0xC66, 0xCE6, 0xD66, 0xDE6,
    0xE50, 0xED0, 0xF20, 0x1040, 0x1090, 0x17E0, 0x1810, 0x1946, 0x19D0, 0x1A80, 0x1A90, 0x1B50,
    0x1BB0, 0x1C40, 0x1C50, 0xA620, 0xA8D0, 0xA900, 0xA9D0, 0xA9F0, 0xAA50, 0xABF0, 0x104A0,
    0x10D30, 0x11066, 0x110F0, 0x11136, 0x111D0, 0x112F0, 0x11450, 0x114D0, 0x11650, 0x116C0,
    0x11730, 0x118E0, 0x11950, 0x11C50, 0x11D50, 0x11DA0, 0x16A60, 0x16AC0, 0x16B50, 0x1E140,
    0x1E2F0, 0x1E950,
];

/// What folds to ASCII beyond compatibility decomposition: the dashes a word processor puts
/// between digit groups (hyphen, non-breaking hyphen, figure, en and em dash, minus),
/// ideographic full stops, every script's decimal digits, and box drawing.
fn ascii_beyond_nfkc(c: char) -> Option<u8> {
    let u = c as u32;
    if matches!(u, 0x2010..=0x2015 | 0x2212) {
        return Some(b'-');
    }
    // Box drawing, as database clients and table printers draw a table's lines (psql's
    // unicode style, SQLite's and DuckDB's boxes, Python's rich): the ASCII tables they
    // stand for — vertical lines `|`, horizontal ones `-`, corners and junctions `+`.
    match u {
        0x2502 | 0x2503 | 0x2506 | 0x2507 | 0x250A | 0x250B | 0x2551 | 0x254E | 0x254F | 0x2575
        | 0x2577 | 0x2579 | 0x257B | 0x257D | 0x257F => return Some(b'|'),
        0x2500 | 0x2501 | 0x2504 | 0x2505 | 0x2508 | 0x2509 | 0x254C | 0x254D | 0x2550 | 0x2574
        | 0x2576 | 0x2578 | 0x257A | 0x257C | 0x257E => return Some(b'-'),
        0x250C..=0x254B | 0x2552..=0x2570 => return Some(b'+'),
        _ => {}
    }
    // Ideographic full stops, which IDNA reads as dots in a domain.
    if matches!(u, 0x3002 | 0xFF61) {
        return Some(b'.');
    }
    let i = DIGIT_ZEROS.partition_point(|&z| z <= u).checked_sub(1)?;
    let d = u - DIGIT_ZEROS[i];
    (d < 10).then(|| b'0' + d as u8)
}

/// The ASCII a character stands for, if its compatibility decomposition is all ASCII (or it
/// is a dash or a digit, see [`ascii_beyond_nfkc`]).
fn ascii_of(c: char, out: &mut [u8; 8]) -> Option<usize> {
    if let Some(b) = ascii_beyond_nfkc(c) {
        out[0] = b;
        return Some(1);
    }
    if !may_fold(c) {
        return None;
    }
    let mut n = 0;
    let mut ok = true;
    decompose_compatible(c, |d| {
        if d.is_ascii() && n < out.len() {
            out[n] = d as u8;
            n += 1;
        } else {
            ok = false;
        }
    });
    (ok && n > 0 && !(n == 1 && out[0] as char == c)).then_some(n)
}

fn needs_folding(c: char) -> bool {
    invisible(c) || ascii_of(c, &mut [0; 8]).is_some()
}

/// For each character of the Basic Multilingual Plane: whether it needs folding, a bit each
/// (8 KiB). Built once from [`needs_folding`] itself (about 1 ms), so a character of any
/// script in text — `é`, `€`, `•`, `。`, CJK, Cyrillic — costs one lookup, not the NFKC
/// reading `needs_folding` does.
fn bmp_folds() -> &'static [u64; 1024] {
    static FOLDS: std::sync::OnceLock<Box<[u64; 1024]>> = std::sync::OnceLock::new();
    FOLDS.get_or_init(|| {
        let mut folds = Box::new([0u64; 1024]);
        for u in 0x80..0x1_0000u32 {
            if char::from_u32(u).is_some_and(needs_folding) {
                folds[(u >> 6) as usize] |= 1 << (u & 63);
            }
        }
        folds
    })
}

/// [`needs_folding`], answered from [`bmp_folds`] in the Basic Multilingual Plane.
fn needs_folding_fast(c: char, folds: &[u64; 1024]) -> bool {
    let u = c as u32;
    if u < 0x1_0000 {
        return folds[(u >> 6) as usize] & (1 << (u & 63)) != 0;
    }
    needs_folding(c)
}

/// Where the next character at or after `from` (a character boundary) that folds starts.
/// ASCII is skipped 32 bytes at a time (four words, their top bits tested at once).
fn next_folding(text: &str, from: usize) -> Option<usize> {
    let bytes = text.as_bytes();
    let folds = bmp_folds();
    let mut i = from;
    while i < bytes.len() {
        if bytes[i].is_ascii() {
            // 32 bytes at a time, as four words (a byte past ASCII has its top bit set).
            let (blocks, _) = bytes[i..].as_chunks::<32>();
            let ascii = blocks
                .iter()
                .take_while(|block| {
                    let (words, _) = block.as_chunks::<8>();
                    let any = words.iter().fold(0, |a, w| a | u64::from_ne_bytes(*w));
                    any & 0x8080_8080_8080_8080 == 0
                })
                .count();
            i += 32 * ascii;
            match bytes[i..].iter().position(|b| !b.is_ascii()) {
                Some(k) => i += k,
                None => return None,
            }
        }
        let c = text[i..].chars().next()?;
        if needs_folding_fast(c, folds) {
            return Some(i);
        }
        i += c.len_utf8();
    }
    None
}

/// An escape that writes a character in plain ASCII: `\u00e9` (JSON, as Python's
/// `json.dumps` writes every non-ASCII character; escaped again where JSON holds JSON),
/// `\n`, `\r`, `\t` and `\/` (a JSON string's line breaks, tabs and slashes: a value right
/// after `\n` starts a word, as it does in the text the JSON encodes), `&#64;`, `&#x40;`,
/// `&nbsp;`, `&shy;`, `&lt;`, `&quot;` (HTML), `%2B`, `%20`, `%40`, `%0A`, `%3D` (URLs: any encoded
/// punctuation or white space) — HTML and URL escapes also escaped twice or three times
/// (`&amp;#64;`, `%2540`, `%252540`: a link inside a link's query).
/// Returns the escape's end and the character. `continued`: three backslashes before `n`,
/// `r` or `t` are an escaped backslash, then the escape (see [`fold_continued`]).
fn escape_at(text: &str, p: usize, continued: bool) -> Option<(usize, char)> {
    let b = text.as_bytes();
    match b.get(p)? {
        b'\\' => {
            // `\u00e9`, or `\\u00e9` where JSON holds JSON (up to three backslashes).
            let slashes = b[p..].iter().take(4).take_while(|&&c| c == b'\\').count();
            if slashes > 3 {
                return None;
            }
            let u = p + slashes;
            // (Read as [`fold_continued`] reads them: the first stays as it is, the escape
            // is read from the next backslash.)
            if continued && slashes == 3 && matches!(b.get(u), Some(b'n' | b'r' | b't')) {
                return None;
            }
            match b.get(u)? {
                b'u' => {
                    let hex = b.get(u + 1..u + 5)?;
                    if !hex.iter().all(u8::is_ascii_hexdigit) {
                        return None;
                    }
                    let v = u32::from_str_radix(std::str::from_utf8(hex).ok()?, 16).ok()?;
                    Some((u + 5, char::from_u32(v)?))
                }
                b'n' => Some((u + 1, '\n')),
                b'r' => Some((u + 1, '\r')),
                b't' => Some((u + 1, '\t')),
                b'/' => Some((u + 1, '/')),
                _ => None,
            }
        }
        b'&' => {
            // `&amp;#64;`: escaped twice (or three times), the `&` itself escaped.
            let mut q = p + 1;
            for _ in 0..2 {
                if b[q..].starts_with(b"amp;") {
                    q += 4;
                }
            }
            // Bytes, not a `str` slice: a multi-byte character may follow within reach.
            let rest = &b[q..(q + 11).min(b.len())];
            let semi = rest.iter().position(|&c| c == b';')?;
            let name = std::str::from_utf8(&rest[..semi]).ok()?;
            let c = if let Some(num) = name.strip_prefix('#') {
                let v = match num.strip_prefix(['x', 'X']) {
                    Some(hex) => u32::from_str_radix(hex, 16).ok()?,
                    None => num.parse().ok()?,
                };
                char::from_u32(v)?
            } else {
                match name {
                    "nbsp" | "ensp" | "emsp" | "thinsp" => ' ',
                    "shy" => '\u{AD}',
                    "zwnj" => '\u{200C}',
                    "zwj" => '\u{200D}',
                    "lrm" => '\u{200E}',
                    "rlm" => '\u{200F}',
                    "commat" => '@',
                    "period" => '.',
                    "hyphen" | "dash" | "ndash" | "mdash" | "minus" => '-',
                    "plus" => '+',
                    "lpar" => '(',
                    "rpar" => ')',
                    // (Markup and strings escaped for HTML: `&lt;password&gt;…`,
                    // `{&quot;token&quot;: …}`.)
                    "lt" | "LT" => '<',
                    "gt" | "GT" => '>',
                    "quot" | "QUOT" => '"',
                    "apos" => '\'',
                    _ => return None,
                }
            };
            Some((q + semi + 1, c))
        }
        b'%' => {
            // URL encoding of what phone numbers and addresses are made of (`%2B1%20415…`,
            // `jane%40example.com`), also encoded twice or three times (`jane%2540…`: the
            // `%` itself encoded); other escapes are left as written.
            let q = past_encoded_percents(b, p + 1);
            let hex = b.get(q..q + 2)?;
            // Two hex digits (`from_str_radix` alone would take `%+A`).
            if !hex.iter().all(u8::is_ascii_hexdigit) {
                return None;
            }
            let v = u8::from_str_radix(std::str::from_utf8(hex).ok()?, 16).ok()?;
            // An HTML escape whose `&` and `;` were URL-encoded (`%26lt%3B`, `%2526lt%253B`:
            // markup escaped for a page, then put in a link's query): the character it
            // writes.
            if let Some(found) = (v == b'&').then(|| encoded_markup(b, q + 2)).flatten() {
                return Some(found);
            }
            // An `@` encoded twice before a written one (`jane%2540corp@example.com`) is part
            // of the local part, as written: decoded, it would split the address in two.
            if v == b'@' && q > p + 1 && written_at_follows(b, q + 2) {
                return None;
            }
            ((v.is_ascii_punctuation() && v != b'%') || matches!(v, b' ' | b'\t' | b'\n' | b'\r'))
                .then_some((q + 2, v as char))
        }
        _ => None,
    }
}

/// Past the `25`s from `q` (right after a `%`) that encode the `%` itself, up to two, each
/// followed by two hex digits: a URL-encoded escape encoded twice or three times (`%2540`,
/// `%252540`).
fn past_encoded_percents(b: &[u8], mut q: usize) -> usize {
    for _ in 0..2 {
        if b.get(q..q + 2) == Some(b"25")
            && b.get(q + 2..q + 4)
                .is_some_and(|h| h.iter().all(u8::is_ascii_hexdigit))
        {
            q += 2;
        }
    }
    q
}

/// The markup an HTML escape whose `&` was URL-encoded writes, its name from `from` (see
/// [`escape_at`]): `lt`, `gt`, `quot`, `apos`, then a `;` written or URL-encoded up to
/// three times. Its end and the character.
fn encoded_markup(b: &[u8], from: usize) -> Option<(usize, char)> {
    let (name, c) = [("lt", '<'), ("gt", '>'), ("quot", '"'), ("apos", '\'')]
        .into_iter()
        .find(|(n, _)| b[from.min(b.len())..].starts_with(n.as_bytes()))?;
    let q = from + name.len();
    if b.get(q) == Some(&b';') {
        return Some((q + 1, c));
    }
    if b.get(q) != Some(&b'%') {
        return None;
    }
    let q = past_encoded_percents(b, q + 1);
    matches!(b.get(q..q + 2), Some(b"3B" | b"3b")).then_some((q + 2, c))
}

/// True when an `@` follows `from` within an address's characters (letters and digits of
/// any script, `.`, `_`, `%`, `+`, `-`; within 64 bytes, a local part's length): written,
/// fullwidth (`＠`) or encoded once (`%40`).
fn written_at_follows(b: &[u8], from: usize) -> bool {
    let rest = &b[from.min(b.len())..];
    for (i, &c) in rest.iter().enumerate().take(64) {
        match c {
            b'@' => return true,
            b'%' if rest[i + 1..].starts_with(b"40") => return true,
            0xEF if rest[i + 1..].starts_with(&[0xBC, 0xA0]) => return true,
            b'.' | b'_' | b'%' | b'+' | b'-' => {}
            c if c.is_ascii_alphanumeric() || c >= 0x80 => {}
            _ => return false,
        }
    }
    false
}

/// The next escape at or after `from` (see [`escape_at`]): its start, end and character.
/// Where `known` is given, a Windows path's separator is none (`C:\tools\redis-cli.exe`:
/// see [`path_separator`]; `known`: its last answer, kept from call to call).
fn next_escape(
    text: &str,
    from: usize,
    mut known: Option<&mut PathMemo>,
    continued: bool,
) -> Option<(usize, usize, char)> {
    let b = text.as_bytes();
    let mut i = from;
    while let Some(k) = memchr::memchr3(b'\\', b'&', b'%', b.get(i..)?) {
        let p = i + k;
        if let Some(known) = known.as_deref_mut()
            && b[p] == b'\\'
        {
            let run = b[p..].iter().take(4).take_while(|&&c| c == b'\\').count();
            if matches!(b.get(p + run), Some(b'n' | b'r' | b't'))
                && path_separator(b, p, run, known)
            {
                i = p + run;
                continue;
            }
        }
        if let Some((end, c)) = escape_at(text, p, continued) {
            return Some((p, end, c));
        }
        i = p + 1;
    }
    None
}

/// The next escape at or after `from` that rsyslog writes for a control character in a
/// program's message: `#011` (a tab: Dovecot's `AUTH#0111#011PLAIN#011…#011resp=…` in
/// `/var/log/mail.log`), `#012` (a line break), `#015` (a carriage return), where another
/// stands on its line within 64 bytes of it (a message with its fields apart: one alone may
/// be a password's, `Summer#0112024!`, which folded would be cut in two, review 87) — where
/// it starts, ends, and the character.
fn next_syslog_escape(text: &str, from: usize) -> Option<(usize, usize, char)> {
    static FINDER: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
        std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b"#01"));
    let b = text.as_bytes();
    let escape = |p: usize| match b.get(p + 3) {
        Some(b'1') => Some('\t'),
        Some(b'2') => Some('\n'),
        Some(b'5') => Some('\r'),
        _ => None,
    };
    // (Another escape on its line within 64 bytes before `p` or after its end.)
    let another = |p: usize| {
        let floor = p.saturating_sub(64);
        let floor = memchr::memrchr(b'\n', &b[floor..p]).map_or(floor, |n| floor + n + 1);
        let ceiling = b.len().min(p + 4 + 64);
        let ceiling = memchr::memchr(b'\n', &b[p + 4..ceiling]).map_or(ceiling, |n| p + 4 + n);
        FINDER
            .find_iter(&b[floor..p])
            .any(|k| escape(floor + k).is_some())
            || FINDER
                .find_iter(&b[p + 4..ceiling])
                .any(|k| escape(p + 4 + k).is_some())
    };
    let mut i = from;
    while let Some(k) = FINDER.find(b.get(i..)?) {
        let p = i + k;
        match escape(p) {
            Some(c) if another(p) => return Some((p, p + 4, c)),
            _ => i = p + 1,
        }
    }
    None
}

/// Whether the run of `run` backslashes at `p` separates a Windows path's parts rather
/// than escapes the letter after it (`C:\tools\redis-cli.exe`, `D:\new`, `.\run.ps1`;
/// JSON-escaped, `C:\\tools\\redis-cli.exe`, with runs of two): read back part by part — no
/// quote, line break, `;` or character a Windows name cannot hold in a part, each after a
/// run of as many backslashes — to a drive's root (`C:` before a run) or a relative one
/// (`.`, `..` at a word's start), within 256 bytes. `known`: the last run asked of and its
/// answer, where the walk back stops: escapes are asked of in order, so each run is walked
/// past once.
fn path_separator(b: &[u8], p: usize, run: usize, known: &mut PathMemo) -> bool {
    let floor = p.saturating_sub(256);
    let part = |c: u8| {
        !matches!(
            c,
            b'\\' | b'/' | b'"' | b'\'' | b'`' | b'<' | b'>' | b'|' | b'*' | b'?' | b':' | b';'
        ) && !c.is_ascii_control()
    };
    let mut q = p;
    let answer = loop {
        if known.run == q {
            break known.path;
        }
        let k = q - b[floor..q].iter().rev().take_while(|&&c| part(c)).count();
        known.walked += q - k + 1;
        // A drive's root, `C:`, right before the run.
        if k == q
            && q >= 2
            && b[q - 1] == b':'
            && b[q - 2].is_ascii_alphabetic()
            && (q == 2 || !b[q - 3].is_ascii_alphanumeric())
        {
            break true;
        }
        // A relative root, `.` or `..`, at a word's start.
        let dots = b[k..q]
            .iter()
            .rev()
            .take(3)
            .take_while(|&&c| c == b'.')
            .count();
        if (1..=2).contains(&dots) && (q - dots == k || b[q - dots - 1] == b' ') {
            break true;
        }
        // The part before, after a run of as many backslashes (and no more).
        let before = k.checked_sub(run).filter(|&r| r >= floor);
        match before {
            Some(r)
                if k < q
                    && b[r..k].iter().all(|&c| c == b'\\')
                    && (r == 0 || b[r - 1] != b'\\') =>
            {
                q = r;
            }
            _ => break false,
        }
    };
    known.run = p;
    known.path = answer;
    answer
}

/// What [`path_separator`] last answered: where the run it was asked of starts, whether it
/// separates a path's parts; and how many bytes it has walked back in all (a test reads
/// it).
struct PathMemo {
    run: usize,
    path: bool,
    walked: usize,
}

impl Default for PathMemo {
    fn default() -> Self {
        PathMemo {
            run: usize::MAX,
            path: false,
            walked: 0,
        }
    }
}

/// Whether the `+` at `p` may be a form-encoded space: it stands between two words' letters
/// or digits (or a `)`, and a `(` or an escape's `%`): `phone=415+555+2671`,
/// `iban=GB49+HBUK+…`, `to=%2B1+%28416%29+249-5843`, `1+(416)+…` — not where a plus starts
/// a number (`+44 20 …`, `(+44 …`, `'+91 …`, `=+44`).
fn form_space_at(b: &[u8], p: usize) -> bool {
    p > 0
        && (b[p - 1].is_ascii_alphanumeric() || b[p - 1] == b')')
        && b.get(p + 1)
            .is_some_and(|&c| c.is_ascii_alphanumeric() || c == b'%' || c == b'(')
}

/// The next `+` at or after `from` that may be a form-encoded space (see
/// [`form_space_at`]).
fn next_form_space(text: &str, from: usize) -> Option<(usize, usize, char)> {
    let b = text.as_bytes();
    let mut i = from;
    while let Some(k) = memchr::memchr(b'+', b.get(i..)?) {
        let p = i + k;
        if form_space_at(b, p) {
            return Some((p, p + 1, ' '));
        }
        i = p + 1;
    }
    None
}

/// The parts of `text` to read again with `+` as a space (see [`fold_form`]), since a `+`
/// inside a value is as often a plus (a base64 key, `jane+tag@…`) as a space: each run of
/// text without white space (a form-encoded value has none) that holds a `+` that may be a
/// form-encoded space after an `=` (`phone=415+555+2671`, also as `%3D` in a link inside a
/// link), with 64 bytes on either side (a label before it, the rest of a number after it)
/// extended to white space; parts that touch are joined. Empty for most text.
pub(super) fn form_regions(text: &str) -> Vec<(usize, usize)> {
    let b = text.as_bytes();
    let has_eq = |part: &[u8]| {
        memchr::memchr(b'=', part).is_some()
            || memchr::memchr_iter(b'%', part)
                .any(|i| part[i + 1..].starts_with(b"3D") || part[i + 1..].starts_with(b"3d"))
    };
    let run_start = |i: usize| {
        b[..i]
            .iter()
            .rposition(u8::is_ascii_whitespace)
            .map_or(0, |w| w + 1)
    };
    let run_end = |i: usize| {
        b[i..]
            .iter()
            .position(u8::is_ascii_whitespace)
            .map_or(b.len(), |w| i + w)
    };
    let mut out: Vec<(usize, usize)> = Vec::new();
    // The run the last `+` looked at is in: where it starts, and whether an `=` stands in
    // it before that `+` (brought up to date only for a `+` that may be a space, reading
    // on from where it was, so the text is read once).
    let (mut run, mut eq, mut read) = (0, false, 0);
    for p in memchr::memchr_iter(b'+', b) {
        if out.last().is_some_and(|&(_, e)| p < e) || !form_space_at(b, p) {
            continue;
        }
        let gap = &b[read..p];
        match gap.iter().rposition(u8::is_ascii_whitespace) {
            Some(w) => {
                run = read + w + 1;
                eq = has_eq(&b[run..p]);
            }
            None => eq = eq || has_eq(gap),
        }
        read = p;
        if !eq {
            continue;
        }
        let start = run_start(run.saturating_sub(64));
        let end = run_end((run_end(p) + 64).min(b.len()));
        match out.last_mut() {
            Some(last) if start <= last.1 => last.1 = end,
            _ => out.push((start, end)),
        }
    }
    out
}

/// The earlier of two pending escapes.
fn earlier(
    a: Option<(usize, usize, char)>,
    b: Option<(usize, usize, char)>,
) -> Option<(usize, usize, char)> {
    match (a, b) {
        (Some(x), Some(y)) => Some(if y.0 < x.0 { y } else { x }),
        (x, None) => x,
        (None, y) => y,
    }
}

/// The folded form of `text`, or `None` when folding changes nothing (all ASCII without
/// escapes, or no character that folds): then the text is scanned as it is.
pub(super) fn fold(text: &str) -> Option<Folded> {
    fold_as(text, false, false, false, false)
}

/// [`fold`], reading rsyslog's escapes of control characters as the characters (see
/// [`next_syslog_escape`]: `AUTH#0111#011PLAIN#011…`).
pub(super) fn fold_syslog(text: &str) -> Option<Folded> {
    fold_as(text, false, false, false, true)
}

/// The parts of `text` to read again as [`fold_syslog`] reads them, since an escape there
/// is as often a password's own characters (`password=Summer#0112024!`, review 88) as a
/// tab rsyslog wrote: the real line around each escape that another stands near (at most
/// 1 KiB on either side of it); parts that touch are joined. Empty for most text.
pub(super) fn syslog_regions(text: &str) -> Vec<(usize, usize)> {
    let mut out: Vec<(usize, usize)> = Vec::new();
    let mut i = 0;
    while let Some((p, end, _)) = next_syslog_escape(text, i) {
        push_region(text, p, &mut out);
        i = out.last().map_or(end, |&(_, e)| e.max(end));
    }
    out
}

/// [`fold`], reading three backslashes before `n`, `r` or `t` as an escaped backslash and
/// then the escape — a shell's line continued in a JSON string, `"mysql -u root \\\n
/// -p…"`, where [`fold`] reads one break (as a key's lines joined so are read best,
/// `…Sk\\\n9tpy…`).
pub(super) fn fold_continued(text: &str) -> Option<Folded> {
    fold_as(text, false, false, true, false)
}

/// The parts of `text` to read again as [`fold_continued`] reads them: around each run of
/// exactly three backslashes before `n` or `r`, its real line (at most 1 KiB on either
/// side of it); parts that touch are joined. Empty for most text.
pub(super) fn continued_regions(text: &str) -> Vec<(usize, usize)> {
    let b = text.as_bytes();
    let mut out: Vec<(usize, usize)> = Vec::new();
    let mut i = 0;
    while let Some(k) = memchr::memmem::find(&b[i..], br"\\\") {
        let p = i + k;
        let run = b[p..].iter().take(4).take_while(|&&c| c == b'\\').count();
        i = p + run;
        if run == 3
            && matches!(b.get(p + run), Some(b'n' | b'r'))
            && out.last().is_none_or(|&(_, e)| p >= e)
        {
            push_region(text, p, &mut out);
        }
    }
    out
}

/// Adds the real line around `p` (at most 1 KiB on either side of it) to `out`, joined to
/// the last part where they touch.
fn push_region(text: &str, p: usize, out: &mut Vec<(usize, usize)>) {
    let b = text.as_bytes();
    let floor = p.saturating_sub(1024);
    let start = b[floor..p]
        .iter()
        .rposition(|&c| c == b'\n')
        .map_or(floor, |n| floor + n + 1);
    let ceiling = b.len().min(p + 1024);
    let end = memchr::memchr(b'\n', &b[p..ceiling]).map_or(ceiling, |n| p + n);
    let (start, end) = (
        super::floor_char_boundary(text, start),
        super::ceil_char_boundary(text, end),
    );
    match out.last_mut() {
        Some(last) if start <= last.1 => last.1 = last.1.max(end),
        _ => out.push((start, end)),
    }
}

/// [`fold`], reading every `+` that may be a form-encoded space (see [`form_space_at`]) as
/// one (`phone=415+555+2671`).
pub(super) fn fold_form(text: &str) -> Option<Folded> {
    fold_as(text, true, false, false, false)
}

/// [`fold`], reading a Windows path's separators as written, not as escapes
/// (`D:\apps\redis-cli.exe`: see [`path_separator`]).
pub(super) fn fold_paths(text: &str) -> Option<Folded> {
    fold_as(text, false, true, false, false)
}

/// The parts of `text` to read again with a Windows path's separators as written (see
/// [`fold_paths`]), since a backslash before `n`, `r` or `t` after a drive's root is as
/// often a JSON string's escape (`"Q:\nghp_…"`, `"Drive C:\n10.0.0.1"`): each real line
/// that holds such a separator (at most 1 KiB on either side of it); parts that touch are
/// joined. Empty for most text.
pub(super) fn path_regions(text: &str) -> Vec<(usize, usize)> {
    let b = text.as_bytes();
    let mut known = PathMemo::default();
    let mut out: Vec<(usize, usize)> = Vec::new();
    let mut i = 0;
    while let Some(k) = memchr::memchr(b'\\', &b[i..]) {
        let p = i + k;
        let run = b[p..].iter().take(4).take_while(|&&c| c == b'\\').count();
        i = p + run;
        if out.last().is_some_and(|&(_, e)| p < e)
            || !matches!(b.get(p + run), Some(b'n' | b'r' | b't'))
            || !path_separator(b, p, run, &mut known)
        {
            continue;
        }
        push_region(text, p, &mut out);
    }
    out
}

fn fold_as(text: &str, form: bool, paths: bool, continued: bool, syslog: bool) -> Option<Folded> {
    // The next character to fold and the next escape, each found once and kept until the
    // copy passes it (so the text is searched once for each).
    let mut char_at = next_folding(text, 0);
    // Escapes, and form-encoded spaces: each stream searched once, the earlier one taken.
    let mut known = PathMemo::default();
    let mut coded_at = next_escape(text, 0, paths.then_some(&mut known), continued);
    let mut plus_at = if form { next_form_space(text, 0) } else { None };
    let mut syslog_at = if syslog {
        next_syslog_escape(text, 0)
    } else {
        None
    };
    let mut esc_at = earlier(earlier(coded_at, plus_at), syslog_at);
    if char_at.is_none() && esc_at.is_none() {
        return None;
    }
    let mut out = String::with_capacity(text.len());
    let mut changes = Vec::new();
    let mut buf = [0u8; 8];
    // Unchanged text is copied in runs.
    let mut copied = 0;
    loop {
        let (a, b, c) = match (char_at, esc_at) {
            (Some(a), Some((e, _, _))) if a < e => {
                let c = text[a..].chars().next()?;
                (a, a + c.len_utf8(), c)
            }
            (None | Some(_), Some((e, end, c))) => (e, end, c),
            (Some(a), None) => {
                let c = text[a..].chars().next()?;
                (a, a + c.len_utf8(), c)
            }
            (None, None) => break,
        };
        // What the character becomes: nothing, its ASCII, or (from an escape) itself.
        let escaped = b - a != c.len_utf8() || !text[a..b].starts_with(c);
        let n = if invisible(c) {
            Some(0)
        } else if let Some(n) = ascii_of(c, &mut buf) {
            Some(n)
        } else if escaped {
            Some(c.encode_utf8(&mut buf).len())
        } else {
            None
        };
        if let Some(n) = n {
            out.push_str(&text[copied..a]);
            copied = b;
            changes.push((out.len(), n, a, b));
            out.push_str(std::str::from_utf8(&buf[..n]).unwrap_or_default());
        }
        if char_at.is_some_and(|x| x < b) {
            char_at = next_folding(text, b);
        }
        if coded_at.is_some_and(|(x, _, _)| x < b) {
            coded_at = next_escape(text, b, paths.then_some(&mut known), continued);
        }
        if plus_at.is_some_and(|(x, _, _)| x < b) {
            plus_at = next_form_space(text, b);
        }
        if syslog_at.is_some_and(|(x, _, _)| x < b) {
            syslog_at = next_syslog_escape(text, b);
        }
        esc_at = earlier(earlier(coded_at, plus_at), syslog_at);
    }
    if changes.is_empty() {
        return None;
    }
    out.push_str(&text[copied..]);
    Some(Folded { text: out, changes })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// In the reading with a path's separators as written (`fold_paths`), a Windows path's
    /// backslashes before `n`, `r`, `t` are its separators, not escapes — after a drive's
    /// root or a relative one, JSON-escaped too, with blanks in its parts — while a JSON
    /// string's line breaks and tabs still fold.
    #[test]
    fn a_windows_paths_separators_are_no_escapes() {
        for path in [
            r"C:\tools\redis\redis-cli.exe -a x",
            r"C:\Program Files\WinRAR\rar.exe",
            r"D:\new\table.txt",
            r"PS C:\redis> .\redis-cli.exe",
            r"..\tools\net.exe",
            r#"{"cmd": "C:\\Users\\bob\\redis-cli.exe"}"#,
        ] {
            let folded = fold_paths(path).map_or(path.to_owned(), |f| f.text);
            assert_eq!(folded, path, "{path}");
        }
        for (text, want) in [
            (r"line one\nline two\tend", "line one\nline two\tend"),
            (
                r#"{"a": "x\ny", "p": "C:\\dir\nnext"}"#,
                "{\"a\": \"x\ny\", \"p\": \"C:\\\\dir\nnext\"}",
            ),
            (r"C:\tools; \ttab", "C:\\tools; \ttab"),
            (r"size 1:\n2", "size 1:\n2"),
        ] {
            assert_eq!(
                fold_paths(text).map(|f| f.text).as_deref(),
                Some(want),
                "{text}"
            );
        }
    }

    /// The lines read again with a path's separators as written: only those that hold one.
    #[test]
    fn only_lines_with_a_paths_separator_are_read_again() {
        assert_eq!(path_regions(r#"{"a": "x\ny\tz", "b": "C:/tools"}"#), []);
        let text = "ok\nrun C:\\tools\\x.exe -a pw\nnext\n";
        assert_eq!(path_regions(text), [(3, 27)]);
        assert_eq!(&text[3..27], r"run C:\tools\x.exe -a pw");
    }

    /// Each run of backslashes is walked past once: a path's parts, or parts that lead to
    /// no root, in runs as long as the text, cost a bounded walk per byte.
    #[test]
    fn reading_paths_back_is_linear() {
        for unit in [
            r"\a",
            r"\n",
            r"a\n",
            r"C:\a\n",
            r"\a\a\a\a\a\a\a\n",
            r". \r",
        ] {
            for n in [1_000, 4_000] {
                let text = unit.repeat(n);
                let mut known = PathMemo::default();
                let mut i = 0;
                while let Some((_, end, _)) = next_escape(&text, i, Some(&mut known), false) {
                    i = end;
                }
                assert!(
                    known.walked <= 2 * text.len(),
                    "{unit} x{n}: {}",
                    known.walked
                );
            }
        }
    }

    #[test]
    fn dashes_and_every_scripts_digits_fold() {
        let f = fold("call ٤١٥–٥٥٥‑٢٦٧١ or ४१५−५५५ ok").unwrap();
        assert_eq!(f.text, "call 415-555-2671 or 415-555 ok");
        for zero in DIGIT_ZEROS {
            for d in 0..10 {
                let c = char::from_u32(zero + d).unwrap();
                assert!(c.is_numeric(), "U+{:04X}", zero + d);
                assert_eq!(ascii_beyond_nfkc(c), Some(b'0' + d as u8));
            }
        }
        assert_eq!(ascii_beyond_nfkc('a'), None);
        assert_eq!(ascii_beyond_nfkc('\u{65F}'), None);
    }

    #[test]
    fn the_prefilter_admits_every_character_that_folds_to_ascii() {
        let mut buf = [0u8; 8];
        let mut missing = Vec::new();
        for c in (0x80..=0x10FFFFu32).filter_map(char::from_u32) {
            let mut n = 0;
            let mut ascii = true;
            decompose_compatible(c, |d| {
                ascii &= d.is_ascii();
                n += 1;
            });
            if ascii && n > 0 {
                if !may_fold(c) {
                    missing.push(format!("U+{:04X}", c as u32));
                    continue;
                }
                assert!(
                    ascii_of(c, &mut buf).is_some() || n > 8,
                    "U+{:04X}",
                    c as u32
                );
            }
        }
        assert!(
            missing.is_empty(),
            "fold to ASCII but are not admitted: {missing:?}"
        );
    }

    #[test]
    fn the_table_answers_for_every_character_as_folding_does() {
        let folds = bmp_folds();
        let mut folding = 0;
        for c in (0x80..0x1_0000u32).filter_map(char::from_u32) {
            assert_eq!(
                needs_folding_fast(c, folds),
                needs_folding(c),
                "U+{:04X}",
                c as u32
            );
            folding += usize::from(needs_folding(c));
        }
        // Fullwidth forms, exotic spaces and digits, invisibles: thousands, not the plane.
        assert!((1_000..20_000).contains(&folding), "{folding}");
    }

    #[test]
    fn json_line_breaks_url_punctuation_and_every_invisible_fold() {
        // A JSON string's `\n` (once, twice or three times escaped), `\t`, `\r`, `\/`; a URL's
        // encoded punctuation; HTML's `&shy;`; the invisibles a word can hide.
        for (t, want) in [
            (r"a\nAKIA", "a\nAKIA"),
            (r"a\\nb\\\nc\td\re\/f", "a\nb\nc\td\re/f"),
            ("key%3Dv%0Aw%2Fx%22y", "key=v\nw/x\"y"),
            ("41&shy;11", "4111"),
            (
                "4\u{200E}1\u{200F}1\u{202A}1\u{2066}1\u{061C}1\u{034F}1\u{FE0F}1\u{E0020}1\u{3164}1",
                "4111111111",
            ),
        ] {
            let f = fold(t).unwrap();
            assert_eq!(f.text, want, "{t:?}");
        }
        // rsyslog's escapes of a tab, a line break and a carriage return, each with another
        // near, in their own reading; not another control character's, nor HTML's entity
        // read as one.
        assert_eq!(
            fold_syslog("a#0111#011b#012c#015d#013e&#011;f")
                .unwrap()
                .text,
            "a\t1\tb\nc\rd#013e\u{b}f"
        );
        // (One of rsyslog's escapes alone: a password's, `Summer#0112024!`, review 87; and
        // none in the reading of the text as it is, review 88.)
        assert!(fold_syslog("DB_PASSWORD=Summer#0112024!xQ").is_none());
        assert!(fold("a#0111#011b").is_none());
        assert_eq!(syslog_regions("x\nAUTH#0111#011PLAIN\ny #011"), [(2, 20)]);
        // A value after an escaped line break maps back to itself, not to the escape.
        let t = r"x\nAKIA";
        let f = fold(t).unwrap();
        let at = f.text.find("AKIA").unwrap();
        assert_eq!(
            f.original(at, f.text.len()),
            (t.find("AKIA").unwrap(), t.len())
        );
        // Four backslashes are not an escape this reads.
        assert!(fold(r"a\\\\").is_none());
        // Three before a break or a tab, as `fold_continued` reads them: a backslash, then
        // the break (a shell's line continued in a JSON string), the break mapped back to
        // its escape; as `fold` reads them, one break.
        for (t, want) in [
            (r"ls \\\n  -l", "ls \\\n  -l"),
            (r"ls \\\r\n  -l", "ls \\\r\n  -l"),
            (r"ls \\\t-l", "ls \\\t-l"),
        ] {
            let f = fold_continued(t).unwrap();
            assert_eq!(f.text, want, "{t:?}");
            assert_eq!(f.original(3, 4), (3, 4), "{t:?}");
            assert_eq!(f.original(4, 5), (4, 7), "{t:?}");
            assert!(!fold(t).unwrap().text.contains('\\'), "{t:?}");
        }
        // The parts read so: each line that holds exactly three before `n` or `r`.
        let t = "a\nb \\\\\\n c\nd \\\\n e\nf \\\\\\\\n g";
        assert_eq!(continued_regions(t), [(2, 10)]);
    }

    /// Box drawing folds to the ASCII table it draws, each character mapped back whole.
    #[test]
    fn box_drawing_folds_to_an_ascii_table() {
        let t = "┌──┬──┐\n│ a ┃ b ║\n╞══╪══╡\n╰──┴──╯ ╱";
        let f = fold(t).unwrap();
        assert_eq!(f.text, "+--+--+\n| a | b |\n+--+--+\n+--+--+ ╱");
        let b = f.text.find('b').unwrap();
        let (s, e) = f.original(b, b + 3);
        assert_eq!(&t[s..e], "b ║");
    }

    #[test]
    fn fullwidth_spaces_and_invisibles_fold_and_map_back() {
        let t = "card ４１１１\u{00A0}1111\u{200B}x ＠ é";
        let f = fold(t).unwrap();
        assert_eq!(f.text, "card 4111 1111x @ é");
        let s = f.text.find("4111").unwrap();
        let (a, b) = f.original(s, s + "4111 1111x".len());
        assert_eq!(&t[a..b], "４１１１\u{00A0}1111\u{200B}x");
        let e = f.text.find('é').unwrap();
        assert_eq!(f.original(e, e + 2), (t.find('é').unwrap(), t.len()));
        assert!(fold("plain ascii").is_none());
        assert!(fold("a+b 1+ +1 c++ 1e+10 =+44 phone=415+555+2671").is_none());
        assert!(fold_form("1+ +1 a + b").is_none());
        let f = fold_form("phone=415+555+2671").unwrap();
        assert_eq!(f.text, "phone=415 555 2671");
        assert!(
            fold("a & b \\ c &amp; \\q %25 %41 %+A %+9 %2541 %2525 &amp;amp; &amp;x;").is_none()
        );
        let t = r"card 4111\u00a01111&nbsp;1111&#160;1111, mail jos\u00e9&#64;example.com";
        let f = fold(t).unwrap();
        assert_eq!(f.text, "card 4111 1111 1111 1111, mail josé@example.com");
        let at = f.text.find("josé").unwrap();
        let (a, b) = f.original(at, f.text.len());
        assert_eq!(&t[a..b], r"jos\u00e9&#64;example.com");
        let t = "a\u{200B}\u{200B}b ＠x";
        let f = fold(t).unwrap();
        assert_eq!(f.text, "ab @x");
        assert_eq!(f.original(0, 2), (0, t.find(' ').unwrap()));
        let at = f.text.find('@').unwrap();
        assert_eq!(
            &t[f.original(at, at + 2).0..f.original(at, at + 2).1],
            "＠x"
        );
        assert!(fold("déjà vu, 東京").is_none());
    }
}
