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

pub struct DemoArgs {
    pub listen: SocketAddr,
    pub phones: usize,
    pub data_dir: PathBuf,
}

/// The simulated phones' `ro.product.model`: a real model name. adb lists a model with every character that is
/// not a letter or digit replaced by `_` (`devices -l`: `model:Pixel_7`), and `devices` turns `_` back into spaces,
/// so a name like "Pixel 7 (sim 2)" came out as "Pixel 7  sim 2"; the serial tells the phones apart.
pub const SIM_MODEL: &str = "Pixel 7";

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

/// Starts the phones and the private adb server and waits until the server lists every phone online.
pub async fn start_phones(n: usize, data_dir: &std::path::Path) -> Result<Demo, String> {
    let version = adb_version().ok_or(
        "the demo drives the phones through a real adb server, and no `adb` is on PATH: install it with \
         `apt-get install -y adb` (Debian/Ubuntu/Raspberry Pi OS)",
    )?;
    let mut phones = Vec::new();
    for _ in 0..n.max(1) {
        let cfg = SimConfig { model: SIM_MODEL.into(), animation_ms: DEMO_ANIMATION_MS, ..SimConfig::default() };
        phones.push(SimPhone::start("127.0.0.1:0".parse().expect("literal"), cfg).await.map_err(|e| e.to_string())?);
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

/// A scripted xAgent session: hello → channel.open → auth.start → ui_dump → tap → ui_wait. Prints each step.
pub async fn tour(addr: SocketAddr, key: Option<&str>) -> Result<(), String> {
    let mut req = format!("ws://{addr}/ws").into_client_request().map_err(|e| e.to_string())?;
    req.headers_mut().insert("Sec-WebSocket-Protocol", crate::protocol::SUBPROTOCOL.parse().expect("valid header"));
    if let Some(k) = key {
        let v = format!("Bearer {k}").parse().map_err(|_| "the API key is not a valid header value".to_owned())?;
        req.headers_mut().insert("Authorization", v);
    }
    let (mut ws, _) = tokio_tungstenite::connect_async(req).await.map_err(|e| format!("websocket: {e}"))?;
    let mut n = 0;
    let mut call = |kind: &str, channel: Option<&str>, payload: Value| {
        n += 1;
        let mut p = json!({"schema": crate::protocol::PACKET_SCHEMA, "packet_id": format!("pkt_demo_{n}"),
                           "request_id": format!("req_demo_{n}"), "type": kind, "payload": payload});
        if let Some(c) = channel {
            p["connector_channel_id"] = json!(c);
        }
        (p, format!("req_demo_{n}"))
    };
    async fn exchange(
        ws: &mut tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>,
        (p, rid): (Value, String),
    ) -> Result<Value, String> {
        ws.send(Message::text(p.to_string())).await.map_err(|e| e.to_string())?;
        loop {
            let msg = tokio::time::timeout(Duration::from_secs(30), ws.next())
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
    let hello = json!({"connector_card_id": "device.adb", "protocol_version": "3.0", "supported_profiles": ["xagent.device.v1"]});
    let ack = exchange(&mut ws, call("connector.hello", None, hello)).await?;
    sayln!("  → connector.hello            connector_id {}", ack["payload"]["connector_id"].as_str().unwrap_or("?"));
    let ack = exchange(&mut ws, call("channel.open", None, json!({}))).await?;
    let ch = ack["connector_channel_id"].as_str().unwrap_or_default().to_owned();
    sayln!(
        "  → channel.open               {ch} (status {})",
        ack["payload"]["connection_descriptor"]["connection"]["status"]
    );
    let ack = exchange(&mut ws, call("auth.start", Some(&ch), json!({"flow_id": "adb_device"}))).await?;
    let d = &ack["payload"]["connection_descriptor"];
    sayln!(
        "  → auth.start adb_device      bound {} (status {})",
        d["target"]["display_name"],
        d["connection"]["status"]
    );
    let invoke = |tool: &str, args: Value| {
        let mut a = args;
        a["connector_channel_id"] = json!(ch);
        json!({"tool_id": tool, "arguments": a})
    };
    let ack =
        exchange(&mut ws, call("tool.invoke", Some(&ch), invoke("android_ui_dump", json!({"only_interactive": true}))))
            .await?;
    let elements = ack["payload"]["result"]["elements"].as_array().cloned().unwrap_or_default();
    let button = elements.iter().find(|e| e["text"] == "Increment").ok_or("no Increment button in the UI dump")?;
    sayln!(
        "  → android_ui_dump            {} interactive element(s); \"Increment\" at {}",
        elements.len(),
        button["center"]
    );
    let (x, y) = (button["center"][0].clone(), button["center"][1].clone());
    exchange(&mut ws, call("tool.invoke", Some(&ch), invoke("android_tap", json!({"x": x, "y": y})))).await?;
    sayln!("  → android_tap                ({x}, {y})");
    let ack = exchange(&mut ws, call("tool.invoke", Some(&ch), invoke("android_ui_wait", json!({"text": "Count: 1"}))))
        .await?;
    sayln!("  → android_ui_wait \"Count: 1\"  found after {} ms", ack["payload"]["result"]["waited_ms"]);
    let _ = exchange(&mut ws, call("auth.logout", Some(&ch), json!({}))).await?;
    let _ = ws.close(None).await;
    Ok(())
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
    // Without a key, on a network address every host could drive its phones (and the operator's).
    if let Err(e) = crate::config::check_exposure(args.listen, api_key.is_some(), false) {
        eprintln!("error: the demo without --api-key-file listens on loopback only (--listen {})", args.listen);
        return e.code;
    }
    let dir = DemoDir::new(args.data_dir.clone());
    sayln!("xagent-adb-connector demo — everything on loopback, no phone needed");
    sayln!("  state in {}{}\n", dir.path.display(), if dir.remove { " (temporary, removed at exit)" } else { "" });
    let demo = match start_phones(args.phones as usize, &dir.path).await {
        Ok(d) => d,
        Err(e) => {
            eprintln!("error: {e}");
            return crate::config::exit::CONFIG;
        }
    };
    let resolved = crate::config::Resolved {
        capture_compression: true,
        capture_streams: 4,
        phone_helper: true,
        notify_url: None,
        serve: crate::config::ServeConfig {
            listen: args.listen,
            data_dir: Some(dir.path.clone()),
            api_key: api_key.clone(),
            allow_serials: Vec::new(),
            labels: Default::default(),
            lease_grace: Duration::from_secs(3600),
            max_message_bytes: 1 << 20,
            drain_timeout: Duration::from_secs(10),
            limits: Default::default(),
            allowed_hosts: Vec::new(),
        },
        transfer: crate::config::TransferConfig::default(),
        adb_servers: vec![demo.adb_server],
        policy: crate::policy::Policy::default(),
        key_file: args.api_key_file.clone(),
        wall: crate::wall::WallConfig::default(),
        recovery: Default::default(),
    };
    let running = match crate::run::start_adb(resolved).await {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {}", e.message);
            return e.code;
        }
    };
    let addr = running.addr;
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
    sayln!("{}", hand_over.text());
    let trigger = running.trigger();
    tokio::spawn(async move {
        crate::run::signal().await;
        let _ = trigger.send(true);
    });
    running.wait().await;
    drop(demo);
    drop(dir);
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
        let mut t = String::from("\nNow try it yourself; every line works as printed (Ctrl-C stops the demo):\n");
        t += &format!("  open http://{addr}/ in a browser: the device wall, live phones{login}\n");
        t += &format!("  {bin} devices --adb-server {adb} --data-dir {dir}\n");
        t += &format!("  {bin} doctor --adb-server {adb} --data-dir {dir} --listen {addr}{key_flag}\n");
        t += &format!("  {bin} audit tail --data-dir {dir}\n");
        t += &format!("  {bin} call android_tap x=540 y=1200 --url http://{addr}{key_flag}\n");
        t += &format!("  {bin} call android_ui_dump only_interactive=true --url http://{addr}{key_flag}\n");
        t += &format!("  {bin} call android_screenshot --out screen.jpg --url http://{addr}{key_flag}\n");
        t += &format!("  curl -s http://{addr}/connector-card.json | head -40\n");
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
