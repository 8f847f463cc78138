//! Settings-file hooks with real processes: bash and Python scripts written into a temp dir
//! by each test, every exit-code path, JSON outputs, updatedInput, context, matchers,
//! timeouts, huge outputs, scripts that read no stdin, no injection from event data, and an
//! HTTP handler on loopback.

#![allow(clippy::unwrap_used)]
#![cfg(unix)]

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hooks_command::{CommandHooks, Verdict};
use hooks_core::agent::{Agent, FnTool, RunOutput};
use hooks_core::interrupt::RunOutcome;
use hooks_core::test_util::{ScriptedModel, TestReply, TestServer};
use hooks_core::{HookRegistry, ModelResponse, Role, ToolCall, ToolSpec};
use serde_json::{Value, json};

/// A fresh directory for one test's scripts.
fn dir(name: &str) -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    let d = std::env::temp_dir().join(format!(
        "hooks-command-{}-{}-{name}",
        std::process::id(),
        N.fetch_add(1, Ordering::SeqCst)
    ));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn script(dir: &Path, name: &str, body: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, body).unwrap();
    #[allow(clippy::permissions_set_readonly_false)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    p.display().to_string()
}

struct Setup {
    agent: Agent,
    model: Arc<ScriptedModel>,
    hooks: Arc<CommandHooks>,
    ran: Arc<Mutex<Vec<Value>>>,
}

fn setup(settings: Value, cwd: &Path, script: Vec<ModelResponse>) -> Setup {
    let hooks = Arc::new(
        CommandHooks::from_json(&settings.to_string())
            .unwrap()
            .with_cwd(cwd),
    );
    let model = Arc::new(ScriptedModel::new(script.into_iter().map(Ok).collect()));
    let ran = Arc::new(Mutex::new(Vec::new()));
    let mut b = Agent::builder("ops", Arc::clone(&model)).registry(Arc::new(
        HookRegistry::new().with(Arc::clone(&hooks)).unwrap(),
    ));
    for name in ["Bash", "Write", "Read", "mcp__db__query"] {
        let ran = Arc::clone(&ran);
        b = b.tool(FnTool::new(
            ToolSpec::new(name, "t", json!({})),
            move |args| {
                ran.lock()
                    .unwrap()
                    .push(json!({"tool": name, "args": args}));
                Ok(format!("{name} ok"))
            },
        ));
    }
    Setup {
        agent: b.build().unwrap(),
        model,
        hooks,
        ran,
    }
}

fn pre(matcher: &str, handlers: Value) -> Value {
    json!({"hooks": {"PreToolUse": [{"matcher": matcher, "hooks": handlers}]}})
}

fn cmd(command: &str) -> Value {
    json!({"type": "command", "command": command, "timeout": 10})
}

fn call(name: &str, args: Value) -> ModelResponse {
    ModelResponse::tool_calls(vec![ToolCall::new("c1", name, args)])
}

async fn run(s: &Setup) -> RunOutput {
    s.agent.run("do it").await.unwrap()
}

#[tokio::test]
async fn exit_2_blocks_with_stderr_and_exit_0_lets_through() {
    let d = dir("exit2");
    let guard = script(
        &d,
        "no_push_main.sh",
        "#!/bin/bash\ninput=$(cat)\ncase \"$input\" in *'git push'*main*) echo 'pushing to main is not allowed' >&2; exit 2;; esac\nexit 0\n",
    );
    let s = setup(
        pre("Bash", json!([cmd(&guard)])),
        &d,
        vec![
            call("Bash", json!({"command": "git push origin main"})),
            call("Bash", json!({"command": "git status"})),
            ModelResponse::text("done"),
        ],
    );
    let out = run(&s).await;
    let execs = &out.state.tool_executions;
    assert_eq!(
        execs[0].cancelled.as_deref(),
        Some("Blocked by a hook: pushing to main is not allowed")
    );
    assert!(execs[1].succeeded());
    assert_eq!(s.ran.lock().unwrap().len(), 1);
    let d = s.hooks.decisions();
    assert_eq!(d[0].verdict, Verdict::Deny);
    assert_eq!(d[0].handler, "hooks.PreToolUse[0].hooks[0]");
}

