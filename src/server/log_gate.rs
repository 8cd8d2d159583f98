//! One refusal log line per second: the flood guard every refusal path of the server (and the wall) logs through.

use std::sync::atomic::Ordering;

/// Lets one log line through per second and counts the rest, so a flood of refusals never becomes a flood of log
/// lines (each let-through line reports how many were suppressed before it).
pub struct LogGate {
    last_ms: std::sync::atomic::AtomicU64,
    suppressed: std::sync::atomic::AtomicU64,
}

impl LogGate {
    pub const fn new() -> LogGate {
        LogGate { last_ms: std::sync::atomic::AtomicU64::new(0), suppressed: std::sync::atomic::AtomicU64::new(0) }
    }

    /// `Some(suppressed since the last line)` when a line may be logged now.
    pub fn allow(&self) -> Option<u64> {
        let now = crate::protocol::now_ms();
        let last = self.last_ms.load(Ordering::Relaxed);
        if now.saturating_sub(last) >= 1000
            && self.last_ms.compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed).is_ok()
        {
            return Some(self.suppressed.swap(0, Ordering::Relaxed));
        }
        self.suppressed.fetch_add(1, Ordering::Relaxed);
        None
    }
}

impl Default for LogGate {
    fn default() -> Self {
        LogGate::new()
    }
}
