//! What agents did and are doing on each device, for the wall.
//!
//! Recent actions come from the audit log (the record of what ran, with typed text already reduced to its
//! length). The wall follows the log by sequence number — a primary-key range read per refresh — and keeps the
//! last [`PER_DEVICE`] records of each device in memory, so a card never scans the log. The audit record has no
//! duration, so the tool dispatcher reports each call's start and end here ([`AgentCall`]); durations are joined
//! to audit records by channel, tool and finishing time (calls from before this process started show none).
//!
//! Read-only calls (screenshots, observes, …) reach the audit log only as aggregate records, up to a minute later
//! (`audit::reads`): the dispatcher reports each one here as it finishes ([`Activity::read_call`]), and the
//! aggregates this process wrote are skipped when they arrive from the log (their calls are already shown). After
//! a restart the log's aggregates are all there is for the calls before it, and they are shown as such.
//!
//! The same guard tells the thumbnail cache when an agent is capturing a device's screen: the wall then serves
//! its last thumbnail instead of asking the device again (agents first).

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde_json::{json, Value};

use crate::device::DeviceKey;
use crate::protocol::now_ms;
use crate::store::audit::AuditRow;
use crate::store::Store;

/// Audit records kept per device.
pub const PER_DEVICE: usize = 50;
/// Records read from the end of the log when the wall first looks.
const SEED: u64 = 5000;
/// Tools whose calls the wall's thumbnails step aside for.
const CAPTURE_TOOLS: &[&str] = &["android_screenshot"];

struct Duration_ {
    channel_id: String,
    tool_id: String,
    finished_ms: u64,
    duration_ms: u64,
}

#[derive(Default)]
struct Inner {
    /// When this process started following (aggregates of reads from then on were shown live).
    started_ms: u64,
    /// Highest audit `seq` read so far (`None` until seeded).
    last_seq: Option<i64>,
    actions: HashMap<String, VecDeque<AuditRow>>,
    durations: HashMap<String, VecDeque<Duration_>>,
    capturing: HashMap<DeviceKey, usize>,
    running: HashMap<DeviceKey, usize>,
}

pub struct Activity(Arc<Mutex<Inner>>);

impl Default for Activity {
    fn default() -> Activity {
        Activity(Arc::new(Mutex::new(Inner { started_ms: now_ms(), ..Inner::default() })))
    }
}

/// Held while an agent's tool call runs on a device; dropping it records the duration.
pub struct AgentCall {
    inner: Arc<Mutex<Inner>>,
    channel_id: String,
    device: DeviceKey,
    tool_id: String,
    capture: bool,
    started: Instant,
}