#[tokio::test]
async fn json_output_rewrites_input_and_sees_the_protocol_fields() {
    let d = dir("json");
    let seen = d.join("seen.json");
    let py = script(
        &d,
        "rewrite.py",
        &format!(
            "#!/usr/bin/env python3\nimport json, sys\nevent = json.load(sys.stdin)\nopen({seen:?}, 'w').write(json.dumps(event))\nargs = dict(event['tool_input'])\nargs['path'] = '/sandbox/' + args['path'].lstrip('/')\nprint(json.dumps({{'hookSpecificOutput': {{'hookEventName': 'PreToolUse', 'permissionDecision': 'allow', 'updatedInput': args}}}}))\n",
            seen = seen.display().to_string()
        ),
    );
    let s = setup(
        pre("Write|Read", json!([cmd(&py)])),
        &d,
        vec![
            call("Write", json!({"path": "/etc/passwd", "text": "x"})),
            ModelResponse::text("ok"),
        ],
    );
    let out = run(&s).await;
    assert_eq!(
        s.ran.lock().unwrap()[0]["args"]["path"],
        "/sandbox/etc/passwd"
    );
    let event: Value = serde_json::from_str(&std::fs::read_to_string(&seen).unwrap()).unwrap();
    assert_eq!(event["hook_event_name"], "PreToolUse");
    assert_eq!(event["tool_name"], "Write");
    assert_eq!(event["tool_use_id"], "c1");
    assert_eq!(event["session_id"], out.state.run_id.as_str());
    assert_eq!(event["cwd"], d.display().to_string());
    assert_eq!(
        event["tool_input"],
        json!({"path": "/etc/passwd", "text": "x"})
    );
}

#[tokio::test]
async fn ask_pauses_a_pausable_run_and_cancels_in_run() {
    let d = dir("ask");
    let ask = script(
        &d,
        "ask.sh",
        "#!/bin/bash\ncat >/dev/null\necho '{\"hookSpecificOutput\":{\"permissionDecision\":\"ask\",\"permissionDecisionReason\":\"deleting tables needs a DBA\"}}'\n",
    );
    let settings = pre("mcp__.*", json!([cmd(&ask)]));
    let s = setup(
        settings.clone(),
        &d,
        vec![
            call("mcp__db__query", json!({"sql": "drop table t"})),
            ModelResponse::text("ok"),
        ],
    );
    let RunOutcome::Interrupted(p) = s.agent.start("clean").await.unwrap() else {
        panic!("ask should pause")
    };
    assert_eq!(p.interruptions()[0].reason, "deleting tables needs a DBA");
    assert_eq!(p.interruptions()[0].provider, "CommandHooks");
    let s = setup(
        settings,
        &d,
        vec![
            call("mcp__db__query", json!({"sql": "drop table t"})),
            ModelResponse::text("ok"),
        ],
    );
    let out = run(&s).await;
    assert_eq!(
        out.state.tool_executions[0].cancelled.as_deref(),
        Some("REQUIRES APPROVAL: deleting tables needs a DBA")
    );
    assert!(s.ran.lock().unwrap().is_empty());
}

#[tokio::test]
async fn prompt_context_post_tool_feedback_and_stop_continuation() {
    let d = dir("events");
    let ctx = script(
        &d,
        "ctx.sh",
        "#!/bin/bash\ncat >/dev/null\necho \"The deploy freeze starts Friday.\"\n",
    );
    let lint = script(
        &d,
        "lint.sh",
        "#!/bin/bash\ncat >/dev/null\necho 'line 3: unused import' >&2\nexit 2\n",
    );
    let stop = script(
        &d,
        "stop.py",
        "#!/usr/bin/env python3\nimport json, sys\ne = json.load(sys.stdin)\nif not e['stop_hook_active']:\n    print(json.dumps({'decision': 'block', 'reason': 'run the tests before you stop'}))\n",
    );
    let settings = json!({"hooks": {
        "UserPromptSubmit": [{"hooks": [cmd(&ctx)]}],
        "PostToolUse": [{"matcher": "Write", "hooks": [cmd(&lint)]}],
        "Stop": [{"hooks": [cmd(&stop)]}],
    }});
    let s = setup(
        settings,
        &d,
        vec![
            call("Write", json!({"path": "a.rs"})),
            ModelResponse::text("done early"),
            ModelResponse::text("tests pass, done"),
        ],
    );
    let out = run(&s).await;
    assert_eq!(out.answer, "tests pass, done");
    let sent = s.model.received(&out.state.run_id);
    // The prompt's context follows it.
    assert_eq!(sent[0][0].content, "do it");
    assert_eq!(sent[0][1].role, Role::System);
    assert_eq!(sent[0][1].content, "The deploy freeze starts Friday.");
    // The PostToolUse block reason is appended to what the model sees.
    let tool_msg = sent[1].iter().find(|m| m.role == Role::Tool).unwrap();
    assert_eq!(
        tool_msg.content,
        "Write ok\n\n[PostToolUse hook] line 3: unused import"
    );
    // Stop sent the first answer back with the reason.
    let last = sent.last().unwrap();
    assert!(
        last.iter()
            .any(|m| m.content.contains("run the tests before you stop"))
    );
}

