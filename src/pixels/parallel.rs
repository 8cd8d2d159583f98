//! The phone side of compressed captures (issue 24): the probe that says what a phone can do, and the parallel
//! capture that spreads the deflating of one frame over several of the phone's cores.
//!
//! One `gzip` runs on one core; a phone has eight. So the frame is written once to a private temp file
//! (`umask 077; screencap F` — without `-p` and without a `.png` name screencap writes its raw format, AOSP
//! `cmds/screencap/screencap.cpp`) and N streams each read one byte range of it with `dd … | gzip -1`, inflated on
//! the host straight into their place of one buffer ([`GunzipInto`]) — or, when the caller wants a smaller
//! picture, a chunk at a time into the downscale ([`super::fitting`]), so the frame is never held whole (the
//! agent's screenshots and observations, the wall's thumbnails). All ranges come from the same file: one
//! frame, never torn. N = min(the phone's CPUs as toybox `nproc` counts them, [`MAX_STREAMS`]), learnt by the same
//! probe round trip as gzip itself; `nproc` is new in Android 10's toybox, so Android 8 and 9 keep the single
//! stream (`screencap | gzip -1`), as does a phone whose temp-file capture fails (read-only or full
//! `/data/local/tmp`: remembered until the phone changes state).
//!
//! Every length is the phone's claim and checked: the size `stat` reports must be the size the frame's own header
//! implies (and at most the caller's cap) before the buffer is allocated, each range must inflate to exactly its
//! length, and the assembled frame is decoded by the same `decode_raw` as the single stream. The temp file is
//! removed on every path (a spawned `rm -f` when the capture ends or is dropped: cancelled); the
//! probe and every capture also sweep `xagent-*.raw` files older than a minute that an earlier connector left
//! behind (killed, or a screencap that was still writing when its capture was cancelled).

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use super::downscale::fit_size;
use super::fitting::Fitting;
use super::frame::{raw_capture_size, Frame, Shape};
use super::picture::Picture;
use crate::device::adb::AdbBackend;
use crate::device::gunzip::{GunzipChunks, GunzipInto, GunzipRange, Out};
use crate::device::DeviceKey;
use crate::protocol::errors::{ErrorCode, ProtoError};

/// Most parallel streams per capture. Past four the phone's fast cores are used up (a Tensor G2 or Snapdragon 8
/// Gen 2 has four or five big and mid cores; the rest are little ones at a fraction of the rate) and each stream
/// costs an adb connection and a round trip.
pub const MAX_STREAMS: usize = 4;

/// Where the frame is written: the shell user's own scratch directory, on every release.
pub const TEMP_DIR: &str = "/data/local/tmp";

/// Block size of the `dd` reads: ranges are whole blocks (the last range ends at the end of the file).
const BLOCK: usize = 64 * 1024;

/// How long the clean-up `rm -f` may take before it is given up (the probe's sweep catches what it missed).
const RM_DEADLINE: Duration = Duration::from_secs(5);

/// Removes capture files older than a minute that an earlier capture left behind (a connector killed mid-capture,
/// or a `screencap` still writing when its capture was cancelled and its `rm -f` ran first). Prints nothing; a
/// phone whose `find` lacks an option says so on stderr, which goes nowhere. A macro: it is spliced into
/// [`PROBE`] at compile time and into every capture's setup command.
macro_rules! sweep {
    () => {
        "find /data/local/tmp -maxdepth 1 -name 'xagent-*.raw' -mmin +1 -delete 2>/dev/null"
    };
}

/// The probe, one round trip: the sweep, then gzip a known line (a phone without gzip answers "not found"
/// instead, which is not gzip), then count the CPUs (`nproc`, Android 10+; nothing on older phones).
pub const PROBE: &str = concat!(sweep!(), "; echo xagent-gzip-probe | gzip -1; nproc 2>/dev/null");

/// What the probe found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Probed {
    /// The phone's gzip round-trips a line.
    pub gzip: bool,
    /// Parallel streams a capture may use: min(CPUs, [`MAX_STREAMS`]); 1 without `nproc` or gzip.
    pub streams: usize,
}

