//! The DevTools protocol of a phone's browser or debuggable WebView, over adb: the wire only (what a page says is
//! read by `tools::web`).
//!
//! Chrome on Android listens on the abstract unix socket `@chrome_devtools_remote`, another Chromium browser on
//! `@<package>_devtools_remote`, and a WebView whose app called `WebView.setWebContentsDebuggingEnabled(true)` on
//! `@webview_devtools_remote_<pid>`; `/proc/net/unix` lists them (tests/fixtures/real/devtools-*). adbd connects a
//! `localabstract:NAME` stream to such a socket, so each request here is one adb stream through our own host
//! protocol client (`transport::open`): an HTTP/1.1 request (`/json/version`, `/json/list`) on one, a WebSocket
//! (the target's `webSocketDebuggerUrl` path) speaking CDP — requests with ids, replies matched by id, events
//! skipped — on another. Dropping the future closes the stream, as for every other device service.
//!
//! Every byte comes from the phone, and a page controls much of it: replies are capped ([`REPLY_MAX`], before
//! they are buffered: tungstenite refuses a longer frame or message from its header), the socket, target and
//! message counts are bounded, socket names and target paths must be plain ASCII before they go into a service
//! name or a request line, and the caller bounds the time (the whole read runs under one deadline).

use std::net::SocketAddr;

use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::WebSocketStream;

use super::text::phone_text;
use super::transport;
use crate::protocol::errors::{ErrorCode, ProtoError};

/// Largest reply read (an HTTP body or one CDP message): a `DOMSnapshot.captureSnapshot` of a long news page is a
/// few MB; beyond this the page is not read at all rather than read in part.
pub const REPLY_MAX: usize = 8 << 20;
/// Largest HTTP response head.
const HEAD_MAX: usize = 16 << 10;
/// DevTools sockets considered from one `/proc/net/unix`.
pub const SOCKETS_MAX: usize = 16;
/// Targets read from one `/json/list` (a phone with a hundred tabs lists them all).
pub const TARGETS_MAX: usize = 64;
/// Messages skipped while waiting for one reply (events, replies to other ids): a page that floods events, or a
/// server that answers with wrong ids, ends the read instead of holding it until the deadline.
pub const SKIPPED_MAX: usize = 256;
/// Longest socket name or target path accepted.
const NAME_MAX: usize = 108;

fn failed(msg: impl Into<String>) -> ProtoError {
    ProtoError::new(ErrorCode::ToolInvokeFailed, msg.into())
}

/// The listening DevTools sockets in a `/proc/net/unix` listing, names without the `@`, in listing order, each
/// once, at most [`SOCKETS_MAX`]. A line is `Num RefCount Protocol Flags Type St Inode Path`; only sockets whose
/// flags have `__SO_ACCEPTCON` (0x10000: listening) count, connected ends share the name.
pub fn sockets(proc_net_unix: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for line in proc_net_unix.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        let (Some(flags), Some(path)) = (f.get(3), f.get(7)) else { continue };
        let listening = u32::from_str_radix(flags, 16).is_ok_and(|v| v & 0x10000 != 0);
        let Some(name) = path.strip_prefix('@') else { continue };
        if !listening || !is_devtools_name(name) || out.iter().any(|n| n == name) {
            continue;
        }
        out.push(name.to_owned());
        if out.len() == SOCKETS_MAX {
            break;
        }
    }
    out
}

/// `chrome_devtools_remote`, `<package>_devtools_remote`, `webview_devtools_remote_<pid>` (and `…_<pid>` of the
/// others): plain ASCII only, since it becomes part of an adb service name.
fn is_devtools_name(name: &str) -> bool {
    let plain = !name.is_empty()
        && name.len() <= NAME_MAX
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.' || b == b'-');
    let base = name.trim_end_matches(|c: char| c.is_ascii_digit());
    let base = base.strip_suffix('_').unwrap_or(base);
    plain && base.ends_with("devtools_remote")
}

