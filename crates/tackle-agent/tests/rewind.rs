//! Rewind and fork through real turns: the model changes the workspace with the file tools and
//! with shell commands (writes, moves, deletions), the agent records a checkpoint before each
//! turn, and going back restores files and conversation; a fork leaves its source untouched.

use crate::common;

use std::collections::BTreeMap;
use std::path::Path;

use tackle_agent::{Agent, ForkOptions, NewSessionOptions, RewindOptions, Session, TurnInput};
use tackle_checkpoint::CheckpointConfig;
use tackle_protocol::{AgentEvent, Role};
use tackle_provider::ProviderKind;
use tackle_store::{MessageFilter, Store};
use tackle_testkit::{FakeModel, Script, Turn};
use tackle_tools::{AutoApprove, EventSink};
use tokio_util::sync::CancellationToken;

struct Rig {
    fake: FakeModel,
    agent: Agent,
    store: Store,
    workspace: tempfile::TempDir,
    _db: tempfile::TempDir,
}

impl Rig {
    async fn new(script: Script) -> Self {
        let workspace = tempfile::tempdir().unwrap();
        let db = tempfile::tempdir().unwrap();
        let store = Store::open(&db.path().join("tackle.db")).await.unwrap();
        let fake = FakeModel::start(script).await.unwrap();
        let agent = Agent::builder(common::provider(ProviderKind::Openai, &fake))
            .model("model-x")
            .store(store.clone())
            .workspace(workspace.path())
            .approver(AutoApprove)
            .checkpoints(CheckpointConfig::default())
            .build()
            .await
            .unwrap();
        Self { fake, agent, store, workspace, _db: db }
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
}

async fn turn(session: &mut Session, prompt: &str) -> Vec<AgentEvent> {
    let events = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = {
        let events = events.clone();
        EventSink::new(move |e| events.lock().unwrap().push(e))
    };
    session.run_turn(TurnInput::new(prompt), &sink, &CancellationToken::new()).await.unwrap();
    events.lock().unwrap().clone()
}

/// Every file under `root` with its bytes (directories as empty markers).
fn tree(root: &Path) -> BTreeMap<String, Option<Vec<u8>>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_owned()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            let rel = p.strip_prefix(root).unwrap().display().to_string();
            if p.is_dir() {
                out.insert(rel, None);
                stack.push(p);
            } else {
                out.insert(rel, Some(std::fs::read(&p).unwrap()));
            }
        }
    }
    out
}

