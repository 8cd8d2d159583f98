//! Bounded gzip inflation of a stream a phone sends (`screencap | gzip -1`).
//!
//! Everything in the stream is the phone's claim. A gzip member can expand ~1000:1, so a few KB could ask for
//! gigabytes: the output is capped from the start at `prefix_len` bytes, and as soon as that prefix (the capture's
//! own header) has been inflated, `size_of` turns it into the exact size the whole output may reach — a claim
//! checked against the caller's `max_out` before another byte is inflated. The member must end with a matching
//! CRC-32 and length (a truncated or altered stream is an error), and nothing may follow it.
//!
//! [`GunzipRange`] is the same for one byte range of a capture whose size is already known (the parallel capture
//! of `pixels::parallel`): it must inflate to exactly the range's length, either straight into its place in the
//! frame's buffer ([`GunzipInto`]) or a chunk at a time to a consumer that downscales rows as they arrive
//! ([`GunzipChunks`]).

use std::io::Write;

use flate2::write::GzDecoder;

/// Most reserved ahead of the data (a 1080×2400 RGBA frame is 10.4 MB; larger ones grow as they arrive).
const RESERVE_MAX: usize = 32 << 20;

/// How the output's size is learnt from its first `prefix_len` bytes: `Ok(total)` or why the prefix is refused.
pub type SizeOf = fn(&[u8]) -> Result<usize, String>;

/// Receives the inflated bytes and enforces the limit (inside the decoder's write path, so no chunk larger than
/// the limit is ever stored).
struct Sink {
    out: Vec<u8>,
    /// Until the prefix is known: `prefix_len`; afterwards the size `size_of` allowed.
    limit: usize,
    prefix_len: usize,
    size_known: bool,
    size_of: SizeOf,
    max_out: usize,
    error: Option<String>,
}

impl Write for Sink {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        if !self.size_known && self.out.len() + b.len() >= self.prefix_len {
            // Complete the prefix from this chunk, then size everything else from it.
            let need = self.prefix_len - self.out.len();
            let mut prefix = self.out.clone();
            prefix.extend_from_slice(&b[..need]);
            match (self.size_of)(&prefix) {
                Ok(total) if total <= self.max_out && total >= self.prefix_len => {
                    self.limit = total;
                    self.size_known = true;
                    // One allocation for an honest frame, but never the whole claim up front: a 100-byte stream
                    // naming a 150 MB frame must not reserve 150 MB.
                    self.out.reserve_exact(total.min(RESERVE_MAX).saturating_sub(self.out.len()));
                }
                Ok(total) => {
                    self.error =
                        Some(format!("its header announces {total} bytes (at most {} accepted)", self.max_out));
                    return Err(std::io::Error::other("refused"));
                }
                Err(e) => {
                    self.error = Some(e);
                    return Err(std::io::Error::other("refused"));
                }
            }
        }
        if self.out.len() + b.len() > self.limit {
            self.error = Some(format!("it inflates past the {} bytes its header announces", self.limit));
            return Err(std::io::Error::other("refused"));
        }
        self.out.extend_from_slice(b);
        Ok(b.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// What a stream of gzip is fed to as it arrives ([`BoundedGunzip`], [`GunzipInto`]).
pub trait Feed {
    /// Inflates the next compressed bytes; `Err` says why the stream is refused.
    fn feed(&mut self, data: &[u8]) -> Result<(), String>;
    /// Compressed bytes fed so far.
    fn compressed(&self) -> usize;
}

impl Feed for BoundedGunzip {
    fn feed(&mut self, data: &[u8]) -> Result<(), String> {
        BoundedGunzip::feed(self, data)
    }
    fn compressed(&self) -> usize {
        BoundedGunzip::compressed(self)
    }
}

/// Where a [`GunzipRange`] puts what it inflates: straight into its place in one buffer ([`InPlace`]), or a chunk at
/// a time into a small reused buffer handed to a consumer ([`Chunks`]).
pub trait Out {
    /// Room for the next inflated bytes, `filled` of the range's bytes having been written so far (empty once the
    /// range is full: zlib then makes no progress, which is how a stream that inflates past its range is caught).
    fn window(&mut self, filled: usize) -> &mut [u8];
    /// The first `made` bytes of the last window now hold inflated output.
    fn commit(&mut self, made: usize) -> Result<(), String>;
    /// Bytes the range holds in all.
    fn range_len(&self) -> usize;
}

/// The output of [`GunzipInto`]: one slice, filled in place.
pub struct InPlace<'a>(&'a mut [u8]);

impl Out for InPlace<'_> {
    fn window(&mut self, filled: usize) -> &mut [u8] {
        &mut self.0[filled..]
    }
    fn commit(&mut self, _: usize) -> Result<(), String> {
        Ok(())
    }
    fn range_len(&self) -> usize {
        self.0.len()
    }
}

