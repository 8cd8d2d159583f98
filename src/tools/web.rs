//! Web content as elements (issue 33 item 3): what a page in Chrome or in a debuggable WebView shows — visible
//! text, links, buttons and inputs — read through the DevTools protocol (`device::devtools`) and placed on the
//! screen, so that `android_observe` lists them (`source: "web"`, marked like the others) and the element tools
//! act on them (the centre of the rectangle; typing taps the input first).
//!
//! Only when the UI tree has a WebView (Chrome's content view reports itself as `android.webkit.WebView` too):
//! native screens pay nothing. Read-only and invisible to the page: `Page.getLayoutMetrics` and
//! `DOMSnapshot.captureSnapshot` (no `Runtime.evaluate`, no script the page could see, no domain enabled).
//!
//! Placement: the snapshot's rectangles are CSS pixels of the document; the visual viewport says which part of the
//! document shows (`pageX`/`pageY`: the scroll offset) and how wide it is in CSS pixels. The WebView node's bounds
//! in the tree say where it shows on screen: one CSS pixel is `view width / viewport width` screen pixels (the
//! device pixel ratio times the pinch zoom). When the view is taller than the viewport, the difference is Chrome's
//! toolbar laid over the view's top (its top controls), so the page starts that much lower. Only rectangles that
//! intersect the viewport on screen are reported, clipped to it, as uiautomator clips its bounds.
//!
//! A page is hostile: every string is cleaned and cut, every number must be finite and in range, indices must
//! point inside their arrays and parents before children (no cycles), and the counts are bounded
//! ([`NODES_MAX`], [`ELEMENTS_MAX`]); the time is bounded by [`READ_DEADLINE`] and a page that cannot be read is
//! reported (`web.state: "failed"` with the reason), never a hang and never a failed observe.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::context::Ctx;
use super::element::Element;
use crate::device::devtools::{self, Target};
use crate::device::text::phone_text;
use crate::protocol::errors::{ErrorCode, ProtoError};

/// The whole web read (socket list, target list, WebSocket, two CDP calls; tens of milliseconds on an idle
/// phone, but the page's renderer may be busy). A page that takes longer is reported as failed; the observation has
/// its picture and native elements anyway.
pub const READ_DEADLINE: Duration = Duration::from_secs(8);
/// Snapshot nodes looked at (a long page has tens of thousands; the ones past this are not read).
pub const NODES_MAX: usize = 50_000;
/// Web elements reported from one page.
pub const ELEMENTS_MAX: usize = 300;
/// Sockets not proven by name whose `/json/version` is asked whether it claims the foreground app (a claim is never
/// believed: it makes the page `unverified`).
const PROBES_MAX: usize = 4;
/// Longest text kept per element, in characters.
const TEXT_MAX: usize = 300;
/// The class of the Android view a page is drawn in (Chrome's content view reports this class too).
pub const WEBVIEW_CLASS: &str = "android.webkit.WebView";

/// What the web read found.
#[derive(Debug)]
pub enum Web {
    /// No WebView on screen: nothing read, nothing reported.
    NotWeb,
    /// The operator's policy turns the web read off (`web_content: false`).
    Off,
    Read(Page),
    /// A WebView without a DevTools socket: its content is one node.
    Opaque(String),
    /// The page could not be read (or placed): why.
    Failed(String),
    /// The screen is off (or the lock screen shows): a browser closes its DevTools socket then, so the page is not
    /// read — not "not debuggable".
    ScreenOff(String),
    /// A DevTools socket claims the app's page but its name does not prove it is the app's (issue 48: any app can
    /// listen on an abstract socket and say any package): never read as the app's.
    Unverified(String),
}

/// A page read and placed.
#[derive(Debug)]
pub struct Page {
    pub url: String,
    pub title: String,
    /// Its elements, screen pixels, document order; `index` is set by the caller.
    pub elements: Vec<Element>,
    /// Elements left out past [`ELEMENTS_MAX`].
    pub truncated: bool,
    /// The dump index of the WebView the page is in.
    pub view: usize,
    pub ms: u64,
}

impl Web {
    /// The result's `web` field; `None` when the screen has no web content.
    pub fn to_json(&self) -> Option<Value> {
        Some(match self {
            Web::NotWeb => return None,
            Web::Off => json!({"state": "off", "reason": "the operator's policy turns the web read off (web_content)"}),
            Web::Read(p) => json!({"state": "ok", "url": p.url, "title": p.title, "count": p.elements.len(),
                                   "truncated": p.truncated, "read_ms": p.ms}),
            Web::Opaque(r) => json!({"state": "opaque", "reason": r}),
            Web::Failed(r) => json!({"state": "failed", "reason": r}),
            Web::ScreenOff(r) => json!({"state": "screen_off", "reason": r}),
            Web::Unverified(r) => json!({"state": "unverified", "reason": r}),
        })
    }

    /// Why there are no web elements (`None`: there are).
    pub fn reason(&self) -> Option<String> {
        match self {
            Web::Read(_) => None,
            Web::NotWeb => Some("no WebView is on screen".into()),
            Web::Off => Some("the operator's policy turns the web read off".into()),
            Web::Opaque(r) | Web::Failed(r) | Web::Unverified(r) | Web::ScreenOff(r) => Some(r.clone()),
        }
    }

