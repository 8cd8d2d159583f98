//! A capture downscaled while it arrives (issue 24, host side): the parallel capture's ranges are inflated a chunk
//! at a time ([`crate::device::gunzip::GunzipChunks`]), or the `framebuffer:` pixels read a chunk at a time (one
//! range: the whole frame, in order), and each chunk's rows go straight into the area downscale, so the full-size
//! frame (10.4 MB for 1080×2400 RGBA) is never held. Allocating, zeroing, faulting in and
//! unmapping that buffer was about a third of the connector's CPU per screenshot (perf, `BENCHMARKS.md`), and
//! the downscale now reads rows that are still in the cache the inflate just wrote them to.
//!
//! The ranges arrive concurrently and split the file at block boundaries, not row boundaries. Each stream
//! ([`Strip`]) sums the source rows that lie wholly in its range into the output rows they cover; an output row
//! whose source rows all passed through one stream is finished there, any other is handed over partly summed and
//! finished by whichever contribution completes it. A source row cut by a range boundary is assembled from its two
//! pieces and added by whichever stream delivers the second. Integer sums do not depend on their order, so the
//! picture is byte for byte the one [`super::frame::Frame::fit`] makes from the whole frame (tested below with
//! every split of the file, and end to end in `tests/capture.rs`).
//!
//! The blank-screen check ([`super::frame::Frame::uniform_colour`]: every 4th pixel of every 4th row within ±2 of
//! the first) is answered on the way too, from the same samples, and stops sampling as soon as two samples differ
//! by more than 4.
//!
//! The work runs where the inflate runs, in the capture's own task between two reads of a stream (a read is at most
//! 64 KiB of compressed bytes), and the streams of one capture are polled by that one task: the shared state's
//! lock is never contended, it only makes the hand-over between streams explicit.

use std::collections::HashMap;
use std::sync::Mutex;

use image::RgbImage;

use super::downscale::{accumulate_fast, Plan};
use super::frame::Shape;

/// An output row being summed: its accumulated source rows, and how many of its taps are in.
struct Partial {
    acc: Vec<u32>,
    got: usize,
}

/// The lowest and highest R, G, B among the blank check's samples.
#[derive(Clone, Copy)]
struct Samples {
    lo: [u8; 3],
    hi: [u8; 3],
    /// Two samples differ by more than 4 in a channel: no colour is within ±2 of both, not uniform.
    mixed: bool,
}

impl Samples {
    const NONE: Samples = Samples { lo: [255; 3], hi: [0; 3], mixed: false };

    fn merge(&mut self, o: Samples) {
        for c in 0..3 {
            self.lo[c] = self.lo[c].min(o.lo[c]);
            self.hi[c] = self.hi[c].max(o.hi[c]);
        }
        self.mixed |= o.mixed || (0..3).any(|c| self.hi[c] > self.lo[c].saturating_add(4));
    }

    /// Adds every 4th pixel of `row`, in the layout `(bpp, ch)`.
    fn row(&mut self, row: &[u8], (bpp, ch): (usize, [usize; 3])) {
        let mut s = Samples::NONE;
        for p in row.chunks_exact(bpp).step_by(4) {
            for c in 0..3 {
                s.lo[c] = s.lo[c].min(p[ch[c]]);
                s.hi[c] = s.hi[c].max(p[ch[c]]);
            }
        }
        self.merge(s);
    }
}

/// What every stream shares: the output picture and what is handed between streams.
struct Shared {
    out: Vec<u8>,
    /// Output rows finished.
    made: usize,
    /// Output rows partly summed by a stream that did not see all their source rows.
    pending: HashMap<usize, Partial>,
    /// Source rows cut by a range boundary: their bytes so far, and how many.
    split: HashMap<usize, (Vec<u8>, usize)>,
    samples: Samples,
    /// Pixel (0, 0), the colour a uniform frame must be near.
    first: Option<[u8; 3]>,
}

/// One raw capture being downscaled to `nw × nh` as its ranges arrive.
pub struct Fitting {
    shape: Shape,
    plan: Plan,
    /// Source row `y` counts in the output rows `taps[starts[y]..starts[y + 1]]`: (output row, weight).
    starts: Vec<usize>,
    taps: Vec<(usize, u32)>,
    /// The capture's header as first read: every range that covers it must repeat it.
    header: Vec<u8>,
    shared: Mutex<Shared>,
}

