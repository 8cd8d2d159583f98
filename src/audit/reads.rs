//! Read-only tool calls in the audit chain without a write per call (issue 21: "screenshots and observes write
//! nothing to persistent storage by default").
//!
//! A call of a tool that changes nothing on the device (`ToolSpec::side_effect == false`: screenshots, observes,
//! UI dumps and finds, status, logcat, file pulls, the app list) is counted here, in memory, per (connector
//! instance, channel, device, tool): how many calls, the first and last time, how many ended with each outcome.
//! The counts go into the hash chain as one aggregate record per key ([`aggregate_row`]) when
//! - the next side-effecting call's records commit (they share its transaction, so reads are chained before the
//!   action that followed them),
//! - a channel is closed (`channel.close`) or a data plane disconnects,
//! - the connector shuts down gracefully,
//! - and at the latest every [`FLUSH_EVERY`].
//!
//! So every call that ran is in the chain (as a count, without its arguments), a read writes ~0 bytes, and a
//! `kill -9` or power cut loses at most [`FLUSH_EVERY`] of read *counts* (README, "What a power cut may lose").
//! Until then a read is visible live on the device wall (memory) but not yet in `audit tail` (the database).
//!
//! Refused side effects (issue 36): a side-effecting call that sent the phone nothing that changes it (refused by
//! its own checks before any device work — a bad `file_ref`, a point off the screen, a locked phone) is counted
//! the same way under [`REFUSED_MARKER`]: one agent flooding such calls at thousands a second once wrote a
//! record each and pushed real actions out of the retention window. Its idempotency record is unchanged.
//!
//! Repeated calls: the protocol asks for repeat recognition of side effects only ("有副作用工具必须具备幂等或重复调用
//! 识别能力", §8.19); a read has no effect to repeat, so a retried read with the same `tool_call_id` simply runs
//! again and is counted again.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

use serde_json::json;

use crate::store::audit::AuditRow;
use crate::store::group::Write;

/// Longest a read's count stays only in memory.
pub const FLUSH_EVERY: Duration = Duration::from_secs(60);
/// Keys counted at once (channels × devices × read tools is far below this); past it a read is recorded at once,
/// as its own record, rather than memory growing.
const MAX_KEYS: usize = 4096;

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Key {
    /// [`MARKER`] or [`REFUSED_MARKER`]: what the record counts.
    marker: &'static str,
    connector_id: String,
    channel_id: String,
    device: String,
    tool_id: String,
    /// The redacted arguments of a [`REPEATED_MARKER`] count (empty for the others).
    args: String,
}

#[derive(Debug)]
struct Count {
    calls: u64,
    first_ms: u64,
    last_ms: u64,
    outcomes: BTreeMap<String, u64>,
}

/// The reads counted since the last flush.
#[derive(Default)]
pub struct Reads(Mutex<BTreeMap<Key, Count>>);

/// `arguments` of an aggregate record: marks it, and what it counts.
pub const MARKER: &str = "read_calls";
/// `arguments` of an aggregate of side-effecting calls that sent the phone nothing.
pub const REFUSED_MARKER: &str = "refused_calls";
/// `arguments` of an aggregate of side effects identical to the last one their channel recorded (`budget.rs`).
pub const REPEATED_MARKER: &str = "repeated_calls";
/// `arguments` of an aggregate of side effects of a channel past its budget of individual records (`budget.rs`).
pub const BUDGET_MARKER: &str = "budget_calls";
const MARKERS: [&str; 4] = [MARKER, REFUSED_MARKER, REPEATED_MARKER, BUDGET_MARKER];

impl Reads {
    /// Counts one finished read-only call. `None` when it was counted; the record to commit now when the table
    /// is full.
    pub fn count(
        &self,
        connector_id: &str,
        channel_id: &str,
        device: &str,
        tool_id: &str,
        outcome: &str,
        now_ms: u64,
    ) -> Option<Write> {
        self.count_as(MARKER, connector_id, channel_id, device, tool_id, "", outcome, now_ms)
    }

    /// [`Reads::count`] for a side-effecting call that sent the phone nothing ([`REFUSED_MARKER`]).
    pub fn count_refused(
        &self,
        connector_id: &str,
        channel_id: &str,
        device: &str,
        tool_id: &str,
        outcome: &str,
        now_ms: u64,
    ) -> Option<Write> {
        self.count_as(REFUSED_MARKER, connector_id, channel_id, device, tool_id, "", outcome, now_ms)
    }

