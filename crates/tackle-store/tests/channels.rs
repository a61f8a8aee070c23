//! The channel tables on both backends (a SQLite file, a PostgreSQL database): a restart (a new `Store` on the same file)
//! sees what the last process stored, redeliveries are ignored, offsets only move forward.

use serde_json::json;
use tackle_store::*;

fn item(update_id: i64, chat: &str) -> NewInboxItem {
    NewInboxItem { update_id, chat: chat.into(), payload: json!({"text": format!("m{update_id}")}) }
}

fn session() -> NewSession {
    NewSession {
        owner: "telegram:7".into(),
        provider: "openai".into(),
        model: "m".into(),
        workspace: "/tmp".into(),
        ..Default::default()
    }
}

both! {
    async fn the_inbox_survives_a_restart_and_ignores_redeliveries(db) {
        let store = db.open().await;
        let new =
            store.channels().accept_updates("telegram", &[item(10, "1"), item(11, "2")], Some(12)).await.unwrap();
        assert_eq!(new, vec![10, 11]);
        // A redelivered update (webhook retry, or a poll repeated after a crash) is not queued twice.
        let new =
            store.channels().accept_updates("telegram", &[item(11, "2"), item(12, "1")], Some(13)).await.unwrap();
        assert_eq!(new, vec![12]);
        assert!(store.channels().start_update("telegram", 10).await.unwrap());
        assert!(!store.channels().start_update("telegram", 10).await.unwrap(), "started once only");
        store.channels().finish_update("telegram", 10).await.unwrap();
        assert!(store.channels().start_update("telegram", 11).await.unwrap());
        store.close().await;

        // The next process: 11 was running when it died, 12 was never started.
        let store = db.open().await;
        assert_eq!(store.channels().offset("telegram").await.unwrap(), Some(13));
        let open = store.channels().open_updates("telegram").await.unwrap();
        let states: Vec<(i64, InboxState)> = open.iter().map(|i| (i.update_id, i.state)).collect();
        assert_eq!(states, vec![(11, InboxState::Running), (12, InboxState::Queued)]);
        assert_eq!(open[1].payload, json!({"text": "m12"}));
        assert!(
            !store.channels().start_update("telegram", 11).await.unwrap(),
            "a running update never starts again"
        );
        let summary = store.channels().summary("telegram").await.unwrap();
        assert_eq!((summary.queued, summary.running, summary.done, summary.offset), (1, 1, 1, Some(13)));
        assert!(store.channels().open_updates("other").await.unwrap().is_empty(), "channels are separate");
    }

    async fn offsets_never_move_back(db) {
        let store = db.open().await;
        store.channels().accept_updates("telegram", &[], Some(100)).await.unwrap();
        store.channels().accept_updates("telegram", &[], Some(42)).await.unwrap();
        assert_eq!(store.channels().offset("telegram").await.unwrap(), Some(100));
        store.channels().accept_updates("telegram", &[], Some(101)).await.unwrap();
        assert_eq!(store.channels().offset("telegram").await.unwrap(), Some(101));
    }

    async fn chats_map_to_sessions_until_the_session_is_deleted(db) {
        let store = db.open().await;
        let a = store.sessions().create(session()).await.unwrap();
        let b = store.sessions().create(session()).await.unwrap();
        assert_eq!(store.channels().session("telegram", "-100", "7").await.unwrap(), None);
        store.channels().set_session("telegram", "-100", "7", &a.id).await.unwrap();
        store.channels().set_session("telegram", "-100", "8", &b.id).await.unwrap();
        assert_eq!(store.channels().session("telegram", "-100", "7").await.unwrap(), Some(a.id.clone()));
        assert_eq!(store.channels().session("telegram", "-100", "8").await.unwrap(), Some(b.id.clone()));
        // `/new`: the same person in the same chat moves to another session.
        store.channels().set_session("telegram", "-100", "7", &b.id).await.unwrap();
        assert_eq!(store.channels().session("telegram", "-100", "7").await.unwrap(), Some(b.id.clone()));
        let err = store.channels().set_session("telegram", "-100", "7", "no-such-session").await.unwrap_err();
        assert!(matches!(err, StoreError::NotFound { .. }), "{err}");
        store.sessions().delete(&b.id).await.unwrap();
        assert_eq!(store.channels().session("telegram", "-100", "7").await.unwrap(), None, "gone with its session");
    }

    async fn values_and_pruning(db) {
        let store = db.open().await;
        assert!(store.channels().insert_value("telegram", "refused:9", &true).await.unwrap());
        assert!(
            !store.channels().insert_value("telegram", "refused:9", &true).await.unwrap(),
            "only the first time"
        );
        store.channels().set_value("telegram", "status", &json!({"polling": true})).await.unwrap();
        let v: Option<serde_json::Value> = store.channels().value("telegram", "status").await.unwrap();
        assert_eq!(v, Some(json!({"polling": true})));
        store.channels().accept_updates("telegram", &[item(1, "1"), item(2, "1")], None).await.unwrap();
        store.channels().start_update("telegram", 1).await.unwrap();
        store.channels().finish_update("telegram", 1).await.unwrap();
        assert_eq!(store.channels().prune_updates("telegram", now_ms() + 1).await.unwrap(), 1, "only handled ones");
        assert_eq!(store.channels().open_updates("telegram").await.unwrap().len(), 1);
    }
}
