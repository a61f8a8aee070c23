//! Spawning commands under a sandbox policy, with an allowlisted environment.
//!
//! One job: the commands Tackle runs for a model (the shell tool, and anything started through
//! it) reach only what the policy allows.
//!
//! - [`child_env`]: the environment of any child process: an allowlist ([`BASE_ENV_ALLOWLIST`]
//!   plus configured names and values), never "Tackle's environment minus a denylist".
//! - [`SandboxConfig`] (`[sandbox]` in `tackle.toml`): [`SandboxMode`] `workspace-write`
//!   (default), `read-only` or `off`; `network = false` by default.
//! - [`Sandbox`]: the configuration plus the backend this machine supports
//!   ([`Backend::Namespaces`], else [`Backend::Landlock`]), found by trying them; its
//!   [`Sandbox::command`] builds the [`std::process::Command`] to spawn. A configured sandbox
//!   that the machine cannot provide refuses commands ([`SandboxError::Unavailable`]); it never
//!   silently runs them unsandboxed.
//! - [`run_helper_if_requested`]: the helper side, called first in `main` of the executable
//!   that sets sandboxes up (the `tackle` binary, or `tackle-sandbox-helper`).
//!
//! ```
//! use tackle_sandbox::{CommandSpec, Sandbox, SandboxConfig, SandboxStatus};
//! // The default sandbox (workspace-write, no network) needs a helper executable to set it up;
//! // `tackle` passes itself: `.helper(std::env::current_exe()?)`. Without one, commands are
//! // refused, never run unsandboxed.
//! let sandbox = Sandbox::builder(SandboxConfig::default()).hide(["/home/ada/.local/share/tackle"]).detect();
//! assert!(matches!(sandbox.status(), SandboxStatus::Unavailable { .. }));
//! let workspace = tempfile::tempdir()?;
//! let spec = CommandSpec {
//!     program: "bash".into(),
//!     args: vec!["-c".into(), "make test".into()],
//!     workspace: workspace.path().into(),
//!     cwd: workspace.path().into(),
//!     env: tackle_sandbox::child_env(std::env::vars_os(), &[], &Default::default()),
//! };
//! let refusal = sandbox.command(&spec).unwrap_err().to_string();
//! assert!(refusal.contains("tackle sandbox check"), "{refusal}");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]
#![deny(missing_docs)]

mod config;
mod env;
mod error;
mod helper;
mod policy;
mod probe;
mod sandbox;

pub use config::{
    BackendChoice, SandboxConfig, SandboxLimits, SandboxMode, UnknownSandboxValue, expand_home,
};
pub use env::{BASE_ENV_ALLOWLIST, child_env, env_name_allowed};
pub use error::SandboxError;
pub use helper::{ERROR_PREFIX, HELPER_ARG, LIMIT_PREFIX, SETUP_FAILED, run_helper_if_requested};
pub use policy::{PolicyBuilder, SandboxPolicy};
pub use probe::{Support, Unsupported, prefetch};
pub use sandbox::{Backend, CommandSpec, Sandbox, SandboxBuilder, SandboxStatus, SandboxedCommand};
