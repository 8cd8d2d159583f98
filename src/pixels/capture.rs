//! Capture path. Three ways to get pixels off a phone were measured against each other on the simulated phone
//! (1080×2400, through the real adb server on loopback, release build, median of 11 runs each, four rounds; see
//! `tests/files.rs` `screenshot_capture_paths_benchmark`, run with `--release -- --ignored`). All three decode to
//! identical pixels (`capture_paths_agree`).
//!
//! | path                                          | bytes over adb | median (4 rounds)        |
//! |-----------------------------------------------|----------------|--------------------------|
//! | `framebuffer:` service (`framebuffer_inner`)  | 10 368 056     | 20.3 / 21.2 / 23.7 / 27.2 ms |
//! | `exec:screencap` raw (16-byte header + RGBA)  | 10 368 016     | 30.0 / 28.6 / 34.8 / 29.2 ms |
//! | `exec:screencap -p` (PNG, decoded on host)    |  9 621 802     | 82.8 / 88.9 / 90.1 / 107.3 ms |
//!
//! (Figures measured when both went through `adb_client` on blocking threads; both now use the async host-protocol
//! client in `device::transport`, which a dropped call cancels at once.)
//! [`DEFAULT_PATH`] is the fastest, `framebuffer:` (modern adbd serves it by running `screencap` itself and
//! sending a v2 header, so it costs the phone the same as raw). Its header gives the offset and length of every
//! colour channel, which [`decode_framebuffer`] honours (RGBA and BGRA phones both exist). Raw `exec:screencap` is
//! the fallback when the framebuffer service fails (old or unusual devices), since [`decode_raw`] understands every
//! common format. `-p` is slowest everywhere: the phone deflates 10 MB on its
//! own CPU (hundreds of ms on real hardware) and the host inflates it again. Raw bytes come through `exec:` (no
//! pty, no shell-protocol framing), so they arrive unmangled.
//!
//! Those figures are loopback, where bytes are free. Over USB 2.0 (~35 MB/s) the 10 MB of a raw frame cost ~300 ms
//! on the cable alone, so [`DEFAULT_PATH`] is [`CapturePath::Auto`] (issue 24): where the phone's toybox has `gzip`
//! (Android 8.0+), `screencap | gzip -1` deflates the raw frame on the phone — lossless, the simulated home screen 94×
//! — and the host inflates it while it arrives ([`crate::device::gunzip`], bounded by the frame size the capture's
//! own header names). One probe per phone decides (cached until the device changes state); any failure falls back
//! to `framebuffer:`. On a phone with several CPUs (Android 10+) the deflating is spread over up to four of them:
//! [`CapturePath::GzipParallel`], in [`super::parallel`]. Measured on the simulated phone with a phone's costs:
//! `BENCHMARKS.md`, "Issue 24".

use std::time::Duration;

use image::RgbImage;

use super::downscale::fit_size;
use super::fitting::{Fitting, Strip};
use super::frame::{bad_frame, Frame, Shape, MAX_FRAME_BYTES, MAX_SIDE};
pub use super::picture::{Capture, Picture};
use crate::device::adb::AdbBackend;
use crate::device::gunzip;
use crate::device::transport::{FbHeader, PixelSink};
use crate::device::DeviceKey;
use crate::protocol::errors::{ErrorCode, ProtoError};

/// How the pixels are fetched from the device (see the module docs for the measurements).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CapturePath {
    /// `exec:screencap`: header + raw pixels, decoded on the host.
    Raw,
    /// `exec:screencap -p`: PNG encoded on the phone, decoded on the host.
    Png,
    /// The `framebuffer:` service (header with channel layout + raw pixels).
    Framebuffer,
    /// `exec:screencap | gzip -1`: the raw frame deflated by the phone's toybox `gzip` (lossless), inflated on the
    /// host while it arrives. Only where the phone has a working gzip (see [`CapturePath::Auto`]).
    Gzip,
    /// The raw frame written once to a temp file on the phone, then deflated by several `dd … | gzip -1` streams
    /// at once, one byte range each, on several of the phone's cores ([`super::parallel`]).
    GzipParallel,
    /// [`CapturePath::GzipParallel`] where the phone has several cores and the temp file works,
    /// [`CapturePath::Gzip`] where its gzip works (both probed once per device, see [`gzip_works`]), else — and
    /// whenever a compressed capture is refused — [`CapturePath::Framebuffer`].
    Auto,
}

