//! The commands as a host runs them: whole command lines through the sim's shell, checked against what the
//! phone tools print (the connector's parsers are tested against tests/fixtures/real/, not against this).

use crate::sim::device::{now_unix_secs, Device};
use crate::sim::{InputEvent, SimConfig};

use super::run_line as run_script;

fn dev() -> Device {
    Device::new(SimConfig::default(), "127.0.0.1:5555".into())
}
fn out(d: &mut Device, s: &str) -> String {
    String::from_utf8_lossy(&run_script(d, s, b"").stdout).into_owned()
}

#[test]
fn tap_text_and_keys_update_ui_and_event_log() {
    let mut d = dev();
    let (x, y) = d.ui.layout().button.center();
    out(&mut d, &format!("input tap {x} {y}"));
    out(&mut d, "input tap 1 1");
    out(&mut d, "input text 'hello%sworld'");
    out(&mut d, "input keyevent 67");
    assert_eq!(d.ui.counter, 1);
    assert_eq!(d.ui.text, "hello worl");
    // HOME resets the launcher's search box (the home screen's field), as Launcher3 does.
    out(&mut d, "input keyevent KEYCODE_HOME");
    assert_eq!(d.ui.text, "");
    assert_eq!(
        d.events,
        vec![
            InputEvent::Tap { x, y },
            InputEvent::Tap { x: 1, y: 1 },
            InputEvent::Text("hello world".into()),
            InputEvent::Key("KEYCODE_DEL".into()),
            InputEvent::Key("KEYCODE_HOME".into()),
        ]
    );
    let r = run_script(&mut d, "input tap x 1", b"");
    assert_eq!(r.status, 1);
}

#[test]
fn foreground_app_follows_am_and_monkey() {
    let mut d = dev();
    assert!(out(&mut d, "dumpsys window | grep mCurrentFocus").contains("com.android.launcher3/"));
    out(&mut d, "am start -n com.android.settings/.Settings");
    assert!(out(&mut d, "dumpsys window")
        .contains("mCurrentFocus=Window{5f3a2b1 u0 com.android.settings/com.android.settings.Settings}"));
    out(&mut d, "am force-stop com.android.settings");
    assert!(out(&mut d, "dumpsys activity activities")
        .contains("mResumedActivity: ActivityRecord{7c8d9e0 u0 com.android.launcher3/"));
    assert!(
        out(&mut d, "monkey -p com.xagent.demo -c android.intent.category.LAUNCHER 1").contains("Events injected: 1")
    );
    assert_eq!(d.ui.foreground.package, "com.xagent.demo");
    assert_eq!(out(&mut d, "pm list packages -3"), "package:com.xagent.demo\npackage:com.xagent.help\n");
}

#[test]
fn uiautomator_dump_writes_file() {
    let mut d = dev();
    assert_eq!(out(&mut d, "uiautomator dump"), "UI hierchary dumped to: /sdcard/window_dump.xml\n");
    let xml = out(&mut d, "cat /sdcard/window_dump.xml");
    assert!(xml.contains("text=\"Count: 0\""));
    assert!(xml.contains("text=\"Increment\""));
}

#[test]
fn pm_install_checks_zip_magic() {
    let mut d = dev();
    d.fs.write("/data/local/tmp/com.example.app.apk", b"PK\x03\x04rest".to_vec(), 0o644, 0, false).unwrap();
    d.fs.write("/data/local/tmp/bad.apk", b"nope".to_vec(), 0o644, 0, false).unwrap();
    assert_eq!(out(&mut d, "pm install -r /data/local/tmp/com.example.app.apk"), "Success\n");
    assert!(out(&mut d, "pm path com.example.app").starts_with("package:/data/app/"));
    assert!(out(&mut d, "pm install /data/local/tmp/bad.apk").starts_with("Failure [INSTALL_FAILED_INVALID_APK"));
    assert_eq!(out(&mut d, "pm uninstall com.example.app"), "Success\n");
    d.fs.write("/data/local/tmp/new.apk", b"PK\x03\x04 minSdkVersion=99 ".to_vec(), 0o644, 0, false).unwrap();
    assert!(out(&mut d, "pm install /data/local/tmp/new.apk").starts_with("Failure [INSTALL_FAILED_OLDER_SDK"));
}

