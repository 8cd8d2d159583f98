//! Builtin implementations of the Android commands the sim understands.
//!
//! Output strings copy the real tools' wording (including quirks such as uiautomator's
//! "hierchary" typo) because connectors parse them; exit statuses follow toybox/mksh.

use std::time::Duration;

use super::device::{format_log, now_unix_secs, Device, Package};
use super::shell::{run_script, CmdIo};
use super::ui::{Activity, TapOutcome, HOME_PACKAGE};
use super::{FrameLie, InputEvent};

/// Runs one simple command. `argv[0]` may be a full path (`/system/bin/input`). The phone's time for starting
/// and running it ([`super::PhoneCosts::command`]) is added to the line's time.
pub fn run(dev: &mut Device, argv: &[String], stdin: &[u8], io: &mut CmdIo) -> i32 {
    let name = argv[0].rsplit('/').next().unwrap_or("");
    if !dev.cfg.missing_commands.iter().any(|m| m == name) {
        let words: Vec<&str> = argv.iter().map(String::as_str).collect();
        io.sleep += dev.cfg.costs.command(dev.cfg.sdk, &words);
    }
    dispatch(dev, argv, stdin, io)
}

/// [`run`] without the start cost: `cmd SERVICE …` reaches its tool through here (`cmd` was charged once).
fn dispatch(dev: &mut Device, argv: &[String], stdin: &[u8], io: &mut CmdIo) -> i32 {
    let name = argv[0].rsplit('/').next().unwrap_or("").to_string();
    let args: Vec<&str> = argv[1..].iter().map(String::as_str).collect();
    if dev.cfg.missing_commands.contains(&name) {
        io.err(&format!("/system/bin/sh: {}: inaccessible or not found\n", argv[0]));
        return 127;
    }
    match name.as_str() {
        "true" | ":" | "cd" | "export" | "chmod" | "chown" | "sync" => 0,
        "false" => 1,
        "echo" => echo(&args, io),
        "exit" => {
            let code = args.first().and_then(|a| a.parse::<i32>().ok()).unwrap_or(0);
            io.exit = Some(code & 0xff);
            code & 0xff
        }
        "sleep" => {
            let secs: f64 = args.first().and_then(|a| a.trim_end_matches('s').parse().ok()).unwrap_or(-1.0);
            if !(0.0..=1e6).contains(&secs) {
                io.err("sleep: bad argument\n");
                return 1;
            }
            io.sleep += Duration::from_secs_f64(secs);
            0
        }
        "id" => {
            io.out("uid=2000(shell) gid=2000(shell) groups=2000(shell),1004(input),1007(log),1011(adb),1015(sdcard_rw),1028(sdcard_r),3001(net_bt_admin),3002(net_bt),3003(inet),3006(net_bw_stats),3009(readproc),3011(uhid) context=u:r:shell:s0\n");
            0
        }
        "whoami" => {
            io.out("shell\n");
            0
        }
        "pwd" => {
            io.out("/\n");
            0
        }
        "date" => {
            if args.first() == Some(&"+%s") {
                io.out(&format!("{}\n", now_unix_secs()));
            } else {
                io.out(&format!(
                    "{}\n",
                    super::device::format_log(
                        &super::device::LogLine {
                            unix_ms: super::device::now_unix_ms(),
                            pid: 0,
                            tid: 0,
                            prio: 'I',
                            tag: String::new(),
                            msg: String::new()
                        },
                        "time"
                    )
                    .split(' ')
                    .take(2)
                    .collect::<Vec<_>>()
                    .join(" ")
                ));
            }
            0
        }
        "sh" => {
            if args.first() == Some(&"-c") {
                let script = args.get(1).copied().unwrap_or("");
                let r = run_script(dev, script, stdin);
                io.out.extend_from_slice(&r.stdout);
                io.err.extend_from_slice(&r.stderr);
                io.sleep += r.sleep;
                io.follow |= r.follow;
                r.status
            } else {
                0
            }
        }
        "getprop" => getprop(dev, &args, io),
        "setprop" => {
            if args.len() != 2 {
                io.err("usage: setprop NAME VALUE\n");
                return 1;
            }
            if args[0].starts_with("ro.") && dev.props.contains_key(args[0]) {
                io.err(&format!(
                    "Failed to set property '{}' to '{}'.\nSee dmesg for error reason.\n",
                    args[0], args[1]
                ));
                return 1;
            }
            dev.props.insert(args[0].into(), args[1].into());
            0
        }
        "wm" => wm(dev, &args, io),
        "input" => input(dev, &args, io),
        "screencap" => screencap(dev, &args, io),
        "screenrecord" => super::record::screenrecord(dev, &args, io),
        // toybox gzip: in Android's toybox since 8.0 (tests/fixtures/real/toybox-applets-by-android-version.md).
        "gzip" if dev.cfg.sdk >= GZIP_SINCE_SDK => gzip(dev, &args, stdin, io),
        // toybox nproc: new in Android 10's toybox (AOSP shell_and_utilities/README.md, tests/fixtures/real/).
        "nproc" if dev.cfg.sdk >= NPROC_SINCE_SDK => {
            io.out(&format!("{}\n", dev.cfg.cpus.max(1)));
            0
        }
        "dd" => dd(dev, &args, stdin, io),
        "stat" => stat(dev, &args, io),
        "find" => find(dev, &args, io),
        "umask" => match args.first() {
            None => {
                io.out(&format!("{:04o}\n", dev.umask));
                0
            }
            Some(m) => match u32::from_str_radix(m, 8) {
                Ok(v) if v <= 0o777 => {
                    dev.umask = v;
                    0
                }
                _ => {
                    io.err(&format!("/system/bin/sh: umask: {m}: bad number\n"));
                    1
                }
            },
        },
        "uiautomator" => uiautomator(dev, &args, io),
        "cat" => cat(dev, &args, stdin, io),
        "df" => df(dev, &args, io),
        "rm" => rm(dev, &args, io),
        "ps" => super::helper::ps(dev, io),
        "kill" => super::helper::kill(dev, &args, io),
        "ls" => ls(dev, &args, io),
        "mkdir" => {
            let parents = args.contains(&"-p");
            let mut rc = 0;
            for p in args.iter().filter(|a| !a.starts_with('-')) {
                if let Err(e) = dev.fs.mkdir(p, parents) {
                    if !(parents && e == super::fs::FsError::NotDir) {
                        io.err(&format!("mkdir: '{p}': {}\n", e.message()));
                        rc = 1;
                    }
                }
            }
            rc
        }
        "touch" => {
            let mut rc = 0;
            for p in args.iter().filter(|a| !a.starts_with('-')) {
                if dev.fs.stat(p).is_err() {
                    if let Err(e) = dev.fs.write(p, Vec::new(), 0o660, now_unix_secs(), false) {
                        io.err(&format!("touch: '{p}': {}\n", e.message()));
                        rc = 1;
                    }
                }
            }
            rc
        }
        "cp" | "mv" => {
            let files: Vec<&&str> = args.iter().filter(|a| !a.starts_with('-')).collect();
            if files.len() != 2 {
                io.err(&format!("{name}: Need 2 arguments\n"));
                return 1;
            }
            let data = match dev.fs.read(files[0]) {
                Ok(d) => d.to_vec(),
                Err(e) => {
                    io.err(&format!("{name}: {}: {}\n", files[0], e.message()));
                    return 1;
                }
            };
            let mut dst = files[1].to_string();
            if dev.fs.stat(&dst).map(|s| s.is_dir()).unwrap_or(false) {
                dst = format!("{dst}/{}", files[0].rsplit('/').next().unwrap_or(""));
            }
            if let Err(e) = dev.fs.write(&dst, data, 0o660, now_unix_secs(), false) {
                io.err(&format!("{name}: {dst}: {}\n", e.message()));
                return 1;
            }
            if name == "mv" {
                let _ = dev.fs.remove(files[0], false);
            }
            0
        }
        "grep" => grep(&args, stdin, io),
        "head" | "tail" => head_tail(&name, &args, stdin, io),
        "wc" => {
            let text = String::from_utf8_lossy(stdin);
            if args.contains(&"-l") {
                io.out(&format!("{}\n", text.matches('\n').count()));
            } else if args.contains(&"-c") {
                io.out(&format!("{}\n", stdin.len()));
            } else {
                io.out(&format!(
                    "{} {} {}\n",
                    text.matches('\n').count(),
                    text.split_whitespace().count(),
                    stdin.len()
                ));
            }
            0
        }
        "pm" => pm(dev, &args, stdin, io),
        "am" => am(dev, &args, io),
        "monkey" => monkey(dev, &args, io),
        "dumpsys" => dumpsys(dev, &args, io),
        "logcat" => logcat(dev, &args, io),
        "settings" => settings(dev, &args, io),
        "ime" => ime(dev, &args, io),
        "svc" => 0,
        "cmd" => {
            let Some(service) = args.first() else {
                io.err("cmd: No service specified; use -l to list all running services.\n");
                return 255;
            };
            let tool = match *service {
                "package" => "pm",
                "activity" => "am",
                "window" => "wm",
                "input" => "input",
                "settings" => "settings",
                "input_method" => "ime",
                "uimode" => return super::uimode::uimode(dev, &args[1..], io),
                "battery" | "statusbar" | "power" => "svc",
                other => {
                    io.err(&format!("cmd: Can't find service: {other}\n"));
                    return 20;
                }
            };
            let mut v = vec![tool.to_string()];
            v.extend(args[1..].iter().map(|s| s.to_string()));
            dispatch(dev, &v, stdin, io)
        }
        _ => {
            io.err(&format!("/system/bin/sh: {}: inaccessible or not found\n", argv[0]));
            127
        }
    }
}

fn echo(args: &[&str], io: &mut CmdIo) -> i32 {
    let mut newline = true;
    let mut rest = args;
    while let Some(first) = rest.first() {
        match *first {
            "-n" => newline = false,
            "-e" | "-E" => {}
            _ => break,
        }
        rest = &rest[1..];
    }
    io.out(&rest.join(" "));
    if newline {
        io.out("\n");
    }
    0
}

fn getprop(dev: &Device, args: &[&str], io: &mut CmdIo) -> i32 {
    match args.first() {
        None => {
            for (k, v) in &dev.props {
                io.out(&format!("[{k}]: [{v}]\n"));
            }
        }
        Some(k) => {
            let v = dev.props.get(*k).cloned().or_else(|| args.get(1).map(|s| s.to_string())).unwrap_or_default();
            io.out(&format!("{v}\n"));
        }
    }
    0
}

fn wm(dev: &mut Device, args: &[&str], io: &mut CmdIo) -> i32 {
    match args.first() {
        // Silent and exit 0 whatever the keyguard does, as on a real phone (a secure keyguard shows its bouncer).
        Some(&"dismiss-keyguard") => {
            dev.ui.dismiss_keyguard();
            0
        }
        Some(&"size") => {
            io.out(&format!("Physical size: {}x{}\n", dev.cfg.screen_width, dev.cfg.screen_height));
            0
        }
        Some(&"density") => {
            io.out(&format!("Physical density: {}\n", dev.cfg.density));
            0
        }
        _ => {
            io.err("Error: unknown command\n");
            255
        }
    }
}

