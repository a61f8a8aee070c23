//! `[checkpoints]`: whether the workspace is recorded before each turn, and what is left out.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

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

/// The compiled rules of one workspace: the ignore patterns and the paths that must never be
/// recorded (Tackle's own data directory, when it lies inside the workspace), both matched
/// against paths relative to the workspace.
#[derive(Debug, Clone)]
pub(crate) struct Rules {
    ignore: Ignore,
    /// Relative to the workspace, `/`-separated.
    exclude: Vec<Vec<u8>>,
    pub(crate) max_file_bytes: u64,
    pub(crate) max_files: usize,
}

/// The ignore patterns, compiled. Plain names (`target`, `.git`, `node_modules/`: what almost
/// every configuration holds) match a path's last component at any depth, exactly as
/// `.gitignore` has it, so they are compared with it (a few byte comparisons per path: less
/// than hashing it for a set); anything else goes through the `.gitignore` matcher.
#[derive(Debug, Clone)]
enum Ignore {
    Names { any: Vec<Vec<u8>>, dirs: Vec<Vec<u8>> },
    Gitignore(Gitignore),
}

impl Ignore {
    fn new(root: &Path, patterns: &[String]) -> Result<Self, CheckpointError> {
        let mut any = Vec::new();
        let mut dirs = Vec::new();
        let mut simple = true;
        for pattern in patterns {
            if pattern.trim().is_empty() {
                continue;
            }
            let (name, dir_only) = match pattern.strip_suffix('/') {
                Some(n) => (n, true),
                None => (pattern.as_str(), false),
            };
            let plain = !name.is_empty()
                && name.trim() == name
                && !name.starts_with(['#', '!'])
                && !name.contains(['/', '*', '?', '[', '\\']);
            if !plain {
                simple = false;
                break;
            }
            let list = if dir_only { &mut dirs } else { &mut any };
            if !list.iter().any(|n| n == name.as_bytes()) {
                list.push(name.as_bytes().to_vec());
            }
        }
        if simple {
            return Ok(Self::Names { any, dirs });
        }
        let mut builder = GitignoreBuilder::new(root);
        for pattern in patterns {
            builder.add_line(None, pattern).map_err(|e| {
                CheckpointError::Config(format!("invalid [checkpoints] ignore pattern {pattern:?}: {e}"))
            })?;
        }
        let ignore = builder
            .build()
            .map_err(|e| CheckpointError::Config(format!("invalid [checkpoints] ignore patterns: {e}")))?;
        Ok(Self::Gitignore(ignore))
    }

    fn matches(&self, rel: &[u8], name: &[u8], is_dir: bool) -> bool {
        match self {
            Self::Names { any, dirs } => {
                any.iter().any(|n| n == name) || (is_dir && dirs.iter().any(|n| n == name))
            }
            Self::Gitignore(g) => g.matched(Path::new(OsStr::from_bytes(rel)), is_dir).is_ignore(),
        }
    }
}

impl Rules {
    pub(crate) fn new(
        root: &Path,
        config: &CheckpointConfig,
        exclude: &[PathBuf],
    ) -> Result<Self, CheckpointError> {
        let ignore = Ignore::new(root, &config.ignore)?;
        let roots = [Some(root.to_owned()), root.canonicalize().ok()];
        let exclude = exclude
            .iter()
            .flat_map(|p| [Some(p.clone()), p.canonicalize().ok()])
            .flatten()
            .filter_map(|p| {
                roots
                    .iter()
                    .flatten()
                    .find_map(|r| p.strip_prefix(r).ok().map(|rel| rel.as_os_str().as_bytes().to_vec()))
            })
            .collect();
        Ok(Self {
            ignore,
            exclude,
            max_file_bytes: config.max_file_bytes,
            max_files: config.max_files.max(1),
        })
    }

    /// Whether the entry at `rel` (relative to the workspace, `/`-separated; `name` is its last
    /// component) is left out.
    pub(crate) fn skips(&self, rel: &[u8], name: &[u8], is_dir: bool) -> bool {
        self.ignore.matches(rel, name, is_dir)
            || self.exclude.iter().any(|e| {
                e.is_empty() || (rel.starts_with(e) && (rel.len() == e.len() || rel[e.len()] == b'/'))
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_names_and_patterns_match_as_gitignore_does() {
        let root = Path::new("/ws");
        let rules = |patterns: &[&str]| {
            let config = CheckpointConfig {
                ignore: patterns.iter().map(|p| p.to_string()).collect(),
                ..Default::default()
            };
            Rules::new(root, &config, &[PathBuf::from("/ws/.tackle")]).unwrap()
        };
        let skips = |r: &Rules, rel: &str, dir: bool| {
            r.skips(rel.as_bytes(), rel.rsplit('/').next().unwrap().as_bytes(), dir)
        };
        for r in [
            rules(&["target", "node_modules/", ".git"]),
            rules(&["target", "node_modules/", ".git", "*.log"]),
        ] {
            assert!(matches!(r.ignore, Ignore::Names { .. }) == (r.ignore_len() == 3));
            assert!(skips(&r, "target", true) && skips(&r, "a/b/target", false) && skips(&r, "x/.git", true));
            assert!(skips(&r, "node_modules", true) && !skips(&r, "node_modules", false));
            assert!(!skips(&r, "targets", true) && !skips(&r, "src/target.rs", false));
            assert!(
                skips(&r, ".tackle", true)
                    && skips(&r, ".tackle/x.db", false)
                    && !skips(&r, ".tackle2", true)
            );
        }
        let r = rules(&["/dist", "*.log", "!keep.log"]);
        assert!(skips(&r, "dist", true) && !skips(&r, "a/dist", true));
        assert!(skips(&r, "a/x.log", false) && !skips(&r, "keep.log", false));
    }

    impl Rules {
        fn ignore_len(&self) -> usize {
            match &self.ignore {
                Ignore::Names { any, dirs } => any.len() + dirs.len(),
                Ignore::Gitignore(g) => g.num_ignores() as usize,
            }
        }
    }
}
