//! `GuardrailConfig`: what the guardrails check and what they do about it.

use std::fmt;
use std::sync::Arc;

use hooks_core::HookPriority;
use serde::{Deserialize, Serialize};

use crate::gate::ToolGate;
use crate::pii::Entity;
use crate::violation::GuardrailViolation;

/// What a rule does when it fires.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
#[non_exhaustive]
pub enum GuardrailAction {
    /// Refuse: the run (input), the tool call (arguments) or the content (results, replies).
    Block,
    /// Let it through; record and log the violation.
    Warn,
    /// Replace what matched (PII with its placeholder, blocked content with `[REDACTED]`, an
    /// over-long text by its allowed prefix) and go on.
    Redact,
    /// Do nothing, record nothing.
    Allow,
    /// On a tool call's arguments (and the tool-name rules): let a person decide — the call is
    /// interrupted and the run pauses (see `hooks_core::interrupt`); the value is left as it
    /// is, for the person to see. Where nothing can pause (prompts, results, replies, and runs
    /// that cannot pause) it acts as BLOCK: fail closed.
    Ask,
}

impl GuardrailAction {
    /// `BLOCK`, `WARN`, `REDACT`, `ALLOW` or `ASK`.
    pub fn as_str(self) -> &'static str {
        match self {
            GuardrailAction::Block => "BLOCK",
            GuardrailAction::Warn => "WARN",
            GuardrailAction::Redact => "REDACT",
            GuardrailAction::Allow => "ALLOW",
            GuardrailAction::Ask => "ASK",
        }
    }
}

impl fmt::Display for GuardrailAction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The original's tools that are blocked by default (exact names).
pub const DEFAULT_BLOCKED_TOOLS: [&str; 8] = [
    "eval", "exec", "system", "shell", "rm", "delete", "drop", "truncate",
];

/// SQL injection: destructive statements, `UNION SELECT` with a select list (`/**/` comments
/// count as blanks), tautologies (`' OR 'a'='a`, `') OR ('a'='a`, `' AND 1=1`), a quote
/// closed into a comment at the end (`admin'--`), stacked statements in SQL's shape
/// (`; DELETE FROM t;`, not `; delete the rest`), time-based probes after a quote or a
/// keyword (not `time.sleep(1)`).
pub const SQL_INJECTION: &str = r#"(?i)\b(?:drop|truncate|alter)(?:\s|/\*[^*]{0,64}\*/)+(?:table|database|schema|view|user)\b|\bunion(?:(?:\s|/\*[^*]{0,64}\*/)+(?:(?:all|distinct)(?:\s|/\*[^*]{0,64}\*/)+)?\(?|\s*\()select(?:\s|/\*[^*]{0,64}\*/)+(?:\*|null\b|[0-9]|@@|'|\x22|[a-z_]+\s*\(|[a-z_][a-z0-9_.]*(?:\s|/\*[^*]{0,64}\*/)*(?:,|from\b))|'\)?\s*(?:or|and)\s+\(?'?[0-9]+'?\s*=\s*'?[0-9]+|'\)?\s*(?:or|and)\s+\(?'[a-z0-9_]{0,32}'\s*=\s*'[a-z0-9_]{0,32}|\x22\s*or\s+\x22[a-z0-9_]{0,32}\x22\s*=\s*\x22|'\s*or\s+true\b|\bor\s+1\s*=\s*1\b|'\s*order\s+by\s+[0-9]+\s*(?:--|#)|(?m:'\s*(?:--|#)\s*$)|;\s*(?:drop\s+(?:table|database)|insert\s+into|update\s+\w+\s+set|shutdown\s*(?:;|--|$))|\bdelete\s+from\s+[\w.\x60\x22\[\]]+\s*(?:;|$|--|where\b)|\bexec(?:ute)?\s+xp_\w+|\bwaitfor\s+delay\b|(?:\b(?:and|or)\s+|;\s*(?:select\s+)?|'\s*)(?:sleep|pg_sleep|benchmark)\s*\("#;
/// Path traversal: three or more `../` (or `..\`); any number before a system directory
/// (also `....//`, `..././`, `..;/`); URL-encoded dots or slashes (once or twice: `..%252f`,
/// `.%2e/`); `file://` URLs to system directories; the classic targets. One or two `../`
/// in a relative import or link are not one.
pub const PATH_TRAVERSAL: &str = r#"(?i)(?:\.\.[/\\]){3,}|(?:\.{2,}[./\\]*[/\\]|\.\.;[/\\])+(?:etc|proc|root|boot|sys|windows|var|usr|home)\b|(?:%2e|%252e)(?:\.|%2e|%252e)(?:[/\\]|%2f|%5c|%252f|%255c)|\.(?:%2e|%252e)(?:[/\\]|%2f|%5c|%252f|%255c)|\.\.(?:%2f|%5c|%252f|%255c)|\.\.;[/\\]|\bfile://(?:localhost)?/+(?:etc|proc|root|boot|sys|dev|[a-z]:/windows)\b|(?:^|[\s\x27\x22=:(<])/etc/+(?:passwd|shadow|sudoers)\b|/proc/self/environ\b"#;
/// Command injection: a shell separator or substitution (`;`, `&`, `&&`, `|`, `||`, a line
/// break, `` ` ``, `$(`) followed by a destructive or revealing payload — `rm -rf /`,
/// `curl … | sh`, `nc -e`, `mkfs`, `dd if=`, a fork bomb, `chmod 777 /`, reading
/// `/etc/shadow` or `~/.ssh/`, `shutdown`, `whoami`/`id` — with or without its path,
/// `sudo`/`env` prefixes, quotes or a backslash; a pipe into a shell at the end of a line;
/// a reverse shell to `/dev/tcp`. Commands in code blocks, tables and ordinary shell lines
/// (`pip install … && python app.py`) are not payloads.
pub const COMMAND_INJECTION: &str = r#"(?m)(?:;|&&?|\|\|?|\x60|\$\(|\r?\n)[ \t]*(?:(?:sudo|env|nohup|xargs|exec|command)(?:\s+-\S+(?:\s+[^\s-]\S*)?)*\s+(?:\S+=\S*\s+)*)?[\\\x27\x22]?(?:/(?:usr/)?(?:local/)?s?bin/)?(?:rm[\x27\x22]?\s+(?:-[a-zA-Z]*[rRf][a-zA-Z]*\s+)+(?:--no-preserve-root\s+)?(?:/|~|\*|\.\.?(?:/|\s|$)|\$HOME)|(?:curl|wget)\b[^\n|;]{0,200}\|\s*(?:sudo\s+)?(?:ba|z|da|k)?sh\b|(?:nc|ncat|netcat)\b[^\n;|]{0,100}\s-[a-z]*[ec]\b|mkfs\b|mkfifo\b|dd\s+if=|:\(\)\s*\{|chmod\s+(?:-R\s+)?[0-7]?777\s+/|cat\s+(?:/etc/(?:passwd|shadow|sudoers)|~/\.(?:ssh|aws)/|\$HOME/\.(?:ssh|aws)/)|(?:shutdown|reboot|halt|poweroff)\b|(?:whoami|id|uname\s+-a)[ \t]*(?:$|[;|&)\x60\n]))|(?m)\|[ \t]*(?:sudo\s+)?(?:ba|z|da|k)?sh[ \t]*$|\b(?:ba)?sh\s+-i\s+>&\s*/dev/tcp/|/dev/tcp/[0-9.]+/[0-9]+"#;

