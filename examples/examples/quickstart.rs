//! Quickstart: a realistic session through the reference loop with all five built-in
//! providers at their default priorities — guardrails (an e-mail redacted, a tool blocked),
//! logging, telemetry (OTLP when `OTEL_EXPORTER_OTLP_ENDPOINT` is set, spans on stdout
//! otherwise), retry (a flaky model) and steering (the judge at `HOOKS_JUDGE_BASE_URL`, or a
//! labelled rule judge) — plus two custom providers: a sandbox that rewrites one call and
//! cancels another, and a tracer that prints what every hook saw. Real tools: a calculator
//! and a file lister. Then human in the loop: a transfer that needs a person pauses the run,
//! the paused run is stored as sealed JSON, read back and resumed with an approval. Last, an
//! agent used as another's tool, streamed: its guard reaches inside, and the reply arrives in
//! pieces, redacted.
//!
//! Run it with `cargo run --example quickstart`.
//!
//! With `--live` the same agent, every provider on, talks to a real model through
//! `OpenAiModel`: the server at `OPENAI_BASE_URL` (key `OPENAI_API_KEY`, model
//! `HOOKS_LIVE_MODEL`, default `gpt-4o-mini`), which also judges for steering unless
//! `HOOKS_JUDGE_BASE_URL` names another. `cargo xtask live-demo` starts a small local
//! llama.cpp model and runs this for you. The conversation is printed with where each message
//! came from: nothing in live mode is scripted.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use hooks::agent::{Agent, FnTool, Model, ToolError};
use hooks::guardrails::{GuardrailAction, GuardrailConfig, GuardrailsHook};
use hooks::logging::LoggingHook;
use hooks::openai::OpenAiModel;
use hooks::otel::{OtlpSetup, TelemetryGuard};
use hooks::retry::ModelRetryHook;
use hooks::steering::{JudgeModel, ModelJudge, RuleJudge, SteeringAction, SteeringHook};
use hooks::test_util::ScriptedModel;
use hooks::{
    AfterInvocationEvent, AfterModelCallEvent, AfterToolCallEvent, BeforeInvocationEvent,
    BeforeToolCallEvent, HookError, HookPriority, HookProvider, HookRegistry, HookSet,
    IterationEvent, Message, ModelError, ModelResponse, Role, ToolCall, ToolSpec, async_trait,
    text,
};
use serde_json::{Map, Value, json};

/// Keeps the file lister inside one directory: paths outside it are rewritten to it, and
/// anything that looks like a secrets directory is refused outright.
struct Sandbox {
    root: PathBuf,
}

#[async_trait]
impl HookProvider for Sandbox {
    fn priority(&self) -> HookPriority {
        HookPriority::SECURITY_DEFAULT
    }

    fn hooks(&self) -> HookSet {
        HookSet::BEFORE_TOOL_CALL
    }

    async fn on_before_tool_call(&self, e: &mut BeforeToolCallEvent<'_>) -> Result<(), HookError> {
        if e.tool_name() != "list_files" {
            return Ok(());
        }
        let path = e
            .arguments()
            .get("path")
            .and_then(Value::as_str)
            .unwrap_or(".")
            .to_owned();
        if path.contains(".ssh") || path.contains("secrets") {
            e.cancel(format!(
                "'{path}' holds credentials; listing it is not allowed"
            ));
        } else if !Path::new(&path).starts_with(&self.root) {
            e.arguments_mut()["path"] = json!(self.root.display().to_string());
        }
        Ok(())
    }
}

/// Prints a readable trace of every event.
struct Tracer;

#[async_trait]
impl HookProvider for Tracer {
    fn priority(&self) -> HookPriority {
        HookPriority::OBSERVABILITY_DEFAULT
    }

    async fn on_before_invocation(&self, e: &mut BeforeInvocationEvent) -> Result<(), HookError> {
        println!(
            "▶ run {} of '{}': {:?}",
            e.run_id(),
            e.state().agent_id,
            e.state().prompt().unwrap_or("")
        );
        Ok(())
    }

    async fn on_iteration_start(&self, e: &IterationEvent<'_>) -> Result<(), HookError> {
        println!("  ┌ iteration {}", e.iteration());
        Ok(())
    }

    async fn on_after_model_call(&self, e: &mut AfterModelCallEvent<'_>) -> Result<(), HookError> {
        if let Some(r) = e.response() {
            let calls: Vec<&str> = r
                .message
                .tool_calls
                .iter()
                .map(|c| c.name.as_str())
                .collect();
            if calls.is_empty() {
                println!(
                    "  │ model answered: {}",
                    text::preview(&r.message.content, 80)
                );
            } else {
                println!("  │ model asks for: {}", calls.join(", "));
            }
        }
        Ok(())
    }

