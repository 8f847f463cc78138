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
    let (Some(mut stdin), Some(stdout), Some(stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        kill_group(pid);
        return failed("the process has no pipes".into());
    };
    let input = body.as_bytes().to_vec();
    let write = async move {
        // A hook that reads no stdin closes the pipe: that is fine.
        let _ = stdin.write_all(&input).await;
        drop(stdin);
    };
    let all = async {
        let ((), out, err, status) =
            tokio::join!(write, capped(stdout), capped(stderr), child.wait());
        (out, err, status)
    };
    let (out, err, status) = match tokio::time::timeout(timeout, all).await {
        Ok(done) => done,
        Err(_) => {
            kill_group(pid);
            return failed(format!(
                "timed out after {timeout:?}; its process group was killed"
            ));
        }
    };
    let status = match status {
        Ok(s) => s,
        Err(e) => return failed(format!("cannot wait for it: {e}")),
    };
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

/// Reads all of `r`, keeping the first [`MAX_OUTPUT`] bytes; true when more came.
async fn capped(mut r: impl AsyncRead + Unpin) -> (Vec<u8>, bool) {
    let mut kept = Vec::new();
    let mut buf = vec![0u8; 16 * 1024];
    let mut over = false;
    loop {
        match r.read(&mut buf).await {
            Ok(0) | Err(_) => return (kept, over),
            Ok(n) => {
                let room = MAX_OUTPUT.saturating_sub(kept.len());
                kept.extend_from_slice(&buf[..n.min(room)]);
                over |= n > room;
            }
        }
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
    let Ok(Value::Object(o)) = serde_json::from_str::<Value>(text) else {
        let context =
            (event == HookEventName::UserPromptSubmit && !text.is_empty()).then(|| text.to_owned());
        return Reply {
            context,
            ..Reply::default()
        };
    };
    let specific = o.get("hookSpecificOutput").and_then(Value::as_object);
    let field = |k: &str| {
        specific
            .and_then(|s| s.get(k))
            .or_else(|| o.get(k))
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    let mut reply = Reply::default();
    // The newer form first (hookSpecificOutput.permissionDecision), then the older one.
    match field("permissionDecision").as_deref() {
        Some("allow") => reply.verdict = Some(Verdict::Allow),
        Some("deny") => reply.verdict = Some(Verdict::Deny),
        Some("ask") => reply.verdict = Some(Verdict::Ask),
        Some(other) => {
            reply.error = Some(format!(
                "unknown permissionDecision `{}`; use allow, deny or ask",
                hooks_core::text::preview(other, 32)
            ));
        }
        None => match o.get("decision").and_then(Value::as_str) {
            Some("block") => reply.verdict = Some(Verdict::Deny),
            Some("approve" | "allow") => reply.verdict = Some(Verdict::Allow),
            _ => {}
        },
    }
    reply.reason = field("permissionDecisionReason").or_else(|| field("reason"));
    if o.get("continue").and_then(Value::as_bool) == Some(false) {
        reply.verdict = Some(Verdict::Deny);
        reply.reason = reply.reason.or_else(|| field("stopReason"));
    }
    reply.updated_input = specific
        .and_then(|s| s.get("updatedInput"))
        .or_else(|| o.get("updatedInput"))
        .cloned();
    reply.context = field("additionalContext");
    reply
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
        assert_eq!(
            (r.verdict, r.reason.as_deref()),
            (Some(Verdict::Deny), Some("enough"))
        );
        let r = parse_output(
            HookEventName::PreToolUse,
            r#"{"hookSpecificOutput": {"permissionDecision": "maybe"}}"#,
        );
        assert!(r.error.is_some());
    }
}
