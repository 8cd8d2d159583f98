//! Table tests over outputs recorded on real phones (`tests/fixtures/real/`, provenance in its `INDEX.md`). Every
//! expected value is written by hand from reading the sample, never produced by the parser.

use std::path::PathBuf;

use xagent_adb_connector::device::formats::{self, Battery, WmSize};
use xagent_adb_connector::device::host::parse_devices;
use xagent_adb_connector::tools::dump::parse_dump;

fn sample(name: &str) -> String {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/real").join(name);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn fg(pkg: &str, act: &str) -> Option<(String, String)> {
    Some((pkg.to_owned(), act.to_owned()))
}

#[test]
fn every_sample_is_indexed_and_there_are_at_least_40() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/real");
    let index = std::fs::read_to_string(dir.join("INDEX.md")).unwrap();
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        if name == "INDEX.md" {
            continue;
        }
        n += 1;
        assert!(index.contains(&format!("| {name} |")), "{name} has no row in INDEX.md");
    }
    assert!(n >= 40, "only {n} samples");
}

#[test]
fn foreground_on_every_focus_sample() {
    let table: &[(&str, Option<(String, String)>)] = &[
        // ≤ 4.1: no `u0`; the focused window names the app.
        ("focus-4.1-no-u0-appwindowtoken.txt", fg("com.android.settings", "com.android.settings.SubSettings")),
        // Two displays grepped without headers: the one focused window with a component.
        (
            "focus-10-multi-display-samsung-cover-a.txt",
            fg("eu.niko.smart.universal", "crc648a3abc16689e594e.MainActivity"),
        ),
        (
            "focus-10-multi-display-samsung-cover-b.txt",
            fg("com.example.android", "com.example.android.activity.main.MainActivity"),
        ),
        (
            "focus-vendor-comma-isShadow.txt",
            fg("com.example.android.contactmanager", "com.example.android.contactmanager.ContactManager"),
        ),
        (
            "focus-only-current-focus.txt",
            fg("com.example.android.contactmanager", "com.example.android.contactmanager.ContactManager"),
        ),
        ("focus-null-app.txt", None),
        ("focus-null-current.txt", None),
        ("focus-9-tv-launcher.txt", fg("com.google.android.tvlauncher", "com.google.android.tvlauncher.MainActivity")),
        // A slash-less overlay window falls back to the focused app behind it.
        ("focus-9-tv-sony-overlay.txt", fg("tunein.player", "tunein.ui.leanback.ui.activities.TvHomeActivity")),
        ("focus-tv-sony-overlay-alone.txt", None),
        ("activity-tv-mresumed.txt", fg("com.google.android.tvlauncher", "com.google.android.tvlauncher.MainActivity")),
        ("activity-mresumed-cyanogenmod.txt", fg("com.cyanogenmod.trebuchet", "com.android.launcher3.Launcher")),
        // The bare `ResumedActivity:` of the display section (no `m`).
        (
            "activity-resumedactivity-bare-w-p311-adbutils-1.txt",
            fg("com.tencent.mobileqq", "com.tencent.mobileqq.activity.SplashActivity"),
        ),
        (
            "activity-5.x-xtc-watch-mresumed.txt",
            fg("com.xtc.watch", "com.xtc.watch.view.home.activity.XtcHomeActivity"),
        ),
        // Android 13 (TQ3A): the notification shade has the focus, the camera is the focused app; the record
        // closes its brace before the task (`…/.CameraLauncher} t12}`).
        (
            "activity-13-mediatek-tq3a-notificationshade-camera-healer.txt",
            fg("com.mediatek.camera", "com.mediatek.camera.CameraLauncher"),
        ),
        // Android 12: the pair is in the display section.
        ("focus-12-displays-snapcam-u2-816.txt", fg("org.codeaurora.snapcam", "com.android.camera.CameraLauncher")),
        ("focus-14-notificationshade-auto-mobile.txt", None),
        // `windows` sections without focus lines: window tokens (`mToken=ActivityRecord{…}`) are not the focus.
        ("window-windows-11-tv-kodi.txt", None),
        ("window-windows-12-notificationshade-appium-566.txt", None),
        ("window-windows-9-appwindowtoken-appium-desktop-1250.txt", None),
        // A whole 15+ vendor `windows` section: the vendor NotificationShade window (type=2040) and many
        // ActivityRecord tokens, no focus line — nothing here may be taken for the foreground.
        ("window-windows-15-vivo-notificationshade-type2040-cryptoloot.txt", None),
        ("displays-old-awesome-adb.txt", None),
    ];
    for (name, want) in table {
        assert_eq!(&formats::foreground(&sample(name)), want, "{name}");
    }
}

