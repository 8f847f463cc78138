//! Human in the loop: a hook interrupts a tool call, the run pauses with a serialisable
//! [`PausedRun`], and a person's [`Decision`]s resume it — later, in another process, with a
//! new registry of the same providers.
//!
//! - A before-tool-call hook calls [`BeforeToolCallEvent::interrupt`] with a reason and a JSON
//!   payload for the person. The calls of that turn that were not interrupted run; then the
//!   run pauses and [`Agent::start`] / [`HookRegistry::start`] hand back
//!   [`RunOutcome::Interrupted`]: no error, and the after-invocation hooks see a paused run,
//!   not a failed one.
//! - Each [`Interruption`] has a stable id, the tool, the arguments as the hooks left them
//!   (redacted; never the secret ones), the reason, the payload and the provider that asked.
//! - [`Agent::resume`] / [`HookRegistry::resume`] take the paused run and decisions: approve,
//!   approve this tool for the rest of the run, reject with a message the model sees, or edit
//!   the arguments. Approved and edited calls go through the before-tool hooks again
//!   (guardrails still apply, secret arguments are recomputed); a hook's interrupt is not
//!   asked twice for them, but a cancel still wins.
//! - **No replayed approvals:** a decision binds to its interruption's id and to a SHA-256 of
//!   the exact arguments it approved; an approved call whose hooks now leave other arguments
//!   is interrupted again instead of run. A decision for an interruption the paused run does
//!   not hold, or for other arguments, is refused with a typed [`ResumeError`], and a paused
//!   run resumes at most once per [`ResumeLedger`] (by default one per process; give every
//!   process the same persistent ledger to refuse replays across processes).
//! - Decisions for only some interruptions leave the rest pending: the resumed run pauses
//!   again at once with them (same ids).
//! - Runs driven by [`HookRegistry::run`] / [`Agent::run`] cannot pause: there an interrupt
//!   cancels the call with `REQUIRES APPROVAL: <reason>`, so nothing runs unapproved.
//!
//! [`BeforeToolCallEvent::interrupt`]: crate::BeforeToolCallEvent::interrupt
//! [`Agent::start`]: crate::agent::Agent::start
//! [`Agent::resume`]: crate::agent::Agent::resume
//! [`HookRegistry::start`]: crate::HookRegistry::start
//! [`HookRegistry::resume`]: crate::HookRegistry::resume
//! [`HookRegistry::run`]: crate::HookRegistry::run
//! [`Agent::run`]: crate::agent::Agent::run

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::fmt;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::agent::RunOutput;
use crate::error::BoxError;
use crate::state::{AgentState, RunId, ToolCall};

/// The text the model sees for a call interrupted in a run that cannot pause
/// ([`HookRegistry::run`](crate::HookRegistry::run)): `REQUIRES APPROVAL: <reason>`.
pub const REQUIRES_APPROVAL: &str = "REQUIRES APPROVAL";

/// How a pausable run ended: with an answer, or paused for decisions.
#[derive(Debug)]
#[allow(clippy::large_enum_variant)]
pub enum RunOutcome {
    /// The run finished with an answer.
    Completed(RunOutput),
    /// The run paused: tool calls wait for a person's decision.
    Interrupted(PausedRun),
}

impl RunOutcome {
    /// The output, when the run finished.
    pub fn completed(&self) -> Option<&RunOutput> {
        match self {
            RunOutcome::Completed(out) => Some(out),
            RunOutcome::Interrupted(_) => None,
        }
    }

    /// The paused run, when it paused.
    pub fn interrupted(&self) -> Option<&PausedRun> {
        match self {
            RunOutcome::Completed(_) => None,
            RunOutcome::Interrupted(p) => Some(p),
        }
    }

    /// The output, or the paused run as the error.
    ///
    /// # Errors
    /// The [`PausedRun`] when the run paused.
    #[allow(clippy::result_large_err)]
    pub fn into_completed(self) -> Result<RunOutput, PausedRun> {
        match self {
            RunOutcome::Completed(out) => Ok(out),
            RunOutcome::Interrupted(p) => Err(p),
        }
    }
}