/// The capture path `android_screenshot` tries first; [`CapturePath::Raw`] is the fallback.
pub const DEFAULT_PATH: CapturePath = CapturePath::Auto;

/// The phone-side pipeline of [`CapturePath::Gzip`]. Level 1: on a screen of flat UI colours it is within a few
/// per cent of level 6 in size at several times the speed, and the phone's CPU is the cost being saved.
pub const GZIP_CAPTURE: &str = "screencap | gzip -1";

/// Bytes of decoded pixels a PNG from `screencap -p` may make us allocate: the largest screen we accept, in RGBA.
/// A PNG header is a promise, not the data: without this bound one claiming 60 000 × 60 000 would reserve
/// gigabytes before the first pixel is checked.
const PNG_MAX_ALLOC: u64 = MAX_FRAME_BYTES as u64;

/// Most bytes any capture may put on the wire: the largest frame we accept plus its header (and slack for a PNG
/// that compressed nothing). Every capture read is bounded by it; buffers grow as bytes arrive, never to a claim.
pub(crate) const CAPTURE_CAP: usize = MAX_FRAME_BYTES + (1 << 20);

/// Decodes `screencap -p` output. The dimensions are checked against `MAX_SIDE` and the allocation against
/// `PNG_MAX_ALLOC` from the header, before any pixel is inflated.
pub fn decode_png(data: &[u8]) -> Result<RgbImage, ProtoError> {
    let mut limits = image::Limits::default();
    limits.max_image_width = Some(MAX_SIDE);
    limits.max_image_height = Some(MAX_SIDE);
    limits.max_alloc = Some(PNG_MAX_ALLOC);
    let mut reader = image::ImageReader::with_format(std::io::Cursor::new(data), image::ImageFormat::Png);
    reader.limits(limits);
    reader.decode().map(|i| i.into_rgb8()).map_err(|e| bad_frame(format!("screencap -p: {e}")))
}

/// Decodes `screencap` raw output (`u32 width, height, format` (+ `u32 dataspace` since Android 9) then pixels)
/// to a full-size RGB image. The capture path keeps the bytes instead ([`Frame::from_raw`]).
pub fn decode_raw(data: &[u8]) -> Result<RgbImage, ProtoError> {
    Ok(Frame::from_raw(data.to_vec())?.to_rgb())
}

/// Decodes `framebuffer:` pixels using the channel offsets and lengths of the header to a full-size RGB image
/// (see [`Frame::from_framebuffer`]).
pub fn decode_framebuffer(h: &FbHeader, px: &[u8]) -> Result<RgbImage, ProtoError> {
    Ok(Frame::from_framebuffer(h, px.to_vec())?.to_rgb())
}

/// Whether the phone's `gzip` works: cached per device path (until it changes state), else one probe
/// ([`super::parallel::PROBE`], which also counts the phone's CPUs for [`CapturePath::GzipParallel`]). A probe that
/// could not run (transport error) is not cached; one that ran is, whatever it answered.
pub async fn gzip_works(adb: &AdbBackend, key: &DeviceKey, deadline: Duration) -> Result<bool, ProtoError> {
    if let Some(known) = adb.gzip_capture(key) {
        return Ok(known);
    }
    let out = adb.exec(key, super::parallel::PROBE, 4096, false, deadline).await?;
    let probed = super::parallel::parse_probe(&out);
    tracing::debug!(device = %key, gzip = probed.gzip, streams = probed.streams, "probed the phone for compressed captures");
    adb.set_capture_streams(key, probed.streams);
    adb.set_gzip_capture(key, probed.gzip);
    Ok(probed.gzip)
}

