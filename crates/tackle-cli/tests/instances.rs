//! Two real `tackle serve` processes on one PostgreSQL database, the way a team runs them behind
//! a load balancer: a session created on A continues on B; a turn running on A is busy on B; an
//! approval posted to B resumes the call waiting on A; a cancel posted to B stops A's turn; an
//! SSE client that lost A reconnects to B with `Last-Event-ID` and gets every missed event once;
//! when A stops answering mid-call (frozen, as a hung or partitioned host is), B takes the
//! session over once A's lease has expired; when A is killed, B takes it over at once (the
//! process is known to be gone). Either way the open call is answered `interrupted`, never run
//! twice, and nothing committed is lost.

use std::io::BufRead;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use futures::StreamExt;
use serde_json::{Value, json};
use tackle_testkit::{FakeModel, Script, Turn, peers, postgres};

const BIN: &str = env!("CARGO_BIN_EXE_tackle");
const TOKEN: &str = "alice-token-0123456789abcdef";
const LEASE_SECS: u64 = 3;

struct Instance {
    child: Child,
    base: String,
}

impl Instance {
    fn start(name: &str, home: &Path, ws: &Path, fake: &FakeModel, database: &str) -> Self {
        Self::start_with_hooks(name, home, ws, fake, database, r#"[{"tools": "shell", "action": "confirm"}]"#)
    }

    fn start_with_hooks(
        name: &str,
        home: &Path,
        ws: &Path,
        fake: &FakeModel,
        database: &str,
        hooks: &str,
    ) -> Self {
        let mut cmd = Command::new(BIN);
        cmd.env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", home.join(name))
            .env("XDG_CONFIG_HOME", home.join(name).join("config"))
            .env("TACKLE_HOME", home.join(name).join("data"))
            .env("TACKLE_DATABASE_URL", database)
            .env("TACKLE_PROVIDER", "openai")
            .env("TACKLE_MODEL", "gpt-test")
            .env("OPENAI_API_KEY", "sk-test")
            .env("OPENAI_BASE_URL", format!("{}/v1", fake.base_url()))
            .env("TACKLE_SERVER_TOKENS", format!("alice:{TOKEN}"))
            .env("TACKLE_SERVER_LEASE_SECS", LEASE_SECS.to_string())
            .env("TACKLE_HOOKS", hooks)
            .args(["serve", "--bind", "127.0.0.1:0", "--workspace"])
            .arg(ws)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        let mut child = cmd.spawn().unwrap();
        let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
        let mut first = String::new();
        stdout.read_line(&mut first).unwrap();
        let base = first
            .trim()
            .strip_prefix("tackle serving on ")
            .unwrap_or_else(|| panic!("{name}: {first}"))
            .to_owned();
        Self { child, base }
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    fn signal(&self, signal: &str) {
        let status = Command::new("kill").args([signal, &self.child.id().to_string()]).status().unwrap();
        assert!(status.success());
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One SSE event.
#[derive(Debug, Clone, PartialEq)]
struct Sse {
    id: i64,
    name: String,
    data: Value,
}

/// Reads SSE events from `response` until `stop` says so (inclusive) or the stream ends.
async fn read_events(response: reqwest::Response, stop: impl Fn(&Sse) -> bool) -> Vec<Sse> {
    SseReader::new(response).until(stop).await
}

/// An SSE stream read in parts.
struct SseReader {
    body: futures::stream::BoxStream<'static, reqwest::Result<Vec<u8>>>,
    buffer: String,
}

impl SseReader {
    fn new(response: reqwest::Response) -> Self {
        assert_eq!(response.status(), 200);
        let body = response.bytes_stream().map(|chunk| chunk.map(|b| b.to_vec())).boxed();
        Self { body, buffer: String::new() }
    }

    /// The next events, until `stop` says so (inclusive) or the stream ends.
    async fn until(&mut self, stop: impl Fn(&Sse) -> bool) -> Vec<Sse> {
        let mut events = Vec::new();
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            while let Some(end) = self.buffer.find("\n\n") {
                let block: String = self.buffer.drain(..end + 2).collect();
                let (mut id, mut name, mut data) = (None, None, String::new());
                for line in block.lines() {
                    if let Some(v) = line.strip_prefix("id:") {
                        id = Some(v.trim().parse::<i64>().unwrap());
                    } else if let Some(v) = line.strip_prefix("event:") {
                        name = Some(v.trim().to_owned());
                    } else if let Some(v) = line.strip_prefix("data:") {
                        data.push_str(v.trim_start());
                    }
                }
                let (Some(id), Some(name)) = (id, name) else { continue }; // a heartbeat
                let event = Sse { id, name, data: serde_json::from_str(&data).unwrap() };
                let done = stop(&event);
                events.push(event);
                if done {
                    return events;
                }
            }
            let next = tokio::time::timeout_at(deadline.into(), self.body.next()).await;
            let next = next.unwrap_or_else(|_| panic!("events in time; so far: {events:?}"));
            match next {
                Some(chunk) => self.buffer.push_str(&String::from_utf8_lossy(&chunk.unwrap())),
                None => return events,
            }
        }
    }
}

async fn post(client: &reqwest::Client, url: String, body: Value) -> reqwest::Response {
    client.post(url).bearer_auth(TOKEN).json(&body).send().await.unwrap()
}

async fn get(client: &reqwest::Client, url: String) -> Value {
    let r = client.get(url).bearer_auth(TOKEN).send().await.unwrap();
    assert_eq!(r.status(), 200);
    r.json().await.unwrap()
}

/// Polls `url` on an instance until its approvals list has one; returns its id.
async fn pending_approval(client: &reqwest::Client, instance: &Instance, session: &str) -> String {
    for _ in 0..200 {
        let list = get(client, instance.url(&format!("/v1/sessions/{session}/approvals"))).await;
        if let Some(a) = list["approvals"].as_array().and_then(|a| a.first()) {
            return a["id"].as_str().unwrap().to_owned();
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("no approval became visible on {}", instance.base);
}

/// Waits until the shell call has created `path` (the call is running), polling the file.
async fn file_appears(path: &Path) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !path.exists() {
        assert!(Instant::now() < deadline, "the call never started: no {}", path.display());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn shell(command: &str) -> String {
    json!({"command": command}).to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_instances_share_sessions_turns_approvals_cancels_and_streams() {
    let Some(database) = peers::or_skip(postgres::fresh_database().await) else { return };
    let home = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    let fake = FakeModel::start(Script::new(vec![
        // 1: A's first turn, B's second.
        Turn::text("first answer"),
        Turn::text("second answer"),
        // 2: a call waiting for approval on A, approved on B; the stream is resumed on B.
        Turn::call("shell", shell("echo once >> marker.txt")),
        Turn::text("appended"),
        // 3: a call waiting on A, cancelled on B.
        Turn::call("shell", shell("echo twice >> marker.txt")),
        // 4: a call running on A when A stops answering; B takes over.
        Turn::call("shell", shell("touch running-4; sleep 120")),
        Turn::text("recovered"),
        // 5: a call running on a restarted A when it is killed; B takes over at once.
        Turn::call("shell", shell("touch running-5; sleep 121")),
        Turn::text("recovered again"),
    ]))
    .await
    .unwrap();
    let a = Instance::start("a", home.path(), ws.path(), &fake, &database);
    let b = Instance::start("b", home.path(), ws.path(), &fake, &database);
    let client = reqwest::Client::new();

    // 1. A session created on A continues on B, with A's turn in its history.
    let session: Value = post(&client, a.url("/v1/sessions"), json!({})).await.json().await.unwrap();
    let id = session["id"].as_str().unwrap().to_owned();
    let turn: Value = post(
        &client,
        a.url(&format!("/v1/sessions/{id}/messages")),
        json!({"message": "hi", "stream": false}),
    )
    .await
    .json()
    .await
    .unwrap();
    assert_eq!(turn["text"], "first answer", "{turn}");
    let turn: Value = post(
        &client,
        b.url(&format!("/v1/sessions/{id}/messages")),
        json!({"message": "and now?", "stream": false}),
    )
    .await
    .json()
    .await
    .unwrap();
    assert_eq!(turn["text"], "second answer", "{turn}");
    let last = fake.requests().last().unwrap().body.to_string();
    assert!(last.contains("first answer") && last.contains("and now?"), "B sent A's turn: {last}");

    // 2. A turn on A waits for approval: busy on B; approved on B; its stream resumed on B.
    let stream =
        post(&client, a.url(&format!("/v1/sessions/{id}/messages")), json!({"message": "append once"})).await;
    let seen = read_events(stream, |e| e.name == "approval_requested").await;
    let last_seen = seen.last().unwrap().id;
    // The connection to A is gone now (the client left); the turn goes on.
    let busy = post(
        &client,
        b.url(&format!("/v1/sessions/{id}/messages")),
        json!({"message": "x", "stream": false}),
    )
    .await;
    assert_eq!(busy.status(), 409, "a turn running on A is busy on B");
    let approval = pending_approval(&client, &b, &id).await;
    assert_eq!(
        seen.last().unwrap().data["approval_id"],
        approval.as_str(),
        "B lists the approval A streamed"
    );
    let decided = post(&client, b.url(&format!("/v1/approvals/{approval}")), json!({"approve": true})).await;
    assert_eq!(decided.status(), 200);
    let resumed = client
        .get(b.url(&format!("/v1/sessions/{id}/events")))
        .bearer_auth(TOKEN)
        .header("Last-Event-ID", last_seen.to_string())
        .send()
        .await
        .unwrap();
    let rest = read_events(resumed, |e| e.name == "turn_finished").await;
    let ids: Vec<i64> = seen.iter().chain(&rest).map(|e| e.id).collect();
    let first = ids[0];
    assert_eq!(ids, (first..first + ids.len() as i64).collect::<Vec<_>>(), "every event once, in order");
    let names: Vec<&str> = rest.iter().map(|e| e.name.as_str()).collect();
    assert!(names.contains(&"tool_result") && names.last() == Some(&"turn_finished"), "{names:?}");
    assert_eq!(rest.last().unwrap().data["reason"], "completed", "{:?}", rest.last());
    // The whole turn replays from B too, identical to what A streamed.
    let all =
        client.get(b.url(&format!("/v1/sessions/{id}/events"))).bearer_auth(TOKEN).send().await.unwrap();
    let all = read_events(all, |e| e.name == "turn_finished").await;
    assert_eq!(all, seen.iter().chain(&rest).cloned().collect::<Vec<_>>());
    assert_eq!(std::fs::read_to_string(ws.path().join("marker.txt")).unwrap(), "once\n");

    // 3. A cancel posted to B stops the turn waiting on A.
    let waiting = tokio::spawn({
        let client = client.clone();
        let url = a.url(&format!("/v1/sessions/{id}/messages"));
        async move {
            post(&client, url, json!({"message": "append twice", "stream": false}))
                .await
                .json::<Value>()
                .await
                .unwrap()
        }
    });
    pending_approval(&client, &b, &id).await;
    let cancelled: Value =
        post(&client, b.url(&format!("/v1/sessions/{id}/cancel")), json!({})).await.json().await.unwrap();
    assert_eq!(cancelled["cancelled"], true);
    let outcome =
        tokio::time::timeout(Duration::from_secs(10), waiting).await.expect("A's turn stopped").unwrap();
    assert_eq!(outcome["end"], "cancelled", "{outcome}");
    // Its replay, on either instance, ends with its last event (the stream closes).
    for instance in [&a, &b] {
        let replay = client
            .get(instance.url(&format!("/v1/sessions/{id}/events")))
            .bearer_auth(TOKEN)
            .send()
            .await
            .unwrap();
        let replay = SseReader::new(replay).until(|_| false).await;
        let last = replay.last().unwrap();
        assert_eq!(
            (last.name.as_str(), &last.data["reason"]),
            ("turn_finished", &json!("cancelled")),
            "{replay:?}"
        );
    }
    assert_eq!(
        std::fs::read_to_string(ws.path().join("marker.txt")).unwrap(),
        "once\n",
        "the cancelled call never ran"
    );

    // 4. A stops answering in the middle of a call: B is busy until A's lease expires, then
    // takes the session over; the open call is answered `interrupted`, and never run again.
    let stream =
        post(&client, a.url(&format!("/v1/sessions/{id}/messages")), json!({"message": "sleep"})).await;
    let approval = pending_approval(&client, &b, &id).await;
    assert_eq!(
        post(&client, b.url(&format!("/v1/approvals/{approval}")), json!({"approve": true})).await.status(),
        200
    );
    // The call starts on A once the decision reached it (A's coordinator polls every 200 ms).
    let started = read_events(stream, |e| e.name == "approval_resolved").await;
    assert_eq!(started.last().unwrap().data["approved"], true, "{started:?}");
    file_appears(&ws.path().join("running-4")).await;
    a.signal("-STOP");
    let frozen = Instant::now();
    let busy = post(
        &client,
        b.url(&format!("/v1/sessions/{id}/messages")),
        json!({"message": "x", "stream": false}),
    )
    .await;
    assert_eq!(busy.status(), 409, "A's lease is still live");
    let requests_before = fake.requests().len();
    let taken = loop {
        let r = post(
            &client,
            b.url(&format!("/v1/sessions/{id}/messages")),
            json!({"message": "go on", "stream": false}),
        )
        .await;
        if r.status() != 409 {
            break r;
        }
        assert!(frozen.elapsed() < Duration::from_secs(LEASE_SECS * 5), "B never took the session over");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert!(
        // A renews every third of the lease (on a 200 ms tick), so its last renewal was at most
        // about 1.2 s before the freeze, and the lease ran at least the rest of it.
        frozen.elapsed() >= Duration::from_secs(LEASE_SECS) / 2,
        "taken over before the lease expired"
    );
    a.signal("-KILL");
    let turn: Value = taken.json().await.unwrap();
    assert_eq!(turn["text"], "recovered", "{turn}");
    assert_eq!(fake.requests().len(), requests_before + 1, "B's turn made one model call");
    let last = fake.requests().last().unwrap().body.to_string();
    assert!(last.contains("interrupted"), "the open call was answered interrupted: {last}");

    // 5. On the same host (and PID namespace), a killed instance's process is known to be gone:
    // B takes its session over at once, without waiting for the lease.
    let a2 = Instance::start("a2", home.path(), ws.path(), &fake, &database);
    let stream =
        post(&client, a2.url(&format!("/v1/sessions/{id}/messages")), json!({"message": "sleep again"}))
            .await;
    let approval = pending_approval(&client, &b, &id).await;
    assert_eq!(
        post(&client, b.url(&format!("/v1/approvals/{approval}")), json!({"approve": true})).await.status(),
        200
    );
    read_events(stream, |e| e.name == "approval_resolved").await;
    file_appears(&ws.path().join("running-5")).await;
    a2.signal("-KILL");
    let killed = Instant::now();
    let mut a2 = a2;
    let _ = a2.child.wait();
    let turn: Value = loop {
        let r = post(
            &client,
            b.url(&format!("/v1/sessions/{id}/messages")),
            json!({"message": "go on again", "stream": false}),
        )
        .await;
        if r.status() != 409 {
            break r.json().await.unwrap();
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(killed.elapsed() < Duration::from_secs(LEASE_SECS), "taken over before the lease could expire");
    assert_eq!(turn["text"], "recovered again", "{turn}");
    let last = fake.requests().last().unwrap().body.to_string();
    assert!(last.contains("interrupted"), "the killed call was answered interrupted: {last}");
}

/// [fenced-turns] A stalled instance is fenced. A 10-step turn runs on A; A is stopped (SIGSTOP,
/// as a long pause, a frozen VM or a partition would); once A's lease has expired by the
/// database's clock, B takes the session over and runs "continue" to its final answer; then A
/// is continued. A's turn stops at its next write: nothing of it lands after B's turn, no call id
/// repeats, every call's side effect happened at most once, and A's client is told why.
async fn a_stalled_instance_is_fenced(database: &str, home: &Path) {
    let ws = tempfile::tempdir().unwrap();
    const STEPS: usize = 9;
    let mut turns: Vec<Turn> = (0..STEPS)
        .map(|k| Turn::call("shell", shell(&format!("echo {k} >> steps.txt; sleep 0.4"))))
        .collect();
    turns.push(Turn::text("counted"));
    // Stateless: a request carrying k tool results gets turn k, whichever instance sends it.
    let fake = FakeModel::start(Script::stateless(turns)).await.unwrap();
    let run = r#"[{"tools": "shell", "action": "log"}]"#;
    let a = Instance::start_with_hooks("a", home, ws.path(), &fake, database, run);
    let b = Instance::start_with_hooks("b", home, ws.path(), &fake, database, run);
    let client = reqwest::Client::new();
    let session: Value = post(&client, a.url("/v1/sessions"), json!({})).await.json().await.unwrap();
    let id = session["id"].as_str().unwrap().to_owned();

    // A's turn reaches its third call; B's replay shows that A stored every event so far, so
    // A is stopped while its call sleeps, between two writes.
    let stream = post(
        &client,
        a.url(&format!("/v1/sessions/{id}/messages")),
        json!({"message": "count", "maxSteps": 12}),
    )
    .await;
    let third = |e: &Sse| {
        e.name == "tool_call" && e.data["args"]["command"].as_str().is_some_and(|c| c.starts_with("echo 2"))
    };
    let mut stream = SseReader::new(stream);
    let mut a_events = stream.until(third).await;
    let stored =
        client.get(b.url(&format!("/v1/sessions/{id}/events"))).bearer_auth(TOKEN).send().await.unwrap();
    let stored = read_events(stored, third).await;
    assert_eq!(stored.last().map(|e| e.id), a_events.last().map(|e| e.id), "A stored its events");
    a.signal("-STOP");

    // B: busy while A's lease is live, then it takes the session over and finishes the count.
    let frozen = Instant::now();
    let continued = loop {
        let r = post(
            &client,
            b.url(&format!("/v1/sessions/{id}/messages")),
            json!({"message": "continue", "stream": false, "maxSteps": 12}),
        )
        .await;
        if r.status() != 409 {
            break r;
        }
        assert!(frozen.elapsed() < Duration::from_secs(LEASE_SECS * 5), "B never took the session over");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(continued.status(), 200);
    let continued: Value = continued.json().await.unwrap();
    assert_eq!(continued["text"], "counted", "{continued}");
    assert_eq!(continued["end"], "completed", "{continued}");
    let after_b = get(&client, b.url(&format!("/v1/sessions/{id}"))).await;

    // A wakes up: its turn ends at its next write, and its client is told so.
    a.signal("-CONT");
    a_events.extend(stream.until(|e| e.name == "error" || e.name == "turn_finished").await);
    let last = a_events.last().unwrap();
    assert_eq!(
        (last.name.as_str(), last.data["code"].as_str()),
        ("error", Some("lease_lost")),
        "{a_events:?}"
    );

    // Nothing of A's turn after B's: the conversation is exactly what it was when B finished.
    let session = get(&client, b.url(&format!("/v1/sessions/{id}"))).await;
    assert_eq!(session["messages"], after_b["messages"], "the stalled turn wrote after the takeover");
    assert_eq!(session["status"], "idle", "{session}");
    let messages = session["messages"].as_array().unwrap();
    assert_eq!(messages.last().unwrap()["content"][0]["text"], "counted", "B's answer is the last message");
    // No call id twice, and every call answered once.
    let mut uses = Vec::new();
    let mut results = Vec::new();
    for block in messages.iter().flat_map(|m| m["content"].as_array().unwrap()) {
        match block["type"].as_str() {
            Some("tool_use") => uses.push(block["id"].as_str().unwrap().to_owned()),
            Some("tool_result") => results.push(block["tool_use_id"].as_str().unwrap().to_owned()),
            _ => {}
        }
    }
    let mut unique = uses.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), uses.len(), "a call id repeats: {uses:?}");
    assert_eq!(results, uses, "each call answered once, in order");
    // Every side effect at most once, and B's part of the count complete.
    let steps = std::fs::read_to_string(ws.path().join("steps.txt")).unwrap();
    let lines: Vec<usize> = steps.lines().map(|l| l.parse().unwrap()).collect();
    let mut seen = lines.clone();
    seen.sort();
    seen.dedup();
    assert_eq!(seen.len(), lines.len(), "a call ran twice: {lines:?}");
    assert!(
        lines.windows(2).all(|w| w[0] < w[1]),
        "the stalled turn ran a call after the takeover: {lines:?}"
    );
    assert_eq!(lines.last(), Some(&(STEPS - 1)), "{lines:?}");
    // B's turn replays to its end; A's stale events are not in it.
    let replay =
        client.get(b.url(&format!("/v1/sessions/{id}/events"))).bearer_auth(TOKEN).send().await.unwrap();
    let replay = read_events(replay, |e| e.name == "turn_finished").await;
    assert_eq!(replay.last().unwrap().data["reason"], "completed", "{replay:?}");
    assert!(!replay.iter().any(|e| e.name == "error"), "{replay:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_instance_is_fenced_on_postgres() {
    let Some(database) = peers::or_skip(postgres::fresh_database().await) else { return };
    let home = tempfile::tempdir().unwrap();
    a_stalled_instance_is_fenced(&database, home.path()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_instance_is_fenced_on_sqlite() {
    let home = tempfile::tempdir().unwrap();
    let database = format!("sqlite:{}", home.path().join("shared.db").display());
    a_stalled_instance_is_fenced(&database, home.path()).await;
}