fn parse_coord(s: &str) -> Option<i32> {
    let f: f64 = s.parse().ok()?;
    f.is_finite().then_some(f.round() as i32)
}

const INPUT_SOURCES: &[&str] = &[
    "keyboard",
    "mouse",
    "joystick",
    "touchnavigation",
    "touchpad",
    "trackball",
    "stylus",
    "dpad",
    "gesture",
    "touchscreen",
    "gamepad",
];

const KEYCODES: &[(u32, &str)] = &[
    (0, "UNKNOWN"),
    (1, "SOFT_LEFT"),
    (2, "SOFT_RIGHT"),
    (3, "HOME"),
    (4, "BACK"),
    (5, "CALL"),
    (6, "ENDCALL"),
    (7, "0"),
    (8, "1"),
    (9, "2"),
    (10, "3"),
    (11, "4"),
    (12, "5"),
    (13, "6"),
    (14, "7"),
    (15, "8"),
    (16, "9"),
    (17, "STAR"),
    (18, "POUND"),
    (19, "DPAD_UP"),
    (20, "DPAD_DOWN"),
    (21, "DPAD_LEFT"),
    (22, "DPAD_RIGHT"),
    (23, "DPAD_CENTER"),
    (24, "VOLUME_UP"),
    (25, "VOLUME_DOWN"),
    (26, "POWER"),
    (27, "CAMERA"),
    (28, "CLEAR"),
    (29, "A"),
    (30, "B"),
    (31, "C"),
    (32, "D"),
    (33, "E"),
    (34, "F"),
    (35, "G"),
    (36, "H"),
    (37, "I"),
    (38, "J"),
    (39, "K"),
    (40, "L"),
    (41, "M"),
    (42, "N"),
    (43, "O"),
    (44, "P"),
    (45, "Q"),
    (46, "R"),
    (47, "S"),
    (48, "T"),
    (49, "U"),
    (50, "V"),
    (51, "W"),
    (52, "X"),
    (53, "Y"),
    (54, "Z"),
    (55, "COMMA"),
    (56, "PERIOD"),
    (61, "TAB"),
    (62, "SPACE"),
    (64, "EXPLORER"),
    (66, "ENTER"),
    (67, "DEL"),
    (82, "MENU"),
    (84, "SEARCH"),
    (85, "MEDIA_PLAY_PAUSE"),
    (86, "MEDIA_STOP"),
    (87, "MEDIA_NEXT"),
    (88, "MEDIA_PREVIOUS"),
    (92, "PAGE_UP"),
    (93, "PAGE_DOWN"),
    (111, "ESCAPE"),
    (112, "FORWARD_DEL"),
    (122, "MOVE_HOME"),
    (123, "MOVE_END"),
    (164, "VOLUME_MUTE"),
    (176, "SETTINGS"),
    (187, "APP_SWITCH"),
    (220, "BRIGHTNESS_DOWN"),
    (221, "BRIGHTNESS_UP"),
    (223, "SLEEP"),
    (224, "WAKEUP"),
    (276, "SOFT_SLEEP"),
    (279, "PASTE"),
    (280, "SYSTEM_NAVIGATION_UP"),
];

/// Resolves `3`, `HOME` or `KEYCODE_HOME` to the canonical `KEYCODE_HOME` name.
pub fn keycode_name(s: &str) -> Option<String> {
    if let Ok(n) = s.parse::<u32>() {
        return match KEYCODES.iter().find(|(c, _)| *c == n) {
            Some((_, name)) => Some(format!("KEYCODE_{name}")),
            None if n <= 320 => Some(format!("KEYCODE_{n}")),
            None => None,
        };
    }
    let bare = s.strip_prefix("KEYCODE_").unwrap_or(s);
    KEYCODES.iter().find(|(_, name)| name.eq_ignore_ascii_case(bare)).map(|(_, name)| format!("KEYCODE_{name}"))
}

/// A tap reaching the UI: recorded, logged as the dispatcher would, applied. `input tap` and the phone helper's
/// `tap` both end here, so either path changes the phone the same way.
pub(crate) fn tap(dev: &mut Device, x: i32, y: i32) {
    dev.record_event(InputEvent::Tap { x, y });
    dev.log('D', "InputDispatcher", &format!("Delivering touch to window: tap x={x} y={y}"));
    match dev.ui.tap(x, y) {
        TapOutcome::Incremented => {
            let n = dev.ui.counter;
            dev.log('I', "SimHome", &format!("Increment clicked, Count: {n}"));
        }
        TapOutcome::FocusedField => dev.log('I', "SimHome", "Text field focused"),
        TapOutcome::Launched => dev.log('I', "ActivityTaskManager", "START u0 {cmp=com.xagent.demo/.MainActivity}"),
        TapOutcome::Clicked(label) => dev.log('I', "DemoList", &format!("Clicked {label}")),
        TapOutcome::Nothing => {}
    }
}

/// A swipe (or, start = end, a long press) reaching the UI; the caller holds its duration.
pub(crate) fn swipe(dev: &mut Device, [x1, y1, x2, y2]: [i32; 4], duration_ms: u32) {
    dev.record_event(InputEvent::Swipe { x1, y1, x2, y2, duration_ms });
    dev.ui.swipe(x1, y1, x2, y2);
    dev.log('D', "InputDispatcher", &format!("Delivering swipe ({x1},{y1})->({x2},{y2}) {duration_ms}ms"));
}

/// Text reaching the focused field (as key events or pasted).
pub(crate) fn type_text(dev: &mut Device, text: &str) {
    dev.record_event(InputEvent::Text(text.to_owned()));
    dev.log('D', "InputDispatcher", &format!("Injecting text ({} chars)", text.chars().count()));
    dev.ui.type_text(text);
}

/// One key press (`KEYCODE_…` name) reaching the UI.
pub(crate) fn key(dev: &mut Device, name: &str) {
    dev.record_event(InputEvent::Key(name.to_owned()));
    dev.log('D', "InputDispatcher", &format!("Injecting key {name}"));
    dev.ui.key(name);
}

fn input(dev: &mut Device, args: &[&str], io: &mut CmdIo) -> i32 {
    let mut args = args;
    // Optional `-d DISPLAY` and input source, as in `input [-d DISPLAY] [source] command`.
    loop {
        match args.first() {
            Some(&"-d") if args.len() >= 2 => args = &args[2..],
            Some(s) if INPUT_SOURCES.contains(s) => args = &args[1..],
            _ => break,
        }
    }
    let usage = |io: &mut CmdIo, cmd: &str| {
        io.err(&format!("Error: Invalid arguments for command: {cmd}\nUsage: input [<source>] [-d DISPLAY_ID] <command> [<arg>...]\n"));
        1
    };
    let Some(cmd) = args.first().copied() else {
        return usage(io, "");
    };
    let rest = &args[1..];
    match cmd {
        "tap" => {
            let (Some(x), Some(y)) =
                (rest.first().and_then(|s| parse_coord(s)), rest.get(1).and_then(|s| parse_coord(s)))
            else {
                return usage(io, cmd);
            };
            if rest.len() != 2 {
                return usage(io, cmd);
            }
            tap(dev, x, y);
            0
        }
        "swipe" | "draganddrop" => {
            let nums: Vec<Option<i32>> = rest.iter().map(|s| parse_coord(s)).collect();
            if !(4..=5).contains(&nums.len()) || nums.iter().any(Option::is_none) {
                return usage(io, cmd);
            }
            let n: Vec<i32> = nums.into_iter().flatten().collect();
            let duration_ms = n.get(4).copied().unwrap_or(300).max(0) as u32;
            swipe(dev, [n[0], n[1], n[2], n[3]], duration_ms);
            io.sleep += Duration::from_millis(u64::from(duration_ms.min(10_000)));
            0
        }
        "text" => {
            let Some(t) = rest.first() else {
                return usage(io, cmd);
            };
            // Android's `input text` turns "%s" into a space (spaces cannot cross `adb shell`).
            let text = t.replace("%s", " ");
            type_text(dev, &text);
            0
        }
        "keyevent" | "press" => {
            let codes: Vec<&str> = if cmd == "press" {
                vec!["KEYCODE_DPAD_CENTER"]
            } else {
                let mut v = Vec::new();
                let mut i = 0;
                while i < rest.len() {
                    match rest[i] {
                        "--longpress" | "--doubletap" => {}
                        "--delay" => i += 1,
                        c => v.push(c),
                    }
                    i += 1;
                }
                v
            };
            if codes.is_empty() {
                return usage(io, cmd);
            }
            for c in codes {
                let Some(name) = keycode_name(c) else {
                    io.err(&format!("Error: Unknown keycode '{c}'\n"));
                    return 1;
                };
                key(dev, &name);
            }
            0
        }
        _ => {
            io.err(&format!("Error: Unknown command: {cmd}\n"));
            1
        }
    }
}

/// A well-formed PNG that claims `w` × `h` RGBA pixels and holds none (signature, IHDR, an empty IDAT, IEND):
/// what a decoder sees first is the header, so a decoder that trusts it allocates before it finds out.
fn huge_png(w: u32, h: u32) -> Vec<u8> {
    fn crc32(bytes: &[u8]) -> u32 {
        let mut c = 0xFFFF_FFFFu32;
        for &b in bytes {
            c ^= u32::from(b);
            for _ in 0..8 {
                c = if c & 1 != 0 { 0xEDB8_8320 ^ (c >> 1) } else { c >> 1 };
            }
        }
        !c
    }
    let mut out = b"\x89PNG\r\n\x1a\n".to_vec();
    let mut chunk = |kind: &[u8; 4], data: &[u8]| {
        out.extend_from_slice(&(data.len() as u32).to_be_bytes());
        let body = [&kind[..], data].concat();
        out.extend_from_slice(&body);
        out.extend_from_slice(&crc32(&body).to_be_bytes());
    };
    let mut ihdr = Vec::new();
    ihdr.extend_from_slice(&w.to_be_bytes());
    ihdr.extend_from_slice(&h.to_be_bytes());
    ihdr.extend_from_slice(&[8, 6, 0, 0, 0]); // 8-bit RGBA, deflate, adaptive filter, no interlace
    chunk(b"IHDR", &ihdr);
    chunk(b"IDAT", &[0x78, 0x9c, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01]); // an empty zlib stream
    chunk(b"IEND", &[]);
    out
}

/// First SDK whose toybox has `nproc` (Android 10, toybox 0.8.0; AOSP `shell_and_utilities/README.md`).
pub const NPROC_SINCE_SDK: u32 = 29;

/// First SDK whose `dd` is toybox's (Android 10); before, AOSP shipped NetBSD's `dd` (same operands, its own
/// summary line).
const TOYBOX_DD_SINCE_SDK: u32 = 29;

