//! The property behind `tackle rewind`: whatever changes a workspace over several turns — file
//! writes, appends, shell commands writing and moving files, deletions, renames, new and
//! removed directories, permission changes, symbolic links — restoring the checkpoint of any
//! earlier turn gives back that turn's workspace byte for byte: every file's content and mode,
//! every symbolic link's target, every directory (empty ones too). Ignored paths are never
//! touched. Turns are restored in a random order, so restores also start from restored states.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

use proptest::prelude::*;
use tackle_checkpoint::{CheckpointConfig, Checkpoints};
use tackle_store::{NewSession, Store};

/// What a path is, as compared.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Node {
    File { bytes: Vec<u8>, mode: u32 },
    Dir { mode: u32 },
    Link { target: String },
}

/// The whole workspace, ignored `target/` left out.
fn state(root: &Path) -> BTreeMap<String, Node> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, Node>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let entry = entry.unwrap();
            let path = entry.path();
            let rel = path.strip_prefix(root).unwrap().to_string_lossy().into_owned();
            if rel == "target" {
                continue;
            }
            let meta = std::fs::symlink_metadata(&path).unwrap();
            let mode = meta.permissions().mode() & 0o7777;
            if meta.file_type().is_symlink() {
                out.insert(
                    rel,
                    Node::Link { target: std::fs::read_link(&path).unwrap().to_string_lossy().into() },
                );
            } else if meta.is_dir() {
                out.insert(rel, Node::Dir { mode });
                walk(root, &path, out);
            } else {
                out.insert(rel, Node::File { bytes: std::fs::read(&path).unwrap(), mode });
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(root, root, &mut out);
    out
}

const DIRS: [&str; 4] = ["", "src", "src/deep", "docs"];
const NAMES: [&str; 4] = ["a.txt", "b.rs", "c", "notes.md"];
const MODES: [u32; 3] = [0o644, 0o600, 0o755];

/// One change to the workspace.
#[derive(Debug, Clone)]
enum Op {
    /// Write a file (the file tools).
    Write { dir: usize, name: usize, content: Vec<u8> },
    /// Append to a file, through the shell (`printf >>`).
    ShellAppend { dir: usize, name: usize, content: String },
    /// Write through the shell (`printf >`), creating the directory first.
    ShellWrite { dir: usize, name: usize, content: String },
    /// Delete a file or a link (`rm -f`).
    Delete { dir: usize, name: usize },
    /// Rename (`mv`) within or across directories.
    Rename { from_dir: usize, from: usize, to_dir: usize, to: usize },
    /// Remove a directory with everything in it (`rm -rf`).
    RemoveDir { dir: usize },
    /// Make an (empty) directory.
    MakeDir { dir: usize },
    /// Change a file's permissions.
    Chmod { dir: usize, name: usize, mode: usize },
    /// Point a symbolic link somewhere (`ln -sfn`).
    Link { dir: usize, name: usize, target: usize },
    /// Write into the ignored `target/` (a rewind must not touch it).
    Ignored { content: String },
}

fn op() -> impl Strategy<Value = Op> {
    let dir = 0..DIRS.len();
    let name = 0..NAMES.len();
    let text = "[a-z \\n]{0,24}";
    prop_oneof![
        4 => (dir.clone(), name.clone(), prop::collection::vec(any::<u8>(), 0..300)).prop_map(|(dir, name, content)| Op::Write { dir, name, content }),
        2 => (dir.clone(), name.clone(), text).prop_map(|(dir, name, content)| Op::ShellAppend { dir, name, content }),
        2 => (dir.clone(), name.clone(), text).prop_map(|(dir, name, content)| Op::ShellWrite { dir, name, content }),
        2 => (dir.clone(), name.clone()).prop_map(|(dir, name)| Op::Delete { dir, name }),
        2 => (dir.clone(), name.clone(), dir.clone(), name.clone()).prop_map(|(from_dir, from, to_dir, to)| Op::Rename { from_dir, from, to_dir, to }),
        1 => (1..DIRS.len()).prop_map(|dir| Op::RemoveDir { dir }),
        1 => (1..DIRS.len()).prop_map(|dir| Op::MakeDir { dir }),
        1 => (dir.clone(), name.clone(), 0..MODES.len()).prop_map(|(dir, name, mode)| Op::Chmod { dir, name, mode }),
        1 => (dir, name.clone(), name).prop_map(|(dir, name, target)| Op::Link { dir, name, target }),
        1 => text.prop_map(|content| Op::Ignored { content }),
    ]
}

