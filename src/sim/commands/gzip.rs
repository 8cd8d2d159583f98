//! toybox `gzip` (Android 8.0 and later: tests/fixtures/real/toybox-applets-7.0-8.0-9.0-aosp-shell-and-utilities.txt)
//! on stdin: a real gzip member as zlib writes it, the phone's compression time on one of its cores, and the
//! hostile phone's lying members ([`FrameLie::GzipBomb`], `GzipShort`, `GzipCorrupt`).

use crate::sim::cmdio::CmdIo;
use crate::sim::device::Device;
use crate::sim::state::FrameLie;

/// First SDK whose toybox has `gzip`/`gunzip`/`zcat` (Android 8.0, toybox 0.7.3; AOSP
/// `system/core/shell_and_utilities/README.md`).
pub const GZIP_SINCE_SDK: u32 = 26;

/// toybox `gzip [-19cdfkn]` on stdin → stdout (the only use a host has for it over adb). Output is a real gzip
/// member as zlib writes it (`deflateInit2` with a gzip wrapper: mtime 0, OS 3 = Unix).
pub(super) fn gzip(dev: &mut Device, args: &[&str], stdin: &[u8], io: &mut CmdIo) -> i32 {
    let started = std::time::Instant::now();
    let mut level = 6;
    let mut decompress = false;
    for a in args {
        let Some(flags) = a.strip_prefix('-').filter(|f| !f.is_empty()) else {
            io.err(&format!("gzip: {a}: only stdin is supported by the simulator\n"));
            return 1;
        };
        for f in flags.chars() {
            match f {
                '1'..='9' => level = f as u32 - '0' as u32,
                'd' => decompress = true,
                'c' | 'f' | 'k' | 'n' => {}
                other => {
                    io.err(&format!("gzip: Unknown option '{other}' (see \"gzip --help\")\n"));
                    return 1;
                }
            }
        }
    }
    use std::io::Read;
    if decompress {
        let mut out = Vec::new();
        if flate2::read::GzDecoder::new(stdin).read_to_end(&mut out).is_err() {
            io.err("gzip: not gzip\n");
            return 1;
        }
        io.out.extend_from_slice(&out);
        return 0;
    }
    let lie = dev.frame_lie;
    let input = if lie == FrameLie::GzipShort { &stdin[..stdin.len().saturating_sub(4096)] } else { stdin };
    let made = if lie == FrameLie::GzipBomb { Ok(gzip_bomb(input, level)) } else { gzip_memo(input, level) };
    match made {
        Ok(mut v) => {
            if lie == FrameLie::GzipCorrupt && v.len() > 40 {
                let mid = v.len() / 2;
                v[mid] ^= 0x55;
            }
            io.out.extend_from_slice(&v)
        }
        Err(e) => {
            io.err(&format!("gzip: {e}\n"));
            return 1;
        }
    }
    // One core per gzip: it starts when the command line gets there (`io.at`) and a fast core is free, and ends
    // its input's cost later; the sim's own compression time counts against that.
    let cost = crate::sim::costs::PhoneCosts::at_rate(stdin.len(), dev.cfg.costs.gzip_bytes_per_s);
    if !cost.is_zero() {
        let t0 = tokio::time::Instant::now() - started.elapsed();
        let end = dev.cores.run(dev.cfg.costs.cores, t0 + io.at, cost);
        io.sleep += end.saturating_duration_since(tokio::time::Instant::now() + io.at);
    }
    0
}

/// Large inputs gzipped lately, with their output: (level, input, output), newest last.
type GzipMemo = std::sync::Mutex<std::collections::VecDeque<(u32, Vec<u8>, Vec<u8>)>>;

/// Inputs of at least this size are remembered (captured frames and their ranges).
const MEMO_FROM: usize = 256 * 1024;

/// Most inputs remembered (a 4-stream capture of one screen is four; the scale bench's phones share screens).
const MEMO_ENTRIES: usize = 8;

