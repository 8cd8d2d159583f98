//! Observation tools over the accessibility tree: `android_ui_dump` and `android_ui_wait`.
//!
//! The dump comes from `uiautomator dump`; it is parsed here with an XML parser (`roxmltree`: one `<node>` per
//! view; text before `<?xml` and the trailing `UI hierchary dumped to:` line are cut off; bytes, nodes and depth
//! are bounded) into a compact element list with centres an agent can tap directly.
//!
//! One dump in flight per phone: a phone has a single UiAutomation connection, so two `uiautomator dump`s at once
//! fail there. Callers that arrive while a dump runs share its result ([`dump`] is single-flight per device). The
//! XML comes to stdout (`uiautomator dump /dev/tty`); a phone where that prints no hierarchy gets a per-call file
//! that is removed afterwards — never a fixed path another dump could delete. The shared dump is cancelled (its
//! device command hung up) only when every caller waiting for it has gone.

use std::sync::Arc;
use std::time::{Duration, Instant};

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};

use super::device::{invalid, tool, Ctx};
use super::{args, Tool, ToolSpec};
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
    /// A selected tab, list row or chip (`selected="true"`).
    pub selected: bool,
    pub scrollable: bool,
    pub focusable: bool,
    /// A password field: its text is never returned (defence in depth; Android usually masks it already).
    pub password: bool,
    pub bounds: [i32; 4],
    /// Read from the page through the DevTools protocol (`tools::web`), not from the UI dump: `source: "web"`.
    pub web: bool,
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
            ("selected", self.selected),
            ("scrollable", self.scrollable),
        ] {
            if b {
                v[k] = json!(true);
            }
        }
        if !self.enabled {
            v["enabled"] = json!(false);
        }
        if self.web {
            v["source"] = json!("web");
        }
        v
    }
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

/// Largest UI dump accepted (a WebView page with thousands of nodes is a few MB).
pub const DUMP_MAX_BYTES: usize = 16 << 20;
/// Most `<node>` elements read from one dump.
pub const DUMP_MAX_NODES: usize = 50_000;
/// Deepest `<node>` nesting accepted.
pub const DUMP_MAX_DEPTH: usize = 256;

/// The XML document of `uiautomator dump` output: from `<?xml` (or `<hierarchy`) to the closing `</hierarchy>`.
/// Text around it — a shell prompt before, the `UI hierchary dumped to: …` line after — is not XML.
fn dump_document(out: &str) -> Result<&str, String> {
    let start =
        out.find("<?xml").or_else(|| out.find("<hierarchy")).ok_or("the UI dump is not a uiautomator hierarchy")?;
    let doc = &out[start..];
    let end = match doc.rfind("</hierarchy>") {
        Some(i) => i + "</hierarchy>".len(),
        // An empty screen may be `<hierarchy rotation="0"/>`: end at the line that closes it.
        None => doc.find("UI hierchary dumped to").unwrap_or(doc.len()),
    };
    Ok(&doc[..end])
}

