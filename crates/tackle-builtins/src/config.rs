//! Settings of the builtin tools.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Limits and policies of the builtin tools.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BuiltinConfig {
    /// Default time limit of a shell command, in seconds.
    pub shell_timeout_secs: u64,
    /// Largest time limit a shell call may ask for, in seconds.
    pub shell_max_timeout_secs: u64,
    /// Bytes kept from the start and from the end of each of stdout and stderr.
    pub shell_capture_bytes: usize,
    /// Variables of Tackle's environment shell commands get besides `PATH`, `HOME`, `LANG` and
    /// the like (exact names, or prefixes ending in `*`, e.g. `CARGO_*`).
    pub shell_env_allow: Vec<String>,
    /// Variables set for shell commands (values are treated as secrets by `tackle config`).
    pub shell_env: BTreeMap<String, String>,
    /// Largest file `read_file` reads whole (larger ones need offset/limit).
    pub read_max_bytes: u64,
    /// Lines `read_file` returns when no limit is given.
    pub read_default_lines: u64,
    /// Time limit of a web fetch, in seconds.
    pub web_timeout_secs: u64,
    /// Largest body `web_fetch` reads, in bytes.
    pub web_max_bytes: usize,
    /// Private addresses or host names `web_fetch` may reach anyway (CIDRs like
    /// `127.0.0.1/32`, single addresses, or host names). Empty in production.
    pub web_allow_private: Vec<String>,
    /// User agent of `web_fetch`.
    pub user_agent: String,
    /// Entries `list_files` looks at before it stops.
    pub list_max_scanned: usize,
}

impl Default for BuiltinConfig {
    fn default() -> Self {
        Self {
            shell_timeout_secs: 60,
            shell_max_timeout_secs: 600,
            shell_capture_bytes: 256 * 1024,
            shell_env_allow: Vec::new(),
            shell_env: BTreeMap::new(),
            read_max_bytes: 1024 * 1024,
            read_default_lines: 1000,
            web_timeout_secs: 20,
            web_max_bytes: 2 * 1024 * 1024,
            web_allow_private: Vec::new(),
            user_agent: concat!("tackle/", env!("CARGO_PKG_VERSION"), " (+web_fetch)").to_owned(),
            list_max_scanned: 100_000,
        }
    }
}
