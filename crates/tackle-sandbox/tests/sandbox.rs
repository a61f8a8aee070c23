//! The sandbox for real, with the `tackle-sandbox-helper` binary, on both backends: what a
//! command can write, read, reach and see, tried the way a hostile command would.
//!
//! These tests need a kernel with unprivileged user namespaces and Landlock (ABI 3+); the
//! `tackle` CLI tests cover refusing when a machine has neither.

use std::ffi::OsString;
use std::net::TcpListener;
use std::path::Path;
use std::process::Output;

use tackle_sandbox::{
    Backend, BackendChoice, CommandSpec, Sandbox, SandboxConfig, SandboxLimits, SandboxMode, SandboxStatus,
    Support,
};

const HELPER: &str = env!("CARGO_BIN_EXE_tackle-sandbox-helper");

const BACKENDS: [BackendChoice; 2] = [BackendChoice::Namespaces, BackendChoice::Landlock];

/// Directories outside `/tmp` (which the namespace sandbox replaces), so that what a test sees
/// is the sandbox at work and not an empty tmpfs.
fn test_dir() -> tempfile::TempDir {
    tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap()
}

fn sandbox(backend: BackendChoice, mode: SandboxMode, network: bool, hidden: &[&Path]) -> Sandbox {
    let config = SandboxConfig { mode, network, backend, ..SandboxConfig::default() };
    let sandbox = Sandbox::builder(config).helper(HELPER).hide(hidden.iter().copied()).detect();
    assert!(
        matches!(sandbox.status(), SandboxStatus::Enforced { .. }),
        "{backend:?} is not available on this machine: {}",
        sandbox.describe()
    );
    sandbox
}

fn env() -> Vec<(OsString, OsString)> {
    vec![("PATH".into(), "/usr/local/bin:/usr/bin:/bin".into()), ("HOME".into(), "/root".into())]
}

fn run(sandbox: &Sandbox, workspace: &Path, script: &str) -> Output {
    let spec = CommandSpec {
        program: "bash".into(),
        args: vec!["-c".into(), script.into()],
        workspace: workspace.to_owned(),
        cwd: workspace.to_owned(),
        env: env(),
    };
    let mut sandboxed = sandbox.command(&spec).unwrap();
    let out = sandboxed.command.output().unwrap();
    drop(sandboxed.guard);
    out
}

