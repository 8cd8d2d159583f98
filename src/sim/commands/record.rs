//! `screenrecord` of the simulated phone: the options and error texts of AOSP `cmds/screenrecord/screenrecord.cpp`
//! (`--time-limit` 1 ..= 180, `--bit-rate` 0.1 ..= 200 Mbps, one output file, exit 2 on a bad option), and a small
//! valid MP4 in the file named, lasting the time limit on the phone's clock: the command runs for that long (the
//! shell service waits it out, and a host that hangs up ends it early, as adbd's SIGHUP does), as a real one stops
//! at its limit.
//!
//! The file is written when the command starts (a real `screenrecord`'s MediaMuxer creates it at once and grows
//! it): a cancelled recording leaves a file behind, as on a real phone, for the connector to remove.
//!
//! The video is one picture of the phone's default 1080×2400 screen, a flat dark frame, at one frame per second:
//! `src/sim/data/screen-1080x2400.h264` is its H.264 IDR picture (SPS, PPS, slice; 569 bytes), made once with
//! `ffmpeg -f lavfi -i color=c=0x202830:s=1080x2400:r=1 -frames:v 1 -c:v libx264 -profile:v main -preset veryslow
//! -x264-params keyint=1:bframes=0 -bsf:v filter_units=remove_types=6 -f h264 screen-1080x2400.h264` (ffmpeg 5.1,
//! Debian 12), and muxed here into ISO BMFF boxes (ftyp, moov: mvhd + one video trak with an avcC, mdat) with the
//! picture repeated once per second. `ffprobe` reads the result as a 1080×2400 H.264 video of the time limit's
//! length (how it was checked: the report of the commit that added it).

use std::time::Duration;

use crate::sim::cmdio::CmdIo;
use crate::sim::device::{now_unix_secs, Device};

/// screenrecord.cpp `kMaxTimeLimitSec` (Android 4.4 – 14).
pub const MAX_TIME_LIMIT_S: u32 = 180;
const MIN_BIT_RATE: u64 = 100_000;
const MAX_BIT_RATE: u64 = 200 * 1_000_000;
/// screenrecord first appeared in Android 4.4 (KitKat).
const SINCE_SDK: u32 = 19;

const PICTURE: &[u8] = include_bytes!("../data/screen-1080x2400.h264");
const WIDTH: u32 = 1080;
const HEIGHT: u32 = 2400;

/// `screenrecord [options] FILE` (not found before Android 4.4, as on those phones).
pub fn screenrecord(dev: &mut Device, args: &[&str], io: &mut CmdIo) -> i32 {
    if dev.cfg.sdk < SINCE_SDK {
        io.err("/system/bin/sh: screenrecord: inaccessible or not found\n");
        return 127;
    }
    let mut limit = MAX_TIME_LIMIT_S;
    let mut file = None;
    let mut i = 0;
    while i < args.len() {
        let a = args[i];
        let value = |i: usize| args.get(i + 1).copied().unwrap_or("");
        match a {
            "--time-limit" => {
                let v = value(i);
                // atoi: a number's leading digits, else 0.
                let n: i64 = v.chars().take_while(char::is_ascii_digit).collect::<String>().parse().unwrap_or(0);
                if n == 0 || n > i64::from(MAX_TIME_LIMIT_S) {
                    io.err(&format!("Time limit {n}s outside acceptable range [1,{MAX_TIME_LIMIT_S}]\n"));
                    return 2;
                }
                limit = n as u32;
                i += 1;
            }
            "--bit-rate" => {
                let n: u64 = value(i).parse().unwrap_or(0);
                if !(MIN_BIT_RATE..=MAX_BIT_RATE).contains(&n) {
                    io.err(&format!("Bit rate {n}bps outside acceptable range [{MIN_BIT_RATE},{MAX_BIT_RATE}]\n"));
                    return 2;
                }
                i += 1;
            }
            "--size" => {
                let v = value(i);
                let ok = v.split_once('x').is_some_and(|(w, h)| w.parse::<u32>().is_ok() && h.parse::<u32>().is_ok());
                if !ok {
                    io.err(&format!("Invalid size '{v}', must be width x height\n"));
                    return 2;
                }
                i += 1;
            }
            "--verbose" => {}
            f if !f.starts_with('-') && file.is_none() => file = Some(f.to_owned()),
            _ => {
                io.err(&format!("Unknown option '{a}'\n"));
                return 2;
            }
        }
        i += 1;
    }
    let Some(file) = file else {
        io.err("Must specify output file (see --help).\n");
        return 2;
    };
    let data = mp4(limit);
    if let Err(e) = dev.fs.write(&file, data, 0o666 & !dev.umask, now_unix_secs(), false) {
        // MediaMuxer's open fails first.
        io.err(&format!("Unable to open '{file}': {}\n", e.message()));
        return 1;
    }
    io.sleep += Duration::from_secs(u64::from(limit));
    0
}

