//! Scenario screenshot-usb (issue 24): screenshots from a phone that pays a phone's costs: the parallel compressed
//! capture vs the single compressed stream vs raw vs `adb exec-out screencap -p`.

use std::net::SocketAddr;
use std::process::{Command, Stdio};
use std::time::Instant;

use serde_json::json;
use xagent_adb_connector::sim::{SimConfig, SimPhone};

use crate::common::*;

/// Issue 24: screenshots over USB. One simulated phone paying a phone's costs (`PhoneCosts::usb2`: 100 ms display
/// read, 150 ms/MP PNG, a 35 MB/s link, gzip -1 at 60 MB/s per core on 4 fast cores); the connector as built
/// (parallel compressed capture), the same binary with `--capture-streams 1` (one `screencap | gzip -1` stream),
/// with `--capture-compression off` (the framebuffer path before issue 24) and `adb exec-out screencap -p`,
/// interleaved in one run. Per frame: time to the downloaded JPEG, bytes over the link (counted by
/// the phone) and the connector's CPU.
pub(crate) fn bench_screenshot_usb(
    sim_rt: &tokio::runtime::Runtime,
    rt: &tokio::runtime::Runtime,
    n: usize,
    rep: &mut Report,
) {
    use xagent_adb_connector::sim::PhoneCosts;
    let adb = Adb::start();
    // BENCH_USB_GZIP_MBPS: the phone's gzip -1 throughput (default 60 MB/s; see BENCHMARKS.md for the sensitivity).
    let gzip_mbps = env_usize("BENCH_USB_GZIP_MBPS", 60) as u64;
    let costs = PhoneCosts { gzip_bytes_per_s: gzip_mbps * 1_000_000, ..PhoneCosts::usb2() };
    let cfg = SimConfig { costs, ..SimConfig::default() };
    let sim = sim_rt.block_on(SimPhone::start("127.0.0.1:0".parse().unwrap(), cfg)).unwrap();
    let serial = sim.serial();
    adb.connect_all(std::slice::from_ref(&serial));
    let after = Connector::start(adb.port, QUIET_LOG);
    let before = Connector::start_with(adb.port, QUIET_LOG, &["--capture-compression", "off"]);
    let single = Connector::start_with(adb.port, QUIET_LOG, &["--capture-streams", "1"]);
    let bind = |c: &Connector, tag: &str| {
        rt.block_on(async {
            let ws = Ws::connect(c.addr, tag).await;
            ws.hello().await;
            let ch = ws.open().await;
            ws.bind(&ch).await;
            (ws, ch)
        })
    };
    let (ws_a, ch_a) = bind(&after, "usb-after");
    let (ws_b, ch_b) = bind(&before, "usb-before");
    let (ws_s, ch_s) = bind(&single, "usb-single");
    let out = adb.tmp("screen-usb.png");
    let cli_args = ["-s", serial.as_str(), "exec-out", "screencap", "-p"];
    // (time, bytes over the link, image bytes)
    let shot = |ws: &Ws, addr: SocketAddr, ch: &str| {
        let sent = sim.bytes_sent();
        let (t, _, _, bytes) = rt.block_on(screenshot(ws, addr, ch)).expect("screenshot");
        (t, sim.bytes_sent() - sent, bytes)
    };
    let cli = || {
        let sent = sim.bytes_sent();
        let t = Instant::now();
        assert!(adb.run(&cli_args, Some(&out)), "adb exec-out screencap -p failed");
        (t.elapsed(), sim.bytes_sent() - sent, std::fs::metadata(&out).map(|m| m.len()).unwrap_or(0) as usize)
    };
    for _ in 0..2 {
        shot(&ws_a, after.addr, &ch_a);
        shot(&ws_b, before.addr, &ch_b);
        shot(&ws_s, single.addr, &ch_s);
        cli();
    }
    let (mut ta, mut tb, mut tc, mut ts) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let (mut la, mut lb, mut lc, mut ls) = (0u64, 0u64, 0u64, 0u64);
    let (mut cpu_a, mut cpu_b, mut cpu_s) = (0.0, 0.0, 0.0);
    let (mut jpeg, mut png) = (0, 0);
    for i in 0..n {
        for k in 0..4 {
            match (i + k) % 4 {
                0 => {
                    let c0 = proc_cpu_ms(after.pid());
                    let (t, l, b) = shot(&ws_a, after.addr, &ch_a);
                    cpu_a += proc_cpu_ms(after.pid()) - c0;
                    ta.push(ms(t));
                    la += l;
                    jpeg = b;
                }
                1 => {
                    let c0 = proc_cpu_ms(before.pid());
                    let (t, l, _) = shot(&ws_b, before.addr, &ch_b);
                    cpu_b += proc_cpu_ms(before.pid()) - c0;
                    tb.push(ms(t));
                    lb += l;
                }
                2 => {
                    let c0 = proc_cpu_ms(single.pid());
                    let (t, l, _) = shot(&ws_s, single.addr, &ch_s);
                    cpu_s += proc_cpu_ms(single.pid()) - c0;
                    ts.push(ms(t));
                    ls += l;
                }
                _ => {
                    let (t, l, b) = cli();
                    tc.push(ms(t));
                    lc += l;
                    png = b;
                }
            }
        }
    }
    // This machine's GNU `gzip -1` on the same raw frame: the yardstick for the phone's figure.
    let raw = adb.tmp("screen-usb.raw");
    assert!(adb.run(&["-s", serial.as_str(), "exec-out", "screencap"], Some(&raw)), "adb exec-out screencap failed");
    let raw_len = std::fs::metadata(&raw).map(|m| m.len()).unwrap_or(0);
    let mut gz = Vec::new();
    for _ in 0..5 {
        let t = Instant::now();
        let ok = Command::new("gzip").args(["-1", "-c"]).arg(&raw).stdout(Stdio::null()).status();
        if ok.is_ok_and(|s| s.success()) {
            gz.push(raw_len as f64 / 1e6 / t.elapsed().as_secs_f64());
        }
    }
    let host_gzip = stats(&gz).p50;
    let nn = n.max(1) as f64;
    let (sa, sb, sc, ss) = (stats(&ta), stats(&tb), stats(&tc), stats(&ts));
    let (r50, r95) = ratio(&sa, &sc);
    let (rb50, _) = ratio(&sb, &sc);
    let (rs50, rs95) = ratio(&ss, &sc);
    let (cpu_a, cpu_b, cpu_s) = (cpu_a / nn, cpu_b / nn, cpu_s / nn);
    let per = |l: u64| (l as f64 / nn).round() as u64;
    rep.row(
        "3u screenshot over USB (phone costs on): `android_screenshot` + download vs `adb exec-out screencap -p`",
        format!("{} ({} B over the link, {cpu_a:.1} ms connector CPU per frame)", pp(&sa), per(la)),
        format!("{} ({} B over the link)", pp(&sc), per(lc)),
        format!(
            "{r50:.3} ({r95:.3}); one stream: {rs50:.3} ({rs95:.3}), {} ({} B, {cpu_s:.1} ms CPU); before: {rb50:.3}; \
             phone gzip {gzip_mbps} MB/s × {} cores",
            pp(&ss),
            per(ls),
            costs.cores
        ),
        "≤ 0.5, CPU ≤ 15 ms",
        Some(r50 <= 0.5 && cpu_a <= 15.0),
    );
    rep.json.insert(
        "screenshot_usb".into(),
        json!({"phone_costs": {"display_read_ms": 100, "png_ms_per_megapixel": 150, "link_bytes_per_s": 35_000_000,
                               "gzip_bytes_per_s": gzip_mbps * 1_000_000, "cores": costs.cores},
               "host_gnu_gzip_1_mb_per_s_same_frame": round3(host_gzip),
               "connector": sa.json(), "connector_link_bytes_per_frame": per(la), "connector_cpu_ms_per_frame": round3(cpu_a),
               "connector_single_stream": ss.json(), "connector_single_stream_link_bytes_per_frame": per(ls),
               "connector_single_stream_cpu_ms_per_frame": round3(cpu_s), "ratio_single_stream_p50": round3(rs50),
               "connector_uncompressed": sb.json(), "connector_uncompressed_link_bytes_per_frame": per(lb),
               "connector_uncompressed_cpu_ms_per_frame": round3(cpu_b),
               "adb_cli": sc.json(), "adb_cli_link_bytes_per_frame": per(lc),
               "connector_image_bytes": jpeg, "adb_cli_image_bytes": png,
               "ratio_p50": round3(r50), "ratio_p95": round3(r95), "ratio_uncompressed_p50": round3(rb50),
               "target_ratio": 0.5, "target_cpu_ms": 15.0, "met": r50 <= 0.5 && cpu_a <= 15.0}),
    );
    for (name, c) in [("compressed", &after), ("uncompressed", &before), ("single stream", &single)] {
        let w = c.warnings();
        if !w.is_empty() {
            println!("connector ({name}) warnings: {w:#?}");
        }
    }
    drop((ws_a, ws_b, ws_s));
    sim_rt.block_on(sim.shutdown());
}
