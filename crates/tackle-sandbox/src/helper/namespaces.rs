//! The namespace sandbox, in two stages.
//!
//! Stage 1 ([`outer`]) enters new user, mount, PID, IPC, UTS and cgroup namespaces (and a
//! network namespace when the network is off), maps its user to root of the new user namespace
//! and starts stage 2, which becomes PID 1 of the new PID namespace.
//!
//! Stage 2 ([`init`]) builds the new root the way bubblewrap does: a tmpfs becomes the root,
//! the old root is bound read-only under `/newroot`, then a fresh `/proc` (only the sandbox's
//! processes), a minimal `/dev`, a private `/tmp`, the workspace (writable unless read-only) and
//! empty mounts over the hidden paths. It pivots into `/newroot`, detaches the old root, and
//! enters a second user namespace that maps the caller's own uid, so the command holds no
//! capability over any mount: it can neither unmount what hides a path nor remount what is
//! read-only. Then it runs the command and stays as its reaper; when the command exits, every
//! process it left behind is killed with the namespace.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use nix::mount::{MntFlags, MsFlags, mount, umount2};
use nix::sched::{CloneFlags, unshare};
use nix::unistd::{chdir, fchdir, getgid, getuid, pivot_root, sethostname};

use super::{HELPER_ARG, HelperError, exit_code, mounts, netlink, seccomp};
use crate::{SandboxMode, SandboxPolicy};

/// Writes a `/proc/self/{uid_map,gid_map,setgroups}` file.
fn write_proc(file: &str, text: &str) -> Result<(), HelperError> {
    std::fs::write(format!("/proc/self/{file}"), text)
        .map_err(|e| HelperError::new(format!("cannot write {file}"), e))
}

/// Maps `inside` of the current (new) user namespace to `outside` of its parent, for both ids.
fn map_ids(uid_inside: u32, uid_outside: u32, gid_inside: u32, gid_outside: u32) -> Result<(), HelperError> {
    // Unprivileged gid maps need setgroups denied first; kernels before 3.19 have no such file.
    match std::fs::write("/proc/self/setgroups", "deny") {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(HelperError::new("cannot write setgroups", e)),
    }
    write_proc("uid_map", &format!("{uid_inside} {uid_outside} 1"))?;
    write_proc("gid_map", &format!("{gid_inside} {gid_outside} 1"))
}

/// Stage 1: new namespaces, then stage 2 as PID 1 of the new PID namespace.
pub(super) fn outer(
    policy: &SandboxPolicy,
    policy_json: &OsStr,
    command: &[OsString],
) -> Result<i32, HelperError> {
    let (uid, gid) = (getuid().as_raw(), getgid().as_raw());
    let mut flags = CloneFlags::CLONE_NEWUSER
        | CloneFlags::CLONE_NEWNS
        | CloneFlags::CLONE_NEWPID
        | CloneFlags::CLONE_NEWIPC
        | CloneFlags::CLONE_NEWUTS
        | CloneFlags::CLONE_NEWCGROUP;
    if !policy.network {
        flags |= CloneFlags::CLONE_NEWNET;
    }
    unshare(flags).map_err(|e| HelperError::new("cannot create the sandbox namespaces (unshare)", e))?;
    map_ids(0, uid, 0, gid)?;
    let status = Command::new("/proc/self/exe")
        .arg(HELPER_ARG)
        .arg("ns-init")
        .arg(policy_json)
        .arg(uid.to_string())
        .arg(gid.to_string())
        .arg("--")
        .args(command)
        .status()
        .map_err(|e| HelperError::new("cannot start the sandbox's init", e))?;
    Ok(exit_code(status))
}

/// One mount of the new root, applied shallowest first.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Op {
    /// Bind the host path at the same place, writable or read-only.
    Bind { path: PathBuf, writable: bool },
    /// Cover the host path with something empty.
    Hide { path: PathBuf },
}

impl Op {
    fn path(&self) -> &Path {
        match self {
            Self::Bind { path, .. } | Self::Hide { path } => path,
        }
    }
}

