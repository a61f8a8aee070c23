//! The Landlock sandbox, for machines (containers) without user namespaces.
//!
//! Landlock is an allowlist enforced by the kernel on the process and what it executes:
//!
//! - read and execute: all of `/` except the hidden paths (a rule covers a whole hierarchy and
//!   rules only add, so a hidden path's ancestors are covered by rules on their other
//!   children); listing directories stays allowed everywhere (names, not contents);
//! - write: the workspace, a private temporary directory and the `writable` paths
//!   (`workspace-write` only), minus the hidden paths; the usual character devices;
//! - TCP bind and connect: denied when the network is off (with seccomp refusing every IPv4,
//!   IPv6, packet and vsock socket, UDP included);
//! - abstract UNIX sockets and signals: scoped to the sandbox (kernel 6.12+).
//!
//! A process in a Landlock domain without `CAP_SYS_PTRACE` can neither ptrace nor read
//! `/proc/<pid>/environ` or `/proc/<pid>/mem` of a process outside it (Tackle), so a command
//! started as root loses every capability before it runs.
//!
//! What it cannot do that namespaces do: give `/tmp` a private mount (commands writing to
//! `/tmp` itself fail; `TMPDIR` points to the private directory), or hide other processes from
//! `ps` (their command lines stay readable, as for any process of the machine).

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use landlock::{
    ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, Ruleset, RulesetAttr, RulesetCreatedAttr,
    RulesetStatus, Scope, path_beneath_rules,
};

use super::{HelperError, seccomp};
use crate::{SandboxMode, SandboxPolicy};

/// The oldest ABI the sandbox accepts: 3 (Linux 6.2) is the first to govern truncation, without
/// which a read-only file could still be emptied.
pub(crate) const MIN_ABI: u8 = 3;

/// The highest Landlock ABI this kernel supports (and this crate knows), or why there is none.
pub(crate) fn landlock_abi() -> Result<u8, String> {
    for (abi, number) in [(ABI::V6, 6), (ABI::V5, 5), (ABI::V4, 4), (ABI::V3, 3), (ABI::V2, 2), (ABI::V1, 1)]
    {
        let created = Ruleset::default()
            .set_compatibility(CompatLevel::HardRequirement)
            .handle_access(AccessFs::from_all(abi))
            .and_then(|r| r.create());
        if created.is_ok() {
            return Ok(number);
        }
    }
    Err("Landlock is not enabled in this kernel (or a seccomp profile blocks it)".into())
}

fn abi_of(number: u8) -> ABI {
    ABI::from(i32::from(number))
}

/// `roots` minus the `hidden` hierarchies: where a hidden path lies inside a root, the root is
/// replaced by the other entries of each directory on the way down to it. Symbolic links are
/// left out (their targets get rules where they really are).
///
/// A root inside a hidden path (the workspace inside a hidden directory) stays whole.
pub(crate) fn grant_except(roots: &[PathBuf], hidden: &[PathBuf]) -> Vec<PathBuf> {
    let mut grants: Vec<PathBuf> = roots.to_vec();
    for h in hidden {
        let mut next = Vec::with_capacity(grants.len());
        for g in grants {
            if h == &g {
                continue;
            }
            if let Ok(below) = h.strip_prefix(&g) {
                let mut dir = g.clone();
                for component in below.components() {
                    let on_path = dir.join(component);
                    if let Ok(entries) = std::fs::read_dir(&dir) {
                        for entry in entries.flatten() {
                            let path = entry.path();
                            let is_link = entry.file_type().map(|t| t.is_symlink()).unwrap_or(true);
                            if path != on_path && !is_link {
                                next.push(path);
                            }
                        }
                    }
                    dir = on_path;
                }
            } else {
                next.push(g);
            }
        }
        grants = next;
    }
    grants
}

/// Device files any command may write to.
const DEVICES: [&str; 6] = ["/dev/null", "/dev/zero", "/dev/full", "/dev/tty", "/dev/ptmx", "/dev/pts"];

