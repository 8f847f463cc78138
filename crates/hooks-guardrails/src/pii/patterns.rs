//! The detectors' patterns: a cheap trigger per entity for the combined scan, the exact
//! pattern, and the validator that confirms a candidate.

use regex_automata::meta::Regex as MetaRegex;

use super::Entity;
use super::validate::*;

pub(super) const B: &str = r"(?-u:\b)";

/// The lazy DFA's cache for the combined pattern: large enough that scanning never falls back
/// to the slow engines.
pub(super) const DFA_CACHE_BYTES: usize = 256 << 20;

pub(super) type Validate = fn(&str, usize, usize) -> Option<(usize, usize)>;

/// One detector: a cheap `trigger` (an alternative of the combined pass), the exact pattern,
/// how far past the trigger the exact match may reach, and the validator.
pub(super) struct Kind {
    pub(super) entity: Entity,
    pub(super) re: MetaRegex,
    pub(super) window: usize,
    /// The exact match must start where the trigger did (otherwise: anywhere in the window).
    pub(super) anchored: bool,
    /// An entity of this kind starts at most this many bytes before this byte of its
    /// trigger: after a failed candidate the scan resumes there (see `skip_after_failure`).
    pub(super) back_window: Option<(u8, usize)>,
    pub(super) validate: Validate,
}

pub(super) struct Spec {
    pub(super) entity: Entity,
    /// Which scan pass the trigger joins (see [`PiiDetector`]).
    pub(super) pass: usize,
    pub(super) trigger: String,
    pub(super) exact: String,
    pub(super) window: usize,
    pub(super) anchored: bool,
    pub(super) back_window: Option<(u8, usize)>,
    pub(super) validate: Validate,
}

/// Pass 0: triggers that start with literals (a prefilter skips most text); pass 1: e-mail
/// (found from its `@`); pass 2: the digit-led formats, one lazy DFA.
pub(super) const PASSES: usize = 3;
pub(super) const DENSE_PASS: usize = 2;

pub(super) fn spec(
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
        back_window: None,
        validate,
    }
}

pub(super) fn specs() -> Vec<Spec> {
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
            back_window: None,
            validate: validate_aws_border,
        },
        Spec {
            // The local part is at most 64 characters: no start further before the `@` can
            // be an address.
            back_window: Some((b'@', 64)),
            ..spec(Entity::Email, 1, email_trigger, email, 400, validate_email)
        },
        spec(Entity::Iban, 2, iban_trigger, iban, 80, validate_iban),
        spec(Entity::CreditCard, 2, card.clone(), card, 40, validate_card),
        spec(Entity::IpAddress, 2, ipv6_trigger, ipv6, 64, validate_ipv6),
        spec(Entity::IpAddress, 2, ipv4_trigger, ipv4, 24, validate_ipv4),
        spec(Entity::Ssn, 2, ssn.clone(), ssn, 24, validate_ssn),
        spec(Entity::Phone, 2, phone_trigger, phone, 40, validate_phone),
    ]
}
