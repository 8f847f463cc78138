//! PII and secret detection: one fast pass over the text finds candidates with a single
//! combined, ASCII-only pattern, then each candidate is validated (Luhn, mod-97, octet ranges,
//! SSA rules, NANP rules, context for bare numbers).
//!
//! Offsets are UTF-8 byte offsets and always fall on character boundaries.

use std::fmt;
use std::net::Ipv6Addr;

use regex_automata::meta::Regex as MetaRegex;
use regex_automata::util::syntax;
use regex_automata::{Anchored, Input, MatchKind, PatternID, PatternSet};
use serde::{Deserialize, Serialize};

/// A kind of personal data or secret.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[non_exhaustive]
pub enum Entity {
    /// An e-mail address.
    #[serde(rename = "EMAIL_ADDRESS")]
    Email,
    /// A phone number (international, NANP, common national formats).
    #[serde(rename = "PHONE_NUMBER")]
    Phone,
    /// A US social security number (SSA rules).
    #[serde(rename = "US_SSN")]
    Ssn,
    /// A payment card number (Luhn and brand).
    #[serde(rename = "CREDIT_CARD")]
    CreditCard,
    /// An IPv4 or IPv6 address.
    #[serde(rename = "IP_ADDRESS")]
    IpAddress,
    /// An IBAN (mod-97 and the country's length).
    #[serde(rename = "IBAN_CODE")]
    Iban,
    /// An API key, token or private key in a well-known format.
    #[serde(rename = "SECRET")]
    Secret,
}

impl Entity {
    /// Every entity.
    pub const ALL: [Entity; 7] = [
        Entity::Email,
        Entity::Phone,
        Entity::Ssn,
        Entity::CreditCard,
        Entity::IpAddress,
        Entity::Iban,
        Entity::Secret,
    ];

    /// The label used by Presidio and the dev set, e.g. `EMAIL_ADDRESS`.
    pub fn label(self) -> &'static str {
        match self {
            Entity::Email => "EMAIL_ADDRESS",
            Entity::Phone => "PHONE_NUMBER",
            Entity::Ssn => "US_SSN",
            Entity::CreditCard => "CREDIT_CARD",
            Entity::IpAddress => "IP_ADDRESS",
            Entity::Iban => "IBAN_CODE",
            Entity::Secret => "SECRET",
        }
    }

    /// The detector's name in rule names: `pii_<detector>`.
    pub fn detector(self) -> &'static str {
        match self {
            Entity::Email => "email",
            Entity::Phone => "phone",
            Entity::Ssn => "ssn",
            Entity::CreditCard => "credit_card",
            Entity::IpAddress => "ip_address",
            Entity::Iban => "iban",
            Entity::Secret => "secret",
        }
    }

    /// The text that replaces it, e.g. `[REDACTED_EMAIL]`.
    pub fn placeholder(self) -> &'static str {
        match self {
            Entity::Email => "[REDACTED_EMAIL]",
            Entity::Phone => "[REDACTED_PHONE]",
            Entity::Ssn => "[REDACTED_SSN]",
            Entity::CreditCard => "[REDACTED_CREDIT_CARD]",
            Entity::IpAddress => "[REDACTED_IP_ADDRESS]",
            Entity::Iban => "[REDACTED_IBAN]",
            Entity::Secret => "[REDACTED_SECRET]",
        }
    }

    /// A description that names the kind, never the value.
    pub fn description(self) -> &'static str {
        match self {
            Entity::Email => "e-mail address",
            Entity::Phone => "phone number",
            Entity::Ssn => "US social security number",
            Entity::CreditCard => "credit card number",
            Entity::IpAddress => "IP address",
            Entity::Iban => "IBAN",
            Entity::Secret => "secret (API key, token or private key)",
        }
    }
}

impl fmt::Display for Entity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.label())
    }
}

/// One detected entity: a byte span of the scanned text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Detection {
    /// Start (UTF-8 byte offset, inclusive).
    pub start: usize,
    /// End (UTF-8 byte offset, exclusive).
    pub end: usize,
    /// What it is.
    pub entity: Entity,
}

const B: &str = r"(?-u:\b)";

/// The lazy DFA's cache for the combined pattern: large enough that scanning never falls back
/// to the slow engines.
const DFA_CACHE_BYTES: usize = 256 << 20;

type Validate = fn(&str, usize, usize) -> Option<(usize, usize)>;