fn text(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

#[test]
fn this_machine_supports_both_backends() {
    let support = Support::probe(Path::new(HELPER));
    assert_eq!(support.namespaces, Ok(()), "{support:?}");
    assert!(support.landlock.as_ref().is_ok_and(|abi| *abi >= 3), "{support:?}");
}

#[test]
fn workspace_write_allows_the_workspace_and_nothing_else() {
    for backend in BACKENDS {
        let ws = test_dir();
        let outside = test_dir();
        let sb = sandbox(backend, SandboxMode::WorkspaceWrite, false, &[]);
        let script = format!(
            "touch /etc/tackle-x; echo etc=$?; touch ../x; echo parent=$?; touch {out}/x; echo outside=$?; \
             touch \"$HOME/x\"; echo home=$?; mkdir -p sub && echo hi > sub/f; echo ws=$?; \
             echo t > \"${{TMPDIR:-/tmp}}/t\"; echo tmp=$?",
            out = outside.path().display()
        );
        let out = run(&sb, ws.path(), &script);
        let t = text(&out);
        // A workspace under /tmp has its parent in the sandbox's private /tmp (namespaces): a
        // write there lands in that tmpfs, never on the host (checked below).
        let parent_is_private = backend == BackendChoice::Namespaces && ws.path().starts_with("/tmp");
        for denied in ["etc=1", "parent=1", "outside=1", "home=1"] {
            if denied == "parent=1" && parent_is_private {
                continue;
            }
            assert!(t.contains(denied), "{backend:?}: {denied} expected in {t}");
        }
        assert!(t.contains("ws=0") && t.contains("tmp=0"), "{backend:?}: {t}");
        assert_eq!(std::fs::read_to_string(ws.path().join("sub/f")).unwrap(), "hi\n");
        assert!(!Path::new("/etc/tackle-x").exists());
        assert!(std::fs::read_dir(outside.path()).unwrap().next().is_none(), "{backend:?} wrote outside");
        assert!(!ws.path().parent().unwrap().join("x").exists());
    }
}

/// A workspace inside the host's /tmp (a clone in /tmp, a temporary project) is bound into the
/// sandbox's private /tmp in both modes, writable only in workspace-write.
#[test]
fn a_workspace_under_tmp_is_there_in_both_modes() {
    for backend in BACKENDS {
        let ws = tempfile::tempdir_in("/tmp").unwrap();
        std::fs::write(ws.path().join("seen"), "yes\n").unwrap();
        for (mode, write) in [(SandboxMode::ReadOnly, "1"), (SandboxMode::WorkspaceWrite, "0")] {
            let sb = sandbox(backend, mode, false, &[]);
            let t = text(&run(&sb, ws.path(), "cat seen; touch new; echo write=$?"));
            assert!(t.contains("yes") && t.contains(&format!("write={write}")), "{backend:?} {mode:?}: {t}");
        }
    }
}

#[test]
fn read_only_allows_no_write_at_all() {
    for backend in BACKENDS {
        let ws = test_dir();
        let sb = sandbox(backend, SandboxMode::ReadOnly, false, &[]);
        let out = run(
            &sb,
            ws.path(),
            "touch x; echo ws=$?; touch /tmp/x; echo tmp=$?; touch \"$TMPDIR/x\"; echo tmpdir=$?; \
             echo ok > /dev/null; echo devnull=$?; cat /etc/hostname >/dev/null; echo read=$?",
        );
        let t = text(&out);
        for expected in ["ws=1", "tmp=1", "tmpdir=1", "devnull=0", "read=0"] {
            assert!(t.contains(expected), "{backend:?}: {expected} expected in {t}");
        }
        assert!(std::fs::read_dir(ws.path()).unwrap().next().is_none());
    }
}

#[test]
fn hidden_paths_cannot_be_read() {
    for backend in BACKENDS {
        let ws = test_dir();
        let data = test_dir();
        std::fs::write(data.path().join("tackle.db"), "canary-store-0451").unwrap();
        let token_file = data.path().join("..").join(format!("tokens-{backend:?}"));
        std::fs::write(&token_file, "alice:canary-token-0451").unwrap();
        let sb = sandbox(backend, SandboxMode::WorkspaceWrite, false, &[data.path(), &token_file]);
        let script = format!(
            "cat {db}; cat {tokens}; grep -r canary {dir} 2>&1; ln -s {db} link && cat link; echo done",
            db = data.path().join("tackle.db").display(),
            tokens = token_file.display(),
            dir = data.path().display(),
        );
        let out = run(&sb, ws.path(), &script);
        let t = text(&out);
        assert!(t.contains("done"), "{backend:?}: {t}");
        assert!(!t.contains("canary-store-0451") && !t.contains("canary-token-0451"), "{backend:?}: {t}");
        std::fs::remove_file(&token_file).unwrap();
    }
}

#[test]
fn a_hidden_path_inside_the_workspace_stays_hidden_and_the_workspace_inside_one_stays_visible() {
    let data = test_dir();
    let ws = data.path().join("ws");
    std::fs::create_dir_all(ws.join(".tackle")).unwrap();
    std::fs::write(ws.join(".tackle/tackle.db"), "canary-inner-0451").unwrap();
    std::fs::write(data.path().join("secret"), "canary-outer-0451").unwrap();
    let hidden = [data.path(), &ws.join(".tackle")];
    let sb = sandbox(BackendChoice::Namespaces, SandboxMode::WorkspaceWrite, false, &hidden);
    let out = run(&sb, &ws, "cat .tackle/tackle.db; cat ../secret; echo visible > here; echo done");
    let t = text(&out);
    assert!(t.contains("done"), "{t}");
    assert!(!t.contains("canary-inner") && !t.contains("canary-outer"), "{t}");
    assert_eq!(std::fs::read_to_string(ws.join("here")).unwrap(), "visible\n");

    // Landlock cannot carve a hidden path out of a writable one: it refuses, saying so.
    let sb = sandbox(BackendChoice::Landlock, SandboxMode::WorkspaceWrite, false, &hidden);
    let spec = CommandSpec {
        program: "true".into(),
        args: vec![],
        workspace: ws.clone(),
        cwd: ws.clone(),
        env: env(),
    };
    let err = sb.command(&spec).unwrap_err().to_string();
    assert!(err.contains("cannot hide part of a writable directory") && err.contains("TACKLE_HOME"), "{err}");
    // Read-only has nothing writable to carve from.
    let sb = sandbox(BackendChoice::Landlock, SandboxMode::ReadOnly, false, &hidden);
    let out = run(&sb, &ws, "cat .tackle/tackle.db; cat ../secret; echo done");
    let t = text(&out);
    assert!(t.contains("done") && !t.contains("canary-"), "{t}");
}

#[test]
fn without_network_a_listening_loopback_port_is_unreachable() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let script = format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected; echo rc=$?");
    for backend in BACKENDS {
        let ws = test_dir();
        let off = run(&sandbox(backend, SandboxMode::WorkspaceWrite, false, &[]), ws.path(), &script);
        assert!(!text(&off).contains("connected"), "{backend:?}: {}", text(&off));
        let on = run(&sandbox(backend, SandboxMode::WorkspaceWrite, true, &[]), ws.path(), &script);
        assert!(text(&on).contains("connected"), "{backend:?} with network on: {}", text(&on));
    }
}