#[test]
fn rotation_on_every_input_sample() {
    let table: &[(&str, Option<u8>)] = &[
        // No SurfaceOrientation: the built-in viewport says 0 (`Orientation: 0` of the parameters is not it).
        ("input-13-redroid-viewport-maaend-4635.txt", Some(0)),
        // `Orientation: Rotation0` is a mapper parameter, not the display's rotation: unknown.
        ("input-emulator-no-surface-orientation-android-world-284.txt", None),
        ("input-firetv-4k-ha-firemote-225.txt", None),
        // Android 16 phone: the degree form.
        ("input-redmagic11pro-rotation0-excerpt.txt", Some(0)),
        // A phone turned to landscape: the viewport line alone says a quarter turn.
        ("input-landscape-viewport-orientation-1-synaptics-excerpt.txt", Some(1)),
        // Whole Android 15+ dumps of two vivo devices: fingerprint sensors listed before the touchscreen.
        ("input-15-vivo-720x1612-rotation0-cryptoloot.txt", Some(0)),
        ("input-15-vivo-pad-2064x3096-rotation0-jseca666-scrcpy.txt", Some(0)),
    ];
    for (name, want) in table {
        assert_eq!(&formats::rotation(&sample(name)), want, "{name}");
    }
}

#[test]
fn keyboard_on_every_ime_sample() {
    assert_eq!(formats::keyboard_shown(&sample("ime-appium-hidden.txt")), Some(false));
    assert_eq!(formats::keyboard_shown(&sample("ime-appium-shown.txt")), Some(true));
    // Android 15: `mInputShown=` alone on its line; the line before it has other `mShow…` fields.
    assert_eq!(formats::keyboard_shown(&sample("ime-15-emulator-inputshown-alone.txt")), Some(false));
    // Both version forms as printed (Android 13 one line / 14 alone), and a field that only ends in the name.
    let one_line = "  mShowRequested=true mShowExplicitlyRequested=false mShowForced=false mInputShown=true\n";
    assert_eq!(formats::keyboard_shown(one_line), Some(true));
    assert_eq!(formats::keyboard_shown("  mLastInputShown=true\n"), None);
}

#[test]
fn battery_on_every_sample() {
    let b = |name| formats::battery(&sample(name));
    let bat = |level, plugged, status, temperature_tenths| Battery { level, plugged, status, temperature_tenths };
    assert_eq!(b("battery-samsung-vendor-extras.txt"), bat(Some(100), true, "full", Some(309)));
    // `mSavedBatteryMaxTemp: 534` further down is a vendor extra, not the temperature.
    assert_eq!(b("battery-xiaomi-hyperos3.txt"), bat(Some(80), true, "charging", Some(364)));
    assert_eq!(b("battery-nexus5-awesome-adb.txt"), bat(Some(44), true, "charging", Some(280)));
}

#[test]
fn df_on_every_sample() {
    use formats::DfSpace;
    // toybox, 1K blocks, mount point last: 69302092 KiB free of 105515340 KiB.
    assert_eq!(
        formats::df(&sample("df-11-oneplus8pro-toybox.txt"), "/data"),
        Some(DfSpace { free_bytes: 69_302_092 * 1024, total_bytes: 105_515_340 * 1024 })
    );
    // toolbox, mount point first, human units: 8G free of 27G.
    assert_eq!(
        formats::df(&sample("df-4.x-toolbox-aafm-30.txt"), "/data"),
        Some(DfSpace { free_bytes: 8 << 30, total_bytes: 27 << 30 })
    );
    // toybox -h: `/cache 496M 816K 495M`; this box has no /data line at all.
    let h = sample("df-h-7-mad-rom-aconf-47.txt");
    assert_eq!(formats::df(&h, "/cache"), Some(DfSpace { free_bytes: 495 << 20, total_bytes: 496 << 20 }));
    assert_eq!(formats::df(&h, "/tee").map(|d| d.total_bytes), Some((4.9 * (1u64 << 20) as f64) as u64));
    assert_eq!(formats::df(&h, "/data"), None);
}

