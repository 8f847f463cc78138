//! `GuardrailsHook` (the input guard) and `GuardrailsOutputHook` (the output sanitizer).

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use hooks_core::text::{char_len, preview, truncate_chars};
use hooks_core::{
    AfterModelCallEvent, AfterToolCallEvent, BeforeInvocationEvent, BeforeToolCallEvent, HookError,
    HookPriority, HookProvider, HookRegistry, HookSet, RegistryError, Role, RunId, async_trait,
};
use regex::Regex;
use serde_json::Value;

use crate::config::{GuardrailAction, GuardrailConfig};
use crate::error::{Error, Result, closest};
use crate::gate::ToolGate;
use crate::pii::{Entity, PiiDetector};
use crate::violation::{GuardrailViolation, Store, ViolationLocation};
use crate::walk;

/// The output sanitizer's priority. After-events run in reverse priority order, so this runs
/// before every provider of a lower number — observability (100–199) included — on tool
/// results and model replies: nobody downstream sees what it redacts.
pub const OUTPUT_PRIORITY: HookPriority = HookPriority::new(1_000);

/// What replaces blocked content under REDACT.
pub const REDACTED_CONTENT: &str = "[REDACTED]";

struct Inner {
    detector: PiiDetector,
    patterns: Vec<(String, Regex)>,
    blocked_tools: HashSet<String>,
    allowed_tools: Option<HashSet<String>>,
    max_prompt: usize,
    max_result: usize,
    actions: HashMap<String, GuardrailAction>,
    default_action: GuardrailAction,
    gate: ToolGate,
    store: Store,
    /// Tool calls whose arguments the output hook found BLOCK-worthy (and redacted in the
    /// conversation): the input guard cancels them when they come up. Keyed by run and call.
    blocked_calls: Mutex<HashMap<(RunId, String), String>>,
    config: GuardrailConfig,
}

/// The most pending blocked calls kept; past it the oldest entries are dropped.
const MAX_BLOCKED_CALLS: usize = 10_000;

/// A finding in one string, before any decision.
struct Finding {
    rule: String,
    description: String,
    entity: Option<Entity>,
    span: (usize, usize),
}

/// What to do with one string.
#[derive(Default)]
struct Verdict {
    /// The first BLOCK, as a description.
    blocked: Option<String>,
    /// Spans to replace, with their replacement, in order.
    replace: Vec<(usize, usize, &'static str)>,
    /// Everything that fired (except ALLOW).
    violations: Vec<(Finding, GuardrailAction)>,
}

impl Inner {
    /// Drops the run's flagged calls (a call flagged in a reply that never ran).
    fn forget_run(&self, run_id: &RunId) {
        let mut calls = self
            .blocked_calls
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if !calls.is_empty() {
            calls.retain(|(r, _), _| r != run_id);
        }
    }

    fn action(&self, rule: &str) -> GuardrailAction {
        self.actions
            .get(rule)
            .copied()
            .unwrap_or(self.default_action)
    }

    fn report(
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
    fn judge(&self, text: &str, content: bool) -> Verdict {
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
            let rule = pii_rule(d.entity);
            let action = self.action(rule);
            if action == GuardrailAction::Allow {
                continue;
            }
            let finding = Finding {
                rule: rule.to_owned(),
                description: format!("{} detected", d.entity.description()),
                entity: Some(d.entity),
                span: (d.start, d.end),
            };
            self.decide(&mut verdict, finding, action, d.entity.placeholder());
        }
        verdict
    }

    /// After a redaction: redacts what it uncovered (an entity its neighbour hid), up to
    /// [`MAX_REDACTION_PASSES`](crate::MAX_REDACTION_PASSES) in all, reporting each find.
    fn settle(
        &self,
        run_id: &RunId,
        loc: ViolationLocation,
        tool: Option<&str>,
        mut text: String,
    ) -> String {
        for _ in 1..crate::MAX_REDACTION_PASSES {
            let v = self.judge(&text, false);
            let redacts = v.replace.clone();
            for (finding, action) in v.violations {
                if action == GuardrailAction::Redact {
                    self.report(run_id, loc, tool, finding, action);
                }
            }
            if redacts.is_empty() {
                break;
            }
            text = apply(&text, redacts);
        }
        text
    }