#[test]
fn the_namespace_sandbox_has_its_own_processes_tmp_and_loopback() {
    let ws = test_dir();
    let marker = format!("/tmp/tackle-sandbox-test-{}", std::process::id());
    let sb = sandbox(BackendChoice::Namespaces, SandboxMode::WorkspaceWrite, false, &[]);
    let script = format!(
        "echo pid=$$ ppid=$PPID; ls /proc | grep -c '^[0-9]'; echo x > {marker}; cat {marker}; \
         (python3 -m http.server 0 --bind 127.0.0.1 >/dev/null 2>&1 &) ; \
         python3 -c 'import socket; s=socket.socket(); s.bind((\"127.0.0.1\", 0)); s.listen(); \
         c=socket.create_connection(s.getsockname()); print(\"loopback ok\")'"
    );
    let out = run(&sb, ws.path(), &script);
    let t = text(&out);
    assert!(t.contains("pid=2 ppid=1"), "the command is the init's only child: {t}");
    assert!(t.lines().any(|l| l.trim().parse::<u32>().is_ok_and(|n| n <= 6)), "only sandbox processes: {t}");
    assert!(t.contains("loopback ok"), "{t}");
    assert!(!Path::new(&marker).exists(), "/tmp is private");
}

#[test]
fn exit_codes_and_the_environment_pass_through_unchanged() {
    for backend in BACKENDS {
        let ws = test_dir();
        let sb = sandbox(backend, SandboxMode::WorkspaceWrite, false, &[]);
        let out = run(&sb, ws.path(), "env | sort; exit 7");
        assert_eq!(out.status.code(), Some(7), "{backend:?}");
        let names: Vec<String> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| l.split_once('=').map(|(k, _)| k.to_owned()))
            .filter(|k| !["PWD", "SHLVL", "_", "OLDPWD"].contains(&k.as_str()))
            .collect();
        assert_eq!(names, ["HOME", "PATH", "TMPDIR"], "{backend:?}");
    }
}