/// Chunk size of [`Chunks`]: small enough to stay in a core's cache (L2 is 512 KiB to 2 MiB on a Pi and on
/// desktop cores) while its consumer reads it again, large enough that zlib's copy of its last 32 KiB into its own
/// window at the end of every call (it cannot look back into a buffer it no longer owns) stays a small part of the
/// output: an eighth here; with 64 KiB chunks it was half of every byte, 3.7% of the connector's CPU per frame.
const CHUNK: usize = 256 * 1024;

/// The output of [`GunzipChunks`]: a range of `len` bytes inflated a chunk at a time into one reused buffer, each
/// chunk handed to `take` in order (which may refuse it).
pub struct Chunks<F> {
    buf: Vec<u8>,
    len: usize,
    take: F,
}

impl<F: FnMut(&[u8]) -> Result<(), String>> Out for Chunks<F> {
    fn window(&mut self, filled: usize) -> &mut [u8] {
        let room = self.len.saturating_sub(filled).min(CHUNK);
        &mut self.buf[..room]
    }
    fn commit(&mut self, made: usize) -> Result<(), String> {
        (self.take)(&self.buf[..made])
    }
    fn range_len(&self) -> usize {
        self.len
    }
}

/// One gzip member that must inflate to exactly its range's length: a byte past the end is refused before it is
/// stored, and [`GunzipRange::finish`] refuses a member that ended short.
///
/// zlib's own gzip wrapper (header, CRC-32 and length trailer checked by zlib) inflates straight into the output's
/// window: no intermediate buffer of zlib's own and no copy out of it (the copy out of `GzDecoder`'s buffer was an
/// eighth of the connector's CPU per screenshot).
pub struct GunzipRange<O> {
    z: flate2::Decompress,
    out: O,
    filled: usize,
    ended: bool,
    compressed: usize,
}

/// A range inflated in place into a slice of the frame's buffer.
pub type GunzipInto<'a> = GunzipRange<InPlace<'a>>;

/// A range inflated a chunk at a time, each chunk handed to a consumer (the frame is never held whole).
pub type GunzipChunks<F> = GunzipRange<Chunks<F>>;

impl<'a> GunzipInto<'a> {
    pub fn new(out: &'a mut [u8]) -> GunzipInto<'a> {
        GunzipRange::with(InPlace(out))
    }
}

impl<F: FnMut(&[u8]) -> Result<(), String>> GunzipChunks<F> {
    /// A range of `len` bytes, each inflated chunk (at most 256 KiB, in order) handed to `take`.
    pub fn chunks(len: usize, take: F) -> GunzipChunks<F> {
        GunzipRange::with(Chunks { buf: vec![0; len.min(CHUNK)], len, take })
    }
}

impl<O: Out> GunzipRange<O> {
    fn with(out: O) -> GunzipRange<O> {
        GunzipRange { z: flate2::Decompress::new_gzip(15), out, filled: 0, ended: false, compressed: 0 }
    }

    /// Bytes the range must inflate to.
    pub fn range_len(&self) -> usize {
        self.out.range_len()
    }

    /// Once the member ended with a matching CRC-32 and length and filled the range exactly.
    pub fn finish(self) -> Result<(), String> {
        if !self.ended {
            return Err(if self.compressed == 0 {
                "not a gzip stream (nothing was sent)".into()
            } else {
                format!("truncated gzip stream (it ended after {} bytes of output)", self.filled)
            });
        }
        if self.filled != self.out.range_len() {
            return Err(format!("it inflates to {} bytes, its range is {}", self.filled, self.out.range_len()));
        }
        Ok(())
    }
}

impl<O: Out> Feed for GunzipRange<O> {
    fn feed(&mut self, mut data: &[u8]) -> Result<(), String> {
        self.compressed = self.compressed.saturating_add(data.len());
        while !data.is_empty() {
            if self.ended {
                return Err("bytes follow the end of the gzip stream".into());
            }
            let (in0, out0) = (self.z.total_in(), self.z.total_out());
            let window = self.out.window(self.filled);
            let room = window.len();
            let status = self.z.decompress(data, window, flate2::FlushDecompress::None).map_err(|e| {
                if self.filled == 0 && self.z.total_out() == 0 {
                    format!("not a gzip stream ({e})")
                } else {
                    format!("corrupt gzip stream ({e})")
                }
            })?;
            // Both deltas are bounded by the slices just passed in.
            let used = usize::try_from(self.z.total_in() - in0).unwrap_or(data.len()).min(data.len());
            let made = usize::try_from(self.z.total_out() - out0).unwrap_or(0).min(room);
            data = &data[used..];
            self.filled += made;
            if made > 0 {
                self.out.commit(made)?;
            }
            match status {
                flate2::Status::StreamEnd => self.ended = true,
                _ if used == 0 && made == 0 => {
                    // No progress with input left: the range is full and the stream wants to write more.
                    return Err(format!("it inflates past the {} bytes of its range", self.out.range_len()));
                }
                _ => {}
            }
        }
        Ok(())
    }
    fn compressed(&self) -> usize {
        self.compressed
    }
}

/// An incremental, bounded gzip decoder: [`BoundedGunzip::feed`] the stream as it arrives (inflation overlaps the
/// transfer), then [`BoundedGunzip::finish`].
pub struct BoundedGunzip {
    dec: GzDecoder<Sink>,
    compressed: usize,
}

impl BoundedGunzip {
    /// At most `max_out` bytes of output in total, sized by `size_of` from the first `prefix_len` bytes.
    pub fn new(max_out: usize, prefix_len: usize, size_of: SizeOf) -> BoundedGunzip {
        let sink =
            Sink { out: Vec::new(), limit: prefix_len, prefix_len, size_known: false, size_of, max_out, error: None };
        BoundedGunzip { dec: GzDecoder::new(sink), compressed: 0 }
    }

