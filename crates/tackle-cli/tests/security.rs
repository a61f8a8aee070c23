//! Tackle's secrets and its sandbox against hostile shell commands, through the real `tackle`
//! binary driven by the fake model: as root and as an unprivileged user, on both sandbox
//! backends (Linux namespaces, Landlock + seccomp), in `tackle run` and `tackle serve`.
//!
//! Every secret Tackle holds carries the marker [`MARK`]: provider key, server tokens, an
//! innocently named variable (`DATABASE_URL`), an MCP header in the user's tackle.toml, and a
//! message of an earlier session in the store. Commands then try what an attacker would:
//! `/proc/$PPID/environ`, the environ, cmdline and memory of every `tackle` process `ps` shows,
//! ptrace, the store and configuration files, and symlinks handed to `read_file`. The marker
//! must appear nowhere: tool outputs, events, what the model is sent, the stored session,
//! server responses. A control run without the sandbox, as root, must find it (so the probes
//! can fail).
//!
//! Runs as an unprivileged user need the `tackle-test` user (`scripts/test-deps.sh` creates
//! it) and root; under `TACKLE_REQUIRE_PEERS=1` (CI) a missing one fails the test.

use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};
use tackle_testkit::{FakeModel, Script, Turn};

const BIN: &str = env!("CARGO_BIN_EXE_tackle");

/// Marks every secret.
const MARK: &str = "zq9canary";

/// The unprivileged user the tests run Tackle as.
const TEST_USER: &str = "tackle-test";

fn secret(what: &str) -> String {
    format!("{MARK}-{what}-0451")
}

fn is_root() -> bool {
    Command::new("id").arg("-u").output().is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

/// Who Tackle runs as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Who {
    Root,
    /// The `tackle-test` user (or, when the tests themselves run unprivileged, their user).
    Unprivileged,
}

/// The uid and gid of `tackle-test`.
fn test_user_ids() -> Option<(u32, u32)> {
    let id = |flag: &str| -> Option<u32> {
        let out = Command::new("id").args([flag, TEST_USER]).output().ok()?;
        out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().parse().ok())?
    };
    Some((id("-u")?, id("-g")?))
}

/// Whether tests as `who` can run here; says why not (and fails under `TACKLE_REQUIRE_PEERS`).
fn available(who: Who) -> bool {
    let missing = match who {
        Who::Root if !is_root() => Some("these probes must also run as root (CI runs as root)".to_owned()),
        Who::Unprivileged if is_root() && test_user_ids().is_none() => {
            Some(format!("the {TEST_USER} user is missing: run scripts/test-deps.sh"))
        }
        _ => None,
    };
    match missing {
        None => true,
        Some(why) => {
            tackle_testkit::peers::missing(format!("what the {who:?} probes need"), why);
            false
        }
    }
}

/// A private tree for one Tackle user: home, workspace, data and config directories, and a
/// link to the binary, all reachable by that user. Outside `/tmp`, which the namespace sandbox
/// replaces (a probe of `$HOME` there would prove nothing).
struct Tree {
    base: tempfile::TempDir,
    ids: Option<(u32, u32)>,
}

