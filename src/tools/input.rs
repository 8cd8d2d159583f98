//! Control tools: `android_tap`, `android_swipe`, `android_text`, `android_key`. All are side effects: they run in
//! order per device and validate ranges before touching it.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

use super::device::{invalid, tool};
use super::{Tool, ToolSpec};
use crate::device::adb::AdbBackend;
use crate::device::shell::{input_text_chunks, quote};

/// Key names accepted by `android_key` (the `KEYCODE_` prefix is added).
pub const KEYS: &[&str] = &[
    "HOME",
    "BACK",
    "ENTER",
    "DEL",
    "FORWARD_DEL",
    "TAB",
    "SPACE",
    "ESCAPE",
    "MENU",
    "APP_SWITCH",
    "SEARCH",
    "DPAD_UP",
    "DPAD_DOWN",
    "DPAD_LEFT",
    "DPAD_RIGHT",
    "DPAD_CENTER",
    "MOVE_HOME",
    "MOVE_END",
    "PAGE_UP",
    "PAGE_DOWN",
    "VOLUME_UP",
    "VOLUME_DOWN",
    "VOLUME_MUTE",
    "POWER",
    "WAKEUP",
    "SLEEP",
    "CAMERA",
    "MEDIA_PLAY_PAUSE",
];

const COORD: &str =
    "device pixels, 0 ≤ value < screen size (see android_device_status or an android_ui_dump element centre)";

fn point_schema(desc: &str) -> Value {
    json!({"type": "integer", "minimum": 0, "maximum": 100000, "description": format!("{desc}; {COORD}")})
}

fn screen_result(w: u32, h: u32) -> Value {
    json!({"screen_width": w, "screen_height": h})
}

pub fn tools(adb: &Arc<AdbBackend>) -> Vec<Arc<dyn Tool>> {
    vec![
        tool(
            ToolSpec {
                id: "android_tap",
                title: "Tap the screen",
                description: "Tap once at (x, y) on the bound phone's screen. Take coordinates from an \
                              android_ui_dump element's `center`; verify the effect with a new observation.",
                input: json!({"type": "object", "additionalProperties": false, "required": ["x", "y"], "properties": {
                    "x": point_schema("Horizontal position"), "y": point_schema("Vertical position")}}),
                output: json!({"type": "object", "required": ["x", "y", "screen_width", "screen_height"], "properties": {
                    "x": {"type": "integer"}, "y": {"type": "integer"},
                    "screen_width": {"type": "integer"}, "screen_height": {"type": "integer"}}}),
                side_effect: true,
                deadline: Duration::from_secs(10),
            },
            adb,
            |c| async move {
                let (x, y) = (c.i64("x").unwrap_or(0), c.i64("y").unwrap_or(0));
                let (w, h) = c.check_point(x, y, "tap point").await?;
                c.adb.shell_ok(&c.device, &format!("input tap {x} {y}"), true, c.spec.deadline).await?;
                let mut r = screen_result(w, h);
                r["x"] = json!(x);
                r["y"] = json!(y);
                Ok(r)
            },
        ),
        tool(
            ToolSpec {
                id: "android_swipe",
                title: "Swipe on the screen",
                description: "Swipe from (x1, y1) to (x2, y2) over duration_ms (default 300). Scroll a list down by \
                              swiping upwards (y1 > y2). A long press is a swipe to the same point with \
                              duration_ms ≥ 600.",
                input: json!({"type": "object", "additionalProperties": false, "required": ["x1", "y1", "x2", "y2"], "properties": {
                    "x1": point_schema("Start x"), "y1": point_schema("Start y"),
                    "x2": point_schema("End x"), "y2": point_schema("End y"),
                    "duration_ms": {"type": "integer", "minimum": 0, "maximum": 10000, "default": 300,
                                    "description": "Gesture duration in milliseconds"}}}),
                output: json!({"type": "object", "required": ["duration_ms"], "properties": {
                    "duration_ms": {"type": "integer"}, "screen_width": {"type": "integer"}, "screen_height": {"type": "integer"}}}),
                side_effect: true,
                deadline: Duration::from_secs(20),
            },
            adb,
            |c| async move {
                let p = |n| c.i64(n).unwrap_or(0);
                let (x1, y1, x2, y2) = (p("x1"), p("y1"), p("x2"), p("y2"));
                let ms = c.i64("duration_ms").unwrap_or(300);
                let (w, h) = c.check_point(x1, y1, "swipe start").await?;
                c.check_point(x2, y2, "swipe end").await?;
                c.adb
                    .shell_ok(&c.device, &format!("input swipe {x1} {y1} {x2} {y2} {ms}"), true, c.spec.deadline)
                    .await?;
                let mut r = screen_result(w, h);
                r["duration_ms"] = json!(ms);
                Ok(r)
            },
        ),
        tool(
            ToolSpec {
                id: "android_text",
                title: "Type text",
                description: "Type text into the focused input field (tap the field first). Printable ASCII only, \
                              up to 1000 characters; set submit=true to press ENTER afterwards. The typed text is \
                              never logged.",
                input: json!({"type": "object", "additionalProperties": false, "required": ["text"], "properties": {
                    "text": {"type": "string", "minLength": 1, "maxLength": 1000, "description": "Text to type (printable ASCII)"},
                    "submit": {"type": "boolean", "default": false, "description": "Press ENTER after typing"}}}),
                output: json!({"type": "object", "required": ["typed_chars"], "properties": {
                    "typed_chars": {"type": "integer"}, "submitted": {"type": "boolean"}}}),
                side_effect: true,
                deadline: Duration::from_secs(30),
            },
            adb,
            |c| async move {
                let text = c.str("text").unwrap_or("").to_owned();
                if let Some(bad) = text.chars().find(|ch| !(' '..='~').contains(ch)) {
                    return Err(invalid(format!(
                        "argument `text` contains {:?} (U+{:04X}); android_text types printable ASCII only \
                         (`input text` cannot enter other characters)",
                        bad, bad as u32
                    )));
                }
                let submit = c.bool("submit").unwrap_or(false);
                let mut cmd: Vec<String> =
                    input_text_chunks(&text).iter().map(|t| format!("input text {}", quote(t))).collect();
                if submit {
                    cmd.push("input keyevent KEYCODE_ENTER".into());
                }
                c.adb.shell_ok(&c.device, &cmd.join(" && "), true, c.spec.deadline).await?;
                Ok(json!({"typed_chars": text.chars().count(), "submitted": submit}))
            },
        ),
        tool(
            ToolSpec {
                id: "android_key",
                title: "Press a key",
                description: "Press one hardware/navigation key: HOME, BACK, ENTER, DEL (backspace), APP_SWITCH, \
                              DPAD_*, VOLUME_*, POWER, WAKEUP, ...",
                input: json!({"type": "object", "additionalProperties": false, "required": ["key"], "properties": {
                    "key": {"type": "string", "enum": KEYS, "description": "Key name without the KEYCODE_ prefix"}}}),
                output: json!({"type": "object", "required": ["key"], "properties": {"key": {"type": "string"}}}),
                side_effect: true,
                deadline: Duration::from_secs(10),
            },
            adb,
            |c| async move {
                // The schema's enum already limits `key` to KEYS; nothing outside it reaches the shell.
                let key = c.str("key").unwrap_or("").to_owned();
                if !KEYS.contains(&key.as_str()) {
                    return Err(invalid(format!("unknown key {key:?}")));
                }
                c.adb.shell_ok(&c.device, &format!("input keyevent KEYCODE_{key}"), true, c.spec.deadline).await?;
                Ok(json!({"key": key}))
            },
        ),
    ]
}
