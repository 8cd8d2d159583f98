//! The live view: `GET /api/v1/devices/{id}/live.mjpeg`, a `multipart/x-mixed-replace` stream of JPEG frames
//! that a browser's `<img>` shows as moving picture.
//!
//! One capture loop per watched phone ([`Feed`]) feeds every viewer of that phone *and* the thumbnail cache: it
//! captures through [`super::thumbs::Thumbs::get_within`], so the frame it takes is the thumbnail the wall serves,
//! and the per-device capture mutex, the global capture slots, the hung-phone back-off and the capture deadline
//! of thumbnails all apply to it. It steps aside while an agent's call captures the screen (agents first): the
//! viewers then keep the last frame. A frame goes out only when its JPEG differs from the last one sent, plus the
//! last frame again every [`KEEPALIVE`] (a proxy or browser must not time the stream out while the screen is
//! still). The loop ends when its last viewer goes away or on shutdown; each viewer's task ends when its client
//! goes away (the body is dropped), when the client stops reading (no data accepted for
//! `WallConfig::live_write_timeout`, 20 s: the connection's write-progress deadline, `server::stall`, and the
//! bounded queue of one frame), on shutdown, or when its wall session ends.
//!
//! Caps: [`MAX_VIEWERS_PER_DEVICE`] per phone and [`MAX_VIEWERS`] in all (each holds a socket and a task, and
//! every watched phone a capture loop taking the box's CPU); beyond them the answer is `503 too_many_viewers`.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, StreamBody};
use hyper::body::Frame;
use hyper::header::{HeaderValue, CACHE_CONTROL, CONTENT_TYPE, RETRY_AFTER};
use hyper::{Response, StatusCode};
use tokio::sync::{watch, Notify};

use super::feeds::FrameTx;
use super::state::Wall;
use super::thumbs::{Shot, Thumb};
use crate::device::adb::AdbBackend;
use crate::device::{DeviceKey, DeviceState};
use crate::http::{error, Body};
use crate::protocol::errors::ErrorCode;
use crate::server::stall::WriteDeadline;
use crate::server::App;

/// Viewers of one phone at once.
pub const MAX_VIEWERS_PER_DEVICE: usize = 4;
/// Viewers on the whole box at once.
pub const MAX_VIEWERS: usize = 8;
/// The capture loop's target period: up to ~6 frames a second when the phone and the box keep up.
pub const FRAME_INTERVAL: Duration = Duration::from_millis(150);
/// A screen unchanged for this long is captured every [`STILL_INTERVAL`] instead of every [`FRAME_INTERVAL`].
const STILL_AFTER: Duration = Duration::from_secs(2);
/// The capture period of a still screen: a watched idle phone costs the box (and the phone) about a third of the
/// captures, and its first change shows at most this much later; an operator's input wakes the loop at once
/// ([`super::feeds::Live::poke`]).
pub const STILL_INTERVAL: Duration = Duration::from_millis(500);
/// The last frame is sent again after this long without a change.
pub const KEEPALIVE: Duration = Duration::from_secs(5);
/// Pause of the loop after a failed capture (the thumbnail cache adds its own back-off for a hung phone).
const RETRY_AFTER_ERROR: Duration = Duration::from_secs(1);
/// Pause while an agent captures the screen.
const AGENT_PAUSE: Duration = Duration::from_millis(250);
/// The multipart boundary (never occurs in the part headers; JPEG bodies are delimited by Content-Length too).
const BOUNDARY: &str = "xagent-live-frame";

/// One viewer's place under the caps; freed on drop.
struct Viewer {
    wall: Arc<Wall>,
    key: DeviceKey,
}

impl Drop for Viewer {
    fn drop(&mut self) {
        let mut g = self.wall.live.lock();
        if let Some(n) = g.viewers.get_mut(&self.key) {
            *n -= 1;
            if *n == 0 {
                g.viewers.remove(&self.key);
            }
        }
    }
}

