//! Checkpoints on each store backend: SQLite, and PostgreSQL when the test server is there
//! (`scripts/test.sh` starts one; without it the PostgreSQL half is skipped, or fails under
//! `TACKLE_REQUIRE_PEERS`). Recording, listing, previewing, restoring, copying into a new
//! directory and collecting garbage all go through the store's checkpoint tables (migration
//! 0009): content shared between sessions, the latest manifest of a workspace found again by a
//! new process.

use std::os::unix::fs::PermissionsExt;

use tackle_checkpoint::{CheckpointConfig, Checkpoints};
use tackle_store::{NewSession, Store};

async fn stores() -> Vec<(&'static str, Store)> {
    let mut stores = vec![("sqlite", Store::open_in_memory().await.unwrap())];
    if let Some(url) = tackle_testkit::peers::or_skip(tackle_testkit::postgres::fresh_database().await) {
        stores.push(("postgres", Store::connect(&url).await.unwrap()));
    }
    stores
}

async fn session(store: &Store, ws: &std::path::Path) -> String {
    store
        .sessions()
        .create(NewSession {
            owner: "me".into(),
            title: String::new(),
            provider: "p".into(),
            model: "m".into(),
            workspace: ws.display().to_string(),
            metadata: serde_json::Value::Null,
        })
        .await
        .unwrap()
        .id
        .to_string()
}

#[tokio::test]
async fn checkpoints_round_trip_on_every_backend() {
    for (backend, store) in stores().await {
        let ws = tempfile::tempdir().unwrap();
        let root = ws.path().canonicalize().unwrap();
        let a = session(&store, &root).await;
        let b = session(&store, &root).await;
        let checkpoints = Checkpoints::new(store.clone(), CheckpointConfig::default());
        std::fs::create_dir(root.join("src")).unwrap();
        std::fs::write(root.join("src/lib.rs"), "fn one() {}\n").unwrap();
        std::fs::write(root.join("run.sh"), "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(root.join("run.sh"), std::fs::Permissions::from_mode(0o755)).unwrap();
        std::os::unix::fs::symlink("src/lib.rs", root.join("link")).unwrap();
        let first = checkpoints.record(&a, 1, &root).await.unwrap();
        assert_eq!((first.entries, first.hashed), (4, 2), "{backend}");
        assert!(first.stored_bytes > 0, "{backend}");
        // Another session over the same workspace stores no content again.
        let shared = checkpoints.record(&b, 1, &root).await.unwrap();
        assert!(shared.unchanged, "{backend}: {shared:?}");
        std::fs::write(root.join("src/lib.rs"), "fn two() {}\n").unwrap();
        std::fs::remove_file(root.join("run.sh")).unwrap();
        std::fs::write(root.join("new.txt"), "x").unwrap();
        checkpoints.record(&a, 2, &root).await.unwrap();
        // A new process finds the latest manifest in the store.
        let fresh = Checkpoints::new(store.clone(), CheckpointConfig::default());
        let listed: Vec<i64> = fresh.list(&a).await.unwrap().iter().map(|c| c.turn).collect();
        assert_eq!(listed, [1, 2], "{backend}");
        let plan = fresh.preview(&a, 1, &root).await.unwrap();
        assert_eq!(plan.counts(), (1, 1, 1, 0, 0), "{backend}: {:?}", plan.changes);
        let report = fresh.restore(&a, 1, &root).await.unwrap();
        assert!(report.leftovers.is_empty(), "{backend}: {:?}", report.leftovers);
        assert_eq!(std::fs::read_to_string(root.join("src/lib.rs")).unwrap(), "fn one() {}\n");
        assert_eq!(std::fs::metadata(root.join("run.sh")).unwrap().permissions().mode() & 0o777, 0o755);
        assert!(!root.join("new.txt").exists());
        // A copy of turn 2's workspace for a fork.
        let copy = tempfile::tempdir().unwrap();
        let dest = copy.path().join("fork");
        fresh.materialize(&a, 2, &dest).await.unwrap();
        assert_eq!(std::fs::read_to_string(dest.join("src/lib.rs")).unwrap(), "fn two() {}\n");
        assert_eq!(std::fs::read_link(dest.join("link")).unwrap(), std::path::Path::new("src/lib.rs"));
        // Nothing is old enough to collect; the query runs.
        assert_eq!(fresh.collect_garbage().await.unwrap(), 0, "{backend}");
        assert!(fresh.preview(&a, 9, &root).await.is_err(), "{backend}");
    }
}
