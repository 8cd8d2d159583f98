//! `xagent-adb-connector call TOOL [key=value…]`: one tool call on a phone through a running connector, the way
//! xAgent makes it — WebSocket, `connector.hello` → `channel.open` → `auth.start` (flow `adb_device`) →
//! `tool.invoke` → `channel.close` — so an operator or a script can try a tool without an agent platform.
//!
//! It is a client of the public data plane only: nothing here reaches into the connector's state or the device
//! layer, so what works with `call` works for xAgent and the other way round. Argument values are typed by the
//! tool's input schema in this binary's registry (`text=123` stays text for `android_input_text`, `x=100` is a
//! number for `android_tap`); the connector validates them again against the schema its card serves.

use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Map, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::Message;

use super::out::outln;
use crate::config::exit;
use crate::device::text::{terminal_json, terminal_text};

/// What went wrong, with the exit code: `1` for a failure the connector reported (its error code is printed) or a
/// lost connection, `2` for a bad command line, `3` for an unusable key file.
#[derive(Debug)]
pub struct CallError {
    pub code: i32,
    pub message: String,
}

fn usage(message: String) -> CallError {
    CallError { code: exit::USAGE, message }
}

fn failed(message: String) -> CallError {
    CallError { code: exit::FAILURE, message }
}

/// Largest reply accepted from the connector (a UI dump of a busy screen is well below it).
const MAX_REPLY_BYTES: usize = 16 << 20;
/// Largest file `--out` writes (the connector's own upload/cache limits are lower by default).
const MAX_DOWNLOAD_BYTES: u64 = 1 << 30;
/// Longest HTTP response head accepted on a download.
const MAX_HEAD_BYTES: usize = 16 << 10;

/// `http://HOST:PORT[/]` → the address to connect to and the `Host` authority. Only plain HTTP: put `call` on the
/// connector's box (or through the same TLS-terminating proxy's backend) — the key then never crosses a network.
pub fn parse_url(url: &str) -> Result<(SocketAddr, String), CallError> {
    use std::net::ToSocketAddrs;
    let hint = "expected the connector's base URL, e.g. http://127.0.0.1:8790";
    let rest = match url.split_once("://") {
        Some(("http" | "ws", rest)) => rest,
        Some(("https" | "wss", _)) => {
            return Err(usage(format!(
                "--url {url:?}: call speaks plain HTTP only; run it on the connector's box against its --listen \
                 address (e.g. http://127.0.0.1:8790)"
            )))
        }
        Some(_) | None => return Err(usage(format!("--url {url:?}: {hint}"))),
    };
    let authority = rest.trim_end_matches('/');
    if authority.is_empty() || authority.contains(['/', '?', '#', '@']) {
        return Err(usage(format!("--url {url:?}: only scheme, host and port are allowed; {hint}")));
    }
    let with_port = if authority.rsplit_once(':').is_some_and(|(_, p)| p.parse::<u16>().is_ok()) {
        authority.to_owned()
    } else {
        format!("{authority}:80")
    };
    let addr = with_port
        .to_socket_addrs()
        .map_err(|e| usage(format!("--url {url:?}: cannot resolve {authority}: {e}")))?
        .next()
        .ok_or_else(|| usage(format!("--url {url:?}: {authority} resolves to no address")))?;
    Ok((addr, authority.to_owned()))
}

/// The URL when `--url` is not given: the connector this box runs (`XAGENT_ADB_LISTEN`, which the installed
/// service's env file provides; an all-interfaces address is reached on loopback), else the default listen address.
pub fn default_url() -> String {
    let listen = std::env::var("XAGENT_ADB_LISTEN").ok().and_then(|l| crate::config::parse_listen(l.trim()).ok());
    match listen {
        Some(mut a) => {
            if a.ip().is_unspecified() {
                a.set_ip(if a.is_ipv4() {
                    std::net::Ipv4Addr::LOCALHOST.into()
                } else {
                    std::net::Ipv6Addr::LOCALHOST.into()
                });
            }
            format!("http://{a}")
        }
        None => "http://127.0.0.1:8790".to_owned(),
    }
}

