//! The settings format: Claude Code's `hooks` key.
//!
//! ```json
//! {"hooks": {
//!   "PreToolUse": [
//!     {"matcher": "Bash|Write", "hooks": [{"type": "command", "command": "./check.sh", "timeout": 10}]}
//!   ],
//!   "UserPromptSubmit": [{"hooks": [{"type": "http", "url": "http://127.0.0.1:8080/ctx"}]}]
//! }}
//! ```

use std::fmt;
use std::time::Duration;

use regex::Regex;
use serde_json::{Map, Value};

use crate::error::{Error, Result};

/// The default time a handler may take: 60 s, as in the protocol.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// The shortest timeout a handler may ask for: 10 ms (less could never be met).
pub const MIN_TIMEOUT: Duration = Duration::from_millis(10);

/// The longest timeout a handler may ask for: one hour.
pub const MAX_TIMEOUT: Duration = Duration::from_secs(3600);

/// The events handlers can be attached to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum HookEventName {
    /// Before a tool call: allow, deny, ask, or rewrite its input.
    PreToolUse,
    /// After a tool call: add to, or flag, what the model sees.
    PostToolUse,
    /// When a run starts with the user's prompt: add context, or refuse it.
    UserPromptSubmit,
    /// When the model gives its final answer: let it stop, or send it back with a reason.
    Stop,
}

impl HookEventName {
    /// Every event, in the order the protocol lists them.
    pub const ALL: [HookEventName; 4] = [
        HookEventName::PreToolUse,
        HookEventName::PostToolUse,
        HookEventName::UserPromptSubmit,
        HookEventName::Stop,
    ];

    /// The protocol's name, e.g. `PreToolUse`.
    pub fn as_str(self) -> &'static str {
        match self {
            HookEventName::PreToolUse => "PreToolUse",
            HookEventName::PostToolUse => "PostToolUse",
            HookEventName::UserPromptSubmit => "UserPromptSubmit",
            HookEventName::Stop => "Stop",
        }
    }

    fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|e| e.as_str() == s)
    }

    /// True for the events whose handlers are chosen by tool name.
    pub fn has_matcher(self) -> bool {
        matches!(self, HookEventName::PreToolUse | HookEventName::PostToolUse)
    }
}

impl fmt::Display for HookEventName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Which tools a group of handlers applies to.
#[derive(Debug, Clone)]
pub(crate) enum Matcher {
    /// Every tool (an empty matcher, `*`, or none).
    All,
    /// These exact names (`Bash`, `Edit|Write`).
    Names(Vec<String>),
    /// A regular expression matching the whole name (`mcp__.*`, `Notebook.*`).
    Regex(Regex),
}

impl Matcher {
    fn parse(s: &str, path: &str) -> Result<Self> {
        let s = s.trim();
        if s.is_empty() || s == "*" {
            return Ok(Matcher::All);
        }
        // `Edit|Write`, also written `Edit | Write`.
        if s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '|' | ' '))
        {
            return Ok(Matcher::Names(
                s.split('|')
                    .map(str::trim)
                    .filter(|n| !n.is_empty())
                    .map(str::to_owned)
                    .collect(),
            ));
        }
        Regex::new(&format!("^(?:{s})$"))
            .map(Matcher::Regex)
            .map_err(|e| Error::Settings {
                path: path.to_owned(),
                message: format!("the matcher is not a valid regular expression: {e}"),
            })
    }

    pub(crate) fn matches(&self, tool: &str) -> bool {
        match self {
            Matcher::All => true,
            Matcher::Names(names) => names.iter().any(|n| n == tool),
            Matcher::Regex(re) => re.is_match(tool),
        }
    }
}

