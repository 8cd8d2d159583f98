//! Capture buffers kept for the next capture (issue 24, host CPU).
//!
//! A 1080×2400 frame is 10.4 MB. Allocated fresh for every capture (large blocks are mmapped: glibc with the
//! fixed threshold of `main.rs`, musl's allocator always), the kernel maps and zeroes ~2 500 pages while the
//! bytes arrive and unmaps them when the frame is dropped: a third of the connector's CPU per screenshot in a
//! profile of the USB bench, more than the inflate. A buffer handed back here is mapped already; the next
//! capture of a similar size writes into it without a single page fault.
//!
//! The pool is small and forgets: at most [`MAX_IDLE`] buffers and [`MAX_IDLE_BYTES`] in all, each freed after
//! [`IDLE_FOR`] unused (a trimmer task runs while the pool holds anything), so an idle connector returns the
//! memory and a burst of captures on many phones costs at most those bytes more than before. Buffers under
//! [`MIN_KEPT`] are not worth keeping (the allocator serves them from its heap).
//!
//! A buffer taken with [`take`] still holds an earlier capture's bytes: its taker overwrites every byte before
//! anything reads it (the parallel capture fails unless each range inflated to exactly its length). [`take_empty`]
//! hands out capacity only (length 0), for buffers filled by appending.

use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Most buffers kept: a screenshot uses two (the frame, and its downscaled picture), a phone's live view four
/// (one frame captured while the previous one is encoded).
pub const MAX_IDLE: usize = 6;

/// Most bytes kept in all (a 4K frame is 37.7 MB; four phone frames are ~42 MB).
pub const MAX_IDLE_BYTES: usize = 48 << 20;

/// How long an unused buffer is kept.
pub const IDLE_FOR: Duration = Duration::from_secs(15);

/// Smallest buffer kept.
pub const MIN_KEPT: usize = 1 << 20;

struct Idle {
    buf: Vec<u8>,
    since: Instant,
}

/// The kept buffers. One process-wide instance ([`POOL`]); the tests make their own.
struct Pool {
    idle: Vec<Idle>,
    /// A trimmer task is running (it stops once the pool is empty).
    trimming: bool,
}

impl Pool {
    const fn new() -> Pool {
        Pool { idle: Vec::new(), trimming: false }
    }

    fn bytes(&self) -> usize {
        self.idle.iter().map(|i| i.buf.capacity()).sum()
    }

    /// The kept buffer of the smallest capacity ≥ `capacity`, if any.
    fn best_fit(&mut self, capacity: usize) -> Option<Vec<u8>> {
        let at = (0..self.idle.len())
            .filter(|at| self.idle[*at].buf.capacity() >= capacity)
            .min_by_key(|at| self.idle[*at].buf.capacity())?;
        Some(self.idle.swap_remove(at).buf)
    }

    /// Keeps `buf` if it is worth keeping and there is room, evicting smaller buffers to make room. Returns what
    /// is to be freed (by the caller, outside the lock).
    fn put(&mut self, buf: Vec<u8>, now: Instant) -> Vec<Vec<u8>> {
        if buf.capacity() < MIN_KEPT || buf.capacity() > MAX_IDLE_BYTES {
            return vec![buf];
        }
        let mut freed = Vec::new();
        while self.idle.len() >= MAX_IDLE || self.bytes() + buf.capacity() > MAX_IDLE_BYTES {
            match (0..self.idle.len()).min_by_key(|at| self.idle[*at].buf.capacity()) {
                Some(at) if self.idle[at].buf.capacity() <= buf.capacity() => freed.push(self.idle.swap_remove(at).buf),
                // Everything kept is at least as large: this one is the one to free.
                _ => {
                    freed.push(buf);
                    return freed;
                }
            }
        }
        self.idle.push(Idle { buf, since: now });
        freed
    }

    /// Removes the buffers unused for [`IDLE_FOR`] at `now` (returned, to be freed outside the lock).
    fn expire(&mut self, now: Instant) -> Vec<Idle> {
        let (keep, old) =
            std::mem::take(&mut self.idle).into_iter().partition(|i| now.duration_since(i.since) < IDLE_FOR);
        self.idle = keep;
        old
    }
}

static POOL: Mutex<Pool> = Mutex::new(Pool::new());

fn pool() -> std::sync::MutexGuard<'static, Pool> {
    // A panic while the lock is held cannot leave the list half-updated (push/remove only): keep using it.
    POOL.lock().unwrap_or_else(|e| e.into_inner())
}

