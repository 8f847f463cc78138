//! Tool-call events.

use std::borrow::Cow;
use std::fmt;
use std::time::Duration;

use serde_json::{Map, Value};

use super::{ChangeTracker, EventContext, Field, context_getters, tracked};
use crate::state::ToolCall;

/// The text the model sees for a cancel without a reason.
pub const DEFAULT_CANCEL_REASON: &str = "Cancelled by hook";

/// Arguments merged over the model's for the tool's execution only.
///
/// No log, span, record or after-hook ever sees them; `Debug` prints `***`.
///
/// ```
/// let mut s = hooks_core::SecretArguments::default();
/// s.insert("api_key", "hunter2");
/// assert_eq!(format!("{s:?}"), "***");
/// ```
#[derive(Clone, Default, PartialEq)]
pub struct SecretArguments(Map<String, Value>);

impl SecretArguments {
    /// Adds (or replaces) a secret argument.
    pub fn insert(&mut self, key: impl Into<String>, value: impl Into<Value>) {
        self.0.insert(key.into(), value.into());
    }

    /// True when there are none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// How many there are.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Their keys (no allocation when there are none).
    pub fn keys(&self) -> Vec<String> {
        self.0.keys().cloned().collect()
    }

    /// Merges the secrets over `arguments` (an object; anything else is returned unchanged) and
    /// returns what the tool executes with.
    pub fn merged_over(&self, arguments: &Value) -> Value {
        match arguments {
            Value::Object(map) if !self.0.is_empty() => {
                let mut merged = map.clone();
                for (k, v) in &self.0 {
                    merged.insert(k.clone(), v.clone());
                }
                Value::Object(merged)
            }
            other => other.clone(),
        }
    }
}

impl SecretArguments {
    /// The shortest secret string value that [`scrub`](Self::scrub) replaces; shorter values
    /// would garble ordinary text.
    pub const MIN_SCRUB_LEN: usize = 4;

    /// Replaces every secret value found in `text` with `***`, so a tool that echoes its
    /// input (or fails naming it) cannot leak a secret into its result or error.
    ///
    /// Every leaf of every secret counts, at any depth: strings, and numbers as they print.
    /// Each string is also looked for in its JSON-escaped form (a tool that echoes its
    /// arguments as JSON). Longer values go first, so one secret that contains another leaves
    /// no tail behind. Values shorter than [`MIN_SCRUB_LEN`](Self::MIN_SCRUB_LEN) characters
    /// are left alone: they would garble ordinary text.
    ///
    /// ```
    /// let mut s = hooks_core::SecretArguments::default();
    /// s.insert("token", "hunter22");
    /// s.insert("auth", serde_json::json!({"pin": 98765432, "key": "sk-\"q\""}));
    /// assert_eq!(s.scrub("used hunter22".to_owned()), "used ***");
    /// assert_eq!(s.scrub("pin 98765432".to_owned()), "pin ***");
    /// assert_eq!(s.scrub(r#"{"key":"sk-\"q\""}"#.to_owned()), r#"{"key":"***"}"#);
    /// ```
    pub fn scrub(&self, text: String) -> String {
        if self.0.is_empty() {
            return text;
        }
        let mut needles: Vec<String> = Vec::new();
        let mut stack: Vec<&Value> = self.0.values().collect();
        while let Some(v) = stack.pop() {
            match v {
                Value::String(secret) => {
                    let escaped = serde_json::to_string(secret).unwrap_or_default();
                    let escaped = escaped
                        .strip_prefix('"')
                        .and_then(|e| e.strip_suffix('"'))
                        .unwrap_or("");
                    if escaped != secret {
                        needles.push(escaped.to_owned());
                    }
                    needles.push(secret.clone());
                }
                Value::Number(n) => needles.push(n.to_string()),
                Value::Array(items) => stack.extend(items),
                Value::Object(map) => stack.extend(map.values()),
                Value::Bool(_) | Value::Null => {}
            }
        }
        needles.retain(|n| n.chars().count() >= Self::MIN_SCRUB_LEN);
        needles.sort_by_key(|n| std::cmp::Reverse(n.len()));
        needles.dedup();
        let mut text = text;
        for needle in &needles {
            if text.contains(needle.as_str()) {
                text = text.replace(needle.as_str(), "***");
            }
        }
        text
    }
}