/// Whether `socket`'s name proves it is `package`'s own (issue 48: any app can open abstract sockets, and
/// `/json/version`'s `Android-Package` is whatever the listener says): `chrome_devtools_remote` only for Chrome,
/// `<package>_devtools_remote` only for `package`, `webview_devtools_remote_<pid>` only when `<pid>` is one of
/// `pids`, the processes of `package`.
pub fn proven(socket: &str, package: &str, pids: &[u32]) -> bool {
    if socket == "chrome_devtools_remote" {
        return package == "com.android.chrome";
    }
    if let Some(pid) = socket_pid(socket) {
        return pids.contains(&pid);
    }
    socket.strip_suffix("_devtools_remote") == Some(package)
}

/// The pids `pidof` printed (space separated; nothing when no process has that name).
pub fn pids(pidof: &str) -> Vec<u32> {
    pidof.split_whitespace().filter_map(|p| p.parse().ok()).collect()
}

/// The pid a `webview_devtools_remote_<pid>` socket names.
pub fn socket_pid(name: &str) -> Option<u32> {
    name.strip_prefix("webview_devtools_remote_")?.parse().ok()
}

/// One entry of `/json/list`.
#[derive(Clone, Debug, PartialEq)]
pub struct Target {
    pub id: String,
    /// `page`, `iframe`, `service_worker`, `other`, …
    pub kind: String,
    pub url: String,
    pub title: String,
    /// The path of `webSocketDebuggerUrl` (`/devtools/page/<id>`).
    pub ws_path: String,
    /// From the JSON string in `description` (Android WebViews and Chrome): whether the view is shown, and where on
    /// screen (device px: screenX, screenY, width, height).
    pub visible: Option<bool>,
    pub screen: Option<[f64; 4]>,
}

/// `/json/list` (or `/json`): its page-like targets, at most [`TARGETS_MAX`], strings cleaned and cut. A target
/// without a usable WebSocket path (another client is attached, or the path is not plain ASCII) is left out.
pub fn parse_targets(body: &[u8]) -> Result<Vec<Target>, ProtoError> {
    let v: Value = serde_json::from_slice(body)
        .map_err(|e| failed(format!("the DevTools target list is not JSON ({})", phone_text(&e.to_string(), 120))))?;
    let Some(list) = v.as_array() else {
        return Err(failed("the DevTools target list is not a JSON array"));
    };
    let s =
        |t: &Value, k: &str, n: usize| t.get(k).and_then(Value::as_str).map(|s| phone_text(s, n)).unwrap_or_default();
    let mut out = Vec::new();
    for t in list.iter().take(TARGETS_MAX) {
        let Some(ws_path) = t.get("webSocketDebuggerUrl").and_then(Value::as_str).and_then(ws_path) else { continue };
        let desc: Value = t
            .get("description")
            .and_then(Value::as_str)
            .filter(|d| d.len() <= 4096)
            .and_then(|d| serde_json::from_str(d).ok())
            .unwrap_or(Value::Null);
        let num = |k: &str| desc.get(k).and_then(Value::as_f64).filter(|v| v.is_finite() && v.abs() < 1e6);
        let screen = match (num("screenX"), num("screenY"), num("width"), num("height")) {
            (Some(x), Some(y), Some(w), Some(h)) if w > 0.0 && h > 0.0 => Some([x, y, w, h]),
            _ => None,
        };
        out.push(Target {
            id: s(t, "id", 64),
            kind: s(t, "type", 32),
            url: s(t, "url", 2048),
            title: s(t, "title", 200),
            ws_path,
            visible: desc.get("visible").and_then(Value::as_bool),
            screen,
        });
    }
    Ok(out)
}

/// `ws://127.0.0.1:10900/devtools/page/ABC` → `/devtools/page/ABC`, if it is a plain path.
fn ws_path(url: &str) -> Option<String> {
    let rest = url.strip_prefix("ws://")?;
    let path = &rest[rest.find('/')?..];
    let plain = path.len() <= 200 && path.bytes().all(|b| b.is_ascii_graphic() && b != b'?' && b != b'#');
    plain.then(|| path.to_owned())
}

/// The app a DevTools socket belongs to: `/json/version`'s `Android-Package` (a WebView's app, or the browser).
pub fn android_package(version: &[u8]) -> Option<String> {
    let v: Value = serde_json::from_slice(version).ok()?;
    v.get("Android-Package").and_then(Value::as_str).map(|p| phone_text(p, 255))
}

