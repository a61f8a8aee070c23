//! Nothing is lost before offloading: the shell streams its whole output into the call's spool,
//! the offloader stores that (not the head and tail the model sees), and `read_result`
//! restores any part of it byte-exact.

use crate::common;

use common::Harness;
use tackle_agent::{ReadResultArgs, ReadUnit, TurnInput, read_page};
use tackle_protocol::{AgentEvent, ToolOutcome};
use tackle_provider::ProviderKind;
use tackle_testkit::{Script, Turn};
use tokio_util::sync::CancellationToken;

/// The tool_result event of the turn.
fn tool_result(events: &[AgentEvent]) -> (String, u64, bool) {
    events
        .iter()
        .find_map(|e| match e {
            AgentEvent::ToolResult { outcome: ToolOutcome::Ok { .. }, locator, bytes, truncated, .. } => {
                Some((locator.clone().expect("the output was offloaded"), *bytes, *truncated))
            }
            _ => None,
        })
        .expect("a successful tool_result")
}

/// The page of `read_result` without its header line.
async fn page(h: &Harness, session: &str, locator: &str, offset: u64, limit: u64, unit: ReadUnit) -> String {
    let args = ReadResultArgs {
        locator: locator.to_owned(),
        offset: Some(offset),
        limit: Some(limit),
        unit: Some(unit),
        pattern: None,
    };
    let text = read_page(&h.store, session, &args).await.unwrap();
    match unit {
        ReadUnit::Lines => text.split_once('\n').map(|(_, rest)| rest.to_owned()).unwrap_or_default(),
        ReadUnit::Bytes => text,
    }
}

#[tokio::test]
async fn a_1_3_mb_shell_output_is_restored_byte_exact_at_any_line() {
    let script = Script::new(vec![Turn::call("shell", r#"{"command":"seq 1 200000"}"#), Turn::text("done")]);
    let h = Harness::new(ProviderKind::Openai, script).await;
    let mut session = h.session().await;
    session.run_turn(TurnInput::new("count"), &h.sink(), &CancellationToken::new()).await.unwrap();
    let (locator, bytes, truncated) = tool_result(&h.events());
    let seq: String = (1..=200_000).map(|i| format!("{i}\n")).collect();
    assert_eq!(seq.len(), 1_288_895);
    // The stored output is the shell's rendering with all of stdout: two header lines first.
    let stored = format!("exit code: 0\nstdout:\n{seq}");
    assert_eq!(bytes, stored.len() as u64, "the report counts the whole output");
    assert!(truncated, "the model sees a reference, not the output");

    let id = session.id().to_owned();
    // Lines 150000-150001 of seq are lines 150002-150003 of the stored output.
    assert_eq!(page(&h, &id, &locator, 150_002, 2, ReadUnit::Lines).await, "150000\n150001\n");
    for (line, n) in [(3, 1), (82_995, 3), (100_000, 5), (199_999, 4)] {
        let expected: String = stored.split_inclusive('\n').skip(line - 1).take(n).collect();
        assert_eq!(
            page(&h, &id, &locator, line as u64, n as u64, ReadUnit::Lines).await,
            expected,
            "lines {line}+{n}"
        );
    }
    // And byte for byte, in pages.
    let mut restored = String::new();
    while restored.len() < stored.len() {
        let args = ReadResultArgs {
            locator: locator.clone(),
            offset: Some(restored.len() as u64),
            limit: Some(64 * 1024),
            unit: Some(ReadUnit::Bytes),
            pattern: None,
        };
        let text = read_page(&h.store, &id, &args).await.unwrap();
        let body = text.split_once("]\n").map(|(_, b)| b).unwrap_or(&text);
        assert!(!body.is_empty(), "no progress at byte {}", restored.len());
        restored.push_str(body);
    }
    assert_eq!(restored, stored);
}

/// Not offloaded, an output whose view the shell already cut, and which is still over the cap,
/// is capped from the whole output: the model sees the cap's head and tail of it, and a marker
/// that counts all of it (not the view's size).
#[tokio::test]
async fn a_cut_view_is_capped_as_the_whole_output_would_be() {
    let script = Script::new(vec![Turn::call("shell", r#"{"command":"seq 1 20000"}"#), Turn::text("done")]);
    let fake = tackle_testkit::FakeModel::start(script).await.unwrap();
    let db = tempfile::tempdir().unwrap();
    let store = tackle_store::Store::open(&db.path().join("tackle.db")).await.unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let cap = tackle_tools::OutputCap { max_bytes: 8000, max_lines: 100_000 };
    let limits = tackle_tools::ExecLimits {
        max_output_bytes: cap.max_bytes,
        max_output_lines: cap.max_lines,
        ..Default::default()
    };
    // The shell keeps 5000 bytes of each end for its view: more than the cap shows in all.
    let agent = tackle_agent::Agent::builder(common::provider(ProviderKind::Openai, &fake))
        .config(tackle_agent::AgentConfig::new("model-x"))
        .store(store)
        .workspace(workspace.path())
        .builtins(tackle_builtins::BuiltinConfig { shell_capture_bytes: 5000, ..Default::default() })
        .limits(limits)
        .offload(false)
        .approver(tackle_tools::AutoApprove)
        .build()
        .await
        .unwrap();
    let options =
        tackle_agent::NewSessionOptions { workspace: workspace.path().to_owned(), ..Default::default() };
    let mut session = agent.create_session(options).await.unwrap();
    session
        .run_turn(TurnInput::new("count"), &tackle_tools::EventSink::new(|_| {}), &CancellationToken::new())
        .await
        .unwrap();
    let seq: String = (1..=20_000).map(|i| format!("{i}\n")).collect();
    let expected = tackle_tools::cap_output(&format!("exit code: 0\nstdout:\n{seq}"), cap).text;
    let requests = fake.requests();
    let result = requests[1].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .and_then(|m| m["content"].as_str())
        .expect("the tool result")
        .to_owned();
    assert!(result.contains("output was 108915 bytes, 20002 lines"), "{}", &result[..200.min(result.len())]);
    assert!(result == expected, "the model sees the cap of the whole output");
}
