//! One phone: where the time of a screenshot and a tap goes, and the per-frame CPU of encoding (issue 14).

use std::time::{Duration, Instant};

use serde_json::{json, Value};
use xagent_adb_connector::device::adb::AdbBackend;
use xagent_adb_connector::device::DeviceKey;
use xagent_adb_connector::pixels::capture::{capture, CapturePath, Picture};
use xagent_adb_connector::pixels::downscale;
use xagent_adb_connector::pixels::encode::{self, render, Format};

use crate::common::*;

/// Where the time of a screenshot and a tap goes: connector-side tool time from its own "tool ok" log lines
/// (a separate connector with RUST_LOG=info), and the in-process pieces (capture, render) called directly.
pub(crate) fn bench_breakdown(
    sim_rt: &tokio::runtime::Runtime,
    rt: &tokio::runtime::Runtime,
    p: &OnePhone,
    n: usize,
    rep: &mut Report,
) {
    let conn = Connector::start(p.adb.port, "warn,xagent_adb_connector=info");
    // Take the phone over from the measuring connector for this pass: a second connector, its own binding.
    let (ws, ch) = rt.block_on(async {
        let ws = Ws::connect(conn.addr, "prof").await;
        ws.hello().await;
        let ch = ws.open().await;
        ws.bind(&ch).await;
        (ws, ch)
    });
    let (mut shot_total, mut shot_ack, mut shot_dl) = (Vec::new(), Vec::new(), Vec::new());
    let mut tap_total = Vec::new();
    rt.block_on(async {
        for _ in 0..3 {
            screenshot(&ws, conn.addr, &ch).await.unwrap();
            ws.invoke(&ch, "android_tap", json!({"settle": false, "x": 100, "y": 300})).await.unwrap();
        }
    });
    let skip = conn.logs.lock().unwrap().len();
    for _ in 0..n {
        let (t, a, d, _) = rt.block_on(screenshot(&ws, conn.addr, &ch)).unwrap();
        shot_total.push(ms(t));
        shot_ack.push(ms(a));
        shot_dl.push(ms(d));
        let t = Instant::now();
        rt.block_on(ws.invoke(&ch, "android_tap", json!({"settle": false, "x": 100, "y": 300}))).unwrap();
        tap_total.push(ms(t.elapsed()));
    }
    std::thread::sleep(Duration::from_millis(100));
    let (mut tool_shot, mut tool_tap) = (Vec::new(), Vec::new());
    for line in conn.logs.lock().unwrap()[skip..].iter() {
        let Ok(v) = serde_json::from_str::<Value>(line) else { continue };
        if v["message"] != "tool ok" {
            continue;
        }
        let tool = v["span"]["tool"].as_str().unwrap_or("");
        let t = v["ms"].as_f64().unwrap_or(f64::NAN);
        match tool {
            "android_screenshot" => tool_shot.push(t),
            "android_tap" => tool_tap.push(t),
            _ => {}
        }
    }
    drop(ws);
    drop(conn);

    // In-process pieces of the screenshot: capture (framebuffer over adb) and render (resize + JPEG q80).
    let backend = AdbBackend::new(vec![p.adb.addr()]);
    let key = DeviceKey { server: p.adb.addr().to_string(), serial: p.serial.clone() };
    let (mut cap, mut cap_raw, mut resize_jpeg) = (Vec::new(), Vec::new(), Vec::new());
    let mut frame = None;
    for _ in 0..n.min(15) {
        let t = Instant::now();
        let c = sim_rt.block_on(capture(&backend, &key, CapturePath::Framebuffer, 0, Duration::from_secs(30))).unwrap();
        cap.push(ms(t.elapsed()));
        let t = Instant::now();
        let _ = sim_rt.block_on(capture(&backend, &key, CapturePath::Raw, 0, Duration::from_secs(30))).unwrap();
        cap_raw.push(ms(t.elapsed()));
        let Picture::Whole(f) = c.picture else { panic!("a framebuffer capture keeps the whole frame") };
        frame = Some(f);
    }
    let frame = frame.unwrap();
    for _ in 0..n.min(15) {
        let t = Instant::now();
        let _ = render(&frame, 1280, Format::Jpeg { quality: 80 }).unwrap();
        resize_jpeg.push(ms(t.elapsed()));
    }
    // The pieces of render(), and a candidate replacement (area-average downscale on the RGBA frame, then RGB).
    let rgba = {
        let c = sim_rt.block_on(capture(&backend, &key, CapturePath::Framebuffer, 0, Duration::from_secs(30))).unwrap();
        let rgb = c.picture.fit(0);
        image::RgbaImage::from_fn(rgb.width(), rgb.height(), |x, y| {
            let p = rgb.get_pixel(x, y).0;
            image::Rgba([p[0], p[1], p[2], 255])
        })
    };
    let (nw, nh) = (576, 1280);
    let (mut to_rgb, mut tri, mut thumb, mut jpeg, mut candidate) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let (mut tri_img, mut thumb_img) = (None, None);
    for _ in 0..n.min(15) {
        let t = Instant::now();
        let rgb = image::DynamicImage::ImageRgba8(rgba.clone()).into_rgb8();
        to_rgb.push(ms(t.elapsed()));
        let t = Instant::now();
        let small = image::imageops::resize(&rgb, nw, nh, image::imageops::FilterType::Triangle);
        tri.push(ms(t.elapsed()));
        let t = Instant::now();
        let th = image::imageops::thumbnail(&rgb, nw, nh);
        thumb.push(ms(t.elapsed()));
        let t = Instant::now();
        let mut out = Vec::new();
        image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, 80).encode_image(&small).unwrap();
        jpeg.push(ms(t.elapsed()));
        let t = Instant::now();
        let small_rgba = image::imageops::thumbnail(&rgba, nw, nh);
        let small_rgb = image::DynamicImage::ImageRgba8(small_rgba).into_rgb8();
        let mut out2 = Vec::new();
        image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out2, 80).encode_image(&small_rgb).unwrap();
        candidate.push(ms(t.elapsed()));
        tri_img = Some(small);
        thumb_img = Some(th);
    }
    // A hand-written fixed-point area average fused with RGBA → RGB: the floor for the downscale step.
    let (mut fused, mut fused_jpeg) = (Vec::new(), Vec::new());
    let mut fused_img = None;
    for _ in 0..n.min(15) {
        let t = Instant::now();
        let small = area_downscale_rgba_to_rgb(
            rgba.as_raw(),
            rgba.width() as usize,
            rgba.height() as usize,
            nw as usize,
            nh as usize,
        );
        fused.push(ms(t.elapsed()));
        let img = image::RgbImage::from_raw(nw, nh, small).unwrap();
        let mut out = Vec::new();
        image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, 80).encode_image(&img).unwrap();
        fused_jpeg.push(ms(t.elapsed()));
        fused_img = Some(img);
    }
    let psnr_of = |a: &image::RgbImage, b: &image::RgbImage| {
        let mse: f64 =
            a.as_raw().iter().zip(b.as_raw()).map(|(x, y)| (f64::from(*x) - f64::from(*y)).powi(2)).sum::<f64>()
                / a.as_raw().len() as f64;
        if mse == 0.0 {
            json!("identical")
        } else {
            json!(round3(10.0 * (255.0f64 * 255.0 / mse).log10()))
        }
    };
    let psnr_fused = psnr_of(tri_img.as_ref().unwrap(), fused_img.as_ref().unwrap());
    let psnr = {
        let (a, b) = (tri_img.unwrap(), thumb_img.unwrap());
        let mse: f64 =
            a.as_raw().iter().zip(b.as_raw()).map(|(x, y)| (f64::from(*x) - f64::from(*y)).powi(2)).sum::<f64>()
                / a.as_raw().len() as f64;
        if mse == 0.0 {
            f64::INFINITY
        } else {
            10.0 * (255.0f64 * 255.0 / mse).log10()
        }
    };
    let frame_cpu = frame_cpu(&rgba, n.clamp(5, 15), rep);
    let js = |v: &[f64]| stats(v).json();
    let b = json!({
        "frame_cpu": frame_cpu,
        "render_rgba_to_rgb_full_frame": js(&to_rgb), "render_resize_triangle_rgb": js(&tri),
        "render_thumbnail_rgb": js(&thumb), "render_jpeg_encode_576x1280_q80": js(&jpeg),
        "candidate_thumbnail_rgba_then_rgb_then_jpeg": js(&candidate),
        "candidate_fused_area_downscale": js(&fused), "candidate_fused_area_downscale_then_jpeg": js(&fused_jpeg),
        "psnr_db_triangle_vs_fused_area": psnr_fused,
        "psnr_db_triangle_vs_thumbnail": if psnr.is_finite() { json!(round3(psnr)) } else { json!("identical") },
        "screenshot_client_total": js(&shot_total), "screenshot_client_tool_ack": js(&shot_ack),
        "screenshot_client_download": js(&shot_dl), "screenshot_connector_tool_ms": js(&tool_shot),
        "capture_framebuffer_in_process": js(&cap), "capture_raw_exec_in_process": js(&cap_raw),
        "render_resize_jpeg_in_process": js(&resize_jpeg),
        "tap_client_total": js(&tap_total), "tap_connector_tool_ms": js(&tool_tap),
        "note": "connector tool ms comes from its own `tool ok` log line (integer ms, RUST_LOG=info pass)",
    });
    println!("breakdown: {}", serde_json::to_string_pretty(&b).unwrap());
    rep.json.insert("breakdown".into(), b);
}

