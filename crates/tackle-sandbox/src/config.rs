//! `[sandbox]` in `tackle.toml`: what commands may touch, and how it is enforced.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// What a sandboxed command may write.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SandboxMode {
    /// Nothing: the whole filesystem is read-only, `/tmp` included.
    ReadOnly,
    /// The workspace, a private `/tmp` and the configured `writable` paths; the rest is
    /// read-only.
    #[default]
    WorkspaceWrite,
    /// No sandbox: commands run as Tackle's own user with the allowlisted environment only.
    Off,
}

impl SandboxMode {
    /// The name used in `tackle.toml`: `read-only`, `workspace-write` or `off`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ReadOnly => "read-only",
            Self::WorkspaceWrite => "workspace-write",
            Self::Off => "off",
        }
    }
}

impl fmt::Display for SandboxMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A `[sandbox]` word that names none of its setting's values.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum UnknownSandboxValue {
    /// Not a [`SandboxMode`].
    #[error("{0:?} is not a sandbox mode; use read-only, workspace-write or off")]
    Mode(String),
    /// Not a [`BackendChoice`].
    #[error("{0:?} is not a sandbox backend; use auto, namespaces or landlock")]
    Backend(String),
}

impl FromStr for SandboxMode {
    type Err = UnknownSandboxValue;

    /// ```
    /// use tackle_sandbox::SandboxMode;
    /// assert_eq!("read-only".parse::<SandboxMode>(), Ok(SandboxMode::ReadOnly));
    /// assert!("danger".parse::<SandboxMode>().unwrap_err().to_string().contains("workspace-write"));
    /// ```
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "read-only" => Ok(Self::ReadOnly),
            "workspace-write" => Ok(Self::WorkspaceWrite),
            "off" => Ok(Self::Off),
            other => Err(UnknownSandboxValue::Mode(other.to_owned())),
        }
    }
}

/// How the sandbox is enforced.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BackendChoice {
    /// Linux namespaces when this machine allows them, else Landlock, else a refusal.
    #[default]
    Auto,
    /// Only Linux user, mount, PID (and network) namespaces.
    Namespaces,
    /// Only Landlock (+ seccomp for the network), for containers without user namespaces.
    Landlock,
}

impl BackendChoice {
    /// The name used in `tackle.toml`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Auto => "auto",
            Self::Namespaces => "namespaces",
            Self::Landlock => "landlock",
        }
    }
}

impl FromStr for BackendChoice {
    type Err = UnknownSandboxValue;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "auto" => Ok(Self::Auto),
            "namespaces" => Ok(Self::Namespaces),
            "landlock" => Ok(Self::Landlock),
            other => Err(UnknownSandboxValue::Backend(other.to_owned())),
        }
    }
}

/// The `[sandbox]` table.
///
/// ```toml
/// [sandbox]
/// mode = "workspace-write"      # or "read-only", or "off"
/// network = false               # commands reach no network (loopback included)
/// backend = "auto"              # or "namespaces", "landlock"
/// writable = ["~/.cargo"]       # more writable paths (workspace-write only)
/// hidden = ["~/.ssh", "~/.aws"] # paths commands cannot read at all
///
/// [sandbox.limits]               # per sandboxed command; 0 = no limit
/// memory_mib = 2048
/// processes = 512
/// cpu_secs = 600
/// file_size_mib = 1024
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SandboxConfig {
    /// What commands may write (`TACKLE_SANDBOX_MODE`).
    pub mode: SandboxMode,
    /// Whether commands may use the network (`TACKLE_SANDBOX_NETWORK`).
    pub network: bool,
    /// How the sandbox is enforced (`TACKLE_SANDBOX_BACKEND`).
    pub backend: BackendChoice,
    /// Paths writable besides the workspace and `/tmp` in `workspace-write` mode (`~/` is the
    /// home directory).
    pub writable: Vec<PathBuf>,
    /// Paths commands cannot read, besides Tackle's own data directory, configuration file and
    /// token file, which are always hidden.
    pub hidden: Vec<PathBuf>,
    /// Resource limits of every sandboxed command (`TACKLE_SANDBOX_LIMITS_*`).
    pub limits: SandboxLimits,
}

/// Resource limits of a sandboxed command (`[sandbox.limits]`); `0` means no limit.
///
/// Enforced by the kernel on the command and everything it starts, on both backends:
/// memory, CPU time and file size as resource limits of each process (`RLIMIT_DATA`,
/// `RLIMIT_CPU`, `RLIMIT_FSIZE`); the number of processes as `RLIMIT_NPROC` inside the call's
/// own user namespace (namespaces backend: it counts the call's processes only), and by the
/// helper counting the processes below it and stopping the call past the limit (Landlock backend,
/// where `RLIMIT_NPROC` would count all of the user's processes, and none of root's).
///
/// ```
/// let limits = tackle_sandbox::SandboxLimits::default();
/// assert_eq!(limits.memory_mib, 2048);
/// assert_eq!(limits.processes, 512);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SandboxLimits {
    /// Heap and other private writable memory of each process, in MiB
    /// (`TACKLE_SANDBOX_LIMITS_MEMORY_MIB`). Address space merely reserved (as V8 or Go do) does
    /// not count.
    pub memory_mib: u64,
    /// Processes (threads included) running at once in one call
    /// (`TACKLE_SANDBOX_LIMITS_PROCESSES`).
    pub processes: u64,
    /// CPU time of each process, in seconds (`TACKLE_SANDBOX_LIMITS_CPU_SECS`): past it the
    /// process gets `SIGXCPU`, a second later `SIGKILL`.
    pub cpu_secs: u64,
    /// Largest file a process may write, in MiB (`TACKLE_SANDBOX_LIMITS_FILE_SIZE_MIB`): past it
    /// the write fails and the process gets `SIGXFSZ`.
    pub file_size_mib: u64,
}

impl Default for SandboxLimits {
    fn default() -> Self {
        Self { memory_mib: 2048, processes: 512, cpu_secs: 600, file_size_mib: 1024 }
    }
}

impl SandboxLimits {
    /// No limit at all.
    pub const NONE: Self = Self { memory_mib: 0, processes: 0, cpu_secs: 0, file_size_mib: 0 };
}

impl Default for SandboxConfig {
    fn default() -> Self {
        Self {
            mode: SandboxMode::WorkspaceWrite,
            network: false,
            backend: BackendChoice::Auto,
            writable: Vec::new(),
            hidden: Vec::new(),
            limits: SandboxLimits::default(),
        }
    }
}

/// `path` with a leading `~/` replaced by `home` (paths without it are returned as they are).
///
/// ```
/// use std::path::{Path, PathBuf};
/// let home = Some(Path::new("/home/ada"));
/// assert_eq!(tackle_sandbox::expand_home(Path::new("~/.ssh"), home), PathBuf::from("/home/ada/.ssh"));
/// assert_eq!(tackle_sandbox::expand_home(Path::new("/srv"), home), PathBuf::from("/srv"));
/// ```
pub fn expand_home(path: &std::path::Path, home: Option<&std::path::Path>) -> PathBuf {
    match (path.strip_prefix("~"), home) {
        (Ok(rest), Some(home)) => home.join(rest),
        _ => path.to_owned(),
    }
}