/// Builds the tool's `arguments` from `--json` and `key=value` / `key:=JSON` words (the words win).
pub fn build_arguments(tool: &str, json_arg: Option<&str>, words: &[String]) -> Result<Map<String, Value>, CallError> {
    let mut args = match json_arg {
        None => Map::new(),
        Some(text) => match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(m)) => m,
            Ok(other) => return Err(usage(format!("--json must be a JSON object, not {other}"))),
            Err(e) => return Err(usage(format!("--json is not JSON: {e}"))),
        },
    };
    let schema = input_schema(tool);
    for word in words {
        let (key, value) = if let Some((k, raw)) = word.split_once(":=") {
            let v = serde_json::from_str::<Value>(raw)
                .map_err(|e| usage(format!("{word:?}: the value after := must be JSON ({e})")))?;
            (k, v)
        } else if let Some((k, text)) = word.split_once('=') {
            (k, typed(schema.as_ref().and_then(|s| s["properties"].get(k)), text))
        } else {
            return Err(usage(format!(
                "{word:?} is not an argument: write key=value (e.g. x=100, text=hello) or key:=JSON (e.g. \
                 element:='{{\"text\":\"OK\"}}')"
            )));
        };
        if key.is_empty() || key.len() > 128 {
            return Err(usage(format!("{word:?}: the argument name must be 1–128 characters")));
        }
        args.insert(key.to_owned(), value);
    }
    Ok(args)
}

/// The input schema this binary declares for `tool` (risky tools included: the running connector decides whether
/// they are enabled).
pub fn known_tool(tool: &str) -> Option<Value> {
    input_schema(tool)
}

fn input_schema(tool: &str) -> Option<Value> {
    let adb = crate::device::adb::AdbBackend::new(Vec::new());
    registry_with_everything(&adb).spec(tool).map(|s| s.input.clone())
}

/// This binary's registry with every opt-in tool enabled.
fn registry_with_everything(adb: &std::sync::Arc<crate::device::adb::AdbBackend>) -> crate::tools::Registry {
    let everything = crate::policy::Policy {
        enabled_risky_tools: crate::policy::RISKY_TOOLS.iter().map(|s| s.to_string()).collect(),
        shell_allow_prefixes: vec!["true".into()],
        ..Default::default()
    };
    crate::tools::Registry::device_tools_with(adb, &std::sync::Arc::new(everything))
}

