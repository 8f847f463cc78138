//! PII and secret detection: one fast pass over the text finds candidates with a single
//! combined, ASCII-only pattern, then each candidate is validated (Luhn, mod-97, octet ranges,
//! SSA rules, NANP rules, context for bare numbers).
//!
//! Offsets are UTF-8 byte offsets and always fall on character boundaries.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, OnceLock};

use regex_automata::meta::Regex as MetaRegex;
use regex_automata::util::syntax;
use regex_automata::{Anchored, Input, MatchKind, PatternSet};
use serde::{Deserialize, Serialize};

/// A kind of personal data or secret.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[non_exhaustive]
pub enum Entity {
    /// An e-mail address (not a Git host's SSH login: `git@github.com:org/repo.git`).
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
    /// An API key, token or private key in a well-known format (AWS, GitHub, GitLab, Slack,
    /// Stripe, OpenAI, Anthropic, Google, Hugging Face, npm, SendGrid, DigitalOcean, Azure
    /// connection strings, Vault, PyPI, Docker Hub, Shopify, Linear, Notion, Supabase,
    /// Databricks, Postman, Grafana, New Relic, Sentry, Atlassian, 1Password, Doppler,
    /// Pulumi, JWTs, PEM and PGP private keys, a PEM key in base64 as a kubeconfig holds
    /// it), or a credential in its usual
    /// place: the password in a URL (`postgres://app:…@db`) or a Go MySQL driver's data
    /// source name (`root:…@tcp(db:3306)/app`), an HTTP authorization's
    /// credentials in any scheme (`Bearer`, `Basic`, `Token`, `Bot`, `SSWS`, `ApiKey`, …), the
    /// value of a field or header named for a secret (`DB_PASSWORD=…`, `"client_secret": …`,
    /// `GITHUB_TOKEN=…`, ODBC's `Pwd=…`, `X-API-Key: …`; set as an index,
    /// `os.environ["API_KEY"] = …`, or by a setter, `define('DB_PASSWORD', …)`,
    /// `os.Setenv("API_KEY", …)`, or by a command, `setx API_KEY …`, `set -gx GITHUB_TOKEN
    /// …`, Dockerfile's `ENV DB_PASSWORD …`, `git config github.token …`; or as a name and
    /// value pair, `- name: DB_PASSWORD` then `value: …`, `<add key="ApiKey" value="…"/>`;
    /// in an XML element, `<password>…</password>`, `<entry key="db.password">…</entry>`,
    /// Hadoop's `<name>…Password</name>` and `<value>…</value>`, a call,
    /// `set_password('…')`, a keyring's `keyring.set_password(svc, user, '…')`, or a YAML
    /// block scalar, `password: |`), SQL's (`IDENTIFIED BY
    /// '…'`, `PASSWORD '…'`), or a command line's
    /// (`--password …`, `-password …`, `-token=…`, `-ApiKey …`, `curl -u user:…`,
    /// `mysql -p…`, `sshpass -p …`, a registry login's `-p …`, `redis-cli -a`, `sqlcmd -P`,
    /// `mongosh -p`, `zip -P`, `ssh-keygen -N`, keytool's `-storepass`/`-keypass`,
    /// openssl's `pass:`, `smbclient -U user%…`, `lftp -u user,…`, `ldapsearch -w` (and
    /// the other OpenLDAP tools), PowerShell's `ConvertTo-SecureString "…" -AsPlainText`, a
    /// `.netrc` line's `password …`, positional ones: `htpasswd -b file user …`,
    /// `rabbitmqctl add_user user …`, `sqlplus user/…@db`, `wpa_passphrase SSID …`, `net
    /// user name …`, `cmdkey /pass:…`, `schtasks /rp …`, macOS's `security
    /// add-generic-password -w …`, Redis's `requirepass …`, `masterauth …`, redis-cli's
    /// `AUTH [user] …` (or `AUTH …` piped into `nc`) and `ACL SETUSER … >…`, an ACL file's
    /// `user name on >…`; the AWS CLI's `--secret-string …` and `aws ssm put-parameter
    /// --value …` (a `SecureString`'s), `az keyvault secret set --value …`; a value piped
    /// into a secret store's command, `gh secret set`, `docker secret create`, `gcloud
    /// secrets`, `wrangler secret put`, `secret-tool store`, `pass insert`; a `.pgpass`
    /// file's entries, `host:port:db:user:…`, written into it or shown after its name).
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
            Entity::Secret => "secret (API key, token, password or private key)",
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

mod context;
pub(crate) mod fold;
mod patterns;
mod phone;
mod validate;

pub(crate) use context::{floor_char_boundary, key_gives_context};
pub(crate) use validate::secret_field;

use patterns::{APART_PASSES, DENSE_PASSES, DFA_CACHE_BYTES, Kind, PASSES, Spec, specs};
pub(crate) use validate::ceil_char_boundary;
use validate::{Freed, next_char};

/// Finds PII and secrets in text.
///
/// ```
/// use hooks_guardrails::{Entity, PiiDetector};
/// let d = PiiDetector::new();
/// let found = d.detect("mail jane.doe@example.com, card 4111 1111 1111 1111, order 4111 1111 1111 1112");
/// let kinds: Vec<Entity> = found.iter().map(|f| f.entity).collect();
/// assert_eq!(kinds, [Entity::Email, Entity::CreditCard]);
/// ```
///
/// Building the automata takes about 0.2 s (release build), so they are built once per
/// process for each set of entities and shared: a second detector (or guard) for the same
/// entities costs a map lookup, and cloning one costs a reference count.
#[derive(Clone)]
pub struct PiiDetector {
    compiled: Arc<Compiled>,
}

/// A detector's automata and validators, shared by every detector for the same entities.
struct Compiled {
    passes: Vec<Pass>,
    kinds: Vec<Kind>,
}

/// The detectors built so far in this process, by their entities (sorted, without repeats):
/// at most one per subset of [`Entity::ALL`], so the map stays small.
fn built() -> &'static Mutex<HashMap<Vec<Entity>, Arc<Compiled>>> {
    static BUILT: OnceLock<Mutex<HashMap<Vec<Entity>, Arc<Compiled>>>> = OnceLock::new();
    BUILT.get_or_init(Mutex::default)
}

impl Pass {
    fn search(&self, text: &str, at: usize, freed: &Freed) -> Option<regex_automata::Match> {
        self.search_in(text, at, text.len(), freed)
    }

    /// [`search`](Self::search), without the prefilter when `near` (see `Pass::plain`).
    fn search_near(
        &self,
        text: &str,
        at: usize,
        freed: &Freed,
        near: bool,
    ) -> Option<regex_automata::Match> {
        match &self.plain {
            Some(plain) if near && (at > 0 || self.at_start.is_none()) => {
                plain.search(&Input::new(text).range(at..))
            }
            _ => self.search(text, at, freed),
        }
    }

    /// The first candidate in `text[at..to]` (`freed`: what the scan has read so far, which
    /// a search by hand may ask, see `validate::table_row_at`).
    fn search_in(
        &self,
        text: &str,
        at: usize,
        to: usize,
        freed: &Freed,
    ) -> Option<regex_automata::Match> {
        if at == 0
            && let Some(start) = &self.at_start
            && let Some(m) = start.search(&Input::new(text).range(0..to).anchored(Anchored::Yes))
        {
            return Some(regex_automata::Match::must(0, m.range()));
        }
        if let Some(hand) = self.hand {
            return hand(text, at, to, freed, self.hand_re.as_ref())
                .map(|(s, e)| regex_automata::Match::must(0, s..e));
        }
        let input = Input::new(text).range(at..to);
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

/// Detections in order of their starts, overlapping ones merged into one (the first one's
/// entity kept), handed on as each is complete.
#[derive(Default)]
struct Merge {
    pending: Option<Detection>,
    stopped: bool,
}

impl Merge {
    /// Takes `d`; false once `found` asked to stop.
    fn push(&mut self, d: Detection, found: &mut impl FnMut(Detection) -> bool) -> bool {
        match &mut self.pending {
            Some(p) if d.start < p.end => p.end = p.end.max(d.end),
            _ => {
                if let Some(p) = self.pending.replace(d) {
                    self.stopped = !found(p);
                }
            }
        }
        !self.stopped
    }

    /// Hands on the last one.
    fn finish(self, found: &mut impl FnMut(Detection) -> bool) {
        if let (false, Some(p)) = (self.stopped, self.pending) {
            found(p);
        }
    }
}

/// How near where a pass's search started its candidate must come for the next search to
/// go without the prefilter (see [`PiiDetector::search_pass`]).
const NEAR: usize = 128;

/// How many of a pass's candidates in a row must come [`NEAR`] for its next search to go
/// without the prefilter: in ordinary text a few come close and the next is far, and a walk
/// over that stretch without the prefilter cost more than the near ones saved.
const NEAR_RUN: u8 = 3;

/// The shortest stretch over which quiet kinds are passed over by a search without them
/// (see [`PiiDetector::search_pass`]); over a shorter one the pass's own search answers and
/// their candidates are only not validated.
const QUIET_SEARCH_MIN: usize = 16;

/// What one scan keeps between candidates.
#[derive(Default)]
struct Seen {
    /// For [`PiiDetector::validate_at`]'s overlapping search.
    set: Option<PatternSet>,
    /// The candidate being validated when its trigger's match is its exact match (see
    /// `Kind::trigger_is_exact`): its kind, start and end.
    trigger: Option<(usize, usize, usize)>,
    /// The exact match the last validation read: its kind, its candidate's start and the
    /// match's end, if any (a failed candidate's reach reads it instead of searching again).
    exact: Option<(usize, usize, Option<usize>)>,
    /// Why the last address validated failed: its kind, its candidate's start, its `@`, its
    /// domain's start and what failed (read by the reach instead of the domain's checks
    /// again).
    email_failed: Option<(usize, usize, usize, usize, validate::EmailFailure)>,
    /// The value glued right after the last address that ended before it (see
    /// [`PiiDetector::email_glued`]): reported on its own right after that address.
    glued: Option<Detection>,
    /// The domain (its start) the last look for a glued value read, and whether a value was
    /// found glued to it with the domain passing up to there: then an address before that
    /// `@` that failed failed on its local part, and later starts may pass.
    glued_domain: Option<(usize, bool)>,
    /// The last validation, when its kind has a class (see `Kind::class`) and nothing was
    /// validated or reported since: the class, the candidate's start and the answer.
    last: Option<(usize, usize, Option<Detection>)>,
}

/// The most a pass's fully built DFA (`Pass::dense`, `Pass::all_dense`) and its building
/// may take: 16 times the largest today (under 1 MiB each). A pattern that would grow one
/// past it (bounded repeats of overlapping classes multiply the states) fails its build in
/// a moment, where it ran for minutes into gigabytes, and the test
/// `every_pass_has_its_fully_built_automata` names it.
const DENSE_DFA_BYTES: usize = 16 << 20;

/// One scan: the triggers of some kinds, one pattern each, so a match says which kind fired.
struct Pass {
    re: MetaRegex,
    /// The same triggers without a prefilter, for a pass whose candidates come close
    /// together (see [`PiiDetector::search_pass`]): a prefilter called again every few
    /// bytes costs more than the automaton's walk over them (`password=x ` over and over
    /// read 1.4x as slowly with it). `None` for a pass read by hand or by the fully built
    /// DFA.
    plain: Option<MetaRegex>,
    /// For the digit-led pass: the same triggers as a fully built DFA (about 20% faster than
    /// the lazy one; much of the 0.2 s a detector takes to build, hence [`built`]).
    dense: Option<regex_automata::dfa::regex::Regex>,
    /// The same triggers with all-matches semantics: which of them match at a position.
    all: MetaRegex,
    /// For every pass whose triggers a regex reads (not by hand): the same as `all`,
    /// anchored only, as a fully built DFA. The digit-led pass asks it after most failed
    /// candidates (the lazy engine's overlapping search cost about as much as validating
    /// them); every pass asks it for a value glued to an address's domain (see `value_at`).
    /// 2.5 ms of a detector's build, most of it the secrets' pass.
    all_dense: Option<regex_automata::dfa::dense::DFA<Vec<u32>>>,
    /// The kind (index into `kinds`) of each pattern.
    kinds: Vec<usize>,
    /// For a pass of several kinds: the patterns of its kinds with a [`reach`](Kind::reach),
    /// which can be quiet (see [`PiiDetector::search_pass`]).
    quieting: Vec<usize>,
    /// For each set of those (a bit per entry of `quieting`): the pass's triggers with that
    /// set left out (they never match, so pattern ids stay the same), built the first time
    /// a scan needs it — searched while they are quiet, so a run of their failing candidates
    /// is not visited one by one. `None` if it did not build (the full search answers).
    without: Vec<OnceLock<Option<MetaRegex>>>,
    /// For a pass of one kind whose trigger is read by hand (see `Spec::hand_search`): that
    /// reading, in place of the regex's search (the tests compare the two).
    hand: Option<patterns::HandSearch>,
    /// The regex that reading reads by, if any (see `Spec::hand_regex`).
    hand_re: Option<MetaRegex>,
    /// The pass's triggers (to build `without`).
    triggers: Vec<String>,
    /// The longest match any trigger of the pass can have (`quieting` is empty when a
    /// trigger is unbounded).
    longest: usize,
    /// What the pass's one trigger also matches at the text's start only (see
    /// `Spec::at_start`), searched there first.
    at_start: Option<MetaRegex>,
    /// Whether the pass's values stand apart from their triggers, with the pass's other
    /// triggers between (a command's name, then a header's key, then the command's password:
    /// see `patterns::APART_PASSES`).
    apart: bool,
    /// For a pass that holds no e-mail address: what finds where a value of it may start
    /// right after an address's domain (see `value_at`).
    glue: Option<Glue>,
    /// For a pass read by hand: where its candidates may start, if its reading knows (see
    /// `Spec::may_start`: a value prose gives before its name opens with a quote, a
    /// backtick or emphasis).
    may_start: Option<patterns::MayStart>,
}

/// The most bytes [`Glue::matches_at`] walks.
const GLUE_WALK: usize = 256;

/// What [`PiiDetector::value_at`] asks a pass's anchored DFA (`Pass::all_dense`) before it
/// walks it, so that trying every place in a run of letters costs a few reads each.
struct Glue {
    /// The DFA's anchored start state at the start of a text (the same for every place).
    start: regex_automata::util::primitives::StateID,
    /// A bit per pair of first bytes (`b0 << 8 | b1`): set when the DFA is still alive (or
    /// has matched) after them.
    pairs: Box<[u64]>,
    /// The most ASCII letters a match can start with before it needs something else
    /// (`usize::MAX`: any number — a trigger can match on letters alone): a value that
    /// starts further back in a run of letters is not looked for in this pass.
    letters: usize,
}

impl Glue {
    fn new(dfa: &regex_automata::dfa::dense::DFA<Vec<u32>>) -> Option<Glue> {
        use regex_automata::dfa::Automaton;
        let start = dfa
            .start_state_forward(&Input::new("").anchored(Anchored::Yes))
            .ok()?;
        let mut pairs = vec![0u64; 1024].into_boxed_slice();
        for b0 in 0..=255u8 {
            let one = dfa.next_state(start, b0);
            if dfa.is_dead_state(one) {
                continue;
            }
            for b1 in 0..=255u8 {
                let two = dfa.next_state(one, b1);
                if dfa.is_match_state(one) || !dfa.is_dead_state(two) {
                    let bit = usize::from(b0) << 8 | usize::from(b1);
                    pairs[bit / 64] |= 1 << (bit % 64);
                }
            }
        }
        Some(Glue {
            start,
            pairs,
            letters: leading_letters(dfa, start),
        })
    }

    /// Whether a trigger of `dfa` (the one this was built from) matches at the start of
    /// `text`: a plain walk until the DFA dies or matches, with none of an overlapping
    /// search's bookkeeping. True when it cannot tell (the search then answers). A walk
    /// that has neither after [`GLUE_WALK`] bytes (a JWT's first part, which runs on to
    /// its dot) is true only when `long` (see [`PiiDetector::value_at`]), which it then
    /// takes: each place in a label's letters could start one, and walking the run from
    /// each would read it again and again.
    ///
    /// Adds the bytes it walked to `work`.
    fn matches_at(
        &self,
        dfa: &regex_automata::dfa::dense::DFA<Vec<u32>>,
        text: &[u8],
        long: &mut bool,
        work: &mut u64,
    ) -> bool {
        use regex_automata::dfa::Automaton;
        if let [b0, b1, ..] = text {
            let bit = usize::from(*b0) << 8 | usize::from(*b1);
            if self.pairs[bit / 64] & (1 << (bit % 64)) == 0 {
                return false;
            }
        }
        let mut sid = self.start;
        let (mut i, mut to) = (0, text.len().min(GLUE_WALK));
        loop {
            while i < to {
                sid = dfa.next_state(sid, text[i]);
                i += 1;
                if dfa.is_special_state(sid)
                    && (dfa.is_dead_state(sid) || dfa.is_match_state(sid) || dfa.is_quit_state(sid))
                {
                    *work += i as u64;
                    return !dfa.is_dead_state(sid);
                }
            }
            // Alive at the bound: on to the end, once per `long`.
            if to < text.len() && std::mem::take(long) {
                to = text.len();
                continue;
            }
            break;
        }
        *work += i as u64;
        i == text.len() && dfa.is_match_state(dfa.next_eoi_state(sid))
    }
}

/// Whether a validator's span holds a character: an empty one is no detection (were a
/// validator to give one, the merge of overlaps, which reads from a span's second
/// character on, would panic: `0€…€日` read whole did, found by the property tests).
fn non_empty(&(start, end): &(usize, usize)) -> bool {
    start < end
}

impl Pass {
    /// Whether a trigger of the pass may start at a place in `text[from..to]`: false only
    /// where its anchored DFA dies within two bytes at every place there (see
    /// [`Glue::pairs`]; its start state at a text's start, which admits a trigger wherever
    /// one may start), or, for a pass read by hand that knows where its candidates may
    /// start (see `Pass::may_start`), where none may. Any other pass may always.
    fn may_start_in(&self, text: &[u8], from: usize, to: usize) -> bool {
        if let Some(may_start) = self.may_start {
            return may_start(text, from, to);
        }
        let Some(glue) = &self.glue else {
            return true;
        };
        (from..to).any(|i| match text.get(i + 1) {
            Some(&b1) => {
                let bit = usize::from(text[i]) << 8 | usize::from(b1);
                glue.pairs[bit / 64] & (1 << (bit % 64)) != 0
            }
            None => true,
        })
    }

    /// The pass without the patterns in `mask` (bits of `quieting`).
    fn without(&self, mask: usize) -> Option<&MetaRegex> {
        self.without
            .get(mask)?
            .get_or_init(|| {
                // A pattern no text matches, in place of a quiet kind's trigger.
                const NEVER: &str = "[a&&b]";
                let mut rest: Vec<&str> = self.triggers.iter().map(String::as_str).collect();
                for (bit, &p) in self.quieting.iter().enumerate() {
                    if mask & (1 << bit) != 0 {
                        rest[p] = NEVER;
                    }
                }
                MetaRegex::builder()
                    .configure(
                        MetaRegex::config()
                            .match_kind(MatchKind::LeftmostFirst)
                            .hybrid_cache_capacity(DFA_CACHE_BYTES)
                            .nfa_size_limit(Some(64 << 20)),
                    )
                    .syntax(syntax::Config::new())
                    .build_many(&rest)
                    .ok()
            })
            .as_ref()
    }
}

impl fmt::Debug for PiiDetector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut entities: Vec<Entity> = self.compiled.kinds.iter().map(|k| k.entity).collect();
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
    ///
    /// # Panics
    /// Only if a built-in pattern does not compile — a bug the unit tests rule out (they
    /// build every one); [`for_entities`](Self::for_entities) reports it as an error instead.
    pub fn new() -> Self {
        match Self::for_entities(&Entity::ALL) {
            Ok(d) => d,
            Err(e) => panic!("the built-in PII detectors must compile: {e}"),
        }
    }

    /// A detector for `entities` only.
    ///
    /// # Errors
    /// [`Error::Detector`](crate::Error::Detector) naming the entity whose detector could not
    /// be built: never a detector that quietly finds nothing.
    pub fn for_entities(entities: &[Entity]) -> crate::Result<Self> {
        let mut key = entities.to_vec();
        key.sort_unstable();
        key.dedup();
        // A poisoned lock only means another thread panicked while holding it; the map
        // itself is always whole (one insert), so it is used as it is.
        let lock = || {
            built()
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
        };
        if let Some(compiled) = lock().get(&key) {
            return Ok(Self {
                compiled: Arc::clone(compiled),
            });
        }
        // Built outside the lock: a detector for other entities does not wait 0.2 s for
        // this one. Two threads that race here build the same thing; the first one in is kept.
        let compiled = Arc::new(Compiled::build(&key)?);
        let compiled = Arc::clone(lock().entry(key).or_insert(compiled));
        Ok(Self { compiled })
    }
}

/// The most a kind's own regex (its exact pattern, its hand reading's, its pattern at the
/// text's start) may hold of its lazy DFA: eight times the meta regex's default. The
/// secrets' shared exact pattern fills most of the default over the dev sets, and a lazy
/// DFA whose cache keeps filling gives up to the PikeVM (`every_regex_stays_a_lazy_dfa`). A
/// cap, not an allocation: the cache grows only as states are built.
const KIND_CACHE_BYTES: usize = 16 << 20;

/// A kind's own regex, with [`KIND_CACHE_BYTES`] for its lazy DFA.
fn kind_regex(pattern: &str) -> Result<MetaRegex, Box<dyn std::error::Error + Send + Sync>> {
    Ok(MetaRegex::builder()
        .configure(MetaRegex::config().hybrid_cache_capacity(KIND_CACHE_BYTES))
        .build(pattern)?)
}

impl Compiled {
    fn build(entities: &[Entity]) -> crate::Result<Self> {
        Self::from_specs(
            specs()
                .into_iter()
                .filter(|sp| entities.contains(&sp.entity))
                .collect(),
        )
    }

    fn from_specs(specs: Vec<Spec>) -> crate::Result<Self> {
        let bad = |entity: Entity, e: Box<dyn std::error::Error + Send + Sync>| {
            crate::Error::Detector { entity, source: e }
        };
        let mut kinds: Vec<Kind> = Vec::with_capacity(specs.len());
        // (Kinds with the same exact pattern share it: the secrets' is built once.)
        let mut exacts: HashMap<&str, MetaRegex> = HashMap::new();
        for sp in &specs {
            let re = if sp.exact.is_empty() {
                None
            } else if let Some(re) = exacts.get(sp.exact.as_str()) {
                Some(re.clone())
            } else {
                let re = kind_regex(&sp.exact).map_err(|e| bad(sp.entity, e))?;
                exacts.insert(&sp.exact, re.clone());
                Some(re)
            };
            kinds.push(Kind {
                entity: sp.entity,
                re,
                window: sp.window,
                anchored: sp.anchored,
                back_window: sp.back_window,
                domain_window: sp.domain_window,
                reach: sp.reach,
                reach_until_detection: sp.reach_until_detection,
                validate: sp.validate,
                may_pass: sp.may_pass,
                trigger_is_exact: false,
                named_exact: sp.named_exact,
                class: None,
            });
        }
        // Kinds that validate alike: one class each (see `Kind::class`).
        let mut classes: HashMap<(&str, usize, bool, Entity, usize), Vec<usize>> = HashMap::new();
        for (k, sp) in specs.iter().enumerate() {
            let alone = sp.may_pass.is_none()
                && sp.back_window.is_none()
                && sp.domain_window.is_none()
                && !sp.exact.is_empty();
            if alone {
                // (A validator by its address: two that are one function share it.)
                let validator = sp.validate as usize;
                let key = (
                    sp.exact.as_str(),
                    sp.window,
                    sp.anchored,
                    sp.entity,
                    validator,
                );
                classes.entry(key).or_default().push(k);
            }
        }
        for (class, members) in classes.into_values().filter(|m| m.len() > 1).enumerate() {
            for k in members {
                kinds[k].class = Some(class);
            }
        }
        let mut passes = Vec::new();
        for pass in 0..PASSES {
            let members: Vec<usize> = (0..specs.len())
                .filter(|&i| specs[i].pass == pass)
                .collect();
            let Some(&first) = members.first() else {
                continue;
            };
            let triggers: Vec<&str> = members.iter().map(|&i| specs[i].trigger.as_str()).collect();
            let build_as = |kind: MatchKind, prefilter: bool| {
                MetaRegex::builder()
                    .configure(
                        MetaRegex::config()
                            .match_kind(kind)
                            .auto_prefilter(prefilter)
                            .hybrid_cache_capacity(DFA_CACHE_BYTES)
                            .nfa_size_limit(Some(64 << 20)),
                    )
                    .syntax(syntax::Config::new())
                    .build_many(&triggers)
                    .map_err(|e| bad(specs[first].entity, Box::new(e)))
            };
            // The fully built DFA is a speed-up only: without it the lazy one answers.
            let dense = DENSE_PASSES
                .contains(&pass)
                .then(|| {
                    regex_automata::dfa::regex::Regex::builder()
                        .dense(
                            regex_automata::dfa::dense::Config::new()
                                .minimize(false)
                                .dfa_size_limit(Some(DENSE_DFA_BYTES))
                                .determinize_size_limit(Some(DENSE_DFA_BYTES)),
                        )
                        .build_many(&triggers)
                        .ok()
                })
                .flatten();
            let hand = match members[..] {
                [only] => specs[only].hand_search,
                _ => None,
            };
            if let [only] = members[..] {
                let sp = &specs[only];
                kinds[only].trigger_is_exact = sp.anchored
                    && sp.hand_search.is_none()
                    && (sp.exact == sp.trigger
                        || sp
                            .exact
                            .strip_prefix(sp.trigger.as_str())
                            .is_some_and(|rest| rest.starts_with('|')));
            }
            let at_start = match members[..] {
                [only] => specs[only]
                    .at_start
                    .as_ref()
                    .map(|re| kind_regex(re).map_err(|e| bad(specs[only].entity, e)))
                    .transpose()?,
                _ => None,
            };
            // Also for the passes whose values can be glued to an address's domain: asked at
            // each place such a value may start (see `value_at`).
            let all_dense = (DENSE_PASSES.contains(&pass) || hand.is_none())
                .then(|| {
                    regex_automata::dfa::dense::Builder::new()
                        .configure(
                            regex_automata::dfa::dense::Config::new()
                                .match_kind(MatchKind::All)
                                .start_kind(regex_automata::dfa::StartKind::Anchored)
                                .minimize(false)
                                .dfa_size_limit(Some(DENSE_DFA_BYTES))
                                .determinize_size_limit(Some(DENSE_DFA_BYTES)),
                        )
                        .build_many(&triggers)
                        .ok()
                })
                .flatten();
            // How long a trigger can be (`None`: unbounded, and then no kind is quiet — see
            // `search_pass`).
            let longest = triggers.iter().try_fold(0usize, |longest, t| {
                let hir = regex_automata::util::syntax::parse(t).ok()?;
                Some(longest.max(hir.properties().maximum_len()?))
            });
            let quieting: Vec<usize> = if members.len() < 2 || longest.is_none() {
                Vec::new()
            } else {
                (0..members.len())
                    .filter(|&p| specs[members[p]].reach.is_some())
                    .collect()
            };
            let hand_re = match members[..] {
                [only] => specs[only]
                    .hand_regex
                    .as_ref()
                    .map(|re| kind_regex(re).map_err(|e| bad(specs[only].entity, e)))
                    .transpose()?,
                _ => None,
            };
            passes.push(Pass {
                may_start: match members[..] {
                    [only] => specs[only].may_start,
                    _ => None,
                },
                hand_re,
                at_start,
                apart: APART_PASSES.contains(&pass),
                glue: all_dense
                    .as_ref()
                    .filter(|_| members.iter().all(|&m| specs[m].entity != Entity::Email))
                    .and_then(Glue::new),
                all_dense,
                re: build_as(MatchKind::LeftmostFirst, true)?,
                plain: (dense.is_none() && hand.is_none())
                    .then(|| build_as(MatchKind::LeftmostFirst, false))
                    .transpose()?,
                dense,
                all: build_as(MatchKind::All, true)?,
                kinds: members,
                without: (0..1usize << quieting.len())
                    .map(|_| OnceLock::new())
                    .collect(),
                quieting,
                hand,
                triggers: triggers.iter().map(|t| (*t).to_owned()).collect(),
                longest: longest.unwrap_or(usize::MAX),
            });
        }
        Ok(Self { passes, kinds })
    }
}

impl PiiDetector {
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
    ///
    /// Linear in the text: each pass resumes on its own, and after a candidate fails, past
    /// everything that candidate proved cannot start an entity of its kind (for an e-mail,
    /// every start more than 64 characters before its `@`), so no run of text is searched
    /// again from each of its characters.
    ///
    /// The text is folded first (see `fold`): fullwidth forms, exotic spaces and invisible
    /// characters cannot hide an entity, and each detection covers its whole original span.
    fn scan(&self, text: &str, found: impl FnMut(Detection) -> bool) {
        self.scan_folded(text, found, &mut 0);
    }

    fn scan_folded(&self, text: &str, mut found: impl FnMut(Detection) -> bool, work: &mut u64) {
        let regions = fold::form_regions(text);
        let paths = fold::path_regions(text);
        let continued = fold::continued_regions(text);
        let syslog = fold::syslog_regions(text);
        if regions.is_empty() && paths.is_empty() && continued.is_empty() && syslog.is_empty() {
            self.scan_view(text, fold::fold(text), found, work);
            return;
        }
        // A `+` that may be a form-encoded space (`phone=415+555+2671`) or a plus (a base64
        // key, `jane+tag@…`): the text is read as it is, the parts around such a `+` again
        // with it as a space, and what either reading finds is reported, overlapping spans
        // merged — so reading `+` as a space never hides what reading it as a plus finds.
        // So for a backslash before `n`, `r`, `t` that may be a Windows path's separator
        // (`D:\apps\redis-cli.exe`) or a JSON string's escape (`"Q:\nghp_…"`): its line is
        // read again with the separators as written, and what that reading finds where the
        // others found nothing is reported too (where they did, theirs stand: an address
        // after a `\t` it did not decode would take the escape's `t` in). So for three
        // backslashes before `n` or `r`, a shell's line continued in a JSON string
        // (`"mysql -u root \\\n  -p…"`) or a key's lines joined so (`…Sk\\\n9tpy…`): the
        // line is read again with them as a backslash and the break (see
        // `fold::fold_continued`).
        let mut both = Vec::new();
        self.scan_view(
            text,
            fold::fold(text),
            |d| {
                both.push(d);
                true
            },
            work,
        );
        let read_again = |(a, b): (usize, usize),
                          fold_part: fn(&str) -> Option<fold::Folded>,
                          into: &mut Vec<Detection>,
                          work: &mut u64| {
            let part = &text[a..b];
            self.scan_view(
                part,
                fold_part(part),
                |d| {
                    into.push(Detection {
                        start: a + d.start,
                        end: a + d.end,
                        entity: d.entity,
                    });
                    true
                },
                work,
            );
        };
        for r in regions {
            read_again(r, fold::fold_form, &mut both, work);
        }
        // (So for rsyslog's escapes, `#011`: a line that holds them is read again with them
        // as the tabs and breaks they write, and what either reading finds is reported —
        // so a password that holds one, `Summer#0112024!`, is not cut where it stands.)
        for r in syslog {
            read_again(r, fold::fold_syslog, &mut both, work);
        }
        let mut as_written = Vec::new();
        for r in paths {
            read_again(r, fold::fold_paths, &mut as_written, work);
        }
        for r in continued {
            read_again(r, fold::fold_continued, &mut as_written, work);
        }
        if !as_written.is_empty() {
            both.sort_by_key(|d: &Detection| d.start);
            // The furthest end among the detections that start before each one's end.
            let mut reach = Vec::with_capacity(both.len());
            for d in &both {
                reach.push(reach.last().map_or(d.end, |&r: &usize| r.max(d.end)));
            }
            let overlaps = |d: &Detection| {
                let before = both.partition_point(|o| o.start < d.end);
                before > 0 && reach[before - 1] > d.start
            };
            let new: Vec<Detection> = as_written.into_iter().filter(|d| !overlaps(d)).collect();
            both.extend(new);
        }
        // By start, the longer first; the same span keeps the first reading's entity.
        both.sort_by_key(|d: &Detection| (d.start, std::cmp::Reverse(d.end)));
        let mut merged = Merge::default();
        for d in both {
            if !merged.push(d, &mut found) {
                return;
            }
        }
        merged.finish(&mut found);
    }

    /// Scans `text` as `folded` (its folded form, if folding changes it) reads it.
    fn scan_view(
        &self,
        text: &str,
        folded: Option<fold::Folded>,
        mut found: impl FnMut(Detection) -> bool,
        work: &mut u64,
    ) {
        match folded {
            None => self.scan_counted(text, found, work),
            Some(folded) => {
                *work += text.len() as u64;
                // Two detections can share one original character that folded to several
                // (`℅` → `c/o` ends one address and starts the next): mapped back, their
                // spans would overlap, so they are merged into one.
                let mut merged = Merge::default();
                self.scan_counted(
                    &folded.text,
                    |d| {
                        let (start, end) = folded.original(d.start, d.end);
                        merged.push(
                            Detection {
                                start,
                                end,
                                entity: d.entity,
                            },
                            &mut found,
                        )
                    },
                    work,
                );
                merged.finish(&mut found);
            }
        }
    }

    /// The scan's work on `text`: bytes the passes search for candidates, plus each
    /// candidate's trigger, any detection and the walk of a kind's reach that makes it quiet
    /// (see `search_pass`) (a validation reads a bounded, anchored window,
    /// so its cost per candidate is bounded; what can go quadratic is searching the same text
    /// again and again, and that is what this counts). Linear scanning means doubling a text
    /// at most about doubles it (tested with hostile inputs); it counts steps, not time.
    #[doc(hidden)]
    pub fn scan_work(&self, text: &str) -> u64 {
        let mut work = 0;
        self.scan_folded(text, |_| true, &mut work);
        work
    }

    fn scan_counted(&self, text: &str, mut found: impl FnMut(Detection) -> bool, work: &mut u64) {
        #[derive(Clone, Copy)]
        enum Slot {
            Unknown,
            Done,
            At(regex_automata::Match),
        }
        let mut slots = [Slot::Unknown; PASSES];
        // Per kind: none of its candidates that start before this can succeed (see
        // `Kind::reach`); its validation is skipped there.
        let mut quiet = vec![0usize; self.compiled.kinds.len()];
        // Per kind: whether a candidate of it failed since the last detection. A kind whose
        // quiet ends at every detection is walked for its reach only from its second failure
        // on: in text dense with detections its quiet would be cut short before it paid.
        let mut failed = vec![false; self.compiled.kinds.len()];
        // Where each pass searches from next: past the last detection, and past its own
        // failed candidates.
        let mut resume = [0usize; PASSES];
        // Per pass: how many of its last candidates in a row came near where their searches
        // started (see `search_pass`).
        let mut near = [0u8; PASSES];
        let mut seen = Seen::default();
        let mut at = 0;
        // The last detection: what a validator reads before its candidate reads it as the
        // placeholder it becomes (see `Freed`).
        let mut freed = Freed::default();
        // A detection that starts after its candidate did (an address whose local part is
        // cut to its last 64 characters, a card glued to a word): held until no candidate of
        // another pass starts before it, so a value that starts earlier is not passed over
        // (one that reaches into it is merged with it).
        let mut held: Option<Detection> = None;
        // Reports `d` (with any value that starts inside it and goes on past it), then the
        // value glued right after it, if it is an address that runs into one (see
        // `email_glued`).
        let mut report = |d: Detection,
                          held: &mut Option<Detection>,
                          seen: &mut Seen,
                          work: &mut u64,
                          freed: &mut Freed,
                          quiet: &mut [usize],
                          failed: &mut [bool]| {
            failed.fill(false);
            seen.last = None;
            let mut next = Some(d);
            let mut woke = None;
            let mut last = (d.end, true);
            while let Some(d) = next.take() {
                let glued = seen.glued.take().filter(|g| g.start == d.end);
                let mut d =
                    self.merged_with_overlaps(text, d, freed, seen, work, glued.map(|g| g.start));
                // The held detection can be what this one now runs into (`1.1.1.1中a@b.co`:
                // the address, held, starts after the CJK its candidate started before; the
                // IPv4 address, found first, grows over it): taken in, so no two reported
                // spans overlap — with what it runs into in turn.
                if let Some(h) = held.take_if(|h| h.start < d.end) {
                    d.end = d.end.max(h.end);
                    if h.entity == Entity::Secret {
                        d.entity = Entity::Secret;
                    }
                    d = self.merged_with_overlaps(text, d, freed, seen, work, None);
                }
                (freed.start, freed.end) = (d.start, d.end);
                // (What a validator reads before its candidate has changed.)
                seen.last = None;
                // How far a kind was quiet past the detection, if one was.
                for (q, kind) in quiet.iter_mut().zip(&self.compiled.kinds) {
                    if kind.reach_until_detection && *q > d.end {
                        woke = woke.max(Some(*q));
                        *q = d.end;
                    }
                }
                next = glued
                    .or_else(|| seen.glued.take())
                    .filter(|g| g.start == d.end);
                // An SSH login (`git@github.com:org/repo.git`) is consumed like an address,
                // so nothing inside it is read again, but not reported.
                let login = d.entity == Entity::Email && self.ssh_login(text, d.start, d.end);
                last = (d.end, login || found(d));
                if !last.1 {
                    break;
                }
            }
            (last.0, last.1, woke)
        };
        // A pass may have found its next candidate without a kind that is awake again (up to
        // `until`): that stretch is searched again with every trigger.
        let rewake = |slots: &mut [Slot; PASSES],
                      resume: &[usize; PASSES],
                      at: usize,
                      until: usize,
                      freed: &Freed,
                      work: &mut u64| {
            for ((slot, pass), &from) in slots.iter_mut().zip(&self.compiled.passes).zip(resume) {
                let from = from.max(at);
                let to = ceil_char_boundary(text, until.saturating_add(pass.longest));
                if pass.quieting.is_empty() || from >= to {
                    continue;
                }
                let Some(n) = pass.search_in(text, from, to, freed) else {
                    *work += (to - from) as u64;
                    continue;
                };
                *work += (n.end() - from) as u64;
                // (A candidate from `until` on may not fit before `to`: the pass's own
                // search finds it.)
                match slot {
                    Slot::At(m) if m.start() <= n.start() => {}
                    _ if n.start() >= until => {}
                    _ => *slot = Slot::At(n),
                }
            }
        };
        while at <= text.len() {
            let mut min = usize::MAX;
            for (((slot, pass), from), near) in slots
                .iter_mut()
                .zip(&self.compiled.passes)
                .zip(&mut resume)
                .zip(&mut near)
            {
                *from = (*from).max(at);
                let stale = match slot {
                    Slot::Unknown => true,
                    Slot::At(m) => m.start() < *from,
                    Slot::Done => false,
                };
                if stale {
                    *slot = if *from > text.len() {
                        Slot::Done
                    } else {
                        match self.search_pass(pass, text, *from, &quiet, &freed, near, work) {
                            Some(m) => Slot::At(m),
                            None => Slot::Done,
                        }
                    };
                }
                if let Slot::At(m) = slot {
                    min = min.min(m.start());
                }
            }
            if let Some(h) = held
                && min > h.start
            {
                // No candidate starts before the held detection any more, nor at its start
                // (a private key that a field's name before it made the candidate of a
                // shorter value: `"private_key": "-----BEGIN…`): what is found there is
                // merged with it.
                held = None;
                let (end, go_on, woke) = report(
                    h,
                    &mut None,
                    &mut seen,
                    work,
                    &mut freed,
                    &mut quiet,
                    &mut failed,
                );
                if !go_on {
                    return;
                }
                at = at.max(end);
                if let Some(until) = woke {
                    rewake(&mut slots, &resume, at, until, &freed, work);
                }
                continue;
            }
            if min == usize::MAX {
                return;
            }
            let mut hit = None;
            for (i, ((slot, pass), from)) in slots
                .iter()
                .zip(&self.compiled.passes)
                .zip(&mut resume)
                .enumerate()
            {
                let Slot::At(m) = slot else { continue };
                if m.start() != min {
                    continue;
                }
                *work += (m.end() - m.start()) as u64;
                hit = self
                    .validate_at(text, pass, *m, &mut seen, &freed, &quiet, work)
                    .map(|d| (d, i, m.end()));
                if hit.is_some() {
                    break;
                }
                // This pass's candidate failed: resume past what it ruled out.
                let k = pass.kinds[m.pattern().as_usize()];
                if quiet[k] > m.start() {
                    *from = next_char(text, m.start());
                } else {
                    let walk = failed[k] || !self.compiled.kinds[k].reach_until_detection;
                    failed[k] = true;
                    let (to, kind_to) = self.skip_after_failure(text, pass, *m, &seen, walk);
                    *from = to;
                    if let Some(r) = kind_to {
                        // The walk that found it read about that far.
                        *work += (r - m.start()) as u64;
                        quiet[k] = quiet[k].max(r);
                    }
                }
            }
            match hit {
                // (One that overlaps the held detection, of its entity, is held with it:
                // the same value found by another pass's trigger, `-password=` and
                // `password=`. Reported at once, it let the scan pass over a candidate at
                // the held start that a value of another kind starts at: `-password=4111
                // 1111 1111 1111` left its card's last groups.)
                Some((d, pass, trigger_end))
                    if d.start > min
                        && held.is_none_or(|h| {
                            h.entity == d.entity && d.start < h.end && h.start < d.end
                        }) =>
                {
                    // Its pass's later candidates before it are the same value again —
                    // unless the pass finds values apart from their triggers (a command's
                    // password after a header's key on its line): then from the trigger's
                    // end on. So are those of the passes whose kind validates alike (see
                    // `Kind::class`: the secrets' triggers, split over passes for their
                    // prefilters, each read it again). The other passes are asked from here
                    // on (from this very start, for the passes after this one).
                    let past = if self.compiled.passes[pass].apart {
                        trigger_end
                    } else {
                        d.end
                    };
                    let class = self.pass_class(&self.compiled.passes[pass]);
                    for (p, (from, other)) in
                        resume.iter_mut().zip(&self.compiled.passes).enumerate()
                    {
                        if p == pass || class.is_some() && self.pass_class(other) == class {
                            *from = (*from).max(past);
                        }
                    }
                    held = Some(match held {
                        Some(h) => Detection {
                            start: h.start.min(d.start),
                            end: h.end.max(d.end),
                            entity: d.entity,
                        },
                        None => d,
                    });
                    at = min;
                }
                Some((d, _, _)) => {
                    let d = match held.take() {
                        // An address whose local part is a held secret (a URL's password:
                        // `://app:S3cret@db.internal`) leaves its domain, as one whose local
                        // part ends a key does (see `merged_with_overlaps`).
                        Some(h)
                            if h.entity == Entity::Secret
                                && d.entity == Entity::Email
                                && d.start >= h.start
                                && !glued_on(text, d.end) =>
                        {
                            h
                        }
                        // (A held secret that goes on past the value at its start keeps its
                        // entity: `--password=4111…1111x4111 1111 1111 1111` is a secret,
                        // so the card after the first is merged in too. A card that
                        // outgrows the secret is a card.)
                        Some(h) if d.end > h.start => Detection {
                            start: d.start.min(h.start),
                            end: d.end.max(h.end),
                            entity: match h.entity == Entity::Secret && h.end > d.end {
                                true => Entity::Secret,
                                false => d.entity,
                            },
                        },
                        // It ends before the held one: reported first.
                        h => {
                            held = h;
                            d
                        }
                    };
                    let (end, go_on, woke) = report(
                        d,
                        &mut held,
                        &mut seen,
                        work,
                        &mut freed,
                        &mut quiet,
                        &mut failed,
                    );
                    if !go_on {
                        return;
                    }
                    at = end.max(min + 1);
                    if let Some(until) = woke {
                        rewake(&mut slots, &resume, at, until, &freed, work);
                    }
                }
                None => at = next_char(text, min),
            }
        }
        if let Some(h) = held {
            report(
                h,
                &mut None,
                &mut seen,
                work,
                &mut freed,
                &mut quiet,
                &mut failed,
            );
        }
    }

    /// `d`, reaching as far as any value that starts inside it and goes on past it (merged
    /// into one detection, a secret's entity kept): a SendGrid key glued after an address's
    /// `@` reads as its domain (`101@SG.ak8…`), a key's body runs into the number after it
    /// (`…RTP 10.3.5.2`), a key glued after an address runs into a card — whatever the scan
    /// would pass over, its tail would be left behind. Candidates are looked for in every
    /// pass from inside `d` (their triggers read up to 64 bytes past it), again over what
    /// each growth added.
    ///
    /// `apart`: where a value glued to an address starts that is reported on its own (see
    /// `email_glued`): a value that starts right there is not taken in.
    fn merged_with_overlaps(
        &self,
        text: &str,
        mut d: Detection,
        freed: &Freed,
        seen: &mut Seen,
        work: &mut u64,
        apart: Option<usize>,
    ) -> Detection {
        let first = d.entity;
        let mut from = next_char(text, d.start);
        loop {
            let end = d.end;
            for pass in &self.compiled.passes {
                // (Most values start no trigger of most passes inside them: not searched.)
                if !pass.may_start_in(text.as_bytes(), from, d.end) {
                    continue;
                }
                let mut at = from;
                while at < d.end {
                    let to = ceil_char_boundary(text, d.end.saturating_add(64));
                    let Some(m) = pass.search_in(text, at, to, freed) else {
                        *work += (to - at) as u64;
                        break;
                    };
                    *work += (m.end() - at) as u64;
                    if m.start() >= d.end {
                        break;
                    }
                    match self.validate_at(text, pass, m, seen, freed, &[], work) {
                        Some(x) => {
                            // Another reading of a value of its own kind (`364 4111` inside
                            // `0425 795 364`, an address inside an address) is no other
                            // value — secrets aside, each one a key of its own. An address
                            // whose local part ends a key (`ghp_…@github.com` in a URL)
                            // leaves only its domain: the key's span stays — unless a value
                            // may be glued on after it (`…bob@corp.com(415) 555-2671`, cells
                            // of a table read one after the other), which would then stand
                            // glued to the domain, read by nothing: then it is taken in.
                            let same_kind = x.entity == first && x.entity != Entity::Secret;
                            let domain_only = d.entity == Entity::Secret
                                && x.entity == Entity::Email
                                && !glued_on(text, x.end);
                            // (A value whose candidate started inside `d` but that
                            // itself starts past its end, not at it — an address cut off
                            // the CJK text its local part ran over — runs into nothing:
                            // the scan reports it, its trigger found again from `d`'s end.
                            // One that starts right at the end is glued on, and its
                            // trigger may have read `d`'s last character as its border.)
                            let reported_apart = apart == Some(x.start) && x.start == d.end;
                            if x.end > d.end
                                && x.start <= d.end
                                && !same_kind
                                && !domain_only
                                && !reported_apart
                            {
                                d.end = x.end;
                                if x.entity == Entity::Secret {
                                    d.entity = Entity::Secret;
                                }
                            }
                            at = x.end.max(next_char(text, m.start()));
                        }
                        None => at = self.skip_after_failure(text, pass, m, seen, false).0,
                    }
                }
            }
            if d.end == end {
                return d;
            }
            // The passes asked before it grew have not looked at what it grew by.
            from = end;
        }
    }

    /// Where a pass resumes after its candidate `m` failed: the next character, or — for a
    /// kind whose entity can only start a bounded distance before an anchor its trigger
    /// reached (an e-mail: 64 characters before its `@`), or whose failure rules out more
    /// (the rest of a run token's run, see `run_token_reach`; every start before an address's
    /// `@` when its domain failed, see `email_reach`) — that point, if it is further. For a
    /// kind that shares its pass, what its failure rules out is returned apart (the second
    /// value): only that kind is quiet up to there, the others' candidates are still read.
    ///
    /// `kind_level`: whether to walk a kind that shares its pass for its reach — the scan
    /// asks from a kind's second failure since the last detection; merging overlaps never
    /// does (nobody would read it).
    fn skip_after_failure(
        &self,
        text: &str,
        pass: &Pass,
        m: regex_automata::Match,
        seen: &Seen,
        kind_level: bool,
    ) -> (usize, Option<usize>) {
        let next = next_char(text, m.start());
        let k = pass.kinds[m.pattern().as_usize()];
        let kind = &self.compiled.kinds[k];
        let mut to = next;
        if let Some((anchor, before)) = kind.back_window
            && let Some(i) = memchr::memmem::find(&text.as_bytes()[m.start()..m.end()], anchor)
        {
            to = to.max(ceil_char_boundary(
                text,
                (m.start() + i).saturating_sub(before),
            ));
        }
        let shared = pass.kinds.len() > 1;
        // An address whose domain passes up to a value glued to it failed on its local
        // part: later starts before its `@` may pass (see `email_glued`).
        if kind.entity == Entity::Email
            && kind.reach.is_some()
            && !shared
            && let Some((g, true)) = seen.glued_domain
            && let Some((at, at_len)) =
                validate::email_at(&text[m.start()..kind.cut(text, m.start())])
            && m.start() + at + at_len == g
        {
            return (
                to.max(validate::email_local_skip(text, m.start(), m.start() + at)),
                None,
            );
        }
        if let Some(reach) = kind.reach
            && (kind_level || !shared)
        {
            // The exact match the validation just read (searched again only if it was not
            // this kind's, and only by a reach that reads it).
            let mut exact = || match seen.exact {
                Some((sk, ss, end)) if sk == k && ss == m.start() => end,
                _ => self.exact_end(text, kind, m.start()),
            };
            // An address whose validation said what failed: its reach without reading the
            // domain again (the same answer as `email_reach`).
            let known = match seen.email_failed {
                Some((fk, fs, at, domain, why)) if fk == k && fs == m.start() => Some(match why {
                    validate::EmailFailure::Domain => domain,
                    validate::EmailFailure::Local => validate::email_local_skip(text, fs, at),
                }),
                _ => None,
            };
            let r = match known {
                Some(r) => Some(r),
                None => reach(text, m.start(), &mut exact, kind),
            };
            if let Some(r) = r {
                let r = ceil_char_boundary(text, r);
                if shared {
                    return (to, Some(r));
                }
                to = to.max(r);
            }
        }
        (to, None)
    }

    /// The pass's first candidate from `from`, passing over those of its quiet kinds: while
    /// kinds are quiet (`quiet[k]`: none of that kind's candidates that start before it can
    /// succeed), the pass is searched without their triggers as far as they all stay quiet,
    /// then without those still quiet — so a run of failing candidates (`1.2.3.4.1.2.…`,
    /// `4111 4111 …`) costs one search, not one per candidate, while the other kinds'
    /// candidates there are all still found.
    ///
    /// `near`: how many of the pass's last candidates in a row came within [`NEAR`] bytes
    /// of where their searches started (from [`NEAR_RUN`] on, this one is searched without
    /// the prefilter, see `Pass::plain`); counted on for the next.
    #[allow(clippy::too_many_arguments)]
    fn search_pass(
        &self,
        pass: &Pass,
        text: &str,
        mut from: usize,
        quiet: &[usize],
        freed: &Freed,
        near: &mut u8,
        work: &mut u64,
    ) -> Option<regex_automata::Match> {
        loop {
            // The kinds quiet at `from`, and how far they all stay quiet.
            let (mut mask, mut until) = (0, usize::MAX);
            for (bit, &p) in pass.quieting.iter().enumerate() {
                let q = quiet[pass.kinds[p]];
                if q > from {
                    mask |= 1 << bit;
                    until = until.min(q);
                }
            }
            // Over a short stretch the full search costs less than a second one.
            let without = if mask == 0 || until - from < QUIET_SEARCH_MIN {
                None
            } else {
                pass.without(mask)
            };
            let Some(without) = without else {
                let m = pass.search_near(text, from, freed, *near >= NEAR_RUN);
                *near = match m {
                    Some(m) if m.start() - from < NEAR => near.saturating_add(1),
                    _ => 0,
                };
                *work += (m.map_or(text.len(), |m| m.end()) - from) as u64 + 1;
                return m;
            };
            // A candidate that starts before `until` ends within the longest trigger past it.
            let to = ceil_char_boundary(text, until.saturating_add(pass.longest));
            let m = without.search(&Input::new(text).range(from..to));
            *work += (m.map_or(to, |m| m.end()) - from) as u64 + 1;
            match m {
                Some(m) if m.start() < until => return Some(m),
                // Nothing but quiet kinds' candidates before `until`: from there, fewer kinds
                // are quiet.
                _ => from = until,
            }
        }
    }

    /// The end of `kind`'s exact match for a candidate at `s`, if there is one.
    fn exact_end(&self, text: &str, kind: &Kind, s: usize) -> Option<usize> {
        let re = kind.re.as_ref()?;
        let cut = kind.cut(text, s);
        let anchored = if kind.anchored {
            Anchored::Yes
        } else {
            Anchored::No
        };
        re.search(&Input::new(text).range(s..cut).anchored(anchored))
            .map(|m| m.end())
    }
    /// Validates the kind whose trigger fired (`m`), then any other kind of the same pass whose
    /// trigger also matches at its start (one anchored search finds them: the cost is bounded
    /// by the longest trigger).
    /// Kinds quiet at the start (see `search_pass`) are not validated.
    #[allow(clippy::too_many_arguments)]
    fn validate_at(
        &self,
        text: &str,
        pass: &Pass,
        m: regex_automata::Match,
        seen: &mut Seen,
        freed: &Freed,
        quiet: &[usize],
        work: &mut u64,
    ) -> Option<Detection> {
        let (s, fired) = (m.start(), m.pattern());
        let awake = |k: &usize| quiet.get(*k).is_none_or(|&q| q <= s);
        let first = pass.kinds[fired.as_usize()];
        // (Found over the whole text, by the pass's own search: not by its search at the
        // text's start alone.)
        let kind = &self.compiled.kinds[first];
        seen.trigger = ((kind.trigger_is_exact
            || kind
                .named_exact
                .is_some_and(|exactly| exactly(&text.as_bytes()[s..])))
            && pass.quieting.is_empty()
            && (s > 0 || pass.at_start.is_none()))
        .then_some((first, s, m.end()));
        let found = awake(&first)
            .then(|| self.validate_once(text, first, s, freed, seen, work))
            .flatten();
        seen.trigger = None;
        if found.is_some() {
            return found;
        }
        // Leftmost-first reports the first pattern (in the pass's order) that matches at the
        // leftmost start: only later patterns can match here too. None after the last.
        let later = &pass.kinds[fired.as_usize() + 1..];
        if later.len() <= 2 {
            // A kind or two: asking each is cheaper than one overlapping search.
            return later
                .iter()
                .filter(|k| awake(k))
                .find_map(|&k| self.validate_once(text, k, s, freed, seen, work));
        }
        let mut set = seen
            .set
            .take()
            .unwrap_or_else(|| PatternSet::new(self.compiled.kinds.len()));
        set.clear();
        let input = Input::new(text).range(s..).anchored(Anchored::Yes);
        // Our patterns have no quit bytes, so the DFA cannot fail; if it ever did, the lazy
        // engine answers instead.
        let dense = pass.all_dense.as_ref().map(|dfa| {
            use regex_automata::dfa::Automaton;
            dfa.try_which_overlapping_matches(&input, &mut set)
        });
        if !matches!(dense, Some(Ok(()))) {
            set.clear();
            pass.all.which_overlapping_matches(&input, &mut set);
        }
        let hit = set
            .iter()
            .filter(|&p| p > fired)
            .map(|p| pass.kinds[p.as_usize()])
            .filter(awake)
            .find_map(|k| self.validate_once(text, k, s, freed, seen, work));
        seen.set = Some(set);
        hit
    }

    /// The class a pass's one kind validates in (see `Kind::class`), if it has one kind.
    fn pass_class(&self, pass: &Pass) -> Option<usize> {
        match pass.kinds[..] {
            [only] => self.compiled.kinds[only].class,
            _ => None,
        }
    }

    /// [`validate_kind`](Self::validate_kind), answered at once where a kind of the same
    /// class (see `Kind::class`) has just validated a candidate at `s`: the same
    /// validation would give the same answer.
    fn validate_once(
        &self,
        text: &str,
        kind: usize,
        s: usize,
        freed: &Freed,
        seen: &mut Seen,
        work: &mut u64,
    ) -> Option<Detection> {
        let class = self.compiled.kinds[kind].class;
        if let (Some(c), Some((lc, ls, answer))) = (class, seen.last)
            && (c, s) == (lc, ls)
        {
            return answer;
        }
        seen.last = None;
        let answer = self.validate_kind(text, kind, s, freed, seen, work);
        seen.last = class.map(|c| (c, s, answer));
        answer
    }

    fn validate_kind(
        &self,
        text: &str,
        kind: usize,
        s: usize,
        freed: &Freed,
        seen: &mut Seen,
        work: &mut u64,
    ) -> Option<Detection> {
        let k = kind;
        let kind = &self.compiled.kinds[k];
        if kind.entity != Entity::Email {
            return self.validate_plain(text, k, s, freed, seen, work, true);
        }
        let window = ceil_char_boundary(text, s.saturating_add(kind.window));
        let Some((at, at_len)) = validate::email_at(&text[s..window]) else {
            return self.validate_plain(text, k, s, freed, seen, work, true);
        };
        let domain = s + at + at_len;
        // The address's first look (`email_may_pass`), which also tells whether the domain
        // may run into a glued value.
        let look = match kind.may_pass {
            Some(_) => {
                validate::email_domain_look(text, domain, kind.domain_window.unwrap_or(kind.window))
            }
            None => validate::DomainLook {
                may_pass: true,
                runs_on: true,
            },
        };
        let found = if look.may_pass {
            self.validate_plain(text, k, s, freed, seen, work, false)
        } else {
            seen.email_failed = Some((k, s, s + at, domain, validate::EmailFailure::Domain));
            None
        };
        // An address whose domain runs into a value with nothing between: only when it
        // failed; when its last label's letters run on into a token (`…comsk-proj-…`,
        // `ü@müller.de4111…`); or when it passed only at a shorter run of labels
        // (`…@mail.example.org4111…` passes as `…@mail.example`).
        let from = match found {
            None if !look.runs_on => return None,
            None => domain,
            Some(d)
                if matches!(
                    validate::byte_at(text, d.end),
                    Some(b'0'..=b'9' | b'-' | b'_')
                ) && text.as_bytes()[d.end - 1].is_ascii_alphabetic() =>
            {
                domain
            }
            Some(d) if validate::byte_at(text, d.end) == Some(b'.') => d.end + 1,
            Some(d) => return Some(d),
        };
        // (Its exact match stays the one a failed candidate's reach reads.)
        let (exact, failed) = (seen.exact, seen.email_failed);
        let glued = self.email_glued(text, k, s, domain, from, freed, seen, work);
        (seen.exact, seen.email_failed) = (exact, failed);
        match glued {
            Some((d, value)) => {
                seen.glued = value;
                Some(d)
            }
            None => found,
        }
    }

    /// An address whose domain runs into a value of another kind with nothing between
    /// (`jane@example.com415-555-2671`, `a@b.coeyJ…`, `x@y.comDE89…`, `…comsk-proj-…`, as
    /// text pulled out of a table cell by cell reads): the address, ending where the value
    /// starts, and the value. The value starts inside or right after the leading letters of
    /// one of the domain's labels after a dot — what is left before it a last label of two
    /// letters or more — and reads as a value from there on its own (see
    /// [`value_at`](Self::value_at)); the address must pass ending right there. The first
    /// such place, in order, in the labels that start at `from` or later. Where no value
    /// starts in a label's letters but a bare number of [`BARE_NUMBER_DIGITS`] or more
    /// follows them and ends the label (`…@tailspin.travel70010423`), the address ends at
    /// the letters, with no value beside it. Where a value starts but the address fails
    /// whatever its end (on its local part: `a.@b.coeyJ…`) and no later start before the
    /// `@` may pass, the value alone (in the address's place). `None` when there is none of
    /// these — the address then stands as it was.
    #[allow(clippy::too_many_arguments)]
    fn email_glued(
        &self,
        text: &str,
        k: usize,
        s: usize,
        domain: usize,
        from: usize,
        freed: &Freed,
        seen: &mut Seen,
        work: &mut u64,
    ) -> Option<(Detection, Option<Detection>)> {
        let b = text.as_bytes();
        // The `@` (or `%40`) before the domain.
        let at = if b[domain - 1] == b'@' {
            domain - 1
        } else {
            domain - 3
        };
        // A domain is at most 253 bytes, in at most ten labels.
        let limit = b.len().min(domain + 253);
        let (mut l, mut labels) = (domain, 0);
        loop {
            let mut r = l;
            while r < limit && b[r].is_ascii_alphabetic() {
                r += 1;
            }
            let mut e = r;
            while e < limit && (b[e].is_ascii_alphanumeric() || b[e] == b'-' || b[e] >= 0x80) {
                e += 1;
            }
            *work += (e - l) as u64;
            // Letters that run on into a token: a digit, `-` or `_` right after them.
            if labels > 0
                && l >= from
                && r - l >= 2
                && r < b.len()
                && matches!(b[r], b'0'..=b'9' | b'-' | b'_')
            {
                // A last label is at most 24 characters; no value starts with `-` or `_`.
                let to = if b[r].is_ascii_digit() { r } else { r - 1 };
                // One look past `GLUE_WALK` per label (a JWT with a long header).
                let mut long = true;
                for i in l + 2..=to.min(l + 24) {
                    let Some(value) = self.value_at(text, i, r - i, &mut long, seen, work) else {
                        continue;
                    };
                    let cut = &text[..i];
                    let passes = validate::email_domain_end(cut, domain, i) == Some(i);
                    if seen.glued_domain != Some((domain, true)) {
                        seen.glued_domain = Some((domain, passes));
                    }
                    if !passes {
                        continue;
                    }
                    // The local part does not change with `i`: if it fails here, it fails
                    // at every place. The value still stands on its own (`a.@b.coeyJ…`)
                    // — unless a later start before the `@` may pass: that address will
                    // find it.
                    let Some(address) = self.validate_plain(cut, k, s, freed, seen, work, true)
                    else {
                        return (validate::email_local_skip(text, s, at) == at)
                            .then_some((value, None));
                    };
                    if address.end == i {
                        return Some((address, Some(value)));
                    }
                }
                // No value there, but a bare number right after the letters, as long as an
                // ID (`…@tailspin.travel70010423`, the next cell's order number), and the
                // letters a known top-level domain: the address ends at the letters and the
                // number stays. The local part is read first: when it fails from every
                // start before the `@`, there is nothing to find (a run of failing
                // addresses asks this at each).
                if bare_number(text, r) && validate::known_tld(&text[l..r]) {
                    let local = validate::email_local_start(text, s, at).is_some();
                    if local || validate::email_local_skip(text, s, at) < at {
                        let cut = &text[..r];
                        let passes = validate::email_domain_end(cut, domain, r) == Some(r);
                        if seen.glued_domain != Some((domain, true)) {
                            seen.glued_domain = Some((domain, passes));
                        }
                        if passes && local {
                            let address =
                                self.validate_plain(cut, k, s, freed, seen, work, true)?;
                            if address.end == r {
                                return Some((address, None));
                            }
                        }
                    }
                }
            }
            labels += 1;
            if e >= limit || b[e] != b'.' || labels == 10 {
                return None;
            }
            l = e + 1;
        }
    }

    /// The value of a kind other than an e-mail address that starts right at `i`, read as
    /// if what stands before it were a border (the text from `i` on, alone): every pass's
    /// triggers anchored there (a fully built DFA each; most die within a byte or two), each
    /// one that matches validated.
    ///
    /// `letters`: how many ASCII letters stand at `i` (a pass whose triggers cannot start
    /// with that many is not asked). `long`: whether a trigger still alive after
    /// [`GLUE_WALK`] bytes may be walked to its end (see [`Glue::matches_at`]).
    fn value_at(
        &self,
        text: &str,
        i: usize,
        letters: usize,
        long: &mut bool,
        seen: &mut Seen,
        work: &mut u64,
    ) -> Option<Detection> {
        use regex_automata::dfa::Automaton;
        let rest = &text[i..];
        let input = Input::new(rest).anchored(Anchored::Yes);
        let mut hit = None;
        'passes: for pass in &self.compiled.passes {
            let (Some(glue), Some(dfa)) = (&pass.glue, &pass.all_dense) else {
                continue;
            };
            *work += 1;
            if letters > glue.letters || !glue.matches_at(dfa, rest.as_bytes(), long, work) {
                continue;
            }
            let mut set = seen
                .set
                .take()
                .unwrap_or_else(|| PatternSet::new(self.compiled.kinds.len()));
            set.clear();
            let dense = pass
                .all_dense
                .as_ref()
                .map(|dfa| dfa.try_which_overlapping_matches(&input, &mut set));
            if !matches!(dense, Some(Ok(()))) {
                set.clear();
                pass.all.which_overlapping_matches(&input, &mut set);
            }
            for p in set.iter() {
                let k = pass.kinds[p.as_usize()];
                let mut own = Seen::default();
                if let Some(d) =
                    self.validate_plain(rest, k, 0, &Freed::default(), &mut own, work, true)
                    && d.start == 0
                {
                    hit = Some(Detection {
                        start: i,
                        end: i + d.end,
                        entity: d.entity,
                    });
                    break;
                }
            }
            seen.set = Some(set);
            if hit.is_some() {
                break 'passes;
            }
        }
        hit
    }

    /// A candidate of kind `kind` at `s`, validated: its first look (with `first_look`), its
    /// exact pattern, its validator.
    #[allow(clippy::too_many_arguments)]
    fn validate_plain(
        &self,
        text: &str,
        kind: usize,
        s: usize,
        freed: &Freed,
        seen: &mut Seen,
        work: &mut u64,
        first_look: bool,
    ) -> Option<Detection> {
        let k = kind;
        let kind = &self.compiled.kinds[k];
        if first_look
            && let Some(may_pass) = kind.may_pass
            && !may_pass(text, s, kind)
        {
            return None;
        }
        let cut = kind.cut(text, s);
        let anchored = if kind.anchored {
            Anchored::Yes
        } else {
            Anchored::No
        };
        let Some(re) = &kind.re else {
            *work += (cut - s) as u64;
            let (start, end) = (kind.validate)(text, s, cut, freed).filter(non_empty)?;
            return Some(Detection {
                start,
                end,
                entity: kind.entity,
            });
        };
        let m = match seen.trigger {
            Some((tk, ts, te)) if (tk, ts) == (k, s) && te <= cut => {
                debug_assert_eq!(
                    re.search(&Input::new(text).range(s..cut).anchored(anchored))
                        .map(|m| m.range()),
                    Some(s..te),
                    "a trigger's match is its kind's exact match"
                );
                Some(regex_automata::Match::must(0, s..te))
            }
            _ => re.search(&Input::new(text).range(s..cut).anchored(anchored)),
        };
        seen.exact = Some((k, s, m.map(|m| m.end())));
        // An address's domain: where its failure is kept for its reach.
        let at = || {
            kind.domain_window?;
            validate::email_at(&text[s..cut]).map(|(at, at_len)| (s + at, s + at + at_len))
        };
        let Some(m) = m else {
            if let Some((at, domain)) = at() {
                seen.email_failed = Some((k, s, at, domain, validate::EmailFailure::Domain));
            }
            return None;
        };
        *work += (m.end() - s) as u64;
        let (start, end) = if kind.domain_window.is_some() {
            // An address: what failed is kept for its reach.
            match validate::email_verdict(text, m.start(), m.end()) {
                Ok(span) => span,
                Err(why) => {
                    if let Some((at, domain)) = at() {
                        seen.email_failed = Some((k, s, at, domain, why));
                    }
                    return None;
                }
            }
        } else {
            (kind.validate)(text, m.start(), m.end(), freed).filter(non_empty)?
        };
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
    /// the phone number is glued to the address), so it repeats until nothing is left. A text
    /// that still uncovers entities after [`MAX_REDACTION_PASSES`] passes (a long chain of
    /// glued values, each freeing only the next) becomes one placeholder as a whole: fail
    /// closed. Either way the output holds no entity, and redacting it again changes nothing.
    pub fn redact<'t>(&self, text: &'t str) -> (std::borrow::Cow<'t, str>, Vec<Detection>) {
        self.redact_within(text, MAX_REDACTION_PASSES)
    }

    /// [`redact`](Self::redact) with at most `passes` passes (lower only in tests, where no
    /// known input needs [`MAX_REDACTION_PASSES`]).
    fn redact_within<'t>(
        &self,
        text: &'t str,
        passes: usize,
    ) -> (std::borrow::Cow<'t, str>, Vec<Detection>) {
        let found = self.detect(text);
        if found.is_empty() {
            return (std::borrow::Cow::Borrowed(text), found);
        }
        let mut out = replace_all(text, &found);
        for _ in 1..passes {
            let more = self.detect(&out);
            if more.is_empty() {
                return (std::borrow::Cow::Owned(out), found);
            }
            out = replace_all(&out, &more);
        }
        if let Some(left) = self.detect(&out).first() {
            out = left.entity.placeholder().to_owned();
        }
        (std::borrow::Cow::Owned(out), found)
    }
}

/// The most ASCII letters a match of `dfa`'s triggers (anchored, all matches, at the start
/// of a text) can start with while it still needs more: the longest walk from the start over
/// letters only that neither dies nor matches. `usize::MAX` when a walk over letters matches
/// or never has to end (or is longer than 64).
fn leading_letters(
    dfa: &regex_automata::dfa::dense::DFA<Vec<u32>>,
    start: regex_automata::util::primitives::StateID,
) -> usize {
    use regex_automata::dfa::Automaton;
    use regex_automata::util::primitives::StateID;
    const UNBOUNDED: usize = usize::MAX;
    // Depth-first, each state's answer kept; a state met again on the way is a cycle.
    fn walk(
        dfa: &regex_automata::dfa::dense::DFA<Vec<u32>>,
        sid: StateID,
        depth: usize,
        known: &mut HashMap<StateID, Option<usize>>,
    ) -> usize {
        match known.get(&sid) {
            Some(Some(n)) => return *n,
            Some(None) => return UNBOUNDED,
            None => {}
        }
        if depth > 64 {
            return UNBOUNDED;
        }
        known.insert(sid, None);
        let mut most = 0;
        for b in (b'A'..=b'Z').chain(b'a'..=b'z') {
            let next = dfa.next_state(sid, b);
            if dfa.is_dead_state(next) {
                continue;
            }
            if dfa.is_match_state(next) || dfa.is_quit_state(next) {
                most = UNBOUNDED;
                break;
            }
            most = most.max(walk(dfa, next, depth + 1, known).saturating_add(1));
            if most == UNBOUNDED {
                break;
            }
        }
        known.insert(sid, Some(most));
        most
    }
    walk(dfa, start, 0, &mut HashMap::new())
}

/// The fewest digits a bare number glued after an address's letters has for the address to
/// end at the letters (see `email_glued`): an ID, not a typo's stray digit (`a@b.cc1`), a
/// numbered host (`admin@db.ca0001`) or a year.
const BARE_NUMBER_DIGITS: usize = 6;

/// Whether what stands at `r` (right after a domain label's leading letters) is a bare
/// number of [`BARE_NUMBER_DIGITS`] digits or more, or a date (`2024-01-15`, `2024/01/15`,
/// `2024.01.15`, with a time after a `T` and a zone or not: `2024-01-15T12:00:00Z`,
/// `20240115T120000Z`), that ends the domain: not going on as a word (a letter, a digit,
/// `-`, `_`, `+`: a half zone) or as a dotted number or another label (`.5`, `.com`,
/// `.рф`).
fn bare_number(text: &str, r: usize) -> bool {
    let b = text.as_bytes();
    let digits = |i: usize| {
        b.get(i..).map_or(0, |rest| {
            rest.iter().take_while(|c| c.is_ascii_digit()).count()
        })
    };
    let at = |i: usize, c: u8| b.get(i) == Some(&c);
    let n = digits(r);
    let mut i = r + n;
    if n == 4 && matches!(b.get(i), Some(b'-' | b'/' | b'.')) {
        // A date: the same separator twice.
        let sep = b[i];
        if !(digits(i + 1) == 2 && at(i + 3, sep) && digits(i + 4) == 2) {
            return false;
        }
        i += 6;
    } else if n < BARE_NUMBER_DIGITS {
        return false;
    }
    // A time, and its zone.
    if at(i, b'T') {
        match digits(i + 1) {
            2 if at(i + 3, b':') && digits(i + 4) == 2 => {
                i += 6;
                if at(i, b':') && digits(i + 1) == 2 {
                    i += 3;
                }
                if at(i, b'.') && digits(i + 1) > 0 {
                    i += 1 + digits(i + 1);
                }
            }
            4 | 6 => i += 1 + digits(i + 1),
            _ => return false,
        }
        if at(i, b'Z') {
            i += 1;
        } else if matches!(b.get(i), Some(b'+' | b'-')) && digits(i + 1) >= 2 {
            i += 3;
            if at(i, b':') {
                i += 1;
            }
            i += digits(i).min(2);
        }
    }
    match b.get(i) {
        None => true,
        Some(c) if c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'+') || *c >= 0x80 => {
            false
        }
        Some(b'.') => !b
            .get(i + 1)
            .is_some_and(|&c| c.is_ascii_alphanumeric() || c == b'-' || c >= 0x80),
        Some(_) => true,
    }
}

impl PiiDetector {
    /// Whether the address `text[s..e]` is the login of a Git host's SSH user
    /// (`git@github.com`, as in `git@github.com:org/repo.git` or
    /// `ssh://git@gitlab.example.com/…`): a service account every clone and push names, not
    /// a person's mailbox. Only the user `git` exactly, on a plain ASCII host that holds no
    /// value of its own (`git@4111111111111111.example` stays an address) nor a run of five
    /// digits (which a word before the address could make an SSN or a phone number:
    /// `ssn: git@536221234.com`), and followed by the end of the text, a blank, a path or
    /// port's `:` or `/`, a closing quote or bracket, or a sentence's last punctuation — not by
    /// another `@` (`git@github.comjane.doe@example.com`: the host ran on into the next
    /// address's local part).
    fn ssh_login(&self, text: &str, s: usize, e: usize) -> bool {
        let b = text.as_bytes();
        let ends = match b.get(e) {
            None => true,
            Some(b'.' | b',' | b';' | b'!' | b'?') => {
                b.get(e + 1).is_none_or(u8::is_ascii_whitespace)
            }
            Some(&c) => {
                c.is_ascii_whitespace()
                    || matches!(
                        c,
                        b':' | b'/' | b'"' | b'\'' | b'`' | b')' | b']' | b'}' | b'>'
                    )
            }
        };
        let digits = |host: &str| {
            host.as_bytes()
                .split(|c| !c.is_ascii_digit())
                .any(|run| run.len() >= 5)
        };
        ends && text[s..e].strip_prefix("git@").is_some_and(|host| {
            host.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-')
                && !digits(host)
                && !self.contains_any(host)
        })
    }
}

/// Whether what stands at `i` is glued on to what ends there: a letter, a digit, or a
/// character that starts a value or goes on with one (`(`, `+`, `-`, `_`), or one past
/// ASCII.
fn glued_on(text: &str, i: usize) -> bool {
    validate::byte_at(text, i).is_some_and(|b| {
        b.is_ascii_alphanumeric() || matches!(b, b'(' | b'+' | b'-' | b'_') || b >= 0x80
    })
}

/// The most passes [`PiiDetector::redact`] (and the guard) makes before it replaces the whole
/// text instead: each pass costs one scan, and only values glued to each other (each
/// hiding the next) need more than two — a list, even without separators beyond a space,
/// is found in one.
pub const MAX_REDACTION_PASSES: usize = 8;

fn replace_all(text: &str, found: &[Detection]) -> String {
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    for d in found {
        // Detections never overlap (the scan merges them); were one ever to, the text it
        // shares with the one before is replaced once, not sliced backwards.
        if d.end <= last {
            continue;
        }
        out.push_str(&text[last..d.start.max(last)]);
        out.push_str(d.entity.placeholder());
        last = d.end;
    }
    out.push_str(&text[last..]);
    out
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A small seeded generator (xorshift) for the generated-input tests: `next(m)` is in
    /// `0..m`.
    pub(crate) fn numbers(seed: u64) -> impl FnMut(usize) -> usize {
        let mut n = seed;
        move |m| {
            n ^= n << 13;
            n ^= n >> 7;
            n ^= n << 17;
            (n % m as u64) as usize
        }
    }

    /// A detector of every built-in pattern with `strip` applied to each spec (to remove a
    /// shortcut and compare with the detector that has it).
    fn built_without(strip: impl Fn(&mut Spec)) -> PiiDetector {
        let specs = specs()
            .into_iter()
            .map(|mut sp| {
                strip(&mut sp);
                sp
            })
            .collect();
        PiiDetector {
            compiled: Arc::new(Compiled::from_specs(specs).unwrap()),
        }
    }

    fn found(text: &str) -> Vec<(Entity, &str)> {
        PiiDetector::new()
            .detect(text)
            .into_iter()
            .map(|d| (d.entity, &text[d.start..d.end]))
            .collect()
    }

    /// That `d` finds exactly the values `want` in `text` (as [`found`] reads them), and that
    /// redacting them in one pass leaves nothing to find.
    fn finds_and_redacts(d: &PiiDetector, text: &str, want: &[&str]) {
        let got: Vec<&str> = found(text).into_iter().map(|(_, v)| v).collect();
        assert_eq!(got, want, "{text}");
        let (out, first) = d.redact(text);
        assert_eq!(out, replace_all(text, &first), "{text}");
        assert!(d.detect(&out).is_empty(), "{out}");
    }

    #[test]
    fn every_entity_alone_builds_a_detector_that_finds_it() {
        for (entity, sample) in [
            (Entity::Email, "mail jane.doe@example.com now"),
            (Entity::CreditCard, "card 4111 1111 1111 1111 now"),
        ] {
            let d = PiiDetector::for_entities(&[entity]).unwrap();
            assert_eq!(d.detect(sample).len(), 1, "{entity}");
        }
        for entity in Entity::ALL {
            assert!(PiiDetector::for_entities(&[entity]).is_ok(), "{entity}");
        }
    }

    #[test]
    fn detectors_for_the_same_entities_share_one_build() {
        let a = PiiDetector::for_entities(&[Entity::Phone, Entity::Email]).unwrap();
        let b = PiiDetector::for_entities(&[Entity::Email, Entity::Phone, Entity::Email]).unwrap();
        assert!(Arc::ptr_eq(&a.compiled, &b.compiled));
        let email_only = PiiDetector::for_entities(&[Entity::Email]).unwrap();
        assert!(!Arc::ptr_eq(&a.compiled, &email_only.compiled));
        let text = "call 415-555-2671 or mail jane@example.com";
        assert_eq!(a.detect(text).len(), 2);
        assert_eq!(
            email_only
                .detect(text)
                .iter()
                .map(|d| d.entity)
                .collect::<Vec<_>>(),
            [Entity::Email]
        );
    }

    #[test]
    fn every_pattern_compiles() {
        for sp in specs() {
            assert!(
                sp.exact.is_empty() || MetaRegex::new(&sp.exact).is_ok(),
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
        assert_eq!(PiiDetector::new().compiled.kinds.len(), 30);
        assert_eq!(PiiDetector::new().compiled.passes.len(), PASSES);
    }

    /// A card number glued to letters is one where the word it stands in is no hex string
    /// (a hash or an id) longer than it by more than four characters: read 32 bytes on
    /// each side, so that a run of hex with no break costs each candidate no more.
    #[test]
    fn a_card_glued_to_a_hex_word_is_an_id() {
        let d = PiiDetector::new();
        for text in [
            "id deadbeefcafe4111111111111111 ok",
            "id 4111111111111111abcdef0123 ok",
            "id a0123456789abcdef0123456789abcdef4111111111111111 ok",
        ] {
            assert_eq!(found(text), [], "{text}");
        }
        for (text, card) in [
            ("VISA4111111111111111 ok", "4111111111111111"),
            ("ref abc4111111111111111 ok", "4111111111111111"),
            // (A letter no hex string holds within the 32 bytes read: as before.)
            (
                "ref zz0123456789abcdef012a4111111111111111 ok",
                "4111111111111111",
            ),
        ] {
            let hits = d.detect(text);
            assert_eq!(hits.len(), 1, "{text}");
            assert_eq!(&text[hits[0].start..hits[0].end], card);
        }
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
    fn the_ssh_login_of_a_git_host_is_not_an_address() {
        // Remotes as `git clone`, `git remote -v`, `.git/config` and `ssh` write them.
        for text in [
            "git clone git@github.com:org/repo.git",
            "origin\tgit@gitlab.com:group/sub/proj.git (fetch)",
            "url = ssh://git@gitlab.example.com:2222/group/proj.git",
            "remote = git@ssh.dev.azure.com:v3/org/proj/repo",
            "ssh -T git@github.com",
            "[\"git@bitbucket.org:team/repo.git\"]",
            "git%40github.com:a/b",
            "请克隆git@github.com:org/repo.git",
            "(git@github.com)",
            "Host key verified for git@github.com.",
            "{\"ssh_url\": \"git@github.com:o/r.git\"}",
        ] {
            assert_eq!(found(text), [], "{text}");
        }
        // Another user, a host that holds a value, or a value glued on: reported as before.
        let card = "4111111111111111";
        for (text, want) in [
            (
                "jane.git@github.com",
                vec![(Entity::Email, "jane.git@github.com")],
            ),
            ("xgit@github.com", vec![(Entity::Email, "xgit@github.com")]),
            ("Git@github.com", vec![(Entity::Email, "Git@github.com")]),
            (
                "git@4111111111111111.example",
                vec![(Entity::Email, "git@4111111111111111.example")],
            ),
            (
                "git@github.com:4111111111111111",
                vec![(Entity::CreditCard, card)],
            ),
            (
                "git@github.com jane@example.com",
                vec![(Entity::Email, "jane@example.com")],
            ),
            (
                "git@SG.abcdefghijklmnop.qrstuvwxyzabcdefghijklmnopqrstuvwxyz1234",
                vec![(
                    Entity::Secret,
                    "git@SG.abcdefghijklmnop.qrstuvwxyzabcdefghijklmnopqrstuvwxyz1234",
                )],
            ),
            (
                "https://git:s3cr3tP4ss@github.com/org/r.git",
                vec![(Entity::Secret, "s3cr3tP4ss")],
            ),
            // A host that runs on into another address's local part (found by an attack
            // review: the second address was never read), in any form of `@`.
            (
                "git@github.comjane.doe@example.com",
                vec![(Entity::Email, "git@github.comjane.doe")],
            ),
            (
                "git@github.com.jane@example.com",
                vec![(Entity::Email, "git@github.com.jane")],
            ),
            (
                "git@github.com.jane＠example.com",
                vec![(Entity::Email, "git@github.com.jane")],
            ),
            (
                "git@github.comgit@gitlab.com",
                vec![(Entity::Email, "git@github.comgit")],
            ),
            // Digits a word before the address would make a value.
            (
                "ssn: git@536221234.com",
                vec![(Entity::Email, "git@536221234.com")],
            ),
            (
                "call git@806378550722.git",
                vec![(Entity::Email, "git@806378550722.git")],
            ),
        ] {
            assert_eq!(found(text), want, "{text}");
        }
    }

    #[test]
    fn the_formats_people_write_every_day() {
        let pem_long = format!(
            "-----BEGIN EC PRIVATE KEY-----\n{}\n-----END EC PRIVATE KEY-----",
            "MHcCAQEEIMPTwRx/szOFrYo29CtKxcTe".repeat(8)
        );
        let pem_no_end = "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEAtdbG2Pll16y89PL1FMnMxmoimsM6\nptZbANLH9oRPp8ofd4yuTYrJsiMY";
        let pem_flat = "-----BEGIN OPENSSH PRIVATE KEY----- b3BlbnNzaC1rZXktdjEAAAAABG5vbm HJUW3loK12ASJ7h2CmbZ -----END OPENSSH PRIVATE KEY-----";
        let pgp = "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\nlFgEoIAaRxYJKwYBBAHaRw8BvjMRq1McKV0oLRzu\n=ETM5\n-----END PGP PRIVATE KEY BLOCK-----";
        let cases: [(&str, &str, Entity); 24] = [
            ("call +44 7911 123456 now", "+44 7911 123456", Entity::Phone),
            (
                "call +33 6 12 34 56 78 now",
                "+33 6 12 34 56 78",
                Entity::Phone,
            ),
            ("call +91-98765-43210 now", "+91-98765-43210", Entity::Phone),
            (
                "call 0044 7911 123456 now",
                "0044 7911 123456",
                Entity::Phone,
            ),
            (
                "call +44 (0) 20 7981 2838 now",
                "+44 (0) 20 7981 2838",
                Entity::Phone,
            ),
            ("call 1 615 507 6170 now", "1 615 507 6170", Entity::Phone),
            ("call +4915061574115 now", "+4915061574115", Entity::Phone),
            (
                "card 4111.1111.1111.1111 ok",
                "4111.1111.1111.1111",
                Entity::CreditCard,
            ),
            (
                "card 4111\u{A0}1111\u{A0}1111\u{A0}1111 ok",
                "4111\u{A0}1111\u{A0}1111\u{A0}1111",
                Entity::CreditCard,
            ),
            (
                "card4111111111111111 ok",
                "4111111111111111",
                Entity::CreditCard,
            ),
            ("ssn 123.45.6789 ok", "123.45.6789", Entity::Ssn),
            (
                "iban de89370400440532013000 ok",
                "de89370400440532013000",
                Entity::Iban,
            ),
            (
                "iban DE89-3704-0044-0532-0130-00 ok",
                "DE89-3704-0044-0532-0130-00",
                Entity::Iban,
            ),
            ("mail josé@bücher.de ok", "josé@bücher.de", Entity::Email),
            (
                "mail jane%40example.com ok",
                "jane%40example.com",
                Entity::Email,
            ),
            (
                "mail jane＠example.com ok",
                "jane＠example.com",
                Entity::Email,
            ),
            (
                "mail ja\u{200B}ne@exam\u{AD}ple.com ok",
                "ja\u{200B}ne@exam\u{AD}ple.com",
                Entity::Email,
            ),
            ("mail a@b.com_ ok", "a@b.com", Entity::Email),
            (&pem_long, &pem_long, Entity::Secret),
            (pem_no_end, pem_no_end, Entity::Secret),
            (pem_flat, pem_flat, Entity::Secret),
            (pgp, pgp, Entity::Secret),
            (
                "token glpat-h9dcuyTMztfjqcmbauP0 ok",
                "glpat-h9dcuyTMztfjqcmbauP0",
                Entity::Secret,
            ),
            (
                "hook https://hooks.slack.com/services/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 ok",
                "https://hooks.slack.com/services/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",
                Entity::Secret,
            ),
        ];
        for (text, want, entity) in cases {
            assert_eq!(found(text), [(entity, want)], "{text}");
        }
        for token in [
            "npm_681yPtuxTHs6Nn6TyaKBQvpKg84jdDtbt5xi",
            "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",
        ] {
            assert_eq!(found(&format!("key {token} ok")), [(Entity::Secret, token)]);
        }
        // Placeholders, checksum failures and look-alikes stay.
        for not in [
            "npm_XXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX",
            "https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX",
            "phone '+33 6 51 57 79 552'",
            "(199) 805-3511",
            "isbn 0-306-40615-2",
            "-----BEGIN PGP PUBLIC KEY BLOCK-----\n\nmDMEYmgeVhYJKwYBBAHaRw8BCCv6n0QOZWsIlNmR19",
            "ssn 000.17.3279",
            "iban de49793376892366276030",
        ] {
            assert!(found(not).is_empty(), "{not}: {:?}", found(not));
        }
        // Redaction replaces the whole original span, invisible characters included.
        let (out, _) = PiiDetector::new()
            .redact("mail ja\u{200B}ne@example.com, card ４１１１ １１１１ １１１１ １１１１.");
        assert_eq!(out, "mail [REDACTED_EMAIL], card [REDACTED_CREDIT_CARD].");
    }

    /// An address glued to a bare number that is no value on its own (the next cell's
    /// order number, `jane@tailspin.travel70010423`) was no address at all: the digits
    /// after its last label's letters read as the word going on. A run of six digits or
    /// more, or a date or time stamp, that ends there now ends the address at the letters;
    /// the number stays.
    #[test]
    fn an_address_glued_to_a_bare_number_ends_at_its_letters() {
        let d = PiiDetector::new();
        for (text, address) in [
            (
                "cells jane@tailspin.travel70010423 end",
                "jane@tailspin.travel",
            ),
            ("ops@mail.example.org20240115, next", "ops@mail.example.org"),
            ("to x@y.co123456", "x@y.co"),
            ("mail a@b.com123456. Thanks", "a@b.com"),
            ("ü@müller.de55501234 ok", "ü@müller.de"),
            // A local part that fails from its first start: the later one is still read.
            ("see a..b@x.travel123456 ok", "b@x.travel"),
            // A date or a time stamp in the next cell.
            ("cells jane@example.com2024-01-15 end", "jane@example.com"),
            (
                "jane@tailspin.com20240115T120000Z next",
                "jane@tailspin.com",
            ),
            ("to x@y.de2024/01/15, then", "x@y.de"),
            ("a@b.co2024.01.15 ok", "a@b.co"),
            ("ops@x.org2024-01-15T12:30:00.123+02:00 ok", "ops@x.org"),
        ] {
            assert_eq!(found(text), [(Entity::Email, address)], "{text}");
            let (out, _) = d.redact(text);
            assert_eq!(out, text.replace(address, "[REDACTED_EMAIL]"), "{text}");
        }
        // A stray digit or three, a number going on as a word or a dotted number, an asset
        // name, letters that are no known top-level domain (a hostname, a matrix product in
        // code, a package): as before.
        for text in [
            "mail a@b.cc1 ok",
            "mail a@b.cc12345 ok",
            "mail a@b.com123456_x ok",
            "mail a@b.com123456.5 ok",
            "icon i@2x.png123456 ok",
            "ssh root@db.worker000001",
            "out = h@self.fc123456",
            "npm i pkg@scope.name123456",
            // A numbered host, a year, what is no date or goes on past one.
            "ssh admin@db.ca0001 -p 22",
            "ubuntu@ip.in2024",
            "mail a@b.com2024-1-15 ok",
            "mail a@b.com2024-01-15x ok",
            "mail a@b.com2024-01-15T1 ok",
            "mail a@b.com2024-01-15T12:30+0 ok",
            "mail a@b.com2024-01-15T12:30-0 ok",
            "mail a@b.com2024-01/15 ok",
        ] {
            assert!(found(text).is_empty(), "{text}: {:?}", found(text));
        }
        // A number inside the domain, another label after it: the whole address, and a
        // value glued after it apart.
        for (text, want) in [
            (
                "mail a@b.com1234.org ok",
                vec![(Entity::Email, "a@b.com1234.org")],
            ),
            (
                "ivan@mail.de202401.рф.ru70010423 ok",
                vec![(Entity::Email, "ivan@mail.de202401.рф.ru")],
            ),
            (
                "jane@a.co123456.例子.com415-555-2671 ok",
                vec![
                    (Entity::Email, "jane@a.co123456.例子.com"),
                    (Entity::Phone, "415-555-2671"),
                ],
            ),
        ] {
            assert_eq!(found(text), want, "{text}");
        }
    }

    /// Text pulled out of a table cell by cell glues an address to the next cell's value
    /// (`jane@example.com415-555-2671`). The address ends where the value starts — inside or
    /// right after its last label's letters, what is left a last label of two letters or
    /// more — and the value is reported on its own, so each gets its own rule: before, the
    /// domain read on into the value, and the address failed (both stayed in the clear) or
    /// took the value's first letters (`…comsk` left the key's body).
    #[test]
    fn an_address_glued_to_a_value_ends_where_the_value_starts() {
        let jwt = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U";
        // A header that carries a certificate chain (`x5c`) runs on for kilobytes before
        // its dot: longer than a glued value's cheap look walks.
        let long_jwt = format!(
            "eyJhbGciOiJSUzI1NiIsIng1YyI6WyJNSUlC{}In1d.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
            "QUFB".repeat(400)
        );
        let values = [
            (long_jwt.as_str(), Entity::Secret),
            ("4111111111111111", Entity::CreditCard),
            ("4111 1111 1111 1111", Entity::CreditCard),
            ("415-555-2671", Entity::Phone),
            ("+1 415 555 2671", Entity::Phone),
            ("123-45-6789", Entity::Ssn),
            ("DE89370400440532013000", Entity::Iban),
            ("de89 3704 0044 0532 0130 00", Entity::Iban),
            ("192.168.1.1", Entity::IpAddress),
            ("2001:db8::1", Entity::IpAddress),
            ("fe80::1", Entity::IpAddress),
            ("sk-proj-Ab3dEf9hIjKlMnOpQrStUvWx", Entity::Secret),
            ("AKIAIOSFODNN7EXAMPLE", Entity::Secret),
            ("ghp_jfs5PmXFxQfcM97YtJ1PgVZSTOUbb7Q1QSaJ", Entity::Secret),
            ("glpat-h9dcuyTMztfjqcmbauP0", Entity::Secret),
            (jwt, Entity::Secret),
        ];
        let addresses = [
            "jane@example.com",
            "a@b.co",
            "j.doe+tag@mail.example.org",
            "ü@müller.de",
            "x@y.info",
        ];
        let d = PiiDetector::new();
        for address in addresses {
            for (value, entity) in values {
                let text = format!("cells {address}{value} end");
                assert_eq!(
                    found(&text),
                    [(Entity::Email, address), (entity, value)],
                    "{text}"
                );
                let (out, _) = d.redact(&text);
                assert_eq!(
                    out,
                    format!("cells [REDACTED_EMAIL]{} end", entity.placeholder()),
                    "{text}"
                );
            }
        }
        // An address that fails whatever its end (its local part) leaves the value glued to
        // it standing on its own — unless a later start before the `@` makes an address.
        for (text, want) in [
            (
                format!("x a.@b.co{jwt} y"),
                vec![(Entity::Secret, jwt.to_owned())],
            ),
            (
                format!("x a.@b.co{long_jwt} y"),
                vec![(Entity::Secret, long_jwt.clone())],
            ),
            (
                "x 'a.@b.co415-555-2671 y".to_owned(),
                vec![(Entity::Phone, "415-555-2671".to_owned())],
            ),
            (
                "x a..b@b.co415-555-2671 y".to_owned(),
                vec![
                    (Entity::Email, "b@b.co".to_owned()),
                    (Entity::Phone, "415-555-2671".to_owned()),
                ],
            ),
        ] {
            let got: Vec<(Entity, String)> = found(&text)
                .into_iter()
                .map(|(e, v)| (e, v.to_owned()))
                .collect();
            assert_eq!(got, want, "{text}");
        }
        // Where nothing glued reads as a value, the address stands as it did.
        for (text, want) in [
            (
                "mail jane@example.com-based ok",
                vec![(Entity::Email, "jane@example.com")],
            ),
            ("mail x@y.co_z ok", vec![(Entity::Email, "x@y.co")]),
            (
                "mail ops@host.ab12345678.example.com ok",
                vec![(Entity::Email, "ops@host.ab12345678.example.com")],
            ),
            ("mail a@b.cc1 ok", vec![]),
            ("mail a@b.company4 ok", vec![]),
            ("mail a@b.co-1 ok", vec![(Entity::Email, "a@b.co")]),
            // A key's body that runs into an address keeps only the key (a URL's user
            // part)…
            (
                "see https://ghp_jfs5PmXFxQfcM97YtJ1PgVZSTOUbb7Q1QSaJ@github.com/org/repo",
                vec![(Entity::Secret, "ghp_jfs5PmXFxQfcM97YtJ1PgVZSTOUbb7Q1QSaJ")],
            ),
            // An asset name is no address, whatever is glued to it.
            (
                "icon i@2x.png4111111111111111 ok",
                vec![(Entity::CreditCard, "4111111111111111")],
            ),
        ] {
            assert_eq!(found(text), want, "{text}");
        }
        // … unless a value is glued on after the address: then the address is taken in, so
        // the value is not left glued to a bare domain that nothing reads (found by a
        // hostile review: three cells in a row left the phone in the clear).
        let text = "jane@example.comsk-proj-Ab3dEf9hIjKlMnOpQrStUvWxbob@corp.com(415) 555-2671";
        assert_eq!(
            found(text),
            [
                (Entity::Email, "jane@example.com"),
                (
                    Entity::Secret,
                    "sk-proj-Ab3dEf9hIjKlMnOpQrStUvWxbob@corp.com"
                ),
                (Entity::Phone, "(415) 555-2671")
            ]
        );
        assert_eq!(
            d.redact(text).0,
            "[REDACTED_EMAIL][REDACTED_SECRET][REDACTED_PHONE]"
        );
    }

    /// Found by a hostile review (2026-12-03): a digit-led value glued to text in another
    /// script and an address (`1.1.1.1中a@b.co`) came out as two overlapping detections —
    /// the address's candidate started on the digits (they are local-part characters) and
    /// its detection after the CJK, so it was held back, while the IPv4 address grew over
    /// it — and `redact` panicked slicing backwards. Each value is reported on its own now,
    /// and no pair of reported spans overlaps, whatever is glued to what.
    #[test]
    fn a_value_glued_across_another_script_to_an_address_is_reported_apart() {
        assert_eq!(
            found("1.1.1.1中a@b.co"),
            [(Entity::IpAddress, "1.1.1.1"), (Entity::Email, "a@b.co")]
        );
        assert_eq!(
            found("4111111111111111中a@b.co"),
            [
                (Entity::CreditCard, "4111111111111111"),
                (Entity::Email, "a@b.co")
            ]
        );
        assert_eq!(
            found("123-45-6789中a@b.co"),
            [(Entity::Ssn, "123-45-6789"), (Entity::Email, "a@b.co")]
        );
        // Glued right on (no gap), a value whose trigger read the address's last character
        // as its border is taken in, as before (found by the next review)…
        assert_eq!(
            found("a@b.рф2001:db8::1"),
            [(Entity::Email, "a@b.рф2001:db8::1")]
        );
        // …unless the address's last label ends in ASCII letters: then the value is read
        // from there on its own and reported apart (see `email_glued`).
        assert_eq!(
            found("ü@müller.de4111111111111111"),
            [
                (Entity::Email, "ü@müller.de"),
                (Entity::CreditCard, "4111111111111111")
            ]
        );
        assert_eq!(
            found("a@中.co4111 1111 1111 1111"),
            [
                (Entity::Email, "a@中.co"),
                (Entity::CreditCard, "4111 1111 1111 1111")
            ]
        );
        let values = [
            "1.1.1.1",
            "4111111111111111",
            "4111 1111 1111 1111",
            "123-45-6789",
            "415-555-2671",
            "DE89370400440532013000",
            "jane@example.com",
            "a@b.co",
            "sk-proj-abcdefghijklmnopqrstuvwxyz012345",
            "ghp_jfs5PmXFxQfcM97YtJ1PgVZSTOUbb7Q1QSaJ",
            "2001:db8::1",
            "ü@müller.de",
            "a@b.рф",
            "fe80::1",
        ];
        let glue = [
            "中", "é", "я", "", " ", "x", ".", "+", "%2B", "'", "中中", "\u{200B}",
        ];
        let d = PiiDetector::new();
        let mut texts = 0;
        for a in values {
            for g in glue {
                for b in values {
                    for h in glue {
                        let text = format!("{a}{g}{b}{h}{a}");
                        let got = d.detect(&text);
                        for w in got.windows(2) {
                            assert!(w[0].end <= w[1].start, "{text}: {got:?}");
                        }
                        let (out, _) = d.redact(&text);
                        assert!(d.detect(&out).is_empty(), "{text} -> {out}");
                        texts += 1;
                    }
                }
            }
        }
        assert_eq!(texts, values.len() * values.len() * glue.len() * glue.len());
    }

    #[test]
    fn what_an_attack_review_found_leaking_or_wrongly_redacted() {
        // Written by word processors and in other scripts: found.
        for (text, want, entity) in [
            // After a word that ends in a digit: not the first group of a longer number.
            (
                "f1 4111 1111 1111 1111",
                "4111 1111 1111 1111",
                Entity::CreditCard,
            ),
            (
                "item 2 of order ref12 4111 1111 1111 1111 ok",
                "4111 1111 1111 1111",
                Entity::CreditCard,
            ),
            ("call 415–555–2671 now", "415–555–2671", Entity::Phone),
            ("ssn 123–45–6789 ok", "123–45–6789", Entity::Ssn),
            (
                "card 4111‑1111‑1111‑1111 ok",
                "4111‑1111‑1111‑1111",
                Entity::CreditCard,
            ),
            ("call ٤١٥-٥٥٥-٢٦٧١ now", "٤١٥-٥٥٥-٢٦٧١", Entity::Phone),
            (
                "card ४१११ ११११ ११११ ११११ ok",
                "४१११ ११११ ११११ ११११",
                Entity::CreditCard,
            ),
            (
                r#"{"SocialSecurityNumber": "123456789"}"#,
                "123456789",
                Entity::Ssn,
            ),
            // JSON escapes (Python json.dumps) and HTML entities.
            (
                r"mail jos\u00e9@example.com ok",
                r"jos\u00e9@example.com",
                Entity::Email,
            ),
            (
                r"mail jane\u0040example.com ok",
                r"jane\u0040example.com",
                Entity::Email,
            ),
            (
                "mail jane&#64;example.com ok",
                "jane&#64;example.com",
                Entity::Email,
            ),
            ("mail jane&#64;ex.com€", "jane&#64;ex.com", Entity::Email),
            (
                "電話 03&nbsp;1234&nbsp;5678です",
                "03&nbsp;1234&nbsp;5678",
                Entity::Phone,
            ),
            (
                r"mail jos\\u00e9@example.com ok",
                r"jos\\u00e9@example.com",
                Entity::Email,
            ),
            ("From=%2B14155552671&x=1", "%2B14155552671", Entity::Phone),
            ("phone=415%20555%202671", "415%20555%202671", Entity::Phone),
            // Form encoding: `+` for a space between digits.
            ("phone=415+555+2671&x=1", "415+555+2671", Entity::Phone),
            // A sentence glued on after the full stop that ends an address: not its domain.
            (
                "Write to jane@example.com.I will answer",
                "jane@example.com",
                Entity::Email,
            ),
            (
                "mail jane@mail.example.co.a ok",
                "jane@mail.example.co",
                Entity::Email,
            ),
            (
                "to=%2B44+20+7946+0958&x=1",
                "%2B44+20+7946+0958",
                Entity::Phone,
            ),
            (
                "card=4111+1111+1111+1111&cvc=1",
                "4111+1111+1111+1111",
                Entity::CreditCard,
            ),
            ("ssn=078+05+1120&", "078+05+1120", Entity::Ssn),
            (
                "call +44 20 7946 0958 now",
                "+44 20 7946 0958",
                Entity::Phone,
            ),
            // Encoded twice or three times (a URL inside a URL, HTML escaped twice).
            (
                "next=%2Fmail%3Fto%3Djane%2540example.com",
                "jane%2540example.com",
                Entity::Email,
            ),
            (
                "mail jane.doe%2540corp@example.com ok",
                "jane.doe%2540corp@example.com",
                Entity::Email,
            ),
            (
                "mail jane%2540@example.com ok",
                "jane%2540@example.com",
                Entity::Email,
            ),
            ("mail a%2540é@b.com ok", "a%2540é@b.com", Entity::Email),
            (
                "mail info%2540bü.jp@yahoo.co.jp ok",
                "info%2540bü.jp@yahoo.co.jp",
                Entity::Email,
            ),
            (
                "to=jane%252540example.com&x=1",
                "jane%252540example.com",
                Entity::Email,
            ),
            (
                "From=%252B14155552671&x=1",
                "%252B14155552671",
                Entity::Phone,
            ),
            (
                "phone=415%2520555%25202671",
                "415%2520555%25202671",
                Entity::Phone,
            ),
            (
                "mail jane&amp;#64;example.com ok",
                "jane&amp;#64;example.com",
                Entity::Email,
            ),
            (
                "mail jane&amp;amp;#x40;example.com ok",
                "jane&amp;amp;#x40;example.com",
                Entity::Email,
            ),
            (
                "card 4111&amp;nbsp;1111&amp;nbsp;1111&amp;nbsp;1111 ok",
                "4111&amp;nbsp;1111&amp;nbsp;1111&amp;nbsp;1111",
                Entity::CreditCard,
            ),
            (
                r"call 415\u2013555\u20132671 now",
                r"415\u2013555\u20132671",
                Entity::Phone,
            ),
            (
                "card 4111&nbsp;1111&nbsp;1111&nbsp;1111 ok",
                "4111&nbsp;1111&nbsp;1111&nbsp;1111",
                Entity::CreditCard,
            ),
            ("SSN 123-45-6789 2024", "123-45-6789", Entity::Ssn),
            (
                "Visa 4111 1111 1111 1111 2025",
                "4111 1111 1111 1111",
                Entity::CreditCard,
            ),
            ("call 415-555-2671 8am-5pm", "415-555-2671", Entity::Phone),
            ("Room 12 415-555-2671", "415-555-2671", Entity::Phone),
            (
                "Order 12345 4111111111111111",
                "4111111111111111",
                Entity::CreditCard,
            ),
            (
                "John Doe 1980-01-02 123-45-6789",
                "123-45-6789",
                Entity::Ssn,
            ),
            ("CA 94103 415-555-2671", "415-555-2671", Entity::Phone),
            ("+44 20 7981 2838 24/7", "+44 20 7981 2838", Entity::Phone),
            ("call 98765 43210 now", "98765 43210", Entity::Phone),
            ("Mobile: 98765-43210", "98765-43210", Entity::Phone),
            ("Tel. 06221 12345", "06221 12345", Entity::Phone),
            (
                "call +54 9 11 1234-5678 now",
                "+54 9 11 1234-5678",
                Entity::Phone,
            ),
            ("call +1 415 555 2671x23", "+1 415 555 2671", Entity::Phone),
            (
                "call +49 030 12345678 now",
                "+49 030 12345678",
                Entity::Phone,
            ),
            (
                "mail o'brien@example.com ok",
                "o'brien@example.com",
                Entity::Email,
            ),
            (
                "mail 'jane@example.com' ok",
                "jane@example.com",
                Entity::Email,
            ),
            (
                "mail jane@example。com ok",
                "jane@example。com",
                Entity::Email,
            ),
            (
                "mail jane@example.xn--p1ai ok",
                "jane@example.xn--p1ai",
                Entity::Email,
            ),
            (
                "card 4111  1111  1111  1111 ok",
                "4111  1111  1111  1111",
                Entity::CreditCard,
            ),
            (
                "card 6759 6498 2643 8453 ok",
                "6759 6498 2643 8453",
                Entity::CreditCard,
            ),
            (
                "card 5019 7170 1010 3742 ok",
                "5019 7170 1010 3742",
                Entity::CreditCard,
            ),
            (
                "token xapp-1-A0123456789-1234567890123-abcdef0123456789 ok",
                "xapp-1-A0123456789-1234567890123-abcdef0123456789",
                Entity::Secret,
            ),
            // Private keys with escaped slashes, no line break, or quoted line by line.
            (
                r"k: -----BEGIN PRIVATE KEY-----\nMIIBVQIBADANBgkq\/hkiG9w0BAQEFAASCAT8w\/\n-----END PRIVATE KEY-----",
                r"-----BEGIN PRIVATE KEY-----\nMIIBVQIBADANBgkq\/hkiG9w0BAQEFAASCAT8w\/\n-----END PRIVATE KEY-----",
                Entity::Secret,
            ),
            (
                "k: -----BEGIN PRIVATE KEY-----MIIBVQIBADANBgkqhkiG9w0BAQEFAASCAT8w-----END PRIVATE KEY-----",
                "-----BEGIN PRIVATE KEY-----MIIBVQIBADANBgkqhkiG9w0BAQEFAASCAT8w-----END PRIVATE KEY-----",
                Entity::Secret,
            ),
            (
                "> -----BEGIN PRIVATE KEY-----\n> MIIBVQIBADANBgkqhkiG9w0B\n> AQEFAASCAT8wggE7AgEAAkEA\n> -----END PRIVATE KEY-----\n",
                "-----BEGIN PRIVATE KEY-----\n> MIIBVQIBADANBgkqhkiG9w0B\n> AQEFAASCAT8wggE7AgEAAkEA\n> -----END PRIVATE KEY-----",
                Entity::Secret,
            ),
        ] {
            assert_eq!(found(text), [(entity, want)], "{text}");
        }
        // Several numbers separated by spaces: each is found.
        for (text, n) in [
            ("123-45-6789 234-56-7890", 2),
            ("4111111111111111 5555555555554444", 2),
            ("Phones: 415-555-2671 415-555-2672", 2),
            ("(415) 555-2671 (212) 555-0199", 2),
        ] {
            assert_eq!(found(text).len(), n, "{text}: {:?}", found(text));
        }
        // National numbers side by side: a redaction pass frees the next one.
        let (out, _) = PiiDetector::new().redact("call 020 7946 0958 020 7946 0959 now");
        assert_eq!(out, "call [REDACTED_PHONE] [REDACTED_PHONE] now");
        // Everyday text that is not personal data: left alone.
        for text in [
            "news/sk-hynix-q3-2024-earnings-beat-estimates",
            "sk-learn-tutorial-for-beginners-2024",
            "tracking 0123456789",
            "account 0123456789",
            "ISBN 0306406152",
            "serial 02012345678",
            "part no 0123 456 789",
            "Lottery: 05 12 23 34 45 56",
            "version 1.2.3.4",
            "Mozilla/5.0 Chrome/120.0.0.0 Safari/537.36",
            "SHA1 Fingerprint=AB:CD:EF:01:23:45:67:89:AB:CD:EF:01:23:45:67:89",
            r#"{"id":4155552671}"#,
            "pid=2125550123",
            "OID 2.5.4.3",
            "release 2.0.0.1",
        ] {
            assert!(found(text).is_empty(), "{text}: {:?}", found(text));
        }
        // A placeholder names what was there, not what follows.
        let (out, _) = PiiDetector::new().redact("Tel 415-555-2671, order 48213377");
        assert_eq!(out, "Tel [REDACTED_PHONE], order 48213377");
        // An IP address after a word for one is still found.
        assert_eq!(
            found("server 10.0.0.1 and 10.0.0.2"),
            [
                (Entity::IpAddress, "10.0.0.1"),
                (Entity::IpAddress, "10.0.0.2")
            ]
        );
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

    /// Found by a hostile review: values right after an escaped line break (a JSON string's
    /// `\n`, a URL's `%0A`, `%3D`) were glued to the escape's letter, so every pattern that
    /// starts at a word boundary missed them.
    #[test]
    fn values_after_escaped_line_breaks_and_encoded_punctuation_are_found() {
        let values = [
            (Entity::Secret, "AKIAIOSFODNN7EXAMPLE"),
            (Entity::Secret, "glpat-h9dcuyTMztfjqcmbauP0"),
            (Entity::Secret, "ghp_0123456789abcdefghijABCDEFGHIJ012345"),
            (Entity::Iban, "DE89370400440532013000"),
            (Entity::Iban, "de89370400440532013000"),
            (Entity::IpAddress, "10.1.2.3"),
            (Entity::IpAddress, "2001:db8::1"),
            (Entity::Email, "jane@example.com"),
        ];
        for before in [
            r"\n", r"\t", r"\r\n", r"\\n", r"\\\n", "%0A", "%22", "%3D", "=%0D%0A",
        ] {
            for (entity, value) in values {
                let text = format!("HOME=/root{before}{value}{before}next");
                assert_eq!(found(&text), [(entity, value)], "{text}");
            }
        }
    }

    #[test]
    fn invisible_format_characters_and_their_entities_cannot_split_a_value() {
        for sep in [
            "\u{200E}",
            "\u{200F}",
            "\u{202A}",
            "\u{202E}",
            "\u{2066}",
            "\u{2069}",
            "\u{061C}",
            "\u{034F}",
            "\u{FE0F}",
            "\u{E0020}",
            "\u{3164}",
            "\u{FFA0}",
            "&shy;",
            "&zwj;",
            "&lrm;",
        ] {
            let card = ["4111", "1111", "1111", "1111"].join(sep);
            let text = format!("card {card} now");
            assert_eq!(
                found(&text),
                [(Entity::CreditCard, card.as_str())],
                "{sep:?}"
            );
        }
    }

    #[test]
    fn pgp_private_keys_with_armor_headers_are_secrets() {
        for header in [
            "Comment: https://keybase.io/download",
            "Version: OpenPGP.js v4.10.10",
            "Version: GnuPG v2 (GNU/Linux)",
        ] {
            let key = format!(
                "-----BEGIN PGP PRIVATE KEY BLOCK-----\n{header}\n\nlQOYBF0ZZZsBCAC8wPq0rHqTcN1LhfJH6sdfkjh23kjhKJHkjh\n=ETM5\n-----END PGP PRIVATE KEY BLOCK-----"
            );
            let text = format!("key:\n{key}\nthanks");
            assert_eq!(found(&text), [(Entity::Secret, key.as_str())], "{header}");
        }
    }

    #[test]
    fn slack_webhooks_escaped_encoded_or_in_capitals_are_secrets() {
        let path = "services/TPK343W4J/B5DKKOYXM/eBfAj4FIjtqGYKiA4pL79iuA";
        for hook in [
            format!("https://HOOKS.SLACK.COM/{path}"),
            format!("https:\\/\\/hooks.slack.com\\/{}", path.replace('/', "\\/")),
            format!(
                "https%3A%2F%2Fhooks.slack.com%2F{}",
                path.replace('/', "%2F")
            ),
        ] {
            let text = format!("hook {hook} ok");
            let (out, _) = PiiDetector::new().redact(&text);
            assert_eq!(out, "hook [REDACTED_SECRET] ok", "{hook}");
        }
    }

    /// What agents pass to tools every day: a database URL with its password, an HTTP
    /// authorization header, a cloud connection string. The credential is the secret; the
    /// user, the host and the header's name stay readable. Templates a program fills in,
    /// masks, placeholders and prose are not credentials.
    #[test]
    fn credentials_in_urls_and_authorization_headers_are_secrets() {
        let azure = "BwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyAhIiMkJSYnKCkqKywtLi8wMTIzNDU2Nzg5Ojs8PT4/QEFCQ0RFRg==";
        let bus = "WltcXV5fYGFiY2RlZmdoaWprbG1ub3BxcnN0dXZ3eHk=";
        let long_vault = format!("hvb.{}", "AbCd1234efGH5678ijKL90mn".repeat(20));
        let long_token = "FwoGZXIvYXdzEBYaD9x".repeat(16);
        let cases: [(String, &[&str]); 279] = [
            ("DATABASE_URL=postgres://app:S3cr3tPassw0rd@db:5432/orders".into(), &["S3cr3tPassw0rd"]),
            ("redis://:p4ss!w0rd@redis:6379/0".into(), &["p4ss!w0rd"]),
            ("amqp://guest:guest@rabbitmq:5672/".into(), &["guest"]),
            // The password runs to the first `@` a host follows, and takes in `:` and `@`.
            ("https://deploy:p@ss:w0rd@git/x".into(), &["p@ss:w0rd"]),
            // JSON-escaped slashes, a percent-encoded `@` in the password or the user.
            (r#""url": "https:\/\/bot:Tok3n-value@git.internal\/repo""#.into(), &["Tok3n-value"]),
            ("https://user:pa%40ss@host/".into(), &["pa%40ss"]),
            ("postgres://jane.doe@example.com:S3cret99@db/x".into(), &["jane.doe@example.com", "S3cret99"]),
            ("curl -H 'Authorization: Bearer 8f3a9c2e71d04b5fa6e2c9d1b7f04e3a' https://api".into(), &["8f3a9c2e71d04b5fa6e2c9d1b7f04e3a"]),
            (r#"-H "authorization: bearer ya29.a0AfH6SMBx3k9Qz-7f_kLm~2+Zq/w==""#.into(), &["ya29.a0AfH6SMBx3k9Qz-7f_kLm~2+Zq/w=="]),
            ("Authorization: Basic amFuZTpodW50ZXIy\r\n".into(), &["amFuZTpodW50ZXIy"]),
            (format!("DefaultEndpointsProtocol=https;AccountName=acct;AccountKey={azure};EndpointSuffix=core.windows.net"), &[azure]),
            (format!("Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=Root;SharedAccessKey={bus}"), &[bus]),
            ("DIGITALOCEAN_TOKEN=dop_v1_3b7a5e9c1d2f4a6b8c0e1f2a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e".into(), &["dop_v1_3b7a5e9c1d2f4a6b8c0e1f2a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e"]),
            // Inside a run a failed `sk-` token passes over.
            (
                "sk-proj-Bearer 8f3a9c2e71d04b5fa6e2c9d1b7f04e3a".into(),
                &["8f3a9c2e71d04b5fa6e2c9d1b7f04e3a"],
            ),
            // Passwords as `.env` files hold them (unencoded) or percent-encoded, users in
            // any script.
            ("postgres://app:p#ss/w?rd9@db:5432/x".into(), &["p#ss/w?rd9"]),
            ("postgresql://app:Xk9%23mP2%24vL%5E@db".into(), &["Xk9%23mP2%24vL%5E"]),
            ("https://josé:pässwört99@host/".into(), &["pässwört99"]),
            // Basic credentials with an empty side (`curl -u sk_live_…:`), a line break
            // encoded at the end, unpadded, URL-safe.
            ("Authorization: Basic c2tfbGl2ZV80ZUMzOUhxTHlqV0Rhcmp0VDF6ZHA3ZGM6".into(), &["c2tfbGl2ZV80ZUMzOUhxTHlqV0Rhcmp0VDF6ZHA3ZGM6"]),
            ("Authorization: Basic dXNlcjpTM2NyZXRQdzk5Cg==".into(), &["dXNlcjpTM2NyZXRQdzk5Cg=="]),
            ("Basic YWRtaW46UzNjcmV0UHc5OQ".into(), &["YWRtaW46UzNjcmV0UHc5OQ"]),
            ("Basic dTp-fn4_".into(), &["dTp-fn4_"]),
            // Bearer tokens with `|` (Laravel Sanctum), `=` inside, groups of four, no digit.
            ("Authorization: Bearer 5|fYx7Kq2LmN8pRs4TvW6yZa1Bc3De5Fg7Hi9Jk0Lm".into(), &["5|fYx7Kq2LmN8pRs4TvW6yZa1Bc3De5Fg7Hi9Jk0Lm"]),
            ("Authorization: Bearer ATATT3xFfGF0T5lq8Zk2Hq9w=E5C3A1F0".into(), &["ATATT3xFfGF0T5lq8Zk2Hq9w=E5C3A1F0"]),
            ("Authorization: Bearer 7a3f-9c2e-1b4d-8e6f-2a9c".into(), &["7a3f-9c2e-1b4d-8e6f-2a9c"]),
            ("Authorization: Bearer abcdefghijklmnopqrstuvwxyzABCDEFGH".into(), &["abcdefghijklmnopqrstuvwxyzABCDEFGH"]),
            // In a header, one as short as another scheme's (review 32: the bearer
            // trigger's 16 characters left a 12-character token in clear).
            ("Authorization: Bearer Qz7mW2xR9kLp".into(), &["Qz7mW2xR9kLp"]),
            ("curl -H 'authorization: bearer 9f8e7d6c'".into(), &["9f8e7d6c"]),
            // A field named for a secret: env files, JSON (escaped too), YAML, connection
            // strings, query strings, code with a literal.
            ("DB_PASSWORD=hunter2\nDEBUG=1".into(), &["hunter2"]),
            ("MYSQL_ROOT_PASSWORD: 'c0rrect-h0rse'".into(), &["c0rrect-h0rse"]),
            // The variables tools read a secret from, and a session token's field.
            ("export MYSQL_PWD=Zq8rTw2xLk && mysql -uroot".into(), &["Zq8rTw2xLk"]),
            ("REDISCLI_AUTH=Zq8rTw2xLk redis-cli -h cache".into(), &["Zq8rTw2xLk"]),
            ("AWS_SESSION_TOKEN=IQoJb3JpZ2luX2VjEHYaCXVzLWVhc3QtMSJHMEUCIQD".into(), &["IQoJb3JpZ2luX2VjEHYaCXVzLWVhc3QtMSJHMEUCIQD"]),
            (r#"{"sessionToken": "FwoGZXIvYXdzEBYaDHqa0AP"}"#.into(), &["FwoGZXIvYXdzEBYaDHqa0AP"]),
            // A Vault token, named or not, of each kind.
            ("export VAULT_TOKEN=hvs.6j4cuewowBGit65rheNoceI7".into(), &["hvs.6j4cuewowBGit65rheNoceI7"]),
            ("vault login hvs.CAESIJlWcV3aV9Hh0f8sXo2z7kq1Jq6v1W8f0nAAbCdEfGhGh4KHGh2cy5YZ2N0dXZ4b0ZqT1Vrc0pR".into(), &["hvs.CAESIJlWcV3aV9Hh0f8sXo2z7kq1Jq6v1W8f0nAAbCdEfGhGh4KHGh2cy5YZ2N0dXZ4b0ZqT1Vrc0pR"]),
            ("token=hvb.AAAAAQJ2xTm9y0z8Kf3qLpWs7dRn1Vh5Ub4Ec6Ga".into(), &["hvb.AAAAAQJ2xTm9y0z8Kf3qLpWs7dRn1Vh5Ub4Ec6Ga"]),
            // (Found by an attack review: a namespace's id after it, a batch token longer
            // than the pattern's cap; `aws sts` output, a header, lower case.)
            ("X-Vault-Token: hvs.6j4cuewowBGit65rheNoceI7.AbC12 ok".into(), &["hvs.6j4cuewowBGit65rheNoceI7.AbC12"]),
            (format!("token {long_vault} ok"), &[long_vault.as_str()]),
            (r#"{"SessionToken": "FwoGZXIvYXdzEBYaDHqa0APZq8rTw2xLk"}"#.into(), &["FwoGZXIvYXdzEBYaDHqa0APZq8rTw2xLk"]),
            ("X-Session-Token: Zq8rTw2xLk9 ok".into(), &["Zq8rTw2xLk9"]),
            ("SESSION_TOKEN=Zq8rTw2xLk9".into(), &["Zq8rTw2xLk9"]),
            ("vault_token = \"hvs.6j4cuewowBGit65rheNoceI7\"".into(), &["hvs.6j4cuewowBGit65rheNoceI7"]),
            // A first character that is not ASCII, an escaped quote inside, aligned blanks,
            // Go's `:=`, a `$` that starts no variable.
            (r#"{"password": "äpfel2024"}"#.into(), &["äpfel2024"]),
            (r#"password = "pa\"ss9word""#.into(), &[r#"pa\"ss9word"#]),
            ("password          =    \"hunter2x\"".into(), &["hunter2x"]),
            ("password := \"hunter2x\"".into(), &["hunter2x"]),
            ("password=$ecretPa55".into(), &["$ecretPa55"]),
            // A name after `$` (PHP) or `{` (an object literal), a template's default,
            // a quoted value that starts like a YAML tag, keys with a dot or a name's word.
            ("$db_password = 'Xk9!mQ2#vL7p';".into(), &["Xk9!mQ2#vL7p"]),
            ("db.connect({password: \"Xk9mQ2vL7p!\"})".into(), &["Xk9mQ2vL7p!"]),
            ("spring.datasource.password=${DB_PASSWORD:Xk9mQ2vL7p}".into(), &["Xk9mQ2vL7p"]),
            ("password: \"@dmin2024\"".into(), &["@dmin2024"]),
            ("export MAPBOX_ACCESS_TOKEN=pk.eyJ1IjoiYWJjZGVmIiwiYSI6ImNsMTIzNDU2In0.AbCdEf123456".into(), &["pk.eyJ1IjoiYWJjZGVmIiwiYSI6ImNsMTIzNDU2In0.AbCdEf123456"]),
            ("AIRTABLE_API_KEY=keyAbC123dEf456Gh".into(), &["keyAbC123dEf456Gh"]),
            // A URL's password ends at the first `@` a host follows, not a path's.
            ("https://u:Xk9mQ2vL7p@npm.corp.com/@scope/pkg".into(), &["Xk9mQ2vL7p"]),
            // An `.env` line: the value runs to white space, punctuation and all.
            ("DB_PASSWORD=x8#kL(2m]Q;zpq\nexport API_KEY=Tr0ub4dor&3xyz".into(), &["x8#kL(2m]Q;zpq", "Tr0ub4dor&3xyz"]),
            (r#"{"password": "S3cr3t!", "user": "app"}"#.into(), &["S3cr3t!"]),
            (r#"{\"client_secret\": \"x9Yk2mQp\"}"#.into(), &["x9Yk2mQp"]),
            ("Server=db;Database=app;User Id=sa;Password=S3cretPw99;".into(), &["S3cretPw99"]),
            ("jdbc:postgresql://db:5432/app?user=app&password=S3cretPw99".into(), &["S3cretPw99"]),
            ("client = OpenAI(api_key=\"proj-4f9a8b7c6d5e\")".into(), &["proj-4f9a8b7c6d5e"]),
            ("spring.datasource.password=Tr0ub4dor&3".into(), &["Tr0ub4dor&3"]),
            ("'secret_key' => 'k3yV4lue',".into(), &["k3yV4lue"]),
            // A token a known pattern finds is that token, once.
            ("{'Authorization': 'Bearer sk_live_2eqsFEF0uZWEOvnwdrGbos3D9okYQFendEc51DjVQY7hRLG6YMyc'}".into(), &["sk_live_2eqsFEF0uZWEOvnwdrGbos3D9okYQFendEc51DjVQY7hRLG6YMyc"]),
            ("git clone https://oauth2:glpat-abcdefghij1234567890@gitlab.com/g/r.git".into(), &["glpat-abcdefghij1234567890"]),
            // A name quoted as an index (`os.environ[…] = …`), JSON-escaped too.
            ("os.environ[\"DB_PASSWORD\"] = \"Zq8rTw2xLk\"".into(), &["Zq8rTw2xLk"]),
            ("config['api_key']='Zq8rTw2xLk'".into(), &["Zq8rTw2xLk"]),
            (r#"d[\"password\"] = \"Zq8rTw2xLk\""#.into(), &["Zq8rTw2xLk"]),
            // A name and its value as a pair: Kubernetes' and ECS's environment variables,
            // pretty-printed, escaped, capitalised (CloudFormation).
            ("env:\n  - name: DB_PASSWORD\n    value: Zq8rTw2xLk\n".into(), &["Zq8rTw2xLk"]),
            ("- name: API_KEY\r\n  value: \"Zq8rTw2xLk\"".into(), &["Zq8rTw2xLk"]),
            ("[{\"name\": \"DB_PASSWORD\",\n  \"value\": \"Zq8rTw2xLk\"}]".into(), &["Zq8rTw2xLk"]),
            (r#"{\"name\":\"SECRET_KEY\",\"value\":\"Zq8rTw2xLk\"}"#.into(), &["Zq8rTw2xLk"]),
            ("- Name: client_secret\n  Value: Zq8rTw2xLk".into(), &["Zq8rTw2xLk"]),
            // SQL that sets a user's password: MySQL's and Oracle's `IDENTIFIED BY` (bare in
            // capitals, an authentication plugin's name before `BY`, in a JSON string),
            // PostgreSQL's `PASSWORD '…'`, and Chef's.
            ("CREATE USER 'bob'@'%' IDENTIFIED BY 'Zq8rTw2xLk';".into(), &["Zq8rTw2xLk"]),
            ("ALTER USER bob IDENTIFIED BY Zq8rTw2xLk;".into(), &["Zq8rTw2xLk"]),
            ("CREATE USER app IDENTIFIED WITH caching_sha2_password BY 'Zq8rTw2xLk';".into(), &["Zq8rTw2xLk"]),
            ("create user bob identified by \"Zq8rTw2xLk\";".into(), &["Zq8rTw2xLk"]),
            (r#"{"sql": "CREATE USER u IDENTIFIED BY \"Zq8rTw2xLk\";"}"#.into(), &["Zq8rTw2xLk"]),
            ("ALTER ROLE app WITH LOGIN PASSWORD 'Zq8rTw2xLk';".into(), &["Zq8rTw2xLk"]),
            ("user 'deploy' do\n  password 'Zq8rTw2xLk'\nend".into(), &["Zq8rTw2xLk"]),
            // Any service's token, a password shortened (ODBC's `Pwd=`, MongoDB's `pwd:`),
            // keys that encrypt or sign.
            ("GITHUB_TOKEN=Zq8rTw2xLk\nNPM_TOKEN=Zq8rTw2xLk".into(), &["Zq8rTw2xLk", "Zq8rTw2xLk"]),
            (r#"{"token": "Zq8rTw2xLk", "expires_in": 3600}"#.into(), &["Zq8rTw2xLk"]),
            ("botToken: Zq8rTw2xLk".into(), &["Zq8rTw2xLk"]),
            ("DB_PASS=Zq8rTw2xLk".into(), &["Zq8rTw2xLk"]),
            ("smtp_pass: \"Zq8rTw2xLk\"".into(), &["Zq8rTw2xLk"]),
            // Basic credentials' base64 under `auth` (Docker's `config.json`, npm's
            // `_auth`); WireGuard's keys, one starting with a slash.
            (
                r#"{"auths": {"https://index.docker.io/v1/": {"auth": "Ym9iOlhrOXZRMm1acDRMdw=="}}}"#.into(),
                &["Ym9iOlhrOXZRMm1acDRMdw=="],
            ),
            ("//registry.npmjs.org/:_auth=Ym9iOlhrOXZRMm1acDRMdw==".into(), &["Ym9iOlhrOXZRMm1acDRMdw=="]),
            ("AUTH=Ym9iOlhrOXZRMm1acDRMdw==\nAuth: Ym9iOlhrOXZRMm1acDRMdw==".into(), &["Ym9iOlhrOXZRMm1acDRMdw==", "Ym9iOlhrOXZRMm1acDRMdw=="]),
            (
                "[Interface]\nPrivateKey = yAnz5TF+lXXJte14tji3zlMNq+hd2rYUIgJBgB3fBmk=\n[Peer]\nPresharedKey = /UwcSPg38hW/D9Y3tcS1FOV0K1wuURMbS0sesJEP5ak=".into(),
                &["yAnz5TF+lXXJte14tji3zlMNq+hd2rYUIgJBgB3fBmk=", "/UwcSPg38hW/D9Y3tcS1FOV0K1wuURMbS0sesJEP5ak="],
            ),
            // `pass` alone as a field's name (nodemailer's `auth`), or its last part after
            // a dot or a dash.
            ("auth: { user: 'bob', pass: 'Zq8rTw2xLk' }".into(), &["Zq8rTw2xLk"]),
            (r#"{"user": "bob", "pass": "Zq8rTw2xLk"}"#.into(), &["Zq8rTw2xLk"]),
            ("user=bob pass=Zq8rTw2xLk".into(), &["Zq8rTw2xLk"]),
            ("PASS=Zq8rTw2xLk\nsmtp.pass=Zq8rTw2xLk".into(), &["Zq8rTw2xLk", "Zq8rTw2xLk"]),
            ("Driver={ODBC Driver 18};Server=db;Uid=sa;Pwd=Zq8rTw2xLk;".into(), &["Zq8rTw2xLk"]),
            // ODBC's braced values (`}}` a brace inside).
            ("Driver={ODBC Driver 18};Uid=sa;Pwd={Zq8r;Tw2xLk};".into(), &["Zq8r;Tw2xLk"]),
            ("Server=db;User Id=sa;Password={Zq8r}}Tw2xLk}".into(), &["Zq8r}}Tw2xLk"]),
            ("db.createUser({user: \"bob\", pwd: \"Zq8rTw2xLk\", roles: []})".into(), &["Zq8rTw2xLk"]),
            ("ENCRYPTION_KEY=Zq8rTw2xLk".into(), &["Zq8rTw2xLk"]),
            ("signingKey: 'Zq8rTw2xLk'".into(), &["Zq8rTw2xLk"]),
            ("master_key: Zq8rTw2xLk".into(), &["Zq8rTw2xLk"]),
            // (Found by an attack review.) A single quote doubled inside (SQL's, YAML's
            // escape), the keywords or the value on lines of their own, capitalised, double
            // quotes; one other field or a blank line in a pair; blanks in an index, a
            // string's prefix, Ruby's symbol and `||=`; setters' two arguments; tokens of
            // names that only look like a page's; passwords with an ellipsis.
            ("ALTER ROLE app PASSWORD 'Zq8r''Tw2xLk';".into(), &["Zq8r''Tw2xLk"]),
            ("CREATE USER bob IDENTIFIED BY 'It''s9Secret';".into(), &["It''s9Secret"]),
            ("CREATE USER 'bob'@'%' IDENTIFIED BY\n  'Zq8rTw2xLk';".into(), &["Zq8rTw2xLk"]),
            ("CREATE USER x\n  IDENTIFIED\n  BY 'Zq8rTw2xLk';".into(), &["Zq8rTw2xLk"]),
            ("CREATE USER x Identified By 'Zq8rTw2xLk';".into(), &["Zq8rTw2xLk"]),
            ("ALTER ROLE app WITH LOGIN PASSWORD \"Zq8rTw2xLk\";".into(), &["Zq8rTw2xLk"]),
            ("ALTER ROLE app WITH LOGIN PASSWORD\n  'Zq8rTw2xLk';".into(), &["Zq8rTw2xLk"]),
            (r#"{"name": "DB_PASSWORD", "type": "PLAINTEXT", "value": "Zq8rTw2xLk"}"#.into(), &["Zq8rTw2xLk"]),
            ("- name: password\n  type: string\n  value: \"Passw0rd1\"".into(), &["Passw0rd1"]),
            ("- name: DB_PASSWORD\n\n  value: Zq8rTw2xLk".into(), &["Zq8rTw2xLk"]),
            ("os.environ[ \"DB_PASSWORD\" ] = \"Zq8rTw2xLk\"".into(), &["Zq8rTw2xLk"]),
            ("os.environ[\"DB_PASSWORD\"] = f\"Zq8rTw2xLk\"".into(), &["Zq8rTw2xLk"]),
            ("params[:password] = \"Zq8rTw2xLk\"".into(), &["Zq8rTw2xLk"]),
            ("ENV[\"DB_PASSWORD\"] ||= \"Zq8rTw2xLk\"".into(), &["Zq8rTw2xLk"]),
            ("define('DB_PASSWORD', 'Zq8rTw2xLk');".into(), &["Zq8rTw2xLk"]),
            ("os.Setenv(\"API_KEY\", \"Zq8rTw2xLk\")".into(), &["Zq8rTw2xLk"]),
            ("os.environ.setdefault(\"DB_PASSWORD\", \"Zq8rTw2xLk\")".into(), &["Zq8rTw2xLk"]),
            ("System.setProperty(\"db.password\", \"Zq8rTw2xLk\");".into(), &["Zq8rTw2xLk"]),
            ("localStorage.setItem('token', 'Zq8rTw2xLkAbc')".into(), &["Zq8rTw2xLkAbc"]),
            ("INPUT_TOKEN=Zq8rTw2xLk".into(), &["Zq8rTw2xLk"]),
            ("HOMEPAGE_TOKEN=Zq8rTw2xLk".into(), &["Zq8rTw2xLk"]),
            ("SYNC_TOKEN=Zq8rTw2xLk".into(), &["Zq8rTw2xLk"]),
            ("DB_PASSWORD=Pa55...word!".into(), &["Pa55...word!"]),
            ("DB_PASSWORD=Hunter2...".into(), &["Hunter2..."]),
            ("token: sk-proj-9...1RQZ".into(), &["sk-proj-9...1RQZ"]),
            // (Found by a second attack review.) A value holding its field's name, a quote
            // doubled or after PowerShell's backtick, a setter's arguments on lines of their
            // own or after a blank, a form's `append`, a getter's default, HCL's and a CLI's
            // pairs, SQL Server's `N'…'`, C#'s `@"…"`, a passphrase where only a value can
            // stand, Vault's `client_token`, a test account's password, a token under a
            // count's name that is no number.
            ("mongodb pwd: \"Zq8rpwd9xLk\"".into(), &["Zq8rpwd9xLk"]),
            ("Server=db;Uid=sa;Pwd=AdminPwd2024;".into(), &["AdminPwd2024"]),
            ("db_pass: \"prod_pass_2024\"".into(), &["prod_pass_2024"]),
            ("password = \"Zq8r\"\"Tw2xLk\"".into(), &["Zq8r\"\"Tw2xLk"]),
            ("$env:API_TOKEN = \"Zq8r`\"Tw2xLk\"".into(), &["Zq8r`\"Tw2xLk"]),
            // (A quote after a backtick, then the closing one: not a doubled quote.)
            ("password = \"Zq8rTw2x`\"\" rest".into(), &["Zq8rTw2x`\""]),
            ("os.Setenv(\n\t\"API_TOKEN\",\n\t\"Zq8rTw2xLk\",\n)".into(), &["Zq8rTw2xLk"]),
            ("props.put (\"password\", \"Zq8rTw2xLk\");".into(), &["Zq8rTw2xLk"]),
            ("formData.append('password', 'Zq8rTw2xLk');".into(), &["Zq8rTw2xLk"]),
            ("SECRET_KEY = os.environ.get('SECRET_KEY', 'dev-Zq8rTw2xLk')".into(), &["dev-Zq8rTw2xLk"]),
            ("{ name = \"DB_PASSWORD\", value = \"Zq8rTw2xLk\" }".into(), &["Zq8rTw2xLk"]),
            ("--set-env-vars name=DB_PASSWORD,value=Zq8rTw2xLk".into(), &["Zq8rTw2xLk"]),
            ("CREATE LOGIN app WITH PASSWORD = N'Zq8rTw2xLk'".into(), &["Zq8rTw2xLk"]),
            ("var password = @\"Zq8rTw2xLk\";".into(), &["Zq8rTw2xLk"]),
            ("CREATE USER u IDENTIFIED BY 'correct horse battery 9';".into(), &["correct horse battery 9"]),
            ("define('DB_PASSWORD', 'correct horse battery 9')".into(), &["correct horse battery 9"]),
            ("os.environ[ 'API_TOKEN' ] = 'Zq8r Tw2x Lk9'".into(), &["Zq8r Tw2x Lk9"]),
            (r#""auth": {"client_token": "s.Zq8rTw2xLkAbCdEfGhIjKlMn"}"#.into(), &["s.Zq8rTw2xLkAbCdEfGhIjKlMn"]),
            ("TEST_PASS=Zq8rTw2xLk".into(), &["Zq8rTw2xLk"]),
            (r#""input_token": "Zq8rTw2xLkAbCd""#.into(), &["Zq8rTw2xLkAbCd"]),
            ("CREATE DATABASE LINK l CONNECT TO u IDENTIFIED BY Zq8rTw2xLk USING 'db'".into(), &["Zq8rTw2xLk"]),
            ("pwd: \"Mypwd2024xZ\"".into(), &["Mypwd2024xZ"]),
            ("token: \"a1tokenZq8r99\"".into(), &["a1tokenZq8r99"]),
            // Set by a command, blanks between the name and the value: Windows's `setx`,
            // fish's `set`, Dockerfile's older `ENV` (the rest of the line), `config set`,
            // `git config`, `gh secret set … --body`, `dotnet user-secrets set`, conda's.
            ("setx DB_PASSWORD Zq8rTw2xLk /M".into(), &["Zq8rTw2xLk"]),
            ("set -gx GITHUB_TOKEN Zq8rTw2xLk".into(), &["Zq8rTw2xLk"]),
            ("set --export API_KEY 'Zq8r Tw2x Lk9'".into(), &["Zq8r Tw2x Lk9"]),
            ("FROM node:20\nENV DB_PASSWORD my s3cret phrase  \nRUN npm ci".into(), &["my s3cret phrase"]),
            ("npm config set //registry.npmjs.org/:_authToken Zq8rTw2xLk".into(), &["Zq8rTw2xLk"]),
            ("aws configure set aws_secret_access_key Zq8rTw2xLk".into(), &["Zq8rTw2xLk"]),
            ("git config --global github.token Zq8rTw2xLk".into(), &["Zq8rTw2xLk"]),
            ("git config user.password \"Zq8rTw2xLk\"".into(), &["Zq8rTw2xLk"]),
            ("gh secret set API_KEY --env prod --body \"Zq8rTw2xLk\"".into(), &["Zq8rTw2xLk"]),
            ("gh secret set API_KEY -b Zq8rTw2xLk".into(), &["Zq8rTw2xLk"]),
            ("dotnet user-secrets set \"Stripe:SecretKey\" \"Zq8rTw2xLk\"".into(), &["Zq8rTw2xLk"]),
            ("conda config --set token Zq8rTw2xLk".into(), &["Zq8rTw2xLk"]),
            // A password under a camelCase name, Rails's key base, AWS's secret key under
            // its whole name.
            ("const dbPass = \"Zq8rTw2xLk\";".into(), &["Zq8rTw2xLk"]),
            ("adminPass: Zq8rTw2xLk".into(), &["Zq8rTw2xLk"]),
            ("SECRET_KEY_BASE=Zq8rTw2xLk".into(), &["Zq8rTw2xLk"]),
            ("aws_secret_access_key = Zq8rTw2xLk".into(), &["Zq8rTw2xLk"]),
            (r#"{"SecretAccessKey": "Zq8rTw2xLk"}"#.into(), &["Zq8rTw2xLk"]),
            // AWS Secrets Manager's value: a string, base64, or a table's column.
            (r#"{"Name": "db", "SecretString": "Zq8rTw2xLk"}"#.into(), &["Zq8rTw2xLk"]),
            (r#"{"SecretBinary": "WGs5dlEybVpwNEx3"}"#.into(), &["WGs5dlEybVpwNEx3"]),
            (
                "+------+--------------+\n| Name | SecretString |\n+------+--------------+\n\
                 | db   | Zq8rTw2xLk   |\n+------+--------------+"
                    .into(),
                &["Zq8rTw2xLk"],
            ),
            ("SecretStrings: many".into(), &[]),
            ("secret_string = \"Zq8rTw2xLk\"".into(), &["Zq8rTw2xLk"]),
            ("| Name | GenerateSecretString |\n|---|---|\n| a | a1b2c3d4e5f6 |".into(), &[]),
            // An XML element (Maven's settings.xml), attribute pairs (.NET's appSettings,
            // Spring's beans), a call's quoted argument (Django's `set_password`, MySQL's
            // `PASSWORD()`), YAML block scalars (the block's lines taken with the first).
            ("<server><id>r</id><password>Zq8rTw2xLk</password></server>".into(), &["Zq8rTw2xLk"]),
            ("<Password> Zq8rTw2xLk </Password>".into(), &["Zq8rTw2xLk"]),
            (r#"<add key="ApiKey" value="Zq8rTw2xLk" />"#.into(), &["Zq8rTw2xLk"]),
            (r#"<property name="password" value="Zq8rTw2xLk"/>"#.into(), &["Zq8rTw2xLk"]),
            ("user.set_password('Zq8rTw2xLk')".into(), &["Zq8rTw2xLk"]),
            ("SET PASSWORD FOR bob = PASSWORD(\"correct horse 9\");".into(), &["correct horse 9"]),
            ("password: |\n  Zq8rTw2x\n  Lk9more\nuser: bob".into(), &["Zq8rTw2x\n  Lk9more"]),
            ("token: >-\r\n    Zq8rTw2xLk\r\n".into(), &["Zq8rTw2xLk"]),
            // (Found by an attack review.) Options before the name, a command by its path
            // or after cmd's prompt, `env` in small letters, `--body` in a JSON string or
            // glued, a command's argument with cmd's `;`, `,`, `^&` or an escape in it,
            // lines continued; `Pass` after an acronym or a capitalised word.
            ("setx /M DB_PASSWORD Zq8rTw2xLk".into(), &["Zq8rTw2xLk"]),
            ("setx /S host01 /U admin DB_PASSWORD Zq8rTw2xLk".into(), &["Zq8rTw2xLk"]),
            ("set -x -g -U DB_PASSWORD Zq8rTw2xLk; set -gx -- API_KEY Zq8rTw2xLk".into(), &["Zq8rTw2xLk;", "Zq8rTw2xLk"]),
            ("npm config set --location=user //registry.npmjs.org/:_authToken Zq8rTw2xLk".into(), &["Zq8rTw2xLk"]),
            ("aws configure set --profile prod aws_secret_access_key Zq8rTw2xLk".into(), &["Zq8rTw2xLk"]),
            ("git config -f ~/.gitconfig --type=string github.token Zq8rTw2xLk".into(), &["Zq8rTw2xLk"]),
            ("gh secret set -R org/app API_KEY -b\"Zq8rTw2xLk\"".into(), &["Zq8rTw2xLk"]),
            (r#"{"command": "gh secret set API_KEY --body \"Zq8rTw2xLk\""}"#.into(), &["Zq8rTw2xLk"]),
            ("C:\\Users\\bob>C:\\Windows\\System32\\setx.exe DB_PASSWORD Zq8rTw2xLk".into(), &["Zq8rTw2xLk"]),
            ("env DB_PASSWORD Zq8rTw2xLk".into(), &["Zq8rTw2xLk"]),
            ("setx DB_PASSWORD ab;Zq8r,Tw2x^&Lk".into(), &["ab;Zq8r,Tw2x^&Lk"]),
            ("set -gx DB_PASSWORD Zq8r\\ Tw2x\\$Lk".into(), &["Zq8r\\ Tw2x\\$Lk"]),
            ("setx DB_PASSWORD ^\r\n  Zq8rTw2xLk".into(), &["Zq8rTw2xLk"]),
            ("git config --global \\\n  github.token \\\n  Zq8rTw2xLk".into(), &["Zq8rTw2xLk"]),
            ("DBPass=Zq8rTw2xLk mySqlPass=Zq8rTw2xLk".into(), &["Zq8rTw2xLk", "Zq8rTw2xLk"]),
            // (Found by a second attack review.) A value that starts with `|`; WS-Security's
            // prefixed element, a blank before `>`, CDATA, the content on a line of its own;
            // a literal block with a comment, a blank line first, two paragraphs; a blank in
            // an attribute pair's value; csh's `setenv`, `npm set`.
            ("password=|Zq8rTw2xLk DB_PASSWORD='|Zq8rTw2xLk'".into(), &["|Zq8rTw2xLk", "|Zq8rTw2xLk"]),
            ("<wsse:Password>Zq8rTw2xLk</wsse:Password>".into(), &["Zq8rTw2xLk"]),
            ("<password >Zq8rTw2xLk</password >".into(), &["Zq8rTw2xLk"]),
            ("<password><![CDATA[Zq8rTw2xLk]]></password>".into(), &["Zq8rTw2xLk"]),
            // An element cut off before its closing tag (a log's line, a tool's output cut
            // short), or whose HTML escape lost its `;`; another element's closing tag, or
            // prose on the cut line, hold none.
            ("<password>Zq8rTw2xLk".into(), &["Zq8rTw2xLk"]),
            ("<password>Zq8rTw2xLk\n<user>bob</user>".into(), &["Zq8rTw2xLk"]),
            ("&lt;password&gt;Zq8rTw2xLk&lt;/password&gt".into(), &["Zq8rTw2xLk"]),
            ("<password>Zq8rTw2xLk</passw".into(), &["Zq8rTw2xLk"]),
            ("<password>Zq8rTw2xLk</passw...(truncated)".into(), &["Zq8rTw2xLk"]),
            ("<password>Zq8rTw2xLk</pass> <password>Zq8rTw2xLk</p>".into(), &[]),
            // `auth` whose value is no basic credentials' base64, or inside `oauth`; a path
            // under a key's name.
            (r#"{"auth": "Zq8rTw2xLk", "x": {"auth": "oauth2"}}"#.into(), &[]),
            ("auth: true\noauth: Ym9iOlhrOXZRMm1acDRMdw==\n\"auth\": {\"type\": \"basic\"}".into(), &[]),
            ("| Method | Auth |\n|---|---|\n| GET | Ym9iOlhrOXZRMm1acDRMdw== |".into(), &[]),
            ("PrivateKey = /etc/wireguard/private.key".into(), &[]),
            // (Found by a twenty-second attack review.) Base64 under `auth` that decodes to
            // a colon but stores no login: a phrase, a URL, a time, a placeholder, a user
            // without a password.
            ("auth: SGVsbG8gV29ybGQ6IGJhc2U2NCBibG9i".into(), &[]),
            (r#"{"auth": "aHR0cDovL2V4YW1wbGUuY29tL2E6Yg==", "b": {"auth": "MTI6MzQ6NTY="}}"#.into(), &[]),
            (r#"{"auth": "dXNlcjpwYXNzd29yZA==", "b": {"auth": "Ym9iOg=="}}"#.into(), &[]),
            // `pass` inside another word, Python's statement, values that are none.
            ("bypass: Zq8rTw2xLk\ncompass=Zq8rTw2xLk".into(), &[]),
            ("if x:\n    pass\nexcept Exception: pass".into(), &[]),
            ("pass: true\n\"pass\": 3\npass = getpass.getpass()".into(), &[]),
            ("pass: ${SMTP_PASS}\npass: process.env.SMTP_PASS".into(), &[]),
            ("First pass: we scan the text; test pass: 12 passed".into(), &[]),
            ("| Suite | Pass | Fail |\n|---|---|---|\n| unit | Zq8rTw2xLk | 3 |".into(), &[]),
            ("<password>Zq8rTw2xLk</pass> <token>Expires in 3600 seconds\n".into(), &[]),
            ("<password>\n    Zq8rTw2xLk\n  </password>".into(), &["Zq8rTw2xLk"]),
            ("password: | # the db one\n  Zq8rTw2xLk".into(), &["Zq8rTw2xLk"]),
            ("password: |-\n\n  Zq8rTw2xLk".into(), &["Zq8rTw2xLk"]),
            ("password: |\n  Zq8rTw2xLk\n\n  Lk9Tw2xZq8r\nuser: bob".into(), &["Zq8rTw2xLk\n\n  Lk9Tw2xZq8r"]),
            (r#"<add key="ApiKey" value="Zq8r Tw2xLk"/>"#.into(), &["Zq8r Tw2xLk"]),
            ("setenv DB_PASSWORD Zq8rTw2xLk".into(), &["Zq8rTw2xLk"]),
            ("npm set //registry.npmjs.org/:_authToken Zq8rTw2xLk".into(), &["Zq8rTw2xLk"]),
            // (Found by a third attack review.) An element's content past 256 bytes (an STS
            // response's session token), a word of it a secret, a comment after a block's
            // value, a block under a list's item, Dockerfile's line in a JSON list.
            (format!("<SessionToken>{long_token}</SessionToken>"), &[long_token.as_str()]),
            ("<Password>P@ss w0rd!</Password>".into(), &["P@ss w0rd!"]),
            ("password: |\n  Zq8rTw2xLk  # rotated 2024-05".into(), &["Zq8rTw2xLk  # rotated 2024-05"]),
            ("- password: |\n    Zq8rTw2xLk\n  user: bob".into(), &["Zq8rTw2xLk"]),
            (r#"["FROM x", "ENV API_KEY Zq8rTw2xLk"]"#.into(), &["Zq8rTw2xLk"]),
            // An element with attributes on its tag (WS-Security's), one named by its `key`
            // or `name` attribute (Java's properties, Android's strings, .NET's settings and
            // their `<value>` child), a `<name>` element's sibling `<value>` (Hadoop's), in a
            // JSON string too.
            (r#"<wsse:Password Type="…#PasswordText">Zq8rTw2xLk</wsse:Password>"#.into(), &["Zq8rTw2xLk"]),
            (r#"<password encrypted="false">Zq8rTw2xLk</password>"#.into(), &["Zq8rTw2xLk"]),
            (r#"<entry key="db.password">Zq8rTw2xLk</entry>"#.into(), &["Zq8rTw2xLk"]),
            (r#"<string name="api_key" translatable="false">Zq8rTw2xLk</string>"#.into(), &["Zq8rTw2xLk"]),
            ("<entry key='password' >\n    Zq8rTw2xLk\n</entry>".into(), &["Zq8rTw2xLk"]),
            (r#"<setting name="ApiKey" serializeAs="String">
  <value>Zq8rTw2xLk</value></setting>"#.into(), &["Zq8rTw2xLk"]),
            ("<name>javax.jdo.option.ConnectionPassword</name>\n    <value>Zq8rTw2xLk</value>".into(), &["Zq8rTw2xLk"]),
            (r#"{"xml": "<entry key=\"db.password\">Zq8rTw2xLk</entry>"}"#.into(), &["Zq8rTw2xLk"]),
            // `…_Pass` after the word of what it opens, more such words; a YAML value after
            // its anchor or a plain string's tag, a block's too; NetworkManager's Wi-Fi
            // password.
            ("DB_Pass=Zq8rTw2xLk vpnPass: Zq8rTw2xLk".into(), &["Zq8rTw2xLk", "Zq8rTw2xLk"]),
            ("password: !!str |\n  Zq8rTw2xLk\nuser: bob".into(), &["Zq8rTw2xLk"]),
            ("password: &pw !!binary >-\n    WnE4clR3MnhMaw==".into(), &["WnE4clR3MnhMaw=="]),
            ("token: &tok \"Zq8rTw2xLk\"".into(), &["Zq8rTw2xLk"]),
            ("password: !!str Zq8rTw2xLk".into(), &["Zq8rTw2xLk"]),
            ("nmcli dev wifi connect MyNet password Zq8rTw2xLk".into(), &["Zq8rTw2xLk"]),
            // (Found by a fifth attack review.) A YAML value after its properties on the lines
            // below, or JSON-escaped; an anchor's name with a dot; `…_Pass` after a numbered
            // word; nmcli abbreviated, a quoted SSID, options before `password`.
            ("password: !!str # the db one\n  Zq8rTw2xLk".into(), &["Zq8rTw2xLk"]),
            ("password: &pw\n  Zq8rTw2xLk".into(), &["Zq8rTw2xLk"]),
            (r#"{"y": "password: !!str \"Zq8rTw2xLk\""}"#.into(), &["Zq8rTw2xLk"]),
            ("password: &pw.x Zq8rTw2xLk".into(), &["Zq8rTw2xLk"]),
            ("DB1_Pass=Zq8rTw2xLk".into(), &["Zq8rTw2xLk"]),
            // A Wi-Fi network's pre-shared key: wpa_supplicant's, Debian's interfaces',
            // NetworkManager's properties.
            ("network={\n    ssid=\"Home\"\n    psk=\"Zq8rTw2xLk\"\n}".into(), &["Zq8rTw2xLk"]),
            ("iface wlan0 inet dhcp\n    wpa-psk Zq8rTw2xLk".into(), &["Zq8rTw2xLk"]),
            ("nmcli con modify home wifi-sec.psk \"Zq8r Tw2xLk\"".into(), &["Zq8r Tw2xLk"]),
            ("nmcli connection modify eap 802-1x.password Zq8rTw2xLk".into(), &["Zq8rTw2xLk"]),
            // (Found by a sixth attack review.) A passphrase of words, a property added to a
            // list or ending in `-password`; a name with a blank glued again after the value
            // (the value ends there, however far its search for the name reads).
            ("psk=\"correct horse battery staple\"".into(), &["correct horse battery staple"]),
            // PowerShell's environment drive.
            ("Set-Item Env:API_KEY Zq8rTw2xLk".into(), &["Zq8rTw2xLk"]),
            ("npm config --global set _authToken Zq8rTw2xLk".into(), &["Zq8rTw2xLk"]),
            ("Set-Item -Path Env:API_KEY -Value \"Zq8rTw2xLk\"".into(), &["Zq8rTw2xLk"]),
            ("New-Item -Path Env:\\GITHUB_TOKEN -Value Zq8rTw2xLk".into(), &["Zq8rTw2xLk"]),
            ("nmcli con mod home +wifi-sec.psk Zq8rTw2xLk".into(), &["Zq8rTw2xLk"]),
            ("nmcli c m home 802-1x.private-key-password Zq8rTw2xLk".into(), &["Zq8rTw2xLk"]),
            ("CREATE USER app IDENTIFIED BY Zq8rTw2xLkIDENTIFIED BY'x' more".into(), &["Zq8rTw2xLk"]),
            ("nmcli d wifi c \"My Home Net\" ifname wlan0 password Zq8rTw2xLk".into(), &["Zq8rTw2xLk"]),
            // (Found by a fourth attack review.) A tag over several lines, written or
            // JSON-escaped; `<Value>` with attributes and a comment before it; a
            // `<description>`, blank lines, capitals, attributes between `<name>` and
            // `<value>`; a servlet's `<param-name>`; long, many and odd attributes; blank
            // lines before the content.
            ("<entry key=\"db.password\"\n       type=\"string\">Zq8rTw2xLk</entry>".into(), &["Zq8rTw2xLk"]),
            ("<wsse:Password\n    Type=\"…#PasswordText\">Zq8rTw2xLk</wsse:Password>".into(), &["Zq8rTw2xLk"]),
            // Markup and strings escaped for HTML (a page's or a log's copy), once or twice.
            ("&lt;password&gt;Zq8rTw2xLk&lt;/password&gt;".into(), &["Zq8rTw2xLk"]),
            ("&lt;entry key=&quot;db.password&quot;&gt;Zq8rTw2xLk&lt;/entry&gt;".into(), &["Zq8rTw2xLk"]),
            ("{&quot;api_key&quot;: &quot;Zq8rTw2xLk&quot;}".into(), &["Zq8rTw2xLk"]),
            ("&amp;lt;token&amp;gt;Zq8rTw2xLk&amp;lt;/token&amp;gt;".into(), &["Zq8rTw2xLk"]),
            // … and then put in a link's query (the `&` and `;` URL-encoded, once or twice).
            ("q=%26lt%3Bpassword%26gt%3BZq8rTw2xLk%26lt%3B/password%26gt%3B".into(), &["Zq8rTw2xLk"]),
            (
                "q%3D%2526lt%253Btoken%2526gt%253BZq8rTw2xLk%2526lt%253B%252Ftoken%2526gt%253B"
                    .into(),
                &["Zq8rTw2xLk"],
            ),
            (r#"{"xml": "<string\n name=\"api_key\"\n translatable=\"false\">Zq8rTw2xLk</string>"}"#.into(), &["Zq8rTw2xLk"]),
            (r#"<Setting Name="ApiKey" Type="System.String"><Value Profile="(Default)">Zq8rTw2xLk</Value></Setting>"#.into(), &["Zq8rTw2xLk"]),
            ("<setting name=\"ApiKey\">\n  <!-- rotated -->\n  <value>Zq8rTw2xLk</value></setting>".into(), &["Zq8rTw2xLk"]),
            ("<name>db.password</name>\n<description>the db's</description>\n\n<value>Zq8rTw2xLk</value>".into(), &["Zq8rTw2xLk"]),
            ("<NAME>ssl.keystore.password</NAME><VALUE type=\"s\">Zq8rTw2xLk</VALUE>".into(), &["Zq8rTw2xLk"]),
            ("<param-name>db.password</param-name><param-value>Zq8rTw2xLk</param-value>".into(), &["Zq8rTw2xLk"]),
            (format!("<entry note=\"a<b\" c=\"{}\" key=\"db.password\">Zq8rTw2xLk</entry>", "c".repeat(600)), &["Zq8rTw2xLk"]),
            ("<password a=\"1\" b=\"2\" c=\"3\" d=\"4\" e=\"5\" f=\"6\" g=\"7\" h=\"8\" i=\"9\">Zq8rTw2xLk</password>".into(), &["Zq8rTw2xLk"]),
            ("<password Type=\"x\">\n\n\nZq8rTw2xLk</password>".into(), &["Zq8rTw2xLk"]),
            ("sudo nmcli device wifi hotspot ifname wlan0 ssid Pi password \"Zq8rTw2xLk\"".into(), &["Zq8rTw2xLk"]),
        ];
        let d = PiiDetector::new();
        for (text, want) in &cases {
            let got: Vec<&str> = found(text).into_iter().map(|(_, v)| v).collect();
            assert_eq!(&got, want, "{text}");
            // Redacted in one pass, nothing is left to find: the placeholder is no password
            // either (else redaction would go on until it fails closed).
            let (out, first) = d.redact(text);
            assert_eq!(out, replace_all(text, &first), "{text}");
            assert!(d.detect(&out).is_empty(), "{out}");
            assert!(
                found(text)
                    .iter()
                    .all(|(e, v)| *e == Entity::Secret || v.contains('@')),
                "{text}"
            );
        }
        // A private key under such a name is that key, whole, however long.
        let pem = format!(
            "-----BEGIN PRIVATE KEY-----\\n{}\\n-----END PRIVATE KEY-----",
            "MIIBVQIBADANBgkqhkiG9w0BAQEFAASCAT8w".repeat(12)
        );
        let text = format!("{{\"private_key\": \"{pem}\"}}");
        assert_eq!(found(&text), [(Entity::Secret, pem.as_str())]);
        for text in [
            // Labels and prompts, templates with defaults, YAML tags and aliases,
            // translations, messages, references, code, placeholders.
            "pw = getpass.getpass(\"Password: \")  # prompt",
            "fmt.Println(\"Password:\", pw, \"ok\")",
            "POSTGRES_PASSWORD: ${POSTGRES_PASSWORD:-postgres}",
            "password: !vault |",
            "password: *default_password",
            r#"{"password": "Passwort"}"#,
            r#""password": "must be at least 8 characters""#,
            "existingSecret: redis-secret",
            "private_key: ~/.ssh/id_rsa",
            "PASSWORD=/run/secrets/db-password",
            "apiKey: process.env.OPENAI_API_KEY!,",
            ".filter(password => !password)",
            "password: :password",
            "password=password2",
            "DB_PASSWORD=your-password-here",
            "SECRET_KEY=change-this-in-production",
            "Authorization: Bearer YourAccessTokenGoesHere",
            "password = \"%s-%s\" % (a, b)",
            "{password:t.password??\"\",apiKey:n.key||void 0}",
            "'password' => 'required|string|min:8|confirmed',",
            "client_secret: !Ref ClientSecret",
            "{\"reset_password\": \"/api/v1/reset\"}",
            "password: arn:aws:secretsmanager:us-east-1:123456789012:secret:db",
            // Types, bind parameters, rules, object names, key files, digests, regular
            // expressions, ranges, versions, dates, lengths, variables.
            "input SignupInput {\n  email: String!\n  password: String!\n}",
            "interface Keypair { publicKey: PublicKey; secretKey: Uint8Array; }",
            "pub struct Keypair { secret: u128, public: u128 }",
            "pub struct Wallet { private_key: H256, address: H160 }",
            "def verify(password: bytes, secret: bytes32) -> bool:",
            "WHERE users.password = :password_1 AND users.name = :name_1",
            "'password' => 'nullable|min:8|confirmed',",
            "existingSecret: mysql-auth-v2",
            "private_key: id_ed25519",
            "client_secret: sha256:deadbeef",
            r#""password": "^(?=.*\d)[A-Za-z\d@$!%*?&]{8,}$""#,
            "- password: 8-128 chars, at least 1 digit",
            "secret_key: v1.2.3",
            "ApiKey: 2024-01-01",
            "Password=1.5em;",
            "password: $DB_PASSWORD_2",
            "password=password",
            "login(user, password=args.password)",
            "api_key = os.environ[\"OPENAI_API_KEY\"]",
            // An index read, compared, or set from a variable; a pair whose value is a
            // reference, a template or no value; a list of names.
            "os.environ[\"DB_PASSWORD\"] = db_password",
            "if config[\"password\"] == \"Zq8rTw2xLk\":",
            "- name: DB_PASSWORD\n  valueFrom:\n    secretKeyRef: {name: db, key: pw2}",
            "- name: DB_PASSWORD\n  value: ${DB_PASSWORD}",
            "{\"name\": \"password\", \"value\": \"required\"}",
            "fields = [\"password\", \"value\"]: 12345",
            // `identified by` in prose, a variable, a template, no password.
            "the bug identified by CVE-2024-1234 scanners",
            "ALTER USER x IDENTIFIED BY $DB_PASSWORD;",
            "CREATE USER u IDENTIFIED BY '${DB_PASS}';",
            "CREATE USER bob IDENTIFIED EXTERNALLY;",
            "the password 'is required' here",
            // A page's or a stream's position, a tokenizer's special tokens, counts, a
            // cancellation token, a template, a key shown shortened, paths and commands.
            r#"{"nextToken": "AAAAAQ2xTm9y0z8", "NextToken": "eyJ2IjoxfQ9", "next_page_token": "CAoQAA12"}"#,
            "ContinuationToken: 1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=",
            "max_token: 4096",
            "\"eos_token\": \"</s>\", \"pad_token\": \"<pad>\"",
            r#""usage": {"prompt_tokens": 1234, "completion_tokens": 5678}"#,
            "CancellationToken token = cts.Token;",
            "token: ${{ secrets.GITHUB_TOKEN }}",
            "GITHUB_TOKEN: ghp_...a1B2",
            "PWD=/home/bob\nOLDPWD=/home/bob/src",
            // Prose and code escaped for HTML.
            "&lt;p&gt;Your password must be 8 characters&lt;/p&gt; if (a &lt; b) { t = &quot;token&quot;; }",
            // A format string's fields, a template's, a brace never closed.
            "f\"DRIVER={{ODBC Driver 18}};SERVER={server};UID={user};PWD={password}\"",
            "conn = f\"Server={host};Pwd={db_pass};\"; PWD={self.password}",
            // (Found by a ninth attack review.) Fields with digits, conversions, specs,
            // indexes, members, variables.
            "PWD={pwd1}; Password={dbPassword2}; PWD={db_pass_2}; Password={password!r}",
            "Password={pw:>10}; Password={secrets[0]}; Password={creds.Item2}; Pwd={ $password }",
            "password={{ secrets.DB_PASSWORD }}\npassword = {\n  value: 1 }",
            "docker run -v $(pwd):/app img",
            "BYPASS=1234",
            // (Found by an attack review.) Lists of names and calls that set nothing; a
            // page's, a sync's, a request's tokens; a tokenizer's log; counts; a filter's,
            // a renderer's, a test run's passes; Windows paths, KMS aliases, algorithms.
            "fields = (\"username\", \"password\", \"email1\")",
            "login(\"admin\", \"password\", \"x1y2z3\")",
            "assert_field(\"password\", \"x1y2z3\")",
            r#"{"nextSyncToken": "CPDAlvWDx70CEPDAlvWDx70CGAU="}"#,
            r#"{"prevToken": "abc123xyz9", "ClientToken": "550e8400-e29b-41d4", "IdempotencyToken": "x1y2z3w4v5"}"#,
            "https://graph.microsoft.com/v1.0/me/delta?$deltatoken=oEcOySpF8hL1",
            r#"{"token": "2024", "logprob": -0.1}"#,
            "max_output_token: 8192",
            "low_pass=1200\nRENDER_PASS=gbuffer2\ntests_pass: 12/12",
            "PWD=C:\\Users\\bob\\src2",
            r#""masterKey": "alias/aws/s3", "signing_key": "HS256""#,
            // (Found by a second attack review.) Idempotency and pagination tokens, "identified
            // by" in prose, schemas and rules set under a secret's name, algorithms and KMS
            // keys, where a value is rather than what, a tokenizer's output.
            r#""ClientRequestToken": "7f4c5a2e-1b2c-4d5e-8f90-a1b2c3d4e5f6""#,
            r#"{"$skipToken": "abc123def456", "lastEvaluatedToken": "x1y2z3w4v5u6", "StartingToken": "q1w2e3r4t5y6"}"#,
            "The vulnerability, identified by 'CVE-2024-1234', was fixed.",
            // A name and a value apart by blanks with no command that sets it: prose, a
            // fish variable erased or asked, git's config read, a `set` after a word, a
            // template, Dockerfile's `ENV` in prose; `Pass` not in camelCase, a pass that
            // is no password.
            "the password abc12345 works",
            "Enter your API_KEY Zq8rTw2xLk below",
            "set -e GITHUB_TOKEN Zq8rTw2xLk",
            "set -q API_KEY; or echo Zq8rTw2xLk",
            "git config --global --get github.token Zq8rTw2xLk",
            "git config --unset user.password Zq8rTw2xLk",
            "reset token abc12345",
            "ENV GITHUB_TOKEN ${GITHUB_TOKEN}",
            "see ENV DB_PASSWORD Zq8rTw2xLk",
            "Pass: 3/5 Fail: 2\nPass: test_login_2",
            "lowPass: abc12, boardingPass: QR12345678",
            // A tag that is no element with content, a comparison, a call with no quoted
            // argument, a block scalar not indented, an empty attribute.
            "a <password> tag with no content, <password>: a label",
            "<password>Zq8r<b>Tw2xLk</b></password>",
            "if len(password)>8 and password>abc12345:",
            "check(password(x1234), hash_password(salt2))",
            "password: |\nZq8rTw2xLk",
            "<input type=\"password\" value=\"\">",
            // A form's markup (a label for the field, an element named for it whose content
            // is prose), a sibling `<value>` that is a template, a tag of no element.
            "<label for=\"password\">Password</label><input type=\"password\" name=\"password\">",
            "<label name=\"password\">Enter your password</label>",
            "<name>password</name><value>${DB_PASSWORD}</value>",
            "x key=\"password\">Zq8rTw2xLk</x>",
            "<entry key=\"password\"/>Zq8rTw2xLk</entry>",
            // `…_Pass` after other words, a plain string's tag with no value, a network's
            // password in prose.
            "last_Pass = frame2Count; Test_Pass: 12of12",
            "password: !!str\nuser: bob",
            "Click connect MyNet password hunter2x please",
            // (Found by a fourth attack review.) A C# documentation comment's parameters,
            // names with a version in prose, a template's placeholders; a name before the
            // next line's attribute with no element.
            "/// <param name=\"accessToken\">OAuth2 access token</param>\n/// <param name=\"apiKey\">Base64 encoded key</param>",
            "<string name=\"token\">OAuth2 token</string><entry key=\"password\">Password (UTF-8)</entry>",
            "<accessToken>OAuth2 access token</accessToken>",
            "<string name=\"api_key\">%1$s</string><password encrypted=\"false\">@PASSWORD@</password>",
            "<entry key=\"password\">&lt;your password&gt;</entry>",
            "PASSWORD\nDB_HOST=\"prod2x\"",
            // (Found by a fifth attack review.) Android's format strings and resource
            // references, names with a version and numeronyms in prose, a nil GUID, a
            // build's filter token; anchors on mappings; `…Pass` after words of other
            // things; `nmcli` with no Wi-Fi.
            "<string name=\"api_key\">%1$d items</string><string name=\"password\">Password %1$s</string>",
            "<string name=\"password\">@string/pwd2</string><item name=\"secret\">?attr/colorSecondary2</item>",
            "<entry key=\"token\">i18n ready</entry><entry key=\"token\">IPv4/IPv6 only</entry><entry key=\"token\">ES2015 module</entry>",
            "<setting name=\"ApiKey\"><value>00000000-0000-0000-0000-000000000000</value></setting>",
            "<entry key=\"password\">@@API_KEY@@</entry>",
            "  password: &pw\n    host: db-prod-01",
            "Local_Pass = Pass2x; adPass: AdCampaign2; guestPass: VIP2024; Bot_Pass: level2",
            "Using nmcli I set ssid HomeNet password protected2 mode.",
            "key_mgmt=WPA-PSK\nthe psk is in the keyring2; set wpa-psk in the file2 wpa-psk Zq8rTw2x",
            "the psk \"is not set\" here",
            "Set-Item -Path Env:API_KEY -Value $secret; Get-Item Env:API_KEY Zq8rTw2xLk",
            "foo --global set API_KEY Zq8rTw2xLk",
            // (Found by an attack review.) `set` in prose, options that read or erase,
            // words between a command and the name that are no options; `…Pass` of a frame,
            // a check, a gate.
            "You must set Secret Manager2 access first.",
            "git config --global --get-all github.token Zq8rTw2xLk",
            "setx then enter your API_KEY Zq8rTw2xLk",
            "this.lastPass = frame2Count; {\"didPass\": \"yes2\", \"minPass\": \"70pct\"}",
            "qaPass: QA-2024-03\nlintPass: eslint9",
            // (Found by a second attack review.) Prose in an element or a block, `Set`
            // capitalised in prose, nested blocks of keys.
            "<token>Expires in 3600 seconds</token><password>See the README for details.</password>",
            "password: |\n  Use a strong one. See docs/security.md",
            "Set Token Lifetime2 in the portal.",
            "token: |\n  token: |\n    token: |\n      x",
            // (Found by a third attack review.) A block's line no further in than its key
            // (the mapping's next key), a generic type that looks like an element.
            "  token: |\n  abc123def\n  host: db.internal",
            "<pre>let v: Vec<Secret>=load2();</pre>",
            "Each resource is identified by 'resource_id2'.",
            "table.insert(\"api_token\", \"varchar(255)\")",
            "validator.add(\"password\", \"min:8\")",
            r#""encryption_key": "AES-256-CBC", "signing_key": "ES256K", "x_key": "hmac-sha256", "k_key": "aws/kms2""#,
            "app -token @token2.txt",
            "openssl pkcs12 -password file:pw2.txt",
            "Publish-Module -ApiKey $env:NUGET_KEY2",
            r#"{"token": "Hello1234", "logprob": -0.1}"#,
            "tests_pass: 12/12",
            r#""input_token": 12345678"#,
            "password: str",
            "password: Optional[str] = None",
            "\"password\": null",
            "password: ${{ secrets.DB_PASSWORD }}",
            "password: \"{{ vault_db_password }}\"",
            "PASSWORD=$DB_PASSWORD",
            "password=*****",
            "password=[REDACTED]",
            "\"password\": \"\"",
            "password_hint: my dog",
            "VAULT_TOKEN=$(cat ~/.vault-token)",
            "MYSQL_PWD: ${MYSQL_PWD}",
            "hvs.XXXXXXXXXXXXXXXXXXXXXXXX",
            "hvs.REPLACE_WITH_YOUR_VAULT_TOKEN",
            "hvs.YOUR_TOKEN_HERE_1234567890",
            "SessionToken: null",
            "-hvs.Abcdefgh1-hvs.Abcdefgh1",
            "see hvs.service_token_documentation_page",
            "hvs.6j4cuewowBGit65",
            "passwords: 3 reset today",
            "docker://alpine:3.18@sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
            "http://localhost:8080,bob",
            "DATABASE_URL=postgres://app:${DB_PASSWORD}@db:5432/orders",
            "postgres://app:$DB_PASSWORD@db/x",
            "mysql://root:%s@localhost/db",
            "mysql://u:%(password)s@h/db",
            "https://u:****@h/",
            "https://example.com:8443/path",
            "http://localhost:3000/api",
            "we need a basic understanding of bearer authentication",
            "Authorization: Bearer YOUR_ACCESS_TOKEN_HERE",
            "Authorization: Bearer <token>",
            "Bearer aaaaaaaaaaaaaaaaaaaa1",
            // In a header: too short, a variable, a placeholder, too few distinct
            // characters; a short token outside one.
            "Authorization: Bearer abc123",
            "Authorization: Bearer $API_TOKEN",
            "Authorization: Bearer your-token-1",
            "Authorization: Bearer 11112222",
            "use Bearer Qz7mW2xR9kLp for now",
            // Found by review 33: a short token a test or a document makes up.
            "Authorization: Bearer token123",
            "Authorization: Bearer test-token-123",
            "Authorization: Bearer password1",
            "Authorization: Bearer 12345678",
            ".header(\"Authorization\", \"Bearer fake_token_1\")",
            "Authorization: Token test1234",
            "WWW-Authenticate: Basic realm=\"api\"",
            // Base64 that is not `user:password`.
            "Basic dGVzdA==",
            "Basic dXNlcjpwYXNz+moreBase64",
        ] {
            assert!(found(text).is_empty(), "{text}: {:?}", found(text));
        }
    }

    /// What agents put on command lines and in requests: a secret option's value, curl's
    /// `-u user:password`, a MySQL client's or `sshpass`'s or a registry login's `-p`, other
    /// clients' password options, a `.netrc` line, `Authorization` in schemes other than
    /// `Bearer` and `Basic`, API-key and auth-token headers.
    #[test]
    fn credentials_on_command_lines_and_in_headers_are_secrets() {
        let d = PiiDetector::new();
        let cases: [(&str, &[&str]); 192] = [
            (
                "curl -u admin:Hunter2pw https://api.example.com",
                &["Hunter2pw"],
            ),
            // `mysqladmin`'s new password, the old one's prompt before it or the old one
            // given too (one span from the old to the new).
            (
                "mysqladmin -u root -p password 'N3w Pass 99'",
                &["N3w Pass 99"],
            ),
            ("mysqladmin -u root password \"S3cr3tPw\"", &["S3cr3tPw"]),
            (
                "mysqladmin -uroot -pOldPw123 password N3wPass99",
                &["OldPw123 password N3wPass99"],
            ),
            ("curl --user 'deploy:S3cr3t!x' https://x", &["S3cr3t!x"]),
            // Whatever the password holds, quoted blanks too; JSON-escaped quotes.
            ("curl -u admin:Zq9 https://x", &["Zq9"]),
            ("curl -u 'bob:S3c ret' https://x", &["S3c ret"]),
            (
                r#"{"cmd": "curl -u \"bob:S3cret99\" https://x"}"#,
                &["S3cret99"],
            ),
            ("mysql -h db -u root -pS3cr3tPw orders", &["S3cr3tPw"]),
            ("mysqldump -uroot -p'S3cr3t#Pw' db > x.sql", &["S3cr3t#Pw"]),
            ("mariadb -u app -pXk9mQ2vL7p", &["Xk9mQ2vL7p"]),
            (
                "sshpass -p 'S3cr3tPw' ssh deploy@10.0.0.5",
                &["S3cr3tPw", "10.0.0.5"],
            ),
            (
                "docker login -u bob -p S3cr3tPw registry.example.com",
                &["S3cr3tPw"],
            ),
            (
                "echo ok && helm registry login ghcr.io -u bob -p Xk9mQ2vL7p",
                &["Xk9mQ2vL7p"],
            ),
            (
                "machine api.example.com login bob password S3cr3tPw",
                &["S3cr3tPw"],
            ),
            (
                "vault login --token hvs.CAESIJxk9mQ2vL7pAbCdEfGh12",
                &["hvs.CAESIJxk9mQ2vL7pAbCdEfGh12"],
            ),
            ("app --password S3cr3tPw --verbose", &["S3cr3tPw"]),
            ("gh secret set --api-key \"Xk9mQ2vL7p\"", &["Xk9mQ2vL7p"]),
            // An argument list, as a tool call's JSON or Python writes it.
            (r#"["psql", "--password", "S3cr3tPw99"]"#, &["S3cr3tPw99"]),
            ("['--client-secret', 'Xk9mQ2vL7p']", &["Xk9mQ2vL7p"]),
            (
                "curl -H 'Authorization: Token 9f8e7d6c5b4a39281706' https://x",
                &["9f8e7d6c5b4a39281706"],
            ),
            (
                r#"{"authorization": "token 9f8e7d6c5b4a39281706"}"#,
                &["9f8e7d6c5b4a39281706"],
            ),
            (
                "curl -H 'X-API-Key: 9f8e7d6c5b4a39281706' https://x",
                &["9f8e7d6c5b4a39281706"],
            ),
            (
                "X-Auth-Token: 9f8e7d6c5b4a39281706",
                &["9f8e7d6c5b4a39281706"],
            ),
            (
                "export HF_API_TOKEN=Xk9mQ2vL7pAbCdEf",
                &["Xk9mQ2vL7pAbCdEf"],
            ),
            (r#"{"apiToken": "Xk9mQ2vL7p"}"#, &["Xk9mQ2vL7p"]),
            ("Api-Key: Xk9mQ2vL7p", &["Xk9mQ2vL7p"]),
            // Found by an attack review: JSON-escaped quotes, escapes inside, argument lists
            // (JSON, Python, Go), continued lines, `;` inside a quoted query, `=`, spellings
            // of options, glued and long forms, other clients and CLIs, `.netrc` variants,
            // headers set in code, short tokens, capitals.
            (
                r#"{"command":"mysql -uroot -p\"S3cr3tPw\" db"}"#,
                &["S3cr3tPw"],
            ),
            (
                r#"{"command":"docker login -u bob -p \"S3cr3tPw\" r"}"#,
                &["S3cr3tPw"],
            ),
            (r#"app --password "S3cr3t\"Pw99""#, &[r#"S3cr3t\"Pw99"#]),
            (
                r#"curl -u "admin:Pa\$\$w0rd" https://x"#,
                &[r#"Pa\$\$w0rd"#],
            ),
            (r#"["mysql", "-uroot", "-pS3cr3tPw"]"#, &["S3cr3tPw"]),
            (
                r#"["sshpass", "-p", "S3cr3tPw", "ssh", "h"]"#,
                &["S3cr3tPw"],
            ),
            (
                r#"["docker", "login", "-u", "bob", "-p", "S3cr3tPw"]"#,
                &["S3cr3tPw"],
            ),
            (
                r#"subprocess.run(["curl", "--user", "bob:S3cr3tPw", url])"#,
                &["S3cr3tPw"],
            ),
            (
                r#"exec.Command("mysql", "-uroot", "-pS3cr3tPw")"#,
                &["S3cr3tPw"],
            ),
            ("mysql \\\n  -uroot \\\n  -pS3cr3tPw", &["S3cr3tPw"]),
            (
                "mysql -e 'SELECT 1;' -uroot -pS3cr3tPw orders",
                &["S3cr3tPw"],
            ),
            ("app --password \\\n    S3cr3tPw99", &["S3cr3tPw99"]),
            (
                "app --passphrase \"Pw99 horse battery\"",
                &["Pw99 horse battery"],
            ),
            (
                "app --token=S3cr3tPw99 --db-password S3cr3tPw",
                &["S3cr3tPw99", "S3cr3tPw"],
            ),
            (
                "--PASSWORD S3cr3tPw `--client_secret S3cr3tPw`",
                &["S3cr3tPw", "S3cr3tPw"],
            ),
            ("curl -uadmin:Hunter2pw https://x", &["Hunter2pw"]),
            ("curl --user=admin:Hunter2pw https://x", &["Hunter2pw"]),
            (
                "curl -sS -X POST -H 'a: b' -u 1000:123456789 https://x",
                &["123456789"],
            ),
            ("curl -U proxyuser:Pr0xyPw https://x", &["Pr0xyPw"]),
            ("MySQL -uroot -pS3cr3tPw", &["S3cr3tPw"]),
            ("$(which mysql8) -uroot -pS3cr3tPw", &["S3cr3tPw"]),
            (
                "docker --context prod login -u bob -p S3cr3tPw",
                &["S3cr3tPw"],
            ),
            ("oc login -u dev -p S3cr3tPw https://api", &["S3cr3tPw"]),
            (
                "machine h login \"bob\" password \"S3cr3tPw\"",
                &["S3cr3tPw"],
            ),
            (
                "machine h login bob account x password S3cr3tPw",
                &["S3cr3tPw"],
            ),
            ("Authorization: Token S3cr3tPw", &["S3cr3tPw"]),
            ("AUTHORIZATION: TOKEN 9f8e7d6c5b4a", &["9f8e7d6c5b4a"]),
            (
                r#"req.set("Authorization", "Token 9f8e7d6c5b4a")"#,
                &["9f8e7d6c5b4a"],
            ),
            (
                "setRequestHeader('X-API-Key', '9f8e7d6c5b4a')",
                &["9f8e7d6c5b4a"],
            ),
            ("Private-Token: glpat9f8e7d6c5b4a", &["glpat9f8e7d6c5b4a"]),
            // Found by a second review: a header's key before the command's password on
            // its line, a URL before the option, a header set by index.
            (
                r#"curl -H "X-API-Key: a8Fk29dLq0Zx7" -u admin:Zq9xK2mPq https://x"#,
                &["a8Fk29dLq0Zx7", "Zq9xK2mPq"],
            ),
            (
                "curl https://api.example.com/v1/items -u admin:Zq9xK2mPq",
                &["Zq9xK2mPq"],
            ),
            (
                "oc login https://api.cluster:6443 -u kubeadmin -p Zq9xK2mPq",
                &["Zq9xK2mPq"],
            ),
            (
                r#"session.headers["PRIVATE-TOKEN"] = "glX9a8Fk29dLq0Zx""#,
                &["glX9a8Fk29dLq0Zx"],
            ),
            // An authorization header's credentials in other schemes: Discord's, Okta's,
            // Elastic's, any vendor's.
            (
                "Authorization: Bot MTk4NjIyNDgzNDcxOTI1MjQ4.Cl2FMQ.ZnCjm1XVW7vRze4b7Cq4se7kKWs",
                &["MTk4NjIyNDgzNDcxOTI1MjQ4.Cl2FMQ.ZnCjm1XVW7vRze4b7Cq4se7kKWs"],
            ),
            (
                "curl -H 'Authorization: SSWS 00QCjAl4MlV-WPXM8ZR9nMQ3i6bEF0xVHs' https://okta",
                &["00QCjAl4MlV-WPXM8ZR9nMQ3i6bEF0xVHs"],
            ),
            (
                r#"{"Authorization": "ApiKey VnVhQ2ZHY0JDZGJrUW0tZTVh"}"#,
                &["VnVhQ2ZHY0JDZGJrUW0tZTVh"],
            ),
            (
                r#"headers["Authorization"] = "Klaviyo-API-Key pk_9f8e7d6c5b4a3928""#,
                &["pk_9f8e7d6c5b4a3928"],
            ),
            // Other clients' passwords: Redis, SQL Server, MongoDB, zip, keytool (both of
            // its passwords, and what lies between), openssl (`pass:` only), Samba, lftp.
            ("redis-cli -h cache -a S3cr3tPw99 ping", &["S3cr3tPw99"]),
            ("redis-cli --pass S3cr3tPw99 -h cache", &["S3cr3tPw99"]),
            (
                "sqlcmd -S db -U sa -P 'S3cr3t#Pw9' -Q 'select 1'",
                &["S3cr3t#Pw9"],
            ),
            (
                "mongosh -u admin -p S3cr3tPw99 --authenticationDatabase admin",
                &["S3cr3tPw99"],
            ),
            ("mongodump -u admin -pS3cr3tPw99 --db app", &["S3cr3tPw99"]),
            ("zip -P S3cr3tPw99 out.zip a.txt", &["S3cr3tPw99"]),
            // A key's passphrase, old and new.
            (
                "ssh-keygen -t ed25519 -N S3cr3tPw99 -f key",
                &["S3cr3tPw99"],
            ),
            (
                "ssh-keygen -p -P 0ldPassw0rd -N 'N3w Passw0rd' -f ~/.ssh/id_ed25519",
                &["0ldPassw0rd -N 'N3w Passw0rd"],
            ),
            ("ssh-keygen -q -NS3cr3tPw99 -f k", &["S3cr3tPw99"]),
            // (Found by an attack review: in a cluster, digits only.)
            ("ssh-keygen -qN 'S3cr3tPw99' -t rsa -f k", &["S3cr3tPw99"]),
            ("ssh-keygen -N 54321 -f k", &["54321"]),
            // Digits after an option that takes no port.
            ("zip -P 12345 out.zip a.txt", &["12345"]),
            ("7z a -p1234 x.7z dir", &["1234"]),
            ("sqlcmd -S db -U sa -P 20240101", &["20240101"]),
            (
                "ssh-keygen -pP 0ldPassw0rd -N N3wPassw0rd -f k",
                &["0ldPassw0rd -N N3wPassw0rd"],
            ),
            (
                "keytool -genkey -keystore k.jks -storepass S3cr3tPw99 -keypass K3yPw9988",
                &["S3cr3tPw99 -keypass K3yPw9988"],
            ),
            (
                "openssl pkcs12 -export -in c.pem -passout pass:S3cr3tPw99 -out c.p12",
                &["S3cr3tPw99"],
            ),
            (
                "openssl rsa -in k.pem -passin env:KEYPW -passout pass:S3cr3tPw99",
                &["S3cr3tPw99"],
            ),
            (
                "openssl enc -aes-256-cbc -k S3cr3tPw99 -in a",
                &["S3cr3tPw99"],
            ),
            ("smbclient //fs/share -U bob%S3cr3tPw99", &["S3cr3tPw99"]),
            ("lftp -u bob,S3cr3tPw99 sftp://h", &["S3cr3tPw99"]),
            // PowerShell's plain-text secure strings: positional, `-String`, in a
            // credential, continued over lines, quotes doubled or escaped.
            (
                r#"$pw = ConvertTo-SecureString "P@ssw0rd!" -AsPlainText -Force"#,
                &["P@ssw0rd!"],
            ),
            (
                "ConvertTo-SecureString 'S3cr3t''s99' -AsPlainText -Force",
                &["S3cr3t''s99"],
            ),
            (
                r#"convertto-securestring -String "S3cr3tPw99" -asplaintext -force"#,
                &["S3cr3tPw99"],
            ),
            (
                "ConvertTo-SecureString -AsPlain -Force -String S3cr3tPw99",
                &["S3cr3tPw99"],
            ),
            (
                r#"New-Object PSCredential("bob", (ConvertTo-SecureString "S3cr3t Pw 99" -AsPlainText -Force))"#,
                &["S3cr3t Pw 99"],
            ),
            (
                "ConvertTo-SecureString `\r\n  \"S3cr3tPw99\" `\n  -AsPlainText -Force",
                &["S3cr3tPw99"],
            ),
            (
                "ConvertTo-SecureString \"a`\"S3cr3tPw99\" -AsPlainText",
                &["a`\"S3cr3tPw99"],
            ),
            // SQL Server's client as Windows scripts write it, OpenLDAP's tools.
            ("SQLCMD -S db -U sa -P S3cr3tPw99", &["S3cr3tPw99"]),
            (
                "ldapsearch -x -H ldap://h -D cn=admin,dc=x -w S3cr3tPw99 -b dc=x",
                &["S3cr3tPw99"],
            ),
            (
                "ldapmodify -D cn=admin -wS3cr3tPw99 -f x.ldif",
                &["S3cr3tPw99"],
            ),
            (
                r#"ldapadd -x -D "cn=admin,dc=x" -w "S3cr3t Pw 99" -f a.ldif"#,
                &["S3cr3t Pw 99"],
            ),
            (
                "ldappasswd -x -D cn=admin -w S3cr3tPw99 uid=bob",
                &["S3cr3tPw99"],
            ),
            (
                r#"["ldapwhoami", "-x", "-w", "S3cr3tPw99"]"#,
                &["S3cr3tPw99"],
            ),
            ("ldapsearch -xLLLw S3cr3tPw99 -b dc=x", &["S3cr3tPw99"]),
            ("ldapsearch -ZZw S3cr3tPw99 -b dc=x", &["S3cr3tPw99"]),
            // An option repeated after one that gives no password: the tool takes the last.
            (
                "ldapsearch -x -w $LDAP_PW -D cn=admin -w S3cr3tPw99 -b dc=x",
                &["S3cr3tPw99"],
            ),
            (
                "curl -u \"$CREDS\" -u bob:S3cr3tPw99 https://h/",
                &["S3cr3tPw99"],
            ),
            ("mysql -p$DB_PW -h db -pS3cr3tPw99 app", &["S3cr3tPw99"]),
            // curl's bearer token option.
            (
                "curl --oauth2-bearer S3cr3tTok99 https://x",
                &["S3cr3tTok99"],
            ),
            // A `-p` that prompts (naming a database after it), then one that gives it.
            ("mysql -p db -pS3cr3tPw99", &["S3cr3tPw99"]),
            (
                "mysql -u root -p orders -h db -pS3cr3tPw99",
                &["S3cr3tPw99"],
            ),
            // A registry's tool with `.exe` in any case.
            ("docker.EXE login -u bob -p S3cr3tPw99", &["S3cr3tPw99"]),
            (
                r"C:\Tools\Docker.Exe login -u bob -p S3cr3tPw99 r",
                &["S3cr3tPw99"],
            ),
            ("redis-cli -a - -a S3cr3tPw99 ping", &["S3cr3tPw99"]),
            // Redis's forks' clients and the benchmarks, the MongoDB tools not named
            // before, Cassandra's, Neo4j's and PyPI's clients: on a line, in JSON, in an
            // argument list, as Windows names them.
            ("valkey-cli -h cache -a S3cr3tPw99 ping", &["S3cr3tPw99"]),
            ("keydb-cli --pass S3cr3tPw99 INFO", &["S3cr3tPw99"]),
            (
                "redis-benchmark -h db -p 6379 -a S3cr3tPw99 -q",
                &["S3cr3tPw99"],
            ),
            ("valkey-benchmark -a S3cr3tPw99 -t set", &["S3cr3tPw99"]),
            ("mongostat -u admin -p S3cr3tPw99 5", &["S3cr3tPw99"]),
            ("mongotop --host db -u admin -p S3cr3tPw99", &["S3cr3tPw99"]),
            ("mongofiles -u a -p S3cr3tPw99 put r.pdf", &["S3cr3tPw99"]),
            ("cqlsh db 9042 -u cassandra -p S3cr3tPw99", &["S3cr3tPw99"]),
            (
                "cypher-shell -a neo4j://db:7687 -u neo4j -p S3cr3tPw99",
                &["S3cr3tPw99"],
            ),
            ("twine upload -u bob -p S3cr3tPw99 dist/*", &["S3cr3tPw99"]),
            (
                r#"{"cmd": "valkey-cli -a S3cr3tPw99 ping"}"#,
                &["S3cr3tPw99"],
            ),
            (
                r#"run(["cqlsh", "-u", "cassandra", "-p", "S3cr3tPw99"])"#,
                &["S3cr3tPw99"],
            ),
            ("cqlsh.exe -p S3cr3tPw99 db", &["S3cr3tPw99"]),
            // (Their names as another command's arguments: the line they cut is read on
            // as that command's.)
            ("curl -T twine -u bob:S3cr3tPw99 ftp://h/", &["S3cr3tPw99"]),
            ("zip -r out.zip cqlsh -P S3cr3tPw99", &["S3cr3tPw99"]),
            (
                "curl -T twine -T cqlsh -u bob:S3cr3tPw99 h",
                &["S3cr3tPw99"],
            ),
            (
                "curl -T mongotop -T redis-benchmark -u bob:S3cr3tPw99",
                &["S3cr3tPw99"],
            ),
            // A shell's escaped blank inside a password (cut there, its rest was left).
            ("ldapsearch -x -w S3cr3t\\ Pw99 -b dc=x", &["S3cr3t\\ Pw99"]),
            ("curl -u bob:S3cr3t\\ Pw99 https://h/", &["S3cr3t\\ Pw99"]),
            ("mysql -uroot -pS3cr3t\\ Pw99 db", &["S3cr3t\\ Pw99"]),
            ("app --password S3cr3t\\ Pw99 --v", &["S3cr3t\\ Pw99"]),
            (
                r#"{"cmd": "zip -P S3cr3t\\ Pw99 a.zip d"}"#,
                &[r"S3cr3t\\ Pw99"],
            ),
            // (Found by an attack review: an escaped tab, escaped blanks in a row; a repeated
            // option in a quoted argument list.)
            ("zip -P S3cr3t\\\tPw99 a.zip", &["S3cr3t\\\tPw99"]),
            ("zip -P S3cr3t\\ \\ Pw99 a.zip", &["S3cr3t\\ \\ Pw99"]),
            (
                r#"["ldapsearch", "-w", "$PW", "-w", "S3cr3tPw99"]"#,
                &["S3cr3tPw99"],
            ),
            // Windows' upper-case file names.
            ("SQLCMD.EXE -S db -U sa -P S3cr3tPw99", &["S3cr3tPw99"]),
            (
                r"& 'C:\Program Files\Microsoft SQL Server\Tools\Binn\SQLCMD.EXE' -S db -P S3cr3tPw99",
                &["S3cr3tPw99"],
            ),
            ("ldapsearch.EXE -x -w S3cr3tPw99", &["S3cr3tPw99"]),
            (
                "curl -T SQLCMD.EXE -u bob:S3cr3tPw99 ftp://h/",
                &["S3cr3tPw99"],
            ),
            // A last option without its argument leaves the password before it.
            (
                "keytool -genkey -storepass S3cr3tPw99 -keypass",
                &["S3cr3tPw99"],
            ),
            (
                "openssl pkcs12 -passin pass:S3cr3tPw99 -passout",
                &["S3cr3tPw99"],
            ),
            // Found by an attack review: an LDAP tool's or SQLCMD's name as another
            // command's argument cut that command's line before its password.
            (
                "curl -T ldapsearch -u admin:S3cr3tPw99 ftp://h/",
                &["S3cr3tPw99"],
            ),
            (
                "curl https://h/api/ldapadd -u admin:S3cr3tPw99",
                &["S3cr3tPw99"],
            ),
            (
                "keytool -import -alias ldapsearch -keystore t.jks -storepass S3cr3tPw99",
                &["S3cr3tPw99"],
            ),
            (
                "redis-cli -n 0 SET ldapsearch x -a S3cr3tPw99",
                &["S3cr3tPw99"],
            ),
            ("zip -r ldapsearch -P S3cr3tPw99 dir", &["S3cr3tPw99"]),
            ("mysql -u root ldapadd -pS3cr3tPw99", &["S3cr3tPw99"]),
            ("smbclient //fs/ldapadd -U bob%S3cr3tPw99", &["S3cr3tPw99"]),
            ("lftp ldapsearch -u bob,S3cr3tPw99", &["S3cr3tPw99"]),
            (
                "openssl enc -in SQLCMD -pass pass:S3cr3tPw99",
                &["S3cr3tPw99"],
            ),
            // Line continuations in Windows line endings, cmd.exe's `^` and PowerShell's
            // backtick (found by an attack review: each ended the command's line).
            (
                "ldapsearch -x \\\r\n  -w S3cr3tPw99 -b dc=x",
                &["S3cr3tPw99"],
            ),
            ("sqlcmd -S db ^\r\n  -U sa -P S3cr3tPw99", &["S3cr3tPw99"]),
            ("mysql -u root `\r\n  -pS3cr3tPw99", &["S3cr3tPw99"]),
            ("curl -s ^\n -u admin:S3cr3tPw99 https://h", &["S3cr3tPw99"]),
            ("sshpass -p ^\r\n S3cr3tPw99 ssh h", &["S3cr3tPw99"]),
            ("sqlcmd -S db -U sa^\r\n -P S3cr3tPw99", &["S3cr3tPw99"]),
            ("app --password ^\r\n S3cr3tPw99", &["S3cr3tPw99"]),
            ("app --db-password `\r\n  S3cr3tPw99", &["S3cr3tPw99"]),
            // A POSIX continuation in a JSON string (`\\\n`, the shell's `\` escaped):
            // once read as the break alone, so the command's line ended there.
            (
                r#"{"cmd": "mysql -u root \\\n  -pS3cr3tPw99 db"}"#,
                &["S3cr3tPw99"],
            ),
            (
                r#"{"cmd": "ldapsearch -x \\\r\n  -w S3cr3tPw99 -b dc=x"}"#,
                &["S3cr3tPw99"],
            ),
            // Found by a second attack review: `sqlcmd` after another command on its line
            // (passed over when it ended only its own kind's lines), `-String:'…'`,
            // ldappasswd's new password.
            ("mysql a sqlcmd -P S3cr3tPw99", &["S3cr3tPw99"]),
            (
                "Install curl and sqlcmd -S db -U sa -P S3cr3tPw99",
                &["S3cr3tPw99"],
            ),
            ("lftp sqlcmd -S db -U sa -P S3cr3tPw99", &["S3cr3tPw99"]),
            (
                "ConvertTo-SecureString -String:'S3cr3tPw99' -AsPlainText -Force",
                &["S3cr3tPw99"],
            ),
            (
                "ldappasswd -x -D cn=admin -W -s N3wPassw0rd uid=bob",
                &["N3wPassw0rd"],
            ),
            (
                "ldappasswd -x -D cn=admin -w S3cr3tPw99 -s N3wPassw0rd uid=bob",
                &["S3cr3tPw99 -s N3wPassw0rd"],
            ),
            // Archivers: `-p` glued to the password (rar's `-hp` too), in an argument list.
            ("7z a -pS3cr3tPw99 -mhe=on out.7z dir", &["S3cr3tPw99"]),
            (r"C:\tools\7z.exe x -pS3cr3tPw99 a.7z", &["S3cr3tPw99"]),
            ("7za x -p'S3cr3t Pw 99' a.7z", &["S3cr3t Pw 99"]),
            ("rar a -hpS3cr3tPw99 out.rar dir", &["S3cr3tPw99"]),
            ("unrar x -pS3cr3tPw99 a.rar", &["S3cr3tPw99"]),
            ("zip -r 7z -P S3cr3tPw99 dir", &["S3cr3tPw99"]),
            // … while a tool of their own kind still ends their line.
            (
                "ldapsearch -x -W ldapadd -w S3cr3tPw99 -f a",
                &["S3cr3tPw99"],
            ),
            // Found by an attack review: a file's `.zip` ended the command's line; zip's
            // option clusters, unzip; openssl's `-password`, quoted `pass:` arguments.
            (
                "curl -T backup.zip -u bob:S3cretPw9 ftp://host/",
                &["S3cretPw9"],
            ),
            // (A field's `=` stands before a command: a link's `cmd=curl …`, decoded.)
            (
                "https://h/?cmd%3Dcurl%2520-u%2520bob%253AS3cretPw9",
                &["S3cretPw9"],
            ),
            (
                "curl -F file=@site.zip -u admin:S3cretPw9 https://h/upload",
                &["S3cretPw9"],
            ),
            (
                "openssl enc -aes-256-cbc -in backup.zip -out b.zip.enc -k S3cretPw9",
                &["S3cretPw9"],
            ),
            ("zip -rP S3cretPw9 out.zip dir", &["S3cretPw9"]),
            ("unzip -o -P S3cretPw9 out.zip", &["S3cretPw9"]),
            (
                "openssl pkcs12 -export -in c.pem -out o.p12 -password pass:S3cretPw9",
                &["S3cretPw9"],
            ),
            (
                "openssl rsa -in k.pem -passout pass:\"S3cret Pw9 x\" -out k2.pem",
                &["S3cret Pw9 x"],
            ),
            (
                "openssl rsa -in k.pem -passin 'pass:S3cret Pw9 x' -out k2.pem",
                &["S3cret Pw9 x"],
            ),
            // Options with one dash: Java tools', Go's flags, NuGet's, in an argument list,
            // openssl's `-password pass:…`.
            ("java -jar app.jar -password Zq8rTw2xLk", &["Zq8rTw2xLk"]),
            ("consul kv get -token=Zq8rTw2xLk app/x", &["Zq8rTw2xLk"]),
            (
                "nuget push p.nupkg -ApiKey oy2Zq8rTw2xLk -Source https://api.nuget.org/v3/index.json",
                &["oy2Zq8rTw2xLk"],
            ),
            (r#"["app", "-secret", "Zq8rTw2xLk"]"#, &["Zq8rTw2xLk"]),
            ("-Passphrase 'Zq8r Tw2x Lk'", &["Zq8r Tw2x Lk"]),
            (
                "openssl pkcs12 -export -in c.pem -out o.p12 -password pass:S3cretPw9",
                &["S3cretPw9"],
            ),
            // (Found by a second attack review.) A quote doubled inside (PowerShell's escape),
            // a quoted option name, Azure's `-AccessToken`.
            ("$c = Get-Foo -Password 'Zq8r''Tw2xLk'", &["Zq8r''Tw2xLk"]),
            (
                "New-LocalUser bob -Password \"Zq8r\"\"Tw2xLk\"",
                &["Zq8r\"\"Tw2xLk"],
            ),
            ("args=(\"-password\" \"Zq8rTw2xLk\")", &["Zq8rTw2xLk"]),
            (
                "Connect-AzAccount -AccessToken Zq8rTw2xLk99",
                &["Zq8rTw2xLk99"],
            ),
        ];
        for (text, want) in cases {
            finds_and_redacts(&d, text, want);
        }
        for text in [
            // One dash inside a word or a `--` option's name, a variable, a number after
            // `-token`, an option after the name.
            "some-token=abc",
            "x -token $TOKEN",
            "x -Token 12345",
            "x -password -v",
            "Set-Thing -Password $securePassword",
            // Other options, ids, prompts, ports, templates, masks, words.
            "docker run -u 1000:1000 -p 8080:80 img",
            "sudo -u postgres psql",
            "git push -u origin main",
            "mysql -u root -p orders_2024",
            "mysql -u root -p$MYSQL_PWD orders",
            "mysql -h db -P 3306 -u root -p",
            "ssh -p 2222 host && mkdir -p /tmp/x && cp -pr a b",
            "find . -path ./x -prune -o -print",
            "login -p",
            "please login to continue, then login -p to keep the environment",
            "docker login -u bob --password-stdin < pw.txt",
            "sshpass -f ~/.pw ssh host",
            "use mysqladmin password to change it; mysqladmin -u root -p status",
            "mysql -u root password S3cr3tPw",
            "gh auth login --with-token < token.txt",
            "--token $GITHUB_TOKEN",
            "--token ${{ secrets.TOKEN }}",
            "curl -u $USER:$PASS https://x",
            "curl -u 'bob:****' https://x",
            "app --password-file /run/secrets/pw",
            "app --password changeme",
            "app--password S3cr3tPw",
            "Authorization: Token <token>",
            "X-API-Key: ${API_KEY}",
            "the login page; password reset",
            // Found by an attack review: build secrets, other commands' `-u` (a user and a
            // group, a URL), placeholders and defaults, a published port, a token id, a
            // placeholder token, lists of field names.
            "docker build --secret id=mysecret,src=/run/x .",
            "docker service create --secret source=ssh-key,target=ssh x",
            "docker run -u root:root img && docker exec -u www-data:www-data c sh",
            "pip install --user git+https://github.com/org/repo.git",
            "socat -u TCP:localhost:8080 STDOUT",
            "curl -u USER:PASS https://x; curl -u guest:guest https://x",
            "curl -u username:password https://x",
            "docker run -d --name mysql -p3306:3306 mysql:8",
            "llama-cli --token 128001",
            "Authorization: Token YOUR_TOKEN_HERE_1234",
            "fields = (\"username\", \"password\", \"email1\")",
            "docker run -p 8080:80 img; docker login -u bob --password-stdin",
            // Authorization in prose, placeholders in other schemes; bearer and basic
            // credentials that their own checks refuse stay refused.
            "Authorization: required for every endpoint since v2",
            "Authorization: ApiKey <api-key>",
            "Authorization: Bot ${DISCORD_TOKEN}",
            "Authorization: SSWS YOUR_API_TOKEN_1234",
            "Authorization: RFC 7235",
            "Authorization: Bearer abc",
            "Authorization: Basic understanding",
            // Those clients' other options, variables, prompts, other sources.
            "redis-cli -a $REDIS_PASSWORD ping",
            "valkey-cli -a \"$VALKEY_PASSWORD\" ping",
            "twine upload -p ${{ secrets.PYPI_PASSWORD }} dist/*",
            "cypher-shell -u neo4j -p <password>",
            "cqlsh -u cassandra -p password",
            "redis-benchmark -p 6379 -c 50 -n 10000",
            "keydb-cli -a '' ping",
            "tie the bundle with twine -p 3 times",
            "docker run -p 6379:6379 valkey/valkey && valkey-cli ping",
            "openssl rsa -passin env:KEYPW -passout file:pw.txt",
            "openssl s_client -connect h:443 -servername h",
            "zip -r out.zip dir && gzip -k file",
            "keytool -list -keystore k.jks -storepass:env STOREPW",
            "smbclient -L fs -U bob",
            "lftp -u bob sftp://h",
            "mongo --port 27017 -u admin -p",
            "sqlcmd -S db -E -Q 'select 1'",
            "ssh-keygen -t ed25519 -N \"\" -f key",
            "ssh-keygen -q -N '' -f k && ssh-keygen -lf k.pub",
            "ssh-keygen -p -P \"$OLD\" -N \"$NEW\" -f k",
            // An encrypted string (no `-AsPlainText`), variables, prose.
            "ConvertTo-SecureString $encrypted -Key $key",
            "ConvertTo-SecureString \"01000000d08c9ddf0115d1118c7a\" | Out-Null",
            "ConvertTo-SecureString $env:DB_PASSWORD -AsPlainText -Force",
            r#"ConvertTo-SecureString "$pw" -AsPlainText -Force"#,
            "the ConvertTo-SecureString cmdlet turns text -AsPlainText into one",
            "ConvertTo-SecureString -Key $k -AsPlainText -String $s",
            // (Found by an attack review.) After an option that gives no password, a quoted
            // string's `-p…` and another command's option; paths with escaped blanks; a
            // value that is no secret before its escaped blank.
            "mysql -p$PW -e 'ALTER TABLE a -pK3yCol1'",
            "mysql -p orders -e 'ALTER TABLE a -pK3yCol1'",
            "curl --oauth2-bearer $TOKEN https://x",
            "mysql -p S3cr3tPw99",
            "redis-cli -a \"$P\" SET key \"-a Valu3x99\"",
            "sshpass -p \"$PW\" ssh -o Port=22 host -p x9Kq2mLp",
            "ansible-playbook --private-key ~/Secure\\ Keys/id_rsa site.yml",
            "x --private-key C:\\Users\\My\\ Docs\\key.pem",
            "app --password a\\ --password a\\ --password a\\ ",
            // A prompt, a variable, a URL, a word that is no tool's.
            "ldapsearch -x -W -D cn=admin -b dc=x",
            "ldapsearch -x -w $LDAP_PASSWORD -b dc=x",
            "ldaps://dc1.corp:636 -w 2024",
            "ldapfoo -w S3cr3tPw99",
            // A variable cast to a type, the switch turned off.
            "ConvertTo-SecureString [string]$x -AsPlainText",
            "ConvertTo-SecureString -AsPlainText:$false 'x1234567'",
            // A prompt (`-p` apart from a value), no password (`-p-`), a file's name.
            "7z a -p out.7z dir",
            "7z a -p Archive2024 out.7z",
            "rar a -p- out.rar dir",
            "tar czf backup.7z -p dir2024",
            // (A longer word is no tool: the trigger reads `ldap` and any letters.)
            "ldapadduser -w S3cr3tPw99 bob",
            "ldapsearchy -w S3cr3tPw99",
            "see the zip code and the mongo docs",
            // Found by an attack review: ports after a MongoDB container's or a tool's name,
            // log lines with a word after `Authorization:`, a digest's fields.
            "docker run -d --name mongo -p 27017:27017 mongo:6",
            "docker run --name mongo-express -p 8081:8081 mongo-express",
            "mongoose -p 3000 && mongod --port 27017 -p 8080",
            "Authorization: revoked 2024-01-02T10:00:00Z",
            "authorization: denied request_id=4f9a8b7c6d5e",
            "Authorization: expires 1735689600",
            "Authorization: Digest username=bob2024, realm=x",
        ] {
            assert!(found(text).is_empty(), "{text}: {:?}", found(text));
        }
    }

    /// Other services' tokens, found by their prefixes wherever they stand (a command's
    /// output, a config file, prose): Google's OAuth access tokens, PyPI's, Docker Hub's,
    /// Shopify's, Linear's, Notion's, Supabase's, Databricks', Postman's, Grafana's, New
    /// Relic's, Sentry's, Atlassian's, Stripe's webhook secrets, 1Password's, Doppler's,
    /// Pulumi's; and a PEM private key encoded in base64, as a kubeconfig holds one.
    #[test]
    fn service_tokens_are_found_by_their_prefixes() {
        let d = PiiDetector::new();
        let atlassian = format!(
            "ATATT3xFfGF0{}=A5D32826",
            "aqDeMqG3omjMyXHCabM6JOF8EFd0Nhcy-1k".repeat(5)
        );
        let onepassword = format!(
            "ops_eyJ{}",
            "z4FxFEtKyPiYGFDm7ena8D5VfLDpgyyjVw5HanSBeV".repeat(8)
        );
        let mut tokens = vec![
            "ya29.TCQCyEZDz-TddJ8HyS5SUkCnD8zRA9a9SkpXz9w3QlY7Zkuvqdt7s8Stqcbn".to_owned(),
            "pypi-AgEIcHlwaS5vcmcr3yBdGBLEPH1qhT61qtc4xatws8phP9nhFyJfm5di4PzJ59FHz5r1pY4OjE2"
                .to_owned(),
            "dckr_pat_jBMptUsGr7CmY_uCu3ZR1zTOlUc".to_owned(),
            "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".to_owned(),
            "lin_api_OfZqfM2oeq3hDavJA76rNicHTp8hkqdlm7tOtHWn".to_owned(),
            "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".to_owned(),
            "sbp_14028d512c9791e558e08baa7196b50ac2f86702".to_owned(),
            "dapi824c1c099724caf4941d4072014b3ce1".to_owned(),
            "PMAK-07f80e222f828767efc2f916-24a8940f1f836f99eee3692f09e2e8c662".to_owned(),
            "glsa_LfjVHq8xiM0OGr4hTxoF54Fzbka8FRCz_94dbca3a".to_owned(),
            "glc_auWv1zh87mTa5Vsqxezy3Lex7BWr2drgd1QsO7jprBGumXxY9B4bZWOz648J==".to_owned(),
            "NRAK-9NFD02IS5D9IK40VSTQQZPT49ZH".to_owned(),
            "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".to_owned(),
            "whsec_gAFTCloiADN5RpVI2XQWhX1ssrKrxqVq".to_owned(),
            "dp.st.prd.etOd4UYETIay2BV6DfVPClogqoPchv5V7S82qTdrOJR".to_owned(),
            "pul-d8962058765a6ca7cff00d796c25410335b40014".to_owned(),
            "dckr_oat_7awgM4jG5SQvxcvmNzhKj8PQjxo".to_owned(),
            "lin_oauth_8f8990917b7e520efcd51f8ebe84055a251f53f8738bb526c8f2fac8ff0a1571".to_owned(),
            "sb_secret_N7UND0UgjKTVK-Uodkm0Hg_xSvEMPvz".to_owned(),
            "NRII-GZKVjLai0OwkBWFqNuybOm_d4v7m2oaW".to_owned(),
            "secret_Zk8mQ2vX9pLw4TnR7yB3cH6jF1sD5gA0eK2uM8qW4oI".to_owned(),
            atlassian,
            onepassword,
        ];
        let key = "LS0tLS1CRUdJTiBSU0EgUFJJVkFURSBLRVktLS0tLQqlTcoYJTC7HW0TLN7WI3su2R4/ch/LGXEXRJTWSTydXDRgvjEgHmn+2qDu6LmZf1x8KZn9r+WTJTzWVK9N+tcUJ6Cus/7pIy+K8iEfnuSRxbEL7LVWO/web5MKLS0tLS1FTkQgUlNBIFBSSVZBVEUgS0VZLS0tLS0K";
        tokens.push(key.to_owned());
        for t in &tokens {
            for text in [
                t.clone(),
                format!("token: {t}\n"),
                format!("{{\"access_token\": \"{t}\", \"expires_in\": 3599}}"),
                format!("$ gcloud auth print-access-token\n{t}\n"),
            ] {
                finds_and_redacts(&d, &text, &[t.as_str()]);
            }
        }
        // A service account's access token holds dots; a sentence's full stop is no part.
        let service =
            "ya29.c.Kp8BCQjTzX4Lm9Qw2Rv7Yt5Ub3Nc1Ae8Gf6Hd0Jk4Ls2Mp9Oq7Ir5Es3Tu1Wy.Zx8Cv6Bn4";
        finds_and_redacts(&d, &format!("token is {service}."), &[service]);
        // A key in base64 wrapped at 76 columns (`base64 key.pem`), or folded in YAML.
        let wrapped = key
            .as_bytes()
            .chunks(76)
            .map(|c| std::str::from_utf8(c).unwrap_or_default())
            .collect::<Vec<_>>();
        let text = format!("{}\nnext: 1\n", wrapped.join("\n"));
        finds_and_redacts(&d, &text, &[wrapped.join("\n").as_str()]);
        let folded = format!(
            "    client-key-data: >-\n      {}\n    next: 1\n",
            wrapped.join("\n      ")
        );
        finds_and_redacts(&d, &folded, &[wrapped.join("\n      ").as_str()]);
        // A kubeconfig's user: the key's data in base64.
        let kubeconfig = format!(
            "users:\n- name: admin\n  user:\n    client-certificate-data: {}\n    client-key-data: {key}\n",
            "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCkJ+y8j+KVXlzY5G3I7Ut8J2TSpaTXZ3BvhdhpACSta9o0Ab6cjLzMk19s0fYSJq4VM4rho0AE0zug0kasBMgbG68j47+e71958rSTSvh/VSC2m5Sw2YLoW7VQotLS0tLUVORCBDRVJUSUZJQ0FURS0tLS0tCg=="
        );
        finds_and_redacts(&d, &kubeconfig, &[key]);
        // A bundle in base64, a certificate then its private key (HAProxy's `tls.pem`), on
        // one line or wrapped; not a chain of certificates, nor one with a public key.
        let bundle = "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCmM5MlAyK3pIZDNPQzJwWXdMODJEZWFHZHl5OFljazBrRjRuUDQ3R2lDcGo3WmZaenA3MmRwaWlmQTlTSEVBOEoKLS0tLS1FTkQgQ0VSVElGSUNBVEUtLS0tLQotLS0tLUJFR0lOIFBSSVZBVEUgS0VZLS0tLS0KTU9FOW1RZkhkbE53bDljeWhEdWpTMzhCcVJWMXAwZG8vNDMrN3RjVnRVRlF3anFEU1FjUmtNUWJaaHZZU21JUjlRVFlyd0EyTmUzcERYaGcrclZsYXhLUW9UTEhyRVZXRms5VkEvWm93dXdlSWorMEdRSVBkOHg4TGE2UE1IS0MKLS0tLS1FTkQgUFJJVkFURSBLRVktLS0tLQo=";
        finds_and_redacts(&d, &format!("  tls.pem: {bundle}\n"), &[bundle]);
        // (At GNU `base64`'s 76 characters, OpenSSL's 64, others' 60, 72 and 80.)
        for width in [76, 64, 60, 72, 80] {
            let wrapped = bundle
                .as_bytes()
                .chunks(width)
                .map(|c| std::str::from_utf8(c).unwrap_or_default())
                .collect::<Vec<_>>()
                .join("\n");
            finds_and_redacts(&d, &format!("{wrapped}\n"), &[wrapped.as_str()]);
        }
        for text in [
            "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCmM5MlAyK3pIZDNPQzJwWXdMODJEZWFHZHl5OFljazBrRjRuUDQ3R2lDcGo3WmZaenA3MmRwaWlmQTlTSEVBOEoKLS0tLS1FTkQgQ0VSVElGSUNBVEUtLS0tLQotLS0tLUJFR0lOIENFUlRJRklDQVRFLS0tLS0KYzkyUDIrekhkM09DMnBZd0w4MkRlYUdkeXk4WWNrMGtGNG5QNDdHaUNwajdaZlp6cDcyZHBpaWZBOVNIRUE4SgotLS0tLUVORCBDRVJUSUZJQ0FURS0tLS0tCg==",
            "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCmM5MlAyK3pIZDNPQzJwWXdMODJEZWFHZHl5OFljazBrRjRuUDQ3R2lDcGo3WmZaenA3MmRwaWlmQTlTSEVBOEoKLS0tLS1FTkQgQ0VSVElGSUNBVEUtLS0tLQotLS0tLUJFR0lOIFBVQkxJQyBLRVktLS0tLQpNUHk3eENGcnBHSWRaV3Y5TmdCRjNmajV6WmROLytJRk5TOWsvdHFhcEpNWkN2MGxObkZDQXNXY1ZOUkxZaElUCi0tLS0tRU5EIFBVQkxJQyBLRVktLS0tLQo=",
        ] {
            assert_eq!(d.detect(text), [], "{text}");
        }
        for text in [
            // Placeholders, words, a certificate (no secret), prefixes with too short or
            // too long a body.
            "dckr_pat_xxxxxxxxxxxxxxxxxxxxxxxxxxx",
            "shpat_00000000000000000000000000000000",
            "dapi and dapi123 are not tokens; ya29.short; PMAK-abc",
            "lin_api_OfZqfM2oeq3hDavJA76rNicHTp8hkqd",
            "NRAK-9NFD02IS5D9IK40VSTQQZPT49ZHX",
            // Found by an attack review: words and slugs after a prefix.
            "let glc_configurationManagerForTheClusterDefault = 1;",
            "sntrys_configuration_module_for_the_organization_settings_page",
            "ATATT3-ticket-number-and-description-of-the-issue-in-jira-xx",
            "NRAK-ABCDEFGHIJKLMNOPQRSTUVWXYZA",
            "dckr_oat_XXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX",
            "sb_secret_your-secret-key-here-goes-here",
            "NRII-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
            "lin_oauth_0000000000000000000000000000000000000000000000000000000000000000",
            // A field's name after Notion's prefix (no token: words, or no 43 characters).
            "secret_key_base_for_the_production_environment1 = x",
            "secret_KeyBaseForTheProductionEnvironmentXyz12345abc",
            "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCkJ+y8j+KVXlzY5G3I7Ut8J2TSpaTXZ3BvhdhpACSta9o0Ab6cjLzMk19s0fYSJq4VM4rho0AE0zug0kasBMgbG68j47",
        ] {
            assert_eq!(found(text), [], "{text}");
        }
    }

    /// Redis's passwords: `requirepass …` and `masterauth …` (in `redis.conf`, after
    /// `CONFIG SET`, as `redis-server`'s options), redis-cli's `AUTH [user] …` after its
    /// prompt or its name and options, `ACL SETUSER … >…`; the AWS CLI's `--secret-string`
    /// and `--secret-binary`; a keyring's setter's third argument
    /// (`keyring.set_password(svc, user, …)`, keytar's `setPassword`), MongoDB's shell's
    /// second (`db.auth`, `db.changeUserPassword`); MySQL's `SET PASSWORD FOR account = …`;
    /// `az keyvault secret
    /// set --value`, `aws ssm put-parameter --value` (a `SecureString`'s or a secret's by
    /// its name); an ACL file's `user … >…`; and the secret stores that read a value from
    /// standard input.
    #[test]
    fn redis_and_secret_stores_passwords_are_secrets() {
        let d = PiiDetector::new();
        for (text, want) in [
            ("localhost:6379> AUTH S3cr3tPw99\nOK", &["S3cr3tPw99"][..]),
            ("localhost:6379> AUTH default S3cr3tPw99", &["S3cr3tPw99"]),
            (
                "cache.internal:6379[2]> auth \"S3cr3tPw99\"",
                &["S3cr3tPw99"],
            ),
            ("redis> AUTH S3cr3tPw99", &["S3cr3tPw99"]),
            ("not connected> AUTH S3cr3tPw99", &["S3cr3tPw99"]),
            (
                r#"{"stdout": "$ redis-cli\ncache:6379> AUTH S3cr3tPw99\nOK"}"#,
                &["S3cr3tPw99"],
            ),
            (
                "redis-cli -h cache -p 6380 AUTH S3cr3tPw99",
                &["S3cr3tPw99"],
            ),
            (
                "/usr/bin/redis-cli --tls AUTH bob S3cr3tPw99",
                &["S3cr3tPw99"],
            ),
            (
                "redis-cli AUTH S3cr3tPw99 && redis-cli ping",
                &["S3cr3tPw99"],
            ),
            ("CONFIG SET requirepass \"S3cr3tPw99\"", &["S3cr3tPw99"]),
            (
                "requirepass S3cr3tPw99\nmasterauth Zq8vLmP3xR7t",
                &["S3cr3tPw99", "Zq8vLmP3xR7t"],
            ),
            (
                "command: redis-server --requirepass S3cr3tPw99",
                &["S3cr3tPw99"],
            ),
            (
                "redis-server --port 6380 --masterauth 'S3cr3tPw99'",
                &["S3cr3tPw99"],
            ),
            (
                "ACL SETUSER alice on >S3cr3tPw99 ~cached:* +get",
                &["S3cr3tPw99"],
            ),
            ("ACL  SETUSER alice on >S3cr3tPw99", &["S3cr3tPw99"]),
            (
                "acl setuser bob on >S3cr3tPw99 >Zq8vLmP3xR7t allkeys",
                &["S3cr3tPw99 >Zq8vLmP3xR7t"],
            ),
            (
                "aws secretsmanager create-secret --name prod/db --secret-string 'S3cr3tPw99'",
                &["S3cr3tPw99"],
            ),
            (
                "aws secretsmanager put-secret-value --secret-id db --secret-binary S3cr3tPw99",
                &["S3cr3tPw99"],
            ),
            (
                "keyring.set_password(\"github\", \"bob\", \"S3cr3tPw99\")",
                &["S3cr3tPw99"],
            ),
            (
                "keyring.set_password(SERVICE, user, 'S3cr3tPw99')",
                &["S3cr3tPw99"],
            ),
            (
                "await keytar.setPassword('app', account, \"S3cr3tPw99\");",
                &["S3cr3tPw99"],
            ),
            // MongoDB's shell's second argument; MySQL's `SET PASSWORD FOR`.
            (
                "db.changeUserPassword(\"bob\", \"S3cr3tPw99\", {w: \"majority\"})",
                &["S3cr3tPw99"],
            ),
            (
                "use admin\ndb.auth(\n  'admin',\n  'S3cr3tPw99'\n)",
                &["S3cr3tPw99"],
            ),
            (
                "SET PASSWORD FOR 'bob'@'%' = 'S3cr3tPw99';",
                &["S3cr3tPw99"],
            ),
            (
                "SET\nPASSWORD\nFOR 'bob'@'%'\n  = 'S3cr3tPw99';",
                &["S3cr3tPw99"],
            ),
            (
                "db.getSiblingDB('admin').auth('bob', 'S3cr3tPw99')",
                &["S3cr3tPw99"],
            ),
            (
                r#"{"sql": "set password for \"app\"@\"%\" = \"S3cr3tPw99\""}"#,
                &["S3cr3tPw99"],
            ),
            (
                "kr.set_password('svc', f(a, b), 'S3cr3tPw99')",
                &["S3cr3tPw99"],
            ),
            ("user.set_password('S3cr3tPw99')", &["S3cr3tPw99"]),
            (
                "az keyvault secret set --vault-name kv --name db --value S3cr3tPw99",
                &["S3cr3tPw99"],
            ),
            (
                "az keyvault secret set --name db --value=\"S3cr3tPw99\" -o none",
                &["S3cr3tPw99"],
            ),
            (
                "echo -n S3cr3tPw99 | gcloud secrets versions add db --data-file=-",
                &["S3cr3tPw99"],
            ),
            (
                "echo S3cr3tPw99 | gh secret set API_TOKEN --repo o/r",
                &["S3cr3tPw99"],
            ),
            (
                "printf 'S3cr3tPw99' | docker secret create db_pw -",
                &["S3cr3tPw99"],
            ),
            (
                "echo S3cr3tPw99 | npx wrangler secret put API_KEY",
                &["S3cr3tPw99"],
            ),
            (
                "echo S3cr3tPw99 | vercel env add API_KEY production",
                &["S3cr3tPw99"],
            ),
            // Found by an attack review: commands in JSON strings, a setter's arguments
            // JSON-escaped or one to a line, clients by other names and paths, AUTH written
            // into redis-cli's input, older prompts, options in number, any value of
            // `--secret-string`, package runners, `gh secret set`'s `--body` far along.
            (
                r#"{"command": "redis-cli AUTH S3cr3tPw99"}"#,
                &["S3cr3tPw99"],
            ),
            (
                r#"{"command": "echo S3cr3tPw99 | docker secret create db_pw -"}"#,
                &["S3cr3tPw99"],
            ),
            (
                r#"{"content": "keyring.set_password(\"svc\", \"bob\", \"S3cr3tPw99\")"}"#,
                &["S3cr3tPw99"],
            ),
            (
                "keyring.set_password(\n    \"svc\",\n    \"bob\",\n    \"S3cr3tPw99\",\n)",
                &["S3cr3tPw99"],
            ),
            (
                "keyring.set_password('svc', 'bob', r'S3cr3tPw99')",
                &["S3cr3tPw99"],
            ),
            ("C:/Redis/REDIS-CLI.EXE AUTH S3cr3tPw99", &["S3cr3tPw99"]),
            ("valkey-cli -h cache AUTH S3cr3tPw99", &["S3cr3tPw99"]),
            ("echo \"AUTH S3cr3tPw99\" | redis-cli", &["S3cr3tPw99"]),
            (
                "redis-cli <<EOF\nAUTH S3cr3tPw99\nPING\nEOF",
                &["S3cr3tPw99"],
            ),
            ("redis /tmp/redis.sock> AUTH S3cr3tPw99", &["S3cr3tPw99"]),
            ("redis cache:6379> AUTH S3cr3tPw99", &["S3cr3tPw99"]),
            ("localhost:6379(TX)> AUTH S3cr3tPw99", &["S3cr3tPw99"]),
            (
                "redis-cli -h c -p 6379 --tls --cacert /ca.pem --cert /c.pem --key /c.key -n 3 \
                 AUTH S3cr3tPw99",
                &["S3cr3tPw99"],
            ),
            (
                r#"aws secretsmanager create-secret --name x --secret-string '{"user":"a","pw":"Zq8vLmP3"}'"#,
                &[r#"{"user":"a","pw":"Zq8vLmP3"}"#],
            ),
            (
                "echo S3cr3tPw99 | pnpm dlx wrangler secret put API_KEY",
                &["S3cr3tPw99"],
            ),
            (
                "echo S3cr3tPw99 | npx wrangler@latest pages secret put K",
                &["S3cr3tPw99"],
            ),
            (
                "printf S3cr3tPw99 | gcloud beta secrets versions add db --data-file=/dev/stdin",
                &["S3cr3tPw99"],
            ),
            ("CONFIG SET REQUIREPASS S3cr3tPw99", &["S3cr3tPw99"]),
            // Found by a second review: a directive after a command or a list's mark, a
            // command in a JSON object with more fields, or in JSON inside JSON.
            (
                "echo requirepass S3cr3tPw99 >> /etc/redis/redis.conf",
                &["S3cr3tPw99"],
            ),
            ("run: requirepass S3cr3tPw99", &["S3cr3tPw99"]),
            ("- requirepass S3cr3tPw99", &["S3cr3tPw99"]),
            (
                r#"{"command": "redis-cli AUTH S3cr3tPw99", "description": "run it"}"#,
                &["S3cr3tPw99"],
            ),
            (
                r#"{"input": "{\"command\": \"redis-cli AUTH S3cr3tPw99\"}"}"#,
                &["S3cr3tPw99"],
            ),
            // Left by the reviews, done since: an ACL file's lines, `AUTH` piped into a raw
            // connection or over escaped line breaks, `aws ssm put-parameter`, more stores
            // that read standard input, a keytar call's template literal.
            ("user alice on >S3cr3tPw99 ~* +@all", &["S3cr3tPw99"]),
            ("  user bob off >S3cr3tPw99 ~cache:* +get", &["S3cr3tPw99"]),
            (
                r#"{"acl": "user carol on >S3cr3tPw99 ~* &* +@all\nuser dave on nopass"}"#,
                &["S3cr3tPw99"],
            ),
            (
                r"printf 'AUTH S3cr3tPw99\r\nPING\r\n' | nc localhost 6379",
                &["S3cr3tPw99"],
            ),
            (
                r#"test: ["CMD-SHELL", "printf 'AUTH S3cr3tPw99\r\n' | ncat redis 6379"]"#,
                &["S3cr3tPw99"],
            ),
            (
                r"echo 'AUTH S3cr3tPw99\r\nPING' | redis-cli",
                &["S3cr3tPw99"],
            ),
            (
                "aws ssm put-parameter --name /prod/db --value S3cr3tPw99 --type SecureString",
                &["S3cr3tPw99"],
            ),
            (
                "aws ssm put-parameter --name /prod/db/password --value 'S3cr3tPw99'",
                &["S3cr3tPw99"],
            ),
            (
                "aws ssm put-parameter --name=\"DbPassword\" --value=\"S3cr3tPw99\"",
                &["S3cr3tPw99"],
            ),
            (
                "echo -n S3cr3tPw99 | secret-tool store --label='db' service db user app",
                &["S3cr3tPw99"],
            ),
            (
                "echo S3cr3tPw99 | pass insert -e web/github",
                &["S3cr3tPw99"],
            ),
            (
                "echo -n 'S3cr3tPw99' | vault kv put secret/db password=-",
                &["S3cr3tPw99"],
            ),
            (
                "keytar.setPassword('svc', 'acct', `S3cr3tPw99`)",
                &["S3cr3tPw99"],
            ),
            // A `.pgpass` file's entries: written into it, shown after its name.
            (
                "echo 'db.internal:5432:app:bob:S3cr3tPw99' >> ~/.pgpass",
                &["S3cr3tPw99"],
            ),
            (
                "printf '%s\\n' 'localhost:5432:*:app:S3cr3tPw99' >>~/.pgpass",
                &["S3cr3tPw99"],
            ),
            (
                "$ cat ~/.pgpass\n*:*:*:postgres:S3cr3tPw99\n$ ls\n",
                &["S3cr3tPw99"],
            ),
            (
                "cat > ~/.pgpass <<EOF\ndb:5432:app:bob:S3cr3tPw99\nEOF",
                &["S3cr3tPw99"],
            ),
            (
                "Create a ~/.pgpass file:\n\n```\ndb.example.com:5432:appdb:app:S3cr3tPw99\n```",
                &["S3cr3tPw99"],
            ),
            (
                "  pgpass: |\n    db:5432:app:bob:S3cr3tPw99\n  next: 1\n",
                &["S3cr3tPw99"],
            ),
            (
                r#"{"command": "echo 'db:5432:app:bob:S3cr3tPw99' >> ~/.pgpass"}"#,
                &["S3cr3tPw99"],
            ),
            // Found by an attack review: ACL lines anywhere (a YAML list, a log, an
            // option), rules in any order, more than 24 words, a quoted password; `AUTH`
            // into a raw connection by a path, a wrapper, openssl, `/dev/tcp`, a
            // here-string or a session's transcript, or unquoted after `echo`, or in a
            // group; more stores that read standard input.
            (
                "users:\n  - user alice on >S3cr3tPw99 ~* +@all\n",
                &["S3cr3tPw99"],
            ),
            (
                "redis-server --user alice on >S3cr3tPw99 ~* +@all",
                &["S3cr3tPw99"],
            ),
            ("user alice >S3cr3tPw99", &["S3cr3tPw99"]),
            (
                "user worker +get +set ~cache:* on >S3cr3tPw99",
                &["S3cr3tPw99"],
            ),
            ("user alice reset on >S3cr3tPw99 ~*", &["S3cr3tPw99"]),
            (
                "user alice (~temp:* +get) on >S3cr3tPw99 +@read",
                &["S3cr3tPw99"],
            ),
            (
                "user app on ~app:* ~cache:* &* -@all +get +set +del +mget +expire +ttl +exists \
                 +incr +decr +hget +hset +hdel +hgetall +lpush +rpush +lpop +rpop >S3cr3tPw99",
                &["S3cr3tPw99"],
            ),
            ("ACL SETUSER alice on >\"S3cr3tPw99\" ~*", &["S3cr3tPw99"]),
            (
                r"printf 'AUTH S3cr3tPw99\r\n' | timeout 2 /usr/bin/nc cache 6379",
                &["S3cr3tPw99"],
            ),
            (
                r"printf 'AUTH S3cr3tPw99\r\n' | openssl s_client -quiet -connect c:6380",
                &["S3cr3tPw99"],
            ),
            (
                r#"echo -e "AUTH S3cr3tPw99\r\nPING" > /dev/tcp/localhost/6379"#,
                &["S3cr3tPw99"],
            ),
            ("nc cache 6379 <<< 'AUTH S3cr3tPw99'", &["S3cr3tPw99"]),
            (
                "$ telnet redis 6379\nConnected to redis.\nAUTH S3cr3tPw99\n+OK",
                &["S3cr3tPw99"],
            ),
            ("echo AUTH S3cr3tPw99 | nc cache 6379", &["S3cr3tPw99"]),
            (
                "(echo 'AUTH S3cr3tPw99'; echo 'INFO replication') | redis-cli",
                &["S3cr3tPw99"],
            ),
            (
                "aws ssm put-parameter --name /p --value S3cr3tPw99 --type='SecureString'",
                &["S3cr3tPw99"],
            ),
            ("echo S3cr3tPw99 | gopass insert web/x", &["S3cr3tPw99"]),
            (
                "echo -n 'S3cr3tPw99' | vault write secret/db password=-",
                &["S3cr3tPw99"],
            ),
            // Found by a second review: `.pgpass` written by `tee`, Windows's
            // `pgpass.conf`, a YAML list's entry, more lines before the entries; `USER` in
            // capitals.
            (
                "echo 'db:5432:app:bob:S3cr3tPw99' | sudo tee -a ~/.pgpass",
                &["S3cr3tPw99"],
            ),
            (
                r"echo 'db:5432:app:bob:S3cr3tPw99' >> %APPDATA%\postgresql\pgpass.conf",
                &["S3cr3tPw99"],
            ),
            ("pgpass:\n  - db:5432:app:bob:S3cr3tPw99\n", &["S3cr3tPw99"]),
            (
                "$ cat ~/.pgpass\n# host:port:db:user:password\n\n\n\ndb:5432:app:bob:S3cr3tPw99",
                &["S3cr3tPw99"],
            ),
            ("USER alice on >S3cr3tPw99 ~*", &["S3cr3tPw99"]),
            // Redis's protocol (RESP) as a client writes it: escaped in a shell's string or
            // JSON, or with its line breaks; `AUTH user password`; at the text's end.
            (
                r"printf '*2\r\n$4\r\nAUTH\r\n$10\r\nS3cr3tPw99\r\n' | nc cache 6379",
                &["S3cr3tPw99"],
            ),
            (
                r#"{"sent": "*3\r\n$4\r\nAUTH\r\n$7\r\ndefault\r\n$10\r\nS3cr3tPw99\r\n"}"#,
                &["S3cr3tPw99"],
            ),
            (
                "*2\r\n$4\r\nauth\r\n$10\r\nS3cr3tPw99\r\n*1\r\n$4\r\nPING\r\n",
                &["S3cr3tPw99"],
            ),
            ("> *2\n$4\nAUTH\n$12\nS3cr3t Pw99!", &["S3cr3t Pw99!"]),
            // `AUTH` as an option: `HELLO`'s (a user's name always before the password)
            // and `MIGRATE`'s (`COPY` and `REPLACE` between), where Redis reads them.
            (
                "redis-cli -h cache HELLO 3 AUTH default S3cr3tPw99 SETNAME app",
                &["S3cr3tPw99"],
            ),
            ("cache:6379> hello 2 auth bob S3cr3tPw99", &["S3cr3tPw99"]),
            (
                "echo 'HELLO 3 AUTH default S3cr3tPw99' | redis-cli",
                &["S3cr3tPw99"],
            ),
            (
                r#"{"command": "redis-cli MIGRATE cache2 6379 key 0 5000 AUTH S3cr3tPw99"}"#,
                &["S3cr3tPw99"],
            ),
            (
                "cache:6379> MIGRATE h 6379 \"\" 0 5000 COPY REPLACE AUTH S3cr3tPw99 KEYS a b",
                &["S3cr3tPw99"],
            ),
            // Found by review 32: the client in compact JSON or a command substitution,
            // a prompt indented as a code block, HELLO quoted in JSON's escaped quotes.
            (
                r#"{"command":"redis-cli HELLO 3 AUTH default S3cr3tPw99"}"#,
                &["S3cr3tPw99"],
            ),
            (
                r#"{"cmd":"redis-cli -h cache AUTH S3cr3tPw99"}"#,
                &["S3cr3tPw99"],
            ),
            ("x=$(redis-cli AUTH S3cr3tPw99)", &["S3cr3tPw99"]),
            ("    cache:6379> AUTH S3cr3tPw99", &["S3cr3tPw99"]),
            (
                "redis-cli <<EOF\n  AUTH S3cr3tPw99\n  PING\nEOF",
                &["S3cr3tPw99"],
            ),
            (
                r#"{"command": "echo \"HELLO 3 AUTH default S3cr3tPw99\" | redis-cli"}"#,
                &["S3cr3tPw99"],
            ),
            // Found by review 33: the client's name in capitals.
            ("echo 'AUTH S3cr3tPw99' | Redis-Cli", &["S3cr3tPw99"]),
            (
                "echo 'AUTH S3cr3tPw99' | C:\\Redis\\REDIS-CLI.EXE",
                &["S3cr3tPw99"],
            ),
        ] {
            finds_and_redacts(&d, text, want);
        }
        for text in [
            // The words in prose, Redis's without a password, a prompt that is no
            // redis-cli's, a setter's service and user, a file's name.
            "The AUTH command takes a password; AUTH failed with WRONGPASS 1234abcd",
            "auth service failed with code 9f8e7d6c",
            "Set requirepass in redis.conf, then masterauth on the replicas.",
            "echo x:1> AUTH S3cr3tPw99",
            "localhost:6379> AUTH",
            "ACL SETUSER alice on nopass ~* +@all",
            "keyring.set_password(\"github\", \"bob1234x\", getpass())",
            "db.auth('svc_backup2', passwordPrompt()); db.changeUserPassword('svc_backup2')",
            "db.auth({user: 'admin', mechanism: 'MONGODB-X509'})",
            "router.use(auth('bearerStrategy2'))",
            "SET PASSWORD FOR 'bob'@'%' = '${NEW_PW}'; set password for the account = the new1",
            "SET PASSWORD FOR 'bob'@'%'; SET @note = 'Kx9mQ2vL7pWz';",
            "SET PASSWORD FOR 'bob'@'%' = PASSWORD(@pw)",
            "aws secretsmanager create-secret --name db --secret-string file://secret.json",
            "--secret-string-file creds.json",
            "az keyvault secret set --vault-name kv --name db --file pw.txt",
            "az keyvault secret show --name db --query value",
            "echo S3cr3tPw99x | gh secret set API_TOKEN --body \"$BODY\"",
            "gcloud secrets versions add db --data-file=pw.txt; echo S3cr3tPw99 > log",
            "echo done1234 | docker secret create db_pw ./pw.txt",
            "echo 8080 | vercel env add PORT production",
            "node:20> Auth Module3x; app:1> auth Error42x",
            "If you set requirepass option2 then restart",
            "# requirepass foobared",
            "aws secretsmanager put-secret-value --secret-id x --secret-string \"$SECRET_JSON\"",
            // `user` in prose or with no rule after it, a hashed password, a parameter that
            // is no secret, a value from a file or a variable, SMTP's mechanism.
            "the user alice logged in at 10:00 >5 times on the server",
            "user alice has >S3cr3tPw99 files",
            "user dave on #5e884898da28047151d0e56f8dc6292773603d0d6aabbdd62a11ef721d1542d8 ~*",
            "you can pass insert mode to vim; S3cr3tPw99x",
            "aws ssm put-parameter --name /app/port --value 8080x99Zq --type String",
            "aws ssm put-parameter --name /prod/db/password --value file://pw.txt",
            "aws ssm put-parameter --name /app/token --type SecureString --value '$TOKEN'",
            "keytar.setPassword('svc', 'acct', `${process.env.PW}`)",
            r"printf 'AUTH LOGIN\r\n' | nc smtp.example.com 25",
            // `.pgpass`'s format, the file named in prose, what is no entry or no secret.
            "The ~/.pgpass format is hostname:port:database:username:password",
            "Edit ~/.pgpass and set the right permissions.\nThen run psql S3cr3tPw99x.",
            "echo 'hello S3cr3tPw99' >> ~/.pgpass",
            "echo 'db:5432:app:bob:$PGPASSWORD' >> ~/.pgpass",
            "cat ~/.pgpass\ntime 10:30:45:12:S3cr3tPw99x in a log",
            // Found by an attack review: prose that reads like an ACL line's start (its
            // trigger was reported as the secret), a template literal that puts a variable
            // in, a setter's call cut off after its backtick (it panicked).
            "When the user clicks on the Save button, the form is submitted.",
            "Each user session on mobile expires after 30 minutes.",
            "- The user turns off notifications in settings",
            "`user admin on` enables the admin account",
            "user alice >5 times",
            "keytar.setPassword('svc', 'acct', `prefix-${pw}`)",
            "keytar.setPassword('svc', 'acct', `",
            "setPassword(,,`",
            "echo hello S3cr3tPw99x | tee out.txt",
            // RESP: a length that is not the value's, a placeholder, no array's header, an
            // array of another size, a line not ended.
            r"printf '*2\r\n$4\r\nAUTH\r\n$9\r\nS3cr3tPw99\r\n' | nc cache 6379",
            r"printf '*2\r\n$4\r\nAUTH\r\n$8\r\npassword\r\n' | nc cache 6379",
            "$4\r\nAUTH\r\n$10\r\nS3cr3tPw99\r\n",
            "*4\r\n$4\r\nAUTH\r\n$3\r\nbob\r\n$10\r\nS3cr3tPw99\r\n",
            "*2\r\n$4\r\nAUTH\r\n$10\r\nS3cr3tPw99x",
            // RESP: a password with a line break, one longer than a quoted value may be.
            "*2\r\n$4\r\nAUTH\r\n$12\r\nS3cr3t\r\nPw99\r\n",
            // `HELLO` and `MIGRATE` in prose, without a version, with a word before them,
            // with too few or too many arguments, without a password.
            "say hello 3 auth bob S3cr3tPw99 to the team",
            "cache:6379> HELLO three AUTH default S3cr3tPw99",
            "cache:6379> SAY HELLO 3 AUTH default S3cr3tPw99",
            "cache:6379> HELLO 3 AUTH default",
            "we migrate h 6379 k 0 5000 AUTH S3cr3tPw99",
            "redis-cli MIGRATE h 6379 AUTH S3cr3tPw99",
            "redis-cli MIGRATE h 6379 k 0 5000 COPY REPLACE x AUTH S3cr3tPw99",
            // Found by review 32: prose that opens with "Migrate", a client named near.
            // MIGRATE's port, database and timeout are numbers; its options before `AUTH`
            // are `COPY` and `REPLACE`.
            "Migrate the remaining five services onto the shared auth gateway2 first\n\
             Then run redis-cli ping.",
            "Migrate from Redis 5 to 7 with AUTH upgrade7x in place (checked with redis-cli)",
            "redis-cli MIGRATE h port k 0 5000 AUTH S3cr3tPw99",
            "redis-cli MIGRATE h 6379 k db 5000 AUTH S3cr3tPw99",
            "redis-cli MIGRATE h 6379 k 0 soon AUTH S3cr3tPw99",
            "redis-cli MIGRATE h 6379 k 0 5000 NOW AUTH S3cr3tPw99",
            "redis-cli MIGRATE h 6379 k 0 5000 NOW COPY AUTH S3cr3tPw99",
            // A client's name glued to a word, a prompt's line that is no prompt's, a
            // tool's name inside a word.
            "the xredis-cli AUTH S3cr3tPw99",
            "  echo x:1> AUTH S3cr3tPw99",
            "echo 'AUTH S3cr3tPw99' | sync",
            "echo 'AUTH S3cr3tPw99' | my-nc cache",
            // Found by review 33: HELLO with a version that is no protocol's, a client's
            // name that goes on into a file's, a tool's name after a letter beyond ASCII.
            "HELLO 2024 AUTH team welcome1234\nredis-cli ping",
            "echo 'hello 1 auth bob alice123' # nc",
            "cp redis-client.crt /etc/ssl\nAUTH S3cr3tPw99",
            "café énc\nAUTH S3cr3tPw99",
        ] {
            assert_eq!(found(text), [], "{text}");
        }
        // RESP: a password longer than a quoted value may be (4 KiB) is none; one as long
        // is found. (Both bounds keep a length that reaches over later arrays from being
        // read for each of them.)
        let mut next = numbers(0x51ed_270b_2f1d_a3c7);
        let alphabet = b"abcdefghijkmnpqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789";
        let key: String = (0..4097)
            .map(|_| char::from(alphabet[next(alphabet.len())]))
            .collect();
        let resp = |v: &str| format!("*2\r\n$4\r\nAUTH\r\n${}\r\n{v}\r\n", v.len());
        assert_eq!(found(&resp(&key)), [], "4097 bytes");
        // (Nor one with a line break, though it would pass as a quoted passphrase.)
        assert_eq!(found(&resp("Xk9v QmZp\r\nAb3d Ef9h")), []);
        finds_and_redacts(&d, &resp(&key[..4096]), &[&key[..4096]]);

        // `gh secret set`'s `--body` after long options (a review found 256 bytes too few).
        let long = format!(
            "gh secret set API_TOKEN --repo {}/{} --env production --visibility all --body S3cr3tPw99",
            "o".repeat(100),
            "r".repeat(100)
        );
        finds_and_redacts(&d, &long, &["S3cr3tPw99"]);
    }

    /// Calls that take a password as a later argument: the mail and FTP clients'
    /// `.login(user, …)` (smtplib's, imaplib's, ftplib's), MongoDB's older
    /// `.authenticate(user, …)`, python-ldap's `.simple_bind_s(dn, …)`, Neo4j's
    /// `dbms.security.createUser(user, …)`, .NET's `NetworkCredential`, Java's
    /// `PasswordAuthentication` and `UsernamePasswordCredentials`; requests' and httpx's
    /// `HTTPBasicAuth(user, …)`, `HTTPDigestAuth`, `BasicAuth` and their `auth=(user, …)`
    /// tuple — with a string written out, not a variable.
    #[test]
    fn credential_calls_arguments_are_secrets() {
        let d = PiiDetector::new();
        for (text, want) in [
            (
                "server = smtplib.SMTP_SSL('smtp.gmail.com', 465)\nserver.login('me', 'abcd efgh ijkl mnop')",
                &["abcd efgh ijkl mnop"][..],
            ),
            ("mail.login(\"bob\", \"S3cr3tPw99\")", &["S3cr3tPw99"]),
            // (MongoDB's Java driver's, its third argument a `char[]`.)
            (
                "MongoCredential.createCredential(\"admin\", \"admin\", \"Xk9mQ2vL7pR\".toCharArray());",
                &["Xk9mQ2vL7pR"],
            ),
            (
                "MongoCredential.createScramSha256Credential(user, \"admin\", \"Sunflower2024!\".toCharArray())",
                &["Sunflower2024!"],
            ),
            // (Jedis's pool's fifth, or its sixth after an account's.)
            (
                "new JedisPool(config, \"localhost\", 6379, 2000, \"Xk9mQ2vL7pR4\");",
                &["Xk9mQ2vL7pR4"],
            ),
            (
                "new JedisPool(cfg, host, port, timeout, \"app\", \"Xk9mQ2vL7pR4\");",
                &["Xk9mQ2vL7pR4"],
            ),
            (
                "new JedisPool(cfg, host, port, timeout, \"Xk9mQ2vL7pR4\", 2, \"orders-client\");",
                &["Xk9mQ2vL7pR4"],
            ),
            (
                "new JedisPool(cfg, host, 6379, 2000, \"Xk9mQ2vL7pR4\", database);",
                &["Xk9mQ2vL7pR4"],
            ),
            (
                "new JedisSentinelPool(\"mymaster\", sentinels, cfg, 2000, \"Xk9mQ2vL7pR4\");",
                &["Xk9mQ2vL7pR4"],
            ),
            (
                "new JedisCluster(nodes, 2000, 2000, 5, \"Xk9mQ2vL7pR4\", cfg);",
                &["Xk9mQ2vL7pR4"],
            ),
            (
                "new JedisPooled(cfg, \"localhost\", 6379, 2000, \"Xk9mQ2vL7pR4\");",
                &["Xk9mQ2vL7pR4"],
            ),
            // (Four arguments, the password last: an account's before it.)
            (
                "new JedisPool(\"redis.internal\", 6379, \"default\", \"Xk9mQ2vL7pR4\");",
                &["Xk9mQ2vL7pR4"],
            ),
            (
                "new JedisPooled(host, port, null, \"Xk9mQ2vL7pR4\")",
                &["Xk9mQ2vL7pR4"],
            ),
            (
                "new JedisSentinelPool(\"mymaster\", sentinels, cfg, \"Xk9mQ2vL7pR4\");",
                &["Xk9mQ2vL7pR4"],
            ),
            // (Review 62: a comment, a flag or a comma after it.)
            (
                "new JedisPool(host, port, user, \"Xk9mQ2vL7pR4\" /* pw */, true);",
                &["Xk9mQ2vL7pR4"],
            ),
            (
                "new JedisPool(host, port, user, \"Xk9mQ2vL7pR4\",);",
                &["Xk9mQ2vL7pR4"],
            ),
            (
                "client.login(\n    'bob',\n    'S3cr3tPw99'\n)",
                &["S3cr3tPw99"],
            ),
            ("db.authenticate('bob', 'S3cr3tPw99')", &["S3cr3tPw99"]),
            (
                "db.getSiblingDB('admin').authenticate('root', 'S3cr3tPw99')",
                &["S3cr3tPw99"],
            ),
            (
                "conn.simple_bind_s('cn=admin,dc=example,dc=org', 'S3cr3tPw99')",
                &["S3cr3tPw99"],
            ),
            (
                "l.simple_bind(\"cn=admin\", \"S3cr3tPw99\")",
                &["S3cr3tPw99"],
            ),
            (
                "CALL dbms.security.createUser('bob', 'S3cr3tPw99', false)",
                &["S3cr3tPw99"],
            ),
            (
                "var cred = new NetworkCredential(\"bob\", \"S3cr3tPw99\", \"CORP\");",
                &["S3cr3tPw99"],
            ),
            (
                "return new PasswordAuthentication(\"bob\", \"S3cr3tPw99\".toCharArray());",
                &["S3cr3tPw99"],
            ),
            (
                "new UsernamePasswordCredentials(\"bob\", \"S3cr3tPw99\")",
                &["S3cr3tPw99"],
            ),
            (
                "requests.get(u, auth=HTTPBasicAuth('bob', 'S3cr3tPw99'))",
                &["S3cr3tPw99"],
            ),
            ("HTTPDigestAuth(\"bob\", \"S3cr3tPw99\")", &["S3cr3tPw99"]),
            ("aiohttp.BasicAuth('bob', 'S3cr3tPw99')", &["S3cr3tPw99"]),
            (
                "requests.get(url, auth=('bob', 'S3cr3tPw99'))",
                &["S3cr3tPw99"],
            ),
            ("auth = ('bob', 'S3cr3tPw99')", &["S3cr3tPw99"]),
            ("\"auth\": (\"bob\", \"S3cr3tPw99\")", &["S3cr3tPw99"]),
            (
                r#"{"cmd": "server.login(\"bob\", \"S3cr3tPw99\")"}"#,
                &["S3cr3tPw99"],
            ),
            // (Found by an attack review: a session's `auth` tuple, blanks before the `(`,
            // C#'s verbatim string, .NET's capitalised methods, a list, PHP's array; the
            // third argument after a host's or a database's name.)
            ("s.auth = ('me', 'S3cr3tPw99')", &["S3cr3tPw99"]),
            (
                r#"{"code": "session.auth = (\"me\", \"S3cr3tPw99\")"}"#,
                &["S3cr3tPw99"],
            ),
            ("smtp.login (user, 'S3cr3tPw99')", &["S3cr3tPw99"]),
            (
                "new NetworkCredential(\"me\", @\"S3cr3tPw99\")",
                &["S3cr3tPw99"],
            ),
            (
                "await client.AuthenticateAsync(\"me\", \"S3cr3tPw99\");",
                &["S3cr3tPw99"],
            ),
            ("ftp.Login(\"me\",\"S3cr3tPw99\")", &["S3cr3tPw99"]),
            ("auth=['me','S3cr3tPw99']", &["S3cr3tPw99"]),
            ("['auth' => ['me', 'S3cr3tPw99']]", &["S3cr3tPw99"]),
            ("s.login('host', 'me', 'S3cr3tPw99')", &["S3cr3tPw99"]),
            ("s.login('db1', 'o\\'brien', 'S3cr3tPw99')", &["S3cr3tPw99"]),
            // (Review 39: PHP's, blanks before the `(`.)
            ("$sftp->login('user', 'S3cr3tPw99');", &["S3cr3tPw99"]),
            // (The third argument after a host's and an account's.)
            (
                "ftp = FTP('ftp.example.com', 'user', 'S3cr3tPw99')",
                &["S3cr3tPw99"],
            ),
            (
                "ftplib.FTP_TLS(host='h', user='u', passwd='S3cr3tPw99')",
                &["S3cr3tPw99"],
            ),
            (
                "DriverManager.getConnection(\"jdbc:mysql://db/app\", \"root\", \"S3cr3tPw99\");",
                &["S3cr3tPw99"],
            ),
            (
                "$db = new PDO('mysql:host=localhost;dbname=app', 'root', 'S3cr3tPw99');",
                &["S3cr3tPw99"],
            ),
            (
                "$c = mysqli_connect(\"localhost\", \"root\", \"S3cr3tPw99\", \"app\");",
                &["S3cr3tPw99"],
            ),
            (
                "$m = new mysqli('localhost', 'root', 'S3cr3tPw99');",
                &["S3cr3tPw99"],
            ),
            (
                "db = MySQLdb.connect(\"localhost\",\"testuser\",\"S3cr3tPw99\",\"TESTDB\")",
                &["S3cr3tPw99"],
            ),
            (
                "const db = new Sequelize('shop', 'root', 'S3cr3tPw99', { dialect: 'mysql' });",
                &["S3cr3tPw99"],
            ),
            (
                "auth := smtp.PlainAuth(\"\", \"me@example.org\", \"S3cr3tPw99\", host)",
                &["me@example.org", "S3cr3tPw99"],
            ),
            (
                "smtp.SendMail(a, smtp.PlainAuth(\"\", from, `S3cr3tPw99`, h), from, to, m)",
                &["S3cr3tPw99"],
            ),
            // (Spring Security's token, RabbitMQ's and Cassandra's drivers' credentials.)
            (
                "auth = new UsernamePasswordAuthenticationToken(\"bob\", \"S3cr3tPw99\");",
                &["S3cr3tPw99"],
            ),
            (
                "creds = pika.PlainCredentials('svc', 'S3cr3tPw99')",
                &["S3cr3tPw99"],
            ),
            (
                "ap = PlainTextAuthProvider('cassandra', 'S3cr3tPw99')",
                &["S3cr3tPw99"],
            ),
            // (Redis's clients' one-argument `auth`; the Neo4j driver's and reqwest's
            // `basic_auth`.)
            ("jedis.auth(\"S3cr3tPw99\");", &["S3cr3tPw99"]),
            ("$redis->auth('S3cr3tPw99');", &["S3cr3tPw99"]),
            ("getRedis().auth('S3cr3tPw99');", &["S3cr3tPw99"]),
            (
                "GraphDatabase.driver(uri, auth=basic_auth('neo4j', 'S3cr3tPw99'))",
                &["S3cr3tPw99"],
            ),
            (
                "client.get(url).basic_auth(\"bob\", Some(\"S3cr3tPw99\")).send()",
                &["S3cr3tPw99"],
            ),
            // (Review 42: a callback after the password; the account as an index's key, a
            // `$` variable, `getuser()`; reqwest's `Some(…)` spaced, an owned string.)
            (
                "client.auth('S3cr3tPw99', (err) => done(err))",
                &["S3cr3tPw99"],
            ),
            (
                "s.login(host, config[\"user\"], \"S3cr3tPw99\")",
                &["S3cr3tPw99"],
            ),
            ("s.login(host, $user, \"S3cr3tPw99\")", &["S3cr3tPw99"]),
            (
                "s.login(host, getpass.getuser(), \"S3cr3tPw99\")",
                &["S3cr3tPw99"],
            ),
            (
                ".basic_auth(u, Some( String::from(\"S3cr3tPw99\") ))",
                &["S3cr3tPw99"],
            ),
            // (PowerShell's constructor, in any case.)
            (
                "$c = [System.Net.NetworkCredential]::NEW('bob', 'S3cr3tPw99')",
                &["S3cr3tPw99"],
            ),
            (
                "$c = [System.Net.NetworkCredential]::new('bob', 'S3cr3tPw99')",
                &["S3cr3tPw99"],
            ),
            (
                "$c = [Net.NetworkCredential]::New('bob', 'S3cr3tPw99')",
                &["S3cr3tPw99"],
            ),
            // (Blanks before the longer names' `(`.)
            (
                "const s = new Sequelize ('shop', 'root', 'S3cr3tPw99', {});",
                &["S3cr3tPw99"],
            ),
            ("server.login  (\"bob\", \"S3cr3tPw99\")", &["S3cr3tPw99"]),
            (
                "common.authenticate('db', 'admin2024x', 'S3cr3tPw99', {})",
                &["S3cr3tPw99"],
            ),
            // (After a variable that names the account.)
            ("s.login(host, user, \"S3cr3tPw99\")", &["S3cr3tPw99"]),
            (
                "ok = p.login(self.hostname, self.ssh_username, 'S3cr3tPw99')",
                &["S3cr3tPw99"],
            ),
        ] {
            finds_and_redacts(&d, text, want);
        }
        for text in [
            // Variables, no second argument, a first argument alone, other calls named
            // alike, an object, placeholders, a tuple of variables.
            "console.log('hello1', 'world2x')",
            "server.login(user, password)",
            "server.login(os.environ['U'], os.environ['P'])",
            "auth.login(request, user); client.login()",
            "db.authenticate(user, pw); db.createUser({user: 'bob', roles: ['read']})",
            "new NetworkCredential(user, pass); HTTPBasicAuth(user, password)",
            "HTTPBasicAuth('bob', os.environ['PW'])",
            "auth=('bob', password); auth=(user, pw); auth = ()",
            "smtp.login('bob', '<your-app-password>'); smtp.login('bob', 'YOUR_PASSWORD')",
            "auth: (see below)",
            "requests.get(u, auth=('bob', ''))",
            "Set the auth (\"basic\", \"digest2\") per route",
            // (Words as a call's arguments: a label's, a scope's; an app password's shape
            // only as four groups of four small letters.)
            "auth.login('Sign in', 'Welcome back!'); x.login('Log in', 'Forgot password?')",
            "msalInstance.login('popup', 'openid profile')",
            "auth: ('Basic realm', 'Restricted Area')",
            "common.authenticate(DB, USER, PASS, {})",
            "new Sequelize('sqlite::memory:'); new Sequelize(process.env.DB, u, p, {})",
            "smtp.PlainAuth(\"\", from, password, host); MySQLdb.connect(h, u, pw, db)",
            "[System.Net.NetworkCredential]::new($user, $pass); [Foo]::new('a', 'b2c3d4e5f6')",
            // (A string before an argument that is a variable is no password: the
            // service's or the account's name.)
            "keyring.set_password('svc2024x', 'bob2024x', pw); db.auth('bob2024x', pw)",
            // (Review 42: other objects' `auth` names a mechanism, a guard, a user.)
            "imap.auth('XOAUTH2'); smtp.auth('CRAM-MD5'); app.auth('google-oauth2')",
            "router.auth('admin2'); $this->auth('sanctum2'); db.auth('reporting01')",
            "s.login(host, config[\"host\"], \"Dev2024x\")",
            "new UsernamePasswordAuthenticationToken(user, null, authorities)",
            "x.basic_auth(\"bob2024x\", None::<&str>); basic_auth(user, password)",
            "server.login('me', 'abcd efgh ijkl mnop qrst')",
            "MongoCredential.createCredential(user, db, password.toCharArray())",
            "MongoCredential.createCredential(\"admin\", \"db\", System.getenv(\"PW\").toCharArray())",
            "new JedisPool(cfg, host, port, timeout, password); new JedisPool(\"localhost\", 6379);",
            "MyJedisPool(config, \"localhost\", 6379, 2000, \"Xk9mQ2vL7pR4\")",
            // (Review 60: the account's, before a password in a variable.)
            "new JedisPool(cfg, host, 6379, 2000, \"app_user_7f3a9c2b\", redisPw, 0, \"orders\");",
        ] {
            assert_eq!(d.detect(text), [], "{text}");
        }
    }

    /// A password under its name in other languages, as labels write it — and not under
    /// prose's, a mask's, a prompt's.
    #[test]
    fn localized_password_labels_are_secrets() {
        let d = PiiDetector::new();
        for (text, want) in [
            (
                "Benutzername: admin\nPasswort: Sommer2024!",
                &["Sommer2024!"][..],
            ),
            ("Kennwort = \"S3cr3tPw99\"", &["S3cr3tPw99"]),
            (
                "Identifiant : admin\nMot de passe : S3cr3tPw99",
                &["S3cr3tPw99"],
            ),
            ("Usuario: admin, contraseña: S3cr3tPw99", &["S3cr3tPw99"]),
            ("senha: S3cr3tPw99", &["S3cr3tPw99"]),
            ("Wachtwoord: S3cr3tPw99", &["S3cr3tPw99"]),
            (
                "Hasło: S3cr3tPw99; Lösenord: S3cr3tPw98",
                &["S3cr3tPw99", "S3cr3tPw98"],
            ),
            ("Şifre: S3cr3tPw99", &["S3cr3tPw99"]),
            ("Логин: admin\nПароль: S3cr3tPw99", &["S3cr3tPw99"]),
            // (A full-width colon, folded.)
            ("用户名：admin\n密码：S3cr3tPw99", &["S3cr3tPw99"]),
            ("パスワード: S3cr3tPw99", &["S3cr3tPw99"]),
            ("비밀번호: S3cr3tPw99", &["S3cr3tPw99"]),
            ("Mật khẩu: S3cr3tPw99", &["S3cr3tPw99"]),
            ("kata sandi: S3cr3tPw99", &["S3cr3tPw99"]),
            ("पासवर्ड: S3cr3tPw99", &["S3cr3tPw99"]),
            ("{\"Passwort\": \"S3cr3tPw99\"}", &["S3cr3tPw99"]),
            // (Review 43: a compound, a camelCase word, unspaced Chinese, title case, an
            // identifier without its tilde, a table's header.)
            ("Datenbankpasswort: S3cr3tPw99", &["S3cr3tPw99"]),
            (
                "dbSenha = \"S3cr3tPw99\"; db_senha: S3cr3tPw98",
                &["S3cr3tPw99", "S3cr3tPw98"],
            ),
            ("wifi密码：S3cr3tPw99", &["S3cr3tPw99"]),
            // (Review 44: the sentence glued after a value is none of it.)
            ("请把password=S3cr3tPw99改掉", &["S3cr3tPw99"]),
            ("パスワード：S3cr3tPw99を変更してください", &["S3cr3tPw99"]),
            ("auth_token: S3cr3tPw99입니다", &["S3cr3tPw99"]),
            ("api_key: S3cr3tPw99、请妥善保管", &["S3cr3tPw99"]),
            // (Review 45: a password holding such a character is one, whole.)
            ("password=S3cr3t中Pw99", &["S3cr3t中Pw99"]),
            ("\"setx API_TOKEN Pw9中S3cr3tPw99\"", &["Pw9中S3cr3tPw99"]),
            ("{\"secret\": \"Abc1中文\"}", &["Abc1中文"]),
            ("Kata Sandi: S3cr3tPw99", &["S3cr3tPw99"]),
            ("contrasena = \"S3cr3tPw99\"", &["S3cr3tPw99"]),
            (
                "| Benutzer | Passwort |\n|---|---|\n| admin | Sommer2024! |",
                &["Sommer2024!"],
            ),
            // (Capitals; spellings without diacritics.)
            ("PASSWORT: S3cr3tPw99", &["S3cr3tPw99"]),
            ("DB_PASSWORT=S3cr3tPw99", &["S3cr3tPw99"]),
            (
                "SENHA: S3cr3tPw99; ПАРОЛЬ: S3cr3tPw98",
                &["S3cr3tPw99", "S3cr3tPw98"],
            ),
            ("haslo = \"S3cr3tPw99\"", &["S3cr3tPw99"]),
            ("sifre: S3cr3tPw99", &["S3cr3tPw99"]),
            ("Tai khoan: admin\nMat khau: S3cr3tPw99", &["S3cr3tPw99"]),
            ("losenord=S3cr3tPw99", &["S3cr3tPw99"]),
            // (Review 47: a value that starts with a name is the value, whole.)
            ("password=Secret,Xk9mP2vL7q", &["Secret,Xk9mP2vL7q"]),
            (
                "{\"password\":\"Secret;Xk9mP2vL7qZ8\"}",
                &["Secret;Xk9mP2vL7qZ8"],
            ),
            ("password=Token:abc123Xk9", &["Token:abc123Xk9"]),
            ("password=mypass=Xk9mP2vL7q", &["mypass=Xk9mP2vL7q"]),
            ("SECRET_KEY=4f9aK2x8Qm7Pwd=", &["4f9aK2x8Qm7Pwd="]),
            // (Review 48: a pair whose words end with names; a passphrase that does.)
            (
                "password=rootpass:Hunter2Password",
                &["rootpass:Hunter2Password"],
            ),
            ("password=MyLittleSecret=", &["MyLittleSecret="]),
            ("password=Token:Hunter2Secret", &["Token:Hunter2Secret"]),
            // (Words past ASCII between the name and its colon.)
            ("Passwort für den Server: S3cr3tPw99", &["S3cr3tPw99"]),
            // (Review 46: Turkish's dotted capital; identifiers' joined words.)
            ("ŞİFRE: S3cr3tPw99", &["S3cr3tPw99"]),
            (
                "DB_MOT_DE_PASSE=S3cr3tPw99\nmotDePasse: \"S3cr3tPw98\"",
                &["S3cr3tPw99", "S3cr3tPw98"],
            ),
            (
                "mat_khau=S3cr3tPw99\nMAT KHAU: S3cr3tPw98",
                &["S3cr3tPw99", "S3cr3tPw98"],
            ),
            // (A value that starts with a name, not where a value would end after it.)
            (
                "password=Password!1\nsenha=Senha@2024",
                &["Password!1", "Senha@2024"],
            ),
        ] {
            finds_and_redacts(&d, text, want);
        }
        for text in [
            "Das Passwort: bitte ändern Sie es sofort.",
            "Vergessen Sie Ihr Passwort nicht. Passwort vergessen?",
            "Mot de passe : obligatoire",
            "contraseña: ********; contraseña: <tu contraseña>",
            "密码：请输入密码",
            "パスワード：入力してください",
            "Passwort: Ihr Passwort; senha: sua senha aqui",
            // (Review 43: a rule in an unspaced script's words; a word ending in a name.)
            "密码：至少8位; 密码：6位数字; パスワード：8文字以上; 비밀번호: 8자 이상",
            "पासवर्ड: 8अक्षर; password：至少8位",
            "resenha: Nota10; desenha: Figura3",
            // (Review 45: quantities and ranges, quoted rules.)
            "密码：6~20位字符; パスワード：8～32文字; 비밀번호: 8~16; secret=2024年",
            "password: \"8文字以上\"; \"api_key\": \"32位字符串\"; password=2024年1月1日更新",
            "SENHA: obrigatória; PASSWORT: ********; sifre: ${SIFRE}; Haslo: <haslo>",
            "the format mat: khau2024x; PASSWORTLÄNGE: 12; close the doors",
            // (Review 46: names in a row, each the next one's field.)
            "SENHA=HASLO=SENHA=HASLO=; password=token=; SENHA:SIFRE:HASLO:",
            "HASLO SENHA HASLO SENHA; password: token",
            "Passwort für root: bitte ändern",
        ] {
            assert_eq!(d.detect(text), [], "{text}");
        }
    }

    /// A password prose gives in other languages, after their word for "is" (German's,
    /// Spanish's, French's, Portuguese's, Italian's, the Nordic languages', Polish's,
    /// Indonesian's, Vietnamese's) or the particle Chinese, Japanese and Korean write glued
    /// to the name; a colon set apart as French writes it — and none where the words say
    /// what the password must be or that it is wrong.
    /// A value a person made (`hunter2`, `Sunflower2024!`) after a password's own word
    /// and a verb, a colon or a dash, in English or another language — quoted, or bare
    /// where it ends its sentence — as chat gives one's own password; none that names a
    /// technique, a model or a count, nor one a word goes on after, nor under a token's or
    /// a field's name (each of these was left in clear on every release: only a value a
    /// machine made was read after prose's verb).
    #[test]
    fn values_people_make_after_a_password_word_are_secrets() {
        let d = PiiDetector::new();
        for (text, want) in [
            ("my password is hunter2", &["hunter2"][..]),
            ("The password is: Sunflower2024!", &["Sunflower2024!"]),
            ("my password is \"hunter2\" ok", &["hunter2"]),
            ("the password is Summer2024. Thanks", &["Summer2024"]),
            ("Password for the NAS: Sunflower2024", &["Sunflower2024"]),
            // (A word of hyphenated parts between: `Wi-Fi`, `e-mail`, `sign-in`.)
            ("Password for Wi-Fi: Bluebird77", &["Bluebird77"]),
            ("the e-mail password is Xk9mQ2vL7pR", &["Xk9mQ2vL7pR"]),
            ("Password for sign-in: hunter22!", &["hunter22!"]),
            (
                "The default password is admin123, change it.",
                &["admin123"],
            ),
            (
                "Your new password is Welcome1! Please change it.",
                &["Welcome1!"],
            ),
            (
                "Your new password is Welcome12 — change it.",
                &["Welcome12"],
            ),
            (
                "set the password to Spring2025\nthen log in",
                &["Spring2025"],
            ),
            ("my wifi password is 12345678", &["12345678"]),
            (
                "the password was changed to Autumn2023 (case-sensitive)",
                &["Autumn2023"],
            ),
            ("pwd is qwerty123", &["qwerty123"]),
            ("the passphrase is P@ss-w0rd", &["P@ss-w0rd"]),
            ("Das Passwort ist ABC123def.", &["ABC123def"]),
            ("Mein Passwort ist Sommer2024!", &["Sommer2024!"]),
            ("mi contraseña es perro123", &["perro123"]),
            ("le mot de passe est soleil2024", &["soleil2024"]),
            ("密码是abc12345，谢谢", &["abc12345"]),
            ("我的密码是123456", &["123456"]),
            ("Your new password is:\nhunter22", &["hunter22"]),
            ("Password:\nWelcome2024", &["Welcome2024"]),
            ("password:\nhunter2", &["hunter2"]),
            ("Password\thunter22", &["hunter22"]),
            ("**Password**: `hunter2`", &["hunter2"]),
            // (A verb that ends its line: the value alone on the next, as a machine or a
            // person made it.)
            ("The wifi password is\nSunflower2024", &["Sunflower2024"]),
            ("The wifi password is\nXk9mQ2vL7pR\n", &["Xk9mQ2vL7pR"]),
            ("The token is\r\nXk9mQ2vL7pR", &["Xk9mQ2vL7pR"]),
            ("Das Passwort ist\nSommer2024!", &["Sommer2024!"]),
            // (Review 52: a word that leaves the value whole after it, an emoticon, an
            // emoji, a sentence's ending glued on; a phrase of a preposition between.)
            ("my password is hunter2 lol", &["hunter2"]),
            (
                "the password is hunter2 and the username is admin",
                &["hunter2"],
            ),
            ("password is Summer2024 btw", &["Summer2024"]),
            ("password is Summer2024 :)", &["Summer2024"]),
            ("password is hunter2 👍", &["hunter2"]),
            ("mon mot de passe est soleil2024 merci", &["soleil2024"]),
            ("パスワードはabc12345です", &["abc12345"]),
            ("비밀번호는 abc12345입니다", &["abc12345"]),
            ("密码改成abc12345了", &["abc12345"]),
            ("密码是abc12345 谢谢", &["abc12345"]),
            ("my password is Spring2Summer", &["Spring2Summer"]),
            ("the password for the wifi is Summer2024", &["Summer2024"]),
            ("la contraseña del wifi es perro123", &["perro123"]),
            (
                "Mein Passwort für das WLAN ist Sommer2024!",
                &["Sommer2024!"],
            ),
            // (Review 53: more words that leave it whole; `to` before an article, a
            // preposition; `to` after a word that sets it; the next line's punctuation and
            // ending left out, as on the same line.)
            ("The password is Summer2024 for the VPN", &["Summer2024"]),
            ("the password is hunter22 again", &["hunter22"]),
            ("The password to the router is hunter22", &["hunter22"]),
            (
                "The password to the router is Xk9mQ2vL7pR",
                &["Xk9mQ2vL7pR"],
            ),
            (
                "I changed the password to Summer2024 yesterday",
                &["Summer2024"],
            ),
            ("change your wifi password to Autumn2023", &["Autumn2023"]),
            ("# Password is\nhunter22.", &["hunter22"]),
            ("Your new password is:\nXk9mQ2vL7pR.", &["Xk9mQ2vL7pR"]),
            ("- senha is\nKesä2024です", &["Kesä2024"]),
            // (Review 54: a quoted value on the next line before its sentence's `.`; a
            // `)` its value opened kept.)
            ("Password:\n\"Xk9mQ2vL7pR4\".", &["Xk9mQ2vL7pR4"]),
            ("The password is:\n`Xk9mQ2vL7pR4`.", &["Xk9mQ2vL7pR4"]),
            ("the password is Xk9m(Q2)vL7pR.", &["Xk9m(Q2)vL7pR"]),
            ("(the password is Xk9mQ2vL7pR)", &["Xk9mQ2vL7pR"]),
            // (Bare after the name, a verb that uses it before: an article between.)
            ("use password hunter22 to log in", &["hunter22"]),
            ("log in with password hunter22", &["hunter22"]),
            ("try the password Summer2024! instead", &["Summer2024!"]),
            ("I entered my password Admin@123 twice", &["Admin@123"]),
            ("Enter password 123456 at the prompt", &["123456"]),
            // (Review 67: the account given first and `and`.)
            (
                "log in with username admin and password hunter22",
                &["hunter22"],
            ),
            // (The name shouted, its verb in capitals too.)
            ("MY PASSWORD IS hunter22", &["hunter22"]),
            ("PASSORDET ER Sommer2024", &["Sommer2024"]),
            ("LÖSENORDET ÄR Sommar2024!", &["Sommar2024!"]),
            // (What the password opens between the verb and it; the verb shouted with a
            // name shouted.)
            (
                "use the wifi password Sunflower88 to connect",
                &["Sunflower88"],
            ),
            ("use the Wi-Fi password Sunflower88", &["Sunflower88"]),
            (
                "enter your admin password Hunter2024 when asked",
                &["Hunter2024"],
            ),
            (
                "log in with the root password Summer2024!",
                &["Summer2024!"],
            ),
            ("USE PASSWORD Hunter22 FOR THE ROUTER", &["Hunter22"]),
            // (`pw`, a password's word shortened.)
            ("use pw hunter22 for the admin panel", &["hunter22"]),
            ("login with pw Maple2023", &["Maple2023"]),
            ("ENTER THE WIFI PASSWORD Sunflower88", &["Sunflower88"]),
            // (Review 72: two such words; a password's kind.)
            ("use the office wifi password Hunter2024", &["Hunter2024"]),
            ("use the default password Hunter2024 first", &["Hunter2024"]),
            // (A key in base32 after a secret's name, an authenticator's.)
            ("the TOTP secret is JBSWY3DPEHPK3PXP", &["JBSWY3DPEHPK3PXP"]),
            ("the 2FA secret is jbswy3dpehpk3pxp", &["jbswy3dpehpk3pxp"]),
            // (Review 72: a key that starts with a digit; one digit in it.)
            ("the TOTP secret is 5JVUJ4JQINW5O2N5", &["5JVUJ4JQINW5O2N5"]),
            ("the TOTP secret is KUZCHJRYIFDA3IPG", &["KUZCHJRYIFDA3IPG"]),
        ] {
            finds_and_redacts(&d, text, want);
        }
        for text in [
            // (A technique's name, a model's, a count, a date.)
            "The password is SHA256-hashed before storage. the password is Base64-encoded",
            "The password is AES256-encrypted. the wifi password is WPA2-PSK",
            "the password is WPA2. The password is bcrypt12. the password is argon2id",
            "The password is 2FA-protected. the password is HS256. the password is x509",
            "the password is SHA-256. the password is RSA-2048. the password is md5.",
            "the password is PBKDF2-SHA256. the password is Llama3Instruct.",
            "the password was changed 2024-01-05. the password was set 2024-01-05",
            "the password is 8+ chars; the password is 2024. The password is v2",
            "The password is Llama-3.1-8B. 密码是Qwen2Tokenizer; 密码是Abc12345这样的",
            // (A word goes on after it.)
            "Passwort ist ABC123def ungültig. the password is OAuth2 based",
            "The default password is admin123 by default",
            // (Not a password's own word, not announced, not a person's shape.)
            "the token is hunter2. the secret is Summer2024. DB_PASSWORD is hunter2",
            "wifi password hunter22 please",
            // (A verb that uses it before the name, no value a person made after it;
            // `pass`, a noun.)
            "use password hashing with bcrypt. users with password expiry of 90days",
            "with password SHA256 hashing; use password v2 endpoint; try password reset",
            "with password Level3 clearance. use pass hunter22. with boarding pass AB1234",
            // (Review 67: a password of a kind.)
            "Use a password Manager2000",
            "use a new password Manager2000. use the wifi password policy defaults",
            // (A variable's name in capitals after a verb in small letters; base32's
            // placeholders: the alphabet in a row, a run of one letter.)
            "use PASSWORD Hunter22",
            "with pw protection enabled. if pw is None: return. with pw v2 endpoint",
            "the token is ABCDEFGHIJKLMNOP23. the secret is AAAAAAAAAAAAAA22",
            "the secret is SHA256WITHRSA. the secret is GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ",
            // (Review 73: a name with one digit.)
            "the secret is MYAPPLICATIONSECRET2",
            // (A variable's name in capitals, its verb not; `PASS`, a noun.)
            "DB_PASSWORD IS hunter22. PASSWORD is hunter22. PASS IS hunter22",
            // (Review 52: another noun between the name and its colon or verb; a number
            // and its unit; a technique or a document's part; a participle; `pass`, a
            // noun.)
            "Password entropy: 80bits. Password lockout duration: 30min. Password TTL: 3600s",
            "Password for Wi-Fi: see below. Password re-entry: required. password-protected: yes",
            "Password compliance: SOC2. Password expires: Dec2024. Password fix: Build42",
            "Password server: vault01. Password owner: jdoe42. Password list: RockYou2021",
            "The password list is rockyou2024. The password fix is Build42.",
            "The password salt is 16bytes. The password was changed 5times.",
            "The password is 12-chars. The password is 4digits. the password must be 8+chars.",
            "The password is Blake2b. The password is ROT13. The password is FIDO2-backed.",
            "The password is LDAP3-synced. The password is SOC2-compliant.",
            "The pass is mem2reg. My boarding pass is QF401. Password:\nStep2",
            "Password:\n200OK\n\nPassword\t90days\nLa password è Level3.",
            "Hasło kampanii to Polska2030. the password is Llama3Instruct",
            // (Review 53: `to` that sends it somewhere; a variable's name; a noun before
            // the next line's value; a ticket's key; a product's or a technique's
            // version; a date.)
            "Please send the new password to jsmith2. Forwarded the password to ops-team2.",
            "Saved the password to KeePass2. Renamed PASSWORD to DB_PASSWORD2.",
            "The password list is\nrockyou2024\n\nPassword owner:\njdoe42\n",
            "Password - SEC-1042\nPassword:\nINC0012345\nPassword expires:\nNov2025\n",
            "The password is Keccak256 so it cannot be reversed. The password is Python3 and",
            "The password is macOS14 now. The password is gpt-4o now. La password è Python3 e",
            "The password was set Jan2025. The password is 20240105 now",
            "Das Passwort ist jetzt v2-kompatibel. パスワードはWindows11です",
            // (Review 54: a unit or a version past a last `!`; a product's version.)
            "Your password must be 12-characters! The password is RHEL9!",
            "The password is Server2019 on the DC. The password is Office365 for SSO users",
            "Password is LDAPv3 for AD. The default password is Pixel7 on demo units",
            // (A verb that ends its line, and prose on the next; a token's word.)
            "The password is\nrequired for login. the password is\nhunter22 and more",
            "The token is\nhunter22",
            // (Too short for a person's password, a version.)
            "my pwd is ab12. the password is v1.2.3",
            "The password (`UserPwdV3`) field is required.",
            "the password is UTF-8 encoded. The password is in 1Password.",
            "The password length is 12345678. the password expires in 90 days",
        ] {
            assert_eq!(d.detect(text), [], "{text}");
        }
    }

    #[test]
    fn other_languages_prose_passwords_are_secrets() {
        let d = PiiDetector::new();
        for (text, want) in [
            ("mein Passwort ist Xk9mQ2vL7", &["Xk9mQ2vL7"][..]),
            (
                "Das Passwort für den Server lautet Xk9mQ2vL7.",
                &["Xk9mQ2vL7"],
            ),
            ("mi contraseña es Xk9mQ2vL7", &["Xk9mQ2vL7"]),
            ("le mot de passe est : Xk9mQ2vL7", &["Xk9mQ2vL7"]),
            ("Mot de passe pour admin : Xk9mQ2vL7", &["Xk9mQ2vL7"]),
            ("a senha é Xk9mQ2vL7", &["Xk9mQ2vL7"]),
            (
                "la password del database è Xk9mQ2vL7, grazie",
                &["Xk9mQ2vL7"],
            ),
            ("el password es \"Xk9mQ2vL7\"", &["Xk9mQ2vL7"]),
            (
                "lösenord är Xk9mQ2vL7; adgangskode er Xk9mQ2vL8",
                &["Xk9mQ2vL7", "Xk9mQ2vL8"],
            ),
            (
                "hasło to Xk9mQ2vL7; hasło jest Xk9mQ2vL8",
                &["Xk9mQ2vL7", "Xk9mQ2vL8"],
            ),
            ("salasana on Xk9mQ2vL7", &["Xk9mQ2vL7"]),
            ("kata sandi adalah Xk9mQ2vL7", &["Xk9mQ2vL7"]),
            ("mật khẩu là Xk9mQ2vL7", &["Xk9mQ2vL7"]),
            ("我的密码是Xk9mQ2vL7", &["Xk9mQ2vL7"]),
            (
                "密码为Xk9mQ2vL7，谢谢; 密碼是：Xk9mQ2vL8",
                &["Xk9mQ2vL7", "Xk9mQ2vL8"],
            ),
            ("パスワードはXk9mQ2vL7です", &["Xk9mQ2vL7"]),
            ("パスワードは \"Xk9mQ2vL7\" です", &["Xk9mQ2vL7"]),
            (
                "비밀번호는 Xk9mQ2vL7 입니다; 비밀번호는 Xk9mQ2vL8입니다",
                &["Xk9mQ2vL7", "Xk9mQ2vL8"],
            ),
            // (Finnish's `on` only after another language's name: after ours, a word.)
            ("the password on the server is Xk9mQ2vL7", &["Xk9mQ2vL7"]),
            // (Review 49: a verb no value follows is a word, as before; the verbs in small
            // letters only; a value that starts with the name's letters; a value read as
            // prose's after a particle, whole, in its quotes, before a remark.)
            ("La contraseña es la siguiente: Xk9mQ2vL7", &["Xk9mQ2vL7"]),
            ("Das Passwort ist folgendes: Xk9mQ2vL7", &["Xk9mQ2vL7"]),
            ("Le mot de passe est le suivant: Xk9mQ2vL7", &["Xk9mQ2vL7"]),
            (
                "the password for the ES cluster is Xk9mQ2vL7",
                &["Xk9mQ2vL7"],
            ),
            ("the token for jest is Xk9mQ2vL7", &["Xk9mQ2vL7"]),
            ("the token is token-Xk9mQ2vL7 and", &["token-Xk9mQ2vL7"]),
            ("my pwd is pwd7Xk9mQ2vL", &["pwd7Xk9mQ2vL"]),
            ("密码是Xk9m&Q2vL7", &["Xk9m&Q2vL7"]),
            ("パスワードは「Xk9m&Q2vL7」です", &["Xk9m&Q2vL7"]),
            ("密码是Xk9mQ2vL7（大小写敏感）", &["Xk9mQ2vL7"]),
            ("密码是`Xk9mQ2vL7`。", &["Xk9mQ2vL7"]),
            ("le mot de passe est « Xk9mQ2vL7 »", &["Xk9mQ2vL7"]),
            ("mein Passwort ist „Xk9mQ2vL7“", &["Xk9mQ2vL7"]),
            // (Their past, German's `heißt`, their `now` after the verb; Vietnamese's `la`
            // without its accent.)
            (
                "das Passwort war Xk9mQ2vL7; hasło brzmi Xk9mQ2vL8",
                &["Xk9mQ2vL7", "Xk9mQ2vL8"],
            ),
            ("Passwort ist jetzt Xk9mQ2vL7", &["Xk9mQ2vL7"]),
            (
                "la contraseña es ahora Xk9mQ2vL7; mat khau la Xk9mQ2vL8",
                &["Xk9mQ2vL7", "Xk9mQ2vL8"],
            ),
            // (Review 50: a letter past ASCII glued to a password's end, its ASCII taken,
            // as before; a value that starts with the name and a symbol.)
            ("the password is Xk9mQ2vL7é", &["Xk9mQ2vL7"]),
            (
                "my pass is pass@Xk9mQ2vL7; the pwd is pwd!Xk9mQ2vL8",
                &["pass@Xk9mQ2vL7", "pwd!Xk9mQ2vL8"],
            ),
            // (Review 51: a name past ASCII after ASCII glued to it, a value before it.)
            ("wifi密码是Xk9mQ2vL7", &["Xk9mQ2vL7"]),
            (
                "密码是Xk9mQ2vL7密码是Ab12Cd34Ef",
                &["Xk9mQ2vL7", "Ab12Cd34Ef"],
            ),
            // (French's `mdp`, its `c'est`.)
            (
                "mdp : Xk9mQ2vL7; Mdp=Xk9mQ2vL8",
                &["Xk9mQ2vL7", "Xk9mQ2vL8"],
            ),
            ("mon mdp c'est Xk9mQ2vL7", &["Xk9mQ2vL7"]),
            ("le mot de passe c’est Xk9mQ2vL7", &["Xk9mQ2vL7"]),
            // (What it was set to; Japanese's and Korean's other particles.)
            (
                "密码改为Xk9mQ2vL7了; 新密码设置为：Xk9mQ2vL8",
                &["Xk9mQ2vL7", "Xk9mQ2vL8"],
            ),
            (
                "密码就是Xk9mQ2vL7; 密码也是Xk9mQ2vL8",
                &["Xk9mQ2vL7", "Xk9mQ2vL8"],
            ),
            (
                "パスワードがXk9mQ2vL7です; 비밀번호도 Xk9mQ2vL8",
                &["Xk9mQ2vL7", "Xk9mQ2vL8"],
            ),
        ] {
            finds_and_redacts(&d, text, want);
        }
        for text in [
            "Das Passwort ist falsch. Passwort ist ABC123def ungültig",
            "la contraseña es incorrecta; le mot de passe est trop court",
            "salasana on liian lyhyt; a senha é obrigatória",
            "密码是否正确; 密码是必需的; 密码是6到20位字符; 密码为空",
            "パスワードは8文字以上です; パスワードは必須です",
            "비밀번호는 8자 이상이어야 합니다; 비밀번호는 필수입니다",
            "password for admin : see vault; Passwort ist SHA256Hashed",
            // (Runs: the name again as the value.)
            "密码是a密码是a密码是a; 密码为密码为密码为; password is password is a",
            // (Review 49: a sentence's version or algorithm after a particle; a word that
            // goes on past ASCII; a number alone, as in English prose.)
            "密码是RSA2048加密的; パスワードはWPA2-PSKです; 비밀번호는 base64로 인코딩",
            "密码是PBKDF2WithHmacSHA256算法; 密码是Qwen2Tokenizer; 密码是Abc12345这样的",
            "Le token est HS256-signé",
            "パスワードが違います; 비밀번호가 틀렸습니다; 密码改为空; 密码也是必需的",
            "mdp oublié ? mdp: ********; le mdp est trop court; c'est le mdp",
            "the password war is over; password var x = 1",
            // (Review 51: a Markov decision process's `MDP`; `mdp` ending another word; a
            // token's prose; a word with a quote in it.)
            "MDP = MarkovDecisionProcess2; POMDP: Tiger2Grid; pomdp = TigerPomdp2x",
            "the password var Xk9mQ2vL7 holds it; next token Gpt4oMini24 model",
            "wifi password Xk9mQ2vL7'z",
        ] {
            assert_eq!(d.detect(text), [], "{text}");
        }
    }

    /// The password of a data source name as Go's MySQL driver writes it, `user:…@tcp(…)`;
    /// none where the user stands alone, or the password is a template.
    #[test]
    fn go_data_source_names_passwords_are_secrets() {
        let d = PiiDetector::new();
        for (text, want) in [
            (
                "db, err := sql.Open(\"mysql\", \"root:S3cr3tPw99@tcp(db:3306)/app\")",
                &["S3cr3tPw99"][..],
            ),
            (
                "DSN=app:S3cr3tPw99@tcp(mysql.internal:3306)/shop?parseTime=true",
                &["S3cr3tPw99"],
            ),
            ("{\"dsn\": \"u:S3cr3tPw99@tcp(h)/d\"}", &["S3cr3tPw99"]),
            // (Review 43: a password's `=` and `(`; IPv6's protocol.)
            (
                "{\"dsn\": \"root:S3c=r3t(Pw99@tcp(db)/app\"}",
                &["S3c=r3t(Pw99"],
            ),
            ("root:S3cr3tPw99@tcp6(db6:3306)/app", &["S3cr3tPw99"]),
            (
                "migrate -database mysql://root:S3cr3tPw99@tcp(db:3306)/app up",
                &["S3cr3tPw99"],
            ),
        ] {
            finds_and_redacts(&d, text, want);
        }
        for text in [
            "dsn := fmt.Sprintf(\"%s:%s@tcp(%s)/%s\", user, pass, host, name)",
            "dsn := \"root@tcp(localhost:3306)/test\"",
            "dsn := \"app:${DB_PASSWORD}@tcp(db)/app\"; x := \"app:@tcp(db)/app\"",
            "mysql> select 1; -- via ssh@tcp(tunnel)",
        ] {
            assert_eq!(d.detect(text), [], "{text}");
        }
    }

    /// A template's default for a secret's variable, the value rendered whenever the
    /// variable is unset: Jinja's and Ansible's `| default('…')` (in a `{% set … %}` too),
    /// Helm's `| default "…"` and `default "…"` before its lookup, Liquid's `| default:
    /// "…"` — the variable named for a secret, or the field the quoted
    /// template renders; none where the default is empty, a placeholder, another variable,
    /// a function's result or a word.
    #[test]
    fn templates_defaults_are_secrets() {
        let d = PiiDetector::new();
        for (text, want) in [
            (
                "password: \"{{ db_password | default('Xk9mQ2vL7pR') }}\"",
                &["Xk9mQ2vL7pR"][..],
            ),
            (
                "{{ .Values.password | default \"Xk9mQ2vL7pR\" }}",
                &["Xk9mQ2vL7pR"],
            ),
            (
                "  password: {{ .Values.db.password | default \"Sunflower2024!\" | quote }}",
                &["Sunflower2024!"],
            ),
            (
                "db_pass: \"{{ lookup('env', 'DB_PASS') | default('Xk9mQ2vL7pR', true) }}\"",
                &["Xk9mQ2vL7pR"],
            ),
            ("{{ db_password|default('Xk9mQ2vL7pR') }}", &["Xk9mQ2vL7pR"]),
            (
                "{{- .Values.redis.password | default \"Xk9mQ2vL7pR\" -}}",
                &["Xk9mQ2vL7pR"],
            ),
            (
                "{{ site.api_key | default: \"Xk9mQ2vL7pRt8sW3\" }}",
                &["Xk9mQ2vL7pRt8sW3"],
            ),
            (
                "DB_PASSWORD={{ db_password | default('Xk9mQ2vL7pR') }}",
                &["Xk9mQ2vL7pR"],
            ),
            ("{{ db_password | d('Xk9mQ2vL7pR') }}", &["Xk9mQ2vL7pR"]),
            // (Helm's function before its lookup, its first argument the default.)
            (
                "password: {{ default \"Xk9mQ2vL7pR\" .Values.password }}",
                &["Xk9mQ2vL7pR"],
            ),
            (
                "  POSTGRES_PASSWORD: {{ default \"Sunflower2024!\" .Values.pg.password | quote }}",
                &["Sunflower2024!"],
            ),
            (
                "db_password: \"{{- default 'Xk9mQ2vL7pR' .Values.db.password }}\"",
                &["Xk9mQ2vL7pR"],
            ),
            (
                "password: {{ (default \"Xk9mQ2vL7pR\" .Values.password) | b64enc }}",
                &["Xk9mQ2vL7pR"],
            ),
            (
                "password: {{\tdefault \"Xk9mQ2vL7pR\" .Values.password }}",
                &["Xk9mQ2vL7pR"],
            ),
            // (Jinja's statement that sets the variable.)
            (
                "{% set db_password = lookup('env', 'DB_PW') | default('Xk9mQ2vL7pR') %}",
                &["Xk9mQ2vL7pR"],
            ),
            (
                "{%- set api_key = vars.key | default(\"Xk9mQ2vL7pRt8sW3\") -%}",
                &["Xk9mQ2vL7pRt8sW3"],
            ),
            // (Review 60: Helm's variable, as Bitnami's charts set it.)
            (
                "{{- $password := default \"Xk9mQ2vL7pR\" .Values.auth.password -}}",
                &["Xk9mQ2vL7pR"],
            ),
            (
                "{{ $pw := .Values.auth.password | default \"Xk9mQ2vL7pR\" }}",
                &["Xk9mQ2vL7pR"],
            ),
            // (Review 56: a value written out before a filter outside a template is the
            // value, not its default.)
            ("password: Xk9mQ2vL7pR | default('')", &["Xk9mQ2vL7pR"]),
            ("PASSWORD=Xk9mQ2vL7pR | default \"x\"", &["Xk9mQ2vL7pR"]),
            (
                "| api_key | Xk9mQ2vL7pRt8sW3 | default: \"none\" |",
                &["Xk9mQ2vL7pRt8sW3"],
            ),
        ] {
            finds_and_redacts(&d, text, want);
        }
        for text in [
            "password: \"{{ db_password | default('') }}\"",
            "password: \"{{ db_password | default(omit) }}\"",
            "password: \"{{ db_password | default('changeme') }}\"",
            "{{ .Values.password | default (randAlphaNum 16) }}",
            "password: {{ default (randAlphaNum 16) .Values.password }}",
            "{% set password = password | default('') %}{% if password | default('x') %}",
            "password: {{ default \"\" .Values.password | quote }}",
            "password: {{ default \"changeme\" .Values.password }}",
            "{{ .Values.password | default .Values.global.password }}",
            "password: \"{{ db_password | default(lookup('env','DB_PASS')) }}\"",
            "{{ password | default('{{ vault_pw }}') }}",
            "{{ password_label | default('Password') }}",
            "{{ password_hint | default('Enter your password') }}",
            "The password | default column shows the initial value",
            "{{ password_min_length | default(12) }}",
            "{{ .Values.passwordKey | default \"password\" }}",
            "{{ .Values.existingSecretPasswordKey | default \"redis-password\" }}",
        ] {
            assert_eq!(d.detect(text), [], "{text}");
        }
        // (Review 61: a lookup after Helm's `default` that a filter's default follows.)
        for text in [
            "password: {{ (default .Values.global.pw .Values.pw) | default \"Xk9mQ2vL7pR\" }}",
            "password: {{ default | default(\"Xk9mQ2vL7pR\") }}",
        ] {
            finds_and_redacts(&d, text, &["Xk9mQ2vL7pR"]);
        }
        assert_eq!(
            d.detect("{% set x = 1 %} password: y | default('Xk9mQ2vL7pR')"),
            []
        );
        // (Review 60: blanks that fill the fallback's window up to a bracket panicked.)
        for blank in [" ", "\t"] {
            let filled = format!("password: {{{{{}(", blank.repeat(158));
            assert_eq!(d.detect(&filled), [], "{filled:?}");
        }
    }

    /// A lookup's fallback string, where the field or the argument holds it whenever the
    /// lookup finds nothing: `||`, `??`, `?:`, Python's `or`; Ruby's `ENV.fetch` default.
    #[test]
    fn lookups_fallbacks_are_secrets() {
        let d = PiiDetector::new();
        for (text, want) in [
            (
                "  password: process.env.DB_PASSWORD || 'S3cr3tPw99',",
                &["S3cr3tPw99"][..],
            ),
            (
                "const apiKey = process.env['API_KEY'] ?? \"S3cr3tPw99\";",
                &["S3cr3tPw99"],
            ),
            (
                "DB_PASSWORD = os.environ.get(\"DB_PASSWORD\") or \"S3cr3tPw99\"",
                &["S3cr3tPw99"],
            ),
            (
                "val password = System.getenv(\"PW\") ?: \"S3cr3tPw99\"",
                &["S3cr3tPw99"],
            ),
            (
                "new Sequelize('shop', 'root', process.env.DB_PASS || 'S3cr3tPw99', {})",
                &["S3cr3tPw99"],
            ),
            (
                "smtp.login(user, os.getenv('SMTP_PASSWORD') or 'S3cr3tPw99')",
                &["S3cr3tPw99"],
            ),
            (
                "password: ENV.fetch('DB_PASSWORD', 'S3cr3tPw99')",
                &["S3cr3tPw99"],
            ),
            // (Review 42: chains, the name's own default, Prettier's line break, brackets
            // around, a template literal, TypeScript's `?.` and `!`, a string's prefix.)
            (
                "  password: process.env.A || process.env.B || 'S3cr3tPw99',",
                &["S3cr3tPw99"],
            ),
            (
                "  password: process.env.A || redis_pw || 'S3cr3tPw99',",
                &["S3cr3tPw99"],
            ),
            ("password = password or 'S3cr3tPw99'", &["S3cr3tPw99"]),
            (
                "  password: process.env.DB_PASSWORD\n    || 'S3cr3tPw99',",
                &["S3cr3tPw99"],
            ),
            (
                "  password: String(process.env.DB_PASSWORD || 'S3cr3tPw99'),",
                &["S3cr3tPw99"],
            ),
            (
                "password = (os.environ.get('DB_PASSWORD') or 'S3cr3tPw99')",
                &["S3cr3tPw99"],
            ),
            (
                "  password: config?.db?.password! ?? `S3cr3tPw99`,",
                &["S3cr3tPw99"],
            ),
            (
                "var password = Environment.GetEnvironmentVariable(\"PW\") ?? @\"S3cr3tPw99\";",
                &["S3cr3tPw99"],
            ),
            // (Review 43: the line break after the operator; C#'s `$"…"`.)
            (
                "  password: process.env.DB_PASSWORD ||\n    'S3cr3tPw99',",
                &["S3cr3tPw99"],
            ),
            (
                "var password = Env(\"PW\") ?? $\"S3cr3tPw99\";",
                &["S3cr3tPw99"],
            ),
            // A lookup's default as its argument: Laravel's `env`, python-decouple's
            // `config`, Java's `getOrDefault`; a keyword's (`os.environ.get`'s `default=`,
            // where the keyword was taken and the string left in clear), JSON-escaped too.
            (
                "'password' => env('DB_PASSWORD', 'S3cr3tPw99'),",
                &["S3cr3tPw99"],
            ),
            (
                "PASSWORD = config('DB_PASSWORD', default='S3cr3tPw99')",
                &["S3cr3tPw99"],
            ),
            (
                "String pw = System.getenv().getOrDefault(\"DB_PASSWORD\", \"S3cr3tPw99\");",
                &["S3cr3tPw99"],
            ),
            (
                "password = os.environ.get(\"DB_PASSWORD\", default = \"S3cr3tPw99\")",
                &["S3cr3tPw99"],
            ),
            (
                "{\"code\": \"os.environ.get(\\\"DB_PASSWORD\\\", default=\\\"S3cr3tPw99\\\")\"}",
                &["S3cr3tPw99"],
            ),
            (
                "x = settings.get('password', defaultValue='S3cr3tPw99')",
                &["S3cr3tPw99"],
            ),
            (
                "password = env('DB_PASSWORD', default: 'S3cr3tPw99')",
                &["S3cr3tPw99"],
            ),
            // (Review 46: a quoted value holding `=` is the value, not a keyword; a default
            // after another keyword, after white space and line breaks, triple-quoted, a
            // string's prefix.)
            ("define('DB_PASSWORD', 'Xk9=mQ2vL7pz');", &["Xk9=mQ2vL7pz"]),
            (
                "secret = os.getenv('CLIENT_SECRET', 'AbCdEf0123456789=')",
                &["AbCdEf0123456789="],
            ),
            (
                "config(\"DB_PASSWORD\", cast=str, default=\"S3cr3tPw99\")",
                &["S3cr3tPw99"],
            ),
            (
                "os.environ.get(\n    \"DB_PASSWORD\",\n    default=\n        \"S3cr3tPw99\",\n)",
                &["S3cr3tPw99"],
            ),
            (
                "os.environ.get(\"DB_PASSWORD\", default=\t\"S3cr3tPw99\")",
                &["S3cr3tPw99"],
            ),
            (
                "x = os.getenv(\"DB_PASSWORD\", b\"S3cr3tPw99\")",
                &["S3cr3tPw99"],
            ),
            // (Ruby's block, in ERB too; a keyword argument's default.)
            (
                "  password: <%= ENV.fetch(\"DB_PASSWORD\") { \"S3cr3tPw99\" } %>",
                &["S3cr3tPw99"],
            ),
            (
                "self.password = kwargs.pop(\"password\", \"S3cr3tPw99\")",
                &["S3cr3tPw99"],
            ),
            // (django-environ's typed lookups; configparser's section before the name.)
            (
                "PASSWORD = env.str(\"DB_PASSWORD\", default=\"S3cr3tPw99\")",
                &["S3cr3tPw99"],
            ),
            (
                "pw = cfg.get(\"db\", \"password\", fallback=\"S3cr3tPw99\")",
                &["S3cr3tPw99"],
            ),
            // A default assigned: Ruby's `||=`, JavaScript's and PHP's `??=`.
            ("@password ||= 'S3cr3tPw99'", &["S3cr3tPw99"]),
            ("config.password ??= 'S3cr3tPw99';", &["S3cr3tPw99"]),
            (
                "@password ||= ENV['DB_PASSWORD'] || 'S3cr3tPw99'",
                &["S3cr3tPw99"],
            ),
            // Java's properties' default; Python's `getattr`'s.
            (
                "String pw = System.getProperty(\"db.password\", \"S3cr3tPw99\");",
                &["S3cr3tPw99"],
            ),
            // (Spring's, after the type's class; named whole, or Kotlin's.)
            (
                "String pw = env.getProperty(\"db.password\", String.class, \"S3cr3tPw99\");",
                &["S3cr3tPw99"],
            ),
            (
                "env.getProperty(\"db.password\", java.lang.String.class, \"S3cr3tPw99\")",
                &["S3cr3tPw99"],
            ),
            (
                "env.getProperty(\"db.password\", String::class.java, \"S3cr3tPw99\")",
                &["S3cr3tPw99"],
            ),
            (
                "props.getProperty(\"password\", \"S3cr3tPw99\")",
                &["S3cr3tPw99"],
            ),
            (
                "pw = getattr(settings, \"DB_PASSWORD\", \"S3cr3tPw99\")",
                &["S3cr3tPw99"],
            ),
            (
                "getattr(settings,'DB_PASSWORD','S3cr3tPw99')",
                &["S3cr3tPw99"],
            ),
            (
                "prop.getProperty(\"db.password\", \"S3cr3tPw99\"); getattr(cfg, \"DB_PASSWORD\", \"S3cr3tPw98\")",
                &["S3cr3tPw99", "S3cr3tPw98"],
            ),
            // A lookup of the name and its fallback, whatever holds it.
            (
                "const pw = process.env.DB_PASSWORD || \"S3cr3tPw99\";",
                &["S3cr3tPw99"],
            ),
            (
                "var pw = ConfigurationManager.AppSettings[\"DbPassword\"] ?? \"S3cr3tPw99\";",
                &["S3cr3tPw99"],
            ),
            (
                "val pw = System.getenv(\"DB_PASSWORD\") ?: \"S3cr3tPw99\"",
                &["S3cr3tPw99"],
            ),
            (
                "pw = os.environ.get(\"DB_PASSWORD\") or \"S3cr3tPw99\"",
                &["S3cr3tPw99"],
            ),
            (
                "let pw = env::var(\"DB_PASSWORD\").unwrap_or(\"S3cr3tPw99\".into());",
                &["S3cr3tPw99"],
            ),
            (
                "let pw = std::env::var(\"API_TOKEN\").unwrap_or_else(|_| \"S3cr3tPw99\".to_string());",
                &["S3cr3tPw99"],
            ),
            // A shell's default in a template: the default, not its operator's `-`.
            (
                "url: postgres://app:${DB_PASSWORD:-S3cr3tPw99}@db/app",
                &["S3cr3tPw99"],
            ),
            (
                "export DB_PASSWORD=\"${DB_PASSWORD:-S3cr3tPw99}\"; x=${API_TOKEN:=S3cr3tPw98}",
                &["S3cr3tPw99", "S3cr3tPw98"],
            ),
        ] {
            finds_and_redacts(&d, text, want);
        }
        for text in [
            // No default given by a string; a shell's error message, an empty default.
            "pw = getattr(settings, \"DB_PASSWORD\", None); getattr(self, \"password\", pw)",
            "System.getProperty(\"db.password\"); x = getattr(a, b, \"password\", \"x2024abc\")",
            "env.getProperty(\"db.password\", String.class); env.getProperty(\"pw\", String.class, PW)",
            "x: ${DB_PASSWORD:?must be set}; y=${DB_PASSWORD:-}",
            // (Review 50: a lookup of no configuration's, a form's messages and labels.)
            "const e = errors[\"password\"] || \"Password is required\";",
            "val e = errors[\"password\"] ?: \"too short\"; x = self.errors.get(\"token\") or \"E4012_X\"",
            "<label>{t[\"password\"] ?? \"Mot de passe\"}</label>; c = colors[\"secret\"] || \"#ff0000\"",
            "msg = getattr(errors, \"password\", \"Password must contain a digit\")",
            "String p = messages.getProperty(\"password\", \"Mot de passe oublié ?\");",
            // (A lookup's empty or placeholder fallback; `or` after a bare name, prose's.)
            "env::var(\"DB_PASSWORD\").unwrap_or(\"\".into()); token or 'anonymous'",
            "if password or 'x2024abc' in s: pass; password || \"password || \"",
            // No fallback, an empty one, a placeholder, another operator, prose.
            "password: process.env.DB_PASSWORD,",
            "password: process.env.DB_PASSWORD || '',",
            "password: process.env.DB_PASSWORD || 'changeme',",
            "password: process.env.DB_PASSWORD + 'x2024abc',",
            "password: process.env.DB_PASSWORD || getDefault('pw2024x'),",
            "the password or 'whatever2024' you chose",
            "password: a(b(c(d('x2024abc')))) || 'x2024abc'",
            "label: t('password') || 'Enter password'; errors.password || 'Password is required'",
            "password = password or ''; password: process.env.A || process.env.B",
            "if (password != null || x) { ok('x2024abc') }",
            // No default, none given by a string, another keyword (which was taken).
            "'password' => env('DB_PASSWORD'),",
            "'password' => env('DB_PASSWORD', null),",
            "PASSWORD = config('DB_PASSWORD', cast=str)",
            // (Flask's: `type=str` was taken as the value on every release before.)
            "password = request.form.get('password', type=str)",
            "PASSWORD = config('DB_PASSWORD', default=None, cast=str)",
            "x = os.environ.get(\"DB_PASSWORD\", default=os.environ.get('PW'))",
            "password = os.environ.get('DB_PASSWORD', default == 'x2024abc')",
            "password ||= generate_password; password ??= ''; password |= 0x10",
            "x = os.environ.get(\"DB_PASSWORD\", default=",
            // (Review 47: a triple quote at the text's end panicked.)
            "x.get(\"password\", default=\"\"\"",
            "os.environ.get(\"DB_PASSWORD\", a=b, fallback='''",
            "pw = config.get('database', 'password'); x = foo(\"db\", \"password\", \"x2024abc\")",
            "x = env.bool('DEBUG_PASSWORD', default=False)",
            "password = kwargs.pop(\"password\", None); data.pop(\"password\", \"\")",
            "password: ENV.fetch(\"DB_PASSWORD\") { |k| raise \"missing #{k}\" }",
        ] {
            assert_eq!(d.detect(text), [], "{text}");
        }
    }

    /// The default argparse and click give an option named for a secret
    /// (`add_argument("--password", default="…")`); none where another keyword follows
    /// the name (`help='the password'`, which was taken, as the keyword of a default was,
    /// leaving its string in clear).
    #[test]
    fn argument_parsers_defaults_are_secrets() {
        let d = PiiDetector::new();
        for (text, want) in [
            (
                "parser.add_argument(\"--password\", default=\"S3cr3tPw99\")",
                &["S3cr3tPw99"][..],
            ),
            (
                "@click.option('--token', default='Xk9mQ2vL7pzR4tUw0123')",
                &["Xk9mQ2vL7pzR4tUw0123"],
            ),
            (
                "parser.add_option('--db-password', dest='pw', default='S3cr3tPw99')",
                &["S3cr3tPw99"],
            ),
        ] {
            finds_and_redacts(&d, text, want);
        }
        for text in [
            "parser.add_argument('--password', help='the password')",
            "parser.add_argument('--password', action='store_true')",
            "parser.add_argument('--password', metavar='PASSWORD', nargs='?')",
            "parser.add_argument('-p', '--password', default=os.environ.get('PW'))",
        ] {
            assert_eq!(d.detect(text), [], "{text}");
        }
    }

    /// libcurl's options for a password, given as the argument after them (PHP's
    /// `curl_setopt`, C's `curl_easy_setopt`) and pycurl's inside its `setopt`; none where
    /// a variable or an expression gives it.
    #[test]
    fn curl_options_passwords_are_secrets() {
        let d = PiiDetector::new();
        for (text, want) in [
            (
                "curl_setopt($ch, CURLOPT_USERPWD, \"admin:S3cr3tPw99\");",
                &["admin:S3cr3tPw99"][..],
            ),
            (
                "curl_easy_setopt(curl, CURLOPT_PASSWORD, \"S3cr3tPw99\");",
                &["S3cr3tPw99"],
            ),
            (
                "curl_easy_setopt(h, CURLOPT_PROXYUSERPWD, \"bob:S3cr3tPw99\");",
                &["bob:S3cr3tPw99"],
            ),
            (
                "c.setopt(pycurl.USERPWD, 'bob:S3cr3tPw99')",
                &["bob:S3cr3tPw99"],
            ),
            ("c.setopt(c.PASSWORD, 'S3cr3tPw99')", &["S3cr3tPw99"]),
            // (Review 46: no blank after the comma, blanks before it, a line break after
            // it; C's and Python's string prefixes.)
            (
                "curl_setopt($ch,CURLOPT_USERPWD,\"admin:S3cr3tPw99\");",
                &["admin:S3cr3tPw99"],
            ),
            (
                "c.setopt( pycurl.USERPWD , 'bob:S3cr3tPw99' )",
                &["bob:S3cr3tPw99"],
            ),
            (
                "curl_easy_setopt(curl,\n    CURLOPT_PASSWORD,\n    \"S3cr3tPw99\");",
                &["S3cr3tPw99"],
            ),
            (
                "curl_easy_setopt(c, CURLOPT_PASSWORD, L\"S3cr3tPw99\");",
                &["S3cr3tPw99"],
            ),
            (
                "c.setopt(pycurl.USERPWD, b'bob:S3cr3tPw99')",
                &["bob:S3cr3tPw99"],
            ),
        ] {
            finds_and_redacts(&d, text, want);
        }
        for text in [
            "curl_setopt($ch, CURLOPT_USERPWD, $user . ':' . $pass);",
            "curl_easy_setopt(curl, CURLOPT_PASSWORD, password);",
            "c.setopt(pycurl.USERPWD, f'{user}:{pw}')",
            "x.foo(c.PASSWORD, 'x2024abc')",
            // (PHP's interpolated variables; a manual's prose.)
            "curl_setopt($ch, CURLOPT_USERPWD, \"$user:$pass\");",
            "curl_setopt($ch, CURLOPT_USERPWD, \"api:{$apiKey}\");",
            "CURLOPT_PASSWORD, \"Pass a char * as parameter, pointing to a password\"",
        ] {
            assert_eq!(d.detect(text), [], "{text}");
        }
    }

    /// A password's name shortened to `PW` after a word (`ADMIN_PW=`, `wifi_pw:`), read
    /// as `_PASSWORD`'s; none where it holds no password.
    #[test]
    fn passwords_named_pw_after_a_word_are_secrets() {
        let d = PiiDetector::new();
        for (text, want) in [
            ("ADMIN_PW=S3cr3tPw99", &["S3cr3tPw99"][..]),
            ("export ROOT_PW='S3cr3tPw99'", &["S3cr3tPw99"]),
            ("wifi_pw: \"S3cr3tPw99\"", &["S3cr3tPw99"]),
            ("{\"db_pw\": \"S3cr3tPw99\"}", &["S3cr3tPw99"]),
            // (A table's header so named; `admin_pass` headed none before.)
            (
                "| host | admin_pw |\n|---|---|\n| db1 | S3cr3tPw99 |",
                &["S3cr3tPw99"],
            ),
            (
                "| host | admin_pass |\n|---|---|\n| db1 | S3cr3tPw99 |",
                &["S3cr3tPw99"],
            ),
        ] {
            finds_and_redacts(&d, text, want);
        }
        for text in [
            "new_pw = getpass.getpass(); MIN_PW=8; use_pw: true; db_pw: ${DB_PW}",
            "self._pw = pw; show_pw = False; NEW_PW=${NEW_PW:-changeme}",
            "old_pw != new_pw; user_pw = request.form['pw']; max_pw_len = 64",
        ] {
            assert_eq!(d.detect(text), [], "{text}");
        }
    }

    /// The names of a password no other pass's prefilter had room for (see
    /// `patterns::ADDED_NAMES`): `pw` alone, `passcode`, Spanish's `clave`, the Nordic
    /// definite forms and Korean's `비번` — as fields, in tables and elements, in prose;
    /// none where no password follows, nor `pw` inside a longer name (ODBC's `PWD=`).
    #[test]
    fn pw_passcode_clave_and_definite_forms_name_passwords() {
        let d = PiiDetector::new();
        for (text, want) in [
            ("pw=Xk9mQ2vL7pR", &["Xk9mQ2vL7pR"][..]),
            ("PW: Xk9mQ2vL7pR", &["Xk9mQ2vL7pR"]),
            ("user: admin\npw: \"Sunflower2024!\"", &["Sunflower2024!"]),
            (r#"{"user": "bob", "pw": "Zq8rTw2xLk"}"#, &["Zq8rTw2xLk"]),
            ("dbPw=Xk9mQ2vL7pR", &["Xk9mQ2vL7pR"]),
            ("| pw | Xk9mQ2vL7pR |", &["Xk9mQ2vL7pR"]),
            ("<pw>Xk9mQ2vL7pR</pw>", &["Xk9mQ2vL7pR"]),
            ("my pw is hunter22", &["hunter22"]),
            ("pw is hunter22 btw", &["hunter22"]),
            ("Passcode: 48Zq19Kx", &["48Zq19Kx"]),
            ("DOOR_PASSCODE=Xk9mQ2vL7pR", &["Xk9mQ2vL7pR"]),
            ("the passcode is Bluebird77", &["Bluebird77"]),
            ("Clave de acceso: Xk9mQ2vL7pR", &["Xk9mQ2vL7pR"]),
            ("mi clave secreta es Sol2024!", &["Sol2024!"]),
            ("clave del wifi: Bluebird77", &["Bluebird77"]),
            ("Clave WiFi: Bluebird77", &["Bluebird77"]),
            ("Clave Secreta: Xk9mQ2vL7pR", &["Xk9mQ2vL7pR"]),
            ("clave_wifi: Bluebird77", &["Bluebird77"]),
            ("KODEORD=Xk9mQ2vL7pR", &["Xk9mQ2vL7pR"]),
            ("kodeordet er Sommer2024!", &["Sommer2024!"]),
            ("Kodeord: Xk9mQ2vL7pR", &["Xk9mQ2vL7pR"]),
            ("passordet er Xk9mQ2vL7pR", &["Xk9mQ2vL7pR"]),
            ("Passordet til wifi er Bluebird77", &["Bluebird77"]),
            ("lösenordet är Xk9mQ2vL7pR", &["Xk9mQ2vL7pR"]),
            ("Lösenordet: Sommar2024!", &["Sommar2024!"]),
            ("adgangskoden er Xk9mQ2vL7pR", &["Xk9mQ2vL7pR"]),
            // (Their definite forms in capitals, as a label writes them.)
            ("PASSORDET: Xk9mQ2vL7pR", &["Xk9mQ2vL7pR"]),
            ("LÖSENORDET: Xk9mQ2vL7pR", &["Xk9mQ2vL7pR"]),
            ("LOSENORDET=Xk9mQ2vL7pR", &["Xk9mQ2vL7pR"]),
            ("ADGANGSKODEN: Xk9mQ2vL7pR", &["Xk9mQ2vL7pR"]),
            ("KODEORDET: Xk9mQ2vL7pR", &["Xk9mQ2vL7pR"]),
            // (A Wi-Fi network's key, as routers' labels and chat name it.)
            ("WPA key: Bluebird77!", &["Bluebird77!"]),
            ("The Wi-Fi key is Bluebird77!", &["Bluebird77!"]),
            ("Network Key: Xk9mQ2vL7pR", &["Xk9mQ2vL7pR"]),
            ("wireless key = Sommer2024!", &["Sommer2024!"]),
            ("비번: Xk9mQ2vL7pR", &["Xk9mQ2vL7pR"]),
            ("비번은 Xk9mQ2vL7pR 입니다", &["Xk9mQ2vL7pR"]),
            ("와이파이 비번은 bluebird77이야", &["bluebird77"]),
            ("비번이 Xk9mQ2vL7pR", &["Xk9mQ2vL7pR"]),
            // (ODBC's `PWD=` stays its own name, `pw` no prefix of it.)
            ("UID=etl;PWD={Tm4;Qx8Lr2Vb}", &["Tm4;Qx8Lr2Vb"]),
        ] {
            finds_and_redacts(&d, text, want);
        }
        for text in [
            "upw=Xk9mQ2vL7pR",
            "pw = pulse_width; PW: 12ms; pw: null; pw: ${PW}; pw: true",
            "pw=os.environ['PW']; pw = getpass(); pw = password; pw: !secret wifi_pw",
            "pw.sh --help; import pw; pw -> Xk9",
            "clave: nombre; palabra clave: seguridad; la clave es la paciencia",
            "punto clave: la seguridad. Clave de producto: ver abajo",
            // (Review 55: `clave` a record's code, a key that is public; `pw` a pulse's
            // width, a power, a register's value, a package's version.)
            r#"{"clave": "MX01", "nombre": "Ciudad de México"}"#,
            "SELECT clave, nombre FROM productos WHERE clave = 'P001';",
            "Clave: MAT101. La clave del grupo es IIC2233-1. La clave es Covid19",
            "La clave pública es MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE",
            "PW: 1500us, PRF: 1kHz; pw: 3.3V; PW: 450W; PW: 85kg",
            // (Review 57: a pulse's or a page's width alone; Ecuador's receipts' number.)
            "pw = 1500;  // servo pulse width",
            "servo: {pin: 9, pw: 1500, min: 1000, max: 2000}",
            "Clave de acceso: 0712202401099123456700110010010000001231234567811",
            "pw=0x1F; PW: 0b1010",
            r#""pw": "^1.44.0""#,
            "passcode: required. Passcode length: 6 digits. The passcode is 6 digits long",
            "Passcode: 6-digit code; pw: 12-chars",
            "network key: see the router; the network key is derived from the master key",
            "Network key: see the label; wifi key: (printed on the router); the wireless key is WEP",
            "passordet er for kort; lösenordet är för svagt; adgangskoden er udløbet",
            "비번은 나중에 알려줄게. 비번이 틀렸어요",
        ] {
            assert_eq!(d.detect(text), [], "{text}");
        }
    }

    /// A Terraform variable named for a secret and its `default` (two of its other
    /// arguments before it at most, aligned or not); none where it has no default, or
    /// one that is empty, null, a reference or a number, or where its name is no secret's.
    #[test]
    fn terraform_variables_defaults_are_secrets() {
        let d = PiiDetector::new();
        for (text, want) in [
            (
                "variable \"db_password\" {\n  type = string\n  default = \"Xk9mQ2vL7pR\"\n}",
                &["Xk9mQ2vL7pR"][..],
            ),
            (
                "variable \"db_password\" {\n  description = \"The database admin password\"\n  type        = string\n  default     = \"Sunflower2024!\"\n  sensitive   = true\n}",
                &["Sunflower2024!"],
            ),
            (
                "variable \"api_key\" {\n  default = \"Xk9mQ2vL7pRt8sW3\"\n}",
                &["Xk9mQ2vL7pRt8sW3"],
            ),
            // (The block on one line.)
            (
                "variable \"api_token\" { default = \"Xk9mQ2vL7pRt8sW3\" }",
                &["Xk9mQ2vL7pRt8sW3"],
            ),
            // (Review 86: four arguments before it, a description with escaped quotes.)
            (
                "variable \"db_password\" {\n  description = \"The \\\"admin\\\" password\"\n  \
                 type = string\n  sensitive = true\n  nullable = false\n  default = \"Xk9mQ2vL7pRt8sW3\"\n}",
                &["Xk9mQ2vL7pRt8sW3"],
            ),
        ] {
            finds_and_redacts(&d, text, want);
        }
        for text in [
            "variable \"db_password\" {\n  type = string\n  sensitive = true\n}",
            "variable \"db_password\" {\n  type = string\n  default = \"\"\n}",
            "variable \"db_password\" {\n  type = string\n  default = null\n}",
            "variable \"db_password\" {\n  default = var.other\n}",
            "variable \"db_password_length\" {\n  type = number\n  default = 16\n}",
            "variable \"region\" {\n  default = \"us-east-1\"\n}",
            "variable \"api_token\" { default = null }",
            "variable \"region\" { default = \"us-east-1\" }",
        ] {
            assert_eq!(d.detect(text), [], "{text}");
        }
    }

    /// Credentials named so, as an account's name and its password (`credentials:
    /// admin:…`, `Credentials: admin / …`, `DB_CREDS=…`, `the credentials are …`); none
    /// where they are no such pair (a key file's name, a mechanism's, fetch's `'include'`,
    /// a variable interpolated, `app:$(cat pw)`, words and versions set apart, `dev /
    /// staging22`), nor a class's call that takes its password by position, read as before.
    #[test]
    fn credentials_given_as_user_and_password_are_secrets() {
        let d = PiiDetector::new();
        for (text, want) in [
            ("credentials: admin:Xk9mQ2vL7pR", &["admin:Xk9mQ2vL7pR"][..]),
            ("credentials: Xk9mQ2vL7pRt8sW3", &["Xk9mQ2vL7pRt8sW3"]),
            ("DB_CREDENTIALS=admin:Xk9mQ2vL7pR", &["admin:Xk9mQ2vL7pR"]),
            (r#""creds": "admin:Xk9mQ2vL7pR""#, &["admin:Xk9mQ2vL7pR"]),
            ("the credentials are admin:hunter22", &["admin:hunter22"]),
            (
                "Your creds: admin:Sunflower2024!",
                &["admin:Sunflower2024!"],
            ),
            (
                "credentials = pika.PlainCredentials('orders', 'Tb8Kw3Ny6Rx2')",
                &["Tb8Kw3Ny6Rx2"],
            ),
            // (Review 56: a tuple's second item, a dictionary's password.)
            ("creds = ('admin', 'Xk9mQ2vL7pR')", &["Xk9mQ2vL7pR"]),
            (
                "creds = {'user': 'admin', 'password': 'Xk9mQ2vL7pR'}",
                &["Xk9mQ2vL7pR"],
            ),
            ("credentials: 192.168.1.10:22", &["192.168.1.10"]),
            // (A Windows account after its domain: the bare value ended at its `\`.)
            (
                r"Credentials: ACME\svc_backup:Xk9mQ2vL7pR and more",
                &[r"ACME\svc_backup:Xk9mQ2vL7pR"],
            ),
            (
                r#"{"credentials": "ACME\\svc_backup:Xk9mQ2vL7pR"}"#,
                &[r"ACME\\svc_backup:Xk9mQ2vL7pR"],
            ),
            (
                r"creds: CORP\sqlsvc:Summer2024!",
                &[r"CORP\sqlsvc:Summer2024!"],
            ),
            // (A list of pairs: the second was left in clear.)
            (
                "credentials: admin:Xk9mQ2vL7pR, guest:Hq7vN3zK9pL2",
                &["admin:Xk9mQ2vL7pR, guest:Hq7vN3zK9pL2"],
            ),
            (
                "creds: admin / Xk9mQ2vL7pR; guest / Hq7vN3zK9pL2 for staging",
                &["admin / Xk9mQ2vL7pR; guest / Hq7vN3zK9pL2"],
            ),
            (
                "credentials: admin:Xk9mQ2vL7pR, ops:Tz5Kq8Wn3Lm7,db.internal:5432",
                &["admin:Xk9mQ2vL7pR, ops:Tz5Kq8Wn3Lm7"],
            ),
            // (Review 63: not a note after blanks, `at:10:30am`; prose's list too.)
            (
                "credentials: admin:Xk9mQ2vL7pR at:10:30am, at:10:30am; Note:Ref2024x",
                &["admin:Xk9mQ2vL7pR"],
            ),
            (
                "the credentials are admin / Xk9mQ2vL7pR, guest / Hq7vN3zKw.",
                &["admin / Xk9mQ2vL7pR, guest / Hq7vN3zKw"],
            ),
            (
                "credentials: admin:Xk9mQ2vL7pR, see the vault; time:12:30",
                &["admin:Xk9mQ2vL7pR"],
            ),
            // (Prose's pair set apart by a slash: left in clear.)
            (
                "The credentials are admin / Xk9mQ2vL7pR.",
                &["admin / Xk9mQ2vL7pR"],
            ),
            (
                "my creds are root / Sunflower2024! for the box",
                &["root / Sunflower2024!"],
            ),
            // (A password with `${` or `$(` in it, whatever it interpolates; braced items
            // under a secret's name, not credentials': review 57.)
            ("password=Pa${w0rd", &["Pa${w0rd"]),
            ("password=S3cr3t$(x9", &["S3cr3t$(x9"]),
            ("DB_PASSWORD=\"S3cr3t${SUFFIX}\"", &["S3cr3t${SUFFIX}"]),
            (
                "SECRET={\"k\":\"Xk9mQ2vL7pRt8sW3Yz\"}",
                &["\"k\":\"Xk9mQ2vL7pRt8sW3Yz\""],
            ),
            ("Pwd={ Xk9mQ2vL7pR };", &[" Xk9mQ2vL7pR "]),
            // (The account and its password set apart by a slash with blanks.)
            ("Credentials: admin / Xk9mQ2vL7pR", &["admin / Xk9mQ2vL7pR"]),
            ("creds: root /Hunter22 (rotated)", &["root /Hunter22"]),
            (
                "Credentials: jsmith / Summer2024!",
                &["jsmith / Summer2024!"],
            ),
            (
                "Login credentials: svc_app / Sunflower2024!",
                &["svc_app / Sunflower2024!"],
            ),
            // (Review 58: glued on one side, wider, quoted whole, a `@` or a `:` in the
            // password; a token before a slash that makes no pair is found alone, as
            // before.)
            ("Credentials: admin/ Xk9mQ2vL7pR", &["admin/ Xk9mQ2vL7pR"]),
            // (Review 60: a password that starts with `$`, no variable.)
            ("credentials: admin:$uperS3cret", &["admin:$uperS3cret"]),
            (
                "Credentials: admin   /   Xk9mQ2vL7pR",
                &["admin   /   Xk9mQ2vL7pR"],
            ),
            (
                "{\"credentials\": \"admin / Xk9mQ2vL7pR\"}",
                &["admin / Xk9mQ2vL7pR"],
            ),
            (
                "Credentials: admin / P@ssw0rd2024",
                &["admin / P@ssw0rd2024"],
            ),
            (
                "Credentials: admin / Xk9:mQ2vL7pR",
                &["admin / Xk9:mQ2vL7pR"],
            ),
            (
                "credentials: Xk9mQ2vL7pRt8sW3Yz / n/a",
                &["Xk9mQ2vL7pRt8sW3Yz"],
            ),
            (
                "Creds: Xk9mQ2vL7pRt8sW3Yz== / hunter22",
                &["Xk9mQ2vL7pRt8sW3Yz=="],
            ),
            (
                "credentials: admin:Xk9mQ2vL7pR / backup",
                &["admin:Xk9mQ2vL7pR"],
            ),
        ] {
            finds_and_redacts(&d, text, want);
        }
        for text in [
            "credentials: 'include'; credentials: true; withCredentials: true",
            "credentials = service_account.Credentials.from_service_account_file(path)",
            "credentials: ${{ secrets.GCP_CREDENTIALS }}; creds = get_credentials()",
            "credentials: gcp-sa-2024.json",
            "credentials: OAuth2",
            "credentials: x509",
            "my credentials are hunter22; credentials are Level3",
            "credentials: ~/.aws/credentials; creds: admin:admin",
            "DATABASE_URL_CREDS=app:$(cat /run/secrets/pw)",
            // (Review 56: hosts and ports, schemes, ids, variables, a dictionary's items.)
            "credentials: db.internal:5432; credentials: 12:34; credentials: 2023:Q4",
            "credentials: gcp:sa-key-2024; credentials: k8s:db-secret; creds: basic:user1",
            "creds: \"$USER:$PASS\"",
            "creds = {'user': 'admin'}",
            // (Set apart by a slash: words, a placeholder, a variable, a host and its port,
            // a scheme's, a path's parts.)
            "credentials: admin / admin; credentials: username / password",
            "Credentials: read / write; credentials: oauth / jwt; creds: user / pass",
            "credentials: admin / <password>; credentials: admin / ${DB_PASSWORD}",
            "credentials: admin / ****; credentials: gcp / sa-key-2024",
            "credentials: 2024 / 2025; credentials: admin/ 8080",
            "the path is config/credentials / secrets",
            // (Review 58: words with a digit, versions, identifiers, a shell's variable.)
            "credentials: DB / Redis7; credentials: AWS / AzureAD2; Credentials: Q3 / Q4-2024",
            "credentials: jwt / mTLS1.3; Credentials: RSA / ECDSA-P256",
            "credentials: primary / secondary2; credentials: before / after1",
            "creds: ci / ci-bot2; credentials: team-a / team-b2; Credentials: owner / DevOps2",
            "Credentials: Basic / Bearer2; Credentials: ec2-user / ec2-key",
            "Credentials: user / $PASSWORD; creds: a / $DB_PASS",
            "credentials: admin / hunter22",
            // (Review 59: words and digits after no account's name, IDs, paths, units.)
            "credentials: read / write2024; credentials: input / output22",
            "Credentials: dev / dev-2024; Credentials: dev/ staging22",
            "creds: ami-123 / sg-456; creds: i-0abc12 / vol-0def34",
            "credentials: user /home/user12; credentials: port / 443/tcp",
            "credentials: timeout / 30s60s; credentials: color / #ff00ff",
            "credentials: time / 12:30pm; credentials: res / 1920x1080",
            // (Review 60: words with digits in small letters only, as `hunter22` is too.)
            "credentials: service / v1beta1; credentials: ubuntu / jammy22",
            "credentials: user / amd64-linux; Credentials: user / tenant-42",
            "credentials: admin / port8080; credentials: test / staging2024",
            "credentials: admin / example12; credentials: admin / xxxxxx11",
            // (A domain's account with no password, a path, a share, a placeholder's.)
            r"Credentials: ACME\svc_backup (see vault); credentials: C:\Users\admin:x",
            r"creds: DOMAIN\user:password; credentials: \\server\share:x",
            "the credentials are read / write; credentials are dev / staging22",
            "the credentials are in the vault / see docs; my creds are admin / admin",
            // (Review 62: PowerShell's variable.)
            r"creds: ACME\svc_backup:$env:PW; creds: ACME\svc_backup:$ENV:DB_PW",
        ] {
            assert_eq!(d.detect(text), [], "{text}");
        }
    }

    /// A bare value's marks inside it are the password's: `&` between parts made as a
    /// password's, a bracket closed inside it after a symbol, an apostrophe between letters
    /// after a value made as a password's (every release ended the value there, leaving
    /// the rest in clear, or all of a value too short without it). They still end it
    /// before a field (`&user=…`), words (`salt&pepper`), identifiers (`mask1&flag2`), a
    /// blank or the line's end, a call's or an index's bracket, and Rust's borrows and
    /// generics; where the marks make the value none, it is judged up to its first mark,
    /// as before (reviews 59 to 61).
    #[test]
    fn marks_inside_a_bare_value_are_the_passwords() {
        let d = PiiDetector::new();
        for (text, want) in [
            ("password: Tr0ub4dor&3", &["Tr0ub4dor&3"][..]),
            ("login?user=bob&password=Tr0ub4dor&3", &["Tr0ub4dor&3"]),
            ("password: P@ss(w0rd)9", &["P@ss(w0rd)9"]),
            ("password: P@ss&w0rd and more", &["P@ss&w0rd"]),
            ("password: Xk9mQ'2v", &["Xk9mQ'2v"]),
            ("?password=Xk9mQ2vL&user=bob", &["Xk9mQ2vL"]),
            ("Server=db;Password=Xk9mQ2vL;Database=app;", &["Xk9mQ2vL"]),
            // (Review 60: in a connection string, before its `;`.)
            (
                "Server=db;User Id=sa;Password=P@ss&w0rd;Encrypt=true",
                &["P@ss&w0rd"],
            ),
            ("password: hunter22&& echo ok", &["hunter22"]),
            (
                "(password: hunter22) and {password: hunter23}",
                &["hunter22", "hunter23"],
            ),
            ("<td>password: hunter22</td>", &["hunter22"]),
            (
                "password: hunter22, user: bob; token: Xk9mQ2vL7pRt8sW3;",
                &["hunter22", "Xk9mQ2vL7pRt8sW3"],
            ),
            // (Review 59: marks before a placeholder or a call, judged up to the first.)
            ("password: Xk9mQ2vL7pR;example", &["Xk9mQ2vL7pR"]),
            ("password: Xk9mQ2vL7pR&example", &["Xk9mQ2vL7pR"]),
            ("password: Tr0ub4dor&3(sample)9", &["Tr0ub4dor"]),
            ("password: hunter22;see(docs)", &["hunter22"]),
            // (A bracket at the value's end, after a symbol: the value found nothing.)
            ("password: P@ss(w0rd)", &["P@ss(w0rd)"]),
            ("password: P@ssw0rd(x); next", &["P@ssw0rd(x)"]),
            // (Review 64: small letters and digits before `!`, a `%` after a password.)
            ("password: hunter2!(x)", &["hunter2!(x)"]),
            ("password: Summer2024%(x)", &["Summer2024%(x)"]),
            ("password: Secr3t!(x) and more", &["Secr3t!(x)"]),
            ("password: Pa$$[w0rd],", &["Pa$$[w0rd]"]),
            // (A `;` or a `,` glued between parts with digits: `Xk9` alone found nothing.)
            ("password: Xk9;mQ2vL7", &["Xk9;mQ2vL7"]),
            ("password: Xk9mQ2v,L7 then", &["Xk9mQ2v,L7"]),
            ("password=Tr0ub4dor;3x", &["Tr0ub4dor;3x"]),
            // (A backslash inside, JSON-escaped too — not an escape's, `\n`, `\t`.)
            (r"password: P@ss\w0rd", &[r"P@ss\w0rd"]),
            (r"password: Xk9\mQ2vL7pR ok", &[r"Xk9\mQ2vL7pR"]),
            (
                r#"{"text": "password: Xk9\\mQ2vL7pR"}"#,
                &[r"Xk9\\mQ2vL7pR"],
            ),
            // (Review 62: where the longer value is none, the value as the last release
            // read it — not its first mark; a bracket before a tag, a quote, a `)`, a `.`.)
            ("password: Tr0ub4dor&3;x9(sample)", &["Tr0ub4dor&3"]),
            ("password: Tr0ub4dor&3,Ab1[", &["Tr0ub4dor&3"]),
            ("pw: Xk9mQ'2vL7;md5(pw)+salt", &["Xk9mQ'2vL7"]),
            ("password: P@ss(w0rd)9;x1(", &["P@ss(w0rd)9"]),
            ("password: P@ss[w0rd]x,Ab1(x", &["P@ss[w0rd]x"]),
            ("<td>password: P@ss(w0rd)</td>", &["P@ss(w0rd)"]),
            (
                r#"conn = "host=db user=bob password=P@ss(w0rd)""#,
                &["P@ss(w0rd)"],
            ),
            (
                "(password: P@ss(w0rd)) and password: P@ss!(w0rd).",
                &["P@ss(w0rd)", "P@ss!(w0rd)."],
            ),
            (
                r#""text": "password: Xk9mQ2vL7pR4\nuser: bob\tpw: hunter22\u0021""#,
                &["Xk9mQ2vL7pR4", r"hunter22\u0021"],
            ),
        ] {
            finds_and_redacts(&d, text, want);
        }
        for text in [
            "password: [REDACTED]; password: (hidden); password: ${DB_PASS}",
            "password: 1,234",
            "let pw = md5(userPw2X) as Password;",
            "password: cfg[0].pw; password: getpass();",
            "password: Optional[str] = None",
            "password: list[str]",
            // (Review 59: Rust's and TypeScript's types and borrows, rules, calls, lists.)
            "fn import(data: &[u8], password: Option<&str>) -> Result<Store> {",
            "token: HashMap<&str,&str>; password: &*self.pw; password: &**pw,",
            "password: string&Brand<'pw'>; password: len>=8&&len<=64",
            "password: sha256(pw)+salt; password: data[0]x; password: min(8)chars",
            "password: 8+chars,1digit; password: foo&bar&baz; password: salt&pepper",
            "&x?password=x&x?password=x",
            // (Review 60: formats, variables, masks, emphasis, contractions.)
            "printf(\"password: %s&%s\\n\", a, b); password: %1&%2",
            "puts \"password: #{pw}#{salt}\"; echo \"token: $TOKEN&$X\"",
            "  password: $pass&$salt2; PASSWORD: $1&$2; password: $row[2]+$salt",
            "  password: $ENV{DB_PASS}9; password: $_POST[pw]2",
            "  Token: flags&0x04, secret: mask&~1, token: tok&MASK1, token: nbsp&#160",
            "  password: ****(masked)**; password: **[hidden]**x; password: ~~[old]~~new2",
            "Password: can't2; token: user's2fa; password: it's5am",
            // (Review 61: code's calls and indexes before an operator, versions, Verilog's
            // literals, SQL's injections, identifiers and query strings joined by `&`.)
            "let token=arr_1[i]+1; var token=a.b2(c)+d; secret = aes_256(key)+iv",
            "token = hash_32(x)%n; password = pw_2[i]*2; token: v1.2(beta)x",
            "password: C++11(std)x; password: 555-1234(home)x",
            "assign token = 16'h1234; localparam SECRET = 32'hDEADBEEF;",
            "password: 1'or'1'='1; The password: 2nd's one is wrong; password: 9o'clock",
            "token = t_1&MASK_2; token: mask1&flag2; password: A1&B2; pw: R2&D2",
            "token: cpp17&cpp20; https://ex.com/a?token=x9&page2; token: a1&nbsp2",
            // (Rust's macros, arithmetic, lists, types, rules with a `;` or a `,`.)
            "password: secret!(pw), password: env!(PW); password: x*(y)",
            "password: str,token: str; {password: Pw1,user}; password: a1,b2",
            "password: required,min=8; password: 1,2,3; password: Some(pw);",
            r"password: C:\Users\bob\pw2.txt; password: ^\w+\d$; password: x1\d{8}",
            r"password: D:\apps\db2\pw.txt; password: 1\2; password: A1\B2",
            // (Review 62: arithmetic, members, paths and macros before a call; units, lists
            // and versions with a `,`.)
            "pw = n*sizeof(int); token = count*sizeof(Token); PW = 20*log10(V); PW: 100*(x)",
            "pw = 2*M_PI*f(t); pw: 2.5e-6*scale(x); secret = key^mask(x);",
            "password = args!!.getString(KEY); password: input!.substring(1),",
            "password: user!!.password.take(64), password: req.body!(x)",
            "let password = std::env!(PW); let secret = hex::hex!(KEY); password: Hash!(x)",
            "password: MyMacro!(x); password = Secret::new!(x);",
            // (Review 63: a number's percentage.)
            "password: 100%(sure); password: 200%(x)",
            "PW: 1,500MHz; pw: 2,5kW; pw: 100Hz,2kHz; password: x64,ARM64; password: 4Kb,8Kb",
            "password: H2,Postgres9; password: aes128,Aes256; token: utf8,Latin1; token: A1,b2",
            "password: u32,Pw2; password: v1.2,V2.0; token: ID1,Name2; secret: key1,Key2",
        ] {
            assert_eq!(d.detect(text), [], "{text}");
        }
    }

    /// BIP-39's list as `validate::bip39_word` reads it: 2,048 words of three to eight
    /// small letters, in order, each told by its first four letters.
    #[test]
    fn bip39_words_are_told_by_their_first_four_letters() {
        let words: Vec<&str> = include_str!("bip39-english.txt").lines().collect();
        assert_eq!(words.len(), 2048);
        assert!(words.windows(2).all(|p| p[0] < p[1]));
        assert!(
            words
                .iter()
                .all(|w| (3..=8).contains(&w.len()) && w.bytes().all(|c| c.is_ascii_lowercase()))
        );
        let prefixes: std::collections::HashSet<&str> =
            words.iter().map(|w| &w[..w.len().min(4)]).collect();
        assert_eq!(prefixes.len(), 2048);
    }

    /// A wallet's recovery words under their names: 12 to 24 words of BIP-39's list in a
    /// row, as labels, fields, variables and prose give them (every release left them in
    /// clear); not prose about them, nor words past the list or fewer than twelve.
    #[test]
    fn wallet_recovery_words_are_secrets() {
        let d = PiiDetector::new();
        let w =
            "produce drop purity excite mystery tackle library cabbage middle roof cover ritual";
        let w24 = format!(
            "{w} afford alarm cousin work save artefact purse wrap bounce armor join please"
        );
        let listed = w.replace(' ', ", ");
        let lines = w.replace(' ', "\n");
        let numbered = w
            .split(' ')
            .enumerate()
            .map(|(k, x)| match k {
                0 => x.to_owned(),
                _ => format!("{}. {x}", k + 1),
            })
            .collect::<Vec<_>>()
            .join("\n");
        let eleven = &w[..w.rfind(' ').unwrap_or_default()];
        let w2 = "afford alarm cousin work save artefact purse wrap bounce armor join please";
        let rows = w
            .split(' ')
            .collect::<Vec<_>>()
            .chunks(4)
            .map(|row| row.join(" "))
            .collect::<Vec<_>>()
            .join("\n");
        let pretty = w.replace(' ', "\",\n    \"");
        let grid = w
            .split(' ')
            .enumerate()
            .map(|(k, x)| match (k, k % 3) {
                (0, _) => x.to_owned(),
                (_, 0) => format!("\n{}. {x}", k + 1),
                _ => format!("  {}. {x}", k + 1),
            })
            .collect::<String>();
        let bullets = w.replace(' ', "\n* ");
        // (Each word with an item's number made as `form` makes it, one to a line, the
        // first's number left out of what is found.)
        let items = |form: &dyn Fn(usize, &str) -> String| {
            let lines = w.split(' ').enumerate().map(|(k, x)| form(k + 1, x));
            let lines = lines.collect::<Vec<_>>().join("\n");
            let first = form(1, "produce").find("produce").unwrap_or_default();
            (lines.clone(), lines[first..].to_owned())
        };
        let mut numbered_forms = vec![];
        for form in [
            &(|k: usize, x: &str| format!("#{k} {x}")) as &dyn Fn(usize, &str) -> String,
            &|k, x| format!("({k}) {x}"),
            &|k, x| format!("Word {k}: {x}"),
            &|k, x| format!("{k}: {x}"),
            &|k, x| format!("{k} - {x}"),
            &|k, x| format!("{k}-{x}"),
            &|k, x| format!("{k}\t{x}"),
            &|k, x| format!("| {k} | {x} |"),
        ] {
            numbered_forms.push(items(form));
        }
        let (table, table_words) = &numbered_forms[7];
        let table_words = table_words.trim_end_matches(" |");
        for (text, want) in [
            (format!("seed phrase: {w}"), w.to_owned()),
            (
                format!("My seed phrase is {w}. Can you restore it?"),
                w.to_owned(),
            ),
            (format!(r#"{{"mnemonic": "{w24} choose"}}"#), w24.clone()),
            (format!("WALLET_MNEMONIC=\"{w}\""), w.to_owned()),
            (format!("const walletMnemonic = '{w}';"), w.to_owned()),
            (format!("Secret Recovery Phrase: {listed}"), listed.clone()),
            (format!("**Recovery phrase:**\n{lines}\n"), lines.clone()),
            (format!("mnemonic_words = \"{w}\""), w.to_owned()),
            // (Thirteen words: the twelve; a word past the list ends them.)
            (format!("seed words: {w} cover x1"), w.to_owned()),
            (format!("seed words: {w} zzz"), w.to_owned()),
            // (Review 64: a numbered list, a JSON array, a call, the name's second word, a
            // remark, dashes and bars between, a dash after the name.)
            (format!("Seed phrase:\n1. {numbered}"), numbered.clone()),
            (
                format!("\"mnemonic\": [\"{}\"]", w.replace(' ', "\", \"")),
                w.replace(' ', "\", \""),
            ),
            (format!("ethers.Wallet.fromMnemonic(\"{w}\")"), w.to_owned()),
            (format!("Mnemonic phrase (12 words): {w}"), w.to_owned()),
            (
                format!("Recovery Phrase (write this down on paper and store it safely): {w}"),
                w.to_owned(),
            ),
            (
                format!("seed phrase: {}", w.replace(' ', " - ")),
                w.replace(' ', " - "),
            ),
            (
                format!("Seed phrase — {}", w.replace(' ', " | ")),
                w.replace(' ', " | "),
            ),
            (format!("RECOVERY_PHRASE={w}"), w.to_owned()),
            // (Review 65: rows of words, each as long; a JSON array pretty-printed, a
            // numbered grid, bullets.)
            (format!("seed phrase:\n{w}\n{w2}"), format!("{w}\n{w2}")),
            (format!("recovery phrase:\n{rows}\n"), rows.clone()),
            (
                format!("{{\n  \"mnemonic\": [\n    \"{pretty}\"\n  ]\n}}"),
                pretty.clone(),
            ),
            (format!("Seed phrase:\n1. {grid}"), grid.clone()),
            (format!("Seed phrase:\n* {bullets}"), bullets.clone()),
            // (Other names: a seed, recovery or wallet words, a name's words joined by a
            // dash; a key nested under the name; prose to a colon; `;` and `/` between
            // words; other items' numbers, a table.)
            (format!("seed: {w}"), w.to_owned()),
            (format!("{{\"seed\": \"{w}\"}}"), w.to_owned()),
            (format!("Recovery seed: {w}"), w.to_owned()),
            (format!("recovery words: {w}"), w.to_owned()),
            (format!("wallet words: {w}"), w.to_owned()),
            (format!("BACKUP WORDS: {w}"), w.to_owned()),
            (format!("Seed-Phrase: {w}"), w.to_owned()),
            (
                format!(r#"{{"mnemonic": {{"phrase": "{w}", "path": "m/44'/60'/0'/0/0"}}}}"#),
                w.to_owned(),
            ),
            (format!("mnemonic = {{phrase: '{w}'}}"), w.to_owned()),
            (format!("seed phrase for wallet 2: {w}"), w.to_owned()),
            // (The first word's number left out after the name.)
            (format!("Seed phrase: {numbered}"), numbered.clone()),
            // (Review 66: a name of three words; a `.` after the name; a name's first word
            // glued to the next.)
            (
                format!("Backup Seed Phrase\n1. {numbered}"),
                numbered.clone(),
            ),
            (format!("Hardware wallet seed phrase\n{w}"), w.to_owned()),
            (
                format!("Please write down your recovery phrase.\n\n{w}"),
                w.to_owned(),
            ),
            (format!("SecretRecoveryPhrase: {w}"), w.to_owned()),
            // (Review 67: plurals, a name's first word glued on after `mnemonic`, a verb
            // that ends its line, an arrow, items numbered `1-`.)
            (format!("Recovery phrases: {w}"), w.to_owned()),
            (format!("const mnemonics = [\"{w}\"]"), w.to_owned()),
            (format!("const mnemonicstring = '{w}'"), w.to_owned()),
            (format!("seed phrase is\n{w}"), w.to_owned()),
            (format!("Seed phrase → {w}"), w.to_owned()),
            (format!("Seed phrase ⇒ {w}"), w.to_owned()),
            (
                format!("my recovery seed, please check it:\n{w}"),
                w.to_owned(),
            ),
            (
                format!("seed phrase: {}", w.replace(' ', "; ")),
                w.replace(' ', "; "),
            ),
            (
                format!("seed phrase: {}", w.replace(' ', "/")),
                w.replace(' ', "/"),
            ),
            (
                format!("Seed phrase:\n| # | Word |\n|---|------|\n{table}"),
                table_words.to_owned(),
            ),
        ] {
            finds_and_redacts(&d, &text, &[want.as_str()]);
        }
        for text in [
            "mnemonic: a memory aid used to remember things",
            "the seed phrase is never stored on our servers and cannot be recovered by support",
            "Recovery phrase: write down these twelve words and keep them somewhere safe offline",
            "seed phrase: produce drop purity excite mystery tackle library cabbage middle roof",
            "amnemonic: produce drop purity excite mystery tackle library cabbage middle roof cover ritual",
            "mnemonic mnemonic mnemonic; Mnemonic: see the vault; SEED_PHRASE=${SEED}",
            // (Review 64: eleven words and the next line's prose; placeholders, tests.)
            "seed phrase: word word word word word word word word word word word word",
            "mnemonic: \"test test test test test test test test test test test junk\"",
            // (The names' first words in other senses.)
            "seed: 42",
            "random seed: the seed is set to 42 for reproducibility",
            "wallet: 0x52908400098527886E0F7030069857D2E4169EE7",
            "recovery: restart the service; backup: daily at 02:00",
            "Seed phrase:\n| # | Word |\n|---|------|\n| 1 | never |\n| 2 | share |",
            "Seed phrase:\n#1 never\n#2 share\n#3 it",
            // (Review 66: lists after the names' first words in other senses — a plural, a
            // heading's next word, `wallet`, `recovery` alone, prose to a colon after one
            // word, a table's head that names no words.)
            "Seeds: tomato, pepper, pumpkin, onion, garlic, potato, cabbage, corn, wheat, rice, \
             bean, broccoli",
            "Seed catalog\n- tomato\n- pepper\n- pumpkin\n- onion\n- garlic\n- potato\n- \
             cabbage\n- corn\n- wheat\n- rice\n- bean\n- broccoli",
            "Wallet categories: food, rent, travel, health, gym, coffee, fuel, gas, bonus, gift, \
             cash, loan",
            "Recovery foods: banana, apple, orange, lemon, tomato, potato, rice, bean, coffee, \
             milk, cheese, egg, chicken, salmon",
            "Keywords for the seed round: artist, music, video, social, media, network, mobile, \
             game, sport, fashion, travel, food",
            "Seed data:\n| id | name |\n|---|---|\n| 1 | apple |\n| 2 | banana |\n| 3 | orange |\n\
             | 4 | lemon |\n| 5 | tomato |\n| 6 | pepper |\n| 7 | pumpkin |\n| 8 | onion |\n\
             | 9 | garlic |\n| 10 | potato |\n| 11 | cabbage |\n| 12 | corn |",
        ] {
            assert_eq!(d.detect(text), [], "{text}");
        }
        for (lines, words) in &numbered_forms[..7] {
            finds_and_redacts(&d, &format!("Seed phrase:\n{lines}"), &[words.as_str()]);
        }
        // (Review 65: the list in its order; eleven numbered and the next heading; names
        // that are the list's words, over and over.)
        for text in [
            format!("seed phrase: {eleven}\nnever share this list"),
            "The BIP-39 mnemonic words: abandon, ability, able, about, above, absent, absorb, \
             abstract, absurd, abuse, access, accident, ..."
                .to_owned(),
            format!(
                "Seed phrase:\n1. {}\nSeed",
                numbered[..numbered.rfind('\n').unwrap_or_default()].to_owned()
            ),
            "seed phrase seed phrase seed phrase seed phrase seed phrase".to_owned(),
        ] {
            assert_eq!(d.detect(&text), [], "{text}");
        }
    }

    /// A wallet's extended private key (BIP-32's `xprv…`, `tprv…`, SLIP-132's `zprv…`)
    /// gives its whole branch of keys: left in clear on every release. Not a public one
    /// (`xpub…`), one whose checksum fails, one longer than 111 characters, nor a shortened
    /// one in docs.
    #[test]
    fn extended_private_keys_are_secrets() {
        let d = PiiDetector::new();
        let x = "xprv9s21ZrQH143K3QTDL4LXw2F7HEK3wJUD2nW2nRk4stbPy6cq3jPPqjiChkVvvNKmPGJxWUtg6LnF5\
                 kejMRNNU3TGtRBeJgk33yuGBxrMPHi";
        let t = "tprv8ZgxMBicQKsPd9TeAdPADNnSyH9SSUUbTVeFszDE23Ki6TBB5nCefAdHkK8Fm3qMQR6sHwA56zqR\
                 mKmxnHk37JkiFzvncDqoKmPWubu7hDF";
        let z = "zprvAWgYBBk7JR8GizhibBSnBad56G2jJ1NXC3nxa1z347AdEwZ3uRR7oPGyasTCgqsZfoKUUVw1vfKYCfi\
                 FHfBRf5atETNtUghwDUSBG2AxzjG";
        for (text, want) in [
            (x.to_owned(), x),
            (format!("{{\"xprv\": \"{x}\"}}"), x),
            (format!("export WALLET_KEY={t}"), t),
            (z.to_owned(), z),
            // (Review 69: in a descriptor; glued to what stands before it.)
            (format!("tr({x}/86h/0h/0h/0/*)#s6gtdvpc"), x),
            (format!("WALLET_{x}"), x),
            // (Review 70: glued to what follows it.)
            (format!("{x}_old"), x),
            (format!("{x}x"), x),
        ] {
            finds_and_redacts(&d, &text, &[want]);
        }
        for text in [
            x.replacen("xprv", "xpub", 1),
            "the xprv9s21… key of test vector 1; xprv...".to_owned(),
            // (Review 69: the checksum checked — a run of Base58, another prefix's body;
            // review 71: prefixes in a row, read 22x as slowly as the bench text.)
            format!("xprv{}", "A".repeat(107)),
            format!("zprv{}", &x[4..]),
            "xprv".repeat(64),
        ] {
            assert_eq!(d.detect(&text), [], "{text}");
        }
    }

    /// A wallet's private key in Wallet Import Format after its name (`"wif": "5Hue…"`,
    /// `bitcoin-cli importprivkey …`): left in clear on every release.
    #[test]
    fn wallet_import_format_keys_are_secrets() {
        let d = PiiDetector::new();
        // (Bitcoin wiki's example, uncompressed; a compressed key, mainnet and testnet.)
        let u = "5HueCGU8rMjxEXxiPuD5BDku4MkFqeZyd4dZ1jvhTVqvbTLvyTJ";
        let k = "KwDiBf89QgGbjEhKnhXJuH7LrciVrZi3qYjgd9M7rFU73sVHnoWn";
        let c = "cMahea7zqjxrtgAbB7LSGbcQUr1uX1ojuat9jZodMN87JcbXMTcA";
        for (text, want) in [
            (format!("{{\"wif\": \"{u}\"}}"), u),
            (format!("\"privkey\": \"{k}\""), k),
            (format!("priv_key = \"{k}\""), k),
            (format!("wif = '{c}'"), c),
            (format!("bitcoin-cli importprivkey {u} \"label\" false"), u),
            (
                format!("$ bitcoin-cli dumpprivkey 1PMycacnJaSqwwJqjawXBErnLsZ7RkXUAs\n{k}"),
                k,
            ),
            (format!("PrivateKey.from_wif(\"{k}\")"), k),
            (format!("WIF: {k}"), k),
            // (Review 72: bitcoinjs's call, other names and layouts.)
            (format!("ECPair.fromWIF(\"{k}\")"), k),
            (format!("\"WIF\": \"{k}\""), k),
            (format!("Wif: {k}"), k),
            (format!("export WIF={k}"), k),
            (format!("wif\t{k}"), k),
            (format!("wif.decode(\"{k}\")"), k),
            (format!("privKey: {k}"), k),
            (format!("PRIVKEY={k}"), k),
            (format!("wif_key = \"{k}\""), k),
            (format!("WIF_KEY={k}"), k),
            (format!("Private key (WIF): {k}"), k),
            // (Review 73.)
            (format!("const wifKey = \"{k}\";"), k),
            (format!("\"privateKeyWif\": \"{k}\""), k),
            (format!("wif-key: {k}"), k),
            (format!("Wallet import format: {u}"), u),
            // (Review 75: a Python dict's key, a TSV's, a CSV's, XML's element.)
            (format!("{{'WIF': '{k}'}}"), k),
            (format!("WIF\t{k}"), k),
            (format!("WIF,{k}"), k),
            (format!("<WIF>{k}</WIF>"), k),
            // (The name inside a word: the key found alone, see
            // `bare_wallet_import_format_keys_are_secrets`.)
            (format!("swif: {u}"), u),
            (format!("the WIFI: {u}"), u),
        ] {
            finds_and_redacts(&d, &text, &[want]);
        }
        for text in [
            // (A checksum that fails; the same characters one longer; an address's; no
            // key after the name.)
            format!("wif: {}", u.replace('T', "U")),
            format!("wif: {u}x"),
            "importprivkey 1PMycacnJaSqwwJqjawXBErnLsZ7RkXUAs".to_owned(),
            "the wifi password policy; swift wif format; WIF encoding explained".to_owned(),
            "privkey ".repeat(64),
        ] {
            assert_eq!(d.detect(&text), [], "{text}");
        }
    }

    /// A wallet's private key in Wallet Import Format with no name before it, pasted alone
    /// or in prose, code, a table: its checksum checked, so nothing else of its shape is
    /// one. Left in clear on every release.
    #[test]
    fn bare_wallet_import_format_keys_are_secrets() {
        let d = PiiDetector::new();
        let u = "5HueCGU8rMjxEXxiPuD5BDku4MkFqeZyd4dZ1jvhTVqvbTLvyTJ";
        let k = "KwDiBf89QgGbjEhKnhXJuH7LrciVrZi3qYjgd9M7rFU73sVHnoWn";
        let c = "cMahea7zqjxrtgAbB7LSGbcQUr1uX1ojuat9jZodMN87JcbXMTcA";
        for (text, want) in [
            (u.to_owned(), u),
            (format!("{k}\n"), k),
            (format!("is this still usable? {c}."), c),
            (format!("key = Key('{k}')"), k),
            (format!("| hot | {u} |"), u),
            (format!("é{k}é"), k),
            (format!("({u}),{k}"), u),
        ] {
            let got = d.detect(&text);
            assert!(
                got.first().is_some_and(|f| &text[f.start..f.end] == want),
                "{text} {got:?}"
            );
            let (out, _) = d.redact(&text);
            assert!(!out.contains(want), "{out}");
        }
        assert_eq!(d.detect(&format!("({u}),{k}")).len(), 2);
        for text in [
            // (A checksum that fails; a letter, a digit, `_` glued before or after; a
            // Base58 word one longer or shorter; another first character; a run of them.)
            u.replace('T', "U"),
            format!("x{u}"),
            format!("{u}1"),
            format!("_{k}"),
            format!("{k}_"),
            format!("{u}a"),
            u[1..].to_owned(),
            format!("7{}", &u[1..]),
            "5".repeat(51),
            "K".repeat(5_000),
        ] {
            assert_eq!(d.detect(&text), [], "{text}");
        }
    }

    /// A mail session's login in a client's debug output (`AUTH PLAIN …`, `AUTH LOGIN` and
    /// the password's line after the server's `334 UGFzc3dvcmQ6`): base64 that holds the
    /// password, left in clear on every release.
    #[test]
    fn sasl_logins_in_mail_sessions_are_secrets() {
        let d = PiiDetector::new();
        // (`⧵0alice⧵0hunter22`, `⧵0alice@example.com⧵0Summer2024!`, `hunter22`.)
        let plain = "AGFsaWNlAGh1bnRlcjIy";
        let long = "AGFsaWNlQGV4YW1wbGUuY29tAFN1bW1lcjIwMjQh";
        let password = "aHVudGVyMjI=";
        // (`user=alice@example.com⧵1auth=Bearer ya29…⧵1⧵1`.)
        // (`Correct-Horse-Battery-Staple-2024-extra-long!!`.)
        let phrase = "Q29ycmVjdC1Ib3JzZS1CYXR0ZXJ5LVN0YXBsZS0yMDI0LWV4dHJhLWxvbmchIQ==";
        let xoauth = "dXNlcj1hbGljZUBleGFtcGxlLmNvbQFhdXRoPUJlYXJlciB5YTI5LmEwQWZINlNNQngza0xxOQEB";
        for (text, want) in [
            (format!("AUTH PLAIN {plain}"), plain),
            (format!("send: 'AUTH PLAIN {long}\\r\\n'"), long),
            (
                format!("C: auth plain {plain}\nS: 235 2.7.0 Authentication successful"),
                plain,
            ),
            (
                format!(" -> AUTH PLAIN\n<-  334 \n -> {plain}\n<-  235 ok"),
                plain,
            ),
            (
                format!(
                    "AUTH LOGIN\n334 VXNlcm5hbWU6\nYWxpY2U=\n334 UGFzc3dvcmQ6\n{password}\n235 ok"
                ),
                password,
            ),
            // (Review 72: PHPMailer's prefixes, a label before the token, a prefix that
            // decodes to control characters; a password past 320 bytes; OAuth's token.)
            (
                format!(
                    "CLIENT -> SERVER: AUTH LOGIN\nSERVER -> CLIENT: 334 UGFzc3dvcmQ6\n\
                     CLIENT -> SERVER: {password}"
                ),
                password,
            ),
            (
                format!("SEND: AUTH LOGIN\nSEND: 334 UGFzc3dvcmQ6\nSEND: {password}\n"),
                password,
            ),
            (
                format!("[MAIL] AUTH PLAIN\n[MAIL] 334\n[MAIL] {plain}"),
                plain,
            ),
            (
                format!(
                    "AUTH LOGIN\n334 VXNlcm5hbWU6\nYWxpY2U=\n334-{}\n334 UGFzc3dvcmQ6\n{phrase}",
                    "x".repeat(300)
                ),
                phrase,
            ),
            (format!("AUTH XOAUTH2 {xoauth}"), xoauth),
            // (Review 73: `auth` in a log's prefix is no `AUTH` command; `password:`.)
            (
                format!(
                    "[smtp] C: AUTH LOGIN\n[smtp-auth] S: 334 UGFzc3dvcmQ6\n[smtp-auth] C: {password}"
                ),
                password,
            ),
            (
                format!("AUTH LOGIN\n334 cGFzc3dvcmQ6\n{password}"),
                password,
            ),
            // (Python's `smtplib`, the server's reply printed twice.)
            (
                format!(
                    "send: 'AUTH LOGIN YWxpY2U=\\r\\n'\nreply: b'334 UGFzc3dvcmQ6\\r\\n'\n\
                     reply: retcode (334); Msg: b'UGFzc3dvcmQ6'\nsend: '{password}\\r\\n'"
                ),
                password,
            ),
            // (Dovecot's debug log: a request's id before the mechanism, the response
            // among the parameters after it, or sent after the request, `CONT⇥1⇥…`.)
            (
                format!(
                    "dovecot: auth: Debug: client in: AUTH\t1\tPLAIN\tservice=imap\tsecured\t\
                     session=Xq7dmWqO\tresp={plain}"
                ),
                plain,
            ),
            (
                format!(
                    "auth: Debug: client in: AUTH\t7\tPLAIN\tservice=smtp\n\
                     auth: Debug: client in: CONT\t7\t{plain}"
                ),
                plain,
            ),
            // (Review 79: its tabs copied as blanks, an empty response then `CONT`,
            // OAuth's mechanisms.)
            (
                format!("client in: AUTH    1       PLAIN   service=imap    resp={plain}"),
                plain,
            ),
            (
                format!(
                    "client in: AUTH\t1\tPLAIN\tservice=imap\tresp=\n\
                     client in: CONT\t1\t{plain}"
                ),
                plain,
            ),
            (
                format!("client in: AUTH\t1\tXOAUTH2\tservice=imap\tresp={xoauth}"),
                xoauth,
            ),
            // (Its tabs as rsyslog escapes them in /var/log/mail.log, `#011`; one alone is
            // no escape, a password's, review 87.)
            (
                format!(
                    "Jan  5 10:00:00 mx dovecot: auth: Debug: client in: \
                     AUTH#0111#011PLAIN#011service=imap#011resp={plain}"
                ),
                plain,
            ),
            (
                "DB_PASSWORD=Summer#0112024!xQ".to_owned(),
                "Summer#0112024!xQ",
            ),
            // (Review 88: one in a password where the line's fields are escaped too; the
            // line is read both ways.)
            (
                "Dec  7 10:00:01 host app[1]: user=bob#011password=Summer#0112024!".to_owned(),
                "Summer#0112024!",
            ),
            (
                "Dec  7 10:00:01 host app[1]: a#011b#011api_key=sk_live_51H8#0113xYzAbCdEfGhIjKl"
                    .to_owned(),
                "sk_live_51H8#0113xYzAbCdEfGhIjKl",
            ),
        ] {
            finds_and_redacts(&d, &text, &[want]);
        }
        for text in [
            "The server supports AUTH PLAIN and AUTH LOGIN.",
            "AUTH PLAIN is a SASL mechanism, see RFC 4616",
            // (Base64 of another text; no password's prompt; the prompt after another
            // `AUTH`.)
            "AUTH PLAIN dGVzdA==",
            "AUTH LOGIN\n334 VXNlcm5hbWU6\nYWxpY2U=",
            "AUTH LOGIN\nAUTH x\n334 UGFzc3dvcmQ6\nYWxpY2U=",
            // (Another `AUTH` inside the mechanism's word, found by a fuzz: a panic in the
            // first build.)
            "AUTH PAUTH PLAIN AUTHx",
            // (Review 73: placeholders, `password` encoded.)
            "AUTH LOGIN\n334 VXNlcm5hbWU6\ndXNlcm5hbWU=\n334 UGFzc3dvcmQ6\ncGFzc3dvcmQ=",
            "AUTH PLAIN AGJvYgBwYXNzd29yZA==",
            // (Dovecot's response hidden, as it logs it by default; a placeholder's; a
            // response that is no login's.)
            "auth: Debug: client in: AUTH\t1\tPLAIN\tservice=imap\tresp=<hidden>",
            "auth: Debug: client in: AUTH\t1\tPLAIN\tservice=imap\tresp=AGJvYgBwYXNzd29yZA==",
            "auth: Debug: client in: AUTH\t1\tPLAIN\tservice=imap\tresp=dGVzdA==",
            "AUTH 1 PLAIN is step one; see RFC 4616",
        ] {
            assert_eq!(d.detect(text), [], "{text}");
        }
        // (Blanks past the reach before the token: nothing read past it.)
        let far = format!("AUTH PLAIN{}{plain}", " ".repeat(400));
        assert_eq!(d.detect(&far), [], "{far}");
    }

    /// A private key's PEM block encoded again in base64 (Kubernetes' `tls.key:
    /// LS0tLS1CRUdJTi…`, a CI variable): every release left it in clear.
    #[test]
    fn private_keys_in_base64_are_secrets() {
        let d = PiiDetector::new();
        // (`-----BEGIN EC PRIVATE KEY-----⏎…` in base64; a certificate's block.)
        let key = "LS0tLS1CRUdJTiBFQyBQUklWQVRFIEtFWS0tLS0tCkxoSzk0RGZwa01IWTQwa1pMdE1tazdqZHV4RnQx\
                   U0FFQTdnamN3eWx0RkVMQm0rZmRKb1ZrSXRvOWtsdGlCamcKNVRVQmlIb3Q0a0t1c3c4eVRDQlFmWlB5\
                   RFZ5V1JXdzVWTnNFdG8waUczSlh6ZVNoSW1NdW5oZHZlT0Qrc1k4VQpaSmtDaUE2RjQzQ3F0bWk1T3I3\
                   NUkrUlZMSkdqRXZ0SkZnPT0KLS0tLS1FTkQgRUMgUFJJVkFURSBLRVktLS0tLQo=";
        let cert = "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCkxoSzk0RGZwa01IWTQwa1pMdE1tazdqZHV4RnQxU0FF\
                    QTdnamN3eWx0RkVMQm0rZmRKb1ZrSXRvOWtsdGlCamcKLS0tLS1FTkQgQ0VSVElGSUNBVEUtLS0tLQo=";
        // (Wrapped at 76 characters, as `base64` writes it.)
        let wrapped = key
            .as_bytes()
            .chunks(76)
            .map(|c| std::str::from_utf8(c).unwrap())
            .collect::<Vec<_>>()
            .join("\n");
        let sixty_four = key.as_bytes()[..256]
            .chunks(64)
            .map(|c| std::str::from_utf8(c).unwrap())
            .collect::<Vec<_>>()
            .join("\n");
        for (text, want) in [
            (format!("tls:\n  crt: {cert}\n  key: {key}\n"), key),
            (
                format!("{{\"data\": {{\"ssh-privatekey\": \"{key}\"}}}}"),
                key,
            ),
            (format!("TLS_KEY={key}"), key),
            (
                format!("$ base64 < key.pem\n{wrapped}\n$ echo done"),
                &wrapped,
            ),
            // (Review 73: a last line of 64 characters, a word after it on the next.)
            (format!("{sixty_four}\nTLS_CERT=x"), &sixty_four),
        ] {
            finds_and_redacts(&d, &text, &[want]);
        }
        // (Wrapped at 60, 72 and 80 characters, as other tools do, and at widths that are
        // no multiple of 4, `base64 -w 62`: every release before this one took none of
        // these, the first line being shorter than 100 characters.)
        for width in [60, 72, 80, 62, 77] {
            let wrapped = key
                .as_bytes()
                .chunks(width)
                .map(|c| std::str::from_utf8(c).unwrap())
                .collect::<Vec<_>>()
                .join("\n");
            finds_and_redacts(&d, &format!("key.b64:\n{wrapped}\n"), &[&wrapped]);
        }
        for text in [
            // (A certificate; the literal over and over; glued after base64, where the
            // encoding does not start.)
            format!("tls.crt: {cert}"),
            "LS0tLS1CRUdJTi".repeat(20),
            format!("x{key}"),
        ] {
            assert_eq!(d.detect(&text), [], "{text}");
        }
    }

    /// A mailbox's or an FTP server's login as clients' debug output prints it: IMAP's
    /// `LOGIN` after its tag and `AUTHENTICATE PLAIN`, POP3's and FTP's `PASS` after
    /// `USER`. Every release left the password in clear.
    #[test]
    fn mail_and_ftp_logins_are_secrets() {
        let d = PiiDetector::new();
        for (text, want) in [
            ("a001 LOGIN bob Tr0ub4dor3x", "Tr0ub4dor3x"),
            (
                "  22:01:03.12 > b'JLLD1 LOGIN bob \"Tr0ub4dor3x\"'",
                "Tr0ub4dor3x",
            ),
            (
                "C: a001 LOGIN bob Tr0ub4dor3x\nS: a001 OK LOGIN completed",
                "Tr0ub4dor3x",
            ),
            ("a001 LOGIN bob \"my pass phrase 22\"", "my pass phrase 22"),
            ("a001 LOGIN \"bob\" \"pa\\\"ss99x\"", "pa\\\"ss99x"),
            (
                "a001 AUTHENTICATE PLAIN\n+\nAGJvYgBUcjB1YjRkb3Izeg==",
                "AGJvYgBUcjB1YjRkb3Izeg==",
            ),
            (
                "A1 AUTHENTICATE PLAIN AGJvYgBUcjB1YjRkb3Izeg==",
                "AGJvYgBUcjB1YjRkb3Izeg==",
            ),
            (
                "*cmd* 'USER bob'\n*resp* '+OK'\n*cmd* 'PASS Tr0ub4dor3x'",
                "Tr0ub4dor3x",
            ),
            (
                "ftp> USER bob\n331 Please specify the password.\nftp> PASS Tr0ub4dor3x",
                "Tr0ub4dor3x",
            ),
            (
                "send: 'USER bob\\r\\n'\nreply: '331 ok\\r\\n'\nsend: 'PASS Tr0ub4dor3x\\r\\n'",
                "Tr0ub4dor3x",
            ),
            (
                "C: USER bob\nS: +OK\nC: PASS Tr0ub4dor3x\nS: +OK",
                "Tr0ub4dor3x",
            ),
            // (Review 77: typed into `openssl s_client`, tutorials' tags, blanks and tabs,
            // a literal's length, timestamped and bracketed logs, a quoted command.)
            ("a1 login bob Xk9mQ2v7pL\n", "Xk9mQ2v7pL"),
            (". login bob Xk9mQ2v7pL\n", "Xk9mQ2v7pL"),
            ("a1\tLOGIN bob  \"Xk9mQ2v7pL\" \n", "Xk9mQ2v7pL"),
            (
                "C: a1 LOGIN bob {10}\nS: + go ahead\nC: Xk9mQ2v7pL\n",
                "Xk9mQ2v7pL",
            ),
            ("1714550000.123456 a1 LOGIN bob Xk9mQ2v7pL\n", "Xk9mQ2v7pL"),
            (
                "[12:00:00] USER bob\n[12:00:00] PASS  Xk9mQ2v7pL\n",
                "Xk9mQ2v7pL",
            ),
            (
                "(echo \"USER bob\"; echo \"PASS Xk9mQ2v7pL\"; sleep 1) | nc mail 110",
                "Xk9mQ2v7pL",
            ),
            ("$w.WriteLine(\"a1 LOGIN bob Xk9mQ2v7pL\")", "Xk9mQ2v7pL"),
            // (No `USER` in the text, the server's replies around `PASS`: FTP's `331`
            // before it, its `230`/`530` or POP3's `+OK`/`-ERR` after it.)
            (
                "331 Password required for bob\nPASS Xk9mQ2v7pL\n230 Logged in",
                "Xk9mQ2v7pL",
            ),
            ("> PASS Xk9mQ2v7pL\n< +OK Logged in.", "Xk9mQ2v7pL"),
            ("---> PASS Xk9mQ2v7pL\r\n530 Login incorrect.", "Xk9mQ2v7pL"),
            ("C: PASS Xk9mQ2v7pL\nS: -ERR [AUTH] failed", "Xk9mQ2v7pL"),
            // (Review 86: a blank line between, a time's prefix, poplib's debug output.)
            ("PASS Xk9mQ2v7pL\n\n230 Logged in", "Xk9mQ2v7pL"),
            (
                "[10:00:01] 331 Password required\n[10:00:01] PASS Xk9mQ2v7pL",
                "Xk9mQ2v7pL",
            ),
            (
                "*cmd* 'PASS Xk9mQ2v7pL'\n*resp* b'+OK Logged in.'",
                "Xk9mQ2v7pL",
            ),
            // (Review 88: FileZilla's labels.)
            (
                "Command:\tPASS Xk9mQ2v7pL\nResponse:\t230 Login successful.",
                "Xk9mQ2v7pL",
            ),
            // (Pure-FTPd's, qpopper's and Cyrus's replies.)
            (
                "PASS Xk9mQ2v7pL\n230 OK. Current restricted directory is /",
                "Xk9mQ2v7pL",
            ),
            (
                "PASS Xk9mQ2v7pL\n+OK bob has 2 visible messages (0 hidden) in 4567 octets.",
                "Xk9mQ2v7pL",
            ),
            (
                "PASS Xk9mQ2v7pL\n+OK Mailbox locked and ready",
                "Xk9mQ2v7pL",
            ),
            // (Review 89: access granted, authenticated.)
            // (Review 90: not after a count's words, nor `OK.` but Pure-FTPd's phrase — see
            // the list below.)
            ("PASS Xk9mQ2v7pL\n230 Access granted.", "Xk9mQ2v7pL"),
            (
                "PASS Xk9mQ2v7pL\n230 Anonymous access granted, restrictions apply",
                "Xk9mQ2v7pL",
            ),
            ("PASS Xk9mQ2v7pL\n+OK Authenticated", "Xk9mQ2v7pL"),
        ] {
            finds_and_redacts(&d, text, &[want]);
        }
        for text in [
            // (No `USER` before it: prose, a test runner's; a mask, a variable; no tag, a
            // tag with no digit, more after the password, a placeholder; IMAP's literal.)
            "PASS Tr0ub4dor3x",
            "PASS  src/app.test.js\nPASS  src/login.test.js (5.1 s)",
            "USER guide\nPASS the salt",
            "USER bob\nPASS ****",
            "USER bob\nPASS $FTP_PASSWORD",
            // (Replies that are no server's: a count, a step's number, a word.)
            "PASS src/app.test.js\n230 tests passed",
            "Step 331 done\nPASS Xk9mQ2v7pL",
            "PASS Xk9mQ2v7pL\n+OKAY",
            "PASS Xk9mQ2v7pL\n2300 items",
            // (Review 86: a test's code frame, a table's row, a count and a word.)
            "    > 331 |     expect(res.status).toBe(200);\nPASS  LoginSpec2",
            "| 331 | widgets |\nPASS Widgets2024",
            "Step 2: 331 items\nPASS Xk9mQ2v7pL",
            // (Review 87: counts after a test's PASS.)
            "PASS Test42\n230 assertions, 0 failures",
            "[10:00:01] PASS Build7\n[10:00:02] 230 files uploaded",
            "PASS smoke_test_3\n+OK all green",
            // (Review 88: a login's words inside others.)
            "PASS spec42a\n230 passwords hashed in 2s",
            "PASS spec42a\n230 users migrated",
            "PASS spec42a\n+OK 12 mailboxes synced",
            "PASS spec42a\n230 directories scanned",
            // (Review 89: one of a reply's words alone after a test's name.)
            "PASS spec42a\n230 files in directory",
            "PASS test_quota_a1\n+OK 320 octets",
            "PASS ok_case_1\n+OK mailbox",
            "PASS case_17b\n230 OK. 17 assertions",
            "PASS spec42a\n230 passed; access granted to all fixtures",
            "PASS test_grant_1\n-ERR permission not granted",
            "PASS spec42a\n-ERR authz cache cold",
            "PASS spec42a\n\n530 tests failed for user model",
            "a001 LOGIN bob {8}",
            "Step 3 LOGIN with your account and password1",
            "1 LOGIN bob Tr0ub4dor3x extra",
            "a001 LOGIN bob password",
            "AUTHENTICATE PLAIN AUTHENTICATE PLAIN\n",
            // (Review 78: `login` in prose, commit messages, comments; an audit log's and
            // SQL's `LOGIN` after a word; a line of prose as a literal's password.)
            "Users can login via OAuth2\n",
            "Failed to login as admin1\n",
            "- Fixed admin login on Safari17\n",
            "// TODO: handle login via SAML2\n",
            "docker login user Passw0rd9\n",
            "USER LOGIN alice b7Xk2pQ9\n",
            "GO\nALTER LOGIN sa1 WITH2\n",
            "A LOGIN B {10}\nSome prose\nmore prose\n",
        ] {
            assert_eq!(d.detect(text), [], "{text}");
        }
    }

    /// What two-factor sign-in's setup shows once: a one-time password's key after `setup
    /// key` (`Setup key: JBSW Y3DP EHPK 3PXP`), the emergency scratch codes Google's PAM
    /// module prints. Every release left them in clear.
    #[test]
    fn two_factor_setup_secrets_are_secrets() {
        let d = PiiDetector::new();
        for (text, want) in [
            ("Setup key: JBSW Y3DP EHPK 3PXP", "JBSW Y3DP EHPK 3PXP"),
            ("Your setup key is jbswy3dpehpk3pxp.", "jbswy3dpehpk3pxp"),
            (
                "Can't scan? Use this setup key: `KZXW 4YLM NBQX A5DD`",
                "KZXW 4YLM NBQX A5DD",
            ),
            ("SETUP KEY = \"JBSWY3DPEHPK3PXP\"", "JBSWY3DPEHPK3PXP"),
            ("Setup Key\nJBSW Y3DP EHPK 3PXP", "JBSW Y3DP EHPK 3PXP"),
            (
                "Your emergency scratch codes are:\n  47625813\n  90318274\n  56102938",
                "47625813\n  90318274\n  56102938",
            ),
            (
                "Scratch codes: 47625813 90318274 56102938",
                "47625813 90318274 56102938",
            ),
            // (Review 77: a word or a remark before the colon; groups joined by dashes.)
            (
                "Enter this setup key instead: JBSW Y3DP EHPK 3PXP",
                "JBSW Y3DP EHPK 3PXP",
            ),
            (
                "Setup key (time based): 4JQK-7XLA-MZ2P-QRST",
                "4JQK-7XLA-MZ2P-QRST",
            ),
            // The other names services give it: Google Authenticator's form (`Your
            // key`), `Enter this key instead`, Facebook's `enter this code into your
            // authentication app`, `Manual entry key`, Discord's `2FA Key (Manual entry)`.
            (
                "Account name: alice\nYour key: kzxw 4ylm nbqx a5dd\nType of key: Time based",
                "kzxw 4ylm nbqx a5dd",
            ),
            (
                "Can't scan the QR code? Enter this key instead: JBSW Y3DP EHPK 3PXP",
                "JBSW Y3DP EHPK 3PXP",
            ),
            (
                "Or enter this code into your authentication app: KZXW 4YLM NBQX A5DD",
                "KZXW 4YLM NBQX A5DD",
            ),
            ("Manual entry key: JBSWY3DPEHPK3PXP", "JBSWY3DPEHPK3PXP"),
            ("Manual entry code: JBSWY3DPEHPK3PXP", "JBSWY3DPEHPK3PXP"),
            (
                "2FA Key (Manual entry): jbsw y3dp ehpk 3pxp",
                "jbsw y3dp ehpk 3pxp",
            ),
            ("your key is JBSWY3DPEHPK3PXP", "JBSWY3DPEHPK3PXP"),
            // (Review 79: setup screens' capitalised labels; digits and dashes in the words
            // before the colon.)
            ("Your Key: KZXW 4YLM NBQX A5DD", "KZXW 4YLM NBQX A5DD"),
            ("Manual Entry Key: JBSWY3DPEHPK3PXP", "JBSWY3DPEHPK3PXP"),
            ("Authenticator key: JBSWY3DPEHPK3PXP", "JBSWY3DPEHPK3PXP"),
            ("YOUR KEY: JBSWY3DPEHPK3PXP", "JBSWY3DPEHPK3PXP"),
            ("Authenticator Key: JBSWY3DPEHPK3PXP", "JBSWY3DPEHPK3PXP"),
            (
                "Or enter this code into your two-factor app: KZXW 4YLM NBQX A5DD",
                "KZXW 4YLM NBQX A5DD",
            ),
        ] {
            finds_and_redacts(&d, text, &[want]);
        }
        for text in [
            // (Prose about them; a placeholder; the alphabet; a count; the name glued.)
            "setup keys are rotated every 90 days",
            "Enter the setup key shown in the app",
            "setup key: THIS WILL BE SHOWN ONCE",
            "setup key: AAAA BBBB CCCC 2222",
            "setup key: ABCDEFGHIJKLMNOP23",
            "the scratch codes are stored in ~/.google_authenticator",
            "emergency scratch codes: 5 left",
            "mysetup key: JBSWY3DPEHPK3PXP",
            "setup keyJBSWY3DPEHPK3PXP",
            // (Prose under the other names: more than six words before the colon, no key
            // after it, a name glued to a word.)
            "Your key expires in 30 days: renew it at https://example.com",
            "This key is used for signing: SIGNINGKEYNAME",
            "this code: ABCDEFGHIJKLMNOP23",
            "Your keyboard layout: QWERTYUIOPASDFGH2",
            "rotate this key: it leaked",
            "Run this code:\nprint('hi')",
            "Use this code from the authenticator app on your phone now: JBSWY3DPEHPK3PXP",
            // (Review 79: after the names weaker than `setup key`, hex (a cache's key),
            // names made of words, a length no key has.)
            "this key: 3fa2b4c6d7e5a2f3; cache under this key: 5f3e2d4c6b7a2e3f",
            "Note: your key: sha256withrsaencryption",
            "your key = route53hostedzone; your key = gpt4turbopreview",
            "your key = HTTP2STREAMWINDOWSIZE; this key (primary): ORDERS2CUSTOMERS",
            "this key looks like this: AKIA2EXAMPLE7KEYS",
        ] {
            assert_eq!(d.detect(text), [], "{text}");
        }
    }

    /// Three backslashes before `n` in a JSON string are read both ways: as one break (a
    /// key's lines joined so) and as a backslash and the break (a shell's line continued):
    /// what either reading finds is found (review 79: the second reading alone lost a key
    /// whose lines ended with a blank; the first alone, the options after a continuation).
    #[test]
    fn json_escaped_continuations_are_read_both_ways() {
        let d = PiiDetector::new();
        let e = r"\\\n";
        let body = "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW";
        let key = format!(
            "-----BEGIN OPENSSH PRIVATE KEY----- {e}{body} {e}{body} {e}\
             -----END OPENSSH PRIVATE KEY-----"
        );
        for (text, want) in [
            (
                format!(r#"{{"cmd": "mysql -u root{e}  -pS3cr3tPw99 db"}}"#),
                "S3cr3tPw99",
            ),
            (
                format!(r#"{{"cmd": "mysql -u root {e}  -pS3cr3tPw99 db"}}"#),
                "S3cr3tPw99",
            ),
            (format!(r#"{{"cmd": "echo \"{key}\" > id"}}"#), key.as_str()),
            (format!("setup key {e}JBSWY3DPEHPK3PXP"), "JBSWY3DPEHPK3PXP"),
        ] {
            finds_and_redacts(&d, &text, &[want]);
        }
    }

    /// Keys AI services and agents' tools issue, found by their prefixes and lengths, and
    /// an Azure storage account's key in its connection string: every release left them
    /// in clear (an agent's tools print them bare: a `.env` shown, a config echoed).
    #[test]
    fn ai_services_keys_are_secrets() {
        let d = PiiDetector::new();
        let mixed = |n: usize| {
            "Xk9mQ2vL7pRt8sW3Yz1aHb4NcJ6dFg5e"
                .chars()
                .cycle()
                .take(n)
                .collect::<String>()
        };
        let hex = |n: usize| {
            "8f1c2a3b9d0e4f5a7b6c"
                .chars()
                .cycle()
                .take(n)
                .collect::<String>()
        };
        let account = format!("{}==", mixed(86));
        for token in [
            format!("gsk_{}", mixed(52)),
            format!("r8_{}", mixed(37)),
            format!("pplx-{}", mixed(48)),
            format!("tvly-{}", mixed(32)),
            format!("tvly-dev-{}", mixed(32)),
            format!("xai-{}", mixed(80)),
            format!("lsv2_pt_{}_{}", hex(32), hex(10)),
            format!("pcsk_4Xk9m_{}", mixed(63)),
            format!("fc-{}", hex(32)),
            format!("e2b_{}", hex(40)),
            "sk-lf-8f1c2a3b-1d2e-4f5a-9b8c-7d6e5f4a3b2c".to_owned(),
            format!("csk-{}", mixed(48).to_ascii_lowercase()),
            format!("fw_{}", mixed(24)),
            format!("nvapi-{}", mixed(64)),
            format!("bb_live_{}", mixed(27)),
            format!("sk_{}", hex(48)),
        ] {
            for text in [
                format!("here: {token}"),
                format!("{{\"api_key\": \"{token}\"}}"),
            ] {
                finds_and_redacts(&d, &text, &[token.as_str()]);
            }
        }
        let azure = format!(
            "DefaultEndpointsProtocol=https;AccountName=corpstore;AccountKey={account};\
             EndpointSuffix=core.windows.net"
        );
        finds_and_redacts(&d, &azure, &[account.as_str()]);
        // (Review 80: under the other names the CLI and SDKs give it, quoted or not.)
        for text in [
            format!("accountkey={account}"),
            format!("AccountKey = \"{account}\""),
            format!("az storage blob list --account-key {account}"),
            format!("AZURE_STORAGE_KEY={account}"),
            // (Review 81: a JSON object's key, Terraform's and PowerShell's names, a prefix
            // glued to the name.)
            format!("{{\"accountKey\": \"{account}\"}}"),
            format!("azure_storage_account_key = \"{account}\""),
            format!("ARM_ACCESS_KEY={account}"),
            format!("New-AzStorageContext -StorageAccountKey \"{account}\""),
        ] {
            finds_and_redacts(&d, &text, &[account.as_str()]);
        }
        // (Review 80: a key before a path's `/`.)
        let groq = format!("gsk_{}", mixed(52));
        finds_and_redacts(&d, &format!("{groq}/v1"), &[groq.as_str()]);
        // A Telegram bot's token: bare (its id was read as a phone number, the secret
        // after it left in clear), quoted, in its API's URL.
        let bot = format!("7012345678:AAF-{}", mixed(31));
        for text in [
            format!("TELEGRAM_TOKEN: {bot}"),
            format!("bot = Bot(\"{bot}\")"),
            format!("curl https://api.telegram.org/bot{bot}/getMe"),
            // (Glued to a word: a name's, an URL's capitalised `Bot`.)
            format!("bot{bot}"),
            format!("BOT_TOKEN_{bot}"),
            format!("https://api.telegram.org/Bot{bot}/getMe"),
        ] {
            finds_and_redacts(&d, &text, &[bot.as_str()]);
        }
        for text in [
            // (Placeholders, runs in a row, a length no key has, a token glued to more,
            // words that start so.)
            format!("gsk_{}", "X".repeat(52)),
            format!("sk_{}", "0123456789abcdef".repeat(3)),
            format!("fc-{}", "0".repeat(32)),
            format!("xai-{}", mixed(79)),
            format!("gsk_{}x", mixed(52)),
            "the fc-barcelona match; tvly-YOUR_API_KEY; r8_abc".to_owned(),
            format!("https://api.telegram.org/bot{bot}-x/getMe"),
            // (Review 80: a name made of words, a hashed file's name, a body that repeats
            // a short run.)
            "fw_FirmwareUpdateV2Release1".to_owned(),
            "path /static/fc-3f9a2b7c4d5e6f708192a3b4c5d6e7f8".to_owned(),
            format!("gsk_{}abcdefg", "GroqSDKv1".repeat(5)),
            // (An id glued to a digit before it: eleven digits are no bot's id.)
            format!("x1{bot}"),
            // (An npm lock file's integrity: 88 characters of base64 with no key's name.)
            format!("\"integrity\": \"sha512-{account}\""),
        ] {
            assert_eq!(d.detect(&text), [], "{text}");
        }
    }

    /// A Solana keypair's secret key: its 64 bytes as the keypair's file holds them
    /// (`cat ~/.config/solana/id.json`) and as calls take them (`Keypair.fromSecretKey(…)`,
    /// `Keypair::from_bytes(…)`, in Base58 to `from_base58_string`): every release left
    /// them in clear.
    #[test]
    fn solana_keypairs_are_secrets() {
        let d = PiiDetector::new();
        let bytes = "103,97,51,153,45,58,63,34,194,22,64,186,98,135,175,179,137,22,240,159,125,\
                     51,107,184,156,150,55,202,230,201,95,210,99,220,174,54,38,118,169,45,217,\
                     145,86,21,242,183,135,173,198,22,120,80,103,10,68,142,1,108,52,92,253,238,\
                     136,20";
        let spaced = bytes.replace(',', ", ");
        let pretty = bytes.replace(',', ",\n  ");
        let seed: Vec<&str> = bytes.split(',').take(32).collect();
        let hex: Vec<String> = seed
            .iter()
            .map(|n| format!("0x{:02x}", n.parse::<u8>().unwrap()))
            .collect();
        let base58 = "34t2GwobHydjC5hX7iVGxUr1voDSqAXqTLgwqL45GopKupvi43wFabdk8Vk3zokjJZTQVWNGNXH1u8EBDaXGPsWT";
        for (text, want) in [
            (format!("$ cat ~/.config/solana/id.json\n[{bytes}]"), bytes),
            (
                format!("cat ~/.config/solana/id.json\n[\n  {pretty}\n]"),
                &pretty,
            ),
            (
                format!("Keypair.fromSecretKey(Uint8Array.from([{bytes}]))"),
                bytes,
            ),
            (
                format!("Keypair.fromSecretKey(\n  new Uint8Array([{spaced}])\n)"),
                &spaced,
            ),
            (
                format!("Keypair.fromSecretKey(bs58.decode(\"{base58}\"))"),
                base58,
            ),
            (format!("Keypair.from_base58_string('{base58}')"), base58),
            (format!("Keypair.from_bytes([{bytes}])"), bytes),
            (format!("Keypair::from_bytes(&[{spaced}])?"), &spaced),
            (format!("Keypair::from_bytes(&vec![{bytes}])"), bytes),
            (
                format!("$ cat target/deploy/app-keypair.json\n[{bytes}]"),
                bytes,
            ),
            // (Review 86: a tool call's JSON, rustfmt's last comma, `JSON.parse`, more
            // calls, another path to `id.json`.)
            (
                format!("{{\"code\": \"Keypair.fromSecretKey(bs58.decode(\\\"{base58}\\\"))\"}}"),
                base58,
            ),
            (
                format!("Keypair::from_bytes(&[\n    {pretty},\n])"),
                &pretty,
            ),
            (
                format!("Keypair.fromSecretKey(Uint8Array.from(JSON.parse('[{bytes}]')))"),
                bytes,
            ),
            (format!("Keypair.from_json('[{bytes}]')"), bytes),
            (format!("Keypair.from_secret_key(bytes([{bytes}]))"), bytes),
            (
                format!("solana.MustPrivateKeyFromBase58(\"{base58}\")"),
                base58,
            ),
            (
                format!("PS> type $HOME\\.config\\solana\\id.json\n[{bytes}]"),
                bytes,
            ),
            // (A `.env`'s array, Rust's `u8`, the name's line, a seed.)
            (format!("SOLANA_PRIVATE_KEY=[{bytes}]"), bytes),
            (format!("PRIVATE_KEY=\"[{spaced}]\""), &spaced),
            (
                format!("Keypair::from_bytes(&[{}])", bytes.replacen(',', "u8,", 1)),
                &bytes.replacen(',', "u8,", 1),
            ),
            (format!("keypair.json: [{bytes}]"), bytes),
            (
                format!("Keypair.fromSeed(Uint8Array.from([{}]))", seed.join(",")),
                &seed.join(","),
            ),
            // (Under a name for a secret, before any call: a variable, a JSON key, Rust's
            // typed array, a wrapper's call, a seed's or a symmetric key's 32 bytes.)
            (format!("const secret = [{spaced}];"), &spaced),
            (format!("{{\"secretKey\": [{bytes}]}}"), bytes),
            (format!("let secret_key: [u8; 64] = [{spaced}];"), &spaced),
            (
                format!("const secretKey = new Uint8Array([{bytes}]);"),
                bytes,
            ),
            (format!("private_key: vec![{bytes}],"), bytes),
            (
                format!("SECRET_KEY = bytes([{}])", seed.join(", ")),
                &seed.join(", "),
            ),
            // (Review 89: types before the `=` — TypeScript's, Python's, Rust's others —,
            // Go's and Java's braces, `Uint8Array.of(…)`.)
            (
                format!("const secretKey: Uint8Array = new Uint8Array([{spaced}]);"),
                &spaced,
            ),
            (format!("const secretKey: number[] = [{bytes}];"), bytes),
            (format!("SECRET_KEY: bytes = bytes([{spaced}])"), &spaced),
            (format!("static SECRET_KEY: &[u8] = &[{bytes}];"), bytes),
            (format!("secret_key: Vec<u8> = vec![{bytes}],"), bytes),
            (format!("secretKey := []byte{{{spaced}}}"), &spaced),
            (format!("byte[] secretKey = new byte[] {{{bytes}}};"), bytes),
            (
                format!("const secretKey = Uint8Array.of({spaced});"),
                &spaced,
            ),
            // (Review 90: Node's print of a keypair's key, bytes in hex.)
            (
                format!(
                    "secretKey: Uint8Array(64) [\n  {}\n]",
                    bytes.replace(',', ",\n  ")
                ),
                &bytes.replace(',', ",\n  "),
            ),
            (format!("privateKey: [{}]", hex.join(", ")), &hex.join(", ")),
        ] {
            finds_and_redacts(&d, &text, &[want]);
        }
        let in_a_row: Vec<String> = (0..64).map(|n| n.to_string()).collect();
        // (A seed of 64 bytes. One of 32 to a call that takes 64 is still a key's bytes
        // under a secret's name, `SecretKey(`.)
        assert_eq!(
            d.detect(&format!("Keypair.fromSeed(Uint8Array.from([{bytes}]))")),
            []
        );
        finds_and_redacts(
            &d,
            &format!(
                "Keypair.fromSecretKey(Uint8Array.from([{}]))",
                seed.join(",")
            ),
            &[&seed.join(",")],
        );
        let cut: Vec<&str> = bytes.split(',').take(63).collect();
        for text in [
            // (A variable, a file read; zeros, bytes in a row, 63 bytes, a number past
            // 255, a key cut short; an array with no name before it; the array four lines
            // past the file's name.)
            "Keypair.fromSecretKey(secretKey)".to_owned(),
            "Keypair.fromSecretKey(Uint8Array.from(JSON.parse(fs.readFileSync(p))))".to_owned(),
            format!("cat ~/.config/solana/id.json\n[{}]", ["0"; 64].join(",")),
            format!("cat ~/.config/solana/id.json\n[{}]", in_a_row.join(",")),
            format!("cat ~/.config/solana/id.json\n[{}]", cut.join(",")),
            format!("cat ~/.config/solana/id.json\n[{},256]", cut.join(",")),
            format!("Keypair.from_base58_string('{}')", &base58[..60]),
            format!("[{bytes}]"),
            format!("keypair.json holds the bytes:\n1\n2\n3\n[{bytes}]"),
            // (Review 86: a signature's bytes printed after the public key; a word glued
            // before `id.json`.)
            format!(
                "$ solana-keygen pubkey ~/.config/solana/id.json\n9xQeWvG816bUx9EPjHmaT23yvVM2\n\n[{bytes}]"
            ),
            format!("$ cat /tmp/paid.json\n[{bytes}]"),
            // (Under a secret's name: sizes, bytes in a row, zeros, 65 numbers; a name that
            // is no secret's.)
            "secret_sizes = [64, 128, 256]".to_owned(),
            format!("password = [{}]", in_a_row.join(", ")),
            format!("token = [{}]", ["0"; 64].join(", ")),
            format!("secret = [{bytes},7]"),
            format!("let key = [{bytes}];"),
            // (Review 89: numbers that are no key's — small ones, steps of one size, a
            // sorted sample — and a tokenizer's under `token`.)
            format!(
                "secret: [{}]",
                (0..32)
                    .map(|n| (n * 7 % 40).to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            format!(
                "secret = [{}]",
                (0..64)
                    .map(|n| (n * 4).to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            format!(
                "secret = [{}]",
                (0..64)
                    .map(|n| (n * 37 % 256).to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            format!("secret = [{}]", {
                let mut sorted: Vec<u32> = bytes.split(',').map(|n| n.parse().unwrap()).collect();
                sorted.sort_unstable();
                sorted
                    .iter()
                    .map(u32::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            }),
            format!("tokenizer.decode(token=[{bytes}])"),
        ] {
            assert_eq!(d.detect(&text), [], "{text}");
        }
    }

    /// A bare value stops at a control character: a process's environment as
    /// `/proc/…/environ` holds it, its variables between NULs (the span ran over the next
    /// variable).
    #[test]
    fn a_bare_value_stops_at_a_control_character() {
        let d = PiiDetector::new();
        finds_and_redacts(
            &d,
            "DB_USER=bob\0DB_PASSWORD=Xk9mQ2v7pLw4\0PATH=/bin\0",
            &["Xk9mQ2v7pLw4"],
        );
        finds_and_redacts(&d, "export API_KEY=Xk9mQ2v7pLw4\u{1}x", &["Xk9mQ2v7pLw4"]);
    }

    /// A secret a command printed, on the line after its command line, as a terminal or a
    /// tool's result shows it: Vault's `-field=`, AWS's and Google Cloud's and Azure's
    /// CLIs, macOS's keychain, `pass`, 1Password, Docker's secrets, a Kubernetes Secret
    /// decoded, `echo`/`printenv` of a secret's variable, Doppler, Consul, Bitwarden. Every
    /// release left them in clear. Not a command whose output is captured or sent on, one
    /// that prints no secret (`echo $PATH`, `-field=username`), nor an output that is an
    /// error, a prompt, words, a reference or empty.
    #[test]
    fn secrets_commands_print_are_secrets() {
        let d = PiiDetector::new();
        let k = "Xk9mQ2v7pLw4";
        let aws = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzQ7pLw4xZ";
        for (text, want) in [
            (
                format!("$ vault kv get -field=password secret/db\n{k}\n$ "),
                k,
            ),
            (
                format!("$ aws configure get aws_secret_access_key\n{aws}"),
                aws,
            ),
            (
                format!("$ gcloud secrets versions access latest --secret=db\r\n{k}\r\n"),
                k,
            ),
            (
                format!(
                    "$ az keyvault secret show --vault-name kv -n db --query value -o tsv\n{k}"
                ),
                k,
            ),
            (
                format!("$ security find-generic-password -s svc -w\n{k}"),
                k,
            ),
            (
                format!("$ pass show email/work\n{k}\nurl: mail.example.com"),
                k,
            ),
            (format!("$ op read op://Private/db/password\n{k}"), k),
            (format!("$ cat /run/secrets/db_password\n{k}"), k),
            (
                format!(
                    "$ kubectl get secret db -o jsonpath='{{.data.password}}' | base64 -d\n{k}"
                ),
                k,
            ),
            (format!("$ echo $DB_PASSWORD\n{k}"), k),
            (format!("$ echo \"${{API_TOKEN}}\"\n{k}"), k),
            (format!("PS C:\\> echo $env:API_KEY\n{k}"), k),
            (format!("$ printenv STRIPE_SECRET_KEY\n{k}"), k),
            (format!("$ doppler secrets get DB_PASSWORD --plain\n{k}"), k),
            (format!("$ consul kv get app/db/password\n{k}"), k),
            (format!("$ bw get password github\n{k}"), k),
            (format!("$ secret-tool lookup service db\n{k}"), k),
            // (In a tool's result, the line break escaped in its JSON string.)
            (
                format!("{{\"output\": \"$ echo $DB_PASSWORD\\n{k}\\n\"}}"),
                k,
            ),
            // (Review 91: blanks after the output, its colour codes; standard error sent
            // on; AppRole's `secret_id`; a person's password from a command that fetches
            // secrets.)
            (format!("$ echo $DB_PASSWORD\n{k} \n$ "), k),
            (format!("$ printenv API_KEY\n\u{1b}[0m{k}\u{1b}[0m\n"), k),
            (
                format!("$ aws configure get aws_secret_access_key 2>/dev/null\n{aws}\n"),
                aws,
            ),
            (
                format!("$ vault read -field=secret_id auth/approle/role/x/secret-id\n{k}"),
                k,
            ),
            (
                "$ vault kv get -field=password secret/db\nhunter22\n".to_owned(),
                "hunter22",
            ),
        ] {
            finds_and_redacts(&d, &text, &[want]);
        }
        for text in [
            // (Captured, written to a file, piped on; in prose, a code block.)
            "PW=$(vault kv get -field=password secret/db)\nexport PW2".to_owned(),
            "vault kv get -field=password secret/db > /tmp/pw\nchmod600".to_owned(),
            "echo $DB_PASSWORD | docker login --password-stdin\nLogin2".to_owned(),
            format!("Run `echo $DB_PASSWORD` to check it.\n{k}"),
            // (No secret printed: another field, variable or file; base64 of a file.)
            "$ vault kv get -field=username secret/db\nbob_admin42".to_owned(),
            "$ echo $PATH\n/usr/bin:/bin".to_owned(),
            "$ echo $HOME\nbuild42x".to_owned(),
            "$ base64 -d file.txt\nhello123x".to_owned(),
            "$ security find-generic-password -s svc\nkeychain42".to_owned(),
            "$ cat /etc/hostname\nweb42x".to_owned(),
            // (Outputs that are none: empty, an error, a reference, a default's word.)
            "$ echo $DB_PASSWORD\n\n$ ls".to_owned(),
            "$ echo $DB_PASSWORD\nError: variable not set".to_owned(),
            "$ echo $API_KEY\n$API_KEY".to_owned(),
            "$ echo ${DB_PASSWORD:-unset}\nunset".to_owned(),
            "$ printenv API_KEY".to_owned(),
            "$ cat /run/secrets/db_password\ncat: /run/secrets/db_password: No such file"
                .to_owned(),
            // (Review 91: the next prompt, a script's next line — an assignment, a call, a
            // comment, a name with a digit, an identifier — after a variable printed (what
            // `echo` prints must look made by a machine); a person's password there.)
            "root@4f2a9c1b7d3e:/app# printenv API_KEY\nroot@4f2a9c1b7d3e:/app#\n".to_owned(),
            "bob@web-01:~$ echo $API_KEY\nbob@web-01:~$\n".to_owned(),
            "echo $API_KEY\nrc=$?\n".to_owned(),
            "os.system('echo $API_KEY')\nprint(x1)\n".to_owned(),
            "echo $API_KEY\n#4f2a9c1b7d3e\n".to_owned(),
            "echo $API_KEY\nnpm-run-build:v2\n".to_owned(),
            "echo $API_KEY\n550e8400-e29b-41d4-a716-446655440000\n".to_owned(),
            "$ echo $DB_PASSWORD\nhunter22\n".to_owned(),
            // (Review 92: other prompts, a Makefile's target, a file named for a secret
            // decoded, a command's name inside a word.)
            "$ cat /run/secrets/empty\nsh-5.1$\n".to_owned(),
            "\tvault kv get -field=password secret/db\nbuild2:\n".to_owned(),
            "base64 -d secret.b64\nmake-all2\n".to_owned(),
            "$ desktop read profile\nKDE5Plasma\n".to_owned(),
        ] {
            assert_eq!(d.detect(&text), [], "{text}");
        }
    }

    /// HashiCorp Vault's unseal and recovery keys, as `vault operator init` prints them
    /// (as text, as JSON), as the command that takes one gets it, under the names scripts
    /// give them: every release left them in clear.
    #[test]
    fn vault_keys_are_secrets() {
        let d = PiiDetector::new();
        let k1 = "4jYbl2CBIv6SpkKj6Hos9iD32k5RfGkLzlosrrq/JgOm";
        let k2 = "qV8s+Lm3Rz0yTn5Wd2HkXp7Fa9Gc1Jb4Ue6Yo3Ni8Mw=";
        let hex = "e2361b97608122fea4a642a3e87a2cf620f7da4e4517c6916ce5a2cabaafe4cc01";
        for (text, secrets) in [
            (
                format!("Unseal Key 1: {k1}\nUnseal Key 2: {k2}\n\nInitial Root Token: hvs.x"),
                vec![k1, k2],
            ),
            (format!("Recovery Key 3: {k1}"), vec![k1]),
            (format!("Unseal Key 1:\n{k1}"), vec![k1]),
            (format!("vault operator unseal {k1}"), vec![k1]),
            (format!("vault operator unseal -migrate '{k2}'"), vec![k2]),
            (format!("export VAULT_UNSEAL_KEY=\"{k1}\""), vec![k1]),
            (format!("UNSEAL_KEY_1={k1}"), vec![k1]),
            (format!("unseal_key: {hex}"), vec![hex]),
            (format!("unsealKey: '{k1}'"), vec![k1]),
            (format!("the unseal key is {k1}"), vec![k1]),
            // (Review 82: other spellings, numbers and marks; recovery keys' names; the
            // command continued, an option's value apart, the older command.)
            (format!("Unseal key: {k1}"), vec![k1]),
            (format!("UNSEAL KEY 1: {k1}"), vec![k1]),
            (format!("UnsealKey: {k1}"), vec![k1]),
            (format!("--unseal-key={k1}"), vec![k1]),
            (format!("Unseal Key #1: {k1}"), vec![k1]),
            (format!("Unseal Key 1 is: {k1}"), vec![k1]),
            (format!("| Unseal Key 1 | {k1} |"), vec![k1]),
            (format!("os.environ['VAULT_UNSEAL_KEY'] = '{k1}'"), vec![k1]),
            (format!("{{\\\"unseal_key\\\": \\\"{k1}\\\"}}"), vec![k1]),
            (format!("VAULT_RECOVERY_KEY={k1}"), vec![k1]),
            (format!("recoveryKey: {k1}"), vec![k1]),
            (format!("Recovery Key: {k1}"), vec![k1]),
            (format!("Recovery key 1: {k1}"), vec![k1]),
            (format!("vault operator unseal \\\n  {k1}"), vec![k1]),
            (
                format!("vault operator unseal -address http://vault:8200 {k1}"),
                vec![k1],
            ),
            (format!("vault unseal {k2}"), vec![k2]),
            (
                format!("client.sys.submit_unseal_key(key='{k1}')"),
                vec![k1],
            ),
            // (Review 83: more names and spellings, a share's name, a remark, markup, a
            // backtick continuing the command.)
            (format!("the recovery key is {k1}"), vec![k1]),
            (format!("RECOVERY KEY 1: {k1}"), vec![k1]),
            (format!("--recovery-key={k1}"), vec![k1]),
            (format!("Recovery Key = {k1}"), vec![k1]),
            (format!("UNSEAL_KEY_SHARE_1={k1}"), vec![k1]),
            (format!("vault-unseal-0: {k1}"), vec![k1]),
            (format!("Unseal Key\t1:\t{k1}"), vec![k1]),
            (format!("Unseal Key 1 (base64): {k1}"), vec![k1]),
            (format!("<td>Unseal Key 1</td><td>{k1}</td>"), vec![k1]),
            (format!("vault operator unseal `\n  {k1}"), vec![k1]),
            (
                format!("{{\"keys\": [\"{hex}\"], \"keys_base64\": [\"{k1}\"]}}"),
                vec![hex, k1],
            ),
            // (A key the first version took for a word: a run of six small letters.)
            (
                "Unseal Key 1: N4wM52lKhj/JF13chLaF0kTfT81T/c/+orrgzm/YxyaG".to_owned(),
                vec!["N4wM52lKhj/JF13chLaF0kTfT81T/c/+orrgzm/YxyaG"],
            ),
            // (The API's unseal body with its path, before or after it; a Terraform
            // variable's default, on the block's line or after other arguments;
            // `"keys" : [` spaced.)
            (
                format!("curl -X PUT -d '{{\"key\": \"{k1}\"}}' $VAULT_ADDR/v1/sys/unseal"),
                vec![k1],
            ),
            (
                format!("PUT /v1/sys/unseal HTTP/1.1\n\n{{\n  \"key\": \"{k2}\"\n}}"),
                vec![k2],
            ),
            (
                format!("requests.put(f\"{{a}}/v1/sys/unseal\", json={{'key': '{k1}'}})"),
                vec![k1],
            ),
            (
                format!("variable \"unseal_key\" {{ default = \"{k1}\" }}"),
                vec![k1],
            ),
            (
                format!(
                    "variable \"unseal_key\" {{\n  type = string\n  sensitive = true\n  \
                     default = \"{k2}\"\n}}"
                ),
                vec![k2],
            ),
            (
                format!("{{\"keys\" : [\"{hex}\"], \"keys_base64\" : [\"{k1}\"]}}"),
                vec![hex, k1],
            ),
            // (Review 86: a tool call's command in JSON; the share given to the other calls
            // that take one; a description with escaped quotes, four arguments.)
            (
                format!(
                    "{{\"command\": \"curl -X PUT -d '{{\\\"key\\\": \\\"{k1}\\\"}}' \
                     $VAULT_ADDR/v1/sys/unseal\"}}"
                ),
                vec![k1],
            ),
            (
                format!(
                    "curl -X PUT -d '{{\"key\": \"{k2}\", \"nonce\": \"x\"}}' \
                     $VAULT_ADDR/v1/sys/generate-root/update"
                ),
                vec![k2],
            ),
            (
                format!(
                    "Invoke-RestMethod -Method Put -Uri \"$env:VAULT_ADDR/v1/sys/unseal\" \
                     -Body (@{{ key = \"{k1}\" }} | ConvertTo-Json)"
                ),
                vec![k1],
            ),
            (
                format!(
                    "fetch(`${{VAULT_ADDR}}/v1/sys/unseal`, {{ method: 'PUT', \
                     body: JSON.stringify({{ key: '{k2}' }}) }})"
                ),
                vec![k2],
            ),
            (
                format!(
                    "  uri:\n    url: \"{{{{ vault_addr }}}}/v1/sys/unseal\"\n    body:\n      \
                     key: \"{k1}\""
                ),
                vec![k1],
            ),
            (
                format!(
                    "variable \"unseal_key\" {{\n  description = \"the \\\"first\\\" share\"\n  \
                     type = string\n  sensitive = true\n  nullable = false\n  default = \"{k1}\"\n}}"
                ),
                vec![k1],
            ),
        ] {
            finds_and_redacts(&d, &text, &secrets);
        }
        // Lists: YAML's, an item that is no key, keys in a row, the API's `keys_base64`.
        for (text, list) in [
            (
                format!("unseal_keys_b64:\n- {k1}\n- {k2}\nunseal_shares: 2"),
                format!("{k1}\n- {k2}"),
            ),
            (
                format!("\"unseal_keys_b64\": [\"{k1}\", null, \"{k2}\"]"),
                format!("{k1}\", null, \"{k2}"),
            ),
            (format!("UNSEAL_KEYS=\"{k1},{k2}\""), format!("{k1},{k2}")),
            (
                format!("{{\"keys_base64\": [\"{k1}\", \"{k2}\"]}}"),
                format!("{k1}\", \"{k2}"),
            ),
            // (Review 83: `vault operator rekey`'s lines, numbered and bulleted lists,
            // backticks, other separators, nested brackets, Go's slice, Terraform's
            // `tolist`, items indented far.)
            (
                format!("Key 1: {k1}\nKey 2: {k2}\n\nOperation nonce: 1234"),
                format!("{k1}\nKey 2: {k2}"),
            ),
            (
                format!("my unseal keys:\n\n1. {k1}\n2. {k2}\n\nthanks"),
                format!("{k1}\n2. {k2}"),
            ),
            (
                format!("Unseal keys:\n* `{k1}`\n* `{k2}`"),
                format!("{k1}`\n* `{k2}"),
            ),
            (format!("UNSEAL_KEYS={k1};{k2}"), format!("{k1};{k2}")),
            // (Review 84: keys a blank or a break apart, bullets, a rekey's lines after a
            // log's prefix, pretty JSON's hex keys.)
            (format!("Unseal Keys: {k1} {k2}"), format!("{k1} {k2}")),
            (format!("unseal keys:\n{k1}\n{k2}"), format!("{k1}\n{k2}")),
            (
                format!("Unseal keys:\n• {k1}\n• {k2}"),
                format!("{k1}\n• {k2}"),
            ),
            (
                format!("> Key 1: {k1}\n> Key 2: {k2}\n> Operation nonce: x"),
                format!("{k1}\n> Key 2: {k2}"),
            ),
            // (Review 85: syslog's prefix, a time's `Z`, Ansible's lines, the command
            // before the keys.)
            (
                format!(
                    "Jan 12 10:00:00 vault-0 vault[88]: Key 1: {k1}\n\
                     Jan 12 10:00:00 vault-0 vault[88]: Key 2:\t{k2}\nOperation nonce: x"
                ),
                format!("{k1}\nJan 12 10:00:00 vault-0 vault[88]: Key 2:\t{k2}"),
            ),
            (
                format!("2024-05-01T10:00:00Z Key 1: {k1}\n\nVault rekeyed with 1 key shares"),
                k1.to_owned(),
            ),
            (
                format!(
                    "\"stdout_lines\": [\"Key 1: {k1}\", \"Key 2: {k2}\", \"Operation nonce: 1\"]"
                ),
                format!("{k1}\", \"Key 2: {k2}"),
            ),
            (
                format!("$ vault operator rekey -nonce=abc key\nKey 1: {k1}"),
                k1.to_owned(),
            ),
            (
                format!("{{\"keys\": [\"{hex}\"], \"root_token\": \"hvs.abc\"}}"),
                hex.to_owned(),
            ),
            (
                format!("\"keys\": [\n    \"{hex}\"\n  ],\n  \"keys_base64\": []"),
                hex.to_owned(),
            ),
            (
                format!("| unseal_keys | {k1} | {k2} |"),
                format!("{k1} | {k2}"),
            ),
            (
                format!("{{\"unseal_keys_b64\": [[\"{k1}\"], [\"{k2}\"]]}}"),
                format!("{k1}\"], [\"{k2}"),
            ),
            (
                format!("RecoveryKeysB64: []string{{\"{k1}\", \"{k2}\"}}"),
                format!("{k1}\", \"{k2}"),
            ),
            (
                format!("unseal_keys_b64 = tolist([\n  \"{k1}\",\n  \"{k2}\",\n])"),
                format!("{k1}\",\n  \"{k2}"),
            ),
            (
                format!(
                    "\"unseal_keys_b64\": [\n{0}\"{k1}\",\n{0}\"{k2}\"]",
                    " ".repeat(70)
                ),
                format!("{k1}\",\n{}\"{k2}", " ".repeat(70)),
            ),
        ] {
            finds_and_redacts(&d, &text, &[list.as_str()]);
        }
        // `vault operator init -format=json`: each list's keys one detection.
        let json = format!(
            "{{\n  \"unseal_keys_b64\": [\n    \"{k1}\",\n    \"{k2}\"\n  ],\n  \
             \"unseal_keys_hex\": [\"{hex}\"],\n  \"recovery_keys_b64\": [\"{k2}\"]\n}}"
        );
        let found = d.detect(&json);
        let spans: Vec<&str> = found.iter().map(|f| &json[f.start..f.end]).collect();
        assert_eq!(
            spans,
            [
                format!("{k1}\",\n    \"{k2}"),
                hex.to_owned(),
                k2.to_owned()
            ],
            "{json}"
        );
        let (redacted, _) = d.redact(&json);
        for k in [k1, k2, hex] {
            assert!(!redacted.contains(k), "{redacted}");
        }
        for text in [
            // (Prompts, progress, placeholders, variables, a number in a list of settings,
            // BitLocker's key's id, a word glued before the name.)
            "Unseal Key (will be hidden): ".to_owned(),
            "Unseal Progress    1/3".to_owned(),
            "vault operator unseal".to_owned(),
            "vault operator unseal $(cat key1.txt)".to_owned(),
            "Unseal Key 1: <redacted>".to_owned(),
            format!("Unseal Key 1: {}", "A".repeat(44)),
            "Unseal Key 1: abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQR".to_owned(),
            "unseal_key: ${VAULT_UNSEAL_KEY}".to_owned(),
            "unsealKey = os.environ['VAULT_UNSEAL_KEY']".to_owned(),
            "recovery_keys_shares: 5".to_owned(),
            "BitLocker Recovery Key ID: 4A3B2C1D-1234-5678-9ABC-DEF012345678".to_owned(),
            format!("disunseal_key: {k1}"),
            format!("Unseal Key 1⏎{k1}").replace('⏎', "\n"),
            format!("Unseal Key 1: {k1}x_"),
            // (Review 82: a hash's name, placeholders, base64 of text.)
            format!("unseal_key_sha256: {hex}"),
            format!("unsealKeyHash: {k1}"),
            "Unseal Key 1: AbCdEfGhIjKlMnOpQrStUvWxYz0123456789AbCdEfGh".to_owned(),
            format!("Unseal Key 1: {}", "0123456789abcdef".repeat(4)),
            "Unseal Key 1: SGVsbG8gV29ybGQhIFRoaXMgaXMgbm90IGEgc2VjcmV0Lg==".to_owned(),
            "Recovery Key 1 ID: 4A3B2C1D".to_owned(),
            "vault operator unseal -reset".to_owned(),
            // (Review 83: public keys' lists, ids, versions, an encrypted copy, a comment
            // after the command.)
            format!("\"public_keys_base64\": [\"{k1}\"]"),
            format!("recovery_key_id: {k1}"),
            format!("recovery_key_version: {hex}"),
            format!("UnsealKeyEncrypted: {k1}"),
            format!("vault operator unseal -address=https://v:8200 # commit {hex}"),
            "Key 1: value one".to_owned(),
            // (Review 84: `"keys": [` and `Key 1:` with no more of what Vault prints, a
            // type's word before `Key 1:`.)
            format!("{{\"keys\": [\"{hex}\"]}}"),
            format!("{{\"peer\": \"wg0\", \"keys\": [\"{k1}\"]}}"),
            format!("Public Key 1: {k1}"),
            format!("Test vector\nKey 1: {hex}\nData: 4869205468657265"),
            // (Review 85: a test vector's nonce, a page that names Vault, `rekey` in prose,
            // `public_keys_base64` after the API's name.)
            format!("Test vectors\n\nKey 1: {hex}\nnonce: 070000004041424344454647"),
            format!("Release checksums\n\nKey 1: {hex}\n\nSee the Vault integration guide"),
            format!("- Key 1: {hex} (sha256)\nNote: rekey the signing key yearly."),
            format!("{{\"keys\": [\"{k1}\"], \"public_keys_base64\": [\"{k2}\"]}}"),
            // (`"key"` without the unseal's path near: a config's key, a WireGuard peer's;
            // a Terraform variable with no default, or three other arguments before it.)
            format!("{{\"key\": \"{k1}\", \"reset\": false}}"),
            // (Review 86: the path a paragraph away, in a page's or a file's path.)
            format!("PUT /v1/sys/unseal unseals.\n\nCache:\n{{\"key\": \"{k2}\", \"ttl\": 300}}"),
            format!("# see docs/sys/unseal\n{{\"key\": \"{hex}\", \"algo\": \"sha256\"}}"),
            format!("aws s3 cp s3://b/backups/sys/unseal.json .\n{{\"key\": \"{k1}\"}}"),
            format!("GET /v1/sys/unseal-status\n{{\"key\": \"{hex}\", \"etag\": \"x\"}}"),
            format!(
                "{{\"peer\": \"wg0\", \"key\": \"{k2}\"}}\n{}/v1/sys/unseal",
                " ".repeat(600)
            ),
            "variable \"unseal_key\" {\n  type = string\n}".to_owned(),
            format!(
                "variable \"unseal_key\" {{\n  a = 1\n  b = 2\n  c = 3\n  d = 4\n  e = 5\n  \
                 default = \"{k1}\"\n}}"
            ),
        ] {
            assert_eq!(d.detect(&text), [], "{text}");
        }
    }

    /// A symmetric or signing key under a name prose and code give it where no secret's
    /// name stands (`encryption key: 3f9a…`, `FERNET_KEY = "…"`), and a wallet's private
    /// key in the call that takes it (`new Wallet('0x…')`): every release left them in
    /// clear.
    #[test]
    fn keys_under_their_names_and_wallets_keys_are_secrets() {
        let d = PiiDetector::new();
        let h = "4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318";
        let hx = format!("0x{h}");
        let fernet = "q3t6w9zC4FJ7NcRfUjXn2r5u8xADGKaPdSgVkYp3s6v=";
        for (text, want) in [
            (format!("encryption key: {}", &h[..32]), &h[..32]),
            (format!("The master key is {hx}."), hx.as_str()),
            (format!("Signing key:\n  {h}"), h),
            (format!("AES-256 key: {h}"), h),
            (format!("aes_key = '{h}'"), h),
            (format!("APP_AES_KEY={h}"), h),
            (format!("FERNET_KEY={fernet}"), fernet),
            (format!("Fernet key: {fernet}"), fernet),
            (format!("new Wallet('{hx}')"), hx.as_str()),
            (
                format!("const w = new ethers.Wallet(\"{hx}\", provider);"),
                hx.as_str(),
            ),
            (format!("acct = Account.from_key('{hx}')"), hx.as_str()),
            (format!("privateKeyToAccount(`{hx}`)"), hx.as_str()),
            (
                format!("Wallet.fromPrivateKey(Buffer.from('{h}', 'hex'))"),
                h,
            ),
            // (Review 80: other spellings; bytes, `bytes.fromhex(…)`, `Buffer.from(…)`,
            // Laravel's `base64:`; other calls, a bare `0x…`, a keyword, the key on a line
            // of its own.)
            (format!("MASTER KEY: {h}"), h),
            (format!("HMAC_KEY: {h}"), h),
            (format!("symmetric key: {h}"), h),
            (format!("fernet_key = b'{fernet}'"), fernet),
            (format!("aes_key = bytes.fromhex('{h}')"), h),
            (format!("const aesKey = Buffer.from('{h}', 'hex');"), h),
            (format!("APP_KEY=base64:{fernet}"), fernet),
            (format!("crypto.HexToECDSA(\"{h}\")"), h),
            // (Rust's ethers and alloy, web3.js.)
            (format!("LocalWallet::from_str(\"{hx}\")?"), hx.as_str()),
            (format!("PrivateKeySigner::from_str(\"{h}\")"), h),
            (
                format!("web3.eth.accounts.wallet.add('{hx}');"),
                hx.as_str(),
            ),
            // (Review 82: the value a wallet's type is given, parsed.)
            (
                format!("let wallet: LocalWallet = \"{hx}\".parse()?;"),
                hx.as_str(),
            ),
            (
                format!("let signer: PrivateKeySigner = \"{h}\".parse()?;"),
                h,
            ),
            (format!("new ethers.SigningKey('{hx}')"), hx.as_str()),
            (format!("Account.from_key({hx})"), hx.as_str()),
            (format!("Account.from_key(private_key='{hx}')"), hx.as_str()),
            (format!("Account.from_key(\n    '{hx}'\n)"), hx.as_str()),
            (
                format!("Wallet.fromPrivateKey(hexToBytes('{hx}'))"),
                hx.as_str(),
            ),
            // (Review 81: more spellings and wrappers; a bare key before `\r`.)
            (format!("HMAC Key: {h}"), h),
            (format!("symmetric_key = '{h}'"), h),
            (format!("hmac_key = binascii.unhexlify('{h}')"), h),
            (format!("hmac_key = rb'{h}'"), h),
            (format!("let hmac_key = hex!(\"{h}\");"), h),
            (format!("hmac_key = Buffer.from( '{h}', 'hex')"), h),
            (format!("const w = new Wallet({hx}\r\n)"), hx.as_str()),
            (format!("Account.from_key(HexBytes('{hx}'))"), hx.as_str()),
        ] {
            finds_and_redacts(&d, &text, &[want]);
        }
        for text in [
            // (Prose, an algorithm's name, paths, variables, ids, ARNs; a key's id or
            // fingerprint; a PGP block's comment above its body; a test key of zeros; a
            // call glued to a longer name; a hash that is no key's length.)
            "the encryption key is stored in KMS; master keys are rotated yearly".to_owned(),
            "encryption key: AES-256-GCM-with-HKDF-SHA256".to_owned(),
            "signing key: /etc/keys/signing-2024.pem; master key: ${MASTER_KEY}".to_owned(),
            "master key: arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
                .to_owned(),
            "encryption key id: 1234abcd-12ab-34cd-56ef-1234567890ab".to_owned(),
            "Signing key ID: 3AA5C34371567BD2; AES key size: 256".to_owned(),
            "master key = KeyManagementServiceKeyArn2024".to_owned(),
            "Comment: release signing key\n\nmDMETpxYkhYJKwYBBAHaRw8B/NF+TFDsCKFIlY1l6QvyfzKaQn9P"
                .to_owned(),
            "new Wallet(process.env.PRIVATE_KEY)".to_owned(),
            format!("new Wallet('0x{}1')", "0".repeat(63)),
            format!("MyWallet('{hx}')"),
            // (A hash's type, not a wallet's; a wallet's other items.)
            format!("H256::from_str(\"{hx}\")"),
            format!("let wallet: LocalWallet = \"{}\".parse()?;", &hx[..42]),
            // (Review 84: a variable whose name ends so, no type's annotation.)
            format!("const lastTxHashOfWallet = \"{hx}\";"),
            "cart.wallet.add(item)".to_owned(),
            format!("new Wallet('{}')", &h[..40]),
            // (Review 80: a PGP key's fingerprint, a commit's hash, SSH's and minisign's
            // public keys; a cache's `from_key`.)
            "Release signing key: 9DC858229FC7DD38854AE2D88D81803C0EBFCD88".to_owned(),
            format!("signing key: {}", &h[..40]),
            "Signing key: AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl"
                .to_owned(),
            "Signing key: RWQf6LRCGA9i53mlYecO4IzT51TGPpvWucNSCh1CBM0QTaLn73Y7GFO3".to_owned(),
            format!("entry = Cache.from_key('{h}')"),
        ] {
            assert_eq!(d.detect(&text), [], "{text}");
        }
    }

    /// The values a secret store's command sets, under keys that name no secret (`fly
    /// secrets set SESSION=…`, `kubectl create secret generic … --from-literal=foo=…`, `gh
    /// secret set FOO --body …`): every release left them in clear where the key was no
    /// secret's name.
    #[test]
    fn secret_stores_values_are_secrets() {
        let d = PiiDetector::new();
        // (Review 76: sixteen keys, continued over lines; read past 24 words and 1 KiB.)
        let long: String = (0..26)
            .map(|i| format!(" \\\n  --from-literal=k{i}=Xk9qT4mZ2vLp"))
            .collect();
        let text = format!("kubectl create secret generic app{long}");
        let first = text.find("Xk9q").unwrap();
        finds_and_redacts(&d, &text, &[&text[first..]]);
        for (text, want) in [
            (
                "kubectl -n prod create secret generic app --from-literal=foo=Zq8xW2vT7k",
                "Zq8xW2vT7k",
            ),
            (
                "kubectl create secret generic app --from-literal foo=Zq8xW2vT7k \\\n  \
                 --from-literal=\"bar=Yp3nR8sL2w\"",
                "Zq8xW2vT7k \\\n  --from-literal=\"bar=Yp3nR8sL2w",
            ),
            (
                "kubectl create secret generic app --from-literal='foo=Zq8x W2vT7k!'",
                "Zq8x W2vT7k!",
            ),
            ("supabase secrets set STRIPE_KEY=Zq8xW2vT7k", "Zq8xW2vT7k"),
            (
                "npx supabase secrets set FOO=Zq8xW2vT7k BAR=Yp3nR8sL2w",
                "Zq8xW2vT7k BAR=Yp3nR8sL2w",
            ),
            (
                "flyctl secrets set -a app SESSION=\"Zq8xW2vT7k\" --stage",
                "Zq8xW2vT7k",
            ),
            ("infisical secrets set FOO=Zq8xW2vT7k", "Zq8xW2vT7k"),
            (
                "doppler secrets set -p backend -c dev API_TOKEN Zq8xW2vT7k",
                "Zq8xW2vT7k",
            ),
            (
                "dotnet user-secrets set \"Movies:Key\" \"Zq8xW2vT7k\" --project src/App",
                "Zq8xW2vT7k",
            ),
            (
                "gh secret set FOO --env prod --body 'Zq8xW2vT7k'",
                "Zq8xW2vT7k",
            ),
            ("gh secret set FOO -bZq8xW2vT7k", "Zq8xW2vT7k"),
            // (Its value whatever it is, not its standard input: `--body` was given.)
            (
                "echo S3cr3tPw99x | gh secret set API_TOKEN --body other1",
                "other1",
            ),
            ("gh secret set FOO --body=\"Zq8xW2vT7k\"", "Zq8xW2vT7k"),
            (
                "vault kv put -mount=secret app foo=Zq8xW2vT7k",
                "Zq8xW2vT7k",
            ),
            (
                "vault kv patch secret/creds passcode=Zq8xW2vT7k",
                "Zq8xW2vT7k",
            ),
            ("pulumi config set --secret foo Zq8xW2vT7k", "Zq8xW2vT7k"),
            (
                "pulumi config set --path 'db.pw' Zq8xW2vT7k --secret",
                "Zq8xW2vT7k",
            ),
            (
                "pulumi config set-all --plaintext region=us-east-1 --secret foo=Zq8xW2vT7k",
                "Zq8xW2vT7k",
            ),
            (
                "ansible-vault encrypt_string --vault-id prod@prompt 'Zq8xW2vT7k' --name 'foo'",
                "Zq8xW2vT7k",
            ),
            (
                "eas secret:create --scope project --name FOO --value Zq8xW2vT7k",
                "Zq8xW2vT7k",
            ),
            (
                "eas env:create --name FOO --value Zq8xW2vT7k --visibility secret",
                "Zq8xW2vT7k",
            ),
            // (Review 76: continued lines, PowerShell's and cmd.exe's; options that take a
            // value; Azure Container Apps' `--secrets`; a path before `vault`.)
            (
                "kubectl create secret generic app `\n  --from-literal=foo=Xk9qT4mZ2vLp",
                "Xk9qT4mZ2vLp",
            ),
            ("gh secret set FOO ^\n  --body Xk9qT4mZ2vLp", "Xk9qT4mZ2vLp"),
            // (In a JSON string: the shell's `\` escaped, then the break.)
            (
                r#"{"cmd": "fly secrets set \\\n  API=Xk9qT4mZ2vLp"}"#,
                "Xk9qT4mZ2vLp",
            ),
            (
                r#"{"cmd": "kubectl create secret generic x \\\n  --from-literal=api=Xk9qT4mZ2vLp"}"#,
                "Xk9qT4mZ2vLp",
            ),
            (
                "doppler secrets set SESSION Xk9qT4mZ2vLp --visibility masked",
                "Xk9qT4mZ2vLp",
            ),
            (
                "ansible-vault encrypt_string --output out.yml 'Xk9qT4mZ2vLp'",
                "Xk9qT4mZ2vLp",
            ),
            (
                "az containerapp secret set -n app --secrets a=Xk9qT4mZ2vLp b=Rt7wQ3nB8yHs",
                "Xk9qT4mZ2vLp b=Rt7wQ3nB8yHs",
            ),
            (
                "/usr/local/bin/vault kv put secret/app foo=Xk9qT4mZ2vLp",
                "Xk9qT4mZ2vLp",
            ),
            // (Kustomize's generated Secrets: each literal's value, whatever its key.)
            (
                "secretGenerator:\n- name: app\n  literals:\n  - foo=Zq8xW2vT7k\n  \
                 - 'bar=Yp3nR8sL2w' # rotated\n  envs:\n  - .env",
                "Zq8xW2vT7k\n  - 'bar=Yp3nR8sL2w",
            ),
            (
                "  secretGenerator:\n  - name: db\n    literals:\n      - \"k=two words 99\"\n",
                "two words 99",
            ),
            // (In a tool call's JSON, escaped quotes too; in a Markdown code span.)
            (
                "{\"command\": \"fly secrets set FOO=Zq8xW2vT7k\", \"timeout\": 30}",
                "Zq8xW2vT7k",
            ),
            (
                "{\"command\": \"gh secret set FOO --body \\\"Zq8xW2vT7k\\\"\"}",
                "Zq8xW2vT7k",
            ),
            (
                "Run `doppler secrets set FOO Zq8xW2vT7k` first.",
                "Zq8xW2vT7k",
            ),
        ] {
            finds_and_redacts(&d, text, &[want]);
        }
        for text in [
            // (No value: a file's, the standard input's, a variable's, a placeholder.)
            "gh secret set FOO < secret.txt",
            "gh secret set FOO --body-file key.txt",
            "gh secret set FOO --body \"$FOO\"",
            "fly secrets set FOO=$(cat foo.txt) BAR=\"${BAR}\"",
            "kubectl create secret generic app --from-literal=k=${TOKEN}",
            "kubectl create secret generic x --from-literal=password=changeme",
            "fly secrets set FOO=<your-token>",
            "supabase secrets set --env-file ./supabase/.env",
            "vault kv put secret/app foo=@data.json bar=-",
            "echo -n \"$PW\" | ansible-vault encrypt_string --stdin-name 'db_pass'",
            "pulumi config set --secret dbPassword",
            "doppler secrets set API_TOKEN --silent",
            // (Not a store's value: a variable, a ConfigMap, a setting, a plain one.)
            "gh variable set FOO --body Zq8xW2vT7k",
            "kubectl create configmap app --from-literal=foo=Zq8xW2vT7k",
            "pulumi config set aws:region us-east-1",
            "pulumi config set --plaintext --secret x Zq8xW2vT7k",
            "eas env:create --name FOO --value Zq8xW2vT7k --visibility plaintext",
            "git config set user.name bob2",
            // (A ConfigMap's generator; a generator's files; placeholders; a name inside
            // a line.)
            "configMapGenerator:\n- name: app\n  literals:\n  - foo=Zq8xW2vT7k",
            "secretGenerator:\n- name: app\n  files:\n  - key.pem\nconfigMapGenerator:\n\
             - name: cfg\n  literals:\n  - foo=Zq8xW2vT7k",
            "secretGenerator:\n- name: app\n  literals:\n  - password=changeme\n  - K=${TOKEN}",
            "x: secretGenerator:\n- literals:\n  - k=Zq8xW2vT7k",
            // (Review 76: documentation's example values; Consul's `kv`; a function.)
            "fly secrets set KEY1=VALUE1 KEY2=VALUE2",
            "vault kv put secret/foo key1=value1 key2=value2",
            "consul kv put app/config/db host=db-01.internal",
            "result = encrypt_string (payload_v2, key_id=42)",
            // (Not the subcommand: inside a word, or one that goes on.)
            "mykv put foo=Zq8xW2vT7k",
            "xuser-secrets set FOO Zq8xW2vT7k",
            "fly secrets setting FOO=Zq8xW2vT7k",
        ] {
            assert_eq!(d.detect(text), [], "{text}");
        }
    }

    /// A Kubernetes Secret's values (`kubectl get secret -o yaml` and `-o json`, a manifest
    /// written by hand): under keys that name no secret (`DATABASE_URL:`), base64 of one,
    /// every release left them in clear.
    #[test]
    fn kubernetes_secrets_values_are_secrets() {
        let d = PiiDetector::new();
        for (text, want) in [
            (
                "apiVersion: v1\ndata:\n  DATABASE_URL: cG9zdGdyZXM6Ly9hcHA6SHVudGVyMjAyNEBkYjo1NDMy\n  \
                 username: YWRtaW4=\nkind: Secret\nmetadata:\n  name: app\ntype: Opaque",
                "cG9zdGdyZXM6Ly9hcHA6SHVudGVyMjAyNEBkYjo1NDMy\n  username: YWRtaW4=",
            ),
            (
                "apiVersion: v1\ndata:\n  token: dG9rXzEyMw==\nimmutable: true\nkind: Secret\n",
                "dG9rXzEyMw==",
            ),
            (
                "apiVersion: v1\nkind: Secret\nmetadata:\n  name: app\nstringData:\n  \
                 SMTP_URL: smtp://mailer:Hunter2024@mx\n  REGION: eu-west-1\n",
                "smtp://mailer:Hunter2024@mx\n  REGION: eu-west-1",
            ),
            (
                "{\n    \"data\": {\n        \"stripe\": \"c2tfbGl2ZV81MUh4\"\n    },\n    \
                 \"kind\": \"Secret\",\n}",
                "c2tfbGl2ZV81MUh4",
            ),
            (
                "{\"kind\": \"Secret\", \"metadata\": {\"name\": \"x\"}, \"data\": {\"k\": \"dG9r\"}}",
                "dG9r",
            ),
            (
                "apiVersion: v1\nkind: Secret\nstringData:\n  config.json: |\n    {\"pw\": \"x\"}\n\
                 type: Opaque",
                "    {\"pw\": \"x\"}",
            ),
            // (The kind quoted, before the block.)
            (
                "apiVersion: v1\nkind: \"Secret\"\nmetadata:\n  name: db\ndata:\n  foo: WnE4eFcydlQ3aw==",
                "WnE4eFcydlQ3aw==",
            ),
            (
                "kind: 'Secret'\nstringData:\n  foo: Zq8xW2vT7k\n",
                "Zq8xW2vT7k",
            ),
            // (A block as a flow mapping on its line, after the kind or before it; keys and
            // values quoted or not.)
            (
                "kind: Secret\nmetadata: {name: db}\ndata: {app.conf: WnE4eFcydlQ3aw==, \
                 tls.key: 'dG9rXzEyMw=='}\n",
                "WnE4eFcydlQ3aw==, tls.key: 'dG9rXzEyMw==",
            ),
            (
                "apiVersion: v1\ndata: {\"DB_URL\": \"WnE4eFcydlQ3aw==\"}\nkind: Secret\n",
                "WnE4eFcydlQ3aw==",
            ),
            (
                "kind: Secret\nstringData: {blob: Zq8xW2vT7k, user: \"{{ .Values.u }}\"}\n",
                "Zq8xW2vT7k",
            ),
        ] {
            finds_and_redacts(&d, text, &[want]);
        }
        for text in [
            // (A ConfigMap's data; a Secret's templates; another kind; an API's `data`.)
            "apiVersion: v1\ndata:\n  key: dmFsdWU=\nkind: ConfigMap",
            "apiVersion: v1\nkind: Secret\nstringData:\n  password: {{ .Values.password }}\n",
            "apiVersion: v1\nkind: SecretStore\ndata:\n  x: dmFsdWU=",
            "apiVersion: v1\nkind: \"SecretStore\"\ndata:\n  x: dmFsdWU=",
            "  kind: 'Secret' # x\n  data:\n  x: dmFsdWU=",
            "{\"data\": {\"id\": \"1\", \"name\": \"x\"}, \"kind\": \"List\"}",
            // (Review 74: quoted templates, empty values, placeholders, the docs' own
            // example's block; a ConfigMap's data in another snippet after a Secret's
            // kind.)
            "apiVersion: v1\nkind: Secret\nstringData:\n  password: \"{{ .Values.db.password }}\"\n",
            "apiVersion: v1\nkind: Secret\nstringData:\n  DB_URL: \"${DB_URL}\"\n  x: \"\"\n",
            "apiVersion: v1\nkind: Secret\nstringData:\n  token: REPLACE_ME\n  password: changeme\n",
            "apiVersion: v1\nkind: Secret\nstringData:\n  config.yaml: |\n    username: <user>\n",
            "```yaml\nkind: Secret\n```\n\nand a ConfigMap:\n\n```yaml\ndata:\n  mode: production\n```\n",
            // (Flow mappings: a ConfigMap's, a Secret's templates, no base64, not closed.)
            "apiVersion: v1\ndata: {mode: dmFsdWU=}\nkind: ConfigMap",
            "kind: Secret\nstringData: {password: \"{{ .Values.pw }}\"}",
            "kind: Secret\ndata: {a: not base64!}",
            "kind: Secret\ndata: {a: dmFsdWU=",
            "kind: Secret\ndata: {}",
        ] {
            assert_eq!(d.detect(text), [], "{text}");
        }
        // (Review 74: a List's items, indented; compact JSON; a comment, a blank line, a
        // quoted value, a comment after it, a template before it; the manifest at the
        // text's start; an `immutable` member between; a comment after the kind.)
        let p = "aHVudGVyMi1Yazl2UTJtWg==";
        for text in [
            format!(
                "items:\n- apiVersion: v1\n  data:\n    DB_URL: {p}\n  kind: Secret\nkind: List\n"
            ),
            format!(
                "secrets:\n  - apiVersion: v1\n    kind: Secret\n    data:\n      DB_URL: {p}\n"
            ),
            format!(
                "{{\"apiVersion\":\"v1\",\"data\":{{\"DB_URL\":\"{p}\"}},\"kind\":\"Secret\"}}"
            ),
            format!(
                "{{\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"data\":{{\"DB_URL\":\"{p}\"}}}}"
            ),
            format!("kind: Secret\ndata:\n  # database\n\n  DB_URL: {p}\n"),
            format!("kind: Secret\ndata:\n  DB_URL: \"{p}\"\n"),
            format!("kind: Secret\ndata:\n  DB_URL: {p}  # prod\n"),
            format!(
                "kind: Secret\ndata:\n  user: {{{{ .Values.user | b64enc }}}}\n  DB_URL: {p}\n"
            ),
            format!(
                "{{\"data\": {{\"DB_URL\": \"{p}\"}}, \"immutable\": true, \"kind\": \"Secret\"}}"
            ),
            format!("apiVersion: v1\ndata:\n  DB_URL: {p}\nkind: Secret # db\n"),
        ] {
            finds_and_redacts(&d, &text, &[p]);
        }
        // (Review 75: `stringData` in JSON, as `last-applied-configuration` keeps it; a
        // template among a block scalar's lines; escaped quotes.)
        for (text, want) in [
            (
                "  last-applied-configuration: |\n    {\"kind\":\"Secret\",\"metadata\":{\"name\":\"x\"},\
                 \"stringData\":{\"blob\":\"Zq9xK2mPqLw7Rt\"}}\n",
                "Zq9xK2mPqLw7Rt",
            ),
            (
                "kind: Secret\nstringData:\n  app.env: |\n    API_URL=${API_URL}\n    BLOB=Zq9xK2mPq\n",
                "    API_URL=${API_URL}\n    BLOB=Zq9xK2mPq",
            ),
            (
                "kind: Secret\nstringData:\n  blob: \"Zq9x\\\"K2mPqLw7Rt\"\n",
                "Zq9x\\\"K2mPqLw7Rt",
            ),
            (
                "kind: Secret\nstringData:\n  blob: 'Zq9x''K2mPqLw7Rt'\n",
                "Zq9x''K2mPqLw7Rt",
            ),
        ] {
            finds_and_redacts(&d, text, &[want]);
        }
        for text in [
            // (Review 75: a List's next item's ConfigMap after a Secret with no values, in
            // YAML and JSON; SOPS's values; tools' placeholders; placeholder words in
            // base64 and in a block.)
            "items:\n- apiVersion: v1\n  kind: Secret\n  type: x\n- apiVersion: v1\n  data:\n    \
             LEVEL: info\n  kind: ConfigMap\n",
            "{\"items\": [{\"kind\": \"Secret\", \"type\": \"x\"}, {\"data\": {\"LEVEL\": \"info\"}, \
             \"kind\": \"ConfigMap\"}]}",
            "kind: Secret\nstringData:\n  dbconn: ENC[AES256_GCM,data:Tr7o1kq3Qw==,type:str]\n",
            "kind: Secret\nstringData:\n  a: ((db_password))\n  b: vault:secret/db#pw\n  d: __DB_PW__\n",
            "kind: Secret\ndata:\n  user: REDACTED\n  apikey: PASSWORD\n  tok: xxxxxxxx\n",
            "kind: Secret\nstringData:\n  c.yaml: |-\n    username: YOUR_USERNAME\n    password: YOUR_PASSWORD\n",
        ] {
            assert_eq!(d.detect(text), [], "{text}");
        }
        // (Review 74: values read to the bound, which ended inside a character or sliced
        // past it: panics in the first build.)
        let bound = 64 * 1024;
        for text in [
            format!(
                "{{\"data\": {{{}\"k\": \"QUFB\"}}, \"kind\": \"Secret\"}}",
                " ".repeat(bound)
            ),
            format!(
                "{{\"data\": {{\"{}\":\"QUFB\"}}, \"kind\": \"Secret\"}}",
                "k".repeat(bound - 2)
            ),
            format!(
                "{{\"kind\": \"Secret\", \"data\": {{{}\"k\": \"QUFB\"}}}}",
                " ".repeat(bound - 12)
            ),
            format!("kind: Secret\nstringData:\n  k: x{}\n", "é".repeat(40_000)),
            format!(
                "kind: Secret\nstringData:\n  k: |\n    x{}\n",
                "é€".repeat(20_000)
            ),
            // (Review 75: an `immutable` member at the bound, a panic.)
            format!(
                "{{\"data\":{{\"a\":\"{}\"}},\"immutable\":true,\"kind\":\"Secret\"}}{}",
                "A".repeat(65_516),
                " ".repeat(100)
            ),
        ] {
            let _ = d.redact(&text);
            for x in d.detect(&text) {
                assert!(text.is_char_boundary(x.start) && text.is_char_boundary(x.end));
            }
        }
    }

    /// An account's recovery codes after their name (`Your GitHub recovery codes:⏎4f1a2-…`,
    /// `backup codes: 1234 5678, …`): each signs in once without the second factor, and
    /// every release left them in clear.
    #[test]
    fn account_recovery_codes_are_secrets() {
        let d = PiiDetector::new();
        for (text, want) in [
            (
                "Your GitHub recovery codes:\n4f1a2-b3c4d\n9e8d7-c6b5a\n1a2b3-c4d5e",
                "4f1a2-b3c4d\n9e8d7-c6b5a\n1a2b3-c4d5e",
            ),
            (
                "Here are my backup codes: 1234 5678, 9012 3456, 7890 1234",
                "1234 5678, 9012 3456, 7890 1234",
            ),
            (
                "Recovery codes (store them safely):\n1. 4f1a2-b3c4d\n2. 9e8d7-c6b5a",
                "4f1a2-b3c4d\n2. 9e8d7-c6b5a",
            ),
            (
                "\"recoveryCodes\": [\"4f1a2-b3c4d\", \"9e8d7-c6b5a\"]",
                "4f1a2-b3c4d\", \"9e8d7-c6b5a",
            ),
            (
                "backup_codes = ['ab12cd34', 'ef56gh78', 'ij90kl12']",
                "ab12cd34', 'ef56gh78', 'ij90kl12",
            ),
            // (Review 73: codes in a row, not read as pairs; PyPI's sixteen hex digits;
            // bullets, `;`, a table; Google's name.)
            (
                "Recovery codes: a7f3k9q2 m4x8p1z6 t2b9w5r7",
                "a7f3k9q2 m4x8p1z6 t2b9w5r7",
            ),
            (
                "PyPI recovery codes:\n3f7a9c2e1b8d4a60\n9e2b7c4d1a0f3e58",
                "3f7a9c2e1b8d4a60\n9e2b7c4d1a0f3e58",
            ),
            (
                "Recovery codes:\n\n• a7f3k9q2\n• m4x8p1z6",
                "a7f3k9q2\n• m4x8p1z6",
            ),
            ("Recovery codes: a7f3k9q2; m4x8p1z6", "a7f3k9q2; m4x8p1z6"),
            (
                "recovery codes:\n| 1 | a7f3k9q2 |\n| 2 | m4x8p1z6 |",
                "a7f3k9q2 |\n| 2 | m4x8p1z6",
            ),
            (
                "Backup verification codes\n1. 4829 1736\n2. 9017 3365",
                "4829 1736\n2. 9017 3365",
            ),
        ] {
            finds_and_redacts(&d, text, &[want]);
        }
        for text in [
            // (Prose about them; a count; standards' names; dates; one code alone; codes
            // with no name.)
            "Backup codes: see the admin console. Backup codes are single-use codes",
            "Recovery codes: 10 left, regenerate them in settings",
            "recovery codes: RFC6238 and RFC4226 describe them",
            "backup codes: 2024-01-05 2024-02-05",
            "Recovery codes: 4f1a2-b3c4d",
            "- 4f1a2-b3c4d\n- 9e8d7-c6b5a",
            // (Review 73: error codes in hex; identifiers.)
            "backup codes: 0x80070005, 0x80004005, 0x8007045D",
            "backup codes = [\"BKP10023\", \"BKP10024\"]  # job identifiers",
            "recovery_codes: [INC001234, INC001235]",
        ] {
            assert_eq!(d.detect(text), [], "{text}");
        }
    }

    /// A one-time password's key as an authenticator app shows it, in groups (`secret key:
    /// JBSW Y3DP EHPK 3PXP`): its first group alone was judged, and the key left in clear.
    #[test]
    fn one_time_password_keys_in_groups_are_secrets() {
        let d = PiiDetector::new();
        for (text, want) in [
            ("secret key: JBSW Y3DP EHPK 3PXP", "JBSW Y3DP EHPK 3PXP"),
            (
                "Secret: jbsw y3dp ehpk 3pxp kzxw 4ylm nbqx a5dd",
                "jbsw y3dp ehpk 3pxp kzxw 4ylm nbqx a5dd",
            ),
            ("secret: \"JBSW Y3DP EHPK 3PXP\"", "JBSW Y3DP EHPK 3PXP"),
            // (Review 72: a key that starts with a digit.)
            ("Secret Key: 7NHZ 3UPW YPEP 2SGH", "7NHZ 3UPW YPEP 2SGH"),
            (
                "Your secret key: JBSW Y3DP EHPK 3PXP (keep it safe)",
                "JBSW Y3DP EHPK 3PXP",
            ),
        ] {
            finds_and_redacts(&d, text, &[want]);
        }
        for text in [
            // (Prose in capitals; the alphabet; a group glued to more; digits no key has.)
            "secret key: THIS WILL BE SENT",
            "Secret: ABCD EFGH IJKL MNOP",
            "password: JBSW Y3DP EHPK 3PXPQ",
            "token: AB12 CD34 EF56 GH78",
            // (Review 72: a placeholder's few characters; review 73: runs in a row.)
            "secret: AAAA BBBB CCCC 2222",
            "secret key: ABCD 2345 EFGH 6723",
        ] {
            assert_eq!(d.detect(text), [], "{text}");
        }
    }

    /// A Wi-Fi network's QR code holds its password in clear (`WIFI:S:…;T:WPA;P:…;;`, as
    /// phones, `qrencode` and QR generators write one): left in clear on every release.
    #[test]
    fn wifi_qr_codes_passwords_are_secrets() {
        let d = PiiDetector::new();
        for (text, want) in [
            ("WIFI:S:HomeNet;T:WPA;P:hunter22;;", "hunter22"),
            ("WIFI:T:WPA;S:MyNet;P:Xk9mQ2vL7pR;H:false;;", "Xk9mQ2vL7pR"),
            ("WIFI:S:Cafe;T:WPA;P:\"12345678\";;", "12345678"),
            (r"WIFI:S:My\;Net;T:WPA;P:pa\;ss\\word;;", r"pa\;ss\\word"),
            (
                "echo 'WIFI:S:Home;T:WPA;P:Sommer2024!' | qrencode -o wifi.png",
                "Sommer2024!",
            ),
            ("WIFI:S:x;T:SAE;R:1;K:abc;P:Zz9zz9zz;;", "Zz9zz9zz"),
            // (Review 68: escaped again in a JSON string, blanks after the separators, the
            // last field to the quote that opened the payload, a WPA3 key before it.)
            (r#"{"s": "WIFI:S:Home;T:WPA;P:pa\\;ss;;"}"#, r"pa\\;ss"),
            ("WIFI: S:Home; T:WPA; P:hunter22;;", "hunter22"),
            (
                "qrencode -o w.png 'WIFI:S:Home;T:WPA;P:correct horse battery'",
                "correct horse battery",
            ),
        ] {
            finds_and_redacts(&d, text, &[want]);
        }
        let sae = format!("WIFI:T:SAE;S:Home;K:{};P:a2u5-fg4c-zzwk;;", "A".repeat(160));
        finds_and_redacts(&d, &sae, &["a2u5-fg4c-zzwk"]);
        // (The hunting generator's: a value read to the payload's bound ended inside a
        // character.)
        let long = format!("WIFI:S:a;P:{}", "€".repeat(200));
        assert_eq!(d.detect(&long), [], "{long}");
        // (Review 69: two payloads on a line, each to its closing quote; a later `;`; a
        // password in capitals, after a blank, starting with `your` or `@`; `;` inside
        // quotes; an empty field.)
        for (text, want) in [
            (
                r#"["WIFI:S:Home;T:WPA;P:hunter22", "WIFI:S:Guest;T:WPA;P:guest123"]"#,
                &["hunter22", "guest123"][..],
            ),
            (
                "echo 'WIFI:S:Home;T:WPA;P:hunter22' | qrencode -o - ; echo 'ok'",
                &["hunter22"],
            ),
            ("WIFI:S:SKY12345;T:WPA;P:QWERTYUI;;", &["QWERTYUI"]),
            ("WIFI: S:Home; T:WPA; P: hunter22 ;;", &["hunter22"]),
            ("WIFI:S:Home;T:WPA;P:Yourhome2024!;;", &["Yourhome2024!"]),
            ("WIFI:S:Home;T:WPA;P:@sunshine;;", &["@sunshine"]),
            (r#"WIFI:S:"My;Net";T:WPA;P:"hunter;22";;"#, &["hunter;22"]),
            ("WIFI:S:Home;;T:WPA;P:hunter22;;", &["hunter22"]),
            ("'WIFI:S:Home;T:WPA;P:pa'ss'", &["pa'ss"]),
            // (Review 70: JSON's escaped quotes around values holding `;`; a quoted
            // password at the end; a password after code that builds the name; marks of
            // interpolations inside a password; a quote inside one; `@` and a word.)
            (
                r#"{"qr": "WIFI:T:WPA;S:\"My;Net\";P:\"hunter;22\";;"}"#,
                &["hunter;22"],
            ),
            (
                "Scan: WIFI:S:Home;T:WPA;P:\"hunter22\"\nthanks",
                &["hunter22"],
            ),
            (r#""WIFI:S:" + ssid + ";T:WPA;P:hunter22;;""#, &["hunter22"]),
            (
                "WIFI:S:Home;T:WPA;P:Wg45/R%dqT]!#{-oJ;H:false;;",
                &["Wg45/R%dqT]!#{-oJ"],
            ),
            ("qr = 'WIFI:S:Home;T:WPA;P:pa'$$w0rd!';", &["pa'$$w0rd!"]),
            ("WIFI:S:Home;;;;T:WPA;P:@monkeyisland;;", &["@monkeyisland"]),
            // (Review 71: `WIFI:` among an SSID's words; the opener's quote inside the
            // password, `;;` after it; an escaped quote inside a quoted one.)
            ("WIFI:S:Cafe WIFI:Lobby;T:WPA;P:Xk9mQ2vLp;;", &["Xk9mQ2vLp"]),
            (
                "echo 'WIFI:S:Home;T:WPA;P:rock 'n' roll4ever;;'",
                &["rock 'n' roll4ever"],
            ),
            (
                r#"WIFI:S:Home;T:WPA;P:"pa\"ss;word";;"#,
                &[r#"pa\"ss;word"#],
            ),
        ] {
            finds_and_redacts(&d, text, want);
        }
        for text in [
            "WIFI:S:Guest;T:nopass;P:;;",
            "WIFI:S:Guest;T:nopass;;",
            "WIFI:S:Home;T:WPA;P:${WIFI_PASS};;",
            "WIFI:S:Home;T:WPA;P:<password>;;",
            "the WIFI: settings page; WIFI:\nS:x",
            // (Review 68: the code that builds a payload, docs' placeholders, logs.)
            r#"String qr = "WIFI:S:" + ssid + ";T:WPA;P:" + password + ";;";"#,
            "const qr = 'WIFI:S:' + ssid + ';T:WPA;P:' + password + ';;';",
            r#"let qr = "WIFI:S:\(ssid);T:WPA;P:\(password);;""#,
            r#"qr = "WIFI:S:#{ssid};T:WPA;P:#{password};;""#,
            r#"fmt.Sprintf("WIFI:S:%q;T:%v;P:%v;;", ssid, auth, pw)"#,
            "WIFI:S:Home;T:WPA;P:@password;;",
            "Format: WIFI:T:AUTH;S:SSID;P:PASSWORD;H:HIDDEN;;",
            "WIFI:S:your_ssid;T:WPA;P:your_password;;",
            "WIFI:S:Home;T:WPA;P:null;;",
            // (Review 69: code written without blanks, formats, a log's field.)
            "'WIFI:S:'+ssid+';T:WPA;P:'+pw+';;'",
            r#"String.format("WIFI:S:%1$s;T:%2$s;P:%3$s;;", ssid, type, pw)"#,
            r#"WIFI:S:Home;T:WPA;P:".$pw.";;"#,
            r#"ESP_LOGI(TAG, "WIFI:S:%s;P:%s", ssid, pw);"#,
            r"WIFI:S:Home;T:WPA;P:\${password};;",
            "log: WIFI:S:up; P:ok (rssi -40)",
            // (Review 70: quoted placeholders; docs'; a first field no other follows; past
            // the payload's end; one character.)
            r#"WIFI:S:"MyNet";T:WPA;P:"your_password";;"#,
            "WIFI:S:x;T:WPA;P:YOUR_PASSWORD_HERE;;",
            "LOG WIFI:P:enabled ;",
            "WIFI:S:Guest;T:nopass;; P:12345678",
            "'WIFI:S:Home;T:WPA;P:é'",
            "LOG WIFI:P:enabled",
            "[WIFI:P:connected] state changed",
        ] {
            assert_eq!(d.detect(text), [], "{text}");
        }
    }

    /// A key written in hex after a secret's name in prose is one (`My Private Key is
    /// 0x4c08…`, `the api key is 9f86…`): a wallet's private key left in clear on every
    /// release, as hex was taken for a hash's. Not a hash or a commit under their own
    /// names, nor short hex, digits alone or letters alone.
    #[test]
    fn keys_in_hex_after_their_names_in_prose_are_secrets() {
        let d = PiiDetector::new();
        let h = "4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318";
        for (text, want) in [
            (format!("My Private Key is 0x{h}"), format!("0x{h}")),
            (format!("the api key is {h}"), h.to_owned()),
            (format!("the token is {}.", &h[..40]), h[..40].to_owned()),
            (
                format!("the access key is 0x{}", &h[..32]),
                format!("0x{}", &h[..32]),
            ),
            // (`private key` and `secret key` in small letters, names now: review 67.)
            (format!("my private key is 0x{h}"), format!("0x{h}")),
            (format!("the secret key is {h}"), h.to_owned()),
            (format!("the private key is `0x{h}`"), format!("0x{h}")),
        ] {
            finds_and_redacts(&d, &text, &[want.as_str()]);
        }
        for text in [
            format!("the hash is {h}. the commit is {}", &h[..40]),
            format!("the sha256 is {h}"),
            "the api key is 0x1F4A3B2C".to_owned(),
            format!("the api key is {}", "1234567890".repeat(4)),
            format!("the api key is {}", "abcdef".repeat(6)),
            // (Review 67: an Ethereum address, a hash of the secret.)
            "The USDT token is 0xdAC17F958D2ee523a2206206994597C13D831ec7 on Ethereum.".to_owned(),
            "MD5 of the secret is 5f4dcc3b5aa765d61d8327deb882cf99".to_owned(),
            "the private key is stored in the HSM; the secret key is rotated daily".to_owned(),
        ] {
            assert_eq!(d.detect(&text), [], "{text}");
        }
    }

    /// A bare value ends where another field named for a secret is glued on after a list's
    /// separator: each value is found, and the second field's name is read into neither
    /// (review 55: the second value was left in clear).
    #[test]
    fn a_field_glued_after_a_value_is_read_on_its_own() {
        let d = PiiDetector::new();
        for (text, want) in [
            (
                "pw=hunter22,token: Xk9qLm2vR8tQ",
                &["hunter22", "Xk9qLm2vR8tQ"][..],
            ),
            (
                "password=hunter22;password: Zq8rTw2xLk",
                &["hunter22", "Zq8rTw2xLk"],
            ),
            (
                "PW: hunter22|token: Xk9qLm2vR8tQ",
                &["hunter22", "Xk9qLm2vR8tQ"],
            ),
            (
                "passcode=482913&api_key = Xk9qLm2vR8tQ",
                &["482913", "Xk9qLm2vR8tQ"],
            ),
            (
                "passordet=hunter22&contraseña = S3cr3t!",
                &["hunter22", "S3cr3t!"],
            ),
            (
                "?user=bob&password=Xk9qLm2vR8&token=Zq8rTw2xLk9",
                &["Xk9qLm2vR8", "Zq8rTw2xLk9"],
            ),
            ("the pw is hunter22,password: Zq8rTw2xLk", &["Zq8rTw2xLk"]),
            ("ADMIN_PW\tS3cr3t!&user_pw='passcode77'", &["passcode77"]),
            // (A comma inside a password, no field after it: the value whole.)
            ("password=Xk9,abc", &["Xk9,abc"]),
            // (Review 56: the name again after a field glued on; separators in a row.)
            (
                "pw=Xk9mQ2vL7pR,token=Zq8rTw2xLk9,pw=x",
                &["Xk9mQ2vL7pR", "Zq8rTw2xLk9"],
            ),
            (
                "password=Xk9mQ2vL7pR,,token=Zq8rTw2xLk9",
                &["Xk9mQ2vL7pR", "Zq8rTw2xLk9"],
            ),
            // (An index's name and bracket starting a value, not its separator.)
            ("[pass]=\"[pass]Xk9mQ2vL7pR\"", &["[pass]Xk9mQ2vL7pR"]),
            ("x_pw]=\"x_pw]Xk9mQ2vL7pR\"", &["x_pw]Xk9mQ2vL7pR"]),
            // (`_PW` a key in hex or a value with a letter, not a measurement.)
            ("WIFI_PW=0xDEADBEEFCAFE1234", &["0xDEADBEEFCAFE1234"]),
            ("ADMIN_PW=2024A", &["2024A"]),
        ] {
            finds_and_redacts(&d, text, want);
        }
    }

    /// An option named `pass` or `pw` as a word of its name (`--pass`, `--db-pw`,
    /// `--admin_pw`), its value the next argument or after an `=`; not `--bypass`, `--npw`,
    /// nor a value that is no password.
    #[test]
    fn options_named_pass_or_pw_are_secrets() {
        let d = PiiDetector::new();
        for (text, want) in [
            ("cmd --pw Xk9mQ2vL7pR", &["Xk9mQ2vL7pR"][..]),
            ("cmd --pass Xk9mQ2vL7pR", &["Xk9mQ2vL7pR"]),
            ("cmd --db-pass=Xk9mQ2vL7pR", &["Xk9mQ2vL7pR"]),
            ("app --admin_pw Xk9mQ2vL7pR", &["Xk9mQ2vL7pR"]),
            (r#"["--pass", "Xk9mQ2vL7pR"]"#, &["Xk9mQ2vL7pR"]),
        ] {
            finds_and_redacts(&d, text, want);
        }
        for text in [
            "cmd --bypass Xk9mQ2vL7pR; cmd --npw Xk9mQ2vL7pR",
            "cmd --pass 1; cmd --pw $PW; cmd --pass true; ffmpeg -pass 1 out.mp4",
        ] {
            assert_eq!(d.detect(text), [], "{text}");
        }
    }

    /// The positional commands added last: PuTTY's `-pw`, `mkpasswd`, `openssl passwd`,
    /// MinIO's `mc alias set`, Oracle's tools' logons — on a line, in an argument list;
    /// and each without a password: prompts, variables, files, the standard input, prose.
    #[test]
    fn putty_minio_oracle_and_hashing_tools_passwords_are_secrets() {
        let d = PiiDetector::new();
        for (text, want) in [
            (
                "plink.exe -ssh -l bob -pw S3cr3tPw99 host",
                &["S3cr3tPw99"][..],
            ),
            ("pscp -pw \"S3cr3tPw99\" f bob@h:/tmp", &["S3cr3tPw99"]),
            ("psftp bob@h -pw S3cr3tPw99 -b cmds.txt", &["S3cr3tPw99"]),
            (
                "subprocess.run(['plink', '-pw', 'S3cr3tPw99', 'bob@h'])",
                &["S3cr3tPw99"],
            ),
            (
                "mkpasswd -m sha-512 -S saltsalt S3cr3tPw99",
                &["S3cr3tPw99"],
            ),
            ("mkpasswd --method=sha-512 'S3cr3tPw99'", &["S3cr3tPw99"]),
            (
                "[\"mkpasswd\", \"-m\", \"sha-512\", \"S3cr3tPw99\"]",
                &["S3cr3tPw99"],
            ),
            ("openssl passwd -apr1 'S3cr3tPw99'", &["S3cr3tPw99"]),
            // (`openssl`'s other commands are the command-line pass's.)
            (
                "openssl pkcs12 -export -in c.pem -passout pass:S3cr3tPw99 -out a.p12",
                &["S3cr3tPw99"],
            ),
            (
                "usermod -p \"$(openssl passwd -6 -salt s4lt S3cr3tPw99)\" bob",
                &["S3cr3tPw99"],
            ),
            (
                "mc alias set --api S3v4 prod https://s3.x.org AKIA1234 S3cr3tPw99",
                &["S3cr3tPw99"],
            ),
            (
                "mc config host add s3 https://s3.amazonaws.com AKIA1234 S3cr3tPw99",
                &["S3cr3tPw99"],
            ),
            // (`mc`'s flags before its subcommand; `openssl passwd`'s provider.)
            (
                "mc --insecure --quiet alias set lab https://minio.lan:9000 admin S3cr3tPw99",
                &["S3cr3tPw99"],
            ),
            (
                "openssl passwd -6 -provider legacy -salt s4lt S3cr3tPw99",
                &["S3cr3tPw99"],
            ),
            (
                "expdp system/S3cr3tPw99@xe schemas=hr directory=d",
                &["S3cr3tPw99"],
            ),
            ("impdp USERID=system/S3cr3tPw99 full=y", &["S3cr3tPw99"]),
            (
                "sqlldr userid=scott/S3cr3tPw99 control=load.ctl",
                &["S3cr3tPw99"],
            ),
            (
                "dgmgrl sys/S3cr3tPw99@prim 'show configuration'",
                &["S3cr3tPw99"],
            ),
            (
                "expdp \"sys/S3cr3tPw99@xe as sysdba\" directory=d",
                &["S3cr3tPw99"],
            ),
            // (Review 39: a quoted program's path, MinIO's packaged name and `admin user
            // add`; fields named like the tool or its subcommand, as every earlier release
            // read them.)
            (
                "\"C:\\Program Files\\PuTTY\\plink.exe\" -ssh root@h -pw S3cr3tPw99 -batch",
                &["S3cr3tPw99"],
            ),
            ("'/opt/putty/plink' -pw S3cr3tPw99 u@h", &["S3cr3tPw99"]),
            (
                "mcli alias set local http://h:9000 admin S3cr3tPw99",
                &["S3cr3tPw99"],
            ),
            (
                "mc admin user add myminio newuser S3cr3tPw99",
                &["S3cr3tPw99"],
            ),
            ("mkpasswd = \"S3cr3tPw99\"", &["S3cr3tPw99"]),
            // (Review 40: an older command's argument named like a tool with its
            // extension; a list with a blank before its comma; bare logons.)
            (
                "schtasks /create /tn X /tr net.exe /ru admin /rp S3cr3tPw99",
                &["S3cr3tPw99"],
            ),
            (
                "ipmitool -I lanplus -H h -U plink.exe -P S3cr3tPw99 chassis status",
                &["S3cr3tPw99"],
            ),
            (
                "subprocess.run([\"plink\" , \"-pw\", \"S3cr3tPw99\", \"u@h\"])",
                &["S3cr3tPw99"],
            ),
            ("sqlldr scott/S3cr3tPw99 c.ctl", &["S3cr3tPw99"]),
            ("dgmgrl -silent sys/S3cr3tPw99", &["S3cr3tPw99"]),
            ("apt install openssl\npasswd = S3cr3tPw99", &["S3cr3tPw99"]),
        ] {
            finds_and_redacts(&d, text, want);
        }
        // RMAN's two logons: one span over both, neither left.
        let text = "rman target sys/S3cr3tPw99@prod catalog rco/Kc2Pv9Xn4Tw8@cat";
        let (redacted, _) = d.redact(text);
        assert!(
            !redacted.contains("S3cr3tPw99") && !redacted.contains("Kc2Pv9Xn4Tw8"),
            "{redacted}"
        );
        for text in [
            "openssl passwd -stdin < pw.txt; openssl passwd -in pw.txt -6; openssl passwd",
            "openssl passwd -6 \"$PW\"; openssl s_client -connect h:443 -servername h",
            "Use openssl passwd to hash a password, then mkpasswd.",
            "mkpasswd -m help; mkpasswd -s < f; mkpasswd -m sha-512; mkpasswd \"$PASSWORD\"",
            "mc alias set local http://localhost:9000 $ACCESS $SECRET",
            "mc alias list; mc ls local/bucket; mc cp a local/b",
            "the mc alias set command takes four arguments",
            "expdp parfile=exp.par; rman target /; rman target / catalog rco@catdb",
            "sqlldr control=a/b.ctl log=x/y.log; impdp dumpfile=dir/x.dmp directory=d",
            "expdp system@xe schemas=hr dumpfile=backups/Hr2024Q1x.dmp",
            "expdp system@xe directory=dp logfile=exp/Kx9mQ2vL7pZ",
            "plink -ssh bob@h; plink -pw $PW bob@h; psftp -pw %PASSWORD% bob@h",
            "Use rman or expdp for backups; dgmgrl for Data Guard.",
            // (Review 40: a realm's name after variables; a string's closing quote after a
            // tool's name.)
            "echo \"run mkpasswd\" Version2024a",
            // (Not another call whose name ends so; a host and an account alone;
            // variables.)
            "SFTP('h', 'u', 'Kx9mQ2vL7pZ'); FTP('ftp.example.com', 'anonymous')",
            "new PDO($dsn, $user, $pass); pool.getConnection(cb)",
            "client.authenticate(username, password, \"LdapRealm2024\")",
            "ftp.login(user, pw, 'Acct2024x'); s.login(host, hostname, 'Dev2024x')",
            "s.login(host, user_agent(x), 'Dev2024x'); s.login(host, users[0], 'Dev2024x')",
        ] {
            assert_eq!(d.detect(text), [], "{text}");
        }
    }

    /// `AUTH` opening a line is Redis's where a client or a raw connection is named within
    /// 256 bytes of it, before or after — however the lines stand, one scan reading them in
    /// turn (what the last look found is kept for the next: see `redis_named_near`).
    #[test]
    fn auth_lines_are_read_where_a_connection_is_named_near_them() {
        let d = PiiDetector::new();
        let mut next = numbers(0x3c6e_f372_fe94_f82b);
        // Each with where the look finds its name: the tool's word, `-cli`'s client at its
        // `-`.
        let names = [
            ("| nc cache 6379", 2),
            ("| redis-cli", 7),
            ("telnet cache", 0),
            ("| /usr/bin/ncat x", 11),
        ];
        // At the window's edges: a name 250 to 262 bytes before the line, or after it.
        let line = "AUTH S3cr3tPw99\n";
        for &(name, at) in &names {
            for gap in 250..=262 {
                let fill = "x".repeat(at + gap - name.len() - 2);
                let before = format!("{name}\n{fill}\n{line}");
                assert_eq!(before.find("AUTH"), Some(at + gap));
                let want: &[&str] = if gap <= 256 { &["S3cr3tPw99"] } else { &[] };
                let got: Vec<&str> = found(&before).iter().map(|x| x.1).collect();
                assert_eq!(got, want, "{before:?}");
                let fill = "x".repeat(gap - line.len() - 1 - at);
                let after = format!("{line}{fill}\n{name}\n");
                assert_eq!(after[gap..].find(&name[at..]), Some(0));
                let want: &[&str] = if gap < 256 { &["S3cr3tPw99"] } else { &[] };
                let got: Vec<&str> = found(&after).iter().map(|x| x.1).collect();
                assert_eq!(got, want, "{after:?}");
            }
        }
        for round in 0..3000 {
            // Lines of filler, `AUTH` lines and names, each at its byte offset.
            let (mut text, mut auths, mut named) = (String::new(), Vec::new(), Vec::new());
            for _ in 0..1 + next(12) {
                match next(3) {
                    0 => {
                        let password = format!("Pw{round}x{}Zq9", text.len());
                        auths.push((text.len(), password.clone()));
                        text.push_str(&format!("AUTH {password}\n"));
                    }
                    1 => {
                        let (name, at) = names[next(names.len())];
                        named.push(text.len() + at);
                        text.push_str(name);
                        text.push('\n');
                    }
                    // (Now and then longer than the look ahead, `NAMES_AHEAD`.)
                    _ => {
                        let words = if next(8) == 0 { 1500 } else { 1 + next(60) };
                        text.push_str(&"xo ".repeat(words));
                        text.push('\n');
                    }
                }
            }
            let want: Vec<&str> = auths
                .iter()
                .filter(|(s, _)| named.iter().any(|&p| p + 256 >= *s && p < s + 256))
                .map(|(_, password)| password.as_str())
                .collect();
            let got: Vec<&str> = d
                .detect(&text)
                .into_iter()
                .map(|x| &text[x.start..x.end])
                .collect();
            assert_eq!(got, want, "{text:?}");
        }
    }

    /// A command named by its Windows path, whose separators before `n`, `r` or `t` are no
    /// escapes (`\redis-cli`, `\net.exe`, `\rar.exe`, `\tools`): read as a command still,
    /// written out, after a relative root, or JSON-escaped.
    #[test]
    fn commands_named_by_windows_paths_are_read() {
        let d = PiiDetector::new();
        for text in [
            r"D:\apps\redis-cli.exe -a S3cr3tPw99 ping",
            r"C:\Program Files\Redis\redis-cli.exe -h cache AUTH S3cr3tPw99",
            r"PS C:\redis> .\redis-cli.exe -a S3cr3tPw99",
            r"C:\Windows\System32\net.exe user admin S3cr3tPw99 /add",
            r"C:\Program Files\WinRAR\rar.exe a -pS3cr3tPw99 backup.rar docs",
            r"C:\tools\rabbitmqctl.bat add_user admin S3cr3tPw99",
            r#"{"command": "C:\\Users\\bob\\redis-cli.exe -a S3cr3tPw99 ping"}"#,
        ] {
            finds_and_redacts(&d, text, &["S3cr3tPw99"]);
        }
        // A JSON string's escapes after what looks like a drive's root are still read as
        // escapes (an attack review found these missed when the separators were read as
        // written only): both readings are scanned.
        for (text, want) in [
            (
                r#"{"content": "Q:\nghp_R8x2Lm4Qz7Wc1Vb9Nk3Ht6Yp0Sd5Fg2Jh8Kl"}"#,
                "ghp_R8x2Lm4Qz7Wc1Vb9Nk3Ht6Yp0Sd5Fg2Jh8Kl",
            ),
            (
                r#"{"content": "Q:\nwhat is this\nrequirepass S3cr3tPw99"}"#,
                "S3cr3tPw99",
            ),
            (
                r#"{"output": "Drive C:\n10.61.48.149 - GET /"}"#,
                "10.61.48.149",
            ),
            (
                r#"{"content": "A:\nIBAN\tBE83-1478-1008-5615"}"#,
                "BE83-1478-1008-5615",
            ),
            // (The second reading's span, `tkaren@…`, stands not where the first's does.)
            (
                r#"{"content": "Q:\nE-Mail\tkaren@example.com"}"#,
                "karen@example.com",
            ),
        ] {
            finds_and_redacts(&d, text, &[want]);
        }
    }

    /// Tools that take a password as a positional argument: `htpasswd -b`, `rabbitmqctl
    /// add_user`, `sqlplus user/password`, `wpa_passphrase`, `net user`, `net use`, `cmdkey
    /// /pass:`, `schtasks /rp`, `security add-generic-password -w`, `mosquitto_passwd -b`;
    /// Mosquitto's clients' `-P`; and the tools added since, read in the headers' pass:
    /// `ipmitool -P`, `psexec -p`, `rdesktop -p`, `hydra -p`, the Net-SNMP tools' `-A`,
    /// `-X` and `-c`, `jarsigner -storepass`, FreeRDP's `/p:`, `dsadd -pwd`, Redis
    /// Sentinel's `auth-pass`, `neo4j-admin set-initial-password`.
    #[test]
    fn positional_passwords_are_secrets_where_the_tool_reads_one() {
        let d = PiiDetector::new();
        for (text, want) in [
            (
                "htpasswd -b -c /etc/nginx/.htpasswd admin S3cr3tPw99",
                &["S3cr3tPw99"][..],
            ),
            (
                "htpasswd -bc .htpasswd admin 'S3cr3t Pw 99'",
                &["S3cr3t Pw 99"],
            ),
            ("htpasswd -nbB admin S3cr3tPw99", &["S3cr3tPw99"]),
            ("htpasswd -b -C 12 f admin S3cr3tPw99", &["S3cr3tPw99"]),
            (
                r#"{"cmd": "htpasswd -b f bob \"S3cr3t Pw99\""}"#,
                &["S3cr3t Pw99"],
            ),
            ("rabbitmqctl add_user admin S3cr3tPw99", &["S3cr3tPw99"]),
            (
                "rabbitmqctl -n rabbit@h change_password admin \"S3cr3tPw99\"",
                &["S3cr3tPw99"],
            ),
            ("sqlplus scott/S3cr3tPw99@orcl", &["S3cr3tPw99"]),
            (
                "sqlplus -S system/S3cr3tPw99@//db:1521/PDB1 @run.sql",
                &["S3cr3tPw99"],
            ),
            ("sqlplus \"sys/S3cr3tPw99@orcl as sysdba\"", &["S3cr3tPw99"]),
            ("sqlplus scott/\"S3cr@tPw99\"@orcl", &["S3cr@tPw99"]),
            (
                "wpa_passphrase MyNet S3cr3tPw99 >> /etc/wpa_supplicant.conf",
                &["S3cr3tPw99"],
            ),
            // Windows's and macOS's credential stores, accounts, shares and tasks.
            ("net user bob S3cr3tPw99 /add", &["S3cr3tPw99"]),
            ("rabbitmqctl.bat add_user admin S3cr3tPw99", &["S3cr3tPw99"]),
            // (Found by a seventh attack review.) A quoted part glued to an option, a
            // password past the twelfth word, names in other cases, `/pass:` JSON-escaped,
            // schtasks's `/p`, WebDAV and printers' shares.
            (
                "net use Z: \\\\srv\\share /user:\"CORP\\bob\" S3cr3tPw99",
                &["S3cr3tPw99"],
            ),
            (
                "net user bob /fullname:\"Bob Smith\" S3cr3tPw99 /add",
                &["S3cr3tPw99"],
            ),
            (
                "schtasks /create /sc daily /tn \"Backup\" /tr \"C:\\b.bat\" /st 02:00 /ru CORP\\svc /rp S3cr3tPw99",
                &["S3cr3tPw99"],
            ),
            (
                "Net use Z: \\\\srv\\share S3cr3tPw99; CMDKEY /generic:x /pass:S3cr3tPw99",
                &["S3cr3tPw99", "S3cr3tPw99"],
            ),
            (
                r#"{"command":"cmdkey /add:srv /user:bob /pass:\"S3cr3tPw99\""}"#,
                &["S3cr3tPw99"],
            ),
            (
                "schtasks /create /s srv01 /u CORP\\admin /p S3cr3tPw99 /tn x",
                &["S3cr3tPw99"],
            ),
            (
                "net use http://srv/dav S3cr3tPw99 /user:bob",
                &["S3cr3tPw99"],
            ),
            ("NET USER bob \"S3cr3tPw99\" /ADD /DOMAIN", &["S3cr3tPw99"]),
            (
                "net use Z: \\\\srv\\share S3cr3tPw99 /user:CORP\\bob",
                &["S3cr3tPw99"],
            ),
            (
                "net use \\\\srv\\ipc$ \"S3cr3tPw99\" /user:bob",
                &["S3cr3tPw99"],
            ),
            (
                "cmdkey /add:server /user:bob /pass:S3cr3tPw99",
                &["S3cr3tPw99"],
            ),
            (
                "cmdkey /generic:git /user:bob /pass:\"S3cr3t Pw99\"",
                &["S3cr3t Pw99"],
            ),
            (
                "schtasks /create /tn t /tr x /ru bob /rp S3cr3tPw99",
                &["S3cr3tPw99"],
            ),
            (
                "security add-generic-password -a bob -s svc -w S3cr3tPw99",
                &["S3cr3tPw99"],
            ),
            (
                "security add-internet-password -a bob -s h -w 'S3cr3t Pw99' -U",
                &["S3cr3t Pw99"],
            ),
            // Mosquitto's clients and password file.
            (
                "mosquitto_pub -h broker -u iot -P S3cr3tPw99 -t a/b -m on",
                &["S3cr3tPw99"],
            ),
            ("mosquitto_sub --pw 'S3cr3t Pw99' -t '#'", &["S3cr3t Pw99"]),
            (
                "mosquitto_passwd -c -b /etc/mosquitto/passwd bob S3cr3tPw99",
                &["S3cr3tPw99"],
            ),
            // Servers' management controllers, Windows's remote shells and desktops, SNMP,
            // Java's signer, Active Directory, Redis Sentinel, Neo4j.
            (
                "ipmitool -I lanplus -H h -U bob -P S3cr3tPw99 power status",
                &["S3cr3tPw99"],
            ),
            (
                "ipmitool -H h -U bob -PS3cr3tPw99 sel list",
                &["S3cr3tPw99"],
            ),
            (
                "PsExec64.exe \\\\host -u CORP\\bob -p S3cr3tPw99 -accepteula cmd",
                &["S3cr3tPw99"],
            ),
            (
                "PsExec.exe \\\\host -u bob -p \"S3cr3t Pw99\" cmd",
                &["S3cr3t Pw99"],
            ),
            ("rdesktop -u bob -pS3cr3tPw99 host", &["S3cr3tPw99"]),
            ("hydra -l bob -p S3cr3tPw99 ssh://host", &["S3cr3tPw99"]),
            (
                "snmpget -v3 -u bob -l authNoPriv -a SHA -A 'S3cr3tPw99' h sysUpTime.0",
                &["S3cr3tPw99"],
            ),
            // (Both passphrases: the span from the first to the last.)
            (
                "snmpwalk -v3 -u bob -A S3cr3tPw99 -x AES -X S3cr3tPw98 h",
                &["S3cr3tPw99 -x AES -X S3cr3tPw98"],
            ),
            ("snmpset -v2c -cS3cr3tPw99 h oid s x", &["S3cr3tPw99"]),
            (
                "jarsigner -storepass S3cr3tPw99 -keypass S3cr3tPw98 a.jar k",
                &["S3cr3tPw99 -keypass S3cr3tPw98"],
            ),
            (
                "xfreerdp3 /v:host /u:bob /p:\"S3cr3t Pw99\" /cert:ignore",
                &["S3cr3t Pw99"],
            ),
            ("wlfreerdp /v:h /u:bob /GP:S3cr3tPw99", &["S3cr3tPw99"]),
            ("dsmod user cn=bob,dc=x -pwd S3cr3tPw99", &["S3cr3tPw99"]),
            ("sentinel auth-pass mymaster S3cr3tPw99", &["S3cr3tPw99"]),
            (
                "redis-cli -p 26379 SENTINEL SET m down-after-milliseconds 5000 auth-pass S3cr3tPw99",
                &["S3cr3tPw99"],
            ),
            (
                r#"{"cmd": "SENTINEL SET m AUTH-PASS S3cr3tPw99"}"#,
                &["S3cr3tPw99"],
            ),
            (
                "neo4j-admin set-initial-password S3cr3tPw99 --require-password-change",
                &["S3cr3tPw99"],
            ),
            (
                "neo4j-admin.bat dbms set-initial-password \"S3cr3tPw99\"",
                &["S3cr3tPw99"],
            ),
            // (Found by an attack review: Neo4j 5's option before the password,
            // `SENTINEL SET`'s option pairs before `auth-pass`, FreeRDP 1.0's `-p`, the
            // SNMP tool that changes a passphrase; `auth-pass` as a field's name elsewhere,
            // as before; an older command's account named like a tool added since.)
            (
                "neo4j-admin dbms set-initial-password --require-password-change S3cr3tPw99",
                &["S3cr3tPw99"],
            ),
            (
                "SENTINEL SET m quorum 2 down-after-milliseconds 5000 failover-timeout 60000 parallel-syncs 1 auth-user app auth-pass S3cr3tPw99",
                &["S3cr3tPw99"],
            ),
            ("xfreerdp -u bob -p S3cr3tPw99 h", &["S3cr3tPw99"]),
            (
                "snmpusm -v3 -u bob -A S3cr3tPw99 h passwd old new",
                &["S3cr3tPw99"],
            ),
            ("auth-pass \"S3cr3tPw99\"", &["S3cr3tPw99"]),
            ("net user hydra S3cr3tPw99 /add", &["S3cr3tPw99"]),
            ("htpasswd -b .htpasswd ipmitool S3cr3tPw99", &["S3cr3tPw99"]),
            // Argument lists (a subprocess's, JSON-escaped in a tool call's arguments; over
            // lines), the older tools' too.
            (
                r#"["ipmitool", "-H", "h", "-U", "admin", "-P", "S3cr3tPw99", "sel", "list"]"#,
                &["S3cr3tPw99"],
            ),
            (
                r#"{"args": "[\"psexec\", \"-u\", \"bob\", \"-p\", \"S3cr3tPw99\"]"}"#,
                &["S3cr3tPw99"],
            ),
            (
                "subprocess.run([\n    'htpasswd',\n    '-b',\n    'f',\n    'bob',\n    'S3cr3tPw99',\n])",
                &["S3cr3tPw99"],
            ),
            // (Commas first, quotes mixed.)
            (
                "[\"ipmitool\"\n , '-P'\n , \"S3cr3tPw99\"]",
                &["S3cr3tPw99"],
            ),
        ] {
            finds_and_redacts(&d, text, want);
        }
        for text in [
            // No password given (a prompt asks), a variable, a wallet's or the OS's
            // logon, other subcommands, the tools named in prose.
            "htpasswd -c .htpasswd admin",
            "htpasswd -b .htpasswd admin $HTPW",
            "rabbitmqctl add_user admin",
            "rabbitmqctl list_users; rabbitmqctl delete_user bob2x",
            "sqlplus / as sysdba",
            "sqlplus /nolog",
            "sqlplus scott@orcl",
            "sqlplus -s /@prod_wallet",
            "sqlplus scott/$ORA_PW@orcl",
            "Use sqlplus to connect, htpasswd for users, wpa_passphrase for Wi-Fi",
            "htpasswd -b htpasswd -b htpasswd -b",
            "net user bob * /add; net use Z: \\\\srv\\share /user:bob; net user",
            "schtasks /create /tn t /ru bob /rp *",
            "security find-generic-password -a bob -s svc -w",
            "The security team uses net user accounts; .net use cases",
            "net user bob /fullname:\"Bob Smith\" /comment:\"Ops team\"",
            "mosquitto_pub -P $MQTT_PW -t a; mosquitto_passwd -c pw bob; mosquitto_passwd -U pw",
            "ipmitool -I lanplus -H h -U bob -E power status; ipmitool -P $IPMI_PW sel list",
            "psexec \\\\host -u bob cmd; rdesktop -u bob -p - host",
            "hydra -l bob -P rockyou.txt ssh://host",
            "snmpwalk -v2c -c public h; snmpget -v1 -c private h x; snmpwalk -A $A -X ${P} h",
            "jarsigner -storepass:env STOREPASS a.jar k; jarsigner -verify a.jar",
            "xfreerdp /v:host /u:bob /p:; xfreerdp /v:host /p:$RDP_PW; dsadd user cn=bob -pwd *",
            "sentinel auth-pass mymaster; SENTINEL SET mymaster auth-pass $PW",
            "a sentinel set to auth-pass the value; see the auth-pass Kx9mQ2vL7pWz option",
            "neo4j-admin dbms set-initial-password; neo4j-admin set-initial-password $NEO_PW",
            "Use hydra, psexec or rdesktop; snmpwalk the tree; jarsigner signs jars; dsadd users",
            // (A list's value that is no string, or past the list's end; a list of names.)
            r#"["ipmitool", "-P", password]; ["ipmitool", "-H", "h"], "Kx9mQ2vL7pWz""#,
            "tools = ['htpasswd', 'hydra', 'psexec', 'Kx9mQ2vL7pWz']",
        ] {
            assert_eq!(found(text), [], "{text}");
        }
        // A logon cut at 1 KiB inside a character (found by an attack review: a panic), and
        // an escaped quote whose backslash is the last byte read.
        for text in [
            format!("sqlplus scott/{}", "€".repeat(400)),
            format!("sqlplus scott/a{}", "é".repeat(600)),
            format!(
                "htpasswd {}xxx \\\"x\"",
                format!("{} ", "x".repeat(100)).repeat(10)
            ),
        ] {
            let _ = d.detect(&text);
        }
    }

    /// A table's header cell names a secret's column where it ends with any name a field
    /// may have (`Pass` in camel case only; `pass` alone, a test's column, never), after a
    /// word's border.
    #[test]
    fn every_secret_name_heads_a_secret_column() {
        for name in patterns::SECRET_NAMES {
            let label = match name {
                "Pass" => "adminPass".to_owned(),
                // (A name that starts with its `_` ends a word: `admin_pw`.)
                _ if name.starts_with('_') => format!("admin{name}"),
                _ if patterns::WORD_NAMES.contains(&name) => {
                    assert!(validate::header_secret(format!("Test {name}").as_bytes()).is_none());
                    continue;
                }
                _ => format!("Admin {name}"),
            };
            assert!(
                validate::header_secret(label.as_bytes()).is_some(),
                "{label}"
            );
            assert!(
                validate::header_secret(format!("{name}s").as_bytes()).is_none(),
                "{name}s"
            );
        }
        assert!(validate::header_secret(b"Boarding Pass").is_none());
        assert!(validate::header_secret(b"pass").is_none());
    }

    /// Credentials as an agent lays them out for a person: Markdown's emphasis and code
    /// spans around a field's name, its separator and its value; a table's row, its name
    /// in one cell and the value in the next (Markdown's or HTML's), or under a header
    /// that names the column; a label with a blank (`API Key`). A schema's or a
    /// description's column, a placeholder, a pipe outside a table, and Markdown cut off
    /// at the text's end hold none.
    #[test]
    fn credentials_laid_out_in_markdown_and_tables_are_secrets() {
        let d = PiiDetector::new();
        for (text, want) in [
            ("- **Password:** Xk9vQ2mZp4Lw", &["Xk9vQ2mZp4Lw"][..]),
            ("- **Password**: Xk9vQ2mZp4Lw", &["Xk9vQ2mZp4Lw"]),
            ("__Password:__ Xk9vQ2mZp4Lw\n", &["Xk9vQ2mZp4Lw"]),
            ("* Password: `Xk9vQ2mZp4Lw`", &["Xk9vQ2mZp4Lw"]),
            ("- `DB_PASSWORD`: `Xk9vQ2mZp4Lw`", &["Xk9vQ2mZp4Lw"]),
            ("- **Password:** `hunter2`", &["hunter2"]),
            ("**API Key:** Xk9vQ2mZp4Lw", &["Xk9vQ2mZp4Lw"]),
            ("API key: Xk9vQ2mZp4Lw", &["Xk9vQ2mZp4Lw"]),
            ("| DB_PASSWORD | Xk9vQ2mZp4Lw |", &["Xk9vQ2mZp4Lw"]),
            ("| **Password** | Xk9vQ2mZp4Lw |", &["Xk9vQ2mZp4Lw"]),
            ("| `DB_PASSWORD` | `Xk9vQ2mZp4Lw` |", &["Xk9vQ2mZp4Lw"]),
            ("| Secret Key | Xk9vQ2mZp4Lw |", &["Xk9vQ2mZp4Lw"]),
            (
                "| user | bob |\n| password | Xk9vQ2mZp4Lw",
                &["Xk9vQ2mZp4Lw"],
            ),
            (
                "<tr><td>DB_PASSWORD</td><td>Xk9vQ2mZp4Lw</td></tr>",
                &["Xk9vQ2mZp4Lw"],
            ),
            (
                "<tr><th>Password</th>\n  <td class=\"v\">Xk9vQ2mZp4Lw</td></tr>",
                &["Xk9vQ2mZp4Lw"],
            ),
            (
                "<td><code>API_KEY</code></td><td><code>Xk9vQ2mZp4Lw</code></td>",
                &["Xk9vQ2mZp4Lw"],
            ),
            // (Found by a twelfth attack review.) A label's other words before the name in
            // its cell, an escaped pipe inside the value's; HTML indented, the value on a
            // line of its own, a `<b>`, a `<span>` or a `<br/>` inside a cell, capitals, a
            // long attribute, a header's cell, a colon in the name's cell, a definition
            // list, a label in bold; triple emphasis, a code span glued to the colon, a
            // value emphasised, a backtick after `=` (read as before); capitals and other
            // labels, AWS's secret key under its label.
            ("| Admin Password | Xk9vQ2mZp4Lw |", &["Xk9vQ2mZp4Lw"]),
            ("| 🔑 **API Token** | Xk9vQ2mZp4Lw |", &["Xk9vQ2mZp4Lw"]),
            ("| DB_PASSWORD | Xk9v\\|Q2mZp4Lw |", &["Xk9v\\|Q2mZp4Lw"]),
            (
                "<tr>\n  <td>Password</td>\n                  <td>Xk9vQ2mZp4Lw</td>\n</tr>",
                &["Xk9vQ2mZp4Lw"],
            ),
            (
                "<td>Password</td>\n  <td>\n    Xk9vQ2mZp4Lw\n  </td>",
                &["Xk9vQ2mZp4Lw"],
            ),
            (
                "<td><b>Password</b></td><td><span>Xk9vQ2mZp4Lw</span><br/></td>",
                &["Xk9vQ2mZp4Lw"],
            ),
            ("<TD>Password</TD><TD>Xk9vQ2mZp4Lw</TD>", &["Xk9vQ2mZp4Lw"]),
            (
                "<td>Password</td><td style=\"font-family: monospace; padding: 4px 8px\">Xk9vQ2mZp4Lw</td>",
                &["Xk9vQ2mZp4Lw"],
            ),
            ("<th>Password</th><th>Xk9vQ2mZp4Lw</th>", &["Xk9vQ2mZp4Lw"]),
            (
                "<tr><td>Password:</td><td>Xk9vQ2mZp4Lw</td></tr>",
                &["Xk9vQ2mZp4Lw"],
            ),
            (
                "<dt>Password</dt>\n<dd>Xk9vQ2mZp4Lw</dd>",
                &["Xk9vQ2mZp4Lw"],
            ),
            ("<li><b>Password:</b> Xk9vQ2mZp4Lw</li>", &["Xk9vQ2mZp4Lw"]),
            ("- ***Password:*** Xk9vQ2mZp4Lw", &["Xk9vQ2mZp4Lw"]),
            ("Password:`Xk9vQ2mZp4Lw`", &["Xk9vQ2mZp4Lw"]),
            ("**Password:** *Xk9vQ2mZp4Lw*", &["Xk9vQ2mZp4Lw"]),
            ("Password=`Xk9vQ2mZp4Lw`", &["`Xk9vQ2mZp4Lw`"]),
            ("**API KEY:** Xk9vQ2mZp4Lw", &["Xk9vQ2mZp4Lw"]),
            ("**Private Key:** Xk9vQ2mZp4Lw", &["Xk9vQ2mZp4Lw"]),
            (
                "**Secret Access Key:** wJalrXUtnFEMI/K7MDENG/bPxRfiCYzK8sQ3vLp7",
                &["wJalrXUtnFEMI/K7MDENG/bPxRfiCYzK8sQ3vLp7"],
            ),
            // A table whose header names the column (each row's value found; every column
            // under such a header, from the first value to the last), indented, with
            // `\r\n`, below another table with no blank line between.
            (
                "| Service | Username | Password |\n|---|---|---|\n| db | admin | Xk9vQ2mZp4Lw |\n| redis | default | Qw8nR3tYu6pZ |",
                &["Xk9vQ2mZp4Lw", "Qw8nR3tYu6pZ"],
            ),
            (
                "  | Name | API Key | Notes |\r\n  | :--- | --- | ---: |\r\n  | prod | Xk9vQ2mZp4Lw | monthly |",
                &["Xk9vQ2mZp4Lw"],
            ),
            (
                "| Password | Token |\n|---|---|\n| Xk9vQ2mZp4Lw | Qw8nR3tYu6pZ |",
                &["Xk9vQ2mZp4Lw | Qw8nR3tYu6pZ"],
            ),
            (
                "| a | b |\n|---|---|\n| x | y |\n| User | Password |\n|---|---|\n| b | Xk9vQ2mZp4Lw |",
                &["Xk9vQ2mZp4Lw"],
            ),
            // (Found by a thirteenth attack review.) A header's label with a colon, a
            // remark or emphasis; AWS's secret key under its label; rows split by `\r\r\n`;
            // a row of dashes among the values.
            (
                "| Service | Password (plain) | _Token_: |\n|---|---|---|\n| db | Xk9vQ2mZp4Lw | Qw8nR3tYu6pZ |",
                &["Xk9vQ2mZp4Lw | Qw8nR3tYu6pZ"],
            ),
            (
                "| Service | Secret Access Key |\n|---|---|\n| aws | wJalrXUtnFEMI/K7MDENG/bPxRfiCYzK8sQ3vLp7 |",
                &["wJalrXUtnFEMI/K7MDENG/bPxRfiCYzK8sQ3vLp7"],
            ),
            (
                "| User | Password |\r\r\n|---|---|\r\r\n| a | **** |\r\r\n| b | Xk9vQ2mZp4Lw |",
                &["Xk9vQ2mZp4Lw"],
            ),
            (
                "| Service | Password |\n|---|---|\n| - | - |\n| db | Xk9vQ2mZp4Lw |",
                &["Xk9vQ2mZp4Lw"],
            ),
            // (Found by a fourteenth.) Alignment rows of one or two dashes right below
            // the header; a header with more columns named for a secret than eight.
            (
                "| User | Password |\n|-|-|\n| b | Xk9vQ2mZp4Lw |",
                &["Xk9vQ2mZp4Lw"],
            ),
            (
                "| User | Password\n| - | - \n| b | Xk9vQ2mZp4Lw",
                &["Xk9vQ2mZp4Lw"],
            ),
            (
                "| Token | Token | Token | Token | Token | Token | Token | Token | Password |\n|---|---|---|---|---|---|---|---|---|\n| n/a | n/a | n/a | n/a | n/a | n/a | n/a | n/a | Xk9vQ2mZp4Lw |",
                &["Xk9vQ2mZp4Lw"],
            ),
            // Rows and a header that leave their last pipe out.
            (
                "| Service | User | Password\n|---|---|---\n| db | admin | Xk9vQ2mZp4Lw",
                &["Xk9vQ2mZp4Lw"],
            ),
            // A table written into a JSON string (once, with `\r\n`, after a line of
            // prose, twice), quoted, indented in a list.
            (
                r#"{"content": "| Service | Password |\n|---|---|\n| db | Xk9vQ2mZp4Lw |\n| redis | Qw8nR3tYu6pZ |\n"}"#,
                &["Xk9vQ2mZp4Lw", "Qw8nR3tYu6pZ"],
            ),
            (
                r#""Logins:\r\n\r\n| User | Password |\r\n|---|---|\r\n| bob | Xk9vQ2mZp4Lw |""#,
                &["Xk9vQ2mZp4Lw"],
            ),
            (
                r#"{"body": "{\"text\": \"| User | Password |\\n|---|---|\\n| bob | Xk9vQ2mZp4Lw |\\n| amy | Qw8nR3tYu6pZ |\"}"}"#,
                &["Xk9vQ2mZp4Lw", "Qw8nR3tYu6pZ"],
            ),
            (
                "> | User | Password |\n> |---|---|\n> | bob | Xk9vQ2mZp4Lw |",
                &["Xk9vQ2mZp4Lw"],
            ),
            (
                "1. Logins:\n\n        | User | Password |\n        |---|---|\n        | bob | Xk9vQ2mZp4Lw |",
                &["Xk9vQ2mZp4Lw"],
            ),
            (
                "- | User | Password |\n  |---|---|\n  | bob | Xk9vQ2mZp4Lw |",
                &["Xk9vQ2mZp4Lw"],
            ),
            (
                "# | User | Password |\n# |---|---|\n# | bob | Xk9vQ2mZp4Lw |\n// | amy | Qw8nR3tYu6pZ |",
                &["Xk9vQ2mZp4Lw", "Qw8nR3tYu6pZ"],
            ),
            (
                "`| User | Password |\n|---|---|\n| bob | Xk9vQ2mZp4Lw |`",
                &["Xk9vQ2mZp4Lw"],
            ),
            // A database client's output (MySQL's borders); HTML's inline tags in a
            // Markdown table's cells.
            (
                "mysql> SELECT username, password FROM users;\n+----------+--------------+\n| username | password     |\n+----------+--------------+\n| bob      | Xk9vQ2mZp4Lw |\n| amy      | Qw8nR3tYu6pZ |\n+----------+--------------+\n2 rows in set (0.00 sec)",
                &["Xk9vQ2mZp4Lw", "Qw8nR3tYu6pZ"],
            ),
            (
                "| <b>User</b> | <b>Password</b> |\n|---|---|\n| bob | <code>Xk9vQ2mZp4Lw</code> |",
                &["Xk9vQ2mZp4Lw"],
            ),
            // psql's tables: rows without outer pipes under a `---+---` border (with a
            // value left empty, a NULL), its expanded display's `name | value` records; a
            // GitHub table written without its outer pipes, in a JSON string; MySQL's
            // vertical display.
            (
                "db=> SELECT id, username, password FROM users;\n id | username |   password\n----+----------+--------------\n  1 | bob      | Xk9vQ2mZp4Lw\n  2 | amy      | \n  3 | cat      | Qw8nR3tYu6pZ\n(3 rows)",
                &["Xk9vQ2mZp4Lw", "Qw8nR3tYu6pZ"],
            ),
            (
                "-[ RECORD 1 ]--------------\nid       | 1\nusername | bob\npassword | Xk9vQ2mZp4Lw\napi_key  | Qw8nR3tYu6pZrT5v",
                &["Xk9vQ2mZp4Lw", "Qw8nR3tYu6pZrT5v"],
            ),
            (
                "User | Password\n--- | :---:\nbob | Xk9vQ2mZp4Lw\namy | (see the vault)",
                &["Xk9vQ2mZp4Lw"],
            ),
            (
                r#"{"stdout": " username | token\n----------+--------------\n bob      | Xk9vQ2mZp4Lw\n"}"#,
                &["Xk9vQ2mZp4Lw"],
            ),
            // Tables drawn with box drawing: SQLite's `.mode box`, psql's unicode style,
            // DuckDB's (its column types under the header), Python rich's heavy header.
            (
                "┌────┬──────────┬──────────────┐\n│ id │ username │   password   │\n├────┼──────────┼──────────────┤\n│ 1  │ bob      │ Xk9vQ2mZp4Lw │\n└────┴──────────┴──────────────┘\n",
                &["Xk9vQ2mZp4Lw"],
            ),
            (
                " id │ username │   password\n────┼──────────┼──────────────\n  1 │ bob      │ Xk9vQ2mZp4Lw\n",
                &["Xk9vQ2mZp4Lw"],
            ),
            (
                "┌─────────┬──────────────┐\n│  user   │   api_key    │\n│ varchar │ varchar(32)  │\n├─────────┼──────────────┤\n│ bob     │ Xk9vQ2mZp4Lw │\n└─────────┴──────────────┘\n",
                &["Xk9vQ2mZp4Lw"],
            ),
            (
                "┏━━━━━━┳━━━━━━━━━━━━━━┓\n┃ User ┃ Token        ┃\n┡━━━━━━╇━━━━━━━━━━━━━━┩\n│ bob  │ Xk9vQ2mZp4Lw │\n└──────┴──────────────┘\n",
                &["Xk9vQ2mZp4Lw"],
            ),
            // SQLite's list output with its header (`.headers on`), no rule below it; below
            // another block of rows.
            (
                "sqlite> SELECT * FROM users;\nid|username|password\n1|bob|Xk9vQ2mZp4Lw\n2|amy|Qw8nR3tYu6pZ\n",
                &["Xk9vQ2mZp4Lw", "Qw8nR3tYu6pZ"],
            ),
            ("x|y|z\nid|api_key\r\n1|Xk9vQ2mZp4Lw\r\n", &["Xk9vQ2mZp4Lw"]),
            // (Found by a twenty-first attack review.) An empty first cell (a NULL, a
            // wrapped value's next line) under a header without a leading pipe; psql's
            // key/value tables, their names indented; a first column padded past 256
            // characters.
            (
                " email | username |   password\n-------+----------+--------------\n       | bob      | Xk9vQ2mZp4Lw\n",
                &["Xk9vQ2mZp4Lw"],
            ),
            (
                " username |   password\n----------+--------------\n bob      | Xk9vQ2mZp4Lw\n          | Qw8nR3tYu6pZ\n",
                &["Xk9vQ2mZp4Lw", "Qw8nR3tYu6pZ"],
            ),
            (
                "User | Password\n--- | ---\n | Xk9vQ2mZp4Lw\n",
                &["Xk9vQ2mZp4Lw"],
            ),
            (
                "    key    |    value\n-----------+--------------\n api_token | Xk9vQ2mZp4Lw\n db_password | Qw8nR3tYu6pZ\n",
                &["Xk9vQ2mZp4Lw", "Qw8nR3tYu6pZ"],
            ),
            (
                "  password | Xk9vQ2mZp4Lw\n    password\tQw8nR3tYu6pZ",
                &["Xk9vQ2mZp4Lw", "Qw8nR3tYu6pZ"],
            ),
            (
                &format!(
                    " description{0} | password\n{1}+----------\n short{0} | Xk9vQ2mZp4Lw\n",
                    " ".repeat(300),
                    "-".repeat(314)
                ),
                &["Xk9vQ2mZp4Lw"],
            ),
            // An HTML table whose header row names the column: in one line, a `<thead>`
            // and a `<code>` in the cell; indented, in capitals, a row's first cell a
            // `<th>`, cells left unclosed; written into a JSON string.
            (
                "<table><thead><tr><th>Service</th><th>Username</th><th>Password</th></tr></thead><tbody><tr><td>db</td><td>admin</td><td>Xk9vQ2mZp4Lw</td></tr><tr><td>redis</td><td>default</td><td><code>Qw8nR3tYu6pZ</code></td></tr></tbody></table>",
                &["Xk9vQ2mZp4Lw", "Qw8nR3tYu6pZ"],
            ),
            (
                "<TABLE>\n  <TR>\n    <TH>Host</TH>\n    <TH class=\"k\">API Key</TH>\n  </TR>\n  <TR>\n    <TH scope=\"row\">prod</TH>\n    <TD>\n      Xk9vQ2mZp4Lw\n    </TD>\n  </TR>\n  <TR><TD>dev<TD>Qw8nR3tYu6pZ\n</TABLE>",
                &["Xk9vQ2mZp4Lw", "Qw8nR3tYu6pZ"],
            ),
            (
                r#"{"html": "<table><tr><th>User</th><th>Password</th></tr>\n<tr><td>bob</td><td>Xk9vQ2mZp4Lw</td></tr></table>"}"#,
                &["Xk9vQ2mZp4Lw"],
            ),
            (
                "<tr><th>User</th><th>Token</th></tr><tr><td>a</td><td><i>rotated</i> Xk9vQ2mZp4Lw <span>📋</span></td></tr>",
                &["Xk9vQ2mZp4Lw"],
            ),
            // (Found by a fifteenth attack review.) A header row of `<td>` cells (in a
            // `<thead>`, or the table's first row), a blank corner cell, a remark or a
            // link in the header's cell, cells that span columns, a data row of `<th>`
            // cells, a row past 32 columns.
            (
                "<table><thead><tr><td>Service</td><td><b>Password</b></td></tr></thead><tbody><tr><td>db</td><td>Xk9vQ2mZp4Lw</td></tr></tbody></table>",
                &["Xk9vQ2mZp4Lw"],
            ),
            (
                "<table><tbody><tr><td>User</td><td>Password</td></tr><tr><td>bob</td><td>Xk9vQ2mZp4Lw</td></tr></tbody></table>",
                &["Xk9vQ2mZp4Lw"],
            ),
            (
                "<table><tr><td></td><th>Service</th><th>Password <small>(rotated)</small></th></tr><tr><td>1</td><td>db</td><td>Xk9vQ2mZp4Lw</td></tr></table>",
                &["Xk9vQ2mZp4Lw"],
            ),
            (
                "<table><tr><th><a href=\"?s=1\">Service</a></th><th>Env</th><th><a href=\"?s=2\">Password</a> &#9650;</th></tr><tr><td colspan=\"2\">db prod</td><td>Xk9vQ2mZp4Lw</td></tr></table>",
                &["Xk9vQ2mZp4Lw"],
            ),
            (
                "<table><tr><th>Name</th><th>Password</th></tr><tr><th>bob</th><th>Xk9vQ2mZp4Lw</th></tr></table>",
                &["Xk9vQ2mZp4Lw"],
            ),
            // None.
            (
                "| Model | Token | Tokens |\n|---|---|---|\n| gpt | 4096 | 8192 |\n| llama | 1,024 | 2048 |",
                &[],
            ),
            (
                "| User | Password |\n|---|---|\n| bob | ******** |\n| amy | <hidden> |",
                &[],
            ),
            (
                "| Boarding Pass | Passwords |\n|---|---|\n| AB12CD | Xk9vQ2mZp4Lw |",
                &[],
            ),
            ("| password | string | The user's password |", &[]),
            (
                "| Password | OAuth2 |\n| Password | Argon2 |\n| API Key | 1,234 |",
                &[],
            ),
            ("**Password:** *optional*", &[]),
            ("cat f | grep password | base64", &[]),
            ("password = *ptr;", &[]),
            (
                "Tokens look like `<aws_secret_access_key>`; never commit them. Ask `G0KLQBWERY1`.",
                &[],
            ),
            ("| API_KEY | Your API key from the dashboard |", &[]),
            ("| password | required | Yes |", &[]),
            ("| DB_PASSWORD | <your-password> |", &[]),
            ("| `PASSWORD` | `${DB_PASSWORD}` |", &[]),
            ("| Token | 4096 |", &[]),
            ("| password |  |", &[]),
            ("<td>password</td><td>The user's password.</td>", &[]),
            ("<td>password</td><td>Xk9vQ2mZp4Lw", &[]),
            ("echo $password | base64", &[]),
            ("**Password:** must be at least 12 characters", &[]),
            ("PASSWORD=`cat /run/secrets/db`", &[]),
            ("Your API key: paste it here", &[]),
            ("**Password:** ", &[]),
            ("**Password:**", &[]),
            ("Password: `", &[]),
            ("| password |", &[]),
            ("<td>password</td><td>", &[]),
            (
                "+----+----------+\n| id | password |\n+----+----------+\n|  1 | NULL     |\n|  2 | ******** |\n+----+----------+",
                &[],
            ),
            (
                "<table><tr><th>Step</th><th>Password</th></tr><tr><td>1</td><td>bcrypt(cost=12)</td></tr><tr><td>2</td><td>argon2id</td></tr></table>",
                &[],
            ),
            (
                "| Name | Token |\n|---|---|\n| GPT-4 | cl100k_base |\n| Rust | proc_macro2::TokenStream |\n| prod | vault:secret/data/prod#db |",
                &[],
            ),
            (
                "<table><tr><th>Model</th><th>Token</th><th>Password</th></tr><tr><td>gpt</td><td>4096</td><td>********</td></tr><tr><td>x</td><td>1,024</td><td><i>see <a href=\"/v\">the vault</a></i></td></tr></table>",
                &[],
            ),
            (
                "<table><tr><th>User</th><th>Password</th></tr></table><table><tr><td>Jan</td><td>Xk9vQ2mZp4Lw</td></tr></table>",
                &[],
            ),
            (
                r#"{"content": "| Model | Token |\n|---|---|\n| gpt | 4096 |\n| llama | 2048 |"}"#,
                &[],
            ),
            (r#"run "cat f | grep password" then "| Password |""#, &[]),
            (r#""| Password | Xk9vQ2mZp4Lw" is no table"#, &[]),
            // Rows without outer pipes: under a header naming no secret, or none; a
            // `name | value` record that goes on past its value, is a placeholder, or is
            // no record (the name not at its line's start); a pipe-less row's values that
            // hold none; a rule of dashes alone below the header; hashes under a `_hash`
            // column.
            ("Name | Type\n--- | ---\npassword | string", &[]),
            ("password | Xk9vQ2mZp4Lw | active", &[]),
            ("password | ********", &[]),
            ("token | hidden", &[]),
            ("echo $password | Xk9vQ2mZp4Lw", &[]),
            (
                " id | password\n----+----------\n  1 | NULL\n  2 | changeme\n  3 | <redacted>",
                &[],
            ),
            ("User | Password\n----------\nbob | Xk9vQ2mZp4Lw", &[]),
            // SQLite's list output: a header whose cells are no names, or over a row of
            // another shape; values that hold none.
            ("cat a|grep password\nfoo|Xk9vQ2mZp4Lw\n", &[]),
            ("id|username|password\n1|bob\n", &[]),
            ("id|name|token\n1|gpt|cl100k_base\n2|llama|4096\n", &[]),
            // A directory tree; a box under a header naming no secret.
            (
                "├── src\n│   ├── main.rs\n│   └── password.rs\n└── Cargo.toml\n",
                &[],
            ),
            (
                "┌──────┬──────────────┐\n│ user │ model        │\n├──────┼──────────────┤\n│ bob  │ Xk9vQ2mZp4Lw │\n└──────┴──────────────┘\n",
                &[],
            ),
            (
                " id | password_hash\n----+----------\n  1 | $2b$12$KIXQJ8rN2pQm9sVb7yHc1eW8sFq3nLz0aB4cD6eF8gH",
                &[],
            ),
        ] {
            finds_and_redacts(&d, text, want);
        }
    }

    /// Tables that clients align with blanks, not pipes: the columns under a rule of
    /// dashes (tabulate, sqlite's `.mode column`, psql with `border 0`, Azure's CLI,
    /// reStructuredText's `=`), and a pandas data frame's, each value against the right
    /// edge of its column's name — each row's cells under a header naming a secret. A
    /// blank line ends the table, as does a line too wide to be its row (a rule between
    /// rows does not); cells of words, a rule that heads nothing and a frame whose column
    /// names no secret hold none.
    #[test]
    fn tables_aligned_with_blanks_are_read_by_their_columns() {
        let d = PiiDetector::new();
        let k = "Xk9vQ2mZp4Lw";
        let l = "Qw3rTy8uIo1p";
        for (text, want) in [
            // pandas: `print(df)`, a wide frame cut with `...`, a name of two words.
            (
                "   id     username      password\n0   1          bob  Xk9vQ2mZp4Lw\n\
                 1   2        alice  Qw3rTy8uIo1p\n",
                &[k, l][..],
            ),
            (
                "          column_0  ...        column_11      password\n\
                 0  valuevaluevalue  ...  valuevaluevalue  Xk9vQ2mZp4Lw\n\n[1 rows x 13 columns]",
                &[k],
            ),
            (
                "   user              api key\n0   bob  sk_a1B2c3D4e5F6g7H8\n1   amy  Xk9vQ2mZp4Lw",
                &["sk_a1B2c3D4e5F6g7H8", k],
            ),
            // tabulate: `headers="keys"` (its index a column), `tablefmt="rst"`.
            (
                "      id  username     password\n--  ----  -----------  ------------\n \
                 0     1  bob          Xk9vQ2mZp4Lw\n 1     2  carol.smith  Qw3rTy8uIo1p",
                &[k, l],
            ),
            (
                "====  ========  ============\n  id  username  password\n\
                 ====  ========  ============\n   1  bob       Xk9vQ2mZp4Lw\n\
                 ====  ========  ============\n   2  amy       Qw3rTy8uIo1p",
                &[k, l],
            ),
            // A frame's tail (its index past `0`), an index with a name, a value with a
            // blank in it.
            (
                "    id      password\n98  99  Xk9vQ2mZp4Lw\n99 100  Qw3rTy8uIo1p\n",
                &[k, l],
            ),
            (
                "          password\nid                \n1     Xk9vQ2mZp4Lw\n2     Qw3rTy8uIo1p\n",
                &[k, l],
            ),
            (
                "   id  password\n0   1  Xk9v Q2mZp4Lw\n",
                &["Xk9v Q2mZp4Lw"],
            ),
            // Columns one character wide; a rule between rows.
            ("i  password\n-  ------------\n1  Xk9vQ2mZp4Lw\n", &[k]),
            ("password      n\n------------  -\nXk9vQ2mZp4Lw  1\n", &[k]),
            (
                "id  password\n--  ------------\n1   Xk9vQ2mZp4Lw\n--  ------------\n2   Qw3rTy8uIo1p",
                &[k, l],
            ),
            // A value another detector finds at a row's start: the row's secrets after it.
            (
                "host       password\n---------  ------------\n127.0.0.1  Xk9vQ2mZp4Lw\n\
                 10.0.0.12  Qw3rTy8uIo1p\n",
                &["127.0.0.1", k, "10.0.0.12", l],
            ),
            // sqlite's `.mode column` (its trailing blanks), psql's `border 0`, Azure's
            // CLI.
            (
                "id  username  password    \n--  --------  ------------\n1   bob       Xk9vQ2mZp4Lw",
                &[k],
            ),
            (
                "id username   password\n-- -------- ------------\n 1 bob      Xk9vQ2mZp4Lw",
                &[k],
            ),
            (
                "Name    AdminPassword\n------  ---------------\nvm1     Zq8rTw2xLk7n#a\r\n",
                &["Zq8rTw2xLk7n#a"],
            ),
            // Two secret columns: one span, from the first to the last.
            (
                "user  password      token\n----  ------------  ----------------\n\
                 bob   Xk9vQ2mZp4Lw  Rt5yU8iO2pLkMn4b",
                &["Xk9vQ2mZp4Lw  Rt5yU8iO2pLkMn4b"],
            ),
            // A value of the column before run into a secret's column is left to it.
            (
                "email password\n----- --------\na@b.com Xk9vQ2mZp4Lw\nc@d.com Qw3rTy8uIo1p\n",
                &["a@b.com", k, "c@d.com", l],
            ),
            (
                "user  password\n----  ------------\n10.0.0.1  Xk9vQ2mZp4Lw\n",
                &["10.0.0.1", k],
            ),
            // Columns counted in characters, not bytes; a value run over its column's edge.
            (
                "  id  username     password\n----  -----------  ------------\n   1  zoë          \
                 Xk9vQ2mZp4Lw\n   2  Ñúñéz-Íñígo  Qw3rTy8uIo1pAb9",
                &[k, "Qw3rTy8uIo1pAb9"],
            ),
            // Written into a string (its line breaks folded): the header after the quote,
            // the last row ending at the string's end; a string indented in JSON.
            (
                r#"{"stdout": "user  password\n----  --------\nbob   Xk9vQ2mZp4Lw\namy   Qw3rTy8uIo1p"}"#,
                &[k, l],
            ),
            (
                "print(df) gave '   user      password\n0   bob  Xk9vQ2mZp4Lw'",
                &[k],
            ),
            (
                "{\n  \"stdout\": \"   id      password\\n0   1  Xk9vQ2mZp4Lw\\n1   2  \
                 Qw3rTy8uIo1p\\n\"\n}",
                &[k, l],
            ),
            // tabulate's `psql` and `grid` formats: a border with outer pipes under the
            // header, borders between rows.
            (
                "+----+------------+\n|  0 | password   |\n|----+------------|\n\
                 |  1 | Xk9vQ2mZp4Lw |\n|  2 | Qw3rTy8uIo1p |\n+----+------------+",
                &[k, l],
            ),
            (
                "+----+--------------+\n| id | password     |\n+====+==============+\n\
                 |  1 | Xk9vQ2mZp4Lw |\n+----+--------------+\n|  2 | Qw3rTy8uIo1p |\n\
                 +----+--------------+",
                &[k, l],
            ),
            // A grid whose header names no secret reads none under its borders.
            (
                "+----+--------------+\n| id | note         |\n+====+==============+\n\
                 | password | Xk9vQ2mZp4Lw |\n+----+--------------+\n| 2 | Qw3rTy8uIo1p |",
                &[k],
            ),
            // A border with outer pipes further down is a rule between rows (the rows
            // below keep the header's columns; the row above it names none); Pandoc's
            // borders with colons; a grid's rows past its borders, only as wide as them.
            (
                "| user | token |\n|------+-------|\n| bob  | Xk9vQ2mZp4Lw |\n\
                 |------+-------|\n| eve  | Qw3rTy8uIo1p |",
                &[k, l],
            ),
            (
                "| key | value |\n|---|---|\n| password | token |\n|---+---|\n\
                 | v1_a | a1b2c3d4e5 |",
                &[],
            ),
            (
                "+----+--------------+\n| id | password     |\n+:===+=============:+\n\
                 |  1 | Xk9vQ2mZp4Lw |\n+----+--------------+\n|  2 | Qw3rTy8uIo1p |",
                &[k, l],
            ),
            (
                "+----+--------------+\n| id | password     |\n+----+--------------+\n\
                 |  1 | Xk9vQ2mZp4Lw |\n+----+--------------+\n| build_42 | v2.3.1-rc1 |",
                &[k],
            ),
            // Column names quoted, typographic quotes too.
            (
                "| user | “password” |\n|---|---|\n| bob | Xk9vQ2mZp4Lw |",
                &[k],
            ),
            (
                "user  `password`\n----  ------------\nbob   Xk9vQ2mZp4Lw",
                &[k],
            ),
            (
                "| \"user\" | \"password\" |\n|---|---|\n| bob | Xk9vQ2mZp4Lw |",
                &[k],
            ),
            // A blank line ends the table: its next row is read no more.
            (
                "  id  password\n----  ------------\n   1  Xk9vQ2mZp4Lw\n\n   2  Qw3rTy8uIo1p",
                &[k],
            ),
            (
                "   word      password\n0   the  Xk9vQ2mZp4Lw\n\n1   foo  Qw3rTy8uIo1p",
                &[k],
            ),
            // Holds none.
            (
                "Option      Description\n----------  -------------------\n\
                 password    The password to use\ntoken       A token from the console",
                &[],
            ),
            (
                "Name        Password\n----        --------\nbob         required\n\
                 carol       (hidden)",
                &[],
            ),
            ("Title\n-----\npassword Xk9vQ2mZp4Lw", &[]),
            ("-- password column holds Xk9vQ2mZp4Lw\nselect 1;", &[]),
            ("   token  count\n0    the     12\n1    and      9", &[]),
            (" The password\n0 results found", &[]),
            ("- - -\npassword  Xk9vQ2mZp4Lw", &[]),
            ("- - -\n- item\n1 thing\n10 items were found\n", &[]),
            // Prose right after a table is no row of it.
            (
                "  id  password\n----  ------------\n   1  (hidden)\n\
                 Run ./rotate.sh --force=yes to regenerate keys after v2.3.1-rc1\n",
                &[],
            ),
            (
                "   id  password\n0   1  (hidden)\n\
                 See docs/v2.3.1/setup.md#step-3 for details on rotating\n",
                &[],
            ),
            // A table of names and their values, `Key` over `Value` (HashiCorp Vault's
            // `vault kv get`, `vault read`): a secret's name's value, as long as it is, a
            // blank inside it; in any case. Left in clear by every release before this one.
            (
                "====== Data ======\nKey         Value\n---         -----\n\
                 api_key     Xk9vQ2mZp4Lw\npassword    Qw3rTy8uIo1p\nusername    bob",
                &[k, l],
            ),
            (
                "Key                Value\n---                -----\n\
                 lease_duration     1h\npassword           A1a-8fn6vq7KZcNZ9Rqv\n\
                 username           v-token-readonly-wGLPkpDyc6AgqBfMZTD3-1604195404",
                &["A1a-8fn6vq7KZcNZ9Rqv"],
            ),
            (
                "KEY            VALUE\n---            -----\nDB_PASSWORD    Xk9v Q2mZp4Lw",
                &["Xk9v Q2mZp4Lw"],
            ),
            // (Review 90: the table last in a JSON string — the value to its closing quote,
            // not the JSON after it — or in a Python string; a second table right after the
            // first, no blank line between; AppRole's `secret_id`.)
            (
                "{\"stdout\": \"Key         Value\\n---         -----\\n\
                 password    Xk9vQ2mZp4Lw\", \"stderr\": \"\", \"exit_code\": 0}",
                &[k],
            ),
            (
                "out = \"\"\"Key         Value\n---         -----\npassword    Xk9vQ2mZp4Lw\"\"\"",
                &[k],
            ),
            (
                "Key             Value\n---             -----\nversion         3\n\
                 ====== Data ======\nKey         Value\n---         -----\npassword    Xk9vQ2mZp4Lw",
                &[k],
            ),
            (
                "Key          Value\n---          -----\n\
                 secret_id    841771dc-11c9-bbc7-bcac-6a3945a69cd9",
                &["841771dc-11c9-bbc7-bcac-6a3945a69cd9"],
            ),
            // (Names that are no secret's; values that are none, words; a name run into
            // `Value`'s column; rows past a blank line.)
            (
                "Key             Value\n---             -----\ncreated_time    2024-05-01T10:00:00Z\n\
                 version         3\npassword        n/a\ntoken           <none>",
                &[],
            ),
            (
                "Key         Value\n---         -----\nDB_PASSWORD_FILE /run/secrets/db",
                &[],
            ),
            (
                "Key         Value\n---         -----\nversion     3\n\npassword    Xk9vQ2mZp4Lw",
                &[],
            ),
        ] {
            finds_and_redacts(&d, text, want);
        }
    }

    /// An HTML table's row is read to 16 KiB at most: a closing tag whose `/` stands right
    /// at that bound (it panicked, found by an attack review), a cell's long content, and
    /// a value past it, read and judged without a panic.
    #[test]
    fn html_rows_at_their_read_bound_are_read_whole_or_cut_cleanly() {
        let d = PiiDetector::new();
        for pad in 16_360..16_400 {
            for text in [
                format!("<tr>{}</b>", "a".repeat(pad)),
                format!("<tr><td>{}</td><td></tr>", "é".repeat(pad / 2)),
                format!(
                    "<table><tr><th>Note</th><th>Password</th></tr><tr><td>{}</td><td>Xk9vQ2mZp4Lw</td></tr></table>",
                    "x".repeat(pad)
                ),
            ] {
                d.detect(&text);
            }
        }
        let short = "<table><tr><th>Note</th><th>Password</th></tr><tr><td>x</td><td>Xk9vQ2mZp4Lw</td></tr></table>";
        finds_and_redacts(&d, short, &["Xk9vQ2mZp4Lw"]);
    }

    /// A secret given in prose after its name, as an agent tells a person: after a verb
    /// (`is`, `was changed to`, `set … to`), a word's colon, a dash or an arrow, with up to
    /// six words between, when it looks made by a machine (mixed case and digits, no
    /// word, no name made of words and numbers); right after the name quoted or a code
    /// span; on the line after a label's colon, alone on its line or a fenced block's
    /// first line. Prose about a password, and the names, hashes, versions and models prose
    /// gives after the same verbs, hold none.
    #[test]
    fn secrets_given_in_prose_are_secrets() {
        let d = PiiDetector::new();
        for (text, want) in [
            (
                "Your new password is `Xk9vQ2mZp4Lw`.",
                &["Xk9vQ2mZp4Lw"][..],
            ),
            ("The password is Xk9vQ2mZp4Lw", &["Xk9vQ2mZp4Lw"]),
            (
                "I've set the password to `Xk9vQ2mZp4Lw`.",
                &["Xk9vQ2mZp4Lw"],
            ),
            ("Use password `Xk9vQ2mZp4Lw` to log in", &["Xk9vQ2mZp4Lw"]),
            (
                "The API key for staging is `Xk9vQ2mZp4Lw`.",
                &["Xk9vQ2mZp4Lw"],
            ),
            ("Set DB_PASSWORD to Xk9vQ2mZp4Lw in .env", &["Xk9vQ2mZp4Lw"]),
            ("- Password → `Xk9vQ2mZp4Lw`", &["Xk9vQ2mZp4Lw"]),
            ("Password - Xk9vQ2mZp4Lw", &["Xk9vQ2mZp4Lw"]),
            ("New password generated: Xk9vQ2mZp4Lw", &["Xk9vQ2mZp4Lw"]),
            (
                "password was changed to \"Xk9vQ2mZp4Lw\"",
                &["Xk9vQ2mZp4Lw"],
            ),
            ("The token you need is Xk9vQ2mZp4Lw.", &["Xk9vQ2mZp4Lw"]),
            (
                "The password has been reset to Tr0ub4dor&3!",
                &["Tr0ub4dor&3!"],
            ),
            (
                "The secret key is A3f9c2E1b7d4908e6F5a1c3B",
                &["A3f9c2E1b7d4908e6F5a1c3B"],
            ),
            ("Your new password is:\nXk9vQ2mZp4Lw", &["Xk9vQ2mZp4Lw"]),
            ("The password is **Xk9vQ2mZp4Lw**.", &["Xk9vQ2mZp4Lw"]),
            (
                "The password for bob on the staging database server is “Xk9vQ2mZp4Lw”.",
                &["Xk9vQ2mZp4Lw"],
            ),
            (
                "Your API key (keep it safe) is Xk9vQ2mZp4Lw",
                &["Xk9vQ2mZp4Lw"],
            ),
            (
                "The password for bob, our admin, is Xk9vQ2mZp4Lw",
                &["Xk9vQ2mZp4Lw"],
            ),
            ("adminPassword is now Xk9vQ2mZp4Lw", &["Xk9vQ2mZp4Lw"]),
            // The value on the line after its label's colon: in a fenced block, a code
            // span, a quoted string or bare (YAML's plain scalar on its next line).
            (
                "Here is the password:\n\n```text\nXk9vQ2mZp4Lw\n```",
                &["Xk9vQ2mZp4Lw"],
            ),
            ("**Password:**\n`Xk9vQ2mZp4Lw`", &["Xk9vQ2mZp4Lw"]),
            ("Your API key:\r\n\r\n\"Xk9vQ2mZp4Lw\"", &["Xk9vQ2mZp4Lw"]),
            ("db:\n  password:\n    Xk9vQ2mZp4Lw\n", &["Xk9vQ2mZp4Lw"]),
            // The name emphasised, a code span or with a comma after it; the value quoted
            // in parentheses right after the name; more arrows.
            ("**Password** is `Xk9vQ2mZp4Lw`", &["Xk9vQ2mZp4Lw"]),
            // Emphasis opened a few words before the name, or by its field's prefix
            // (`__Password__`); a question's mark after the name, answered with `It's`
            // or `that's`.
            (
                "**The new admin password** is Xk9vQ2mZp4Lw",
                &["Xk9vQ2mZp4Lw"],
            ),
            ("_Your API key_ is `Xk9vQ2mZp4Lw`", &["Xk9vQ2mZp4Lw"]),
            ("__password__ is Xk9vQ2mZp4Lw", &["Xk9vQ2mZp4Lw"]),
            ("What's the token? It's Xk9vQ2mZp4Lw.", &["Xk9vQ2mZp4Lw"]),
            ("the API key, that's Xk9vQ2mZp4Lw", &["Xk9vQ2mZp4Lw"]),
            // (Found by a twenty-first attack review.) Emphasis opened after a quote or a
            // dash; typographic apostrophes.
            (
                "I've reset it: \"**The new password** is Xk9vQ2mZp4Lw\"",
                &["Xk9vQ2mZp4Lw"],
            ),
            (
                r#"{"msg":"**The new password** is Xk9vQ2mZp4Lw"}"#,
                &["Xk9vQ2mZp4Lw"],
            ),
            (
                "Done—**the new password** is Xk9vQ2mZp4Lw",
                &["Xk9vQ2mZp4Lw"],
            ),
            ("The password? It’s Xk9vQ2mZp4Lw.", &["Xk9vQ2mZp4Lw"]),
            ("**The user’s password** is Xk9vQ2mZp4Lw", &["Xk9vQ2mZp4Lw"]),
            ("`DB_PASSWORD` is Xk9vQ2mZp4Lw.", &["Xk9vQ2mZp4Lw"]),
            (
                "The root password, for the record, is Xk9vQ2mZp4Lw.",
                &["Xk9vQ2mZp4Lw"],
            ),
            ("The password (`Xk9vQ2mZp4Lw`) works", &["Xk9vQ2mZp4Lw"]),
            (
                "the admin password ('Xk9vQ2mZp4Lw') works",
                &["Xk9vQ2mZp4Lw"],
            ),
            ("Password -- Xk9vQ2mZp4Lw", &["Xk9vQ2mZp4Lw"]),
            ("Password ⇒ Xk9vQ2mZp4Lw", &["Xk9vQ2mZp4Lw"]),
            ("Password ... Xk9vQ2mZp4Lw", &["Xk9vQ2mZp4Lw"]),
            ("The password is -> Xk9vQ2mZp4Lw", &["Xk9vQ2mZp4Lw"]),
            ("The api key is Xk9vQ2mZp4Lw", &["Xk9vQ2mZp4Lw"]),
            ("The access key is Xk9vQ2mZp4Lw", &["Xk9vQ2mZp4Lw"]),
            // The value before its name.
            ("Use `Xk9vQ2mZp4Lw` as the password.", &["Xk9vQ2mZp4Lw"]),
            (
                "I set \"Xk9vQ2mZp4Lw\" as your new admin password for the db.",
                &["Xk9vQ2mZp4Lw"],
            ),
            ("`Xk9vQ2mZp4Lw` is your new API key", &["Xk9vQ2mZp4Lw"]),
            ("`Xk9vQ2mZp4Lw` is the access token", &["Xk9vQ2mZp4Lw"]),
            ("Use ‘Xk9vQ2mZp4Lw’ as the password.", &["Xk9vQ2mZp4Lw"]),
            ("Use «Xk9vQ2mZp4Lw» as the password.", &["Xk9vQ2mZp4Lw"]),
            ("Use 'Xk9vQ2mZp4Lw' as the Password.", &["Xk9vQ2mZp4Lw"]),
            ("Use “Xk9vQ2mZp4Lw” as the secret key", &["Xk9vQ2mZp4Lw"]),
            ("Use **Xk9vQ2mZp4Lw** for the password.", &["Xk9vQ2mZp4Lw"]),
            (
                "`Xk9vQ2mZp4Lw` was the staging Wi-Fi password.",
                &["Xk9vQ2mZp4Lw"],
            ),
            (
                "`Xk9vQ2mZp4Lw` is also the current password",
                &["Xk9vQ2mZp4Lw"],
            ),
            ("`Xk9vQ2mZp4Lw` is the password you need", &["Xk9vQ2mZp4Lw"]),
            (
                "`Tv6Qm3Wz9Rkp8Ln` are the credentials",
                &["Tv6Qm3Wz9Rkp8Ln"],
            ),
            (
                "Use `Xk9vQ2mZp4LwXk9vQ2mZp4LwXk9vQ2mZp4LwXk9vQ2mZp4LwXk9vQ2mZp4LwXk9vQ2mZp4Lw` as the \
                 password.",
                &["Xk9vQ2mZp4LwXk9vQ2mZp4LwXk9vQ2mZp4LwXk9vQ2mZp4LwXk9vQ2mZp4LwXk9vQ2mZp4Lw"],
            ),
            // JSON-escaped quotes: the value alone, the escapes left (so the JSON stays
            // JSON).
            (
                r#"{"msg": "Use \"Xk9vQ2mZp4Lw\" as the password."}"#,
                &["Xk9vQ2mZp4Lw"],
            ),
            (
                r#"{"msg": "The password (\"Xk9vQ2mZp4Lw\") works"}"#,
                &["Xk9vQ2mZp4Lw"],
            ),
            (
                r#"{"msg": "**Password** is \"Xk9vQ2mZp4Lw\""}"#,
                &["Xk9vQ2mZp4Lw"],
            ),
            ("The password is --> Xk9vQ2mZp4Lw", &["Xk9vQ2mZp4Lw"]),
            // Random characters that looked made of words (a vowel in each part, a run of
            // six small letters): a word's start, and a word among them, are asked now.
            ("The password is u8jzPde0Ig", &["u8jzPde0Ig"]),
            ("The password is HTp8hkqdlm", &["HTp8hkqdlm"]),
            ("The password is qxezy3Lex7", &["qxezy3Lex7"]),
            // A label at its line's start, a tab and its value.
            ("user\tbob\npassword\tXk9vQ2mZp4Lw\n", &["Xk9vQ2mZp4Lw"]),
            ("Password\t\tXk9vQ2mZp4Lw", &["Xk9vQ2mZp4Lw"]),
            ("The password is … Xk9vQ2mZp4Lw", &["Xk9vQ2mZp4Lw"]),
            // Bare right after the name, as chat gives one: made by a machine, two digits
            // or more in it.
            ("wifi password Xk9vQ2mZp4Lw", &["Xk9vQ2mZp4Lw"]),
            ("user admin pass Xk9vQ2mZp4Lw", &["Xk9vQ2mZp4Lw"]),
            ("Username: admin Password Xk9vQ2mZp4Lw", &["Xk9vQ2mZp4Lw"]),
            ("use password Xk9vQ2mZp4Lw to log in", &["Xk9vQ2mZp4Lw"]),
            // None.
            (
                "the password abc12345 works; pass http2Client; pass sizeOf2D",
                &[],
            ),
            (
                "password VARCHAR(255); Password string; token HS256Signature",
                &[],
            ),
            ("`Xk9vQ2mZp4Lw` is the password hash", &[]),
            ("`Xk9vQ2mZp4Lw` as the token-limit", &[]),
            ("`HS256Algo` is the token algorithm", &[]),
            ("`ReportingRole2` is the secret name", &[]),
            ("`correct-horse` is the password", &[]),
            ("use `$DB_PASSWORD` as the password", &[]),
            ("username, password, and email are required", &[]),
            ("**Password** reset link was sent to you", &[]),
            ("`password` is the field, `Xk9vQ2mZp4Lw` the value", &[]),
            ("The password (optional) is empty", &[]),
            ("The access key ID is KmsKey2Arn9", &[]),
            ("The token type is Jwt2Bearer", &[]),
            ("Use `--force` for the password reset", &[]),
            ("This is the password", &[]),
            ("Use HS256 as the token algorithm", &[]),
            ("`Xk9vQ2mZp4Lw` is the token prefix", &[]),
            // (Found by an eighteenth attack review: a bare value before the name, read at
            // every word border — quadratic — and in code a cast's, an alias's or an
            // import's; a name followed by another noun.)
            ("let pw = md5(userPw2X) as Password;", &[]),
            ("SELECT Bcrypt2bHash as password FROM users", &[]),
            ("with open(req.body.pwdV2) as secret:", &[]),
            ("Use Pbkdf2Sha256 as the password hasher.", &[]),
            ("Forgot your password? It's easy to reset.", &[]),
            ("**The password** is required", &[]),
            ("a**b password** is Xk9vQ2mZp4Lw", &[]),
            ("** The password** is Xk9vQ2mZp4Lw", &[]),
            ("**Note:** the password** is Xk9vQ2mZp4Lw", &[]),
            ("Use `Pbkdf2Sha256` as the password hasher.", &[]),
            ("`AesGcm256Key` is the token signer.", &[]),
            ("username\tpassword\temail\n", &[]),
            // (Names made of words and acronyms written as words.)
            ("Return `CsrfToken2` as the token.", &[]),
            ("The token is K8sSecret.", &[]),
            ("The password (`UserPwdV3`) field is required.", &[]),
            ("`BFloat16` is the token.", &[]),
            ("The token is HttpClient2", &[]),
            ("password\tnot set", &[]),
            ("Password\tchangeme", &[]),
            ("a password\tXk9vQ2mZp4Lw", &[]),
            ("The password is incorrect.", &[]),
            ("The password is stored in Vault under secret/db.", &[]),
            ("The password must be at least 12 characters long.", &[]),
            ("if password is None:", &[]),
            ("The private key is 2048-bit RSA.", &[]),
            ("The token is gpt4o-mini's, 4096 long.", &[]),
            ("Reset the password to the default.", &[]),
            ("the API key is `YOUR_API_KEY`", &[]),
            ("password is $DB_PASSWORD", &[]),
            ("The password for the account was rotated yesterday.", &[]),
            ("Your password is (optional)", &[]),
            ("chpasswd <<<bob:x", &[]),
            ("the token is v2", &[]),
            (
                "The password for the new staging database cluster is in Vault.",
                &[],
            ),
            ("password:\n  secretKeyRef:\n    name: db", &[]),
            ("Password:\nMust be 12 characters or more.", &[]),
            ("password:\n  - hunter2\n", &[]),
            ("Password:\n\n```\nchangeme\n```", &[]),
            ("The password:\n`Xk9vQ2mZp4Lw` and more", &[]),
            // (Found by a sixteenth attack review: names, hashes, versions, models, types
            // and settings after a secret's name and a verb.)
            ("The password is SHA256-hashed before storage.", &[]),
            ("The secret is AES256GCM-encrypted at rest.", &[]),
            (
                "The token is Qwen2Tokenizer, the model Llama-3.1-8B-Instruct.",
                &[],
            ),
            (
                "The token request ID was 550e8400-e29b-41d4-a716-446655440000",
                &[],
            ),
            (
                "The token refresh commit is 3f2a9c1b7d4e8f6a0b1c2d3e4f5a6b7c8d9e0f1a.",
                &[],
            ),
            ("The token is proc_macro2::TokenStream", &[]),
            (
                "ALTER TABLE users RENAME COLUMN password TO password_bcrypt_2024;",
                &[],
            ),
            ("GRANT SELECT ON secret TO ReportingRole2;", &[]),
            ("Secret fetch error: AccessDeniedException2", &[]),
            ("The password is HTTP401Unauthorized.", &[]),
            ("Password requirements: Min8Chars1Upper", &[]),
            ("the token `Token2022Program` handles extensions", &[]),
            (
                "Delete the secret `prod-db-creds-2024` before re-creating it.",
                &[],
            ),
            ("Set the API key header to X-Api-Key2.", &[]),
            ("The token maps to 0x1F4A3B2C.", &[]),
            ("The password is src/auth/TokenService2.ts.", &[]),
            (
                "The token is SHA256withRSA, the secret io.k8s.api.core.v1.Secret.",
                &[],
            ),
            ("The secret is v1/Secret", &[]),
        ] {
            finds_and_redacts(&d, text, want);
        }
    }

    /// Prose's words after a name are read to a bound (96 bytes): a word whose comma
    /// stands right on it read past it and panicked (found by the reread), whatever comes
    /// after — a remark, a word, a dash.
    #[test]
    fn prose_read_to_its_bound_stops_there() {
        let d = PiiDetector::new();
        for pad in 60..120 {
            for tail in ["  (x) is Xk9vQ2mZp4Lw", "  abc is Xk9vQ2mZp4Lw", "  - x"] {
                d.detect(&format!("The password {},{tail}", "a".repeat(pad)));
            }
        }
        // (A bare value longer than the value's bound is redacted whole: an eighteenth
        // attack review found its tail past the bound left.)
        let long = format!("{}A1bC9", "Xk9vQ2mZp4Lw".repeat(22));
        finds_and_redacts(&d, &format!("The password is {long} and more"), &[&long]);
        // (A twentieth review: a `(` at the bound made the value a call's name, and a
        // quoted one past the bound, or a long random one holding a word by chance, was
        // left whole in clear.)
        let random = "A1KeU6aRpreh9Vloub20y3NFGjLEw5d4Nz2LgHsp9Ta8Gtelfgo6xIiVWEYu7YYrOcM3UxY8dhf3\
                      CUkEixwudbSibB2GofMts6fN01OSiMkLm7kIPGVX1gNEsYfnnxqGwqshqCxVXUY4St3pi3CtQbNj\
                      MoF3KcYwoJ8WT59ksQLf9lMD8D2GxbAOYAMsGzHW70iTtiGztrjufRitmc64J2arkUvFdku3KYeC\
                      n54Py1FdKAYkH7P8erMZTvDOG";
        finds_and_redacts(&d, &format!("The password is {random}. Then"), &[random]);
        let call = format!("{random}Q7z(XYZ9");
        finds_and_redacts(&d, &format!("The password is {call}. Then"), &[&call]);
        finds_and_redacts(&d, &format!("The password is `{random}`."), &[random]);
        finds_and_redacts(&d, &format!("`{random}` is the password."), &[random]);
        finds_and_redacts(
            &d,
            "The password is Hermes-3-Llama-3.1-8x7B-Vision-Instruct",
            &[],
        );
        // (Whatever byte stands at the bound: a nineteenth review found a tail left where a
        // `.` stood there.)
        for at_bound in [".", ",", ";", ")", ")."] {
            let long = format!(
                "{}{at_bound}{}",
                &"Xk9vQ2mZp4Lw".repeat(30)[..256 - at_bound.len()],
                "Qz7Wm3Rt9Kp2".repeat(5)
            );
            finds_and_redacts(&d, &format!("The password is {long} and more"), &[&long]);
        }
        // (An arrow after the verb right at the bound: a seventeenth attack review's
        // panic.)
        for pad in 80..100 {
            for arrow in ["->", "=>", "-->", "…", ":"] {
                for name in [
                    "The password",
                    "**Password**",
                    "The password,",
                    "the API key",
                ] {
                    for blank in ["", " "] {
                        let text =
                            format!("{name} is{}{arrow}{blank}Xk9vQ2mZp4Lw", " ".repeat(pad));
                        d.detect(&text);
                    }
                }
            }
        }
        finds_and_redacts(
            &d,
            "The password for bob, our admin, is Xk9vQ2mZp4Lw",
            &["Xk9vQ2mZp4Lw"],
        );
    }

    /// A password written into a command that reads it from its standard input: `echo`,
    /// `printf`, `yes` or PowerShell's `Write-Output` (in a group too), a here-string or a
    /// here-document, into `sudo -S`, `chpasswd` (the part after the colon), `passwd`,
    /// `smbpasswd -s`, `htpasswd -i`, `kinit`, `vncpasswd`, `cryptsetup`, `sshpass`,
    /// `vault login -`, hashing tools, a remote `sudo -S`, or a line with
    /// `--password-stdin`, `--with-token`, `--passphrase-fd 0` or `-pass stdin`.
    #[test]
    fn passwords_written_into_a_readers_standard_input_are_secrets() {
        let d = PiiDetector::new();
        for (text, want) in [
            (
                "echo 'S3cr3tPw99' | sudo -S apt-get update",
                &["S3cr3tPw99"][..],
            ),
            ("echo S3cr3tPw99|sudo -kS ls", &["S3cr3tPw99"]),
            // (sudo's options that take a value, `-R` and `--chroot` among them;
            // PowerShell's cmdlet.)
            ("echo S3cr3tPw99 | sudo -R /mnt -S true", &["S3cr3tPw99"]),
            (
                "echo S3cr3tPw99 | sudo --chroot /mnt -S true",
                &["S3cr3tPw99"],
            ),
            (
                "Write-Output \"S3cr3tPw99\" | docker login -u bob --password-stdin",
                &["S3cr3tPw99"],
            ),
            (
                "write-output 'S3cr3tPw99' | az acr login -n reg --password-stdin",
                &["S3cr3tPw99"],
            ),
            (
                "echo \"S3cr3tPw99\" | sudo --stdin -u app ls",
                &["S3cr3tPw99"],
            ),
            ("echo 'bob:S3cr3tPw99' | sudo chpasswd", &["S3cr3tPw99"]),
            (
                "echo \"bob:S3cr3tPw99\" | /usr/sbin/chpasswd",
                &["S3cr3tPw99"],
            ),
            (
                "echo -e 'S3cr3tPw99\\nS3cr3tPw99' | passwd bob",
                &["S3cr3tPw99\\nS3cr3tPw99"],
            ),
            ("echo 'S3cr3tPw99' | passwd --stdin bob", &["S3cr3tPw99"]),
            (
                "echo -e \"S3cr3tPw99\\nS3cr3tPw99\" | smbpasswd -s -a bob",
                &["S3cr3tPw99\\nS3cr3tPw99"],
            ),
            (
                "echo S3cr3tPw99 | htpasswd -i .htpasswd bob",
                &["S3cr3tPw99"],
            ),
            ("echo -n 'S3cr3tPw99' | kinit bob", &["S3cr3tPw99"]),
            // (VNC's password files, as images set them up.)
            (
                "echo 'S3cr3tPw99' | vncpasswd -f > ~/.vnc/passwd",
                &["S3cr3tPw99"],
            ),
            ("vncpasswd -f <<< 'S3cr3tPw99' > passwd", &["S3cr3tPw99"]),
            (
                "echo -n S3cr3tPw99 | cryptsetup luksOpen /dev/sdb1 vault -",
                &["S3cr3tPw99"],
            ),
            ("echo S3cr3tPw99 | sshpass ssh bob@h", &["S3cr3tPw99"]),
            ("echo 'S3cr3tPw99' | vault login -", &["S3cr3tPw99"]),
            (
                "printf '%s\\n' 'S3cr3tPw99' | docker login -u bob --password-stdin r.io",
                &["S3cr3tPw99"],
            ),
            ("printf 'S3cr3tPw99' | sudo -S true", &["S3cr3tPw99"]),
            (
                "echo 'S3cr3tPw99' | gh auth login --with-token",
                &["S3cr3tPw99"],
            ),
            (
                "echo S3cr3tPw99 | gpg --batch --passphrase-fd 0 -c f",
                &["S3cr3tPw99"],
            ),
            (
                "echo S3cr3tPw99 | openssl enc -aes-256-cbc -pass stdin -in f",
                &["S3cr3tPw99"],
            ),
            (
                r#"{"command": "echo \"S3cr3tPw99\" | sudo -S systemctl restart app"}"#,
                &["S3cr3tPw99"],
            ),
            // (Found by an attack review.) Groups, printf's several arguments, an old
            // default and a new password, a quote escaped inside, `yes`, hashing
            // tools, `$'…'`, redirections, wrappers, a remote `sudo -S`, here-strings.
            (
                "(echo 'S3cr3tPw99'; echo 'S3cr3tPw99') | passwd bob",
                &["S3cr3tPw99", "S3cr3tPw99"],
            ),
            (
                "{ echo S3cr3tPw99; echo S3cr3tPw99; } | passwd bob",
                &["S3cr3tPw99", "S3cr3tPw99"],
            ),
            (
                "printf '%s\\n' 'S3cr3tPw99' 'S3cr3tPw99' | passwd bob",
                &["S3cr3tPw99' 'S3cr3tPw99"],
            ),
            (
                "printf '%s\\n' 'bob:S3cr3tPw99' 'amy:Xy7pQ2mn!' | chpasswd",
                &["S3cr3tPw99' 'amy:Xy7pQ2mn!"],
            ),
            (
                "echo -e \"changeme\\nS3cr3tPw99\\nS3cr3tPw99\" | passwd",
                &["changeme\\nS3cr3tPw99\\nS3cr3tPw99"],
            ),
            ("echo \"S3cr\\\"tPw99\" | sudo -S ls", &["S3cr\\\"tPw99"]),
            (
                r#"{"command": "echo \"S3cr\\\"tPw99\" | sudo -S ls"}"#,
                &[r#"S3cr\\\"tPw99"#],
            ),
            ("yes 'S3cr3tPw99' | passwd bob", &["S3cr3tPw99"]),
            (
                "echo S3cr3tPw99 | openssl passwd -6 -stdin",
                &["S3cr3tPw99"],
            ),
            (
                "echo S3cr3tPw99 | mkpasswd --stdin -m sha-512",
                &["S3cr3tPw99"],
            ),
            ("echo $'S3cr3tPw99\\n' | sudo -S ls", &["S3cr3tPw99\\n"]),
            ("echo S3cr3tPw99 2>/dev/null | sudo -S ls", &["S3cr3tPw99"]),
            (
                "echo S3cr3tPw99 | env LC_ALL=C nice -n 5 \\sudo -S ls",
                &["S3cr3tPw99"],
            ),
            (
                "echo 'S3cr3tPw99' | ssh admin@h 'sudo -S systemctl restart app'",
                &["S3cr3tPw99"],
            ),
            ("sudo -S apt-get update <<< 'S3cr3tPw99'", &["S3cr3tPw99"]),
            ("chpasswd <<<bob:S3cr3tPw99", &["S3cr3tPw99"]),
            (
                "docker login -u bob --password-stdin <<< \"S3cr3tPw99\"",
                &["S3cr3tPw99"],
            ),
            (
                r#"{"cmd": "sudo -S ls <<< \"S3cr3tPw99\""}"#,
                &["S3cr3tPw99"],
            ),
            // Here-documents: to the reader, or piped into one; `<<-` and its tabs; a tool
            // call's JSON.
            ("chpasswd <<EOF\nbob:S3cr3tPw99\nEOF", &["S3cr3tPw99"]),
            (
                "cat <<'EOF' | chpasswd\nbob:S3cr3tPw99\namy:Xy7pQ2mn!\nEOF\necho done",
                &["S3cr3tPw99\namy:Xy7pQ2mn!"],
            ),
            (
                "passwd bob <<-END\n\tS3cr3tPw99\n\tS3cr3tPw99\n\tEND",
                &["S3cr3tPw99\n\tS3cr3tPw99"],
            ),
            (
                "docker login -u bob --password-stdin << \"EOF\"\nS3cr3tPw99\nEOF\n",
                &["S3cr3tPw99"],
            ),
            (
                r#"{"cmd": "chpasswd <<EOF\nbob:S3cr3tPw99\nEOF"}"#,
                &["S3cr3tPw99"],
            ),
            // (Found by a ninth attack review.) A here-string's bare word before a tool
            // call's next field; its command after a prompt, a step's key, `RUN`, `if`, a
            // backtick, inside `sh -c '…'` or a remote command; sudo's options with values;
            // other commands in a group; a line continued after or before the pipe;
            // `timeout`; filters between; `$'…'` with `\'`; `printf --`; `|&`.
            (
                r#"{"command": "sudo -S ls <<< S3cr3tPw99", "timeout": 5}"#,
                &["S3cr3tPw99"],
            ),
            ("$ sudo -S apt update <<< 'S3cr3tPw99'", &["S3cr3tPw99"]),
            ("  shell: chpasswd <<< \"bob:S3cr3tPw99\"", &["S3cr3tPw99"]),
            ("RUN chpasswd <<< \"root:S3cr3tPw99\"", &["S3cr3tPw99"]),
            (
                "if sudo -S true <<< S3cr3tPw99; then ls; fi",
                &["S3cr3tPw99"],
            ),
            ("x=`sudo -S ls <<< S3cr3tPw99`", &["S3cr3tPw99"]),
            ("sh -c 'sudo -S ls <<< S3cr3tPw99'", &["S3cr3tPw99"]),
            (
                "ssh h \"sudo --user bob -S ls <<< S3cr3tPw99\"",
                &["S3cr3tPw99"],
            ),
            (
                "(echo S3cr3tPw99; sleep 1; echo S3cr3tPw99) | passwd bob",
                &["S3cr3tPw99", "S3cr3tPw99"],
            ),
            (
                "(echo S3cr3tPw99 && echo S3cr3tPw99) | passwd bob",
                &["S3cr3tPw99", "S3cr3tPw99"],
            ),
            (
                "echo S3cr3tPw99 | ssh h sudo -iu bob -S reboot",
                &["S3cr3tPw99"],
            ),
            (
                "echo S3cr3tPw99 |\n  timeout 10 sudo -S ls",
                &["S3cr3tPw99"],
            ),
            ("echo S3cr3tPw99 \\\n | sudo -S ls", &["S3cr3tPw99"]),
            (
                "yes S3cr3tPw99 | head -2 | tee /dev/null | passwd bob",
                &["S3cr3tPw99"],
            ),
            ("echo $'S3cr\\'tPw99' | sudo -S ls", &["S3cr\\'tPw99"]),
            (
                "printf -- '%s\\n' S3cr3tPw99 |& sudo -S ls",
                &["S3cr3tPw99"],
            ),
            // (Found by a tenth.) Here-documents indented in a YAML block, their delimiter
            // JSON-escaped in quotes, after a `\`, with a `-`; more than eight lines; a
            // remote reader that is no `sudo`.
            (
                "runcmd:\n  - |\n    chpasswd <<EOF\n    bob:S3cr3tPw99\n    EOF",
                &["S3cr3tPw99"],
            ),
            (
                r#"{"command":"docker login -u bob --password-stdin r.io << \"EOF\"\nS3cr3tPw99\nEOF"}"#,
                &["S3cr3tPw99"],
            ),
            ("chpasswd <<\\EOF\nbob:S3cr3tPw99\nEOF", &["S3cr3tPw99"]),
            (
                "chpasswd <<'END-PW'\nbob:S3cr3tPw99\nEND-PW",
                &["S3cr3tPw99"],
            ),
            (
                "chpasswd <<EOF\na:b\nc:d\ne:f\ng:h\ni:j\nk:l\nm:n\nbob:S3cr3tPw99\nEOF",
                &["b\nc:d\ne:f\ng:h\ni:j\nk:l\nm:n\nbob:S3cr3tPw99"],
            ),
            (
                "ssh -p 2222 root@h chpasswd <<EOF\nbob:S3cr3tPw99\nEOF",
                &["S3cr3tPw99"],
            ),
            // (Found by an eleventh.) In a page's markup, the delimiter glued to a closing
            // tag; more than sixteen lines.
            (
                "<pre>chpasswd &lt;&lt;EOF\nroot:S3cr3tPw99\nEOF</pre>",
                &["S3cr3tPw99"],
            ),
            (
                "<p>Run <code>sudo -S ls <<< S3cr3tPw99</code></p>",
                &["S3cr3tPw99"],
            ),
            (
                "chpasswd <<EOF\nu1:a\nu2:b\nu3:c\nu4:d\nu5:e\nu6:f\nu7:g\nu8:h\nu9:i\nu10:j\nu11:k\nu12:l\nu13:m\nu14:n\nu15:o\nu16:p\nbob:S3cr3tPw99\nEOF",
                &[
                    "a\nu2:b\nu3:c\nu4:d\nu5:e\nu6:f\nu7:g\nu8:h\nu9:i\nu10:j\nu11:k\nu12:l\nu13:m\nu14:n\nu15:o\nu16:p\nbob:S3cr3tPw99",
                ],
            ),
        ] {
            finds_and_redacts(&d, text, want);
        }
        for text in [
            // A variable, a placeholder, a word, no reader of passwords (or `sudo` without
            // `-S`, sshpass given one), `||`, several words, printf's `-v`, a file.
            "echo \"$SUDO_PASS\" | sudo -S ls",
            "echo $TOKEN | docker login -u bob --password-stdin",
            "echo '<your-password>' | sudo -S ls",
            "echo password | sudo -S ls",
            "echo S3cr3tPw99 | grep S3",
            "echo 'S3cr3tPw99' | sudo ls",
            "echo S3cr3tPw99 | sshpass -p x ssh h",
            "echo S3cr3tPw99 || sudo -S ls",
            "echo build S3cr3tPw99 done | sudo -S tee log",
            "printf -v pw S3cr3tPw99 | sudo -S ls",
            "printf '%s\\n' | sudo -S ls",
            "echo S3cr3tPw99 > pw.txt; cat pw.txt | sudo -S ls",
            "echo 'bob' | chpasswd",
            "Use echo with sudo -S only in scripts you trust.",
            // A command's output, `yes` alone, a group of other commands, a here-string
            // into a command that reads no password, or given a variable, runs of `<`.
            "echo \"`cat ~/pw.txt`\" | sudo -S ls",
            "yes | sudo apt-get install x; (echo hi; ls) | sudo -S tee f",
            "cat <<< 'S3cr3tPw99'; sudo -S ls <<< \"$PW\"; grep x <<< \"$(ls)\"",
            "a <<<<<<<<< S3cr3tPw99",
            // A here-document to no reader, given a variable, never closed; C++'s `<<`.
            "cat <<EOF > app.conf\nS3cr3tPw99\nEOF",
            "cat <<EOF | chpasswd\nbob:$NEW_PW\nEOF",
            "chpasswd <<EOF\nbob:S3cr3tPw99",
            "std::cout << S3cr3tPw99 << std::endl; x = a << b | c",
            // (Found by a ninth attack review.) Code that builds the command; commands
            // given to `su` (which reads its password from the terminal: what is written
            // to it is a script — found by a tenth); a phrase into `kinit`; a variable's
            // default before the colon.
            "cmd = \"echo \" + pw + \" | sudo -S ls\"",
            "cmd = \"echo '\" + password + \"' | sudo -S ls\"",
            "su - postgres <<< \"psql -c 'SELECT 1'\"; su bob -c bash <<< \"cd /srv && make build2\"",
            "echo \"Line 1 of 3\" | kinit",
            "su - deploy <<EOF\npython3\nEOF\necho whoami2 | su - app",
            // A here-document written to a file, a pipe after the command that writes it.
            "cat <<EOF > app.env; echo \"$PAT\" | docker login --password-stdin\nDB_HOST=S3cr3tPw99\nEOF",
            "echo \"${USER:-bob}:${PW}\" | chpasswd",
            "Write-Output $pw | docker login --password-stdin",
            "Write-Output \"Deploy2 done\" | Out-File log.txt",
        ] {
            assert_eq!(found(text), [], "{text}");
        }
    }

    /// A failed run token skips the rest of its run (see `patterns::run_token_reach`); a
    /// command word that ends the run after a dash (`sk-x-echo`) is read as it is read
    /// without the token before it: the command words are searched in a pass of their own.
    /// (Found splitting the passes for speed: in the run token's pass, its skip passed over
    /// each of these.)
    #[test]
    fn a_command_at_the_end_of_a_failed_tokens_run_is_read() {
        let d = PiiDetector::new();
        let mut checked = 0;
        for token in ["sk-aaaa-", "sk-test-test-", "xoxb-aaaa-", "sk-ab_cd-"] {
            for command in [
                "echo S3cr3tPw99 | sudo -S ls",
                "printf '%s\\n' S3cr3tPw99 | sudo -S ls",
                "user alice on >S3cr3tPw99 ~* +@all",
                "htpasswd -b .htpasswd bob S3cr3tPw99",
                "password=S3cr3tPw99",
            ] {
                let text = format!("run {token}{command}");
                finds_and_redacts(&d, &text, &["S3cr3tPw99"]);
                checked += 1;
            }
        }
        assert_eq!(checked, 20);
    }

    /// A value that triggers of two passes find (`-password=` in the commands' pass,
    /// `password=` in the run tokens' one byte later) is held as one: a value of another
    /// kind that starts where it does is still read (a card, an IBAN or a phone number
    /// given as the option's value, taken whole), and a value before it is reported apart.
    /// (Review 30 of the split passes: reported at once, the first value let the card's
    /// last groups through, and an address or an IP address before it went unreported by
    /// `detect`.)
    #[test]
    fn a_value_two_passes_find_leaves_nothing_of_another_kind_behind() {
        for (text, want) in [
            (
                "app -password=4111 1111 1111 1111",
                (Entity::CreditCard, "4111 1111 1111 1111"),
            ),
            (
                "--password=4111 1111 1111 1111",
                (Entity::CreditCard, "4111 1111 1111 1111"),
            ),
            (
                "app -ClientSecret=DE89 3704 0044 0532 0130 00",
                (Entity::Iban, "DE89 3704 0044 0532 0130 00"),
            ),
            (
                "app -password=GB82 WEST 1234 5698 7654 32",
                (Entity::Iban, "GB82 WEST 1234 5698 7654 32"),
            ),
            (
                "redis-cli auth (415) 555-2671",
                (Entity::Phone, "(415) 555-2671"),
            ),
            (
                "redis-cli AUTH (415) 555-2671",
                (Entity::Phone, "(415) 555-2671"),
            ),
            ("redis-cli auth a@b.th “2", (Entity::Email, "a@b.th")),
            (
                "AUTH 0.0.0.1 a99e'redis-cli",
                (Entity::IpAddress, "0.0.0.1"),
            ),
            // A card at the start of a secret that goes on past it: the secret, with the
            // card glued after it (review 31: a card, the other's last groups in clear).
            (
                "--password=4111111111111111x4111 1111 1111 1111",
                (Entity::Secret, "4111111111111111x4111 1111 1111 1111"),
            ),
            (
                "-password=4111111111111111x4111 1111 1111 1111",
                (Entity::Secret, "4111111111111111x4111 1111 1111 1111"),
            ),
            (
                "password=4111111111111111x4111 1111 1111 1111",
                (Entity::Secret, "4111111111111111x4111 1111 1111 1111"),
            ),
            (
                "--password=10.0.0.1/4111 1111 1111 1111",
                (Entity::Secret, "10.0.0.1/4111 1111 1111 1111"),
            ),
            // (A key as an address's local part: the whole address, as one pass read it.)
            (
                "htpasswd -b f '\"sk-p12Cd34Ef56Gh78Ij90a@b.en']t42",
                (Entity::Email, "sk-p12Cd34Ef56Gh78Ij90a@b.en"),
            ),
        ] {
            assert!(found(text).contains(&want), "{text}: {:?}", found(text));
        }
    }

    /// A command's name as another command's argument (a file, a key's alias, a table named
    /// like it) hides no password after it, for every command the validators know, as
    /// the outer command's argument and its options' value: it ends the outer command's
    /// line for the validator (so a run of names is read once), and the line after it is
    /// read as the outer command's too (see `validate::password_of_commands_before`).
    /// (Found adding `ssh-keygen`, which as a name that ended every line let `curl -T
    /// ssh-keygen -u bob:…` through; the first commands' names did so for each other:
    /// `keytool -import -alias mysql -storepass …`, 162 of 280 texts probed.)
    #[test]
    fn a_commands_name_as_an_argument_hides_no_password_after_it() {
        let d = PiiDetector::new();
        let mut checked = 0;
        for c in patterns::PASSWORD_COMMANDS {
            for text in [
                format!("curl -T {c} -u admin:S3cr3tPw99 ftp://h/"),
                format!("curl -T {c}.sql -u admin:S3cr3tPw99 ftp://h/"),
                format!("mysql -u root {c} -pS3cr3tPw99"),
                format!("zip -r {c} -P S3cr3tPw99 dir"),
                format!("redis-cli -n 0 SET {c} x -a S3cr3tPw99"),
                format!("keytool -import -alias {c} -storepass S3cr3tPw99"),
                format!("ssh-keygen -f {c} -N S3cr3tPw99"),
                format!("7z a x.7z {c} -pS3cr3tPw99"),
                format!("ldapsearch -b {c} -w S3cr3tPw99"),
                format!("rar a x.rar {c} -pS3cr3tPw99"),
                format!("openssl enc -in {c} -passin pass:S3cr3tPw99"),
                format!("ssh-keygen -f {c} -pP S3cr3tPw99"),
                // Two names between.
                format!("keytool -import -alias {c} -file curl -storepass S3cr3tPw99"),
                // Continued onto an indented line, no blank before the `\` (found by an
                // attack review).
                format!("curl -v\\\n  -T {c} -u admin:S3cr3tPw99 ftp://h/"),
                format!("keytool -list -keystore ks\\\r\n\t-alias {c} -storepass S3cr3tPw99"),
            ] {
                let at = text.find("S3cr3tPw99").unwrap_or_default();
                let covered = d.detect(&text).iter().any(|f| {
                    f.entity == Entity::Secret && f.start <= at && at + "S3cr3tPw99".len() <= f.end
                });
                assert!(covered, "{text}: {:?}", found(&text));
                checked += 1;
            }
        }
        assert_eq!(checked, 15 * patterns::PASSWORD_COMMANDS.len());
        // (Found by an attack review: continued lines, a registry's login whose user is a
        // command's name, openssl's `-passout` after names with a `-p` of their own.)
        for (text, want) in [
            (
                "keytool -import \\\n  -alias mysql \\\n  -storepass S3cr3tPw99",
                "S3cr3tPw99",
            ),
            ("zip -r a.zip \\\n  mysql \\\n  -P S3cr3tPw99", "S3cr3tPw99"),
            (
                "docker login -u curl -p S3cr3tPw99 registry.example.com",
                "S3cr3tPw99",
            ),
            (
                "openssl pkcs12 -export -in mysql.crt -inkey mysql.key -out mysql.p12 -passout pass:S3cr3tPw99",
                "S3cr3tPw99",
            ),
            (
                "openssl enc -in sshpass -pass pass:S3cr3tPw99",
                "S3cr3tPw99",
            ),
            // (Found by a third: digits after the last part of a path named like a command,
            // after sshpass's `-p`, glued to a MySQL client's `-p`; a short old passphrase.)
            ("zip -r db.zip /var/lib/mysql -P 48213", "48213"),
            ("sshpass -p 48213 ssh -p 2222 user@host", "48213"),
            ("mysql -u root -p12345 db", "12345"),
            (
                "ssh-keygen -p -P 1234 -N N3wPassw0rd -f k",
                "1234 -N N3wPassw0rd",
            ),
        ] {
            assert_eq!(found(text), [(Entity::Secret, want)], "{text}");
        }
        // What follows the outer command's name stays what it was: no option of its, a
        // variable, a port — also where ssh-keygen, whose passphrase may be digits, came
        // before (found by an attack review).
        for not in [
            "Generate a key with ssh-keygen then connect with mysql -h db -P 3306",
            "{\"steps\": [\"ssh-keygen -t rsa\", \"mysql -h db -P 3306\"]}",
            "run ssh-keygen or mongo --host db -p 27017",
            "Set a password with ldappasswd -x -W\\\nthen check with curl -s localhost:8080/health",
            "curl -T mysql -p 3306 ftp://h/",
            "keytool -list -alias mysql -storepass:env PW",
            "zip -r curl -P $ZIP_PW dir",
            "mysql -h redis-cli -p 3306",
            "curl https://h -o mysql -x proxy:8080",
        ] {
            assert!(found(not).is_empty(), "{not}: {:?}", found(not));
        }
    }

    /// A registry's tool before `login` is found as splitting the line's last 64 bytes into
    /// words found it (the way it was read before, kept here as the oracle), over random
    /// texts of tools' names, paths, `.exe`, separators and terminators.
    #[test]
    fn a_registry_tool_before_login_is_found_as_splitting_words_found_it() {
        fn split_words(b: &[u8], s: usize) -> bool {
            let from = s.saturating_sub(64);
            let from = b[from..s]
                .iter()
                .rposition(|&c| matches!(c, b'\n' | b'|' | b';' | b'&'))
                .map_or(from, |i| from + i + 1);
            b[from..s]
                .split(|&c| !(c.is_ascii_alphanumeric() || c == b'.' || c == b'/' || c == b'-'))
                .any(|w| {
                    let w = w.rsplit(|&c| c == b'/').next().unwrap_or(w);
                    // (A Windows program's name, `.exe` in any case, in any case.)
                    let exe = w.len() > 4 && w[w.len() - 4..].eq_ignore_ascii_case(b".exe");
                    let w = &w[..w.len() - usize::from(exe) * 4];
                    validate::REGISTRY_CLIS
                        .iter()
                        .any(|c| w == c.as_bytes() || (exe && w.eq_ignore_ascii_case(c.as_bytes())))
                })
        }
        let pieces = [
            "docker",
            "oc",
            "az",
            "cf",
            "helm",
            "registry",
            "buildah",
            "xdocker",
            "dockers",
            "/usr/bin/",
            "C:\\bin\\",
            ".exe",
            ".EXE",
            ".Exe",
            "Docker",
            "OC",
            " ",
            "\t",
            "-",
            ".",
            "/",
            "\n",
            "|",
            ";",
            "&",
            "a",
            "é",
            "login",
            "acr",
            "--password-stdin",
            "x",
        ];
        let mut next = numbers(0x0b5e_55ed_7a1b_3c4d);
        let (mut yes, mut no) = (0, 0);
        for _ in 0..60_000 {
            let len = next(24);
            let text: String = (0..len).map(|_| pieces[next(pieces.len())]).collect();
            let b = text.as_bytes();
            let found = validate::registry_cli_before(b, b.len());
            assert_eq!(found, split_words(b, b.len()), "{text:?}");
            if found {
                yes += 1;
            } else {
                no += 1;
            }
        }
        assert!(yes > 5_000 && no > 5_000, "{yes} {no}");
    }

    /// A command the reach passes over without validating it (see
    /// `patterns::failing_chain`) has no option that may give a password: wherever
    /// `command_password` finds one, `may_give_password` says its line may give one — over
    /// random lines of every command's options, values, quotes and separators.
    #[test]
    fn a_line_said_to_give_no_password_gives_none() {
        let pieces = [
            "-p",
            "-P",
            "-u",
            "-U",
            "--user",
            "--proxy-user",
            "-a",
            "--pass",
            "-w",
            "-s",
            "-hp",
            "-storepass",
            "-keypass",
            "-srcstorepass",
            "-destkeypass",
            "-passin",
            "-passout",
            "-pass",
            "-password",
            "-k",
            "-x",
            "-rP",
            "-xw",
            "-ZZw",
            "-pS3cr3t99",
            "-hpS3cr3t99",
            "-wS3cr3t99",
            "-uS3cr3t99:x",
            "pass:S3cr3t99",
            "S3cr3t99",
            "bob:S3cr3t99",
            "bob%S3cr3t99",
            "bob,S3cr3t99",
            "=",
            "\"",
            "'",
            " ",
            "  ",
            "-",
            "--",
            ",",
            "\\",
            "é",
            "a",
            "\\\n",
            "$PW",
            "8080:80",
        ];
        let mut next = numbers(0x5eed_c4a1_2b3d_9e01);
        let (mut passing, mut said) = (0, 0);
        for command in patterns::PASSWORD_COMMANDS {
            // (A registry's `login` after its tool.)
            let tool = if command == "login" { "docker " } else { "" };
            for _ in 0..1_500 {
                let len = 1 + next(8);
                let line: String = (0..len)
                    .map(|_| [pieces[next(pieces.len())], " "].concat())
                    .collect();
                let text = format!("{tool}{command} {line}");
                let b = text.as_bytes();
                let (start, end, _) = validate::command_line(b, tool.len(), b.len());
                let may = validate::may_give_password(&b[start..end], command);
                said += usize::from(may);
                if validate::command_password(&text, tool.len(), command).is_some() {
                    passing += 1;
                    assert!(may, "{text}");
                }
            }
        }
        // (Both answers are common: the test can fail.)
        assert!(passing > 2_000 && said > passing, "{passing} {said}");
    }

    /// A secure string's arguments are read up to 1 KiB: every form cut at every length,
    /// and padded so that its quote, parameter or `:` falls on that end, is read without
    /// a panic — and a run of the cmdlet's name costs one read each (see `linear.rs`).
    #[test]
    fn a_secure_strings_arguments_are_read_within_their_window() {
        let d = PiiDetector::new();
        let forms = [
            "ConvertTo-SecureString -AsPlainText:$true 'S3cr3tPw99' -Force",
            "ConvertTo-SecureString \"a`\"b''c\" `\r\n -String x -Key k",
            "convertto-securestring é'S3cr3t' -AsPlainText",
        ];
        for form in forms {
            for cut in 0..=form.len() {
                if let Some(f) = form.get(..cut) {
                    d.detect(f);
                }
            }
            for pad in 1000..1040 {
                let (head, tail) = form.split_at(23);
                d.detect(&format!("{head}{}{tail}", " ".repeat(pad)));
                d.detect(&format!("{head}'{}' -AsPlainText", "x".repeat(pad)));
                d.detect(&format!("{head}{}-AsPlainText:", "-a ".repeat(pad / 3)));
            }
        }
        // (Found past a long run of blanks only within the window.)
        let near = format!(
            "ConvertTo-SecureString {}S3cr3tPw99 -AsPlainText",
            " ".repeat(900)
        );
        assert_eq!(d.detect(&near).len(), 1);
    }

    /// A command's line ends after 2 KiB: an option's quote right at that end is not read
    /// past it (found by an attack review: the scan panicked on these).
    #[test]
    fn a_quote_at_the_end_of_a_commands_line_is_read_within_it() {
        let d = PiiDetector::new();
        for n in 2020..2050 {
            let pad = "x".repeat(n);
            for text in [
                format!("sshpass {pad} -p'S3cr3t99'"),
                format!("sshpass {pad} -p\"S3cr3t99\""),
                format!("sshpass {pad} -p', 'S3cr3t99'"),
                format!("[\"sshpass\", \"{pad}\", \"-p\", \"S3cr3t99\"]"),
                format!("curl {pad} -u'a:S3cr3t99'"),
            ] {
                d.detect(&text);
            }
        }
    }

    /// A candidate whose trigger's match is taken as its exact match (a command line's, a
    /// field named for a secret) is one: the scan's debug assertion compares the two for
    /// every such candidate, here for every name, separator and quoting, valid or not.
    /// Each pass has the fully built DFAs its build asks for (the digit-led pass its
    /// search's; every pass whose triggers a regex reads its anchored all-matches one, which
    /// a value glued to an address's domain is looked for with): none grew past
    /// `DENSE_DFA_BYTES` and was left out.
    #[test]
    fn every_pass_has_its_fully_built_automata() {
        let d = PiiDetector::new();
        assert_eq!(d.compiled.passes.len(), PASSES);
        for (i, pass) in d.compiled.passes.iter().enumerate() {
            assert_eq!(pass.dense.is_some(), DENSE_PASSES.contains(&i), "pass {i}");
            assert_eq!(
                pass.all_dense.is_some(),
                DENSE_PASSES.contains(&i) || pass.hand.is_none(),
                "pass {i}"
            );
        }
    }

    /// Every regex a scan searches by stays a lazy DFA over both dev sets' texts and runs
    /// of hostile units: the meta regex falls back to the PikeVM, many times slower, for
    /// any search its lazy DFA gives up on (its cache cleared three times with few bytes
    /// read per state, or a Unicode word boundary before a non-ASCII byte), and for every
    /// search if the lazy DFA cannot be built at all. Each regex is rebuilt here as the
    /// meta regex builds its lazy DFAs (forward and reverse, the same cache and limits) and
    /// searched match after match: none may fail, and no cache may even be cleared.
    #[test]
    fn every_regex_stays_a_lazy_dfa() {
        use regex_automata::hybrid::dfa::DFA;
        use regex_automata::hybrid::regex::Regex as Hybrid;
        use regex_automata::nfa::thompson;
        let build = |patterns: &[&str], kind: MatchKind, cache: usize| -> Hybrid {
            let config = |kind: MatchKind| {
                DFA::config()
                    .match_kind(kind)
                    .starts_for_each_pattern(true)
                    .unicode_word_boundary(true)
                    .cache_capacity(cache)
                    .skip_cache_capacity_check(false)
                    .minimum_cache_clear_count(Some(3))
                    .minimum_bytes_per_state(Some(10))
            };
            let limit = Some(64 << 20);
            let fwd = DFA::builder()
                .configure(config(kind))
                .syntax(syntax::Config::new())
                .thompson(thompson::Config::new().nfa_size_limit(limit))
                .build_many(patterns);
            let rev = DFA::builder()
                .configure(config(MatchKind::All))
                .syntax(syntax::Config::new())
                .thompson(thompson::Config::new().reverse(true).nfa_size_limit(limit))
                .build_many(patterns);
            match (fwd, rev) {
                (Ok(fwd), Ok(rev)) => Hybrid::builder().build_from_dfas(fwd, rev),
                (fwd, rev) => panic!("no lazy DFA for {patterns:?}: {fwd:?} {rev:?}"),
            }
        };
        let mut texts: Vec<String> = [
            include_str!("../../tests/data/pii-dev.jsonl"),
            include_str!("../../tests/data/pii-field-dev.jsonl"),
        ]
        .iter()
        .flat_map(|set| set.lines())
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|r| r["text"].as_str().map(str::to_owned))
        .collect();
        for unit in [
            "password=x AUTH a --password y echo z | sudo -S ls ",
            "\"key\": \"",
            "variable \"unseal_key\" {\n  description = \"x\"\n",
            "é@例子.广告 ",
            "PASS x\n",
            "1 2-3 a: eyJa- ",
        ] {
            texts.push(unit.repeat(4096 / unit.len()));
        }
        // Searched match after match, from each match's end (one byte on past an empty
        // one): how many times the cache was cleared.
        let search = |re: &Hybrid, name: &str| {
            let mut cache = re.create_cache();
            for text in &texts {
                let mut at = 0;
                while at <= text.len() {
                    match re.try_search(&mut cache, &Input::new(text).range(at..)) {
                        Ok(Some(m)) => at = m.end().max(m.start() + 1),
                        Ok(None) => break,
                        Err(e) => panic!("{name} gave up at {at} of {text:?}: {e}"),
                    }
                }
            }
            cache.forward().clear_count() + cache.reverse().clear_count()
        };
        let d = PiiDetector::new();
        for (i, pass) in d.compiled.passes.iter().enumerate() {
            if pass.hand.is_some() {
                continue;
            }
            let triggers: Vec<&str> = pass.triggers.iter().map(String::as_str).collect();
            for kind in [MatchKind::LeftmostFirst, MatchKind::All] {
                let re = build(&triggers, kind, DFA_CACHE_BYTES);
                let cleared = search(&re, &format!("pass {i} ({kind:?})"));
                assert_eq!(cleared, 0, "pass {i} ({kind:?}) filled its cache");
            }
        }
        // A kind's own regexes: an exact pattern is searched where a trigger of a kind with
        // it matches (anchored there if the kind is), to the text's end, one cache for the
        // kinds that share it as the scan shares it.
        let mut exacts: Vec<(&str, Vec<(&str, bool)>)> = Vec::new();
        let all = specs();
        for sp in &all {
            let name = format!("{:?} {:.60}", sp.entity, sp.trigger);
            for re in [&sp.hand_regex, &sp.at_start].into_iter().flatten() {
                let cleared = search(
                    &build(&[re], MatchKind::LeftmostFirst, KIND_CACHE_BYTES),
                    &name,
                );
                assert_eq!(cleared, 0, "{name} filled its cache");
            }
            if sp.exact.is_empty() {
                continue;
            }
            let kind = (sp.trigger.as_str(), sp.anchored);
            match exacts.iter_mut().find(|(e, _)| *e == sp.exact) {
                Some((_, kinds)) => kinds.push(kind),
                None => exacts.push((&sp.exact, vec![kind])),
            }
        }
        assert!(exacts.len() > 15, "{}", exacts.len());
        for (pattern, kinds) in &exacts {
            let exact = build(&[pattern], MatchKind::LeftmostFirst, KIND_CACHE_BYTES);
            let mut ec = exact.create_cache();
            for &(trigger, anchored) in kinds {
                let name = format!("{trigger:.60}");
                let trigger = build(&[trigger], MatchKind::LeftmostFirst, KIND_CACHE_BYTES);
                let mut tc = trigger.create_cache();
                let anchored = if anchored {
                    Anchored::Yes
                } else {
                    Anchored::No
                };
                for text in &texts {
                    let mut at = 0;
                    while let Some(m) = trigger
                        .try_search(&mut tc, &Input::new(text).range(at..))
                        .unwrap_or_else(|e| panic!("{name} gave up in {text:?}: {e}"))
                    {
                        let input = Input::new(text).range(m.start()..).anchored(anchored);
                        if let Err(e) = exact.try_search(&mut ec, &input) {
                            panic!("{name}'s exact gave up at {} of {text:?}: {e}", m.start());
                        }
                        at = next_char(text, m.start());
                    }
                }
            }
            let cleared = ec.forward().clear_count() + ec.reverse().clear_count();
            assert_eq!(cleared, 0, "{pattern:.60} filled its cache");
        }
    }

    /// A pass searched without its prefilter (`Pass::plain`, when its candidates come near
    /// one another) finds what the pass's own search finds, from every 23rd place of both
    /// dev sets' texts and of a text dense with candidates.
    #[test]
    fn a_pass_searched_without_its_prefilter_finds_the_same() {
        let d = PiiDetector::new();
        let mut texts: Vec<String> = [
            include_str!("../../tests/data/pii-dev.jsonl"),
            include_str!("../../tests/data/pii-field-dev.jsonl"),
        ]
        .iter()
        .flat_map(|set| set.lines())
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|r| r["text"].as_str().map(str::to_owned))
        .collect();
        texts.push("password=x AUTH a --password y echo z | sudo -S ls ".repeat(40));
        let mut compared = 0;
        for text in &texts {
            for at in (0..text.len())
                .step_by(23)
                .filter(|&i| text.is_char_boundary(i))
            {
                for pass in d.compiled.passes.iter().filter(|p| p.plain.is_some()) {
                    let freed = Freed::default();
                    assert_eq!(
                        pass.search_near(text, at, &freed, true),
                        pass.search(text, at, &freed),
                        "{text:?} at {at}"
                    );
                    compared += 1;
                }
            }
        }
        assert!(compared > 30_000, "{compared}");
    }

    /// Where a pass says none of its triggers may start in a stretch (see
    /// `Pass::may_start_in`, which lets merging a detection with what runs into it pass
    /// over a search), its search finds none starting there: on both dev sets' texts, read
    /// in stretches of every width up to 20 from every 23rd place, and from every place of
    /// text built to open prose's values and glue triggers to words.
    #[test]
    fn a_pass_that_may_start_nothing_in_a_stretch_finds_nothing_there() {
        let d = PiiDetector::new();
        let mut texts: Vec<String> = [
            include_str!("../../tests/data/pii-dev.jsonl"),
            include_str!("../../tests/data/pii-field-dev.jsonl"),
        ]
        .iter()
        .flat_map(|set| set.lines())
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|r| r["text"].as_str().map(str::to_owned))
        .collect();
        // (Read from every place.)
        let built = "x`Xk9` as the password a\"b\" is the token «c» is your API key **d** as \
             the secret x“Qw8n” is the password y‘Rt7p’ as the token \
             xpassword=a1b2c3d4 ghp_x sk-abcdefgh1234 4111 1111 1111 1111 \
             a:b:c:d:e:f 10.0.0.1 curl -u a:b https://u:p@h Bearer abcdefghijklmnop";
        texts.push(built.to_owned());
        let (mut skipped, mut checked) = (0, 0);
        for text in &texts {
            let b = text.as_bytes();
            let step = if text == built { 1 } else { 23 };
            for from in (1..b.len())
                .step_by(step)
                .filter(|&i| text.is_char_boundary(i))
            {
                for to in (from + 1..=b.len().min(from + 20)).filter(|&i| text.is_char_boundary(i))
                {
                    for pass in &d.compiled.passes {
                        if pass.may_start_in(b, from, to) {
                            continue;
                        }
                        skipped += 1;
                        let far = ceil_char_boundary(text, to + 64);
                        let found = pass.search_in(text, from, far, &Freed::default());
                        assert!(
                            found.is_none_or(|m| m.start() >= to),
                            "{:?} at {from}..{to}: {found:?}",
                            &text[from..to]
                        );
                    }
                    checked += 1;
                }
            }
        }
        assert!(skipped > checked, "{skipped} {checked}");
    }

    #[test]
    fn a_trigger_taken_as_the_exact_match_is_it() {
        let d = PiiDetector::new();
        let mut found = 0;
        for name in patterns::SECRET_NAMES {
            for sep in [
                "=",
                ": ",
                "\": \"",
                " => ",
                ":=",
                "\"]=\"",
                "', '",
                "\\\": \\\"",
                " '",
                "\",\n  \"value\": \"",
                "\n  value: ",
                "\", \"",
                "\" ] ||= f\"",
                "\n  \"",
                "\", \"type\": \"PLAINTEXT\", \"value\": \"",
            ] {
                for value in ["Xk9mQ2vL7p", "x", "${X}", "a b", "apiKey:apiKey:"] {
                    let text = format!("{name}{sep}{value} --password S3cr3tPw99 curl -u a:b");
                    found += d.detect(&text).len();
                    found += d.detect(&format!("X-{text}")).len();
                }
            }
        }
        for clause in [
            "IDENTIFIED BY ",
            "identified by '",
            "IDENTIFIED WITH p BY \"",
        ] {
            for value in ["Xk9mQ2vL7p", "x", "${X}", "a b", "apiKey:apiKey:"] {
                let text = format!("{clause}{value} --password S3cr3tPw99 curl -u a:b");
                found += d.detect(&text).len();
            }
        }
        // Commands, writers, here-strings and here-documents, in passes of their own, and
        // the names that are commands too (`AUTH`: see `patterns::command_named_exactly`).
        let words = validate::POSITIONAL_COMMANDS
            .iter()
            .chain(&validate::STDIN_WRITERS)
            .chain(&patterns::WORD_NAMES)
            .chain(&["<<<", "<<EOF", "<<- 'E'", "ssh-keygen", "htpasswd"]);
        for word in words {
            for rest in [
                " default S3cr3tPw99",
                " S3cr3tPw99 | sudo -S ls",
                " -b f bob S3cr3tPw99",
                "\nbob:S3cr3tPw99\nEOF",
            ] {
                found += d.detect(&format!("> {word}{rest}")).len();
            }
        }
        assert!(found > 19_000, "{found}");
    }

    /// Each pass of a redaction frees only the next value of these chains (a national number
    /// right after another is read as its continuation): however long the chain, nothing
    /// detectable is left — past the last pass, the whole text becomes one placeholder.
    #[test]
    fn redaction_leaves_nothing_detectable_however_long_the_chain() {
        let d = PiiDetector::new();
        let french: Vec<String> = (0..40).map(|i| format!("0612 3456{i:02}")).collect();
        let uk: Vec<String> = (0..40).map(|i| format!("020 7946 09{i:02}")).collect();
        for n in [2, 5, 10, 20, 40] {
            for text in [
                format!("tel {}", french[..n].join(" ")),
                format!("call {} now", uk[..n].join(" ")),
                format!("token {}", "glpat-aaaaaaaa".repeat(n * 3)),
            ] {
                let (out, found) = d.redact(&text);
                assert!(!found.is_empty(), "{text}");
                assert!(d.detect(&out).is_empty(), "{n}: {out}");
                assert!(!out.contains("0612") && !out.contains("7946"), "{out}");
            }
        }
    }

    /// A failed run token skips the rest of its run, and a failed address the starts before its
    /// `@`, only where every later candidate there must fail too: the detector finds exactly
    /// what it finds without the skips, on text made of the pieces that decide them (prefixes
    /// of every family, keys with and without digits and capitals, long and short runs,
    /// dashes, underscores, breaks; local parts, `@` and `%40`, domains good and bad).
    /// The plain detector also searches the e-mail trigger with the regex (not by hand) and
    /// runs the exact pattern for every address (without the domain's first look).
    #[test]
    fn skipping_after_a_failed_candidate_changes_no_detection() {
        let plain = built_without(|sp| {
            sp.reach = None;
            sp.hand_search = None;
            sp.may_pass = None;
        });
        let skipping = PiiDetector::new();
        let pieces = [
            "sk-",
            "sk-proj-",
            "xoxb-",
            "xoxa-",
            "xapp-1-",
            "xox",
            "sk",
            "-",
            "--",
            "_",
            "a",
            "aaaaaaaa",
            "Ab3dEf9hIjKlMnOpQrStUv",
            "0123456789",
            "abcdefghijklmnopqrstu",
            "ABCD",
            " ",
            "\n",
            "@",
            "sk-aaaaaaaaaaaaaaaaaaaaaaaaa-",
            "1234567890-AbCdEf",
            "a@b.",
            "jane.doe",
            "@example.com",
            "%40",
            ".co",
            ".a",
            "b",
            "2x.png",
            "例子.广告",
            "é",
            "x-",
            ".",
            "@mail.example.org",
            "..",
            "'",
            "中",
            "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
            "aaaaaaaaaaaaaaaaaaaaaaaa",
            "-Abc12-",
            "Ab3dEf9hIjKlMnOpQrStUvWxYz",
            // Dotted numbers, and the digit-led kinds that share IPv4's pass.
            "1.",
            "2.3",
            "10.0.0.",
            "192.168.1.1",
            "255",
            "7",
            "4111 1111 1111 1111",
            "415-555-2671",
            "123-45-6789",
            "(12) ",
            "fe80::1",
            ":",
            "06 12 ",
            "4111 ",
            "1 ",
            "415 ",
            "555 2671",
            "\\n",
            "call ",
            "+44 ",
            "20 7946 0958",
            "4111111111111",
            "  ",
            "(12)",
            "(07) ",
            "(21) ",
            "(415) ",
            "99737-8290",
            "(001)",
            "(1)",
            // Domains that fail on their last label, or pass only at a shorter one.
            ".cc1",
            ".c1",
            ".c-",
            ".Co",
            ".co-",
            ".png",
            ".xn--p1ai",
            "ab-",
            "%2B",
            // The same in other scripts: labels of one character or two, a mark, a symbol.
            ".é",
            ".éé",
            ".рф",
            ".рф1",
            "é.",
            ".a€",
            ".\u{301}a",
            "€",
            "é@b.",
            // Values glued right after a domain's letters (see `email_glued`).
            ".com4111111111111111",
            ".co415-555-2671",
            ".deDE89370400440532013000",
            ".comde89 3704 0044 0532 0130 00",
            ".comsk-proj-Ab3dEf9hIjKlMnOpQrStUv",
            ".coeyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
            ".co2001:db8::1",
            ".comAKIAIOSFODNN7EXAMPLE",
            ".cc192.168.1.1",
            ".png4111111111111111",
            // Bare numbers glued after a domain's letters.
            ".travel70010423",
            ".co123456",
            "123456",
            ".com2024-01-15",
            "T12:30:00Z",
            "AKIA",
            "ghp_",
            // Credentials in a URL or an authorization header.
            "://",
            "u:",
            "p4ss!w0rd@",
            "Bearer ",
            "Basic ",
            "amFuZTpodW50ZXIy",
            // Fields named for a secret.
            "DB_PASSWORD=",
            "\": \"",
            "S3cr3t9",
            // Credentials on command lines: runs of commands' names a failed one passes over.
            "curl ",
            "mysql ",
            "oc ",
            "login ",
            "LOGIN ",
            "password ",
            "account ",
            "sshpass ",
            "-p",
            "-pS3cr3t99",
            " -u ",
            "a:S3cr3t99",
            "--password ",
            "X-API-Key: ",
            "\\\n",
            "\"",
            "; ",
            "mysql -uroot ",
            // Candidates of the same kind that end no other command's line: an LDAP tool's
            // name, SQLCMD, PowerShell's cmdlet.
            "ldapsearch ",
            "-w ",
            "SQLCMD ",
            "ConvertTo-SecureString ",
            " -AsPlainText",
            "7z ",
            "rar ",
            "sqlcmd ",
            "-pS3cr3t99 ",
            // Line continuations: Windows line endings, cmd.exe's, PowerShell's.
            "\\\r\n",
            " ^\r\n",
            " `\n",
            // Short lines whose option gives no password, each ending at the next command
            // (read one after another, see `patterns::failing_chain`).
            "zip -x ",
            "-x ",
            "7z a -px ",
            "zip.exe ",
            // A command's name as another's argument, its line read as the other's too.
            "keytool ",
            "-alias ",
            "-storepass ",
            "curl -T ",
            "zip -r ",
            "ssh-keygen ",
            "-N ",
            // Database and cache clients.
            "twine ",
            "cqlsh ",
            "valkey-cli ",
            "-a ",
            "\"cqlsh\", ",
            // Tables' rows (their headers naming a secret's column or not).
            "| ",
            "|---|---|\n",
            "| Password | a |\n",
            "| x | S3cr3tPw99 |\n",
            " |",
            "\r\n",
            // Values prose gives before their names (read by hand from the closing mark),
            // marks that open and close them, and here-strings and here-documents.
            "\"Xk9vQ2mZp4Lw\"",
            "`Xk9vQ2mZp4Lw`",
            "**Xk9vQ2mZp4Lw**",
            "“Xk9vQ2mZp4Lw”",
            " is the password",
            " as your new API key",
            "'",
            "`",
            "**",
            "sudo -S ls <<< ",
            "chpasswd <<EOF\nbob:S3cr3tPw99\nEOF\n",
        ];
        let mut next = numbers(0x2545_f491_4f6c_dd1d);
        let long_domain = format!("{0}.{0}.{0}.com", "b".repeat(60));
        let mut texts: Vec<String> = vec![
            // A real key after a run of a failed one, and a token of another prefix inside.
            format!("sk-{}-sk-Ab3dEf9hIjKlMnOpQrStUv ok", "a".repeat(25)),
            format!("{}sk-Ab3dEf9hIjKlMnOpQrStUvWx ok", "sk-".repeat(300)),
            "sk-aaaa-xapp-1-abcdefghij ok".to_owned(),
            format!(
                "{}xoxb-1234567890-AbCdEfGhIjKl ok",
                "sk-aaaaaaaa-".repeat(80)
            ),
            format!("{}sk-Ab3dEf9hIjKlMnOpQrStUv", "xoxb-".repeat(200)),
            // Placeholder runs (`aaaa…`) longer than any run of a key, then a real key, a
            // key-like run as long as the placeholder's, and one longer.
            format!(
                "{}sk-Ab3dEf9hIjKlMnOpQrStUvWx ok",
                "sk-aaaaaaaaaaaaaaaaaaaaaaaa-Abc12-".repeat(30)
            ),
            format!(
                "{}Ab3dEf9hIjKlMnOpQrStUvWx-ok",
                "sk-aaaaaaaaaaaaaaaaaaaaaaaa-Abc12-".repeat(30)
            ),
            format!(
                "{}xoxb-1234567890-AbCdEfGhIjKlMnOpQrStUvWxYz ok",
                "xoxb-aaaaaaaaaaaaaaaaaaaa-Abc12-".repeat(30)
            ),
            format!(
                "{}Ab3dEf9hIjKlMnOpQrStUvWx0123456789abcdef ok",
                "sk-bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb-".repeat(20)
            ),
            // A good address right after bad ones, one whose domain runs past the window.
            format!("{}jane@example.com ok", "a@b.".repeat(50)),
            format!("x@{}example.com and y@z.io", "b".repeat(390)),
            format!(
                "{}@{}.{}.{}.{}.com ok",
                "a".repeat(160),
                "b".repeat(60),
                "c".repeat(60),
                "d".repeat(60),
                "e".repeat(60)
            ),
            format!("{}.com and y@z.io", "x@b.".repeat(120)),
            // Long local parts before long domains, good and bad.
            format!("{}@{long_domain} ok", "a".repeat(250)),
            format!("{}@{}.com and y@z.io", "a".repeat(250), "b".repeat(390)),
            format!("{}@b.{} and y@z.io", "a".repeat(250), "c".repeat(400)),
            // Dotted-number runs with an address after `..`, after a space, and the other
            // digit-led kinds inside and after them.
            format!("{}..10.0.0.1 ok", "1.2.3.4.".repeat(40)),
            format!("{}1 10.0.0.1 ok", "1.2.3.4.".repeat(40)),
            format!("{}415-555-2671 and 10.0.0.2", "1.2.3.4.".repeat(40)),
            format!("{}.4111 1111 1111 1111 192.168.0.1", "1.2.".repeat(40)),
            format!("v{}. 8.8.8.8", "9.".repeat(300)),
            // Runs of groups no number starts in, then numbers that may start there: a
            // North American shape, a lone `1`, a `+`, after a detection.
            format!("{}415 555 2671 ok", "06 12 ".repeat(60)),
            format!("{}1 415 555 2671 ok", "4111 ".repeat(60)),
            format!("{}+44 20 7946 0958 ok", "06 12 ".repeat(60)),
            "5-12 4111 1111 1111 1111 06 12 34 56 78 ok".to_owned(),
            format!("call {}06 12 34 56 78", "06 12 34 56 78 ".repeat(30)),
            format!("{}(21) 99737-8290 ok", "(12) ".repeat(60)),
            format!("{}(415) 555-2671 ok", "(12)(34)".repeat(60)),
            format!("{}(07) 3946 8914 ok", "(12) ".repeat(60)),
            format!("{}(07) (34) (56) (78) (90) ok", "(12) ".repeat(60)),
            format!("{}(34) (56) 123456 ok", "(12) ".repeat(60)),
            // Runs of spaced groups no card starts in, then cards that may start there:
            // after two spaces, glued, dashed, after a detection.
            format!("{} 4111 1111 1111 1111 ok", "4111 ".repeat(60)),
            format!("{}4111111111111111 ok", "4111 ".repeat(60)),
            format!("{}4111-1111-1111-1111 ok", "4111 ".repeat(60)),
            format!("5-12 {}ok", "4111 1111 1111 1111 ".repeat(20)),
        ];
        texts.extend([
            // Commands' names before one that carries a password, nearer and further than
            // the 2 KiB a command's line is read; a quoted line break; other triggers.
            format!("{}curl -u a:S3cr3t99 ok", "curl ".repeat(600)),
            format!("{}curl -u a:S3cr3t99 ok", "curl ".repeat(100)),
            // Clients' names before one that carries a password, nearer and further than
            // 2 KiB; an argument list; another command's name between.
            format!("{}twine -p S3cr3t99 ok", "twine ".repeat(600)),
            format!("{}twine -p S3cr3t99 ok", "twine x ".repeat(200)),
            format!("{}\"-p\", \"S3cr3t99\"]", "\"cqlsh\", ".repeat(400)),
            format!("{}valkey-cli -a S3cr3t99", "valkey-cli curl ".repeat(150)),
            format!("{}-a S3cr3t99", "keydb-cli ".repeat(250)),
            // A failed client's name (its line ends at the next), then one whose option is
            // just within 2 KiB, or one right before an option and a long tail.
            format!(
                "twine {}twine {}-p S3cr3t99",
                "x ".repeat(50),
                "x ".repeat(950)
            ),
            format!("twine twine -p S3cr3t99 {}", "x ".repeat(3000)),
            format!("{}oc login -p S3cr3t99", "oc ".repeat(1000)),
            format!("{}mysql 'x\n' -pS3cr3t99", "mysql ".repeat(500)),
            "curl x curl \"\n -u a:S3cr3tPw\"".to_owned(),
            format!("{}X-API-Key: S3cr3t99 ok", "docker ".repeat(700)),
            format!("{}login bob password S3cr3t99", "mysql ".repeat(400)),
            // Runs of `login` (each may start a `.netrc` line), then one that does.
            format!("{}login bob password S3cr3t99", "login ".repeat(400)),
            format!("{}LOGIN bob\r\n\tpasswd S3cr3t99", "login x ".repeat(300)),
            format!(
                "{}login bob account a password\tS3cr3t99",
                "LOGIN ".repeat(500)
            ),
            format!("{}login login\npassword S3cr3t99 -x", "login ".repeat(500)),
            format!("{}docker login -p S3cr3t99", "login ".repeat(100)),
            // Chains over `login` words that can start neither a `.netrc` line nor a
            // registry's command, then one that can.
            format!("{}zip -P S3cr3t99 a.zip", "zip -x login ".repeat(40)),
            format!("{}login bob password S3cr3t99", "zip -x login ".repeat(20)),
            format!(
                "{}zip -x login bob\npasswd S3cr3t99",
                "zip -x LOGIN ".repeat(20)
            ),
            format!(
                "{}zip -x docker login -p S3cr3t99",
                "zip -x login ".repeat(20)
            ),
            format!("{}oc login -p S3cr3t99", "curl -x login ".repeat(20)),
            // Chains over a registry's `login` whose line gives no password, then one whose
            // line does, inside a line the chain reads and after it.
            format!(
                "{}zip -x oc login -p S3cr3t99",
                "zip -x oc login ".repeat(30)
            ),
            format!(
                "{}7z a -px oc login -p S3cr3t9 zip -x",
                "7z a -px oc login ".repeat(30)
            ),
            format!(
                "{}curl -x docker login -u bob -p S3cr3t99",
                "curl -x docker login ".repeat(30)
            ),
            format!(
                "{}SQLCMD -x podman login --password S3cr3t99",
                "SQLCMD -x podman login ".repeat(30)
            ),
            format!(
                "{}docker zip -x login -pS3cr3t99 x",
                "docker zip -x login ".repeat(30)
            ),
            format!(
                "{}zip -x oc login a passwd S3cr3t99",
                "zip -x oc login ".repeat(30)
            ),
            format!(
                "{}zip -x oc login {}-p S3cr3t99",
                "zip -x oc login ".repeat(30),
                "a ".repeat(40)
            ),
            // Chains over `.netrc` forms that name no password, then one that does.
            format!(
                "{}zip -x login b passwd S3cr3t9 zip -x",
                "zip -x login a password ".repeat(30)
            ),
            format!(
                "{}curl -x login b\tpassword S3cr3t9 x",
                "curl -x LOGIN a\npasswd ".repeat(30)
            ),
            format!(
                "{}zip -x login é passwd S3cr3t9 zip -x",
                "zip -x login é password ".repeat(30)
            ),
            // (A `login`'s line runs on past other kinds' commands, `7z`: longer than it is
            // read here.)
            format!(
                "{}7z a -px oc login {}-p S3cr3t99",
                "7z a -px ".repeat(3),
                "7z a -x ".repeat(10)
            ),
            // (Inside a line the chain reads: under 32 bytes to the next command.)
            format!(
                "{}zip -x oc login -p S3cr3t9 zip -x",
                "zip -x login ".repeat(20)
            ),
            format!(
                "{}zip -x login b passwd S3cr3t9 zip -x",
                "zip -x login ".repeat(20)
            ),
            format!(
                "{}zip -x LOGIN b\npasswd S3cr3t9 zip -x",
                "zip -x LOGIN ".repeat(20)
            ),
            format!("{}Authorization: Token 9f8e7d6c5b", "http ".repeat(500)),
            // Chains whose next name is the argument of the one before it.
            format!(
                "{}keytool -alias mysql -storepass S3cr3t99",
                "zip -x mysql ".repeat(30)
            ),
            format!("{}curl -T mysql -u a:S3cr3t99", "curl -T mysql ".repeat(40)),
            format!("{}-u a:S3cr3t99", "curl mysql ".repeat(50)),
            format!(
                "{}-storepass S3cr3t99",
                "keytool -x mysql -x curl ".repeat(30)
            ),
            format!(
                "{}ssh-keygen -f mysql -N S3cr3t99",
                "7z a -px mysql ".repeat(30)
            ),
            // Runs of names read one after another to the first line with an option: the
            // option after the run, after a terminator, a quote, a registry's login, past
            // 2 KiB, and a command inside quotes whose line runs on past them.
            format!("{}-pS3cr3t99 ok", "mysql ".repeat(85)),
            format!("{}; mysql -pS3cr3t99", "mysql ".repeat(50)),
            format!("{}mysql \"x\" -pS3cr3t99", "mysql ".repeat(50)),
            format!("{}echo \"mysql -pS3cr3t99\"", "mysql ".repeat(50)),
            format!("mysql \"{}\" mysql -pS3cr3t99 \"", "mysql ".repeat(50)),
            format!("mysql \"{}\" ; -pS3cr3t99", "mysql ".repeat(50)),
            format!("{}\"mysql\" ; -pS3cr3t99", "mysql ".repeat(50)),
            format!("{}docker login -u bob -p S3cr3t99", "mysql ".repeat(50)),
            format!("{}sshpass -p S3cr3t99 ssh h", "mysql curl ".repeat(300)),
            format!("{}x\nmysql y -pS3cr3t99", "mysql curl sshpass ".repeat(20)),
            // (Found reviewing the reach: such a candidate inside a line the reach read was
            // passed over.)
            format!("{}ldapsearch -w S3cr3t99", "mysql ".repeat(50)),
            "mysql mysql ldapsearch -w S3cr3t99".to_owned(),
            "mysql ConvertTo-SecureString S3cr3t99 -AsPlainText".to_owned(),
            format!(
                "{}ConvertTo-SecureString 'S3cr3t99' -AsPlainText",
                "curl a ".repeat(30)
            ),
            format!("{}SQLCMD -P S3cr3t99", "mysql ".repeat(50)),
            format!("{}ldapsearch -w S3cr3t99", "ldapsearch ".repeat(50)),
            format!("{}7z a -pS3cr3t99 o.7z", "mysql ".repeat(50)),
            "mysql a sqlcmd -P S3cr3t99".to_owned(),
            format!(
                "{}docker login -u bob -p S3cr3t99",
                "docker login ".repeat(200)
            ),
            format!(
                "{}-x\ndocker login -p S3cr3t99",
                "podman login -u ".repeat(150)
            ),
            format!("{}-x\nldapadd -w S3cr3t99", "ldapadd ".repeat(250)),
            format!("curl -x {}\nSQLCMD -P S3cr3t99", "SQLCMD ".repeat(230)),
            format!("{}rar a -pS3cr3t99 o.rar", "curl a ".repeat(50)),
            // Chains of short lines whose option gives no password, then one that does, or
            // another candidate inside the last line: an option named `--…`, a header name,
            // the cmdlet, a command of another line family, a registry's login, `.exe`.
            format!("{}zip -P S3cr3t99 a.zip", "zip -x ".repeat(50)),
            format!("{}7z a -pS3cr3t99 o.7z", "7z a -px ".repeat(50)),
            format!("{}curl -u bob:S3cr3t99", "curl -x ".repeat(50)),
            format!("{}zip.exe -P S3cr3t99 a", "zip -x ".repeat(20)),
            format!("{}--password S3cr3t99", "zip -x ".repeat(20)),
            format!("{}X-API-Key: S3cr3t99", "zip -x ".repeat(20)),
            format!(
                "{}ConvertTo-SecureString 'S3cr3t99' -AsPlainText",
                "zip -x ".repeat(20)
            ),
            format!("{}ldapsearch -w S3cr3t99", "zip -x ".repeat(20)),
            format!(
                "{}zip -x ldapsearch -w S3cr3t99 zip -x zip -x",
                "zip -x ".repeat(5)
            ),
            format!(
                "{}zip -x --password S3cr3t99 zip -x zip -x",
                "zip -x ".repeat(5)
            ),
            format!("{}docker login -p S3cr3t99", "zip -x ".repeat(20)),
            format!("{}login bob password S3cr3t99", "zip -x ".repeat(20)),
            format!(
                "{}login bob password S3cr3t99",
                "docker login -x ".repeat(5)
            ),
            format!("{}curl -x \"a\" -u bob:S3cr3t99", "zip -x ".repeat(20)),
            format!("{}zip -x \"zip -x\" -P S3cr3t99", "zip -x ".repeat(20)),
            format!("{}SQLCMD -P S3cr3t99", "SQLCMD -x ".repeat(20)),
            format!("zip -x {}zip -P S3cr3t99", "a ".repeat(20)),
            // (A chain hands a run of lines without an option over to the search.)
            format!("curl -x {}curl -u bob:S3cr3t99", "curl a ".repeat(30)),
            format!("zip -x {}zip -P S3cr3t99", "zip a -x ".repeat(30)),
            format!("zip -x {}zip -P S3cr3t99", "zip a zip -x ".repeat(30)),
        ]);
        for _ in 0..3_000 {
            let len = 1 + next(80);
            texts.push((0..len).map(|_| pieces[next(pieces.len())]).collect());
        }
        // Long token runs of placeholder-like and key-like runs of about the same length
        // (which of them is longest, and which comes last among the longest, decides).
        let runs = [
            "sk-",
            "xoxb-",
            "-",
            "-x",
            "-xy",
            "aaaaaaaaaaaaaaaaaaaaaaaa",
            "bbbbbbbbbbbbbbbbbbbbbbbbb",
            "abababababababababababab",
            "Ab3dEf9hIjKlMnOpQrStUvWx",
            "Ab3dEf9hIjKlMnOpQrStUvW",
            "Ab3dEf9hIjKlMnOpQrStUvWxY",
        ];
        // A table's row that fails under a secret's column, then rows that pass; a table
        // with none, and right below it (no blank line) a header of one.
        texts.push("| User | Password |\n|---|---|\n| a | **** |\n| b | S3cr3tPw99 |\n".repeat(3));
        texts.push(
            "| a | b |\n|---|---|\n| x | y |\n| User | Password |\n|---|---|\n| b | S3cr3tPw99 |"
                .to_owned(),
        );
        for _ in 0..1_500 {
            let len = 40 + next(160);
            texts.push((0..len).map(|_| runs[next(runs.len())]).collect());
        }
        let (mut secrets, mut addresses, mut ips, mut phones) = (0, 0, 0, 0);
        for t in &texts {
            let found = skipping.detect(t);
            assert_eq!(found, plain.detect(t), "{t}");
            let count = |e: Entity| found.iter().filter(|d| d.entity == e).count();
            secrets += count(Entity::Secret);
            addresses += count(Entity::Email);
            ips += count(Entity::IpAddress);
            phones += count(Entity::Phone);
        }
        assert!(
            secrets > 100 && addresses > 100 && ips > 100 && phones > 100,
            "{secrets} {addresses} {ips} {phones}"
        );
        for t in &texts[..9] {
            assert!(found(t).iter().any(|(e, _)| *e == Entity::Secret), "{t}");
        }
        for t in &texts[9..16] {
            assert!(found(t).iter().any(|(e, _)| *e == Entity::Email), "{t}");
        }
        for t in &texts[16..21] {
            assert!(found(t).iter().any(|(e, _)| *e == Entity::IpAddress), "{t}");
        }
        for t in &texts[21..31] {
            assert!(found(t).iter().any(|(e, _)| *e == Entity::Phone), "{t}");
        }
        for t in &texts[31..35] {
            assert!(
                found(t).iter().any(|(e, _)| *e == Entity::CreditCard),
                "{t}"
            );
        }
        // An address longer than the window from its first start is found whole: its last 64
        // local-part characters and all of its domain.
        assert_eq!(
            found(&texts[13]),
            [(Entity::Email, &texts[13][250 - 64..texts[13].len() - 3])]
        );
    }

    /// The skip after a failed address takes the first later start whose local part the
    /// validator would take: the same answer as reading the local part from each start, on
    /// runs made of what decides it (dots, doubled dots, quotes, other scripts, runs past
    /// 64 characters).
    #[test]
    fn the_local_part_skip_agrees_with_reading_each_start() {
        use validate::{email_local_skip, email_local_start};
        let pieces = [
            "a",
            "Z",
            "0",
            ".",
            "..",
            "'",
            "+",
            "-",
            "é",
            "ü",
            "中",
            "я",
            "%2B",
            "ab.cd",
            "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
        ];
        let mut next = numbers(0x9e37_79b9_7f4a_7c15);
        let (mut skipped, mut taken) = (0, 0);
        let (a62, a63) = ("a".repeat(62), "a".repeat(63));
        // Exactly 64 characters after another script's text, starting with dots or a quote.
        let mut runs = vec![
            format!("xy中.{a63}"),
            format!("xy中..{a62}"),
            format!("xy中'{a63}"),
        ];
        runs.extend((0..3_000).map(|_| {
            let len = 1 + next(12);
            (0..len)
                .map(|_| pieces[next(pieces.len())])
                .collect::<String>()
        }));
        for run in runs {
            let text = format!("{run}@example.com");
            let at = run.len();
            for (s, _) in run.char_indices() {
                let want = run
                    .char_indices()
                    .map(|(i, _)| i)
                    .find(|&i| i > s && email_local_start(&text, i, at).is_some())
                    .unwrap_or(at);
                assert_eq!(email_local_skip(&text, s, at), want, "{text} from {s}");
                if want == at {
                    skipped += 1;
                } else if want > next_char(&text, s) {
                    taken += 1;
                }
            }
        }
        // Both outcomes are exercised: runs skipped whole, and skips that stop inside.
        assert!(skipped > 1_000 && taken > 1_000, "{skipped} {taken}");
    }

    /// A pass's search read by hand (`hand`, from and to) finds what its regex `re` finds in
    /// `text`, mostly read whole, sometimes from or to a place within it: that match.
    fn hand_search_agrees(
        text: &str,
        next: &mut impl FnMut(usize) -> usize,
        re: &MetaRegex,
        hand: impl Fn(usize, usize) -> Option<(usize, usize)>,
    ) -> Option<regex_automata::Match> {
        let bounds: Vec<usize> = (0..=text.len())
            .filter(|&i| text.is_char_boundary(i))
            .collect();
        let a = if next(3) == 0 { next(bounds.len()) } else { 0 };
        let z = if next(3) == 0 {
            a + next(bounds.len() - a)
        } else {
            bounds.len() - 1
        };
        let (from, to) = (bounds[a], bounds[z]);
        let want = re.search(&Input::new(text).range(from..to));
        let got = hand(from, to).map(|(s, e)| regex_automata::Match::must(0, s..e));
        assert_eq!(got, want, "{text:?} {from}..{to}");
        got
    }

    /// The e-mail pass's trigger read by hand (`email_trigger_at`) finds what the regex
    /// finds, from any start to any end, on generated texts of what decides it: local-part
    /// and label characters, `@`, dots, escapes (valid, `%40`, cut short), letters, marks
    /// and digits of other scripts (where it hands over to the regex), and other bytes.
    #[test]
    fn the_hand_read_email_trigger_agrees_with_the_regex() {
        use validate::{email_trigger_at, letter_mark_or_digit};
        let trigger = patterns::specs()
            .into_iter()
            .find(|sp| sp.entity == Entity::Email)
            .expect("an e-mail spec")
            .trigger;
        let re = MetaRegex::new(&trigger).unwrap();
        // The class the hand reading asks, against the regex's, on every character up to
        // U+FFFF and a sample past it.
        let class = MetaRegex::new(r"^[\p{L}\p{M}\p{N}]$").unwrap();
        let mut tried = 0;
        for c in (0x80..0x1_0000)
            .chain((0x1_0000..0x11_0000).step_by(97))
            .filter_map(char::from_u32)
        {
            let mut buf = [0; 4];
            assert_eq!(
                letter_mark_or_digit(c),
                class.is_match(&*c.encode_utf8(&mut buf)),
                "{c:?}"
            );
            tried += 1;
        }
        assert!(tried > 70_000);
        let pieces = [
            "a", "Z", "0", "4", "1", "F", ".", "..", "@", "@", "@", "%", "%2B", "%40", "%4", "%4A",
            "%2", "%g1", "-", "_", "+", "'", " ", "!", ",", "é", "\u{301}", "٣", "中", "x@y.",
            "b.c", "€", "²", "Ⅻ", "😀", "\u{200B}", "ß", "я",
        ];
        let mut next = numbers(0x2545_f491_4f6c_dd1d);
        let (mut found, mut none, mut other_script) = (0, 0, 0);
        for _ in 0..100_000 {
            let len = next(24);
            let text: String = (0..len).map(|_| pieces[next(pieces.len())]).collect();
            let got = hand_search_agrees(&text, &mut next, &re, |from, to| {
                email_trigger_at(&text, from, to, &Freed::default(), None)
            });
            match got {
                Some(m) if !text[m.range()].is_ascii() => other_script += 1,
                Some(_) => found += 1,
                None => none += 1,
            }
        }
        assert!(
            found > 10_000 && other_script > 5_000 && none > 10_000,
            "{found} {other_script} {none}"
        );
    }

    /// The trigger of a key in Wallet Import Format with no name, read by hand
    /// (`bare_wif_at`), finds what the regex finds, from any start to any end, on generated
    /// texts of what decides it: Base58 words of 50 to 53 characters that open with each
    /// first byte or another, word bytes outside Base58 (`0`, `O`, `I`, `l`, `_`), blanks,
    /// marks and other scripts' characters.
    #[test]
    fn the_hand_read_wif_trigger_agrees_with_the_regex() {
        use validate::bare_wif_at;
        let trigger = patterns::specs()
            .into_iter()
            .find(|sp| sp.trigger.contains("[5KL9c]"))
            .expect("the bare WIF spec")
            .trigger;
        let re = MetaRegex::new(&trigger).unwrap();
        let body = "HueCGU8rMjxEXxiPuD5BDku4MkFqeZyd4dZ1jvhTVqvbTLvyTJKwDiBf89QgGb";
        let mut next = numbers(0x9e37_79b9_7f4a_7c15);
        let (mut found, mut none) = (0, 0);
        for _ in 0..50_000 {
            let mut text = String::new();
            for _ in 0..next(5) {
                let first = ["5", "K", "L", "9", "c", "x", "0", "_"][next(8)];
                let len = 49 + next(4);
                text.push_str(first);
                text.push_str(&body[..len]);
                text.push_str([" ", "", "0", "l", "_", "é", ".", "\n", "a"][next(9)]);
            }
            let got = hand_search_agrees(&text, &mut next, &re, |from, to| {
                bare_wif_at(&text, from, to, &Freed::default(), None)
            });
            match got {
                Some(_) => found += 1,
                None => none += 1,
            }
        }
        assert!(found > 4_000 && none > 4_000, "{found} {none}");
    }

    /// The trigger of a value prose gives before its name, read by hand from its closing
    /// mark (`value_before_name_at`), finds what the regex finds, from any start to any
    /// end, on generated texts of what decides it: every mark opening and closing, values
    /// of printable ASCII and of other bytes, blanks, the verbs, adverbs, articles, words
    /// short and long, the names (glued to a word or not) and other punctuation.
    #[test]
    fn the_hand_read_prose_trigger_agrees_with_the_regex() {
        let sp = patterns::specs()
            .into_iter()
            .find(|sp| sp.hand_regex.is_some())
            .expect("the prose spec");
        let re = MetaRegex::new(&sp.trigger).unwrap();
        let closed = MetaRegex::new(sp.hand_regex.as_deref().unwrap()).unwrap();
        let pieces = [
            "`",
            "\"",
            "'",
            "*",
            "**",
            "“",
            "”",
            "‘",
            "’",
            "«",
            "»",
            "Xk9",
            "a",
            "-",
            "'s",
            ".",
            ",",
            "é",
            "中",
            " ",
            " ",
            " ",
            "\t",
            "is",
            "as",
            "are",
            "was",
            "for",
            "also",
            "actually",
            "the",
            "your",
            "an",
            "that",
            "new",
            "admin",
            "abcdefghijklmnopq",
            "password",
            "Password",
            "API key",
            "API",
            "key",
            "token",
            "tokens",
            "pwd",
            "_",
            "PAT",
            "secret",
            "\\",
            "\n",
        ];
        // A form's parts, in order, each with what may stand in its place (or be left out).
        let parts: [&[&str]; 9] = [
            &["`", "\"", "'", "**", "“", "‘", "«", "*", ""],
            &["Xk9", "a", "Xk9\"a", "'b'", "é", "a b", "\\", ""],
            &["`", "\"", "'", "**", "”", "’", "»", "*", ""],
            &[" ", "\t", "  ", "", "x"],
            &["is ", "as ", "are\t", "was ", "for ", "be ", "is", "isn't "],
            &["", "", "also ", "now  ", "stillx "],
            &["", "the ", "your ", "a ", "an\t", "thee "],
            &[
                "",
                "new ",
                "new admin ",
                "a b c ",
                "a b c d ",
                "abcdefghijklmnopq ",
                "x's ",
                "5 ",
            ],
            &[
                "password",
                "API key",
                "api_key",
                "tokens",
                "PAT",
                "secret ",
                "pwd1",
                "Password.",
            ],
        ];
        let mut next = numbers(0x9e37_79b9_7f4a_7c15);
        let (mut found, mut none) = (0, 0);
        for _ in 0..100_000 {
            let mut text = String::new();
            for _ in 0..1 + next(3) {
                for _ in 0..next(6) {
                    text.push_str(pieces[next(pieces.len())]);
                }
                for part in parts {
                    text.push_str(part[next(part.len())]);
                }
            }
            let got = hand_search_agrees(&text, &mut next, &re, |from, to| {
                patterns::value_before_name_at(&text, from, to, &Freed::default(), Some(&closed))
            });
            if got.is_some() {
                found += 1;
            } else {
                none += 1;
            }
        }
        assert!(found > 1_000 && none > 10_000, "{found} {none}");
    }

    /// The domain's first look (`email_domain_may_pass`) turns away only addresses that
    /// fail: a detector without it finds exactly the same on generated addresses whose
    /// domains are made of what decides it — letter runs of one, two and more, digits and
    /// dashes after them, `xn--`, labels in other scripts and mixed, marks, symbols, dots,
    /// domain-ending bytes and a next `@`.
    #[test]
    fn the_domains_first_look_turns_away_only_addresses_that_fail() {
        let plain = built_without(|sp| sp.may_pass = None);
        let fast = PiiDetector::new();
        let pieces = [
            "a", "b", "co", "cc", "c", "1", "12", "-", ".", ".", ".", " ", "é", "рф", "中",
            "\u{301}", "xn--", "p1ai", "@", "x", "Z", "€", "_", "png", "de", "ab1", "%2B", "'",
            "éa", "aé", "١", "ф1",
        ];
        let locals = ["a", "jane", "é", "x.y"];
        let mut next = numbers(0x1234_5678_9abc_def1);
        let mut found = 0;
        for _ in 0..100_000 {
            let len = 1 + next(10);
            let domain: String = (0..len).map(|_| pieces[next(pieces.len())]).collect();
            let text = format!("{}@{domain}", locals[next(locals.len())]);
            let want = plain.detect(&text);
            assert_eq!(fast.detect(&text), want, "{text:?}");
            found += usize::from(!want.is_empty());
        }
        // Both outcomes are exercised.
        assert!(found > 2_000, "{found}");
    }

    /// Found by a hostile review: a run of local-part characters that no start can make an
    /// address of (`aaaa….@b.co`, or `aaaa…..a@b.co` up to the last `a`) read each byte some
    /// 400 times (1.5 s per MB), and by the next one, a long local part before a domain that
    /// fails or never ends (0.8–1 s per MB). The run is now read a few times.
    #[test]
    fn failed_local_parts_cost_a_few_reads_per_byte() {
        let d = PiiDetector::new();
        let long = "a".repeat(250);
        for unit in [
            format!("{long}..a@b.co "),
            format!("{long}.@b.co "),
            format!("{}..a@b.co ", "a".repeat(100)),
            format!("'{long}'@b.co "),
            format!("{long}中..x@b.co "),
            format!("{}..b@c.io ", "a.".repeat(120)),
            // Found by the third hostile review: a long local part before a domain that does
            // not end (or fails) inside the window read each byte some 300 times.
            format!("{long}@{}.com ", "b".repeat(390)),
            format!("{long}@{} ", "b.".repeat(200)),
            format!("{long}@b.{} ", "c".repeat(400)),
            format!("{}@{}.com ", "a".repeat(60), "b".repeat(1000)),
        ] {
            let text = unit.repeat((64 << 10) / unit.len());
            // (Each pass searches the text once, a pass whose triggers are long about
            // twice — the twenty-first's, 1.6 times; the rest is the run read again a few
            // times: 26.0 steps a byte with twenty passes, 27.6 with twenty-one.)
            let work = d.scan_work(&text);
            assert!(
                work < (PASSES as u64 + 7) * text.len() as u64,
                "{unit}: {work} steps for {} bytes",
                text.len()
            );
        }
    }

    /// A `+` between two characters is a space in a form-encoded value and a plus elsewhere
    /// (a base64 key, `jane+tag@…`, a number glued after another): the text is read both
    /// ways. Found by a hostile review: reading it only as a space (between digits) lost
    /// these values, which the plus reading finds.
    #[test]
    fn a_plus_is_read_both_as_a_plus_and_as_a_form_encoded_space() {
        for (text, want) in [
            (
                "aws_secret_access_key=8Hq2+7vXk3LpNc9Rt5Yw1Zb6Jm4Fs0Dg+Ae2Ui7O",
                vec![(Entity::Secret, "8Hq2+7vXk3LpNc9Rt5Yw1Zb6Jm4Fs0Dg+Ae2Ui7O")],
            ),
            (
                "Contact: ops2024+17@acme.io",
                vec![(Entity::Email, "ops2024+17@acme.io")],
            ),
            ("a1+2b@x.org", vec![(Entity::Email, "a1+2b@x.org")]),
            (
                "mail jane+tag@example.com ok",
                vec![(Entity::Email, "jane+tag@example.com")],
            ),
            (
                "qty 2+4111 1111 1111 1111 ok",
                vec![(Entity::CreditCard, "4111 1111 1111 1111")],
            ),
            ("5+078 05 1120", vec![(Entity::Ssn, "078 05 1120")]),
            (
                "0612345678+33612345678",
                vec![
                    (Entity::Phone, "0612345678"),
                    (Entity::Phone, "+33612345678"),
                ],
            ),
            // Form-encoded values: spaces as `+`, next to letters and escapes too.
            (
                "to=%2B1+%28416%29+249-5843&x=1",
                vec![(Entity::Phone, "%2B1+%28416%29+249-5843")],
            ),
            (
                "iban=GB49+HBUK+4318+2296+7600+83&x=1",
                vec![(Entity::Iban, "GB49+HBUK+4318+2296+7600+83")],
            ),
        ] {
            assert_eq!(found(text), want, "{text}");
        }
        assert!(found("1+1=2, C++ and a+b, at 10:00+01:00").is_empty());
    }

    /// Found by a hostile review: a value that an address's local part runs through (cut to
    /// its last 64 characters, so the address starts inside the value) was passed over, a key
    /// glued after an `@` read as the address's domain left its tail behind, and any value
    /// that starts inside a detection and goes on past it was passed over: each is one
    /// detection now.
    #[test]
    fn values_an_address_runs_into_are_covered_whole() {
        let c60 = "c".repeat(60);
        let pem = "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEAGqmg8Z6v9hTqvmgaxbpDSDH76Dczm/PtN2fDJ2/Ysk5YyQgN\nR1LWRlSfutenOARhEqxDgjD3OwApzdIT/0FauutH9gs3O8yk9WK6kwkVK+9DKPtm\n-----END RSA PRIVATE KEY-----";
        for (text, want) in [
            (
                format!("x-AKIAIOSFODNN7EXAMPLE.{c60}@example.com ok"),
                vec![(
                    Entity::Secret,
                    format!("AKIAIOSFODNN7EXAMPLE.{c60}@example.com"),
                )],
            ),
            (
                format!("x-glpat-Ab3dEf9hIjKlMnOpQrSt.{c60}@example.com ok"),
                vec![(
                    Entity::Secret,
                    format!("glpat-Ab3dEf9hIjKlMnOpQrSt.{c60}@example.com"),
                )],
            ),
            (
                "101@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 ok"
                    .to_owned(),
                vec![(
                    Entity::Secret,
                    "101@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"
                        .to_owned(),
                )],
            ),
            // Found by the fifth: a key glued after an address ran on into the next value,
            // which was then passed over (a card's tail, a private key after a webhook).
            (
                "jane@example.sk-Ab3dEf9hIjKlMnOpQrStUv4111 1111 1111 1111 ok".to_owned(),
                vec![(
                    Entity::Secret,
                    "jane@example.sk-Ab3dEf9hIjKlMnOpQrStUv4111 1111 1111 1111".to_owned(),
                )],
            ),
            (
                format!(
                    "noah@example.comhttps://hooks.slack.com/services/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{pem} ok"
                ),
                vec![(
                    Entity::Secret,
                    format!(
                        "noah@example.comhttps://hooks.slack.com/services/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{pem}"
                    ),
                )],
            ),
            // A key's body without an END line running into an address.
            (
                "-----BEGIN PRIVATE KEY-----IIEvgIB7qdnGqqX7RTP 10.3.5.2 ok".to_owned(),
                vec![(
                    Entity::Secret,
                    "-----BEGIN PRIVATE KEY-----IIEvgIB7qdnGqqX7RTP 10.3.5.2".to_owned(),
                )],
            ),
            // Another reading of a number inside a number is not a value of its own: the
            // next number stays its own.
            (
                "0425 795 364 4111 1111 1111 1111".to_owned(),
                vec![
                    (Entity::Phone, "0425 795 364".to_owned()),
                    (Entity::CreditCard, "4111 1111 1111 1111".to_owned()),
                ],
            ),
            (
                "+34 687 958 528 0201 379 4843".to_owned(),
                vec![
                    (Entity::Phone, "+34 687 958 528".to_owned()),
                    (Entity::Phone, "0201 379 4843".to_owned()),
                ],
            ),
            // An IBAN in groups whose last group is glued to an address's local part: the
            // country's length ends it, the address it runs into is merged with it. Unspaced,
            // a longer token is some other token.
            (
                "GB67 MIDL 0231 8325 9312 09tlefevre@orange.fr ok".to_owned(),
                vec![(
                    Entity::Iban,
                    "GB67 MIDL 0231 8325 9312 09tlefevre@orange.fr".to_owned(),
                )],
            ),
            ("ref GB82WEST12345698765432abc ok".to_owned(), vec![]),
            // Found by the review of that change: a longer number, other groupings (a UUID),
            // a last group longer than four, two blanks between groups are other tokens.
            ("ref DE89 3704 0044 0532 0130 0012 34 ok".to_owned(), vec![]),
            ("ref GB82 WEST 1234 5698 7654 3210 ok".to_owned(), vec![]),
            (
                "id ad79ba14-25d5-8ee3-2fce-ee25f1a39ac9 ok".to_owned(),
                vec![],
            ),
            ("ref DE89 3704 0044 0532013000abc ok".to_owned(), vec![]),
            (
                "ref DE89  3704  0044  0532  0130  00abc ok".to_owned(),
                vec![],
            ),
            // Glued to a word in its own case: random groups, not an IBAN and a word.
            ("ref GB82 WEST 1234 5698 7654 32ABC ok".to_owned(), vec![]),
            ("ref gb82 west 1234 5698 7654 32abc ok".to_owned(), vec![]),
            (
                "iban DE89 3704 0044 0532 0130 00jane@example.com ok".to_owned(),
                vec![(
                    Entity::Iban,
                    "DE89 3704 0044 0532 0130 00jane@example.com".to_owned(),
                )],
            ),
            // A value that ends before the address starts is found on its own, first.
            (
                format!("call +1-415-555-2671.{c60}cccc@example.com now"),
                vec![
                    (Entity::Phone, "+1-415-555-2671".to_owned()),
                    (Entity::Email, format!("{c60}cccc@example.com")),
                ],
            ),
        ] {
            let got: Vec<(Entity, String)> = found(&text)
                .into_iter()
                .map(|(e, v)| (e, v.to_owned()))
                .collect();
            assert_eq!(got, want, "{text}");
        }
    }

    /// A chain of glued values, each hiding the next, that takes four redaction passes: the
    /// most a search over glued dev-set values found (none needs more than
    /// [`MAX_REDACTION_PASSES`], so the step that fails closed is tested with fewer).
    pub(crate) const FOUR_PASS_CHAIN: &str =
        "-4111 1111 1111 1111DE89 3704 0044 0532 0130 00.4111 1111 1111 1111AKIAIOSFODNN7EXAMPLE- ";

    #[test]
    fn redaction_that_runs_out_of_passes_fails_closed() {
        let d = PiiDetector::new();
        let (settled, _) = d.redact(FOUR_PASS_CHAIN);
        assert!(d.detect(&settled).is_empty(), "{settled}");
        assert!(settled.contains("[REDACTED_SECRET]"), "{settled}");
        assert_eq!(d.redact_within(FOUR_PASS_CHAIN, 4).0, settled);
        for passes in 1..4 {
            let (out, found) = d.redact_within(FOUR_PASS_CHAIN, passes);
            assert!(
                out.starts_with("[REDACTED_") && !out.contains(' '),
                "{passes}: {out}"
            );
            assert!(!found.is_empty());
        }
    }

    /// Found by a hostile review: `sk-sk-sk-…` read each byte some 130 times (1.5 s per MB).
    /// A run of failed tokens now costs a few reads per byte.
    #[test]
    fn runs_of_failed_tokens_cost_a_few_reads_per_byte() {
        let d = PiiDetector::new();
        for unit in [
            "sk-",
            "sk--",
            "xoxb-",
            "xoxa--",
            "xapp-1-",
            "sk-aaaaaaaa-",
            "sk_",
            "xox-",
        ] {
            let text = unit.repeat((64 << 10) / unit.len());
            // (Each pass searches the text once, one whose triggers are long about twice.)
            let work = d.scan_work(&text);
            assert!(
                work < (PASSES as u64 + 1) * text.len() as u64,
                "{unit}: {work} steps for {} bytes",
                text.len()
            );
        }
    }

    /// Found by a hostile review: two French numbers in a row read as one run of ten pairs,
    /// which no rule took: neither was found. Found by the second: one after a short number
    /// (`le 12 06 12 34 56 78`) was missed the same way.
    #[test]
    fn two_french_numbers_in_a_row_are_two_numbers() {
        let text = "Tel: 06 12 34 56 78 06 12 34 56 79";
        assert_eq!(
            found(text),
            [
                (Entity::Phone, "06 12 34 56 78"),
                (Entity::Phone, "06 12 34 56 79")
            ]
        );
        let (out, _) = PiiDetector::new().redact(text);
        assert_eq!(out, "Tel: [REDACTED_PHONE] [REDACTED_PHONE]");
        // Six pairs that are no French number stay one run, as before.
        assert!(found("numbers 05 12 23 34 45 56 drawn").is_empty());
        // A French number right after a short number (a day, a count) is found on its own.
        for (text, number) in [
            ("appelez le 12 06 12 34 56 78 svp", "06 12 34 56 78"),
            ("bureau 3 01 42 68 53 00.", "01 42 68 53 00"),
        ] {
            assert_eq!(found(text), [(Entity::Phone, number)], "{text}");
        }
        // Not when the pairs go on, or the first one has a trunk zero too.
        assert!(found("codes 12 06 12 34 56 78 90 drawn").is_empty());
        assert!(found("codes 01 06 12 34 56 78 drawn").is_empty());
    }

    /// Found by a second hostile review: a number (phone, or card in spaced groups) right
    /// after a detected one was read as its continuation, so each redaction pass freed one more and a list of 17 wiped the
    /// whole text. The scan now reads the last detection as the placeholder it becomes: one
    /// pass finds every number of the list, and the text around it stays.
    /// A kind quiet past a detection wakes at its end: a candidate right after it (which a
    /// validator reading the last detection may take) is searched for again and validated,
    /// even where its pass had already looked ahead without that kind. Built with kinds of
    /// its own: a digit that is a value only right after a detection (quiet over the rest
    /// of the text after one that is not), a run of `X`s, and a trigger nothing matches.
    #[test]
    fn a_kind_quiet_past_a_detection_wakes_at_its_end() {
        fn right_after_a_detection(
            _: &str,
            s: usize,
            e: usize,
            freed: &Freed,
        ) -> Option<(usize, usize)> {
            (freed.end == s && freed.end > freed.start).then_some((s, e))
        }
        fn to_the_end(
            text: &str,
            _: usize,
            _: &mut dyn FnMut() -> Option<usize>,
            _: &Kind,
        ) -> Option<usize> {
            Some(text.len())
        }
        fn whole(_: &str, s: usize, e: usize, _: &Freed) -> Option<(usize, usize)> {
            Some((s, e))
        }
        let digit = Spec {
            reach: Some(to_the_end),
            reach_until_detection: true,
            ..patterns::spec(
                Entity::Phone,
                3,
                "[0-9]".into(),
                "[0-9]".into(),
                1,
                right_after_a_detection,
            )
        };
        let never = patterns::spec(Entity::Ssn, 3, "Q".into(), "Q".into(), 1, whole);
        let xs = patterns::spec(Entity::Secret, 0, "X+".into(), "X+".into(), 64, whole);
        let d = PiiDetector {
            compiled: Arc::new(Compiled::from_specs(vec![xs, digit, never]).unwrap()),
        };
        // Two digits fail first: a kind is walked for its reach from its second failure on.
        let text = format!("1 2{}XX3 ok", " ".repeat(40));
        let got: Vec<(Entity, &str)> = d
            .detect(&text)
            .into_iter()
            .map(|x| (x.entity, &text[x.start..x.end]))
            .collect();
        assert_eq!(got, [(Entity::Secret, "XX"), (Entity::Phone, "3")]);
    }

    /// A value held back (its detection starts after its candidate did) that another
    /// detection grows over is taken into it: the two are reported as one, never as two
    /// overlapping spans. Built with kinds of its own, since no real pattern reaches it
    /// today: `A`s (a value), a key whose value starts at its `X` (held), and a reading
    /// that starts on the last `A` and runs to the `X` (what the `A`s grow by).
    #[test]
    fn a_held_value_another_one_grows_over_is_merged_into_it() {
        fn from_the_x(text: &str, s: usize, e: usize, _: &Freed) -> Option<(usize, usize)> {
            text[s..e].find('X').map(|x| (s + x, e))
        }
        fn whole(_: &str, s: usize, e: usize, _: &Freed) -> Option<(usize, usize)> {
            Some((s, e))
        }
        let held = patterns::spec(
            Entity::Secret,
            0,
            "A+hy+X".into(),
            "A+hy+X".into(),
            64,
            from_the_x,
        );
        let grows = patterns::spec(Entity::Phone, 1, "Ahy+X".into(), "Ahy+X".into(), 64, whole);
        let value = patterns::spec(Entity::Ssn, 3, "A+".into(), "A+".into(), 64, whole);
        let d = PiiDetector {
            compiled: Arc::new(Compiled::from_specs(vec![held, grows, value]).unwrap()),
        };
        let text = "AAAhyyX ok";
        let got: Vec<(Entity, &str)> = d
            .detect(text)
            .into_iter()
            .map(|x| (x.entity, &text[x.start..x.end]))
            .collect();
        assert_eq!(got, [(Entity::Secret, "AAAhyyX")]);
        assert_eq!(replace_all(text, &d.detect(text)), "[REDACTED_SECRET] ok");
        // Were two spans ever to overlap, replacing them would not slice backwards.
        let overlapping = [
            (0, 4, Entity::Ssn),
            (2, 6, Entity::Email),
            (3, 5, Entity::Phone),
        ]
        .map(|(start, end, entity)| Detection { start, end, entity });
        assert_eq!(
            replace_all("abcdefg", &overlapping),
            "[REDACTED_SSN][REDACTED_EMAIL]g"
        );
    }

    #[test]
    fn a_long_list_of_numbers_is_found_in_one_pass_and_redacted_one_by_one() {
        let d = PiiDetector::new();
        let lists = [
            (0..40)
                .map(|i| format!("06 12 34 56 {:02}", 10 + i))
                .collect::<Vec<_>>(),
            (0..40)
                .map(|i| format!("020 79{:02} 00{:02}", i, 10 + i))
                .collect(),
            (0..40).map(|i| format!("0612 3456{i:02}")).collect(),
            vec!["4111 1111 1111 1111".to_owned(); 40],
        ];
        for list in lists {
            let text = format!("Keep this. Tel {} end", list.join(" "));
            let found = d.detect(&text);
            assert_eq!(found.len(), list.len(), "{text}");
            let (out, _) = d.redact(&text);
            let want = vec![found[0].entity.placeholder(); list.len()].join(" ");
            assert_eq!(out, format!("Keep this. Tel {want} end"));
        }
    }

    /// Found by a hostile review: a key longer than its pattern's cap was dropped (the match
    /// stopped inside it and the validator refused a key that goes on), not redacted.
    #[test]
    fn keys_longer_than_their_cap_are_redacted_whole() {
        let d = PiiDetector::new();
        let long_sk = format!("sk-{}", "Ab3dEf9hIj".repeat(50));
        let long_xox = "xoxb-1234567890-AbCdEf".repeat(40);
        // The cap falling on a dash or an underscore inside the key.
        let body = "Ab3dEf9hIjKlMnOpQrSt".repeat(20);
        let dash_at_cap = format!("sk-{}-Tail0123456789SECRET", &body[..399]);
        let underscore_at_cap = format!("sk-{body}_Tail0123456789SECRET");
        let xox_dash_at_cap = format!("xoxb-{}-Tail0123456789SECRET", &body[..254]);
        // Glued GitLab tokens past the 64-character cap (the rest starts mid-token: no later
        // pass finds it), and the other capped formats.
        let glued_gitlab = "glpat-h9dcuyTMzt".repeat(40);
        let long_google = format!("AIza{}", &body[..60]);
        let long_sendgrid = format!("SG.{}.{}", &body[..20], &body[..100]);
        let long_webhook = format!("https://hooks.slack.com/services/{}", &body[..240]);
        for key in [
            &long_sk,
            &long_xox,
            &dash_at_cap,
            &underscore_at_cap,
            &xox_dash_at_cap,
            &glued_gitlab,
            &long_google,
            &long_sendgrid,
            &long_webhook,
        ] {
            let text = format!("key {key} ok");
            assert_eq!(found(&text), [(Entity::Secret, key.as_str())]);
            assert_eq!(d.redact(&text).0, "key [REDACTED_SECRET] ok");
        }
    }
}
