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
            .env("TACKLE_HOOKS", r#"[{"tools": "shell", "action": "confirm"}]"#)
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
    assert_eq!(response.status(), 200);
    let mut body = response.bytes_stream();
    let mut buffer = String::new();
    let mut events = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    while let Some(chunk) =
        tokio::time::timeout_at(deadline.into(), body.next()).await.expect("events in time")
    {
        buffer.push_str(&String::from_utf8_lossy(&chunk.unwrap()));
        while let Some(end) = buffer.find("\n\n") {
            let block: String = buffer.drain(..end + 2).collect();
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
    }
    events
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
        Turn::call("shell", shell("sleep 120")),
        Turn::text("recovered"),
        // 5: a call running on a restarted A when it is killed; B takes over at once.
        Turn::call("shell", shell("sleep 121")),
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
    tokio::time::sleep(Duration::from_millis(500)).await;
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
    tokio::time::sleep(Duration::from_millis(300)).await;
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
