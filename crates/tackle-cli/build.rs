//! Link options of the `tackle` binary.
//!
//! - On Linux with glibc the binary's relative relocations are packed (`DT_RELR`, `-z
//!   pack-relative-relocs`, GNU ld 2.38+ and glibc 2.36+): the dynamic loader reads a table of a
//!   few kilobytes at start instead of 1.4 MB of `RELA` entries, which is memory every `tackle`
//!   process held (BENCHMARKS.md, "whole process"). The binary then needs glibc 2.36 or later.
//! - Where Rust links with its own LLD (x86_64 Linux with glibc, unless a linker is configured),
//!   the functions a run executes are placed first, in the order of `link-order.txt`
//!   (`scripts/link_order.sh` makes it from a profile). The kernel maps code 64 KB around each
//!   fault, so packing the ~4,100 functions that `tackle run` and `tackle serve` touch, out of
//!   43,000, keeps most of the code's pages out of memory (BENCHMARKS.md, "link order"). A name
//!   the code no longer has is skipped, so a stale list costs memory, never a build.

use std::path::Path;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=link-order.txt");
    println!("cargo:rerun-if-env-changed=RUSTC_LINKER");
    let var = |name: &str| std::env::var(name).unwrap_or_default();
    if var("CARGO_CFG_TARGET_OS") == "linux" && var("CARGO_CFG_TARGET_ENV") == "gnu" {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
    let order = Path::new(&var("CARGO_MANIFEST_DIR")).join("link-order.txt");
    let order = order.to_string_lossy();
    if var("TARGET") == "x86_64-unknown-linux-gnu"
        && rust_lld_links(&var("RUSTC_LINKER"), &var("CARGO_ENCODED_RUSTFLAGS"))
        && Path::new(order.as_ref()).is_file()
        && !order.contains(',')
    {
        println!("cargo:rustc-link-arg-bins=-Wl,--symbol-ordering-file={order}");
        println!("cargo:rustc-link-arg-bins=-Wl,--no-warn-symbol-ordering");
    }
}

/// Whether the link uses the LLD that Rust ships and selects by default on x86_64 Linux (1.90+):
/// no linker configured (`RUSTC_LINKER` is set by Cargo when one is) and no flag that picks
/// another (`-C linker`, `-C linker-features`, `-C link-self-contained`, `-fuse-ld`). GNU ld
/// does not know `--symbol-ordering-file`.
fn rust_lld_links(linker: &str, encoded_rustflags: &str) -> bool {
    linker.is_empty()
        && !encoded_rustflags
            .split('\x1f')
            .any(|flag| ["linker", "link-self-contained", "fuse-ld"].iter().any(|word| flag.contains(word)))
}
