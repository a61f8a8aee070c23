//! What a provider sends back: stream events, usage, stop reasons, and a folded response.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::{ContentBlock, Message, Reasoning, Role, ToolInput, ToolUse};

/// One event of a streamed model response, normalized across providers.
///
/// A provider emits tool calls as `ToolCallStart`, any number of `ToolCallDelta`, then exactly one
/// `ToolCallEnd` with the parsed call; a stream that dies before `ToolCallEnd` yields an error,
/// never a half-parsed call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum StreamEvent {
    /// More answer text.
    TextDelta {
        /// The new text.
        text: String,
    },
    /// More readable reasoning text (display only).
    ReasoningDelta {
        /// The new text.
        text: String,
    },
    /// A finished reasoning block to keep in history.
    Reasoning(Reasoning),
    /// A tool call begins.
    ToolCallStart {
        /// Position of the call within the response, as the provider numbers it.
        index: u32,
        /// Call id.
        id: String,
        /// Tool name.
        name: String,
    },
    /// A fragment of a tool call's argument text.
    ToolCallDelta {
        /// Position of the call, as in `ToolCallStart`.
        index: u32,
        /// The fragment.
        arguments: String,
    },
    /// A tool call is complete.
    ToolCallEnd {
        /// Position of the call, as in `ToolCallStart`.
        index: u32,
        /// The full call, arguments parsed or flagged invalid.
        call: ToolUse,
    },
    /// Token usage so far; the last one of a response is its total.
    Usage(Usage),
    /// Which response this is, as the provider names it: its id and the model that actually
    /// answered (a dated snapshot of the requested alias, say). Either may be absent; later
    /// values replace earlier ones.
    ResponseInfo {
        /// The provider's id of the response (`chatcmpl-…`, `resp_…`, `msg_…`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<String>,
        /// The model that answered.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        model: Option<String>,
    },
    /// The response ended.
    Stop {
        /// Why it ended.
        reason: StopReason,
    },
}

/// Token usage of one response.
///
/// `input_tokens` counts every prompt token, cached or not; `cache_read_tokens` and
/// `cache_write_tokens` are the parts of it read from and written to the provider's prompt cache.
/// (Anthropic reports the three parts separately; OpenAI reports the total and the cached part.)
/// Likewise `output_tokens` counts every generated token and `reasoning_tokens` is the part a
/// reasoning model spent thinking (reported by OpenAI; 0 where a provider does not say).
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(default)]
pub struct Usage {
    /// All prompt tokens, including cache reads and writes.
    pub input_tokens: u64,
    /// Generated tokens.
    pub output_tokens: u64,
    /// Prompt tokens served from the cache.
    pub cache_read_tokens: u64,
    /// Prompt tokens written to the cache.
    pub cache_write_tokens: u64,
    /// Generated tokens spent on reasoning (part of `output_tokens`).
    #[serde(skip_serializing_if = "is_zero")]
    pub reasoning_tokens: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Usage {
    /// Adds another usage to this one.
    pub fn add(&mut self, other: &Usage) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.cache_read_tokens += other.cache_read_tokens;
        self.cache_write_tokens += other.cache_write_tokens;
        self.reasoning_tokens += other.reasoning_tokens;
    }

    /// Prompt tokens neither read from nor written to the cache.
    pub fn uncached_input_tokens(&self) -> u64 {
        self.input_tokens.saturating_sub(self.cache_read_tokens + self.cache_write_tokens)
    }
}

/// Why a response ended.
///
/// Serialized as a snake_case string; unknown provider reasons are kept in `Other`.
///
/// ```
/// use tackle_protocol::StopReason;
/// assert_eq!(StopReason::from_wire("tool_use"), StopReason::ToolUse);
/// assert_eq!(StopReason::from_wire("new_reason"), StopReason::Other("new_reason".into()));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum StopReason {
    /// The model finished its turn.
    #[default]
    EndTurn,
    /// The model wants tool results.
    ToolUse,
    /// The output token limit was hit.
    MaxTokens,
    /// A stop sequence was generated.
    StopSequence,
    /// The model declined to answer.
    Refusal,
    /// The provider paused a long turn; send the response back to continue.
    Pause,
    /// The prompt did not fit the model's context window.
    ContextExceeded,
    /// A reason Tackle does not know.
    Other(String),
}

impl StopReason {
    /// The canonical snake_case name.
    pub fn as_str(&self) -> &str {
        match self {
            Self::EndTurn => "end_turn",
            Self::ToolUse => "tool_use",
            Self::MaxTokens => "max_tokens",
            Self::StopSequence => "stop_sequence",
            Self::Refusal => "refusal",
            Self::Pause => "pause",
            Self::ContextExceeded => "context_exceeded",
            Self::Other(s) => s,
        }
    }