/// One detector: a cheap `trigger` (an alternative of the combined pass), the exact pattern,
/// how far past the trigger the exact match may reach, and the validator.
struct Kind {
    entity: Entity,
    re: MetaRegex,
    window: usize,
    /// The exact match must start where the trigger did (otherwise: anywhere in the window).
    anchored: bool,
    validate: Validate,
}

struct Spec {
    entity: Entity,
    /// Which scan pass the trigger joins (see [`PiiDetector`]).
    pass: usize,
    trigger: String,
    exact: String,
    window: usize,
    anchored: bool,
    validate: Validate,
}

/// Pass 0: triggers that start with literals (a prefilter skips most text); pass 1: e-mail
/// (found from its `@`); pass 2: the digit-led formats, one lazy DFA.
const PASSES: usize = 3;
const DENSE_PASS: usize = 2;

fn spec(
    entity: Entity,
    pass: usize,
    trigger: String,
    exact: String,
    window: usize,
    validate: Validate,
) -> Spec {
    Spec {
        entity,
        pass,
        trigger,
        exact,
        window,
        anchored: true,
        validate,
    }
}

fn specs() -> Vec<Spec> {
    let nl = r"(?:\r?\n|\\r\\n|\\n)";
    let pem = format!(
        r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----{nl}(?:(?:[A-Za-z0-9+/=]{{1,100}}|[A-Za-z-]{{1,40}}: [A-Za-z0-9,-]{{1,100}}){nl})*-----END (?:[A-Z0-9]+ )*PRIVATE KEY-----"
    );
    let secret = [
        pem,
        format!(
            r"{B}(?:A3T[A-Z0-9]|AKIA|ASIA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA|ABIA|ACCA)[A-Z0-9]{{16}}{B}"
        ),
        format!(r"{B}gh[pousr]_[A-Za-z0-9]{{36,255}}{B}"),
        format!(r"{B}github_pat_[A-Za-z0-9_]{{22,255}}{B}"),
        format!(r"{B}sk-[A-Za-z0-9_-]{{20,400}}"),
        format!(r"{B}(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{{16,255}}{B}"),
        format!(r"{B}xox[abposre]-[A-Za-z0-9-]{{10,255}}"),
        format!(r"{B}AIza[0-9A-Za-z_-]{{35}}"),
        format!(r"{B}hf_[A-Za-z0-9]{{30,64}}{B}"),
        format!(
            r"{B}eyJ[A-Za-z0-9_-]{{5,4096}}\.eyJ[A-Za-z0-9_-]{{5,8192}}\.[A-Za-z0-9_-]{{10,1024}}"
        ),
    ]
    .join("|");
    let email = format!(
        r"[A-Za-z0-9._%+-]{{1,64}}@[A-Za-z0-9-]{{1,63}}(?:\.[A-Za-z0-9-]{{1,63}}){{0,8}}\.[A-Za-z]{{2,24}}{B}"
    );
    let iban = format!(r"{B}[A-Z]{{2}}[0-9]{{2}}(?: ?[A-Z0-9]){{11,30}}");
    let card = format!(
        r"{B}(?:[0-9]{{13,19}}|[0-9]{{4}}(?:[ -][0-9]{{4}}){{2,3}}(?:[ -][0-9]{{1,3}})?|[0-9]{{4}}[ -][0-9]{{6}}[ -][0-9]{{4,5}}){B}"
    );
    let ipv6 = r"(?:^|[^0-9A-Za-z_:./])(?:(?:[0-9A-Fa-f]{0,4}:){3,8}[0-9A-Fa-f]{0,4}(?:\.[0-9]{1,3}){0,3}|[0-9A-Fa-f]{1,4}::[0-9A-Fa-f]{1,4})".to_owned();
    let ipv4 = format!(r"{B}[0-9]{{1,3}}(?:\.[0-9]{{1,3}}){{3}}{B}");
    let ssn = format!(
        r"{B}(?:[0-9]{{3}}-[0-9]{{2}}-[0-9]{{4}}|[0-9]{{3}} [0-9]{{2}} [0-9]{{4}}|[0-9]{{9}}){B}"
    );
    let nanp_digits = r"(?:[2-9][0-9]{2}-[2-9][0-9]{2}-[0-9]{4}|[2-9][0-9]{2}\.[2-9][0-9]{2}\.[0-9]{4}|[2-9][0-9]{2}[2-9][0-9]{6})";
    let nanp_paren = r"\([2-9][0-9]{2}\) ?[2-9][0-9]{2}-[0-9]{4}";
    // Phones may follow an escaped newline (`\\n`) inside JSON strings: the escape is consumed
    // here and skipped by the validator.
    let esc = format!(r"(?:\\[nrt]|{B})");
    let phone = [
        format!(r"\+1[ -]?(?:{nanp_digits}|{nanp_paren}){B}"),
        format!(r"\+1 [2-9][0-9]{{2}} [2-9][0-9]{{2}} [0-9]{{4}}{B}"),
        format!(r"{esc}1-{nanp_digits}{B}"),
        format!(r"{esc}{nanp_digits}{B}"),
        format!(r"{nanp_paren}{B}"),
        format!(r"\+[2-9][0-9]{{0,2}}(?:[ -][0-9]{{1,8}}){{1,6}}{B}"),
        format!(r"{esc}0[1-9](?: [0-9]{{2}}){{4}}{B}"),
        format!(r"{esc}0[1-9][0-9]{{1,3}} [0-9]{{3,8}}(?: [0-9]{{3,4}})?{B}"),
    ]
    .join("|");
    // AWS secret access keys: 40 characters between non-key borders, only after a key name:
    // the name is the trigger, the key is searched for right after it.
    let aws_secret = r"(?:^|[^A-Za-z0-9/+])[A-Za-z0-9/+]{40}(?:[^A-Za-z0-9/+=]|$)".to_owned();
    let aws_trigger =
        r"(?i-u:secret_?access_?key|secret-access-key|aws_secret|secret_key)".to_owned();
    // Triggers: short prefixes of the exact patterns, so the combined pass stays a small DFA.
    let secret_trigger = format!(
        r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----|{B}(?:A3T[A-Z0-9]|AKIA|ASIA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA|ABIA|ACCA)[A-Z0-9]{{4}}|{B}gh[pousr]_[A-Za-z0-9]{{8}}|{B}github_pat_|{B}sk-[A-Za-z0-9_-]{{8}}|{B}[srp]k_(?:live|test)_|{B}xox[abposre]-|{B}AIza[0-9A-Za-z_-]{{4}}|{B}hf_[A-Za-z0-9]{{8}}|{B}eyJ[A-Za-z0-9_-]+\.eyJ"
    );
    let email_trigger = r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+\.".to_owned();
    let iban_trigger = format!(r"{B}[A-Z]{{2}}[0-9]{{2}} ?[A-Z0-9]{{4}}");
    let ipv6_trigger = r"(?:^|[^0-9A-Za-z_:./])(?:[0-9A-Fa-f]{0,4}:[0-9A-Fa-f]{0,4}:[0-9A-Fa-f]{0,4}:|[0-9A-Fa-f]{1,4}::[0-9A-Fa-f])".to_owned();
    let ipv4_trigger = format!(r"{B}[0-9]{{1,3}}\.[0-9]{{1,3}}\.[0-9]{{1,3}}\.[0-9]");
    let phone_trigger = format!(
        r"\+[1-9][0-9]{{0,2}}[ -]?[0-9(]|\([2-9][0-9]{{2}}\) ?[2-9]|{esc}1-[2-9]|{esc}[2-9][0-9]{{2}}[-.][2-9][0-9]{{2}}[-.][0-9]{{4}}|{esc}[2-9][0-9]{{2}}[2-9][0-9]{{6}}{B}|{esc}0[1-9][0-9]{{0,3}} [0-9]{{2}}"
    );
    vec![
        spec(
            Entity::Secret,
            0,
            secret_trigger,
            secret,
            65_536,
            validate_secret,
        ),
        Spec {
            entity: Entity::Secret,
            pass: 0,
            trigger: aws_trigger,
            exact: aws_secret,
            window: 96,
            anchored: false,
            validate: validate_aws_border,
        },
        spec(Entity::Email, 1, email_trigger, email, 400, validate_email),
        spec(Entity::Iban, 2, iban_trigger, iban, 80, validate_iban),
        spec(Entity::CreditCard, 2, card.clone(), card, 40, validate_card),
        spec(Entity::IpAddress, 2, ipv6_trigger, ipv6, 64, validate_ipv6),
        spec(Entity::IpAddress, 2, ipv4_trigger, ipv4, 24, validate_ipv4),
        spec(Entity::Ssn, 2, ssn.clone(), ssn, 24, validate_ssn),
        spec(Entity::Phone, 2, phone_trigger, phone, 40, validate_phone),
    ]
}

