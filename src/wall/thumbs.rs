//! Thumbnails and device facts (Android version) for the wall, cached so that watching the wall costs the phones
//! almost nothing. The battery is not read here: the wall shows the health reader's last reading
//! (`device::health`, at most one read per phone every 30 s, never beside an agent's call) — one reader per fact.
//!
//! Thumbnails: one async mutex per device, so at most one wall capture per device is in flight and concurrent
//! viewers share its result; a thumbnail is reused for the configured interval (≥ 2 s); at most
//! [`GLOBAL_CAPTURES`] captures or encodes at a time across all devices (the box's CPU belongs to the agents),
//! waited for at most [`SLOT_WAIT`], a capture bounded by [`CAPTURE_DEADLINE`] as a whole (and its encode again),
//! and a phone whose capture timed out is left alone for [`HUNG_BACKOFF`] — so one hung phone can never stall every
//! other thumbnail; while an agent's screenshot runs on the device the wall serves its last thumbnail (or
//! `device_busy`) instead of capturing — the wall waits, never the agent. The capture goes through the screenshot
//! tool's capture helper but never through the channel file cache or its one-time URLs: the JPEG lives only in this
//! map. While a phone is watched live (`live.rs`), the live view's capture loop is what refreshes this cache
//! ([`Thumbs::capture_live`], then [`Thumbs::publish`] while the next frame is captured), so the thumbnails are its
//! frames and the phone is never captured twice for the wall.
//!
//! Unchanged pictures are not encoded again: every capture's pixels get a 64-bit [`signature`], and a capture whose
//! signature is the current thumbnail's reuses that JPEG. A still screen watched live then costs a capture and a
//! signature per frame (a few ms of CPU), not a downscale and a JPEG encode.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;

use crate::device::adb::AdbBackend;
use crate::device::DeviceKey;
use crate::pixels::capture::{capture, CapturePath, Picture, DEFAULT_PATH};
use crate::pixels::encode::{encode, Format};
use crate::protocol::errors::{ErrorCode, ProtoError};
use crate::protocol::now_ms;

/// Longest side of a wall thumbnail (the detail view shows the same image larger).
pub const THUMB_MAX_SIDE: u32 = 720;
const THUMB_QUALITY: u8 = 70;
/// Deadline of one wall capture (both capture paths), and separately of its JPEG encoding.
const CAPTURE_DEADLINE: Duration = Duration::from_secs(10);
/// Wall captures and wall encodes running at once on the whole box (the box's CPU belongs to the agents).
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
    /// [`signature`] of the captured pixels (before scaling): a capture with the same signature is the same
    /// picture, and this JPEG serves for it without another encode.
    signature: u64,
    /// When the capture it shows began (a newer thumbnail is never replaced by an older one).
    taken: Instant,
}

/// A captured screen not yet encoded ([`Thumbs::capture_live`] → [`Thumbs::publish`]).
pub struct Shot {
    picture: Picture,
    taken: Instant,
}

/// One device's place in the cache. The capture mutex is held for a capture only, not for the encoding, so the
/// live view can capture the next frame while it encodes this one; the thumbnail is behind its own lock, which
/// is never held across an await.
#[derive(Default)]
struct Device {
    /// At most one wall capture of the device in flight. Holds the hung back-off: set when a capture timed out,
    /// no new capture before then.
    capture: tokio::sync::Mutex<Option<Instant>>,
    thumb: Mutex<Option<Arc<Thumb>>>,
}

impl Device {
    fn thumb(&self) -> Option<Arc<Thumb>> {
        self.thumb.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

pub struct Thumbs {
    interval: Duration,
    devices: Mutex<HashMap<DeviceKey, Arc<Device>>>,
    /// [`GLOBAL_CAPTURES`] wall captures or encodes at a time on the whole box.
    permit: tokio::sync::Semaphore,
}

/// Why a served thumbnail is older than the interval.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stale {
    AgentCapturing,
}

fn busy() -> ProtoError {
    ProtoError::new(ErrorCode::DeviceBusy, "an agent is capturing this screen; the wall tries again shortly")
}

impl Thumbs {
    pub fn new(interval: Duration) -> Thumbs {
        Thumbs { interval, devices: Mutex::new(HashMap::new()), permit: tokio::sync::Semaphore::new(GLOBAL_CAPTURES) }
    }