/// What a handler is.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum HandlerKind {
    /// A command run by `sh -c` for each event, the event as JSON on its stdin.
    Command {
        /// The command line, as the operator wrote it (the shell expands `$VARS`).
        command: String,
    },
    /// An HTTP endpoint the event is POSTed to as JSON; the reply is read like a command's
    /// stdout.
    Http {
        /// The URL.
        url: String,
        /// Extra headers (`$VAR` and `${VAR}` in values are expanded from the environment).
        headers: Vec<(String, String)>,
    },
    /// A persistent worker: started once by `sh -c`, it answers events as JSON lines (see
    /// the crate docs).
    Worker {
        /// The command line that starts it.
        command: String,
    },
}

/// One handler of a group.
#[derive(Debug, Clone)]
pub struct Handler {
    pub(crate) kind: HandlerKind,
    pub(crate) timeout: Duration,
    /// Where it is in the settings, e.g. `hooks.PreToolUse[0].hooks[1]`: decisions name it.
    pub(crate) label: String,
}

impl Handler {
    /// What it is.
    pub fn kind(&self) -> &HandlerKind {
        &self.kind
    }

    /// How long it may take.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Where it is in the settings, e.g. `hooks.PreToolUse[0].hooks[1]`.
    pub fn label(&self) -> &str {
        &self.label
    }
}

/// A matcher and its handlers.
#[derive(Debug, Clone)]
pub(crate) struct Group {
    pub(crate) matcher: Matcher,
    pub(crate) handlers: Vec<Handler>,
    /// PreToolUse only: a handler that fails or times out denies the call.
    pub(crate) fail_closed: bool,
}

/// Parsed settings: the groups of each event, and what was ignored.
#[derive(Debug, Clone, Default)]
pub struct Settings {
    pub(crate) groups: Vec<(HookEventName, Group)>,
    warnings: Vec<String>,
}

impl Settings {
    /// Parses settings JSON: either a whole settings file (with a `hooks` key) or the
    /// `hooks` object itself.
    ///
    /// # Errors
    /// [`Error::Json`] when it is not JSON; [`Error::Settings`] naming the JSON path of
    /// anything malformed (an unknown handler type, a timeout that is not a positive number,
    /// a matcher that is not a valid regular expression, …). Unknown keys and events are
    /// kept as [`warnings`](Self::warnings), not errors.
    pub fn parse(json: &str) -> Result<Self> {
        let value: Value = serde_json::from_str(json).map_err(|e| Error::Json(e.to_string()))?;
        Self::from_value(&value)
    }

    /// [`parse`](Self::parse) for a value already read.
    ///
    /// # Errors
    /// As for [`parse`](Self::parse).
    pub fn from_value(value: &Value) -> Result<Self> {
        let root = value
            .as_object()
            .ok_or_else(|| bad("", "expected a JSON object"))?;
        let mut settings = Settings::default();
        let (hooks, prefix) = match root.get("hooks") {
            Some(Value::Object(h)) => (h, "hooks"),
            Some(_) => return Err(bad("hooks", "expected an object of events")),
            // The `hooks` object itself, if every key looks like an event.
            None if root
                .keys()
                .all(|k| k.chars().next().is_some_and(char::is_uppercase)) =>
            {
                (root, "hooks")
            }
            None => {
                settings
                    .warnings
                    .push("no `hooks` key: no hook is configured".into());
                return Ok(settings);
            }
        };
        for (name, groups) in hooks {
            let path = format!("{prefix}.{name}");
            let Some(event) = HookEventName::parse(name) else {
                settings.warnings.push(format!(
                    "{path}: event `{name}` is not supported here and is ignored (supported: PreToolUse, PostToolUse, UserPromptSubmit, Stop)"
                ));
                continue;
            };
            let groups = groups
                .as_array()
                .ok_or_else(|| bad(&path, "expected an array of matcher groups"))?;
            for (i, group) in groups.iter().enumerate() {
                let path = format!("{path}[{i}]");
                let g = parse_group(event, group, &path, &mut settings.warnings)?;
                settings.groups.push((event, g));
            }
        }
        Ok(settings)
    }

    /// What was ignored (unknown keys, unsupported events), with its JSON path.
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// The handlers of `event`, in settings order.
    pub fn handlers(&self, event: HookEventName) -> impl Iterator<Item = &Handler> {
        self.groups
            .iter()
            .filter(move |(e, _)| *e == event)
            .flat_map(|(_, g)| g.handlers.iter())
    }
}