/// Finds PII and secrets in text.
///
/// ```
/// use hooks_guardrails::{Entity, PiiDetector};
/// let d = PiiDetector::new();
/// let found = d.detect("mail jane.doe@example.com, card 4111 1111 1111 1111, order 4111 1111 1111 1112");
/// let kinds: Vec<Entity> = found.iter().map(|f| f.entity).collect();
/// assert_eq!(kinds, [Entity::Email, Entity::CreditCard]);
/// ```
pub struct PiiDetector {
    passes: Vec<Pass>,
    kinds: Vec<Kind>,
}

impl Pass {
    fn search(&self, text: &str, at: usize) -> Option<regex_automata::Match> {
        let input = Input::new(text).range(at..);
        match &self.dense {
            // Our patterns have no quit bytes, so the DFA cannot fail; if it ever did, the lazy
            // engine answers instead.
            Some(dfa) => dfa
                .try_search(&input)
                .unwrap_or_else(|_| self.re.search(&input)),
            None => self.re.search(&input),
        }
    }
}

/// One scan: the triggers of some kinds, one pattern each, so a match says which kind fired.
struct Pass {
    re: MetaRegex,
    /// For the digit-led pass: the same triggers as a fully built DFA (about 20% faster than
    /// the lazy one; built once per detector in a few milliseconds).
    dense: Option<regex_automata::dfa::regex::Regex>,
    /// The same triggers with all-matches semantics: which of them match at a position.
    all: MetaRegex,
    /// The kind (index into `kinds`) of each pattern.
    kinds: Vec<usize>,
}

