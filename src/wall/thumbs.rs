//! Thumbnails and device facts (Android version) for the wall, cached so that watching the wall costs the phones
//! almost nothing. The battery is not read here: the wall shows the health reader's last reading
//! (`device::health`, at most one read per phone every 30 s, never beside an agent's call) — one reader per fact.
//!
//! Thumbnails: one async mutex per device, so at most one wall capture per device is in flight and concurrent
//! viewers share its result; a thumbnail is reused for the configured interval (≥ 2 s); at most
//! [`GLOBAL_CAPTURES`] captures at a time across all devices (the box's CPU belongs to the agents), waited for at
//! most [`SLOT_WAIT`], each bounded by [`CAPTURE_DEADLINE`] as a whole, and a phone whose capture timed out is left
//! alone for [`HUNG_BACKOFF`] — so one hung phone can never stall every other thumbnail; while an agent's screenshot runs on the device the
//! wall serves its last thumbnail (or `device_busy`) instead of capturing — the wall waits, never the agent. The
//! capture goes through the screenshot tool's capture helper but never through the channel file cache or its
//! one-time URLs: the JPEG lives only in this map. While a phone is watched live (`live.rs`), the live view's
//! capture loop is what refreshes this cache ([`Thumbs::get_within`] with its frame interval), so the thumbnails
//! are its frames and the phone is never captured twice for the wall.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;

use crate::device::adb::AdbBackend;
use crate::device::DeviceKey;
use crate::protocol::errors::{ErrorCode, ProtoError};
use crate::protocol::now_ms;
use crate::tools::screen::{capture, render, CapturePath, Format, DEFAULT_PATH};

/// Longest side of a wall thumbnail (the detail view shows the same image larger).
pub const THUMB_MAX_SIDE: u32 = 720;
const THUMB_QUALITY: u8 = 70;
/// Deadline of one wall capture, all of it (both capture paths and the JPEG encoding).
const CAPTURE_DEADLINE: Duration = Duration::from_secs(10);
/// Wall captures running at once on the whole box (the box's CPU belongs to the agents).
const GLOBAL_CAPTURES: usize = 2;
/// Longest a thumbnail request waits for one of those slots; then it answers `device_busy` (the page retries).
const SLOT_WAIT: Duration = Duration::from_secs(3);
/// After a capture ran into its deadline, the phone is not captured again for this long: a hung phone must not
/// take a global slot every few seconds.
const HUNG_BACKOFF: Duration = Duration::from_secs(30);
/// Device facts older than this are read again. The Android version changes only across a reboot (an update),
/// which drops the phone's transport anyway; re-reading it now and then is just a cheap check.
pub const FACTS_MAX_AGE: Duration = Duration::from_secs(600);

pub struct Thumb {
    pub jpeg: Bytes,
    pub width: u32,
    pub height: u32,
    pub captured_ms: u64,
    taken: Instant,
}

#[derive(Default)]
struct Cached {
    thumb: Option<Arc<Thumb>>,
    /// Set when a capture timed out: no new capture before then.
    hung_until: Option<Instant>,
}

type Slot = Arc<tokio::sync::Mutex<Cached>>;

pub struct Thumbs {
    interval: Duration,
    slots: Mutex<HashMap<DeviceKey, Slot>>,
    /// [`GLOBAL_CAPTURES`] wall captures at a time on the whole box.
    permit: tokio::sync::Semaphore,
}

/// Why a served thumbnail is older than the interval.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stale {
    AgentCapturing,
}

impl Thumbs {
    pub fn new(interval: Duration) -> Thumbs {
        Thumbs { interval, slots: Mutex::new(HashMap::new()), permit: tokio::sync::Semaphore::new(GLOBAL_CAPTURES) }
    }

    fn slot(&self, key: &DeviceKey) -> Slot {
        self.slots.lock().unwrap_or_else(|e| e.into_inner()).entry(key.clone()).or_default().clone()
    }

