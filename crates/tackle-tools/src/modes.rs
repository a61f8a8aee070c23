//! Permission modes: how much a session may do without asking, chosen per session and
//! enforced by the executor.
//!
//! - `default`: the hook rules decide (destructive tools ask).
//! - `accept-edits`: file edits run without asking; the shell and every other tool that asks
//!   still asks.
//! - `plan`: only tools that read run (plus the agent's own bookkeeping tools); the model
//!   investigates and ends with a plan through `propose_plan`, which the user approves (the mode
//!   becomes `default`) or refines.
//! - `bypass`: nothing asks. Refused unless the sandbox is enforced.
//!
//! Deny rules (`[[hooks]] action = "deny"`) and hooks that deny still deny in every mode.

use std::fmt;
use std::str::FromStr;

use globset::{Glob, GlobSet, GlobSetBuilder};
use serde::{Deserialize, Serialize};
use tackle_protocol::ToolSpec;

/// A session's permission mode. Written `default`, `accept-edits`, `plan` or `bypass`; Claude
/// Code's names (`acceptEdits`, `bypassPermissions`) are read too.
///
/// ```
/// use tackle_tools::PermissionMode;
/// let mode: PermissionMode = "accept-edits".parse().unwrap();
/// assert_eq!(mode, PermissionMode::AcceptEdits);
/// assert_eq!(mode.claude_name(), "acceptEdits");
/// assert_eq!("bypassPermissions".parse::<PermissionMode>().unwrap(), PermissionMode::Bypass);
/// // Shift-Tab in `tackle chat` cycles default → accept-edits → plan → default.
/// assert_eq!(PermissionMode::Plan.next(), PermissionMode::Default);
/// assert!("yolo".parse::<PermissionMode>().unwrap_err().to_string().contains("default, accept-edits, plan or bypass"));
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum PermissionMode {
    /// The hook rules decide.
    #[default]
    Default,
    /// File edits run without asking.
    AcceptEdits,
    /// Read-only tools only, until the user approves a plan.
    Plan,
    /// Nothing asks (only with an enforced sandbox).
    Bypass,
}

impl PermissionMode {
    /// Every mode, in the order Shift-Tab cycles through the first three.
    pub const ALL: [PermissionMode; 4] = [Self::Default, Self::AcceptEdits, Self::Plan, Self::Bypass];

    /// The name in `tackle.toml`, flags and the API.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Default => "default",
            Self::AcceptEdits => "accept-edits",
            Self::Plan => "plan",
            Self::Bypass => "bypass",
        }
    }

    /// The name Claude Code's hooks receive as `permission_mode`.
    pub fn claude_name(self) -> &'static str {
        match self {
            Self::Default => "default",
            Self::AcceptEdits => "acceptEdits",
            Self::Plan => "plan",
            Self::Bypass => "bypassPermissions",
        }
    }

    /// The next mode of the Shift-Tab cycle (default → accept-edits → plan → default; bypass is
    /// only ever chosen by name).
    pub fn next(self) -> Self {
        match self {
            Self::Default => Self::AcceptEdits,
            Self::AcceptEdits => Self::Plan,
            Self::Plan | Self::Bypass => Self::Default,
        }
    }
}

impl fmt::Display for PermissionMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a permission mode or the rules of the modes cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ModeError {
    /// The name of no mode.
    #[error("permission mode {0:?} is not default, accept-edits, plan or bypass")]
    Unknown(String),
    /// An edit-tool glob (`[permissions] edit_tools`) that does not parse.
    #[error("invalid edit-tool glob {glob:?}: {reason}")]
    EditGlob {
        /// The glob as written.
        glob: String,
        /// What the glob parser said.
        reason: String,
    },
    /// The edit-tool globs together cannot be compiled.
    #[error("invalid edit-tool globs: {0}")]
    EditGlobs(String),
}

impl FromStr for PermissionMode {
    type Err = ModeError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text.trim() {
            "default" => Ok(Self::Default),
            "accept-edits" | "acceptEdits" | "accept_edits" => Ok(Self::AcceptEdits),
            "plan" => Ok(Self::Plan),
            "bypass" | "bypassPermissions" => Ok(Self::Bypass),
            other => Err(ModeError::Unknown(other.to_owned())),
        }
    }
}

impl TryFrom<String> for PermissionMode {
    type Error = ModeError;

    fn try_from(text: String) -> Result<Self, Self::Error> {
        text.parse()
    }
}

