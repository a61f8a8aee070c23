//! [`Sandbox`]: the configured sandbox with the backend this machine supports, and the one
//! entry point that builds a sandboxed [`Command`].

use std::ffi::OsString;
use std::fmt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use serde::Serialize;

use crate::helper::HELPER_ARG;
use crate::probe::{probe_landlock, probe_namespaces};
use crate::{
    BackendChoice, SandboxConfig, SandboxError, SandboxLimits, SandboxMode, SandboxPolicy, expand_home,
};

/// How the sandbox is enforced on this machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Backend {
    /// User, mount, PID, IPC, UTS (and network) namespaces; a fresh `/proc`.
    Namespaces,
    /// Landlock (with this ABI version) and seccomp.
    Landlock {
        /// The kernel's Landlock ABI version.
        abi: u8,
    },
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Namespaces => f.write_str("Linux namespaces"),
            Self::Landlock { abi } => write!(f, "Landlock ABI {abi} + seccomp"),
        }
    }
}

/// Whether commands run sandboxed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "state", rename_all = "kebab-case")]
pub enum SandboxStatus {
    /// Configured off: commands run unsandboxed.
    Off,
    /// Commands run under this backend.
    Enforced {
        /// The backend.
        backend: Backend,
    },
    /// A sandbox is configured but this machine cannot provide it: commands are refused.
    Unavailable {
        /// Why, per backend tried.
        reason: String,
    },
}

/// A command to run: what, where, and with which environment (already allowlisted, see
/// [`crate::child_env`]).
#[derive(Debug, Clone)]
pub struct CommandSpec {
    /// The program (looked up on the `PATH` of `env`).
    pub program: OsString,
    /// Its arguments.
    pub args: Vec<OsString>,
    /// The workspace the command works on (writable in `workspace-write`).
    pub workspace: PathBuf,
    /// Where it starts.
    pub cwd: PathBuf,
    /// Its whole environment.
    pub env: Vec<(OsString, OsString)>,
}

/// A [`Command`] ready to spawn, and what must live as long as it runs.
#[derive(Debug)]
pub struct SandboxedCommand {
    /// The command: spawn it as it is (add stdio, process group, ...).
    pub command: Command,
    /// The private temporary directory of a Landlock sandbox, removed when dropped: keep it
    /// until the command has exited.
    pub guard: Option<tempfile::TempDir>,
}

#[derive(Debug)]
struct Inner {
    config: SandboxConfig,
    helper: Option<PathBuf>,
    writable: Vec<PathBuf>,
    hidden: Vec<PathBuf>,
    status: SandboxStatus,
}

/// The sandbox commands run in: the configuration, the paths always hidden, and the backend
/// found on this machine. Cheap to clone.
///
/// ```
/// use tackle_sandbox::{CommandSpec, Sandbox, SandboxStatus};
/// let sandbox = Sandbox::off();
/// assert_eq!(sandbox.status(), &SandboxStatus::Off);
/// let ws = tempfile::tempdir().unwrap();
/// let spec = CommandSpec {
///     program: "true".into(),
///     args: vec![],
///     workspace: ws.path().into(),
///     cwd: ws.path().into(),
///     env: vec![("PATH".into(), "/usr/bin:/bin".into())],
/// };
/// let mut cmd = sandbox.command(&spec).unwrap();
/// assert!(cmd.command.status().unwrap().success());
/// ```
#[derive(Debug, Clone)]
pub struct Sandbox {
    inner: Arc<Inner>,
}

impl Sandbox {
    /// No sandbox: commands run as they are (with the environment they are given).
    pub fn off() -> Self {
        let config = SandboxConfig { mode: SandboxMode::Off, ..SandboxConfig::default() };
        Self::builder(config).detect()
    }

    /// A sandbox for `config`; [`SandboxBuilder::detect`] finds the backend.
    pub fn builder(config: SandboxConfig) -> SandboxBuilder {
        SandboxBuilder { config, helper: None, home: None, hidden: Vec::new() }
    }

    /// The configured mode (what commands may write).
    pub fn mode(&self) -> SandboxMode {
        self.inner.config.mode
    }

    /// Whether commands may use the network (always true when the sandbox is off).
    pub fn network(&self) -> bool {
        self.inner.config.mode == SandboxMode::Off || self.inner.config.network
    }

    /// Whether commands run sandboxed, and how.
    pub fn status(&self) -> &SandboxStatus {
        &self.inner.status
    }

    /// The backend in force, if any.
    pub fn backend(&self) -> Option<Backend> {
        match self.inner.status {
            SandboxStatus::Enforced { backend } => Some(backend),
            _ => None,
        }
    }

    /// The resource limits of sandboxed commands (none when the sandbox is off).
    pub fn limits(&self) -> SandboxLimits {
        match self.inner.status {
            SandboxStatus::Off => SandboxLimits::NONE,
            _ => self.inner.config.limits,
        }
    }

    /// Paths commands cannot read (besides the configured ones: Tackle's own).
    pub fn hidden(&self) -> &[PathBuf] {
        &self.inner.hidden
    }

    /// One line for people and models, e.g. `workspace-write, network off (Linux namespaces)`.
    pub fn describe(&self) -> String {
        let network = if self.network() { "network on" } else { "network off" };
        match &self.inner.status {
            SandboxStatus::Off => "off: commands run unsandboxed".to_owned(),
            SandboxStatus::Enforced { backend } => format!("{}, {network} ({backend})", self.mode()),
            SandboxStatus::Unavailable { reason } => {
                format!("{} configured but unavailable, so commands are refused: {reason}", self.mode())
            }
        }
    }

