//! One phone, interleaved A/B: one screenshot, the connector against `adb exec-out screencap -p`.

use std::time::Instant;

use serde_json::json;

use crate::common::*;

pub(crate) fn bench_screenshot(rt: &tokio::runtime::Runtime, p: &OnePhone, n: usize, rep: &mut Report) {
    let out = p.adb.tmp("screen.png");
    let cli_args = ["-s", p.serial.as_str(), "exec-out", "screencap", "-p"];
    let ws_shot = || rt.block_on(screenshot(&p.ws, p.conn.addr, &p.ch)).expect("screenshot");
    let cli_shot = || {
        let t = Instant::now();
        assert!(p.adb.run(&cli_args, Some(&out)), "adb exec-out screencap -p failed");
        (t.elapsed(), std::fs::metadata(&out).map(|m| m.len() as usize).unwrap_or(0))
    };
    for _ in 0..3 {
        ws_shot();
        cli_shot();
    }
    let (mut a, mut b, mut ack, mut dl) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let (mut jpeg, mut png) = (0, 0);
    for i in 0..n {
        for k in 0..2 {
            if (i + k) % 2 == 0 {
                let (t, t_ack, t_dl, bytes) = ws_shot();
                a.push(ms(t));
                ack.push(ms(t_ack));
                dl.push(ms(t_dl));
                jpeg = bytes;
            } else {
                let (t, bytes) = cli_shot();
                b.push(ms(t));
                png = bytes;
            }
        }
    }
    let (sa, sb) = (stats(&a), stats(&b));
    let (r50, r95) = ratio(&sa, &sb);
    rep.row(
        "3 screenshot: `android_screenshot` + download vs `adb exec-out screencap -p > f`",
        format!("{} ({} B JPEG 576×1280)", pp(&sa), jpeg),
        format!("{} ({} B PNG 1080×2400)", pp(&sb), png),
        format!("{r50:.3} ({r95:.3})"),
        "≤ 1.0",
        Some(r50 <= 1.0),
    );
    rep.json.insert(
        "screenshot".into(),
        json!({"connector": sa.json(), "connector_tool_ack": stats(&ack).json(), "connector_download": stats(&dl).json(),
               "adb_cli": sb.json(), "connector_image_bytes": jpeg, "adb_cli_image_bytes": png,
               "ratio_p50": round3(r50), "ratio_p95": round3(r95), "target_ratio": 1.0, "met": r50 <= 1.0}),
    );
}
