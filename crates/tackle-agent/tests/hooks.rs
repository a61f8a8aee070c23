//! Script hooks against the scripted fake model, with hook scripts in bash and Python written
//! the way Claude Code's hook documentation shows them (JSON on stdin read with `jq` or
//! `json.load`, exit code 2 to block, JSON on stdout to decide). Each test drives a real
//! session: the hook runs as a child process, and what the model saw is read back from the
//! fake model's recorded requests.

use crate::common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tackle_agent::{Agent, AgentBuilder, NewSessionOptions, Session, TurnInput};
use tackle_protocol::{AgentEvent, TurnEnd};
use tackle_provider::ProviderKind;
use tackle_store::Store;
use tackle_testkit::{FakeModel, Script, Turn};
use tackle_tools::{AutoApprove, EventSink, HookEvent, ScriptHook};
use tokio_util::sync::CancellationToken;

/// A workspace, a store, a fake model and the events of one session.
struct Rig {
    fake: FakeModel,
    agent: Agent,
    workspace: tempfile::TempDir,
    _hooks_dir: tempfile::TempDir,
    _db: tempfile::TempDir,
    events: Arc<Mutex<Vec<AgentEvent>>>,
}

fn jq_available() -> bool {
    let ok = std::process::Command::new("jq").arg("--version").output().is_ok_and(|o| o.status.success());
    if !ok {
        tackle_testkit::peers::missing("jq", "`jq --version` failed (scripts/test-deps.sh installs it)");
    }
    ok
}

impl Rig {
    /// `hooks` are (event, file name, script text, extra): scripts are written into a directory
    /// of their own and run as `bash FILE` or `python3 FILE`.
    async fn new(
        script: Script,
        hooks: &[(HookEvent, &str, &str)],
        builder: impl FnOnce(AgentBuilder) -> AgentBuilder,
    ) -> Self {
        let workspace = tempfile::tempdir().unwrap();
        let hooks_dir = tempfile::tempdir().unwrap();
        let db = tempfile::tempdir().unwrap();
        let store = Store::open(&db.path().join("tackle.db")).await.unwrap();
        let fake = FakeModel::start(script).await.unwrap();
        let mut b = Agent::builder(common::provider(ProviderKind::Openai, &fake))
            .model("model-x")
            .store(store)
            .workspace(workspace.path())
            .approver(AutoApprove);
        for (event, file, text) in hooks {
            let path = hooks_dir.path().join(file);
            std::fs::write(&path, text).unwrap();
            let runner = if file.ends_with(".py") { "python3" } else { "bash" };
            b = b.hook(ScriptHook::command(*event, format!("{runner} {}", path.display())));
        }
        let agent = builder(b).build().await.unwrap();
        Self { fake, agent, workspace, _hooks_dir: hooks_dir, _db: db, events: Arc::default() }
    }

    async fn session(&self) -> Session {
        self.agent
            .create_session(NewSessionOptions {
                workspace: self.workspace.path().to_owned(),
                ..Default::default()
            })
            .await
            .unwrap()
    }

    fn sink(&self) -> EventSink {
        let events = self.events.clone();
        EventSink::new(move |e| events.lock().unwrap().push(e))
    }

    async fn turn(&self, session: &mut Session, prompt: &str) -> tackle_agent::TurnOutcome {
        session.run_turn(TurnInput::new(prompt), &self.sink(), &CancellationToken::new()).await.unwrap()
    }

    /// `(event, outcome, message)` of every hook run.
    fn hook_runs(&self) -> Vec<(String, String, Option<String>)> {
        self.events
            .lock()
            .unwrap()
            .iter()
            .filter_map(|e| match e {
                AgentEvent::HookFinished { event, outcome, message, .. } => {
                    Some((event.clone(), outcome.clone(), message.clone()))
                }
                _ => None,
            })
            .collect()
    }

    /// The messages of the `n`th request the model received.
    fn request_messages(&self, n: usize) -> Vec<Value> {
        let requests = self.fake.requests();
        requests[n].body["messages"].as_array().cloned().unwrap_or_default()
    }
}

/// The text of a tool message (Chat Completions) for call `id`.
fn tool_text(messages: &[Value]) -> Vec<String> {
    messages
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().map(str::to_owned).unwrap_or_else(|| m["content"].to_string()))
        .collect()
}

