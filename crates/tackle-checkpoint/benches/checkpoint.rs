//! Checkpoint cost per turn and rewind time on a 10,000-file workspace.
//!
//! `cargo bench -p tackle-checkpoint --bench checkpoint`
//!
//! A workspace of 100 directories of 100 files (1-4 KiB each, 25 MB) plus an ignored `target/`
//! of 2,000 files, a real SQLite store on disk. Measured, after the first checkpoint stored
//! everything and the files' times aged past the racily-clean margin:
//! - a checkpoint when nothing changed (what every turn that changed no file pays), warm (the
//!   previous manifest in memory, as in `tackle chat` and `tackle serve`) and cold (read back
//!   from the store, as in a new `tackle run` process);
//! - a checkpoint after a turn changed 20 files (10 modified, 5 created, 5 deleted);
//! - a rewind of such a turn (its preview included);
//! - a rewind after every file was deleted (10,000 files written back), right away and 11 s
//!   later.
//!
//! Targets (issue 31): checkpoint <= 50 ms when nothing changed, rewind <= 1 s.
//!
//! `TACKLE_BENCH_DIR=DIR`: where the workspace and the store go (ext4 and tmpfs differ).
//! `TACKLE_BENCH_SERIAL_RESTORE=1`: restores write on one thread. `TACKLE_BENCH_WARM_RUNS=N`:
//! N unchanged checkpoints instead of 30 (to profile them).

use std::path::Path;
use std::time::{Duration, Instant};

use tackle_checkpoint::{CheckpointConfig, Checkpoints, RACY_MARGIN};
use tackle_store::{NewSession, Store};

const DIRS: usize = 100;
const FILES_PER_DIR: usize = 100;

fn content(seed: usize, len: usize) -> Vec<u8> {
    let mut x = seed as u64 ^ 0x9e37_79b9_7f4a_7c15;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // Text-like bytes, as source code compresses.
            b"abcdefghijklmnopqrstuvwxyz {}();\n"[(x % 33) as usize]
        })
        .collect()
}

fn build(root: &Path) {
    for d in 0..DIRS {
        let dir = root.join(format!("src/mod{d:03}"));
        std::fs::create_dir_all(&dir).unwrap();
        for f in 0..FILES_PER_DIR {
            let n = d * FILES_PER_DIR + f;
            std::fs::write(dir.join(format!("file{f:03}.rs")), content(n, 1024 + (n * 37) % 3072)).unwrap();
        }
    }
    let ignored = root.join("target/debug");
    std::fs::create_dir_all(&ignored).unwrap();
    for i in 0..2000 {
        std::fs::write(ignored.join(format!("obj{i}.o")), content(i, 512)).unwrap();
    }
}

/// A turn's changes: 10 files modified, 5 created, 5 deleted.
fn change(root: &Path, round: usize) {
    for i in 0..10 {
        let d = (round * 7 + i) % DIRS;
        std::fs::write(root.join(format!("src/mod{d:03}/file{i:03}.rs")), content(round * 1000 + i, 2000))
            .unwrap();
    }
    for i in 0..5 {
        std::fs::write(root.join(format!("src/mod{:03}/new{round}_{i}.rs", i)), content(i, 800)).unwrap();
    }
    for i in 0..5 {
        let _ =
            std::fs::remove_file(root.join(format!("src/mod{:03}/file{:03}.rs", 50 + i, 90 + round % 10)));
    }
}

/// CPU time this process used so far (user + system, all threads), from `/proc/self/stat`:
/// on a loaded machine the wall time of a step includes waiting for a core, its CPU time does
/// not (10 ms ticks: read it around many runs).
fn cpu_time() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after_name = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    let ticks: u64 = fields.get(11..13).map_or(0, |f| f.iter().filter_map(|t| t.parse::<u64>().ok()).sum());
    Duration::from_millis(ticks * 10)
}

fn per_run(cpu: Duration, runs: usize) -> String {
    format!("CPU {:.1} ms per run", cpu.as_secs_f64() * 1000.0 / runs as f64)
}

fn stats(mut samples: Vec<Duration>) -> String {
    samples.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let median = samples[samples.len() / 2];
    let p90 = samples[(samples.len() * 9 / 10).min(samples.len() - 1)];
    format!(
        "median {:.1} ms, p90 {:.1} ms, max {:.1} ms ({} runs)",
        ms(median),
        ms(p90),
        ms(*samples.last().unwrap()),
        samples.len()
    )
}

