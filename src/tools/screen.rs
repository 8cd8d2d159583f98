//! `android_screenshot`: captures the bound phone's screen, scales and encodes it on the host, and stores it in the
//! transfer plane's cache. The image never travels on the WebSocket: the result carries a `file_ref` and a one-time
//! `download_url` (device profile, "Files (MUST)").
//!
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
//! [`CapturePath::GzipParallel`], in [`super::capture`]. Measured on the simulated phone with a phone's costs:
//! `BENCHMARKS.md`, "Issue 24".

use std::sync::Arc;
use std::time::Duration;

use image::codecs::png::{CompressionType, FilterType as PngFilter, PngEncoder};
use image::{ImageEncoder, RgbImage};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use super::device::{tool, Ctx};
use super::fitting::{Fitted, Fitting, Strip};
use super::frame::Shape;
pub use super::frame::{Frame, MAX_FRAME_BYTES, MAX_PIXELS, MAX_SIDE};
use super::{args, Tool, ToolSpec};
use crate::device::adb::AdbBackend;
use crate::device::formats;
use crate::device::gunzip;
use crate::device::transport::{FbHeader, PixelSink};
use crate::device::DeviceKey;
use crate::files::{self, NewFile};
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
    /// at once, one byte range each, on several of the phone's cores ([`super::capture`]).
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

/// A captured screen: the whole frame as the phone sent it (converted and scaled only when the output is made:
/// [`Frame::fit`]), or already downscaled as it arrived ([`super::fitting`]: a parallel or framebuffer capture asked
/// for a picture smaller than the frame).
pub enum Picture {
    Whole(Frame),
    Fitted(Fitted),
}

impl Picture {
    /// The frame's own size (the screen in its current orientation).
    pub fn dimensions(&self) -> (u32, u32) {
        match self {
            Picture::Whole(f) => f.dimensions(),
            Picture::Fitted(f) => (f.width, f.height),
        }
    }

    /// See [`Frame::uniform_colour`] (a fitted picture's answer was found on the full frame's pixels as they
    /// arrived).
    pub fn uniform_colour(&self) -> Option<[u8; 3]> {
        match self {
            Picture::Whole(f) => f.uniform_colour(),
            Picture::Fitted(f) => f.uniform,
        }
    }

    /// The RGB picture with its long side at most `max_side` (0 = keep): [`Frame::fit`], or the fitted picture
    /// (made for the same `max_side` the capture was asked for).
    pub fn fit(self, max_side: u32) -> RgbImage {
        match self {
            Picture::Whole(f) => f.fit(max_side),
            Picture::Fitted(f) => {
                let (w, h) = f.img.dimensions();
                if fit_size(f.width, f.height, max_side) == Some((w, h)) {
                    f.img
                } else {
                    // Not asked for this size: the nearest honest answer, never a wrong-sized one.
                    fit(f.img, max_side)
                }
            }
        }
    }

    /// The bytes that tell two captures apart: the frame's pixels as captured, or the fitted picture's.
    pub fn pixel_bytes(&self) -> &[u8] {
        match self {
            Picture::Whole(f) => f.pixel_bytes(),
            Picture::Fitted(f) => f.img.as_raw(),
        }
    }
}

/// A captured screen and what its capture cost.
pub struct Capture {
    pub picture: Picture,
    /// Bytes that crossed adb for it.
    pub wire_bytes: usize,
}

/// Bytes of decoded pixels a PNG from `screencap -p` may make us allocate: the largest screen we accept, in RGBA.
/// A PNG header is a promise, not the data: without this bound one claiming 60 000 × 60 000 would reserve
/// gigabytes before the first pixel is checked.
const PNG_MAX_ALLOC: u64 = MAX_FRAME_BYTES as u64;

/// Most bytes any capture may put on the wire: the largest frame we accept plus its header (and slack for a PNG
/// that compressed nothing). Every capture read is bounded by it; buffers grow as bytes arrive, never to a claim.
pub(crate) const CAPTURE_CAP: usize = MAX_FRAME_BYTES + (1 << 20);

pub(crate) fn bad_frame(msg: impl Into<String>) -> ProtoError {
    ProtoError::new(ErrorCode::BadFrame, format!("unreadable screen capture: {}", msg.into()))
}

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
/// ([`super::capture::PROBE`], which also counts the phone's CPUs for [`CapturePath::GzipParallel`]). A probe that
/// could not run (transport error) is not cached; one that ran is, whatever it answered.
pub async fn gzip_works(adb: &AdbBackend, key: &DeviceKey, deadline: Duration) -> Result<bool, ProtoError> {
    if let Some(known) = adb.gzip_capture(key) {
        return Ok(known);
    }
    let out = adb.exec(key, super::capture::PROBE, 4096, false, deadline).await?;
    let probed = super::capture::parse_probe(&out);
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
            Err(e) if e.message.starts_with(super::capture::TEMP_FILE_FAILED) => {
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
            let streams = adb.capture_streams(key).unwrap_or(super::capture::MAX_STREAMS).max(1);
            let (picture, wire_bytes) = super::capture::parallel(adb, key, streams, CAP, fit, deadline).await?;
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

/// Downscales by area averaging: each output pixel is the area-weighted mean of the source pixels it covers
/// (12-bit fixed-point weights). For screenshots (downscale only, factor ~2) this is as sharp as bilinear (50 dB
/// PSNR against `image`'s Triangle filter in `BENCHMARKS.md`) at a fraction of the cost, with a few KiB of working
/// memory instead of a float image the size of the source (Triangle allocated 22 MB per 1080×2400 frame).
pub fn area_downscale(src: &RgbImage, nw: u32, nh: u32) -> RgbImage {
    let (w, h) = src.dimensions();
    let out = area_downscale_raw(src.as_raw(), w as usize, h as usize, 3, nw, nh);
    RgbImage::from_raw(nw.max(1), nh.max(1), out).expect("buffer sized for nw × nh × 3")
}

/// [`area_downscale`] over raw interleaved pixels of `bpp` bytes (3 = RGB, 4 = RGBA/RGBX: the fourth byte is
/// skipped, so an RGBA frame is converted to RGB in the same pass). Returns tightly packed RGB.
///
/// Vertical pass first: each output row is the weighted sum of the (≤ 3 at factor ~2) source rows it covers,
/// accumulated over the whole row at once — a straight multiply-add over contiguous bytes that the compiler
/// vectorises — and only then the horizontal pass on that one accumulated row. The previous order (horizontal
/// per source row, with per-output tap vectors) did the expensive, gather-like pass on every source row: 12.8 ms
/// p50 for a 1080×2400 frame against 6.4 ms now, same run (bench `frame_cpu`, `BENCHMARKS.md`).
pub fn area_downscale_raw(px: &[u8], w: usize, h: usize, bpp: usize, nw: u32, nh: u32) -> Vec<u8> {
    assert!(bpp >= 3 && px.len() >= w * h * bpp && w > 0 && h > 0, "frame buffer smaller than w × h × bpp");
    area_downscale_rows(&Packed { px, w, bpp }, w, h, nw, nh)
}

/// [`area_downscale`] straight from a captured frame's bytes (issue 24): whole-byte layouts (RGBA, RGBX, BGRA,
/// RGB) are accumulated as they arrived and the R, G, B bytes picked in the horizontal pass — the channel
/// conversion costs nothing extra and no full-size RGB image is built; other layouts (RGB_565, bit fields) are
/// converted one source row at a time. Identical output to converting first and downscaling after.
pub(crate) fn area_downscale_src(frame: &Frame, nw: u32, nh: u32) -> Vec<u8> {
    let (w, h) = frame.dimensions();
    area_downscale_rows(frame, w as usize, h as usize, nw, nh)
}

/// Where the downscale reads its source rows from, and where R, G, B sit in each pixel of them.
pub(crate) trait Rows {
    /// Row `y` (`w` pixels of [`Rows::layout`]`.0` bytes), borrowed from the source or made in `scratch`.
    fn row<'a>(&'a self, y: usize, scratch: &'a mut Vec<u8>) -> &'a [u8];
    /// Bytes per pixel of a row and the byte index of R, G, B in a pixel.
    fn layout(&self) -> (usize, [usize; 3]);
}

/// Packed pixels whose first three bytes are R, G, B.
struct Packed<'p> {
    px: &'p [u8],
    w: usize,
    bpp: usize,
}

impl Rows for Packed<'_> {
    fn row<'a>(&'a self, y: usize, _: &'a mut Vec<u8>) -> &'a [u8] {
        let stride = self.w * self.bpp;
        &self.px[y * stride..(y + 1) * stride]
    }
    fn layout(&self) -> (usize, [usize; 3]) {
        (self.bpp, [0, 1, 2])
    }
}