/// `key=value` text → the JSON type the schema asks for; without a schema: integer, number, boolean, else text.
fn typed(prop: Option<&Value>, text: &str) -> Value {
    let kinds: Vec<&str> = match prop.map(|p| &p["type"]) {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    let wants = |k: &str| kinds.is_empty() || kinds.contains(&k);
    if wants("integer") {
        if let Ok(n) = text.parse::<i64>() {
            return json!(n);
        }
    }
    if wants("number") {
        if let Some(n) = text.parse::<f64>().ok().and_then(serde_json::Number::from_f64) {
            return Value::Number(n);
        }
    }
    if wants("boolean") && matches!(text, "true" | "false") {
        return json!(text == "true");
    }
    json!(text)
}

type Ws = tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// One data-plane session: numbered packets, replies matched by `request_id`, every wait bounded.
struct Session {
    ws: Ws,
    n: u64,
    deadline: Instant,
}

impl Session {
    async fn connect(
        addr: SocketAddr,
        authority: &str,
        key: Option<&str>,
        deadline: Instant,
    ) -> Result<Self, CallError> {
        let mut req = format!("ws://{authority}/ws")
            .into_client_request()
            .map_err(|e| usage(format!("--url: not a usable address ({e})")))?;
        let h = req.headers_mut();
        h.insert("Sec-WebSocket-Protocol", crate::protocol::SUBPROTOCOL.parse().expect("valid header"));
        if let Some(k) = key {
            let v = format!("Bearer {k}").parse().map_err(|_| CallError {
                code: exit::CONFIG,
                message: "the API key is not a valid header value".into(),
            })?;
            h.insert("Authorization", v);
        }
        let connect = async {
            let tcp = tokio::net::TcpStream::connect(addr).await?;
            Ok::<_, std::io::Error>(tcp)
        };
        let tcp = tokio::time::timeout_at(deadline.into(), connect)
            .await
            .map_err(|_| failed(format!("{addr}: no connection before the timeout")))?
            .map_err(|e| {
                failed(format!("cannot connect to the connector at {addr}: {e} (is it running? see --url)"))
            })?;
        let cfg = tokio_tungstenite::tungstenite::protocol::WebSocketConfig::default()
            .max_message_size(Some(MAX_REPLY_BYTES))
            .max_frame_size(Some(MAX_REPLY_BYTES));
        let handshake =
            tokio_tungstenite::client_async_with_config(req, tokio_tungstenite::MaybeTlsStream::Plain(tcp), Some(cfg));
        let (ws, _) = tokio::time::timeout_at(deadline.into(), handshake)
            .await
            .map_err(|_| failed("no WebSocket handshake before the timeout".into()))?
            .map_err(|e| {
                use tokio_tungstenite::tungstenite::Error;
                match e {
                    Error::Http(r) if (r.status() == 401 || r.status() == 403) && key.is_none() => CallError {
                        code: exit::FAILURE,
                        message: format!(
                            "unauthorized: the connector at {authority} wants its API key (HTTP {}); pass \
                             --api-key-file FILE (or set XAGENT_CONNECTOR_API_KEY)",
                            r.status().as_u16()
                        ),
                    },
                    // A key was sent and refused: naming the flag again would send the user looking for a file
                    // they already gave. The key itself is never printed.
                    Error::Http(r) if r.status() == 401 || r.status() == 403 => CallError {
                        code: exit::FAILURE,
                        message: format!(
                            "unauthorized: the connector at {authority} refused the API key given (HTTP {}): it is \
                             not this connector's key (check --url names the connector you mean, and which key file \
                             or XAGENT_CONNECTOR_API_KEY was used)",
                            r.status().as_u16()
                        ),
                    },
                    Error::Http(r) => {
                        failed(format!("the connector refused the WebSocket: HTTP {}", r.status().as_u16()))
                    }
                    other => failed(format!("WebSocket to {addr}: {other}")),
                }
            })?;
        Ok(Session { ws, n: 0, deadline })
    }

    /// Sends one request and waits for the reply carrying its `request_id`; other packets (progress, pushes) are
    /// skipped. An `error` packet or an ack with a top-level `error` is `Err((code, message))`.
    async fn request(&mut self, kind: &str, channel: Option<&str>, payload: Value) -> Result<Value, Failure> {
        self.n += 1;
        let rid = format!("req_cli_{}_{}", crate::protocol::ids::random_hex(4), self.n);
        let mut p = json!({"schema": crate::protocol::PACKET_SCHEMA,
                           "packet_id": format!("pkt_cli_{}_{}", crate::protocol::ids::random_hex(4), self.n),
                           "request_id": rid, "type": kind, "time": crate::protocol::now_ms(), "payload": payload});
        if let Some(c) = channel {
            p["connector_channel_id"] = json!(c);
        }
        let deadline = self.deadline;
        let work = async {
            self.ws.send(Message::text(p.to_string())).await.map_err(|e| Failure::io(format!("send {kind}: {e}")))?;
            loop {
                let msg = self
                    .ws
                    .next()
                    .await
                    .ok_or_else(|| Failure::io(format!("the connector closed the connection during {kind}")))?
                    .map_err(|e| Failure::io(format!("during {kind}: {e}")))?;
                let text = match msg {
                    Message::Text(t) => t,
                    Message::Close(f) => {
                        let why = f.map(|f| format!(" ({} {})", u16::from(f.code), f.reason)).unwrap_or_default();
                        return Err(Failure::io(format!("the connector closed the connection during {kind}{why}")));
                    }
                    _ => continue,
                };
                let v: Value = serde_json::from_str(text.as_str())
                    .map_err(|e| Failure::io(format!("the connector sent something that is not JSON: {e}")))?;
                if v["request_id"] != json!(rid) {
                    continue;
                }
                if let Some(err) = v.get("error").filter(|e| !e.is_null()).or_else(|| {
                    (v["type"] == "error")
                        .then(|| v.get("payload").and_then(|p| p.get("error")).unwrap_or(&v["payload"]))
                }) {
                    return Err(Failure::from_error(err));
                }
                return Ok(v);
            }
        };
        tokio::time::timeout_at(deadline.into(), work)
            .await
            .map_err(|_| Failure::io(format!("no answer to {kind} before the timeout (--timeout)")))?
    }

    /// Gives the phone back and closes the channel. `channel.close` alone only closes the route (§8.5): the
    /// binding would outlive the call for the instance's lease grace (an hour by default) and keep the phone
    /// from every other client, so `auth.logout` comes first.
    async fn close(mut self, channel: Option<&str>) {
        if let Some(ch) = channel {
            // Bounded on its own: a failed or interrupted call must still give the phone back, and never hang.
            self.deadline = Instant::now() + Duration::from_secs(5);
            let _ = self.request("auth.logout", Some(ch), json!({})).await;
            let _ = self.request("channel.close", Some(ch), json!({})).await;
        }
        let _ = tokio::time::timeout(Duration::from_secs(2), self.ws.close(None)).await;
    }
}

/// A failure the connector reported (`code` = its error code) or a broken connection (`code` = None).
#[derive(Debug)]
pub struct Failure {
    pub code: Option<String>,
    pub message: String,
    /// The error's `details` (candidates, an observation_id to retry with), if any.
    pub details: Option<Value>,
}

impl Failure {
    fn io(message: String) -> Failure {
        Failure { code: None, message, details: None }
    }
    fn from_error(err: &Value) -> Failure {
        Failure {
            code: Some(err["code"].as_str().unwrap_or("error").to_owned()),
            message: err["message"].as_str().map_or_else(|| err.to_string(), str::to_owned),
            details: err.get("details").filter(|d| !d.is_null()).cloned(),
        }
    }
    fn into_call_error(self, during: &str) -> CallError {
        match self.code {
            Some(code) => failed(format!("{during}: {code}: {}", self.message)),
            None => failed(self.message),
        }
    }
}

pub struct CallInput<'a> {
    pub url: &'a str,
    pub api_key: Option<String>,
    pub tool: &'a str,
    pub arguments: Map<String, Value>,
    pub serial: Option<&'a str>,
    pub out: Option<&'a Path>,
    pub timeout: Duration,
}