    /// Compressed bytes fed so far.
    pub fn compressed(&self) -> usize {
        self.compressed
    }

    fn explain(&self, e: std::io::Error) -> String {
        match &self.dec.get_ref().error {
            Some(why) => why.clone(),
            None if e.kind() == std::io::ErrorKind::WriteZero => "bytes follow the end of the gzip stream".into(),
            None => format!("corrupt gzip stream ({e})"),
        }
    }

    pub fn feed(&mut self, data: &[u8]) -> Result<(), String> {
        self.compressed = self.compressed.saturating_add(data.len());
        self.dec.write_all(data).map_err(|e| self.explain(e))
    }

    /// The whole output, once the member ended with a matching CRC-32 and length.
    pub fn finish(mut self) -> Result<Vec<u8>, String> {
        if let Err(e) = self.dec.try_finish() {
            return Err(match self.dec.get_ref().error.clone() {
                Some(why) => why,
                None if e.kind() == std::io::ErrorKind::InvalidInput && self.dec.get_ref().out.is_empty() => {
                    "not a gzip stream".into()
                }
                None => format!("truncated or corrupt gzip stream ({e})"),
            });
        }
        let sink = self.dec.finish().map_err(|e| format!("truncated or corrupt gzip stream ({e})"))?;
        Ok(sink.out)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// One gzip member of `data` at level 1, as a phone's `gzip -1` writes it (also used by `pixels::parallel`).
    pub(crate) fn gz(data: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    /// First byte = total length (a toy header).
    fn size_of(p: &[u8]) -> Result<usize, String> {
        Ok(p[0] as usize)
    }

    fn inflate(data: &[u8], max_out: usize, chunk: usize) -> Result<Vec<u8>, String> {
        let mut d = BoundedGunzip::new(max_out, 1, size_of);
        for c in data.chunks(chunk.max(1)) {
            d.feed(c)?;
        }
        d.finish()
    }

    #[test]
    fn honest_streams_inflate_whatever_the_chunking() {
        let msg: Vec<u8> = std::iter::once(200u8).chain((1..200).map(|i| (i % 7) as u8)).collect();
        for chunk in [1, 3, 64, 10_000] {
            assert_eq!(inflate(&gz(&msg), 1000, chunk).unwrap(), msg, "chunk {chunk}");
        }
    }

    #[test]
    fn lying_streams_are_refused_without_inflating_them() {
        let msg: Vec<u8> = std::iter::once(50u8).chain([7u8; 49]).collect();
        let good = gz(&msg);
        // More output than the header announced (a zip bomb would be this, larger).
        let mut long = msg.clone();
        long.extend_from_slice(&[7; 100_000]);
        let e = inflate(&gz(&long), 1_000_000, 4096).unwrap_err();
        assert!(e.contains("past the 50 bytes"), "{e}");
        // A header announcing more than the caller accepts.
        assert!(inflate(&good, 40, 4096).unwrap_err().contains("at most 40"));
        // Truncated, corrupted CRC, trailing bytes, not gzip at all.
        assert!(inflate(&good[..good.len() - 3], 1000, 7).is_err());
        let mut bad_crc = good.clone();
        let n = bad_crc.len();
        bad_crc[n - 8] ^= 0xff;
        assert!(inflate(&bad_crc, 1000, 7).is_err());
        let mut trailing = good.clone();
        trailing.extend_from_slice(b"junk");
        assert!(inflate(&trailing, 1000, 4096).is_err());
        assert!(inflate(b"/system/bin/sh: gzip: inaccessible or not found\n", 1000, 4096).is_err());
        assert!(inflate(b"", 1000, 4096).is_err());
    }

    fn inflate_into(data: &[u8], len: usize, chunk: usize) -> Result<Vec<u8>, String> {
        let mut out = vec![0u8; len];
        let mut d = GunzipInto::new(&mut out);
        for c in data.chunks(chunk.max(1)) {
            d.feed(c)?;
        }
        d.finish()?;
        Ok(out)
    }

    #[test]
    fn a_range_must_inflate_to_exactly_its_length() {
        let msg: Vec<u8> = (0..5000).map(|i| (i % 13) as u8).collect();
        for chunk in [1, 7, 4096, 100_000] {
            assert_eq!(inflate_into(&gz(&msg), 5000, chunk).unwrap(), msg, "chunk {chunk}");
        }
        let e = inflate_into(&gz(&msg), 4999, 4096).unwrap_err();
        assert!(e.contains("past the 4999 bytes"), "{e}");
        let e = inflate_into(&gz(&msg), 5001, 4096).unwrap_err();
        assert!(e.contains("inflates to 5000 bytes, its range is 5001"), "{e}");
        let good = gz(&msg);
        assert!(inflate_into(&good[..good.len() - 3], 5000, 7).is_err());
        let mut trailing = good.clone();
        trailing.extend_from_slice(b"junk");
        assert!(inflate_into(&trailing, 5000, 4096).is_err());
        for chunk in [1, 4096] {
            let mut bad_crc = good.clone();
            let n = bad_crc.len();
            bad_crc[n - 8] ^= 0xff;
            let e = inflate_into(&bad_crc, 5000, chunk).unwrap_err();
            assert!(e.contains("corrupt"), "{e}");
            let mut bad_len = good.clone();
            bad_len[n - 4] ^= 0x01;
            assert!(inflate_into(&bad_len, 5000, chunk).is_err(), "chunk {chunk}");
        }
        let e = inflate_into(b"dd: /x: No such file or directory\n", 10, 4096).unwrap_err();
        assert!(e.contains("not a gzip stream"), "{e}");
        assert!(inflate_into(b"", 10, 4096).is_err());
        // A bomb: 64 MiB of zeros for a 5000-byte range stops at the range, with nothing allocated beyond it.
        let e = inflate_into(&gz(&vec![0u8; 64 << 20]), 5000, 65536).unwrap_err();
        assert!(e.contains("past the 5000 bytes"), "{e}");
    }

    /// The chunked output: the same stream in any feeding gives the same bytes in order, chunks of at most
    /// 256 KiB; the range is still exact (short, long and bomb refused) and a chunk the consumer refuses stops
    /// the stream with the consumer's reason.
    #[test]
    fn a_chunked_range_hands_out_exactly_its_bytes_in_order() {
        let msg: Vec<u8> = (0..700_000u32).map(|i| (i % 251) as u8 ^ (i / 9000) as u8).collect();
        let inflate = |data: &[u8], len: usize, feed: usize| -> Result<(Vec<u8>, usize), String> {
            let (mut got, mut biggest) = (Vec::new(), 0);
            let mut d = GunzipChunks::chunks(len, |c: &[u8]| {
                biggest = biggest.max(c.len());
                got.extend_from_slice(c);
                Ok(())
            });
            for c in data.chunks(feed) {
                d.feed(c)?;
            }
            d.finish()?;
            Ok((got, biggest))
        };
        let good = gz(&msg);
        for feed in [1000, 65536, good.len()] {
            let (got, biggest) = inflate(&good, msg.len(), feed).unwrap();
            assert!(got == msg, "feeding {feed}");
            assert!(biggest <= CHUNK, "a chunk of {biggest} bytes");
        }
        let e = inflate(&good, msg.len() - 1, 4096).unwrap_err();
        assert!(e.contains("past the 699999 bytes"), "{e}");
        let e = inflate(&good, msg.len() + 1, 4096).unwrap_err();
        assert!(e.contains("inflates to 700000 bytes, its range is 700001"), "{e}");
        let e = inflate(&gz(&vec![0u8; 64 << 20]), 5000, 65536).unwrap_err();
        assert!(e.contains("past the 5000 bytes"), "{e}");
        let mut d = GunzipChunks::chunks(msg.len(), |_: &[u8]| Err("the consumer says no".to_string()));
        assert_eq!(d.feed(&good).unwrap_err(), "the consumer says no");
    }
}