    fn device(&self, key: &DeviceKey) -> Arc<Device> {
        self.devices.lock().unwrap_or_else(|e| e.into_inner()).entry(key.clone()).or_default().clone()
    }

    /// Forgets a device's thumbnail (it went offline: an old picture would mislead).
    pub fn forget(&self, key: &DeviceKey) {
        self.devices.lock().unwrap_or_else(|e| e.into_inner()).remove(key);
    }

    /// The device's thumbnail: cached if fresh, else captured now (one capture per device at a time).
    pub async fn get(
        &self,
        adb: &AdbBackend,
        key: &DeviceKey,
        agent_capturing: impl Fn() -> bool,
    ) -> Result<(Arc<Thumb>, Option<Stale>), ProtoError> {
        let dev = self.device(key);
        if agent_capturing() {
            // Do not even queue behind our own capture: answer with what we have.
            return dev.thumb().map(|t| (t, Some(Stale::AgentCapturing))).ok_or_else(busy);
        }
        // Held through the encoding too: concurrent viewers of the wall wait for this one picture, then find it
        // fresh, instead of capturing again.
        let mut hung = self.lock_capture(&dev).await?;
        if let Some(t) = dev.thumb().filter(|t| t.taken.elapsed() < self.interval) {
            return Ok((t, None));
        }
        match self.capture_locked(adb, key, &mut hung, &agent_capturing).await {
            Ok(shot) => Ok((self.publish_to(&dev, shot).await?.0, None)),
            Err(e) if e.code == ErrorCode::DeviceBusy && agent_capturing() => {
                dev.thumb().map(|t| (t, Some(Stale::AgentCapturing))).ok_or(e)
            }
            Err(e) => Err(e),
        }
    }

    /// The live view's capture (`live.rs`): one new capture of the device under the same rules as a thumbnail's
    /// (one per device at a time, the global limit, the hung back-off, agents first: `device_busy` while an
    /// agent captures), not yet encoded, so that the loop can capture the next frame while it encodes this one
    /// ([`Thumbs::publish`]). While a phone is watched live its thumbnail is that loop's latest frame (the
    /// thumbnail interval is longer than the frame interval), so the phone is captured by one loop, not by the
    /// loop and the thumbnails.
    pub async fn capture_live(
        &self,
        adb: &AdbBackend,
        key: &DeviceKey,
        agent_capturing: impl Fn() -> bool,
    ) -> Result<Shot, ProtoError> {
        if agent_capturing() {
            return Err(busy());
        }
        let dev = self.device(key);
        let mut hung = self.lock_capture(&dev).await?;
        self.capture_locked(adb, key, &mut hung, &agent_capturing).await
    }

    /// The thumbnail of a captured screen, which becomes the device's thumbnail: the current one again, without
    /// an encode, when the pixels are the same (a still screen watched live costs a capture and a signature per
    /// frame, not a JPEG encode), else scaled and encoded now. The flag: whether it was encoded.
    pub async fn publish(&self, key: &DeviceKey, shot: Shot) -> Result<(Arc<Thumb>, bool), ProtoError> {
        self.publish_to(&self.device(key), shot).await
    }