/// A `dd` size operand: decimal with the suffixes both toybox and BSD dd take (`k` = 1024, `m`, `g`; `b` = 512).
fn dd_number(v: &str) -> Option<u64> {
    let (digits, mult) = match v.char_indices().last()? {
        (i, 'k' | 'K') => (&v[..i], 1u64 << 10),
        (i, 'm' | 'M') => (&v[..i], 1 << 20),
        (i, 'g' | 'G') => (&v[..i], 1 << 30),
        (i, 'b') => (&v[..i], 512),
        _ => (v, 1),
    };
    digits.parse::<u64>().ok()?.checked_mul(mult)
}

/// `dd [if=F] [of=F] [bs=N] [ibs=N] [obs=N] [skip=N] [count=N] [status=…]`: copies `count` input blocks of `bs`
/// bytes starting `skip` blocks in (a regular file: every read is a full block but the last). Reads the simulated
/// file system; the page cache makes that free on a phone too (the file was just written), so no cost is paid. The
/// summary goes to stderr as toybox (Android 10+) or NetBSD dd (before) prints it.
fn dd(dev: &mut Device, args: &[&str], stdin: &[u8], io: &mut CmdIo) -> i32 {
    let (mut input, mut output, mut bs, mut skip, mut count, mut quiet) = (None, None, 512u64, 0u64, None, false);
    for a in args {
        let Some((k, v)) = a.split_once('=') else {
            io.err(&format!("dd: unknown operand {a}\n"));
            return 1;
        };
        let num = || dd_number(v);
        match k {
            "if" => input = Some(v.to_string()),
            "of" => output = Some(v.to_string()),
            "status" => quiet = v == "none",
            "bs" | "ibs" | "obs" | "skip" | "count" => {
                let Some(n) = num() else {
                    io.err(&format!("dd: {k}: invalid number '{v}'\n"));
                    return 1;
                };
                match k {
                    "skip" => skip = n,
                    "count" => count = Some(n),
                    _ if n == 0 => {
                        io.err(&format!("dd: {k}: invalid number '{v}'\n"));
                        return 1;
                    }
                    "obs" => {}
                    _ => bs = n,
                }
            }
            _ => {
                io.err(&format!("dd: unknown operand {k}\n"));
                return 1;
            }
        }
    }
    let data: &[u8] = match &input {
        None => stdin,
        Some(f) => match dev.fs.read(f) {
            Ok(d) => d,
            Err(e) => {
                io.err(&format!("dd: {f}: {}\n", e.message()));
                return 1;
            }
        },
    };
    let start = skip.saturating_mul(bs).min(data.len() as u64) as usize;
    let mut end = data.len();
    if let Some(c) = count {
        end = end.min(start.saturating_add(c.saturating_mul(bs).min(usize::MAX as u64) as usize));
    }
    let chunk = data[start..end].to_vec();
    let bs = bs as usize;
    let (full, partial) = (chunk.len() / bs, usize::from(chunk.len() % bs != 0));
    let bytes = chunk.len();
    match output {
        Some(f) => {
            if let Err(e) = dev.fs.write(&f, chunk, 0o666 & !dev.umask, now_unix_secs(), false) {
                io.err(&format!("dd: {f}: {}\n", e.message()));
                return 1;
            }
        }
        None => io.out.extend_from_slice(&chunk),
    }
    if !quiet {
        io.err(&format!("{full}+{partial} records in\n{full}+{partial} records out\n"));
        if dev.cfg.sdk >= TOYBOX_DD_SINCE_SDK {
            io.err(&format!(
                "{bytes} bytes ({:.1} M) copied, 0.010 s, {:.0} M/s\n",
                bytes as f64 / 1048576.0,
                bytes as f64 / 10485.76
            ));
        } else {
            io.err(&format!("{bytes} bytes transferred in 0.010 secs ({} bytes/sec)\n", bytes * 100));
        }
    }
    0
}

/// A `find -name` pattern: `*` and `?` (what the connector's sweep uses; no character classes).
fn glob_match(pat: &[u8], s: &[u8]) -> bool {
    match pat.split_first() {
        None => s.is_empty(),
        Some((b'*', rest)) => (0..=s.len()).any(|i| glob_match(rest, &s[i..])),
        Some((b'?', rest)) => !s.is_empty() && glob_match(rest, &s[1..]),
        Some((c, rest)) => s.first() == Some(c) && glob_match(rest, &s[1..]),
    }
}

/// toybox `find DIR [-maxdepth N] [-name PATTERN] [-type f|d] [-mmin ±N] [-delete|-print]`, the primaries the
/// connector's sweep of stale captures uses (any other is refused on stderr, as toybox refuses unknown ones). One
/// level below DIR is all the simulated file system needs (`-maxdepth 1`); without `-delete` matches are printed.
fn find(dev: &mut Device, args: &[&str], io: &mut CmdIo) -> i32 {
    let Some((dir, rest)) = args.split_first() else {
        io.err("find: Needs 1 argument\n");
        return 1;
    };
    let (mut name, mut kind, mut mmin, mut delete) = (None, None, None::<(char, u64)>, false);
    let mut it = rest.iter();
    while let Some(a) = it.next() {
        match *a {
            "-maxdepth" | "-name" | "-type" | "-mmin" => {
                let Some(v) = it.next() else {
                    io.err(&format!("find: '{a}' needs 1 arg\n"));
                    return 1;
                };
                match *a {
                    "-name" => name = Some(v.to_string()),
                    "-type" => kind = v.chars().next(),
                    "-mmin" => {
                        let (sign, n) = match v.chars().next() {
                            Some(c @ ('+' | '-')) => (c, &v[1..]),
                            _ => ('=', *v),
                        };
                        let Ok(n) = n.parse::<u64>() else {
                            io.err(&format!("find: not a number '{v}'\n"));
                            return 1;
                        };
                        mmin = Some((sign, n));
                    }
                    _ => {}
                }
            }
            "-delete" => delete = true,
            "-print" => {}
            other => {
                io.err(&format!("find: Unknown option '{other}'\n"));
                return 1;
            }
        }
    }
    let entries = match dev.fs.list(dir) {
        Ok(e) => e,
        Err(e) => {
            io.err(&format!("find: '{dir}': {}\n", e.message()));
            return 1;
        }
    };
    let now = u64::from(now_unix_secs());
    let mut rc = 0;
    for (child, st) in entries {
        let is_dir = st.mode & 0o170000 == 0o040000;
        if kind.is_some_and(|k| (k == 'd') != is_dir)
            || name.as_ref().is_some_and(|n| !glob_match(n.as_bytes(), child.as_bytes()))
        {
            continue;
        }
        if let Some((sign, n)) = mmin {
            // Minutes of age, rounded up as find counts them.
            let age = now.saturating_sub(u64::from(st.mtime)).div_ceil(60);
            let hit = match sign {
                '+' => age > n,
                '-' => age < n,
                _ => age == n,
            };
            if !hit {
                continue;
            }
        }
        let path = format!("{}/{child}", dir.trim_end_matches('/'));
        if delete {
            if let Err(e) = dev.fs.remove(&path, false) {
                io.err(&format!("find: '{path}': {}\n", e.message()));
                rc = 1;
            }
        } else {
            io.out(&format!("{path}\n"));
        }
    }
    rc
}

/// toybox `stat [-c FORMAT] FILE…`: `%s` size, `%a` octal permissions, `%n` name, `%Y` mtime; without `-c`
/// only the size line matters to anyone here, so the sim refuses the default format rather than fake it.
fn stat(dev: &Device, args: &[&str], io: &mut CmdIo) -> i32 {
    let (fmt, files) = match args {
        ["-c", fmt, files @ ..] => (*fmt, files),
        _ => {
            io.err("stat: the simulator knows only `stat -c FORMAT FILE…`\n");
            return 1;
        }
    };
    if files.is_empty() {
        io.err("stat: Needs 1 argument (see \"stat --help\")\n");
        return 1;
    }
    let mut rc = 0;
    for f in files {
        match dev.fs.stat(f) {
            Ok(st) => {
                let mut line = String::new();
                let mut chars = fmt.chars();
                while let Some(c) = chars.next() {
                    if c != '%' {
                        line.push(c);
                        continue;
                    }
                    match chars.next() {
                        Some('s') => line.push_str(&st.size.to_string()),
                        Some('a') => line.push_str(&format!("{:o}", st.mode & 0o7777)),
                        Some('n') => line.push_str(f),
                        Some('Y') => line.push_str(&st.mtime.to_string()),
                        Some(o) => {
                            line.push('%');
                            line.push(o);
                        }
                        None => line.push('%'),
                    }
                }
                io.out(&format!("{line}\n"));
            }
            Err(e) => {
                io.err(&format!("stat: '{f}': {}\n", e.message()));
                rc = 1;
            }
        }
    }
    rc
}

/// First SDK whose toybox has `gzip`/`gunzip`/`zcat` (Android 8.0, toybox 0.7.3; AOSP
/// `system/core/shell_and_utilities/README.md`).
pub const GZIP_SINCE_SDK: u32 = 26;

/// toybox `gzip [-19cdfkn]` on stdin → stdout (the only use a host has for it over adb). Output is a real gzip
/// member as zlib writes it (`deflateInit2` with a gzip wrapper: mtime 0, OS 3 = Unix).
fn gzip(dev: &mut Device, args: &[&str], stdin: &[u8], io: &mut CmdIo) -> i32 {
    let started = std::time::Instant::now();
    let mut level = 6;
    let mut decompress = false;
    for a in args {
        let Some(flags) = a.strip_prefix('-').filter(|f| !f.is_empty()) else {
            io.err(&format!("gzip: {a}: only stdin is supported by the simulator\n"));
            return 1;
        };
        for f in flags.chars() {
            match f {
                '1'..='9' => level = f as u32 - '0' as u32,
                'd' => decompress = true,
                'c' | 'f' | 'k' | 'n' => {}
                other => {
                    io.err(&format!("gzip: Unknown option '{other}' (see \"gzip --help\")\n"));
                    return 1;
                }
            }
        }
    }
    use std::io::Read;
    if decompress {
        let mut out = Vec::new();
        if flate2::read::GzDecoder::new(stdin).read_to_end(&mut out).is_err() {
            io.err("gzip: not gzip\n");
            return 1;
        }
        io.out.extend_from_slice(&out);
        return 0;
    }
    let lie = dev.frame_lie;
    let input = if lie == FrameLie::GzipShort { &stdin[..stdin.len().saturating_sub(4096)] } else { stdin };
    let made = if lie == FrameLie::GzipBomb { Ok(gzip_bomb(input, level)) } else { gzip_memo(input, level) };
    match made {
        Ok(mut v) => {
            if lie == FrameLie::GzipCorrupt && v.len() > 40 {
                let mid = v.len() / 2;
                v[mid] ^= 0x55;
            }
            io.out.extend_from_slice(&v)
        }
        Err(e) => {
            io.err(&format!("gzip: {e}\n"));
            return 1;
        }
    }
    // One core per gzip: it starts when the command line gets there (`io.at`) and a fast core is free, and ends
    // its input's cost later; the sim's own compression time counts against that.
    let cost = super::PhoneCosts::at_rate(stdin.len(), dev.cfg.costs.gzip_bytes_per_s);
    if !cost.is_zero() {
        let t0 = tokio::time::Instant::now() - started.elapsed();
        let end = dev.cores.run(dev.cfg.costs.cores, t0 + io.at, cost);
        io.sleep += end.saturating_duration_since(tokio::time::Instant::now() + io.at);
    }
    0
}