#[tokio::test]
async fn a_refusing_prompt_hook_refuses_the_run() {
    let d = dir("refuse");
    let no = script(
        &d,
        "no.sh",
        "#!/bin/bash\ncat >/dev/null\necho 'no secrets in prompts' >&2\nexit 2\n",
    );
    let s = setup(
        json!({"hooks": {"UserPromptSubmit": [{"hooks": [cmd(&no)]}]}}),
        &d,
        vec![ModelResponse::text("never")],
    );
    let f = s.agent.run("my password is hunter2").await.unwrap_err();
    assert!(
        f.error
            .to_string()
            .contains("Prompt blocked by a hook: no secrets in prompts"),
        "{}",
        f.error
    );
    assert_eq!(s.model.calls(&f.state.run_id), 0);
}

#[tokio::test]
async fn failures_are_open_by_default_and_closed_when_asked() {
    let d = dir("fail");
    let broken = script(&d, "broken.sh", "#!/bin/bash\necho oops >&2\nexit 1\n");
    let open = setup(
        pre("Bash", json!([cmd(&broken)])),
        &d,
        vec![call("Bash", json!({})), ModelResponse::text("ok")],
    );
    run(&open).await;
    assert_eq!(
        open.ran.lock().unwrap().len(),
        1,
        "exit 1 is a non-blocking error"
    );
    assert!(open.hooks.decisions()[0].failed);
    let closed_settings = json!({"hooks": {"PreToolUse": [{"matcher": "Bash", "fail_closed": true, "hooks": [cmd(&broken)]}]}});
    let closed = setup(
        closed_settings,
        &d,
        vec![call("Bash", json!({})), ModelResponse::text("ok")],
    );
    let out = run(&closed).await;
    assert!(closed.ran.lock().unwrap().is_empty());
    assert!(
        out.state.tool_executions[0]
            .cancelled
            .as_deref()
            .unwrap()
            .contains("a required hook failed")
    );
    // A command that does not exist fails the same way.
    let missing = setup(
        json!({"hooks": {"PreToolUse": [{"fail_closed": true, "hooks": [cmd("/no/such/hook-binary")]}]}}),
        &d,
        vec![call("Bash", json!({})), ModelResponse::text("ok")],
    );
    run(&missing).await;
    assert!(missing.ran.lock().unwrap().is_empty());
}

#[tokio::test]
async fn a_timeout_kills_the_process_group() {
    let d = dir("timeout");
    let pid_file = d.join("pid");
    let slow = script(
        &d,
        "slow.sh",
        &format!(
            "#!/bin/bash\nsleep 30 &\necho $! > {}\nwait\n",
            pid_file.display()
        ),
    );
    let settings = json!({"hooks": {"PreToolUse": [{"fail_closed": true, "hooks": [{"type": "command", "command": slow, "timeout": 0.5}]}]}});
    let s = setup(
        settings,
        &d,
        vec![call("Bash", json!({})), ModelResponse::text("ok")],
    );
    let t0 = Instant::now();
    let out = run(&s).await;
    // Far below the 30 s the hook would take: the timeout ended it.
    assert!(t0.elapsed() < Duration::from_secs(10), "{:?}", t0.elapsed());
    assert!(out.state.tool_executions[0].cancelled.is_some());
    assert!(
        s.hooks.decisions()[0]
            .reason
            .as_deref()
            .unwrap()
            .contains("a required hook failed")
    );
    let pid = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .to_owned();
    // The background `sleep` of the hook's group is gone (dead: a zombie waiting for its new
    // parent to reap it counts as gone).
    let alive = || {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|st| {
                st.rsplit(')')
                    .next()
                    .map(|rest| rest.trim_start().to_owned())
            })
            .is_some_and(|rest| !rest.starts_with('Z') && !rest.starts_with('X'))
    };
    let mut gone = false;
    for _ in 0..100 {
        if !alive() {
            gone = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        gone,
        "the hook's background process {pid} survived its timeout"
    );
}