#[test]
fn wm_size_on_every_sample() {
    assert_eq!(
        formats::wm_size(&sample("wm-size-override-awesome-adb.txt")),
        WmSize { physical: Some((1080, 1920)), overridden: Some((480, 1024)) }
    );
    assert_eq!(formats::wm_size(&sample("wm-size-override-awesome-adb.txt")).effective(), Some((480, 1024)));
    assert_eq!(
        formats::wm_size(&sample("wm-size-physical-awesome-adb.txt")),
        WmSize { physical: Some((1080, 1920)), overridden: None }
    );
    assert_eq!(
        formats::wm_size(&sample("wm-size-redmi-permission-denied.txt")),
        WmSize { physical: Some((720, 1280)), overridden: None }
    );
}

#[test]
fn adb_devices_in_odd_states() {
    let states = |name| -> Vec<(String, String)> {
        parse_devices(&sample(name)).into_iter().map(|d| (d.serial, d.state)).collect()
    };
    let pair = |a: &str, b: &str| (a.to_owned(), b.to_owned());
    assert_eq!(states("devices-no-permissions-openpilot.txt"), vec![pair("863276c1", "no permissions")]);
    assert_eq!(states("devices-no-permissions-plugdev.txt"), vec![pair("009d1cd696d5194a", "no permissions")]);
    assert_eq!(states("devices-question-marks-no-permissions.txt"), vec![pair("????????????", "no permissions")]);
    assert_eq!(states("devices-unauthorized.txt"), vec![pair("335b3080", "unauthorized")]);
    assert_eq!(states("devices-offline-awesome-adb.txt"), vec![pair("cf264b8f", "offline")]);
    assert_eq!(states("devices-none-awesome-adb.txt"), vec![]);
    assert_eq!(
        states("devices-three-awesome-adb.txt"),
        vec![pair("cf264b8f", "device"), pair("emulator-5554", "device"), pair("10.129.164.6:5555", "device")]
    );
    let l = parse_devices(&sample("devices-l-appium.txt"));
    let models: Vec<Option<&str>> = l.iter().map(|d| d.model.as_deref()).collect();
    assert_eq!(models, vec![Some("Android SDK built for x86 64"), Some("Nexus 7")]);
}

#[test]
fn ui_dumps_from_real_phones() {
    // One line, zero-size nodes, a newline entity in a text.
    let e = parse_dump(&sample("ui-pixel5-oneline-zero-size-talos.xml")).unwrap();
    assert_eq!(e.len(), 34);
    let next = e.iter().find(|e| e.text == "NEXT").unwrap();
    assert_eq!((next.clickable, next.bounds), (true, [554, 556, 1052, 688]));
    assert_eq!(next.resource_id, "com.balsdon.accessibilityDeveloperService:id/swipeRight");
    assert!(e.iter().any(|e| e.text.starts_with("Run\nadb shell settings put secure")));
    let heading3 = e.iter().find(|e| e.text == "Heading 3").unwrap();
    assert_eq!(heading3.bounds, [0, 0, 0, 0]);
    // The "dumped to" line and a shell prompt before the XML.
    let e = parse_dump(&sample("ui-huawei-wechat-dumped-to-first-appium-14726.txt")).unwrap();
    assert_eq!(e.len(), 2);
    assert_eq!(e[1].resource_id, "com.tencent.mm:id/g2s");
    assert_eq!(e[1].bounds, [0, 0, 720, 1184]);
    // As `uiautomator dump /dev/tty` prints it: the XML, then the "dumped to" line (sic).
    let tty = format!("{}UI hierchary dumped to: /dev/tty\n", sample("ui-pixel5-oneline-zero-size-talos.xml"));
    assert_eq!(parse_dump(&tty).unwrap().len(), 34);
}

