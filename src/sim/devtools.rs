//! The browser stand-in's DevTools socket: what Chrome on Android serves on `@chrome_devtools_remote` while it is
//! in front, reached as the adb service `localabstract:chrome_devtools_remote` — HTTP `/json/version`,
//! `/json/list` (`/json`), and the page's WebSocket speaking CDP (`Page.getLayoutMetrics`,
//! `DOMSnapshot.captureSnapshot`; any other method answers Chrome's "wasn't found" error). The answers have the
//! shape real ones have (tests/fixtures/real/devtools-*: a real listing, target list and version), and the page
//! model is the browser screen of [`super::ui`]: the page of `ui/site.rs` shown now — its heading, text, links,
//! inputs and buttons — in CSS pixels of the document (screen pixels ÷ the device pixel ratio, density ÷ 160),
//! scrolled as the screen is.
//!
//! `/proc/net/unix` lists the socket while the browser is in front; the WebView app ([`WEBVIEW_APP_PACKAGE`])
//! has none (its WebView is not debuggable). Every method called is recorded as a command (`devtools:METHOD`), so
//! tests can see that nothing but reads was sent. [`Lie`] makes the socket hostile.

use std::sync::Arc;

use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
use tokio_tungstenite::tungstenite::protocol::Role;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::WebSocketStream;

use super::device::Device;
use super::shared::Shared;
use super::stream::{StreamIn, StreamOut};
use super::ui::site::Block;
#[cfg(doc)]
use super::ui::WEBVIEW_APP_PACKAGE;
use super::ui::{Rect, BROWSER_PACKAGE};

/// How the socket lies (defined with the phone's other injected misbehaviour, `state.rs`).
pub use super::state::DevtoolsLie as Lie;

/// Chrome's socket name.
pub const CHROME_SOCKET: &str = "chrome_devtools_remote";
/// The page a squatting socket serves (`SimPhone::squat_devtools`): never the app's.
pub const FORGED_URL: &str = "https://evil.example/forged";
const FORGED_TITLE: &str = "Forged Page";
/// The page's target id (Chrome's are 32 hex digits).
pub const PAGE_ID: &str = "9A3C0E5B7D1F4A2C8E6B0D4F2A1C3E5B";
const CHROME_VERSION: &str = "Chrome/120.0.6099.230";
const WEBKIT_REV: &str = "537.36 (@a58f8e9d1e7c0d6a2a1c8d1b4b2e5f7c9a0b3d6e)";

/// The sockets `/proc/net/unix` lists: a few of the system's, and Chrome's while the browser is in front.
pub fn proc_net_unix(dev: &Device) -> String {
    let mut out = String::from("Num       RefCount Protocol Flags    Type St Inode Path\n");
    let mut line = |flags: &str, st: &str, inode: u32, path: &str| {
        out.push_str(&format!("0000000000000000: 00000002 00000000 {flags} 0001 {st} {inode:>5} {path}\n"));
    };
    line("00010000", "01", 9711, "/dev/socket/adbd");
    line("00010000", "01", 9712, "@jdwp-control");
    line("00000000", "03", 31077, "");
    for (i, (name, _)) in dev.devtools_squatters.iter().enumerate() {
        line("00010000", "01", 40000 + i as u32, &format!("@{name}"));
    }
    if listening(dev).iter().any(|s| s == CHROME_SOCKET) {
        line("00010000", "01", 30273865, &format!("@{CHROME_SOCKET}"));
    }
    out
}

/// The DevTools sockets listening now.
fn listening(dev: &Device) -> Vec<String> {
    let ui = &dev.ui;
    let mut names: Vec<String> = dev.devtools_squatters.iter().map(|(n, _)| n.clone()).collect();
    if ui.screen_on && !ui.keyguard_showing && ui.foreground.package == BROWSER_PACKAGE {
        names.push(CHROME_SOCKET.to_owned());
    }
    names
}