/// Runs the call; prints the tool's result (JSON) on stdout. Returns the exit code.
///
/// Everything printed comes, in part, from the connector (error codes and messages, file names, URLs, the result)
/// and through it from a phone: it reaches the terminal only through [`terminal_text`] / [`terminal_json`], so a
/// hostile connector or phone cannot forge lines, erase them or retitle the terminal.
pub async fn run(input: CallInput<'_>) -> i32 {
    match call(input).await {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("error: {}", terminal_text(&e.message));
            e.code
        }
    }
}

async fn call(input: CallInput<'_>) -> Result<(), CallError> {
    let (addr, authority) = parse_url(input.url)?;
    let deadline = Instant::now() + input.timeout;
    let (mut s, ch) = open(addr, &authority, input.api_key.as_deref(), deadline).await?;
    // Ctrl-C / SIGTERM abandon the call but still release the phone (the connector hangs up the device command).
    let result = tokio::select! {
        r = invoke_on(&mut s, &ch, &input) => r,
        () = crate::run::signal() => Err(failed("interrupted; the phone was released".into())),
    };
    s.close(Some(&ch)).await;
    let result = result?;
    // Pretty for a person, one compact line for a program (a pipe, an agent's tool runner: −1/3 of the bytes).
    let text = if std::io::IsTerminal::is_terminal(&std::io::stdout()) {
        serde_json::to_string_pretty(&result)
    } else {
        serde_json::to_string(&result)
    };
    outln!("{}", terminal_json(&text.unwrap_or_default()));
    let files: Vec<&Value> = result["files"].as_array().map(|a| a.iter().collect()).unwrap_or_default();
    for (i, f) in files.iter().enumerate() {
        let Some(rel) = f["download_url"].as_str().filter(|u| u.starts_with('/')) else { continue };
        match input.out {
            Some(path) if i == 0 => {
                let n = download(addr, &authority, rel, path, deadline).await?;
                let name = f["filename"].as_str().unwrap_or("the file");
                eprintln!("{}", terminal_text(&format!("saved {name} ({n} bytes) to {}", path.display())));
            }
            _ => {
                let name = f["filename"].as_str().unwrap_or("the file");
                let line = format!(
                    "download {name} (one-time URL, valid until it is used or expires): http://{authority}{rel}"
                );
                eprintln!("{}", terminal_text(&line));
            }
        }
    }
    if input.out.is_some() && files.is_empty() {
        return Err(failed(format!("--out: {} returned no file to download", input.tool)));
    }
    Ok(())
}

/// Connects, says hello and opens a channel: the session and its channel id.
async fn open(
    addr: SocketAddr,
    authority: &str,
    key: Option<&str>,
    deadline: Instant,
) -> Result<(Session, String), CallError> {
    let mut s = Session::connect(addr, authority, key, deadline).await?;
    let hello = json!({"connector_card_id": crate::protocol::CONNECTOR_CARD_ID, "protocol_version": crate::protocol::PROTOCOL_VERSION,
                       "supported_profiles": [crate::protocol::DEVICE_PROFILE]});
    s.request("connector.hello", None, hello).await.map_err(|f| f.into_call_error("connector.hello"))?;
    let ack = s.request("channel.open", None, json!({})).await.map_err(|f| f.into_call_error("channel.open"))?;
    let Some(ch) = ack["connector_channel_id"].as_str().map(str::to_owned) else {
        return Err(failed("channel.open.ack carries no connector_channel_id".into()));
    };
    Ok((s, ch))
}

