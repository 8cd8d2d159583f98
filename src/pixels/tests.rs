//! The pixel pipeline's unit tests (moved from `tools/screen.rs` with it): decoding every capture format, lying
//! headers, the downscale kernels against the direct sum, the fused path against the old one, the encoders.

use image::codecs::png::PngEncoder;
use image::{ImageEncoder, RgbImage};

use super::blank::uniform_colour;
use super::capture::*;
use super::downscale::*;
use super::encode::*;
use super::frame::*;
use crate::device::transport::FbHeader;
use crate::protocol::errors::ErrorCode;

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
    let hdr = |bpp, red, green, blue| FbHeader { bpp, size: 0, width: 2, height: 1, red, green, blue, alpha: (0, 0) };
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
    let mse: f64 =
        ours.as_raw().iter().zip(theirs.as_raw()).map(|(a, b)| (f64::from(*a) - f64::from(*b)).powi(2)).sum::<f64>()
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

/// A xorshift64 generator: repeatable test pixels without a dependency (also `fitting.rs`'s tests).
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
    assert!(super::frame::raw_capture_size(&raw(4096, 2400, 1, true, &[])).is_err());
    assert_eq!(super::frame::raw_capture_size(&raw(1080, 2400, 1, true, &[])), Ok(1080 * 2400 * 4 + 16));
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
