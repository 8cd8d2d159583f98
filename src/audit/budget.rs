//! Which side effects get a record of their own (issue 48: 211,796 harmless key presses from one key pushed every
//! earlier record out of the chain).
//!
//! - A side effect identical to one of the [`RECENT`] its channel recorded or repeated most recently (same device,
//!   tool, redacted arguments and outcome: two presses alternated, or a press between distinct taps, are repeats
//!   too) is counted, like a refused call (`reads::REPEATED_MARKER`: one aggregate record with the count, the
//!   first and last time, and the arguments). A distinct action always gets its own record (within the budget).
//! - Each channel has a budget of individual records per [`WINDOW`] (`--audit-channel-budget`); past it, its side
//!   effects are counted per device, tool and outcome (`reads::BUDGET_MARKER`), not stored one by one, and a
//!   warning says so once per window.
//! - When the archive is full and the record cap could only be kept by removing records younger than the
//!   retention period, nothing young is removed: the connector stops storing individual side effects
//!   ([`Evidence::full`]: all are counted) and says so (log, `/health`), until pruning makes room again.
//!
//! Records the connector writes itself (lease, release, takeover, recovery) are never budgeted or aggregated.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use std::path::PathBuf;

/// Records older than this are pruned by default (`--audit-retention`; device-profile/security-and-operations.md §12).
pub const RETENTION: Duration = Duration::from_secs(90 * 24 * 3600);
/// At most this many records are kept in the database by default (`--audit-max-records`).
pub const MAX_RECORDS: u64 = 200_000;

/// The audit log's `serve` settings (issue 48).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Settings {
    /// Records kept in the database; past it the oldest records younger than `retention` move to the archive.
    pub max_records: u64,
    /// Records older than this are pruned (database and archive); younger ones are never removed by the cap.
    pub retention: Duration,
    /// Individual records a channel may write per `budget::WINDOW`; past it its side effects are counted.
    pub channel_budget: u64,
    /// Largest size of the archive file.
    pub archive_max_bytes: u64,
    /// The archive file (`archive::FILE` in the data dir); `None` (an in-memory store): no archive.
    pub archive: Option<PathBuf>,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            max_records: MAX_RECORDS,
            retention: RETENTION,
            channel_budget: 20_000,
            archive_max_bytes: 64 << 20,
            archive: None,
        }
    }
}

/// The period a channel's budget covers.
pub const WINDOW: Duration = Duration::from_secs(24 * 3600);
/// Recorded side effects per channel a new one is compared with.
pub const RECENT: usize = 16;
/// Channels tracked at once; past it the book starts over (records are then written, never lost).
const MAX_CHANNELS: usize = 4096;

#[derive(Default)]
struct Book {
    /// The signatures of the [`RECENT`] side effects recorded individually or repeated most recently, newest last.
    recent: std::collections::VecDeque<String>,
    window_start_ms: u64,
    in_window: u64,
    warned: bool,
}

/// How one finished side effect goes into the chain.
#[derive(Debug, PartialEq, Eq)]
pub enum Decision {
    /// A record of its own.
    Record,
    /// Counted: identical to one of the channel's recent recorded side effects.
    Repeated,
    /// Counted: the channel spent its budget, or the log is full.
    OverBudget,
}

/// The audit settings and what the log's state (the channels' books, whether it is full) is right now.
pub struct Evidence {
    pub settings: Settings,
    books: Mutex<HashMap<String, Book>>,
    full: AtomicBool,
    /// Individual records appended since the last prune (wakes pruning early when the cap is near).
    appended: AtomicU64,
}

impl Evidence {
    pub fn new(settings: Settings) -> Self {
        Evidence { settings, books: Mutex::default(), full: AtomicBool::new(false), appended: AtomicU64::new(0) }
    }

    /// Decides for one side effect of `channel_id` with `signature` (device, tool, redacted arguments, outcome).
    pub fn decide(&self, channel_id: &str, signature: &str, now_ms: u64) -> Decision {
        if self.is_full() {
            return Decision::OverBudget;
        }
        let mut g = self.books.lock().unwrap_or_else(|e| e.into_inner());
        if g.len() >= MAX_CHANNELS && !g.contains_key(channel_id) {
            g.clear();
        }
        let b = g.entry(channel_id.to_owned()).or_default();
        if let Some(i) = b.recent.iter().position(|r| r == signature) {
            // Most recently used last: an action repeated between distinct ones stays recognised.
            let s = b.recent.remove(i).unwrap_or_default();
            b.recent.push_back(s);
            return Decision::Repeated;
        }
        if now_ms.saturating_sub(b.window_start_ms) >= WINDOW.as_millis() as u64 {
            *b = Book { recent: std::mem::take(&mut b.recent), window_start_ms: now_ms, ..Book::default() };
        }
        if b.in_window >= self.settings.channel_budget {
            if !b.warned {
                b.warned = true;
                tracing::warn!(
                    channel = %channel_id,
                    budget = self.settings.channel_budget,
                    "audit log: this channel spent its budget of individual records for the day; its further \
                     actions are counted per tool (--audit-channel-budget)"
                );
            }
            return Decision::OverBudget;
        }
        b.in_window += 1;
        if b.recent.len() >= RECENT {
            b.recent.pop_front();
        }
        b.recent.push_back(signature.to_owned());
        self.appended.fetch_add(1, Ordering::Relaxed);
        Decision::Record
    }

    /// Whether individual side-effect records are not stored (the archive is full; see the module doc).
    pub fn is_full(&self) -> bool {
        self.full.load(Ordering::Relaxed)
    }

    pub(super) fn set_full(&self, full: bool) {
        self.full.store(full, Ordering::Relaxed);
    }

    /// Whether enough records were appended since the last prune that the cap may be near: a tenth of it.
    pub fn prune_due(&self) -> bool {
        self.appended.load(Ordering::Relaxed) >= (self.settings.max_records / 10).max(1)
    }

    pub(super) fn pruned(&self) {
        self.appended.store(0, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeats_are_counted_distinct_actions_recorded_until_the_budget() {
        let e = Evidence::new(Settings { channel_budget: 3, ..Settings::default() });
        assert_eq!(e.decide("a", "tap 1", 0), Decision::Record);
        assert_eq!(e.decide("a", "tap 1", 1), Decision::Repeated);
        assert_eq!(e.decide("b", "tap 1", 1), Decision::Record, "another channel has its own book");
        assert_eq!(e.decide("a", "tap 2", 2), Decision::Record);
        assert_eq!(e.decide("a", "tap 1", 3), Decision::Repeated, "alternating presses are repeats too");
        assert_eq!(e.decide("a", "tap 3", 4), Decision::Record);
        assert_eq!(e.decide("a", "tap 4", 4), Decision::OverBudget);
        assert_eq!(e.decide("b", "tap 2", 4), Decision::Record);
        // A new window, a new budget.
        assert_eq!(e.decide("a", "tap 5", WINDOW.as_millis() as u64 + 10), Decision::Record);
        e.set_full(true);
        assert_eq!(e.decide("c", "x", 5), Decision::OverBudget, "a full log stores no individual side effect");
    }
}
