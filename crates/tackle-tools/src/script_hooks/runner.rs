//! Running a hook: the [`HookHandler`] trait, and [`CommandHook`], a command run with bash in
//! the workspace under the shell's sandbox and environment rules.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::Value;
use tackle_sandbox::{CommandSpec, Sandbox, child_env};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};

use super::HookReply;

/// Most bytes of a hook's standard output or error kept; the rest is dropped.
const MAX_HOOK_OUTPUT: usize = 1024 * 1024;

/// How long the pipes may stay open after the hook exited (held by processes it left behind).
const PIPE_GRACE: Duration = Duration::from_millis(500);

/// Something that answers hook events the way a hook command does: an exit code and output.
/// [`CommandHook`] runs a command; embedders may answer in process.
#[async_trait]
pub trait HookHandler: Send + Sync {
    /// How the hook is shown (its command).
    fn label(&self) -> String;

    /// Answers `input` (the event's JSON) within `timeout`; `workspace` is the session's.
    async fn run(&self, input: &Value, workspace: &Path, timeout: Duration) -> HookReply;
}

/// The environment rules hook commands run under: the allowlist every child of Tackle gets
/// (`tackle_sandbox::child_env`), plus the names and values configured for the shell.
#[derive(Debug, Clone, Default)]
pub struct HookEnv {
    /// Extra names passed through (`[builtins] shell_env_allow`).
    pub allow: Vec<String>,
    /// Values set (`[builtins] shell_env`).
    pub set: BTreeMap<String, String>,
    /// The environment the allowlist is applied to; the process's own when `None` (tests).
    pub base: Option<Vec<(OsString, OsString)>>,
}

/// A hook command: `bash -c COMMAND` in the workspace, given the event on its standard input,
/// with the shell's sandbox and allowlisted environment (never Tackle's secrets) plus
/// `CLAUDE_PROJECT_DIR` and `TACKLE_PROJECT_DIR` (the workspace), in its own process group,
/// killed with its children when it times out.
#[derive(Debug, Clone)]
pub struct CommandHook {
    command: String,
    sandbox: Sandbox,
    env: HookEnv,
}

impl CommandHook {
    /// A hook running `command`.
    pub fn new(command: impl Into<String>, sandbox: Sandbox, env: HookEnv) -> Self {
        Self { command: command.into(), sandbox, env }
    }
}

#[async_trait]
impl HookHandler for CommandHook {
    fn label(&self) -> String {
        shorten(&self.command, 80)
    }

    async fn run(&self, input: &Value, workspace: &Path, timeout: Duration) -> HookReply {
        let failed = |why: String| HookReply { failure: Some(why), ..HookReply::default() };
        let inherited = self.env.base.clone().unwrap_or_else(|| std::env::vars_os().collect());
        let mut set = self.env.set.clone();
        let project = workspace.display().to_string();
        set.insert("CLAUDE_PROJECT_DIR".into(), project.clone());
        set.insert("TACKLE_PROJECT_DIR".into(), project);
        let spec = CommandSpec {
            program: "bash".into(),
            args: vec!["-c".into(), self.command.clone().into()],
            workspace: workspace.to_owned(),
            cwd: workspace.to_owned(),
            env: child_env(inherited, &self.env.allow, &set),
        };
        let sandboxed = match self.sandbox.command(&spec) {
            Ok(s) => s,
            Err(e) => return failed(format!("cannot start: {e}")),
        };
        let _guard = sandboxed.guard;
        let mut command = tokio::process::Command::from(sandboxed.command);
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true);
        let mut child = match command.spawn() {
            Ok(c) => c,
            Err(e) => return failed(format!("cannot start bash: {e}")),
        };
        let pgid = child.id();
        let stdout = child.stdout.take().map(|s| tokio::spawn(read_capped(s)));
        let stderr = child.stderr.take().map(|s| tokio::spawn(read_capped(s)));
        if let Some(mut stdin) = child.stdin.take() {
            let bytes = input.to_string().into_bytes();
            // A hook that does not read its input closes the pipe early: not an error.
            tokio::spawn(async move {
                let _ = stdin.write_all(&bytes).await;
                let _ = stdin.shutdown().await;
            });
        }
        let status = tokio::time::timeout(timeout, child.wait()).await;
        let kill_group = || {
            if let Some(pgid) = pgid.and_then(|p| i32::try_from(p).ok()) {
                let _ = nix::sys::signal::killpg(
                    nix::unistd::Pid::from_raw(pgid),
                    nix::sys::signal::Signal::SIGKILL,
                );
            }
        };
        if status.is_err() {
            kill_group();
            let _ = child.kill().await;
        }
        let mut readers = Box::pin(async move {
            let join = |h: Option<tokio::task::JoinHandle<String>>| async move {
                match h {
                    Some(h) => h.await.unwrap_or_default(),
                    None => String::new(),
                }
            };
            (join(stdout).await, join(stderr).await)
        });
        // Processes the hook left behind may hold its pipes open: they get a moment, then go
        // with its process group.
        let (stdout, stderr) = match tokio::time::timeout(PIPE_GRACE, &mut readers).await {
            Ok(out) => out,
            Err(_) => {
                kill_group();
                readers.await
            }
        };
        match status {
            Err(_) => HookReply {
                exit_code: None,
                stdout,
                stderr,
                failure: Some(format!("timed out after {}s and was stopped", timeout.as_secs_f64())),
            },
            Ok(Err(e)) => HookReply { exit_code: None, stdout, stderr, failure: Some(format!("lost: {e}")) },
            Ok(Ok(status)) => HookReply {
                exit_code: status.code(),
                stdout,
                stderr,
                failure: status.code().is_none().then(|| "killed by a signal".to_owned()),
            },
        }
    }
}

async fn read_capped(mut reader: impl AsyncRead + Unpin) -> String {
    let mut out = Vec::new();
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        match reader.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let room = MAX_HOOK_OUTPUT.saturating_sub(out.len());
                out.extend_from_slice(&buf[..n.min(room)]);
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

pub(crate) fn shorten(text: &str, max: usize) -> String {
    let line = text.trim();
    match line.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &line[..i]),
        None => line.to_owned(),
    }
}