// ---------------------------------------------------------------------------------------------------------------
// Per-frame CPU (issue 14): one captured 1080×2400 frame to the 576×1280 JPEG q80 an agent downloads, today's
// pipeline (until issue 14: `image` JPEG encoder, horizontal-first downscale) against the current one, in the same
// run, on the same frame; output quality as PSNR of the decoded JPEGs.

/// Area-average downscale of an RGBA8 frame to RGB8 (`nw`×`nh`), separable, fixed point (weights in 1/4096).
fn area_downscale_rgba_to_rgb(src: &[u8], w: usize, h: usize, nw: usize, nh: usize) -> Vec<u8> {
    fn taps(n_in: usize, n_out: usize) -> Vec<(usize, Vec<u32>)> {
        let scale = n_in as f64 / n_out as f64;
        (0..n_out)
            .map(|o| {
                let (a, b) = (o as f64 * scale, (o + 1) as f64 * scale);
                let (first, last) = (a.floor() as usize, (b.ceil() as usize).min(n_in));
                let ws: Vec<f64> = (first..last).map(|i| ((i + 1) as f64).min(b) - (i as f64).max(a)).collect();
                let sum: f64 = ws.iter().sum();
                (first, ws.iter().map(|x| (x / sum * 4096.0).round() as u32).collect())
            })
            .collect()
    }
    let (tx, ty) = (taps(w, nw), taps(h, nh));
    // Horizontal: every source row to nw RGB values, kept at 8 extra bits of precision.
    let mut tmp = vec![0u32; nw * 3 * h];
    for y in 0..h {
        let row = &src[y * w * 4..(y + 1) * w * 4];
        let dst = &mut tmp[y * nw * 3..(y + 1) * nw * 3];
        for (ox, (first, ws)) in tx.iter().enumerate() {
            let mut acc = [0u32; 3];
            for (k, wt) in ws.iter().enumerate() {
                let p = &row[(first + k) * 4..(first + k) * 4 + 3];
                acc[0] += u32::from(p[0]) * wt;
                acc[1] += u32::from(p[1]) * wt;
                acc[2] += u32::from(p[2]) * wt;
            }
            dst[ox * 3..ox * 3 + 3].copy_from_slice(&[acc[0] >> 4, acc[1] >> 4, acc[2] >> 4]);
        }
    }
    // Vertical.
    let mut out = vec![0u8; nw * nh * 3];
    for (oy, (first, ws)) in ty.iter().enumerate() {
        let dst = &mut out[oy * nw * 3..(oy + 1) * nw * 3];
        let mut acc = vec![0u32; nw * 3];
        for (k, wt) in ws.iter().enumerate() {
            let row = &tmp[(first + k) * nw * 3..(first + k + 1) * nw * 3];
            for (a, v) in acc.iter_mut().zip(row) {
                *a += v * wt;
            }
        }
        for (d, a) in dst.iter_mut().zip(&acc) {
            *d = ((a + (1 << 19)) >> 20).min(255) as u8;
        }
    }
    out
}

