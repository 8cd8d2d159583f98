//! `screencap [-p] [FILE]`: the raw frame as AOSP's screencap.cpp writes it (width, height, format, dataspace,
//! then the pixels; a file opened 0664 under the umask: tests/fixtures/real/screencap-cpp-file-argument-aosp.txt)
//! or a PNG, at the display's logical size, with the phone's cost of reading the display and encoding; and the
//! hostile phone's lying captures ([`FrameLie`]). `screenrecord` is `record.rs`.

use crate::sim::cmdio::CmdIo;
use crate::sim::device::{now_unix_secs, Device};
use crate::sim::state::FrameLie;

/// A well-formed PNG that claims `w` × `h` RGBA pixels and holds none (signature, IHDR, an empty IDAT, IEND):
/// what a decoder sees first is the header, so a decoder that trusts it allocates before it finds out.
fn huge_png(w: u32, h: u32) -> Vec<u8> {
    fn crc32(bytes: &[u8]) -> u32 {
        let mut c = 0xFFFF_FFFFu32;
        for &b in bytes {
            c ^= u32::from(b);
            for _ in 0..8 {
                c = if c & 1 != 0 { 0xEDB8_8320 ^ (c >> 1) } else { c >> 1 };
            }
        }
        !c
    }
    let mut out = b"\x89PNG\r\n\x1a\n".to_vec();
    let mut chunk = |kind: &[u8; 4], data: &[u8]| {
        out.extend_from_slice(&(data.len() as u32).to_be_bytes());
        let body = [&kind[..], data].concat();
        out.extend_from_slice(&body);
        out.extend_from_slice(&crc32(&body).to_be_bytes());
    };
    let mut ihdr = Vec::new();
    ihdr.extend_from_slice(&w.to_be_bytes());
    ihdr.extend_from_slice(&h.to_be_bytes());
    ihdr.extend_from_slice(&[8, 6, 0, 0, 0]); // 8-bit RGBA, deflate, adaptive filter, no interlace
    chunk(b"IHDR", &ihdr);
    chunk(b"IDAT", &[0x78, 0x9c, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01]); // an empty zlib stream
    chunk(b"IEND", &[]);
    out
}

pub(super) fn screencap(dev: &mut Device, args: &[&str], io: &mut CmdIo) -> i32 {
    let started = std::time::Instant::now();
    let mut png = false;
    let mut file = None;
    let mut i = 0;
    while i < args.len() {
        match args[i] {
            "-p" => png = true,
            "-d" => i += 1,
            "-h" => {
                io.err("usage: screencap [-hp] [-d display-id] [FILENAME]\n");
                return 0;
            }
            f => file = Some(f.to_string()),
        }
        i += 1;
    }
    if file.as_deref().is_some_and(|f| f.ends_with(".png")) {
        png = true;
    }
    let lie = dev.frame_lie;
    // The phone's time: reading the display, and PNG encoding per megapixel for `-p`.
    let (lw, lh) = dev.ui.logical_size();
    let mut cost = dev.cfg.costs.display_read;
    if png {
        cost += dev.cfg.costs.png_per_megapixel.mul_f64(f64::from(lw) * f64::from(lh) / 1e6);
    }
    let data = if png && lie == FrameLie::Huge {
        huge_png(60_000, 60_000)
    } else if let (true, FrameLie::Claims(cw, ch)) = (png, lie) {
        huge_png(cw, ch)
    } else if png {
        let mut v = dev.ui.render_png_as(!dev.cfg.costs.png_per_megapixel.is_zero());
        if lie == FrameLie::Truncated {
            v.truncate(v.len() / 2);
        }
        v
    } else {
        // screencap.cpp: u32 width, height, pixel format (1 = RGBA_8888), dataspace
        // (1 = sRGB), then the pixels. The size is the logical one: a landscape phone captures a landscape frame.
        let (mut w, mut h) = dev.ui.logical_size();
        let mut px = dev.ui.render_rgba();
        match lie {
            FrameLie::None | FrameLie::GzipBomb | FrameLie::GzipCorrupt | FrameLie::GzipShort => {}
            FrameLie::ChannelOverflow => h += 1,
            FrameLie::Truncated => px.truncate(px.len() / 2),
            FrameLie::Huge => {
                (w, h) = (60_000, 60_000);
                px.truncate(64);
            }
            FrameLie::Claims(cw, ch) => {
                (w, h) = (cw, ch);
                px.truncate(64);
            }
        }
        let mut v = Vec::with_capacity(16 + px.len());
        for n in [w, h, 1, 1] {
            v.extend_from_slice(&n.to_le_bytes());
        }
        v.extend_from_slice(&px);
        v
    };
    match file {
        Some(f) => {
            // screencap.cpp: open(fn, O_WRONLY | O_CREAT | O_TRUNC, 0664), masked by the umask.
            if let Err(e) = dev.fs.write(&f, data, 0o664 & !dev.umask, now_unix_secs(), false) {
                io.err(&format!("Error opening file: {f} ({})\n", e.message()));
                return 1;
            }
        }
        None => io.out.extend_from_slice(&data),
    }
    io.sleep += cost.saturating_sub(started.elapsed());
    0
}
