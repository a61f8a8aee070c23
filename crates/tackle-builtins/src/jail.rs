//! The workspace jail: every path a tool touches must resolve inside the workspace root.

use std::fmt;
use std::path::{Component, Path, PathBuf};

use tackle_tools::ToolFailure;

/// Why a path was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JailError {
    /// The path as given.
    pub path: String,
    /// The workspace root that applies.
    pub root: PathBuf,
    /// What is wrong.
    pub reason: String,
}

impl fmt::Display for JailError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "path {:?} {}; tools only reach inside the workspace {}",
            self.path,
            self.reason,
            self.root.display()
        )
    }
}

impl std::error::Error for JailError {}

impl From<JailError> for ToolFailure {
    fn from(e: JailError) -> Self {
        ToolFailure::permission(e.to_string())
            .with_hint("use a path relative to the workspace root, without ..")
    }
}

/// Resolves paths against a workspace root and refuses any that end up outside it, whether by
/// `..`, an absolute path, or a symlink (of the file or of any directory on the way).
///
/// ```
/// let dir = tempfile::tempdir().unwrap();
/// let jail = tackle_builtins::WorkspaceJail::new(dir.path()).unwrap();
/// assert!(jail.resolve("src/new.rs").is_ok());
/// assert!(jail.resolve("../outside").is_err());
/// assert!(jail.resolve("/etc/passwd").is_err());
/// ```
#[derive(Debug, Clone)]
pub struct WorkspaceJail {
    root: PathBuf,
}

impl WorkspaceJail {
    /// A jail rooted at `root` (canonicalized; it must exist).
    pub fn new(root: &Path) -> std::io::Result<Self> {
        Ok(Self { root: root.canonicalize()? })
    }

    /// The canonical root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    fn refuse(&self, path: &str, reason: impl Into<String>) -> JailError {
        JailError { path: path.to_owned(), root: self.root.clone(), reason: reason.into() }
    }

    /// The absolute path `user_path` names, if it is inside the workspace. The path need not
    /// exist (for files about to be written); its existing part is resolved through symlinks.
    pub fn resolve(&self, user_path: &str) -> Result<PathBuf, JailError> {
        if user_path.contains('\0') {
            return Err(self.refuse(user_path, "contains a NUL byte"));
        }
        let trimmed = user_path.trim();
        if trimmed.is_empty() {
            return Err(self.refuse(user_path, "is empty"));
        }
        if trimmed == "~" || trimmed.starts_with("~/") {
            return Err(self.refuse(
                user_path,
                "starts with ~, which is not expanded (it would mean the home directory)",
            ));
        }
        let given = Path::new(trimmed);
        let joined = if given.is_absolute() { given.to_path_buf() } else { self.root.join(given) };

        // Lexical normalization first: a `..` may not climb above the root.
        let mut normal = PathBuf::new();
        for component in joined.components() {
            match component {
                Component::Prefix(p) => normal.push(p.as_os_str()),
                Component::RootDir => normal.push(Component::RootDir.as_os_str()),
                Component::CurDir => {}
                Component::ParentDir => {
                    if !normal.pop() || !normal.starts_with(&self.root) {
                        return Err(self.refuse(user_path, "escapes the workspace with .."));
                    }
                }
                Component::Normal(n) => normal.push(n),
            }
        }
        if !normal.starts_with(&self.root) {
            return Err(self.refuse(user_path, "is outside the workspace"));
        }

        // Then through the file system: the deepest existing ancestor, symlinks resolved,
        // must still be inside; the rest is appended as given.
        let mut existing = normal.clone();
        let mut rest: Vec<std::ffi::OsString> = Vec::new();
        loop {
            match std::fs::symlink_metadata(&existing) {
                Ok(meta) => {
                    if meta.file_type().is_symlink() && std::fs::metadata(&existing).is_err() {
                        // A dangling symlink: check where it would point.
                        let target = std::fs::read_link(&existing)
                            .map_err(|_| self.refuse(user_path, "is an unreadable link"))?;
                        let base = existing.parent().unwrap_or(&self.root);
                        let target = if target.is_absolute() { target } else { base.join(target) };
                        let resolved = lexical(&target);
                        if !resolved.starts_with(&self.root) {
                            return Err(
                                self.refuse(user_path, "is a symlink to a place outside the workspace")
                            );
                        }
                        let mut out = resolved;
                        out.extend(rest.iter().rev());
                        return Ok(out);
                    }
                    break;
                }
                Err(_) => {
                    let Some(name) = existing.file_name().map(|n| n.to_owned()) else { break };
                    rest.push(name);
                    if !existing.pop() {
                        break;
                    }
                }
            }
        }
        let canonical = existing
            .canonicalize()
            .map_err(|e| self.refuse(user_path, format!("cannot be resolved ({e})")))?;
        if !canonical.starts_with(&self.root) {
            return Err(self.refuse(user_path, "resolves through a symlink to a place outside the workspace"));
        }
        let mut out = canonical;
        out.extend(rest.iter().rev());
        Ok(out)
    }

    /// `path` relative to the root, for messages.
    pub fn display(&self, path: &Path) -> String {
        match path.strip_prefix(&self.root) {
            Ok(rel) if rel.as_os_str().is_empty() => ".".to_owned(),
            Ok(rel) => rel.display().to_string(),
            Err(_) => path.display().to_string(),
        }
    }
}

fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other.as_os_str()),
        }
    }
    out
}
