//! The judging engine: a compiled configuration that finds what a text or a JSON value holds
//! (blocked content, PII, over-long text), decides what each rule's action does with it, and
//! applies the redactions. The hook ([`crate::GuardrailsHook`]) only says *where* to look.

use std::collections::{HashMap, HashSet};

use hooks_core::RunId;
use hooks_core::text::{char_len, preview};
use regex::Regex;
use serde_json::Value;

use crate::config::{GuardrailAction, GuardrailConfig};
use crate::error::{Error, Result, closest};
use crate::gate::ToolGate;
use crate::pii::{Entity, PiiDetector};
use crate::violation::{GuardrailViolation, Store, ViolationLocation};

/// What replaces blocked content under REDACT.
pub const REDACTED_CONTENT: &str = "[REDACTED]";

pub(crate) struct Engine {
    /// The detector for the entities not set to ALLOW: an allowed entity is not looked for,
    /// so its value can never hide another one (a card glued to an allowed address is
    /// found as a card).
    pub(crate) detector: PiiDetector,
    /// For a detection under WARN or REDACT, the stricter actions some entity is set to,
    /// strictest first, each with a detector for its entities alone (see
    /// [`strictest_inside`](Engine::strictest_inside)).
    stricter: Vec<(GuardrailAction, PiiDetector)>,
    /// The detector without the entities set to ASK (when any is): what an ASK value could
    /// hide is looked for with it (see `unmask_asked`).
    ask_free: Option<PiiDetector>,
    /// The detector for secrets alone (unless they are allowed): it reads a JSON array's
    /// strings as the argument list they usually are (see [`argv_context`](Engine::argv_context)).
    argv: Option<PiiDetector>,
    pub(crate) patterns: Vec<(String, Regex)>,
    pub(crate) blocked_tools: HashSet<String>,
    pub(crate) allowed_tools: Option<HashSet<String>>,
    pub(crate) max_prompt: usize,
    pub(crate) max_result: usize,
    pub(crate) actions: HashMap<String, GuardrailAction>,
    pub(crate) default_action: GuardrailAction,
    pub(crate) gate: ToolGate,
    pub(crate) store: Store,
    /// True when only the built-in blocked-content patterns are in use (see `scrub_json`).
    pub(crate) plain_keys_are_clean: bool,
    pub(crate) config: GuardrailConfig,
    /// How many redaction passes settle a text before it fails closed:
    /// [`MAX_REDACTION_PASSES`](crate::MAX_REDACTION_PASSES) (lower only in tests, where no
    /// known input needs that many).
    pub(crate) passes: usize,
}

/// A finding in one string, before any decision.
pub(crate) struct Finding {
    pub(crate) rule: String,
    pub(crate) description: String,
    pub(crate) entity: Option<Entity>,
    pub(crate) span: (usize, usize),
}