/// `localabstract:NAME`: the page's side of the stream, or a closed stream when nothing listens there (adbd's
/// connect fails and it closes the stream).
pub(crate) async fn serve(shared: Arc<Shared>, name: String, mut input: StreamIn, mut out: StreamOut) {
    let (open, squatter) = {
        let dev = shared.device.lock().unwrap_or_else(|e| e.into_inner());
        let squatter = dev.devtools_squatters.iter().find(|(n, _)| n == &name).map(|(_, claims)| claims.clone());
        (listening(&dev).contains(&name), squatter)
    };
    if !open {
        return;
    }
    // The page speaks over an in-memory pipe; the stream's payloads are pumped both ways.
    let (ours, theirs) = tokio::io::duplex(1 << 16);
    let (mut from_page, mut to_page) = tokio::io::split(theirs);
    tokio::spawn(chrome(shared, ours, squatter));
    let inbound = async {
        while let Some(b) = input.recv().await {
            if to_page.write_all(&b).await.is_err() {
                break;
            }
        }
    };
    let outbound = async {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            match from_page.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if out.write(&buf[..n]).await.is_err() {
                        break;
                    }
                }
            }
        }
    };
    tokio::select! {
        _ = inbound => {}
        _ = outbound => {}
    }
}

/// Chrome's DevTools HTTP server on one connection: one request, or the WebSocket upgrade. `squatter`: the package a
/// squatting socket claims; it serves the forged page.
async fn chrome(shared: Arc<Shared>, mut s: tokio::io::DuplexStream, squatter: Option<String>) {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if head.len() > 16 * 1024 || s.read(&mut byte).await.unwrap_or(0) == 0 {
            return;
        }
        head.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&head).into_owned();
    let path = head.lines().next().and_then(|l| l.split_whitespace().nth(1)).unwrap_or("").to_owned();
    let header = |name: &str| {
        head.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.trim().eq_ignore_ascii_case(name).then(|| v.trim().to_owned())
        })
    };
    let upgrade = header("upgrade").is_some_and(|u| u.eq_ignore_ascii_case("websocket"));
    if upgrade && path == format!("/devtools/page/{PAGE_ID}") {
        let key = header("sec-websocket-key").unwrap_or_default();
        let resp = format!(
            "HTTP/1.1 101 WebSocket Protocol Handshake\r\nUpgrade: WebSocket\r\nConnection: Upgrade\r\n\
             Sec-WebSocket-Accept: {}\r\n\r\n",
            derive_accept_key(key.as_bytes())
        );
        if s.write_all(resp.as_bytes()).await.is_ok() {
            cdp(shared, s).await;
        }
        return;
    }
    let host = header("host").unwrap_or_else(|| "localhost".into());
    let body = match path.as_str() {
        "/json/version" => Some(version(&host, squatter.as_deref().unwrap_or(BROWSER_PACKAGE))),
        "/json/list" | "/json" => {
            let list = list(&shared.device.lock().unwrap_or_else(|e| e.into_inner()), &host);
            Some(if squatter.is_some() { forge(&list) } else { list })
        }
        _ => None,
    };
    let resp = match body {
        Some(b) => format!(
            "HTTP/1.1 200 OK\r\nContent-Length:{}\r\nContent-Type:application/json; charset=UTF-8\r\n\r\n{b}",
            b.len()
        ),
        None => "HTTP/1.1 404 Not Found\r\nContent-Length:0\r\n\r\n".to_owned(),
    };
    let _ = s.write_all(resp.as_bytes()).await;
}

/// A squatter's `/json/list`: the browser's, with the forged page's URL and title.
fn forge(list: &str) -> String {
    let mut pages: Value = serde_json::from_str(list).unwrap_or(Value::Null);
    for page in pages.as_array_mut().into_iter().flatten() {
        page["url"] = json!(FORGED_URL);
        page["title"] = json!(FORGED_TITLE);
    }
    serde_json::to_string_pretty(&pages).unwrap_or_default()
}

/// `/json/version` as Chrome for Android answers it (tests/fixtures/real/devtools-json-version-*); `package`: the
/// app the listener says it is.
fn version(host: &str, package: &str) -> String {
    serde_json::to_string_pretty(&json!({
        "Android-Package": package,
        "Browser": CHROME_VERSION,
        "Protocol-Version": "1.3",
        "User-Agent": format!("Mozilla/5.0 (Linux; Android 14; Pixel 7) AppleWebKit/537.36 (KHTML, like Gecko) \
                               {CHROME_VERSION} Mobile Safari/537.36"),
        "V8-Version": "12.0.267.17",
        "WebKit-Version": WEBKIT_REV,
        "webSocketDebuggerUrl": format!("ws://{host}/devtools/browser"),
    }))
    .unwrap_or_default()
}