    /// Forgets a device's thumbnail (it went offline: an old picture would mislead).
    pub fn forget(&self, key: &DeviceKey) {
        self.slots.lock().unwrap_or_else(|e| e.into_inner()).remove(key);
    }

    /// The device's thumbnail: cached if fresh, else captured now (one capture per device at a time).
    pub async fn get(
        &self,
        adb: &AdbBackend,
        key: &DeviceKey,
        agent_capturing: impl Fn() -> bool,
    ) -> Result<(Arc<Thumb>, Option<Stale>), ProtoError> {
        self.get_within(adb, key, agent_capturing, self.interval).await
    }

    /// As [`Thumbs::get`], reusing a cached picture only when it is younger than `max_age`: the live view's
    /// capture loop (`live.rs`) asks with its frame interval, so while a phone is watched live its thumbnail is
    /// that loop's latest frame and the phone is captured by one loop, not by the loop and the thumbnails.
    pub async fn get_within(
        &self,
        adb: &AdbBackend,
        key: &DeviceKey,
        agent_capturing: impl Fn() -> bool,
        max_age: Duration,
    ) -> Result<(Arc<Thumb>, Option<Stale>), ProtoError> {
        let slot = self.slot(key);
        let busy = || {
            ProtoError::new(ErrorCode::DeviceBusy, "an agent is capturing this screen; the wall tries again shortly")
        };
        if agent_capturing() {
            // Do not even queue behind our own capture: answer with what we have.
            return match slot.try_lock().ok().and_then(|g| g.thumb.clone()) {
                Some(t) => Ok((t, Some(Stale::AgentCapturing))),
                None => Err(busy()),
            };
        }
        let mut cached = tokio::time::timeout(CAPTURE_DEADLINE * 2, slot.lock()).await.map_err(|_| {
            ProtoError::new(ErrorCode::DeviceTimeout, "the previous thumbnail capture is still running")
        })?;
        if let Some(t) = cached.thumb.as_ref().filter(|t| t.taken.elapsed() < max_age) {
            return Ok((t.clone(), None));
        }
        if cached.hung_until.is_some_and(|until| Instant::now() < until) {
            return Err(ProtoError::new(
                ErrorCode::DeviceTimeout,
                "the phone did not deliver its screen in time; the wall tries again in a little while",
            ));
        }
        // A bounded wait for a global slot: a phone that hangs holds one for at most CAPTURE_DEADLINE.
        let _permit = match tokio::time::timeout(SLOT_WAIT, self.permit.acquire()).await {
            Ok(Ok(p)) => p,
            Ok(Err(_)) => return Err(ProtoError::new(ErrorCode::Internal, "thumbnail limiter closed")),
            Err(_) => {
                return Err(ProtoError::new(
                    ErrorCode::DeviceBusy,
                    "the wall is capturing other phones; it tries again shortly",
                ))
            }
        };
        if agent_capturing() {
            return match cached.thumb.clone() {
                Some(t) => Ok((t, Some(Stale::AgentCapturing))),
                None => Err(busy()),
            };
        }
        let work = async {
            let frame = match capture(adb, key, DEFAULT_PATH, CAPTURE_DEADLINE).await {
                Ok(f) => f,
                Err(e) if e.code == ErrorCode::DeviceTimeout => return Err(e),
                Err(_) => capture(adb, key, CapturePath::Raw, CAPTURE_DEADLINE).await?,
            };
            tokio::task::spawn_blocking(move || {
                render(&frame.frame, THUMB_MAX_SIDE, Format::Jpeg { quality: THUMB_QUALITY })
            })
            .await
            .map_err(|_| ProtoError::new(ErrorCode::Internal, "thumbnail encoding failed unexpectedly"))?
        };
        let outcome = match tokio::time::timeout(CAPTURE_DEADLINE, work).await {
            Ok(r) => r,
            Err(_) => Err(ProtoError::new(ErrorCode::DeviceTimeout, "the thumbnail capture ran out of time")),
        };
        let (jpeg, width, height) = match outcome {
            Ok(x) => x,
            Err(e) => {
                if e.code == ErrorCode::DeviceTimeout {
                    cached.hung_until = Some(Instant::now() + HUNG_BACKOFF);
                }
                return Err(e);
            }
        };
        let t =
            Arc::new(Thumb { jpeg: Bytes::from(jpeg), width, height, captured_ms: now_ms(), taken: Instant::now() });
        cached.thumb = Some(t.clone());
        cached.hung_until = None;
        Ok((t, None))
    }
}

