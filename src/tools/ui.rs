//! Observation tools over the accessibility tree: `android_ui_dump` and `android_ui_wait`.
//!
//! The dump comes from `uiautomator dump`; it is parsed here (the XML is machine-written: one `<node …>` per view,
//! attributes in double quotes, the five standard entities and numeric references) into a compact element list with
//! centres an agent can tap directly.
//!
//! One dump in flight per phone: a phone has a single UiAutomation connection, so two `uiautomator dump`s at once
//! fail there. Callers that arrive while a dump runs share its result ([`dump`] is single-flight per device). The
//! XML comes to stdout (`uiautomator dump /dev/tty`); a phone where that prints no hierarchy gets a per-call file
//! that is removed afterwards — never a fixed path another dump could delete. The shared dump is cancelled (its
//! device command hung up) only when every caller waiting for it has gone.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::device::{invalid, tool, Ctx};
use super::{Tool, ToolSpec};
use crate::device::adb::AdbBackend;
use crate::protocol::errors::{ErrorCode, ProtoError};

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;

use futures_util::future::{BoxFuture, FutureExt, Shared, WeakShared};

use crate::device::DeviceKey;

type DumpOutcome = Result<Arc<Vec<Element>>, ProtoError>;
type Flight = Shared<BoxFuture<'static, DumpOutcome>>;

/// The dump in flight per device (weak: it lives only as long as someone awaits it).
fn flights() -> &'static Mutex<HashMap<DeviceKey, WeakShared<BoxFuture<'static, DumpOutcome>>>> {
    static F: std::sync::OnceLock<Mutex<HashMap<DeviceKey, WeakShared<BoxFuture<'static, DumpOutcome>>>>> =
        std::sync::OnceLock::new();
    F.get_or_init(Default::default)
}

/// Bytes of `uiautomator dump` output read: real dumps are tens to hundreds of KiB; the XML is the phone's word,
/// and every byte becomes parsed elements.
pub const UI_DUMP_MAX: usize = 8 << 20;

/// Devices whose `uiautomator dump /dev/tty` printed no hierarchy: they get a per-call file instead.
fn no_tty() -> &'static Mutex<HashSet<DeviceKey>> {
    static N: std::sync::OnceLock<Mutex<HashSet<DeviceKey>>> = std::sync::OnceLock::new();
    N.get_or_init(Default::default)
}

#[derive(Clone, Debug, PartialEq)]
pub struct Element {
    /// Position in document order (stable for one dump; use it to refer to an element in the same dump).
    pub index: usize,
    pub text: String,
    pub resource_id: String,
    pub class: String,
    pub package: String,
    pub content_desc: String,
    pub clickable: bool,
    pub enabled: bool,
    pub focused: bool,
    pub checked: bool,
    pub scrollable: bool,
    pub focusable: bool,
    /// A password field: its text is never returned (defence in depth; Android usually masks it already).
    pub password: bool,
    pub bounds: [i32; 4],
}

impl Element {
    pub fn center(&self) -> [i32; 2] {
        [(self.bounds[0] + self.bounds[2]) / 2, (self.bounds[1] + self.bounds[3]) / 2]
    }

    pub fn is_interactive(&self) -> bool {
        self.enabled && (self.clickable || self.scrollable || self.focusable)
    }

    pub fn is_interesting(&self) -> bool {
        !self.text.is_empty() || !self.content_desc.is_empty() || !self.resource_id.is_empty() || self.is_interactive()
    }

    pub fn to_json(&self) -> Value {
        let mut v = json!({
            "index": self.index,
            "class": self.class.rsplit('.').next().unwrap_or(&self.class),
            "package": self.package,
            "bounds": self.bounds,
            "center": self.center(),
        });
        let text = if self.password { &String::new() } else { &self.text };
        if self.password {
            v["password"] = json!(true);
        }
        for (k, s) in [("text", text), ("resource_id", &self.resource_id), ("content_desc", &self.content_desc)] {
            if !s.is_empty() {
                v[k] = json!(s);
            }
        }
        for (k, b) in [
            ("clickable", self.clickable),
            ("focused", self.focused),
            ("checked", self.checked),
            ("scrollable", self.scrollable),
        ] {
            if b {
                v[k] = json!(true);
            }
        }
        if !self.enabled {
            v["enabled"] = json!(false);
        }
        v
    }
}

