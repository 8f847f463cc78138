//! Running one handler: a command (the event on stdin) or an HTTP endpoint (the event as the
//! body), bounded in time and output, and reading what it answered.

use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};

use crate::settings::{Handler, HandlerKind, HookEventName, expand_env};

/// The most bytes kept of a handler's stdout and of its stderr (the rest is read and dropped).
pub const MAX_OUTPUT: usize = 1 << 20;

/// What a handler decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Verdict {
    /// Nothing to say: go on.
    None,
    /// Go on (explicitly).
    Allow,
    /// A person must decide.
    Ask,
    /// Refuse (block).
    Deny,
}

impl Verdict {
    /// `none`, `allow`, `ask` or `deny`.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::None => "none",
            Verdict::Allow => "allow",
            Verdict::Ask => "ask",
            Verdict::Deny => "deny",
        }
    }
}

/// What one handler answered.
#[derive(Debug, Clone, Default)]
pub(crate) struct Reply {
    pub(crate) verdict: Option<Verdict>,
    pub(crate) reason: Option<String>,
    pub(crate) updated_input: Option<Value>,
    pub(crate) context: Option<String>,
    /// It failed (could not start, timed out, another exit code, a bad reply): logged, and
    /// for a fail-closed PreToolUse group a denial.
    pub(crate) error: Option<String>,
    /// `continue: false`: the run stops, with this reason.
    pub(crate) halt: Option<String>,
}

/// Runs `handler` with `input` as its event JSON.
pub(crate) async fn run(
    handler: &Handler,
    event: HookEventName,
    input: &Value,
    cwd: &std::path::Path,
    http: Option<&hooks_core::http::reqwest::Client>,
    worker: Option<&crate::worker::Worker>,
) -> Reply {
    if let HandlerKind::Worker { .. } = &handler.kind {
        return match worker {
            Some(w) => w.ask(event, input, handler.timeout).await,
            None => Reply {
                error: Some("the worker was not set up".into()),
                ..Reply::default()
            },
        };
    }
    let body = input.to_string();
    match &handler.kind {
        HandlerKind::Command { command } => {
            run_command(command, handler.timeout, event, &body, cwd).await
        }
        HandlerKind::Http { url, headers } => match http {
            Some(client) => run_http(client, url, headers, handler.timeout, event, body).await,
            None => Reply {
                error: Some("no HTTP client could be built".into()),
                ..Reply::default()
            },
        },
        HandlerKind::Worker { .. } => unreachable!("answered above"),
    }
}