/// Fetches one frame along `path`. An observation: no per-device ordering. Cancellable: dropping the future closes
/// the adb connection (see `device::transport`). `deadline` bounds the whole capture, probe and fallback included.
/// `fit` is the long side of the picture the caller will make of it (0 = full size): the parallel capture and the
/// framebuffer downscale their rows to that as they arrive ([`Picture::Fitted`]); the single gzip stream, raw
/// `screencap` and `screencap -p` keep the whole frame.
pub async fn capture(
    adb: &AdbBackend,
    key: &DeviceKey,
    path: CapturePath,
    fit: u32,
    deadline: Duration,
) -> Result<Capture, ProtoError> {
    let end = tokio::time::Instant::now() + deadline;
    let left = || end.saturating_duration_since(tokio::time::Instant::now()).max(Duration::from_millis(1));
    if path != CapturePath::Auto {
        return capture_along(adb, key, path, fit, deadline).await;
    }
    if adb.capture_compression() {
        match gzip_works(adb, key, left()).await {
            Ok(true) => match compressed(adb, key, fit, left()).await {
                Ok(c) => return Ok(c),
                // A device that did not answer in time will not answer a second request either.
                Err(e) if e.code == ErrorCode::DeviceTimeout => return Err(e),
                Err(e) => {
                    if e.code == ErrorCode::BadFrame {
                        // The phone's gzip passed the probe but sent a stream we refuse: not again on this device
                        // until it reconnects; this capture falls back.
                        adb.set_gzip_capture(key, false);
                        tracing::warn!(device = %key, error = %e, "compressed capture refused; using the framebuffer from now on");
                    } else {
                        tracing::debug!(device = %key, error = %e, "compressed capture failed; falling back");
                    }
                }
            },
            Ok(false) => {}
            Err(e) if e.code == ErrorCode::DeviceTimeout => return Err(e),
            Err(e) => tracing::debug!(device = %key, error = %e, "gzip probe failed; falling back"),
        }
    }
    capture_along(adb, key, CapturePath::Framebuffer, fit, left()).await
}

/// A compressed capture of a phone whose gzip works: [`CapturePath::GzipParallel`] where the probe found several
/// CPUs, else [`CapturePath::Gzip`]. A temp-file capture the phone could not start (read-only or full
/// `/data/local/tmp`, no `dd`) is not tried again until the phone changes state, and this one takes the single
/// stream; anything else (a lie, a timeout) is the caller's to judge.
async fn compressed(adb: &AdbBackend, key: &DeviceKey, fit: u32, deadline: Duration) -> Result<Capture, ProtoError> {
    let end = tokio::time::Instant::now() + deadline;
    if adb.capture_streams(key).unwrap_or(1) > 1 {
        match capture_along(adb, key, CapturePath::GzipParallel, fit, deadline).await {
            Err(e) if e.message.starts_with(super::parallel::TEMP_FILE_FAILED) => {
                adb.set_capture_streams(key, 1);
                tracing::info!(device = %key, error = %e, "parallel capture unavailable on this phone; using one stream");
            }
            // A lie (the caller stops compressing) or a phone that did not answer in time (it will not answer a
            // second request either).
            Err(e) if matches!(e.code, ErrorCode::BadFrame | ErrorCode::DeviceTimeout) => return Err(e),
            Err(e) => tracing::debug!(device = %key, error = %e, "parallel capture failed; this one takes one stream"),
            Ok(c) => return Ok(c),
        }
    }
    let left = end.saturating_duration_since(tokio::time::Instant::now()).max(Duration::from_millis(1));
    capture_along(adb, key, CapturePath::Gzip, fit, left).await
}