    /// The page's elements appended to `dump`, numbered after it.
    pub fn join(&self, dump: &mut Vec<Element>) {
        if let Web::Read(p) = self {
            let base = dump.len();
            dump.extend(p.elements.iter().cloned().enumerate().map(|(i, mut e)| {
                e.index = base + i;
                e
            }));
        }
    }

    /// Dump indices the page's own elements replace: the WebView's accessibility nodes (the elements after it in
    /// document order that lie inside it), so that one link is not listed twice.
    pub fn covered(&self, dump: &[Element]) -> std::ops::Range<usize> {
        let Web::Read(p) = self else { return 0..0 };
        let Some(view) = dump.get(p.view) else { return 0..0 };
        let b = view.bounds;
        let inside =
            |e: &Element| e.bounds[0] >= b[0] && e.bounds[1] >= b[1] && e.bounds[2] <= b[2] && e.bounds[3] <= b[3];
        let n = dump[p.view + 1..].iter().take_while(|e| !e.web && inside(e)).count();
        p.view + 1..p.view + 1 + n
    }
}

/// What page a browser shows, from the tree alone (no DevTools read: an action's effect pays nothing for it):
/// `{url, title}` when a WebView is on screen — the url from the browser's address bar (`…:id/url_bar`), the
/// title from the WebView's node (Chrome names it after the page).
pub fn from_tree(elements: &[Element]) -> Option<Value> {
    let view = elements.iter().find(|e| e.class == WEBVIEW_CLASS && !e.web)?;
    let mut v = json!({});
    if let Some(bar) = elements.iter().find(|e| e.resource_id.ends_with(":id/url_bar") && !e.text.is_empty()) {
        let url = &bar.text;
        let url = if url.contains("://") { url.clone() } else { format!("https://{url}") };
        v["url"] = json!(url);
    }
    let title = if view.text.is_empty() { &view.content_desc } else { &view.text };
    if !title.is_empty() {
        v["title"] = json!(title);
    }
    Some(v)
}

