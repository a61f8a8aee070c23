//! `[checkpoints]`: whether the workspace is recorded before each turn, and what is left out.

use std::path::PathBuf;

use ignore::gitignore::{Gitignore, GitignoreBuilder};
use serde::{Deserialize, Serialize};

use crate::CheckpointError;

/// What checkpoints record.
///
/// ```
/// let c = tackle_checkpoint::CheckpointConfig::default();
/// assert!(c.enabled);
/// assert_eq!(c.ignore, [".git", "target", "node_modules"]);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CheckpointConfig {
    /// Record the workspace before each turn (`rewind` restores it).
    pub enabled: bool,
    /// Paths never recorded nor touched by a rewind, as `.gitignore` patterns relative to the
    /// workspace: `target` matches a file or directory of that name at any depth, `/dist` only
    /// at the top, `*.log` by extension.
    pub ignore: Vec<String>,
    /// Files larger than this are recorded by size and time only: a rewind reports them when
    /// they changed instead of restoring them.
    pub max_file_bytes: u64,
    /// A workspace with more entries than this is not recorded (the turn says so in a warning).
    pub max_files: usize,
}

impl Default for CheckpointConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            ignore: vec![".git".into(), "target".into(), "node_modules".into()],
            max_file_bytes: 16 * 1024 * 1024,
            max_files: 100_000,
        }
    }
}

/// The compiled rules of one workspace: the ignore patterns and the absolute paths that must
/// never be recorded (Tackle's own data directory, when it lies inside the workspace).
#[derive(Debug, Clone)]
pub(crate) struct Rules {
    pub(crate) ignore: Gitignore,
    pub(crate) exclude: Vec<PathBuf>,
    pub(crate) max_file_bytes: u64,
    pub(crate) max_files: usize,
}

impl Rules {
    pub(crate) fn new(
        root: &std::path::Path,
        config: &CheckpointConfig,
        exclude: &[PathBuf],
    ) -> Result<Self, CheckpointError> {
        let mut builder = GitignoreBuilder::new(root);
        for pattern in &config.ignore {
            builder.add_line(None, pattern).map_err(|e| {
                CheckpointError::Config(format!("invalid [checkpoints] ignore pattern {pattern:?}: {e}"))
            })?;
        }
        let ignore = builder
            .build()
            .map_err(|e| CheckpointError::Config(format!("invalid [checkpoints] ignore patterns: {e}")))?;
        let exclude =
            exclude.iter().filter_map(|p| p.canonicalize().ok().or_else(|| Some(p.clone()))).collect();
        Ok(Self {
            ignore,
            exclude,
            max_file_bytes: config.max_file_bytes,
            max_files: config.max_files.max(1),
        })
    }

    /// Whether the entry at `path` (absolute, under the root) is left out.
    pub(crate) fn skips(&self, path: &std::path::Path, is_dir: bool) -> bool {
        self.ignore.matched(path, is_dir).is_ignore() || self.exclude.iter().any(|e| path.starts_with(e))
    }
}
