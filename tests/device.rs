//! The whole path: real connector binary → real adb server (Debian `adb`) → simulated phone speaking the ADB
//! transport protocol, all on loopback. Effects are asserted on the phone's own event log.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::adb::*;
use common::rig::Rig;
use common::*;
use serde_json::json;
use xagent_adb_connector::sim::{Fault, InputEvent, SimConfig};

/// adb server + sim + connector; hello, open, bind (pool semantics: no serial given).
async fn rig() -> Rig {
    rig_with(SimConfig::default()).await
}

async fn rig_with(cfg: SimConfig) -> Rig {
    let r = Rig::with(cfg, &[], None).await;
    let d = &r.bound;
    assert_eq!(d["connection"]["status"], "connected");
    assert!(d["tools"].as_array().unwrap().iter().all(|t| t["status"] == "available"));
    r
}

/// The shell path (`--phone-helper off`, and every fallback), for the tests of its own mechanics.
async fn shell_rig_with(cfg: SimConfig) -> Rig {
    Rig::with(cfg, &["--phone-helper", "off"], None).await
}

fn bounded<F: std::future::Future>(f: F) -> tokio::time::Timeout<F> {
    tokio::time::timeout(Duration::from_secs(90), f)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn observe_act_verify_through_the_real_adb_server() {
    observe_act_verify(false).await;
}

/// The same with the shell path (`--phone-helper off`): `input text` types a text in pieces.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn observe_act_verify_through_the_real_adb_server_on_the_shell_path() {
    observe_act_verify(true).await;
}

