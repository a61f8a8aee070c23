//! The store suite, on both backends: a SQLite file and a PostgreSQL database (`both!`).

use std::time::Duration;

use proptest::prelude::*;
use serde_json::json;
use tackle_protocol::{ErrorCategory, Message, ToolError, ToolResult};
use tackle_store::*;

use crate::common;

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
        "messages" => store.messages().count(sid).await.unwrap(),
        "tool_calls" => store.calls().list(sid).await.unwrap().len() as i64,
        "todos" => store.todos().list(sid, 0, 100).await.unwrap().total_count as i64,
        _ => unreachable!(),
    }
}

#[tokio::test]
async fn wal_mode_is_on_for_files() {
    let db = common::TestDb::sqlite();
    let store = db.open().await;
    assert_eq!(store.journal_mode().await.unwrap().as_deref(), Some("wal"));
    assert_eq!(store.backend(), Backend::Sqlite);
}

#[tokio::test]
async fn a_postgres_url_opens_postgres() {
    let Some(db) = common::TestDb::postgres().await else { return };
    let store = db.open().await;
    assert_eq!(store.backend(), Backend::Postgres);
    assert_eq!(store.journal_mode().await.unwrap(), None);
}

both! {
    async fn sub_agent_sessions_link_to_their_parent_and_call(db) {
        let store = db.open().await;
        let parent = store.sessions().create(new_session("u")).await.unwrap();
        assert_eq!(store.sessions().parent(&parent.id).await.unwrap(), None);
        let link = |call: &str| ParentLink { session_id: parent.id.to_string(), call_id: call.to_owned() };
        let a = store.sessions().create_child(new_session("u"), &link("call_a"), &[]).await.unwrap();
        let b = store.sessions().create_child(new_session("u"), &link("call_b"), &[]).await.unwrap();
        let children = store.sessions().children(&parent.id).await.unwrap();
        let linked: Vec<(&str, &str)> =
            children.iter().map(|c| (c.id.as_str(), c.parent_call_id.as_str())).collect();
        assert_eq!(linked, [(a.id.as_str(), "call_a"), (b.id.as_str(), "call_b")]);
        assert_eq!(children[0].status, SessionStatus::Idle);
        let link = store.sessions().parent(&b.id).await.unwrap().unwrap();
        assert_eq!((link.session_id.as_str(), link.call_id.as_str()), (parent.id.as_str(), "call_b"));
        assert!(store.sessions().children(&a.id).await.unwrap().is_empty());
        assert!(matches!(store.sessions().parent("nope").await, Err(StoreError::NotFound { .. })));
        // Deleting the parent keeps its children, unlinked.
        store.sessions().delete(&parent.id).await.unwrap();
        assert_eq!(store.sessions().parent(&a.id).await.unwrap(), None);
    }
}

both! {
    async fn a_child_is_created_linked_and_its_depth_counts_its_ancestors(db) {
        let store = db.open().await;
        let sessions = store.sessions();
        let root = sessions.create(new_session("u")).await.unwrap();
        assert_eq!(sessions.depth(&root.id).await.unwrap(), 0);
        let link = |parent: &SessionRecord, call: &str| ParentLink {
            session_id: parent.id.to_string(),
            call_id: call.to_owned(),
        };
        // The row, its link and its state in one commit.
        let child = sessions
            .create_child(new_session("u"), &link(&root, "call_1"), &[("mode", json!("plan"))])
            .await
            .unwrap();
        assert_eq!(sessions.parent(&child.id).await.unwrap(), Some(link(&root, "call_1")));
        assert_eq!(sessions.get_state::<String>(&child.id, "mode").await.unwrap().as_deref(), Some("plan"));
        assert_eq!(sessions.children(&root.id).await.unwrap()[0].parent_call_id, "call_1");
        let grandchild = sessions.create_child(new_session("u"), &link(&child, "call_2"), &[]).await.unwrap();
        let great = sessions.create_child(new_session("u"), &link(&grandchild, "call_3"), &[]).await.unwrap();
        assert_eq!(sessions.depth(&child.id).await.unwrap(), 1);
        assert_eq!(sessions.depth(&grandchild.id).await.unwrap(), 2);
        assert_eq!(sessions.depth(&great.id).await.unwrap(), 3);
        // A parent that does not exist is refused, and nothing is created.
        let before = sessions.list(SessionFilter::default()).await.unwrap().len();
        let orphan = ParentLink { session_id: "nope".into(), call_id: "c".into() };
        assert!(sessions.create_child(new_session("u"), &orphan, &[]).await.is_err());
        assert_eq!(sessions.list(SessionFilter::default()).await.unwrap().len(), before);
        // Deleting a session unlinks its children: the subtree moves up.
        sessions.delete(&child.id).await.unwrap();
        assert_eq!(sessions.depth(&grandchild.id).await.unwrap(), 0);
        assert_eq!(sessions.depth(&great.id).await.unwrap(), 1);
    }
}