/// One tool call waiting for a person's decision.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Interruption {
    /// Stable and unique (`int-<UUIDv7>`): decisions name it.
    pub id: String,
    /// The run.
    pub run_id: RunId,
    /// The tool call.
    pub tool_call_id: String,
    /// The tool.
    pub tool_name: String,
    /// The arguments the call would run with, as the before-tool hooks left them (redacted;
    /// never the secret arguments).
    pub arguments: Value,
    /// SHA-256 (hex) of [`arguments`](Self::arguments) in canonical JSON (keys sorted): what an
    /// approval binds to.
    pub arguments_hash: String,
    /// Why a person must decide.
    pub reason: String,
    /// What the interrupting hook gave the person to decide with.
    pub payload: Value,
    /// The provider that interrupted.
    pub provider: String,
}

/// What a person decided about one [`Interruption`], bound to its id and to the hash of the
/// arguments it was shown.
///
/// ```
/// use hooks_core::interrupt::{Decision, DecisionKind, Interruption};
/// # let interruption: Interruption = serde_json::from_value(serde_json::json!({
/// #   "id": "int-1", "run_id": "r", "tool_call_id": "c1", "tool_name": "wire",
/// #   "arguments": {"amount": 5}, "arguments_hash": "h", "reason": "money", "payload": null,
/// #   "provider": "p"})).unwrap();
/// let d = Decision::approve(&interruption).by("alice@example.com");
/// assert_eq!(d.interruption_id(), "int-1");
/// assert!(matches!(d.kind(), DecisionKind::Approve));
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Decision {
    interruption_id: String,
    arguments_hash: String,
    kind: DecisionKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    by: Option<String>,
}

/// The kinds of [`Decision`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "decision", rename_all = "snake_case")]
#[non_exhaustive]
pub enum DecisionKind {
    /// Run the call with the arguments that were shown.
    Approve,
    /// Run it, and let every later call of the same tool in this run through without asking.
    ApproveAlways,
    /// Do not run it; the model sees `message` as the call's result.
    Reject {
        /// What the model sees.
        message: String,
    },
    /// Run it with these arguments instead (they go through the before-tool hooks again).
    Edit {
        /// The new arguments (a JSON object).
        arguments: Value,
    },
}

impl Decision {
    fn new(i: &Interruption, kind: DecisionKind) -> Self {
        Self {
            interruption_id: i.id.clone(),
            arguments_hash: i.arguments_hash.clone(),
            kind,
            by: None,
        }
    }

    /// Run the call as shown.
    pub fn approve(i: &Interruption) -> Self {
        Self::new(i, DecisionKind::Approve)
    }

    /// Run the call, and every later call of its tool in this run without asking.
    pub fn approve_always(i: &Interruption) -> Self {
        Self::new(i, DecisionKind::ApproveAlways)
    }

    /// Do not run the call; the model sees `message`.
    pub fn reject(i: &Interruption, message: impl Into<String>) -> Self {
        Self::new(
            i,
            DecisionKind::Reject {
                message: message.into(),
            },
        )
    }

    /// Run the call with `arguments` instead.
    pub fn edit(i: &Interruption, arguments: Value) -> Self {
        Self::new(i, DecisionKind::Edit { arguments })
    }

    /// A decision of `kind` for `i`.
    pub fn of_kind(i: &Interruption, kind: DecisionKind) -> Self {
        Self::new(i, kind)
    }

    /// Who decided (for the logs and records).
    #[must_use]
    pub fn by(mut self, who: impl Into<String>) -> Self {
        self.by = Some(who.into());
        self
    }

    /// The interruption it decides.
    pub fn interruption_id(&self) -> &str {
        &self.interruption_id
    }

    /// The hash of the arguments it was made for.
    pub fn arguments_hash(&self) -> &str {
        &self.arguments_hash
    }

    /// What was decided.
    pub fn kind(&self) -> &DecisionKind {
        &self.kind
    }