fn lock(m: &Mutex<Inner>) -> std::sync::MutexGuard<'_, Inner> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Activity {
    pub fn begin(&self, channel_id: &str, device: &DeviceKey, tool_id: &str) -> AgentCall {
        let capture = CAPTURE_TOOLS.contains(&tool_id);
        {
            let mut g = lock(&self.0);
            *g.running.entry(device.clone()).or_default() += 1;
            if capture {
                *g.capturing.entry(device.clone()).or_default() += 1;
            }
        }
        AgentCall {
            inner: self.0.clone(),
            channel_id: channel_id.to_owned(),
            device: device.clone(),
            tool_id: tool_id.to_owned(),
            capture,
            started: Instant::now(),
        }
    }

    /// Whether an agent is capturing this device's screen right now.
    pub fn capturing(&self, device: &DeviceKey) -> bool {
        lock(&self.0).capturing.get(device).is_some_and(|n| *n > 0)
    }

    /// Tool calls running on this device now.
    pub fn running(&self, device: &DeviceKey) -> usize {
        lock(&self.0).running.get(device).copied().unwrap_or(0)
    }

    /// A read-only call that just finished (not in the log yet: see the module docs).
    pub fn read_call(&self, channel_id: &str, device: &DeviceKey, tool_id: &str, arguments: String, outcome: &str) {
        let row = AuditRow {
            seq: 0,
            time_ms: now_ms(),
            connector_id: String::new(),
            channel_id: channel_id.to_owned(),
            tool_call_id: None,
            tool_id: tool_id.to_owned(),
            device: device.to_string(),
            arguments,
            result: outcome.to_owned(),
            prev_hash: String::new(),
            hash: String::new(),
        };
        let mut g = lock(&self.0);
        let q = g.actions.entry(row.device.clone()).or_default();
        q.push_back(row);
        while q.len() > PER_DEVICE {
            q.pop_front();
        }
    }

    /// Reads audit records appended since the last look.
    pub fn refresh(&self, store: &Store) {
        let last = lock(&self.0).last_seq;
        let mut rows = Vec::new();
        match last {
            None => match store.audit_tail(SEED) {
                Ok(r) => rows = r,
                Err(e) => tracing::warn!(error = %e, "device wall: cannot read the audit log"),
            },
            Some(mut seq) => {
                // Bounded: a burst of thousands of calls between two looks is read in a few pages.
                for _ in 0..10 {
                    match store.audit_after(seq, 1000) {
                        Ok(r) if r.is_empty() => break,
                        Ok(r) => {
                            seq = r.last().map_or(seq, |x| x.seq);
                            let n = r.len();
                            rows.extend(r);
                            if n < 1000 {
                                break;
                            }
                        }
                        Err(e) => {
                            tracing::warn!(error = %e, "device wall: cannot read the audit log");
                            break;
                        }
                    }
                }
            }
        }
        let mut g = lock(&self.0);
        let mut last_seq = g.last_seq.unwrap_or(0);
        for r in rows {
            if r.seq <= last_seq && g.last_seq.is_some() {
                continue;
            }
            last_seq = last_seq.max(r.seq);
            if crate::audit::reads::is_aggregate(&r) && r.time_ms >= g.started_ms {
                continue; // its calls were shown live (`read_call`)
            }
            let q = g.actions.entry(r.device.clone()).or_default();
            q.push_back(r);
            while q.len() > PER_DEVICE {
                q.pop_front();
            }
        }
        g.last_seq = Some(last_seq);
    }

    /// The device's recent actions, newest first, as the API shows them.
    pub fn recent(&self, device: &DeviceKey, n: usize) -> Vec<Value> {
        let g = lock(&self.0);
        let name = device.to_string();
        let Some(q) = g.actions.get(&name) else { return Vec::new() };
        let durations = g.durations.get(&name);
        q.iter()
            .rev()
            .take(n)
            .map(|r| {
                let duration = durations.and_then(|d| {
                    d.iter()
                        .find(|x| {
                            x.channel_id == r.channel_id
                                && x.tool_id == r.tool_id
                                && x.finished_ms.abs_diff(r.time_ms) <= 1000
                        })
                        .map(|x| x.duration_ms)
                });
                let args: Value = serde_json::from_str(&r.arguments).unwrap_or(Value::Null);
                json!({
                    "time_ms": r.time_ms,
                    "tool_id": r.tool_id,
                    "outcome": r.result,
                    "duration_ms": duration,
                    "channel_id": r.channel_id,
                    "arguments": args,
                })
            })
            .collect()
    }
}

impl Drop for AgentCall {
    fn drop(&mut self) {
        let mut g = lock(&self.inner);
        if let Some(n) = g.running.get_mut(&self.device) {
            *n = n.saturating_sub(1);
        }
        if self.capture {
            if let Some(n) = g.capturing.get_mut(&self.device) {
                *n = n.saturating_sub(1);
            }
        }
        let q = g.durations.entry(self.device.to_string()).or_default();
        q.push_back(Duration_ {
            channel_id: std::mem::take(&mut self.channel_id),
            tool_id: std::mem::take(&mut self.tool_id),
            finished_ms: now_ms(),
            duration_ms: self.started.elapsed().as_millis() as u64,
        });
        while q.len() > PER_DEVICE * 2 {
            q.pop_front();
        }
    }
}
