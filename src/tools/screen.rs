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
//! [`DEFAULT_PATH`] is the fastest, `framebuffer:` (modern adbd serves it by running `screencap` itself and
//! sending a v2 header, so it costs the phone the same as raw). Raw `exec:screencap` is ~8 ms slower here only
//! because `adb_client`'s `exec` hands the bytes over through an extra reader thread; it is the fallback when the
//! framebuffer service fails (old or unusual devices, pixel formats `adb_client` does not decode), since
//! [`decode_raw`] understands every common format. `-p` is slowest everywhere: the phone deflates 10 MB on its
//! own CPU (hundreds of ms on real hardware) and the host inflates it again. Raw bytes come through `exec:` (no
//! pty, no shell-protocol framing), so they arrive unmangled.

use std::sync::Arc;
use std::time::Duration;

use adb_client::server_device::ADBServerDevice;
use adb_client::{ADBDeviceExt, RustADBError};
use image::codecs::jpeg::JpegEncoder;
use image::codecs::png::{CompressionType, FilterType as PngFilter, PngEncoder};
use image::{ImageEncoder, RgbImage};
use serde_json::json;

use super::device::{invalid, tool};
use super::{Tool, ToolSpec};
use crate::device::adb::AdbBackend;
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
    /// The `framebuffer:` service through `adb_client`'s `framebuffer_inner`.
    Framebuffer,
}

/// The capture path `android_screenshot` tries first; [`CapturePath::Raw`] is the fallback.
pub const DEFAULT_PATH: CapturePath = CapturePath::Framebuffer;

/// Largest screen we accept (guards the size arithmetic and memory against a garbled header).
const MAX_SIDE: u32 = 16_384;

/// A captured screen.
pub struct Capture {
    pub image: RgbImage,
    /// Bytes that crossed adb for it.
    pub wire_bytes: usize,
}

/// Collects what the reading thread of `adb_client`'s `exec` writes; the channel closes when that thread ends
/// (stream finished or failed), which is how we know the output is complete — `exec` itself returns as soon as
/// stdin is sent.
struct ChanWriter(std::sync::mpsc::Sender<Vec<u8>>);

impl std::io::Write for ChanWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.send(buf.to_vec()).map_err(|_| std::io::Error::new(std::io::ErrorKind::BrokenPipe, "reader gone"))?;
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Runs `cmd` through the `exec:` service and returns its raw stdout (at most `cap` bytes).
pub fn exec_bytes(dev: &mut ADBServerDevice, cmd: &str, cap: usize) -> Result<Vec<u8>, RustADBError> {
    let (tx, rx) = std::sync::mpsc::channel();
    dev.exec(cmd, &mut std::io::empty(), Box::new(ChanWriter(tx)))?;
    let mut out = Vec::new();
    while let Ok(chunk) = rx.recv() {
        out.extend_from_slice(&chunk);
        if out.len() > cap {
            // Dropping the receiver makes the reading thread fail its next write and close the stream.
            return Err(RustADBError::IOError(std::io::Error::other(format!("`{cmd}` printed more than {cap} bytes"))));
        }
    }
    Ok(out)
}

fn bad_frame(msg: impl Into<String>) -> ProtoError {
    ProtoError::new(ErrorCode::ToolInvokeFailed, format!("unreadable screen capture: {}", msg.into()))
}

/// Decodes `screencap` raw output: `u32 width, height, format` (+ `u32 dataspace` since Android 9) then pixels.
pub fn decode_raw(data: &[u8]) -> Result<RgbImage, ProtoError> {
    let u32_at = |i: usize| data.get(i..i + 4).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]));
    let (Some(w), Some(h), Some(format)) = (u32_at(0), u32_at(4), u32_at(8)) else {
        return Err(bad_frame(format!("{} bytes is too short for a header", data.len())));
    };
    if w == 0 || h == 0 || w > MAX_SIDE || h > MAX_SIDE {
        return Err(bad_frame(format!("implausible size {w}×{h}")));
    }
    // android PixelFormat: 1 RGBA_8888, 2 RGBX_8888, 3 RGB_888, 4 RGB_565, 5 BGRA_8888.
    let bpp = match format {
        1 | 2 | 5 => 4,
        3 => 3,
        4 => 2,
        f => return Err(bad_frame(format!("unsupported pixel format {f}"))),
    };
    let pixels = (w as usize) * (h as usize) * bpp;
    let header = data.len().checked_sub(pixels).filter(|h| *h == 12 || *h == 16).ok_or_else(|| {
        bad_frame(format!("{} bytes do not hold a {w}×{h} frame of {bpp} bytes per pixel", data.len()))
    })?;
    let px = &data[header..];
    let mut rgb = Vec::with_capacity((w * h * 3) as usize);
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
    RgbImage::from_raw(w, h, rgb).ok_or_else(|| bad_frame("pixel buffer size mismatch"))
}