/// The workspace, the writable paths and the hidden paths, shallowest first, so that a path
/// inside another is mounted after it (the workspace inside a hidden directory stays visible; a
/// hidden directory inside the workspace stays hidden).
fn user_ops(policy: &SandboxPolicy) -> Vec<Op> {
    let writes = policy.mode == SandboxMode::WorkspaceWrite;
    let mut ops = vec![Op::Bind { path: policy.workspace.clone(), writable: writes }];
    ops.extend(policy.writable.iter().map(|p| Op::Bind { path: p.clone(), writable: writes }));
    ops.extend(policy.hidden.iter().map(|p| Op::Hide { path: p.clone() }));
    // Stable: at equal depth, binds come before hides, so hiding wins.
    ops.sort_by_key(|op| op.path().components().count());
    ops
}

/// `path` (absolute) under `root`.
fn under(root: &str, path: &Path) -> PathBuf {
    let relative = path.strip_prefix("/").unwrap_or(path);
    Path::new(root).join(relative)
}

fn io_err(what: &str, path: &Path, e: std::io::Error) -> HelperError {
    HelperError::new(format!("cannot {what} {}", path.display()), e)
}

/// Creates `target` as a directory, or as an empty file with its parents, to mount on.
fn make_mount_point(target: &Path, is_dir: bool) -> Result<(), HelperError> {
    if target.symlink_metadata().is_ok() {
        return Ok(());
    }
    if is_dir {
        std::fs::create_dir_all(target).map_err(|e| io_err("create", target, e))
    } else {
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent).map_err(|e| io_err("create", parent, e))?;
        }
        File::create(target).map(drop).map_err(|e| io_err("create", target, e))
    }
}

/// A minimal `/dev`: the usual character devices bound from the host, a private `shm`, a new
/// `pts` instance, and the standard links. Read-only afterwards (but `shm`).
fn setup_dev(dev: &Path, shm_writable: bool) -> Result<(), HelperError> {
    // The host's /dev (and its /dev/shm, shared with every process) goes away whole.
    let _ = umount2(dev, MntFlags::MNT_DETACH);
    mounts::tmpfs(dev, 0o755, MsFlags::empty())?;
    for node in ["null", "zero", "full", "random", "urandom", "tty"] {
        let source = Path::new("/oldroot/dev").join(node);
        if source.exists() {
            let target = dev.join(node);
            make_mount_point(&target, false)?;
            mounts::bind_one(&source, &target, MsFlags::empty())?;
        }
    }
    for (link, target) in [
        ("stdin", "/proc/self/fd/0"),
        ("stdout", "/proc/self/fd/1"),
        ("stderr", "/proc/self/fd/2"),
        ("fd", "/proc/self/fd"),
        ("ptmx", "pts/ptmx"),
    ] {
        let path = dev.join(link);
        std::os::unix::fs::symlink(target, &path).map_err(|e| io_err("create", &path, e))?;
    }
    let shm = dev.join("shm");
    std::fs::create_dir(&shm).map_err(|e| io_err("create", &shm, e))?;
    mounts::tmpfs(&shm, 0o1777, if shm_writable { MsFlags::empty() } else { MsFlags::MS_RDONLY })?;
    let pts = dev.join("pts");
    std::fs::create_dir(&pts).map_err(|e| io_err("create", &pts, e))?;
    // Without a pts instance only programs that open pseudo-terminals fail: not fatal.
    let _ = mount(
        Some("devpts"),
        &pts,
        Some("devpts"),
        MsFlags::MS_NOSUID | MsFlags::MS_NOEXEC,
        Some("newinstance,ptmxmode=0666,mode=620"),
    );
    mounts::make_readonly(dev)
}

/// A fresh `/proc` showing only the sandbox's processes, with the knobs that could reach the
/// kernel read-only (as bubblewrap does).
fn setup_proc(proc: &Path) -> Result<(), HelperError> {
    // The host's /proc would show every process (Tackle's environment among them).
    let _ = umount2(proc, MntFlags::MNT_DETACH);
    mounts::proc(proc)?;
    for knob in ["sys", "sysrq-trigger", "irq", "bus"] {
        let path = proc.join(knob);
        if path.exists() {
            let _ = mounts::bind_one(&path, &path, MsFlags::MS_RDONLY);
        }
    }
    Ok(())
}

