//! Control tools: `android_tap`, `android_long_press`, `android_swipe`, `android_input_text`, `android_key`,
//! `android_open_url`. All are side effects: they run in order per device and validate ranges before touching it.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

use super::device::{invalid, tool, Ctx};
use super::{Tool, ToolSpec};
use crate::device::adb::AdbBackend;
use crate::device::shell::{base64, input_text_chunks, quote};
use crate::protocol::errors::{ErrorCode, ProtoError};

/// The ADB Keyboard IME (<https://github.com/senzhk/ADBKeyBoard>): the standard way to type non-ASCII over adb.
pub const ADB_KEYBOARD: &str = "com.android.adbkeyboard/.AdbIME";

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
                output: json!({"type": "object", "required": ["x", "y"], "properties": {
                    "x": {"type": "integer"}, "y": {"type": "integer"}}}),
                side_effect: true,
                deadline: Duration::from_secs(10),
            },
            adb,
            |c| async move {
                let (x, y) = (c.i64("x").unwrap_or(0), c.i64("y").unwrap_or(0));
                c.check_point(x, y, "tap point").await?;
                c.adb.shell_ok(&c.device, &format!("input tap {x} {y}"), true, c.spec.deadline).await?;
                Ok(json!({"x": x, "y": y}))
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
                    "duration_ms": {"type": "integer"}}}),
                side_effect: true,
                deadline: Duration::from_secs(20),
            },
            adb,
            |c| async move {
                let p = |n| c.i64(n).unwrap_or(0);
                let (x1, y1, x2, y2) = (p("x1"), p("y1"), p("x2"), p("y2"));
                let ms = c.i64("duration_ms").unwrap_or(300);
                c.check_point(x1, y1, "swipe start").await?;
                c.check_point(x2, y2, "swipe end").await?;
                c.adb
                    .shell_ok(&c.device, &format!("input swipe {x1} {y1} {x2} {y2} {ms}"), true, c.spec.deadline)
                    .await?;
                Ok(json!({"duration_ms": ms}))
            },
        ),
        tool(
            ToolSpec {
                id: "android_long_press",
                title: "Long-press the screen",
                description: "Press and hold at (x, y) for duration_ms (default 800) — opens context menus, starts \
                              drag mode. Coordinates as for android_tap.",
                input: json!({"type": "object", "additionalProperties": false, "required": ["x", "y"], "properties": {
                    "x": point_schema("Horizontal position"), "y": point_schema("Vertical position"),
                    "duration_ms": {"type": "integer", "minimum": 400, "maximum": 10000, "default": 800,
                                    "description": "How long to hold, in milliseconds"}}}),
                output: json!({"type": "object", "required": ["x", "y", "duration_ms"], "properties": {
                    "x": {"type": "integer"}, "y": {"type": "integer"}, "duration_ms": {"type": "integer"}}}),
                side_effect: true,
                deadline: Duration::from_secs(20),
            },
            adb,
            |c| async move {
                let (x, y) = (c.i64("x").unwrap_or(0), c.i64("y").unwrap_or(0));
                let ms = c.i64("duration_ms").unwrap_or(800);
                c.check_point(x, y, "press point").await?;
                // A swipe that does not move is how `input` expresses a long press on every Android version.
                c.adb.shell_ok(&c.device, &format!("input swipe {x} {y} {x} {y} {ms}"), true, c.spec.deadline).await?;
                Ok(json!({"x": x, "y": y, "duration_ms": ms}))
            },
        ),
        tool(
            ToolSpec {
                id: "android_input_text",
                title: "Type text",
                description: "Type text into the focused input field (tap the field first). Up to 1000 characters. \
                              ASCII is typed with `input text`; other text (CJK, emoji, accents) needs the ADB \
                              Keyboard IME installed on the phone (error unsupported_text otherwise). Set \
                              submit=true to press ENTER afterwards. The text is never logged.",
                input: json!({"type": "object", "additionalProperties": false, "required": ["text"], "properties": {
                    "text": {"type": "string", "minLength": 1, "maxLength": 1000, "description": "Text to type"},
                    "submit": {"type": "boolean", "default": false, "description": "Press ENTER after typing"}}}),
                output: json!({"type": "object", "required": ["typed_chars", "method"], "properties": {
                    "typed_chars": {"type": "integer"}, "submitted": {"type": "boolean"},
                    "method": {"type": "string", "enum": ["input_text", "adb_keyboard"]}}}),
                side_effect: true,
                deadline: Duration::from_secs(30),
            },
            adb,
            |c| async move {
                let text = c.str("text").unwrap_or("").to_owned();
                if let Some(bad) = text.chars().find(|ch| ch.is_control()) {
                    return Err(invalid(format!(
                        "argument `text` contains the control character U+{:04X}; send ENTER with submit=true or \
                         android_key instead",
                        bad as u32
                    )));
                }
                let submit = c.bool("submit").unwrap_or(false);
                let method =
                    if text.is_ascii() { type_ascii(&c, &text).await? } else { type_unicode(&c, &text).await? };
                if submit {
                    c.adb.shell_ok(&c.device, "input keyevent KEYCODE_ENTER", true, c.spec.deadline).await?;
                }
                Ok(json!({"typed_chars": text.chars().count(), "submitted": submit, "method": method}))
            },
        ),
        tool(
            ToolSpec {
                id: "android_key",
                title: "Press a key",
                description: "Press one hardware/navigation key: HOME, BACK, ENTER, DEL (backspace), APP_SWITCH, \
                              DPAD_*, VOLUME_*, POWER, WAKEUP, ...",
                input: json!({"type": "object", "additionalProperties": false, "required": ["key"], "properties": {
                    "key": {"type": "string", "enum": KEYS, "description": "Key name without the KEYCODE_ prefix"},
                    "long_press": {"type": "boolean", "default": false, "description": "Hold the key (e.g. POWER menu)"}}}),
                output: json!({"type": "object", "required": ["key"], "properties": {
                    "key": {"type": "string"}, "long_press": {"type": "boolean"}}}),
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
                let long = c.bool("long_press").unwrap_or(false);
                let flag = if long { "--longpress " } else { "" };
                c.adb
                    .shell_ok(&c.device, &format!("input keyevent {flag}KEYCODE_{key}"), true, c.spec.deadline)
                    .await?;
                Ok(json!({"key": key, "long_press": long}))
            },
        ),
        tool(
            ToolSpec {
                id: "android_open_url",
                title: "Open a web link",
                description: "Open an http(s) URL with the phone's default handler (usually the browser). Other \
                              schemes (intent:, file:, javascript:, tel:, ...) are refused.",
                input: json!({"type": "object", "additionalProperties": false, "required": ["url"], "properties": {
                    "url": {"type": "string", "minLength": 8, "maxLength": 2048, "description": "An http:// or https:// URL"}}}),
                output: json!({"type": "object", "required": ["url", "opened"], "properties": {
                    "url": {"type": "string"}, "opened": {"type": "boolean"}}}),
                side_effect: true,
                deadline: Duration::from_secs(20),
            },
            adb,
            |c| async move {
                let url = c.str("url").unwrap_or("").to_owned();
                check_url(&url)?;
                let cmd = format!("am start -a android.intent.action.VIEW -d {}", quote(&url));
                c.adb.shell_ok(&c.device, &cmd, true, c.spec.deadline).await?;
                Ok(json!({"url": url, "opened": true}))
            },
        ),
    ]
}

