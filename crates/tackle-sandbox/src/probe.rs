//! What this machine supports: each backend is tried for real (a sandbox is set up with the
//! helper and torn down), not guessed from kernel versions or sysctls.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::helper::{ERROR_PREFIX, HELPER_ARG};
use crate::{SandboxMode, SandboxPolicy};

/// How long a probe may take before it counts as a failure.
const PROBE_TIMEOUT: Duration = Duration::from_secs(10);

/// What this machine supports, each with the reason when it does not.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Support {
    /// Unprivileged user, mount, PID and network namespaces with a fresh `/proc`.
    pub namespaces: Result<(), Unsupported>,
    /// Landlock, with the ABI version the kernel offers.
    pub landlock: Result<u8, Unsupported>,
}

/// Why a sandbox backend does not work on this machine, as the probe found it for real (the
/// kernel's or the helper's own words, e.g. which `unshare` failed), so it can name the sysctl
/// or the container option to change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error)]
#[serde(transparent)]
#[error("{0}")]
pub struct Unsupported(String);

impl Unsupported {
    /// The reason, as text.
    pub fn reason(&self) -> &str {
        &self.0
    }
}

impl Support {
    /// Tries both backends with `helper` (see [`crate::run_helper_if_requested`]).
    pub fn probe(helper: &Path) -> Self {
        Self {
            namespaces: probe_namespaces(helper).map_err(Unsupported),
            landlock: probe_landlock(helper).map_err(Unsupported),
        }
    }
}

/// The namespace probe of this process's own helper, run at most once (see [`prefetch`]).
struct Prefetched {
    helper: PathBuf,
    namespaces: OnceLock<Result<(), String>>,
}

static PREFETCHED: OnceLock<Prefetched> = OnceLock::new();

/// Starts trying the namespace backend with `helper` on a background thread, so that the
/// sandbox an agent is built with later ([`crate::SandboxBuilder::detect`] with the same helper)
/// finds the answer ready instead of waiting for it: a program that will build a sandbox calls
/// this first thing. Later calls do nothing.
pub fn prefetch(helper: PathBuf) {
    if PREFETCHED.set(Prefetched { helper, namespaces: OnceLock::new() }).is_err() {
        return;
    }
    let spawned = std::thread::Builder::new().name("sandbox-probe".into()).spawn(|| {
        if let Some(p) = PREFETCHED.get() {
            p.namespaces.get_or_init(|| probe_namespaces_now(&p.helper));
        }
    });
    if let Err(e) = spawned {
        tracing::debug!(error = %e, "the sandbox probe runs when needed instead");
    }
}

/// Sets up a complete namespace sandbox (network off) and tears it down; the prefetched answer
/// when there is one for `helper` (waiting for it if it is still running).
pub(crate) fn probe_namespaces(helper: &Path) -> Result<(), String> {
    if let Some(p) = PREFETCHED.get().filter(|p| p.helper == helper) {
        return p.namespaces.get_or_init(|| probe_namespaces_now(helper)).clone();
    }
    probe_namespaces_now(helper)
}

fn probe_namespaces_now(helper: &Path) -> Result<(), String> {
    if !cfg!(target_os = "linux") {
        return Err("Linux namespaces exist only on Linux".into());
    }
    run_probe(helper, "ns")
}

/// Checks the kernel's Landlock ABI, then restricts a helper process for real.
pub(crate) fn probe_landlock(helper: &Path) -> Result<u8, String> {
    #[cfg(target_os = "linux")]
    {
        let abi = crate::helper::landlock_abi()?;
        if abi < crate::helper::LANDLOCK_MIN_ABI {
            return Err(format!(
                "Landlock ABI {abi} is too old: the sandbox needs ABI {} (Linux 6.2) or newer",
                crate::helper::LANDLOCK_MIN_ABI
            ));
        }
        run_probe(helper, "landlock")?;
        Ok(abi)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = helper;
        Err("Landlock exists only on Linux".into())
    }
}

/// Runs the helper's `stage` with a probe policy (a throwaway workspace, network off).
fn run_probe(helper: &Path, stage: &str) -> Result<(), String> {
    let workspace = tempfile::tempdir().map_err(|e| format!("cannot create a probe directory: {e}"))?;
    let mut policy = SandboxPolicy::builder(SandboxMode::WorkspaceWrite, workspace.path())
        .build()
        .map_err(|e| e.to_string())?;
    policy.probe = true;
    let json = policy.to_json().map_err(|e| e.to_string())?;
    let mut child = Command::new(helper)
        .arg(HELPER_ARG)
        .arg(stage)
        .arg(json)
        .arg("--")
        .env_clear()
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start the sandbox helper {}: {e}", helper.display()))?;
    let started = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if started.elapsed() < PROBE_TIMEOUT => std::thread::sleep(Duration::from_millis(2)),
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("the sandbox helper did not finish within {}s", PROBE_TIMEOUT.as_secs()));
            }
            Err(e) => return Err(format!("cannot wait for the sandbox helper: {e}")),
        }
    };
    let mut stderr = String::new();
    if let Some(mut pipe) = child.stderr.take() {
        let _ = pipe.read_to_string(&mut stderr);
    }
    if status.success() {
        return Ok(());
    }
    let reason = stderr
        .lines()
        .find_map(|l| l.strip_prefix(ERROR_PREFIX))
        .map(str::to_owned)
        .unwrap_or_else(|| format!("the sandbox helper {} failed ({status})", helper.display()));
    Err(reason)
}