#[test]
fn logcat_filters_and_counts() {
    let mut d = dev();
    out(&mut d, "input tap 540 970");
    let all = out(&mut d, "logcat -d -v brief SimHome:I *:S");
    assert!(all.contains("I/SimHome"), "{all}");
    assert!(!all.contains("InputDispatcher"));
    let last = out(&mut d, "logcat -d -t 1");
    assert_eq!(last.lines().count(), 2);
    out(&mut d, "logcat -c");
    assert_eq!(out(&mut d, "logcat -d -v raw"), "");
    let r = run_script(&mut d, "logcat", b"");
    assert!(r.follow);
}

#[test]
fn props_settings_wm_ime() {
    let mut d = dev();
    assert_eq!(out(&mut d, "getprop ro.build.version.sdk"), "34\n");
    assert_eq!(out(&mut d, "getprop ro.serialno"), "127.0.0.1:5555\n");
    assert_eq!(out(&mut d, "wm size; wm density"), "Physical size: 1080x2400\nPhysical density: 420\n");
    out(&mut d, "settings put system screen_brightness 42");
    assert_eq!(out(&mut d, "settings get system screen_brightness; settings get global nope"), "42\nnull\n");
    assert!(out(&mut d, "ime list -s").contains("LatinIME"));
    assert_eq!(
        out(&mut d, "ime set com.xagent.sim.ime/.SimKeyboard"),
        "Input method com.xagent.sim.ime/.SimKeyboard selected for user #0\n"
    );
}

fn dev_sdk(sdk: u32) -> Device {
    Device::new(SimConfig { sdk, ..Default::default() }, "127.0.0.1:5555".into())
}

/// The formats of tests/fixtures/real, by SDK level (the connector's parsers are tested against those files,
/// not against this).
/// toybox gzip (SDK 26+) writes one gzip member as zlib does (magic, deflate, mtime 0, OS 3) that inflates to
/// its input; older phones have no gzip at all.
#[test]
fn dd_stat_nproc_and_umask_behave_like_the_phone_tools() {
    let mut d = dev_sdk(34);
    let data: Vec<u8> = (0..10_000u32).map(|i| (i % 256) as u8).collect();
    d.fs.write("/data/local/tmp/f", data.clone(), 0o600, 0, false).unwrap();
    let r = run_script(&mut d, "dd if=/data/local/tmp/f bs=4k skip=1 count=1", b"");
    assert_eq!(r.stdout, data[4096..8192]);
    assert!(String::from_utf8_lossy(&r.stderr).starts_with("1+0 records in\n1+0 records out\n"));
    let r = run_script(&mut d, "dd if=/data/local/tmp/f bs=4096 skip=2 count=5 2>/dev/null", b"");
    assert_eq!((r.stdout.as_slice(), r.stderr.is_empty()), (&data[8192..], true), "the last range is short");
    let r = run_script(&mut d, "dd if=/data/local/tmp/nope bs=16 count=1", b"");
    assert_eq!(
        (r.status, String::from_utf8_lossy(&r.stderr).as_ref()),
        (1, "dd: /data/local/tmp/nope: No such file or directory\n")
    );
    let r = run_script(&mut d, "stat -c %s /data/local/tmp/f", b"");
    assert_eq!(String::from_utf8_lossy(&r.stdout), "10000\n");
    assert_eq!(String::from_utf8_lossy(&run_script(&mut d, "nproc", b"").stdout), "8\n");
    let r = run_script(&mut d, "umask 077; screencap /data/local/tmp/s.raw && stat -c %a /data/local/tmp/s.raw", b"");
    assert_eq!(String::from_utf8_lossy(&r.stdout), "600\n", "screencap's 0664 under umask 077");
    // Android 9: BSD dd, no nproc.
    let mut old = dev_sdk(28);
    assert_eq!(run_script(&mut old, "nproc", b"").status, 127);
}

