//! The resident phone helper through the real path (issue 32): the connector binary pushes the embedded dex over
//! sync, starts it with `app_process` on one shell v2 stream through the real adb server, and the simulated phone
//! speaks the helper protocol natively (`src/sim/helper.rs`). Each operation through it, each fallback to the shell
//! path (the helper cannot start, injection denied, UiAutomation busy, its stream killed), the stale clean-up and
//! `--phone-helper off`.

mod common;

use std::time::{Duration, Instant};

use common::adb::*;
use common::rig::Rig;
use serde_json::{json, Value};
use xagent_adb_connector::sim::helper::Mode;
use xagent_adb_connector::sim::{InputEvent, SimConfig};

/// A point on no element of the home screen.
const NOTHING: (i64, i64) = (100, 300);
/// The home screen's text field and its Increment button (1080 × 2400).
const FIELD: (i64, i64) = (540, 1272);
const INCREMENT: (i64, i64) = (540, 978);

const AUTO: &[&str] = &["--phone-helper", "auto"];

async fn bounded<F: std::future::Future<Output = ()>>(f: F) {
    tokio::time::timeout(Duration::from_secs(120), f).await.expect("test took over 120 s");
}

fn helper_cfg(mode: Mode) -> SimConfig {
    SimConfig { helper: mode, ..SimConfig::default() }
}

fn is_start(c: &str) -> bool {
    c.starts_with("CLASSPATH=/data/local/tmp/xagent-helper-") && c.contains(" app_process / xagent.Helper --owner=")
}

fn input_commands(cmds: &[String]) -> Vec<&String> {
    cmds.iter().filter(|c| c.starts_with("input ")).collect()
}

async fn status(r: &mut Rig) -> Value {
    r.ok("android_device_status", json!({})).await
}