/// What to do with one string.
#[derive(Default)]
pub(crate) struct Verdict {
    /// The first BLOCK, as a description.
    pub(crate) blocked: Option<String>,
    /// Spans to replace, with their replacement, in order.
    pub(crate) replace: Vec<(usize, usize, &'static str)>,
    /// Everything that fired (except ALLOW).
    pub(crate) violations: Vec<(Finding, GuardrailAction)>,
}

impl Verdict {
    /// Adds what the string's context found (a JSON key's, an argument list's), unless the
    /// string's own judgement already holds it (the same span under the same rule); a BLOCK
    /// is kept as the first one if none came before.
    fn add_from_context(&mut self, finding: Finding, action: GuardrailAction) {
        if self
            .violations
            .iter()
            .any(|(f, _)| f.span == finding.span && f.rule == finding.rule)
        {
            return;
        }
        if action == GuardrailAction::Block {
            self.blocked
                .get_or_insert_with(|| finding.description.clone());
        }
        self.violations.push((finding, action));
    }
}

/// What [`Engine::scrub_json`] found in a JSON value.
#[derive(Debug, Default)]
pub(crate) struct Scrubbed {
    /// The first BLOCK, as a description.
    pub(crate) blocked: Option<String>,
    /// True when a string was rewritten.
    pub(crate) changed: bool,
    /// Every violation reported, in order.
    pub(crate) violations: Vec<GuardrailViolation>,
    /// The first ASK on a tool call's arguments: (rule, description).
    pub(crate) asked: Option<(String, String)>,
    /// Scrubbing a tool call's arguments (in a reply, or before the call): ASK may interrupt
    /// the call instead of blocking.
    pub(crate) may_ask: bool,
}

/// How strict an action is, for a value that two rules apply to: BLOCK (and ASK, which acts
/// as BLOCK wherever nothing can pause) above REDACT above WARN above ALLOW.
fn strictness(a: GuardrailAction) -> u8 {
    match a {
        GuardrailAction::Allow => 0,
        GuardrailAction::Warn => 1,
        GuardrailAction::Redact => 2,
        GuardrailAction::Block | GuardrailAction::Ask => 3,
    }
}

/// Compiles a blocked-content pattern. The three built-in ones are compiled once per process
/// and shared (a compiled `Regex` is cheap to clone): they are most of the cost of building
/// a guard.
fn compile(pattern: &str) -> std::result::Result<Regex, regex::Error> {
    use crate::config::{COMMAND_INJECTION, PATH_TRAVERSAL, SQL_INJECTION};
    use std::sync::OnceLock;
    static BUILT_IN: [OnceLock<Regex>; 3] = [OnceLock::new(), OnceLock::new(), OnceLock::new()];
    let Some(i) = [SQL_INJECTION, PATH_TRAVERSAL, COMMAND_INJECTION]
        .iter()
        .position(|p| *p == pattern)
    else {
        return Regex::new(pattern);
    };
    if let Some(re) = BUILT_IN[i].get() {
        return Ok(re.clone());
    }
    let re = Regex::new(pattern)?;
    Ok(BUILT_IN[i].get_or_init(|| re).clone())
}

impl Engine {
    /// Compiles the configuration: every pattern, every override.
    pub(crate) fn new(config: GuardrailConfig) -> Result<Self> {
        let mut patterns = Vec::new();
        for (name, pattern) in &config.patterns {
            if name.is_empty()
                || !name
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
            {
                return Err(Error::BadName(name.clone()));
            }
            let rule = format!("blocked_{name}");
            if patterns.iter().any(|(r, _)| *r == rule) {
                return Err(Error::DuplicateRule(rule));
            }
            let re = compile(pattern).map_err(|source| Error::BadPattern {
                rule: rule.clone(),
                source,
            })?;
            patterns.push((rule, re));
        }
        let mut valid: Vec<String> = [
            "blocked_tool",
            "tool_not_allowed",
            "max_prompt_length",
            "max_tool_result_length",
        ]
        .map(String::from)
        .to_vec();
        valid.extend(patterns.iter().map(|(r, _)| r.clone()));
        valid.extend(Entity::ALL.iter().map(|e| pii_rule(*e).to_owned()));
        let mut actions = HashMap::new();
        for (rule, action) in &config.overrides {
            if !valid.contains(rule) {
                return Err(Error::UnknownRule {
                    rule: rule.clone(),
                    suggestion: closest(rule, &valid).map(str::to_owned),
                    valid,
                });
            }
            actions.insert(rule.clone(), *action);
        }
        let configured = |e: &Entity| {
            actions
                .get(pii_rule(*e))
                .copied()
                .unwrap_or(config.default_action)
        };
        let asks = config
            .pii
            .iter()
            .any(|e| configured(e) == GuardrailAction::Ask);
        let guarded: Vec<Entity> = config
            .pii
            .iter()
            .copied()
            .filter(|e| configured(e) != GuardrailAction::Allow)
            .collect();
        let ask_free = if asks {
            let rest: Vec<Entity> = guarded
                .iter()
                .copied()
                .filter(|e| configured(e) != GuardrailAction::Ask)
                .collect();
            Some(PiiDetector::for_entities(&rest)?)
        } else {
            None
        };
        // (ASK acts as BLOCK here, as `action` maps it.)
        let acting = |e: &Entity| match configured(e) {
            GuardrailAction::Ask => GuardrailAction::Block,
            a => a,
        };
        let mut stricter = Vec::new();
        for level in [GuardrailAction::Block, GuardrailAction::Redact] {
            let at: Vec<Entity> = guarded
                .iter()
                .copied()
                .filter(|e| acting(e) == level)
                .collect();
            let laxer = guarded
                .iter()
                .any(|e| strictness(acting(e)) < strictness(level));
            if !at.is_empty() && laxer {
                stricter.push((level, PiiDetector::for_entities(&at)?));
            }
        }
        let argv = if guarded.contains(&Entity::Secret) {
            Some(PiiDetector::for_entities(&[Entity::Secret])?)
        } else {
            None
        };
        Ok(Engine {
            ask_free,
            argv,
            detector: PiiDetector::for_entities(&guarded)?,
            stricter,
            patterns,
            blocked_tools: config.blocked_tools.iter().cloned().collect(),
            allowed_tools: config
                .allowed_tools
                .as_ref()
                .map(|t| t.iter().cloned().collect()),
            max_prompt: config.max_prompt_length,
            max_result: config.max_tool_result_length,
            actions,
            default_action: config.default_action,
            gate: config.gate.clone(),
            store: Store::new(config.max_violations),
            plain_keys_are_clean: config.patterns.iter().all(|(name, pattern)| {
                matches!(
                    (name.as_str(), pattern.as_str()),
                    ("sql_injection", crate::config::SQL_INJECTION)
                        | ("path_traversal", crate::config::PATH_TRAVERSAL)
                        | ("command_injection", crate::config::COMMAND_INJECTION)
                )
            }),
            config,
            passes: crate::MAX_REDACTION_PASSES,
        })
    }

    /// Judges one string (with its JSON key as context, if any) and returns what it becomes
    /// when something in it fired under BLOCK or REDACT: each finding is replaced by its
    /// placeholder (so a blocked value does not linger in the conversation or the record
    /// either), and the result settled. Every finding is reported; the first BLOCK is kept.
    pub(crate) fn scrub_text(
        &self,
        site: (&RunId, ViolationLocation, Option<&str>),
        key: Option<&str>,
        text: &str,
        content: bool,
        out: &mut Scrubbed,
    ) -> Option<String> {
        self.scrub_text_with(site, key, text, content, Vec::new(), out)
    }

    /// [`scrub_text`](Self::scrub_text) with findings its neighbours gave the string (see
    /// [`argv_context`](Self::argv_context)) added to its own.
    fn scrub_text_with(
        &self,
        (run_id, loc, tool): (&RunId, ViolationLocation, Option<&str>),
        key: Option<&str>,
        text: &str,
        content: bool,
        context: Vec<(Finding, GuardrailAction)>,
        out: &mut Scrubbed,
    ) -> Option<String> {
        let mut verdict = self.judge_keyed(key, text, content);
        for (finding, action) in context {
            verdict.add_from_context(finding, action);
        }
        if verdict.violations.is_empty() {
            return None;
        }
        if out.may_ask {
            // On a call's arguments, in a run that can pause, an ASK rule interrupts the call
            // instead of blocking it, and leaves the value for the person to see.
            let mut any = false;
            for (f, a) in &mut verdict.violations {
                if *a == GuardrailAction::Block && self.configured(&f.rule) == GuardrailAction::Ask
                {
                    *a = GuardrailAction::Ask;
                    any = true;
                }
            }
            if any {
                self.unmask_asked(key, text, &mut verdict);
                for (f, a) in &verdict.violations {
                    if *a == GuardrailAction::Ask {
                        out.asked
                            .get_or_insert_with(|| (f.rule.clone(), f.description.clone()));
                    }
                }
                verdict.blocked = verdict
                    .violations
                    .iter()
                    .find(|(_, a)| *a == GuardrailAction::Block)
                    .map(|(f, _)| f.description.clone());
            }
        }
        if out.blocked.is_none() {
            out.blocked = verdict.blocked;
        }
        let mut spans = Vec::new();
        for (finding, action) in verdict.violations {
            if matches!(action, GuardrailAction::Block | GuardrailAction::Redact) {
                let with = finding.entity.map_or(REDACTED_CONTENT, Entity::placeholder);
                spans.push((finding.span.0, finding.span.1, with));
            }
            out.violations
                .push(self.report(run_id, loc, tool, finding, action));
        }
        if spans.is_empty() {
            return None;
        }
        out.changed = true;
        Some(self.settle_blocking_keeping(
            run_id,
            loc,
            tool,
            apply(text, spans),
            &mut out.blocked,
            out.may_ask,
        ))
    }

