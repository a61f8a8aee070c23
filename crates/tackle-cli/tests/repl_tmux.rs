//! The REPL on a real terminal: `tackle chat` inside tmux (Debian's, installed by
//! scripts/test-deps.sh) against the fake model, read back with `capture-pane`. A tool turn
//! with markdown, an approval answered "always", Ctrl-C while waiting, /clear, and NO_COLOR.
//! The tool turn's screen is written under the target directory, and to
//! docs/screens/repl-turn.txt only on request (`TACKLE_UPDATE_SCREENS=1`), so the suite leaves the
//! tree as it found it.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use tackle_testkit::{FakeModel, Fault, Script, Turn};

const BIN: &str = env!("CARGO_BIN_EXE_tackle");

fn tmux_available() -> bool {
    let ok = Command::new("tmux").arg("-V").output().is_ok_and(|o| o.status.success());
    if !ok {
        tackle_testkit::peers::missing("tmux", "`tmux -V` failed");
    }
    ok
}

/// One tmux server of its own (private socket) running `tackle chat` in a 100x40 pane.
struct Repl {
    socket: PathBuf,
    _dir: tempfile::TempDir,
    home: tempfile::TempDir,
    workspace: tempfile::TempDir,
}

impl Repl {
    fn start(fake: &FakeModel, extra_env: &[(&str, &str)]) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let home = tempfile::tempdir().unwrap();
        let workspace = tempfile::tempdir().unwrap();
        let socket = dir.path().join("tmux.sock");
        let mut env = vec![
            format!("PATH={}", std::env::var("PATH").unwrap_or_default()),
            format!("HOME={}", home.path().display()),
            format!("XDG_CONFIG_HOME={}", home.path().join("config").display()),
            format!("TACKLE_HOME={}", home.path().join("data").display()),
            "TERM=xterm-256color".to_owned(),
            "LANG=C.UTF-8".to_owned(),
            "OPENAI_API_KEY=sk-test".to_owned(),
            format!("OPENAI_BASE_URL={}/v1", fake.base_url()),
            "TACKLE_PROVIDER=openai".to_owned(),
            "TACKLE_MODEL=gpt-4o".to_owned(),
        ];
        env.extend(extra_env.iter().map(|(k, v)| format!("{k}={v}")));
        let mut args: Vec<String> = vec!["env".into(), "-i".into()];
        args.extend(env);
        args.extend([
            BIN.to_owned(),
            "chat".into(),
            "--workspace".into(),
            workspace.path().display().to_string(),
        ]);
        let status = Command::new("tmux")
            .arg("-S")
            .arg(&socket)
            .args(["-f", "/dev/null", "new-session", "-d", "-s", "t", "-x", "100", "-y", "40"])
            .args(&args)
            .status()
            .unwrap();
        assert!(status.success());
        let repl = Self { socket, _dir: dir, home, workspace };
        repl.tmux(&["set-option", "-t", "t", "remain-on-exit", "on"]);
        repl.wait_for("you>", Duration::from_secs(60));
        repl
    }

    fn tmux(&self, args: &[&str]) -> String {
        let out = Command::new("tmux").arg("-S").arg(&self.socket).args(args).output().unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Types `text` and presses Enter.
    fn line(&self, text: &str) {
        self.tmux(&["send-keys", "-t", "t", "-l", text]);
        self.tmux(&["send-keys", "-t", "t", "Enter"]);
    }

    fn keys(&self, key: &str) {
        self.tmux(&["send-keys", "-t", "t", key]);
    }

    /// The visible screen, as text.
    fn screen(&self) -> String {
        self.tmux(&["capture-pane", "-p", "-t", "t"])
    }

    /// The visible screen with colours as escape sequences.
    fn screen_with_escapes(&self) -> String {
        self.tmux(&["capture-pane", "-p", "-e", "-t", "t"])
    }

    fn wait_for(&self, needle: &str, timeout: Duration) -> String {
        let start = Instant::now();
        loop {
            let screen = self.screen();
            if screen.contains(needle) {
                return screen;
            }
            assert!(start.elapsed() < timeout, "timed out waiting for {needle:?}; the screen:\n{screen}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Waits until `needle` shows `n` times.
    fn wait_for_count(&self, needle: &str, n: usize, timeout: Duration) -> String {
        let start = Instant::now();
        loop {
            let screen = self.screen();
            if screen.matches(needle).count() >= n {
                return screen;
            }
            assert!(
                start.elapsed() < timeout,
                "timed out waiting for {n}x {needle:?}; the screen:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Repl {
    fn drop(&mut self) {
        let _ = Command::new("tmux").arg("-S").arg(&self.socket).arg("kill-server").output();
    }
}

/// The screen without what changes from run to run (paths, ids, timings).
fn normalize(screen: &str, repl: &Repl) -> String {
    let mut s = screen.replace(&repl.workspace.path().display().to_string(), "/tmp/ws");
    s = s.replace(&repl.home.path().display().to_string(), "/tmp/home");
    let uuid = regex::Regex::new(r"[0-9a-f]{8}-[0-9a-f]{4}(-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})?").unwrap();
    s = uuid.replace_all(&s, "01234567-89ab").into_owned();
    // Prompt sizes depend on the temporary paths in the system prompt.
    let usage = regex::Regex::new(r"[\d,]+ tokens in \(\d+% cached\) · \d+ out").unwrap();
    s = usage.replace_all(&s, "N tokens in (M% cached) · K out").into_owned();
    let secs = regex::Regex::new(r"\d+\.\ds\b").unwrap();
    s = secs.replace_all(&s, "0.5s").into_owned();
    let ms = regex::Regex::new(r"\b\d+ ms\b").unwrap();
    s = ms.replace_all(&s, "100 ms").into_owned();
    s.lines().map(str::trim_end).collect::<Vec<_>>().join("\n").trim_end().to_owned() + "\n"
}

/// Keeps a screen: under the target directory, and in docs/screens only on request
/// (`TACKLE_UPDATE_SCREENS=1`). Not compared: whether a turn line shows a duration, or the next
/// prompt is drawn yet, depends on timing.
fn keep_in_docs(name: &str, text: &str) {
    let docs = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/screens").join(name);
    let path = if std::env::var_os("TACKLE_UPDATE_SCREENS").is_some_and(|v| v == "1") {
        docs
    } else {
        Path::new(env!("CARGO_TARGET_TMPDIR")).join(name)
    };
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, text).unwrap();
}

const ANSWER: &str = "## Result\n\nThe file says **hi there**; see `hello.txt`:\n\n- first point\n- second *point*\n\n| file | lines |\n|---|--:|\n| hello.txt | 1 |\n\n```sh\ncat hello.txt\n```\n";

#[test]
fn a_tool_turn_renders_a_labelled_result_markdown_and_a_turn_line() {
    if !tmux_available() {
        return;
    }
    let rt = tokio::runtime::Runtime::new().unwrap();
    let fake = rt
        .block_on(FakeModel::start({
            let mut script = Script::new(vec![
                Turn::text("Let me read it.").with_call("read_file", r#"{"path": "hello.txt"}"#),
                Turn::text(ANSWER),
            ]);
            // Usage from the simulated prompt cache, so the turn line has figures to show.
            script.simulate_cache = true;
            script
        }))
        .unwrap();
    let repl = Repl::start(&fake, &[]);
    std::fs::write(repl.workspace.path().join("hello.txt"), "hi there\n").unwrap();
    repl.line("what does hello.txt say?");
    let screen = repl.wait_for("─ 2 steps", Duration::from_secs(60));
    assert!(screen.contains("✓ read_file hello.txt"), "{screen}");
    assert!(screen.contains("    1  hi there"), "the first lines of the read: {screen}");
    // Markdown: markers gone, bullets, a code block frame.
    assert!(screen.contains("The file says hi there; see hello.txt:"), "{screen}");
    assert!(screen.contains("• first point") && screen.contains("• second point"), "{screen}");
    assert!(screen.contains("┌──── sh") && screen.contains("│ cat hello.txt"), "{screen}");
    assert!(!screen.contains("**"), "{screen}");
    // The table as a grid, its number column right-aligned.
    for row in
        ["┌───────────┬───────┐", "│ file      │ lines │", "│ hello.txt │     1 │", "└───────────┴───────┘"]
    {
        assert!(screen.contains(row), "{row}: {screen}");
    }
    assert!(!screen.contains("|---"), "{screen}");
    let turn_line =
        regex::Regex::new(r"─ 2 steps · [\d,]+ tokens in \(\d+% cached\) · \d+ out · \d+\.\ds").unwrap();
    assert!(turn_line.is_match(&screen), "{screen}");
    // Colours: a green check, bold heading.
    let coloured = repl.screen_with_escapes();
    assert!(coloured.contains("\x1b[32m✓"), "{coloured:?}");
    keep_in_docs("repl-turn.txt", &normalize(&screen, &repl));

    // /clear: a new session on a clean screen; the old one stays stored.
    repl.line("/clear");
    let screen = repl.wait_for("new session", Duration::from_secs(60));
    assert!(!screen.contains("read_file"), "the screen was cleared:\n{screen}");
    assert!(screen.contains("/resume"), "{screen}");
    repl.line("/session");
    let screen = repl.wait_for("messages  0", Duration::from_secs(60));
    assert!(screen.contains("messages  0"), "{screen}");
}

#[test]
fn an_approval_shows_the_content_and_always_holds_for_the_session() {
    if !tmux_available() {
        return;
    }
    let rt = tokio::runtime::Runtime::new().unwrap();
    let fake = rt
        .block_on(FakeModel::start(Script::new(vec![
            Turn::call("write_file", r#"{"path": "a.txt", "content": "alpha line\n"}"#),
            Turn::call("write_file", r#"{"path": "b.txt", "content": "beta line\n"}"#),
            Turn::text("Both written."),
        ])))
        .unwrap();
    let repl = Repl::start(&fake, &[]);
    repl.line("write two files");
    let screen = repl.wait_for("lways for this session", Duration::from_secs(60));
    assert!(screen.contains("? allow write_file a.txt"), "{screen}");
    assert!(screen.contains("+alpha line"), "the content to be written is shown:\n{screen}");
    assert!(screen.contains("new file a.txt"), "{screen}");
    repl.line("a");
    let screen = repl.wait_for("─ 3 steps", Duration::from_secs(60));
    assert!(screen.contains("allowed for the rest of this session"), "{screen}");
    assert!(screen.contains("✓ write_file b.txt"), "{screen}");
    assert_eq!(screen.matches("? allow").count(), 1, "asked once:\n{screen}");
    assert_eq!(std::fs::read_to_string(repl.workspace.path().join("b.txt")).unwrap(), "beta line\n");
    keep_in_docs("repl-approval.txt", &normalize(&screen, &repl));
    repl.line("/approvals");
    repl.wait_for("always allowed in this session: write_file", Duration::from_secs(60));
}

#[test]
fn ctrl_c_while_waiting_cancels_the_turn_and_the_repl_goes_on() {
    if !tmux_available() {
        return;
    }
    let rt = tokio::runtime::Runtime::new().unwrap();
    let fake = rt
        .block_on(FakeModel::start(Script::new(vec![
            Turn::text("after the cancel"),
            Turn::text("after the cancel"),
        ])))
        .unwrap();
    fake.push_fault(Fault::Latency { ms: 30_000 });
    let repl = Repl::start(&fake, &[]);
    repl.line("take your time");
    // The spinner: what it waits for, for how long, and how to interrupt.
    let screen = repl.wait_for("Ctrl-C to interrupt", Duration::from_secs(60));
    assert!(screen.contains("thinking"), "{screen}");
    assert!(regex::Regex::new(r"\d+\.\ds · Ctrl-C to interrupt").unwrap().is_match(&screen), "{screen}");
    repl.keys("C-c");
    let screen = repl.wait_for("cancelled", Duration::from_secs(60));
    assert!(screen.contains("cancelling the turn"), "{screen}");
    assert!(!screen.contains("Ctrl-C to interrupt"), "the spinner is gone:\n{screen}");
    repl.wait_for_count("you>", 2, Duration::from_secs(60));
    repl.line("again");
    let screen = repl.wait_for("after the cancel", Duration::from_secs(60));
    assert!(screen.contains("after the cancel"), "{screen}");
}

#[test]
fn no_color_means_no_escape_codes_on_screen() {
    if !tmux_available() {
        return;
    }
    let rt = tokio::runtime::Runtime::new().unwrap();
    let fake = rt
        .block_on(FakeModel::start(Script::new(vec![
            Turn::call("list_files", r#"{"path": "."}"#),
            Turn::text(
                "**Plain** answer with `code`.\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n```sh\nls -la\n```\nEnd.",
            ),
        ])))
        .unwrap();
    let repl = Repl::start(&fake, &[("NO_COLOR", "1")]);
    repl.line("list");
    let screen = repl.wait_for("─ 2 steps", Duration::from_secs(60));
    // Markdown is rendered as plain text: no markers, no fences, a drawn table; no colour.
    assert!(screen.contains("Plain answer with code."), "{screen}");
    assert!(!screen.contains("**") && !screen.contains("```") && !screen.contains('`'), "{screen}");
    assert!(screen.contains("┌──── sh") && screen.contains("│ ls -la"), "{screen}");
    assert!(screen.contains("│ a │ b │") && screen.contains("│ 1 │ 2 │"), "{screen}");
    assert!(screen.contains("✓ list_files ."), "{screen}");
    let coloured = repl.screen_with_escapes();
    assert!(!coloured.contains('\x1b'), "escape codes with NO_COLOR: {coloured:?}");
}

/// `/tools` and `/context` wrap their long lines at word boundaries, under their column.
#[test]
fn tools_and_context_wrap_between_words() {
    if !tmux_available() {
        return;
    }
    let rt = tokio::runtime::Runtime::new().unwrap();
    let fake = rt.block_on(FakeModel::start(Script::new(vec![]))).unwrap();
    let repl = Repl::start(&fake, &[]);
    repl.line("/tools");
    // Rows are written one at a time: wait for the end of the shell row's description, which
    // wraps, so that the row and its continuation are both on the screen.
    let screen = repl.wait_for("stderr.", Duration::from_secs(60));
    let description =
        "Run a shell command with bash in the workspace and return its exit code, stdout and stderr.";
    let words: std::collections::HashSet<&str> = description.split_whitespace().collect();
    let lines: Vec<&str> = screen.lines().collect();
    let at = lines.iter().position(|l| l.contains("Run a shell command")).expect("the shell row");
    assert!(lines[at].trim_end().chars().count() <= 100, "{screen}");
    let (end, next) = (lines[at].split_whitespace().last().unwrap(), lines[at + 1]);
    assert!(words.contains(end), "the first line ends on a whole word, not {end:?}:\n{screen}");
    let indent = lines[at].find("Run").unwrap();
    assert_eq!(next.find(|c: char| c != ' '), Some(indent), "continued under its column:\n{screen}");
    assert!(words.contains(next.split_whitespace().next().unwrap()), "{screen}");

    repl.line("/clear");
    repl.wait_for("new session", Duration::from_secs(60));
    repl.line("/context");
    let screen = repl.wait_for("/compact reports", Duration::from_secs(60));
    // Joined back by single spaces, a word cut by the terminal would read as two.
    let text: String = screen.split_whitespace().collect::<Vec<_>>().join(" ");
    let paragraph = regex::Regex::new(
        r"conversation = the session's messages as the next request sends them, counted with \S+ \((the model's own tokenizer|a similar tokenizer, calibrated to the provider's reports)\); /compact reports its before and after in the same figure",
    )
    .unwrap();
    assert!(paragraph.is_match(&text), "{screen}");
    let at = screen.lines().position(|l| l.contains("conversation = the")).unwrap();
    let next = screen.lines().nth(at + 1).unwrap();
    assert!(next.starts_with("  ") && !next.starts_with("   "), "continued under its paragraph:\n{screen}");
}

/// A summary that fails during /compact: the friendly warning and the compaction line, no raw log
/// line (those wait for -v).
#[test]
fn a_failed_summary_shows_a_friendly_warning_and_no_log_lines() {
    if !tmux_available() {
        return;
    }
    let rt = tokio::runtime::Runtime::new().unwrap();
    let fake = rt
        .block_on(FakeModel::start(Script::new(vec![
            Turn::text("The first answer, long enough to be worth summarizing later on."),
            Turn::text("The second answer."),
        ])))
        .unwrap();
    let repl = Repl::start(&fake, &[]);
    repl.line("a first question");
    repl.wait_for("─ 1 step", Duration::from_secs(60));
    repl.line("a second question");
    repl.wait_for_count("─ 1 step", 2, Duration::from_secs(60));
    // The summary request is refused by the provider.
    fake.push_fault(Fault::status(400));
    repl.line("/compact");
    // The next prompt, not the start of the compaction line: a line can reach the terminal in
    // pieces, and the prompt comes back only once /compact has written everything.
    let screen = repl.wait_for_count("you>", 4, Duration::from_secs(60));
    assert!(screen.contains("compacted:"), "{screen}");
    assert!(
        screen.contains("warning: summarizing the conversation failed")
            && screen.contains("the oldest messages are dropped instead"),
        "{screen}"
    );
    assert!(screen.contains("truncate"), "{screen}");
    assert!(!screen.contains("WARN") && !screen.contains("summarization failed; truncating"), "{screen}");
}

/// An MCP server in the REPL (the reference server-everything): one of its prompts sent as a
/// slash command, one of its resources attached to a message, and its question answered as a
/// form at the terminal.
#[test]
fn an_mcp_prompt_resource_and_question_in_the_repl() {
    if !tmux_available() {
        return;
    }
    let Some(dir) = tackle_testkit::peers::or_skip(tackle_testkit::peers::npm_package(
        "@modelcontextprotocol/server-everything",
    )) else {
        return;
    };
    let script = dir.join("dist/index.js");
    let features = std::fs::read_to_string(dir.join("dist/docs/features.md")).unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let fake = rt
        .block_on(FakeModel::start(Script::new(vec![
            Turn::text("Paris it is."),
            Turn::text("I read the features."),
            Turn::call("everything__trigger-elicitation-request", "{}"),
            Turn::text("Thanks, Ada."),
        ])))
        .unwrap();
    let servers = serde_json::json!({"everything": {"command": "node", "args": [script, "stdio"], "start_timeout_secs": 30}})
        .to_string();
    let repl = Repl::start(&fake, &[("TACKLE_MCP_SERVERS", &servers)]);
    repl.line("/prompts");
    let screen = repl.wait_for("/everything:args-prompt", Duration::from_secs(60));
    assert!(screen.contains("/everything:args-prompt  city [state]"), "{screen}");
    repl.line("/everything:args-prompt Paris state=TX");
    repl.wait_for("Paris it is.", Duration::from_secs(60));
    repl.line("what does @everything:demo://resource/static/document/features.md list?");
    repl.wait_for("I read the features.", Duration::from_secs(60));
    repl.line("sign me up");
    repl.wait_for("everything asks: Please provide inputs", Duration::from_secs(60));
    repl.line("");
    repl.wait_for("legal name) (required):", Duration::from_secs(30));
    repl.line("Ada Lovelace");
    // Every other field: its default, or left empty.
    for label in [
        "Boolean",
        "String with default",
        "String with email format",
        "String with uri format",
        "String with date format",
        "Integer",
        "Number in range",
        "Untitled Single Select Enum",
        "Untitled Multiple Select Enum",
        "Titled Single Select Enum",
        "Titled Multiple Select Enum",
        "Legacy Titled Single Select Enum",
    ] {
        repl.wait_for(label, Duration::from_secs(30));
        repl.line("");
    }
    let screen = repl.wait_for("Thanks, Ada.", Duration::from_secs(60));
    assert!(screen.contains("everything__trigger-elicitation-request"), "{screen}");
    let requests = fake.requests();
    let prompt = requests[0].body.to_string();
    assert!(prompt.contains("weather in Paris, TX"), "the prompt's text was sent: {prompt}");
    let attached = requests[1].body.to_string();
    assert!(features.starts_with("# Everything Server - Features"));
    assert!(
        attached.contains("[Attached resource @everything:demo://resource/static/document/features.md]")
            && attached.contains("# Everything Server - Features"),
        "the resource's text was attached: {attached}"
    );
    let answered = requests.last().unwrap().body.to_string();
    assert!(
        answered.contains("Name: Ada Lovelace") && answered.contains("Favorite Integer: 42"),
        "{answered}"
    );
}

/// A model call that is retried shows the friendly retry line, and no raw log line breaks into
/// the display (those wait for `-v`).
#[test]
fn a_retry_shows_one_friendly_line_and_no_log_lines() {
    if !tmux_available() {
        return;
    }
    let rt = tokio::runtime::Runtime::new().unwrap();
    let fake = rt.block_on(FakeModel::start(Script::new(vec![Turn::text("Back again.")]))).unwrap();
    let repl = Repl::start(&fake, &[]);
    fake.push_fault(Fault::status(500));
    repl.line("hello?");
    let screen = repl.wait_for("─ 1 step", Duration::from_secs(60));
    assert!(screen.contains("Back again."), "{screen}");
    assert!(screen.contains("retry 2 in"), "the friendly line: {screen}");
    assert!(!screen.contains("WARN") && !screen.contains("retrying model request"), "{screen}");
}
