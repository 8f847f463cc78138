//! `GuardrailsHook`: where the guard looks (the prompt, tool names and arguments, tool results,
//! model replies) and what it does there; the judging itself is the [`Engine`]'s.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::fmt;
use std::hash::{BuildHasher, Hash, Hasher, RandomState};
use std::sync::Arc;

use hooks_core::text::{preview, truncate_chars};
use hooks_core::{
    AfterInvocationEvent, AfterModelCallEvent, AfterToolCallEvent, BeforeInvocationEvent,
    BeforeModelCallEvent, BeforeToolCallEvent, FinishReason, HookError, HookEvent, HookPriority,
    HookProvider, HookSet, Message, ModelResponse, Role, RunId, RunLocal, ToolCall, async_trait,
};
use serde_json::Value;

use crate::config::{GuardrailAction, GuardrailConfig};
use crate::engine::{Engine, Finding, REDACTED_CONTENT, Scrubbed, apply};
use crate::error::Result;
use crate::pii::PiiDetector;
use crate::violation::{GuardrailViolation, ViolationLocation};

/// Prompts, tool arguments, tool results and model replies larger than this (in bytes) are
/// scanned off the executor with
/// [`hooks_core::offload`], so a long scan neither stalls the thread's other tasks nor escapes
/// the registry's per-hook deadline.
pub const OFFLOAD_BYTES: usize = 64 * 1024;

/// The most flagged tool calls one run may have pending; past it the reply is refused (fail
/// closed) rather than a flag dropped.
const MAX_FLAGGED_PER_RUN: usize = 1_024;

/// The guard: checks the prompt, tool names, the tool gate and tool arguments on the way in,
/// and tool results and model replies on the way out.
///
/// One provider, one line: `registry.add(GuardrailsHook::new(config)?)`. It runs first on
/// both sides: at its configured priority (security band) on the before-events, and at
/// [`HookPriority::OUTPUT_GUARD`] on the after-events (which run in reverse order), so no other
/// provider — observability included — sees what it redacts. Add an `Arc` of it
/// (`registry.add(Arc::clone(&guard))`) to keep a handle for reading the violations.
///
/// "First" holds against every provider at a different priority. Against a tie, order
/// decides: register the guard before any provider at its own before-priority, and give no
/// other provider `OUTPUT_GUARD` on an after-event (the registry warns if one does: of two
/// there, the later-registered runs first).
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
/// "The prompt" is every message of the conversation the run starts with, and — before each
/// model call — every message of the request the guard has not judged (or written) in this
/// run: a retry's feedback, a message a hook put into the request. They are judged as the
/// prompt is (a BLOCK there refuses the call, and so the run, with the value redacted first);
/// what was judged once is not judged or reported again. A hook that writes into the request
/// at a priority after the guard's is read at the next call — after this one went out — so
/// give a provider that adds content to requests a priority before the guard's. Likewise, a
/// provider that writes into a tool result or a reply after the guard checked it (on the way
/// out every provider runs after the guard) writes past it: observers after that provider,
/// the run's records and a final answer see what it wrote; the model sees it judged, at the
/// next request.
///
/// ```
/// use hooks_core::HookRegistry;
/// use hooks_guardrails::{GuardrailAction, GuardrailConfig, GuardrailsHook};
/// let config = GuardrailConfig::default().with_action("pii_email", GuardrailAction::Redact);
/// let guard = std::sync::Arc::new(GuardrailsHook::new(config).unwrap());
/// let mut registry = HookRegistry::new();
/// registry.add(guard.clone()).unwrap();
/// assert!(guard.violations().is_empty());
/// ```
#[derive(Clone)]
pub struct GuardrailsHook {
    inner: Arc<Engine>,
    /// Tool calls whose arguments the guard found BLOCK-worthy in a model reply (and redacted
    /// in the conversation): cancelled when they come up. Per run, by call id.
    flagged: Arc<RunLocal<HashMap<String, String>>>,
    /// Streamed replies being guarded, per run (see [`HOLD_BACK`](crate::HOLD_BACK)).
    holds: Arc<RunLocal<crate::stream::Hold>>,
    /// The messages the guard has judged (or written) in each run, as keyed fingerprints: a
    /// model call judges only what entered the conversation since — a retry's feedback, a
    /// message another hook added or changed.
    judged: Arc<RunLocal<HashSet<u64>>>,
    /// The fingerprints' key: random per guard, so no message can be made to pass for another.
    key: RandomState,
}

impl fmt::Debug for GuardrailsHook {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GuardrailsHook")
            .field("config", &self.inner.config)
            .finish()
    }
}

impl GuardrailsHook {
    /// The default configuration, to be changed with its `with_*` methods and built with
    /// [`GuardrailConfig::build`].
    ///
    /// ```
    /// use hooks_guardrails::{GuardrailAction, GuardrailsHook};
    /// let guard = GuardrailsHook::builder()
    ///     .with_action("pii_email", GuardrailAction::Redact)
    ///     .with_name("mail-guard")
    ///     .build()?;
    /// # Ok::<(), hooks_guardrails::Error>(())
    /// ```
    pub fn builder() -> GuardrailConfig {
        GuardrailConfig::default()
    }

