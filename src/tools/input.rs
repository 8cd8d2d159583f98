//! Control tools: `android_tap`, `android_long_press`, `android_swipe`, `android_input_text`, `android_key`,
//! `android_open_url`. All are side effects: they run in order per device and validate ranges before touching it.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

use super::device::{invalid, tool, Ctx};
use super::power::{ready_for_input, InputGate};
use super::target::{self, Resolved, Target};
use super::ui::{self, Element};
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

/// Keys that are themselves about the screen's power: sent whatever the screen state (the gate would wake the
/// phone before a POWER press that then turns it off again).
const POWER_KEYS: &[&str] = &["POWER", "WAKEUP", "SLEEP"];

/// `woke` in an input tool's result: the phone was asleep and was woken before the input (policy auto_wake).
fn woke_schema() -> Value {
    json!({"type": "boolean", "description": "The screen was off and was woken before the input"})
}

/// Adds `woke: true` to a result when the gate woke the phone.
fn with_woke(mut v: Value, woke: bool) -> Value {
    if woke {
        v["woke"] = json!(true);
    }
    v
}

pub fn tools(adb: &Arc<AdbBackend>, gate: InputGate) -> Vec<Arc<dyn Tool>> {
    vec![
        tool(
            ToolSpec {
                id: "android_tap",
                title: "Tap the screen",
                description: "Tap once on the bound phone's screen: on `element` (preferred: {index, \
                              observation_id} from android_observe, or a selector such as {text: \"OK\"}; checked \
                              against the screen right before tapping, fails with stale_element rather than tap the \
                              wrong thing) or at (x, y). The result says which element was tapped and where; verify \
                              the effect with a new observation.",
                input: json!({"type": "object", "additionalProperties": false, "properties": {
                    "element": target::element_arg_schema("The element to tap (instead of x, y)"),
                    "x": point_schema("Horizontal position"), "y": point_schema("Vertical position")}}),
                output: json!({"type": "object", "required": ["x", "y"], "properties": {
                    "x": {"type": "integer"}, "y": {"type": "integer"}, "woke": woke_schema(),
                    "element": acted_schema(), "re_resolved": {"type": "boolean",
                        "description": "The observed element had moved; it was found again by its identity"}}}),
                side_effect: true,
                settles: true,
                deadline: Duration::from_secs(15),
            },
            adb,
            move |c| async move {
                let woke = ready_for_input(&c, gate).await?;
                let (x, y, on) = locate(&c, "tap point").await?;
                c.adb.shell_ok(&c.device, &format!("input tap {x} {y}"), true, c.spec.deadline).await?;
                Ok(with_woke(with_element(json!({"x": x, "y": y}), on), woke))
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
                    "duration_ms": {"type": "integer"}, "woke": woke_schema()}}),
                side_effect: true,
                settles: true,
                deadline: Duration::from_secs(20),
            },
            adb,
            move |c| async move {
                let woke = ready_for_input(&c, gate).await?;
                let p = |n| c.i64(n).unwrap_or(0);
                let (x1, y1, x2, y2) = (p("x1"), p("y1"), p("x2"), p("y2"));
                let ms = c.i64("duration_ms").unwrap_or(300);
                c.check_point(x1, y1, "swipe start").await?;
                c.check_point(x2, y2, "swipe end").await?;
                c.adb
                    .shell_ok(&c.device, &format!("input swipe {x1} {y1} {x2} {y2} {ms}"), true, c.spec.deadline)
                    .await?;
                Ok(with_woke(json!({"duration_ms": ms}), woke))
            },
        ),
        tool(
            ToolSpec {
                id: "android_long_press",
                title: "Long-press the screen",
                description: "Press and hold on `element` or at (x, y) for duration_ms (default 800) — opens \
                              context menus, starts drag mode. Targets as for android_tap.",
                input: json!({"type": "object", "additionalProperties": false, "properties": {
                    "element": target::element_arg_schema("The element to press (instead of x, y)"),
                    "x": point_schema("Horizontal position"), "y": point_schema("Vertical position"),
                    "duration_ms": {"type": "integer", "minimum": 400, "maximum": 10000, "default": 800,
                                    "description": "How long to hold, in milliseconds"}}}),
                output: json!({"type": "object", "required": ["x", "y", "duration_ms"], "properties": {
                    "x": {"type": "integer"}, "y": {"type": "integer"}, "duration_ms": {"type": "integer"},
                    "woke": woke_schema(), "element": acted_schema(), "re_resolved": {"type": "boolean"}}}),
                side_effect: true,
                settles: true,
                deadline: Duration::from_secs(20),
            },
            adb,
            move |c| async move {
                let woke = ready_for_input(&c, gate).await?;
                let ms = c.i64("duration_ms").unwrap_or(800);
                let (x, y, on) = locate(&c, "press point").await?;
                // A swipe that does not move is how `input` expresses a long press on every Android version.
                c.adb.shell_ok(&c.device, &format!("input swipe {x} {y} {x} {y} {ms}"), true, c.spec.deadline).await?;
                Ok(with_woke(with_element(json!({"x": x, "y": y, "duration_ms": ms}), on), woke))
            },
        ),
        tool(
            ToolSpec {
                id: "android_input_text",
                title: "Type text",
                description: "Type text into the focused input field, or into `element` (tapped first to focus \
                              it; same targets as android_tap). Up to 1000 characters. ASCII is typed with `input text`; other text (CJK, emoji, accents) needs the ADB \
                              Keyboard IME installed on the phone (error unsupported_text otherwise). Set \
                              submit=true to press ENTER afterwards, clear=true to replace the field's content. \
                              The result reads the field back (field_text; null for a password field) and says \
                              whether it holds what was meant (verified). The text is never logged.",
                input: json!({"type": "object", "additionalProperties": false, "required": ["text"], "properties": {
                    "text": {"type": "string", "minLength": 1, "maxLength": 1000, "description": "Text to type"},
                    "element": target::element_arg_schema("The input field to focus and type into"),
                    "submit": {"type": "boolean", "default": false, "description": "Press ENTER after typing"},
                    "clear": {"type": "boolean", "default": false, "description": "Empty the field first"}}}),
                output: json!({"type": "object", "required": ["typed_chars", "method"], "properties": {
                    "typed_chars": {"type": "integer"}, "submitted": {"type": "boolean"}, "woke": woke_schema(),
                    "field_text": {"type": ["string", "null"], "description": "The focused field's text after \
                        typing (before ENTER); null: a password field, or no focused field found"},
                    "password": {"type": "boolean"},
                    "verified": {"type": ["boolean", "null"], "description": "field_text is the text (clear) or \
                        ends with it; null: not readable"},
                    "element": acted_schema(), "re_resolved": {"type": "boolean"},
                    "method": {"type": "string", "enum": ["input_text", "adb_keyboard"]}}}),
                side_effect: true,
                settles: true,
                deadline: Duration::from_secs(30),
            },
            adb,
            move |c| async move {
                let text = c.str("text").unwrap_or("").to_owned();
                if let Some(bad) = text.chars().find(|ch| ch.is_control()) {
                    return Err(invalid(format!(
                        "argument `text` contains the control character U+{:04X}; send ENTER with submit=true or \
                         android_key instead",
                        bad as u32
                    )));
                }
                let submit = c.bool("submit").unwrap_or(false);
                let woke = ready_for_input(&c, gate).await?;
                let on = match target::parse(&c.args, "element")? {
                    Some(t) => {
                        let r = target::resolve(&c, &t).await?;
                        let (x, y) = r.point();
                        c.check_point(x, y, "element centre").await?;
                        c.adb.shell_ok(&c.device, &format!("input tap {x} {y}"), true, c.spec.deadline).await?;
                        Some(r)
                    }
                    None => None,
                };
                let clear = c.args.get("clear").and_then(Value::as_bool).unwrap_or(false);
                if clear {
                    clear_field(&c).await?;
                }
                let method =
                    if text.is_ascii() { type_ascii(&c, &text).await? } else { type_unicode(&c, &text).await? };
                // Read back before ENTER: submitting often empties the field or moves the focus away.
                let back = read_back(&c, &text, clear).await;
                if submit {
                    c.adb.shell_ok(&c.device, "input keyevent KEYCODE_ENTER", true, c.spec.deadline).await?;
                }
                let mut r = json!({"typed_chars": text.chars().count(), "submitted": submit, "method": method});
                if let Some(obj) = r.as_object_mut() {
                    obj.extend(back);
                }
                Ok(with_woke(with_element(r, on), woke))
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
                    "key": {"type": "string"}, "long_press": {"type": "boolean"}, "woke": woke_schema()}}),
                side_effect: true,
                settles: true,
                deadline: Duration::from_secs(10),
            },
            adb,
            move |c| async move {
                // The schema's enum already limits `key` to KEYS; nothing outside it reaches the shell.
                let key = c.str("key").unwrap_or("").to_owned();
                if !KEYS.contains(&key.as_str()) {
                    return Err(invalid(format!("unknown key {key:?}")));
                }
                let woke = if POWER_KEYS.contains(&key.as_str()) { false } else { ready_for_input(&c, gate).await? };
                let long = c.bool("long_press").unwrap_or(false);
                let flag = if long { "--longpress " } else { "" };
                c.adb
                    .shell_ok(&c.device, &format!("input keyevent {flag}KEYCODE_{key}"), true, c.spec.deadline)
                    .await?;
                Ok(with_woke(json!({"key": key, "long_press": long}), woke))
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
                settles: true,
                deadline: Duration::from_secs(20),
            },
            adb,
            move |c| async move {
                let url = c.str("url").unwrap_or("").to_owned();
                check_url(&url)?;
                let cmd = format!("am start -a android.intent.action.VIEW -d {}", quote(&url));
                c.adb.shell_ok(&c.device, &cmd, true, c.spec.deadline).await?;
                Ok(json!({"url": url, "opened": true}))
            },
        ),
        tool(
            ToolSpec {
                id: "android_scroll",
                title: "Scroll until an element is visible",
                description: "Scroll inside a scrollable container (`element`, e.g. a list from android_observe; \
                              default: the middle of the screen) in `direction` (down = reveal what is below). \
                              With `until` (a selector), swipes until a matching element is visible and returns it \
                              (fails with element_not_found after max_swipes, or at the end of the list, listing \
                              what was seen); without it, swipes max_swipes times (default 1).",
                input: json!({"type": "object", "additionalProperties": false, "required": ["direction"], "properties": {
                    "direction": {"type": "string", "enum": ["down", "up", "right", "left"],
                                  "description": "Which way to move through the content: down shows what is below"},
                    "element": target::element_arg_schema("The scrollable container (default: the screen)"),
                    "until": target::element_arg_schema("Stop when an element matching this selector is visible"),
                    "max_swipes": {"type": "integer", "minimum": 1, "maximum": MAX_SWIPES,
                                   "description": "Swipes at most (default 5 with `until`, else 1)"}}}),
                output: json!({"type": "object", "required": ["swipes", "reached_end"], "properties": {
                    "swipes": {"type": "integer"}, "reached_end": {"type": "boolean",
                        "description": "The last swipe did not change what the container shows"},
                    "found": {"type": "boolean"}, "element": acted_schema(), "woke": woke_schema()}}),
                side_effect: true,
                settles: true,
                deadline: Duration::from_secs(90),
            },
            adb,
            move |c| async move {
                let woke = ready_for_input(&c, gate).await?;
                Ok(with_woke(scroll(c).await?, woke))
            },
        ),
    ]
}

