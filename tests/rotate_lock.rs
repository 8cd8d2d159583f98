//! Issue 49 item 6: `android_rotate` (the two rotation settings, recorded as lease conditions and put back at
//! release) and `android_lock` (screen off + lock screen). Real connector binary → real adb server → simulated
//! phone, whose window manager derives the display's rotation from `accelerometer_rotation` / `user_rotation` as
//! AOSP's does (`src/sim/commands/settings.rs`).

mod common;

use std::time::{Duration, Instant};

use common::rig::Rig;
use serde_json::json;
use xagent_adb_connector::sim::ui::LockMode;
use xagent_adb_connector::sim::SimConfig;

fn bounded<F: std::future::Future>(f: F) -> tokio::time::Timeout<F> {
    tokio::time::timeout(Duration::from_secs(180), f)
}

/// Waits (bounded) until the phone's rotation settings are `(accelerometer_rotation, user_rotation)`.
async fn wait_settings(r: &Rig, want: (Option<&str>, Option<&str>), what: &str) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let now = (r.sim.setting("system", "accelerometer_rotation"), r.sim.setting("system", "user_rotation"));
        if (now.0.as_deref(), now.1.as_deref()) == want {
            return;
        }
        assert!(Instant::now() < deadline, "{what}: the settings are {now:?}, not {want:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Landscape: the display turns, observe reports the landscape geometry (screen and image wider than tall, 90°);
/// the release (auth.logout) puts the phone's own settings back and the display is portrait again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn landscape_is_observed_and_release_restores_portrait() {
    bounded(async {
        let mut r = Rig::with(SimConfig::default(), &[], None).await;
        let before = r.ok("android_observe", json!({})).await;
        assert_eq!(before["orientation"], "portrait", "{before}");
        let (sw, sh) = (before["screen_width"].as_u64().unwrap(), before["screen_height"].as_u64().unwrap());
        assert!(sh > sw, "{before}");

        let res = r.ok("android_rotate", json!({"orientation": "landscape", "settle": true})).await;
        assert_eq!(res["orientation"], "landscape", "{res}");
        assert_eq!(res["rotation_degrees"], 90, "{res}");
        assert_eq!(res["applied"], true, "{res}");
        assert_eq!((res["width"].as_u64(), res["height"].as_u64()), (Some(sh), Some(sw)), "{res}");
        assert!(res["effect"].is_object(), "{res}");
        wait_settings(&r, (Some("0"), Some("1")), "rotated").await;

        let obs = r.ok("android_observe", json!({"picture": true})).await;
        assert_eq!(obs["orientation"], "landscape", "{obs}");
        assert_eq!(obs["rotation_degrees"], 90, "{obs}");
        assert_eq!((obs["screen_width"].as_u64(), obs["screen_height"].as_u64()), (Some(sh), Some(sw)), "{obs}");
        assert!(obs["width"].as_u64() > obs["height"].as_u64(), "the picture is landscape: {obs}");
        let st = r.ok("android_device_status", json!({})).await;
        assert_eq!(st["rotation_degrees"], 90, "{st}");

        // A second turn keeps the phone's own values recorded (the first ones), not ours.
        let res = r.ok("android_rotate", json!({"orientation": "reverse_portrait"})).await;
        assert_eq!(res["rotation_degrees"], 180, "{res}");

        let ch = r.ch.clone();
        let out = r.c.request("auth.logout", Some(&ch), json!({})).await;
        assert!(out.get("error").is_none(), "{out}");
        // user_rotation was unset on this phone: deleted again; auto-rotate back to its own 0.
        wait_settings(&r, (Some("0"), None), "after release").await;
        let (adb, serial) = (r.adb.clone(), r.serial.clone());
        let dump = common::adb::blocking(move || adb.adb(&["-s", &serial, "shell", "dumpsys input"])).await;
        let dump = String::from_utf8_lossy(&dump.stdout).into_owned();
        assert!(dump.contains("SurfaceOrientation: 0") || dump.contains("orientation=0,"), "portrait again: {dump}");
    })
    .await
    .expect("bounded");
}

/// A phone whose owner left auto-rotate on: `landscape` turns it off and locks the display; `auto` follows the
/// sensor again; the release puts auto-rotate back on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_rotate_is_turned_off_to_rotate_and_back_on_at_release() {
    bounded(async {
        let mut r = Rig::with(SimConfig::default(), &[], None).await;
        r.sim_shell("settings put system accelerometer_rotation 1").await;
        let res = r.ok("android_rotate", json!({"orientation": "landscape"})).await;
        assert_eq!((res["orientation"].clone(), res["applied"].clone()), (json!("landscape"), json!(true)), "{res}");
        assert_eq!(res["auto_rotate"], false, "{res}");
        let res = r.ok("android_rotate", json!({"orientation": "auto"})).await;
        assert_eq!(res["auto_rotate"], true, "{res}");
        assert_eq!(res["orientation"], "portrait", "the sensor of a phone standing upright: {res}");
        let (code, msg) = r.err("android_rotate", json!({"orientation": "sideways"})).await;
        assert_eq!(code, "invalid_arguments", "{msg}");
        assert!(msg.contains("landscape"), "the allowed values are named: {msg}");
        let ch = r.ch.clone();
        r.c.request("auth.logout", Some(&ch), json!({})).await;
        wait_settings(&r, (Some("1"), None), "after release").await;
    })
    .await
    .expect("bounded");
}

/// android_lock: the screen goes off and the lock screen shows (a swipe lock); status says `locked: true`;
/// android_unlock opens it again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lock_turns_the_screen_off_and_shows_the_lock_screen() {
    bounded(async {
        let mut r = Rig::with(SimConfig::default(), &[], None).await;
        r.sim.set_lock(LockMode::Swipe);
        r.ok("android_unlock", json!({"settle": false})).await;
        assert!(!r.sim.locked() && r.sim.screen_on());
        let res = r.ok("android_lock", json!({})).await;
        assert_eq!((res["screen_on"].clone(), res["locked"].clone()), (json!(false), json!(true)), "{res}");
        assert_eq!(res["was_on"], true, "{res}");
        assert!(r.sim.locked() && !r.sim.screen_on());
        let st = r.ok("android_device_status", json!({})).await;
        assert_eq!((st["locked"].clone(), st["screen_on"].clone()), (json!(true), json!(false)), "{st}");
        // Locking a locked phone changes nothing and says so.
        let res = r.ok("android_lock", json!({})).await;
        assert_eq!((res["was_on"].clone(), res["locked"].clone()), (json!(false), json!(true)), "{res}");
        r.ok("android_unlock", json!({"settle": false})).await;
        assert!(!r.sim.locked() && r.sim.screen_on());

        // No screen lock (None): off, and the result says why no lock screen shows.
        r.sim.set_lock(LockMode::None);
        let res = r.ok("android_lock", json!({})).await;
        assert_eq!((res["screen_on"].clone(), res["locked"].clone()), (json!(false), json!(false)), "{res}");
        assert!(res["note"].as_str().unwrap().contains("None"), "{res}");
    })
    .await
    .expect("bounded");
}