async fn run_command(
    command: &str,
    timeout: Duration,
    event: HookEventName,
    body: &str,
    cwd: &std::path::Path,
) -> Reply {
    let failed = |e: String| Reply {
        error: Some(e),
        ..Reply::default()
    };
    // The operator's command line goes to the shell as written; event data only ever reaches
    // the process through stdin and the environment, never its command line.
    let mut cmd = tokio::process::Command::new("sh");
    cmd.arg("-c")
        .arg(command)
        .current_dir(cwd)
        .env("CLAUDE_PROJECT_DIR", cwd)
        .env("HOOKS_PROJECT_DIR", cwd)
        .env("HOOKS_EVENT", event.as_str())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    #[cfg(unix)]
    cmd.process_group(0);
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => return failed(format!("cannot start `sh -c`: {e}")),
    };
    let pid = child.id();
    // Whatever way this ends — a timeout, the run dropped, the hook's own deadline — the
    // process group goes with it (disarmed once the hook has exited and its pipes closed).
    let mut group = GroupGuard(pid);
    let (Some(mut stdin), Some(stdout), Some(stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        return failed("the process has no pipes".into());
    };
    let input = body.as_bytes().to_vec();
    // Written by its own task: a hook that exits without reading stdin (while a child of it
    // holds the pipe) must not hold back its answer; the writer is stopped once it exits.
    let writer = tokio::spawn(async move {
        // A hook that reads no stdin closes the pipe: that is fine.
        let _ = stdin.write_all(&input).await;
        drop(stdin);
    });
    let _writer = AbortOnDrop(writer);
    let (out_buf, err_buf) = (Captured::default(), Captured::default());
    let all = async {
        let readers = async {
            tokio::join!(capped(stdout, &out_buf), capped(stderr, &err_buf));
        };
        tokio::pin!(readers);
        let status = async {
            let mut readers_done = false;
            let status = tokio::select! {
                s = child.wait() => s,
                () = &mut readers => { readers_done = true; child.wait().await }
            };
            // Once the hook has exited, what a background child of it keeps open is not
            // waited for (`(sleep 30) & exit 2` still blocks at once).
            if !readers_done {
                let _ = tokio::time::timeout(EXIT_GRACE, &mut readers).await;
            }
            status
        };
        status.await
    };
    let status = match tokio::time::timeout(timeout, all).await {
        Ok(status) => status,
        Err(_) => {
            kill_group(group.0.take());
            return failed(format!(
                "timed out after {timeout:?}; its process group was killed"
            ));
        }
    };
    let status = match status {
        Ok(s) => s,
        Err(e) => return failed(format!("cannot wait for it: {e}")),
    };
    let (out, err) = (out_buf.take(), err_buf.take());
    if out.1 {
        return failed(format!(
            "its output is over {MAX_OUTPUT} bytes, so it cannot be read as a decision"
        ));
    }
    if out.2 && err.2 {
        // Both pipes closed: nothing of the hook is left running.
        group.0 = None;
    }
    let stdout = String::from_utf8_lossy(&out.0).into_owned();
    let stderr = String::from_utf8_lossy(&err.0).trim().to_owned();
    match status.code() {
        Some(0) => parse_output(event, &stdout),
        Some(2) => Reply {
            verdict: Some(Verdict::Deny),
            reason: Some(if stderr.is_empty() {
                "blocked by a hook (exit code 2)".to_owned()
            } else {
                stderr
            }),
            ..Reply::default()
        },
        Some(code) => failed(format!(
            "exited with code {code}{}",
            if stderr.is_empty() {
                String::new()
            } else {
                format!(": {}", hooks_core::text::preview(&stderr, 500))
            }
        )),
        None => failed("was killed by a signal".into()),
    }
}

/// How long, after a hook exits, its output is still read (a background child of it may
/// keep the pipes open).
const EXIT_GRACE: Duration = Duration::from_millis(200);

/// What a reader kept: the first [`MAX_OUTPUT`] bytes, whether more came, whether it ended.
#[derive(Default)]
struct Captured(std::sync::Mutex<(Vec<u8>, bool, bool)>);

impl Captured {
    fn take(&self) -> (Vec<u8>, bool, bool) {
        std::mem::take(
            &mut *self
                .0
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        )
    }
}

/// Reads all of `r` into `into`, keeping the first [`MAX_OUTPUT`] bytes.
async fn capped(mut r: impl AsyncRead + Unpin, into: &Captured) {
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        let n = match r.read(&mut buf).await {
            Ok(0) | Err(_) => 0,
            Ok(n) => n,
        };
        let mut kept = into
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if n == 0 {
            kept.2 = true;
            return;
        }
        let room = MAX_OUTPUT.saturating_sub(kept.0.len());
        kept.0.extend_from_slice(&buf[..n.min(room)]);
        kept.1 |= n > room;
    }
}

/// Aborts a task when dropped.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Kills a handler's process group when dropped, unless disarmed (its pid taken).
pub(crate) struct GroupGuard(pub(crate) Option<u32>);

impl Drop for GroupGuard {
    fn drop(&mut self) {
        kill_group(self.0.take());
    }
}