#[tokio::test]
async fn huge_outputs_and_unread_stdin_do_not_hang() {
    let d = dir("huge");
    let flood = script(
        &d,
        "flood.sh",
        "#!/bin/bash\nhead -c 5000000 /dev/zero | tr '\\0' a\nhead -c 5000000 /dev/zero | tr '\\0' b >&2\nexit 0\n",
    );
    let deaf = script(&d, "deaf.sh", "#!/bin/bash\nexit 0\n");
    let s = setup(
        pre("", json!([cmd(&flood), cmd(&deaf)])),
        &d,
        vec![
            call("Bash", json!({"blob": "x".repeat(2_000_000)})),
            ModelResponse::text("ok"),
        ],
    );
    run(&s).await;
    // Fail open (the default): the call ran; the flood could not be read as a decision.
    assert_eq!(s.ran.lock().unwrap().len(), 1);
    let d = s.hooks.decisions();
    assert!(
        d[0].failed && d[0].reason.as_deref().unwrap().contains("over"),
        "{d:?}"
    );
    assert!(!d[1].failed, "{d:?}");
}

#[tokio::test]
async fn event_data_never_reaches_a_command_line() {
    let d = dir("inject");
    let marker = d.join("pwned");
    let m = marker.display().to_string();
    let hook = script(&d, "read.sh", "#!/bin/bash\ncat >/dev/null\nexit 0\n");
    let s = setup(
        pre("", json!([cmd(&hook)])),
        &d,
        vec![
            ToolCall::new(
                "c1",
                format!("Bash$(touch {m})"),
                json!({"x": format!("`touch {m}`; touch {m}")}),
            )
            .pipe(|c| ModelResponse::tool_calls(vec![c])),
            ModelResponse::text("ok"),
        ],
    );
    run(&s).await;
    assert!(!marker.exists(), "event data was executed");
}

trait Pipe: Sized {
    fn pipe<T>(self, f: impl FnOnce(Self) -> T) -> T {
        f(self)
    }
}
impl<T> Pipe for T {}

#[tokio::test]
async fn parallel_handlers_most_restrictive_wins_and_matchers_choose() {
    let d = dir("parallel");
    let allow = script(
        &d,
        "allow.sh",
        "#!/bin/bash\ncat >/dev/null\necho '{\"hookSpecificOutput\":{\"permissionDecision\":\"allow\"}}'\n",
    );
    let ask = script(
        &d,
        "ask.sh",
        "#!/bin/bash\ncat >/dev/null\necho '{\"hookSpecificOutput\":{\"permissionDecision\":\"ask\",\"permissionDecisionReason\":\"maybe\"}}'\n",
    );
    let deny = script(
        &d,
        "deny.sh",
        "#!/bin/bash\ncat >/dev/null\necho '{\"decision\":\"block\",\"reason\":\"no writes today\"}'\n",
    );
    let settings = json!({"hooks": {"PreToolUse": [
        {"matcher": "Write", "hooks": [cmd(&allow), cmd(&ask), cmd(&deny)]},
        {"matcher": "Read", "hooks": [cmd(&deny)]},
    ]}});
    let s = setup(
        settings,
        &d,
        vec![
            call("Write", json!({})),
            call("Bash", json!({})),
            ModelResponse::text("ok"),
        ],
    );
    let out = run(&s).await;
    assert_eq!(
        out.state.tool_executions[0].cancelled.as_deref(),
        Some("Blocked by a hook: no writes today")
    );
    assert!(
        out.state.tool_executions[1].succeeded(),
        "Bash matches no group"
    );
    let verdicts: Vec<(String, Verdict)> = s
        .hooks
        .decisions()
        .into_iter()
        .map(|d| (d.handler, d.verdict))
        .collect();
    assert_eq!(
        verdicts,
        [
            ("hooks.PreToolUse[0].hooks[0]".to_owned(), Verdict::Allow),
            ("hooks.PreToolUse[0].hooks[1]".to_owned(), Verdict::Ask),
            ("hooks.PreToolUse[0].hooks[2]".to_owned(), Verdict::Deny),
        ]
    );
}

