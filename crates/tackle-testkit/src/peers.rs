//! The real programs integration tests drive (node and npm packages, the Python SDK venv, a
//! browser), found where `scripts/test-deps.sh` installs them, and the one rule for a missing
//! one: [`or_skip`] fails the test when `TACKLE_REQUIRE_PEERS` is set (as `scripts/test.sh` and
//! CI set it) and skips it, saying why, otherwise.
//!
//! ```no_run
//! use tackle_testkit::peers;
//! let Some(modules) = peers::or_skip(peers::npm_package("playwright-core")) else { return };
//! ```

use std::path::{Path, PathBuf};

/// A peer a test needs that is not there, and how to get it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{what} is not installed ({why}); run scripts/test-deps.sh")]
pub struct MissingPeer {
    /// The peer, e.g. "the npm package playwright-core".
    pub what: String,
    /// What was looked at.
    pub why: String,
}

impl MissingPeer {
    pub(crate) fn new(what: impl Into<String>, why: impl Into<String>) -> Self {
        Self { what: what.into(), why: why.into() }
    }
}

/// Whether tests must fail rather than skip when a peer is missing: `TACKLE_REQUIRE_PEERS` set
/// to anything but empty or `0`.
pub fn peers_required() -> bool {
    std::env::var_os("TACKLE_REQUIRE_PEERS").is_some_and(|v| !v.is_empty() && v != "0")
}

/// The peer, or `None` after printing `SKIP: ...` when it is missing and peers are optional.
///
/// # Panics
/// When the peer is missing and [`peers_required`]: a test never passes by skipping there.
pub fn or_skip<T>(peer: Result<T, MissingPeer>) -> Option<T> {
    decide(peer, peers_required())
}

/// A peer found some other way (a binary, a user account) is missing: skips, or fails under
/// [`peers_required`], exactly like [`or_skip`].
pub fn missing(what: impl Into<String>, why: impl Into<String>) {
    let _ = or_skip::<()>(Err(MissingPeer::new(what, why)));
}

fn decide<T>(peer: Result<T, MissingPeer>, required: bool) -> Option<T> {
    match peer {
        Ok(found) => Some(found),
        Err(missing) if required => panic!("TACKLE_REQUIRE_PEERS is set and {missing}"),
        Err(missing) => {
            eprintln!("SKIP: {missing}");
            None
        }
    }
}

/// The repository root (this crate lives in `crates/tackle-testkit`).
pub fn repo_root() -> PathBuf {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    here.parent().and_then(Path::parent).map(Path::to_path_buf).unwrap_or_else(|| here.to_path_buf())
}

/// Where `scripts/test-deps.sh` installs the peers: `$TACKLE_TEST_DEPS`, else
/// `<repo>/target/test-deps`.
pub fn test_deps_dir() -> PathBuf {
    match std::env::var_os("TACKLE_TEST_DEPS") {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => repo_root().join("target/test-deps"),
    }
}

/// The `node_modules` directory of the npm test peers.
pub fn node_modules() -> PathBuf {
    test_deps_dir().join("node/node_modules")
}

/// The `node` executable on `PATH`.
pub fn node() -> Result<PathBuf, MissingPeer> {
    on_path("node").ok_or_else(|| MissingPeer::new("node", "no `node` on PATH"))
}

/// The directory of an installed npm package (e.g. `@modelcontextprotocol/server-everything`);
/// node must be there too to run it.
pub fn npm_package(package: &str) -> Result<PathBuf, MissingPeer> {
    node()?;
    let dir = node_modules().join(package);
    if dir.join("package.json").is_file() {
        Ok(dir)
    } else {
        Err(MissingPeer::new(format!("the npm package {package}"), format!("no {}", dir.display())))
    }
}

