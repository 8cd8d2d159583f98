//! Actions that say what they did (issue 19). Settle and effect: an input tool acks once the screen is still and
//! says what changed. Typing you can trust: `clear`, the field read back, `unicode_input`. Real connector binary →
//! real adb server → a simulated phone whose screen changes animate (`SimConfig::animation_ms`): frames differ until
//! the animation ends, as on a real phone, so settling is tested against motion.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::adb::*;
use common::*;
use serde_json::{json, Value};
use xagent_adb_connector::sim::{InputEvent, PhoneCosts, SimConfig, SimPhone};

/// The animation of a screen change on the test phone: long enough that a capture taken right after the input
/// is certainly mid-animation on a loaded machine.
const ANIMATION_MS: u32 = 1500;
/// The test phone's screen: small, because the simulated phone renders every frame in a debug build (a full-HD
/// frame takes about a second there, where a real phone's adbd takes tens of milliseconds); settling does not
/// depend on the size.
const SCREEN: (u32, u32) = (270, 600);
/// The sim home screen's "Demo" launcher icon: a tap opens com.xagent.demo, animated.
const DEMO_ICON: (i64, i64) = (135, 516);
/// The increment button: the counter changes, the app does not.
const BUTTON: (i64, i64) = (135, 245);
/// A point on no element of the home screen.
const NOTHING: (i64, i64) = (5, 325);

struct Rig {
    adb: Arc<AdbServer>,
    sim: SimPhone,
    srv: Server,
    c: Client,
    ch: String,
    _dir: tempfile::TempDir,
}

async fn rig(cfg: SimConfig) -> Rig {
    rig_with(cfg, &[]).await
}

/// `--phone-helper off`: the shell path, for a test of its own mechanics (each caller says which).
const SHELL: &[&str] = &["--phone-helper", "off"];

async fn rig_with(cfg: SimConfig, extra: &[&str]) -> Rig {
    let (adb, sim, _serial) = setup_with(cfg).await.expect("adb is required (apt-get install adb)");
    let dir = tempfile::tempdir().unwrap();
    let server = format!("127.0.0.1:{}", adb.port);
    let mut args = vec!["--adb-server", server.as_str()];
    args.extend_from_slice(extra);
    let srv = Server::start(dir.path(), &args, &[]);
    let mut c = ws(srv.addr, None).await;
    c.hello(None).await;
    let ch = c.bind(None).await;
    Rig { adb, sim, srv, c, ch, _dir: dir }
}

fn phone(animation_ms: u32) -> SimConfig {
    SimConfig { animation_ms, screen_width: SCREEN.0, screen_height: SCREEN.1, density: 120, ..SimConfig::default() }
}

impl Rig {
    async fn ok(&mut self, tool: &str, args: Value) -> Value {
        let ch = self.ch.clone();
        let ack = self.c.invoke_as_is(&ch, tool, args).await;
        assert_eq!(ack["type"], "tool.invoke.ack", "{ack}");
        assert!(ack.get("error").is_none() && ack["payload"].get("error").is_none(), "{tool} failed: {ack}");
        ack["payload"]["result"].clone()
    }

    /// A lossless screenshot's bytes (PNG of the full-size frame).
    async fn screen(&mut self) -> Vec<u8> {
        let r = self.ok("android_screenshot", json!({"format": "png", "max_side": 0})).await;
        let url = r["files"][0]["download_url"].as_str().expect("download_url").to_owned();
        let resp = get(self.srv.addr, &url).await;
        assert_eq!(resp.status, 200);
        resp.body
    }
}