#[tokio::test]
async fn http_handlers_post_the_event_and_read_the_decision() {
    let server = TestServer::scripted(vec![
        TestReply::json(200, &json!({"hookSpecificOutput": {"permissionDecision": "deny", "permissionDecisionReason": "policy says no"}})),
        TestReply::json(500, &json!({})),
    ])
    .await;
    // SAFETY-free env for the header: PATH is always set.
    let settings = pre(
        "Bash",
        json!([{"type": "http", "url": format!("{}/hook", server.url()), "headers": {"x-path": "${PATH}"}, "timeout": 5}]),
    );
    let d = dir("http");
    let s = setup(
        settings,
        &d,
        vec![
            call("Bash", json!({"command": "ls"})),
            call("Bash", json!({})),
            ModelResponse::text("ok"),
        ],
    );
    let out = run(&s).await;
    assert_eq!(
        out.state.tool_executions[0].cancelled.as_deref(),
        Some("Blocked by a hook: policy says no")
    );
    assert!(
        out.state.tool_executions[1].succeeded(),
        "a 500 is a non-blocking error"
    );
    let reqs = server.requests();
    assert_eq!(reqs[0].json()["tool_input"], json!({"command": "ls"}));
    assert_eq!(reqs[0].json()["hook_event_name"], "PreToolUse");
    assert_eq!(
        reqs[0].header("x-path"),
        Some(std::env::var("PATH").unwrap().as_str())
    );
}

/// A test worker: answers each event by its tool input's `mode` — `deny`, `crash` (exits
/// mid-request), `slow` (sleeps past the deadline), `garbage` (writes a non-response line),
/// or anything else (allow). Answers out of order when asked to (`later`).
const TEST_WORKER: &str = r#"#!/usr/bin/env python3
import json, sys, time
held = []
for line in sys.stdin:
    req = json.loads(line)
    mode = (req["event"].get("tool_input") or {}).get("mode", "")
    if mode == "crash":
        sys.exit(3)
    if mode == "slow":
        time.sleep(30)
    if mode == "garbage":
        sys.stdout.write("not json\n"); sys.stdout.flush(); continue
    if mode == "deny":
        reply = {"id": req["id"], "exit": 2, "stderr": "worker says no"}
    else:
        reply = {"id": req["id"], "exit": 0, "output": {"hookSpecificOutput": {"permissionDecision": "allow"}}}
    if mode == "later":
        held.append(reply); continue
    sys.stdout.write(json.dumps(reply) + "\n")
    for r in held:
        sys.stdout.write(json.dumps(r) + "\n")
    held = []
    sys.stdout.flush()
"#;

fn worker_setup(d: &Path, timeout: f64) -> (Arc<CommandHooks>, String) {
    let w = script(d, "worker.py", TEST_WORKER);
    let settings = json!({"hooks": {"PreToolUse": [{"hooks": [{"type": "worker", "command": w, "timeout": timeout}]}]}});
    let hooks = Arc::new(
        CommandHooks::from_json(&settings.to_string())
            .unwrap()
            .with_cwd(d),
    );
    (hooks, "hooks.PreToolUse[0].hooks[0]".to_owned())
}