    /// Who decided, if given.
    pub fn decided_by(&self) -> Option<&str> {
        self.by.as_deref()
    }
}

/// A run paused for decisions: serialise it (serde, JSON), keep it anywhere, and resume it
/// later with [`Agent::resume`](crate::agent::Agent::resume).
///
/// It holds the conversation and counters ([`state`](Self::state)), the pending calls, the
/// tools approved for the rest of the run, and what each provider that opts in
/// ([`HookProvider::save_run_state`](crate::HookProvider::save_run_state)) keeps of the run.
/// Secret arguments are never in it: their hooks compute them again on resume.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PausedRun {
    pause_id: String,
    state: AgentState,
    interruptions: Vec<Interruption>,
    /// The interrupted calls as the model made them (the hooks start from these again).
    pending: Vec<ToolCall>,
    #[serde(default)]
    always_approved: Vec<String>,
    #[serde(default)]
    provider_states: Map<String, Value>,
    /// Runs nested under pending calls (agents run as tools) that paused with them, by call
    /// id: the decision on the call resumes them.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    nested: BTreeMap<String, PausedRun>,
    /// Iterations the run and the runs nested in it used so far (they share one budget).
    #[serde(default)]
    tree_iterations: u32,
    /// HMAC-SHA256 (hex) over everything else, when the run was paused with a resume key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    seal: Option<String>,
}

impl PausedRun {
    pub(crate) fn new(
        state: AgentState,
        interruptions: Vec<Interruption>,
        pending: Vec<ToolCall>,
        always_approved: Vec<String>,
        provider_states: Map<String, Value>,
    ) -> Self {
        Self {
            pause_id: format!("pause-{}", uuid::Uuid::now_v7()),
            state,
            interruptions,
            pending,
            always_approved,
            provider_states,
            nested: BTreeMap::new(),
            tree_iterations: 0,
            seal: None,
        }
    }

    /// With the nested runs that paused under its pending calls.
    pub(crate) fn with_nested(mut self, nested: BTreeMap<String, PausedRun>) -> Self {
        self.nested = nested;
        self
    }

    /// With the iterations the run's tree used so far.
    pub(crate) fn with_tree_iterations(mut self, n: u32) -> Self {
        self.tree_iterations = n;
        self
    }

    /// The runs nested under pending calls that paused with them, by call id (see
    /// [`Agent::as_tool`](crate::agent::Agent::as_tool)).
    pub fn nested(&self) -> &BTreeMap<String, PausedRun> {
        &self.nested
    }

    /// Seals the paused run with `key` (HMAC-SHA256 over its canonical JSON).
    pub(crate) fn sealed(mut self, key: &[u8]) -> Self {
        self.seal = None;
        self.seal = Some(self.mac(key));
        self
    }

    fn mac(&self, key: &[u8]) -> String {
        use hmac::Mac as _;
        let mut value = serde_json::to_value(self).unwrap_or(Value::Null);
        if let Value::Object(map) = &mut value {
            map.remove("seal");
        }
        let mut mac = <hmac::Hmac<sha2::Sha256> as hmac::Mac>::new_from_slice(key)
            .unwrap_or_else(|_| unreachable!("HMAC takes keys of any length"));
        canonical(&value, &mut |bytes| mac.update(bytes));
        hex(&mac.finalize().into_bytes())
    }

    /// With a key: the seal must be there and match (in constant time). Without one: a
    /// sealed run cannot be checked, so it is refused.
    pub(crate) fn verify(&self, key: Option<&[u8]>) -> Result<(), ResumeError> {
        match (key, &self.seal) {
            (None, None) => Ok(()),
            (None, Some(_)) => Err(ResumeError::Tampered(
                "the paused run is sealed, but no resume key is configured to check it; configure the key it was paused with".into(),
            )),
            (Some(_), None) => Err(ResumeError::Tampered(
                "the paused run carries no seal, but a resume key is configured: it was not paused by this agent, or its seal was removed".into(),
            )),
            (Some(key), Some(seal)) => {
                let expected = self.mac(key);
                let same = expected.len() == seal.len()
                    && expected
                        .bytes()
                        .zip(seal.bytes())
                        .fold(0u8, |acc, (a, b)| acc | (a ^ b))
                        == 0;
                if same {
                    Ok(())
                } else {
                    Err(ResumeError::Tampered(
                        "the paused run does not match its seal: it was changed after it paused".into(),
                    ))
                }
            }
        }
    }