/// Binds a phone on `ch` and invokes the tool; the tool's `result`.
async fn invoke_on(s: &mut Session, ch: &str, input: &CallInput<'_>) -> Result<Value, CallError> {
    let phone = bind(s, ch, input.serial).await?;
    // Which connector and which phone: a command pasted from elsewhere says where it acted before it acts.
    eprintln!("{}", terminal_text(&format!("bound {phone} on the connector at {}", input.url.trim_end_matches('/'))));
    invoke(s, ch, input.tool, input.arguments.clone()).await.map_err(|f| f.into_call_error(input.tool))
}

/// `auth.start` (flow `adb_device`) on `ch`: any free online phone, or `serial`. The phone's name as the connector
/// gives it (model and masked serial).
async fn bind(s: &mut Session, ch: &str, serial: Option<&str>) -> Result<String, CallError> {
    let flow_input = serial.map_or_else(|| json!({}), |serial| json!({"serial": serial}));
    // Right after a phone appears the connector may still be verifying it (`device_offline`): retry briefly,
    // as `auth.start` is safe to repeat.
    let settle = Instant::now() + Duration::from_secs(10);
    loop {
        let r = s.request("auth.start", Some(ch), json!({"flow_id": "adb_device", "input": flow_input})).await;
        match r {
            Ok(ack) if ack["payload"]["status"] == "authenticated" => {
                let name = &ack["payload"]["connection_descriptor"]["target"]["display_name"];
                return Ok(name.as_str().unwrap_or("a phone").to_owned());
            }
            Ok(ack) => {
                let status = ack["payload"]["status"].as_str().unwrap_or("?").to_owned();
                let msg = ack["payload"]["message"].as_str().unwrap_or("").to_owned();
                return Err(failed(format!(
                    "auth.start: the phone is not bound (status {status}){}",
                    if msg.is_empty() { String::new() } else { format!(": {msg}") }
                )));
            }
            Err(f) if f.code.as_deref() == Some("device_offline") && Instant::now() < settle => {
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
            Err(f) => return Err(f.into_call_error("auth.start (binding a phone)")),
        }
    }
}

/// One `tool.invoke` on the bound channel `ch`: the tool's `result`.
async fn invoke(s: &mut Session, ch: &str, tool: &str, mut args: Map<String, Value>) -> Result<Value, Failure> {
    args.insert("connector_channel_id".into(), json!(ch));
    let context = json!({"tool_call_id": format!("call_cli_{}", crate::protocol::ids::random_hex(8))});
    let ack =
        s.request("tool.invoke", Some(ch), json!({"tool_id": tool, "arguments": args, "context": context})).await?;
    Ok(ack["payload"]["result"].clone())
}

/// Longest line `call --session` reads (an `android_input_text` of 1000 characters fits many times over).
const MAX_LINE_BYTES: usize = 64 << 10;

/// What stands for the newest `observation_id` in a `call --session` line (an effect's, an observe's, an error's
/// candidates'): a script cannot know the id an `android_observe` will answer, and acting by number needs it.
pub const LAST_OBSERVATION: &str = "@obs";

pub struct SessionInput<'a> {
    pub url: &'a str,
    pub api_key: Option<String>,
    pub serial: Option<&'a str>,
    /// Each call's own limit (binding included in the first).
    pub timeout: Duration,
}

/// `call --session`: one binding for many calls, one call per line of stdin (`TOOL_ID [JSON_OBJECT | key=value…]`),
/// one compact JSON line per call on stdout (the result, or `{"error": {code, message, details}}`). The phone and
/// its observations stay bound between calls, so `android_observe` then `element: {index, observation_id}` works
/// as SKILL.md teaches; end of input, Ctrl-C and SIGTERM give the phone back (`auth.logout`, `channel.close`).
/// Exit 0 at the end of input (each call's outcome is on its line), 1 when the session could not be opened or
/// broke, or was interrupted.
pub async fn run_session(input: SessionInput<'_>) -> i32 {
    match session(input).await {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("error: {}", terminal_text(&e.message));
            e.code
        }
    }
}