async fn capture_along(
    adb: &AdbBackend,
    key: &DeviceKey,
    path: CapturePath,
    fit: u32,
    deadline: Duration,
) -> Result<Capture, ProtoError> {
    const CAP: usize = CAPTURE_CAP;
    let decode_failed = |_| ProtoError::new(ErrorCode::Internal, "screenshot decoding failed unexpectedly");
    match path {
        CapturePath::Raw | CapturePath::Png => {
            let cmd = if path == CapturePath::Raw { "screencap" } else { "screencap -p" };
            let data = adb.exec(key, cmd, CAP, false, deadline).await?;
            let wire_bytes = data.len();
            let frame = tokio::task::spawn_blocking(move || {
                if path == CapturePath::Raw {
                    Frame::from_raw(data)
                } else {
                    decode_png(&data).map(Frame::from_rgb)
                }
            })
            .await
            .map_err(decode_failed)??;
            Ok(Capture { picture: Picture::Whole(frame), wire_bytes })
        }
        CapturePath::Gzip => {
            let inflate = gunzip::BoundedGunzip::new(CAP, 12, super::frame::raw_capture_size);
            let (data, wire_bytes) = adb.exec_gunzip(key, GZIP_CAPTURE, CAP, inflate, deadline).await?;
            // Checks only (no pixel is touched): the header against the bytes.
            Ok(Capture { picture: Picture::Whole(Frame::from_raw(data)?), wire_bytes })
        }
        CapturePath::GzipParallel => {
            let streams = adb.capture_streams(key).unwrap_or(super::parallel::MAX_STREAMS).max(1);
            let (picture, wire_bytes) = super::parallel::parallel(adb, key, streams, CAP, fit, deadline).await?;
            Ok(Capture { picture, wire_bytes })
        }
        CapturePath::Framebuffer | CapturePath::Auto => framebuffer_fitted(adb, key, fit, deadline).await,
    }
}

/// Where `framebuffer:` pixels go as they arrive: into the downscale, or (the frame is no larger than the picture
/// asked for) into one buffer.
enum FbSink<'f> {
    Fit(Strip<'f>),
    Whole(Vec<u8>),
}

impl PixelSink for FbSink<'_> {
    fn take(&mut self, px: &[u8]) -> Result<(), String> {
        match self {
            FbSink::Fit(strip) => strip.take(px),
            // Grows as bytes arrive, never to the header's claim (the transport stops at the claimed size).
            FbSink::Whole(v) => {
                v.extend_from_slice(px);
                Ok(())
            }
        }
    }
}

/// `framebuffer:` for a caller that will make a picture of long side `fit` (0 = full size): where that is smaller
/// than the frame its pixels are downscaled as they arrive ([`super::fitting`], one range: the whole frame in
/// order), so the frame is never held whole; else they are collected as they arrive. The path of phones without
/// gzip (Android 7 and older), of `--capture-compression off`, and of every fallback.
async fn framebuffer_fitted(
    adb: &AdbBackend,
    key: &DeviceKey,
    fit: u32,
    deadline: Duration,
) -> Result<Capture, ProtoError> {
    // Made from the header inside `start`, but kept here: the sink's strip borrows it, and it outlives the sink.
    let fitting = std::sync::OnceLock::new();
    let start = |h: &FbHeader| {
        let shape = Shape::of_framebuffer(h)?;
        Ok(match fit_size(shape.width, shape.height, fit) {
            Some((nw, nh)) => {
                FbSink::Fit(fitting.get_or_init(|| Fitting::new(shape, &[], nw, nh)).strip(0, h.size as usize))
            }
            None => FbSink::Whole(Vec::new()),
        })
    };
    let (header, sink) = adb.framebuffer_feed(key, CAPTURE_CAP, start, deadline).await?;
    let wire_bytes = header.size as usize + 56;
    let picture = match sink {
        FbSink::Fit(strip) => {
            strip.finish();
            let fitting = fitting.into_inner().expect("made with its strip");
            Picture::Fitted(fitting.finish().map_err(bad_frame)?)
        }
        // Checks only (no pixel is touched): the header's layout against the bytes.
        FbSink::Whole(px) => Picture::Whole(Frame::from_framebuffer(&header, px)?),
    };
    Ok(Capture { picture, wire_bytes })
}
