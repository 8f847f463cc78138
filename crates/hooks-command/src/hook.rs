//! `CommandHooks`: the settings' handlers at the agent's lifecycle points.

use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use futures_util::future::join_all;
use hooks_core::{
    AfterModelCallEvent, AfterToolCallEvent, BeforeInvocationEvent, BeforeToolCallEvent, HookError,
    HookPriority, HookProvider, HookSet, Message, Role, RunId, async_trait,
};
use serde_json::{Value, json};

use crate::error::Result;
use crate::run::{Reply, Verdict, run};
use crate::settings::{Handler, HandlerKind, HookEventName, Settings};
use crate::worker::Worker;

/// [`CommandHooks`]' default priority: 60, just after a guard at
/// [`HookPriority::SECURITY_DEFAULT`] (50) on the way in. (On the way out, a guard's
/// [`HookPriority::OUTPUT_GUARD`] already runs first.)
pub const DEFAULT_PRIORITY: HookPriority = HookPriority::new(60);

/// The most handler decisions kept for [`CommandHooks::decisions`].
const MAX_DECISIONS: usize = 10_000;

/// One handler's decision, attributed to it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct HandlerDecision {
    /// The run.
    pub run_id: RunId,
    /// The event.
    pub event: HookEventName,
    /// The handler, by its place in the settings (e.g. `hooks.PreToolUse[0].hooks[1]`).
    pub handler: String,
    /// The tool, for tool events.
    pub tool_name: Option<String>,
    /// What it decided (`None`: it had nothing to say, or it failed).
    pub verdict: Verdict,
    /// Its reason, or why it failed.
    pub reason: Option<String>,
    /// True when it failed (could not start, timed out, another exit code, a bad reply).
    pub failed: bool,
}

/// Operator hooks from a settings file, following the Claude Code protocol: each matching
/// handler gets the event as JSON (on stdin, or as an HTTP body) and answers with an exit
/// code and optional JSON.
///
/// | event | when | a denial (exit 2, `decision: block`, `permissionDecision: deny`) | also |
/// |---|---|---|---|
/// | `PreToolUse` | before a tool call | cancels the call; the model sees the reason | `ask` interrupts the call for a person (a run that cannot pause cancels it with `REQUIRES APPROVAL`); `updatedInput` replaces the arguments |
/// | `PostToolUse` | after a tool call | the reason is appended to what the model sees | `additionalContext` appended too |
/// | `UserPromptSubmit` | when a run starts | refuses the run | plain stdout or `additionalContext` is added as context after the prompt |
/// | `Stop` | when the model answers without tool calls | sends it back with the reason as feedback (a bounded retry) | |
///
/// Handlers of one event run in parallel; the most restrictive decision wins (deny > ask >
/// allow), each one recorded with its handler ([`decisions`](Self::decisions)). A handler
/// that fails (another exit code, a timeout — its process group is killed —, a bad reply) is
/// logged and ignored, unless its PreToolUse group says `"fail_closed": true`: then it denies.
/// Event data reaches a command only on its stdin (and `HOOKS_EVENT`, `CLAUDE_PROJECT_DIR` in
/// its environment), never on its command line.
///
/// ```
/// use hooks_command::CommandHooks;
/// let hooks = CommandHooks::from_json(r#"{"hooks": {"PreToolUse": [
///     {"matcher": "Bash", "hooks": [{"type": "command", "command": "exit 0", "timeout": 5}]}
/// ]}}"#).unwrap();
/// assert!(hooks.warnings().is_empty());
/// ```
pub struct CommandHooks {
    settings: Settings,
    cwd: PathBuf,
    http: Option<hooks_core::http::reqwest::Client>,
    priority: HookPriority,
    name: String,
    decisions: Mutex<VecDeque<HandlerDecision>>,
    /// The persistent workers, by handler label.
    workers: HashMap<String, Arc<Worker>>,
}

impl std::fmt::Debug for CommandHooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CommandHooks")
            .field("name", &self.name)
            .field("cwd", &self.cwd)
            .field("handlers", &self.settings.groups.len())
            .finish_non_exhaustive()
    }
}

impl CommandHooks {
    /// Hooks from settings JSON (a settings file's text, or its `hooks` object).
    ///
    /// # Errors
    /// [`Error`](crate::Error) naming the JSON path of anything malformed.
    pub fn from_json(json: &str) -> Result<Self> {
        Ok(Self::new(Settings::parse(json)?))
    }