    async fn on_before_tool_call(&self, e: &mut BeforeToolCallEvent<'_>) -> Result<(), HookError> {
        println!(
            "  │ → {} {} {}",
            e.tool_call_id(),
            e.tool_name(),
            e.arguments()
        );
        Ok(())
    }

    async fn on_after_tool_call(&self, e: &mut AfterToolCallEvent<'_>) -> Result<(), HookError> {
        let status = match (e.cancelled(), e.error()) {
            (Some(_), _) => "cancelled",
            (None, Some(_)) => "failed",
            (None, None) => "ok",
        };
        println!(
            "  │ ← {} {status}: {}",
            e.tool_call_id(),
            text::preview(e.result(), 100)
        );
        Ok(())
    }

    async fn on_iteration_end(&self, e: &IterationEvent<'_>) -> Result<(), HookError> {
        println!("  └ iteration {} done", e.iteration());
        Ok(())
    }

    async fn on_after_invocation(&self, e: &AfterInvocationEvent<'_>) -> Result<(), HookError> {
        println!(
            "■ run ended: success={} iterations={} tool calls={} in {:?}",
            e.success(),
            e.state().iteration,
            e.state().tool_executions.len(),
            e.duration()
        );
        Ok(())
    }
}

fn calculator() -> FnTool {
    FnTool::new(
        ToolSpec::new(
            "calculator",
            "Evaluates an arithmetic expression with + - * / and parentheses",
            json!({"type": "object", "properties": {"expression": {"type": "string"}}, "required": ["expression"]}),
        ),
        |args: &Map<String, Value>| {
            let expr = args
                .get("expression")
                .and_then(Value::as_str)
                .ok_or_else(|| {
                    ToolError::new("'expression' must be a string, e.g. \"(1 + 2) * 3\"")
                })?;
            calc::eval(expr)
                .map(|v| v.to_string())
                .map_err(ToolError::new)
        },
    )
}

fn file_lister() -> FnTool {
    FnTool::new(
        ToolSpec::new(
            "list_files",
            "Lists the entries of a directory",
            json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
        ),
        |args: &Map<String, Value>| {
            let path = args
                .get("path")
                .and_then(Value::as_str)
                .ok_or_else(|| ToolError::new("'path' must be a string"))?;
            let mut names: Vec<String> = std::fs::read_dir(path)
                .map_err(|e| ToolError::new(format!("cannot list '{path}': {e}")))?
                .filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect();
            names.sort();
            Ok(names.join(", "))
        },
    )
}

