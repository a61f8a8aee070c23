//! Link options of the `tackle` binary.
//!
//! On Linux with glibc the binary's relative relocations are packed (`DT_RELR`, `-z
//! pack-relative-relocs`, GNU ld 2.38+ and glibc 2.36+): the dynamic loader reads a table of a
//! few kilobytes at start instead of 1.4 MB of `RELA` entries, which is memory every `tackle`
//! process held (BENCHMARKS.md, "whole process"). The binary then needs glibc 2.36 or later.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    if os == "linux" && env == "gnu" {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
}
