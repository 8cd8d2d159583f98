//! Live counts: the tasks graceful shutdown waits for, and the open connections per peer address.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use tokio::sync::Notify;

/// Live connection counts per source: an IPv4 address or an IPv6 /64 ([`super::auth::source`], issue 48).
#[derive(Clone, Default)]
pub struct PerIp(Arc<std::sync::Mutex<std::collections::HashMap<std::net::IpAddr, usize>>>);

/// One connection's place in its address's count; released on drop.
pub struct IpGuard(PerIp, std::net::IpAddr);

impl PerIp {
    /// Counts a new connection from `ip`, or `None` when its source (address, or IPv6 /64) already has `max` open.
    pub fn enter(&self, ip: std::net::IpAddr, max: usize) -> Option<IpGuard> {
        let ip = super::auth::source(ip);
        let mut m = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let n = m.entry(ip).or_default();
        if *n >= max {
            return None;
        }
        *n += 1;
        Some(IpGuard(self.clone(), ip))
    }
}

impl Drop for IpGuard {
    fn drop(&mut self) {
        let mut m = self.0 .0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(n) = m.get_mut(&self.1) {
            *n -= 1;
            if *n == 0 {
                m.remove(&self.1);
            }
        }
    }
}

/// Counts live tasks so shutdown can wait for them.
#[derive(Clone, Default)]
pub struct Tracker(Arc<(AtomicUsize, Notify)>);

/// Held by a tracked task; dropping it marks the task finished.
pub struct TaskGuard(Tracker);

impl Tracker {
    pub fn enter(&self) -> TaskGuard {
        self.0 .0.fetch_add(1, Ordering::SeqCst);
        TaskGuard(self.clone())
    }

    pub fn live(&self) -> usize {
        self.0 .0.load(Ordering::SeqCst)
    }

    /// Resolves when no guard is alive.
    pub async fn wait(&self) {
        loop {
            let notified = self.0 .1.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.live() == 0 {
                return;
            }
            notified.await;
        }
    }
}

impl Drop for TaskGuard {
    fn drop(&mut self) {
        if self.0 .0 .0.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.0 .0 .1.notify_waiters();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_ip_counts_and_releases() {
        let per_ip = PerIp::default();
        let ip: std::net::IpAddr = "127.0.0.1".parse().unwrap();
        let a = per_ip.enter(ip, 2).unwrap();
        let _b = per_ip.enter(ip, 2).unwrap();
        assert!(per_ip.enter(ip, 2).is_none());
        assert!(per_ip.enter("127.0.0.2".parse().unwrap(), 2).is_some());
        drop(a);
        assert!(per_ip.enter(ip, 2).is_some());
        // One IPv6 /64 is one source, whatever the interface identifier; another /64 is another.
        let v6 = |s: &str| s.parse::<std::net::IpAddr>().unwrap();
        let _c = per_ip.enter(v6("2001:db8:1:2::1"), 2).unwrap();
        let _d = per_ip.enter(v6("2001:db8:1:2:aaaa::9"), 2).unwrap();
        assert!(per_ip.enter(v6("2001:db8:1:2:ffff:1:2:3"), 2).is_none(), "a third address of the same /64");
        assert!(per_ip.enter(v6("2001:db8:1:3::1"), 2).is_some());
    }
}
