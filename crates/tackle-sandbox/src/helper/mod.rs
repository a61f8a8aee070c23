//! The sandbox helper: the part that runs in the sandboxed process itself.
//!
//! Entering namespaces (`unshare` of a user namespace needs a single-threaded process) and
//! restricting oneself with Landlock must happen in the process that will run the command, and
//! this workspace has no `unsafe` to do it between `fork` and `exec`. So the command is not
//! spawned directly: a helper executable (the `tackle` binary itself, or the
//! `tackle-sandbox-helper` binary of this crate) is started with [`HELPER_ARG`] as its first
//! argument, the policy as JSON, and the command. It sets the sandbox up with safe system-call
//! wrappers (nix, landlock, seccompiler, caps), then runs the command.
//!
//! ```text
//! helper __tackle_sandbox ns       POLICY -- PROGRAM ARGS...   stage 1: namespaces, id maps
//!   helper __tackle_sandbox ns-init POLICY UID GID -- ...      stage 2: PID 1 of the sandbox:
//!                                                              mounts, pivot_root, 2nd userns
//!     PROGRAM ARGS...
//! helper __tackle_sandbox landlock POLICY -- PROGRAM ARGS...   Landlock + seccomp, then exec
//! ```
//!
//! The helper prints errors as `tackle-sandbox: ...` on stderr and exits with
//! [`SETUP_FAILED`].

use std::ffi::{OsStr, OsString};

#[cfg(target_os = "linux")]
mod landlock_rules;
#[cfg(target_os = "linux")]
pub(crate) mod limits;
#[cfg(target_os = "linux")]
mod mounts;
#[cfg(target_os = "linux")]
mod namespaces;
#[cfg(target_os = "linux")]
mod netlink;
#[cfg(target_os = "linux")]
mod seccomp;

#[cfg(target_os = "linux")]
pub(crate) use landlock_rules::{MIN_ABI as LANDLOCK_MIN_ABI, landlock_abi};

use crate::SandboxPolicy;

/// The first argument that makes an executable act as the sandbox helper.
pub const HELPER_ARG: &str = "__tackle_sandbox";

/// Exit code of the helper when the sandbox could not be set up (the command did not run).
pub const SETUP_FAILED: i32 = 125;

/// Prefix of the helper's error messages on stderr.
pub const ERROR_PREFIX: &str = "tackle-sandbox: ";

/// Prefix of the line the helper writes on stderr when it stopped a command for exceeding a
/// limit it enforces itself (processes, on the Landlock backend), followed by the limit's name.
pub const LIMIT_PREFIX: &str = "tackle-sandbox: limit hit: ";

/// An error while setting up the sandbox.
#[derive(Debug)]
pub(crate) struct HelperError(pub(crate) String);

impl HelperError {
    #[cfg(target_os = "linux")]
    pub(crate) fn new(what: impl std::fmt::Display, why: impl std::fmt::Display) -> Self {
        Self(format!("{what}: {why}"))
    }
}

/// Runs the helper when this process was started as one, and returns its exit code; `None`
/// otherwise. Call it first thing in `main`, before any thread is started:
///
/// ```no_run
/// // First thing in `main`:
/// if let Some(code) = tackle_sandbox::run_helper_if_requested() {
///     std::process::exit(code);
/// }
/// // ... the program itself
/// ```
pub fn run_helper_if_requested() -> Option<i32> {
    let mut args = std::env::args_os();
    let _program = args.next();
    if args.next().as_deref() != Some(OsStr::new(HELPER_ARG)) {
        return None;
    }
    let rest: Vec<OsString> = args.collect();
    Some(match run(&rest) {
        Ok(code) => code,
        Err(HelperError(message)) => {
            eprintln!("{ERROR_PREFIX}{message}");
            SETUP_FAILED
        }
    })
}

/// `STAGE POLICY [EXTRA...] -- PROGRAM ARGS...`
fn run(args: &[OsString]) -> Result<i32, HelperError> {
    let stage = args.first().and_then(|s| s.to_str()).ok_or_else(|| HelperError("no stage given".into()))?;
    let policy_json = args.get(1).ok_or_else(|| HelperError("no policy given".into()))?;
    let policy: SandboxPolicy = policy_json
        .to_str()
        .ok_or_else(|| HelperError("the policy is not UTF-8".into()))
        .and_then(|p| serde_json::from_str(p).map_err(|e| HelperError(format!("invalid policy: {e}"))))?;
    let separator = args.iter().position(|a| a == "--").unwrap_or(args.len());
    let extra = &args[2..separator.max(2)];
    let command = args.get(separator + 1..).unwrap_or_default();
    if command.is_empty() && !policy.probe {
        return Err(HelperError("no command given".into()));
    }
    dispatch(stage, &policy, policy_json, extra, command)
}

#[cfg(target_os = "linux")]
fn dispatch(
    stage: &str,
    policy: &SandboxPolicy,
    policy_json: &OsStr,
    extra: &[OsString],
    command: &[OsString],
) -> Result<i32, HelperError> {
    match stage {
        "ns" => namespaces::outer(policy, policy_json, command),
        "ns-init" => {
            let id = |i: usize| -> Result<u32, HelperError> {
                extra
                    .get(i)
                    .and_then(|s| s.to_str())
                    .and_then(|s| s.parse().ok())
                    .ok_or_else(|| HelperError("ns-init needs the outer uid and gid".into()))
            };
            namespaces::init(policy, id(0)?, id(1)?, command)
        }
        "landlock" => landlock_rules::exec_restricted(policy, command),
        other => Err(HelperError(format!("unknown stage {other:?}"))),
    }
}

#[cfg(not(target_os = "linux"))]
fn dispatch(
    _stage: &str,
    _policy: &SandboxPolicy,
    _policy_json: &OsStr,
    _extra: &[OsString],
    _command: &[OsString],
) -> Result<i32, HelperError> {
    Err(HelperError("the sandbox is only implemented on Linux".into()))
}

/// The exit code a shell would report for `status`: the code, or 128 + the signal.
pub(crate) fn exit_code(status: std::process::ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    status.code().unwrap_or_else(|| 128 + status.signal().unwrap_or(0))
}