/// The Python interpreter of the test virtualenv, with `module` importable.
pub fn venv_python(module: &str) -> Result<PathBuf, MissingPeer> {
    let python = test_deps_dir().join("venv/bin/python");
    let what = format!("the Python package {module} (test venv)");
    if !python.is_file() {
        return Err(MissingPeer::new(what, format!("no {}", python.display())));
    }
    let imports = std::process::Command::new(&python)
        .args(["-c", &format!("import {module}")])
        .output()
        .is_ok_and(|o| o.status.success());
    if imports {
        Ok(python)
    } else {
        Err(MissingPeer::new(what, format!("{} cannot import it", python.display())))
    }
}

/// An executable of the test virtualenv (e.g. `schemathesis`'s `st`).
pub fn venv_bin(name: &str) -> Result<PathBuf, MissingPeer> {
    let path = test_deps_dir().join("venv/bin").join(name);
    if path.is_file() {
        Ok(path)
    } else {
        Err(MissingPeer::new(format!("{name} (test venv)"), format!("no {}", path.display())))
    }
}

/// Names a Chromium or Chrome build goes by on `PATH`.
const BROWSER_NAMES: &[&str] =
    &["chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome"];

/// Places a Chromium is installed outside `PATH`.
const BROWSER_PATHS: &[&str] = &[
    "/usr/lib/chromium/chromium",
    "/usr/lib/chromium-browser/chromium-browser",
    "/snap/bin/chromium",
    "/opt/google/chrome/chrome",
    "/Applications/Chromium.app/Contents/MacOS/Chromium",
    "/Applications/Google Chrome.app/Contents/MacOS/Google Chrome",
];

/// A Chromium-family browser, wherever it is: `$TACKLE_CHROMIUM`, the link `scripts/test-deps.sh`
/// leaves in the test-deps directory, `PATH`, then the usual install locations.
pub fn chromium() -> Result<PathBuf, MissingPeer> {
    if let Some(path) = std::env::var_os("TACKLE_CHROMIUM").filter(|p| !p.is_empty()) {
        let path = PathBuf::from(path);
        return if is_executable(&path) {
            Ok(path)
        } else {
            Err(MissingPeer::new(
                "Chromium",
                format!("TACKLE_CHROMIUM={} is not an executable", path.display()),
            ))
        };
    }
    let linked = test_deps_dir().join("chromium");
    if is_executable(&linked) {
        return Ok(linked);
    }
    BROWSER_NAMES
        .iter()
        .find_map(|name| on_path(name))
        .or_else(|| BROWSER_PATHS.iter().map(PathBuf::from).find(|p| is_executable(p)))
        .ok_or_else(|| {
            MissingPeer::new(
                "Chromium",
                format!(
                    "not in $TACKLE_CHROMIUM, {}, PATH ({}) or {}",
                    linked.display(),
                    BROWSER_NAMES.join(", "),
                    BROWSER_PATHS.join(", ")
                ),
            )
        })
}

fn on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|dir| dir.join(name)).find(|p| is_executable(p))
}

fn is_executable(path: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    }
    #[cfg(not(unix))]
    {
        path.is_file() || path.with_extension("exe").is_file()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_peer_says_what_to_run() {
        let m = MissingPeer::new("Chromium", "nowhere");
        assert_eq!(m.to_string(), "Chromium is not installed (nowhere); run scripts/test-deps.sh");
    }

    #[test]
    fn a_present_peer_is_returned_whether_required_or_not() {
        assert_eq!(decide::<u8>(Ok(3), true), Some(3));
        assert_eq!(decide::<u8>(Ok(3), false), Some(3));
    }

    #[test]
    fn a_missing_peer_skips_only_when_peers_are_optional() {
        assert_eq!(decide::<u8>(Err(MissingPeer::new("x", "y")), false), None);
    }

    #[test]
    #[should_panic(expected = "TACKLE_REQUIRE_PEERS is set and x is not installed (y)")]
    fn a_missing_peer_fails_the_test_when_peers_are_required() {
        decide::<u8>(Err(MissingPeer::new("x", "y")), true);
    }

    #[test]
    fn executables_are_found_on_path_only_when_executable() {
        let sh = on_path("sh").expect("every unix has sh");
        assert!(is_executable(&sh));
        assert!(!is_executable(Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml").as_path()));
        assert!(on_path("tackle-no-such-program").is_none());
    }
}