/// Applies the workspace, writable and hidden paths under `/newroot`.
fn apply_user_ops(policy: &SandboxPolicy) -> Result<(), HelperError> {
    let ops = user_ops(policy);
    let mut to_seal = Vec::new();
    for op in &ops {
        let target = under("/newroot", op.path());
        match op {
            Op::Bind { path, writable } => {
                let source = under("/oldroot", path);
                let is_dir = source.is_dir();
                make_mount_point(&target, is_dir)?;
                let flags = MsFlags::MS_NODEV | if *writable { MsFlags::empty() } else { MsFlags::MS_RDONLY };
                mounts::bind_tree(&source, &target, flags)?;
            }
            Op::Hide { .. } => {
                // Already out of sight (e.g. it was in the host's /tmp, now a fresh tmpfs).
                let Ok(meta) = target.symlink_metadata() else { continue };
                if meta.is_dir() {
                    // Writable until the paths mounted inside it have their mount points.
                    mounts::tmpfs(&target, 0o755, MsFlags::MS_NOEXEC)?;
                    to_seal.push(target);
                } else {
                    mounts::bind_one(Path::new("/empty"), &target, MsFlags::MS_RDONLY | MsFlags::MS_NODEV)?;
                }
            }
        }
    }
    for target in to_seal {
        mounts::make_readonly(&target)?;
    }
    Ok(())
}

