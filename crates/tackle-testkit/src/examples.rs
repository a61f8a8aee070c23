//! Locating (and building on demand) example binaries that tests run as peers, such as the
//! 100-tool MCP test server of `tackle-mcp`.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Why an example binary could not be provided.
#[derive(Debug, thiserror::Error)]
pub enum ExampleError {
    /// The running test binary is not under `target/<profile>/deps`.
    #[error("cannot locate the target directory from the test binary {0}")]
    NoTargetDir(PathBuf),
    /// `cargo build --example` failed or could not run.
    #[error("building example {example} of {package} failed: {detail}")]
    Build {
        /// Package.
        package: String,
        /// Example name.
        example: String,
        /// What cargo said.
        detail: String,
    },
}

/// The path of `example` of `package` in the profile the calling test was built with, after
/// `cargo build --workspace --examples` (nextest builds test binaries, not other crates'
/// examples). The whole workspace's examples, with the workspace's features: the dependencies
/// the test binaries were built with are reused (`-p package` would resolve other features and
/// rebuild them inside the test, minutes against the test's time limit). `cargo test` and
/// nextest build the workspace's examples with the test binaries, before any test runs, so here
/// cargo finds them up to date (and rebuilds a stale one).
///
/// Call it from integration tests only: it relies on the test binary living in
/// `target/<profile>/deps`.
pub fn example_binary(package: &str, example: &str) -> Result<PathBuf, ExampleError> {
    let exe = std::env::current_exe().map_err(|e| ExampleError::NoTargetDir(PathBuf::from(e.to_string())))?;
    let profile_dir =
        exe.parent().and_then(Path::parent).ok_or_else(|| ExampleError::NoTargetDir(exe.clone()))?;
    let path = profile_dir.join("examples").join(format!("{example}{}", std::env::consts::EXE_SUFFIX));
    let build_error = |detail: String| ExampleError::Build {
        package: package.to_owned(),
        example: example.to_owned(),
        detail,
    };
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let mut command = Command::new(cargo);
    command.args(["build", "--workspace", "--examples", "--locked"]);
    if profile_dir.file_name().is_some_and(|p| p == "release") {
        command.arg("--release");
    }
    if let Some(target_dir) = profile_dir.parent() {
        command.arg("--target-dir").arg(target_dir);
    }
    let output = command.output().map_err(|e| build_error(e.to_string()))?;
    if !output.status.success() {
        return Err(build_error(String::from_utf8_lossy(&output.stderr).into_owned()));
    }
    if path.exists() { Ok(path) } else { Err(build_error(format!("no binary at {}", path.display()))) }
}
