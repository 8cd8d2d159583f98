//! A captured screen as the phone sent it: the bytes of the capture plus the layout its header names (issue 24,
//! host side). Nothing is converted when a capture arrives; the picture an agent gets is made in one pass from
//! these bytes straight to the output size ([`Frame::fit`]): channel extraction fused into the area downscale, no
//! full-size RGB copy (7.8 MB and ~2 000 page faults per 1080×2400 frame) unless the output *is* full size.
//!
//! Every header word is the phone's claim: [`Frame::from_raw`] and [`Frame::from_framebuffer`] check the size
//! against [`MAX_SIDE`]/[`MAX_PIXELS`] and against the bytes actually received, and the channel layout against
//! the pixel depth, before a `Frame` exists. Past that point indexing cannot go out of bounds.

use image::RgbImage;

use crate::device::transport::FbHeader;
use crate::protocol::errors::{ErrorCode, ProtoError};

use super::downscale::{area_downscale_rows, fit_size, Rows};

/// Longest side of a screen we accept. The largest Android displays: 3840 px (Sony Xperia 1 series, 3840×1644;
/// a 4K external display in Samsung DeX / desktop mode, 3840×2160), tablets up to 2960×1848 (Galaxy Tab S9
/// Ultra). Android TV draws its UI at 1080p even on 4K and 8K panels (only video planes go higher:
/// theothernt/AerialViews#37, #235; Genymobile/scrcpy#4316). 4096 leaves room for DCI 4K (4096×2160); anything
/// larger is a garbled or hostile header.
pub const MAX_SIDE: u32 = 4096;

/// Most pixels a screen may have: 4096 × 2304 (≈ 9.4 MP: 4K UHD is 8.3 MP). The RGBA bytes of the largest
/// accepted frame are thus ≈ 37.7 MB instead of the 1 GiB that 16 384² allowed (a Pi has 1–8 GB).
pub const MAX_PIXELS: u64 = 4096 * 2304;

/// Largest pixel payload any capture may carry (RGBA at [`MAX_PIXELS`]) — the read caps derive from it.
pub const MAX_FRAME_BYTES: usize = (MAX_PIXELS as usize) * 4;

/// How one pixel's R, G, B come out of the bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Layout {
    /// `bpp` bytes per pixel, each of R, G, B one whole byte at the given index (RGBA, RGBX, BGRA, RGB).
    Bytes { bpp: usize, ch: [usize; 3] },
    /// Raw `screencap` RGB_565, scaled as `screencap`'s readers always have (`v * 255 / 31`, truncating).
    Rgb565,
    /// `framebuffer:` channels that are not whole bytes: (offset, length) in bits of a little-endian pixel of
    /// `bpp` bytes, each scaled to 8 bits with rounding.
    Bits { bpp: usize, ch: [(u32, u32); 3] },
}

impl Layout {
    fn bpp(&self) -> usize {
        match self {
            Layout::Bytes { bpp, .. } | Layout::Bits { bpp, .. } => *bpp,
            Layout::Rgb565 => 2,
        }
    }
}

/// A captured screen: `data[offset..]` holds `width × height` pixels in `layout`.
pub struct Frame {
    data: Vec<u8>,
    offset: usize,
    width: u32,
    height: u32,
    layout: Layout,
}

/// `w × h` within [`MAX_SIDE`] and [`MAX_PIXELS`], as a pixel count.
fn checked_pixels(w: u32, h: u32, what: &str) -> Result<usize, String> {
    if w == 0 || h == 0 || w > MAX_SIDE || h > MAX_SIDE || u64::from(w) * u64::from(h) > MAX_PIXELS {
        return Err(format!("implausible {what}size {w}×{h} (at most {MAX_SIDE} px a side, {MAX_PIXELS} pixels)"));
    }
    // ≤ MAX_PIXELS: fits usize on every target.
    Ok(w as usize * h as usize)
}

/// Bytes per pixel of an Android `PixelFormat` in raw `screencap` output: 1 RGBA_8888, 2 RGBX_8888, 3 RGB_888,
/// 4 RGB_565, 5 BGRA_8888.
fn raw_layout(format: u32) -> Option<Layout> {
    Some(match format {
        1 | 2 => Layout::Bytes { bpp: 4, ch: [0, 1, 2] },
        5 => Layout::Bytes { bpp: 4, ch: [2, 1, 0] },
        3 => Layout::Bytes { bpp: 3, ch: [0, 1, 2] },
        4 => Layout::Rgb565,
        _ => return None,
    })
}

