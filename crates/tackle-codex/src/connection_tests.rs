use std::time::Duration;

use serde_json::json;
use tokio::io::AsyncWriteExt;

use super::*;

async fn write(peer: &mut (impl AsyncWrite + Unpin), line: &str) {
    peer.write_all(format!("{line}\n").as_bytes()).await.unwrap();
    peer.flush().await.unwrap();
}

#[tokio::test]
async fn requests_get_their_answers_and_errors_are_typed() {
    let (conn, _inbound, mut from_client, mut to_client) = in_memory(Duration::from_secs(5));
    let c = conn.clone();
    let call = tokio::spawn(async move { c.request("thread/start", json!({"cwd": "/w"})).await });
    let sent = read_peer(&mut from_client).await;
    assert_eq!(sent["method"], "thread/start");
    assert!(sent.get("jsonrpc").is_none());
    write(&mut to_client, &format!(r#"{{"id":{},"result":{{"thread":{{"id":"t"}}}}}}"#, sent["id"])).await;
    assert_eq!(call.await.unwrap().unwrap()["thread"]["id"], "t");

    let c = conn.clone();
    let call = tokio::spawn(async move { c.request("thread/definitelyNot", json!({})).await });
    let sent = read_peer(&mut from_client).await;
    write(
        &mut to_client,
        &format!(
            r#"{{"id":{},"error":{{"code":-32600,"message":"Invalid request: unknown variant"}}}}"#,
            sent["id"]
        ),
    )
    .await;
    let err = call.await.unwrap().unwrap_err();
    assert!(
        matches!(err, CodexError::Rejected { code: -32600, ref method, .. } if method == "thread/definitelyNot")
    );
}

#[tokio::test]
async fn a_malformed_line_fails_the_waiting_request_and_closes_the_connection() {
    let (conn, mut inbound, mut from_client, mut to_client) = in_memory(Duration::from_secs(30));
    let c = conn.clone();
    let call = tokio::spawn(async move { c.request("turn/start", json!({})).await });
    let _ = read_peer(&mut from_client).await;
    write(&mut to_client, "this is not json").await;
    let err = tokio::time::timeout(Duration::from_secs(5), call).await.unwrap().unwrap().unwrap_err();
    assert!(
        matches!(err, CodexError::Malformed { ref excerpt, .. } if excerpt == "this is not json"),
        "{err:?}"
    );
    assert!(conn.is_closed());
    let Some(Inbound::Closed(e)) = inbound.recv().await else { panic!("no close event") };
    assert_eq!(e, err);
    // Later requests fail at once with the same reason.
    assert_eq!(conn.request("turn/start", json!({})).await.unwrap_err(), err);
}

#[tokio::test]
async fn the_peer_closing_mid_request_is_an_exit_not_a_hang() {
    let (conn, _inbound, mut from_client, to_client) = in_memory(Duration::from_secs(30));
    let c = conn.clone();
    let call = tokio::spawn(async move { c.request("turn/start", json!({})).await });
    let _ = read_peer(&mut from_client).await;
    drop(to_client);
    let err = tokio::time::timeout(Duration::from_secs(5), call).await.unwrap().unwrap().unwrap_err();
    assert!(matches!(err, CodexError::Exited { .. }), "{err:?}");
}

#[tokio::test]
async fn an_unanswered_request_times_out() {
    let (conn, _inbound, _from_client, _to_client) = in_memory(Duration::from_millis(100));
    let err = conn.request("thread/start", json!({})).await.unwrap_err();
    assert_eq!(err, CodexError::Timeout { method: "thread/start".into(), secs: 0 });
    assert!(!conn.is_closed(), "a slow answer does not break the connection");
}

#[tokio::test]
async fn server_requests_dropped_unanswered_are_answered_with_an_error() {
    let (_conn, mut inbound, mut from_client, mut to_client) = in_memory(Duration::from_secs(5));
    write(&mut to_client, r#"{"id":0,"method":"item/tool/call","params":{"threadId":"t","callId":"c1"}}"#)
        .await;
    write(&mut to_client, r#"{"id":"s-1","method":"account/chatgptAuthTokens/refresh","params":{}}"#).await;
    let Some(Inbound::Request(first)) = inbound.recv().await else { panic!() };
    assert_eq!(first.method, "item/tool/call");
    first.respond(json!({"contentItems": [], "success": true})).unwrap();
    assert_eq!(
        read_peer(&mut from_client).await,
        json!({"id": 0, "result": {"contentItems": [], "success": true}})
    );
    let Some(Inbound::Request(second)) = inbound.recv().await else { panic!() };
    drop(second);
    let answer = read_peer(&mut from_client).await;
    assert_eq!(answer["id"], "s-1");
    assert_eq!(answer["error"]["code"], rpc::INTERNAL_ERROR);
}

#[tokio::test]
async fn overlong_lines_close_the_connection() {
    let (conn, _inbound, _from_client, mut to_client) = in_memory(Duration::from_secs(5));
    let c = conn.clone();
    let writer = tokio::spawn(async move {
        let chunk = vec![b'x'; 1 << 20];
        for _ in 0..=(MAX_LINE >> 20) {
            if to_client.write_all(&chunk).await.is_err() {
                break;
            }
        }
    });
    tokio::time::timeout(Duration::from_secs(30), c.closed()).await.unwrap();
    assert!(matches!(conn.close_reason(), Some(CodexError::Malformed { .. })));
    writer.abort();
}

#[test]
fn the_child_gets_no_secrets_but_what_is_passed() {
    let inherited = [
        ("PATH", "/bin"),
        ("OPENAI_API_KEY", "sk"),
        ("GITHUB_TOKEN", "t"),
        ("CODEX_HOME", "/old"),
        ("DATABASE_URL", "postgres://app:pw@db/app"),
    ]
    .map(|(k, v)| (std::ffi::OsString::from(k), std::ffi::OsString::from(v)));
    let config = CodexConfig {
        pass_env: vec!["OPENAI_API_KEY".into()],
        home: Some("/new".into()),
        ..CodexConfig::default()
    };
    let env = child_env(inherited, &config);
    let names: Vec<_> = env.iter().map(|(k, _)| k.to_str().unwrap()).collect();
    assert_eq!(names, ["PATH", "OPENAI_API_KEY"]);
    // Without a configured home, the inherited one is Codex's login.
    let config = CodexConfig { home: None, ..config };
    let inherited = [("CODEX_HOME", "/old"), ("DATABASE_URL", "postgres://app:pw@db/app")]
        .map(|(k, v)| (std::ffi::OsString::from(k), std::ffi::OsString::from(v)));
    let names: Vec<_> = child_env(inherited, &config).into_iter().map(|(k, _)| k).collect();
    assert_eq!(names, ["CODEX_HOME"]);
}