/// Large inputs gzipped lately, with their output: (level, input, output), newest last.
type GzipMemo = std::sync::Mutex<std::collections::VecDeque<(u32, Vec<u8>, Vec<u8>)>>;

/// Inputs of at least this size are remembered (captured frames and their ranges).
const MEMO_FROM: usize = 256 * 1024;

/// Most inputs remembered (a 4-stream capture of one screen is four; the scale bench's phones share screens).
const MEMO_ENTRIES: usize = 8;

/// gzip of `input` at `level` as zlib writes it. The output of a recent equal input (compared byte for byte) is
/// reused instead of compressed again: a phone's compression costs the phone's time (`PhoneCosts`, slept), and
/// the simulator burning the bench box's CPU for it would count against the connector it shares the box with
/// (the bench measures the connector's CPU per frame while the phone streams). Same bytes either way.
fn gzip_memo(input: &[u8], level: u32) -> std::io::Result<Vec<u8>> {
    use std::io::Write;
    static MEMO: GzipMemo = std::sync::Mutex::new(std::collections::VecDeque::new());
    let memo = || MEMO.lock().unwrap_or_else(|e| e.into_inner());
    if input.len() >= MEMO_FROM {
        if let Some((_, _, out)) = memo().iter().find(|(l, i, _)| *l == level && i.as_slice() == input) {
            return Ok(out.clone());
        }
    }
    let mut enc = flate2::GzBuilder::new()
        .operating_system(3)
        .write(Vec::with_capacity(input.len() / 8 + 64), flate2::Compression::new(level));
    enc.write_all(input)?;
    let out = enc.finish()?;
    if input.len() >= MEMO_FROM {
        let mut m = memo();
        if m.len() >= MEMO_ENTRIES {
            m.pop_front();
        }
        m.push_back((level, input.to_vec(), out.clone()));
    }
    Ok(out)
}

/// Zeros a [`FrameLie::GzipBomb`] member adds after the honest data.
const BOMB_ZEROS: usize = 64 << 20;

/// One valid gzip member holding `data` followed by [`BOMB_ZEROS`] zeros. The deflate of the zeros is made once and
/// spliced after `data`'s blocks (sync-flushed, so they end on a byte boundary; the zeros' blocks refer only to
/// themselves): several streams of a parallel capture each send a bomb without compressing 64 MiB each time.
fn gzip_bomb(data: &[u8], level: u32) -> Vec<u8> {
    use flate2::{Compress, Compression, Crc, FlushCompress};
    static ZEROS: std::sync::OnceLock<(Vec<u8>, Crc)> = std::sync::OnceLock::new();
    let deflate = |input: &[u8], flush: FlushCompress| {
        let mut c = Compress::new(Compression::new(level), false);
        let mut out = Vec::with_capacity(input.len() / 4 + 1024);
        loop {
            if out.capacity() - out.len() < 64 * 1024 {
                out.reserve(256 * 1024);
            }
            let st = c.compress_vec(&input[c.total_in() as usize..], &mut out, flush).expect("deflate of memory");
            let all_in = c.total_in() as usize == input.len();
            // Finished: the stream ended (Finish), or all input is in and the flush left room to spare (Sync).
            if st == flate2::Status::StreamEnd || (flush == FlushCompress::Sync && all_in && out.len() < out.capacity())
            {
                break;
            }
        }
        out
    };
    let (zeros, zeros_crc) = ZEROS.get_or_init(|| {
        let z = vec![0u8; BOMB_ZEROS];
        let mut crc = Crc::new();
        crc.update(&z);
        (deflate(&z, FlushCompress::Finish), crc)
    });
    let mut crc = Crc::new();
    crc.update(data);
    crc.combine(zeros_crc);
    // RFC 1952 header: deflate, no flags, mtime 0, no extra flags, OS 3 (Unix), as zlib writes it.
    let mut v = vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3];
    v.extend_from_slice(&deflate(data, FlushCompress::Sync));
    v.extend_from_slice(zeros);
    v.extend_from_slice(&crc.sum().to_le_bytes());
    v.extend_from_slice(&((data.len() + BOMB_ZEROS) as u32).to_le_bytes());
    v
}

fn screencap(dev: &mut Device, args: &[&str], io: &mut CmdIo) -> i32 {
    let started = std::time::Instant::now();
    let mut png = false;
    let mut file = None;
    let mut i = 0;
    while i < args.len() {
        match args[i] {
            "-p" => png = true,
            "-d" => i += 1,
            "-h" => {
                io.err("usage: screencap [-hp] [-d display-id] [FILENAME]\n");
                return 0;
            }
            f => file = Some(f.to_string()),
        }
        i += 1;
    }
    if file.as_deref().is_some_and(|f| f.ends_with(".png")) {
        png = true;
    }
    let lie = dev.frame_lie;
    // The phone's time: reading the display, and PNG encoding per megapixel for `-p`.
    let (lw, lh) = dev.ui.logical_size();
    let mut cost = dev.cfg.costs.display_read;
    if png {
        cost += dev.cfg.costs.png_per_megapixel.mul_f64(f64::from(lw) * f64::from(lh) / 1e6);
    }
    let data = if png && lie == FrameLie::Huge {
        huge_png(60_000, 60_000)
    } else if let (true, FrameLie::Claims(cw, ch)) = (png, lie) {
        huge_png(cw, ch)
    } else if png {
        let mut v = dev.ui.render_png_as(!dev.cfg.costs.png_per_megapixel.is_zero());
        if lie == FrameLie::Truncated {
            v.truncate(v.len() / 2);
        }
        v
    } else {
        // screencap.cpp: u32 width, height, pixel format (1 = RGBA_8888), dataspace
        // (1 = sRGB), then the pixels. The size is the logical one: a landscape phone captures a landscape frame.
        let (mut w, mut h) = dev.ui.logical_size();
        let mut px = dev.ui.render_rgba();
        match lie {
            FrameLie::None | FrameLie::GzipBomb | FrameLie::GzipCorrupt | FrameLie::GzipShort => {}
            FrameLie::ChannelOverflow => h += 1,
            FrameLie::Truncated => px.truncate(px.len() / 2),
            FrameLie::Huge => {
                (w, h) = (60_000, 60_000);
                px.truncate(64);
            }
            FrameLie::Claims(cw, ch) => {
                (w, h) = (cw, ch);
                px.truncate(64);
            }
        }
        let mut v = Vec::with_capacity(16 + px.len());
        for n in [w, h, 1, 1] {
            v.extend_from_slice(&n.to_le_bytes());
        }
        v.extend_from_slice(&px);
        v
    };
    match file {
        Some(f) => {
            // screencap.cpp: open(fn, O_WRONLY | O_CREAT | O_TRUNC, 0664), masked by the umask.
            if let Err(e) = dev.fs.write(&f, data, 0o664 & !dev.umask, now_unix_secs(), false) {
                io.err(&format!("Error opening file: {f} ({})\n", e.message()));
                return 1;
            }
        }
        None => io.out.extend_from_slice(&data),
    }
    io.sleep += cost.saturating_sub(started.elapsed());
    0
}

fn uiautomator(dev: &mut Device, args: &[&str], io: &mut CmdIo) -> i32 {
    if args.first() != Some(&"dump") {
        io.err("Usage: uiautomator <subcommand> [options]\n\nAvailable subcommands:\n\nhelp: displays help message\n\nruntest: executes UI automation tests\n\ndump: creates an XML dump of current UI hierarchy\n\nevents: prints out accessibility events until terminated\n");
        return 1;
    }
    let path = args[1..]
        .iter()
        .find(|a| !a.starts_with('-'))
        .map(|s| s.to_string())
        .unwrap_or_else(|| "/sdcard/window_dump.xml".into());
    if dev.ui.never_idle {
        // DumpCommand: waitForIdle(1 s idle within 10 s) times out → this line on stderr, no file, and the
        // command still exits 0.
        io.sleep += dev.idle_timeout;
        io.err("ERROR: could not get idle state.\n");
        return 0;
    }
    // DumpCommand waits for an idle UI first: a running transition delays the dump until it ends.
    if let Some(left) = dev.ui.animation_left() {
        io.sleep += left;
    }
    let xml = dev.ui.dump_xml();
    // Then a second of accessibility quiet (waitForIdle(1000, …)) and the tree serialised node by node.
    let nodes = xml.matches("<node ").count() as u32;
    io.sleep += dev.cfg.costs.dump_idle + dev.cfg.costs.dump_per_node * nodes;
    if path == "/dev/tty" || path == "/dev/stdout" {
        if dev.cfg.dump_to_tty {
            io.out(&xml);
        }
    } else if let Err(e) = dev.fs.write(&path, xml.into_bytes(), 0o660, now_unix_secs(), false) {
        io.err(&format!("ERROR: could not write to {path}: {}\n", e.message()));
        return 1;
    }
    io.out(&format!("UI hierchary dumped to: {path}\n"));
    0
}

fn cat(dev: &Device, args: &[&str], stdin: &[u8], io: &mut CmdIo) -> i32 {
    let files: Vec<&&str> = args.iter().filter(|a| !a.starts_with('-') || **a == "-").collect();
    if files.is_empty() {
        io.out.extend_from_slice(stdin);
        return 0;
    }
    let mut rc = 0;
    for f in files {
        if *f == "-" {
            io.out.extend_from_slice(stdin);
            continue;
        }
        if *f == "/proc/net/unix" {
            io.out(&super::devtools::proc_net_unix(dev));
            continue;
        }
        if *f == "/proc/uptime" {
            // Linux fs/proc/uptime.c: seconds since boot and idle seconds of all CPUs, two decimals each.
            let up = dev.booted.elapsed();
            let idle = up * 3;
            io.out(&format!(
                "{}.{:02} {}.{:02}\n",
                up.as_secs(),
                up.subsec_millis() / 10,
                idle.as_secs(),
                idle.subsec_millis() / 10
            ));
            continue;
        }
        match dev.fs.read(f) {
            Ok(d) => io.out.extend_from_slice(d),
            Err(e) => {
                io.err(&format!("cat: {f}: {}\n", e.message()));
                rc = 1;
            }
        }
    }
    rc
}

fn rm(dev: &mut Device, args: &[&str], io: &mut CmdIo) -> i32 {
    let flags: String = args.iter().filter(|a| a.starts_with('-') && a.len() > 1).map(|a| &a[1..]).collect();
    let force = flags.contains('f');
    let recursive = flags.contains('r') || flags.contains('R');
    let files: Vec<&&str> = args.iter().filter(|a| !a.starts_with('-')).collect();
    if files.is_empty() && !force {
        io.err("rm: Need 1 argument\n");
        return 1;
    }
    let mut rc = 0;
    for f in files {
        if let Err(e) = dev.fs.remove(f, recursive) {
            if !(force && e == super::fs::FsError::NotFound) {
                io.err(&format!("rm: {f}: {}\n", e.message()));
                rc = 1;
            }
        }
    }
    rc
}