    /// Builds the guard: compiles every pattern and checks every override.
    ///
    /// # Errors
    /// [`Error::BadPattern`](crate::Error::BadPattern) naming the rule whose pattern does not
    /// compile; [`Error::UnknownRule`](crate::Error::UnknownRule) for an override naming no
    /// rule (with the closest valid name); [`Error::BadName`](crate::Error::BadName),
    /// [`Error::DuplicateRule`](crate::Error::DuplicateRule) for pattern names.
    pub fn new(config: GuardrailConfig) -> Result<Self> {
        Ok(Self {
            inner: Arc::new(Engine::new(config)?),
            flagged: Arc::new(RunLocal::new()),
            holds: Arc::new(RunLocal::new()),
            judged: Arc::new(RunLocal::new()),
            key: RandomState::new(),
        })
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

    /// The PII detector in use: for the configured entities not set to ALLOW (an allowed
    /// entity is not looked for, so it cannot hide another one).
    pub fn detector(&self) -> &PiiDetector {
        &self.inner.detector
    }

    async fn check_input(
        &self,
        e: &mut BeforeInvocationEvent,
    ) -> std::result::Result<(), HookError> {
        let run_id = e.run_id().clone();
        let blocked = |desc: &str| HookError::new(format!("Input blocked by guardrails: {desc}"));
        let size = conversation_size(&e.state().messages);
        let large = size > OFFLOAD_BYTES;
        let (checks, fingerprints) = if large {
            // Large: scanned off the executor, so the deadline and other runs keep moving
            // (and fingerprinted there, as the guard leaves the messages).
            let engine = Arc::clone(&self.inner);
            let mut messages = e.state().messages.clone();
            let resumed = e.resumed();
            let key = self.key.clone();
            let id = run_id.clone();
            hooks_core::offload(move || {
                let checks = judge_messages(&engine, &id, &messages, resumed, &[]);
                checks.apply_to(&mut messages);
                let prints = messages.iter().map(|m| fingerprint(&key, m)).collect();
                (checks, prints)
            })
            .await
        } else {
            let checks =
                judge_messages(&self.inner, &run_id, &e.state().messages, e.resumed(), &[]);
            (checks, Vec::new())
        };
        let InputChecks {
            recorded,
            rewrites,
            calls,
            ids,
            first_block,
        } = checks;
        // The state's metadata travels with it too (to logs, spans and after-hooks).
        let mut first_block = first_block;
        let mut recorded = recorded;
        let mut metadata = None;
        if !e.state().metadata.is_empty() {
            let mut meta = Value::Object(e.state().metadata.clone());
            let mut r =
                self.inner
                    .scrub_json(e.run_id(), ViolationLocation::Input, None, &mut meta, false);
            if let Some(desc) = r.blocked.take() {
                first_block.get_or_insert(desc);
            }
            recorded.append(&mut r.violations);
            if r.changed
                && let Value::Object(map) = meta
            {
                metadata = Some(map);
            }
        }
        if !(recorded.is_empty()
            && rewrites.is_empty()
            && calls.is_empty()
            && ids.is_empty()
            && metadata.is_none())
        {
            let state = e.state_mut();
            InputChecks::apply(rewrites, calls, ids, &mut state.messages);
            if let Some(map) = metadata {
                state.metadata = map;
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
        }
        if first_block.is_none() {
            // What the model calls need not judge again: the messages as the guard left them.
            let prints = if large {
                fingerprints
            } else {
                e.state()
                    .messages
                    .iter()
                    .map(|m| fingerprint(&self.key, m))
                    .collect()
            };
            self.remember(&run_id, prints);
        }
        match first_block {
            Some(desc) => Err(blocked(&desc)),
            None => Ok(()),
        }
    }

    /// Remembers `prints` as judged in the run (when its table is full, nothing is
    /// remembered and the next model call judges every message again).
    fn remember(&self, run_id: &RunId, prints: Vec<u64>) {
        if prints.is_empty() {
            return;
        }
        let _ = self
            .judged
            .with_or_insert(run_id, HashSet::new, |set| set.extend(prints));
    }

    /// Before each model call: judges every message of the request the guard has not judged
    /// (or written) in this run — what entered the conversation without an event of its own,
    /// such as a retry's feedback or a message another hook added or changed — as it judges
    /// the prompt. Redactions stay in the conversation; a BLOCK refuses the call (and the
    /// run), its finding redacted first.
    async fn check_model_input(
        &self,
        e: &mut BeforeModelCallEvent<'_>,
    ) -> std::result::Result<(), HookError> {
        let run_id = e.run_id().clone();
        let check = if conversation_size(e.messages()) > OFFLOAD_BYTES {
            let known = self
                .judged
                .get(&run_id, |set| set.clone())
                .unwrap_or_default();
            let engine = Arc::clone(&self.inner);
            let messages = e.messages().to_vec();
            let key = self.key.clone();
            let id = run_id.clone();
            hooks_core::offload(move || {
                let skip: Vec<bool> = messages
                    .iter()
                    .map(|m| known.contains(&fingerprint(&key, m)))
                    .collect();
                judge_call(&engine, &key, &id, &messages, &skip)
            })
            .await
        } else {
            // The usual case: everything but the newest message was judged already.
            let prints: Vec<u64> = e
                .messages()
                .iter()
                .map(|m| fingerprint(&self.key, m))
                .collect();
            let skip: Vec<bool> = self
                .judged
                .get(&run_id, |set| {
                    prints.iter().map(|p| set.contains(p)).collect()
                })
                .unwrap_or_else(|| vec![false; prints.len()]);
            if skip.iter().all(|&s| s) {
                return Ok(());
            }
            judge_call(&self.inner, &self.key, &run_id, e.messages(), &skip)
        };
        if let Some(messages) = check.messages {
            *e.messages_mut() = messages;
        }
        if check.first_block.is_none() {
            self.remember(&run_id, check.judged);
        }
        match check.first_block {
            Some(desc) => Err(HookError::new(format!(
                "Input blocked by guardrails: {desc}"
            ))),
            None => Ok(()),
        }
    }

    /// Judges a tool call's result (and a failed call's error) on the way out.
    async fn check_result(
        &self,
        e: &mut AfterToolCallEvent<'_>,
    ) -> std::result::Result<(), HookError> {
        if e.outcome().interrupted().is_some() {
            // Nothing happened yet: no result.
            return Ok(());
        }
        // A cancelled call's result is its reason — a judge's guidance, a person's rejection,
        // a hook's message: free text the model sees, so it is guarded like a result.
        let inner = &*self.inner;
        let run_id = e.run_id().clone();
        let tool = e.tool_name().to_owned();
        let loc = ViolationLocation::ToolResult;
        // The error text reaches the run's records, logs and spans, not only the model.
        let mut out = Scrubbed::default();
        e.redact_error(|error| inner.scrub_in_place((&run_id, loc, Some(&tool)), error, &mut out));
        if inner.action("max_tool_result_length") == GuardrailAction::Block
            && let Some((finding, action)) = inner.length(
                e.result(),
                inner.max_result,
                "max_tool_result_length",
                "tool result",
            )
        {
            // Replaced whole for its length: no need to read it.
            let v = inner.report(&run_id, loc, Some(&tool), finding, action);
            e.set_result(format!(
                "Tool result blocked by guardrails: {}",
                v.description
            ));
            return Ok(());
        }
        // Scan first, then cut: a cut could hide half an entity from the scan. A large result
        // is scanned off the executor.
        let verdict = if e.result().len() > OFFLOAD_BYTES {
            let engine = Arc::clone(&self.inner);
            let text = e.result().to_owned();
            hooks_core::offload(move || engine.judge(&text, false)).await
        } else {
            inner.judge(e.result(), false)
        };
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
        let mut text: Cow<'_, str> = if verdict.replace.is_empty() {
            Cow::Borrowed(e.result())
        } else {
            Cow::Owned(inner.settle(
                &run_id,
                loc,
                Some(&tool),
                apply(e.result(), verdict.replace),
            ))
        };
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
                    text = Cow::Owned(cut_outside_placeholders(&text, inner.max_result).to_owned());
                }
                _ => {}
            }
        }
        if let Cow::Owned(t) = text {
            e.set_result(t);
        }
        Ok(())
    }

    async fn check_tool(&self, e: &mut BeforeToolCallEvent<'_>) {
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
        let mut asked: Option<(String, String)> = None;
        // ASK leaves a call for a person only where the run can pause; elsewhere it is BLOCK.
        let may_ask = e.can_pause();
        if let Some((rule, reason)) = name_rule {
            let action = match inner.configured(rule) {
                GuardrailAction::Ask if !may_ask => GuardrailAction::Block,
                a => a,
            };
            if action == GuardrailAction::Ask {
                asked = Some((rule.to_owned(), reason.clone()));
            }
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
        let flagged = self
            .flagged
            .get(&run_id, |calls| calls.remove(e.tool_call_id()))
            .flatten();
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
        // One walk judges each string and rewrites it in place; the arguments are marked as
        // changed only when something was replaced.
        let tool = tool.to_owned();
        let mut blocked = None;
        if larger_than(e.arguments(), OFFLOAD_BYTES) {
            // Large: scanned off the executor, on a copy put back when something changed.
            let engine = Arc::clone(&self.inner);
            let mut args = e.arguments().clone();
            let (r, args) = hooks_core::offload(move || {
                let mut r = Scrubbed {
                    may_ask,
                    ..Scrubbed::default()
                };
                engine.scrub_json_into(
                    &run_id,
                    ViolationLocation::ToolArgs,
                    Some(&tool),
                    &mut args,
                    true,
                    &mut r,
                );
                (r, args)
            })
            .await;
            if r.changed {
                e.set_arguments(args);
            }
            blocked = r.blocked;
            asked = asked.or(r.asked);
        } else {
            e.edit_arguments(|args| {
                let mut r = Scrubbed {
                    may_ask,
                    ..Scrubbed::default()
                };
                inner.scrub_json_into(
                    &run_id,
                    ViolationLocation::ToolArgs,
                    Some(&tool),
                    args,
                    true,
                    &mut r,
                );
                blocked = r.blocked;
                asked = asked.take().or(r.asked);
                r.changed
            });
        }
        if let Some(desc) = blocked {
            e.cancel(format!("Tool call blocked by guardrails: {desc}"));
        } else if let Some((rule, desc)) = asked
            && !e.approved()
        {
            // A person decides; the run pauses (or, where it cannot, the call is cancelled
            // with `REQUIRES APPROVAL`).
            e.interrupt(
                format!("Guardrails: {desc}; a person must approve this call"),
                serde_json::json!({ "rule": rule }),
            );
        }
    }
}

