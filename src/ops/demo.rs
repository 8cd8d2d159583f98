//! `xagent-adb-connector demo`: simulated phones + a private adb server + the connector, all on loopback, then a
//! scripted xAgent session that drives a phone through the real WebSocket — so a newcomer sees the whole path work
//! without a phone. It keeps serving until Ctrl-C, for poking at it with curl or a WebSocket client.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::Message;

use super::adb_process::{adb_version, AdbProcess};
use super::out::sayln;
use crate::device::host;
use crate::sim::{SimConfig, SimPhone};

/// The simulated phones' `ro.product.model`: a real model name. adb lists a model with every character that is
/// not a letter or digit replaced by `_` (`devices -l`: `model:Pixel_7`), and `devices` turns `_` back into spaces,
/// so a name like "Pixel 7 (sim 2)" came out as "Pixel 7  sim 2"; the serial tells the phones apart.
pub const SIM_MODEL: &str = "Pixel 7";

/// One of the demo's phones: what it says it is (`ro.product.model`, `ro.product.manufacturer`, the release and
/// SDK level) and its screen.
pub struct DemoPhone {
    pub model: &'static str,
    pub manufacturer: &'static str,
    pub android_version: &'static str,
    pub sdk: u32,
    pub width: u32,
    pub height: u32,
    pub density: u32,
}

/// The demo's phones, in order (more phones than these repeat them; the serial tells them apart): phones that
/// differ, as on a real bench — name, screen and Android version, so the wall and a bind by constraints show
/// something. Marketing names with letters, digits and spaces only (see [`SIM_MODEL`]): Samsung's real
/// `ro.product.model` is a code like `SM-A546B`, which adb would list as `SM_A546B`.
pub const DEMO_PHONES: [DemoPhone; 3] = [
    DemoPhone {
        model: SIM_MODEL,
        manufacturer: "Google",
        android_version: "14",
        sdk: 34,
        width: 1080,
        height: 2400,
        density: 420,
    },
    DemoPhone {
        model: "Galaxy A54",
        manufacturer: "samsung",
        android_version: "13",
        sdk: 33,
        width: 1080,
        height: 2340,
        density: 450,
    },
    DemoPhone {
        model: "Redmi 12C",
        manufacturer: "Xiaomi",
        android_version: "12",
        sdk: 31,
        width: 720,
        height: 1650,
        density: 320,
    },
];

impl DemoPhone {
    fn config(&self) -> SimConfig {
        SimConfig {
            model: self.model.into(),
            manufacturer: self.manufacturer.into(),
            android_version: self.android_version.into(),
            sdk: self.sdk,
            screen_width: self.width,
            screen_height: self.height,
            density: self.density,
            animation_ms: DEMO_ANIMATION_MS,
            ..SimConfig::default()
        }
    }
}

/// The demo's connector address when `--listen` is not given; when it is taken (an installed connector listens
/// there, or another demo), the demo takes a free port instead and says so.
const DEFAULT_LISTEN: &str = "127.0.0.1:8790";

fn free_port() -> std::io::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// Everything the demo started; dropping it stops the adb server (the phones and connector stop with the runtime).
pub struct Demo {
    pub adb: AdbProcess,
    pub phones: Vec<SimPhone>,
    pub adb_server: std::net::SocketAddrV4,
}

/// How long a screen change animates on the demo's phones: long enough that settling (tools::settle) has motion
/// to wait for, as on a real phone (Android's default activity transition is about 300 ms).
const DEMO_ANIMATION_MS: u32 = 300;

/// The PIN of the demo phones' lock screen (printed in the guide).
pub const DEMO_PIN: &str = "1234";