type ViolationCallback = dyn Fn(&GuardrailViolation) + Send + Sync;

/// The guardrails' configuration, with the Python original's defaults.
///
/// ```
/// use hooks_guardrails::{Entity, GuardrailAction, GuardrailConfig};
/// let config = GuardrailConfig::default()
///     .with_action("pii_email", GuardrailAction::Redact)
///     .with_blocked_pattern("internal_hosts", r"\bcorp-[a-z]+\.internal\b")
///     .with_pii_detectors([Entity::Email, Entity::CreditCard]);
/// # let _ = config;
/// ```
#[derive(Clone)]
pub struct GuardrailConfig {
    pub(crate) blocked_tools: Vec<String>,
    pub(crate) allowed_tools: Option<Vec<String>>,
    pub(crate) pii: Vec<Entity>,
    pub(crate) patterns: Vec<(String, String)>,
    pub(crate) max_prompt_length: usize,
    pub(crate) max_tool_result_length: usize,
    pub(crate) default_action: GuardrailAction,
    pub(crate) overrides: Vec<(String, GuardrailAction)>,
    pub(crate) gate: ToolGate,
    pub(crate) max_violations: usize,
    pub(crate) on_violation: Option<Arc<ViolationCallback>>,
    pub(crate) priority: HookPriority,
    pub(crate) name: Option<String>,
}

impl fmt::Debug for GuardrailConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GuardrailConfig")
            .field("blocked_tools", &self.blocked_tools)
            .field("allowed_tools", &self.allowed_tools)
            .field("pii", &self.pii)
            .field(
                "patterns",
                &self.patterns.iter().map(|(n, _)| n).collect::<Vec<_>>(),
            )
            .field("max_prompt_length", &self.max_prompt_length)
            .field("max_tool_result_length", &self.max_tool_result_length)
            .field("default_action", &self.default_action)
            .field("overrides", &self.overrides)
            .field("gate", &self.gate)
            .field("priority", &self.priority)
            .finish_non_exhaustive()
    }
}