impl Rows for Frame {
    fn row<'a>(&'a self, y: usize, scratch: &'a mut Vec<u8>) -> &'a [u8] {
        Frame::row(self, y, scratch)
    }
    fn layout(&self) -> (usize, [usize; 3]) {
        self.row_layout()
    }
}

fn area_downscale_rows<R: Rows + ?Sized>(src: &R, w: usize, h: usize, nw: u32, nh: u32) -> Vec<u8> {
    // The same kernel compiled for AVX2 where the CPU has it (runtime check, cached by std). The release build
    // targets baseline x86-64 (SSE2), which has no 32-bit vector multiply: the row accumulation below ran at about
    // half the speed (1080×2400 → 576×1280: 8.2 ms vs 4.3 ms, BENCHMARKS.md "Issue 24, host side"). aarch64 (the
    // Pi) has NEON in its baseline and needs no second copy. Same code, same integer arithmetic: same pixels.
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU supports AVX2, checked just above.
        return unsafe { area_downscale_rows_avx2(src, w, h, nw, nh) };
    }
    area_downscale_kernel(src, w, h, nw, nh)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn area_downscale_rows_avx2<R: Rows + ?Sized>(src: &R, w: usize, h: usize, nw: u32, nh: u32) -> Vec<u8> {
    area_downscale_kernel(src, w, h, nw, nh)
}

/// The area downscale itself (see [`area_downscale_raw`]); inlined into each of the two callers above so that each
/// is compiled for its own instruction set.
#[inline(always)]
fn area_downscale_kernel<R: Rows + ?Sized>(src: &R, w: usize, h: usize, nw: u32, nh: u32) -> Vec<u8> {
    let plan = Plan::new(w, h, nw, nh, src.layout());
    let mut scratch = Vec::new();
    // One accumulated source row: 255 × 4096 fits easily in u32.
    let mut acc = vec![0u32; plan.stride];
    let mut out = vec![0u8; plan.nw * plan.nh * 3];
    for ((first_y, wys), dst) in plan.ty.iter().zip(out.chunks_exact_mut(plan.nw * 3)) {
        acc.iter_mut().for_each(|a| *a = 0);
        for (ky, &wy) in wys.iter().enumerate() {
            let row = src.row(first_y + ky, &mut scratch);
            accumulate(&mut acc, row, wy);
        }
        plan.horizontal_fast(&acc, dst);
    }
    out
}

/// The weights of one area downscale of `w × h` pixels of a whole-byte layout to `nw × nh` RGB: vertical taps
/// per output row, horizontal taps per output column flattened to a fixed width. Shared by the downscale of a
/// whole frame ([`area_downscale_kernel`]) and the one fed row by row as a capture arrives ([`super::fitting`]).
pub(crate) struct Plan {
    pub(crate) nw: usize,
    pub(crate) nh: usize,
    /// Bytes of a source row as [`Rows::row`] returns it.
    pub(crate) stride: usize,
    bpp: usize,
    ch: [usize; 3],
    /// For each output row: the first source row and the weights (sum = 4096) of the rows it covers.
    pub(crate) ty: Vec<(usize, Vec<u32>)>,
    /// For each output column: the byte offset in the row of its first tap, and `maxt` weights from there.
    hx: Vec<usize>,
    hw: Vec<u32>,
    maxt: usize,
}

impl Plan {
    pub(crate) fn new(w: usize, h: usize, nw: u32, nh: u32, (bpp, ch): (usize, [usize; 3])) -> Plan {
        /// For each output index: the first source index and the weights (sum = 4096) of the sources it covers.
        fn taps(n_in: usize, n_out: usize) -> Vec<(usize, Vec<u32>)> {
            let scale = n_in as f64 / n_out as f64;
            (0..n_out)
                .map(|o| {
                    let (a, b) = (o as f64 * scale, (o + 1) as f64 * scale);
                    let first = (a.floor() as usize).min(n_in - 1);
                    let last = (b.ceil() as usize).clamp(first + 1, n_in);
                    let cover: Vec<f64> = (first..last).map(|i| ((i + 1) as f64).min(b) - (i as f64).max(a)).collect();
                    let total: f64 = cover.iter().sum::<f64>().max(f64::MIN_POSITIVE);
                    let mut w: Vec<u32> = cover.iter().map(|c| (c / total * 4096.0).round() as u32).collect();
                    // Rounding must not change the total, or flat colours would drift.
                    let sum: u32 = w.iter().sum();
                    if let Some(m) = w.iter_mut().max() {
                        *m = (*m + 4096).saturating_sub(sum);
                    }
                    (first, w)
                })
                .collect()
        }
        let (nw, nh) = (nw.max(1) as usize, nh.max(1) as usize);
        assert!(bpp >= 3 && ch.iter().all(|c| *c < bpp) && w > 0 && h > 0, "a layout of whole-byte channels");
        let (tx, ty) = (taps(w, nw), taps(h, nh));
        // Horizontal taps flattened to a fixed width (zero-weight padding kept inside the row), so the inner loop
        // has no per-output allocation to chase.
        let maxt = tx.iter().map(|(_, ws)| ws.len()).max().unwrap_or(1);
        let mut hx = Vec::with_capacity(nw);
        let mut hw = vec![0u32; nw * maxt];
        for (o, (first, ws)) in tx.iter().enumerate() {
            // `maxt` columns from `start` stay inside the row; the real taps sit at `first - start`.
            let start = (*first).min(w - maxt);
            let off = first - start;
            hw[o * maxt + off..o * maxt + off + ws.len()].copy_from_slice(ws);
            hx.push(start * bpp);
        }
        Plan { nw, nh, stride: w * bpp, bpp, ch, ty, hx, hw, maxt }
    }