/// The downscaled picture of a capture, made as it arrived.
pub struct Fitted {
    pub img: RgbImage,
    /// The frame's own size.
    pub width: u32,
    pub height: u32,
    /// See [`super::frame::Frame::uniform_colour`].
    pub uniform: Option<[u8; 3]>,
}

impl Fitting {
    /// A capture of `shape` whose first bytes are `header` (at least `shape.header_len` of them), to be made into
    /// `nw × nh` (a downscale: each at most the frame's own).
    pub fn new(shape: Shape, header: &[u8], nw: u32, nh: u32) -> Fitting {
        let (w, h) = (shape.width as usize, shape.height as usize);
        let plan = Plan::new(w, h, nw, nh, shape.row_layout());
        // The taps regrouped by source row (a counting sort: no vector per row).
        let mut starts = vec![0usize; h + 1];
        for (first, ws) in &plan.ty {
            for k in 0..ws.len() {
                starts[first + k + 1] += 1;
            }
        }
        for y in 0..h {
            starts[y + 1] += starts[y];
        }
        let mut taps = vec![(0usize, 0u32); starts[h]];
        let mut next = starts.clone();
        for (j, (first, ws)) in plan.ty.iter().enumerate() {
            for (k, &wy) in ws.iter().enumerate() {
                taps[next[first + k]] = (j, wy);
                next[first + k] += 1;
            }
        }
        let out = vec![0u8; plan.nw * plan.nh * 3];
        let header = header[..shape.header_len.min(header.len())].to_vec();
        let shared = Shared {
            out,
            made: 0,
            pending: HashMap::new(),
            split: HashMap::new(),
            samples: Samples::NONE,
            first: None,
        };
        Fitting { shape, plan, starts, taps, header, shared: Mutex::new(shared) }
    }