impl fmt::Debug for SecretArguments {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

/// How a tool call ended, as the after-tool-call hooks see it: the result the model sees is
/// kept beside it (and may be replaced by a hook).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ToolOutcome {
    /// The tool ran and returned its result.
    Ran,
    /// The tool ran and failed; the model sees `Error: <error>`.
    Failed {
        /// What went wrong.
        error: String,
    },
    /// A hook cancelled the call; the tool did not run and the model sees the reason.
    Cancelled {
        /// Why.
        reason: String,
    },
    /// A hook interrupted the call: it did not run, and waits for a person's decision (the
    /// run pauses; see [`interrupt`](crate::interrupt)). Nothing is recorded for it yet.
    Interrupted {
        /// Why.
        reason: String,
    },
}

impl ToolOutcome {
    /// The error, when the tool failed.
    pub fn error(&self) -> Option<&str> {
        match self {
            ToolOutcome::Failed { error } => Some(error),
            _ => None,
        }
    }

    /// The reason, when a hook cancelled the call.
    pub fn cancelled(&self) -> Option<&str> {
        match self {
            ToolOutcome::Cancelled { reason } => Some(reason),
            _ => None,
        }
    }

    /// True when the tool ran and did not fail.
    pub fn success(&self) -> bool {
        matches!(self, ToolOutcome::Ran)
    }

    /// The reason, when a hook interrupted the call for a person's decision.
    pub fn interrupted(&self) -> Option<&str> {
        match self {
            ToolOutcome::Interrupted { reason } => Some(reason),
            _ => None,
        }
    }
}

/// What the before-tool-call hooks decided: the arguments to run with, the secret ones, and
/// the cancel reason if a hook cancelled.
#[derive(Debug)]
#[non_exhaustive]
pub struct ToolCallParts {
    /// The (possibly rewritten) arguments, without the secret ones.
    pub arguments: Value,
    /// Arguments merged over them for the execution only.
    pub secret_arguments: SecretArguments,
    /// Why the call was cancelled, if it was.
    pub cancelled: Option<String>,
    /// The interrupt request (reason, payload for the person), if a hook made one.
    pub interrupted: Option<(String, Value)>,
}

/// What the after-tool-call hooks left.
#[derive(Debug)]
#[non_exhaustive]
pub struct AfterToolCallParts {
    /// The result the model sees.
    pub result: String,
    /// True when a hook asked for a retry.
    pub retry: bool,
    /// The outcome with its error text redacted, when a hook did that.
    pub redacted: Option<ToolOutcome>,
}

/// Before a tool runs: hooks may rewrite the arguments, add secret arguments, or cancel the call
/// with a reason the model sees. The tool name and call id are read-only.
#[derive(Debug)]
pub struct BeforeToolCallEvent<'a> {
    cx: EventContext<'a>,
    tool_name: &'a str,
    tool_call_id: &'a str,
    arguments: Value,
    secret_arguments: SecretArguments,
    cancel: Option<String>,
    interrupts: Vec<(String, Value)>,
    approval: Option<PersonApproval>,
    tracker: ChangeTracker,
}

/// How a person approved a tool call (see [`BeforeToolCallEvent::approval`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum PersonApproval {
    /// This call, with the arguments the person was shown (or edited).
    ThisCall,
    /// Every call of this tool for the rest of the run: a hook's interrupt is not asked
    /// again, but everything else (a judge's guidance, a guard's block) still applies.
    Tool,
}

impl<'a> BeforeToolCallEvent<'a> {
    /// An event for `call` (its arguments are the starting point) in `cx`.
    ///
    /// ```
    /// use hooks_core::{BeforeToolCallEvent, EventContext, Extensions, RunId, ToolCall};
    /// let (run, ext) = (RunId::new("r1"), Extensions::new());
    /// let call = ToolCall::new("c1", "search", serde_json::json!({"q": "x"}));
    /// let e = BeforeToolCallEvent::new(EventContext::new(&run, &ext), &call);
    /// assert_eq!(e.tool_name(), "search");
    /// ```
    pub fn new(cx: EventContext<'a>, call: &'a ToolCall) -> Self {
        Self::with_arguments(cx, call, call.arguments.clone())
    }