fn ls(dev: &Device, args: &[&str], io: &mut CmdIo) -> i32 {
    let flags: String = args.iter().filter(|a| a.starts_with('-')).map(|a| &a[1..]).collect();
    let long = flags.contains('l');
    let mut paths: Vec<&str> = args.iter().filter(|a| !a.starts_with('-')).copied().collect();
    if paths.is_empty() {
        paths.push("/");
    }
    let mut rc = 0;
    for p in paths {
        let entries = match dev.fs.stat(p) {
            Ok(st) if !st.is_dir() => vec![(p.to_string(), st)],
            Ok(_) => dev.fs.list(p).unwrap_or_default(),
            Err(e) => {
                io.err(&format!("ls: {p}: {}\n", e.message()));
                rc = 1;
                continue;
            }
        };
        for (name, st) in entries {
            if long {
                let kind = if st.is_dir() { 'd' } else { '-' };
                io.out(&format!("{kind}rw-rw---- 1 shell shell {:>8} 2024-01-01 00:00 {name}\n", st.size));
            } else {
                io.out(&format!("{name}\n"));
            }
        }
    }
    rc
}

fn grep(args: &[&str], stdin: &[u8], io: &mut CmdIo) -> i32 {
    let mut invert = false;
    let mut icase = false;
    let mut count = false;
    let mut pattern: Option<String> = None;
    let mut i = 0;
    while i < args.len() {
        let a = args[i];
        if a == "-e" {
            pattern = args.get(i + 1).map(|s| s.to_string());
            i += 1;
        } else if a.starts_with('-') && a.len() > 1 && pattern.is_none() {
            invert |= a.contains('v');
            icase |= a.contains('i');
            count |= a.contains('c');
        } else if pattern.is_none() {
            pattern = Some(a.to_string());
        }
        i += 1;
    }
    let Some(pattern) = pattern else {
        io.err("usage: grep [-civ] PATTERN\n");
        return 2;
    };
    // Plain substring match; `a|b` and `a\|b` alternations are honoured since clients commonly
    // use `grep -E 'mCurrentFocus|mFocusedApp'`.
    let alts: Vec<String> =
        pattern.replace("\\|", "|").split('|').map(|s| if icase { s.to_lowercase() } else { s.to_string() }).collect();
    let text = String::from_utf8_lossy(stdin);
    let mut n = 0;
    for line in text.lines() {
        let hay = if icase { line.to_lowercase() } else { line.to_string() };
        let hit = alts.iter().any(|a| hay.contains(a.as_str()));
        if hit != invert {
            n += 1;
            if !count {
                io.out(&format!("{line}\n"));
            }
        }
    }
    if count {
        io.out(&format!("{n}\n"));
    }
    if n > 0 {
        0
    } else {
        1
    }
}

fn head_tail(name: &str, args: &[&str], stdin: &[u8], io: &mut CmdIo) -> i32 {
    let mut n = 10usize;
    let mut i = 0;
    while i < args.len() {
        if args[i] == "-n" {
            n = args.get(i + 1).and_then(|s| s.parse().ok()).unwrap_or(10);
            i += 1;
        } else if let Some(num) = args[i].strip_prefix('-') {
            n = num.parse().unwrap_or(10);
        }
        i += 1;
    }
    let text = String::from_utf8_lossy(stdin);
    let lines: Vec<&str> = text.lines().collect();
    let sel = if name == "head" { &lines[..n.min(lines.len())] } else { &lines[lines.len().saturating_sub(n)..] };
    for l in sel {
        io.out(&format!("{l}\n"));
    }
    0
}

fn min_sdk_marker(data: &[u8]) -> Option<u32> {
    const KEY: &[u8] = b"minSdkVersion=";
    let at = data.windows(KEY.len()).position(|w| w == KEY)? + KEY.len();
    let digits: String = data[at..].iter().take_while(|b| b.is_ascii_digit()).map(|&b| b as char).collect();
    digits.parse().ok()
}

fn is_zip(data: &[u8]) -> bool {
    data.starts_with(b"PK\x03\x04")
}

/// Installs an APK image. The sim cannot parse the manifest, so the package name comes from the
/// file name when it looks like one (`com.example.app.apk`), else a generated one.
fn install_apk(dev: &mut Device, data: &[u8], file_hint: Option<&str>, io: &mut CmdIo) -> i32 {
    if !is_zip(data) {
        io.out("Failure [INSTALL_FAILED_INVALID_APK: Failed to parse APK: not a zip archive]\n");
        return 1;
    }
    // Real manifests are binary XML; the sim reads a plain-text `minSdkVersion=N` marker instead, so tests can
    // provoke the installer's own refusal (`INSTALL_FAILED_OLDER_SDK`).
    if let Some(min_sdk) = min_sdk_marker(data).filter(|&n| n > dev.cfg.sdk) {
        io.out(&format!(
            "Failure [INSTALL_FAILED_OLDER_SDK: Failed parse during installPackageLI: /data/app/vmdl{}.tmp/base.apk \
             (at Binary XML file line #7): Requires newer sdk version #{min_sdk} (current version is #{})]\n",
            dev.installs + 1,
            dev.cfg.sdk
        ));
        return 1;
    }
    dev.installs += 1;
    let stem = file_hint.and_then(|f| f.rsplit('/').next()).map(|f| f.trim_end_matches(".apk").to_string());
    let pkg = match stem {
        Some(s) if s.contains('.') && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '_') => s,
        _ => format!("com.sim.installed.app{}", dev.installs),
    };
    dev.packages.insert(
        pkg.clone(),
        Package {
            system: false,
            path: format!("/data/app/~~sim{}/{pkg}-1/base.apk", dev.installs),
            launcher_activity: format!("{pkg}.MainActivity"),
        },
    );
    dev.log('I', "PackageManager", &format!("Package {pkg} installed"));
    io.out("Success\n");
    0
}

fn pm(dev: &mut Device, args: &[&str], stdin: &[u8], io: &mut CmdIo) -> i32 {
    let sub = args.first().copied().unwrap_or("");
    let rest = &args[1.min(args.len())..];
    match sub {
        "list" if rest.first() == Some(&"packages") => {
            let opts: String = rest[1..].iter().filter(|a| a.starts_with('-')).map(|a| &a[1..]).collect();
            let filter = rest[1..].iter().find(|a| !a.starts_with('-')).copied().unwrap_or("");
            for (name, p) in &dev.packages {
                if (opts.contains('3') && p.system) || (opts.contains('s') && !p.system) || !name.contains(filter) {
                    continue;
                }
                if opts.contains('f') {
                    io.out(&format!("package:{}={name}\n", p.path));
                } else {
                    io.out(&format!("package:{name}\n"));
                }
            }
            0
        }
        "path" => match rest.first().and_then(|p| dev.packages.get(*p)) {
            Some(p) => {
                io.out(&format!("package:{}\n", p.path));
                0
            }
            None => 1,
        },
        "install" => {
            let mut size: Option<usize> = None;
            let mut path = None;
            let mut i = 0;
            while i < rest.len() {
                match rest[i] {
                    "-S" => {
                        size = rest.get(i + 1).and_then(|s| s.parse().ok());
                        i += 1;
                    }
                    "-i" | "--user" | "--install-reason" | "-p" | "--abi" => i += 1,
                    a if a.starts_with('-') => {}
                    a => path = Some(a.to_string()),
                }
                i += 1;
            }
            if let Some(n) = size {
                let data = &stdin[..n.min(stdin.len())];
                return install_apk(dev, data, None, io);
            }
            let Some(path) = path else {
                io.err("Error: no package specified\n");
                return 1;
            };
            let data = match dev.fs.read(&path) {
                Ok(d) => d.to_vec(),
                Err(_) => {
                    io.err(&format!("Error: Can't open file: {path}\nException occurred while executing 'install':\njava.lang.IllegalArgumentException: Error: Can't open file: {path}\n"));
                    return 1;
                }
            };
            install_apk(dev, &data, Some(&path), io)
        }
        "uninstall" => {
            let Some(pkg) = rest.iter().find(|a| !a.starts_with('-')) else {
                io.err("Error: package name not specified\n");
                return 1;
            };
            match dev.packages.get(*pkg) {
                Some(p) if !p.system => {
                    dev.packages.remove(*pkg);
                    dev.ui.force_stop(pkg);
                    io.out("Success\n");
                    0
                }
                _ => {
                    io.out("Failure [DELETE_FAILED_INTERNAL_ERROR]\n");
                    1
                }
            }
        }
        "clear" => {
            let pkg = rest.iter().find(|a| !a.starts_with('-')).copied().unwrap_or("");
            if dev.packages.contains_key(pkg) {
                dev.ui.force_stop(pkg);
                if pkg == HOME_PACKAGE {
                    dev.ui.counter = 0;
                    dev.ui.text.clear();
                }
                io.out("Success\n");
                0
            } else {
                io.out("Failed\n");
                1
            }
        }
        "grant" | "revoke" => super::packages::grant(dev, sub, rest, io),
        "disable-user" | "enable" | "disable" => 0,
        _ => {
            io.err(&format!("Unknown command: {sub}\n"));
            1
        }
    }
}

fn start_activity(dev: &mut Device, act: Activity) {
    dev.log('I', "ActivityTaskManager", &format!("START u0 {{cmp={}}} from uid 2000", act.component()));
    dev.ui.launch(act);
}