#[test]
fn a_command_the_sandbox_cannot_start_reports_why() {
    for backend in BACKENDS {
        let ws = test_dir();
        let sb = sandbox(backend, SandboxMode::WorkspaceWrite, false, &[]);
        let spec = CommandSpec {
            program: "no-such-program-0451".into(),
            args: vec![],
            workspace: ws.path().into(),
            cwd: ws.path().into(),
            env: env(),
        };
        let out = sb.command(&spec).unwrap().command.output().unwrap();
        assert_eq!(out.status.code(), Some(tackle_sandbox::SETUP_FAILED), "{backend:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.starts_with(tackle_sandbox::ERROR_PREFIX) && stderr.contains("no-such-program-0451"));
    }
}

#[test]
fn landlock_drops_every_capability_of_a_root_command() {
    let ws = test_dir();
    let sb = sandbox(BackendChoice::Landlock, SandboxMode::WorkspaceWrite, false, &[]);
    assert!(matches!(sb.backend(), Some(Backend::Landlock { .. })));
    let script = "grep -E '^Cap(Prm|Eff|Bnd):' /proc/self/status";
    let caps = |out: &Output| -> Vec<(String, String)> {
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| l.split_once(':'))
            .map(|(k, v)| (k.to_owned(), v.trim().to_owned()))
            .collect()
    };
    let inside = caps(&run(&sb, ws.path(), script));
    assert_eq!(inside.len(), 3, "the three sets were read: {inside:?}");
    if nix_is_root() {
        // Positive control: the same command outside the sandbox, as root, has capabilities.
        let outside = caps(&run(&Sandbox::off(), ws.path(), script));
        assert!(outside.iter().any(|(_, v)| v.chars().any(|c| c != '0')), "{outside:?}");
        for (set, value) in &inside {
            assert!(value.chars().all(|c| c == '0'), "{set}: {value}");
        }
    } else {
        // Unprivileged: no capability to use (the bounding set only limits what execve could
        // grant, and no_new_privs forbids that).
        for (set, value) in inside.iter().filter(|(k, _)| k != "CapBnd") {
            assert!(value.chars().all(|c| c == '0'), "{set}: {value}");
        }
    }
}

fn nix_is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .is_some_and(|ids| ids.split_whitespace().next() == Some("0"))
}

#[test]
fn a_sandbox_that_is_off_runs_the_command_as_it_is() {
    let ws = test_dir();
    let sb = Sandbox::off();
    assert_eq!(sb.describe(), "off: commands run unsandboxed");
    let out = run(&sb, ws.path(), "touch x && echo $TMPDIR-unset");
    assert!(text(&out).contains("-unset"));
    assert!(ws.path().join("x").exists());
}

#[test]
fn a_prefetched_probe_gives_the_same_backend() {
    tackle_sandbox::prefetch(HELPER.into());
    tackle_sandbox::prefetch("/no/such/helper".into()); // later calls change nothing
    let sb = sandbox(BackendChoice::Auto, SandboxMode::WorkspaceWrite, false, &[]);
    assert_eq!(sb.backend(), Some(Backend::Namespaces));
    let ws = test_dir();
    assert!(text(&run(&sb, ws.path(), "touch x; echo rc=$?")).contains("rc=0"));
}