fn unescape(s: &str) -> String {
    if !s.contains('&') {
        return s.to_owned();
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find('&') {
        out.push_str(&rest[..i]);
        rest = &rest[i..];
        let Some(end) = rest.find(';').filter(|&e| e <= 10) else {
            out.push('&');
            rest = &rest[1..];
            continue;
        };
        let ent = &rest[1..end];
        let ch = match ent {
            "amp" => Some('&'),
            "lt" => Some('<'),
            "gt" => Some('>'),
            "quot" => Some('"'),
            "apos" => Some('\''),
            _ if ent.starts_with("#x") => u32::from_str_radix(&ent[2..], 16).ok().and_then(char::from_u32),
            _ if ent.starts_with('#') => ent[1..].parse().ok().and_then(char::from_u32),
            _ => None,
        };
        match ch {
            Some(c) => {
                out.push(c);
                rest = &rest[end + 1..];
            }
            None => {
                out.push('&');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// `[x1,y1][x2,y2]`
fn parse_bounds(s: &str) -> Option<[i32; 4]> {
    let nums: Vec<i32> = s
        .split(|c: char| !(c.is_ascii_digit() || c == '-'))
        .filter(|p| !p.is_empty())
        .filter_map(|p| p.parse().ok())
        .collect();
    (nums.len() == 4).then(|| [nums[0], nums[1], nums[2], nums[3]])
}

/// Parses every `<node …>` of a uiautomator dump, in document order.
pub fn parse_dump(xml: &str) -> Result<Vec<Element>, String> {
    if !xml.contains("<hierarchy") {
        return Err("the UI dump is not a uiautomator hierarchy".into());
    }
    let mut out = Vec::new();
    let mut rest = xml;
    while let Some(i) = rest.find("<node") {
        rest = &rest[i + 5..];
        let end = tag_end(rest).ok_or("unterminated <node> tag")?;
        let attrs = &rest[..end];
        rest = &rest[end..];
        let mut e = Element {
            index: out.len(),
            text: String::new(),
            resource_id: String::new(),
            class: String::new(),
            package: String::new(),
            content_desc: String::new(),
            clickable: false,
            enabled: true,
            focused: false,
            checked: false,
            scrollable: false,
            focusable: false,
            password: false,
            bounds: [0; 4],
        };
        let mut a = attrs;
        while let Some(eq) = a.find("=\"") {
            let name = a[..eq].trim();
            let after = &a[eq + 2..];
            let close = after.find('"').ok_or("unterminated attribute value")?;
            let value = unescape(&after[..close]);
            match name {
                "text" => e.text = value,
                "resource-id" => e.resource_id = value,
                "class" => e.class = value,
                "package" => e.package = value,
                "content-desc" => e.content_desc = value,
                "clickable" => e.clickable = value == "true",
                "enabled" => e.enabled = value == "true",
                "focused" => e.focused = value == "true",
                "checked" => e.checked = value == "true",
                "scrollable" => e.scrollable = value == "true",
                "focusable" => e.focusable = value == "true",
                "password" => e.password = value == "true",
                "bounds" => e.bounds = parse_bounds(&value).ok_or_else(|| format!("bad bounds {value:?}"))?,
                _ => {}
            }
            a = &after[close + 1..];
        }
        out.push(e);
    }
    Ok(out)
}

/// Index of the `>` that ends the tag, skipping `>` inside quoted values.
fn tag_end(s: &str) -> Option<usize> {
    let mut quoted = false;
    for (i, c) in s.char_indices() {
        match c {
            '"' => quoted = !quoted,
            '>' if !quoted => return Some(i),
            _ => {}
        }
    }
    None
}

/// Dumps and parses the hierarchy, retrying the transient failures uiautomator is known for ("could not get idle
/// state" while an animation runs, "null root node" between windows) a few times before giving up.
/// The phone's current UI elements. Single-flight per device: joins the dump in flight if there is one (see the
/// module docs). `deadline` bounds this caller's wait (and the dump, when this caller starts it).
pub async fn dump(c: &Ctx, deadline: Duration) -> Result<Vec<Element>, ProtoError> {
    let flight: Flight = {
        let mut map = flights().lock().unwrap_or_else(|e| e.into_inner());
        match map.get(&c.device).and_then(WeakShared::upgrade).filter(|f| f.peek().is_none()) {
            Some(f) => f,
            None => {
                map.retain(|_, w| w.upgrade().is_some());
                let f = dump_once(c.adb.clone(), c.device.clone(), deadline).boxed().shared();
                if let Some(w) = f.downgrade() {
                    map.insert(c.device.clone(), w);
                }
                f
            }
        }
    };
    match tokio::time::timeout(deadline, flight).await {
        Ok(r) => r.map(|els| els.as_ref().clone()),
        Err(_) => Err(ProtoError::new(
            ErrorCode::DeviceTimeout,
            format!("the UI dump did not finish within {} ms", deadline.as_millis()),
        )),
    }
}

/// Runs one dump (with retries while the UI is not idle) to the end.
async fn dump_once(adb: Arc<AdbBackend>, device: DeviceKey, deadline: Duration) -> DumpOutcome {
    let started = Instant::now();
    let mut attempt = 0;
    loop {
        attempt += 1;
        let left = deadline.saturating_sub(started.elapsed());
        let tty = !no_tty().lock().unwrap_or_else(|e| e.into_inner()).contains(&device);
        let cmd = if tty {
            "uiautomator dump /dev/tty".to_owned()
        } else {
            let path = format!("/sdcard/xagent-dump-{}.xml", crate::protocol::ids::random_hex(8));
            format!("uiautomator dump {path} >/dev/null && cat {path}; rc=$?; rm -f {path}; exit $rc")
        };
        let out = adb.shell_capped(&device, &cmd, UI_DUMP_MAX, false, left).await?;
        let text = format!("{}{}", out.stdout, out.stderr);
        if out.code == 0 {
            if tty && !out.stdout.contains("<hierarchy") {
                tracing::debug!(device = %device, "uiautomator dump /dev/tty printed no hierarchy; using a file");
                no_tty().lock().unwrap_or_else(|e| e.into_inner()).insert(device.clone());
                continue;
            }
            match parse_dump(&out.stdout) {
                Ok(els) => return Ok(Arc::new(els)),
                Err(m) if attempt >= 3 => {
                    return Err(ProtoError::new(ErrorCode::ToolInvokeFailed, format!("uiautomator: {m}")))
                }
                Err(_) => {}
            }
        } else if attempt >= 3 || !(text.contains("idle state") || text.contains("null root node")) {
            let msg: String = text.trim().chars().take(300).collect();
            return Err(ProtoError::new(ErrorCode::ToolInvokeFailed, format!("uiautomator dump failed: {msg}")));
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

fn matches(e: &Element, text: Option<&str>, id: Option<&str>, desc: Option<&str>) -> bool {
    text.is_none_or(|t| e.text.contains(t))
        && id.is_none_or(|i| e.resource_id == i || e.resource_id.ends_with(&format!(":id/{i}")))
        && desc.is_none_or(|d| e.content_desc.contains(d))
}

pub fn tools(adb: &Arc<AdbBackend>) -> Vec<Arc<dyn Tool>> {
    let element_schema = json!({"type": "object", "required": ["index", "class", "bounds", "center"], "properties": {
        "index": {"type": "integer"}, "package": {"type": "string"},
        "text": {"type": "string"}, "resource_id": {"type": "string"}, "content_desc": {"type": "string"},
        "class": {"type": "string"}, "clickable": {"type": "boolean"}, "enabled": {"type": "boolean"},
        "focused": {"type": "boolean"}, "checked": {"type": "boolean"}, "scrollable": {"type": "boolean"},
        "password": {"type": "boolean"},
        "bounds": {"type": "array", "items": {"type": "integer"}, "minItems": 4, "maxItems": 4},
        "center": {"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 2}}});
    vec![
        tool(
            ToolSpec {
                id: "android_ui_dump",
                title: "Read the screen's UI elements",
                description: "List the visible UI elements (text, resource id, content description, clickable, \
                              bounds and centre in device pixels) of the foreground app. Prefer this to a screenshot \
                              whenever text is enough; tap an element at its `center`.",
                input: json!({"type": "object", "additionalProperties": false, "properties": {
                    "only_interactive": {"type": "boolean", "default": false,
                                         "description": "Only enabled elements that can be tapped, scrolled or focused"},
                    "max_elements": {"type": "integer", "minimum": 1, "maximum": 1000, "default": 300,
                                     "description": "Cap on the number of elements returned"}}}),
                output: json!({"type": "object", "required": ["elements", "count", "truncated"], "properties": {
                    "package": {"type": "string"}, "count": {"type": "integer"}, "truncated": {"type": "boolean"},
                    "elements": {"type": "array", "items": element_schema}}}),
                side_effect: false,
                deadline: Duration::from_secs(20),
            },
            adb,
            |c| async move {
                let all = dump(&c, c.spec.deadline).await?;
                let only_interactive = c.bool("only_interactive").unwrap_or(false);
                let max = c.i64("max_elements").unwrap_or(300) as usize;
                let package = all.first().map(|e| e.package.clone()).unwrap_or_default();
                let picked: Vec<&Element> =
                    all.iter().filter(|e| e.is_interesting() && (!only_interactive || e.is_interactive())).collect();
                let truncated = picked.len() > max;
                let elements: Vec<Value> = picked.iter().take(max).map(|e| e.to_json()).collect();
                Ok(json!({"package": package, "count": elements.len(), "truncated": truncated, "elements": elements}))
            },
        ),
        tool(
            ToolSpec {
                id: "android_ui_wait",
                title: "Wait for a UI element",
                description: "Wait until an element matching text (substring), resource_id or content_desc is on \
                              screen (or, with gone=true, is no longer), polling the UI tree. Use this instead of \
                              sleeping after an action. Fails with ui_wait_timeout when nothing matched in \
                              timeout_ms (default 5000, at most 30000).",
                input: json!({"type": "object", "additionalProperties": false, "properties": {
                    "text": {"type": "string", "minLength": 1, "maxLength": 200, "description": "Substring of the element text"},
                    "resource_id": {"type": "string", "minLength": 1, "maxLength": 200, "description": "Full id (pkg:id/name) or just name"},
                    "content_desc": {"type": "string", "minLength": 1, "maxLength": 200, "description": "Substring of the content description"},
                    "gone": {"type": "boolean", "default": false, "description": "Wait for the element to disappear instead"},
                    "timeout_ms": {"type": "integer", "minimum": 0, "maximum": 30000, "default": 5000}}}),
                output: json!({"type": "object", "required": ["found", "waited_ms"], "properties": {
                    "found": {"type": "boolean"}, "waited_ms": {"type": "integer"}, "element": element_schema}}),
                side_effect: false,
                deadline: Duration::from_secs(40),
            },
            adb,
            |c| async move {
                let (text, id, desc) = (c.str("text"), c.str("resource_id"), c.str("content_desc"));
                if text.is_none() && id.is_none() && desc.is_none() {
                    return Err(invalid("give at least one of `text`, `resource_id`, `content_desc`"));
                }
                let gone = c.bool("gone").unwrap_or(false);
                let timeout = Duration::from_millis(c.i64("timeout_ms").unwrap_or(5000) as u64);
                let started = Instant::now();
                loop {
                    let all = dump(&c, Duration::from_secs(10)).await?;
                    let hit = all.iter().find(|e| matches(e, text, id, desc));
                    let waited = started.elapsed().as_millis() as u64;
                    match (hit, gone) {
                        (Some(e), false) => {
                            return Ok(json!({"found": true, "waited_ms": waited, "element": e.to_json()}))
                        }
                        (None, true) => return Ok(json!({"found": true, "waited_ms": waited})),
                        _ if started.elapsed() >= timeout => {
                            let what = [("text", text), ("resource_id", id), ("content_desc", desc)]
                                .iter()
                                .filter_map(|(k, v)| v.map(|v| format!("{k}={v:?}")))
                                .collect::<Vec<_>>()
                                .join(", ");
                            let state = if gone { "still on screen" } else { "not on screen" };
                            return Err(ProtoError::new(
                                ErrorCode::UiWaitTimeout,
                                format!("element {what} {state} after {waited} ms; observe again (android_ui_dump) before retrying"),
                            ));
                        }
                        _ => tokio::time::sleep(Duration::from_millis(400)).await,
                    }
                }
            },
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    const XML: &str = r#"<?xml version='1.0' encoding='UTF-8' standalone='yes' ?><hierarchy rotation="0"><node index="0" text="" resource-id="" class="android.widget.FrameLayout" package="com.android.launcher3" content-desc="" clickable="false" enabled="true" focused="false" checked="false" bounds="[0,0][1080,2400]"><node index="0" text="Count: 3 &amp; &quot;more&quot; &#x4E2D;" resource-id="com.sim:id/counter" class="android.widget.TextView" package="com.android.launcher3" content-desc="" clickable="false" enabled="true" focused="false" checked="false" bounds="[240,600][840,720]" /><node index="1" text="Increment" resource-id="com.sim:id/button" class="android.widget.Button" package="com.android.launcher3" content-desc="a &gt; b" clickable="true" enabled="true" focused="false" checked="false" bounds="[337,900][742,1056]" /></node></hierarchy>"#;

    #[test]
    fn parses_nodes_entities_and_centres() {
        let els = parse_dump(XML).unwrap();
        assert_eq!(els.len(), 3);
        assert_eq!(els[1].text, "Count: 3 & \"more\" 中");
        assert_eq!(els[2].content_desc, "a > b");
        assert!(els[2].clickable);
        assert_eq!(els[2].center(), [539, 978]);
        assert!(!els[0].is_interesting());
        assert_eq!(els[2].index, 2);
        let j = els[2].to_json();
        assert_eq!(j["class"], "Button");
        assert_eq!(j["package"], "com.android.launcher3");
        assert_eq!(j["center"], json!([539, 978]));
        assert!(matches(&els[2], None, Some("button"), None));
        assert!(matches(&els[1], Some("Count: 3"), None, None));
        assert!(!matches(&els[1], Some("Count: 4"), None, None));
    }

    #[test]
    fn password_fields_never_return_their_text() {
        let xml = r#"<hierarchy><node index="0" text="hunter2" resource-id="pw" class="android.widget.EditText" package="p" content-desc="" clickable="true" enabled="true" password="true" bounds="[0,0][10,10]" /></hierarchy>"#;
        let e = &parse_dump(xml).unwrap()[0];
        assert!(e.password);
        let j = e.to_json();
        assert!(j.get("text").is_none() && j["password"] == true, "{j}");
        assert!(!j.to_string().contains("hunter2"));
    }

    #[test]
    fn rejects_non_dumps() {
        assert!(parse_dump("ERROR: could not get idle state.").is_err());
        assert!(parse_dump("<hierarchy><node text=\"x").is_err());
    }
}
