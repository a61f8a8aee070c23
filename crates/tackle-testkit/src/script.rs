//! Scripts: what the fake model answers, turn by turn.

use serde::{Deserialize, Serialize};
use tackle_protocol::{StopReason, Usage};

/// One scripted tool call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScriptedCall {
    /// Call id; generated per wire format when absent (`call_…`, `toolu_…`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Tool name.
    pub name: String,
    /// Argument text, sent as is (may be invalid JSON on purpose).
    pub arguments: String,
}

/// One answer of the model.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Turn {
    /// Answer text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Reasoning (an Anthropic thinking block with a signature; other formats ignore it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<String>,
    /// Tool calls, in order.
    pub tool_calls: Vec<ScriptedCall>,
    /// Usage reported with the answer.
    pub usage: Usage,
    /// Stop reason; `tool_use` when there are calls, else `end_turn`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stop: Option<StopReason>,
}

impl Turn {
    /// A text answer.
    ///
    /// ```
    /// use tackle_testkit::Turn;
    /// let t = Turn::text("Done.").with_call("read_file", r#"{"path":"a"}"#);
    /// assert_eq!(t.tool_calls.len(), 1);
    /// ```
    pub fn text(text: impl Into<String>) -> Self {
        Self { text: Some(text.into()), ..Self::default() }
    }

    /// An answer that only calls one tool.
    pub fn call(name: impl Into<String>, arguments: impl Into<String>) -> Self {
        Self::default().with_call(name, arguments)
    }

    /// Adds a tool call.
    pub fn with_call(mut self, name: impl Into<String>, arguments: impl Into<String>) -> Self {
        self.tool_calls.push(ScriptedCall { id: None, name: name.into(), arguments: arguments.into() });
        self
    }

    /// Adds a tool call with a fixed id.
    pub fn with_call_id(
        mut self,
        id: impl Into<String>,
        name: impl Into<String>,
        arguments: impl Into<String>,
    ) -> Self {
        self.tool_calls.push(ScriptedCall {
            id: Some(id.into()),
            name: name.into(),
            arguments: arguments.into(),
        });
        self
    }

    /// Sets the usage.
    pub fn with_usage(mut self, usage: Usage) -> Self {
        self.usage = usage;
        self
    }

    /// Sets reasoning text.
    pub fn with_reasoning(mut self, text: impl Into<String>) -> Self {
        self.reasoning = Some(text.into());
        self
    }

    /// Sets the stop reason.
    pub fn with_stop(mut self, stop: StopReason) -> Self {
        self.stop = Some(stop);
        self
    }

    /// The stop reason to report.
    pub fn stop_reason(&self) -> StopReason {
        self.stop.clone().unwrap_or(if self.tool_calls.is_empty() {
            StopReason::EndTurn
        } else {
            StopReason::ToolUse
        })
    }
}

/// How requests are matched to turns.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ScriptMode {
    /// The n-th model request gets turn n.
    #[default]
    Sequential,
    /// A request gets the turn after the tool calls its tool results answer: turn k when the
    /// request carries as many tool results as turns 0..k made calls. Repeated runs (and
    /// retries) see the same traffic.
    Stateless,
    /// A tool loop of any length, for benchmarks: the request's model name ends in `-steps-N`;
    /// a request carrying k < N tool results gets the first turn, later ones the second, with
    /// `{k}` in their text, call ids and arguments replaced by k. Stateless like
    /// [`ScriptMode::Stateless`], so clients running at once see the same traffic.
    Loop,
    /// Like [`ScriptMode::Stateless`], counting only the tool results after the request's last
    /// user message: every user message of a conversation replays the script from its first
    /// turn (`tackle demo --serve`, where a person chats on for as long as they like).
    Replay,
}

/// Suffix of a model name that sets the length of a [`ScriptMode::Loop`].
pub const LOOP_STEPS_SUFFIX: &str = "-steps-";

/// The placeholder a [`ScriptMode::Loop`] replaces by the number of tool results so far.
pub const LOOP_PLACEHOLDER: &str = "{k}";

/// A script of turns.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Script {
    /// The turns.
    pub turns: Vec<Turn>,
    /// Matching of requests to turns.
    pub mode: ScriptMode,
    /// Size of streamed text and argument fragments, in characters.
    pub chunk_chars: usize,
    /// Model name reported (defaults to the request's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Delay before every answer, in milliseconds (simulated model latency).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latency_ms: Option<u64>,
    /// Report prompt usage from a simulated prompt cache instead of the scripted numbers (see
    /// [`crate::SimulatedCache`]).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub simulate_cache: bool,
    /// Responses stream: each output item only as `response.output_item.done`, without its
    /// `added` event or deltas (as some compatible servers and proxies send it).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub whole_items: bool,
}

impl Default for Script {
    fn default() -> Self {
        Self {
            turns: Vec::new(),
            mode: ScriptMode::Sequential,
            chunk_chars: 16,
            model: None,
            latency_ms: None,
            simulate_cache: false,
            whole_items: false,
        }
    }
}

impl Script {
    /// A sequential script of `turns`.
    pub fn new(turns: Vec<Turn>) -> Self {
        Self { turns, ..Self::default() }
    }

    /// A stateless script of `turns`.
    pub fn stateless(turns: Vec<Turn>) -> Self {
        Self { turns, mode: ScriptMode::Stateless, ..Self::default() }
    }

    /// The answer of a [`ScriptMode::Loop`] script to a request for `model` carrying
    /// `tool_results` results, and the index that makes its ids unique; an error message that
    /// says what to fix when the script or the model name does not fit the mode.
    pub(crate) fn loop_turn(&self, model: &str, tool_results: usize) -> Result<(Turn, usize), String> {
        let [step, last] = self.turns.as_slice() else {
            return Err(format!(
                "a loop script has exactly two turns (the step, then the final answer); this one has {}",
                self.turns.len()
            ));
        };
        let steps = model
            .rsplit_once(LOOP_STEPS_SUFFIX)
            .and_then(|(_, n)| n.parse::<usize>().ok())
            .ok_or_else(|| {
                format!("the loop script needs a model named like `fake{LOOP_STEPS_SUFFIX}5`, got {model:?}")
            })?;
        let k = tool_results.to_string();
        let fill = |text: &str| text.replace(LOOP_PLACEHOLDER, &k);
        let template = if tool_results < steps { step } else { last };
        let mut turn = template.clone();
        turn.text = turn.text.as_deref().map(fill);
        for call in &mut turn.tool_calls {
            call.arguments = fill(&call.arguments);
            call.id = call.id.as_deref().map(fill);
        }
        Ok((turn, tool_results))
    }

    /// The turn answering a request that carries `tool_results` results (stateless mode).
    pub(crate) fn stateless_index(&self, tool_results: usize) -> Option<usize> {
        let mut calls = 0;
        for (i, turn) in self.turns.iter().enumerate() {
            if calls == tool_results {
                return Some(i);
            }
            calls += turn.tool_calls.len();
        }
        None
    }
}

/// Splits `text` into pieces of at most `n` characters (never splitting a character).
pub(crate) fn chunks(text: &str, n: usize) -> Vec<String> {
    let n = n.max(1);
    let chars: Vec<char> = text.chars().collect();
    chars.chunks(n).map(|c| c.iter().collect()).collect()
}