impl From<PermissionMode> for String {
    fn from(mode: PermissionMode) -> Self {
        mode.as_str().to_owned()
    }
}

/// Which tools the modes treat specially: what counts as a file edit (`accept-edits`) and what
/// may run in `plan` mode besides read-only tools.
///
/// ```
/// use serde_json::json;
/// use tackle_protocol::{ToolAnnotations, ToolSpec};
/// use tackle_tools::ModeRules;
/// let rules = ModeRules::new(&["write_file", "edit_file"], &["todo", "propose_plan"]).unwrap();
/// let write = ToolSpec::new("write_file", "d", json!({}));
/// let shell = ToolSpec::new("shell", "d", json!({}));
/// let read = ToolSpec::new("read_file", "d", json!({})).with_annotations(ToolAnnotations::read_only());
/// assert!(rules.is_edit(&write) && !rules.is_edit(&shell));
/// assert!(rules.runs_in_plan(&read) && !rules.runs_in_plan(&write));
/// assert!(rules.runs_in_plan(&ToolSpec::new("todo", "d", json!({}))));
/// ```
#[derive(Debug, Clone)]
pub struct ModeRules {
    edit_globs: Vec<String>,
    edits: GlobSet,
    plan_tools: Vec<String>,
    plan_approval: Option<String>,
}

impl Default for ModeRules {
    /// Edits: the builtin `write_file` and `edit_file`; plan mode: read-only tools only.
    fn default() -> Self {
        Self::new(&DEFAULT_EDIT_TOOLS, &[] as &[&str]).unwrap_or_else(|_| Self {
            edit_globs: Vec::new(),
            edits: GlobSet::empty(),
            plan_tools: Vec::new(),
            plan_approval: None,
        })
    }
}

/// The builtin tools that edit files.
pub const DEFAULT_EDIT_TOOLS: [&str; 2] = ["write_file", "edit_file"];

impl ModeRules {
    /// Rules from globs of edit tools and the names (besides read-only tools) plan mode runs.
    pub fn new(edit_tools: &[impl AsRef<str>], plan_tools: &[impl AsRef<str>]) -> Result<Self, ModeError> {
        let mut builder = GlobSetBuilder::new();
        let mut edit_globs = Vec::new();
        for glob in edit_tools {
            let glob = glob.as_ref();
            builder.add(
                Glob::new(glob)
                    .map_err(|e| ModeError::EditGlob { glob: glob.to_owned(), reason: e.to_string() })?,
            );
            edit_globs.push(glob.to_owned());
        }
        let edits = builder.build().map_err(|e| ModeError::EditGlobs(e.to_string()))?;
        Ok(Self {
            edit_globs,
            edits,
            plan_tools: plan_tools.iter().map(|t| t.as_ref().to_owned()).collect(),
            plan_approval: None,
        })
    }

    /// The tool through which the model presents its plan in plan mode: it runs in plan mode,
    /// and a call of it there always asks the user (approving it is approving the plan).
    pub fn with_plan_approval(mut self, tool: impl Into<String>) -> Self {
        let tool = tool.into();
        if !self.plan_tools.contains(&tool) {
            self.plan_tools.push(tool.clone());
        }
        self.plan_approval = Some(tool);
        self
    }

    /// Whether `tool` is the plan-approval tool.
    pub fn is_plan_approval(&self, tool: &str) -> bool {
        self.plan_approval.as_deref() == Some(tool)
    }

    /// The plan-approval tool, if any.
    pub fn plan_approval(&self) -> Option<&str> {
        self.plan_approval.as_deref()
    }

    /// The same rules letting `names` run in plan mode too.
    pub fn with_plan_tools(mut self, names: impl IntoIterator<Item = String>) -> Self {
        self.plan_tools.extend(names);
        self
    }

    /// Whether `accept-edits` runs this tool without asking.
    pub fn is_edit(&self, spec: &ToolSpec) -> bool {
        self.edits.is_match(&spec.name)
    }

    /// Whether this tool runs in plan mode: it only reads, it changes only the session's own
    /// state (both declared by the tool in its annotations), or it is one of the plan tools.
    pub fn runs_in_plan(&self, spec: &ToolSpec) -> bool {
        spec.annotations.read_only || spec.annotations.session_only || self.plan_tools.contains(&spec.name)
    }

    /// The edit-tool globs, as configured.
    pub fn edit_globs(&self) -> &[String] {
        &self.edit_globs
    }

    /// The tools plan mode runs besides read-only ones.
    pub fn plan_tools(&self) -> &[String] {
        &self.plan_tools
    }
}
