use std::time::Duration;

use tackle_store::{NewSession, Store, TodoStatus};
use tackle_tools::{ToolContext, TypedTool};

use super::{TodoArgs, TodoTool};
use crate::tools::TurnStore;

fn ctx(session: &str, store: &Store) -> ToolContext {
    let ctx = ToolContext::new(session, "call-1", std::env::temp_dir());
    ctx.turn.insert(TurnStore(store.clone()));
    ctx
}

// [fenced-turns]: every write of the todo tool goes through the turn's store, so a turn that
// lost its lease changes no item, whichever action it takes; the turn holding the lease does.
#[tokio::test]
async fn a_turn_that_lost_its_lease_changes_no_todo_item() {
    let store = Store::open_in_memory().await.unwrap();
    let session =
        store.sessions().create(NewSession { owner: "u".into(), ..NewSession::default() }).await.unwrap();
    let sid = session.id.to_string();
    // The tool is built with the unfenced store, as the agent builds it.
    let tool = TodoTool::new(store.clone());
    let lease = store.leases().acquire(&sid, Duration::from_secs(60)).await.unwrap().unwrap();
    let turn = store.fenced(&lease);

    // Positive control: while the lease holds, every action writes.
    let holding = ctx(&sid, &turn);
    tool.run(TodoArgs::Add { text: "first".into() }, holding.clone()).await.unwrap();
    tool.run(TodoArgs::Add { text: "second".into() }, holding.clone()).await.unwrap();
    tool.run(TodoArgs::Complete { id: 1 }, holding.clone()).await.unwrap();

    store.leases().release(&lease, 0).await.unwrap();
    let lost = ctx(&sid, &turn);
    let attempts = [
        TodoArgs::Add { text: "third".into() },
        TodoArgs::Update { id: 2, text: Some("changed".into()), status: None },
        TodoArgs::Complete { id: 2 },
        TodoArgs::Remove { id: 2, confirm: true },
    ];
    for args in attempts {
        let label = format!("{args:?}");
        assert!(tool.run(args, lost.clone()).await.is_err(), "{label} wrote after the lease was lost");
    }
    let items = store.todos().list(&sid, 0, 10).await.unwrap().items;
    assert_eq!(items.len(), 2, "{items:?}");
    assert_eq!(items[1].text, "second");
    assert_eq!(items[1].status, TodoStatus::Open, "{items:?}");
}