/// Stage 2, PID 1 of the sandbox: builds the new root, drops to the caller's uid in a second
/// user namespace, runs the command and returns its exit code.
pub(super) fn init(
    policy: &SandboxPolicy,
    uid: u32,
    gid: u32,
    command: &[OsString],
) -> Result<i32, HelperError> {
    // If stage 1 dies, so does the sandbox (and with PID 1, every process in it).
    nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL)
        .map_err(|e| HelperError::new("cannot set the parent-death signal", e))?;
    // Nothing mounted here may propagate back to the host.
    mount(None::<&str>, "/", None::<&str>, MsFlags::MS_REC | MsFlags::MS_PRIVATE, None::<&str>)
        .map_err(|e| HelperError::new("cannot make the mounts private", e))?;

    // A tmpfs becomes the root; the old root is kept under /oldroot while the new one is built.
    let base = Path::new("/tmp");
    mounts::tmpfs(base, 0o755, MsFlags::empty())?;
    chdir(base).map_err(|e| HelperError::new("cannot enter the new root", e))?;
    for dir in ["newroot", "oldroot"] {
        std::fs::create_dir(dir).map_err(|e| io_err("create", Path::new(dir), e))?;
    }
    File::create("empty").map_err(|e| io_err("create", Path::new("/empty"), e))?;
    std::fs::set_permissions("empty", std::fs::Permissions::from_mode(0o444))
        .map_err(|e| io_err("chmod", Path::new("/empty"), e))?;
    pivot_root(".", "oldroot").map_err(|e| HelperError::new("cannot pivot to the new root", e))?;
    chdir("/").map_err(|e| HelperError::new("cannot enter the new root", e))?;

    // Everything read-only (and without setuid), then what may differ.
    let newroot = Path::new("/newroot");
    mounts::bind_tree(Path::new("/oldroot"), newroot, MsFlags::MS_RDONLY)?;
    setup_proc(&under("/newroot", Path::new("/proc")))?;
    let writes = policy.mode == SandboxMode::WorkspaceWrite;
    setup_dev(&under("/newroot", Path::new("/dev")), writes)?;
    let tmp_flags = if writes { MsFlags::empty() } else { MsFlags::MS_RDONLY };
    // Writable until the workspace (which may live under /tmp) has its mount point in it.
    let tmp = under("/newroot", Path::new("/tmp"));
    mounts::tmpfs(&tmp, 0o1777, MsFlags::empty())?;
    if !policy.network {
        // Sockets of host services (docker, dbus, databases) live in /run: a socket on a
        // read-only mount can still be connected to.
        let run = under("/newroot", Path::new("/run"));
        if run.is_dir() {
            let _ = umount2(&run, MntFlags::MNT_DETACH);
            mounts::tmpfs(&run, 0o755, tmp_flags)?;
        }
    }
    apply_user_ops(policy)?;
    if !writes {
        mounts::make_readonly(&tmp)?;
    }

    // Leave the old root behind: detach it, then make /newroot the root.
    mount(None::<&str>, "/oldroot", None::<&str>, MsFlags::MS_REC | MsFlags::MS_PRIVATE, None::<&str>)
        .map_err(|e| HelperError::new("cannot make the old root private", e))?;
    umount2("/oldroot", MntFlags::MNT_DETACH)
        .map_err(|e| HelperError::new("cannot detach the old root", e))?;
    let old_root = File::open("/").map_err(|e| io_err("open", Path::new("/"), e))?;
    chdir(newroot).map_err(|e| HelperError::new("cannot enter /newroot", e))?;
    pivot_root(".", ".").map_err(|e| HelperError::new("cannot pivot to /newroot", e))?;
    fchdir(&old_root).map_err(|e| HelperError::new("cannot return to the old root", e))?;
    umount2(".", MntFlags::MNT_DETACH).map_err(|e| HelperError::new("cannot detach the build root", e))?;
    drop(old_root);
    chdir("/").map_err(|e| HelperError::new("cannot enter the sandbox root", e))?;

    if !policy.network {
        netlink::loopback_up().map_err(|e| HelperError::new("cannot bring the loopback interface up", e))?;
    }
    let _ = sethostname("tackle-sandbox");

    // The command gets the caller's own uid in a user namespace of its own: no capability over
    // the mounts above, the PID namespace or the network namespace.
    unshare(CloneFlags::CLONE_NEWUSER)
        .map_err(|e| HelperError::new("cannot create the inner user namespace", e))?;
    map_ids(uid, 0, gid, 0)?;
    nix::sys::prctl::set_no_new_privs().map_err(|e| HelperError::new("cannot set no_new_privs", e))?;
    seccomp::apply(policy, seccomp::Backend::Namespaces)?;
    chdir(&policy.cwd).map_err(|e| HelperError::new(format!("cannot enter {}", policy.cwd.display()), e))?;
    if policy.probe {
        return Ok(0);
    }
    // In the inner user namespace, RLIMIT_NPROC counts this call's processes only (but the
    // kernel exempts root from it: PID 1 also counts them, below).
    super::limits::apply(policy.limits, true)?;
    let (program, args) = command.split_first().ok_or_else(|| HelperError("no command given".into()))?;
    // PID 1 reaps the orphans re-parented to it, and counts the command's processes.
    super::landlock_rules::reaper::run(program, args, policy.limits.processes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(workspace: &str, hidden: &[&str], writable: &[&str]) -> SandboxPolicy {
        SandboxPolicy {
            mode: SandboxMode::WorkspaceWrite,
            network: false,
            workspace: workspace.into(),
            writable: writable.iter().map(PathBuf::from).collect(),
            hidden: hidden.iter().map(PathBuf::from).collect(),
            cwd: workspace.into(),
            tmp: None,
            probe: false,
            limits: crate::SandboxLimits::NONE,
        }
    }

    #[test]
    fn deeper_paths_are_mounted_after_the_paths_containing_them() {
        let ops = user_ops(&policy("/srv/data/ws", &["/srv/data", "/srv/data/ws/.tackle"], &[]));
        let paths: Vec<&Path> = ops.iter().map(Op::path).collect();
        assert_eq!(
            paths,
            [Path::new("/srv/data"), Path::new("/srv/data/ws"), Path::new("/srv/data/ws/.tackle")]
        );
        assert!(matches!(ops[1], Op::Bind { writable: true, .. }));
    }

    #[test]
    fn read_only_binds_nothing_writable() {
        let mut p = policy("/ws", &[], &["/cache"]);
        p.mode = SandboxMode::ReadOnly;
        assert!(user_ops(&p).iter().all(|op| matches!(op, Op::Bind { writable: false, .. })));
    }

    #[test]
    fn paths_go_under_a_root() {
        assert_eq!(under("/newroot", Path::new("/a/b")), PathBuf::from("/newroot/a/b"));
        assert_eq!(under("/oldroot", Path::new("/")), PathBuf::from("/oldroot"));
    }
}
