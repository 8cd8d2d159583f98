//! Control tools: `android_tap`, `android_long_press`, `android_swipe`, `android_input_text`, `android_key`,
//! `android_open_url`. All are side effects: they run in order per device and validate ranges before touching it.

use std::sync::Arc;
use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};

use super::acted::{acted_schema, re_resolved_schema, with_element, with_woke, woke_schema, MAX_COORD};
use super::context::{invalid, Ctx};
use super::device::tool;
use super::element::Element;
use super::gate::{ready_for_input, InputGate};
use super::keyboard::ADB_KEYBOARD;
use super::registry::{Tool, ToolSpec};
use super::target::{self, ElementArg, Resolved, SelectorArg};
use super::{args, dump, observations};
use crate::device::adb::AdbBackend;
use crate::device::input::Input;
use crate::device::shell::{input_text_chunks, quote};
use crate::protocol::errors::{ErrorCode, ProtoError};

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

/// Keys that are themselves about the screen's power: sent whatever the screen state (the gate would wake the
/// phone before a POWER press that then turns it off again).
const POWER_KEYS: &[&str] = &["POWER", "WAKEUP", "SLEEP"];

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct TapArgs {
    /// What to tap instead of x, y: {index, observation_id} from android_observe or android_ui_dump (or an
    /// error's candidates), or a selector: text (exact, or ignore_case) | text_contains (any
    /// case) | resource_id (pkg:id/name or name) | content_desc (substring), with optional class (Button or full
    /// name) and nth (0-based, among several matches). Re-checked on screen right before acting
    element: Option<ElementArg>,
    /// Device pixels (android_device_status gives the screen size)
    #[schemars(range(min = 0, max = MAX_COORD))]
    x: Option<i64>,
    #[schemars(range(min = 0, max = MAX_COORD))]
    y: Option<i64>,
    /// Taps at the same point
    #[schemars(range(min = 1, max = MAX_TAPS))]
    #[serde(default = "once")]
    repeat: u32,
}

/// Taps of one `android_tap` at most (`repeat`).
pub const MAX_TAPS: u32 = 20;

