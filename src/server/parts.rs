//! A guard in front of the multipart parser: bounds the size of each part's header block and the number of parts.
//!
//! Why: `multer` buffers a part's headers until it sees `\r\n\r\n`, with no limit but the whole-stream size, so an
//! upload whose "header" runs for 200 MiB was held in memory (six at once reached 1.8 GB). The guard watches the
//! raw bytes as they pass (it finds the `\r\n--boundary` delimiters itself, across chunk edges) and fails the stream
//! as soon as a header block exceeds [`MAX_PART_HEADER_BYTES`] or the form has more than [`MAX_PARTS`] parts, before
//! the parser has buffered more than one chunk beyond the limit.

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use futures_util::Stream;

/// Largest header block of one part (`Content-Disposition`, `Content-Type`, ...); real ones are a few hundred bytes.
pub const MAX_PART_HEADER_BYTES: u64 = 16 * 1024;
/// Most parts in one upload form (`file` plus the optional small fields; unknown fields are skipped but counted).
pub const MAX_PARTS: u32 = 16;

/// Why the guard stopped the body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PartError {
    HeaderTooLarge,
    TooManyParts,
}

impl std::fmt::Display for PartError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PartError::HeaderTooLarge => {
                write!(f, "a multipart part header is longer than {MAX_PART_HEADER_BYTES} bytes")
            }
            PartError::TooManyParts => write!(f, "the form has more than {MAX_PARTS} parts"),
        }
    }
}

impl std::error::Error for PartError {}

/// The error type of the guarded stream: the body's own error, or the guard's refusal.
#[derive(Debug)]
pub enum GuardError<E> {
    Body(E),
    Parts(PartError),
}

impl<E: std::fmt::Display> std::fmt::Display for GuardError<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GuardError::Body(e) => e.fmt(f),
            GuardError::Parts(e) => e.fmt(f),
        }
    }
}

impl<E: std::error::Error + 'static> std::error::Error for GuardError<E> {}

enum Mode {
    /// Looking for the next delimiter (preamble or part content).
    Data,
    /// Inside a header block that started at this absolute offset.
    Headers { start: u64 },
}

/// The byte-level state machine (no I/O), fed chunk by chunk.
pub struct Scanner {
    delimiter: Vec<u8>,
    mode: Mode,
    /// Unsearched tail of the previous chunk (shorter than the longest needle), so matches across chunk edges count.
    carry: Vec<u8>,
    /// Absolute offset of `carry[0]`.
    base: u64,
    delimiters: u32,
    failed: Option<PartError>,
}

impl Scanner {
    pub fn new(boundary: &str) -> Scanner {
        let mut delimiter = b"\r\n--".to_vec();
        delimiter.extend_from_slice(boundary.as_bytes());
        // The body starts with `--boundary` without a CRLF: pretend one came before it.
        Scanner { delimiter, mode: Mode::Data, carry: b"\r\n".to_vec(), base: 0, delimiters: 0, failed: None }
    }

    /// Feeds the next chunk; `Err` once a limit is exceeded (and for every chunk after).
    pub fn feed(&mut self, chunk: &[u8]) -> Result<(), PartError> {
        if let Some(e) = self.failed {
            return Err(e);
        }
        let mut window = std::mem::take(&mut self.carry);
        window.extend_from_slice(chunk);
        let mut pos = 0usize;
        let keep = self.delimiter.len().max(4) - 1;
        loop {
            match self.mode {
                Mode::Data => match memchr::memmem::find(&window[pos..], &self.delimiter) {
                    Some(i) => {
                        self.delimiters += 1;
                        // Every part is preceded by one delimiter, and the closing one follows the last part.
                        if self.delimiters > MAX_PARTS + 1 {
                            return self.fail(PartError::TooManyParts);
                        }
                        pos += i + self.delimiter.len();
                        self.mode = Mode::Headers { start: self.base + pos as u64 };
                    }
                    None => break,
                },
                Mode::Headers { start } => match memchr::memmem::find(&window[pos..], b"\r\n\r\n") {
                    Some(i) => {
                        if self.base + (pos + i) as u64 - start > MAX_PART_HEADER_BYTES {
                            return self.fail(PartError::HeaderTooLarge);
                        }
                        pos += i + 4;
                        self.mode = Mode::Data;
                    }
                    None => {
                        if self.base + window.len() as u64 - start > MAX_PART_HEADER_BYTES {
                            return self.fail(PartError::HeaderTooLarge);
                        }
                        break;
                    }
                },
            }
        }
        let from = pos.max(window.len().saturating_sub(keep));
        self.base += from as u64;
        self.carry = window.split_off(from);
        Ok(())
    }

