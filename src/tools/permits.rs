//! Screenshot permits: how many captures (capture + scale + encode, or a settle frame until it is reduced to its
//! signature) are in memory at once. Each holds ~20 MB and is CPU-bound; without a bound, 64 phones screenshotting
//! together took 2.3 GB and starved every other request (`BENCHMARKS.md`, scale). The pool is the host's CPU count.
//!
//! Shared per phone: one phone holds at most half of the pool (at least one), and its callers wait for their
//! phone's share *before* they queue for the pool. A channel drives one phone (one binding per channel), so a
//! phone's share is also its channel's: one channel's 16 concurrent settling taps used to fill the pool's whole
//! FIFO queue and took another agent's screenshots on another phone from 45 ms to 440 ms. Now each phone has at
//! most its share in the pool's queue, so another phone's capture waits for at most the captures of the other busy
//! phones' shares, never for one phone's backlog. An agent holding many phones gets a share per phone, as any
//! other agent does.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::device::DeviceKey;
use crate::protocol::errors::{ErrorCode, ProtoError};

pub struct Permits {
    pool: Arc<Semaphore>,
    per_phone: usize,
    phones: Mutex<HashMap<DeviceKey, Arc<Semaphore>>>,
}

/// One capture's place: its phone's share and the pool's, given back when dropped.
pub struct Permit<'a> {
    pool: Option<OwnedSemaphorePermit>,
    share: Option<OwnedSemaphorePermit>,
    phone: Arc<Semaphore>,
    key: DeviceKey,
    owner: &'a Permits,
}

impl Drop for Permit<'_> {
    fn drop(&mut self) {
        drop(self.pool.take());
        drop(self.share.take());
        // The phone's share goes once nobody holds or waits for it (the map holds one reference, this permit one;
        // every waiter holds another), so the table stays as small as the set of phones capturing.
        let mut phones = self.owner.phones.lock().unwrap_or_else(|e| e.into_inner());
        if Arc::strong_count(&self.phone) == 2 {
            phones.remove(&self.key);
        }
    }
}

impl Permits {
    /// A pool of `total` permits (at least 2), of which one phone may hold half (at least one).
    pub fn new(total: usize) -> Permits {
        let total = total.max(2);
        Permits { pool: Arc::new(Semaphore::new(total)), per_phone: total / 2, phones: Mutex::default() }
    }

    /// Waits for a place for one capture of `phone`: its share first, then the pool.
    pub async fn acquire(&self, phone: &DeviceKey) -> Result<Permit<'_>, ProtoError> {
        let closed = |_| ProtoError::new(ErrorCode::Internal, "screenshot limiter closed");
        let sem = {
            let mut phones = self.phones.lock().unwrap_or_else(|e| e.into_inner());
            phones.entry(phone.clone()).or_insert_with(|| Arc::new(Semaphore::new(self.per_phone))).clone()
        };
        let share = sem.clone().acquire_owned().await.map_err(closed)?;
        let pool = self.pool.clone().acquire_owned().await.map_err(closed)?;
        Ok(Permit { pool: Some(pool), share: Some(share), phone: sem, key: phone.clone(), owner: self })
    }

    /// How many of the pool's permits are free now.
    pub fn available(&self) -> usize {
        self.pool.available_permits()
    }
}

/// The connector's permits (the host's CPU count).
pub fn captures() -> &'static Permits {
    static PERMITS: OnceLock<Permits> = OnceLock::new();
    PERMITS.get_or_init(|| Permits::new(std::thread::available_parallelism().map_or(2, |n| n.get())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn k(s: &str) -> DeviceKey {
        DeviceKey { server: "127.0.0.1:5037".into(), serial: s.into() }
    }

    /// One phone's backlog never stands between another phone and the pool.
    #[tokio::test]
    async fn a_phone_flooding_the_pool_leaves_the_other_half_to_other_phones() {
        for total in [2, 3, 4, 8] {
            let p = Arc::new(Permits::new(total));
            let a = k("A");
            let mut held = Vec::new();
            for _ in 0..total {
                match tokio::time::timeout(Duration::from_millis(20), p.acquire(&a)).await {
                    Ok(permit) => held.push(permit.unwrap()),
                    Err(_) => break,
                }
            }
            assert_eq!(held.len(), total / 2, "phone A holds its share of {total}, no more");
            // Sixteen more of phone A's captures wait (as one channel's settling taps do).
            let waiters: Vec<_> = (0..16)
                .map(|_| {
                    let (p, a) = (p.clone(), a.clone());
                    tokio::spawn(async move {
                        let _permit = p.acquire(&a).await.unwrap();
                        tokio::time::sleep(Duration::from_millis(5)).await;
                    })
                })
                .collect();
            tokio::task::yield_now().await;
            // Another phone gets a place at once, however long A's queue.
            let b = tokio::time::timeout(Duration::from_millis(20), p.acquire(&k("B"))).await;
            assert!(b.is_ok(), "phone B waited behind phone A's backlog (pool of {total})");
            drop((b, held));
            for w in waiters {
                w.await.unwrap();
            }
            assert_eq!(p.available(), total.max(2), "every permit came back");
            assert!(p.phones.lock().unwrap().is_empty(), "no share left behind");
        }
    }
}