#[async_trait]
impl HookProvider for GuardrailsHook {
    fn name(&self) -> &str {
        self.inner
            .config
            .name
            .as_deref()
            .unwrap_or("GuardrailsHook")
    }

    fn priority(&self) -> HookPriority {
        self.inner.config.priority
    }

    /// Its configured priority on the way in, [`HookPriority::OUTPUT_GUARD`] on the way out,
    /// and first of all on a streamed reply's pieces.
    fn priority_for(&self, event: HookEvent) -> HookPriority {
        if event.is_after() {
            HookPriority::OUTPUT_GUARD
        } else if event == HookEvent::ModelDelta {
            // First on a streamed reply's pieces, before any other provider reads (or
            // rewrites) them.
            HookPriority::new(i32::MIN)
        } else {
            self.priority()
        }
    }

    fn hooks(&self) -> HookSet {
        HookSet::BEFORE_INVOCATION
            | HookSet::BEFORE_MODEL_CALL
            | HookSet::BEFORE_TOOL_CALL
            | HookSet::AFTER_TOOL_CALL
            | HookSet::AFTER_MODEL_CALL
            | HookSet::MODEL_DELTA
            | HookSet::AFTER_INVOCATION
            | HookSet::RUN_ABANDONED
    }

    async fn on_before_invocation(
        &self,
        e: &mut BeforeInvocationEvent,
    ) -> std::result::Result<(), HookError> {
        self.check_input(e).await
    }