    /// Hooks from a settings file.
    ///
    /// # Errors
    /// [`Error::Read`](crate::Error::Read) when the file cannot be read; otherwise as for
    /// [`from_json`](Self::from_json).
    pub fn from_settings(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|source| crate::Error::Read {
            path: path.to_owned(),
            source,
        })?;
        Self::from_json(&text)
    }

    /// Hooks for parsed settings. Commands run in the current directory (see
    /// [`with_cwd`](Self::with_cwd)).
    pub fn new(settings: Settings) -> Self {
        for w in settings.warnings() {
            tracing::warn!(target: "hooks::command", "hook settings: {w}");
        }
        let http = hooks_core::http::HttpConfig::new()
            .client_builder()
            .and_then(|b| {
                b.redirect(hooks_core::http::reqwest::redirect::Policy::none())
                    .build()
                    .map_err(|e| hooks_core::http::HttpError::Build(Box::new(e)))
            })
            .map_err(|e| tracing::warn!(target: "hooks::command", "no HTTP client for http handlers: {e}"))
            .ok();
        let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
        let workers = workers(&settings, &cwd);
        Self {
            settings,
            cwd,
            http,
            priority: DEFAULT_PRIORITY,
            name: "CommandHooks".to_owned(),
            decisions: Mutex::default(),
            workers,
        }
    }

    /// The directory commands and workers run in (and `cwd` in their input). Default: the
    /// current one.
    #[must_use]
    pub fn with_cwd(mut self, cwd: impl Into<PathBuf>) -> Self {
        self.cwd = cwd.into();
        self.workers = workers(&self.settings, &self.cwd);
        self
    }

    /// How many times the worker of handler `label` was started (0 before its first event):
    /// more than once means it died or missed a deadline and was restarted.
    pub fn worker_starts(&self, label: &str) -> u64 {
        self.workers
            .get(label)
            .map_or(0, |w| w.starts.load(std::sync::atomic::Ordering::Relaxed))
    }

    /// The priority (default [`DEFAULT_PRIORITY`]: in the security band, after a guard at
    /// [`HookPriority::SECURITY_DEFAULT`] — so handlers, which send event data out of the
    /// process, see it redacted — and before the observability and business providers).
    #[must_use]
    pub fn with_priority(mut self, priority: HookPriority) -> Self {
        self.priority = priority;
        self
    }

    /// The provider's name (default `CommandHooks`), to register two.
    #[must_use]
    pub fn with_name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// What the settings parser ignored.
    pub fn warnings(&self) -> &[String] {
        self.settings.warnings()
    }

    /// Every handler decision so far (the newest 10 000), each attributed to its handler.
    pub fn decisions(&self) -> Vec<HandlerDecision> {
        self.decisions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .cloned()
            .collect()
    }

    /// The matching handlers of `event` (for `tool`), each with its group's fail policy.
    fn matching(&self, event: HookEventName, tool: Option<&str>) -> Vec<(&Handler, bool)> {
        self.settings
            .groups
            .iter()
            .filter(|(e, g)| *e == event && tool.is_none_or(|t| g.matcher.matches(t)))
            .flat_map(|(_, g)| g.handlers.iter().map(move |h| (h, g.fail_closed)))
            .collect()
    }

    /// Runs the matching handlers in parallel and records their decisions.
    async fn dispatch(
        &self,
        run_id: &RunId,
        event: HookEventName,
        tool: Option<&str>,
        mut input: Value,
    ) -> Vec<Reply> {
        let handlers = self.matching(event, tool);
        if handlers.is_empty() {
            return Vec::new();
        }
        if let Value::Object(m) = &mut input {
            m.insert("session_id".into(), json!(run_id.as_str()));
            m.insert("cwd".into(), json!(self.cwd.display().to_string()));
            m.insert("hook_event_name".into(), json!(event.as_str()));
        }
        let replies = join_all(handlers.iter().map(|(h, _)| {
            let worker = self.workers.get(h.label()).map(|w| &**w);
            run(h, event, &input, &self.cwd, self.http.as_ref(), worker)
        }))
        .await;
        let mut out = Vec::with_capacity(replies.len());
        let mut log = self
            .decisions
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        for ((handler, fail_closed), mut reply) in handlers.into_iter().zip(replies) {
            if let Some(err) = &reply.error {
                tracing::warn!(target: "hooks::command", run_id = run_id.as_str(), event = event.as_str(), handler = handler.label(), "hook handler failed: {err}");
                if fail_closed {
                    reply.verdict = Some(Verdict::Deny);
                    reply.reason = Some(format!(
                        "a required hook failed ({}), so the call is refused",
                        handler.label()
                    ));
                }
            }
            let verdict = reply.verdict.unwrap_or(Verdict::None);
            tracing::info!(target: "hooks::command", run_id = run_id.as_str(), event = event.as_str(), handler = handler.label(), tool, verdict = verdict.as_str(), "hook handler decided {}", verdict.as_str());
            while log.len() >= MAX_DECISIONS {
                log.pop_front();
            }
            log.push_back(HandlerDecision {
                run_id: run_id.clone(),
                event,
                handler: handler.label().to_owned(),
                tool_name: tool.map(str::to_owned),
                verdict,
                // Bounded: a hook's stderr may be a megabyte.
                reason: reply
                    .reason
                    .as_deref()
                    .or(reply.error.as_deref())
                    .map(|r| hooks_core::text::preview(r, 1000).into_owned()),
                failed: reply.error.is_some(),
            });
            out.push(reply);
        }
        out
    }
}

