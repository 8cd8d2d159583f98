//! A write-progress deadline for long-lived HTTP answers (the wall's live view): a connection whose peer has not
//! accepted a write for the armed time fails its next write, so hyper ends the connection and drops the answer's
//! body, and whatever the body held (a viewer's place under the caps) is freed.
//!
//! Why at the socket and not in the answer's body: hyper polls a body for its next chunk as long as it can buffer
//! it (up to 16 chunks or ~400 KiB per connection), and the kernel accepts writes while its send buffer has room
//! (on loopback autotuned to over a megabyte). A viewer that stopped reading therefore kept "accepting" the
//! live view's keep-alives for minutes — 8 such clients held every slot (issue 36). Here the clock starts when
//! the kernel refuses a write (the socket is not writable), and arming also sets `TCP_NOTSENT_LOWAT`, so the
//! kernel holds at most [`NOTSENT_LOWAT`] bytes beyond what the peer's receive window took: a peer that stops
//! reading is noticed within a few frames plus the deadline, whatever the buffers.
//!
//! Unarmed (every other request, and the WebSocket sessions the connection may become, which have their own
//! `ws_write_timeout`), it passes everything through unchanged.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

/// Unsent bytes the kernel may hold for an armed connection (`TCP_NOTSENT_LOWAT`): about one live frame, so the
/// stream stays smooth on a slow link while a peer that stops reading stops being written to at once.
pub const NOTSENT_LOWAT: u32 = 16 * 1024;

/// The handle a request carries (in its extensions) to arm its connection's deadline.
#[derive(Clone, Default)]
pub struct WriteDeadline(Arc<AtomicU64>);

impl WriteDeadline {
    /// From now on, a write of this connection that cannot proceed for `limit` fails (and ends the connection).
    pub fn arm(&self, limit: Duration) {
        self.0.store((limit.as_millis() as u64).max(1), Ordering::Relaxed);
    }
}

/// A connection's socket under its [`WriteDeadline`].
pub struct StallIo {
    io: TcpStream,
    limit: WriteDeadline,
    /// Whether `TCP_NOTSENT_LOWAT` was set (once, on the first write after arming).
    lowat_set: bool,
    /// Running since the first write the kernel refused; reset by any write that went through.
    stalled: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl StallIo {
    pub fn new(io: TcpStream) -> (StallIo, WriteDeadline) {
        let limit = WriteDeadline::default();
        (StallIo { io, limit: limit.clone(), lowat_set: false, stalled: None }, limit)
    }

    /// The armed limit, setting the socket option the first time it is seen (before the write it applies to: a
    /// kernel that took megabytes before the option was set would hold them for minutes).
    fn armed(&mut self) -> Option<Duration> {
        let ms = self.limit.0.load(Ordering::Relaxed);
        if ms == 0 {
            return None;
        }
        if !self.lowat_set {
            self.lowat_set = true;
            set_notsent_lowat(&self.io, NOTSENT_LOWAT);
        }
        Some(Duration::from_millis(ms))
    }

    fn watch<T>(&mut self, cx: &mut Context<'_>, r: Poll<io::Result<T>>) -> Poll<io::Result<T>> {
        match r {
            Poll::Ready(r) => {
                self.stalled = None;
                Poll::Ready(r)
            }
            Poll::Pending => {
                let Some(limit) = self.armed() else { return Poll::Pending };
                let sleep = self.stalled.get_or_insert_with(|| Box::pin(tokio::time::sleep(limit)));
                // Polling the sleep registers this task's waker: hyper tries the write again when it fires.
                match sleep.as_mut().poll(cx) {
                    Poll::Ready(()) => Poll::Ready(Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        format!("the peer accepted no data for {} ms", limit.as_millis()),
                    ))),
                    Poll::Pending => Poll::Pending,
                }
            }
        }
    }
}

#[cfg(target_os = "linux")]
fn set_notsent_lowat(s: &TcpStream, bytes: u32) {
    use std::os::fd::AsRawFd;
    let v = bytes as libc::c_int;
    // SAFETY: a valid socket fd and a pointer to a c_int of the size passed.
    let r = unsafe {
        libc::setsockopt(
            s.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_NOTSENT_LOWAT,
            (&v as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if r != 0 {
        tracing::debug!(error = %io::Error::last_os_error(), "TCP_NOTSENT_LOWAT not set");
    }
}

#[cfg(not(target_os = "linux"))]
fn set_notsent_lowat(_s: &TcpStream, _bytes: u32) {}

impl AsyncRead for StallIo {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl AsyncWrite for StallIo {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        self.armed();
        let r = Pin::new(&mut self.io).poll_write(cx, buf);
        self.watch(cx, r)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        self.armed();
        let r = Pin::new(&mut self.io).poll_write_vectored(cx, bufs);
        self.watch(cx, r)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    // A TCP flush is no write (it always succeeds at once): it neither starts nor resets the clock.
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}
