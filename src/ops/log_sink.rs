//! Where the log goes when a command keeps its terminal for people: stderr until a file is named, then that file.
//! The demo names one in its state dir, so its ready-to-paste guide is not buried under a line a second of INFO.

use std::io::Write;
use std::path::Path;
use std::sync::{Mutex, OnceLock};

static FILE: OnceLock<Mutex<std::fs::File>> = OnceLock::new();

/// From now on every log record is appended to `path` (created with owner-only permissions: the log names the
/// phones). Only the first call takes effect.
pub fn to_file(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let f = std::fs::OpenOptions::new().create(true).append(true).mode(0o600).open(path)?;
    let _ = FILE.set(Mutex::new(f));
    Ok(())
}

/// The `tracing_subscriber` writer: the file once named, stderr before.
pub struct Sink;

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Sink {
    type Writer = SinkWriter;

    fn make_writer(&'a self) -> SinkWriter {
        SinkWriter
    }
}

pub struct SinkWriter;

impl Write for SinkWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match FILE.get() {
            Some(f) => f.lock().unwrap_or_else(|e| e.into_inner()).write(buf),
            None => std::io::stderr().write(buf),
        }
    }

    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        // One record in one write under the lock: records of two threads never interleave in the file.
        match FILE.get() {
            Some(f) => f.lock().unwrap_or_else(|e| e.into_inner()).write_all(buf),
            None => std::io::stderr().write_all(buf),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match FILE.get() {
            Some(f) => f.lock().unwrap_or_else(|e| e.into_inner()).flush(),
            None => std::io::stderr().flush(),
        }
    }
}
