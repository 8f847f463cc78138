//! Operator hooks from a settings file, in the Claude Code hooks protocol: an operator — not a
//! programmer — lists `command` and `http` handlers for `PreToolUse`, `PostToolUse`,
//! `UserPromptSubmit` and `Stop`, each with a tool-name matcher, and [`CommandHooks`] runs them
//! at those points of every agent run. Existing hook scripts work as they are.
//!
//! ```no_run
//! use std::sync::Arc;
//! use hooks_command::CommandHooks;
//! use hooks_core::HookRegistry;
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let hooks = CommandHooks::from_settings(".claude/settings.json")?;
//! let registry = Arc::new(HookRegistry::new().with(hooks)?);
//! # let _ = registry; Ok(()) }
//! ```
//!
//! The protocol, both ways:
//! - **In:** the event as JSON on the command's stdin (or as the HTTP body): `session_id` (the
//!   run id), `cwd`, `hook_event_name`, and per event `tool_name`, `tool_input`, `tool_use_id`,
//!   `tool_response` (PostToolUse: `content`, `is_error`), `prompt` (UserPromptSubmit),
//!   `stop_hook_active` and `last_assistant_message` (Stop).
//! - **Out:** exit code 0 goes on, reading stdout when it is JSON (`decision` / `reason`,
//!   `hookSpecificOutput.permissionDecision` allow / deny / ask with
//!   `permissionDecisionReason`, `updatedInput`, `additionalContext`, `continue: false` with
//!   `stopReason`); exit code 2 blocks, with stderr as the reason the model sees; any other
//!   code is a non-blocking error, logged. An HTTP handler's 2xx body is read like stdout.
//!
//! **Persistent workers** (our addition): `{"type": "worker", "command": "python3 lint.py"}`
//! starts the process once and sends it each event as a JSON line, `{"id": 7, "event": {…}}`;
//! it answers `{"id": 7, "exit": 0, "output": {…}}` (`exit` and `output` mean what a command's
//! exit code and stdout mean; `stderr` is the reason for `exit: 2`). Requests are multiplexed
//! by id; a worker that dies, breaks the protocol or misses a deadline is killed and started
//! again for the next event. `examples/workers/lint_worker.py` is a reference worker.
//!
//! Every handler has a timeout (default 60 s; on expiry its whole process group is killed),
//! its stdout and stderr are capped at 1 MiB, and event data never reaches a command line.

//!
//! **With guardrails.** [`CommandHooks`] runs at priority 60 by default, just after a guard at
//! 50, so handlers — which send event data out of the process — see it redacted. Two things a
//! handler *adds* are not seen by that guard, because it already ran:
//! - an `updatedInput` rewrite: register a second `GuardrailsHook` (another name) at a
//!   priority after 60 to guard rewritten arguments too;
//! - text a handler adds for the model (prompt context, PostToolUse feedback, Stop reasons):
//!   it is the operator's text, not scanned.
//!
//! **Limits.** A handler that leaves its process group (`setsid`) escapes the group kill;
//! commands inherit the environment, and `$VAR`s in HTTP header values are expanded from it.

mod error;
mod hook;
mod run;
mod settings;
mod worker;

pub use error::{Error, Result};
pub use hook::{CommandHooks, DEFAULT_PRIORITY, HandlerDecision};
pub use run::{MAX_OUTPUT, Verdict};
pub use settings::{
    DEFAULT_TIMEOUT, Handler, HandlerKind, HookEventName, MAX_TIMEOUT, MIN_TIMEOUT, Settings,
};