/// Fetches one frame along `path`. An observation: no per-device ordering.
pub async fn capture(
    adb: &AdbBackend,
    key: &DeviceKey,
    path: CapturePath,
    deadline: Duration,
) -> Result<Capture, ProtoError> {
    // Wire size of the largest plausible raw frame (8K-class screens, RGBA).
    const CAP: usize = 160 << 20;
    match path {
        CapturePath::Raw | CapturePath::Png => {
            let cmd = if path == CapturePath::Raw { "screencap" } else { "screencap -p" };
            let data = adb.run(key, false, deadline, move |dev| exec_bytes(dev, cmd, CAP)).await?;
            let wire_bytes = data.len();
            let image = tokio::task::spawn_blocking(move || {
                if path == CapturePath::Raw {
                    decode_raw(&data)
                } else {
                    image::load_from_memory_with_format(&data, image::ImageFormat::Png)
                        .map(|i| i.into_rgb8())
                        .map_err(|e| bad_frame(format!("screencap -p: {e}")))
                }
            })
            .await
            .map_err(|_| ProtoError::new(ErrorCode::Internal, "screenshot decoding failed unexpectedly"))??;
            Ok(Capture { image, wire_bytes })
        }
        CapturePath::Framebuffer => {
            let img = adb.run(key, false, deadline, |dev| dev.framebuffer_inner()).await?;
            let wire_bytes = img.as_raw().len() + 56;
            let image = tokio::task::spawn_blocking(move || image::DynamicImage::ImageRgba8(img).into_rgb8())
                .await
                .map_err(|_| ProtoError::new(ErrorCode::Internal, "screenshot decoding failed unexpectedly"))?;
            Ok(Capture { image, wire_bytes })
        }
    }
}