    async fn lock_capture<'a>(
        &self,
        dev: &'a Device,
    ) -> Result<tokio::sync::MutexGuard<'a, Option<Instant>>, ProtoError> {
        tokio::time::timeout(CAPTURE_DEADLINE * 2, dev.capture.lock())
            .await
            .map_err(|_| ProtoError::new(ErrorCode::DeviceTimeout, "the previous thumbnail capture is still running"))
    }

    /// A bounded wait for a global slot: a phone that hangs holds one for at most [`CAPTURE_DEADLINE`].
    async fn slot(&self) -> Result<tokio::sync::SemaphorePermit<'_>, ProtoError> {
        match tokio::time::timeout(SLOT_WAIT, self.permit.acquire()).await {
            Ok(Ok(p)) => Ok(p),
            Ok(Err(_)) => Err(ProtoError::new(ErrorCode::Internal, "thumbnail limiter closed")),
            Err(_) => Err(ProtoError::new(
                ErrorCode::DeviceBusy,
                "the wall is capturing other phones; it tries again shortly",
            )),
        }
    }

    /// One capture, the device's capture mutex held (`hung` is its back-off).
    async fn capture_locked(
        &self,
        adb: &AdbBackend,
        key: &DeviceKey,
        hung: &mut Option<Instant>,
        agent_capturing: &impl Fn() -> bool,
    ) -> Result<Shot, ProtoError> {
        if hung.is_some_and(|until| Instant::now() < until) {
            return Err(ProtoError::new(
                ErrorCode::DeviceTimeout,
                "the phone did not deliver its screen in time; the wall tries again in a little while",
            ));
        }
        let _permit = self.slot().await?;
        if agent_capturing() {
            return Err(busy());
        }
        let taken = Instant::now();
        let work = async {
            match capture(adb, key, DEFAULT_PATH, THUMB_MAX_SIDE, CAPTURE_DEADLINE).await {
                Ok(f) => Ok(f),
                Err(e) if e.code == ErrorCode::DeviceTimeout => Err(e),
                Err(_) => capture(adb, key, CapturePath::Raw, THUMB_MAX_SIDE, CAPTURE_DEADLINE).await,
            }
        };
        let outcome = match tokio::time::timeout(CAPTURE_DEADLINE, work).await {
            Ok(r) => r,
            Err(_) => Err(ProtoError::new(ErrorCode::DeviceTimeout, "the thumbnail capture ran out of time")),
        };
        match outcome {
            Ok(c) => {
                *hung = None;
                Ok(Shot { picture: c.picture, taken })
            }
            Err(e) => {
                if e.code == ErrorCode::DeviceTimeout {
                    *hung = Some(Instant::now() + HUNG_BACKOFF);
                }
                Err(e)
            }
        }
    }

    async fn publish_to(&self, dev: &Device, shot: Shot) -> Result<(Arc<Thumb>, bool), ProtoError> {
        let current = dev.thumb();
        let known = current.as_ref().map(|t| t.signature);
        let Shot { picture, taken } = shot;
        let failed = |_| ProtoError::new(ErrorCode::Internal, "thumbnail encoding failed unexpectedly");
        // The signature reads every pixel (a few ms for a phone screen on a Pi): too long for an async worker.
        let (sig, picture) =
            tokio::task::spawn_blocking(move || (signature(&picture), picture)).await.map_err(failed)?;
        let rendered = if known == Some(sig) {
            None
        } else {
            let _permit = self.slot().await?;
            let job = tokio::task::spawn_blocking(move || {
                encode(&picture.fit(THUMB_MAX_SIDE), Format::Jpeg { quality: THUMB_QUALITY })
            });
            match tokio::time::timeout(CAPTURE_DEADLINE, job).await {
                Ok(r) => Some(r.map_err(failed)??),
                Err(_) => {
                    return Err(ProtoError::new(ErrorCode::DeviceTimeout, "the thumbnail encoding ran out of time"))
                }
            }
        };
        let encoded = rendered.is_some();
        let t = Arc::new(match (rendered, current) {
            (Some((jpeg, width, height)), _) => {
                Thumb { jpeg: Bytes::from(jpeg), width, height, captured_ms: now_ms(), signature: sig, taken }
            }
            // The same picture: the same JPEG (a clone of its `Bytes`), as of this capture.
            (None, Some(c)) => Thumb {
                jpeg: c.jpeg.clone(),
                width: c.width,
                height: c.height,
                captured_ms: now_ms(),
                signature: sig,
                taken,
            },
            (None, None) => unreachable!("no encode only when a current thumbnail has this signature"),
        });
        let mut slot = dev.thumb.lock().unwrap_or_else(|e| e.into_inner());
        // Two captures of one device can finish their encodes out of order (the live view's and a thumbnail
        // request's): the newer picture stays.
        if slot.as_ref().is_none_or(|old| old.taken <= t.taken) {
            *slot = Some(t.clone());
        }
        Ok((t, encoded))
    }
}