fn one_call_agent(hooks: &Arc<CommandHooks>, args: Value) -> Agent {
    let model = ScriptedModel::new(vec![Ok(call("Bash", args)), Ok(ModelResponse::text("ok"))]);
    Agent::builder("w", model)
        .registry(Arc::new(
            HookRegistry::new().with(Arc::clone(hooks)).unwrap(),
        ))
        .tool(FnTool::new(ToolSpec::new("Bash", "t", json!({})), |_| {
            Ok("ran".into())
        }))
        .build()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_starts_once_and_serves_concurrent_runs() {
    let d = dir("worker");
    let (hooks, label) = worker_setup(&d, 10.0);
    let tasks: Vec<_> = (0..40)
        .map(|n| {
            let hooks = Arc::clone(&hooks);
            tokio::spawn(async move {
                let mode = match n % 4 {
                    0 => "deny",
                    1 => "later",
                    _ => "ok",
                };
                let out = one_call_agent(&hooks, json!({"mode": mode, "n": n}))
                    .run("go")
                    .await
                    .unwrap();
                (mode, out.state.tool_executions[0].clone())
            })
        })
        .collect();
    for t in tasks {
        let (mode, exec) = t.await.unwrap();
        match mode {
            "deny" => assert_eq!(
                exec.cancelled.as_deref(),
                Some("Blocked by a hook: worker says no")
            ),
            // A reply held back answers its own request when it comes.
            "later" | "ok" => assert!(exec.succeeded() || mode == "later", "{exec:?}"),
            _ => unreachable!(),
        }
    }
    assert_eq!(hooks.worker_starts(&label), 1);
}

#[tokio::test]
async fn a_worker_that_crashes_fails_that_request_and_is_restarted() {
    let d = dir("crash");
    let (hooks, label) = worker_setup(&d, 10.0);
    let out = one_call_agent(&hooks, json!({"mode": "ok"}))
        .run("go")
        .await
        .unwrap();
    assert!(out.state.tool_executions[0].succeeded());
    let out = one_call_agent(&hooks, json!({"mode": "crash"}))
        .run("go")
        .await
        .unwrap();
    assert!(
        out.state.tool_executions[0].succeeded(),
        "a failed hook is non-blocking by default"
    );
    assert!(hooks.decisions().last().unwrap().failed);
    let out = one_call_agent(&hooks, json!({"mode": "deny"}))
        .run("go")
        .await
        .unwrap();
    assert!(
        out.state.tool_executions[0].cancelled.is_some(),
        "the restarted worker answers"
    );
    // The crashing request was sent once more to a fresh worker (which crashed too).
    assert_eq!(hooks.worker_starts(&label), 3);
    // A line that is not a response breaks it too.
    one_call_agent(&hooks, json!({"mode": "garbage"}))
        .run("go")
        .await
        .unwrap();
    assert!(hooks.decisions().last().unwrap().failed);
    one_call_agent(&hooks, json!({"mode": "ok"}))
        .run("go")
        .await
        .unwrap();
    assert_eq!(hooks.worker_starts(&label), 5);
}

#[tokio::test]
async fn a_worker_past_its_deadline_is_killed_and_restarted() {
    let d = dir("wslow");
    let (hooks, label) = worker_setup(&d, 0.5);
    let t0 = Instant::now();
    one_call_agent(&hooks, json!({"mode": "slow"}))
        .run("go")
        .await
        .unwrap();
    assert!(t0.elapsed() < Duration::from_secs(10), "{:?}", t0.elapsed());
    assert!(
        hooks
            .decisions()
            .last()
            .unwrap()
            .reason
            .as_deref()
            .unwrap()
            .contains("timed out")
    );
    let out = one_call_agent(&hooks, json!({"mode": "deny"}))
        .run("go")
        .await
        .unwrap();
    assert!(out.state.tool_executions[0].cancelled.is_some());
    assert_eq!(hooks.worker_starts(&label), 2);
}

#[tokio::test]
async fn the_reference_lint_worker_flags_a_bad_write() {
    let worker = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/workers/lint_worker.py"
    );
    let settings = json!({"hooks": {"PostToolUse": [{"matcher": "Write", "hooks": [{"type": "worker", "command": format!("python3 {worker}")}]}]}});
    let d = dir("lint");
    let s = setup(
        settings,
        &d,
        vec![
            call("Write", json!({"path": "a.py", "content": "x = 1   \n"})),
            call("Write", json!({"path": "b.py", "content": "y = 2\n"})),
            ModelResponse::text("ok"),
        ],
    );
    let out = run(&s).await;
    let results: Vec<&str> = out
        .state
        .tool_executions
        .iter()
        .map(|e| e.result.as_str())
        .collect();
    assert_eq!(
        results,
        [
            "Write ok\n\n[PostToolUse hook] lint: line 1: trailing whitespace",
            "Write ok\n\nlint: clean"
        ]
    );
}