/// The connector's probe, run by the sim's shell: gzip round-trips, `nproc` counts, and the sweep removes a
/// capture file older than a minute while a fresh one (a capture in progress) and other files stay.
#[test]
fn the_probe_sweeps_stale_captures_and_counts_cpus() {
    let mut d = dev_sdk(34);
    let now = now_unix_secs();
    d.fs.write("/data/local/tmp/xagent-0123.raw", vec![1; 10], 0o600, now - 3600, false).unwrap();
    d.fs.write("/data/local/tmp/xagent-4567.raw", vec![1; 10], 0o600, now, false).unwrap();
    d.fs.write("/data/local/tmp/app.apk", vec![1; 10], 0o600, now - 3600, false).unwrap();
    let r = run_script(&mut d, crate::pixels::parallel::PROBE, b"");
    assert!(r.stderr.is_empty(), "{}", String::from_utf8_lossy(&r.stderr));
    let probed = crate::pixels::parallel::parse_probe(&r.stdout);
    assert_eq!((probed.gzip, probed.streams), (true, 4));
    let mut left = d.fs.files_under("/data/local/tmp");
    left.sort();
    assert_eq!(left, ["/data/local/tmp/app.apk", "/data/local/tmp/xagent-4567.raw"]);
}

#[test]
fn gzip_is_real_gzip_from_android_8_and_missing_before() {
    use std::io::Read;
    let mut d = dev_sdk(26);
    let r = run_script(&mut d, "screencap | gzip -1", b"");
    assert_eq!(r.status, 0);
    assert_eq!(&r.stdout[..4], &[0x1f, 0x8b, 8, 0], "gzip magic, deflate, no flags");
    assert_eq!(&r.stdout[4..8], &[0, 0, 0, 0], "mtime 0 (stdin)");
    assert_eq!(r.stdout[9], 3, "OS = Unix");
    let mut raw = Vec::new();
    flate2::read::GzDecoder::new(&r.stdout[..]).read_to_end(&mut raw).unwrap();
    assert_eq!(raw, run_script(&mut d, "screencap", b"").stdout);
    assert!(r.stdout.len() * 20 < raw.len(), "a flat UI deflates well: {} of {}", r.stdout.len(), raw.len());
    let r = run_script(&mut dev_sdk(25), "echo x | gzip -1", b"");
    assert_eq!(r.status, 127);
    assert!(r.stdout.is_empty() && String::from_utf8_lossy(&r.stderr).contains("gzip: inaccessible or not found"));
}

#[test]
fn prints_the_formats_of_its_sdk_level() {
    // df: toolbox before 6.0, toybox from 6.0; both parse to the same /data.
    let toolbox = out(&mut dev_sdk(22), "df /data");
    assert!(toolbox.starts_with("Filesystem             Size   Used   Free   Blksize\n/data "), "{toolbox}");
    let toybox = out(&mut dev_sdk(23), "df /data");
    assert!(toybox.starts_with("Filesystem        1K-blocks") && toybox.trim_end().ends_with("% /data"));
    let d = crate::device::formats::df(&toybox, "/data").unwrap();
    assert_eq!(d.free_bytes, 56_089_024 * 1024);
    assert_eq!(crate::device::formats::df(&toolbox, "/data").unwrap().free_bytes, 53 << 30);
    let up = out(&mut dev_sdk(34), "cat /proc/uptime");
    assert!(crate::device::formats::uptime(&up).is_some(), "{up}");
    let mut d = dev_sdk(16);
    let w = out(&mut d, "dumpsys window windows");
    assert!(w.contains("mCurrentFocus=Window{5f3a2b1 com.android.launcher3/"), "no u0 before 4.2: {w}");
    let mut d = dev_sdk(28);
    let w = out(&mut d, "dumpsys window windows");
    assert!(w.contains("mFocusedApp=AppWindowToken{3e1f2a7 token=Token{91b5c04 ActivityRecord{7c8d9e0 u0 "), "{w}");
    assert!(!out(&mut d, "dumpsys window displays").contains("mCurrentFocus"));
    assert!(out(&mut d, "dumpsys input").contains("SurfaceOrientation: 0"));
    for sdk in [30, 33, 35] {
        let mut d = dev_sdk(sdk);
        assert!(!out(&mut d, "dumpsys window windows").contains("mCurrentFocus"), "sdk {sdk}");
        let disp = out(&mut d, "dumpsys window displays");
        assert!(disp.contains("  Display: mDisplayId=0 "), "sdk {sdk}");
        assert!(disp.contains("mFocusedApp=ActivityRecord{7c8d9e0 u0 com.android.launcher3/"), "sdk {sdk}");
        assert!(out(&mut d, "dumpsys window").contains("mCurrentFocus="), "full dump, sdk {sdk}");
    }
    // The record's brace moved before the task on 13 (INDEX.md `activity-13-*`); 12 has the old form.
    let disp = out(&mut dev_sdk(32), "dumpsys window displays");
    assert!(
        disp.contains("ActivityRecord{7c8d9e0 u0 com.android.launcher3/.uioverrides.QuickstepLauncher t12}"),
        "{disp}"
    );
    let disp = out(&mut dev_sdk(33), "dumpsys window displays");
    assert!(
        disp.contains("ActivityRecord{7c8d9e0 u0 com.android.launcher3/.uioverrides.QuickstepLauncher} t12}"),
        "{disp}"
    );
    let mut d = dev_sdk(33);
    out(&mut d, "settings put system user_rotation 1");
    let input = out(&mut d, "dumpsys input");
    assert!(input.contains("InputDeviceOrientation: 1") && !input.contains("SurfaceOrientation"), "{input}");
    assert!(input.contains("orientation=1, logicalFrame=[0, 0, 2400, 1080]"), "{input}");
    assert!(out(&mut d, "dumpsys input_method")
        .contains("mShowRequested=false mShowExplicitlyRequested=false mShowForced=false mInputShown=false"));
    let mut d = dev_sdk(35);
    out(&mut d, "settings put system user_rotation 3");
    assert!(out(&mut d, "dumpsys input").contains("InputDeviceOrientation: Rotation270"));
    let ime = out(&mut d, "dumpsys input_method");
    assert!(ime.contains("\n  mInputShown=false\n") && !ime.contains("mShowRequested"), "{ime}");
}