/// Android version of a device, as last read.
#[derive(Clone, Debug, Default)]
pub struct DeviceFacts {
    pub android_version: Option<String>,
}

#[derive(Default)]
struct FactsInner {
    known: HashMap<DeviceKey, (DeviceFacts, Instant)>,
    reading: HashSet<DeviceKey>,
}

#[derive(Default)]
pub struct Facts(Arc<Mutex<FactsInner>>);

impl Facts {
    pub fn get(&self, key: &DeviceKey) -> DeviceFacts {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).known.get(key).map(|(f, _)| f.clone()).unwrap_or_default()
    }

    /// Starts reading the facts of every listed online device whose facts are missing or old (one read per device
    /// at a time) and waits up to `wait` for those reads.
    pub async fn refresh(&self, adb: &Arc<AdbBackend>, keys: Vec<DeviceKey>, wait: Duration) {
        let mut started = Vec::new();
        {
            let mut g = self.0.lock().unwrap_or_else(|e| e.into_inner());
            for key in keys {
                let fresh = g.known.get(&key).is_some_and(|(_, t)| t.elapsed() < FACTS_MAX_AGE);
                if !fresh && g.reading.insert(key.clone()) {
                    started.push(key);
                }
            }
        }
        let handles: Vec<_> = started
            .into_iter()
            .map(|key| {
                let (adb, inner) = (adb.clone(), self.0.clone());
                tokio::spawn(async move {
                    let out =
                        adb.shell_ok(&key, "getprop ro.build.version.release", false, Duration::from_secs(5)).await;
                    let mut g = inner.lock().unwrap_or_else(|e| e.into_inner());
                    g.reading.remove(&key);
                    match out {
                        Ok(text) => {
                            g.known.insert(key, (parse_facts(&text), Instant::now()));
                        }
                        Err(e) => tracing::debug!(device = %key, error = %e, "device wall: facts unavailable"),
                    }
                })
            })
            .collect();
        if !handles.is_empty() && !wait.is_zero() {
            let _ = tokio::time::timeout(wait, futures_util::future::join_all(handles)).await;
        }
    }
}

/// What `getprop ro.build.version.release` printed (its first line).
pub fn parse_facts(text: &str) -> DeviceFacts {
    // The phone's words: bounded and stripped of control/bidi characters (`device::text`).
    let android_version = text
        .lines()
        .next()
        .map(|v| crate::device::text::phone_text(v, crate::device::text::MAX_SHORT_CHARS))
        .filter(|v| !v.is_empty() && !v.contains(':'));
    DeviceFacts { android_version }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn facts_parse_the_version() {
        assert_eq!(parse_facts("14\n").android_version.as_deref(), Some("14"));
        assert_eq!(parse_facts("\n").android_version, None);
        assert_eq!(parse_facts("garbage: x").android_version, None);
        // Hostile: a bidi-spoofed, overlong version.
        let f = parse_facts(&format!("1\u{202E}4{}\n", "9".repeat(100_000)));
        assert_eq!(f.android_version.as_deref().map(str::len), Some(crate::device::text::MAX_SHORT_CHARS));
        assert!(!f.android_version.unwrap().contains('\u{202E}'));
    }
}