/// What page shows after `android_open_url` (issue 49 item 7): the tree is read until a WebView is on screen
/// (within `within`), then its page — its DevTools target when the policy allows (`{url, title}` of the page that
/// showed; no CDP call), else from the tree ([`from_tree`]). `Err`: why no page showed (the screen off, another app in front).
pub async fn loaded(c: &Ctx, enabled: bool, within: Duration) -> Result<Value, String> {
    let began = Instant::now();
    let mut last: String;
    loop {
        let left = within.saturating_sub(began.elapsed());
        match super::dump::read(c, left.max(Duration::from_secs(2))).await {
            Ok(t) if webview(&t.elements).is_some() => {
                let page = read_page(c, &t.elements, enabled, left.max(Duration::from_secs(2)), false).await;
                let mut v = from_tree(&t.elements).unwrap_or_else(|| json!({}));
                match &page {
                    Web::Read(p) => {
                        v["url"] = json!(p.url);
                        v["title"] = json!(p.title);
                    }
                    Web::ScreenOff(r) => return Err(r.clone()),
                    other => {
                        if let Some(r) = other.reason() {
                            v["read"] = json!(r);
                        }
                    }
                }
                return Ok(v);
            }
            Ok(t) => {
                // The focused window's app where the helper names windows (the first node may be the status bar's).
                let focused = match &t.cover.windows {
                    super::tree::Windows::All(ws) => ws.iter().find(|w| w.focused).map(|w| w.package.clone()),
                    super::tree::Windows::Focused => None,
                };
                let front =
                    focused.or_else(|| t.elements.iter().find(|e| e.is_interesting()).map(|e| e.package.clone()));
                last = format!("{} is in front, no web page", front.as_deref().unwrap_or("nothing"));
            }
            Err(e) => last = e.message,
        }
        if began.elapsed() >= within {
            let screen = c.adb.screen_state(&c.device).await.unwrap_or_default();
            if screen.screen_on == Some(false) {
                return Err("the screen is off: the page cannot show (android_wake, then open it again)".into());
            }
            if screen.locked == Some(true) {
                return Err("the lock screen shows: the page cannot show (android_unlock, then open it again)".into());
            }
            return Err(format!("no page showed within {} s: {last}", within.as_secs()));
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

/// The WebView a page would be in: the largest one on screen.
fn webview(dump: &[Element]) -> Option<&Element> {
    let area = |e: &&Element| i64::from(e.bounds[2] - e.bounds[0]) * i64::from(e.bounds[3] - e.bounds[1]);
    dump.iter().filter(|e| e.class == WEBVIEW_CLASS && !e.web).filter(|e| area(e) > 0).max_by_key(area)
}

/// Reads the page of the WebView in `dump` (see the module docs) within `budget` (at most [`READ_DEADLINE`]);
/// `enabled`: the operator's policy.
pub async fn read(c: &Ctx, dump: &[Element], enabled: bool, budget: Duration) -> Web {
    read_page(c, dump, enabled, budget, true).await
}

/// [`read`]; `full: false` asks only the page's address and title (the target list: no CDP call, no snapshot),
/// giving a page without elements.
async fn read_page(c: &Ctx, dump: &[Element], enabled: bool, budget: Duration, full: bool) -> Web {
    let Some(view) = webview(dump) else { return Web::NotWeb };
    if !enabled {
        return Web::Off;
    }
    let (package, bounds, index) = (view.package.clone(), view.bounds, view.index);
    let pkg = package.clone();
    let began = Instant::now();
    let budget = budget.min(READ_DEADLINE);
    // The page's silence is not the phone's: the read ends on its own deadline inside the operation, so a stalled
    // page never counts as a phone timeout (device::health) — the operation's own deadline is only a backstop.
    let got = c
        .adb
        .op(&c.device, false, budget + Duration::from_secs(2), |d| async move {
            let (server, serial) = d.path();
            let serial = serial.to_owned();
            let read = async {
                let unix = d.shell_capped("cat /proc/net/unix", 4 << 20).await?;
                // A WebView's socket is the app's only when its pid is one of the app's processes.
                let pids = if unix.stdout.contains("@webview_devtools_remote_") {
                    let cmd = format!("pidof {}", crate::device::shell::quote(&pkg));
                    d.shell_capped(&cmd, 4096).await.map(|o| devtools::pids(&o.stdout)).unwrap_or_default()
                } else {
                    Vec::new()
                };
                // The app's name-proven sockets first: squatters listed before them never fill the budget.
                let sockets = devtools::sockets(&proven_first(&unix.stdout, &pkg, &pids));
                fetch(server, &serial, &sockets, &pkg, &pids, full).await
            };
            Ok(tokio::time::timeout(budget, read).await)
        })
        .await;
    let fetched = match got {
        Ok(Ok(Ok(f))) => f,
        Ok(Ok(Err(e))) => return Web::Failed(e.message),
        Ok(Err(_)) => {
            return Web::Failed(format!("the page's DevTools did not answer within {} ms", budget.as_millis()))
        }
        Err(e) => return Web::Failed(e.message),
    };
    if let Fetched::Unverified(socket) = &fetched {
        return Web::Unverified(format!(
            "@{socket} says it serves {package}'s page, but its name does not prove it is {package}'s (not \
             {package}'s own socket, nor a WebView socket of one of its processes): its content is not read; act by \
             coordinates on the picture and the tree's nodes"
        ));
    }
    let Fetched::Page(page) = fetched else {
        // No socket while the screen is off or locked is what a sleeping phone shows, not an opaque page.
        let screen = c.adb.screen_state(&c.device).await.unwrap_or_default();
        if screen.screen_on == Some(false) || screen.locked == Some(true) {
            let why = if screen.screen_on == Some(false) { "the screen is off" } else { "the lock screen shows" };
            return Web::ScreenOff(format!(
                "{why}: {package}'s page is not read while it cannot show (android_wake / android_unlock, then \
                 observe again)"
            ));
        }
        return Web::Opaque(format!(
            "{package} shows a WebView with no DevTools socket: its content is not debuggable (the app does not \
             call WebView.setWebContentsDebuggingEnabled), so only the tree's nodes are known; act by coordinates \
             on the picture"
        ));
    };
    let (target, metrics, snapshot) = *page;
    if !full {
        let ms = began.elapsed().as_millis() as u64;
        let (url, title) = (target.url, target.title);
        return Web::Read(Page { url, title, elements: Vec::new(), truncated: false, view: index, ms });
    }
    match place(&metrics, bounds).and_then(|p| elements(&snapshot, &p, &package)) {
        Ok((mut elements, truncated)) => Web::Read(Page {
            elements: {
                for e in &mut elements {
                    if let Some(h) = e.href.take() {
                        e.href = Some(absolute(&target.url, &h));
                    }
                }
                elements
            },
            url: target.url,
            title: target.title,
            truncated,
            view: index,
            ms: began.elapsed().as_millis() as u64,
        }),
        Err(why) => Web::Failed(why),
    }
}

/// `href` as an agent can open it: kept when it has a scheme (or is a fragment or empty), else joined to the
/// page's origin (`/path`, `//host/path`) or to its directory (`path`).
pub fn absolute(page: &str, href: &str) -> String {
    let has_scheme = href
        .split_once(':')
        .is_some_and(|(s, _)| !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c)));
    let Some((scheme, rest)) = page.split_once("://") else { return href.to_owned() };
    if has_scheme || href.is_empty() || href.starts_with('#') {
        return href.to_owned();
    }
    if let Some(h) = href.strip_prefix("//") {
        return format!("{scheme}://{h}");
    }
    let host = rest.split(['/', '?', '#']).next().unwrap_or("");
    if href.starts_with('/') {
        return format!("{scheme}://{host}{href}");
    }
    let path = rest[host.len()..].split(['?', '#']).next().unwrap_or("");
    let dir = path.rfind('/').map_or("/", |i| &path[..=i]);
    format!("{scheme}://{host}{dir}{href}")
}

enum Fetched {
    NoSocket,
    /// Only a socket whose name does not prove it claims the app's page.
    Unverified(String),
    Page(Box<(Target, Value, Value)>),
}

/// A `/proc/net/unix` listing with the lines of `package`'s name-proven DevTools sockets (`devtools::proven`) moved
/// first (issue 48): any app can list sockets before them, and the listing is read only up to a budget.
fn proven_first(listing: &str, package: &str, pids: &[u32]) -> String {
    let proven = |l: &&str| {
        l.split_whitespace()
            .nth(7)
            .and_then(|p| p.strip_prefix('@'))
            .is_some_and(|n| devtools::proven(n, package, pids))
    };
    let (mut first, rest): (Vec<&str>, Vec<&str>) = listing.lines().partition(proven);
    first.extend(rest);
    first.join("\n")
}

/// The socket to read for `package` (`pids`: its processes), proven by its name alone
/// (`devtools::proven`): Chrome's own, `<package>_devtools_remote`, then a WebView socket of one of its processes.
fn proven_socket<'a>(sockets: &'a [String], package: &str, pids: &[u32]) -> Option<&'a String> {
    let by_name = sockets.iter().find(|s| devtools::socket_pid(s).is_none() && devtools::proven(s, package, pids));
    by_name.or_else(|| sockets.iter().find(|s| devtools::proven(s, package, pids)))
}

