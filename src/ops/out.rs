//! Standard output for the operator commands. `xagent-adb-connector card | head -c 100` closes the pipe early;
//! `println!` would panic on that (`failed printing to stdout: Broken pipe`, exit 101/134). A reader that has
//! seen enough is not an error: the command stops quietly with exit 0 (documented in docs/commands.md and `--help`;
//! unlike coreutils' 141 from SIGPIPE, so `set -o pipefail` scripts do not fail on `| head`).

use std::io::Write;

/// Writes one line to stdout; a closed pipe ends the process with 0, any other write error with 1.
pub fn line(args: std::fmt::Arguments<'_>) {
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_fmt(args).and_then(|()| out.write_all(b"\n")) {
        gone(e);
    }
}

/// Writes one line to stdout and ignores a closed pipe: for commands that own child processes or servers (`demo`,
/// `sim`), which must keep running or shut down through their own path rather than exit on the spot.
pub fn line_or_ignore(args: std::fmt::Arguments<'_>) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_fmt(args).and_then(|()| out.write_all(b"\n")).and_then(|()| out.flush());
}

/// Flushes stdout (before exiting, or before a long wait), with the same closed-pipe rule.
pub fn flush() {
    if let Err(e) = std::io::stdout().lock().flush() {
        gone(e);
    }
}

fn gone(e: std::io::Error) -> ! {
    if e.kind() == std::io::ErrorKind::BrokenPipe {
        std::process::exit(0);
    }
    eprintln!("error: cannot write to standard output: {e}");
    std::process::exit(crate::config::exit::FAILURE);
}

/// `println!` for operator commands: see the module docs.
macro_rules! outln {
    () => { $crate::ops::out::line(format_args!("")) };
    ($($t:tt)*) => { $crate::ops::out::line(format_args!($($t)*)) };
}
pub(crate) use outln;

/// `println!` that ignores a closed pipe: see [`line_or_ignore`].
macro_rules! sayln {
    () => { $crate::ops::out::line_or_ignore(format_args!("")) };
    ($($t:tt)*) => { $crate::ops::out::line_or_ignore(format_args!($($t)*)) };
}
pub(crate) use sayln;