/// Reads the probe's output: one gzip member holding the probe line, then `nproc`'s number.
pub fn parse_probe(out: &[u8]) -> Probed {
    use std::io::Read;
    let no = Probed { gzip: false, streams: 1 };
    let mut dec = flate2::bufread::GzDecoder::new(out);
    let mut line = Vec::new();
    // At most 64 bytes of the member are inflated: the line is 18.
    if (&mut dec).take(64).read_to_end(&mut line).is_err() || line != b"xagent-gzip-probe\n" {
        return no;
    }
    // A member that holds more than the line, or did not end (no CRC/length checked), is not trusted.
    let mut rest_of_member = [0u8; 1];
    if !matches!(dec.read(&mut rest_of_member), Ok(0)) {
        return no;
    }
    let after = dec.into_inner();
    let cpus = std::str::from_utf8(after).ok().and_then(|t| t.trim().parse::<usize>().ok()).filter(|n| *n >= 1);
    Probed { gzip: true, streams: cpus.map_or(1, |n| n.min(MAX_STREAMS)) }
}

/// The byte ranges (start, length) of `size` bytes in `streams` parts of whole [`BLOCK`]s; fewer parts when the
/// file is too small to give each one a block.
pub fn ranges(size: usize, streams: usize) -> Vec<(usize, usize)> {
    let blocks = size.div_ceil(BLOCK);
    let per = blocks.div_ceil(streams.max(1)).max(1);
    let mut out = Vec::new();
    let mut start = 0;
    while start < size {
        let len = per.saturating_mul(BLOCK).min(size - start);
        out.push((start, len));
        start += len;
    }
    out
}

/// Removes the temp file when dropped, whichever way the capture ends (success, error, or the capture's future
/// dropped: cancelled): the `rm -f` is spawned, bounded by its own deadline. Spawned rather than awaited even after
/// success or an error: the agent's picture (or error) does not wait a round trip for housekeeping, and a phone that
/// just timed out does not hold the call up to another deadline.
struct TempFile {
    rm: Option<Pin<Box<dyn Future<Output = ()> + Send + 'static>>>,
}

impl TempFile {
    fn new(adb: &AdbBackend, key: &DeviceKey, path: &str) -> TempFile {
        let rm = adb.detached_exec(key, format!("rm -f {path}"), RM_DEADLINE);
        let path = path.to_owned();
        TempFile {
            rm: Some(Box::pin(async move {
                if let Err(e) = rm.await {
                    tracing::debug!(path, error = %e, "could not remove a capture's temp file (the next probe sweeps it)");
                }
            })),
        }
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        if let (Some(rm), Ok(rt)) = (self.rm.take(), tokio::runtime::Handle::try_current()) {
            rt.spawn(rm);
        }
    }
}

/// Why the temp-file capture could not start: the phone could not write or size the file (not a lie: a full or
/// read-only `/data/local/tmp`). The caller falls back to the single stream and remembers it.
pub fn temp_file_failed(why: impl Into<String>) -> ProtoError {
    ProtoError::new(ErrorCode::ToolInvokeFailed, format!("{TEMP_FILE_FAILED}: {}", why.into()))
}

/// How [`temp_file_failed`] errors begin (what the caller matches to remember the phone cannot do this).
pub const TEMP_FILE_FAILED: &str = "the phone could not capture to a temp file";

fn bad_frame(msg: impl Into<String>) -> ProtoError {
    super::frame::bad_frame(msg)
}