/// Parses every `<node>` of a uiautomator dump, in document order, with an XML parser (values quoted either way,
/// entities and character references, comments are all XML's business, not ours). Bounded: at most
/// [`DUMP_MAX_BYTES`], [`DUMP_MAX_NODES`] nodes nested at most [`DUMP_MAX_DEPTH`] deep; a DTD is refused.
pub fn parse_dump(out: &str) -> Result<Vec<Element>, String> {
    if out.len() > DUMP_MAX_BYTES {
        return Err(format!("the UI dump is larger than {DUMP_MAX_BYTES} bytes"));
    }
    let xml = dump_document(out)?;
    let opts = roxmltree::ParsingOptions {
        allow_dtd: false,
        // Elements, attributes' text nodes and whitespace text count towards roxmltree's own limit.
        nodes_limit: u32::try_from(DUMP_MAX_NODES.saturating_mul(4)).unwrap_or(u32::MAX),
        ..roxmltree::ParsingOptions::default()
    };
    let doc = roxmltree::Document::parse_with_options(xml, opts)
        .map_err(|e| format!("the UI dump is not well-formed XML: {e}"))?;
    let root = doc.root_element();
    if root.tag_name().name() != "hierarchy" {
        return Err(format!("the UI dump's root is <{}>, not <hierarchy>", root.tag_name().name()));
    }
    let mut out = Vec::new();
    for n in root.descendants().filter(|n| n.is_element() && n.tag_name().name() == "node") {
        if out.len() >= DUMP_MAX_NODES {
            return Err(format!("the UI dump has more than {DUMP_MAX_NODES} nodes"));
        }
        // Depth below <hierarchy>; ancestors() includes the node itself and the document root.
        if n.ancestors().take(DUMP_MAX_DEPTH + 3).count() > DUMP_MAX_DEPTH + 2 {
            return Err(format!("the UI dump nests nodes deeper than {DUMP_MAX_DEPTH}"));
        }
        let attr = |name: &str| n.attribute(name).unwrap_or("");
        let flag = |name: &str| n.attribute(name) == Some("true");
        let bounds = match n.attribute("bounds") {
            Some(v) => parse_bounds(v).ok_or_else(|| format!("bad bounds {v:?}"))?,
            None => [0; 4],
        };
        out.push(Element {
            index: out.len(),
            text: attr("text").to_owned(),
            resource_id: attr("resource-id").to_owned(),
            class: attr("class").to_owned(),
            package: attr("package").to_owned(),
            content_desc: attr("content-desc").to_owned(),
            clickable: flag("clickable"),
            enabled: n.attribute("enabled") != Some("false"),
            focused: flag("focused"),
            checked: flag("checked"),
            selected: flag("selected"),
            scrollable: flag("scrollable"),
            focusable: flag("focusable"),
            password: flag("password"),
            bounds,
            web: false,
        });
    }
    Ok(out)
}

/// The phone's current UI elements. Single-flight per device: joins the dump in flight if there is one (see the
/// module docs). `deadline` bounds this caller's wait (and the dump, when this caller starts it).
pub async fn dump(c: &Ctx, deadline: Duration) -> Result<Vec<Element>, ProtoError> {
    if let Some(at) = not_idle().lock().unwrap_or_else(|e| e.into_inner()).get(&c.device) {
        if at.elapsed() < NOT_IDLE_MEMORY {
            return Err(not_idle_error(Some(at.elapsed())));
        }
    }
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

/// What `uiautomator dump` prints (on stderr, exit status 0, no XML) when the screen never became idle within its
/// 10 s: a video or an animation. Retrying costs another 10 s and fails the same way, so it is reported at once.
const NOT_IDLE: &str = "could not get idle state";

/// How long a screen that did not idle is taken to still not idle: calls in that window (the element-targeted
/// action right after an observe that had no tree, a second observe) fail at once instead of waiting another 10 s.
pub const NOT_IDLE_MEMORY: Duration = Duration::from_secs(5);

/// Devices whose last dump found a screen that never idles, and when.
fn not_idle() -> &'static Mutex<HashMap<DeviceKey, Instant>> {
    static N: std::sync::OnceLock<Mutex<HashMap<DeviceKey, Instant>>> = std::sync::OnceLock::new();
    N.get_or_init(Default::default)
}

/// Forgets that `device`'s screen never idled: the agent's own side effect (a key, a tap, an app launch) may have
/// stopped the animation, so the next dump asks uiautomator again instead of answering from memory.
pub fn forget_not_idle(device: &DeviceKey) {
    not_idle().lock().unwrap_or_else(|e| e.into_inner()).remove(device);
}

/// The `ui_unavailable` error of a screen that never idles.
pub fn not_idle_error(ago: Option<Duration>) -> ProtoError {
    let when = ago.map_or(String::new(), |a| format!(" ({:.1} s ago; not asked again yet)", a.as_secs_f64()));
    ProtoError::new(
        ErrorCode::UiUnavailable,
        format!(
            "the UI tree cannot be read now: uiautomator waited ~10 s and the screen never became idle{when} (a \
             video or an animation is playing). Use the screenshot and act by coordinates, pause or leave the \
             animation (android_key BACK), or try again in a few seconds"
        ),
    )
}