impl Default for GuardrailConfig {
    fn default() -> Self {
        Self {
            blocked_tools: DEFAULT_BLOCKED_TOOLS
                .iter()
                .map(|s| (*s).to_owned())
                .collect(),
            allowed_tools: None,
            pii: Entity::ALL.to_vec(),
            patterns: vec![
                ("sql_injection".into(), SQL_INJECTION.into()),
                ("path_traversal".into(), PATH_TRAVERSAL.into()),
                ("command_injection".into(), COMMAND_INJECTION.into()),
            ],
            max_prompt_length: 100_000,
            max_tool_result_length: 50_000,
            default_action: GuardrailAction::Block,
            overrides: Vec::new(),
            gate: ToolGate::default(),
            max_violations: 10_000,
            on_violation: None,
            priority: HookPriority::SECURITY_DEFAULT,
            name: None,
        }
    }
}

impl GuardrailConfig {
    /// Tools refused by exact name (default: eval, exec, system, shell, rm, delete, drop,
    /// truncate).
    #[must_use]
    pub fn with_blocked_tools(
        mut self,
        tools: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        self.blocked_tools = tools.into_iter().map(Into::into).collect();
        self
    }

    /// Only these tools may run (default: any not blocked).
    #[must_use]
    pub fn with_allowed_tools(
        mut self,
        tools: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        self.allowed_tools = Some(tools.into_iter().map(Into::into).collect());
        self
    }

    /// The PII detectors (default: all of them).
    #[must_use]
    pub fn with_pii_detectors(mut self, entities: impl IntoIterator<Item = Entity>) -> Self {
        self.pii = entities.into_iter().collect();
        self
    }

    /// Adds (or replaces) a blocked-content pattern, rule `blocked_<name>`. Compiled when the
    /// hook is built.
    #[must_use]
    pub fn with_blocked_pattern(
        mut self,
        name: impl Into<String>,
        pattern: impl Into<String>,
    ) -> Self {
        let name = name.into();
        let pattern = pattern.into();
        match self.patterns.iter_mut().find(|(n, _)| *n == name) {
            Some(slot) => slot.1 = pattern,
            None => self.patterns.push((name, pattern)),
        }
        self
    }

    /// Removes a blocked-content pattern (e.g. `"sql_injection"` for a SQL assistant).
    #[must_use]
    pub fn without_blocked_pattern(mut self, name: &str) -> Self {
        self.patterns.retain(|(n, _)| n != name);
        self
    }

    /// The longest prompt, in characters (default 100 000).
    #[must_use]
    pub fn with_max_prompt_length(mut self, chars: usize) -> Self {
        self.max_prompt_length = chars;
        self
    }

    /// The longest tool result, in characters (default 50 000).
    #[must_use]
    pub fn with_max_tool_result_length(mut self, chars: usize) -> Self {
        self.max_tool_result_length = chars;
        self
    }

    /// The action of every rule without an override (default BLOCK).
    #[must_use]
    pub fn with_default_action(mut self, action: GuardrailAction) -> Self {
        self.default_action = action;
        self
    }

    /// The action of one rule, by name (`pii_email`, `blocked_sql_injection`, `blocked_tool`,
    /// …). An unknown name is an error when the hook is built.
    #[must_use]
    pub fn with_action(mut self, rule: impl Into<String>, action: GuardrailAction) -> Self {
        self.overrides.push((rule.into(), action));
        self
    }

    /// The deterministic tool gate.
    #[must_use]
    pub fn with_tool_gate(mut self, gate: ToolGate) -> Self {
        self.gate = gate;
        self
    }

    /// How many violations are kept for reading (default 10 000; the oldest go first).
    #[must_use]
    pub fn with_max_violations(mut self, n: usize) -> Self {
        self.max_violations = n;
        self
    }

    /// Called for every violation (it holds no raw PII).
    #[must_use]
    pub fn on_violation(mut self, f: impl Fn(&GuardrailViolation) + Send + Sync + 'static) -> Self {
        self.on_violation = Some(Arc::new(f));
        self
    }

    /// The guard's priority on the way in (default SECURITY_DEFAULT, 50); on the way out it
    /// always runs first.
    #[must_use]
    pub fn with_priority(mut self, p: HookPriority) -> Self {
        self.priority = p;
        self
    }

    /// The name in a registry (default `GuardrailsHook`); two guards with different rules
    /// need different names.
    #[must_use]
    pub fn with_name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Builds the guard from this configuration: the same as
    /// [`GuardrailsHook::new`](crate::GuardrailsHook::new), so the guard reads like every other
    /// provider's builder: `GuardrailsHook::builder().with_…().build()?`.
    ///
    /// # Errors
    /// As [`GuardrailsHook::new`](crate::GuardrailsHook::new).
    pub fn build(self) -> crate::Result<crate::GuardrailsHook> {
        crate::GuardrailsHook::new(self)
    }
}
