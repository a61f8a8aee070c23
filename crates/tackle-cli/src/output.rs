//! Standard output for every command. A reader that goes away (`tackle sessions list | head -1`)
//! ends the command quietly with success, as Unix tools do, where `println!` would panic on the
//! closed pipe; any other failure to write is an error message and exit code 1, never a panic.
//!
//! `out!` and `outln!` are `print!` and `println!` with this behaviour (`#[macro_use]` in
//! `main.rs`, so every module has them). A long-running server is different: `noticeln!` prints
//! what `tackle serve` tells whoever started it (its address, its channels), and a reader that
//! went away is no reason to stop serving the clients that are connected.

use std::fmt;
use std::io::{self, Write};

/// `print!` that ends the process quietly when stdout's reader is gone.
macro_rules! out {
    ($($arg:tt)*) => { $crate::output::write_fmt(format_args!($($arg)*)) };
}

/// `println!` that ends the process quietly when stdout's reader is gone.
macro_rules! outln {
    () => { $crate::output::write_fmt(format_args!("\n")) };
    ($($arg:tt)*) => { $crate::output::write_fmt(format_args!("{}\n", format_args!($($arg)*))) };
}

/// `println!` for a server's notices: a closed stdout is logged and otherwise ignored.
macro_rules! noticeln {
    ($($arg:tt)*) => { $crate::output::notice_fmt(format_args!("{}\n", format_args!($($arg)*))) };
}

/// Writes a server's notice to stdout and flushes it; a failure (a reader that went away, a
/// full disk behind a redirect) is logged at debug and does not end the process.
pub fn notice_fmt(args: fmt::Arguments<'_>) {
    let mut out = io::stdout().lock();
    if let Err(e) = out.write_fmt(args).and_then(|()| out.flush()) {
        tracing::debug!(error = %e, "cannot write a notice to standard output; serving on");
    }
}

/// Writes formatted text to stdout.
pub fn write_fmt(args: fmt::Arguments<'_>) {
    let mut out = io::stdout().lock();
    if let Err(e) = out.write_fmt(args) {
        failed(&e);
    }
}

/// Writes bytes to stdout and flushes them.
pub fn write_all(bytes: &[u8]) {
    let mut out = io::stdout().lock();
    if let Err(e) = out.write_all(bytes).and_then(|()| out.flush()) {
        failed(&e);
    }
}

/// Whether `e` is stdout's reader having gone away.
pub fn is_closed_pipe(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::BrokenPipe
}

/// Stdout cannot be written: a closed pipe ends the process with success (nobody reads what
/// would follow); any other error is reported and ends it with code 1.
pub fn failed(e: &io::Error) -> ! {
    if is_closed_pipe(e) {
        std::process::exit(0);
    }
    let _ = writeln!(io::stderr(), "error: cannot write to standard output: {e}");
    std::process::exit(1)
}
