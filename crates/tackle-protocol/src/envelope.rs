//! The error envelope a model sees when a tool call fails.

use std::fmt;

use serde::{Deserialize, Serialize};

/// A tool failure, in the stable JSON shape sent to the model as an error result.
///
/// ```
/// use tackle_protocol::{ErrorCategory, ToolError};
/// let e = ToolError::new("read_file", ErrorCategory::NotFound, "no such file: a.txt")
///     .with_hint("list_files shows what exists");
/// assert!(!e.retryable);
/// assert_eq!(
///     e.to_json(),
///     r#"{"tool":"read_file","category":"not_found","retryable":false,"message":"no such file: a.txt","hint":"list_files shows what exists"}"#
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ToolError {
    /// The tool the model called (as it spelled it).
    pub tool: String,
    /// What kind of failure.
    pub category: ErrorCategory,
    /// Whether the same call may succeed if tried again unchanged.
    pub retryable: bool,
    /// What went wrong, for the model.
    pub message: String,
    /// What to do instead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
}

impl ToolError {
    /// An envelope whose `retryable` is the category's default.
    pub fn new(tool: impl Into<String>, category: ErrorCategory, message: impl Into<String>) -> Self {
        Self {
            tool: tool.into(),
            category,
            retryable: category.default_retryable(),
            message: message.into(),
            hint: None,
        }
    }

    /// Adds a hint.
    pub fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }

    /// Overrides `retryable`.
    pub fn with_retryable(mut self, retryable: bool) -> Self {
        self.retryable = retryable;
        self
    }

    /// The compact JSON the model reads.
    pub fn to_json(&self) -> String {
        // Serializing a struct of strings and bools cannot fail; keep a readable fallback anyway.
        serde_json::to_string(self).unwrap_or_else(|_| format!("{{\"message\":{:?}}}", self.message))
    }
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}: {}", self.tool, self.category, self.message)
    }
}

/// Category of a tool failure. Serialized in snake_case; the set is part of the model contract.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum ErrorCategory {
    /// Arguments failed validation against the tool's schema or its own checks.
    InvalidArgs,
    /// No tool of that name exists.
    UnknownTool,
    /// The tool exists but is not active in this step (masked, or its skill is not active).
    InactiveTool,
    /// A hook or a person refused the call.
    Denied,
    /// The call ran past its time limit.
    Timeout,
    /// A file, resource or record does not exist.
    NotFound,
    /// The operating system or a service refused access, or a path left the workspace.
    Permission,
    /// A connection failed or was reset.
    Network,
    /// A service asked to slow down.
    RateLimited,
    /// The target changed under the call, or the state does not allow it.
    Conflict,
    /// A tool source (e.g. an MCP server) is down; it is being reconnected.
    Unavailable,
    /// Stored data the call refers to has expired.
    Expired,
    /// The command hit a resource limit of the sandbox (memory, processes, CPU time, file size).
    ResourceLimit,
    /// The call was interrupted (cancelled, or the process stopped) before it finished.
    Interrupted,
    /// A bug or an unexpected failure in the tool.
    Internal,
}

impl ErrorCategory {
    /// Every category, in documentation order.
    pub const ALL: [ErrorCategory; 15] = [
        Self::InvalidArgs,
        Self::UnknownTool,
        Self::InactiveTool,
        Self::Denied,
        Self::Timeout,
        Self::NotFound,
        Self::Permission,
        Self::Network,
        Self::RateLimited,
        Self::Conflict,
        Self::Unavailable,
        Self::Expired,
        Self::ResourceLimit,
        Self::Interrupted,
        Self::Internal,
    ];

    /// Whether failures of this kind are worth retrying unchanged by default.
    pub fn default_retryable(self) -> bool {
        matches!(
            self,
            Self::Timeout | Self::Network | Self::RateLimited | Self::Unavailable | Self::Interrupted
        )
    }

    /// The snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::InvalidArgs => "invalid_args",
            Self::UnknownTool => "unknown_tool",
            Self::InactiveTool => "inactive_tool",
            Self::Denied => "denied",
            Self::Timeout => "timeout",
            Self::NotFound => "not_found",
            Self::Permission => "permission",
            Self::Network => "network",
            Self::RateLimited => "rate_limited",
            Self::Conflict => "conflict",
            Self::Unavailable => "unavailable",
            Self::Expired => "expired",
            Self::ResourceLimit => "resource_limit",
            Self::Interrupted => "interrupted",
            Self::Internal => "internal",
        }
    }
}

impl fmt::Display for ErrorCategory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
