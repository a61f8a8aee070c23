//! The web chat page in headless Chromium (found wherever it is by `tackle_testkit::peers`,
//! driven by playwright-core, both installed by scripts/test-deps.sh): a turn with tool cards and approvals, markdown rendered,
//! script in model output inert, a URL per session, rename and delete, the layout at 1280 and
//! 375 px. Screenshots at both widths are written under the target directory (`screens/`), and
//! into docs/screens/ only on request (`TACKLE_UPDATE_SCREENS=1`): the suite leaves the tree as
//! it found it (a screenshot's scroll position depends on timing).

use crate::common;

use std::path::PathBuf;

use axum::http::Method;
use common::Harness;
use serde_json::{Value, json};
use tackle_testkit::{Script, Turn, peers};

/// Model output that tries to run script in the page, and markdown that should render.
const HOSTILE_ANSWER: &str = "## Done\n\nI listed the files, wrote **notes2.md** and counted.\n\n- first\n- second\n\n```sh\nseq 1 40\n```\n\n<script>window.__pwned = 1</script>\n<img src=x onerror=\"window.__pwned = 2\">\n[click](javascript:window.__pwned=3) and [docs](https://example.com/docs)\n";

fn layout_ok(layout: &Value, what: &str) {
    assert_eq!(layout["outside"], json!([]), "{what}: elements outside the viewport: {layout}");
    assert!(
        layout["scrollWidth"].as_f64().unwrap() <= layout["width"].as_f64().unwrap(),
        "{what}: the page scrolls sideways: {layout}"
    );
    let width = layout["width"].as_f64().unwrap();
    let height = layout["height"].as_f64().unwrap();
    // The chat is visible: the log takes most of the screen, the input and Send are on it.
    assert!(layout["log"]["height"].as_f64().unwrap() > height * 0.5, "{what}: {layout}");
    assert!(layout["log"]["width"].as_f64().unwrap() > width.min(800.0) * 0.5, "{what}: {layout}");
    for part in ["input", "send"] {
        let r = &layout[part];
        assert!(
            r["left"].as_f64().unwrap() >= 0.0 && r["right"].as_f64().unwrap() <= width,
            "{what} {part}: {layout}"
        );
        assert!(
            r["top"].as_f64().unwrap() >= 0.0 && r["bottom"].as_f64().unwrap() <= height,
            "{what} {part}: {layout}"
        );
    }
    assert!(layout["input"]["width"].as_f64().unwrap() > 150.0, "{what}: the input is usable: {layout}");
}