    /// An event for `call` whose starting arguments are `arguments` rather than the call's own
    /// (the loop refused those, say).
    pub fn with_arguments(cx: EventContext<'a>, call: &'a ToolCall, arguments: Value) -> Self {
        Self {
            cx,
            tool_name: &call.name,
            tool_call_id: &call.id,
            arguments,
            secret_arguments: SecretArguments::default(),
            cancel: None,
            interrupts: Vec::new(),
            approval: None,
            tracker: ChangeTracker::default(),
        }
    }

    /// Marks the call as approved by a person (the driver does, on resume): interrupts are
    /// then not asked for again.
    #[must_use]
    pub fn with_person_approval(mut self, approval: PersonApproval) -> Self {
        self.approval = Some(approval);
        self
    }

    /// True when a person approved this call (or its tool, for the rest of the run): an
    /// interrupt now is ignored, so a hook that would only ask may skip its work. A cancel
    /// still applies.
    pub fn approved(&self) -> bool {
        self.approval.is_some()
    }

    /// How a person approved the call, if one did: a hook that would only interrupt may skip
    /// either; a judge that may also cancel should skip only
    /// [`ThisCall`](PersonApproval::ThisCall) (the arguments the person saw).
    pub fn approval(&self) -> Option<PersonApproval> {
        self.approval
    }

