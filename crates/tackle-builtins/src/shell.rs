//! `shell`: run a command with bash in the workspace, in the configured sandbox.
//!
//! Spawning ([`Shell::command`]: environment, sandbox, process group) is separate from capturing
//! the output ([`TypedTool::run`]).

use std::ffi::OsString;
use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use tackle_protocol::{ErrorCategory, ToolAnnotations};
use tackle_sandbox::{
    CommandSpec, ERROR_PREFIX, LIMIT_PREFIX, SETUP_FAILED, Sandbox, SandboxError, SandboxLimits, SandboxMode,
    SandboxStatus, child_env,
};
use tackle_tools::{
    FullOutput, FullPart, Spool, SpoolBudget, ToolContext, ToolDoc, ToolFailure, ToolOutput, TypedTool,
};
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::Command;

use crate::capture::Capture;
use crate::{BuiltinConfig, WorkspaceJail};

/// How long readers may wait for pipes after bash exits before leftover background processes of
/// its group are stopped (they hold the pipes open).
const PIPE_GRACE: Duration = Duration::from_millis(500);

/// Arguments of `shell`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ShellArgs {
    /// The command line, run with `bash -c`. Example: "cargo test -p parser 2>&1 | tail -20".
    pub command: String,
    /// Directory to run in, relative to the workspace root. Defaults to the root.
    #[serde(default)]
    pub cwd: Option<String>,
    /// Time limit in seconds. Defaults to the configured limit (60 s).
    #[serde(default)]
    pub timeout_secs: Option<u64>,
}

/// The `shell` tool.
#[derive(Debug, Clone)]
pub struct Shell {
    config: BuiltinConfig,
    /// Environment the child's allowlist is applied to; the process's own when `None`.
    base_env: Option<Vec<(OsString, OsString)>>,
    sandbox: Sandbox,
}

/// A spawned-ready command and what must live as long as it runs.
pub(crate) struct Prepared {
    pub(crate) command: Command,
    pub(crate) guard: Option<tempfile::TempDir>,
}

impl Shell {
    /// A shell tool with these limits and no sandbox: commands run as Tackle's user (with the
    /// allowlisted environment only). Use [`Shell::with_sandbox`] for a sandbox; the `tackle`
    /// binary always does.
    pub fn new(config: BuiltinConfig) -> Self {
        Self { config, base_env: None, sandbox: Sandbox::off() }
    }

    /// Commands run in `sandbox`.
    pub fn with_sandbox(mut self, sandbox: Sandbox) -> Self {
        self.sandbox = sandbox;
        self
    }

    /// The allowlist applies to `vars` instead of this process's environment. For embedding
    /// and tests.
    pub fn with_base_env(mut self, vars: Vec<(OsString, OsString)>) -> Self {
        self.base_env = Some(vars);
        self
    }

    /// The command running `script` with `bash -c` in `cwd`: the allowlisted environment,
    /// the sandbox, its own process group, killed when dropped.
    pub(crate) fn command(
        &self,
        script: &str,
        workspace: &Path,
        cwd: &Path,
    ) -> Result<Prepared, ToolFailure> {
        let inherited = self.base_env.clone().unwrap_or_else(|| std::env::vars_os().collect());
        let spec = CommandSpec {
            program: "bash".into(),
            args: vec!["-c".into(), script.into()],
            workspace: workspace.to_owned(),
            cwd: cwd.to_owned(),
            env: child_env(inherited, &self.config.shell_env_allow, &self.config.shell_env),
        };
        let sandboxed = self.sandbox.command(&spec).map_err(sandbox_failure)?;
        let mut command = Command::from(sandboxed.command);
        command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true);
        Ok(Prepared { command, guard: sandboxed.guard })
    }

    /// What the sandbox means for commands, as "Does not" lines of the description.
    fn sandbox_lines(&self) -> Vec<String> {
        let sandbox = &self.sandbox;
        let network =
            if sandbox.network() { "" } else { " or reach the network (not even localhost outside it)" };
        match sandbox.status() {
            SandboxStatus::Enforced { backend } => {
                let writes = match sandbox.mode() {
                    SandboxMode::ReadOnly => "write any file".to_owned(),
                    _ => "write outside the workspace and its private /tmp".to_owned(),
                };
                vec![
                    format!("{writes}{network}: it runs in a sandbox ({}, {backend})", sandbox.mode()),
                    "see Tackle's secrets: commands get only PATH, HOME, LANG and similar variables (plus \
                     configured ones), and cannot read Tackle's process, configuration or store"
                        .to_owned(),
                ]
            }
            SandboxStatus::Off => vec![
                "run sandboxed: the sandbox is off, so a command can write and read whatever this user can"
                    .to_owned(),
                "inherit Tackle's environment: commands get only PATH, HOME, LANG and similar variables (plus \
                 configured ones)"
                    .to_owned(),
            ],
            SandboxStatus::Unavailable { reason } => vec![format!(
                "run at all on this machine: the configured {} sandbox is unavailable ({reason}), so every \
                 call is refused; tell the user to run `tackle sandbox check`",
                sandbox.mode()
            )],
        }
    }
}