fn bad(path: &str, message: &str) -> Error {
    Error::Settings {
        path: if path.is_empty() {
            "(root)".into()
        } else {
            path.to_owned()
        },
        message: message.to_owned(),
    }
}

fn unknown_keys(map: &Map<String, Value>, known: &[&str], path: &str, warnings: &mut Vec<String>) {
    for k in map.keys().filter(|k| !known.contains(&k.as_str())) {
        warnings.push(format!("{path}.{k}: unknown key, ignored"));
    }
}

fn parse_group(
    event: HookEventName,
    group: &Value,
    path: &str,
    warnings: &mut Vec<String>,
) -> Result<Group> {
    let map = group
        .as_object()
        .ok_or_else(|| bad(path, "expected an object with `matcher` and `hooks`"))?;
    unknown_keys(map, &["matcher", "hooks", "fail_closed"], path, warnings);
    let matcher = match map.get("matcher") {
        None | Some(Value::Null) => Matcher::All,
        Some(Value::String(s)) => {
            if !event.has_matcher() && !s.trim().is_empty() && s != "*" {
                warnings.push(format!(
                    "{path}.matcher: {event} has no tool to match; the matcher is ignored"
                ));
                Matcher::All
            } else {
                Matcher::parse(s, &format!("{path}.matcher"))?
            }
        }
        Some(_) => return Err(bad(&format!("{path}.matcher"), "expected a string")),
    };
    let fail_closed = match map.get("fail_closed") {
        None => false,
        Some(Value::Bool(b)) => {
            if *b && event != HookEventName::PreToolUse {
                warnings.push(format!(
                    "{path}.fail_closed: only PreToolUse can fail closed; ignored for {event}"
                ));
            }
            *b && event == HookEventName::PreToolUse
        }
        Some(_) => {
            return Err(bad(
                &format!("{path}.fail_closed"),
                "expected true or false",
            ));
        }
    };
    let hooks = map
        .get("hooks")
        .and_then(Value::as_array)
        .ok_or_else(|| bad(&format!("{path}.hooks"), "expected an array of handlers"))?;
    let mut handlers = Vec::with_capacity(hooks.len());
    for (i, h) in hooks.iter().enumerate() {
        handlers.push(parse_handler(h, &format!("{path}.hooks[{i}]"), warnings)?);
    }
    Ok(Group {
        matcher,
        handlers,
        fail_closed,
    })
}