/// With the network off, a UNIX socket outside the workspace (a database's socket directory, a
/// service in `/run` or `/opt`) cannot be reached on either backend; with it on (the positive
/// control) the same connect succeeds.
#[test]
fn without_network_a_unix_socket_outside_the_workspace_is_unreachable() {
    // The socket lives outside `/tmp` (which the namespaces backend replaces with a private
    // one) so that the positive control can reach it wherever the checkout lives, and in a
    // short path (a socket path has at most 107 bytes).
    let outside = tempfile::tempdir_in("/var/tmp").expect("/var/tmp must exist and be writable (FHS)");
    let path = outside.path().join("service.sock");
    let _listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
    let script = format!(
        "python3 -c 'import socket; s=socket.socket(socket.AF_UNIX); s.connect(\"{}\"); print(\"connected\")'; \
         python3 -c 'import socket; s=socket.socket(socket.AF_UNIX); s.connect(\"\\0tackle-abstract\"); print(\"abstract\")'",
        path.display()
    );
    for backend in BACKENDS {
        let ws = test_dir();
        let off = run(&sandbox(backend, SandboxMode::WorkspaceWrite, false, &[]), ws.path(), &script);
        assert!(!text(&off).contains("connected"), "{backend:?}: {}", text(&off));
        assert!(text(&off).contains("Permission denied"), "{backend:?}: refused by seccomp: {}", text(&off));
        let on = run(&sandbox(backend, SandboxMode::WorkspaceWrite, true, &[]), ws.path(), &script);
        assert!(text(&on).contains("connected"), "{backend:?} with the network on: {}", text(&on));
    }
}

/// Processes whose command line holds `marker`.
fn processes_named(marker: &str) -> Vec<String> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .filter(|c| c.contains(marker) && !c.contains("bash -c"))
        .collect()
}

/// Whatever a command starts dies with it on both backends: detached (`setsid nohup`),
/// backgrounded and double-forked processes alike.
#[test]
fn processes_a_command_leaves_behind_die_with_it() {
    for backend in BACKENDS {
        let ws = test_dir();
        let marker = format!("tackle-left-behind-{}-{backend:?}", std::process::id());
        let script = format!(
            "(setsid nohup bash -c 'exec -a {marker} sleep 3600' >/dev/null 2>&1 &); \
             for i in $(seq 1 50); do (bash -c 'exec -a {marker} sleep 3600' >/dev/null 2>&1 &); done; \
             until [ $(pgrep -c -f '^{marker}') -ge 51 ]; do sleep 0.05; done; echo started"
        );
        let out = run(&sandbox(backend, SandboxMode::WorkspaceWrite, false, &[]), ws.path(), &script);
        assert!(text(&out).contains("started"), "{backend:?}: {}", text(&out));
        let left = processes_named(&marker);
        assert!(left.is_empty(), "{backend:?}: {} processes outlived the command: {left:?}", left.len());
    }
}

fn limited(backend: BackendChoice, limits: SandboxLimits) -> Sandbox {
    let config = SandboxConfig { backend, limits, ..SandboxConfig::default() };
    let sandbox = Sandbox::builder(config).helper(HELPER).detect();
    assert!(matches!(sandbox.status(), SandboxStatus::Enforced { .. }), "{}", sandbox.describe());
    sandbox
}

/// A 3 GiB allocation fails under a 1 GiB memory limit on both backends; with no limit (the
/// positive control) the same allocation succeeds.
#[test]
fn a_3_gib_allocation_fails_under_the_memory_limit() {
    let script = "python3 -c 'b = bytearray(3 << 30); print(\"allocated\", len(b))'; echo rc=$?";
    for backend in BACKENDS {
        let ws = test_dir();
        let limits = SandboxLimits { memory_mib: 1024, ..SandboxLimits::NONE };
        let out = text(&run(&limited(backend, limits), ws.path(), script));
        assert!(!out.contains("allocated") && out.contains("MemoryError"), "{backend:?}: {out}");
        let out = text(&run(&limited(backend, SandboxLimits::NONE), ws.path(), script));
        assert!(out.contains("allocated 3221225472"), "{backend:?} without a limit: {out}");
    }
}