impl fmt::Debug for PiiDetector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut entities: Vec<Entity> = self.kinds.iter().map(|k| k.entity).collect();
        entities.dedup();
        f.debug_struct("PiiDetector")
            .field("entities", &entities)
            .finish()
    }
}

impl Default for PiiDetector {
    fn default() -> Self {
        Self::new()
    }
}

impl PiiDetector {
    /// A detector for every [`Entity`].
    pub fn new() -> Self {
        Self::for_entities(&Entity::ALL)
    }

    /// A detector for `entities` only.
    pub fn for_entities(entities: &[Entity]) -> Self {
        let specs: Vec<Spec> = specs()
            .into_iter()
            .filter(|sp| entities.contains(&sp.entity))
            .collect();
        // The patterns are constants of this module; the unit tests compile them all, so a
        // failure here cannot happen at run time. Should it, the detector finds nothing rather
        // than panicking.
        let kinds: Vec<Kind> = specs
            .iter()
            .filter_map(|sp| {
                let re = MetaRegex::new(&sp.exact).ok()?;
                Some(Kind {
                    entity: sp.entity,
                    re,
                    window: sp.window,
                    anchored: sp.anchored,
                    validate: sp.validate,
                })
            })
            .collect();
        if kinds.len() != specs.len() {
            return Self {
                passes: Vec::new(),
                kinds: Vec::new(),
            };
        }
        let mut passes = Vec::new();
        for pass in 0..PASSES {
            let members: Vec<usize> = (0..specs.len())
                .filter(|&i| specs[i].pass == pass)
                .collect();
            if members.is_empty() {
                continue;
            }
            let triggers: Vec<&str> = members.iter().map(|&i| specs[i].trigger.as_str()).collect();
            let build = |kind: MatchKind| {
                MetaRegex::builder()
                    .configure(
                        MetaRegex::config()
                            .match_kind(kind)
                            .hybrid_cache_capacity(DFA_CACHE_BYTES)
                            .nfa_size_limit(Some(64 << 20)),
                    )
                    .syntax(syntax::Config::new())
                    .build_many(&triggers)
                    .ok()
            };
            let dense = (pass == DENSE_PASS)
                .then(|| {
                    regex_automata::dfa::regex::Regex::builder()
                        .dense(regex_automata::dfa::dense::Config::new().minimize(false))
                        .build_many(&triggers)
                        .ok()
                })
                .flatten();
            match (build(MatchKind::LeftmostFirst), build(MatchKind::All)) {
                (Some(re), Some(all)) => passes.push(Pass {
                    re,
                    dense,
                    all,
                    kinds: members,
                }),
                _ => {
                    return Self {
                        passes: Vec::new(),
                        kinds: Vec::new(),
                    };
                }
            }
        }
        Self { passes, kinds }
    }