#[test]
fn ui_dumps_are_read_as_xml_within_bounds() {
    // Values quoted either way, entities and references decoded by the XML parser.
    let xml = "<?xml version='1.0' encoding='UTF-8' standalone='yes' ?><hierarchy rotation='1'>\
               <node index='0' text='caf\u{e9} \u{1f600} &amp; &#x4E2D;' NAF=\"true\" class='android.view.View' \
               clickable=\"true\" bounds='[0,0][10,10]' /></hierarchy>";
    let e = parse_dump(xml).unwrap();
    assert_eq!(e[0].text, "caf\u{e9} \u{1f600} & \u{4e2d}");
    assert!(e[0].clickable);
    // Not XML, a DTD (entity expansion), too deep: refused with a reason, never a panic.
    assert!(parse_dump("<hierarchy><node text=\"a></hierarchy>").unwrap_err().contains("well-formed"));
    let dtd = "<?xml version='1.0'?><!DOCTYPE h [<!ENTITY a 'aaaa'>]><hierarchy><node text='&a;'/></hierarchy>";
    assert!(parse_dump(dtd).is_err());
    let deep = format!("<hierarchy>{}{}</hierarchy>", "<node>".repeat(300), "</node>".repeat(300));
    assert!(parse_dump(&deep).unwrap_err().contains("deeper"));
    let many = format!("<hierarchy>{}</hierarchy>", "<node/>".repeat(50_001));
    assert!(parse_dump(&many).unwrap_err().contains("more than"));
}

#[test]
fn rotation_is_relative_to_the_natural_orientation() {
    // BlueStacks: its display is landscape by nature; turned a quarter it is portrait, so `rotation="1"` comes with
    // bounds (and a screenshot) of 1080x1920. Bounds are always in the captured frame's space, whatever the number.
    let e = parse_dump(&sample("ui-bluestacks-rotation-1-portrait-bounds-doomscroller.xml")).unwrap();
    assert_eq!(e.len(), 126);
    assert!(e.iter().all(|e| e.bounds[2] <= 1080 && e.bounds[3] <= 1920), "inside 1080x1920");
    assert_eq!(e[0].bounds, [0, 0, 1080, 1920]);
    let back = e.iter().find(|e| e.content_desc == "Go Back").unwrap();
    assert_eq!((back.clickable, back.bounds), (true, [12, 18, 72, 78]));
    let follow = e.iter().find(|e| e.text == "Following").unwrap();
    assert_eq!((follow.class.as_str(), follow.bounds), ("android.widget.Button", [24, 319, 840, 391]));
}

#[test]
fn a_landscape_dump_has_its_bounds_in_the_rotated_space() {
    // `<hierarchy rotation="1">`: a 1440x2560 panel turned a quarter, every bound within 2560x1440.
    let e = parse_dump(&sample("ui-mumu12-landscape-rotation-1-arknights.xml")).unwrap();
    assert_eq!(e.len(), 5);
    assert!(e.iter().all(|e| e.bounds == [0, 0, 2560, 1440]), "{e:?}");
    let game = &e[4];
    assert_eq!(game.resource_id, "com.YoStarJP.Arknights:id/unitySurfaceView");
    assert_eq!((game.content_desc.as_str(), game.focusable, game.focused), ("Game view", true, true));
}

#[test]
fn getprop_with_a_value_over_three_lines() {
    let p = formats::getprop(&sample("getprop-14-emulator-multiline-boot-reason-history.txt"));
    assert_eq!(
        p.get("persist.sys.boot.reason.history").map(String::as_str),
        Some("reboot,1732006385\nreboot,factory_reset,1731934106\nreboot,1731933991")
    );
    // The properties after the multi-line value are read, not swallowed by it.
    assert_eq!(p.get("persist.sys.dalvik.vm.lib.2").map(String::as_str), Some("libart.so"));
    assert_eq!(p.get("persist.sys.boot.reason").map(String::as_str), Some(""));
    assert_eq!(
        p.get("ro.build.fingerprint").map(String::as_str),
        Some("google/sdk_gphone64_x86_64/emu64xa:14/UE1A.230829.050/12077443:userdebug/dev-keys")
    );
    assert_eq!(p.get("ro.build.version.sdk").map(String::as_str), Some("34"));
    assert_eq!(p.get("ro.build.version.release").map(String::as_str), Some("14"));
    assert_eq!(p.len(), 31);
}