    /// The horizontal pass of one output row over its vertically accumulated source row `acc`. Both weight sets
    /// sum to exactly 4096, so the total is at most 255 × 4096 × 4096 (+ the rounding half) < 2³²: u32 is exact.
    #[inline(always)]
    pub(crate) fn horizontal(&self, acc: &[u32], dst: &mut [u8]) {
        let (bpp, [cr, cg, cb], maxt) = (self.bpp, self.ch, self.maxt);
        if bpp == 4 {
            return horizontal_4(acc, &self.hx, &self.hw, maxt, self.ch, dst);
        }
        for ((&x0, wxs), d) in self.hx.iter().zip(self.hw.chunks_exact(maxt)).zip(dst.chunks_exact_mut(3)) {
            let mut sum = [1u32 << 23; 3];
            for (k, &wx) in wxs.iter().enumerate() {
                let p = &acc[x0 + k * bpp..x0 + (k + 1) * bpp];
                sum[0] += p[cr] * wx;
                sum[1] += p[cg] * wx;
                sum[2] += p[cb] * wx;
            }
            d[0] = (sum[0] >> 24).min(255) as u8;
            d[1] = (sum[1] >> 24).min(255) as u8;
            d[2] = (sum[2] >> 24).min(255) as u8;
        }
    }
}

impl Plan {
    /// [`Plan::horizontal`] with AVX2 where the CPU has it (see [`area_downscale_rows`]): 4-byte pixels four
    /// output pixels at a time ([`horizontal_4_quads`]), everything else compiled for AVX2 as it is.
    pub(crate) fn horizontal_fast(&self, acc: &[u32], dst: &mut [u8]) {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            #[target_feature(enable = "avx2")]
            unsafe fn avx2(plan: &Plan, acc: &[u32], dst: &mut [u8]) {
                if plan.bpp == 4 {
                    // SAFETY: this function is only called where the CPU supports AVX2.
                    unsafe { horizontal_4_quads(acc, &plan.hx, &plan.hw, plan.maxt, plan.ch, dst) }
                } else {
                    plan.horizontal(acc, dst)
                }
            }
            // SAFETY: the CPU supports AVX2, checked just above.
            return unsafe { avx2(self, acc, dst) };
        }
        self.horizontal(acc, dst)
    }
}

/// [`horizontal_4`] four output pixels at a time. Summing a pixel's four lanes is one 128-bit multiply-add per
/// tap either way; what the compiler's code spent most of its time on was picking R, G, B out of the sums one
/// byte at a time through memory. Here the four pixels' sums are narrowed together (`packus`: they are ≤ 255
/// after the shift, so saturation never changes a value) and R, G, B picked by one byte shuffle, 12 bytes stored
/// at once. The same u32 arithmetic (wrapping multiply and add, never reaching 2³² by the bound in
/// [`Plan::horizontal`]): the same bytes.
///
/// # Safety
/// The CPU must support AVX2. Every memory access is through a bounds-checked slice or array.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn horizontal_4_quads(acc: &[u32], hx: &[usize], hw: &[u32], maxt: usize, ch: [usize; 3], dst: &mut [u8]) {
    use std::arch::x86_64::*;
    let n = hx.len().min(dst.len() / 3);
    // Byte 3c + i of the output is byte 4i + ch[c] of the four narrowed pixels; the last four bytes are unused.
    let mut pick = [0x80u8; 16];
    for i in 0..4 {
        for (c, &at) in ch.iter().enumerate() {
            pick[i * 3 + c] = (i * 4 + at) as u8;
        }
    }
    // SAFETY: loads the 16 bytes of `pick`.
    let pick = unsafe { _mm_loadu_si128(pick.as_ptr().cast::<__m128i>()) };
    let mut o = 0;
    while o + 4 <= n {
        let mut sums = [_mm_set1_epi32(1 << 23); 4];
        for (i, sum) in sums.iter_mut().enumerate() {
            let x0 = hx[o + i];
            let (px, ws) = (&acc[x0..x0 + maxt * 4], &hw[(o + i) * maxt..(o + i + 1) * maxt]);
            for (tap, &w) in px.chunks_exact(4).zip(ws) {
                let tap: &[u32; 4] = tap.try_into().expect("four lanes");
                // SAFETY: loads the 16 bytes of the `[u32; 4]` borrowed just above.
                let v = unsafe { _mm_loadu_si128(tap.as_ptr().cast::<__m128i>()) };
                *sum = _mm_add_epi32(*sum, _mm_mullo_epi32(v, _mm_set1_epi32(w as i32)));
            }
        }
        let [a, b, c, d] = sums.map(|v| _mm_srli_epi32::<24>(v));
        let bytes = _mm_shuffle_epi8(_mm_packus_epi16(_mm_packus_epi32(a, b), _mm_packus_epi32(c, d)), pick);
        let mut out = [0u8; 16];
        // SAFETY: stores into the 16 bytes of `out`.
        unsafe { _mm_storeu_si128(out.as_mut_ptr().cast::<__m128i>(), bytes) };
        dst[o * 3..o * 3 + 12].copy_from_slice(&out[..12]);
        o += 4;
    }
    if o < n {
        horizontal_4(acc, &hx[o..], &hw[o * maxt..], maxt, ch, &mut dst[o * 3..]);
    }
}

/// [`accumulate`] compiled for AVX2 where the CPU has it: for callers that add one source row at a time.
pub(crate) fn accumulate_fast(acc: &mut [u32], row: &[u8], weight: u32) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        #[target_feature(enable = "avx2")]
        unsafe fn avx2(acc: &mut [u32], row: &[u8], weight: u32) {
            accumulate(acc, row, weight)
        }
        // SAFETY: the CPU supports AVX2, checked just above.
        return unsafe { avx2(acc, row, weight) };
    }
    accumulate(acc, row, weight)
}

/// `acc += row × weight`, byte by byte: a straight multiply-add over contiguous bytes that the compiler vectorises.
#[inline(always)]
pub(crate) fn accumulate(acc: &mut [u32], row: &[u8], weight: u32) {
    assert_eq!(row.len(), acc.len(), "a source row is w × bpp bytes");
    for (a, &p) in acc.iter_mut().zip(row) {
        *a += u32::from(p) * weight;
    }
}

/// The horizontal pass for 4-byte pixels (RGBA, RGBX, BGRA: nearly every capture): all four lanes of a tap are
/// summed at once, one vector multiply-add per tap instead of three scalar ones with picked channels (the picked
/// version was over half of the downscale's time), and R, G, B picked from the sums. Same integer arithmetic, same
/// bytes (the alpha lane's sum is computed and dropped; it has the same bound as the others).
#[inline(always)]
fn horizontal_4(acc: &[u32], hx: &[usize], hw: &[u32], maxt: usize, ch: [usize; 3], dst: &mut [u8]) {
    for ((&x0, wxs), d) in hx.iter().zip(hw.chunks_exact(maxt)).zip(dst.chunks_exact_mut(3)) {
        let mut sum = [1u32 << 23; 4];
        for (p, &wx) in acc[x0..x0 + maxt * 4].chunks_exact(4).zip(wxs) {
            for (s, &v) in sum.iter_mut().zip(p) {
                *s += v * wx;
            }
        }
        d[0] = (sum[ch[0]] >> 24).min(255) as u8;
        d[1] = (sum[ch[1]] >> 24).min(255) as u8;
        d[2] = (sum[ch[2]] >> 24).min(255) as u8;
    }
}