/// Starts the phones and the private adb server and waits until the server lists every phone online.
pub async fn start_phones(n: usize, data_dir: &std::path::Path) -> Result<Demo, String> {
    let version = adb_version().ok_or(
        "the demo drives the phones through a real adb server, and no `adb` is on PATH: install it with \
         `apt-get install -y adb` (Debian/Ubuntu/Raspberry Pi OS)",
    )?;
    let mut phones = Vec::new();
    for i in 0..n.max(1) {
        let cfg = DEMO_PHONES[i % DEMO_PHONES.len()].config();
        let phone = SimPhone::start("127.0.0.1:0".parse().expect("literal"), cfg).await.map_err(|e| e.to_string())?;
        // POWER locks it; the guide prints the PIN (a person types it: the connector never types credentials).
        phone.set_pin_lock(DEMO_PIN);
        phones.push(phone);
    }
    let port = free_port().map_err(|e| e.to_string())?;
    let home = data_dir.join("adb-home");
    let serials: Vec<String> = phones.iter().map(SimPhone::serial).collect();
    let adb = tokio::task::spawn_blocking(move || -> Result<AdbProcess, String> {
        let adb = AdbProcess::start(port, &home)?;
        for s in &serials {
            let (_, out) = adb.run(&["connect", s])?;
            if !out.contains("connected to") {
                return Err(format!("adb connect {s}: {}", out.trim()));
            }
        }
        Ok(adb)
    })
    .await
    .map_err(|e| e.to_string())??;
    let server: std::net::SocketAddrV4 = format!("127.0.0.1:{port}").parse().expect("literal");
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let online =
            host::devices(SocketAddr::V4(server)).await.map(|l| l.iter().filter(|d| d.state == "device").count());
        if online.as_ref().is_ok_and(|&n| n == phones.len()) {
            break;
        }
        if Instant::now() > deadline {
            return Err(format!("the simulated phones did not come online in the adb server ({online:?})"));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    sayln!("  {version}; private adb server on {server} with {} simulated phone(s)", phones.len());
    Ok(Demo { adb, phones, adb_server: server })
}

/// One scripted xAgent session over the connector's WebSocket: packets in the protocol's envelope, answers matched
/// by request id.
struct Session {
    ws: tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>,
    /// Prefix of packet and request ids (the tour's and the agent's differ, for reading the audit log).
    name: &'static str,
    n: u32,
    channel: String,
}

impl Session {
    async fn open(addr: SocketAddr, key: Option<&str>, name: &'static str) -> Result<Session, String> {
        let mut req = format!("ws://{addr}/ws").into_client_request().map_err(|e| e.to_string())?;
        req.headers_mut().insert("Sec-WebSocket-Protocol", crate::protocol::SUBPROTOCOL.parse().expect("valid header"));
        if let Some(k) = key {
            let v = format!("Bearer {k}").parse().map_err(|_| "the API key is not a valid header value".to_owned())?;
            req.headers_mut().insert("Authorization", v);
        }
        let (ws, _) = tokio_tungstenite::connect_async(req).await.map_err(|e| format!("websocket: {e}"))?;
        Ok(Session { ws, name, n: 0, channel: String::new() })
    }

    /// Sends one packet and waits (30 s at most) for the answer to it; an error answer is an `Err`.
    async fn send(&mut self, kind: &str, payload: Value) -> Result<Value, String> {
        self.n += 1;
        let rid = format!("req_{}_{}", self.name, self.n);
        let mut p = json!({"schema": crate::protocol::PACKET_SCHEMA, "packet_id": format!("pkt_{}_{}", self.name, self.n),
                           "request_id": rid, "type": kind, "payload": payload});
        if !self.channel.is_empty() {
            p["connector_channel_id"] = json!(self.channel);
        }
        self.ws.send(Message::text(p.to_string())).await.map_err(|e| e.to_string())?;
        loop {
            let msg = tokio::time::timeout(Duration::from_secs(30), self.ws.next())
                .await
                .map_err(|_| "no answer within 30 s".to_owned())?
                .ok_or("connection closed")?
                .map_err(|e| e.to_string())?;
            if let Message::Text(t) = msg {
                let v: Value = serde_json::from_str(t.as_str()).map_err(|e| e.to_string())?;
                if v["request_id"] == json!(rid) {
                    if let Some(err) = v.get("error") {
                        return Err(format!("{} failed: {err}", v["type"]));
                    }
                    return Ok(v);
                }
            }
        }
    }

    /// hello → channel.open → auth.start adb_device (any free phone); the bind's descriptor.
    async fn bind(&mut self) -> Result<Value, String> {
        let hello = json!({"connector_card_id": "device.adb", "protocol_version": "3.0", "supported_profiles": ["xagent.device.v1"]});
        self.send("connector.hello", hello).await?;
        let ack = self.send("channel.open", json!({})).await?;
        self.channel = ack["connector_channel_id"].as_str().unwrap_or_default().to_owned();
        let ack = self.send("auth.start", json!({"flow_id": "adb_device"})).await?;
        Ok(ack["payload"]["connection_descriptor"].clone())
    }

    /// One tool call on the bound phone; its result.
    async fn tool(&mut self, tool: &str, args: Value) -> Result<Value, String> {
        let mut a = args;
        a["connector_channel_id"] = json!(self.channel);
        let ack = self.send("tool.invoke", json!({"tool_id": tool, "arguments": a})).await?;
        Ok(ack["payload"]["result"].clone())
    }

    /// Gives the phone back and closes the socket.
    async fn close(mut self) {
        let _ = self.send("auth.logout", json!({})).await;
        let _ = self.ws.close(None).await;
    }
}

/// The number the home screen's "Count: N" shows in a `android_ui_dump` result (0 when not shown: Increment from
/// the start).
fn counter_of(dump: &Value) -> u32 {
    let elements = dump["elements"].as_array().map(Vec::as_slice).unwrap_or_default();
    let text = elements.iter().find_map(|e| e["text"].as_str().and_then(|t| t.strip_prefix("Count: ")));
    text.and_then(|n| n.trim().parse().ok()).unwrap_or(0).min(5)
}

/// The centre of the element with `text` in a `android_ui_dump` result.
fn center_of(dump: &Value, text: &str) -> Result<(Value, Value), String> {
    let elements = dump["elements"].as_array().map(Vec::as_slice).unwrap_or_default();
    let e = elements.iter().find(|e| e["text"] == text).ok_or(format!("no \"{text}\" in the UI dump"))?;
    Ok((e["center"][0].clone(), e["center"][1].clone()))
}

/// A scripted xAgent session: hello → channel.open → auth.start → ui_dump → tap → ui_wait, then it tidies up as a
/// careful agent does — Reset, wait for "Count: 0", Home — so the phone is as it found it. Prints each step.
pub async fn tour(addr: SocketAddr, key: Option<&str>) -> Result<(), String> {
    let mut s = Session::open(addr, key, "demo").await?;
    let hello = json!({"connector_card_id": "device.adb", "protocol_version": "3.0", "supported_profiles": ["xagent.device.v1"]});
    let ack = s.send("connector.hello", hello).await?;
    sayln!("  → connector.hello            connector_id {}", ack["payload"]["connector_id"].as_str().unwrap_or("?"));
    let ack = s.send("channel.open", json!({})).await?;
    s.channel = ack["connector_channel_id"].as_str().unwrap_or_default().to_owned();
    sayln!(
        "  → channel.open               {} (status {})",
        s.channel,
        ack["payload"]["connection_descriptor"]["connection"]["status"]
    );
    let ack = s.send("auth.start", json!({"flow_id": "adb_device"})).await?;
    let d = &ack["payload"]["connection_descriptor"];
    sayln!(
        "  → auth.start adb_device      bound {} (status {})",
        d["target"]["display_name"],
        d["connection"]["status"]
    );
    let dump = s.tool("android_ui_dump", json!({"only_interactive": true})).await?;
    let (x, y) = center_of(&dump, "Increment")?;
    sayln!(
        "  → android_ui_dump            {} interactive element(s); \"Increment\" at [{x},{y}]",
        dump["elements"].as_array().map_or(0, Vec::len)
    );
    s.tool("android_tap", json!({"x": x, "y": y})).await?;
    sayln!("  → android_tap                ({x}, {y})");
    let res = s.tool("android_ui_wait", json!({"text": "Count: 1"})).await?;
    sayln!("  → android_ui_wait \"Count: 1\"  found after {} ms", res["waited_ms"]);
    let (x, y) = center_of(&dump, "Reset")?;
    s.tool("android_tap", json!({"x": x, "y": y})).await?;
    s.tool("android_ui_wait", json!({"text": "Count: 0"})).await?;
    sayln!("  → android_tap \"Reset\"         ({x}, {y}); \"Count: 0\" again");
    s.tool("android_key", json!({"key": "HOME", "settle": false})).await?;
    sayln!("  → android_key HOME           the phone is as the tour found it");
    s.close().await;
    Ok(())
}

/// How often the demo's agent acts after the tour: slow enough to watch on the wall, fast enough to see.
const AGENT_STEP: Duration = Duration::from_secs(2);

/// The demo's agent, bound: its session and where Increment and Reset are on its phone.
struct Agent {
    s: Session,
    inc: (Value, Value),
    reset: (Value, Value),
}

impl Agent {
    /// Binds a free phone and reads its screen (before the hand-over is printed, so the phone it holds is already
    /// held when the newcomer looks).
    async fn bind(addr: SocketAddr, key: Option<&str>) -> Result<Agent, String> {
        let mut s = Session::open(addr, key, "agent").await?;
        s.bind().await?;
        let dump = s.tool("android_ui_dump", json!({"only_interactive": true})).await?;
        let (inc, reset) = (center_of(&dump, "Increment")?, center_of(&dump, "Reset")?);
        Ok(Agent { s, inc, reset })
    }

    /// After the tour the agent keeps its phone bound and acts on it every [`AGENT_STEP`] — Increment up to 5, then
    /// Reset, reading the counter back each time — so the wall shows a held phone and a changing screen. When
    /// `stop` turns true it resets the counter, presses Home and gives the phone back. While an operator has taken
    /// the phone over on the wall (`operator_control`) it waits, and on "Return to agent" reads the counter and goes
    /// on. Other errors end it quietly (the phone released on the wall, the connector stopping): it is a show.
    async fn keep_acting(self, mut stop: tokio::sync::watch::Receiver<bool>) {
        let Agent { mut s, inc, reset } = self;
        let run = async {
            let mut count = 0;
            loop {
                tokio::select! {
                    _ = tokio::time::sleep(AGENT_STEP) => {}
                    _ = stop.wait_for(|v| *v) => break,
                }
                let (xy, next) = if count < 5 { (&inc, count + 1) } else { (&reset, 0) };
                let step = async {
                    s.tool("android_tap", json!({"x": xy.0, "y": xy.1})).await?;
                    s.tool("android_ui_wait", json!({"text": format!("Count: {next}"), "timeout_ms": 3000})).await
                };
                match step.await {
                    Ok(_) => count = next,
                    Err(e) if e.contains("operator_control") => {
                        // Taken over: wait, then start again from what the operator left on the screen.
                        tracing::info!("the demo's agent waits: an operator has the phone");
                        count = loop {
                            tokio::select! {
                                _ = tokio::time::sleep(AGENT_STEP) => {}
                                _ = stop.wait_for(|v| *v) => return Ok(()),
                            }
                            match s.tool("android_ui_dump", json!({"only_interactive": false})).await {
                                Ok(d) => break counter_of(&d),
                                Err(e) if e.contains("operator_control") => continue,
                                Err(e) => return Err(e),
                            }
                        };
                    }
                    Err(e) => return Err(e),
                }
            }
            if count > 0 {
                s.tool("android_tap", json!({"x": reset.0, "y": reset.1})).await?;
            }
            s.tool("android_key", json!({"key": "HOME", "settle": false})).await?;
            Ok::<(), String>(())
        };
        if let Err(e) = run.await {
            tracing::info!(error = %e, "the demo's agent stopped");
        }
        s.close().await;
    }
}

/// The demo's state directory: the one given with `--data-dir` (kept), or a fresh temporary one that is removed
/// when the demo ends, so a demo never leaves files in the checkout.
struct DemoDir {
    path: PathBuf,
    remove: bool,
}

impl DemoDir {
    fn new(given: Option<PathBuf>) -> DemoDir {
        match given {
            Some(path) => DemoDir { path, remove: false },
            None => DemoDir {
                path: std::env::temp_dir().join(format!("xagent-adb-demo-{}", crate::protocol::ids::random_hex(8))),
                remove: true,
            },
        }
    }
}

impl Drop for DemoDir {
    fn drop(&mut self) {
        if self.remove {
            let _ = std::fs::remove_dir_all(&self.path);
        }
    }
}

/// `demo`: phones + adb server + connector + the scripted tour, then serve until Ctrl-C.
pub async fn run(args: crate::cli::DemoArgs) -> i32 {
    let api_key = match crate::config::resolve_api_key(args.api_key_file.as_deref()) {
        // Only the file: the demo is never protected by a key that happens to be in the environment.
        Ok(k) if args.api_key_file.is_some() => k,
        Ok(_) => None,
        Err(e) => {
            eprintln!("error: {}", e.message);
            return e.code;
        }
    };
    let listen = args.listen.unwrap_or_else(|| DEFAULT_LISTEN.parse().expect("literal"));
    // Without a key, on a network address every host could drive its phones (and the operator's).
    if let Err(e) = crate::config::check_exposure(listen, api_key.is_some(), false) {
        eprintln!("error: the demo without --api-key-file listens on loopback only (--listen {listen})");
        return e.code;
    }
    let dir = DemoDir::new(args.data_dir.clone());
    sayln!("xagent-adb-connector demo — everything on loopback, no phone needed");
    sayln!("  state in {}{}", dir.path.display(), if dir.remove { " (temporary, removed at exit)" } else { "" });
    // The terminal keeps the guide; the log (a line a second while the agent acts) goes to a file beside the state.
    let log = dir.path.join("demo.log");
    match std::fs::create_dir_all(&dir.path).and_then(|()| super::log_sink::to_file(&log)) {
        Ok(()) => sayln!("  its log in {} (RUST_LOG=debug for more)\n", log.display()),
        Err(e) => sayln!("  (its log stays on stderr: {}: {e})\n", log.display()),
    }
    let demo = match start_phones(args.phones as usize, &dir.path).await {
        Ok(d) => d,
        Err(e) => {
            eprintln!("error: {e}");
            return crate::config::exit::CONFIG;
        }
    };
    let resolved = |listen| crate::config::Resolved {
        capture_compression: true,
        capture_streams: 4,
        phone_helper: true,
        notify_url: None,
        serve: crate::config::ServeConfig {
            listen,
            data_dir: Some(dir.path.clone()),
            api_key: api_key.clone(),
            allow_serials: Vec::new(),
            labels: Default::default(),
            lease_grace: Duration::from_secs(3600),
            max_message_bytes: 1 << 20,
            drain_timeout: Duration::from_secs(10),
            limits: Default::default(),
            allowed_hosts: Vec::new(),
            audit: Default::default(),
        },
        transfer: crate::config::TransferConfig::default(),
        adb_servers: vec![demo.adb_server],
        policy: crate::policy::Policy::default(),
        key_file: args.api_key_file.clone(),
        wall: crate::wall::WallConfig::default(),
        recovery: Default::default(),
    };
    let mut started = crate::run::start_adb(resolved(listen)).await;
    let mut moved = false;
    if matches!(&started, Err(e) if e.code == crate::config::exit::LISTEN) && args.listen.is_none() {
        // The default port is taken (on a Pi, by the installed connector): a demo still starts, on a free port.
        // An explicit --listen is the operator's choice and fails instead.
        started = crate::run::start_adb(resolved(SocketAddr::new(listen.ip(), 0))).await;
        moved = true;
    }
    let running = match started {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {}", e.message);
            return e.code;
        }
    };
    let addr = running.addr;
    if moved {
        sayln!("  {listen} is taken (another connector or demo?), so this demo listens on {addr}; --listen chooses");
    }
    // The tracker needs a moment to verify the phones.
    let deadline = Instant::now() + Duration::from_secs(15);
    while running.hub.backend().devices().iter().filter(|d| d.state == crate::device::DeviceState::Online).count()
        < demo.phones.len()
    {
        if Instant::now() > deadline {
            eprintln!("error: the connector did not see the simulated phones online");
            return crate::config::exit::FAILURE;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    sayln!("  connector on http://{addr}\n\nA scripted xAgent session over the real WebSocket:");
    if let Err(e) = tour(addr, api_key.as_deref()).await {
        eprintln!("error: the tour failed: {e}");
        return crate::config::exit::FAILURE;
    }
    let hand_over = HandOver {
        bin: invoked_as(),
        addr,
        adb_server: demo.adb_server,
        data_dir: &dir.path,
        key_file: args.api_key_file.as_deref(),
        temporary: dir.remove,
    };
    let (stop_agent, stopped) = tokio::sync::watch::channel(false);
    let agent = match Agent::bind(addr, api_key.as_deref()).await {
        Ok(a) => {
            sayln!(
                "\nA scripted agent now holds one phone and acts on it every {} s: watch it on the wall.",
                AGENT_STEP.as_secs()
            );
            tokio::spawn(a.keep_acting(stopped))
        }
        Err(e) => {
            sayln!("\n(the scripted agent could not start: {e})");
            tokio::spawn(async {})
        }
    };
    let guide = hand_over.text();
    sayln!("{guide}");
    sayln!("(Enter prints these lines again.)");
    // A thread of its own: a blocking stdin read cannot be cancelled, and the process ends without waiting for it.
    std::thread::spawn(move || {
        for _ in std::io::stdin().lines().map_while(Result::ok) {
            sayln!("{guide}");
        }
    });
    let trigger = running.trigger();
    tokio::spawn(async move {
        crate::run::signal().await;
        // The agent first tidies its phone up and gives it back, then the connector drains.
        let _ = stop_agent.send(true);
        let _ = tokio::time::timeout(Duration::from_secs(10), agent).await;
        let _ = trigger.send(true);
    });
    running.wait().await;
    let phones = demo.phones.len();
    drop(demo);
    let removed = if dir.remove { format!("; removed {}", dir.path.display()) } else { String::new() };
    drop(dir);
    sayln!(
        "\nStopped: the scripted agent gave its phone back, the connector on {addr} finished its calls, the \
         private adb server and the {phones} simulated phones ended{removed}."
    );
    0
}

/// How this binary was invoked (`target/release/xagent-adb-connector` under `cargo run`), so the printed commands
/// run as pasted from the same directory.
fn invoked_as() -> String {
    std::env::args().next().filter(|a| !a.is_empty()).unwrap_or_else(|| "xagent-adb-connector".into())
}

/// A word for a POSIX shell: unchanged when it is plain, else single-quoted.
pub fn shell_word(w: &str) -> String {
    let plain = !w.is_empty() && w.bytes().all(|b| b.is_ascii_alphanumeric() || b"/._-:=@%+,".contains(&b));
    if plain {
        w.to_owned()
    } else {
        format!("'{}'", w.replace('\'', "'\\''"))
    }
}

/// What the demo prints once it runs: ready-to-paste commands for its connector, adb server and state.
struct HandOver<'a> {
    bin: String,
    addr: SocketAddr,
    adb_server: std::net::SocketAddrV4,
    data_dir: &'a std::path::Path,
    key_file: Option<&'a std::path::Path>,
    temporary: bool,
}

impl HandOver<'_> {
    fn text(&self) -> String {
        let bin = shell_word(&self.bin);
        let (addr, adb) = (self.addr, self.adb_server);
        let dir = shell_word(&self.data_dir.display().to_string());
        let key = self.key_file.map(|k| shell_word(&k.display().to_string()));
        let key_flag = key.as_ref().map(|k| format!(" --api-key-file {k}")).unwrap_or_default();
        let bearer = key.as_ref().map(|k| format!("-H \"Authorization: Bearer $(head -n1 {k})\" ")).unwrap_or_default();
        let login = if let Some(k) = &key { format!(" (sign in with the key in {k})") } else { String::new() };
        let shot = shell_word(&self.data_dir.join("screen.jpg").display().to_string());
        let mut t = String::from("\nNow try it yourself; every line works as printed (Ctrl-C stops the demo):\n");
        t += &format!("  open http://{addr}/ in a browser: the device wall, live phones{login}\n");
        t += &format!("  {bin} devices --adb-server {adb} --data-dir {dir}\n");
        t += &format!("  {bin} doctor --adb-server {adb} --data-dir {dir} --listen {addr}{key_flag}\n");
        t += &format!("  {bin} audit tail --data-dir {dir}\n");
        t += &format!("  export XAGENT_DEMO_URL=http://{addr}   (the README's agent loop reads it)\n");
        // By element, not by point: a point on the text field would open the keyboard and renumber what
        // `observe` lists next.
        let increment = shell_word(r#"element:={"text":"Increment"}"#);
        t += &format!("  {bin} call android_tap {increment} --url http://{addr}{key_flag}\n");
        t += &format!("  {bin} call android_ui_dump only_interactive=true --url http://{addr}{key_flag}\n");
        t += &format!("  {bin} call android_screenshot --out {shot} --url http://{addr}{key_flag}\n");
        t += &format!("  curl -s http://{addr}/connector-card.json | head -40\n");
        t += "  Tasks an agent can finish on these phones (docs/commands.md, \"The demo world\"):\n";
        t += "    Settings: Network & internet > Internet (the Wi-Fi switch, networks); About phone (model, version, build)\n";
        t += "    android_open_url https://sim.example/start: news with articles, weather, and a login whose code\n";
        t += "      comes by SMS (a notification, and the Messages app)\n";
        t += &format!("    POWER locks a phone; its PIN is {DEMO_PIN} (take the phone over on the wall and type it)\n");
        t += &format!("  curl -s {bearer}http://{addr}/health\n");
        t += &format!(
            "  (`call --help` explains arguments; the phones' adb server is private: `adb -P {} devices -l`{})",
            adb.port(),
            if self.temporary { "; the state dir is removed when the demo stops" } else { "" }
        );
        t
    }
}

/// `sim`: simulated phones on consecutive ports until Ctrl-C.
pub async fn run_sims(args: crate::cli::SimArgs) -> i32 {
    let mut phones = Vec::new();
    let stride = if args.two_paths { 2 } else { 1 };
    for i in 0..args.count {
        let mut addr = args.listen;
        addr.set_port(args.listen.port().saturating_add(i * stride));
        let cfg = SimConfig { model: SIM_MODEL.into(), ..SimConfig::default() };
        let phone = match SimPhone::start(addr, cfg).await {
            Ok(p) => p,
            Err(e) => {
                eprintln!("error: cannot listen on {addr}: {e}");
                return crate::config::exit::LISTEN;
            }
        };
        sayln!("simulated phone {} listening on {} — `adb connect {}`", i + 1, phone.addr(), phone.serial());
        if args.two_paths {
            addr.set_port(addr.port().saturating_add(1));
            match phone.listen_also(addr).await {
                Ok(a) => sayln!("  the same phone also on {a} — `adb connect {a}` (ro.serialno {})", phone.serial()),
                Err(e) => {
                    eprintln!("error: cannot listen on {addr}: {e}");
                    return crate::config::exit::LISTEN;
                }
            }
        }
        phones.push(phone);
    }
    crate::run::signal().await;
    0
}
