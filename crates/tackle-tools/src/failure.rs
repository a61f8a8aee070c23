//! Typed tool failures and their classification into envelope categories.

use std::fmt;
use std::io;

use tackle_protocol::{ErrorCategory, ToolError};

/// Why a tool call failed, as the tool reports it.
///
/// The executor turns it into the [`ToolError`] envelope the model sees. Prefer the typed
/// constructors; [`ToolFailure::from_message`] classifies free text by pattern as a last resort.
///
/// ```
/// use tackle_protocol::ErrorCategory;
/// use tackle_tools::ToolFailure;
/// let f = ToolFailure::not_found("no such file: notes.md").with_hint("call list_files first");
/// assert_eq!(f.category, ErrorCategory::NotFound);
/// let io = std::io::Error::from(std::io::ErrorKind::PermissionDenied);
/// assert_eq!(ToolFailure::from(io).category, ErrorCategory::Permission);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolFailure {
    /// Envelope category.
    pub category: ErrorCategory,
    /// What went wrong, for the model.
    pub message: String,
    /// What to do instead.
    pub hint: Option<String>,
    /// Overrides the category's default retryability.
    pub retryable: Option<bool>,
}

impl ToolFailure {
    /// A failure of the given category.
    pub fn new(category: ErrorCategory, message: impl Into<String>) -> Self {
        Self { category, message: message.into(), hint: None, retryable: None }
    }

    /// Arguments are wrong in a way the schema could not express.
    pub fn invalid_args(message: impl Into<String>) -> Self {
        Self::new(ErrorCategory::InvalidArgs, message)
    }

    /// The target does not exist.
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(ErrorCategory::NotFound, message)
    }

    /// Access refused (including paths outside the workspace).
    pub fn permission(message: impl Into<String>) -> Self {
        Self::new(ErrorCategory::Permission, message)
    }

    /// The state does not allow the call (e.g. a file changed, a match is ambiguous).
    pub fn conflict(message: impl Into<String>) -> Self {
        Self::new(ErrorCategory::Conflict, message)
    }

    /// A network failure.
    pub fn network(message: impl Into<String>) -> Self {
        Self::new(ErrorCategory::Network, message)
    }

    /// The call ran out of time.
    pub fn timeout(message: impl Into<String>) -> Self {
        Self::new(ErrorCategory::Timeout, message)
    }

    /// The call was refused by policy.
    pub fn denied(message: impl Into<String>) -> Self {
        Self::new(ErrorCategory::Denied, message)
    }

    /// An unexpected failure.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(ErrorCategory::Internal, message)
    }

    /// Adds a hint.
    pub fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }

    /// Overrides retryability.
    pub fn with_retryable(mut self, retryable: bool) -> Self {
        self.retryable = Some(retryable);
        self
    }

    /// Classifies free text by well-known patterns (errno names, common phrases). Use only when
    /// no typed error is available, e.g. for messages relayed from another process.
    ///
    /// ```
    /// use tackle_protocol::ErrorCategory;
    /// use tackle_tools::ToolFailure;
    /// assert_eq!(ToolFailure::from_message("ENOENT: open 'a.txt'").category, ErrorCategory::NotFound);
    /// assert_eq!(ToolFailure::from_message("connection reset by peer").category, ErrorCategory::Network);
    /// assert!(ToolFailure::from_message("ETIMEDOUT while calling api").is_retryable());
    /// ```
    pub fn from_message(message: impl Into<String>) -> Self {
        let message = message.into();
        let category = classify_message(&message);
        Self::new(category, message)
    }

    /// Whether the same call may succeed if tried again.
    pub fn is_retryable(&self) -> bool {
        self.retryable.unwrap_or_else(|| self.category.default_retryable())
    }

    /// The envelope the model sees for a call of `tool`.
    pub fn into_envelope(self, tool: &str) -> ToolError {
        let retryable = self.is_retryable();
        ToolError {
            tool: tool.to_owned(),
            category: self.category,
            retryable,
            message: self.message,
            hint: self.hint,
        }
    }
}

impl fmt::Display for ToolFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.category, self.message)
    }
}