    /// True when the paused run carries a seal.
    pub fn is_sealed(&self) -> bool {
        self.seal.is_some()
    }

    /// The run's id (the same after resuming).
    pub fn run_id(&self) -> &RunId {
        &self.state.run_id
    }

    /// This pause's id: what a [`ResumeLedger`] records.
    pub fn pause_id(&self) -> &str {
        &self.pause_id
    }

    /// What waits for a decision.
    pub fn interruptions(&self) -> &[Interruption] {
        &self.interruptions
    }

    /// The run's state when it paused.
    pub fn state(&self) -> &AgentState {
        &self.state
    }

    /// Tools approved for the rest of the run.
    pub fn always_approved(&self) -> &[String] {
        &self.always_approved
    }

    /// What each opted-in provider saved of the run, by provider name.
    pub fn provider_states(&self) -> &Map<String, Value> {
        &self.provider_states
    }

    /// The paused run as JSON.
    ///
    /// # Errors
    /// [`ResumeError::Json`] if it cannot be serialised (a provider saved a map with
    /// non-string keys, say).
    pub fn to_json(&self) -> Result<String, ResumeError> {
        serde_json::to_string(self).map_err(|e| ResumeError::Json(e.to_string()))
    }

    /// A paused run from [`to_json`](Self::to_json)'s output, checked for consistency.
    ///
    /// # Errors
    /// [`ResumeError::Json`] when it is not a paused run; [`ResumeError::Inconsistent`] when
    /// its parts disagree (an interruption without its pending call, say).
    pub fn from_json(json: &str) -> Result<Self, ResumeError> {
        let p: PausedRun =
            serde_json::from_str(json).map_err(|e| ResumeError::Json(e.to_string()))?;
        p.check()?;
        Ok(p)
    }

    /// Every interruption pairs with exactly one pending call (same call id and tool), no
    /// call id repeats, every interruption is of this run and its hash matches its
    /// arguments. Linear in the size of the paused run.
    pub(crate) fn check(&self) -> Result<(), ResumeError> {
        let bad = |what: String| Err(ResumeError::Inconsistent(what));
        if self.pending.len() != self.interruptions.len() {
            return bad("pending calls and interruptions do not pair up".to_owned());
        }
        let mut pending: HashMap<&str, &str> = HashMap::with_capacity(self.pending.len());
        for c in &self.pending {
            if pending.insert(c.id.as_str(), c.name.as_str()).is_some() {
                return bad(format!(
                    "pending call {} appears twice",
                    crate::text::preview(&c.id, 64)
                ));
            }
        }
        let mut ids = HashSet::with_capacity(self.interruptions.len());
        let mut calls = HashSet::with_capacity(self.interruptions.len());
        for i in &self.interruptions {
            if !ids.insert(i.id.as_str()) {
                return bad(format!("interruption {} appears twice", i.id));
            }
            if !calls.insert(i.tool_call_id.as_str()) {
                return bad(format!(
                    "two interruptions for tool call {}",
                    crate::text::preview(&i.tool_call_id, 64)
                ));
            }
            if i.run_id != self.state.run_id {
                return bad(format!("interruption {} belongs to another run", i.id));
            }
            if pending.get(i.tool_call_id.as_str()) != Some(&i.tool_name.as_str()) {
                return bad(format!(
                    "interruption {} has no pending call of its tool",
                    i.id
                ));
            }
            if arguments_hash(&i.arguments) != i.arguments_hash {
                return bad(format!(
                    "interruption {} has arguments that do not match its hash",
                    i.id
                ));
            }
        }
        for (call_id, child) in &self.nested {
            if !pending.contains_key(call_id.as_str()) {
                return bad(format!(
                    "a nested run waits under call {}, which is not pending",
                    crate::text::preview(call_id, 64)
                ));
            }
            if child
                .state
                .parent
                .as_ref()
                .is_none_or(|p| p.run_id != self.state.run_id || p.tool_call_id != *call_id)
            {
                return bad(format!(
                    "the nested run under call {} belongs to another call",
                    crate::text::preview(call_id, 64)
                ));
            }
            child.check()?;
        }
        Ok(())
    }