/// One line of input, parsed: the tool and its arguments.
pub fn parse_line(line: &str, last_observation: Option<&str>) -> Result<(String, Map<String, Value>), String> {
    let line = line.trim();
    let (tool, rest) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
    let rest = rest.trim();
    if input_schema(tool).is_none() {
        return Err(unknown_tool(tool));
    }
    let mut args = if rest.starts_with('{') {
        build_arguments(tool, Some(rest), &[])
    } else {
        // Quoted as on the one-shot command line (`key="a b"`, `element:='{"text":"OK"}'`): a shell's quoting.
        let words = super::words::split(rest)?;
        match words.as_slice() {
            [one] if one.starts_with('{') => build_arguments(tool, Some(one), &[]),
            _ => build_arguments(tool, None, &words),
        }
    }
    .map_err(|e| e.message)?;
    let mut missing = false;
    for v in args.values_mut() {
        replace_last_observation(v, last_observation, &mut missing);
    }
    if missing {
        return Err(format!("{LAST_OBSERVATION} stands for the latest observation_id, and no result carried one yet"));
    }
    Ok((tool.to_owned(), args))
}

/// The observation `@obs` stands for after `result`: an action's `effect.tree` is read after it settled, so its
/// `observation_id` is newer than the result's own (a scroll's found element, an observe's).
pub fn newest_observation(result: &Value) -> Option<&str> {
    result["effect"]["tree"]["observation_id"].as_str().or_else(|| result["observation_id"].as_str())
}

fn replace_last_observation(v: &mut Value, last: Option<&str>, missing: &mut bool) {
    match v {
        Value::String(s) if s == LAST_OBSERVATION => match last {
            Some(id) => *s = id.to_owned(),
            None => *missing = true,
        },
        Value::Array(a) => a.iter_mut().for_each(|v| replace_last_observation(v, last, missing)),
        Value::Object(m) => m.values_mut().for_each(|v| replace_last_observation(v, last, missing)),
        _ => {}
    }
}

