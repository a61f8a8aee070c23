//! [`Runner`]: which process runs a session's turn, so a turn whose process died (a crash, a
//! `kill -9`) is reported as `interrupted` rather than `running` forever.
//!
//! A runner is `host/pid-namespace:pid:start`, the process's start time since boot (from
//! `/proc`), so a pid reused by another process does not count as alive. Another host's (or
//! another container's) runner cannot be checked from here and is taken as alive: there, only
//! the lease's expiry frees its session.

/// The identity of a process running turns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Runner {
    host: String,
    pid: u32,
    start: u64,
}

/// This process as a runner, and its stored form: read from `/proc` once, since every lease,
/// cancel poll and status change names it.
static THIS_PROCESS: std::sync::OnceLock<(Runner, String)> = std::sync::OnceLock::new();

fn this_process() -> &'static (Runner, String) {
    THIS_PROCESS.get_or_init(|| {
        let pid = std::process::id();
        let runner = Runner { host: hostname(), pid, start: start_time(pid).unwrap_or(0) };
        let encoded = runner.encode();
        (runner, encoded)
    })
}

/// The stored form of this process (`host/pid-namespace:pid:start`).
pub(crate) fn current_id() -> &'static str {
    &this_process().1
}

impl Runner {
    /// The stored form.
    pub(crate) fn encode(&self) -> String {
        format!("{}:{}:{}", self.host, self.pid, self.start)
    }

    /// A stored runner; `None` when it is not one.
    pub(crate) fn decode(text: &str) -> Option<Self> {
        let mut parts = text.rsplitn(3, ':');
        let start = parts.next()?.parse().ok()?;
        let pid = parts.next()?.parse().ok()?;
        let host = parts.next()?.to_owned();
        Some(Self { host, pid, start })
    }

    /// Whether the process is known to be gone: same host, and no process with this pid and
    /// start time exists.
    pub(crate) fn is_gone(&self) -> bool {
        let me = &this_process().0;
        if self.host != me.host || !cfg!(target_os = "linux") {
            return false;
        }
        // This process is alive: no need to ask /proc (a session of ours is read back often).
        if self.pid == me.pid && self.start == me.start {
            return false;
        }
        start_time(self.pid) != Some(self.start)
    }
}

/// The host name and this process's PID namespace (`name/4026531836`): two containers may share
/// a host name, but a pid is only worth checking in the namespace it was taken in.
fn hostname() -> String {
    let name =
        std::fs::read_to_string("/proc/sys/kernel/hostname").map(|h| h.trim().to_owned()).unwrap_or_default();
    let namespace = std::fs::read_link("/proc/self/ns/pid")
        .ok()
        .and_then(|link| {
            let text = link.to_string_lossy().into_owned();
            text.strip_prefix("pid:[").and_then(|t| t.strip_suffix(']')).map(str::to_owned)
        })
        .unwrap_or_default();
    format!("{name}/{namespace}")
}

/// Field 22 of `/proc/<pid>/stat`: the process start time in clock ticks since boot.
fn start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) is in parentheses and may contain spaces: count after it.
    let after = &stat[stat.rfind(')')? + 2..];
    after.split(' ').nth(19)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_alive_and_a_dead_child_is_gone() {
        let me = this_process().0.clone();
        assert!(!me.is_gone());
        assert_eq!(Runner::decode(&me.encode()), Some(me.clone()));
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        let start = start_time(pid);
        child.wait().unwrap();
        let dead = Runner { host: me.host.clone(), pid, start: start.unwrap_or(1) };
        assert!(dead.is_gone(), "a reaped process is gone");
        let reused = Runner { host: me.host.clone(), pid: me.pid, start: me.start + 1 };
        assert!(reused.is_gone(), "same pid, other start time: another process");
        let elsewhere = Runner { host: "another-host".into(), pid: 1, start: 1 };
        assert!(!elsewhere.is_gone(), "another host cannot be checked");
    }
}