/// Issue 49: the display follows `user_rotation` only while auto-rotate (`accelerometer_rotation`) is off, as on a
/// real phone (tests/fixtures/real/settings-get-rotation-pair-detour-report.txt: with it `1`, a `user_rotation`
/// write left the panel portrait); `settings get` prints the values as that phone did, one per line.
#[test]
fn the_user_rotation_turns_the_display_only_with_auto_rotate_off() {
    let mut d = dev_sdk(33);
    assert_eq!(
        out(&mut d, "settings get system accelerometer_rotation; settings get system user_rotation"),
        "0\nnull\n"
    );
    out(&mut d, "settings put system accelerometer_rotation 1");
    out(&mut d, "settings put system user_rotation 1");
    assert_eq!(d.ui.rotation, 0, "auto-rotate on: the sensor decides");
    let real = include_str!("../../../tests/fixtures/real/settings-get-rotation-pair-detour-report.txt");
    assert_eq!(out(&mut d, "settings get system accelerometer_rotation; settings get system user_rotation"), real);
    out(&mut d, "settings put system accelerometer_rotation 0");
    assert_eq!(d.ui.rotation, 1, "locked: the user rotation");
    out(&mut d, "settings delete system user_rotation");
    assert_eq!(d.ui.rotation, 0);
}

/// How tools find an app's launcher activity before `am start -n` (mobile-mcp's `mobilecli` does exactly this):
/// `cmd package resolve-activity --brief PKG` prints what a real phone prints for Settings, and the component it
/// names starts the app.
#[test]
fn resolve_activity_names_the_launcher_activity_as_a_phone_does() {
    let mut d = dev();
    let real = include_str!("../../../tests/fixtures/real/cmd-package-resolve-activity-brief-settings.txt");
    assert_eq!(out(&mut d, "cmd package resolve-activity --brief com.android.settings"), real);
    let component = real.lines().last().unwrap();
    out(&mut d, &format!("am start -n {component}"));
    assert!(out(&mut d, "dumpsys window").contains("com.android.settings/"), "Settings in front");
    // A class outside the package keeps its full name; only the component line with --components.
    assert_eq!(
        out(&mut d, "cmd package resolve-activity --components com.android.chrome"),
        "com.android.chrome/com.google.android.apps.chrome.Main\n"
    );
    assert_eq!(
        out(
            &mut d,
            "cmd package resolve-activity --brief -a android.intent.action.MAIN -c android.intent.category.HOME"
        )
        .lines()
        .last(),
        Some("com.android.launcher3/.uioverrides.QuickstepLauncher")
    );
    assert_eq!(out(&mut d, "cmd package resolve-activity --brief com.example.missing"), "No activity found\n");
    assert_eq!(out(&mut d, "cmd package query-activities --brief com.example.missing"), "No activities found\n");
    assert!(
        out(&mut d, "cmd package query-activities --brief com.android.settings").starts_with("1 activities found:\n")
    );
}
