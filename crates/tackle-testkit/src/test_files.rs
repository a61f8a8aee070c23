//! A check for crates whose integration tests build as one binary (`tests/main.rs` declaring
//! every file as a module, `autotests = false`): a `tests/*.rs` file nobody declares would never
//! be built or run.

use std::path::Path;

/// The `tests/*.rs` files in `tests_dir` (other than `main.rs`) that `main_rs`, the text of its
/// `main.rs`, does not declare with a `mod NAME;` line of its own. Unreadable entries are
/// reported by name too, so that they are not silently passed over.
pub fn undeclared_test_files(tests_dir: &Path, main_rs: &str) -> Vec<String> {
    let declared = |module: &str| main_rs.lines().any(|line| line.trim() == format!("mod {module};"));
    let entries = match std::fs::read_dir(tests_dir) {
        Ok(entries) => entries,
        Err(e) => return vec![format!("{}: {e}", tests_dir.display())],
    };
    let mut missing: Vec<String> = entries
        .filter_map(|entry| match entry {
            Ok(entry) => {
                let name = entry.file_name().to_string_lossy().into_owned();
                let module = name.strip_suffix(".rs")?;
                (module != "main" && !declared(module)).then_some(name)
            }
            Err(e) => Some(format!("{}: {e}", tests_dir.display())),
        })
        .collect();
    missing.sort();
    missing
}

/// The test that fails when a `tests/*.rs` file of the calling crate is not declared in its
/// `tests/main.rs`; invoke it there, passing that file's own text:
///
/// ```ignore
/// tackle_testkit::every_test_file_is_a_module!(include_str!("main.rs"));
/// ```
#[macro_export]
macro_rules! every_test_file_is_a_module {
    ($main_rs:expr) => {
        /// A test file that `tests/main.rs` does not declare would never be built or run.
        #[test]
        fn every_test_file_is_a_module() {
            let tests = ::std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
            let missing = $crate::undeclared_test_files(&tests, $main_rs);
            assert!(missing.is_empty(), "add `mod NAME;` to tests/main.rs for {missing:?}");
        }
    };
}

#[cfg(test)]
mod tests {
    use super::undeclared_test_files;

    #[test]
    fn a_file_without_its_mod_line_is_reported() {
        let dir = tempfile_dir();
        for name in ["main.rs", "alpha.rs", "beta.rs", "notes.md"] {
            std::fs::write(dir.join(name), "").unwrap();
        }
        std::fs::create_dir(dir.join("common")).unwrap();
        assert_eq!(undeclared_test_files(&dir, "mod alpha;\nmod beta;\n"), Vec::<String>::new());
        assert_eq!(undeclared_test_files(&dir, "mod alpha;\n// mod beta;\n"), vec!["beta.rs".to_owned()]);
        assert_eq!(
            undeclared_test_files(&dir, "mod alphabet;\n"),
            vec!["alpha.rs".to_owned(), "beta.rs".to_owned()]
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    fn tempfile_dir() -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("tackle-testkit-files-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }
}