impl std::error::Error for ToolFailure {}

impl From<io::Error> for ToolFailure {
    fn from(err: io::Error) -> Self {
        use io::ErrorKind as K;
        let category = match err.kind() {
            K::NotFound => ErrorCategory::NotFound,
            K::PermissionDenied | K::ReadOnlyFilesystem => ErrorCategory::Permission,
            K::TimedOut => ErrorCategory::Timeout,
            K::ConnectionRefused
            | K::ConnectionReset
            | K::ConnectionAborted
            | K::NotConnected
            | K::BrokenPipe
            | K::HostUnreachable
            | K::NetworkUnreachable
            | K::NetworkDown
            | K::AddrNotAvailable => ErrorCategory::Network,
            K::AlreadyExists | K::DirectoryNotEmpty | K::ResourceBusy | K::ExecutableFileBusy => {
                ErrorCategory::Conflict
            }
            K::InvalidInput | K::InvalidFilename | K::IsADirectory | K::NotADirectory => {
                ErrorCategory::InvalidArgs
            }
            K::Interrupted => ErrorCategory::Interrupted,
            _ => classify_message(&err.to_string()),
        };
        Self::new(category, err.to_string())
    }
}

/// Pattern table for [`ToolFailure::from_message`]: first match wins, compared in lowercase.
const PATTERNS: &[(&[&str], ErrorCategory)] = &[
    (&["enoent", "no such file", "not found", "does not exist"], ErrorCategory::NotFound),
    (
        &["eacces", "eperm", "permission denied", "operation not permitted", "forbidden"],
        ErrorCategory::Permission,
    ),
    (&["rate limit", "too many requests", "429"], ErrorCategory::RateLimited),
    (
        &[
            "etimedout",
            "timed out",
            "timeout",
            "econnreset",
            "connection reset",
            "econnrefused",
            "connection refused",
            "broken pipe",
            "epipe",
            "network",
            "enotfound",
            "dns",
        ],
        ErrorCategory::Network,
    ),
    (&["eexist", "already exists", "conflict", "ebusy"], ErrorCategory::Conflict),
    (&["invalid argument", "einval"], ErrorCategory::InvalidArgs),
];

fn classify_message(message: &str) -> ErrorCategory {
    let lower = message.to_lowercase();
    PATTERNS
        .iter()
        .find(|(needles, _)| needles.iter().any(|n| lower.contains(n)))
        .map(|(_, category)| *category)
        .unwrap_or(ErrorCategory::Internal)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_classify_common_messages() {
        let cases = [
            ("ENOENT: no such file or directory", ErrorCategory::NotFound, false),
            ("EACCES: permission denied, open '/etc/shadow'", ErrorCategory::Permission, false),
            ("request timed out after 30s", ErrorCategory::Network, true),
            ("read ECONNRESET", ErrorCategory::Network, true),
            ("HTTP 429 Too Many Requests", ErrorCategory::RateLimited, true),
            ("EEXIST: file already exists", ErrorCategory::Conflict, false),
            ("something odd happened", ErrorCategory::Internal, false),
        ];
        for (msg, category, retryable) in cases {
            let f = ToolFailure::from_message(msg);
            assert_eq!(f.category, category, "{msg}");
            assert_eq!(f.is_retryable(), retryable, "{msg}");
        }
    }

    #[test]
    fn io_errors_map_by_kind_before_text() {
        let e = io::Error::new(io::ErrorKind::NotFound, "permission denied (but really missing)");
        assert_eq!(ToolFailure::from(e).category, ErrorCategory::NotFound);
        let e = io::Error::other("EACCES");
        assert_eq!(ToolFailure::from(e).category, ErrorCategory::Permission);
    }

    #[test]
    fn envelope_keeps_hint_and_override() {
        let env = ToolFailure::conflict("file changed").with_hint("read it again").with_retryable(true);
        let env = env.into_envelope("edit_file");
        assert_eq!(env.tool, "edit_file");
        assert!(env.retryable);
        assert_eq!(env.hint.as_deref(), Some("read it again"));
    }
}