    async fn on_before_model_call(
        &self,
        e: &mut BeforeModelCallEvent<'_>,
    ) -> std::result::Result<(), HookError> {
        self.check_model_input(e).await
    }

    async fn on_before_tool_call(
        &self,
        e: &mut BeforeToolCallEvent<'_>,
    ) -> std::result::Result<(), HookError> {
        self.check_tool(e).await;
        Ok(())
    }

    async fn on_after_tool_call(
        &self,
        e: &mut AfterToolCallEvent<'_>,
    ) -> std::result::Result<(), HookError> {
        self.check_result(e).await?;
        // The result joins the conversation as the guard leaves it: judged already — with the
        // call's id, which a hook after the guard's reply check may have changed: remembered
        // only when the guard left that id in a reply of this run.
        if e.outcome().interrupted().is_none() {
            let (key, id, result) = (&self.key, e.tool_call_id(), e.result());
            let _ = self.judged.get(e.run_id(), |set| {
                if set.contains(&id_fingerprint(key, id)) {
                    set.insert(fingerprint_parts(key, Role::Tool, result, Some(id), &[]));
                }
            });
        }
        Ok(())
    }

    /// A piece of a streamed reply: text is released [`HOLD_BACK`](crate::HOLD_BACK) bytes
    /// behind the model, redacted, never inside an entity; tool-call pieces are held (the
    /// call is guarded whole before it runs); a BLOCK stops the release (the whole reply is
    /// then blocked after the call).
    async fn on_model_delta(
        &self,
        e: &mut hooks_core::ModelDeltaEvent<'_>,
    ) -> std::result::Result<(), HookError> {
        if matches!(e.delta(), hooks_core::stream::ModelDelta::ToolCall { .. }) {
            *e.delta_mut() = hooks_core::stream::ModelDelta::Text(String::new());
            return Ok(());
        }
        let call = (e.iteration(), e.attempt());
        let piece = e.delta().text().to_owned();
        let last = e.is_last();
        let engine = &*self.inner;
        let released = self.holds.with(e.run_id(), |hold| {
            if hold.call != call {
                *hold = crate::stream::Hold::new(call);
            }
            hold.take(engine, &piece, last)
        });
        // No room to hold the reply: nothing is released (the consumer gets the reply once
        // it was guarded whole).
        e.set_text(released.unwrap_or_default());
        Ok(())
    }