#[test]
fn ui_dumps_pretty_printed_with_naf_nodes_and_chinese_text() {
    // Pretty-printed (blank lines, stray `- ` text between elements), 38 nodes; the NAF hotseat icons have no
    // text, no description, no id — but they are clickable, so they are listed and can be targeted by index.
    let e = parse_dump(&sample("ui-meizu-flyme-launcher-pretty-naf.xml")).unwrap();
    assert_eq!(e.len(), 38);
    let wechat = e.iter().find(|e| e.text == "微信").unwrap();
    assert_eq!(
        (wechat.bounds, wechat.resource_id.as_str()),
        ([44, 770, 184, 832], "com.meizu.flyme.launcher:id/app_name")
    );
    assert!(e.iter().any(|e| e.text == "QQ浏览器"));
    let hotseat: Vec<_> = e.iter().filter(|e| e.bounds[1] == 1084 && e.clickable && e.text.is_empty()).collect();
    assert_eq!(hotseat.len(), 4);
    assert!(hotseat.iter().all(|e| e.is_interactive() && e.is_interesting()));
    assert_eq!(hotseat[3].bounds, [522, 1084, 678, 1226]);

    // One line, a NAF icon and Chinese labels.
    let e = parse_dump(&sample("ui-honor-chooser-naf-chinese-oneline.xml")).unwrap();
    assert_eq!(e.len(), 32);
    assert_eq!(e[0].bounds, [0, 813, 720, 1484]);
    let once = e.iter().find(|e| e.resource_id == "android:id/button_once").unwrap();
    assert_eq!((once.text.as_str(), once.clickable, once.bounds), ("仅此一次", true, [48, 1400, 359, 1484]));
    let icon = e.iter().find(|e| e.class == "android.widget.ImageView" && e.clickable).unwrap();
    assert_eq!((icon.text.as_str(), icon.content_desc.as_str(), icon.bounds), ("", "", [296, 966, 424, 1094]));
    assert!(e.iter().any(|e| e.text == "保存到网盘"));
}

#[test]
fn a_real_dump_with_an_emoji_in_a_single_quoted_value() {
    // WhatsApp: the text holds `"`, so the phone quoted it with `'`; an emoji with its variation selector.
    let e = parse_dump(&sample("ui-whatsapp-emoji-single-quoted-auto-zap.xml")).unwrap();
    assert_eq!(e.len(), 216);
    assert_eq!(e[0].bounds, [0, 0, 720, 1483]);
    let m = e.iter().find(|e| e.text.contains('\u{2764}')).unwrap();
    assert_eq!(m.text, "Você reagiu com \u{2764}\u{fe0f} a: \"100000000000\"");
    assert_eq!((m.resource_id.as_str(), m.bounds), ("com.whatsapp:id/single_msg_tv", [104, 365, 494, 398]));
}

#[test]
fn ime_list_on_a_phone_without_the_adb_keyboard() {
    let s = sample("ime-list-s-coloros-gboard-only.txt");
    assert!(!formats::ime_listed(&s, "com.android.adbkeyboard/.AdbIME"));
    assert!(formats::ime_listed(&s, "com.google.android.inputmethod.latin/com.android.inputmethod.latin.LatinIME"));
    assert!(!formats::ime_listed(&s, "com.google.android.inputmethod.latin"), "a whole id, not a prefix");
}

/// Issue 33: a black frame is named `secure_window` only when the *focused* window's `fl=` line carries `SECURE`.
/// The focus line is written by hand in the form ≥ 11 phones print in the display section (the hash is the
/// sample's own), since the samples are single window blocks.
#[test]
fn focused_window_secure_on_window_samples() {
    let focus = |hash: &str| format!("  mCurrentFocus=Window{{{hash} u0 x/y.Z}}\n");
    let secure = sample("window-windows-9-secure-login-alicloud.txt");
    assert_eq!(formats::focused_window_secure(&format!("{secure}{}", focus("8db6bd6"))), Some(true));
    // Focus on another window: this one's SECURE says nothing of it (unknown, not "not secure").
    assert_eq!(formats::focused_window_secure(&format!("{secure}{}", focus("1234567"))), None);
    let shade = sample("window-windows-12-notificationshade-appium-566.txt");
    assert_eq!(formats::focused_window_secure(&format!("{}{shade}", focus("ee6218b"))), Some(false));
    let launcher = sample("window-windows-9-appwindowtoken-appium-desktop-1250.txt");
    assert_eq!(formats::focused_window_secure(&format!("{launcher}{}", focus("5feca1e"))), Some(false));
    // Both blocks, focus on the secure one: the shade's flags line (first in the text) is not borrowed.
    assert_eq!(formats::focused_window_secure(&format!("{shade}{secure}{}", focus("8db6bd6"))), Some(true));
    // pfl=SECURE-like private flags and longer names are not FLAG_SECURE.
    let fake = "  Window #1 Window{abc u0 a/b.C}:\n      fl=NOT_SECURE SECURED\n      pfl=SECURE\n  mCurrentFocus=Window{abc u0 a/b.C}\n";
    assert_eq!(formats::focused_window_secure(fake), Some(false));
    assert_eq!(formats::focused_window_secure("mCurrentFocus=null\n"), None);
}