/// Claude Code's documented example, almost verbatim: block `rm -rf` by exit code 2.
const BLOCK_RM_RF: &str = r#"#!/bin/bash
COMMAND=$(jq -r '.tool_input.command')
if echo "$COMMAND" | grep -q 'rm -rf'; then
  echo "Blocked: rm -rf is not allowed here" >&2
  exit 2
fi
exit 0
"#;

#[tokio::test]
async fn a_bash_pre_tool_use_hook_blocks_rm_rf_with_exit_code_2() {
    if !jq_available() {
        return;
    }
    let script = Script::new(vec![
        Turn::call("shell", r#"{"command": "rm -rf build"}"#),
        Turn::call("shell", r#"{"command": "echo kept > kept.txt"}"#),
        Turn::text("done"),
    ]);
    let rig = Rig::new(script, &[(HookEvent::PreToolUse, "block.sh", BLOCK_RM_RF)], |b| b).await;
    std::fs::create_dir(rig.workspace.path().join("build")).unwrap();
    let mut session = rig.session().await;
    let outcome = rig.turn(&mut session, "clean up").await;
    assert_eq!(outcome.end, TurnEnd::Completed);
    assert!(
        rig.workspace.path().join("build").is_dir(),
        "the blocked command never ran: {:?} {:?}",
        rig.hook_runs(),
        tool_text(&rig.request_messages(2))
    );
    assert_eq!(std::fs::read_to_string(rig.workspace.path().join("kept.txt")).unwrap(), "kept\n");
    // The model read the hook's stderr in a `denied` envelope.
    let results = tool_text(&rig.request_messages(2));
    assert!(
        results[0].contains("\"category\":\"denied\"")
            && results[0].contains("Blocked: rm -rf is not allowed here"),
        "{results:?}"
    );
    assert!(results[1].contains("exit code: 0"), "{results:?}");
    let runs = rig.hook_runs();
    assert_eq!(runs.len(), 2);
    assert_eq!((runs[0].0.as_str(), runs[0].1.as_str()), ("PreToolUse", "blocked"));
    assert_eq!((runs[1].0.as_str(), runs[1].1.as_str()), ("PreToolUse", "ok"));
}

/// A Python hook in the style of the documentation: rewrite the input, allow it, add context.
const REWRITE_PY: &str = r#"
import json, sys
data = json.load(sys.stdin)
assert data["hook_event_name"] == "PreToolUse", data
assert data["tool_name"] == "shell" and data["tool_use_id"], data
assert data["permission_mode"] == "default" and data["cwd"] and data["session_id"], data
command = data["tool_input"]["command"]
if command.startswith("cat secret"):
    print(json.dumps({"hookSpecificOutput": {
        "hookEventName": "PreToolUse",
        "permissionDecision": "deny",
        "permissionDecisionReason": "secret files stay closed"}}))
    sys.exit(0)
print(json.dumps({
    "hookSpecificOutput": {
        "hookEventName": "PreToolUse",
        "permissionDecision": "allow",
        "permissionDecisionReason": "rewritten to a dry run",
        "updatedInput": {"command": "echo dry-run: " + command},
        "additionalContext": "the command ran as a dry run",
    }
}))
"#;

#[tokio::test]
async fn a_python_pre_tool_use_hook_rewrites_the_input_with_updated_input() {
    let script = Script::new(vec![
        Turn::call("shell", r#"{"command": "touch made.txt"}"#),
        Turn::call("shell", r#"{"command": "cat secret.txt"}"#),
        Turn::text("done"),
    ]);
    // The shell asks for confirmation by default; nobody could answer here (no approver), so
    // only the hook's `allow` lets the first call run.
    let rig = Rig::new(script, &[(HookEvent::PreToolUse, "rewrite.py", REWRITE_PY)], |b| {
        b.shared_approver(Arc::new(tackle_tools::DenyAll::new("nobody is here")))
    })
    .await;
    let mut session = rig.session().await;
    let outcome = rig.turn(&mut session, "make a file").await;
    assert_eq!(outcome.end, TurnEnd::Completed);
    assert!(!rig.workspace.path().join("made.txt").exists(), "the rewritten command ran instead");
    let results = tool_text(&rig.request_messages(2));
    assert!(results[0].contains("dry-run: touch made.txt"), "{results:?}");
    assert!(results[0].contains("[PreToolUse hook] the command ran as a dry run"), "{results:?}");
    assert!(results[1].contains("secret files stay closed") && results[1].contains("denied"), "{results:?}");
    // The history keeps the call as the model made it.
    let history = session.history();
    let first_call = history.iter().flat_map(|m| m.tool_uses()).next().unwrap();
    assert_eq!(first_call.input.as_json().unwrap()["command"], "touch made.txt");
}

#[tokio::test]
async fn user_prompt_submit_adds_context_or_blocks_the_prompt() {
    let hook = r#"
import json, sys, datetime
data = json.load(sys.stdin)
prompt = data["prompt"]
if "password" in prompt:
    print(json.dumps({"decision": "block", "reason": "prompts with secrets are not sent"}))
    sys.exit(0)
print("Current sprint: hooks and rewind")  # plain stdout is context here
"#;
    let script = Script::new(vec![Turn::text("noted"), Turn::text("never")]);
    let rig = Rig::new(script, &[(HookEvent::UserPromptSubmit, "prompt.py", hook)], |b| b).await;
    let mut session = rig.session().await;
    let ok = rig.turn(&mut session, "what are we doing?").await;
    assert_eq!(ok.end, TurnEnd::Completed);
    let sent = rig.request_messages(0);
    let user = sent.iter().find(|m| m["role"] == "user").unwrap().to_string();
    assert!(
        user.contains("what are we doing?") && user.contains("Current sprint: hooks and rewind"),
        "{user}"
    );
    let blocked = rig.turn(&mut session, "my password is hunter2").await;
    assert_eq!(blocked.end, TurnEnd::Failed);
    let failure = blocked.error.unwrap();
    assert!(matches!(failure, tackle_agent::TurnFailure::PromptBlocked(_)), "{failure:?}");
    assert!(failure.to_string().contains("prompts with secrets are not sent"));
    assert_eq!(rig.fake.requests().len(), 1, "a blocked prompt never reaches the model");
    assert!(
        !session.history().iter().any(|m| m.text().contains("hunter2")),
        "a blocked prompt is not stored"
    );
    let json_context = r#"
import json, sys
json.load(sys.stdin)
print(json.dumps({"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": "the repo uses tabs"}}))
"#;
    let rig = Rig::new(
        Script::new(vec![Turn::text("ok")]),
        &[(HookEvent::UserPromptSubmit, "ctx.py", json_context)],
        |b| b,
    )
    .await;
    let mut session = rig.session().await;
    rig.turn(&mut session, "style?").await;
    assert!(rig.request_messages(0).iter().any(|m| m.to_string().contains("the repo uses tabs")));
}

/// A Stop hook that refuses to stop once, as the documentation's example does, checking
/// `stop_hook_active` so it never loops.
const STOP_ONCE: &str = r#"
import json, sys
data = json.load(sys.stdin)
if data.get("stop_hook_active"):
    sys.exit(0)
print(json.dumps({"decision": "block", "reason": "run the tests before you stop"}))
"#;

#[tokio::test]
async fn a_stop_hook_refuses_to_stop_once() {
    let script = Script::new(vec![Turn::text("I am done."), Turn::text("Tests pass; now I am done.")]);
    let rig = Rig::new(script, &[(HookEvent::Stop, "stop.py", STOP_ONCE)], |b| b).await;
    let mut session = rig.session().await;
    let outcome = rig.turn(&mut session, "fix it").await;
    assert_eq!(outcome.end, TurnEnd::Completed);
    assert_eq!(outcome.steps, 2);
    assert_eq!(outcome.text, "Tests pass; now I am done.");
    let second = rig.request_messages(1);
    let last = second.last().unwrap().to_string();
    assert!(last.contains("[Stop hook] run the tests before you stop"), "{last}");
    let runs = rig.hook_runs();
    assert_eq!(runs.iter().map(|r| r.1.as_str()).collect::<Vec<_>>(), ["blocked", "ok"]);
}

#[tokio::test]
async fn post_tool_use_feedback_reaches_the_model_and_errors_do_not_stop_the_call() {
    if !jq_available() {
        return;
    }
    let post = r#"#!/bin/bash
input=$(cat)
file=$(echo "$input" | jq -r '.tool_input.path')
ok=$(echo "$input" | jq -r '.tool_response.output')
echo "{\"decision\": \"block\", \"reason\": \"$file needs a trailing newline (tool said: $ok)\"}"
"#;
    let failing = "#!/bin/bash\necho 'linter crashed' >&2\nexit 1\n";
    let script = Script::new(vec![
        Turn::call("write_file", r#"{"path": "a.txt", "content": "x"}"#),
        Turn::text("done"),
    ]);
    let rig = Rig::new(
        script,
        &[(HookEvent::PreToolUse, "fail.sh", failing), (HookEvent::PostToolUse, "post.sh", post)],
        |b| b,
    )
    .await;
    let mut session = rig.session().await;
    rig.turn(&mut session, "write").await;
    assert_eq!(
        std::fs::read_to_string(rig.workspace.path().join("a.txt")).unwrap(),
        "x",
        "exit 1 does not block"
    );
    let results = tool_text(&rig.request_messages(1));
    assert!(results[0].contains("[PostToolUse hook] a.txt needs a trailing newline"), "{results:?}");
    let runs = rig.hook_runs();
    assert_eq!(runs[0].1, "error");
    assert!(runs[0].2.as_deref().unwrap().contains("linter crashed"));
    assert_eq!(runs[1].1, "blocked");
}

#[tokio::test]
async fn hooks_run_in_order_and_see_the_input_the_previous_one_left() {
    let first = r#"
import json, sys
d = json.load(sys.stdin)
print(json.dumps({"hookSpecificOutput": {"updatedInput": {"command": d["tool_input"]["command"] + " one"}}}))
"#;
    let second = r#"
import json, sys
d = json.load(sys.stdin)
print(json.dumps({"hookSpecificOutput": {"updatedInput": {"command": d["tool_input"]["command"] + " two"}}}))
"#;
    let script = Script::new(vec![Turn::call("shell", r#"{"command": "echo zero"}"#), Turn::text("done")]);
    let rig = Rig::new(
        script,
        &[(HookEvent::PreToolUse, "1.py", first), (HookEvent::PreToolUse, "2.py", second)],
        |b| b,
    )
    .await;
    let mut session = rig.session().await;
    rig.turn(&mut session, "go").await;
    let results = tool_text(&rig.request_messages(1));
    assert!(results[0].contains("zero one two"), "{results:?}");
}

#[tokio::test]
async fn a_hook_that_hangs_is_stopped_at_its_timeout_with_its_children() {
    let marker = tempfile::tempdir().unwrap();
    let late = marker.path().join("late");
    let hang = format!("(sleep 3; touch {}) &\nsleep 30\n", late.display());
    let script = Script::new(vec![Turn::call("shell", r#"{"command": "echo ran"}"#), Turn::text("done")]);
    let hooks_dir = tempfile::tempdir().unwrap();
    let path = hooks_dir.path().join("hang.sh");
    std::fs::write(&path, hang).unwrap();
    let rig = Rig::new(script, &[], |b| {
        b.hook(ScriptHook::command(HookEvent::PreToolUse, format!("bash {}", path.display())).timeout_secs(1))
    })
    .await;
    let mut session = rig.session().await;
    let started = std::time::Instant::now();
    let outcome = rig.turn(&mut session, "go").await;
    assert_eq!(outcome.end, TurnEnd::Completed);
    assert!(started.elapsed() < Duration::from_secs(20), "the hook was not stopped: {:?}", started.elapsed());
    let runs = rig.hook_runs();
    assert_eq!(runs[0].1, "error");
    assert!(runs[0].2.as_deref().unwrap().contains("timed out"), "{runs:?}");
    assert!(tool_text(&rig.request_messages(1))[0].contains("ran"), "a timeout does not block the call");
    // The hook's background child went with its process group.
    tokio::time::sleep(Duration::from_secs(4)).await;
    assert!(!late.exists(), "a child of the timed-out hook survived");
}

#[tokio::test]
async fn continue_false_stops_the_turn_after_the_step() {
    let hook = r#"
import json, sys
json.load(sys.stdin)
print(json.dumps({"continue": False, "stopReason": "the budget for this task is spent"}))
"#;
    let script = Script::new(vec![
        Turn::call("shell", r#"{"command": "echo one"}"#),
        Turn::call("shell", r#"{"command": "echo two"}"#),
        Turn::text("never"),
    ]);
    let rig = Rig::new(script, &[(HookEvent::PostToolUse, "stop.py", hook)], |b| b).await;
    let mut session = rig.session().await;
    let outcome = rig.turn(&mut session, "go").await;
    assert_eq!((outcome.end, outcome.steps), (TurnEnd::Completed, 1));
    assert_eq!(rig.fake.requests().len(), 1);
    let warned = rig.events.lock().unwrap().iter().any(|e| {
        matches!(e, AgentEvent::Warning { code, message } if *code == "hook_stopped" && message.contains("budget"))
    });
    assert!(warned);
}

#[tokio::test]
async fn session_start_end_and_pre_compact_hooks() {
    let log = |name: &str| {
        format!(
            "#!/bin/bash\ncat >> \"$CLAUDE_PROJECT_DIR/{name}.log\"\necho >> \"$CLAUDE_PROJECT_DIR/{name}.log\"\n"
        )
    };
    let start = r#"
import json, sys
d = json.load(sys.stdin)
print(json.dumps({"hookSpecificOutput": {"hookEventName": "SessionStart",
                  "additionalContext": "started from " + d["source"] + " with " + d["model"]}}))
"#;
    let block_compact = "#!/bin/bash\necho 'keep everything: the audit needs it' >&2\nexit 2\n";
    let end_log = log("end");
    let script = Script::new(vec![Turn::text("one"), Turn::text("two")]);
    let rig = Rig::new(
        script,
        &[
            (HookEvent::SessionStart, "start.py", start),
            (HookEvent::SessionEnd, "end.sh", &end_log),
            (HookEvent::PreCompact, "compact.sh", block_compact),
        ],
        |b| b,
    )
    .await;
    let mut session = rig.session().await;
    rig.turn(&mut session, "first").await;
    rig.turn(&mut session, "second").await;
    let first = rig.request_messages(0).iter().map(Value::to_string).collect::<String>();
    assert!(first.contains("started from startup with model-x"), "{first}");
    let second = rig.request_messages(1);
    let users: Vec<String> = second.iter().filter(|m| m["role"] == "user").map(Value::to_string).collect();
    assert_eq!(
        users.iter().filter(|u| u.contains("started from")).count(),
        1,
        "SessionStart runs once per session value"
    );
    // A resumed session runs it again, as `resume`.
    let mut resumed = rig.agent.open_session(session.id()).await.unwrap();
    rig.fake.set_script(Script::new(vec![Turn::text("three")]));
    rig.turn(&mut resumed, "third").await;
    let third = rig.fake.requests().last().unwrap().body.to_string();
    assert!(third.contains("started from resume with model-x"), "{third}");
    // PreCompact blocks a manual compaction: it never starts (no `context_compacted`).
    let report = resumed.compact_now(&rig.sink()).await.unwrap();
    assert!(report.strategies.is_empty(), "{report:?}");
    assert!(rig.hook_runs().iter().any(|r| r.0 == "PreCompact" && r.1 == "blocked"));
    assert!(!rig.events.lock().unwrap().iter().any(|e| e.name() == "context_compacted"));
    // SessionEnd gets the reason.
    resumed.end("prompt_input_exit", &rig.sink()).await;
    let logged = std::fs::read_to_string(rig.workspace.path().join("end.log")).unwrap();
    let input: Value = serde_json::from_str(logged.lines().next().unwrap()).unwrap();
    assert_eq!(input["hook_event_name"], "SessionEnd");
    assert_eq!(input["reason"], "prompt_input_exit");
    assert_eq!(input["session_id"], json!(session.id().as_str()));
}

#[tokio::test]
async fn notification_runs_when_a_call_waits_for_a_person() {
    let notify = "#!/bin/bash\ncat > \"$CLAUDE_PROJECT_DIR/notified.json\"\n";
    let script = Script::new(vec![Turn::call("shell", r#"{"command": "echo hi"}"#), Turn::text("done")]);
    let rig = Rig::new(script, &[(HookEvent::Notification, "notify.sh", notify)], |b| b).await;
    let mut session = rig.session().await;
    rig.turn(&mut session, "go").await;
    let input: Value =
        serde_json::from_str(&std::fs::read_to_string(rig.workspace.path().join("notified.json")).unwrap())
            .unwrap();
    assert_eq!(input["notification_type"], "permission_prompt");
    assert_eq!(input["message"], "Tackle needs your permission to use shell");
}

/// A Python hook written for Claude Code, as its documentation shows: it knows the tools as
/// `Bash` and `Write` and their arguments as `command`, `timeout` (ms) and `file_path`. With
/// `names = "claude-code"` it runs unchanged against Tackle's `shell` and `write_file`.
const CLAUDE_CODE_NAMES_PY: &str = r#"
import json, sys
d = json.load(sys.stdin)
name, args = d["tool_name"], d["tool_input"]
if name == "Bash":
    assert "command" in args, args
    print(json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow",
                      "updatedInput": {"command": "echo rewritten > out.txt", "timeout": 5000}}}))
elif name == "Write":
    if args["file_path"].endswith(".env"):
        print(json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                          "permissionDecisionReason": "no writes to " + args["file_path"]}}))
else:
    print("unexpected tool " + name, file=sys.stderr)
    sys.exit(2)
"#;

#[tokio::test]
async fn claude_code_names_let_a_claude_code_hook_run_unchanged() {
    let script = Script::new(vec![
        Turn::call("shell", r#"{"command": "touch never.txt"}"#),
        Turn::call("write_file", r#"{"path": "prod.env", "content": "KEY=1"}"#),
        Turn::call("write_file", r#"{"path": "notes.txt", "content": "ok"}"#),
        Turn::text("done"),
    ]);
    let hooks_dir = tempfile::tempdir().unwrap();
    let path = hooks_dir.path().join("cc.py");
    std::fs::write(&path, CLAUDE_CODE_NAMES_PY).unwrap();
    let rig = Rig::new(script, &[], |b| {
        b.shared_approver(Arc::new(tackle_tools::DenyAll::new("nobody is here"))).hook(
            ScriptHook {
                matcher: Some("Bash|Write".into()),
                ..ScriptHook::command(HookEvent::PreToolUse, format!("python3 {}", path.display()))
            }
            .claude_code_names(),
        )
    })
    .await;
    let mut session = rig.session().await;
    let outcome = rig.turn(&mut session, "go").await;
    assert_eq!(outcome.end, TurnEnd::Completed);
    let ws = rig.workspace.path();
    let results = tool_text(&rig.request_messages(3));
    // `updatedInput` in Claude Code's names came back as the shell's arguments (and `allow`
    // stood in for the approver that denies everything).
    assert_eq!(
        std::fs::read_to_string(ws.join("out.txt")).ok().as_deref(),
        Some("rewritten\n"),
        "{results:?}"
    );
    assert!(!ws.join("never.txt").exists());
    assert!(!ws.join("prod.env").exists());
    assert!(results[1].contains("no writes to prod.env"), "{results:?}");
    // The matcher names Claude Code's tools: `Write` matched write_file, and a write the hook
    // let through went to the approver, which denies it.
    assert!(!ws.join("notes.txt").exists());
    assert_eq!(rig.hook_runs().len(), 3, "{:?}", rig.hook_runs());
}

/// Hook scripts published by Anthropic in the anthropics/claude-code repository, run unmodified
/// from a checkout of it: `TACKLE_CLAUDE_CODE_REPO=/path/to/claude-code cargo nextest run -p
/// tackle-agent --run-ignored all -E 'test(/^hooks::.*anthropic/)'`. They are not vendored (that
/// repository's licence reserves all rights), so CI does not run this test; the report of the
/// issue says when it last passed.
#[tokio::test]
#[ignore = "needs a checkout of anthropics/claude-code in TACKLE_CLAUDE_CODE_REPO"]
async fn anthropic_published_hook_scripts_run_unmodified() {
    let repo = std::path::PathBuf::from(
        std::env::var_os("TACKLE_CLAUDE_CODE_REPO")
            .expect("set TACKLE_CLAUDE_CODE_REPO to a checkout of anthropics/claude-code"),
    );
    let validator = repo.join("examples/hooks/bash_command_validator_example.py");
    let hookify = repo.join("plugins/hookify");
    let session_start = repo.join("plugins/explanatory-output-style/hooks-handlers/session-start.sh");
    for p in
        [&validator, &hookify.join("hooks/pretooluse.py"), &hookify.join("hooks/stop.py"), &session_start]
    {
        assert!(p.is_file(), "{} is missing from the checkout", p.display());
    }
    let script = Script::new(vec![
        Turn::call("shell", r#"{"command": "grep -n TODO notes.txt"}"#),
        Turn::call("shell", r#"{"command": "rm -rf build"}"#),
        Turn::call("shell", r#"{"command": "echo fine > fine.txt"}"#),
        Turn::text("I am done."),
        Turn::text("Checked again; done."),
    ]);
    let hookify_root = hookify.display().to_string();
    let rig = Rig::new(script, &[], |b| {
        b.max_steps(5)
            .hook(
                ScriptHook {
                    matcher: Some("Bash".into()),
                    ..ScriptHook::command(HookEvent::PreToolUse, format!("python3 {}", validator.display()))
                }
                .claude_code_names(),
            )
            .hook(
                ScriptHook::command(
                    HookEvent::PreToolUse,
                    format!("CLAUDE_PLUGIN_ROOT={hookify_root} python3 {hookify_root}/hooks/pretooluse.py"),
                )
                .claude_code_names(),
            )
            .hook(ScriptHook::command(
                HookEvent::Stop,
                format!("CLAUDE_PLUGIN_ROOT={hookify_root} python3 {hookify_root}/hooks/stop.py"),
            ))
            .hook(ScriptHook::command(HookEvent::SessionStart, format!("bash {}", session_start.display())))
    })
    .await;
    let ws = rig.workspace.path();
    std::fs::create_dir(ws.join("build")).unwrap();
    std::fs::write(ws.join("notes.txt"), "TODO\n").unwrap();
    // hookify's own example rule, copied where hookify looks for rules, and a Stop rule in its
    // format that blocks every stop.
    std::fs::create_dir(ws.join(".claude")).unwrap();
    std::fs::copy(
        hookify.join("examples/dangerous-rm.local.md"),
        ws.join(".claude/hookify.dangerous-rm.local.md"),
    )
    .unwrap();
    std::fs::write(
        ws.join(".claude/hookify.verify.local.md"),
        "---\nname: verify-before-stop\nenabled: true\nevent: stop\naction: block\nconditions:\n  - field: reason\n    operator: not_contains\n    pattern: never-present\n---\n\nVerify the build before stopping.\n",
    )
    .unwrap();
    let mut session = rig.session().await;
    // The Stop rule blocks every stop (hookify does not look at `stop_hook_active`): the turn
    // goes on until its step limit, whose last step runs no hook.
    let outcome = rig.turn(&mut session, "tidy up").await;
    assert_eq!(outcome.end, TurnEnd::MaxSteps);
    let results = tool_text(&rig.request_messages(3));
    // Exit code 2: blocked, stderr to the model.
    assert!(
        results[0].contains("denied") && results[0].contains("Use 'rg' (ripgrep) instead of 'grep'"),
        "{results:?}"
    );
    // JSON `permissionDecision: deny` from hookify's rule engine.
    assert!(results[1].contains("denied"), "{results:?}");
    assert!(ws.join("build").is_dir(), "rm -rf was denied");
    assert_eq!(std::fs::read_to_string(ws.join("fine.txt")).unwrap(), "fine\n", "{results:?}");
    // SessionStart's `additionalContext` reached the model.
    let first = rig.request_messages(0).iter().map(Value::to_string).collect::<String>();
    assert!(first.contains("explanatory' output style mode"), "{first}");
    // Stop's `decision: block` + `reason` made the model go on.
    let last = rig.request_messages(4).last().unwrap().to_string();
    assert!(last.contains("Verify the build before stopping"), "{last}");
    assert_eq!(outcome.text, "Checked again; done.");
}