/// The scripted session: every reply the demo's model gives, in order.
fn scripted() -> ScriptedModel {
    ScriptedModel::new(vec![
        // A flaky start: an empty reply, then a rate limit. The retry hook waits and retries.
        Ok(ModelResponse::text("")),
        Err(ModelError::RateLimited {
            retry_after: Some(Duration::from_millis(150)),
        }),
        Ok(ModelResponse::tool_calls(vec![
            ToolCall::new(
                "call_1",
                "calculator",
                json!({"expression": "(12 + 30) * 2"}),
            ),
            ToolCall::new("call_2", "list_files", json!({"path": "/"})),
        ])),
        Ok(ModelResponse::tool_calls(vec![
            ToolCall::new("call_3", "list_files", json!({"path": "/home/me/.ssh"})),
            ToolCall::new("call_4", "weather", json!({"city": "Paris"})),
            ToolCall::new("call_5", "calculator", json!({"expression": 42})),
            ToolCall::new("call_6", "shell", json!({"cmd": "cat ~/.bash_history"})),
            ToolCall::new(
                "call_7",
                "send_email",
                json!({"to": "jane.doe@example.com", "body": "84"}),
            ),
        ])),
        Ok(ModelResponse::text(
            "(12 + 30) * 2 = 84, and the project directory holds Cargo.toml, examples and src. \
             I was not allowed to look at ~/.ssh.",
        )),
    ])
    .with_name("scripted-demo-model")
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let live = std::env::args().any(|a| a == "--live");
    let model: Arc<dyn Model> = if live {
        let base = std::env::var("OPENAI_BASE_URL").unwrap_or_default();
        let name = std::env::var("HOOKS_LIVE_MODEL").unwrap_or_else(|_| "gpt-4o-mini".into());
        println!(
            "Live mode: model {name} at {}",
            if base.trim().is_empty() {
                "https://api.openai.com/v1"
            } else {
                base.as_str()
            }
        );
        Arc::new(
            OpenAiModel::builder(name)
                // Small local models on a shared CPU are slow: be generous.
                .with_timeout(Duration::from_secs(180))
                .build()?,
        )
    } else {
        Arc::new(scripted())
    };

    // The logging hook writes through whatever `tracing` subscriber the program has; this one
    // prints INFO and above to stderr.
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_target(false)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .without_time()
        .compact()
        .init();

    let mut registry = HookRegistry::new();
    // Guardrails: e-mail addresses are redacted instead of refusing the run; the default
    // config blocks dangerous tools such as `shell`.
    let guard = std::sync::Arc::new(GuardrailsHook::new(
        GuardrailConfig::default().with_action("pii_email", GuardrailAction::Redact),
    )?);
    registry.add(guard.clone())?;
    registry.add(Sandbox { root: root.clone() })?;
    registry.add(Tracer)?;
    registry.add(LoggingHook::new())?;
    // Telemetry: OTLP when OTEL_EXPORTER_OTLP_ENDPOINT is set, readable spans on stdout
    // otherwise.
    let telemetry = if OtlpSetup::endpoint_in_env() {
        OtlpSetup::new().with_service_name("quickstart").install()?
    } else {
        TelemetryGuard::stdout()
    };
    registry.add(telemetry.hook().build())?;
    let retry = Arc::new(
        ModelRetryHook::builder()
            .with_initial_delay(Duration::from_millis(100))
            .build()?,
    );
    registry.add(retry.clone())?;
    // Steering: a real judge when HOOKS_JUDGE_BASE_URL names an OpenAI-compatible server (or,
    // in live mode, the live model itself), otherwise a deterministic rule judge (no model
    // involved; its answers say so).
    let judge: Arc<dyn JudgeModel> = match std::env::var("HOOKS_JUDGE_BASE_URL") {
        Err(_) if live => {
            Arc::new(ModelJudge::new(model.clone()).with_timeout(Duration::from_secs(180)))
        }
        Ok(url) if !url.trim().is_empty() => Arc::new(ModelJudge::new(
            OpenAiModel::builder(
                std::env::var("HOOKS_JUDGE_MODEL").unwrap_or_else(|_| "gpt-4o-mini".into()),
            )
            .with_base_url(url)
            .build()?,
        )),
        _ => Arc::new(RuleJudge::new(SteeringAction::Proceed).rule(
            "send_",
            SteeringAction::Guide,
            "draft the message for the user to review instead of sending it",
        )),
    };
    println!("Steering judge: {}", judge.name());
    let steering = Arc::new(
        SteeringHook::builder(judge)
            .with_policy("Answer questions; never send messages on the user's behalf.")
            .build(),
    );
    registry.add(steering.clone())?;

    let shell = FnTool::new(
        ToolSpec::new("shell", "Runs a shell command", json!({"type": "object"})),
        |_| Err(ToolError::new("this demo never runs shell commands")),
    );
    let send_email = FnTool::new(
        ToolSpec::new("send_email", "Sends an e-mail", json!({"type": "object"})),
        |_| Ok("sent".into()),
    );
    let agent = Agent::builder("quickstart", model)
        .tool(send_email)
        .tool(calculator())
        .tool(file_lister())
        .tool(shell)
        .registry(Arc::new(registry))
        .build()?;

    let out = agent
        .run("What is (12 + 30) * 2, and what is in the project directory? Mail it to jane.doe@example.com.")
        .await?;

    println!("\nWhich hook changed what:");
    for c in &out.changes {
        println!(
            "  {} changed {} in {} ({})",
            c.change.provider,
            c.change.field,
            c.event,
            c.tool_call_id.as_deref().unwrap_or("-")
        );
    }
    println!("\nGuardrail violations (no raw values are kept):");
    for v in guard.violations() {
        println!(
            "  {} at {}: {} -> {}",
            v.rule, v.location, v.description, v.action
        );
    }
    println!("\nSteering decisions:");
    for d in steering.decisions() {
        println!(
            "  {} {} -> {} ({})",
            d.tool_call_id.as_deref().unwrap_or("-"),
            d.tool_name.as_deref().unwrap_or("final answer"),
            d.action,
            d.reason
        );
    }
    let stats = retry.stats();
    telemetry.force_flush()?;
    let execs = &out.state.tool_executions;
    let cancelled = execs.iter().filter(|t| t.cancelled.is_some()).count();
    let failed = execs.iter().filter(|t| t.error.is_some()).count();
    if live {
        print_conversation(&out.state.messages);
    }
    println!("\nAnswer: {}", out.answer);
    println!(
        "\nSummary: 1 run, {} tool calls ({} cancelled, {} failed), {} retries ({} empty, {} rate limited), {} guardrail violations, {} steering decisions, {} spans exported",
        execs.len(),
        cancelled,
        failed,
        stats.retries_total,
        stats.empty,
        stats.rate_limited,
        guard.violations().len(),
        steering.decisions().len(),
        telemetry.spans_exported()
    );
    human_in_the_loop().await?;
    nested_and_streamed().await?;
    Ok(())
}