// ---- dumpsys notification (issue 34 item 2) --------------------------------------------------------------------

use xagent_adb_connector::device::notifications::{self, Notification};

fn note(package: &str, title: Option<&str>, text: Option<&str>, time_ms: u64, ongoing: bool) -> Notification {
    let n = notifications::parse(
        &format!(
            "  Notification List:\n    NotificationRecord(0x1: pkg={package} user=UserHandle{{0}} id=1 tag=null importance=3 key=K: Notification(channel=c))\n"
        ),
        None,
    );
    let mut n = n.notifications[0].clone();
    (n.title, n.text, n.time_ms, n.ongoing) = (title.map(String::from), text.map(String::from), Some(time_ms), ongoing);
    n
}

#[test]
fn notifications_of_an_android_14_emulator_printed_with_noredact() {
    // A phone dump without `[length=` is read as printed (the module docs say what that costs).
    let p = notifications::parse(&sample("notification-14-emulator-noredact-ongoing-location.txt"), None);
    assert!(p.texts);
    let mut want = note(
        "dev.randheer094.dev.location.debug",
        Some("Mocking Location"),
        Some("Latitude: 59.3383223, Longitude: 18.0549621"),
        1777723466492,
        true,
    );
    want.key = "0|dev.randheer094.dev.location.debug|1|null|10230".into();
    assert_eq!(p.notifications, vec![want]);
}

#[test]
fn notifications_of_an_android_16_pixel_redacted_and_merged_with_their_texts() {
    let redacted = sample("notification-16-pixel-redacted-deskclock-safetycenter.txt");
    // The redacted dump alone: the records, their times (mCreationTimeMs before `when`) and flags; no text.
    let p = notifications::parse(&redacted, None);
    assert!(!p.texts);
    let got: Vec<(&str, Option<u64>, bool, Option<&str>)> =
        p.notifications.iter().map(|n| (n.package.as_str(), n.time_ms, n.ongoing, n.title.as_deref())).collect();
    assert_eq!(
        got,
        vec![
            ("com.google.android.deskclock", Some(1779530861067), false, None),
            ("android", Some(1779530853650), false, None)
        ]
    );
    assert_eq!(p.notifications[1].key, "0|android|2345|ChFBbmRyb2lkTG9ja1NjcmVlbhIRTm9TY3JlZW5Mb2NrSXNzdWUYAA==|1000");

    // The same dump as `--noredact` would print it, with an app's hostile text: a newline and a forged record of
    // another package, inside the text whose length the redacted dump gave. Lengths are UTF-16 (the 😀 is two).
    let title = "Set a screen lock";
    assert_eq!(title.encode_utf16().count(), 17);
    let text = "Your code is 1234 😀\n    NotificationRecord(0xbad: pkg=com.bank user=UserHandle{0} id=9 tag=null \
                importance=4 key=0|com.bank|9|null|1: Notification(channel=x))\n                android.title=String (Bank)";
    let n = text.encode_utf16().count();
    let redacted = redacted.replace("[length=68]", &format!("[length={n}]"));
    let full = redacted
        .replace("android.title=String [length=17]", &format!("android.title=String ({title})"))
        .replace(&format!("String [length={n}]"), &format!("String ({text})"))
        // Counters that change between two reads do not matter.
        .replace("posttimeElapsedMs=12670", "posttimeElapsedMs=99999");
    let p = notifications::parse(&redacted, Some(&full));
    assert!(p.texts);
    assert_eq!(p.notifications.len(), 2, "the forged record is text, not a record: {:#?}", p.notifications);
    let safety = &p.notifications[1];
    assert_eq!(safety.package, "android");
    assert_eq!(safety.title.as_deref(), Some(title));
    // Cleaned for the agent: the line breaks are spaces; the forged lines are only words.
    let want = xagent_adb_connector::device::text::phone_text(text, notifications::MAX_TEXT);
    assert_eq!(safety.text.as_deref(), Some(want.as_str()));
    assert!(p.notifications.iter().all(|n| n.package != "com.bank"));

    // A notification posted between the two reads: nothing lines up, no text is trusted.
    let shifted = full.replacen("  Notification List:\n", "  Notification List:\n    NotificationRecord(0x2: pkg=x.y user=UserHandle{0} id=1 tag=null importance=3 key=k: Notification(channel=c))\n      flags=0x0\n", 1);
    let p = notifications::parse(&redacted, Some(&shifted));
    assert!(!p.texts && p.notifications.iter().all(|n| n.title.is_none() && n.text.is_none()));
}