/// The DevTools socket of `package` among `sockets`, its front page, and the two reads of it.
async fn fetch(
    server: std::net::SocketAddr,
    serial: &str,
    sockets: &[String],
    package: &str,
    pids: &[u32],
    full: bool,
) -> Result<Fetched, ProtoError> {
    let Some(socket) = proven_socket(sockets, package, pids).cloned() else {
        // Unproven sockets are never read as the app's: at most a few are asked whether they claim it, to say
        // `unverified` rather than that the page has no DevTools socket.
        for s in sockets.iter().take(PROBES_MAX) {
            let Ok(body) = devtools::http_get(server, serial, s, "/json/version").await else { continue };
            if devtools::android_package(&body).as_deref() == Some(package) {
                return Ok(Fetched::Unverified(s.clone()));
            }
        }
        return Ok(Fetched::NoSocket);
    };
    let list = devtools::http_get(server, serial, &socket, "/json/list").await?;
    let targets = devtools::parse_targets(&list)?;
    let Some(target) = devtools::front_page(&targets).cloned() else {
        return Err(ProtoError::new(ErrorCode::ToolInvokeFailed, format!("@{socket} lists no visible page")));
    };
    if !full {
        return Ok(Fetched::Page(Box::new((target, Value::Null, Value::Null))));
    }
    let mut s = devtools::connect(server, serial, &socket, &target.ws_path).await?;
    let metrics = s.call("Page.getLayoutMetrics", json!({})).await?;
    let snapshot =
        s.call("DOMSnapshot.captureSnapshot", json!({"computedStyles": [], "includeDOMRects": true})).await?;
    Ok(Fetched::Page(Box::new((target, metrics, snapshot))))
}

/// Where the page's viewport is on screen and how large a CSS pixel is there.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Placement {
    /// Screen pixels of the viewport's top-left corner.
    pub left: f64,
    pub top: f64,
    /// Screen pixels per CSS pixel.
    pub scale: f64,
    /// The document's scroll offset (CSS px of the viewport's top-left corner).
    pub page_x: f64,
    pub page_y: f64,
    /// The viewport on screen, pixels: rectangles are clipped to it.
    pub clip: [i32; 4],
}

/// The placement from `Page.getLayoutMetrics` and the WebView's `bounds` on screen.
pub fn place(metrics: &Value, bounds: [i32; 4]) -> Result<Placement, String> {
    // Chrome 91+ reports CSS pixels in cssVisualViewport (visualViewport since became device pixels on some builds).
    let vv = metrics.get("cssVisualViewport").or_else(|| metrics.get("visualViewport"));
    let num = |k: &str| vv.and_then(|v| v.get(k)).and_then(Value::as_f64).filter(|v| v.is_finite() && v.abs() < 1e7);
    let (Some(page_x), Some(page_y), Some(w), Some(h)) =
        (num("pageX"), num("pageY"), num("clientWidth"), num("clientHeight"))
    else {
        return Err("the page's layout metrics have no usable visual viewport".into());
    };
    let (vw, vh) = (f64::from(bounds[2] - bounds[0]), f64::from(bounds[3] - bounds[1]));
    if w < 1.0 || h < 1.0 || vw < 1.0 || vh < 1.0 {
        return Err("the page or its view has no size".into());
    }
    let scale = vw / w;
    if !(0.05..=40.0).contains(&scale) {
        return Err(format!("the page's viewport ({w}×{h} CSS px) does not fit its view ({vw}×{vh} px)"));
    }
    // A view taller than the viewport: Chrome's toolbar covers the view's top by the difference.
    let toolbar = (vh - h * scale).max(0.0);
    let toolbar = if toolbar > 2.0 { toolbar } else { 0.0 };
    let top = f64::from(bounds[1]) + toolbar;
    Ok(Placement {
        left: f64::from(bounds[0]),
        top,
        scale,
        page_x,
        page_y,
        clip: [bounds[0], top.round() as i32, bounds[2], bounds[3]],
    })
}