/// One ISO BMFF box: size, type, body.
fn bx(kind: &[u8; 4], parts: &[&[u8]]) -> Vec<u8> {
    let len: usize = 8 + parts.iter().map(|p| p.len()).sum::<usize>();
    let mut v = Vec::with_capacity(len);
    v.extend_from_slice(&(len as u32).to_be_bytes());
    v.extend_from_slice(kind);
    for p in parts {
        v.extend_from_slice(p);
    }
    v
}

fn be32(n: u32) -> [u8; 4] {
    n.to_be_bytes()
}

/// The NAL units of an Annex B stream (start codes dropped).
fn nal_units(stream: &[u8]) -> Vec<&[u8]> {
    let mut starts = Vec::new();
    let mut i = 0;
    while i + 3 <= stream.len() {
        if stream[i..i + 3] == [0, 0, 1] {
            starts.push(i + 3);
            i += 3;
        } else {
            i += 1;
        }
    }
    let mut out = Vec::new();
    for (k, &s) in starts.iter().enumerate() {
        let mut end = starts.get(k + 1).map_or(stream.len(), |n| n - 3);
        // A four-byte start code leaves its leading zero on the unit before.
        while end > s && stream[end - 1] == 0 {
            end -= 1;
        }
        out.push(&stream[s..end]);
    }
    out
}

