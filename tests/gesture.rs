//! Multi-touch through the real path (issue 32): `android_pinch` and `android_gesture` from the data plane, through
//! the real adb server, to the simulated phone's helper (`src/sim/helper.rs`), which records every pointer's path
//! as it arrived. Where the helper cannot play it (off, injection denied, an Android too old for it) the tools
//! answer `unsupported_gesture` and send nothing: no one-finger `input swipe` in its place. Bad arguments get
//! errors that name them.

mod common;

use std::time::{Duration, Instant};

use common::rig::Rig;
use serde_json::{json, Value};
use xagent_adb_connector::sim::helper::Mode;
use xagent_adb_connector::sim::{InputEvent, SimConfig};

const AUTO: &[&str] = &["--phone-helper", "auto"];

async fn bounded<F: std::future::Future<Output = ()>>(f: F) {
    tokio::time::timeout(Duration::from_secs(120), f).await.expect("test took over 120 s");
}

/// Each finger's points, pointer 0 first.
type Paths = Vec<Vec<(i32, i32)>>;

fn gestures(r: &Rig) -> Vec<(u32, Paths)> {
    r.sim
        .events()
        .into_iter()
        .filter_map(|e| match e {
            InputEvent::Gesture { duration_ms, pointers } => Some((duration_ms, pointers)),
            _ => None,
        })
        .collect()
}

