//! Violations: what fired, where, and what was done — never the matched text.

use std::collections::VecDeque;
use std::fmt;
use std::sync::{Mutex, MutexGuard, PoisonError};

use hooks_core::RunId;
use serde::{Deserialize, Serialize};

use crate::config::GuardrailAction;
use crate::pii::Entity;

/// Where a violation was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ViolationLocation {
    /// The run's input (the prompt).
    Input,
    /// A tool call's arguments.
    ToolArgs,
    /// A tool's result.
    ToolResult,
    /// The model's reply.
    ModelOutput,
}

impl ViolationLocation {
    /// `input`, `tool_args`, `tool_result` or `model_output`.
    pub fn as_str(self) -> &'static str {
        match self {
            ViolationLocation::Input => "input",
            ViolationLocation::ToolArgs => "tool_args",
            ViolationLocation::ToolResult => "tool_result",
            ViolationLocation::ModelOutput => "model_output",
        }
    }
}

impl fmt::Display for ViolationLocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One rule that fired. Holds no raw PII: the entity kind, the location and the byte span of
/// the match inside the string it was found in — never the text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct GuardrailViolation {
    /// The rule's name, e.g. `pii_email`.
    pub rule: String,
    /// What fired, in words (never the matched text).
    pub description: String,
    /// What was done.
    pub action: GuardrailAction,
    /// Where.
    pub location: ViolationLocation,
    /// The PII kind, for PII rules.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entity: Option<Entity>,
    /// The byte span of the match in the string it was found in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub span: Option<(usize, usize)>,
    /// The tool, for tool locations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_name: Option<String>,
    /// The run.
    pub run_id: RunId,
}

/// The recorded violations: bounded, oldest dropped first.
#[derive(Debug)]
pub(crate) struct Store {
    max: usize,
    items: Mutex<VecDeque<GuardrailViolation>>,
}

impl Store {
    pub(crate) fn new(max: usize) -> Self {
        Self {
            max,
            items: Mutex::new(VecDeque::new()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, VecDeque<GuardrailViolation>> {
        self.items.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn push(&self, v: GuardrailViolation) {
        if self.max == 0 {
            return;
        }
        let mut items = self.lock();
        while items.len() >= self.max {
            items.pop_front();
        }
        items.push_back(v);
    }

    pub(crate) fn all(&self) -> Vec<GuardrailViolation> {
        self.lock().iter().cloned().collect()
    }

    pub(crate) fn for_run(&self, run: &RunId) -> Vec<GuardrailViolation> {
        self.lock()
            .iter()
            .filter(|v| &v.run_id == run)
            .cloned()
            .collect()
    }

    pub(crate) fn clear(&self) {
        self.lock().clear();
    }
}