    async fn on_after_model_call(
        &self,
        e: &mut AfterModelCallEvent<'_>,
    ) -> std::result::Result<(), HookError> {
        self.holds.end(e.run_id());
        let inner = &*self.inner;
        let run_id = e.run_id().clone();
        let loc = ViolationLocation::ModelOutput;
        // A provider's error may echo the request (a 400 quoting the prompt).
        let mut err_out = Scrubbed::default();
        e.redact_error(|error| inner.scrub_in_place((&run_id, loc, None), error, &mut err_out));
        // A large reply (text or tool-call arguments) is judged off the executor, like a large
        // prompt or result.
        let large = e.response().is_some_and(|r| {
            r.message.content.len() > OFFLOAD_BYTES
                || r.message
                    .tool_calls
                    .iter()
                    .any(|c| larger_than(&c.arguments, OFFLOAD_BYTES))
        });
        let mut flagged: Vec<(String, String)> = Vec::new();
        let may_ask = e.can_pause();
        if large {
            let Some(mut response) = e.response().cloned() else {
                return Ok(());
            };
            let engine = Arc::clone(&self.inner);
            let id = run_id.clone();
            let (response, changed, calls) = hooks_core::offload(move || {
                let mut flagged = Vec::new();
                let changed = guard_reply(&engine, &id, &mut response, &mut flagged, may_ask);
                (response, changed, flagged)
            })
            .await;
            flagged = calls;
            e.edit_response(|r| {
                if changed {
                    *r = response;
                }
                changed
            });
        } else {
            e.edit_response(|response| {
                guard_reply(inner, &run_id, response, &mut flagged, may_ask)
            });
        }
        if !flagged.is_empty() {
            // Fail closed: a flag that cannot be kept would let the call run. Bounded per run,
            // and never dropped to make room.
            let held = self
                .flagged
                .with(&run_id, |calls| {
                    if calls.len() + flagged.len() > MAX_FLAGGED_PER_RUN {
                        return false;
                    }
                    calls.extend(flagged);
                    true
                })
                .map_err(|full| {
                    HookError::new(format!(
                        "Response blocked by guardrails: a tool call was flagged but could not be held ({full})"
                    ))
                })?;
            if !held {
                return Err(HookError::new(format!(
                    "Response blocked by guardrails: more than {MAX_FLAGGED_PER_RUN} flagged tool calls are pending in this run"
                )));
            }
        }
        // The reply joins the conversation as the guard leaves it: judged already (and so
        // are its calls' ids, for their results' messages).
        if let Some(r) = e.response() {
            let mut prints = Vec::with_capacity(1 + r.message.tool_calls.len());
            prints.push(fingerprint(&self.key, &r.message));
            prints.extend(
                r.message
                    .tool_calls
                    .iter()
                    .map(|c| id_fingerprint(&self.key, &c.id)),
            );
            self.remember(&run_id, prints);
        }
        Ok(())
    }

    async fn on_after_invocation(
        &self,
        e: &AfterInvocationEvent<'_>,
    ) -> std::result::Result<(), HookError> {
        self.flagged.end(e.run_id());
        self.holds.end(e.run_id());
        self.judged.end(e.run_id());
        Ok(())
    }

    fn on_run_abandoned(&self, run_id: &RunId) {
        self.flagged.end(run_id);
        self.holds.end(run_id);
        self.judged.end(run_id);
    }
}

/// What the input check found in a conversation, to be applied to the state.
struct InputChecks {
    recorded: Vec<GuardrailViolation>,
    rewrites: Vec<(usize, String)>,
    calls: Vec<(usize, Vec<ToolCall>)>,
    ids: Vec<(usize, String)>,
    first_block: Option<String>,
}

impl InputChecks {
    /// Puts what the check changed into `messages` (the conversation it judged).
    fn apply(
        rewrites: Vec<(usize, String)>,
        calls: Vec<(usize, Vec<ToolCall>)>,
        ids: Vec<(usize, String)>,
        messages: &mut [Message],
    ) {
        for (i, t) in rewrites {
            messages[i].content = t;
        }
        for (i, c) in calls {
            messages[i].tool_calls = c;
        }
        for (i, id) in ids {
            messages[i].tool_call_id = Some(id);
        }
    }

    fn apply_to(&self, messages: &mut [Message]) {
        Self::apply(
            self.rewrites.clone(),
            self.calls.clone(),
            self.ids.clone(),
            messages,
        );
    }

    fn changed(&self) -> bool {
        !(self.rewrites.is_empty() && self.calls.is_empty() && self.ids.is_empty())
    }
}

/// What a model call's check found (see [`GuardrailsHook::check_model_input`]).
struct CallCheck {
    /// The request's messages as the guard leaves them, when it changed any.
    messages: Option<Vec<Message>>,
    /// The fingerprints of the messages it judged, as it leaves them.
    judged: Vec<u64>,
    first_block: Option<String>,
}

