//! Scenario agent-step (issue 31): what one agent step costs on a phone that charges a real phone's time, against
//! the plain adb command line an agent framework would use, per Android generation.
//!
//! The phone pays [`PhoneCosts::phone`]: a USB round trip per stream, `input` a VM start on Android ≤ 11 and a
//! binder call on 12+, `uiautomator dump` its VM, its connection and a second of idle wait, `dumpsys` tens of ms
//! per service, the capture path of issue 24. Two profiles, the same figures: an Android 14 phone (sdk 34) and an
//! Android 11 phone (sdk 30). Sides, interleaved sample by sample so drift hits all alike: this build, optionally
//! another build (`BENCH_BEFORE_BIN`, e.g. the commit before a change: "before" and "after" of one run), and the
//! adb CLI. Besides time, each sample counts the streams the phone saw open (its round trips). "after" uses the
//! resident phone helper (issue 32; its start is paid in the warm-up), "helper off" is the same build on the shell
//! path.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use serde_json::{json, Value};
use xagent_adb_connector::sim::{PhoneCosts, SimConfig, SimPhone};

use crate::common::*;
use crate::observe::observe_and_download;

/// An empty spot on the simulated home screen: a tap there changes nothing.
const EMPTY: (i64, i64) = (100, 300);

struct Profile {
    label: &'static str,
    key: &'static str,
    sdk: u32,
    version: &'static str,
}

/// One connector build bound to the phone.
struct Side {
    name: String,
    conn: Connector,
    ws: Arc<Ws>,
    ch: String,
}

impl Side {
    fn addr(&self) -> SocketAddr {
        self.conn.addr
    }
}

/// One side's step, run once per sample.
type Work<'a> = (String, Box<dyn FnMut() + 'a>);

/// A measured step: its label, its key in the JSON, each side's samples.
struct Step {
    label: &'static str,
    key: &'static str,
    samples: Vec<(String, Samples)>,
}

/// A measured sample: wall time and the streams the phone opened meanwhile.
#[derive(Default)]
struct Samples {
    ms: Vec<f64>,
    streams: Vec<f64>,
}

impl Samples {
    fn json(&self) -> Value {
        let s = stats(&self.ms);
        json!({"p50_ms": round3(s.p50), "p95_ms": round3(s.p95), "n": self.ms.len(),
               "streams_per_step": round3(stats(&self.streams).p50)})
    }
}

pub(crate) fn bench_agent_step(sim_rt: &tokio::runtime::Runtime, rt: &tokio::runtime::Runtime, rep: &mut Report) {
    let profiles = [
        Profile { label: "Android 14", key: "android14", sdk: 34, version: "14" },
        Profile { label: "Android 11", key: "android11", sdk: 30, version: "11" },
    ];
    let only = std::env::var("BENCH_AGENT_PROFILE").ok();
    let mut all = serde_json::Map::new();
    for p in profiles.iter().filter(|p| only.as_deref().is_none_or(|o| o == p.key)) {
        all.insert(p.key.into(), run_profile(sim_rt, rt, p, rep));
    }
    rep.json.insert("agent_step".into(), Value::Object(all));
}

