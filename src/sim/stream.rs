//! One ADB stream as a service sees it: the payloads of the peer's WRTEs in order ([`StreamIn`]) and a sender that
//! waits for the peer's OKAY before each WRTE and closes the stream when dropped ([`StreamOut`]). `transport.rs`
//! builds both when it accepts an OPEN; every service (shell, sync, the phone helper, DevTools) reads and writes
//! through them.

use std::io;
use std::sync::Arc;

use tokio::sync::{mpsc, Semaphore};

use super::shared::Shared;
use super::wire::{Message, A_CLSE, A_WRTE};

/// Receiving half of a stream as seen by a service: the payloads of the peer's WRTEs, in order.
/// `recv` returns `None` once the peer closed the stream or the connection died.
pub struct StreamIn {
    pub(super) rx: mpsc::UnboundedReceiver<Vec<u8>>,
    pub(super) pending: Vec<u8>,
}

impl StreamIn {
    pub async fn recv(&mut self) -> Option<Vec<u8>> {
        if !self.pending.is_empty() {
            return Some(std::mem::take(&mut self.pending));
        }
        self.rx.recv().await
    }

    /// Reads exactly `n` bytes (WRTE boundaries are not message boundaries), or `None` on close.
    pub async fn read_exact(&mut self, n: usize) -> Option<Vec<u8>> {
        while self.pending.len() < n {
            let chunk = self.rx.recv().await?;
            self.pending.extend_from_slice(&chunk);
        }
        let rest = self.pending.split_off(n);
        Some(std::mem::replace(&mut self.pending, rest))
    }

    /// Waits until the peer closes the stream, keeping what it sends for the next `recv`/`read_exact` (a service
    /// that has not started yet must not lose the bytes its client sent right after the OPEN).
    pub async fn wait_closed_keeping(&mut self) {
        while let Some(chunk) = self.rx.recv().await {
            self.pending.extend_from_slice(&chunk);
        }
    }

    /// Waits until the peer closes the stream, discarding anything it sends.
    pub async fn wait_closed(&mut self) {
        self.pending.clear();
        while self.rx.recv().await.is_some() {}
    }
}

/// Sending half of a stream. Dropping it closes the stream (CLSE) unless the peer already did.
pub struct StreamOut {
    pub(super) tx: mpsc::UnboundedSender<Message>,
    pub(super) ctl: mpsc::UnboundedSender<u32>,
    pub(super) local: u32,
    pub(super) remote: u32,
    pub(super) max: usize,
    pub(super) acks: Arc<Semaphore>,
    /// The phone's link (counts every byte) and its rate (0 = not paced).
    pub(super) link: (Arc<Shared>, u64),
}

impl StreamOut {
    /// Sends `data` as one or more WRTEs, each waiting for the previous one's OKAY.
    pub async fn write(&mut self, data: &[u8]) -> io::Result<()> {
        for chunk in data.chunks(self.max) {
            match self.acks.acquire().await {
                Ok(p) => p.forget(),
                Err(_) => return Err(io::ErrorKind::BrokenPipe.into()),
            }
            let (shared, rate) = &self.link;
            shared.link.sent.fetch_add(chunk.len() as u64, std::sync::atomic::Ordering::Relaxed);
            if *rate > 0 {
                // The chunk is on the host once it has crossed the (shared) link.
                tokio::time::sleep_until(shared.link.reserve(chunk.len(), *rate)).await;
            }
            self.tx
                .send(Message::new(A_WRTE, self.local, self.remote, chunk.to_vec()))
                .map_err(|_| io::Error::from(io::ErrorKind::BrokenPipe))?;
        }
        Ok(())
    }

    /// True once the peer closed the stream or the connection went away.
    pub fn is_closed(&self) -> bool {
        self.acks.is_closed() || self.tx.is_closed()
    }

    /// Resolves when the connection this stream belongs to is gone.
    pub async fn connection_closed(&self) {
        self.tx.closed().await
    }
}

impl Drop for StreamOut {
    fn drop(&mut self) {
        if !self.acks.is_closed() {
            let _ = self.tx.send(Message::new(A_CLSE, self.local, self.remote, Vec::new()));
        }
        let _ = self.ctl.send(self.local);
    }
}