    /// The consumer of the file's bytes `start..end` (one range), fed in order.
    pub fn strip(&self, start: usize, end: usize) -> Strip<'_> {
        Strip {
            fit: self,
            pos: start,
            start,
            end,
            carry: Vec::new(),
            scratch: Vec::new(),
            sums: Sums { open: Vec::new(), spare: Vec::new() },
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Shared> {
        self.shared.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn row_taps(&self, y: usize) -> &[(usize, u32)] {
        &self.taps[self.starts[y]..self.starts[y + 1]]
    }

    /// The number of source rows output row `j` sums.
    fn taps_of(&self, j: usize) -> usize {
        self.plan.ty[j].1.len()
    }

    /// The blank check's part of source row `y` (already in the downscale's layout), added to `s`: every 4th
    /// pixel of every 4th row, and pixel (0, 0) as the reference. Nothing once two samples told it apart.
    fn sample(&self, y: usize, row: &[u8], s: &mut Shared) {
        if y % 4 != 0 || s.samples.mixed {
            return;
        }
        let layout = self.shape.row_layout();
        s.samples.row(row, layout);
        if y == 0 {
            let (_, ch) = layout;
            s.first = Some([row[ch[0]], row[ch[1]], row[ch[2]]]);
        }
    }

    /// Adds a partly summed output row to what other streams gave for it; finishes it when it is complete.
    fn hand_over(&self, s: &mut Shared, j: usize, p: Partial) {
        let total = self.taps_of(j);
        let merged = match s.pending.remove(&j) {
            Some(mut q) => {
                q.acc.iter_mut().zip(&p.acc).for_each(|(a, b)| *a += b);
                q.got += p.got;
                q
            }
            None => p,
        };
        if merged.got >= total {
            self.finish_row(s, j, &merged.acc);
        } else {
            s.pending.insert(j, merged);
        }
    }

    fn finish_row(&self, s: &mut Shared, j: usize, acc: &[u32]) {
        let n = self.plan.nw * 3;
        self.plan.horizontal_fast(acc, &mut s.out[j * n..(j + 1) * n]);
        s.made += 1;
    }

    /// `bytes` of source row `y` from byte `col` on, where the row is cut by a range boundary; the stream that
    /// completes the row adds it.
    fn split_part(&self, y: usize, col: usize, bytes: &[u8]) {
        let stride = self.shape.stride();
        let mut s = self.lock();
        let (buf, filled) = s.split.entry(y).or_insert_with(|| (vec![0; stride], 0));
        buf[col..col + bytes.len()].copy_from_slice(bytes);
        *filled += bytes.len();
        if *filled < stride {
            return;
        }
        let (buf, _) = s.split.remove(&y).expect("just filled");
        let mut scratch = Vec::new();
        let row = self.shape.row(&buf, &mut scratch);
        self.sample(y, row, &mut s);
        for &(j, wy) in self.row_taps(y) {
            let mut acc = vec![0u32; self.plan.stride];
            accumulate_fast(&mut acc, row, wy);
            self.hand_over(&mut s, j, Partial { acc, got: 1 });
        }
    }

    /// The picture, once every range has been fed and its strip finished.
    pub fn finish(self) -> Result<Fitted, String> {
        let s = self.shared.into_inner().unwrap_or_else(|e| e.into_inner());
        if s.made != self.plan.nh || !s.split.is_empty() {
            return Err(format!("{} of its {} downscaled rows were made", s.made, self.plan.nh));
        }
        let uniform = s.first.filter(|f| {
            !s.samples.mixed
                && (0..3)
                    .all(|c| s.samples.lo[c] >= f[c].saturating_sub(2) && s.samples.hi[c] <= f[c].saturating_add(2))
        });
        let (nw, nh) = (self.plan.nw as u32, self.plan.nh as u32);
        let img = RgbImage::from_raw(nw, nh, s.out).expect("sized nw × nh × 3");
        Ok(Fitted { img, width: self.shape.width, height: self.shape.height, uniform })
    }
}

/// One stream's output rows in progress (borrowed apart from the row being read).
struct Sums {
    /// Output rows this stream is summing, with their taps so far (at most a few at a time).
    open: Vec<(usize, Partial)>,
    /// Accumulators of finished rows, reused.
    spare: Vec<Vec<u32>>,
}

/// The consumer of one range of a capture file: its bytes, in order, become rows of the downscale.
pub struct Strip<'f> {
    fit: &'f Fitting,
    /// File offset of the next byte.
    pos: usize,
    start: usize,
    end: usize,
    /// A source row wholly in this range, assembled across chunks.
    carry: Vec<u8>,
    scratch: Vec<u8>,
    sums: Sums,
}

impl Strip<'_> {
    /// The next bytes of the range, in order. The gzip stream that delivers them never exceeds the range.
    pub fn take(&mut self, mut bytes: &[u8]) -> Result<(), String> {
        let fit = self.fit;
        let (hl, stride) = (fit.shape.header_len, fit.shape.stride());
        if bytes.len() > self.end - self.pos {
            return Err(format!("{} bytes past its range", bytes.len() - (self.end - self.pos)));
        }
        while !bytes.is_empty() {
            let o = self.pos;
            let n = if o < hl {
                let n = (hl - o).min(bytes.len());
                if fit.header.get(o..o + n) != Some(&bytes[..n]) {
                    return Err("its header differs from the one first read".into());
                }
                n
            } else {
                let (y, col) = ((o - hl) / stride, (o - hl) % stride);
                let row_start = hl + y * stride;
                let n = (stride - col).min(bytes.len());
                if row_start < self.start || row_start + stride > self.end {
                    fit.split_part(y, col, &bytes[..n]);
                } else if col == 0 && n == stride {
                    self.sums.add(fit, y, fit.shape.row(&bytes[..n], &mut self.scratch));
                } else {
                    self.carry.extend_from_slice(&bytes[..n]);
                    if self.carry.len() == stride {
                        let carry = std::mem::take(&mut self.carry);
                        self.sums.add(fit, y, fit.shape.row(&carry, &mut self.scratch));
                        self.carry = carry;
                        self.carry.clear();
                    }
                }
                n
            };
            self.pos += n;
            bytes = &bytes[n..];
        }
        Ok(())
    }

    /// Hands the output rows this stream could not finish to the others.
    pub fn finish(self) {
        let mut s = self.fit.lock();
        for (j, p) in self.sums.open {
            self.fit.hand_over(&mut s, j, p);
        }
    }
}