    /// Parses a canonical name; anything else becomes `Other`.
    pub fn from_wire(s: &str) -> Self {
        match s {
            "end_turn" => Self::EndTurn,
            "tool_use" => Self::ToolUse,
            "max_tokens" => Self::MaxTokens,
            "stop_sequence" => Self::StopSequence,
            "refusal" => Self::Refusal,
            "pause" => Self::Pause,
            "context_exceeded" => Self::ContextExceeded,
            other => Self::Other(other.to_owned()),
        }
    }
}

impl fmt::Display for StopReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for StopReason {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for StopReason {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Ok(Self::from_wire(&s))
    }
}

/// A complete model response.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ModelResponse {
    /// Content blocks in the order the model produced them.
    pub content: Vec<ContentBlock>,
    /// Total usage.
    pub usage: Usage,
    /// Why the response ended.
    pub stop_reason: StopReason,
    /// The provider's id of the response, when it gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The model that answered, as the provider reports it (may differ from the requested one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

impl ModelResponse {
    /// The response as an assistant message for the conversation history.
    pub fn into_message(self) -> Message {
        Message { role: Role::Assistant, content: self.content }
    }

    /// Tool calls of the response, in order.
    pub fn tool_uses(&self) -> impl Iterator<Item = &ToolUse> {
        self.content.iter().filter_map(|b| match b {
            ContentBlock::ToolUse(u) => Some(u),
            _ => None,
        })
    }

    /// The concatenated answer text.
    pub fn text(&self) -> String {
        let mut out = String::new();
        for block in &self.content {
            if let ContentBlock::Text { text } = block {
                out.push_str(text);
            }
        }
        out
    }
}

/// Folds [`StreamEvent`]s into a [`ModelResponse`].
///
/// ```
/// use tackle_protocol::{ResponseAccumulator, StreamEvent, StopReason};
/// let mut acc = ResponseAccumulator::default();
/// acc.push(&StreamEvent::TextDelta { text: "Hel".into() });
/// acc.push(&StreamEvent::TextDelta { text: "lo".into() });
/// acc.push(&StreamEvent::Stop { reason: StopReason::EndTurn });
/// let response = acc.finish();
/// assert_eq!(response.text(), "Hello");
/// ```
#[derive(Debug, Default)]
pub struct ResponseAccumulator {
    response: ModelResponse,
    /// Argument text of calls that started but did not end, by index.
    pending: BTreeMap<u32, (String, String, String)>,
    saw_stop: bool,
}

impl ResponseAccumulator {
    /// Applies one event.
    pub fn push(&mut self, event: &StreamEvent) {
        let content = &mut self.response.content;
        match event {
            StreamEvent::TextDelta { text } => match content.last_mut() {
                Some(ContentBlock::Text { text: last }) => last.push_str(text),
                _ => content.push(ContentBlock::text(text.clone())),
            },
            StreamEvent::ReasoningDelta { .. } => {}
            StreamEvent::Reasoning(r) => content.push(ContentBlock::Reasoning(r.clone())),
            StreamEvent::ToolCallStart { index, id, name } => {
                self.pending.insert(*index, (id.clone(), name.clone(), String::new()));
            }
            StreamEvent::ToolCallDelta { index, arguments } => {
                if let Some((_, _, args)) = self.pending.get_mut(index) {
                    args.push_str(arguments);
                }
            }
            StreamEvent::ToolCallEnd { index, call } => {
                self.pending.remove(index);
                content.push(ContentBlock::ToolUse(call.clone()));
            }
            StreamEvent::Usage(u) => self.response.usage = *u,
            StreamEvent::ResponseInfo { id, model } => {
                if id.is_some() {
                    self.response.id.clone_from(id);
                }
                if model.is_some() {
                    self.response.model.clone_from(model);
                }
            }
            StreamEvent::Stop { reason } => {
                self.response.stop_reason = reason.clone();
                self.saw_stop = true;
            }
        }
    }

    /// Whether a `Stop` event was seen.
    pub fn is_complete(&self) -> bool {
        self.saw_stop
    }

    /// The response so far. A call that started but never ended (a provider that skipped the end
    /// event) is closed with the argument text received, parsed or flagged invalid, so the model
    /// is told what happened instead of losing the call.
    pub fn finish(mut self) -> ModelResponse {
        for (_, (id, name, args)) in std::mem::take(&mut self.pending) {
            self.response.content.push(ContentBlock::ToolUse(ToolUse {
                id: id.into(),
                name,
                input: ToolInput::parse(&args),
            }));
        }
        self.response
    }
}