    /// Every entity in `text`, in order, without overlaps.
    ///
    /// The passes run side by side: the earliest pending trigger is validated next; after a
    /// detection, every pass resumes past it.
    pub fn detect(&self, text: &str) -> Vec<Detection> {
        let mut out = Vec::new();
        self.scan(text, |d| {
            out.push(d);
            true
        });
        out
    }

    /// True when `text` holds at least one entity.
    pub fn contains_any(&self, text: &str) -> bool {
        let mut any = false;
        self.scan(text, |_| {
            any = true;
            false
        });
        any
    }

    /// Calls `found` for each detection in order until it returns false.
    fn scan(&self, text: &str, mut found: impl FnMut(Detection) -> bool) {
        #[derive(Clone, Copy)]
        enum Slot {
            Unknown,
            Done,
            At(regex_automata::Match),
        }
        let mut slots = [Slot::Unknown; PASSES];
        let mut set: Option<PatternSet> = None;
        let mut at = 0;
        while at <= text.len() {
            let mut min = usize::MAX;
            for (slot, pass) in slots.iter_mut().zip(&self.passes) {
                let stale = match slot {
                    Slot::Unknown => true,
                    Slot::At(m) => m.start() < at,
                    Slot::Done => false,
                };
                if stale {
                    *slot = match pass.search(text, at) {
                        Some(m) => Slot::At(m),
                        None => Slot::Done,
                    };
                }
                if let Slot::At(m) = slot {
                    min = min.min(m.start());
                }
            }
            if min == usize::MAX {
                return;
            }
            let hit = slots
                .iter()
                .zip(&self.passes)
                .find_map(|(slot, pass)| match slot {
                    Slot::At(m) if m.start() == min => {
                        self.validate_at(text, pass, m.start(), m.pattern(), &mut set)
                    }
                    _ => None,
                });
            match hit {
                Some(d) => {
                    at = d.end.max(min + 1);
                    if !found(d) {
                        return;
                    }
                }
                None => at = next_char(text, min),
            }
        }
    }

    /// Validates the kind whose trigger fired at `s`, then any other kind of the same pass whose
    /// trigger also matches there (one anchored search finds them: the cost is bounded by the
    /// longest trigger).
    fn validate_at(
        &self,
        text: &str,
        pass: &Pass,
        s: usize,
        fired: PatternID,
        set: &mut Option<PatternSet>,
    ) -> Option<Detection> {
        if let Some(d) = self.validate_kind(text, pass.kinds[fired.as_usize()], s) {
            return Some(d);
        }
        if pass.kinds.len() == 1 {
            return None;
        }
        let set = set.get_or_insert_with(|| PatternSet::new(self.kinds.len()));
        set.clear();
        pass.all
            .which_overlapping_matches(&Input::new(text).range(s..).anchored(Anchored::Yes), set);
        set.iter()
            .filter(|&p| p != fired)
            .find_map(|p| self.validate_kind(text, pass.kinds[p.as_usize()], s))
    }

    fn validate_kind(&self, text: &str, kind: usize, s: usize) -> Option<Detection> {
        let kind = &self.kinds[kind];
        let cut = ceil_char_boundary(text, s.saturating_add(kind.window));
        let anchored = if kind.anchored {
            Anchored::Yes
        } else {
            Anchored::No
        };
        let m = kind
            .re
            .search(&Input::new(text).range(s..cut).anchored(anchored))?;
        let (start, end) = (kind.validate)(text, m.start(), m.end())?;
        Some(Detection {
            start,
            end,
            entity: kind.entity,
        })
    }

    /// Replaces every entity in `text` with its placeholder; returns the new text (borrowed when
    /// nothing was found) and what the first pass replaced (offsets into the original).
    ///
    /// Redaction can uncover an entity that its neighbour hid (in `a@b.io+1 (978) 917-3444`
    /// the phone number is glued to the address), so it repeats until nothing is left (at most
    /// [`MAX_REDACTION_PASSES`] passes): the output holds no entity, and redacting it again
    /// changes nothing.
    pub fn redact<'t>(&self, text: &'t str) -> (std::borrow::Cow<'t, str>, Vec<Detection>) {
        let found = self.detect(text);
        if found.is_empty() {
            return (std::borrow::Cow::Borrowed(text), found);
        }
        let mut out = replace_all(text, &found);
        for _ in 1..MAX_REDACTION_PASSES {
            let more = self.detect(&out);
            if more.is_empty() {
                break;
            }
            out = replace_all(&out, &more);
        }
        (std::borrow::Cow::Owned(out), found)
    }
}

