//! What an agent step costs on a phone that charges a real phone's time (issue 31). The simulated phone pays
//! `PhoneCosts::phone()` (a USB round trip per stream, a VM start for `input` on Android ≤ 11, a second of idle
//! wait in `uiautomator dump`, …), the real connector binary drives it through the real adb server, and each test
//! counts what reached the phone: the streams it opened (round trips) and the commands it ran. Every saving keeps
//! its guarantee (a sleeping phone woken, a locked one refused, a password never read back), tested here too.

mod common;

use std::time::{Duration, Instant};

use common::adb::*;
use common::rig::Rig;
use serde_json::json;
use xagent_adb_connector::sim::{InputEvent, PhoneCosts, SimConfig};

/// A point on no element of the home screen, inside the screen in both orientations.
const NOTHING: (i64, i64) = (100, 300);
/// The home screen's text field (1080 × 2400).
const FIELD: (i64, i64) = (540, 1272);

/// The shell path (`--phone-helper off`, and every fallback): what these tests count is its own commands and
/// streams. The default (the helper on) runs the same steps through the helper's one stream, so each test runs both
/// and asserts the user-visible outcome in both, the shell path's costs only with the shell path.
const OFF: &[&str] = &["--phone-helper", "off"];
const MODES: [(&[&str], bool); 2] = [(&[], true), (OFF, false)];

async fn bounded<F: std::future::Future<Output = ()>>(f: F) {
    tokio::time::timeout(Duration::from_secs(120), f).await.expect("test took over 120 s");
}

fn phone(sdk: u32) -> SimConfig {
    let version = if sdk <= 30 { "11" } else { "14" };
    SimConfig { sdk, android_version: version.into(), costs: PhoneCosts::phone(), ..SimConfig::default() }
}