    /// [`judge`](Self::judge) for a string under a JSON key: PII is looked for in
    /// `"<key>: <text>"` (so `{"ssn": "123456789"}` counts as an SSN), spans stay relative to
    /// the string.
    fn judge_keyed(&self, key: Option<&str>, text: &str, content: bool) -> Verdict {
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
            if verdict
                .violations
                .iter()
                .any(|(f, _)| f.span == finding.span && f.rule == finding.rule)
            {
                continue;
            }
            if action == GuardrailAction::Block {
                verdict
                    .blocked
                    .get_or_insert_with(|| finding.description.clone());
            }
            verdict.violations.push((finding, action));
        }
        for (s, e, with) in keyed.replace {
            let r = (s - offset, e - offset, with);
            if !verdict.replace.contains(&r) {
                verdict.replace.push(r);
            }
        }
        verdict
    }

    fn decide(
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
            GuardrailAction::Warn | GuardrailAction::Allow => {}
        }
        verdict.violations.push((finding, action));
    }

    fn length(
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

fn pii_rule(e: Entity) -> &'static str {
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

/// Applies the replacements (sorted, non-overlapping after filtering) to `text`.
fn apply(text: &str, mut replace: Vec<(usize, usize, &'static str)>) -> String {
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

/// The input guard: checks the prompt, tool names, the tool gate and tool arguments.
///
/// Register it together with its [`output hook`](GuardrailsHook::output_hook) (see
/// [`register`](GuardrailsHook::register)): the output hook redacts tool results and model
/// replies at [`OUTPUT_PRIORITY`], before observability hooks see them.
///
/// | rule | checks | BLOCK means |
/// |---|---|---|
/// | `max_prompt_length` | each prompt message, in characters | the run is refused |
/// | `blocked_<pattern>` | the prompt and every string of the tool arguments | run refused / call cancelled |
/// | `pii_<detector>` | the prompt, arguments, tool results, model replies | refused / cancelled / replaced |
/// | `blocked_tool`, `tool_not_allowed` | the tool's name | the call is cancelled; the model sees why |
/// | `max_tool_result_length` | tool results | the result is replaced |
///
/// The tool gate's rules always cancel.
///
/// ```
/// use hooks_core::HookRegistry;
/// use hooks_guardrails::{GuardrailAction, GuardrailConfig, GuardrailsHook};
/// let config = GuardrailConfig::default().with_action("pii_email", GuardrailAction::Redact);
/// let mut registry = HookRegistry::new();
/// let guard = GuardrailsHook::new(config).unwrap().register(&mut registry).unwrap();
/// assert!(guard.violations().is_empty());
/// ```
#[derive(Clone)]
pub struct GuardrailsHook {
    inner: Arc<Inner>,
}

impl fmt::Debug for GuardrailsHook {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GuardrailsHook")
            .field("config", &self.inner.config)
            .finish()
    }
}

impl GuardrailsHook {
    /// Builds the guard: compiles every pattern and checks every override.
    ///
    /// # Errors
    /// [`Error::BadPattern`] naming the rule whose pattern does not compile;
    /// [`Error::UnknownRule`] for an override naming no rule (with the closest valid name);
    /// [`Error::BadName`], [`Error::DuplicateRule`] for pattern names.
    pub fn new(config: GuardrailConfig) -> Result<Self> {
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
            let re = Regex::new(pattern).map_err(|source| Error::BadPattern {
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
        let inner = Inner {
            detector: PiiDetector::for_entities(&config.pii),
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
            blocked_calls: Mutex::new(HashMap::new()),
            config,
        };
        Ok(Self {
            inner: Arc::new(inner),
        })
    }

    /// The output sanitizer that shares this guard's configuration and records.
    pub fn output_hook(&self) -> GuardrailsOutputHook {
        GuardrailsOutputHook {
            inner: Arc::clone(&self.inner),
        }
    }

    /// Adds the guard and its output hook to `registry`; returns a handle for reading the
    /// violations.
    ///
    /// # Errors
    /// [`RegistryError::AlreadyRegistered`] when either name is taken.
    pub fn register(
        self,
        registry: &mut HookRegistry,
    ) -> Result<Arc<GuardrailsHook>, RegistryError> {
        let me = Arc::new(self);
        registry.add(me.output_hook())?;
        registry.add_arc(me.clone())?;
        Ok(me)
    }

    /// Every recorded violation (the newest `max_violations`).
    pub fn violations(&self) -> Vec<GuardrailViolation> {
        self.inner.store.all()
    }

    /// The recorded violations of one run.
    pub fn violations_for(&self, run_id: &RunId) -> Vec<GuardrailViolation> {
        self.inner.store.for_run(run_id)
    }

    /// Forgets the recorded violations.
    pub fn clear_violations(&self) {
        self.inner.store.clear();
    }

    /// The PII detector in use.
    pub fn detector(&self) -> &PiiDetector {
        &self.inner.detector
    }

    fn check_input(&self, e: &mut BeforeInvocationEvent) -> Result<(), HookError> {
        let inner = &*self.inner;
        let run_id = e.run_id().clone();
        let mut recorded = Vec::new();
        let mut rewrites: Vec<(usize, String)> = Vec::new();
        for (i, m) in e.state().messages.iter().enumerate() {
            if !matches!(m.role, Role::User | Role::System) {
                continue;
            }
            let mut text: Cow<'_, str> = Cow::Borrowed(&m.content);
            if let Some((finding, action)) =
                inner.length(&text, inner.max_prompt, "max_prompt_length", "prompt")
            {
                let v = inner.report(&run_id, ViolationLocation::Input, None, finding, action);
                match action {
                    GuardrailAction::Block => {
                        return Err(HookError::new(format!(
                            "Input blocked by guardrails: {}",
                            v.description
                        )));
                    }
                    GuardrailAction::Redact => {
                        text = Cow::Owned(truncate_chars(&text, inner.max_prompt).0.to_owned());
                    }
                    _ => {}
                }
                recorded.push(v);
            }
            let verdict = inner.judge(&text, true);
            let blocked = verdict.blocked.clone();
            for (finding, action) in verdict.violations {
                recorded.push(inner.report(
                    &run_id,
                    ViolationLocation::Input,
                    None,
                    finding,
                    action,
                ));
            }
            if let Some(desc) = blocked {
                return Err(HookError::new(format!(
                    "Input blocked by guardrails: {desc}"
                )));
            }
            if !verdict.replace.is_empty() {
                text = Cow::Owned(inner.settle(
                    &run_id,
                    ViolationLocation::Input,
                    None,
                    apply(&text, verdict.replace),
                ));
            }
            if let Cow::Owned(t) = text {
                rewrites.push((i, t));
            }
        }
        if recorded.is_empty() && rewrites.is_empty() {
            return Ok(());
        }
        let state = e.state_mut();
        for (i, t) in rewrites {
            state.messages[i].content = t;
        }
        if !recorded.is_empty() {
            let list = state
                .metadata
                .entry("guardrail_violations")
                .or_insert_with(|| Value::Array(Vec::new()));
            if let Value::Array(items) = list {
                items.extend(recorded.iter().filter_map(|v| serde_json::to_value(v).ok()));
            }
        }
        Ok(())
    }

    fn check_tool(&self, e: &mut BeforeToolCallEvent<'_>) {
        let inner = &*self.inner;
        let run_id = e.run_id().clone();
        let tool = e.tool_name();
        let name_rule = if inner.blocked_tools.contains(tool) {
            Some((
                "blocked_tool",
                format!("Tool '{}' is blocked by guardrails", preview(tool, 64)),
            ))
        } else if inner
            .allowed_tools
            .as_ref()
            .is_some_and(|a| !a.contains(tool))
        {
            Some((
                "tool_not_allowed",
                format!("Tool '{}' is not allowed", preview(tool, 64)),
            ))
        } else {
            None
        };
        if let Some((rule, reason)) = name_rule {
            let action = inner.action(rule);
            if action != GuardrailAction::Allow {
                let finding = Finding {
                    rule: rule.to_owned(),
                    description: reason.clone(),
                    entity: None,
                    span: (0, tool.len()),
                };
                inner.report(
                    &run_id,
                    ViolationLocation::ToolArgs,
                    Some(tool),
                    finding,
                    action,
                );
                if action == GuardrailAction::Block {
                    e.cancel(reason);
                    return;
                }
            }
        }
        let flagged = {
            let mut calls = inner
                .blocked_calls
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            if calls.is_empty() {
                None
            } else {
                calls.remove(&(run_id.clone(), e.tool_call_id().to_owned()))
            }
        };
        if let Some(desc) = flagged {
            e.cancel(format!("Tool call blocked by guardrails: {desc}"));
            return;
        }
        if !inner.gate.is_empty()
            && let Some(reason) = inner.gate.check(tool, e.arguments())
        {
            let finding = Finding {
                rule: "tool_gate".to_owned(),
                description: reason.clone(),
                entity: None,
                span: (0, tool.len()),
            };
            inner.report(
                &run_id,
                ViolationLocation::ToolArgs,
                Some(tool),
                finding,
                GuardrailAction::Block,
            );
            e.cancel(reason);
            return;
        }
        // Judge every string first; write only when something is to be redacted.
        let mut verdicts = Vec::new();
        walk::keyed_strings(e.arguments(), |k, s| {
            verdicts.push(inner.judge_keyed(k, s, true))
        });
        let mut blocked = None;
        let mut redact = false;
        for v in &mut verdicts {
            for (finding, action) in v.violations.drain(..) {
                inner.report(
                    &run_id,
                    ViolationLocation::ToolArgs,
                    Some(tool),
                    finding,
                    action,
                );
            }
            if blocked.is_none() {
                blocked = v.blocked.take();
            }
            redact |= !v.replace.is_empty();
        }
        if let Some(desc) = blocked {
            e.cancel(format!("Tool call blocked by guardrails: {desc}"));
            return;
        }
        if redact {
            let mut it = verdicts.into_iter();
            walk::strings_mut(e.arguments_mut(), |s| {
                if let Some(v) = it.next()
                    && !v.replace.is_empty()
                {
                    *s = inner.settle(
                        &run_id,
                        ViolationLocation::ToolArgs,
                        Some(tool),
                        apply(s, v.replace),
                    );
                }
            });
        }
    }
}

#[async_trait]
impl HookProvider for GuardrailsHook {
    fn priority(&self) -> HookPriority {
        self.inner.config.priority
    }

    fn hooks(&self) -> HookSet {
        HookSet::BEFORE_INVOCATION
            | HookSet::BEFORE_TOOL_CALL
            | HookSet::AFTER_INVOCATION
            | HookSet::RUN_ABANDONED
    }

    async fn on_after_invocation(
        &self,
        e: &hooks_core::AfterInvocationEvent<'_>,
    ) -> Result<(), HookError> {
        self.inner.forget_run(e.run_id());
        Ok(())
    }

    fn on_run_abandoned(&self, run_id: &RunId) {
        self.inner.forget_run(run_id);
    }

    async fn on_before_invocation(&self, e: &mut BeforeInvocationEvent) -> Result<(), HookError> {
        self.check_input(e)
    }

    async fn on_before_tool_call(&self, e: &mut BeforeToolCallEvent<'_>) -> Result<(), HookError> {
        self.check_tool(e);
        Ok(())
    }
}

/// The output sanitizer: redacts (or blocks) PII in tool results and model replies, and
/// enforces the tool-result length, at [`OUTPUT_PRIORITY`]. Made by
/// [`GuardrailsHook::output_hook`].
#[derive(Clone)]
pub struct GuardrailsOutputHook {
    inner: Arc<Inner>,
}

impl fmt::Debug for GuardrailsOutputHook {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GuardrailsOutputHook")
            .finish_non_exhaustive()
    }
}

#[async_trait]
impl HookProvider for GuardrailsOutputHook {
    fn priority(&self) -> HookPriority {
        OUTPUT_PRIORITY
    }

    fn hooks(&self) -> HookSet {
        HookSet::AFTER_TOOL_CALL | HookSet::AFTER_MODEL_CALL
    }

    async fn on_after_tool_call(&self, e: &mut AfterToolCallEvent<'_>) -> Result<(), HookError> {
        if e.cancelled().is_some() {
            return Ok(());
        }
        let inner = &*self.inner;
        let run_id = e.run_id().clone();
        let tool = e.tool_name().to_owned();
        let loc = ViolationLocation::ToolResult;
        let mut text: Cow<'_, str> = Cow::Borrowed(e.result());
        let mut changed = false;
        if let Some((finding, action)) = inner.length(
            &text,
            inner.max_result,
            "max_tool_result_length",
            "tool result",
        ) {
            let v = inner.report(&run_id, loc, Some(&tool), finding, action);
            match action {
                GuardrailAction::Block => {
                    let msg = format!("Tool result blocked by guardrails: {}", v.description);
                    e.set_result(msg);
                    return Ok(());
                }
                GuardrailAction::Redact => {
                    text = Cow::Owned(truncate_chars(&text, inner.max_result).0.to_owned());
                    changed = true;
                }
                _ => {}
            }
        }
        let verdict = inner.judge(&text, false);
        let blocked = verdict.blocked.clone();
        for (finding, action) in verdict.violations {
            inner.report(&run_id, loc, Some(&tool), finding, action);
        }
        if let Some(desc) = blocked {
            e.set_result(format!(
                "Tool result blocked by guardrails: contains {desc}"
            ));
            return Ok(());
        }
        if !verdict.replace.is_empty() {
            text =
                Cow::Owned(inner.settle(&run_id, loc, Some(&tool), apply(&text, verdict.replace)));
            changed = true;
        }
        if changed {
            let t = text.into_owned();
            e.set_result(t);
        }
        Ok(())
    }

    async fn on_after_model_call(&self, e: &mut AfterModelCallEvent<'_>) -> Result<(), HookError> {
        let inner = &*self.inner;
        let run_id = e.run_id().clone();
        let loc = ViolationLocation::ModelOutput;
        let Some(response) = e.response() else {
            return Ok(());
        };
        let verdict = inner.judge(&response.message.content, false);
        let mut call_verdicts: Vec<Vec<Verdict>> = Vec::new();
        for call in &response.message.tool_calls {
            let mut vs = Vec::new();
            walk::keyed_strings(&call.arguments, |k, s| {
                vs.push(inner.judge_keyed(k, s, false))
            });
            call_verdicts.push(vs);
        }
        let any = !verdict.violations.is_empty()
            || call_verdicts
                .iter()
                .flatten()
                .any(|v| !v.violations.is_empty());
        if !any {
            return Ok(());
        }
        let blocked = verdict.blocked.clone();
        for (finding, action) in verdict.violations {
            inner.report(&run_id, loc, None, finding, action);
        }
        let Some(response) = e.response_mut() else {
            return Ok(());
        };
        if let Some(desc) = blocked {
            response.message.content = format!("Response blocked by guardrails: contains {desc}");
        } else if !verdict.replace.is_empty() {
            let redacted = apply(&response.message.content, verdict.replace);
            response.message.content = inner.settle(&run_id, loc, None, redacted);
        }
        // Tool-call arguments: whatever fired is taken out of the conversation (BLOCK and
        // REDACT alike); a BLOCK also flags the call, which the input guard then cancels.
        for (call, verdicts) in response.message.tool_calls.iter_mut().zip(call_verdicts) {
            let tool = call.name.clone();
            if let Some(desc) = verdicts.iter().find_map(|v| v.blocked.clone()) {
                let mut calls = inner
                    .blocked_calls
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner);
                if calls.len() >= MAX_BLOCKED_CALLS {
                    calls.clear();
                }
                calls.insert((run_id.clone(), call.id.clone()), desc);
            }
            let mut it = verdicts.into_iter();
            walk::strings_mut(&mut call.arguments, |s| {
                let Some(v) = it.next() else { return };
                let mut spans = Vec::new();
                for (finding, action) in v.violations {
                    if matches!(action, GuardrailAction::Block | GuardrailAction::Redact)
                        && let Some(entity) = finding.entity
                    {
                        spans.push((finding.span.0, finding.span.1, entity.placeholder()));
                    }
                    inner.report(&run_id, loc, Some(&tool), finding, action);
                }
                if !spans.is_empty() {
                    *s = inner.settle(&run_id, loc, Some(&tool), apply(s, spans));
                }
            });
        }
        Ok(())
    }
}