/// The exact size of a raw `screencap` output from its first 12 bytes (`width, height, format`), with room for
/// the 16-byte header of Android 9+ ([`Frame::from_raw`] then checks which one it was). Refuses what
/// [`Frame::from_raw`] would refuse, before anything is inflated.
pub fn raw_capture_size(prefix: &[u8]) -> Result<usize, String> {
    let u32_at = |i: usize| prefix.get(i..i + 4).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]));
    let (Some(w), Some(h), Some(format)) = (u32_at(0), u32_at(4), u32_at(8)) else {
        return Err(format!("{} bytes is too short for a header", prefix.len()));
    };
    let n = checked_pixels(w, h, "")?;
    let layout = raw_layout(format).ok_or_else(|| format!("unsupported pixel format {format}"))?;
    Ok(n * layout.bpp() + 16)
}

/// The checked shape of a capture — a raw `screencap` file from its header and size, or `framebuffer:` pixels
/// from their header —: what a capture needs to downscale rows as they arrive ([`super::fitting`]) without ever
/// holding the whole frame.
#[derive(Clone, Copy, Debug)]
pub struct Shape {
    pub width: u32,
    pub height: u32,
    /// Bytes before the first pixel: 12 (raw, before Android 9) or 16 (raw), 0 (`framebuffer:` pixels).
    pub header_len: usize,
    layout: Layout,
}

impl Shape {
    /// The shape of a raw capture of `size` bytes whose first 12 header bytes are `head`: refused unless the
    /// header names a plausible screen in a known format and `size` is exactly its pixels plus a 12- or 16-byte
    /// header (the same checks as [`Frame::from_raw`]).
    pub fn of(head: &[u8], size: usize) -> Result<Shape, ProtoError> {
        let u32_at = |i: usize| head.get(i..i + 4).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]));
        let (Some(w), Some(h), Some(format)) = (u32_at(0), u32_at(4), u32_at(8)) else {
            return Err(bad_frame(format!("{} bytes is too short for a header", head.len())));
        };
        let n = checked_pixels(w, h, "").map_err(bad_frame)?;
        let layout = raw_layout(format).ok_or_else(|| bad_frame(format!("unsupported pixel format {format}")))?;
        let bpp = layout.bpp();
        let header_len = size
            .checked_sub(n * bpp)
            .filter(|h| *h == 12 || *h == 16)
            .ok_or_else(|| bad_frame(format!("{size} bytes do not hold a {w}×{h} frame of {bpp} bytes per pixel")))?;
        Ok(Shape { width: w, height: h, header_len, layout })
    }

    /// The shape of `framebuffer:` pixels with the channel offsets and lengths of `h` (little-endian pixels of 16,
    /// 24 or 32 bits; channels of up to 8 bits are scaled to 8). Refuses what [`Frame::from_framebuffer`] would,
    /// but the pixel count, which is the transport's to check against `h.size`.
    pub fn of_framebuffer(h: &FbHeader) -> Result<Shape, ProtoError> {
        let (w, hgt) = (h.width, h.height);
        checked_pixels(w, hgt, "framebuffer ").map_err(bad_frame)?;
        // Only whole bytes per pixel exist on the wire: 16, 24 or 32 bits. Every later offset is checked against
        // the bits of the bytes actually received per pixel, never against a header word alone.
        if !matches!(h.bpp, 16 | 24 | 32) {
            return Err(bad_frame(format!("unsupported pixel depth {} bpp", h.bpp)));
        }
        let bpp = (h.bpp / 8) as usize;
        for (name, (off, len)) in [("red", h.red), ("green", h.green), ("blue", h.blue)] {
            // `off + len` in checked arithmetic: a red offset of 0xFFFFFFF8 with length 8 wraps to 0 in u32 and
            // used to pass this check, then index past the pixel and abort the whole connector.
            if len == 0 || len > 8 || off.checked_add(len).is_none_or(|end| end > h.bpp) {
                return Err(bad_frame(format!("unsupported {name} channel: offset {off}, length {len}")));
            }
        }
        let layout = if [h.red, h.green, h.blue].iter().all(|(o, l)| *l == 8 && o % 8 == 0) {
            // The common case (RGBA_8888, BGRA_8888, RGB_888): pick bytes.
            Layout::Bytes { bpp, ch: [(h.red.0 / 8) as usize, (h.green.0 / 8) as usize, (h.blue.0 / 8) as usize] }
        } else {
            Layout::Bits { bpp, ch: [h.red, h.green, h.blue] }
        };
        Ok(Shape { width: w, height: hgt, header_len: 0, layout })
    }

    /// Bytes of one row of pixels as captured.
    pub fn stride(&self) -> usize {
        self.width as usize * self.layout.bpp()
    }

    /// A captured row (`stride` bytes) as the downscale accumulates it: the bytes themselves for whole-byte
    /// layouts, else converted to RGB in `scratch`. R, G, B positions: [`Shape::row_layout`].
    pub(crate) fn row<'a>(&self, src: &'a [u8], scratch: &'a mut Vec<u8>) -> &'a [u8] {
        convert_row(self.layout, src, scratch)
    }

    /// Bytes per pixel and R, G, B positions of what [`Shape::row`] returns.
    pub(crate) fn row_layout(&self) -> (usize, [usize; 3]) {
        row_layout(self.layout)
    }
}