impl Sums {
    /// Source row `y` (in the downscale's layout), wholly in this stream's range.
    fn add(&mut self, fit: &Fitting, y: usize, row: &[u8]) {
        if y % 4 == 0 {
            fit.sample(y, row, &mut fit.lock());
        }
        for &(j, wy) in fit.row_taps(y) {
            let at = match self.open.iter().position(|(o, _)| *o == j) {
                Some(i) => i,
                None => {
                    let mut acc = self.spare.pop().unwrap_or_else(|| vec![0; fit.plan.stride]);
                    acc.iter_mut().for_each(|a| *a = 0);
                    self.open.push((j, Partial { acc, got: 0 }));
                    self.open.len() - 1
                }
            };
            let p = &mut self.open[at].1;
            accumulate_fast(&mut p.acc, row, wy);
            p.got += 1;
            let (first, ws) = &fit.plan.ty[j];
            if y + 1 < first + ws.len() {
                continue;
            }
            // The last source row of output row `j`: finished here if every one of them came through this stream.
            let (_, p) = self.open.swap_remove(at);
            if p.got == ws.len() {
                fit.finish_row(&mut fit.lock(), j, &p.acc);
                self.spare.push(p.acc);
            } else {
                fit.hand_over(&mut fit.lock(), j, p);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pixels::downscale::fit_size;
    use crate::pixels::frame::Frame;

    /// A raw `screencap` file: header (12 or 16 bytes) and pixels.
    fn raw(w: u32, h: u32, format: u32, header16: bool, px: &[u8]) -> Vec<u8> {
        let mut d = [w, h, format].iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<u8>>();
        if header16 {
            d.extend_from_slice(&1u32.to_le_bytes());
        }
        d.extend_from_slice(px);
        d
    }

    /// A screen-like picture: flat bands between noisy runs (or one flat colour, `flat`).
    fn pixels(n: usize, seed: u64, flat: bool) -> Vec<u8> {
        let mut next = crate::pixels::tests::xorshift(seed | 1);
        (0..n)
            .map(|i| {
                if flat {
                    200
                } else if i % 5000 < 1500 {
                    next() as u8
                } else {
                    (i / 3000) as u8
                }
            })
            .collect()
    }

    /// Feeds `data` as ranges cut every `block` bytes into `streams` parts, the parts' chunks of `chunk` bytes
    /// interleaved as concurrent streams deliver them, and returns the picture.
    fn fitted(data: &[u8], max_side: u32, block: usize, streams: usize, chunk: usize) -> Result<Fitted, String> {
        let shape = Shape::of(data, data.len()).map_err(|e| e.message)?;
        let (nw, nh) = fit_size(shape.width, shape.height, max_side).expect("a downscale");
        let fit = Fitting::new(shape, &data[..16], nw, nh);
        let blocks = data.len().div_ceil(block);
        let per = blocks.div_ceil(streams).max(1) * block;
        let cuts: Vec<(usize, usize)> = (0..data.len()).step_by(per).map(|s| (s, (s + per).min(data.len()))).collect();
        let mut strips: Vec<(Strip<'_>, usize, usize)> = cuts.iter().map(|&(s, e)| (fit.strip(s, e), s, e)).collect();
        // Round robin, the last range first: the order of arrival is anyone's.
        while strips.iter().any(|(_, at, end)| at < end) {
            for (strip, at, end) in strips.iter_mut().rev() {
                let n = chunk.min(*end - *at);
                strip.take(&data[*at..*at + n])?;
                *at += n;
            }
        }
        for (strip, _, _) in strips {
            strip.finish();
        }
        fit.finish()
    }

    #[test]
    fn rows_fed_in_any_split_and_order_make_the_whole_frames_picture() {
        let mut cases = 0;
        // RGBA, BGRA, RGB_888, RGB_565; widths that do and do not divide the blocks.
        for (w, h, format, bpp) in [(97u32, 211u32, 1u32, 4usize), (64, 130, 5, 4), (33, 70, 3, 3), (50, 101, 4, 2)] {
            for header16 in [true, false] {
                for flat in [false, true] {
                    let data = raw(w, h, format, header16, &pixels(w as usize * h as usize * bpp, u64::from(w), flat));
                    let frame = Frame::from_raw(data.clone()).unwrap();
                    for max_side in [h - 1, h / 2, 17] {
                        let want = frame.fit(max_side);
                        for (block, streams, chunk) in
                            [(64 * 1024, 4, 65536), (97, 4, 1000), (1000, 3, 7), (4096, 2, 333), (100, 1, 4096)]
                        {
                            let got = fitted(&data, max_side, block, streams, chunk).unwrap();
                            let what = format!("{w}×{h} format {format} header16 {header16} → {max_side}, block {block} × {streams}, chunks of {chunk}");
                            assert!(got.img == want, "{what}: pixels");
                            assert_eq!((got.width, got.height), (w, h), "{what}");
                            assert_eq!(got.uniform, frame.uniform_colour(), "{what}: blank check");
                            cases += 1;
                        }
                    }
                }
            }
        }
        assert_eq!(cases, 4 * 2 * 2 * 3 * 5);
    }

    /// `framebuffer:` pixels (no header; whole-byte and bit-field layouts) fed in order as one range, in chunks
    /// of any size, make the picture `Frame::from_framebuffer(..).fit` makes, and the same blank-check answer.
    #[test]
    fn framebuffer_pixels_fed_in_order_make_the_whole_frames_picture() {
        use crate::device::transport::FbHeader;
        type Channel = (u32, u32);
        let layouts: [(u32, Channel, Channel, Channel); 5] = [
            (32, (0, 8), (8, 8), (16, 8)),  // RGBA_8888
            (32, (16, 8), (8, 8), (0, 8)),  // BGRA_8888
            (24, (0, 8), (8, 8), (16, 8)),  // RGB_888
            (16, (11, 5), (5, 6), (0, 5)),  // RGB_565
            (32, (2, 8), (12, 7), (23, 6)), // odd bit fields
        ];
        let mut cases = 0;
        for (bpp, red, green, blue) in layouts {
            for (w, h) in [(97u32, 211u32), (120, 64)] {
                for flat in [false, true] {
                    let size = (w * h * bpp / 8) as usize;
                    let hdr = FbHeader { bpp, size: size as u32, width: w, height: h, red, green, blue, alpha: (0, 0) };
                    let px = pixels(size, u64::from(bpp * w), flat);
                    let frame = Frame::from_framebuffer(&hdr, px.clone()).unwrap();
                    let shape = Shape::of_framebuffer(&hdr).unwrap();
                    for (max_side, chunk) in [(w.max(h) - 1, 4096), (40, 1), (17, 333)] {
                        let (nw, nh) = fit_size(w, h, max_side).unwrap();
                        let fit = Fitting::new(shape, &[], nw, nh);
                        let mut strip = fit.strip(0, size);
                        for c in px.chunks(chunk) {
                            strip.take(c).unwrap();
                        }
                        strip.finish();
                        let got = fit.finish().unwrap();
                        let what = format!("{bpp} bpp {red:?} {green:?} {blue:?} {w}×{h} flat {flat} → {max_side}");
                        assert!(got.img == frame.fit(max_side), "{what}: pixels");
                        assert_eq!(got.uniform, frame.uniform_colour(), "{what}: blank check");
                        cases += 1;
                    }
                }
            }
        }
        assert_eq!(cases, 5 * 2 * 2 * 3);
    }

    #[test]
    fn a_single_odd_sample_makes_a_frame_not_uniform() {
        let (w, h) = (40u32, 40u32);
        let mut px = vec![10u8; 40 * 40 * 4];
        // Pixel (36, 20): a sampled one (every 4th of every 4th row), 3 levels off in green.
        px[(20 * 40 + 36) * 4 + 1] = 13;
        let data = raw(w, h, 1, true, &px);
        assert_eq!(Frame::from_raw(data.clone()).unwrap().uniform_colour(), None);
        assert_eq!(fitted(&data, 10, 1000, 4, 777).unwrap().uniform, None);
        px[(20 * 40 + 36) * 4 + 1] = 12;
        let data = raw(w, h, 1, true, &px);
        assert_eq!(fitted(&data, 10, 1000, 4, 777).unwrap().uniform, Some([10, 10, 10]), "±2 is still uniform");
    }

    #[test]
    fn a_range_that_repeats_another_header_or_runs_past_its_end_is_refused() {
        let data = raw(20, 30, 1, true, &pixels(20 * 30 * 4, 3, false));
        let shape = Shape::of(&data, data.len()).unwrap();
        let fit = Fitting::new(shape, &data[..16], 10, 15);
        let mut other = data[..16].to_vec();
        other[0] = 21;
        let e = fit.strip(0, 1000).take(&other).unwrap_err();
        assert!(e.contains("header differs"), "{e}");
        let e = fit.strip(1000, 1100).take(&data[1000..1101]).unwrap_err();
        assert!(e.contains("1 bytes past its range"), "{e}");
        // Ranges that never came: no picture.
        let e = fit.finish().err().unwrap();
        assert!(e.contains("0 of its 15 downscaled rows"), "{e}");
    }
}
