//! [`SandboxError`].

use std::path::PathBuf;

use crate::SandboxMode;

/// Why a command cannot be sandboxed; the message says what to do.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// The configured sandbox cannot run on this machine.
    #[error(
        "the {mode} sandbox is unavailable on this machine ({reason}), so the command was not run. \
         To fix it: allow unprivileged user namespaces (sysctl user.max_user_namespaces > 0, \
         kernel.unprivileged_userns_clone=1 where it exists, or a container seccomp profile that allows \
         unshare), or use a kernel with Landlock (Linux 6.2+ booted with lsm=...,landlock); \
         `tackle sandbox check` shows what this machine supports. To run commands unsandboxed instead, \
         set [sandbox] mode = \"off\" (TACKLE_SANDBOX_MODE=off)"
    )]
    Unavailable {
        /// The configured mode.
        mode: SandboxMode,
        /// Why, per backend.
        reason: String,
    },
    /// A path of the policy cannot be used.
    #[error("cannot use {path}: {source}")]
    Path {
        /// The path.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The policy is inconsistent.
    #[error("invalid sandbox policy: {0}")]
    Policy(String),
    /// The private temporary directory could not be made.
    #[error("cannot create the sandbox's private temporary directory: {0}")]
    Tmp(std::io::Error),
}