    /// The tool's name.
    pub fn tool_name(&self) -> &'a str {
        self.tool_name
    }

    /// The call's id.
    pub fn tool_call_id(&self) -> &'a str {
        self.tool_call_id
    }
    /// The arguments the tool will run with (without the secret ones).
    pub fn arguments(&self) -> &Value {
        &self.arguments
    }

    /// The arguments, writable; marks [`Field::Arguments`].
    pub fn arguments_mut(&mut self) -> &mut Value {
        self.tracker.mark(Field::Arguments);
        &mut self.arguments
    }

    /// Lets `edit` change the arguments in place; marks [`Field::Arguments`] only when it
    /// returns `true` (it changed something), so a hook that inspects and rarely writes is not
    /// reported as a writer. Returns what `edit` returned.
    ///
    /// ```
    /// # use hooks_core::{BeforeToolCallEvent, EventContext, Extensions, RunId, ToolCall};
    /// # let (run, ext) = (RunId::new("r"), Extensions::new());
    /// let call = ToolCall::new("c1", "t", serde_json::json!({"n": 1}));
    /// let mut e = BeforeToolCallEvent::new(EventContext::new(&run, &ext), &call);
    /// assert!(!e.edit_arguments(|args| args.get("x").is_some()));
    /// assert!(e.changes().is_empty());
    /// ```
    pub fn edit_arguments(&mut self, edit: impl FnOnce(&mut Value) -> bool) -> bool {
        let changed = edit(&mut self.arguments);
        if changed {
            self.tracker.mark(Field::Arguments);
        }
        changed
    }

    /// Replaces the arguments; marks [`Field::Arguments`].
    pub fn set_arguments(&mut self, arguments: Value) {
        self.tracker.mark(Field::Arguments);
        self.arguments = arguments;
    }

    /// The secret arguments so far.
    pub fn secret_arguments(&self) -> &SecretArguments {
        &self.secret_arguments
    }

    /// The secret arguments, writable; marks [`Field::SecretArguments`].
    pub fn secret_arguments_mut(&mut self) -> &mut SecretArguments {
        self.tracker.mark(Field::SecretArguments);
        &mut self.secret_arguments
    }

    /// Cancels the call: the tool is not run and the model sees `reason` (or
    /// `Cancelled by hook` when it is blank). Marks [`Field::Cancel`].
    pub fn cancel(&mut self, reason: impl Into<String>) {
        self.tracker.mark(Field::Cancel);
        let reason = reason.into();
        self.cancel = Some(if reason.trim().is_empty() {
            DEFAULT_CANCEL_REASON.to_owned()
        } else {
            reason
        });
    }

    /// Withdraws a cancel made by an earlier hook; marks [`Field::Cancel`].
    pub fn uncancel(&mut self) {
        self.tracker.mark(Field::Cancel);
        self.cancel = None;
    }

    /// The cancel reason, when the call is cancelled.
    pub fn cancelled(&self) -> Option<&str> {
        self.cancel.as_deref()
    }

    /// Interrupts the call for a person's decision: it does not run now; the run pauses
    /// after the other calls of the turn, handing back the reason and `payload` (what the
    /// person needs to decide) in an [`Interruption`](crate::interrupt::Interruption). A
    /// cancel, by any hook, wins over an interrupt; a call a person already approved
    /// ([`approved`](Self::approved)) is not interrupted again. In a run that cannot pause
    /// ([`HookRegistry::run`](crate::HookRegistry::run)) the call is cancelled with
    /// `REQUIRES APPROVAL: <reason>`. Marks [`Field::Interrupt`].
    ///
    /// ```
    /// # use hooks_core::{BeforeToolCallEvent, EventContext, Extensions, RunId, ToolCall};
    /// # let (run, ext) = (RunId::new("r"), Extensions::new());
    /// let call = ToolCall::new("c1", "wire_money", serde_json::json!({"amount": 900}));
    /// let mut e = BeforeToolCallEvent::new(EventContext::new(&run, &ext), &call);
    /// e.interrupt("transfers over 500 need a second person", serde_json::json!({"limit": 500}));
    /// assert_eq!(e.interrupted(), Some("transfers over 500 need a second person"));
    /// ```
    ///
    /// When several hooks interrupt one call, the person sees every reason (joined with
    /// `"; "`) and every payload (as an array).
    pub fn interrupt(&mut self, reason: impl Into<String>, payload: Value) {
        self.tracker.mark(Field::Interrupt);
        let reason = reason.into();
        let reason = if reason.trim().is_empty() {
            "a person must approve this call".to_owned()
        } else {
            reason
        };
        self.interrupts.push((reason, payload));
    }

    /// The first interrupt reason, when a hook interrupted the call.
    pub fn interrupted(&self) -> Option<&str> {
        self.interrupts.first().map(|(r, _)| r.as_str())
    }

    /// What the hooks decided.
    pub fn into_parts(self) -> ToolCallParts {
        ToolCallParts {
            arguments: self.arguments,
            secret_arguments: self.secret_arguments,
            cancelled: self.cancel,
            interrupted: match self.interrupts.len() {
                0 => None,
                1 => self.interrupts.into_iter().next(),
                _ => {
                    let (reasons, payloads): (Vec<String>, Vec<Value>) =
                        self.interrupts.into_iter().unzip();
                    Some((reasons.join("; "), Value::Array(payloads)))
                }
            },
        }
    }
}

tracked!(BeforeToolCallEvent<'_>);
context_getters!(BeforeToolCallEvent<'a>, AfterToolCallEvent<'a>);

/// After a tool ran (or was cancelled): hooks may replace the result the model sees, or ask for
/// a retry (ignored for a cancelled call). Everything else is read-only.
#[derive(Debug)]
pub struct AfterToolCallEvent<'a> {
    cx: EventContext<'a>,
    tool_name: &'a str,
    tool_call_id: &'a str,
    arguments: &'a Value,
    /// Borrowed until a hook redacts the error text.
    outcome: Cow<'a, ToolOutcome>,
    duration: Duration,
    result: String,
    retry: bool,
    tracker: ChangeTracker,
}

