//! Offloading 1 MB of tool output and restoring it, with where the time goes.
//!
//! `cargo bench -p tackle-store --bench blobs`
//!
//! The output is the build log of the context-economy benchmark (1 MB of short lines). Each
//! figure is the median of 50 rounds on a store on disk.

use std::time::{Duration, Instant};

use tackle_store::{NewBlob, NewSession, Store};

const ROUNDS: usize = 50;

fn megabyte() -> String {
    let mut out = String::new();
    for i in 0.. {
        let line = format!("{i:>8} build step {i}: compiled crate_{i} in {}ms\n", i % 997);
        if out.len() + line.len() > 1 << 20 {
            break;
        }
        out.push_str(&line);
    }
    out
}

fn median(mut xs: Vec<Duration>) -> Duration {
    xs.sort();
    xs[xs.len() / 2]
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1000.0)
}

fn time<T>(mut f: impl FnMut() -> T) -> Duration {
    median(
        (0..ROUNDS)
            .map(|_| {
                let t = Instant::now();
                std::hint::black_box(f());
                t.elapsed()
            })
            .collect(),
    )
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("bench.db")).await.unwrap();
    let session = store
        .sessions()
        .create(NewSession {
            owner: "local".into(),
            title: "bench".into(),
            provider: "fake".into(),
            model: "m".into(),
            workspace: "/tmp".into(),
            metadata: serde_json::Value::Null,
        })
        .await
        .unwrap();
    let output = megabyte();
    let bytes = output.as_bytes();

    let (mut puts, mut gets, mut both) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..ROUNDS {
        let call_id = format!("call_{i}");
        let t = Instant::now();
        let new = NewBlob { tool: "shell", call_id: &call_id, bytes, ttl: Duration::from_secs(3600) };
        let meta = store.blobs().put(&session.id, new).await.unwrap();
        let put = t.elapsed();
        let t2 = Instant::now();
        let blob = store.blobs().get(&session.id, &meta.locator).await.unwrap();
        let get = t2.elapsed();
        assert_eq!(blob.data, bytes);
        puts.push(put);
        gets.push(get);
        both.push(put + get);
    }
    println!("offload + restore of {} KB: median {}", bytes.len() / 1024, ms(median(both)));
    println!("  put_blob (hash + compress + INSERT): {}", ms(median(puts)));
    println!("  get_blob (SELECT + decompress + verify): {}", ms(median(gets)));
    println!("  blake3 of 1 MB: {}", ms(time(|| blake3::hash(bytes))));
    for level in [-5, -1, 1, 3] {
        let c = zstd::bulk::compress(bytes, level).unwrap();
        println!(
            "  zstd level {level}, one frame, one thread: compress {}, decompress {} ({} KB)",
            ms(time(|| zstd::bulk::compress(bytes, level).unwrap())),
            ms(time(|| zstd::bulk::decompress(&c, bytes.len()).unwrap())),
            c.len() / 1024
        );
    }
}