fn am(dev: &mut Device, args: &[&str], io: &mut CmdIo) -> i32 {
    let sub = args.first().copied().unwrap_or("");
    let rest = &args[1.min(args.len())..];
    match sub {
        "start" | "start-activity" => {
            let mut component = None;
            let mut action = None;
            let mut data = None;
            let mut wait = false;
            let mut i = 0;
            while i < rest.len() {
                match rest[i] {
                    "-n" => {
                        component = rest.get(i + 1).map(|s| s.to_string());
                        i += 1;
                    }
                    "-a" => {
                        action = rest.get(i + 1).map(|s| s.to_string());
                        i += 1;
                    }
                    "-d" => {
                        data = rest.get(i + 1).map(|s| s.to_string());
                        i += 1;
                    }
                    "-W" => wait = true,
                    "-c" | "-t" | "--user" | "-f" | "--es" | "--ei" | "--ez" => {
                        i += if rest[i].starts_with("--e") { 2 } else { 1 };
                    }
                    a if !a.starts_with('-') && component.is_none() && a.contains('/') => {
                        component = Some(a.to_string())
                    }
                    _ => {}
                }
                i += 1;
            }
            let act = if let Some(c) = &component {
                let Some((pkg, cls)) = c.split_once('/') else {
                    io.err(&format!("Error: Bad component name: {c}\n"));
                    return 1;
                };
                let cls = if cls.starts_with('.') { format!("{pkg}{cls}") } else { cls.to_string() };
                io.out(&format!(
                    "Starting: Intent {{ cmp={pkg}/{} }}\n",
                    cls.strip_prefix(pkg).filter(|s| s.starts_with('.')).unwrap_or(&cls)
                ));
                if !dev.packages.contains_key(pkg) {
                    io.err(&format!("Error type 3\nError: Activity class {{{pkg}/{cls}}} does not exist.\n"));
                    return 1;
                }
                Activity { package: pkg.into(), activity: cls }
            } else if data.is_some() {
                io.out(&format!(
                    "Starting: Intent {{ act={} dat={} }}\n",
                    action.as_deref().unwrap_or("android.intent.action.VIEW"),
                    data.as_deref().unwrap_or("")
                ));
                Activity {
                    package: "com.android.chrome".into(),
                    activity: "com.google.android.apps.chrome.Main".into(),
                }
            } else if action.as_deref() == Some("android.intent.action.MAIN") || action.is_none() {
                io.out("Starting: Intent { act=android.intent.action.MAIN cat=[android.intent.category.HOME] }\n");
                Activity::home()
            } else {
                io.err(&format!(
                    "Error: Activity not started, unable to resolve Intent {{ act={} }}\n",
                    action.unwrap_or_default()
                ));
                return 1;
            };
            let comp = act.component();
            start_activity(dev, act);
            if wait {
                io.out(&format!(
                    "Status: ok\nLaunchState: COLD\nActivity: {comp}\nTotalTime: 312\nWaitTime: 318\nComplete\n"
                ));
            }
            0
        }
        "force-stop" | "kill" => {
            if let Some(pkg) = rest.iter().find(|a| !a.starts_with('-')) {
                dev.ui.force_stop(pkg);
                dev.log('I', "ActivityManager", &format!("Force stopping {pkg} appid=10123 user=0: from pid 4242"));
            }
            0
        }
        "broadcast" => {
            io.out("Broadcasting: Intent { flg=0x400000 }\nBroadcast completed: result=0\n");
            adb_keyboard_broadcast(dev, rest);
            0
        }
        _ => {
            io.err(&format!("Error: Unknown command: {sub}\n"));
            1
        }
    }
}

/// The ADB Keyboard IME types what it receives in `ADB_INPUT_TEXT` / `ADB_INPUT_B64` broadcasts, but only while
/// it is the active input method (as on a real phone).
fn adb_keyboard_broadcast(dev: &mut Device, args: &[&str]) {
    let active = dev.settings.get(&("secure".to_string(), "default_input_method".to_string()));
    if active.map(String::as_str) != Some(crate::sim::device::ADB_KEYBOARD) {
        return;
    }
    let action = args.iter().position(|a| *a == "-a").and_then(|i| args.get(i + 1)).copied();
    let msg = args
        .iter()
        .position(|a| *a == "--es")
        .and_then(|i| (args.get(i + 1) == Some(&"msg")).then(|| args.get(i + 2)).flatten());
    if action == Some("ADB_CLEAR_TEXT") {
        // AdbIME: `getCurrentInputConnection().deleteSurroundingText(…)` around the cursor — the whole field.
        dev.ui.clear_focused();
        return;
    }
    let text = match (action, msg) {
        (Some("ADB_INPUT_TEXT"), Some(m)) => Some(m.to_string()),
        (Some("ADB_INPUT_B64"), Some(m)) => decode_base64(m).and_then(|b| String::from_utf8(b).ok()),
        _ => None,
    };
    if let Some(text) = text {
        dev.record_event(InputEvent::Text(text.clone()));
        dev.ui.type_text(&text);
    }
}

/// Standard base64 (with or without padding); `None` on any invalid character.
pub(crate) fn decode_base64(s: &str) -> Option<Vec<u8>> {
    let val = |c: u8| match c {
        b'A'..=b'Z' => Some(c - b'A'),
        b'a'..=b'z' => Some(c - b'a' + 26),
        b'0'..=b'9' => Some(c - b'0' + 52),
        b'+' => Some(62),
        b'/' => Some(63),
        _ => None,
    };
    let (mut out, mut acc, mut bits) = (Vec::new(), 0u32, 0);
    for &c in s.trim_end_matches('=').as_bytes() {
        acc = (acc << 6) | u32::from(val(c)?);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    Some(out)
}

fn monkey(dev: &mut Device, args: &[&str], io: &mut CmdIo) -> i32 {
    let pkg = args.iter().position(|a| *a == "-p").and_then(|i| args.get(i + 1)).copied();
    let Some(pkg) = pkg else {
        io.err("** Error: no package specified\n");
        return 1;
    };
    let Some(p) = dev.packages.get(pkg).filter(|p| !p.launcher_activity.is_empty()).cloned() else {
        io.err("** No activities found to run, monkey aborted.\n");
        return 252;
    };
    io.out(&format!("  bash arg: -p\n  bash arg: {pkg}\n  bash arg: -c\n  bash arg: android.intent.category.LAUNCHER\n  bash arg: 1\nargs: [-p, {pkg}, -c, android.intent.category.LAUNCHER, 1]\n arg: \"-p\"\n arg: \"{pkg}\"\n data=\"{pkg}\"\n"));
    io.out("Events injected: 1\n## Network stats: elapsed time=12ms (0ms mobile, 0ms wifi, 12ms not connected)\n");
    start_activity(dev, Activity { package: pkg.into(), activity: p.launcher_activity });
    0
}

fn dumpsys(dev: &Device, args: &[&str], io: &mut CmdIo) -> i32 {
    match args.first().copied() {
        Some("battery") => io.out(&battery_dump(dev)),
        Some("input") => io.out(&dumpsys_input(dev)),
        Some("window") => match args.get(1).copied() {
            Some("windows" | "w") => io.out(&dumpsys_window_windows(dev)),
            Some("displays" | "d") => io.out(&dumpsys_window_displays(dev)),
            Some("policy" | "p") => io.out(&window_policy_dump(dev)),
            // Anything else prints every section, as `dumpsys window` without arguments does.
            _ => io.out(&format!(
                "{}\n{}\n{}",
                window_policy_dump(dev),
                dumpsys_window_displays(dev),
                dumpsys_window_windows(dev)
            )),
        },
        Some("activity") => io.out(&dumpsys_activities(dev)),
        Some("input_method") => io.out(&dumpsys_input_method(dev)),
        Some("power") => io.out(&power_dump(dev)),
        Some("notification") => io.out(&notification_dump(dev, args.contains(&"--noredact"))),
        Some("package") => return super::packages::dumpsys_package(dev, args, io),
        Some("display") => io.out(&format!("DISPLAY MANAGER (dumpsys display)\n  mDefaultDisplay: DisplayDeviceInfo{{\"Built-in Screen\": {} x {}, {} fps, density {}}}\n", dev.cfg.screen_width, dev.cfg.screen_height, 60, dev.cfg.density)),
        Some(other) => io.out(&format!("Can't find service: {other}\n")),
        None => io.out("Currently running services:\n  activity\n  battery\n  display\n  input_method\n  notification\n  package\n  power\n  window\n"),
    }
    0
}

/// `dumpsys notification [--noredact]` in the form of the SDK level (tests/fixtures/real/notification-*): hex
/// `flags=0x62` and one `when=N` up to 15, symbolic `flags=ONGOING_EVENT|…` and `when=N/N` from 16 (API 36); the
/// titles and texts redacted as `String [length=N]` (Java's UTF-16 length) unless `--noredact` (from 8.0, where
/// redaction came; before, always as written). The app's text is printed as it is, newlines included, as real
/// phones do.
fn notification_dump(dev: &Device, noredact: bool) -> String {
    let sdk = dev.cfg.sdk;
    let redact = !noredact && sdk >= 26;
    let mut out = String::from("Current Notification Manager state:\n  Notification List:\n");
    for n in dev.notifications.iter().rev() {
        let uid = 10_100 + n.id;
        let key = format!("0|{}|{}|null|{uid}", n.package, n.id);
        let flags = match (sdk >= 36, n.ongoing) {
            (true, true) => "ONGOING_EVENT|NO_CLEAR|FOREGROUND_SERVICE".to_owned(),
            (true, false) => "AUTO_CANCEL".to_owned(),
            (false, true) => "0x62".to_owned(),
            (false, false) => "0x10".to_owned(),
        };
        let when = if sdk >= 36 { format!("{0}/{0}", n.posted_ms) } else { n.posted_ms.to_string() };
        let value = |v: &Option<String>| match v {
            None => "null".to_owned(),
            Some(s) if redact => format!("String [length={}]", s.encode_utf16().count()),
            Some(s) => format!("String ({s})"),
        };
        out.push_str(&format!(
            "    NotificationRecord(0x{:08x}: pkg={} user=UserHandle{{0}} id={} tag=null importance=3 key={key}: \
             Notification(channel=default shortcut=null contentView=null vibrate=null sound=null defaults=0x0 \
             flags={flags} color=0x00000000 vis=PRIVATE))\n      uid={uid} userId=0\n      opPkg={}\n      \
             flags={flags}\n      pri=0\n      key={key}\n      seen=false\n      notification=\n            \
             when={when}\n            tickerText=null\n            extras={{\n                \
             android.title={}\n                android.reduced.images=Boolean (true)\n                \
             android.text={}\n                android.showWhen=Boolean (true)\n            }}\n      stats=\
             SingleNotificationStats{{posttimeElapsedMs=1000, airtimeMs={}}}\n      mCreationTimeMs={}\n      \
             mUpdateTimeMs={}\n",
            0x1a2b_0000u32 + n.id,
            n.package,
            n.id,
            n.package,
            value(&n.title),
            value(&n.text),
            // Changes between two reads, as on a real phone (the merge must not need it equal).
            std::time::Instant::now().duration_since(dev.booted).as_millis(),
            n.posted_ms,
            n.posted_ms,
        ));
    }
    out.push_str("  Snoozed notifications:\n");
    out
}

/// The simulated display's rotation (quarter turns): `settings put system user_rotation N` (auto-rotate is off).
/// The UI model holds it, so the dumpsys lines, the captures and the UI tree always agree.
fn sim_rotation(dev: &Device) -> u8 {
    dev.ui.rotation % 4
}

/// `pkg/pkg.Act` → `pkg/.Act`, as ActivityRecord prints a component inside its own package.
fn short_component(package: &str, activity: &str) -> String {
    match activity.strip_prefix(package) {
        Some(rest) if rest.starts_with('.') => format!("{package}/{rest}"),
        _ => format!("{package}/{activity}"),
    }
}

/// ` u0` from 4.2 (API 17, multi-user); absent before (tests/fixtures/real: `focus-4.1-*`).
fn user_tag(dev: &Device) -> &'static str {
    if dev.cfg.sdk >= 17 {
        " u0"
    } else {
        ""
    }
}

/// The foreground activity's record as `toString` prints it: `ActivityRecord{7c8d9e0 u0 pkg/.Act t12}` up to 12,
/// `ActivityRecord{7c8d9e0 u0 pkg/.Act} t12}` from 13 (the name is cached with its brace, the task appended after:
/// INDEX.md `activity-13-*`, a TQ3A build; Android 12's `focus-12-*` still has the old form).
fn activity_record(dev: &Device) -> String {
    let fg = &dev.ui.foreground;
    let (u, c) = (user_tag(dev), short_component(&fg.package, &fg.activity));
    if dev.cfg.sdk >= 33 {
        format!("ActivityRecord{{7c8d9e0{u} {c}}} t12}}")
    } else {
        format!("ActivityRecord{{7c8d9e0{u} {c} t12}}")
    }
}