fn ll_err(what: &str, e: impl std::fmt::Display) -> HelperError {
    HelperError::new(format!("Landlock: cannot {what}"), e)
}

/// Makes sure the command holds no capability, even as root: Landlock lets a process with
/// `CAP_SYS_PTRACE` read `/proc/<pid>/environ` and `mem` of processes outside its domain, and
/// other capabilities reach beyond the filesystem. Emptying the bounding set (which needs
/// `CAP_SETPCAP`, so only a privileged process has anything to drop) means `execve` grants
/// none; `no_new_privs` already keeps setuid and file capabilities from granting any.
fn drop_capabilities() -> Result<(), HelperError> {
    use caps::{CapSet, Capability};
    let privileged = caps::has_cap(None, CapSet::Effective, Capability::CAP_SETPCAP)
        .map_err(|e| HelperError::new("cannot read capabilities", e))?;
    if !privileged {
        return Ok(());
    }
    for set in [CapSet::Bounding, CapSet::Ambient, CapSet::Inheritable] {
        caps::clear(None, set)
            .map_err(|e| HelperError::new(format!("cannot clear the {set:?} capabilities"), e))?;
    }
    Ok(())
}

/// Restricts this process to `policy`, then executes the command (which inherits the
/// restrictions). Returns only on failure.
pub(super) fn exec_restricted(policy: &SandboxPolicy, command: &[OsString]) -> Result<i32, HelperError> {
    let number = landlock_abi().map_err(|e| HelperError::new("Landlock is unavailable", e))?;
    if number < MIN_ABI {
        return Err(HelperError(format!(
            "Landlock ABI {number} is too old: the sandbox needs ABI {MIN_ABI} (Linux 6.2) or newer"
        )));
    }
    if let Some((writable, hidden)) = policy.hidden_inside_writable() {
        return Err(HelperError(crate::policy::landlock_conflict(writable, hidden)));
    }
    let abi = abi_of(number);
    let read = AccessFs::from_read(abi);
    let all = AccessFs::from_all(abi);

    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(all)
        .map_err(|e| ll_err("handle file access", e))?
        .set_compatibility(CompatLevel::BestEffort);
    if !policy.network && number >= 4 {
        ruleset = ruleset
            .handle_access(AccessNet::from_all(abi))
            .map_err(|e| ll_err("handle network access", e))?;
    }
    if number >= 6 {
        ruleset = ruleset.scope(Scope::from_all(abi)).map_err(|e| ll_err("scope signals and sockets", e))?;
    }
    let mut writable = Vec::new();
    if policy.mode == SandboxMode::WorkspaceWrite {
        writable.push(policy.workspace.clone());
        writable.extend(policy.writable.iter().cloned());
        writable.extend(policy.tmp.iter().cloned());
    }
    let readable = grant_except(&[PathBuf::from("/")], &policy.hidden);
    let writable = grant_except(&writable, &policy.hidden);
    let created = ruleset
        .create()
        .map_err(|e| ll_err("create the ruleset", e))?
        .add_rules(path_beneath_rules([Path::new("/")], AccessFs::ReadDir))
        .map_err(|e| ll_err("allow listing", e))?
        .add_rules(path_beneath_rules(&readable, read))
        .map_err(|e| ll_err("allow reading", e))?
        .add_rules(path_beneath_rules(&writable, all))
        .map_err(|e| ll_err("allow writing", e))?
        .add_rules(path_beneath_rules(DEVICES, read | AccessFs::WriteFile))
        .map_err(|e| ll_err("allow devices", e))?;
    let status = created.restrict_self().map_err(|e| ll_err("restrict the process", e))?;
    if status.ruleset == RulesetStatus::NotEnforced {
        return Err(HelperError("Landlock restrictions were not enforced".into()));
    }
    drop_capabilities()?;
    seccomp::apply(policy, seccomp::Backend::Landlock)?;
    std::env::set_current_dir(&policy.cwd)
        .map_err(|e| HelperError::new(format!("cannot enter {}", policy.cwd.display()), e))?;
    if policy.probe {
        return Ok(0);
    }
    let (program, args) = command.split_first().ok_or_else(|| HelperError("no command given".into()))?;
    // RLIMIT_NPROC would count every process of the user here (and none of root's, which the
    // kernel exempts): the reaper counts the call's own processes instead.
    super::limits::apply(policy.limits, false)?;
    reaper::run(program, args, policy.limits.processes)
}