    /// The parts, each pending call paired with its interruption (by call id; `check` made
    /// sure every one pairs).
    pub(crate) fn into_parts(self) -> PausedParts {
        let mut by_id: HashMap<String, ToolCall> = self
            .pending
            .into_iter()
            .map(|c| (c.id.clone(), c))
            .collect();
        let pending = self
            .interruptions
            .iter()
            .filter_map(|i| by_id.remove(&i.tool_call_id))
            .collect();
        PausedParts {
            pause_id: self.pause_id,
            state: self.state,
            interruptions: self.interruptions,
            pending,
            always_approved: self.always_approved,
            provider_states: self.provider_states,
            nested: self.nested,
            tree_iterations: self.tree_iterations,
        }
    }
}

pub(crate) struct PausedParts {
    pub(crate) pause_id: String,
    pub(crate) state: AgentState,
    pub(crate) interruptions: Vec<Interruption>,
    pub(crate) pending: Vec<ToolCall>,
    pub(crate) always_approved: Vec<String>,
    pub(crate) provider_states: Map<String, Value>,
    pub(crate) nested: BTreeMap<String, PausedRun>,
    pub(crate) tree_iterations: u32,
}

/// A resume was refused; nothing ran.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ResumeError {
    /// A nested run's paused run was resumed on its own (or under another call): it resumes
    /// only inside the run it is nested in.
    #[error("{0}")]
    Nested(String),
    /// An edit for a call whose nested run paused: the person decides on the calls waiting
    /// in the nested run, whose arguments an edit of the parent call would not reach.
    #[error(
        "interruption '{0}' waits on an agent run as a tool: approve or reject what it waits for; its arguments cannot be edited from the calling run"
    )]
    EditNested(String),
    /// The decision names an interruption this paused run does not hold.
    #[error(
        "decision for interruption '{0}', which this paused run does not hold; decide on the run's own interruptions"
    )]
    UnknownInterruption(String),
    /// The decision was made for other arguments than the interruption holds.
    #[error(
        "the decision for interruption '{0}' was made for other arguments; decide again on the interruption as it is now"
    )]
    ArgumentsChanged(String),
    /// Two decisions for one interruption.
    #[error("two decisions for interruption '{0}'; send one per interruption")]
    DuplicateDecision(String),
    /// Edited arguments must be a JSON object.
    #[error("the edited arguments for interruption '{id}' are {kind}, not a JSON object")]
    EditNotObject {
        /// The interruption.
        id: String,
        /// What they were.
        kind: &'static str,
    },
    /// This paused run was resumed before.
    #[error(
        "paused run '{0}' was already resumed; a paused run resumes once (resume the newest pause of the run)"
    )]
    AlreadyResumed(String),
    /// The ledger could not record the resume (so it is refused: fail closed).
    #[error("the resume ledger failed, so the resume is refused: {0}")]
    Ledger(String),
    /// Not a paused run.
    #[error("not a paused run: {0}")]
    Json(String),
    /// The paused run's parts disagree (edited by hand or corrupted).
    #[error("the paused run is inconsistent: {0}")]
    Inconsistent(String),
    /// The paused run's seal is missing or does not match (see
    /// [`AgentBuilder::resume_key`](crate::agent::AgentBuilder::resume_key)).
    #[error("the paused run is refused: {0}")]
    Tampered(String),
    /// Edited arguments nest deeper than the loop accepts.
    #[error(
        "the edited arguments for interruption '{0}' nest deeper than {max} levels; send flatter arguments",
        max = crate::json::MAX_ARGUMENT_DEPTH
    )]
    EditTooDeep(String),
}