/// Which of the sandbox's `limits` a command that exited with `code` and wrote `stderr` hit, if
/// any: `(setting, what)`. CPU time and file size end the process with a signal of their own
/// (`SIGXCPU`, `SIGXFSZ`: 128 + 24, 128 + 25 as a shell reports it); memory and processes make
/// allocations and forks fail, which programs report in words of the C library's errors
/// (`ENOMEM`; `EAGAIN`, which is what a failed `fork` reports); the Landlock helper says so itself when it stops a call for
/// running too many processes.
fn limit_hit(limits: SandboxLimits, code: Option<i32>, stderr: &str) -> Option<(&'static str, &'static str)> {
    const SIGXCPU: i32 = 24;
    const SIGXFSZ: i32 = 25;
    const OUT_OF_MEMORY: [&str; 6] = [
        "Cannot allocate memory",
        "MemoryError",
        "out of memory",
        "memory allocation of",
        "std::bad_alloc",
        "failed to allocate",
    ];
    let processes = limits.processes > 0
        && (stderr.contains(&format!("{LIMIT_PREFIX}processes"))
            || stderr.contains("Resource temporarily unavailable"));
    if limits.cpu_secs > 0 && code == Some(128 + SIGXCPU) {
        Some(("cpu_secs", "CPU time"))
    } else if limits.file_size_mib > 0 && code == Some(128 + SIGXFSZ) {
        Some(("file_size_mib", "file size"))
    } else if processes {
        Some(("processes", "process"))
    } else if limits.memory_mib > 0 && OUT_OF_MEMORY.iter().any(|m| stderr.contains(m)) {
        Some(("memory_mib", "memory"))
    } else {
        None
    }
}

/// The sandbox refused to build a command.
fn sandbox_failure(e: SandboxError) -> ToolFailure {
    match e {
        SandboxError::Unavailable { .. } | SandboxError::Policy(_) => ToolFailure::permission(e.to_string())
            .with_hint("this is the machine's or the user's configuration: tell the user, do not retry"),
        SandboxError::Path { .. } | SandboxError::Tmp(_) => ToolFailure::internal(e.to_string()),
    }
}

async fn drain(mut reader: impl AsyncRead + Unpin, limit: usize, spool: Spool) -> Capture {
    let mut capture = Capture::spooled(limit, spool);
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        match reader.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => capture.push(&buf[..n]),
        }
    }
    capture
}

/// Kills every process of the group. `nix::sys::signal::killpg` is a safe wrapper (this
/// workspace forbids `unsafe`), and a process group is the only handle that reaches the
/// grandchildren of `bash -c`.
fn kill_group(pgid: u32) {
    if let Ok(pid) = i32::try_from(pgid) {
        let _ = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGKILL);
    }
}

/// The two pipe readers of a child; results are kept as they finish so waiting can resume.
struct Readers {
    stdout: Option<tokio::task::JoinHandle<Capture>>,
    stderr: Option<tokio::task::JoinHandle<Capture>>,
    done: (Option<Capture>, Option<Capture>),
}

impl Readers {
    async fn finish(&mut self) {
        if let Some(h) = self.stdout.as_mut() {
            self.done.0 = Some(h.await.unwrap_or_else(|_| Capture::new(0)));
            self.stdout = None;
        }
        if let Some(h) = self.stderr.as_mut() {
            self.done.1 = Some(h.await.unwrap_or_else(|_| Capture::new(0)));
            self.stderr = None;
        }
    }

    fn abort(&mut self) {
        for h in [self.stdout.take(), self.stderr.take()].into_iter().flatten() {
            h.abort();
        }
    }

    fn take(self) -> (Capture, Capture) {
        (self.done.0.unwrap_or_else(|| Capture::new(0)), self.done.1.unwrap_or_else(|| Capture::new(0)))
    }
}