/// Output encoding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Jpeg { quality: u8 },
    Png,
}

/// Scales a captured frame so its long side is at most `max_side` (0 = keep), straight from its bytes
/// ([`Frame::fit`]), and encodes it. CPU-bound: call it on a blocking thread.
pub fn render(frame: &Frame, max_side: u32, format: Format) -> Result<(Vec<u8>, u32, u32), ProtoError> {
    encode(&frame.fit(max_side), format)
}

/// The output size for a `w × h` picture whose long side may be at most `max_side` (0 = keep), or `None` when it
/// is kept as it is.
pub(crate) fn fit_size(w: u32, h: u32, max_side: u32) -> Option<(u32, u32)> {
    let long = w.max(h);
    (max_side > 0 && long > max_side).then(|| {
        let s = f64::from(max_side) / f64::from(long);
        (((f64::from(w) * s).round() as u32).max(1), ((f64::from(h) * s).round() as u32).max(1))
    })
}

/// Scales `img` so its long side is at most `max_side` (0 = keep). For a capture use [`Frame::fit`], which does
/// the same from the captured bytes without a full-size RGB copy.
pub fn fit(img: RgbImage, max_side: u32) -> RgbImage {
    let (w, h) = img.dimensions();
    match fit_size(w, h, max_side) {
        Some((nw, nh)) => area_downscale(&img, nw, nh),
        None => img,
    }
}

/// JPEG through `jpeg-encoder`: 2–3× faster than `image`'s encoder on screenshots (AVX2 where the CPU has it,
/// portable code elsewhere, pure Rust so the static ARM builds need nothing more) and smaller files at the same
/// quality. Chroma is box-averaged (like libjpeg), not point-sampled, so thin coloured lines — the observe marks,
/// UI accents — keep their colour.
fn encode_jpeg(img: &RgbImage, quality: u8, out: &mut Vec<u8>) -> Result<(), String> {
    let (w, h) = img.dimensions();
    let (Ok(w16), Ok(h16)) = (u16::try_from(w), u16::try_from(h)) else {
        return Err(format!("{w}×{h} is larger than JPEG allows (65535 px a side)"));
    };
    let mut enc = jpeg_encoder::Encoder::new(out, quality.clamp(1, 100));
    enc.set_chroma_subsampling_method(jpeg_encoder::ChromaSubsamplingMethod::Average);
    enc.encode(img.as_raw(), w16, h16, jpeg_encoder::ColorType::Rgb).map_err(|e| e.to_string())
}

/// Encodes an image as it is. CPU-bound: call it on a blocking thread.
pub fn encode(img: &RgbImage, format: Format) -> Result<(Vec<u8>, u32, u32), ProtoError> {
    let (w, h) = img.dimensions();
    let mut out = Vec::new();
    let r = match format {
        Format::Jpeg { quality } => encode_jpeg(img, quality, &mut out),
        Format::Png => PngEncoder::new_with_quality(&mut out, CompressionType::Fast, PngFilter::Adaptive)
            .write_image(img.as_raw(), w, h, image::ExtendedColorType::Rgb8)
            .map_err(|e| e.to_string()),
    };
    r.map_err(|e| ProtoError::new(ErrorCode::Internal, format!("encoding the screenshot failed: {e}")))?;
    Ok((out, w, h))
}

/// The colour of a frame that is one uniform colour, or `None`. Checked on the decoded frame: every 4th pixel of
/// every 4th row, each within ±2 per channel of the first (captures can be dithered). A real screen differs
/// within its first rows (status bar, text), so a normal frame costs a handful of comparisons; a blank one about
/// 1/16 of its pixels (≈ 160 k for 1080×2400, well under a millisecond).
pub fn uniform_colour(img: &RgbImage) -> Option<[u8; 3]> {
    let first = img.get_pixel_checked(0, 0)?.0;
    let near = |p: [u8; 3]| p.iter().zip(first).all(|(a, b)| a.abs_diff(b) <= 2);
    for y in (0..img.height()).step_by(4) {
        for x in (0..img.width()).step_by(4) {
            if !near(img.get_pixel(x, y).0) {
                return None;
            }
        }
    }
    Some(first)
}

/// What a captured frame shows, for a result's `frame`: the picture, or why it shows nothing. Peers hand an agent
/// a black picture without a word (peers-2026 §2.8); a wrong word is worse, so each verdict rests on a read of
/// the phone, not on the pixels alone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shows {
    /// The picture shows the screen.
    Ok,
    /// Black because the screen is off.
    ScreenOff,
    /// Black because the focused window has `FLAG_SECURE` (SurfaceFlinger leaves it out of captures); the
    /// accessibility tree is not affected, so the elements are the way to see it.
    SecureWindow,
    /// One uniform colour while the screen is on and no secure window is known: a splash or loading screen, an
    /// app that draws nothing yet, or a failed capture.
    Blank([u8; 3]),
}

impl Shows {
    pub fn as_str(self) -> &'static str {
        match self {
            Shows::Ok => "ok",
            Shows::ScreenOff => "screen_off",
            Shows::SecureWindow => "secure_window",
            Shows::Blank(_) => "blank",
        }
    }

    /// `frame_blank` (kept beside `frame` for agents written against it): a uniform frame of a lit screen.
    pub fn blank(self) -> bool {
        matches!(self, Shows::SecureWindow | Shows::Blank(_))
    }

    /// What the agent can do about it, when anything.
    pub fn hint(self) -> Option<String> {
        match self {
            Shows::Ok => None,
            Shows::ScreenOff => {
                Some("the screen is off, so the picture is black: input tools wake it, or call android_wake".into())
            }
            Shows::SecureWindow => Some(
                "the picture is black because the focused window is secure (FLAG_SECURE: banking, passwords, DRM \
                 video): the phone leaves it out of every capture. Its elements are readable: use the element list \
                 (android_ui_dump, or the elements of android_observe) to see and act"
                    .into(),
            ),
            Shows::Blank([r, g, b]) => Some(format!(
                "the picture is one uniform colour (#{r:02x}{g:02x}{b:02x}) although the screen is on and no secure \
                 window has focus: a splash or loading screen, or a failed capture. Wait a moment and look again, or \
                 use the element list (android_ui_dump / the elements of android_observe)"
            )),
        }
    }
}

/// The [`Shows`] verdict of a capture whose uniform colour is `uniform` (from `uniform_colour`), with the screen
/// state read for it (see [`screen_on_for`]). Only a uniform frame of a lit screen costs a round trip: the window
/// flags of [`formats::secure_window_command`]. An unreadable screen state counts as on (the picture failed
/// either way); unreadable window flags give `blank`, never a guessed `secure_window`.
pub async fn frame_verdict(c: &Ctx, uniform: Option<[u8; 3]>, screen_on: Option<bool>) -> Shows {
    let Some(colour) = uniform else {
        return if screen_on == Some(false) { Shows::ScreenOff } else { Shows::Ok };
    };
    if screen_on == Some(false) {
        return Shows::ScreenOff;
    }
    let sdk = crate::device::Backend::info(&*c.adb, &c.device).and_then(|i| i.sdk);
    let cmd = formats::secure_window_command(sdk);
    let out = c.adb.shell(&c.device, &cmd, false, Duration::from_secs(5)).await;
    match out.ok().and_then(|o| formats::focused_window_secure(&o.stdout)) {
        Some(true) => Shows::SecureWindow,
        _ => Shows::Blank(colour),
    }
}

