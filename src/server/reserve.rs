//! The connection slots a client that has not shown the key may hold (issue 48 item 2). Unauthenticated idle
//! request heads from a few addresses took every slot, and an agent with the key waited or timed out. A connection
//! is *unproven* from its accept until one of its requests carries the system API key (`Authorization: Bearer`; in
//! no-key mode any complete request head) or a login the wall believes (`server::Mount::signed_in`: its session
//! cookie — an operator's browser is as authenticated as the key or password it logged in with — or the trusted
//! proxy's user header from a `--trusted-proxy` address): unproven connections hold at most the slots less a reserve
//! ([`RESERVE`]), and when they are that many — or every slot is taken — the oldest unproven one is closed to make
//! room. A proven connection is never closed for this, so clients with the key always find a slot.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use tokio_util::sync::CancellationToken;

/// Connection slots kept for connections that showed the key (of `ServerConfig::max_connections`).
pub const RESERVE: usize = 64;

/// The unproven connections, oldest first.
pub struct Unproven {
    cap: usize,
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    next: u64,
    queue: VecDeque<(u64, CancellationToken)>,
}

impl Unproven {
    /// `max_connections` slots in all: unproven connections may hold all but [`RESERVE`] of them.
    pub fn new(max_connections: usize) -> Unproven {
        Unproven { cap: max_connections.saturating_sub(RESERVE).max(1), inner: Mutex::default() }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A new connection's place among the unproven; the oldest ones are closed past the cap.
    pub fn enter(self: &Arc<Self>) -> Place {
        let token = CancellationToken::new();
        let mut g = self.lock();
        let id = g.next;
        g.next += 1;
        g.queue.push_back((id, token.clone()));
        while g.queue.len() > self.cap {
            if let Some((_, t)) = g.queue.pop_front() {
                t.cancel();
            }
        }
        Place { set: self.clone(), id, token, proven: AtomicBool::new(false) }
    }

    /// Every slot is taken: the oldest unproven connection is closed (false when there is none).
    pub fn evict_oldest(&self) -> bool {
        let oldest = self.lock().queue.pop_front();
        oldest.map(|(_, t)| t.cancel()).is_some()
    }

    fn leave(&self, id: u64) {
        let mut g = self.lock();
        if let Some(i) = g.queue.iter().position(|(x, _)| *x == id) {
            g.queue.remove(i);
        }
    }
}

/// One connection's place: cancelled when it is closed to make room; gone once it is proven or closed.
pub struct Place {
    set: Arc<Unproven>,
    id: u64,
    token: CancellationToken,
    proven: AtomicBool,
}

impl Place {
    /// Fires when the connection, still unproven, is closed to make room.
    pub fn evicted(&self) -> &CancellationToken {
        &self.token
    }

    /// A request of the connection showed the key (or a wall login): it is never closed to make room.
    pub fn prove(&self) {
        if !self.proven.swap(true, Ordering::Relaxed) {
            self.set.leave(self.id);
        }
    }

    /// Whether a request of the connection already showed the key (its later requests need no check).
    pub fn proven(&self) -> bool {
        self.proven.load(Ordering::Relaxed)
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        self.set.leave(self.id);
    }
}

/// Whether a request shows the system API key (`key`: none configured, any complete request head does).
pub fn shows_key<B>(req: &hyper::Request<B>, key: Option<&str>) -> bool {
    match key {
        None => true,
        Some(k) => super::auth::bearer(req).is_some_and(|b| crate::http::constant_time_eq(b.as_bytes(), k.as_bytes())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_oldest_unproven_make_room_and_the_proven_stay() {
        let set = Arc::new(Unproven::new(RESERVE + 2));
        let a = set.enter();
        assert!(!a.proven());
        a.prove();
        assert!(a.proven());
        let (b, c) = (set.enter(), set.enter());
        let d = set.enter();
        assert!(b.evicted().is_cancelled(), "the oldest unproven makes room past the cap");
        assert!(!a.evicted().is_cancelled() && !c.evicted().is_cancelled() && !d.evicted().is_cancelled());
        assert!(set.evict_oldest());
        assert!(c.evicted().is_cancelled());
        drop(d);
        assert!(!set.evict_oldest(), "a proven connection is never closed to make room");
    }
}
