//! [`SandboxPolicy`]: what one sandboxed command may see and write.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::{SandboxError, SandboxLimits, SandboxMode};

/// What one command may see and write: built with [`SandboxPolicy::builder`], immutable after.
///
/// Paths are canonical (symlinks resolved) when the policy is built, so what is hidden is the
/// file itself, whatever link leads to it.
///
/// ```
/// use tackle_sandbox::{SandboxMode, SandboxPolicy};
/// let ws = tempfile::tempdir().unwrap();
/// let data = tempfile::tempdir().unwrap();
/// let policy = SandboxPolicy::builder(SandboxMode::WorkspaceWrite, ws.path())
///     .hide([data.path()])
///     .build()
///     .unwrap();
/// assert_eq!(policy.workspace(), ws.path().canonicalize().unwrap());
/// assert!(!policy.network());
/// assert_eq!(policy.hidden(), [data.path().canonicalize().unwrap()]);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SandboxPolicy {
    pub(crate) mode: SandboxMode,
    pub(crate) network: bool,
    pub(crate) workspace: PathBuf,
    pub(crate) writable: Vec<PathBuf>,
    pub(crate) hidden: Vec<PathBuf>,
    pub(crate) cwd: PathBuf,
    /// A private temporary directory (Landlock, which cannot give `/tmp` a private mount).
    #[serde(default)]
    pub(crate) tmp: Option<PathBuf>,
    /// Set up the sandbox, then exit 0 without running anything (detection).
    #[serde(default)]
    pub(crate) probe: bool,
    /// Resource limits of the command.
    #[serde(default = "no_limits")]
    pub(crate) limits: SandboxLimits,
}

fn no_limits() -> SandboxLimits {
    SandboxLimits::NONE
}

impl SandboxPolicy {
    /// A policy for commands working in `workspace`, with the network off and nothing hidden.
    pub fn builder(mode: SandboxMode, workspace: impl Into<PathBuf>) -> PolicyBuilder {
        PolicyBuilder {
            mode,
            network: false,
            workspace: workspace.into(),
            writable: Vec::new(),
            hidden: Vec::new(),
            cwd: None,
            limits: SandboxLimits::NONE,
        }
    }

    /// What the command may write.
    pub fn mode(&self) -> SandboxMode {
        self.mode
    }

    /// Whether the command may use the network.
    pub fn network(&self) -> bool {
        self.network
    }

    /// The workspace (canonical).
    pub fn workspace(&self) -> &Path {
        &self.workspace
    }

    /// Writable paths besides the workspace (canonical, existing).
    pub fn writable(&self) -> &[PathBuf] {
        &self.writable
    }

    /// Paths the command cannot read (canonical, existing).
    pub fn hidden(&self) -> &[PathBuf] {
        &self.hidden
    }

    /// Where the command starts (canonical).
    pub fn cwd(&self) -> &Path {
        &self.cwd
    }

    /// The command's resource limits.
    pub fn limits(&self) -> SandboxLimits {
        self.limits
    }

    /// The first hidden path inside a writable one, which Landlock cannot express (its rules
    /// only add access to whole hierarchies): `(writable, hidden)`.
    pub(crate) fn hidden_inside_writable(&self) -> Option<(&Path, &Path)> {
        if self.mode != SandboxMode::WorkspaceWrite {
            return None;
        }
        let writable = std::iter::once(&self.workspace).chain(&self.writable);
        writable
            .flat_map(|w| self.hidden.iter().map(move |h| (w, h)))
            .find_map(|(w, h)| (h != w && h.starts_with(w)).then_some((w.as_path(), h.as_path())))
    }

    pub(crate) fn to_json(&self) -> Result<String, SandboxError> {
        serde_json::to_string(self).map_err(|e| SandboxError::Policy(e.to_string()))
    }
}

/// Builds a [`SandboxPolicy`].
#[derive(Debug, Clone)]
pub struct PolicyBuilder {
    mode: SandboxMode,
    network: bool,
    workspace: PathBuf,
    writable: Vec<PathBuf>,
    hidden: Vec<PathBuf>,
    cwd: Option<PathBuf>,
    limits: SandboxLimits,
}

impl PolicyBuilder {
    /// Allows or forbids the network (forbidden unless set).
    pub fn network(mut self, allowed: bool) -> Self {
        self.network = allowed;
        self
    }

    /// Adds writable paths (ignored in `read-only` mode; paths that do not exist are skipped).
    pub fn writable<P: AsRef<Path>>(mut self, paths: impl IntoIterator<Item = P>) -> Self {
        self.writable.extend(paths.into_iter().map(|p| p.as_ref().to_owned()));
        self
    }

    /// Adds paths the command must not read (paths that do not exist are skipped: there is
    /// nothing to read).
    pub fn hide<P: AsRef<Path>>(mut self, paths: impl IntoIterator<Item = P>) -> Self {
        self.hidden.extend(paths.into_iter().map(|p| p.as_ref().to_owned()));
        self
    }

    /// Where the command starts (the workspace unless set).
    pub fn cwd(mut self, cwd: impl Into<PathBuf>) -> Self {
        self.cwd = Some(cwd.into());
        self
    }

    /// Resource limits (none unless set).
    pub fn limits(mut self, limits: SandboxLimits) -> Self {
        self.limits = limits;
        self
    }

    /// Checks and canonicalizes the paths.
    pub fn build(self) -> Result<SandboxPolicy, SandboxError> {
        if self.mode == SandboxMode::Off {
            return Err(SandboxError::Policy("a sandbox policy needs a mode other than off".into()));
        }
        let canonical = |path: &Path| {
            path.canonicalize().map_err(|source| SandboxError::Path { path: path.to_owned(), source })
        };
        let workspace = canonical(&self.workspace)?;
        if !workspace.is_dir() {
            return Err(SandboxError::Policy(format!(
                "workspace {} is not a directory",
                workspace.display()
            )));
        }
        let cwd = match &self.cwd {
            Some(cwd) => canonical(cwd)?,
            None => workspace.clone(),
        };
        let existing = |paths: Vec<PathBuf>| -> Vec<PathBuf> {
            let mut out: Vec<PathBuf> = paths.iter().filter_map(|p| p.canonicalize().ok()).collect();
            out.sort();
            out.dedup();
            out
        };
        let writable = if self.mode == SandboxMode::ReadOnly { Vec::new() } else { existing(self.writable) };
        let mut hidden = existing(self.hidden);
        // The workspace is what the command works on: hiding it whole would hide everything.
        hidden.retain(|h| *h != workspace && h.as_path() != Path::new("/"));
        Ok(SandboxPolicy {
            mode: self.mode,
            network: self.network,
            workspace,
            writable,
            hidden,
            cwd,
            tmp: None,
            probe: false,
            limits: self.limits,
        })
    }
}

/// Why Landlock cannot run a command whose writable `writable` contains the hidden `hidden`.
pub(crate) fn landlock_conflict(writable: &Path, hidden: &Path) -> String {
    format!(
        "{hidden} must stay hidden but is inside the writable {writable}, and Landlock (the sandbox \
         in force here) cannot hide part of a writable directory. Move it out (for Tackle's data \
         directory: set TACKLE_HOME elsewhere), work in a directory that does not contain it, or \
         use a machine with user namespaces",
        hidden = hidden.display(),
        writable = writable.display()
    )
}