/// The helper stays as the command's reaper, so that everything the command starts dies with it
/// (the namespace backend gets this from its PID namespace).
///
/// The helper is a child subreaper: a process the command leaves behind, detached or not
/// (`setsid`, `nohup`, a double fork), is re-parented to it rather than to the machine's init.
/// When the command exits, when the helper is asked to stop (`SIGTERM`, `SIGINT`, `SIGHUP`: how
/// Tackle ends a call that timed out or was cancelled), or when its parent dies, it kills every
/// process below it and reaps them, then exits with the command's status.
pub(crate) mod reaper {
    use std::ffi::{OsStr, OsString};
    use std::os::fd::AsFd;
    use std::process::Command;
    use std::time::{Duration, Instant};

    use nix::errno::Errno;
    use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
    use nix::sys::signal::{Signal, kill};
    use nix::sys::signalfd::{SfdFlags, SigSet, SignalFd};
    use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
    use nix::unistd::{Pid, getppid};

    use crate::helper::HelperError;

    /// How often the helper counts the command's processes and looks for its parent, at the
    /// latest; an exit or a stop signal wakes it at once.
    const TICK: Duration = crate::helper::limits::TICK;

    pub(crate) fn run(program: &OsStr, args: &[OsString], max_processes: u64) -> Result<i32, HelperError> {
        nix::sys::prctl::set_child_subreaper(true)
            .map_err(|e| HelperError::new("cannot become the command's reaper", e))?;
        let parent = getppid();
        // Read from a descriptor, blocked here (the command starts with an empty mask): the stop
        // signals, and SIGCHLD, which wakes the wait below when a child exits, so that the call
        // ends when its command does rather than at the next tick.
        let mut watched = SigSet::empty();
        for signal in [Signal::SIGTERM, Signal::SIGINT, Signal::SIGHUP, Signal::SIGCHLD] {
            watched.add(signal);
        }
        watched.thread_block().map_err(|e| HelperError::new("cannot block the stop signals", e))?;
        let signals = SignalFd::with_flags(&watched, SfdFlags::SFD_NONBLOCK | SfdFlags::SFD_CLOEXEC)
            .map_err(|e| HelperError::new("cannot watch the stop signals", e))?;
        let child = Command::new(program)
            .args(args)
            .spawn()
            .map_err(|e| HelperError::new(format!("cannot run {}", program.to_string_lossy()), e))?;
        let main = Pid::from_raw(i32::try_from(child.id()).unwrap_or(i32::MAX));
        let tick = PollTimeout::try_from(TICK).unwrap_or(PollTimeout::MAX);
        let mut counted: Option<Instant> = None;
        let code = loop {
            // The signals first, then the exits: a child that exits after this read leaves its
            // SIGCHLD pending, and the wait below returns at once.
            let mut stop = None;
            while let Ok(Some(info)) = signals.read_signal() {
                if info.ssi_signo != Signal::SIGCHLD as u32 {
                    stop = Some(info.ssi_signo);
                }
            }
            if let Some(code) = reap(main) {
                break code;
            }
            if let Some(signo) = stop {
                kill_descendants();
                break 128 + i32::try_from(signo).unwrap_or(0);
            }
            if getppid() != parent {
                // Tackle is gone: nobody waits for the command any more.
                kill_descendants();
                break 128 + Signal::SIGKILL as i32;
            }
            if max_processes > 0 && counted.is_none_or(|at| at.elapsed() >= TICK) {
                counted = Some(Instant::now());
                let running = crate::helper::limits::tasks_below(nix::unistd::getpid(), max_processes);
                if running > max_processes {
                    kill_descendants();
                    eprintln!("{}", crate::helper::limits::too_many(running, max_processes));
                    break 128 + Signal::SIGKILL as i32;
                }
            }
            // Until a signal (an exit, a stop) or the next tick; an error (EINTR) only loops.
            let _ = poll(&mut [PollFd::new(signals.as_fd(), PollFlags::POLLIN)], tick);
        };
        kill_descendants();
        Ok(code)
    }

