//! Test support: run the real binary on an ephemeral loopback port, speak raw HTTP/1.1 and WebSocket to it, and
//! validate what it sends against the official schemas vendored in `tests/fixtures/xagent-schemas/`.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

pub const T: Duration = Duration::from_secs(10);

pub fn schema_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/xagent-schemas")
}

/// A compiled official schema (vendored copy, see `tests/fixtures/xagent-schemas/SOURCE.md`).
pub fn schema(name: &str) -> jsonschema::Validator {
    let path = schema_dir().join(name);
    let text =
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("official schema {} missing: {e}", path.display()));
    jsonschema::validator_for(&serde_json::from_str(&text).unwrap()).unwrap()
}

pub fn assert_valid(v: &jsonschema::Validator, doc: &Value, what: &str) {
    let errs: Vec<String> = v.iter_errors(doc).map(|e| format!("{} at {}", e, e.instance_path())).collect();
    assert!(errs.is_empty(), "{what} violates its schema: {errs:#?}\n{doc:#}");
}

/// The real binary, started with `serve` on 127.0.0.1:0; stderr (JSON logs) is captured for assertions.
pub struct Server {
    pub child: Child,
    pub addr: SocketAddr,
    pub logs: Arc<Mutex<Vec<String>>>,
    pub data_dir: PathBuf,
    /// What systemd's `RuntimeDirectory=` gives the service: a private folder on /dev/shm (tmpfs), where the
    /// connector puts its file cache by default; removed with the server.
    pub runtime_dir: Option<tempfile::TempDir>,
}