    /// Counts a side effect under [`REPEATED_MARKER`] (with its redacted `args`: it is counted only with its
    /// identical copies) or, `args` = `None`, [`BUDGET_MARKER`].
    #[allow(clippy::too_many_arguments)]
    pub fn count_side_effect(
        &self,
        connector_id: &str,
        channel_id: &str,
        device: &str,
        tool_id: &str,
        args: Option<&str>,
        outcome: &str,
        now_ms: u64,
    ) -> Option<Write> {
        match args {
            Some(a) => self.count_as(REPEATED_MARKER, connector_id, channel_id, device, tool_id, a, outcome, now_ms),
            None => self.count_as(BUDGET_MARKER, connector_id, channel_id, device, tool_id, "", outcome, now_ms),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn count_as(
        &self,
        marker: &'static str,
        connector_id: &str,
        channel_id: &str,
        device: &str,
        tool_id: &str,
        args: &str,
        outcome: &str,
        now_ms: u64,
    ) -> Option<Write> {
        let key = Key {
            marker,
            connector_id: connector_id.to_owned(),
            channel_id: channel_id.to_owned(),
            device: device.to_owned(),
            tool_id: tool_id.to_owned(),
            args: args.to_owned(),
        };
        let mut g = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if !g.contains_key(&key) && g.len() >= MAX_KEYS {
            let one = Count { calls: 1, first_ms: now_ms, last_ms: now_ms, outcomes: [(outcome.to_owned(), 1)].into() };
            return Some(aggregate_row(&key, &one));
        }
        let c =
            g.entry(key).or_insert(Count { calls: 0, first_ms: now_ms, last_ms: now_ms, outcomes: BTreeMap::new() });
        c.calls = c.calls.saturating_add(1);
        c.last_ms = c.last_ms.max(now_ms);
        let n = c.outcomes.entry(outcome.to_owned()).or_default();
        *n = n.saturating_add(1);
        None
    }

    /// Takes every pending count as audit writes (oldest first), to be committed by the caller.
    pub fn take(&self) -> Vec<Write> {
        let pending = std::mem::take(&mut *self.0.lock().unwrap_or_else(|e| e.into_inner()));
        let mut rows: Vec<(Key, Count)> = pending.into_iter().collect();
        rows.sort_by_key(|(_, c)| c.last_ms);
        rows.iter().map(|(k, c)| aggregate_row(k, c)).collect()
    }

    /// Puts back counts whose commit failed (they are not lost to a passing store error).
    pub fn restore(&self, writes: Vec<Write>) {
        let mut g = self.0.lock().unwrap_or_else(|e| e.into_inner());
        for w in writes {
            let Write::Audit { rec, .. } = w else { continue };
            let Ok(v) = serde_json::from_str::<serde_json::Value>(&rec.arguments) else { continue };
            let Some((marker, a)) = MARKERS.into_iter().find_map(|m| Some((m, v.get(m)?))) else {
                continue;
            };
            let key = Key {
                marker,
                connector_id: rec.connector_id,
                channel_id: rec.channel_id,
                device: rec.device,
                tool_id: rec.tool_id,
                args: a.get("arguments").map(|x| x.to_string()).unwrap_or_default(),
            };
            let num = |f: &str| a.get(f).and_then(|x| x.as_u64()).unwrap_or(0);
            let outcomes: BTreeMap<String, u64> = a
                .get("outcomes")
                .and_then(|o| o.as_object())
                .map(|o| o.iter().map(|(k, v)| (k.clone(), v.as_u64().unwrap_or(0))).collect())
                .unwrap_or_default();
            let c = g.entry(key).or_insert(Count {
                calls: 0,
                first_ms: num("first_ms"),
                last_ms: num("last_ms"),
                outcomes: BTreeMap::new(),
            });
            c.calls = c.calls.saturating_add(num("calls"));
            c.first_ms = c.first_ms.min(num("first_ms"));
            c.last_ms = c.last_ms.max(num("last_ms"));
            for (o, n) in outcomes {
                let e = c.outcomes.entry(o).or_default();
                *e = e.saturating_add(n);
            }
        }
    }

    /// Whether any count waits for a flush.
    pub fn is_empty(&self) -> bool {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).is_empty()
    }
}

/// The aggregate record of `c`: no `tool_call_id` (it stands for many calls); `arguments` carries
/// `{"read_calls" (or "refused_calls", "repeated_calls", "budget_calls"): {"calls", "first_ms", "last_ms",
/// "outcomes": {code: n}}}` (+ `"arguments"`, the repeated action's, for `repeated_calls`); `result` is the one outcome all
/// the calls had, or `mixed`; the record's time is the last call's.
fn aggregate_row(k: &Key, c: &Count) -> Write {
    let result = match c.outcomes.keys().collect::<Vec<_>>().as_slice() {
        [one] => (*one).clone(),
        _ => "mixed".to_owned(),
    };
    let mut counted = json!({"calls": c.calls, "first_ms": c.first_ms, "last_ms": c.last_ms, "outcomes": c.outcomes});
    if !k.args.is_empty() {
        // The repeated action itself: redacted arguments as `audit::redact` wrote them (JSON).
        counted["arguments"] = serde_json::from_str(&k.args).unwrap_or_else(|_| json!(k.args));
    }
    let arguments = json!({k.marker: counted});
    let rec = AuditRow {
        seq: 0,
        time_ms: c.last_ms,
        connector_id: k.connector_id.clone(),
        channel_id: k.channel_id.clone(),
        tool_call_id: None,
        tool_id: k.tool_id.clone(),
        device: k.device.clone(),
        arguments: arguments.to_string(),
        result,
        prev_hash: String::new(),
        hash: String::new(),
    };
    Write::Audit { rec, hash: super::hash }
}

/// Whether an audit record is an aggregate of reads.
pub fn is_aggregate(r: &AuditRow) -> bool {
    r.tool_call_id.is_none() && r.arguments.starts_with(&format!("{{\"{MARKER}\":"))
}

/// Whether an audit record is an aggregate of side-effecting calls that sent the phone nothing.
pub fn is_refused_aggregate(r: &AuditRow) -> bool {
    r.tool_call_id.is_none() && r.arguments.starts_with(&format!("{{\"{REFUSED_MARKER}\":"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_are_counted_per_key_and_taken_once() {
        let r = Reads::default();
        for (t, o) in [(10, "ok"), (20, "ok"), (30, "device_timeout")] {
            assert!(r.count("conn", "c1", "SER@srv", "android_screenshot", o, t).is_none());
        }
        assert!(r.count("conn", "c1", "SER@srv", "android_observe", "ok", 25).is_none());
        let w = r.take();
        assert!(r.is_empty() && r.take().is_empty(), "taken once");
        let rows: Vec<AuditRow> = w
            .iter()
            .map(|w| match w {
                Write::Audit { rec, .. } => rec.clone(),
                _ => unreachable!(),
            })
            .collect();
        assert_eq!(rows.len(), 2);
        assert_eq!((rows[0].tool_id.as_str(), rows[0].result.as_str()), ("android_observe", "ok"));
        assert_eq!(
            (rows[1].tool_id.as_str(), rows[1].result.as_str(), rows[1].time_ms),
            ("android_screenshot", "mixed", 30)
        );
        let a: serde_json::Value = serde_json::from_str(&rows[1].arguments).unwrap();
        assert_eq!(
            a[MARKER],
            json!({"calls": 3, "first_ms": 10, "last_ms": 30, "outcomes": {"ok": 2, "device_timeout": 1}})
        );
        assert!(rows.iter().all(is_aggregate));
        // Refused side effects count apart from reads of the same tool and channel, under their own marker.
        assert!(r.count_refused("conn", "c1", "SER@srv", "android_app_install", "invalid_arguments", 40).is_none());
        assert!(r.count_refused("conn", "c1", "SER@srv", "android_app_install", "invalid_arguments", 41).is_none());
        let refused = r.take();
        assert_eq!(refused.len(), 1);
        let Write::Audit { rec, .. } = &refused[0] else { unreachable!() };
        assert!(!is_aggregate(rec) && is_refused_aggregate(rec));
        let a: serde_json::Value = serde_json::from_str(&rec.arguments).unwrap();
        assert_eq!(a[REFUSED_MARKER]["calls"], 2);
        r.restore(refused);
        let Write::Audit { rec, .. } = &r.take()[0] else { unreachable!() };
        assert!(is_refused_aggregate(rec), "restored under its own marker");
        // A failed commit puts the counts back.
        r.restore(w);
        let again = r.take();
        assert_eq!(again.len(), 2);
    }
}