/// An agent as another's tool, streamed: the lead's guardrails reach inside the researcher's
/// run (its tool call's e-mail is redacted before the tool sees it), and the lead's reply
/// streams in pieces, redacted as it goes.
async fn nested_and_streamed() -> Result<(), Box<dyn std::error::Error>> {
    use futures_util::StreamExt as _;
    use hooks::stream::RunEvent;
    println!("\nAn agent as a tool, streamed:");
    let researcher = Agent::builder(
        "researcher",
        ScriptedModel::new(vec![
            Ok(ModelResponse::tool_calls(vec![ToolCall::new(
                "r1",
                "crm_lookup",
                json!({"email": "jane.doe@example.com"}),
            )])),
            Ok(ModelResponse::text("Jane is on the Pro plan.")),
        ]),
    )
    .tool(FnTool::new(
        ToolSpec::new(
            "crm_lookup",
            "Looks a customer up",
            json!({"type": "object"}),
        ),
        |args| {
            println!("    crm_lookup saw {}", Value::Object(args.clone()));
            Ok("plan: Pro".into())
        },
    ))
    .build()?;
    let guard = GuardrailsHook::new(
        GuardrailConfig::default().with_action("pii_email", GuardrailAction::Redact),
    )?;
    let lead = Agent::builder(
        "lead",
        ScriptedModel::new(vec![
            Ok(ModelResponse::tool_calls(vec![ToolCall::new(
                "l1",
                "research",
                json!({"input": "Which plan is jane.doe@example.com on?"}),
            )])),
            Ok(ModelResponse::text(
                "Jane (jane.doe@example.com) is on the Pro plan; no upgrade is needed.",
            )),
        ]),
    )
    .tool(researcher.as_tool("research", "Looks things up in the CRM"))
    .registry(Arc::new(HookRegistry::new().with(guard)?))
    .build()?;
    let mut events = lead.run_stream("Is Jane on the right plan?", 16);
    while let Some(event) = events.next().await {
        match event {
            RunEvent::ToolStarted { name, .. } => println!("  tool {name} started"),
            RunEvent::ToolFinished { name, result, .. } => {
                println!("  tool {name} finished: {result}");
            }
            RunEvent::Text { text, .. } => println!("  piece: {text:?}"),
            RunEvent::Finished(outcome) => match *outcome {
                Ok(_) => println!("  done"),
                Err(f) => return Err(f.error.into()),
            },
            _ => {}
        }
    }
    Ok(())
}

/// One interrupt and its resume: steering marks `transfer_money` as needing a person, so
/// the run pauses; the paused run is stored as JSON (as an application would, in a database),
/// read back and resumed with a person's approval, sealed so no one can edit it meanwhile.
async fn human_in_the_loop() -> Result<(), Box<dyn std::error::Error>> {
    use hooks::interrupt::{Decision, PausedRun, RunOutcome};
    println!(
        "
Human in the loop:"
    );
    // The model (here scripted) answers for the whole conversation, across the pause.
    let model = Arc::new(ScriptedModel::new(vec![
        Ok(ModelResponse::tool_calls(vec![ToolCall::new(
            "call_1",
            "transfer_money",
            json!({"amount": 250, "to": "ACME Ltd"}),
        )])),
        Ok(ModelResponse::text("Paid ACME Ltd 250.")),
    ]));
    let agent = || -> Result<Agent, Box<dyn std::error::Error>> {
        let steering = SteeringHook::builder(RuleJudge::new(SteeringAction::Proceed))
            .with_interrupt_tools(["transfer_money"])
            .build();
        let transfer = FnTool::new(
            ToolSpec::new(
                "transfer_money",
                "Transfers money",
                json!({"type": "object"}),
            ),
            |args| Ok(format!("transferred {} to {}", args["amount"], args["to"])),
        );
        Ok(Agent::builder("payments", Arc::clone(&model))
            .tool(transfer)
            .registry(Arc::new(HookRegistry::new().with(steering)?))
            // In production: 32+ random bytes from your secret store.
            .resume_key(b"quickstart-demo-key-quickstart-demo-key".to_vec())
            .build()?)
    };
    let RunOutcome::Interrupted(paused) = agent()?.start("Pay the ACME invoice.").await? else {
        return Err("the transfer should have waited for a person".into());
    };
    for i in paused.interruptions() {
        println!(
            "  paused: {} wants {}({}) because {} (interruption {})",
            i.provider, i.tool_name, i.arguments, i.reason, i.id
        );
    }
    let stored = paused.to_json()?;
    println!(
        "  stored the paused run: {} bytes of sealed JSON",
        stored.len()
    );
    // Later, maybe in another process, with a fresh agent and registry.
    let paused = PausedRun::from_json(&stored)?;
    let approval = Decision::approve(&paused.interruptions()[0]).by("you (demo)");
    match agent()?.resume(paused, vec![approval]).await? {
        RunOutcome::Completed(out) => {
            println!(
                "  approved and resumed: {} → {}",
                out.state.tool_executions[0].result, out.answer
            );
            Ok(())
        }
        RunOutcome::Interrupted(_) => Err("the approved run should have finished".into()),
    }
}