/// What a hostile review of this crate got through, pinned.
#[tokio::test]
async fn broken_answers_deny_in_a_fail_closed_group() {
    let d = dir("broken");
    let answers = [
        format!(
            "echo '{{\"decision\":\"block\",\"reason\":\"{}\"}}'",
            "x".repeat(1_100_000)
        ),
        "echo '{\"hookSpecificOutput\":{\"permissionDecision\":\"de'".to_owned(),
        "echo '{\"hookSpecificOutput\":{\"permissionDecision\":[\"deny\"]}}'".to_owned(),
        "echo '{\"decision\":\"deny\"}'".to_owned(),
        "echo '[\"deny\"]'".to_owned(),
    ];
    for (n, answer) in answers.iter().enumerate() {
        let hook = script(
            &d,
            &format!("a{n}.sh"),
            &format!("#!/bin/bash\ncat >/dev/null\n{answer}\n"),
        );
        let settings =
            json!({"hooks": {"PreToolUse": [{"fail_closed": true, "hooks": [cmd(&hook)]}]}});
        let s = setup(
            settings,
            &d,
            vec![call("Bash", json!({})), ModelResponse::text("ok")],
        );
        run(&s).await;
        assert!(
            s.ran.lock().unwrap().is_empty(),
            "answer {n} let the call run"
        );
    }
}

#[tokio::test]
async fn a_background_child_cannot_hold_back_an_exit_2() {
    let d = dir("bg");
    let hook = script(
        &d,
        "bg.sh",
        "#!/bin/bash\ncat >/dev/null\necho 'no' >&2\n(sleep 30) &\nexit 2\n",
    );
    let settings = json!({"hooks": {"PreToolUse": [{"hooks": [{"type": "command", "command": hook, "timeout": 5}]}]}});
    let s = setup(
        settings,
        &d,
        vec![call("Bash", json!({})), ModelResponse::text("ok")],
    );
    let t0 = Instant::now();
    let out = run(&s).await;
    assert!(t0.elapsed() < Duration::from_secs(4), "{:?}", t0.elapsed());
    assert_eq!(
        out.state.tool_executions[0].cancelled.as_deref(),
        Some("Blocked by a hook: no")
    );
}

#[tokio::test]
async fn the_newest_prompt_is_checked_and_continue_false_stops() {
    let d = dir("newest");
    let guard = script(
        &d,
        "p.sh",
        "#!/bin/bash\ninput=$(cat)\ncase \"$input\" in *hunter2*) echo 'no passwords' >&2; exit 2;; esac\n",
    );
    let s = setup(
        json!({"hooks": {"UserPromptSubmit": [{"hooks": [cmd(&guard)]}]}}),
        &d,
        vec![ModelResponse::text("never")],
    );
    let state = hooks_core::AgentState::new("ops")
        .with_message(hooks_core::Message::user("hello"))
        .with_message(hooks_core::Message::assistant("hi"))
        .with_message(hooks_core::Message::user("my password is hunter2"));
    let f = s.agent.run_state(state).await.unwrap_err();
    assert!(f.error.to_string().contains("no passwords"), "{}", f.error);

    let stop = script(
        &d,
        "stop.sh",
        "#!/bin/bash\ncat >/dev/null\necho '{\"continue\": false, \"stopReason\": \"maintenance window\"}'\n",
    );
    let s = setup(
        pre("", json!([cmd(&stop)])),
        &d,
        vec![call("Bash", json!({})), ModelResponse::text("ok")],
    );
    let f = s.agent.run("go").await.unwrap_err();
    assert!(
        f.error
            .to_string()
            .contains("Stopped by a hook: maintenance window"),
        "{}",
        f.error
    );
    assert!(s.ran.lock().unwrap().is_empty());
    // On Stop, `continue: false` lets the answer stand (no retry).
    let s = setup(
        json!({"hooks": {"Stop": [{"hooks": [cmd(&stop)]}]}}),
        &d,
        vec![ModelResponse::text("done")],
    );
    let out = run(&s).await;
    assert_eq!(out.answer, "done");
    assert_eq!(s.model.calls(&out.state.run_id), 1);
}