/// A tap that lands on nothing, without settling.
fn tap() -> Value {
    json!({"x": NOTHING.0, "y": NOTHING.1, "settle": false})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inputs_go_through_the_helper_on_its_one_stream() {
    bounded(async {
        let mut r = Rig::with(SimConfig::default(), AUTO, None).await;
        r.ok("android_tap", tap()).await;
        let cmds = r.sim.commands();
        assert_eq!(cmds.iter().filter(|c| is_start(c)).count(), 1, "started once: {cmds:?}");
        assert!(input_commands(&cmds).is_empty(), "no `input` process: {cmds:?}");
        // The dex is on the phone under its hash, as the protocol page names it.
        let dex = r.sim.files_under("/data/local/tmp");
        assert_eq!(dex.len(), 1, "{dex:?}");
        let pushed = r.sim.read_file(&dex[0]).unwrap();
        assert!(pushed.starts_with(b"dex\n"), "{dex:?}");
        // Running as `ps` shows it.
        assert!(r.sim.processes().iter().any(|(_, a)| a.starts_with("app_process / xagent.Helper --owner=")));
        r.sim.clear_events();
        let (s0, c0) = (r.sim.streams(), r.sim.commands().len());
        r.ok("android_tap", json!({"x": INCREMENT.0, "y": INCREMENT.1, "settle": false})).await;
        r.ok("android_swipe", json!({"x1": 100, "y1": 300, "x2": 100, "y2": 200, "duration_ms": 50, "settle": false}))
            .await;
        r.ok("android_long_press", json!({"x": 100, "y": 300, "duration_ms": 400, "settle": false})).await;
        r.ok("android_key", json!({"key": "BACK", "settle": false})).await;
        let cmds = r.sim.commands()[c0..].to_vec();
        // Only the rotation read (reused for 1 s) may open a stream: every input went down the helper's.
        let rotation_reads = cmds.iter().filter(|c| c.starts_with("dumpsys input")).count() as u64;
        assert_eq!(r.sim.streams() - s0, rotation_reads, "no stream of their own: {cmds:?}");
        assert_eq!(cmds.len() as u64, rotation_reads, "{cmds:?}");
        assert_eq!(r.sim.counter(), 1, "the tap reached the button");
        assert_eq!(
            r.sim.events(),
            vec![
                InputEvent::Tap { x: INCREMENT.0 as i32, y: INCREMENT.1 as i32 },
                InputEvent::Swipe { x1: 100, y1: 300, x2: 100, y2: 200, duration_ms: 50 },
                InputEvent::Swipe { x1: 100, y1: 300, x2: 100, y2: 300, duration_ms: 400 },
                InputEvent::Key("KEYCODE_BACK".into()),
            ]
        );
        let st = status(&mut r).await;
        let h = &st["phone_helper"];
        assert_eq!((&h["state"], &h["version"]), (&json!("running"), &json!("4")), "{st}");
        assert!(h["answered"].as_u64().unwrap() >= 5, "{h}");
        assert!(h.get("fell_back").is_none(), "{h}");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn any_text_is_typed_and_read_back_without_the_adb_keyboard() {
    bounded(async {
        let mut r = Rig::with(SimConfig::default(), AUTO, None).await;
        assert_eq!(status(&mut r).await["unicode_input"], true, "the helper's paste types any script");
        let c0 = r.sim.commands().len();
        r.ok("android_tap", json!({"x": FIELD.0, "y": FIELD.1, "settle": false})).await;
        r.sim.set_clipboard(Some("the user's clip"));
        let text = "Hello, 世界 ✓";
        let res = r.ok("android_input_text", json!({"text": text, "verify": true, "settle": false})).await;
        assert_eq!((&res["method"], &res["clipboard"]), (&json!("helper_paste"), &json!("restored")), "{res}");
        assert_eq!((&res["field_text"], &res["verified"]), (&json!(text), &json!(true)), "{res}");
        assert_eq!(r.sim.fields().0, text);
        assert_eq!(r.sim.clipboard().as_deref(), Some("the user's clip"), "the previous clip is back");
        // ASCII goes as key events; the read-back came from the helper's tree, not uiautomator.
        let res = r.ok("android_input_text", json!({"text": "!", "submit": true, "settle": false})).await;
        assert_eq!(res["method"], "helper_keys", "{res}");
        assert_eq!(r.sim.fields().0, format!("{text}!"));
        assert_eq!(r.sim.events().last(), Some(&InputEvent::Key("KEYCODE_ENTER".into())));
        let cmds = r.sim.commands()[c0..].to_vec();
        assert!(
            !cmds.iter().any(|c| c.contains("uiautomator") || c.starts_with("input ") || c.contains("ime ")),
            "{cmds:?}"
        );
        let dump = r.ok("android_ui_dump", json!({})).await;
        assert_eq!(dump["tree"]["source"], "helper", "{dump}");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clip_that_cannot_be_put_back_is_reported() {
    bounded(async {
        let mut r = Rig::with(helper_cfg(Mode::ClipUnreadable), AUTO, None).await;
        r.ok("android_tap", json!({"x": FIELD.0, "y": FIELD.1, "settle": false})).await;
        let res = r.ok("android_input_text", json!({"text": "é", "settle": false})).await;
        assert_eq!((&res["method"], &res["clipboard"]), (&json!("helper_paste"), &json!("not_restored")), "{res}");
        assert_eq!(r.sim.fields().0, "é");
    })
    .await;
}

/// Issue 46 (item 4): a helper without the virtual key map (`text=no_key_map`) pastes ASCII too, as the protocol
/// says: the text goes to it, not to the shell's `input text` for good.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_key_map_ascii_is_pasted_by_the_helper() {
    bounded(async {
        let mut r = Rig::with(helper_cfg(Mode::NoKeyMap), AUTO, None).await;
        r.ok("android_tap", json!({"x": FIELD.0, "y": FIELD.1, "settle": false})).await;
        let res = r.ok("android_input_text", json!({"text": "hello", "settle": false})).await;
        assert_eq!((&res["method"], &res["clipboard"]), (&json!("helper_paste"), &json!("cleared")), "{res}");
        assert_eq!(r.sim.fields().0, "hello");
        let cmds = r.sim.commands();
        assert!(!cmds.iter().any(|c| c.starts_with("input ")), "no `input text`: {cmds:?}");
        let h = status(&mut r).await["phone_helper"].clone();
        assert!(h.get("fell_back").is_none(), "{h}");
    })
    .await;
}

/// Helper D4 (issue 46): on Samsung One UI 9–11 the paste may insert the clip that was there before ours while the
/// clipboard write "succeeded" (scrcpy #1986: "It pastes what was previously copied on the phone's clipboard
/// instead"). The helper cannot see it; the host reads every paste back and never reports unseen text as typed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paste_that_typed_the_previous_clip_is_not_reported_as_typed() {
    bounded(async {
        let mut r = Rig::with(helper_cfg(Mode::StalePaste), AUTO, None).await;
        r.ok("android_tap", json!({"x": FIELD.0, "y": FIELD.1, "settle": false})).await;
        r.sim.set_clipboard(Some("the user's clip"));
        // No `verify` asked: a paste is read back anyway.
        let res = r.ok("android_input_text", json!({"text": "Grüße", "settle": false})).await;
        assert_eq!((&res["method"], &res["clipboard"]), (&json!("helper_paste"), &json!("restored")), "{res}");
        assert_eq!((&res["read_back"], &res["verified"]), (&json!(true), &json!(false)), "{res}");
        assert_eq!(res["field_text"], "the user's clip", "{res}");
        assert!(res["warning"].as_str().unwrap().contains("not show the pasted text"), "{res}");
        // The operator hears of it too (issue 46 item 5): the phone's typed text is unverified.
        let h = status(&mut r).await["phone_helper"].clone();
        assert_eq!((&h["injection"], &h["unseen_pastes"]), (&json!("unverified"), &json!(1)), "{h}");
        assert_eq!(h["attention"][0]["problem"], "input_unverified", "{h}");
        let health = common::get(r.srv.addr, "/health").await.json();
        assert!(health["phone_helpers"][&r.serial].as_str().unwrap().contains("typed text unverified"), "{health}");
        // Where the paste did arrive, no warning.
        let mut r = Rig::with(SimConfig::default(), AUTO, None).await;
        r.ok("android_tap", json!({"x": FIELD.0, "y": FIELD.1, "settle": false})).await;
        let res = r.ok("android_input_text", json!({"text": "Grüße", "settle": false})).await;
        assert_eq!((&res["read_back"], &res["verified"]), (&json!(true), &json!(true)), "{res}");
        assert!(res.get("warning").is_none(), "{res}");
        assert_eq!(status(&mut r).await["phone_helper"]["injection"], "ok");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tree_is_read_on_a_screen_that_never_idles() {
    bounded(async {
        let mut r = Rig::with(SimConfig::default(), AUTO, None).await;
        r.sim.set_never_idle(true, Duration::from_secs(10));
        let t = Instant::now();
        let dump = r.ok("android_ui_dump", json!({})).await;
        assert!(t.elapsed() < Duration::from_secs(5), "no idle wait: {:?}", t.elapsed());
        assert_eq!(dump["tree"]["source"], "helper", "{dump}");
        let texts: Vec<&str> = dump["elements"].as_array().unwrap().iter().filter_map(|e| e["text"].as_str()).collect();
        assert!(texts.contains(&"Increment"), "{texts:?}");
        // An element action on that screen works too (it resolves on a fresh tree).
        r.ok("android_tap", json!({"element": {"text": "Increment"}, "settle": false})).await;
        assert_eq!(r.sim.counter(), 1);
        assert!(!r.sim.commands().iter().any(|c| c.contains("uiautomator")), "{:?}", r.sim.commands());
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_helper_that_cannot_start_leaves_every_operation_on_the_shell_path() {
    bounded(async {
        let mut r = Rig::with(helper_cfg(Mode::NoStart), AUTO, None).await;
        r.ok("android_tap", tap()).await;
        r.ok("android_tap", tap()).await;
        let cmds = r.sim.commands();
        assert_eq!(input_commands(&cmds).len(), 2, "{cmds:?}");
        assert_eq!(cmds.iter().filter(|c| is_start(c)).count(), 1, "tried once, not per call: {cmds:?}");
        let h = status(&mut r).await["phone_helper"].clone();
        assert_eq!(h["state"], "unavailable", "{h}");
        assert!(h["reason"].as_str().unwrap().contains("exited with status 1"), "{h}");
        assert_eq!(h["attention"][0]["problem"], "helper_unavailable", "{h}");
        let dump = r.ok("android_ui_dump", json!({})).await;
        assert_eq!(dump["tree"]["source"], "uiautomator", "{dump}");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_injection_falls_back_and_says_why() {
    bounded(async {
        let mut r = Rig::with(helper_cfg(Mode::Denied), AUTO, None).await;
        r.ok("android_tap", tap()).await;
        r.ok("android_key", json!({"key": "BACK", "settle": false})).await;
        let cmds = r.sim.commands();
        assert_eq!(input_commands(&cmds), vec!["input tap 100 300", "input keyevent KEYCODE_BACK"], "{cmds:?}");
        let st = status(&mut r).await;
        let h = &st["phone_helper"];
        assert_eq!(h["state"], "running", "the rest still works: {h}");
        for verb in ["tap", "key"] {
            assert!(h["fell_back"][verb].as_str().unwrap().contains("USB debugging (Security settings)"), "{h}");
        }
        // The screen state still comes from the helper.
        assert_eq!(st["screen_on"], true);
        assert!(!cmds.iter().any(|c| c.contains("dumpsys power")), "{cmds:?}");
        // `/health` carries the same in one line per phone, which `doctor` prints (and the wall shows).
        let health = common::get(r.srv.addr, "/health").await.json();
        let line = health["phone_helpers"][&r.serial].as_str().unwrap_or_default().to_owned();
        assert!(line.starts_with("running (helper 4); shell path for "), "{health}");
        assert!(line.contains("key (denied") && line.contains("tap (denied"), "{line}");
    })
    .await;
}

/// Issue 46 item 5: the operator is told which phone refuses injection and where Xiaomi's toggle is — in
/// `android_device_status`, `/health` (which `doctor` reads and warns from) and the wall's devices API. A
/// Redmi on Android 12 with "USB debugging (Security settings)" off: the helper's first event of a request waits
/// for the result there (D3), so the refusal is a `denied` answer (the field reports: scrcpy's README, "On some
/// devices (especially Xiaomi) … INJECT_EVENTS permission … USB debugging (Security settings)").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_operator_is_told_where_xiaomis_injection_toggle_is() {
    bounded(async {
        let cfg = SimConfig {
            helper: Mode::Denied,
            model: "Redmi Note 11 (sim)".into(),
            manufacturer: "Xiaomi".into(),
            sdk: 31,
            ..SimConfig::default()
        };
        let mut r = Rig::with(cfg, AUTO, None).await;
        let h = status(&mut r).await["phone_helper"].clone();
        assert_eq!(h["injection"], "untested", "no input yet: {h}");
        assert!(h.get("attention").is_none(), "{h}");
        r.ok("android_tap", tap()).await;
        let h = status(&mut r).await["phone_helper"].clone();
        assert_eq!(h["injection"], "refused", "{h}");
        let first = &h["attention"][0];
        assert_eq!(first["problem"], "injection_refused", "{h}");
        assert!(first["message"].as_str().unwrap().contains("tap answered `denied`"), "{h}");
        let action = first["action"].as_str().unwrap();
        assert!(
            action.contains("Developer options > \"USB debugging (Security settings)\"")
                && action.contains("Mi account"),
            "{action}"
        );
        // `/health`: one list per phone, which `doctor` reads.
        let health = common::get(r.srv.addr, "/health").await.json();
        assert_eq!(health["phone_helper_attention"][&r.serial][0]["problem"], "injection_refused", "{health}");
        // The wall's devices API: the card and the detail show it.
        let wall = common::get(r.srv.addr, "/api/v1/devices").await;
        assert_eq!(wall.status, 200, "{}", wall.text());
        let wall = wall.json();
        let dev = wall["devices"].as_array().unwrap().iter().find(|d| d["serial"] == json!(r.serial)).unwrap().clone();
        assert_eq!(dev["phone_helper_attention"][0]["problem"], "injection_refused", "{dev}");
        assert!(dev["phone_helper"].as_str().unwrap().contains("tap (denied"), "{dev}");
        // `doctor`, probing the running connector: a warning naming the phone, the toggle as the fix.
        let (addr, data, conf, adb) =
            (r.srv.addr, r.srv.data_dir.clone(), r.dir.path().join("no-installed-service"), r.adb.port);
        let out = tokio::task::spawn_blocking(move || {
            std::process::Command::new(env!("CARGO_BIN_EXE_xagent-adb-connector"))
                .args(["doctor", "--adb-server", &format!("127.0.0.1:{adb}"), "--listen", &addr.to_string()])
                .arg("--data-dir")
                .arg(&data)
                .env("XAGENT_ADB_CONFIG_DIR", &conf)
                .env_remove("XAGENT_CONNECTOR_API_KEY")
                .env_remove("XAGENT_ADB_API_KEY_FILE")
                .output()
                .unwrap()
        })
        .await
        .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        let warn = format!("  warn  phone helper on {}: the phone refuses injected input", r.serial);
        let at = text.find(&warn).unwrap_or_else(|| panic!("no warning for the phone:\n{text}"));
        let fix = text[at..].lines().nth(1).unwrap_or_default();
        assert!(
            fix.contains("fix: Xiaomi/Redmi/POCO: turn on Settings > Additional settings > Developer options"),
            "{text}"
        );
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_busy_uiautomation_falls_back_to_uiautomator_for_that_read() {
    bounded(async {
        let mut r = Rig::with(helper_cfg(Mode::TreeBusy), AUTO, None).await;
        let dump = r.ok("android_ui_dump", json!({})).await;
        assert_eq!(dump["tree"]["source"], "uiautomator", "{dump}");
        assert!(r.sim.commands().iter().any(|c| c.starts_with("uiautomator dump")));
        let h = status(&mut r).await["phone_helper"].clone();
        assert_eq!(h["last_fallback"]["verb"], "tree", "{h}");
        assert!(h["last_fallback"]["reason"].as_str().unwrap().contains("busy"), "{h}");
        assert!(h["fell_back"].get("tree").is_none(), "busy is one read's fallback, not for good: {h}");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_helper_is_started_once_more_then_left_alone() {
    bounded(async {
        let mut r = Rig::with(SimConfig::default(), AUTO, None).await;
        r.ok("android_tap", tap()).await;
        let kill = |r: &Rig| {
            let procs = r.sim.processes();
            assert_eq!(procs.len(), 1, "{procs:?}");
            format!("kill -9 {}", procs[0].0)
        };
        r.sim_shell(&kill(&r)).await;
        // Its stream died between two calls: the next one starts it again and goes through it.
        r.ok("android_tap", tap()).await;
        let cmds = r.sim.commands();
        assert_eq!(cmds.iter().filter(|c| is_start(c)).count(), 2, "{cmds:?}");
        assert!(input_commands(&cmds).is_empty(), "{cmds:?}");
        r.sim_shell(&kill(&r)).await;
        r.ok("android_tap", tap()).await;
        let cmds = r.sim.commands();
        assert_eq!(cmds.iter().filter(|c| is_start(c)).count(), 2, "not a third time: {cmds:?}");
        assert_eq!(input_commands(&cmds), vec!["input tap 100 300"], "{cmds:?}");
        let h = status(&mut r).await["phone_helper"].clone();
        assert_eq!(h["state"], "unavailable", "{h}");
        assert!(h["reason"].as_str().unwrap().contains("ended again"), "{h}");
    })
    .await;
}

/// Exactly once (issue 46): a helper that carries out a tap but answers after the host's request limit (1 s) must
/// not make the host send the same tap again by the `input` command. The call says the input may have been sent,
/// the counter went up once, and the next call starts the helper again rather than bypassing it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_late_helper_never_makes_one_tap_two() {
    bounded(async {
        let mut r = Rig::with(helper_cfg(Mode::Late), AUTO, None).await;
        assert_eq!(r.sim.counter(), 0);
        let ack = r.invoke("android_tap", json!({"x": INCREMENT.0, "y": INCREMENT.1, "settle": false})).await;
        assert_eq!(common::error_code(&ack), "device_timeout", "{ack} {:?}", r.sim.commands());
        assert_eq!(ack["error"]["details"]["input_may_have_been_sent"], true, "{ack}");
        // The helper's tap is on the phone; no second one came by the shell.
        let t = Instant::now();
        while r.sim.counter() == 0 && t.elapsed() < Duration::from_secs(10) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        // Past the late answer: whatever was going to land has landed.
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert_eq!(r.sim.counter(), 1, "the tap landed exactly once");
        let cmds = r.sim.commands();
        assert!(input_commands(&cmds).is_empty(), "no `input` fallback for a tap the helper took: {cmds:?}");
        // The next side effect restarts the helper (not bypassed): late again, the same answer, no `input`.
        let (code, _) = r.err("android_key", json!({"key": "BACK", "settle": false})).await;
        assert_eq!(code, "device_timeout");
        let cmds = r.sim.commands();
        assert!(input_commands(&cmds).is_empty(), "{cmds:?}");
        assert_eq!(cmds.iter().filter(|c| is_start(c)).count(), 2, "{cmds:?}");
        // Its starts used, the helper is left down: a new call, never given to it, goes the shell's way.
        r.ok("android_tap", json!({"x": INCREMENT.0, "y": INCREMENT.1, "settle": false})).await;
        assert_eq!(input_commands(&r.sim.commands()), vec!["input tap 540 978"]);
        assert_eq!(r.sim.counter(), 2);
        let h = status(&mut r).await["phone_helper"].clone();
        assert_eq!(h["state"], "unavailable", "{h}");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_an_earlier_run_left_is_cleaned_up() {
    bounded(async {
        let (adb, sim, serial) = setup_with(SimConfig::default()).await.expect("adb");
        let mut r = Rig::attach(adb.clone(), sim, serial.clone(), AUTO).await;
        // This connector's mark on its helpers' command lines (a hash of its host and data directory).
        let owner = xagent_adb_connector::device::helper::owner_tag(&r.dir.path().display().to_string());
        // An older dex, a helper this connector left running before a crash, another connector's helper (its adb
        // client holds the stream open), and a file that only looks similar.
        let old = "/data/local/tmp/xagent-helper-00000000deadbeef.dex";
        assert!(r.sim.write_file(old, b"dex\n038\0old"));
        assert!(r.sim.write_file("/data/local/tmp/notes.txt", b"keep"));
        let spawn = |tag: &str| {
            std::process::Command::new("adb")
                .args(["-P", &adb.port.to_string(), "-s", &serial, "shell"])
                .arg(format!("CLASSPATH={old} app_process / xagent.Helper --owner={tag}"))
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .unwrap()
        };
        let ours = spawn(&owner);
        let mut theirs = spawn("0123456789ab");
        let t = Instant::now();
        while r.sim.processes().len() < 2 {
            assert!(t.elapsed() < Duration::from_secs(10), "the stale helpers never started");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let pid_of = |r: &Rig, tag: &str| r.sim.processes().iter().find(|(_, a)| a.ends_with(tag)).map(|p| p.0);
        let (our_pid, their_pid) = (pid_of(&r, &owner).unwrap(), pid_of(&r, "0123456789ab").unwrap());
        r.ok("android_tap", tap()).await;
        let procs = r.sim.processes();
        assert_eq!(procs.len(), 2, "ours replaced, theirs left running: {procs:?} {:?}", r.sim.commands());
        assert!(procs.iter().any(|p| p.0 == their_pid), "{procs:?}");
        assert!(procs.iter().all(|p| p.0 != our_pid), "{procs:?}");
        // The other connector's helper may be using the old dex: kept while it runs.
        assert!(r.sim.files_under("/data/local/tmp").contains(&old.to_owned()));
        let code = |mut c: std::process::Child| {
            tokio::task::spawn_blocking(move || {
                let _ = c.stdin.take();
                c.wait().unwrap().code()
            })
        };
        assert_eq!(code(ours).await.unwrap(), Some(137), "our stale helper was killed");
        // The other connector ends its helper; ours is killed (a crash): the next start removes the old dex.
        let _ = theirs.stdin.take();
        let _ = code(theirs).await;
        let mine = r.sim.processes().into_iter().find(|(_, a)| a.ends_with(&owner)).expect("ours runs").0;
        r.sim_shell(&format!("kill -9 {mine}")).await;
        r.ok("android_tap", tap()).await;
        let mut files = r.sim.files_under("/data/local/tmp");
        files.sort();
        assert_eq!(files.len(), 2, "{files:?}");
        assert!(
            files.contains(&"/data/local/tmp/notes.txt".to_owned()) && !files.contains(&old.to_owned()),
            "{files:?}"
        );
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn off_and_old_phones_use_the_shell_path() {
    bounded(async {
        for (cfg, flags, state) in [
            (SimConfig::default(), &["--phone-helper", "off"][..], "off"),
            (SimConfig { sdk: 25, android_version: "7.1".into(), ..SimConfig::default() }, AUTO, "unavailable"),
        ] {
            let mut r = Rig::with(cfg, flags, None).await;
            r.ok("android_tap", tap()).await;
            let cmds = r.sim.commands();
            assert_eq!(input_commands(&cmds), vec!["input tap 100 300"], "{cmds:?}");
            assert!(!cmds.iter().any(|c| is_start(c) || c.starts_with("ps ")), "{cmds:?}");
            assert!(r.sim.files_under("/data/local/tmp").is_empty());
            let h = status(&mut r).await["phone_helper"].clone();
            assert_eq!(h["state"], state, "{h}");
        }
    })
    .await;
}

/// The observed element with this text.
fn element<'a>(res: &'a Value, text: &str) -> &'a Value {
    let els = res["elements"].as_array().unwrap_or_else(|| panic!("no elements: {res}"));
    els.iter().find(|e| e["text"] == text).unwrap_or_else(|| panic!("no {text:?} in {res}"))
}

fn texts(res: &Value) -> Vec<&str> {
    res["elements"].as_array().unwrap().iter().filter_map(|e| e["text"].as_str()).collect()
}

/// Issue 33 items 2 and 5: a runtime-permission prompt floating over the app. The helper's tree has both windows,
/// the prompt's named a dialog of the permission controller and the app's below it, each element saying which it is
/// in; the prompt's Allow from the observation is a target. uiautomator (the helper off) gives the focused window
/// only — the prompt alone — and says so (`windows: "focused"`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_permission_prompt_over_the_app_is_a_dialog_window_and_its_allow_is_a_target() {
    bounded(async {
        let mut r = Rig::with(SimConfig::default(), AUTO, None).await;
        r.sim.show_permission_prompt("Allow Sim Home to send you notifications?");
        let obs = r.ok("android_observe", json!({})).await;
        let tree = &obs["tree"];
        assert_eq!((&tree["source"], &tree["state"]), (&json!("helper"), &json!("ok")), "{tree}");
        let windows = tree["windows"].as_array().unwrap_or_else(|| panic!("{tree}"));
        assert_eq!(windows.len(), 2, "{tree}");
        assert_eq!(
            (&windows[0]["type"], &windows[0]["package"], &windows[0]["focused"]),
            (&json!("dialog"), &json!("com.google.android.permissioncontroller"), &json!(true)),
            "{tree}"
        );
        assert_eq!(
            (&windows[1]["type"], &windows[1]["package"]),
            (&json!("application"), &json!("com.android.launcher3"))
        );
        let allow = element(&obs, "Allow").clone();
        assert_eq!(allow["resource_id"], "com.android.permissioncontroller:id/permission_allow_button");
        assert_eq!((&allow["window"], &element(&obs, "Increment")["window"]), (&json!(0), &json!(1)), "{obs}");
        // The prompt is modal: the agent taps its Allow, by the observation.
        let oid = obs["observation_id"].clone();
        r.ok("android_tap", json!({"element": {"index": allow["index"], "observation_id": oid}, "settle": false}))
            .await;
        assert_eq!(r.sim.clicks(), vec!["Allow"]);
        assert!(!r.sim.permission_prompt_shown());
        let after = r.ok("android_ui_dump", json!({})).await;
        assert_eq!(after["tree"]["windows"].as_array().map(Vec::len), Some(1), "{after}");

        // uiautomator: the prompt alone, and `windows: "focused"` says nothing else is known.
        let mut off = Rig::with(SimConfig::default(), &["--phone-helper", "off"], None).await;
        off.sim.show_permission_prompt("Allow Sim Home to send you notifications?");
        let dump = off.ok("android_ui_dump", json!({})).await;
        assert_eq!(dump["tree"], json!({"source": "uiautomator", "windows": "focused", "state": "ok"}), "{dump}");
        let seen = texts(&dump);
        assert!(seen.contains(&"Allow") && !seen.contains(&"Increment"), "the focused window only: {seen:?}");
        assert!(dump["elements"].as_array().unwrap().iter().all(|e| e.get("window").is_none()), "{dump}");
        let allow = element(&dump, "Allow").clone();
        let oid = dump["observation_id"].clone();
        off.ok("android_tap", json!({"element": {"index": allow["index"], "observation_id": oid}, "settle": false}))
            .await;
        assert_eq!(off.sim.clicks(), vec!["Allow"]);
    })
    .await;
}

/// Issue 33 item 5: a focused text field brings up the keyboard, an input method window of its own in the
/// helper's tree (above the app's); uiautomator's dump of the same screen has the app's window only.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_keyboard_is_a_window_of_its_own_in_the_helpers_tree() {
    bounded(async {
        let mut r = Rig::with(SimConfig::default(), AUTO, None).await;
        r.ok("android_tap", json!({"x": FIELD.0, "y": FIELD.1, "settle": false})).await;
        let dump = r.ok("android_ui_dump", json!({})).await;
        let windows = dump["tree"]["windows"].as_array().unwrap_or_else(|| panic!("{dump}")).clone();
        let kinds: Vec<&str> = windows.iter().filter_map(|w| w["type"].as_str()).collect();
        assert_eq!(kinds, ["input_method", "application"], "{dump}");
        assert_eq!(windows[0]["package"], "com.google.android.inputmethod.latin");
        let keys: Vec<&Value> = dump["elements"].as_array().unwrap().iter().filter(|e| e["window"] == 0).collect();
        assert!(keys.iter().any(|k| k["content_desc"] == "q"), "{keys:?}");
        // Typing still goes to the app's field, the keyboard's keys are not in the way of the app's elements.
        r.ok("android_input_text", json!({"text": "hi", "settle": false})).await;
        assert_eq!(r.sim.fields().0, "hi");
    })
    .await;
}

/// Issue 33 item 2: never an empty element list presented as success. A window with no views yet is `empty` with a
/// reason; a screen that never idles gives uiautomator no tree: `unavailable` with its reason, in observe's result
/// and in ui_dump's error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_empty_or_missing_tree_says_so() {
    bounded(async {
        let mut r = Rig::with(SimConfig::default(), AUTO, None).await;
        r.sim.set_app_loading(true);
        let dump = r.ok("android_ui_dump", json!({})).await;
        assert_eq!(dump["count"], 0, "{dump}");
        let tree = &dump["tree"];
        assert_eq!((&tree["source"], &tree["state"]), (&json!("helper"), &json!("empty")), "{tree}");
        assert!(tree["reason"].as_str().unwrap().contains("still be loading"), "{tree}");
        let obs = r.ok("android_observe", json!({})).await;
        assert_eq!(obs["tree"]["state"], "empty", "{obs}");
        assert!(obs["hint"].as_str().unwrap().contains("the UI tree is empty"), "{obs}");
        // Screen off: the reason says so, and what to do.
        r.sim.set_screen_on(false);
        let obs = r.ok("android_observe", json!({})).await;
        assert!(obs["tree"]["reason"].as_str().unwrap().contains("android_wake"), "{obs}");

        let mut off = Rig::with(SimConfig::default(), &["--phone-helper", "off"], None).await;
        off.sim.set_never_idle(true, Duration::from_millis(300));
        let obs = off.ok("android_observe", json!({})).await;
        let tree = &obs["tree"];
        assert_eq!((&tree["source"], &tree["state"]), (&json!("uiautomator"), &json!("unavailable")), "{tree}");
        assert!(tree["reason"].as_str().unwrap().contains("never became idle"), "{tree}");
        let err = off.invoke("android_ui_dump", json!({})).await;
        let details = &err["error"]["details"];
        assert_eq!(details["tree"]["state"], "unavailable", "{err}");
    })
    .await;
}

/// Issue 32 item 2: the rotation and the display size come from the helper's `screen` (the display service, on its
/// open stream) — in `android_device_status` and in the coordinate check of a tap — instead of `dumpsys input` and
/// `wm size` round trips; without the helper those are still asked, and say the same.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rotation_and_display_size_come_from_the_helpers_screen() {
    bounded(async {
        for (flags, helper) in [(AUTO, true), (&["--phone-helper", "off"][..], false)] {
            let mut r = Rig::with(SimConfig::default(), flags, None).await;
            r.sim_shell("settings put system user_rotation 1").await;
            let c0 = r.sim.commands().len();
            let st = status(&mut r).await;
            assert_eq!((&st["rotation"], &st["orientation"]), (&json!(1), &json!("landscape")), "{st}");
            assert_eq!((&st["screen_width"], &st["screen_height"]), (&json!(2400), &json!(1080)), "{st}");
            // A point that exists only in landscape: checked against the rotation read now.
            r.ok("android_tap", json!({"x": 2000, "y": 500, "settle": false})).await;
            let cmds = r.sim.commands()[c0..].to_vec();
            let asked = cmds.iter().any(|c| c.starts_with("dumpsys input") || c.starts_with("wm size"));
            assert_eq!(asked, !helper, "helper {helper}: {cmds:?}");
        }
    })
    .await;
}

/// A tool called as given, the connector's defaults applying (`settle` on): its result.
async fn as_is(r: &mut Rig, tool: &str, args: Value) -> Value {
    let ch = r.ch.clone();
    let ack = r.c.invoke_as_is(&ch, tool, args).await;
    assert!(ack["type"] == "tool.invoke.ack" && ack.get("error").is_none(), "{tool} failed: {ack}");
    ack["payload"]["result"].clone()
}

/// A settled tap once the helper runs: settle's frames are the helper's `frame` (the display averaged on the phone,
/// one request on the helper's stream), not a `screencap` each — and they still see what the tap changed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn settle_reads_its_frames_through_the_helper() {
    bounded(async {
        let mut r = Rig::with(SimConfig::default(), AUTO, None).await;
        r.ok("android_tap", tap()).await;
        eprintln!("DEBUG {}", status(&mut r).await["phone_helper"]);
        let (s0, c0) = (r.sim.streams(), r.sim.commands().len());
        let still = as_is(&mut r, "android_tap", json!({"x": NOTHING.0, "y": NOTHING.1})).await;
        let e = &still["effect"];
        assert_eq!((&e["settled"], &e["screen_changed"]), (&json!(true), &json!(false)), "{still}");
        let moved = as_is(&mut r, "android_tap", json!({"x": INCREMENT.0, "y": INCREMENT.1})).await;
        let e = &moved["effect"];
        assert_eq!((&e["settled"], &e["screen_changed"]), (&json!(true), &json!(true)), "{moved}");
        assert_eq!(r.sim.counter(), 1);
        let cmds = r.sim.commands()[c0..].to_vec();
        assert!(!cmds.iter().any(|c| c.contains("screencap") || c == "framebuffer:"), "no capture: {cmds:?}");
        // What is left on streams of their own: the foreground/keyboard reads beside each frame.
        let state_reads = cmds.iter().filter(|c| c.contains("dumpsys")).count() as u64;
        assert_eq!(r.sim.streams() - s0, state_reads, "{cmds:?}");
        let h = status(&mut r).await["phone_helper"].clone();
        assert!(h.get("fell_back").is_none(), "{h}");
    })
    .await;
}

/// A helper without a screenshot call (`frame=no_screenshot_api`): settle captures with screencap as before, and the
/// status says the frame fell back and why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn settle_captures_with_screencap_where_the_helper_cannot_read_the_display() {
    bounded(async {
        let mut r = Rig::with(helper_cfg(Mode::Unavailable), AUTO, None).await;
        r.ok("android_tap", tap()).await;
        let c0 = r.sim.commands().len();
        let still = as_is(&mut r, "android_tap", json!({"x": NOTHING.0, "y": NOTHING.1})).await;
        let e = &still["effect"];
        assert_eq!((&e["settled"], &e["screen_changed"]), (&json!(true), &json!(false)), "{still}");
        let cmds = r.sim.commands()[c0..].to_vec();
        assert!(cmds.iter().any(|c| c.contains("screencap")), "{cmds:?}");
        let h = status(&mut r).await["phone_helper"].clone();
        assert!(h["fell_back"]["frame"].as_str().is_some_and(|w| w.contains("no_screenshot_api")), "{h}");
    })
    .await;
}