/// A fork bomb and a loop forking 1,500 processes are held to the process limit on both
/// backends (namespaces: the fork fails; Landlock: the helper stops the call), and nothing they
/// started outlives the call.
#[test]
fn a_fork_bomb_is_held_to_the_process_limit() {
    for backend in BACKENDS {
        let ws = test_dir();
        let marker = format!("tackle-bomb-{}-{backend:?}", std::process::id());
        let forks = |count: u32| {
            format!(
                "python3 -c '
import os, sys, time  # {marker}
n = 0
try:
    for i in range({count}):
        if os.fork() == 0:
            time.sleep(60)
            os._exit(0)
        n += 1
except OSError as e:
    print(\"fork failed:\", e)
print(\"forked\", n, flush=True)
'"
            )
        };
        let sb = limited(backend, SandboxLimits { processes: 64, ..SandboxLimits::NONE });
        let out = text(&run(&sb, ws.path(), &forks(1500)));
        let forked =
            out.lines().find_map(|l| l.strip_prefix("forked ")).and_then(|n| n.trim().parse::<u32>().ok());
        match forked {
            Some(n) => assert!(
                n < 64 && out.contains("Resource temporarily unavailable"),
                "{backend:?}: {n} processes forked under a limit of 64: {out}"
            ),
            None => assert!(
                out.contains(&format!("{}processes", tackle_sandbox::LIMIT_PREFIX)),
                "{backend:?}: neither a failed fork nor the helper stopping the call: {out}"
            ),
        }
        assert!(processes_named(&marker).is_empty(), "{backend:?}: processes outlived the call");
        // A bomb doubling at each level (bounded at 2^11 processes, so that a failure of this
        // test cannot take the machine down with it) is stopped at the limit.
        let bomb = format!(
            "b() {{ [ $1 -lt 10 ] && {{ b $(($1+1)) | b $(($1+1)) & }}; exec -a {marker} sleep 30; }}; b 0"
        );
        let out = run(&sb, ws.path(), &bomb);
        assert!(
            text(&out).contains(&format!("{}processes", tackle_sandbox::LIMIT_PREFIX)),
            "{backend:?}: {}",
            text(&out)
        );
        assert!(processes_named(&marker).is_empty(), "{backend:?}: processes outlived the call");
        // Positive control: without a limit all 200 forks succeed.
        let free = limited(backend, SandboxLimits::NONE);
        let out = text(&run(&free, ws.path(), &forks(200)));
        assert!(out.contains("forked 200"), "{backend:?} without a limit: {out}");
        assert!(processes_named(&marker).is_empty(), "{backend:?}: processes outlived the call");
    }
}

/// A busy loop is stopped by the CPU-time limit (SIGXCPU: exit 152), a large write by the
/// file-size limit (SIGXFSZ: exit 153), on both backends.
#[test]
fn cpu_time_and_file_size_limits_stop_the_command() {
    for backend in BACKENDS {
        let ws = test_dir();
        let limits = SandboxLimits { cpu_secs: 1, file_size_mib: 1, ..SandboxLimits::NONE };
        let sb = limited(backend, limits);
        let out = run(&sb, ws.path(), "while :; do :; done");
        assert_eq!(out.status.code(), Some(128 + 24), "{backend:?}: {}", text(&out));
        let out = run(&sb, ws.path(), "head -c 2M /dev/zero > big");
        assert_eq!(out.status.code(), Some(128 + 25), "{backend:?}: {}", text(&out));
        assert_eq!(std::fs::metadata(ws.path().join("big")).unwrap().len(), 1 << 20, "{backend:?}");
        // Control: a file under the limit is written whole.
        let out = run(&sb, ws.path(), "head -c 512K /dev/zero > small; echo rc=$?");
        assert!(text(&out).contains("rc=0"), "{backend:?}: {}", text(&out));
    }
}

/// Without a `[sandbox.limits]` table, commands get the documented defaults.
#[test]
fn the_default_limits_are_in_force() {
    for backend in BACKENDS {
        let ws = test_dir();
        let sb = sandbox(backend, SandboxMode::WorkspaceWrite, false, &[]);
        let out = text(&run(&sb, ws.path(), "ulimit -d; ulimit -t; ulimit -f"));
        let lines: Vec<&str> = out.lines().collect();
        // bash reports -d and -f in KiB.
        assert_eq!(lines, ["2097152", "600", "1048576"], "{backend:?}: {out}");
    }
}