/// The downscale as it was before issue 14 (kept here as the baseline the current code is measured against).
fn baseline_area_downscale(src: &image::RgbImage, nw: u32, nh: u32) -> image::RgbImage {
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
    image::RgbImage::from_raw(nw_u as u32, nh_u as u32, out).expect("buffer sized for nw × nh × 3")
}

/// Today's (pre-issue-14) render: RGBA → RGB, horizontal-first area downscale, `image`'s JPEG encoder.
fn baseline_frame(rgba: &image::RgbaImage) -> (Vec<u8>, [f64; 3]) {
    let t = Instant::now();
    let rgb = image::DynamicImage::ImageRgba8(rgba.clone()).into_rgb8();
    let t_rgb = ms(t.elapsed());
    let t = Instant::now();
    let small = baseline_area_downscale(&rgb, 576, 1280);
    let t_ds = ms(t.elapsed());
    let t = Instant::now();
    let mut out = Vec::new();
    image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, 80).encode_image(&small).unwrap();
    (out, [t_rgb, t_ds, ms(t.elapsed())])
}

/// The current render path as `android_screenshot` runs it: RGBA → RGB (in `capture`), `downscale::fit`,
/// `encode::encode`.
fn current_frame(rgba: &image::RgbaImage) -> (Vec<u8>, [f64; 3]) {
    let t = Instant::now();
    let rgb = image::DynamicImage::ImageRgba8(rgba.clone()).into_rgb8();
    let t_rgb = ms(t.elapsed());
    let t = Instant::now();
    let small = downscale::fit(rgb, 1280);
    let t_ds = ms(t.elapsed());
    let t = Instant::now();
    let (out, _, _) = encode::encode(&small, Format::Jpeg { quality: 80 }).unwrap();
    (out, [t_rgb, t_ds, ms(t.elapsed())])
}

