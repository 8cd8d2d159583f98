//! Phones as they are found on a rack: asleep, on the lock screen (swipe or PIN), showing a FLAG_SECURE window,
//! playing an animation that never lets uiautomator see an idle UI. Real connector binary → real adb server →
//! simulated phone in that state; what reached the phone is read from the phone's own event log.

mod common;

use std::time::{Duration, Instant};

use common::rig::Rig;
use serde_json::{json, Value};
use xagent_adb_connector::sim::ui::LockMode;
use xagent_adb_connector::sim::{InputEvent, SimConfig, SimPhone};

/// The increment button of the sim's home screen (1080×2400): a tap there shows on the phone's counter.
const BUTTON: (i64, i64) = (540, 978);

async fn rig(policy: Option<Value>) -> Rig {
    Rig::with(SimConfig::default(), &[], policy).await
}

/// The shell path (`--phone-helper off`): for the tests of `uiautomator dump`'s own idle wait, which the helper's
/// tree does not have (it reads a screen that never idles: tests/resident_helper.rs
/// `a_tree_is_read_on_a_screen_that_never_idles`).
async fn shell_rig() -> Rig {
    Rig::with(SimConfig::default(), &["--phone-helper", "off"], None).await
}

impl Rig {
    fn taps(&self) -> Vec<InputEvent> {
        self.sim.events().into_iter().filter(|e| matches!(e, InputEvent::Tap { .. })).collect()
    }
}