impl<'a> AfterToolCallEvent<'a> {
    /// An event for how `call` ended: `arguments` are those it ran with (never the secret
    /// ones), `result` is what the model will see unless a hook replaces it.
    ///
    /// ```
    /// use hooks_core::{AfterToolCallEvent, EventContext, Extensions, RunId, ToolCall, ToolOutcome};
    /// let (run, ext) = (RunId::new("r1"), Extensions::new());
    /// let call = ToolCall::new("c1", "search", serde_json::json!({}));
    /// let failed = ToolOutcome::Failed { error: "backend down".into() };
    /// let e = AfterToolCallEvent::new(EventContext::new(&run, &ext), &call, &call.arguments, &failed, "Error: backend down".into());
    /// assert_eq!(e.error(), Some("backend down"));
    /// assert!(!e.success());
    /// ```
    pub fn new(
        cx: EventContext<'a>,
        call: &'a ToolCall,
        arguments: &'a Value,
        outcome: &'a ToolOutcome,
        result: String,
    ) -> Self {
        Self {
            cx,
            tool_name: &call.name,
            tool_call_id: &call.id,
            arguments,
            outcome: Cow::Borrowed(outcome),
            duration: Duration::ZERO,
            result,
            retry: false,
            tracker: ChangeTracker::default(),
        }
    }

    /// How long the tool ran.
    #[must_use]
    pub fn with_duration(mut self, duration: Duration) -> Self {
        self.duration = duration;
        self
    }

    /// The tool's name.
    pub fn tool_name(&self) -> &'a str {
        self.tool_name
    }

    /// The call's id.
    pub fn tool_call_id(&self) -> &'a str {
        self.tool_call_id
    }

    /// The arguments as executed (without secret arguments).
    pub fn arguments(&self) -> &'a Value {
        self.arguments
    }

    /// How the call ended.
    pub fn outcome(&self) -> &ToolOutcome {
        &self.outcome
    }

    /// The tool's error, when it failed (as redacted so far).
    pub fn error(&self) -> Option<&str> {
        self.outcome.error()
    }

    /// Lets `redact` rewrite the error text of a failed call (a guard taking personal data
    /// out of it): the call stays failed, and what `redact` leaves is what every later hook,
    /// the run's records and the model see. Marks [`Field::Error`] only when it returns `true`
    /// (it changed something). Returns what `redact` returned, or `false` when the call did
    /// not fail.
    pub fn redact_error(&mut self, redact: impl FnOnce(&mut String) -> bool) -> bool {
        if self.outcome.error().is_none() {
            return false;
        }
        let mut text = self.outcome.error().unwrap_or_default().to_owned();
        if !redact(&mut text) {
            return false;
        }
        self.tracker.mark(Field::Error);
        *self.outcome.to_mut() = ToolOutcome::Failed { error: text };
        true
    }

    /// The cancel reason, when a hook cancelled the call (the tool did not run).
    pub fn cancelled(&self) -> Option<&str> {
        self.outcome.cancelled()
    }

    /// True when the tool ran and did not fail.
    pub fn success(&self) -> bool {
        self.outcome.success()
    }

    /// How long the tool ran (zero when cancelled).
    pub fn duration(&self) -> Duration {
        self.duration
    }

    /// The result the model will see.
    pub fn result(&self) -> &str {
        &self.result
    }

    /// The result, writable; marks [`Field::Result`].
    pub fn result_mut(&mut self) -> &mut String {
        self.tracker.mark(Field::Result);
        &mut self.result
    }

    /// Replaces the result; marks [`Field::Result`].
    pub fn set_result(&mut self, result: impl Into<String>) {
        self.tracker.mark(Field::Result);
        self.result = result.into();
    }

    /// Asks the loop to run the call again (bounded; ignored for a cancelled call); marks
    /// [`Field::Retry`].
    pub fn request_retry(&mut self) {
        self.tracker.mark(Field::Retry);
        self.retry = true;
    }

    /// True when some hook asked for a retry.
    pub fn retry_requested(&self) -> bool {
        self.retry
    }

    /// What the hooks left.
    pub fn into_parts(self) -> AfterToolCallParts {
        AfterToolCallParts {
            result: self.result,
            retry: self.retry,
            redacted: match self.outcome {
                Cow::Owned(outcome) => Some(outcome),
                Cow::Borrowed(_) => None,
            },
        }
    }
}

tracked!(AfterToolCallEvent<'_>);