fn script() -> Script {
    Script::new(vec![
        // Turn 1: the file tools and the shell write.
        Turn::call("write_file", r#"{"path": "src/lib.rs", "content": "fn one() {}\n"}"#),
        Turn::call(
            "shell",
            r#"{"command": "mkdir -p out && printf 'built\n' > out/report.txt && printf 'x' > notes.md"}"#,
        ),
        Turn::text("turn one done"),
        // Turn 2: the shell moves, deletes and edits.
        Turn::call(
            "shell",
            r#"{"command": "mv notes.md NOTES.md && rm -r out && printf 'fn two() {}\n' >> src/lib.rs"}"#,
        ),
        Turn::text("turn two done"),
        // Turn 3 (after the rewind): the model sees the conversation as it was before turn 2.
        Turn::text("again"),
    ])
}

#[tokio::test]
async fn rewind_restores_files_changed_by_the_shell_and_the_conversation() {
    let rig = Rig::new(script()).await;
    let ws = rig.workspace.path();
    std::fs::write(ws.join("README"), "keep me\n").unwrap();
    let mut session = rig.session().await;
    let before_one = tree(ws);
    let events = turn(&mut session, "build it").await;
    assert!(events.iter().any(|e| matches!(e, AgentEvent::CheckpointCreated { turn: 1, .. })), "{events:?}");
    let before_two = tree(ws);
    assert!(before_two.contains_key("out/report.txt"));
    turn(&mut session, "tidy up").await;
    assert!(ws.join("NOTES.md").exists() && !ws.join("out").exists());
    let id = session.id().to_string();

    // A preview touches nothing.
    let preview = rig.agent.rewind_preview(&id, 2, RewindOptions::default()).await.unwrap();
    let (created, modified, deleted, _, _) = preview.files.as_ref().unwrap().counts();
    assert_eq!((created, modified, deleted), (3, 1, 1), "{:?}", preview.files);
    assert_eq!(preview.prompt, "tidy up");
    assert!(ws.join("NOTES.md").exists());

    // Files and conversation back to before turn 2.
    let done = rig.agent.rewind(&id, 2, RewindOptions::default()).await.unwrap();
    assert!(done.leftovers.is_empty(), "{:?}", done.leftovers);
    assert_eq!(tree(ws), before_two, "the workspace before turn 2, byte for byte");
    let (now, after) = done.messages.unwrap();
    assert!(after < now);
    let mut session = rig.agent.open_session(&id).await.unwrap();
    assert_eq!(session.history().last().unwrap().text(), "turn one done");
    turn(&mut session, "try again").await;
    let sent = rig.fake.requests().last().unwrap().body["messages"].to_string();
    assert!(sent.contains("build it") && sent.contains("try again") && !sent.contains("tidy up"), "{sent}");
    // The rewound turn stays stored, hidden; turn numbers go on.
    let all = rig.store.messages().load(&id, MessageFilter { include_hidden: true }).await.unwrap();
    assert!(all.iter().any(|m| m.hidden && m.message.text().contains("tidy up")));
    assert_eq!(all.last().unwrap().turn, 3);

    // Files only, to before turn 1: the conversation stays.
    let messages = session.history().len();
    rig.agent.rewind(&id, 1, RewindOptions { files: true, conversation: false }).await.unwrap();
    assert_eq!(tree(ws), before_one);
    assert_eq!(rig.agent.open_session(&id).await.unwrap().history().len(), messages);

    // Conversation only, to before turn 1: nothing left; the files stay.
    rig.agent.rewind(&id, 1, RewindOptions { files: false, conversation: true }).await.unwrap();
    assert!(rig.agent.open_session(&id).await.unwrap().history().is_empty());
    assert_eq!(tree(ws), before_one);

    // And forward again: turn 3's checkpoint holds the workspace as turn 2 left it... rewound,
    // so it equals before_two.
    rig.agent.rewind(&id, 3, RewindOptions::default()).await.unwrap();
    assert_eq!(tree(ws), before_two, "a rewound-away turn can be gone back to");
    let history = rig.agent.open_session(&id).await.unwrap();
    assert_eq!(
        history.history().iter().filter(|m| m.role == Role::User).count(),
        1,
        "before turn 3: only turn 1"
    );

    // Mistakes are named.
    let err = rig.agent.rewind(&id, 9, RewindOptions::default()).await.unwrap_err().to_string();
    assert!(err.contains("no turn 9") && err.contains("1, 2, 3"), "{err}");
}

#[tokio::test]
async fn fork_copies_the_history_and_files_and_leaves_the_original_untouched() {
    let rig = Rig::new(script()).await;
    let ws = rig.workspace.path();
    let mut session = rig.session().await;
    turn(&mut session, "build it").await;
    let after_one = tree(ws);
    turn(&mut session, "tidy up").await;
    let id = session.id().to_string();
    let original_files = tree(ws);
    let original = rig.store.messages().load(&id, MessageFilter { include_hidden: true }).await.unwrap();
    let original_record = rig.store.sessions().get(&id).await.unwrap();
    let original_checkpoints = rig.store.checkpoints().list(&id).await.unwrap();

    let dest = tempfile::tempdir().unwrap();
    let copy = dest.path().join("copy");
    let fork = rig
        .agent
        .fork_session(&id, ForkOptions { turn: Some(1), files: Some(copy.clone()), title: None })
        .await
        .unwrap();
    assert_eq!(fork.turn, 1);
    // The fork's files are the workspace after turn 1 (before turn 2).
    assert_eq!(tree(&copy), after_one);
    // Its history is turn 1's, as the original's was.
    let mut forked = rig.agent.open_session(&fork.session_id).await.unwrap();
    let texts: Vec<String> = forked.history().iter().map(|m| m.text()).collect();
    assert!(texts.contains(&"build it".to_owned()) && !texts.contains(&"tidy up".to_owned()), "{texts:?}");
    assert_eq!(forked.workspace(), copy.canonicalize().unwrap());
    // The fork goes on with turn 2, in its own workspace.
    rig.fake.set_script(Script::new(vec![
        Turn::call("shell", r#"{"command": "printf 'fork' > fork-only.txt"}"#),
        Turn::text("forked"),
    ]));
    turn(&mut forked, "go another way").await;
    assert!(copy.join("fork-only.txt").exists());
    // The original is untouched: files, messages, record, checkpoints.
    assert_eq!(tree(ws), original_files);
    assert_eq!(
        rig.store.messages().load(&id, MessageFilter { include_hidden: true }).await.unwrap(),
        original
    );
    let record = rig.store.sessions().get(&id).await.unwrap();
    assert_eq!((record.title, record.workspace), (original_record.title, original_record.workspace));
    assert_eq!(rig.store.checkpoints().list(&id).await.unwrap(), original_checkpoints);
    // The fork can be rewound to its copied turn 1: into its own workspace.
    rig.agent.rewind(&fork.session_id, 1, RewindOptions::default()).await.unwrap();
    assert!(tree(&copy).is_empty(), "before turn 1 the workspace was empty: {:?}", tree(&copy));
    assert_eq!(tree(ws), original_files);

    // Without files, the fork shares the workspace; forking into a non-empty directory is refused.
    let shared = rig.agent.fork_session(&id, ForkOptions::default()).await.unwrap();
    assert_eq!(shared.turn, 2);
    assert_eq!(Path::new(&shared.workspace), ws.canonicalize().unwrap());
    std::fs::write(copy.join("mine.txt"), "x").unwrap();
    let err = rig
        .agent
        .fork_session(&id, ForkOptions { files: Some(copy.clone()), ..ForkOptions::default() })
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("not an empty directory"), "{err}");
}