/// The most passes [`PiiDetector::redact`] makes.
pub const MAX_REDACTION_PASSES: usize = 4;

fn replace_all(text: &str, found: &[Detection]) -> String {
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    for d in found {
        out.push_str(&text[last..d.start]);
        out.push_str(d.entity.placeholder());
        last = d.end;
    }
    out.push_str(&text[last..]);
    out
}

fn next_char(text: &str, s: usize) -> usize {
    text[s..]
        .chars()
        .next()
        .map_or(text.len(), |c| s + c.len_utf8())
}

fn ceil_char_boundary(text: &str, i: usize) -> usize {
    if i >= text.len() {
        return text.len();
    }
    let mut i = i;
    while !text.is_char_boundary(i) {
        i += 1;
    }
    i
}

fn byte_before(text: &str, s: usize) -> Option<u8> {
    s.checked_sub(1).map(|i| text.as_bytes()[i])
}

fn byte_at(text: &str, i: usize) -> Option<u8> {
    text.as_bytes().get(i).copied()
}

fn is_digit(b: Option<u8>) -> bool {
    b.is_some_and(|b| b.is_ascii_digit())
}

fn is_alnum(b: Option<u8>) -> bool {
    b.is_some_and(|b| b.is_ascii_alphanumeric())
}

/// True when a separator and a digit follow `e` (the number goes on).
fn continues_after(text: &str, e: usize, seps: &[u8]) -> bool {
    byte_at(text, e).is_some_and(|b| seps.contains(&b)) && is_digit(byte_at(text, e + 1))
}

/// True when a digit and a separator precede `s`.
fn continues_before(text: &str, s: usize, seps: &[u8]) -> bool {
    byte_before(text, s).is_some_and(|b| seps.contains(&b))
        && s >= 2
        && is_digit(byte_at(text, s - 2))
}

fn digits(s: &str) -> Vec<u8> {
    s.bytes()
        .filter(u8::is_ascii_digit)
        .map(|b| b - b'0')
        .collect()
}

// ---- validators ---------------------------------------------------------------------------