    fn fail(&mut self, e: PartError) -> Result<(), PartError> {
        self.failed = Some(e);
        Err(e)
    }
}

/// A body stream with the [`Scanner`] in front of it.
pub struct Guarded<S> {
    inner: S,
    scan: Scanner,
}

impl<S> Guarded<S> {
    pub fn new(inner: S, boundary: &str) -> Guarded<S> {
        Guarded { inner, scan: Scanner::new(boundary) }
    }
}

impl<S, E> Stream for Guarded<S>
where
    S: Stream<Item = Result<Bytes, E>> + Unpin,
{
    type Item = Result<Bytes, GuardError<E>>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        match Pin::new(&mut this.inner).poll_next(cx) {
            Poll::Ready(Some(Ok(chunk))) => match this.scan.feed(&chunk) {
                Ok(()) => Poll::Ready(Some(Ok(chunk))),
                Err(e) => Poll::Ready(Some(Err(GuardError::Parts(e)))),
            },
            Poll::Ready(Some(Err(e))) => Poll::Ready(Some(Err(GuardError::Body(e)))),
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Pending => Poll::Pending,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn form(parts: usize, header_pad: usize) -> Vec<u8> {
        let mut b = Vec::new();
        for i in 0..parts {
            b.extend_from_slice(b"--XyZ\r\n");
            b.extend_from_slice(format!("Content-Disposition: form-data; name=\"f{i}\"\r\n").as_bytes());
            b.extend_from_slice(format!("X-Pad: {}\r\n\r\n", "a".repeat(header_pad)).as_bytes());
            b.extend_from_slice(b"some content\r\n--Xy not a boundary\r\n");
            b.extend_from_slice(b"\r\n");
        }
        b.extend_from_slice(b"--XyZ--\r\n");
        b
    }

    fn scan_in_chunks(body: &[u8], chunk: usize) -> Result<(), PartError> {
        let mut s = Scanner::new("XyZ");
        body.chunks(chunk).try_for_each(|c| s.feed(c))
    }

    #[test]
    fn normal_forms_pass_at_any_chunking() {
        let body = form(3, 100);
        for chunk in [1, 2, 3, 7, 64, 4096] {
            assert_eq!(scan_in_chunks(&body, chunk), Ok(()), "chunk size {chunk}");
        }
        assert_eq!(scan_in_chunks(&form(MAX_PARTS as usize, 10), 5), Ok(()));
    }

    #[test]
    fn long_headers_and_many_parts_are_stopped_at_any_chunking() {
        for chunk in [1, 3, 64, 1 << 20] {
            let long = form(1, MAX_PART_HEADER_BYTES as usize);
            assert_eq!(scan_in_chunks(&long, chunk), Err(PartError::HeaderTooLarge), "chunk size {chunk}");
            let many = form(MAX_PARTS as usize + 1, 10);
            assert_eq!(scan_in_chunks(&many, chunk), Err(PartError::TooManyParts), "chunk size {chunk}");
        }
        // A header that never ends is stopped once it passes the limit, not at the end of the stream.
        let mut s = Scanner::new("XyZ");
        s.feed(b"--XyZ\r\nContent-Disposition: form-data; name=\"file\"\r\nX: ").unwrap();
        let filler = vec![b'a'; 4096];
        let fed = (0..100).take_while(|_| s.feed(&filler).is_ok()).count();
        assert_eq!(fed, (MAX_PART_HEADER_BYTES / 4096) as usize - 1);
    }
}