/// ASCII goes through `input text`, chunked so that `%s` and spaces survive (see `input_text_chunks`).
async fn type_ascii(c: &Ctx, text: &str) -> Result<&'static str, ProtoError> {
    let cmd: Vec<String> = input_text_chunks(text).iter().map(|t| format!("input text {}", quote(t))).collect();
    c.adb.shell_ok(&c.device, &cmd.join(" && "), true, c.spec.deadline).await?;
    Ok("input_text")
}

/// Non-ASCII needs the ADB Keyboard IME: switch to it, send the text base64-encoded, switch back.
async fn type_unicode(c: &Ctx, text: &str) -> Result<&'static str, ProtoError> {
    let d = c.spec.deadline;
    let imes = c.adb.shell_ok(&c.device, "ime list -s", false, d).await?;
    if !imes.lines().any(|l| l.trim() == ADB_KEYBOARD) {
        return Err(ProtoError::new(
            ErrorCode::UnsupportedText,
            "this text has non-ASCII characters, which `input text` cannot type; install and enable the ADB \
             Keyboard IME (com.android.adbkeyboard) on the phone, or type ASCII only",
        ));
    }
    let previous = c.adb.shell_ok(&c.device, "settings get secure default_input_method", false, d).await?;
    let previous = previous.trim().to_owned();
    let mut script = format!(
        "ime set {ADB_KEYBOARD} >/dev/null && am broadcast -a ADB_INPUT_B64 --es msg {} >/dev/null",
        quote(&base64(text.as_bytes()))
    );
    if !previous.is_empty() && previous != "null" && previous != ADB_KEYBOARD {
        script.push_str(&format!("; ime set {} >/dev/null", quote(&previous)));
    }
    c.adb.shell_ok(&c.device, &script, true, d).await?;
    Ok("adb_keyboard")
}

/// http(s) only, a host, no whitespace or control characters; everything else is refused before any shell.
pub fn check_url(url: &str) -> Result<(), ProtoError> {
    let rest = url.strip_prefix("https://").or_else(|| url.strip_prefix("http://"));
    let host = rest.map(|r| r.split(['/', '?', '#']).next().unwrap_or(""));
    let ok = host.is_some_and(|h| !h.is_empty() && !h.contains('@')) && url.chars().all(|ch| ch.is_ascii_graphic());
    if ok {
        Ok(())
    } else {
        Err(invalid(format!(
            "argument `url` must be an http:// or https:// URL with a host and no spaces or credentials, got {:?}",
            url.chars().take(80).collect::<String>()
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        assert!(check_url("https://example.com/a?b=c#d").is_ok());
        assert!(check_url("http://10.0.0.1:8080").is_ok());
        for bad in [
            "ftp://x.com",
            "javascript:alert(1)",
            "intent://x#Intent;end",
            "https://",
            "https://a b.com",
            "https://user:pw@x.com",
            "file:///sdcard/x",
            "https://x.com/\n",
            "HTTPS://x.com",
        ] {
            assert!(check_url(bad).is_err(), "{bad}");
        }
    }
}