/// Captures one raw frame (`screencap`'s format, header included) through `streams` parallel compressed streams,
/// at most `cap` bytes. With `fit` (a long side, 0 = none) smaller than the frame the rows are downscaled as they
/// arrive and the frame is never held whole ([`Picture::Fitted`], [`super::fitting`]); otherwise the ranges are
/// inflated into their places of one buffer ([`Picture::Whole`]). Returns the picture and the bytes that crossed
/// adb. `deadline` bounds each round trip; cancellable (dropping the future closes every stream, then the temp
/// file is removed by a spawned `rm -f`).
pub async fn parallel(
    adb: &AdbBackend,
    key: &DeviceKey,
    streams: usize,
    cap: usize,
    fit: u32,
    deadline: Duration,
) -> Result<(Picture, usize), ProtoError> {
    let path = format!("{TEMP_DIR}/xagent-{}.raw", crate::protocol::ids::random_hex(8));
    let _removed_when_dropped = TempFile::new(adb, key, &path);
    capture_to(adb, key, &path, streams, cap, fit, deadline).await
}

async fn capture_to(
    adb: &AdbBackend,
    key: &DeviceKey,
    path: &str,
    streams: usize,
    cap: usize,
    fit: u32,
    deadline: Duration,
) -> Result<(Picture, usize), ProtoError> {
    let end = tokio::time::Instant::now() + deadline;
    let left = || end.saturating_duration_since(tokio::time::Instant::now()).max(Duration::from_millis(1));
    // One round trip: the frame to the file (private: umask 077), its size, its header; then the sweep, so a file
    // an earlier capture left lives a minute or so, not until the next probe (after a reconnect). Our own file is
    // fresh: never swept.
    let cmd = format!(
        "umask 077; screencap {path} 2>/dev/null && stat -c %s {path} && dd if={path} bs=16 count=1 2>/dev/null; {}",
        sweep!()
    );
    let head = adb.exec(key, &cmd, 256, false, left()).await?;
    let mut wire = head.len();
    let nl = head.iter().take(24).position(|b| *b == b'\n');
    let size = nl.and_then(|i| std::str::from_utf8(&head[..i]).ok()).and_then(|t| t.parse::<usize>().ok());
    let Some((nl, size)) = nl.zip(size) else {
        // screencap's own complaint went to /dev/null (it also warns there about multiple displays, which would
        // garble this answer); what is left is `stat`'s, or nothing.
        let text = String::from_utf8_lossy(&head[..head.len().min(200)]);
        let text = crate::device::text::phone_text(text.trim(), 200);
        return Err(temp_file_failed(if text.is_empty() {
            format!("`screencap` could not write to {TEMP_DIR} (read-only or full?)")
        } else {
            text
        }));
    };
    let header = &head[nl + 1..];
    if header.is_empty() && size > 0 {
        // `dd` printed nothing: it is missing (its "not found" went to /dev/null with its stderr).
        return Err(temp_file_failed("`dd` read nothing from the capture file"));
    }
    if header.len() != 16.min(size) || size < 12 {
        return Err(bad_frame(format!("a {size}-byte capture file whose header reads {} bytes", header.len())));
    }
    // Android 9+ writes a 16-byte header, older releases 12: the file is one of the two sizes the header implies.
    let most = raw_capture_size(&header[..12]).map_err(bad_frame)?;
    if (size != most && Some(size) != most.checked_sub(4)) || size > cap {
        return Err(bad_frame(format!(
            "a {size}-byte capture file whose header implies {most} (at most {cap} accepted)"
        )));
    }
    let shape = Shape::of(header, size)?;
    let plan = ranges(size, streams);
    if let Some((nw, nh)) = (fit > 0).then(|| fit_size(shape.width, shape.height, fit)).flatten() {
        let fitting = Fitting::new(shape, header, nw, nh);
        let fetch = plan.iter().map(|&(start, len)| {
            let fitting = &fitting;
            async move {
                let mut strip = fitting.strip(start, start + len);
                let sent =
                    fetch_range(adb, key, path, start, GunzipChunks::chunks(len, |b| strip.take(b)), left()).await?;
                strip.finish();
                Ok::<usize, ProtoError>(sent)
            }
        });
        for sent in futures_util::future::try_join_all(fetch).await? {
            wire = wire.saturating_add(sent);
        }
        return Ok((Picture::Fitted(fitting.finish().map_err(bad_frame)?), wire));
    }
    // Zeroed memory is mapped lazily: only what the ranges fill is committed.
    let mut frame = vec![0u8; size];
    let mut parts = Vec::with_capacity(plan.len());
    let mut rest: &mut [u8] = &mut frame;
    for (start, len) in &plan {
        let (part, tail) = rest.split_at_mut(*len);
        rest = tail;
        parts.push((*start, part));
    }
    let fetch =
        parts.into_iter().map(|(start, part)| fetch_range(adb, key, path, start, GunzipInto::new(part), left()));
    for sent in futures_util::future::try_join_all(fetch).await? {
        wire = wire.saturating_add(sent);
    }
    // Checks only (no pixel is touched): the header against the assembled bytes.
    Ok((Picture::Whole(Frame::from_raw(frame)?), wire))
}