/// What the model sees of a command: the views of its streams.
fn render(code: Option<i32>, stdout: &Capture, stderr: &Capture, note: Option<&str>) -> String {
    let stderr = (stderr.total() > 0).then(|| stderr.render());
    render_streams(code, &stdout.render(), stderr.as_deref(), note)
}

/// The output of a command as the model sees it, with the full streams instead of their views
/// when a view was cut: what is stored behind a locator. The streams stay in their spools (a
/// file past [`tackle_tools::SPOOL_MEMORY_BYTES`]) and are read from there when stored.
fn full_output(
    code: Option<i32>,
    stdout: &mut Capture,
    stderr: &mut Capture,
    note: Option<&str>,
    budget: &SpoolBudget,
) -> Option<FullOutput> {
    if !stdout.is_cut() && !stderr.is_cut() {
        return None;
    }
    let mut parts = vec![FullPart::Text(render_streams(code, "", None, note))];
    let spool = stdout.take_spool().unwrap_or_else(|| budget.spool());
    let newline = !spool.ends_with_newline();
    parts.push(FullPart::Spool(Arc::new(spool)));
    if newline {
        parts.push(FullPart::Text("\n".into()));
    }
    if stderr.total() > 0 {
        parts.push(FullPart::Text("stderr:\n".into()));
        parts.push(FullPart::Spool(Arc::new(stderr.take_spool().unwrap_or_else(|| budget.spool()))));
    }
    Some(FullOutput::from_parts(parts, budget))
}

fn render_streams(code: Option<i32>, stdout: &str, stderr: Option<&str>, note: Option<&str>) -> String {
    let mut out = match code {
        Some(c) => format!("exit code: {c}\n"),
        None => "exit code: none (killed by a signal)\n".to_owned(),
    };
    if let Some(n) = note {
        out.push_str(n);
        out.push('\n');
    }
    out.push_str("stdout:\n");
    out.push_str(stdout);
    if !out.ends_with('\n') {
        out.push('\n');
    }
    if let Some(stderr) = stderr {
        out.push_str("stderr:\n");
        out.push_str(stderr);
    }
    out
}

#[async_trait]
impl TypedTool for Shell {
    type Args = ShellArgs;

    fn name(&self) -> &str {
        "shell"
    }