/// Whether the screen is on, to go with a capture: the cached state for a normal frame; read afresh for a uniform
/// one, which is either a phone that fell asleep since the last read or a blank frame (a wrong guess here would
/// send the agent after the wrong cause). An unreadable state is `None` (frame_blank cannot exclude sleep then).
pub async fn screen_on_for(c: &Ctx, uniform: bool) -> Option<bool> {
    if uniform {
        c.adb.forget_screen_state(&c.device);
    }
    c.adb.screen_state(&c.device).await.ok().and_then(|s| s.screen_on)
}

/// Largest `max_side` an agent may ask for (the biggest phone screens are ~3200 px).
pub const MAX_SIDE_ARG: u32 = 8192;

// Serialize: schemars writes a field's `default` only for a type it can serialize.
#[derive(Clone, Copy, Default, Deserialize, serde::Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum ImageFormat {
    #[default]
    Jpeg,
    Png,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ScreenshotArgs {
    #[serde(default)]
    format: ImageFormat,
    /// Longest side in px (downscaled); 0 = full size
    #[schemars(range(min = 0, max = MAX_SIDE_ARG))]
    #[serde(default = "side_1280")]
    max_side: u32,
    #[schemars(range(min = 1, max = 100))]
    #[serde(default = "quality_80")]
    quality: u8,
}

/// Default longest side of a picture for an agent (`android_screenshot`, `android_observe`).
pub fn side_1280() -> u32 {
    1280
}

/// Default JPEG quality (`android_screenshot`, `android_observe`).
pub fn quality_80() -> u8 {
    80
}