/// A 64-bit signature of a screen's pixels (the captured bytes before any conversion, or the picture a parallel
/// capture downscaled as it arrived: what the thumbnail shows), to tell a still screen from a changed one without
/// encoding it: the
/// xxHash64 round over four interleaved lanes of 8 bytes (memory-bound, several GB/s; a 720x1600 RGB frame in well
/// under a millisecond on a desktop core), then its avalanche. Not a cryptographic hash: the phone draws its own
/// pixels anyway, and a collision costs one frame not shown until the picture changes again.
fn signature(picture: &Picture) -> u64 {
    const P1: u64 = 0x9E37_79B1_85EB_CA87;
    const P2: u64 = 0xC2B2_AE3D_27D4_EB4F;
    const P3: u64 = 0x1656_67B1_9E37_79F9;
    let round = |acc: u64, lane: u64| acc.wrapping_add(lane.wrapping_mul(P2)).rotate_left(31).wrapping_mul(P1);
    let px = picture.pixel_bytes();
    let mut acc = [P1.wrapping_add(P2), P2, 0, P1.wrapping_neg()];
    let mut blocks = px.chunks_exact(32);
    for b in &mut blocks {
        for (i, a) in acc.iter_mut().enumerate() {
            let lane = u64::from_le_bytes(b[i * 8..i * 8 + 8].try_into().expect("8 bytes"));
            *a = round(*a, lane);
        }
    }
    let mut h = acc.iter().enumerate().fold(0u64, |h, (i, a)| h ^ a.rotate_left(i as u32 * 7 + 1));
    for (i, &b) in blocks.remainder().iter().enumerate() {
        h = round(h, u64::from(b) ^ ((i as u64) << 8));
    }
    // The dimensions too: a rotated screen of the same bytes is another picture.
    let (w, hgt) = picture.dimensions();
    h = round(h, (u64::from(w) << 32) | u64::from(hgt));
    h ^= h >> 33;
    h = h.wrapping_mul(P2);
    h ^= h >> 29;
    h = h.wrapping_mul(P3);
    h ^ (h >> 32)
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
    /// Phones whose screen size is being read for the detail view (one read per phone at a time).
    sizing: HashSet<DeviceKey>,
}

#[derive(Default)]
pub struct Facts(Arc<Mutex<FactsInner>>);

impl Facts {
    pub fn get(&self, key: &DeviceKey) -> DeviceFacts {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).known.get(key).map(|(f, _)| f.clone()).unwrap_or_default()
    }

    /// The phone's screen size for the detail view: the backend's cached one at once, else one read per phone at a
    /// time (started here, left running to fill the cache for the next request) waited for at most `wait`. An
    /// operator's request never waits for a slow phone longer than that (a phone answering in 4 s made the detail
    /// view take 9 s: the helper's `screen` deadline, then `wm size`).
    pub async fn display(&self, adb: &Arc<AdbBackend>, key: &DeviceKey, wait: Duration) -> Option<(u32, u32)> {
        if let Some(size) = adb.screen_size_known(key) {
            return Some(size);
        }
        if !self.0.lock().unwrap_or_else(|e| e.into_inner()).sizing.insert(key.clone()) {
            return None;
        }
        let (adb, inner, key) = (adb.clone(), self.0.clone(), key.clone());
        let read = tokio::spawn(async move {
            let size = adb.screen_size(&key).await;
            inner.lock().unwrap_or_else(|e| e.into_inner()).sizing.remove(&key);
            size.ok()
        });
        tokio::time::timeout(wait, read).await.ok().and_then(Result::ok).flatten()
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

    /// The still-screen check: one level of one channel of one pixel anywhere (first, last, in the tail past the
    /// last 32-byte block) is another picture, and so are the same bytes in another shape (a rotated screen).
    #[test]
    fn signature_tells_pictures_apart() {
        use image::RgbImage;
        let signature = |i: &RgbImage| signature(&Picture::Whole(crate::pixels::frame::Frame::from_rgb(i.clone())));
        let a = RgbImage::from_pixel(720, 1600, image::Rgb([30, 40, 50]));
        assert_eq!(signature(&a), signature(&a.clone()));
        for (x, y) in [(0, 0), (719, 1599), (360, 800)] {
            let mut b = a.clone();
            b.put_pixel(x, y, image::Rgb([30, 40, 51]));
            assert_ne!(signature(&a), signature(&b), "pixel ({x}, {y})");
        }
        let rotated = RgbImage::from_raw(1600, 720, a.as_raw().clone()).unwrap();
        assert_ne!(signature(&a), signature(&rotated));
        let odd = RgbImage::from_pixel(7, 3, image::Rgb([1, 2, 3]));
        let mut tail = odd.clone();
        tail.put_pixel(6, 2, image::Rgb([1, 2, 4]));
        assert_ne!(signature(&odd), signature(&tail));
        // Two pixels swapped: same bytes, other order.
        let mut s1 = a.clone();
        s1.put_pixel(10, 10, image::Rgb([1, 1, 1]));
        let mut s2 = a.clone();
        s2.put_pixel(11, 10, image::Rgb([1, 1, 1]));
        assert_ne!(signature(&s1), signature(&s2));
    }

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