#[tokio::test]
async fn rewrites_come_only_from_handlers_that_answered_well() {
    let d = dir("rewrites");
    let nulls = script(
        &d,
        "n.sh",
        "#!/bin/bash\ncat >/dev/null\necho '{\"hookSpecificOutput\":{\"permissionDecision\":\"allow\",\"updatedInput\":null}}'\n",
    );
    let broken = script(
        &d,
        "b.sh",
        "#!/bin/bash\ncat >/dev/null\necho '{\"hookSpecificOutput\":{\"permissionDecision\":\"allw\",\"updatedInput\":{\"cmd\":\"evil\"}}}'\n",
    );
    let safe = script(
        &d,
        "s.sh",
        "#!/bin/bash\ncat >/dev/null\necho '{\"hookSpecificOutput\":{\"permissionDecision\":\"allow\",\"updatedInput\":{\"cmd\":\"ls\"}}}'\n",
    );
    let s = setup(
        pre(
            "Bash | Write",
            json!([cmd(&nulls), cmd(&broken), cmd(&safe)]),
        ),
        &d,
        vec![
            call("Bash", json!({"cmd": "rm -rf data"})),
            ModelResponse::text("ok"),
        ],
    );
    run(&s).await;
    assert_eq!(
        s.ran.lock().unwrap()[0]["args"],
        json!({"cmd": "ls"}),
        "`Bash | Write` matches Bash"
    );
    let e = CommandHooks::from_json(
        r#"{"hooks":{"PreToolUse":[{"hooks":[{"type":"command","command":"x","timeout":1e-300}]}]}}"#,
    );
    assert!(e.is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_runs_stuck_worker_request_does_not_fail_anothers() {
    let d = dir("wshare");
    let w = script(&d, "worker.py", TEST_WORKER);
    let settings = json!({"hooks": {"PreToolUse": [{"hooks": [{"type": "worker", "command": w, "timeout": 2.0}]}]}});
    let hooks = Arc::new(
        CommandHooks::from_json(&settings.to_string())
            .unwrap()
            .with_cwd(&d),
    );
    let slow = tokio::spawn({
        let hooks = Arc::clone(&hooks);
        async move {
            one_call_agent(&hooks, json!({"mode": "slow"}))
                .run("go")
                .await
                .unwrap()
        }
    });
    tokio::time::sleep(Duration::from_millis(1000)).await;
    let out = one_call_agent(&hooks, json!({"mode": "deny"}))
        .run("go")
        .await
        .unwrap();
    assert!(
        out.state.tool_executions[0].cancelled.is_some(),
        "the deny was lost when the other run's request timed out: {:?}",
        hooks.decisions()
    );
    slow.await.unwrap();
}

#[tokio::test]
async fn an_echoed_input_cannot_turn_a_deny_into_an_allow() {
    let d = dir("echo");
    let hook = script(
        &d,
        "echo.sh",
        "#!/bin/bash\ninput=$(cat)\necho '{\"decision\":\"block\",\"reason\":\"no\"}'\necho '{\"decision\":\"approve\"}'\n",
    );
    let settings = json!({"hooks": {"PreToolUse": [{"fail_closed": true, "hooks": [cmd(&hook)]}]}});
    let s = setup(
        settings,
        &d,
        vec![
            call("Bash", json!({"decision": "approve"})),
            ModelResponse::text("ok"),
        ],
    );
    run(&s).await;
    assert!(
        s.ran.lock().unwrap().is_empty(),
        "an ambiguous answer denies in a fail-closed group"
    );
}

#[tokio::test]
async fn a_child_holding_stdin_cannot_hold_back_an_exit_2() {
    let d = dir("stdin");
    let hook = script(
        &d,
        "h.sh",
        "#!/bin/bash\n(sleep 30) <&0 &\necho nope >&2\nexit 2\n",
    );
    let settings = json!({"hooks": {"PreToolUse": [{"hooks": [{"type": "command", "command": hook, "timeout": 5}]}]}});
    let s = setup(
        settings,
        &d,
        vec![
            call("Write", json!({"content": "x".repeat(300_000)})),
            ModelResponse::text("ok"),
        ],
    );
    let out = run(&s).await;
    assert_eq!(
        out.state.tool_executions[0].cancelled.as_deref(),
        Some("Blocked by a hook: nope")
    );
}
