//! Tool definitions and tool choice.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A tool as the model sees it.
///
/// ```
/// use tackle_protocol::{ToolAnnotations, ToolSpec};
/// let spec = ToolSpec::new("echo", "Echo the text back.", serde_json::json!({"type": "object"}))
///     .with_annotations(ToolAnnotations::read_only());
/// assert!(spec.annotations.read_only);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// Unique name, matching `^[a-zA-Z0-9_-]{1,64}$` (see [`is_valid_tool_name`]).
    pub name: String,
    /// What the tool does and when to use it.
    pub description: String,
    /// JSON Schema of the arguments object.
    pub input_schema: Value,
    /// Behaviour hints used by hooks and the executor; never sent to providers.
    #[serde(default)]
    pub annotations: ToolAnnotations,
    /// Loaded on demand: the definition is sent (so the tool list never changes) but stays out
    /// of the model's context until a `tool_search` result references it (Anthropic
    /// `defer_loading`). Only set by native deferral.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub defer_loading: bool,
}

impl ToolSpec {
    /// A spec with default annotations.
    pub fn new(name: impl Into<String>, description: impl Into<String>, input_schema: Value) -> Self {
        Self {
            name: name.into(),
            description: description.into(),
            input_schema,
            annotations: ToolAnnotations::default(),
            defer_loading: false,
        }
    }

    /// The same definition, loaded on demand (see [`ToolSpec::defer_loading`]).
    pub fn deferred(mut self) -> Self {
        self.defer_loading = true;
        self
    }

    /// Replaces the annotations.
    pub fn with_annotations(mut self, annotations: ToolAnnotations) -> Self {
        self.annotations = annotations;
        self
    }
}

/// Behaviour hints of a tool, as in MCP's tool annotations.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(default)]
pub struct ToolAnnotations {
    /// Does not change its environment.
    pub read_only: bool,
    /// May destroy data or make changes that are hard to undo; defaults to confirmation.
    pub destructive: bool,
    /// Calling twice with the same arguments has no further effect.
    pub idempotent: bool,
    /// Reaches outside the workspace (network, external systems).
    pub open_world: bool,
    /// Changes only the session's own state (its todo list, loaded skills, found tools, the
    /// compaction of its context), nothing in the workspace or beyond: it runs in plan mode
    /// like a read-only tool. Declared by the tool in code, so not serialized: the serialized
    /// spec (and with it the catalog's fingerprint) stays what it was before the flag existed.
    #[serde(skip)]
    pub session_only: bool,
    /// Its output is already sized for the context window (pages of a stored output, search
    /// answers within a token budget): it is never offloaded, so the model sees it whole. Not
    /// serialized, like [`ToolAnnotations::session_only`].
    #[serde(skip)]
    pub sized_output: bool,
    /// Each call works apart from the step's other calls (a sub-agent runs in its own session):
    /// calls of such tools run concurrently with each other, whatever else they change. Not
    /// serialized, like [`ToolAnnotations::session_only`].
    #[serde(skip)]
    pub concurrent: bool,
}

impl ToolAnnotations {
    /// A read-only, idempotent, closed-world tool.
    pub fn read_only() -> Self {
        Self { read_only: true, idempotent: true, ..Self::default() }
    }

    /// A tool that changes only the session's own state (see [`ToolAnnotations::session_only`]).
    pub fn session_only() -> Self {
        Self { session_only: true, ..Self::default() }
    }

    /// True when calls may run concurrently with other calls of the same step.
    pub fn parallel_safe(&self) -> bool {
        self.read_only || (self.idempotent && !self.destructive)
    }
}

/// How the model may use tools in one request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ToolChoice {
    /// The model decides.
    Auto,
    /// No tool calls; tool definitions are still sent unchanged.
    None,
    /// At least one tool call.
    Required,
    /// Exactly this tool.
    Named {
        /// Tool name.
        name: String,
    },
    /// Only these tools may be called; definitions of the others are still sent unchanged.
    Allowed {
        /// The allowed tool names, in catalog order.
        tools: Vec<String>,
        /// Whether a call is optional or required.
        mode: AllowedToolsMode,
    },
}

/// Mode of [`ToolChoice::Allowed`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AllowedToolsMode {
    /// The model may answer without calling a tool.
    Auto,
    /// The model must call one of the allowed tools.
    Required,
}

/// Whether `name` is a tool name accepted by every supported provider: `^[a-zA-Z0-9_-]{1,64}$`.
///
/// ```
/// use tackle_protocol::is_valid_tool_name;
/// assert!(is_valid_tool_name("read_file"));
/// assert!(!is_valid_tool_name("file.read"));
/// assert!(!is_valid_tool_name(""));
/// ```
pub fn is_valid_tool_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}