/// Downscales by area averaging: each output pixel is the exact area-weighted mean of the source pixels it covers.
/// For screenshots (downscale only, factor ~2) this is as sharp as bilinear (50 dB PSNR against `image`'s
/// Triangle filter in `BENCHMARKS.md`) at a sixth of the cost: integer arithmetic, two separable passes, and no
/// float image the size of the source (Triangle allocated 22 MB per 1080×2400 frame and took ~100 ms of the
/// ~200 ms screenshot); this streams with a few KiB of working memory.
pub fn area_downscale(src: &RgbImage, nw: u32, nh: u32) -> RgbImage {
    /// For each output index: the first source index and the weights (sum = 4096) of the sources it covers.
    fn taps(n_in: u32, n_out: u32) -> Vec<(usize, Vec<u32>)> {
        let scale = f64::from(n_in) / f64::from(n_out);
        (0..n_out)
            .map(|o| {
                let (a, b) = (f64::from(o) * scale, f64::from(o + 1) * scale);
                let first = a.floor() as usize;
                let last = (b.ceil() as usize).min(n_in as usize);
                let cover: Vec<f64> = (first..last).map(|i| ((i + 1) as f64).min(b) - (i as f64).max(a)).collect();
                let total: f64 = cover.iter().sum();
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
    let (w, h) = (src.width() as usize, src.height() as usize);
    let (nw_u, nh_u) = (nw.max(1) as usize, nh.max(1) as usize);
    let (tx, ty) = (taps(w as u32, nw_u as u32), taps(h as u32, nh_u as u32));
    let raw = src.as_raw();
    // Streams row by row: one horizontally reduced source row and one accumulator row at a time, so the working
    // memory is a few KiB instead of an intermediate image (source rows on an output-row boundary are reduced
    // twice, a few percent more work).
    let mut hrow = vec![0u32; nw_u * 3];
    let mut acc = vec![0u64; nw_u * 3];
    let mut out = vec![0u8; nw_u * nh_u * 3];
    for (oy, (first_y, wys)) in ty.iter().enumerate() {
        acc.iter_mut().for_each(|a| *a = 0);
        for (ky, wy) in wys.iter().enumerate() {
            let y = first_y + ky;
            let row = &raw[y * w * 3..(y + 1) * w * 3];
            for (ox, (first_x, wxs)) in tx.iter().enumerate() {
                let mut px = [0u32; 3];
                for (kx, wx) in wxs.iter().enumerate() {
                    let p = &row[(first_x + kx) * 3..(first_x + kx) * 3 + 3];
                    for c in 0..3 {
                        px[c] += u32::from(p[c]) * wx;
                    }
                }
                hrow[ox * 3..ox * 3 + 3].copy_from_slice(&px);
            }
            // 255 × 4096 × 4096 needs more than 32 bits: accumulate wide, round once.
            for (a, v) in acc.iter_mut().zip(&hrow) {
                *a += u64::from(*v) * u64::from(*wy);
            }
        }
        for (d, a) in out[oy * nw_u * 3..(oy + 1) * nw_u * 3].iter_mut().zip(&acc) {
            *d = ((a + (1 << 23)) >> 24).min(255) as u8;
        }
    }
    RgbImage::from_raw(nw_u as u32, nh_u as u32, out).expect("buffer sized for nw × nh × 3")
}

/// Screenshots in progress at once (capture + scale + encode hold ~20 MB each and are CPU-bound): without a bound,
/// 64 phones screenshotting together took 2.3 GB and starved every other request (`BENCHMARKS.md`, scale).
pub(crate) fn capture_permits() -> &'static tokio::sync::Semaphore {
    static PERMITS: std::sync::OnceLock<tokio::sync::Semaphore> = std::sync::OnceLock::new();
    PERMITS.get_or_init(|| {
        let n = std::thread::available_parallelism().map_or(2, |n| n.get()).max(2);
        tokio::sync::Semaphore::new(n)
    })
}

/// Output encoding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Jpeg { quality: u8 },
    Png,
}

/// Scales `img` so its long side is at most `max_side` (0 = keep) and encodes it. CPU-bound: call it on a
/// blocking thread.
pub fn render(img: RgbImage, max_side: u32, format: Format) -> Result<(Vec<u8>, u32, u32), ProtoError> {
    encode(&fit(img, max_side), format)
}

/// Scales `img` so its long side is at most `max_side` (0 = keep). `android_observe` draws its marks between this
/// and [`encode`], on the image the agent will see.
pub fn fit(img: RgbImage, max_side: u32) -> RgbImage {
    let (w, h) = img.dimensions();
    let long = w.max(h);
    if max_side > 0 && long > max_side {
        let s = f64::from(max_side) / f64::from(long);
        let nw = ((f64::from(w) * s).round() as u32).max(1);
        let nh = ((f64::from(h) * s).round() as u32).max(1);
        area_downscale(&img, nw, nh)
    } else {
        img
    }
}

/// Encodes an image as it is. CPU-bound: call it on a blocking thread.
pub fn encode(img: &RgbImage, format: Format) -> Result<(Vec<u8>, u32, u32), ProtoError> {
    let (w, h) = img.dimensions();
    let mut out = Vec::new();
    let r = match format {
        Format::Jpeg { quality } => {
            JpegEncoder::new_with_quality(&mut out, quality.clamp(1, 100)).encode_image(img).map_err(|e| e.to_string())
        }
        Format::Png => PngEncoder::new_with_quality(&mut out, CompressionType::Fast, PngFilter::Adaptive)
            .write_image(img.as_raw(), w, h, image::ExtendedColorType::Rgb8)
            .map_err(|e| e.to_string()),
    };
    r.map_err(|e| ProtoError::new(ErrorCode::Internal, format!("encoding the screenshot failed: {e}")))?;
    Ok((out, w, h))
}

pub fn tools(adb: &Arc<AdbBackend>) -> Vec<Arc<dyn Tool>> {
    vec![tool(
        ToolSpec {
            id: "android_screenshot",
            title: "Take a screenshot",
            description: "Capture the bound phone's screen as an image file. Returns a file reference with a \
                          one-time download URL (valid for minutes), the image size, the screen size in device \
                          pixels (the coordinate space of android_tap) and `scale` = image px / device px: divide \
                          image coordinates by `scale` to tap. Prefer android_ui_dump to find elements; use this \
                          to see what the UI tree cannot show.",
            input: json!({"type": "object", "additionalProperties": false, "properties": {
                "format": {"type": "string", "enum": ["jpeg", "png"], "default": "jpeg", "description": "Image encoding"},
                "max_side": {"type": "integer", "minimum": 0, "maximum": 8192, "default": 1280,
                             "description": "Longest side of the image in pixels (downscaled if larger); 0 = full resolution"},
                "quality": {"type": "integer", "minimum": 1, "maximum": 100, "default": 80, "description": "JPEG quality"}}}),
            output: json!({"type": "object", "required": ["files", "width", "height", "screen_width", "screen_height", "scale"],
                "properties": {
                    "files": {"type": "array", "items": files::file_item_schema()},
                    "width": {"type": "integer"}, "height": {"type": "integer"},
                    "screen_width": {"type": "integer"}, "screen_height": {"type": "integer"},
                    "scale": {"type": "number"}}}),
            side_effect: false,
            deadline: Duration::from_secs(30),
        },
        adb,
        |c| async move {
            let format = match c.str("format").unwrap_or("jpeg") {
                "jpeg" => Format::Jpeg { quality: c.i64("quality").unwrap_or(80).clamp(1, 100) as u8 },
                "png" => Format::Png,
                other => return Err(invalid(format!("argument `format` must be jpeg or png, not {other:?}"))),
            };
            let max_side = c.i64("max_side").unwrap_or(1280).clamp(0, 8192) as u32;
            let (screen_w, screen_h) = c.adb.screen_size(&c.device).await?;
            let _permit = capture_permits()
                .acquire()
                .await
                .map_err(|_| ProtoError::new(ErrorCode::Internal, "screenshot limiter closed"))?;
            let frame = match capture(&c.adb, &c.device, DEFAULT_PATH, c.spec.deadline).await {
                Ok(f) => f,
                // A device that did not answer in time will not answer a second request either.
                Err(e) if e.code == ErrorCode::DeviceTimeout => return Err(e),
                Err(e) => {
                    tracing::debug!(error = %e, "framebuffer capture failed; falling back to raw screencap");
                    capture(&c.adb, &c.device, CapturePath::Raw, c.spec.deadline).await?
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
            let cache = c.files.clone();
            let (row, w, h) = tokio::task::spawn_blocking(move || {
                let (bytes, w, h) = render(frame.image, max_side, format)?;
                let row = cache.store_bytes(&bytes, meta).map_err(|e| e.into_proto("the screenshot"))?;
                Ok::<_, ProtoError>((row, w, h))
            })
            .await
            .map_err(|_| ProtoError::new(ErrorCode::Internal, "screenshot encoding failed unexpectedly"))??;
            // Orientation-agnostic: the long sides correspond whether the phone is in portrait or landscape.
            let scale = f64::from(w.max(h)) / f64::from(screen_w.max(screen_h).max(1));
            Ok(json!({
                "files": [files::describe(&row)],
                "width": w, "height": h,
                "screen_width": screen_w, "screen_height": screen_h,
                "scale": (scale * 10_000.0).round() / 10_000.0,
            }))
        },
    )]
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn render_scales_the_long_side_and_encodes() {
        let img = RgbImage::from_pixel(1080, 2400, image::Rgb([200, 10, 10]));
        let (jpeg, w, h) = render(img.clone(), 1280, Format::Jpeg { quality: 80 }).unwrap();
        assert_eq!((w, h), (576, 1280));
        let back = image::load_from_memory(&jpeg).unwrap();
        assert_eq!((back.width(), back.height()), (576, 1280));
        let (png, w, h) = render(img, 0, Format::Png).unwrap();
        assert_eq!((w, h), (1080, 2400));
        assert!(png.starts_with(b"\x89PNG"));
    }
}