fn dist((x1, y1): (i32, i32), (x2, y2): (i32, i32)) -> f64 {
    f64::from(x1 - x2).hypot(f64::from(y1 - y2))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pinch_out_arrives_as_two_pointers_moving_apart() {
    bounded(async {
        let mut r = Rig::with(SimConfig::default(), AUTO, None).await;
        // Started once (the first call pays the helper's start), so the second call's time is the gesture's.
        r.ok("android_pinch", json!({"scale": 2, "duration_ms": 100, "settle": false})).await;
        r.sim.clear_events();
        let c0 = r.sim.commands().len();
        let t = Instant::now();
        let res =
            r.ok("android_pinch", json!({"x": 540, "y": 1200, "scale": 2, "duration_ms": 600, "settle": false})).await;
        let took = t.elapsed();
        let got = gestures(&r);
        assert_eq!(got.len(), 1, "{:?}", r.sim.events());
        let (ms, pointers) = &got[0];
        assert_eq!(*ms, 600);
        assert_eq!(pointers.len(), 2, "two fingers: {pointers:?}");
        let [a, b] = [&pointers[0], &pointers[1]];
        assert_eq!((a.len(), b.len()), (2, 2), "start and end of each finger: {pointers:?}");
        // Symmetric about the centre at both ends, twice as far apart at the end, inside the 1080 × 2400 screen.
        for j in 0..2 {
            assert_eq!((a[j].0 + b[j].0, a[j].1 + b[j].1), (1080, 2400), "centred: {pointers:?}");
        }
        let (from, to) = (dist(a[0], b[0]), dist(a[1], b[1]));
        assert!((to / from - 2.0).abs() < 0.01, "span {from} -> {to}");
        assert!(a[1].1 < a[0].1 && b[1].1 > b[0].1, "apart along the longer side: {pointers:?}");
        assert!(pointers.iter().flatten().all(|&(x, y)| (0..1080).contains(&x) && (0..2400).contains(&y)));
        assert_eq!((res["span_from"].as_f64(), res["span_to"].as_f64()), (Some(from), Some(to)), "{res}");
        assert_eq!((&res["axis"], &res["duration_ms"]), (&json!("vertical"), &json!(600)), "{res}");
        // Played in real time: the answer comes after the last event.
        assert!(took >= Duration::from_millis(600), "{took:?}");
        let cmds = r.sim.commands()[c0..].to_vec();
        assert!(!cmds.iter().any(|c| c.starts_with("input ")), "no `input` process: {cmds:?}");

        // A pinch in on an element: around its centre, the fingers inside its bounds.
        let dump = r.ok("android_ui_dump", json!({})).await;
        let inc = dump["elements"].as_array().unwrap().iter().find(|e| e["text"] == "Increment").unwrap().clone();
        let bounds: Vec<i32> = inc["bounds"].as_array().unwrap().iter().map(|v| v.as_i64().unwrap() as i32).collect();
        r.sim.clear_events();
        let res = r.ok("android_pinch", json!({"element": {"text": "Increment"}, "scale": 0.5, "settle": false})).await;
        assert_eq!(res["element"]["text"], "Increment", "{res}");
        let (ms, pointers) = gestures(&r).remove(0);
        assert_eq!(ms, 400, "the default duration");
        let (from, to) = (dist(pointers[0][0], pointers[1][0]), dist(pointers[0][1], pointers[1][1]));
        assert!((to / from - 0.5).abs() < 0.01, "span {from} -> {to}");
        let inside = |&(x, y): &(i32, i32)| x >= bounds[0] && x < bounds[2] && y >= bounds[1] && y < bounds[3];
        assert!(pointers.iter().flatten().all(inside), "{pointers:?} in {bounds:?}");
        let centre = ((bounds[0] + bounds[2]) / 2, (bounds[1] + bounds[3]) / 2);
        assert_eq!((res["x"].as_i64(), res["y"].as_i64()), (Some(i64::from(centre.0)), Some(i64::from(centre.1))));
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn explicit_paths_arrive_pointer_by_pointer() {
    bounded(async {
        let mut r = Rig::with(SimConfig::default(), AUTO, None).await;
        // A two-finger swipe up, three points each; then three fingers held still (one point each).
        let up = json!([[[400, 1600], [400, 1200], [400, 800]], [[680, 1600], [680, 1200], [680, 800]]]);
        let res = r.ok("android_gesture", json!({"pointers": up, "duration_ms": 200, "settle": false})).await;
        assert_eq!((&res["pointers"], &res["points"]), (&json!(2), &json!(3)), "{res}");
        let hold = json!([[[100, 100]], [[200, 200]], [[300, 300]]]);
        r.ok("android_gesture", json!({"pointers": hold, "duration_ms": 50, "settle": false})).await;
        assert_eq!(
            gestures(&r),
            vec![
                (200, vec![vec![(400, 1600), (400, 1200), (400, 800)], vec![(680, 1600), (680, 1200), (680, 800)]]),
                (50, vec![vec![(100, 100)], vec![(200, 200)], vec![(300, 300)]]),
            ]
        );
    })
    .await;
}

/// A call that must fail with `unsupported_gesture` and send nothing to the phone's input.
async fn unsupported(r: &mut Rig, tool: &str, args: Value) -> String {
    let c0 = r.sim.commands().len();
    let (code, msg) = r.err(tool, args).await;
    assert_eq!(code, "unsupported_gesture", "{msg}");
    assert!(msg.contains("one finger"), "says why: {msg}");
    let cmds = r.sim.commands()[c0..].to_vec();
    assert!(!cmds.iter().any(|c| c.starts_with("input ")), "no one-finger stand-in: {cmds:?}");
    assert!(gestures(r).is_empty(), "{:?}", r.sim.events());
    msg
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_helper_the_tools_say_why_and_send_nothing() {
    bounded(async {
        let pinch = json!({"scale": 0.5, "settle": false});
        let two = json!({"pointers": [[[400, 1600], [400, 800]], [[680, 1600], [680, 800]]], "settle": false});
        // --phone-helper off: the operator's choice, and how to change it.
        let mut r = Rig::with(SimConfig::default(), &["--phone-helper", "off"], None).await;
        let msg = unsupported(&mut r, "android_pinch", pinch.clone()).await;
        assert!(msg.contains("--phone-helper auto"), "{msg}");
        unsupported(&mut r, "android_gesture", two.clone()).await;
        // Injection refused (Xiaomi's security toggle): the reason the phone gave, kept.
        let mut r = Rig::with(SimConfig { helper: Mode::Denied, ..SimConfig::default() }, AUTO, None).await;
        let msg = unsupported(&mut r, "android_pinch", pinch.clone()).await;
        assert!(msg.contains("USB debugging (Security settings)"), "{msg}");
        unsupported(&mut r, "android_gesture", two.clone()).await;
        // No injection method in this Android's hidden API; an Android older than the helper.
        let mut r = Rig::with(SimConfig { helper: Mode::Unavailable, ..SimConfig::default() }, AUTO, None).await;
        let msg = unsupported(&mut r, "android_pinch", pinch.clone()).await;
        assert!(msg.contains("no_inject_method"), "{msg}");
        let old = SimConfig { sdk: 25, android_version: "7.1".into(), ..SimConfig::default() };
        let mut r = Rig::with(old, AUTO, None).await;
        let msg = unsupported(&mut r, "android_pinch", pinch).await;
        assert!(msg.contains("Android older than 8"), "{msg}");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_arguments_are_named() {
    bounded(async {
        let mut r = Rig::with(SimConfig::default(), AUTO, None).await;
        let finger = |x: i64| json!([[x, 1600], [x, 800]]);
        let cases: Vec<(&str, Value, &str)> = vec![
            ("android_pinch", json!({"scale": 0}), "`scale` must be ≥ 0.1, got 0"),
            ("android_pinch", json!({"scale": -2}), "`scale` must be ≥ 0.1, got -2"),
            ("android_pinch", json!({"scale": 11}), "`scale` must be ≤ 10"),
            ("android_pinch", json!({"scale": 1}), "further from 1"),
            ("android_pinch", json!({"scale": 2, "x": 5, "y": 5}), "no room to pinch"),
            ("android_pinch", json!({"scale": 2, "x": 540}), "both `x` and `y`"),
            (
                "android_pinch",
                json!({"scale": 2, "x": 2000, "y": 500}),
                "pinch centre (2000, 500) is outside the screen",
            ),
            (
                "android_pinch",
                json!({"scale": 2, "x": 5, "y": 5, "element": {"text": "Increment"}}),
                "either `element` or `x` and `y`",
            ),
            (
                "android_gesture",
                json!({"pointers": (0..11).map(|i| finger(50 + i * 90)).collect::<Vec<_>>()}),
                "`pointers` must have at most 10 items, got 11",
            ),
            ("android_gesture", json!({"pointers": []}), "`pointers` must have at least 1 items, got 0"),
            ("android_gesture", json!({"pointers": [[]]}), "1 to 64 [x, y] points"),
            (
                "android_gesture",
                json!({"pointers": [finger(100), [[700, 1600], [2000, 800]]]}),
                "pointers[1][1] (2000, 800) is outside the screen",
            ),
            (
                "android_gesture",
                json!({"pointers": [finger(100), [[700, 1600]]]}),
                "pointers[0] has 2, pointers[1] has 1",
            ),
            ("android_gesture", json!({"pointers": [[[1, 2, 3]]]}), "`pointers[0][0]` must have at most 2 items"),
        ];
        for (tool, mut args, want) in cases {
            args["settle"] = json!(false);
            let (code, msg) = r.err(tool, args.clone()).await;
            assert_eq!(code, "invalid_arguments", "{tool} {args}: {msg}");
            assert!(msg.contains(want), "{tool} {args}: {msg:?} should say {want:?}");
        }
        assert!(gestures(&r).is_empty(), "nothing reached the phone: {:?}", r.sim.events());
    })
    .await;
}