/// The MP4 of a `seconds`-long recording: [`PICTURE`] once a second, timescale 1000.
pub fn mp4(seconds: u32) -> Vec<u8> {
    let units = nal_units(PICTURE);
    let of_type = |t: u8| units.iter().copied().filter(move |u| u.first().is_some_and(|b| b & 0x1f == t));
    let sps = of_type(7).next().expect("the picture has an SPS");
    let pps = of_type(8).next().expect("the picture has a PPS");
    // One sample: the picture's slices, each with a four-byte length (avcC lengthSizeMinusOne = 3).
    let mut sample = Vec::new();
    for u in units.iter().filter(|u| u.first().is_some_and(|b| matches!(b & 0x1f, 1 | 5))) {
        sample.extend_from_slice(&be32(u.len() as u32));
        sample.extend_from_slice(u);
    }
    let n = seconds.max(1);
    let duration = n * 1000;
    let ftyp = bx(b"ftyp", &[b"isom", &be32(512), b"isomiso2avc1mp41"]);
    let matrix: [u32; 9] = [0x10000, 0, 0, 0, 0x10000, 0, 0, 0, 0x4000_0000];
    let matrix: Vec<u8> = matrix.iter().flat_map(|m| m.to_be_bytes()).collect();
    let mvhd = bx(
        b"mvhd",
        &[
            &[0; 4],
            &[0; 8],
            &be32(1000),
            &be32(duration),
            &be32(0x10000),
            &[1, 0],
            &[0; 10],
            &matrix,
            &[0; 24],
            &be32(2),
        ],
    );
    let tkhd = bx(
        b"tkhd",
        &[
            &[0, 0, 0, 3],
            &[0; 8],
            &be32(1),
            &[0; 4],
            &be32(duration),
            &[0; 8],
            &[0; 4],
            &[0; 4],
            &matrix,
            &be32(WIDTH << 16),
            &be32(HEIGHT << 16),
        ],
    );
    let mdhd = bx(b"mdhd", &[&[0; 4], &[0; 8], &be32(1000), &be32(duration), &[0x55, 0xc4, 0, 0]]);
    let hdlr = bx(b"hdlr", &[&[0; 4], &[0; 4], b"vide", &[0; 12], b"VideoHandle\0"]);
    let vmhd = bx(b"vmhd", &[&[0, 0, 0, 1], &[0; 8]]);
    let dinf = bx(b"dinf", &[&bx(b"dref", &[&[0; 4], &be32(1), &bx(b"url ", &[&[0, 0, 0, 1]])])]);
    let avcc = bx(
        b"avcC",
        &[
            &[1, sps[1], sps[2], sps[3], 0xff, 0xe1],
            &(sps.len() as u16).to_be_bytes(),
            sps,
            &[1],
            &(pps.len() as u16).to_be_bytes(),
            pps,
        ],
    );
    let avc1 = bx(
        b"avc1",
        &[
            &[0; 6],
            &[0, 1],
            &[0; 16],
            &(WIDTH as u16).to_be_bytes(),
            &(HEIGHT as u16).to_be_bytes(),
            &be32(0x0048_0000),
            &be32(0x0048_0000),
            &[0; 4],
            &[0, 1],
            &[0; 32],
            &[0, 0x18, 0xff, 0xff],
            &avcc,
        ],
    );
    let stsd = bx(b"stsd", &[&[0; 4], &be32(1), &avc1]);
    let stts = bx(b"stts", &[&[0; 4], &be32(1), &be32(n), &be32(1000)]);
    let stsc = bx(b"stsc", &[&[0; 4], &be32(1), &be32(1), &be32(n), &be32(1)]);
    let stsz = bx(b"stsz", &[&[0; 4], &be32(sample.len() as u32), &be32(n)]);
    // The one chunk starts right after mdat's header, which follows ftyp and moov; stco's own size is fixed, so
    // moov's size is known before the offset is filled in.
    let stbl_without_stco = [stsd, stts, stsc, stsz].concat();
    let build = |offset: u32| {
        let stco = bx(b"stco", &[&[0; 4], &be32(1), &be32(offset)]);
        let stbl = bx(b"stbl", &[&stbl_without_stco, &stco]);
        let minf = bx(b"minf", &[&vmhd, &dinf, &stbl]);
        let mdia = bx(b"mdia", &[&mdhd, &hdlr, &minf]);
        let trak = bx(b"trak", &[&tkhd, &mdia]);
        bx(b"moov", &[&mvhd, &trak])
    };
    let moov_len = build(0).len();
    let moov = build((ftyp.len() + moov_len + 8) as u32);
    let mut out = Vec::with_capacity(ftyp.len() + moov.len() + 8 + sample.len() * n as usize);
    out.extend_from_slice(&ftyp);
    out.extend_from_slice(&moov);
    out.extend_from_slice(&be32((8 + sample.len() * n as usize) as u32));
    out.extend_from_slice(b"mdat");
    for _ in 0..n {
        out.extend_from_slice(&sample);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_picture_holds_sps_pps_and_an_idr_slice() {
        let types: Vec<u8> = nal_units(PICTURE).iter().map(|u| u[0] & 0x1f).collect();
        assert!(types.contains(&7) && types.contains(&8) && types.contains(&5), "{types:?}");
        let m = mp4(3);
        assert_eq!(&m[4..8], b"ftyp");
    }
}