impl Placement {
    /// A document rectangle (CSS px: x, y, width, height) on screen, clipped to the viewport; `None` when it does
    /// not show (outside, empty, or not a finite number).
    pub fn on_screen(&self, r: [f64; 4]) -> Option<[i32; 4]> {
        if r.iter().any(|v| !v.is_finite() || v.abs() > 1e7) || r[2] <= 0.0 || r[3] <= 0.0 {
            return None;
        }
        let x = |v: f64| (self.left + (v - self.page_x) * self.scale).round();
        let y = |v: f64| (self.top + (v - self.page_y) * self.scale).round();
        let c = self.clip.map(f64::from);
        let b = [x(r[0]).max(c[0]), y(r[1]).max(c[1]), x(r[0] + r[2]).min(c[2]), y(r[1] + r[3]).min(c[3])];
        (b[2] > b[0] && b[3] > b[1]).then(|| b.map(|v| v as i32))
    }
}

/// The array `v[k]`, or none.
fn arr<'a>(v: &'a Value, k: &str) -> &'a [Value] {
    v.get(k).and_then(Value::as_array).map(Vec::as_slice).unwrap_or(&[])
}

/// What an element node of the page is to an agent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Link,
    Button,
    Input,
}

/// The page's visible text blocks, links, buttons and inputs on screen (document order, at most
/// [`ELEMENTS_MAX`]; the flag: some were left out), from a `DOMSnapshot.captureSnapshot` result.
pub fn elements(snap: &Value, at: &Placement, package: &str) -> Result<(Vec<Element>, bool), String> {
    let bad = |what: &str| format!("the page's snapshot is malformed ({what})");
    let strings: Vec<&str> = snap
        .get("strings")
        .and_then(Value::as_array)
        .ok_or_else(|| bad("no strings"))?
        .iter()
        .map(|s| s.as_str().unwrap_or(""))
        .collect();
    let str_at = |v: Option<&Value>| -> &str {
        v.and_then(Value::as_i64)
            .and_then(|i| usize::try_from(i).ok())
            .and_then(|i| strings.get(i))
            .copied()
            .unwrap_or("")
    };
    // The main frame's document (iframes are further documents: not read).
    let doc = snap.get("documents").and_then(|d| d.get(0)).ok_or_else(|| bad("no document"))?;
    let nodes = doc.get("nodes").ok_or_else(|| bad("no nodes"))?;
    let parents = arr(nodes, "parentIndex");
    let n = parents.len().min(NODES_MAX);
    let (types, names, attrs) = (arr(nodes, "nodeType"), arr(nodes, "nodeName"), arr(nodes, "attributes"));
    let values = arr(nodes, "nodeValue");
    // Rare data: node index → string (inputValue), index lists.
    let rare = |k: &str| -> Vec<(usize, &str)> {
        let Some(r) = nodes.get(k) else { return Vec::new() };
        let (idx, val) = (arr(r, "index"), arr(r, "value"));
        idx.iter().zip(val).filter_map(|(i, v)| Some((usize::try_from(i.as_i64()?).ok()?, str_at(Some(v))))).collect()
    };
    let input_values = rare("inputValue");
    let text_values = rare("textValue");

    // Parents come before their children in the snapshot; anything else (a cycle, an index past the end) is a lie.
    let mut parent: Vec<Option<usize>> = Vec::with_capacity(n);
    for (i, p) in parents.iter().take(n).enumerate() {
        match p.as_i64() {
            Some(-1) | None => parent.push(None),
            Some(p) if (0..i as i64).contains(&p) => parent.push(Some(p as usize)),
            Some(_) => return Err(bad("a parent index that does not precede its node")),
        }
    }
    let attr_of = |i: usize| -> Vec<(String, &str)> {
        let a = attrs.get(i).and_then(Value::as_array).map(Vec::as_slice).unwrap_or(&[]);
        a.chunks_exact(2).take(64).map(|kv| (str_at(kv.first()).to_ascii_lowercase(), str_at(kv.get(1)))).collect()
    };
    let kind_of = |i: usize| -> Option<Kind> {
        if types.get(i).and_then(Value::as_i64) != Some(1) {
            return None;
        }
        let name = str_at(names.get(i)).to_ascii_uppercase();
        let a = attr_of(i);
        let get = |k: &str| a.iter().find(|(n, _)| n == k).map(|(_, v)| *v);
        let role = get("role").unwrap_or("");
        let input_type = get("type").unwrap_or("text").to_ascii_lowercase();
        match name.as_str() {
            "A" if get("href").is_some() => Some(Kind::Link),
            "BUTTON" => Some(Kind::Button),
            "INPUT" if ["button", "submit", "reset", "image"].contains(&input_type.as_str()) => Some(Kind::Button),
            "INPUT" if ["hidden", "checkbox", "radio", "file", "range", "color"].contains(&input_type.as_str()) => None,
            "INPUT" | "TEXTAREA" | "SELECT" => Some(Kind::Input),
            _ if role == "button" => Some(Kind::Button),
            _ if role == "link" => Some(Kind::Link),
            _ => None,
        }
    };
    let kinds: Vec<Option<Kind>> = (0..n).map(kind_of).collect();
    // The nearest link/button/input at or above each node (its text is that element's label).
    let mut owner: Vec<Option<usize>> = Vec::with_capacity(n);
    for i in 0..n {
        let o = if kinds[i].is_some() { Some(i) } else { parent[i].and_then(|p| owner[p]) };
        owner.push(o);
    }

    // Layout: each node's first box (CSS px of the document), and the text of text nodes.
    let layout = doc.get("layout").ok_or_else(|| bad("no layout"))?;
    let (lnodes, lbounds, ltext) = (arr(layout, "nodeIndex"), arr(layout, "bounds"), arr(layout, "text"));
    let mut rect: Vec<Option<[f64; 4]>> = vec![None; n];
    let mut texts: Vec<(usize, String)> = Vec::new();
    for (k, ni) in lnodes.iter().enumerate() {
        let Some(i) = ni.as_i64().and_then(|i| usize::try_from(i).ok()).filter(|i| *i < n) else { continue };
        let b = lbounds.get(k).and_then(Value::as_array).map(Vec::as_slice).unwrap_or(&[]);
        let r: Vec<f64> = b.iter().take(4).map(|v| v.as_f64().unwrap_or(f64::NAN)).collect();
        if rect[i].is_none() && r.len() == 4 {
            rect[i] = Some([r[0], r[1], r[2], r[3]]);
        }
        if types.get(i).and_then(Value::as_i64) == Some(3) {
            let t = match str_at(ltext.get(k)) {
                "" => str_at(values.get(i)),
                t => t,
            };
            let t = phone_text(t, TEXT_MAX);
            if !t.is_empty() {
                texts.push((i, t));
            }
        }
    }
    // Labels of links and buttons: their text nodes' text, in order.
    let mut label: Vec<String> = vec![String::new(); n];
    let mut blocks: Vec<(usize, String)> = Vec::new();
    for (i, t) in texts {
        match owner[i] {
            Some(o) if label[o].chars().count() < TEXT_MAX => {
                if !label[o].is_empty() {
                    label[o].push(' ');
                }
                label[o].push_str(&t);
            }
            Some(_) => {}
            None => blocks.push((i, t)),
        }
    }

    let mut out: Vec<(usize, Element)> = Vec::new();
    let mut truncated = false;
    let mut push = |i: usize, e: Element, out: &mut Vec<(usize, Element)>| {
        if out.len() < ELEMENTS_MAX {
            out.push((i, e));
        } else {
            truncated = true;
        }
    };
    let base =
        |class: &str, bounds: [i32; 4]| Element { web: true, ..Element::new(format!("web.{class}"), package, bounds) };
    for i in 0..n {
        let Some(kind) = kinds[i] else { continue };
        let Some(bounds) = rect[i].and_then(|r| at.on_screen(r)) else { continue };
        let a = attr_of(i);
        let get = |k: &str| a.iter().find(|(n, _)| n == k).map(|(_, v)| phone_text(v, TEXT_MAX)).unwrap_or_default();
        let tag = str_at(names.get(i)).to_ascii_lowercase();
        let class = match kind {
            Kind::Link => "a",
            Kind::Button => "button",
            Kind::Input if tag == "textarea" || tag == "select" => tag.as_str(),
            Kind::Input => "input",
        };
        let mut e = base(class, bounds);
        e.resource_id = phone_text(&get("id"), 100);
        e.clickable = true;
        e.focusable = true;
        e.enabled = a.iter().all(|(n, _)| n != "disabled");
        e.content_desc = get("aria-label");
        if kind == Kind::Link {
            e.href = Some(get("href")).filter(|h| !h.is_empty());
        }
        match kind {
            Kind::Link | Kind::Button => {
                e.text = if label[i].is_empty() { get("value") } else { label[i].clone() };
                if e.text.is_empty() && e.content_desc.is_empty() {
                    e.content_desc = get("title");
                }
            }
            Kind::Input => {
                e.password = get("type").eq_ignore_ascii_case("password");
                let value = input_values.iter().chain(&text_values).find(|(k, _)| *k == i).map(|(_, v)| *v);
                if !e.password {
                    e.text = phone_text(value.unwrap_or(""), TEXT_MAX);
                }
                if e.content_desc.is_empty() {
                    e.content_desc = get("placeholder");
                }
            }
        }
        push(i, e, &mut out);
    }
    for (i, t) in blocks {
        let Some(bounds) = rect[i].and_then(|r| at.on_screen(r)) else { continue };
        let mut e = base("text", bounds);
        e.text = t;
        push(i, e, &mut out);
    }
    out.sort_by_key(|(i, _)| *i);
    Ok((out.into_iter().map(|(_, e)| e).collect(), truncated))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 48 item 4: squatting sockets (any app can listen on an abstract socket and claim any package) are
    /// never chosen, however many are listed first; a WebView socket is the app's only by one of its pids.
    #[test]
    fn only_a_socket_proven_by_its_name_is_read() {
        let mut sockets: Vec<String> = (0..16).map(|i| format!("webview_devtools_remote_{}", 5000 + i)).collect();
        sockets.push("com.evil_devtools_remote".into());
        sockets.push("chrome_devtools_remote".into());
        let s = |v: Option<&String>| v.cloned();
        assert_eq!(s(proven_socket(&sockets, "com.android.chrome", &[])).as_deref(), Some("chrome_devtools_remote"));
        assert_eq!(s(proven_socket(&sockets, "com.example.app", &[4242])), None, "squatters' pids are not the app's");
        sockets.push("webview_devtools_remote_4242".into());
        assert_eq!(
            s(proven_socket(&sockets, "com.example.app", &[4242])).as_deref(),
            Some("webview_devtools_remote_4242")
        );
        assert_eq!(s(proven_socket(&sockets, "com.evil", &[])).as_deref(), Some("com.evil_devtools_remote"));
        let u = Web::Unverified("why".into()).to_json().unwrap();
        assert_eq!(u["state"], "unverified");
    }

    #[test]
    fn hrefs_are_made_absolute_against_the_page() {
        let page = "https://sim.example/news/today?x=1";
        assert_eq!(absolute(page, "/n"), "https://sim.example/n");
        assert_eq!(absolute(page, "w"), "https://sim.example/news/w");
        assert_eq!(absolute(page, "//cdn.example/a"), "https://cdn.example/a");
        assert_eq!(absolute(page, "mailto:a@b"), "mailto:a@b");
        assert_eq!(absolute(page, "#top"), "#top");
        assert_eq!(absolute("about:blank", "/n"), "/n");
    }

    fn placement() -> Placement {
        // A 1080-px-wide view from y=264 showing a 411.43-CSS-px viewport scrolled by 100 CSS px.
        let m = json!({"cssVisualViewport": {"offsetX": 0, "offsetY": 0, "pageX": 0, "pageY": 100,
                       "clientWidth": 1080.0 / 2.625, "clientHeight": 2136.0 / 2.625, "scale": 1, "zoom": 1}});
        place(&m, [0, 264, 1080, 2400]).unwrap()
    }

    #[test]
    fn page_pixels_map_to_the_screen_with_scroll_zoom_and_toolbar() {
        let p = placement();
        assert!((p.scale - 2.625).abs() < 1e-9);
        // The document's (40, 120) is 20 CSS px below the viewport's top.
        assert_eq!(p.on_screen([40.0, 120.0, 100.0, 20.0]), Some([105, 317, 368, 369]));
        // Scrolled out above, and below the view: not shown; half in: clipped.
        assert_eq!(p.on_screen([0.0, 0.0, 100.0, 50.0]), None);
        assert_eq!(p.on_screen([0.0, 2000.0, 100.0, 50.0]), None);
        assert_eq!(p.on_screen([0.0, 90.0, 100.0, 20.0]), Some([0, 264, 263, 290]));
        // Hostile numbers.
        for r in [
            [f64::NAN, 0.0, 1.0, 1.0],
            [0.0, f64::INFINITY, 1.0, 1.0],
            [0.0, 120.0, -5.0, 10.0],
            [1e300, 120.0, 1.0, 1.0],
        ] {
            assert_eq!(p.on_screen(r), None, "{r:?}");
        }
        // A toolbar over the view's top: the page starts below it (view 2400-264 px tall, viewport 1900 px).
        let m = json!({"cssVisualViewport": {"pageX": 0, "pageY": 0, "clientWidth": 540, "clientHeight": 950}});
        let t = place(&m, [0, 264, 1080, 2400]).unwrap();
        assert_eq!((t.scale, t.top, t.clip[1]), (2.0, 500.0, 500));
        // Pinch zoom: a narrower visual viewport is a larger CSS pixel.
        let m = json!({"cssVisualViewport": {"pageX": 100, "pageY": 0, "clientWidth": 205.7, "clientHeight": 407}});
        assert!(place(&m, [0, 264, 1080, 2400]).unwrap().scale > 5.0);
        for m in [
            json!({}),
            json!({"cssVisualViewport": {"pageX": 0, "pageY": 0, "clientWidth": 0, "clientHeight": 1}}),
            json!({"cssVisualViewport": {"pageX": "x", "pageY": 0, "clientWidth": 1, "clientHeight": 1}}),
            json!({"cssVisualViewport": {"pageX": 0, "pageY": 0, "clientWidth": 1e-9, "clientHeight": 1}}),
        ] {
            assert!(place(&m, [0, 264, 1080, 2400]).is_err(), "{m}");
        }
    }

    /// A snapshot in captureSnapshot's shape: html > body > (h1 > text, a > text, input, p > text, a (below)).
    fn snapshot() -> Value {
        json!({"strings": ["#document", "HTML", "BODY", "H1", "#text", "Hello\u{1b}[2J page", "A", "href", "/n",
                           "News", "INPUT", "id", "q", "placeholder", "Search", "typed", "P", "Body text", "type",
                           "password", "Far away"],
               "documents": [{"documentURL": 0, "title": 0,
                 "nodes": {"parentIndex": [-1, 0, 1, 2, 3, 2, 5, 2, 2, 8, 2, 2, 11],
                           "nodeType": [9, 1, 1, 1, 3, 1, 3, 1, 1, 3, 1, 1, 3],
                           "nodeName": [0, 1, 2, 3, 4, 6, 4, 10, 16, 4, 10, 6, 4],
                           "nodeValue": [-1, -1, -1, -1, 5, -1, 9, -1, -1, 17, -1, -1, 20],
                           "attributes": [[], [], [], [], [], [7, 8], [], [11, 12, 13, 14], [], [], [18, 19], [7, 8], []],
                           "inputValue": {"index": [7, 10], "value": [15, 15]}},
                 "layout": {"nodeIndex": [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12],
                            "bounds": [[0, 0, 411, 2000], [0, 0, 411, 2000], [8, 110, 395, 40], [8, 110, 200, 40],
                                       [8, 160, 60, 20], [8, 160, 60, 20], [8, 190, 300, 30], [8, 230, 395, 20],
                                       [8, 230, 100, 20], [8, 260, 300, 30], [8, 1500, 60, 20], [8, 1500, 60, 20]],
                            "text": [-1, -1, -1, 5, -1, 9, -1, -1, 17, -1, -1, 20]}}]})
    }

    #[test]
    fn links_inputs_and_text_of_a_snapshot_on_screen() {
        let (els, truncated) = elements(&snapshot(), &placement(), "com.android.chrome").unwrap();
        assert!(!truncated);
        let shown: Vec<(&str, &str, &str)> =
            els.iter().map(|e| (e.class.as_str(), e.text.as_str(), e.content_desc.as_str())).collect();
        assert_eq!(
            shown,
            [
                ("web.text", "Hello[2J page", ""),
                ("web.a", "News", ""),
                ("web.input", "typed", "Search"),
                ("web.text", "Body text", ""),
                ("web.input", "", ""),
            ],
            "the link below the viewport is not listed; control characters are gone"
        );
        let link = &els[1];
        assert!(link.web && link.clickable && link.resource_id.is_empty());
        assert_eq!(link.bounds, at_screen([8.0, 160.0, 60.0, 20.0]));
        assert_eq!(els[2].resource_id, "q");
        assert!(els[4].password && els[4].text.is_empty(), "a password input's value is never kept");
        assert_eq!(els[0].to_json()["source"], "web");
        assert_eq!(els[0].to_json()["class"], "text");
    }

    fn at_screen(r: [f64; 4]) -> [i32; 4] {
        placement().on_screen(r).unwrap()
    }

    #[test]
    fn a_hostile_snapshot_is_refused_or_bounded() {
        let p = placement();
        // A cycle through parent indices, and one past the end.
        for parents in [json!([-1, 2, 1]), json!([-1, 5])] {
            let mut s = snapshot();
            s["documents"][0]["nodes"]["parentIndex"] = parents;
            assert!(elements(&s, &p, "x").unwrap_err().contains("parent index"));
        }
        for s in [json!({}), json!({"strings": []}), json!({"strings": [], "documents": [{}]})] {
            assert!(elements(&s, &p, "x").is_err(), "{s}");
        }
        // String indices past the table, NaN-like and huge bounds: nothing panics, nothing shows.
        let mut s = snapshot();
        s["documents"][0]["nodes"]["nodeName"][5] = json!(10_000);
        s["documents"][0]["layout"]["bounds"][4] = json!(["NaN", 1e308, null, 3]);
        let (els, _) = elements(&s, &p, "x").unwrap();
        assert!(els.iter().all(|e| e.class != "web.a"), "{els:?}");
        // Many links: at most ELEMENTS_MAX, said so.
        let k = ELEMENTS_MAX + 50;
        let strings = vec![json!("A"), json!("href"), json!("/"), json!("#text"), json!("x")];
        let parents: Vec<i64> = std::iter::once(-1).chain((0..k).map(|_| 0)).collect();
        let types: Vec<i64> = std::iter::once(9).chain((0..k).map(|_| 1)).collect();
        let names: Vec<i64> = std::iter::once(3).chain((0..k).map(|_| 0)).collect();
        let attrs: Vec<Value> = std::iter::once(json!([])).chain((0..k).map(|_| json!([1, 2]))).collect();
        let lnodes: Vec<usize> = (1..=k).collect();
        let bounds: Vec<Value> = (0..k).map(|i| json!([0, 100 + i % 50, 10, 1])).collect();
        let many = json!({"strings": strings, "documents": [{"nodes": {"parentIndex": parents, "nodeType": types,
            "nodeName": names, "attributes": attrs}, "layout": {"nodeIndex": lnodes, "bounds": bounds, "text": []}}]});
        let (els, truncated) = elements(&many, &p, "x").unwrap();
        assert_eq!((els.len(), truncated), (ELEMENTS_MAX, true));
    }
}