pub fn tools(adb: &Arc<AdbBackend>) -> Vec<Arc<dyn Tool>> {
    vec![tool(
        ToolSpec {
            id: "android_screenshot",
            title: "Take a screenshot",
            description: "The screen as an image file (one-time URL). Divide image coordinates by `scale` to \
                          tap.",
            input: args::schema::<ScreenshotArgs>(),
            output: json!({"type": "object", "properties": {
                    "files": {"type": "array", "items": files::file_item_schema()},
                    "width": {"type": "integer"}, "height": {"type": "integer"},
                    "screen_width": {"type": "integer"}, "screen_height": {"type": "integer"},
                    "scale": {"type": "number"},
                    "screen_on": {"type": ["boolean", "null"], "description": "false: asleep, black picture"},
                    "frame": {"type": "string", "enum": ["ok", "screen_off", "secure_window", "blank"]},
                    "frame_blank": {"type": "boolean", "description": "frame is secure_window or blank"},
                    "hint": {"type": "string"}}}),
            side_effect: false,
            settles: false,
            deadline: Duration::from_secs(30),
        },
        adb,
        |c| async move {
            let a: ScreenshotArgs = c.parse()?;
            let format = match a.format {
                ImageFormat::Jpeg => Format::Jpeg { quality: a.quality.clamp(1, 100) },
                ImageFormat::Png => Format::Png,
            };
            let max_side = a.max_side.min(MAX_SIDE_ARG);
            let (screen_w, screen_h) = c.adb.screen_size(&c.device).await?;
            let _permit = super::permits::captures().acquire(&c.device).await?;
            let frame = match capture(&c.adb, &c.device, DEFAULT_PATH, max_side, c.spec.deadline).await {
                Ok(f) => f,
                // A device that did not answer in time will not answer a second request either.
                Err(e) if e.code == ErrorCode::DeviceTimeout => return Err(e),
                Err(e) => {
                    tracing::debug!(error = %e, "framebuffer capture failed; falling back to raw screencap");
                    capture(&c.adb, &c.device, CapturePath::Raw, max_side, c.spec.deadline).await?
                }
            };
            let (ext, mime) = match format {
                Format::Jpeg { .. } => ("jpg", "image/jpeg"),
                Format::Png => ("png", "image/png"),
            };
            let meta = NewFile {
                channel_id: c.call.channel_id.clone(),
                filename: format!("screenshot-{}.{ext}", crate::protocol::now_ms()),
                mime: mime.into(),
            };
            // The frame is captured in the display's current (rotated) space and `wm size` is the natural one: a
            // landscape frame turns the size with it, at no extra round trip, so the numbers always match the image.
            let (fw, fh) = frame.picture.dimensions();
            let (screen_w, screen_h) = if (fw > fh) != (screen_w > screen_h) && fw != fh && screen_w != screen_h {
                (screen_h, screen_w)
            } else {
                (screen_w, screen_h)
            };
            let cache = c.files.clone();
            let (row, w, h, uniform) = tokio::task::spawn_blocking(move || {
                let uniform = frame.picture.uniform_colour();
                let (bytes, w, h) = encode(&frame.picture.fit(max_side), format)?;
                let row = cache.store_bytes(&bytes, meta).map_err(|e| e.into_proto("the screenshot"))?;
                Ok::<_, ProtoError>((row, w, h, uniform))
            })
            .await
            .map_err(|_| ProtoError::new(ErrorCode::Internal, "screenshot encoding failed unexpectedly"))??;
            let screen_on = screen_on_for(&c, uniform.is_some()).await;
            // Orientation-agnostic: the long sides correspond whether the phone is in portrait or landscape.
            let scale = f64::from(w.max(h)) / f64::from(screen_w.max(screen_h).max(1));
            let mut out = json!({
                "files": [files::describe(&row)],
                "width": w, "height": h,
                "screen_width": screen_w, "screen_height": screen_h,
                "scale": (scale * 10_000.0).round() / 10_000.0,
                "screen_on": screen_on,
            });
            let frame = frame_verdict(&c, uniform, screen_on).await;
            out["frame"] = json!(frame.as_str());
            out["frame_blank"] = json!(frame.blank());
            if let Some(hint) = frame.hint() {
                out["hint"] = json!(hint);
            }
            Ok(out)
        },
    )]
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    #[test]
    fn uniform_frames_are_found_and_a_single_glyph_is_enough_to_tell() {
        let mut img = RgbImage::from_pixel(1080, 2400, image::Rgb([0, 0, 0]));
        assert_eq!(uniform_colour(&img), Some([0, 0, 0]));
        // Dithering of ±2 is still one colour; a 4×4 block of text anywhere is not.
        img.put_pixel(8, 8, image::Rgb([2, 1, 0]));
        assert_eq!(uniform_colour(&img), Some([0, 0, 0]));
        for y in 1200..1204 {
            for x in 537..541 {
                img.put_pixel(x, y, image::Rgb([255, 255, 255]));
            }
        }
        assert_eq!(uniform_colour(&img), None);
        assert!(Shows::SecureWindow.hint().unwrap().contains("FLAG_SECURE"));
        assert!(Shows::Blank([0, 0, 0]).hint().unwrap().contains("#000000"));
        assert!(Shows::SecureWindow.blank() && Shows::Blank([1, 2, 3]).blank());
        assert!(!Shows::ScreenOff.blank() && !Shows::Ok.blank() && Shows::Ok.hint().is_none());
    }

    fn raw(w: u32, h: u32, format: u32, header16: bool, px: &[u8]) -> Vec<u8> {
        let mut v = Vec::new();
        for n in [w, h, format] {
            v.extend_from_slice(&n.to_le_bytes());
        }
        if header16 {
            v.extend_from_slice(&1u32.to_le_bytes());
        }
        v.extend_from_slice(px);
        v
    }

    #[test]
    fn raw_frames_decode_in_every_common_format() {
        let img = decode_raw(&raw(2, 1, 1, true, &[1, 2, 3, 255, 4, 5, 6, 255])).unwrap();
        assert_eq!(img.as_raw(), &[1, 2, 3, 4, 5, 6]);
        let img = decode_raw(&raw(1, 1, 5, false, &[3, 2, 1, 255])).unwrap();
        assert_eq!(img.as_raw(), &[1, 2, 3], "BGRA, old 12-byte header");
        let img = decode_raw(&raw(1, 1, 4, true, &0xF800u16.to_le_bytes())).unwrap();
        assert_eq!(img.as_raw(), &[255, 0, 0], "RGB_565 red");
        assert!(decode_raw(&raw(2, 2, 1, true, &[0; 15])).is_err(), "short frame");
        assert!(decode_raw(&raw(1, 1, 9, true, &[0; 4])).is_err(), "unknown format");
        assert!(decode_raw(&raw(100_000, 1, 1, true, &[])).is_err(), "implausible size");
        assert!(decode_raw(&[1, 2]).is_err());
    }

    #[test]
    fn framebuffer_channel_layout_comes_from_the_header() {
        let hdr =
            |bpp, red, green, blue| FbHeader { bpp, size: 0, width: 2, height: 1, red, green, blue, alpha: (0, 0) };
        let rgba = hdr(32, (0, 8), (8, 8), (16, 8));
        let img = decode_framebuffer(&rgba, &[1, 2, 3, 255, 4, 5, 6, 255]).unwrap();
        assert_eq!(img.as_raw(), &[1, 2, 3, 4, 5, 6]);
        let bgra = hdr(32, (16, 8), (8, 8), (0, 8));
        let img = decode_framebuffer(&bgra, &[1, 2, 3, 255, 4, 5, 6, 255]).unwrap();
        assert_eq!(img.as_raw(), &[3, 2, 1, 6, 5, 4], "BGRA: red is the third byte");
        let rgb565 = hdr(16, (11, 5), (5, 6), (0, 5));
        let mut px = 0xF800u16.to_le_bytes().to_vec();
        px.extend_from_slice(&0x07E0u16.to_le_bytes());
        assert_eq!(decode_framebuffer(&rgb565, &px).unwrap().as_raw(), &[255, 0, 0, 0, 255, 0]);
        assert!(decode_framebuffer(&rgba, &[0; 7]).is_err(), "short frame");
        assert!(decode_framebuffer(&hdr(32, (0, 0), (8, 8), (16, 8)), &[0; 8]).is_err(), "no red channel");
        assert!(decode_framebuffer(&hdr(32, (30, 8), (8, 8), (16, 8)), &[0; 8]).is_err(), "channel past the pixel");
    }

    /// Issue 22, item 1: headers that lie are `bad_frame`, never a panic (release builds abort on panic, taking
    /// every phone down).
    #[test]
    fn lying_framebuffer_headers_are_bad_frames() {
        let hdr = |bpp, red: (u32, u32)| FbHeader {
            bpp,
            size: 0,
            width: 2,
            height: 1,
            red,
            green: (8, 8),
            blue: (16, 8),
            alpha: (24, 8),
        };
        for (what, h, len) in [
            ("red offset wrapping u32", hdr(32, (0xFFFF_FFF8, 8)), 8),
            ("red offset at the top of u32", hdr(32, (u32::MAX, 1)), 8),
            ("offset past the pixel", hdr(32, (32, 1)), 8),
            ("a depth that is no whole byte count", hdr(39, (31, 8)), 8),
            ("a depth of 0", hdr(0, (0, 8)), 0),
            ("a depth of 64", hdr(64, (0, 8)), 16),
        ] {
            let e = decode_framebuffer(&h, &vec![0u8; len]).err().unwrap_or_else(|| panic!("{what}: accepted"));
            assert_eq!(e.code, ErrorCode::BadFrame, "{what}: {e:?}");
        }
        let huge = FbHeader { width: u32::MAX, height: u32::MAX, ..hdr(32, (0, 8)) };
        assert_eq!(decode_framebuffer(&huge, &[0; 8]).unwrap_err().code, ErrorCode::BadFrame);
    }

    #[test]
    fn lying_raw_and_png_captures_are_bad_frames() {
        // A raw header claiming one more row than sent, and one claiming 60 000² with 64 bytes.
        let e = decode_raw(&raw(2, 2, 1, true, &[0; 8])).unwrap_err();
        assert_eq!(e.code, ErrorCode::BadFrame);
        let e = decode_raw(&raw(60_000, 60_000, 1, true, &[0; 64])).unwrap_err();
        assert_eq!(e.code, ErrorCode::BadFrame);
        assert_eq!(decode_raw(&raw(u32::MAX, u32::MAX, 1, true, &[])).unwrap_err().code, ErrorCode::BadFrame);
        // A PNG whose IHDR claims 60 000 × 60 000: refused from the header (the default limits of `image` would
        // let 11 000² through, and a decoder without limits reserves 14 GB).
        let mut png = Vec::new();
        PngEncoder::new(&mut png).write_image(&[0u8; 4], 1, 1, image::ExtendedColorType::Rgba8).unwrap();
        assert!(decode_png(&png).is_ok(), "an honest 1×1 PNG decodes");
        png[16..20].copy_from_slice(&60_000u32.to_be_bytes());
        png[20..24].copy_from_slice(&60_000u32.to_be_bytes());
        let e = decode_png(&png).unwrap_err();
        assert_eq!(e.code, ErrorCode::BadFrame, "{e:?}");
        png[16..20].copy_from_slice(&4_000u32.to_be_bytes());
        png[20..24].copy_from_slice(&2_300u32.to_be_bytes());
        assert_eq!(decode_png(&png).unwrap_err().code, ErrorCode::BadFrame, "within the side limit, no pixels");
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2048))]
        /// Any header with any (small) pixel buffer: an image or `bad_frame`, never a panic.
        #[test]
        fn framebuffer_decoding_never_panics(
            bpp in proptest::prop_oneof![proptest::prelude::Just(16u32), proptest::prelude::Just(24), proptest::prelude::Just(32), proptest::prelude::any::<u32>()],
            width in 0u32..5, height in 0u32..5,
            ch in proptest::array::uniform6(proptest::prop_oneof![0u32..40, proptest::prelude::any::<u32>()]),
            extra in 0usize..3,
        ) {
            let h = FbHeader { bpp, size: 0, width, height, red: (ch[0], ch[1]), green: (ch[2], ch[3]),
                               blue: (ch[4], ch[5]), alpha: (0, 0) };
            let len = (width * height) as usize * (bpp as usize / 8 % 8) + extra;
            if let Err(e) = decode_framebuffer(&h, &vec![0x5a; len]) {
                proptest::prop_assert_eq!(e.code, ErrorCode::BadFrame);
            }
        }

        #[test]
        fn raw_decoding_never_panics(data in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..64)) {
            if let Err(e) = decode_raw(&data) {
                proptest::prop_assert_eq!(e.code, ErrorCode::BadFrame);
            }
        }
    }

    #[test]
    fn area_downscale_averages_exactly() {
        // Flat colours stay exactly flat.
        let flat = RgbImage::from_pixel(1080, 2400, image::Rgb([12, 200, 99]));
        let d = area_downscale(&flat, 576, 1280);
        assert_eq!(d.dimensions(), (576, 1280));
        assert!(d.pixels().all(|p| p.0 == [12, 200, 99]));
        // Halving averages 2×2 blocks.
        let mut img = RgbImage::new(4, 2);
        for (x, v) in [(0, 0u8), (1, 100), (2, 200), (3, 40)] {
            img.put_pixel(x, 0, image::Rgb([v, v, v]));
            img.put_pixel(x, 1, image::Rgb([v, v, v]));
        }
        let d = area_downscale(&img, 2, 1);
        assert_eq!((d.get_pixel(0, 0).0[0], d.get_pixel(1, 0).0[0]), (50, 120));
        // Close to image's Triangle filter on a busy picture (what the screenshots used before).
        let busy = RgbImage::from_fn(1080, 2400, |x, y| {
            image::Rgb([(x * 7 % 256) as u8, (y * 3 % 256) as u8, ((x ^ y) % 256) as u8])
        });
        let ours = area_downscale(&busy, 540, 1200);
        let theirs = image::imageops::resize(&busy, 540, 1200, image::imageops::FilterType::Triangle);
        let mse: f64 = ours
            .as_raw()
            .iter()
            .zip(theirs.as_raw())
            .map(|(a, b)| (f64::from(*a) - f64::from(*b)).powi(2))
            .sum::<f64>()
            / ours.as_raw().len() as f64;
        let psnr = 10.0 * (255.0f64 * 255.0 / mse.max(1e-9)).log10();
        assert!(psnr > 25.0, "PSNR {psnr:.1} dB");
    }

    /// The two-pass fixed-point downscale equals the direct definition (Σ wx·wy·p over the covered source
    /// pixels, rounded once), for RGB and for RGBA input (alpha skipped), at sizes that do not divide evenly.
    #[test]
    fn area_downscale_matches_the_direct_sum_and_fuses_rgba() {
        let (w, h, nw, nh) = (203usize, 451usize, 97u32, 216u32);
        let rgb: Vec<u8> = (0..w * h * 3).map(|i| ((i * 7919) % 251) as u8).collect();
        let rgba: Vec<u8> = rgb.chunks_exact(3).flat_map(|p| [p[0], p[1], p[2], 77]).collect();
        let fast = area_downscale_raw(&rgb, w, h, 3, nw, nh);
        assert_eq!(fast, area_downscale_raw(&rgba, w, h, 4, nw, nh), "RGBA input gives the same RGB");
        // Direct definition with the same 12-bit weights.
        let weights = |n_in: usize, n_out: usize, o: usize| -> Vec<(usize, u64)> {
            let s = n_in as f64 / n_out as f64;
            let (a, b) = (o as f64 * s, (o + 1) as f64 * s);
            let idx: Vec<usize> = (a.floor() as usize..(b.ceil() as usize).min(n_in)).collect();
            let cover: Vec<f64> = idx.iter().map(|&i| ((i + 1) as f64).min(b) - (i as f64).max(a)).collect();
            let total: f64 = cover.iter().sum();
            let mut wts: Vec<u64> = cover.iter().map(|c| (c / total * 4096.0).round() as u64).collect();
            let sum: u64 = wts.iter().sum();
            let m = wts.iter_mut().max().unwrap();
            *m = (*m + 4096).saturating_sub(sum);
            idx.into_iter().zip(wts).collect()
        };
        for oy in 0..nh as usize {
            for ox in 0..nw as usize {
                for c in 0..3 {
                    let mut acc = 0u64;
                    for (y, wy) in weights(h, nh as usize, oy) {
                        for (x, wx) in weights(w, nw as usize, ox) {
                            acc += u64::from(rgb[(y * w + x) * 3 + c]) * wy * wx;
                        }
                    }
                    let want = ((acc + (1 << 23)) >> 24).min(255) as u8;
                    assert_eq!(fast[(oy * nw as usize + ox) * 3 + c], want, "({ox},{oy}) channel {c}");
                }
            }
        }
    }

    /// A xorshift64 generator: repeatable test pixels without a dependency (also `tools::fitting`'s tests).
    pub(crate) fn xorshift(mut seed: u64) -> impl FnMut() -> u64 {
        move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        }
    }

    /// The vector horizontal pass (AVX2, this machine's path) and the portable one (what a Pi runs: aarch64 has no
    /// AVX2) give the same bytes for every 4-byte layout and for 3-byte pixels, at output widths that leave 0–3
    /// pixels for the tail, over accumulators at the top of their range (where a narrowing could saturate).
    #[test]
    fn the_vector_and_portable_horizontal_passes_agree() {
        let mut next = xorshift(0x2545_f491_4f6c_dd1d);
        let mut compared = 0;
        for (bpp, ch) in [(4, [0, 1, 2]), (4, [2, 1, 0]), (4, [1, 3, 0]), (3, [0, 1, 2])] {
            for (w, nw) in [(1080usize, 576u32), (203, 97), (64, 33), (17, 14), (9, 1)] {
                let plan = Plan::new(w, 10, nw, 5, (bpp, ch));
                for round in 0..4 {
                    // Σ wy·p over a source column: at most 255 × 4096; the last round sits at that bound.
                    let acc: Vec<u32> = (0..w * bpp)
                        .map(|_| if round == 3 { 255 * 4096 } else { (next() % (255 * 4096 + 1)) as u32 })
                        .collect();
                    let (mut portable, mut fast) = (vec![0u8; nw as usize * 3], vec![1u8; nw as usize * 3]);
                    plan.horizontal(&acc, &mut portable);
                    plan.horizontal_fast(&acc, &mut fast);
                    assert_eq!(portable, fast, "bpp {bpp}, channels {ch:?}, {w} → {nw}, round {round}");
                    compared += 1;
                }
            }
        }
        assert_eq!(compared, 4 * 5 * 4);
    }

    /// The decoders before issue 24 (full-size RGB first), verbatim in what they computed: the reference the
    /// fused path must equal.
    fn old_decode_raw(data: &[u8]) -> RgbImage {
        let u = |i: usize| u32::from_le_bytes([data[i], data[i + 1], data[i + 2], data[i + 3]]);
        let (w, h, format) = (u(0), u(4), u(8));
        let bpp = match format {
            1 | 2 | 5 => 4,
            3 => 3,
            _ => 2,
        };
        let px = &data[data.len() - (w * h) as usize * bpp..];
        let mut rgb = Vec::new();
        match format {
            1 | 2 => px.chunks_exact(4).for_each(|p| rgb.extend_from_slice(&p[..3])),
            5 => px.chunks_exact(4).for_each(|p| rgb.extend_from_slice(&[p[2], p[1], p[0]])),
            3 => rgb.extend_from_slice(px),
            _ => px.chunks_exact(2).for_each(|p| {
                let v = u16::from_le_bytes([p[0], p[1]]);
                let (r, g, b) = ((v >> 11) & 0x1f, (v >> 5) & 0x3f, v & 0x1f);
                rgb.extend_from_slice(&[(r * 255 / 31) as u8, (g * 255 / 63) as u8, (b * 255 / 31) as u8]);
            }),
        }
        RgbImage::from_raw(w, h, rgb).unwrap()
    }

    fn old_decode_framebuffer(h: &FbHeader, px: &[u8]) -> RgbImage {
        let bpp = (h.bpp / 8) as usize;
        let mut rgb = Vec::new();
        let scale = |v: u32, len: u32| ((v * 255 + ((1 << len) - 1) / 2) / ((1 << len) - 1)) as u8;
        for p in px.chunks_exact(bpp) {
            let mut v = 0u32;
            for (i, byte) in p.iter().enumerate() {
                v |= u32::from(*byte) << (8 * i);
            }
            let ch = |(off, len): (u32, u32)| scale((v >> off) & ((1 << len) - 1), len);
            rgb.extend_from_slice(&[ch(h.red), ch(h.green), ch(h.blue)]);
        }
        RgbImage::from_raw(h.width, h.height, rgb).unwrap()
    }

    /// Issue 24, item 2: the picture made straight from the captured bytes (channel extraction fused into the
    /// downscale, no full-size RGB) is bit-identical to the old path (decode to full-size RGB, then
    /// [`area_downscale`]) — every raw `screencap` format with both header sizes, `framebuffer:` layouts of whole
    /// bytes and of bit fields, portrait and landscape, odd sizes, downscaled and full size; and the blank-frame
    /// check on the bytes agrees with the old one on the decoded frame.
    #[test]
    fn frames_fit_straight_from_the_bytes_exactly_as_decoded_then_downscaled() {
        let mut rnd = xorshift(0x2545_f491_4f6c_dd1d);
        let sizes = [(1u32, 1u32), (1, 7), (9, 2), (37, 83), (83, 37), (203, 451), (640, 97), (108, 240)];
        let sides = [0u32, 1, 5, 36, 50, 82, 200, 451, 1280];
        let mut frames: Vec<(String, Frame, RgbImage)> = Vec::new();
        for &(w, h) in &sizes {
            // Half the frames random bytes, half flat with one odd block (so `uniform_colour` sees both answers).
            let mut bytes = |n: usize, flat: bool| -> Vec<u8> {
                let c = (rnd() & 0xff) as u8;
                (0..n).map(|i| if flat && i > 8 * 4 { c } else { (rnd() & 0xff) as u8 }).collect()
            };
            for flat in [false, true] {
                for (format, bpp) in [(1u32, 4usize), (2, 4), (3, 3), (4, 2), (5, 4)] {
                    for header16 in [false, true] {
                        let data = raw(w, h, format, header16, &bytes((w * h) as usize * bpp, flat));
                        let name = format!("raw format {format} {w}×{h} header16={header16} flat={flat}");
                        frames.push((name, Frame::from_raw(data.clone()).unwrap(), old_decode_raw(&data)));
                    }
                }
                type Channel = (u32, u32);
                let layouts: [(u32, Channel, Channel, Channel); 7] = [
                    (32, (0, 8), (8, 8), (16, 8)),  // RGBA_8888
                    (32, (16, 8), (8, 8), (0, 8)),  // BGRA_8888
                    (32, (8, 8), (16, 8), (24, 8)), // XRGB, alpha first
                    (24, (0, 8), (8, 8), (16, 8)),  // RGB_888
                    (16, (11, 5), (5, 6), (0, 5)),  // RGB_565
                    (16, (12, 4), (8, 4), (4, 4)),  // RGBA_4444
                    (32, (2, 8), (12, 7), (23, 6)), // odd bit fields
                ];
                for (bpp, red, green, blue) in layouts {
                    let hdr = FbHeader { bpp, size: 0, width: w, height: h, red, green, blue, alpha: (0, 0) };
                    let px = bytes((w * h * bpp / 8) as usize, flat);
                    let name = format!("framebuffer {bpp} bpp {red:?} {green:?} {blue:?} {w}×{h} flat={flat}");
                    let (new, old) =
                        (Frame::from_framebuffer(&hdr, px.clone()).unwrap(), old_decode_framebuffer(&hdr, &px));
                    frames.push((name, new, old));
                }
            }
        }
        let mut checked = 0;
        for (name, frame, old) in &frames {
            assert_eq!(frame.dimensions(), old.dimensions(), "{name}");
            assert!(frame.to_rgb() == *old, "{name}: full-size conversion");
            assert_eq!(frame.uniform_colour(), uniform_colour(old), "{name}: blank check");
            for side in sides {
                let new = frame.fit(side);
                let reference = fit(old.clone(), side);
                assert_eq!(new.dimensions(), reference.dimensions(), "{name} max_side {side}");
                assert!(new == reference, "{name} max_side {side}: pixels differ");
                checked += 1;
            }
        }
        assert_eq!(checked, frames.len() * sides.len());
        assert!(frames.iter().any(|(_, f, _)| f.uniform_colour().is_some()), "some frames are flat");
    }

    #[test]
    fn the_size_limits_follow_real_panels() {
        // The largest panels shipped (4K UHD TV/DeX, Xperia 1, DCI 4K) fit; a side or an area past them does not.
        for (w, h) in [(3840, 2160), (2160, 3840), (3840, 1644), (2960, 1848), (4096, 2160), (4096, 2304)] {
            assert!(Frame::from_raw(raw(w, h, 4, true, &vec![0; (w * h * 2) as usize])).is_ok(), "{w}×{h}");
        }
        for (w, h) in [(4097, 100), (100, 4097), (4096, 2400), (7680, 4320)] {
            let e = Frame::from_raw(raw(w, h, 4, true, &vec![0; (w * h * 2) as usize])).err().unwrap();
            assert_eq!(e.code, ErrorCode::BadFrame, "{w}×{h}");
            assert!(e.message.contains("at most 4096 px a side"), "{e:?}");
        }
        assert!(crate::tools::frame::raw_capture_size(&raw(4096, 2400, 1, true, &[])).is_err());
        assert_eq!(crate::tools::frame::raw_capture_size(&raw(1080, 2400, 1, true, &[])), Ok(1080 * 2400 * 4 + 16));
    }

    #[test]
    fn render_scales_the_long_side_and_encodes() {
        let img = Frame::from_rgb(RgbImage::from_pixel(1080, 2400, image::Rgb([200, 10, 10])));
        let (jpeg, w, h) = render(&img, 1280, Format::Jpeg { quality: 80 }).unwrap();
        assert_eq!((w, h), (576, 1280));
        let back = image::load_from_memory(&jpeg).unwrap();
        assert_eq!((back.width(), back.height()), (576, 1280));
        let (png, w, h) = render(&img, 0, Format::Png).unwrap();
        assert_eq!((w, h), (1080, 2400));
        assert!(png.starts_with(b"\x89PNG"));
    }
}