    /// The command `spec` describes, sandboxed as configured. Refused when the configured
    /// sandbox is unavailable: never run unsandboxed by surprise.
    pub fn command(&self, spec: &CommandSpec) -> Result<SandboxedCommand, SandboxError> {
        let inner = &self.inner;
        let backend = match &inner.status {
            SandboxStatus::Off => {
                let mut command = Command::new(&spec.program);
                command.args(&spec.args).current_dir(&spec.cwd).env_clear().envs(spec.env.iter().cloned());
                return Ok(SandboxedCommand { command, guard: None });
            }
            SandboxStatus::Unavailable { reason } => {
                return Err(SandboxError::Unavailable { mode: inner.config.mode, reason: reason.clone() });
            }
            SandboxStatus::Enforced { backend } => *backend,
        };
        let helper = inner.helper.as_ref().ok_or_else(|| SandboxError::Policy("no sandbox helper".into()))?;
        let mut policy = SandboxPolicy::builder(inner.config.mode, &spec.workspace)
            .network(inner.config.network)
            .writable(&inner.writable)
            .hide(&inner.hidden)
            .cwd(&spec.cwd)
            .limits(inner.config.limits)
            .build()?;
        let mut env: Vec<(OsString, OsString)> =
            spec.env.iter().filter(|(k, _)| k != "TMPDIR").cloned().collect();
        let (stage, guard) = match backend {
            Backend::Namespaces => {
                env.push(("TMPDIR".into(), "/tmp".into()));
                ("ns", None)
            }
            Backend::Landlock { .. } => {
                if let Some((writable, hidden)) = policy.hidden_inside_writable() {
                    return Err(SandboxError::Policy(crate::policy::landlock_conflict(writable, hidden)));
                }
                let tmp = tempfile::Builder::new()
                    .prefix("tackle-sandbox-")
                    .tempdir()
                    .map_err(SandboxError::Tmp)?;
                let path = tmp.path().canonicalize().map_err(SandboxError::Tmp)?;
                env.push(("TMPDIR".into(), path.clone().into()));
                policy.tmp = Some(path);
                ("landlock", Some(tmp))
            }
        };
        let mut command = Command::new(helper);
        command
            .arg(HELPER_ARG)
            .arg(stage)
            .arg(policy.to_json()?)
            .arg("--")
            .arg(&spec.program)
            .args(&spec.args)
            .current_dir(&policy.cwd)
            .env_clear()
            .envs(env);
        Ok(SandboxedCommand { command, guard })
    }
}

/// Builds a [`Sandbox`].
#[derive(Debug, Clone)]
pub struct SandboxBuilder {
    config: SandboxConfig,
    helper: Option<PathBuf>,
    home: Option<PathBuf>,
    hidden: Vec<PathBuf>,
}

impl SandboxBuilder {
    /// The helper executable: one whose `main` calls [`crate::run_helper_if_requested`] first
    /// (the `tackle` binary, or this crate's `tackle-sandbox-helper` binary).
    pub fn helper(mut self, path: impl Into<PathBuf>) -> Self {
        self.helper = Some(path.into());
        self
    }

    /// The home directory `~/` stands for in configured paths.
    pub fn home(mut self, home: Option<PathBuf>) -> Self {
        self.home = home;
        self
    }

    /// Paths always hidden besides the configured ones (Tackle's data directory, its
    /// configuration and token files, other users' workspaces).
    pub fn hide<P: Into<PathBuf>>(mut self, paths: impl IntoIterator<Item = P>) -> Self {
        self.hidden.extend(paths.into_iter().map(Into::into));
        self
    }

    /// Finds the backend: the configured one, or with `auto` namespaces then Landlock, each
    /// tried for real. Without any, the sandbox is [`SandboxStatus::Unavailable`].
    pub fn detect(self) -> Sandbox {
        let home = self.home.as_deref();
        let expand = |paths: &[PathBuf]| paths.iter().map(|p| expand_home(p, home)).collect::<Vec<_>>();
        let writable = expand(&self.config.writable);
        let mut hidden = expand(&self.config.hidden);
        hidden.extend(self.hidden);
        let status = if self.config.mode == SandboxMode::Off {
            SandboxStatus::Off
        } else {
            match &self.helper {
                None => {
                    SandboxStatus::Unavailable { reason: "no sandbox helper executable was given".into() }
                }
                Some(helper) => detect_backend(self.config.backend, helper),
            }
        };
        Sandbox {
            inner: Arc::new(Inner { config: self.config, helper: self.helper, writable, hidden, status }),
        }
    }
}

fn detect_backend(choice: BackendChoice, helper: &Path) -> SandboxStatus {
    let namespaces = || probe_namespaces(helper).map(|()| Backend::Namespaces);
    let landlock = || probe_landlock(helper).map(|abi| Backend::Landlock { abi });
    let found = match choice {
        BackendChoice::Namespaces => namespaces().map_err(|e| format!("user namespaces: {e}")),
        BackendChoice::Landlock => landlock().map_err(|e| format!("Landlock: {e}")),
        BackendChoice::Auto => namespaces()
            .or_else(|ns| landlock().map_err(|ll| format!("user namespaces: {ns}; Landlock: {ll}"))),
    };
    match found {
        Ok(backend) => SandboxStatus::Enforced { backend },
        Err(reason) => SandboxStatus::Unavailable { reason },
    }
}