fn parse_handler(h: &Value, path: &str, warnings: &mut Vec<String>) -> Result<Handler> {
    let map = h
        .as_object()
        .ok_or_else(|| bad(path, "expected an object with `type`"))?;
    let timeout = match map.get("timeout") {
        None | Some(Value::Null) => DEFAULT_TIMEOUT,
        Some(Value::Number(n)) => match n.as_f64() {
            Some(s) if s >= MIN_TIMEOUT.as_secs_f64() && s.is_finite() => {
                Duration::from_secs_f64(s.min(MAX_TIMEOUT.as_secs_f64()))
            }
            _ => {
                return Err(bad(
                    &format!("{path}.timeout"),
                    "expected a number of seconds, at least 0.01",
                ));
            }
        },
        Some(_) => {
            return Err(bad(
                &format!("{path}.timeout"),
                "expected a number of seconds, at least 0.01",
            ));
        }
    };
    let string = |key: &str| -> Result<String> {
        match map.get(key) {
            Some(Value::String(s)) if !s.trim().is_empty() => Ok(s.clone()),
            Some(Value::String(_)) => Err(bad(&format!("{path}.{key}"), "must not be empty")),
            Some(_) => Err(bad(&format!("{path}.{key}"), "expected a string")),
            None => Err(bad(&format!("{path}.{key}"), "is missing")),
        }
    };
    let kind = match map.get("type").and_then(Value::as_str) {
        Some("command") => {
            unknown_keys(map, &["type", "command", "timeout"], path, warnings);
            HandlerKind::Command {
                command: string("command")?,
            }
        }
        Some("http") => {
            unknown_keys(map, &["type", "url", "headers", "timeout"], path, warnings);
            let url = string("url")?;
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                return Err(bad(
                    &format!("{path}.url"),
                    "expected an http:// or https:// URL",
                ));
            }
            let mut headers = Vec::new();
            match map.get("headers") {
                None | Some(Value::Null) => {}
                Some(Value::Object(h)) => {
                    for (k, v) in h {
                        let v = v.as_str().ok_or_else(|| {
                            bad(&format!("{path}.headers.{k}"), "expected a string")
                        })?;
                        headers.push((k.clone(), v.to_owned()));
                    }
                }
                Some(_) => return Err(bad(&format!("{path}.headers"), "expected an object")),
            }
            HandlerKind::Http { url, headers }
        }
        Some("worker") => {
            unknown_keys(map, &["type", "command", "timeout"], path, warnings);
            HandlerKind::Worker {
                command: string("command")?,
            }
        }
        Some(other) => {
            return Err(bad(
                &format!("{path}.type"),
                &format!("unknown handler type `{other}`; use `command`, `http` or `worker`"),
            ));
        }
        None => {
            return Err(bad(
                &format!("{path}.type"),
                "is missing; use `command`, `http` or `worker`",
            ));
        }
    };
    Ok(Handler {
        kind,
        timeout,
        label: path.to_owned(),
    })
}

/// `$VAR` and `${VAR}` in `s`, from the environment (unset: empty).
pub(crate) fn expand_env(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        let (name, skip) = if let Some(inner) = after.strip_prefix('{') {
            match inner.find('}') {
                Some(end) => (&inner[..end], end + 2),
                None => ("", 0),
            }
        } else {
            let end = after
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(after.len());
            (&after[..end], end)
        };
        if name.is_empty() {
            out.push('$');
            rest = after;
        } else {
            out.push_str(&std::env::var(name).unwrap_or_default());
            rest = &after[skip..];
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matchers() {
        let m = Matcher::parse("Edit|Write", "p").unwrap();
        assert!(m.matches("Edit") && m.matches("Write") && !m.matches("EditX"));
        assert!(Matcher::parse("", "p").unwrap().matches("anything"));
        let re = Matcher::parse("mcp__.*", "p").unwrap();
        assert!(re.matches("mcp__github__push") && !re.matches("xmcp__a"));
        assert!(Matcher::parse("(", "p").is_err());
    }

    #[test]
    fn errors_name_the_json_path() {
        let e = Settings::parse(r#"{"hooks":{"PreToolUse":[{"hooks":[{"type":"command","command":"x","timeout":-1}]}]}}"#).unwrap_err();
        assert_eq!(
            e.to_string(),
            "invalid hook settings at hooks.PreToolUse[0].hooks[0].timeout: expected a number of seconds, at least 0.01"
        );
        let e =
            Settings::parse(r#"{"hooks":{"Stop":[{"hooks":[{"type":"prompt"}]}]}}"#).unwrap_err();
        assert!(e.to_string().contains("hooks.Stop[0].hooks[0].type"), "{e}");
        let s = Settings::parse(
            r#"{"hooks":{"Notification":[],"PreToolUse":[{"matcher":"Bash","x":1,"hooks":[]}]}}"#,
        )
        .unwrap();
        assert_eq!(s.warnings().len(), 2, "{:?}", s.warnings());
    }

    #[test]
    fn env_expansion() {
        // SAFETY-free: PATH is always set in tests.
        let path = std::env::var("PATH").unwrap_or_default();
        assert_eq!(expand_env("a $PATH b"), format!("a {path} b"));
        assert_eq!(expand_env("${PATH}!"), format!("{path}!"));
        assert_eq!(expand_env("cost $ 5"), "cost $ 5");
        assert_eq!(expand_env("$HOOKS_SURELY_UNSET_VAR_X"), "");
    }
}
