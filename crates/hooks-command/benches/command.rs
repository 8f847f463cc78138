//! `command/pre_tool_use/{spawn_bash,spawn_python,worker}`: what one PreToolUse handler costs
//! per tool call — a bash script spawned per call, a Python script spawned per call, and the
//! same Python logic as a persistent worker answering JSON lines.

use std::hint::black_box;
use std::sync::Arc;

use criterion::{Criterion, criterion_group, criterion_main};
use hooks_command::CommandHooks;
use hooks_core::{BeforeToolCallEvent, EventContext, Extensions, HookRegistry, RunId, ToolCall};
use serde_json::json;

const PY_ONCE: &str = "import json, sys\ne = json.load(sys.stdin)\nprint(json.dumps({'hookSpecificOutput': {'permissionDecision': 'allow'}}))\n";
const PY_WORKER: &str = "import json, sys\nfor line in sys.stdin:\n    r = json.loads(line)\n    print(json.dumps({'id': r['id'], 'exit': 0, 'output': {'hookSpecificOutput': {'permissionDecision': 'allow'}}}), flush=True)\n";

fn bench(c: &mut Criterion) {
    let dir = std::env::temp_dir().join(format!("hooks-command-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temp dir");
    std::fs::write(dir.join("once.py"), PY_ONCE).expect("write");
    std::fs::write(dir.join("worker.py"), PY_WORKER).expect("write");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let mut g = c.benchmark_group("command/pre_tool_use");
    g.sample_size(20);
    let handlers = [
        (
            "spawn_bash",
            json!({"type": "command", "command": "cat >/dev/null; exit 0"}),
        ),
        (
            "spawn_python",
            json!({"type": "command", "command": format!("python3 {}", dir.join("once.py").display())}),
        ),
        (
            "worker",
            json!({"type": "worker", "command": format!("python3 {}", dir.join("worker.py").display())}),
        ),
    ];
    for (name, handler) in handlers {
        let settings = json!({"hooks": {"PreToolUse": [{"hooks": [handler]}]}});
        let hooks = CommandHooks::from_json(&settings.to_string())
            .expect("settings")
            .with_cwd(&dir);
        let registry = Arc::new(HookRegistry::new().with(hooks).expect("registry"));
        let (run, ext) = (RunId::new("bench"), Extensions::new());
        let call = ToolCall::new("c1", "Bash", json!({"command": "git status"}));
        g.bench_function(name, |b| {
            b.iter(|| {
                rt.block_on(async {
                    let mut e = BeforeToolCallEvent::new(EventContext::new(&run, &ext), &call);
                    registry.before_tool_call(&mut e).await.expect("dispatch");
                    black_box(e.cancelled().is_none())
                })
            })
        });
    }
    g.finish();
    let _ = std::fs::remove_dir_all(&dir);
}

criterion_group!(benches, bench);
criterion_main!(benches);