#[tokio::test]
async fn the_web_page_renders_markdown_safely_shows_tools_and_approvals_and_fits_a_phone() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let Some(browser) = peers::or_skip(peers::chromium()) else { return };
    let Some(_) = peers::or_skip(peers::npm_package("playwright-core")) else { return };
    let modules = peers::node_modules();
    let mut script = Script::new(vec![
        Turn::text("Let me look around first.").with_call("list_files", r#"{"path":"."}"#),
        Turn::call("write_file", r##"{"path":"notes2.md","content":"# Notes\nline two\n"}"##),
        Turn::call("shell", r#"{"command":"seq 1 40"}"#),
        Turn::call("shell", r#"{"command":"rm -rf ./build"}"#),
        Turn::text(HOSTILE_ANSWER),
    ]);
    // Usage from the simulated prompt cache, so the page has figures to show; a slow first
    // answer, so the waiting indicator can be seen.
    script.simulate_cache = true;
    script.latency_ms = Some(400);
    let h = Harness::new(script).await;
    std::fs::write(h.workspace.path().join("notes.md"), "x").unwrap();
    let base = h.listen().await;
    let shots = if std::env::var_os("TACKLE_UPDATE_SCREENS").is_some_and(|v| v == "1") {
        root.join("docs/screens")
    } else {
        PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("screens")
    };
    std::fs::create_dir_all(&shots).unwrap();
    let out = tokio::process::Command::new("node")
        .arg(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/peers/web_chat.mjs"))
        .arg(&base)
        .env("TACKLE_NODE_MODULES", &modules)
        .env("SCREENSHOT_DIR", &shots)
        .env("CHROMIUM", &browser)
        .output()
        .await
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "the browser run failed:\n{stderr}");
    let seen: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(seen["errors"], json!([]), "no script errors in the page");
    assert!(seen["tools"].as_array().unwrap().contains(&json!("shell")));
    assert_eq!(seen["waiting"], true, "a waiting indicator before the first token");
    assert_eq!(seen["firstCard"], "list_files");
    let url = seen["url"].as_str().unwrap();
    assert!(url.starts_with("/s/"), "a URL per session: {url}");
    let id = url.trim_start_matches("/s/").to_owned();

    // Approvals show what the call will do.
    let plan = seen["writePlan"].as_str().unwrap();
    assert!(
        plan.contains("will write notes2.md") && plan.contains("+# Notes") && plan.contains("+line two"),
        "{plan}"
    );
    assert!(seen["shellPlan"].as_str().unwrap().contains("$ seq 1 40"), "{seen}");

    let cards = seen["cards"].as_array().unwrap();
    assert_eq!(cards.len(), 4, "{seen}");
    assert_eq!(cards[0]["status"], "ok");
    assert!(cards[0]["output"].as_str().unwrap().contains("notes.md"));
    // Pretty arguments, not escaped JSON on one line.
    assert!(
        cards[1]["args"].as_str().unwrap().contains("\n  \"path\": \"notes2.md\""),
        "{}",
        cards[1]["args"]
    );
    assert_eq!(cards[1]["status"], "ok", "approved in the page, then ran");
    assert_eq!(std::fs::read_to_string(h.workspace.path().join("notes2.md")).unwrap(), "# Notes\nline two\n");
    assert_eq!(cards[2]["summary"], "seq 1 40");
    assert_eq!(cards[2]["collapsed"], true, "40 lines of output are collapsed: {}", cards[2]);
    assert!(cards[2]["output"].as_str().unwrap().contains("\n40\n"));
    assert_eq!(cards[3]["status"], "error");
    assert!(cards[3]["output"].as_str().unwrap().contains("not in this workspace"), "{}", cards[3]);
    assert!(!h.workspace.path().join("build").exists());

    // Markdown rendered; script in the model's output is text and never runs.
    let md = &seen["markdown"];
    assert_eq!(md["headings"], json!(["Done"]), "{md}");
    assert_eq!(md["items"], json!(["first", "second"]));
    assert_eq!(md["strong"], json!(["notes2.md"]));
    assert_eq!(md["code"], json!(["seq 1 40"]));
    assert_eq!(md["links"], json!(["https://example.com/docs"]), "javascript: links are not links");
    assert_eq!(seen["scriptsInLog"], 0);
    assert_eq!(seen["pwned"], Value::Null, "model output ran script in the page");
    assert_eq!(seen["pwnedAfterReload"], Value::Null);
    let answer = seen["answer"].as_str().unwrap();
    // The text streamed just before a tool call shows without a reload.
    assert!(answer.starts_with("Let me look around first.|"), "{answer}");
    assert!(answer.contains("<script>window.__pwned = 1</script>"), "shown as text: {answer}");

    // Usage per turn.
    let usage = seen["usage"].as_str().unwrap();
    assert!(
        usage.starts_with("done · 5 steps · ")
            && usage.contains("tokens in (")
            && usage.contains("% cached)"),
        "{usage}"
    );

    // After a reload the session's URL shows the same conversation; a denial reads as a message.
    assert_eq!(seen["reloaded"]["url"], url);
    let reloaded = seen["reloaded"]["cards"].as_array().unwrap();
    assert_eq!(reloaded.len(), 4);
    let denied = reloaded[3]["output"].as_str().unwrap();
    assert!(denied.contains("denied: the user denied this call: not in this workspace"), "{denied}");
    assert!(!denied.contains('{'), "no raw JSON: {denied}");
    assert_eq!(seen["reloadedMarkdown"], 1);

    // Rename and delete went through the API.
    assert_eq!(seen["title"], "Renamed in the page");
    let (_, list) = h.call(Method::GET, "/v1/sessions", None, None).await;
    let sessions = list["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), 1, "the second session was deleted: {list}");
    assert_eq!(sessions[0]["id"], id.as_str());
    assert_eq!(sessions[0]["title"], "Renamed in the page");

    // Layout at 1280 and 375 px.
    layout_ok(&seen["layout1280"], "1280 px");
    layout_ok(&seen["layout375"], "375 px");
    assert_eq!(seen["layout375Sessions"]["outside"], json!([]), "{seen}");
    let panel = &seen["sessionsPanel"];
    assert!(panel["left"].as_f64().unwrap() >= 0.0 && panel["right"].as_f64().unwrap() <= 375.0, "{panel}");

    // The page's toggle masked web_fetch for the turn.
    let first = &h.fake.requests()[0].body;
    let allowed = first["tool_choice"]["allowed_tools"]["tools"].to_string();
    assert!(!allowed.contains("web_fetch") && allowed.contains("shell"), "{allowed}");
}

/// The markdown renderer's own tests, in node.
#[tokio::test]
async fn the_markdown_renderer_passes_its_unit_tests() {
    let Some(node) = peers::or_skip(peers::node()) else { return };
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let out = tokio::process::Command::new(node)
        .arg("--test")
        .arg(dir.join("tests/peers/markdown_test.mjs"))
        .env("MARKDOWN_JS", dir.join("src/web/markdown.js"))
        .output()
        .await
        .unwrap();
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && report.contains("# fail 0"),
        "{report}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
