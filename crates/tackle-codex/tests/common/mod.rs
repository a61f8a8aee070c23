//! Shared helpers of the Codex integration tests.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use tackle_codex::CodexConfig;
#[allow(unused_imports)]
pub use tackle_testkit::codex::PINNED_VERSION;

/// The pinned Codex binary (see [`tackle_testkit::codex::binary`]).
pub fn codex_binary() -> Option<PathBuf> {
    tackle_testkit::codex::binary()
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

/// A CODEX_HOME whose config.toml sends every model request to the fake at `base_url`.
pub fn codex_home(dir: &Path, base_url: &str) {
    tackle_testkit::codex::write_home(dir, base_url).unwrap();
}

/// The configuration that runs `binary` against the fake behind `home`.
pub fn config(binary: &Path, home: &Path) -> CodexConfig {
    CodexConfig {
        command: binary.display().to_string(),
        args: tackle_testkit::codex::APP_SERVER_ARGS.map(str::to_owned).to_vec(),
        home: Some(home.to_owned()),
        request_timeout_secs: 60,
        idle_timeout_secs: 60,
        ..CodexConfig::default()
    }
}