/// `GET /api/v1/devices/{id}/live.mjpeg` (the device is online and the caller authorised; `session` is the wall
/// session to end the stream with, `None` for the API key).
pub async fn stream(
    app: Arc<App>,
    w: Arc<Wall>,
    adb: Arc<AdbBackend>,
    key: DeviceKey,
    session: Option<String>,
    deadline: Option<WriteDeadline>,
) -> Response<Body> {
    let viewer = {
        let mut g = w.live.lock();
        let total: usize = g.viewers.values().sum();
        let here = g.viewers.get(&key).copied().unwrap_or(0);
        if here >= MAX_VIEWERS_PER_DEVICE || total >= MAX_VIEWERS {
            drop(g);
            let why = if here >= MAX_VIEWERS_PER_DEVICE {
                format!("{MAX_VIEWERS_PER_DEVICE} live views of this phone are open already")
            } else {
                format!("{MAX_VIEWERS} live views are open on this connector already")
            };
            let mut r =
                error(StatusCode::SERVICE_UNAVAILABLE, "too_many_viewers", &format!("{why}; close one and retry"));
            r.headers_mut().insert(RETRY_AFTER, HeaderValue::from_static("5"));
            r.headers_mut().insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
            return r;
        }
        *g.viewers.entry(key.clone()).or_default() += 1;
        Viewer { wall: w.clone(), key: key.clone() }
    };
    // Kernel and hyper buffers would take this stream's frames for minutes after its client stopped reading: the
    // deadline is armed on the socket itself (`server::stall`), which ends the connection, and the body with it.
    let stall = w.cfg.live_write_timeout;
    if let Some(d) = &deadline {
        d.arm(stall);
    }
    let mut frames = feed(&app, &w, &adb, &key);
    let (tx, rx) = tokio::sync::mpsc::channel::<Bytes>(1);
    let mut shutdown = app.shutdown.clone();
    tokio::spawn(async move {
        let _viewer = viewer;
        let mut last: Option<Arc<Thumb>> = None;
        // A viewer joining a running loop starts with its latest frame (a new receiver counts the current value
        // as seen: on a still screen it would otherwise wait for a change that never comes).
        let mut pending = frames.borrow_and_update().clone();
        loop {
            if session.as_deref().is_some_and(|id| !w.sessions.alive(id)) {
                return;
            }
            let next = if let Some(f) = pending.take() {
                Some(f)
            } else {
                tokio::select! {
                    _ = shutdown.changed() => return,
                    _ = tx.closed() => return,
                    changed = tokio::time::timeout(KEEPALIVE, frames.changed()) => match changed {
                        Ok(Err(_)) => return, // the capture loop ended (device gone)
                        Ok(Ok(())) => frames.borrow_and_update().clone(),
                        Err(_) => last.clone(), // keep-alive: the last frame again
                    },
                }
            };
            let Some(frame) = next else { continue };
            // A client that does not read holds one frame in the queue; this send waits for it, bounded.
            let sent = tokio::time::timeout(stall, tx.send(part(&frame))).await;
            if !matches!(sent, Ok(Ok(()))) {
                return;
            }
            last = Some(frame);
        }
    });
    let body = StreamBody::new(futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|b| (Ok::<_, std::io::Error>(Frame::data(b)), rx))
    }));
    let mut r = Response::new(body.boxed());
    let h = r.headers_mut();
    let ct = format!("multipart/x-mixed-replace; boundary={BOUNDARY}");
    h.insert(CONTENT_TYPE, HeaderValue::from_str(&ct).expect("ascii"));
    h.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert("x-content-type-options", HeaderValue::from_static("nosniff"));
    r
}

/// One multipart part: the frame with its size, so a client can map a point on the picture to the device.
fn part(t: &Thumb) -> Bytes {
    let head = format!(
        "--{BOUNDARY}\r\nContent-Type: image/jpeg\r\nContent-Length: {}\r\nX-Frame-Size: {}x{}\r\nX-Captured-At-Ms: {}\r\n\r\n",
        t.jpeg.len(),
        t.width,
        t.height,
        t.captured_ms
    );
    let mut b = Vec::with_capacity(head.len() + t.jpeg.len() + 2);
    b.extend_from_slice(head.as_bytes());
    b.extend_from_slice(&t.jpeg);
    b.extend_from_slice(b"\r\n");
    Bytes::from(b)
}