/// Judges the messages of a model request that `skip` does not mark.
fn judge_call(
    engine: &Engine,
    key: &RandomState,
    run_id: &RunId,
    messages: &[Message],
    skip: &[bool],
) -> CallCheck {
    if skip.iter().all(|&s| s) {
        return CallCheck {
            messages: None,
            judged: Vec::new(),
            first_block: None,
        };
    }
    // What the guard judged (a reply whose calls a person was asked about included) is
    // skipped; anything else is new, and an ASK in it is a BLOCK.
    let checks = judge_messages(engine, run_id, messages, false, skip);
    let changed = checks.changed().then(|| {
        let mut after = messages.to_vec();
        checks.apply_to(&mut after);
        after
    });
    let finals = changed.as_deref().unwrap_or(messages);
    let judged = finals
        .iter()
        .zip(skip)
        .filter(|(_, skipped)| !**skipped)
        .map(|(m, _)| fingerprint(key, m))
        .collect();
    CallCheck {
        messages: changed,
        judged,
        first_block: checks.first_block,
    }
}

/// About the bytes a check of `messages` reads (texts, ids, every tool call), counted up to
/// just past [`OFFLOAD_BYTES`]: enough to decide where the check runs.
fn conversation_size(messages: &[Message]) -> usize {
    let mut n = 0usize;
    for m in messages {
        n += m.content.len() + m.tool_call_id.as_ref().map_or(0, String::len);
        for c in &m.tool_calls {
            n += c.id.len() + c.name.len() + json_size(&c.arguments, OFFLOAD_BYTES);
        }
        if n > OFFLOAD_BYTES {
            break;
        }
    }
    n
}

/// A keyed fingerprint of everything in a message the guard judges: role, text, tool-call id,
/// and each tool call's id, name and arguments.
fn fingerprint(key: &RandomState, m: &Message) -> u64 {
    fingerprint_parts(
        key,
        m.role,
        &m.content,
        m.tool_call_id.as_deref(),
        &m.tool_calls,
    )
}

/// A tool-call id the guard left in a reply (tagged apart from every message's fingerprint).
fn id_fingerprint(key: &RandomState, id: &str) -> u64 {
    key.hash_one(("tool call id", id))
}

/// [`fingerprint`] of a message given by its parts.
fn fingerprint_parts(
    key: &RandomState,
    role: Role,
    content: &str,
    tool_call_id: Option<&str>,
    tool_calls: &[ToolCall],
) -> u64 {
    fn value(v: &Value, h: &mut impl Hasher) {
        match v {
            Value::Null => 0u8.hash(h),
            Value::Bool(b) => (1u8, b).hash(h),
            Value::Number(n) => {
                2u8.hash(h);
                if let Some(u) = n.as_u64() {
                    (0u8, u).hash(h);
                } else if let Some(i) = n.as_i64() {
                    (1u8, i).hash(h);
                } else {
                    (2u8, n.to_string()).hash(h);
                }
            }
            Value::String(s) => (3u8, s).hash(h),
            Value::Array(items) => {
                (4u8, items.len()).hash(h);
                for item in items {
                    value(item, h);
                }
            }
            Value::Object(map) => {
                (5u8, map.len()).hash(h);
                for (k, v) in map {
                    k.hash(h);
                    value(v, h);
                }
            }
        }
    }
    let mut h = key.build_hasher();
    (role, content, tool_call_id, tool_calls.len()).hash(&mut h);
    for c in tool_calls {
        (&c.id, &c.name).hash(&mut h);
        value(&c.arguments, &mut h);
    }
    h.finish()
}