/// A worker (not started yet) for every worker handler, by label.
fn workers(settings: &Settings, cwd: &Path) -> HashMap<String, Arc<Worker>> {
    settings
        .groups
        .iter()
        .flat_map(|(_, g)| g.handlers.iter())
        .filter_map(|h| match h.kind() {
            HandlerKind::Worker { command } => Some((
                h.label().to_owned(),
                Arc::new(Worker::new(command.clone(), cwd.to_owned())),
            )),
            _ => None,
        })
        .collect()
}

/// `continue: false` from any handler: the run stops, with its reason.
fn halted(replies: &[Reply]) -> Result<(), HookError> {
    match replies.iter().find_map(|r| r.halt.as_deref()) {
        Some(reason) => Err(HookError::new(format!("Stopped by a hook: {reason}"))),
        None => Ok(()),
    }
}

/// The most restrictive verdict and the reasons given for it.
fn strictest(replies: &[Reply]) -> (Verdict, String) {
    let top = replies
        .iter()
        .filter_map(|r| r.verdict)
        .max()
        .unwrap_or(Verdict::None);
    let reasons: Vec<&str> = replies
        .iter()
        .filter(|r| r.verdict == Some(top))
        .filter_map(|r| r.reason.as_deref())
        .filter(|r| !r.trim().is_empty())
        .collect();
    (top, reasons.join("; "))
}

/// `reason`, or `otherwise` when the handlers gave none.
fn said<'a>(reason: &'a str, otherwise: &'a str) -> &'a str {
    if reason.is_empty() { otherwise } else { reason }
}

/// Additional context the handlers gave, joined.
fn contexts(replies: &[Reply]) -> Option<String> {
    let all: Vec<&str> = replies
        .iter()
        .filter_map(|r| r.context.as_deref())
        .filter(|c| !c.trim().is_empty())
        .collect();
    (!all.is_empty()).then(|| all.join("\n"))
}

#[async_trait]
impl HookProvider for CommandHooks {
    fn name(&self) -> &str {
        &self.name
    }

    fn priority(&self) -> HookPriority {
        self.priority
    }

    fn hooks(&self) -> HookSet {
        let mut set = HookSet::NONE;
        for (event, _) in &self.settings.groups {
            set |= match event {
                HookEventName::PreToolUse => HookSet::BEFORE_TOOL_CALL,
                HookEventName::PostToolUse => HookSet::AFTER_TOOL_CALL,
                HookEventName::UserPromptSubmit => HookSet::BEFORE_INVOCATION,
                HookEventName::Stop => HookSet::AFTER_MODEL_CALL,
            };
        }
        set
    }

    async fn on_before_invocation(&self, e: &mut BeforeInvocationEvent) -> Result<(), HookError> {
        if e.resumed() {
            // The prompt was submitted when the run started, not again on resume.
            return Ok(());
        }
        // The prompt this run submits: the newest one (a run may start from a history).
        let newest = e
            .state()
            .messages
            .iter()
            .rposition(|m| m.role == Role::User && !m.automated);
        let Some(at) = newest else {
            return Ok(());
        };
        let prompt = e.state().messages[at].content.clone();
        let run_id = e.run_id().clone();
        let replies = self
            .dispatch(
                &run_id,
                HookEventName::UserPromptSubmit,
                None,
                json!({"prompt": prompt}),
            )
            .await;
        halted(&replies)?;
        let (verdict, reason) = strictest(&replies);
        if verdict == Verdict::Deny {
            return Err(HookError::new(format!(
                "Prompt blocked by a hook: {}",
                said(&reason, "no reason given")
            )));
        }
        if let Some(context) = contexts(&replies) {
            let state = e.state_mut();
            let at = (at + 1).min(state.messages.len());
            state.messages.insert(at, Message::system(context));
        }
        Ok(())
    }