/// Prints the conversation, saying where each message came from.
fn print_conversation(messages: &[Message]) {
    println!("\nThe conversation (live: every assistant message is the model's own reply):");
    for m in messages {
        let who = match m.role {
            Role::System => "system prompt",
            Role::User if m.automated => "automated feedback from a hook, not the user",
            Role::User => "user",
            Role::Assistant => "model reply",
            Role::Tool => "tool result",
        };
        println!("  [{who}] {}", text::preview(m.content.trim(), 300));
        for c in &m.tool_calls {
            println!(
                "      the model called {}({})",
                c.name,
                text::preview(&c.arguments.to_string(), 200)
            );
        }
    }
    if !messages.iter().any(|m| !m.tool_calls.is_empty()) {
        println!(
            "  The model called no tool. Small local models often do not; nothing was scripted or faked to make up for it."
        );
    }
}

/// A tiny arithmetic evaluator: numbers, + - * /, unary minus and parentheses.
mod calc {
    pub(crate) fn eval(s: &str) -> Result<f64, String> {
        let tokens: Vec<char> = s.chars().filter(|c| !c.is_whitespace()).collect();
        if tokens.len() > 10_000 {
            return Err("expression too long (10 000 characters at most)".into());
        }
        let mut p = Parser {
            t: &tokens,
            i: 0,
            depth: 0,
        };
        let v = p.expr()?;
        if p.i != tokens.len() {
            return Err(format!("unexpected '{}' at position {}", tokens[p.i], p.i));
        }
        if v.is_finite() {
            Ok(v)
        } else {
            Err("division by zero".into())
        }
    }

    struct Parser<'a> {
        t: &'a [char],
        i: usize,
        depth: u32,
    }

    impl Parser<'_> {
        fn peek(&self) -> Option<char> {
            self.t.get(self.i).copied()
        }

        fn expr(&mut self) -> Result<f64, String> {
            let mut v = self.term()?;
            while let Some(op @ ('+' | '-')) = self.peek() {
                self.i += 1;
                let r = self.term()?;
                v = if op == '+' { v + r } else { v - r };
            }
            Ok(v)
        }

        fn term(&mut self) -> Result<f64, String> {
            let mut v = self.factor()?;
            while let Some(op @ ('*' | '/')) = self.peek() {
                self.i += 1;
                let r = self.factor()?;
                v = if op == '*' { v * r } else { v / r };
            }
            Ok(v)
        }

        fn factor(&mut self) -> Result<f64, String> {
            self.depth += 1;
            if self.depth > 200 {
                return Err("expression nested too deeply".into());
            }
            let v = match self.peek() {
                Some('-') => {
                    self.i += 1;
                    -self.factor()?
                }
                Some('(') => {
                    self.i += 1;
                    let v = self.expr()?;
                    if self.peek() != Some(')') {
                        return Err(format!("expected ')' at position {}", self.i));
                    }
                    self.i += 1;
                    v
                }
                Some(c) if c.is_ascii_digit() || c == '.' => {
                    let start = self.i;
                    while self.peek().is_some_and(|c| c.is_ascii_digit() || c == '.') {
                        self.i += 1;
                    }
                    let s: String = self.t[start..self.i].iter().collect();
                    s.parse().map_err(|_| format!("bad number '{s}'"))?
                }
                Some(c) => return Err(format!("unexpected '{c}' at position {}", self.i)),
                None => return Err("unexpected end of expression".into()),
            };
            self.depth -= 1;
            Ok(v)
        }
    }
}
