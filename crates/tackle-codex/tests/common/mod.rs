//! Shared helpers of the Codex integration tests: the pinned binary, a throwaway CODEX_HOME
//! pointed at the testkit's fake Responses server.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use tackle_codex::CodexConfig;

/// The Codex version the tests and the committed schema are pinned to.
pub const PINNED_VERSION: &str = "0.169.0";

/// The native `codex` binary installed by scripts/test-deps.sh (npm `@openai/codex`), or the
/// one `TACKLE_CODEX_BIN` names. The native binary, not the npm wrapper script: killing it
/// kills Codex itself.
pub fn codex_binary() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("TACKLE_CODEX_BIN") {
        return Some(PathBuf::from(p));
    }
    let (package, triple) = match std::env::consts::ARCH {
        "x86_64" => ("codex-linux-x64", "x86_64-unknown-linux-musl"),
        "aarch64" => ("codex-linux-arm64", "aarch64-unknown-linux-musl"),
        _ => return None,
    };
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/test-deps/node/node_modules");
    let path = root.join("@openai").join(package).join("vendor").join(triple).join("bin/codex");
    path.is_file().then_some(path)
}

/// Peers are required when `TACKLE_REQUIRE_PEERS` is set (scripts/test.sh sets it); otherwise a
/// missing peer skips the test with a note.
pub fn missing_peer(what: &str) {
    assert!(
        std::env::var_os("TACKLE_REQUIRE_PEERS").is_none(),
        "{what} is not installed: run scripts/test-deps.sh"
    );
    eprintln!("skipped: {what} is not installed (run scripts/test-deps.sh)");
}

/// A CODEX_HOME whose config.toml sends every model request to `base_url` (the testkit's fake,
/// Responses wire), without retries, approvals or network beyond it.
pub fn codex_home(dir: &Path, base_url: &str) {
    let config = format!(
        r#"model = "mock-model"
model_provider = "mock"
approval_policy = "never"
sandbox_mode = "read-only"

[model_providers.mock]
name = "Mock provider"
base_url = "{base_url}/v1"
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0
"#
    );
    std::fs::write(dir.join("config.toml"), config).unwrap();
}

/// The configuration that runs `binary` against the fake behind `home`.
pub fn config(binary: &Path, home: &Path) -> CodexConfig {
    CodexConfig {
        command: binary.display().to_string(),
        // A fake that is down must fail the turn, not make Codex reconnect forever.
        args: vec!["app-server".into(), "--disable".into(), "unbounded_connection_retries".into()],
        codex_home: Some(home.to_owned()),
        request_timeout_secs: 60,
        idle_timeout_secs: 60,
        ..CodexConfig::default()
    }
}