fn once() -> u32 {
    1
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct SwipeArgs {
    /// Start, device pixels
    #[schemars(range(min = 0, max = MAX_COORD))]
    x1: i64,
    #[schemars(range(min = 0, max = MAX_COORD))]
    y1: i64,
    /// End, device pixels
    #[schemars(range(min = 0, max = MAX_COORD))]
    x2: i64,
    #[schemars(range(min = 0, max = MAX_COORD))]
    y2: i64,
    #[schemars(range(min = 0, max = 10_000))]
    #[serde(default = "ms_300")]
    duration_ms: u32,
}

fn ms_300() -> u32 {
    300
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct LongPressArgs {
    /// As android_tap's element (instead of x, y)
    element: Option<ElementArg>,
    #[schemars(range(min = 0, max = MAX_COORD))]
    x: Option<i64>,
    #[schemars(range(min = 0, max = MAX_COORD))]
    y: Option<i64>,
    /// How long to hold
    #[schemars(range(min = 400, max = 10_000))]
    #[serde(default = "ms_800")]
    duration_ms: u32,
}

fn ms_800() -> u32 {
    800
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct InputTextArgs {
    // Empty with `clear` empties the field (said in the tool's description: every byte here is paid per call).
    #[schemars(length(max = 1000))]
    text: String,
    /// The field to tap first, as android_tap's element (default: the focused field)
    element: Option<ElementArg>,
    #[serde(default)]
    submit: bool,
    /// Replace the field's content instead of appending
    #[serde(default)]
    clear: bool,
    /// Read the field back after typing (a UI dump: 1–3 s on a real phone)
    #[serde(default)]
    verify: bool,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct KeyArgs {
    // No description: the enum names the keys (any case and a KEYCODE_ prefix are taken, `schema::coerce`).
    #[schemars(schema_with = "key_schema")]
    key: String,
    #[serde(default)]
    long_press: bool,
    #[schemars(range(min = 1, max = MAX_REPEAT))]
    #[serde(default = "one")]
    repeat: u32,
}

/// Upper bound of `android_key`'s `repeat` (one `input keyevent` command; [`DELS_PER_COMMAND`] keys fit one).
const MAX_REPEAT: u64 = 100;

fn one() -> u32 {
    1
}

fn key_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({"type": "string", "enum": KEYS})
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct OpenUrlArgs {
    /// http:// or https:// only
    #[schemars(length(min = 8, max = 2048))]
    url: String,
}

#[derive(Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Direction {
    Down,
    Up,
    Right,
    Left,
}

impl Direction {
    fn as_str(self) -> &'static str {
        match self {
            Direction::Down => "down",
            Direction::Up => "up",
            Direction::Right => "right",
            Direction::Left => "left",
        }
    }
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ScrollArgs {
    /// Way through the content: down shows what is below
    direction: Direction,
    /// The scrollable container, as android_tap's element (default: the screen)
    element: Option<ElementArg>,
    /// Stop when this selector (as android_tap's element) matches a visible element
    until: Option<SelectorArg>,
    /// Default 5 with `until`, else 1
    #[schemars(range(min = 1, max = MAX_SWIPES))]
    max_swipes: Option<u32>,
}

pub fn tools(adb: &Arc<AdbBackend>, gate: InputGate) -> Vec<Arc<dyn Tool>> {
    vec![
        tool(
            ToolSpec {
                id: "android_tap",
                title: "Tap the screen",
                description: "Tap `element` (preferred) or (x, y). stale_element / ambiguous_element list \
                              candidates and an observation_id to retry with. Input tools wait for a still screen (settle: false to skip) and report `effect`.",
                input: args::schema::<TapArgs>(),
                output: json!({"type": "object", "properties": {
                    "x": {"type": "integer"}, "y": {"type": "integer"}, "woke": woke_schema(),
                    "taps": {"type": "integer"},
                    "element": acted_schema(), "re_resolved": re_resolved_schema()}}),
                side_effect: true,
                settles: true,
                deadline: Duration::from_secs(15),
            },
            adb,
            move |c| async move {
                let a: TapArgs = c.parse()?;
                let ready = ready_for_input(&c, gate).await?;
                let (x, y, on) = locate(&c, a.element.as_ref(), a.x, a.y, "tap point").await?;
                // `repeat`: the same point each time (the element resolved once, before the first tap), each tap
                // its own input event in order; the settle waits once, after the last.
                for _ in 0..a.repeat {
                    c.adb.input(&c.device, Input::Tap { x, y }, c.spec.deadline).await?;
                }
                ready.sent(&c);
                let mut out = json!({"x": x, "y": y});
                if a.repeat > 1 {
                    out["taps"] = json!(a.repeat);
                }
                Ok(with_woke(with_element(out, on), ready.woke))
            },
        ),
        tool(
            ToolSpec {
                id: "android_swipe",
                title: "Swipe on the screen",
                description: "Swipe from (x1, y1) to (x2, y2). Swipe up (y1 > y2) to scroll a list down; \
                              android_scroll does it for you.",
                input: args::schema::<SwipeArgs>(),
                output: json!({"type": "object", "properties": {
                    "duration_ms": {"type": "integer"}, "woke": woke_schema()}}),
                side_effect: true,
                settles: true,
                deadline: Duration::from_secs(20),
            },
            adb,
            move |c| async move {
                let a: SwipeArgs = c.parse()?;
                let ready = ready_for_input(&c, gate).await?;
                let (x1, y1, x2, y2, ms) = (a.x1, a.y1, a.x2, a.y2, u64::from(a.duration_ms));
                c.check_point(x1, y1, "swipe start").await?;
                c.check_point(x2, y2, "swipe end").await?;
                c.adb.input(&c.device, Input::Swipe { x1, y1, x2, y2, ms }, c.spec.deadline).await?;
                ready.sent(&c);
                Ok(with_woke(json!({"duration_ms": ms}), ready.woke))
            },
        ),
        tool(
            ToolSpec {
                id: "android_long_press",
                title: "Long-press the screen",
                description: "Press and hold `element` or (x, y): context menus, drag mode.",
                input: args::schema::<LongPressArgs>(),
                output: json!({"type": "object", "properties": {
                    "x": {"type": "integer"}, "y": {"type": "integer"}, "duration_ms": {"type": "integer"},
                    "woke": woke_schema(), "element": acted_schema(), "re_resolved": re_resolved_schema()}}),
                side_effect: true,
                settles: true,
                deadline: Duration::from_secs(20),
            },
            adb,
            move |c| async move {
                let a: LongPressArgs = c.parse()?;
                let ready = ready_for_input(&c, gate).await?;
                let ms = u64::from(a.duration_ms);
                let (x, y, on) = locate(&c, a.element.as_ref(), a.x, a.y, "press point").await?;
                c.adb.input(&c.device, Input::Press { x, y, ms }, c.spec.deadline).await?;
                ready.sent(&c);
                Ok(with_woke(with_element(json!({"x": x, "y": y, "duration_ms": ms}), on), ready.woke))
            },
        ),
        tool(
            ToolSpec {
                id: "android_input_text",
                title: "Type text",
                description: "Type into the focused field or `element`; `clear` replaces its content (text \"\": \
                              empties it). Non-ASCII needs the phone helper or ADB Keyboard (else \
                              unsupported_text). `verify` reads back.",
                input: args::schema::<InputTextArgs>(),
                output: json!({"type": "object", "properties": {
                    "typed_chars": {"type": "integer"}, "submitted": {"type": "boolean"}, "woke": woke_schema(),
                    "element": acted_schema(), "re_resolved": re_resolved_schema(),
                    "read_back": {"type": "boolean", "description": "Whether the field was read back (verify)"},
                    "field_text": {"type": ["string", "null"], "description": "The field after typing (null: password or not found)"},
                    "password": {"type": "boolean"}, "verified": {"type": ["boolean", "null"]},
                    "warning": {"type": "string", "description": "Present when the typed text was not seen arriving"},
                    "read_back_ms": {"type": "integer"},
                    "method": {"type": "string", "enum": ["input_text", "adb_keyboard", "helper_keys", "helper_paste"]},
                    "clipboard": {"type": "string", "enum": ["restored", "cleared", "not_restored"]}}}),
                side_effect: true,
                settles: true,
                deadline: Duration::from_secs(30),
            },
            adb,
            move |c| async move {
                let a: InputTextArgs = c.parse()?;
                let text = a.text;
                if let Some(bad) = text.chars().find(|ch| ch.is_control()) {
                    return Err(invalid(format!(
                        "argument `text` contains the control character U+{:04X}; send ENTER with submit=true or \
                         android_key instead",
                        bad as u32
                    )));
                }
                let (submit, verify) = (a.submit, a.verify);
                if text.is_empty() && !a.clear {
                    return Err(invalid(
                        "argument `text` is empty: nothing to type (with clear: true, empty text empties the field)",
                    ));
                }
                let ready = ready_for_input(&c, gate).await?;
                let on = match target::parse(a.element.as_ref(), "element")? {
                    Some(t) => {
                        let r = target::resolve(&c, &t).await?;
                        let (x, y) = r.point();
                        c.check_point(x, y, "element centre").await?;
                        c.adb.input(&c.device, Input::Tap { x, y }, c.spec.deadline).await?;
                        Some(r)
                    }
                    None => None,
                };
                let clear = a.clear;
                if clear {
                    clear_field(&c).await?;
                }
                // Read back before ENTER: submitting often empties the field or moves the focus away. Without a
                // read-back, ENTER travels in the typing's own command (one round trip less).
                let enter_with_text = submit && !verify;
                let (method, clipboard, enter_sent) = if text.is_empty() {
                    // Only the clear: nothing to type (ENTER, if asked, follows below).
                    ("input_text", None, false)
                } else {
                    // The phone helper types ASCII as key events and anything else through the clipboard and a paste
                    // (no ADB Keyboard needed); where it cannot, the shell path as before.
                    let b64 = crate::base64::encode(text.as_bytes());
                    let helper = c.adb.helper(&c.device, true, c.spec.deadline, "text", &b64, Duration::ZERO).await?;
                    match helper.as_deref().map(|p| p.split_once(' ').unwrap_or((p, ""))) {
                        Some(("paste", how)) => {
                            // The helper's word about the clipboard, reported as one of the three it may say.
                            let how = ["restored", "cleared", "not_restored"].into_iter().find(|h| *h == how);
                            ("helper_paste", Some(how.unwrap_or("not_restored")), false)
                        }
                        Some(_) => ("helper_keys", None, false),
                        None if text.is_ascii() => {
                            (type_ascii(&c, &text, enter_with_text).await?, None, enter_with_text)
                        }
                        None => (type_unicode(&c, &text).await?, None, false),
                    }
                };
                // A paste is always read back: on some phones (Samsung One UI 9–11, scrcpy #1986: "It pastes what
                // was previously copied") the clipboard write "succeeds" and the paste inserts the previous clip,
                // which the helper cannot see (it reads its own clip back). Text not seen arriving is not "done".
                let pasted = method == "helper_paste";
                let verify = verify || pasted;
                let back = if verify { Some(read_back(&c, &text, clear).await) } else { None };
                let paste_unseen = pasted && back.as_ref().is_some_and(|b| b.get("verified") == Some(&json!(false)));
                if submit && !enter_sent {
                    c.adb
                        .input(&c.device, Input::Key { name: "ENTER", long: false, times: 1 }, c.spec.deadline)
                        .await?;
                }
                ready.sent(&c);
                let mut r = json!({"typed_chars": text.chars().count(), "submitted": submit, "method": method,
                                   "read_back": verify, "verified": null});
                if let Some(how) = clipboard {
                    r["clipboard"] = json!(how);
                }
                if let (Some(obj), Some(back)) = (r.as_object_mut(), back) {
                    obj.extend(back);
                }
                if paste_unseen {
                    // The operator hears of it too (doctor, the wall, android_device_status: typed text unverified).
                    c.adb.helpers().paste_unseen(&c.device);
                    r["warning"] = json!(
                        "the field does not show the pasted text (field_text is what it holds): this phone may have \
                         pasted an earlier clip. Look at the field and correct it before going on; do not assume \
                         the text arrived"
                    );
                }
                Ok(with_woke(with_element(r, on), ready.woke))
            },
        ),
        tool(
            ToolSpec {
                id: "android_key",
                title: "Press a key",
                description: "Press one hardware or navigation key (HOME, BACK, ENTER, DEL = backspace, \
                              APP_SWITCH, …).",
                input: args::schema::<KeyArgs>(),
                output: json!({"type": "object", "properties": {
                    "key": {"type": "string"}, "long_press": {"type": "boolean"}, "repeat": {"type": "integer"},
                    "woke": woke_schema()}}),
                side_effect: true,
                settles: true,
                deadline: Duration::from_secs(10),
            },
            adb,
            move |c| async move {
                let a: KeyArgs = c.parse()?;
                // The schema's enum already limits `key` to KEYS; nothing outside it reaches the shell.
                let key = a.key;
                if !KEYS.contains(&key.as_str()) {
                    return Err(invalid(format!("unknown key {key:?}")));
                }
                // The power keys are themselves about the screen: sent whatever its state, and they forget it.
                let ready =
                    if POWER_KEYS.contains(&key.as_str()) { None } else { Some(ready_for_input(&c, gate).await?) };
                let long = a.long_press;
                let repeat = a.repeat.clamp(1, MAX_REPEAT as u32);
                c.adb.input(&c.device, Input::Key { name: &key, long, times: repeat }, c.spec.deadline).await?;
                if let Some(r) = ready {
                    r.sent(&c);
                }
                let out = json!({"key": key, "long_press": long, "repeat": repeat});
                Ok(with_woke(out, ready.is_some_and(|r| r.woke)))
            },
        ),
        tool(
            ToolSpec {
                id: "android_open_url",
                title: "Open a web link",
                description: "Open an http(s) URL with the phone's default handler (usually the browser); other \
                              schemes are refused.",
                input: args::schema::<OpenUrlArgs>(),
                output: json!({"type": "object", "properties": {
                    "url": {"type": "string"},
                    "opened": {"type": "boolean", "description": "A page showed; false: warning"},
                    "page": {"type": "object", "description": "url, title"}, "warning": {"type": "string"}}}),
                side_effect: true,
                settles: true,
                deadline: Duration::from_secs(20),
            },
            adb,
            move |c| async move {
                let url = c.parse::<OpenUrlArgs>()?.url;
                check_url(&url)?;
                let cmd = format!("am start -a android.intent.action.VIEW -d {}", quote(&url));
                c.adb.shell_ok(&c.device, &cmd, true, c.spec.deadline).await?;
                // What showed, not that the intent went out (issue 49 item 7).
                Ok(match super::web::loaded(&c, gate.web_content, Duration::from_secs(8)).await {
                    Ok(page) => {
                        let mut out = json!({"url": url, "opened": true, "page": page});
                        let shown = out["page"]["url"].as_str().unwrap_or_default().to_owned();
                        if !shown.is_empty() && !same_page(&url, &shown) {
                            out["warning"] = json!(format!(
                                "the page that showed is {shown}, not the URL opened (a redirect, or the browser \
                                 kept another page)"
                            ));
                        }
                        out
                    }
                    Err(why) => json!({"url": url, "opened": false, "warning": why}),
                })
            },
        ),
        tool(
            ToolSpec {
                id: "android_scroll",
                title: "Scroll until an element is visible",
                description: "Swipe inside `element` (default: the screen) in `direction`; with `until`, until a \
                              match is visible (else element_not_found listing what was seen).",
                input: args::schema::<ScrollArgs>(),
                output: json!({"type": "object", "properties": {
                    "swipes": {"type": "integer"}, "reached_end": {"type": "boolean",
                        "description": "The last swipe changed nothing"},
                    "found": {"type": "boolean"}, "element": acted_schema(), "woke": woke_schema(),
                    "observation_id": {"type": "string"}}}),
                side_effect: true,
                settles: true,
                deadline: Duration::from_secs(90),
            },
            adb,
            move |c| async move {
                let a: ScrollArgs = c.parse()?;
                let ready = ready_for_input(&c, gate).await?;
                let r = scroll(&c, a).await?;
                ready.sent(&c);
                Ok(with_woke(r, ready.woke))
            },
        ),
    ]
}

/// Upper bound of `android_scroll`'s `max_swipes` (each swipe costs a gesture and a UI dump).
pub const MAX_SWIPES: u64 = 10;

/// Texts a scroll's `element_not_found` lists at most.
const SEEN_LISTED: usize = 30;

async fn scroll(c: &Ctx, a: ScrollArgs) -> Result<Value, ProtoError> {
    let direction = a.direction.as_str();
    let until = a.until.as_ref().map(|u| u.selector("until")).transpose()?;
    let max = a.max_swipes.map_or(if until.is_some() { 5 } else { 1 }, |n| n.clamp(1, MAX_SWIPES as u32));
    // The container: its bounds now, or the screen without its top and bottom bars.
    let area = match target::parse(a.element.as_ref(), "element")? {
        Some(t) => target::resolve(c, &t).await?.element.bounds,
        None => {
            let (w, h) = c.adb.display_size(&c.device).await?;
            let (w, h) = (w as i32, h as i32);
            [0, h / 10, w, h * 9 / 10]
        }
    };
    let [l, t, r, b] = area;
    let (cx, cy, dx, dy) = ((l + r) / 2, (t + b) / 2, (r - l) * 3 / 10, (b - t) * 3 / 10);
    // Content moves with the finger: to see what is below, drag upwards.
    let (x1, y1, x2, y2) = match a.direction {
        Direction::Down => (cx, cy + dy, cx, cy - dy),
        Direction::Up => (cx, cy - dy, cx, cy + dy),
        Direction::Right => (cx + dx, cy, cx - dx, cy),
        Direction::Left => (cx - dx, cy, cx + dx, cy),
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
    let mut first: Option<Vec<(String, [i32; 4])>> = None;
    loop {
        let now = dump::dump(c, Duration::from_secs(15)).await?;
        let view = shown(&now);
        // Whether the content moved between the first tree read and this one: a settle compares pixels only, and
        // a list of look-alike rows scrolled by whole rows looks the same (`settle::TREE_CHANGED`).
        let moved = first.as_ref().map(|f| *f != view);
        first.get_or_insert_with(|| view.clone());
        if let Some(sel) = &until {
            if let Some(e) = now.iter().find(|e| sel.matches(e)) {
                let r = Resolved { element: e.clone(), re_resolved: false };
                // The tree it was found in is kept as an observation: the element's index can be acted on.
                let id = observations::keep(&c.call.channel_id, &c.device, now);
                let mut out = json!({"found": true, "swipes": swipes, "reached_end": false, "element": r.to_json(),
                                     "observation_id": id});
                if let Some(m) = moved {
                    out[super::settle::TREE_CHANGED] = json!(m);
                }
                return Ok(out);
            }
        }
        for (text, _) in &view {
            if !text.is_empty() && !seen.contains(text) {
                seen.push(text.clone());
            }
        }
        let reached_end = last.as_ref() == Some(&view);
        if reached_end || swipes >= max {
            let Some(sel) = until else {
                let mut out = json!({"swipes": swipes, "reached_end": reached_end});
                if let Some(m) = moved {
                    out[super::settle::TREE_CHANGED] = json!(m);
                }
                return Ok(out);
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
        let (x1, y1, x2, y2) = (i64::from(x1), i64::from(y1), i64::from(x2), i64::from(y2));
        c.adb.input(&c.device, Input::Swipe { x1, y1, x2, y2, ms: 400 }, c.spec.deadline).await?;
        swipes += 1;
    }
}

/// Where a pointer action lands: the resolved `element`'s centre, or `x`/`y` (exactly one of the two forms).
async fn locate(
    c: &Ctx,
    element: Option<&ElementArg>,
    x: Option<i64>,
    y: Option<i64>,
    what: &str,
) -> Result<(i64, i64, Option<Resolved>), ProtoError> {
    let target = target::parse(element, "element")?;
    let (x, y, on) = match (target, x, y) {
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

/// The key `submit: true` sends after the text.
const ENTER: &str = "input keyevent KEYCODE_ENTER";

/// ASCII goes through `input text`, chunked so that `%s` and spaces survive (see `input_text_chunks`); `enter`
/// appends the submit key to the same command.
async fn type_ascii(c: &Ctx, text: &str, enter: bool) -> Result<&'static str, ProtoError> {
    let mut cmd: Vec<String> = input_text_chunks(text).iter().map(|t| format!("input text {}", quote(t))).collect();
    if enter {
        cmd.push(ENTER.to_owned());
    }
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
        quote(&crate::base64::encode(text.as_bytes()))
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
    let now = dump::dump(c, Duration::from_secs(15)).await?;
    Ok(now.into_iter().find(|e| e.focused && (e.class.ends_with("EditText") || e.focusable)))
}

/// Whether the page that showed is the URL opened: the same without the scheme and a trailing `/` (a browser's
/// address bar drops both).
fn same_page(asked: &str, shown: &str) -> bool {
    let bare = |u: &str| -> String {
        let u = u.split_once("://").map_or(u, |(_, r)| r);
        u.trim_end_matches('/').to_ascii_lowercase()
    };
    bare(asked) == bare(shown)
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

/// `field_text`, `password`, `verified`, `read_back_ms` of `android_input_text` with `verify`: the focused field
/// read back from a UI dump (what it cost is in the result: seconds on a real phone). A dump that fails leaves them
/// null (the text was typed; the result must not say otherwise). A password field is never read.
async fn read_back(c: &Ctx, text: &str, cleared: bool) -> serde_json::Map<String, Value> {
    let mut m = serde_json::Map::new();
    let started = std::time::Instant::now();
    let field = focused_field(c).await.ok().flatten();
    m.insert("read_back_ms".into(), json!(started.elapsed().as_millis() as u64));
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