/// Judges every message of a conversation (see [`GuardrailsHook::check_input`]), but those
/// `skip` marks. `resumed`: the run resumes after a pause, so its history holds the calls a
/// person was asked about — an ASK there does not refuse the run (anywhere else ASK is
/// BLOCK).
fn judge_messages(
    inner: &Engine,
    run_id: &RunId,
    messages: &[Message],
    resumed: bool,
    skip: &[bool],
) -> InputChecks {
    let run_id = run_id.clone();
    let loc = ViolationLocation::Input;
    let mut recorded = Vec::new();
    let mut rewrites: Vec<(usize, String)> = Vec::new();
    let mut calls: Vec<(usize, Vec<ToolCall>)> = Vec::new();
    let mut ids: Vec<(usize, String)> = Vec::new();
    // Every message of every role: a run may start from a history (earlier replies, tool
    // calls and results) as well as from a prompt. A BLOCK refuses the run, but what it
    // found is taken out of the state too: after-invocation hooks and the run's failure
    // see the state.
    let mut first_block: Option<String> = None;
    for (i, m) in messages.iter().enumerate() {
        if skip.get(i) == Some(&true) {
            continue;
        }
        let prompt = matches!(m.role, Role::User | Role::System);
        if prompt && inner.action("max_prompt_length") == GuardrailAction::Block {
            // Refused for its length: no need to read it, only to keep it from everyone.
            if let Some((finding, action)) =
                inner.length(&m.content, inner.max_prompt, "max_prompt_length", "prompt")
            {
                let v = inner.report(&run_id, loc, None, finding, action);
                first_block.get_or_insert_with(|| v.description.clone());
                recorded.push(v);
                rewrites.push((i, REDACTED_CONTENT.to_owned()));
                // Its tool calls and id are still judged below.
                scrub_ids_and_calls(
                    inner,
                    &run_id,
                    resumed,
                    i,
                    m,
                    &mut recorded,
                    &mut ids,
                    &mut calls,
                    &mut first_block,
                );
                continue;
            }
        }
        scrub_ids_and_calls(
            inner,
            &run_id,
            resumed,
            i,
            m,
            &mut recorded,
            &mut ids,
            &mut calls,
            &mut first_block,
        );
        let mut out = Scrubbed::default();
        // Scan first, then cut: a cut could hide half an entity from the scan.
        let clean = inner.scrub_text((&run_id, loc, None), None, &m.content, prompt, &mut out);
        let mut text: Cow<'_, str> = match clean {
            Some(t) => Cow::Owned(t),
            None => Cow::Borrowed(&m.content),
        };
        if prompt
            && let Some((finding, action)) =
                inner.length(&text, inner.max_prompt, "max_prompt_length", "prompt")
        {
            let v = inner.report(&run_id, loc, None, finding, action);
            match action {
                GuardrailAction::Block => {
                    first_block.get_or_insert_with(|| v.description.clone());
                }
                GuardrailAction::Redact => {
                    text = Cow::Owned(cut_outside_placeholders(&text, inner.max_prompt).to_owned());
                }
                _ => {}
            }
            recorded.push(v);
        }
        if let Some(desc) = out.blocked.take() {
            first_block.get_or_insert(desc);
        }
        recorded.append(&mut out.violations);
        if let Cow::Owned(t) = text {
            rewrites.push((i, t));
        }
    }
    InputChecks {
        recorded,
        rewrites,
        calls,
        ids,
        first_block,
    }
}

/// Judges a message's tool-call id (a tool result's) and the tool calls it asks for (an
/// assistant's): ids, names and arguments.
#[allow(clippy::too_many_arguments)]
fn scrub_ids_and_calls(
    inner: &Engine,
    run_id: &RunId,
    resumed: bool,
    i: usize,
    m: &Message,
    recorded: &mut Vec<GuardrailViolation>,
    ids: &mut Vec<(usize, String)>,
    calls: &mut Vec<(usize, Vec<ToolCall>)>,
    first_block: &mut Option<String>,
) {
    let loc = ViolationLocation::Input;
    let mut out = Scrubbed::default();
    if let Some(id) = &m.tool_call_id
        && let Some(clean) = inner.scrub_text((run_id, loc, None), None, id, false, &mut out)
    {
        ids.push((i, clean));
    }
    if !m.tool_calls.is_empty() {
        let mut scrubbed = m.tool_calls.clone();
        // A resumed run's history holds the calls a person was asked about: their ASK does
        // not refuse the run. Anywhere else, ASK is BLOCK.
        let mut call_out = Scrubbed {
            may_ask: resumed,
            ..Scrubbed::default()
        };
        for call in &mut scrubbed {
            scrub_call(inner, run_id, loc, call, &mut call_out);
        }
        if call_out.changed {
            calls.push((i, scrubbed));
        }
        out.violations.append(&mut call_out.violations);
        if out.blocked.is_none() {
            out.blocked = call_out.blocked;
        }
    }
    if let Some(desc) = out.blocked.take() {
        first_block.get_or_insert(desc);
    }
    recorded.append(&mut out.violations);
}