impl Server {
    pub fn start(data_dir: &Path, extra: &[&str], env: &[(&str, &str)]) -> Server {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_xagent-adb-connector"));
        cmd.args(["--log-format", "json", "serve", "--listen", "127.0.0.1:0", "--data-dir"]).arg(data_dir).args(extra);
        if !extra.contains(&"--adb-server") {
            // Never the machine's real adb server: port 1 refuses at once, so the backend simply sees no devices.
            cmd.args(["--adb-server", "127.0.0.1:1"]);
        }
        cmd.env_remove("XAGENT_CONNECTOR_API_KEY")
            .env("RUST_LOG", "debug")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        cmd.env_remove("XAGENT_ADB_CACHE_DIR");
        // No phone-helper setting: every suite runs the default, which is what users run (the helper on). A test of
        // the shell path's own mechanics (what `--phone-helper off` and every fallback use) passes
        // `--phone-helper off` itself and says why.
        cmd.env_remove("XAGENT_ADB_PHONE_HELPER");
        let runtime_dir = tempfile::Builder::new().prefix("xagent-test-run-").tempdir_in("/dev/shm").ok();
        if let Some(d) = &runtime_dir {
            cmd.env("RUNTIME_DIRECTORY", d.path());
        }
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().expect("spawn the connector binary");
        let stderr = child.stderr.take().unwrap();
        let logs = Arc::new(Mutex::new(Vec::new()));
        let (tx, rx) = std::sync::mpsc::channel();
        let sink = logs.clone();
        std::thread::spawn(move || {
            let mut sent = false;
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if !sent {
                    if let Ok(v) = serde_json::from_str::<Value>(&line) {
                        if v["message"] == "connector listening" {
                            let _ = tx.send(v["addr"].as_str().unwrap().to_owned());
                            sent = true;
                        }
                    }
                }
                sink.lock().unwrap().push(line);
            }
        });
        let addr = match rx.recv_timeout(T) {
            Ok(a) => a.parse().unwrap(),
            Err(_) => {
                let _ = child.kill();
                panic!("the connector did not start; logs: {:#?}", logs.lock().unwrap());
            }
        };
        Server { child, addr, logs, data_dir: data_dir.to_owned(), runtime_dir }
    }

    /// The file cache folder the server uses by default (under its runtime dir).
    pub fn memory_cache_dir(&self) -> Option<PathBuf> {
        let run = self.runtime_dir.as_ref()?.path();
        std::fs::read_dir(run)
            .ok()?
            .filter_map(Result::ok)
            .map(|e| e.path())
            .find(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("xagent-adb-cache-")))
    }

    pub fn logs(&self) -> Vec<String> {
        self.logs.lock().unwrap().clone()
    }

    /// Whether a log line containing `needle` arrives within `within`: the lines are read from the child's stderr
    /// by a thread of their own, so one written just before an answer may reach `logs()` just after it.
    pub async fn wait_log(&self, needle: &str, within: Duration) -> bool {
        let deadline = std::time::Instant::now() + within;
        loop {
            if self.logs.lock().unwrap().iter().any(|l| l.contains(needle)) {
                return true;
            }
            if std::time::Instant::now() > deadline {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    pub fn kill9(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// SIGTERM and wait (bounded) for the exit status.
    pub fn term(&mut self, within: Duration) -> Option<std::process::ExitStatus> {
        unsafe_kill(self.child.id(), 15);
        let deadline = std::time::Instant::now() + within;
        while std::time::Instant::now() < deadline {
            if let Some(st) = self.child.try_wait().unwrap() {
                return Some(st);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn unsafe_kill(pid: u32, sig: i32) {
    let _ = Command::new("kill").arg(format!("-{sig}")).arg(pid.to_string()).status();
}

pub struct HttpResponse {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl HttpResponse {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&self.body)))
    }
    pub fn text(&self) -> String {
        String::from_utf8(self.body.clone()).unwrap()
    }
}

/// A minimal HTTP/1.1 client (Connection: close), enough to see exactly what the server sends.
pub async fn http(addr: SocketAddr, method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> HttpResponse {
    http_within(addr, method, path, headers, body, T).await
}

/// One JSON-RPC request to the connector's MCP endpoint (`POST /mcp`) with the system key `key`, the session once
/// there is one, and `extra` headers.
pub async fn mcp_post(
    addr: SocketAddr,
    key: &str,
    session: Option<&str>,
    extra: &[(&str, &str)],
    msg: &Value,
) -> HttpResponse {
    let auth = format!("Bearer {key}");
    let mut h: Vec<(&str, &str)> = vec![
        ("Authorization", auth.as_str()),
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
    ];
    if let Some(s) = session {
        h.push(("Mcp-Session-Id", s));
    }
    h.extend_from_slice(extra);
    http(addr, "POST", "/mcp", &h, msg.to_string().as_bytes()).await
}

/// [`http`] with a budget of its own, for a request whose answer is slow on purpose (a password hash).
pub async fn http_within(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
    budget: Duration,
) -> HttpResponse {
    tokio::time::timeout(budget, async {
        let mut s = TcpStream::connect(addr).await.unwrap();
        let mut req = format!(
            "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: {}\r\n",
            body.len()
        );
        for (k, v) in headers {
            req.push_str(&format!("{k}: {v}\r\n"));
        }
        req.push_str("\r\n");
        s.write_all(req.as_bytes()).await.unwrap();
        s.write_all(body).await.unwrap();
        let mut raw = Vec::new();
        s.read_to_end(&mut raw).await.unwrap();
        let split = raw.windows(4).position(|w| w == b"\r\n\r\n").expect("header end");
        let head = String::from_utf8_lossy(&raw[..split]).to_string();
        let mut lines = head.split("\r\n");
        let status = lines.next().unwrap().split(' ').nth(1).unwrap().parse().unwrap();
        let headers: Vec<(String, String)> =
            lines.filter_map(|l| l.split_once(':').map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))).collect();
        let mut body = raw[split + 4..].to_vec();
        if headers.iter().any(|(k, v)| k.eq_ignore_ascii_case("transfer-encoding") && v.contains("chunked")) {
            body = dechunk(&body);
        }
        HttpResponse { status, headers, body }
    })
    .await
    .expect("http request timed out")
}

fn dechunk(mut b: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let Some(nl) = b.windows(2).position(|w| w == b"\r\n") else { return out };
        let n = usize::from_str_radix(std::str::from_utf8(&b[..nl]).unwrap().trim(), 16).unwrap();
        if n == 0 {
            return out;
        }
        out.extend_from_slice(&b[nl + 2..nl + 2 + n]);
        b = &b[nl + 2 + n + 2..];
    }
}

pub async fn get(addr: SocketAddr, path: &str) -> HttpResponse {
    http(addr, "GET", path, &[], b"").await
}

pub type Ws = WebSocketStream<MaybeTlsStream<TcpStream>>;

/// Opens `/ws` offering our subprotocol (and a bearer key when given). `Err` carries the HTTP status on refusal.
pub async fn ws_connect(addr: SocketAddr, key: Option<&str>, subprotocol: Option<&str>) -> Result<Ws, u16> {
    let mut req = format!("ws://{addr}/ws").into_client_request().unwrap();
    if let Some(p) = subprotocol {
        req.headers_mut().insert("Sec-WebSocket-Protocol", p.parse().unwrap());
    }
    if let Some(k) = key {
        req.headers_mut().insert("Authorization", format!("Bearer {k}").parse().unwrap());
    }
    match tokio::time::timeout(T, tokio_tungstenite::connect_async(req)).await.expect("ws connect timed out") {
        Ok((ws, resp)) => {
            assert_eq!(resp.headers().get("sec-websocket-protocol").unwrap(), "xagent.connector.packet.v1");
            Ok(ws)
        }
        Err(tokio_tungstenite::tungstenite::Error::Http(resp)) => Err(resp.status().as_u16()),
        Err(e) => panic!("ws connect failed: {e}"),
    }
}

pub async fn ws(addr: SocketAddr, key: Option<&str>) -> Client {
    Client::new(ws_connect(addr, key, Some("xagent.connector.packet.v1")).await.expect("ws refused"))
}

/// The input tools, which settle by default (device-profile §5.2).
pub const SETTLING_TOOLS: &[&str] = &[
    "android_tap",
    "android_long_press",
    "android_swipe",
    "android_pinch",
    "android_gesture",
    "android_input_text",
    "android_key",
    "android_open_url",
    "android_app_launch",
    "android_app_stop",
    "android_scroll",
    "android_wake",
    "android_unlock",
    "android_rotate",
    "android_batch",
];

/// A protocol client that records every packet it receives and checks each against the envelope schema.
pub struct Client {
    pub ws: Ws,
    pub seen_packet_ids: std::collections::HashSet<String>,
    envelope: jsonschema::Validator,
    descriptor: jsonschema::Validator,
    n: u64,
}

impl Client {
    pub fn new(ws: Ws) -> Client {
        Client {
            ws,
            seen_packet_ids: Default::default(),
            envelope: schema("xagent.connector.packet.v1.schema.json"),
            descriptor: schema("xagent.connection.v2.schema.json"),
            n: 0,
        }
    }

    /// Sends a request; returns its (packet_id, request_id).
    pub async fn send(&mut self, kind: &str, channel: Option<&str>, payload: Value) -> (String, String) {
        self.n += 1;
        let (pid, rid) = (format!("pkt_test_{}", self.n), format!("req_test_{}", self.n));
        let mut p = json!({"schema": "xagent.connector.packet/v1", "packet_id": pid, "request_id": rid, "type": kind,
                           "time": 1_790_000_000_000u64, "payload": payload});
        if let Some(c) = channel {
            p["connector_channel_id"] = json!(c);
        }
        self.send_raw(&p.to_string()).await;
        (pid, rid)
    }

    pub async fn send_raw(&mut self, text: &str) {
        self.ws.send(Message::text(text.to_owned())).await.unwrap();
    }

    /// Next packet (text frame), schema-checked; descriptors inside are checked too.
    pub async fn recv(&mut self) -> Value {
        loop {
            let msg = tokio::time::timeout(T * 2, self.ws.next()).await.expect("no packet within the timeout");
            match msg {
                Some(Ok(Message::Text(t))) => {
                    let v: Value = serde_json::from_str(t.as_str()).unwrap();
                    assert_valid(&self.envelope, &v, "packet");
                    let id = v["packet_id"].as_str().unwrap().to_owned();
                    assert!(self.seen_packet_ids.insert(id), "packet_id reused: {v}");
                    for ptr in ["/payload/connection_descriptor"] {
                        if let Some(d) = v.pointer(ptr).filter(|d| !d.is_null()) {
                            assert_valid(&self.descriptor, d, "descriptor");
                        }
                    }
                    return v;
                }
                Some(Ok(Message::Ping(_) | Message::Pong(_))) => continue,
                other => panic!("expected a text packet, got {other:?}"),
            }
        }
    }

    /// Sends a request and returns the reply addressed to it, checking the §7 routing fields.
    pub async fn request(&mut self, kind: &str, channel: Option<&str>, payload: Value) -> Value {
        let (pid, rid) = self.send(kind, channel, payload).await;
        loop {
            let v = self.recv().await;
            if v["request_id"] == json!(rid) {
                assert_eq!(v["reply_to"], json!(pid), "reply_to must point at the request packet: {v}");
                assert!(v["time"].as_u64().unwrap() > 1_700_000_000_000);
                return v;
            }
            assert!(v["request_id"].is_null(), "reply to another request: {v}");
        }
    }

    /// `tool.invoke` of `tool` on `channel`, with the channel id in the arguments as xAgent sends it; the reply
    /// (an ack, or an `error` packet for routing failures).
    ///
    /// An input tool gets `settle: false` unless the test says otherwise: these tests are about the input itself
    /// (ordering, deadlines, gates, targets), and settling takes full-size frames that the debug-built simulated
    /// phone renders slowly. Settling is tested by `tests/settle.rs`, through [`Client::invoke_as_is`].
    pub async fn invoke(&mut self, channel: &str, tool: &str, mut args: Value) -> Value {
        if SETTLING_TOOLS.contains(&tool) && args.is_object() && args.get("settle").is_none() {
            args["settle"] = json!(false);
        }
        self.invoke_as_is(channel, tool, args).await
    }

    /// `tool.invoke` with exactly these arguments (plus the channel id): the connector's defaults apply.
    pub async fn invoke_as_is(&mut self, channel: &str, tool: &str, mut args: Value) -> Value {
        args["connector_channel_id"] = json!(channel);
        self.request("tool.invoke", Some(channel), json!({"tool_id": tool, "arguments": args})).await
    }

    /// `android_tap` at (x, y) on `channel`; the reply.
    pub async fn tap(&mut self, channel: &str, x: i64, y: i64) -> Value {
        self.invoke(channel, "android_tap", json!({"x": x, "y": y})).await
    }

    pub async fn hello(&mut self, connector_id: Option<&str>) -> String {
        let mut p = json!({"connector_card_id": "device.adb", "protocol_version": "3.0",
                           "supported_profiles": ["xagent.im.v2", "xagent.device.v1"]});
        if let Some(id) = connector_id {
            p["connector_id"] = json!(id);
        }
        let ack = self.request("connector.hello", None, p).await;
        assert_eq!(ack["type"], "connector.hello.ack", "{ack}");
        assert_eq!(ack["payload"]["connector_card_id"], "device.adb");
        assert_eq!(ack["payload"]["protocol_version"], "3.0");
        ack["payload"]["connector_id"].as_str().unwrap().to_owned()
    }

    /// Opens a channel and binds a device through the `adb_device` flow (any free one, or `serial`), retrying while
    /// the connector's tracker has not yet seen the device online (bounded at 15 s).
    pub async fn bind(&mut self, serial: Option<&str>) -> String {
        let (ch, _) = self.open(None).await;
        let input = serial.map_or(json!({}), |s| json!({"serial": s}));
        let deadline = std::time::Instant::now() + Duration::from_secs(15);
        loop {
            let a = self.request("auth.start", Some(&ch), json!({"flow_id": "adb_device", "input": input})).await;
            if a["payload"]["status"] == "authenticated" {
                return ch;
            }
            assert!(std::time::Instant::now() < deadline, "never bound: {a}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    pub async fn open(&mut self, channel: Option<&str>) -> (String, Value) {
        let ack = self.request("channel.open", channel, json!({})).await;
        assert_eq!(ack["type"], "channel.open.ack", "{ack}");
        let id = ack["connector_channel_id"].as_str().unwrap().to_owned();
        assert_eq!(ack["payload"]["connector_channel_id"], json!(id));
        (id, ack["payload"]["connection_descriptor"].clone())
    }
}

pub fn error_code(v: &Value) -> &str {
    v["error"]["code"].as_str().unwrap_or("")
}
pub mod adb;
pub mod rig;