    /// An ASK leaves its value in place, so what the first scan did not look at because of
    /// it must be looked at now; anything found turns every ASK of the string into BLOCK
    /// (fail closed: the value is replaced and the call cancelled):
    /// - inside or across an ASK value, an entity of a BLOCK or REDACT rule that is not just
    ///   the same value read as another kind (a card number written as an e-mail's local
    ///   part), found by scanning again without the ASK entities;
    /// - after an ASK value, an entity the first scan missed because a detection ends its
    ///   look at its span (an SSN right before a card), found by scanning the text with the
    ///   ASK values masked, as a redaction would.
    fn unmask_asked(&self, key: Option<&str>, text: &str, verdict: &mut Verdict) {
        let asked: Vec<(usize, usize, &'static str)> = verdict
            .violations
            .iter()
            .filter(|(_, a)| *a == GuardrailAction::Ask)
            .map(|(f, _)| {
                let with = f.entity.map_or(REDACTED_CONTENT, Entity::placeholder);
                (f.span.0, f.span.1, with)
            })
            .collect();
        let harmful =
            |a: GuardrailAction| matches!(a, GuardrailAction::Block | GuardrailAction::Redact);
        let mut escalate = false;
        if let Some(detector) = &self.ask_free {
            // With the JSON key's context, as the first scan had it (`{"ssn": …}`).
            let prefix = key
                .filter(|k| crate::pii::key_gives_context(k))
                .map(|k| format!("{}: ", preview(k, 64)))
                .unwrap_or_default();
            let offset = prefix.len();
            for d in detector.detect(&format!("{prefix}{text}")) {
                if d.end <= offset || !harmful(self.action(pii_rule(d.entity))) {
                    continue;
                }
                let (ds, de) = (d.start.saturating_sub(offset), d.end - offset);
                escalate |= asked
                    .iter()
                    .any(|&(s, e, _)| s < de && ds < e && (s, e) != (ds, de));
            }
        }
        if !escalate {
            let known: HashSet<&str> = verdict
                .violations
                .iter()
                .filter(|(_, a)| harmful(*a))
                .filter_map(|(f, _)| text.get(f.span.0..f.span.1))
                .collect();
            let masked = apply(text, asked);
            escalate = self
                .judge_keyed(key, &masked, false)
                .violations
                .iter()
                .any(|(f, a)| {
                    harmful(*a)
                        && self.configured(&f.rule) != GuardrailAction::Ask
                        && masked.get(f.span.0..f.span.1).is_none_or(|found| {
                            !known.contains(found) && !found.starts_with("[REDACTED")
                        })
                });
        }
        if escalate {
            for (_, a) in &mut verdict.violations {
                if *a == GuardrailAction::Ask {
                    *a = GuardrailAction::Block;
                }
            }
        }
    }

    /// [`scrub_text`](Self::scrub_text) that rewrites `text` in place; true when it changed.
    pub(crate) fn scrub_in_place(
        &self,
        site: (&RunId, ViolationLocation, Option<&str>),
        text: &mut String,
        out: &mut Scrubbed,
    ) -> bool {
        match self.scrub_text(site, None, text, false, out) {
            Some(clean) => {
                *text = clean;
                true
            }
            None => false,
        }
    }

    /// Judges every string, number and object key of `v` (a value with the key it sits
    /// under as context) and, in the same visit, rewrites what fired under BLOCK or REDACT:
    /// a string gets placeholders, a number that holds an entity becomes its placeholder
    /// string, a key that holds one is renamed to its placeholder (made unique in its object,
    /// so no value is lost).
    pub(crate) fn scrub_json(
        &self,
        run_id: &RunId,
        loc: ViolationLocation,
        tool: Option<&str>,
        v: &mut Value,
        content: bool,
    ) -> Scrubbed {
        let mut out = Scrubbed::default();
        self.scrub_json_into(run_id, loc, tool, v, content, &mut out);
        out
    }

    /// [`scrub_json`](Self::scrub_json) adding to `out` (whose `may_ask` it honours).
    pub(crate) fn scrub_json_into(
        &self,
        run_id: &RunId,
        loc: ViolationLocation,
        tool: Option<&str>,
        v: &mut Value,
        content: bool,
        out: &mut Scrubbed,
    ) {
        type Context = Vec<(Finding, GuardrailAction)>;
        let mut stack: Vec<(Option<&str>, &mut Value, Context)> = vec![(None, v, Vec::new())];
        while let Some((key, v, context)) = stack.pop() {
            match v {
                Value::String(s) => {
                    if let Some(new) =
                        self.scrub_text_with((run_id, loc, tool), key, s, content, context, out)
                    {
                        *s = new;
                    }
                }
                // No entity is written with fewer than 7 digits (SSNs have 9, phones 7 and
                // more, cards 13 and more): smaller numbers need no look, unless their
                // neighbours make them a secret (`["sshpass", "-p", 471108]`).
                Value::Number(n)
                    if context.is_empty()
                        && n.as_i64().is_some_and(|i| i.unsigned_abs() < 1_000_000) => {}
                Value::Number(n) => {
                    let text = n.to_string();
                    if let Some(new) =
                        self.scrub_text_with((run_id, loc, tool), key, &text, content, context, out)
                    {
                        *v = Value::String(new);
                    }
                }
                Value::Array(items) => {
                    let contexts = self.argv_context(items);
                    stack.extend(
                        items
                            .iter_mut()
                            .zip(contexts)
                            .rev()
                            .map(|(i, c)| (key, i, c)),
                    );
                }
                Value::Object(map) => {
                    let renames: Vec<(String, String)> = map
                        .keys()
                        // A short key of letters and underscores (`query`, `api_key`) holds no
                        // entity and no built-in blocked pattern: every detector and pattern
                        // needs a digit, an `@`, punctuation, a space or 16 characters.
                        // (With patterns of the user's own, every key is judged.)
                        .filter(|k| {
                            !self.plain_keys_are_clean
                                || k.len() > 15
                                || !k.bytes().all(|b| b.is_ascii_alphabetic() || b == b'_')
                        })
                        .filter_map(|k| {
                            self.scrub_text((run_id, loc, tool), None, k, content, out)
                                .map(|new| (k.clone(), new))
                        })
                        .collect();
                    for (old, new) in renames {
                        if let Some(value) = map.remove(&old) {
                            let name = hooks_core::text::unique(&new, |k| map.contains_key(k));
                            map.insert(name, value);
                        }
                    }
                    stack.extend(
                        map.iter_mut()
                            .rev()
                            .map(|(k, i)| (Some(k.as_str()), i, Vec::new())),
                    );
                }
                Value::Bool(_) | Value::Null => {}
            }
        }
    }

    /// What each item of a JSON array holds because of its neighbours. An array of strings
    /// is most often an argument list (`["mysql", "-uroot", "-pS3cret"]`,
    /// `["sshpass", "-p", "S3cret", "ssh", "host"]`), and a command-line credential is only
    /// one with its command and option before it: judged alone, `"S3cret"` is a word. So the
    /// array's strings and numbers are read once more, by the secrets detector, as the
    /// command line a shell would be given: one blank between items, an item that holds a
    /// blank, a quote or a shell operator in single quotes (in double ones if it holds a
    /// single quote) — so an item's `;` or `&` stays inside its argument, and an item's
    /// inner quote inside its value. Each secret found there is given to the items it
    /// covers, with spans relative to each. One more read of the array's text: linear,
    /// whatever the array holds.
    fn argv_context(&self, items: &[Value]) -> Vec<Vec<(Finding, GuardrailAction)>> {
        let mut contexts: Vec<Vec<(Finding, GuardrailAction)>> =
            items.iter().map(|_| Vec::new()).collect();
        let Some(detector) = &self.argv else {
            return contexts;
        };
        let texts = items
            .iter()
            .filter(|i| matches!(i, Value::String(_) | Value::Number(_)))
            .count();
        if texts < 2 {
            return contexts;
        }
        let mut list = String::new();
        // (item, start, end) of each string's or number's text in `list`, in order.
        let mut ranges: Vec<(usize, usize, usize)> = Vec::with_capacity(texts);
        for (at, item) in items.iter().enumerate() {
            let number;
            let text = match item {
                Value::String(s) => s.as_str(),
                Value::Number(n) => {
                    number = n.to_string();
                    number.as_str()
                }
                _ => continue,
            };
            if !list.is_empty() {
                list.push(' ');
            }
            let quote = shell_quote(text);
            list.extend(quote);
            ranges.push((at, list.len(), list.len() + text.len()));
            list.push_str(text);
            list.extend(quote);
        }
        let action = self.action(pii_rule(Entity::Secret));
        for d in detector.detect(&list) {
            let first = ranges.partition_point(|&(_, _, e)| e <= d.start);
            for &(at, s, e) in ranges[first..].iter().take_while(|&&(_, s, _)| s < d.end) {
                if s == e {
                    continue;
                }
                let finding = Finding {
                    rule: pii_rule(Entity::Secret).to_owned(),
                    description: format!("{} detected", Entity::Secret.description()),
                    entity: Some(Entity::Secret),
                    span: (d.start.max(s) - s, d.end.min(e) - s),
                };
                contexts[at].push((finding, action));
            }
        }
        contexts
    }

    /// What `rule` does where nothing can pause: ASK acts as BLOCK (fail closed).
    pub(crate) fn action(&self, rule: &str) -> GuardrailAction {
        match self.configured(rule) {
            GuardrailAction::Ask => GuardrailAction::Block,
            a => a,
        }
    }

    /// What `rule` was configured to do (ASK included): for a tool call's arguments.
    pub(crate) fn configured(&self, rule: &str) -> GuardrailAction {
        self.actions
            .get(rule)
            .copied()
            .unwrap_or(self.default_action)
    }

    pub(crate) fn report(
        &self,
        run_id: &RunId,
        location: ViolationLocation,
        tool: Option<&str>,
        finding: Finding,
        action: GuardrailAction,
    ) -> GuardrailViolation {
        let v = GuardrailViolation {
            rule: finding.rule,
            description: finding.description,
            action,
            location,
            entity: finding.entity,
            span: Some(finding.span),
            tool_name: tool.map(|t| preview(t, 64).into_owned()),
            run_id: run_id.clone(),
        };
        tracing::warn!(
            target: "hooks::guardrails",
            run_id = run_id.as_str(),
            rule = v.rule.as_str(),
            location = location.as_str(),
            action = action.as_str(),
            "Guardrail violation: {}",
            v.description
        );
        if let Some(cb) = &self.config.on_violation {
            cb(&v);
        }
        self.store.push(v.clone());
        v
    }

    /// Blocked content (when `content`) and PII in `text`.
    pub(crate) fn judge(&self, text: &str, content: bool) -> Verdict {
        let mut verdict = Verdict::default();
        if content {
            for (rule, re) in &self.patterns {
                let action = self.action(rule);
                if action == GuardrailAction::Allow {
                    continue;
                }
                for m in re.find_iter(text) {
                    let finding = Finding {
                        rule: rule.clone(),
                        description: format!("blocked content: {}", &rule["blocked_".len()..]),
                        entity: None,
                        span: (m.start(), m.end()),
                    };
                    self.decide(&mut verdict, finding, action, REDACTED_CONTENT);
                    if action != GuardrailAction::Redact {
                        break;
                    }
                }
            }
        }
        for d in self.detector.detect(text) {
            let action = self.action(pii_rule(d.entity));
            if action == GuardrailAction::Allow {
                continue;
            }
            let (entity, action) = self.strictest_inside(text, &d, action);
            let finding = Finding {
                rule: pii_rule(entity).to_owned(),
                description: format!("{} detected", entity.description()),
                entity: Some(entity),
                span: (d.start, d.end),
            };
            self.decide(&mut verdict, finding, action, entity.placeholder());
        }
        verdict
    }

    /// The entity (and its action) that decides what happens to detection `d`, whose own
    /// action is `action`: a detection can hold a value of another entity glued into it (a
    /// card number as an address's local part, a key's body running into an address), and a
    /// value under a stricter rule must get that rule, not the laxer one of the value it is
    /// glued to. So for each stricter action some entity is set to, strictest first, the
    /// span is scanned for the entities set to it alone (so two of them cannot merge into
    /// one of a laxer rule), with up to 64 bytes before it as context (an `ssn:` label) and
    /// 256 after (a value that starts inside and runs on past the end); the first one found
    /// that starts inside the span decides for the whole span.
    fn strictest_inside(
        &self,
        text: &str,
        d: &crate::pii::Detection,
        action: GuardrailAction,
    ) -> (Entity, GuardrailAction) {
        let from = crate::pii::floor_char_boundary(text, d.start.saturating_sub(64));
        let to = crate::pii::ceil_char_boundary(text, d.end.saturating_add(256));
        for (level, detector) in &self.stricter {
            if strictness(*level) <= strictness(action) {
                break;
            }
            let inside = detector
                .detect(&text[from..to])
                .into_iter()
                .take_while(|x| from + x.start < d.end)
                .find(|x| from + x.start >= d.start);
            if let Some(x) = inside {
                return (x.entity, *level);
            }
        }
        (d.entity, action)
    }

    /// After a redaction: redacts what it uncovered (an entity its neighbour hid), BLOCK and
    /// REDACT findings alike, reporting each; the first BLOCK it uncovers goes to `blocked`.
    /// If entities are still being uncovered after
    /// [`MAX_REDACTION_PASSES`](crate::MAX_REDACTION_PASSES) passes, the whole text is replaced
    /// (fail closed: no detectable entity is ever left behind).
    pub(crate) fn settle_blocking(
        &self,
        run_id: &RunId,
        loc: ViolationLocation,
        tool: Option<&str>,
        text: String,
        blocked: &mut Option<String>,
    ) -> String {
        self.settle_blocking_keeping(run_id, loc, tool, text, blocked, false)
    }

    /// [`settle_blocking`](Self::settle_blocking); with `keep_asked`, what an ASK rule finds
    /// stays (a person will see it) instead of counting as BLOCK.
    pub(crate) fn settle_blocking_keeping(
        &self,
        run_id: &RunId,
        loc: ViolationLocation,
        tool: Option<&str>,
        mut text: String,
        blocked: &mut Option<String>,
        keep_asked: bool,
    ) -> String {
        let asked = |rule: &str| keep_asked && self.configured(rule) == GuardrailAction::Ask;
        for _ in 1..self.passes {
            let v = self.judge(&text, false);
            let mut spans = Vec::new();
            for (finding, action) in v.violations {
                if asked(&finding.rule) {
                    continue;
                }
                if matches!(action, GuardrailAction::Block | GuardrailAction::Redact) {
                    let with = finding.entity.map_or(REDACTED_CONTENT, Entity::placeholder);
                    spans.push((finding.span.0, finding.span.1, with));
                    if action == GuardrailAction::Block && blocked.is_none() {
                        *blocked = Some(finding.description.clone());
                    }
                    self.report(run_id, loc, tool, finding, action);
                }
            }
            if spans.is_empty() {
                return text;
            }
            text = apply(&text, spans);
        }
        let last = self.judge(&text, false);
        if last.violations.iter().any(|(f, a)| {
            matches!(a, GuardrailAction::Block | GuardrailAction::Redact) && !asked(&f.rule)
        }) {
            return REDACTED_CONTENT.to_owned();
        }
        text
    }

    /// [`settle_blocking`](Self::settle_blocking) where the caller has already decided: an
    /// uncovered BLOCK finding is redacted like the rest.
    pub(crate) fn settle(
        &self,
        run_id: &RunId,
        loc: ViolationLocation,
        tool: Option<&str>,
        text: String,
    ) -> String {
        self.settle_blocking(run_id, loc, tool, text, &mut None)
    }

    /// [`judge`](Self::judge) for a string under a JSON key: PII is looked for in
    /// `"<key>: <text>"` (so `{"ssn": "123456789"}` counts as an SSN), spans stay relative to
    /// the string.
    ///
    /// A field named for a secret (`password`, `client_secret`, `apiKey`, …) holds one: its
    /// whole value is a secret unless it is a template, a mask or a schema's word (see
    /// `pii::secret_field`).
    pub(crate) fn judge_keyed(&self, key: Option<&str>, text: &str, content: bool) -> Verdict {
        let mut verdict = self.judge_in_context(key, text, content);
        let action = self.action(pii_rule(Entity::Secret));
        if action != GuardrailAction::Allow
            && key.is_some_and(|k| crate::pii::secret_field(k, text))
            && !verdict
                .replace
                .iter()
                .any(|r| (r.0, r.1) == (0, text.len()))
        {
            let finding = Finding {
                rule: pii_rule(Entity::Secret).to_owned(),
                description: format!("{} detected", Entity::Secret.description()),
                entity: Some(Entity::Secret),
                span: (0, text.len()),
            };
            self.decide(&mut verdict, finding, action, Entity::Secret.placeholder());
        }
        verdict
    }

    fn judge_in_context(&self, key: Option<&str>, text: &str, content: bool) -> Verdict {
        let Some(key) = key.filter(|k| crate::pii::key_gives_context(k)) else {
            return self.judge(text, content);
        };
        let mut verdict = self.judge(text, content);
        let prefixed = format!("{}: {text}", preview(key, 64));
        let offset = prefixed.len() - text.len();
        let mut keyed = self.judge(&prefixed, false);
        // Keep what the key's context found beyond what the bare text found.
        keyed.violations.retain(|(f, _)| f.span.0 >= offset);
        keyed.replace.retain(|r| r.0 >= offset);
        for (mut finding, action) in keyed.violations {
            finding.span = (finding.span.0 - offset, finding.span.1 - offset);
            verdict.add_from_context(finding, action);
        }
        for (s, e, with) in keyed.replace {
            let r = (s - offset, e - offset, with);
            if !verdict.replace.contains(&r) {
                verdict.replace.push(r);
            }
        }
        verdict
    }

    pub(crate) fn decide(
        &self,
        verdict: &mut Verdict,
        finding: Finding,
        action: GuardrailAction,
        placeholder: &'static str,
    ) {
        match action {
            GuardrailAction::Block => {
                verdict
                    .blocked
                    .get_or_insert_with(|| finding.description.clone());
            }
            GuardrailAction::Redact => {
                verdict
                    .replace
                    .push((finding.span.0, finding.span.1, placeholder))
            }
            // `action` maps ASK to BLOCK: not reached.
            GuardrailAction::Warn | GuardrailAction::Allow | GuardrailAction::Ask => {}
        }
        verdict.violations.push((finding, action));
    }

    pub(crate) fn length(
        &self,
        text: &str,
        max: usize,
        rule: &'static str,
        what: &str,
    ) -> Option<(Finding, GuardrailAction)> {
        if text.len() <= max {
            return None;
        }
        let n = char_len(text);
        if n <= max {
            return None;
        }
        let action = self.action(rule);
        (action != GuardrailAction::Allow).then(|| {
            (
                Finding {
                    rule: rule.to_owned(),
                    description: format!("{what} is {n} characters, over the limit of {max}"),
                    entity: None,
                    span: (0, text.len()),
                },
                action,
            )
        })
    }
}

pub(crate) fn pii_rule(e: Entity) -> &'static str {
    match e {
        Entity::Email => "pii_email",
        Entity::Phone => "pii_phone",
        Entity::Ssn => "pii_ssn",
        Entity::CreditCard => "pii_credit_card",
        Entity::IpAddress => "pii_ip_address",
        Entity::Iban => "pii_iban",
        Entity::Secret => "pii_secret",
    }
}

/// The quote an argument needs on a shell's command line (see `Engine::argv_context`): none
/// for a word of plain characters, `'` for one with a blank, a quote or a shell operator, `"`
/// for one that holds a `'`.
fn shell_quote(arg: &str) -> Option<char> {
    let plain = !arg.is_empty()
        && !arg.bytes().any(|c| {
            c.is_ascii_whitespace()
                || matches!(
                    c,
                    b'\''
                        | b'"'
                        | b'`'
                        | b'\\'
                        | b';'
                        | b'|'
                        | b'&'
                        | b'('
                        | b')'
                        | b'<'
                        | b'>'
                        | b'$'
                )
        });
    match plain {
        true => None,
        false if arg.contains('\'') && !arg.contains('"') => Some('"'),
        false => Some('\''),
    }
}

/// Applies the replacements (sorted, non-overlapping after filtering) to `text`.
pub(crate) fn apply(text: &str, mut replace: Vec<(usize, usize, &'static str)>) -> String {
    replace.sort_by_key(|r| (r.0, std::cmp::Reverse(r.1)));
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    for (s, e, with) in replace {
        if s < last {
            // Overlaps an earlier replacement (e.g. blocked content containing PII).
            if e > last {
                last = e;
            }
            continue;
        }
        out.push_str(&text[last..s]);
        out.push_str(with);
        last = e;
    }
    out.push_str(&text[last..]);
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    fn engine(overrides: &[(&str, GuardrailAction)]) -> Engine {
        let mut config = GuardrailConfig::default();
        for (rule, action) in overrides {
            config = config.with_action(*rule, *action);
        }
        Engine::new(config).unwrap()
    }

    #[test]
    fn judge_decides_by_each_rules_action() {
        let e = engine(&[
            ("pii_email", GuardrailAction::Redact),
            ("pii_ssn", GuardrailAction::Block),
        ]);
        let v = e.judge("mail a@example.com", false);
        assert_eq!(v.blocked, None);
        assert_eq!(v.replace, [(5, 18, "[REDACTED_EMAIL]")]);
        let v = e.judge("ssn 123-45-6789", false);
        assert_eq!(
            v.blocked.as_deref(),
            Some("US social security number detected")
        );
        assert!(v.replace.is_empty());
    }

    #[test]
    fn a_key_gives_a_bare_value_its_context_with_spans_relative_to_the_value() {
        let e = engine(&[("pii_ssn", GuardrailAction::Redact)]);
        assert!(
            e.judge_keyed(Some("invoice"), "123456789", false)
                .replace
                .is_empty()
        );
        let v = e.judge_keyed(Some("ssn"), "123456789", false);
        assert_eq!(v.replace, [(0, 9, "[REDACTED_SSN]")]);
    }

    #[test]
    fn keys_and_numbers_are_judged_and_a_users_pattern_sees_every_key() {
        let run = RunId::new("r");
        let e = engine(&[("pii_email", GuardrailAction::Redact)]);
        let mut v = json!({"a@example.com": 1, "card": 4111111111111111u64, "n": 12});
        let r = e.scrub_json(&run, ViolationLocation::ToolArgs, None, &mut v, true);
        assert!(r.changed);
        assert_eq!(
            v,
            json!({"[REDACTED_EMAIL]": 1, "card": "[REDACTED_CREDIT_CARD]", "n": 12})
        );
        // A pattern of the user's own is looked for in plain keys too.
        let config = GuardrailConfig::default().with_blocked_pattern("codename", "(?i)bluebird");
        let e = Engine::new(config).unwrap();
        assert!(!e.plain_keys_are_clean);
        let mut v = json!({"bluebird": "x"});
        let r = e.scrub_json(&run, ViolationLocation::ToolArgs, None, &mut v, true);
        assert_eq!(r.blocked.as_deref(), Some("blocked content: codename"));
    }

    #[test]
    fn a_field_named_for_a_secret_holds_one_whatever_its_value_looks_like() {
        let run = RunId::new("r");
        let e = engine(&[("pii_secret", GuardrailAction::Redact)]);
        let mut v = json!({
            "password": "hunter2",
            "label": {"password": "Passwort", "new_password": "must be at least 8 characters"},
            "db": {"clientSecret": "abc12345", "password_confirm": "hunter"},
            "apiKey": 12345678,
            "token_type": "Bearer",
            "DB_PASSWORD": "${DB_PASSWORD}",
            "secret": true,
            "old_password": "****",
            "api_key": "null",
            "github_token": "Zq8rTw2xLk",
            "Pwd": 48213957,
            "smtp": {"db_pass": "Zq8rTw2xLk", "nextToken": "AAAA1234abcd", "eos_token": "</s>"},
            "ftp": {"adminPass": "Zq8rTw2xLk", "firstPass": "pass2x", "Pass": "test_login_2"},
            "rails": {"secret_key_base": "Zq8rTw2xLk", "SecretAccessKey": "Zq8rTw2xLk"},
        });
        let r = e.scrub_json(&run, ViolationLocation::ToolArgs, None, &mut v, true);
        assert!(r.changed);
        assert_eq!(
            v,
            json!({
                "password": "[REDACTED_SECRET]",
                "label": {"password": "Passwort", "new_password": "must be at least 8 characters"},
                "db": {"clientSecret": "[REDACTED_SECRET]", "password_confirm": "hunter"},
                "apiKey": "[REDACTED_SECRET]",
                "token_type": "Bearer",
                "DB_PASSWORD": "${DB_PASSWORD}",
                "secret": true,
                "old_password": "****",
                "api_key": "null",
                "github_token": "[REDACTED_SECRET]",
                "Pwd": "[REDACTED_SECRET]",
                "smtp": {"db_pass": "[REDACTED_SECRET]", "nextToken": "AAAA1234abcd", "eos_token": "</s>"},
                "ftp": {"adminPass": "[REDACTED_SECRET]", "firstPass": "pass2x", "Pass": "test_login_2"},
                "rails": {"secret_key_base": "[REDACTED_SECRET]", "SecretAccessKey": "[REDACTED_SECRET]"},
            })
        );
        // With the rule on ALLOW, nothing is touched.
        let e = engine(&[("pii_secret", GuardrailAction::Allow)]);
        let mut v = json!({"password": "hunter2"});
        e.scrub_json(&run, ViolationLocation::ToolArgs, None, &mut v, true);
        assert_eq!(v, json!({"password": "hunter2"}));
    }

    /// A tool's arguments often hold a command as a list: each item is judged with the items
    /// before it, as it would be on one line.
    #[test]
    fn an_arrays_items_are_read_as_the_argument_list_they_are() {
        let run = RunId::new("r");
        let e = engine(&[("pii_secret", GuardrailAction::Redact)]);
        let mut v = json!({
            "cmd": ["mysql", "-h", "db", "-uroot", "-pS3cr3tPw", "orders"],
            "ssh": ["sshpass", "-p", 471108, "ssh", {"host": "h"}, "uptime"],
            "login": ["docker", "login", "-u", "bob", "-p", "Xk9mQ2vL7p", "registry"],
            "nested": [["app", "--client-secret", "cs9fT2kLm7Qx"], "--password"],
            "spaced": ["app", "--passphrase", "Pw99 horse battery", "-v"],
            // Not credentials: names of fields, other options, a prompt, a port.
            "fields": ["username", "password", "email1"],
            "run": ["docker", "run", "-u", "1000:1000", "-p", "8080:80", "img"],
            "prompt": ["mysql", "-u", "root", "-p", "orders"],
            "lone": ["--password"],
            "numbers": [3306, 4711, "-p"],
        });
        let r = e.scrub_json(&run, ViolationLocation::ToolArgs, None, &mut v, true);
        assert!(r.changed);
        assert_eq!(
            v,
            json!({
                "cmd": ["mysql", "-h", "db", "-uroot", "-p[REDACTED_SECRET]", "orders"],
                "ssh": ["sshpass", "-p", "[REDACTED_SECRET]", "ssh", {"host": "h"}, "uptime"],
                "login": ["docker", "login", "-u", "bob", "-p", "[REDACTED_SECRET]", "registry"],
                "nested": [["app", "--client-secret", "[REDACTED_SECRET]"], "--password"],
                "spaced": ["app", "--passphrase", "[REDACTED_SECRET]", "-v"],
                "fields": ["username", "password", "email1"],
                "run": ["docker", "run", "-u", "1000:1000", "-p", "8080:80", "img"],
                "prompt": ["mysql", "-u", "root", "-p", "orders"],
                "lone": ["--password"],
                "numbers": [3306, 4711, "-p"],
            })
        );
        assert_eq!(r.violations.len(), 5);
        assert!(r.violations.iter().all(|v| v.rule == "pii_secret"));
        // Found by an attack review: an item's `;`, `&` or `|` (read as ending the command's
        // line), hundreds of items before the password (each item's quotes used up the
        // line's 2 KiB), a header split across items, a quote inside the password (half of
        // it left).
        let many = std::iter::once("curl")
            .chain(std::iter::repeat_n("-k", 450))
            .chain(["-u", "bob:S3cr3tPw"]);
        for mut v in [
            json!(["curl", "-d", "a=1&b=2", "-u", "bob:S3cr3tPw", "https://h"]),
            json!(["curl", "-G", "https://h/?a=1&b=2", "-u", "bob:S3cr3tPw"]),
            json!(["curl", "-H", "Accept: a|b", "-u", "bob:S3cr3tPw"]),
            json!(["sshpass", "-o", "a;b", "-p", "S3cr3tPw", "ssh"]),
            json!(["mysql", "-e", "select 1;", "-pS3cr3tPw"]),
            json!(["mysql", "-e", "select 1; select 2", "-uroot", "-pS3cr3tPw"]),
            json!(["mysql", "-D", "db", "--execute=show tables;", "-pS3cr3tPw"]),
            json!(["mysql", "-e", "select \"a\"; x", "-pS3cr3tPw"]),
            json!(many.collect::<Vec<_>>()),
            json!(["curl", "-H", "X-API-Key:", "S3cr3tPw9Abc", "https://h"]),
            json!(["curl", "-H", "Authorization:", "Token S3cr3tPw90abcdef"]),
            json!(["sshpass", "-p", "S3cr\"3tPw", "ssh", "h"]),
            json!(["curl", "-u", "bob:S3cr\"3tPw", "h"]),
            json!(["app", "--password", "S3cr\"3tPw"]),
            json!(["app", "--password", "S3cr'3tPw"]),
            // Tools added since: an LDAP tool, an archiver (its `-p` glued to the password),
            // PowerShell's secure string as one item.
            json!(["ldapsearch", "-x", "-w", "S3cr3tPw", "-b", "dc=x"]),
            json!(["7z", "a", "-pS3cr3tPw", "o.7z", "dir"]),
            json!([
                "pwsh",
                "-c",
                "ConvertTo-SecureString 'S3cr3tPw' -AsPlainText"
            ]),
        ] {
            let before = v.to_string();
            let r = e.scrub_json(&run, ViolationLocation::ToolArgs, None, &mut v, true);
            let after = v.to_string();
            assert!(
                r.changed && !after.contains("S3cr") && !after.contains("3tPw"),
                "{before} -> {after}"
            );
        }
        // Under BLOCK, the call is refused; with secrets allowed, nothing is touched.
        let e = engine(&[("pii_secret", GuardrailAction::Block)]);
        let mut v = json!(["sshpass", "-p", "S3cr3tPw", "ssh", "h"]);
        let r = e.scrub_json(&run, ViolationLocation::ToolArgs, None, &mut v, true);
        assert!(r.blocked.is_some());
        assert_eq!(v, json!(["sshpass", "-p", "[REDACTED_SECRET]", "ssh", "h"]));
        let e = engine(&[("pii_secret", GuardrailAction::Allow)]);
        let mut v = json!(["sshpass", "-p", "S3cr3tPw", "ssh", "h"]);
        let r = e.scrub_json(&run, ViolationLocation::ToolArgs, None, &mut v, true);
        assert!(r.violations.is_empty() && !r.changed);
    }

    #[test]
    fn apply_skips_overlaps_and_keeps_the_rest() {
        let text = "abcdefgh";
        assert_eq!(
            apply(text, vec![(1, 3, "X"), (2, 5, "Y"), (6, 7, "Z")]),
            "aXfZh"
        );
    }

    #[test]
    fn scrub_json_rewrites_block_and_redact_in_one_visit_and_reports_the_block() {
        let e = engine(&[
            ("pii_email", GuardrailAction::Redact),
            ("pii_ssn", GuardrailAction::Block),
        ]);
        let run = RunId::new("r");
        let mut v = json!({"to": ["a@example.com"], "ssn": "123-45-6789", "n": 3});
        let r = e.scrub_json(&run, ViolationLocation::ToolArgs, Some("t"), &mut v, true);
        assert!(r.changed);
        assert_eq!(
            r.blocked.as_deref(),
            Some("US social security number detected")
        );
        assert_eq!(
            v,
            json!({"to": ["[REDACTED_EMAIL]"], "ssn": "[REDACTED_SSN]", "n": 3})
        );
        assert_eq!(e.store.for_run(&run).len(), 2);
        let mut clean = json!({"q": "weather"});
        let r = e.scrub_json(&run, ViolationLocation::ToolArgs, None, &mut clean, true);
        assert!(!r.changed && r.blocked.is_none());
    }

    /// A text that still uncovers entities after the last pass becomes one placeholder.
    #[test]
    fn settling_that_runs_out_of_passes_fails_closed() {
        let chain = crate::pii::tests::FOUR_PASS_CHAIN;
        let run = RunId::new("r");
        let settle = |passes: usize| {
            let mut e = Engine::new(
                GuardrailConfig::default().with_default_action(GuardrailAction::Redact),
            )
            .unwrap();
            e.passes = passes;
            let first = e.judge(chain, false);
            let text = apply(chain, first.replace);
            let mut blocked = None;
            let out = e.settle_blocking(
                &run,
                ViolationLocation::ToolResult,
                None,
                text,
                &mut blocked,
            );
            assert!(blocked.is_none());
            (e, out)
        };
        let (e, settled) = settle(crate::MAX_REDACTION_PASSES);
        assert!(
            settled.contains("[REDACTED_SECRET]") && settled.contains(' '),
            "{settled}"
        );
        assert!(e.judge(&settled, false).replace.is_empty());
        assert_eq!(settle(2).1, REDACTED_CONTENT);
    }
}