/// Judges a model reply in place: its text, every tool call (name, id, arguments), the model's
/// name and an unknown finish reason. Calls to cancel (a BLOCK in their arguments) are added
/// to `flagged` as `(call id, what was found)`. True when anything changed.
fn guard_reply(
    engine: &Engine,
    run_id: &RunId,
    response: &mut ModelResponse,
    flagged: &mut Vec<(String, String)>,
    may_ask: bool,
) -> bool {
    let loc = ViolationLocation::ModelOutput;
    let mut changed = false;
    let verdict = engine.judge(&response.message.content, false);
    let blocked = verdict.blocked.clone();
    for (finding, action) in verdict.violations {
        engine.report(run_id, loc, None, finding, action);
    }
    if let Some(desc) = blocked {
        response.message.content = format!("Response blocked by guardrails: contains {desc}");
        changed = true;
    } else if !verdict.replace.is_empty() {
        let redacted = apply(&response.message.content, verdict.replace);
        // What the redaction freed (an entity glued to another) may be a BLOCK one.
        let mut late = None;
        let settled = engine.settle_blocking(run_id, loc, None, redacted, &mut late);
        response.message.content = match late {
            Some(desc) => format!("Response blocked by guardrails: contains {desc}"),
            None => settled,
        };
        changed = true;
    }
    // Tool-call arguments: whatever fired is taken out of the conversation (BLOCK and
    // REDACT alike); a BLOCK also flags the call, which is then cancelled.
    let mut seen = std::collections::HashSet::new();
    for call in &mut response.message.tool_calls {
        // An ASK is decided before the call runs (it is not flagged here) — in a run that can
        // pause; in one that cannot, it is BLOCK.
        let mut out = Scrubbed {
            may_ask,
            ..Scrubbed::default()
        };
        scrub_call(engine, run_id, loc, call, &mut out);
        if out.changed {
            // A redacted id may now equal another call's: keep each call's own.
            call.id = hooks_core::text::unique(&call.id, |id| seen.contains(id));
        }
        seen.insert(call.id.clone());
        if let Some(desc) = out.blocked {
            flagged.push((call.id.clone(), desc));
        }
        changed |= out.changed;
    }
    // What else a reply carries as text: the model's name, an unknown finish reason.
    let mut out = Scrubbed::default();
    if let Some(model) = &response.model
        && let Some(clean) = engine.scrub_text((run_id, loc, None), None, model, false, &mut out)
    {
        response.model = Some(clean);
    }
    if let FinishReason::Other(reason) = &response.finish_reason
        && let Some(clean) = engine.scrub_text((run_id, loc, None), None, reason, false, &mut out)
    {
        response.finish_reason = FinishReason::Other(clean);
    }
    changed |= out.changed;
    changed
}

/// Scrubs one tool call a model asked for (in a reply or in the history): its name, and its
/// arguments' strings, numbers and keys.
fn scrub_call(
    inner: &Engine,
    run_id: &RunId,
    loc: ViolationLocation,
    call: &mut ToolCall,
    out: &mut Scrubbed,
) {
    if let Some(id) = inner.scrub_text((run_id, loc, None), None, &call.id, false, out) {
        call.id = id;
    }
    if let Some(name) = inner.scrub_text((run_id, loc, None), None, &call.name, false, out) {
        call.name = name;
    }
    let name = call.name.clone();
    inner.scrub_json_into(run_id, loc, Some(&name), &mut call.arguments, false, out);
}

/// True when the strings and keys of `v` add up to more than `limit` bytes (stops counting
/// there: cheap on the usual small arguments, bounded on huge ones).
fn larger_than(v: &Value, limit: usize) -> bool {
    json_size(v, limit) > limit
}

/// About the size of `v` as JSON text (every value, bracket and key counted), read only up
/// to just past `limit`.
fn json_size(v: &Value, limit: usize) -> usize {
    let mut n = 0usize;
    let mut stack = vec![v];
    while let Some(v) = stack.pop() {
        match v {
            Value::String(s) => n += s.len() + 2,
            Value::Array(items) => {
                n += items.len() + 2;
                stack.extend(items);
            }
            Value::Object(map) => {
                n += 2;
                for (k, v) in map {
                    n += k.len() + 3;
                    stack.push(v);
                }
            }
            _ => n += 8,
        }
        if n > limit {
            return n;
        }
    }
    n
}

/// The first `max` characters of `text`, cut before any placeholder the cut would split
/// (`[REDACTED_…]` stays whole or goes whole).
fn cut_outside_placeholders(text: &str, max: usize) -> &str {
    let (kept, _) = truncate_chars(text, max);
    match kept.rfind('[') {
        Some(open) if !kept[open..].contains(']') && text[open..].starts_with("[REDACTED") => {
            &kept[..open]
        }
        _ => kept,
    }
}

#[cfg(test)]
mod tests {
    use super::{
        Message, OFFLOAD_BYTES, ToolCall, conversation_size, cut_outside_placeholders, larger_than,
    };

    #[test]
    fn sizes_count_every_value_so_many_small_ones_go_off_the_executor() {
        // Sixty thousand empty arrays are small each and large together.
        let args = serde_json::json!({ "a": vec![serde_json::json!([]); 60_000] });
        assert!(larger_than(&args, OFFLOAD_BYTES));
        let history: Vec<Message> = (0..40)
            .map(|i| {
                Message::assistant("").with_tool_calls(vec![ToolCall::new(
                    format!("c{i}"),
                    "lookup",
                    serde_json::json!({ "a": vec![serde_json::json!([]); 2_000] }),
                )])
            })
            .collect();
        assert!(conversation_size(&history) > OFFLOAD_BYTES);
        assert!(conversation_size(&[Message::user("hi")]) < 16);
    }

    #[test]
    fn a_cut_never_splits_a_placeholder() {
        let t = "mail [REDACTED_EMAIL] now";
        assert_eq!(cut_outside_placeholders(t, 9), "mail ");
        assert_eq!(cut_outside_placeholders(t, 21), "mail [REDACTED_EMAIL]");
        assert_eq!(cut_outside_placeholders(t, 3), "mai");
        assert_eq!(cut_outside_placeholders("a [b c", 4), "a [b");
    }
}
