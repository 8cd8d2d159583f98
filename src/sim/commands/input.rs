//! `input tap|swipe|draganddrop|text|keyevent|press` and what an injected event does to the phone: the UI
//! reacts, the event log records it, logcat gets the dispatcher's line. The phone helper's verbs (`sim/helper.rs`)
//! inject through the same [`tap`], [`swipe`], [`type_text`] and [`key`], so both paths change the phone alike.
//! The usage and error lines are the `input` tool's own wording; key names are Android's `KeyEvent` codes.

use std::time::Duration;

use crate::sim::cmdio::CmdIo;
use crate::sim::device::Device;
use crate::sim::state::InputEvent;
use crate::sim::ui::TapOutcome;

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

pub(super) fn input(dev: &mut Device, args: &[&str], io: &mut CmdIo) -> i32 {
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
