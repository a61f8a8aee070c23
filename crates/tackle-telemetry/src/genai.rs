//! Names of the GenAI spans the agent loop emits and of their attributes.
//!
//! The loop (`tackle-agent`) emits three kinds of `tracing` spans with the target [`TARGET`],
//! named and attributed after the OpenTelemetry GenAI semantic conventions:
//!
//! | span | OpenTelemetry name | kind | one per |
//! |---|---|---|---|
//! | [`INVOKE_AGENT`] | `invoke_agent {gen_ai.agent.name}` (`invoke_agent tackle`) | internal | turn |
//! | [`CHAT`] | `chat {gen_ai.request.model}` | client | model call |
//! | [`EXECUTE_TOOL`] | `execute_tool {gen_ai.tool.name}` | internal | tool call |
//!
//! Attribute keys are the conventions' (`gen_ai.*`, `error.type`); the few Tackle adds are under
//! `tackle.*`. Message content ([`INPUT_MESSAGES`], [`OUTPUT_MESSAGES`], [`TOOL_CALL_ARGUMENTS`],
//! [`TOOL_CALL_RESULT`]) is recorded only when the operator opts in.

/// The `tracing` target of every GenAI span and event.
pub const TARGET: &str = "gen_ai";

/// The span of one agent turn.
pub const INVOKE_AGENT: &str = "invoke_agent";
/// The span of one model call.
pub const CHAT: &str = "chat";
/// The span of one tool call.
pub const EXECUTE_TOOL: &str = "execute_tool";

/// `invoke_agent`, `chat` or `execute_tool`.
pub const OPERATION_NAME: &str = "gen_ai.operation.name";
/// The provider (`openai`, `anthropic`).
pub const PROVIDER_NAME: &str = "gen_ai.provider.name";
/// The model the request named.
pub const REQUEST_MODEL: &str = "gen_ai.request.model";
/// The output token limit of the request.
pub const REQUEST_MAX_TOKENS: &str = "gen_ai.request.max_tokens";
/// True: the response was streamed.
pub const REQUEST_STREAM: &str = "gen_ai.request.stream";
/// The model that answered, as the provider reported it.
pub const RESPONSE_MODEL: &str = "gen_ai.response.model";
/// The provider's id of the response.
pub const RESPONSE_ID: &str = "gen_ai.response.id";
/// Why the model stopped (a string array).
pub const RESPONSE_FINISH_REASONS: &str = "gen_ai.response.finish_reasons";
/// Seconds from sending the request to the first streamed chunk.
pub const RESPONSE_TIME_TO_FIRST_CHUNK: &str = "gen_ai.response.time_to_first_chunk";
/// The session id.
pub const CONVERSATION_ID: &str = "gen_ai.conversation.id";
/// Every prompt token, cached or not.
pub const USAGE_INPUT_TOKENS: &str = "gen_ai.usage.input_tokens";
/// Tokens generated.
pub const USAGE_OUTPUT_TOKENS: &str = "gen_ai.usage.output_tokens";
/// Prompt tokens read from the provider's cache (part of the input tokens).
pub const USAGE_CACHE_READ_INPUT_TOKENS: &str = "gen_ai.usage.cache_read.input_tokens";
/// Prompt tokens written to the provider's cache (part of the input tokens).
pub const USAGE_CACHE_CREATION_INPUT_TOKENS: &str = "gen_ai.usage.cache_creation.input_tokens";
/// The tool's name.
pub const TOOL_NAME: &str = "gen_ai.tool.name";
/// The id the model gave the call.
pub const TOOL_CALL_ID: &str = "gen_ai.tool.call.id";
/// `function`: tools run by Tackle on the model's behalf.
pub const TOOL_TYPE: &str = "gen_ai.tool.type";
/// The call's arguments (JSON; opt-in content).
pub const TOOL_CALL_ARGUMENTS: &str = "gen_ai.tool.call.arguments";
/// What the model saw of the call's result (opt-in content).
pub const TOOL_CALL_RESULT: &str = "gen_ai.tool.call.result";
/// Messages sent to the model (JSON; opt-in content).
pub const INPUT_MESSAGES: &str = "gen_ai.input.messages";
/// Messages the model answered (JSON; opt-in content).
pub const OUTPUT_MESSAGES: &str = "gen_ai.output.messages";
/// The class of error an operation ended with: a provider error kind (`rate_limited`,
/// `server`, `timeout`, ...), a tool error category (`timeout`, `denied`, ...), or `_OTHER`.
pub const ERROR_TYPE: &str = "error.type";

/// Steps of a turn, as its outcome reports them (a step whose model call failed counts).
pub const TURN_STEPS: &str = "tackle.turn.steps";
/// How a turn ended: `completed`, `max_steps`, `cancelled` or `failed`.
pub const TURN_END: &str = "tackle.turn.end";
/// How a tool call ended: `ok`, or the error category the model saw.
pub const TOOL_OUTCOME: &str = "tackle.tool.outcome";
