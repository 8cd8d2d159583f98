//! Scenario 8: observe (issue 14): one `android_observe` against one `android_screenshot`, and one agent step.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::common::*;

pub(crate) async fn observe_and_download(ws: &Ws, addr: SocketAddr, ch: &str) -> Result<(Duration, Value), String> {
    let t = Instant::now();
    let r = ws.invoke(ch, "android_observe", json!({})).await?;
    let url = r["files"][0]["download_url"].as_str().ok_or("no download_url")?.to_owned();
    let (status, _, _) = http_get(addr, &url).await?;
    if status != 200 {
        return Err(format!("download answered {status}"));
    }
    Ok((t.elapsed(), r))
}

pub(crate) fn bench_observe(rt: &tokio::runtime::Runtime, p: &OnePhone, n: usize, rep: &mut Report) {
    let (ws, addr, ch) = (&p.ws, p.conn.addr, p.ch.as_str());
    let index_of = |v: &Value, text: &str| {
        v["elements"].as_array().and_then(|a| a.iter().find(|e| e["text"] == text)).map(|e| e["index"].clone())
    };
    let step_observe = || {
        rt.block_on(async {
            let t = Instant::now();
            let (_, obs) = observe_and_download(ws, addr, ch).await.expect("observe");
            let index = index_of(&obs, "Increment").expect("the button is listed");
            let el = json!({"index": index, "observation_id": obs["observation_id"]});
            ws.invoke(ch, "android_tap", json!({"settle": false, "element": el})).await.expect("tap by index");
            t.elapsed()
        })
    };
    let step_classic = || {
        rt.block_on(async {
            let t = Instant::now();
            screenshot(ws, addr, ch).await.expect("screenshot");
            let ui = ws.invoke(ch, "android_ui_dump", json!({})).await.expect("ui dump");
            let e = ui["elements"].as_array().unwrap().iter().find(|e| e["text"] == "Increment").unwrap().clone();
            ws.invoke(ch, "android_tap", json!({"settle": false, "x": e["center"][0], "y": e["center"][1]}))
                .await
                .expect("tap");
            t.elapsed()
        })
    };
    for _ in 0..3 {
        rt.block_on(observe_and_download(ws, addr, ch)).unwrap();
        rt.block_on(screenshot(ws, addr, ch)).unwrap();
    }
    let (mut obs, mut shot, mut a, mut b) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for i in 0..n {
        for k in 0..2 {
            if (i + k) % 2 == 0 {
                obs.push(ms(rt.block_on(observe_and_download(ws, addr, ch)).unwrap().0));
                a.push(ms(step_observe()));
            } else {
                shot.push(ms(rt.block_on(screenshot(ws, addr, ch)).unwrap().0));
                b.push(ms(step_classic()));
            }
        }
    }
    let (so, ss) = (stats(&obs), stats(&shot));
    let (r50, r95) = ratio(&so, &ss);
    rep.row(
        "8a observe: `android_observe` + download vs `android_screenshot` + download",
        pp(&so),
        pp(&ss),
        format!("{r50:.3} ({r95:.3})"),
        "≤ 1.2",
        Some(r50 <= 1.2),
    );
    let (sa, sb) = (stats(&a), stats(&b));
    let (s50, s95) = ratio(&sa, &sb);
    rep.row(
        "8b agent step: observe + tap by index vs screenshot + ui_dump + tap (x, y)",
        pp(&sa),
        pp(&sb),
        format!("{s50:.3} ({s95:.3})"),
        "info",
        None,
    );
    rep.json.insert(
        "observe".into(),
        json!({"observe": so.json(), "screenshot": ss.json(), "ratio_p50": round3(r50), "ratio_p95": round3(r95),
               "target_ratio": 1.2, "met": r50 <= 1.2,
               "step_observe_tap_by_index": sa.json(), "step_screenshot_dump_tap": sb.json(),
               "step_ratio_p50": round3(s50), "step_ratio_p95": round3(s95)}),
    );
}