/// `/json/list`: the one tab, as Chrome lists a page (tests/fixtures/real/devtools-json-list-*).
fn list(dev: &Device, host: &str) -> String {
    let page = dev.ui.web_area();
    let doc = dev.ui.web_page();
    let desc = json!({"attached": true, "empty": false, "height": page.bottom - page.top, "never_attached": false,
                      "screenX": page.left, "screenY": page.top, "visible": true, "width": page.right - page.left});
    serde_json::to_string_pretty(&json!([{
        "description": desc.to_string(),
        "devtoolsFrontendUrl": format!("https://chrome-devtools-frontend.appspot.com/serve_rev/@a58f8e9d1e7c0d6a2a1c8d1b4b2e5f7c9a0b3d6e/inspector.html?ws={host}/devtools/page/{PAGE_ID}"),
        "faviconUrl": "https://sim.example/favicon.ico",
        "id": PAGE_ID,
        "title": doc.title,
        "type": "page",
        "url": doc.url,
        "webSocketDebuggerUrl": format!("ws://{host}/devtools/page/{PAGE_ID}"),
    }]))
    .unwrap_or_default()
}

/// The page's CDP session: one reply per request, by id.
async fn cdp(shared: Arc<Shared>, mut s: tokio::io::DuplexStream) {
    let lie = shared.device.lock().unwrap_or_else(|e| e.into_inner()).devtools_lie;
    let raw: Option<Vec<u8>> = match lie {
        Lie::Oversized => {
            let mut f = vec![0x81, 127];
            f.extend_from_slice(&(9u64 << 20).to_be_bytes());
            f.extend_from_slice(&[b'{'; 1024]);
            Some(f)
        }
        Lie::MalformedFrame => Some(vec![0x83, 0x00]),
        Lie::Silent => Some(Vec::new()),
        _ => None,
    };
    if let Some(raw) = raw {
        // Wait for the first request, answer with the lie, then hold the connection until the host leaves.
        let mut buf = [0u8; 4096];
        if s.read(&mut buf).await.unwrap_or(0) > 0 {
            let _ = s.write_all(&raw).await;
            while s.read(&mut buf).await.unwrap_or(0) > 0 {}
        }
        return;
    }
    let mut ws = WebSocketStream::from_raw_socket(s, Role::Server, None).await;
    while let Some(Ok(msg)) = ws.next().await {
        let Message::Text(t) = msg else { continue };
        let Ok(req) = serde_json::from_str::<Value>(t.as_str()) else { continue };
        let id = req.get("id").cloned().unwrap_or(Value::Null);
        let method = req.get("method").and_then(Value::as_str).unwrap_or("").to_owned();
        let reply = {
            let mut dev = shared.device.lock().unwrap_or_else(|e| e.into_inner());
            dev.record_command(&format!("devtools:{method}"));
            match method.as_str() {
                "Page.getLayoutMetrics" => json!({"id": id, "result": metrics(&dev, lie)}),
                "DOMSnapshot.captureSnapshot" => json!({"id": id, "result": snapshot(&dev, lie)}),
                _ => json!({"id": id, "error": {"code": -32601, "message": format!("'{method}' wasn't found")}}),
            }
        };
        let replies = if lie == Lie::WrongIds {
            let n = id.as_u64().unwrap_or(0);
            (1..=300).map(|k| json!({"id": n + 1000 + k, "result": {}})).collect()
        } else {
            vec![reply]
        };
        for r in replies {
            if ws.send(Message::text(r.to_string())).await.is_err() {
                return;
            }
        }
    }
}

/// The document's height in CSS pixels: down to a margin below its last block.
fn doc_height(dev: &Device) -> f64 {
    let ui = &dev.ui;
    f64::from(ui.web_doc_bottom() + ui.web_scroll - ui.web_area().top) / dpr(dev)
}

/// The device pixel ratio: density ÷ 160 (420 dpi → 2.625).
fn dpr(dev: &Device) -> f64 {
    f64::from(dev.cfg.density.max(1)) / 160.0
}

