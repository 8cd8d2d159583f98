//! Scenario 9 (issue 18): what screen-state and rotation awareness cost per action.

use std::time::Instant;

use serde_json::json;
use xagent_adb_connector::sim::SimPhone;

use crate::common::*;

/// Issue 18: what screen-state and rotation awareness cost per action. Same phone, same adb server, interleaved:
/// the connector as shipped (input tools read the screen state first: one round trip, cached ≤ 1 s, forgotten by
/// each side effect) vs a second connector whose policy turns `screen_checks` off; each taps at a point valid in
/// both orientations (no rotation query) and at one valid only in portrait (the rotation is asked). The phone's
/// own command log counts the state queries per tap.
pub(crate) fn bench_states(rt: &tokio::runtime::Runtime, p: &OnePhone, sim: &SimPhone, n: usize, rep: &mut Report) {
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("policy.json");
    std::fs::write(&policy, r#"{"screen_checks": false}"#).unwrap();
    let off = Connector::start_with(p.adb.port, QUIET_LOG, &["--policy", policy.to_str().unwrap()]);
    let (ws_off, ch_off) = rt.block_on(async {
        let ws = Ws::connect(off.addr, "states-off").await;
        ws.hello().await;
        let ch = ws.open().await;
        ws.bind(&ch).await;
        (ws, ch)
    });
    let tap = |ws: &Ws, ch: &str, y: i64| {
        rt.block_on(async {
            let t = Instant::now();
            ws.invoke(ch, "android_tap", json!({"settle": false, "x": 100, "y": y})).await.expect("tap");
            t.elapsed()
        })
    };
    let queries = || sim.commands().iter().filter(|c| c.starts_with("dumpsys power")).count();
    for _ in 0..10 {
        tap(&p.ws, &p.ch, 300);
        tap(&ws_off, &ch_off, 300);
    }
    // (checks on, y=300), (off, 300), (on, 1500), (off, 1500)
    let mut v: [Vec<f64>; 4] = Default::default();
    let mut q_on = 0;
    for i in 0..n {
        for k in 0..4 {
            let side = (i + k) % 4;
            let y = if side < 2 { 300 } else { 1500 };
            if side % 2 == 0 {
                let q0 = queries();
                v[side].push(ms(tap(&p.ws, &p.ch, y)));
                q_on += queries() - q0;
            } else {
                v[side].push(ms(tap(&ws_off, &ch_off, y)));
            }
        }
    }
    let s: Vec<Stats> = v.iter().map(|x| stats(x)).collect();
    let per_tap = q_on as f64 / (2 * n) as f64;
    let extra50 = s[0].p50 - s[1].p50;
    rep.row(
        "9 screen-state awareness: tap with the state query vs `screen_checks: false`",
        pp(&s[0]),
        pp(&s[1]),
        format!("{:.3} ({:.3})", s[0].p50 / s[1].p50, s[0].p95 / s[1].p95),
        "≤ 1 extra round trip",
        Some(per_tap <= 1.0),
    );
    rep.row(
        "9b rotation awareness: tap at (100, 1500) (rotation asked) vs (100, 300), checks on / off",
        format!("on {} / off {}", pp(&s[2]), pp(&s[3])),
        format!("on {} / off {}", pp(&s[0]), pp(&s[1])),
        format!("{:.3} ({:.3})", s[2].p50 / s[0].p50, s[2].p95 / s[0].p95),
        "info",
        None,
    );
    rep.json.insert(
        "states".into(),
        json!({"tap_checks_on": s[0].json(), "tap_checks_off": s[1].json(),
               "tap_rotation_checks_on": s[2].json(), "tap_rotation_checks_off": s[3].json(),
               "state_queries_per_tap": round3(per_tap), "extra_ms_p50": round3(extra50),
               "extra_ms_p95": round3(s[0].p95 - s[1].p95), "target_extra_round_trips": 1, "met": per_tap <= 1.0}),
    );
}