/// The page an agent sees among `targets`: a `page` the phone says is visible, else the first `page` (Chrome
/// lists the active tab first).
pub fn front_page(targets: &[Target]) -> Option<&Target> {
    let pages = || targets.iter().filter(|t| t.kind == "page");
    pages().find(|t| t.visible == Some(true)).or_else(|| pages().find(|t| t.visible != Some(false)))
}

/// Opens `localabstract:SOCKET` on the phone: one adb stream, closed when dropped.
async fn open(server: SocketAddr, serial: &str, socket: &str) -> Result<TcpStream, ProtoError> {
    if !is_devtools_name(socket) {
        return Err(failed("not a DevTools socket name"));
    }
    let st = transport::open(server, serial, &format!("localabstract:{socket}")).await.map_err(|mut e| {
        e.message = format!("the DevTools socket @{socket} could not be opened ({})", e.message);
        e
    })?;
    Ok(st.into_tcp())
}

/// `GET PATH` on the phone's DevTools socket: the body of a 200 answer, at most [`REPLY_MAX`] bytes.
pub async fn http_get(server: SocketAddr, serial: &str, socket: &str, path: &str) -> Result<Vec<u8>, ProtoError> {
    let mut s = open(server, serial, socket).await?;
    s.write_all(format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n").as_bytes())
        .await
        .map_err(|e| failed(format!("the DevTools socket @{socket} broke: {e}")))?;
    read_http(&mut s, socket).await
}

/// An HTTP/1.1 response from `s`: the status must be 200; the body ends at its `Content-Length` or at the close.
async fn read_http<R: tokio::io::AsyncRead + Unpin>(s: &mut R, socket: &str) -> Result<Vec<u8>, ProtoError> {
    let broke = |e: std::io::Error| failed(format!("the DevTools socket @{socket} broke: {e}"));
    let mut buf = Vec::with_capacity(4096);
    let mut chunk = [0u8; 8192];
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        if buf.len() > HEAD_MAX {
            return Err(failed(format!("the DevTools socket @{socket} sent an HTTP head over {HEAD_MAX} bytes")));
        }
        let n = s.read(&mut chunk).await.map_err(broke)?;
        if n == 0 {
            return Err(failed(format!("the DevTools socket @{socket} closed before answering")));
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let status = head.lines().next().unwrap_or("");
    if status.split_whitespace().nth(1) != Some("200") {
        return Err(failed(format!("the DevTools socket @{socket} answered {:?}", phone_text(status, 80))));
    }
    let length = head.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        k.trim().eq_ignore_ascii_case("content-length").then(|| v.trim().parse::<u64>().ok()).flatten()
    });
    if length.is_some_and(|l| l > REPLY_MAX as u64) {
        return Err(failed(format!("the DevTools socket @{socket} announced a body over {REPLY_MAX} bytes")));
    }
    let mut body = buf.split_off(head_end);
    loop {
        if length.is_some_and(|l| body.len() as u64 >= l) {
            body.truncate(length.unwrap_or(0) as usize);
            return Ok(body);
        }
        if body.len() > REPLY_MAX {
            return Err(failed(format!("the DevTools socket @{socket} sent a body over {REPLY_MAX} bytes")));
        }
        let n = s.read(&mut chunk).await.map_err(broke)?;
        if n == 0 {
            return match length {
                Some(l) => {
                    Err(failed(format!("the DevTools socket @{socket} closed after {} of {l} bytes", body.len())))
                }
                None => Ok(body),
            };
        }
        body.extend_from_slice(&chunk[..n]);
    }
}

/// One CDP session on a target's WebSocket.
pub struct Session<S> {
    ws: WebSocketStream<S>,
    next_id: u64,
    socket: String,
}

fn ws_config() -> WebSocketConfig {
    WebSocketConfig::default().max_message_size(Some(REPLY_MAX)).max_frame_size(Some(REPLY_MAX))
}

/// Connects to target `ws_path` on `socket` (the WebSocket handshake over a `localabstract:` stream).
pub async fn connect(
    server: SocketAddr,
    serial: &str,
    socket: &str,
    ws_path: &str,
) -> Result<Session<TcpStream>, ProtoError> {
    let s = open(server, serial, socket).await?;
    Session::handshake(s, socket, ws_path).await
}