fn rel(dir: usize, name: usize) -> String {
    match DIRS[dir] {
        "" => NAMES[name].to_owned(),
        d => format!("{d}/{}", NAMES[name]),
    }
}

fn sh(root: &Path, script: &str) {
    let status = Command::new("sh").arg("-c").arg(script).current_dir(root).status().unwrap();
    assert!(status.success(), "{script}");
}

/// Quotes for `sh`.
fn q(text: &str) -> String {
    format!("'{}'", text.replace('\'', "'\\''"))
}

fn apply(root: &Path, op: &Op) {
    match op {
        Op::Write { dir, name, content } => {
            let path = root.join(rel(*dir, *name));
            if std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_dir()) {
                return;
            }
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            let _ = std::fs::remove_file(&path);
            std::fs::write(&path, content).unwrap();
        }
        Op::ShellAppend { dir, name, content } | Op::ShellWrite { dir, name, content } => {
            let path = rel(*dir, *name);
            let redirect = if matches!(op, Op::ShellAppend { .. }) { ">>" } else { ">" };
            let parent = DIRS[*dir];
            sh(
                root,
                &format!(
                    "mkdir -p ./{} 2>/dev/null; if [ -d {p} ]; then exit 0; fi; [ -L {p} ] && rm -f {p}; printf %s {} {redirect} {p}",
                    if parent.is_empty() { "." } else { parent },
                    q(content),
                    p = q(&path),
                ),
            );
        }
        Op::Delete { dir, name } => {
            sh(root, &format!("[ -d {p} ] && [ ! -L {p} ] || rm -f {p}", p = q(&rel(*dir, *name))))
        }
        Op::Rename { from_dir, from, to_dir, to } => {
            let (a, b) = (rel(*from_dir, *from), rel(*to_dir, *to));
            if a == b {
                return;
            }
            sh(
                root,
                &format!(
                    "if [ -f {a} ] && [ ! -L {a} ] && [ ! -d {b} ]; then mkdir -p \"$(dirname {b})\" && mv -f {a} {b}; fi",
                    a = q(&a),
                    b = q(&b)
                ),
            );
        }
        Op::RemoveDir { dir } => sh(root, &format!("rm -rf ./{}", DIRS[*dir])),
        Op::MakeDir { dir } => sh(root, &format!("[ -e ./{d} ] || mkdir -p ./{d}", d = DIRS[*dir])),
        Op::Chmod { dir, name, mode } => {
            let path = root.join(rel(*dir, *name));
            if std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_file()) {
                std::fs::set_permissions(&path, std::fs::Permissions::from_mode(MODES[*mode])).unwrap();
            }
        }
        Op::Link { dir, name, target } => {
            let parent = DIRS[*dir];
            sh(
                root,
                &format!(
                    "mkdir -p ./{}; p={}; if [ ! -d \"$p\" ] || [ -L \"$p\" ]; then rm -f \"$p\" && ln -s {} \"$p\"; fi",
                    if parent.is_empty() { "." } else { parent },
                    q(&rel(*dir, *name)),
                    q(NAMES[*target])
                ),
            );
        }
        Op::Ignored { content } => {
            std::fs::create_dir_all(root.join("target/debug")).unwrap();
            std::fs::write(root.join("target/debug/out"), content).unwrap();
        }
    }
}