fn run_profile(sim_rt: &tokio::runtime::Runtime, rt: &tokio::runtime::Runtime, p: &Profile, rep: &mut Report) -> Value {
    let q = quick();
    let n_light = env_usize("BENCH_AGENT_N", if q { 6 } else { 20 });
    let n_heavy = env_usize("BENCH_AGENT_N_HEAVY", if q { 3 } else { 10 });
    let adb = Adb::start();
    let cfg =
        SimConfig { sdk: p.sdk, android_version: p.version.into(), costs: PhoneCosts::phone(), ..SimConfig::default() };
    let sim = sim_rt.block_on(SimPhone::start("127.0.0.1:0".parse().unwrap(), cfg)).unwrap();
    let serial = sim.serial();
    adb.connect_all(std::slice::from_ref(&serial));
    let bind = |name: &str, conn: Connector| {
        let (ws, ch) = rt.block_on(async {
            let ws = Ws::connect(conn.addr, name).await;
            ws.hello().await;
            let ch = ws.open().await;
            ws.bind(&ch).await;
            (ws, ch)
        });
        Side { name: name.to_owned(), conn, ws, ch }
    };
    // Issue 32: this build with its phone helper (the default) and with `--phone-helper off` (the shell path).
    let mut sides = vec![
        bind("after", Connector::start(adb.port, QUIET_LOG)),
        bind("helper off", Connector::start_with(adb.port, QUIET_LOG, &["--phone-helper", "off"])),
    ];
    if let Some(bin) = std::env::var("BENCH_BEFORE_BIN").ok().filter(|b| std::path::Path::new(b).is_file()) {
        sides.push(bind("before", Connector::start_bin(&bin, adb.port, QUIET_LOG, &[])));
    }
    let serial = serial.as_str();
    let cli = |args: &[&str]| {
        let mut full = vec!["-s", serial];
        full.extend_from_slice(args);
        assert!(adb.run(&full, None), "adb {args:?} failed");
    };
    let (ex, ey) = (EMPTY.0.to_string(), EMPTY.1.to_string());
    let screencap_out = adb.tmp("agent-step.png");
    let cli_tap = |x: &str, y: &str| cli(&["shell", "input", "tap", x, y]);
    let cli_screencap = || {
        let args = ["-s", serial, "exec-out", "screencap", "-p"];
        assert!(adb.run(&args, Some(&screencap_out)), "adb exec-out screencap -p failed");
    };
    let cli_dump = || cli(&["exec-out", "uiautomator", "dump", "/dev/tty"]);
    let invoke = |s: &Side, tool: &str, args: Value| -> Value {
        rt.block_on(s.ws.invoke(&s.ch, tool, args)).unwrap_or_else(|e| panic!("{}: {e}", s.name))
    };
    let observe = |s: &Side| -> Value {
        rt.block_on(observe_and_download(&s.ws, s.addr(), &s.ch)).unwrap_or_else(|e| panic!("{}: {e}", s.name)).1
    };
    let index_of = |obs: &Value, text: &str| -> Value {
        let found = obs["elements"].as_array().and_then(|a| a.iter().find(|e| e["text"] == text));
        let e = found.unwrap_or_else(|| panic!("{text:?} not in the observation: {obs}"));
        json!({"index": e["index"], "observation_id": obs["observation_id"]})
    };
    let field = json!({"resource_id": "com.xagent.sim:id/input"});

    // Warm-up: every side has read the phone's size and formats once.
    for s in &sides {
        invoke(s, "android_tap", json!({"settle": false, "x": EMPTY.0, "y": EMPTY.1}));
        observe(s);
    }
    cli_tap(&ex, &ey);

    let mut steps: Vec<Step> = Vec::new();
    let mut run = |label: &'static str, key: &'static str, n: usize, setup: &dyn Fn(), work: &mut [Work<'_>]| {
        setup();
        let mut samples: Vec<(String, Samples)> = work.iter().map(|(k, _)| (k.clone(), Samples::default())).collect();
        let m = work.len();
        for i in 0..n {
            for k in 0..m {
                let j = (i + k) % m;
                let s0 = sim.streams();
                let t = Instant::now();
                (work[j].1)();
                samples[j].1.ms.push(ms(t.elapsed()));
                samples[j].1.streams.push((sim.streams() - s0) as f64);
            }
        }
        steps.push(Step { label, key, samples });
    };
    let none = || {};

    // 1. A bare tap.
    {
        let mut work: Vec<Work<'_>> = sides
            .iter()
            .map(|s| {
                let f: Box<dyn FnMut()> = Box::new(move || {
                    invoke(s, "android_tap", json!({"settle": false, "x": EMPTY.0, "y": EMPTY.1}));
                });
                (s.name.clone(), f)
            })
            .collect();
        work.push(("adb CLI".into(), Box::new(|| cli_tap(&ex, &ey))));
        run("bare tap (`settle: false`) vs `adb shell input tap`", "bare_tap", n_light, &none, &mut work);
    }
    // 2. A settled tap on a still screen: as called (the UI-tree delta comes by default where the helper reads
    // trees), and (2b) without the delta (`effect_tree: false`): the settle alone — frames and the state, what issue
    // 32's target was set for before the delta (issue 33) came by default.
    for (tree, label, key) in [
        (None, "settled tap, still screen vs `input tap` + `exec-out screencap -p`", "settled_tap"),
        (
            Some(false),
            "settled tap without the tree delta (`effect_tree: false`), still screen vs `input tap` + `exec-out screencap -p`",
            "settled_tap_no_tree",
        ),
    ] {
        let mut args = json!({"x": EMPTY.0, "y": EMPTY.1});
        if let Some(t) = tree {
            args["effect_tree"] = json!(t);
        }
        let mut work: Vec<Work<'_>> = sides
            .iter()
            .map(|s| {
                let args = args.clone();
                let f: Box<dyn FnMut()> = Box::new(move || {
                    let r = invoke(s, "android_tap", args.clone());
                    assert_eq!(r["effect"]["screen_changed"], false, "{}: {r}", s.name);
                    if tree == Some(false) {
                        assert!(r["effect"].get("tree").is_none(), "{}: {r}", s.name);
                    }
                });
                (s.name.clone(), f)
            })
            .collect();
        work.push((
            "adb CLI".into(),
            Box::new(|| {
                cli_tap(&ex, &ey);
                cli_screencap();
            }),
        ));
        run(label, key, n_light, &none, &mut work);
    }
    // 3. A tap on an element of an observation (the Increment button: it stays where it is).
    {
        let targets: Vec<Value> = sides.iter().map(|s| index_of(&observe(s), "Increment")).collect();
        let (bx, by) = ("540".to_string(), "978".to_string());
        let mut work: Vec<Work<'_>> = sides
            .iter()
            .zip(targets)
            .map(|(s, el)| {
                let f: Box<dyn FnMut()> = Box::new(move || {
                    invoke(s, "android_tap", json!({"settle": false, "element": el.clone()}));
                });
                (s.name.clone(), f)
            })
            .collect();
        work.push(("adb CLI".into(), Box::new(move || cli_tap(&bx, &by))));
        run(
            "element tap from an observation (`settle: false`) vs `input tap`",
            "element_tap",
            n_light,
            &none,
            &mut work,
        );
    }
    // 4. Typing into the focused field.
    {
        let focus = || cli(&["shell", "input", "tap", "540", "1272"]);
        let mut work: Vec<Work<'_>> = sides
            .iter()
            .map(|s| {
                let f: Box<dyn FnMut()> = Box::new(move || {
                    invoke(s, "android_input_text", json!({"settle": false, "text": "hello world"}));
                });
                (s.name.clone(), f)
            })
            .collect();
        work.push(("adb CLI".into(), Box::new(|| cli(&["shell", "input", "text", "hello%sworld"]))));
        run(
            "`android_input_text` \"hello world\" (`settle: false`) vs `input text`",
            "input_text",
            n_light,
            &focus,
            &mut work,
        );
    }
    // 5. Observe and download the picture.
    {
        let mut work: Vec<Work<'_>> = sides
            .iter()
            .map(|s| {
                let f: Box<dyn FnMut()> = Box::new(move || {
                    observe(s);
                });
                (s.name.clone(), f)
            })
            .collect();
        work.push((
            "adb CLI".into(),
            Box::new(|| {
                cli_dump();
                cli_screencap();
            }),
        ));
        run(
            "`android_observe` + download vs `uiautomator dump` + `screencap -p`",
            "observe",
            n_heavy,
            &none,
            &mut work,
        );
    }
    // 6. A five-step task: observe, tap the field, type, tap the button, observe (the connector's defaults: settled
    // actions with their effect).
    {
        let mut work: Vec<Work<'_>> = sides
            .iter()
            .map(|s| {
                let field = field.clone();
                let f: Box<dyn FnMut()> = Box::new(move || {
                    let obs = observe(s);
                    let f = obs["elements"]
                        .as_array()
                        .and_then(|a| a.iter().find(|e| e["resource_id"] == field["resource_id"]))
                        .map(|e| json!({"index": e["index"], "observation_id": obs["observation_id"]}))
                        .unwrap_or_else(|| panic!("no text field in {obs}"));
                    invoke(s, "android_tap", json!({"element": f}));
                    invoke(s, "android_input_text", json!({"text": "hello"}));
                    invoke(s, "android_tap", json!({"element": index_of(&obs, "Increment")}));
                    observe(s);
                });
                (s.name.clone(), f)
            })
            .collect();
        work.push((
            "adb CLI".into(),
            Box::new(|| {
                cli_dump();
                cli_screencap();
                cli_tap("540", "1272");
                cli(&["shell", "input", "text", "hello"]);
                cli_tap("540", "978");
                cli_dump();
                cli_screencap();
            }),
        ));
        run("five-step task: observe, tap, type, tap, observe", "five_steps", n_heavy, &none, &mut work);
    }
    // 7. The UI-tree delta of a settled tap (`effect_tree`: a tree before and after), against the adb CLI's way
    // of seeing what a tap changed in the tree: a dump, the tap, a dump. Compare with step 2 for its own cost.
    {
        let mut work: Vec<Work<'_>> = sides
            .iter()
            .map(|s| {
                let f: Box<dyn FnMut()> = Box::new(move || {
                    let r = invoke(s, "android_tap", json!({"x": EMPTY.0, "y": EMPTY.1, "effect_tree": true}));
                    assert!(r["effect"]["tree"].is_object(), "{}: no tree delta: {r}", s.name);
                });
                (s.name.clone(), f)
            })
            .collect();
        work.push((
            "adb CLI".into(),
            Box::new(|| {
                cli_dump();
                cli_tap(&ex, &ey);
                cli_dump();
            }),
        ));
        run(
            "settled tap + `effect_tree` vs `uiautomator dump` + `input tap` + `uiautomator dump`",
            "effect_tree_tap",
            n_light,
            &none,
            &mut work,
        );
    }
    // 8. "Hello, 世界 ✓" typed and read back. Without ADB Keyboard only the helper can type it (its paste); the
    // shell path answers `unsupported_text`, so "helper off" has no sample here. The adb CLI's nearest: the ASCII
    // part through `input text`, read back with a dump.
    {
        let focus = || cli(&["shell", "input", "tap", "540", "1272"]);
        let text = "Hello, 世界 ✓";
        let mut work: Vec<Work<'_>> = sides
            .iter()
            .filter(|s| s.name != "helper off")
            .map(|s| {
                let f: Box<dyn FnMut()> = Box::new(move || {
                    let args = json!({"text": text, "clear": true, "verify": true, "settle": false});
                    let r = invoke(s, "android_input_text", args);
                    assert_eq!((&r["verified"], &r["method"]), (&json!(true), &json!("helper_paste")), "{r}");
                });
                (s.name.clone(), f)
            })
            .collect();
        work.push((
            "adb CLI".into(),
            Box::new(|| {
                cli(&["shell", "input", "text", "Hello,%s"]);
                cli_dump();
            }),
        ));
        run(
            "\"Hello, 世界 ✓\" typed + read back (`verify`) vs `input text` (ASCII part) + `uiautomator dump`",
            "unicode_text",
            n_light,
            &focus,
            &mut work,
        );
        if let Some(off) = sides.iter().find(|s| s.name == "helper off") {
            let r = rt.block_on(off.ws.invoke(&off.ch, "android_input_text", json!({"text": text, "settle": false})));
            assert!(r.as_ref().is_err_and(|e| e.contains("unsupported_text")), "helper off: {r:?}");
        }
    }
    // 9. A UI tree on a screen that never idles (an animation, a video): the helper reads it at once; uiautomator
    // waits for an idle that never comes and gives no tree after ~10 s (the shell path answers `ui_unavailable`).
    {
        sim.set_never_idle(true, std::time::Duration::from_secs(10));
        let mut work: Vec<Work<'_>> = sides
            .iter()
            .map(|s| {
                let f: Box<dyn FnMut()> = Box::new(move || {
                    let r = rt.block_on(s.ws.invoke(&s.ch, "android_ui_dump", json!({})));
                    match (s.name.as_str(), r) {
                        ("helper off", Err(e)) => assert!(e.contains("ui_unavailable"), "{e}"),
                        (_, Ok(d)) => assert_eq!(d["tree"]["source"], "helper", "{}: {d}", s.name),
                        (name, other) => panic!("{name}: {other:?}"),
                    }
                });
                (s.name.clone(), f)
            })
            .collect();
        work.push(("adb CLI".into(), Box::new(cli_dump)));
        run(
            "UI tree, screen that never idles vs `uiautomator dump` (no tree after ~10 s)",
            "never_idle_tree",
            n_heavy.min(3),
            &none,
            &mut work,
        );
        sim.set_never_idle(false, std::time::Duration::from_secs(10));
    }

    let mut out = serde_json::Map::new();
    for Step { label, key, samples } in &steps {
        let cli = samples.iter().find(|(k, _)| k == "adb CLI").map(|(_, s)| stats(&s.ms)).unwrap_or_default();
        let mut j = serde_json::Map::new();
        for (side, s) in samples {
            j.insert(side.clone(), s.json());
            if side == "adb CLI" {
                continue;
            }
            let st = stats(&s.ms);
            let (r50, r95) = ratio(&st, &cli);
            let rt50 = stats(&s.streams).p50;
            let cli_rt = samples.iter().find(|(k, _)| k == "adb CLI").map_or(0.0, |(_, c)| stats(&c.streams).p50);
            rep.row(
                &format!("31 {} {label} [{side}]", p.label),
                format!("{} ({rt50:.0} streams)", pp(&st)),
                format!("{} ({cli_rt:.0} streams)", pp(&cli)),
                format!("{r50:.3} ({r95:.3})"),
                "info",
                None,
            );
        }
        out.insert((*key).into(), Value::Object(j));
    }
    for s in sides {
        drop(s.conn);
    }
    sim_rt.block_on(sim.shutdown());
    Value::Object(out)
}
