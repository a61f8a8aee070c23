//! Builtin tools: `shell`, `read_file`, `write_file`, `edit_file`, `list_files`, `web_fetch`.
//!
//! Every file tool and the shell's working directory go through the [`WorkspaceJail`]; the
//! shell's commands get an allowlisted environment and run in a `tackle_sandbox::Sandbox`;
//! `web_fetch` goes through an SSRF guard ([`blocked_reason`]) that checks literal addresses,
//! every resolved address, and every redirect hop.
//!
//! ```
//! let tools = tackle_builtins::builtin_tools(&tackle_builtins::BuiltinConfig::default());
//! let names: Vec<&str> = tools.iter().map(|t| t.spec().name.as_str()).collect();
//! assert_eq!(names, ["shell", "read_file", "write_file", "edit_file", "list_files", "web_fetch"]);
//! ```

#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]
#![deny(missing_docs)]

mod capture;
mod config;
mod edit_file;
mod jail;
mod list_files;
mod read_file;
mod shell;
mod ssrf;
mod web_fetch;
mod write_file;

use std::sync::Arc;

pub use config::BuiltinConfig;
pub use edit_file::{EditFile, EditFileArgs};
pub use jail::{JailError, WorkspaceJail};
pub use list_files::{ListFiles, ListFilesArgs};
pub use read_file::{ReadFile, ReadFileArgs};
pub use shell::{Shell, ShellArgs};
pub use ssrf::blocked_reason;
pub use web_fetch::{Lookup, WebFetch, WebFetchArgs};
pub use write_file::{WriteFile, WriteFileArgs};

use tackle_sandbox::Sandbox;
use tackle_tools::{Tool, typed};

/// The builtin tools in their stable order: shell, read_file, write_file, edit_file,
/// list_files, web_fetch; the shell without a sandbox (see [`builtin_tools_in`]).
pub fn builtin_tools(config: &BuiltinConfig) -> Vec<Arc<dyn Tool>> {
    builtin_tools_in(config, &Sandbox::off())
}

/// The builtin tools, the shell's commands running in `sandbox`.
pub fn builtin_tools_in(config: &BuiltinConfig, sandbox: &Sandbox) -> Vec<Arc<dyn Tool>> {
    vec![
        typed(Shell::new(config.clone()).with_sandbox(sandbox.clone())),
        typed(ReadFile::new(config.clone())),
        typed(WriteFile),
        typed(EditFile),
        typed(ListFiles::new(config.clone())),
        typed(WebFetch::new(config.clone())),
    ]
}