/// Upper bound of `android_scroll`'s `max_swipes` (each swipe costs a gesture and a UI dump).
pub const MAX_SWIPES: u64 = 10;

/// Texts a scroll's `element_not_found` lists at most.
const SEEN_LISTED: usize = 30;

async fn scroll(c: Ctx) -> Result<Value, ProtoError> {
    let direction = c.str("direction").unwrap_or("down").to_owned();
    let until = match target::parse(&c.args, "until")? {
        Some(Target::Selector(s)) => Some(s),
        Some(Target::Observed { .. }) => {
            return Err(invalid("argument `until` must be a selector (text, text_contains, resource_id, content_desc)"))
        }
        None => None,
    };
    let max = c.i64("max_swipes").map_or(if until.is_some() { 5 } else { 1 }, |n| n.clamp(1, MAX_SWIPES as i64));
    // The container: its bounds now, or the screen without its top and bottom bars.
    let area = match target::parse(&c.args, "element")? {
        Some(t) => target::resolve(&c, &t).await?.element.bounds,
        None => {
            let (w, h) = c.adb.display_size(&c.device).await?;
            let (w, h) = (w as i32, h as i32);
            [0, h / 10, w, h * 9 / 10]
        }
    };
    let [l, t, r, b] = area;
    let (cx, cy, dx, dy) = ((l + r) / 2, (t + b) / 2, (r - l) * 3 / 10, (b - t) * 3 / 10);
    // Content moves with the finger: to see what is below, drag upwards.
    let (x1, y1, x2, y2) = match direction.as_str() {
        "down" => (cx, cy + dy, cx, cy - dy),
        "up" => (cx, cy - dy, cx, cy + dy),
        "right" => (cx + dx, cy, cx - dx, cy),
        "left" => (cx - dx, cy, cx + dx, cy),
        other => return Err(invalid(format!("argument `direction` must be down, up, left or right, not {other:?}"))),
    };
    c.check_point(i64::from(x1), i64::from(y1), "swipe start").await?;
    c.check_point(i64::from(x2), i64::from(y2), "swipe end").await?;
    let inside = |e: &Element| e.bounds[0] < r && e.bounds[2] > l && e.bounds[1] < b && e.bounds[3] > t;
    let shown = |now: &[Element]| -> Vec<(String, [i32; 4])> {
        now.iter().filter(|e| inside(e) && !e.password).map(|e| (e.text.clone(), e.bounds)).collect()
    };
    let mut seen: Vec<String> = Vec::new();
    let mut swipes = 0;
    let mut last: Option<Vec<(String, [i32; 4])>> = None;
    loop {
        let now = ui::dump(&c, Duration::from_secs(15)).await?;
        if let Some(sel) = &until {
            if let Some(e) = now.iter().find(|e| sel.matches(e)) {
                let r = Resolved { element: e.clone(), re_resolved: false };
                return Ok(json!({"found": true, "swipes": swipes, "reached_end": false, "element": r.to_json()}));
            }
        }
        let view = shown(&now);
        for (text, _) in &view {
            if !text.is_empty() && !seen.contains(text) {
                seen.push(text.clone());
            }
        }
        let reached_end = last.as_ref() == Some(&view);
        if reached_end || swipes >= max {
            let Some(sel) = until else {
                return Ok(json!({"swipes": swipes, "reached_end": reached_end}));
            };
            let why = if reached_end { "the content stopped moving (end reached)" } else { "max_swipes reached" };
            let mut list: Vec<String> = seen.iter().take(SEEN_LISTED).map(|t| format!("{t:?}")).collect();
            if seen.len() > SEEN_LISTED {
                list.push(format!("… {} more", seen.len() - SEEN_LISTED));
            }
            return Err(ProtoError::new(
                ErrorCode::ElementNotFound,
                format!(
                    "no element matches {} after {swipes} swipe(s) {direction} ({why}); seen: {}",
                    sel.describe(),
                    if list.is_empty() { "no text".to_owned() } else { list.join(", ") }
                ),
            ));
        }
        last = Some(view);
        c.adb.shell_ok(&c.device, &format!("input swipe {x1} {y1} {x2} {y2} 400"), true, c.spec.deadline).await?;
        swipes += 1;
    }
}