    fn description(&self) -> String {
        let doc = ToolDoc::new(
            "Run a shell command with bash in the workspace and return its exit code, stdout and stderr.",
        )
        .use_when("you need to build, test, search (grep, rg), run git, or use any command-line program")
        .use_when("a task needs several commands chained with && or pipes")
        .does_not("read or edit single files well: use read_file, write_file and edit_file for that")
        .does_not("keep state between calls: each call is a new bash; cd only lasts for that call");
        let doc = self.sandbox_lines().into_iter().fold(doc, ToolDoc::does_not);
        doc.arg("command", "The command line for bash -c. Example: \"ls -la src\"")
            .arg("cwd", "Directory relative to the workspace root. Example: \"crates/core\"")
            .arg("timeout_secs", "Time limit in seconds, default 60, at most 600. Example: 300")
            .returns("\"exit code: N\", then stdout and stderr; very long output keeps its start and end. A non-zero exit code is a normal result, not an error; a timeout is an error.")
            .example(r#"{"command": "cargo test 2>&1 | tail -30"}"#)
            .example(r#"{"command": "git status --short", "cwd": "."}"#)
            .render()
    }

    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations {
            read_only: false,
            destructive: true,
            idempotent: false,
            open_world: true,
            ..ToolAnnotations::default()
        }
    }

    async fn run(&self, args: ShellArgs, ctx: ToolContext) -> Result<ToolOutput, ToolFailure> {
        if args.command.trim().is_empty() {
            return Err(ToolFailure::invalid_args("command is empty"));
        }
        let jail = WorkspaceJail::new(&ctx.workspace)?;
        let cwd = jail.resolve(args.cwd.as_deref().unwrap_or("."))?;
        if !cwd.is_dir() {
            return Err(ToolFailure::not_found(format!("cwd {} is not a directory", jail.display(&cwd))));
        }
        let timeout = Duration::from_secs(
            args.timeout_secs
                .unwrap_or(self.config.shell_timeout_secs)
                .clamp(1, self.config.shell_max_timeout_secs),
        );

        let Prepared { mut command, guard } = self.command(&args.command, jail.root(), &cwd)?;
        let mut child = command.spawn().map_err(|e| ToolFailure::from(e).with_hint("is bash installed?"))?;
        let pgid = child.id().unwrap_or(0);
        let limit = self.config.shell_capture_bytes;
        let stdout = child.stdout.take().map(|s| tokio::spawn(drain(s, limit, ctx.spool.spool())));
        let stderr = child.stderr.take().map(|s| tokio::spawn(drain(s, limit, ctx.spool.spool())));

        enum End {
            Exited(Option<i32>),
            TimedOut,
            Cancelled,
        }
        let end = tokio::select! {
            status = child.wait() => End::Exited(status.ok().and_then(|s| s.code())),
            _ = tokio::time::sleep(timeout) => End::TimedOut,
            _ = ctx.cancel.cancelled() => End::Cancelled,
        };
        let mut note = None;
        if !matches!(end, End::Exited(_)) {
            // The sandbox's helper, asked to stop, kills everything below it, detached
            // processes included (which a process group does not reach); then the group goes.
            if let Ok(pid) = i32::try_from(pgid) {
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(pid),
                    nix::sys::signal::Signal::SIGTERM,
                );
            }
            let _ = tokio::time::timeout(PIPE_GRACE, child.wait()).await;
            kill_group(pgid);
            let _ = child.wait().await;
        }
        let mut readers = Readers { stdout, stderr, done: (None, None) };
        if tokio::time::timeout(PIPE_GRACE, readers.finish()).await.is_err() {
            // Background processes of the command still hold the pipes open: stop them.
            kill_group(pgid);
            note = Some("[background processes still running when the command exited were stopped]");
            if tokio::time::timeout(PIPE_GRACE * 4, readers.finish()).await.is_err() {
                readers.abort();
            }
        }
        let (mut stdout, mut stderr) = readers.take();
        drop(guard);
        match end {
            End::Exited(Some(SETUP_FAILED)) if stderr.render().starts_with(ERROR_PREFIX) => {
                Err(ToolFailure::new(
                    ErrorCategory::Internal,
                    format!(
                        "the sandbox could not be set up, so the command did not run: {}",
                        stderr.render().trim()
                    ),
                )
                .with_hint("tell the user; `tackle sandbox check` shows what this machine supports"))
            }
            End::Exited(code)
                if code != Some(0) && limit_hit(self.sandbox.limits(), code, &stderr.render()).is_some() =>
            {
                let (limit, what) =
                    limit_hit(self.sandbox.limits(), code, &stderr.render()).unwrap_or_default();
                Err(ToolFailure::new(
                    ErrorCategory::ResourceLimit,
                    format!(
                        "the command hit the sandbox's {what} limit and failed. Output:\n{}",
                        render(code, &stdout, &stderr, note)
                    ),
                )
                .with_hint(format!(
                    "do the work in smaller pieces; the user can raise [sandbox] limits.{limit} \
                     (TACKLE_SANDBOX_LIMITS_{})",
                    limit.to_ascii_uppercase()
                )))
            }
            End::Exited(code) => {
                let output = ToolOutput::text(render(code, &stdout, &stderr, note));
                Ok(match full_output(code, &mut stdout, &mut stderr, note, &ctx.spool) {
                    Some(full) => output.with_full(full),
                    None => output,
                })
            }
            End::TimedOut if limit_hit(self.sandbox.limits(), None, &stderr.render()).is_some() => {
                let (limit, what) =
                    limit_hit(self.sandbox.limits(), None, &stderr.render()).unwrap_or_default();
                Err(ToolFailure::new(
                    ErrorCategory::ResourceLimit,
                    format!(
                        "the command hit the sandbox's {what} limit, then ran past {}s and was stopped (with \
                         its child processes). Output so far:\n{}",
                        timeout.as_secs(),
                        render(None, &stdout, &stderr, None)
                    ),
                )
                .with_hint(format!(
                    "do the work in smaller pieces; the user can raise [sandbox] limits.{limit} \
                     (TACKLE_SANDBOX_LIMITS_{})",
                    limit.to_ascii_uppercase()
                )))
            }
            End::TimedOut => Err(ToolFailure::timeout(format!(
                "the command ran past {}s and was stopped (with its child processes). Output so far:\n{}",
                timeout.as_secs(),
                render(None, &stdout, &stderr, None)
            ))
            .with_hint("raise timeout_secs, run less at once, or limit the output")
            .with_retryable(true)),
            End::Cancelled => Err(ToolFailure::new(
                ErrorCategory::Interrupted,
                "the turn was cancelled; the command was stopped",
            )),
        }
    }
}