/// gzip of `input` at `level` as zlib writes it. The output of a recent equal input (compared byte for byte) is
/// reused instead of compressed again: a phone's compression costs the phone's time (`PhoneCosts`, slept), and
/// the simulator burning the bench box's CPU for it would count against the connector it shares the box with
/// (the bench measures the connector's CPU per frame while the phone streams). Same bytes either way.
fn gzip_memo(input: &[u8], level: u32) -> std::io::Result<Vec<u8>> {
    use std::io::Write;
    static MEMO: GzipMemo = std::sync::Mutex::new(std::collections::VecDeque::new());
    let memo = || MEMO.lock().unwrap_or_else(|e| e.into_inner());
    if input.len() >= MEMO_FROM {
        if let Some((_, _, out)) = memo().iter().find(|(l, i, _)| *l == level && i.as_slice() == input) {
            return Ok(out.clone());
        }
    }
    let mut enc = flate2::GzBuilder::new()
        .operating_system(3)
        .write(Vec::with_capacity(input.len() / 8 + 64), flate2::Compression::new(level));
    enc.write_all(input)?;
    let out = enc.finish()?;
    if input.len() >= MEMO_FROM {
        let mut m = memo();
        if m.len() >= MEMO_ENTRIES {
            m.pop_front();
        }
        m.push_back((level, input.to_vec(), out.clone()));
    }
    Ok(out)
}

/// Zeros a [`FrameLie::GzipBomb`] member adds after the honest data.
const BOMB_ZEROS: usize = 64 << 20;

/// One valid gzip member holding `data` followed by [`BOMB_ZEROS`] zeros. The deflate of the zeros is made once and
/// spliced after `data`'s blocks (sync-flushed, so they end on a byte boundary; the zeros' blocks refer only to
/// themselves): several streams of a parallel capture each send a bomb without compressing 64 MiB each time.
fn gzip_bomb(data: &[u8], level: u32) -> Vec<u8> {
    use flate2::{Compress, Compression, Crc, FlushCompress};
    static ZEROS: std::sync::OnceLock<(Vec<u8>, Crc)> = std::sync::OnceLock::new();
    let deflate = |input: &[u8], flush: FlushCompress| {
        let mut c = Compress::new(Compression::new(level), false);
        let mut out = Vec::with_capacity(input.len() / 4 + 1024);
        loop {
            if out.capacity() - out.len() < 64 * 1024 {
                out.reserve(256 * 1024);
            }
            let st = c.compress_vec(&input[c.total_in() as usize..], &mut out, flush).expect("deflate of memory");
            let all_in = c.total_in() as usize == input.len();
            // Finished: the stream ended (Finish), or all input is in and the flush left room to spare (Sync).
            if st == flate2::Status::StreamEnd || (flush == FlushCompress::Sync && all_in && out.len() < out.capacity())
            {
                break;
            }
        }
        out
    };
    let (zeros, zeros_crc) = ZEROS.get_or_init(|| {
        let z = vec![0u8; BOMB_ZEROS];
        let mut crc = Crc::new();
        crc.update(&z);
        (deflate(&z, FlushCompress::Finish), crc)
    });
    let mut crc = Crc::new();
    crc.update(data);
    crc.combine(zeros_crc);
    // RFC 1952 header: deflate, no flags, mtime 0, no extra flags, OS 3 (Unix), as zlib writes it.
    let mut v = vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3];
    v.extend_from_slice(&deflate(data, FlushCompress::Sync));
    v.extend_from_slice(zeros);
    v.extend_from_slice(&crc.sum().to_le_bytes());
    v.extend_from_slice(&((data.len() + BOMB_ZEROS) as u32).to_le_bytes());
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remembered_gzip_outputs_are_the_outputs_of_their_own_input() {
        use std::io::Read;
        let inflate = |gz: &[u8]| {
            let mut out = Vec::new();
            flate2::read::GzDecoder::new(gz).read_to_end(&mut out).expect("valid gzip");
            out
        };
        let mut a: Vec<u8> = (0..MEMO_FROM * 2).map(|i| (i % 251) as u8).collect();
        let first = gzip_memo(&a, 1).unwrap();
        assert_eq!(gzip_memo(&a, 1).unwrap(), first, "an equal input: the same bytes");
        assert_eq!(inflate(&first), a);
        // Same length, one byte changed at the end: not the remembered output.
        *a.last_mut().unwrap() ^= 1;
        assert_eq!(inflate(&gzip_memo(&a, 1).unwrap()), a);
        assert_eq!(inflate(&gzip_memo(&a, 9).unwrap()), a, "another level");
    }

    #[test]
    fn the_gzip_bomb_is_one_valid_member_of_data_and_zeros() {
        use std::io::Read;
        let data: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
        let bomb = gzip_bomb(&data, 1);
        assert!(bomb.len() < 1 << 20, "{} bytes", bomb.len());
        let mut out = Vec::new();
        flate2::read::GzDecoder::new(&bomb[..]).read_to_end(&mut out).expect("valid gzip, CRC and length");
        assert_eq!(out.len(), data.len() + BOMB_ZEROS);
        assert!(out[..data.len()] == data[..] && out[data.len()..].iter().all(|b| *b == 0));
    }
}