/// Records which paused runs were resumed, so none resumes twice.
///
/// The default is [`MemoryLedger::global`] (one per process). Give every process that can
/// resume the same persistent ledger (a database table with a unique key) to refuse a
/// replayed paused run across processes.
pub trait ResumeLedger: Send + Sync {
    /// Records `pause_id`: `Ok(true)` the first time, `Ok(false)` when it was recorded before.
    ///
    /// # Errors
    /// When the ledger cannot record it; the resume is then refused.
    fn claim(&self, pause_id: &str) -> Result<bool, BoxError>;

    /// Forgets a claim of a resume that never started (its before-invocation hooks refused
    /// it), so it can be tried again. Default: keeps it (the paused run cannot be resumed
    /// again: fail closed).
    fn release(&self, _id: &str) {}
}

/// An in-memory [`ResumeLedger`] remembering the newest `capacity` pause ids.
#[derive(Debug)]
pub struct MemoryLedger {
    seen: Mutex<(HashSet<String>, VecDeque<String>)>,
    capacity: usize,
}

impl MemoryLedger {
    /// The default capacity of [`global`](Self::global): 100 000 pause ids.
    pub const DEFAULT_CAPACITY: usize = 100_000;

    /// A ledger remembering the newest `capacity` pause ids (at least one).
    pub fn new(capacity: usize) -> Self {
        Self {
            seen: Mutex::default(),
            capacity: capacity.max(1),
        }
    }

    /// The process's shared ledger, used when a run names none.
    pub fn global() -> Arc<MemoryLedger> {
        static GLOBAL: OnceLock<Arc<MemoryLedger>> = OnceLock::new();
        Arc::clone(GLOBAL.get_or_init(|| Arc::new(MemoryLedger::new(Self::DEFAULT_CAPACITY))))
    }
}

impl ResumeLedger for MemoryLedger {
    fn claim(&self, pause_id: &str) -> Result<bool, BoxError> {
        let mut guard = self.seen.lock().unwrap_or_else(PoisonError::into_inner);
        let (set, order) = &mut *guard;
        if set.contains(pause_id) {
            return Ok(false);
        }
        while order.len() >= self.capacity {
            if let Some(old) = order.pop_front() {
                set.remove(&old);
            }
        }
        set.insert(pause_id.to_owned());
        order.push_back(pause_id.to_owned());
        Ok(true)
    }

    fn release(&self, id: &str) {
        let mut guard = self.seen.lock().unwrap_or_else(PoisonError::into_inner);
        let (set, order) = &mut *guard;
        if set.remove(id) {
            order.retain(|x| x != id);
        }
    }
}

/// SHA-256 (hex) of `value` as canonical JSON: object keys sorted at every level, no
/// whitespace. Two values hash alike exactly when they are equal JSON.
///
/// ```
/// use hooks_core::interrupt::arguments_hash;
/// let a = serde_json::json!({"b": 1, "a": [true, null]});
/// let b: serde_json::Value = serde_json::from_str(r#"{"a":[true,null],"b":1}"#).unwrap();
/// assert_eq!(arguments_hash(&a), arguments_hash(&b));
/// assert_ne!(arguments_hash(&a), arguments_hash(&serde_json::json!({"b": 2, "a": [true, null]})));
/// ```
pub fn arguments_hash(value: &Value) -> String {
    use sha2::Digest as _;
    let mut hasher = sha2::Sha256::new();
    canonical(value, &mut |bytes| hasher.update(bytes));
    hex(&hasher.finalize())
}

