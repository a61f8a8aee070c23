//! The resource limits of [`SandboxLimits`], set on the helper just before it starts the
//! command, which inherits them (and cannot raise them: soft and hard limits are both set).

use nix::sys::resource::{Resource, rlim_t, setrlimit};
use nix::unistd::Pid;

use crate::SandboxLimits;
use crate::helper::HelperError;

const MIB: u64 = 1024 * 1024;

/// How often the helper counts the command's processes. A burst of forks can exceed the limit
/// by what it starts in one tick before the call is stopped.
pub(crate) const TICK: std::time::Duration = std::time::Duration::from_millis(20);

/// The line the helper writes when it stops a call for running too many processes.
pub(crate) fn too_many(running: u64, max: u64) -> String {
    format!(
        "{}processes: the command ran {running} processes at once, more than the limit of {max}, and was \
         stopped",
        crate::helper::LIMIT_PREFIX
    )
}

/// Sets the limits of `limits` that are not 0; `RLIMIT_NPROC` only when `processes` (it counts
/// the processes of the user in the current user namespace).
pub(crate) fn apply(limits: SandboxLimits, processes: bool) -> Result<(), HelperError> {
    let set = |resource: Resource, soft: u64, hard: u64, name: &str| -> Result<(), HelperError> {
        setrlimit(resource, soft as rlim_t, hard as rlim_t)
            .map_err(|e| HelperError::new(format!("cannot set the {name} limit"), e))
    };
    if limits.memory_mib > 0 {
        let bytes = limits.memory_mib.saturating_mul(MIB);
        set(Resource::RLIMIT_DATA, bytes, bytes, "memory")?;
    }
    if limits.cpu_secs > 0 {
        // SIGXCPU at the soft limit (which a process can catch), SIGKILL a second later.
        set(Resource::RLIMIT_CPU, limits.cpu_secs, limits.cpu_secs.saturating_add(1), "CPU time")?;
    }
    if limits.file_size_mib > 0 {
        let bytes = limits.file_size_mib.saturating_mul(MIB);
        set(Resource::RLIMIT_FSIZE, bytes, bytes, "file size")?;
    }
    if processes && limits.processes > 0 {
        set(Resource::RLIMIT_NPROC, limits.processes, limits.processes, "process")?;
    }
    Ok(())
}

/// Tasks (processes and their threads) below `root`, `root` excluded, found through
/// `/proc/PID/task/TID/children`; counting stops past `max`.
pub(crate) fn tasks_below(root: Pid, max: u64) -> u64 {
    let mut count = 0u64;
    let mut pending = children_of(root.as_raw());
    while let Some(pid) = pending.pop() {
        if count > max {
            break;
        }
        count += std::fs::read_dir(format!("/proc/{pid}/task")).map(|d| d.count() as u64).unwrap_or(1);
        pending.extend(children_of(pid));
    }
    count
}

pub(crate) fn children_of(pid: i32) -> Vec<i32> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else { return Vec::new() };
    tasks
        .flatten()
        .filter_map(|task| std::fs::read_to_string(task.path().join("children")).ok())
        .flat_map(|list| list.split_whitespace().filter_map(|p| p.parse().ok()).collect::<Vec<i32>>())
        .collect()
}