/// See [`Shape::row`].
fn convert_row<'a>(layout: Layout, src: &'a [u8], scratch: &'a mut Vec<u8>) -> &'a [u8] {
    match layout {
        Layout::Bytes { .. } => src,
        _ => {
            scratch.clear();
            scratch.extend(src.chunks_exact(layout.bpp()).flat_map(|p| pixel_rgb(layout, p)));
            scratch
        }
    }
}

fn row_layout(layout: Layout) -> (usize, [usize; 3]) {
    match layout {
        Layout::Bytes { bpp, ch } => (bpp, ch),
        _ => (3, [0, 1, 2]),
    }
}

/// The RGB of one pixel `p` (`layout.bpp()` bytes).
fn pixel_rgb(layout: Layout, p: &[u8]) -> [u8; 3] {
    match layout {
        Layout::Bytes { ch, .. } => [p[ch[0]], p[ch[1]], p[ch[2]]],
        Layout::Rgb565 => {
            let v = u16::from_le_bytes([p[0], p[1]]);
            let (r, g, b) = ((v >> 11) & 0x1f, (v >> 5) & 0x3f, v & 0x1f);
            [(r * 255 / 31) as u8, (g * 255 / 63) as u8, (b * 255 / 31) as u8]
        }
        Layout::Bits { ch, .. } => {
            let mut v = 0u32;
            for (k, byte) in p.iter().enumerate() {
                v |= u32::from(*byte) << (8 * k);
            }
            let scale = |v: u32, len: u32| ((v * 255 + ((1 << len) - 1) / 2) / ((1 << len) - 1)) as u8;
            let c = |(off, len): (u32, u32)| scale((v >> off) & ((1 << len) - 1), len);
            [c(ch[0]), c(ch[1]), c(ch[2])]
        }
    }
}

impl Frame {
    /// `screencap` raw output: `u32 width, height, format` (+ `u32 dataspace` since Android 9), then pixels.
    pub fn from_raw(data: Vec<u8>) -> Result<Frame, ProtoError> {
        let Shape { width, height, header_len, layout } = Shape::of(&data, data.len())?;
        Ok(Frame { data, offset: header_len, width, height, layout })
    }

    /// `framebuffer:` pixels with the channel offsets and lengths of its header (little-endian pixels of 16, 24
    /// or 32 bits; channels of up to 8 bits are scaled to 8).
    pub fn from_framebuffer(h: &FbHeader, px: Vec<u8>) -> Result<Frame, ProtoError> {
        let Shape { width, height, layout, .. } = Shape::of_framebuffer(h)?;
        let n = width as usize * height as usize;
        if n * layout.bpp() != px.len() {
            return Err(bad_frame(format!("{} bytes do not hold a {width}×{height} frame at {} bpp", px.len(), h.bpp)));
        }
        Ok(Frame { data: px, offset: 0, width, height, layout })
    }

    /// A picture already decoded (`screencap -p`).
    pub fn from_rgb(img: RgbImage) -> Frame {
        let (width, height) = img.dimensions();
        Frame { data: img.into_raw(), offset: 0, width, height, layout: Layout::Bytes { bpp: 3, ch: [0, 1, 2] } }
    }

    pub fn dimensions(&self) -> (u32, u32) {
        (self.width, self.height)
    }

    /// The pixels as captured (after the header, in the phone's layout): for comparing two captures.
    pub(crate) fn pixel_bytes(&self) -> &[u8] {
        self.px()
    }

    fn px(&self) -> &[u8] {
        &self.data[self.offset..]
    }

