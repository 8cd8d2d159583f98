//! The area downscale: the whole-frame kernels (portable and AVX2), the plan of weights the streamed fitting
//! (`fitting.rs`) shares, and the output size of a picture with a bounded long side.

use image::RgbImage;

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

pub(crate) fn area_downscale_rows<R: Rows + ?Sized>(src: &R, w: usize, h: usize, nw: u32, nh: u32) -> Vec<u8> {
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
