//! Reading the UI tree of a phone: the phone helper's `tree` where it runs, else `uiautomator dump`, parsed into
//! [`Element`]s with what they cover (`tools::tree`). Every tool that reads the tree (ui, observe, input, the
//! element targets, the tree delta) reads it here.
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

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::future::{BoxFuture, FutureExt, Shared, WeakShared};
use serde_json::json;

use super::context::Ctx;
use super::element::Element;
use super::tree::{Cover, Window, Windows};
use crate::device::adb::AdbBackend;
use crate::device::DeviceKey;
use crate::protocol::errors::{ErrorCode, ProtoError};

type DumpOutcome = Result<Arc<Tree>, ProtoError>;

/// One tree read: its elements and what they cover (`tools::tree`: source, windows, state).
#[derive(Clone, Debug)]
pub struct Tree {
    pub elements: Vec<Element>,
    pub cover: Cover,
}
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

/// [`parse_tree`]'s elements.
pub fn parse_dump(out: &str) -> Result<Vec<Element>, String> {
    parse_tree(out).map(|(els, _)| els)
}

/// Parses every `<node>` of a uiautomator dump, in document order, with an XML parser (values quoted either way,
/// entities and character references, comments are all XML's business, not ours). Bounded: at most
/// [`DUMP_MAX_BYTES`], [`DUMP_MAX_NODES`] nodes nested at most [`DUMP_MAX_DEPTH`] deep; a DTD is refused.
///
/// The phone helper's tree has a `<window>` level above the nodes (device-profile/phone-helper.md §7): its windows
/// are returned too (top first, dialogs named: `tree::name_dialogs`), and each element says which it is in when
/// there are several. A uiautomator dump has none (`None`).
pub fn parse_tree(out: &str) -> Result<(Vec<Element>, Option<Vec<Window>>), String> {
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
    let mut windows: Option<Vec<Window>> = None;
    let mut window_ids: Vec<roxmltree::NodeId> = Vec::new();
    for w in root.children().filter(|n| n.is_element() && n.tag_name().name() == "window") {
        let bounds = w.attribute("bounds").and_then(parse_bounds).unwrap_or([0; 4]);
        windows.get_or_insert_with(Vec::new).push(Window::from_attrs(|k| w.attribute(k).map(str::to_owned), bounds));
        window_ids.push(w.id());
    }
    if let Some(ws) = windows.as_mut() {
        super::tree::name_dialogs(ws);
    }
    let several = window_ids.len() > 1;
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
            href: None,
            window: if several {
                n.ancestors()
                    .find(|a| a.tag_name().name() == "window")
                    .and_then(|a| window_ids.iter().position(|i| *i == a.id()))
            } else {
                None
            },
        });
    }
    Ok((out, windows))
}

/// The phone's current UI elements ([`read`]'s).
pub async fn dump(c: &Ctx, deadline: Duration) -> Result<Vec<Element>, ProtoError> {
    read(c, deadline).await.map(|t| t.elements)
}

/// The phone's current UI tree, with what it covers. Single-flight per device: joins the dump in flight if there is
/// one (see the module docs). `deadline` bounds this caller's wait (and the dump, when this caller starts it). An
/// error carries `details.tree` (`state: unavailable`, the reason), so no caller presents a missing tree as an
/// empty one.
pub async fn read(c: &Ctx, deadline: Duration) -> Result<Tree, ProtoError> {
    read_inner(c, deadline).await.map_err(|e| {
        if e.details.is_some() {
            return e;
        }
        let cover = Cover::unavailable(last_source(&c.device), format!("{}: {}", e.code.as_str(), e.message));
        let details = json!({"tree": cover.to_json()});
        e.with_details(details)
    })
}

async fn read_inner(c: &Ctx, deadline: Duration) -> Result<Tree, ProtoError> {
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
        Ok(r) => r.map(|t| t.as_ref().clone()),
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
pub async fn helper_tree(adb: &AdbBackend, device: &DeviceKey, deadline: Duration) -> Result<Option<Tree>, ProtoError> {
    let Some(payload) = adb.helper(device, false, deadline, "tree", "", Duration::ZERO).await? else {
        return Ok(None);
    };
    let xml = payload.strip_prefix("xml ").and_then(crate::base64::decode).map(String::from_utf8);
    match xml.map(|x| x.map_err(|e| e.to_string()).and_then(|x| parse_tree(&x))) {
        Some(Ok((elements, windows))) => {
            let cover = Cover::of("helper", Windows::All(windows.unwrap_or_default()), &elements);
            Ok(Some(Tree { elements, cover }))
        }
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
    if let Some(tree) = helper_tree(&adb, &device, deadline).await? {
        not_idle().lock().unwrap_or_else(|e| e.into_inner()).remove(&device);
        sources().lock().unwrap_or_else(|e| e.into_inner()).insert(device, "helper");
        return Ok(Arc::new(tree));
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
                Ok(elements) => {
                    not_idle().lock().unwrap_or_else(|e| e.into_inner()).remove(&device);
                    let cover = Cover::of("uiautomator", Windows::Focused, &elements);
                    return Ok(Arc::new(Tree { elements, cover }));
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