    async fn on_before_tool_call(&self, e: &mut BeforeToolCallEvent<'_>) -> Result<(), HookError> {
        if e.cancelled().is_some() {
            return Ok(());
        }
        let run_id = e.run_id().clone();
        let tool = e.tool_name().to_owned();
        let input = json!({
            "tool_name": tool,
            "tool_input": e.arguments(),
            "tool_use_id": e.tool_call_id(),
        });
        let replies = self
            .dispatch(&run_id, HookEventName::PreToolUse, Some(&tool), input)
            .await;
        halted(&replies)?;
        let (verdict, reason) = strictest(&replies);
        match verdict {
            Verdict::Deny => e.cancel(if reason.is_empty() {
                "Blocked by a hook".to_owned()
            } else {
                format!("Blocked by a hook: {reason}")
            }),
            Verdict::Ask if !e.approved() => e.interrupt(
                said(&reason, "a hook asks a person to approve this call").to_owned(),
                json!({"source": "hooks-command"}),
            ),
            _ => {
                // The first handler (in settings order) that answered well and rewrote the
                // input to an object wins; a failed handler's rewrite is not applied.
                let rewrite = replies
                    .iter()
                    .filter(|r| r.error.is_none())
                    .filter_map(|r| r.updated_input.as_ref())
                    .find(|v| {
                        let ok = v.is_object();
                        if !ok {
                            tracing::warn!(target: "hooks::command", run_id = run_id.as_str(), "a hook's updatedInput is not a JSON object; ignored");
                        }
                        ok
                    });
                if let Some(updated) = rewrite {
                    e.set_arguments(updated.clone());
                }
            }
        }
        Ok(())
    }

    async fn on_after_tool_call(&self, e: &mut AfterToolCallEvent<'_>) -> Result<(), HookError> {
        if e.cancelled().is_some() || e.outcome().interrupted().is_some() {
            // The tool did not run: nothing to follow up.
            return Ok(());
        }
        let run_id = e.run_id().clone();
        let tool = e.tool_name().to_owned();
        let input = json!({
            "tool_name": tool,
            "tool_input": e.arguments(),
            "tool_use_id": e.tool_call_id(),
            "tool_response": {
                "content": e.result(),
                "is_error": !e.success(),
            },
        });
        let replies = self
            .dispatch(&run_id, HookEventName::PostToolUse, Some(&tool), input)
            .await;
        halted(&replies)?;
        let (verdict, reason) = strictest(&replies);
        let mut extra = Vec::new();
        if verdict == Verdict::Deny {
            extra.push(format!(
                "[PostToolUse hook] {}",
                said(&reason, "flagged this result")
            ));
        }
        if let Some(context) = contexts(&replies) {
            extra.push(context);
        }
        if !extra.is_empty() {
            let result = e.result_mut();
            for x in extra {
                result.push_str("\n\n");
                result.push_str(&x);
            }
        }
        Ok(())
    }

    async fn on_after_model_call(&self, e: &mut AfterModelCallEvent<'_>) -> Result<(), HookError> {
        let Some(answer) = e
            .response()
            .filter(|r| r.message.tool_calls.is_empty())
            .map(|r| r.message.content.clone())
        else {
            return Ok(());
        };
        let run_id = e.run_id().clone();
        let input = json!({
            "stop_hook_active": e.attempt() > 0,
            "last_assistant_message": answer,
        });
        let replies = self
            .dispatch(&run_id, HookEventName::Stop, None, input)
            .await;
        if replies.iter().any(|r| r.halt.is_some()) {
            // "Stop now": the answer stands.
            return Ok(());
        }
        let (verdict, reason) = strictest(&replies);
        if verdict == Verdict::Deny {
            e.request_retry();
            e.set_retry_feedback(
                said(&reason, "A hook asked you to continue before stopping.").to_owned(),
            );
        }
        Ok(())
    }
}