/// The schema of the `element` part of an action's result.
fn acted_schema() -> Value {
    json!({"type": "object", "description": "The element acted on, as it was on screen right before the action",
        "required": ["index", "class", "bounds", "center"], "properties": {
        "index": {"type": "integer"}, "class": {"type": "string"}, "text": {"type": "string"},
        "resource_id": {"type": "string"}, "content_desc": {"type": "string"},
        "bounds": {"type": "array", "items": {"type": "integer"}, "minItems": 4, "maxItems": 4},
        "center": {"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 2}}})
}

/// Where a pointer action lands: the resolved `element`'s centre, or `x`/`y` (exactly one of the two forms).
async fn locate(c: &Ctx, what: &str) -> Result<(i64, i64, Option<Resolved>), ProtoError> {
    let target = target::parse(&c.args, "element")?;
    let (x, y, on) = match (target, c.i64("x"), c.i64("y")) {
        (Some(_), Some(_), _) | (Some(_), _, Some(_)) => {
            return Err(invalid("give either `element` or `x` and `y`, not both"))
        }
        (Some(t), None, None) => {
            let r = target::resolve(c, &t).await?;
            let (x, y) = r.point();
            (x, y, Some(r))
        }
        (None, Some(x), Some(y)) => (x, y, None),
        (None, _, _) => {
            return Err(invalid("give `element` (from android_observe, or a selector) or both `x` and `y`"))
        }
    };
    c.check_point(x, y, what).await?;
    Ok((x, y, on))
}

/// Adds which element was acted on to an action's result.
fn with_element(mut v: Value, on: Option<Resolved>) -> Value {
    if let Some(r) = on {
        v["element"] = r.to_json();
        v["re_resolved"] = json!(r.re_resolved);
    }
    v
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
    if !crate::device::formats::ime_listed(&imes, ADB_KEYBOARD) {
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

/// DEL presses sent at most to clear a field: the longest text `android_input_text` types plus headroom for
/// what the field held before (a field longer than this is cleared only in part, and `verified` says so).
const MAX_CLEAR_KEYS: usize = 2000;
/// DEL presses per `input keyevent` command (one `input` process each: they start slowly on real phones, and an
/// old adbd caps a shell command at 4 KB).
const DELS_PER_COMMAND: usize = 100;

/// The focused input field in a fresh UI dump, if any.
async fn focused_field(c: &Ctx) -> Result<Option<Element>, ProtoError> {
    let now = ui::dump(c, Duration::from_secs(15)).await?;
    Ok(now.into_iter().find(|e| e.focused && (e.class.ends_with("EditText") || e.focusable)))
}

/// Empties the focused field (`clear: true`). With the ADB Keyboard as the active input method its
/// `ADB_CLEAR_TEXT` broadcast does it in one step; otherwise the cursor goes to the end (`KEYCODE_MOVE_END`) and
/// the field's current length (from a UI dump; a password field reports one dot per character) of DELs follow, as
/// appium-style clients do. A field that cannot be found is an error before anything is typed.
async fn clear_field(c: &Ctx) -> Result<(), ProtoError> {
    let d = c.spec.deadline;
    let ime = c.adb.shell_ok(&c.device, "settings get secure default_input_method", false, d).await?;
    if ime.trim() == ADB_KEYBOARD {
        c.adb.shell_ok(&c.device, "am broadcast -a ADB_CLEAR_TEXT >/dev/null", true, d).await?;
        return Ok(());
    }
    let Some(field) = focused_field(c).await? else {
        return Err(ProtoError::new(
            ErrorCode::ElementNotFound,
            "clear=true needs a focused input field and none is focused: pass `element` (the field to type into)",
        ));
    };
    let n = field.text.chars().count().min(MAX_CLEAR_KEYS);
    if n == 0 {
        return Ok(());
    }
    c.adb.shell_ok(&c.device, "input keyevent KEYCODE_MOVE_END", true, d).await?;
    let mut left = n;
    while left > 0 {
        let k = left.min(DELS_PER_COMMAND);
        let cmd = format!("input keyevent{}", " KEYCODE_DEL".repeat(k));
        c.adb.shell_ok(&c.device, &cmd, true, d).await?;
        left -= k;
    }
    Ok(())
}

/// `field_text`, `password`, `verified` of `android_input_text`: the focused field read back from a UI dump. A
/// dump that fails leaves them null (the text was typed; the result must not say otherwise).
async fn read_back(c: &Ctx, text: &str, cleared: bool) -> serde_json::Map<String, Value> {
    let mut m = serde_json::Map::new();
    let field = focused_field(c).await.ok().flatten();
    let (field_text, verified) = match &field {
        Some(f) if f.password => {
            m.insert("password".into(), json!(true));
            (Value::Null, Value::Null)
        }
        Some(f) => {
            let ok = if cleared { f.text == text } else { f.text.ends_with(text) };
            (json!(f.text), json!(ok))
        }
        None => (Value::Null, Value::Null),
    };
    m.insert("field_text".into(), field_text);
    m.insert("verified".into(), verified);
    m
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
