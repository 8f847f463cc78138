//! Attribute, span and metric names: the OpenTelemetry GenAI semantic conventions (v1.41), as
//! our own constants (the semconv crate marks its GenAI constants deprecated), and the
//! original's extra attributes under `hooks.`.

/// `gen_ai.operation.name`.
pub const GEN_AI_OPERATION_NAME: &str = "gen_ai.operation.name";
/// `gen_ai.agent.id`.
pub const GEN_AI_AGENT_ID: &str = "gen_ai.agent.id";
/// `gen_ai.agent.name`.
pub const GEN_AI_AGENT_NAME: &str = "gen_ai.agent.name";
/// `gen_ai.conversation.id` (the run id).
pub const GEN_AI_CONVERSATION_ID: &str = "gen_ai.conversation.id";
/// `gen_ai.request.model`.
pub const GEN_AI_REQUEST_MODEL: &str = "gen_ai.request.model";
/// `gen_ai.response.model`.
pub const GEN_AI_RESPONSE_MODEL: &str = "gen_ai.response.model";
/// `gen_ai.response.finish_reasons`.
pub const GEN_AI_RESPONSE_FINISH_REASONS: &str = "gen_ai.response.finish_reasons";
/// `gen_ai.usage.input_tokens`.
pub const GEN_AI_USAGE_INPUT_TOKENS: &str = "gen_ai.usage.input_tokens";
/// `gen_ai.usage.output_tokens`.
pub const GEN_AI_USAGE_OUTPUT_TOKENS: &str = "gen_ai.usage.output_tokens";
/// `gen_ai.tool.name`.
pub const GEN_AI_TOOL_NAME: &str = "gen_ai.tool.name";
/// `gen_ai.tool.call.id`.
pub const GEN_AI_TOOL_CALL_ID: &str = "gen_ai.tool.call.id";
/// `gen_ai.tool.type`.
pub const GEN_AI_TOOL_TYPE: &str = "gen_ai.tool.type";
/// `gen_ai.tool.call.arguments` (opt-in).
pub const GEN_AI_TOOL_CALL_ARGUMENTS: &str = "gen_ai.tool.call.arguments";
/// `gen_ai.tool.call.result` (opt-in).
pub const GEN_AI_TOOL_CALL_RESULT: &str = "gen_ai.tool.call.result";
/// `gen_ai.token.type`.
pub const GEN_AI_TOKEN_TYPE: &str = "gen_ai.token.type";
/// `error.type`.
pub const ERROR_TYPE: &str = "error.type";

/// `invoke_agent`.
pub const OP_INVOKE_AGENT: &str = "invoke_agent";
/// `chat`.
pub const OP_CHAT: &str = "chat";
/// `execute_tool`.
pub const OP_EXECUTE_TOOL: &str = "execute_tool";

/// `hooks.success`.
pub const HOOKS_SUCCESS: &str = "hooks.success";
/// `hooks.iterations`.
pub const HOOKS_ITERATIONS: &str = "hooks.iterations";
/// `hooks.iteration`.
pub const HOOKS_ITERATION: &str = "hooks.iteration";
/// `hooks.tool_calls`.
pub const HOOKS_TOOL_CALLS: &str = "hooks.tool_calls";
/// `hooks.errors`.
pub const HOOKS_ERRORS: &str = "hooks.errors";
/// `hooks.duration_ms`.
pub const HOOKS_DURATION_MS: &str = "hooks.duration_ms";
/// `hooks.cancelled`.
pub const HOOKS_CANCELLED: &str = "hooks.cancelled";
/// `hooks.attempt`.
pub const HOOKS_ATTEMPT: &str = "hooks.attempt";
/// `hooks.closed_by` — why the hook ended a span it found still open.
pub const HOOKS_CLOSED_BY: &str = "hooks.closed_by";

/// `gen_ai.client.operation.duration` (histogram, seconds).
pub const METRIC_OPERATION_DURATION: &str = "gen_ai.client.operation.duration";
/// Time from a streamed model call's start to its first piece, in seconds (the semantic
/// conventions' name; measured here by the client, so it includes the network).
pub const METRIC_TIME_TO_FIRST_TOKEN: &str = "gen_ai.server.time_to_first_token";
/// How many pieces a streamed reply came in (on its `chat` span).
pub const HOOKS_STREAM_CHUNKS: &str = "hooks.stream.chunks";
/// Milliseconds from a streamed model call's start to its first piece (on its `chat` span).
pub const HOOKS_TIME_TO_FIRST_TOKEN_MS: &str = "hooks.time_to_first_token_ms";
/// `gen_ai.client.token.usage` (histogram, `{token}`).
pub const METRIC_TOKEN_USAGE: &str = "gen_ai.client.token.usage";
/// `hooks.agent.invocations` (counter).
pub const METRIC_INVOCATIONS: &str = "hooks.agent.invocations";
/// `hooks.agent.iterations` (counter).
pub const METRIC_ITERATIONS: &str = "hooks.agent.iterations";
/// `hooks.tool.calls` (counter).
pub const METRIC_TOOL_CALLS: &str = "hooks.tool.calls";
/// `hooks.tool.errors` (counter).
pub const METRIC_TOOL_ERRORS: &str = "hooks.tool.errors";
/// `hooks.tool.duration` (histogram, seconds).
pub const METRIC_TOOL_DURATION: &str = "hooks.tool.duration";

/// The convention's bucket boundaries for `gen_ai.client.operation.duration`.
pub const DURATION_BUCKETS: [f64; 14] = [
    0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92,
];
/// The convention's bucket boundaries for `gen_ai.client.token.usage`.
pub const TOKEN_BUCKETS: [f64; 14] = [
    1.0, 4.0, 16.0, 64.0, 256.0, 1024.0, 4096.0, 16384.0, 65536.0, 262144.0, 1048576.0, 4194304.0,
    16777216.0, 67108864.0,
];

/// The run (or tool call) paused for a person's decision: not a failure.
pub const HOOKS_INTERRUPTED: &str = "hooks.interrupted";
/// How many calls a paused run waits on.
pub const HOOKS_INTERRUPTIONS: &str = "hooks.interruptions";
/// The run resumed after a pause (its root continues the paused root's trace).
pub const HOOKS_RESUMED: &str = "hooks.resumed";
/// How deep the run is nested (an agent run as a tool): 1 for a child of a top-level run. Set
/// on nested runs' `invoke_agent` spans and on their operation-duration metric.
pub const HOOKS_DEPTH: &str = "hooks.depth";
/// The run id of the run whose tool call started a nested run.
pub const HOOKS_PARENT_RUN_ID: &str = "hooks.parent_run_id";