fn bounded<F: std::future::Future>(f: F) -> tokio::time::Timeout<F> {
    tokio::time::timeout(Duration::from_secs(120), f)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tap_on_a_sleeping_phone_wakes_it_first_and_lands() {
    bounded(async {
        let mut r = rig(None).await;
        r.sim.set_screen_on(false);
        let st = r.ok("android_device_status", json!({})).await;
        assert_eq!((st["screen_on"].clone(), st["locked"].clone()), (json!(false), json!(false)), "{st}");
        r.sim.clear_events();
        let res = r.ok("android_tap", json!({"x": BUTTON.0, "y": BUTTON.1})).await;
        assert_eq!(res["woke"], true, "{res}");
        assert!(r.sim.screen_on());
        assert_eq!(
            r.sim.events(),
            vec![InputEvent::Key("KEYCODE_WAKEUP".into()), InputEvent::Tap { x: BUTTON.0 as i32, y: BUTTON.1 as i32 }]
        );
        assert_eq!(r.sim.counter(), 1, "the tap landed on the lit screen");
        // Awake now: the next tap neither wakes nor says so.
        let res = r.ok("android_tap", json!({"x": BUTTON.0, "y": BUTTON.1})).await;
        assert!(res.get("woke").is_none(), "{res}");
        assert_eq!(r.sim.counter(), 2);
    })
    .await
    .expect("bounded");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_auto_wake_off_a_sleeping_phone_gets_no_input_and_a_clear_error() {
    bounded(async {
        let mut r = rig(Some(json!({"auto_wake": false}))).await;
        r.sim.set_screen_on(false);
        r.sim.clear_events();
        let (code, msg) = r.err("android_tap", json!({"x": BUTTON.0, "y": BUTTON.1})).await;
        assert_eq!(code, "device_locked", "{msg}");
        assert!(msg.contains("screen is off") && msg.contains("auto_wake") && msg.contains("android_wake"), "{msg}");
        assert_eq!(r.sim.events(), vec![], "nothing reached the phone");
        assert!(!r.sim.screen_on());
        // The operator's way out: android_wake, then the tap works.
        let w = r.ok("android_wake", json!({})).await;
        assert_eq!((w["woke"].clone(), w["screen_on"].clone()), (json!(true), json!(true)), "{w}");
        r.ok("android_tap", json!({"x": BUTTON.0, "y": BUTTON.1})).await;
        assert_eq!(r.sim.counter(), 1);
    })
    .await
    .expect("bounded");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_keyguard_refuses_input_and_a_swipe_lock_opens_with_android_unlock() {
    bounded(async {
        let mut r = rig(None).await;
        r.sim.set_lock(LockMode::Swipe);
        r.sim.clear_events();
        let (code, msg) = r.err("android_tap", json!({"x": BUTTON.0, "y": BUTTON.1})).await;
        assert_eq!(code, "device_locked", "{msg}");
        assert!(msg.contains("android_unlock"), "{msg}");
        for (tool, args) in [
            ("android_swipe", json!({"x1": 500, "y1": 1500, "x2": 500, "y2": 500})),
            ("android_input_text", json!({"text": "hello"})),
            ("android_key", json!({"key": "HOME"})),
        ] {
            assert_eq!(r.err(tool, args).await.0, "device_locked", "{tool}");
        }
        assert_eq!(r.sim.events(), vec![], "nothing reached the phone");
        let obs = r.ok("android_observe", json!({})).await;
        assert_eq!((obs["locked"].clone(), obs["screen_on"].clone()), (json!(true), json!(true)), "{obs}");
        assert!(obs["hint"].as_str().unwrap_or("").contains("android_unlock"), "{obs}");

        let u = r.ok("android_unlock", json!({})).await;
        assert_eq!(u, json!({"unlocked": true, "woke": false, "method": "dismiss_keyguard"}));
        assert!(!r.sim.locked());
        assert!(r.sim.commands().iter().any(|c| c == "wm dismiss-keyguard"));
        r.ok("android_tap", json!({"x": BUTTON.0, "y": BUTTON.1})).await;
        assert_eq!(r.sim.counter(), 1, "unlocked: the tap lands");
        // Already open: nothing to do.
        assert_eq!(r.ok("android_unlock", json!({})).await["method"], "not_locked");
    })
    .await
    .expect("bounded");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sleeping_locked_phone_is_woken_then_refused_and_a_pin_lock_is_secure_lock() {
    bounded(async {
        let mut r = rig(None).await;
        r.sim.set_lock(LockMode::Secure);
        r.sim.set_screen_on(false);
        r.sim.clear_events();
        let (code, msg) = r.err("android_tap", json!({"x": BUTTON.0, "y": BUTTON.1})).await;
        assert_eq!(code, "device_locked", "{msg}");
        assert!(msg.contains("woken") && msg.contains("PIN"), "{msg}");
        assert_eq!(r.taps(), vec![], "no tap reached the phone");
        assert!(r.sim.screen_on(), "auto_wake woke it");

        let st = r.ok("android_device_status", json!({})).await;
        assert_eq!((st["locked"].clone(), st["lock_secure"].clone()), (json!(true), json!(true)), "{st}");
        let (code, msg) = r.err("android_unlock", json!({})).await;
        assert_eq!(code, "secure_lock", "{msg}");
        assert!(msg.contains("never stores or types"), "{msg}");
        assert!(r.sim.locked(), "still locked");
        assert_eq!(r.taps(), vec![]);
    })
    .await
    .expect("bounded");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn android_unlock_wakes_and_swipes_when_the_phone_is_asleep_on_a_swipe_lock() {
    bounded(async {
        let mut r = rig(None).await;
        r.sim.set_lock(LockMode::Swipe);
        r.sim.set_screen_on(false);
        let w = r.ok("android_wake", json!({})).await;
        assert_eq!(w, json!({"woke": true, "screen_on": true, "locked": true}));
        assert_eq!(r.ok("android_wake", json!({})).await["woke"], false, "awake already: no key sent");
        r.sim.set_screen_on(false);
        let u = r.ok("android_unlock", json!({})).await;
        assert_eq!((u["unlocked"].clone(), u["woke"].clone()), (json!(true), json!(true)), "{u}");
        assert!(r.sim.screen_on() && !r.sim.locked());
    })
    .await
    .expect("bounded");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_secure_window_is_named_from_its_flags_a_plain_screen_is_blank_and_a_sleeping_one_screen_off() {
    bounded(async {
        let mut r = rig(None).await;
        let normal = r.ok("android_observe", json!({"picture": true})).await;
        assert_eq!(normal["frame_blank"], false, "{normal}");
        r.sim.set_secure_window(true);
        let obs = r.ok("android_observe", json!({})).await;
        assert_eq!(obs["frame_blank"], true, "{obs}");
        assert!(obs["hint"].as_str().unwrap().contains("FLAG_SECURE"), "{obs}");
        assert_eq!(obs["ui_available"], true);
        assert!(obs["elements"].as_array().unwrap().iter().any(|e| e["text"] == "Increment"), "{obs}");
        let shot = r.ok("android_screenshot", json!({"format": "png"})).await;
        assert_eq!(shot["frame_blank"], true, "{shot}");
        // Issue 33: named from the focused window's flags (`dumpsys window windows`' `fl=… SECURE …`).
        assert_eq!((obs["frame"].clone(), shot["frame"].clone()), (json!("secure_window"), json!("secure_window")));
        assert!(shot["hint"].as_str().unwrap().contains("focused window is secure"), "{shot}");
        assert_eq!(normal["frame"], "ok", "{normal}");
        // A plain white app screen (a splash) is blank, not secure: the flags say so.
        r.sim.set_secure_window(false);
        r.sim.set_plain_screen(true);
        let shot = r.ok("android_screenshot", json!({"format": "png"})).await;
        assert_eq!((shot["frame"].clone(), shot["frame_blank"].clone()), (json!("blank"), json!(true)), "{shot}");
        assert!(shot["hint"].as_str().unwrap().contains("#ffffff"), "{shot}");
        let obs = r.ok("android_observe", json!({})).await;
        assert_eq!(obs["frame"], "blank", "{obs}");
        r.sim.set_plain_screen(false);
        // A sleeping phone's black frame is not "blank": screen_on says why.
        r.sim.set_screen_on(false);
        let shot = r.ok("android_screenshot", json!({})).await;
        assert_eq!((shot["frame_blank"].clone(), shot["screen_on"].clone()), (json!(false), json!(false)), "{shot}");
        assert_eq!(shot["frame"], "screen_off", "{shot}");
        let off = r.ok("android_observe", json!({})).await;
        assert_eq!(off["frame"], "screen_off", "{off}");
        // Issue 49: a picture of one colour is a thumbnail without marks in an observation (the screenshot, asked
        // for, keeps its size); a normal screen's is not.
        for o in [&obs, &off] {
            let side = o["width"].as_u64().unwrap().max(o["height"].as_u64().unwrap());
            assert!(side <= 32, "a {} frame comes as a thumbnail: {o}", o["frame"]);
            assert!(o["files"][0]["byte_size"].as_u64().unwrap() < 2000, "{o}");
            assert!(o["elements"].as_array().unwrap().iter().all(|e| e.get("marked").is_none()), "{o}");
        }
        assert!(normal["width"].as_u64().unwrap().max(normal["height"].as_u64().unwrap()) > 32, "{normal}");
        assert!(normal["elements"].as_array().unwrap().iter().any(|e| e["marked"] == true), "{normal}");
        assert!(shot["width"].as_u64().unwrap() > 32, "{shot}");
    })
    .await
    .expect("bounded");
}

/// Issue 36: the memory of a screen that never idles ("not asked again yet", 5 s) ends with the agent's own input:
/// the key that left the video may have made the screen idle, so the next dump asks uiautomator again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_input_forgets_that_the_screen_never_idled() {
    bounded(async {
        let mut r = shell_rig().await;
        let dumps = |sim: &SimPhone| sim.commands().iter().filter(|c| c.starts_with("uiautomator dump")).count();
        r.sim.set_never_idle(true, Duration::from_millis(300));
        let (code, msg) = r.err("android_ui_dump", json!({})).await;
        assert_eq!(code, "ui_unavailable", "{msg}");
        // The video stops by itself: within the memory's 5 s nothing asks the phone again (by design).
        r.sim.set_never_idle(false, Duration::from_millis(300));
        let before = dumps(&r.sim);
        let started = Instant::now();
        let (code, msg) = r.err("android_ui_dump", json!({})).await;
        assert!(code == "ui_unavailable" && msg.contains("not asked again yet"), "{code}: {msg}");
        assert_eq!(dumps(&r.sim), before, "answered from memory");
        // The agent's own input: the next dump asks the phone and reads the tree.
        r.ok("android_key", json!({"key": "HOME"})).await;
        let tree = r.ok("android_ui_dump", json!({})).await;
        assert!(started.elapsed() < Duration::from_secs(5), "within the memory's 5 s: {:?}", started.elapsed());
        assert_eq!(dumps(&r.sim), before + 1, "asked uiautomator again after the input");
        assert!(tree["count"].as_u64().unwrap() > 0, "{tree}");
    })
    .await
    .expect("bounded");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ui_that_never_idles_gives_the_picture_without_elements_and_element_actions_fail_clearly() {
    bounded(async {
        let mut r = shell_rig().await;
        // As on a real phone: uiautomator waits 10 s for an idle UI, then gives up on stderr with exit status 0.
        r.sim.set_never_idle(true, Duration::from_secs(10));
        let dumps = |sim: &SimPhone| sim.commands().iter().filter(|c| c.starts_with("uiautomator dump")).count();
        let before = dumps(&r.sim);
        let started = Instant::now();
        let obs = r.ok("android_observe", json!({})).await;
        let took = started.elapsed();
        assert!(took < Duration::from_secs(15), "observe took {took:?}");
        assert_eq!(obs["ui_available"], false, "{obs}");
        assert_eq!(obs["elements"], json!([]));
        assert!(obs["ui_unavailable_reason"].as_str().unwrap().contains("never became idle"), "{obs}");
        assert_eq!(obs["files"].as_array().map(Vec::len), Some(1), "the picture is there: {obs}");
        assert_eq!(dumps(&r.sim) - before, 1, "one uiautomator attempt, no /dev/tty fallback: {:?}", r.sim.commands());

        r.sim.clear_events();
        let (code, msg) = r.err("android_tap", json!({"element": {"text": "Increment"}})).await;
        assert_eq!(code, "ui_unavailable", "{msg}");
        let (code, _) = r.err("android_ui_dump", json!({})).await;
        assert_eq!(code, "ui_unavailable");
        assert_eq!(r.taps(), vec![]);
        // Coordinates still work.
        r.ok("android_tap", json!({"x": BUTTON.0, "y": BUTTON.1})).await;
        assert_eq!(r.sim.counter(), 1);
    })
    .await
    .expect("bounded");
}

/// Issue 48 item 6: `android_device_status` is the call an agent makes to learn the phone's state, so it reads the
/// phone, not the screen-state cache (1 s): a phone locked right after a status that found it unlocked says
/// `locked: true` at once. (The tap in between would also be refused by the gate reading its own fresh state.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_status_right_after_a_lock_says_locked() {
    bounded(async {
        let mut r = rig(None).await;
        for round in 0..3 {
            r.sim.set_lock(LockMode::None);
            let st = r.ok("android_device_status", json!({})).await;
            assert_eq!(st["locked"], json!(false), "round {round}: {st}");
            // Locked behind the connector's back (a person's power button, the screen timeout), a moment later.
            r.sim.set_lock(LockMode::Swipe);
            let st = r.ok("android_device_status", json!({})).await;
            assert_eq!(st["locked"], json!(true), "round {round}: the status served a cached state: {st}");
        }
    })
    .await
    .expect("timed out");
}