/// Kills the handler's process group (it was started as its own group's leader), with the
/// system's `kill` (no unsafe code here).
pub(crate) fn kill_group(pid: Option<u32>) {
    #[cfg(unix)]
    if let Some(pid) = pid.filter(|p| *p > 0) {
        let _ = std::process::Command::new("kill")
            .args(["-KILL", "--", &format!("-{pid}")])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
    #[cfg(not(unix))]
    let _ = pid;
}

async fn run_http(
    client: &hooks_core::http::reqwest::Client,
    url: &str,
    headers: &[(String, String)],
    timeout: Duration,
    event: HookEventName,
    body: String,
) -> Reply {
    let failed = |e: String| Reply {
        error: Some(e),
        ..Reply::default()
    };
    let mut req = client
        .post(url)
        .timeout(timeout)
        .header("content-type", "application/json")
        .body(body);
    for (k, v) in headers {
        req = req.header(k.as_str(), expand_env(v));
    }
    let ask = async {
        let mut resp = req.send().await.map_err(|e| {
            hooks_core::http::redact_urls_in(&hooks_core::http::error_chain(&e.without_url()))
        })?;
        let status = resp.status().as_u16();
        let mut body = Vec::new();
        while let Some(chunk) = resp.chunk().await.map_err(|e| {
            hooks_core::http::redact_urls_in(&hooks_core::http::error_chain(&e.without_url()))
        })? {
            if body.len() + chunk.len() > MAX_OUTPUT {
                return Err(format!("the reply is over {MAX_OUTPUT} bytes"));
            }
            body.extend_from_slice(&chunk);
        }
        Ok::<_, String>((status, body))
    };
    match tokio::time::timeout(timeout, ask).await {
        Err(_) => failed(format!("timed out after {timeout:?}")),
        Ok(Err(e)) => failed(format!("the request failed: {e}")),
        Ok(Ok((status, _))) if !(200..300).contains(&status) => {
            failed(format!("answered with status {status}"))
        }
        Ok(Ok((_, body))) => parse_output(event, &String::from_utf8_lossy(&body)),
    }
}

/// Reads a handler's answer (exit code 0, or a 2xx body): JSON in the protocol's shape, or
/// plain text (context, for UserPromptSubmit; otherwise ignored).
pub(crate) fn parse_output(event: HookEventName, stdout: &str) -> Reply {
    let text = stdout.trim();
    // The whole output as JSON — or, when a hook logged text first, its last line, if that
    // is the only line that is JSON (a second JSON line — a hook echoing its input, say —
    // makes the answer ambiguous: a failure).
    let parsed = match serde_json::from_str::<Value>(text) {
        Ok(v) => Some(v),
        Err(_) => {
            let lines: Vec<&str> = text
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .collect();
            let json: Vec<usize> = lines
                .iter()
                .enumerate()
                .filter(|(_, l)| serde_json::from_str::<Value>(l).is_ok())
                .map(|(i, _)| i)
                .collect();
            match json.as_slice() {
                [] => None,
                [only] if *only + 1 == lines.len() => serde_json::from_str(lines[*only]).ok(),
                _ => {
                    return failed_reply(
                        "its output holds more than one JSON line, or text after its JSON: the answer is ambiguous".into(),
                    );
                }
            }
        }
    };
    let o = match parsed {
        Some(Value::Object(o)) => o,
        // Something that looks like JSON but is not an object of the protocol is a broken
        // answer, not silence (a fail-closed group denies on it).
        Some(_) => return failed_reply("its output is JSON but not an object".into()),
        None if text.starts_with('{') || text.starts_with('[') => {
            return failed_reply("its output looks like JSON but does not parse".into());
        }
        None => {
            let context = (event == HookEventName::UserPromptSubmit && !text.is_empty())
                .then(|| text.to_owned());
            return Reply {
                context,
                ..Reply::default()
            };
        }
    };
    let specific = o.get("hookSpecificOutput").and_then(Value::as_object);
    let raw = |k: &str| specific.and_then(|s| s.get(k)).or_else(|| o.get(k));
    let field = |k: &str| raw(k).and_then(Value::as_str).map(str::to_owned);
    let mut reply = Reply::default();
    // The newer form first (hookSpecificOutput.permissionDecision), then the older one.
    match raw("permissionDecision") {
        None | Some(Value::Null) => match o.get("decision") {
            None | Some(Value::Null) => {}
            Some(Value::String(d)) if d == "block" => reply.verdict = Some(Verdict::Deny),
            Some(Value::String(d)) if d == "approve" || d == "allow" => {
                reply.verdict = Some(Verdict::Allow);
            }
            Some(other) => {
                return failed_reply(format!(
                    "unknown decision {}; use \"block\" (or \"approve\")",
                    hooks_core::text::preview(&other.to_string(), 32)
                ));
            }
        },
        Some(Value::String(d)) if d == "allow" => reply.verdict = Some(Verdict::Allow),
        Some(Value::String(d)) if d == "deny" => reply.verdict = Some(Verdict::Deny),
        Some(Value::String(d)) if d == "ask" => reply.verdict = Some(Verdict::Ask),
        Some(other) => {
            return failed_reply(format!(
                "unknown permissionDecision {}; use \"allow\", \"deny\" or \"ask\"",
                hooks_core::text::preview(&other.to_string(), 32)
            ));
        }
    }
    reply.reason = field("permissionDecisionReason").or_else(|| field("reason"));
    if o.get("continue").and_then(Value::as_bool) == Some(false) {
        // "Stop now": the run ends (on Stop: the answer stands).
        reply.halt = Some(field("stopReason").unwrap_or_else(|| "a hook stopped the run".into()));
    }
    reply.updated_input = raw("updatedInput").filter(|v| !v.is_null()).cloned();
    reply.context = field("additionalContext");
    reply
}

fn failed_reply(error: String) -> Reply {
    Reply {
        error: Some(error),
        ..Reply::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn outputs_in_every_shape() {
        let r = parse_output(
            HookEventName::PreToolUse,
            &json!({"hookSpecificOutput": {"permissionDecision": "deny", "permissionDecisionReason": "no"}}).to_string(),
        );
        assert_eq!(
            (r.verdict, r.reason.as_deref()),
            (Some(Verdict::Deny), Some("no"))
        );
        let r = parse_output(
            HookEventName::PreToolUse,
            r#"{"decision": "block", "reason": "old style"}"#,
        );
        assert_eq!(
            (r.verdict, r.reason.as_deref()),
            (Some(Verdict::Deny), Some("old style"))
        );
        let r = parse_output(
            HookEventName::PreToolUse,
            &json!({"hookSpecificOutput": {"permissionDecision": "allow", "updatedInput": {"x": 1}}}).to_string(),
        );
        assert_eq!(r.updated_input, Some(json!({"x": 1})));
        let r = parse_output(HookEventName::UserPromptSubmit, "today is Tuesday\n");
        assert_eq!(r.context.as_deref(), Some("today is Tuesday"));
        let r = parse_output(HookEventName::PreToolUse, "just chatter");
        assert!(r.verdict.is_none() && r.context.is_none());
        let r = parse_output(
            HookEventName::Stop,
            r#"{"continue": false, "stopReason": "enough"}"#,
        );
        assert_eq!(r.halt.as_deref(), Some("enough"));
        for broken in [
            r#"{"hookSpecificOutput": {"permissionDecision": "de"#,
            r#"{"hookSpecificOutput": {"permissionDecision": ["deny"]}}"#,
            r#"{"hookSpecificOutput": {"permissionDecision": false}}"#,
            r#"{"decision": "deny"}"#,
            r#"["deny"]"#,
        ] {
            assert!(
                parse_output(HookEventName::PreToolUse, broken)
                    .error
                    .is_some(),
                "{broken}"
            );
        }
        let r = parse_output(
            HookEventName::PreToolUse,
            "checking...\n{\"decision\": \"block\", \"reason\": \"no\"}",
        );
        assert_eq!(r.verdict, Some(Verdict::Deny), "a log line before the JSON");
        let r = parse_output(
            HookEventName::PreToolUse,
            r#"{"hookSpecificOutput": {"permissionDecision": "maybe"}}"#,
        );
        assert!(r.error.is_some());
    }
}