async fn bounded<F: std::future::Future<Output = ()>>(f: F) {
    tokio::time::timeout(Duration::from_secs(120), f).await.expect("test took over 120 s");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_settled_tap_across_an_animated_launch_reports_the_new_app_and_a_still_screen() {
    bounded(async {
        let mut r = rig(phone(ANIMATION_MS)).await;
        let res = r.ok("android_tap", json!({"x": DEMO_ICON.0, "y": DEMO_ICON.1})).await;
        let e = &res["effect"];
        assert_eq!(e["foreground"], "com.xagent.demo/com.xagent.demo.MainActivity", "{res}");
        assert_eq!(e["foreground_changed"], true, "{res}");
        assert_eq!(e["screen_changed"], true, "{res}");
        assert_eq!(e["settled"], true, "{res}");
        assert_eq!(e["keyboard_shown"], false, "{res}");
        let ms = e["settle_ms"].as_u64().expect("settle_ms");
        // The ack waited for the animation: it cannot have settled while the screen was still sliding.
        assert!(ms >= u64::from(ANIMATION_MS) / 2, "settled after {ms} ms of a {ANIMATION_MS} ms animation: {res}");
        assert!(!r.sim.animating(), "acked while the screen still moved");
        // What the agent sees next is what stays: a screenshot right after equals one a second later.
        let now = r.screen().await;
        tokio::time::sleep(Duration::from_secs(1)).await;
        let later = r.screen().await;
        assert!(now == later, "the screen still changed after a settled ack");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn settle_false_acks_as_soon_as_the_input_is_in() {
    bounded(async {
        let mut r = rig(phone(4000)).await;
        let res = r.ok("android_tap", json!({"x": DEMO_ICON.0, "y": DEMO_ICON.1, "settle": false})).await;
        assert!(r.sim.animating(), "settle:false waited for the animation: {res}");
        assert!(res.get("effect").is_none(), "settle:false reports no effect: {res}");
        assert_eq!(r.sim.foreground(), "com.xagent.demo/com.xagent.demo.MainActivity", "the tap went through");

        // The card: exactly the input tools take the settle arguments and declare `effect`.
        let card = get(r.srv.addr, "/connector-card.json").await.json();
        let mut settling: Vec<&str> = card["tools"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|t| t["input_schema"]["properties"].get("settle").is_some())
            .inspect(|t| {
                assert!(t["input_schema"]["properties"].get("settle_timeout_ms").is_some(), "{t}");
                assert!(t["output_schema"]["properties"].get("effect").is_some(), "{t}");
            })
            .map(|t| t["tool_id"].as_str().unwrap())
            .collect();
        settling.sort_unstable();
        let mut want = SETTLING_TOOLS.to_vec();
        want.sort_unstable();
        assert_eq!(settling, want);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn effects_tell_a_change_in_place_from_nothing_at_all() {
    bounded(async {
        let mut r = rig(phone(ANIMATION_MS)).await;
        // The counter changes, the app stays.
        let res = r.ok("android_tap", json!({"x": BUTTON.0, "y": BUTTON.1})).await;
        let e = &res["effect"];
        assert_eq!(
            (&e["screen_changed"], &e["foreground_changed"], &e["settled"]),
            (&json!(true), &json!(false), &json!(true)),
            "{res}"
        );
        assert_eq!(e["foreground"], "com.android.launcher3/com.android.launcher3.uioverrides.QuickstepLauncher");
        // A tap on nothing: nothing changed, and the result says so.
        let res = r.ok("android_tap", json!({"x": NOTHING.0, "y": NOTHING.1})).await;
        let e = &res["effect"];
        assert_eq!(
            (&e["screen_changed"], &e["foreground_changed"], &e["settled"]),
            (&json!(false), &json!(false), &json!(true)),
            "{res}"
        );
        // A key that leaves the app: BACK from the demo app goes home, animated.
        r.ok("android_app_launch", json!({"package": "com.xagent.demo"})).await;
        let res = r.ok("android_key", json!({"key": "BACK", "settle_timeout_ms": 5000})).await;
        let e = &res["effect"];
        assert_eq!((&e["foreground_changed"], &e["settled"]), (&json!(true), &json!(true)), "{res}");
        assert!(!r.sim.animating());
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_screen_that_never_stops_reports_unsettled_at_the_timeout() {
    bounded(async {
        let mut r = rig(phone(8000)).await;
        let res = r.ok("android_tap", json!({"x": DEMO_ICON.0, "y": DEMO_ICON.1, "settle_timeout_ms": 1000})).await;
        let e = &res["effect"];
        assert_eq!(e["settled"], false, "{res}");
        let ms = e["settle_ms"].as_u64().unwrap();
        // It stops when the next frame would come after the timeout: within one interval (150 ms) of it.
        assert!((700..6000).contains(&ms), "stopped waiting at the timeout: {ms} ms");
        assert!(r.sim.animating(), "the ack came before the animation ended");
    })
    .await;
}

const FIELD: &str = "com.xagent.sim:id/input";
/// The demo app's sign-in screen's password field (`am start -n com.xagent.demo/.SignInActivity`).
const PASSWORD: &str = "com.xagent.demo:id/password";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typing_clears_on_request_and_reads_the_field_back() {
    bounded(async {
        let mut r = rig(phone(0)).await;
        let field = json!({"resource_id": FIELD});
        let res = r
            .ok("android_input_text", json!({"verify": true, "text": "hello", "element": field, "settle": false}))
            .await;
        assert_eq!((&res["field_text"], &res["verified"]), (&json!("hello"), &json!(true)), "{res}");
        // Typing appends: without clear the field holds both runs, and the read-back shows it.
        let res = r
            .ok("android_input_text", json!({"verify": true, "text": "hello", "element": field, "settle": false}))
            .await;
        assert_eq!((&res["field_text"], &res["verified"]), (&json!("hellohello"), &json!(true)), "{res}");
        // clear replaces what was there.
        let res = r
            .ok("android_input_text", json!({"verify": true, "text": "agent 100%", "element": field, "clear": true}))
            .await;
        assert_eq!((&res["field_text"], &res["verified"]), (&json!("agent 100%"), &json!(true)), "{res}");
        assert_eq!(r.sim.fields().0, "agent 100%", "the phone's field was replaced");
        assert!(res["effect"]["settled"] == true, "{res}");
        assert_eq!(res["effect"]["keyboard_shown"], true, "the field has the focus: {res}");
        // Something else typed in between (a person, autocorrect): the read-back shows the whole field.
        let (adb, serial) = (r.adb.clone(), r.sim.serial());
        blocking(move || adb.adb(&["-s", &serial, "shell", "input", "text", "X"])).await;
        let res = r.ok("android_input_text", json!({"verify": true, "text": "ok", "settle": false})).await;
        assert_eq!(res["field_text"], "agent 100%Xok");
        assert_eq!(res["verified"], true, "appended text ends the field: {res}");
        let res = r
            .ok(
                "android_input_text",
                json!({"verify": true, "text": "z", "element": field, "clear": true, "settle": false}),
            )
            .await;
        assert_eq!(res["field_text"], "z", "{res}");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_password_field_is_cleared_and_typed_but_never_read_back() {
    bounded(async {
        let mut r = rig(phone(0)).await;
        let signin = json!({"package": "com.xagent.demo", "activity": ".SignInActivity"});
        r.ok("android_app_launch", signin).await;
        let pw = json!({"resource_id": PASSWORD});
        r.ok("android_input_text", json!({"verify": true, "text": "hunter2", "element": pw, "settle": false})).await;
        let res =
            r.ok("android_input_text", json!({"verify": true, "text": "s3cret", "element": pw, "clear": true})).await;
        assert_eq!(r.sim.fields().1, "s3cret", "the password field was replaced");
        assert_eq!((&res["field_text"], &res["password"]), (&Value::Null, &json!(true)), "{res}");
        assert!(res["verified"].is_null(), "{res}");
        let text = res.to_string();
        assert!(!text.contains("s3cret") && !text.contains("hunter2"), "a password reached the result: {text}");
        for line in r.srv.logs() {
            assert!(!line.contains("s3cret") && !line.contains("hunter2"), "a password reached the log: {line}");
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn device_status_says_whether_unicode_can_be_typed() {
    bounded(async {
        // The shell path without ADB Keyboard: `input text` types ASCII only.
        let mut plain = rig_with(phone(0), SHELL).await;
        assert_eq!(plain.ok("android_device_status", json!({})).await["unicode_input"], false);
        // What users run: the phone helper types any text on the same phone, and says so.
        let mut helper = rig(phone(0)).await;
        assert_eq!(helper.ok("android_device_status", json!({})).await["unicode_input"], true);
        let args = json!({"verify": true, "text": "héllo 世界", "element": {"resource_id": FIELD}});
        let res = helper.ok("android_input_text", args).await;
        assert_eq!((&res["field_text"], &res["verified"]), (&json!("héllo 世界"), &json!(true)), "{res}");
        // The shell path with ADB Keyboard active (with the helper, its paste types: `method: "helper_paste"`).
        let mut ime = rig_with(SimConfig { adb_keyboard: true, ..phone(0) }, SHELL).await;
        assert_eq!(ime.ok("android_device_status", json!({})).await["unicode_input"], true);
        // And it is true: non-ASCII is typed and read back.
        let args = json!({"verify": true, "text": "héllo 世界", "element": {"resource_id": FIELD}});
        let res = ime.ok("android_input_text", args).await;
        assert_eq!(
            (&res["method"], &res["field_text"], &res["verified"]),
            (&json!("adb_keyboard"), &json!("héllo 世界"), &json!(true)),
            "{res}"
        );
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_phone_that_lies_about_its_frames_still_gets_the_tap_and_an_honest_effect() {
    bounded(async {
        // The shell path: every frame of the settle loop is a capture, and every capture lies.
        let mut r = rig_with(phone(0), SHELL).await;
        r.sim.lie_about_frames(xagent_adb_connector::sim::FrameLie::Truncated);
        let res = r.ok("android_tap", json!({"x": BUTTON.0, "y": BUTTON.1})).await;
        assert_eq!(r.sim.counter(), 1, "the tap went through");
        let e = &res["effect"];
        assert!(e["screen_changed"].is_null() && e["settled"] == false, "no frame, no claim: {res}");
        assert_eq!(e["foreground_changed"], false, "the state query still answers: {res}");
        // What users run: the helper's frames are no captures (they do not lie here), but a lying capture is never
        // compared with one of them: the tap lands and no claim rests on a lying frame.
        let mut r = rig(phone(0)).await;
        r.sim.lie_about_frames(xagent_adb_connector::sim::FrameLie::Truncated);
        let res = r.ok("android_tap", json!({"x": BUTTON.0, "y": BUTTON.1})).await;
        assert_eq!(r.sim.counter(), 1, "the tap went through");
        let e = &res["effect"];
        assert_ne!(e["screen_changed"], false, "the counter changed on screen; never claimed unchanged: {res}");
        assert_eq!(e["foreground_changed"], false, "the state query still answers: {res}");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_the_adb_keyboard_active_clear_is_one_broadcast() {
    bounded(async {
        let mut r = rig(SimConfig { adb_keyboard: true, ..phone(0) }).await;
        let (adb, serial) = (r.adb.clone(), r.sim.serial());
        blocking(move || adb.adb(&["-s", &serial, "shell", "ime", "set", "com.android.adbkeyboard/.AdbIME"])).await;
        let field = json!({"resource_id": FIELD});
        r.ok("android_input_text", json!({"verify": true, "text": "hello", "element": field, "settle": false})).await;
        r.sim.clear_events();
        let args = json!({"verify": true, "text": "x", "element": field, "clear": true, "settle": false});
        let res = r.ok("android_input_text", args).await;
        assert_eq!((&res["field_text"], &res["verified"]), (&json!("x"), &json!(true)), "{res}");
        assert!(r.sim.commands().iter().any(|c| c.contains("am broadcast -a ADB_CLEAR_TEXT")), "cleared by the IME");
        let dels = r.sim.events().iter().filter(|e| matches!(e, InputEvent::Key(k) if k == "KEYCODE_DEL")).count();
        assert_eq!(dels, 0, "no DEL keys when the IME clears the field");
    })
    .await;
}

/// Issue 36 item 8: settling on one phone does not starve another phone's screenshots. One channel's 16
/// concurrent settling taps on a phone whose screen never stops changing (each keeps capturing frames until its
/// settle timeout) used to fill the global capture permits' whole queue, so another agent's screenshot of another
/// phone waited behind all of them; each phone now has at most its share of the permits in the queue
/// (`tools::permits`). The figures (median of phone B's screenshot latency, idle and under A's settle load) are
/// printed; the bound is generous for a loaded debug build.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_phones_settling_taps_leave_another_phones_screenshots_alone() {
    bounded(async {
        let adb = Arc::new(blocking(AdbServer::start).await.expect("adb is required (apt-get install adb)"));
        // Phone A reads its display slowly (1 s a frame, as a phone's time, not the host's CPU): each of its settle
        // frames holds a permit that long, which is what phone B's captures used to wait for.
        let costs = PhoneCosts { display_read: Duration::from_millis(1000), ..PhoneCosts::default() };
        let busy_cfg = SimConfig { costs, ..phone(0) };
        let (busy, quiet) = (start_sim_with(busy_cfg).await, start_sim_with(phone(0)).await);
        for s in [busy.serial(), quiet.serial()] {
            let a = adb.clone();
            blocking(move || {
                a.connect(&s);
                a.wait_state(&s, "device");
            })
            .await;
        }
        let dir = tempfile::tempdir().unwrap();
        // The shell path: its settle frames are captures holding the capture permits this test is about (the
        // helper's frames hold none), counted as `framebuffer:` streams.
        let server = format!("127.0.0.1:{}", adb.port);
        let srv = Server::start(dir.path(), &["--adb-server", &server, "--phone-helper", "off"], &[]);
        let mut flood = ws(srv.addr, None).await;
        flood.hello(None).await;
        let flood_ch = flood.bind(Some(&busy.serial())).await;
        let mut other = ws(srv.addr, None).await;
        other.hello(None).await;
        let other_ch = other.bind(Some(&quiet.serial())).await;

        async fn median_screenshot(c: &mut Client, ch: &str, n: usize) -> Duration {
            let mut took = Vec::new();
            for _ in 0..n {
                let started = std::time::Instant::now();
                let a = c.invoke_as_is(ch, "android_screenshot", json!({"max_side": 300})).await;
                assert!(a.get("error").is_none(), "{a}");
                took.push(started.elapsed());
            }
            took.sort();
            took[n / 2]
        }
        median_screenshot(&mut other, &other_ch, 2).await; // warm: probes, caches
        let idle = median_screenshot(&mut other, &other_ch, 7).await;

        busy.set_ticking_screen(Some(Duration::from_millis(50)));
        let mut taps = Vec::new();
        for _ in 0..16 {
            let args =
                json!({"x": 10, "y": 10, "settle": true, "settle_timeout_ms": 10000, "connector_channel_id": flood_ch});
            taps.push(
                flood
                    .send("tool.invoke", Some(&flood_ch), json!({"tool_id": "android_tap", "arguments": args}))
                    .await
                    .1,
            );
        }
        // Every tap reached the phone: all 16 are in their settle loops (each keeps capturing until its 10 s) when
        // phone B is measured.
        let frames = |s: &SimPhone| s.commands().iter().filter(|c| c.as_str() == "framebuffer:").count();
        let deadline = std::time::Instant::now() + Duration::from_secs(9);
        while busy.events().len() < taps.len() {
            assert!(std::time::Instant::now() < deadline, "the taps never all ran: {:?}", busy.events());
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let before = frames(&busy);
        let loaded = median_screenshot(&mut other, &other_ch, 7).await;
        let settle_frames = frames(&busy) - before;
        eprintln!(
            "phone B's screenshot: median {idle:?} idle, {loaded:?} under phone A's 16 settling taps \
             ({settle_frames} settle frames of A meanwhile)"
        );
        let mut acks = 0;
        while acks < taps.len() {
            let v = flood.recv().await;
            if taps.iter().any(|t| v["request_id"] == json!(t)) {
                assert!(v.get("error").is_none(), "{v}");
                acks += 1;
            }
        }
        busy.set_ticking_screen(None);
        assert!(
            loaded < idle * 3 / 2 + Duration::from_millis(300),
            "phone B's screenshots waited behind phone A's settle frames: median {loaded:?} (idle {idle:?})"
        );
    })
    .await;
}

/// Issue 33 item 1: with `effect_tree`, the effect says what the tap changed in the UI tree — the counter's text,
/// with what it was — and its elements are targets: a tap by `{index, observation_id}` from the delta works.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn effect_tree_names_the_changed_counter_and_its_element_is_a_target() {
    bounded(async {
        let mut r = rig(phone(0)).await;
        let t = r.ok("android_tap", json!({"x": BUTTON.0, "y": BUTTON.1, "effect_tree": true})).await;
        let tree = &t["effect"]["tree"];
        assert_eq!(tree["counts"], json!({"appeared": 0, "disappeared": 0, "changed": 1}), "{t}");
        let changed = &tree["changed"][0];
        assert_eq!((changed["text"].clone(), changed["was"].clone()), (json!("Count: 1"), json!({"text": "Count: 0"})));
        assert!(tree["ms"].as_u64().is_some() && tree["observation_id"].as_str().is_some(), "{tree}");
        // The delta's element is a target of the next action.
        let again = r
            .ok(
                "android_tap",
                json!({"element": {"index": changed["index"], "observation_id": tree["observation_id"]}, "settle": false}),
            )
            .await;
        assert_eq!(again["element"]["text"], "Count: 1", "{again}");
        // `effect_tree: false`: no tree is read (its cost is the caller's choice; without the argument the helper's
        // tree comes unasked and the shell path's does not: `where_the_helper_reads_trees_the_delta_comes_unasked`).
        let plain = r.ok("android_tap", json!({"x": NOTHING.0, "y": NOTHING.1, "effect_tree": false})).await;
        assert!(plain["effect"].get("tree").is_none(), "{plain}");
        // A tap on nothing changes nothing: an empty delta, not a missing one.
        let none = r.ok("android_tap", json!({"x": NOTHING.0, "y": NOTHING.1, "effect_tree": true})).await;
        assert_eq!(none["effect"]["tree"]["counts"], json!({"appeared": 0, "disappeared": 0, "changed": 0}), "{none}");
    })
    .await;
}

/// Issue 33 item 1: where the phone helper reads the tree (tens of ms, no idle wait), an action's effect carries
/// the tree delta without being asked; `effect_tree: false` turns it off. On the shell path (`--phone-helper off`)
/// it stays opt-in: no tree unless asked, and asked it comes from uiautomator, covering the focused window.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn where_the_helper_reads_trees_the_delta_comes_unasked() {
    bounded(async {
        // `common::rig`'s calls pass `settle: false` unless told: these say `settle: true`.
        let mut r = common::rig::Rig::with(phone(0), &["--phone-helper", "auto"], None).await;
        let t = r.ok("android_tap", json!({"x": BUTTON.0, "y": BUTTON.1, "settle": true})).await;
        let tree = &t["effect"]["tree"];
        assert_eq!(tree["changed"][0]["text"], "Count: 1", "{t}");
        assert_eq!(tree["changed"][0]["was"], json!({"text": "Count: 0"}), "{t}");
        assert_eq!((&tree["source"], &tree["state"]), (&json!("helper"), &json!("ok")), "{tree}");
        assert!(tree["windows"].is_array() && tree["observation_id"].is_string(), "{tree}");
        let off =
            r.ok("android_tap", json!({"x": BUTTON.0, "y": BUTTON.1, "settle": true, "effect_tree": false})).await;
        assert!(off["effect"].get("tree").is_none(), "{off}");
        assert!(!r.sim.commands().iter().any(|c| c.contains("uiautomator")), "{:?}", r.sim.commands());

        let mut shell = common::rig::Rig::with(phone(0), &["--phone-helper", "off"], None).await;
        let plain = shell.ok("android_tap", json!({"x": BUTTON.0, "y": BUTTON.1, "settle": true})).await;
        assert!(plain["effect"].get("tree").is_none(), "{plain}");
        assert!(!shell.sim.commands().iter().any(|c| c.contains("uiautomator")), "no dump unasked");
        let asked =
            shell.ok("android_tap", json!({"x": BUTTON.0, "y": BUTTON.1, "settle": true, "effect_tree": true})).await;
        let tree = &asked["effect"]["tree"];
        assert_eq!(tree["changed"][0]["text"], "Count: 2", "{asked}");
        assert_eq!((&tree["source"], &tree["windows"]), (&json!("uiautomator"), &json!("focused")), "{tree}");
    })
    .await;
}

/// Issue 32: where the phone helper runs, settle waits for accessibility quiet (its `idle`) before it captures,
/// so a transition is not filmed frame by frame: across the same animated launch it reads the display fewer times
/// than the frame loop alone. Counted in the phone's command log: each frame is one `screencap` (the compressed
/// capture writes it to a private file, then reads it back in ranges).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_the_helper_settle_waits_for_quiet_and_reads_fewer_frames_across_an_animation() {
    bounded(async {
        let mut frames = Vec::new();
        for mode in ["off", "auto"] {
            let mut r = common::rig::Rig::with(phone(ANIMATION_MS), &["--phone-helper", mode], None).await;
            // The helper started and the capture path probed before the measured call.
            r.ok("android_tap", json!({"x": NOTHING.0, "y": NOTHING.1, "settle": true})).await;
            let c0 = r.sim.commands().len();
            let res = r
                .ok("android_tap", json!({"x": DEMO_ICON.0, "y": DEMO_ICON.1, "settle": true, "effect_tree": false}))
                .await;
            let e = &res["effect"];
            assert_eq!((&e["settled"], &e["foreground_changed"]), (&json!(true), &json!(true)), "{mode}: {res}");
            assert!(!r.sim.animating(), "{mode}: acked while the screen still moved");
            frames.push(r.sim.commands()[c0..].iter().filter(|c| c.contains("screencap")).count());
        }
        let (shell, helper) = (frames[0], frames[1]);
        eprintln!("display reads across a {ANIMATION_MS} ms launch: frame loop {shell}, helper's idle first {helper}");
        assert!(helper <= 3, "before + after quiet + its confirmation: {helper}");
        assert!(helper < shell, "idle first reads fewer frames: helper {helper}, frame loop {shell}");
    })
    .await;
}