/// Fetches the range of the capture file at `path` that starts at `start` and is `inflate`'s length long, through
/// `dd … | gzip -1`: the bytes that crossed adb, once the range inflated to exactly its length.
async fn fetch_range<O: Out + Send>(
    adb: &AdbBackend,
    key: &DeviceKey,
    path: &str,
    start: usize,
    mut inflate: GunzipRange<O>,
    deadline: Duration,
) -> Result<usize, ProtoError> {
    let len = inflate.range_len();
    let (skip, count) = (start / BLOCK, len.div_ceil(BLOCK));
    let cmd = format!("dd if={path} bs={BLOCK} skip={skip} count={count} 2>/dev/null | gzip -1");
    // Deflate never grows data by more than a few bytes per 16 KiB block; anything far beyond is a lie.
    let max_compressed = len.saturating_add(len / 16).saturating_add(4096);
    let sent = adb.exec_gunzip_into(key, &cmd, max_compressed, &mut inflate, deadline).await?;
    inflate.finish().map_err(|why| bad_frame(format!("`{cmd}`: {why}")))?;
    Ok(sent)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::gunzip::tests::gz;

    #[test]
    fn the_probe_reads_gzip_and_the_cpu_count() {
        let mut out = gz(b"xagent-gzip-probe\n");
        assert_eq!(parse_probe(&out), Probed { gzip: true, streams: 1 }, "no nproc (Android 8, 9)");
        out.extend_from_slice(b"8\n");
        assert_eq!(parse_probe(&out), Probed { gzip: true, streams: 4 });
        let mut two = gz(b"xagent-gzip-probe\n");
        two.extend_from_slice(b"2\n");
        assert_eq!(parse_probe(&two), Probed { gzip: true, streams: 2 });
        let no = Probed { gzip: false, streams: 1 };
        assert_eq!(parse_probe(b"/system/bin/sh: gzip: inaccessible or not found\n8\n"), no);
        assert_eq!(parse_probe(&gz(b"xagent-gzip-probe\nmore")), no);
        let full = gz(b"xagent-gzip-probe\n");
        assert_eq!(parse_probe(&full[..full.len() - 4]), no, "a member without its length is not trusted");
        let mut junk = gz(b"xagent-gzip-probe\n");
        junk.extend_from_slice(b"0\n");
        assert_eq!(parse_probe(&junk), Probed { gzip: true, streams: 1 });
    }

    #[test]
    fn ranges_cover_the_file_in_whole_blocks() {
        let size = 1080 * 2400 * 4 + 16;
        for n in 1..=4 {
            let r = ranges(size, n);
            assert_eq!(r.len(), n);
            assert_eq!(r.iter().map(|(_, l)| l).sum::<usize>(), size);
            assert!(r.windows(2).all(|w| w[0].0 + w[0].1 == w[1].0 && w[0].1 % BLOCK == 0));
        }
        assert_eq!(ranges(100, 4), vec![(0, 100)], "one block: one stream");
        assert_eq!(ranges(BLOCK * 2 + 1, 4), vec![(0, BLOCK), (BLOCK, BLOCK), (2 * BLOCK, 1)]);
        assert!(ranges(0, 4).is_empty());
    }
}
