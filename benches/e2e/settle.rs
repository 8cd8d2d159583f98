//! Scenario settle (issue 19): a settled tap across an animated launch vs a bare tap + screenshot + download.

use std::time::{Duration, Instant};

use serde_json::json;
use xagent_adb_connector::sim::{SimConfig, SimPhone};

use crate::common::*;

/// Issue 19: what settling costs. A phone whose screen changes animate for 300 ms (the demo's setting; Android's
/// default activity transition is about as long), its own connector; each sample taps the home screen's "Demo"
/// icon (the app opens, animated) and goes HOME again (not timed, then waits out the animation). Interleaved:
/// A = settled tap (the ack says the app is in front and the screen is still), B = bare tap (`settle: false`) +
/// `android_screenshot` + download — what an agent without settle does to see the result, and whose picture is
/// then usually mid-animation (counted).
pub(crate) fn bench_settle(sim_rt: &tokio::runtime::Runtime, rt: &tokio::runtime::Runtime, n: usize, rep: &mut Report) {
    const ANIMATION_MS: u32 = 300;
    let adb = Adb::start();
    let cfg = SimConfig { animation_ms: ANIMATION_MS, ..SimConfig::default() };
    let sim = sim_rt.block_on(SimPhone::start("127.0.0.1:0".parse().unwrap(), cfg)).unwrap();
    adb.connect_all(&[sim.serial()]);
    let conn = Connector::start(adb.port, QUIET_LOG);
    let (ws, ch) = rt.block_on(async {
        let ws = Ws::connect(conn.addr, "settle").await;
        ws.hello().await;
        let ch = ws.open().await;
        ws.bind(&ch).await;
        (ws, ch)
    });
    let icon = json!({"x": 540, "y": 2064});
    let home = || {
        rt.block_on(ws.invoke(&ch, "android_key", json!({"key": "HOME", "settle": false}))).expect("home");
        std::thread::sleep(Duration::from_millis(u64::from(ANIMATION_MS) + 50));
    };
    let settled = || {
        let t = Instant::now();
        let r = rt.block_on(ws.invoke(&ch, "android_tap", icon.clone())).expect("settled tap");
        let took = t.elapsed();
        assert_eq!(r["effect"]["foreground_changed"], true, "{r}");
        (took, r["effect"]["settled"] == true)
    };
    let bare = || {
        let t = Instant::now();
        let mut args = icon.clone();
        args["settle"] = json!(false);
        rt.block_on(ws.invoke(&ch, "android_tap", args)).expect("bare tap");
        let moving = sim.animating();
        rt.block_on(screenshot(&ws, conn.addr, &ch)).expect("screenshot");
        (t.elapsed(), moving)
    };
    for _ in 0..2 {
        settled();
        home();
        bare();
        home();
    }
    let (mut a, mut b) = (Vec::new(), Vec::new());
    let (mut still, mut mid_animation) = (0, 0);
    for i in 0..n {
        for k in 0..2 {
            if (i + k) % 2 == 0 {
                let (t, ok) = settled();
                a.push(ms(t));
                still += usize::from(ok);
            } else {
                let (t, moving) = bare();
                b.push(ms(t));
                mid_animation += usize::from(moving);
            }
            home();
        }
    }
    let (sa, sb) = (stats(&a), stats(&b));
    let (r50, r95) = ratio(&sa, &sb);
    rep.row(
        "10 settle: settled tap across a 300 ms animated launch vs bare tap + screenshot + download",
        format!("{} ({still}/{n} settled)", pp(&sa)),
        format!("{} ({mid_animation}/{n} captured mid-animation)", pp(&sb)),
        format!("{r50:.3} ({r95:.3})"),
        "info",
        None,
    );
    rep.json.insert(
        "settle".into(),
        json!({"settled_tap": sa.json(), "bare_tap_screenshot_download": sb.json(), "animation_ms": ANIMATION_MS,
               "settled": still, "bare_mid_animation": mid_animation, "samples": n,
               "ratio_p50": round3(r50), "ratio_p95": round3(r95)}),
    );
    drop(conn);
    sim_rt.block_on(sim.shutdown());
}