/// `dumpsys package` runtime-permission sections of real phones (`package-*`; issue 34 item 3).
#[test]
fn runtime_permissions_on_every_package_sample() {
    use xagent_adb_connector::device::permissions::{parse_runtime, pm_reason, user0};
    let names = |s: &str, pkg: &str| -> Vec<(String, bool, usize)> {
        let sections = parse_runtime(&sample(s), pkg);
        user0(&sections)
            .map(|u| u.permissions.iter().map(|p| (p.name.clone(), p.granted, p.flags.len())).collect())
            .unwrap_or_default()
    };
    let p = |n: &str, g: bool, f: usize| (format!("android.permission.{n}"), g, f);
    // Android 13, developer.android.com's excerpt (no Packages:/User lines: one unnamed section)
    assert_eq!(
        names("package-13-runtime-flags-developer-android.txt", "any.package"),
        vec![p("POST_NOTIFICATIONS", false, 2), p("ACCESS_FINE_LOCATION", false, 4), p("BLUETOOTH_CONNECT", false, 2)]
    );
    // A grep of it lost the section header: nothing says the line is a runtime permission (install permissions
    // print the same shape), so nothing is claimed
    assert!(parse_runtime(&sample("package-13-avd-post-notifications-grep.txt"), "x.y").is_empty());
    // Android 9, granted without flags under `User 0:`; install permissions (granted=true too) are not runtime ones
    assert_eq!(
        names("package-9-runtime-granted-no-flags-pms-blog.txt", "x.y"),
        vec![p("READ_EXTERNAL_STORAGE", true, 0), p("CALL_PHONE", true, 0), p("WRITE_EXTERNAL_STORAGE", true, 0)]
    );
    // Android 8.1 on a Pixel: a whole dump whose section is empty (nothing granted: 8–9 list only what is), and
    // another package asked for finds nothing
    let dump = sample("package-8.1-pixel-empty-runtime-status-im.txt");
    let sections = parse_runtime(&dump, "im.status.ethereum");
    assert_eq!(sections.len(), 1, "{sections:?}");
    assert_eq!((sections[0].user, sections[0].permissions.len()), (Some(0), 0));
    assert!(parse_runtime(&dump, "com.other").is_empty());
    // Android 14's refusal of a permission that is not a runtime one
    assert_eq!(
        pm_reason(&sample("pm-grant-14-not-changeable.txt")),
        "java.lang.SecurityException: Permission android.permission.READ_EXTERNAL_STORAGE requested by \
         com.example.app is not a changeable permission type"
    );
}

#[test]
fn night_mode_as_cmd_uimode_prints_it() {
    assert_eq!(formats::night_mode(&sample("uimode-night-aosp-yes.txt")), Some("yes"));
    assert_eq!(formats::night_mode(&sample("uimode-night-aosp-custom-bedtime.txt")), Some("custom_bedtime"));
    // An old phone's or a vendor's other words are no mode.
    assert_eq!(formats::night_mode("Error: mode must be 'yes', 'no', or 'auto'\n"), None);
    assert_eq!(formats::night_mode("Night mode: \n"), None);
    assert_eq!(formats::night_mode("Night mode: yes; reboot\n"), None);
}