/// Reads stdin on a thread of its own (tokio's stdin would keep the runtime from ending while it blocks), one
/// bounded line at a time; `None` at the end of input.
fn stdin_lines() -> tokio::sync::mpsc::Receiver<Result<String, String>> {
    let (tx, rx) = tokio::sync::mpsc::channel(1);
    std::thread::spawn(move || {
        use std::io::{BufRead, Read};
        let mut stdin = std::io::stdin().lock();
        loop {
            let mut buf = Vec::new();
            match stdin.by_ref().take(MAX_LINE_BYTES as u64 + 1).read_until(b'\n', &mut buf) {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
            let line = if buf.len() > MAX_LINE_BYTES && buf.last() != Some(&b'\n') {
                // Skip the rest of the long line.
                let mut rest = Vec::new();
                let _ = stdin.read_until(b'\n', &mut rest);
                Err(format!("the line is longer than {MAX_LINE_BYTES} bytes"))
            } else {
                String::from_utf8(buf).map_err(|_| "the line is not UTF-8".to_owned())
            };
            if tx.blocking_send(line).is_err() {
                return;
            }
        }
    });
    rx
}

/// Writes one line to stdout and flushes it (the reader waits for it); `false` once stdout is gone.
fn emit(line: &str) -> bool {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    out.write_all(terminal_json(line).as_bytes()).and_then(|()| out.write_all(b"\n")).and_then(|()| out.flush()).is_ok()
}

async fn session(input: SessionInput<'_>) -> Result<(), CallError> {
    let (addr, authority) = parse_url(input.url)?;
    let (mut s, ch) = open(addr, &authority, input.api_key.as_deref(), Instant::now() + input.timeout).await?;
    s.deadline = Instant::now() + input.timeout;
    let bound = tokio::select! {
        r = bind(&mut s, &ch, input.serial) => r,
        () = crate::run::signal() => Err(failed("interrupted; the phone was released".into())),
    };
    let phone = match bound {
        Ok(p) => p,
        Err(e) => {
            s.close(Some(&ch)).await;
            return Err(e);
        }
    };
    eprintln!(
        "{}",
        terminal_text(&format!(
            "bound {phone} on the connector at {}; one call per line: TOOL_ID [JSON_OBJECT | key=value…] \
             ({LAST_OBSERVATION} = the newest observation_id); end of input or Ctrl-C gives the phone back",
            input.url.trim_end_matches('/')
        ))
    );
    let mut lines = stdin_lines();
    let mut last_observation: Option<String> = None;
    let outcome = loop {
        let line = tokio::select! {
            l = lines.recv() => l,
            () = crate::run::signal() => break Err(failed("interrupted; the phone was released".into())),
        };
        let Some(line) = line else { break Ok(()) };
        let parsed = line.and_then(|l| {
            let t = l.trim();
            if t.is_empty() || t.starts_with('#') {
                return Ok(None);
            }
            parse_line(t, last_observation.as_deref()).map(Some)
        });
        let (tool, args) = match parsed {
            Ok(Some(x)) => x,
            Ok(None) => continue,
            Err(message) => {
                if !emit(&json!({"error": {"code": null, "message": message}}).to_string()) {
                    break Ok(());
                }
                continue;
            }
        };
        s.deadline = Instant::now() + input.timeout;
        let r = tokio::select! {
            r = invoke(&mut s, &ch, &tool, args) => r,
            () = crate::run::signal() => break Err(failed("interrupted; the phone was released".into())),
        };
        let text = match r {
            Ok(result) => {
                if let Some(id) = newest_observation(&result) {
                    last_observation = Some(id.to_owned());
                }
                for f in result["files"].as_array().into_iter().flatten() {
                    let (Some(rel), name) = (f["download_url"].as_str(), f["filename"].as_str()) else { continue };
                    let line =
                        format!("download {} (one-time URL): http://{authority}{rel}", name.unwrap_or("the file"));
                    eprintln!("{}", terminal_text(&line));
                }
                result.to_string()
            }
            Err(f) if f.code.is_none() => break Err(failed(f.message)),
            Err(f) => {
                // An error's candidates belong to its own observation: `@obs` picks one of them.
                if let Some(id) = f.details.as_ref().and_then(|d| d["observation_id"].as_str()) {
                    last_observation = Some(id.to_owned());
                }
                let mut e = json!({"code": f.code, "message": f.message});
                if let Some(d) = f.details {
                    e["details"] = d;
                }
                json!({"error": e}).to_string()
            }
        };
        if !emit(&text) {
            break Ok(());
        }
    };
    s.close(Some(&ch)).await;
    outcome
}

/// `call --list`: every tool this binary knows, one line each (id, then its title), opt-in ones marked.
pub fn list() -> Vec<String> {
    let adb = crate::device::adb::AdbBackend::new(Vec::new());
    let all = registry_with_everything(&adb);
    let default = crate::tools::Registry::device_tools(&adb);
    let width = all.ids().map(str::len).max().unwrap_or(0);
    all.ids()
        .filter_map(|id| all.spec(id))
        .map(|spec| {
            let opt_in =
                if default.spec(spec.id).is_none() { " (opt-in: the operator's policy enables it)" } else { "" };
            format!("{:width$}  {}{opt_in}", spec.id, spec.title)
        })
        .collect()
}

/// The usage error of a tool id this binary does not know, with the nearest ones.
pub fn unknown_tool(tool: &str) -> String {
    let adb = crate::device::adb::AdbBackend::new(Vec::new());
    let reg = registry_with_everything(&adb);
    let shown: String = tool.chars().take(64).collect();
    format!(
        "unknown tool {shown:?}; {} (`call --list` lists them)",
        crate::tools::suggest::did_you_mean(&shown, reg.ids())
    )
}

/// The file `--out` writes before it is complete: a random name beside the target (`.NAME.<random>.part`), created
/// with create-new semantics and mode 0600 (`store::private::new_file_options`: `O_CREAT|O_EXCL`, which also
/// refuses to follow a symlink), removed when dropped unless it was renamed over the target. A predictable name
/// opened following symlinks (the old `NAME.part-<pid>`) let anyone who can write the target's directory plant a
/// link there and have `call` — often run as root, the key being root's — overwrite the file it points to.
struct PartFile {
    path: std::path::PathBuf,
    kept: bool,
}

impl PartFile {
    fn create(target: &Path) -> std::io::Result<(PartFile, tokio::fs::File)> {
        let dir = target.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
        let name = target.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let path = dir.join(format!(".{name}.{}.part", crate::protocol::ids::random_hex(8)));
        let file = crate::store::private::new_file_options().open(&path)?;
        Ok((PartFile { path, kept: false }, tokio::fs::File::from_std(file)))
    }

    /// Renames the complete file over `target` (a symlink there is replaced, never followed).
    async fn finish(mut self, target: &Path) -> std::io::Result<()> {
        tokio::fs::rename(&self.path, target).await?;
        self.kept = true;
        Ok(())
    }
}

impl Drop for PartFile {
    /// Every other way out — an error, a short body, the timeout dropping the download — removes the part file.
    fn drop(&mut self) {
        if !self.kept {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// GET of a one-time download URL into `path` (written to a [`PartFile`] beside it, renamed when complete).
async fn download(
    addr: SocketAddr,
    authority: &str,
    rel: &str,
    path: &Path,
    deadline: Instant,
) -> Result<u64, CallError> {
    if rel.contains(|c: char| c.is_whitespace() || c.is_control()) {
        // It goes into the request line: a connector's URL must not add headers or requests of its own.
        return Err(failed(format!("--out: the connector's download URL {rel:?} is not a URL path")));
    }
    let work = async {
        let mut s = tokio::net::TcpStream::connect(addr).await.map_err(|e| format!("connect: {e}"))?;
        let req = format!("GET {rel} HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\n\r\n");
        s.write_all(req.as_bytes()).await.map_err(|e| e.to_string())?;
        // The head, byte-bounded; whatever body bytes came with it are kept.
        let mut buf = Vec::new();
        let head_end = loop {
            if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break i;
            }
            if buf.len() > MAX_HEAD_BYTES {
                return Err("the response head is too long".to_owned());
            }
            let mut chunk = [0u8; 4096];
            let n = s.read(&mut chunk).await.map_err(|e| e.to_string())?;
            if n == 0 {
                return Err("the connection closed before the response head".to_owned());
            }
            buf.extend_from_slice(&chunk[..n]);
        };
        let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
        let status: u16 = head.split_whitespace().nth(1).and_then(|c| c.parse().ok()).ok_or("no HTTP status")?;
        if status != 200 {
            return Err(format!("HTTP {status} (the URL is one-time and expires; call the tool again)"));
        }
        let len: u64 = head
            .lines()
            .find_map(|l| l.split_once(':').filter(|(k, _)| k.eq_ignore_ascii_case("content-length")))
            .and_then(|(_, v)| v.trim().parse().ok())
            .ok_or("no Content-Length in the answer")?;
        if len > MAX_DOWNLOAD_BYTES {
            return Err(format!("the file is {len} bytes, over the {MAX_DOWNLOAD_BYTES}-byte limit of --out"));
        }
        let (part, mut f) = PartFile::create(path).map_err(|e| format!("a temporary file beside it: {e}"))?;
        let body = &buf[head_end + 4..];
        let first = body.len().min(usize::try_from(len).unwrap_or(usize::MAX));
        let write = async {
            f.write_all(&body[..first]).await?;
            let rest = len - first as u64;
            let copied = tokio::io::copy(&mut s.take(rest), &mut f).await?;
            f.flush().await?;
            Ok::<u64, std::io::Error>(first as u64 + copied)
        };
        match write.await {
            Ok(n) if n == len => {}
            Ok(n) => return Err(format!("the connection ended after {n} of {len} bytes")),
            Err(e) => return Err(e.to_string()),
        }
        drop(f);
        part.finish(path).await.map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(len)
    };
    tokio::time::timeout_at(deadline.into(), work)
        .await
        .map_err(|_| failed("--out: the download did not finish before the timeout".into()))?
        .map_err(|e| failed(format!("--out {}: {e}", path.display())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_are_typed_by_the_tool_schema() {
        let w = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let a = build_arguments("android_tap", None, &w(&["x=100", "y=200"])).unwrap();
        assert_eq!(Value::Object(a), json!({"x": 100, "y": 200}));
        // Text stays text even when it looks like a number.
        let a = build_arguments("android_input_text", None, &w(&["text=123"])).unwrap();
        assert_eq!(a["text"], json!("123"));
        let a = build_arguments("android_tap", Some(r#"{"x": 1, "y": 2}"#), &w(&["element:={\"text\":\"OK\"}", "y=5"]))
            .unwrap();
        assert_eq!(Value::Object(a), json!({"x": 1, "y": 5, "element": {"text": "OK"}}));
        // Unknown tool: inferred.
        let a = build_arguments("no_such_tool", None, &w(&["a=1", "b=true", "c=1.5", "d=x"])).unwrap();
        assert_eq!(Value::Object(a), json!({"a": 1, "b": true, "c": 1.5, "d": "x"}));
        for bad in ["x", "=1", "x:=nope"] {
            assert_eq!(build_arguments("android_tap", None, &w(&[bad])).unwrap_err().code, exit::USAGE, "{bad}");
        }
        assert_eq!(build_arguments("android_tap", Some("[1]"), &[]).unwrap_err().code, exit::USAGE);
    }

    #[test]
    fn urls() {
        assert_eq!(parse_url("http://127.0.0.1:8790").unwrap().1, "127.0.0.1:8790");
        assert_eq!(parse_url("http://127.0.0.1:8790/").unwrap().0.port(), 8790);
        assert_eq!(parse_url("http://localhost").unwrap().0.port(), 80);
        for bad in ["127.0.0.1:8790", "https://x:1", "http://a:1/ws", "http://", "ftp://a:1"] {
            assert_eq!(parse_url(bad).unwrap_err().code, exit::USAGE, "{bad}");
        }
    }
}
