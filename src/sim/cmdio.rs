//! What a command gets to write to and what a command line gives back: [`CmdIo`] (a command's stdout, stderr,
//! modelled time, exit) and [`ExecResult`] (a whole line's), shared by the shell, the commands, the services and
//! the phone's scripted answers (`Device::answers`).

use std::time::Duration;

/// Collected result of running a command line.
#[derive(Debug, Default, Clone)]
pub struct ExecResult {
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    pub status: i32,
    /// Total `sleep` requested; the async service waits this long before answering.
    pub sleep: Duration,
    /// A command (e.g. `logcat` without `-d`) that never terminates on a real device: the service
    /// keeps the stream open until the client closes it.
    pub follow: bool,
}

impl CmdIo {
    pub fn out(&mut self, s: &str) {
        self.out.extend_from_slice(s.as_bytes());
    }
    pub fn err(&mut self, s: &str) {
        self.err.extend_from_slice(s.as_bytes());
    }
}

/// Per-command I/O handed to builtins.
#[derive(Debug, Default)]
pub struct CmdIo {
    pub out: Vec<u8>,
    pub err: Vec<u8>,
    pub sleep: Duration,
    pub follow: bool,
    pub exit: Option<i32>,
    /// Modelled phone time already spent by the command line before this command starts (the `sleep` of the
    /// commands before it): where a cost that waits for a shared resource (a core) starts from.
    pub at: Duration,
}
