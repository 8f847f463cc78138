//! The tool gate: allow or deny tools by name and by a predicate over their arguments —
//! deterministic code a model cannot argue with.

use std::fmt;
use std::sync::Arc;

use serde_json::Value;

type Predicate = dyn Fn(&Value) -> bool + Send + Sync;

#[derive(Clone)]
enum Rule {
    Allow(String),
    Deny(String, String),
    DenyIf(Option<String>, Arc<Predicate>, String),
}

/// Deterministic tool rules, checked before any model-facing logic.
///
/// - `deny(name, reason)`: the tool never runs;
/// - `deny_if(name, predicate, reason)`: it does not run when the predicate holds for its
///   arguments (`deny_any_if` for every tool);
/// - `allow(name)`: once any tool is allowed, only allowed tools run.
///
/// ```
/// use hooks_guardrails::ToolGate;
/// let gate = ToolGate::new()
///     .allow("read_file")
///     .allow("transfer")
///     .deny_if("transfer", |args| args["amount"].as_f64().unwrap_or(f64::MAX) > 1000.0,
///              "transfers above 1000 need a human");
/// assert_eq!(gate.check("transfer", &serde_json::json!({"amount": 5000})).as_deref(),
///            Some("transfers above 1000 need a human"));
/// assert_eq!(gate.check("transfer", &serde_json::json!({"amount": 10})), None);
/// assert!(gate.check("shell", &serde_json::json!({})).is_some());
/// ```
#[derive(Clone, Default)]
pub struct ToolGate {
    rules: Vec<Rule>,
}

impl fmt::Debug for ToolGate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let rules: Vec<String> = self
            .rules
            .iter()
            .map(|r| match r {
                Rule::Allow(n) => format!("allow {n}"),
                Rule::Deny(n, _) => format!("deny {n}"),
                Rule::DenyIf(Some(n), _, _) => format!("deny {n} if …"),
                Rule::DenyIf(None, _, _) => "deny any if …".to_owned(),
            })
            .collect();
        f.debug_struct("ToolGate").field("rules", &rules).finish()
    }
}

impl ToolGate {
    /// A gate that lets everything through.
    pub fn new() -> Self {
        Self::default()
    }

    /// Allows `tool`; once any tool is allowed, the others are denied.
    #[must_use]
    pub fn allow(mut self, tool: impl Into<String>) -> Self {
        self.rules.push(Rule::Allow(tool.into()));
        self
    }

    /// Denies `tool` with `reason`.
    #[must_use]
    pub fn deny(mut self, tool: impl Into<String>, reason: impl Into<String>) -> Self {
        self.rules.push(Rule::Deny(tool.into(), reason.into()));
        self
    }

    /// Denies `tool` with `reason` when `predicate` holds for its arguments.
    #[must_use]
    pub fn deny_if(
        mut self,
        tool: impl Into<String>,
        predicate: impl Fn(&Value) -> bool + Send + Sync + 'static,
        reason: impl Into<String>,
    ) -> Self {
        self.rules.push(Rule::DenyIf(
            Some(tool.into()),
            Arc::new(predicate),
            reason.into(),
        ));
        self
    }

    /// Denies any tool with `reason` when `predicate` holds for its arguments.
    #[must_use]
    pub fn deny_any_if(
        mut self,
        predicate: impl Fn(&Value) -> bool + Send + Sync + 'static,
        reason: impl Into<String>,
    ) -> Self {
        self.rules
            .push(Rule::DenyIf(None, Arc::new(predicate), reason.into()));
        self
    }

    /// True when the gate has no rules.
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// The reason `tool` may not run with `arguments`, or `None` when it may.
    pub fn check(&self, tool: &str, arguments: &Value) -> Option<String> {
        for rule in &self.rules {
            match rule {
                Rule::Deny(n, reason) if n == tool => return Some(reason.clone()),
                Rule::DenyIf(n, pred, reason)
                    if n.as_deref().is_none_or(|n| n == tool) && pred(arguments) =>
                {
                    return Some(reason.clone());
                }
                _ => {}
            }
        }
        let allow_list = self.rules.iter().any(|r| matches!(r, Rule::Allow(_)));
        if allow_list
            && !self
                .rules
                .iter()
                .any(|r| matches!(r, Rule::Allow(n) if n == tool))
        {
            return Some(format!(
                "Tool '{}' is not allowed by the tool gate",
                hooks_core::text::preview(tool, 64)
            ));
        }
        None
    }
}