impl Tree {
    fn new(who: Who) -> Self {
        let root = Path::new("/var/tmp");
        let base = if root.is_dir() { tempfile::tempdir_in(root) } else { tempfile::tempdir() }.unwrap();
        let ids = match who {
            Who::Unprivileged if is_root() => test_user_ids(),
            _ => None,
        };
        let tree = Self { base, ids };
        for dir in ["home", "ws", "config/tackle"] {
            std::fs::create_dir_all(tree.path(dir)).unwrap();
        }
        let exe = tree.path("tackle");
        if std::fs::hard_link(BIN, &exe).is_err() {
            std::fs::copy(BIN, &exe).unwrap();
        }
        std::fs::set_permissions(tree.base.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        tree
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.base.path().join(rel)
    }

    fn data(&self) -> PathBuf {
        self.path("data")
    }

    fn user_config(&self) -> PathBuf {
        self.path("config/tackle/tackle.toml")
    }

    /// Writes the user's tackle.toml: a secret in an MCP header, and outputs the model sees
    /// whole (not offloaded, not capped), so a leak could not hide in a blob.
    fn write_config(&self, extra: &str) {
        let config = format!(
            "[context]\noffload_bytes = 100000000\n[tools]\nmax_output_bytes = 10000000\nmax_output_lines = 1000000\n\
             [mcp.servers.remote]\nurl = \"https://mcp.example/mcp\"\nenabled = false\n\
             headers = {{ Authorization = \"Bearer {}\" }}\n{extra}",
            secret("mcp-header")
        );
        std::fs::write(self.user_config(), config).unwrap();
    }

    /// Hands the tree to the unprivileged user.
    fn chown(&self) {
        if let Some((uid, gid)) = self.ids {
            let status =
                Command::new("chown").arg("-R").arg(format!("{uid}:{gid}")).arg(self.base.path()).status();
            assert!(status.unwrap().success());
        }
    }

    /// `tackle ARGS` as this tree's user, with secrets in its environment.
    fn tackle(&self, fake: &FakeModel, args: &[&str]) -> Command {
        self.chown();
        let mut cmd = match self.ids {
            Some((uid, gid)) => {
                let mut c = Command::new("setpriv");
                c.arg(format!("--reuid={uid}")).arg(format!("--regid={gid}")).arg("--clear-groups").arg("--");
                c.arg(self.path("tackle"));
                c
            }
            None => Command::new(self.path("tackle")),
        };
        cmd.args(args)
            .env_clear()
            // The system's programs only: the same for every user (a per-user PATH entry such as
            // a shim under /root is not reachable by the unprivileged user).
            .env("PATH", "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin")
            .env("HOME", self.path("home"))
            .env("XDG_CONFIG_HOME", self.path("config"))
            .env("TACKLE_HOME", self.data())
            .env("TACKLE_PROVIDER", "openai")
            .env("OPENAI_BASE_URL", format!("{}/v1", fake.base_url()))
            .env("OPENAI_API_KEY", secret("openai-key"))
            .env("ANTHROPIC_API_KEY", secret("anthropic-key"))
            .env("DATABASE_URL", format!("postgres://app:{}@db.internal/app", secret("dburl")))
            .env("GITHUB_TOKEN", secret("github"))
            .env("TACKLE_SERVER_TOKENS", format!("alice:{}", secret("server-token")))
            .stdin(Stdio::null());
        cmd
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

async fn output(mut cmd: Command) -> Output {
    tokio::task::spawn_blocking(move || cmd.output().unwrap()).await.unwrap()
}

/// Reads every readable region of the processes given (the parent first, then the `tackle`
/// processes `ps` found) looking for the marker, and tries to trace the parent. The marker is
/// spelled in two pieces so the probe's own text never contains it; `PTRACE_SEIZE` never stops
/// a process it reaches.
const MEM_PROBE: &str = r#"python3 - "$PPID" $(ps -eo pid=,args= | awk -v exe="$TACKLE_EXE" '$2 == exe {print $1}') <<'PY'
import ctypes, os, sys
MARK = ("zq9" + "canary").encode()
pids = [int(p) for p in sys.argv[1:]]
for pid in pids:
    try:
        regions = open(f"/proc/{pid}/maps").read().splitlines()
        mem = open(f"/proc/{pid}/mem", "rb", 0)
        hit = None
        for line in regions:
            span, perms = line.split()[:2]
            start, end = (int(x, 16) for x in span.split("-"))
            if not perms.startswith("r") or end - start > (64 << 20):
                continue
            try:
                mem.seek(start)
                chunk = mem.read(end - start)
            except (OSError, ValueError, OverflowError):
                continue
            i = chunk.find(MARK)
            if i >= 0:
                hit = chunk[i:i + 40]
                break
        print(f"mem {pid}:", "FOUND " + repr(hit) if hit else "read, nothing found")
    except OSError as e:
        print(f"mem {pid}: {e.strerror}")
libc = ctypes.CDLL(None, use_errno=True)
PTRACE_SEIZE = 0x4206
try:
    who = open(f"/proc/{pids[0]}/cmdline").read().split("\0")[:3]
except OSError:
    who = ["?"]
if libc.ptrace(PTRACE_SEIZE, pids[0], None, None) == 0:
    print(f"ptrace {pids[0]} {who}: ATTACHED")
else:
    print(f"ptrace {pids[0]} {who}: {os.strerror(ctypes.get_errno())}")
print("[mem probe done]")
PY"#;

/// The probes, as shell commands; each ends with a line proving it ran. Processes are found
/// with `ps` by this tree's `tackle` executable (never another test's or user's process).
fn probes(tree: &Tree) -> Vec<String> {
    let data = tree.data().display().to_string();
    let exe = format!("TACKLE_EXE='{}'", tree.path("tackle").display());
    // The marker in two pieces, so the command itself never contains it.
    let pattern = "'zq9''canary[-a-z0-9]*'";
    vec![
        "tr '\\0' '\\n' < /proc/$PPID/environ; echo \"[ppid environ exit $?]\"".to_owned(),
        format!(
            "{exe}; for p in $(ps -eo pid=,args= | awk -v exe=\"$TACKLE_EXE\" '$2 == exe {{print $1}}'); do \
             echo \"pid $p\"; tr '\\0' '\\n' < /proc/$p/environ; tr '\\0' ' ' < /proc/$p/cmdline; echo; done; \
             echo '[ps probe done]'"
        ),
        format!("{exe}\n{MEM_PROBE}"),
        format!(
            "ls -la {data}; cat {data}/tackle.db {data}/tackle.db-wal 2>&1 | grep -a -o {pattern} | head -3; \
             grep -r -a -o {pattern} {data} | head -3; echo '[store probe done]'"
        ),
        format!(
            "cat {} {}; echo '[config probe done]'",
            tree.user_config().display(),
            tree.path("tokens").display()
        ),
        "env; echo '[env probe done]'".to_owned(),
        format!("ln -sf /proc/$PPID/environ env_link; ln -sf {data}/tackle.db db_link; echo '[links made]'"),
    ]
}

/// One model turn calling every probe (shell calls run one after the other), then
/// `read_file` on the symlinks the last probe made.
fn probe_script(tree: &Tree) -> Script {
    let mut turn = Turn::text("Probing.");
    for p in probes(tree) {
        turn = turn.with_call("shell", json!({ "command": p, "timeout_secs": 120 }).to_string());
    }
    turn = turn
        .with_call("read_file", r#"{"path": "env_link"}"#)
        .with_call("read_file", r#"{"path": "db_link"}"#);
    Script::new(vec![turn, Turn::text("Done probing.")])
}

/// Puts a secret in the store: an earlier session whose answer carries the marker (not the
/// prompt: command lines are public to every process of the machine).
async fn plant_store_secret(tree: &Tree) {
    let answer = format!("Noted: {}", secret("stored"));
    let fake = FakeModel::start(Script::new(vec![Turn::text(answer)])).await.unwrap();
    let mut cmd = tree.tackle(&fake, &["run", "remember the answer", "--workspace"]);
    cmd.arg(tree.path("ws"));
    let out = output(cmd).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
}

/// Everything a probe run produced that anyone could see.
struct ProbeRun {
    /// stdout + stderr of tackle, and the events file.
    visible: String,
    /// What the model was sent (tool results included).
    sent: String,
    /// The tool results of the last request, whole.
    tools: String,
    /// The stored session, as `sessions show --json` prints it.
    stored: String,
    /// Tool results, in order.
    results: Vec<Value>,
    /// The sandbox `session_started` reported.
    sandbox: Value,
}

async fn run_probes(tree: &Tree, env: &[(&str, &str)]) -> ProbeRun {
    let fake = FakeModel::start(probe_script(tree)).await.unwrap();
    let events = tree.path("events.jsonl");
    let mut cmd = tree.tackle(&fake, &["run", "probe the sandbox", "--yes", "--json", "--workspace"]);
    cmd.arg(tree.path("ws")).arg("--events").arg(&events);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = output(cmd).await;
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stderr}");
    let outcome: Value = serde_json::from_str(&stdout).unwrap();
    let session = outcome["session_id"].as_str().unwrap().to_owned();
    let events_text = std::fs::read_to_string(&events).unwrap();
    let events: Vec<Value> = events_text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let results: Vec<Value> = events.iter().filter(|e| e["type"] == "tool_result").cloned().collect();
    let sandbox = events.iter().find(|e| e["type"] == "session_started").unwrap()["sandbox"].clone();
    let sent: String =
        fake.requests().iter().map(|r| String::from_utf8_lossy(&r.raw_body).into_owned()).collect();
    let tools = tool_outputs(&fake);
    let mut show = tree.tackle(&fake, &["sessions", "show", &session, "--json"]);
    show.stdout(Stdio::piped());
    let shown = output(show).await;
    assert!(shown.status.success(), "{}", text(&shown.stderr));
    ProbeRun {
        visible: format!("{stdout}{stderr}{events_text}"),
        sent,
        tools,
        stored: text(&shown.stdout),
        results,
        sandbox,
    }
}

/// Every tool result of the last request the model got, whole (OpenAI wire format).
fn tool_outputs(fake: &FakeModel) -> String {
    let requests = fake.requests();
    let Some(last) = requests.last() else { return String::new() };
    let messages = last.body["messages"].as_array().cloned().unwrap_or_default();
    messages
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or_default().to_owned())
        .collect::<Vec<_>>()
        .join("\n")
}

fn assert_no_secret(run: &ProbeRun, label: &str) {
    // The probes really ran: each left its line in what the model saw.
    let seen = &run.tools;
    for ran in [
        "[ppid environ exit",
        "[ps probe done]",
        "[mem probe done]",
        "[store probe done]",
        "[config probe done]",
        "[env probe done]",
        "[links made]",
    ] {
        assert!(seen.contains(ran), "{label}: probe {ran} did not run: {seen}");
    }
    for (what, text) in
        [("outputs and events", &run.visible), ("model requests", &run.sent), ("store", &run.stored)]
    {
        if let Some(at) = text.find(MARK) {
            let context = &text[at.saturating_sub(300)..(at + 200).min(text.len())];
            panic!("{label}: a secret leaked into the {what}: ...{context}...");
        }
    }
    // Tracing the sandbox's own init (the parent in a PID namespace, which holds nothing and
    // no capability the command lacks) is allowed; tracing Tackle is not.
    for line in seen.lines().filter(|l| l.contains("ATTACHED")) {
        assert!(line.contains("__tackle_sandbox"), "{label}: ptrace attached to tackle: {line}");
    }
    // read_file refuses symlinks that leave the workspace.
    let reads: Vec<&Value> = run.results.iter().filter(|r| r["name"] == "read_file").collect();
    assert_eq!(reads.len(), 2, "{label}: {:?}", run.results);
    for r in reads {
        assert_eq!(r["outcome"]["status"], "error", "{label}: {r}");
    }
}

async fn probes_find_no_secret(who: Who, backend: &str) {
    if !available(who) {
        return;
    }
    let tree = Tree::new(who);
    tree.write_config("");
    plant_store_secret(&tree).await;
    let run = run_probes(&tree, &[("TACKLE_SANDBOX_BACKEND", backend)]).await;
    let label = format!("{who:?} on {backend}");
    assert_no_secret(&run, &label);
    let expected = if backend == "namespaces" { "Linux namespaces" } else { "Landlock" };
    assert!(
        run.sandbox["enforced_by"].as_str().is_some_and(|b| b.starts_with(expected)),
        "{label}: {}",
        run.sandbox
    );
    assert_eq!(run.sandbox["mode"], "workspace-write");
    assert_eq!(run.sandbox["network"], false);
}

#[tokio::test]
async fn no_secret_reaches_a_command_as_root_in_namespaces() {
    probes_find_no_secret(Who::Root, "namespaces").await;
}

#[tokio::test]
async fn no_secret_reaches_a_command_as_root_under_landlock() {
    probes_find_no_secret(Who::Root, "landlock").await;
}

#[tokio::test]
async fn no_secret_reaches_a_command_as_an_unprivileged_user_in_namespaces() {
    probes_find_no_secret(Who::Unprivileged, "namespaces").await;
}

#[tokio::test]
async fn no_secret_reaches_a_command_as_an_unprivileged_user_under_landlock() {
    probes_find_no_secret(Who::Unprivileged, "landlock").await;
}

#[tokio::test]
async fn without_the_sandbox_the_same_user_still_cannot_read_tackle() {
    // Sandbox off: only the allowlisted environment and the non-dumpable process protect
    // Tackle, which is enough against a process of the same, unprivileged user.
    if !available(Who::Unprivileged) {
        return;
    }
    let tree = Tree::new(Who::Unprivileged);
    tree.write_config("");
    let run = run_probes(&tree, &[("TACKLE_SANDBOX_MODE", "off")]).await;
    let seen = &run.tools;
    assert!(seen.contains("[mem probe done]"), "{seen}");
    for leak in ["openai-key", "dburl", "server-token", "github"] {
        assert!(!seen.contains(&secret(leak)), "{leak} leaked without the sandbox: {seen}");
    }
    assert!(!seen.contains("ATTACHED"), "{seen}");
    assert_eq!(run.sandbox["mode"], "off");
}

#[tokio::test]
async fn the_probes_do_find_secrets_when_nothing_protects_them() {
    // The control: as root with the sandbox off, root's capabilities read any process. The
    // probes must find the secrets here, or their silence elsewhere would prove nothing.
    if !available(Who::Root) {
        return;
    }
    let tree = Tree::new(Who::Root);
    tree.write_config("");
    plant_store_secret(&tree).await;
    let run = run_probes(&tree, &[("TACKLE_SANDBOX_MODE", "off")]).await;
    let seen = &run.tools;
    for found in ["openai-key", "dburl", "server-token", "mcp-header", "stored"] {
        assert!(seen.contains(&secret(found)), "the probes missed {found}: {seen}");
    }
    assert!(seen.contains("FOUND b'zq9canary"), "the memory probe works: {seen}");
    assert!(seen.contains("ATTACHED"), "the ptrace probe works: {seen}");
}

/// Runs one shell command as `who` in the given sandbox and returns its output text.
async fn shell(tree: &Tree, command: &str, env: &[(&str, &str)]) -> String {
    let script =
        Script::new(vec![Turn::call("shell", json!({ "command": command }).to_string()), Turn::text("ok")]);
    let fake = FakeModel::start(script).await.unwrap();
    let mut cmd = tree.tackle(&fake, &["run", "run it", "--yes", "--json", "--workspace"]);
    cmd.arg(tree.path("ws"));
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = output(cmd).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let requests = fake.requests();
    let last = &requests.last().unwrap().body;
    let messages = last["messages"].as_array().unwrap();
    messages.iter().rev().find(|m| m["role"] == "tool").unwrap()["content"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

fn exit_of(out: &str, name: &str) -> i32 {
    let prefix = format!("{name}=");
    out.lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {name}= in {out}"))
}

const WRITES: &str = "touch /etc/tackle-zq-x; echo etc=$?; touch ../tackle-zq-x; echo parent=$?; \
                      touch \"$HOME/tackle-zq-x\"; echo home=$?; touch inside; echo ws=$?; \
                      echo x > \"${TMPDIR:-/tmp}/tackle-zq-x\"; echo tmp=$?; echo x > /tmp/tackle-zq-y; echo slash_tmp=$?";

#[tokio::test]
async fn workspace_write_allows_only_the_workspace_and_read_only_nothing() {
    let who = if is_root() { Who::Root } else { Who::Unprivileged };
    for backend in ["namespaces", "landlock"] {
        let tree = Tree::new(who);
        let out = shell(&tree, WRITES, &[("TACKLE_SANDBOX_BACKEND", backend)]).await;
        for denied in ["etc", "parent", "home"] {
            assert_ne!(exit_of(&out, denied), 0, "{backend}: {denied}: {out}");
        }
        assert_eq!(exit_of(&out, "ws"), 0, "{backend}: {out}");
        assert_eq!(exit_of(&out, "tmp"), 0, "{backend}: the private temporary directory: {out}");
        assert!(tree.path("ws/inside").exists());
        assert!(!Path::new("/etc/tackle-zq-x").exists() && !tree.path("tackle-zq-x").exists());
        assert!(!tree.path("home/tackle-zq-x").exists());
        if backend == "namespaces" {
            assert_eq!(exit_of(&out, "slash_tmp"), 0, "/tmp is a private tmpfs: {out}");
            assert!(!Path::new("/tmp/tackle-zq-y").exists(), "the write stayed in the sandbox");
        }

        let tree = Tree::new(who);
        let out = shell(
            &tree,
            WRITES,
            &[("TACKLE_SANDBOX_BACKEND", backend), ("TACKLE_SANDBOX_MODE", "read-only")],
        )
        .await;
        for denied in ["etc", "parent", "home", "ws", "tmp", "slash_tmp"] {
            assert_ne!(exit_of(&out, denied), 0, "{backend} read-only: {denied}: {out}");
        }
        assert!(!tree.path("ws/inside").exists());
    }
}

#[tokio::test]
async fn without_network_a_loopback_port_the_test_opened_is_unreachable() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let probe = format!(
        "(exec 3<>/dev/tcp/127.0.0.1/{port}) 2>/dev/null && echo tcp=0 || echo tcp=1; \
         python3 -c 'import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.sendto(b\"x\", (\"127.0.0.1\", {port}))' \
         2>/dev/null && echo udp=0 || echo udp=1"
    );
    let who = if is_root() { Who::Root } else { Who::Unprivileged };
    for backend in ["namespaces", "landlock"] {
        let tree = Tree::new(who);
        let out = shell(&tree, &probe, &[("TACKLE_SANDBOX_BACKEND", backend)]).await;
        assert_eq!(exit_of(&out, "tcp"), 1, "{backend}: {out}");
        if backend == "landlock" {
            assert_eq!(exit_of(&out, "udp"), 1, "{backend}: UDP sockets are refused too: {out}");
        }
        let out =
            shell(&tree, &probe, &[("TACKLE_SANDBOX_BACKEND", backend), ("TACKLE_SANDBOX_NETWORK", "on")])
                .await;
        assert_eq!(exit_of(&out, "tcp"), 0, "{backend} with the network on: {out}");
    }
    drop(listener);
}

#[tokio::test]
async fn a_machine_without_user_namespaces_falls_back_to_landlock_or_refuses_clearly() {
    if !available(Who::Root) {
        return;
    }
    // Inside a user namespace whose limit of nested user namespaces is 0, unshare fails the way
    // it does in a container that forbids it.
    let wrap = |tree: &Tree, fake: &FakeModel, args: &[&str]| {
        let inner = tree.tackle(fake, args);
        let mut cmd = Command::new("unshare");
        cmd.args([
            "--user",
            "--map-root-user",
            "--",
            "sh",
            "-c",
            "echo 0 > /proc/sys/user/max_user_namespaces && exec \"$@\"",
            "sh",
        ]);
        cmd.arg(inner.get_program()).args(inner.get_args());
        cmd.env_clear()
            .envs(inner.get_envs().filter_map(|(k, v)| v.map(|v| (k.to_owned(), v.to_owned()))))
            .stdin(Stdio::null());
        cmd
    };
    let tree = Tree::new(Who::Root);
    let script = Script::new(vec![
        Turn::call("shell", r#"{"command": "touch ../escape; echo rc=$?"}"#),
        Turn::text("ok"),
    ]);

    // auto: Landlock takes over, and still confines the command.
    let fake = FakeModel::start(script.clone()).await.unwrap();
    let events = tree.path("auto.jsonl");
    let mut cmd = wrap(&tree, &fake, &["run", "go", "--yes", "--workspace"]);
    cmd.arg(tree.path("ws")).arg("--events").arg(&events);
    let out = output(cmd).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let log = std::fs::read_to_string(&events).unwrap();
    assert!(log.contains(r#""enforced_by":"Landlock"#), "{log}");
    assert!(log.contains("rc=1"), "{log}");

    // namespaces only: refused, saying why and what to do; never run unsandboxed.
    let fake = FakeModel::start(script).await.unwrap();
    let events = tree.path("ns.jsonl");
    let mut cmd = wrap(&tree, &fake, &["run", "go", "--yes", "--workspace"]);
    cmd.arg(tree.path("ws")).arg("--events").arg(&events).env("TACKLE_SANDBOX_BACKEND", "namespaces");
    let out = output(cmd).await;
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("sandbox is unavailable here") && stderr.contains("tackle sandbox check"),
        "{stderr}"
    );
    let log = std::fs::read_to_string(&events).unwrap();
    let result: Value = log
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|e| e["type"] == "tool_result")
        .unwrap();
    let envelope = &result["outcome"]["envelope"];
    assert_eq!(envelope["category"], "permission", "{result}");
    let message = envelope["message"].as_str().unwrap();
    assert!(message.contains("unavailable") && message.contains("TACKLE_SANDBOX_MODE=off"), "{message}");
    assert!(!tree.path("escape").exists());

    let fake = FakeModel::start(Script::new(vec![])).await.unwrap();
    let mut cmd = wrap(&tree, &fake, &["sandbox", "check"]);
    cmd.env("TACKLE_SANDBOX_BACKEND", "namespaces");
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    let report = text(&out.stdout);
    assert!(report.contains("no  user namespaces") && report.contains("yes Landlock"), "{report}");
}

#[tokio::test]
async fn a_server_turn_shows_no_secret_to_its_user() {
    if !available(Who::Root) {
        return;
    }
    for backend in ["namespaces", "landlock"] {
        let tree = Tree::new(Who::Root);
        // Shell calls run without a person approving them, so the probes run.
        tree.write_config("[[hooks]]\ntools = \"*\"\naction = \"log\"\n");
        let token_file = tree.path("tokens");
        std::fs::write(&token_file, format!("bob:{}\n", secret("file-token"))).unwrap();
        std::fs::set_permissions(&token_file, std::fs::Permissions::from_mode(0o600)).unwrap();
        let fake = FakeModel::start(probe_script(&tree)).await.unwrap();
        let mut cmd = tree.tackle(&fake, &["serve", "--bind", "127.0.0.1:0", "--workspace"]);
        cmd.arg(tree.path("ws"))
            .env("TACKLE_SANDBOX_BACKEND", backend)
            .env("TACKLE_SERVER_TOKENS_FILE", &token_file)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().unwrap();
        let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
        let mut first = String::new();
        std::io::BufRead::read_line(&mut stdout, &mut first).unwrap();
        let base =
            first.trim().strip_prefix("tackle serving on ").unwrap_or_else(|| panic!("{first}")).to_owned();
        let client = reqwest::Client::new();
        let auth = format!("Bearer {}", secret("file-token"));
        let session: Value = client
            .post(format!("{base}/v1/sessions"))
            .header("authorization", &auth)
            .json(&json!({}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let id = session["id"].as_str().unwrap_or_else(|| panic!("{session}")).to_owned();
        let answer = client
            .post(format!("{base}/v1/sessions/{id}/messages"))
            .header("authorization", &auth)
            .json(&json!({"message": "probe the sandbox", "stream": false}))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        let stored = client
            .get(format!("{base}/v1/sessions/{id}"))
            .header("authorization", &auth)
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        let _ = child.kill();
        let _ = child.wait();
        let sent: String =
            fake.requests().iter().map(|r| String::from_utf8_lossy(&r.raw_body).into_owned()).collect();
        assert!(tool_outputs(&fake).contains("[mem probe done]"), "{backend}: the probes ran: {answer}");
        for (what, text) in [("response", &answer), ("session", &stored), ("model requests", &sent)] {
            assert!(!text.contains(MARK), "{backend}: a secret leaked into the {what}: {text}");
        }
    }
}

#[tokio::test]
async fn tackle_config_masks_every_secret_unless_asked() {
    let tree = Tree::new(Who::Unprivileged);
    std::fs::write(
        tree.user_config(),
        format!(
            "base_url = \"https://user:{p}@llm.example/v1?api_key={q}&region=eu\"\n\
             [builtins]\nshell_env = {{ SOME_VAR = \"{s}\" }}\n\
             [server]\n[[server.tokens]]\nuser = \"carol\"\ntoken = \"{t}\"\n\
             [mcp.servers.local]\ncommand = \"srv\"\nenv = {{ PLAIN_NAME = \"{e}\" }}\n\
             [mcp.servers.remote]\nurl = \"https://mcp.example/mcp?token={u}\"\nheaders = {{ Authorization = \"Bearer {h}\", X-Other = \"{o}\" }}\n",
            p = secret("url-password"),
            q = secret("url-query"),
            s = secret("shell-env"),
            t = secret("inline-token"),
            e = secret("mcp-env"),
            u = secret("mcp-url-token"),
            h = secret("mcp-auth"),
            o = secret("mcp-other-header"),
        ),
    )
    .unwrap();
    let fake = FakeModel::start(Script::new(vec![])).await.unwrap();
    for args in [&["config"][..], &["config", "--json"][..]] {
        let out = output(tree.tackle(&fake, args)).await;
        let printed = text(&out.stdout);
        assert!(out.status.success(), "{}", text(&out.stderr));
        assert!(!printed.contains(MARK), "{args:?} printed a secret:\n{printed}");
        assert!(
            printed.contains("carol") && printed.contains("PLAIN_NAME") && printed.contains("region=eu"),
            "{printed}"
        );
    }
    let out = output(tree.tackle(&fake, &["config"])).await;
    let toml_text = text(&out.stdout);
    let parsed: toml::Table = toml_text.parse().unwrap_or_else(|e| panic!("not TOML: {e}\n{toml_text}"));
    assert_eq!(parsed["sandbox"]["mode"].as_str(), Some("workspace-write"));
    assert!(toml_text.contains("# sandbox in force: workspace-write, network off"), "{toml_text}");

    let out = output(tree.tackle(&fake, &["config", "--show-secrets"])).await;
    let shown = text(&out.stdout);
    for s in [
        "url-password",
        "url-query",
        "shell-env",
        "inline-token",
        "mcp-env",
        "mcp-url-token",
        "mcp-auth",
        "openai-key",
    ] {
        assert!(shown.contains(&secret(s)), "--show-secrets hides {s}:\n{shown}");
    }
    // What --show-secrets prints is the configuration itself: it loads back as a tackle.toml.
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("tackle.toml"), &shown).unwrap();
    let mut cmd = tree.tackle(&fake, &["config", "--show-secrets", "--workspace"]);
    cmd.arg(ws.path());
    let again = text(&output(cmd).await.stdout);
    let body = |t: &str| t.lines().filter(|l| !l.starts_with('#')).collect::<Vec<_>>().join("\n");
    assert_eq!(body(&again), body(&shown));
}

/// The `[sandbox.limits]` settings, through `TACKLE_*`, hold on both backends as root and as the
/// unprivileged user: a 3 GiB allocation, 1,500 processes and a busy loop are stopped, and the
/// model gets a `resource_limit` envelope naming the limit and the setting that raises it.
async fn limits_hold(who: Who) {
    if !available(who) {
        return;
    }
    let limits = [
        ("TACKLE_SANDBOX_LIMITS_MEMORY_MIB", "1024"),
        ("TACKLE_SANDBOX_LIMITS_PROCESSES", "64"),
        ("TACKLE_SANDBOX_LIMITS_CPU_SECS", "1"),
    ];
    let cases = [
        (
            "python3 -c 'b = bytearray(3 << 30); print(\"allocated\")'",
            "memory",
            "limits.memory_mib",
            "allocated",
        ),
        (
            "python3 -c 'import os, time\nfor i in range(1500):\n    if os.fork() == 0:\n        time.sleep(30)\n        os._exit(0)\nprint(\"forked all\")'",
            "process",
            "limits.processes",
            "forked all",
        ),
        ("while :; do :; done", "CPU time", "limits.cpu_secs", "\"category\":\"timeout\""),
    ];
    for backend in ["namespaces", "landlock"] {
        let mut env = vec![("TACKLE_SANDBOX_BACKEND", backend)];
        env.extend(limits);
        for (command, what, setting, escaped) in cases {
            let tree = Tree::new(who);
            let out = shell(&tree, command, &env).await;
            let label = format!("{who:?} {backend} {what}");
            assert!(!out.contains(escaped), "{label}: {out}");
            let envelope: Value = serde_json::from_str(&out).unwrap_or_else(|_| panic!("{label}: {out}"));
            assert_eq!(envelope["category"], "resource_limit", "{label}: {out}");
            assert!(
                envelope["message"].as_str().unwrap().contains(&format!("{what} limit")),
                "{label}: {out}"
            );
            assert!(envelope["hint"].as_str().unwrap().contains(setting), "{label}: {out}");
        }
    }
    // Positive control: with the limits off the allocation succeeds.
    let tree = Tree::new(who);
    let env = [("TACKLE_SANDBOX_LIMITS_MEMORY_MIB", "0")];
    let out = shell(&tree, cases[0].0, &env).await;
    assert!(out.contains("allocated"), "{who:?} without a memory limit: {out}");
}

#[tokio::test]
async fn resource_limits_hold_as_root() {
    limits_hold(Who::Root).await;
}

#[tokio::test]
async fn resource_limits_hold_as_an_unprivileged_user() {
    limits_hold(Who::Unprivileged).await;
}
