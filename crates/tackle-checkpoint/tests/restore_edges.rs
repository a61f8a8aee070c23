//! What the fast paths of checkpoints and rewinds must not lose: the exact mode of a file
//! written back whatever the process's umask (a file that was absent is created with its mode,
//! and `fchmod`ed only when the umask or special bits would change it), a workspace that changed
//! without changing its number of paths (the scan returns the previous manifest only when every
//! entry is equal to it), and `max_files` counted across the threads that read directories.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use tackle_checkpoint::{CheckpointConfig, CheckpointError, Checkpoints};
use tackle_store::{NewSession, Store};

async fn setup(ws: &Path, config: CheckpointConfig) -> (Checkpoints, String) {
    let store = Store::open_in_memory().await.unwrap();
    let session = store
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
        .unwrap();
    // Every restore of these small workspaces takes the threaded path too.
    let checkpoints =
        Checkpoints::new(store, config).racy_margin(std::time::Duration::ZERO).parallel_restore_from(1);
    (checkpoints, session.id.to_string())
}

fn mode(path: &Path) -> u32 {
    std::fs::symlink_metadata(path).unwrap().permissions().mode() & 0o7777
}

/// Modes a umask of 022 (the usual one, and this test process's) would change at creation.
const MODES: [u32; 5] = [0o777, 0o666, 0o4755, 0o2775, 0o600];

#[tokio::test]
async fn files_written_back_get_their_exact_mode_whatever_the_umask() {
    let ws = tempfile::tempdir().unwrap();
    let root = ws.path();
    std::fs::create_dir(root.join("d")).unwrap();
    for (i, m) in MODES.iter().enumerate() {
        for dir in [root.to_owned(), root.join("d")] {
            let path = dir.join(format!("f{i}"));
            std::fs::write(&path, format!("content {i}")).unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(*m)).unwrap();
        }
    }
    let (checkpoints, session) = setup(root, CheckpointConfig::default()).await;
    checkpoints.record(&session, 1, root).await.unwrap();

    // Absent files (created), and present ones with other content and modes (replaced).
    for i in 0..MODES.len() {
        std::fs::remove_file(root.join(format!("f{i}"))).unwrap();
        let path = root.join(format!("d/f{i}"));
        std::fs::remove_file(&path).unwrap();
        std::fs::write(&path, "changed").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    }
    let report = checkpoints.restore(&session, 1, root).await.unwrap();
    assert!(report.leftovers.is_empty(), "{:?}", report.leftovers);
    for (i, m) in MODES.iter().enumerate() {
        for dir in [root.to_owned(), root.join("d")] {
            let path = dir.join(format!("f{i}"));
            assert_eq!(std::fs::read_to_string(&path).unwrap(), format!("content {i}"), "{}", path.display());
            assert_eq!(mode(&path), *m, "{}: mode {:o}", path.display(), mode(&path));
        }
    }
    // No temporary file left behind.
    let names: Vec<_> = std::fs::read_dir(root.join("d")).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(names.len(), MODES.len(), "{names:?}");
}

#[tokio::test]
async fn a_change_that_keeps_the_number_of_paths_is_a_change() {
    let ws = tempfile::tempdir().unwrap();
    let root = ws.path();
    std::fs::create_dir_all(root.join("a/b")).unwrap();
    for name in ["x", "y", "a/z", "a/b/w"] {
        std::fs::write(root.join(name), name).unwrap();
    }
    let (checkpoints, session) = setup(root, CheckpointConfig::default()).await;
    let mut turn = 0;
    let mut record = async || {
        turn += 1;
        (turn, checkpoints.record(&session, turn, root).await.unwrap())
    };
    let (first, _) = record().await;
    let (_, same) = record().await;
    assert!(same.unchanged && same.hashed == 0, "{same:?}");
    // A rename: as many paths, one of them another.
    std::fs::rename(root.join("a/z"), root.join("a/z2")).unwrap();
    let (_, renamed) = record().await;
    assert!(!renamed.unchanged, "a rename is a change: {renamed:?}");
    // A mode.
    std::fs::set_permissions(root.join("x"), std::fs::Permissions::from_mode(0o600)).unwrap();
    let (_, chmodded) = record().await;
    assert!(!chmodded.unchanged, "a mode is a change: {chmodded:?}");
    // A directory swapped for a file of the same name.
    std::fs::remove_dir_all(root.join("a/b")).unwrap();
    std::fs::write(root.join("a/b"), "now a file").unwrap();
    std::fs::write(root.join("a/v"), "one more, as the swap removed one").unwrap();
    let (_, swapped) = record().await;
    assert!(!swapped.unchanged, "{swapped:?}");

    let report = checkpoints.restore(&session, first, root).await.unwrap();
    assert!(report.leftovers.is_empty(), "{:?}", report.leftovers);
    assert_eq!(std::fs::read_to_string(root.join("a/z")).unwrap(), "a/z");
    assert!(!root.join("a/z2").exists() && !root.join("a/v").exists());
    assert_eq!(std::fs::read_to_string(root.join("a/b/w")).unwrap(), "a/b/w");
    assert_eq!(mode(&root.join("x")) & 0o777, 0o644);
}

#[tokio::test]
async fn max_files_holds_across_the_scanning_threads() {
    let ws = tempfile::tempdir().unwrap();
    let root = ws.path();
    for d in 0..20 {
        std::fs::create_dir(root.join(format!("d{d}"))).unwrap();
        for f in 0..30 {
            std::fs::write(root.join(format!("d{d}/f{f}")), "x").unwrap();
        }
    }
    // 20 directories and 600 files: 620 entries.
    let config = |max_files| CheckpointConfig { max_files, ..Default::default() };
    let (checkpoints, session) = setup(root, config(619)).await;
    let err = checkpoints.record(&session, 1, root).await.unwrap_err();
    assert!(matches!(err, CheckpointError::TooManyFiles { limit: 619 }), "{err}");
    let (checkpoints, session) = setup(root, config(620)).await;
    let stats = checkpoints.record(&session, 1, root).await.unwrap();
    assert_eq!(stats.entries, 620);
}