/// The conversion fused into the downscale (`area_downscale_raw` on the RGBA frame, 4 bytes per pixel): what a
/// capture that hands over RGBA would cost.
fn fused_frame(rgba: &image::RgbaImage) -> (Vec<u8>, [f64; 3]) {
    let t = Instant::now();
    let small =
        downscale::area_downscale_raw(rgba.as_raw(), rgba.width() as usize, rgba.height() as usize, 4, 576, 1280);
    let t_ds = ms(t.elapsed());
    let t = Instant::now();
    let img = image::RgbImage::from_raw(576, 1280, small).unwrap();
    let (out, _, _) = encode::encode(&img, Format::Jpeg { quality: 80 }).unwrap();
    (out, [0.0, t_ds, ms(t.elapsed())])
}

fn psnr_jpeg(a: &[u8], b: &[u8]) -> f64 {
    let (a, b) = (image::load_from_memory(a).unwrap().into_rgb8(), image::load_from_memory(b).unwrap().into_rgb8());
    let mse: f64 = a.as_raw().iter().zip(b.as_raw()).map(|(x, y)| (f64::from(*x) - f64::from(*y)).powi(2)).sum::<f64>()
        / a.as_raw().len() as f64;
    if mse == 0.0 {
        f64::INFINITY
    } else {
        10.0 * (255.0f64 * 255.0 / mse).log10()
    }
}

fn frame_cpu(rgba: &image::RgbaImage, n: usize, rep: &mut Report) -> Value {
    type Pipeline = fn(&image::RgbaImage) -> (Vec<u8>, [f64; 3]);
    let pipes: [(&str, Pipeline); 3] =
        [("today", baseline_frame), ("current", current_frame), ("current_fused_rgba", fused_frame)];
    let mut samples: Vec<[Vec<f64>; 4]> = (0..3).map(|_| Default::default()).collect();
    let mut outputs: Vec<Vec<u8>> = vec![Vec::new(); 3];
    for _ in 0..2 {
        for (_, f) in &pipes {
            f(rgba); // warm-up
        }
    }
    // Interleaved, so drift of the shared machine hits every pipeline alike.
    for _ in 0..n {
        for (k, (_, f)) in pipes.iter().enumerate() {
            let (out, t) = f(rgba);
            for (i, v) in t.iter().enumerate() {
                samples[k][i].push(*v);
            }
            samples[k][3].push(t.iter().sum());
            outputs[k] = out;
        }
    }
    let mut v = serde_json::Map::new();
    for (k, (name, _)) in pipes.iter().enumerate() {
        v.insert(
            (*name).into(),
            json!({"rgba_to_rgb": stats(&samples[k][0]).json(), "downscale": stats(&samples[k][1]).json(),
                   "jpeg": stats(&samples[k][2]).json(), "total": stats(&samples[k][3]).json(),
                   "jpeg_bytes": outputs[k].len()}),
        );
    }
    let (today, cur, fused) = (stats(&samples[0][3]), stats(&samples[1][3]), stats(&samples[2][3]));
    let psnr = psnr_jpeg(&outputs[0], &outputs[1]);
    let psnr_fused = psnr_jpeg(&outputs[0], &outputs[2]);
    v.insert("psnr_db_current_vs_today".into(), json!(round3(psnr)));
    v.insert("psnr_db_fused_vs_today".into(), json!(round3(psnr_fused)));
    let (r50, r95) = ratio(&cur, &today);
    let met = cur.p50 <= 20.0 && psnr >= 40.0;
    rep.row(
        "7 per-frame CPU: 1080×2400 frame → 576×1280 JPEG q80 (RGB + downscale + JPEG), current vs pre-issue-14",
        format!("{} ({} B, PSNR {:.1} dB vs today)", pp(&cur), outputs[1].len(), psnr),
        format!("{} ({} B)", pp(&today), outputs[0].len()),
        format!("{r50:.3} ({r95:.3})"),
        "≤ 20 ms, PSNR ≥ 40 dB",
        Some(met),
    );
    v.insert("fused_total_p50".into(), json!(round3(fused.p50)));
    v.insert("ratio_p50".into(), json!(round3(r50)));
    v.insert("met".into(), json!(met));
    Value::Object(v)
}