/// Writes `value` as canonical JSON, iteratively (no recursion, so depth cannot overflow
/// the stack).
fn canonical(value: &Value, out: &mut impl FnMut(&[u8])) {
    enum Item<'a> {
        Value(&'a Value),
        Raw(&'static str),
        Key(&'a str),
    }
    let mut stack = vec![Item::Value(value)];
    while let Some(item) = stack.pop() {
        match item {
            Item::Raw(s) => out(s.as_bytes()),
            Item::Key(k) => {
                out(Value::String(k.to_owned()).to_string().as_bytes());
                out(b":");
            }
            Item::Value(v) => match v {
                Value::Array(items) => {
                    out(b"[");
                    stack.push(Item::Raw("]"));
                    for (i, item) in items.iter().enumerate().rev() {
                        stack.push(Item::Value(item));
                        if i > 0 {
                            stack.push(Item::Raw(","));
                        }
                    }
                }
                Value::Object(map) => {
                    out(b"{");
                    stack.push(Item::Raw("}"));
                    let mut keys: Vec<&String> = map.keys().collect();
                    keys.sort_unstable();
                    for (i, k) in keys.iter().enumerate().rev() {
                        stack.push(Item::Value(&map[k.as_str()]));
                        stack.push(Item::Key(k));
                        if i > 0 {
                            stack.push(Item::Raw(","));
                        }
                    }
                }
                scalar => out(scalar.to_string().as_bytes()),
            },
        }
    }
}

/// Checks `decisions` against the paused run: each names one of its interruptions, once, for
/// the arguments it holds; edits are objects. Returns them by interruption id.
pub(crate) fn match_decisions(
    interruptions: &[Interruption],
    decisions: Vec<Decision>,
) -> Result<HashMap<String, Decision>, ResumeError> {
    let by_id: HashMap<&str, &Interruption> =
        interruptions.iter().map(|i| (i.id.as_str(), i)).collect();
    let mut decided = HashMap::with_capacity(decisions.len());
    for d in decisions {
        check_decision(by_id.get(d.interruption_id.as_str()).copied(), &d)?;
        let id = d.interruption_id.clone();
        if decided.insert(id.clone(), d).is_some() {
            return Err(ResumeError::DuplicateDecision(id));
        }
    }
    Ok(decided)
}

/// One decision against the interruption it names (if the paused run holds it).
pub(crate) fn check_decision(i: Option<&Interruption>, d: &Decision) -> Result<(), ResumeError> {
    let Some(i) = i.filter(|i| i.id == d.interruption_id) else {
        return Err(ResumeError::UnknownInterruption(
            crate::text::preview(&d.interruption_id, 64).into_owned(),
        ));
    };
    if d.arguments_hash != i.arguments_hash {
        return Err(ResumeError::ArgumentsChanged(i.id.clone()));
    }
    if let DecisionKind::Edit { arguments } = &d.kind {
        if crate::json::nests_deeper_than(arguments, crate::json::MAX_ARGUMENT_DEPTH) {
            return Err(ResumeError::EditTooDeep(i.id.clone()));
        }
        if !arguments.is_object() {
            return Err(ResumeError::EditNotObject {
                id: i.id.clone(),
                kind: crate::json::kind_name(arguments),
            });
        }
    }
    Ok(())
}

fn hex(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push_str(&format!("{b:02x}"));
    }
    out
}

/// Decides interruptions as they come: a person at a UI, a chat bot, a webhook.
///
/// [`Agent::run_with_approver`](crate::agent::Agent::run_with_approver) asks it for each
/// interruption and resumes the run with its decisions. `Ok(None)` (no decision), an error,
/// or a decision for another interruption counts as a rejection: it fails closed.
#[async_trait::async_trait]
pub trait Approver: Send + Sync {
    /// The decision for `interruption`, if there is one.
    ///
    /// # Errors
    /// When it could not ask or get an answer; the call is then rejected.
    async fn decide(&self, interruption: &Interruption) -> Result<Option<Decision>, BoxError>;
}

/// The rejection an [`Approver`] that gave no decision amounts to.
pub(crate) fn fail_closed(i: &Interruption, why: &str) -> Decision {
    Decision::reject(
        i,
        format!("{REQUIRES_APPROVAL}: {} (no approval: {why})", i.reason),
    )
    .by("hooks: fail closed")
}

impl fmt::Display for DecisionKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            DecisionKind::Approve => "approve",
            DecisionKind::ApproveAlways => "approve_always",
            DecisionKind::Reject { .. } => "reject",
            DecisionKind::Edit { .. } => "edit",
        })
    }
}

