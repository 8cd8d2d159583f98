//! One phone, interleaved A/B: one UI dump, the connector against `adb shell uiautomator dump` + `adb pull`.

use std::time::Instant;

use serde_json::json;

use crate::common::*;

pub(crate) fn bench_ui_dump(rt: &tokio::runtime::Runtime, p: &OnePhone, n: usize, rep: &mut Report) {
    let local = p.adb.tmp("window_dump.xml");
    let local_s = local.to_string_lossy().into_owned();
    let ws_dump = || {
        rt.block_on(async {
            let t = Instant::now();
            let r = p.ws.invoke(&p.ch, "android_ui_dump", json!({})).await.expect("ui dump");
            (t.elapsed(), r["count"].as_u64().unwrap_or(0) as usize)
        })
    };
    let cli_dump = || {
        let t = Instant::now();
        assert!(p.adb.run(&["-s", &p.serial, "shell", "uiautomator", "dump"], None), "uiautomator dump failed");
        assert!(p.adb.run(&["-s", &p.serial, "pull", "/sdcard/window_dump.xml", &local_s], None), "adb pull failed");
        let xml = std::fs::read_to_string(&local).unwrap_or_default();
        let nodes = xml.matches("<node").count();
        (t.elapsed(), nodes)
    };
    for _ in 0..3 {
        ws_dump();
        cli_dump();
    }
    let (mut a, mut b) = (Vec::new(), Vec::new());
    let (mut elements, mut nodes) = (0, 0);
    for i in 0..n {
        for k in 0..2 {
            if (i + k) % 2 == 0 {
                let (t, c) = ws_dump();
                a.push(ms(t));
                elements = c;
            } else {
                let (t, c) = cli_dump();
                b.push(ms(t));
                nodes = c;
            }
        }
    }
    let (sa, sb) = (stats(&a), stats(&b));
    let (r50, r95) = ratio(&sa, &sb);
    rep.row(
        "4 UI dump: `android_ui_dump` vs `uiautomator dump` + `adb pull` + count `<node`",
        format!("{} ({elements} elements)", pp(&sa)),
        format!("{} ({nodes} nodes)", pp(&sb)),
        format!("{r50:.3} ({r95:.3})"),
        "info (≤ 1 expected)",
        None,
    );
    rep.json.insert(
        "ui_dump".into(),
        json!({"connector": sa.json(), "adb_cli": sb.json(), "connector_elements": elements, "adb_cli_nodes": nodes,
               "ratio_p50": round3(r50), "ratio_p95": round3(r95)}),
    );
}