impl<S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin> Session<S> {
    /// The WebSocket handshake on `s` (tungstenite checks the server's `Sec-WebSocket-Accept`).
    pub async fn handshake(s: S, socket: &str, ws_path: &str) -> Result<Session<S>, ProtoError> {
        let url = format!("ws://localhost{ws_path}");
        let (ws, _) = tokio_tungstenite::client_async_with_config(url, s, Some(ws_config())).await.map_err(|e| {
            failed(format!("the DevTools WebSocket of @{socket} failed ({})", phone_text(&e.to_string(), 160)))
        })?;
        Ok(Session { ws, next_id: 1, socket: socket.to_owned() })
    }

    /// Sends `method` with `params` and waits for the reply with its id: its `result`, or the page's `error` as a
    /// failure. Events and replies to other ids are skipped, at most [`SKIPPED_MAX`] of them.
    pub async fn call(&mut self, method: &str, params: Value) -> Result<Value, ProtoError> {
        let id = self.next_id;
        self.next_id += 1;
        let sock = self.socket.clone();
        let broke = |e: &dyn std::fmt::Display| {
            failed(format!(
                "the DevTools WebSocket of @{sock} failed during {method} ({})",
                phone_text(&e.to_string(), 160)
            ))
        };
        let req = json!({"id": id, "method": method, "params": params}).to_string();
        self.ws.send(Message::text(req)).await.map_err(|e| broke(&e))?;
        for _ in 0..=SKIPPED_MAX {
            let msg = match self.ws.next().await {
                None => return Err(broke(&"closed")),
                Some(Err(e)) => return Err(broke(&e)),
                Some(Ok(m)) => m,
            };
            let text = match msg {
                Message::Text(t) => t,
                Message::Close(_) => return Err(broke(&"closed by the phone")),
                // Pings are answered by tungstenite; binary frames are not CDP.
                _ => continue,
            };
            let Ok(v) = serde_json::from_str::<Value>(text.as_str()) else {
                return Err(broke(&"a message that is not JSON"));
            };
            if v.get("id").and_then(Value::as_u64) != Some(id) {
                continue;
            }
            if let Some(err) = v.get("error") {
                let m = err.get("message").and_then(Value::as_str).unwrap_or("error");
                return Err(failed(format!("{method} failed on the page: {}", phone_text(m, 160))));
            }
            let mut v = v;
            return match v.get_mut("result").map(Value::take) {
                Some(r) if r.is_object() => Ok(r),
                _ => Err(broke(&"a reply without a result")),
            };
        }
        Err(broke(&format!("no reply with id {id} among {SKIPPED_MAX} messages")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt;
    use tokio_tungstenite::tungstenite::handshake::derive_accept_key;

    const PROC_NET_UNIX: &str =
        include_str!("../../tests/fixtures/real/devtools-proc-net-unix-webview-chrome-ceshiren.txt");
    const JSON_LIST: &[u8] = include_bytes!("../../tests/fixtures/real/devtools-json-list-webview-ceshiren.json");
    const JSON_LIST_74: &[u8] = include_bytes!("../../tests/fixtures/real/devtools-json-list-webview-74-appium.json");
    const JSON_VERSION: &[u8] = include_bytes!("../../tests/fixtures/real/devtools-json-version-webview-ceshiren.json");

    #[test]
    fn only_a_socket_whose_name_proves_its_app_is_the_apps() {
        let pids = pids("19281 19300\n");
        assert_eq!(pids, [19281, 19300]);
        assert!(proven("webview_devtools_remote_19281", "com.example.app", &pids));
        assert!(!proven("webview_devtools_remote_666", "com.example.app", &pids), "another app's WebView");
        assert!(!proven("webview_devtools_remote_19281_x", "com.example.app", &pids));
        assert!(proven("chrome_devtools_remote", "com.android.chrome", &[]));
        assert!(!proven("chrome_devtools_remote", "com.example.app", &pids), "Chrome's socket is Chrome's");
        assert!(proven("com.brave.browser_devtools_remote", "com.brave.browser", &[]));
        assert!(!proven("com.brave.browser_devtools_remote", "com.example.app", &pids));
        assert!(!proven("com.example.app.evil_devtools_remote", "com.example.app", &pids));
        assert!(!proven("webview_devtools_remote_19281", "com.example.app", &[]), "no pid, no proof");
    }

    #[test]
    fn listening_devtools_sockets_of_a_real_listing() {
        // The connected ends (flags 0) share the names; only the listening one counts.
        assert_eq!(sockets(PROC_NET_UNIX), ["webview_devtools_remote_19281"]);
        assert_eq!(socket_pid("webview_devtools_remote_19281"), Some(19281));
        assert_eq!(socket_pid("chrome_devtools_remote"), None);
        // Hostile names never reach a service name; other sockets are not DevTools ones.
        let forged = "0: 00000002 00000000 00010000 0001 01 1 @x:shell:reboot_devtools_remote\n\
                      0: 00000002 00000000 00010000 0001 01 2 @jdwp-control\n\
                      0: 00000002 00000000 00010000 0001 01 3 @com.brave.browser_devtools_remote\n";
        assert_eq!(sockets(forged), ["com.brave.browser_devtools_remote"]);
        let many: String = (0..100)
            .map(|i| format!("0: 00000002 00000000 00010000 0001 01 {i} @webview_devtools_remote_{i}\n"))
            .collect();
        assert_eq!(sockets(&many).len(), SOCKETS_MAX);
    }

    #[test]
    fn targets_of_a_real_list_and_hostile_ones() {
        let t = parse_targets(JSON_LIST).unwrap();
        assert_eq!(t.len(), 1);
        assert_eq!(t[0].kind, "page");
        assert_eq!(t[0].ws_path, "/devtools/page/51E00D7C2B3C8785879A63D98099B002");
        assert_eq!(t[0].visible, Some(true));
        assert_eq!(t[0].screen, Some([0.0, 292.0, 1228.0, 2408.0]));
        assert_eq!(front_page(&t).map(|p| p.id.as_str()), Some("51E00D7C2B3C8785879A63D98099B002"));
        let t = parse_targets(JSON_LIST_74).unwrap();
        assert_eq!(
            (t[0].screen, t[0].title.as_str()),
            (Some([0.0, 336.0, 1080.0, 1458.0]), "Releases · appium/appium · GitHub")
        );
        assert_eq!(android_package(JSON_VERSION).as_deref(), Some("io.appium.android.apis"));
        assert_eq!(android_package(b"{\"Android-Package\": 7}"), None);
        let hostile = br#"[{"type":"page","title":"\u001b[2Jx\u202e","webSocketDebuggerUrl":"ws://h/devtools/page/a b"},
                          {"type":"page","title":"ok","description":"{\"screenX\":1e308,\"screenY\":0,\"width\":1,\"height\":1,\"visible\":false}","webSocketDebuggerUrl":"ws://h/devtools/page/B"}]"#;
        let t = parse_targets(hostile).unwrap();
        assert_eq!(t.len(), 1, "a path with a space is left out");
        assert_eq!((t[0].screen, t[0].visible), (None, Some(false)));
        assert!(front_page(&t).is_none(), "an invisible page is not the one in front");
        assert!(parse_targets(b"{}").is_err() && parse_targets(b"\xff").is_err());
    }

    #[tokio::test]
    async fn http_answers_are_bounded_and_checked() {
        async fn answer(bytes: Vec<u8>) -> Result<Vec<u8>, ProtoError> {
            let (mut a, mut b) = tokio::io::duplex(1 << 16);
            tokio::spawn(async move {
                let _ = b.write_all(&bytes).await;
            });
            read_http(&mut a, "t").await
        }
        let ok = answer(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n[]tail".to_vec()).await.unwrap();
        assert_eq!(ok, b"[]");
        let e = answer(b"HTTP/1.1 500 No\r\n\r\n".to_vec()).await.unwrap_err();
        assert!(e.message.contains("500"), "{e}");
        let e = answer(format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n", REPLY_MAX + 1).into_bytes()).await;
        assert!(e.unwrap_err().message.contains("over"));
        let e = answer(vec![b'x'; HEAD_MAX + 10]).await.unwrap_err();
        assert!(e.message.contains("head"), "{e}");
        let e = answer(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc".to_vec()).await.unwrap_err();
        assert!(e.message.contains("3 of 10"), "{e}");
    }

    /// A CDP server on a duplex pipe: answers the handshake, then sends `frames` (raw bytes) after the first
    /// request arrives.
    async fn server(frames: Vec<u8>) -> Result<Value, ProtoError> {
        let (a, mut b) = tokio::io::duplex(1 << 20);
        tokio::spawn(async move {
            let mut head = Vec::new();
            let mut byte = [0u8; 1];
            while !head.ends_with(b"\r\n\r\n") {
                if b.read(&mut byte).await.unwrap_or(0) == 0 {
                    return;
                }
                head.push(byte[0]);
            }
            let head = String::from_utf8_lossy(&head).into_owned();
            let key = head.lines().find_map(|l| l.strip_prefix("Sec-WebSocket-Key: ")).unwrap_or("").trim();
            let resp = format!(
                "HTTP/1.1 101 WebSocket Protocol Handshake\r\nUpgrade: WebSocket\r\nConnection: Upgrade\r\n\
                 Sec-WebSocket-Accept: {}\r\n\r\n",
                derive_accept_key(key.as_bytes())
            );
            let _ = b.write_all(resp.as_bytes()).await;
            let mut req = [0u8; 64];
            let _ = b.read(&mut req).await;
            let _ = b.write_all(&frames).await;
            tokio::time::sleep(std::time::Duration::from_secs(5)).await;
        });
        let mut s = Session::handshake(a, "t", "/devtools/page/X").await?;
        tokio::time::timeout(std::time::Duration::from_secs(3), s.call("Page.getLayoutMetrics", json!({})))
            .await
            .map_err(|_| failed("timed out"))?
    }

    /// An unmasked server frame (FIN, `opcode`) with `payload`, length in the 7/16/64-bit forms of RFC 6455.
    fn frame(opcode: u8, payload: &[u8]) -> Vec<u8> {
        let mut f = vec![0x80 | opcode];
        match payload.len() {
            n if n < 126 => f.push(n as u8),
            n if n < 65536 => {
                f.push(126);
                f.extend_from_slice(&(n as u16).to_be_bytes());
            }
            n => {
                f.push(127);
                f.extend_from_slice(&(n as u64).to_be_bytes());
            }
        }
        f.extend_from_slice(payload);
        f
    }

    #[tokio::test]
    async fn cdp_replies_are_matched_by_id_and_hostile_frames_fail_bounded() {
        // An event and a reply to another id first: skipped.
        let mut ok = frame(1, br#"{"method":"Page.frameNavigated","params":{}}"#);
        ok.extend(frame(1, br#"{"id":7,"result":{"x":0}}"#));
        ok.extend(frame(1, br#"{"id":1,"result":{"cssVisualViewport":{"clientWidth":411}}}"#));
        let r = server(ok).await.unwrap();
        assert_eq!(r["cssVisualViewport"]["clientWidth"], 411);
        // The page's error is the call's failure, cleaned.
        let e = server(frame(1, b"{\"id\":1,\"error\":{\"code\":-32601,\"message\":\"nope\\u001b[31m\"}}")).await;
        assert!(e.unwrap_err().message.contains("failed on the page: nope[31m"));
        // A frame that claims more than REPLY_MAX: refused from its header, nothing buffered.
        let mut huge = vec![0x81, 127];
        huge.extend_from_slice(&((REPLY_MAX as u64) + 1).to_be_bytes());
        let e = server(huge).await.unwrap_err();
        assert!(e.message.contains("failed during Page.getLayoutMetrics"), "{e}");
        // A reserved opcode, a masked server frame, text that is not UTF-8 or not JSON: a clear failure.
        for bad in [vec![0x83, 0], vec![0x81, 0x81, 1, 2, 3, 4, b'x'], frame(1, b"\xff\xfe"), frame(1, b"not json")] {
            let e = server(bad.clone()).await.unwrap_err();
            assert!(e.message.contains("DevTools WebSocket"), "{bad:?}: {e}");
        }
        // Only wrong ids: bounded by SKIPPED_MAX, not by the deadline.
        let wrong: Vec<u8> = (0..=SKIPPED_MAX).flat_map(|_| frame(1, br#"{"id":99,"result":{}}"#)).collect();
        let e = server(wrong).await.unwrap_err();
        assert!(e.message.contains("no reply with id 1"), "{e}");
        // A close frame.
        assert!(server(frame(8, &[])).await.unwrap_err().message.contains("closed"));
    }
}