    /// The RGB of pixel number `i` (row-major). `i < width × height`.
    fn rgb_at(&self, i: usize) -> [u8; 3] {
        let bpp = self.layout.bpp();
        pixel_rgb(self.layout, &self.px()[i * bpp..(i + 1) * bpp])
    }

    /// Row `y` as bytes the downscale accumulates, with the R, G, B byte positions inside each pixel: the
    /// captured bytes themselves for whole-byte layouts, else the row converted to RGB in `scratch`.
    pub(crate) fn row<'a>(&'a self, y: usize, scratch: &'a mut Vec<u8>) -> &'a [u8] {
        let stride = self.width as usize * self.layout.bpp();
        convert_row(self.layout, &self.px()[y * stride..(y + 1) * stride], scratch)
    }

    /// Bytes per pixel and R, G, B positions of what [`Frame::row`] returns.
    pub(crate) fn row_layout(&self) -> (usize, [usize; 3]) {
        row_layout(self.layout)
    }

    /// The whole frame as RGB, full size.
    pub fn to_rgb(&self) -> RgbImage {
        let n = self.width as usize * self.height as usize;
        let rgb = match self.layout {
            Layout::Bytes { bpp: 3, ch: [0, 1, 2] } => self.px()[..n * 3].to_vec(),
            Layout::Bytes { bpp, ch } => {
                let mut out = Vec::with_capacity(n * 3);
                for p in self.px()[..n * bpp].chunks_exact(bpp) {
                    out.extend_from_slice(&[p[ch[0]], p[ch[1]], p[ch[2]]]);
                }
                out
            }
            _ => (0..n).flat_map(|i| self.rgb_at(i)).collect(),
        };
        RgbImage::from_raw(self.width, self.height, rgb).expect("checked: width × height pixels")
    }

    /// The RGB picture with its long side at most `max_side` (0 = keep), made in one pass from the captured
    /// bytes: area-averaged exactly as [`super::downscale::area_downscale`] on the decoded frame would, without
    /// building that frame.
    pub fn fit(&self, max_side: u32) -> RgbImage {
        match fit_size(self.width, self.height, max_side) {
            Some((nw, nh)) => {
                let out = area_downscale_src(self, nw, nh);
                RgbImage::from_raw(nw, nh, out).expect("buffer sized for nw × nh × 3")
            }
            None => self.to_rgb(),
        }
    }

    /// The colour of a frame that is one uniform colour, or `None`: every 4th pixel of every 4th row, each
    /// within ±2 per channel of the first (captures can be dithered), read straight from the captured bytes. A
    /// real screen differs within its first rows (status bar, text), so a normal frame costs a handful of
    /// comparisons; a blank one about 1/16 of its pixels (≈ 160 k for 1080×2400, well under a millisecond).
    pub fn uniform_colour(&self) -> Option<[u8; 3]> {
        let (w, h) = (self.width as usize, self.height as usize);
        let first = self.rgb_at(0);
        let near = |p: [u8; 3]| p.iter().zip(first).all(|(a, b)| a.abs_diff(b) <= 2);
        for y in (0..h).step_by(4) {
            for x in (0..w).step_by(4) {
                if !near(self.rgb_at(y * w + x)) {
                    return None;
                }
            }
        }
        Some(first)
    }
}

pub(crate) fn bad_frame(msg: impl Into<String>) -> ProtoError {
    ProtoError::new(ErrorCode::BadFrame, format!("unreadable screen capture: {}", msg.into()))
}

/// [`area_downscale`] straight from a captured frame's bytes (issue 24): whole-byte layouts (RGBA, RGBX, BGRA,
/// RGB) are accumulated as they arrived and the R, G, B bytes picked in the horizontal pass — the channel
/// conversion costs nothing extra and no full-size RGB image is built; other layouts (RGB_565, bit fields) are
/// converted one source row at a time. Identical output to converting first and downscaling after.
pub(crate) fn area_downscale_src(frame: &Frame, nw: u32, nh: u32) -> Vec<u8> {
    let (w, h) = frame.dimensions();
    area_downscale_rows(frame, w as usize, h as usize, nw, nh)
}

impl Rows for Frame {
    fn row<'a>(&'a self, y: usize, scratch: &'a mut Vec<u8>) -> &'a [u8] {
        Frame::row(self, y, scratch)
    }
    fn layout(&self) -> (usize, [usize; 3]) {
        self.row_layout()
    }
}