async fn observe_act_verify(shell: bool) {
    bounded(async {
        let mut r = if shell { shell_rig_with(SimConfig::default()).await } else { rig().await };
        let status = r.ok("android_device_status", json!({})).await;
        assert_eq!((status["screen_width"].as_u64(), status["screen_height"].as_u64()), (Some(1080), Some(2400)));
        assert_eq!(status["android_version"], "14");
        assert_eq!(status["foreground_package"], "com.android.launcher3");

        // Observe: find the button, act: tap its centre, verify: the counter reads 1 in the UI tree.
        let ui = r.ok("android_ui_dump", json!({})).await;
        let button =
            ui["elements"].as_array().unwrap().iter().find(|e| e["text"] == "Increment").expect("button").clone();
        assert_eq!(button["clickable"], true);
        let (x, y) = (button["center"][0].as_i64().unwrap(), button["center"][1].as_i64().unwrap());
        let tap = r.ok("android_tap", json!({"x": x, "y": y})).await;
        assert_eq!(tap, json!({"x": x, "y": y}));
        assert_eq!(r.sim.counter(), 1);
        let wait = r.ok("android_ui_wait", json!({"text": "Count: 1", "timeout_ms": 3000})).await;
        assert_eq!(wait["found"], true);
        let wait = r.invoke("android_ui_wait", json!({"text": "Count: 9", "timeout_ms": 500})).await;
        assert_eq!(error_code(&wait), "ui_wait_timeout");
        assert!(wait["error"]["message"].as_str().unwrap().contains("text=\"Count: 9\""), "{wait}");
        let gone = r.ok("android_ui_wait", json!({"text": "Count: 0", "gone": true, "timeout_ms": 500})).await;
        assert_eq!(gone["found"], true);

        r.ok("android_swipe", json!({"x1": 500, "y1": 1800, "x2": 500, "y2": 600, "duration_ms": 50})).await;
        let typed = r.ok("android_input_text", json!({"text": "it's 50%s off", "submit": true})).await;
        // Not asked to verify: nothing read back, and the result says so.
        let method = if shell { "input_text" } else { "helper_keys" };
        let want = json!({"typed_chars": 13, "submitted": true, "method": method, "read_back": false,
                          "verified": null});
        assert_eq!(typed, want);
        let args = json!({"text": "x", "verify": true});
        let typed = r.ok("android_input_text", args).await;
        // No field has the focus: nothing to read back, and the result says so rather than guess.
        assert_eq!(
            (&typed["read_back"], &typed["field_text"], &typed["verified"]),
            (&json!(true), &json!(null), &json!(null)),
            "{typed}"
        );
        assert!(typed["read_back_ms"].is_u64(), "what the read-back cost is stated: {typed}");
        r.ok("android_key", json!({"key": "BACK"})).await;
        r.ok("android_long_press", json!({"x": 300, "y": 400, "duration_ms": 900})).await;
        r.ok("android_key", json!({"key": "POWER", "long_press": true})).await;
        let events = r.sim.events();
        // `input text` cannot type `%s` (it means a space), so the shell path types the text in two pieces.
        let text = if shell {
            vec![InputEvent::Text("it's 50%".into()), InputEvent::Text("s off".into())]
        } else {
            vec![InputEvent::Text("it's 50%s off".into())]
        };
        let mut want = vec![
            InputEvent::Tap { x: x as i32, y: y as i32 },
            InputEvent::Swipe { x1: 500, y1: 1800, x2: 500, y2: 600, duration_ms: 50 },
        ];
        want.extend(text);
        assert_eq!(
            events,
            [
                want,
                vec![
                    InputEvent::Key("KEYCODE_ENTER".into()),
                    InputEvent::Text("x".into()),
                    InputEvent::Key("KEYCODE_BACK".into()),
                    InputEvent::Swipe { x1: 300, y1: 400, x2: 300, y2: 400, duration_ms: 900 },
                    InputEvent::Key("KEYCODE_POWER".into()),
                ],
            ]
            .concat(),
            "each action reached the phone exactly once, in order, text exactly as given"
        );

        let apps = r.ok("android_app_list", json!({"include_system": true})).await;
        assert!(apps["packages"].as_array().unwrap().contains(&json!("com.android.settings")));
        r.ok("android_app_launch", json!({"package": "com.android.settings"})).await;
        let status = r.ok("android_device_status", json!({})).await;
        assert_eq!(status["foreground_package"], "com.android.settings");
        r.ok("android_app_stop", json!({"package": "com.android.settings"})).await;
        r.ok("android_app_launch", json!({"package": "com.android.settings", "activity": ".Settings"})).await;
        assert_eq!(
            r.ok("android_device_status", json!({})).await["foreground_activity"],
            "com.android.settings.Settings"
        );
        r.ok("android_open_url", json!({"url": "https://example.com/a?q=1&b=2"})).await;
        assert_eq!(r.ok("android_device_status", json!({})).await["foreground_package"], "com.android.chrome");
        assert!(
            r.sim.commands().iter().any(|c| c.contains("-d 'https://example.com/a?q=1&b=2'")),
            "the URL went quoted"
        );
        let a = r.invoke("android_open_url", json!({"url": "javascript:alert(1)"})).await;
        assert_eq!(error_code(&a), "invalid_arguments");
        let a = r.invoke("android_app_launch", json!({"package": "com.example.missing"})).await;
        assert_eq!(error_code(&a), "tool_invoke_failed");
        assert!(a["error"]["message"].as_str().unwrap().contains("com.example.missing"));

        let log = r.ok("android_logcat", json!({"lines": 50})).await;
        assert!(log["count"].as_u64().unwrap() > 0);
    })
    .await
    .expect("test timed out");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn arguments_are_range_checked_and_injection_is_neutralised() {
    bounded(async {
        let mut r = rig().await;
        let a = r.invoke("android_tap", json!({"x": 1080, "y": 10})).await;
        assert_eq!(error_code(&a), "invalid_arguments");
        assert!(a["error"]["message"].as_str().unwrap().contains("1080×2400"), "{a}");
        // Rotated a quarter turn, the same point is on screen and (500, 2000) is not (once the rotation read by the
        // refused tap above has aged out of its 1 s cache: the turn happened behind the connector's back).
        r.sim_shell("settings put system user_rotation 1").await;
        tokio::time::sleep(Duration::from_millis(1200)).await;
        r.ok("android_tap", json!({"x": 2000, "y": 500})).await;
        let a = r.invoke("android_tap", json!({"x": 500, "y": 2000})).await;
        assert!(a["error"]["message"].as_str().unwrap().contains("2400×1080"), "{a}");
        let st = r.ok("android_device_status", json!({})).await;
        assert_eq!((st["orientation"].as_str(), st["screen_width"].as_u64()), (Some("landscape"), Some(2400)));
        r.sim_shell("settings put system user_rotation 0").await;
        r.sim.clear_events();
        for pkg in ["com.android.settings; reboot", "com.x$(reboot)", "com.x`id`", "x"] {
            let a = r.invoke("android_app_launch", json!({"package": pkg})).await;
            assert_eq!(error_code(&a), "invalid_arguments", "{pkg}");
        }
        let a = r.invoke("android_logcat", json!({"tag": "x;reboot"})).await;
        assert_eq!(error_code(&a), "invalid_arguments");
        // Non-ASCII without the ADB Keyboard IME: the helper (the default) types it; the shell path gives a clear,
        // specific error.
        let typed = r.ok("android_input_text", json!({"text": "你好"})).await;
        assert_eq!(r.sim.events().last(), Some(&InputEvent::Text("你好".into())), "{typed}");
        let mut shell = shell_rig_with(SimConfig::default()).await;
        let a = shell.invoke("android_input_text", json!({"text": "你好"})).await;
        assert_eq!(error_code(&a), "unsupported_text");
        assert!(a["error"]["message"].as_str().unwrap().contains("ADB Keyboard"));
        assert!(shell.sim.events().is_empty(), "{:?}", shell.sim.events());
        r.sim.clear_events();
        let a = r.invoke("android_input_text", json!({"text": "a\u{7}b"})).await;
        assert_eq!(error_code(&a), "invalid_arguments");
        // Shell metacharacters in text are typed literally, never executed.
        let evil = "a'; reboot; echo '$(id)`id`|&>";
        // With the helper (the default) and on the shell path, where the text goes into `input text`'s quoting.
        for (r, shell) in [(&mut r, false), (&mut shell, true)] {
            r.ok("android_input_text", json!({"text": evil})).await;
            assert_eq!(r.sim.events(), vec![InputEvent::Text(evil.into())], "shell path {shell}");
            let ran: Vec<String> = r.sim.commands().into_iter().filter(|c| c.contains("reboot")).collect();
            assert!(ran.iter().all(|c| c.starts_with("input text ")), "reboot only ever appeared quoted: {ran:?}");
            assert_eq!(ran.is_empty(), !shell, "the shell path typed it with `input text`: {ran:?}");
            assert!(r.sim.commands().iter().all(|c| !c.starts_with("reboot") && c != "id"));
        }
        assert_eq!(r.ok("android_device_status", json!({})).await["model"], "Pixel 7 (sim)");
    })
    .await
    .expect("test timed out");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn offline_and_back_pushes_descriptors_and_gates_tools() {
    bounded(async {
        let mut r = rig().await;
        r.sim.set_fault(Fault::Offline);
        // A push still under way from the binding (the same `connected` state) may come first on a loaded machine.
        let d = loop {
            let d = r.push().await;
            if d["connection"]["status"] != "connected" {
                break d;
            }
        };
        assert_eq!(d["connection"]["status"], "offline");
        assert!(d["tools"].as_array().unwrap().iter().all(|t| t["status"] == "unavailable"));
        let a = r.invoke("android_tap", json!({"x": 1, "y": 1})).await;
        assert_eq!(error_code(&a), "device_offline");

        r.sim.set_fault(Fault::None);
        let (adb, serial) = (r.adb.clone(), r.serial.clone());
        tokio::task::spawn_blocking(move || adb.connect(&serial)).await.unwrap();
        let d = loop {
            let d = r.push().await;
            if d["connection"]["status"] == "connected" {
                break d;
            }
        };
        assert!(d["tools"].as_array().unwrap().iter().all(|t| t["status"] == "available"));
        r.ok("android_tap", json!({"x": 10, "y": 10})).await;
        assert_eq!(r.sim.events(), vec![InputEvent::Tap { x: 10, y: 10 }], "binding intact after the outage");
    })
    .await
    .expect("test timed out");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hung_device_times_out_and_the_worker_recovers() {
    bounded(async {
        // The shell path: the sim's `Fault::Hang` holds shell commands; the helper's resident stream, opened
        // before the fault, still answers (a stalling helper is `resident_helper`'s `HelperMode::Late`).
        let mut r = shell_rig_with(SimConfig::default()).await;
        r.ok("android_device_status", json!({})).await; // caches the screen size
        r.sim.set_fault(Fault::Hang);
        let t0 = Instant::now();
        let a = r.invoke("android_tap", json!({"x": 5, "y": 5})).await;
        assert_eq!(error_code(&a), "device_timeout");
        let took = t0.elapsed();
        // android_tap's deadline is 15 s: room for an element target's UI dump (≤ 14 s, past uiautomator's own 10 s
        // idle wait) before the tap.
        assert!(took < Duration::from_secs(17), "answered at the 15 s deadline, took {took:?}");
        r.sim.set_fault(Fault::None);
        // The stuck call was hung up at its deadline (it never runs); the next one runs at once.
        let res = r.ok("android_tap", json!({"x": 6, "y": 6})).await;
        assert_eq!(res["x"], 6);
        let taps: Vec<InputEvent> = r.sim.events();
        assert_eq!(taps.last(), Some(&InputEvent::Tap { x: 6, y: 6 }));
        assert!(!taps.contains(&InputEvent::Tap { x: 5, y: 5 }), "the hung-up tap never ran: {taps:?}");
    })
    .await
    .expect("test timed out");
}

/// A phone whose adbd stops answering (the transport is up, the adb server is healthy, stream OPENs go
/// unanswered) is a `device_timeout` naming the phone and the command, not the adb server's fault.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_phone_that_stops_answering_is_a_device_timeout_naming_it() {
    bounded(async {
        // The shell path: `Fault::Unresponsive` leaves new stream OPENs unanswered, and this test names the shell
        // commands that hang; the helper's stream was opened before the fault and the sim keeps serving it.
        let mut r = shell_rig_with(SimConfig::default()).await;
        r.ok("android_device_status", json!({})).await; // caches the screen size
        r.sim.set_fault(Fault::Unresponsive);
        let a = r.invoke("android_input_text", json!({"text": "hunter2 secret"})).await;
        assert_eq!(error_code(&a), "device_timeout", "{a}");
        let msg = a["error"]["message"].as_str().unwrap();
        assert!(msg.contains(&r.serial), "names the phone: {msg}");
        assert!(msg.contains("input text"), "names the command: {msg}");
        assert!(!msg.contains("adb server did not answer"), "blames the adb server: {msg}");
        assert!(!msg.contains("hunter2"), "typed text leaked: {msg}");
        let a = r.invoke("android_tap", json!({"x": 5, "y": 5})).await;
        assert_eq!(error_code(&a), "device_timeout", "{a}");
        // With the screen gate (auto_wake) the tap's first command may be the screen-state query, which hangs too.
        let msg = a["error"]["message"].as_str().unwrap();
        assert!(msg.contains("input tap") || msg.contains("dumpsys power"), "names the hung command: {a}");
        assert!(msg.contains(&r.serial), "names the phone: {msg}");
        // The phone comes back: the next command runs.
        r.sim.set_fault(Fault::None);
        r.ok("android_tap", json!({"x": 6, "y": 6})).await;
        assert_eq!(r.sim.events().last(), Some(&InputEvent::Tap { x: 6, y: 6 }));
    })
    .await
    .expect("test timed out");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unauthorized_device_is_reported_and_refused() {
    bounded(async {
        let mut r = rig().await;
        r.sim.set_fault(Fault::Unauthorized);
        r.sim.drop_connections();
        let (adb, serial) = (r.adb.clone(), r.serial.clone());
        tokio::task::spawn_blocking(move || {
            let _ = adb.adb(&["disconnect", &serial]);
            let _ = adb.adb(&["connect", &serial]);
            adb.wait_state(&serial, "unauthorized");
        })
        .await
        .unwrap();
        let d = loop {
            let d = r.push().await;
            if d["tools"][0]["reason"].as_str().is_some_and(|s| s.contains("unauthorized")) {
                break d;
            }
        };
        assert_eq!(d["connection"]["status"], "offline");
        assert!(
            d["tools"]
                .as_array()
                .unwrap()
                .iter()
                .all(|t| t["status"] == "requires_reauth" && t["target_permission_state"] == "requires_reauth"),
            "the phone withdrew this host's authorisation: {d}"
        );
        let a = r.invoke("android_tap", json!({"x": 1, "y": 1})).await;
        assert_eq!(error_code(&a), "device_unauthorized");
    })
    .await
    .expect("test timed out");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn non_ascii_text_goes_through_the_adb_keyboard_ime() {
    bounded(async {
        // The shell path's own way to type non-ASCII (the helper types it itself, see `resident_helper`).
        let mut r = shell_rig_with(SimConfig { adb_keyboard: true, ..SimConfig::default() }).await;
        let typed = r.ok("android_input_text", json!({"text": "你好, wörld 👋 'quoted' $(id)"})).await;
        assert_eq!(typed["method"], "adb_keyboard");
        assert_eq!(r.sim.events(), vec![InputEvent::Text("你好, wörld 👋 'quoted' $(id)".into())]);
        // The previous IME is restored afterwards.
        let ime = r.sim.commands().into_iter().filter(|c| c.contains("ime set")).collect::<Vec<_>>();
        assert!(ime.last().unwrap().contains("LatinIME"), "{ime:?}");
    })
    .await
    .expect("test timed out");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn binding_an_unauthorised_phone_is_pending_until_the_prompt_is_accepted() {
    bounded(async {
        let adb = blocking(AdbServer::start).await.expect("adb");
        let adb = Arc::new(adb);
        let sim = start_sim().await;
        sim.set_fault(Fault::Unauthorized);
        let serial = sim.serial();
        let (a, s) = (adb.clone(), serial.clone());
        blocking(move || {
            let _ = a.adb(&["connect", &s]);
            a.wait_state(&s, "unauthorized");
        })
        .await;
        let dir = tempfile::tempdir().unwrap();
        let server = format!("127.0.0.1:{}", adb.port);
        let srv = Server::start(dir.path(), &["--adb-server", &server], &[]);
        let mut c = ws(srv.addr, None).await;
        c.hello(None).await;
        let (ch, _) = c.open(None).await;
        let start = loop {
            let a =
                c.request("auth.start", Some(&ch), json!({"flow_id": "adb_device", "input": {"serial": serial}})).await;
            if a["payload"]["status"] == "pending" {
                break a;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        };
        assert!(start["payload"]["message"].as_str().unwrap().contains("Allow USB debugging"));
        let sid = start["payload"]["auth_session_id"].clone();
        let st = c.request("auth.status", Some(&ch), json!({"flow_id": "adb_device", "auth_session_id": sid})).await;
        assert_eq!(st["payload"]["status"], "pending");
        let d = c.request("connection.descriptor.get", Some(&ch), json!({})).await;
        assert_eq!(d["payload"]["connection_descriptor"]["connection"]["status"], "authenticating");

        // The person taps "Allow": the device comes online and the next poll binds it.
        sim.set_fault(Fault::None);
        sim.drop_connections();
        let (a, s) = (adb.clone(), serial.clone());
        blocking(move || {
            let _ = a.adb(&["disconnect", &s]);
            a.connect(&s);
            a.wait_state(&s, "device");
        })
        .await;
        let deadline = Instant::now() + Duration::from_secs(10);
        let done = loop {
            let st =
                c.request("auth.status", Some(&ch), json!({"flow_id": "adb_device", "auth_session_id": sid})).await;
            if st["payload"]["status"] == "authenticated" {
                break st;
            }
            assert_eq!(st["payload"]["status"], "pending", "{st}");
            assert!(Instant::now() < deadline, "never authenticated");
            tokio::time::sleep(Duration::from_millis(300)).await;
        };
        assert_eq!(done["payload"]["connection_descriptor"]["connection"]["status"], "connected");
        let name = done["payload"]["connection_descriptor"]["target"]["display_name"].as_str().unwrap().to_owned();
        assert!(name.starts_with("Pixel 7") && name.contains("***"), "model + masked serial: {name}");
    })
    .await
    .expect("test timed out");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn side_effects_run_once_per_tool_call_id() {
    bounded(async {
        let mut r = rig().await;
        let ch = r.ch.clone();
        let tap = |call: &str, x: i64| {
            json!({"tool_id": "android_tap", "arguments": {"connector_channel_id": ch, "x": x, "y": 20},
                   "context": {"session_id": "s", "tool_call_id": call}})
        };
        // A repeat while the first runs waits for it; both get the same ack; the phone sees one tap.
        let (_, r1) = r.c.send("tool.invoke", Some(&ch), tap("call_a", 11)).await;
        let (_, r2) = r.c.send("tool.invoke", Some(&ch), tap("call_a", 11)).await;
        let mut acks = Vec::new();
        while acks.len() < 2 {
            let v = r.c.recv().await;
            if v["request_id"] == json!(r1) || v["request_id"] == json!(r2) {
                acks.push(v);
            }
        }
        // The same result, and the one that waited for the first says so (issue 35: `replayed: true`).
        let without_replayed = |v: &serde_json::Value| {
            let mut r = v["payload"]["result"].clone();
            r.as_object_mut().map(|o| o.remove("replayed"));
            r
        };
        assert_eq!(without_replayed(&acks[0]), without_replayed(&acks[1]));
        let replays = acks.iter().filter(|a| a["payload"]["result"]["replayed"] == true).count();
        assert_eq!(replays, 1, "exactly the repeat says it was replayed: {acks:?}");
        assert_ne!(acks[0]["request_id"], acks[1]["request_id"], "each ack answers its own request");
        // A repeat afterwards replays without touching the phone; the same id with other arguments is refused.
        let again = r.c.request("tool.invoke", Some(&ch), tap("call_a", 11)).await;
        assert_eq!(again["payload"]["result"]["x"], 11);
        let other = r.c.request("tool.invoke", Some(&ch), tap("call_a", 99)).await;
        assert_eq!(error_code(&other), "invalid_arguments");
        // Another call id is another call.
        r.c.request("tool.invoke", Some(&ch), tap("call_b", 12)).await;
        // Observations are never recorded (each reads fresh state).
        assert_eq!(r.sim.events(), vec![InputEvent::Tap { x: 11, y: 20 }, InputEvent::Tap { x: 12, y: 20 }]);

        // After the socket drops and xAgent reconnects, a retry of a finished call gets its recorded ack.
        let cid = {
            let d = r.c.request("connection.descriptor.get", Some(&ch), json!({})).await;
            d["payload"]["connection_descriptor"]["connection"]["connector_id"].as_str().unwrap().to_owned()
        };
        let addr = r.srv.addr;
        let mut c2 = ws(addr, None).await;
        drop(std::mem::replace(&mut r.c, ws(addr, None).await));
        c2.hello(Some(&cid)).await;
        assert_eq!(c2.open(Some(&ch)).await.0, ch);
        let replay = c2.request("tool.invoke", Some(&ch), tap("call_b", 12)).await;
        assert_eq!(replay["payload"]["result"]["x"], 12);
        assert_eq!(r.sim.events().len(), 2, "still exactly two taps");
    })
    .await
    .expect("test timed out");
}

/// The phone as a real one of `sdk` prints itself (focus lines in the display section from Android 10/11,
/// `SurfaceOrientation` / `InputDeviceOrientation: N` / `RotationN`, the IME line of its version): the connector
/// reads the foreground app, the rotation and the keyboard, and range-checks taps in the rotated space.
async fn formats_of(sdk: u32, release: &str) {
    let cfg = SimConfig { sdk, android_version: release.into(), ..SimConfig::default() };
    let mut r = rig_with(cfg).await;
    let st = r.ok("android_device_status", json!({})).await;
    assert_eq!(st["foreground_package"], "com.android.launcher3", "sdk {sdk}: {st}");
    assert_eq!(st["foreground_activity"], "com.android.launcher3.uioverrides.QuickstepLauncher", "sdk {sdk}: {st}");
    assert_eq!((st["rotation_degrees"].as_u64(), st["screen_width"].as_u64()), (Some(0), Some(1080)), "{st}");
    let obs = r.ok("android_observe", json!({"marks": false})).await;
    assert_eq!(obs["foreground_package"], "com.android.launcher3", "sdk {sdk}: observe");
    assert_eq!(obs["keyboard_shown"], false);

    // Landscape: a 1080×2400 phone is 2400×1080. Right after the turn the cached rotation (≤ 1 s) is still 0:
    // a point it would refuse makes the connector ask the phone again, so the tap is accepted at once.
    r.sim_shell("settings put system user_rotation 1").await;
    r.sim.clear_events();
    r.ok("android_tap", json!({"x": 2000, "y": 500})).await;
    assert_eq!(r.sim.events(), vec![InputEvent::Tap { x: 2000, y: 500 }], "sdk {sdk}: the tap lands where asked");
    let a = r.invoke("android_tap", json!({"x": 500, "y": 1500})).await;
    assert_eq!(error_code(&a), "invalid_arguments", "sdk {sdk}: {a}");
    assert!(a["error"]["message"].as_str().unwrap().contains("2400×1080"), "{a}");
    assert_eq!(r.sim.events().len(), 1, "a refused tap sends nothing");
    tokio::time::sleep(Duration::from_millis(1100)).await; // status reads the rotation through the 1 s cache
    let st = r.ok("android_device_status", json!({})).await;
    assert_eq!(st["rotation_degrees"], 90, "sdk {sdk}: {st}");
    assert_eq!((st["screen_width"].as_u64(), st["screen_height"].as_u64()), (Some(2400), Some(1080)), "{st}");
    assert_eq!(st["orientation"], "landscape");
    let obs = r.ok("android_observe", json!({"marks": false})).await;
    assert_eq!((obs["screen_width"].as_u64(), obs["rotation_degrees"].as_u64()), (Some(2400), Some(90)), "{obs}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn formats_of_android_9() {
    bounded(formats_of(28, "9")).await.expect("test timed out");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn formats_of_android_11() {
    bounded(formats_of(30, "11")).await.expect("test timed out");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn formats_of_android_13() {
    bounded(formats_of(33, "13")).await.expect("test timed out");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn formats_of_android_15() {
    bounded(formats_of(35, "15")).await.expect("test timed out");
}

/// Issue 36: `android_device_status` reports the orientation the phone has now, also right after a turn (the
/// rotation the control tools reuse for 1 s is not what an agent asking for the state wants).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn device_status_right_after_a_turn_reports_the_new_orientation() {
    bounded(async {
        let mut r = rig().await;
        let mut checked = 0;
        for (rotation, want, width) in [(1, "landscape", 2400), (0, "portrait", 1080), (1, "landscape", 2400)] {
            let before = r.ok("android_device_status", json!({})).await;
            let read = Instant::now();
            r.sim_shell(&format!("settings put system user_rotation {rotation}")).await;
            let st = r.ok("android_device_status", json!({})).await;
            assert_eq!(
                (st["orientation"].as_str(), st["rotation"].as_u64(), st["screen_width"].as_u64()),
                (Some(want), Some(rotation), Some(width)),
                "turned from {} {:?} after",
                before["orientation"],
                read.elapsed()
            );
            // Only a second read within the old cache's 1 s proves anything about it.
            checked += usize::from(read.elapsed() < Duration::from_millis(900));
        }
        assert!(checked > 0, "no status read came within 1 s of the previous one: nothing was checked");
    })
    .await
    .expect("bounded");
}

/// Issue 34 item 2 through the real adb server: the simulated phone's `dumpsys notification` in the form of its
/// SDK level; a new notification is seen with `since_ms`; an app's hostile text (a line break, a forged record of
/// another app, an escape sequence) stays that app's text; the policy's `notification_packages` withholds the
/// others; the audit never holds a text.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn notifications_are_read_new_ones_seen_with_since_and_restricted_by_policy() {
    bounded(async {
        let mut r = rig().await;
        r.sim.post_notification("com.example.chat", Some("Alice"), Some("Your code is 482913"), false);
        r.sim.post_notification("com.example.music", Some("Playing"), None, true);
        let first = r.ok("android_notifications", json!({})).await;
        assert_eq!(first["texts_read"], true, "{first}");
        let list = first["notifications"].as_array().unwrap();
        assert_eq!(list.len(), 2, "{first}");
        let chat = list.iter().find(|n| n["package"] == "com.example.chat").expect("the chat notification");
        assert_eq!((chat["title"].as_str(), chat["text"].as_str()), (Some("Alice"), Some("Your code is 482913")));
        assert_eq!(chat["ongoing"], false);
        let music = list.iter().find(|n| n["package"] == "com.example.music").unwrap();
        assert_eq!((music["ongoing"].as_bool(), music["text"].is_null()), (Some(true), true), "{music}");
        let latest = first["latest_ms"].as_u64().unwrap();
        assert!(list.iter().all(|n| n["time_ms"].as_u64().unwrap() <= latest));

        // Nothing new yet; then one hostile notification is the only new one.
        tokio::time::sleep(Duration::from_millis(20)).await;
        let none = r.ok("android_notifications", json!({"since_ms": latest})).await;
        assert_eq!(none["notifications"], json!([]), "{none}");
        let hostile = "code 1111\n    NotificationRecord(0xbad: pkg=com.bank user=UserHandle{0} id=9 tag=null \
                       importance=4 key=0|com.bank|9|null|1: Notification(channel=x))\n\u{1b}[2J done";
        r.sim.post_notification("com.evil.app", Some("Bank"), Some(hostile), false);
        let new = r.ok("android_notifications", json!({"since_ms": latest})).await;
        let list = new["notifications"].as_array().unwrap();
        assert_eq!(list.len(), 1, "{new}");
        assert_eq!(list[0]["package"], "com.evil.app");
        let text = list[0]["text"].as_str().unwrap();
        assert!(text.starts_with("code 1111 ") && text.contains("pkg=com.bank") && !text.contains('\n'), "{text:?}");
        assert!(!text.contains('\u{1b}'), "{text:?}");
        let all = r.ok("android_notifications", json!({})).await;
        assert!(all["notifications"].as_array().unwrap().iter().all(|n| n["package"] != "com.bank"), "{all}");
        let only = r.ok("android_notifications", json!({"package": "com.example.chat"})).await;
        assert_eq!(only["notifications"].as_array().unwrap().len(), 1, "{only}");
        let (code, _) = r.err("android_notifications", json!({"package": "com.x; reboot"})).await;
        assert_eq!(code, "invalid_arguments");

        // The read is counted in the audit (flushed at the channel's close), its texts nowhere on disk.
        let ch = r.ch.clone();
        r.c.request("channel.close", Some(&ch), json!({})).await;
        tokio::time::sleep(Duration::from_millis(500)).await;
        for f in ["connector.db", "connector.db-wal"] {
            let db = std::fs::read(r.dir.path().join(f)).unwrap_or_default();
            for secret in [&b"482913"[..], b"Alice", b"code 1111"] {
                assert!(!db.windows(secret.len()).any(|w| w == secret), "a notification text in {f}");
            }
        }
        let logs = r.srv.logs().join("\n");
        assert!(!logs.contains("482913"), "a notification text in the logs");

        // Android 16's format, and a policy that shows one app's notifications only.
        let cfg = SimConfig { sdk: 36, ..SimConfig::default() };
        let mut r = Rig::with(cfg, &[], Some(json!({"notification_packages": ["com.example.chat"]}))).await;
        r.sim.post_notification("com.example.chat", Some("Bob"), Some("See you"), false);
        r.sim.post_notification("com.example.bank", Some("Bank"), Some("Code 777"), true);
        r.sim.post_notification("com.example.nav", Some("Navigating"), Some("2 km"), true);
        let got = r.ok("android_notifications", json!({})).await;
        assert_eq!(got["withheld"], 2, "{got}");
        let list = got["notifications"].as_array().unwrap();
        assert_eq!(list.len(), 1, "{got}");
        assert_eq!((list[0]["title"].as_str(), list[0]["text"].as_str()), (Some("Bob"), Some("See you")));
        assert!(!got.to_string().contains("Code 777"));
        let cmds = r.sim.commands();
        assert!(cmds.iter().any(|c| c.contains("dumpsys notification --noredact")), "{cmds:?}");
    })
    .await
    .expect("test timed out");
}

/// Issue 34 item 3, the clipboard, through the real adb server with the phone helper on: "Hello, 世界 ✓" set then
/// read back (the simulated phone's clipboard holds it), a clip an app copied read, cleared to none; the text is
/// in no log and in no audit record (the audit redacts the `text` argument). Where the helper does not run
/// (`--phone-helper off`), the call says why and what would make it work, and nothing ran on
/// the phone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_clipboard_is_set_and_read_through_the_helper_and_says_why_without_it() {
    bounded(async {
        let mut r = Rig::with(SimConfig::default(), &["--phone-helper", "auto"], None).await;
        let hello = "Hello, 世界 ✓";
        assert_eq!(r.ok("android_clipboard", json!({"action": "set", "text": hello})).await, json!({"done": true}));
        assert_eq!(r.sim.clipboard().as_deref(), Some(hello));
        let got = r.ok("android_clipboard", json!({"action": "get"})).await;
        assert_eq!(got, json!({"text": hello, "cut": false}));
        r.sim.set_clipboard(Some("copied by an app: 482913"));
        let got = r.ok("android_clipboard", json!({"action": "get"})).await;
        assert_eq!(got["text"], "copied by an app: 482913", "{got}");
        assert_eq!(r.ok("android_clipboard", json!({"action": "clear"})).await, json!({"done": true}));
        assert_eq!(r.sim.clipboard(), None);
        assert_eq!(r.ok("android_clipboard", json!({"action": "get"})).await, json!({"text": null, "cut": false}));
        let (code, msg) = r.err("android_clipboard", json!({"action": "set"})).await;
        assert_eq!((code.as_str(), msg.contains("needs text")), ("invalid_arguments", true), "{msg}");
        // No shell command touched the clipboard: all of it went down the helper's stream.
        let cmds = r.sim.commands();
        assert!(!cmds.iter().any(|c| c.contains("clipboard")), "{cmds:?}");
        tokio::time::sleep(Duration::from_millis(300)).await;
        for f in ["connector.db", "connector.db-wal"] {
            let db = std::fs::read(r.dir.path().join(f)).unwrap_or_default();
            for secret in ["世界".as_bytes(), b"482913"] {
                assert!(!db.windows(secret.len()).any(|w| w == secret), "clipboard text in {f}");
            }
        }
        let logs = r.srv.logs().join("\n");
        assert!(!logs.contains("世界") && !logs.contains("482913"), "clipboard text in the logs");

        // The helper off: a clear error, and no command on the phone.
        let mut r = shell_rig_with(SimConfig::default()).await;
        let before = r.sim.commands().len();
        let (code, msg) = r.err("android_clipboard", json!({"action": "get"})).await;
        assert_eq!(code, "tool_invoke_failed", "{msg}");
        assert!(msg.contains("--phone-helper off") && msg.contains("cmd clipboard"), "{msg}");
        let (_, msg) = r.err("android_clipboard", json!({"action": "set", "text": "x"})).await;
        assert!(msg.contains("--phone-helper off"), "{msg}");
        assert_eq!(r.sim.commands().len(), before, "{:?}", &r.sim.commands()[before..]);
    })
    .await
    .expect("test timed out");
}

/// Issue 34 item 3, runtime permissions, through the real adb server: grant then list shows it granted, revoke
/// shows it not granted (`dumpsys package` in the simulated Android 14's format, `pm grant`/`pm revoke` changing
/// it); a permission that is not a runtime one is refused with the phone's words; the policy's
/// `permission_packages` refuses another app before anything runs on the phone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn permissions_are_granted_listed_and_revoked_and_refused_outside_policy() {
    bounded(async {
        let policy = json!({"permission_packages": ["com.xagent.demo"]});
        let mut r = Rig::with(SimConfig::default(), &[], Some(policy)).await;
        let camera = "android.permission.CAMERA";
        let state = |v: &serde_json::Value, name: &str| {
            v["permissions"].as_array().unwrap().iter().find(|p| p["name"] == name).map(|p| p["granted"].clone())
        };
        let list = r.ok("android_permission", json!({"action": "list", "package": "com.xagent.demo"})).await;
        assert_eq!(state(&list, camera), Some(json!(false)), "{list}");
        assert_eq!(list["permissions"].as_array().unwrap().len(), 4, "the demo app's runtime permissions: {list}");
        assert!(state(&list, "android.permission.INTERNET").is_none(), "an install permission is not listed");
        let granted = r
            .ok("android_permission", json!({"action": "grant", "package": "com.xagent.demo", "permission": camera}))
            .await;
        assert_eq!(granted, json!({"package": "com.xagent.demo", "permission": camera, "granted": true}));
        let list = r.ok("android_permission", json!({"action": "list", "package": "com.xagent.demo"})).await;
        assert_eq!(state(&list, camera), Some(json!(true)), "{list}");
        let flags = list["permissions"].as_array().unwrap()[0]["flags"].clone();
        assert_eq!(flags, json!(["USER_SENSITIVE_WHEN_GRANTED", "USER_SENSITIVE_WHEN_DENIED"]), "{list}");
        r.ok("android_permission", json!({"action": "revoke", "package": "com.xagent.demo", "permission": camera}))
            .await;
        let list = r.ok("android_permission", json!({"action": "list", "package": "com.xagent.demo"})).await;
        assert_eq!(state(&list, camera), Some(json!(false)), "{list}");

        // Not a runtime permission: the phone's refusal, in its words, without its stack frames.
        let internet = "android.permission.INTERNET";
        let (code, msg) = r
            .err("android_permission", json!({"action": "grant", "package": "com.xagent.demo", "permission": internet}))
            .await;
        assert_eq!(code, "tool_invoke_failed", "{msg}");
        assert!(
            msg.contains(
                "java.lang.SecurityException: Permission android.permission.INTERNET requested by com.xagent.demo is \
                 not a changeable permission type"
            ),
            "{msg}"
        );
        assert!(!msg.contains("\tat ") && !msg.contains('\n'), "{msg:?}");

        // Outside the policy: refused before the phone is asked anything.
        let before = r.sim.commands().len();
        for args in [
            json!({"action": "list", "package": "com.android.settings"}),
            json!({"action": "grant", "package": "com.android.settings", "permission": camera}),
        ] {
            let (code, msg) = r.err("android_permission", args).await;
            assert_eq!(code, "permission_denied", "{msg}");
            assert!(msg.contains("permission_packages"), "{msg}");
        }
        assert_eq!(r.sim.commands().len(), before, "{:?}", &r.sim.commands()[before..]);
    })
    .await
    .expect("test timed out");
}