/// `kept` (or fresh memory) as exactly `len` bytes: within the old length nothing is written, past it (a larger
/// frame than last time) zeroes; fresh zeroed memory is mapped lazily (only what the caller fills is committed).
fn sized(kept: Option<Vec<u8>>, len: usize) -> Vec<u8> {
    match kept {
        Some(mut buf) => {
            buf.truncate(len);
            buf.resize(len, 0);
            buf
        }
        None => vec![0u8; len],
    }
}

/// A buffer of exactly `len` bytes whose content is unspecified (an earlier capture's bytes, or zeroes): the
/// caller overwrites all of it before reading any.
pub fn take(len: usize) -> Vec<u8> {
    let kept = pool().best_fit(len);
    sized(kept, len)
}

/// An empty buffer with room for at least `capacity` bytes when a kept one has it, else an empty `Vec`
/// (appending grows it as the bytes arrive: a claimed size is never allocated up front).
pub fn take_empty(capacity: usize) -> Vec<u8> {
    let mut buf = pool().best_fit(capacity).unwrap_or_default();
    buf.clear();
    buf
}

/// Keeps `buf` for a later [`take`] if it is worth keeping (see [`Pool::put`]); else frees it.
pub fn give_back(buf: Vec<u8>) {
    let mut p = pool();
    let freed = p.put(buf, Instant::now());
    if !p.trimming && !p.idle.is_empty() {
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            p.trimming = true;
            rt.spawn(trimmer());
        }
    }
    drop(p);
    // Unmapping happens outside the lock.
    drop(freed);
}

/// Frees the buffers unused for [`IDLE_FOR`] until the pool is empty, then ends (the next [`give_back`] starts
/// another).
async fn trimmer() {
    loop {
        tokio::time::sleep(IDLE_FOR / 3).await;
        let mut p = pool();
        let old = p.expire(Instant::now());
        let done = p.idle.is_empty();
        if done {
            p.trimming = false;
        }
        drop(p);
        drop(old);
        if done {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_returned_buffer_is_reused_without_a_new_allocation() {
        let mut p = Pool::new();
        let now = Instant::now();
        let mut a = sized(p.best_fit(3 << 20), 3 << 20);
        a.fill(7);
        let ptr = a.as_ptr();
        assert!(p.put(a, now).is_empty());
        assert_eq!(p.bytes(), 3 << 20);
        let b = sized(p.best_fit(2 << 20), 2 << 20);
        assert_eq!((b.as_ptr(), b.len()), (ptr, 2 << 20), "the kept buffer is handed out again");
        assert_eq!(p.bytes(), 0);
        let mut c = b;
        c.truncate(10);
        p.put(c, now);
        let d = sized(p.best_fit(3 << 20), 3 << 20);
        assert_eq!((d.as_ptr(), d.len()), (ptr, 3 << 20), "grown back to a length within its capacity");
        assert!(d[10..].iter().all(|b| *b == 0), "past the old length the bytes are zeroes");
        p.put(d, now);
        assert!(p.best_fit(4 << 20).is_none(), "none large enough");
        assert_eq!(p.best_fit(1).map(|b| b.as_ptr()), Some(ptr));
    }

    #[test]
    fn the_pool_is_bounded_in_count_and_bytes_and_keeps_the_largest() {
        let mut p = Pool::new();
        let now = Instant::now();
        assert_eq!(p.put(vec![0u8; 1000], now).len(), 1, "small buffers are not kept");
        for mb in [2, 3, 4, 5, 6, 7, 8] {
            p.put(Vec::with_capacity(mb << 20), now);
        }
        assert_eq!(p.idle.len(), MAX_IDLE);
        assert_eq!(p.bytes(), (3 + 4 + 5 + 6 + 7 + 8) << 20, "the smallest was evicted");
        p.put(Vec::with_capacity(40 << 20), now);
        assert!(p.bytes() <= MAX_IDLE_BYTES, "{}", p.bytes());
        assert!(p.idle.iter().any(|i| i.buf.capacity() == 40 << 20));
        let freed = p.put(Vec::with_capacity(1 << 20), now);
        assert_eq!(freed.len(), 1, "no room, and everything kept is larger");
        assert_eq!(p.put(Vec::with_capacity(MAX_IDLE_BYTES + 1), now).len(), 1, "larger than the whole pool");
        assert!(p.bytes() <= MAX_IDLE_BYTES);
    }

    #[test]
    fn unused_buffers_are_freed_after_the_idle_time() {
        let mut p = Pool::new();
        let now = Instant::now();
        p.put(Vec::with_capacity(2 << 20), now);
        assert!(p.expire(now + IDLE_FOR / 2).is_empty());
        assert_eq!(p.expire(now + IDLE_FOR).len(), 1);
        assert_eq!(p.bytes(), 0);
    }
}
