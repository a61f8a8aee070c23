//! seccomp filters of sandboxed commands.
//!
//! - Always: system calls a command has no business making and that widen the kernel's attack
//!   surface or reach state outside the sandbox (the kernel keyring, BPF, perf, userfaultfd,
//!   io_uring, kernel modules, kexec) fail with `EPERM`.
//! - Landlock with the network off: Landlock only governs TCP, so creating any IPv4, IPv6,
//!   packet or vsock socket fails with `EACCES` (UDP and raw sockets included). With
//!   namespaces the empty network namespace does that.
//! - Either backend with the network off: creating a UNIX socket fails with `EACCES`. A
//!   pathname socket is reachable through any mount that shows it (a database's socket
//!   directory, `/run`, `/opt`): neither a read-only mount nor an empty network namespace
//!   stops a `connect`, and Landlock (up to ABI 6) does not govern it. `socketpair` stays
//!   allowed: a connected pair reaches nothing outside the command's own processes.
//!
//! A filter is tied to the native architecture: system calls of another ABI (32-bit x86 from
//! a 64-bit process) kill the process, so a filter cannot be bypassed through them.

use std::collections::BTreeMap;

use nix::libc;
use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter, SeccompRule,
    TargetArch,
};

use super::HelperError;
use crate::SandboxPolicy;

/// Which isolation the filter complements.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Backend {
    Namespaces,
    Landlock,
}

/// System calls no sandboxed command may make.
const DENIED: &[libc::c_long] = &[
    libc::SYS_keyctl,
    libc::SYS_add_key,
    libc::SYS_request_key,
    libc::SYS_bpf,
    libc::SYS_perf_event_open,
    libc::SYS_userfaultfd,
    libc::SYS_io_uring_setup,
    libc::SYS_io_uring_enter,
    libc::SYS_io_uring_register,
    libc::SYS_init_module,
    libc::SYS_finit_module,
    libc::SYS_delete_module,
    libc::SYS_kexec_load,
    libc::SYS_kexec_file_load,
];

/// Socket families that reach a network.
const NETWORK_FAMILIES: [libc::c_int; 4] = [libc::AF_INET, libc::AF_INET6, libc::AF_PACKET, libc::AF_VSOCK];

/// `nr` and, on x86-64, its x32-ABI alias (same audit architecture, bit 30 set).
// `c_long` is `i64` here, `i32` on 32-bit targets.
#[allow(clippy::useless_conversion)]
fn with_aliases(nr: libc::c_long) -> Vec<i64> {
    let nr = i64::from(nr);
    if cfg!(target_arch = "x86_64") { vec![nr, nr | 0x4000_0000] } else { vec![nr] }
}

fn arch() -> Result<TargetArch, HelperError> {
    std::env::consts::ARCH
        .try_into()
        .map_err(|e| HelperError::new("no seccomp support for this architecture", e))
}

fn compile(rules: BTreeMap<i64, Vec<SeccompRule>>, errno: i32) -> Result<BpfProgram, HelperError> {
    let filter = SeccompFilter::new(rules, SeccompAction::Allow, SeccompAction::Errno(errno as u32), arch()?)
        .map_err(|e| HelperError::new("invalid seccomp filter", e))?;
    BpfProgram::try_from(filter).map_err(|e| HelperError::new("cannot compile the seccomp filter", e))
}

/// The filter of calls denied to every command.
pub(crate) fn hardening_filter() -> Result<BpfProgram, HelperError> {
    let rules = DENIED.iter().flat_map(|nr| with_aliases(*nr)).map(|nr| (nr, Vec::new())).collect();
    compile(rules, libc::EPERM)
}

/// The filter that refuses sockets of `families`.
fn socket_filter(families: &[libc::c_int]) -> Result<BpfProgram, HelperError> {
    let mut rules = Vec::new();
    for &family in families {
        let condition = SeccompCondition::new(0, SeccompCmpArgLen::Dword, SeccompCmpOp::Eq, family as u64)
            .map_err(|e| HelperError::new("invalid seccomp condition", e))?;
        rules.push(
            SeccompRule::new(vec![condition]).map_err(|e| HelperError::new("invalid seccomp rule", e))?,
        );
    }
    let map = with_aliases(libc::SYS_socket).into_iter().map(|nr| (nr, rules.clone())).collect();
    compile(map, libc::EACCES)
}

/// The filter that refuses network sockets.
pub(crate) fn network_filter() -> Result<BpfProgram, HelperError> {
    socket_filter(&NETWORK_FAMILIES)
}

/// The filter that refuses UNIX sockets (pathname and abstract alike).
pub(crate) fn unix_socket_filter() -> Result<BpfProgram, HelperError> {
    socket_filter(&[libc::AF_UNIX])
}

/// Installs the filters `policy` needs on this process (inherited by what it executes).
/// `no_new_privs` must be set first.
pub(crate) fn apply(policy: &SandboxPolicy, backend: Backend) -> Result<(), HelperError> {
    seccompiler::apply_filter(&hardening_filter()?)
        .map_err(|e| HelperError::new("cannot install seccomp", e))?;
    if backend == Backend::Landlock && !policy.network {
        seccompiler::apply_filter(&network_filter()?)
            .map_err(|e| HelperError::new("cannot install the network seccomp filter", e))?;
    }
    if !policy.network {
        seccompiler::apply_filter(&unix_socket_filter()?)
            .map_err(|e| HelperError::new("cannot install the UNIX socket seccomp filter", e))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters_compile_for_this_architecture() {
        assert!(hardening_filter().unwrap().len() > DENIED.len());
        assert!(network_filter().unwrap().len() > NETWORK_FAMILIES.len());
        assert!(!unix_socket_filter().unwrap().is_empty());
    }
}