/// The focus pair in the form of the SDK level: `mFocusedApp=AppWindowToken{… ActivityRecord{… t12}}}` up to 9
/// (API 28), `mFocusedApp=ActivityRecord{… t12}` from 10 ([`activity_record`]; tests/fixtures/real/INDEX.md).
fn focus_lines(dev: &Device, indent: &str) -> String {
    let fg = &dev.ui.foreground;
    let u = user_tag(dev);
    let record = activity_record(dev);
    let app =
        if dev.cfg.sdk >= 29 { record } else { format!("AppWindowToken{{3e1f2a7 token=Token{{91b5c04 {record}}}}}") };
    format!("{indent}mCurrentFocus=Window{{5f3a2b1{u} {}}}\n{indent}mFocusedApp={app}\n", fg.component())
}

/// `dumpsys window windows`: the window list. Up to Android 10 (API 29 already moved them, see appium-adb
/// `dumpWindows`) the focus lines follow it; from then on they are only in the display section. The screen and
/// keyguard lines stay here.
fn dumpsys_window_windows(dev: &Device) -> String {
    let on = dev.ui.screen_on;
    let u = user_tag(dev);
    let focus = if dev.cfg.sdk <= 28 { focus_lines(dev, "  ") } else { String::new() };
    // The app window's attributes as `LayoutParams.toString` prints them (flag names in bit order, so SECURE,
    // 0x2000, sits between LAYOUT_IN_SCREEN and LAYOUT_INSET_DECOR: INDEX.md `window-windows-9-secure-*`).
    let secure = if dev.ui.secure_window { " SECURE" } else { "" };
    format!(
        "WINDOW MANAGER WINDOWS (dumpsys window windows)\n  Window #0 Window{{5f3a2b1{u} {fg}}}:\n    mDisplayId=0 rootTaskId=12 mSession=Session{{a1b2c3 4242:u0a10123}}\n    mAttrs={{(0,0)(fillxfill) sim={{adjust=resize}} ty=BASE_APPLICATION fmt=TRANSLUCENT wanim=0x10302fe\n      fl=LAYOUT_IN_SCREEN{secure} LAYOUT_INSET_DECOR SPLIT_TOUCH HARDWARE_ACCELERATED DRAWS_SYSTEM_BAR_BACKGROUNDS\n      pfl=FORCE_DRAW_STATUS_BAR_BACKGROUND\n      vsysui=LAYOUT_STABLE LAYOUT_FULLSCREEN}}\n    mHasSurface=true isReadyForDisplay()=true\n\n  mGlobalConfiguration={{1.0 ?mcc?mnc [en_US] ldltr sw411dp w411dp h914dp {dpi}dpi nrml long port finger -keyb/v/h -nav/h winConfig={{ mBounds=Rect(0, 0 - {w}, {h}) }}}}\n  mHasPermanentDpad=false\n  mTopFocusedDisplayId=0\n{focus}  mScreenOn={on}\n  mAwake={on}\n  mScreenOnEarly={on} mScreenOnFully={on}\n  mKeyguardDrawComplete=true mWindowManagerDrawComplete=true\n  mDreamingLockscreen=false\n  mShowingDream=false mDreamingLockscreen=false\n  isKeyguardShowing=false\n",
        fg = dev.ui.foreground.component(),
        dpi = dev.cfg.density,
        w = dev.cfg.screen_width,
        h = dev.cfg.screen_height,
    )
}

/// `dumpsys window displays`: one section per display (`Display: mDisplayId=0 …`); from Android 10 each holds
/// its `mCurrentFocus`/`mFocusedApp` pair (uiautomator2 issue #816, Android 12: INDEX.md `focus-12-*`).
fn dumpsys_window_displays(dev: &Device) -> String {
    let (w, h) = (dev.cfg.screen_width, dev.cfg.screen_height);
    let rot = sim_rotation(dev);
    let (cw, ch) = if rot % 2 == 1 { (h, w) } else { (w, h) };
    let focus =
        if dev.cfg.sdk >= 29 { format!("\n  mLayoutSeq=105\n{}", focus_lines(dev, "  ")) } else { String::new() };
    format!(
        "WINDOW MANAGER DISPLAY CONTENTS (dumpsys window displays)\n  Display: mDisplayId=0 rootTasks=2\n    init={w}x{h} {dpi}dpi cur={cw}x{ch} app={cw}x{ch} rng={w}x{w}-{h}x{h}\n    deferred=false mLayoutNeeded=false\n{focus}\n  DisplayRotation\n    mRotation={rot} mDeferredRotationPauseCount=0\n",
        dpi = dev.cfg.density
    )
}

/// `dumpsys activity activities`: `mResumedActivity:` and, from Android 10, `topResumedActivity=`.
fn dumpsys_activities(dev: &Device) -> String {
    let fg = &dev.ui.foreground;
    let rec = activity_record(dev);
    let top = if dev.cfg.sdk >= 29 { format!("  topResumedActivity={rec}\n") } else { String::new() };
    format!(
        "ACTIVITY MANAGER ACTIVITIES (dumpsys activity activities)\nDisplay #0 (activities from top to bottom):\n  * Task{{9a8b7c6 #12 type=standard A=10123:{} U=0 visible=true mode=fullscreen translucent=false sz=1}}\n    * {rec}\n\n    mResumedActivity: {rec}\n{top}",
        fg.package
    )
}

/// `dumpsys input`: the touchscreen's orientation as the SDK level prints it — `SurfaceOrientation: N` up to 12,
/// `InputDeviceOrientation: N` on 13–14, `InputDeviceOrientation: RotationN` (degrees) from 15 — and the
/// built-in viewport's `orientation=N` (INDEX.md `input-*`).
fn dumpsys_input(dev: &Device) -> String {
    let rot = sim_rotation(dev);
    let (w, h) = (dev.cfg.screen_width, dev.cfg.screen_height);
    let (lw, lh) = if rot % 2 == 1 { (h, w) } else { (w, h) };
    let orientation = match dev.cfg.sdk {
        0..=32 => format!("SurfaceOrientation: {rot}"),
        33..=34 => format!("InputDeviceOrientation: {rot}"),
        _ => format!("InputDeviceOrientation: Rotation{}", u32::from(rot) * 90),
    };
    format!(
        "INPUT MANAGER (dumpsys input)\n\nInput Reader State (Nums of device: 1):\n  Device 4: sec_touchscreen\n    Generation: 12\n    IsExternal: false\n    Sources: TOUCHSCREEN\n    Touch Input Mapper (mode - DIRECT):\n      Parameters:\n        GestureMode: MULTI_TOUCH\n        DeviceType: TOUCH_SCREEN\n        OrientationAware: true\n        Orientation: 0\n      Viewport INTERNAL: displayId=0, uniqueId=local:0, port=0, orientation={rot}, logicalFrame=[0, 0, {lw}, {lh}], physicalFrame=[0, 0, {lw}, {lh}], deviceSize=[{w}, {h}], isActive=[1]\n      {orientation}\n      Translation and Scaling Factors:\n        XScale: 1.000\n        YScale: 1.000\n"
    )
}

/// `dumpsys input_method`: up to 13 one line `mShowRequested=… mShowExplicitlyRequested=… mShowForced=…
/// mInputShown=…`; from 14 `mInputShown=` alone on its line (INDEX.md `ime-*`). The soft keyboard is up while
/// a text field has focus.
fn dumpsys_input_method(dev: &Device) -> String {
    let shown = dev.ui.keyboard_up();
    let ime =
        dev.settings.get(&("secure".to_string(), "default_input_method".to_string())).map_or("null", String::as_str);
    let state = if dev.cfg.sdk >= 34 {
        format!("  mInputShown={shown}\n")
    } else {
        format!("  mShowRequested={shown} mShowExplicitlyRequested=false mShowForced=false mInputShown={shown}\n")
    };
    format!("Input Method Manager Service state:\n  mCurMethodId={ime}\n  mServedView=null\n{state}")
}

/// `dumpsys battery` as AOSP's BatteryService prints it (tests/fixtures/real/battery-*.txt: the same keys in the
/// same order on a Nexus 5 (6.x) and a Redmi (15); `temperature:` in tenths of a degree).
fn battery_dump(dev: &Device) -> String {
    let (usb, status) = if dev.battery_plugged { (true, 2) } else { (false, 3) };
    format!(
        "Current Battery Service state:\n  AC powered: false\n  USB powered: {usb}\n  Wireless powered: false\n  \
         Dock powered: false\n  Max charging current: 500000\n  Max charging voltage: 5000000\n  \
         Charge counter: 3100000\n  status: {status}\n  health: 2\n  present: true\n  level: {}\n  scale: 100\n  \
         voltage: 4210\n  temperature: {}\n  technology: Li-ion\n",
        dev.battery_level, dev.battery_temperature_tenths
    )
}

/// `df [PATH]` for the /data file system, in the format of the phone's SDK level: toybox from Android 6 (API 23:
/// `1K-blocks … Mounted on`, mount point last — tests/fixtures/real/df-11-oneplus8pro-toybox.txt), toolbox before
/// (mount point first, `Size Used Free Blksize` in whole K/M/G — df-4.x-toolbox-aafm-30.txt).
fn df(dev: &Device, args: &[&str], io: &mut CmdIo) -> i32 {
    let paths: Vec<&&str> = args.iter().filter(|a| !a.starts_with('-')).collect();
    if let Some(p) = paths.iter().find(|p| ***p != "/data" && !p.starts_with("/data/")) {
        io.err(&format!("df: {p}: No such file or directory\n"));
        return 1;
    }
    let (free, total) = (dev.data_free_kib, dev.data_total_kib);
    let used = total.saturating_sub(free);
    if dev.cfg.sdk >= 23 {
        let pct = (used * 100).checked_div(total).unwrap_or(0);
        io.out(&format!(
            "Filesystem        1K-blocks     Used Available Use% Mounted on\n/dev/block/dm-15 {total:>10} {used:>8} {free:>9} {pct:>3}% /data\n"
        ));
    } else {
        let human = |kib: u64| match kib {
            k if k >= 1 << 20 => format!("{}G", k >> 20),
            k if k >= 1 << 10 => format!("{}M", k >> 10),
            k => format!("{k}K"),
        };
        io.out(&format!(
            "Filesystem             Size   Used   Free   Blksize\n/data {:>21} {:>6} {:>6}   4096\n",
            human(total),
            human(used),
            human(free)
        ));
    }
    0
}

