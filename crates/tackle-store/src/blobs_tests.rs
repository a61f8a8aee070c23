use std::sync::mpsc;
use std::time::Duration;

use crate::{NewBlob, NewSession, Store};

/// A reader that, after its first piece, waits until another task of the runtime has run: read
/// on the runtime's only worker it would wait for ever (the guard below turns that into an error).
struct Gated {
    left: Vec<u8>,
    reading: Option<tokio::sync::oneshot::Sender<()>>,
    go: mpsc::Receiver<()>,
}

impl std::io::Read for Gated {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if let Some(reading) = self.reading.take() {
            let _ = reading.send(());
            // Only a guard against hanging the test when the read runs on the runtime thread.
            self.go.recv_timeout(Duration::from_secs(60)).map_err(std::io::Error::other)?;
        }
        let n = buf.len().min(self.left.len());
        buf[..n].copy_from_slice(&self.left[..n]);
        self.left.drain(..n);
        Ok(n)
    }
}

#[test]
fn a_large_blob_write_leaves_the_runtime_free() {
    // One worker: while the output is being read and written, the other task must still run (it
    // is what lets the reader go on).
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    runtime.block_on(async {
        let store = Store::open_in_memory().await.unwrap();
        let s =
            store.sessions().create(NewSession { owner: "u".into(), ..Default::default() }).await.unwrap();
        let bytes: Vec<u8> = (0..200_000u32).flat_map(|i| format!("line {i}\n").into_bytes()).collect();
        let (reading, started) = tokio::sync::oneshot::channel();
        let (go, gate) = mpsc::channel();
        let reader = Gated { left: bytes.clone(), reading: Some(reading), go: gate };
        let ttl = Duration::from_secs(60);
        let writer = store.clone();
        let id = s.id.clone();
        let write = tokio::spawn(async move { writer.blobs().put_from(&id, "t", "c", ttl, reader).await });
        let other = tokio::spawn(async move {
            if started.await.is_ok() {
                let _ = go.send(());
            }
        });
        let meta = write.await.unwrap().expect("the write finished while the runtime ran the other task");
        other.await.unwrap();
        assert_eq!(store.blobs().get(&s.id, &meta.locator).await.unwrap().data, bytes);

        // The same bytes from memory (compressed and written off the runtime thread too).
        let whole =
            store.blobs().put(&s.id, NewBlob { tool: "t", call_id: "c", bytes: &bytes, ttl }).await.unwrap();
        assert_eq!(whole.digest, meta.digest);
    });
}

/// Counts the readers being read at once; each waits, after its first piece, until one more
/// reader than the limit is being read (which must never happen) or a while has passed.
struct Counted {
    left: Vec<u8>,
    started: bool,
    seen: std::sync::Arc<Overlap>,
}

#[derive(Default)]
struct Overlap {
    state: std::sync::Mutex<(usize, usize)>,
    changed: std::sync::Condvar,
}

impl std::io::Read for Counted {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if !self.started {
            self.started = true;
            let mut state = self.seen.state.lock().unwrap();
            state.0 += 1;
            state.1 = state.1.max(state.0);
            self.seen.changed.notify_all();
            let limit = super::frames::cores();
            // Waiting on the event, bounded so the test ends when the limit holds.
            let (state, _) = self
                .seen
                .changed
                .wait_timeout_while(state, Duration::from_millis(300), |s| s.1 <= limit)
                .unwrap();
            drop(state);
        }
        let n = buf.len().min(self.left.len());
        buf[..n].copy_from_slice(&self.left[..n]);
        self.left.drain(..n);
        if self.left.is_empty() && n == 0 {
            self.seen.state.lock().unwrap().0 -= 1;
        }
        Ok(n)
    }
}

#[test]
fn big_outputs_are_packed_at_most_one_per_core_at_once() {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    runtime.block_on(async {
        let store = Store::open_in_memory().await.unwrap();
        let s =
            store.sessions().create(NewSession { owner: "u".into(), ..Default::default() }).await.unwrap();
        let seen = std::sync::Arc::new(Overlap::default());
        let bytes: Vec<u8> = (0..50_000u32).flat_map(|i| format!("line {i}\n").into_bytes()).collect();
        let writes: Vec<_> = (0..8)
            .map(|i| {
                let (store, id, seen) = (store.clone(), s.id.clone(), seen.clone());
                let reader = Counted { left: bytes.clone(), started: false, seen };
                let call = format!("c{i}");
                tokio::spawn(async move {
                    store.blobs().put_from(&id, "t", &call, Duration::from_secs(60), reader).await
                })
            })
            .collect();
        for write in writes {
            let meta = write.await.unwrap().unwrap();
            assert_eq!(store.blobs().get(&s.id, &meta.locator).await.unwrap().data, bytes);
        }
        let (open, most) = *seen.state.lock().unwrap();
        assert_eq!(open, 0, "every reader was read to its end");
        assert!(
            most <= super::frames::cores(),
            "{most} outputs were packed at once on {} cores",
            super::frames::cores()
        );
    });
}