/// `Page.getLayoutMetrics` in Chrome 91+'s shape: the deprecated device-pixel fields and the css* ones.
fn metrics(dev: &Device, lie: Lie) -> Value {
    let r = dpr(dev);
    let page = dev.ui.web_area();
    let (w, h) = (f64::from(page.right - page.left) / r, f64::from(page.bottom - page.top) / r);
    let scroll = f64::from(dev.ui.web_scroll) / r;
    let doc_h = doc_height(dev);
    let (cw, ch) = if lie == Lie::AbsurdNumbers { (1e308, -5.0) } else { (w, h) };
    json!({
        "layoutViewport": {"pageX": 0, "pageY": (scroll * r).round(), "clientWidth": (w * r).round(), "clientHeight": (h * r).round()},
        "visualViewport": {"offsetX": 0, "offsetY": 0, "pageX": 0, "pageY": scroll * r, "clientWidth": w * r,
                           "clientHeight": h * r, "scale": 1, "zoom": 1},
        "contentSize": {"x": 0, "y": 0, "width": (w * r).round(), "height": (doc_h * r).round()},
        "cssLayoutViewport": {"pageX": 0, "pageY": scroll.round(), "clientWidth": w.round(), "clientHeight": h.round()},
        "cssVisualViewport": {"offsetX": 0, "offsetY": 0, "pageX": 0, "pageY": scroll, "clientWidth": cw,
                              "clientHeight": ch, "scale": 1, "zoom": 1},
        "cssContentSize": {"x": 0, "y": 0, "width": w, "height": doc_h},
    })
}

/// A growing string table (captureSnapshot's `strings`).
#[derive(Default)]
struct Strings(Vec<String>);

impl Strings {
    fn id(&mut self, s: &str) -> i64 {
        match self.0.iter().position(|x| x == s) {
            Some(i) => i as i64,
            None => {
                self.0.push(s.to_owned());
                self.0.len() as i64 - 1
            }
        }
    }
}

/// One element of the snapshot: its tag, attributes, its one text node, whether it is clickable, an input's value.
type SnapshotElement<'a> = (&'static str, Vec<(&'static str, String)>, Option<String>, bool, Option<&'a str>);

