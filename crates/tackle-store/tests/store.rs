//! The store against real SQLite files.

use std::time::Duration;

use proptest::prelude::*;
use serde_json::json;
use tackle_protocol::{ErrorCategory, Message, ToolError, ToolResult};
use tackle_store::*;

async fn file_store() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("nested/dir/tackle.db")).await.unwrap();
    (dir, store)
}

fn new_session(owner: &str) -> NewSession {
    NewSession {
        owner: owner.into(),
        title: "t".into(),
        provider: "openai".into(),
        model: "m".into(),
        workspace: "/tmp".into(),
        metadata: json!({"k": 1}),
    }
}

async fn count(store: &Store, table: &str, sid: &str) -> i64 {
    // Test-only introspection through the public API of each table.
    match table {
        "messages" => store.message_count(sid).await.unwrap(),
        "tool_calls" => store.list_tool_calls(sid).await.unwrap().len() as i64,
        "todos" => store.list_todos(sid, 0, 100).await.unwrap().total_count as i64,
        _ => unreachable!(),
    }
}

#[tokio::test]
async fn wal_mode_is_on_for_files() {
    let (_d, store) = file_store().await;
    assert_eq!(store.journal_mode().await.unwrap(), "wal");
}

#[tokio::test]
async fn sessions_create_list_get_update_delete_cascade() {
    let (_d, store) = file_store().await;
    let a = store.create_session(new_session("alice")).await.unwrap();
    let b = store.create_session(new_session("bob")).await.unwrap();
    assert_eq!(a.status, SessionStatus::Idle);
    // Activity is ordered by millisecond timestamps: make a's message clearly later than b.
    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    assert!(uuid::Uuid::parse_str(&a.id).unwrap().get_version_num() == 7);

    store.append_message(&a.id, 1, &Message::user("hi")).await.unwrap();
    store.begin_tool_call(&a.id, "c1", "shell", &json!({})).await.unwrap();
    let blob = store
        .put_blob(&a.id, NewBlob { tool: "t", call_id: "c1", bytes: b"data", ttl: Duration::from_secs(60) })
        .await
        .unwrap();
    store.add_todo(&a.id, "x").await.unwrap();
    store.set_state(&a.id, "skills", &vec!["git"]).await.unwrap();
    store.save_snapshot(&a.id, 0, &[Message::user("hi")], &json!({})).await.unwrap();
    let step = StepRecord {
        turn: 1,
        step: 1,
        stop_reason: "end_turn".into(),
        cache_read_tokens: 7,
        prefix_ratio: Some(0.99),
        ..Default::default()
    };
    store.record_step(&a.id, &step).await.unwrap();
    assert_eq!(store.list_steps(&a.id).await.unwrap(), vec![step]);

    let all = store.list_sessions(SessionFilter::default()).await.unwrap();
    assert_eq!(all.len(), 2);
    assert_eq!(all[0].id, a.id, "most recently active first");
    assert_eq!(all[0].message_count, 1);
    let bobs =
        store.list_sessions(SessionFilter { owner: Some("bob".into()), ..Default::default() }).await.unwrap();
    assert_eq!(bobs.iter().map(|s| s.id.as_str()).collect::<Vec<_>>(), [b.id.as_str()]);

    let updated = store
        .update_session(
            &a.id,
            SessionUpdate {
                status: Some(SessionStatus::Running),
                title: Some("new".into()),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(
        (updated.status, updated.title.as_str(), updated.metadata.clone()),
        (SessionStatus::Running, "new", json!({"k": 1}))
    );

    store.delete_session(&a.id).await.unwrap();
    assert!(matches!(store.get_session(&a.id).await, Err(StoreError::NotFound { .. })));
    for table in ["messages", "tool_calls", "todos"] {
        assert_eq!(count(&store, table, &a.id).await, 0, "{table} cascades");
    }
    assert!(matches!(store.get_blob(&a.id, &blob.locator).await, Err(StoreError::NotFound { .. })));
    assert_eq!(store.get_state::<Vec<String>>(&a.id, "skills").await.unwrap(), None);
    assert_eq!(store.latest_snapshot(&a.id).await.unwrap(), None);
    assert!(store.list_steps(&a.id).await.unwrap().is_empty(), "steps cascade");
    assert!(matches!(store.delete_session(&a.id).await, Err(StoreError::NotFound { .. })));
}

#[tokio::test]
async fn other_owners_get_not_found() {
    let store = Store::open_in_memory().await.unwrap();
    let a = store.create_session(new_session("alice")).await.unwrap();
    assert!(store.get_session_for_owner(&a.id, "alice").await.is_ok());
    let err = store.get_session_for_owner(&a.id, "bob").await.unwrap_err();
    assert!(err.to_string().contains("not found"), "{err}");
}

#[tokio::test]
async fn prefixes_resolve_like_git() {
    let store = Store::open_in_memory().await.unwrap();
    let a = store.create_session(new_session("u")).await.unwrap();
    let b = store.create_session(new_session("u")).await.unwrap();
    assert_eq!(store.find_session_by_prefix(&a.id[..30]).await.unwrap().id, a.id);
    assert_eq!(store.find_session_by_prefix(&b.id).await.unwrap().id, b.id);
    // Both UUIDv7s share their leading timestamp digits.
    match store.find_session_by_prefix(&a.id[..4]).await {
        Err(StoreError::Ambiguous { candidates, .. }) => assert_eq!(candidates.len(), 2),
        other => panic!("{other:?}"),
    }
    assert!(matches!(store.find_session_by_prefix("zz").await, Err(StoreError::NotFound { .. })));
    assert!(
        matches!(store.find_session_by_prefix("%").await, Err(StoreError::NotFound { .. })),
        "LIKE wildcards are escaped"
    );
}

#[tokio::test]
async fn concurrent_appends_keep_seq_dense_and_unique() {
    let (_d, store) = file_store().await;
    let s = store.create_session(new_session("u")).await.unwrap();
    let mut tasks = Vec::new();
    for t in 0..8 {
        let store = store.clone();
        let sid = s.id.clone();
        tasks.push(tokio::spawn(async move {
            for i in 0..10 {
                store.append_message(&sid, 1, &Message::user(format!("{t}-{i}"))).await.unwrap();
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let seqs: Vec<i64> =
        store.load_messages(&s.id, MessageFilter::default()).await.unwrap().iter().map(|m| m.seq).collect();
    assert_eq!(seqs, (0..80).collect::<Vec<_>>());
}

#[tokio::test]
async fn hidden_messages_stay_stored() {
    let store = Store::open_in_memory().await.unwrap();
    let s = store.create_session(new_session("u")).await.unwrap();
    for i in 0..4 {
        store.append_message(&s.id, 1, &Message::user(format!("m{i}"))).await.unwrap();
    }
    assert_eq!(store.hide_messages(&s.id, &[0, 1]).await.unwrap(), 2);
    let visible = store.load_messages(&s.id, MessageFilter::default()).await.unwrap();
    assert_eq!(visible.iter().map(|m| m.message.text()).collect::<Vec<_>>(), ["m2", "m3"]);
    let all = store.load_messages(&s.id, MessageFilter { include_hidden: true }).await.unwrap();
    assert_eq!(all.len(), 4);
    assert!(all[0].hidden);
    store.set_token_counts(&s.id, &[(2, 17)]).await.unwrap();
    assert_eq!(store.load_messages(&s.id, MessageFilter::default()).await.unwrap()[0].token_count, Some(17));
    assert_eq!(store.last_turn(&s.id).await.unwrap(), Some(1));
}

#[tokio::test]
async fn a_tool_call_id_runs_at_most_once_even_across_restarts() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.db");
    let (sid, result) = {
        let store = Store::open(&path).await.unwrap();
        let s = store.create_session(new_session("u")).await.unwrap();
        assert_eq!(
            store.begin_tool_call(&s.id, "call_1", "shell", &json!({"c": "ls"})).await.unwrap(),
            BeginOutcome::Started
        );
        assert!(matches!(
            store.begin_tool_call(&s.id, "call_1", "shell", &json!({})).await.unwrap(),
            BeginOutcome::AlreadyRunning(_)
        ));
        let result = ToolResult::ok("call_1", "a.txt");
        store
            .finish_tool_call(
                &s.id,
                "call_1",
                ToolCallFinish {
                    status: ToolCallStatus::Ok,
                    result: result.clone(),
                    envelope: None,
                    bytes: 5,
                    truncated: false,
                    locator: None,
                    duration_ms: 3,
                },
            )
            .await
            .unwrap();
        store.close().await;
        (s.id, result)
    };
    let store = Store::open(&path).await.unwrap();
    match store.begin_tool_call(&sid, "call_1", "shell", &json!({"c": "ls"})).await.unwrap() {
        BeginOutcome::AlreadyFinished(rec) => {
            assert_eq!(rec.result, Some(result));
            assert_eq!(rec.args, json!({"c": "ls"}));
            assert_eq!(rec.duration_ms, Some(3));
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn running_calls_are_marked_interrupted_after_a_crash() {
    let store = Store::open_in_memory().await.unwrap();
    let s = store.create_session(new_session("u")).await.unwrap();
    store.begin_tool_call(&s.id, "a", "shell", &json!({})).await.unwrap();
    store.begin_tool_call(&s.id, "b", "shell", &json!({})).await.unwrap();
    let envelope = ToolError::new("shell", ErrorCategory::Timeout, "slow");
    store
        .finish_tool_call(
            &s.id,
            "b",
            ToolCallFinish {
                status: ToolCallStatus::Error,
                result: ToolResult::error("b", envelope.to_json()),
                envelope: Some(envelope.clone()),
                bytes: 1,
                truncated: false,
                locator: None,
                duration_ms: 1,
            },
        )
        .await
        .unwrap();
    assert_eq!(store.mark_running_as_interrupted(&s.id).await.unwrap(), ["a"]);
    let calls = store.list_tool_calls(&s.id).await.unwrap();
    assert_eq!(
        calls.iter().map(|c| c.status).collect::<Vec<_>>(),
        [ToolCallStatus::Interrupted, ToolCallStatus::Error]
    );
    assert_eq!(calls[1].envelope, Some(envelope));
}

#[tokio::test]
async fn blobs_are_session_scoped_expire_and_detect_corruption() {
    let (dir, store) = file_store().await;
    let a = store.create_session(new_session("u")).await.unwrap();
    let b = store.create_session(new_session("u")).await.unwrap();
    let text = "line\n".repeat(10_000);
    let meta = store
        .put_blob(
            &a.id,
            NewBlob { tool: "shell", call_id: "c", bytes: text.as_bytes(), ttl: Duration::from_secs(3600) },
        )
        .await
        .unwrap();
    assert!(meta.locator.starts_with("out_") && meta.locator.len() == 36);
    assert_eq!((meta.raw_bytes, meta.lines), (50_000, 10_000));
    assert_eq!(store.get_blob(&a.id, &meta.locator).await.unwrap().data, text.as_bytes());
    assert!(matches!(store.get_blob(&b.id, &meta.locator).await, Err(StoreError::NotFound { .. })));

    let short = store
        .put_blob(&a.id, NewBlob { tool: "t", call_id: "c2", bytes: b"x", ttl: Duration::ZERO })
        .await
        .unwrap();
    assert!(matches!(store.get_blob(&a.id, &short.locator).await, Err(StoreError::Expired { .. })));
    assert_eq!(store.purge_expired(i64::MAX / 2).await.unwrap(), 2);
    let err = store.get_blob(&a.id, &meta.locator).await.unwrap_err();
    assert!(matches!(err, StoreError::Expired { .. }), "purged data still reads as expired: {err}");
    assert!(err.to_string().contains("run the tool again"));

    // Corrupt a stored blob behind the store's back.
    let fresh = store
        .put_blob(
            &a.id,
            NewBlob { tool: "t", call_id: "c3", bytes: b"hello world", ttl: Duration::from_secs(60) },
        )
        .await
        .unwrap();
    store.close().await;
    let pool = sqlx::sqlite::SqlitePool::connect(&format!(
        "sqlite://{}",
        dir.path().join("nested/dir/tackle.db").display()
    ))
    .await
    .unwrap();
    // A valid frame of other bytes, without a checksum (as blobs were first written): caught by
    // the digest.
    let other = zstd::bulk::compress(b"hello w0rld", 3).unwrap();
    sqlx::query("UPDATE blobs SET data = ? WHERE locator = ?")
        .bind(other)
        .bind(&fresh.locator)
        .execute(&pool)
        .await
        .unwrap();
    // A flipped byte inside a checksummed frame of a large output: caught by the frame checksum.
    let big: Vec<u8> = (0..600_000u32).flat_map(|i| format!("line {i}\n").into_bytes()).collect();
    let large = {
        let store = Store::open(&dir.path().join("nested/dir/tackle.db")).await.unwrap();
        let meta = store
            .put_blob(&a.id, NewBlob { tool: "t", call_id: "c4", bytes: &big, ttl: Duration::from_secs(60) })
            .await
            .unwrap();
        assert_eq!(store.get_blob(&a.id, &meta.locator).await.unwrap().data, big);
        store.close().await;
        meta
    };
    let (mut data,): (Vec<u8>,) = sqlx::query_as("SELECT data FROM blobs WHERE locator = ?")
        .bind(&large.locator)
        .fetch_one(&pool)
        .await
        .unwrap();
    let middle = data.len() / 2;
    data[middle] ^= 0x20;
    sqlx::query("UPDATE blobs SET data = ? WHERE locator = ?")
        .bind(data)
        .bind(&large.locator)
        .execute(&pool)
        .await
        .unwrap();
    pool.close().await;
    let store = Store::open(&dir.path().join("nested/dir/tackle.db")).await.unwrap();
    assert!(matches!(store.get_blob(&a.id, &fresh.locator).await, Err(StoreError::Corrupt { .. })));
    let err = store.get_blob(&a.id, &large.locator).await.unwrap_err();
    assert!(matches!(err, StoreError::Corrupt { .. }), "{err}");
}

#[tokio::test]
async fn todos_paginate() {
    let store = Store::open_in_memory().await.unwrap();
    let s = store.create_session(new_session("u")).await.unwrap();
    for i in 1..=5 {
        assert_eq!(store.add_todo(&s.id, &format!("item {i}")).await.unwrap().id, i);
    }
    store.update_todo(&s.id, 2, TodoUpdate { status: Some(TodoStatus::Done), text: None }).await.unwrap();
    store.remove_todo(&s.id, 3).await.unwrap();
    let page = store.list_todos(&s.id, 1, 2).await.unwrap();
    assert_eq!(page.total_count, 4);
    assert_eq!(page.items.iter().map(|i| i.id).collect::<Vec<_>>(), [2, 4]);
    assert_eq!(store.open_todos(&s.id).await.unwrap().iter().map(|i| i.id).collect::<Vec<_>>(), [1, 4, 5]);
    assert!(matches!(
        store.update_todo(&s.id, 99, TodoUpdate::default()).await,
        Err(StoreError::NotFound { .. })
    ));
    assert_eq!(store.add_todo(&s.id, "after removal").await.unwrap().id, 6, "ids are never reused");
}

#[tokio::test]
async fn snapshots_and_load_context() {
    let store = Store::open_in_memory().await.unwrap();
    let s = store.create_session(new_session("u")).await.unwrap();
    for i in 0..5 {
        store.append_message(&s.id, 1, &Message::user(format!("m{i}"))).await.unwrap();
    }
    let ctx = store.load_context(&s.id).await.unwrap();
    assert_eq!(ctx.messages().len(), 5);
    store.hide_messages(&s.id, &[0, 1, 2]).await.unwrap();
    store
        .save_snapshot(&s.id, 2, &[Message::user("summary of m0..m2")], &json!({"ratio": 0.5}))
        .await
        .unwrap();
    store.append_message(&s.id, 2, &Message::user("m5")).await.unwrap();
    let ctx = store.load_context(&s.id).await.unwrap();
    let texts: Vec<String> = ctx.messages().iter().map(Message::text).collect();
    assert_eq!(texts, ["summary of m0..m2", "m3", "m4", "m5"]);
}

#[tokio::test]
async fn state_round_trips() {
    let store = Store::open_in_memory().await.unwrap();
    let s = store.create_session(new_session("u")).await.unwrap();
    store.set_state(&s.id, "k", &json!({"a": [1, 2]})).await.unwrap();
    store.set_state(&s.id, "k", &json!({"a": [3]})).await.unwrap();
    assert_eq!(store.get_state::<serde_json::Value>(&s.id, "k").await.unwrap(), Some(json!({"a": [3]})));
    store.delete_state(&s.id, "k").await.unwrap();
    assert_eq!(store.get_state::<serde_json::Value>(&s.id, "k").await.unwrap(), None);
    assert!(matches!(store.set_state("nope", "k", &1).await, Err(StoreError::NotFound { .. })));

    // Several at once, read back at once, replacing what was there.
    store.set_state(&s.id, "a", &1).await.unwrap();
    store.set_states(&s.id, &[("a", json!(2)), ("b", json!("x"))]).await.unwrap();
    store.set_states(&s.id, &[]).await.unwrap();
    let all = store.session_state(&s.id).await.unwrap();
    assert_eq!(all.get::<i64>("a").unwrap(), Some(2));
    assert_eq!(all.get::<String>("b").unwrap().as_deref(), Some("x"));
    assert_eq!(all.get::<i64>("missing").unwrap(), None);
    assert!(all.get::<i64>("b").is_err(), "a value of another type is an error, not a panic");
    assert!(matches!(store.set_states("nope", &[("k", json!(1))]).await, Err(StoreError::NotFound { .. })));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]
    #[test]
    fn blobs_round_trip_byte_exact(data in proptest::collection::vec(any::<u8>(), 0..20_000)) {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            let store = Store::open_in_memory().await.unwrap();
            let s = store.create_session(new_session("u")).await.unwrap();
            let meta = store.put_blob(&s.id, NewBlob { tool: "t", call_id: "c", bytes: &data, ttl: Duration::from_secs(60) }).await.unwrap();
            prop_assert_eq!(store.get_blob(&s.id, &meta.locator).await.unwrap().data, data);
            Ok(())
        })?;
    }
}