/// `dumpsys power` (the lines that tell the screen state; a real dump has ~200 more): `mWakefulness=` in the
/// "Power Manager State" block and `Display Power: state=` further down, as printed from Android 4.2 to 15
/// (samples: tests/fixtures/real/state-power-*.txt).
fn power_dump(dev: &Device) -> String {
    let on = dev.ui.screen_on;
    let (wake, state) = if on { ("Awake", "ON") } else { ("Asleep", "OFF") };
    format!(
        "POWER MANAGER (dumpsys power)\n\nPower Manager State:\n  mDirty=0x0\n  mWakefulness={wake}\n  \
         mWakefulnessChanging=false\n  mIsPowered=true\n  mPlugType=2\n  mBatteryLevel={}\n  mDockState=0\n  \
         mStayOn=false\n  mProximityPositive=false\n  mBootCompleted=true\n  mSystemReady=true\n  \
         mHalAutoSuspendModeEnabled=false\n  mHalInteractiveModeEnabled={on}\n  mWakeLockSummary=0x0\n\n\
         Wake Locks: size=0\n\nSuspend Blockers: size=4\n  PowerManagerService.WakeLocks: ref count=0\n  \
         PowerManagerService.Display: ref count={}\n\nDisplay Power: state={state}\n",
        dev.battery_level,
        u8::from(on)
    )
}

/// `dumpsys window policy`: the keyguard lines. From Android 8 (API 26) the KeyguardServiceDelegate block with
/// its KeyguardStateMonitor (appium-adb fixtures, Android 11 emulator in appium-adb#566); before that the one
/// `mShowingLockscreen=… mDreamingLockscreen=…` line (appium-adb fixtures). Samples:
/// tests/fixtures/real/state-window-policy-*.txt.
fn window_policy_dump(dev: &Device) -> String {
    let ui = &dev.ui;
    let shown = ui.keyguard_showing;
    let secure = ui.lock == super::ui::LockMode::Secure;
    let mut o = String::from(
        "WINDOW MANAGER POLICY STATE (dumpsys window policy)\n    mSafeMode=false mSystemReady=true \
         mSystemBooted=true\n    mLidState=LID_ABSENT mLidOpenRotation=-1 mCameraLensCoverState=LENS_COVER_ABSENT \
         mHdmiPlugged=false\n    mShortPressOnPowerBehavior=SHORT_PRESS_POWER_GO_TO_SLEEP\n",
    );
    if dev.cfg.sdk >= 26 {
        let (screen, interactive) = if ui.screen_on {
            ("SCREEN_STATE_ON", "INTERACTIVE_STATE_AWAKE")
        } else {
            ("SCREEN_STATE_OFF", "INTERACTIVE_STATE_SLEEP")
        };
        o.push_str(&format!(
            "    KeyguardServiceDelegate\n      showing={shown}\n      showingAndNotOccluded={shown}\n      \
             inputRestricted={shown}\n      occluded=false\n      secure={secure}\n      dreaming=false\n      \
             systemIsReady=true\n      deviceHasKeyguard=true\n      enabled=true\n      \
             offReason=OFF_BECAUSE_OF_USER\n      currentUser=0\n      bootCompleted=true\n      \
             screenState={screen}\n      interactiveState={interactive}\n      KeyguardStateMonitor\n        \
             mIsShowing={shown}\n        mSimSecure=false\n        mInputRestricted={shown}\n        \
             mTrusted=false\n        mCurrentUserId=0\n"
        ));
    } else {
        o.push_str(&format!(
            "    mShowingLockscreen={shown} mShowingDream=false mDreamingLockscreen={} mTopIsFullscreen=false\n",
            shown && !ui.screen_on
        ));
    }
    o
}

fn prio_rank(p: char) -> u8 {
    match p.to_ascii_uppercase() {
        'V' | '*' => 0,
        'D' => 1,
        'I' => 2,
        'W' => 3,
        'E' => 4,
        'F' => 5,
        'S' => 6,
        _ => 0,
    }
}

fn logcat(dev: &mut Device, args: &[&str], io: &mut CmdIo) -> i32 {
    let mut dump = false;
    let mut count: Option<usize> = None;
    let mut format = "threadtime".to_string();
    let mut specs: Vec<(String, u8)> = Vec::new();
    let mut silent_default = false;
    let mut i = 0;
    while i < args.len() {
        let a = args[i];
        match a {
            "-d" => dump = true,
            "-c" => {
                dev.logcat.clear();
                return 0;
            }
            "-t" | "-T" | "-m" => {
                count = args.get(i + 1).and_then(|s| s.parse().ok());
                dump |= a == "-t" || a == "-m";
                i += 1;
            }
            "-v" => {
                if let Some(f) = args.get(i + 1) {
                    if ["brief", "time", "tag", "raw", "threadtime"].contains(f) {
                        format = f.to_string();
                    }
                }
                i += 1;
            }
            "-b" | "-e" | "--pid" | "-f" => i += 1,
            "-s" => silent_default = true,
            _ if a.starts_with('-') => {}
            spec => {
                let (tag, pri) = spec.rsplit_once(':').unwrap_or((spec, "V"));
                specs.push((tag.to_string(), prio_rank(pri.chars().next().unwrap_or('V'))));
            }
        }
        i += 1;
    }
    let default_min =
        specs.iter().find(|(t, _)| t == "*").map(|(_, p)| *p).unwrap_or(if silent_default { 6 } else { 0 });
    let lines: Vec<String> = dev
        .logcat
        .iter()
        .filter(|l| {
            let min = specs.iter().find(|(t, _)| *t == l.tag).map(|(_, p)| *p).unwrap_or(default_min);
            prio_rank(l.prio) >= min && min < 6
        })
        .map(|l| format_log(l, &format))
        .collect();
    let start = count.map(|n| lines.len().saturating_sub(n)).unwrap_or(0);
    if format == "threadtime" || format == "brief" || format == "time" {
        io.out("--------- beginning of main\n");
    }
    for l in &lines[start..] {
        io.out(l);
        io.out("\n");
    }
    io.follow = !dump;
    0
}

fn settings(dev: &mut Device, args: &[&str], io: &mut CmdIo) -> i32 {
    let args: Vec<&str> = {
        let mut v = Vec::new();
        let mut i = 0;
        while i < args.len() {
            if args[i] == "--user" {
                i += 2;
                continue;
            }
            v.push(args[i]);
            i += 1;
        }
        v
    };
    let valid_ns = |ns: &str| ["system", "secure", "global"].contains(&ns);
    match args.as_slice() {
        ["get", ns, key] if valid_ns(ns) => {
            let v = dev.settings.get(&(ns.to_string(), key.to_string())).cloned().unwrap_or_else(|| "null".into());
            io.out(&format!("{v}\n"));
            0
        }
        ["put", ns, key, val, ..] if valid_ns(ns) => {
            dev.settings.insert((ns.to_string(), key.to_string()), val.to_string());
            if (*ns, *key) == ("system", "user_rotation") {
                // Auto-rotate is off on the sim: the display turns to the user rotation at once.
                dev.ui.rotation = val.parse::<u8>().map_or(0, |r| r % 4);
            }
            0
        }
        ["delete", ns, key] if valid_ns(ns) => {
            if (*ns, *key) == ("system", "user_rotation") {
                dev.ui.rotation = 0;
            }
            let n = dev.settings.remove(&(ns.to_string(), key.to_string())).map(|_| 1).unwrap_or(0);
            io.out(&format!("Deleted {n} rows\n"));
            0
        }
        ["list", ns] if valid_ns(ns) => {
            for ((n, k), v) in &dev.settings {
                if n == ns {
                    io.out(&format!("{k}={v}\n"));
                }
            }
            0
        }
        _ => {
            io.err("Invalid command: settings\nusage:  settings [--user <USER_ID> | current] get namespace key\n");
            1
        }
    }
}

fn ime(dev: &mut Device, args: &[&str], io: &mut CmdIo) -> i32 {
    let current_key = ("secure".to_string(), "default_input_method".to_string());
    match args {
        ["list", rest @ ..] => {
            let short = rest.contains(&"-s");
            for id in &dev.imes {
                if short {
                    io.out(&format!("{id}\n"));
                } else {
                    let pkg = id.split('/').next().unwrap_or("");
                    io.out(&format!("{id}:\n  mId={id} mSettingsActivityName=null\n  mIsDefaultResId=0x0\n  Service:\n    packageName={pkg}\n"));
                }
            }
            0
        }
        ["set", id, ..] | ["enable", id, ..] => {
            if dev.imes.iter().any(|i| i == id) {
                if args[0] == "set" {
                    dev.settings.insert(current_key, id.to_string());
                    io.out(&format!("Input method {id} selected for user #0\n"));
                } else {
                    io.out(&format!("Input method {id}: already enabled for user #0\n"));
                }
                0
            } else {
                io.err(&format!("Unknown input method {id} cannot be selected for user #0\n"));
                1
            }
        }
        ["reset", ..] => {
            dev.settings.insert(current_key, dev.imes[0].clone());
            0
        }
        _ => {
            io.err(
                "ime <command>:\n  list [-a] [-s]\n  enable [--user <USER_ID>] <ID>\n  set [--user <USER_ID>] <ID>\n",
            );
            1
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::shell::run_script;
    use super::*;

    fn dev() -> Device {
        Device::new(super::super::SimConfig::default(), "127.0.0.1:5555".into())
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
        out(&mut d, "input keyevent 67 KEYCODE_HOME");
        assert_eq!(d.ui.counter, 1);
        assert_eq!(d.ui.text, "hello worl");
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
        assert!(out(&mut d, "monkey -p com.xagent.demo -c android.intent.category.LAUNCHER 1")
            .contains("Events injected: 1"));
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
        Device::new(super::super::SimConfig { sdk, ..Default::default() }, "127.0.0.1:5555".into())
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
        let r =
            run_script(&mut d, "umask 077; screencap /data/local/tmp/s.raw && stat -c %a /data/local/tmp/s.raw", b"");
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
    fn remembered_gzip_outputs_are_the_outputs_of_their_own_input() {
        use std::io::Read;
        let inflate = |gz: &[u8]| {
            let mut out = Vec::new();
            flate2::read::GzDecoder::new(gz).read_to_end(&mut out).expect("valid gzip");
            out
        };
        let mut a: Vec<u8> = (0..super::MEMO_FROM * 2).map(|i| (i % 251) as u8).collect();
        let first = super::gzip_memo(&a, 1).unwrap();
        assert_eq!(super::gzip_memo(&a, 1).unwrap(), first, "an equal input: the same bytes");
        assert_eq!(inflate(&first), a);
        // Same length, one byte changed at the end: not the remembered output.
        *a.last_mut().unwrap() ^= 1;
        assert_eq!(inflate(&super::gzip_memo(&a, 1).unwrap()), a);
        assert_eq!(inflate(&super::gzip_memo(&a, 9).unwrap()), a, "another level");
    }

    #[test]
    fn the_gzip_bomb_is_one_valid_member_of_data_and_zeros() {
        use std::io::Read;
        let data: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
        let bomb = super::gzip_bomb(&data, 1);
        assert!(bomb.len() < 1 << 20, "{} bytes", bomb.len());
        let mut out = Vec::new();
        flate2::read::GzDecoder::new(&bomb[..]).read_to_end(&mut out).expect("valid gzip, CRC and length");
        assert_eq!(out.len(), data.len() + super::BOMB_ZEROS);
        assert!(out[..data.len()] == data[..] && out[data.len()..].iter().all(|b| *b == 0));
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
}