both! {
    async fn sessions_create_list_get_update_delete_cascade(db) {
        let store = db.open().await;
        let a = store.sessions().create(new_session("alice")).await.unwrap();
        let b = store.sessions().create(new_session("bob")).await.unwrap();
        assert_eq!(a.status, SessionStatus::Idle);
        // Activity is ordered by millisecond timestamps: make a's message clearly later than b.
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        assert!(uuid::Uuid::parse_str(&a.id).unwrap().get_version_num() == 7);

        store.messages().append(&a.id, 1, &Message::user("hi")).await.unwrap();
        store.calls().begin(&a.id, "c1", "shell", &json!({})).await.unwrap();
        let blob = store
            .blobs().put(&a.id, NewBlob { tool: "t", call_id: "c1", bytes: b"data", ttl: Duration::from_secs(60) })
            .await
            .unwrap();
        store.todos().add(&a.id, "x").await.unwrap();
        store.sessions().set_state(&a.id, "skills", &vec!["git"]).await.unwrap();
        store.messages().save_snapshot(&a.id, 0, &[Message::user("hi")], &json!({})).await.unwrap();
        let step = StepRecord {
            turn: 1,
            step: 1,
            stop_reason: "end_turn".into(),
            cache_read_tokens: 7,
            prefix_ratio: Some(0.99),
            ..Default::default()
        };
        store.steps().record(&a.id, &step).await.unwrap();
        assert_eq!(store.steps().list(&a.id).await.unwrap(), vec![step]);

        let all = store.sessions().list(SessionFilter::default()).await.unwrap();
        assert_eq!(all.len(), 2);
        assert_eq!(all[0].id, a.id, "most recently active first");
        assert_eq!(all[0].message_count, 1);
        let bobs =
            store.sessions().list(SessionFilter { owner: Some("bob".into()), ..Default::default() }).await.unwrap();
        assert_eq!(bobs.iter().map(|s| s.id.as_str()).collect::<Vec<_>>(), [b.id.as_str()]);

        let updated = store
            .sessions().update(
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

        store.sessions().delete(&a.id).await.unwrap();
        assert!(matches!(store.sessions().get(&a.id).await, Err(StoreError::NotFound { .. })));
        for table in ["messages", "tool_calls", "todos"] {
            assert_eq!(count(&store, table, &a.id).await, 0, "{table} cascades");
        }
        assert!(matches!(store.blobs().get(&a.id, &blob.locator).await, Err(StoreError::NotFound { .. })));
        assert_eq!(store.sessions().get_state::<Vec<String>>(&a.id, "skills").await.unwrap(), None);
        assert_eq!(store.messages().latest_snapshot(&a.id).await.unwrap(), None);
        assert!(store.steps().list(&a.id).await.unwrap().is_empty(), "steps cascade");
        assert!(matches!(store.sessions().delete(&a.id).await, Err(StoreError::NotFound { .. })));
    }

    async fn other_owners_get_not_found(db) {
        let store = db.open().await;
        let a = store.sessions().create(new_session("alice")).await.unwrap();
        assert!(store.sessions().get_for_owner(&a.id, "alice").await.is_ok());
        let err = store.sessions().get_for_owner(&a.id, "bob").await.unwrap_err();
        assert!(err.to_string().contains("not found"), "{err}");
    }

    async fn imported_sessions_are_found_by_their_source(db) {
        let store = db.open().await;
        let imported = |source: &str| NewSession {
            metadata: json!({ "imported_from": source, "note": "x" }),
            ..new_session("local")
        };
        let a = store.sessions().create(imported("0198-abc")).await.unwrap();
        let b = store.sessions().create(imported("0198-abc")).await.unwrap();
        store.sessions().create(imported("0198-abcd")).await.unwrap();
        store.sessions().create(imported("0198_ab%")).await.unwrap();
        store.sessions().create(new_session("local")).await.unwrap();
        assert_eq!(store.sessions().imported_from("0198-abc").await.unwrap(), [a.id.to_string(), b.id.to_string()]);
        assert!(store.sessions().imported_from("0198-ab").await.unwrap().is_empty(), "whole ids only");
        assert!(store.sessions().imported_from("0198_ab_").await.unwrap().is_empty(), "wildcards are escaped");
        assert_eq!(store.sessions().imported_from("0198_ab%").await.unwrap().len(), 1);
    }

    async fn prefixes_resolve_like_git(db) {
        let store = db.open().await;
        let a = store.sessions().create(new_session("u")).await.unwrap();
        let b = store.sessions().create(new_session("u")).await.unwrap();
        assert_eq!(store.sessions().find_by_prefix(&a.id[..30]).await.unwrap().id, a.id);
        assert_eq!(store.sessions().find_by_prefix(&b.id).await.unwrap().id, b.id);
        // Both UUIDv7s share their leading timestamp digits.
        match store.sessions().find_by_prefix(&a.id[..4]).await {
            Err(StoreError::Ambiguous { candidates, .. }) => assert_eq!(candidates.len(), 2),
            other => panic!("{other:?}"),
        }
        assert!(matches!(store.sessions().find_by_prefix("zz").await, Err(StoreError::NotFound { .. })));
        assert!(
            matches!(store.sessions().find_by_prefix("%").await, Err(StoreError::NotFound { .. })),
            "LIKE wildcards are escaped"
        );
    }

    async fn concurrent_appends_keep_seq_dense_and_unique(db) {
        let store = db.open().await;
        let s = store.sessions().create(new_session("u")).await.unwrap();
        let mut tasks = Vec::new();
        for t in 0..8 {
            let store = store.clone();
            let sid = s.id.clone();
            tasks.push(tokio::spawn(async move {
                for i in 0..10 {
                    store.messages().append(&sid, 1, &Message::user(format!("{t}-{i}"))).await.unwrap();
                }
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
        let seqs: Vec<i64> =
            store.messages().load(&s.id, MessageFilter::default()).await.unwrap().iter().map(|m| m.seq).collect();
        assert_eq!(seqs, (0..80).collect::<Vec<_>>());
    }

    async fn hidden_messages_stay_stored(db) {
        let store = db.open().await;
        let s = store.sessions().create(new_session("u")).await.unwrap();
        for i in 0..4 {
            store.messages().append(&s.id, 1, &Message::user(format!("m{i}"))).await.unwrap();
        }
        assert_eq!(store.messages().hide(&s.id, &[0, 1]).await.unwrap(), 2);
        let visible = store.messages().load(&s.id, MessageFilter::default()).await.unwrap();
        assert_eq!(visible.iter().map(|m| m.message.text()).collect::<Vec<_>>(), ["m2", "m3"]);
        let all = store.messages().load(&s.id, MessageFilter { include_hidden: true }).await.unwrap();
        assert_eq!(all.len(), 4);
        assert!(all[0].hidden);
        store.messages().set_token_counts(&s.id, &[(2, 17)]).await.unwrap();
        assert_eq!(store.messages().load(&s.id, MessageFilter::default()).await.unwrap()[0].token_count, Some(17));
        assert_eq!(store.messages().last_turn(&s.id).await.unwrap(), Some(1));
    }

    async fn a_tool_call_id_runs_at_most_once_even_across_restarts(db) {
        let (sid, result) = {
            let store = db.open().await;
            let s = store.sessions().create(new_session("u")).await.unwrap();
            assert_eq!(
                store.calls().begin(&s.id, "call_1", "shell", &json!({"c": "ls"})).await.unwrap(),
                BeginOutcome::Started
            );
            assert!(matches!(
                store.calls().begin(&s.id, "call_1", "shell", &json!({})).await.unwrap(),
                BeginOutcome::AlreadyRunning(_)
            ));
            let result = ToolResult::ok("call_1", "a.txt");
            store
                .calls().finish(
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
        let store = db.open().await;
        match store.calls().begin(&sid, "call_1", "shell", &json!({"c": "ls"})).await.unwrap() {
            BeginOutcome::AlreadyFinished(rec) => {
                assert_eq!(rec.result, Some(result));
                assert_eq!(rec.args, json!({"c": "ls"}));
                assert_eq!(rec.duration_ms, Some(3));
            }
            other => panic!("{other:?}"),
        }
    }

    async fn a_turn_and_its_steps_commit_whole_or_not_at_all(db) {
        let store = db.open().await;
        let s = store.sessions().create(new_session("u")).await.unwrap();
        let running = SessionUpdate { status: Some(SessionStatus::Running), ..SessionUpdate::default() };
        let (record, seq) = store.sessions().start_turn(&s.id, running.clone(), 1, &Message::user("go"), Some(3)).await.unwrap();
        assert_eq!((record.status, seq), (SessionStatus::Running, 0));
        // An unknown session: an error, nothing stored.
        let err = store.sessions().start_turn("nope", running, 1, &Message::user("go"), None).await.unwrap_err();
        assert!(matches!(err, StoreError::NotFound { what: "session", .. }), "{err}");

        // The assistant message and its calls, recorded as running, at once.
        let args = json!({"a": 1});
        let calls = [
            CallStart { call_id: "a", name: "add", args: &args },
            CallStart { call_id: "b", name: "add", args: &args },
        ];
        let (seq, begun) =
            store.calls().append_with_calls(&s.id, 1, &Message::assistant("calling"), Some(2), &calls).await.unwrap();
        assert_eq!(seq, 1);
        assert_eq!(begun, [BeginOutcome::Started, BeginOutcome::Started]);
        let finish = |id: &str| ToolCallFinish {
            status: ToolCallStatus::Ok,
            result: ToolResult::ok(id, "2"),
            envelope: None,
            bytes: 1,
            truncated: false,
            locator: None,
            duration_ms: 1,
        };
        store.calls().finish(&s.id, "a", finish("a")).await.unwrap();
        let step = StepRecord { turn: 1, step: 1, stop_reason: "tool_use".into(), ..StepRecord::default() };
        let results = Message::tool_results(vec![ToolResult::ok("a", "2"), ToolResult::ok("b", "2")]);

        // A commit naming a call that was never recorded fails whole: no message, no step.
        let bad = StepCommit {
            turn: 1,
            message: Some((&results, None)),
            finished: vec![("b".into(), finish("b")), ("zzz".into(), finish("zzz"))],
            step: &step,
            state: vec![("learnt", json!(1.5))],
        };
        let err = store.steps().commit(&s.id, bad).await.unwrap_err();
        assert!(matches!(err, StoreError::NotFound { what: "tool call", .. }), "{err}");
        assert_eq!(count(&store, "messages", &s.id).await, 2);
        assert!(store.steps().list(&s.id).await.unwrap().is_empty());
        assert_eq!(store.calls().get(&s.id, "b").await.unwrap().unwrap().status, ToolCallStatus::Running);
        assert_eq!(store.sessions().get_state::<f64>(&s.id, "learnt").await.unwrap(), None);

        let good = StepCommit {
            turn: 1,
            message: Some((&results, Some(9))),
            finished: vec![("b".into(), finish("b"))],
            step: &step,
            state: vec![("learnt", json!(1.5))],
        };
        assert_eq!(store.steps().commit(&s.id, good).await.unwrap(), Some(2));
        assert_eq!(store.sessions().get_state::<f64>(&s.id, "learnt").await.unwrap(), Some(1.5));
        assert_eq!(store.steps().list(&s.id).await.unwrap(), std::slice::from_ref(&step));
        let statuses: Vec<_> = store.calls().list(&s.id).await.unwrap().iter().map(|c| c.status).collect();
        assert_eq!(statuses, [ToolCallStatus::Ok, ToolCallStatus::Ok]);
        let loaded = store.messages().load(&s.id, MessageFilter::default()).await.unwrap();
        assert_eq!(loaded.iter().map(|m| (m.seq, m.token_count)).collect::<Vec<_>>(), [(0, Some(3)), (1, Some(2)), (2, Some(9))]);

        // A call id recorded before never runs again: it comes back finished, with its result.
        let again = [CallStart { call_id: "a", name: "add", args: &args }];
        let (_, begun) = store.calls().append_with_calls(&s.id, 2, &Message::assistant("again"), None, &again).await.unwrap();
        assert!(matches!(&begun[..], [BeginOutcome::AlreadyFinished(r)] if r.result == Some(ToolResult::ok("a", "2"))));

        // The step that ends a turn commits the turn's end with it, whole or not at all: a
        // failing last step leaves the session running, with no answer and no record.
        let answer = Message::assistant("4");
        let last_step = StepRecord { turn: 2, step: 1, stop_reason: "end_turn".into(), ..StepRecord::default() };
        let bad = StepCommit {
            turn: 2,
            message: Some((&answer, Some(1))),
            finished: vec![("zzz".into(), finish("zzz"))],
            step: &last_step,
            state: vec![],
        };
        let err = store.steps().commit_last(&s.id, bad, SessionStatus::Idle).await.unwrap_err();
        assert!(matches!(err, StoreError::NotFound { what: "tool call", .. }), "{err}");
        assert_eq!(store.sessions().get(&s.id).await.unwrap().status, SessionStatus::Running);
        assert_eq!(store.steps().list(&s.id).await.unwrap().len(), 1);
        let last = StepCommit { turn: 2, message: Some((&answer, Some(1))), finished: vec![], step: &last_step, state: vec![] };
        let (seq, record) = store.steps().commit_last(&s.id, last, SessionStatus::Idle).await.unwrap();
        assert_eq!((seq, record.status), (Some(4), SessionStatus::Idle));
        assert_eq!(store.sessions().get(&s.id).await.unwrap(), record);
        assert_eq!(store.steps().list(&s.id).await.unwrap().len(), 2);
    }

    async fn running_calls_are_marked_interrupted_after_a_crash(db) {
        let store = db.open().await;
        let s = store.sessions().create(new_session("u")).await.unwrap();
        store.calls().begin(&s.id, "a", "shell", &json!({})).await.unwrap();
        store.calls().begin(&s.id, "b", "shell", &json!({})).await.unwrap();
        let envelope = ToolError::new("shell", ErrorCategory::Timeout, "slow");
        store
            .calls().finish(
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
        assert_eq!(store.calls().mark_running_as_interrupted(&s.id).await.unwrap(), ["a"]);
        let calls = store.calls().list(&s.id).await.unwrap();
        assert_eq!(
            calls.iter().map(|c| c.status).collect::<Vec<_>>(),
            [ToolCallStatus::Interrupted, ToolCallStatus::Error]
        );
        assert_eq!(calls[1].envelope, Some(envelope));
    }

    async fn a_streamed_blob_is_the_blob_of_its_bytes(db) {
        // Read in short pieces, across several frames: the same digest, size, lines and bytes as
        // the blob stored from memory.
        struct Trickle(Vec<u8>);
        impl std::io::Read for Trickle {
            fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
                let n = buf.len().min(self.0.len()).min(7_777);
                buf[..n].copy_from_slice(&self.0[..n]);
                self.0.drain(..n);
                Ok(n)
            }
        }
        let store = db.open().await;
        let a = store.sessions().create(new_session("u")).await.unwrap();
        let big: Vec<u8> = (0..100_000u32).flat_map(|i| format!("line {i}\n").into_bytes()).chain(*b"end").collect();
        let ttl = Duration::from_secs(60);
        for bytes in [&big[..], b"", b"one\n"] {
            let whole = store.blobs().put(&a.id, NewBlob { tool: "t", call_id: "c", bytes, ttl }).await.unwrap();
            let streamed = store.blobs().put_from(&a.id, "t", "c", ttl, Trickle(bytes.to_vec())).await.unwrap();
            assert_eq!(
                (&streamed.digest, streamed.raw_bytes, streamed.lines),
                (&whole.digest, whole.raw_bytes, whole.lines)
            );
            assert_eq!(store.blobs().get(&a.id, &streamed.locator).await.unwrap().data, bytes);
        }
    }

    async fn blobs_are_session_scoped_expire_and_detect_corruption(db) {
        let store = db.open().await;
        let a = store.sessions().create(new_session("u")).await.unwrap();
        let b = store.sessions().create(new_session("u")).await.unwrap();
        let text = "line\n".repeat(10_000);
        let meta = store
            .blobs().put(
                &a.id,
                NewBlob { tool: "shell", call_id: "c", bytes: text.as_bytes(), ttl: Duration::from_secs(3600) },
            )
            .await
            .unwrap();
        assert!(meta.locator.starts_with("out_") && meta.locator.len() == 36);
        assert_eq!((meta.raw_bytes, meta.lines), (50_000, 10_000));
        assert_eq!(store.blobs().get(&a.id, &meta.locator).await.unwrap().data, text.as_bytes());
        assert!(matches!(store.blobs().get(&b.id, &meta.locator).await, Err(StoreError::NotFound { .. })));

        let short = store
            .blobs().put(&a.id, NewBlob { tool: "t", call_id: "c2", bytes: b"x", ttl: Duration::ZERO })
            .await
            .unwrap();
        assert!(matches!(store.blobs().get(&a.id, &short.locator).await, Err(StoreError::Expired { .. })));
        assert_eq!(store.blobs().purge_expired(i64::MAX / 2).await.unwrap(), 2);
        let err = store.blobs().get(&a.id, &meta.locator).await.unwrap_err();
        assert!(matches!(err, StoreError::Expired { .. }), "purged data still reads as expired: {err}");
        assert!(err.to_string().contains("run the tool again"));

        // Corrupt a stored blob behind the store's back.
        let fresh = store
            .blobs().put(
                &a.id,
                NewBlob { tool: "t", call_id: "c3", bytes: b"hello world", ttl: Duration::from_secs(60) },
            )
            .await
            .unwrap();
        store.close().await;
        // A valid frame of other bytes, without a checksum (as blobs were first written): caught by
        // the digest.
        let other = zstd::bulk::compress(b"hello w0rld", 3).unwrap();
        db.set_blob_data(&fresh.locator, other).await;
        // A flipped byte inside a checksummed frame of a large output: caught by the frame checksum.
        let big: Vec<u8> = (0..600_000u32).flat_map(|i| format!("line {i}\n").into_bytes()).collect();
        let large = {
            let store = db.open().await;
            let meta = store
                .blobs().put(&a.id, NewBlob { tool: "t", call_id: "c4", bytes: &big, ttl: Duration::from_secs(60) })
                .await
                .unwrap();
            assert_eq!(store.blobs().get(&a.id, &meta.locator).await.unwrap().data, big);
            store.close().await;
            meta
        };
        let mut data = db.blob_data(&large.locator).await;
        let middle = data.len() / 2;
        data[middle] ^= 0x20;
        db.set_blob_data(&large.locator, data).await;
        let store = db.open().await;
        assert!(matches!(store.blobs().get(&a.id, &fresh.locator).await, Err(StoreError::Corrupt { .. })));
        let err = store.blobs().get(&a.id, &large.locator).await.unwrap_err();
        assert!(matches!(err, StoreError::Corrupt { .. }), "{err}");
    }

    async fn todos_paginate(db) {
        let store = db.open().await;
        let s = store.sessions().create(new_session("u")).await.unwrap();
        for i in 1..=5 {
            assert_eq!(store.todos().add(&s.id, &format!("item {i}")).await.unwrap().id, i);
        }
        store.todos().update(&s.id, 2, TodoUpdate { status: Some(TodoStatus::Done), text: None }).await.unwrap();
        store.todos().remove(&s.id, 3).await.unwrap();
        let page = store.todos().list(&s.id, 1, 2).await.unwrap();
        assert_eq!(page.total_count, 4);
        assert_eq!(page.items.iter().map(|i| i.id).collect::<Vec<_>>(), [2, 4]);
        assert_eq!(store.todos().open(&s.id).await.unwrap().iter().map(|i| i.id).collect::<Vec<_>>(), [1, 4, 5]);
        assert!(matches!(
            store.todos().update(&s.id, 99, TodoUpdate::default()).await,
            Err(StoreError::NotFound { .. })
        ));
        assert_eq!(store.todos().add(&s.id, "after removal").await.unwrap().id, 6, "ids are never reused");
    }

    async fn snapshots_and_load_context(db) {
        let store = db.open().await;
        let s = store.sessions().create(new_session("u")).await.unwrap();
        for i in 0..5 {
            store.messages().append(&s.id, 1, &Message::user(format!("m{i}"))).await.unwrap();
        }
        let ctx = store.messages().load_context(&s.id).await.unwrap();
        assert_eq!(ctx.messages().len(), 5);
        store.messages().hide(&s.id, &[0, 1, 2]).await.unwrap();
        store
            .messages().save_snapshot(&s.id, 2, &[Message::user("summary of m0..m2")], &json!({"ratio": 0.5}))
            .await
            .unwrap();
        store.messages().append(&s.id, 2, &Message::user("m5")).await.unwrap();
        let ctx = store.messages().load_context(&s.id).await.unwrap();
        let texts: Vec<String> = ctx.messages().iter().map(Message::text).collect();
        assert_eq!(texts, ["summary of m0..m2", "m3", "m4", "m5"]);
    }

    async fn state_round_trips(db) {
        let store = db.open().await;
        let s = store.sessions().create(new_session("u")).await.unwrap();
        store.sessions().set_state(&s.id, "k", &json!({"a": [1, 2]})).await.unwrap();
        store.sessions().set_state(&s.id, "k", &json!({"a": [3]})).await.unwrap();
        assert_eq!(store.sessions().get_state::<serde_json::Value>(&s.id, "k").await.unwrap(), Some(json!({"a": [3]})));
        store.sessions().delete_state(&s.id, "k").await.unwrap();
        assert_eq!(store.sessions().get_state::<serde_json::Value>(&s.id, "k").await.unwrap(), None);
        assert!(matches!(store.sessions().set_state("nope", "k", &1).await, Err(StoreError::NotFound { .. })));

        // Several at once, read back at once, replacing what was there.
        store.sessions().set_state(&s.id, "a", &1).await.unwrap();
        store.sessions().set_states(&s.id, &[("a", json!(2)), ("b", json!("x"))]).await.unwrap();
        store.sessions().set_states(&s.id, &[]).await.unwrap();
        let all = store.sessions().state(&s.id).await.unwrap();
        assert_eq!(all.get::<i64>("a").unwrap(), Some(2));
        assert_eq!(all.get::<String>("b").unwrap().as_deref(), Some("x"));
        assert_eq!(all.get::<i64>("missing").unwrap(), None);
        assert!(all.get::<i64>("b").is_err(), "a value of another type is an error, not a panic");
        assert!(matches!(store.sessions().set_states("nope", &[("k", json!(1))]).await, Err(StoreError::NotFound { .. })));
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]
    #[test]
    fn blobs_round_trip_byte_exact(data in proptest::collection::vec(any::<u8>(), 0..20_000)) {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            let store = Store::open_in_memory().await.unwrap();
            let s = store.sessions().create(new_session("u")).await.unwrap();
            let meta = store.blobs().put(&s.id, NewBlob { tool: "t", call_id: "c", bytes: &data, ttl: Duration::from_secs(60) }).await.unwrap();
            prop_assert_eq!(store.blobs().get(&s.id, &meta.locator).await.unwrap().data, data);
            Ok(())
        })?;
    }
}

/// Several processes opening one fresh database at once (a fleet starting, or `tackle run` and
/// `tackle serve` started together): every one of them opens it, and the schema is created once.
async fn opened_at_once(db: &common::TestDb) {
    let url = db.url();
    let mut handles = Vec::new();
    for _ in 0..6 {
        let url = url.clone();
        handles.push(tokio::spawn(async move { Store::connect(&url).await.map(|_| ()) }));
    }
    for h in handles {
        h.await.unwrap().unwrap_or_else(|e| panic!("a concurrent open failed: {e}"));
    }
    let store = db.open().await;
    let s = store.sessions().create(new_session("u")).await.unwrap();
    assert_eq!(store.messages().append(&s.id, 1, &Message::user("hi")).await.unwrap(), 0);
}

both! {
    async fn concurrent_opens_of_a_fresh_store_all_succeed(db) {
        opened_at_once(&db).await;
    }
}

both! {
    async fn a_lease_makes_other_turns_busy_until_released_or_expired(db) {
        let store = db.open().await;
        let s = store.sessions().create(new_session("u")).await.unwrap();
        let long = Duration::from_secs(60);
        let lease = store.leases().acquire(&s.id, long).await.unwrap().unwrap();
        assert_eq!(lease.event_base, 0);
        assert_eq!(store.leases().acquire(&s.id, long).await.unwrap(), Err(LeaseRefusal::Busy));
        assert_eq!(store.sessions().get(&s.id).await.unwrap().status, SessionStatus::Running);

        // A cancel posted anywhere reaches the holder.
        assert!(store.leases().request_cancel(&s.id).await.unwrap());
        assert_eq!(store.leases().cancel_requests().await.unwrap(), [s.id.to_string()]);

        // Releasing frees it and keeps the event numbering going.
        store.leases().release(&lease, 7).await.unwrap();
        assert_eq!(store.sessions().get(&s.id).await.unwrap().status, SessionStatus::Idle);
        assert!(store.leases().cancel_requests().await.unwrap().is_empty());
        assert!(!store.leases().request_cancel(&s.id).await.unwrap(), "nothing runs");
        let next = store.leases().acquire(&s.id, Duration::ZERO).await.unwrap().unwrap();
        assert_eq!(next.event_base, 7);
        // The old lease's token no longer releases anything.
        store.leases().release(&lease, 99).await.unwrap();

        // A lease nobody renews expires: the session reads interrupted and may be taken over.
        tokio::time::sleep(Duration::from_millis(5)).await;
        assert_eq!(store.sessions().get(&s.id).await.unwrap().status, SessionStatus::Interrupted);
        let taken = store.leases().acquire(&s.id, long).await.unwrap().unwrap();
        assert_ne!(taken.token, next.token);
        assert_eq!(store.leases().renew_held(long).await.unwrap(), 1);
        store.leases().release(&next, 1).await.unwrap();
        assert_eq!(store.sessions().get(&s.id).await.unwrap().status, SessionStatus::Running, "a lost lease releases nothing");
    }

    async fn only_one_of_many_concurrent_acquirers_gets_the_lease(db) {
        let store = db.open().await;
        let s = store.sessions().create(new_session("u")).await.unwrap();
        let mut tasks = Vec::new();
        for _ in 0..8 {
            let other = db.open().await;
            let id = s.id.to_string();
            tasks.push(tokio::spawn(async move { other.leases().acquire(&id, Duration::from_secs(60)).await.unwrap() }));
        }
        let mut won = 0;
        for t in tasks {
            won += usize::from(t.await.unwrap().is_ok());
        }
        assert_eq!(won, 1);
    }

    async fn approvals_and_events_are_shared_through_the_store(db) {
        let store = db.open().await;
        let s = store.sessions().create(new_session("u")).await.unwrap();
        let lease = store.leases().acquire(&s.id, Duration::from_secs(60)).await.unwrap().unwrap();
        let approval = StoredApproval {
            id: "ap1".into(),
            session_id: s.id.to_string(),
            call_id: "c1".into(),
            tool: "shell".into(),
            args: json!({"command": "rm -rf build"}),
            rule: "ask".into(),
        };
        store.approvals().put(&approval).await.unwrap();
        assert_eq!(store.approvals().pending(&s.id).await.unwrap(), std::slice::from_ref(&approval));
        assert_eq!(store.approvals().session_of("ap1").await.unwrap().as_deref(), Some(s.id.as_str()));
        assert!(store.approvals().decide("ap1", false, Some("not now")).await.unwrap());
        assert!(!store.approvals().decide("ap1", true, None).await.unwrap(), "decided once");
        assert!(store.approvals().pending(&s.id).await.unwrap().is_empty());
        let decided = store.approvals().decided().await.unwrap();
        assert_eq!(decided, [ApprovalDecisionRecord { id: "ap1".into(), approved: false, reason: Some("not now".into()) }]);
        store.approvals().delete("ap1").await.unwrap();
        assert!(store.approvals().decided().await.unwrap().is_empty());

        let events: Vec<StoredEvent> = (1..=450)
            .map(|i| StoredEvent { seq: i, name: "text_delta".into(), data: format!("{{\"n\":{i}}}") })
            .collect();
        store.events().append(&s.id, &events).await.unwrap();
        store.events().append(&s.id, &events[..3]).await.unwrap();
        let after = store.events().after(&s.id, 440, 100).await.unwrap();
        assert_eq!(after.iter().map(|e| e.seq).collect::<Vec<_>>(), (441..=450).collect::<Vec<_>>());
        assert_eq!(store.events().after(&s.id, 0, 1000).await.unwrap().len(), 450, "a repeated event is stored once");
        store.leases().release(&lease, 450).await.unwrap();
        // The next turn starts a fresh record.
        let next = store.leases().acquire(&s.id, Duration::from_secs(60)).await.unwrap().unwrap();
        assert_eq!(next.event_base, 450);
        assert!(store.events().after(&s.id, 0, 1000).await.unwrap().is_empty());
    }

    async fn elicitations_are_shared_and_answered_once(db) {
        let store = db.open().await;
        let s = store.sessions().create(new_session("u")).await.unwrap();
        let lease = store.leases().acquire(&s.id, Duration::from_secs(60)).await.unwrap().unwrap();
        let question = StoredElicitation {
            id: "el1".into(),
            session_id: s.id.to_string(),
            call_id: "c1".into(),
            tool: "crm__create".into(),
            server: "crm".into(),
            message: "Which account?".into(),
            mode: "form".into(),
            schema: Some(json!({"type": "object", "properties": {"account": {"type": "string"}}})),
            url: None,
        };
        store.elicitations().put(&question).await.unwrap();
        assert_eq!(store.elicitations().pending(&s.id).await.unwrap(), std::slice::from_ref(&question));
        assert_eq!(store.elicitations().session_of("el1").await.unwrap().as_deref(), Some(s.id.as_str()));
        assert!(store.elicitations().answer_of("el1").await.unwrap().is_none());
        let answer = json!({"action": "accept", "content": {"account": "ACME"}});
        assert!(store.elicitations().answer("el1", &answer).await.unwrap());
        assert!(!store.elicitations().answer("el1", &json!({"action": "decline"})).await.unwrap(), "answered once");
        assert!(store.elicitations().pending(&s.id).await.unwrap().is_empty());
        assert!(store.elicitations().session_of("el1").await.unwrap().is_none());
        assert_eq!(store.elicitations().answer_of("el1").await.unwrap().unwrap().answer, answer);
        store.elicitations().delete("el1").await.unwrap();
        assert!(store.elicitations().answer_of("el1").await.unwrap().is_none());
        // A question of a turn that ended waits for nobody.
        store.elicitations().put(&StoredElicitation { id: "el2".into(), ..question }).await.unwrap();
        store.leases().release(&lease, 0).await.unwrap();
        assert!(store.elicitations().pending(&s.id).await.unwrap().is_empty());
    }
}

both! {
    // [fenced-turns]: a turn whose lease moved on (it expired by the database's clock, and
    // another instance took the session over) writes nothing more, whatever it writes; the
    // turn that holds the lease writes as usual.
    async fn a_turn_that_lost_its_lease_writes_nothing(db) {
        let a = db.open().await;
        let b = db.open().await; // another instance
        let s = a.sessions().create(new_session("u")).await.unwrap();
        let other = a.sessions().create(new_session("u")).await.unwrap();
        let lease = a.leases().acquire(&s.id, Duration::from_millis(400)).await.unwrap().unwrap();
        assert_eq!(lease.epoch, 1);
        let turn = a.fenced(&lease);
        assert!(turn.is_fenced(&s.id) && !turn.is_fenced(&other.id));
        let args = json!({"command": "true"});
        let finish = || ToolCallFinish {
            status: ToolCallStatus::Ok,
            result: ToolResult::ok("c1", "done"),
            envelope: None,
            bytes: 4,
            truncated: false,
            locator: None,
            duration_ms: 1,
        };
        // While it holds the lease, the turn writes.
        let update = SessionUpdate { status: Some(SessionStatus::Running), ..SessionUpdate::default() };
        turn.sessions().start_turn(&s.id, update, 1, &Message::user("go"), None).await.unwrap();
        let call = CallStart { call_id: "c1", name: "shell", args: &args };
        turn.calls().append_with_calls(&s.id, 1, &Message::assistant("calling"), None, &[call]).await.unwrap();
        turn.calls().finish(&s.id, "c1", finish()).await.unwrap();
        turn.sessions().set_state(&s.id, "k", &1).await.unwrap();
        turn.todos().add(&s.id, "t").await.unwrap();
        turn.events().append(&s.id, &[StoredEvent { seq: 1, name: "step_started".into(), data: "{}".into() }]).await.unwrap();
        turn.check_lease(&s.id).await.unwrap();

        // The lease expires (nobody renews it): by the database's clock the session is free,
        // and the turn may no longer write even before anyone takes it over.
        let expired = std::time::Instant::now();
        while b.sessions().get(&s.id).await.unwrap().status != SessionStatus::Interrupted {
            assert!(expired.elapsed() < Duration::from_secs(10), "the lease never expired");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(matches!(turn.messages().append(&s.id, 1, &Message::user("late")).await, Err(StoreError::LeaseLost { .. })));
        // Another instance takes it over: a new epoch.
        let taken = b.leases().acquire(&s.id, Duration::from_secs(60)).await.unwrap().unwrap();
        assert_eq!(taken.epoch, 2);
        let messages_before = b.messages().count(&s.id).await.unwrap();
        let todos_before = b.todos().list(&s.id, 0, 10).await.unwrap().total_count;

        let lost = |r: Result<(), StoreError>, what: &str| match r {
            Err(StoreError::LeaseLost { session }) => assert_eq!(session, s.id.to_string(), "{what}"),
            other => panic!("{what}: {other:?}"),
        };
        lost(turn.check_lease(&s.id).await, "check");
        lost(turn.messages().append(&s.id, 1, &Message::user("x")).await.map(drop), "append_message");
        lost(turn.messages().append_all(&s.id, 1, &[Message::user("x")]).await.map(drop), "append_messages");
        let update = SessionUpdate { status: Some(SessionStatus::Idle), ..SessionUpdate::default() };
        lost(turn.sessions().start_turn(&s.id, update.clone(), 2, &Message::user("x"), None).await.map(drop), "start_turn");
        lost(turn.sessions().update(&s.id, update).await.map(drop), "update_session");
        let call = CallStart { call_id: "c2", name: "shell", args: &args };
        lost(turn.calls().append_with_calls(&s.id, 1, &Message::assistant("x"), None, &[call]).await.map(drop), "append_with_calls");
        lost(turn.calls().begin(&s.id, "c3", "shell", &args).await.map(drop), "begin_tool_call");
        lost(turn.calls().finish(&s.id, "c1", finish()).await, "finish_tool_call");
        let step = StepRecord { turn: 1, step: 2, stop_reason: "tool_use".into(), ..StepRecord::default() };
        let results = Message::tool_results(vec![ToolResult::ok("c1", "again")]);
        let commit = StepCommit { turn: 1, message: Some((&results, None)), finished: vec![("c1".into(), finish())], step: &step, state: vec![] };
        lost(turn.steps().commit(&s.id, commit).await.map(drop), "commit_step");
        lost(turn.steps().record(&s.id, &step).await, "record_step");
        lost(turn.calls().mark_running_as_interrupted(&s.id).await.map(drop), "mark_running_as_interrupted");
        lost(turn.sessions().set_state(&s.id, "k", &2).await, "set_state");
        lost(turn.sessions().delete_state(&s.id, "k").await, "delete_state");
        lost(turn.todos().add(&s.id, "u").await.map(drop), "add_todo");
        lost(turn.todos().update(&s.id, 1, TodoUpdate { text: Some("v".into()), status: None }).await.map(drop), "update_todo");
        lost(turn.todos().remove(&s.id, 1).await.map(drop), "remove_todo");
        let blob = NewBlob { tool: "shell", call_id: "c1", bytes: b"out", ttl: Duration::from_secs(60) };
        lost(turn.blobs().put(&s.id, blob).await.map(drop), "put_blob");
        lost(turn.messages().save_snapshot(&s.id, 0, &[Message::user("x")], &json!({})).await.map(drop), "save_snapshot");
        lost(turn.messages().hide(&s.id, &[0]).await.map(drop), "hide_messages");
        lost(turn.messages().set_token_counts(&s.id, &[(0, 5)]).await, "set_token_counts");
        let late = StoredEvent { seq: 2, name: "text_delta".into(), data: "{}".into() };
        lost(turn.events().append(&s.id, std::slice::from_ref(&late)).await, "append_events");

        // Nothing of it landed; the lease is the new turn's.
        assert_eq!(b.messages().count(&s.id).await.unwrap(), messages_before);
        assert_eq!(b.todos().list(&s.id, 0, 10).await.unwrap().total_count, todos_before);
        assert_eq!(b.sessions().get_state::<i64>(&s.id, "k").await.unwrap(), Some(1));
        assert_eq!(b.calls().get(&s.id, "c1").await.unwrap().unwrap().result, Some(ToolResult::ok("c1", "done")));
        assert!(b.calls().get(&s.id, "c3").await.unwrap().is_none());
        assert!(b.steps().list(&s.id).await.unwrap().is_empty());
        assert!(b.events().after(&s.id, 0, 10).await.unwrap().is_empty(), "the takeover cleared the old turn's events");
        assert!(b.messages().load(&s.id, MessageFilter { include_hidden: true }).await.unwrap().iter().all(|m| !m.hidden));
        assert_eq!(b.sessions().get(&s.id).await.unwrap().status, SessionStatus::Running);
        // Other sessions are not fenced by this lease.
        turn.messages().append(&other.id, 1, &Message::user("elsewhere")).await.unwrap();
        // The new turn writes; the old lease renews nothing of it and releases nothing.
        let current = b.fenced(&taken);
        current.messages().append(&s.id, 2, &Message::user("continue")).await.unwrap();
        a.leases().release(&lease, 0).await.unwrap();
        current.events().append(&s.id, &[late]).await.unwrap();
        b.leases().release(&taken, 2).await.unwrap();
        // Released: even the turn that held it writes no more.
        lost(current.messages().append(&s.id, 2, &Message::user("after")).await.map(drop), "after release");
        assert_eq!(b.messages().count(&s.id).await.unwrap(), messages_before + 1);
    }
}

/// A PostgreSQL server that cannot be reached is reported as such right away (not as a pool
/// timeout half a minute later), and the password stays out of the message.
#[tokio::test]
async fn an_unreachable_postgres_says_why() {
    let started = std::time::Instant::now();
    let err = Store::connect("postgres://tackle:hunter2@127.0.0.1:1/tackle?sslpassword=hunter2")
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("refused"), "{err}");
    assert!(!err.contains("hunter2"), "{err}");
    assert!(started.elapsed() < Duration::from_secs(10), "it waited for the pool's timeout");
    let err = Store::connect("mysql://tackle:hunter2@db/tackle").await.unwrap_err().to_string();
    assert!(err.contains("postgres://") && !err.contains("hunter2"), "{err}");
}

/// A database written by an earlier Tackle, whose store reached SQLite through sqlx (its
/// migrator's `_sqlx_migrations` table and SHA-384 checksums, schema version 6, one session of
/// four messages), opens with today's store: the recorded checksums are accepted as its own,
/// the later migrations apply, and every row reads back. Upgrading loses nothing.
#[tokio::test]
async fn a_database_made_by_the_sqlx_store_opens_and_upgrades() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tackle.db");
    std::fs::copy(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/sqlx-v6.db"), &path).unwrap();
    for _ in 0..2 {
        // Twice: the upgrade is recorded, and the upgraded file opens as it is.
        let store = Store::open(&path).await.unwrap();
        let sessions = store.sessions().list(SessionFilter::default()).await.unwrap();
        assert_eq!(sessions.len(), 1, "{sessions:?}");
        let id = sessions[0].id.to_string();
        assert_eq!(sessions[0].title, "Use the tools of the conf server.");
        let messages = store.messages().load(&id, MessageFilter::default()).await.unwrap();
        assert_eq!(messages.len(), 4, "{messages:?}");
        assert_eq!(store.messages().count(&id).await.unwrap(), 4);
        drop(store);
    }
    let db = rusqlite::Connection::open(&path).unwrap();
    let (count, failed): (i64, i64) = db
        .query_row("SELECT COUNT(*), COUNT(*) FILTER (WHERE NOT success) FROM _sqlx_migrations", [], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .unwrap();
    let fresh = dir.path().join("fresh.db");
    drop(Store::open(&fresh).await.unwrap());
    let expected: i64 = rusqlite::Connection::open(&fresh)
        .unwrap()
        .query_row("SELECT COUNT(*) FROM _sqlx_migrations", [], |r| r.get(0))
        .unwrap();
    assert!(expected > 6, "the fixture predates migration {expected}");
    assert_eq!((count, failed), (expected, 0), "every migration recorded, none dirty");
}