/// What one call cost the phone: streams opened and the commands run, in order.
async fn counted(r: &mut Rig, tool: &str, args: serde_json::Value) -> (serde_json::Value, u64, Vec<String>) {
    let (s0, c0) = (r.sim.streams(), r.sim.commands().len());
    // As given: the connector's defaults apply (`settle` is on unless the test turns it off).
    let ch = r.ch.clone();
    let ack = r.c.invoke_as_is(&ch, tool, args).await;
    assert!(ack["type"] == "tool.invoke.ack" && ack.get("error").is_none(), "{tool} failed: {ack}");
    let res = ack["payload"]["result"].clone();
    let cmds = r.sim.commands()[c0..].to_vec();
    (res, r.sim.streams() - s0, cmds)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_phone_charges_a_vm_start_for_input_up_to_android_11_and_a_binder_call_after() {
    bounded(async {
        for (sdk, at_least, below) in [(30u32, 600u64, u64::MAX), (34, 60, 600)] {
            let (adb, sim, serial) = setup_with(phone(sdk)).await.expect("adb");
            let adb2 = adb.clone();
            let t = Instant::now();
            let out = blocking(move || adb2.adb(&["-s", &serial, "shell", "input", "tap", "100", "300"])).await;
            let took = t.elapsed().as_millis() as u64;
            assert_eq!(out.status, Some(0), "{}", out.stderr);
            assert!(took >= at_least, "sdk {sdk}: `adb shell input tap` took {took} ms, a phone charges ≥ {at_least}");
            assert!(took < below, "sdk {sdk}: `adb shell input tap` took {took} ms: `cmd input` starts no VM");
            assert_eq!(sim.events(), vec![InputEvent::Tap { x: 100, y: 300 }]);
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bare_tap_on_a_phone_known_awake_is_one_round_trip() {
    bounded(async {
        for (flags, helper) in MODES {
            let mut r = Rig::with(phone(34), flags, None).await;
            let tap = json!({"x": NOTHING.0, "y": NOTHING.1, "settle": false});
            // The first input reads the screen state (one round trip) …
            let (_, first, cmds) = counted(&mut r, "android_tap", tap.clone()).await;
            if !helper {
                assert!(cmds.iter().any(|c| c.contains("dumpsys power")), "the state is read once: {cmds:?}");
                assert_eq!(first, cmds.len() as u64, "one stream per command: {cmds:?}");
            }
            // … and the ones after it do not: our own input keeps the phone awake (the screen timeout restarts).
            for _ in 0..3 {
                let (_, streams, cmds) = counted(&mut r, "android_tap", tap.clone()).await;
                if !helper {
                    assert_eq!(cmds, vec![format!("input tap {} {}", NOTHING.0, NOTHING.1)]);
                    assert_eq!(streams, 1, "one round trip per tap: {cmds:?}");
                }
            }
            // Keys, swipes and text the same.
            let (_, streams, cmds) = counted(&mut r, "android_key", json!({"key": "BACK", "settle": false})).await;
            if !helper {
                assert_eq!((streams, cmds.len()), (1, 1), "{cmds:?}");
            }
            let swipe = json!({"x1": 100, "y1": 300, "x2": 100, "y2": 200, "duration_ms": 50, "settle": false});
            let (_, streams, cmds) = counted(&mut r, "android_swipe", swipe).await;
            if !helper {
                assert_eq!((streams, cmds.len()), (1, 1), "{cmds:?}");
            }
            // What the user sees, either way: every input reached the phone, once, in order.
            let mut want = vec![InputEvent::Tap { x: NOTHING.0 as i32, y: NOTHING.1 as i32 }; 4];
            want.push(InputEvent::Key("KEYCODE_BACK".into()));
            want.push(InputEvent::Swipe { x1: 100, y1: 300, x2: 100, y2: 200, duration_ms: 50 });
            assert_eq!(r.sim.events(), want, "helper {helper}");
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_phone_that_slept_is_still_woken_and_a_locked_one_refused() {
    bounded(async {
        let mut r = Rig::with(phone(34), &[], None).await;
        let tap = json!({"x": NOTHING.0, "y": NOTHING.1, "settle": false});
        r.ok("android_tap", tap.clone()).await;
        // A power key is about the screen itself: the state is read again before the next input.
        r.ok("android_key", json!({"key": "SLEEP", "settle": false})).await;
        assert!(!r.sim.screen_on());
        let res = r.ok("android_tap", tap.clone()).await;
        assert_eq!(res["woke"], true, "woken before the tap: {res}");
        assert!(r.sim.screen_on());
        // Put to sleep behind the connector's back: once the time an input of ours vouches for has passed, the
        // next tap reads the state and wakes the phone.
        r.sim.set_screen_on(false);
        tokio::time::sleep(xagent_adb_connector::device::adb::INPUT_KEEPS_AWAKE + Duration::from_millis(200)).await;
        let res = r.ok("android_tap", tap.clone()).await;
        assert_eq!(res["woke"], true, "{res}");
        // A lock screen that came up meanwhile is refused, not tapped.
        r.sim.set_lock(xagent_adb_connector::sim::ui::LockMode::Swipe);
        r.sim.set_screen_on(false);
        r.sim.set_screen_on(true);
        tokio::time::sleep(xagent_adb_connector::device::adb::INPUT_KEEPS_AWAKE + Duration::from_millis(200)).await;
        r.sim.clear_events();
        let (code, msg) = r.err("android_tap", tap).await;
        assert_eq!(code, "device_locked", "{msg}");
        assert!(r.sim.events().is_empty(), "nothing reached the lock screen: {:?}", r.sim.events());
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typing_without_verify_is_one_round_trip_and_says_it_did_not_read_back() {
    bounded(async {
        for (flags, helper) in MODES {
            let mut r = Rig::with(phone(34), flags, None).await;
            r.ok("android_tap", json!({"x": FIELD.0, "y": FIELD.1, "settle": false})).await;
            let args = json!({"text": "hello world", "submit": true, "settle": false});
            let (res, streams, cmds) = counted(&mut r, "android_input_text", args).await;
            if !helper {
                assert_eq!(streams, 1, "text and ENTER in one command, no UI dump: {cmds:?}");
            }
            assert!(!cmds.iter().any(|c| c.contains("uiautomator")), "helper {helper}: {cmds:?}");
            assert_eq!((&res["read_back"], &res["verified"]), (&json!(false), &json!(null)), "{res}");
            assert!(res.get("field_text").is_none(), "{res}");
            assert_eq!(r.sim.fields().0, "hello world", "helper {helper}");
            assert_eq!(r.sim.events().last(), Some(&InputEvent::Key("KEYCODE_ENTER".into())), "helper {helper}");
            // Asked to verify: the field is read back, and what it cost is in the result.
            let args = json!({"text": "!", "verify": true, "settle": false});
            let (res, streams, cmds) = counted(&mut r, "android_input_text", args).await;
            assert_eq!((&res["field_text"], &res["verified"]), (&json!("hello world!"), &json!(true)), "{res}");
            assert!(res["read_back_ms"].as_u64().is_some(), "{res}");
            if !helper {
                assert!(cmds.iter().any(|c| c.contains("uiautomator dump")), "{cmds:?}");
                assert_eq!(streams, 2, "{cmds:?}");
                // A phone's dump costs its VM start and a second of idle wait.
                assert!(res["read_back_ms"].as_u64().is_some_and(|ms| ms >= 1800), "{res}");
            }
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_settled_tap_on_a_still_screen_reads_the_display_once_after_the_input() {
    bounded(async {
        for (flags, helper) in MODES {
            let mut r = Rig::with(phone(34), flags, None).await;
            // Learn the phone first (the capture probe, the state), as any earlier step of an agent does.
            r.ok("android_tap", json!({"x": NOTHING.0, "y": NOTHING.1, "settle": false})).await;
            r.ok("android_screenshot", json!({})).await;
            let (res, _, cmds) = counted(&mut r, "android_tap", json!({"x": NOTHING.0, "y": NOTHING.1})).await;
            let e = &res["effect"];
            assert_eq!((&e["settled"], &e["screen_changed"]), (&json!(true), &json!(false)), "{res}");
            if !helper {
                let reads = cmds.iter().filter(|c| c.contains("screencap") || *c == "framebuffer:").count();
                assert_eq!(reads, 2, "one frame before the input, one after: {cmds:?}");
                let settle_ms = e["settle_ms"].as_u64().unwrap();
                assert!(settle_ms < 1000, "one capture after the input: {settle_ms} ms");
            }
            // A tap that changes the screen still settles on two equal frames after the change.
            let (res, _, _) = counted(&mut r, "android_tap", json!({"x": 540, "y": 978})).await;
            let e = &res["effect"];
            assert_eq!((&e["settled"], &e["screen_changed"]), (&json!(true), &json!(true)), "helper {helper}: {res}");
            assert_eq!(r.sim.counter(), 1, "helper {helper}");
        }
    })
    .await;
}
