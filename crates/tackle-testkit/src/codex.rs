//! The real Codex binary for tests: where scripts/test-deps.sh installs it (npm
//! `@openai/codex`, pinned), and a throwaway `CODEX_HOME` that sends its model requests to a
//! [`crate::FakeModel`] over the Responses wire.

use std::path::{Path, PathBuf};

/// The Codex version scripts/test-deps installs and the committed wire schema comes from.
pub const PINNED_VERSION: &str = "0.169.0";

/// Arguments that run the app-server for tests: a fake that is down fails the turn instead of
/// making Codex reconnect forever.
pub const APP_SERVER_ARGS: [&str; 3] = ["app-server", "--disable", "unbounded_connection_retries"];

/// The native `codex` binary installed by scripts/test-deps.sh, or the one `TACKLE_CODEX_BIN`
/// names. The native binary, not the npm wrapper script: killing it kills Codex itself.
pub fn binary() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("TACKLE_CODEX_BIN") {
        return Some(PathBuf::from(p));
    }
    let (package, triple) = match std::env::consts::ARCH {
        "x86_64" => ("codex-linux-x64", "x86_64-unknown-linux-musl"),
        "aarch64" => ("codex-linux-arm64", "aarch64-unknown-linux-musl"),
        _ => return None,
    };
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/test-deps/node/node_modules");
    let path = root.join("@openai").join(package).join("vendor").join(triple).join("bin/codex");
    path.is_file().then_some(path)
}

/// Writes `dir/config.toml` so Codex sends every model request to `base_url` (a
/// [`crate::FakeModel::base_url`]) on the Responses wire, without retries, approvals or login.
pub fn write_home(dir: &Path, base_url: &str) -> std::io::Result<()> {
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
    std::fs::write(dir.join("config.toml"), config)
}