    /// Reaps every child that exited; the command's exit code once it has.
    fn reap(main: Pid) -> Option<i32> {
        let mut code = None;
        loop {
            match waitpid(None, Some(WaitPidFlag::WNOHANG)) {
                Ok(WaitStatus::Exited(pid, c)) if pid == main => code = Some(c),
                Ok(WaitStatus::Signaled(pid, signal, _)) if pid == main => code = Some(128 + signal as i32),
                Ok(WaitStatus::StillAlive) | Err(_) => return code,
                Ok(_) => {}
            }
        }
    }

    /// The children of this process (its own and those re-parented to it).
    fn children() -> Vec<Pid> {
        let Ok(tasks) = std::fs::read_dir("/proc/self/task") else { return Vec::new() };
        tasks
            .flatten()
            .filter_map(|task| std::fs::read_to_string(task.path().join("children")).ok())
            .flat_map(|list| list.split_whitespace().filter_map(|p| p.parse().ok()).collect::<Vec<i32>>())
            .map(Pid::from_raw)
            .collect()
    }

    /// Kills every process below this one. As PID 1 of a PID namespace, `kill(-1)` reaches them
    /// all at once. Otherwise the whole tree is walked and killed, parents before their children
    /// (its children listed just before, as a dead process lists none), and the walk is repeated until nothing is
    /// left: what was forked during one walk is re-parented here and found by the next.
    fn kill_descendants() {
        let pid1 = nix::unistd::getpid().as_raw() == 1;
        loop {
            if pid1 {
                let _ = kill(Pid::from_raw(-1), Signal::SIGKILL);
            }
            let mut pending = children();
            let any = !pending.is_empty();
            while let Some(pid) = pending.pop() {
                // Its children first: once it is dead, they are no longer listed under it.
                pending
                    .extend(crate::helper::limits::children_of(pid.as_raw()).into_iter().map(Pid::from_raw));
                let _ = kill(pid, Signal::SIGKILL);
            }
            // Reap what has gone; wait for one more when some are still dying.
            loop {
                match waitpid(None, Some(WaitPidFlag::WNOHANG)) {
                    Ok(WaitStatus::StillAlive) => break,
                    Err(Errno::ECHILD) if !any => return,
                    Err(_) => break,
                    Ok(_) => {}
                }
            }
            if !any && children().is_empty() {
                return;
            }
            // Not a blocking wait: what this walk missed may be alive and well, and must be
            // found by the next one rather than waited for.
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hidden_path_splits_the_root_into_its_siblings() {
        let root = tempfile::tempdir().unwrap();
        let r = root.path();
        for d in ["a/x", "a/data/db", "b"] {
            std::fs::create_dir_all(r.join(d)).unwrap();
        }
        std::fs::write(r.join("a/file"), "").unwrap();
        std::os::unix::fs::symlink(r.join("a/data"), r.join("a/link")).unwrap();
        let mut grants = grant_except(&[r.to_owned()], &[r.join("a/data")]);
        grants.sort();
        assert_eq!(grants, [r.join("a/file"), r.join("a/x"), r.join("b")]);
    }

    #[test]
    fn a_root_inside_a_hidden_path_stays_and_a_hidden_root_goes() {
        let root = tempfile::tempdir().unwrap();
        let r = root.path();
        std::fs::create_dir_all(r.join("data/ws")).unwrap();
        let grants = grant_except(&[r.join("data/ws"), r.join("data")], &[r.join("data")]);
        assert_eq!(grants, [r.join("data/ws")]);
    }
}