fn validate_secret(text: &str, s: usize, e: usize) -> Option<(usize, usize)> {
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

fn validate_aws_border(text: &str, s: usize, e: usize) -> Option<(usize, usize)> {
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

/// The names that give a value the context some detectors need: a bare nine-digit SSN after
/// `ssn` or `social security`, an AWS secret access key after a `secret…` key name.
const CONTEXT_WORDS: [&str; 3] = ["ssn", "social", "secret"];

/// True when a JSON key like `key` can make a value detectable that is not on its own (see
/// [`CONTEXT_WORDS`]); other keys add nothing, so their values are judged bare.
pub(crate) fn key_gives_context(key: &str) -> bool {
    CONTEXT_WORDS
        .iter()
        .any(|w| contains_ignore_ascii_case(key, w))
}

fn validate_aws_secret(text: &str, s: usize, e: usize) -> Option<(usize, usize)> {
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

fn validate_email(text: &str, s: usize, e: usize) -> Option<(usize, usize)> {
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
fn iban_length(cc: &str) -> Option<usize> {
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

fn validate_iban(text: &str, s: usize, e: usize) -> Option<(usize, usize)> {
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

fn luhn_ok(d: &[u8]) -> bool {
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

fn card_brand_ok(d: &[u8]) -> bool {
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

fn validate_card(text: &str, s: usize, e: usize) -> Option<(usize, usize)> {
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

fn validate_ipv4(text: &str, s: usize, e: usize) -> Option<(usize, usize)> {
    if continues_after(text, e, b".") || continues_before(text, s, b".") {
        return None;
    }
    let ok = text[s..e]
        .split('.')
        .all(|o| o.parse::<u16>().is_ok_and(|v| v <= 255) && !(o.len() > 1 && o.starts_with('0')));
    ok.then_some((s, e))
}

fn validate_ipv6(text: &str, s: usize, e: usize) -> Option<(usize, usize)> {
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

fn ssn_rules_ok(d: &[u8]) -> bool {
    let area = u32::from(d[0]) * 100 + u32::from(d[1]) * 10 + u32::from(d[2]);
    let group = u32::from(d[3]) * 10 + u32::from(d[4]);
    let serial = d[5..].iter().fold(0u32, |a, &x| a * 10 + u32::from(x));
    area != 0 && area != 666 && area < 900 && group != 0 && serial != 0
}

fn validate_ssn(text: &str, s: usize, e: usize) -> Option<(usize, usize)> {
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

/// A bare nine-digit number is an SSN only next to a name for one: `ssn`, `SSN`, `social
/// security` shortly before it on its line, or an `ssn` column in a CSV header above.
fn ssn_context(text: &str, s: usize) -> bool {
    // Look back at most this far: a CSV header or a key name further away does not count.
    const LOOK_BACK: usize = 4096;
    let floor = floor_char_boundary(text, s.saturating_sub(LOOK_BACK));
    let line_start = text[floor..s].rfind('\n').map_or(floor, |i| floor + i + 1);
    let from = floor_char_boundary(text, s.saturating_sub(48).max(line_start));
    if contains_ignore_ascii_case(&text[from..s], "ssn")
        || contains_ignore_ascii_case(&text[from..s], "social security")
    {
        return true;
    }
    let col = text[line_start..s].bytes().filter(|&b| b == b',').count();
    if col == 0 {
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

fn contains_ignore_ascii_case(hay: &str, needle: &str) -> bool {
    hay.as_bytes()
        .windows(needle.len())
        .any(|w| w.eq_ignore_ascii_case(needle.as_bytes()))
}

fn floor_char_boundary(text: &str, i: usize) -> usize {
    let mut i = i.min(text.len());
    while !text.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// National significant number lengths (min, max) for common country codes.
fn national_len(cc: &str) -> (usize, usize) {
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

fn validate_phone(text: &str, s: usize, e: usize) -> Option<(usize, usize)> {
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

fn id_context(text: &str, s: usize) -> bool {
    let from = floor_char_boundary(text, s.saturating_sub(24));
    let before = text[from..s]
        .trim_end_matches([' ', ':', '#', '='])
        .as_bytes();
    [
        "run", "order", "invoice", "ticket", "job", "build", "id", "number", "no.", "ref", "pr",
    ]
    .iter()
    .any(|w| {
        before.len() >= w.len()
            && before[before.len() - w.len()..].eq_ignore_ascii_case(w.as_bytes())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(text: &str) -> Vec<(Entity, &str)> {
        PiiDetector::new()
            .detect(text)
            .into_iter()
            .map(|d| (d.entity, &text[d.start..d.end]))
            .collect()
    }

    #[test]
    fn every_pattern_compiles() {
        for sp in specs() {
            assert!(
                MetaRegex::new(&sp.exact).is_ok(),
                "{}: {}",
                sp.entity,
                sp.exact
            );
            assert!(
                MetaRegex::new(&sp.trigger).is_ok(),
                "{}: {}",
                sp.entity,
                sp.trigger
            );
        }
        assert_eq!(PiiDetector::new().kinds.len(), 9);
        assert_eq!(PiiDetector::new().passes.len(), 3);
    }

    #[test]
    fn cards_pass_luhn_and_brand() {
        for card in [
            "4111 1111 1111 1111",
            "5555-5555-5555-4444",
            "2223003122003222",
            "378282246310005",
            "3714 496353 98431",
            "6011111111111117",
            "3530111333300000",
            "36227206271667",
        ] {
            assert_eq!(
                found(&format!("card {card} ok")),
                [(Entity::CreditCard, card)],
                "{card}"
            );
        }
        for not in [
            "4111 1111 1111 1112",
            "1234567812345670",
            "9400 1772 8736 7007 6882 73",
            "978-0-306-40615-7",
        ] {
            assert!(
                found(not).iter().all(|(e, _)| *e != Entity::CreditCard),
                "{not}"
            );
        }
    }

    #[test]
    fn ibans_pass_mod97_with_their_countrys_length() {
        for iban in [
            "DE89 3704 0044 0532 0130 00",
            "GB82WEST12345698765432",
            "FR1420041010050500013M02606",
            "NL91ABNA0417164300",
        ] {
            assert_eq!(
                found(&format!("IBAN {iban}.")),
                [(Entity::Iban, iban)],
                "{iban}"
            );
        }
        assert!(found("DE89 3704 0044 0532 0130 01").is_empty());
        assert!(
            found("DE89 3704 0044 0532 0130").is_empty(),
            "too short for DE"
        );
    }

    #[test]
    fn ip_addresses_in_all_forms_and_not_their_lookalikes() {
        for ip in [
            "192.168.1.1",
            "255.255.255.255",
            "2001:db8::1",
            "fe80::1ff:fe23:4567:890a",
            "::ffff:192.0.2.128",
            "2001:0db8:0000:0000:0000:ff00:0042:8329",
            "1::2",
        ] {
            assert_eq!(
                found(&format!("from {ip} today")),
                [(Entity::IpAddress, ip)],
                "{ip}"
            );
        }
        for not in [
            "999.1.1.1",
            "1.3.6.1.2.1.2.2.1.10.43",
            "v2.30.11",
            "01:12:47",
            "85:59:57:6A:E0:85",
            "std::fmt::Debug",
            "256.1.1.1",
        ] {
            assert!(found(not).is_empty(), "{not}: {:?}", found(not));
        }
    }

    #[test]
    fn ssns_follow_ssa_rules() {
        assert_eq!(found("SSN 123-45-6789"), [(Entity::Ssn, "123-45-6789")]);
        for bad in [
            "000-12-3456",
            "666-12-3456",
            "900-12-3456",
            "123-00-4567",
            "123-45-0000",
        ] {
            assert!(found(bad).is_empty(), "{bad}");
        }
        assert_eq!(found("my ssn is 123456789"), [(Entity::Ssn, "123456789")]);
        assert!(found("invoice 123456789").is_empty());
        assert_eq!(
            found("id,name,ssn\n1,Ann,123456789\n"),
            [(Entity::Ssn, "123456789")]
        );
    }

    #[test]
    fn phones_in_international_and_national_formats() {
        for p in [
            "+1 (978) 917-3444",
            "(210) 547-2964",
            "385-324-8687",
            "+44 20 7981 2838",
            "+33 6 16 39 34 19",
            "+81 90-8843-3664",
            "06 25 28 32 61",
            "020 7883 5224",
            "+12015670493",
            "2106029791",
        ] {
            assert_eq!(found(&format!("call {p} now")), [(Entity::Phone, p)], "{p}");
        }
        for not in [
            "1652729554",
            "2941957036",
            "2024-12-25",
            "$1,369.81",
            "order 1234567890",
        ] {
            assert!(found(not).is_empty(), "{not}: {:?}", found(not));
        }
    }

    #[test]
    fn emails_and_secrets() {
        assert_eq!(
            found("(onguyen@hooli.xyz) ok"),
            [(Entity::Email, "onguyen@hooli.xyz")]
        );
        assert!(found("icon@2x.webp").is_empty());
        let k = "AKIAIOSFODNN7EXAMPLE";
        assert_eq!(found(&format!("key {k} x")), [(Entity::Secret, k)]);
        let jwt = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U";
        assert_eq!(found(jwt), [(Entity::Secret, jwt)]);
        let pem = "-----BEGIN PRIVATE KEY-----\nMIIBVQIBADANBgkqhkiG9w0BAQEFAASCAT8w\n-----END PRIVATE KEY-----";
        assert_eq!(found(&format!("k: {pem}\n")), [(Entity::Secret, pem)]);
        assert!(found("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----").is_empty());
        let aws = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
        assert_eq!(
            found(&format!("aws_secret_access_key = {aws}\n")),
            [(Entity::Secret, aws)]
        );
        assert!(found(&format!("commit {aws}")).is_empty());
        assert!(found("7e8f8417eaf627a5a173bb95c87d81d033c0383f").is_empty());
        assert!(found("token: sk-...1RQZ").is_empty());
    }

    #[test]
    fn redaction_replaces_spans_with_placeholders() {
        let d = PiiDetector::new();
        let (out, found) = d.redact("mail a.b@c.io or 4111111111111111");
        assert_eq!(out, "mail [REDACTED_EMAIL] or [REDACTED_CREDIT_CARD]");
        assert_eq!(found.len(), 2);
        let (out, found) = d.redact("nothing here");
        assert!(matches!(out, std::borrow::Cow::Borrowed(_)));
        assert!(found.is_empty());
    }
}