/// A receiver of the phone's live frames, starting its capture loop if none runs.
fn feed(app: &Arc<App>, w: &Arc<Wall>, adb: &Arc<AdbBackend>, key: &DeviceKey) -> watch::Receiver<Option<Arc<Thumb>>> {
    let mut g = w.live.lock();
    if let Some(tx) = g.feeds.get(key) {
        return tx.subscribe();
    }
    let (tx, rx) = watch::channel(None);
    g.feeds.insert(key.clone(), tx.clone());
    let poke = Arc::new(Notify::new());
    g.pokes.insert(key.clone(), poke.clone());
    drop(g);
    tokio::spawn(capture_loop(app.clone(), w.clone(), adb.clone(), key.clone(), tx, poke));
    rx
}

/// Captures the phone every [`FRAME_INTERVAL`] while anyone watches; publishes frames whose picture changed.
/// Ends when the last viewer is gone, on shutdown, or when the phone is no longer online (its viewers' streams
/// end with it: the page shows the phone's state instead of a frozen picture).
///
/// Pipelined: frame N is encoded (on a blocking thread) while frame N+1 is captured (mostly waiting on the phone
/// and the adb server), so the frame rate is set by the slower of the two stages instead of their sum. A frame
/// reaches the viewers one capture later than without the overlap. A still screen is not encoded again
/// ([`super::thumbs::Thumbs::publish`] compares the pixels' signature first), and once it has been still for
/// [`STILL_AFTER`] it is captured every [`STILL_INTERVAL`] until it changes or an operator's input pokes the loop.
async fn capture_loop(
    app: Arc<App>,
    w: Arc<Wall>,
    adb: Arc<AdbBackend>,
    key: DeviceKey,
    tx: FrameTx,
    poke: Arc<Notify>,
) {
    let mut last: Option<Bytes> = None;
    // Captured, not yet encoded: encoded during the next turn's capture.
    let mut carried: Option<Shot> = None;
    // When the next capture may start: captures begin at most every FRAME_INTERVAL.
    let mut next_start = tokio::time::Instant::now();
    // The last time the picture changed (or an operator's input made it about to).
    let mut last_change = tokio::time::Instant::now();
    loop {
        {
            // Decided under the lock, so a viewer arriving now either finds this loop or starts a new one.
            let mut g = w.live.lock();
            let online = app.hub.backend().info(&key).is_some_and(|d| d.state == DeviceState::Online);
            if tx.receiver_count() == 0 || !online || *app.shutdown.borrow() {
                g.feeds.remove(&key);
                g.pokes.remove(&key);
                tracing::debug!(device = %key, online, "live view: capture loop ends");
                return;
            }
        }
        let turn = async {
            tokio::select! {
                _ = tokio::time::sleep_until(next_start) => {}
                _ = poke.notified() => last_change = tokio::time::Instant::now(),
            }
            let began = tokio::time::Instant::now();
            let r = w.thumbs.capture_live(&adb, &key, || w.activity.capturing(&key)).await;
            (r, began, began.elapsed())
        };
        let publish = async {
            match carried.take() {
                Some(shot) => {
                    let t0 = tokio::time::Instant::now();
                    let r = w.thumbs.publish(&key, shot).await;
                    Some((r, t0.elapsed()))
                }
                None => None,
            }
        };
        let ((captured, began, capture_took), published) = tokio::join!(turn, publish);
        if let Some((r, took)) = published {
            match r {
                Ok((t, encoded)) => {
                    let counter =
                        if encoded { &app.metrics.live_frames_encoded } else { &app.metrics.live_frames_unchanged };
                    counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let changed = last.as_ref() != Some(&t.jpeg);
                    tracing::trace!(device = %key, publish_ms = took.as_millis() as u64, changed, "live view: frame");
                    if changed {
                        last_change = tokio::time::Instant::now();
                        last = Some(t.jpeg.clone());
                        tx.send_replace(Some(t));
                    }
                }
                Err(e) => tracing::debug!(device = %key, error = %e, "live view: encoding failed"),
            }
        }
        let now = tokio::time::Instant::now();
        next_start = match captured {
            Ok(shot) => {
                tracing::trace!(device = %key, capture_ms = capture_took.as_millis() as u64, "live view: captured");
                carried = Some(shot);
                let still = last_change.elapsed() >= STILL_AFTER;
                began + if still { STILL_INTERVAL } else { FRAME_INTERVAL }
            }
            Err(e) if e.code == ErrorCode::DeviceBusy => now + AGENT_PAUSE,
            Err(e) => {
                tracing::debug!(device = %key, error = %e, "live view: capture failed");
                now + RETRY_AFTER_ERROR
            }
        };
    }
}