/// Who read each device's last tree: the phone helper (`tree`, every window, no idle wait) or `uiautomator dump`.
fn sources() -> &'static Mutex<HashMap<DeviceKey, &'static str>> {
    static S: std::sync::OnceLock<Mutex<HashMap<DeviceKey, &'static str>>> = std::sync::OnceLock::new();
    S.get_or_init(Default::default)
}

/// `helper` or `uiautomator`: who read `device`'s last tree.
pub fn last_source(device: &DeviceKey) -> &'static str {
    sources().lock().unwrap_or_else(|e| e.into_inner()).get(device).copied().unwrap_or("uiautomator")
}

/// The tree from the phone helper's `tree` (`device::helper`): no idle wait, so a screen that never idles has one
/// too. `None` when the helper cannot give it for this read (not running, busy, a reply that does not parse): the
/// caller runs `uiautomator dump`.
async fn helper_tree(
    adb: &AdbBackend,
    device: &DeviceKey,
    deadline: Duration,
) -> Result<Option<Vec<Element>>, ProtoError> {
    let Some(payload) = adb.helper(device, false, deadline, "tree", "", Duration::ZERO).await? else {
        return Ok(None);
    };
    let xml = payload.strip_prefix("xml ").and_then(crate::device::shell::base64_decode).map(String::from_utf8);
    match xml.map(|x| x.map_err(|e| e.to_string()).and_then(|x| parse_dump(&x))) {
        Some(Ok(els)) => Ok(Some(els)),
        other => {
            let why = match other {
                Some(Err(m)) => crate::device::text::phone_text(&m, 200),
                _ => "not base64 XML".to_owned(),
            };
            tracing::warn!(device = %device, why, "the phone helper's tree did not parse; using uiautomator dump");
            Ok(None)
        }
    }
}

