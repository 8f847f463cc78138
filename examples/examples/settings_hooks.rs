//! Operator hooks from a settings file, in the Claude Code protocol: a bash script that blocks
//! `git push` to main, a prompt hook that adds context, and a persistent Python worker that
//! lints every file the agent writes. The settings and the script are written to a temp dir;
//! the worker is `examples/workers/lint_worker.py`. The model is scripted.
//!
//! Run it with `cargo run --example settings_hooks` (needs `bash` and `python3`).

use std::sync::Arc;

use hooks::agent::{Agent, FnTool};
use hooks::command::CommandHooks;
use hooks::test_util::ScriptedModel;
use hooks::{HookRegistry, ModelResponse, Role, ToolCall, ToolSpec};
use serde_json::json;

const NO_PUSH_TO_MAIN: &str = r#"#!/bin/bash
# PreToolUse: the event arrives on stdin; exit 2 blocks, stderr is the reason the model sees.
input=$(cat)
case "$input" in
  *'git push'*main*) echo "Pushing to main is not allowed; open a pull request instead." >&2; exit 2;;
esac
exit 0
"#;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::temp_dir().join(format!("settings-hooks-demo-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let guard = dir.join("no_push_to_main.sh");
    std::fs::write(&guard, NO_PUSH_TO_MAIN)?;
    let worker = concat!(env!("CARGO_MANIFEST_DIR"), "/workers/lint_worker.py");
    let settings = json!({"hooks": {
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": format!("bash {}", guard.display()), "timeout": 10}]}],
        "UserPromptSubmit": [{"hooks": [{"type": "command", "command": "cat >/dev/null; echo 'Repository policy: main is protected; every change goes through a pull request.'"}]}],
        "PostToolUse": [{"matcher": "Write", "hooks": [{"type": "worker", "command": format!("python3 {worker}"), "timeout": 10}]}],
    }});
    let settings_file = dir.join("settings.json");
    std::fs::write(&settings_file, serde_json::to_string_pretty(&settings)?)?;
    println!(
        "Settings ({}):\n{}\n",
        settings_file.display(),
        serde_json::to_string_pretty(&settings)?
    );

    let hooks = Arc::new(CommandHooks::from_settings(&settings_file)?.with_cwd(&dir));
    let model = ScriptedModel::new(vec![
        Ok(ModelResponse::tool_calls(vec![ToolCall::new(
            "c1",
            "Bash",
            json!({"command": "git push origin main"}),
        )])),
        Ok(ModelResponse::tool_calls(vec![ToolCall::new(
            "c2",
            "Write",
            json!({"path": "fix.py", "content": "def fix():   \n\treturn 1\n"}),
        )])),
        Ok(ModelResponse::tool_calls(vec![ToolCall::new(
            "c3",
            "Write",
            json!({"path": "fix.py", "content": "def fix():\n    return 1\n"}),
        )])),
        Ok(ModelResponse::text(
            "I wrote fix.py (lint clean) and left the push for a pull request.",
        )),
    ]);
    let bash = FnTool::new(
        ToolSpec::new("Bash", "Runs a command", json!({"type": "object"})),
        |args| Ok(format!("(demo) would run: {}", args["command"])),
    );
    let write = FnTool::new(
        ToolSpec::new("Write", "Writes a file", json!({"type": "object"})),
        |args| Ok(format!("wrote {}", args["path"])),
    );
    let agent = Agent::builder("settings-demo", model)
        .tool(bash)
        .tool(write)
        .registry(Arc::new(HookRegistry::new().with(Arc::clone(&hooks))?))
        .build()?;
    let out = agent.run("Fix the bug in fix.py and push it.").await?;

    println!("The conversation:");
    for m in &out.state.messages {
        let who = match m.role {
            Role::System => "context from a hook",
            Role::User => "user",
            Role::Assistant => "model",
            Role::Tool => "tool result (as the hooks left it)",
        };
        if !m.content.is_empty() {
            println!("  [{who}] {}", m.content.replace('\n', " ⏎ "));
        }
        for c in &m.tool_calls {
            println!("  [model] calls {}({})", c.name, c.arguments);
        }
    }
    println!("\nEvery handler's decision:");
    for d in hooks.decisions() {
        println!(
            "  {} {} {}: {}{}",
            d.event,
            d.handler,
            d.tool_name.as_deref().unwrap_or("-"),
            d.verdict.as_str(),
            d.reason.map(|r| format!(" ({r})")).unwrap_or_default()
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}