/// `DOMSnapshot.captureSnapshot` of the page (computedStyles empty, includeDOMRects): html > head, body > the
/// page's blocks in order (h1, p, a, input, button; text in `#text` children), with document rectangles in CSS
/// pixels.
fn snapshot(dev: &Device, lie: Lie) -> Value {
    let r = dpr(dev);
    let ui = &dev.ui;
    let area = ui.web_area();
    let doc = ui.web_page();
    let scroll = ui.web_scroll;
    // A screen rectangle (moved by the scroll) back in document CSS pixels.
    let css = |rect: Rect| -> [f64; 4] {
        let x = f64::from(rect.left - area.left) / r;
        let y = f64::from(rect.top + scroll - area.top) / r;
        let (w, h) = (f64::from(rect.right - rect.left) / r, f64::from(rect.bottom - rect.top) / r);
        if lie == Lie::AbsurdNumbers {
            [1e308, -y, -w, h]
        } else {
            [
                (x * 100.0).round() / 100.0,
                (y * 100.0).round() / 100.0,
                (w * 100.0).round() / 100.0,
                (h * 100.0).round() / 100.0,
            ]
        }
    };
    let page_w = f64::from(area.right - area.left) / r;
    let doc_h = doc_height(dev);
    let mut st = Strings::default();
    let mut parent: Vec<i64> = Vec::new();
    let mut ty: Vec<i64> = Vec::new();
    let mut name: Vec<i64> = Vec::new();
    let mut value: Vec<i64> = Vec::new();
    let mut attrs: Vec<Vec<i64>> = Vec::new();
    let mut lnode: Vec<i64> = Vec::new();
    let mut lbounds: Vec<[f64; 4]> = Vec::new();
    let mut ltext: Vec<i64> = Vec::new();
    let mut node = |st: &mut Strings, p: i64, t: i64, n: &str, v: Option<&str>, a: &[(&str, &str)]| -> i64 {
        parent.push(p);
        ty.push(t);
        name.push(st.id(n));
        value.push(v.map_or(-1, |v| st.id(v)));
        attrs.push(a.iter().flat_map(|(k, v)| [st.id(k), st.id(v)]).collect());
        parent.len() as i64 - 1
    };
    let mut lay = |i: i64, rect: [f64; 4], text: Option<i64>| {
        lnode.push(i);
        lbounds.push(rect);
        ltext.push(text.unwrap_or(-1));
    };
    let url = doc.url.clone();
    let docn = node(&mut st, -1, 9, "#document", None, &[]);
    let html = node(&mut st, docn, 1, "HTML", None, &[("lang", "en")]);
    let _head = node(&mut st, html, 1, "HEAD", None, &[]);
    let body = node(&mut st, html, 1, "BODY", None, &[]);
    lay(html, [0.0, 0.0, page_w, doc_h], None);
    lay(body, [8.0, 8.0, page_w - 16.0, doc_h - 16.0], None);
    let mut clickable = Vec::new();
    let (mut input_idx, mut input_val) = (Vec::new(), Vec::new());
    for (block, rect) in ui.web_blocks() {
        let (tag, at, text, click, input): SnapshotElement = match block {
            Block::Heading(t) => ("H1", vec![], Some(t), false, None),
            Block::Text(t) => ("P", vec![], Some(t), false, None),
            Block::Link { text, href } => ("A", vec![("href", href)], Some(text), true, None),
            Block::Button { id, text } => {
                ("BUTTON", vec![("id", id.into()), ("type", "button".into())], Some(text.into()), true, None)
            }
            Block::Input { id, hint, password } => {
                let kind = if password {
                    "password"
                } else if id == "q" {
                    "search"
                } else {
                    "text"
                };
                let at =
                    vec![("id", id.into()), ("type", kind.into()), ("name", id.into()), ("placeholder", hint.into())];
                ("INPUT", at, None, true, Some(ui.browser.input(id)))
            }
            Block::Gap(_) => continue,
        };
        let at: Vec<(&str, &str)> = at.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let e = node(&mut st, body, 1, tag, None, &at);
        lay(e, css(rect), None);
        if let Some(t) = text {
            let tn = node(&mut st, e, 3, "#text", Some(&t), &[]);
            let ti = st.id(&t);
            lay(tn, css(rect), Some(ti));
        }
        if click {
            clickable.push(e);
        }
        if let Some(v) = input {
            input_idx.push(e);
            input_val.push(st.id(v));
        }
    }
    let n = parent.len();
    let (url_i, title_i, empty) = (st.id(&url), st.id(&doc.title), st.id(""));
    let lcount = lnode.len();
    json!({
        "documents": [{
            "documentURL": url_i, "title": title_i, "baseURL": url_i, "contentLanguage": st.id("en"),
            "encodingName": st.id("UTF-8"), "publicId": empty, "systemId": empty, "frameId": st.id(PAGE_ID),
            "nodes": {
                "parentIndex": parent, "nodeType": ty, "nodeName": name, "nodeValue": value,
                "backendNodeId": (1..=n as i64).collect::<Vec<_>>(), "attributes": attrs,
                "textValue": {"index": [], "value": []},
                "inputValue": {"index": input_idx, "value": input_val},
                "inputChecked": {"index": []}, "optionSelected": {"index": []},
                "contentDocumentIndex": {"index": [], "value": []},
                "pseudoType": {"index": [], "value": []},
                "isClickable": {"index": clickable},
                "currentSourceURL": {"index": [], "value": []},
                "originURL": {"index": [], "value": []}
            },
            "layout": {
                "nodeIndex": lnode, "styles": vec![Vec::<i64>::new(); lcount], "bounds": lbounds, "text": ltext,
                "stackingContexts": {"index": [0]},
                "offsetRects": vec![Vec::<f64>::new(); lcount], "scrollRects": vec![Vec::<f64>::new(); lcount],
                "clientRects": vec![Vec::<f64>::new(); lcount]
            },
            "textBoxes": {"layoutIndex": [], "bounds": [], "start": [], "length": []},
            "scrollOffsetX": 0, "scrollOffsetY": f64::from(scroll) / r,
            "contentWidth": page_w, "contentHeight": doc_h
        }],
        "strings": st.0,
    })
}