/// Runs one dump to the end: retries a transient "null root node" (between windows) and falls back to a file when
/// `/dev/tty` prints nothing, but never retries a screen that does not idle (see [`NOT_IDLE`]).
async fn dump_once(adb: Arc<AdbBackend>, device: DeviceKey, deadline: Duration) -> DumpOutcome {
    let started = Instant::now();
    if let Some(els) = helper_tree(&adb, &device, deadline).await? {
        not_idle().lock().unwrap_or_else(|e| e.into_inner()).remove(&device);
        sources().lock().unwrap_or_else(|e| e.into_inner()).insert(device, "helper");
        return Ok(Arc::new(els));
    }
    sources().lock().unwrap_or_else(|e| e.into_inner()).insert(device.clone(), "uiautomator");
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
        // Checked before anything else: this message comes with exit status 0 and no XML, which would otherwise
        // look like a phone whose /dev/tty prints nothing. (Over a `shell:` v1 stream it arrives on stdout.)
        if text.contains(NOT_IDLE) && !out.stdout.contains("<hierarchy") {
            not_idle().lock().unwrap_or_else(|e| e.into_inner()).insert(device.clone(), Instant::now());
            return Err(not_idle_error(None));
        }
        if out.code == 0 {
            if tty && !out.stdout.contains("<hierarchy") {
                tracing::debug!(device = %device, "uiautomator dump /dev/tty printed no hierarchy; using a file");
                no_tty().lock().unwrap_or_else(|e| e.into_inner()).insert(device.clone());
                continue;
            }
            match parse_dump(&out.stdout) {
                Ok(els) => {
                    not_idle().lock().unwrap_or_else(|e| e.into_inner()).remove(&device);
                    return Ok(Arc::new(els));
                }
                Err(m) if attempt >= 3 => {
                    let m = crate::device::text::phone_text(&m, 300);
                    return Err(ProtoError::new(ErrorCode::ToolInvokeFailed, format!("uiautomator: {m}")));
                }
                Err(_) => {}
            }
        } else if attempt >= 3 || !text.contains("null root node") {
            let msg = crate::device::text::phone_text(&text, 300);
            return Err(ProtoError::new(ErrorCode::ToolInvokeFailed, format!("uiautomator dump failed: {msg}")));
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

/// `text` is a substring of the element's text, or with `exact` the whole text. A password field's text never
/// matches (it is not the agent's to read).
fn matches(e: &Element, text: Option<&str>, exact: bool, id: Option<&str>, desc: Option<&str>) -> bool {
    text.is_none_or(|t| !e.password && if exact { e.text == t } else { e.text.contains(t) })
        && id.is_none_or(|i| e.resource_id == i || e.resource_id.ends_with(&format!(":id/{i}")))
        && desc.is_none_or(|d| e.content_desc.contains(d))
}

/// Texts listed when a wait times out (the screen the agent was waiting on, so it can correct the next call).
const WAIT_LISTED: usize = 20;

/// The distinct texts and content descriptions on screen (first [`WAIT_LISTED`], each at most 60 characters, never
/// a password field's), and how many there were.
fn on_screen(all: &[Element]) -> (Vec<String>, usize) {
    let mut seen = std::collections::BTreeSet::new();
    let texts: Vec<String> = all
        .iter()
        .filter(|e| !e.password)
        .flat_map(|e| [&e.text, &e.content_desc])
        .filter(|t| !t.trim().is_empty())
        .map(|t| t.chars().take(60).collect::<String>())
        .filter(|t| seen.insert(t.clone()))
        .collect();
    let total = texts.len();
    (texts.into_iter().take(WAIT_LISTED).collect(), total)
}

/// The schema of one element as results give it: `listed` is the full form of a list (package and the flags,
/// present only when true — `enabled` only when false); otherwise the element an action was done on.
///
/// Described in prose rather than as nested properties: the shape is the same in every result, and the card pays
/// for each copy of a nested schema in tokens (the token budget of issue 19).
pub fn element_schema(listed: bool) -> Value {
    let fields = if listed {
        "index, class, package, text, resource_id, content_desc, bounds [l,t,r,b], center [x,y] (device px); \
         clickable, focused, checked, selected, scrollable, password when true; enabled when false"
    } else {
        "The element acted on, as observed before"
    };
    json!({"type": "object", "description": fields})
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct UiDumpArgs {
    /// Only elements that can be tapped, scrolled or focused
    #[serde(default)]
    only_interactive: bool,
    #[schemars(range(min = 1, max = 1000))]
    #[serde(default = "elements_300")]
    max_elements: u32,
}

/// The default cap on listed elements (`android_ui_dump`, `android_observe`).
pub fn elements_300() -> u32 {
    300
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct UiWaitArgs {
    /// Substring of the element text (whole text with exact)
    #[schemars(length(min = 1, max = 200))]
    text: Option<String>,
    /// Match `text` exactly instead of as a substring
    #[serde(default)]
    exact: bool,
    /// pkg:id/name or name
    #[schemars(length(min = 1, max = 200))]
    resource_id: Option<String>,
    /// Substring of the content description
    #[schemars(length(min = 1, max = 200))]
    content_desc: Option<String>,
    /// Wait for it to disappear instead
    #[serde(default)]
    gone: bool,
    #[schemars(range(min = 0, max = 30_000))]
    #[serde(default = "ms_5000")]
    timeout_ms: u32,
}

fn ms_5000() -> u32 {
    5000
}

pub fn tools(adb: &Arc<AdbBackend>) -> Vec<Arc<dyn Tool>> {
    vec![
        tool(
            ToolSpec {
                id: "android_ui_dump",
                title: "Read the screen's UI elements",
                description: "The visible UI elements and an observation_id for `element: {index, \
                              observation_id}`. Cheaper than android_observe when text is enough.",
                input: args::schema::<UiDumpArgs>(),
                output: json!({"type": "object", "properties": {
                    "observation_id": {"type": "string"}, "package": {"type": "string"},
                    "count": {"type": "integer"}, "truncated": {"type": "boolean"},
                    "source": {"type": "string", "enum": ["helper", "uiautomator"]},
                    "elements": {"type": "array", "items": element_schema(true)}}}),
                side_effect: false,
                settles: false,
                deadline: Duration::from_secs(20),
            },
            adb,
            |c| async move {
                let a: UiDumpArgs = c.parse()?;
                let all = dump(&c, c.spec.deadline).await?;
                let (only_interactive, max) = (a.only_interactive, a.max_elements as usize);
                let package = all.first().map(|e| e.package.clone()).unwrap_or_default();
                let picked: Vec<&Element> =
                    all.iter().filter(|e| e.is_interesting() && (!only_interactive || e.is_interactive())).collect();
                let truncated = picked.len() > max;
                let elements: Vec<Value> = picked.iter().take(max).map(|e| e.to_json()).collect();
                // Kept like an android_observe's list, so `element: {index, observation_id}` works on what the
                // agent read here (checked against the screen again before acting).
                let id = super::observe::new_id();
                super::observe::remember(
                    &c.call.channel_id,
                    super::observe::Observation {
                        id: id.clone(),
                        device: c.device.clone(),
                        created: Instant::now(),
                        elements: all,
                    },
                );
                Ok(json!({"observation_id": id, "package": package, "count": elements.len(), "truncated": truncated,
                          "source": last_source(&c.device), "elements": elements}))
            },
        ),
        tool(
            ToolSpec {
                id: "android_ui_wait",
                title: "Wait for a UI element",
                description: "Wait until a matching element is on screen (with gone: is not), instead of \
                              sleeping. ui_wait_timeout lists the texts on screen.",
                input: args::schema::<UiWaitArgs>(),
                output: json!({"type": "object", "properties": {
                    "found": {"type": "boolean"}, "waited_ms": {"type": "integer"}, "element": element_schema(true)}}),
                side_effect: false,
                settles: false,
                deadline: Duration::from_secs(40),
            },
            adb,
            |c| async move {
                let a: UiWaitArgs = c.parse()?;
                let (text, id, desc) = (a.text.as_deref(), a.resource_id.as_deref(), a.content_desc.as_deref());
                if text.is_none() && id.is_none() && desc.is_none() {
                    return Err(invalid("give at least one of `text`, `resource_id`, `content_desc`"));
                }
                let (gone, exact) = (a.gone, a.exact);
                let timeout = Duration::from_millis(u64::from(a.timeout_ms));
                let started = Instant::now();
                loop {
                    // Longer than uiautomator's own 10 s idle wait, so a screen that never idles ends in
                    // ui_unavailable (its real cause) rather than in a timeout.
                    let all = dump(&c, Duration::from_secs(14)).await?;
                    let hit = all.iter().find(|e| matches(e, text, exact, id, desc));
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
                            let (seen, total) = on_screen(&all);
                            let listed: Vec<String> = seen.iter().map(|t| format!("{t:?}")).collect();
                            let more = if total > seen.len() {
                                format!(" … {} more", total - seen.len())
                            } else {
                                String::new()
                            };
                            let exactly = if exact && text.is_some() { " (exact text)" } else { "" };
                            return Err(ProtoError::new(
                                ErrorCode::UiWaitTimeout,
                                format!(
                                    "element {what}{exactly} {state} after {waited} ms. Texts on screen: {}{more}",
                                    if listed.is_empty() { "none".to_owned() } else { listed.join(", ") }
                                ),
                            )
                            .with_details(json!({"on_screen": seen, "on_screen_total": total})));
                        }
                        _ => {
                            // A poll is a step the caller can be told of (`tool.progress.push`; MCP progress).
                            let state = if gone { "still on screen" } else { "not on screen yet" };
                            (c.call.progress)(&format!("polled the screen: {state} after {waited} ms"), None);
                            tokio::time::sleep(Duration::from_millis(400)).await
                        }
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
        assert!(matches(&els[2], None, false, Some("button"), None));
        assert!(matches(&els[1], Some("Count: 3"), false, None, None));
        assert!(!matches(&els[1], Some("Count: 3"), true, None, None), "exact needs the whole text");
        assert!(matches(&els[1], Some("Count: 3 & \"more\" 中"), true, None, None));
        assert!(!matches(&els[1], Some("Count: 4"), false, None, None));
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