fn histories() -> impl Strategy<Value = (Vec<Vec<Op>>, Vec<prop::sample::Index>)> {
    (
        prop::collection::vec(prop::collection::vec(op(), 1..8), 2..6),
        prop::collection::vec(any::<prop::sample::Index>(), 1..6),
    )
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 48,
        // A failing case is kept beside this file (`rewind_props.proptest-regressions`) and
        // replayed first from then on.
        failure_persistence: Some(Box::new(prop::test_runner::FileFailurePersistence::WithSource("proptest-regressions"))),
        ..ProptestConfig::default()
    })]

    #[test]
    fn restoring_any_earlier_turn_gives_back_its_workspace_byte_for_byte((turns, order) in histories()) {
        check(&turns, &order, None)?;
    }

    /// The same with the stat cache at work: files are re-read only when their `stat` changed
    /// (a 50 ms racily-clean margin, well above the file system's clock tick, and 60 ms between
    /// a turn's last change and the next checkpoint, so a file written in one turn is trusted
    /// by its `stat` at the next), and restores write on several threads.
    #[test]
    fn the_stat_cache_and_parallel_restores_miss_no_change((turns, order) in histories()) {
        check(&turns, &order, Some(std::time::Duration::from_millis(50)))?;
    }
}

fn check(
    turns: &[Vec<Op>],
    order: &[prop::sample::Index],
    margin: Option<std::time::Duration>,
) -> Result<(), TestCaseError> {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let ws = tempfile::tempdir().unwrap();
        let root = ws.path().canonicalize().unwrap();
        let store = Store::open_in_memory().await.unwrap();
        let session = store
            .sessions()
            .create(NewSession {
                owner: "t".into(),
                title: String::new(),
                provider: "p".into(),
                model: "m".into(),
                workspace: root.display().to_string(),
                metadata: serde_json::Value::Null,
            })
            .await
            .unwrap();
        let mut checkpoints = Checkpoints::new(store, CheckpointConfig::default());
        if let Some(margin) = margin {
            checkpoints = checkpoints.racy_margin(margin).parallel_restore_from(2);
        }
        std::fs::write(root.join("a.txt"), "start\n").unwrap();
        let mut expected = Vec::new();
        for (i, ops) in turns.iter().enumerate() {
            let turn = i as i64 + 1;
            if let Some(margin) = margin {
                tokio::time::sleep(margin + std::time::Duration::from_millis(10)).await;
            }
            checkpoints.record(&session.id, turn, &root).await.unwrap();
            expected.push(state(&root));
            for op in ops {
                apply(&root, op);
            }
        }
        if let Some(margin) = margin {
            // The cache at work: once the last turn's files are past the margin, a checkpoint
            // of the unchanged workspace reads no file.
            let last = turns.len() as i64 + 1;
            tokio::time::sleep(margin + std::time::Duration::from_millis(10)).await;
            checkpoints.record(&session.id, last, &root).await.unwrap();
            let again = checkpoints.record(&session.id, last, &root).await.unwrap();
            prop_assert!(again.unchanged && again.hashed == 0, "{again:?}");
        }
        let ignored = std::fs::read(root.join("target/debug/out")).ok();
        // Every turn, in an order the case chooses, then every turn again from the last.
        let mut visits: Vec<usize> = order.iter().map(|ix| ix.index(expected.len())).collect();
        visits.extend((0..expected.len()).rev());
        for i in visits {
            let report = checkpoints.restore(&session.id, i as i64 + 1, &root).await.unwrap();
            prop_assert!(report.leftovers.is_empty(), "turn {}: {:?}", i + 1, report.leftovers);
            let now = state(&root);
            prop_assert_eq!(&now, &expected[i], "turn {} after restoring it", i + 1);
            prop_assert_eq!(
                std::fs::read(root.join("target/debug/out")).ok(),
                ignored.clone(),
                "ignored paths are never touched"
            );
            // Nothing left to change: a second look finds the workspace as recorded.
            let again = checkpoints.preview(&session.id, i as i64 + 1, &root).await.unwrap();
            prop_assert!(again.is_empty(), "turn {}: {:?}", i + 1, again.changes);
        }
        Ok(())
    })
}