#[cfg(feature = "rt-tokio")]
mod channel;
#[cfg(feature = "rt-tokio")]
pub use channel::{ApprovalRequest, ChannelApprover};

#[cfg(all(feature = "http", feature = "rt-tokio"))]
mod webhook;
#[cfg(all(feature = "http", feature = "rt-tokio"))]
pub use webhook::WebhookApprover;

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn interruption(args: Value) -> Interruption {
        Interruption {
            id: "int-1".into(),
            run_id: RunId::new("r"),
            tool_call_id: "c1".into(),
            tool_name: "t".into(),
            arguments_hash: arguments_hash(&args),
            arguments: args,
            reason: "why".into(),
            payload: Value::Null,
            provider: "p".into(),
        }
    }

    #[test]
    fn hash_is_canonical_and_sensitive() {
        let a = json!({"z": {"y": [1, 2.5, "x\"y"], "a": null}, "b": false});
        let b: Value =
            serde_json::from_str(r#"{"b":false,"z":{"a":null,"y":[1,2.5,"x\"y"]}}"#).unwrap();
        assert_eq!(arguments_hash(&a), arguments_hash(&b));
        assert_eq!(arguments_hash(&a).len(), 64);
        // A string that looks like the structure is not the structure.
        assert_ne!(
            arguments_hash(&json!({"a": 1})),
            arguments_hash(&json!("{\"a\":1}"))
        );
        assert_ne!(
            arguments_hash(&json!([1, 2])),
            arguments_hash(&json!([2, 1]))
        );
        assert_ne!(
            arguments_hash(&json!({"a": "1"})),
            arguments_hash(&json!({"a": 1}))
        );
        // Deep nesting does not overflow the stack.
        let mut deep = json!(1);
        for _ in 0..100_000 {
            deep = Value::Array(vec![deep]);
        }
        assert_eq!(arguments_hash(&deep).len(), 64);
        crate::json::drop_deep(deep);
    }

    #[test]
    fn decisions_are_matched_strictly() {
        let i = interruption(json!({"amount": 5}));
        let ok = match_decisions(std::slice::from_ref(&i), vec![Decision::approve(&i)]);
        assert_eq!(ok.map(|m| m.len()), Ok(1));
        let other = interruption(json!({"amount": 500}));
        assert_eq!(
            match_decisions(std::slice::from_ref(&i), vec![Decision::approve(&other)]),
            Err(ResumeError::ArgumentsChanged("int-1".into()))
        );
        let mut stranger = i.clone();
        stranger.id = "int-2".into();
        assert_eq!(
            match_decisions(std::slice::from_ref(&i), vec![Decision::approve(&stranger)]),
            Err(ResumeError::UnknownInterruption("int-2".into()))
        );
        assert_eq!(
            match_decisions(
                std::slice::from_ref(&i),
                vec![Decision::approve(&i), Decision::reject(&i, "no")]
            ),
            Err(ResumeError::DuplicateDecision("int-1".into()))
        );
        assert!(matches!(
            match_decisions(
                std::slice::from_ref(&i),
                vec![Decision::edit(&i, json!([1]))]
            ),
            Err(ResumeError::EditNotObject {
                kind: "an array",
                ..
            })
        ));
    }

    #[test]
    fn memory_ledger_claims_once_and_stays_bounded() {
        let l = MemoryLedger::new(2);
        assert!(l.claim("a").unwrap());
        assert!(!l.claim("a").unwrap());
        assert!(l.claim("b").unwrap());
        assert!(l.claim("c").unwrap());
        assert_eq!(l.seen.lock().unwrap().0.len(), 2);
    }

    #[test]
    fn decisions_round_trip_as_json() {
        let i = interruption(json!({}));
        let d = Decision::reject(&i, "not today").by("bob");
        let text = serde_json::to_string(&d).unwrap();
        assert!(text.contains(r#""decision":"reject""#), "{text}");
        let back: Decision = serde_json::from_str(&text).unwrap();
        assert_eq!(back, d);
    }
}