#[tokio::main]
async fn main() {
    let dir =
        tempfile::tempdir_in(std::env::var_os("TACKLE_BENCH_DIR").unwrap_or_else(|| ".".into())).unwrap();
    let root = dir.path().join("ws");
    std::fs::create_dir(&root).unwrap();
    let root = root.canonicalize().unwrap();
    build(&root);
    let db = dir.path().join("tackle.db");
    let store = Store::open(&db).await.unwrap();
    let session = store
        .sessions()
        .create(NewSession {
            owner: "bench".into(),
            title: String::new(),
            provider: "p".into(),
            model: "m".into(),
            workspace: root.display().to_string(),
            metadata: serde_json::Value::Null,
        })
        .await
        .unwrap();
    // TACKLE_BENCH_SERIAL_RESTORE=1: restores write on one thread (for comparison).
    let serial = std::env::var_os("TACKLE_BENCH_SERIAL_RESTORE").is_some();
    let mut checkpoints = Checkpoints::new(store.clone(), CheckpointConfig::default());
    if serial {
        checkpoints = checkpoints.parallel_restore_from(usize::MAX);
    }
    let mut turn = 0i64;
    let mut next = || {
        turn += 1;
        turn
    };

    let first = checkpoints.record(&session.id, next(), &root).await.unwrap();
    println!(
        "first checkpoint (everything new): {:.0} ms, {} entries, {} files hashed, {:.1} MB stored",
        first.duration.as_secs_f64() * 1000.0,
        first.entries,
        first.hashed,
        first.stored_bytes as f64 / 1e6
    );
    // Let every file's times age past the margin, then one checkpoint reads the racy ones again.
    tokio::time::sleep(RACY_MARGIN + Duration::from_millis(200)).await;
    checkpoints.record(&session.id, next(), &root).await.unwrap();

    // TACKLE_BENCH_WARM_RUNS=N: more unchanged checkpoints (to profile them).
    let warm_runs = std::env::var("TACKLE_BENCH_WARM_RUNS").ok().and_then(|n| n.parse().ok()).unwrap_or(30);
    let mut warm = Vec::new();
    let cpu = cpu_time();
    for _ in 0..warm_runs {
        let s = checkpoints.record(&session.id, next(), &root).await.unwrap();
        assert!(s.unchanged && s.hashed == 0, "nothing changed: {s:?}");
        warm.push(s.duration);
    }
    println!("checkpoint, nothing changed, warm: {}; {}", stats(warm), per_run(cpu_time() - cpu, warm_runs));

    let mut cold = Vec::new();
    let cpu = cpu_time();
    for _ in 0..10 {
        let fresh = Checkpoints::new(store.clone(), CheckpointConfig::default());
        let s = fresh.record(&session.id, next(), &root).await.unwrap();
        assert!(s.unchanged && s.hashed == 0, "nothing changed: {s:?}");
        cold.push(s.duration);
    }
    println!(
        "checkpoint, nothing changed, cold (manifest read from the store): {}; {}",
        stats(cold),
        per_run(cpu_time() - cpu, 10)
    );

    let mut changed = Vec::new();
    let mut rewinds = Vec::new();
    let mut previews = Vec::new();
    for round in 0..10 {
        let before = next();
        checkpoints.record(&session.id, before, &root).await.unwrap();
        change(&root, round);
        let s = checkpoints.record(&session.id, next(), &root).await.unwrap();
        changed.push(s.duration);
        let started = Instant::now();
        let plan = checkpoints.preview(&session.id, before, &root).await.unwrap();
        previews.push(started.elapsed());
        assert!(!plan.is_empty());
        let report = checkpoints.restore(&session.id, before, &root).await.unwrap();
        assert!(report.leftovers.is_empty());
        rewinds.push(report.duration);
    }
    println!("checkpoint after a turn changed 20 files: {}", stats(changed));
    println!("rewind preview of such a turn: {}", stats(previews));
    println!("rewind of such a turn (restore, preview included): {}", stats(rewinds));

    let all = next();
    checkpoints.record(&session.id, all, &root).await.unwrap();
    // Once: on ext4 each round of deleting and re-creating 10,000 files makes the next inode
    // allocations slower (the allocator steps around recently deleted inodes).
    std::fs::remove_dir_all(root.join("src")).unwrap();
    let cpu = cpu_time();
    let report = checkpoints.restore(&session.id, all, &root).await.unwrap();
    assert!(report.leftovers.is_empty());
    println!(
        "rewind after deleting every file ({} paths written back, {}): {:.0} ms; {}",
        report.plan.changes.len(),
        if serial { "one thread" } else { "several threads" },
        report.duration.as_secs_f64() * 1000.0,
        per_run(cpu_time() - cpu, 1)
    );
    // The same files written into a new directory (a fork with its files): no recently
    // deleted inodes in the way.
    let cpu = cpu_time();
    let copy = checkpoints.materialize(&session.id, all, &dir.path().join("copy")).await.unwrap();
    assert!(copy.leftovers.is_empty());
    println!(
        "the checkpoint written into a new directory ({} paths): {:.0} ms; {}",
        copy.plan.changes.len(),
        copy.duration.as_secs_f64() * 1000.0,
        per_run(cpu_time() - cpu, 1)
    );
    // The same rewind once the deletions are 11 s old: ext4 mounted without a journal (as
    // here) steps, at every inode allocation, around the inodes deleted in the last 5-10 s
    // (`recently_deleted` in fs/ext4/ialloc.c), which makes the rewind right after deleting
    // everything quadratic in the kernel. A rewind is seldom asked for within seconds of the
    // deletion; this line shows what it costs then.
    std::fs::remove_dir_all(root.join("src")).unwrap();
    tokio::time::sleep(Duration::from_secs(11)).await;
    let cpu = cpu_time();
    let report = checkpoints.restore(&session.id, all, &root).await.unwrap();
    assert!(report.leftovers.is_empty());
    println!(
        "rewind after deleting every file 11 s earlier ({} paths written back): {:.0} ms; {}",
        report.plan.changes.len(),
        report.duration.as_secs_f64() * 1000.0,
        per_run(cpu_time() - cpu, 1)
    );
    let size = std::fs::metadata(&db).map(|m| m.len()).unwrap_or(0)
        + std::fs::metadata(dir.path().join("tackle.db-wal")).map(|m| m.len()).unwrap_or(0);
    println!("store size after {turn} checkpoints: {:.1} MB", size as f64 / 1e6);
}
